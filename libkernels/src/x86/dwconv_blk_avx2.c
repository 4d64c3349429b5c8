/* AVX2 depthwise convolution on NCHW8c activations (kernels.h).
 *
 * In NCHW8c one 8-float vector is one pixel of the eight channels of a
 * block, and the packed filter holds one vector per tap, so every tap of
 * every output is one load of the input pixel, one load (or register) of
 * the tap's weights and one fused multiply-add: no transposes, no
 * broadcasts, and a stride is only a different input address.
 *
 * Each output row of a block is cut into columns whose taps all lie
 * inside the input (the interior: no test at all) and the few edge
 * columns on either side whose windows cross the left or right padding.
 * Interior columns go G at a time with G independent accumulators, so the
 * chains of dependent multiply-adds overlap; neighbouring outputs read
 * overlapping pixels, and with the loops unrolled for a constant filter
 * width the compiler loads each shared pixel once. Filter rows that fall
 * in the top or bottom padding are known per output row, not per tap.
 *
 * The bits of kern_dwconv2d_avx2 (the NCHW path): the sum starts from the
 * bias and takes every tap in row-major order with a fused multiply-add,
 * a tap outside the input as w * +0 (which only matters for a -0 sum or an
 * infinite weight, but costs little: only edge outputs have such taps). */
#include <immintrin.h>
#include <stdint.h>

#include "dwconv.h"

#define L KERN_CBLOCK
typedef __m256 V;

static inline V fuse(V v, int act, V keep)
{
    if (act != KERN_FUSE_NONE) {
        v = _mm256_max_ps(_mm256_setzero_ps(), v); /* NaN stays NaN */
        if (act == KERN_FUSE_RELU6) {
            v = _mm256_min_ps(_mm256_set1_ps(6.0f), v);
        }
    }
    /* the padding lanes of a last block: +0 whatever x held there */
    return _mm256_and_ps(v, keep);
}

/* a[0..g) = b + the taps of g outputs of one row whose filter rows
 * [ky0, ky1) lie in the input, row ky0 at r (column 0), rs floats apart:
 * output i's tap (ky, kx) reads the pixel of column c0 + i sw + kx - pl
 * for kx in [kx0, kx1) (where that column is inside the input), +0 for the
 * other kx and for the rows outside [ky0, ky1). g, kh, kw and sw are
 * constants after inlining at the call sites below. */
static inline __attribute__((always_inline)) void
taps(V *a, size_t g, V b, const float *r, size_t rs, size_t ky0, size_t ky1,
     const float *wt, size_t kh, size_t kw, size_t sw, size_t c0, size_t pl,
     size_t kx0, size_t kx1, int full)
{
    if (full) {
        /* every filter row inside the input: constants for the compiler */
        ky0 = 0;
        ky1 = kh;
    }
    const V z = _mm256_setzero_ps();
    for (size_t i = 0; i < g; i++) {
        a[i] = b;
    }
    for (size_t ky = 0; ky < kh; ky++) {
        const float *w = wt + ky * kw * L;
        const size_t lo = ky < ky0 || ky >= ky1 ? kw : kx0;
        const size_t hi = ky < ky0 || ky >= ky1 ? kw : kx1;
        for (size_t kx = 0; kx < lo; kx++) {
            const V wv = _mm256_loadu_ps(w + kx * L);
            for (size_t i = 0; i < g; i++) {
                a[i] = _mm256_fmadd_ps(wv, z, a[i]);
            }
        }
        for (size_t kx = lo; kx < hi; kx++) {
            const V wv = _mm256_loadu_ps(w + kx * L);
            for (size_t i = 0; i < g; i++) {
                const V v = _mm256_loadu_ps(
                    r + (ky - ky0) * rs + (c0 + i * sw + kx - pl) * L);
                a[i] = _mm256_fmadd_ps(wv, v, a[i]);
            }
        }
        for (size_t kx = hi; kx < kw; kx++) {
            const V wv = _mm256_loadu_ps(w + kx * L);
            for (size_t i = 0; i < g; i++) {
                a[i] = _mm256_fmadd_ps(wv, z, a[i]);
            }
        }
    }
}

/* a = fma(w, v, a) for one filter row of a 3-wide filter on g outputs
 * sw pixels apart from p (constants after inlining): each input pixel is
 * loaded once and given to every output that reads it, in the order kx =
 * 0, 1, 2 of each output. p NULL: a filter row in the padding. */
