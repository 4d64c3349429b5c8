/* edgefit-quantize end to end on an IDX set written here (bands a small
 * MLP tells apart) and weights written here: the folder holds exactly
 * model.qdq.onnx, calibration.json, layer_error.csv and layer_error.json;
 * the calibration file reads back for the model; the ONNX file re-imports
 * with every tensor's quantisation equal to the calibration file's; the
 * error table is sorted worst first and its rows are the model's tensors;
 * a calibration file given back gives the same file again; bad input is
 * refused (exit 2, the option named) before any work and leaves no folder;
 * a disk that fills up leaves nothing half-written. argv: the program,
 * the source tree. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <jansson.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "edgefit/artifacts.h"
#include "edgefit/memest.h"
#include "edgefit/profile.h"
#include "run.h"

static const char *app;
static const char *source_root;
static char tmpdir[] = "/tmp/edgefit-quantize-XXXXXX";
static char datadir[600], weights[600], out[600];

#define MODEL "mlp:784-16-10"

/* Weights of mlp:784-16-10 drawn from an LCG, uniform in +-1/sqrt(fan_in)
 * (PyTorch's initial scale): a model whose tensors int8 does not hold
 * exactly. */
static int write_weights(const char *path)
{
    static float w1[16 * 784], b1[16], w2[10 * 16], b2[10];
    uint64_t s = 7;
    for (size_t i = 0; i < 16 * 784; i++) {
        w1[i] = (float)(((double)run_lcg(&s) / 2147483648.0 * 2 - 1) / 28);
    }
    for (size_t i = 0; i < 16; i++) {
        b1[i] = (float)(((double)run_lcg(&s) / 2147483648.0 * 2 - 1) / 28);
    }
    for (size_t i = 0; i < 10 * 16; i++) {
        w2[i] = (float)(((double)run_lcg(&s) / 2147483648.0 * 2 - 1) / 4);
    }
    for (size_t i = 0; i < 10; i++) {
        b2[i] = (float)(((double)run_lcg(&s) / 2147483648.0 * 2 - 1) / 4);
    }
    const struct art_tensor t[] = {
        {"dense1.weight", ART_DTYPE_F32, 2, {16, 784}, w1},
        {"dense1.bias", ART_DTYPE_F32, 1, {16}, b1},
        {"dense2.weight", ART_DTYPE_F32, 2, {10, 16}, w2},
        {"dense2.bias", ART_DTYPE_F32, 1, {10}, b2},
    };
    return art_safetensors_save(path, t, 4, NULL, NULL, 0, NULL) == ART_OK
               ? 0
               : -1;
}

static int setup(void **state)
{
    (void)state;
    if (!mkdtemp(tmpdir)) {
        return -1;
    }
    snprintf(datadir, sizeof datadir, "%s/data", tmpdir);
    snprintf(weights, sizeof weights, "%s/w.safetensors", tmpdir);
    snprintf(out, sizeof out, "%s/out", tmpdir);
    if (mkdir(datadir, 0777) != 0) {
        return -1;
    }
    return run_write_bands(datadir, "train", 300, 3) ||
           run_write_bands(datadir, "t10k", 100, 5) ||
           write_weights(weights);
}

static int teardown(void **state)
{
    (void)state;
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    return system(cmd);
}

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        return NULL;
    }
    fseek(f, 0, SEEK_END);
    const long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    if (b && fread(b, 1, (size_t)n, f) != (size_t)n) {
        free(b);
        b = NULL;
    }
    if (b) {
        b[n] = '\0';
    }
    if (len) {
        *len = (size_t)n;
    }
    fclose(f);
    return b;
}

static void path_in(char *buf, size_t len, const char *dir, const char *n)
{
    snprintf(buf, len, "%s/%s", dir, n);
}

/* The model as the app loaded it: the preset with the weights. */
static memest_model *the_model(void)
{
    memest_model *m = NULL;
    assert_int_equal(memest_model_load(MODEL, &m, NULL), MEMEST_OK);
    return m;
}

