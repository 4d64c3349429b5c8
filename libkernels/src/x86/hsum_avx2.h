/* Private: the horizontal sum of an AVX2 vector, shared by the AVX2 files
 * that reduce along K (matmul's dot products, conv's small planes). */
#ifndef EDGEFIT_KERNELS_X86_HSUM_AVX2_H
#define EDGEFIT_KERNELS_X86_HSUM_AVX2_H

#include <immintrin.h>

static inline float hsum8(__m256 x)
{
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(x),
                          _mm256_extractf128_ps(x, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

#endif
