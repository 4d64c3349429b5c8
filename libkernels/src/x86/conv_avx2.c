/* AVX2 convolution: a matrix product per group with a 4 x 24 register tile
 * (4 output channels x 3 vectors of 8 pixels), read straight from the
 * activation planes (1 x 1) or from one zero-padded, stride-phase-split
 * copy of them (everything else); see kern_conv_geom in conv.h for the
 * layout and kern_conv2d_f32 in kernels.h for the contract.
 *
 * Why this shape of tile: 12 accumulators hide the multiply-add latency
 * (5 cycles, 2 per cycle on the cores we target), and each step over K
 * costs 3 loads and 4 broadcasts for 12 multiply-adds, under the two load
 * ports' budget. Every row of the right operand is a contiguous run at a
 * fixed offset from the block's first column, so the tile needs no packed
 * panel: the offsets table (one entry per (ic, ky, kx)) replaces im2col. */
#include <immintrin.h>
#include <string.h>

#include "conv.h"
#include "hsum_avx2.h"

enum { NR = KERN_CONV_NR, MR = KERN_CONV_MR };

static inline __m256 act8(__m256 v, int act)
{
    if (act == KERN_FUSE_NONE) {
        return v;
    }
    v = _mm256_max_ps(_mm256_setzero_ps(), v); /* v second: NaN stays */
    if (act == KERN_FUSE_RELU6) {
        v = _mm256_min_ps(_mm256_set1_ps(6.0f), v);
    }
    return v;
}

/* out[r][0..NR) = act(bias[r] + sum over k of w[r * K + k] * base[off[k]
 * + 0..NR)) for r < mr, rows ldo floats apart. mr is a constant in each
 * caller (the function is inlined), so the unused rows cost nothing. */
static inline __attribute__((always_inline)) void
tile(const int mr, size_t K, const float *w, const float *base,
     const ptrdiff_t *off, const float *bias, int act, float *out,
     size_t ldo)
{
    __m256 a[MR][3];
    for (int r = 0; r < MR; r++) {
        const __m256 b =
            r < mr && bias ? _mm256_set1_ps(bias[r]) : _mm256_setzero_ps();
        a[r][0] = b;
        a[r][1] = b;
        a[r][2] = b;
    }
    /* rows past mr are never read (nor formed past the array's end) */
    const float *w0 = w, *w1 = mr > 1 ? w + K : w;
    const float *w2 = mr > 2 ? w + 2 * K : w, *w3 = mr > 3 ? w + 3 * K : w;
    for (size_t k = 0; k < K; k++) {
        const float *bp = base + off[k];
        const __m256 x0 = _mm256_loadu_ps(bp);
        const __m256 x1 = _mm256_loadu_ps(bp + 8);
        const __m256 x2 = _mm256_loadu_ps(bp + 16);
        __m256 wv = _mm256_broadcast_ss(w0 + k);
        a[0][0] = _mm256_fmadd_ps(wv, x0, a[0][0]);
        a[0][1] = _mm256_fmadd_ps(wv, x1, a[0][1]);
        a[0][2] = _mm256_fmadd_ps(wv, x2, a[0][2]);
        if (mr > 1) {
            wv = _mm256_broadcast_ss(w1 + k);
            a[1][0] = _mm256_fmadd_ps(wv, x0, a[1][0]);
            a[1][1] = _mm256_fmadd_ps(wv, x1, a[1][1]);
            a[1][2] = _mm256_fmadd_ps(wv, x2, a[1][2]);
        }
        if (mr > 2) {
            wv = _mm256_broadcast_ss(w2 + k);
            a[2][0] = _mm256_fmadd_ps(wv, x0, a[2][0]);
            a[2][1] = _mm256_fmadd_ps(wv, x1, a[2][1]);
            a[2][2] = _mm256_fmadd_ps(wv, x2, a[2][2]);
        }
        if (mr > 3) {
            wv = _mm256_broadcast_ss(w3 + k);
            a[3][0] = _mm256_fmadd_ps(wv, x0, a[3][0]);
            a[3][1] = _mm256_fmadd_ps(wv, x1, a[3][1]);
            a[3][2] = _mm256_fmadd_ps(wv, x2, a[3][2]);
        }
    }
    for (int r = 0; r < mr; r++) {
        _mm256_storeu_ps(out + r * ldo, act8(a[r][0], act));
        _mm256_storeu_ps(out + r * ldo + 8, act8(a[r][1], act));
        _mm256_storeu_ps(out + r * ldo + 16, act8(a[r][2], act));
    }
}

