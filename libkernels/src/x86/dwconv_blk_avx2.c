/* AVX2 depthwise convolution on NCHW8c activations (kernels.h).
 *
 * In NCHW8c one 8-float vector is one pixel of the eight channels of a
 * block, and the packed filter holds one vector per tap, so every tap of
 * every output is one load of the input pixel, one load (or register) of
 * the tap's weights and one fused multiply-add: no transposes, no
 * broadcasts, and a stride is only a different input address.
 *
 * Two loop orders. Block by block (plane()): each output row of a block
 * is cut into columns whose taps all lie inside the input (the interior:
 * no test at all) and the few edge columns on either side whose windows
 * cross the left or right padding (masked loads for 3 x 3 filters).
 * Interior columns go G at a time with G independent accumulators, so the
 * chains of dependent multiply-adds overlap; a 3 x 3 filter's nine weight
 * vectors stay in registers along the row. Filter rows that fall in the
 * top or bottom padding are known per output row, not per tap.
 *
 * Pixel-major (pixels3(), 3 x 3 filters with many blocks or few outputs):
 * on MobileNet's 6 x 6 and 3 x 3 planes a block has only 9 to 36 outputs,
 * and the block-by-block order pays a row's set-up and its edge columns'
 * lone chains for every block. Turned around, the geometry of a few
 * outputs is worked out once and the inner loop runs over the blocks (as
 * XNNPACK's NHWC kernels loop over channels), whose chains are
 * independent, with the edge columns' padding taps fixed at compile time.
 *
 * The bits of kern_dwconv2d_avx2 (the NCHW path): the sum starts from the
 * bias and takes every tap in row-major order with a fused multiply-add,
 * a tap outside the input as w * +0 (which only matters for a -0 sum or an
 * infinite weight, but costs little: only edge outputs have such taps). */
#include <immintrin.h>
#include <stdint.h>

#include "dwconv.h"
#include "nn.h"

#define L KERN_CBLOCK
typedef __m256 V;

/* 3 x 3 filters go pixel-major (pixels3) from PIX_BLOCKS full blocks, or
 * on planes of at most PIX_MAX outputs; otherwise block by block
 * (plane()), which measured faster on MobileNetV1's 48 x 48 layers (one
 * and two blocks; pixel-major won from four, at 24 x 24). Pixel-major
 * groups hold up to GMAX outputs: eight accumulators, a filter row's
 * three weight vectors and an input pixel fit in the sixteen registers
 * (eight measured faster than four on 6 x 6, 12 x 12 and 25 x 5
 * planes). */
enum { PIX_BLOCKS = 4, PIX_MAX = 64, GMAX = 8 };

static inline V fuse_full(V v, int act)
{
    if (act != KERN_FUSE_NONE) {
        v = _mm256_max_ps(_mm256_setzero_ps(), v); /* NaN stays NaN */
        if (act == KERN_FUSE_RELU6) {
            v = _mm256_min_ps(_mm256_set1_ps(6.0f), v);
        }
    }
    return v;
}

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
    /* pixel q is tap kx = q - i sw of output i: q ascending keeps each
     * output's taps in the order kx = 0, 1, 2 */
#pragma GCC unroll 32
    for (size_t q = 0; q < (g - 1) * sw + 3; q++) {
        const V v = _mm256_loadu_ps(p + q * L);
#pragma GCC unroll 8
        for (size_t i = 0; i < g; i++) {
            const size_t kx = q - i * sw; /* wraps when q < i sw */
            if (kx < 3) {
                a[i] = _mm256_fmadd_ps(kx == 0 ? w0 : kx == 1 ? w1 : w2, v,
                                       a[i]);
            }
        }
    }
}

/* g outputs of a 3 x 3 filter, the first at offset o of each filter
 * row's pointer. */
