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

/* Pooling forward (max or average, semantics of kern_maxpool2d_f32 and
 * kern_avgpool2d_f32) for a validated shape with its output size. */
typedef void (*kern_nn_pool2d_fn)(const struct kern_pool2d_shape *s,
                                  size_t out_h, size_t out_w, const float *x,
                                  float *y);
/* Softmax of each row of x[rows][cols] into y (may be x itself); rows
 * holding a NaN or whose maximum is infinite become NaN. */
typedef void (*kern_nn_softmax_fn)(const float *x, size_t rows, size_t cols,
                                   float *y);
/* Softmax cross-entropy over validated labels: returns the sum over rows
 * of logsumexp(row) - row[label]; grad (NULL: not written) receives
 * (softmax - one_hot) / batch. */
typedef double (*kern_nn_xent_fn)(const float *logits, const int32_t *labels,
                                  size_t batch, size_t classes, float *grad);
/* The means of one NCHW8c block of hw pixels ([hw][8]) into y8[8], each
 * lane summed as kern_nn_global_avgpool_f32 sums a plane: element i into
 * double partial sum i % 4 for the whole groups of four, the rest into
 * the first, the four combined pairwise, one division, one rounding. */
typedef void (*kern_nn_gap_blk_fn)(const float *xb, size_t hw, float *y8);

struct kern_nn_dsp {
    kern_nn_bias_add_fn bias_add;
    kern_nn_all_finite_fn all_finite;
    kern_nn_scale_fn scale;
    kern_nn_sgd_fn sgd;
    kern_nn_pool2d_fn maxpool2d;
    kern_nn_pool2d_fn avgpool2d;
    /* The same on NCHW8c input and output (kern_maxpool2d_blocked_f32). */
    kern_nn_pool2d_fn maxpool2d_blk;
    kern_nn_pool2d_fn avgpool2d_blk;
    kern_nn_softmax_fn softmax;
    kern_nn_xent_fn xent;
    kern_nn_gap_blk_fn gap_blk;
};

void kern_nn_dsp_init(struct kern_nn_dsp *dsp, unsigned flags);
/* The rungs of each architecture (src/<arch>/nn_init.c), called by
 * kern_nn_dsp_init after it has set the C entries. */
void kern_nn_dsp_init_x86(struct kern_nn_dsp *dsp, unsigned flags);
void kern_nn_dsp_init_arm(struct kern_nn_dsp *dsp, unsigned flags);

/* Pooling helpers shared by every path: true for the 2x2 window with
 * stride 2 and no padding (the fast paths' special case); the float an
 * average window of `rows` x `cols` real cells is divided by. */
bool kern_nn_pool_is_k2s2(const struct kern_pool2d_shape *s);
float kern_nn_pool_divisor(const struct kern_pool2d_shape *s, size_t rows,
                           size_t cols);

/* Size arithmetic shared by the convolution and pooling entry points:
 * *out = a * b * c * d, or false on overflow; and an output size
 * floor((in + lo + hi - k) / stride) + 1 with padding lo before and hi
 * after (KERN_E_SHAPE for zero sizes or k larger than the padded input,
 * KERN_E_OVERFLOW). */
bool kern_nn_mul4(size_t a, size_t b, size_t c, size_t d, size_t *out);
int kern_nn_out_dim(size_t in, size_t k, size_t stride, size_t lo,
                    size_t hi, size_t *out);

/* A convolution's dilation as used: 0 (a shape that leaves the field
 * out) means 1. */
static inline size_t kern_nn_dil(size_t d)
{
    return d ? d : 1;
}

/* The extent of a kernel of k taps dilated by d (0 meaning 1):
 * d * (k - 1) + 1, or SIZE_MAX when that overflows (no input is that
 * large, so kern_nn_out_dim then refuses it); 0 for k == 0. */
static inline size_t kern_nn_dilated_k(size_t k, size_t d)
{
    d = kern_nn_dil(d);
    if (!k) {
        return 0;
    }
    return k - 1 > (SIZE_MAX - 1) / d ? SIZE_MAX : d * (k - 1) + 1;
}

/* NCHW8c: the blocks of c channels, and the channels of block blk that
 * are real (the last block's other lanes are padding). */
static inline size_t kern_nn_cblocks(size_t c)
{
    return c / KERN_CBLOCK + (c % KERN_CBLOCK != 0);
}

static inline size_t kern_nn_block_lanes(size_t c, size_t blk)
{
    const size_t left = c - blk * KERN_CBLOCK;
    return left < KERN_CBLOCK ? left : KERN_CBLOCK;
}

/* Whether an NCHW8c tensor of batch x c channels x h x w (ceil(c / 8) * 8
 * channels stored) fits in size_t bytes: where its NCHW form fits, the
 * rounded-up channels may not. */
bool kern_nn_blocked_fits(size_t batch, size_t c, size_t h, size_t w);

void kern_nn_bias_add_c(float *x, size_t rows, size_t channels,
                        const float *bias);
