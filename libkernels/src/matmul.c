/* The float32 matrix product: C reference, dispatch, argument checks,
 * threads and the batched (broadcasting) form. */
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "matmul.h"
#include "alloc_rec.h" /* last: it wraps malloc and co. */

enum {
    MM_FLAGS = KERN_MM_TRANS_A | KERN_MM_TRANS_B | KERN_MM_ACCUMULATE,
};

int kern_sgemm_c(unsigned flags, size_t m, size_t n, size_t k,
                 const float *a, size_t lda, const float *b, size_t ldb,
                 float *c, size_t ldc)
{
    const int ta = (flags & KERN_MM_TRANS_A) != 0;
    const int tb = (flags & KERN_MM_TRANS_B) != 0;
    const int acc = (flags & KERN_MM_ACCUMULATE) != 0;
    /* op(A)[i][p] sits at a[i * ars + p * acs]. */
    const size_t ars = ta ? 1 : lda;
    const size_t acs = ta ? lda : 1;

    for (size_t i = 0; i < m; i++) {
        float *crow = c + i * ldc;
        const float *arow = a + i * ars;
        if (tb) {
            /* Row j of the stored B is column j of op(B): dot products. */
            for (size_t j = 0; j < n; j++) {
                const float *brow = b + j * ldb;
                float s = 0.0f;
                for (size_t p = 0; p < k; p++) {
                    s += arow[p * acs] * brow[p];
                }
                crow[j] = acc ? crow[j] + s : s;
            }
            continue;
        }
        if (!acc) {
            for (size_t j = 0; j < n; j++) {
                crow[j] = 0.0f;
            }
        }
        for (size_t p = 0; p < k; p++) {
            const float aip = arow[p * acs];
            const float *brow = b + p * ldb;
            for (size_t j = 0; j < n; j++) {
                crow[j] += aip * brow[j];
            }
        }
    }
    return KERN_OK;
}

/* The generic path: register tiles of CMR x CNR sums in a local array,
 * whose inner loops run along CNR contiguous floats so any compiler with a
 * vector unit (SSE2, NEON) keeps them in vector registers; K is blocked so
 * the CNR-wide strip of B a tile reads stays in L1 across the tiles of a
 * column. op(B) is read in place, or from a transposed copy made once per
 * K block under KERN_MM_TRANS_B. */
enum { CMR = 4, CNR = 8, CKC = 256 };

static void tile_c(int ta, size_t mr, size_t nr, size_t kc, const float *a,
                   size_t lda, const float *b, size_t ldb, float *c,
                   size_t ldc, int load_c)
{
    float acc[CMR][CNR] = {{0.0f}};
    if (mr == CMR && nr == CNR) {
        for (size_t p = 0; p < kc; p++) {
            const float *bp = b + p * ldb;
            for (size_t i = 0; i < CMR; i++) {
                const float ai = ta ? a[p * lda + i] : a[i * lda + p];
                for (size_t j = 0; j < CNR; j++) {
                    acc[i][j] += ai * bp[j];
                }
            }
        }
    } else {
        for (size_t p = 0; p < kc; p++) {
            const float *bp = b + p * ldb;
            for (size_t i = 0; i < mr; i++) {
                const float ai = ta ? a[p * lda + i] : a[i * lda + p];
                for (size_t j = 0; j < nr; j++) {
                    acc[i][j] += ai * bp[j];
                }
            }
        }
    }
    for (size_t i = 0; i < mr; i++) {
        for (size_t j = 0; j < nr; j++) {
            c[i * ldc + j] = load_c ? c[i * ldc + j] + acc[i][j] : acc[i][j];
        }
    }
}

int kern_sgemm_blocked_c(unsigned flags, size_t m, size_t n, size_t k,
                         const float *a, size_t lda, const float *b,
                         size_t ldb, float *c, size_t ldc)
{
    const int ta = (flags & KERN_MM_TRANS_A) != 0;
    const int tb = (flags & KERN_MM_TRANS_B) != 0;
    const int acc = (flags & KERN_MM_ACCUMULATE) != 0;
    float *bt = NULL;
    if (tb) {
        /* At most k x n floats, which B itself occupies: no overflow. */
        bt = kern_mm_scratch_get((k < CKC ? k : CKC) * n);
        if (!bt) {
            return KERN_E_NOMEM;
        }
    }
    for (size_t pc = 0; pc < k; pc += CKC) {
        const size_t kc = k - pc < CKC ? k - pc : CKC;
        const int load_c = acc || pc > 0;
        const float *bp = b + pc * ldb;
        size_t ldbp = ldb;
        if (tb) {
            for (size_t j = 0; j < n; j++) {
                for (size_t p = 0; p < kc; p++) {
                    bt[p * n + j] = b[j * ldb + pc + p];
                }
            }
            bp = bt;
            ldbp = n;
        }
        const float *ap = ta ? a + pc * lda : a + pc;
        for (size_t j = 0; j < n; j += CNR) {
            const size_t nr = n - j < CNR ? n - j : CNR;
            for (size_t i = 0; i < m; i += CMR) {
                const size_t mr = m - i < CMR ? m - i : CMR;
                tile_c(ta, mr, nr, kc, ta ? ap + i : ap + i * lda, lda,
                       bp + j, ldbp, c + i * ldc + j, ldc, load_c);
            }
        }
    }
    kern_mm_scratch_put(bt);
    return KERN_OK;
}

