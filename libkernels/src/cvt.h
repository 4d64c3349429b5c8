/* Private: the dispatch table of the float <-> fp16/bf16 conversions
 * (family cvt). Entries have the contract of the public functions in
 * edgefit/kernels.h minus the argument checks done by the wrappers. */
#ifndef EDGEFIT_KERNELS_CVT_H
#define EDGEFIT_KERNELS_CVT_H

#include <stddef.h>
#include <stdint.h>

#include "dsp.h"

typedef void (*kern_cvt_narrow_fn)(uint16_t *dst, const float *src,
                                   size_t n);
typedef void (*kern_cvt_widen_fn)(float *dst, const uint16_t *src, size_t n);

struct kern_cvt_dsp {
    kern_cvt_narrow_fn f32_to_f16;
    kern_cvt_widen_fn f16_to_f32;
    kern_cvt_narrow_fn f32_to_bf16;
    kern_cvt_widen_fn bf16_to_f32;
};

void kern_cvt_dsp_init(struct kern_cvt_dsp *dsp, unsigned flags);

#define KERN_CVT_DECLARE(isa)                                               \
    void kern_f32_to_f16_##isa(uint16_t *dst, const float *src, size_t n); \
    void kern_f16_to_f32_##isa(float *dst, const uint16_t *src, size_t n); \
    void kern_f32_to_bf16_##isa(uint16_t *dst, const float *src, size_t n);\
    void kern_bf16_to_f32_##isa(float *dst, const uint16_t *src, size_t n);

KERN_CVT_DECLARE(c)
/* The rungs of each architecture (src/<arch>/cvt_init.c), called by
 * kern_cvt_dsp_init after it has set the C entries. */
void kern_cvt_dsp_init_x86(struct kern_cvt_dsp *dsp, unsigned flags);
void kern_cvt_dsp_init_arm(struct kern_cvt_dsp *dsp, unsigned flags);
#if KERN_SIMD && KERN_HAVE_X86
KERN_CVT_DECLARE(avx2)
KERN_CVT_DECLARE(avx512)
/* AVX512_BF16 (vcvtne2ps2bf16 with a fallback for subnormal inputs). */
void kern_f32_to_bf16_avx512bf16(uint16_t *dst, const float *src, size_t n);
#endif
#if KERN_SIMD && KERN_HAVE_NEON
KERN_CVT_DECLARE(neon)
#endif

#endif
