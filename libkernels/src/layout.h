/* Private: conversions between NCHW and NCHW8c activations (family
 * layout). */
#ifndef EDGEFIT_KERNELS_LAYOUT_H
#define EDGEFIT_KERNELS_LAYOUT_H

#include <stddef.h>

#include "dsp.h"

/* kern_nchw_to_nchw8c_f32 or kern_nchw8c_to_nchw_f32 for validated
 * arguments. */
typedef void (*kern_layout_fn)(size_t batch, size_t c, size_t hw,
                               const float *x, float *y);

struct kern_layout_dsp {
    kern_layout_fn to_nchw8c;
    kern_layout_fn to_nchw;
};

void kern_layout_dsp_init(struct kern_layout_dsp *dsp, unsigned flags);
/* The rungs of each architecture (src/<arch>/layout_init.c), called by
 * kern_layout_dsp_init after it has set the C entries. */
void kern_layout_dsp_init_x86(struct kern_layout_dsp *dsp, unsigned flags);
void kern_layout_dsp_init_arm(struct kern_layout_dsp *dsp, unsigned flags);

/* The definitions, one value at a time. */
void kern_nchw_to_nchw8c_c(size_t batch, size_t c, size_t hw,
                           const float *x, float *y);
void kern_nchw8c_to_nchw_c(size_t batch, size_t c, size_t hw,
                           const float *x, float *y);

#if KERN_SIMD && KERN_HAVE_X86
void kern_nchw_to_nchw8c_avx2(size_t batch, size_t c, size_t hw,
                              const float *x, float *y);
void kern_nchw8c_to_nchw_avx2(size_t batch, size_t c, size_t hw,
                              const float *x, float *y);
#endif

#if KERN_SIMD && KERN_HAVE_NEON
void kern_nchw_to_nchw8c_neon(size_t batch, size_t c, size_t hw,
                              const float *x, float *y);
void kern_nchw8c_to_nchw_neon(size_t batch, size_t c, size_t hw,
                              const float *x, float *y);
#endif

#endif
