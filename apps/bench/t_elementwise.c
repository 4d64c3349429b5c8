/* edgefit-bench: the memory-bound tables. Fused against unfused GELU
 * (TinyTorch's test_unit_fusion_speedup on its 2000 x 2000 tensor), the
 * arithmetic-intensity table (analyze_arithmetic_intensity on 1024 x 1024)
 * and the fp16/bf16 conversions, each against a plain copy as the floor. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "cli.h"
#include "table.h"
#include "edgefit/kernels.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))


/* ---- GELU ------------------------------------------------------------------- */

struct ew_ctx {
    size_t n;
    const float *x, *y;
    float *dst;
    float *scratch;
    const uint16_t *h;
    uint16_t *hdst;
    /* the matmul row of the intensity table */
    size_t dim;
};

static int run_copy(void *p)
{
    struct ew_ctx *c = p;
    memcpy(c->dst, c->x, c->n * sizeof(float));
    return 0;
}

static int run_gelu(void *p)
{
    struct ew_ctx *c = p;
    return kern_gelu_f32(c->dst, c->x, c->n) != KERN_OK;
}

static int run_gelu_unfused(void *p)
{
    struct ew_ctx *c = p;
    return kern_gelu_unfused_f32(c->dst, c->x, c->n, c->scratch) != KERN_OK;
}

static int run_gelu_erf(void *p)
{
    struct ew_ctx *c = p;
    return kern_gelu_erf_f32(c->dst, c->x, c->n) != KERN_OK;
}

static int run_gelu_tanhf(void *p)
{
    struct ew_ctx *c = p;
    bench_gelu_tanhf_loop(c->dst, c->x, c->n);
    return 0;
}

static double gelu_tanh_ref(double x)
{
    const double k = 0.79788456080286535588; /* sqrt(2 / pi) */
    return 0.5 * x * (1.0 + tanh(k * (x + 0.044715 * x * x * x)));
}

static double gelu_erf_ref(double x)
{
    return 0.5 * x * (1.0 + erf(x * 0.70710678118654752440));
}

/* Largest |dst - f(x)| with f evaluated in double; 0 when f is NULL (the
 * copy, compared with its source). */
static double max_abs_err(const float *dst, const float *x, size_t n,
                          double (*f)(double))
{
    double worst = 0.0;
    for (size_t i = 0; i < n; i++) {
        double want = f ? f((double)x[i]) : (double)x[i];
        double d = fabs((double)dst[i] - want);
        worst = d > worst ? d : worst;
    }
    return worst;
}

enum { G_COPY, G_FUSED, G_UNFUSED, G_ERF, G_TANHF, G_COUNT };

