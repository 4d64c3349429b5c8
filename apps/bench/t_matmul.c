/* edgefit-bench: the matrix-product tables, float32 scaling (TinyTorch's
 * analyze_vectorization_scaling, plus the edge shapes) and int8. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "cli.h"
#include "table.h"
#include "edgefit/kernels.h"

struct shape {
    size_t m, k, n;
};

/* TinyTorch's square sizes, then the shapes of small networks (batch 1 to
 * 256 against layer weights), M x K x N. */
static const struct shape matmul_full[] = {
    {64, 64, 64},     {128, 128, 128},   {256, 256, 256},
    {512, 512, 512},  {1024, 1024, 1024}, {2048, 2048, 2048},
    {32, 784, 64},    {256, 784, 64},    {16, 1024, 256},
    {32, 64, 10},     {1, 784, 64},      {1, 512, 512},
};
static const struct shape matmul_quick[] = {
    {64, 64, 64}, {128, 128, 128}, {32, 784, 64}, {32, 64, 10},
    {1, 784, 64},
};
/* The squares, then layers of the MLPerf Tiny int8 networks at batch 1 as
 * im2col GEMMs (M = output pixels, K = kh kw cin, N = output channels):
 * ResNet-8's 3x3 convolutions at 32x32, 16x16 and 8x8, DS-CNN's first
 * 10x4 convolution and a pointwise one (25x5 pixels), and
 * MobileNetV1-0.25's pointwise convolutions at 48x48, 24x24, 6x6 and 3x3. */
static const struct shape int8_full[] = {
    {32, 784, 64}, {256, 784, 64}, {256, 256, 256}, {512, 512, 512},
    {1024, 1024, 1024},
    {1024, 27, 16}, {1024, 144, 16}, {256, 288, 32}, {64, 576, 64},
    {125, 40, 64}, {125, 64, 64},
    {2304, 8, 16}, {576, 32, 32}, {36, 128, 128}, {9, 256, 256},
};
static const struct shape int8_quick[] = {
    {32, 784, 64}, {128, 128, 128},
};

/* The naive loop runs up to TinyTorch's 1024 cube; beyond, its time is
 * extrapolated from the largest measured square at that square's rate (a
 * 2048 cube would take seconds per call). */
static const double naive_max_flop = 2.0 * 1024 * 1024 * 1024;


struct mm_ctx {
    size_t m, n, k;
    const float *a, *b;
    float *c;
    int threads;
    struct bench_xsmm *xsmm;
};

/* kern_set_threads is process-wide: set before each batch of calls, out
 * of the timed region. */
static int set_threads(void *p)
{
    struct mm_ctx *x = p;
    return kern_set_threads(x->threads) != KERN_OK;
}

static int run_edgefit(void *p)
{
    struct mm_ctx *x = p;
    return kern_sgemm(0, x->m, x->n, x->k, x->a, x->k, x->b, x->n, x->c,
                      x->n) != KERN_OK;
}

static int run_naive(void *p)
{
    struct mm_ctx *x = p;
    bench_sgemm_naive(x->m, x->n, x->k, x->a, x->b, x->c);
    return 0;
}

static int run_openblas(void *p)
{
    struct mm_ctx *x = p;
    return bench_openblas_sgemm(x->m, x->n, x->k, x->a, x->b, x->c);
}

static int run_xsmm(void *p)
{
    struct mm_ctx *x = p;
    return bench_xsmm_run(x->xsmm, x->a, x->b, x->c);
}

static int run_onednn(void *p)
{
    struct mm_ctx *x = p;
    return bench_onednn_sgemm(x->m, x->n, x->k, x->a, x->b, x->c);
}

static const struct bench_col matmul_base_cols[] = {
    {"shape", ART_TEXT},
    {"m", ART_UINT},
    {"k", ART_UINT},
    {"n", ART_UINT},
    {"flop", ART_UINT},
    {"edgefit_latency_ms", ART_REAL},
    {"edgefit_latency_p90_ms", ART_REAL},
    {"edgefit_gflops", ART_REAL},
    {"peak_utilization", ART_REAL},
    {"naive_latency_ms", ART_REAL},
    {"naive_gflops", ART_REAL},
    {"naive_source", ART_TEXT},
    {"speedup_vs_naive", ART_REAL},
};
static const struct bench_col matmul_openblas_cols[] = {
    {"openblas_latency_ms", ART_REAL},
    {"openblas_gflops", ART_REAL},
};
static const struct bench_col matmul_xsmm_cols[] = {
    {"libxsmm_latency_ms", ART_REAL},
    {"libxsmm_gflops", ART_REAL},
    {"libxsmm_route", ART_TEXT},
};
static const struct bench_col matmul_onednn_cols[] = {
    {"onednn_latency_ms", ART_REAL},
    {"onednn_gflops", ART_REAL},
};
static const struct bench_col matmul_best_cols[] = {
    {"best_other", ART_TEXT},
    {"edgefit_to_best", ART_REAL},
};
static const struct bench_col matmul_tail_cols[] = {
    {"threads", ART_UINT},
    {"mt_latency_ms", ART_REAL},
    {"mt_gflops", ART_REAL},
    {"mt_speedup", ART_REAL},
    {"check_ref", ART_TEXT},
    {"max_err_of_bound", ART_REAL},
};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static int add_cols(art_table *t, const struct bench_col *cols, size_t n)
{
    int st = ART_OK;
    for (size_t i = 0; st == ART_OK && i < n; i++) {
        st = art_table_add_column(t, cols[i].name, cols[i].type);
    }
    return st;
}

