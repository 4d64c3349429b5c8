/* The NEON int8 lowering (kern_im2col_s8): im2col_s8_tmpl.h's body (its
 * comment says how it works), byte for byte the C reference's: the 16 x 16
 * byte transpose by trn at 8, 16, 32 and 64 bits, tbl its lookup (0 for an
 * index of 16 or more, as pshufb gives for 0x80). */
#include <arm_neon.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "conv.h"
#include "neon_compat.h"

/* tbl of a 16-byte table (AArch64's tbl; two 8-byte vtbl2 on armv7). */
static inline int8x16_t tbl16(int8x16_t t, int8x16_t idx)
{
#if KN_A64
    return vqtbl1q_s8(t, vreinterpretq_u8_s8(idx));
#else
    const int8x8x2_t tt = {{vget_low_s8(t), vget_high_s8(t)}};
    return vcombine_s8(vtbl2_s8(tt, vget_low_s8(idx)),
                       vtbl2_s8(tt, vget_high_s8(idx)));
#endif
}

/* r[i] lane j to r[j] lane i, 16 x 16 bytes. */
static void transpose16x16_s8(int8x16_t r[16])
{
    for (int i = 0; i < 16; i += 2) {
        const int8x16x2_t t = vtrnq_s8(r[i], r[i + 1]);
        r[i] = t.val[0];
        r[i + 1] = t.val[1];
    }
    for (int g = 0; g < 16; g += 4) {
        for (int j = 0; j < 2; j++) {
            const int16x8x2_t t = vtrnq_s16(vreinterpretq_s16_s8(r[g + j]),
                                            vreinterpretq_s16_s8(r[g + j + 2]));
            r[g + j] = vreinterpretq_s8_s16(t.val[0]);
            r[g + j + 2] = vreinterpretq_s8_s16(t.val[1]);
        }
    }
    for (int g = 0; g < 16; g += 8) {
        for (int j = 0; j < 4; j++) {
            const int32x4x2_t t = vtrnq_s32(vreinterpretq_s32_s8(r[g + j]),
                                            vreinterpretq_s32_s8(r[g + j + 4]));
            r[g + j] = vreinterpretq_s8_s32(t.val[0]);
            r[g + j + 4] = vreinterpretq_s8_s32(t.val[1]);
        }
    }
    for (int j = 0; j < 8; j++) {
        const int8x16_t a = r[j], b = r[j + 8];
        r[j] = vcombine_s8(vget_low_s8(a), vget_low_s8(b));
        r[j + 8] = vcombine_s8(vget_high_s8(a), vget_high_s8(b));
    }
}

static inline int8x16_t load_w(const int8_t *p, int w)
{
    if (w == 4) {
        int32_t v;
        memcpy(&v, p, 4);
        return vreinterpretq_s8_s32(vsetq_lane_s32(v, vdupq_n_s32(0), 0));
    }
    if (w == 8) {
        return vcombine_s8(vld1_s8(p), vdup_n_s8(0));
    }
    return vld1q_s8(p);
}

static inline void store_w(int8_t *p, int8x16_t v, int w)
{
    if (w == 4) {
        const int32_t t = vgetq_lane_s32(vreinterpretq_s32_s8(v), 0);
        memcpy(p, &t, 4);
    } else if (w == 8) {
        vst1_s8(p, vget_low_s8(v));
    } else {
        vst1q_s8(p, v);
    }
}

/* Where output column ox's window of kw taps, first column ix0 (< 0 in
 * the left padding), is loaded from and how it is unpacked: the w-byte
 * load starts at column *st (inside [0, in_w - w]); the table index puts
 * load byte t + ix0 - st at tap t and is 0x80 (a zero) for taps in the
 * padding. */
static inline int8x16_t window_ctl(ptrdiff_t ix0, ptrdiff_t iw, int w,
                                   ptrdiff_t *st)
{
    static const int8_t iota_b[16] = {0, 1, 2,  3,  4,  5,  6,  7,
                                      8, 9, 10, 11, 12, 13, 14, 15};
    const int8x16_t iota = vld1q_s8(iota_b);
    ptrdiff_t s = ix0 < 0 ? 0 : ix0;
    s = s < iw - w ? s : iw - w;
    *st = s;
    /* tap t is valid for t in [lo, hi), both in [0, 16] */
    const ptrdiff_t lo = ix0 < 0 ? (-ix0 < 16 ? -ix0 : 16) : 0;
    ptrdiff_t hi = iw - ix0;
    hi = hi < 0 ? 0 : hi < 16 ? hi : 16;
    const uint8x16_t valid =
        vandq_u8(vcgeq_s8(iota, vdupq_n_s8((int8_t)lo)),
                 vcgtq_s8(vdupq_n_s8((int8_t)hi), iota));
    return vbslq_s8(valid, vaddq_s8(iota, vdupq_n_s8((int8_t)(ix0 - s))),
                    vdupq_n_s8(INT8_MIN));
}

typedef int8x16_t i8x16;

static inline i8x16 v_zero(void)
{
    return vdupq_n_s8(0);
}

static inline i8x16 v_load16(const int8_t *p)
{
    return vld1q_s8(p);
}

static inline void v_store16(int8_t *p, i8x16 v)
{
    vst1q_s8(p, v);
}

static inline i8x16 v_tbl(i8x16 v, i8x16 ctl)
{
    return tbl16(v, ctl);
}

static inline i8x16 v_add8(i8x16 a, i8x16 b)
{
    return vaddq_s8(a, b);
}

static inline i8x16 v_rows4(int32_t r0, int32_t r1, int32_t r2, int32_t r3)
{
    int32x4_t v = vdupq_n_s32(0);
    v = vsetq_lane_s32(r0, v, 0);
    v = vsetq_lane_s32(r1, v, 1);
    v = vsetq_lane_s32(r2, v, 2);
    v = vsetq_lane_s32(r3, v, 3);
    return vreinterpretq_s8_s32(v);
}

static inline void v_transpose16(i8x16 r[16])
{
    transpose16x16_s8(r);
}

#define IM2COL_FN(name) name##_neon
#include "../im2col_s8_tmpl.h"
