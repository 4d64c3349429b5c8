/* Broadcast arithmetic with NEON: 4 lanes, tails one element at a time
 * (the same IEEE operation as the C rows, so every path gives the same
 * bits). The NCHW8c channel scale is two vectors per pixel: a block's
 * eight scales stay in registers for the whole plane. */
#include <arm_neon.h>
#include <stddef.h>
#include <string.h>

#include "elem.h"
#include "neon_compat.h"

typedef float32x4_t V;
#define VL 4
#define ELEM_FN(name) kern_elem_##name##_neon
#define ELEM_SCALAR_TAIL 1

static inline V vset(float a) { return vdupq_n_f32(a); }
static inline V vadd(V a, V b) { return vaddq_f32(a, b); }
static inline V vsub(V a, V b) { return vsubq_f32(a, b); }
static inline V vmul(V a, V b) { return vmulq_f32(a, b); }
static inline V vdiv(V a, V b) { return kn_divq_f32(a, b); }
static inline V vload(const float *p) { return vld1q_f32(p); }
static inline void vstore(float *p, V a) { vst1q_f32(p, a); }

#include "../x86/elem_tmpl.h"

static inline V and_u32(uint32x4_t m, V a)
{
    return vreinterpretq_f32_u32(vandq_u32(m, vreinterpretq_u32_f32(a)));
}

void kern_elem_scale_nchw8c_neon(float *y, const float *x, const float *s,
                                 size_t hw, size_t lanes)
{
    /* Lanes [0, lanes) kept: the padding lanes' product (NaN from an inf
     * times 0 included) is cleared by the and, as the C row writes 0. */
    float sv[8] = {0};
    uint32_t keep[8] = {0};
    for (size_t l = 0; l < lanes && l < 8; l++) {
        sv[l] = s[l];
        keep[l] = 0xffffffffu;
    }
    const V s0 = vld1q_f32(sv), s1 = vld1q_f32(sv + 4);
    const uint32x4_t k0 = vld1q_u32(keep), k1 = vld1q_u32(keep + 4);
    for (size_t i = 0; i < hw; i++) {
        const float *xp = x + i * 8;
        float *yp = y + i * 8;
        vst1q_f32(yp, and_u32(k0, vmulq_f32(vld1q_f32(xp), s0)));
        vst1q_f32(yp + 4, and_u32(k1, vmulq_f32(vld1q_f32(xp + 4), s1)));
    }
}
