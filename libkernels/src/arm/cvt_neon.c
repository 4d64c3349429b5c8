/* float <-> fp16/bf16 with NEON.
 *
 * fcvtn rounds by FPCR.RMode, which Linux starts at nearest-even and
 * nothing in the library changes; with FPCR.DN clear (Linux's default) a
 * NaN keeps its sign and top payload bits and is quietened, and with
 * FPCR.FZ/FZ16 clear subnormals are kept: exactly the C reference's bits.
 * fcvtl is exact. bf16 uses integer round-to-nearest-even on the float
 * bits, NaN lanes quietened instead of rounded, as the C reference does
 * (ARMv8.0 has no bf16 instruction). On 32-bit ARM (VFPv4's vcvt.f16.f32,
 * which also rounds to nearest even and keeps half subnormals) NEON writes
 * the default NaN, so neon_compat.h rebuilds the NaN lanes as above. */
#include <arm_neon.h>
#include <stdint.h>
#include <string.h>

#include "cvt.h"
#include "neon_compat.h"

static inline uint16x8_t f16_pack8(float32x4_t a, float32x4_t b)
{
    return vcombine_u16(kn_cvt_f16_f32(a), kn_cvt_f16_f32(b));
}

static inline void f16_unpack8(float *dst, uint16x8_t h)
{
    vst1q_f32(dst, kn_cvt_f32_f16(vget_low_u16(h)));
    vst1q_f32(dst + 4, kn_cvt_f32_f16(vget_high_u16(h)));
}

void kern_f32_to_f16_neon(uint16_t *dst, const float *src, size_t n)
{
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        vst1q_u16(dst + i, f16_pack8(vld1q_f32(src + i),
                                     vld1q_f32(src + i + 4)));
        vst1q_u16(dst + i + 8, f16_pack8(vld1q_f32(src + i + 8),
                                         vld1q_f32(src + i + 12)));
    }
    for (; i < n; i += 8) {
        /* The tail (at most 15) through a buffer, eight at a time. */
        float in[8] = {0};
        uint16_t out[8];
        const size_t rest = n - i < 8 ? n - i : 8;
        memcpy(in, src + i, rest * sizeof *in);
        vst1q_u16(out, f16_pack8(vld1q_f32(in), vld1q_f32(in + 4)));
        memcpy(dst + i, out, rest * sizeof *out);
    }
}

void kern_f16_to_f32_neon(float *dst, const uint16_t *src, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        f16_unpack8(dst + i, vld1q_u16(src + i));
    }
    if (i < n) {
        uint16_t in[8] = {0};
        float out[8];
        const size_t rest = n - i;
        memcpy(in, src + i, rest * sizeof *in);
        f16_unpack8(out, vld1q_u16(in));
        memcpy(dst + i, out, rest * sizeof *out);
    }
}

/* Four floats rounded to bf16, each in the high half of its 32-bit lane
 * (the low half is garbage the narrowing shift drops). */
static inline uint32x4_t bf16_round(float32x4_t f)
{
    const uint32x4_t x = vreinterpretq_u32_f32(f);
    const uint32x4_t lsb = vandq_u32(vshrq_n_u32(x, 16), vdupq_n_u32(1));
    const uint32x4_t rounded =
        vaddq_u32(vaddq_u32(x, vdupq_n_u32(0x7fff)), lsb);
    const uint32x4_t quiet = vorrq_u32(x, vdupq_n_u32(0x00400000));
    const uint32x4_t ordered = vceqq_f32(f, f); /* all ones unless NaN */
    return vbslq_u32(ordered, rounded, quiet);
}

static inline uint16x8_t bf16_pack8(float32x4_t a, float32x4_t b)
{
    return kn_shrn_high_n_u32(vshrn_n_u32(bf16_round(a), 16), bf16_round(b),
                            16);
}

void kern_f32_to_bf16_neon(uint16_t *dst, const float *src, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        vst1q_u16(dst + i, bf16_pack8(vld1q_f32(src + i),
                                      vld1q_f32(src + i + 4)));
    }
    if (i < n) {
        float in[8] = {0};
        uint16_t out[8];
        const size_t rest = n - i;
        memcpy(in, src + i, rest * sizeof *in);
        vst1q_u16(out, bf16_pack8(vld1q_f32(in), vld1q_f32(in + 4)));
        memcpy(dst + i, out, rest * sizeof *out);
    }
}

void kern_bf16_to_f32_neon(float *dst, const uint16_t *src, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const uint16x8_t h = vld1q_u16(src + i);
        vst1q_f32(dst + i, vreinterpretq_f32_u32(
                               vshll_n_u16(vget_low_u16(h), 16)));
        vst1q_f32(dst + i + 4, vreinterpretq_f32_u32(kn_shll_high_n_u16(h, 16)));
    }
    for (; i < n; i++) {
        dst[i] = kern_bf16_to_f32_1(src[i]);
    }
}
