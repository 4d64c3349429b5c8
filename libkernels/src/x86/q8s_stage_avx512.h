/* The static-int8 output stage over 16 lanes with AVX-512, shared by the
 * VNNI kernels (q8s_kp_vnni.c, q8s_dw_vnni.c). Private to libkernels. */
#ifndef KERN_X86_Q8S_STAGE_AVX512_H
#define KERN_X86_Q8S_STAGE_AVX512_H

#include <immintrin.h>
#include <stdint.h>

#include "edgefit/kernels.h"

/* The reference's q8s_mbqm then the clamp of r + zp, for one channel's
 * parameters over 16 lanes: srdhm as floor((x m + 2^30) / 2^31) in 64-bit
 * lanes (even and odd dwords apart), rdbpot by the mask and the half mask
 * plus one for negative x. isf: the float stage (kern_q8s_requantf_c)
 * instead, x converted to float, times the scale, clamped to the bounds
 * relative to zp and converted back with cvtps, which rounds half to even
 * in the default rounding mode as the reference's rintf does. */
struct q8s_stage512 {
    __m512i m, half, lo, hi, zp;
    __m128i ls, rs;
    __m512i mask;
    __m512i lo8, hi8; /* qmin, qmax as bytes (q8s_stage512_64) */
    __m512 fs, flo, fhi;
    int isf;
    /* q8s_stage512_bound: the bounded form's doubled left shift, 64-bit
     * nudge and rounding correction (1 when rs > 0) */
    int bounded;
    __m128i ls1;
    __m512i nud, sub1;
};

/* The pieces the uniform stage below, the per-lane one of q8s_dw_vnni.c
 * and the add's output stage (q8s_avx512.c) share. The product INT32_MIN
 * squared, the one srdhm saturates, is excluded by every caller. m_ev holds the even lanes' multipliers in the even
 * dwords, m_od the odd lanes' in the even dwords (one vector twice when
 * every lane has the same). */

/* srdhm(x, m) = floor((x m + 2^30) / 2^31) of 16 lanes, x already shifted
 * left: the even and odd products apart in 64-bit lanes, and the results'
 * low dwords together. */
static inline __attribute__((always_inline)) __m512i
q8s_srdhm512(__m512i x, __m512i m_ev, __m512i m_od)
{
    const __m512i nudge = _mm512_set1_epi64((int64_t)1 << 30);
    const __m512i ev = _mm512_srai_epi64(
        _mm512_add_epi64(_mm512_mul_epi32(x, m_ev), nudge), 31);
    const __m512i od = _mm512_srai_epi64(
        _mm512_add_epi64(_mm512_mul_epi32(_mm512_srli_epi64(x, 32), m_od),
                         nudge),
        31);
    return _mm512_mask_blend_epi32((__mmask16)0xAAAA, ev,
                                   _mm512_slli_epi64(od, 32));
}

/* rdbpot's rounding of h shifted right (r, h >> e by the caller's uniform
 * or per-lane shift): one more where h's remainder, h & mask, is above
 * the half mask (plus one for negative h). */
static inline __attribute__((always_inline)) __m512i
q8s_rdbpot512_round(__m512i h, __m512i r, __m512i mask, __m512i half)
{
    const __m512i one = _mm512_set1_epi32(1);
    const __m512i rem = _mm512_and_si512(h, mask);
    const __mmask16 neg = _mm512_cmplt_epi32_mask(h, _mm512_setzero_si512());
    const __m512i thr = _mm512_mask_add_epi32(half, neg, half, one);
    return _mm512_mask_add_epi32(r, _mm512_cmpgt_epi32_mask(rem, thr), r, one);
}

/* The bounded form's h - [x < 0] (q8s_stage512_bounded_r16 below), before
 * its right shift: x1 = x 2^(ls + 1), the 64-bit nudges of the even and
 * odd lanes. */
static inline __attribute__((always_inline)) __m512i
q8s_bounded512_h(__m512i x, __m512i x1, __m512i m_ev, __m512i m_od,
                 __m512i nud_ev, __m512i nud_od, __m512i sub1)
{
    const __m512i ev = _mm512_add_epi64(_mm512_mul_epi32(x1, m_ev), nud_ev);
    const __m512i od = _mm512_add_epi64(
        _mm512_mul_epi32(_mm512_srli_epi64(x1, 32), m_od), nud_od);
    const __m512i h = _mm512_mask_shuffle_epi32(od, (__mmask16)0x5555, ev,
                                                _MM_PERM_CDAB);
    const __mmask16 neg = _mm512_cmplt_epi32_mask(x, _mm512_setzero_si512());
    return _mm512_mask_sub_epi32(h, neg, h, sub1);
}