static int matmul_table_create(art_table **out)
{
    const unsigned have = bench_compare_available();
    int st = bench_table_new("bench_matmul", matmul_base_cols,
                             COUNT(matmul_base_cols), out);
    if (st == ART_OK && (have & BENCH_LIB_OPENBLAS)) {
        st = add_cols(*out, matmul_openblas_cols,
                      COUNT(matmul_openblas_cols));
    }
    if (st == ART_OK && (have & BENCH_LIB_LIBXSMM)) {
        st = add_cols(*out, matmul_xsmm_cols, COUNT(matmul_xsmm_cols));
    }
    if (st == ART_OK && (have & BENCH_LIB_ONEDNN)) {
        st = add_cols(*out, matmul_onednn_cols, COUNT(matmul_onednn_cols));
    }
    if (st == ART_OK && have) {
        st = add_cols(*out, matmul_best_cols, COUNT(matmul_best_cols));
    }
    if (st == ART_OK) {
        st = add_cols(*out, matmul_tail_cols, COUNT(matmul_tail_cols));
    }
    return st;
}

/* Largest |x| over n values. */
static float max_abs(const float *x, size_t n)
{
    float mx = 0.0f;
    for (size_t i = 0; i < n; i++) {
        float v = fabsf(x[i]);
        mx = v > mx ? v : mx;
    }
    return mx;
}

/* The largest difference between two products as a fraction of the error
 * bound kernels.h states for kern_sgemm, k * FLT_EPSILON * max|a| * max|b|
 * (a value well under 1 means both agree as closely as promised). */
static double err_of_bound(const float *c, const float *ref, size_t n,
                           size_t k, float amax, float bmax)
{
    double worst = 0.0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)c[i] - (double)ref[i]);
        worst = d > worst ? d : worst;
    }
    double bound = (double)k * FLT_EPSILON * amax * bmax;
    return bound > 0.0 ? worst / bound : (worst > 0.0 ? INFINITY : 0.0);
}

enum { C_EDGE, C_MT, C_NAIVE, C_OPENBLAS, C_XSMM, C_ONEDNN, C_COUNT };

struct mm_row {
    struct shape s;
    float *a, *b, *c[C_COUNT];
    struct mm_ctx ctx[C_COUNT];
    struct bench_case cases[C_COUNT];
    int which[C_COUNT]; /* the contender of each case */
    size_t ncases;
    double ms[C_COUNT];   /* median per call, NaN when not run */
    double p90_ms;
};

static void row_free(struct mm_row *r)
{
    free(r->a);
    free(r->b);
    for (int i = 0; i < C_COUNT; i++) {
        free(r->c[i]);
    }
    bench_xsmm_free(r->ctx[C_XSMM].xsmm);
}

