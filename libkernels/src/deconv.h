/* Private: transposed convolution (family deconv). */
#ifndef EDGEFIT_KERNELS_DECONV_H
#define EDGEFIT_KERNELS_DECONV_H

#include <stddef.h>

#include "dsp.h"

/* Forward of kern_conv_transpose2d_f32 for a validated shape and its
 * output size. The reference scatters each input pixel, a tap at a time,
 * bounds tested per tap; the GEMM path needs `work` of
 * kern_conv_transpose2d_work_bytes(s) bytes and returns kern_sgemm's
 * status. */
void kern_conv_transpose2d_c(const struct kern_conv_transpose2d_shape *s,
                             size_t out_h, size_t out_w, const float *x,
                             const float *w, const float *bias, float *y);
int kern_conv_transpose2d_gemm(const struct kern_conv_transpose2d_shape *s,
                               size_t out_h, size_t out_w, const float *x,
                               const float *w, const float *bias,
                               void *work, float *y);

#endif
