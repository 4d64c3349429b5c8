/* edgefit-sweep end to end on a small data set written here as IDX files
 * and weights built by hand (safetensors through libartifacts):
 *   - fp32 accuracy against a double-precision forward pass done here;
 *   - memory against libmemest's peak plan computed by hand;
 *   - the energy proxy as power x latency, acceptance against the limits;
 *   - precision_tradeoffs.csv against the original's aggregation
 *     recomputed here from sweep_results.csv (group, means, accepted
 *     ratio, sorted by mean latency then name);
 *   - --from-csv on a pandas-style file, and bad rows named by line and
 *     column; bad options refused before any work.
 * The program path comes as argv[1]. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "edgefit/artifacts.h"
#include "run.h"

#define COUNT 203 /* not a multiple of any batch: a padded last batch */
#define HIDDEN 64

static const char *sweep_app;
static char tmpdir[] = "/tmp/edgefit-sweep-XXXXXX";
static char datadir[600], weights[600];
static unsigned char images[COUNT][784];
static unsigned char labels[COUNT];
static float w1[HIDDEN * 784], b1[HIDDEN], w2[10 * HIDDEN], b2[10];

/* Class k: a bright band over rows 2k..2k+3 on noise; some images get a
 * second, fainter band so that the classifier below errs on a few. */
static void write_data(void)
{
    uint64_t seed = 7;
    for (unsigned i = 0; i < COUNT; i++) {
        const unsigned k = (i * 7) % 10, decoy = (k + 3) % 10;
        const bool hard = run_lcg(&seed) % 5 == 0;
        labels[i] = (unsigned char)k;
        for (unsigned p = 0; p < 784; p++) {
            const unsigned row = p / 28;
            unsigned v = (unsigned)(run_lcg(&seed) % 90);
            if (row >= 2 * k && row < 2 * k + 4) {
                v += 120;
            } else if (hard && row >= 2 * decoy && row < 2 * decoy + 4) {
                v += 110 + (unsigned)(run_lcg(&seed) % 30);
            }
            images[i][p] = (unsigned char)(v > 255 ? 255 : v);
        }
    }
    assert_int_equal(run_write_idx(datadir, "t10k", &images[0][0], labels,
                                   COUNT),
                     0);
}

/* Hidden unit k < 10 sums band k's pixels; the others are small noise.
 * The output k reads hidden unit k. */
static void write_weights(void)
{
    uint64_t seed = 11;
    for (unsigned h = 0; h < HIDDEN; h++) {
        for (unsigned p = 0; p < 784; p++) {
            const double noise =
                ((double)(run_lcg(&seed) % 2001) - 1000) * 1e-5;
            const unsigned row = p / 28;
            w1[h * 784 + p] = (float)((h < 10 && row >= 2 * h &&
                                       row < 2 * h + 4) ? 1.0 / 112 + noise
                                                         : noise);
        }
        b1[h] = -0.3f;
    }
    for (unsigned o = 0; o < 10; o++) {
        for (unsigned h = 0; h < HIDDEN; h++) {
            w2[o * HIDDEN + h] = o == h ? 4.0f : 0.01f;
        }
        b2[o] = 0;
    }
    const struct art_tensor t[] = {
        {"dense1.weight", ART_DTYPE_F32, 2, {HIDDEN, 784}, w1},
        {"dense1.bias", ART_DTYPE_F32, 1, {HIDDEN}, b1},
        {"dense2.weight", ART_DTYPE_F32, 2, {10, HIDDEN}, w2},
        {"dense2.bias", ART_DTYPE_F32, 1, {10}, b2},
    };
    assert_int_equal(art_safetensors_save(weights, t, 4, NULL, NULL, 0,
                                          NULL),
                     ART_OK);
}

/* The fp32 network in double precision: relu, then argmax of the logits
 * (softmax keeps the order). */
static double reference_accuracy(void)
{
    unsigned correct = 0;
    for (unsigned i = 0; i < COUNT; i++) {
        double hid[HIDDEN], best = -INFINITY;
        unsigned arg = 0;
        for (unsigned h = 0; h < HIDDEN; h++) {
            double s = b1[h];
            for (unsigned p = 0; p < 784; p++) {
                s += (double)w1[h * 784 + p] * (images[i][p] / 255.0);
            }
            hid[h] = s > 0 ? s : 0;
        }
        for (unsigned o = 0; o < 10; o++) {
            double s = b2[o];
            for (unsigned h = 0; h < HIDDEN; h++) {
                s += (double)w2[o * HIDDEN + h] * hid[h];
            }
            if (s > best) {
                best = s;
                arg = o;
            }
        }
        correct += arg == labels[i];
    }
    return (double)correct / COUNT;
}