static inline __attribute__((always_inline)) void
frow3(V *a, size_t g, const float *p, V w0, V w1, V w2, size_t sw)
{
    if (!p) {
        const V z = _mm256_setzero_ps();
#pragma GCC unroll 8
        for (size_t i = 0; i < g; i++) {
            a[i] = _mm256_fmadd_ps(w0, z, a[i]);
            a[i] = _mm256_fmadd_ps(w1, z, a[i]);
            a[i] = _mm256_fmadd_ps(w2, z, a[i]);
        }
        return;
    }
#pragma GCC unroll 8
    for (size_t i = 0; i < g; i++) {
        a[i] = _mm256_fmadd_ps(w0, _mm256_loadu_ps(p + i * sw * L), a[i]);
        a[i] = _mm256_fmadd_ps(w1, _mm256_loadu_ps(p + (i * sw + 1) * L),
                               a[i]);
        a[i] = _mm256_fmadd_ps(w2, _mm256_loadu_ps(p + (i * sw + 2) * L),
                               a[i]);
    }
}

/* n outputs of a 3 x 3 filter whose columns all lie in the input, to yr:
 * output i's filter row ky reads from p[ky] + i sw L (NULL: padding). The
 * nine weight vectors stay in registers; G outputs at a time (G chains of
 * nine multiply-adds in flight), then 2 and 1. */
static inline __attribute__((always_inline)) void
seg3(float *yr, size_t n, const float *const p[3], const float *wt, V b,
     int act, V keep, size_t sw, size_t G)
{
    const V w0 = _mm256_loadu_ps(wt), w1 = _mm256_loadu_ps(wt + L);
    const V w2 = _mm256_loadu_ps(wt + 2 * L);
    const V w3 = _mm256_loadu_ps(wt + 3 * L), w4 = _mm256_loadu_ps(wt + 4 * L);
    const V w5 = _mm256_loadu_ps(wt + 5 * L);
    const V w6 = _mm256_loadu_ps(wt + 6 * L), w7 = _mm256_loadu_ps(wt + 7 * L);
    const V w8 = _mm256_loadu_ps(wt + 8 * L);
    const size_t step = sw * L;
    const float *p0 = p[0], *p1 = p[1], *p2 = p[2];
    size_t i = 0;
    V a[8];
    for (; i + G <= n; i += G) {
#pragma GCC unroll 8
        for (size_t k = 0; k < G; k++) {
            a[k] = b;
        }
        frow3(a, G, p0 ? p0 + i * step : NULL, w0, w1, w2, sw);
        frow3(a, G, p1 ? p1 + i * step : NULL, w3, w4, w5, sw);
        frow3(a, G, p2 ? p2 + i * step : NULL, w6, w7, w8, sw);
#pragma GCC unroll 8
        for (size_t k = 0; k < G; k++) {
            _mm256_storeu_ps(yr + (i + k) * L, fuse(a[k], act, keep));
        }
    }
    for (; i < n; i++) {
        a[0] = b;
        frow3(a, 1, p0 ? p0 + i * step : NULL, w0, w1, w2, sw);
        frow3(a, 1, p1 ? p1 + i * step : NULL, w3, w4, w5, sw);
        frow3(a, 1, p2 ? p2 + i * step : NULL, w6, w7, w8, sw);
        _mm256_storeu_ps(yr + i * L, fuse(a[0], act, keep));
    }
}

/* One output row of a block: columns [0, xa) and [xb, ow) one at a time
 * with their valid tap ranges, [xa, xb) G at a time then singly; the
 * filter rows [ky0, ky1) lie in the input, row ky0 at r. */
static inline __attribute__((always_inline)) void
out_row(float *yr, size_t ow, size_t xa, size_t xb, const float *r,
        size_t ky0, size_t ky1, const float *wt, size_t kh, size_t kw,
        size_t sw, size_t pl, size_t iw, V b, int act, V keep, size_t G,
        int full)
{
    const size_t rs = iw * L;
    V a[8];
    /* edge columns: the taps kx with 0 <= ox sw + kx - pl < iw */
    for (size_t ox = 0; ox < ow; ox++) {
        if (ox == xa) {
            ox = xb;
            if (ox == ow) {
                break;
            }
        }
        const size_t c0 = ox * sw; /* padded column of tap 0 */
        size_t kx0 = c0 < pl ? pl - c0 : 0;
        kx0 = kx0 < kw ? kx0 : kw;
        size_t kx1 = iw + pl > c0 ? iw + pl - c0 : 0;
        kx1 = kx1 < kw ? kx1 : kw;
        kx1 = kx1 > kx0 ? kx1 : kx0;
        taps(a, 1, b, r, rs, ky0, ky1, wt, kh, kw, sw, c0, pl, kx0, kx1, full);
        _mm256_storeu_ps(yr + ox * L, fuse(a[0], act, keep));
    }
    size_t ox = xa;
    if (kh == 3 && kw == 3 && xa < xb) {
        const float *p[3];
        for (size_t ky = 0; ky < 3; ky++) {
            p[ky] = ky >= ky0 && ky < ky1
                        ? r + (ky - ky0) * rs + (xa * sw - pl) * L
                        : NULL;
        }
        seg3(yr + xa * L, xb - xa, p, wt, b, act, keep, sw, G);
        return;
    }
    for (; ox + G <= xb; ox += G) {
        taps(a, G, b, r, rs, ky0, ky1, wt, kh, kw, sw, ox * sw, pl, 0, kw,
             full);
#pragma GCC unroll 8
        for (size_t i = 0; i < G; i++) {
            _mm256_storeu_ps(yr + (ox + i) * L, fuse(a[i], act, keep));
        }
    }
    for (; ox < xb; ox++) {
        taps(a, 1, b, r, rs, ky0, ky1, wt, kh, kw, sw, ox * sw, pl, 0, kw,
             full);
        _mm256_storeu_ps(yr + ox * L, fuse(a[0], act, keep));
    }
}

