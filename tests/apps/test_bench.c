/* edgefit-bench end to end, in its --quick mode: every table printed with
 * its columns, the CSVs of --out read back, the results the tables check
 * (conversion bits, int8 products, matmul error) clean, the
 * mixed-precision table equal to TinyTorch's formulas computed here, and
 * bad options rejected with exit 2 and no file. No timing is judged: the
 * measured columns only have to be positive. The program path comes as
 * argv[1]. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#if defined(__x86_64__)
#include <cpuid.h>
#endif
#if defined(__aarch64__) || defined(__arm__)
#include <sys/auxv.h>
#endif
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "edgefit/artifacts.h"
#include "edgefit/kernels.h"
#include "run.h"

static const char *bench;
static char tmpdir[] = "/tmp/edgefit-bench-XXXXXX";

#define RUN(r, ...)                                                          \
    do {                                                                     \
        char *argv_[] = {(char *)bench, __VA_ARGS__, NULL};                  \
        run_argv(argv_, (r));                                                \
    } while (0)

#define MAX_COLS 16

/* What each table must hold: its name, its columns (the comparison
 * columns of a blas_compare build come on top) and its rows in --quick. */
static const struct {
    const char *name;
    size_t rows;
    const char *cols[MAX_COLS];
} want_tables[] = {
    {"bench_host", 1,
     {"kernel_path", "peak_path", "peak_gmacs", "peak_gflops", "triad_gbps",
      "triad_mb",
      "knee_flop_per_byte", "threads", "repeats", "sample_ms", "quick",
      "compared_with"}},
    {"bench_matmul", 5,
     {"shape", "m", "k", "n", "flop", "edgefit_latency_ms", "edgefit_gflops",
      "peak_utilization", "naive_latency_ms", "naive_gflops", "naive_source",
      "speedup_vs_naive", "mt_speedup", "check_ref", "max_err_of_bound"}},
    {"bench_gelu", 5,
     {"variant", "implementation", "elements", "latency_ms", "ns_per_element",
      "achieved_bandwidth_gbps", "speedup_vs_unfused", "time_vs_copy",
      "max_abs_err"}},
    {"bench_intensity", 4,
     {"operation", "flop", "bytes_moved", "intensity_flop_per_byte",
      "latency_ms", "achieved_gflops", "achieved_bandwidth_gbps",
      "knee_flop_per_byte", "bound", "roofline_gflops",
      "roofline_utilization"}},
    {"bench_mixed_precision", 4,
     {"model", "parameter_count", "activation_count", "fp32_bytes",
      "mixed_bytes", "fp32_gb", "mixed_gb", "savings_gb", "savings_pct"}},
    {"bench_conversions", 9,
     {"conversion", "implementation", "elements", "bytes_moved", "latency_ms",
      "ns_per_element", "achieved_bandwidth_gbps", "speedup_vs_f16c",
      "gbps_vs_copy", "mismatches_vs_reference"}},
    {"bench_int8", 2,
     {"shape", "m", "k", "n", "ops", "edgefit_latency_ms", "edgefit_gops",
      "edgefit_mismatches"}},
    {"bench_conv", 6,
     {"model", "layer_names", "count", "shape", "macs", "edgefit_latency_ms",
      "edgefit_gflops", "edgefit_nchw8c_latency_ms"}},
    {"bench_paths", 12,
     {"family", "shape", "kernel_path", "path_latency_ms", "c_latency_ms",
      "speedup_vs_c"}},
    {"bench_threads", 4,
     {"model", "batch", "one_thread_ms", "two_threads_ms", "two_to_one",
      "identical"}},
};
enum { NTABLES = sizeof want_tables / sizeof want_tables[0] };

/* Whether the conversion table has its F16C reference rows: a build with
 * vector paths (the bench compiles the F16C loops with them) on a CPU
 * with AVX and F16C whose OS saves the YMM state. */
