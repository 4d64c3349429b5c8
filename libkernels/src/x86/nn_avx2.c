/* AVX2 kernels of the nn family; see nn_avx512.c for the approach (same
 * operations, 8 lanes per vector, masks as integer vectors). */
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "nn.h"
#include "pool_geom.h"

/* All-ones in the first `left` (<= 8) lanes. */
static inline __m256i lane_mask_n(size_t left)
{
    const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const int n = left >= 8 ? 8 : (int)left;
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), lanes);
}

void kern_nn_bias_add_avx2(float *x, size_t rows, size_t channels,
                           const float *bias)
{
    if (channels == 1) {
        const __m256 b = _mm256_set1_ps(bias[0]);
        size_t i = 0;
        for (; i + 8 <= rows; i += 8) {
            _mm256_storeu_ps(x + i, _mm256_add_ps(_mm256_loadu_ps(x + i), b));
        }
        for (; i < rows; i++) {
            x[i] += bias[0];
        }
        return;
    }
    for (size_t r = 0; r < rows; r++) {
        float *row = x + r * channels;
        size_t c = 0;
        for (; c + 8 <= channels; c += 8) {
            _mm256_storeu_ps(row + c, _mm256_add_ps(_mm256_loadu_ps(row + c),
                                                    _mm256_loadu_ps(bias + c)));
        }
        for (; c < channels; c++) {
            row[c] += bias[c];
        }
    }
}

bool kern_nn_all_finite_avx2(const float *x, size_t n)
{
    const __m256i e = _mm256_set1_epi32(0x7f800000);
    __m256i bad = _mm256_setzero_si256();
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256i v = _mm256_loadu_si256((const __m256i *)(x + i));
        bad = _mm256_or_si256(bad,
                              _mm256_cmpeq_epi32(_mm256_and_si256(v, e), e));
    }
    bool ok = _mm256_testz_si256(bad, bad);
    for (; i < n; i++) {
        uint32_t bits;
        memcpy(&bits, &x[i], 4);
        ok &= (bits & 0x7f800000u) != 0x7f800000u;
    }
    return ok;
}

void kern_nn_scale_avx2(float *x, size_t n, float s)
{
    const __m256 sv = _mm256_set1_ps(s);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        _mm256_storeu_ps(x + i, _mm256_mul_ps(_mm256_loadu_ps(x + i), sv));
    }
    for (; i < n; i++) {
        x[i] *= s;
    }
}

void kern_nn_sgd_avx2(float *w, const float *g, float *velocity, size_t n,
                      float lr, float momentum, float weight_decay)
{
    const __m256 lrv = _mm256_set1_ps(lr);
    const __m256 mu = _mm256_set1_ps(momentum);
    const __m256 wd = _mm256_set1_ps(weight_decay);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 wv = _mm256_loadu_ps(w + i);
        __m256 gv = _mm256_loadu_ps(g + i);
        if (weight_decay != 0.0f) {
            gv = _mm256_add_ps(gv, _mm256_mul_ps(wd, wv));
        }
        if (momentum != 0.0f) {
            const __m256 v = _mm256_add_ps(
                _mm256_mul_ps(mu, _mm256_loadu_ps(velocity + i)), gv);
            _mm256_storeu_ps(velocity + i, v);
            gv = v;
        }
        _mm256_storeu_ps(w + i, _mm256_sub_ps(wv, _mm256_mul_ps(lrv, gv)));
    }
    if (i < n) {
        kern_nn_sgd_c(w + i, g + i, momentum != 0.0f ? velocity + i : NULL,
                      n - i, lr, momentum, weight_decay);
    }
}

/* ---- pooling ------------------------------------------------------------- */

/* Bit-identical to the C reference, as in nn_avx512.c: 8 output columns
 * per vector, masks as integer vectors, masked loads and gathers that never
 * touch the masked-off lanes' addresses. */
enum { POOL_MAXK = 32 };

/* Row pointer plus a possibly negative offset, computed on integers (the
 * lanes before the row are masked off and never read). */
static inline const float *pool_at(const float *row, ptrdiff_t off)
{
    return (const float *)((uintptr_t)row + (uintptr_t)off * sizeof *row);
}

/* One step of the max scan on the lanes of m (all-ones lanes): v replaces
 * best when it is larger or NaN while best is not. */
static inline __m256 max_step8(__m256 best, __m256 v, __m256 m)
{
    const __m256 ok = _mm256_and_ps(m, _mm256_cmp_ps(best, best, _CMP_ORD_Q));
    const __m256 take = _mm256_and_ps(ok, _mm256_cmp_ps(v, best, _CMP_NLE_UQ));
    return _mm256_blendv_ps(best, v, take);
}

/* Lanes of output columns [lo, hi) within the vector starting at ox0. */
static inline __m256i range_mask8(size_t ox0, size_t lo, size_t hi)
{
    const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    size_t a = lo > ox0 ? lo - ox0 : 0;
    size_t b = hi > ox0 ? hi - ox0 : 0;
    a = a < 8 ? a : 8;
    b = b < 8 ? b : 8;
    return _mm256_andnot_si256(
        _mm256_cmpgt_epi32(_mm256_set1_epi32((int)a), lanes),
        _mm256_cmpgt_epi32(_mm256_set1_epi32((int)b), lanes));
}

/* Even and odd elements of the 16 floats a:b, in order. */
static inline void deinterleave(__m256 a, __m256 b, __m256 *even, __m256 *odd)
{
    const __m256 e = _mm256_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0));
    const __m256 o = _mm256_shuffle_ps(a, b, _MM_SHUFFLE(3, 1, 3, 1));
    *even = _mm256_castpd_ps(
        _mm256_permute4x64_pd(_mm256_castps_pd(e), _MM_SHUFFLE(3, 1, 2, 0)));
    *odd = _mm256_castpd_ps(
        _mm256_permute4x64_pd(_mm256_castps_pd(o), _MM_SHUFFLE(3, 1, 2, 0)));
}

