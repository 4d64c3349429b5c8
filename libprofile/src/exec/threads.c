/* The executor on several threads: which layers are worth splitting, and
 * the splits themselves. Every split hands each thread whole pieces of
 * the computation one thread would do (whole samples, whole rows or
 * columns of a product cut where libkernels cuts them), so a layer's
 * result does not depend on the thread count. */
#include <string.h>

#include "edgefit/kernels.h"
#include "exec/executor.h"
#include "exec/ops.h"

#include "../alloc_rec.h" /* last: prof_nomem_last */

unsigned exec_op_threads(const prof_exec *ex, const struct exec_op *op)
{
    const struct memest_layer *L = op->layer;
    if (ex->threads <= 1 || !op->vt->threaded) {
        return 1;
    }
    /* macs_per_sample * batch was checked for overflow by libmemest */
    const uint64_t macs = L->macs_per_sample * (uint64_t)ex->batch;
    return macs >= ex->thread_min_macs ? ex->threads : 1;
}

int exec_sgemm(const prof_exec *ex, const struct exec_op *op, size_t m,
               size_t n, size_t k, const float *a, size_t lda,
               const float *b, size_t ldb, float *c, size_t ldc)
{
    const unsigned t = exec_op_threads(ex, op);
    const int kst = t > 1 ? kern_sgemm_threads((int)t, 0, m, n, k, a, lda, b,
                                               ldb, c, ldc)
                          : kern_sgemm(0, m, n, k, a, lda, b, ldb, c, ldc);
    return exec_kern_status(kst);
}

struct split {
    size_t n, parts;
    exec_part_fn fn;
    void *ctx;
    int status[KERN_MAX_THREADS];
    size_t nomem[KERN_MAX_THREADS]; /* each part's failed request */
};

static void split_task(void *arg, size_t part)
{
    struct split *s = arg;
    /* contiguous ranges, the first n % parts one longer */
    const size_t base = s->n / s->parts, extra = s->n % s->parts;
    const size_t lo = part * base + (part < extra ? part : extra);
    const size_t hi = lo + base + (part < extra ? 1 : 0);
    /* the record is per thread: a worker's failed request is handed to
     * the caller by exec_split (libkernels carries its own likewise) */
    prof_nomem_last = 0;
    s->status[part] = s->fn(s->ctx, part, lo, hi);
    s->nomem[part] = prof_nomem_last;
}

int exec_split(size_t n, unsigned parts, exec_part_fn fn, void *ctx)
{
    if (parts > n) {
        parts = (unsigned)n;
    }
    if (parts > KERN_MAX_THREADS) {
        parts = KERN_MAX_THREADS;
    }
    if (parts <= 1) {
        return fn(ctx, 0, 0, n);
    }
    struct split s = {.n = n, .parts = parts, .fn = fn, .ctx = ctx};
    const size_t before = prof_nomem_last;
    const int kst = kern_parallel(parts, split_task, &s);
    size_t got = 0;
    for (unsigned i = 0; i < parts; i++) {
        got = s.nomem[i] > got ? s.nomem[i] : got;
    }
    if (got != 0) {
        prof_nomem_last = got;
        prof_nomem_time = alloc_rec_now();
    } else {
        prof_nomem_last = before;
    }
    if (kst != KERN_OK) {
        return exec_kern_status(kst);
    }
    for (unsigned i = 0; i < parts; i++) {
        if (s.status[i] != PROF_OK) {
            return s.status[i];
        }
    }
    return PROF_OK;
}

struct q8_rows {
    size_t n, k, lda, ldc;
    const int8_t *a;
    const void *packed;
    int32_t *c;
};

static int q8_part(void *arg, size_t part, size_t lo, size_t hi)
{
    (void)part;
    const struct q8_rows *q = arg;
    return exec_kern_status(kern_q8_gemm(hi - lo, q->n, q->k,
                                         q->a + lo * q->lda, q->lda,
                                         q->packed, q->c + lo * q->ldc,
                                         q->ldc));
}

int exec_q8_gemm(const prof_exec *ex, const struct exec_op *op, size_t m,
                 size_t n, size_t k, const int8_t *a, size_t lda,
                 const void *packed, int32_t *c, size_t ldc)
{
    /* int32 sums are exact: any cut of the rows gives the same result */
    struct q8_rows q = {n, k, lda, ldc, a, packed, c};
    return exec_split(m, exec_op_threads(ex, op), q8_part, &q);
}

struct q8s_rows {
    size_t n, k, lda, ldq;
    int32_t a_zero;
    const int8_t *a;
    const void *packed;
    const int32_t *w_sums;
    const struct kern_q8_outstage *os;
    int8_t *q;
};

static int q8s_part(void *arg, size_t part, size_t lo, size_t hi)
{
    (void)part;
    const struct q8s_rows *r = arg;
    return exec_kern_status(kern_q8_gemm_s8(
        hi - lo, r->n, r->k, r->a + lo * r->lda, r->lda, r->a_zero,
        r->packed, r->w_sums, r->os, r->q + lo * r->ldq, r->ldq));
}

int exec_q8_gemm_s8(const prof_exec *ex, const struct exec_op *op, size_t m,
                    size_t n, size_t k, const int8_t *a, size_t lda,
                    int32_t a_zero, const void *packed, const int32_t *w_sums,
                    const struct kern_q8_outstage *os, int8_t *q, size_t ldq)
{
    /* integer arithmetic, row by row: any cut gives the same bytes */
    struct q8s_rows r = {n, k, lda, ldq, a_zero, a, packed, w_sums, os, q};
    return exec_split(m, exec_op_threads(ex, op), q8s_part, &r);
}
