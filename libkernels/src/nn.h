/* Private: network primitives (family nn). */
#ifndef EDGEFIT_KERNELS_NN_H
#define EDGEFIT_KERNELS_NN_H

#include <stdbool.h>
#include <stddef.h>

#include "dsp.h"

/* x[r][c] += bias[c]. */
typedef void (*kern_nn_bias_add_fn)(float *x, size_t rows, size_t channels,
                                    const float *bias);
typedef bool (*kern_nn_all_finite_fn)(const float *x, size_t n);
typedef void (*kern_nn_scale_fn)(float *x, size_t n, float s);
/* See kern_nn_sgd_f32; velocity is only read when momentum != 0. */
typedef void (*kern_nn_sgd_fn)(float *w, const float *g, float *velocity,
                               size_t n, float lr, float momentum,
                               float weight_decay);
/* Convolution forward for a validated shape with its output size. */
typedef void (*kern_nn_conv2d_fn)(const struct kern_conv2d_shape *s,
                                  size_t out_h, size_t out_w, const float *x,
                                  const float *w, const float *bias,
                                  float *y);

struct kern_nn_dsp {
    kern_nn_bias_add_fn bias_add;
    kern_nn_all_finite_fn all_finite;
    kern_nn_scale_fn scale;
    kern_nn_sgd_fn sgd;
    kern_nn_conv2d_fn conv2d;
};

void kern_nn_dsp_init(struct kern_nn_dsp *dsp, unsigned flags);

void kern_nn_bias_add_c(float *x, size_t rows, size_t channels,
                        const float *bias);
bool kern_nn_all_finite_c(const float *x, size_t n);
void kern_nn_scale_c(float *x, size_t n, float s);
void kern_nn_sgd_c(float *w, const float *g, float *velocity, size_t n,
                   float lr, float momentum, float weight_decay);
void kern_nn_conv2d_c(const struct kern_conv2d_shape *s, size_t out_h,
                      size_t out_w, const float *x, const float *w,
                      const float *bias, float *y);

#if KERN_SIMD && KERN_HAVE_X86
void kern_nn_bias_add_avx2(float *x, size_t rows, size_t channels,
                           const float *bias);
bool kern_nn_all_finite_avx2(const float *x, size_t n);
void kern_nn_scale_avx2(float *x, size_t n, float s);
void kern_nn_sgd_avx2(float *w, const float *g, float *velocity, size_t n,
                      float lr, float momentum, float weight_decay);
void kern_nn_conv2d_avx2(const struct kern_conv2d_shape *s, size_t out_h,
                         size_t out_w, const float *x, const float *w,
                         const float *bias, float *y);
void kern_nn_bias_add_avx512(float *x, size_t rows, size_t channels,
                             const float *bias);
bool kern_nn_all_finite_avx512(const float *x, size_t n);
void kern_nn_scale_avx512(float *x, size_t n, float s);
void kern_nn_sgd_avx512(float *w, const float *g, float *velocity, size_t n,
                        float lr, float momentum, float weight_decay);
void kern_nn_conv2d_avx512(const struct kern_conv2d_shape *s, size_t out_h,
                           size_t out_w, const float *x, const float *w,
                           const float *bias, float *y);
#endif

#endif