int bench_table_gelu(const struct bench_cfg *cfg, const struct bench_host *h,
                     art_table **out)
{
    (void)h;
    static const struct bench_col cols[] = {
        {"variant", ART_TEXT},
        {"implementation", ART_TEXT},
        {"elements", ART_UINT},
        {"latency_ms", ART_REAL},
        {"latency_p90_ms", ART_REAL},
        {"ns_per_element", ART_REAL},
        {"achieved_bandwidth_gbps", ART_REAL},
        {"speedup_vs_unfused", ART_REAL},
        {"time_vs_copy", ART_REAL},
        {"max_abs_err", ART_REAL},
    };
    static const struct {
        const char *variant, *impl;
        bench_fn fn;
        double (*ref)(double);
    } rows[G_COUNT] = {
        {"copy", "memcpy (floor: one read, one write)", run_copy, NULL},
        {"gelu_fused", "kern_gelu_f32 (tanh form, one pass)", run_gelu,
         gelu_tanh_ref},
        {"gelu_unfused", "kern_gelu_unfused_f32 (8 passes, temporaries)",
         run_gelu_unfused, gelu_tanh_ref},
        {"gelu_erf", "kern_gelu_erf_f32 (erf form)", run_gelu_erf,
         gelu_erf_ref},
        {"gelu_tanhf_loop", "scalar loop over libm tanhf", run_gelu_tanhf,
         gelu_tanh_ref},
    };
    /* TinyTorch's 2000 x 2000 float32 tensor of standard normals. */
    const size_t side = cfg->quick ? 256 : 2000;
    const size_t n = side * side;
    art_table *t = NULL;
    float *x = bench_alloc(n, sizeof(float));
    float *scratch = bench_alloc(n, sizeof(float));
    float *dst[G_COUNT] = {0};
    struct ew_ctx ctx[G_COUNT];
    struct bench_case cases[G_COUNT];
    int rc = CLI_EXIT_FAILURE;
    bool ok = x && scratch;
    for (int i = 0; ok && i < G_COUNT; i++) {
        dst[i] = bench_alloc(n, sizeof(float));
        ok = dst[i] != NULL;
    }
    if (!ok) {
        bench_kern_failed("gelu", KERN_E_NOMEM);
        goto done;
    }
    struct bench_rng rng;
    bench_rng_seed(&rng, 2000);
    for (size_t i = 0; i < n; i++) {
        x[i] = bench_rng_normal(&rng);
    }
    for (int i = 0; i < G_COUNT; i++) {
        ctx[i] = (struct ew_ctx){
            .n = n, .x = x, .dst = dst[i], .scratch = scratch,
        };
        cases[i] = (struct bench_case){
            .name = rows[i].variant, .fn = rows[i].fn, .ctx = &ctx[i],
        };
    }
    bench_progress(cfg, "gelu %zux%zu", side, side);
    int bad = bench_run_cases(cfg, cases, G_COUNT);
    bench_progress_done(cfg);
    if (bad) {
        cli_error("gelu: %s failed", cases[bad - 1].name);
        goto done;
    }
    int st = bench_table_new("bench_gelu", cols, COUNT(cols), &t);
    const double copy_ms = cases[G_COPY].median_ms;
    const double unfused_ms = cases[G_UNFUSED].median_ms;
    for (int i = 0; st == ART_OK && i < G_COUNT; i++) {
        const double ms = cases[i].median_ms;
        size_t row;
        st = art_table_add_row(t, &row);
        if (st == ART_OK) {
            st = bench_set_text(t, row, "variant", rows[i].variant);
        }
        if (st == ART_OK) {
            st = bench_set_text(t, row, "implementation", rows[i].impl);
        }
        if (st == ART_OK) {
            st = bench_set_uint(t, row, "elements", n);
        }
        /* Effective bandwidth counts what the operation must move, one
         * float read and one written per element, for every variant: the
         * unfused one's extra traffic shows as a lower figure. */
        const struct {
            const char *col;
            double v;
        } reals[] = {
            {"latency_ms", ms},
            {"latency_p90_ms", cases[i].p90_ms},
            {"ns_per_element", ms * 1e6 / (double)n},
            {"achieved_bandwidth_gbps", 8.0 * (double)n / (ms * 1e6)},
            {"speedup_vs_unfused", unfused_ms / ms},
            {"time_vs_copy", ms / copy_ms},
            {"max_abs_err", max_abs_err(dst[i], x, n, rows[i].ref)},
        };
        for (size_t j = 0; st == ART_OK && j < COUNT(reals); j++) {
            st = bench_set_real(t, row, reals[j].col, cli_round4(reals[j].v));
        }
    }
    if (st != ART_OK) {
        bench_art_failed("gelu table", st);
        art_table_destroy(t);
        t = NULL;
        goto done;
    }
    rc = CLI_EXIT_OK;
done:
    for (int i = 0; i < G_COUNT; i++) {
        free(dst[i]);
    }
    free(scratch);
    free(x);
    *out = t;
    return rc;
}

/* ---- Arithmetic intensity ------------------------------------------------- */

static int run_add(void *p)
{
    struct ew_ctx *c = p;
    bench_add(c->dst, c->x, c->y, c->n);
    return 0;
}

static int run_mul(void *p)
{
    struct ew_ctx *c = p;
    bench_mul(c->dst, c->x, c->y, c->n);
    return 0;
}

static int one_thread(void *p)
{
    (void)p;
    return kern_set_threads(1) != KERN_OK;
}

