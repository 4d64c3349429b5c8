/* Private: the convolution body (see kern_conv_geom in conv.h for the
 * layout and kern_conv2d_f32 in kernels.h for the contract), written over
 * a vocabulary of 8-float vectors and instantiated by conv_avx2.c and
 * conv_avx512.c (one __m256) and src/arm/conv_neon.c (two float32x4_t).
 *
 * The includer defines:
 *   V8, V4           8-float and 4-float vector types
 *   v8_zero() v8_set1(x) v8_load(p) v8_store(p, v) v8_bcast(p)
 *   v8_fma(a, b, c)  a * b + c, fused
 *   v8_max(a, b) v8_min(a, b)  a if a > b (a < b), else b (so NaN in b stays)
 *   v8_and(a, m)     bitwise and; v8_load_mask(p) 8 int32 masks as a V8
 *   v8_low(v) v8_high(v)  the 4-float halves; v4_store(p, q)
 *   v8_transpose4x4_halves(v[4], c[4])  4 x 4 transposes within each half:
 *                    lane j of half h of c[i] is lane 4 h + i of v[j]
 *   transpose8(V8 r[8]), evens8(a, b), odds8(a, b), hsum8(v)
 *   CONV_FN(name)    appends the instruction-set suffix
 * and may define:
 *   CONV_WIDE_DIRECT(K, wp, x, step, bias, act, left, y, plane, pa, pb)
 *                    a wider tile for 1 x 1 convolutions from and to
 *                    blocked tensors (see conv_avx512.c), output pixels
 *                    [pa, pb) of each plane, returning the channels of
 *                    the next `left` it computed (0: none)
 *   CONV_WIDE_PLANE(ps, K, wp, x, off, pitch, out_w, bias, act, left,
 *                   y, plane, pa, pb)  the same for any other convolution to a
 *                    blocked tensor: pixel (oy, ox)'s step k at
 *                    x[(oy * pitch + ox) * ps + off[k]] (ps 8 on blocked
 *                    phase planes, 1 on a channel's own, 8 x stride on a
 *                    blocked input read in place); 0 for a ps it lacks
 *
 * A matrix product per group with a 4 x 24 register tile
 * (4 output channels x 3 vectors of 8 pixels), read straight from the
 * activation planes (1 x 1) or from one zero-padded, stride-phase-split
 * copy of them (everything else); see kern_conv_geom in conv.h for the
 * layout and kern_conv2d_f32 in kernels.h for the contract.
 *
 * Why this shape of tile (chosen on x86): 12 accumulators hide the
 * multiply-add latency (5 cycles, 2 per cycle on the cores we target), and each step over K
 * costs 3 loads and 4 broadcasts for 12 multiply-adds, under the two load
 * ports' budget. Every row of the right operand is a contiguous run at a
 * fixed offset from the block's first column, so the tile needs no packed
 * panel: the offsets table (one entry per (ic, ky, kx)) replaces im2col. */
#include <string.h>

#include "conv.h"

enum { NR = KERN_CONV_NR, MR = KERN_CONV_MR, OCB = KERN_CONV_OCB };

/* Blocks of 8 channels holding c channels. */
static inline size_t nb_of(size_t c)
{
    return (c + 7) / 8;
}

static inline V8 act8(V8 v, int act)
{
    if (act == KERN_FUSE_NONE) {
        return v;
    }
    v = v8_max(v8_zero(), v); /* v second: NaN stays */
    if (act == KERN_FUSE_RELU6) {
        v = v8_min(v8_set1(6.0f), v);
    }
    return v;
}

/* out[r][0..NR) = act(bias[r] + sum over k of w[r * K + k] * base[off[k]
 * + 0..NR)) for r < mr, rows ldo floats apart. mr is a constant in each
 * caller (the function is inlined), so the unused rows cost nothing. */
static inline __attribute__((always_inline)) void
tile(const int mr, const bool packed, size_t K, const float *w,
     const float *base,
     const ptrdiff_t *off, const float *bias, int act, float *out,
     size_t ldo)
{
    V8 a[MR][3];
#pragma GCC unroll 4
    for (int r = 0; r < MR; r++) {
        const V8 b =
            r < mr && bias ? v8_set1(bias[r]) : v8_zero();
        a[r][0] = b;
        a[r][1] = b;
        a[r][2] = b;
    }
    /* rows past mr are never read (nor formed past the array's end) */
    /* row r's weight k is w[r * rs + k * ks]: raw [oc][K] rows, or lanes
     * of a packed [K][OCB] block */
    const size_t rs = packed ? 1 : K, ks = packed ? KERN_CONV_OCB : 1;
    const float *w0 = w, *w1 = mr > 1 ? w + rs : w;
    const float *w2 = mr > 2 ? w + 2 * rs : w, *w3 = mr > 3 ? w + 3 * rs : w;
    for (size_t k = 0; k < K; k++) {
        const float *bp = base + off[k];
        const V8 x0 = v8_load(bp);
        const V8 x1 = v8_load(bp + 8);
        const V8 x2 = v8_load(bp + 16);
        V8 wv = v8_bcast(w0 + k * ks);
        a[0][0] = v8_fma(wv, x0, a[0][0]);
        a[0][1] = v8_fma(wv, x1, a[0][1]);
        a[0][2] = v8_fma(wv, x2, a[0][2]);
        if (mr > 1) {
            wv = v8_bcast(w1 + k * ks);
            a[1][0] = v8_fma(wv, x0, a[1][0]);
            a[1][1] = v8_fma(wv, x1, a[1][1]);
            a[1][2] = v8_fma(wv, x2, a[1][2]);
        }
        if (mr > 2) {
            wv = v8_bcast(w2 + k * ks);
            a[2][0] = v8_fma(wv, x0, a[2][0]);
            a[2][1] = v8_fma(wv, x1, a[2][1]);
            a[2][2] = v8_fma(wv, x2, a[2][2]);
        }
        if (mr > 3) {
            wv = v8_bcast(w3 + k * ks);
            a[3][0] = v8_fma(wv, x0, a[3][0]);
            a[3][1] = v8_fma(wv, x1, a[3][1]);
            a[3][2] = v8_fma(wv, x2, a[3][2]);
        }
    }
#pragma GCC unroll 4
    for (int r = 0; r < mr; r++) {
        v8_store(out + r * ldo, act8(a[r][0], act));
        v8_store(out + r * ldo + 8, act8(a[r][1], act));
        v8_store(out + r * ldo + 16, act8(a[r][2], act));
    }
}

#define TILE_CASE(m)                                                         \
    case (m):                                                                \
        if (packed) {                                                        \
            tile(m, true, K, w, base, off, bias, act, out, ldo);             \
        } else {                                                             \
            tile(m, false, K, w, base, off, bias, act, out, ldo);            \
        }                                                                    \
        break

