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
     size_t kx0, size_t kx1)
{
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

/* One output row of a block: columns [0, xa) and [xb, ow) one at a time
 * with their valid tap ranges, [xa, xb) G at a time then singly; the
 * filter rows [ky0, ky1) lie in the input, row ky0 at r. */
static inline __attribute__((always_inline)) void
out_row(float *yr, size_t ow, size_t xa, size_t xb, const float *r,
        size_t ky0, size_t ky1, const float *wt, size_t kh, size_t kw,
        size_t sw, size_t pl, size_t iw, V b, int act, V keep, size_t G)
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
        taps(a, 1, b, r, rs, ky0, ky1, wt, kh, kw, sw, c0, pl, kx0, kx1);
        _mm256_storeu_ps(yr + ox * L, fuse(a[0], act, keep));
    }
    size_t ox = xa;
    for (; ox + G <= xb; ox += G) {
        taps(a, G, b, r, rs, ky0, ky1, wt, kh, kw, sw, ox * sw, pl, 0, kw);
        for (size_t i = 0; i < G; i++) {
            _mm256_storeu_ps(yr + (ox + i) * L, fuse(a[i], act, keep));
        }
    }
    for (; ox < xb; ox++) {
        taps(a, 1, b, r, rs, ky0, ky1, wt, kh, kw, sw, ox * sw, pl, 0, kw);
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
        out_row(y + oy * ow * L, ow, xa, xb, r, ky0, ky1, wt, kh, kw, sw, pl,
                iw, b, act, keep, G);
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