static int run_matmul(void *p)
{
    struct ew_ctx *c = p;
    return kern_sgemm(0, c->dim, c->dim, c->dim, c->x, c->dim, c->y, c->dim,
                      c->dst, c->dim) != KERN_OK;
}

int bench_table_intensity(const struct bench_cfg *cfg,
                          const struct bench_host *h, art_table **out)
{
    static const struct bench_col cols[] = {
        {"operation", ART_TEXT},
        {"implementation", ART_TEXT},
        {"flop", ART_UINT},
        {"bytes_moved", ART_UINT},
        {"intensity_flop_per_byte", ART_REAL},
        {"latency_ms", ART_REAL},
        {"achieved_gflops", ART_REAL},
        {"achieved_bandwidth_gbps", ART_REAL},
        {"roof_level", ART_TEXT},
        {"roof_gbps", ART_REAL},
        {"knee_flop_per_byte", ART_REAL},
        {"bound", ART_TEXT},
        {"roofline_gflops", ART_REAL},
        {"roofline_utilization", ART_REAL},
    };
    /* TinyTorch's counts: add and multiply one FLOP per element, GELU
     * eight, matmul 2 N^3; bytes: three N^2 float arrays for add, multiply
     * and matmul, two for GELU. */
    const size_t dim = cfg->quick ? 128 : 1024;
    const uint64_t e = (uint64_t)dim * dim;
    static const char *const names[4] = {
        "elementwise_add", "elementwise_multiply", "gelu", "matmul",
    };
    static const char *const impls[4] = {
        "plain loop", "plain loop", "kern_gelu_f32", "kern_sgemm, 1 thread",
    };
    const uint64_t flop[4] = {e, e, 8 * e, 2 * e * dim};
    const uint64_t bytes[4] = {3 * e * 4, 3 * e * 4, 2 * e * 4, 3 * e * 4};
    static const bench_fn fns[4] = {run_add, run_mul, run_gelu, run_matmul};

    art_table *t = NULL;
    float *x = bench_alloc(e, sizeof(float));
    float *y = bench_alloc(e, sizeof(float));
    float *dst[4] = {0};
    int rc = CLI_EXIT_FAILURE;
    bool ok = x && y;
    for (int i = 0; ok && i < 4; i++) {
        dst[i] = bench_alloc(e, sizeof(float));
        ok = dst[i] != NULL;
    }
    if (!ok) {
        bench_kern_failed("intensity", KERN_E_NOMEM);
        goto done;
    }
    struct bench_rng rng;
    bench_rng_seed(&rng, 1024);
    for (size_t i = 0; i < e; i++) {
        x[i] = bench_rng_normal(&rng);
        y[i] = bench_rng_normal(&rng);
    }
    struct ew_ctx ctx[4];
    struct bench_case cases[4];
    for (int i = 0; i < 4; i++) {
        ctx[i] = (struct ew_ctx){
            .n = e, .x = x, .y = y, .dst = dst[i], .dim = dim,
        };
        cases[i] = (struct bench_case){
            .name = names[i], .fn = fns[i], .ctx = &ctx[i],
            .prepare = i == 3 ? one_thread : NULL,
        };
    }
    bench_progress(cfg, "arithmetic intensity %zux%zu", dim, dim);
    int bad = bench_run_cases(cfg, cases, 4);
    bench_progress_done(cfg);
    if (bad) {
        cli_error("intensity: %s failed", cases[bad - 1].name);
        goto done;
    }
    int st = bench_table_new("bench_intensity", cols, COUNT(cols), &t);
    for (int i = 0; st == ART_OK && i < 4; i++) {
        const double ms = cases[i].median_ms;
        const double ai = (double)flop[i] / (double)bytes[i];
        const double gf = (double)flop[i] / (ms * 1e6);
        /* The roofline against the level that holds the data (the
         * smallest cache holding the bytes, or a faster one when the
         * operation beat it): attainable = min(peak, intensity x that
         * bandwidth), the verdict from which side of that knee the
         * intensity sits. A 4 MiB GELU judged against main memory once
         * "reached" 380% of its roof. */
        const double gbps = (double)bytes[i] / (ms * 1e6);
        unsigned level = 0;
        double roof_gbps = h->triad_gbps;
        if (h->measured) {
            prof_bandwidth_roof(&h->dev, bytes[i], gbps, &level, &roof_gbps);
        }
        const double knee = h->peak_gflops / roof_gbps;
        const double roof = fmin(h->peak_gflops, ai * roof_gbps);
        static const char *const level_names[] = {"DRAM", "L1", "L2", "L3"};
        size_t row;
        st = art_table_add_row(t, &row);
        if (st == ART_OK) {
            st = bench_set_text(t, row, "operation", names[i]);
        }
        if (st == ART_OK) {
            st = bench_set_text(t, row, "implementation", impls[i]);
        }
        if (st == ART_OK) {
            st = bench_set_uint(t, row, "flop", flop[i]);
        }
        if (st == ART_OK) {
            st = bench_set_uint(t, row, "bytes_moved", bytes[i]);
        }
        if (st == ART_OK && h->measured) {
            st = bench_set_text(t, row, "bound",
                                ai < knee ? "memory" : "compute");
        }
        if (st == ART_OK && h->measured) {
            st = bench_set_text(t, row, "roof_level",
                                level_names[level < 4 ? level : 0]);
        }
        const struct {
            const char *col;
            double v;
        } reals[] = {
            {"intensity_flop_per_byte", ai},
            {"latency_ms", cli_round4(ms)},
            {"achieved_gflops", cli_round4(gf)},
            {"achieved_bandwidth_gbps", cli_round4(gbps)},
            {"roof_gbps", cli_round4(roof_gbps)},
            {"knee_flop_per_byte", cli_round4(knee)},
            {"roofline_gflops", cli_round4(roof)},
            /* at most 1: above the compute roof only by noise */
            {"roofline_utilization", cli_round4(fmin(1.0, gf / roof))},
        };
        for (size_t j = 0; st == ART_OK && j < COUNT(reals); j++) {
            st = bench_set_real(t, row, reals[j].col, reals[j].v);
        }
    }
    if (st != ART_OK) {
        bench_art_failed("intensity table", st);
        art_table_destroy(t);
        t = NULL;
        goto done;
    }
    rc = CLI_EXIT_OK;
done:
    for (int i = 0; i < 4; i++) {
        free(dst[i]);
    }
    free(y);
    free(x);
    *out = t;
    return rc;
}

