/* AVX-512 kernels of the nn family. bias_add, scale and sgd perform the
 * C reference's float operations in the same order (no fused multiply-add),
 * so they match it bit for bit. The convolution vectorises along the output
 * row (16 output columns per vector, up to 64 per pass) and accumulates in
 * the reference's order (input channel, kernel row, kernel column) with
 * fused multiply-adds, so it differs from the reference only by the
 * rounding of the separate multiply. */
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "nn.h"
#include "pool_geom.h"

static inline __mmask16 tail_mask(size_t left)
{
    return left >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << left) - 1);
}

void kern_nn_bias_add_avx512(float *x, size_t rows, size_t channels,
                             const float *bias)
{
    if (channels == 1) {
        const __m512 b = _mm512_set1_ps(bias[0]);
        for (size_t i = 0; i < rows; i += 16) {
            const __mmask16 m = tail_mask(rows - i);
            _mm512_mask_storeu_ps(
                x + i, m, _mm512_add_ps(_mm512_maskz_loadu_ps(m, x + i), b));
        }
        return;
    }
    for (size_t r = 0; r < rows; r++) {
        float *row = x + r * channels;
        for (size_t c = 0; c < channels; c += 16) {
            const __mmask16 m = tail_mask(channels - c);
            const __m512 v = _mm512_add_ps(_mm512_maskz_loadu_ps(m, row + c),
                                           _mm512_maskz_loadu_ps(m, bias + c));
            _mm512_mask_storeu_ps(row + c, m, v);
        }
    }
}

bool kern_nn_all_finite_avx512(const float *x, size_t n)
{
    const __m512i e = _mm512_set1_epi32(0x7f800000);
    __mmask16 bad = 0;
    for (size_t i = 0; i < n; i += 16) {
        const __m512i v =
            _mm512_maskz_loadu_epi32(tail_mask(n - i), (const int *)(x + i));
        bad |= _mm512_cmpeq_epi32_mask(_mm512_and_si512(v, e), e);
        if (bad && (i & 4095) == 0) {
            return false;
        }
    }
    return bad == 0;
}

void kern_nn_scale_avx512(float *x, size_t n, float s)
{
    const __m512 sv = _mm512_set1_ps(s);
    for (size_t i = 0; i < n; i += 16) {
        const __mmask16 m = tail_mask(n - i);
        _mm512_mask_storeu_ps(
            x + i, m, _mm512_mul_ps(_mm512_maskz_loadu_ps(m, x + i), sv));
    }
}

void kern_nn_sgd_avx512(float *w, const float *g, float *velocity, size_t n,
                        float lr, float momentum, float weight_decay)
{
    const __m512 lrv = _mm512_set1_ps(lr);
    const __m512 mu = _mm512_set1_ps(momentum);
    const __m512 wd = _mm512_set1_ps(weight_decay);
    for (size_t i = 0; i < n; i += 16) {
        const __mmask16 m = tail_mask(n - i);
        const __m512 wv = _mm512_maskz_loadu_ps(m, w + i);
        __m512 gv = _mm512_maskz_loadu_ps(m, g + i);
        if (weight_decay != 0.0f) {
            gv = _mm512_add_ps(gv, _mm512_mul_ps(wd, wv));
        }
        if (momentum != 0.0f) {
            const __m512 v = _mm512_add_ps(
                _mm512_mul_ps(mu, _mm512_maskz_loadu_ps(m, velocity + i)),
                gv);
            _mm512_mask_storeu_ps(velocity + i, m, v);
            gv = v;
        }
        _mm512_mask_storeu_ps(w + i, m,
                              _mm512_sub_ps(wv, _mm512_mul_ps(lrv, gv)));
    }
}

/* ---- pooling ------------------------------------------------------------- */

/* Address of row[off] for a masked load whose first lanes may lie before
 * the row (off < 0; those lanes are masked off and never read). Computed on
 * integers, since a pointer before the start of an array is undefined. */
static inline const float *at(const float *row, ptrdiff_t off)
{
    return (const float *)((uintptr_t)row + (uintptr_t)off * sizeof *row);
}