static int measure_row(const struct bench_cfg *cfg, struct mm_row *r,
                       bool with_naive, bool with_mt)
{
    const struct shape s = r->s;
    const unsigned have = bench_compare_available();
    r->a = bench_alloc(s.m * s.k, sizeof(float));
    r->b = bench_alloc(s.k * s.n, sizeof(float));
    if (!r->a || !r->b) {
        return bench_kern_failed("matmul", KERN_E_NOMEM);
    }
    struct bench_rng rng;
    bench_rng_seed(&rng, 0x4d4d + s.m * 131 + s.k * 17 + s.n);
    for (size_t i = 0; i < s.m * s.k; i++) {
        r->a[i] = bench_rng_uniform(&rng, -1.0f, 1.0f);
    }
    for (size_t i = 0; i < s.k * s.n; i++) {
        r->b[i] = bench_rng_uniform(&rng, -1.0f, 1.0f);
    }
    static const char *const names[C_COUNT] = {
        "edgefit", "edgefit-mt", "naive", "openblas", "libxsmm", "onednn",
    };
    static const bench_fn fns[C_COUNT] = {
        run_edgefit, run_edgefit, run_naive, run_openblas, run_xsmm,
        run_onednn,
    };
    const bool use[C_COUNT] = {
        true,
        with_mt,
        with_naive,
        (have & BENCH_LIB_OPENBLAS) != 0,
        (have & BENCH_LIB_LIBXSMM) != 0,
        (have & BENCH_LIB_ONEDNN) != 0,
    };
    r->ncases = 0;
    for (int i = 0; i < C_COUNT; i++) {
        r->ms[i] = NAN;
        if (!use[i]) {
            continue;
        }
        r->c[i] = bench_alloc(s.m * s.n, sizeof(float));
        if (!r->c[i]) {
            return bench_kern_failed("matmul", KERN_E_NOMEM);
        }
        r->ctx[i] = (struct mm_ctx){
            .m = s.m, .n = s.n, .k = s.k, .a = r->a, .b = r->b,
            .c = r->c[i], .threads = i == C_MT ? cfg->threads : 1,
        };
        if (i == C_XSMM &&
            bench_xsmm_prepare(s.m, s.n, s.k, &r->ctx[i].xsmm) != 0) {
            cli_error("libxsmm: cannot prepare %zux%zux%zu", s.m, s.k, s.n);
            return CLI_EXIT_FAILURE;
        }
        r->which[r->ncases] = i;
        r->cases[r->ncases++] = (struct bench_case){
            .name = names[i], .fn = fns[i], .ctx = &r->ctx[i],
            .prepare = i == C_EDGE || i == C_MT ? set_threads : NULL,
        };
    }
    int bad = bench_run_cases(cfg, r->cases, r->ncases);
    kern_set_threads(1);
    if (bad) {
        cli_error("matmul %zux%zux%zu: %s failed", s.m, s.k, s.n,
                  r->cases[bad - 1].name);
        return CLI_EXIT_FAILURE;
    }
    for (size_t j = 0; j < r->ncases; j++) {
        r->ms[r->which[j]] = r->cases[j].median_ms;
        if (r->which[j] == C_EDGE) {
            r->p90_ms = r->cases[j].p90_ms;
        }
    }
    return CLI_EXIT_OK;
}

static double gflops(double flop, double ms)
{
    return isnan(ms) || ms <= 0.0 ? NAN : flop / (ms * 1e6);
}

/* The host's peak is the best of the FMA loop and the best kernel: the
 * calibration's (which already takes kern_sgemm's 256^3 product) or a
 * faster edgefit row of this very table, so that no row runs above its
 * own "peak" (a Xeon's FMA loop once gave 117 GFLOP/s under a 151 GFLOP/s
 * matmul). */
static int set_peak_utilization(art_table *t, const struct bench_host *h)
{
    const long gf_col = art_table_find_column(t, "edgefit_gflops");
    const long pu_col = art_table_find_column(t, "peak_utilization");
    if (gf_col < 0 || pu_col < 0) {
        return bench_art_failed("matmul table", ART_E_INVALID);
    }
    double peak = h->peak_gflops;
    for (size_t i = 0; i < art_table_rows(t); i++) {
        double gf = NAN;
        if (art_table_get_real(t, i, (size_t)gf_col, &gf) == ART_OK &&
            (isnan(peak) || gf > peak)) {
            peak = gf;
        }
    }
    int st = ART_OK;
    for (size_t i = 0; st == ART_OK && i < art_table_rows(t); i++) {
        double gf = NAN;
        if (art_table_get_real(t, i, (size_t)gf_col, &gf) == ART_OK &&
            peak > 0.0) {
            st = bench_set_real(t, i, "peak_utilization",
                                cli_round4(gf / peak));
        }
    }
    return st == ART_OK ? CLI_EXIT_OK : bench_art_failed("matmul table", st);
}

