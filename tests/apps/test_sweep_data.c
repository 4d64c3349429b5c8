/* edgefit-sweep and edgefit-train on the user's own data, as a user runs
 * them:
 *   - --data with NumPy files (tests/data/zoo/lenet5/data): the accuracy is
 *     12/16 by construction (PyTorch's own top-1 as labels, four moved on
 *     purpose) at every precision, accuracy_stderr sqrt(p(1-p)/n) by hand;
 *   - --test-data: fp32 agrees with PyTorch's outputs (float64, rounded
 *     once; read here from the .npy bytes) to rounding, int8 less well,
 *     top-1 agreement for the classifier and none for an autoencoder;
 *   - a model that does not fit the data is refused at once, exit 2,
 *     nothing on stdout and nothing written, the message naming both
 *     shapes: the audit's mlp:784000-10, mlp:1000-10 and ds-cnn on 28x28
 *     images, and ONNX models on data of another shape.
 * usage: test-sweep-data SWEEP TRAIN ZOO_DIR MODELS_DIR */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "run.h"

static const char *sweep_app, *train_app, *zoo_dir, *models_dir;
static char tmpdir[] = "/tmp/edgefit-sweep-data-XXXXXX";
static char idxdir[700], outdir[700];
static char lenet[700], lenet_data[700], autoenc[700];

/* The float32 payload of a .npy file numpy.save wrote (version 1.0). */
static float *npy_floats(const char *path, size_t n)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    unsigned char head[10];
    assert_int_equal(fread(head, 1, 10, f), 10);
    assert_memory_equal(head, "\x93NUMPY\x01\x00", 8);
    assert_int_equal(fseek(f, 10 + head[8] + 256L * head[9], SEEK_SET), 0);
    float *v = malloc(n * sizeof *v);
    assert_non_null(v);
    assert_int_equal(fread(v, sizeof *v, n, f), n);
    fclose(f);
    return v;
}

/* Run the sweep with --format json and return its sweep_results rows. */
static json_t *sweep_json(char *const argv[])
{
    struct run_result r;
    assert_int_equal(run_argv(argv, &r), 0);
    if (r.status != 0) {
        fail_msg("status %d: %s", r.status, r.err);
    }
    json_error_t e;
    json_t *j = json_loads(r.out, 0, &e);
    if (!j) {
        fail_msg("not JSON: %s", e.text);
    }
    run_free(&r);
    json_t *rows = json_object_get(j, "sweep_results");
    assert_true(json_is_array(rows));
    json_incref(rows);
    json_decref(j);
    return rows;
}

static double num(json_t *row, const char *key)
{
    json_t *v = json_object_get(row, key);
    if (!json_is_number(v)) {
        fail_msg("%s is not a number", key);
    }
    return json_number_value(v);
}

static bool is_null(json_t *row, const char *key)
{
    return json_is_null(json_object_get(row, key));
}

static void test_labelled_npy(void **state)
{
    (void)state;
    char *argv[] = {(char *)sweep_app, "--model", lenet, "--data",
                    lenet_data, "--batches", "1,5", "--repeats", "1",
                    "--format", "json", "--quiet", NULL};
    json_t *rows = sweep_json(argv);
    assert_int_equal(json_array_size(rows), 8); /* 4 precisions x 2 */
    const double p = 12.0 / 16.0, se = sqrt(p * (1 - p) / 16.0);
    size_t i;
    json_t *row;
    json_array_foreach(rows, i, row) {
        assert_int_equal((int)num(row, "test_samples"), 16);
        /* the four moved labels are wrong at every precision: the
         * margins of the others are at least 1e-3 */
        assert_true(num(row, "accuracy") == p);
        /* as written: rounded to what it means */
        assert_written(num(row, "accuracy_stderr"), se, "accuracy_stderr");
        /* labelled data: no agreement columns */
        assert_null(json_object_get(row, "rmse"));
    }
    json_decref(rows);

    /* the terminal says which differences are noise */
    char *tv[] = {(char *)sweep_app, "--model", lenet, "--data", lenet_data,
                  "--batches", "1", "--precisions", "fp32", "--repeats",
                  "1", "--quiet", NULL};
    struct run_result r;
    assert_int_equal(run_argv(tv, &r), 0);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "Accuracy differences below 0.1083 "));
    assert_non_null(strstr(r.out, "over 16 samples) are noise"));
    run_free(&r);
}

