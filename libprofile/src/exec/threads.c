/* The executor on several threads: which layers are worth splitting, and
 * the splits themselves. Every split hands each thread whole pieces of
 * the computation one thread would do (whole samples, whole rows or
 * columns of a product cut where libkernels cuts them), so a layer's
 * result does not depend on the thread count. */
#include <stdatomic.h>
#include <string.h>

#include "edgefit/kernels.h"
#include "exec/executor.h"
#include "exec/ops.h"

#include "../alloc_rec.h" /* last: prof_nomem_last */

uint64_t exec_split_work(const struct memest_layer *L)
{
    if (L->macs_per_sample != 0) {
        return L->macs_per_sample;
    }
    const uint64_t kh = L->kernel_h, kw = L->kernel_w;
    const uint64_t n = L->output_elements;
    if (kw != 0 && kh > UINT64_MAX / kw) {
        return UINT64_MAX;
    }
    const uint64_t win = kh * kw;
    if (win == 0) {
        return n; /* an add or concat: one element moved an output */
    }
    return n > UINT64_MAX / win ? UINT64_MAX : n * win;
}

unsigned exec_op_threads(const prof_exec *ex, const struct exec_op *op)
{
    if (ex->threads <= 1 || !op->vt->threaded ||
        (op->vt->serial && op->vt->serial(ex, op))) {
        return 1;
    }
    const uint64_t w = exec_split_work(op->layer);
    const uint64_t b = (uint64_t)ex->batch;
    const uint64_t work = w > UINT64_MAX / b ? UINT64_MAX : w * b;
    return work >= ex->thread_min_macs ? ex->threads : 1;
}

bool exec_any_split(const prof_exec *ex)
{
    for (size_t i = 0; i < ex->nlayers; i++) {
        if (exec_op_threads(ex, &ex->ops[i]) > 1) {
            return true;
        }
    }
    return false;
}

void exec_wake_threads(const prof_exec *ex)
{
    if (ex->splits) {
        kern_parallel_wake((int)ex->threads); /* threads <= 64: opts */
    }
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

/* How many pieces a split layer of n elements is cut into on `threads`
 * threads; each thread takes the next piece not yet taken
 * (kern_parallel_pieces).
 *
 * One piece a thread where that is balanced: n a multiple of the
 * threads, or at least 8 elements a thread (pieces then differ by at
 * most one element in 8). Piece i is then the same elements in every
 * layer, the caller's first and a worker's next, so a sample or a band
 * of rows a thread wrote is read by the same thread in the next layer
 * from its own core's cache; and a split by rows re-packs each piece's
 * halo rows only once. Cut into four pieces a thread, which a thread
 * took in whatever order it came, two threads took 1-28% more time than
 * one piece each on ResNet-8, DS-CNN, MobileNetV1-0.25 and the small
 * CNN at batch 8, and 12-53% more on ResNet-8 at batch 1
 * (edgefit-bench --table threads, two runs each). Where one piece a thread
 * is unbalanced (3 elements on 2 threads), four a thread, so that the
 * thread left with the last element has least to do. */
enum { SPLIT_PIECES_PER_THREAD = 4, SPLIT_EVEN_MIN = 8 };

static size_t split_pieces(size_t n, unsigned threads)
{
    if (n % threads == 0 || n >= (size_t)SPLIT_EVEN_MIN * threads) {
        return threads;
    }
    const size_t want = (size_t)threads * SPLIT_PIECES_PER_THREAD;
    return want < n ? want : n;
}

struct split {
    size_t n, pieces;
    exec_part_fn fn;
    void *ctx;
    atomic_int status;     /* the first failing piece's */
    atomic_size_t nomem;   /* the largest request a piece failed to get */
};

static void split_task(void *arg, size_t piece, unsigned slot)
{
    struct split *s = arg;
    /* contiguous ranges, the first n % pieces one longer */
    const size_t base = s->n / s->pieces, extra = s->n % s->pieces;
    const size_t lo = piece * base + (piece < extra ? piece : extra);
    const size_t hi = lo + base + (piece < extra ? 1 : 0);
    /* the record is per thread: a worker's failed request is handed to
     * the caller by exec_split (libkernels carries its own likewise) */
    prof_nomem_last = 0;
    const int st = s->fn(s->ctx, slot, lo, hi);
    const size_t got = prof_nomem_last;
    size_t cur = atomic_load(&s->nomem);
    while (got > cur && !atomic_compare_exchange_weak(&s->nomem, &cur, got)) {
    }
    if (st != PROF_OK) {
        int ok = PROF_OK;
        atomic_compare_exchange_strong(&s->status, &ok, st);
    }
}

int exec_split(size_t n, unsigned threads, exec_part_fn fn, void *ctx)
{
    if (threads > n) {
        threads = (unsigned)n;
    }
    if (threads > KERN_MAX_THREADS) {
        threads = KERN_MAX_THREADS;
    }
    if (threads <= 1) {
        return fn(ctx, 0, 0, n);
    }
    struct split s = {.n = n, .pieces = split_pieces(n, threads), .fn = fn,
                      .ctx = ctx};
    atomic_init(&s.status, PROF_OK);
    atomic_init(&s.nomem, 0);
    const size_t before = prof_nomem_last;
    const int kst = kern_parallel_pieces((int)threads, s.pieces, split_task,
                                         &s);
    const size_t got = atomic_load(&s.nomem);
    if (got != 0) {
        prof_nomem_last = got;
        prof_nomem_time = alloc_rec_now();
    } else {
        prof_nomem_last = before;
    }
    if (kst != KERN_OK) {
        return exec_kern_status(kst);
    }
    return atomic_load(&s.status);
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
