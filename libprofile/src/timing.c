#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "edgefit/profile.h"
#include "alloc_rec.h" /* last: it wraps malloc and co. */

PROF_API uint64_t prof_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * UINT64_C(1000000000) + (uint64_t)ts.tv_nsec;
}

/* The calling thread's run-queue delay in ns: the second figure of
 * /proc/thread-self/schedstat (time on the cpu, time waiting on a run
 * queue, timeslices). 0 with *ok false when it cannot be read. */
static uint64_t run_delay_ns(bool *ok)
{
    char buf[96];
    *ok = false;
    const int fd = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return 0;
    }
    const ssize_t n = read(fd, buf, sizeof buf - 1);
    const int saved = errno;
    close(fd);
    errno = saved;
    if (n <= 0) {
        return 0;
    }
    buf[n] = '\0';
    unsigned long long on_cpu = 0, waiting = 0;
    if (sscanf(buf, "%llu %llu", &on_cpu, &waiting) != 2) {
        errno = EINVAL;
        return 0;
    }
    *ok = true;
    return (uint64_t)waiting;
}

/* Nanoseconds on the chosen clock (prof_time checked that it reads). */
static uint64_t clock_ns(enum prof_clock clock)
{
    if (clock == PROF_CLOCK_WALL) {
        return prof_now_ns();
    }
    if (clock == PROF_CLOCK_UNQUEUED) {
        /* read the delay first: time queued between the two reads counts
         * as wall time, so the difference never goes back */
        bool ok;
        const uint64_t queued = run_delay_ns(&ok);
        return prof_now_ns() - queued;
    }
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * UINT64_C(1000000000) + (uint64_t)ts.tv_nsec;
}

PROF_API void prof_time_opts_init(struct prof_time_opts *opts)
{
    if (!opts) {
        return;
    }
    /* benchmark_repeats = 5 and latency_multiplier = 1.0 are the defaults
     * of the original collect_metrics(); two warm-up runs as its
     * acceleration benchmarks did. */
    opts->warmup = 2;
    opts->repeats = 5;
    opts->latency_multiplier = 1.0;
    opts->min_sample_ms = 0.0;
    opts->clock = PROF_CLOCK_WALL;
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a;
    const double y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Linear interpolation between order statistics at rank q * (n - 1). */
static double quantile_sorted(const double *v, size_t n, double q)
{
    const double rank = q * (double)(n - 1);
    size_t lo = (size_t)rank;
    if (lo >= n - 1) {
        return v[n - 1];
    }
    const double frac = rank - (double)lo;
    return v[lo] + frac * (v[lo + 1] - v[lo]);
}

PROF_API int prof_stats_compute(const double *samples_ms, size_t n,
                                double multiplier, struct prof_stats *out)
{
    if (!samples_ms || !out || n == 0) {
        return PROF_E_INVALID;
    }
    if (!isfinite(multiplier) || multiplier <= 0.0) {
        return PROF_E_RANGE;
    }
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(samples_ms[i]) || samples_ms[i] < 0.0) {
            return PROF_E_RANGE;
        }
    }
    if (n > SIZE_MAX / sizeof(double)) {
        return PROF_E_OVERFLOW;
    }
    double *v = malloc(n * sizeof(double));
    if (!v) {
        return PROF_E_NOMEM;
    }
    double sum = 0.0;
    for (size_t i = 0; i < n; i++) {
        v[i] = samples_ms[i] * multiplier;
        sum += v[i];
    }
    qsort(v, n, sizeof(double), cmp_double);

    struct prof_stats s;
    s.count = n;
    s.calls_per_sample = 1;
    s.min_ms = v[0];
    s.max_ms = v[n - 1];
    s.median_ms = quantile_sorted(v, n, 0.5);
    s.p90_ms = quantile_sorted(v, n, 0.9);
    s.mean_ms = sum / (double)n;
    double ss = 0.0;
    for (size_t i = 0; i < n; i++) {
        const double d = v[i] - s.mean_ms;
        ss += d * d;
    }
    s.stddev_ms = n > 1 ? sqrt(ss / (double)(n - 1)) : 0.0;
    for (size_t i = 0; i < n; i++) {
        v[i] = fabs(v[i] - s.median_ms);
    }
    qsort(v, n, sizeof(double), cmp_double);
    s.mad_ms = quantile_sorted(v, n, 0.5);
    s.first_ms = NAN;
    s.warmup_mean_ms = NAN;
    free(v);
    *out = s;
    return PROF_OK;
}

