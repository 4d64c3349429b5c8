#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "edgefit/kernels.h"
#include "edgefit/profile.h"
#include "internal.h"
#include "alloc_rec.h" /* last: it wraps malloc and co. */

/* Eight scalar chains: the portable baseline any compiler can schedule.
 * Without FMA contraction (ISO C mode) each MAC is a multiply and an add. */
uint64_t prof_fma_loop_c(uint64_t iters, float *sink)
{
    const float m = 0.99999994f;
    const float b = 1e-7f;
    float c0 = 0.1f, c1 = 0.2f, c2 = 0.3f, c3 = 0.4f;
    float c4 = 0.5f, c5 = 0.6f, c6 = 0.7f, c7 = 0.8f;
    for (uint64_t i = 0; i < iters; i++) {
        c0 = c0 * m + b;
        c1 = c1 * m + b;
        c2 = c2 * m + b;
        c3 = c3 * m + b;
        c4 = c4 * m + b;
        c5 = c5 * m + b;
        c6 = c6 * m + b;
        c7 = c7 * m + b;
    }
    *sink = ((c0 + c1) + (c2 + c3)) + ((c4 + c5) + (c6 + c7));
    return iters * 8u;
}

typedef uint64_t (*fma_loop_fn)(uint64_t iters, float *sink);

static fma_loop_fn pick_loop(unsigned flags, const char **name)
{
#if PROF_SIMD
    if (flags & KERN_CPU_AVX512) {
        *name = "avx512";
        return prof_fma_loop_avx512;
    }
    if (flags & KERN_CPU_AVX2) {
        *name = "avx2";
        return prof_fma_loop_avx2;
    }
#else
    (void)flags;
#endif
    *name = "c";
    return prof_fma_loop_c;
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a;
    const double y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median, minimum and maximum of v[0..n-1] (sorted in place). */
static void spread(double *v, unsigned n, double *med, double *lo,
                   double *hi)
{
    qsort(v, n, sizeof(double), cmp_double);
    *lo = v[0];
    *hi = v[n - 1];
    *med = (n % 2) ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Keep each timed run near this long: far above the clock's resolution and
 * the cost of a call, short enough to calibrate in a fraction of a second. */
#define PEAK_RUN_NS UINT64_C(20000000)

PROF_API int prof_measure_peak(unsigned cpu_flags, unsigned runs,
                               struct prof_peak *out)
{
    if (!out) {
        return PROF_E_INVALID;
    }
    if (runs == 0) {
        return PROF_E_RANGE;
    }
    const char *name = "c";
    fma_loop_fn loop = pick_loop(cpu_flags, &name);
    double *rate = malloc(runs * sizeof(double));
    if (!rate) {
        return PROF_E_NOMEM;
    }
    volatile float keep = 0.0f;
    float sink = 0.0f;
    /* Grow the iteration count until one run is long enough; this also
     * warms the core up to its sustained clock. */
    uint64_t iters = 1u << 14;
    for (;;) {
        const uint64_t t0 = prof_now_ns();
        loop(iters, &sink);
        const uint64_t dt = prof_now_ns() - t0;
        keep = sink;
        if (dt >= PEAK_RUN_NS || iters >= (UINT64_C(1) << 40)) {
            break;
        }
        iters *= 2;
    }
    for (unsigned r = 0; r < runs; r++) {
        const uint64_t t0 = prof_now_ns();
        const uint64_t macs = loop(iters, &sink);
        const uint64_t dt = prof_now_ns() - t0;
        keep = sink;
        rate[r] = (double)macs / (double)(dt ? dt : 1); /* MAC/ns = GMAC/s */
    }
    (void)keep;
    out->path = name;
    out->runs = runs;
    spread(rate, runs, &out->gmacs, &out->gmacs_min, &out->gmacs_max);
    free(rate);
    return PROF_OK;
}

/* Parse a /sys cache size such as "48K", "2048K" or "480M". */
static uint64_t parse_sys_size(const char *text)
{
    char *end = NULL;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 10);
    if (errno != 0 || end == text) {
        return 0;
    }
    if (*end == 'K') {
        return (uint64_t)v << 10;
    }
    if (*end == 'M') {
        return (uint64_t)v << 20;
    }
    if (*end == 'G') {
        return (uint64_t)v << 30;
    }
    return (uint64_t)v;
}

static int read_line(const char *path, char *buf, size_t len)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        return -1;
    }
    const int ok = fgets(buf, (int)len, f) != NULL;
    fclose(f);
    return ok ? 0 : -1;
}