static int fill_row(art_table *t, const struct bench_cfg *cfg,
                    const struct bench_host *h, const struct mm_row *r,
                    double naive_ms, const char *naive_source)
{
    const struct shape s = r->s;
    const unsigned have = bench_compare_available();
    const double flop = 2.0 * (double)s.m * (double)s.k * (double)s.n;
    char shape[64];
    snprintf(shape, sizeof shape, "%zux%zux%zu", s.m, s.k, s.n);
    size_t row;
    int st = art_table_add_row(t, &row);
    const double edge_ms = r->ms[C_EDGE];
    const double edge_gf = gflops(flop, edge_ms);
    if (st == ART_OK) {
        st = bench_set_text(t, row, "shape", shape);
    }
    if (st == ART_OK) {
        st = bench_set_uint(t, row, "m", s.m);
    }
    if (st == ART_OK) {
        st = bench_set_uint(t, row, "k", s.k);
    }
    if (st == ART_OK) {
        st = bench_set_uint(t, row, "n", s.n);
    }
    if (st == ART_OK) {
        st = bench_set_uint(t, row, "flop", 2u * s.m * s.k * s.n);
    }
    struct {
        const char *col;
        double v;
    } reals[] = {
        {"edgefit_latency_ms", edge_ms},
        {"edgefit_latency_p90_ms", r->p90_ms},
        {"edgefit_gflops", edge_gf},
        {"naive_latency_ms", naive_ms},
        {"naive_gflops", gflops(flop, naive_ms)},
        {"speedup_vs_naive", naive_ms / edge_ms},
    };
    for (size_t i = 0; st == ART_OK && i < COUNT(reals); i++) {
        st = bench_set_real(t, row, reals[i].col, cli_round4(reals[i].v));
    }
    if (st == ART_OK && naive_source) {
        st = bench_set_text(t, row, "naive_source", naive_source);
    }
    static const struct {
        unsigned bit;
        int idx;
        const char *ms_col, *gf_col, *name;
    } others[] = {
        {BENCH_LIB_OPENBLAS, C_OPENBLAS, "openblas_latency_ms",
         "openblas_gflops", "openblas"},
        {BENCH_LIB_LIBXSMM, C_XSMM, "libxsmm_latency_ms",
         "libxsmm_gflops", "libxsmm"},
        {BENCH_LIB_ONEDNN, C_ONEDNN, "onednn_latency_ms", "onednn_gflops",
         "onednn"},
    };
    double best_ms = INFINITY;
    const char *best = NULL;
    for (size_t i = 0; st == ART_OK && i < COUNT(others); i++) {
        if (!(have & others[i].bit)) {
            continue;
        }
        double ms = r->ms[others[i].idx];
        st = bench_set_real(t, row, others[i].ms_col, cli_round4(ms));
        if (st == ART_OK) {
            st = bench_set_real(t, row, others[i].gf_col,
                                cli_round4(gflops(flop, ms)));
        }
        if (ms < best_ms) {
            best_ms = ms;
            best = others[i].name;
        }
    }
    if (st == ART_OK && (have & BENCH_LIB_LIBXSMM)) {
        st = bench_set_text(t, row, "libxsmm_route",
                            bench_xsmm_route(r->ctx[C_XSMM].xsmm));
    }
    if (st == ART_OK && best) {
        st = bench_set_text(t, row, "best_other", best);
        if (st == ART_OK) {
            /* GFLOP/s of edgefit over the best library's: >= 1 when
             * edgefit is at least as fast. */
            st = bench_set_real(t, row, "edgefit_to_best",
                                cli_round4(best_ms / edge_ms));
        }
    }
    if (st == ART_OK && !isnan(r->ms[C_MT])) {
        st = bench_set_uint(t, row, "threads", (uint64_t)cfg->threads);
        if (st == ART_OK) {
            st = bench_set_real(t, row, "mt_latency_ms",
                                cli_round4(r->ms[C_MT]));
        }
        if (st == ART_OK) {
            st = bench_set_real(t, row, "mt_gflops",
                                cli_round4(gflops(flop, r->ms[C_MT])));
        }
        if (st == ART_OK) {
            st = bench_set_real(t, row, "mt_speedup",
                                cli_round4(edge_ms / r->ms[C_MT]));
        }
    }
    /* Check edgefit's result against the naive loop's, or OpenBLAS's when
     * the naive loop did not run. */
    const float *ref = NULL;
    const char *ref_name = NULL;
    if (r->c[C_NAIVE]) {
        ref = r->c[C_NAIVE];
        ref_name = "naive";
    } else if (r->c[C_OPENBLAS]) {
        ref = r->c[C_OPENBLAS];
        ref_name = "openblas";
    }
    if (st == ART_OK && ref) {
        st = bench_set_text(t, row, "check_ref", ref_name);
        double e = err_of_bound(r->c[C_EDGE], ref, s.m * s.n, s.k,
                                max_abs(r->a, s.m * s.k),
                                max_abs(r->b, s.k * s.n));
        if (r->c[C_MT]) {
            double e2 = err_of_bound(r->c[C_MT], ref, s.m * s.n, s.k,
                                     max_abs(r->a, s.m * s.k),
                                     max_abs(r->b, s.k * s.n));
            e = e2 > e ? e2 : e;
        }
        if (st == ART_OK) {
            st = bench_set_real(t, row, "max_err_of_bound", cli_round4(e));
        }
    }
    return st;
}

