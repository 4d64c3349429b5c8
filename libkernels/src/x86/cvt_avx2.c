/* float <-> fp16/bf16 with F16C and AVX2.
 *
 * vcvtps2ph with an immediate rounding mode (nearest even) ignores MXCSR.RC
 * and produces exactly the C reference's bits, NaNs included (quietened,
 * sign and top payload bits kept); vcvtph2ps is exact. bf16 has no AVX2
 * instruction: integer round-to-nearest-even on the float bits, with NaN
 * lanes quietened instead of rounded (rounding could carry a NaN's payload
 * into the exponent or the sign). */
#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include "cvt.h"

void kern_f32_to_f16_avx2(uint16_t *dst, const float *src, size_t n)
{
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        const __m256 a = _mm256_loadu_ps(src + i);
        const __m256 b = _mm256_loadu_ps(src + i + 8);
        const __m128i ha = _mm256_cvtps_ph(a, _MM_FROUND_TO_NEAREST_INT);
        const __m128i hb = _mm256_cvtps_ph(b, _MM_FROUND_TO_NEAREST_INT);
        _mm_storeu_si128((__m128i *)(void *)(dst + i), ha);
        _mm_storeu_si128((__m128i *)(void *)(dst + i + 8), hb);
    }
    if (i < n) {
        /* Partial epilogue through a stack buffer: at most 15 elements. */
        float in[16] = {0};
        uint16_t out[16];
        const size_t rest = n - i;
        memcpy(in, src + i, rest * sizeof *in);
        const __m128i ha =
            _mm256_cvtps_ph(_mm256_loadu_ps(in), _MM_FROUND_TO_NEAREST_INT);
        const __m128i hb = _mm256_cvtps_ph(_mm256_loadu_ps(in + 8),
                                           _MM_FROUND_TO_NEAREST_INT);
        _mm_storeu_si128((__m128i *)(void *)out, ha);
        _mm_storeu_si128((__m128i *)(void *)(out + 8), hb);
        memcpy(dst + i, out, rest * sizeof *out);
    }
}

void kern_f16_to_f32_avx2(float *dst, const uint16_t *src, size_t n)
{
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        const __m128i ha = _mm_loadu_si128((const __m128i *)(const void *)
                                               (src + i));
        const __m128i hb = _mm_loadu_si128((const __m128i *)(const void *)
                                               (src + i + 8));
        _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(ha));
        _mm256_storeu_ps(dst + i + 8, _mm256_cvtph_ps(hb));
    }
    if (i < n) {
        uint16_t in[16] = {0};
        float out[16];
        const size_t rest = n - i;
        memcpy(in, src + i, rest * sizeof *in);
        const __m128i ha = _mm_loadu_si128((const __m128i *)(const void *)in);
        const __m128i hb =
            _mm_loadu_si128((const __m128i *)(const void *)(in + 8));
        _mm256_storeu_ps(out, _mm256_cvtph_ps(ha));
        _mm256_storeu_ps(out + 8, _mm256_cvtph_ps(hb));
        memcpy(dst + i, out, rest * sizeof *out);
    }
}

/* Eight floats rounded to bf16, one result in the low half of each 32-bit
 * lane. */
static inline __m256i bf16_round(__m256 f)
{
    const __m256i x = _mm256_castps_si256(f);
    const __m256i lsb =
        _mm256_and_si256(_mm256_srli_epi32(x, 16), _mm256_set1_epi32(1));
    const __m256i rounded = _mm256_srli_epi32(
        _mm256_add_epi32(_mm256_add_epi32(x, _mm256_set1_epi32(0x7fff)), lsb),
        16);
    const __m256i quiet = _mm256_or_si256(_mm256_srli_epi32(x, 16),
                                          _mm256_set1_epi32(0x0040));
    const __m256 isnan = _mm256_cmp_ps(f, f, _CMP_UNORD_Q);
    return _mm256_castps_si256(_mm256_blendv_ps(_mm256_castsi256_ps(rounded),
                                                _mm256_castsi256_ps(quiet),
                                                isnan));
}

static inline __m256i bf16_pack16(__m256 a, __m256 b)
{
    /* packus works within 128-bit lanes: fix the order with a permute. */
    const __m256i p = _mm256_packus_epi32(bf16_round(a), bf16_round(b));
    return _mm256_permute4x64_epi64(p, 0xd8);
}

void kern_f32_to_bf16_avx2(uint16_t *dst, const float *src, size_t n)
{
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        const __m256i p = bf16_pack16(_mm256_loadu_ps(src + i),
                                      _mm256_loadu_ps(src + i + 8));
        _mm256_storeu_si256((__m256i *)(void *)(dst + i), p);
    }
    if (i < n) {
        float in[16] = {0};
        uint16_t out[16];
        const size_t rest = n - i;
        memcpy(in, src + i, rest * sizeof *in);
        const __m256i p =
            bf16_pack16(_mm256_loadu_ps(in), _mm256_loadu_ps(in + 8));
        _mm256_storeu_si256((__m256i *)(void *)out, p);
        memcpy(dst + i, out, rest * sizeof *out);
    }
}

void kern_bf16_to_f32_avx2(float *dst, const uint16_t *src, size_t n)
{
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        const __m256i h =
            _mm256_loadu_si256((const __m256i *)(const void *)(src + i));
        const __m256i lo = _mm256_cvtepu16_epi32(_mm256_castsi256_si128(h));
        const __m256i hi =
            _mm256_cvtepu16_epi32(_mm256_extracti128_si256(h, 1));
        _mm256_storeu_si256((__m256i *)(void *)(dst + i),
                            _mm256_slli_epi32(lo, 16));
        _mm256_storeu_si256((__m256i *)(void *)(dst + i + 8),
                            _mm256_slli_epi32(hi, 16));
    }
    for (; i < n; i++) {
        dst[i] = kern_bf16_to_f32_1(src[i]);
    }
}