static void test_reference_agreement(void **state)
{
    (void)state;
    char f[800];
    snprintf(f, sizeof f, "%s/test_data_set_0/output_0.npy", lenet_data);
    float *ref = npy_floats(f, 16 * 10);
    double max_ref = 0;
    for (int k = 0; k < 160; k++) {
        max_ref = fabs(ref[k]) > max_ref ? fabs(ref[k]) : max_ref;
    }
    free(ref);
    char *argv[] = {(char *)sweep_app, "--model", lenet, "--test-data",
                    lenet_data, "--batches", "1,16", "--repeats", "1",
                    "--format", "json", "--quiet", NULL};
    json_t *rows = sweep_json(argv);
    assert_int_equal(json_array_size(rows), 8);
    double fp32_max = 0, int8_max = 0;
    size_t i;
    json_t *row;
    json_array_foreach(rows, i, row) {
        const char *prec =
            json_string_value(json_object_get(row, "precision"));
        const double e = num(row, "max_abs_error"), rmse = num(row, "rmse");
        assert_true(is_null(row, "accuracy"));
        assert_true(rmse <= e);
        assert_true(rmse > 0); /* no run of float32 is PyTorch's float64 */
        if (strcmp(prec, "fp32") == 0) {
            /* float32 rounding of a LeNet-5: a few ulps of the outputs */
            assert_true(e <= 1e-6 * max_ref);
            assert_true(num(row, "top1_agreement") == 1.0);
            fp32_max = e > fp32_max ? e : fp32_max;
        } else if (strcmp(prec, "int8") == 0) {
            /* quantisation costs more than rounding, well within the
             * 10% that edgefit-validate allows int8 */
            assert_true(e <= 0.1 * max_ref);
            int8_max = e > int8_max ? e : int8_max;
        }
    }
    assert_true(int8_max > 100 * fp32_max);
    json_decref(rows);

    /* an autoencoder has no classes: no top-1 agreement */
    char *ae[] = {(char *)sweep_app, "--model", autoenc, "--test-data",
                  autoenc, "--batches", "2", "--precisions", "fp32,int8",
                  "--repeats", "1", "--format", "json", "--quiet", NULL};
    /* autoenc names the model file; its folder holds test_data_set_0 */
    char folder[700];
    snprintf(folder, sizeof folder, "%s/conv-autoencoder", zoo_dir);
    ae[4] = folder;
    rows = sweep_json(ae);
    assert_int_equal(json_array_size(rows), 2);
    json_array_foreach(rows, i, row) {
        assert_true(is_null(row, "top1_agreement"));
        assert_true(num(row, "max_abs_error") >= 0);
    }
    json_decref(rows);
}

/* Static int8 fixes its scales before the run: its outputs, so its error
 * against the reference and its accuracy, are the same bits at batch 1, 8
 * and 32 (each batch's last one padded with zero samples that, under
 * int8-dynamic, would move every scale). int8-dynamic, the per-batch
 * scheme that "int8" named before, changes with the batch: the test can
 * tell the two apart. The calibration is named: the test set's own
 * inputs, --test-data having no training split. */
