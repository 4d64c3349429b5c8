/* Private: the float32 matrix-product family.
 *
 * Every path has the signature of kern_sgemm but trusts its arguments: the
 * public wrapper has validated flags, pointers and leading dimensions, and
 * calls a path only with m, n, k >= 1. A path returns KERN_OK, or
 * KERN_E_NOMEM when it needs scratch memory and cannot get it.
 *
 * Paths per instruction-set level (NULL where a level has none):
 *   sgemm_ref     the plain reference, kern_sgemm_c, at every level.
 *   sgemm         chooses among the paths below by shape (pick tells
 *                 which); any shape.
 *   sgemm_direct  register-blocked kernels reading A and B in place (B is
 *                 copied only under KERN_MM_TRANS_B); any shape; meant for
 *                 small and skinny products.
 *   sgemm_packed  packs panels of A and B, blocks for L1/L2; any shape;
 *                 meant for large products.
 *   sgemv         matrix-vector products; only m == 1 or n == 1.
 */
#ifndef EDGEFIT_KERNELS_MATMUL_H
#define EDGEFIT_KERNELS_MATMUL_H

#include <stddef.h>

#include "dsp.h"

typedef int (*kern_sgemm_fn)(unsigned flags, size_t m, size_t n, size_t k,
                             const float *a, size_t lda, const float *b,
                             size_t ldb, float *c, size_t ldc);

/* The path a level's sgemm takes for a shape. */
typedef kern_sgemm_fn (*kern_sgemm_pick_fn)(size_t m, size_t n, size_t k);

struct kern_matmul_dsp {
    kern_sgemm_fn sgemm_ref; /* kern_sgemm_c at every level */
    kern_sgemm_fn sgemm;
    kern_sgemm_pick_fn pick;
    kern_sgemm_fn sgemm_direct;
    kern_sgemm_fn sgemm_packed;
    kern_sgemm_fn sgemv;
};

void kern_matmul_dsp_init(struct kern_matmul_dsp *dsp, unsigned flags);

/* Packing scratch, 64-byte aligned room for count floats, or NULL. Buffers
 * return to a small process-wide pool on kern_mm_scratch_put and are
 * reused, so their pages stay mapped from one product to the next (page
 * faults would otherwise dominate products of a few microseconds). Freed
 * when the library is unloaded. Thread-safe. */
float *kern_mm_scratch_get(size_t count);
void kern_mm_scratch_put(float *p); /* NULL ok */

/* The portable reference: plain loops whose inner loop runs along a row of
 * C (or a dot product under KERN_MM_TRANS_B), which compilers vectorise. */
int kern_sgemm_c(unsigned flags, size_t m, size_t n, size_t k,
                 const float *a, size_t lda, const float *b, size_t ldb,
                 float *c, size_t ldc);
/* The portable fast path (sgemm of the C level takes it unless m or n is
 * 1): register-blocked tiles in plain C, K-blocked for L1. */
int kern_sgemm_blocked_c(unsigned flags, size_t m, size_t n, size_t k,
                         const float *a, size_t lda, const float *b,
                         size_t ldb, float *c, size_t ldc);

/* The rungs of each architecture (src/<arch>/matmul_init.c): called by
 * kern_matmul_dsp_init after it has set the C entries. */
void kern_matmul_dsp_init_x86(struct kern_matmul_dsp *dsp, unsigned flags);
void kern_matmul_dsp_init_arm(struct kern_matmul_dsp *dsp, unsigned flags);

#if KERN_SIMD && KERN_HAVE_X86
int kern_sgemm_avx2(unsigned flags, size_t m, size_t n, size_t k,
                    const float *a, size_t lda, const float *b, size_t ldb,
                    float *c, size_t ldc);
int kern_sgemm_direct_avx2(unsigned flags, size_t m, size_t n, size_t k,
                           const float *a, size_t lda, const float *b,
                           size_t ldb, float *c, size_t ldc);
int kern_sgemm_packed_avx2(unsigned flags, size_t m, size_t n, size_t k,
                           const float *a, size_t lda, const float *b,
                           size_t ldb, float *c, size_t ldc);
kern_sgemm_fn kern_sgemm_pick_avx2(size_t m, size_t n, size_t k);
int kern_sgemv_avx2(unsigned flags, size_t m, size_t n, size_t k,
                    const float *a, size_t lda, const float *b, size_t ldb,
                    float *c, size_t ldc);

int kern_sgemm_avx512(unsigned flags, size_t m, size_t n, size_t k,
                      const float *a, size_t lda, const float *b,
                      size_t ldb, float *c, size_t ldc);
int kern_sgemm_direct_avx512(unsigned flags, size_t m, size_t n, size_t k,
                             const float *a, size_t lda, const float *b,
                             size_t ldb, float *c, size_t ldc);
int kern_sgemm_packed_avx512(unsigned flags, size_t m, size_t n, size_t k,
                             const float *a, size_t lda, const float *b,
                             size_t ldb, float *c, size_t ldc);
kern_sgemm_fn kern_sgemm_pick_avx512(size_t m, size_t n, size_t k);
int kern_sgemv_avx512(unsigned flags, size_t m, size_t n, size_t k,
                      const float *a, size_t lda, const float *b,
                      size_t ldb, float *c, size_t ldc);
#endif

#if KERN_SIMD && KERN_HAVE_NEON
int kern_sgemm_neon(unsigned flags, size_t m, size_t n, size_t k,
                    const float *a, size_t lda, const float *b, size_t ldb,
                    float *c, size_t ldc);
int kern_sgemm_direct_neon(unsigned flags, size_t m, size_t n, size_t k,
                           const float *a, size_t lda, const float *b,
                           size_t ldb, float *c, size_t ldc);
int kern_sgemm_packed_neon(unsigned flags, size_t m, size_t n, size_t k,
                           const float *a, size_t lda, const float *b,
                           size_t ldb, float *c, size_t ldc);
kern_sgemm_fn kern_sgemm_pick_neon(size_t m, size_t n, size_t k);
int kern_sgemv_neon(unsigned flags, size_t m, size_t n, size_t k,
                    const float *a, size_t lda, const float *b, size_t ldb,
                    float *c, size_t ldc);
#endif

#endif