static void tile_any(size_t mr, bool packed, size_t K, const float *w,
                     const float *base, const ptrdiff_t *off,
                     const float *bias, int act, float *out, size_t ldo)
{
    switch (mr) {
        TILE_CASE(4);
        TILE_CASE(3);
        TILE_CASE(2);
    default:
        TILE_CASE(1);
    }
}

/* ---- 1 x 1 on planes of fewer than NR pixels ---------------------------- */


/* y[r][j] = act(bias[r] + sum over k of w[r * K + k] * xt[j * K + k]) for
 * r < mr, j < nj: dot products along K, 8 terms per lane, the lanes added
 * at the end; rows of y are ldy apart. */
static inline __attribute__((always_inline)) void
dot_tile(const int mr, const int nj, size_t K, const float *w,
         const float *xt, const float *bias, int act, float *y, size_t ldy)
{
    V8 a[MR][3];
    for (int r = 0; r < MR; r++) {
        a[r][0] = a[r][1] = a[r][2] = v8_zero();
    }
    size_t k = 0;
    for (; k + 8 <= K; k += 8) {
        V8 xv[3];
        for (int j = 0; j < nj; j++) {
            xv[j] = v8_load(xt + j * K + k);
        }
        for (int r = 0; r < mr; r++) {
            const V8 wv = v8_load(w + r * K + k);
            for (int j = 0; j < nj; j++) {
                a[r][j] = v8_fma(wv, xv[j], a[r][j]);
            }
        }
    }
    for (int r = 0; r < mr; r++) {
        for (int j = 0; j < nj; j++) {
            float v = hsum8(a[r][j]);
            for (size_t kk = k; kk < K; kk++) {
                v += w[r * K + kk] * xt[j * K + kk];
            }
            y[r * ldy + j] = kern_fuse1((bias ? bias[r] : 0.0f) + v, act);
        }
    }
}

/* A direct (1 x 1) group on a plane of P < NR pixels: the plane's columns
 * are few, so the pixel-wide tile would leave most lanes idle; the input is
 * transposed instead (xt[p][k], P * K floats, small beside the P * K * ocg
 * multiply-adds) and every output is a dot product along K, the vector
 * lanes across K, 4 output channels x 3 pixels at a time. */
static void direct_small(size_t ocg, size_t K, size_t P, const float *xg,
                         const float *wg, const float *bg, int act,
                         float *xt, float *yg)
{
    for (size_t k = 0; k < K; k++) {
        for (size_t p = 0; p < P; p++) {
            xt[p * K + k] = xg[k * P + p];
        }
    }
    size_t oc = 0;
    for (; oc + MR <= ocg; oc += MR) {
        size_t p = 0;
        for (; p + 3 <= P; p += 3) {
            dot_tile(MR, 3, K, wg + oc * K, xt + p * K, bg ? bg + oc : NULL,
                     act, yg + oc * P + p, P);
        }
        for (; p < P; p++) {
            dot_tile(MR, 1, K, wg + oc * K, xt + p * K, bg ? bg + oc : NULL,
                     act, yg + oc * P + p, P);
        }
    }
    for (; oc < ocg; oc++) {
        for (size_t p = 0; p < P; p++) {
            dot_tile(1, 1, K, wg + oc * K, xt + p * K, bg ? bg + oc : NULL,
                     act, yg + oc * P + p, P);
        }
    }
}

/* One input row at column stride 2: padded column c = ix + pl goes to
 * phase c % 2 at column c / 2, for columns below P and the phases kept
 * (phx 1: the even one only). Eight columns of each phase per 16 inputs
 * (evens8, odds8). */
static void row_s2(const float *src, size_t iw, size_t pl, size_t P,
                   size_t phx, float *ph0, float *ph1)
{
    size_t ix = 0;
    if (pl % 2) { /* input column 0 is odd: phase 1 */
        if (phx > 1 && pl / 2 < P) {
            ph1[pl / 2] = src[0];
        }
        ix = 1;
    }
    for (size_t t = (ix + pl) / 2; ix + 16 <= iw && t + 8 <= P;
         ix += 16, t += 8) {
        const V8 a = v8_load(src + ix);
        const V8 b = v8_load(src + ix + 8);
        v8_store(ph0 + t, evens8(a, b));
        if (phx > 1) {
            v8_store(ph1 + t, odds8(a, b));
        }
    }
    for (; ix < iw; ix++) {
        const size_t c = ix + pl;
        if (c / 2 >= P) {
            break;
        }
        if (c % 2 == 0) {
            ph0[c / 2] = src[ix];
        } else if (phx > 1) {
            ph1[c / 2] = src[ix];
        }
    }
}

/* The group's input planes (x points at its first one), zero-padded and
 * split by stride phase into buf (layout in conv.h): rows [q0, q1) of
 * every phase plane (all of them and the tail slack when that is every
 * row; the others are left as they are). */
static void pack(const struct kern_conv2d_shape *s,
                 const struct kern_conv_geom *g, const float *x, float *buf,
                 size_t q0, size_t q1)
{
    const size_t icg = s->in_c / s->groups, ih = s->in_h, iw = s->in_w;
    const size_t sh = s->stride_h, sw = s->stride_w;
    const size_t pt = s->pad_top, pl = s->pad_left, P = g->pitch;
    if (q0 == 0 && q1 == g->q) {
        memset(buf, 0, g->buf_floats * sizeof *buf);
    } else {
        for (size_t ph = 0; ph < icg * g->phy * g->phx; ph++) {
            memset(buf + ph * g->plane + q0 * P, 0,
                   (q1 - q0) * P * sizeof *buf);
        }
    }
    for (size_t c = 0; c < icg; c++) {
        const float *xc = x + c * ih * iw;
        for (size_t ry = 0; ry < g->phy; ry++) {
            float *row0 = buf + (c * g->phy + ry) * g->phx * g->plane;
            if (sw == 2) {
                for (size_t q = q0; q < q1; q++) {
                    const size_t iy = q * sh + ry - pt; /* wraps above */
                    if (iy < ih) {
                        row_s2(xc + iy * iw, iw, pl, P, g->phx,
                               row0 + q * P, row0 + g->plane + q * P);
                    }
                }
                continue;
            }
            for (size_t rx = 0; rx < g->phx; rx++) {
                float *pp = row0 + rx * g->plane;
                /* phase columns t with pl <= t * sw + rx < pl + iw */
                const size_t t0 = pl > rx ? (pl - rx + sw - 1) / sw : 0;
                size_t t1 = pl + iw > rx ? (pl + iw - rx + sw - 1) / sw : 0;
                t1 = t1 < P ? t1 : P;
                if (t0 >= t1) {
                    continue;
                }
                const size_t n = t1 - t0;
                for (size_t q = q0; q < q1; q++) {
                    const size_t iy = q * sh + ry - pt; /* wraps above */
                    if (iy >= ih) {
                        continue;
                    }
                    const float *src = xc + iy * iw + t0 * sw + rx - pl;
                    float *dst = pp + q * P + t0;
                    if (sw == 1) {
                        memcpy(dst, src, n * sizeof *dst);
                    } else {
                        for (size_t t = 0; t < n; t++) {
                            dst[t] = src[t * sw];
                        }
                    }
                }
            }
        }
    }
}