static uint64_t sys_cache_bytes(int level)
{
    for (int idx = 0; idx < 16; idx++) {
        char path[128], buf[64];
        snprintf(path, sizeof(path),
                 "/sys/devices/system/cpu/cpu0/cache/index%d/level", idx);
        if (read_line(path, buf, sizeof(buf)) != 0) {
            break;
        }
        if (atoi(buf) != level) {
            continue;
        }
        snprintf(path, sizeof(path),
                 "/sys/devices/system/cpu/cpu0/cache/index%d/type", idx);
        if (read_line(path, buf, sizeof(buf)) != 0 ||
            strncmp(buf, "Instruction", 11) == 0) {
            continue;
        }
        snprintf(path, sizeof(path),
                 "/sys/devices/system/cpu/cpu0/cache/index%d/size", idx);
        if (read_line(path, buf, sizeof(buf)) == 0) {
            return parse_sys_size(buf);
        }
    }
    return 0;
}

PROF_API uint64_t prof_cache_bytes(int level)
{
    long v = -1;
#if defined(_SC_LEVEL1_DCACHE_SIZE) && defined(_SC_LEVEL3_CACHE_SIZE)
    if (level == 1) {
        v = sysconf(_SC_LEVEL1_DCACHE_SIZE);
    } else if (level == 2) {
        v = sysconf(_SC_LEVEL2_CACHE_SIZE);
    } else if (level == 3) {
        v = sysconf(_SC_LEVEL3_CACHE_SIZE);
    }
#endif
    if (level < 1 || level > 3) {
        return 0;
    }
    if (v > 0) {
        return (uint64_t)v;
    }
    return sys_cache_bytes(level);
}

/* MemAvailable from /proc/meminfo (what can be allocated without
 * swapping), else free physical pages; 0 when unknown. */
static uint64_t available_bytes(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    if (f) {
        char line[256];
        while (fgets(line, sizeof(line), f)) {
            unsigned long long kb = 0;
            if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1) {
                fclose(f);
                return (uint64_t)kb * 1024u;
            }
        }
        fclose(f);
    }
    const long pages = sysconf(_SC_AVPHYS_PAGES);
    const long page = sysconf(_SC_PAGESIZE);
    if (pages > 0 && page > 0) {
        return (uint64_t)pages * (uint64_t)page;
    }
    return 0;
}

static uint64_t physical_bytes(void)
{
    const long pages = sysconf(_SC_PHYS_PAGES);
    const long page = sysconf(_SC_PAGESIZE);
    if (pages > 0 && page > 0) {
        return (uint64_t)pages * (uint64_t)page;
    }
    return 0;
}

#define MIB (UINT64_C(1) << 20)

PROF_API uint64_t prof_host_memory_bytes(void)
{
    return physical_bytes();
}

PROF_API uint64_t prof_triad_default_bytes(void)
{
    uint64_t llc = prof_cache_bytes(3);
    if (llc == 0) {
        llc = prof_cache_bytes(2);
    }
    /* Twice the last-level cache: a cyclic stream over that much misses
     * in any replacement policy worth the name, and it keeps the
     * calibration near a second even with a very large shared L3. */
    uint64_t bytes = 2u * llc;
    if (bytes < 64u * MIB) {
        bytes = 64u * MIB;
    }
    const uint64_t avail = available_bytes();
    if (avail > 0 && bytes > avail / 4u) {
        bytes = avail / 4u;
    }
    /* Whole 64-byte lines in each of the three arrays. */
    return bytes / 192u * 192u;
}