static void test_int8_batch_invariant(void **state)
{
    (void)state;
    char *argv[] = {(char *)sweep_app, "--model", lenet, "--test-data",
                    lenet_data, "--batches", "1,8,32", "--precisions",
                    "int8,int8-dynamic", "--repeats", "1", "--format",
                    "json", "--quiet", NULL};
    json_t *rows = sweep_json(argv);
    assert_int_equal(json_array_size(rows), 6);
    double e[6], rmse[6];
    for (size_t i = 0; i < 6; i++) {
        json_t *row = json_array_get(rows, i);
        const char *prec =
            json_string_value(json_object_get(row, "precision"));
        assert_string_equal(prec, i < 3 ? "int8" : "int8-dynamic");
        e[i] = num(row, "max_abs_error");
        rmse[i] = num(row, "rmse");
        const char *cal =
            json_string_value(json_object_get(row, "int8_calibration"));
        assert_non_null(cal);
        if (i < 3) {
            assert_non_null(strstr(cal, "min-max ranges of all 16 test "
                                        "samples"));
        }
    }
    for (size_t i = 1; i < 3; i++) {
        assert_true(e[i] == e[0]);
        assert_true(rmse[i] == rmse[0]);
    }
    assert_true(rmse[3] != rmse[4] || rmse[4] != rmse[5]);
    json_decref(rows);

    /* labelled data: the int8 accuracy at 1, 8 and 32, calibrated on the
     * training split (the first 5 of its 16 samples), said so */
    char *lv[] = {(char *)sweep_app, "--model", lenet, "--data", lenet_data,
                  "--batches", "1,8,32", "--precisions", "int8",
                  "--calibration-samples", "5", "--repeats", "1",
                  "--format", "json", "--quiet", NULL};
    rows = sweep_json(lv);
    assert_int_equal(json_array_size(rows), 3);
    const double a0 = num(json_array_get(rows, 0), "accuracy");
    for (size_t i = 0; i < 3; i++) {
        json_t *row = json_array_get(rows, i);
        assert_true(num(row, "accuracy") == a0);
        assert_non_null(strstr(
            json_string_value(json_object_get(row, "int8_calibration")),
            "min-max ranges of the first 5 training samples, read from "));
    }
    json_decref(rows);
}

/* Models of other kinds on ONNX test data: a preset given PyTorch's
 * weights (resnet8, its exported model's test set), and a model without
 * parameters from ONNX's own test data (no --weights needed). */
static void test_other_models(void **state)
{
    (void)state;
    char w[800], set[800];
    snprintf(w, sizeof w, "%s/resnet8/resnet8.safetensors", models_dir);
    snprintf(set, sizeof set, "%s/resnet8", models_dir);
    char *a1[] = {(char *)sweep_app, "--model", "resnet8", "--weights", w,
                  "--test-data", set, "--batches", "1", "--precisions",
                  "fp32", "--repeats", "1", "--format", "json", "--quiet",
                  NULL};
    json_t *rows = sweep_json(a1);
    json_t *row = json_array_get(rows, 0);
    assert_true(num(row, "max_abs_error") < 1e-5);
    assert_true(num(row, "top1_agreement") == 1.0);
    json_decref(rows);
    static const char *const softmax =
        "/usr/share/libonnx-testdata/data/pytorch-converted/test_Softmax";
    if (access(softmax, R_OK) != 0) {
        return;
    }
    char m[800];
    snprintf(m, sizeof m, "%s/model.onnx", softmax);
    char *a2[] = {(char *)sweep_app, "--model", m, "--test-data",
                  (char *)softmax, "--batches", "1", "--precisions",
                  "fp32", "--repeats", "1", "--format", "json", "--quiet",
                  NULL};
    rows = sweep_json(a2);
    assert_true(num(json_array_get(rows, 0), "max_abs_error") < 1e-6);
    json_decref(rows);
}

/* Refused with exit 2 at once, nothing on stdout, the needles on stderr,
 * and --out never created. */
static void refused(char *const argv[], const char *a, const char *b)
{
    const char *bad = run_rejected(argv, a);
    if (bad) {
        fail_msg("%s: %s", argv[2], bad);
    }
    bad = run_rejected(argv, b);
    if (bad) {
        fail_msg("%s: %s", argv[2], bad);
    }
    assert_int_equal(run_count_entries(outdir), -1);
}

static void test_sweep_refusals(void **state)
{
    (void)state;
    char ds[700], rn[700], rn_dir[700];
    snprintf(ds, sizeof ds, "%s/ds-cnn/model.onnx", models_dir);
    snprintf(rn, sizeof rn, "%s/resnet8/model.onnx", models_dir);
    snprintf(rn_dir, sizeof rn_dir, "%s/resnet8", models_dir);
    char *s = (char *)sweep_app;
    char *a1[] = {s, "--model", ds, "--data", idxdir, "--out", outdir,
                  NULL};
    refused(a1, "the model ds-cnn reads 1x49x10 per sample",
            "the data has 1x28x28 per sample");
    char *a2[] = {s, "--model", rn, "--data", idxdir, "--out", outdir, NULL};
    refused(a2, "reads 3x32x32", "the data has 1x28x28");
    char *a3[] = {s, "--model", lenet, "--test-data", rn_dir, "--out",
                  outdir, NULL};
    refused(a3, "the model lenet5 reads 1x32x32",
            "the data has 3x32x32");
    char *a4[] = {s, "--model", lenet, "--data", idxdir, "--out", outdir,
                  NULL};
    refused(a4, "reads 1x32x32", "1x28x28");
    char *a5[] = {s, "--model", lenet, "--data", lenet_data, "--test-data",
                  lenet_data, "--out", outdir, NULL};
    refused(a5, "--data and --test-data", "give one");
    char *a6[] = {s, "--model", lenet, "--test-data", lenet_data,
                  "--min-accuracy", "0.5", "--out", outdir, NULL};
    refused(a6, "--min-accuracy needs labels", "--test-data");
}

