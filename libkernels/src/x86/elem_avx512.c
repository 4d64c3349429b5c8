/* Broadcast arithmetic with AVX-512: the AVX2 rows at 16 lanes, tails by
 * masked loads and stores. The NCHW8c channel scale takes two pixels per
 * vector (the block's eight scales in both halves). */
#include <immintrin.h>
#include <stddef.h>

#include "elem.h"

typedef __m512 V;
#define VL 16
#define ELEM_FN(name) kern_elem_##name##_avx512

static inline V vset(float a) { return _mm512_set1_ps(a); }
static inline V vadd(V a, V b) { return _mm512_add_ps(a, b); }
static inline V vsub(V a, V b) { return _mm512_sub_ps(a, b); }
static inline V vmul(V a, V b) { return _mm512_mul_ps(a, b); }
static inline V vdiv(V a, V b) { return _mm512_div_ps(a, b); }
static inline V vload(const float *p) { return _mm512_loadu_ps(p); }
static inline void vstore(float *p, V a) { _mm512_storeu_ps(p, a); }

static inline V vload_tail(const float *p, size_t rest)
{
    return _mm512_maskz_loadu_ps((__mmask16)((1u << rest) - 1u), p);
}

static inline void vstore_tail(float *p, V a, size_t rest)
{
    _mm512_mask_storeu_ps(p, (__mmask16)((1u << rest) - 1u), a);
}

#include "elem_tmpl.h"

void kern_elem_scale_nchw8c_avx512(float *y, const float *x, const float *s,
                                   size_t hw, size_t lanes)
{
    const __mmask8 m8 = (__mmask8)((1u << lanes) - 1u);
    const __m256 s8 = _mm256_maskz_loadu_ps(m8, s);
    const V sv = _mm512_insertf32x8(_mm512_castps256_ps512(s8), s8, 1);
    /* Padding lanes become +0 through the zeroing mask, whatever x * s
     * would give there. */
    const __mmask16 m = (__mmask16)(m8 | (m8 << 8));
    size_t i = 0;
    for (; i + 8 <= hw; i += 8) {
        const float *xp = x + i * 8;
        float *yp = y + i * 8;
        const V r0 = _mm512_maskz_mul_ps(m, vload(xp), sv);
        const V r1 = _mm512_maskz_mul_ps(m, vload(xp + 16), sv);
        const V r2 = _mm512_maskz_mul_ps(m, vload(xp + 32), sv);
        const V r3 = _mm512_maskz_mul_ps(m, vload(xp + 48), sv);
        vstore(yp, r0);
        vstore(yp + 16, r1);
        vstore(yp + 32, r2);
        vstore(yp + 48, r3);
    }
    for (; i + 2 <= hw; i += 2) {
        vstore(y + i * 8, _mm512_maskz_mul_ps(m, vload(x + i * 8), sv));
    }
    if (i < hw) {
        const __m256 r = _mm256_maskz_mul_ps(m8, _mm256_loadu_ps(x + i * 8),
                                             s8);
        _mm256_storeu_ps(y + i * 8, r);
    }
}
