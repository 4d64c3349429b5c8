/* edgefit-bench: the F16C reference loops the conversion table compares
 * with. Built with -mavx -mf16c; called only when the CPU has F16C. */
#include <cpuid.h>
#include <immintrin.h>
#include <string.h>

#include "bench.h"

/* CPUID leaf 1 for AVX, F16C and OSXSAVE, and XCR0 for the YMM state the
 * OS saves (what an AVX instruction needs to run); not
 * __builtin_cpu_supports("f16c"), which clang does not know. */
bool bench_f16c_available(void)
{
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d)) {
        return false;
    }
    const unsigned need = bit_AVX | bit_F16C | bit_OSXSAVE;
    if ((c & need) != need) {
        return false;
    }
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    (void)hi;
    return (lo & 6u) == 6u; /* XMM and YMM state */
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