static void test_train_refusals(void **state)
{
    (void)state;
    char *t = (char *)train_app;
    /* the audit's three: a segfault, a heap over-read and 7 minutes of
     * training on misaligned rows in edgefit-report before */
    char *a1[] = {t, "--model", "mlp:784000-10", "--data", idxdir,
                  "--epochs", "1", "--out", outdir, NULL};
    refused(a1, "reads 784000 values per sample", "the data has 1x28x28");
    char *a2[] = {t, "--model", "mlp:1000-10", "--data", idxdir, "--epochs",
                  "1", "--out", outdir, NULL};
    refused(a2, "reads 1000 values per sample", "the data has 1x28x28");
    char *a3[] = {t, "--model", "ds-cnn", "--data", idxdir, "--epochs", "1",
                  "--out", outdir, NULL};
    refused(a3, "the model ds-cnn reads 1x49x10", "the data has 1x28x28");
}

/* edgefit-train reads the NumPy layout too: 16 training and 16 test
 * samples of 1x32x32. */
static void test_train_npy(void **state)
{
    (void)state;
    char model[800];
    snprintf(model, sizeof model, "%s/m.txt", tmpdir);
    FILE *f = fopen(model, "w");
    assert_non_null(f);
    fputs("input 1x32x32\nflatten\ndense 10 act=softmax\n", f);
    fclose(f);
    char *argv[] = {(char *)train_app, "--model", model, "--data",
                    lenet_data, "--epochs", "2", "--batch", "4", "--format",
                    "json", NULL};
    struct run_result r;
    assert_int_equal(run_argv(argv, &r), 0);
    if (r.status != 0) {
        fail_msg("status %d: %s", r.status, r.err);
    }
    json_error_t e;
    json_t *j = json_loads(r.out, 0, &e);
    assert_non_null(j);
    json_t *c = json_object_get(j, "config");
    assert_int_equal(json_integer_value(json_object_get(c, "train_samples")),
                     16);
    assert_int_equal(json_integer_value(json_object_get(c, "test_samples")),
                     16);
    json_decref(j);
    run_free(&r);
    unlink(model);
}

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: test-sweep-data SWEEP TRAIN ZOO MODELS\n");
        return 2;
    }
    sweep_app = argv[1];
    train_app = argv[2];
    zoo_dir = argv[3];
    models_dir = argv[4];
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    snprintf(idxdir, sizeof idxdir, "%s/idx", tmpdir);
    snprintf(outdir, sizeof outdir, "%s/out", tmpdir);
    snprintf(lenet, sizeof lenet, "%s/lenet5/model.onnx", zoo_dir);
    snprintf(lenet_data, sizeof lenet_data, "%s/lenet5/data", zoo_dir);
    snprintf(autoenc, sizeof autoenc, "%s/conv-autoencoder/model.onnx",
             zoo_dir);
    mkdir(idxdir, 0700);
    /* 28x28 images of ten classes, both splits */
    if (run_write_bands(idxdir, "train", 40, 3) != 0 ||
        run_write_bands(idxdir, "t10k", 20, 5) != 0) {
        fprintf(stderr, "cannot write the IDX files\n");
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_labelled_npy),
        cmocka_unit_test(test_reference_agreement),
        cmocka_unit_test(test_int8_batch_invariant),
        cmocka_unit_test(test_other_models),
        cmocka_unit_test(test_sweep_refusals),
        cmocka_unit_test(test_train_refusals),
        cmocka_unit_test(test_train_npy),
    };
    const int rc = cmocka_run_group_tests(tests, NULL, NULL);
    run_rmdir(idxdir);
    run_rmdir(outdir);
    rmdir(tmpdir);
    return rc;
}
