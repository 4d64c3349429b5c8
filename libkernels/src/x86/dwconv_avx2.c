/* AVX2 depthwise convolution: 8 lanes; see dwconv_tmpl.h. */
#include <immintrin.h>
#include <math.h>

#include "transpose_avx2.h"

#define VL 8
#define V __m256
#define V_ZERO _mm256_setzero_ps()
#define V_SET1 _mm256_set1_ps
#define V_LOADU _mm256_loadu_ps
#define V_STOREU _mm256_storeu_ps
#define V_FMA _mm256_fmadd_ps
#define V_MAX _mm256_max_ps
#define V_MIN _mm256_min_ps
#define V_LOAD_EVEN load_even
#define V_LOAD_PART(s, n) _mm256_maskload_ps((s), lane_mask(n))
#define V_COPY_PART(d, s, n)                                             \
    _mm256_maskstore_ps((d), lane_mask(n),                               \
                        _mm256_maskload_ps((s), lane_mask(n)))
#define DW_FN kern_dwconv2d_avx2

/* All-ones in the first n (< 8) lanes. */
static inline __m256i lane_mask(size_t n)
{
    return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)n),
                              _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/* p[0], p[2], ..., p[14]. */
static inline __m256 load_even(const float *p)
{
    return evens8(_mm256_loadu_ps(p), _mm256_loadu_ps(p + 8));
}

#define V_TRANSPOSE transpose8

#include "dwconv_tmpl.h"