static int setup(void **state)
{
    (void)state;
    if (!mkdtemp(tmpdir)) {
        return -1;
    }
    snprintf(datadir, sizeof datadir, "%s/data", tmpdir);
    snprintf(weights, sizeof weights, "%s/w.safetensors", tmpdir);
    return mkdir(datadir, 0777);
}

static int teardown(void **state)
{
    (void)state;
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    return system(cmd);
}

static art_table *load(const char *dir, const char *name)
{
    char path[800];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    art_table *t = NULL;
    struct art_diag d = {0};
    if (art_table_load_csv(path, &t, &d) != ART_OK) {
        fail_msg("%s:%d: %s", path, d.line, d.message);
    }
    return t;
}

static long col(const art_table *t, const char *name)
{
    long c = art_table_find_column(t, name);
    if (c < 0) {
        fail_msg("no column %s", name);
    }
    return c;
}

static double real(const art_table *t, size_t r, const char *name)
{
    double v;
    assert_int_equal(art_table_get_real(t, r, (size_t)col(t, name), &v),
                     ART_OK);
    return v;
}

static const char *text(const art_table *t, size_t r, const char *name)
{
    const char *v;
    assert_int_equal(art_table_get_text(t, r, (size_t)col(t, name), &v),
                     ART_OK);
    return v;
}

static bool flag(const art_table *t, size_t r, const char *name)
{
    bool v;
    assert_int_equal(art_table_get_bool(t, r, (size_t)col(t, name), &v),
                     ART_OK);
    return v;
}

/* The original's precision_tradeoff_table(), recomputed from the rows:
 * groupby(precision) means in row order, accepted ratio, stable sort by
 * latency_ms_mean over the name-sorted groups. */
struct group {
    char name[16];
    double n, acc, lat, mem, en, ok;
    double tol[4]; /* the rows' roundings, summed (accuracy .. energy) */
};

static int by_name(const void *a, const void *b)
{
    return strcmp(((const struct group *)a)->name,
                  ((const struct group *)b)->name);
}

static void check_tradeoffs(const art_table *res, const art_table *trade)
{
    struct group g[8];
    size_t ng = 0;
    for (size_t r = 0; r < art_table_rows(res); r++) {
        const char *p = text(res, r, "precision");
        size_t k = 0;
        while (k < ng && strcmp(g[k].name, p) != 0) {
            k++;
        }
        if (k == ng) {
            memset(&g[ng], 0, sizeof g[ng]);
            snprintf(g[ng].name, sizeof g[ng].name, "%s", p);
            ng++;
        }
        g[k].n += 1;
        g[k].acc += real(res, r, "accuracy");
        g[k].lat += real(res, r, "latency_ms");
        g[k].mem += real(res, r, "memory_mb");
        g[k].en += real(res, r, "energy_proxy_j");
        /* each value was rounded as written */
        static const char *const row_names[] = {"accuracy", "latency_ms",
                                                "memory_mb",
                                                "energy_proxy_j"};
        for (size_t c = 0; c < 4; c++) {
            g[k].tol[c] += run_written_tol(row_names[c],
                                           real(res, r, row_names[c]));
        }
        g[k].ok += flag(res, r, "accepted");
    }
    qsort(g, ng, sizeof g[0], by_name);
    /* insertion sort by mean latency: stable */
    for (size_t i = 1; i < ng; i++) {
        struct group x = g[i];
        size_t j = i;
        while (j > 0 && g[j - 1].lat / g[j - 1].n > x.lat / x.n) {
            g[j] = g[j - 1];
            j--;
        }
        g[j] = x;
    }
    assert_int_equal(art_table_rows(trade), ng);
    assert_int_equal(art_table_cols(trade), 6);
    static const char *const names[] = {"precision", "accuracy_mean",
                                        "latency_ms_mean", "memory_mb_mean",
                                        "energy_proxy_j_mean",
                                        "accepted_ratio"};
    for (size_t c = 0; c < 6; c++) {
        assert_string_equal(art_table_column_name(trade, c), names[c]);
    }
    for (size_t i = 0; i < ng; i++) {
        assert_string_equal(text(trade, i, "precision"), g[i].name);
        const double want[] = {g[i].acc / g[i].n, g[i].lat / g[i].n,
                               g[i].mem / g[i].n, g[i].en / g[i].n,
                               g[i].ok / g[i].n};
        for (size_t c = 0; c < 5; c++) {
            const double got = real(trade, i, names[c + 1]);
            /* the rows' values and the mean are each rounded as written:
             * the mean of the rows' roundings, and its own */
            const double tol = 1e-12 * fmax(1, fabs(want[c])) +
                               run_written_tol(names[c + 1], want[c]) +
                               (c < 4 ? g[i].tol[c] / g[i].n : 0.0);
            if (fabs(got - want[c]) > tol) {
                fail_msg("%s %s: %.17g, recomputed %.17g", g[i].name,
                         names[c + 1], got, want[c]);
            }
        }
    }
}

