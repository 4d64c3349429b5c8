/* The static-int8 output stage over 16 lanes with AVX-512, shared by the
 * VNNI kernels (q8s_kp_vnni.c, q8s_dw_vnni.c). Private to libkernels. */
#ifndef KERN_X86_Q8S_STAGE_AVX512_H
#define KERN_X86_Q8S_STAGE_AVX512_H

#include <immintrin.h>
#include <stdint.h>

/* The reference's q8s_mbqm then the clamp of r + zp, for one channel's
 * parameters over 16 lanes: srdhm as floor((x m + 2^30) / 2^31) in 64-bit
 * lanes (even and odd dwords apart), rdbpot by the mask and the half mask
 * plus one for negative x. */
struct q8s_stage512 {
    __m512i m, half, one, lo, hi, zp;
    __m128i ls, rs;
    __m512i mask;
};

static inline __m512i q8s_stage512_16(const struct q8s_stage512 *s, __m512i x)
{
    x = _mm512_sll_epi32(x, s->ls);
    const __m512i nudge = _mm512_set1_epi64((int64_t)1 << 30);
    const __m512i ev = _mm512_srai_epi64(
        _mm512_add_epi64(_mm512_mul_epi32(x, s->m), nudge), 31);
    const __m512i od = _mm512_srai_epi64(
        _mm512_add_epi64(_mm512_mul_epi32(_mm512_srli_epi64(x, 32), s->m),
                         nudge),
        31);
    const __m512i h =
        _mm512_mask_blend_epi32((__mmask16)0xAAAA, ev,
                                _mm512_slli_epi64(od, 32));
    const __m512i rem = _mm512_and_si512(h, s->mask);
    const __mmask16 neg = _mm512_cmplt_epi32_mask(h, _mm512_setzero_si512());
    const __m512i thr = _mm512_mask_add_epi32(s->half, neg, s->half, s->one);
    __m512i r = _mm512_sra_epi32(h, s->rs);
    r = _mm512_mask_add_epi32(r, _mm512_cmpgt_epi32_mask(rem, thr), r,
                              s->one);
    r = _mm512_min_epi32(_mm512_max_epi32(r, s->lo), s->hi);
    return _mm512_add_epi32(r, s->zp);
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
    s.one = _mm512_set1_epi32(1);
    s.lo = _mm512_set1_epi32(qmin - zp);
    s.hi = _mm512_set1_epi32(qmax - zp);
    s.zp = _mm512_set1_epi32(zp);
    s.ls = _mm_cvtsi32_si128(lsh);
    s.rs = _mm_cvtsi32_si128(rsh);
    return s;
}

#endif