static void pool_k2s2(const struct kern_pool2d_shape *s, size_t oh,
                      size_t ow, const float *x, float *y, bool is_max)
{
    const __m256 cnt = _mm256_set1_ps(4.0f);
    const size_t ih = s->in_h, iw = s->in_w;
    for (size_t p = 0; p < s->batch * s->channels; p++) {
        const float *plane = x + p * ih * iw;
        for (size_t oy = 0; oy < oh; oy++) {
            const float *r0 = plane + 2 * oy * iw, *r1 = r0 + iw;
            float *yr = y + (p * oh + oy) * ow;
            for (size_t ox = 0; ox < ow; ox += 8) {
                const size_t n = ow - ox < 8 ? ow - ox : 8;
                const __m256i mo = lane_mask_n(n);
                const __m256i ma = lane_mask_n(2 * n);
                const __m256i mb = lane_mask_n(2 * n > 8 ? 2 * n - 8 : 0);
                __m256 e0, o0, e1, o1;
                deinterleave(
                    _mm256_maskload_ps(r0 + 2 * ox, ma),
                    _mm256_maskload_ps(pool_at(r0, (ptrdiff_t)(2 * ox + 8)),
                                       mb),
                    &e0, &o0);
                deinterleave(
                    _mm256_maskload_ps(r1 + 2 * ox, ma),
                    _mm256_maskload_ps(pool_at(r1, (ptrdiff_t)(2 * ox + 8)),
                                       mb),
                    &e1, &o1);
                __m256 r;
                if (is_max) {
                    /* Without NaNs, max(v, best) is the scan's step; rows
                     * with one take the exact step. */
                    const __m256 un = _mm256_or_ps(
                        _mm256_cmp_ps(e0, o0, _CMP_UNORD_Q),
                        _mm256_cmp_ps(e1, o1, _CMP_UNORD_Q));
                    if (_mm256_movemask_ps(un)) {
                        const __m256 m = _mm256_castsi256_ps(mo);
                        r = max_step8(e0, o0, m);
                        r = max_step8(r, e1, m);
                        r = max_step8(r, o1, m);
                    } else {
                        r = _mm256_max_ps(o0, e0);
                        r = _mm256_max_ps(e1, r);
                        r = _mm256_max_ps(o1, r);
                    }
                } else {
                    r = _mm256_add_ps(_mm256_setzero_ps(), e0);
                    r = _mm256_add_ps(r, o0);
                    r = _mm256_add_ps(r, e1);
                    r = _mm256_add_ps(r, o1);
                    r = _mm256_div_ps(r, cnt);
                }
                _mm256_maskstore_ps(yr + ox, mo, r);
            }
        }
    }
}

/* Any shape, as pool_any of nn_avx512.c: up to PV vectors of 8 output
 * columns per pass, max(v, best) with the first NaN of each lane kept
 * aside. */
enum { PV = 4 };

static void pool_any(const struct kern_pool2d_shape *s, size_t oh, size_t ow,
                     const float *x, float *y, bool is_max)
{
    const size_t ih = s->in_h, iw = s->in_w, k = s->kw, st = s->stride_w;
    const size_t kh = s->kh, sh = s->stride_h, pt = s->pad_top;
    const size_t pad = s->pad_left;
    size_t lo[POOL_MAXK], hi[POOL_MAXK];
    for (size_t kx = 0; kx < k; kx++) {
        /* Output columns whose input column ox * st + kx - pad is real. */
        lo[kx] = kx < pad ? (pad - kx + st - 1) / st : 0;
        hi[kx] = kx > iw - 1 + pad ? 0 : (iw - 1 + pad - kx) / st + 1;
        hi[kx] = hi[kx] < ow ? hi[kx] : ow;
        lo[kx] = lo[kx] < hi[kx] ? lo[kx] : hi[kx];
    }
    const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    /* Average pooling's divisor: kh * kw, or (count_include_pad 0) the
     * real rows of the window times each lane's real columns (xcnt, the
     * kernel columns whose mask holds the lane), exact small integers as
     * in the reference. */
    const bool whole = s->count_include_pad != 0;
    const __m256 cnt_all = _mm256_set1_ps((float)(kh * k));
    __m256 xcnt[PV];
    const __m256 init = is_max ? _mm256_set1_ps(-INFINITY)
                               : _mm256_setzero_ps();
    __m256i masks[POOL_MAXK][PV];
    bool any[POOL_MAXK][PV];
    __m256i idx[PV];
    for (size_t ox0 = 0; ox0 < ow; ox0 += 8 * PV) {
        const size_t nv = (ow - ox0 + 7) / 8 < PV ? (ow - ox0 + 7) / 8 : PV;
        for (size_t v = 0; v < nv; v++) {
            for (size_t kx = 0; kx < k; kx++) {
                masks[kx][v] = range_mask8(ox0 + 8 * v, lo[kx], hi[kx]);
                any[kx][v] = !_mm256_testz_si256(masks[kx][v], masks[kx][v]);
            }
            xcnt[v] = _mm256_setzero_ps();
            for (size_t kx = 0; kx < k; kx++) {
                xcnt[v] = _mm256_add_ps(
                    xcnt[v], _mm256_and_ps(_mm256_castsi256_ps(masks[kx][v]),
                                           _mm256_set1_ps(1.0f)));
            }
            idx[v] = _mm256_mullo_epi32(
                _mm256_add_epi32(lanes, _mm256_set1_epi32((int)(ox0 + 8 * v))),
                _mm256_set1_epi32((int)st));
        }
        for (size_t p = 0; p < s->batch * s->channels; p++) {
            const float *plane = x + p * ih * iw;
            for (size_t oy = 0; oy < oh; oy++) {
                const size_t start = oy * sh;
                const size_t y0 = start < pt ? 0 : start - pt;
                const size_t y1 = start + kh - pt > ih ? ih : start + kh - pt;
                float *yr = y + (p * oh + oy) * ow;
                __m256 acc[PV], nanv[PV], seen[PV];
                for (size_t v = 0; v < PV; v++) {
                    acc[v] = init;
                    nanv[v] = init;
                    seen[v] = _mm256_setzero_ps();
                }
                for (size_t iy = y0; iy < y1; iy++) {
                    const float *row = plane + iy * iw;
                    for (size_t kx = 0; kx < k; kx++) {
                        const ptrdiff_t off =
                            (ptrdiff_t)(ox0 + kx) - (ptrdiff_t)pad;
                        const __m256i kofs =
                            _mm256_set1_epi32((int)kx - (int)pad);
                        for (size_t v = 0; v < nv; v++) {
                            if (!any[kx][v]) {
                                continue;
                            }
                            const __m256i mi = masks[kx][v];
                            const __m256 m = _mm256_castsi256_ps(mi);
                            __m256 a;
                            if (st == 1) {
                                a = _mm256_maskload_ps(
                                    pool_at(row, off + 8 * (ptrdiff_t)v), mi);
                            } else {
                                a = _mm256_mask_i32gather_ps(
                                    _mm256_setzero_ps(), row,
                                    _mm256_add_epi32(idx[v], kofs), m, 4);
                            }
                            if (is_max) {
                                acc[v] = _mm256_blendv_ps(
                                    acc[v], _mm256_max_ps(a, acc[v]), m);
                                const __m256 n = _mm256_andnot_ps(
                                    seen[v],
                                    _mm256_and_ps(
                                        m, _mm256_cmp_ps(a, a, _CMP_UNORD_Q)));
                                nanv[v] = _mm256_blendv_ps(nanv[v], a, n);
                                seen[v] = _mm256_or_ps(seen[v], n);
                            } else {
                                acc[v] = _mm256_blendv_ps(
                                    acc[v], _mm256_add_ps(acc[v], a), m);
                            }
                        }
                    }
                }
                const __m256 rows = _mm256_set1_ps((float)(y1 - y0));
                for (size_t v = 0; v < nv; v++) {
                    const __m256 cnt =
                        whole ? cnt_all : _mm256_mul_ps(xcnt[v], rows);
                    const __m256 r =
                        is_max ? _mm256_blendv_ps(acc[v], nanv[v], seen[v])
                               : _mm256_div_ps(acc[v], cnt);
                    _mm256_maskstore_ps(yr + ox0 + 8 * v,
                                        lane_mask_n(ow - ox0 - 8 * v), r);
                }
            }
        }
    }
}