/* Pooling is bit-identical to the C reference: each output lane sees its
 * window's real elements in row-major order, max pooling with the same
 * "larger, or the first NaN" rule, average pooling with the same float
 * additions from +0 and the same division (by kh * kw, or by the real
 * cells of the window, exact integers either way). Windows wider than
 * POOL_MAXK columns, or shapes whose column indices do not fit the 32-bit
 * gather offsets, use the C reference. */
enum { POOL_MAXK = 32 };

/* One step of the max scan on the lanes of m: v replaces best when it is
 * larger or NaN while best is not. */
static inline __m512 max_step16(__m512 best, __m512 v, __mmask16 m)
{
    const __mmask16 ok = _mm512_mask_cmp_ps_mask(m, best, best, _CMP_ORD_Q);
    const __mmask16 take = _mm512_mask_cmp_ps_mask(ok, v, best, _CMP_NLE_UQ);
    return _mm512_mask_mov_ps(best, take, v);
}

/* Lanes of output columns [lo, hi) within the vector starting at ox0. */
static inline __mmask16 range_mask(size_t ox0, size_t lo, size_t hi)
{
    size_t a = lo > ox0 ? lo - ox0 : 0;
    size_t b = hi > ox0 ? hi - ox0 : 0;
    a = a < 16 ? a : 16;
    b = b < 16 ? b : 16;
    if (a >= b) {
        return 0;
    }
    return (__mmask16)((0xffffu >> (16 - (b - a))) << a);
}

/* The four window elements of 16 outputs (even and odd columns of the
 * window's two rows) reduced in window order on the lanes of m. */
static inline __m512 k2s2_combine(__m512 e0, __m512 o0, __m512 e1, __m512 o1,
                                  __mmask16 m, bool is_max)
{
    if (is_max) {
        /* Without NaNs, max(v, best) is the scan's step
         * (v > best ? v : best); vectors with one take the exact step. */
        const __mmask16 un = _mm512_cmp_ps_mask(e0, o0, _CMP_UNORD_Q) |
                             _mm512_cmp_ps_mask(e1, o1, _CMP_UNORD_Q);
        if (un) {
            __m512 r = max_step16(e0, o0, m);
            r = max_step16(r, e1, m);
            return max_step16(r, o1, m);
        }
        __m512 r = _mm512_max_ps(o0, e0);
        r = _mm512_max_ps(e1, r);
        return _mm512_max_ps(o1, r);
    }
    __m512 r = _mm512_add_ps(_mm512_setzero_ps(), e0);
    r = _mm512_add_ps(r, o0);
    r = _mm512_add_ps(r, e1);
    r = _mm512_add_ps(r, o1);
    return _mm512_div_ps(r, _mm512_set1_ps(4.0f));
}

/* The common 2x2 window with stride 2 and no padding: two rows of 32
 * inputs are split into even and odd columns by permutes, 16 outputs per
 * step. With an even input height the planes are one tall plane (output
 * row r reads input rows 2r and 2r + 1 across plane boundaries too), and
 * outputs at most 8 wide are done two rows per vector, stored together
 * (consecutive output rows are contiguous). */
