/* AVX-512 int8 add of the static int8 family: sixteen int32 lanes at a
 * time, 64 values a step, the same integer (TFLite's Add) or float (ONNX
 * Runtime's QLinearAdd) operations as the C reference, so the same bits;
 * the tail of fewer than 16 values runs through masked loads and stores.
 * The AVX2 paths (q8s_avx2.c) do 8 lanes a step: the add is a pass over
 * memory with three fixed-point multiplies a value, so it is bound by the
 * multiplies and the lanes count. */
#include <float.h>
#include <immintrin.h>
#include <stdint.h>

#include "q8s.h"
#include "q8s_stage_avx512.h"

#include "edgefit/kernels.h"

struct rshift16 {
    __m128i e;
    __m512i mask, half;
};

static inline struct rshift16 rshift16_of(int e)
{
    const int32_t mask = (int32_t)(((int64_t)1 << e) - 1);
    struct rshift16 r = {_mm_cvtsi32_si128(e), _mm512_set1_epi32(mask),
                         _mm512_set1_epi32(mask >> 1)};
    return r;
}

/* One input's rescale of the add, rdbpot(srdhm((v - zero) << ls, mult),
 * e) for e = -shift, in 32-bit lanes only. With d = v - zero (|d| <= 255)
 * and s = 31 - ls, srdhm(d 2^ls, mult) = floor((d mult + 2^(s-1)) / 2^s),
 * and splitting mult = mh 2^s + ml (ml in [0, 2^s)) that is d mh +
 * floor((d ml + 2^(s-1)) / 2^s): |d mh| < 2^28 and, for s <= 22, |d ml|
 * < 2^30, so both products fit in int32. Then rdbpot(q, e) rounds half
 * away from zero: (q + 2^(e-1) - [q < 0]) >> e for e > 0, q for e = 0;
 * |q| < 2^29, so the sum fits too. */
struct add_in16 {
    __m512i zero, mh, ml, nudge, half, negmask;
    __m128i s, e;
};

enum { ADD_IN16_MAX_S = 22 };

static inline struct add_in16 add_in16_of(int32_t zero, int ls, int32_t mult,
                                          int shift)
{
    const int s = 31 - ls, e = -shift;
    struct add_in16 in = {
        _mm512_set1_epi32(zero),
        _mm512_set1_epi32(mult >> s),
        _mm512_set1_epi32((int32_t)((uint32_t)mult & ((1u << s) - 1))),
        _mm512_set1_epi32((int32_t)1 << (s - 1)),
        _mm512_set1_epi32(e > 0 ? (int32_t)1 << (e - 1) : 0),
        _mm512_set1_epi32(e > 0 ? -1 : 0),
        _mm_cvtsi32_si128(s),
        _mm_cvtsi32_si128(e)};
    return in;
}

/* plain: the input whose scale is the larger one has mult 2^30 and shift 0
 * (kern_q8_add_params_init's ratio 1/2), so ml = 0 and e = 0: the rescale
 * is d mh, exactly (floor(2^(s-1) / 2^s) = 0, rdbpot by 0 the identity) */
static inline __attribute__((always_inline)) __m512i
add_in16_run(const struct add_in16 *in, __m512i v, int plain)
{
    const __m512i d = _mm512_sub_epi32(v, in->zero);
    if (plain) {
        return _mm512_mullo_epi32(d, in->mh);
    }
    const __m512i lo = _mm512_sra_epi32(
        _mm512_add_epi32(_mm512_mullo_epi32(d, in->ml), in->nudge), in->s);
    const __m512i q = _mm512_add_epi32(_mm512_mullo_epi32(d, in->mh), lo);
    const __m512i r = _mm512_add_epi32(
        _mm512_add_epi32(q, in->half),
        _mm512_and_si512(_mm512_srai_epi32(q, 31), in->negmask));
    return _mm512_sra_epi32(r, in->e);
}

/* An input's rescale is plain (add_in16_run) when the low s = 31 - ls
 * bits of its multiplier are 0 and its shift is 0. */
static int add_in16_plain(int ls, int32_t mult, int shift)
{
    return shift == 0 && ((uint32_t)mult & ((1u << (31 - ls)) - 1)) == 0;
}

/* The add with the output stage in its bounded form (the clamp and zero
 * point as q8s_stage512_16's); pa, pb: the inputs' plain rescales. */
