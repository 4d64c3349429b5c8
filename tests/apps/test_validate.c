/* edgefit-validate end to end:
 *   - a dense layer with weights and references written here, whose
 *     outputs are computed by hand: an exact match passes with every
 *     error 0; one reference value moved by 1.75 gives max_abs_error
 *     1.75, relative_error 1.75 / 12, the rmse and cosine computed here
 *     and top-1 agreement 1/2, fails, and --strict exits 3;
 *   - a small CNN (tests/apps/data/validate, references computed by NumPy
 *     in float64 by scripts/make-validate-fixtures.py) found through its
 *     test_data_set_* folders: fp32 within float rounding, every
 *     precision within its default tolerance, a --batch that splits the
 *     samples (a padded last chunk) giving the same numbers;
 *   - a model of two inputs (a concat) fed by position from .npy files:
 *     exact, and wrong when the files are swapped;
 *   - ONNX's own cases (when Debian's libonnx-testdata is installed): a
 *     convolution whose weights are a graph input, at every precision; a
 *     concat whose input files are swapped still fed by their names; the
 *     batch the file fixes; an unsupported node named; a truncated
 *     TensorProto refused;
 *   - --out's validation.csv and validation.json;
 *   - bad input refused with exit 2, naming the file and the reason.
 * argv[1]: the program; argv[2]: the fixture folder. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "edgefit/artifacts.h"
#include "run.h"

static const char *app, *fixtures;
static char tmpdir[] = "/tmp/edgefit-validate-XXXXXX";
static char dense_model[600], dense_weights[600], dense_set[600];
static char cnn_model[600], cnn_weights[600];

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
}

static void save_npy(const char *dir, const char *name, const float *v,
                     size_t ndim, const uint64_t *shape)
{
    char path[800];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    struct art_tensor t = {name, ART_DTYPE_F32, ndim, {0}, v};
    memcpy(t.shape, shape, ndim * sizeof *shape);
    assert_int_equal(art_npy_save(path, &t, NULL), ART_OK);
}

/* y = W x + b with W = [[1, 2, 3], [4, 5, 6]], b = [0.5, -1]; inputs
 * [1, 0, -1] and [2, 1, 0]: y = [-1.5, -3] and [4.5, 12]. */
static const float dense_x[6] = {1, 0, -1, 2, 1, 0};
static const float dense_y[4] = {-1.5f, -3.0f, 4.5f, 12.0f};

static void write_dense(void)
{
    snprintf(dense_model, sizeof dense_model, "%s/dense.txt", tmpdir);
    write_text(dense_model, "name dense\ninput 3\ndense 2\n");
    static const float w[6] = {1, 2, 3, 4, 5, 6}, b[2] = {0.5f, -1.0f};
    const struct art_tensor t[2] = {
        {"dense1.weight", ART_DTYPE_F32, 2, {2, 3}, w},
        {"dense1.bias", ART_DTYPE_F32, 1, {2}, b},
    };
    snprintf(dense_weights, sizeof dense_weights, "%s/dense.safetensors",
             tmpdir);
    assert_int_equal(art_safetensors_save(dense_weights, t, 2, NULL, NULL, 0,
                                          NULL),
                     ART_OK);
    snprintf(dense_set, sizeof dense_set, "%s/dense-set", tmpdir);
    assert_int_equal(mkdir(dense_set, 0700), 0);
    save_npy(dense_set, "input_0.npy", dense_x, 2, (uint64_t[]){2, 3});
    save_npy(dense_set, "output_0.npy", dense_y, 2, (uint64_t[]){2, 2});
}

/* Run the app with args (NULL-terminated) and --format csv; the table. */
static art_table *run_csv(char **args, int want_status)
{
    char *argv[40] = {(char *)app};
    int n = 1;
    for (int i = 0; args[i]; i++) {
        argv[n++] = args[i];
    }
    argv[n++] = "--format";
    argv[n++] = "csv";
    argv[n] = NULL;
    struct run_result r;
    run_argv(argv, &r);
    if (r.status != want_status) {
        fail_msg("status %d (want %d): %s", r.status, want_status, r.err);
    }
    char path[700];
    snprintf(path, sizeof path, "%s/stdout.csv", tmpdir);
    write_text(path, r.out);
    run_free(&r);
    art_table *t = NULL;
    assert_int_equal(art_table_load_csv(path, &t, NULL), ART_OK);
    unlink(path);
    return t;
}