/* pack() from a blocked (NCHW8c) input (x at the group's first block;
 * a group's channels are whole blocks when grouped) into blocked phase
 * planes (layout in conv.h): each phase row is written once, left to
 * right, a vector of 8 channels per pixel, zeros where it falls in the
 * padding, so that the copy needs neither transposes nor a prior memset;
 * rows [q0, q1) of every phase plane. */
static void pack_blocked(const struct kern_conv2d_shape *s,
                         const struct kern_conv_geom *g, const float *x,
                         float *buf, size_t q0, size_t q1)
{
    const size_t ih = s->in_h, iw = s->in_w;
    const size_t sh = s->stride_h, sw = s->stride_w;
    const size_t pt = s->pad_top, pl = s->pad_left, P = g->pitch;
    const size_t nblk = nb_of(s->in_c / s->groups);
    const V8 z = v8_zero();
    for (size_t cb = 0; cb < nblk; cb++) {
        const float *xb = x + cb * ih * iw * 8;
        for (size_t ry = 0; ry < g->phy; ry++) {
            for (size_t rx = 0; rx < g->phx; rx++) {
                float *pp =
                    buf + ((cb * g->phy + ry) * g->phx + rx) * g->plane * 8;
                /* phase columns t with pl <= t * sw + rx < pl + iw */
                size_t t0 = pl > rx ? (pl - rx + sw - 1) / sw : 0;
                size_t t1 = pl + iw > rx ? (pl + iw - rx + sw - 1) / sw : 0;
                t1 = t1 < P ? t1 : P;
                t0 = t0 < t1 ? t0 : t1;
                for (size_t q = q0; q < q1; q++) {
                    const size_t iy = q * sh + ry - pt; /* wraps above */
                    float *dst = pp + q * P * 8;
                    size_t t = 0;
                    if (iy < ih) {
                        for (; t < t0; t++) {
                            v8_store(dst + t * 8, z);
                        }
                        const float *src =
                            xb + (iy * iw + t0 * sw + rx - pl) * 8;
                        for (; t < t1; t++, src += sw * 8) {
                            v8_store(dst + t * 8,
                                             v8_load(src));
                        }
                    }
                    for (; t < P; t++) {
                        v8_store(dst + t * 8, z);
                    }
                }
            }
        }
    }
}

/* The GEMM's row offsets: row k = (ic, ky, kx) of a pixel's column reads
 * base[j + off[k]] (base[8 j + off[k]] from a blocked input), base the
 * input planes (direct), a blocked input read in place (inplace: an
 * unpadded 1 x 1 convolution) or the padded phase planes (layout in
 * conv.h, blocked with blocked_in). */
static void offsets(const struct kern_conv2d_shape *s,
                    const struct kern_conv_geom *g, bool blocked_in,
                    bool inplace, ptrdiff_t *off)
{
    if (g->direct || inplace) {
        /* a 1 x 1 convolution read in place: channel k of pixel 0 in
         * plane k, or in lane k % 8 of block k / 8 */
        const size_t hw_in = s->in_h * s->in_w;
        for (size_t k = 0; k < g->k; k++) {
            off[k] = (ptrdiff_t)(blocked_in ? k / 8 * hw_in * 8 + k % 8
                                            : k * hw_in);
        }
        return;
    }
    const size_t icg = s->in_c / s->groups;
    size_t k = 0;
    for (size_t c = 0; c < icg; c++) {
        /* blocked: channel c's planes are those of its block, lane c % 8
         * of pixels 8 floats apart */
        const size_t pc = blocked_in ? c / 8 : c;
        for (size_t ky = 0; ky < s->kh; ky++) {
            for (size_t kx = 0; kx < s->kw; kx++, k++) {
                const size_t ph = (pc * g->phy + ky % s->stride_h) * g->phx +
                                  kx % s->stride_w;
                const size_t at = ph * g->plane +
                                  ky / s->stride_h * g->pitch +
                                  kx / s->stride_w;
                off[k] = (ptrdiff_t)(blocked_in ? at * 8 + c % 8 : at);
            }
        }
    }
}

/* Copy the tile's columns j0 .. j0 + n (GEMM columns, pitch P) into the
 * output planes yo (out_w wide, plane floats apart), dropping the junk
 * columns ox >= out_w; nothing is written at or past pixel lim of a
 * plane (the end of the pixels this call computes). */
static void scatter(const float *t, size_t mr, size_t j0, size_t n, size_t P,
                    size_t out_w, float *yo, size_t plane, size_t lim)
{
    size_t oy = j0 / P, ox = j0 % P;
    for (size_t j = 0; j < n;) {
        const size_t run = P - ox < n - j ? P - ox : n - j;
        if (ox < out_w) {
            const size_t m = out_w - ox < run ? out_w - ox : run;
            /* Runs are a few floats (an output row), so they are copied
             * in whole vectors: the floats past the run land on this
             * plane's later rows, which later runs and tiles write (t
             * has a vector of slack); the call's last row ends exactly. */
            const size_t at = oy * out_w + ox;
            const size_t mv = (m + 7) / 8 * 8;
            for (size_t r = 0; r < mr; r++) {
                float *d = yo + r * plane + at;
                const float *src = t + r * NR + j;
                if (at + mv <= lim) {
                    for (size_t q = 0; q < mv; q += 8) {
                        v8_store(d + q, v8_load(src + q));
                    }
                } else {
                    for (size_t q = 0; q < m; q++) {
                        d[q] = src[q];
                    }
                }
            }
        }
        j += run;
        ox = 0;
        oy++;
    }
}

/* The pixel-wide GEMM for a shape with geometry g and scratch `work`,
 * weights raw ([out_c][K]) or packed (kern_conv2d_pack_f32), output
 * pixels [pa, pb) of each plane: the GEMM columns from pa's to pb - 1's
 * (with the junk columns between). */