PROF_API int prof_time(prof_work_fn fn, void *ctx,
                       const struct prof_time_opts *opts,
                       struct prof_stats *out, double *samples_ms)
{
    struct prof_time_opts o;
    if (!fn || !out) {
        return PROF_E_INVALID;
    }
    if (opts) {
        o = *opts;
    } else {
        prof_time_opts_init(&o);
    }
    if (o.repeats == 0 || !isfinite(o.latency_multiplier) ||
        o.latency_multiplier <= 0.0 || !isfinite(o.min_sample_ms) ||
        o.min_sample_ms < 0.0 ||
        (o.clock != PROF_CLOCK_WALL && o.clock != PROF_CLOCK_THREAD_CPU &&
         o.clock != PROF_CLOCK_UNQUEUED)) {
        return PROF_E_RANGE;
    }
    if (o.clock == PROF_CLOCK_UNQUEUED) {
        bool ok;
        (void)run_delay_ns(&ok);
        if (!ok) {
            return PROF_E_IO; /* errno from open, read or the parse */
        }
    }
    struct timespec probe;
    if (o.clock == PROF_CLOCK_THREAD_CPU &&
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &probe) != 0) {
        return PROF_E_IO; /* errno from clock_gettime */
    }
    double *v = malloc((size_t)o.repeats * sizeof(double));
    if (!v) {
        return PROF_E_NOMEM;
    }
    int st = PROF_OK;
    /* The warm-up calls are timed one by one (they are not samples): the
     * first call of all is the cold one, and their mean says how long the
     * warm-up took. Without warm-up, the first call is the first of the
     * group search or of the samples, each of one call then. */
    double first_ms = NAN, warm_sum_ms = 0.0;
    for (unsigned i = 0; i < o.warmup; i++) {
        const uint64_t t0 = clock_ns(o.clock);
        if (fn(ctx) != 0) {
            st = PROF_E_CALLBACK;
            goto done;
        }
        const double ms = (double)(clock_ns(o.clock) - t0) / 1e6;
        first_ms = i == 0 ? ms : first_ms;
        warm_sum_ms += ms;
    }
    uint64_t inner = 1;
    if (o.min_sample_ms > 0.0) {
        /* Double the group until it lasts min_sample_ms; the cap keeps a
         * callback that takes no time at all from looping forever. */
        const double min_ns = o.min_sample_ms * 1e6;
        for (;;) {
            const uint64_t t0 = clock_ns(o.clock);
            for (uint64_t k = 0; k < inner; k++) {
                if (fn(ctx) != 0) {
                    st = PROF_E_CALLBACK;
                    goto done;
                }
            }
            const uint64_t dt = clock_ns(o.clock) - t0;
            if (isnan(first_ms)) {
                first_ms = (double)dt / 1e6; /* inner is 1 the first time */
            }
            if ((double)dt >= min_ns || inner >= (UINT64_C(1) << 24)) {
                break;
            }
            inner *= 2;
        }
    }
    for (unsigned i = 0; i < o.repeats; i++) {
        const uint64_t t0 = clock_ns(o.clock);
        for (uint64_t k = 0; k < inner; k++) {
            if (fn(ctx) != 0) {
                st = PROF_E_CALLBACK;
                goto done;
            }
        }
        const uint64_t t1 = clock_ns(o.clock);
        v[i] = (double)(t1 - t0) / 1e6 / (double)inner;
        if (isnan(first_ms)) {
            first_ms = v[i]; /* no warm-up, no grouping: one call */
        }
    }
    st = prof_stats_compute(v, o.repeats, o.latency_multiplier, out);
    if (st == PROF_OK) {
        out->calls_per_sample = inner;
        out->first_ms = first_ms * o.latency_multiplier;
        out->warmup_mean_ms =
            o.warmup ? warm_sum_ms / o.warmup * o.latency_multiplier : NAN;
    }
    if (st == PROF_OK && samples_ms) {
        memcpy(samples_ms, v, (size_t)o.repeats * sizeof(double));
    }
done:
    free(v);
    return st;
}