/* Row and column vectors have nothing to block: the reference's loops
 * already stream B once. */
static kern_sgemm_fn pick_c(size_t m, size_t n, size_t k)
{
    (void)k;
    return m == 1 || n == 1 ? kern_sgemm_c : kern_sgemm_blocked_c;
}

static int sgemm_generic_c(unsigned flags, size_t m, size_t n, size_t k,
                           const float *a, size_t lda, const float *b,
                           size_t ldb, float *c, size_t ldc)
{
    return pick_c(m, n, k)(flags, m, n, k, a, lda, b, ldb, c, ldc);
}

void kern_matmul_dsp_init(struct kern_matmul_dsp *dsp, unsigned flags)
{
    dsp->sgemm_ref = kern_sgemm_c;
    dsp->sgemm = sgemm_generic_c;
    dsp->pick = pick_c;
    dsp->sgemm_direct = NULL;
    dsp->sgemm_packed = NULL;
    dsp->sgemv = NULL;
#if KERN_SIMD && KERN_HAVE_X86
    kern_matmul_dsp_init_x86(dsp, flags);
#elif KERN_SIMD && KERN_HAVE_NEON
    kern_matmul_dsp_init_arm(dsp, flags);
#else
    (void)flags;
#endif
}

static struct kern_matmul_dsp mm_dsp;
static pthread_once_t mm_once = PTHREAD_ONCE_INIT;

static void init_dsp(void)
{
    kern_matmul_dsp_init(&mm_dsp, kern_cpu_flags());
}

/* ---- scratch pool --------------------------------------------------------- */

enum { POOL_SLOTS = 2 * 8 };

static struct {
    pthread_mutex_t lock;
    struct {
        float *p;
        size_t cap; /* floats */
        int busy;
    } slot[POOL_SLOTS];
} pool = {.lock = PTHREAD_MUTEX_INITIALIZER};

static float *alloc_aligned(size_t count)
{
    if (count == 0 || count > (SIZE_MAX - 63) / sizeof(float)) {
        return NULL;
    }
    const size_t bytes = (count * sizeof(float) + 63) & ~(size_t)63;
    return aligned_alloc(64, bytes);
}

float *kern_mm_scratch_get(size_t count)
{
    float *out = NULL;
    pthread_mutex_lock(&pool.lock);
    int best = -1, spare = -1;
    for (int i = 0; i < POOL_SLOTS; i++) {
        if (pool.slot[i].busy) {
            continue;
        }
        if (pool.slot[i].p && pool.slot[i].cap >= count &&
            (best < 0 || pool.slot[i].cap < pool.slot[best].cap)) {
            best = i;
        }
        if (spare < 0 || pool.slot[i].cap < pool.slot[spare].cap) {
            spare = i;
        }
    }
    if (best >= 0) {
        pool.slot[best].busy = 1;
        out = pool.slot[best].p;
    } else if (spare >= 0) {
        /* Replace the smallest idle buffer with one large enough. */
        free(pool.slot[spare].p);
        pool.slot[spare].p = alloc_aligned(count);
        pool.slot[spare].cap = pool.slot[spare].p ? count : 0;
        pool.slot[spare].busy = pool.slot[spare].p != NULL;
        out = pool.slot[spare].p;
    }
    pthread_mutex_unlock(&pool.lock);
    if (best < 0 && spare < 0) {
        out = alloc_aligned(count); /* every slot busy: not pooled */
    }
    return out;
}

void kern_mm_scratch_put(float *p)
{
    if (!p) {
        return;
    }
    pthread_mutex_lock(&pool.lock);
    for (int i = 0; i < POOL_SLOTS; i++) {
        if (pool.slot[i].p == p) {
            pool.slot[i].busy = 0;
            p = NULL;
            break;
        }
    }
    pthread_mutex_unlock(&pool.lock);
    free(p);
}

__attribute__((destructor)) static void pool_release(void)
{
    pthread_mutex_lock(&pool.lock);
    for (int i = 0; i < POOL_SLOTS; i++) {
        if (!pool.slot[i].busy) {
            free(pool.slot[i].p);
            pool.slot[i].p = NULL;
            pool.slot[i].cap = 0;
        }
    }
    pthread_mutex_unlock(&pool.lock);
}