static void pool_k2s2(const struct kern_pool2d_shape *s, size_t oh,
                      size_t ow, const float *x, float *y, bool is_max)
{
    const __m512i ev = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18,
                                         20, 22, 24, 26, 28, 30);
    const __m512i od = _mm512_add_epi32(ev, _mm512_set1_epi32(1));
    const size_t iw = s->in_w;
    size_t planes = s->batch * s->channels, ih = s->in_h;
    if (ih == 2 * oh) {
        ih *= planes;
        oh *= planes;
        planes = 1;
    }
    for (size_t p = 0; p < planes; p++) {
        const float *plane = x + p * ih * iw;
        size_t oy = 0;
        if (ow <= 8) {
            const __mmask16 ma = tail_mask(2 * ow);
            const __mmask16 mo = (__mmask16)(tail_mask(ow) |
                                             (tail_mask(ow) << 8));
            for (; oy + 1 < oh; oy += 2) {
                const float *r0 = plane + 2 * oy * iw;
                const __m512 a0 = _mm512_maskz_loadu_ps(ma, r0);
                const __m512 a1 = _mm512_maskz_loadu_ps(ma, r0 + iw);
                const __m512 a2 = _mm512_maskz_loadu_ps(ma, r0 + 2 * iw);
                const __m512 a3 = _mm512_maskz_loadu_ps(ma, r0 + 3 * iw);
                /* Lanes 0-7: row oy; lanes 8-15: row oy + 1. */
                const __m512 r = k2s2_combine(
                    _mm512_permutex2var_ps(a0, ev, a2),
                    _mm512_permutex2var_ps(a0, od, a2),
                    _mm512_permutex2var_ps(a1, ev, a3),
                    _mm512_permutex2var_ps(a1, od, a3), mo, is_max);
                _mm512_mask_compressstoreu_ps(y + (p * oh + oy) * ow, mo, r);
            }
        }
        for (; oy < oh; oy++) {
            const float *r0 = plane + 2 * oy * iw, *r1 = r0 + iw;
            float *yr = y + (p * oh + oy) * ow;
            for (size_t ox = 0; ox < ow; ox += 16) {
                const size_t n = ow - ox < 16 ? ow - ox : 16;
                const __mmask16 mo = tail_mask(n);
                const __mmask16 ma = tail_mask(2 * n);
                const __mmask16 mb = tail_mask(2 * n > 16 ? 2 * n - 16 : 0);
                const __m512 a0 = _mm512_maskz_loadu_ps(ma, r0 + 2 * ox);
                const __m512 b0 = _mm512_maskz_loadu_ps(
                    mb, at(r0, (ptrdiff_t)(2 * ox + 16)));
                const __m512 a1 = _mm512_maskz_loadu_ps(ma, r1 + 2 * ox);
                const __m512 b1 = _mm512_maskz_loadu_ps(
                    mb, at(r1, (ptrdiff_t)(2 * ox + 16)));
                const __m512 r = k2s2_combine(
                    _mm512_permutex2var_ps(a0, ev, b0),
                    _mm512_permutex2var_ps(a0, od, b0),
                    _mm512_permutex2var_ps(a1, ev, b1),
                    _mm512_permutex2var_ps(a1, od, b1), mo, is_max);
                _mm512_mask_storeu_ps(yr + ox, mo, r);
            }
        }
    }
}