static void pixel_gemm(const struct kern_conv2d_shape *s,
                       const struct kern_conv_geom *gp, size_t out_h,
                       size_t out_w, const float *x, const float *w,
                       bool packed, const float *bias, int act, void *work,
                       float *y, size_t pa, size_t pb)
{
    const struct kern_conv_geom g = *gp;
    const size_t icg = s->in_c / s->groups, ocg = s->out_c / s->groups;
    const size_t K = g.k;
    const size_t hw_in = s->in_h * s->in_w, plane = out_h * out_w;
    const size_t J = g.cols, P = g.pitch, nb = (ocg + OCB - 1) / OCB;
    unsigned char *ws = (unsigned char *)work;
    ws += (64 - (uintptr_t)ws % 64) % 64;
    ptrdiff_t *off = (ptrdiff_t *)(void *)ws;
    ptrdiff_t *off_tail = off + K; /* direct mode only */
    float *buf = (float *)(void *)(off + (g.direct ? 2 * K : K));
    offsets(s, &g, false, false, off);
    if (g.direct) {
        for (size_t k = 0; k < K; k++) {
            off_tail[k] = (ptrdiff_t)(k * NR);
        }
    }
    /* Direct: output columns are the pixels themselves; padded: they
     * carry junk columns unless the phase pitch equals the output width. */
    const int dense_cols = g.direct || P == out_w;
    const size_t cp = dense_cols ? out_w : P;
    const size_t c0 = pa / out_w * cp + pa % out_w;
    const size_t c1 = pb > pa ? (pb - 1) / out_w * cp + (pb - 1) % out_w + 1
                              : c0;
    const bool whole = pa == 0 && pb == plane;
    float t[MR * NR + 8]; /* + the vector scatter's slack */
    for (size_t b = 0; b < s->batch; b++) {
        for (size_t gi = 0; gi < s->groups; gi++) {
            const float *xg = x + (b * s->in_c + gi * icg) * hw_in;
            const float *wg = w + gi * (packed ? nb * OCB : ocg) * K;
            const float *bg = bias ? bias + gi * ocg : NULL;
            float *yg = y + (b * s->out_c + gi * ocg) * plane;
            if (!packed && g.direct && J < NR && whole) {
                /* buf holds K * NR floats in direct mode */
                direct_small(ocg, K, J, xg, wg, bg, act, buf, yg);
                continue;
            }
            if (!g.direct) {
                pack(s, &g, xg, buf, 0, g.q);
            }
            for (size_t j0 = c0; j0 < c1; j0 += NR) {
                const size_t n = c1 - j0 < NR ? c1 - j0 : NR;
                const float *base;
                const ptrdiff_t *o = off;
                if (!g.direct) {
                    base = buf + j0;
                } else if (n == NR) {
                    base = xg + j0;
                } else {
                    /* The last columns: a zero-padded copy, so that the
                     * tile reads nothing past the input. */
                    for (size_t k = 0; k < K; k++) {
                        memcpy(buf + k * NR, xg + k * hw_in + j0,
                               n * sizeof *buf);
                        memset(buf + k * NR + n, 0, (NR - n) * sizeof *buf);
                    }
                    base = buf;
                    o = off_tail;
                }
                for (size_t oc = 0; oc < ocg; oc += MR) {
                    const size_t mr = ocg - oc < MR ? ocg - oc : MR;
                    const float *bo = bg ? bg + oc : NULL;
                    const float *wo =
                        packed ? wg + oc / OCB * K * OCB + oc % OCB
                               : wg + oc * K;
                    if (dense_cols && n == NR) {
                        tile_any(mr, packed, K, wo, base, o, bo, act,
                                 yg + oc * plane + j0, plane);
                    } else {
                        tile_any(mr, packed, K, wo, base, o, bo, act, t, NR);
                        scatter(t, mr, j0, n, cp, out_w, yg + oc * plane,
                                plane, pb);
                    }
                }
            }
        }
    }
}

void CONV_FN(kern_conv2d)(const struct kern_conv2d_shape *s, size_t out_h,
                      size_t out_w, const float *x, const float *w,
                      const float *bias, int act, void *work, float *y)
{
    struct kern_conv_geom g;
    if (!work || !kern_conv_geom(s, out_h, out_w, &g)) {
        kern_conv2d_c(s, out_h, out_w, x, w, bias, act, work, y);
        return;
    }
    pixel_gemm(s, &g, out_h, out_w, x, w, false, bias, act, work, y, 0,
               out_h * out_w);
}

/* ---- channel-vector tile on packed weights ------------------------------ */

/*
 * Why a second tile: the pixel-wide tile above puts 24 consecutive GEMM
 * columns in its lanes, which edge networks' small planes cannot fill (a
 * 6 x 6 plane is 36 pixels, padded to 48 columns), and its rows of W are
 * broadcast one scalar at a time. Turned around, the vector lanes run
 * across output channels, 8 per block of weights packed [K][8] (one
 * aligned load per block and K step), and each pixel broadcasts its input
 * value: 3 blocks x 4 pixels, 12 accumulators, 3 loads and 4 broadcasts
 * per 12 multiply-adds (2 blocks x 6 pixels, 1 x 12, when fewer channels
 * are left), whatever the plane's size, and only the real output pixels
 * are computed (no junk columns). The accumulators hold pixels x
 * channels, so they are transposed on the way out (4 x 4 within each
 * 128-bit half for 4 pixels, 8 x 8 otherwise), the activation applied
 * first. Uncontended, the tile runs ResNet-8's 3 x 3 layers at 42-45
 * GMAC/s and MobileNet's 128 -> 128 pointwise at 46, against a 47 GMAC/s
 * sgemm peak; 3 x 4 and 2 x 6 measured the same there (fastest of 31
 * runs each, alternated), neither being load-bound on that machine.
 *
 * Order: each sum starts from the bias and adds the K terms in (ic, ky,
 * kx) order with fused multiply-adds, exactly as the pixel-wide tile does,
 * so the two paths give the same bits, whatever the tile's size.
 */

enum { CT_PIX = 12, CT_NV = 3 };
_Static_assert(CT_NV * OCB == KERN_CONV_SPLIT_V8,
               "kern_conv2d_split_channels names this tile's width");

/* Below this depth a tile's K steps are too few to pay for its transposed
 * store, and on planes this large the pixel-wide tile fills its lanes:
 * there the packed weights go to the pixel-wide tile (MobileNet's first
 * pointwise layers, 8 to 32 deep on 48 x 48 to 12 x 12 planes, ran 1.1
 * to 1.6x faster so; from 64 deep or on smaller planes the channel-vector
 * tile was as fast or faster). */
enum { CT_MIN_K = 64, CT_MAX_PLANE = 128 };

/* How a tile's pixels address their input: any (a pointer each, plus the
 * offsets table), row (consecutive columns of one row: the first pointer
 * + r), direct (a 1 x 1 convolution on the input planes: consecutive, and
 * row k is `step` floats further, no table), blocked (a 1 x 1
 * stride-1 convolution on a blocked input: the first pointer + 8 r, the
 * 8 channels of a block at constant offsets, the next block `step`
 * floats further), blocked any (a pointer each, blocks as blocked: an
 * unpadded 1 x 1 convolution of any stride on a blocked input), blocked
 * row (row on blocked phase planes: the first pointer + 8 r). */
enum { CT_ANY, CT_ROW, CT_DIRECT, CT_BLK, CT_BANY, CT_BROW };

/* Pixels per tile for nv blocks: 12 accumulators. */
static inline int ct_pixels(int nv)
{
    return nv == 3 ? 4 : nv == 2 ? 6 : CT_PIX;
}