/* ---- threads ------------------------------------------------------------ */

static atomic_int mm_threads = 1;

KERN_API int kern_set_threads(int n)
{
    if (n < 1 || n > KERN_MAX_THREADS) {
        return KERN_E_RANGE;
    }
    atomic_store(&mm_threads, n);
    return KERN_OK;
}

KERN_API int kern_get_threads(void)
{
    return atomic_load(&mm_threads);
}

/* Below this many multiply-adds (about 0.1 ms on one core) waking workers
 * and splitting the work costs more than it saves. */
#define MM_THREAD_MIN_MACS (8.0 * 1024 * 1024)
/* Split rows in multiples of every path's register tile height and
 * columns in multiples of every path's tile width, so no thread gets a
 * ragged tile that a single thread would not have had. */
enum { MM_SPLIT_ROWS = 24, MM_SPLIT_COLS = 64 };

/* Pieces per thread a product or a kern_parallel_pieces() caller is cut
 * into, where the work allows: a worker that the scheduler takes off its
 * core while it holds a piece then delays the caller by one piece, not by
 * its whole share of the layer, and the other threads take the pieces it
 * would have taken. */
enum { MM_PIECES_PER_THREAD = 4 };

/* A small persistent pool of workers: started on the first threaded call,
 * joined when the library is unloaded. A call posts one batch, fn(ctx,
 * piece, slot) for every piece in [0, nparts): the caller takes piece 0
 * and then, like every worker that joins the batch, the next piece not
 * yet taken until none is left. A worker joins under the lock and gets
 * its slot (1 .. threads - 1; the caller's is 0), so per-thread scratch is
 * indexed by slot, never by piece. The counter of pieces taken carries the
 * batch's number in its high half, and a piece is taken by a
 * compare-and-swap that checks it: a worker that joined and then lost its
 * core takes nothing from a later batch, so the caller waits for the
 * pieces to be done (its own and those taken), never for a worker that
 * holds none. Between batches a worker first spins for a short
 * while (MM_SPIN_NS) watching for the next batch, then sleeps on a
 * condition variable: a worker woken from sleep is often queued on its
 * waker's core and would serialise a product of a fraction of a
 * millisecond. One batch at a time; a caller that finds the pool busy
 * runs its pieces itself, which gives the same result. */

/* The failed request's size is recorded per thread (kern_nomem_last): a
 * piece's is read on the thread that ran it and the largest handed to the
 * caller by run_pieces, or a worker's failure would reach the caller's
 * message without its size (or with an older one). */
static void run_piece(kern_piece_fn fn, void *ctx, size_t piece,
                      unsigned slot, atomic_size_t *nomem)
{
    kern_nomem_last = 0;
    fn(ctx, piece, slot);
    const size_t got = kern_nomem_last;
    size_t cur = atomic_load(nomem);
    while (got > cur && !atomic_compare_exchange_weak(nomem, &cur, got)) {
    }
}

/* The caller's record after a call: the largest request a piece failed to
 * get, else what it held before. */
static void carry_nomem(size_t got, size_t before)
{
    if (got != 0) {
        kern_nomem_last = got;
        kern_nomem_time = alloc_rec_now();
    } else {
        kern_nomem_last = before;
    }
}

#define MM_SPIN_NS 200000.0
static struct {
    pthread_mutex_t lock;
    pthread_cond_t work;
    pthread_cond_t done_cv;
    pthread_mutex_t batch; /* held by the caller whose batch is posted */
    pthread_t tid[KERN_MAX_THREADS];
    int nworkers;
    int shutdown;
    kern_piece_fn fn; /* the posted batch; NULL when none */
    void *ctx;
    atomic_size_t *nomem; /* the caller's: the largest failed request */
    size_t nparts;
    uint32_t gen;             /* the posted batch's number */
    _Atomic uint64_t next;    /* gen << 32 | the next piece to take */
    atomic_size_t done;       /* pieces of the batch finished */
    unsigned slots;           /* slots handed out, the caller's included */
    unsigned max_slots;       /* the call's thread count */
    atomic_ulong posted; /* batches posted so far; read while spinning */
} tp = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .work = PTHREAD_COND_INITIALIZER,
    .done_cv = PTHREAD_COND_INITIALIZER,
    .batch = PTHREAD_MUTEX_INITIALIZER,
};

static double mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* One turn of a spin-wait: tells the core (and a hypervisor) so. */
static inline void cpu_relax(void)
{
#if KERN_HAVE_X86
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ volatile("yield");
#endif
}

