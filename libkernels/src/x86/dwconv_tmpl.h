/* Depthwise convolution body shared by dwconv_avx2.c and dwconv_avx512.c.
 * The including file defines VL (lanes), V (vector type), V_SET1, V_LOADU,
 * V_STOREU, V_FMA(a, b, c) = a * b + c, V_MAX, V_MIN, V_ZERO, V_LOAD_EVEN(p)
 * (p[0], p[2], ..., p[2 VL - 2]; may read p[0 .. 2 VL - 1]),
 * V_LOAD_PART(s, n) (s[0..n) then zeros, n < VL, reading no more),
 * V_COPY_PART(d, s, n) (copies n < VL floats, touching no others),
 * V_TRANSPOSE(V r[VL]) (r[i] lane j to r[j] lane i; VL rows of VL) and
 * DW_FN.
 *
 * Two paths: interleaved() (VL planes at a time, one per lane) takes every
 * shape whose padded rows fit its buffers; wider planes go a plane at a
 * time as follows.
 *
 * Why a padded copy: with the zero padding materialised, every output is
 * the same loop over kh x kw taps with no bounds test, so one vector loop
 * covers the borders too. Each plane is copied band by band (a few padded
 * input rows at a time) into a 32 KiB stack buffer; the copy is one pass
 * over the input, small next to kh * kw passes of multiply-adds.
 *
 * Why flattening: edge networks have narrow planes (DS-CNN's are 5 wide),
 * too narrow to fill a vector row by row. With stride 1, output (oy, ox)
 * reads padded element (oy + ky) * pitch + ox + kx, i.e. output j = oy *
 * pitch + ox reads j + ky * pitch + kx: the band's outputs, laid out with
 * the padded pitch, are one long vector loop, and the columns ox >= out_w
 * (junk) are dropped when the band is copied out. Wide planes and stride 2
 * go row by row straight into y. */
#include <stdint.h>
#include <string.h>

#include "conv.h"
#include "dwconv.h"

enum { PBUF = 6144, OBUF = 2048, SLACK = 4 * VL + 64 };

static inline V fuse_v(V v, int act, V six)
{
    if (act == KERN_FUSE_NONE) {
        return v;
    }
    v = V_MAX(V_ZERO, v); /* v second: a NaN sum stays NaN */
    if (act == KERN_FUSE_RELU6) {
        v = V_MIN(six, v);
    }
    return v;
}

/* d[0..n) = s[0..n), and when room (the floats writable from d) allows,
 * zeros or junk up to the next multiple of VL: rows of narrow planes are a
 * few floats long, a memcpy call per row cost more than the convolution,
 * and masked stores are slow on some processors (microcoded on AMD's
 * before Zen 4) and stall the loads that read them back. Callers write rows
 * in increasing address order, so what spills into the next row is
 * overwritten, and a spill into a row's right padding is zeros. */
static inline void copy_row(float *d, const float *s, size_t n, size_t room)
{
    size_t i = 0;
    for (; i + VL <= n; i += VL) {
        V v = V_LOADU(s + i);
        /* opaque to the compiler, which would otherwise turn the loop
         * back into a memcpy call */
        __asm__("" : "+x"(v));
        V_STOREU(d + i, v);
    }
    if (i == n) {
        return;
    }
    if (room >= i + VL) {
        V_STOREU(d + i, V_LOAD_PART(s + i, n - i));
    } else {
        V_COPY_PART(d + i, s + i, n - i);
    }
}

/* One vector of outputs from in (st 1 or 2): a + the taps. */
static inline V taps(V a, const float *in, size_t st, size_t pitch,
                     const float *wc, size_t kh, size_t kw)
{
    for (size_t ky = 0; ky < kh; ky++) {
        const float *r = in + ky * pitch;
        for (size_t kx = 0; kx < kw; kx++) {
            const V wv = V_SET1(wc[ky * kw + kx]);
            a = V_FMA(wv, st == 1 ? V_LOADU(r + kx) : V_LOAD_EVEN(r + kx), a);
        }
    }
    return a;
}

/* out[j] = act(b + sum over ky, kx of wc[ky][kx] * in[j * st + ky * pitch
 * + kx]) for j < n; st is 1 or 2. Four independent accumulators hide the
 * multiply-add latency (one chain of kh * kw dependent FMAs each). The
 * last, partial vector is computed whole (in has SLACK readable floats past
 * what the outputs need) and stored as copy_row does: room is the floats
 * writable from out. */
