/* edgefit-bench: timing of interleaved contenders, the host calibration,
 * buffers, the deterministic generator and table helpers. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "calib.h"
#include "cli.h"
#include "edgefit/kernels.h"
#include "edgefit/profile.h"

void bench_progress(const struct bench_cfg *cfg, const char *fmt, ...)
{
    if (!cfg->progress) {
        return;
    }
    char what[200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    /* The share of the selected tables done, calibration first. */
    cli_progress(true, cfg->step, cfg->steps, what);
}

void bench_progress_done(const struct bench_cfg *cfg)
{
    cli_progress(cfg->progress, cfg->step, cfg->steps, NULL);
}

/* ---- Clock and statistics --------------------------------------------------- */

uint64_t bench_now_ns(void)
{
    return prof_now_ns();
}

/* Median, p90 and minimum of n >= 1 samples (libprofile's statistics:
 * quantiles interpolated as numpy does); 0 on success. */
static int summarise(const double *samples, size_t n, struct bench_case *c)
{
    struct prof_stats st;
    if (prof_stats_compute(samples, n, 1.0, &st) != PROF_OK) {
        return -1;
    }
    c->median_ms = st.median_ms;
    c->p90_ms = st.p90_ms;
    c->min_ms = st.min_ms;
    return 0;
}

/* ---- Interleaved measurement ------------------------------------------------ */

/* Time `calls` consecutive calls; returns the elapsed ns or 0 on failure
 * (a real duration is never 0 ns with a monotonic clock of ns
 * resolution, and a failure is reported through *failed). */
static uint64_t time_calls(const struct bench_case *c, uint64_t calls,
                           int *failed)
{
    if (c->prepare && c->prepare(c->ctx) != 0) {
        *failed = 1;
        return 0;
    }
    uint64_t t0 = bench_now_ns();
    for (uint64_t i = 0; i < calls; i++) {
        if (c->fn(c->ctx) != 0) {
            *failed = 1;
            return 0;
        }
    }
    uint64_t t1 = bench_now_ns();
    return t1 > t0 ? t1 - t0 : 1;
}

/* Calls per sample: double until a batch lasts an eighth of the target,
 * then scale up to the target. Tiny kernels (a 32x64x10 product takes well
 * under a microsecond) need thousands of calls per sample for the clock. */
static int size_sample(const struct bench_cfg *cfg, struct bench_case *c)
{
    const double target_ns = cfg->sample_ms * 1e6;
    const uint64_t max_calls = 1u << 24;
    uint64_t calls = 1;
    int failed = 0;
    for (;;) {
        uint64_t ns = time_calls(c, calls, &failed);
        if (failed) {
            return -1;
        }
        if ((double)ns >= target_ns / 8.0 || calls >= max_calls) {
            double want = ceil((double)calls * target_ns / (double)ns);
            if (want < 1.0) {
                want = 1.0;
            }
            c->calls = want > (double)max_calls ? max_calls : (uint64_t)want;
            return 0;
        }
        calls *= 2;
    }
}

int bench_run_cases(const struct bench_cfg *cfg, struct bench_case *cases,
                    size_t n)
{
    const size_t repeats = cfg->repeats;
    double *samples = NULL;
    if (n == 0) {
        return 0;
    }
    if (repeats == 0 || n > SIZE_MAX / repeats / sizeof *samples) {
        return 1;
    }
    samples = malloc(n * repeats * sizeof *samples);
    if (!samples) {
        return 1;
    }
    int failed = 0;
    for (unsigned w = 0; w < cfg->warmup; w++) {
        for (size_t i = 0; i < n; i++) {
            time_calls(&cases[i], 1, &failed);
            if (failed) {
                free(samples);
                return (int)i + 1;
            }
        }
    }
    for (size_t i = 0; i < n; i++) {
        if (size_sample(cfg, &cases[i]) != 0) {
            free(samples);
            return (int)i + 1;
        }
    }
    for (size_t r = 0; r < repeats; r++) {
        for (size_t j = 0; j < n; j++) {
            size_t i = (j + r) % n;
            uint64_t ns = time_calls(&cases[i], cases[i].calls, &failed);
            if (failed) {
                free(samples);
                return (int)i + 1;
            }
            samples[i * repeats + r] = (double)ns / 1e6 /
                                       (double)cases[i].calls;
        }
    }
    for (size_t i = 0; i < n; i++) {
        if (summarise(samples + i * repeats, repeats, &cases[i]) != 0) {
            free(samples);
            return (int)i + 1;
        }
    }
    free(samples);
    return 0;
}

/* ---- Host calibration ----------------------------------------------------- */

