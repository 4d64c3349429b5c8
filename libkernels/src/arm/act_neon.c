/* Activations with NEON: 4 lanes, tails through a stack buffer; the
 * polynomials and reductions of act_tmpl.h (the x86 paths' body). The
 * functions that go through exp set FPCR.FZ for their duration, as the x86
 * paths set MXCSR's FTZ/DAZ: the limits the template is written for (GELU
 * and SiLU of -inf are 0, not the smallest subnormal) then hold here too.
 * Divisions are real divisions. */
#include <arm_neon.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "act.h"
#include "neon_compat.h"

typedef float32x4_t V;
typedef uint32x4_t M;
#define VL 4
#define ACT_FN(name) kern_##name##_neon
#define ACT_HAVE_FTZ 1

/* FPCR.FZ (bit 24; FPSCR.FZ, the same bit, on 32-bit ARM): subnormal
 * inputs and results of float operations read and written as zero. The
 * caller's FPCR comes back on leave. (32-bit NEON flushes whatever FPSCR
 * says; the bit makes the VFP scalar operations agree with it.) */
#if defined(__aarch64__)
static inline unsigned ftz_enter(void)
{
    uint64_t fpcr;
    __asm__ volatile("mrs %0, fpcr" : "=r"(fpcr));
    __asm__ volatile("msr fpcr, %0" : : "r"(fpcr | (1u << 24)));
    return (unsigned)fpcr;
}

static inline void ftz_leave(unsigned fpcr)
{
    __asm__ volatile("msr fpcr, %0" : : "r"((uint64_t)fpcr));
}
#else
static inline unsigned ftz_enter(void)
{
    unsigned fpscr;
    __asm__ volatile("vmrs %0, fpscr" : "=r"(fpscr));
    __asm__ volatile("vmsr fpscr, %0" : : "r"(fpscr | (1u << 24)));
    return fpscr;
}

static inline void ftz_leave(unsigned fpscr)
{
    __asm__ volatile("vmsr fpscr, %0" : : "r"(fpscr));
}
#endif

static inline V vset(float a) { return vdupq_n_f32(a); }
static inline V vadd(V a, V b) { return vaddq_f32(a, b); }
static inline V vsub(V a, V b) { return vsubq_f32(a, b); }
static inline V vmul(V a, V b) { return vmulq_f32(a, b); }
static inline V vfma(V a, V b, V c) { return vfmaq_f32(c, a, b); }

static inline V vabs(V a) { return vabsq_f32(a); }

static inline V vnegabs(V a)
{
    return vreinterpretq_f32_u32(vorrq_u32(vreinterpretq_u32_f32(a),
                                           vdupq_n_u32(0x80000000u)));
}

/* maxps/minps's rule: the second operand unless the first is strictly
 * greater (smaller), so a NaN second operand is kept. */
static inline V vmax_keepnan(V c, V a)
{
    return vbslq_f32(vcgtq_f32(c, a), c, a);
}

static inline V vmin_keepnan(V c, V a)
{
    return vbslq_f32(vcltq_f32(c, a), c, a);
}

static inline V vnegabs_min(V a, float c)
{
    return vmax_keepnan(vdupq_n_f32(-c), vnegabs(a)); /* NaN kept */
}

static inline V vcopysign(V mag, V sgn)
{
    return vbslq_f32(vdupq_n_u32(0x80000000u), sgn, mag);
}

static inline M vlt(V a, V b) { return vcltq_f32(a, b); }
static inline M vge(V a, V b) { return vcgeq_f32(a, b); }
static inline M vgt(V a, V b) { return vcgtq_f32(a, b); }
static inline M vgt_or_nan(V a, V b) { return vmvnq_u32(vcleq_f32(a, b)); }
static inline V vsel(M m, V a, V b) { return vbslq_f32(m, b, a); }
static inline V vand_mask(M m, V a)
{
    return vreinterpretq_f32_u32(vandq_u32(m, vreinterpretq_u32_f32(a)));
}

static inline V vdiv(V a, V b) { return kn_divq_f32(a, b); }

/* 2^n with n = bits(t) - bits(MAGIC) as two factors 2^(n/2), so that n
 * down to -152 stays exact until the final, correctly rounded multiply. */
static inline void pow2_halves(V t, V *s1, V *s2)
{
    const int32x4_t ni =
        vsubq_s32(vreinterpretq_s32_f32(t),
                  vreinterpretq_s32_f32(vdupq_n_f32(0x1.8p23f)));
    const int32x4_t n1 = vshrq_n_s32(ni, 1);
    const int32x4_t n2 = vsubq_s32(ni, n1);
    const int32x4_t bias = vdupq_n_s32(127);
    *s1 = vreinterpretq_f32_s32(vshlq_n_s32(vaddq_s32(n1, bias), 23));
    *s2 = vreinterpretq_f32_s32(vshlq_n_s32(vaddq_s32(n2, bias), 23));
}

static inline V vscale2(V p, V n, V t)
{
    (void)n;
    V s1, s2;
    pow2_halves(t, &s1, &s2);
    return vmulq_f32(vmulq_f32(p, s1), s2);
}

static inline void vscale2_pair(V p, V q, V n, V t, V *pn, V *qn)
{
    (void)n;
    V s1, s2;
    pow2_halves(t, &s1, &s2);
    *pn = vmulq_f32(vmulq_f32(p, s1), s2);
    *qn = vmulq_f32(vmulq_f32(q, s1), s2);
}

static inline V vload(const float *p) { return vld1q_f32(p); }
static inline void vstore(float *p, V a) { vst1q_f32(p, a); }

static inline V vload_tail(const float *p, size_t rest)
{
    float buf[4] = {0};
    memcpy(buf, p, rest * sizeof *buf);
    return vld1q_f32(buf);
}

static inline void vstore_tail(float *p, V a, size_t rest)
{
    float buf[4];
    vst1q_f32(buf, a);
    memcpy(p, buf, rest * sizeof *buf);
}

#include "../x86/act_tmpl.h"