/* Any shape: per output row and group of up to PV vectors of 16 output
 * columns (independent chains), each real input row of the windows and
 * each kernel column is one masked load (stride 1) or gather (other
 * strides) of the lanes that read a real input. Max pooling runs
 * max(v, best) (the scan's step without NaNs) and keeps the first NaN of
 * each lane aside. */
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
    const __m512i lanes = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9,
                                            10, 11, 12, 13, 14, 15);
    /* Average pooling's divisor: kh * kw, or (count_include_pad 0) the
     * real rows of the window times each lane's real columns (xcnt, the
     * kernel columns whose mask holds the lane), exact small integers as
     * in the reference. */
    const bool whole = s->count_include_pad != 0;
    const __m512 cnt_all = _mm512_set1_ps((float)(kh * k));
    __m512 xcnt[PV];
    const __m512 init = is_max ? _mm512_set1_ps(-INFINITY)
                               : _mm512_setzero_ps();
    __mmask16 masks[POOL_MAXK][PV];
    __m512i idx[PV];
    for (size_t ox0 = 0; ox0 < ow; ox0 += 16 * PV) {
        const size_t nv = (ow - ox0 + 15) / 16 < PV ? (ow - ox0 + 15) / 16
                                                     : PV;
        for (size_t v = 0; v < nv; v++) {
            for (size_t kx = 0; kx < k; kx++) {
                masks[kx][v] = range_mask(ox0 + 16 * v, lo[kx], hi[kx]);
            }
            xcnt[v] = _mm512_setzero_ps();
            for (size_t kx = 0; kx < k; kx++) {
                xcnt[v] = _mm512_mask_add_ps(xcnt[v], masks[kx][v], xcnt[v],
                                             _mm512_set1_ps(1.0f));
            }
            idx[v] = _mm512_mullo_epi32(
                _mm512_add_epi32(lanes,
                                 _mm512_set1_epi32((int)(ox0 + 16 * v))),
                _mm512_set1_epi32((int)st));
        }
        for (size_t p = 0; p < s->batch * s->channels; p++) {
            const float *plane = x + p * ih * iw;
            for (size_t oy = 0; oy < oh; oy++) {
                /* Real input rows [y0, y1) of this output row's windows. */
                const size_t start = oy * sh;
                const size_t y0 = start < pt ? 0 : start - pt;
                const size_t y1 = start + kh - pt > ih ? ih : start + kh - pt;
                float *yr = y + (p * oh + oy) * ow;
                __m512 acc[PV], nanv[PV];
                __mmask16 seen[PV];
                for (size_t v = 0; v < PV; v++) {
                    acc[v] = init;
                    nanv[v] = init;
                    seen[v] = 0;
                }
                for (size_t iy = y0; iy < y1; iy++) {
                    const float *row = plane + iy * iw;
                    for (size_t kx = 0; kx < k; kx++) {
                        const ptrdiff_t off =
                            (ptrdiff_t)(ox0 + kx) - (ptrdiff_t)pad;
                        const __m512i kofs =
                            _mm512_set1_epi32((int)kx - (int)pad);
                        for (size_t v = 0; v < nv; v++) {
                            const __mmask16 m = masks[kx][v];
                            __m512 a;
                            if (st == 1) {
                                a = _mm512_maskz_loadu_ps(
                                    m, at(row, off + 16 * (ptrdiff_t)v));
                            } else {
                                a = _mm512_mask_i32gather_ps(
                                    _mm512_setzero_ps(), m,
                                    _mm512_add_epi32(idx[v], kofs), row, 4);
                            }
                            if (is_max) {
                                acc[v] = _mm512_mask_max_ps(acc[v], m, a,
                                                            acc[v]);
                                const __mmask16 n = _mm512_mask_cmp_ps_mask(
                                    m & (__mmask16)~seen[v], a, a,
                                    _CMP_UNORD_Q);
                                nanv[v] = _mm512_mask_mov_ps(nanv[v], n, a);
                                seen[v] |= n;
                            } else {
                                acc[v] = _mm512_mask_add_ps(acc[v], m,
                                                            acc[v], a);
                            }
                        }
                    }
                }
                const __m512 rows = _mm512_set1_ps((float)(y1 - y0));
                for (size_t v = 0; v < nv; v++) {
                    const __m512 cnt =
                        whole ? cnt_all : _mm512_mul_ps(xcnt[v], rows);
                    const __m512 r =
                        is_max ? _mm512_mask_mov_ps(acc[v], seen[v], nanv[v])
                               : _mm512_div_ps(acc[v], cnt);
                    _mm512_mask_storeu_ps(yr + ox0 + 16 * v,
                                          tail_mask(ow - ox0 - 16 * v), r);
                }
            }
        }
    }
}

/* True when pool_any's 32-bit column offsets and window arrays fit. */
/* The vector path computes output columns one per lane; an output row
 * narrower than a vector (a pooling that ends a network: DS-CNN's 24 x 5
 * window gives one column) would leave most lanes idle and chain every
 * window cell through one accumulator, so the reference, which adds runs
 * of the input rows, is faster there and gives the same sums. */
static bool pool_fits(const struct kern_pool2d_shape *s, size_t ow)
{
    return ow >= 16 && s->kw <= POOL_MAXK && s->stride_w < 65536 &&
           ow < (size_t)INT32_MAX / 2 / s->stride_w &&
           s->in_w < (size_t)INT32_MAX / 2;
}

/* 3 x 3 max pooling at stride 2 on NCHW planes of rows up to
 * 16 x K3S2_VECS floats, unpadded or padded by one above and to the left
 * (SqueezeNet's and AlexNet's pools; ResNet's stem), every window whole
 * below and to the right. Speculatively, the window's three rows first, whole vectors of
 * each row, then the columns: each output row's 16 outputs to a vector
 * from the column maxima split into the even and the odd columns (one
 * permute each), the evens moved down one for the windows' third columns.
 * A padded window's missing row is -inf, its missing column the odd
 * column maxima moved up one lane (the previous chunk's last in lane 0).
 * That order gives the reference's row-major scan's result except where
 * equal values differ in bits (+0 and -0) or a NaN is read, so each cell
 * is classified as it is loaded (one fpclass per vector) and a plane that
 * holds either is redone by the reference. The column pass takes three
 * shuffles per output row where the rows-first order took three per
 * input row, and the row's vector count is a compile-time constant, so
 * the rows stay in registers. */
