/* float <-> fp16/bf16 with AVX-512 (F, BW, VL): 512-bit vcvtps2ph and
 * vcvtph2ps with masked tails, and integer round-to-nearest-even for bf16.
 * AVX512_BF16's conversion flushes float subnormals to zero, so
 * cvt_avx512bf16.c uses it only for blocks without subnormals and falls
 * back to kern_f32_to_bf16_avx512 for the others. */
#include <immintrin.h>
#include <stdint.h>

#include "cvt.h"

static inline __mmask16 tail16(size_t rest)
{
    return (__mmask16)((1u << rest) - 1u);
}

void kern_f32_to_f16_avx512(uint16_t *dst, const float *src, size_t n)
{
    size_t i = 0;
    for (; i + 32 <= n; i += 32) {
        const __m512 a = _mm512_loadu_ps(src + i);
        const __m512 b = _mm512_loadu_ps(src + i + 16);
        _mm256_storeu_si256((__m256i *)(void *)(dst + i),
                            _mm512_cvtps_ph(a, _MM_FROUND_TO_NEAREST_INT));
        _mm256_storeu_si256((__m256i *)(void *)(dst + i + 16),
                            _mm512_cvtps_ph(b, _MM_FROUND_TO_NEAREST_INT));
    }
    for (; i < n; i += 16) {
        const size_t rest = n - i < 16 ? n - i : 16;
        const __mmask16 m = tail16(rest);
        const __m512 a = _mm512_maskz_loadu_ps(m, src + i);
        _mm256_mask_storeu_epi16(dst + i, m,
                                 _mm512_cvtps_ph(a, _MM_FROUND_TO_NEAREST_INT));
    }
}

void kern_f16_to_f32_avx512(float *dst, const uint16_t *src, size_t n)
{
    size_t i = 0;
    for (; i + 32 <= n; i += 32) {
        const __m256i a =
            _mm256_loadu_si256((const __m256i *)(const void *)(src + i));
        const __m256i b =
            _mm256_loadu_si256((const __m256i *)(const void *)(src + i + 16));
        _mm512_storeu_ps(dst + i, _mm512_cvtph_ps(a));
        _mm512_storeu_ps(dst + i + 16, _mm512_cvtph_ps(b));
    }
    for (; i < n; i += 16) {
        const size_t rest = n - i < 16 ? n - i : 16;
        const __mmask16 m = tail16(rest);
        const __m256i a = _mm256_maskz_loadu_epi16(m, src + i);
        _mm512_mask_storeu_ps(dst + i, m, _mm512_cvtph_ps(a));
    }
}

/* Round-to-nearest-even on the float bits, the bf16 result in the high
 * half of each lane; NaN lanes are quietened instead (rounding could carry
 * a payload into the exponent or the sign). */
static inline __m512i bf16_round_hi(__m512 f)
{
    const __m512i x = _mm512_castps_si512(f);
    const __m512i lsb =
        _mm512_and_si512(_mm512_srli_epi32(x, 16), _mm512_set1_epi32(1));
    const __m512i r =
        _mm512_add_epi32(_mm512_add_epi32(x, _mm512_set1_epi32(0x7fff)), lsb);
    const __mmask16 nan = _mm512_cmp_ps_mask(f, f, _CMP_UNORD_Q);
    return _mm512_mask_or_epi32(r, nan, x, _mm512_set1_epi32(0x00400000));
}

/* The high halves of 32 lanes, a's then b's, in one vector. */
static inline __m512i pack_hi(__m512i a, __m512i b)
{
    const __m512i odd = _mm512_set_epi16(
        63, 61, 59, 57, 55, 53, 51, 49, 47, 45, 43, 41, 39, 37, 35, 33, 31,
        29, 27, 25, 23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1);
    return _mm512_permutex2var_epi16(a, odd, b);
}

void kern_f32_to_bf16_avx512(uint16_t *dst, const float *src, size_t n)
{
    size_t i = 0;
    for (; i + 32 <= n; i += 32) {
        const __m512i p = pack_hi(bf16_round_hi(_mm512_loadu_ps(src + i)),
                                  bf16_round_hi(_mm512_loadu_ps(src + i + 16)));
        _mm512_storeu_si512(dst + i, p);
    }
    for (; i < n; i += 16) {
        const size_t rest = n - i < 16 ? n - i : 16;
        const __mmask16 m = tail16(rest);
        const __m512i r = bf16_round_hi(_mm512_maskz_loadu_ps(m, src + i));
        const __m256i h = _mm512_cvtepi32_epi16(_mm512_srli_epi32(r, 16));
        _mm256_mask_storeu_epi16(dst + i, m, h);
    }
}

void kern_bf16_to_f32_avx512(float *dst, const uint16_t *src, size_t n)
{
    size_t i = 0;
    for (; i + 32 <= n; i += 32) {
        const __m256i a =
            _mm256_loadu_si256((const __m256i *)(const void *)(src + i));
        const __m256i b =
            _mm256_loadu_si256((const __m256i *)(const void *)(src + i + 16));
        _mm512_storeu_si512(dst + i,
                            _mm512_slli_epi32(_mm512_cvtepu16_epi32(a), 16));
        _mm512_storeu_si512(dst + i + 16,
                            _mm512_slli_epi32(_mm512_cvtepu16_epi32(b), 16));
    }
    for (; i < n; i += 16) {
        const size_t rest = n - i < 16 ? n - i : 16;
        const __mmask16 m = tail16(rest);
        const __m256i a = _mm256_maskz_loadu_epi16(m, src + i);
        const __m512i w = _mm512_slli_epi32(_mm512_cvtepu16_epi32(a), 16);
        _mm512_mask_storeu_ps(dst + i, m, _mm512_castsi512_ps(w));
    }
}
