/* Activations with AVX-512 (F, DQ): 16 lanes, masked tails, vreduceps for
 * the exp2 range reduction, vscalefps for the exponent (exact scaling into
 * the subnormal range). Divisions are real divisions: vdivps measured
 * faster than vrcp14ps plus a Newton step and a multiply in these loops,
 * whose other work hides the divider's throughput. */
#include <immintrin.h>
#include <stddef.h>

#include "act.h"

typedef __m512 V;
typedef __mmask16 M;
#define VL 16
#define ACT_FN(name) kern_##name##_avx512

static inline V vset(float a) { return _mm512_set1_ps(a); }
static inline V vadd(V a, V b) { return _mm512_add_ps(a, b); }
static inline V vsub(V a, V b) { return _mm512_sub_ps(a, b); }
static inline V vmul(V a, V b) { return _mm512_mul_ps(a, b); }
static inline V vfma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
static inline V vabs(V a) { return _mm512_abs_ps(a); }

static inline V vnegabs(V a)
{
    return _mm512_or_ps(a, _mm512_set1_ps(-0.0f));
}

/* vrangeps, imm 0xe: the operand of smaller magnitude (bits 1:0 = 10)
 * with the sign bit set (bits 3:2 = 11); a NaN operand comes through. */
static inline V vnegabs_min(V a, float c)
{
    return _mm512_range_ps(a, _mm512_set1_ps(c), 0x0e);
}

static inline V vcopysign(V mag, V sgn)
{
    /* 0xca is "a ? b : c" bitwise: mag's bits under the mask 0x7fffffff,
     * sgn's sign bit. */
    return _mm512_castsi512_ps(_mm512_ternarylogic_epi32(
        _mm512_set1_epi32(0x7fffffff), _mm512_castps_si512(mag),
        _mm512_castps_si512(sgn), 0xca));
}

/* maxps/minps return their second operand when either is NaN. */
static inline V vmax_keepnan(V c, V a) { return _mm512_max_ps(c, a); }
static inline V vmin_keepnan(V c, V a) { return _mm512_min_ps(c, a); }
static inline M vlt(V a, V b) { return _mm512_cmp_ps_mask(a, b, _CMP_LT_OQ); }
static inline M vge(V a, V b) { return _mm512_cmp_ps_mask(a, b, _CMP_GE_OQ); }
static inline M vgt(V a, V b) { return _mm512_cmp_ps_mask(a, b, _CMP_GT_OQ); }

static inline M vgt_or_nan(V a, V b)
{
    return _mm512_cmp_ps_mask(a, b, _CMP_NLE_UQ);
}

static inline V vsel(M m, V a, V b) { return _mm512_mask_blend_ps(m, a, b); }
static inline V vand_mask(M m, V a) { return _mm512_maskz_mov_ps(m, a); }

static inline V vdiv(V a, V b) { return _mm512_div_ps(a, b); }

/* vreduceps, imm 8: a - round_to_nearest_even(a), exact (no precision
 * exception). */
#define ACT_HAVE_REDUCE 1
static inline V vreduce(V a) { return _mm512_reduce_ps(a, 0x08); }

static inline V vscale2(V p, V n, V t)
{
    (void)t;
    return _mm512_scalef_ps(p, n);
}

static inline void vscale2_pair(V p, V q, V n, V t, V *pn, V *qn)
{
    (void)t;
    *pn = _mm512_scalef_ps(p, n);
    *qn = _mm512_scalef_ps(q, n);
}

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

#include "act_tmpl.h"
