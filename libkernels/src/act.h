/* Private: the dispatch table of the elementwise activations (family act).
 * Every entry has the contract of the matching public function in
 * edgefit/kernels.h minus the argument checks, which the public wrappers in
 * act.c perform once. */
#ifndef EDGEFIT_KERNELS_ACT_H
#define EDGEFIT_KERNELS_ACT_H

#include <stddef.h>

#include "dsp.h"

/* dst[i] = f(src[i]); dst may equal src. */
typedef void (*kern_act_fn)(float *dst, const float *src, size_t n);
/* grad_in[i] = grad_out[i] * f'(...) from v[i], which is the forward input
 * x or the forward output y depending on the function (see kernels.h);
 * grad_in may equal grad_out or v. */
typedef void (*kern_act_bwd_fn)(float *grad_in, const float *grad_out,
                                const float *v, size_t n);
/* dst[i] = f(src[i]; a, b) for the activations with parameters; those
 * with one parameter ignore b. Parameters are checked by the wrappers. */
typedef void (*kern_act_param_fn)(float *dst, const float *src, size_t n,
                                  float a, float b);

struct kern_act_dsp {
    kern_act_fn tanh_f32;
    kern_act_fn erf_f32;
    kern_act_fn sigmoid_f32;
    kern_act_fn relu_f32;
    kern_act_fn gelu_f32;     /* tanh form, fused */
    kern_act_fn gelu_erf_f32; /* erf form */
    kern_act_bwd_fn tanh_backward_f32;    /* from y */
    kern_act_bwd_fn sigmoid_backward_f32; /* from y */
    kern_act_bwd_fn relu_backward_f32;    /* from x */
    kern_act_bwd_fn gelu_backward_f32;    /* from x */
    kern_act_bwd_fn gelu_erf_backward_f32; /* from x */
    kern_act_fn silu_f32;
    kern_act_fn hard_swish_f32;
    kern_act_fn softplus_f32;
    kern_act_param_fn hard_sigmoid_f32; /* a = alpha, b = beta */
    kern_act_param_fn leaky_relu_f32;   /* a = alpha */
    kern_act_param_fn elu_f32;          /* a = alpha */
    kern_act_param_fn clip_f32;         /* a = lo, b = hi */
};

void kern_act_dsp_init(struct kern_act_dsp *dsp, unsigned flags);
/* The rungs of each architecture (src/<arch>/act_init.c), called by
 * kern_act_dsp_init after it has set the C entries. */
void kern_act_dsp_init_x86(struct kern_act_dsp *dsp, unsigned flags);
void kern_act_dsp_init_arm(struct kern_act_dsp *dsp, unsigned flags);

#define KERN_ACT_DECLARE(isa)                                               \
    void kern_tanh_f32_##isa(float *dst, const float *src, size_t n);      \
    void kern_erf_f32_##isa(float *dst, const float *src, size_t n);       \
    void kern_sigmoid_f32_##isa(float *dst, const float *src, size_t n);   \
    void kern_relu_f32_##isa(float *dst, const float *src, size_t n);      \
    void kern_gelu_f32_##isa(float *dst, const float *src, size_t n);      \
    void kern_gelu_erf_f32_##isa(float *dst, const float *src, size_t n);  \
    void kern_tanh_backward_f32_##isa(float *gi, const float *go,          \
                                      const float *y, size_t n);           \
    void kern_sigmoid_backward_f32_##isa(float *gi, const float *go,       \
                                         const float *y, size_t n);        \
    void kern_relu_backward_f32_##isa(float *gi, const float *go,          \
                                      const float *x, size_t n);           \
    void kern_gelu_backward_f32_##isa(float *gi, const float *go,          \
                                      const float *x, size_t n);           \
    void kern_gelu_erf_backward_f32_##isa(float *gi, const float *go,      \
                                          const float *x, size_t n);       \
    void kern_silu_f32_##isa(float *dst, const float *src, size_t n);      \
    void kern_hard_swish_f32_##isa(float *dst, const float *src, size_t n); \
    void kern_softplus_f32_##isa(float *dst, const float *src, size_t n);  \
    void kern_hard_sigmoid_f32_##isa(float *dst, const float *src,         \
                                     size_t n, float a, float b);          \
    void kern_leaky_relu_f32_##isa(float *dst, const float *src, size_t n, \
                                   float a, float b);                      \
    void kern_elu_f32_##isa(float *dst, const float *src, size_t n,        \
                            float a, float b);                             \
    void kern_clip_f32_##isa(float *dst, const float *src, size_t n,       \
                             float a, float b);

KERN_ACT_DECLARE(c)
#if KERN_SIMD && KERN_HAVE_X86
KERN_ACT_DECLARE(avx2)
KERN_ACT_DECLARE(avx512)
#endif
#if KERN_SIMD && KERN_HAVE_NEON
KERN_ACT_DECLARE(neon)
#endif

#endif
