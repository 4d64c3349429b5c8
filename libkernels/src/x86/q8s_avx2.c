/* AVX2 output stage and int8 add of the static int8 family: eight int32
 * lanes at a time, the same integer operations as the C reference (so the
 * same bits); tails shorter than eight run the C reference. */
#include <immintrin.h>
#include <stdbool.h>
#include <string.h>

#include "pool_geom.h"
#include "q8s.h"
#include "transpose_u8.h"

#include "edgefit/kernels.h"

/* SaturatingRoundingDoublingHighMul on 8 lanes: floor((a b + 2^30) /
 * 2^31). The 64-bit products of the even and odd lanes are formed apart;
 * bits 31..62 of each sum are the result (it fits in int32), whatever the
 * sign, so logical shifts do. INT32_MIN squared saturates. */
static inline __m256i srdhm8(__m256i a, __m256i b)
{
    const __m256i nudge = _mm256_set1_epi64x((long long)1 << 30);
    __m256i pe = _mm256_mul_epi32(a, b);
    __m256i po = _mm256_mul_epi32(_mm256_srli_epi64(a, 32),
                                  _mm256_srli_epi64(b, 32));
    pe = _mm256_srli_epi64(_mm256_add_epi64(pe, nudge), 31);
    po = _mm256_slli_epi64(_mm256_add_epi64(po, nudge), 1);
    __m256i r = _mm256_blend_epi32(pe, po, 0xaa);
    const __m256i min = _mm256_set1_epi32(INT32_MIN);
    const __m256i sat = _mm256_and_si256(_mm256_cmpeq_epi32(a, min),
                                         _mm256_cmpeq_epi32(b, min));
    return _mm256_blendv_epi8(r, _mm256_set1_epi32(INT32_MAX), sat);
}

/* RoundingDivideByPOT with a shift per lane in [0, 31]. */
static inline __m256i rdbpot8(__m256i x, __m256i e)
{
    const __m256i one = _mm256_set1_epi32(1);
    const __m256i mask = _mm256_sub_epi32(_mm256_sllv_epi32(one, e), one);
    const __m256i rem = _mm256_and_si256(x, mask);
    /* thr = mask / 2 + (x < 0): subtracting the all-ones compare adds 1 */
    const __m256i thr =
        _mm256_sub_epi32(_mm256_srli_epi32(mask, 1),
                         _mm256_cmpgt_epi32(_mm256_setzero_si256(), x));
    return _mm256_sub_epi32(_mm256_srav_epi32(x, e),
                            _mm256_cmpgt_epi32(rem, thr));
}

static inline __m256i mbqm8(__m256i x, __m256i mult, __m256i lsh,
                            __m256i rsh)
{
    return rdbpot8(srdhm8(_mm256_sllv_epi32(x, lsh), mult), rsh);
}

/* clamp(r + zp, qmin, qmax) as clamp(r, qmin - zp, qmax - zp) + zp, which
 * cannot overflow, then 8 bytes stored. */
static inline void store8(int8_t *q, __m256i r, __m256i lo, __m256i hi,
                          __m256i zp)
{
    r = _mm256_add_epi32(_mm256_min_epi32(_mm256_max_epi32(r, lo), hi), zp);
    const __m256i w = _mm256_packs_epi32(r, r);
    const __m256i b = _mm256_packs_epi16(w, w);
    const __m256i g =
        _mm256_permutevar8x32_epi32(b, _mm256_setr_epi32(0, 4, 0, 0, 0, 0,
                                                         0, 0));
    _mm_storel_epi64((__m128i *)q, _mm256_castsi256_si128(g));
}

void kern_q8s_requant_avx2(size_t n, const int32_t *acc, const int32_t *add,
                           const int32_t *mult, const int32_t *lsh,
                           const int32_t *rsh, int32_t zp, int32_t qmin,
                           int32_t qmax, int8_t *q)
{
    const __m256i vzp = _mm256_set1_epi32(zp);
    const __m256i lo = _mm256_set1_epi32(qmin - zp);
    const __m256i hi = _mm256_set1_epi32(qmax - zp);
    size_t j = 0;
    for (; j + 8 <= n; j += 8) {
        const __m256i x =
            _mm256_add_epi32(_mm256_loadu_si256((const __m256i *)(acc + j)),
                             _mm256_loadu_si256((const __m256i *)(add + j)));
        const __m256i r = mbqm8(
            x, _mm256_loadu_si256((const __m256i *)(mult + j)),
            _mm256_loadu_si256((const __m256i *)(lsh + j)),
            _mm256_loadu_si256((const __m256i *)(rsh + j)));
        store8(q + j, r, lo, hi, vzp);
    }
    if (j < n) {
        kern_q8s_requant_c(n - j, acc + j, add + j, mult + j, lsh + j,
                           rsh + j, zp, qmin, qmax, q + j);
    }
}

/* The parameters of 8 columns, loaded once per tile: the multiplier and
 * its odd lanes moved down for vpmuldq, the shifts, RoundingDivideByPOT's
 * mask and half mask. */
struct cols8 {
    __m256i add, m, mo, ls, rs, mask, half;
};

static inline struct cols8 cols8_load(const int32_t *add, const int32_t *mult,
                                      const int32_t *lsh, const int32_t *rsh)
{
    struct cols8 c;
    const __m256i one = _mm256_set1_epi32(1);
    c.add = _mm256_loadu_si256((const __m256i *)add);
    c.m = _mm256_loadu_si256((const __m256i *)mult);
    c.mo = _mm256_srli_epi64(c.m, 32);
    c.ls = _mm256_loadu_si256((const __m256i *)lsh);
    c.rs = _mm256_loadu_si256((const __m256i *)rsh);
    c.mask = _mm256_sub_epi32(_mm256_sllv_epi32(one, c.rs), one);
    c.half = _mm256_srli_epi32(c.mask, 1);
    return c;
}

/* srdhm8 and rdbpot8 with the column parameters hoisted; the saturation
 * of INT32_MIN squared is left out: the caller checked that no
 * multiplier is INT32_MIN. Then the clamp (lo, hi relative to zp) and zp
 * added: the same bits as the C reference's. */
static inline __m256i cols8_stage(__m256i x, const struct cols8 *c,
                                  int shl, __m256i lo, __m256i hi,
                                  __m256i zp)
{
    const __m256i nudge = _mm256_set1_epi64x((long long)1 << 30);
    x = _mm256_add_epi32(x, c->add);
    if (shl) {
        x = _mm256_sllv_epi32(x, c->ls);
    }
    __m256i pe = _mm256_mul_epi32(x, c->m);
    __m256i po = _mm256_mul_epi32(_mm256_srli_epi64(x, 32), c->mo);
    pe = _mm256_srli_epi64(_mm256_add_epi64(pe, nudge), 31);
    po = _mm256_slli_epi64(_mm256_add_epi64(po, nudge), 1);
    const __m256i h = _mm256_blend_epi32(pe, po, 0xaa);
    const __m256i rem = _mm256_and_si256(h, c->mask);
    const __m256i thr = _mm256_sub_epi32(
        c->half, _mm256_cmpgt_epi32(_mm256_setzero_si256(), h));
    const __m256i r = _mm256_sub_epi32(_mm256_srav_epi32(h, c->rs),
                                       _mm256_cmpgt_epi32(rem, thr));
    return _mm256_add_epi32(_mm256_min_epi32(_mm256_max_epi32(r, lo), hi),
                            zp);
}

