/* NEON convolution: conv_tmpl.h (the x86 paths' body) over 8-float
 * vectors held as two float32x4_t, so the 4 x 24 tile is 24 of NEON's 32
 * registers and the blocked (NCHW8c) layouts keep their 8-channel blocks.
 * fmla is fused, as the x86 FMA path is: checkkern allows both the same
 * rounding bound against the C reference, and the raw- and packed-weight
 * entries of this path still give each other's bits. */
#include <arm_neon.h>
#include <stdint.h>

#include "conv.h"
#include "neon_compat.h"

typedef struct {
    float32x4_t lo, hi;
} v8f;

#define V8 v8f
#define V4 float32x4_t
#define CONV_FN(name) name##_neon

#define V8_INLINE static inline __attribute__((always_inline))

V8_INLINE v8f v8_zero(void)
{
    return (v8f){vdupq_n_f32(0.0f), vdupq_n_f32(0.0f)};
}

V8_INLINE v8f v8_set1(float x)
{
    return (v8f){vdupq_n_f32(x), vdupq_n_f32(x)};
}

V8_INLINE v8f v8_load(const float *p)
{
    return (v8f){vld1q_f32(p), vld1q_f32(p + 4)};
}

V8_INLINE void v8_store(float *p, v8f v)
{
    vst1q_f32(p, v.lo);
    vst1q_f32(p + 4, v.hi);
}

V8_INLINE v8f v8_bcast(const float *p)
{
    const float32x4_t x = vld1q_dup_f32(p);
    return (v8f){x, x};
}

V8_INLINE v8f v8_fma(v8f a, v8f b, v8f c)
{
    return (v8f){vfmaq_f32(c.lo, a.lo, b.lo), vfmaq_f32(c.hi, a.hi, b.hi)};
}

/* maxps/minps's rule: a if a > b (a < b), else b, so a NaN b survives and
 * the zeros' signs come out as on x86. */
V8_INLINE float32x4_t max4(float32x4_t a, float32x4_t b)
{
    return vbslq_f32(vcgtq_f32(a, b), a, b);
}

V8_INLINE float32x4_t min4(float32x4_t a, float32x4_t b)
{
    return vbslq_f32(vcltq_f32(a, b), a, b);
}

V8_INLINE v8f v8_max(v8f a, v8f b)
{
    return (v8f){max4(a.lo, b.lo), max4(a.hi, b.hi)};
}

V8_INLINE v8f v8_min(v8f a, v8f b)
{
    return (v8f){min4(a.lo, b.lo), min4(a.hi, b.hi)};
}

V8_INLINE v8f v8_and(v8f a, v8f m)
{
    return (v8f){vreinterpretq_f32_u32(vandq_u32(vreinterpretq_u32_f32(a.lo),
                                                 vreinterpretq_u32_f32(m.lo))),
                 vreinterpretq_f32_u32(vandq_u32(vreinterpretq_u32_f32(a.hi),
                                                 vreinterpretq_u32_f32(m.hi)))};
}

V8_INLINE v8f v8_load_mask(const int32_t *p)
{
    return (v8f){vreinterpretq_f32_s32(vld1q_s32(p)),
                 vreinterpretq_f32_s32(vld1q_s32(p + 4))};
}

#define v8_low(v) ((v).lo)
#define v8_high(v) ((v).hi)
#define v4_store(p, q) vst1q_f32((p), (q))

/* r[i] lane j to r[j] lane i, for 4 rows of 4. */
V8_INLINE void transpose4(float32x4_t *r0, float32x4_t *r1, float32x4_t *r2,
                          float32x4_t *r3)
{
    const float32x4_t t0 = kn_trn1q_f32(*r0, *r1);
    const float32x4_t t1 = kn_trn2q_f32(*r0, *r1);
    const float32x4_t t2 = kn_trn1q_f32(*r2, *r3);
    const float32x4_t t3 = kn_trn2q_f32(*r2, *r3);
    *r0 = kn_combine_lo_f32(t0, t2);
    *r1 = kn_combine_lo_f32(t1, t3);
    *r2 = kn_combine_hi_f32(t0, t2);
    *r3 = kn_combine_hi_f32(t1, t3);
}

V8_INLINE void v8_transpose4x4_halves(const v8f v[4], v8f c[4])
{
    float32x4_t l0 = v[0].lo, l1 = v[1].lo, l2 = v[2].lo, l3 = v[3].lo;
    float32x4_t h0 = v[0].hi, h1 = v[1].hi, h2 = v[2].hi, h3 = v[3].hi;
    transpose4(&l0, &l1, &l2, &l3);
    transpose4(&h0, &h1, &h2, &h3);
    c[0] = (v8f){l0, h0};
    c[1] = (v8f){l1, h1};
    c[2] = (v8f){l2, h2};
    c[3] = (v8f){l3, h3};
}

/* r[i] lane j to r[j] lane i, for 8 rows of 8: four 4 x 4 blocks, the
 * off-diagonal ones swapped. */
V8_INLINE void transpose8(v8f r[8])
{
    float32x4_t a[4] = {r[0].lo, r[1].lo, r[2].lo, r[3].lo};
    float32x4_t b[4] = {r[0].hi, r[1].hi, r[2].hi, r[3].hi};
    float32x4_t c[4] = {r[4].lo, r[5].lo, r[6].lo, r[7].lo};
    float32x4_t d[4] = {r[4].hi, r[5].hi, r[6].hi, r[7].hi};
    transpose4(&a[0], &a[1], &a[2], &a[3]);
    transpose4(&b[0], &b[1], &b[2], &b[3]);
    transpose4(&c[0], &c[1], &c[2], &c[3]);
    transpose4(&d[0], &d[1], &d[2], &d[3]);
    for (int i = 0; i < 4; i++) {
        r[i] = (v8f){a[i], c[i]};
        r[i + 4] = (v8f){b[i], d[i]};
    }
}

/* The even (odd) elements of a then b, in order. */
V8_INLINE v8f evens8(v8f a, v8f b)
{
    return (v8f){kn_uzp1q_f32(a.lo, a.hi), kn_uzp1q_f32(b.lo, b.hi)};
}

V8_INLINE v8f odds8(v8f a, v8f b)
{
    return (v8f){kn_uzp2q_f32(a.lo, a.hi), kn_uzp2q_f32(b.lo, b.hi)};
}

V8_INLINE float hsum8(v8f x)
{
    return kn_addvq_f32(vaddq_f32(x.lo, x.hi));
}

#include "../x86/conv_tmpl.h"