static bool f16c_rows(void)
{
#if defined(__x86_64__)
    unsigned a, b, c, d;
    if (strcmp(kern_built_paths(), "c") == 0 ||
        !__get_cpuid(1, &a, &b, &c, &d)) {
        return false;
    }
    const unsigned need = bit_AVX | bit_F16C | bit_OSXSAVE;
    unsigned lo, hi;
    if ((c & need) != need) {
        return false;
    }
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    (void)hi;
    return (lo & 6u) == 6u;
#else
    return false;
#endif
}

/* TinyTorch's four models and its formulas, written out as it does:
 * parameters stay fp32, Adam keeps 8 bytes per parameter. */
static const struct {
    const char *name;
    uint64_t params, activations;
} seed_models[] = {
    {"Tiny CNN", 50000, 100000},
    {"Small BERT", 10000000, 5000000},
    {"Medium GPT", 100000000, 50000000},
    {"Large Transformer", 1000000000, 500000000},
};

static void seed_formula(uint64_t n, uint64_t a, uint64_t *fp32,
                         uint64_t *mixed)
{
    uint64_t param_memory = n * 4;
    uint64_t fp32_activations = a * 4, fp32_gradients = n * 4;
    uint64_t fp32_optimizer = n * 8;
    *fp32 = param_memory + fp32_activations + fp32_gradients + fp32_optimizer;
    uint64_t fp16_activations = a * 2, fp16_gradients = n * 2;
    *mixed = param_memory + fp16_activations + fp16_gradients +
             fp32_optimizer;
}

static long col(const art_table *t, const char *name)
{
    long c = art_table_find_column(t, name);
    if (c < 0) {
        fail_msg("%s: no column %s", art_table_name(t), name);
    }
    return c;
}

static double real_at(const art_table *t, size_t row, const char *name)
{
    double v = NAN;
    int st = art_table_get_real(t, row, (size_t)col(t, name), &v);
    if (st != ART_OK) {
        fail_msg("%s row %zu %s: empty or not a number", art_table_name(t),
                 row, name);
    }
    return v;
}

static uint64_t uint_at(const art_table *t, size_t row, const char *name)
{
    uint64_t v = 0;
    assert_int_equal(art_table_get_uint(t, row, (size_t)col(t, name), &v),
                     ART_OK);
    return v;
}

static const char *text_at(const art_table *t, size_t row, const char *name)
{
    const char *v = NULL;
    assert_int_equal(art_table_get_text(t, row, (size_t)col(t, name), &v),
                     ART_OK);
    return v;
}

static bool is_set(const art_table *t, size_t row, const char *name)
{
    long c = art_table_find_column(t, name);
    return c >= 0 && art_table_is_set(t, row, (size_t)c);
}

static art_table *load(const char *dir, const char *name)
{
    char path[600];
    snprintf(path, sizeof path, "%s/%s.csv", dir, name);
    art_table *t = NULL;
    struct art_diag diag;
    if (art_table_load_csv(path, &t, &diag) != ART_OK) {
        fail_msg("%s: cannot be read back (line %d: %s)", path, diag.line,
                 diag.message);
    }
    return t;
}

static void check_mixed(const art_table *t)
{
    assert_int_equal(art_table_rows(t), 4);
    for (size_t i = 0; i < 4; i++) {
        uint64_t fp32, mixed;
        seed_formula(seed_models[i].params, seed_models[i].activations,
                     &fp32, &mixed);
        assert_string_equal(text_at(t, i, "model"), seed_models[i].name);
        assert_true(uint_at(t, i, "parameter_count") == seed_models[i].params);
        assert_true(uint_at(t, i, "activation_count") ==
                    seed_models[i].activations);
        assert_true(uint_at(t, i, "fp32_bytes") == fp32);
        assert_true(uint_at(t, i, "mixed_bytes") == mixed);
        /* reals as written: six significant digits */
        assert_written(real_at(t, i, "fp32_gb"), (double)fp32 / 1e9,
                       "fp32_gb");
        assert_written(real_at(t, i, "mixed_gb"), (double)mixed / 1e9,
                       "mixed_gb");
        assert_written(real_at(t, i, "savings_gb"),
                       (double)(fp32 - mixed) / 1e9, "savings_gb");
        assert_written(real_at(t, i, "savings_pct"),
                       (double)(fp32 - mixed) / (double)fp32 * 100.0,
                       "savings_pct");
    }
    /* By hand: Tiny CNN is 1,200,000 B in fp32 and 900,000 B mixed, a
     * quarter saved; Medium GPT 1.8 GB against 1.5 GB. */
    assert_true(uint_at(t, 0, "fp32_bytes") == 1200000);
    assert_true(uint_at(t, 0, "mixed_bytes") == 900000);
    assert_true(real_at(t, 0, "savings_pct") == 25.0);
    assert_true(real_at(t, 2, "fp32_gb") == 1.8);
    assert_true(real_at(t, 2, "mixed_gb") == 1.5);
}