static void tile_any(size_t mr, size_t K, const float *w, const float *base,
                     const ptrdiff_t *off, const float *bias, int act,
                     float *out, size_t ldo)
{
    switch (mr) {
    case 4:
        tile(4, K, w, base, off, bias, act, out, ldo);
        break;
    case 3:
        tile(3, K, w, base, off, bias, act, out, ldo);
        break;
    case 2:
        tile(2, K, w, base, off, bias, act, out, ldo);
        break;
    default:
        tile(1, K, w, base, off, bias, act, out, ldo);
        break;
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
    __m256 a[MR][3];
    for (int r = 0; r < MR; r++) {
        a[r][0] = a[r][1] = a[r][2] = _mm256_setzero_ps();
    }
    size_t k = 0;
    for (; k + 8 <= K; k += 8) {
        __m256 xv[3];
        for (int j = 0; j < nj; j++) {
            xv[j] = _mm256_loadu_ps(xt + j * K + k);
        }
        for (int r = 0; r < mr; r++) {
            const __m256 wv = _mm256_loadu_ps(w + r * K + k);
            for (int j = 0; j < nj; j++) {
                a[r][j] = _mm256_fmadd_ps(wv, xv[j], a[r][j]);
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

/* The group's input planes (x points at its first one), zero-padded and
 * split by stride phase into buf (layout in conv.h). */
static void pack(const struct kern_conv2d_shape *s,
                 const struct kern_conv_geom *g, const float *x, float *buf)
{
    const size_t icg = s->in_c / s->groups, ih = s->in_h, iw = s->in_w;
    const size_t sh = s->stride_h, sw = s->stride_w;
    const size_t pt = s->pad_top, pl = s->pad_left, P = g->pitch;
    memset(buf, 0, g->buf_floats * sizeof *buf);
    for (size_t c = 0; c < icg; c++) {
        const float *xc = x + c * ih * iw;
        for (size_t ry = 0; ry < g->phy; ry++) {
            for (size_t rx = 0; rx < g->phx; rx++) {
                float *pp = buf + ((c * g->phy + ry) * g->phx + rx) * g->plane;
                /* phase columns t with pl <= t * sw + rx < pl + iw */
                const size_t t0 = pl > rx ? (pl - rx + sw - 1) / sw : 0;
                size_t t1 = pl + iw > rx ? (pl + iw - rx + sw - 1) / sw : 0;
                t1 = t1 < P ? t1 : P;
                if (t0 >= t1) {
                    continue;
                }
                const size_t n = t1 - t0;
                for (size_t q = 0; q < g->q; q++) {
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

/* Copy the tile's columns j0 .. j0 + n (GEMM columns, pitch P) into the
 * output planes yo (out_w wide, plane floats apart), dropping the junk
 * columns ox >= out_w. */
static void scatter(const float *t, size_t mr, size_t j0, size_t n, size_t P,
                    size_t out_w, float *yo, size_t plane)
{
    size_t oy = j0 / P, ox = j0 % P;
    for (size_t j = 0; j < n;) {
        const size_t run = P - ox < n - j ? P - ox : n - j;
        if (ox < out_w) {
            const size_t m = out_w - ox < run ? out_w - ox : run;
            /* runs are a few floats (an output row): a loop, not a
             * call per run */
            for (size_t r = 0; r < mr; r++) {
                float *d = yo + r * plane + oy * out_w + ox;
                const float *src = t + r * NR + j;
                for (size_t q = 0; q < m; q++) {
                    d[q] = src[q];
                }
            }
        }
        j += run;
        ox = 0;
        oy++;
    }
}

void kern_conv2d_avx2(const struct kern_conv2d_shape *s, size_t out_h,
                      size_t out_w, const float *x, const float *w,
                      const float *bias, int act, void *work, float *y)
{
    struct kern_conv_geom g;
    if (!work || !kern_conv_geom(s, out_h, out_w, &g)) {
        kern_conv2d_c(s, out_h, out_w, x, w, bias, act, work, y);
        return;
    }
    const size_t icg = s->in_c / s->groups, ocg = s->out_c / s->groups;
    const size_t K = g.k, kh = s->kh, kw = s->kw;
    const size_t hw_in = s->in_h * s->in_w, plane = out_h * out_w;
    const size_t J = g.cols, P = g.pitch;
    unsigned char *ws = (unsigned char *)work;
    ws += (64 - (uintptr_t)ws % 64) % 64;
    ptrdiff_t *off = (ptrdiff_t *)(void *)ws;
    ptrdiff_t *off_tail = off + K; /* direct mode only */
    float *buf = (float *)(void *)(off + (g.direct ? 2 * K : K));
    if (g.direct) {
        for (size_t k = 0; k < K; k++) {
            off[k] = (ptrdiff_t)(k * hw_in);
            off_tail[k] = (ptrdiff_t)(k * NR);
        }
    } else {
        size_t k = 0;
        for (size_t c = 0; c < icg; c++) {
            for (size_t ky = 0; ky < kh; ky++) {
                for (size_t kx = 0; kx < kw; kx++, k++) {
                    const size_t ph = (c * g.phy + ky % s->stride_h) * g.phx +
                                      kx % s->stride_w;
                    off[k] = (ptrdiff_t)(ph * g.plane +
                                         ky / s->stride_h * P +
                                         kx / s->stride_w);
                }
            }
        }
    }
    /* Direct: output columns are the pixels themselves; padded: they
     * carry junk columns unless the phase pitch equals the output width. */
    const int dense_cols = g.direct || P == out_w;
    float t[MR * NR];
    for (size_t b = 0; b < s->batch; b++) {
        for (size_t gi = 0; gi < s->groups; gi++) {
            const float *xg = x + (b * s->in_c + gi * icg) * hw_in;
            const float *wg = w + gi * ocg * K;
            const float *bg = bias ? bias + gi * ocg : NULL;
            float *yg = y + (b * s->out_c + gi * ocg) * plane;
            if (g.direct && J < NR) {
                /* buf holds K * NR floats in direct mode */
                direct_small(ocg, K, J, xg, wg, bg, act, buf, yg);
                continue;
            }
            if (!g.direct) {
                pack(s, &g, xg, buf);
            }
            for (size_t j0 = 0; j0 < J; j0 += NR) {
                const size_t n = J - j0 < NR ? J - j0 : NR;
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
                    if (dense_cols && n == NR) {
                        tile_any(mr, K, wg + oc * K, base, o, bo, act,
                                 yg + oc * plane + j0, plane);
                    } else {
                        tile_any(mr, K, wg + oc * K, base, o, bo, act, t, NR);
                        scatter(t, mr, j0, n, dense_cols ? out_w : P, out_w,
                                yg + oc * plane, plane);
                    }
                }
            }
        }
    }
}