static inline __attribute__((always_inline)) void
grp3(float *yr, size_t g, const float *p0, const float *p1, const float *p2,
     size_t o, V w0, V w1, V w2, V w3, V w4, V w5, V w6, V w7, V w8, V b,
     int act, V keep, size_t sw)
{
    V a[8];
#pragma GCC unroll 8
    for (size_t k = 0; k < g; k++) {
        a[k] = b;
    }
    frow3(a, g, p0 ? p0 + o : NULL, w0, w1, w2, sw);
    frow3(a, g, p1 ? p1 + o : NULL, w3, w4, w5, sw);
    frow3(a, g, p2 ? p2 + o : NULL, w6, w7, w8, sw);
#pragma GCC unroll 8
    for (size_t k = 0; k < g; k++) {
        _mm256_storeu_ps(yr + k * L, fuse(a[k], act, keep));
    }
}

/* One output of a 3 x 3 filter at padded column c0 whose window crosses
 * the left or right edge: tap kx reads input column c0 + kx - pl when
 * that lies in [0, iw), +0 otherwise, by a masked load (a zero mask reads
 * nothing and gives +0), so the taps need no branches. q[ky]: filter row
 * ky's input row (column 0), NULL in the padding. */
static inline __attribute__((always_inline)) void
edge3(float *yo, const float *const q[3], size_t c0, size_t pl, size_t iw,
      const float *wt, V b, int act, V keep)
{
    __m256i mk[3];
    size_t off[3];
    for (size_t kx = 0; kx < 3; kx++) {
        const size_t ix = c0 + kx - pl; /* wraps left of the input */
        const int in = c0 + kx >= pl && ix < iw;
        mk[kx] = _mm256_set1_epi32(in ? -1 : 0);
        off[kx] = in ? ix * L : 0;
    }
    V a = b;
    const V z = _mm256_setzero_ps();
    for (size_t ky = 0; ky < 3; ky++) {
        const float *r = q[ky];
        for (size_t kx = 0; kx < 3; kx++) {
            const V w = _mm256_loadu_ps(wt + (ky * 3 + kx) * L);
            const V v = r ? _mm256_maskload_ps(r + off[kx], mk[kx]) : z;
            a = _mm256_fmadd_ps(w, v, a);
        }
    }
    _mm256_storeu_ps(yo, fuse(a, act, keep));
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
    for (; i + G <= n; i += G) {
        grp3(yr + i * L, G, p0, p1, p2, i * step, w0, w1, w2, w3, w4, w5, w6,
             w7, w8, b, act, keep, sw);
    }
    /* the rest as one group of n - i chains */
    switch (n - i) {
    case 0:
        break;
    case 1:
        grp3(yr + i * L, 1, p0, p1, p2, i * step, w0, w1, w2, w3, w4, w5, w6,
             w7, w8, b, act, keep, sw);
        break;
    case 2:
        grp3(yr + i * L, 2, p0, p1, p2, i * step, w0, w1, w2, w3, w4, w5, w6,
             w7, w8, b, act, keep, sw);
        break;
    case 3:
        grp3(yr + i * L, 3, p0, p1, p2, i * step, w0, w1, w2, w3, w4, w5, w6,
             w7, w8, b, act, keep, sw);
        break;
    default:
        for (; i < n; i++) {
            grp3(yr + i * L, 1, p0, p1, p2, i * step, w0, w1, w2, w3, w4, w5,
                 w6, w7, w8, b, act, keep, sw);
        }
        break;
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
    if (kh == 3 && kw == 3) {
        const float *q[3];
        for (size_t ky = 0; ky < 3; ky++) {
            q[ky] = ky >= ky0 && ky < ky1 ? r + (ky - ky0) * rs : NULL;
        }
        for (size_t ox = 0; ox < xa; ox++) {
            edge3(yr + ox * L, q, ox * sw, pl, iw, wt, b, act, keep);
        }
        if (xa < xb) {
            const float *p[3];
            for (size_t ky = 0; ky < 3; ky++) {
                p[ky] = q[ky] ? q[ky] + (xa * sw - pl) * L : NULL;
            }
            seg3(yr + xa * L, xb - xa, p, wt, b, act, keep, sw, G);
        }
        for (size_t ox = xb > xa ? xb : xa; ox < ow; ox++) {
            edge3(yr + ox * L, q, ox * sw, pl, iw, wt, b, act, keep);
        }
        return;
    }
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

/* 3 x 3 filters, column stride 1 or 2: pixel-major. The geometry of a
 * group of up to GMAX outputs of a row (which taps lie in the input, at
 * which offsets) is worked out once and serves every block of the range:
 * the inner loop runs over the blocks, the group's outputs in each (g
 * chains of nine multiply-adds, independent of the next block's, which
 * the processor overlaps), each weight vector loaded once for the g
 * outputs, each input pixel once for the outputs that share it.
 *
 * A group's outputs are interior columns, except that its first may be
 * a left edge column whose tap kx = 0 is in the padding (lft) and its
 * last a right edge column whose tap kx = 2 is (rgt): the padding of one
 * column per side that 3 x 3 layers have. g, sw, lft and rgt are
 * constants after inlining (pix_group), so the loop has no test on the
 * columns; a filter row in the top or bottom padding is a NULL row, one
 * test per row and block that always goes the same way. Output i's tap
 * (ky, kx) reads column c + i sw + kx - pl of row rows[ky]. */
static inline __attribute__((always_inline)) void
pix_blocks(const float *const rows[3], size_t c, size_t pl, const float *w,
           const float *bias, float *y, size_t n, size_t ihw, size_t ohw,
           int act, size_t g, size_t sw, int lft, int rgt)
{
    const V z = _mm256_setzero_ps();
    for (size_t j = 0; j < n; j++) {
        const V b = bias ? _mm256_loadu_ps(bias + j * L) : z;
        V a[8];
        for (size_t i = 0; i < g; i++) {
            a[i] = b;
        }
        for (size_t ky = 0; ky < 3; ky++) {
            const float *r = rows[ky];
            if (!r) {
                for (size_t kx = 0; kx < 3; kx++) {
                    const V wv = _mm256_loadu_ps(w + (ky * 3 + kx) * L);
                    for (size_t i = 0; i < g; i++) {
                        a[i] = _mm256_fmadd_ps(wv, z, a[i]);
                    }
                }
                continue;
            }
            r += j * ihw;
            const V w0 = _mm256_loadu_ps(w + ky * 3 * L);
            const V w1 = _mm256_loadu_ps(w + (ky * 3 + 1) * L);
            const V w2 = _mm256_loadu_ps(w + (ky * 3 + 2) * L);
            /* pixel q (column c + q - pl) is tap kx = q - i sw of output
             * i: each loaded once, q ascending keeps each output's taps in
             * the order kx = 0, 1, 2 */
#pragma GCC unroll 32
            for (size_t q = 0; q < (g - 1) * sw + 3; q++) {
                /* the edge taps read no pixel: the first and last q,
                 * each the tap of one output only */
                const int pad =
                    (lft && q == 0) || (rgt && q == (g - 1) * sw + 2);
                const V v = pad ? z : _mm256_loadu_ps(r + (c + q - pl) * L);
#pragma GCC unroll 8
                for (size_t i = 0; i < g; i++) {
                    const size_t kx = q - i * sw; /* wraps when q < i sw */
                    if (kx < 3) {
                        a[i] = _mm256_fmadd_ps(kx == 0   ? w0
                                               : kx == 1 ? w1
                                                         : w2,
                                               v, a[i]);
                    }
                }
            }
        }
        for (size_t i = 0; i < g; i++) {
            _mm256_storeu_ps(y + i * L, fuse_full(a[i], act));
        }
        w += 9 * L;
        y += ohw;
    }
}

/* g blocks (g <= GMAX, a constant after inlining) of one output pixel
 * of any filter, pixel-major: the g chains are independent, the pixel's
 * window is worked out once for all of them. Taps in row-major order, a
 * tap outside the input as w * +0, as plane() does. */
static inline __attribute__((always_inline)) void
pixk_blocks(const float *x, const float *w, const float *bias, float *y,
            size_t g, size_t ihw, size_t ohw, size_t kh, size_t kw,
            size_t cy, size_t cx, size_t pt, size_t pl, size_t ih, size_t iw,
            int act)
{
    const V z = _mm256_setzero_ps();
    const size_t kk = kh * kw;
    V a[GMAX];
    for (size_t i = 0; i < g; i++) {
        a[i] = bias ? _mm256_loadu_ps(bias + i * L) : z;
    }
    for (size_t ky = 0; ky < kh; ky++) {
        const size_t iy = cy + ky - pt; /* wraps above the input */
        const int row_in = cy + ky >= pt && iy < ih;
        for (size_t kx = 0; kx < kw; kx++) {
            const size_t ix = cx + kx - pl;
            const float *wp = w + (ky * kw + kx) * L;
            if (row_in && cx + kx >= pl && ix < iw) {
                const float *xp = x + (iy * iw + ix) * L;
                for (size_t i = 0; i < g; i++) {
                    a[i] = _mm256_fmadd_ps(_mm256_loadu_ps(wp + i * kk * L),
                                           _mm256_loadu_ps(xp + i * ihw),
                                           a[i]);
                }
            } else {
                for (size_t i = 0; i < g; i++) {
                    a[i] = _mm256_fmadd_ps(_mm256_loadu_ps(wp + i * kk * L),
                                           z, a[i]);
                }
            }
        }
    }
    for (size_t i = 0; i < g; i++) {
        _mm256_storeu_ps(y + i * ohw, fuse_full(a[i], act));
    }
}

/* Blocks [0, n) of one output pixel whose window's tap (0, 0) is at
 * padded coordinates (cy, cx), pixel-major: GMAX blocks at a time. kh and
 * kw are constants at the call sites (3 x 3, 5 x 5) or the shape's. */
static inline __attribute__((always_inline)) void
pix_one(const float *x, const float *w, const float *bias, float *y,
        size_t n, size_t ihw, size_t ohw, size_t kh, size_t kw, size_t cy,
        size_t cx, size_t pt, size_t pl, size_t ih, size_t iw, int act)
{
    size_t j = 0;
    for (; j + GMAX <= n; j += GMAX) {
        pixk_blocks(x + j * ihw, w + j * kh * kw * L,
                    bias ? bias + j * L : NULL, y + j * ohw, GMAX, ihw, ohw,
                    kh, kw, cy, cx, pt, pl, ih, iw, act);
    }
    if (j < n) {
        pixk_blocks(x + j * ihw, w + j * kh * kw * L,
                    bias ? bias + j * L : NULL, y + j * ohw, n - j, ihw, ohw,
                    kh, kw, cy, cx, pt, pl, ih, iw, act);
    }
}

/* pix_edges, pix_sizes and pix_group turn lft, rgt, g and sw into
 * constants, one case each, so that each instance of pix_blocks unrolls
 * whole: its accumulators stay in registers and the edge taps' tests
 * vanish. */
static inline __attribute__((always_inline)) void
pix_edges(const float *const rows[3], size_t c, size_t pl, const float *w,
          const float *bias, float *y, size_t n, size_t ihw, size_t ohw,
          int act, size_t g, size_t sw, int lft, int rgt)
{
    if (lft && rgt) {
        pix_blocks(rows, c, pl, w, bias, y, n, ihw, ohw, act, g, sw, 1, 1);
    } else if (lft) {
        pix_blocks(rows, c, pl, w, bias, y, n, ihw, ohw, act, g, sw, 1, 0);
    } else if (rgt) {
        pix_blocks(rows, c, pl, w, bias, y, n, ihw, ohw, act, g, sw, 0, 1);
    } else {
        pix_blocks(rows, c, pl, w, bias, y, n, ihw, ohw, act, g, sw, 0, 0);
    }
}

static inline __attribute__((always_inline)) void
pix_sizes(const float *const rows[3], size_t c, size_t pl, const float *w,
          const float *bias, float *y, size_t n, size_t ihw, size_t ohw,
          int act, size_t g, size_t sw, int lft, int rgt)
{
    switch (g) {
    case 8:
        pix_edges(rows, c, pl, w, bias, y, n, ihw, ohw, act, 8, sw, lft, rgt);
        break;
    case 7:
        pix_edges(rows, c, pl, w, bias, y, n, ihw, ohw, act, 7, sw, lft, rgt);
        break;
    case 6:
        pix_edges(rows, c, pl, w, bias, y, n, ihw, ohw, act, 6, sw, lft, rgt);
        break;
    case 5:
        pix_edges(rows, c, pl, w, bias, y, n, ihw, ohw, act, 5, sw, lft, rgt);
        break;
    case 4:
        pix_edges(rows, c, pl, w, bias, y, n, ihw, ohw, act, 4, sw, lft, rgt);
        break;
    case 3:
        pix_edges(rows, c, pl, w, bias, y, n, ihw, ohw, act, 3, sw, lft, rgt);
        break;
    case 2:
        pix_edges(rows, c, pl, w, bias, y, n, ihw, ohw, act, 2, sw, lft, rgt);
        break;
    default:
        pix_edges(rows, c, pl, w, bias, y, n, ihw, ohw, act, 1, sw, lft, rgt);
        break;
    }
}

static void pix_group(const float *const rows[3], size_t c, size_t pl,
                      const float *w, const float *bias, float *y, size_t n,
                      size_t ihw, size_t ohw, int act, size_t g, size_t sw,
                      int lft, int rgt)
{
    if (sw == 1) {
        pix_sizes(rows, c, pl, w, bias, y, n, ihw, ohw, act, g, 1, lft, rgt);
    } else {
        pix_sizes(rows, c, pl, w, bias, y, n, ihw, ohw, act, g, 2, lft, rgt);
    }
}

/* Blocks [j0, j1) of one sample, all full (a partial last block goes
 * through plane()); column stride 1 or 2. Each row is cut into groups of
 * up to GMAX outputs: interior columns, a left edge column first, a right
 * edge column last; any other column alone. */
static void pixels3(const struct kern_dwconv2d_shape *s, size_t oh,
                    size_t ow, size_t j0, size_t j1, const float *x,
                    const float *packed, const float *bias, int act,
                    float *y)
{
    const size_t ih = s->in_h, iw = s->in_w, sh = s->stride_h;
    const size_t sw = s->stride_w, pt = s->pad_top, pl = s->pad_left;
    const size_t ihw = ih * iw * L, ohw = oh * ow * L;
    const size_t n = j1 - j0;
    const float *w = packed + j0 * 9 * L;
    const float *bj = bias ? bias + j0 * L : NULL;
    x += j0 * ihw;
    y += j0 * ohw;
    for (size_t oy = 0; oy < oh; oy++) {
        const float *rows[3];
        for (size_t ky = 0; ky < 3; ky++) {
            const size_t iy = oy * sh + ky - pt; /* wraps above */
            rows[ky] = iy < ih ? x + iy * iw * L : NULL;
        }
        for (size_t ox = 0; ox < ow;) {
            /* grow the group while its columns fit (taps kx in [k0, k1)
             * inside the input): interior [0, 3), a left edge [1, 3)
             * first, a right edge [0, 2) last (it ends the group) */
            size_t g = 0;
            int lft = 0, rgt = 0;
            for (; g < GMAX && ox + g < ow && !rgt; g++) {
                const size_t c = (ox + g) * sw;
                const int k0 = c + 1 == pl ? 1 : c >= pl ? 0 : -1;
                const int k1 = c + 3 <= iw + pl ? 3 : c + 2 == iw + pl ? 2 : -1;
                if (k0 == 0 && k1 == 3) {
                    continue;
                }
                if (k0 == 1 && k1 == 3 && g == 0) {
                    lft = 1;
                    continue;
                }
                if (k0 == 0 && k1 == 2) {
                    rgt = 1;
                    continue;
                }
                if (k0 == 1 && k1 == 2 && g == 0) {
                    lft = rgt = 1;
                    continue;
                }
                break;
            }
            if (g == 0) {
                /* any other column (padding of two or more, or a plane
                 * so narrow that both edges cut one window): the same
                 * sums, the columns tested per tap */
                pix_one(x, w, bj, y + (oy * ow + ox) * L, n, ihw, ohw, 3, 3,
                        oy * sh, ox * sw, pt, pl, ih, iw, act);
                ox++;
                continue;
            }
            pix_group(rows, ox * sw, pl, w, bj, y + (oy * ow + ox) * L, n,
                      ihw, ohw, act, g, sw, lft, rgt);
            ox += g;
        }
    }
}

/* Blocks [j0, j1) of one sample, all full, pixel-major for filters other
 * than 3 x 3 (pixels3's case): on the 6 x 6 and 3 x 3 planes of
 * MobileNetV3's and EfficientNet's 5 x 5 layers nearly every column of
 * plane() is an edge column, one chain of 25 dependent multiply-adds.
 * A 5 x 5 filter's loops are unrolled at compile time. */
static void pixels_k(const struct kern_dwconv2d_shape *s, size_t oh,
                     size_t ow, size_t j0, size_t j1, const float *x,
                     const float *packed, const float *bias, int act,
                     float *y)
{
    const size_t ih = s->in_h, iw = s->in_w, sh = s->stride_h;
    const size_t sw = s->stride_w, pt = s->pad_top, pl = s->pad_left;
    const size_t kh = s->kh, kw = s->kw;
    const size_t ihw = ih * iw * L, ohw = oh * ow * L;
    const float *w = packed + j0 * kh * kw * L;
    const float *bj = bias ? bias + j0 * L : NULL;
    x += j0 * ihw;
    y += j0 * ohw;
    for (size_t oy = 0; oy < oh; oy++) {
        for (size_t ox = 0; ox < ow; ox++) {
            float *yo = y + (oy * ow + ox) * L;
            if (kh == 5 && kw == 5) {
                pix_one(x, w, bj, yo, j1 - j0, ihw, ohw, 5, 5, oy * sh,
                        ox * sw, pt, pl, ih, iw, act);
            } else {
                pix_one(x, w, bj, yo, j1 - j0, ihw, ohw, kh, kw, oy * sh,
                        ox * sw, pt, pl, ih, iw, act);
            }
        }
    }
}

void kern_dwconv2d_blk_avx2(const struct kern_dwconv2d_shape *s,
                            size_t out_h, size_t out_w, size_t b0, size_t b1,
                            const float *x, const float *packed,
                            const float *bias, int act, float *y)
{
    const size_t C = s->channels, nb = kern_nn_cblocks(C);
    const size_t ihw = s->in_h * s->in_w * L, ohw = out_h * out_w * L;
    const size_t kh = s->kh, kw = s->kw, sw = s->stride_w;
    /* full blocks [b0, bf) */
    const size_t bf = b1 == nb && C % L ? b1 - 1 : b1;
    /* pixel-major once there are blocks enough to share each group's
     * geometry, or outputs so few that a row is one or two groups */
    const int few = out_h * out_w <= PIX_MAX;
    const int k3 = kh == 3 && kw == 3;
    /* other filters pixel-major only on planes of few outputs (pixels_k) */
    const int pix = bf > b0 && (k3 ? (sw == 1 || sw == 2) &&
                                         (bf - b0 >= PIX_BLOCKS || few)
                                   : few);
    for (size_t bi = 0; bi < s->batch; bi++) {
        if (pix && k3) {
            pixels3(s, out_h, out_w, b0, bf, x + bi * nb * ihw, packed, bias,
                    act, y + bi * nb * ohw);
        } else if (pix) {
            pixels_k(s, out_h, out_w, b0, bf, x + bi * nb * ihw, packed,
                     bias, act, y + bi * nb * ohw);
        }
        for (size_t j = pix ? (bf > b0 ? bf : b0) : b0; j < b1; j++) {
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
            } else if (kh == 5 && kw == 5 && sw == 1) {
                /* MobileNetV3's and EfficientNet's 5 x 5 filters: the
                 * taps' loops unrolled at compile time */
                plane(s, out_h, out_w, xp, wt, b, act, keep, yp, 5, 5, 1, 4);
            } else if (kh == 5 && kw == 5 && sw == 2) {
                plane(s, out_h, out_w, xp, wt, b, act, keep, yp, 5, 5, 2, 4);
            } else {
                plane(s, out_h, out_w, xp, wt, b, act, keep, yp, kh, kw, sw,
                      4);
            }
        }
    }
}