/* Two groups of 8 clamped int32 (in int8 range) to 16 bytes in order. */
static inline __m128i pack16(__m256i a, __m256i b)
{
    const __m256i w = _mm256_packs_epi32(a, b); /* a0-3 b0-3 | a4-7 b4-7 */
    const __m256i by = _mm256_packs_epi16(w, w);
    /* dwords: 0 = a0-3, 1 = b0-3, 4 = a4-7, 5 = b4-7 */
    return _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(
        by, _mm256_setr_epi32(0, 4, 1, 5, 0, 0, 0, 0)));
}

static inline __attribute__((always_inline)) void
tile_rows(size_t m, size_t n, const int32_t *acc, size_t lda,
          const int32_t *add, const int32_t *mult, const int32_t *lsh,
          const int32_t *rsh, int32_t izp, int32_t qmin, int32_t qmax,
          int shl, int8_t *q, size_t ldq)
{
    const __m256i zp = _mm256_set1_epi32(izp);
    const __m256i lo = _mm256_set1_epi32(qmin - izp);
    const __m256i hi = _mm256_set1_epi32(qmax - izp);
    size_t j = 0;
    for (; j + 16 <= n; j += 16) {
        const struct cols8 c0 = cols8_load(add + j, mult + j, lsh + j, rsh + j);
        const struct cols8 c1 =
            cols8_load(add + j + 8, mult + j + 8, lsh + j + 8, rsh + j + 8);
        for (size_t i = 0; i < m; i++) {
            const int32_t *a = acc + i * lda + j;
            const __m256i r0 = cols8_stage(
                _mm256_loadu_si256((const __m256i *)a), &c0, shl, lo, hi, zp);
            const __m256i r1 =
                cols8_stage(_mm256_loadu_si256((const __m256i *)(a + 8)), &c1,
                            shl, lo, hi, zp);
            _mm_storeu_si128((__m128i *)(q + i * ldq + j), pack16(r0, r1));
        }
    }
    if (j + 8 <= n) {
        const struct cols8 c0 = cols8_load(add + j, mult + j, lsh + j, rsh + j);
        for (size_t i = 0; i < m; i++) {
            const __m256i r0 = cols8_stage(
                _mm256_loadu_si256((const __m256i *)(acc + i * lda + j)), &c0,
                shl, lo, hi, zp);
            const __m256i w = _mm256_packs_epi32(r0, r0);
            const __m256i by = _mm256_packs_epi16(w, w);
            const __m256i g = _mm256_permutevar8x32_epi32(
                by, _mm256_setr_epi32(0, 4, 0, 0, 0, 0, 0, 0));
            _mm_storel_epi64((__m128i *)(q + i * ldq + j),
                             _mm256_castsi256_si128(g));
        }
        j += 8;
    }
    if (j < n) {
        for (size_t i = 0; i < m; i++) {
            kern_q8s_requant_c(n - j, acc + i * lda + j, add + j, mult + j,
                               lsh + j, rsh + j, izp, qmin, qmax,
                               q + i * ldq + j);
        }
    }
}

/* The output stage of a tile with the column parameters hoisted out of the
 * row loop (kern_q8s_requant_avx2 reloads and recomputes them for every
 * row, which cost as much as the int8 GEMM on layers of few input
 * channels), 16 columns stored at once, and no left shift when every
 * column's is 0. A multiplier of INT32_MIN (never one of
 * kern_q8_quantize_multiplier's) takes the row path, which saturates. */
void kern_q8s_requant_tile_avx2(size_t m, size_t n, const int32_t *acc,
                                size_t lda, const int32_t *add,
                                const int32_t *mult, const int32_t *lsh,
                                const int32_t *rsh, int32_t zp, int32_t qmin,
                                int32_t qmax, int8_t *q, size_t ldq)
{
    int any_min = 0, any_shl = 0;
    for (size_t j = 0; j < n; j++) {
        any_min |= mult[j] == INT32_MIN;
        any_shl |= lsh[j] != 0;
    }
    if (any_min) {
        for (size_t i = 0; i < m; i++) {
            kern_q8s_requant_avx2(n, acc + i * lda, add, mult, lsh, rsh, zp,
                                  qmin, qmax, q + i * ldq);
        }
        return;
    }
    if (any_shl) {
        tile_rows(m, n, acc, lda, add, mult, lsh, rsh, zp, qmin, qmax, 1, q,
                  ldq);
    } else {
        tile_rows(m, n, acc, lda, add, mult, lsh, rsh, zp, qmin, qmax, 0, q,
                  ldq);
    }
}

/* The float stage on 8 lanes (kern_q8s_requantf_c's operations: the int32
 * sum, vcvtdq2ps and the product rounded to nearest even, the clamp in
 * float, vcvtps2dq in the default rounding mode, half to even, then zp):
 * the same bits. flo and fhi are qmin - zp and qmax - zp as floats. */
static inline __m256i requantf8(__m256i x, __m256i add, __m256 scale,
                                __m256 flo, __m256 fhi, __m256i zp)
{
    __m256 f = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_add_epi32(x, add)),
                             scale);
    f = _mm256_min_ps(_mm256_max_ps(f, flo), fhi);
    return _mm256_add_epi32(_mm256_cvtps_epi32(f), zp);
}

void kern_q8s_requantf_avx2(size_t n, const int32_t *acc,
                            const int32_t *add, const float *scale,
                            int32_t zp, int32_t qmin, int32_t qmax,
                            int8_t *q)
{
    kern_q8s_requantf_tile_avx2(1, n, acc, n, add, scale, zp, qmin, qmax, q,
                                n);
}