/* Every 256 turns of a spin-wait: whether its time is up, and a
 * sched_yield() so that a thread waiting for this core runs. When the
 * caller and a worker share one core (more threads than free cores: the
 * other core busy, or a process pinned to one), a spinning thread would
 * hold the core for its whole slice while the thread it waits for could
 * not run: two threads took 2.2-7.3x the time of one on ResNet-8 and
 * DS-CNN pinned to one core (taskset -c 0). With no other thread ready,
 * the call returns at once. */
static bool spin_over(int i, double until)
{
    if ((i & 255) != 255) {
        return false;
    }
    if (mono_ns() > until) {
        return true;
    }
    sched_yield();
    return false;
}

/* With tp.lock held: a batch a worker may join. */
static int can_join(void)
{
    return tp.fn && tp.slots < tp.max_slots &&
           (atomic_load(&tp.next) & 0xffffffffu) < tp.nparts;
}

/* Called and returns with tp.lock held: waits for work or shutdown,
 * spinning for MM_SPIN_NS after anything was posted (a batch, or
 * kern_parallel_wake's call) and then sleeping; woken, it spins again. */
static void await_work(void)
{
    while (!tp.shutdown && !can_join()) {
        const unsigned long seen = atomic_load(&tp.posted);
        pthread_mutex_unlock(&tp.lock);
        const double until = mono_ns() + MM_SPIN_NS;
        for (int i = 0; atomic_load(&tp.posted) == seen; i++) {
            if (spin_over(i, until)) {
                break;
            }
            cpu_relax();
        }
        pthread_mutex_lock(&tp.lock);
        if (tp.shutdown || can_join() || atomic_load(&tp.posted) != seen) {
            continue; /* a batch to join, or a wake: spin anew */
        }
        pthread_cond_wait(&tp.work, &tp.lock);
    }
}

/* Takes pieces of batch gen (fn, ctx, n) until none is left; the thread
 * that finishes the last piece wakes the caller. */
static void take_pieces(kern_piece_fn fn, void *ctx, size_t n, uint32_t gen,
                        unsigned slot, atomic_size_t *nomem)
{
    uint64_t v = atomic_load(&tp.next);
    for (;;) {
        if ((uint32_t)(v >> 32) != gen || (v & 0xffffffffu) >= n) {
            return;
        }
        if (!atomic_compare_exchange_weak(&tp.next, &v, v + 1)) {
            continue; /* v now holds the counter's value */
        }
        run_piece(fn, ctx, (size_t)(v & 0xffffffffu), slot, nomem);
        if (atomic_fetch_add(&tp.done, 1) + 1 == n) {
            pthread_mutex_lock(&tp.lock);
            pthread_cond_signal(&tp.done_cv);
            pthread_mutex_unlock(&tp.lock);
        }
        v = atomic_load(&tp.next);
    }
}

static void *worker(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&tp.lock);
    for (;;) {
        await_work();
        if (tp.shutdown) {
            break;
        }
        const unsigned slot = tp.slots++;
        kern_piece_fn fn = tp.fn;
        void *ctx = tp.ctx;
        atomic_size_t *nomem = tp.nomem;
        const size_t n = tp.nparts;
        const uint32_t gen = tp.gen;
        pthread_mutex_unlock(&tp.lock);
        take_pieces(fn, ctx, n, gen, slot, nomem);
        pthread_mutex_lock(&tp.lock);
    }
    pthread_mutex_unlock(&tp.lock);
    return NULL;
}

__attribute__((destructor)) static void workers_stop(void)
{
    pthread_mutex_lock(&tp.lock);
    tp.shutdown = 1;
    pthread_cond_broadcast(&tp.work);
    const int n = tp.nworkers;
    tp.nworkers = 0;
    pthread_mutex_unlock(&tp.lock);
    for (int i = 0; i < n; i++) {
        pthread_join(tp.tid[i], NULL);
    }
}

/* In a child of fork() the workers do not exist. */
static void workers_forget(void)
{
    pthread_mutex_init(&tp.lock, NULL);
    pthread_mutex_init(&tp.batch, NULL);
    pthread_cond_init(&tp.work, NULL);
    pthread_cond_init(&tp.done_cv, NULL);
    tp.nworkers = 0;
    tp.fn = NULL;
    tp.nparts = 0;
    tp.slots = tp.max_slots = 0;
}

static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

static void register_atfork(void)
{
    pthread_atfork(NULL, NULL, workers_forget);
}

/* With tp.lock held: at least `helpers` workers, as far as they can be
 * made (a caller that gets fewer takes the rest of its pieces itself). */
static void workers_start(unsigned helpers)
{
    pthread_once(&atfork_once, register_atfork);
    while (!tp.shutdown && (unsigned)tp.nworkers < helpers) {
        if (pthread_create(&tp.tid[tp.nworkers], NULL, worker, NULL) != 0) {
            break;
        }
        tp.nworkers++;
    }
}

