/* The NEON operations the kernels use that AArch64 has and 32-bit ARM
 * (ARMv7-A with NEON and VFPv4, as on a Raspberry Pi 2/3/4 running a
 * 32-bit OS) lacks, as inline helpers named kn_*: on AArch64 each is the
 * AArch64 intrinsic, on ARMv7 the nearest sequence that gives the same
 * bits.
 *
 * One difference no helper can hide: ARMv7's NEON float arithmetic always
 * runs with flush-to-zero and default-NaN (the "standard FPSCR"), whatever
 * FPSCR says. Subnormal inputs and results of vaddq_f32, vmulq_f32,
 * vfmaq_f32, vmaxq_f32... are read and written as zero and a NaN result is
 * the default NaN, not the input's payload. The helpers below that must
 * give the C reference's bits (division, horizontal sums, fp16
 * conversion) therefore use VFP scalar instructions (which follow FPSCR,
 * where Linux leaves flush-to-zero and default-NaN off) or integer fix-ups;
 * a kernel built on plain NEON arithmetic agrees with the C reference on
 * ARMv7 only where no subnormal and no NaN payload is involved.
 *
 * Lane arguments must be constants, so those helpers are macros. */
#ifndef KERN_ARM_NEON_COMPAT_H
#define KERN_ARM_NEON_COMPAT_H

#include <arm_neon.h>
#include <stdint.h>

#if defined(__aarch64__)
#define KN_A64 1
#else
#define KN_A64 0
#if !defined(__ARM_NEON)
#error "neon_compat.h needs NEON (-mfpu=neon-vfpv4)"
#endif
#if !defined(__ARM_FEATURE_FMA)
/* vfmaq_f32 is VFMA, a VFPv4 instruction: without it the fused kernels
 * would silently become a multiply and an add, rounded twice. */
#error "neon_compat.h needs VFPv4's fused multiply-add (-mfpu=neon-vfpv4)"
#endif
#endif

/* ---- fused multiply-add ------------------------------------------------
 * acc + b * c rounded once (fmla / VFMA). On ARMv7 VFMA exists only
 * vector by vector (no by-scalar form), so the by-lane form duplicates the
 * lane first: the same single rounding. */
static inline float32x4_t kn_fmaq_f32(float32x4_t acc, float32x4_t b,
                                      float32x4_t c)
{
    return vfmaq_f32(acc, b, c);
}

#if KN_A64
#define kn_fmaq_laneq_f32(acc, b, v, lane) vfmaq_laneq_f32(acc, b, v, lane)
#define kn_dupq_laneq_f32(v, lane) vdupq_laneq_f32(v, lane)
#define kn_dupq_laneq_s32(v, lane) vdupq_laneq_s32(v, lane)
#else
#define kn_dupq_laneq_f32(v, lane)                                          \
    ((lane) < 2 ? vdupq_lane_f32(vget_low_f32(v), (lane) & 1)               \
                : vdupq_lane_f32(vget_high_f32(v), (lane) & 1))
#define kn_dupq_laneq_s32(v, lane)                                          \
    ((lane) < 2 ? vdupq_lane_s32(vget_low_s32(v), (lane) & 1)               \
                : vdupq_lane_s32(vget_high_s32(v), (lane) & 1))
#define kn_fmaq_laneq_f32(acc, b, v, lane)                                  \
    vfmaq_f32((acc), (b), kn_dupq_laneq_f32((v), (lane)))
#endif

/* ---- division ------------------------------------------------------------
 * a / b correctly rounded. ARMv7 NEON has only a reciprocal estimate, whose
 * Newton steps do not give IEEE quotients: four VFP divisions instead. */
static inline float32x4_t kn_divq_f32(float32x4_t a, float32x4_t b)
{
#if KN_A64
    return vdivq_f32(a, b);
#else
    float32x4_t r = vdupq_n_f32(0.0f);
    r = vsetq_lane_f32(vgetq_lane_f32(a, 0) / vgetq_lane_f32(b, 0), r, 0);
    r = vsetq_lane_f32(vgetq_lane_f32(a, 1) / vgetq_lane_f32(b, 1), r, 1);
    r = vsetq_lane_f32(vgetq_lane_f32(a, 2) / vgetq_lane_f32(b, 2), r, 2);
    r = vsetq_lane_f32(vgetq_lane_f32(a, 3) / vgetq_lane_f32(b, 3), r, 3);
    return r;
#endif
}