/* One pass of the triad; a separate function so the compiler vectorises
 * it once, the same way for every run. */
static void triad(double *restrict a, const double *restrict b,
                  const double *restrict c, double s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        a[i] = b[i] + s * c[i];
    }
}

PROF_API int prof_measure_triad(uint64_t total_bytes, unsigned runs,
                                struct prof_triad *out)
{
    if (!out) {
        return PROF_E_INVALID;
    }
    if (runs == 0) {
        return PROF_E_RANGE;
    }
    if (total_bytes == 0) {
        total_bytes = prof_triad_default_bytes();
    }
    const uint64_t elements = total_bytes / (3u * sizeof(double)) / 8u * 8u;
    if (elements < 4096u) {
        return PROF_E_RANGE;
    }
    if (elements > SIZE_MAX / sizeof(double)) {
        return PROF_E_OVERFLOW;
    }
    const size_t n = (size_t)elements;
    const size_t bytes = n * sizeof(double);
    double *a = aligned_alloc(64, bytes);
    double *b = aligned_alloc(64, bytes);
    double *c = aligned_alloc(64, bytes);
    double *gbps = malloc(runs * sizeof(double));
    int st = PROF_OK;
    if (!a || !b || !c || !gbps) {
        st = PROF_E_NOMEM;
        goto done;
    }
    for (size_t i = 0; i < n; i++) {
        a[i] = 0.0;
        b[i] = 1.0;
        c[i] = 2.0;
    }
    const double s = 3.0;
    triad(a, b, c, s, n); /* untimed: every page is now resident */
    for (unsigned r = 0; r < runs; r++) {
        const uint64_t t0 = prof_now_ns();
        triad(a, b, c, s, n);
        const uint64_t dt = prof_now_ns() - t0;
        gbps[r] = 3.0 * (double)bytes / (double)(dt ? dt : 1); /* B/ns */
    }
    /* Every element must hold 1 + 3 * 2; reading one keeps the stores. */
    if (a[n / 2] != 7.0) {
        st = PROF_E_KERNEL;
        goto done;
    }
    out->elements = elements;
    out->array_bytes = (uint64_t)bytes;
    out->total_bytes = 3u * (uint64_t)bytes;
    out->runs = runs;
    spread(gbps, runs, &out->gbps, &out->gbps_min, &out->gbps_max);
done:
    free(a);
    free(b);
    free(c);
    free(gbps);
    return st;
}

/* A sample of cache triads lasts about this long: a thousand times the
 * clock's cost, short enough for five samples per level in a few ms. */
#define CACHE_SAMPLE_NS UINT64_C(1000000)