/* fn(ctx, piece, slot) for every piece in [0, n) on up to `threads`
 * threads (slot < threads), piece 0 on the calling thread. */
static void run_pieces(unsigned threads, size_t n, kern_piece_fn fn,
                       void *ctx)
{
    const size_t before = kern_nomem_last;
    atomic_size_t nomem;
    atomic_init(&nomem, 0);
    if (threads < 2 || n < 2 || pthread_mutex_trylock(&tp.batch) != 0) {
        for (size_t i = 0; i < n; i++) {
            run_piece(fn, ctx, i, 0, &nomem);
        }
        carry_nomem(atomic_load(&nomem), before);
        return;
    }
    const unsigned helpers = (size_t)threads - 1 < n - 1 ? threads - 1
                                                         : (unsigned)(n - 1);
    pthread_mutex_lock(&tp.lock);
    workers_start(helpers);
    tp.fn = fn;
    tp.ctx = ctx;
    tp.nomem = &nomem;
    tp.nparts = n;
    tp.gen++;
    atomic_store(&tp.done, 1); /* piece 0, the caller's, below */
    atomic_store(&tp.next, (uint64_t)tp.gen << 32 | 1u);
    tp.slots = 1;
    tp.max_slots = helpers + 1;
    atomic_fetch_add(&tp.posted, 1);
    pthread_cond_broadcast(&tp.work);
    pthread_mutex_unlock(&tp.lock);

    const uint32_t gen = tp.gen; /* only callers holding tp.batch change it */
    run_piece(fn, ctx, 0, 0, &nomem);
    take_pieces(fn, ctx, n, gen, 0, &nomem);

    /* The pieces still running are a worker's last ones: spin for them
     * before sleeping, as a worker spins for the next batch. A caller put
     * to sleep here is woken by the worker's signal, and an idle core's
     * wake-up (on a virtual machine, an interrupt through the host) can
     * cost more than the piece it waited for. */
    const double until = mono_ns() + MM_SPIN_NS;
    for (int i = 0; atomic_load(&tp.done) < n; i++) {
        if (spin_over(i, until)) {
            break;
        }
        cpu_relax();
    }
    pthread_mutex_lock(&tp.lock);
    while (atomic_load(&tp.done) < n) {
        pthread_cond_wait(&tp.done_cv, &tp.lock);
    }
    tp.fn = NULL;
    tp.nparts = 0;
    pthread_mutex_unlock(&tp.lock);
    pthread_mutex_unlock(&tp.batch);
    carry_nomem(atomic_load(&nomem), before);
}

/* A product cut into pieces of whole units of rows (or columns, when C is
 * wider than tall). */
struct mm_split {
    kern_sgemm_fn fn;
    unsigned flags;
    size_t m, n, k;
    const float *a;
    size_t lda;
    const float *b;
    size_t ldb;
    float *c;
    size_t ldc;
    int by_rows;
    size_t len, unit, units, parts;
    atomic_int status;
};

static void mm_piece(void *arg, size_t part, unsigned slot)
{
    (void)slot;
    struct mm_split *s = arg;
    /* whole units spread evenly: the first (units % parts) get one more */
    const size_t base = s->units / s->parts, extra = s->units % s->parts;
    const size_t u0 = part * base + (part < extra ? part : extra);
    const size_t u1 = u0 + base + (part < extra ? 1 : 0);
    const size_t start = u0 * s->unit;
    const size_t end = u1 * s->unit < s->len ? u1 * s->unit : s->len;
    int st;
    if (s->by_rows) {
        const float *a = (s->flags & KERN_MM_TRANS_A) ? s->a + start
                                                      : s->a + start * s->lda;
        st = s->fn(s->flags, end - start, s->n, s->k, a, s->lda, s->b, s->ldb,
                   s->c + start * s->ldc, s->ldc);
    } else {
        const float *b = (s->flags & KERN_MM_TRANS_B) ? s->b + start * s->ldb
                                                      : s->b + start;
        st = s->fn(s->flags, s->m, end - start, s->k, s->a, s->lda, b, s->ldb,
                   s->c + start, s->ldc);
    }
    if (st != KERN_OK) {
        int ok = KERN_OK;
        atomic_compare_exchange_strong(&s->status, &ok, st);
    }
}

/* Splits C into pieces of whole register tiles (up to MM_PIECES_PER_THREAD
 * per thread) of rows, or columns when C is wider than tall, computed on
 * up to `threads` threads; every piece is the same computation a single
 * thread would do on it, so results do not depend on the thread count. */