/* ---- horizontal reductions -----------------------------------------------
 * kn_addvq_f32: (a0 + a1) + (a2 + a3), faddp's order on AArch64; on ARMv7
 * the same three additions in VFP, so a subnormal sum is kept. */
static inline float kn_addvq_f32(float32x4_t a)
{
#if KN_A64
    return vaddvq_f32(a);
#else
    return (vgetq_lane_f32(a, 0) + vgetq_lane_f32(a, 1)) +
           (vgetq_lane_f32(a, 2) + vgetq_lane_f32(a, 3));
#endif
}

/* One step of fmaxv/fminv's rule: a NaN operand gives a NaN (the first
 * NaN, quietened), +0 is greater than -0. */
static inline float kn_fmax1(float a, float b)
{
    if (a != a) {
        return a + a;
    }
    if (b != b) {
        return b + b;
    }
    if (a == b) {
        /* Equal: only the zeros' signs can differ; +0 wins a max. */
        union { float f; uint32_t u; } x = {a}, y = {b};
        x.u &= y.u;
        return x.f;
    }
    return a > b ? a : b;
}

static inline float kn_fmin1(float a, float b)
{
    if (a != a) {
        return a + a;
    }
    if (b != b) {
        return b + b;
    }
    if (a == b) {
        union { float f; uint32_t u; } x = {a}, y = {b};
        x.u |= y.u;
        return x.f;
    }
    return a < b ? a : b;
}

/* The largest (smallest) lane by fmaxv (fminv): NaN if any lane is NaN,
 * +0 above -0. On ARMv7 in VFP, as vpmax would flush subnormals. */
static inline float kn_maxvq_f32(float32x4_t a)
{
#if KN_A64
    return vmaxvq_f32(a);
#else
    return kn_fmax1(kn_fmax1(vgetq_lane_f32(a, 0), vgetq_lane_f32(a, 1)),
                    kn_fmax1(vgetq_lane_f32(a, 2), vgetq_lane_f32(a, 3)));
#endif
}

static inline float kn_minvq_f32(float32x4_t a)
{
#if KN_A64
    return vminvq_f32(a);
#else
    return kn_fmin1(kn_fmin1(vgetq_lane_f32(a, 0), vgetq_lane_f32(a, 1)),
                    kn_fmin1(vgetq_lane_f32(a, 2), vgetq_lane_f32(a, 3)));
#endif
}

/* Integer sums are exact in any order. */
static inline int32_t kn_addvq_s32(int32x4_t a)
{
#if KN_A64
    return vaddvq_s32(a);
#else
    const int32x2_t s = vadd_s32(vget_low_s32(a), vget_high_s32(a));
    return vget_lane_s32(vpadd_s32(s, s), 0);
#endif
}

static inline uint32_t kn_addvq_u32(uint32x4_t a)
{
#if KN_A64
    return vaddvq_u32(a);
#else
    const uint32x2_t s = vadd_u32(vget_low_u32(a), vget_high_u32(a));
    return vget_lane_u32(vpadd_u32(s, s), 0);
#endif
}

/* [a0 + a1, a2 + a3, b0 + b1, b2 + b3] (addp). */
static inline int32x4_t kn_paddq_s32(int32x4_t a, int32x4_t b)
{
#if KN_A64
    return vpaddq_s32(a, b);
#else
    return vcombine_s32(vpadd_s32(vget_low_s32(a), vget_high_s32(a)),
                        vpadd_s32(vget_low_s32(b), vget_high_s32(b)));
#endif
}

/* [a0 + a1, a2 + a3, b0 + b1, b2 + b3] (faddp); VFP on ARMv7, as above. */
static inline float32x4_t kn_paddq_f32(float32x4_t a, float32x4_t b)
{
#if KN_A64
    return vpaddq_f32(a, b);
#else
    float32x4_t r = vdupq_n_f32(0.0f);
    r = vsetq_lane_f32(vgetq_lane_f32(a, 0) + vgetq_lane_f32(a, 1), r, 0);
    r = vsetq_lane_f32(vgetq_lane_f32(a, 2) + vgetq_lane_f32(a, 3), r, 1);
    r = vsetq_lane_f32(vgetq_lane_f32(b, 0) + vgetq_lane_f32(b, 1), r, 2);
    r = vsetq_lane_f32(vgetq_lane_f32(b, 2) + vgetq_lane_f32(b, 3), r, 3);
    return r;
#endif
}

