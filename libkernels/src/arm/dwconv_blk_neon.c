/* The NCHW8c depthwise convolution with NEON: one block of 8 channels is
 * two vectors per pixel, so an output pixel is the bias plus, for each tap
 * in row-major order, one multiply and one add per half: the bits of the
 * NEON NCHW path (dwconv_neon.c), which the checker requires, that path
 * taking a tap in the padding as w * +0 (which only matters for a -0 sum
 * or an infinite weight) and so this one too. The activation is
 * kern_fuse1's comparisons; the padding lanes of the last block are +0
 * whatever the input's padding lanes hold. */
#include <arm_neon.h>
#include <stdbool.h>
#include <stdint.h>

#include "conv.h"
#include "dwconv.h"
#include "neon_compat.h"
#include "nn.h"

/* kern_fuse1 on four lanes: v < 0 ? 0 : v (NaN and -0 kept), then for
 * ReLU6 v > 6 ? 6 : v. */
static inline float32x4_t fuse4(float32x4_t v, int act)
{
    if (act == KERN_FUSE_NONE) {
        return v;
    }
    const float32x4_t z = vdupq_n_f32(0.0f);
    v = vbslq_f32(vcltq_f32(v, z), z, v);
    if (act == KERN_FUSE_RELU6) {
        const float32x4_t six = vdupq_n_f32(6.0f);
        v = vbslq_f32(vcgtq_f32(v, six), six, v);
    }
    return v;
}

/* acc + w * x, a multiply and an add (the NCHW path's rounding). */
static inline float32x4_t mla(float32x4_t acc, const float *w, const float *x)
{
    return vaddq_f32(vmulq_f32(vld1q_f32(w), vld1q_f32(x)), acc);
}

/* One block's bias and the lanes of its real channels (a last block's
 * padding lanes are stored as +0). */
struct blk_lanes {
    float32x4_t bias0, bias1;
    uint32x4_t keep0, keep1;
};

static inline struct blk_lanes blk_lanes_of(size_t channels,
                                            const float *bias, size_t j)
{
    enum { L = KERN_CBLOCK };
    const size_t n = kern_nn_block_lanes(channels, j);
    float bb[L] = {0}, mm[L];
    for (size_t l = 0; l < L; l++) {
        bb[l] = bias && l < n ? bias[j * L + l] : 0.0f;
        mm[l] = l < n ? 1.0f : 0.0f;
    }
    struct blk_lanes bl;
    bl.bias0 = vld1q_f32(bb);
    bl.bias1 = vld1q_f32(bb + 4);
    bl.keep0 = vcgtq_f32(vld1q_f32(mm), vdupq_n_f32(0.5f));
    bl.keep1 = vcgtq_f32(vld1q_f32(mm + 4), vdupq_n_f32(0.5f));
    return bl;
}

/* An output pixel's two halves, activated, the padding lanes zeroed. */
static inline void store_blk(float *yo, float32x4_t a0, float32x4_t a1,
                             const struct blk_lanes *bl, int act)
{
    vst1q_f32(yo, vreinterpretq_f32_u32(vandq_u32(
                      bl->keep0, vreinterpretq_u32_f32(fuse4(a0, act)))));
    vst1q_f32(yo + 4, vreinterpretq_f32_u32(vandq_u32(
                          bl->keep1, vreinterpretq_u32_f32(fuse4(a1, act)))));
}

/* The real kernel taps [*k0, *k1) of output o along one axis. */
static inline void taps(size_t o, size_t stride, size_t pad, size_t k,
                        size_t in, size_t *k0, size_t *k1)
{
    const size_t start = o * stride; /* padded coordinate of tap 0 */
    size_t a = start < pad ? pad - start : 0;
    size_t b = in + pad > start ? in + pad - start : 0;
    a = a < k ? a : k;
    b = b < k ? b : k;
    *k0 = a;
    *k1 = b > a ? b : a;
}