/* The column parameters loaded once per 8 or 16 columns, as tile_rows. */
void kern_q8s_requantf_tile_avx2(size_t m, size_t n, const int32_t *acc,
                                 size_t lda, const int32_t *add,
                                 const float *scale, int32_t izp,
                                 int32_t qmin, int32_t qmax, int8_t *q,
                                 size_t ldq)
{
    const __m256i zp = _mm256_set1_epi32(izp);
    const __m256 flo = _mm256_set1_ps((float)(qmin - izp));
    const __m256 fhi = _mm256_set1_ps((float)(qmax - izp));
    size_t j = 0;
    for (; j + 16 <= n; j += 16) {
        const __m256i a0 = _mm256_loadu_si256((const __m256i *)(add + j));
        const __m256i a1 = _mm256_loadu_si256((const __m256i *)(add + j + 8));
        const __m256 s0 = _mm256_loadu_ps(scale + j);
        const __m256 s1 = _mm256_loadu_ps(scale + j + 8);
        for (size_t i = 0; i < m; i++) {
            const int32_t *a = acc + i * lda + j;
            const __m256i r0 = requantf8(
                _mm256_loadu_si256((const __m256i *)a), a0, s0, flo, fhi, zp);
            const __m256i r1 =
                requantf8(_mm256_loadu_si256((const __m256i *)(a + 8)), a1,
                          s1, flo, fhi, zp);
            _mm_storeu_si128((__m128i *)(q + i * ldq + j), pack16(r0, r1));
        }
    }
    if (j + 8 <= n) {
        const __m256i a0 = _mm256_loadu_si256((const __m256i *)(add + j));
        const __m256 s0 = _mm256_loadu_ps(scale + j);
        for (size_t i = 0; i < m; i++) {
            const __m256i r0 = requantf8(
                _mm256_loadu_si256((const __m256i *)(acc + i * lda + j)), a0,
                s0, flo, fhi, zp);
            const __m256i w = _mm256_packs_epi32(r0, r0);
            const __m256i by = _mm256_packs_epi16(w, w);
            const __m256i g = _mm256_permutevar8x32_epi32(
                by, _mm256_setr_epi32(0, 4, 0, 0, 0, 0, 0, 0));
            _mm_storel_epi64((__m128i *)(q + i * ldq + j),
                             _mm256_castsi256_si128(g));
        }
        j += 8;
    }
    if (j < n) {
        for (size_t i = 0; i < m; i++) {
            kern_q8s_requantf_c(n - j, acc + i * lda + j, add + j, scale + j,
                                izp, qmin, qmax, q + i * ldq + j);
        }
    }
}

/* 16 x 16 blocks through SSE registers; the edges a byte at a time. */
void kern_q8s_transpose_avx2(size_t m, size_t n, const int8_t *x,
                             size_t ldx, int8_t *y, size_t ldy)
{
    const size_t m16 = m / 16 * 16, n16 = n / 16 * 16;
    for (size_t i = 0; i < m16; i += 16) {
        for (size_t j = 0; j < n16; j += 16) {
            __m128i r[16];
            for (int t = 0; t < 16; t++) {
                r[t] = _mm_loadu_si128(
                    (const __m128i *)(x + (i + (size_t)t) * ldx + j));
            }
            transpose16x16_u8(r);
            for (int t = 0; t < 16; t++) {
                _mm_storeu_si128((__m128i *)(y + (j + (size_t)t) * ldy + i),
                                 r[t]);
            }
        }
    }
    if (n16 < n) {
        kern_q8s_transpose_c(m16, n - n16, x + n16, ldx, y + n16 * ldy, ldy);
    }
    if (m16 < m) {
        kern_q8s_transpose_c(m - m16, n, x + m16 * ldx, ldx, y + m16, ldy);
    }
}

/* The C reference's operations on 8 lanes: the same IEEE division,
 * rounding (to nearest even, as rintf in the default mode) and addition,
 * so the same values; NaN lanes take the zero point. */
void kern_q8s_quant_avx2(const float *x, size_t n, float scale,
                         int32_t zero, int8_t *q)
{
    const __m256 vs = _mm256_set1_ps(scale);
    const __m256 vz = _mm256_set1_ps((float)zero);
    const __m256 lo = _mm256_set1_ps(-128.0f), hi = _mm256_set1_ps(127.0f);
    const __m256i zi = _mm256_set1_epi32(zero);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 v = _mm256_div_ps(_mm256_loadu_ps(x + i), vs);
        const __m256 nan = _mm256_cmp_ps(v, v, _CMP_UNORD_Q);
        __m256 f = _mm256_add_ps(
            _mm256_round_ps(v, _MM_FROUND_TO_NEAREST_INT |
                                   _MM_FROUND_NO_EXC),
            vz);
        f = _mm256_min_ps(_mm256_max_ps(f, lo), hi);
        __m256i r = _mm256_cvttps_epi32(f);
        r = _mm256_blendv_epi8(r, zi, _mm256_castps_si256(nan));
        const __m256i w = _mm256_packs_epi32(r, r);
        const __m256i b = _mm256_packs_epi16(w, w);
        const __m256i g = _mm256_permutevar8x32_epi32(
            b, _mm256_setr_epi32(0, 4, 0, 0, 0, 0, 0, 0));
        _mm_storel_epi64((__m128i *)(q + i), _mm256_castsi256_si128(g));
    }
    if (i < n) {
        kern_q8s_quant_c(x + i, n - i, scale, zero, q + i);
    }
}

static inline __m256i load8_s8(const int8_t *p)
{
    return _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)p));
}

void kern_q8s_add_avx2(size_t n, const int8_t *a, const int8_t *b,
                       const struct kern_q8_add_params *p, int8_t *out)
{
    const __m256i za = _mm256_set1_epi32(p->a_zero);
    const __m256i zb = _mm256_set1_epi32(p->b_zero);
    const __m256i ls = _mm256_set1_epi32(p->left_shift);
    const __m256i zero = _mm256_setzero_si256();
    const __m256i am = _mm256_set1_epi32(p->a_mult);
    const __m256i ar = _mm256_set1_epi32(-p->a_shift);
    const __m256i bm = _mm256_set1_epi32(p->b_mult);
    const __m256i br = _mm256_set1_epi32(-p->b_shift);
    const __m256i om = _mm256_set1_epi32(p->out_mult);
    const __m256i ol = _mm256_set1_epi32(p->out_shift > 0 ? p->out_shift : 0);
    const __m256i orr =
        _mm256_set1_epi32(p->out_shift > 0 ? 0 : -p->out_shift);
    const __m256i vzp = _mm256_set1_epi32(p->out_zero);
    const __m256i lo = _mm256_set1_epi32(p->qmin - p->out_zero);
    const __m256i hi = _mm256_set1_epi32(p->qmax - p->out_zero);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256i xa =
            _mm256_sllv_epi32(_mm256_sub_epi32(load8_s8(a + i), za), ls);
        const __m256i xb =
            _mm256_sllv_epi32(_mm256_sub_epi32(load8_s8(b + i), zb), ls);
        const __m256i sum = _mm256_add_epi32(mbqm8(xa, am, zero, ar),
                                             mbqm8(xb, bm, zero, br));
        store8(out + i, mbqm8(sum, om, ol, orr), lo, hi, vzp);
    }
    if (i < n) {
        kern_q8s_add_c(n - i, a + i, b + i, p, out + i);
    }
}