static void run(float *out, const float *in, size_t n, size_t st,
                size_t pitch, const float *wc, size_t kh, size_t kw, float b,
                int act, size_t room)
{
    const V bv = V_SET1(b), six = V_SET1(6.0f);
    size_t j = 0;
    for (; j + 4 * VL <= n; j += 4 * VL) {
        V a0 = bv, a1 = bv, a2 = bv, a3 = bv;
        for (size_t ky = 0; ky < kh; ky++) {
            const float *r = in + j * st + ky * pitch;
            for (size_t kx = 0; kx < kw; kx++) {
                const V wv = V_SET1(wc[ky * kw + kx]);
                if (st == 1) {
                    a0 = V_FMA(wv, V_LOADU(r + kx), a0);
                    a1 = V_FMA(wv, V_LOADU(r + kx + VL), a1);
                    a2 = V_FMA(wv, V_LOADU(r + kx + 2 * VL), a2);
                    a3 = V_FMA(wv, V_LOADU(r + kx + 3 * VL), a3);
                } else {
                    a0 = V_FMA(wv, V_LOAD_EVEN(r + kx), a0);
                    a1 = V_FMA(wv, V_LOAD_EVEN(r + kx + 2 * VL), a1);
                    a2 = V_FMA(wv, V_LOAD_EVEN(r + kx + 4 * VL), a2);
                    a3 = V_FMA(wv, V_LOAD_EVEN(r + kx + 6 * VL), a3);
                }
            }
        }
        V_STOREU(out + j, fuse_v(a0, act, six));
        V_STOREU(out + j + VL, fuse_v(a1, act, six));
        V_STOREU(out + j + 2 * VL, fuse_v(a2, act, six));
        V_STOREU(out + j + 3 * VL, fuse_v(a3, act, six));
    }
    for (; j + VL <= n; j += VL) {
        const V a = taps(bv, in + j * st, st, pitch, wc, kh, kw);
        V_STOREU(out + j, fuse_v(a, act, six));
    }
    if (j < n) {
        float t[VL];
        const V a = taps(bv, in + j * st, st, pitch, wc, kh, kw);
        V_STOREU(t, fuse_v(a, act, six));
        copy_row(out + j, t, n - j, room - j);
    }
}

/* Padded rows [r0, r0 + rows) of plane xp into buf with the given pitch
 * (padded column c holds input column c - pl), then SLACK zeros. */
static void pad_band(float *buf, const float *xp, size_t ih, size_t iw,
                     size_t pt, size_t pl, size_t r0, size_t rows,
                     size_t pitch)
{
    memset(buf, 0, (rows * pitch + SLACK) * sizeof *buf);
    if (pl >= pitch) {
        return;
    }
    const size_t n = iw < pitch - pl ? iw : pitch - pl;
    for (size_t r = 0; r < rows; r++) {
        const size_t iy = r0 + r - pt; /* wraps above the input */
        if (iy < ih) {
            /* room: the rows and the SLACK zeros (>= VL) after them */
            copy_row(buf + r * pitch + pl, xp + iy * iw, n,
                     (rows - r) * pitch - pl + SLACK);
        }
    }
}

/*
 * VL planes at a time, one plane per lane.
 *
 * Why: MobileNet's and DS-CNN's depthwise layers have planes of 3 x 3 to
 * 48 x 48; one plane fills few vectors, each output is a chain of kh * kw
 * dependent multiply-adds, and the per-plane padding, copies and tails
 * cost more than the taps. With VL planes interleaved (the blocked layout
 * oneDNN calls nChw8c), every lane does useful work whatever the plane's
 * size, every tap is one load and one multiply-add for VL outputs, and the
 * stride costs nothing. A plane is contiguous, so VL of them are
 * interleaved by VL x VL transposes over their flattened elements, each
 * element's vector landing at its place in a zero-padded stack buffer.
 *
 * The outputs are computed VL at a time along the band's flattened output
 * positions (across row ends, each with its own base in the buffer), so
 * that even a 3-wide plane has VL independent chains of multiply-adds to
 * hide their latency; the VL results, one vector per output, are exactly a
 * VL x VL block to transpose back, and leave as one vector store per
 * plane. The last block of a band is moved back to end at the band's end:
 * the few outputs computed twice are stored twice with the same value.
 * 3-wide filters (every MLPerf Tiny depthwise layer) take unrolled blocks
 * (block3, block3s) with the same sums in the same order.
 *
 * Planes too tall for the buffers go in bands of output rows (the input
 * rows a band reads are a contiguous run of the plane too). Bands are the
 * outer loop: the element-to-slot and output-to-slot tables and the
 * padding rows, zeroed per band (the padding columns once per call), are
 * the band's, shared by every group of planes. Lanes
 * are planes p = b * channels + c of the whole batch, so a group may span
 * two samples; each lane takes its own channel's filter and bias; the
 * lanes of a last, partial group repeat its last plane and are not
 * stored. Returns 0, doing nothing, when one output row and the padded
 * rows it reads do not fit the buffers.
 */