enum { K3S2_VECS = 8 };

static bool max_k3s2_fits(const struct kern_pool2d_shape *s, size_t oh,
                          size_t ow)
{
    const size_t p = s->pad_top;
    return s->kh == 3 && s->kw == 3 && s->stride_h == 2 && s->stride_w == 2 &&
           p <= 1 && s->pad_left == p && s->in_w + p >= 2 * ow + 1 &&
           s->in_h + p >= 2 * oh + 1 && s->in_w <= 16 * K3S2_VECS;
}

/* The 16 cells at p, of which left lie in the row; the lanes past the
 * row are read whole (and never reach an output) while 16 floats remain
 * before end, masked off after. -0 and NaNs of the row noted in *bad. */
static inline __m512 k3s2_load(const float *p, size_t left, const float *end,
                               __mmask16 *bad)
{
    const __mmask16 m = tail_mask(left);
    const __m512 v = (size_t)(end - p) >= 16 ? _mm512_loadu_ps(p)
                                             : _mm512_maskz_loadu_ps(m, p);
    /* quiet NaN 0x01, -0 0x04, signalling NaN 0x80 */
    *bad |= _mm512_mask_fpclass_ps_mask(m, v, 0x85);
    return v;
}

static inline __attribute__((always_inline)) bool
max_k3s2_plane(size_t iw, size_t oh, size_t ow, const float *xp, float *yp,
               const float *end, const size_t nv, const size_t pad)
{
    const __m512i ev = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18,
                                         20, 22, 24, 26, 28, 30);
    const __m512i od = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19,
                                         21, 23, 25, 27, 29, 31);
    __m512 r0[K3S2_VECS], v[K3S2_VECS + 1];
    __mmask16 bad = 0;
    const __m512 ninf = _mm512_set1_ps(-INFINITY);
    for (size_t j = 0; j < nv; j++) {
        r0[j] = pad ? ninf : k3s2_load(xp + 16 * j, iw - 16 * j, end, &bad);
    }
    v[nv] = _mm512_setzero_ps();
    for (size_t oy = 0; oy < oh; oy++) {
        const float *b = xp + (2 * oy + 1 - pad) * iw, *c = b + iw;
        for (size_t j = 0; j < nv; j++) {
            const __m512 r1 = k3s2_load(b + 16 * j, iw - 16 * j, end, &bad);
            const __m512 r2 = k3s2_load(c + 16 * j, iw - 16 * j, end, &bad);
            v[j] = _mm512_max_ps(r2, _mm512_max_ps(r1, r0[j]));
            r0[j] = r2;
        }
        float *o = yp + oy * ow;
        __m512 dprev = ninf;
        for (size_t k = 0; 2 * k < nv && 16 * k < ow; k++) {
            const __m512 lo = v[2 * k], hi = v[2 * k + 1 < nv ? 2 * k + 1 : nv];
            /* column 32 k + 32, the chunk's last output's third column */
            const __m512 n = v[2 * k + 2 < nv ? 2 * k + 2 : nv];
            const __m512 e = _mm512_permutex2var_ps(lo, ev, hi);
            const __m512 d = _mm512_permutex2var_ps(lo, od, hi);
            __m512 m;
            if (pad) {
                /* columns 2 i - 1, 2 i, 2 i + 1 */
                const __m512 d0 = _mm512_castsi512_ps(_mm512_alignr_epi32(
                    _mm512_castps_si512(d), _mm512_castps_si512(dprev), 15));
                m = _mm512_max_ps(d, _mm512_max_ps(e, d0));
                dprev = d;
            } else {
                /* columns 2 i, 2 i + 1, 2 i + 2 */
                const __m512 e2 = _mm512_castsi512_ps(_mm512_alignr_epi32(
                    _mm512_castps_si512(n), _mm512_castps_si512(e), 1));
                m = _mm512_max_ps(e2, _mm512_max_ps(d, e));
            }
            _mm512_mask_storeu_ps(o + 16 * k, tail_mask(ow - 16 * k), m);
        }
    }
    return bad != 0;
}