PROF_API int prof_measure_cache_triad(uint64_t footprint_bytes,
                                      unsigned runs, struct prof_triad *out)
{
    if (!out) {
        return PROF_E_INVALID;
    }
    if (runs == 0) {
        return PROF_E_RANGE;
    }
    const uint64_t elements =
        footprint_bytes / (3u * sizeof(double)) / 8u * 8u;
    if (elements < 64u) {
        return PROF_E_RANGE;
    }
    if (elements > SIZE_MAX / sizeof(double)) {
        return PROF_E_OVERFLOW;
    }
    const size_t n = (size_t)elements;
    const size_t bytes = n * sizeof(double);
    /* One block for the three arrays, each starting on a cache line, so
     * they sit together the way a layer's tensors do. */
    double *block = aligned_alloc(64, 3u * bytes);
    double *gbps = malloc(runs * sizeof(double));
    int st = PROF_OK;
    if (!block || !gbps) {
        st = PROF_E_NOMEM;
        goto done;
    }
    double *a = block, *b = block + n, *c = block + 2u * n;
    for (size_t i = 0; i < n; i++) {
        a[i] = 0.0;
        b[i] = 1.0;
        c[i] = 2.0;
    }
    const double s = 3.0;
    /* Grow the passes per sample until one sample lasts CACHE_SAMPLE_NS;
     * this also brings the arrays into the cache. */
    uint64_t passes = 1;
    for (;;) {
        const uint64_t t0 = prof_now_ns();
        for (uint64_t k = 0; k < passes; k++) {
            triad(a, b, c, s, n);
        }
        const uint64_t dt = prof_now_ns() - t0;
        if (dt >= CACHE_SAMPLE_NS || passes >= (UINT64_C(1) << 30)) {
            break;
        }
        passes *= 2;
    }
    const double sample_bytes = 3.0 * (double)bytes * (double)passes;
    for (unsigned r = 0; r < runs; r++) {
        const uint64_t t0 = prof_now_ns();
        for (uint64_t k = 0; k < passes; k++) {
            triad(a, b, c, s, n);
        }
        const uint64_t dt = prof_now_ns() - t0;
        gbps[r] = sample_bytes / (double)(dt ? dt : 1); /* B/ns */
    }
    if (a[n / 2] != 7.0) {
        st = PROF_E_KERNEL;
        goto done;
    }
    out->elements = elements;
    out->array_bytes = (uint64_t)bytes;
    out->total_bytes = 3u * (uint64_t)bytes;
    out->runs = runs;
    spread(gbps, runs, &out->gbps, &out->gbps_min, &out->gbps_max);
done:
    free(block);
    free(gbps);
    return st;
}

PROF_API uint64_t prof_cache_footprint_bytes(int level, uint64_t l1,
                                             uint64_t l2, uint64_t l3)
{
    uint64_t size = 0, below = 0;
    if (level == 1) {
        size = l1;
    } else if (level == 2) {
        size = l2;
        below = l1;
    } else if (level == 3) {
        size = l3;
        below = l2;
    }
    if (size == 0) {
        return 0;
    }
    uint64_t fp = size / 2u;
    if (level == 3 && l2 > 0 && l2 <= UINT64_MAX / 8u && fp > 8u * l2) {
        fp = 8u * l2;
    }
    if (fp <= below || fp < 3u * 64u * sizeof(double)) {
        return 0;
    }
    return fp;
}

PROF_API void prof_calib_opts_init(struct prof_calib_opts *opts)
{
    if (opts) {
        opts->triad_bytes = 0;
        opts->trials = 5;
    }
}

/* The best of the runs is the figure: on a shared machine a slower run
 * measures the neighbours, not the hardware (STREAM reports its best rate
 * for the same reason). The median stays in the spread fields. */
static void keep_best_peak(struct prof_peak *p)
{
    p->gmacs = p->gmacs_max;
}

static void keep_best_triad(struct prof_triad *t)
{
    t->gbps = t->gbps_max;
}

/* Time fn(ctx) (one call = macs MACs) runs times, each sample repeating
 * calls until it lasts PEAK_RUN_NS / 4, into *out as GMAC/s (best kept). */
typedef int (*kernel_fn)(void *ctx);

