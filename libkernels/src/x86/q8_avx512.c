/* AVX-512 element-wise kernels of the q8 family: the same operations in
 * the same order as the C references (true division, round half to even,
 * clamping before rounding, separate multiply and add), so results are
 * bit-identical. */
#include <immintrin.h>

#include "q8.h"

static inline __mmask16 tail_mask(size_t left)
{
    return left >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << left) - 1);
}

uint32_t kern_q8_absmax_avx512(const float *x, size_t n)
{
    const __m512i abs = _mm512_set1_epi32(0x7fffffff);
    __m512i best = _mm512_setzero_si512();
    for (size_t i = 0; i < n; i += 16) {
        const __m512i v =
            _mm512_maskz_loadu_epi32(tail_mask(n - i), (const int *)(x + i));
        best = _mm512_max_epu32(best, _mm512_and_si512(v, abs));
    }
    return (uint32_t)_mm512_reduce_max_epu32(best);
}

/* Quantise 16 values already divided by the scale. */
static inline __m512i quant16(__m512 v)
{
    const __mmask16 ord = _mm512_cmp_ps_mask(v, v, _CMP_ORD_Q);
    v = _mm512_min_ps(_mm512_max_ps(v, _mm512_set1_ps(-127.0f)),
                      _mm512_set1_ps(127.0f));
    v = _mm512_roundscale_ps(v, _MM_FROUND_TO_NEAREST_INT |
                                    _MM_FROUND_NO_EXC);
    return _mm512_maskz_cvtps_epi32(ord, v);
}

void kern_q8_quant_avx512(const float *x, size_t n, float scale, int8_t *dst)
{
    const __m512 s = _mm512_set1_ps(scale);
    for (size_t i = 0; i < n; i += 16) {
        const __mmask16 m = tail_mask(n - i);
        const __m512 v = _mm512_div_ps(_mm512_maskz_loadu_ps(m, x + i), s);
        _mm512_mask_cvtsepi32_storeu_epi8(dst + i, m, quant16(v));
    }
}

void kern_q8_dequant_avx512(const int8_t *q, size_t n, float scale,
                            float *dst)
{
    const __m512 s = _mm512_set1_ps(scale);
    for (size_t i = 0; i < n; i += 16) {
        const __mmask16 m = tail_mask(n - i);
        const __m128i b = _mm_maskz_loadu_epi8(m, q + i);
        const __m512 v = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(b));
        _mm512_mask_storeu_ps(dst + i, m, _mm512_mul_ps(v, s));
    }
}

/* y = (float)acc * (a_scale * w_scale) + bias, relu keeping NaN. */
static inline __m512 requant16(__mmask16 m, const int32_t *acc, __m512 as,
                               const float *ws, const float *bias, int relu)
{
    const __m512 mul = _mm512_mul_ps(as, _mm512_maskz_loadu_ps(m, ws));
    const __m512i a = _mm512_maskz_loadu_epi32(m, acc);
    __m512 y = _mm512_mul_ps(_mm512_cvtepi32_ps(a), mul);
    if (bias) {
        y = _mm512_add_ps(y, _mm512_maskz_loadu_ps(m, bias));
    }
    if (relu) {
        const __mmask16 keep =
            _mm512_cmp_ps_mask(y, _mm512_setzero_ps(), _CMP_GT_OQ) |
            _mm512_cmp_ps_mask(y, y, _CMP_UNORD_Q);
        y = _mm512_maskz_mov_ps(keep, y);
    }
    return y;
}

void kern_q8_requant_f32_avx512(size_t n, const int32_t *acc, float a_scale,
                                const float *w_scales, const float *bias,
                                int relu, float *y)
{
    const __m512 as = _mm512_set1_ps(a_scale);
    for (size_t j = 0; j < n; j += 16) {
        const __mmask16 m = tail_mask(n - j);
        const __m512 v = requant16(m, acc + j, as, w_scales + j,
                                   bias ? bias + j : NULL, relu);
        _mm512_mask_storeu_ps(y + j, m, v);
    }
}

void kern_q8_requant_s8_avx512(size_t n, const int32_t *acc, float a_scale,
                               const float *w_scales, const float *bias,
                               int relu, float out_scale, int8_t *q)
{
    const __m512 as = _mm512_set1_ps(a_scale);
    const __m512 os = _mm512_set1_ps(out_scale);
    for (size_t j = 0; j < n; j += 16) {
        const __mmask16 m = tail_mask(n - j);
        const __m512 v = requant16(m, acc + j, as, w_scales + j,
                                   bias ? bias + j : NULL, relu);
        _mm512_mask_cvtsepi32_storeu_epi8(q + j, m,
                                          quant16(_mm512_div_ps(v, os)));
    }
}