static double real(const art_table *t, size_t row, const char *col)
{
    const long c = art_table_find_column(t, col);
    assert_true(c >= 0);
    double v = NAN;
    if (art_table_is_set(t, row, (size_t)c)) {
        /* whole numbers read back as integers */
        const enum art_type type = art_table_column_type(t, (size_t)c);
        if (type == ART_REAL) {
            assert_int_equal(art_table_get_real(t, row, (size_t)c, &v),
                             ART_OK);
        } else if (type == ART_INT) {
            int64_t i;
            assert_int_equal(art_table_get_int(t, row, (size_t)c, &i),
                             ART_OK);
            v = (double)i;
        } else {
            uint64_t u;
            assert_int_equal(art_table_get_uint(t, row, (size_t)c, &u),
                             ART_OK);
            v = (double)u;
        }
    }
    return v;
}

static const char *text(const art_table *t, size_t row, const char *col)
{
    const long c = art_table_find_column(t, col);
    assert_true(c >= 0);
    const char *s = NULL;
    assert_int_equal(art_table_get_text(t, row, (size_t)c, &s), ART_OK);
    return s;
}

static void test_dense_by_hand(void **state)
{
    (void)state;
    char *args[] = {"--model", dense_model, "--weights", dense_weights,
                    "--test-data", dense_set, NULL};
    art_table *t = run_csv(args, 0);
    assert_int_equal(art_table_rows(t), 1);
    assert_string_equal(text(t, 0, "test_set"), "dense-set");
    assert_string_equal(text(t, 0, "precision"), "fp32");
    assert_string_equal(text(t, 0, "output"), "output_0");
    assert_true(real(t, 0, "samples") == 2);
    assert_true(real(t, 0, "output_elements") == 4);
    assert_true(real(t, 0, "max_abs_error") == 0.0);
    assert_true(real(t, 0, "max_abs_reference") == 12.0);
    assert_true(real(t, 0, "rmse") == 0.0);
    assert_true(fabs(real(t, 0, "cosine_similarity") - 1.0) < 1e-15);
    assert_true(real(t, 0, "top1_agreement") == 1.0);
    assert_true(real(t, 0, "tolerance") == 1e-4);
    assert_string_equal(text(t, 0, "verdict"), "pass");
    art_table_destroy(t);

    /* One reference value moved from -3 to -1.25: off by 1.75, and
     * sample 0's top class in the reference becomes class 1. */
    const float off[4] = {-1.5f, -1.25f, 4.5f, 12.0f};
    save_npy(dense_set, "output_0.npy", off, 2, (uint64_t[]){2, 2});
    t = run_csv(args, 0);
    assert_true(real(t, 0, "max_abs_error") == 1.75);
    double dot = 0, gg = 0, rr = 0, sq = 0;
    for (int i = 0; i < 4; i++) {
        dot += (double)dense_y[i] * off[i];
        gg += (double)dense_y[i] * dense_y[i];
        rr += (double)off[i] * off[i];
        sq += ((double)dense_y[i] - off[i]) * ((double)dense_y[i] - off[i]);
    }
    /* reals as written: six significant digits */
    assert_written(real(t, 0, "rmse"), sqrt(sq / 4), "rmse");
    assert_written(real(t, 0, "relative_error"), 1.75 / 12.0,
                   "relative_error");
    assert_written(real(t, 0, "cosine_similarity"), dot / sqrt(gg * rr),
                   "cosine_similarity");
    assert_true(real(t, 0, "top1_agreement") == 0.5);
    assert_string_equal(text(t, 0, "verdict"), "fail");
    art_table_destroy(t);

    /* The same with --strict: the table still printed, then exit 3. */
    char *strict[] = {"--model", dense_model, "--weights", dense_weights,
                      "--test-data", dense_set, "--strict", NULL};
    t = run_csv(strict, 3);
    assert_string_equal(text(t, 0, "verdict"), "fail");
    art_table_destroy(t);

    /* A tolerance that admits it: 1.75 / 12 = 0.1458... */
    char *loose[] = {"--model", dense_model, "--weights", dense_weights,
                     "--test-data", dense_set, "--strict", "--tolerance",
                     "fp32=0.15", NULL};
    t = run_csv(loose, 0);
    assert_string_equal(text(t, 0, "verdict"), "pass");
    assert_true(real(t, 0, "tolerance") == 0.15);
    art_table_destroy(t);
    save_npy(dense_set, "output_0.npy", dense_y, 2, (uint64_t[]){2, 2});
}