/* ---- pooling along the output row, strides 1 and 2 (MLAS's and XNNPACK's
 * way: whole-vector loads, no gathers) ------------------------------------ */

/* True when the plane's n floats hold a NaN: one unordered compare covers
 * two vectors. Max pooling on a plane without NaN is a chain of
 * max(v, best), exactly the reference's step there; a plane with one
 * takes the reference itself, whose first-NaN rule costs a blend per tap
 * in vector form and which real activations never need. */
static bool plane_has_nan(const float *x, size_t n)
{
    __m256 un = _mm256_setzero_ps();
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        un = _mm256_or_ps(un, _mm256_cmp_ps(_mm256_loadu_ps(x + i),
                                            _mm256_loadu_ps(x + i + 8),
                                            _CMP_UNORD_Q));
    }
    bool nan = _mm256_movemask_ps(un) != 0;
    for (; i < n; i++) {
        nan |= x[i] != x[i];
    }
    return nan;
}

/* The window tap kx of 8 output columns starting at ox of one input row:
 * stride 1 is one unaligned load; stride 2 takes the even elements of the
 * 15 floats from the first input column, from two loads that end at the
 * last one read (never past the row) and one in-lane shuffle, which leaves
 * the columns in the order 0 1 4 5 2 3 6 7. Every tap has that order, so
 * the sums and maxima are per column all the same and one permute puts
 * the finished vector right (tap_fix). */
static inline __m256 tap8(const float *first, size_t sw)
{
    if (sw == 1) {
        return _mm256_loadu_ps(first);
    }
    return _mm256_shuffle_ps(_mm256_loadu_ps(first), _mm256_loadu_ps(first + 7),
                             _MM_SHUFFLE(3, 1, 2, 0));
}

static inline __m256 tap_fix(__m256 v, size_t sw)
{
    if (sw == 1) {
        return v;
    }
    return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(v),
                                                  _MM_SHUFFLE(3, 1, 2, 0)));
}

/* One output column whose window reaches into the padding: the real cells
 * in row-major order, as the reference. */
static float pool_edge(const struct kern_pool2d_shape *s, const float *plane,
                       size_t y0, size_t y1, size_t ox, bool is_max)
{
    size_t x0, x1;
    kern_pool_window(ox, s->stride_w, s->pad_left, s->kw, s->in_w, &x0, &x1);
    float acc = is_max ? -INFINITY : 0.0f;
    for (size_t iy = y0; iy < y1; iy++) {
        const float *row = plane + iy * s->in_w;
        for (size_t ix = x0; ix < x1; ix++) {
            if (!is_max) {
                acc += row[ix];
            } else if (row[ix] > acc) {
                acc = row[ix]; /* no NaN here (plane_has_nan) */
            }
        }
    }
    return is_max ? acc : acc / kern_nn_pool_divisor(s, y1 - y0, x1 - x0);
}

/* Strides 1 and 2 along the row, any window, padding and ceil_mode's extra
 * padding: the output columns whose window lies inside the row (all but a
 * few at the edges) take 8 at a time, each tap a vector (tap8) combined in
 * the reference's row-major order, the last 8 overlapping the previous
 * ones instead of a masked tail; the edge columns take pool_edge. */
