/* edgefit-bench: the F16C reference loops the conversion table compares
 * with. Built with -mavx -mf16c; called only when the CPU has F16C. */
#include <immintrin.h>
#include <string.h>

#include "bench.h"

bool bench_f16c_available(void)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx") && __builtin_cpu_supports("f16c");
}

void bench_f32_to_f16_f16c(uint16_t *dst, const float *src, size_t n)
{
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m256 a = _mm256_loadu_ps(src + i);
        __m256 b = _mm256_loadu_ps(src + i + 8);
        _mm_storeu_si128((__m128i *)(dst + i),
                         _mm256_cvtps_ph(a, _MM_FROUND_TO_NEAREST_INT));
        _mm_storeu_si128((__m128i *)(dst + i + 8),
                         _mm256_cvtps_ph(b, _MM_FROUND_TO_NEAREST_INT));
    }
    if (i < n) {
        float in[16] = {0};
        uint16_t out[16];
        memcpy(in, src + i, (n - i) * sizeof *in);
        _mm_storeu_si128((__m128i *)out,
                         _mm256_cvtps_ph(_mm256_loadu_ps(in),
                                         _MM_FROUND_TO_NEAREST_INT));
        _mm_storeu_si128((__m128i *)(out + 8),
                         _mm256_cvtps_ph(_mm256_loadu_ps(in + 8),
                                         _MM_FROUND_TO_NEAREST_INT));
        memcpy(dst + i, out, (n - i) * sizeof *out);
    }
}

void bench_f16_to_f32_f16c(float *dst, const uint16_t *src, size_t n)
{
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m128i a = _mm_loadu_si128((const __m128i *)(src + i));
        __m128i b = _mm_loadu_si128((const __m128i *)(src + i + 8));
        _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(a));
        _mm256_storeu_ps(dst + i + 8, _mm256_cvtph_ps(b));
    }
    if (i < n) {
        uint16_t in[16] = {0};
        float out[16];
        memcpy(in, src + i, (n - i) * sizeof *in);
        _mm256_storeu_ps(out, _mm256_cvtph_ps(_mm_loadu_si128(
                                  (const __m128i *)in)));
        _mm256_storeu_ps(out + 8, _mm256_cvtph_ps(_mm_loadu_si128(
                                      (const __m128i *)(in + 8))));
        memcpy(dst + i, out, (n - i) * sizeof *out);
    }
}
