/* NEON conversions between NCHW and NCHW8c: 4 pixels of a block's 8
 * channels are two 4 x 4 tiles (channels 0-3 and 4-7), loaded as vectors
 * of one layout, transposed in registers and stored as vectors of the
 * other; the pixels past the last multiple of 4 go one value at a time as
 * in the definition (src/layout.c). Values are moved, never computed, so
 * the results are those of the C path bit for bit. */
#include <arm_neon.h>

#include "neon_compat.h"
#include "layout.h"

void kern_nchw_to_nchw8c_neon(size_t batch, size_t c, size_t hw,
                              const float *x, float *y)
{
    const size_t cb = (c + 7) / 8;
    for (size_t b = 0; b < batch; b++) {
        for (size_t k = 0; k < cb; k++) {
            float *yk = y + (b * cb + k) * hw * 8;
            const size_t n = c - k * 8 < 8 ? c - k * 8 : 8;
            const float *xk = x + (b * c + k * 8) * hw;
            size_t p = 0;
            for (; p + 4 <= hw; p += 4) {
                float32x4_t t[8];
                for (size_t l = 0; l < 8; l++) {
                    /* missing channels: the zero padding lanes */
                    t[l] = l < n ? vld1q_f32(xk + l * hw + p)
                                 : vdupq_n_f32(0.0f);
                }
                kn_transpose4_f32(t);
                kn_transpose4_f32(t + 4);
                for (size_t i = 0; i < 4; i++) {
                    vst1q_f32(yk + (p + i) * 8, t[i]);
                    vst1q_f32(yk + (p + i) * 8 + 4, t[4 + i]);
                }
            }
            for (; p < hw; p++) {
                for (size_t l = 0; l < 8; l++) {
                    yk[p * 8 + l] = l < n ? xk[l * hw + p] : 0.0f;
                }
            }
        }
    }
}

void kern_nchw8c_to_nchw_neon(size_t batch, size_t c, size_t hw,
                              const float *x, float *y)
{
    const size_t cb = (c + 7) / 8;
    for (size_t b = 0; b < batch; b++) {
        for (size_t k = 0; k < cb; k++) {
            const float *xk = x + (b * cb + k) * hw * 8;
            const size_t n = c - k * 8 < 8 ? c - k * 8 : 8;
            float *yk = y + (b * c + k * 8) * hw;
            size_t p = 0;
            for (; p + 4 <= hw; p += 4) {
                float32x4_t t[8];
                for (size_t i = 0; i < 4; i++) {
                    t[i] = vld1q_f32(xk + (p + i) * 8);
                    t[4 + i] = vld1q_f32(xk + (p + i) * 8 + 4);
                }
                kn_transpose4_f32(t);
                kn_transpose4_f32(t + 4);
                for (size_t l = 0; l < n; l++) {
                    vst1q_f32(yk + l * hw + p, t[l]);
                }
            }
            for (; p < hw; p++) {
                for (size_t l = 0; l < n; l++) {
                    yk[l * hw + p] = xk[p * 8 + l];
                }
            }
        }
    }
}