int bench_table_matmul(const struct bench_cfg *cfg,
                       const struct bench_host *h, art_table **out)
{
    const struct shape *shapes = cfg->quick ? matmul_quick : matmul_full;
    const size_t nshapes = cfg->quick ? COUNT(matmul_quick)
                                      : COUNT(matmul_full);
    art_table *t = NULL;
    int st = matmul_table_create(&t);
    if (st != ART_OK) {
        return bench_art_failed("matmul table", st);
    }
    /* The rate of the largest square the naive loop ran, for the
     * extrapolation of larger ones. */
    double naive_rate = NAN;
    size_t naive_rate_n = 0;
    int rc = CLI_EXIT_OK;
    for (size_t i = 0; rc == CLI_EXIT_OK && i < nshapes; i++) {
        struct mm_row r = {.s = shapes[i]};
        const struct shape s = r.s;
        const double flop = 2.0 * (double)s.m * (double)s.k * (double)s.n;
        const bool square = s.m == s.k && s.k == s.n;
        const bool with_naive = flop <= naive_max_flop;
        const bool with_mt = square && s.m >= 512 && cfg->threads > 1;
        bench_progress(cfg, "matmul %zux%zux%zu", s.m, s.k, s.n);
        rc = measure_row(cfg, &r, with_naive, with_mt);
        if (rc == CLI_EXIT_OK) {
            double naive_ms = r.ms[C_NAIVE];
            char source[96] = "measured";
            if (!with_naive) {
                naive_ms = flop / (naive_rate * 1e6);
                if (isnan(naive_rate)) {
                    snprintf(source, sizeof source, "skipped");
                } else {
                    snprintf(source, sizeof source,
                             "extrapolated from %zu at %.4g GFLOP/s",
                             naive_rate_n, naive_rate);
                }
            } else if (square && s.m > naive_rate_n) {
                naive_rate = flop / (naive_ms * 1e6);
                naive_rate_n = s.m;
            }
            st = fill_row(t, cfg, h, &r, naive_ms, source);
            if (st != ART_OK) {
                rc = bench_art_failed("matmul table", st);
            }
        }
        row_free(&r);
    }
    bench_progress_done(cfg);
    if (rc == CLI_EXIT_OK) {
        rc = set_peak_utilization(t, h);
    }
    if (rc != CLI_EXIT_OK) {
        art_table_destroy(t);
        t = NULL;
    }
    *out = t;
    return rc;
}

/* ---- int8 ----------------------------------------------------------------- */

struct q8_ctx {
    size_t m, n, k;
    const int8_t *a;
    const uint8_t *a_u8;
    const int8_t *w;
    const void *packed;
    int32_t *c;
};

static int run_q8_edgefit(void *p)
{
    struct q8_ctx *x = p;
    return kern_q8_gemm(x->m, x->n, x->k, x->a, x->k, x->packed, x->c,
                        x->n) != KERN_OK;
}

static int run_q8_onednn(void *p)
{
    struct q8_ctx *x = p;
    return bench_onednn_u8s8s32(x->m, x->n, x->k, x->a_u8, x->w, x->c);
}

/* Static int8 (integer requantisation fused into the GEMM), the dynamic
 * route (int32 GEMM, then requantisation through float) and fp32, on the
 * same shape: what a deployed int8 layer costs against the older route and
 * against float. */
struct q8s_ctx {
    size_t m, n, k;
    const int8_t *a;
    const void *packed;
    const int32_t *w_sums;
    struct kern_q8_outstage os;
    int8_t *q;
    /* the dynamic route */
    int32_t *c;
    const float *w_scales, *bias_f;
    /* fp32 */
    const float *af, *wf;
    float *cf;
};

/* Activations after a ReLU in asymmetric int8: zero point -128. */
#define Q8S_BENCH_ZERO (-128)

static int run_q8_static(void *p)
{
    struct q8s_ctx *x = p;
    return kern_q8_gemm_s8(x->m, x->n, x->k, x->a, x->k, Q8S_BENCH_ZERO,
                           x->packed, x->w_sums, &x->os, x->q,
                           x->n) != KERN_OK;
}

static int run_q8_dynamic(void *p)
{
    struct q8s_ctx *x = p;
    if (kern_q8_gemm(x->m, x->n, x->k, x->a, x->k, x->packed, x->c, x->n) !=
        KERN_OK) {
        return 1;
    }
    return kern_q8_requant_s8(x->m, x->n, x->c, x->n, 0.02f, x->w_scales,
                              x->bias_f, 1, 0.05f, x->q, x->n) != KERN_OK;
}