static inline __attribute__((always_inline)) void
add_bounded(size_t n, const int8_t *a, const int8_t *b,
            const struct add_in16 *ain, const struct add_in16 *bin,
            const struct q8s_stage512 *ost, int8_t *out, int pa, int pb)
{
    for (size_t i = 0; i < n; i += 16) {
        const __mmask16 m =
            n - i >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - i)) - 1);
        const __m512i va = _mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(m, a + i));
        const __m512i vb = _mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(m, b + i));
        const __m512i x = _mm512_add_epi32(add_in16_run(ain, va, pa),
                                           add_in16_run(bin, vb, pb));
        const __m512i r = q8s_stage512_bounded_r16(ost, x);
        const __m512i q = _mm512_add_epi32(
            _mm512_min_epi32(_mm512_max_epi32(r, ost->lo), ost->hi), ost->zp);
        _mm_mask_storeu_epi8(out + i, m, _mm512_cvtepi32_epi8(q));
    }
}

void kern_q8s_add_avx512(size_t n, const int8_t *a, const int8_t *b,
                         const struct kern_q8_add_params *p, int8_t *out)
{
    if (p->out_mult == INT32_MIN || 31 - p->left_shift > ADD_IN16_MAX_S) {
        /* its product with a sum of INT32_MIN saturates, or the input
         * products need 64 bits (left_shift below 9; the parameters of
         * kern_q8_add_params_init have 20): the AVX2 path has those */
        kern_q8s_add_avx2(n, a, b, p, out);
        return;
    }
    /* add_check: a_shift and b_shift in [-31, 0], out_shift in [-31, 30] */
    const struct add_in16 ain =
        add_in16_of(p->a_zero, p->left_shift, p->a_mult, p->a_shift);
    const struct add_in16 bin =
        add_in16_of(p->b_zero, p->left_shift, p->b_mult, p->b_shift);
    const __m512i om = _mm512_set1_epi64((int64_t)p->out_mult);
    const struct rshift16 orr =
        rshift16_of(p->out_shift > 0 ? 0 : -p->out_shift);
    const __m128i ol = _mm_cvtsi32_si128(p->out_shift > 0 ? p->out_shift : 0);
    const __m512i vzp = _mm512_set1_epi32(p->out_zero);
    const __m512i lo = _mm512_set1_epi32(p->qmin - p->out_zero);
    const __m512i hi = _mm512_set1_epi32(p->qmax - p->out_zero);
    /* the output stage's bounded form (q8s_stage_avx512.h): each input's
     * rescale is at most |d| 2^ls |mult| / 2^31 <= 255 2^ls in magnitude
     * (the rounding division only shrinks it), so the sum is at most 510
     * 2^ls < 2^29 (ls <= 20); it needs the sum unshifted (out_shift <= 0,
     * as from kern_q8_add_params_init) and out_mult >= 0 */
    struct q8s_stage512 ost = q8s_stage512_of(
        p->out_mult, 0, p->out_shift > 0 ? 0 : -p->out_shift, p->out_zero,
        p->qmin, p->qmax);
    if (p->out_shift <= 0) {
        q8s_stage512_bound(&ost, p->out_mult, 0,
                           (int64_t)510 << p->left_shift);
    }
    if (ost.bounded) {
        const int pa = add_in16_plain(p->left_shift, p->a_mult, p->a_shift);
        const int pb = add_in16_plain(p->left_shift, p->b_mult, p->b_shift);
        if (pa && !pb) {
            add_bounded(n, a, b, &ain, &bin, &ost, out, 1, 0);
        } else if (!pa && pb) {
            add_bounded(n, a, b, &ain, &bin, &ost, out, 0, 1);
        } else if (pa && pb) {
            add_bounded(n, a, b, &ain, &bin, &ost, out, 1, 1);
        } else {
            add_bounded(n, a, b, &ain, &bin, &ost, out, 0, 0);
        }
        return;
    }
    for (size_t i = 0; i < n; i += 16) {
        const __mmask16 m =
            n - i >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - i)) - 1);
        const __m512i va = _mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(m, a + i));
        const __m512i vb = _mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(m, b + i));
        const __m512i sa = add_in16_run(&ain, va, 0);
        const __m512i sb = add_in16_run(&bin, vb, 0);
        /* the sum wraps and the left shift wraps, as q8s_wrap_add and
         * q8s_shl */
        const __m512i x = _mm512_sll_epi32(_mm512_add_epi32(sa, sb), ol);
        const __m512i h = q8s_srdhm512(x, om, om);
        __m512i r = q8s_rdbpot512_round(h, _mm512_sra_epi32(h, orr.e),
                                        orr.mask, orr.half);
        r = _mm512_add_epi32(_mm512_min_epi32(_mm512_max_epi32(r, lo), hi),
                             vzp);
        _mm_mask_storeu_epi8(out + i, m, _mm512_cvtepi32_epi8(r));
    }
}