enum { SLOTS = 768, ITBL = 1024, OTBL = 1024, MAXTAPS = 64 };

/* Fuses the activation into a[0..VL), the values of VL consecutive outputs
 * of the VL lanes, and transposes them into one row of outputs per lane. */
static inline void fuse_transpose(V a[VL], int act, V six)
{
    for (size_t i = 0; i < VL; i++) {
        a[i] = fuse_v(a[i], act, six);
    }
    V_TRANSPOSE(a);
}

/* p[i] = the window of output i, a[i] = b, for i < cnt: the start of every
 * block. */
static inline __attribute__((always_inline)) void
block_start(const float **p, V *a, const float *in, const int32_t *ob, V b,
            size_t cnt)
{
#pragma GCC unroll 16
    for (size_t i = 0; i < cnt; i++) {
        p[i] = in + ob[i];
        a[i] = b;
    }
}

/* a[i] = b + the taps of the output whose window starts at slot ob[i] of
 * the buffer in (toff[t]: tap t's offset in floats, wt[t]: its VL
 * weights), for i < cnt, a constant after inlining. VL independent
 * accumulators: every multiply-add of a tap can issue while the previous
 * tap's are in flight. */
static inline __attribute__((always_inline)) void
block(V a[VL], const float *in, const int32_t *ob, const int32_t *toff,
      const float *wt, size_t taps, V b, size_t cnt)
{
    const float *p[VL];
    block_start(p, a, in, ob, b, cnt);
    for (size_t t = 0; t < taps; t++) {
        const V wv = V_LOADU(wt + t * VL);
        const int32_t o = toff[t];
#pragma GCC unroll 16
        for (size_t i = 0; i < cnt; i++) {
            a[i] = V_FMA(wv, V_LOADU(p[i] + o), a[i]);
        }
    }
}

/* block() for kw = 3 and VL outputs, rs = wp * VL floats per padded row:
 * the three taps of a filter row unrolled, at fixed offsets from the row,
 * so that no offset is loaded per tap and the loop runs once per row. */
static inline void block3(V a[VL], const float *in, const int32_t *ob,
                          const float *wt, size_t kh, size_t rs, V b)
{
    const float *p[VL];
    block_start(p, a, in, ob, b, VL);
    for (size_t ky = 0; ky < kh; ky++, wt += 3 * VL) {
        const V w0 = V_LOADU(wt), w1 = V_LOADU(wt + VL);
        const V w2 = V_LOADU(wt + 2 * VL);
        const size_t o = ky * rs;
#pragma GCC unroll 16
        for (size_t i = 0; i < VL; i++) {
            a[i] = V_FMA(w0, V_LOADU(p[i] + o), a[i]);
            a[i] = V_FMA(w1, V_LOADU(p[i] + o + VL), a[i]);
            a[i] = V_FMA(w2, V_LOADU(p[i] + o + 2 * VL), a[i]);
        }
    }
}

/* block3() for VL outputs evenly spaced sx (a constant after inlining)
 * slots apart from slot ob0, in one row: neighbouring outputs
 * share input vectors (output i's tap kx is output i + 1's tap kx - sx),
 * so each input vector of a filter row is loaded once and given to every
 * output that reads it, (VL - 1) sx + 3 loads per filter row instead of 3
 * VL. Output i still takes its taps in the order kx = 0, 1, 2. */
