/* Private: the dispatch table of the broadcast element-wise arithmetic
 * (family elem; public functions kern_binary_f32 and
 * kern_channel_scale_nchw8c_f32 in edgefit/kernels.h). A broadcast is
 * reduced to rows of one of three kinds, which are the only SIMD code:
 * both operands contiguous, or one of them a single value repeated along
 * the row (the scalar operand, and the per-channel scale of
 * squeeze-excite: one value per plane). */
#ifndef EDGEFIT_KERNELS_ELEM_H
#define EDGEFIT_KERNELS_ELEM_H

#include <stddef.h>

#include "dsp.h"

/* The operations, in the order of enum kern_binary_op, as X(name, C
 * operator): one line per operation generates the C rows, the SIMD rows
 * and the tables. */
#define KERN_ELEM_OPS(X) \
    X(add, +)            \
    X(sub, -)            \
    X(mul, *)            \
    X(div, /)

enum kern_elem_kind {
    KERN_ELEM_VV, /* y[i] = a[i] op b[i] */
    KERN_ELEM_VS, /* y[i] = a[i] op b[0] */
    KERN_ELEM_SV, /* y[i] = a[0] op b[i] */
    KERN_ELEM_NKIND
};
enum { KERN_ELEM_NOPS = 4 };

/* One row of n >= 1 outputs; y may equal an operand that has n elements
 * (not the single value of VS or SV, which is read once, first). */
typedef void (*kern_elem_row_fn)(float *y, const float *a, const float *b,
                                 size_t n);
/* One channel block of an NCHW8c tensor: y[i][l] = x[i][l] * s[l] for hw
 * pixels i and the first `lanes` (1..8) lanes l; the other lanes of y are
 * written +0 whatever x holds. y may equal x. */
typedef void (*kern_elem_scale8c_fn)(float *y, const float *x,
                                     const float *s, size_t hw,
                                     size_t lanes);

struct kern_elem_dsp {
    kern_elem_row_fn row[KERN_ELEM_NOPS][KERN_ELEM_NKIND];
    kern_elem_scale8c_fn scale_nchw8c;
};

void kern_elem_dsp_init(struct kern_elem_dsp *dsp, unsigned flags);

/* kern_binary_f32 and kern_channel_scale_nchw8c_f32 on a given table (the
 * public functions pass the host's; checkkern passes each level's). */
int kern_elem_binary_run(const struct kern_elem_dsp *dsp, int op,
                         const float *a, const size_t *a_shape,
                         size_t a_ndim, const float *b,
                         const size_t *b_shape, size_t b_ndim, float *y);
int kern_elem_scale_nchw8c_run(const struct kern_elem_dsp *dsp,
                               const float *x, size_t batch,
                               size_t channels, size_t hw,
                               const float *scale, float *y);

#if KERN_SIMD && KERN_HAVE_X86
/* The x86 rungs of the ladder (x86/elem_init.c): upgrades the C entries
 * that the flags allow. */
void kern_elem_dsp_init_x86(struct kern_elem_dsp *dsp, unsigned flags);

#define KERN_ELEM_DECLARE_OP(name, op, isa)                                 \
    void kern_elem_##name##_vv_##isa(float *y, const float *a,             \
                                     const float *b, size_t n);            \
    void kern_elem_##name##_vs_##isa(float *y, const float *a,             \
                                     const float *b, size_t n);            \
    void kern_elem_##name##_sv_##isa(float *y, const float *a,             \
                                     const float *b, size_t n);
#define KERN_ELEM_DECLARE_AVX2(name, op) KERN_ELEM_DECLARE_OP(name, op, avx2)
#define KERN_ELEM_DECLARE_AVX512(name, op)                                  \
    KERN_ELEM_DECLARE_OP(name, op, avx512)
KERN_ELEM_OPS(KERN_ELEM_DECLARE_AVX2)
KERN_ELEM_OPS(KERN_ELEM_DECLARE_AVX512)
void kern_elem_scale_nchw8c_avx2(float *y, const float *x, const float *s,
                                 size_t hw, size_t lanes);
void kern_elem_scale_nchw8c_avx512(float *y, const float *x, const float *s,
                                   size_t hw, size_t lanes);
#endif

#if KERN_SIMD && KERN_HAVE_NEON
/* The AArch64 rungs (arm/elem_init.c). */
void kern_elem_dsp_init_arm(struct kern_elem_dsp *dsp, unsigned flags);
#define KERN_ELEM_DECLARE_NEON(name, op)                                    \
    void kern_elem_##name##_vv_neon(float *y, const float *a,              \
                                    const float *b, size_t n);             \
    void kern_elem_##name##_vs_neon(float *y, const float *a,              \
                                    const float *b, size_t n);             \
    void kern_elem_##name##_sv_neon(float *y, const float *a,              \
                                    const float *b, size_t n);
KERN_ELEM_OPS(KERN_ELEM_DECLARE_NEON)
void kern_elem_scale_nchw8c_neon(float *y, const float *x, const float *s,
                                 size_t hw, size_t lanes);
#endif

#endif