/* ---- fp16 / bf16 conversions ---------------------------------------------- */

static int run_f32_f16(void *p)
{
    struct ew_ctx *c = p;
    return kern_f32_to_f16(c->hdst, c->x, c->n) != KERN_OK;
}

static int run_f16_f32(void *p)
{
    struct ew_ctx *c = p;
    return kern_f16_to_f32(c->dst, c->h, c->n) != KERN_OK;
}

static int run_f32_bf16(void *p)
{
    struct ew_ctx *c = p;
    return kern_f32_to_bf16(c->hdst, c->x, c->n) != KERN_OK;
}

static int run_bf16_f32(void *p)
{
    struct ew_ctx *c = p;
    return kern_bf16_to_f32(c->dst, c->h, c->n) != KERN_OK;
}

static int run_f32_f16_f16c(void *p)
{
    struct ew_ctx *c = p;
    bench_f32_to_f16_f16c(c->hdst, c->x, c->n);
    return 0;
}

static int run_f16_f32_f16c(void *p)
{
    struct ew_ctx *c = p;
    bench_f16_to_f32_f16c(c->dst, c->h, c->n);
    return 0;
}

static int run_f32_bf16_loop(void *p)
{
    struct ew_ctx *c = p;
    bench_f32_to_bf16_loop(c->hdst, c->x, c->n);
    return 0;
}

static int run_bf16_f32_loop(void *p)
{
    struct ew_ctx *c = p;
    bench_bf16_to_f32_loop(c->dst, c->h, c->n);
    return 0;
}

enum {
    V_COPY,
    V_F32_F16, V_F32_F16_REF,
    V_F16_F32, V_F16_F32_REF,
    V_F32_BF16, V_F32_BF16_REF,
    V_BF16_F32, V_BF16_F32_REF,
    V_COUNT
};

