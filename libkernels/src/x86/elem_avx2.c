/* Broadcast arithmetic with AVX2: 8 lanes, tails one element at a time:
 * a masked store (vmaskmovps) is microcoded on AMD cores, and a per-plane
 * row of squeeze-excite's 7 x 7 maps (six vectors and one element) ran
 * slower than the SSE loop of the C row with it.
 * The NCHW8c channel scale is one vector per pixel: a block's eight
 * scales stay in a register for the whole plane. */
#include <immintrin.h>
#include <stddef.h>

#include "elem.h"

typedef __m256 V;
#define VL 8
#define ELEM_FN(name) kern_elem_##name##_avx2
#define ELEM_SCALAR_TAIL 1

static inline V vset(float a) { return _mm256_set1_ps(a); }
static inline V vadd(V a, V b) { return _mm256_add_ps(a, b); }
static inline V vsub(V a, V b) { return _mm256_sub_ps(a, b); }
static inline V vmul(V a, V b) { return _mm256_mul_ps(a, b); }
static inline V vdiv(V a, V b) { return _mm256_div_ps(a, b); }
static inline V vload(const float *p) { return _mm256_loadu_ps(p); }
static inline void vstore(float *p, V a) { _mm256_storeu_ps(p, a); }

/* Lanes [0, rest) of an all-ones mask. */
static inline __m256i tail_mask(size_t rest)
{
    const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)rest), idx);
}


#include "elem_tmpl.h"

void kern_elem_scale_nchw8c_avx2(float *y, const float *x, const float *s,
                                 size_t hw, size_t lanes)
{
    const __m256i m = tail_mask(lanes);
    /* The padding lanes' scale is irrelevant: the and below clears them,
     * whatever x * s gave there (NaN from an inf times 0 included). */
    const V sv = _mm256_maskload_ps(s, m);
    const V keep = _mm256_castsi256_ps(m);
    size_t i = 0;
    for (; i + 4 <= hw; i += 4) {
        const float *xp = x + i * 8;
        float *yp = y + i * 8;
        const V r0 = _mm256_and_ps(keep, vmul(vload(xp), sv));
        const V r1 = _mm256_and_ps(keep, vmul(vload(xp + 8), sv));
        const V r2 = _mm256_and_ps(keep, vmul(vload(xp + 16), sv));
        const V r3 = _mm256_and_ps(keep, vmul(vload(xp + 24), sv));
        vstore(yp, r0);
        vstore(yp + 8, r1);
        vstore(yp + 16, r2);
        vstore(yp + 24, r3);
    }
    for (; i < hw; i++) {
        vstore(y + i * 8, _mm256_and_ps(keep, vmul(vload(x + i * 8), sv)));
    }
}