/* The C reference's two fmas on 8 values at a time (vfmadd rounds once,
 * as fmaf), clamped in float, cvtps rounding half to even. */
void kern_q8s_addf_avx2(size_t n, const int8_t *a, const int8_t *b,
                        const struct kern_q8_addf_params *p, int8_t *out)
{
    const __m256 ra = _mm256_set1_ps(p->ra), rb = _mm256_set1_ps(p->rb);
    const __m256 fx = _mm256_set1_ps(p->fixed);
    const __m256i off = _mm256_set1_epi32(p->off);
    const __m256 lo = _mm256_set1_ps((float)(p->qmin + p->off));
    const __m256 hi = _mm256_set1_ps((float)(p->qmax + p->off));
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m256i r[2];
        for (int h = 0; h < 2; h++) {
            const size_t o = i + 8 * (size_t)h;
            const __m256i vb = _mm256_add_epi32(load8_s8(b + o), off);
            const __m256i va = _mm256_add_epi32(load8_s8(a + o), off);
            __m256 f = _mm256_fmadd_ps(_mm256_cvtepi32_ps(vb), rb, fx);
            f = _mm256_fmadd_ps(_mm256_cvtepi32_ps(va), ra, f);
            f = _mm256_min_ps(_mm256_max_ps(f, lo), hi);
            r[h] = _mm256_sub_epi32(_mm256_cvtps_epi32(f), off);
        }
        _mm_storeu_si128((__m128i *)(out + i), pack16(r[0], r[1]));
    }
    if (i < n) {
        kern_q8s_addf_c(n - i, a + i, b + i, p, out + i);
    }
}

void kern_q8s_rescale_avx2(size_t n, const int8_t *x, int32_t x_zero,
                           const struct kern_q8_rescale *r, int8_t *y)
{
    const __m256i zx = _mm256_set1_epi32(x_zero);
    const __m256i ls = _mm256_set1_epi32(r->left_shift);
    const __m256i m = _mm256_set1_epi32(r->mult);
    const __m256i sl = _mm256_set1_epi32(r->shift > 0 ? r->shift : 0);
    const __m256i sr = _mm256_set1_epi32(r->shift > 0 ? 0 : -r->shift);
    const __m256i vzp = _mm256_set1_epi32(r->out_zero);
    const __m256i lo = _mm256_set1_epi32(r->qmin - r->out_zero);
    const __m256i hi = _mm256_set1_epi32(r->qmax - r->out_zero);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256i d =
            _mm256_sllv_epi32(_mm256_sub_epi32(load8_s8(x + i), zx), ls);
        store8(y + i, mbqm8(d, m, sl, sr), lo, hi, vzp);
    }
    if (i < n) {
        kern_q8s_rescale_c(n - i, x + i, x_zero, r, y + i);
    }
}

/* ---- max pooling ---------------------------------------------------------- */

/* Max pooling a row at a time, with whole vectors along the row: the
 * maximum over the window's input rows goes into a padded row v (the
 * padding holds -128, int8's least, which wins no maximum: a window always
 * holds a real cell, and if all its cells are -128 so is the answer); then
 * h[j] = max over kx of v[j + kx] for every column j, and the output takes
 * every stride-th h (stride 1: all of them; stride 2: the even bytes,
 * packed two vectors at a time; else one by one). Max is exact, so the
 * bits are the C reference's. */
void kern_q8s_maxpool_avx2(const struct kern_pool2d_shape *s, size_t oh,
                           size_t ow, const int8_t *x, int8_t *y,
                           int8_t *scratch)
{
    const size_t ih = s->in_h, iw = s->in_w, kw = s->kw, sw = s->stride_w;
    const size_t wp = s->pad_left + iw + s->pad_right;
    /* layout of scratch (q8s_maxpool_scratch): v has wp + kw + 128 bytes,
     * h the same; columns j < nh = (ow - 1) sw + 1 of h are needed, and
     * computing them 32 at a time reads v up to nh + 31 + kw - 1 and
     * writes h up to nh + 31, both inside. The stride-2 packing reads h
     * below 2 ow. */
    const size_t vlen = wp + kw + 128;
    int8_t *v = scratch, *h = scratch + vlen;
    const size_t nh = (ow - 1) * sw + 1;
    memset(v, INT8_MIN, vlen);
    memset(h, INT8_MIN, vlen);
    int8_t *vr = v + s->pad_left;
    for (size_t p = 0; p < s->batch * s->channels; p++) {
        const int8_t *xp = x + p * ih * iw;
        int8_t *yp = y + p * oh * ow;
        for (size_t oy = 0; oy < oh; oy++) {
            size_t y0, y1;
            kern_pool_window(oy, s->stride_h, s->pad_top, s->kh, ih, &y0, &y1);
            /* v = column-wise max of rows [y0, y1) */
            size_t ix = 0;
            for (; ix + 32 <= iw; ix += 32) {
                __m256i m = _mm256_loadu_si256(
                    (const __m256i *)(xp + y0 * iw + ix));
                for (size_t iy = y0 + 1; iy < y1; iy++) {
                    m = _mm256_max_epi8(
                        m, _mm256_loadu_si256(
                               (const __m256i *)(xp + iy * iw + ix)));
                }
                _mm256_storeu_si256((__m256i *)(vr + ix), m);
            }
            for (; ix < iw; ix++) {
                int8_t m = xp[y0 * iw + ix];
                for (size_t iy = y0 + 1; iy < y1; iy++) {
                    const int8_t t = xp[iy * iw + ix];
                    m = t > m ? t : m;
                }
                vr[ix] = m;
            }
            /* h = row-wise max over the window's kw columns */
            for (size_t j = 0; j < nh; j += 32) {
                __m256i m = _mm256_loadu_si256((const __m256i *)(v + j));
                for (size_t kx = 1; kx < kw; kx++) {
                    m = _mm256_max_epi8(
                        m, _mm256_loadu_si256((const __m256i *)(v + j + kx)));
                }
                _mm256_storeu_si256((__m256i *)(h + j), m);
            }
            int8_t *yr = yp + oy * ow;
            if (sw == 1) {
                memcpy(yr, h, ow);
            } else if (sw == 2) {
                const __m256i lowb = _mm256_set1_epi16(0x00ff);
                size_t ox = 0;
                for (; ox + 32 <= ow; ox += 32) {
                    const __m256i a = _mm256_and_si256(
                        _mm256_loadu_si256((const __m256i *)(h + 2 * ox)),
                        lowb);
                    const __m256i b = _mm256_and_si256(
                        _mm256_loadu_si256(
                            (const __m256i *)(h + 2 * ox + 32)),
                        lowb);
                    /* the even bytes, as 0..255 words: packus keeps them;
                     * the lanes come out as a0 b0 a1 b1 */
                    const __m256i pk = _mm256_permute4x64_epi64(
                        _mm256_packus_epi16(a, b), 0xd8);
                    _mm256_storeu_si256((__m256i *)(yr + ox), pk);
                }
                for (; ox < ow; ox++) {
                    yr[ox] = h[2 * ox];
                }
            } else {
                for (size_t ox = 0; ox < ow; ox++) {
                    yr[ox] = h[ox * sw];
                }
            }
        }
    }
}

