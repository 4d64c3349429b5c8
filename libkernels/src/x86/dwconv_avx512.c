/* AVX-512 depthwise convolution: 16 lanes; see dwconv_tmpl.h. */
#include <immintrin.h>
#include <math.h>

#define VL 16
#define V __m512
#define V_ZERO _mm512_setzero_ps()
#define V_SET1 _mm512_set1_ps
#define V_LOADU _mm512_loadu_ps
#define V_STOREU _mm512_storeu_ps
#define V_FMA _mm512_fmadd_ps
#define V_MAX _mm512_max_ps
#define V_MIN _mm512_min_ps
#define V_LOAD_EVEN load_even
#define V_LOAD_PART(s, n) \
    _mm512_maskz_loadu_ps((__mmask16)((1u << (n)) - 1u), (s))
#define V_COPY_PART(d, s, n)                                             \
    _mm512_mask_storeu_ps((d), (__mmask16)((1u << (n)) - 1u),            \
                          _mm512_maskz_loadu_ps(                         \
                              (__mmask16)((1u << (n)) - 1u), (s)))
#define DW_FN kern_dwconv2d_avx512

/* p[0], p[2], ..., p[30]: the even elements of two vectors. */
static inline __m512 load_even(const float *p)
{
    const __m512i idx = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18,
                                          20, 22, 24, 26, 28, 30);
    return _mm512_permutex2var_ps(_mm512_loadu_ps(p), idx,
                                  _mm512_loadu_ps(p + 16));
}

#include "dwconv_tmpl.h"