static void test_cnn_against_numpy(void **state)
{
    (void)state;
    char *args[] = {"--model", cnn_model, "--weights", cnn_weights,
                    "--precision", "fp32,fp16,bf16,int8", NULL};
    art_table *t = run_csv(args, 0);
    /* two sets found beside the model, four precisions each, and static
     * int8 against edgefit's own fp32 too */
    assert_int_equal(art_table_rows(t), 10);
    for (size_t i = 0; i < 10; i++) {
        const char *p = text(t, i, "precision");
        const double rel = real(t, i, "relative_error");
        assert_string_equal(text(t, i, "test_set"),
                            i < 5 ? "test_data_set_0" : "test_data_set_1");
        assert_true(real(t, i, "samples") == (i < 5 ? 5 : 3));
        assert_string_equal(text(t, i, "verdict"), "pass");
        assert_string_equal(text(t, i, "reference"),
                            i % 5 == 4 ? "fp32" : "test data");
        if (strcmp(p, "fp32") == 0) {
            /* float32 rounding of a handful of sums: far below 1e-4 */
            assert_true(rel < 1e-5);
            assert_true(real(t, i, "top1_agreement") == 1.0);
        } else {
            assert_true(rel > 0.0); /* stored in fewer bits: not exact */
        }
        assert_true(real(t, i, "cosine_similarity") > 0.99);
        if (i % 5 == 4) {
            /* |int8 - fp32| <= |int8 - ref| + |fp32 - ref| element by
             * element, so for the largest too */
            assert_string_equal(p, "int8");
            assert_true(real(t, i, "max_abs_error") <=
                        real(t, i - 1, "max_abs_error") +
                            real(t, i - 4, "max_abs_error") + 1e-7);
            assert_non_null(strstr(text(t, i, "int8_calibration"),
                                   "min-max ranges of all"));
        }
    }
    art_table_destroy(t);
}

/* Five samples two at a time (the last chunk padded): the same numbers as
 * all five at once, to float rounding. */
static void test_batch_chunks(void **state)
{
    (void)state;
    char set[700];
    snprintf(set, sizeof set, "%s/test_data_set_0", fixtures);
    char *all[] = {"--model", cnn_model, "--weights", cnn_weights,
                   "--test-data", set, NULL};
    char *chunks[] = {"--model", cnn_model, "--weights", cnn_weights,
                      "--test-data", set, "--batch", "2", NULL};
    art_table *a = run_csv(all, 0), *b = run_csv(chunks, 0);
    assert_true(real(a, 0, "batch_size") == 5);
    assert_true(real(b, 0, "batch_size") == 2);
    assert_true(real(b, 0, "samples") == 5);
    assert_true(fabs(real(a, 0, "max_abs_error") -
                     real(b, 0, "max_abs_error")) < 1e-7);
    assert_true(fabs(real(a, 0, "rmse") - real(b, 0, "rmse")) < 1e-7);
    art_table_destroy(a);
    art_table_destroy(b);
}

static void expect_refused(char **args, const char *needle)
{
    char *argv[30] = {(char *)app};
    int n = 1;
    for (int i = 0; args[i]; i++) {
        argv[n++] = args[i];
    }
    argv[n] = NULL;
    const char *bad = run_rejected(argv, needle);
    if (bad) {
        fail_msg("%s: %s", needle, bad);
    }
}