/* One block's 8 channels x R pixels (rows v[r], lanes the channels) to the
 * output planes: channel l's R values at yb[l * plane], for l < ocn;
 * nothing at or past pixel lim (the end of the call's pixels). */
static inline __attribute__((always_inline)) void
ct_store(const int R, V8 *v, size_t ocn, float *yb, size_t plane,
         size_t p0, size_t lim)
{
    if (R == 4) {
        /* 4 x 4 transposes in each 128-bit half: lane h of c[i] holds
         * channel i + 4 h of the 4 pixels */
        V8 c[4];
        v8_transpose4x4_halves(v, c);
        for (size_t l = 0; l < 8 && l < ocn; l++) {
            const V4 q = l < 4 ? v8_low(c[l]) : v8_high(c[l - 4]);
            v4_store(yb + l * plane + p0, q);
        }
        return;
    }
#pragma GCC unroll 2
    for (int r0 = 0; r0 < R; r0 += 8) {
        V8 t[8];
#pragma GCC unroll 8
        for (int i = 0; i < 8; i++) {
            t[i] = r0 + i < R ? v[r0 + i] : v8_zero();
        }
        transpose8(t);
        const size_t at = p0 + (size_t)r0;
        const int n = R - r0 < 8 ? R - r0 : 8;
        for (size_t l = 0; l < 8 && l < ocn; l++) {
            float *d = yb + l * plane + at;
            if (at + 8 <= lim) {
                /* lanes past n land on this call's later pixels, which
                 * later tiles write */
                v8_store(d, t[l]);
            } else {
                float tmp[8];
                v8_store(tmp, t[l]);
                for (int i = 0; i < n; i++) {
                    d[i] = tmp[i];
                }
            }
        }
    }
}

/* Lanes [0, n) all ones, the rest zero: mask_tab + 8 - n. */
static const int32_t mask_tab[16] = {-1, -1, -1, -1, -1, -1, -1, -1,
                                     0,  0,  0,  0,  0,  0,  0,  0};

/* One K step of a tile: weights k of its nv blocks (blocks ks * 8 floats
 * apart from w0, ks the packed depth) times pixel r's input, at p[r] + o (any) or q + rs * r
 * (consecutive pixels rs floats apart), into the accumulators. */
static inline __attribute__((always_inline)) void
ct_fma(const int nv, const int R, const bool any, const size_t rs,
       V8 *a, const float *w0, size_t ks, size_t k,
       const float *const *p, ptrdiff_t o, const float *q)
{
    const V8 v0 = v8_load(w0 + k * OCB);
    const V8 v1 =
        nv > 1 ? v8_load(w0 + (ks + k) * OCB) : v0;
    const V8 v2 =
        nv > 2 ? v8_load(w0 + (2 * ks + k) * OCB) : v0;
#pragma GCC unroll 12
    for (int r = 0; r < R; r++) {
        const float *src = any ? p[r] + o : q + rs * (size_t)r;
        const V8 xb = v8_bcast(src);
        a[r * nv] = v8_fma(v0, xb, a[r * nv]);
        if (nv > 1) {
            a[r * nv + 1] = v8_fma(v1, xb, a[r * nv + 1]);
        }
        if (nv > 2) {
            a[r * nv + 2] = v8_fma(v2, xb, a[r * nv + 2]);
        }
    }
}

/* A K block's part in a tile (see ct_plane): the weights' packed depth
 * ks (the tile's K is then the block's), the running sums to start from
 * (ain; NULL: the biases) and to leave (aout; NULL: the last block, whose
 * sums go to the output), R * nv vectors each. */
struct ct_kb {
    size_t ks;
    const float *ain;
    float *aout;
};

/* Outputs p0 .. p0 + R of the chunk's ocn (<= 8 nv) channels: block v's
 * weights at wp + v * K * 8, its outputs from yb + v * 8 * plane (the
 * block's planes, or with `bout` its blocked [plane][8] run). Pixel r
 * reads its input at px[r][off[k]] (any; the other modes read px[0]
 * only: row at px[0] + off[k] + r, blocked row at px[0] + off[k] + 8 r,
 * direct at px[0] + k * step + r,
 * blocked at px[0] + k / 8 * step + k % 8 + 8 r, step the blocked
 * plane's floats); bb holds the chunk's biases. kb: NULL, or one K block
 * of a padded shape's tile (any, row and blocked row modes). */
static inline __attribute__((always_inline)) void
ctile(const int mode, const int nv, const int R, const bool bout, size_t K,
      const float *wp, const float *const *px, const ptrdiff_t *off,
      size_t step, const float *bb, int act, size_t ocn, float *yb,
      size_t plane, size_t p0, size_t lim, const struct ct_kb *kb)
{
    V8 a[CT_PIX];
    const size_t ks = kb ? kb->ks : K;
    if (kb && kb->ain) {
#pragma GCC unroll 12
        for (int i = 0; i < R * nv; i++) {
            a[i] = v8_load(kb->ain + (size_t)i * 8);
        }
    } else {
        const V8 b0 = v8_load(bb), b1 = v8_load(bb + 8);
        const V8 b2 = v8_load(bb + 16);
#pragma GCC unroll 12
        for (int r = 0; r < R; r++) {
            a[r * nv] = b0;
            if (nv > 1) {
                a[r * nv + 1] = b1;
            }
            if (nv > 2) {
                a[r * nv + 2] = b2;
            }
        }
    }
    const float *q = px[0];
    if (mode == CT_BLK) {
        /* 8 channels of a pixel are consecutive: a block of K steps at
         * constant offsets, then the next block's plane */
        size_t k = 0;
        for (; k + 8 <= K; k += 8, q += step) {
#pragma GCC unroll 8
            for (int l = 0; l < 8; l++) {
                ct_fma(nv, R, false, 8, a, wp, ks, k + (size_t)l, px, 0,
                       q + l);
            }
        }
        for (size_t l = 0; k < K; k++, l++) {
            ct_fma(nv, R, false, 8, a, wp, ks, k, px, 0, q + l);
        }
    } else if (mode == CT_BANY) {
        const float *p[CT_PIX];
#pragma GCC unroll 12
        for (int r = 0; r < R; r++) {
            p[r] = px[r];
        }
        size_t k = 0;
        for (; k + 8 <= K; k += 8) {
#pragma GCC unroll 8
            for (int l = 0; l < 8; l++) {
                ct_fma(nv, R, true, 1, a, wp, ks, k + (size_t)l, p, l, q);
            }
#pragma GCC unroll 12
            for (int r = 0; r < R; r++) {
                p[r] += step;
            }
        }
        for (ptrdiff_t l = 0; k < K; k++, l++) {
            ct_fma(nv, R, true, 1, a, wp, ks, k, p, l, q);
        }
    } else if (mode == CT_DIRECT) {
        for (size_t k = 0; k < K; k++, q += step) {
            ct_fma(nv, R, false, 1, a, wp, ks, k, px, 0, q);
        }
    } else {
        for (size_t k = 0; k < K; k++) {
            ct_fma(nv, R, mode == CT_ANY, mode == CT_BROW ? 8 : 1, a, wp,
                   ks, k, px, off[k], q + off[k]);
        }
    }
    if (kb && kb->aout) {
        /* not the last block: the sums as they are, for the next */
#pragma GCC unroll 12
        for (int i = 0; i < R * nv; i++) {
            v8_store(kb->aout + (size_t)i * 8, a[i]);
        }
        return;
    }
#pragma GCC unroll 3
    for (int v = 0; v < nv; v++) {
        const size_t left = ocn - (size_t)v * 8;
        if (bout) {
            /* a vector is one pixel's 8 channels: stored as it is; the
             * lanes past the last channel hold 0 * x sums, zeroed so
             * that they stay zero whatever x holds (infinities) */
            float *d = yb + ((size_t)v * plane + p0) * 8;
            const V8 m = v8_load_mask(mask_tab + 8 - (left < 8 ? left : 8));
#pragma GCC unroll 12
            for (int r = 0; r < R; r++) {
                V8 o = act8(a[r * nv + v], act);
                if (left < 8) {
                    o = v8_and(o, m);
                }
                v8_store(d + (size_t)r * 8, o);
            }
            continue;
        }
        V8 rows[CT_PIX];
#pragma GCC unroll 12
        for (int r = 0; r < R; r++) {
            rows[r] = act8(a[r * nv + v], act);
        }
        ct_store(R, rows, left, yb + (size_t)v * 8 * plane, plane, p0, lim);
    }
}