static int run_threaded(int threads, kern_sgemm_fn fn, unsigned flags,
                        size_t m, size_t n, size_t k, const float *a,
                        size_t lda, const float *b, size_t ldb, float *c,
                        size_t ldc)
{
    struct mm_split s = {.fn = fn, .flags = flags, .m = m, .n = n, .k = k,
                         .a = a, .lda = lda, .b = b, .ldb = ldb, .c = c,
                         .ldc = ldc};
    s.by_rows = m >= n;
    s.len = s.by_rows ? m : n;
    s.unit = s.by_rows ? MM_SPLIT_ROWS : MM_SPLIT_COLS;
    s.units = (s.len + s.unit - 1) / s.unit;
    const size_t want = (size_t)threads * MM_PIECES_PER_THREAD;
    s.parts = want < s.units ? want : s.units;
    if (s.parts < 1) {
        s.parts = 1;
    }
    atomic_init(&s.status, KERN_OK);
    run_pieces((unsigned)threads, s.parts, mm_piece, &s);
    return atomic_load(&s.status);
}

/* ---- kern_sgemm ----------------------------------------------------------- */

static int mul_ok(size_t x, size_t y, size_t *out)
{
    if (x != 0 && y > SIZE_MAX / x) {
        return 0;
    }
    *out = x * y;
    return 1;
}

/* Checks one stored matrix of rows x cols with leading dimension ld. */
static int check_matrix(const float *p, size_t rows, size_t cols, size_t ld)
{
    if (rows == 0 || cols == 0) {
        return KERN_OK;
    }
    if (!p) {
        return KERN_E_INVALID;
    }
    if (ld < cols) {
        return KERN_E_SHAPE;
    }
    /* The last element read is (rows - 1) * ld + cols - 1; its byte offset
     * must fit, and stay below PTRDIFF_MAX so pointer arithmetic is
     * defined. */
    size_t extent;
    if (!mul_ok(rows - 1, ld, &extent) || extent > SIZE_MAX - cols ||
        extent + cols > (size_t)PTRDIFF_MAX / sizeof(float)) {
        return KERN_E_OVERFLOW;
    }
    return KERN_OK;
}

/* kern_sgemm on up to `threads` threads when the product has at least
 * min_macs multiply-adds. */
static int sgemm_on(int threads, double min_macs, unsigned flags, size_t m,
                    size_t n, size_t k, const float *a, size_t lda,
                    const float *b, size_t ldb, float *c, size_t ldc)
{
    if (flags & ~(unsigned)MM_FLAGS) {
        return KERN_E_INVALID;
    }
    const int ta = (flags & KERN_MM_TRANS_A) != 0;
    const int tb = (flags & KERN_MM_TRANS_B) != 0;
    int st = check_matrix(a, ta ? k : m, ta ? m : k, lda);
    if (st == KERN_OK) {
        st = check_matrix(b, tb ? n : k, tb ? k : n, ldb);
    }
    if (st == KERN_OK) {
        st = check_matrix(c, m, n, ldc);
    }
    if (st != KERN_OK || m == 0 || n == 0) {
        return st;
    }
    if (k == 0) {
        if (!(flags & KERN_MM_ACCUMULATE)) {
            for (size_t i = 0; i < m; i++) {
                memset(c + i * ldc, 0, n * sizeof(float));
            }
        }
        return KERN_OK;
    }

    pthread_once(&mm_once, init_dsp);
    if (threads > 1 && (double)m * (double)n * (double)k >= min_macs) {
        const kern_sgemm_fn fn = mm_dsp.pick(m, n, k);
        return run_threaded(threads, fn, flags, m, n, k, a, lda, b, ldb, c,
                            ldc);
    }
    return mm_dsp.sgemm(flags, m, n, k, a, lda, b, ldb, c, ldc);
}

KERN_API int kern_sgemm(unsigned flags, size_t m, size_t n, size_t k,
                        const float *a, size_t lda, const float *b,
                        size_t ldb, float *c, size_t ldc)
{
    return sgemm_on(kern_get_threads(), MM_THREAD_MIN_MACS, flags, m, n, k,
                    a, lda, b, ldb, c, ldc);
}

KERN_API int kern_sgemm_threads(int threads, unsigned flags, size_t m,
                                size_t n, size_t k, const float *a,
                                size_t lda, const float *b, size_t ldb,
                                float *c, size_t ldc)
{
    if (threads < 1 || threads > KERN_MAX_THREADS) {
        return KERN_E_RANGE;
    }
    /* The caller judged the product worth splitting: no threshold. */
    return sgemm_on(threads, 0.0, flags, m, n, k, a, lda, b, ldb, c, ldc);
}

struct par_wrap {
    kern_task_fn fn;
    void *ctx;
};

static void par_piece(void *arg, size_t part, unsigned slot)
{
    (void)slot;
    const struct par_wrap *w = arg;
    w->fn(w->ctx, part);
}

