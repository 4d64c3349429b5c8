/* AVX2 output stage and int8 add of the static int8 family: eight int32
 * lanes at a time, the same integer operations as the C reference (so the
 * same bits); tails shorter than eight run the C reference. */
#include <immintrin.h>

#include "q8s.h"

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