static bool max_k3s2(const struct kern_pool2d_shape *s, size_t oh, size_t ow,
                     const float *x, float *y)
{
    if (!max_k3s2_fits(s, oh, ow)) {
        return false;
    }
    struct kern_pool2d_shape one = *s;
    one.batch = one.channels = 1;
    const size_t in_n = s->in_h * s->in_w, out_n = oh * ow;
    const size_t iw = s->in_w, planes = s->batch * s->channels;
    const float *end = x + planes * in_n;
    for (size_t p = 0; p < planes; p++) {
        const float *xp = x + p * in_n;
        float *yp = y + p * out_n;
        bool bad = false;
        switch ((iw + 15) / 16) {
#define K3S2_CASE(n)                                                           \
    case n:                                                                    \
        bad = s->pad_top ? max_k3s2_plane(iw, oh, ow, xp, yp, end, n, 1)        \
                         : max_k3s2_plane(iw, oh, ow, xp, yp, end, n, 0);       \
        break;
            K3S2_CASE(1)
            K3S2_CASE(2)
            K3S2_CASE(3)
            K3S2_CASE(4)
            K3S2_CASE(5)
            K3S2_CASE(6)
            K3S2_CASE(7)
            K3S2_CASE(8)
#undef K3S2_CASE
        }
        if (bad) {
            kern_nn_maxpool2d_c(&one, oh, ow, xp, yp);
        }
    }
    return true;
}

/* Planes of at most 32 cells whose output fits one vector (a 3 x 3 pool
 * of a 4 x 4 map, as GoogLeNet's inception branches run on NCHW):
 * pool_rows and pool_any need 8 or 16 output columns, and the reference
 * took 1 ns a window cell (19 us for 132 planes of 4 x 4). Per plane the
 * cells are one or two vectors; each tap (ky, kx) of every output is one
 * permute of them, taken where it falls on a real cell, in the window's
 * row-major order: max(v, best), the reference's step where no NaN is
 * read (a plane that holds one is redone by the reference), or the sum
 * from +0 and then the division by the reference's divisor, the same
 * operations in the same order. The permutes' indices depend on the
 * shape only and are built once a call. */
enum { TINY_CELLS = 32, TINY_TAPS = 49 };

static bool pool_tiny(const struct kern_pool2d_shape *s, size_t oh, size_t ow,
                      const float *x, float *y, bool is_max)
{
    const size_t ih = s->in_h, iw = s->in_w, ip = ih * iw, op = oh * ow;
    const size_t taps = s->kh * s->kw;
    if (!op || op > 16 || ip > TINY_CELLS || taps > TINY_TAPS) {
        return false;
    }
    __m512i idx[TINY_TAPS];
    __mmask16 live[TINY_TAPS];
    float div[16] = {0};
    for (size_t t = 0; t < taps; t++) {
        int32_t at[16] = {0};
        __mmask16 m = 0;
        const size_t ky = t / s->kw, kx = t % s->kw;
        for (size_t o = 0; o < op; o++) {
            const size_t oy = o / ow, ox = o % ow;
            /* the cell, unsigned: a padded one wraps past the plane */
            const size_t iy = oy * s->stride_h + ky - s->pad_top;
            const size_t ix = ox * s->stride_w + kx - s->pad_left;
            if (iy < ih && ix < iw) {
                at[o] = (int32_t)(iy * iw + ix);
                m |= (__mmask16)(1u << o);
            }
        }
        idx[t] = _mm512_loadu_si512(at);
        live[t] = m;
    }
    for (size_t o = 0; o < op && !is_max; o++) {
        size_t y0, y1, x0, x1;
        kern_pool_window(o / ow, s->stride_h, s->pad_top, s->kh, ih, &y0, &y1);
        kern_pool_window(o % ow, s->stride_w, s->pad_left, s->kw, iw, &x0,
                         &x1);
        div[o] = kern_nn_pool_divisor(s, y1 - y0, x1 - x0);
    }
    const __m512 dv = _mm512_loadu_ps(div);
    const __mmask16 om = tail_mask(op);
    const __mmask16 m0 = tail_mask(ip), m1 = ip > 16 ? tail_mask(ip - 16) : 0;
    struct kern_pool2d_shape one = *s;
    one.batch = one.channels = 1;
    for (size_t p = 0; p < s->batch * s->channels; p++) {
        const float *xp = x + p * ip;
        const __m512 a = _mm512_maskz_loadu_ps(m0, xp);
        const __m512 b = _mm512_maskz_loadu_ps(m1, xp + 16);
        if (is_max) {
            /* quiet and signalling NaNs */
            if (_mm512_fpclass_ps_mask(a, 0x81) |
                _mm512_fpclass_ps_mask(b, 0x81)) {
                kern_nn_maxpool2d_c(&one, oh, ow, xp, y + p * op);
                continue;
            }
            __m512 acc = _mm512_set1_ps(-INFINITY);
            for (size_t t = 0; t < taps; t++) {
                const __m512 v = _mm512_permutex2var_ps(a, idx[t], b);
                acc = _mm512_mask_max_ps(acc, live[t], v, acc);
            }
            _mm512_mask_storeu_ps(y + p * op, om, acc);
            continue;
        }
        __m512 acc = _mm512_setzero_ps();
        for (size_t t = 0; t < taps; t++) {
            const __m512 v = _mm512_permutex2var_ps(a, idx[t], b);
            acc = _mm512_mask_add_ps(acc, live[t], acc, v);
        }
        _mm512_mask_storeu_ps(y + p * op, om, _mm512_div_ps(acc, dv));
    }
    return true;
}