void kern_dwconv2d_blk_neon(const struct kern_dwconv2d_shape *s,
                            size_t out_h, size_t out_w, size_t b0, size_t b1,
                            const float *x, const float *packed,
                            const float *bias, int act, float *y)
{
    enum { L = KERN_CBLOCK };
    if (kern_nn_dil(s->dilation_h) > 1 || kern_nn_dil(s->dilation_w) > 1) {
        /* the public wrapper sends these to the dilated entry; a direct
         * caller gets it too */
        kern_dwconv2d_blk_dil_neon(s, out_h, out_w, b0, b1, x, packed, bias,
                                   act, y);
        return;
    }
    const size_t ih = s->in_h, iw = s->in_w, kh = s->kh, kw = s->kw;
    const size_t taps_n = kh * kw, nb = kern_nn_cblocks(s->channels);
    static const float zeros[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    for (size_t b = 0; b < s->batch; b++) {
        for (size_t j = b0; j < b1; j++) {
            const float *xp = x + (b * nb + j) * ih * iw * L;
            const float *wj = packed + j * taps_n * L;
            float *yp = y + (b * nb + j) * out_h * out_w * L;
            const struct blk_lanes bl = blk_lanes_of(s->channels, bias, j);
            for (size_t oy = 0; oy < out_h; oy++) {
                size_t ky0, ky1;
                taps(oy, s->stride_h, s->pad_top, kh, ih, &ky0, &ky1);
                for (size_t ox = 0; ox < out_w; ox++) {
                    size_t kx0, kx1;
                    taps(ox, s->stride_w, s->pad_left, kw, iw, &kx0, &kx1);
                    float32x4_t a0 = bl.bias0, a1 = bl.bias1;
                    if (ky0 == 0 && ky1 == kh && kx0 == 0 && kx1 == kw) {
                        /* the window inside the input: no test per tap */
                        const size_t iy0 = oy * s->stride_h - s->pad_top;
                        const size_t ix0 = ox * s->stride_w - s->pad_left;
                        const float *xr = xp + (iy0 * iw + ix0) * L;
                        for (size_t ky = 0; ky < kh; ky++) {
                            const float *xk = xr + ky * iw * L;
                            const float *wk = wj + ky * kw * L;
                            for (size_t kx = 0; kx < kw; kx++) {
                                a0 = mla(a0, wk + kx * L, xk + kx * L);
                                a1 = mla(a1, wk + kx * L + 4, xk + kx * L + 4);
                            }
                        }
                    } else {
                        for (size_t ky = 0; ky < kh; ky++) {
                            const bool row_in = ky >= ky0 && ky < ky1;
                            const size_t iy =
                                row_in ? oy * s->stride_h + ky - s->pad_top : 0;
                            for (size_t kx = 0; kx < kw; kx++) {
                                const float *wk = wj + (ky * kw + kx) * L;
                                if (row_in && kx >= kx0 && kx < kx1) {
                                    const float *xk =
                                        xp + (iy * iw + ox * s->stride_w + kx -
                                              s->pad_left) *
                                                 L;
                                    a0 = mla(a0, wk, xk);
                                    a1 = mla(a1, wk + 4, xk + 4);
                                } else {
                                    a0 = mla(a0, wk, zeros);
                                    a1 = mla(a1, wk + 4, zeros);
                                }
                            }
                        }
                    }
                    store_blk(yp + (oy * out_w + ox) * L, a0, a1, &bl, act);
                }
            }
        }
    }
}

/* The real taps [*k0, *k1) of output o along an axis with dilation d: tap
 * k reads padded coordinate o * stride + k d, real when it lies in [pad,
 * pad + in). */
static inline void taps_d(size_t o, size_t stride, size_t d, size_t pad,
                          size_t k, size_t in, size_t *k0, size_t *k1)
{
    const size_t start = o * stride;
    size_t a = start < pad ? (pad - start + d - 1) / d : 0;
    size_t b = start < pad + in ? (pad + in - start + d - 1) / d : 0;
    a = a < k ? a : k;
    b = b < k ? b : k;
    *k0 = a;
    *k1 = b > a ? b : a;
}

/* Dilated NCHW8c shapes. The reference (kern_dwconv2d_blk_c, the bits of
 * kern_dwconv2d_c) and the dilated NCHW loop (dwconv_dil_tmpl.h) skip the
 * taps in the padding, so this path does too: per output pixel the bias,
 * then the real taps in row-major order, each a multiply and an add per
 * half. Those are the C reference's operations in its order, lane by
 * lane, so every value has its bits, -0 sums and infinite weights on
 * padded taps included. */
void kern_dwconv2d_blk_dil_neon(const struct kern_dwconv2d_shape *s,
                                size_t out_h, size_t out_w, size_t b0,
                                size_t b1, const float *x,
                                const float *packed, const float *bias,
                                int act, float *y)
{
    enum { L = KERN_CBLOCK };
    const size_t ih = s->in_h, iw = s->in_w, kh = s->kh, kw = s->kw;
    const size_t dh = kern_nn_dil(s->dilation_h);
    const size_t dw = kern_nn_dil(s->dilation_w);
    const size_t taps_n = kh * kw, nb = kern_nn_cblocks(s->channels);
    for (size_t b = 0; b < s->batch; b++) {
        for (size_t j = b0; j < b1; j++) {
            const float *xp = x + (b * nb + j) * ih * iw * L;
            const float *wj = packed + j * taps_n * L;
            float *yp = y + (b * nb + j) * out_h * out_w * L;
            const struct blk_lanes bl = blk_lanes_of(s->channels, bias, j);
            for (size_t oy = 0; oy < out_h; oy++) {
                size_t ky0, ky1;
                taps_d(oy, s->stride_h, dh, s->pad_top, kh, ih, &ky0, &ky1);
                for (size_t ox = 0; ox < out_w; ox++) {
                    size_t kx0, kx1;
                    taps_d(ox, s->stride_w, dw, s->pad_left, kw, iw, &kx0,
                           &kx1);
                    float32x4_t a0 = bl.bias0, a1 = bl.bias1;
                    for (size_t ky = ky0; ky < ky1; ky++) {
                        const size_t iy = oy * s->stride_h + ky * dh -
                                          s->pad_top;
                        const float *xr = xp + iy * iw * L;
                        const float *wk = wj + ky * kw * L;
                        for (size_t kx = kx0; kx < kx1; kx++) {
                            const size_t ix = ox * s->stride_w + kx * dw -
                                              s->pad_left;
                            a0 = mla(a0, wk + kx * L, xr + ix * L);
                            a1 = mla(a1, wk + kx * L + 4, xr + ix * L + 4);
                        }
                    }
                    store_blk(yp + (oy * out_w + ox) * L, a0, a1, &bl, act);
                }
            }
        }
    }
}
