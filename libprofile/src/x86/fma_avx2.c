#include <immintrin.h>

#include "internal.h"

/* Twelve chains: FMA has a latency of 4 cycles on two ports on current
 * cores, so 8 independent chains keep both busy; 12 leave margin and, with
 * the two operands, still fit the 16 ymm registers. */
uint64_t prof_fma_loop_avx2(uint64_t iters, float *sink)
{
    const __m256 m = _mm256_set1_ps(0.99999994f);
    const __m256 b = _mm256_set1_ps(1e-7f);
    __m256 c0 = _mm256_set1_ps(0.1f), c1 = _mm256_set1_ps(0.2f);
    __m256 c2 = _mm256_set1_ps(0.3f), c3 = _mm256_set1_ps(0.4f);
    __m256 c4 = _mm256_set1_ps(0.5f), c5 = _mm256_set1_ps(0.6f);
    __m256 c6 = _mm256_set1_ps(0.7f), c7 = _mm256_set1_ps(0.8f);
    __m256 c8 = _mm256_set1_ps(0.9f), c9 = _mm256_set1_ps(1.0f);
    __m256 c10 = _mm256_set1_ps(1.1f), c11 = _mm256_set1_ps(1.2f);
    for (uint64_t i = 0; i < iters; i++) {
        c0 = _mm256_fmadd_ps(c0, m, b);
        c1 = _mm256_fmadd_ps(c1, m, b);
        c2 = _mm256_fmadd_ps(c2, m, b);
        c3 = _mm256_fmadd_ps(c3, m, b);
        c4 = _mm256_fmadd_ps(c4, m, b);
        c5 = _mm256_fmadd_ps(c5, m, b);
        c6 = _mm256_fmadd_ps(c6, m, b);
        c7 = _mm256_fmadd_ps(c7, m, b);
        c8 = _mm256_fmadd_ps(c8, m, b);
        c9 = _mm256_fmadd_ps(c9, m, b);
        c10 = _mm256_fmadd_ps(c10, m, b);
        c11 = _mm256_fmadd_ps(c11, m, b);
    }
    __m256 s = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(c0, c1),
                                           _mm256_add_ps(c2, c3)),
                             _mm256_add_ps(_mm256_add_ps(c4, c5),
                                           _mm256_add_ps(c6, c7)));
    s = _mm256_add_ps(s, _mm256_add_ps(_mm256_add_ps(c8, c9),
                                       _mm256_add_ps(c10, c11)));
    float lanes[8];
    _mm256_storeu_ps(lanes, s);
    float t = 0.0f;
    for (int i = 0; i < 8; i++) {
        t += lanes[i];
    }
    *sink = t;
    return iters * 12u * 8u;
}