void kern_nn_maxpool2d_avx512(const struct kern_pool2d_shape *s,
                              size_t out_h, size_t out_w, const float *x,
                              float *y)
{
    if (kern_nn_pool_is_k2s2(s)) {
        pool_k2s2(s, out_h, out_w, x, y, true);
    } else if (max_k3s2(s, out_h, out_w, x, y)) {
        return;
    } else if (kern_nn_pool_rows_avx2(s, out_h, out_w, x, y, true)) {
        /* strides 1 and 2: loads along the row beat 16-lane gathers */
        return;
    } else if (pool_fits(s, out_w)) {
        pool_any(s, out_h, out_w, x, y, true);
    } else if (!pool_tiny(s, out_h, out_w, x, y, true)) {
        kern_nn_maxpool2d_c(s, out_h, out_w, x, y);
    }
}

void kern_nn_avgpool2d_avx512(const struct kern_pool2d_shape *s,
                              size_t out_h, size_t out_w, const float *x,
                              float *y)
{
    if (kern_nn_pool_is_k2s2(s)) {
        pool_k2s2(s, out_h, out_w, x, y, false);
    } else if (kern_nn_pool_rows_avx2(s, out_h, out_w, x, y, false)) {
        /* strides 1 and 2: loads along the row beat 16-lane gathers */
        return;
    } else if (pool_fits(s, out_w)) {
        pool_any(s, out_h, out_w, x, y, false);
    } else if (!pool_tiny(s, out_h, out_w, x, y, false)) {
        kern_nn_avgpool2d_c(s, out_h, out_w, x, y);
    }
}

/* ---- softmax ------------------------------------------------------------- */

/* exp(x) for x <= 88: x = n ln2 + r with |r| <= ln2 / 2 (ln2 split in two
 * parts, n ln2_hi exact), e^r by its degree-7 Taylor polynomial (truncation
 * below 6e-9 relative) in Horner form with fused multiply-adds, scaled by
 * 2^n with scalef. Results below FLT_MIN (x < -87.3365) are flushed to +0;
 * NaN stays NaN; -inf gives 0. Error against exp in double: 0.94 ulp at
 * most, measured over every float in [-87.3365, 0] (the softmax domain);
 * the checker's softmax tolerance allows 2. */
static inline __m512 exp16(__m512 x)
{
    const __mmask16 tiny =
        _mm512_cmp_ps_mask(x, _mm512_set1_ps(-87.33654f), _CMP_LT_OQ);
    /* max/min return their second operand for NaN: NaN passes. */
    x = _mm512_min_ps(_mm512_set1_ps(88.0f),
                      _mm512_max_ps(_mm512_set1_ps(-88.0f), x));
    const __m512 n = _mm512_roundscale_ps(
        _mm512_mul_ps(x, _mm512_set1_ps(1.44269504f)),
        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693145751953125f), x);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(1.42860677e-6f), r);
    __m512 p = _mm512_set1_ps(1.0f / 5040.0f);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 720.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 120.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 24.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 6.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    return _mm512_maskz_mov_ps((__mmask16)~tiny, _mm512_scalef_ps(p, n));
}