static void pool_rows(const struct kern_pool2d_shape *s, size_t oh, size_t ow,
                      const float *x, float *y, bool is_max)
{
    const size_t ih = s->in_h, iw = s->in_w, kh = s->kh, kw = s->kw;
    const size_t sw = s->stride_w, pl = s->pad_left;
    /* interior columns [lo, hi): ox * sw >= pl, ox * sw - pl + kw <= iw */
    size_t lo = (pl + sw - 1) / sw;
    size_t hi = iw + pl >= kw ? (iw + pl - kw) / sw + 1 : 0;
    hi = hi < ow ? hi : ow;
    if (hi < lo + 8) {
        lo = hi = 0; /* too few for a vector: all columns are edges */
    }
    const __m256 init = is_max ? _mm256_set1_ps(-INFINITY)
                               : _mm256_setzero_ps();
    struct kern_pool2d_shape one = *s;
    one.batch = one.channels = 1;
    for (size_t p = 0; p < s->batch * s->channels; p++) {
        const float *plane = x + p * ih * iw;
        float *yp = y + p * oh * ow;
        if (is_max && plane_has_nan(plane, ih * iw)) {
            kern_nn_maxpool2d_c(&one, oh, ow, plane, yp);
            continue;
        }
        for (size_t oy = 0; oy < oh; oy++) {
            size_t y0, y1;
            kern_pool_window(oy, s->stride_h, s->pad_top, kh, ih, &y0, &y1);
            float *yr = yp + oy * ow;
            const __m256 d =
                _mm256_set1_ps(kern_nn_pool_divisor(s, y1 - y0, kw));
            for (size_t ox = 0; ox < lo; ox++) {
                yr[ox] = pool_edge(s, plane, y0, y1, ox, is_max);
            }
            for (size_t ox = hi; ox < ow; ox++) {
                yr[ox] = pool_edge(s, plane, y0, y1, ox, is_max);
            }
            for (size_t o = lo; o < hi; o += 8) {
                const size_t ox = o + 8 <= hi ? o : hi - 8;
                __m256 acc = init;
                for (size_t iy = y0; iy < y1; iy++) {
                    const float *first = plane + iy * iw + ox * sw - pl;
                    if (is_max) {
                        /* row by row, as pool_blk */
                        __m256 rm = tap8(first, sw);
                        for (size_t kx = 1; kx < kw; kx++) {
                            rm = _mm256_max_ps(tap8(first + kx, sw), rm);
                        }
                        acc = _mm256_max_ps(rm, acc);
                        continue;
                    }
                    for (size_t kx = 0; kx < kw; kx++) {
                        acc = _mm256_add_ps(acc, tap8(first + kx, sw));
                    }
                }
                acc = tap_fix(acc, sw);
                _mm256_storeu_ps(yr + ox, is_max ? acc : _mm256_div_ps(acc, d));
            }
        }
    }
}

/* ---- max pooling along the output row, separably ------------------------ */

/* Row maxima kept for the separable NCHW max pooling: up to SEPR_ROWS rows
 * of SEPR_CELLS / SEPR_ROWS output columns. */
enum { SEPR_CELLS = 4096, SEPR_ROWS = 8 };

/* The maxima of one input row over each output column's window, into h,
 * the columns in order and max(v, best) (first maximum wins): the interior
 * columns 8 at a time from whole-vector taps (tap8, the last 8 overlapping
 * the previous ones), the edge columns' real cells one by one. Every cell
 * a window reads is or-ed into *un as unordered or not (two taps per
 * comparison); so is, for stride 2, a cell between windows, which only
 * costs the caller a needless exact redo. */
static void row_max_nchw(const struct kern_pool2d_shape *s, const float *row,
                         size_t ow, size_t lo, size_t hi, float *h, __m256 *un)
{
    const size_t iw = s->in_w, kw = s->kw, sw = s->stride_w;
    const size_t pl = s->pad_left;
    bool nan = false;
    for (int edge = 0; edge < 2; edge++) {
        for (size_t ox = edge ? hi : 0; ox < (edge ? ow : lo); ox++) {
            size_t x0, x1;
            kern_pool_window(ox, sw, pl, kw, iw, &x0, &x1);
            float m = row[x0];
            nan |= m != m;
            for (size_t ix = x0 + 1; ix < x1; ix++) {
                nan |= row[ix] != row[ix];
                m = row[ix] > m ? row[ix] : m;
            }
            h[ox] = m;
        }
    }
    __m256 u = *un;
    if (nan) {
        u = _mm256_castsi256_ps(_mm256_set1_epi32(-1));
    }
    if (kw == 3 && sw == 2) {
        /* 3 wide at stride 2, 17 cells for 8 columns: the maxima of
         * neighbours P[i] (cells i, i+1) from four loads, then the even
         * P and the cells 2, 4, .. 16 each from one in-lane shuffle, in
         * tap8's order. */
        for (size_t o = lo; o < hi; o += 8) {
            const size_t ox = o + 8 <= hi ? o : hi - 8;
            const float *f = row + 2 * ox - pl;
            const __m256 l0 = _mm256_loadu_ps(f), l1 = _mm256_loadu_ps(f + 1);
            const __m256 l8 = _mm256_loadu_ps(f + 8);
            const __m256 l9 = _mm256_loadu_ps(f + 9);
            u = _mm256_or_ps(u, _mm256_cmp_ps(l0, l8, _CMP_UNORD_Q));
            u = _mm256_or_ps(u, _mm256_cmp_ps(l1, l9, _CMP_UNORD_Q));
            const __m256 pe =
                _mm256_shuffle_ps(_mm256_max_ps(l1, l0), _mm256_max_ps(l9, l8),
                                  _MM_SHUFFLE(2, 0, 2, 0));
            const __m256 c2 = _mm256_shuffle_ps(l1, l9, _MM_SHUFFLE(3, 1, 3, 1));
            _mm256_storeu_ps(h + ox, tap_fix(_mm256_max_ps(c2, pe), 2));
        }
        *un = u;
        return;
    }
    for (size_t o = lo; o < hi; o += 8) {
        const size_t ox = o + 8 <= hi ? o : hi - 8;
        const float *first = row + ox * sw - pl;
        __m256 m = tap8(first, sw), prev = m;
        for (size_t kx = 1; kx < kw; kx++) {
            const __m256 t = tap8(first + kx, sw);
            if (kx % 2) {
                u = _mm256_or_ps(u, _mm256_cmp_ps(prev, t, _CMP_UNORD_Q));
            }
            prev = t;
            m = _mm256_max_ps(t, m);
        }
        if (kw % 2) {
            u = _mm256_or_ps(u, _mm256_cmp_ps(prev, prev, _CMP_UNORD_Q));
        }
        _mm256_storeu_ps(h + ox, tap_fix(m, sw));
    }
    *un = u;
}