/* ---- rounding conversion ---------------------------------------------------
 * float to int32, rounding to nearest, ties to even, saturating, NaN to 0
 * (fcvtns). ARMv7 converts only toward zero: below 2^23 in magnitude,
 * adding and subtracting 1.5 * 2^23 rounds to an integer by NEON's
 * round-to-nearest-even (both steps are exact but the first's rounding);
 * from 2^23 on every float is an integer already. A subnormal input
 * flushed to zero still rounds to 0. */
static inline int32x4_t kn_cvtnq_s32_f32(float32x4_t a)
{
#if KN_A64
    return vcvtnq_s32_f32(a);
#else
    const float32x4_t magic = vdupq_n_f32(0x1.8p23f);
    const uint32x4_t small = vcltq_f32(vabsq_f32(a), vdupq_n_f32(0x1p23f));
    const float32x4_t r = vsubq_f32(vaddq_f32(a, magic), magic);
    return vcvtq_s32_f32(vbslq_f32(small, r, a));
#endif
}

/* ---- permutations --------------------------------------------------------
 * zip1/zip2, uzp1/uzp2, trn1/trn2 of AArch64; ARMv7's vzipq/vuzpq/vtrnq
 * return both halves at once. */
#if KN_A64
#define KN_PERM(op, t, s)                                                   \
    static inline t kn_##op##1q_##s(t a, t b) { return v##op##1q_##s(a, b); } \
    static inline t kn_##op##2q_##s(t a, t b) { return v##op##2q_##s(a, b); }
#else
#define KN_PERM(op, t, s)                                                   \
    static inline t kn_##op##1q_##s(t a, t b)                               \
    {                                                                       \
        return v##op##q_##s(a, b).val[0];                                   \
    }                                                                       \
    static inline t kn_##op##2q_##s(t a, t b)                               \
    {                                                                       \
        return v##op##q_##s(a, b).val[1];                                   \
    }
#endif
KN_PERM(zip, float32x4_t, f32)
KN_PERM(uzp, float32x4_t, f32)
KN_PERM(trn, float32x4_t, f32)
KN_PERM(zip, int32x4_t, s32)
KN_PERM(uzp, int32x4_t, s32)
KN_PERM(trn, int32x4_t, s32)
KN_PERM(zip, uint32x4_t, u32)
KN_PERM(uzp, uint32x4_t, u32)
KN_PERM(trn, uint32x4_t, u32)
KN_PERM(zip, int16x8_t, s16)
KN_PERM(uzp, int16x8_t, s16)
KN_PERM(zip, uint16x8_t, u16)
KN_PERM(uzp, uint16x8_t, u16)
KN_PERM(zip, int8x16_t, s8)
KN_PERM(uzp, int8x16_t, s8)
KN_PERM(zip, uint8x16_t, u8)
KN_PERM(uzp, uint8x16_t, u8)
#undef KN_PERM

/* [a0, a1, b0, b1] and [a2, a3, b2, b3]: the 64-bit trn1/trn2 that the
 * second step of a 4 x 4 transpose needs (ARMv7 has no 64-bit lanes). */
static inline float32x4_t kn_combine_lo_f32(float32x4_t a, float32x4_t b)
{
    return vcombine_f32(vget_low_f32(a), vget_low_f32(b));
}

static inline float32x4_t kn_combine_hi_f32(float32x4_t a, float32x4_t b)
{
    return vcombine_f32(vget_high_f32(a), vget_high_f32(b));
}

/* r[i] lane j to r[j] lane i. */
static inline void kn_transpose4_f32(float32x4_t r[4])
{
    const float32x4_t t0 = kn_trn1q_f32(r[0], r[1]);
    const float32x4_t t1 = kn_trn2q_f32(r[0], r[1]);
    const float32x4_t t2 = kn_trn1q_f32(r[2], r[3]);
    const float32x4_t t3 = kn_trn2q_f32(r[2], r[3]);
    r[0] = kn_combine_lo_f32(t0, t2);
    r[1] = kn_combine_lo_f32(t1, t3);
    r[2] = kn_combine_hi_f32(t0, t2);
    r[3] = kn_combine_hi_f32(t1, t3);
}

/* ---- the _high forms (the upper half of a 128-bit register) ---------- */
static inline int16x8_t kn_mull_high_s8(int8x16_t a, int8x16_t b)
{
#if KN_A64
    return vmull_high_s8(a, b);
#else
    return vmull_s8(vget_high_s8(a), vget_high_s8(b));
#endif
}