/* concat of a = [[1, 2, 3], [4, 5, 6]] and b = -a: [a, -a] per sample. */
static void test_several_inputs(void **state)
{
    (void)state;
    char model[700], set[700];
    snprintf(model, sizeof model, "%s/cat.txt", tmpdir);
    write_text(model, "name cat\ninput 3 name=a\ninput 3 name=b\n"
                      "concat in=a,b\n");
    snprintf(set, sizeof set, "%s/cat-set", tmpdir);
    assert_int_equal(mkdir(set, 0700), 0);
    const float a[6] = {1, 2, 3, 4, 5, 6}, b[6] = {-1, -2, -3, -4, -5, -6};
    const float y[12] = {1, 2, 3, -1, -2, -3, 4, 5, 6, -4, -5, -6};
    save_npy(set, "input_0.npy", a, 2, (uint64_t[]){2, 3});
    save_npy(set, "input_1.npy", b, 2, (uint64_t[]){2, 3});
    save_npy(set, "output_0.npy", y, 2, (uint64_t[]){2, 6});
    /* no parameters: no --weights needed */
    char *args[] = {"--model", model, "--test-data", set, NULL};
    art_table *t = run_csv(args, 0);
    assert_true(real(t, 0, "max_abs_error") == 0.0);
    assert_string_equal(text(t, 0, "verdict"), "pass");
    art_table_destroy(t);
    /* .npy files have no names: input_K feeds model input K, so swapped
     * files give [-a, a]: off by 2 * 6 at most, twice the largest value */
    save_npy(set, "input_0.npy", b, 2, (uint64_t[]){2, 3});
    save_npy(set, "input_1.npy", a, 2, (uint64_t[]){2, 3});
    t = run_csv(args, 0);
    assert_true(real(t, 0, "max_abs_error") == 12.0);
    assert_true(real(t, 0, "relative_error") == 2.0);
    assert_true(fabs(real(t, 0, "cosine_similarity") + 1.0) < 1e-15);
    assert_string_equal(text(t, 0, "verdict"), "fail");
    art_table_destroy(t);
    run_rmdir(set);
}

#define ONNX_NODE "/usr/share/libonnx-testdata/data/node"

static void copy_file(const char *from, const char *to, long keep)
{
    FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
    assert_non_null(in);
    assert_non_null(out);
    int c;
    for (long n = 0; (keep < 0 || n < keep) && (c = fgetc(in)) != EOF;
         n++) {
        fputc(c, out);
    }
    fclose(in);
    assert_int_equal(fclose(out), 0);
}

/* A copy of ONNX case NAME in tmpdir/NAME: model.onnx and
 * test_data_set_0/ (input_0, input_1 swapped when swap). */
static void copy_case(const char *name, bool swap, char *dir, size_t cap)
{
    char from[800], to[800];
    snprintf(dir, cap, "%s/%s", tmpdir, name);
    assert_int_equal(mkdir(dir, 0700), 0);
    snprintf(from, sizeof from, "%s/%s/model.onnx", ONNX_NODE, name);
    snprintf(to, sizeof to, "%s/model.onnx", dir);
    copy_file(from, to, -1);
    snprintf(to, sizeof to, "%s/test_data_set_0", dir);
    assert_int_equal(mkdir(to, 0700), 0);
    static const char *const files[] = {"input_0.pb", "input_1.pb",
                                        "output_0.pb"};
    for (int i = 0; i < 3; i++) {
        snprintf(from, sizeof from, "%s/%s/test_data_set_0/%s", ONNX_NODE,
                 name, files[i]);
        snprintf(to, sizeof to, "%s/test_data_set_0/%s", dir,
                 files[swap && i < 2 ? 1 - i : i]);
        copy_file(from, to, -1);
    }
}