/* ---- global average pool's sums ------------------------------------------ */

/* 32 bytes at a time: x xor 0x80 is x + 128 as unsigned bytes, which
 * vpsadbw sums against zero in four 64-bit lanes; the sum of x is that
 * less 128 per value. The last r < 32 values: one more load of 32 with
 * the lanes from r on zeroed after the xor, when those 32 bytes end
 * within the last plane's values (short planes, such as MobileNet's 3 x 3,
 * are mostly that); else a byte at a time. */
void kern_q8s_plane_sum_avx2(size_t planes, size_t n, size_t ld,
                             const int8_t *x, int32_t *sums)
{
    const __m256i flip = _mm256_set1_epi8((char)0x80);
    const __m256i zero = _mm256_setzero_si256();
    const __m256i lane = _mm256_setr_epi8(
        0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19,
        20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31);
    const size_t r = n % 32, n32 = n - r;
    /* lanes below r kept: r > lane */
    const __m256i keep = _mm256_cmpgt_epi8(_mm256_set1_epi8((char)r), lane);
    const size_t end = planes ? (planes - 1) * ld + n : 0;
    for (size_t p = 0; p < planes; p++) {
        const int8_t *xp = x + p * ld;
        __m256i acc = zero;
        for (size_t i = 0; i < n32; i += 32) {
            const __m256i v = _mm256_xor_si256(
                _mm256_loadu_si256((const __m256i *)(const void *)(xp + i)),
                flip);
            acc = _mm256_add_epi64(acc, _mm256_sad_epu8(v, zero));
        }
        int64_t s = -128 * (int64_t)n32;
        if (r && p * ld + n32 + 32 <= end) {
            const __m256i v = _mm256_and_si256(
                _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)(
                                     const void *)(xp + n32)),
                                 flip),
                keep);
            acc = _mm256_add_epi64(acc, _mm256_sad_epu8(v, zero));
            s -= 128 * (int64_t)r;
        } else {
            for (size_t i = n32; i < n; i++) {
                s += xp[i];
            }
        }
        const __m128i h = _mm_add_epi64(_mm256_castsi256_si128(acc),
                                        _mm256_extracti128_si256(acc, 1));
        s += _mm_cvtsi128_si64(h) + _mm_extract_epi64(h, 1);
        sums[p] = (int32_t)s;
    }
}

/* ---- depthwise convolution ------------------------------------------------ */

enum { DW_MAX_TAPS = 64 };

/* 16 int8 of one tap as int16 minus the zero point: stride 1 reads 16
 * consecutive bytes; stride 2 reads 32 and keeps the even ones, sign
 * extended by a shift up and an arithmetic shift down (in order: the low
 * lane holds outputs 0..7, the high lane 8..15). */
static inline __m256i dw_load16(const int8_t *p, size_t sw, __m256i zp16)
{
    __m256i v;
    if (sw == 1) {
        v = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)p));
    } else {
        v = _mm256_srai_epi16(
            _mm256_slli_epi16(_mm256_loadu_si256((const __m256i *)p), 8), 8);
    }
    return _mm256_sub_epi16(v, zp16);
}

/* The C reference's output stage on 8 int32 sums of one channel, then
 * the zero point added after the clamp (as store8). fl: the float stage
 * (struct kern_q8_outstage's scale), m then holds the scales' bits (see
 * dw_mult) and lo, hi as integers convert exactly. fl is the same for a
 * whole call, so the branch is always predicted. */
static inline __m256i dw_requant8(__m256i acc, __m256i add, __m256i m,
                                  __m256i ls, __m256i rs, __m256i lo,
                                  __m256i hi, __m256i zp, int fl)
{
    if (fl) {
        return requantf8(acc, add, _mm256_castsi256_ps(m),
                         _mm256_cvtepi32_ps(lo), _mm256_cvtepi32_ps(hi), zp);
    }
    const __m256i r = mbqm8(_mm256_add_epi32(acc, add), m, ls, rs);
    return _mm256_add_epi32(_mm256_min_epi32(_mm256_max_epi32(r, lo), hi),
                            zp);
}

/* The multiplier of channel pc as dw_requant8 takes it: the fixed-point
 * one, or the float stage's scale as its bits. */
static inline int32_t dw_mult(const struct kern_q8_outstage *os, size_t pc)
{
    if (os->scale) {
        int32_t b;
        memcpy(&b, &os->scale[pc], sizeof b);
        return b;
    }
    return os->mult[pc];
}

/* The shift of channel pc (0 for the float stage, which has none). */
static inline int dw_shift(const struct kern_q8_outstage *os, size_t pc)
{
    return os->scale ? 0 : os->shift[pc];
}

/* n bytes from src to dst: the rows of small maps are a few bytes, where
 * a call to memcpy costs more than the copy; 16 at a time beyond, the last
 * 16 overlapping. */
static inline void copy_small(int8_t *dst, const int8_t *src, size_t n)
{
    if (n < 16) {
        for (size_t i = 0; i < n; i++) {
            dst[i] = src[i];
        }
        return;
    }
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        _mm_storeu_si128((__m128i *)(dst + i),
                         _mm_loadu_si128((const __m128i *)(src + i)));
    }
    if (i < n) {
        _mm_storeu_si128((__m128i *)(dst + n - 16),
                         _mm_loadu_si128((const __m128i *)(src + n - 16)));
    }
}

/* 16 outputs of one channel from bx (the first output's window start in
 * the padded plane): the taps two at a time through vpmaddwd, then the
 * output stage; 16 bytes in order. */
static inline __m128i dw_block16(const int8_t *bx, const size_t *off,
                                 size_t npair, const __m256i *wp, size_t sw,
                                 __m256i zp16, __m256i add, __m256i m,
                                 __m256i ls, __m256i rs, __m256i lo,
                                 __m256i hi, __m256i vzp, int fl)
{
    __m256i alo = _mm256_setzero_si256();
    __m256i ahi = _mm256_setzero_si256();
    for (size_t p = 0; p < npair; p++) {
        const __m256i xa = dw_load16(bx + off[2 * p], sw, zp16);
        const __m256i xb = dw_load16(bx + off[2 * p + 1], sw, zp16);
        alo = _mm256_add_epi32(
            alo, _mm256_madd_epi16(_mm256_unpacklo_epi16(xa, xb), wp[p]));
        ahi = _mm256_add_epi32(
            ahi, _mm256_madd_epi16(_mm256_unpackhi_epi16(xa, xb), wp[p]));
    }
    const __m256i rlo = dw_requant8(alo, add, m, ls, rs, lo, hi, vzp, fl);
    const __m256i rhi = dw_requant8(ahi, add, m, ls, rs, lo, hi, vzp, fl);
    const __m256i w16 = _mm256_packs_epi32(rlo, rhi);
    const __m256i b8 =
        _mm256_permute4x64_epi64(_mm256_packs_epi16(w16, w16), 0x08);
    return _mm256_castsi256_si128(b8);
}