int bench_table_conversions(const struct bench_cfg *cfg,
                            const struct bench_host *h, art_table **out)
{
    (void)h;
    static const struct bench_col cols[] = {
        {"conversion", ART_TEXT},
        {"implementation", ART_TEXT},
        {"elements", ART_UINT},
        {"bytes_moved", ART_UINT},
        {"latency_ms", ART_REAL},
        {"ns_per_element", ART_REAL},
        {"achieved_bandwidth_gbps", ART_REAL},
        {"speedup_vs_f16c", ART_REAL},
        {"gbps_vs_copy", ART_REAL},
        {"mismatches_vs_reference", ART_UINT},
    };
    static const struct {
        const char *conv, *impl;
        bench_fn fn;
        int ref;   /* the reference row it is compared with, or -1 */
        bool f16c; /* needs the F16C instructions */
        unsigned bytes_per_element;
    } rows[V_COUNT] = {
        {"copy", "memcpy of the fp32 array", run_copy, -1, false, 8},
        {"fp32_to_fp16", "kern_f32_to_f16", run_f32_f16, V_F32_F16_REF,
         false, 6},
        {"fp32_to_fp16", "F16C loop (vcvtps2ph)", run_f32_f16_f16c, -1, true,
         6},
        {"fp16_to_fp32", "kern_f16_to_f32", run_f16_f32, V_F16_F32_REF,
         false, 6},
        {"fp16_to_fp32", "F16C loop (vcvtph2ps)", run_f16_f32_f16c, -1, true,
         6},
        {"fp32_to_bf16", "kern_f32_to_bf16", run_f32_bf16, V_F32_BF16_REF,
         false, 6},
        {"fp32_to_bf16", "scalar loop (integer rounding)", run_f32_bf16_loop,
         -1, false, 6},
        {"bf16_to_fp32", "kern_bf16_to_f32", run_bf16_f32, V_BF16_F32_REF,
         false, 6},
        {"bf16_to_fp32", "scalar loop (shift)", run_bf16_f32_loop, -1, false,
         6},
    };
    /* 16 Mi floats, 64 MiB: far beyond the L2 caches. */
    const size_t n = cfg->quick ? ((size_t)1 << 16) : ((size_t)1 << 24);
    const bool f16c = bench_f16c_available();
    art_table *t = NULL;
    float *x = bench_alloc(n, sizeof(float));
    uint16_t *h16 = bench_alloc(n, sizeof(uint16_t));
    uint16_t *hb16 = bench_alloc(n, sizeof(uint16_t));
    void *dst[V_COUNT] = {0};
    struct ew_ctx ctx[V_COUNT];
    struct bench_case cases[V_COUNT];
    int index[V_COUNT]; /* row of each case */
    size_t ncases = 0;
    int rc = CLI_EXIT_FAILURE;
    bool ok = x && h16 && hb16;
    for (int i = 0; ok && i < V_COUNT; i++) {
        dst[i] = bench_alloc(n, sizeof(float));
        ok = dst[i] != NULL;
    }
    if (!ok) {
        bench_kern_failed("conversions", KERN_E_NOMEM);
        goto done;
    }
    /* Normals scaled by 2^e, e uniform in [-30, 20]: values that round in
     * every way, fp16 subnormals and fp16 overflow included. */
    struct bench_rng rng;
    bench_rng_seed(&rng, 16);
    for (size_t i = 0; i < n; i++) {
        int e = (int)(bench_rng_next(&rng) % 51) - 30;
        x[i] = ldexpf(bench_rng_normal(&rng), e);
    }
    /* Inputs of the widening rows: every 16-bit pattern that is not a NaN,
     * cycled (NaN payload rules are the library's tests' business). */
    for (size_t i = 0; i < n; i++) {
        uint16_t v = (uint16_t)(i * 40503u);
        h16[i] = (v & 0x7c00u) == 0x7c00u && (v & 0x03ffu) ? 0x3c00u : v;
        hb16[i] = (v & 0x7f80u) == 0x7f80u && (v & 0x007fu) ? 0x3f80u : v;
    }
    for (int i = 0; i < V_COUNT; i++) {
        if (rows[i].f16c && !f16c) {
            continue;
        }
        bool bf = i >= V_F32_BF16;
        ctx[i] = (struct ew_ctx){
            .n = n, .x = x, .dst = dst[i], .hdst = dst[i],
            .h = bf ? hb16 : h16,
        };
        index[ncases] = i;
        cases[ncases++] = (struct bench_case){
            .name = rows[i].impl, .fn = rows[i].fn, .ctx = &ctx[i],
        };
    }
    bench_progress(cfg, "conversions of %zu floats", n);
    int bad = bench_run_cases(cfg, cases, ncases);
    bench_progress_done(cfg);
    if (bad) {
        cli_error("conversions: %s failed", cases[bad - 1].name);
        goto done;
    }
    double ms[V_COUNT];
    for (int i = 0; i < V_COUNT; i++) {
        ms[i] = NAN;
    }
    for (size_t j = 0; j < ncases; j++) {
        ms[index[j]] = cases[j].median_ms;
    }
    const double copy_gbps = 8.0 * (double)n / (ms[V_COPY] * 1e6);
    int st = bench_table_new("bench_conversions", cols, COUNT(cols), &t);
    for (size_t j = 0; st == ART_OK && j < ncases; j++) {
        const int i = index[j];
        const uint64_t bytes = (uint64_t)rows[i].bytes_per_element * n;
        const double gbps = (double)bytes / (ms[i] * 1e6);
        /* The fp16 rows are compared with the F16C loop of their
         * direction; bf16 has no such instruction here, so its rows are
         * compared with the same-direction F16C loop too (the same bytes
         * move) and their bits with the scalar loop. */
        double ref_ms = NAN;
        if (i == V_F32_F16 || i == V_F32_BF16) {
            ref_ms = ms[V_F32_F16_REF];
        } else if (i == V_F16_F32 || i == V_BF16_F32) {
            ref_ms = ms[V_F16_F32_REF];
        }
        size_t row;
        st = art_table_add_row(t, &row);
        if (st == ART_OK) {
            st = bench_set_text(t, row, "conversion", rows[i].conv);
        }
        if (st == ART_OK) {
            st = bench_set_text(t, row, "implementation", rows[i].impl);
        }
        if (st == ART_OK) {
            st = bench_set_uint(t, row, "elements", n);
        }
        if (st == ART_OK) {
            st = bench_set_uint(t, row, "bytes_moved", bytes);
        }
        const struct {
            const char *col;
            double v;
        } reals[] = {
            {"latency_ms", ms[i]},
            {"ns_per_element", ms[i] * 1e6 / (double)n},
            {"achieved_bandwidth_gbps", gbps},
            {"speedup_vs_f16c", ref_ms / ms[i]},
            {"gbps_vs_copy", gbps / copy_gbps},
        };
        for (size_t c = 0; st == ART_OK && c < COUNT(reals); c++) {
            st = bench_set_real(t, row, reals[c].col, cli_round4(reals[c].v));
        }
        const int ref = rows[i].ref;
        if (st == ART_OK && ref >= 0 && !isnan(ms[ref])) {
            /* Bit patterns must agree exactly (both round to nearest
             * even; widening is exact). */
            size_t width = i == V_F16_F32 || i == V_BF16_F32 ? 4 : 2;
            const unsigned char *p = dst[i], *q = dst[ref];
            uint64_t bad_count = 0;
            for (size_t e = 0; e < n; e++) {
                bad_count += memcmp(p + e * width, q + e * width, width) != 0;
            }
            st = bench_set_uint(t, row, "mismatches_vs_reference",
                                bad_count);
        }
    }
    if (st != ART_OK) {
        bench_art_failed("conversions table", st);
        art_table_destroy(t);
        t = NULL;
        goto done;
    }
    rc = CLI_EXIT_OK;
done:
    for (int i = 0; i < V_COUNT; i++) {
        free(dst[i]);
    }
    free(hb16);
    free(h16);
    free(x);
    *out = t;
    return rc;
}