KERN_API int kern_parallel(size_t parts, kern_task_fn fn, void *ctx)
{
    if (!fn) {
        return KERN_E_INVALID;
    }
    if (parts < 1 || parts > KERN_MAX_THREADS) {
        return KERN_E_RANGE;
    }
    struct par_wrap w = {fn, ctx};
    run_pieces((unsigned)parts, parts, par_piece, &w);
    return KERN_OK;
}

KERN_API int kern_parallel_wake(int threads)
{
    if (threads < 1 || threads > KERN_MAX_THREADS) {
        return KERN_E_RANGE;
    }
    if (threads == 1) {
        return KERN_OK;
    }
    pthread_mutex_lock(&tp.lock);
    workers_start((unsigned)threads - 1);
    atomic_fetch_add(&tp.posted, 1);
    pthread_cond_broadcast(&tp.work);
    pthread_mutex_unlock(&tp.lock);
    return KERN_OK;
}

KERN_API int kern_parallel_pieces(int threads, size_t parts,
                                  kern_piece_fn fn, void *ctx)
{
    if (!fn) {
        return KERN_E_INVALID;
    }
    /* the pool's counter holds a piece's number in 32 bits */
    if (threads < 1 || threads > KERN_MAX_THREADS || parts < 1 ||
        parts > UINT32_MAX) {
        return KERN_E_RANGE;
    }
    run_pieces((unsigned)threads, parts, fn, ctx);
    return KERN_OK;
}

/* ---- batched form ------------------------------------------------------ */