static inline __attribute__((always_inline)) void
block3s(V a[VL], const float *in, int32_t ob0, const float *wt, size_t kh,
        size_t rs, V b, size_t sx)
{
#pragma GCC unroll 16
    for (size_t i = 0; i < VL; i++) {
        a[i] = b;
    }
    for (size_t ky = 0; ky < kh; ky++, wt += 3 * VL) {
        const V w0 = V_LOADU(wt), w1 = V_LOADU(wt + VL);
        const V w2 = V_LOADU(wt + 2 * VL);
        const float *r = in + ob0 + ky * rs;
#pragma GCC unroll 32
        for (size_t q = 0; q < (VL - 1) * sx + 3; q++) {
            const V v = V_LOADU(r + q * VL);
#pragma GCC unroll 16
            for (size_t i = 0; i < VL; i++) {
                const size_t kx = q - sx * i; /* wraps when q < sx i */
                if (kx == 0) {
                    a[i] = V_FMA(w0, v, a[i]);
                } else if (kx == 1) {
                    a[i] = V_FMA(w1, v, a[i]);
                } else if (kx == 2) {
                    a[i] = V_FMA(w2, v, a[i]);
                }
            }
        }
    }
}

/* VL outputs from slots ob[0..VL) for 3-wide filters: with slide (stride
 * 1, rows at least VL wide) and the VL in one row, by block3s, else by
 * block3. At stride 2 the shared loads measured no faster. */
static inline void block3_any(V a[VL], const float *in, const int32_t *ob,
                              const float *wt, size_t kh, size_t rs, V b,
                              int slide)
{
    if (slide && ob[VL - 1] - ob[0] == (VL - 1) * VL) {
        block3s(a, in, ob[0], wt, kh, rs, b, 1);
    } else {
        block3(a, in, ob, wt, kh, rs, b);
    }
}

/* Outputs ob[0..cnt) (cnt < VL) of the lanes l < nl, to dst[l] + j: a
 * short block of cnt chains, whose latency the next group's copies can
 * overlap, rather than a whole block of VL moved back over outputs
 * already done. */
static void short_block(float *dst, size_t stride, size_t nl, size_t j,
                        const float *in, const int32_t *ob,
                        const int32_t *toff, const float *wt, size_t taps,
                        V b, int act, size_t cnt)
{
    V a[VL];
    switch (cnt) {
    case 1:
        block(a, in, ob, toff, wt, taps, b, 1);
        break;
    case 2:
        block(a, in, ob, toff, wt, taps, b, 2);
        break;
    case 3:
        block(a, in, ob, toff, wt, taps, b, 3);
        break;
    default:
        block(a, in, ob, toff, wt, taps, b, 4);
        break;
    }
    for (size_t i = cnt; i < VL; i++) {
        a[i] = V_ZERO;
    }
    fuse_transpose(a, act, V_SET1(6.0f));
    for (size_t l = 0; l < nl; l++) {
        float t[VL];
        V_STOREU(t, a[l]);
        for (size_t i = 0; i < cnt; i++) {
            dst[l * stride + j + i] = t[i];
        }
    }
}

/* wt[t * VL + l] = filter tap t of lane l's channel ch[l]; b[l] its bias.
 * VL consecutive channels with at least VL taps each go by VL x VL
 * transposes of their filters (the last one moved back to end at the last
 * tap). */
static void lane_filters(float *wt, float *bv, const float *w,
                         const float *bias, const size_t ch[VL], size_t taps)
{
    int run = 1;
    for (size_t l = 1; l < VL; l++) {
        run &= ch[l] == ch[0] + l;
    }
    if (run && taps >= VL) {
        const float *w0 = w + ch[0] * taps;
        for (size_t t0 = 0;; t0 += VL) {
            t0 = t0 + VL > taps ? taps - VL : t0;
            V v[VL];
            for (size_t l = 0; l < VL; l++) {
                v[l] = V_LOADU(w0 + l * taps + t0);
            }
            V_TRANSPOSE(v);
            for (size_t i = 0; i < VL; i++) {
                V_STOREU(wt + (t0 + i) * VL, v[i]);
            }
            if (t0 + VL == taps) {
                break;
            }
        }
    } else {
        for (size_t l = 0; l < VL; l++) {
            const float *wc = w + ch[l] * taps;
            for (size_t t = 0; t < taps; t++) {
                wt[t * VL + l] = wc[t];
            }
        }
    }
    if (run && bias) {
        V_STOREU(bv, V_LOADU(bias + ch[0]));
    } else {
        for (size_t l = 0; l < VL; l++) {
            bv[l] = bias ? bias[ch[l]] : 0.0f;
        }
    }
}

