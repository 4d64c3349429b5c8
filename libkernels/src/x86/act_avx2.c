/* Activations with AVX2 + FMA: 8 lanes, tails through a stack buffer, the
 * exponent applied in two integer steps so subnormal results are exact.
 * Divisions are real divisions (faster here than vrcpps plus the two
 * Newton steps float precision needs). */
#include <immintrin.h>
#include <stddef.h>
#include <string.h>

#include "act.h"

typedef __m256 V;
typedef __m256 M;
#define VL 8
#define ACT_FN(name) kern_##name##_avx2

static inline V vset(float a) { return _mm256_set1_ps(a); }
static inline V vadd(V a, V b) { return _mm256_add_ps(a, b); }
static inline V vsub(V a, V b) { return _mm256_sub_ps(a, b); }
static inline V vmul(V a, V b) { return _mm256_mul_ps(a, b); }
static inline V vfma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }

static inline V vabs(V a)
{
    return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), a);
}

static inline V vnegabs(V a)
{
    return _mm256_or_ps(a, _mm256_set1_ps(-0.0f));
}

static inline V vnegabs_min(V a, float c)
{
    return _mm256_max_ps(_mm256_set1_ps(-c), vnegabs(a)); /* NaN kept */
}

static inline V vcopysign(V mag, V sgn)
{
    const V s = _mm256_set1_ps(-0.0f);
    return _mm256_or_ps(_mm256_andnot_ps(s, mag), _mm256_and_ps(s, sgn));
}

/* maxps/minps return their second operand when either is NaN. */
static inline V vmax_keepnan(V c, V a) { return _mm256_max_ps(c, a); }
static inline V vmin_keepnan(V c, V a) { return _mm256_min_ps(c, a); }
static inline M vlt(V a, V b) { return _mm256_cmp_ps(a, b, _CMP_LT_OQ); }
static inline M vge(V a, V b) { return _mm256_cmp_ps(a, b, _CMP_GE_OQ); }
static inline M vgt(V a, V b) { return _mm256_cmp_ps(a, b, _CMP_GT_OQ); }
static inline M vgt_or_nan(V a, V b)
{
    return _mm256_cmp_ps(a, b, _CMP_NLE_UQ);
}
static inline V vsel(M m, V a, V b) { return _mm256_blendv_ps(a, b, m); }
static inline V vand_mask(M m, V a) { return _mm256_and_ps(m, a); }

static inline V vdiv(V a, V b) { return _mm256_div_ps(a, b); }

/* 2^n with n = bits(t) - bits(MAGIC) as two factors 2^(n/2), so that n
 * down to -252 (halves of -126) stays exact until the final, correctly
 * rounded multiply. */
static inline void pow2_halves(V t, V *s1, V *s2)
{
    const __m256i ni = _mm256_sub_epi32(_mm256_castps_si256(t),
                                        _mm256_castps_si256(vset(0x1.8p23f)));
    const __m256i n1 = _mm256_srai_epi32(ni, 1);
    const __m256i n2 = _mm256_sub_epi32(ni, n1);
    const __m256i bias = _mm256_set1_epi32(127);
    *s1 = _mm256_castsi256_ps(
        _mm256_slli_epi32(_mm256_add_epi32(n1, bias), 23));
    *s2 = _mm256_castsi256_ps(
        _mm256_slli_epi32(_mm256_add_epi32(n2, bias), 23));
}

static inline V vscale2(V p, V n, V t)
{
    (void)n;
    V s1, s2;
    pow2_halves(t, &s1, &s2);
    return _mm256_mul_ps(_mm256_mul_ps(p, s1), s2);
}

static inline void vscale2_pair(V p, V q, V n, V t, V *pn, V *qn)
{
    (void)n;
    V s1, s2;
    pow2_halves(t, &s1, &s2);
    *pn = _mm256_mul_ps(_mm256_mul_ps(p, s1), s2);
    *qn = _mm256_mul_ps(_mm256_mul_ps(q, s1), s2);
}

static inline V vload(const float *p) { return _mm256_loadu_ps(p); }
static inline void vstore(float *p, V a) { _mm256_storeu_ps(p, a); }

static inline V vload_tail(const float *p, size_t rest)
{
    float buf[8] = {0};
    memcpy(buf, p, rest * sizeof *buf);
    return _mm256_loadu_ps(buf);
}

static inline void vstore_tail(float *p, V a, size_t rest)
{
    float buf[8];
    _mm256_storeu_ps(buf, a);
    memcpy(p, buf, rest * sizeof *buf);
}

#include "act_tmpl.h"