/* The C reference's two fmas on 16 values at a time (vfmadd rounds once,
 * as fmaf), clamped in float, cvtps rounding half to even. */
void kern_q8s_addf_avx512(size_t n, const int8_t *a, const int8_t *b,
                          const struct kern_q8_addf_params *p, int8_t *out)
{
    const __m512 ra = _mm512_set1_ps(p->ra), rb = _mm512_set1_ps(p->rb);
    const __m512 fx = _mm512_set1_ps(p->fixed);
    const __m512i off = _mm512_set1_epi32(p->off);
    const __m512 lo = _mm512_set1_ps((float)(p->qmin + p->off));
    const __m512 hi = _mm512_set1_ps((float)(p->qmax + p->off));
    for (size_t i = 0; i < n; i += 16) {
        const __mmask16 m =
            n - i >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - i)) - 1);
        const __m512i vb = _mm512_add_epi32(
            _mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(m, b + i)), off);
        const __m512i va = _mm512_add_epi32(
            _mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(m, a + i)), off);
        __m512 f = _mm512_fmadd_ps(_mm512_cvtepi32_ps(vb), rb, fx);
        f = _mm512_fmadd_ps(_mm512_cvtepi32_ps(va), ra, f);
        f = _mm512_min_ps(_mm512_max_ps(f, lo), hi);
        const __m512i r = _mm512_sub_epi32(_mm512_cvtps_epi32(f), off);
        _mm_mask_storeu_epi8(out + i, m, _mm512_cvtepi32_epi8(r));
    }
}

/* The C reference's x / scale, rounded to an integer, by a multiply: t =
 * x r with r = 1 / scale (normal) is within |t| 2^-21 of the reference's
 * quotient q = fl(x / scale) (three roundings of 2^-24 each), and rint is
 * constant between half-integers, so rint(t) = rint(q) wherever t is
 * farther than that from a half-integer; at |t| >= 512 both clamp alike
 * (|q| >= 511, beyond every zero point's reach). The other lanes (near a
 * half-integer, or NaN) take the division. The same bits as the
 * reference; a scale whose reciprocal is not a normal float runs the
 * division throughout. */
void kern_q8s_quant_avx512(const float *x, size_t n, float scale,
                           int32_t zero, int8_t *q)
{
    const float rf = 1.0f / scale;
    if (!(rf >= FLT_MIN && rf <= FLT_MAX)) {
        kern_q8s_quant_avx2(x, n, scale, zero, q);
        return;
    }
    const __m512 r = _mm512_set1_ps(rf), vs = _mm512_set1_ps(scale);
    const __m512 vz = _mm512_set1_ps((float)zero);
    const __m512 lo = _mm512_set1_ps(-128.0f), hi = _mm512_set1_ps(127.0f);
    const __m512 half = _mm512_set1_ps(0.5f), big = _mm512_set1_ps(512.0f);
    const __m512 tol = _mm512_set1_ps(0x1p-21f);
    const __m512i zi = _mm512_set1_epi32(zero);
    for (size_t i = 0; i < n; i += 16) {
        const __mmask16 m =
            n - i >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - i)) - 1);
        const __m512 v = _mm512_maskz_loadu_ps(m, x + i);
        const __m512 t = _mm512_mul_ps(v, r);
        __m512 rt = _mm512_roundscale_ps(t, _MM_FROUND_TO_NEAREST_INT |
                                                _MM_FROUND_NO_EXC);
        const __m512 at = _mm512_abs_ps(t);
        const __m512 gap =
            _mm512_sub_ps(half, _mm512_abs_ps(_mm512_sub_ps(t, rt)));
        const __mmask16 safe =
            _mm512_cmp_ps_mask(gap, _mm512_mul_ps(at, tol), _CMP_GT_OQ) |
            _mm512_cmp_ps_mask(at, big, _CMP_GE_OQ);
        if ((__mmask16)(safe | (__mmask16)~m) != (__mmask16)0xffff) {
            const __mmask16 redo = (__mmask16)(~safe & m);
            rt = _mm512_mask_roundscale_ps(
                rt, redo, _mm512_mask_div_ps(v, redo, v, vs),
                _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        }
        __m512 f = _mm512_add_ps(rt, vz);
        f = _mm512_min_ps(_mm512_max_ps(f, lo), hi);
        __m512i ri = _mm512_cvttps_epi32(f);
        /* NaN: the zero point */
        ri = _mm512_mask_mov_epi32(ri, _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q),
                                   zi);
        _mm_mask_storeu_epi8(q + i, m, _mm512_cvtepi32_epi8(ri));
    }
}