static void test_sweep(void **state)
{
    (void)state;
    write_data();
    write_weights();
    const double ref = reference_accuracy();
    assert_true(ref > 0.5 && ref < 1.0); /* the data is neither trivial
                                            nor random for this net */
    char out[700];
    snprintf(out, sizeof out, "%s/out", tmpdir);
    /* min accuracy between the two: fp32 passes, anything 2 % worse not */
    char minacc[32];
    snprintf(minacc, sizeof minacc, "%.6f", ref - 0.02);
    char *argv[] = {(char *)sweep_app, "--weights", weights, "--data",
                    datadir, "--precisions", "fp32,bf16,int8", "--batches",
                    "1,7,32", "--repeats", "3", "--device", "rpi4",
                    "--min-accuracy", minacc, "--max-memory-mb", "0.25",
                    "--out", out, "--quiet", NULL};
    struct run_result r;
    run_argv(argv, &r);
    if (r.status != 0) {
        fail_msg("exit %d: %s", r.status, r.err);
    }
    assert_non_null(strstr(r.out, "accuracy_mean"));
    run_free(&r);
    art_table *res = load(out, "sweep_results.csv");
    art_table *trade = load(out, "precision_tradeoffs.csv");
    assert_int_equal(art_table_rows(res), 9);
    double power = NAN, power_rtol = 0.0;
    for (size_t i = 0; i < 9; i++) {
        const char *p = text(res, i, "precision");
        uint64_t b;
        assert_int_equal(art_table_get_uint(res, i,
                                            (size_t)col(res, "batch_size"),
                                            &b),
                         ART_OK);
        const double acc = real(res, i, "accuracy");
        /* the standard error of that accuracy over the 203 samples, as
         * written (both rounded to four decimals: the accuracy's rounding
         * moves the standard error by less than a unit of it) */
        assert_true(fabs(real(res, i, "accuracy_stderr") -
                         sqrt(acc * (1 - acc) / COUNT)) <=
                    run_written_tol("accuracy_stderr", acc) + 1e-4);
        const double lat = real(res, i, "latency_ms");
        const double mem = real(res, i, "memory_mb");
        /* peak plan: parameters + the largest input + output of a layer
         * (dense1: 784 + 64 per sample), at the precision's bytes */
        const unsigned bytes = strcmp(p, "fp32") == 0 ? 4
                               : strcmp(p, "bf16") == 0 ? 2 : 1;
        /* int8's parameters as an int8 file stores them (weights in a
         * byte, int32 biases, a scale and zero point per channel and per
         * tensor): 5 + (50176 + 256 + 320 + 5) + (640 + 40 + 50 + 5) */
        const double params = bytes == 1 ? 51497.0 : 50890.0 * bytes;
        const double want_mem =
            (params + 848.0 * (double)b * bytes) / (1024.0 * 1024.0);
        assert_written(mem, want_mem, "memory_mb");
        if (strcmp(p, "fp32") == 0) {
            /* one sample of 203 either way at most (float vs double on a
             * near tie) */
            assert_true(fabs(acc - ref) <= 1.0 / COUNT + 1e-12);
        } else {
            assert_true(acc > ref - 0.1);
        }
        /* energy = the device's power x the device's latency, the same
         * power in every row (never the device's watts over this
         * machine's time); energy and latency as written: their rounding
         * here and in the first row's */
        const double e = real(res, i, "energy_proxy_j");
        const double dl = real(res, i, "device_latency_ms");
        const double pw = e / dl * 1000;
        const double rtol = run_written_tol("energy_proxy_j", e) / e +
                            run_written_tol("device_latency_ms", dl) / dl;
        if (isnan(power)) {
            power = pw;
            power_rtol = rtol;
        }
        assert_true(pw > 0 &&
                    fabs(pw - power) <= (rtol + power_rtol) * power);
        assert_true(lat > 0 && real(res, i, "device_latency_ms") > 0);
        const bool want_ok = acc >= ref - 0.02 - 1e-9 && mem <= 0.25;
        assert_int_equal(flag(res, i, "accepted"), want_ok);
    }
    check_tradeoffs(res, trade);
    art_table_destroy(trade);

    /* --from-csv on the sweep's own results: the same aggregation */
    char csv[800], out2[700];
    snprintf(csv, sizeof csv, "%s/sweep_results.csv", out);
    snprintf(out2, sizeof out2, "%s/again", tmpdir);
    char *again[] = {(char *)sweep_app, "--from-csv", csv, "--out", out2,
                     NULL};
    run_argv(again, &r);
    assert_int_equal(r.status, 0);
    run_free(&r);
    trade = load(out2, "precision_tradeoffs.csv");
    check_tradeoffs(res, trade);
    struct stat st;
    snprintf(csv, sizeof csv, "%s/precision_tradeoffs.png", out2);
    assert_int_equal(stat(csv, &st), 0);
    art_table_destroy(trade);
    art_table_destroy(res);
}