static int run_q8_fp32(void *p)
{
    struct q8s_ctx *x = p;
    return kern_sgemm(KERN_MM_TRANS_B, x->m, x->n, x->k, x->af, x->k, x->wf,
                      x->k, x->cf, x->n) != KERN_OK;
}

static uint64_t count_mismatches(const int32_t *x, const int32_t *y,
                                 size_t n)
{
    uint64_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        bad += x[i] != y[i];
    }
    return bad;
}

static int int8_row(const struct bench_cfg *cfg, art_table *t,
                    struct shape s)
{
    const bool dnnl = (bench_compare_available() & BENCH_LIB_ONEDNN) != 0;
    int8_t *a = bench_alloc(s.m * s.k, 1);
    uint8_t *a_u8 = bench_alloc(s.m * s.k, 1);
    int8_t *w = bench_alloc(s.n * s.k, 1);
    int32_t *c_edge = bench_alloc(s.m * s.n, sizeof(int32_t));
    int32_t *c_dnnl = bench_alloc(s.m * s.n, sizeof(int32_t));
    int32_t *c_ref = bench_alloc(s.m * s.n, sizeof(int32_t));
    size_t packed_bytes = kern_q8_packed_bytes(s.n, s.k);
    void *packed = packed_bytes ? bench_alloc(packed_bytes, 1) : NULL;
    int32_t *w_sums = bench_alloc(s.n, sizeof(int32_t));
    int32_t *bias = bench_alloc(s.n, sizeof(int32_t));
    int32_t *bias_ref = bench_alloc(s.n, sizeof(int32_t));
    int32_t *mult = bench_alloc(s.n, sizeof(int32_t));
    int *shift = bench_alloc(s.n, sizeof(int));
    float *w_scales = bench_alloc(s.n, sizeof(float));
    float *bias_f = bench_alloc(s.n, sizeof(float));
    int8_t *q_static = bench_alloc(s.m * s.n, 1);
    int8_t *q_ref = bench_alloc(s.m * s.n, 1);
    int8_t *q_dyn = bench_alloc(s.m * s.n, 1);
    float *af = bench_alloc(s.m * s.k, sizeof(float));
    float *wf = bench_alloc(s.n * s.k, sizeof(float));
    float *cf = bench_alloc(s.m * s.n, sizeof(float));
    int rc = CLI_EXIT_FAILURE;
    if (!a || !a_u8 || !w || !c_edge || !c_dnnl || !c_ref || !packed ||
        !w_sums || !bias || !bias_ref || !mult || !shift || !w_scales ||
        !bias_f || !q_static || !q_ref || !q_dyn || !af || !wf || !cf) {
        bench_kern_failed("int8", KERN_E_NOMEM);
        goto done;
    }
    /* Activations in [0, 127], as after a ReLU, so that the same bytes are
     * edgefit's int8 operand and oneDNN's uint8 one; weights in
     * [-127, 127], the symmetric range of the quantiser. */
    struct bench_rng rng;
    bench_rng_seed(&rng, 0x5138 + s.m * 7 + s.k * 3 + s.n);
    for (size_t i = 0; i < s.m * s.k; i++) {
        a[i] = (int8_t)(bench_rng_next(&rng) % 128);
        a_u8[i] = (uint8_t)a[i];
    }
    for (size_t i = 0; i < s.n * s.k; i++) {
        w[i] = (int8_t)((int)(bench_rng_next(&rng) % 255) - 127);
    }
    int st = kern_q8_pack_weights(w, s.n, s.k, s.k, packed, packed_bytes);
    if (st != KERN_OK) {
        bench_kern_failed("kern_q8_pack_weights", st);
        goto done;
    }
    st = kern_q8_packed_row_sums(packed, w_sums);
    if (st != KERN_OK) {
        bench_kern_failed("kern_q8_packed_row_sums", st);
        goto done;
    }
    for (size_t j = 0; j < s.n; j++) {
        /* a layer's a_scale * w_scale / out_scale: about 1 / (64 k), so
         * the outputs spread over the int8 range */
        const double real = (0.5 + (double)(bench_rng_next(&rng) % 1000) /
                                       1000.0) / (64.0 * (double)s.k);
        st = kern_q8_quantize_multiplier(real, &mult[j], &shift[j]);
        if (st != KERN_OK) {
            bench_kern_failed("kern_q8_quantize_multiplier", st);
            goto done;
        }
        bias[j] = (int32_t)(bench_rng_next(&rng) % 20001) - 10000;
        bias_ref[j] = bias[j] - Q8S_BENCH_ZERO * w_sums[j];
        w_scales[j] = 0.01f;
        bias_f[j] = (float)bias[j] * 0.0002f;
    }
    for (size_t i = 0; i < s.m * s.k; i++) {
        af[i] = (float)a[i] * 0.02f;
    }
    for (size_t i = 0; i < s.n * s.k; i++) {
        wf[i] = (float)w[i] * 0.01f;
    }
    /* relu as the clamp: qmin is the output zero point */
    const struct kern_q8_outstage os = {bias, mult, shift, 1, -128, -128,
                                        127, NULL};
    struct q8s_ctx ctx_s = {
        .m = s.m, .n = s.n, .k = s.k, .a = a, .packed = packed,
        .w_sums = w_sums, .os = os, .q = q_static, .c = c_dnnl,
        .w_scales = w_scales, .bias_f = bias_f, .af = af, .wf = wf, .cf = cf,
    };
    struct q8s_ctx ctx_d = ctx_s;
    ctx_d.q = q_dyn;
    struct bench_case scases[3] = {
        {.name = "static int8", .fn = run_q8_static, .ctx = &ctx_s},
        {.name = "dynamic int8", .fn = run_q8_dynamic, .ctx = &ctx_d},
        {.name = "fp32", .fn = run_q8_fp32, .ctx = &ctx_s},
    };
    int sbad = bench_run_cases(cfg, scases, 3);
    if (sbad) {
        cli_error("int8 %zux%zux%zu: %s failed", s.m, s.k, s.n,
                  scases[sbad - 1].name);
        goto done;
    }
    struct q8_ctx ctx_edge = {
        .m = s.m, .n = s.n, .k = s.k, .a = a, .a_u8 = a_u8, .w = w,
        .packed = packed, .c = c_edge,
    };
    struct q8_ctx ctx_dnnl = ctx_edge;
    ctx_dnnl.c = c_dnnl;
    struct bench_case cases[2] = {
        {.name = "edgefit", .fn = run_q8_edgefit, .ctx = &ctx_edge},
        {.name = "onednn", .fn = run_q8_onednn, .ctx = &ctx_dnnl},
    };
    int bad = bench_run_cases(cfg, cases, dnnl ? 2 : 1);
    if (bad) {
        cli_error("int8 %zux%zux%zu: %s failed", s.m, s.k, s.n,
                  cases[bad - 1].name);
        goto done;
    }
    bench_s8gemm_naive(s.m, s.n, s.k, a, w, c_ref);
    /* the static result again, unfused: the exact int32 sums with the
     * zero point's correction folded into the bias, then the output stage */
    const struct kern_q8_outstage os_ref = {bias_ref, mult, shift, 1, -128,
                                            -128, 127, NULL};
    st = kern_q8_requantize_s8(s.m, s.n, c_ref, s.n, &os_ref, q_ref, s.n);
    if (st != KERN_OK) {
        bench_kern_failed("kern_q8_requantize_s8", st);
        goto done;
    }
    uint64_t static_bad = 0;
    for (size_t i = 0; i < s.m * s.n; i++) {
        static_bad += q_static[i] != q_ref[i];
    }