/* Max pooling of one NCHW plane, separably, as max_blk_sep on blocks:
 * each input row's maxima over the windows' columns once (row_max_nchw,
 * kept in a ring of kh rows, so an input row shared by two output rows is
 * swept once), then the window's rows in order, whole vectors along the
 * output row. The "first maximum wins" step is associative, so this is
 * the reference's result wherever no NaN is read; returns whether one
 * was (the caller redoes the plane with the reference). */
static bool max_rows_sep(const struct kern_pool2d_shape *s, size_t oh,
                         size_t ow, size_t lo, size_t hi, const float *xp,
                         float *yp, float *hb)
{
    const size_t iw = s->in_w, kh = s->kh;
    __m256 un = _mm256_setzero_ps();
    size_t next = 0; /* the next input row whose maxima are not in hb */
    for (size_t oy = 0; oy < oh; oy++) {
        size_t y0, y1;
        kern_pool_window(oy, s->stride_h, s->pad_top, kh, s->in_h, &y0, &y1);
        next = next > y0 ? next : y0;
        for (; next < y1; next++) {
            row_max_nchw(s, xp + next * iw, ow, lo, hi, hb + (next % kh) * ow,
                         &un);
        }
        const float *h[SEPR_ROWS];
        for (size_t iy = y0; iy < y1; iy++) {
            h[iy - y0] = hb + (iy % kh) * ow;
        }
        float *o = yp + oy * ow;
        const size_t rows = y1 - y0;
        if (rows == 3) {
            for (size_t c = 0; c < ow; c += 8) {
                const size_t ox = c + 8 <= ow ? c : ow - 8;
                const __m256 m = _mm256_max_ps(_mm256_loadu_ps(h[1] + ox),
                                               _mm256_loadu_ps(h[0] + ox));
                _mm256_storeu_ps(o + ox,
                                 _mm256_max_ps(_mm256_loadu_ps(h[2] + ox), m));
            }
            continue;
        }
        for (size_t c = 0; c < ow; c += 8) {
            const size_t ox = c + 8 <= ow ? c : ow - 8;
            __m256 acc = _mm256_loadu_ps(h[0] + ox);
            for (size_t r = 1; r < rows; r++) {
                acc = _mm256_max_ps(_mm256_loadu_ps(h[r] + ox), acc);
            }
            _mm256_storeu_ps(o + ox, acc);
        }
    }
    return _mm256_movemask_ps(un) != 0;
}

/* NCHW max pooling at strides 1 and 2 along the row, separably; false when
 * the window's rows or the row maxima do not fit (pool_rows takes it). */
static bool max_rows(const struct kern_pool2d_shape *s, size_t oh, size_t ow,
                     const float *x, float *y)
{
    if (s->kh > SEPR_ROWS || s->kh * ow > SEPR_CELLS) {
        return false;
    }
    const size_t ih = s->in_h, iw = s->in_w, kw = s->kw, sw = s->stride_w;
    const size_t pl = s->pad_left;
    /* interior columns [lo, hi): ox * sw >= pl, ox * sw - pl + kw <= iw */
    size_t lo = (pl + sw - 1) / sw;
    size_t hi = iw + pl >= kw ? (iw + pl - kw) / sw + 1 : 0;
    hi = hi < ow ? hi : ow;
    if (hi < lo + 8) {
        lo = hi = 0; /* too few for a vector: all columns are edges */
    }
    float hb[SEPR_CELLS];
    struct kern_pool2d_shape one = *s;
    one.batch = one.channels = 1;
    for (size_t p = 0; p < s->batch * s->channels; p++) {
        const float *xp = x + p * ih * iw;
        float *yp = y + p * oh * ow;
        if (max_rows_sep(s, oh, ow, lo, hi, xp, yp, hb)) {
            kern_nn_maxpool2d_c(&one, oh, ow, xp, yp);
        }
    }
    return true;
}

bool kern_nn_pool_rows_avx2(const struct kern_pool2d_shape *s, size_t out_h,
                            size_t out_w, const float *x, float *y,
                            bool is_max)
{
    if (s->stride_w > 2 || out_w < 8) {
        return false;
    }
    if (is_max && max_rows(s, out_h, out_w, x, y)) {
        return true;
    }
    pool_rows(s, out_h, out_w, x, y, is_max);
    return true;
}

/* ---- pooling on NCHW8c, any output size --------------------------------- */

/* One block of 8 channels per vector: each tap of a window is one load of
 * a cell, in the reference's row-major order. Max pooling takes
 * max(v, best), the reference's step without NaN, and notes unordered
 * taps; a cell whose window held a NaN is redone with the exact step
 * (max_step8). (A pass over the plane to find NaNs first, as pool_rows
 * does, costs more here: a block plane is 8 times an NCHW plane and does
 * not stay in the first cache levels.) */