/* Largest element of a row and whether it holds a NaN. */
static float row_max(const float *xr, size_t cols, bool *nan)
{
    const __m512 ninf = _mm512_set1_ps(-INFINITY);
    __m512 mx = ninf;
    __mmask16 un = 0;
    for (size_t c = 0; c < cols; c += 16) {
        const __m512 v = _mm512_mask_loadu_ps(ninf, tail_mask(cols - c),
                                              xr + c);
        un |= _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
        mx = _mm512_max_ps(mx, v);
    }
    *nan = un != 0;
    return _mm512_reduce_max_ps(mx);
}

/* y[c] = exp(x[c] - mx) (y may be x, or NULL: not stored); returns the
 * sum in double. */
static double row_exp(const float *xr, size_t cols, float mx, float *yr)
{
    const __m512 mv = _mm512_set1_ps(mx);
    __m512d s0 = _mm512_setzero_pd(), s1 = _mm512_setzero_pd();
    for (size_t c = 0; c < cols; c += 16) {
        const __mmask16 m = tail_mask(cols - c);
        const __m512 e = _mm512_maskz_mov_ps(
            m, exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, xr + c), mv)));
        if (yr) {
            _mm512_mask_storeu_ps(yr + c, m, e);
        }
        s0 = _mm512_add_pd(s0, _mm512_cvtps_pd(_mm512_castps512_ps256(e)));
        s1 = _mm512_add_pd(
            s1, _mm512_cvtps_pd(_mm256_castpd_ps(
                    _mm512_extractf64x4_pd(_mm512_castps_pd(e), 1))));
    }
    return _mm512_reduce_add_pd(_mm512_add_pd(s0, s1));
}

static void row_scale(float *yr, size_t cols, float s)
{
    const __m512 sv = _mm512_set1_ps(s);
    for (size_t c = 0; c < cols; c += 16) {
        const __mmask16 m = tail_mask(cols - c);
        _mm512_mask_storeu_ps(
            yr + c, m, _mm512_mul_ps(_mm512_maskz_loadu_ps(m, yr + c), sv));
    }
}

#define NN_FN(name) name##_avx512
#include "nn_softmax_tmpl.h"

/* ---- global average pooling on NCHW8c ------------------------------------ */

/* kern_nn_gap_blk_c with the block's 8 lanes as one vector of doubles per
 * partial sum: the same additions in the same order, so the same bits;
 * the plain C took a dependent chain of scalar double additions per lane
 * (EfficientNet's squeeze-and-excite pools, 2.2 us for 8 x 48 x 48). */
void kern_nn_gap_blk_avx512(const float *xb, size_t hw, float *y8)
{
    __m512d s0 = _mm512_setzero_pd(), s1 = s0, s2 = s0, s3 = s0;
    size_t i = 0;
    for (; i + 4 <= hw; i += 4) {
        const float *v = xb + i * 8;
        s0 = _mm512_add_pd(s0, _mm512_cvtps_pd(_mm256_loadu_ps(v)));
        s1 = _mm512_add_pd(s1, _mm512_cvtps_pd(_mm256_loadu_ps(v + 8)));
        s2 = _mm512_add_pd(s2, _mm512_cvtps_pd(_mm256_loadu_ps(v + 16)));
        s3 = _mm512_add_pd(s3, _mm512_cvtps_pd(_mm256_loadu_ps(v + 24)));
    }
    for (; i < hw; i++) {
        s0 = _mm512_add_pd(s0, _mm512_cvtps_pd(_mm256_loadu_ps(xb + i * 8)));
    }
    const __m512d t = _mm512_add_pd(_mm512_add_pd(s0, s1),
                                    _mm512_add_pd(s2, s3));
    _mm256_storeu_ps(y8, _mm512_cvtpd_ps(
                             _mm512_div_pd(t, _mm512_set1_pd((double)hw))));
}
