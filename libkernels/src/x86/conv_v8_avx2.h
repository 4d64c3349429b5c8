/* Private: conv_tmpl.h's vocabulary of 8-float vectors on one __m256,
 * shared by the AVX2 convolution (conv_avx2.c) and the AVX-512 one
 * (conv_avx512.c), which differ only in the tile of 1 x 1 blocked
 * convolutions. */
#ifndef EDGEFIT_KERN_CONV_V8_AVX2_H
#define EDGEFIT_KERN_CONV_V8_AVX2_H

#include <immintrin.h>
#include <stdint.h>

#include "conv.h"
#include "hsum_avx2.h"
#include "transpose_avx2.h"

#define V8 __m256
#define V4 __m128
#define v8_zero() _mm256_setzero_ps()
#define v8_set1(x) _mm256_set1_ps(x)
#define v8_load(p) _mm256_loadu_ps(p)
#define v8_store(p, v) _mm256_storeu_ps((p), (v))
#define v8_bcast(p) _mm256_broadcast_ss(p)
#define v8_fma(a, b, c) _mm256_fmadd_ps((a), (b), (c))
#define v8_max(a, b) _mm256_max_ps((a), (b))
#define v8_min(a, b) _mm256_min_ps((a), (b))
#define v8_and(a, m) _mm256_and_ps((a), (m))
#define v8_load_mask(p)                                                     \
    _mm256_castsi256_ps(_mm256_loadu_si256((const __m256i *)(const void *)(p)))
#define v8_low(v) _mm256_castps256_ps128(v)
#define v8_high(v) _mm256_extractf128_ps((v), 1)
#define v4_store(p, q) _mm_storeu_ps((p), (q))

static inline void v8_transpose4x4_halves(const __m256 v[4], __m256 c[4])
{
    const __m256 t0 = _mm256_unpacklo_ps(v[0], v[1]);
    const __m256 t1 = _mm256_unpackhi_ps(v[0], v[1]);
    const __m256 t2 = _mm256_unpacklo_ps(v[2], v[3]);
    const __m256 t3 = _mm256_unpackhi_ps(v[2], v[3]);
    c[0] = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(1, 0, 1, 0));
    c[1] = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(3, 2, 3, 2));
    c[2] = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(1, 0, 1, 0));
    c[3] = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(3, 2, 3, 2));
}

#endif