static int time_kernel(kernel_fn fn, void *ctx, double macs, unsigned runs,
                       const char *path, struct prof_peak *out)
{
    double *rate = malloc(runs * sizeof(double));
    if (!rate) {
        return PROF_E_NOMEM;
    }
    int st = fn(ctx); /* warm: packing buffers, pages, the clock */
    uint64_t calls = 1;
    while (st == PROF_OK) {
        const uint64_t t0 = prof_now_ns();
        for (uint64_t i = 0; st == PROF_OK && i < calls; i++) {
            st = fn(ctx);
        }
        const uint64_t dt = prof_now_ns() - t0;
        if (dt >= PEAK_RUN_NS / 4 || calls >= (UINT64_C(1) << 20)) {
            break;
        }
        calls *= 2;
    }
    for (unsigned r = 0; st == PROF_OK && r < runs; r++) {
        const uint64_t t0 = prof_now_ns();
        for (uint64_t i = 0; st == PROF_OK && i < calls; i++) {
            st = fn(ctx);
        }
        const uint64_t dt = prof_now_ns() - t0;
        rate[r] = macs * (double)calls / (double)(dt ? dt : 1);
    }
    if (st == PROF_OK) {
        out->path = path;
        out->runs = runs;
        spread(rate, runs, &out->gmacs, &out->gmacs_min, &out->gmacs_max);
        keep_best_peak(out);
    }
    free(rate);
    return st;
}

/* The products the calibration times: 256 x 256 x 256, large enough for
 * the kernels' packed paths and small enough (256 KiB per fp32 operand) to
 * time in a few milliseconds; the shape the executor's dense and conv
 * layers reach at moderate sizes. */
#define PK 256u

struct kctx {
    float *a, *b, *c;
    uint16_t *a16, *b16;
    int8_t *qa;
    void *qw;
    int32_t *qc;
};

static int run_sgemm(void *p)
{
    struct kctx *x = p;
    return kern_sgemm(0, PK, PK, PK, x->a, PK, x->b, PK, x->c, PK) == KERN_OK
               ? PROF_OK
               : PROF_E_KERNEL;
}

/* What the executor's 16-bit dense layer does: widen both operands, then
 * the fp32 product. */
static int run_f16(void *p)
{
    struct kctx *x = p;
    if (kern_f16_to_f32(x->a, x->a16, PK * PK) != KERN_OK ||
        kern_f16_to_f32(x->b, x->b16, PK * PK) != KERN_OK) {
        return PROF_E_KERNEL;
    }
    return run_sgemm(p);
}

static int run_q8(void *p)
{
    struct kctx *x = p;
    return kern_q8_gemm(PK, PK, PK, x->qa, PK, x->qw, x->qc, PK) == KERN_OK
               ? PROF_OK
               : PROF_E_KERNEL;
}

/* The kernels' peaks, one thread (as the FMA loop). */
static int measure_kernel_peaks(unsigned runs, struct prof_calibration *c)
{
    struct kctx x;
    memset(&x, 0, sizeof x);
    const size_t n = (size_t)PK * PK;
    const size_t qbytes = kern_q8_packed_bytes(PK, PK);
    int st = PROF_E_NOMEM;
    x.a = aligned_alloc(64, n * sizeof(float));
    x.b = aligned_alloc(64, n * sizeof(float));
    x.c = aligned_alloc(64, n * sizeof(float));
    x.a16 = malloc(n * sizeof(uint16_t));
    x.b16 = malloc(n * sizeof(uint16_t));
    x.qa = malloc(n);
    x.qw = malloc(qbytes ? qbytes : 1);
    x.qc = malloc(n * sizeof(int32_t));
    const int threads = kern_get_threads();
    if (!x.a || !x.b || !x.c || !x.a16 || !x.b16 || !x.qa || !x.qw ||
        !x.qc) {
        goto done;
    }
    for (size_t i = 0; i < n; i++) {
        x.a[i] = (float)(i % 7) * 0.125f - 0.375f;
        x.b[i] = (float)(i % 5) * 0.25f - 0.5f;
        x.qa[i] = (int8_t)((int)(i % 255) - 127);
    }
    if (kern_f32_to_f16(x.a16, x.a, n) != KERN_OK ||
        kern_f32_to_f16(x.b16, x.b, n) != KERN_OK ||
        kern_q8_pack_weights(x.qa, PK, PK, PK, x.qw, qbytes) != KERN_OK) {
        st = PROF_E_KERNEL;
        goto done;
    }
    kern_set_threads(1);
    const double macs = (double)PK * PK * PK / 1e9 * 1e9;
    st = time_kernel(run_sgemm, &x, macs, runs, "sgemm", &c->sgemm);
    if (st == PROF_OK) {
        st = time_kernel(run_f16, &x, macs, runs, "f16+sgemm", &c->f16);
    }
    if (st == PROF_OK) {
        st = time_kernel(run_q8, &x, macs, runs, "q8_gemm", &c->int8);
    }
    kern_set_threads(threads);
done:
    free(x.a);
    free(x.b);
    free(x.c);
    free(x.a16);
    free(x.b16);
    free(x.qa);
    free(x.qw);
    free(x.qc);
    return st;
}