static void test_onnx_cases(void **state)
{
    (void)state;
    struct stat sb;
    if (stat(ONNX_NODE, &sb) != 0) {
        skip(); /* Debian's libonnx-testdata is not installed */
    }
    char *probe[] = {(char *)app, "--model",
                     ONNX_NODE "/test_relu/model.onnx", NULL};
    struct run_result pr;
    run_argv(probe, &pr);
    const bool no_onnx = strstr(pr.err, "reads no ONNX files") != NULL;
    run_free(&pr);
    if (no_onnx) {
        skip(); /* built with -Donnx=disabled */
    }
    /* Conv's weights W are a graph input: given as a constant. */
    char model[800], dir[700], path[900];
    snprintf(model, sizeof model,
             ONNX_NODE "/test_conv_with_strides_padding/model.onnx");
    char *all[] = {"--model", model, "--precision", "fp32,fp16,bf16,int8",
                   NULL};
    art_table *t = run_csv(all, 0);
    assert_int_equal(art_table_rows(t), 5); /* int8 against fp32 too */
    for (size_t i = 0; i < 5; i++) {
        assert_string_equal(text(t, i, "verdict"), "pass");
        assert_string_equal(text(t, i, "output"), "y");
        assert_true(real(t, i, "batch_size") == 1);
    }
    /* small integers: exact in fp32, fp16 and bf16 alike */
    assert_true(real(t, 0, "max_abs_error") == 0.0);
    assert_true(real(t, 3, "max_abs_error") > 0.0); /* int8 */
    art_table_destroy(t);
    char *batch[] = {"--model", model, "--batch", "2", NULL};
    expect_refused(batch, "--batch 2: ");
    expect_refused(batch, "fixes the batch at 1");

    /* concat is not symmetric: swapped files are still fed by the
     * TensorProto names they carry */
    copy_case("test_concat_2d_axis_1", true, dir, sizeof dir);
    snprintf(path, sizeof path, "%s/model.onnx", dir);
    char *swapped[] = {"--model", path, NULL};
    t = run_csv(swapped, 0);
    assert_true(real(t, 0, "max_abs_error") == 0.0);
    assert_string_equal(text(t, 0, "verdict"), "pass");
    art_table_destroy(t);
    /* a reference cut short: refused naming it */
    char pb[900];
    snprintf(pb, sizeof pb, "%s/test_data_set_0/output_0.pb", dir);
    snprintf(path, sizeof path, "%s/output_0.pb", tmpdir);
    copy_file(pb, path, -1);
    copy_file(path, pb, 20);
    unlink(path);
    snprintf(path, sizeof path, "%s/model.onnx", dir);
    expect_refused(swapped, pb);
    char sub[800];
    snprintf(sub, sizeof sub, "%s/test_data_set_0", dir);
    run_rmdir(sub);
    run_rmdir(dir);

    /* an operator edgefit does not run: the node and its type named */
    snprintf(model, sizeof model, ONNX_NODE "/test_abs/model.onnx");
    char *abs_[] = {"--model", model, NULL};
    expect_refused(abs_, "model.onnx:1: node '(unnamed)' (Abs): "
                         "unsupported operator");
}

static void test_out_files(void **state)
{
    (void)state;
    char out[700];
    snprintf(out, sizeof out, "%s/out", tmpdir);
    char *argv[] = {(char *)app, "--model", cnn_model, "--weights",
                    cnn_weights, "--out", out, "--quiet", NULL};
    struct run_result r;
    run_argv(argv, &r);
    assert_int_equal(r.status, 0);
    /* the terminal: the table and the summary line */
    assert_non_null(strstr(r.out, "max_abs_error"));
    assert_non_null(strstr(r.out, "2 comparisons over 2 test sets, 2 "
                                  "passed, 0 failed"));
    run_free(&r);
    assert_int_equal(run_count_entries(out), 2);
    char path[800];
    snprintf(path, sizeof path, "%s/validation.csv", out);
    art_table *t = NULL;
    assert_int_equal(art_table_load_csv(path, &t, NULL), ART_OK);
    static const char *const need[] = {
        "test_set", "precision", "output", "max_abs_error", "rmse",
        "cosine_similarity", "top1_agreement", "verdict"};
    for (size_t i = 0; i < sizeof need / sizeof need[0]; i++) {
        assert_true(art_table_find_column(t, need[i]) >= 0);
    }
    assert_int_equal(art_table_rows(t), 2);
    art_table_destroy(t);
    snprintf(path, sizeof path, "%s/validation.json", out);
    json_t *j = json_load_file(path, 0, NULL);
    assert_non_null(j);
    json_t *s = json_object_get(j, "summary");
    assert_string_equal(json_string_value(json_object_get(s, "verdict")),
                        "pass");
    assert_int_equal(json_integer_value(json_object_get(s, "comparisons")),
                     2);
    assert_string_equal(json_string_value(json_object_get(s, "model")),
                        "cnn");
    assert_int_equal(json_array_size(json_object_get(j, "validation")), 2);
    json_decref(j);
    run_rmdir(out);
}