#define CT_CASE(nv, r)                                                       \
    case (nv) * 16 + (r):                                                    \
        ctile(CT_ANY, nv, r, bout, K, wp, px, off, 0, bb, act, ocn, yb,      \
              plane, p0, lim, kb);                                           \
        break
#define CT_FULL(m, nv)                                                       \
    ctile(m, nv, ct_pixels(nv), bout, K, wp, px, off, step, bb, act, ocn,    \
          yb, plane, p0, lim, kb)
/* A full tile of nv blocks in row mode m, returning. */
#define CT_ROWS(m)                                                           \
    switch (nv) {                                                            \
    case 3:                                                                  \
        CT_FULL(m, 3);                                                       \
        return;                                                              \
    case 2:                                                                  \
        CT_FULL(m, 2);                                                       \
        return;                                                              \
    default:                                                                 \
        CT_FULL(m, 1);                                                       \
        return;                                                              \
    }

/* A tile of r pixels x nv blocks of channels; a full tile whose pixels are
 * consecutive in a row of the phase planes takes the row form, CT_ROW or
 * CT_BROW (direct planes have their own loop, ct_direct). */
static inline __attribute__((always_inline)) void
ctile_sel(const bool bout, int mode, int nv, int r, size_t K,
          const float *wp, const float *const *px, const ptrdiff_t *off,
          size_t step, const float *bb, int act, size_t ocn, float *yb,
          size_t plane, size_t p0, size_t lim, const struct ct_kb *kb)
{
    if (r == ct_pixels(nv)) {
        if (mode == CT_ROW) {
            CT_ROWS(CT_ROW);
        }
        if (mode == CT_BROW) {
            CT_ROWS(CT_BROW);
        }
    }
    switch (nv * 16 + r) {
        CT_CASE(3, 4);
        CT_CASE(3, 3);
        CT_CASE(3, 2);
        CT_CASE(3, 1);
        CT_CASE(2, 6);
        CT_CASE(2, 5);
        CT_CASE(2, 4);
        CT_CASE(2, 3);
        CT_CASE(2, 2);
        CT_CASE(2, 1);
        CT_CASE(1, 12);
        CT_CASE(1, 11);
        CT_CASE(1, 10);
        CT_CASE(1, 9);
        CT_CASE(1, 8);
        CT_CASE(1, 7);
        CT_CASE(1, 6);
        CT_CASE(1, 5);
        CT_CASE(1, 4);
        CT_CASE(1, 3);
        CT_CASE(1, 2);
    default:
        ctile(CT_ANY, 1, 1, bout, K, wp, px, off, 0, bb, act, ocn, yb, plane,
              p0, lim, kb);
        break;
    }
}

/* ctile_sel for an NCHW (transposed stores) or a blocked output. */
static void ctile_any(bool bout, int mode, int nv, int r, size_t K,
                      const float *wp, const float *const *px,
                      const ptrdiff_t *off, size_t step, const float *bb,
                      int act, size_t ocn, float *yb, size_t plane,
                      size_t p0, size_t lim, const struct ct_kb *kb)
{
    if (bout) {
        ctile_sel(true, mode, nv, r, K, wp, px, off, step, bb, act, ocn, yb,
                  plane, p0, lim, kb);
    } else {
        ctile_sel(false, mode, nv, r, K, wp, px, off, step, bb, act, ocn,
                  yb, plane, p0, lim, kb);
    }
}

/* Every tile of a chunk on a direct (1 x 1) plane, output pixels
 * [pa, pb): the full tiles in the mode's constant addressing (CT_DIRECT,
 * CT_BLK), in one loop with the tile inlined, since a shallow K leaves
 * little to amortise a call; the last, partial tile through the offsets
 * table (pixels ps floats apart). */
static inline __attribute__((always_inline)) void
ct_direct_t(const bool bout, const int mode, const int nv, size_t K,
            const float *wp, const float *base, size_t ps,
            const ptrdiff_t *off, size_t step, const float *bb, int act,
            size_t ocn, float *yb, size_t plane, size_t pa, size_t pb)
{
    const size_t R = (size_t)ct_pixels(nv);
    size_t p0 = pa;
    for (; p0 + R <= pb; p0 += R) {
        const float *px0 = base + p0 * ps;
        ctile(mode, nv, (int)R, bout, K, wp, &px0, off, step, bb, act, ocn,
              yb, plane, p0, pb, NULL);
    }
    if (p0 < pb) {
        const float *px[CT_PIX];
        for (size_t r = 0; r < pb - p0; r++) {
            px[r] = base + (p0 + r) * ps;
        }
        ctile_any(bout, CT_ANY, nv, (int)(pb - p0), K, wp, px, off, 0, bb,
                  act, ocn, yb, plane, p0, pb, NULL);
    }
}

/* Every tile of a chunk of an unpadded 1 x 1 convolution at a stride
 * other than 1 on a blocked input, read in place (no phase copy): pixel
 * (oy, ox) at base + (oy * stride_h * in_w + ox * stride_w) * 8, channel
 * k off[k] floats further. */
