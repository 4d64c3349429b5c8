/* Private: int8 quantisation and GEMM kernels (family q8). */
#ifndef EDGEFIT_KERNELS_Q8_H
#define EDGEFIT_KERNELS_Q8_H

#include <stddef.h>
#include <stdint.h>

#include "dsp.h"

/* Packed weights: a 64-byte header, then the data of kern_q8_pack_weights.
 * Columns (output channels) come in blocks of Q8_NB = 16; K in groups of
 * 4. Block b, group g holds 16 x 4 bytes: byte ((b * kg + g) * 16 + j) * 4
 * + t is w[b * 16 + j][g * 4 + t] + 128 as an unsigned byte, 0 past N or
 * past K. The +128 bias makes the weights the unsigned operand of
 * vpdpbusd; the kernels subtract 128 * rowsum(a) to stay exact. */
enum { Q8_NB = 16, Q8_KG = 4, Q8_HDR_BYTES = 64 };
#define Q8_MAGIC 0x31573851u /* "Q8W1" */
/* K * 128 * 128 < 2^31: every int8 dot product fits in int32. */
#define Q8_MAX_K 131071u

struct q8_packed_hdr {
    uint32_t magic;
    uint32_t reserved;
    uint64_t n, k;
};

static inline size_t q8_groups(size_t k)
{
    return (k + Q8_KG - 1) / Q8_KG;
}

static inline size_t q8_blocks(size_t n)
{
    return (n + Q8_NB - 1) / Q8_NB;
}

/* c = a . w^T for packed data bp (after the header); see kern_q8_gemm. */
typedef void (*kern_q8_gemm_fn)(size_t m, size_t n, size_t k,
                                const int8_t *a, size_t lda,
                                const uint8_t *bp, int32_t *c, size_t ldc);
/* The largest |x| as float bits with the sign cleared (integer maximum:
 * exact in any order; >= 0x7f800000 means inf or NaN was seen). */
typedef uint32_t (*kern_q8_absmax_fn)(const float *x, size_t n);
typedef void (*kern_q8_quant_fn)(const float *x, size_t n, float scale,
                                 int8_t *dst);
typedef void (*kern_q8_dequant_fn)(const int8_t *q, size_t n, float scale,
                                   float *dst);
/* One row of N values of kern_q8_requant_f32 / _s8; bias may be NULL. */
typedef void (*kern_q8_requant_f32_fn)(size_t n, const int32_t *acc,
                                       float a_scale, const float *w_scales,
                                       const float *bias, int relu,
                                       float *y);
/* The whole M x N result of kern_q8_requant_f32_t (m, n > 0). */
typedef void (*kern_q8_requant_f32_t_fn)(size_t m, size_t n,
                                         const int32_t *acc, size_t ld_acc,
                                         float a_scale,
                                         const float *w_scales,
                                         const float *bias, int relu,
                                         float *y, size_t ldy);
typedef void (*kern_q8_requant_s8_fn)(size_t n, const int32_t *acc,
                                      float a_scale, const float *w_scales,
                                      const float *bias, int relu,
                                      float out_scale, int8_t *q);

struct kern_q8_dsp {
    kern_q8_gemm_fn gemm;
    kern_q8_absmax_fn absmax;
    kern_q8_quant_fn quant;
    kern_q8_dequant_fn dequant;
    kern_q8_requant_f32_fn requant_f32;
    kern_q8_requant_f32_t_fn requant_f32_t;
    kern_q8_requant_s8_fn requant_s8;
};

void kern_q8_dsp_init(struct kern_q8_dsp *dsp, unsigned flags);
/* The table of this CPU, built once (shared with the static int8 family). */
const struct kern_q8_dsp *kern_q8_dsp_get(void);

void kern_q8_gemm_c(size_t m, size_t n, size_t k, const int8_t *a,
                    size_t lda, const uint8_t *bp, int32_t *c, size_t ldc);
uint32_t kern_q8_absmax_c(const float *x, size_t n);
void kern_q8_quant_c(const float *x, size_t n, float scale, int8_t *dst);
void kern_q8_dequant_c(const int8_t *q, size_t n, float scale, float *dst);
void kern_q8_requant_f32_c(size_t n, const int32_t *acc, float a_scale,
                           const float *w_scales, const float *bias,
                           int relu, float *y);
void kern_q8_requant_f32_t_c(size_t m, size_t n, const int32_t *acc,
                             size_t ld_acc, float a_scale,
                             const float *w_scales, const float *bias,
                             int relu, float *y, size_t ldy);
void kern_q8_requant_s8_c(size_t n, const int32_t *acc, float a_scale,
                          const float *w_scales, const float *bias, int relu,
                          float out_scale, int8_t *q);

/* The rungs of each architecture (src/<arch>/q8_init.c), called by
 * kern_q8_dsp_init after it has set the C entries. */
void kern_q8_dsp_init_x86(struct kern_q8_dsp *dsp, unsigned flags);
void kern_q8_dsp_init_arm(struct kern_q8_dsp *dsp, unsigned flags);

#if KERN_SIMD && KERN_HAVE_X86
void kern_q8_gemm_avx2(size_t m, size_t n, size_t k, const int8_t *a,
                       size_t lda, const uint8_t *bp, int32_t *c, size_t ldc);
uint32_t kern_q8_absmax_avx2(const float *x, size_t n);
void kern_q8_quant_avx2(const float *x, size_t n, float scale, int8_t *dst);
void kern_q8_dequant_avx2(const int8_t *q, size_t n, float scale,
                          float *dst);
void kern_q8_requant_f32_avx2(size_t n, const int32_t *acc, float a_scale,
                              const float *w_scales, const float *bias,
                              int relu, float *y);
void kern_q8_requant_f32_t_avx2(size_t m, size_t n, const int32_t *acc,
                                size_t ld_acc, float a_scale,
                                const float *w_scales, const float *bias,
                                int relu, float *y, size_t ldy);
void kern_q8_requant_s8_avx2(size_t n, const int32_t *acc, float a_scale,
                             const float *w_scales, const float *bias,
                             int relu, float out_scale, int8_t *q);
void kern_q8_gemm_avx512(size_t m, size_t n, size_t k, const int8_t *a,
                         size_t lda, const uint8_t *bp, int32_t *c,
                         size_t ldc);
uint32_t kern_q8_absmax_avx512(const float *x, size_t n);
void kern_q8_quant_avx512(const float *x, size_t n, float scale,
                          int8_t *dst);
void kern_q8_dequant_avx512(const int8_t *q, size_t n, float scale,
                            float *dst);
void kern_q8_requant_f32_avx512(size_t n, const int32_t *acc, float a_scale,
                                const float *w_scales, const float *bias,
                                int relu, float *y);
void kern_q8_requant_s8_avx512(size_t n, const int32_t *acc, float a_scale,
                               const float *w_scales, const float *bias,
                               int relu, float out_scale, int8_t *q);
void kern_q8_gemm_vnni(size_t m, size_t n, size_t k, const int8_t *a,
                       size_t lda, const uint8_t *bp, int32_t *c, size_t ldc);
#endif

#if KERN_SIMD && KERN_HAVE_NEON
void kern_q8_gemm_neon(size_t m, size_t n, size_t k, const int8_t *a,
                       size_t lda, const uint8_t *bp, int32_t *c, size_t ldc);
void kern_q8_gemm_dotprod(size_t m, size_t n, size_t k, const int8_t *a,
                          size_t lda, const uint8_t *bp, int32_t *c,
                          size_t ldc);
#endif

#endif