    const double ops = 2.0 * (double)s.m * (double)s.k * (double)s.n;
    char shape[64];
    snprintf(shape, sizeof shape, "%zux%zux%zu", s.m, s.k, s.n);
    size_t row;
    st = art_table_add_row(t, &row);
    if (st == ART_OK) {
        st = bench_set_text(t, row, "shape", shape);
    }
    if (st == ART_OK) {
        st = bench_set_uint(t, row, "m", s.m);
    }
    if (st == ART_OK) {
        st = bench_set_uint(t, row, "k", s.k);
    }
    if (st == ART_OK) {
        st = bench_set_uint(t, row, "n", s.n);
    }
    if (st == ART_OK) {
        st = bench_set_uint(t, row, "ops", 2u * s.m * s.k * s.n);
    }
    if (st == ART_OK) {
        st = bench_set_real(t, row, "edgefit_latency_ms",
                            cli_round4(cases[0].median_ms));
    }
    if (st == ART_OK) {
        st = bench_set_real(t, row, "edgefit_gops",
                            cli_round4(gflops(ops, cases[0].median_ms)));
    }
    if (st == ART_OK) {
        st = bench_set_uint(t, row, "edgefit_mismatches",
                            count_mismatches(c_edge, c_ref, s.m * s.n));
    }
    if (st == ART_OK) {
        st = bench_set_text(t, row, "kernel_path",
                            kern_cpu_path_name(kern_cpu_flags()));
    }
    if (st == ART_OK) {
        st = bench_set_real(t, row, "static_latency_ms",
                            cli_round4(scases[0].median_ms));
    }
    if (st == ART_OK) {
        st = bench_set_real(t, row, "static_gops",
                            cli_round4(gflops(ops, scases[0].median_ms)));
    }
    if (st == ART_OK) {
        st = bench_set_uint(t, row, "static_mismatches", static_bad);
    }
    if (st == ART_OK) {
        st = bench_set_real(t, row, "dynamic_latency_ms",
                            cli_round4(scases[1].median_ms));
    }
    if (st == ART_OK) {
        st = bench_set_real(t, row, "fp32_latency_ms",
                            cli_round4(scases[2].median_ms));
    }
    if (st == ART_OK) {
        st = bench_set_real(t, row, "static_to_dynamic",
                            cli_round4(scases[1].median_ms /
                                       scases[0].median_ms));
    }
    if (st == ART_OK) {
        st = bench_set_real(t, row, "static_to_fp32",
                            cli_round4(scases[2].median_ms /
                                       scases[0].median_ms));
    }
    if (st == ART_OK && dnnl) {
        st = bench_set_real(t, row, "onednn_latency_ms",
                            cli_round4(cases[1].median_ms));
        if (st == ART_OK) {
            st = bench_set_real(t, row, "onednn_gops",
                                cli_round4(gflops(ops, cases[1].median_ms)));
        }
        if (st == ART_OK) {
            st = bench_set_real(t, row, "edgefit_to_onednn",
                                cli_round4(cases[1].median_ms /
                                       cases[0].median_ms));
        }
        if (st == ART_OK) {
            st = bench_set_uint(t, row, "onednn_mismatches",
                                count_mismatches(c_dnnl, c_ref, s.m * s.n));
        }
    }
    if (st != ART_OK) {
        bench_art_failed("int8 table", st);
        goto done;
    }
    rc = CLI_EXIT_OK;
done:
    free(cf);
    free(wf);
    free(af);
    free(q_dyn);
    free(q_ref);
    free(q_static);
    free(bias_f);
    free(w_scales);
    free(shift);
    free(mult);
    free(bias_ref);
    free(bias);
    free(w_sums);
    free(packed);
    free(c_ref);
    free(c_dnnl);
    free(c_edge);
    free(w);
    free(a_u8);
    free(a);
    return rc;
}

