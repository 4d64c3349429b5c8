#include <immintrin.h>

#include "internal.h"

/* Sixteen chains of 16 lanes: twice the 4-cycle latency times two FMA
 * ports, in 16 of the 32 zmm registers. */
uint64_t prof_fma_loop_avx512(uint64_t iters, float *sink)
{
    const __m512 m = _mm512_set1_ps(0.99999994f);
    const __m512 b = _mm512_set1_ps(1e-7f);
    __m512 c[16];
    for (int k = 0; k < 16; k++) {
        c[k] = _mm512_set1_ps(0.1f * (float)(k + 1));
    }
    __m512 c0 = c[0], c1 = c[1], c2 = c[2], c3 = c[3];
    __m512 c4 = c[4], c5 = c[5], c6 = c[6], c7 = c[7];
    __m512 c8 = c[8], c9 = c[9], c10 = c[10], c11 = c[11];
    __m512 c12 = c[12], c13 = c[13], c14 = c[14], c15 = c[15];
    for (uint64_t i = 0; i < iters; i++) {
        c0 = _mm512_fmadd_ps(c0, m, b);
        c1 = _mm512_fmadd_ps(c1, m, b);
        c2 = _mm512_fmadd_ps(c2, m, b);
        c3 = _mm512_fmadd_ps(c3, m, b);
        c4 = _mm512_fmadd_ps(c4, m, b);
        c5 = _mm512_fmadd_ps(c5, m, b);
        c6 = _mm512_fmadd_ps(c6, m, b);
        c7 = _mm512_fmadd_ps(c7, m, b);
        c8 = _mm512_fmadd_ps(c8, m, b);
        c9 = _mm512_fmadd_ps(c9, m, b);
        c10 = _mm512_fmadd_ps(c10, m, b);
        c11 = _mm512_fmadd_ps(c11, m, b);
        c12 = _mm512_fmadd_ps(c12, m, b);
        c13 = _mm512_fmadd_ps(c13, m, b);
        c14 = _mm512_fmadd_ps(c14, m, b);
        c15 = _mm512_fmadd_ps(c15, m, b);
    }
    __m512 s0 = _mm512_add_ps(_mm512_add_ps(c0, c1), _mm512_add_ps(c2, c3));
    __m512 s1 = _mm512_add_ps(_mm512_add_ps(c4, c5), _mm512_add_ps(c6, c7));
    __m512 s2 = _mm512_add_ps(_mm512_add_ps(c8, c9),
                              _mm512_add_ps(c10, c11));
    __m512 s3 = _mm512_add_ps(_mm512_add_ps(c12, c13),
                              _mm512_add_ps(c14, c15));
    *sink = _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(s0, s1),
                                               _mm512_add_ps(s2, s3)));
    return iters * 16u * 16u;
}