static void set_msg(char *msg, size_t msg_len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void set_msg(char *msg, size_t msg_len, const char *fmt, ...)
{
    if (!msg || msg_len == 0) {
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, msg_len, fmt, ap);
    va_end(ap);
}

/* Element count of a shape; 0 on overflow (of the count or its bytes),
 * with *ok cleared. */
static size_t count_elems(const size_t *shape, size_t ndim, int *ok)
{
    size_t total = 1;
    for (size_t d = 0; d < ndim; d++) {
        if (!mul_ok(total, shape[d], &total)) {
            *ok = 0;
            return 0;
        }
    }
    if (total > (size_t)PTRDIFF_MAX / sizeof(float)) {
        *ok = 0;
        return 0;
    }
    return total;
}

KERN_API int kern_matmul_nd_shape(unsigned flags, const size_t *a_shape,
                                  size_t a_ndim, const size_t *b_shape,
                                  size_t b_ndim, size_t *c_shape,
                                  size_t *c_ndim, size_t *c_elems,
                                  char *msg, size_t msg_len)
{
    set_msg(msg, msg_len, "%s", "");
    if (flags & ~(unsigned)MM_FLAGS) {
        set_msg(msg, msg_len, "unknown flags %#x", flags & ~(unsigned)MM_FLAGS);
        return KERN_E_INVALID;
    }
    if ((a_ndim && !a_shape) || (b_ndim && !b_shape) || !c_shape || !c_ndim) {
        set_msg(msg, msg_len, "a shape or output pointer is NULL");
        return KERN_E_INVALID;
    }
    if (a_ndim < 2 || b_ndim < 2) {
        const int a_short = a_ndim < 2;
        set_msg(msg, msg_len,
                "%s has %zu dimension%s; matmul needs at least 2",
                a_short ? "A" : "B", a_short ? a_ndim : b_ndim,
                (a_short ? a_ndim : b_ndim) == 1 ? "" : "s");
        return KERN_E_SHAPE;
    }
    const size_t ar = a_shape[a_ndim - 2], ac = a_shape[a_ndim - 1];
    const size_t br = b_shape[b_ndim - 2], bc = b_shape[b_ndim - 1];
    const size_t m = (flags & KERN_MM_TRANS_A) ? ac : ar;
    const size_t ka = (flags & KERN_MM_TRANS_A) ? ar : ac;
    const size_t kb = (flags & KERN_MM_TRANS_B) ? bc : br;
    const size_t n = (flags & KERN_MM_TRANS_B) ? br : bc;
    if (ka != kb) {
        set_msg(msg, msg_len,
                "inner dimensions differ: A is %zux%zu%s (k=%zu), "
                "B is %zux%zu%s (k=%zu)",
                ar, ac, (flags & KERN_MM_TRANS_A) ? " transposed" : "", ka,
                br, bc, (flags & KERN_MM_TRANS_B) ? " transposed" : "", kb);
        return KERN_E_SHAPE;
    }

    const size_t nd = a_ndim > b_ndim ? a_ndim : b_ndim;
    for (size_t i = 0; i + 2 < nd; i++) {
        /* i counts batch dimensions from the right. */
        const int has_a = i + 2 < a_ndim, has_b = i + 2 < b_ndim;
        const size_t da = has_a ? a_shape[a_ndim - 3 - i] : 1;
        const size_t db = has_b ? b_shape[b_ndim - 3 - i] : 1;
        if (da != db && da != 1 && db != 1) {
            set_msg(msg, msg_len,
                    "batch dimensions do not broadcast: A dimension %zu is "
                    "%zu, B dimension %zu is %zu",
                    a_ndim - 3 - i, da, b_ndim - 3 - i, db);
            return KERN_E_SHAPE;
        }
        c_shape[nd - 3 - i] = da == 1 ? db : da;
    }
    c_shape[nd - 2] = m;
    c_shape[nd - 1] = n;

    int ok = 1;
    count_elems(a_shape, a_ndim, &ok);
    count_elems(b_shape, b_ndim, &ok);
    const size_t total = count_elems(c_shape, nd, &ok);
    if (!ok) {
        set_msg(msg, msg_len, "a tensor's size in bytes does not fit in "
                              "size_t");
        return KERN_E_OVERFLOW;
    }
    *c_ndim = nd;
    if (c_elems) {
        *c_elems = total;
    }
    return KERN_OK;
}

/* The shapes a batched product can take are bounded only by memory, so
 * the output shape is built in a small fixed array when it fits and on the
 * heap otherwise. */
enum { ND_STACK_DIMS = 16 };

KERN_API int kern_matmul_nd(unsigned flags, const float *a,
                            const size_t *a_shape, size_t a_ndim,
                            const float *b, const size_t *b_shape,
                            size_t b_ndim, float *c, char *msg,
                            size_t msg_len)
{
    size_t stack_shape[ND_STACK_DIMS];
    size_t *c_shape = stack_shape;
    const size_t nd = a_ndim > b_ndim ? a_ndim : b_ndim;
    if (nd > ND_STACK_DIMS) {
        size_t bytes;
        if (!mul_ok(nd, sizeof *c_shape, &bytes)) {
            set_msg(msg, msg_len, "too many dimensions");
            return KERN_E_OVERFLOW;
        }
        c_shape = malloc(bytes);
        if (!c_shape) {
            set_msg(msg, msg_len, "out of memory");
            return KERN_E_NOMEM;
        }
    }
    size_t c_ndim = 0, c_elems = 0;
    int st = kern_matmul_nd_shape(flags, a_shape, a_ndim, b_shape, b_ndim,
                                  c_shape, &c_ndim, &c_elems, msg, msg_len);
    if (st != KERN_OK) {
        goto out;
    }
    if (c_elems == 0) {
        goto out;
    }
    size_t a_elems = 1, b_elems = 1;
    for (size_t d = 0; d < a_ndim; d++) {
        a_elems *= a_shape[d];
    }
    for (size_t d = 0; d < b_ndim; d++) {
        b_elems *= b_shape[d];
    }
    if (!c || (a_elems && !a) || (b_elems && !b)) {
        set_msg(msg, msg_len, "a tensor with elements is NULL");
        st = KERN_E_INVALID;
        goto out;
    }

    const size_t ar = a_shape[a_ndim - 2], ac = a_shape[a_ndim - 1];
    const size_t br = b_shape[b_ndim - 2], bc = b_shape[b_ndim - 1];
    const size_t m = c_shape[nd - 2], n = c_shape[nd - 1];
    const size_t k = (flags & KERN_MM_TRANS_A) ? ar : ac;
    const size_t a_mat = ar * ac, b_mat = br * bc, c_mat = m * n;
    const size_t batches = c_elems / c_mat;

    for (size_t bi = 0; bi < batches; bi++) {
        /* Walk the batch index from its last dimension, adding each
         * dimension's offset in A and B (zero where that operand
         * broadcasts). */
        size_t rem = bi, a_off = 0, b_off = 0;
        size_t a_stride = a_mat, b_stride = b_mat;
        for (size_t i = 0; i + 2 < nd; i++) {
            const size_t dc = c_shape[nd - 3 - i];
            const size_t idx = rem % dc;
            rem /= dc;
            if (i + 2 < a_ndim) {
                const size_t da = a_shape[a_ndim - 3 - i];
                a_off += (da == 1 ? 0 : idx) * a_stride;
                a_stride *= da;
            }
            if (i + 2 < b_ndim) {
                const size_t db = b_shape[b_ndim - 3 - i];
                b_off += (db == 1 ? 0 : idx) * b_stride;
                b_stride *= db;
            }
        }
        /* An empty operand (k == 0) may be NULL; never offset it. */
        st = kern_sgemm(flags, m, n, k, a ? a + a_off : NULL, ac,
                        b ? b + b_off : NULL, bc, c + bi * c_mat, n);
        if (st != KERN_OK) {
            set_msg(msg, msg_len, "matrix product failed: %s",
                    kern_strerror(st));
            goto out;
        }
    }
out:
    if (c_shape != stack_shape) {
        free(c_shape);
    }
    return st;
}