int bench_table_int8(const struct bench_cfg *cfg, const struct bench_host *h,
                     art_table **out)
{
    (void)h;
    static const struct bench_col base[] = {
        {"shape", ART_TEXT},       {"m", ART_UINT},
        {"k", ART_UINT},           {"n", ART_UINT},
        {"ops", ART_UINT},         {"edgefit_latency_ms", ART_REAL},
        {"edgefit_gops", ART_REAL}, {"edgefit_mismatches", ART_UINT},
        {"kernel_path", ART_TEXT},  {"static_latency_ms", ART_REAL},
        {"static_gops", ART_REAL},  {"static_mismatches", ART_UINT},
        {"dynamic_latency_ms", ART_REAL}, {"fp32_latency_ms", ART_REAL},
        {"static_to_dynamic", ART_REAL},  {"static_to_fp32", ART_REAL},
    };
    static const struct bench_col dnnl[] = {
        {"onednn_latency_ms", ART_REAL},
        {"onednn_gops", ART_REAL},
        {"edgefit_to_onednn", ART_REAL},
        {"onednn_mismatches", ART_UINT},
    };
    art_table *t = NULL;
    int st = bench_table_new("bench_int8", base, COUNT(base), &t);
    if (st == ART_OK && (bench_compare_available() & BENCH_LIB_ONEDNN)) {
        st = add_cols(t, dnnl, COUNT(dnnl));
    }
    if (st != ART_OK) {
        art_table_destroy(t);
        *out = NULL;
        return bench_art_failed("int8 table", st);
    }
    const struct shape *shapes = cfg->quick ? int8_quick : int8_full;
    const size_t n = cfg->quick ? COUNT(int8_quick) : COUNT(int8_full);
    int rc = CLI_EXIT_OK;
    for (size_t i = 0; rc == CLI_EXIT_OK && i < n; i++) {
        bench_progress(cfg, "int8 %zux%zux%zu", shapes[i].m, shapes[i].k,
                       shapes[i].n);
        rc = int8_row(cfg, t, shapes[i]);
    }
    bench_progress_done(cfg);
    if (rc != CLI_EXIT_OK) {
        art_table_destroy(t);
        t = NULL;
    }
    *out = t;
    return rc;
}
