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
    const char *env = getenv("PROF_TRIAD_MIB");
    if (env && *env) {
        char *end = NULL;
        errno = 0;
        const double mib = strtod(env, &end);
        if (errno == 0 && end && *end == '\0' && isfinite(mib) &&
            mib > 0.0 && mib < 1048576.0) {
            return (uint64_t)(mib * (double)MIB) / 192u * 192u;
        }
    }
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

static pthread_once_t host_once = PTHREAD_ONCE_INIT;
static struct prof_calibration host_cal;
static int host_status;

static void calibrate_host(void)
{
    memset(&host_cal, 0, sizeof(host_cal));
    host_status = prof_measure_peak(kern_cpu_flags(), 5, &host_cal.peak);
    if (host_status != PROF_OK) {
        return;
    }
    host_cal.l1_bytes = prof_cache_bytes(1);
    host_cal.l2_bytes = prof_cache_bytes(2);
    host_cal.l3_bytes = prof_cache_bytes(3);
    /* Caches first, while nothing large has been touched yet. */
    const uint64_t sizes[3] = {host_cal.l1_bytes, host_cal.l2_bytes,
                               host_cal.l3_bytes};
    unsigned n = 0;
    for (int level = 1; level <= 3; level++) {
        const uint64_t fp = prof_cache_footprint_bytes(
            level, sizes[0], sizes[1], sizes[2]);
        if (fp == 0) {
            continue;
        }
        struct prof_mem_level *l = &host_cal.levels[n];
        host_status = prof_measure_cache_triad(fp, 5, &l->triad);
        if (host_status != PROF_OK) {
            return;
        }
        l->level = (unsigned)level;
        l->capacity_bytes = sizes[level - 1];
        n++;
    }
    /* Main memory: the time of the whole calibration is in these passes
     * over twice the last-level cache, so three runs. */
    host_status = prof_measure_triad(0, 3, &host_cal.triad);
    if (host_status != PROF_OK) {
        return;
    }
    host_cal.levels[n].level = 0;
    host_cal.levels[n].capacity_bytes = 0;
    host_cal.levels[n].triad = host_cal.triad;
    host_cal.level_count = n + 1;
    host_cal.knee_mac_per_byte = host_cal.peak.gmacs / host_cal.triad.gbps;
    host_cal.memory_mb = physical_bytes() / MIB;
}

PROF_API int prof_host_calibration(struct prof_calibration *out)
{
    if (!out) {
        return PROF_E_INVALID;
    }
    pthread_once(&host_once, calibrate_host);
    if (host_status == PROF_OK) {
        *out = host_cal;
    }
    return host_status;
}