/* The stride-1 path with the plane held as int16 differences (x - x_zero,
 * the border 0), so that two taps side by side in a row are one load:
 * the 16 int16 from q + off are the pairs (x[q + off + 2i], x[q + off +
 * 2i + 1]), which vpmaddwd with the weights (w[kx], w[kx + 1]) sums into
 * output q + 2i; the load from one further gives the odd outputs. A row's
 * odd last tap pairs with weight 0. Even and odd sums go through the
 * output stage apart and are interleaved as int16 (e | o << 16: outputs
 * q..q+15 in order). The sums are the C reference's, exactly. */
static void dw_flat16(const struct kern_dwconv2d_shape *s, size_t oh,
                      size_t ow, const int8_t *x, int32_t x_zero,
                      const int8_t *w, const struct kern_q8_outstage *os,
                      int8_t *y, int8_t *scratch)
{
    const size_t dh = s->dilation_h ? s->dilation_h : 1;
    const size_t ih = s->in_h, iw = s->in_w, ch = s->channels;
    const size_t kh = s->kh, kw = s->kw, taps = kh * kw;
    const int fl = os->scale != NULL;
    const size_t pw = s->pad_left + iw + s->pad_right;
    const size_t rows = s->pad_top + ih + s->pad_bottom;
    const size_t plane = rows * pw + 64; /* reads reach rows pw + 15 */
    int16_t *d = (int16_t *)(void *)scratch;
    int8_t *vout = scratch + 2 * plane;
    const size_t nq = (oh - 1) * pw + ow;
    memset(d, 0, 2 * plane);
    /* pairs: (ky, kx) with kx even; offsets and weights per channel */
    size_t off[DW_MAX_TAPS];
    size_t np = 0;
    for (size_t ky = 0; ky < kh; ky++) {
        for (size_t kx = 0; kx < kw; kx += 2) {
            off[np++] = ky * dh * pw + kx;
        }
    }
    const __m128i zp8 = _mm_set1_epi16((short)x_zero);
    const __m256i zp = _mm256_set1_epi32(os->zero_point);
    const __m256i lo = _mm256_set1_epi32(os->qmin - os->zero_point);
    const __m256i hi = _mm256_set1_epi32(os->qmax - os->zero_point);
    const __m256i low16 = _mm256_set1_epi32(0xffff);
    __m256i wp[DW_MAX_TAPS];
    for (size_t b = 0; b < s->batch; b++) {
        for (size_t c = 0; c < ch; c++) {
            const int8_t *xp = x + (b * ch + c) * ih * iw;
            int8_t *yp = y + (b * ch + c) * oh * ow;
            for (size_t iy = 0; iy < ih; iy++) {
                int16_t *dr = d + (s->pad_top + iy) * pw + s->pad_left;
                const int8_t *xr = xp + iy * iw;
                size_t i = 0;
                for (; i + 8 <= iw; i += 8) {
                    _mm_storeu_si128(
                        (__m128i *)(dr + i),
                        _mm_sub_epi16(_mm_cvtepi8_epi16(_mm_loadl_epi64(
                                          (const __m128i *)(xr + i))),
                                      zp8));
                }
                for (; i < iw; i++) {
                    dr[i] = (int16_t)(xr[i] - x_zero);
                }
            }
            const int8_t *wc = w + c * taps;
            size_t p = 0;
            for (size_t ky = 0; ky < kh; ky++) {
                for (size_t kx = 0; kx < kw; kx += 2, p++) {
                    const uint16_t wa = (uint16_t)(int16_t)wc[ky * kw + kx];
                    const uint16_t wb =
                        kx + 1 < kw ? (uint16_t)(int16_t)wc[ky * kw + kx + 1]
                                    : 0;
                    wp[p] = _mm256_set1_epi32((int32_t)((uint32_t)wa |
                                                        ((uint32_t)wb << 16)));
                }
            }
            const size_t pc = os->per_channel ? c : 0;
            const int sh = dw_shift(os, pc);
            const __m256i add = _mm256_set1_epi32(os->bias ? os->bias[c] : 0);
            const __m256i m = _mm256_set1_epi32(dw_mult(os, pc));
            const __m256i ls = _mm256_set1_epi32(sh > 0 ? sh : 0);
            const __m256i rs = _mm256_set1_epi32(sh > 0 ? 0 : -sh);
            for (size_t q = 0; q < nq; q += 16) {
                __m256i ae = _mm256_setzero_si256();
                __m256i ao = _mm256_setzero_si256();
                for (size_t k = 0; k < np; k++) {
                    const int16_t *src = d + q + off[k];
                    ae = _mm256_add_epi32(
                        ae, _mm256_madd_epi16(
                                _mm256_loadu_si256((const __m256i *)src),
                                wp[k]));
                    ao = _mm256_add_epi32(
                        ao, _mm256_madd_epi16(
                                _mm256_loadu_si256(
                                    (const __m256i *)(src + 1)),
                                wp[k]));
                }
                const __m256i re =
                    dw_requant8(ae, add, m, ls, rs, lo, hi, zp, fl);
                const __m256i ro =
                    dw_requant8(ao, add, m, ls, rs, lo, hi, zp, fl);
                const __m256i v = _mm256_or_si256(
                    _mm256_and_si256(re, low16), _mm256_slli_epi32(ro, 16));
                const __m256i b8 =
                    _mm256_permute4x64_epi64(_mm256_packs_epi16(v, v), 0x08);
                _mm_storeu_si128((__m128i *)(vout + q),
                                 _mm256_castsi256_si128(b8));
            }
            for (size_t oy = 0; oy < oh; oy++) {
                copy_small(yp + oy * ow, vout + oy * pw, ow);
            }
        }
    }
}