bool kern_nn_all_finite_c(const float *x, size_t n);
void kern_nn_scale_c(float *x, size_t n, float s);
void kern_nn_sgd_c(float *w, const float *g, float *velocity, size_t n,
                   float lr, float momentum, float weight_decay);
void kern_nn_maxpool2d_c(const struct kern_pool2d_shape *s, size_t out_h,
                         size_t out_w, const float *x, float *y);
void kern_nn_avgpool2d_c(const struct kern_pool2d_shape *s, size_t out_h,
                         size_t out_w, const float *x, float *y);
void kern_nn_maxpool2d_blk_c(const struct kern_pool2d_shape *s, size_t out_h,
                             size_t out_w, const float *x, float *y);
void kern_nn_avgpool2d_blk_c(const struct kern_pool2d_shape *s, size_t out_h,
                             size_t out_w, const float *x, float *y);
void kern_nn_softmax_c(const float *x, size_t rows, size_t cols, float *y);
void kern_nn_gap_blk_c(const float *xb, size_t hw, float *y8);
double kern_nn_xent_c(const float *logits, const int32_t *labels,
                      size_t batch, size_t classes, float *grad);

#if KERN_SIMD && KERN_HAVE_X86
void kern_nn_bias_add_avx2(float *x, size_t rows, size_t channels,
                           const float *bias);
bool kern_nn_all_finite_avx2(const float *x, size_t n);
void kern_nn_scale_avx2(float *x, size_t n, float s);
void kern_nn_sgd_avx2(float *w, const float *g, float *velocity, size_t n,
                      float lr, float momentum, float weight_decay);
void kern_nn_bias_add_avx512(float *x, size_t rows, size_t channels,
                             const float *bias);
bool kern_nn_all_finite_avx512(const float *x, size_t n);
void kern_nn_scale_avx512(float *x, size_t n, float s);
void kern_nn_sgd_avx512(float *w, const float *g, float *velocity, size_t n,
                        float lr, float momentum, float weight_decay);
void kern_nn_maxpool2d_avx2(const struct kern_pool2d_shape *s, size_t out_h,
                            size_t out_w, const float *x, float *y);
void kern_nn_avgpool2d_avx2(const struct kern_pool2d_shape *s, size_t out_h,
                            size_t out_w, const float *x, float *y);
/* Strides 1 and 2 along the row (any window, padding): pools and returns
 * true, or returns false for the caller's other paths; the AVX-512 entry
 * uses it too. */
bool kern_nn_pool_rows_avx2(const struct kern_pool2d_shape *s, size_t out_h,
                            size_t out_w, const float *x, float *y,
                            bool is_max);
void kern_nn_maxpool2d_blk_avx2(const struct kern_pool2d_shape *s,
                                size_t out_h, size_t out_w, const float *x,
                                float *y);
void kern_nn_avgpool2d_blk_avx2(const struct kern_pool2d_shape *s,
                                size_t out_h, size_t out_w, const float *x,
                                float *y);
void kern_nn_softmax_avx2(const float *x, size_t rows, size_t cols, float *y);
double kern_nn_xent_avx2(const float *logits, const int32_t *labels,
                         size_t batch, size_t classes, float *grad);
void kern_nn_maxpool2d_avx512(const struct kern_pool2d_shape *s, size_t out_h,
                              size_t out_w, const float *x, float *y);
void kern_nn_avgpool2d_avx512(const struct kern_pool2d_shape *s, size_t out_h,
                              size_t out_w, const float *x, float *y);
void kern_nn_softmax_avx512(const float *x, size_t rows, size_t cols, float *y);
void kern_nn_gap_blk_avx2(const float *xb, size_t hw, float *y8);
void kern_nn_gap_blk_avx512(const float *xb, size_t hw, float *y8);
double kern_nn_xent_avx512(const float *logits, const int32_t *labels,
                           size_t batch, size_t classes, float *grad);
#endif

#if KERN_SIMD && KERN_HAVE_NEON
void kern_nn_bias_add_neon(float *x, size_t rows, size_t channels,
                           const float *bias);
bool kern_nn_all_finite_neon(const float *x, size_t n);
void kern_nn_scale_neon(float *x, size_t n, float s);
void kern_nn_sgd_neon(float *w, const float *g, float *velocity, size_t n,
                      float lr, float momentum, float weight_decay);
void kern_nn_maxpool2d_neon(const struct kern_pool2d_shape *s, size_t out_h,
                            size_t out_w, const float *x, float *y);
void kern_nn_avgpool2d_neon(const struct kern_pool2d_shape *s, size_t out_h,
                            size_t out_w, const float *x, float *y);
void kern_nn_maxpool2d_blk_neon(const struct kern_pool2d_shape *s,
                                size_t out_h, size_t out_w, const float *x,
                                float *y);
void kern_nn_avgpool2d_blk_neon(const struct kern_pool2d_shape *s,
                                size_t out_h, size_t out_w, const float *x,
                                float *y);
void kern_nn_softmax_neon(const float *x, size_t rows, size_t cols, float *y);
double kern_nn_xent_neon(const float *logits, const int32_t *labels,
                         size_t batch, size_t classes, float *grad);
#endif

#endif