static __attribute__((noinline)) int
interleaved(const struct kern_dwconv2d_shape *s, size_t oh, size_t ow,
            const float *x, const float *w, const float *bias, int act,
            float *y)
{
    const size_t kh = s->kh, kw = s->kw, sy = s->stride_h, sx = s->stride_w;
    const size_t ih = s->in_h, iw = s->in_w, pt = s->pad_top;
    const size_t pl = s->pad_left, hw = ih * iw, ohw = oh * ow;
    /* the padded columns the outputs read */
    const size_t wp = (ow - 1) * sx + kw;
    if (kh * kw > MAXTAPS || !iw || wp > SLOTS / kh || ow > OTBL ||
        kh * iw > ITBL) {
        return 0;
    }
    /* output rows per band: their padded rows, (nb - 1) sy + kh, fit the
     * buffer and the element table, their outputs the output table */
    size_t rows = SLOTS / wp < ITBL / iw ? SLOTS / wp : ITBL / iw;
    size_t nb = (rows - kh) / sy + 1;
    nb = nb < OTBL / ow ? nb : OTBL / ow;
    nb = nb < oh ? nb : oh;
    /* in: the padded band, then a spare slot for the elements no output
     * reads */
    float in[(SLOTS + 1) * VL], wt[MAXTAPS * VL], bv[VL];
    int32_t itab[ITBL], otab[OTBL], toff[MAXTAPS];
    const V six = V_SET1(6.0f);
    const size_t np = s->batch * s->channels, taps = kh * kw;
    const int slide = sx == 1 && ow >= VL;
    for (size_t ky = 0; ky < kh; ky++) {
        for (size_t kx = 0; kx < kw; kx++) {
            toff[ky * kw + kx] = (int32_t)((ky * wp + kx) * VL);
        }
    }
    /* the padding columns of every row are zeroed once: no element is
     * ever stored there (the padding rows are zeroed per band) */
    const size_t nc = pl < wp ? (iw < wp - pl ? iw : wp - pl) : 0;
    for (size_t r = 0; r < (nb - 1) * sy + kh; r++) {
        float *row = in + r * wp * VL;
        memset(row, 0, (pl < wp ? pl : wp) * VL * sizeof *row);
        memset(row + (pl + nc) * VL, 0,
               (wp - (pl < wp ? pl + nc : wp)) * VL * sizeof *row);
    }
    for (size_t oy0 = 0; oy0 < oh; oy0 += nb) {
        const size_t oy1 = oh - oy0 < nb ? oh : oy0 + nb;
        /* padded rows [r0, r0 + hb) hold input rows r - pt */
        const size_t r0 = oy0 * sy, hb = (oy1 - oy0 - 1) * sy + kh;
        /* the input rows inside the band, [iy0, iy1), are its padded
         * rows [e0, e1); the rest are zeros */
        size_t iy0 = r0 > pt ? r0 - pt : 0;
        size_t iy1 = r0 + hb > pt ? r0 + hb - pt : 0;
        iy1 = iy1 < ih ? iy1 : ih;
        iy0 = iy0 < iy1 ? iy0 : iy1;
        /* a band wholly in the top padding has e0 = e1 = hb */
        size_t e0 = iy0 + pt - r0, e1 = iy1 + pt - r0;
        e0 = e0 < hb ? e0 : hb;
        e1 = e1 < hb ? e1 : hb;
        /* the buffer was zeroed once; rows that were a previous band's
         * input and are padding here are zeroed again */
        memset(in, 0, e0 * wp * VL * sizeof *in);
        memset(in + e1 * wp * VL, 0, (hb - e1) * wp * VL * sizeof *in);
        /* element k of the run of input rows goes to slot itab[k] (the
         * columns no output reads to the spare slot) */
        const size_t m = (iy1 - iy0) * iw;
        for (size_t r = 0; r < iy1 - iy0; r++) {
            int32_t *it = itab + r * iw;
            const int32_t base = (int32_t)(((e0 + r) * wp + pl) * VL);
            for (size_t ix = 0; ix < nc; ix++) {
                it[ix] = base + (int32_t)(ix * VL);
            }
            for (size_t ix = nc; ix < iw; ix++) {
                it[ix] = SLOTS * VL;
            }
        }
        /* output j of the band reads its window from slot otab[j] */
        const size_t n = (oy1 - oy0) * ow;
        for (size_t r = 0; r < oy1 - oy0; r++) {
            int32_t *ot = otab + r * ow;
            const int32_t base = (int32_t)(r * sy * wp * VL);
            for (size_t ox = 0; ox < ow; ox++) {
                ot[ox] = base + (int32_t)(ox * sx * VL);
            }
        }
        for (size_t p0 = 0; p0 < np; p0 += VL) {
            const size_t nl = np - p0 < VL ? np - p0 : VL;
            const float *src[VL];
            size_t ch[VL];
            size_t c = p0 % s->channels;
            for (size_t l = 0; l < VL; l++) {
                /* lanes past the last plane repeat it */
                src[l] = x + (p0 + (l < nl ? l : nl - 1)) * hw + iy0 * iw;
                ch[l] = c;
                if (l + 1 < nl && ++c == s->channels) {
                    c = 0;
                }
            }
            lane_filters(wt, bv, w, bias, ch, taps);
            const V bias_v = V_LOADU(bv);
            /* the band's elements into their slots; a last partial block
             * is moved back to end at m */
            if (m >= VL) {
                /* ix: the column of element k */
                for (size_t k = 0, ix = 0;; k += VL, ix += VL) {
                    if (k + VL > m) {
                        k = m - VL;
                        ix = k % iw;
                    }
                    while (ix >= iw) {
                        ix -= iw;
                    }
                    V v[VL];
                    for (size_t l = 0; l < VL; l++) {
                        v[l] = V_LOADU(src[l] + k);
                    }
                    V_TRANSPOSE(v);
                    if (ix + VL <= nc) {
                        /* VL columns of one row that the outputs read:
                         * consecutive slots */
                        float *d = in + itab[k];
                        for (size_t j = 0; j < VL; j++) {
                            V_STOREU(d + j * VL, v[j]);
                        }
                    } else {
                        for (size_t j = 0; j < VL; j++) {
                            V_STOREU(in + itab[k + j], v[j]);
                        }
                    }
                    if (k + VL == m) {
                        break;
                    }
                }
            } else {
                for (size_t k = 0; k < m; k++) {
                    for (size_t l = 0; l < VL; l++) {
                        in[itab[k] + l] = src[l][k];
                    }
                }
            }
            float *dst = y + p0 * ohw + oy0 * ow;
            /* blocks of VL outputs, the last moved back to end at n
             * (a short block of the rest has its few chains' latency
             * exposed: measured slower); fewer than VL in short blocks */
            size_t j = 0;
            for (; j + VL <= n; j += VL) {
                V a[VL];
                if (kw == 3) {
                    block3_any(a, in, otab + j, wt, kh, wp * VL, bias_v,
                               slide);
                } else {
                    block(a, in, otab + j, toff, wt, taps, bias_v, VL);
                }
                fuse_transpose(a, act, six);
                for (size_t l = 0; l < nl; l++) {
                    V_STOREU(dst + l * ohw + j, a[l]);
                }
            }
            const size_t r = n - j;
            if (r && n >= VL) {
                V a[VL];
                if (kw == 3) {
                    block3_any(a, in, otab + n - VL, wt, kh, wp * VL, bias_v,
                               slide);
                } else {
                    block(a, in, otab + n - VL, toff, wt, taps, bias_v, VL);
                }
                fuse_transpose(a, act, six);
                for (size_t l = 0; l < nl; l++) {
                    V_STOREU(dst + l * ohw + n - VL, a[l]);
                }
            } else {
                for (; j < n; j += 4) {
                    const size_t cnt = n - j < 4 ? n - j : 4;
                    short_block(dst, ohw, nl, j, in, otab + j, toff, wt,
                                taps, bias_v, act, cnt);
                }
            }
        }
    }
    return 1;
}