/* The terminal shows a table's key columns, each one of the CSV's, in at
 * most 120 characters (the CSV and JSON carry them all). */
static void check_printed(const char *out, const char *name,
                          const art_table *t)
{
    char title[80];
    snprintf(title, sizeof title, "%s: ", name);
    const char *at = strstr(out, title);
    if (!at) {
        fail_msg("stdout has no table %s", name);
    }
    const char *header = strchr(at, '\n') + 1;
    const size_t len = strcspn(header, "\n");
    assert_true(len <= 120);
    char line[512];
    snprintf(line, sizeof line, "%.*s", (int)len, header);
    size_t shown = 0;
    for (char *w = strtok(line, " "); w; w = strtok(NULL, " ")) {
        if (art_table_find_column(t, w) < 0) {
            fail_msg("%s: printed column %s is not in the CSV", name, w);
        }
        shown++;
    }
    assert_true(shown >= 4 || shown == art_table_cols(t));
}

static void test_quick_run(void **state)
{
    (void)state;
    char dir[512];
    snprintf(dir, sizeof dir, "%s/out", tmpdir);
    struct run_result r;
    RUN(&r, "--quick", "--repeats", "2", "--out", dir);
    if (r.status != 0) {
        fail_msg("status %d: %s", r.status, r.err);
    }
    /* Not a terminal: no progress lines. */
    assert_string_equal(r.err, "");
    /* one CSV per table and bench.json with all of them */
    assert_int_equal(run_count_entries(dir), NTABLES + 1);
    char jpath[600];
    snprintf(jpath, sizeof jpath, "%s/bench.json", dir);
    json_t *all = json_load_file(jpath, 0, NULL);
    assert_non_null(all);
    assert_int_equal(json_object_size(all), NTABLES);
    json_decref(all);

    art_table *t[NTABLES];
    for (size_t i = 0; i < NTABLES; i++) {
        t[i] = load(dir, want_tables[i].name);
        size_t rows = want_tables[i].rows;
        if (strcmp(want_tables[i].name, "bench_conversions") == 0 &&
            !f16c_rows()) {
            rows -= 2; /* the two F16C reference loops */
        }
        assert_int_equal(art_table_rows(t[i]), rows);
        for (size_t c = 0; c < MAX_COLS && want_tables[i].cols[c]; c++) {
            col(t[i], want_tables[i].cols[c]);
        }
        check_printed(r.out, want_tables[i].name, t[i]);
    }
    art_table *host = t[0], *mm = t[1], *gelu = t[2], *ai = t[3];
    art_table *cvt = t[5], *q8 = t[6];

    assert_true(real_at(host, 0, "peak_gflops") > 0.0);
    /* one figure for this machine's peak, in the unit the layer-wise
     * summary uses too: GMAC/s, and twice that in GFLOP/s (each rounded
     * to 4 significant digits) */
    const double gmacs = real_at(host, 0, "peak_gmacs");
    assert_true(fabs(real_at(host, 0, "peak_gflops") - 2.0 * gmacs) <=
                1e-3 * gmacs);
    assert_true(real_at(host, 0, "triad_gbps") > 0.0);

    /* Matmul: the shapes in order, FLOP counts, edgefit's product against
     * the naive loop's within the error bound of kernels.h. */
    static const uint64_t shapes[5][3] = {
        {64, 64, 64}, {128, 128, 128}, {32, 784, 64}, {32, 64, 10},
        {1, 784, 64},
    };
    for (size_t i = 0; i < 5; i++) {
        uint64_t m = shapes[i][0], k = shapes[i][1], n = shapes[i][2];
        char shape[64];
        snprintf(shape, sizeof shape, "%llux%llux%llu",
                 (unsigned long long)m, (unsigned long long)k,
                 (unsigned long long)n);
        assert_string_equal(text_at(mm, i, "shape"), shape);
        assert_true(uint_at(mm, i, "flop") == 2 * m * k * n);
        assert_true(real_at(mm, i, "edgefit_latency_ms") > 0.0);
        assert_true(real_at(mm, i, "naive_latency_ms") > 0.0);
        assert_string_equal(text_at(mm, i, "naive_source"), "measured");
        assert_string_equal(text_at(mm, i, "check_ref"), "naive");
        /* Each product is within the bound of the exact one, so the two
         * are within twice the bound of each other. */
        assert_true(real_at(mm, i, "max_err_of_bound") <= 2.0);
        /* A share of the host's peak, which is the best of the FMA loop
         * and the best kernel: never above 1. */
        assert_true(real_at(mm, i, "peak_utilization") > 0.0 &&
                    real_at(mm, i, "peak_utilization") <= 1.0);
        /* A quick run has no square >= 512: no multi-thread figures. */
        assert_false(is_set(mm, i, "mt_speedup"));
        if (art_table_find_column(mm, "openblas_latency_ms") >= 0) {
            assert_true(real_at(mm, i, "openblas_latency_ms") > 0.0);
            assert_true(real_at(mm, i, "edgefit_to_best") > 0.0);
        }
    }

    /* GELU: the copy is exact; the fused and unfused forms agree with a
     * double evaluation of the tanh form to float accuracy. */
    assert_string_equal(text_at(gelu, 0, "variant"), "copy");
    assert_true(real_at(gelu, 0, "max_abs_err") == 0.0);
    assert_true(real_at(gelu, 0, "time_vs_copy") == 1.0);
    for (size_t i = 1; i < 5; i++) {
        assert_true(real_at(gelu, i, "latency_ms") > 0.0);
        assert_true(real_at(gelu, i, "max_abs_err") < 1e-5);
    }
    assert_true(uint_at(gelu, 0, "elements") == 256 * 256);

    /* Intensity on 128 x 128: TinyTorch's FLOP and byte counts. */
    const uint64_t e = 128 * 128;
    const uint64_t flop[4] = {e, e, 8 * e, 2 * e * 128};
    const uint64_t bytes[4] = {12 * e, 12 * e, 8 * e, 12 * e};
    for (size_t i = 0; i < 4; i++) {
        assert_true(uint_at(ai, i, "flop") == flop[i]);
        assert_true(uint_at(ai, i, "bytes_moved") == bytes[i]);
        assert_written(real_at(ai, i, "intensity_flop_per_byte"),
                       (double)flop[i] / (double)bytes[i],
                       "intensity_flop_per_byte");
        assert_true(real_at(ai, i, "achieved_gflops") > 0.0);
        /* against the roof of the level holding the data: at most 1 */
        assert_true(real_at(ai, i, "roofline_utilization") > 0.0 &&
                    real_at(ai, i, "roofline_utilization") <= 1.0);
        assert_non_null(text_at(ai, i, "roof_level"));
        /* the verdict is the side of the row's own knee (the host's peak
         * over the roof level's bandwidth) the intensity falls on: 1/12
         * FLOP per byte is memory-bound on every real CPU, but under
         * qemu-user the arithmetic is emulated, far slower than the copies,
         * and the knee can fall below it */
        const double knee = real_at(ai, i, "knee_flop_per_byte");
        assert_true(knee > 0.0);
        assert_string_equal(text_at(ai, i, "bound"),
                            (double)flop[i] / (double)bytes[i] < knee
                                ? "memory"
                                : "compute");
    }

    check_mixed(t[4]);

    /* Conversions: every compared row agrees bit for bit. */
    size_t compared = 0;
    for (size_t i = 0; i < art_table_rows(cvt); i++) {
        assert_true(real_at(cvt, i, "achieved_bandwidth_gbps") > 0.0);
        if (is_set(cvt, i, "mismatches_vs_reference")) {
            assert_true(uint_at(cvt, i, "mismatches_vs_reference") == 0);
            compared++;
        }
    }
    /* the fp16 rows are compared with the F16C loops, the bf16 rows with
     * the scalar loops */
    assert_int_equal(compared, f16c_rows() ? 4 : 2);

    /* int8: exact against the int32 reference loop. */
    for (size_t i = 0; i < 2; i++) {
        assert_true(uint_at(q8, i, "edgefit_mismatches") == 0);
        assert_true(real_at(q8, i, "edgefit_gops") > 0.0);
        if (art_table_find_column(q8, "onednn_mismatches") >= 0) {
            assert_true(uint_at(q8, i, "onednn_mismatches") == 0);
        }
    }

    /* Convolutions: ResNet-8's 3x3 16 -> 16 on 32x32 (twice), DS-CNN's
     * three shapes, and a total per model. MACs by hand: out_c * out_h *
     * out_w * in_c/groups * kh * kw. */
    const art_table *cv = t[7];
    static const struct {
        const char *model, *shape;
        uint64_t count, macs;
    } conv_rows[6] = {
        {"resnet8", "16x32x32>16 k3x3 s1 p1:1:1:1", 2, 16 * 32 * 32 * 144},
        {"resnet8", "total", 2, 2 * 16 * 32 * 32 * 144},
        {"ds-cnn", "1x49x10>64 k10x4 s2 p4:1:5:1", 1, 64 * 25 * 5 * 40},
        {"ds-cnn", "64x25x5>64 k3x3 s1 p1:1:1:1 dw", 4, 64 * 25 * 5 * 9},
        {"ds-cnn", "64x25x5>64 k1x1 s1 p0:0:0:0", 4, 64 * 25 * 5 * 64},
        {"ds-cnn", "total", 9,
         64 * 25 * 5 * 40 + 4 * 64 * 25 * 5 * (9 + 64)},
    };
    for (size_t i = 0; i < 6; i++) {
        assert_string_equal(text_at(cv, i, "model"), conv_rows[i].model);
        assert_string_equal(text_at(cv, i, "shape"), conv_rows[i].shape);
        assert_true(uint_at(cv, i, "count") == conv_rows[i].count);
        assert_true(uint_at(cv, i, "macs") == conv_rows[i].macs);
        assert_true(real_at(cv, i, "edgefit_latency_ms") > 0.0);
        /* the blocked layout runs on every ungrouped shape (the others
         * leave the cell empty) and in the totals */
        if (!strstr(conv_rows[i].shape, " dw")) {
            assert_true(real_at(cv, i, "edgefit_nchw8c_latency_ms") > 0.0);
        }
        /* the libraries compute the same convolution (sums of up to 64
         * terms of magnitude below 1) */
        if (art_table_find_column(cv, "onednn_max_abs_diff") >= 0) {
            assert_true(real_at(cv, i, "onednn_max_abs_diff") < 1e-4);
        }
        if (art_table_find_column(cv, "xnnpack_max_abs_diff") >= 0) {
            assert_true(real_at(cv, i, "xnnpack_max_abs_diff") < 1e-4);
        }
    }
    /* Paths: both latencies measured (the C one by a child run with
     * KERN_CPU_MASK=0), the speedup their ratio, the path this process
     * names. */
    const art_table *pt = t[8];
    for (size_t i = 0; i < art_table_rows(pt); i++) {
        const double p_ms = real_at(pt, i, "path_latency_ms");
        const double c_ms = real_at(pt, i, "c_latency_ms");
        assert_true(p_ms > 0.0 && c_ms > 0.0);
        /* within the written rounding: each time to the finer of 1 us and
         * three significant digits, the speedup to four digits */
        const double ep = fmin(5e-4, 5e-3 * p_ms), ec = fmin(5e-4, 5e-3 * c_ms);
        assert_true(fabs(real_at(pt, i, "speedup_vs_c") - c_ms / p_ms) <=
                    (ep / p_ms + ec / c_ms + 1e-3) * c_ms / p_ms);
        assert_string_equal(text_at(pt, i, "kernel_path"),
                            kern_cpu_path_name(kern_cpu_flags()));
    }
    for (size_t i = 0; i < NTABLES; i++) {
        art_table_destroy(t[i]);
    }
    run_free(&r);
    run_rmdir(dir);
}