/* Narrow maps (out_w < 16), channels 16 at a time: a row of 16 outputs
 * of one channel would waste most lanes on DS-CNN's 5 columns or
 * MobileNet's 6 and 3. Per image and block of 16 channels, the block is
 * transposed to channel-last (16 bytes a pixel) and widened into a padded
 * plane of int16 (x - x_zero), the border 0 (a padded tap adds 0, as the
 * C reference's skipped taps). An output pixel is then 16 channels' sums
 * in two vectors: the taps go two at a time, the 16-channel vectors of
 * the two taps interleaved by vpunpck{l,h}wd and multiplied by the
 * weights interleaved alike (vpmaddwd: each product fits int16 x int16,
 * the pair's sum is exact in int32, and so the sum over taps is the C
 * reference's, |acc| <= 255 128 taps < 2^31). The unpacks leave channels
 * 0-3 and 8-11 in one sum, 4-7 and 12-15 in the other, which two lane
 * permutes put in order before the output stage with per-channel vectors
 * (dw_requant8: the same bits). The 16 bytes of each pixel are
 * transposed back to NCHW planes. Any stride and dilation: the window of
 * an output is a set of pixel offsets in the padded plane. Lanes past
 * the last channel compute on stale data and are not stored. */
static void dw_chan16(const struct kern_dwconv2d_shape *s, size_t oh,
                      size_t ow, const int8_t *x, int32_t x_zero,
                      const int8_t *w, const struct kern_q8_outstage *os,
                      int8_t *y, int8_t *scratch)
{
    const size_t ih = s->in_h, iw = s->in_w, ch = s->channels;
    const size_t taps = s->kh * s->kw;
    const int fl = os->scale != NULL;
    const size_t ip = ih * iw, op = oh * ow;
    const size_t pw = s->pad_left + iw + s->pad_right;
    const size_t rows = s->pad_top + ih + s->pad_bottom;
    /* q8s_dwconv_scratch: 32 bytes a padded pixel for the int16 plane,
     * then 16 a pixel shared by the input's and the output's transposes
     * (ip and op are both at most rows * pw) */
    int16_t *d = (int16_t *)(void *)scratch;
    int8_t *tb = scratch + 32 * rows * pw;
    memset(d, 0, 32 * rows * pw);
    memset(tb, 0, 16 * ip);
    const size_t npair = (taps + 1) / 2;
    size_t off[DW_MAX_TAPS + 1];
    q8s_dw_tap_offsets(s, pw, 16, off);
    const __m256i zp16 = _mm256_set1_epi16((short)x_zero);
    const __m256i vzp = _mm256_set1_epi32(os->zero_point);
    const __m256i lo = _mm256_set1_epi32(os->qmin - os->zero_point);
    const __m256i hi = _mm256_set1_epi32(os->qmax - os->zero_point);
    __m256i wlo[DW_MAX_TAPS / 2], whi[DW_MAX_TAPS / 2];
    int32_t add[16], mult[16], lsh[16], rsh[16];
    int16_t wa[16], wb[16];
    for (size_t b = 0; b < s->batch; b++) {
        for (size_t c0 = 0; c0 < ch; c0 += 16) {
            const size_t cb = ch - c0 < 16 ? ch - c0 : 16;
            /* tb[i][j] = x[b][c0 + j][i], then the padded int16 plane */
            kern_q8s_transpose_avx2(cb, ip, x + (b * ch + c0) * ip, ip, tb,
                                    16);
            for (size_t iy = 0; iy < ih; iy++) {
                int16_t *dr = d + 16 * ((s->pad_top + iy) * pw + s->pad_left);
                const int8_t *tr = tb + 16 * iy * iw;
                for (size_t i = 0; i < iw; i++) {
                    _mm256_storeu_si256(
                        (__m256i *)(dr + 16 * i),
                        _mm256_sub_epi16(
                            _mm256_cvtepi8_epi16(_mm_loadu_si128(
                                (const __m128i *)(tr + 16 * i))),
                            zp16));
                }
            }
            for (size_t p = 0; p < npair; p++) {
                for (size_t j = 0; j < 16; j++) {
                    const int8_t *wc = w + (c0 + (j < cb ? j : 0)) * taps;
                    wa[j] = j < cb ? wc[2 * p] : 0;
                    wb[j] = j < cb && 2 * p + 1 < taps ? wc[2 * p + 1] : 0;
                }
                const __m256i va = _mm256_loadu_si256((const __m256i *)wa);
                const __m256i vb = _mm256_loadu_si256((const __m256i *)wb);
                wlo[p] = _mm256_unpacklo_epi16(va, vb);
                whi[p] = _mm256_unpackhi_epi16(va, vb);
            }
            for (size_t j = 0; j < 16; j++) {
                const size_t c = c0 + (j < cb ? j : 0);
                const size_t pc = os->per_channel ? c : 0;
                const int sh = dw_shift(os, pc);
                add[j] = os->bias ? os->bias[c] : 0;
                mult[j] = dw_mult(os, pc);
                lsh[j] = sh > 0 ? sh : 0;
                rsh[j] = sh > 0 ? 0 : -sh;
            }
            const __m256i add0 = _mm256_loadu_si256((const __m256i *)add);
            const __m256i add1 = _mm256_loadu_si256((const __m256i *)(add + 8));
            const __m256i m0 = _mm256_loadu_si256((const __m256i *)mult);
            const __m256i m1 = _mm256_loadu_si256((const __m256i *)(mult + 8));
            const __m256i l0 = _mm256_loadu_si256((const __m256i *)lsh);
            const __m256i l1 = _mm256_loadu_si256((const __m256i *)(lsh + 8));
            const __m256i r0 = _mm256_loadu_si256((const __m256i *)rsh);
            const __m256i r1 = _mm256_loadu_si256((const __m256i *)(rsh + 8));
            for (size_t oy = 0; oy < oh; oy++) {
                for (size_t ox = 0; ox < ow; ox++) {
                    const int16_t *base =
                        d + 16 * (oy * s->stride_h * pw + ox * s->stride_w);
                    __m256i al = _mm256_setzero_si256();
                    __m256i ah = _mm256_setzero_si256();
                    for (size_t p = 0; p < npair; p++) {
                        const __m256i xa = _mm256_loadu_si256(
                            (const __m256i *)(base + off[2 * p]));
                        const __m256i xb = _mm256_loadu_si256(
                            (const __m256i *)(base + off[2 * p + 1]));
                        al = _mm256_add_epi32(
                            al, _mm256_madd_epi16(
                                    _mm256_unpacklo_epi16(xa, xb), wlo[p]));
                        ah = _mm256_add_epi32(
                            ah, _mm256_madd_epi16(
                                    _mm256_unpackhi_epi16(xa, xb), whi[p]));
                    }
                    const __m256i a0 = _mm256_permute2x128_si256(al, ah, 0x20);
                    const __m256i a1 = _mm256_permute2x128_si256(al, ah, 0x31);
                    _mm_storeu_si128(
                        (__m128i *)(tb + 16 * (oy * ow + ox)),
                        pack16(dw_requant8(a0, add0, m0, l0, r0, lo, hi, vzp,
                                           fl),
                               dw_requant8(a1, add1, m1, l1, r1, lo, hi,
                                           vzp, fl)));
                }
            }
            kern_q8s_transpose_avx2(op, cb, tb, 16, y + (b * ch + c0) * op,
                                    op);
        }
    }
}