/* The shapes no vector loop takes (column strides above 2 on planes too
 * wide for interleaved(), rows too wide for the padded band): the
 * reference's loop, but with the vector paths' arithmetic (a fused
 * multiply-add per tap, +0 for taps outside the input), so that every
 * output of this path is rounded the same way whichever loop computed it
 * and the NCHW8c kernel can promise the same bits. */
#ifndef DW_SCALAR_FMA
/* the includer's V_FMA for one float (NEON's is a multiply and an add) */
#define DW_SCALAR_FMA(a, b, c) fmaf((a), (b), (c))
#endif

static void fma_planes(const struct kern_dwconv2d_shape *s, size_t out_h,
                       size_t out_w, const float *x, const float *w,
                       const float *bias, int act, float *y)
{
    const size_t ih = s->in_h, iw = s->in_w, kh = s->kh, kw = s->kw;
    const size_t sh = s->stride_h, sw = s->stride_w;
    const size_t pt = s->pad_top, pl = s->pad_left;
    for (size_t p = 0; p < s->batch * s->channels; p++) {
        const size_t c = p % s->channels;
        const float *xp = x + p * ih * iw;
        const float *wc = w + c * kh * kw;
        float *yp = y + p * out_h * out_w;
        const float b = bias ? bias[c] : 0.0f;
        for (size_t oy = 0; oy < out_h; oy++) {
            for (size_t ox = 0; ox < out_w; ox++) {
                float acc = b;
                for (size_t ky = 0; ky < kh; ky++) {
                    const size_t iy = oy * sh + ky - pt; /* wraps above */
                    for (size_t kx = 0; kx < kw; kx++) {
                        const size_t ix = ox * sw + kx - pl;
                        const float v =
                            iy < ih && ix < iw ? xp[iy * iw + ix] : 0.0f;
                        acc = DW_SCALAR_FMA(wc[ky * kw + kx], v, acc);
                    }
                }
                yp[oy * out_w + ox] = kern_fuse1(acc, act);
            }
        }
    }
}