static void test_end_to_end(void **state)
{
    (void)state;
    char *argv[] = {(char *)app, "--model", MODEL, "--weights", weights,
                    "--calibration-data", datadir, "--calibration-samples",
                    "200", "--error-samples", "150", "--out", out,
                    "--quiet", NULL};
    struct run_result r;
    run_argv(argv, &r);
    if (r.status != 0) {
        fail_msg("status %d: %s", r.status, r.err);
    }
    /* the summary: the samples that calibrated, the method, the worst
     * layers, the agreement and the accuracies (labelled samples) */
    assert_non_null(strstr(r.out, "first 200"));
    assert_non_null(strstr(r.out, "training samples"));
    assert_non_null(strstr(r.out, "min-max"));
    assert_non_null(strstr(r.out, "Top-1 agreement"));
    assert_non_null(strstr(r.out, "accuracy fp32"));
    assert_non_null(strstr(r.out, "sqnr_db"));
    run_free(&r);
    assert_int_equal(run_count_entries(out), 4);

    /* the calibration file, for the model, of 200 samples */
    memest_model *m = the_model();
    char p[700];
    path_in(p, sizeof p, out, "calibration.json");
    struct prof_ranges cal;
    struct prof_diag pd;
    if (prof_ranges_load(p, m, &cal, &pd) != PROF_OK) {
        fail_msg("calibration.json: %s", pd.message);
    }
    assert_int_equal(cal.samples, 200);
    assert_int_equal(cal.method, PROF_RANGE_MINMAX);
    const size_t nt = memest_model_tensor_count(m);
    assert_int_equal(cal.count, nt);

    /* the QDQ file re-imports with the calibration's quantisation */
    path_in(p, sizeof p, out, "model.qdq.onnx");
    memest_model *q = NULL;
    struct memest_diag md;
    if (memest_model_load(p, &q, &md) != MEMEST_OK) {
        fail_msg("model.qdq.onnx: %s", md.message);
    }
    assert_true(memest_model_is_quantized(q));
    assert_int_equal(memest_model_tensor_count(q), nt);
    for (size_t t = 0; t < nt; t++) {
        struct memest_quant mq;
        assert_int_equal(memest_model_tensor_quant(q, t, &mq), MEMEST_OK);
        if (!(mq.scale == cal.tensors[t].scale) ||
            mq.zero_point != cal.tensors[t].zero_point) {
            fail_msg("tensor %zu (%s): scale %.9g zero point %d in the ONNX "
                     "file, %.9g and %d in calibration.json", t,
                     cal.tensors[t].name, (double)mq.scale,
                     (int)mq.zero_point, (double)cal.tensors[t].scale,
                     (int)cal.tensors[t].zero_point);
        }
    }
    memest_model_destroy(q);

    /* the error table: one row per tensor, worst first, units named */
    path_in(p, sizeof p, out, "layer_error.csv");
    art_table *t = NULL;
    assert_int_equal(art_table_load_csv(p, &t, NULL), ART_OK);
    assert_int_equal(art_table_rows(t), nt);
    assert_string_equal(art_table_column_name(t, 0), "layer");
    assert_string_equal(art_table_column_name(t, 2), "sqnr_db");
    double prev = -INFINITY;
    bool names_seen[16] = {false};
    for (size_t i = 0; i < art_table_rows(t); i++) {
        double v;
        assert_int_equal(art_table_get_real(t, i, 2, &v), ART_OK);
        assert_true(v >= prev);
        prev = v;
        char name[64];
        art_table_format_cell(t, i, 0, name, sizeof name);
        for (size_t k = 0; k < nt && k < 16; k++) {
            names_seen[k] = names_seen[k] ||
                            strcmp(name, cal.tensors[k].name) == 0;
        }
    }
    for (size_t k = 0; k < nt && k < 16; k++) {
        assert_true(names_seen[k]);
    }
    art_table_destroy(t);
    path_in(p, sizeof p, out, "layer_error.json");
    json_t *j = json_load_file(p, 0, NULL);
    assert_non_null(j);
    json_t *sum = json_array_get(json_object_get(j, "summary"), 0);
    assert_int_equal(json_integer_value(json_object_get(sum,
                                                        "error_samples")),
                     150);
    const double agree =
        json_number_value(json_object_get(sum, "top1_agreement"));
    assert_true(agree >= 0 && agree <= 1);
    assert_int_equal(json_array_size(json_object_get(j, "layer_error")), nt);
    json_decref(j);

    /* the calibration file given back: the same file, whatever samples
     * the error is measured on */
    char out2[700], p2[800];
    snprintf(out2, sizeof out2, "%s/out2", tmpdir);
    path_in(p, sizeof p, out, "calibration.json");
    char *again[] = {(char *)app, "--model", MODEL, "--weights", weights,
                     "--calibration-file", p, "--data", datadir, "--out",
                     out2, "--format", "json", NULL};
    run_argv(again, &r);
    if (r.status != 0) {
        fail_msg("again: status %d: %s", r.status, r.err);
    }
    j = json_loads(r.out, 0, NULL);
    assert_non_null(j); /* --format json prints the document */
    json_decref(j);
    run_free(&r);
    path_in(p2, sizeof p2, out2, "calibration.json");
    size_t n1, n2;
    char *a = slurp(p, &n1), *b = slurp(p2, &n2);
    assert_non_null(a);
    assert_non_null(b);
    assert_int_equal(n1, n2);
    assert_memory_equal(a, b, n1);
    free(a);
    free(b);
    prof_ranges_finish(&cal);
    memest_model_destroy(m);
}