static void write_file(const char *path, const char *text_)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text_, f);
    fclose(f);
}

static void test_from_csv(void **state)
{
    (void)state;
    char path[700], out[700];
    snprintf(path, sizeof path, "%s/pandas.csv", tmpdir);
    snprintf(out, sizeof out, "%s/pandas", tmpdir);
    /* pandas writes True/False; hand-computed: fp16 (0.9+0.7)/2 = 0.8,
     * latency 1.5, ratio 0.5; fp32 0.95, latency 3, ratio 1 */
    write_file(path,
               "precision,batch_size,accuracy,latency_ms,memory_mb,"
               "energy_proxy_j,accepted\n"
               "fp32,1,0.95,3,2,0.015,True\n"
               "fp16,1,0.9,1,1,0.005,True\n"
               "fp16,8,0.7,2,1.5,0.01,False\n");
    char *argv[] = {(char *)sweep_app, "--from-csv", path, "--out", out,
                    "--format", "csv", NULL};
    struct run_result r;
    run_argv(argv, &r);
    assert_int_equal(r.status, 0);
    assert_string_equal(r.out,
                        "precision,accuracy_mean,latency_ms_mean,"
                        "memory_mb_mean,energy_proxy_j_mean,accepted_ratio\n"
                        "fp16,0.8,1.5,1.25,0.0075,0.5\n"
                        "fp32,0.95,3,2,0.015,1\n");
    run_free(&r);

    /* a bad cell: named by line (header = 1) and column */
    write_file(path,
               "precision,accuracy,latency_ms,memory_mb,energy_proxy_j,"
               "accepted\n"
               "fp32,0.95,3,2,0.015,true\n"
               "fp16,0.9,fast,1,0.005,true\n");
    const char *why = run_rejected(argv, "pandas.csv:3: column 'latency_ms'");
    if (why) {
        fail_msg("%s", why);
    }
    write_file(path,
               "precision,accuracy,latency_ms,memory_mb,energy_proxy_j,"
               "accepted\n"
               "fp32,0.95,3,2,0.015,yes\n");
    why = run_rejected(argv, ":2: column 'accepted'");
    if (why) {
        fail_msg("%s", why);
    }
    write_file(path, "precision,accuracy,latency_ms,memory_mb,accepted\n"
                     "fp32,0.95,3,2,true\n");
    why = run_rejected(argv, "no column 'energy_proxy_j'");
    if (why) {
        fail_msg("%s", why);
    }
    /* nothing was written by the refused runs */
    assert_int_equal(run_count_entries(out), 3);
}

static void test_bad_options(void **state)
{
    (void)state;
    char *a1[] = {(char *)sweep_app, NULL};
    char *a2[] = {(char *)sweep_app, "--weights", weights, "--precisions",
                  "fp32,fp64", NULL};
    char *a3[] = {(char *)sweep_app, "--weights", weights, "--batches",
                  "1,0", NULL};
    char *a4[] = {(char *)sweep_app, "--weights", weights,
                  "--min-accuracy", "1.5", NULL};
    char *a5[] = {(char *)sweep_app, "--weights", weights, "--data",
                  "/nonexistent-edgefit", NULL};
    const struct {
        char **argv;
        const char *needle;
    } cases[] = {
        {a1, "--weights"},
        {a2, "fp64"},
        {a3, "--batches"},
        {a4, "--min-accuracy"},
        {a5, "nonexistent-edgefit"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *why = run_rejected(cases[i].argv, cases[i].needle);
        if (why) {
            fail_msg("case %zu: %s", i, why);
        }
    }
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: test-sweep PATH-TO-edgefit-sweep\n");
        return 2;
    }
    sweep_app = argv[1];
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sweep),
        cmocka_unit_test(test_from_csv),
        cmocka_unit_test(test_bad_options),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