static inline __attribute__((always_inline)) void
ct_strided_t(const bool bout, const int nv, const struct kern_conv2d_shape *s,
             size_t out_w, size_t K, const float *wp, const float *base,
             const ptrdiff_t *off, size_t step, const float *bb, int act,
             size_t ocn, float *yb, size_t plane, size_t pa, size_t pb)
{
    const size_t R = (size_t)ct_pixels(nv);
    const size_t rs = s->stride_h * s->in_w * 8, cs = s->stride_w * 8;
    size_t oy = pa / out_w, ox = pa % out_w;
    for (size_t p0 = pa; p0 < pb; p0 += R) {
        const size_t n = pb - p0 < R ? pb - p0 : R;
        const float *px[CT_PIX];
        for (size_t r = 0; r < n; r++) {
            px[r] = base + oy * rs + ox * cs;
            if (++ox == out_w) {
                ox = 0;
                oy++;
            }
        }
        if (n == R) {
            ctile(CT_BANY, nv, (int)R, bout, K, wp, px, NULL, step, bb, act,
                  ocn, yb, plane, p0, pb, NULL);
            continue;
        }
        /* the last, partial tile: through the offsets table */
        ctile_any(bout, CT_ANY, nv, (int)n, K, wp, px, off, 0, bb, act, ocn,
                  yb, plane, p0, pb, NULL);
    }
}

#define CT_STRIDED_CASE(bo, nv)                                              \
    case (bo) * 4 + (nv):                                                    \
        ct_strided_t(bo, nv, s, out_w, K, wp, base, off, step, bb, act, ocn, \
                     yb, plane, pa, pb);                                     \
        break

static void ct_strided(bool bout, int nv, const struct kern_conv2d_shape *s,
                       size_t out_w, size_t K, const float *wp,
                       const float *base, const ptrdiff_t *off, size_t step,
                       const float *bb, int act, size_t ocn, float *yb,
                       size_t plane, size_t pa, size_t pb)
{
    switch ((int)bout * 4 + nv) {
        CT_STRIDED_CASE(0, 1);
        CT_STRIDED_CASE(0, 2);
        CT_STRIDED_CASE(0, 3);
        CT_STRIDED_CASE(1, 1);
        CT_STRIDED_CASE(1, 2);
    default:
        CT_STRIDED_CASE(1, 3);
    }
}

#define CT_DIRECT_CASE(bo, m, nv)                                            \
    case (bo) * 16 + (m) * 4 + (nv):                                         \
        ct_direct_t(bo, m, nv, K, wp, base, ps, off, step, bb, act, ocn,     \
                    yb, plane, pa, pb);                                      \
        break

static void ct_direct(bool bout, int mode, int nv, size_t K,
                      const float *wp, const float *base, size_t ps,
                      const ptrdiff_t *off, size_t step, const float *bb,
                      int act, size_t ocn, float *yb, size_t plane,
                      size_t pa, size_t pb)
{
    switch ((int)bout * 16 + mode * 4 + nv) {
        CT_DIRECT_CASE(0, CT_DIRECT, 1);
        CT_DIRECT_CASE(0, CT_DIRECT, 2);
        CT_DIRECT_CASE(0, CT_DIRECT, 3);
        CT_DIRECT_CASE(0, CT_BLK, 1);
        CT_DIRECT_CASE(0, CT_BLK, 2);
        CT_DIRECT_CASE(0, CT_BLK, 3);
        CT_DIRECT_CASE(1, CT_DIRECT, 1);
        CT_DIRECT_CASE(1, CT_DIRECT, 2);
        CT_DIRECT_CASE(1, CT_DIRECT, 3);
        CT_DIRECT_CASE(1, CT_BLK, 1);
        CT_DIRECT_CASE(1, CT_BLK, 2);
    default:
        CT_DIRECT_CASE(1, CT_BLK, 3);
    }
}

/* Every tile of a chunk of ocn channels (nv blocks) on padded phase
 * planes (base; blocked ones with bin), for K steps from wp and off; kb:
 * NULL, or a K block whose running sums for the tile at pixel p0 are at
 * ain / aout + p0 * 8 nv (tiles of R pixels: R * nv vectors each). */
static void ct_plane(bool bout, bool bin, int nv,
                     const struct kern_conv_geom *g, size_t out_w, size_t K,
                     const struct ct_kb *kb, const float *wp,
                     const float *base, const ptrdiff_t *off,
                     const float *bb, int act, size_t ocn, float *yb,
                     size_t plane, size_t pa, size_t pb)
{
    const size_t ps = bin ? 8 : 1;
    const size_t R = (size_t)ct_pixels(nv);
    const int rmode = bin ? CT_BROW : CT_ROW;
    size_t oy = pa / out_w, ox = pa % out_w;
    for (size_t p0 = pa; p0 < pb; p0 += R) {
        const size_t n = pb - p0 < R ? pb - p0 : R;
        const float *px[CT_PIX];
        struct ct_kb tk;
        const struct ct_kb *t = NULL;
        if (kb) {
            const size_t at = p0 * 8 * (size_t)nv;
            tk.ks = kb->ks;
            tk.ain = kb->ain ? kb->ain + at : NULL;
            tk.aout = kb->aout ? kb->aout + at : NULL;
            t = &tk;
        }
        if (ox + n <= out_w) {
            /* consecutive: the tile stays in one row (a partial one is
             * run in the any form) */
            for (size_t r = 0; r < (n < R ? n : 1); r++) {
                px[r] = base + (oy * g->pitch + ox + r) * ps;
            }
            ctile_any(bout, rmode, nv, (int)n, K, wp, px, off, 0, bb, act,
                      ocn, yb, plane, p0, pb, t);
            ox += n;
            if (ox == out_w) {
                ox = 0;
                oy++;
            }
            continue;
        }
        for (size_t r = 0; r < n; r++) {
            px[r] = base + (oy * g->pitch + ox) * ps;
            if (++ox == out_w) {
                ox = 0;
                oy++;
            }
        }
        ctile_any(bout, CT_ANY, nv, (int)n, K, wp, px, off, 0, bb, act, ocn,
                  yb, plane, p0, pb, t);
    }
}

/* Blocks for the next chunk of `left` channels: 3 while that leaves no
 * lone block (8 channels: a 1 x 12 tile, load-bound), else 2 or 1. A 1 x
 * 1 convolution read straight from the input planes keeps to 2 blocks x 6
 * pixels, which ran faster there (its tile has no offsets table to load,
 * and fewer, longer rows to store). */
static int ct_blocks(size_t left, bool direct)
{
    if (!direct && left > 16 && left != 32 && !(left > 24 && left % 24 > 0 &&
                                     left % 24 <= 8)) {
        return 3;
    }
    return left > 8 ? 2 : 1;
}