/* The fixed stage of sums known to be small, |x| < 2^(29 - ls), and a
 * multiplier m >= 0 (q8s_stage512_bound checks both): with x1 = x 2^(ls +
 * 1), exact in int32, srdhm(x 2^ls, m) = floor((x1 m + 2^31) / 2^32), and
 * rdbpot(h, e) = (h + 2^(e-1) - [h < 0]) >> e for e > 0 (h for e = 0): the
 * half 2^(e-1) goes into the 64-bit nudge (|x1 m| < 2^61, so the sum
 * stays in int64, and h + 2^(e-1) < 2^31), the high dwords of the even
 * and odd products come together in one masked shuffle, and [h < 0] is
 * [x < 0] (m >= 0: h < 0 needs x < 0, and x < 0 with h = 0 gives
 * (2^(e-1) - 1) >> e = 0 either way). 13 operations with the clamp
 * rather than 19; the same bits. */
static inline __m512i q8s_stage512_bounded_r16(const struct q8s_stage512 *s,
                                               __m512i x)
{
    const __m512i x1 = _mm512_sll_epi32(x, s->ls1);
    return _mm512_sra_epi32(
        q8s_bounded512_h(x, x1, s->m, s->m, s->nud, s->nud, s->sub1), s->rs);
}

/* The stage before its clamp and zero point: the fixed-point result r,
 * or the float stage's already clamped one (relative to zp). */
static inline __m512i q8s_stage512_r16(const struct q8s_stage512 *s, __m512i x)
{
    if (s->isf) {
        __m512 f = _mm512_mul_ps(_mm512_cvtepi32_ps(x), s->fs);
        f = _mm512_min_ps(_mm512_max_ps(f, s->flo), s->fhi);
        return _mm512_cvtps_epi32(f);
    }
    if (s->bounded) {
        return q8s_stage512_bounded_r16(s, x);
    }
    const __m512i h = q8s_srdhm512(_mm512_sll_epi32(x, s->ls), s->m, s->m);
    return q8s_rdbpot512_round(h, _mm512_sra_epi32(h, s->rs), s->mask,
                               s->half);
}

static inline __m512i q8s_stage512_16(const struct q8s_stage512 *s, __m512i x)
{
    const __m512i r = q8s_stage512_r16(s, x);
    if (s->isf) {
        return _mm512_add_epi32(r, s->zp);
    }
    return _mm512_add_epi32(_mm512_min_epi32(_mm512_max_epi32(r, s->lo), s->hi),
                            s->zp);
}

/* 64 results (four vectors of 16 sums) as bytes, in the order of
 * packs(packs32(a, b), packs32(c, d)): r saturated to int16, plus zp
 * saturating, saturated to int8, then clamped to [qmin, qmax] as bytes.
 * The same bytes as q8s_stage512_16's clamp of r + zp in int32: a
 * saturated r stays beyond every bound, as r + zp is in int32. */
static inline __m512i q8s_stage512_64(const struct q8s_stage512 *s, __m512i a,
                                      __m512i b, __m512i c, __m512i d)
{
    const __m512i z16 = _mm512_set1_epi16((short)_mm_cvtsi128_si32(
        _mm512_castsi512_si128(s->zp)));
    const __m512i ab = _mm512_adds_epi16(
        _mm512_packs_epi32(q8s_stage512_r16(s, a), q8s_stage512_r16(s, b)),
        z16);
    const __m512i cd = _mm512_adds_epi16(
        _mm512_packs_epi32(q8s_stage512_r16(s, c), q8s_stage512_r16(s, d)),
        z16);
    const __m512i q = _mm512_packs_epi16(ab, cd);
    return _mm512_min_epi8(_mm512_max_epi8(q, s->lo8), s->hi8);
}