static void test_single_table(void **state)
{
    (void)state;
    struct run_result r;
    /* One table in CSV: plain CSV, header first. */
    RUN(&r, "--table", "mixed_precision", "--format", "csv");
    assert_int_equal(r.status, 0);
    static const char header[] =
        "model,parameter_count,activation_count,fp32_bytes,mixed_bytes,fp32_gb,"
        "mixed_gb,savings_gb,savings_pct\n";
    assert_int_equal(strncmp(r.out, header, sizeof header - 1), 0);
    assert_non_null(strstr(r.out, "\nTiny CNN,50000,100000,1200000,900000,"));
    run_free(&r);

    /* The table says what it counts, so that its savings and memfit's
     * mixed-precision figure (a model's own, staging buffers included,
     * sometimes more than fp32) do not read as opposite advice. */
    RUN(&r, "--table", "mixed_precision");
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "no working buffers"));
    assert_non_null(strstr(r.out, "edgefit-memfit"));
    run_free(&r);

    /* Several tables are never glued into one CSV stream: refused before
     * any timing, unless --out takes one file per table. */
    RUN(&r, "--table", "host", "--table", "mixed_precision", "--format",
        "csv");
    assert_int_equal(r.status, 2);
    assert_string_equal(r.out, "");
    assert_non_null(strstr(r.err, "one --table"));
    run_free(&r);
    char dir[512];
    snprintf(dir, sizeof dir, "%s/csv", tmpdir);
    RUN(&r, "--table", "mixed_precision", "--table", "host", "--quick",
        "--format", "csv", "--out", dir);
    assert_int_equal(r.status, 0);
    assert_string_equal(r.out, "");
    assert_int_equal(run_count_entries(dir), 3);
    run_free(&r);
    run_rmdir(dir);

    /* JSON: the numbers read back exactly. */
    RUN(&r, "--table", "mixed_precision", "--format", "json");
    assert_int_equal(r.status, 0);
    json_error_t err;
    json_t *j = json_loads(r.out, 0, &err);
    if (!j) {
        fail_msg("not JSON (%s): %s", err.text, r.out);
    }
    json_t *rows = json_object_get(j, "bench_mixed_precision");
    assert_int_equal(json_array_size(rows), 4);
    assert_int_equal(json_object_size(j), 1);
    for (size_t i = 0; i < 4; i++) {
        json_t *row = json_array_get(rows, i);
        uint64_t fp32, mixed;
        seed_formula(seed_models[i].params, seed_models[i].activations,
                     &fp32, &mixed);
        assert_true((uint64_t)json_integer_value(
                        json_object_get(row, "fp32_bytes")) == fp32);
        assert_written(json_number_value(json_object_get(row, "mixed_gb")),
                       (double)mixed / 1e9, "mixed_gb");
        assert_written(json_number_value(json_object_get(row, "savings_pct")),
                       (double)(fp32 - mixed) / (double)fp32 * 100.0,
                       "savings_pct");
    }
    json_decref(j);
    run_free(&r);
}