void bench_host_init(struct bench_host *out)
{
    *out = (struct bench_host){
        .measured = false,
        .peak_gmacs = NAN,
        .peak_gflops = NAN,
        .triad_gbps = NAN,
        .knee_flop_per_byte = NAN,
        .peak_path = "",
    };
}

int bench_host_calibrate(const struct bench_cfg *cfg, struct bench_host *out)
{
    bench_host_init(out);
    struct prof_calibration cal;
    int st;
    if (cfg->quick) {
        /* Three trials and a 64 MiB triad: enough for a test to see every
         * column filled, not a calibration to quote (nor to cache). */
        struct prof_calib_opts o;
        prof_calib_opts_init(&o);
        o.trials = 3;
        o.triad_bytes = UINT64_C(64) << 20;
        st = prof_calibrate(&o, &cal);
    } else {
        struct cli_calib_opts o;
        cli_calib_opts_init(&o);
        bool cached = false;
        st = cli_host_calibration(&o, &cal, &cached);
    }
    if (st == PROF_OK) {
        st = prof_device_host(&cal, &out->dev);
    }
    if (st != PROF_OK) {
        cli_error("host calibration: %s", prof_strerror(st));
        return -1;
    }
    /* Each figure is the best of its trials (prof_calibrate), as STREAM
     * reports its best rate; the peak is the best of the FMA loop and the
     * fp32 kernel. */
    out->measured = true;
    out->peak_gmacs = prof_device_peak_threads(&out->dev, MEMEST_FP32, 1);
    out->peak_gflops = 2.0 * out->peak_gmacs;
    out->triad_gbps = cal.triad.gbps;
    out->knee_flop_per_byte = out->peak_gflops / out->triad_gbps;
    out->triad_bytes = cal.triad.total_bytes;
    out->peak_path = cal.peak.path;
    return 0;
}

/* ---- Buffers and data ------------------------------------------------------- */

void *bench_alloc(size_t count, size_t size)
{
    if (size != 0 && count > (SIZE_MAX - 63) / size) {
        return NULL;
    }
    size_t bytes = count * size;
    bytes = (bytes + 63) & ~(size_t)63;
    if (bytes == 0) {
        bytes = 64;
    }
    return aligned_alloc(64, bytes);
}

void bench_rng_seed(struct bench_rng *r, uint64_t seed)
{
    r->s = seed ? seed : 0x9e3779b97f4a7c15u;
}

uint64_t bench_rng_next(struct bench_rng *r)
{
    r->s ^= r->s >> 12;
    r->s ^= r->s << 25;
    r->s ^= r->s >> 27;
    return r->s * 0x2545f4914f6cdd1du;
}

float bench_rng_uniform(struct bench_rng *r, float lo, float hi)
{
    /* 24 random bits: every value is exact in float. */
    float u = (float)(bench_rng_next(r) >> 40) * 0x1p-24f;
    return lo + (hi - lo) * u;
}

float bench_rng_normal(struct bench_rng *r)
{
    double u1 = ((double)(bench_rng_next(r) >> 11) + 1.0) * 0x1p-53;
    double u2 = (double)(bench_rng_next(r) >> 11) * 0x1p-53;
    return (float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
}

/* ---- Table helpers ------------------------------------------------------------ */

int bench_table_new(const char *name, const struct bench_col *cols,
                    size_t ncols, art_table **out)
{
    art_table *t = NULL;
    int st = art_table_create(name, &t);
    for (size_t i = 0; st == ART_OK && i < ncols; i++) {
        st = art_table_add_column(t, cols[i].name, cols[i].type);
    }
    if (st != ART_OK) {
        art_table_destroy(t);
        t = NULL;
    }
    *out = t;
    return st;
}

static long column(const art_table *t, const char *col)
{
    long c = art_table_find_column(t, col);
    if (c < 0) {
        /* A misspelt column is a bug in this program, not bad input. */
        fprintf(stderr, "edgefit-bench: no column %s in %s\n", col,
                art_table_name(t));
        abort();
    }
    return c;
}

int bench_set_real(art_table *t, size_t row, const char *col, double v)
{
    long c = column(t, col);
    if (isnan(v)) {
        return ART_OK;
    }
    return art_table_set_real(t, row, (size_t)c, v);
}

int bench_set_uint(art_table *t, size_t row, const char *col, uint64_t v)
{
    return art_table_set_uint(t, row, (size_t)column(t, col), v);
}

int bench_set_text(art_table *t, size_t row, const char *col, const char *v)
{
    return art_table_set_text(t, row, (size_t)column(t, col), v);
}

int bench_art_failed(const char *what, int st)
{
    cli_error("%s: %s", what, art_strerror(st));
    return CLI_EXIT_FAILURE;
}

int bench_kern_failed(const char *what, int st)
{
    cli_error("%s: %s", what, kern_strerror(st));
    return CLI_EXIT_FAILURE;
}