/* One block plane: x [ih][iw][L] to y [oh][ow][L]. */
static inline __attribute__((always_inline)) void
plane(const struct kern_dwconv2d_shape *s, size_t oh, size_t ow,
      const float *x, const float *wt, V b, int act, V keep, float *y,
      size_t kh, size_t kw, size_t sw, size_t G)
{
    const size_t ih = s->in_h, iw = s->in_w, sh = s->stride_h;
    const size_t pt = s->pad_top, pl = s->pad_left;
    /* interior columns: pl <= ox sw and ox sw + kw - pl <= iw */
    size_t xa = (pl + sw - 1) / sw, xb = 0;
    if (iw + pl >= kw) {
        xb = (iw + pl - kw) / sw + 1;
    }
    xb = xb < ow ? xb : ow;
    xa = xa < xb ? xa : xb;
    if (xa == xb) {
        xa = xb = ow; /* no interior: every column is an edge column */
    }
    for (size_t oy = 0; oy < oh; oy++) {
        /* filter rows [ky0, ky1) read input rows oy sh + ky - pt */
        const size_t t = oy * sh;
        size_t ky0 = t < pt ? pt - t : 0;
        ky0 = ky0 < kh ? ky0 : kh;
        size_t ky1 = ih + pt > t ? ih + pt - t : 0;
        ky1 = ky1 < kh ? ky1 : kh;
        ky1 = ky1 > ky0 ? ky1 : ky0;
        const float *r = ky1 > ky0 ? x + (t + ky0 - pt) * iw * L : x;
        if (ky0 == 0 && ky1 == kh) {
            out_row(y + oy * ow * L, ow, xa, xb, r, 0, kh, wt, kh, kw, sw, pl,
                    iw, b, act, keep, G, 1);
        } else {
            out_row(y + oy * ow * L, ow, xa, xb, r, ky0, ky1, wt, kh, kw, sw,
                    pl, iw, b, act, keep, G, 0);
        }
    }
}

void kern_dwconv2d_blk_avx2(const struct kern_dwconv2d_shape *s,
                            size_t out_h, size_t out_w, size_t b0, size_t b1,
                            const float *x, const float *packed,
                            const float *bias, int act, float *y)
{
    const size_t C = s->channels, nb = (C + L - 1) / L;
    const size_t ihw = s->in_h * s->in_w * L, ohw = out_h * out_w * L;
    const size_t kh = s->kh, kw = s->kw, sw = s->stride_w;
    for (size_t bi = 0; bi < s->batch; bi++) {
        for (size_t j = b0; j < b1; j++) {
            const size_t n = C - j * L < L ? C - j * L : L;
            const __m256i m = _mm256_cmpgt_epi32(
                _mm256_set1_epi32((int)n),
                _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
            const V keep = _mm256_castsi256_ps(m);
            const V b = bias ? _mm256_maskload_ps(bias + j * L, m)
                             : _mm256_setzero_ps();
            const float *xp = x + (bi * nb + j) * ihw;
            const float *wt = packed + j * kh * kw * L;
            float *yp = y + (bi * nb + j) * ohw;
            if (kh == 3 && kw == 3 && sw == 1) {
                plane(s, out_h, out_w, xp, wt, b, act, keep, yp, 3, 3, 1, 4);
            } else if (kh == 3 && kw == 3 && sw == 2) {
                plane(s, out_h, out_w, xp, wt, b, act, keep, yp, 3, 3, 2, 4);
            } else {
                plane(s, out_h, out_w, xp, wt, b, act, keep, yp, kh, kw, sw,
                      4);
            }
        }
    }
}