static void pool_blk(const struct kern_pool2d_shape *s, size_t oh, size_t ow,
                     const float *x, float *y, bool is_max)
{
    const size_t ih = s->in_h, iw = s->in_w, nb = kern_nn_cblocks(s->channels);
    const __m256 all = _mm256_castsi256_ps(_mm256_set1_epi32(-1));
    for (size_t pb = 0; pb < s->batch * nb; pb++) {
        const float *xp = x + pb * ih * iw * KERN_CBLOCK;
        float *yp = y + pb * oh * ow * KERN_CBLOCK;
        for (size_t oy = 0; oy < oh; oy++) {
            size_t y0, y1;
            kern_pool_window(oy, s->stride_h, s->pad_top, s->kh, ih, &y0, &y1);
            for (size_t ox = 0; ox < ow; ox++) {
                size_t x0, x1;
                kern_pool_window(ox, s->stride_w, s->pad_left, s->kw, iw, &x0,
                                 &x1);
                const size_t n = x1 - x0;
                __m256 acc;
                if (is_max) {
                    __m256 un = _mm256_setzero_ps();
                    acc = _mm256_set1_ps(-INFINITY);
                    for (size_t iy = y0; iy < y1; iy++) {
                        const float *r = xp + (iy * iw + x0) * KERN_CBLOCK;
                        /* The row's first maximum, then the rows': the
                         * "first maximum wins" step is associative, and
                         * independent rows shorten the chain of maxima. */
                        __m256 rm = _mm256_set1_ps(-INFINITY);
                        for (size_t i = 0; i < n; i++) {
                            const __m256 v = _mm256_loadu_ps(r + 8 * i);
                            un = _mm256_or_ps(un,
                                              _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
                            rm = _mm256_max_ps(v, rm);
                        }
                        acc = _mm256_max_ps(rm, acc);
                    }
                    if (_mm256_movemask_ps(un)) {
                        acc = _mm256_set1_ps(-INFINITY);
                        for (size_t iy = y0; iy < y1; iy++) {
                            const float *r = xp + (iy * iw + x0) * KERN_CBLOCK;
                            for (size_t i = 0; i < n; i++) {
                                acc = max_step8(acc, _mm256_loadu_ps(r + 8 * i),
                                                all);
                            }
                        }
                    }
                } else {
                    acc = _mm256_setzero_ps();
                    for (size_t iy = y0; iy < y1; iy++) {
                        const float *r = xp + (iy * iw + x0) * KERN_CBLOCK;
                        for (size_t i = 0; i < n; i++) {
                            acc = _mm256_add_ps(acc, _mm256_loadu_ps(r + 8 * i));
                        }
                    }
                    acc = _mm256_div_ps(
                        acc, _mm256_set1_ps(kern_nn_pool_divisor(
                                 s, y1 - y0, x1 - x0)));
                }
                _mm256_storeu_ps(yp + (oy * ow + ox) * KERN_CBLOCK, acc);
            }
        }
    }
}

/* Row maxima kept for the separable max pooling: kh rows of ow cells. */
enum { SEP_CELLS = 512, SEP_ROWS = 8 };

/* The maxima of one input row over each output column's window, into h:
 * the cells in order, max(v, best) (first maximum wins). A 3-wide window
 * at stride 2 shares its last cell with the next window's first, so the
 * interior loads each cell once. Unordered cells are or-ed into *un, two
 * per comparison. */
static void row_max_blk(const struct kern_pool2d_shape *s, const float *row,
                        size_t ow, __m256 *h, __m256 *un)
{
    const size_t iw = s->in_w, kw = s->kw, sw = s->stride_w;
    const size_t pl = s->pad_left;
    size_t lo = (pl + sw - 1) / sw;
    size_t hi = iw + pl >= kw ? (iw + pl - kw) / sw + 1 : 0;
    hi = hi < ow ? hi : ow;
    lo = lo < hi ? lo : hi;
    __m256 u = *un;
    size_t ox = 0;
    for (int edge = 0; edge < 2; edge++) {
        const size_t end = edge ? ow : lo;
        for (; ox < end; ox++) {
            size_t x0, x1;
            kern_pool_window(ox, sw, pl, kw, iw, &x0, &x1);
            __m256 m = _mm256_loadu_ps(row + x0 * KERN_CBLOCK);
            u = _mm256_or_ps(u, _mm256_cmp_ps(m, m, _CMP_UNORD_Q));
            for (size_t ix = x0 + 1; ix < x1; ix++) {
                const __m256 v = _mm256_loadu_ps(row + ix * KERN_CBLOCK);
                u = _mm256_or_ps(u, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
                m = _mm256_max_ps(v, m);
            }
            h[ox] = m;
        }
        if (edge) {
            break;
        }
        if (kw == 3 && sw == 2 && lo < hi) {
            const float *c = row + (lo * 2 - pl) * KERN_CBLOCK;
            __m256 c0 = _mm256_loadu_ps(c);
            u = _mm256_or_ps(u, _mm256_cmp_ps(c0, c0, _CMP_UNORD_Q));
            for (; ox < hi; ox++, c += 2 * KERN_CBLOCK) {
                const __m256 c1 = _mm256_loadu_ps(c + KERN_CBLOCK);
                const __m256 c2 = _mm256_loadu_ps(c + 2 * KERN_CBLOCK);
                u = _mm256_or_ps(u, _mm256_cmp_ps(c1, c2, _CMP_UNORD_Q));
                h[ox] = _mm256_max_ps(c2, _mm256_max_ps(c1, c0));
                c0 = c2;
            }
        }
    }
    *un = u;
}

/* Max pooling of one block plane, separably: each input row's maxima over
 * the windows' columns once (row_max_blk, kept in a ring of kh rows, so an
 * input row shared by two output rows is swept once), then the window's
 * rows in order. The "first maximum wins" step is associative, so this is
 * the reference's result wherever no NaN is read; returns whether one
 * was (the caller redoes the plane cell by cell). */
static bool max_blk_sep(const struct kern_pool2d_shape *s, size_t oh,
                        size_t ow, const float *xp, float *yp, __m256 *hb)
{
    const size_t iw = s->in_w, kh = s->kh;
    __m256 un = _mm256_setzero_ps();
    size_t next = 0; /* the next input row whose maxima are not in hb */
    for (size_t oy = 0; oy < oh; oy++) {
        size_t y0, y1;
        kern_pool_window(oy, s->stride_h, s->pad_top, kh, s->in_h, &y0, &y1);
        next = next > y0 ? next : y0;
        for (; next < y1; next++) {
            row_max_blk(s, xp + next * iw * KERN_CBLOCK, ow,
                        hb + (next % kh) * ow, &un);
        }
        /* the window's rows of maxima, found once per output row (a
         * remainder per cell cost more than the maxima) */
        const __m256 *h[SEP_ROWS];
        for (size_t iy = y0; iy < y1; iy++) {
            h[iy - y0] = hb + (iy % kh) * ow;
        }
        float *o = yp + oy * ow * KERN_CBLOCK;
        if (y1 - y0 == 3) {
            for (size_t ox = 0; ox < ow; ox++) {
                const __m256 m = _mm256_max_ps(h[1][ox], h[0][ox]);
                _mm256_storeu_ps(o + ox * KERN_CBLOCK,
                                 _mm256_max_ps(h[2][ox], m));
            }
            continue;
        }
        for (size_t ox = 0; ox < ow; ox++) {
            __m256 acc = h[0][ox];
            for (size_t r = 1; r < y1 - y0; r++) {
                acc = _mm256_max_ps(h[r][ox], acc);
            }
            _mm256_storeu_ps(o + ox * KERN_CBLOCK, acc);
        }
    }
    return _mm256_movemask_ps(un) != 0;
}

/* 3 x 3 max pooling at stride 2, unpadded, every window whole, on one
 * block plane (SqueezeNet's pools, AlexNet's): max_blk_sep with its two
 * passes fused. Each output row sweeps its window's last two input rows
 * together, the first row's maxima coming from the ring h (the previous
 * output row's last), so a row of maxima is stored once and read once and
 * each interior cell is loaded once. Orders and NaN notes as max_blk_sep;
 * returns whether a NaN was read. */
static bool max_blk_k3s2(const struct kern_pool2d_shape *s, size_t oh,
                         size_t ow, const float *xp, float *yp, __m256 *h)
{
    const size_t rs = s->in_w * KERN_CBLOCK;
    __m256 un = _mm256_setzero_ps();
    row_max_blk(s, xp, ow, h, &un); /* the first row's maxima */
    for (size_t oy = 0; oy < oh; oy++) {
        const float *b = xp + (2 * oy + 1) * rs, *c = b + rs;
        float *o = yp + oy * ow * KERN_CBLOCK;
        __m256 b0 = _mm256_loadu_ps(b);
        __m256 c0 = _mm256_loadu_ps(c);
        un = _mm256_or_ps(un, _mm256_cmp_ps(b0, c0, _CMP_UNORD_Q));
        for (size_t ox = 0; ox < ow; ox++) {
            const size_t i = (2 * ox + 1) * KERN_CBLOCK;
            const __m256 b1 = _mm256_loadu_ps(b + i);
            const __m256 b2 = _mm256_loadu_ps(b + i + KERN_CBLOCK);
            const __m256 c1 = _mm256_loadu_ps(c + i);
            const __m256 c2 = _mm256_loadu_ps(c + i + KERN_CBLOCK);
            un = _mm256_or_ps(un, _mm256_or_ps(_mm256_cmp_ps(b1, b2, _CMP_UNORD_Q),
                                               _mm256_cmp_ps(c1, c2, _CMP_UNORD_Q)));
            const __m256 hb = _mm256_max_ps(b2, _mm256_max_ps(b1, b0));
            const __m256 hc = _mm256_max_ps(c2, _mm256_max_ps(c1, c0));
            _mm256_storeu_ps(o + ox * KERN_CBLOCK,
                             _mm256_max_ps(hc, _mm256_max_ps(hb, h[ox])));
            h[ox] = hc;
            b0 = b2;
            c0 = c2;
        }
    }
    return _mm256_movemask_ps(un) != 0;
}

void kern_nn_maxpool2d_blk_avx2(const struct kern_pool2d_shape *s,
                                size_t out_h, size_t out_w, const float *x,
                                float *y)
{
    if (s->kh > SEP_ROWS || s->kh * out_w > SEP_CELLS) {
        pool_blk(s, out_h, out_w, x, y, true);
        return;
    }
    __m256 hb[SEP_CELLS];
    const size_t ih = s->in_h, iw = s->in_w, nb = kern_nn_cblocks(s->channels);
    struct kern_pool2d_shape one = *s;
    one.batch = 1;
    one.channels = KERN_CBLOCK;
    const bool k3s2 = s->kh == 3 && s->kw == 3 && s->stride_h == 2 &&
                      s->stride_w == 2 && !s->pad_top && !s->pad_left &&
                      s->in_h >= 2 * out_h + 1 && s->in_w >= 2 * out_w + 1;
    for (size_t pb = 0; pb < s->batch * nb; pb++) {
        const float *xp = x + pb * ih * iw * KERN_CBLOCK;
        float *yp = y + pb * out_h * out_w * KERN_CBLOCK;
        const bool nan = k3s2 ? max_blk_k3s2(s, out_h, out_w, xp, yp, hb)
                              : max_blk_sep(s, out_h, out_w, xp, yp, hb);
        if (nan) {
            pool_blk(&one, out_h, out_w, xp, yp, true);
        }
    }
}

void kern_nn_avgpool2d_blk_avx2(const struct kern_pool2d_shape *s,
                                size_t out_h, size_t out_w, const float *x,
                                float *y)
{
    pool_blk(s, out_h, out_w, x, y, false);
}

/* The vector path computes output columns one per lane; an output row
 * narrower than a vector (a pooling that ends a network: DS-CNN's 24 x 5
 * window gives one column) would leave most lanes idle and chain every
 * window cell through one accumulator, so the reference, which adds runs
 * of the input rows, is faster there and gives the same sums. */
static bool pool_fits(const struct kern_pool2d_shape *s, size_t ow)
{
    return ow >= 8 && s->kw <= POOL_MAXK && s->stride_w < 65536 &&
           ow < (size_t)INT32_MAX / 2 / s->stride_w &&
           s->in_w < (size_t)INT32_MAX / 2;
}

void kern_nn_maxpool2d_avx2(const struct kern_pool2d_shape *s, size_t out_h,
                            size_t out_w, const float *x, float *y)
{
    if (kern_nn_pool_is_k2s2(s)) {
        pool_k2s2(s, out_h, out_w, x, y, true);
    } else if (kern_nn_pool_rows_avx2(s, out_h, out_w, x, y, true)) {
        return;
    } else if (pool_fits(s, out_w)) {
        pool_any(s, out_h, out_w, x, y, true);
    } else {
        kern_nn_maxpool2d_c(s, out_h, out_w, x, y);
    }
}

void kern_nn_avgpool2d_avx2(const struct kern_pool2d_shape *s, size_t out_h,
                            size_t out_w, const float *x, float *y)
{
    if (kern_nn_pool_is_k2s2(s)) {
        pool_k2s2(s, out_h, out_w, x, y, false);
    } else if (kern_nn_pool_rows_avx2(s, out_h, out_w, x, y, false)) {
        return;
    } else if (pool_fits(s, out_w)) {
        pool_any(s, out_h, out_w, x, y, false);
    } else {
        kern_nn_avgpool2d_c(s, out_h, out_w, x, y);
    }
}

/* ---- softmax ------------------------------------------------------------- */

/* exp(x) as exp16 of nn_avx512.c (same reduction, polynomial and stated
 * error), with 2^n built in the exponent field: x is clamped to
 * [-88, 88] so n lies in [-127, 127], and lanes below -87.3365 (where n may
 * be -127) are flushed to +0. */
static inline __m256 exp8(__m256 x)
{
    const __m256 tiny =
        _mm256_cmp_ps(x, _mm256_set1_ps(-87.33654f), _CMP_LT_OQ);
    x = _mm256_min_ps(_mm256_set1_ps(88.0f),
                      _mm256_max_ps(_mm256_set1_ps(-88.0f), x));
    const __m256 n = _mm256_round_ps(
        _mm256_mul_ps(x, _mm256_set1_ps(1.44269504f)),
        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693145751953125f), x);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(1.42860677e-6f), r);
    __m256 p = _mm256_set1_ps(1.0f / 5040.0f);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 720.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 120.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 24.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 6.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
    /* NaN lanes give an arbitrary n, but p is NaN and so is the product. */
    const __m256i e = _mm256_slli_epi32(
        _mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    return _mm256_andnot_ps(tiny,
                            _mm256_mul_ps(p, _mm256_castsi256_ps(e)));
}

static float hmax8(__m256 v)
{
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(v),
                          _mm256_extractf128_ps(v, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_shuffle_ps(m, m, 1));
    return _mm_cvtss_f32(m);
}

static double hsum4d(__m256d v)
{
    __m128d s = _mm_add_pd(_mm256_castpd256_pd128(v),
                           _mm256_extractf128_pd(v, 1));
    s = _mm_add_sd(s, _mm_unpackhi_pd(s, s));
    return _mm_cvtsd_f64(s);
}

static float row_max(const float *xr, size_t cols, bool *nan)
{
    const __m256 ninf = _mm256_set1_ps(-INFINITY);
    __m256 mx = ninf, un = _mm256_setzero_ps();
    for (size_t c = 0; c < cols; c += 8) {
        const __m256i m = lane_mask_n(cols - c);
        const __m256 v = _mm256_blendv_ps(ninf, _mm256_maskload_ps(xr + c, m),
                                          _mm256_castsi256_ps(m));
        un = _mm256_or_ps(un, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
        mx = _mm256_max_ps(mx, v);
    }
    *nan = _mm256_movemask_ps(un) != 0;
    return hmax8(mx);
}

/* y[c] = exp(x[c] - mx) (y may be x, or NULL: not stored); returns the
 * sum in double. */
static double row_exp(const float *xr, size_t cols, float mx, float *yr)
{
    const __m256 mv = _mm256_set1_ps(mx);
    __m256d s0 = _mm256_setzero_pd(), s1 = _mm256_setzero_pd();
    for (size_t c = 0; c < cols; c += 8) {
        const __m256i m = lane_mask_n(cols - c);
        const __m256 e = _mm256_and_ps(
            _mm256_castsi256_ps(m),
            exp8(_mm256_sub_ps(_mm256_maskload_ps(xr + c, m), mv)));
        if (yr) {
            _mm256_maskstore_ps(yr + c, m, e);
        }
        s0 = _mm256_add_pd(s0, _mm256_cvtps_pd(_mm256_castps256_ps128(e)));
        s1 = _mm256_add_pd(s1, _mm256_cvtps_pd(_mm256_extractf128_ps(e, 1)));
    }
    return hsum4d(_mm256_add_pd(s0, s1));
}

static void row_scale(float *yr, size_t cols, float s)
{
    const __m256 sv = _mm256_set1_ps(s);
    for (size_t c = 0; c < cols; c += 8) {
        const __m256i m = lane_mask_n(cols - c);
        _mm256_maskstore_ps(
            yr + c, m, _mm256_mul_ps(_mm256_maskload_ps(yr + c, m), sv));
    }
}

#define NN_FN(name) name##_avx2
#include "nn_softmax_tmpl.h"

/* ---- global average pooling on NCHW8c ------------------------------------ */

/* kern_nn_gap_blk_c with the block's 8 lanes as two vectors of doubles
 * per partial sum: the same additions in the same order, the same bits. */
void kern_nn_gap_blk_avx2(const float *xb, size_t hw, float *y8)
{
    __m256d a[4], b[4];
    for (int k = 0; k < 4; k++) {
        a[k] = _mm256_setzero_pd();
        b[k] = _mm256_setzero_pd();
    }
    size_t i = 0;
    for (; i + 4 <= hw; i += 4) {
        for (int k = 0; k < 4; k++) {
            const float *v = xb + (i + (size_t)k) * 8;
            a[k] = _mm256_add_pd(a[k], _mm256_cvtps_pd(_mm_loadu_ps(v)));
            b[k] = _mm256_add_pd(b[k], _mm256_cvtps_pd(_mm_loadu_ps(v + 4)));
        }
    }
    for (; i < hw; i++) {
        a[0] = _mm256_add_pd(a[0], _mm256_cvtps_pd(_mm_loadu_ps(xb + i * 8)));
        b[0] = _mm256_add_pd(b[0],
                             _mm256_cvtps_pd(_mm_loadu_ps(xb + i * 8 + 4)));
    }
    const __m256d n = _mm256_set1_pd((double)hw);
    const __m256d ta = _mm256_add_pd(_mm256_add_pd(a[0], a[1]),
                                     _mm256_add_pd(a[2], a[3]));
    const __m256d tb = _mm256_add_pd(_mm256_add_pd(b[0], b[1]),
                                     _mm256_add_pd(b[2], b[3]));
    _mm_storeu_ps(y8, _mm256_cvtpd_ps(_mm256_div_pd(ta, n)));
    _mm_storeu_ps(y8 + 4, _mm256_cvtpd_ps(_mm256_div_pd(tb, n)));
}