static inline struct q8s_stage512 q8s_stage512_of(int32_t mult, int32_t lsh,
                                                  int32_t rsh, int32_t zp,
                                                  int32_t qmin, int32_t qmax)
{
    struct q8s_stage512 s;
    const int32_t mask = (int32_t)(((int64_t)1 << rsh) - 1);
    s.m = _mm512_set1_epi64((int64_t)mult);
    s.mask = _mm512_set1_epi32(mask);
    s.half = _mm512_set1_epi32(mask >> 1);
    s.lo = _mm512_set1_epi32(qmin - zp);
    s.hi = _mm512_set1_epi32(qmax - zp);
    s.zp = _mm512_set1_epi32(zp);
    s.lo8 = _mm512_set1_epi8((char)qmin);
    s.hi8 = _mm512_set1_epi8((char)qmax);
    s.ls = _mm_cvtsi32_si128(lsh);
    s.rs = _mm_cvtsi32_si128(rsh);
    s.fs = s.flo = s.fhi = _mm512_setzero_ps();
    s.isf = 0;
    s.bounded = 0;
    s.ls1 = _mm_cvtsi32_si128(lsh + 1);
    s.nud = _mm512_set1_epi64(((int64_t)1 << 31) +
                              ((int64_t)(mask >> 1) + (rsh > 0)) *
                                  ((int64_t)1 << 32));
    s.sub1 = _mm512_set1_epi32(rsh > 0);
    return s;
}

/* Switches the fixed stage s of multiplier mult and left shift lsh (as
 * given to q8s_stage512_of) to its bounded form when every sum x it will
 * see has |x| <= xmax and that is below 2^(29 - lsh), and mult >= 0. */
static inline void q8s_stage512_bound(struct q8s_stage512 *s, int32_t mult,
                                      int32_t lsh, int64_t xmax)
{
    s->bounded = !s->isf && mult >= 0 && lsh >= 0 && lsh <= 28 &&
                 xmax >= 0 && xmax < ((int64_t)1 << (29 - lsh));
}

/* The float stage of one channel (scale finite and >= 0). */
static inline struct q8s_stage512 q8s_stage512f_of(float scale, int32_t zp,
                                                   int32_t qmin,
                                                   int32_t qmax)
{
    struct q8s_stage512 s = q8s_stage512_of(0, 0, 0, zp, qmin, qmax);
    /* the bounds relative to zp are within [-255, 255]: exact in float */
    s.fs = _mm512_set1_ps(scale);
    s.flo = _mm512_set1_ps((float)(qmin - zp));
    s.fhi = _mm512_set1_ps((float)(qmax - zp));
    s.isf = 1;
    return s;
}

/* The stage of channel c of a depthwise layer (os->per_channel picks
 * its parameters; the reference's one signed shift, left when positive):
 * the float one, or the fixed one in its bounded form where that holds
 * for every sum, the bias plus at most taps products of |x - x_zero| <=
 * 255 and |w| <= 128. */
static inline struct q8s_stage512
q8s_stage512_dw(const struct kern_q8_outstage *os, size_t c, size_t taps)
{
    const size_t pc = os->per_channel ? c : 0;
    if (os->scale) {
        return q8s_stage512f_of(os->scale[pc], os->zero_point, os->qmin,
                                os->qmax);
    }
    const int sh = os->shift[pc];
    struct q8s_stage512 st =
        q8s_stage512_of(os->mult[pc], sh > 0 ? sh : 0, sh > 0 ? 0 : -sh,
                        os->zero_point, os->qmin, os->qmax);
    const int64_t bias = os->bias ? os->bias[c] : 0;
    q8s_stage512_bound(&st, os->mult[pc], sh > 0 ? sh : 0,
                       (bias < 0 ? -bias : bias) + (int64_t)taps * 255 * 128);
    return st;
}

/* A depthwise channel's accumulators' start when its taps are summed as
 * u w with u = x + 128 (vpdpbusd's unsigned operand, the padding reading
 * x_zero + 128): sum u w = sum (x - x_zero) w + (x_zero + 128) wsum, so
 * bias - (x_zero + 128) wsum, wrapping as the reference's int32 sums do. */
static inline __m512i q8s_dw_acc0(const struct kern_q8_outstage *os,
                                  size_t c, int32_t x_zero, int32_t wsum)
{
    const uint32_t init = (uint32_t)(os->bias ? os->bias[c] : 0) -
                          (uint32_t)((x_zero + 128) * wsum);
    return _mm512_set1_epi32((int32_t)init);
}

#endif