void CONV_FN(kern_conv2d_packed)(const struct kern_conv2d_shape *s, size_t out_h,
                             size_t out_w, int in_layout, int out_layout,
                             const float *x, const float *wpk,
                             const float *bias, int act, void *work, float *y,
                             size_t pa, size_t pb)
{
    struct kern_conv_geom g;
    if (!work || !kern_conv_geom(s, out_h, out_w, &g)) {
        kern_conv2d_packed_c(s, out_h, out_w, in_layout, out_layout, x, wpk,
                             bias, act, work, y, pa, pb);
        return;
    }
    const bool bin = in_layout == KERN_LAYOUT_NCHW8C;
    const bool bout = out_layout == KERN_LAYOUT_NCHW8C;
    const size_t icg = s->in_c / s->groups, ocg = s->out_c / s->groups;
    const size_t K = g.k, hw_in = s->in_h * s->in_w, plane = out_h * out_w;
    const size_t nb = (ocg + OCB - 1) / OCB;
    if (!bin && !bout && K < CT_MIN_K && plane >= CT_MAX_PLANE) {
        pixel_gemm(s, &g, out_h, out_w, x, wpk, true, bias, act, work, y, pa,
                   pb);
        return;
    }
    /* A sample's floats in each layout (when blocked and grouped, every
     * group's channels are whole blocks, so that group gi starts gi * icg
     * planes in, as in NCHW). */
    const size_t x_n = bin ? nb_of(s->in_c) * 8 * hw_in : s->in_c * hw_in;
    const size_t y_n = bout ? nb_of(s->out_c) * 8 * plane : s->out_c * plane;
    /* pixels 8 floats apart in a blocked input and in its blocked phase
     * planes; direct: channel blocks (blocked) or channels a plane apart */
    const size_t ps = bin ? 8 : 1, step = bin ? hw_in * 8 : hw_in;
    const int dmode = bin ? CT_BLK : CT_DIRECT;
    unsigned char *ws = (unsigned char *)work;
    ws += (64 - (uintptr_t)ws % 64) % 64;
    ptrdiff_t *off = (ptrdiff_t *)(void *)ws;
    float *buf = (float *)(void *)(off + (g.direct ? 2 * K : K));
    /* the running sums between K blocks (kern_conv_geom counts them) */
    float *acc = buf + (g.buf_floats + 7) / 8 * 8;
    /* an unpadded 1 x 1 convolution on a blocked input reads it in place
     * at any stride: a pixel's 8 channels are one contiguous run */
    const bool inplace = bin && s->kh == 1 && s->kw == 1 && !s->pad_top &&
                         !s->pad_left && !s->pad_bottom && !s->pad_right;
    offsets(s, &g, bin, inplace, off);
    for (size_t b = 0; b < s->batch; b++) {
        for (size_t gi = 0; gi < s->groups; gi++) {
            const float *xg = x + b * x_n + gi * icg * hw_in;
            const float *bg = bias ? bias + gi * ocg : NULL;
            /* channel oc of the group starts at yg + oc * plane in
             * either layout (oc a multiple of 8 when blocked) */
            float *yg = y + b * y_n + gi * ocg * plane;
            const float *base = xg;
            if (!g.direct && !inplace) {
                /* the phase rows the pixels [pa, pb) read: output row oy
                 * reads rows oy .. oy + (kh - 1) / stride_h */
                const size_t q0 = pa / out_w;
                size_t q1 = (pb - 1) / out_w + 1 + (s->kh - 1) / s->stride_h;
                q1 = q1 < g.q ? q1 : g.q;
                if (bin) {
                    pack_blocked(s, &g, xg, buf, q0, q1);
                } else {
                    pack(s, &g, xg, buf, q0, q1);
                }
                base = buf;
            }
            for (size_t oc = 0; oc < ocg;) {
                const int nv = ct_blocks(ocg - oc, g.direct);
                const size_t ocn = ocg - oc < (size_t)nv * OCB
                                       ? ocg - oc
                                       : (size_t)nv * OCB;
                const float *wp = wpk + (gi * nb + oc / OCB) * K * OCB;
                float bb[CT_NV * OCB];
                for (size_t l = 0; l < CT_NV * OCB; l++) {
                    bb[l] = bg && l < ocn ? bg[oc + l] : 0.0f;
                }
#ifdef CONV_WIDE_DIRECT
                /* the includer's wider tile takes the whole blocks of a
                 * 1 x 1 convolution from and to blocked tensors that it
                 * can (returns how many channels it did, 0 for none) */
                if (g.direct && bin && bout) {
                    const size_t done = CONV_WIDE_DIRECT(
                        K, wp, base, step, bg ? bg + oc : NULL, act,
                        ocg - oc, yg + oc * plane, plane, pa, pb);
                    if (done) {
                        oc += done;
                        continue;
                    }
                }
#endif
                if (g.direct) {
                    ct_direct(bout, dmode, nv, K, wp, base, ps, off, step,
                              bb, act, ocn, yg + oc * plane, plane, pa, pb);
                    oc += ocn;
                    continue;
                }
#ifdef CONV_WIDE_PLANE
                /* the includer's wider tile to a blocked output, whole
                 * blocks (its K steps unblocked: the same order of sums),
                 * on phase planes (pixels 8 floats apart when blocked, 1
                 * on a channel's own) or on a blocked input read in place
                 * (pixels stride_w x 8 apart, rows stride_h x in_w x 8:
                 * an even pitch of them when stride_w divides that) */
                if (bout) {
                    size_t wps = bin ? 8 : 1, wpitch = g.pitch;
                    if (inplace) {
                        const size_t row = s->stride_h * s->in_w;
                        wps = s->stride_w * 8;
                        wpitch = row % s->stride_w ? 0 : row / s->stride_w;
                    }
                    const size_t done =
                        wpitch ? CONV_WIDE_PLANE(wps, K, wp, base, off,
                                                 wpitch, out_w,
                                                 bg ? bg + oc : NULL, act,
                                                 ocg - oc, yg + oc * plane,
                                                 plane, pa, pb)
                               : 0;
                    if (done) {
                        oc += done;
                        continue;
                    }
                }
#endif
                if (inplace) {
                    ct_strided(bout, nv, s, out_w, K, wp, base, off, step,
                               bb, act, ocn, yg + oc * plane, plane, pa, pb);
                    oc += ocn;
                    continue;
                }
                if (g.kb >= K) {
                    ct_plane(bout, bin, nv, &g, out_w, K, NULL, wp, base, off,
                             bb, act, ocn, yg + oc * plane, plane, pa, pb);
                    oc += ocn;
                    continue;
                }
                /* K blocks: every tile of the plane runs one block of the
                 * panel (kb x 8 nv floats, which stays in cache) before
                 * the next block; the running sums wait in acc, so each
                 * output adds its K terms in the same order as unblocked,
                 * and the last block applies the activation. */
                for (size_t k0 = 0; k0 < K; k0 += g.kb) {
                    const size_t kn = K - k0 < g.kb ? K - k0 : g.kb;
                    const struct ct_kb kb = {K, k0 ? acc : NULL,
                                             k0 + kn < K ? acc : NULL};
                    ct_plane(bout, bin, nv, &g, out_w, kn, &kb,
                             wp + k0 * OCB, base, off + k0, bb, act, ocn,
                             yg + oc * plane, plane, pa, pb);
                }
                oc += ocn;
            }
        }
    }
}