static void test_refusals(void **state)
{
    (void)state;
    char bad_out[700], missing[700], cal[700], dscnn[700], file_out[700];
    snprintf(bad_out, sizeof bad_out, "%s/refused", tmpdir);
    snprintf(missing, sizeof missing, "%s/no-such-data", tmpdir);
    snprintf(cal, sizeof cal, "%s/calibration.json", out);
    snprintf(dscnn, sizeof dscnn, "%s/tests/data/models/ds-cnn/model.onnx",
             source_root);
    snprintf(file_out, sizeof file_out, "%s/not-a-folder/x", weights);
    char *a1[] = {(char *)app, "--model", MODEL, "--weights", weights,
                  "--calibration-data", missing, "--out", bad_out, NULL};
    /* a model that reads 1x49x10 on 28x28 images */
    char *a2[] = {(char *)app, "--model", dscnn, "--calibration-data",
                  datadir, "--out", bad_out, NULL};
    char *a3[] = {(char *)app, "--model", MODEL, "--weights", weights,
                  "--calibration-data", datadir, "--out", file_out, NULL};
    /* a calibration file of another model */
    char *a4[] = {(char *)app, "--model", dscnn, "--calibration-file", cal,
                  "--data", datadir, "--out", bad_out, NULL};
    char *a5[] = {(char *)app, "--model", MODEL, "--weights", weights,
                  "--calibration-file", cal, "--calibration-data", datadir,
                  "--out", bad_out, NULL};
    char *a6[] = {(char *)app, "--model", MODEL, "--calibration-data",
                  datadir, "--out", bad_out, NULL};
    char *a7[] = {(char *)app, "--model", MODEL, "--weights", weights,
                  "--calibration-data", datadir, NULL};
    char *a8[] = {(char *)app, "--model", MODEL, "--weights", weights,
                  "--out", bad_out, NULL};
    char *a9[] = {(char *)app, "--model", MODEL, "--weights", weights,
                  "--calibration-file", cal, "--out", bad_out, NULL};
    char *a10[] = {(char *)app, "--model", MODEL, "--weights", weights,
                   "--calibration-data", datadir, "--calibration-method",
                   "kl", "--out", bad_out, NULL};
    const struct {
        char **argv;
        const char *needle;
    } cases[] = {
        {a1, "no-such-data"},
        {a2, "1x49x10"},
        {a3, "Not a directory"},
        {a4, "calibration.json"},
        {a5, "--calibration-file"},
        {a6, "--weights FILE is required"},
        {a7, "--out DIR is required"},
        {a8, "--calibration-data"},
        {a9, "--data PATH"},
        {a10, "--calibration-method"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *why = run_rejected(cases[i].argv, cases[i].needle);
        if (why) {
            fail_msg("case %zu: %s", i + 1, why);
        }
        assert_int_equal(run_count_entries(bad_out), -1);
    }
}

/* A disk that fills up: exit 1, no file in the folder (all or nothing);
 * a folder holding an earlier run keeps that run whole. */
static void test_nothing_half_written(void **state)
{
    (void)state;
    char full[700];
    snprintf(full, sizeof full, "%s/full", tmpdir);
    char *argv[] = {(char *)app, "--model", MODEL, "--weights", weights,
                    "--calibration-data", datadir, "--calibration-samples",
                    "50", "--error-samples", "20", "--out", full, "--quiet",
                    NULL};
    struct run_result r;
    run_argv_fsize(argv, 4096, &r);
    assert_int_equal(r.status, 1);
    assert_true(run_count_entries(full) <= 0);
    run_free(&r);
    /* the earlier run's folder: every file still the earlier one */
    char p[700];
    path_in(p, sizeof p, out, "layer_error.csv");
    size_t n0;
    char *before = slurp(p, &n0);
    assert_non_null(before);
    char *over[] = {(char *)app, "--model", MODEL, "--weights", weights,
                    "--calibration-data", datadir, "--calibration-samples",
                    "50", "--error-samples", "20", "--out", out, "--quiet",
                    NULL};
    run_argv_fsize(over, 4096, &r);
    assert_int_equal(r.status, 1);
    run_free(&r);
    size_t n1;
    char *after = slurp(p, &n1);
    assert_non_null(after);
    assert_int_equal(n0, n1);
    assert_memory_equal(before, after, n0);
    assert_int_equal(run_count_entries(out), 4);
    free(before);
    free(after);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: test-quantize APP SOURCE_ROOT\n");
        return 2;
    }
    app = argv[1];
    source_root = argv[2];
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_end_to_end),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_nothing_half_written),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