static inline int32x4_t kn_mull_high_s16(int16x8_t a, int16x8_t b)
{
#if KN_A64
    return vmull_high_s16(a, b);
#else
    return vmull_s16(vget_high_s16(a), vget_high_s16(b));
#endif
}

static inline int16x8_t kn_movl_high_s8(int8x16_t a)
{
#if KN_A64
    return vmovl_high_s8(a);
#else
    return vmovl_s8(vget_high_s8(a));
#endif
}

static inline int32x4_t kn_movl_high_s16(int16x8_t a)
{
#if KN_A64
    return vmovl_high_s16(a);
#else
    return vmovl_s16(vget_high_s16(a));
#endif
}

#if KN_A64
#define kn_shrn_high_n_u32(lo, a, n) vshrn_high_n_u32(lo, a, n)
#define kn_shll_high_n_u16(a, n) vshll_high_n_u16(a, n)
#else
#define kn_shrn_high_n_u32(lo, a, n) vcombine_u16((lo), vshrn_n_u32((a), (n)))
#define kn_shll_high_n_u16(a, n) vshll_n_u16(vget_high_u16(a), (n))
#endif

/* ---- fp16 ------------------------------------------------------------------
 * Four floats to IEEE half bits and back (fcvtn/fcvtl; VCVT.F16.F32 on
 * ARMv7, part of VFPv4). Rounding is to nearest even on both, and neither
 * flushes a half subnormal (ARMv7's flush-to-zero does not apply to half
 * precision; a float subnormal rounds to a signed zero either way). NaNs
 * differ: ARMv7 NEON writes the default NaN, so its NaN lanes are rebuilt
 * with integer operations as fcvtn/fcvtl and the C reference make them:
 * sign kept, quietened, the top payload bits kept. GCC declares ARMv7's
 * half-precision intrinsics only with -mfp16-format=ieee; KN_HAVE_F16CVT
 * says whether they are there. */
#if KN_A64 || (defined(__ARM_FP16_FORMAT_IEEE) && defined(__ARM_FP) &&     \
               (__ARM_FP & 2))
#define KN_HAVE_F16CVT 1
#else
#define KN_HAVE_F16CVT 0
#endif

#if KN_HAVE_F16CVT
static inline uint16x4_t kn_cvt_f16_f32(float32x4_t a)
{
#if KN_A64
    return vreinterpret_u16_f16(vcvt_f16_f32(a));
#else
    const uint16x4_t h = vreinterpret_u16_f16(vcvt_f16_f32(a));
    const uint32x4_t x = vreinterpretq_u32_f32(a);
    /* |x| > inf's bits: a NaN (an integer compare, nothing flushed). */
    const uint32x4_t nan = vcgtq_u32(vandq_u32(x, vdupq_n_u32(0x7fffffffu)),
                                     vdupq_n_u32(0x7f800000u));
    const uint32x4_t q =
        vorrq_u32(vandq_u32(vshrq_n_u32(x, 16), vdupq_n_u32(0x8000u)),
                  vorrq_u32(vdupq_n_u32(0x7e00u),
                            vandq_u32(vshrq_n_u32(x, 13),
                                      vdupq_n_u32(0x03ffu))));
    return vbsl_u16(vmovn_u32(nan), vmovn_u32(q), h);
#endif
}

static inline float32x4_t kn_cvt_f32_f16(uint16x4_t h)
{
#if KN_A64
    return vcvt_f32_f16(vreinterpret_f16_u16(h));
#else
    const float32x4_t f = vcvt_f32_f16(vreinterpret_f16_u16(h));
    const uint32x4_t x = vmovl_u16(h);
    const uint32x4_t nan = vcgtq_u32(vandq_u32(x, vdupq_n_u32(0x7fffu)),
                                     vdupq_n_u32(0x7c00u));
    const uint32x4_t q =
        vorrq_u32(vshlq_n_u32(vandq_u32(x, vdupq_n_u32(0x8000u)), 16),
                  vorrq_u32(vdupq_n_u32(0x7fc00000u),
                            vshlq_n_u32(vandq_u32(x, vdupq_n_u32(0x03ffu)),
                                        13)));
    return vbslq_f32(nan, vreinterpretq_f32_u32(q), f);
#endif
}
#endif

#endif