/* Depthwise int8 convolution, 16 outputs at a time. Each channel is
 * copied into a plane padded with the zero point (so a padded tap adds
 * (x_zero - x_zero) w = 0, as the C reference's skipped taps), then the
 * taps go two at a time through vpmaddwd: (x - x_zero) is within
 * [-255, 255] and w within [-128, 127], so each product fits int16 and
 * the pair's sum is exact in int32; the sum over taps is the C
 * reference's exactly (|acc| <= 255 128 taps < 2^31), and so are the
 * output stage's bits. The unpacks put outputs 0-3 and 8-11 in the low
 * sums, 4-7 and 12-15 in the high ones, which packs_epi32 puts back in
 * order.
 *
 * Maps narrower than 16 outputs with 8 channels or more (DS-CNN's 5
 * columns, MobileNet's 12, 6, 3) run dw_chan16, 16 channels at a time.
 * Stride 1 both ways: the plane is stored at its padded width pw and the
 * outputs run along the flattened plane, output q = oy pw + ox reading
 * from q; the columns ox >= out_w are computed and dropped, so a narrow
 * map with few channels fills whole vectors across its rows. Other strides: a row at a time, stride 2 along the row
 * taking the even bytes. Strides above 2 along the row, and more than 64
 * taps, run the C reference. */
void kern_q8s_dwconv_avx2(const struct kern_dwconv2d_shape *s, size_t oh,
                          size_t ow, const int8_t *x, int32_t x_zero,
                          const int8_t *w, const struct kern_q8_outstage *os,
                          int8_t *y, int8_t *scratch)
{
    const size_t taps = s->kh * s->kw, sw = s->stride_w;
    /* narrow maps run 16 channels at a time, unless fewer than 8 channels
     * would fill less than half of the lanes and the flattened stride-1
     * plane below (which fills whole vectors across rows) applies */
    const bool flat1 = sw == 1 && s->stride_h == 1 &&
                       (s->dilation_w ? s->dilation_w : 1) == 1;
    if (ow < 16 && taps <= DW_MAX_TAPS && (s->channels >= 8 || !flat1)) {
        dw_chan16(s, oh, ow, x, x_zero, w, os, y, scratch);
        return;
    }
    if ((sw != 1 && sw != 2) || taps > DW_MAX_TAPS) {
        kern_q8s_dwconv_c(s, oh, ow, x, x_zero, w, os, y, scratch);
        return;
    }
    const size_t dw = s->dilation_w ? s->dilation_w : 1;
    const size_t ih = s->in_h, iw = s->in_w, ch = s->channels;
    const bool flat = sw == 1 && s->stride_h == 1;
    if (flat && dw == 1) {
        dw_flat16(s, oh, ow, x, x_zero, w, os, y, scratch);
        return;
    }
    const size_t pw = s->pad_left + iw + s->pad_right;
    const size_t row = flat ? pw
                            : q8s_dwconv_row(s->pad_left, iw, s->pad_right,
                                             s->kw, s->dilation_w);
    const size_t rows = s->pad_top + ih + s->pad_bottom;
    /* flat: the outputs on the padded width go after the plane and its
     * 64 bytes of slack (the last vector reads up to 15 bytes past the
     * plane); q8s_dwconv_scratch holds both */
    int8_t *vout = scratch + rows * row + 64;
    const size_t nq = (oh - 1) * pw + ow;
    /* the border keeps the zero point for every channel: only the
     * interior is copied per channel */
    memset(scratch, (int)(int8_t)x_zero, rows * row + 64);
    const size_t npair = (taps + 1) / 2;
    const int fl = os->scale != NULL;
    size_t off[DW_MAX_TAPS + 1];
    q8s_dw_tap_offsets(s, row, 1, off);
    const __m256i zp16 = _mm256_set1_epi16((short)x_zero);
    const __m256i vzp = _mm256_set1_epi32(os->zero_point);
    const __m256i lo = _mm256_set1_epi32(os->qmin - os->zero_point);
    const __m256i hi = _mm256_set1_epi32(os->qmax - os->zero_point);
    __m256i wp[DW_MAX_TAPS / 2];
    int8_t tail[16];
    for (size_t b = 0; b < s->batch; b++) {
        for (size_t c = 0; c < ch; c++) {
            const int8_t *xp = x + (b * ch + c) * ih * iw;
            int8_t *yp = y + (b * ch + c) * oh * ow;
            for (size_t iy = 0; iy < ih; iy++) {
                copy_small(scratch + (s->pad_top + iy) * row + s->pad_left,
                           xp + iy * iw, iw);
            }
            const int8_t *wc = w + c * taps;
            for (size_t p = 0; p < npair; p++) {
                const uint16_t wa = (uint16_t)(int16_t)wc[2 * p];
                const uint16_t wb =
                    2 * p + 1 < taps ? (uint16_t)(int16_t)wc[2 * p + 1] : 0;
                wp[p] = _mm256_set1_epi32((int32_t)((uint32_t)wa |
                                                    ((uint32_t)wb << 16)));
            }
            const size_t pc = os->per_channel ? c : 0;
            const int sh = dw_shift(os, pc);
            const __m256i add = _mm256_set1_epi32(os->bias ? os->bias[c] : 0);
            const __m256i m = _mm256_set1_epi32(dw_mult(os, pc));
            const __m256i ls = _mm256_set1_epi32(sh > 0 ? sh : 0);
            const __m256i rs = _mm256_set1_epi32(sh > 0 ? 0 : -sh);
            if (flat) {
                for (size_t q = 0; q < nq; q += 16) {
                    _mm_storeu_si128(
                        (__m128i *)(vout + q),
                        dw_block16(scratch + q, off, npair, wp, 1, zp16, add,
                                   m, ls, rs, lo, hi, vzp, fl));
                }
                for (size_t oy = 0; oy < oh; oy++) {
                    copy_small(yp + oy * ow, vout + oy * pw, ow);
                }
                continue;
            }
            for (size_t oy = 0; oy < oh; oy++) {
                const int8_t *base = scratch + oy * s->stride_h * row;
                int8_t *yr = yp + oy * ow;
                for (size_t ox = 0; ox < ow; ox += 16) {
                    const __m128i out =
                        dw_block16(base + ox * sw, off, npair, wp, sw, zp16,
                                   add, m, ls, rs, lo, hi, vzp, fl);
                    if (ox + 16 <= ow) {
                        _mm_storeu_si128((__m128i *)(yr + ox), out);
                    } else {
                        _mm_storeu_si128((__m128i *)tail, out);
                        memcpy(yr + ox, tail, ow - ox);
                    }
                }
            }
        }
    }
}