static void test_bad_input(void **state)
{
    (void)state;
    char missing[700], dir[700], path[800];
    snprintf(missing, sizeof missing, "%s/missing.txt", tmpdir);
    char want[900];
    snprintf(want, sizeof want, "--model %s: %s", missing, strerror(ENOENT));
    expect_refused((char *[]){"--model", missing, NULL}, want);
    expect_refused((char *[]){"--test-data", dense_set, NULL},
                   "--model SPEC is required");
    expect_refused((char *[]){"--model", "mlp:3-2", "--weights",
                              dense_weights, NULL},
                   "is a preset: give --test-data DIR");
    expect_refused((char *[]){"--model", dense_model, "--test-data",
                              dense_set, NULL},
                   "has no weights to validate: give --weights FILE");
    expect_refused((char *[]){"--model", dense_model, "--weights",
                              dense_weights, NULL},
                   "no test_data_set_* folder beside it");
    expect_refused((char *[]){"--model", dense_model, "--precision", "fp64",
                              NULL},
                   "--precision: 'fp64' is not one of fp32, fp16, bf16, "
                   "int8");
    expect_refused((char *[]){"--model", dense_model, "--tolerance", "0",
                              NULL},
                   "--tolerance");
    expect_refused((char *[]){"--model", dense_model, "--tolerance",
                              "fp64=1", NULL},
                   "'fp64' is not one of");
    snprintf(dir, sizeof dir, "%s/nowhere", tmpdir);
    snprintf(want, sizeof want, "--test-data %s: %s", dir, strerror(ENOENT));
    expect_refused((char *[]){"--model", dense_model, "--weights",
                              dense_weights, "--test-data", dir, NULL},
                   want);

    /* A set folder with faults, one at a time. */
    snprintf(dir, sizeof dir, "%s/bad-set", tmpdir);
    assert_int_equal(mkdir(dir, 0700), 0);
    char *args[] = {"--model", dense_model, "--weights", dense_weights,
                    "--test-data", dir, NULL};
    expect_refused(args, "no input_0.pb or input_0.npy");
    save_npy(dir, "input_0.npy", dense_x, 2, (uint64_t[]){2, 3});
    expect_refused(args, "no output_0.pb or output_0.npy");
    /* the wrong number of features */
    save_npy(dir, "output_0.npy", dense_y, 2, (uint64_t[]){1, 4});
    snprintf(want, sizeof want, "%s/output_0.npy: output 'output_0' has "
             "shape 1x4; the model's is N x 2", dir);
    expect_refused(args, want);
    /* samples that disagree */
    save_npy(dir, "output_0.npy", dense_y, 2, (uint64_t[]){1, 2});
    expect_refused(args, "1 samples, but the inputs have 2");
    save_npy(dir, "output_0.npy", dense_y, 2, (uint64_t[]){2, 2});
    /* a gap: input_2 without input_1 */
    save_npy(dir, "input_2.npy", dense_x, 2, (uint64_t[]){2, 3});
    expect_refused(args, "input_1.pb or .npy is missing (input_2 is "
                         "there)");
    snprintf(path, sizeof path, "%s/input_2.npy", dir);
    unlink(path);
    /* both formats for one tensor */
    snprintf(path, sizeof path, "%s/input_0.pb", dir);
    write_text(path, "x");
    expect_refused(args, "both input_0.pb and input_0.npy");
    unlink(path);
    /* a truncated array: the file and the reason */
    snprintf(path, sizeof path, "%s/input_0.npy", dir);
    assert_int_equal(truncate(path, 130), 0);
    snprintf(want, sizeof want, "%s: truncated", path);
    expect_refused(args, want);
    run_rmdir(dir);
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: %s EDGEFIT-VALIDATE FIXTURE_DIR\n", argv[0]);
        return 2;
    }
    app = argv[1];
    fixtures = argv[2];
    snprintf(cnn_model, sizeof cnn_model, "%s/cnn.txt", fixtures);
    snprintf(cnn_weights, sizeof cnn_weights, "%s/cnn.safetensors",
             fixtures);
    if (!mkdtemp(tmpdir)) {
        return 1;
    }
    write_dense();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dense_by_hand),
        cmocka_unit_test(test_cnn_against_numpy),
        cmocka_unit_test(test_batch_chunks),
        cmocka_unit_test(test_several_inputs),
        cmocka_unit_test(test_onnx_cases),
        cmocka_unit_test(test_out_files),
        cmocka_unit_test(test_bad_input),
    };
    const int rc = cmocka_run_group_tests(tests, NULL, NULL);
    run_rmdir(dense_set);
    run_rmdir(tmpdir);
    return rc;
}