static void test_rejected_input(void **state)
{
    (void)state;
    char dir[512];
    snprintf(dir, sizeof dir, "%s/rejected", tmpdir);
    char *b = (char *)bench, *o = dir;
    struct {
        const char *why;
        char *argv[8];
        const char *needle;
    } cases[] = {
        {"zero repeats", {b, "--repeats", "0", "--out", o, NULL}, "--repeats"},
        {"text repeats", {b, "--repeats", "5x", "--out", o, NULL},
         "--repeats"},
        {"zero threads", {b, "--threads", "0", "--out", o, NULL}, "--threads"},
        {"too many threads", {b, "--threads", "65", "--out", o, NULL},
         "--threads"},
        {"table", {b, "--table", "roofline", "--out", o, NULL}, "roofline"},
        {"format", {b, "--format", "xml", "--out", o, NULL}, "--format"},
        {"unknown option", {b, "--frobnicate", "--out", o, NULL},
         "--frobnicate"},
        {"missing value", {b, "--out", o, "--table", NULL}, "--table"},
        {"empty out", {b, "--out", "", NULL}, "--out"},
        {"stray argument", {b, "extra", "--out", o, NULL}, "extra"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *bad = run_rejected(cases[i].argv, cases[i].needle);
        if (bad) {
            fail_msg("%s: %s", cases[i].why, bad);
        }
        assert_int_equal(run_count_entries(dir), -1);
    }
}

static void test_help_version(void **state)
{
    (void)state;
    struct run_result r;
    RUN(&r, "--help");
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "--quick"));
    assert_non_null(strstr(r.out, "mixed_precision"));
    run_free(&r);
    RUN(&r, "--version");
    assert_int_equal(r.status, 0);
    assert_int_equal(strncmp(r.out, "edgefit-bench ", 14), 0);
    run_free(&r);
}