static const char *level_label(unsigned level)
{
    static const char *const names[] = {"main memory", "L1", "L2", "L3"};
    return level < 4 ? names[level] : "?";
}

/* Measure level i of c (a cache when level > 0) into its triad. */
static int measure_level(struct prof_calibration *c, unsigned i,
                         uint64_t footprint, unsigned trials)
{
    struct prof_mem_level *l = &c->levels[i];
    const int st = l->level == 0
                       ? prof_measure_triad(footprint, trials, &l->triad)
                       : prof_measure_cache_triad(footprint, trials,
                                                  &l->triad);
    if (st == PROF_OK) {
        keep_best_triad(&l->triad);
    }
    return st;
}

PROF_API int prof_calibrate(const struct prof_calib_opts *opts,
                            struct prof_calibration *out)
{
    if (!out) {
        return PROF_E_INVALID;
    }
    struct prof_calib_opts o;
    prof_calib_opts_init(&o);
    if (opts) {
        o = *opts;
    }
    if (o.trials == 0) {
        o.trials = 5;
    }
    const uint64_t triad_bytes =
        o.triad_bytes ? o.triad_bytes / 192u * 192u
                      : prof_triad_default_bytes();
    struct prof_calibration c;
    memset(&c, 0, sizeof c);
    c.trials = o.trials;
    int st = prof_measure_peak(kern_cpu_flags(), o.trials, &c.fma);
    if (st != PROF_OK) {
        return st;
    }
    keep_best_peak(&c.fma);
    if ((st = measure_kernel_peaks(o.trials, &c)) != PROF_OK) {
        return st;
    }
    c.peak = c.sgemm.gmacs > c.fma.gmacs ? c.sgemm : c.fma;
    c.l1_bytes = prof_cache_bytes(1);
    c.l2_bytes = prof_cache_bytes(2);
    c.l3_bytes = prof_cache_bytes(3);
    /* Caches first, while nothing large has been touched yet. */
    const uint64_t sizes[3] = {c.l1_bytes, c.l2_bytes, c.l3_bytes};
    uint64_t footprint[PROF_MEM_LEVELS_MAX];
    unsigned n = 0;
    for (int level = 1; level <= 3; level++) {
        const uint64_t fp = prof_cache_footprint_bytes(level, sizes[0],
                                                       sizes[1], sizes[2]);
        if (fp == 0) {
            continue;
        }
        c.levels[n].level = (unsigned)level;
        c.levels[n].capacity_bytes = sizes[level - 1];
        footprint[n] = fp;
        if ((st = measure_level(&c, n, fp, o.trials)) != PROF_OK) {
            return st;
        }
        n++;
    }
    /* Main memory: most of the calibration's time is in these passes. */
    c.levels[n].level = 0;
    c.levels[n].capacity_bytes = 0;
    footprint[n] = triad_bytes;
    if ((st = measure_level(&c, n, triad_bytes, o.trials < 3 ? o.trials : 3))
        != PROF_OK) {
        return st;
    }
    c.level_count = n + 1;
    /* A smaller level slower than a larger one is a disturbed measurement
     * (L2 once measured below DRAM on a busy machine): measure both again,
     * a few times, before giving up. */
    for (unsigned i = 0; i + 1 < c.level_count; i++) {
        for (int retry = 0; retry < 3 &&
             c.levels[i].triad.gbps < c.levels[i + 1].triad.gbps; retry++) {
            c.order_retries++;
            struct prof_triad keep = c.levels[i].triad;
            if ((st = measure_level(&c, i, footprint[i], o.trials)) !=
                PROF_OK) {
                return st;
            }
            if (c.levels[i].triad.gbps < keep.gbps) {
                c.levels[i].triad = keep;
            }
        }
        if (c.levels[i].triad.gbps < c.levels[i + 1].triad.gbps) {
            /* Still out of order: a level cannot be slower than the one
             * behind it (its misses go there), so its roof is at least
             * that one's. Said, not hidden. */
            c.order_fixed++;
            snprintf(c.order_note, sizeof c.order_note,
                     "%s measured %.3g GB/s, below %s's %.3g GB/s; raised to "
                     "it", level_label(c.levels[i].level),
                     c.levels[i].triad.gbps,
                     level_label(c.levels[i + 1].level),
                     c.levels[i + 1].triad.gbps);
            c.levels[i].triad.gbps = c.levels[i + 1].triad.gbps;
        }
    }
    /* Retries run the checks from the largest level down again: a
     * raised level may now be faster than a smaller one. */
    for (unsigned i = c.level_count - 1; i-- > 0;) {
        if (c.levels[i].triad.gbps < c.levels[i + 1].triad.gbps) {
            /* raised too, so counted: order_fixed says a figure is not
             * its best trial */
            c.order_fixed++;
            if (!c.order_note[0]) {
                snprintf(c.order_note, sizeof c.order_note,
                         "%s measured %.3g GB/s, below %s's %.3g GB/s; "
                         "raised to it", level_label(c.levels[i].level),
                         c.levels[i].triad.gbps,
                         level_label(c.levels[i + 1].level),
                         c.levels[i + 1].triad.gbps);
            }
            c.levels[i].triad.gbps = c.levels[i + 1].triad.gbps;
        }
    }
    c.triad = c.levels[n].triad;
    c.knee_mac_per_byte = c.peak.gmacs / c.triad.gbps;
    c.memory_mb = physical_bytes() / MIB;
    *out = c;
    return PROF_OK;
}

