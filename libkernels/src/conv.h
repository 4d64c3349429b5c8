/* Private: convolution (family conv). */
#ifndef EDGEFIT_KERNELS_CONV_H
#define EDGEFIT_KERNELS_CONV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dsp.h"

/* Forward of kern_conv2d_f32 (not depthwise) for a validated shape, its
 * output size, a valid kern_fused_act and `work` of at least
 * kern_conv2d_work_bytes(s) bytes (the C path ignores it). */
typedef void (*kern_conv2d_fn)(const struct kern_conv2d_shape *s,
                               size_t out_h, size_t out_w, const float *x,
                               const float *w, const float *bias, int act,
                               void *work, float *y);

/* The same on weights packed by kern_conv2d_pack_f32. */
typedef void (*kern_conv2d_packed_fn)(const struct kern_conv2d_shape *s,
                                      size_t out_h, size_t out_w,
                                      const float *x, const float *wpk,
                                      const float *bias, int act, void *work,
                                      float *y);

struct kern_conv_dsp {
    kern_conv2d_fn conv2d;
    kern_conv2d_packed_fn conv2d_packed;
};

void kern_conv_dsp_init(struct kern_conv_dsp *dsp, unsigned flags);

/* A kern_fused_act applied to one sum (the convolution and depthwise
 * references, the scalar ends of the vector paths). A NaN sum stays NaN
 * (comparisons with it are false); the vector paths keep it too by
 * passing the sum as max/min's second operand. */
static inline float kern_fuse1(float v, int act)
{
    if (act == KERN_FUSE_NONE) {
        return v;
    }
    v = v < 0.0f ? 0.0f : v;
    if (act == KERN_FUSE_RELU6) {
        v = v > 6.0f ? 6.0f : v;
    }
    return v;
}

void kern_conv2d_c(const struct kern_conv2d_shape *s, size_t out_h,
                   size_t out_w, const float *x, const float *w,
                   const float *bias, int act, void *work, float *y);
void kern_conv2d_packed_c(const struct kern_conv2d_shape *s, size_t out_h,
                          size_t out_w, const float *x, const float *wpk,
                          const float *bias, int act, void *work, float *y);

/* The layout of the GEMM paths' scratch for a valid shape (see
 * kern_conv2d_f32). K = in_c/groups * kh * kw. A convolution is `direct`
 * when it is 1 x 1, stride 1 and unpadded: the GEMM reads the input planes
 * themselves (pitch = in_w, plane = in_h * in_w) and the scratch holds only
 * a zero-padded copy of the last, partial pixel block ([K][KERN_CONV_NR])
 * and its offsets. Otherwise the group's input planes are copied
 * zero-padded and split into phy x phx stride phases, each a q x pitch
 * plane: padded element (r, c) of input plane ic lands in phase plane
 * (ic * phy + r % stride_h) * phx + c % stride_w at (r / stride_h, c /
 * stride_w). Output pixel (oy, ox) is then GEMM column j = oy * pitch + ox
 * and row (ic, ky, kx) reads phase plane (ic, ky % stride_h, kx %
 * stride_w) at j + (ky / stride_h) * pitch + kx / stride_w; columns ox >=
 * out_w are computed and dropped. */
enum { KERN_CONV_NR = 24, KERN_CONV_MR = 4 };

/* Packed weights (kern_conv2d_pack_f32): per group, blocks of
 * KERN_CONV_OCB output channels, each [K][KERN_CONV_OCB] floats, zero past
 * the group's last channel. */
enum { KERN_CONV_OCB = KERN_CONV_PACK_BLOCK };

struct kern_conv_geom {
    int direct;
    size_t k;           /* GEMM depth */
    size_t phy, phx;    /* stride phases kept (min(stride, kernel)) */
    size_t q, pitch;    /* rows and columns of a phase plane */
    size_t plane;       /* q * pitch */
    size_t buf_floats;  /* the padded copy, with its tail slack */
    size_t cols;        /* GEMM columns: out_h * pitch */
    size_t bytes;       /* the whole scratch, alignment slack included */
};

/* Fill g for a valid shape with output size oh x ow; false when a size
 * overflows (the shape then gets no scratch and runs the C path). */
bool kern_conv_geom(const struct kern_conv2d_shape *s, size_t oh, size_t ow,
                    struct kern_conv_geom *g);

#if KERN_SIMD && KERN_HAVE_X86
void kern_conv2d_avx2(const struct kern_conv2d_shape *s, size_t out_h,
                      size_t out_w, const float *x, const float *w,
                      const float *bias, int act, void *work, float *y);
void kern_conv2d_packed_avx2(const struct kern_conv2d_shape *s, size_t out_h,
                             size_t out_w, const float *x, const float *wpk,
                             const float *bias, int act, void *work,
                             float *y);
#endif

#endif
