/* Private: the dispatch table of the normalisations (family norm). The
 * entries have the contract of kern_layernorm_f32 minus the argument
 * checks the wrapper does. */
#ifndef EDGEFIT_KERNELS_NORM_H
#define EDGEFIT_KERNELS_NORM_H

#include <stddef.h>

#include "dsp.h"

typedef void (*kern_layernorm_fn)(const float *x, size_t rows, size_t cols,
                                  const float *gamma, const float *beta,
                                  float eps, float *y);

struct kern_norm_dsp {
    kern_layernorm_fn layernorm;
};

void kern_norm_dsp_init(struct kern_norm_dsp *dsp, unsigned flags);
/* The rungs of each architecture (src/<arch>/norm_init.c), called by
 * kern_norm_dsp_init after it has set the C entries. */
void kern_norm_dsp_init_x86(struct kern_norm_dsp *dsp, unsigned flags);
void kern_norm_dsp_init_arm(struct kern_norm_dsp *dsp, unsigned flags);

/* The statistics every path and the backward pass share: the row's mean
 * and 1/sqrt(var + eps) from double sums, rounded to float once; how a
 * SIMD path sums them is its own, in double too. */
void kern_layernorm_row_stats_c(const float *x, size_t cols, float eps,
                                float *mean, float *rstd);

void kern_layernorm_c(const float *x, size_t rows, size_t cols,
                      const float *gamma, const float *beta, float eps,
                      float *y);
#if KERN_SIMD && KERN_HAVE_X86
void kern_layernorm_avx2(const float *x, size_t rows, size_t cols,
                         const float *gamma, const float *beta, float eps,
                         float *y);
void kern_layernorm_avx512(const float *x, size_t rows, size_t cols,
                           const float *gamma, const float *beta, float eps,
                           float *y);
#endif

#if KERN_SIMD && KERN_HAVE_NEON
void kern_layernorm_neon(const float *x, size_t rows, size_t cols,
                         const float *gamma, const float *beta, float eps,
                         float *y);
#endif

#endif