static pthread_once_t host_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t host_lock = PTHREAD_MUTEX_INITIALIZER;
static struct prof_calibration host_cal;
static int host_status;
static int host_installed;

static void calibrate_host(void)
{
    pthread_mutex_lock(&host_lock);
    if (!host_installed) {
        host_status = prof_calibrate(NULL, &host_cal);
    }
    pthread_mutex_unlock(&host_lock);
}

PROF_API int prof_host_calibration_set(const struct prof_calibration *cal)
{
    if (!cal) {
        return PROF_E_INVALID;
    }
    if (!(cal->peak.gmacs > 0.0) || !isfinite(cal->peak.gmacs) ||
        !(cal->triad.gbps > 0.0) || !isfinite(cal->triad.gbps) ||
        cal->level_count == 0 || cal->level_count > PROF_MEM_LEVELS_MAX) {
        return PROF_E_RANGE;
    }
    pthread_mutex_lock(&host_lock);
    host_cal = *cal;
    host_status = PROF_OK;
    host_installed = 1;
    pthread_mutex_unlock(&host_lock);
    return PROF_OK;
}

PROF_API int prof_host_calibration(struct prof_calibration *out)
{
    if (!out) {
        return PROF_E_INVALID;
    }
    pthread_once(&host_once, calibrate_host);
    pthread_mutex_lock(&host_lock);
    const int st = host_status;
    if (st == PROF_OK) {
        *out = host_cal;
    }
    pthread_mutex_unlock(&host_lock);
    return st;
}