#if !TEST_SIMD || defined(__aarch64__) || defined(__arm__)
/* --version's "kernel paths: built ...; selected P on this CPU" with
 * KERN_CPU_MASK set to MASK (NULL: unset). */
static void check_selected(const char *mask, const char *built,
                           const char *want)
{
    char line[160];
    snprintf(line, sizeof line, "kernel paths: built %s; selected %s on "
             "this CPU", built, want);
    if (mask) {
        setenv("KERN_CPU_MASK", mask, 1);
    } else {
        unsetenv("KERN_CPU_MASK");
    }
    struct run_result r;
    RUN(&r, "--version");
    unsetenv("KERN_CPU_MASK");
    assert_int_equal(r.status, 0);
    if (!strstr(r.out, line)) {
        fail_msg("KERN_CPU_MASK=%s: --version says\n%swant \"%s\"",
                 mask ? mask : "(unset)", r.out, line);
    }
    run_free(&r);
}
#endif

/* On ARM (a board, or CI's qemu-user) --version names the NEON paths
 * built and the one this CPU selects: the truth is the kernel's HWCAP
 * bits read here (aarch64: ASIMD bit 1, ASIMDDP bit 20; 32-bit: NEON bit
 * 12 with VFPv4 bit 16, the dot product unused), not the library's own
 * detection. KERN_CPU_MASK lowers the choice: 0x1b0 keeps every ARM bit
 * but the dot product, 0 none. A build without vector paths (-Dsimd=
 * disabled) names C alone, on any machine. */
static void test_version_paths(void **state)
{
    (void)state;
#if !TEST_SIMD
    check_selected(NULL, "c", "c");
#elif defined(__aarch64__) || defined(__arm__)
    const unsigned long hw = getauxval(AT_HWCAP);
#if defined(__aarch64__)
    const bool neon = hw & (1ul << 1), dot = hw & (1ul << 20);
    const char *built = "c neon neon-dotprod";
#else
    const bool neon = (hw & (1ul << 12)) && (hw & (1ul << 16)), dot = false;
    const char *built = "c neon";
#endif
    check_selected(NULL, built, dot ? "neon-dotprod" : neon ? "neon" : "c");
    check_selected("0x1b0", built, neon ? "neon" : "c");
    check_selected("0", built, "c");
#else
    skip();
#endif
}

static int setup(void **state)
{
    (void)state;
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    rmdir(tmpdir);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: test-bench PATH-TO-edgefit-bench\n");
        return 2;
    }
    bench = argv[1];
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rejected_input),
        cmocka_unit_test(test_help_version),
        cmocka_unit_test(test_version_paths),
        cmocka_unit_test(test_single_table),
        cmocka_unit_test(test_quick_run),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
