/* Private: depthwise convolution (family dwconv). */
#ifndef EDGEFIT_KERNELS_DWCONV_H
#define EDGEFIT_KERNELS_DWCONV_H

#include <stddef.h>

#include "dsp.h"

/* Forward of kern_dwconv2d_f32 for a validated shape, its output size and
 * a valid kern_fused_act. */
typedef void (*kern_dwconv2d_fn)(const struct kern_dwconv2d_shape *s,
                                 size_t out_h, size_t out_w, const float *x,
                                 const float *w, const float *bias, int act,
                                 float *y);

/* Forward of kern_dwconv2d_nchw8c_blocks_f32 for a validated shape, its
 * output size, a valid block range [b0, b1) and a valid act. */
typedef void (*kern_dwconv2d_blk_fn)(const struct kern_dwconv2d_shape *s,
                                     size_t out_h, size_t out_w, size_t b0,
                                     size_t b1, const float *x,
                                     const float *packed, const float *bias,
                                     int act, float *y);

struct kern_dwconv_dsp {
    kern_dwconv2d_fn dwconv2d;
    kern_dwconv2d_blk_fn dwconv2d_blk;
    /* dilated shapes (either dilation > 1): the row loop of
     * dwconv_dil_tmpl.h, the bits of kern_dwconv2d_c on every path */
    kern_dwconv2d_fn dwconv2d_dil;
    /* dilated NCHW8c shapes: the bits of kern_dwconv2d_blk_c (which skips
     * the taps in the padding, as every dilated path does) */
    kern_dwconv2d_blk_fn dwconv2d_blk_dil;
};

void kern_dwconv_dsp_init(struct kern_dwconv_dsp *dsp, unsigned flags);

void kern_dwconv2d_c(const struct kern_dwconv2d_shape *s, size_t out_h,
                     size_t out_w, const float *x, const float *w,
                     const float *bias, int act, float *y);

void kern_dwconv2d_dil_c(const struct kern_dwconv2d_shape *s, size_t out_h,
                         size_t out_w, const float *x, const float *w,
                         const float *bias, int act, float *y);

void kern_dwconv2d_blk_c(const struct kern_dwconv2d_shape *s, size_t out_h,
                         size_t out_w, size_t b0, size_t b1, const float *x,
                         const float *packed, const float *bias, int act,
                         float *y);

/* The rungs of each architecture (src/<arch>/dwconv_init.c), called by
 * kern_dwconv_dsp_init after it has set the C entries. */
void kern_dwconv_dsp_init_x86(struct kern_dwconv_dsp *dsp, unsigned flags);
void kern_dwconv_dsp_init_arm(struct kern_dwconv_dsp *dsp, unsigned flags);

#if KERN_SIMD && KERN_HAVE_X86
void kern_dwconv2d_blk_avx2(const struct kern_dwconv2d_shape *s,
                            size_t out_h, size_t out_w, size_t b0, size_t b1,
                            const float *x, const float *packed,
                            const float *bias, int act, float *y);
void kern_dwconv2d_dil_avx2(const struct kern_dwconv2d_shape *s,
                            size_t out_h, size_t out_w, const float *x,
                            const float *w, const float *bias, int act,
                            float *y);
void kern_dwconv2d_avx2(const struct kern_dwconv2d_shape *s, size_t out_h,
                        size_t out_w, const float *x, const float *w,
                        const float *bias, int act, float *y);
#endif

#if KERN_SIMD && KERN_HAVE_NEON
void kern_dwconv2d_neon(const struct kern_dwconv2d_shape *s, size_t out_h,
                        size_t out_w, const float *x, const float *w,
                        const float *bias, int act, float *y);
void kern_dwconv2d_dil_neon(const struct kern_dwconv2d_shape *s,
                            size_t out_h, size_t out_w, const float *x,
                            const float *w, const float *bias, int act,
                            float *y);
#endif

#if KERN_SIMD && KERN_HAVE_NEON
void kern_dwconv2d_blk_neon(const struct kern_dwconv2d_shape *s,
                            size_t out_h, size_t out_w, size_t b0, size_t b1,
                            const float *x, const float *packed,
                            const float *bias, int act, float *y);
void kern_dwconv2d_blk_dil_neon(const struct kern_dwconv2d_shape *s,
                                size_t out_h, size_t out_w, size_t b0,
                                size_t b1, const float *x,
                                const float *packed, const float *bias,
                                int act, float *y);
#endif

#endif