void DW_FN(const struct kern_dwconv2d_shape *s, size_t out_h, size_t out_w,
           const float *x, const float *w, const float *bias, int act,
           float *y)
{
    if (interleaved(s, out_h, out_w, x, w, bias, act, y)) {
        return;
    }
    const size_t kh = s->kh, kw = s->kw, st = s->stride_w;
    const size_t sy = s->stride_h;
    /* Padded columns read: up to (out_w - 1) * st + kw - 1. */
    const size_t pitch = (out_w - 1) * st + kw;
    if ((st != 1 && st != 2) || pitch > PBUF ||
        kh > (PBUF - SLACK) / pitch) {
        fma_planes(s, out_h, out_w, x, w, bias, act, y);
        return;
    }
    /* Flattening needs output row r + 1 to start one pitch after row r
     * in the padded band: stride 1 on both axes. */
    const int flat = st == 1 && sy == 1 && out_w < 2 * VL;
    /* Output rows per band: its padded rows ((nb - 1) sy + kh) fit in
     * PBUF, and in flat mode its nb * pitch outputs fit in OBUF. */
    size_t nb = ((PBUF - SLACK) / pitch - kh) / sy + 1;
    if (flat && nb > OBUF / pitch) {
        nb = OBUF / pitch;
    }
    if (!nb) {
        fma_planes(s, out_h, out_w, x, w, bias, act, y);
        return;
    }
    float buf[PBUF], obuf[OBUF];
    const size_t ih = s->in_h, iw = s->in_w;
    const size_t ny = s->batch * s->channels * out_h * out_w;
    for (size_t p = 0; p < s->batch * s->channels; p++) {
        const size_t c = p % s->channels;
        const float *xp = x + p * ih * iw;
        const float *wc = w + c * kh * kw;
        const float b = bias ? bias[c] : 0.0f;
        for (size_t oy0 = 0; oy0 < out_h; oy0 += nb) {
            const size_t rows = out_h - oy0 < nb ? out_h - oy0 : nb;
            pad_band(buf, xp, ih, iw, s->pad_top, s->pad_left, oy0 * sy,
                     (rows - 1) * sy + kh, pitch);
            if (flat) {
                run(obuf, buf, (rows - 1) * pitch + out_w, 1, pitch, wc, kh,
                    kw, b, act, OBUF);
                for (size_t r = 0; r < rows; r++) {
                    /* spills land in later rows and planes, all written
                     * after this one */
                    const size_t at = (p * out_h + oy0 + r) * out_w;
                    copy_row(y + at, obuf + r * pitch, out_w, ny - at);
                }
                continue;
            }
            for (size_t r = 0; r < rows; r++) {
                const size_t at = (p * out_h + oy0 + r) * out_w;
                run(y + at, buf + r * sy * pitch, out_w, st, pitch, wc, kh,
                    kw, b, act, ny - at);
            }
        }
    }
}
