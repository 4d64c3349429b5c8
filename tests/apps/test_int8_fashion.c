/* Static int8 as deployed, on real data (slow suite): the default MLP,
 * smallcnn and a ResNet-8-style CNN (tests/data/resnet8-fashion.txt) are
 * trained briefly on Fashion-MNIST by edgefit-train, then edgefit-sweep
 * runs their weights over the whole test set at fp32 and int8, batches 1,
 * 8 and 32. int8 is static int8 with min-max ranges of the first 512
 * training images. Checked:
 *   - int8's test accuracy is within 1 point of fp32's (at batch 1);
 *   - int8's accuracy is the same at batch 1, 8 and 32 (scales fixed once,
 *     not per batch);
 *   - the output names the calibration samples.
 * The accuracies are printed, for the record.
 * usage: test-int8-fashion TRAIN SWEEP SOURCE_ROOT */
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

#define FASHION "/usr/share/datasets/fashion-mnist"

static const char *train_app, *sweep_app, *root;
static char tmpdir[] = "/tmp/edgefit-int8-fashion-XXXXXX";

static void check_model(const char *model, const char *epochs,
                        const char *train_limit)
{
    struct stat sb;
    if (stat(FASHION "/train-images-idx3-ubyte.gz", &sb) != 0) {
        skip(); /* Debian's dataset-fashion-mnist is not installed */
    }
    char out[800], weights[900];
    snprintf(out, sizeof out, "%s/%s", tmpdir,
             strrchr(model, '/') ? strrchr(model, '/') + 1 : model);
    snprintf(weights, sizeof weights, "%s/weights.safetensors", out);
    char *train[] = {(char *)train_app, "--model", (char *)model,
                     "--epochs", (char *)epochs, "--train-limit",
                     (char *)train_limit, "--out", out, "--quiet", NULL};
    struct run_result r;
    assert_int_equal(run_argv(train, &r), 0);
    if (r.status != 0) {
        fail_msg("edgefit-train %s: status %d: %s", model, r.status, r.err);
    }
    run_free(&r);
    char *sweep[] = {(char *)sweep_app, "--model", (char *)model,
                     "--weights", weights, "--precisions", "fp32,int8",
                     "--batches", "1,8,32", "--repeats", "1", "--format",
                     "json", "--quiet", NULL};
    assert_int_equal(run_argv(sweep, &r), 0);
    if (r.status != 0) {
        fail_msg("edgefit-sweep %s: status %d: %s", model, r.status, r.err);
    }
    json_error_t e;
    json_t *doc = json_loads(r.out, 0, &e);
    run_free(&r);
    assert_non_null(doc);
    json_t *rows = json_object_get(doc, "sweep_results");
    assert_int_equal(json_array_size(rows), 6);
    double acc[6];
    for (size_t i = 0; i < 6; i++) {
        json_t *row = json_array_get(rows, i);
        assert_string_equal(
            json_string_value(json_object_get(row, "precision")),
            i < 3 ? "fp32" : "int8");
        acc[i] = json_number_value(json_object_get(row, "accuracy"));
        assert_int_equal(
            json_integer_value(json_object_get(row, "test_samples")), 10000);
    }
    const char *cal =
        json_string_value(json_object_get(doc, "int8_calibration"));
    assert_non_null(cal);
    printf("# %s: fp32 test accuracy %.4f %.4f %.4f, static int8 %.4f "
           "%.4f %.4f (batches 1, 8, 32; %s)\n", model, acc[0], acc[1],
           acc[2], acc[3], acc[4], acc[5], cal);
    assert_non_null(strstr(cal, "min-max ranges of the first 512 training "
                                "samples, read from " FASHION));
    /* trained, not chance */
    assert_true(acc[0] > 0.6);
    /* within 1 point of fp32 */
    assert_true(fabs(acc[3] - acc[0]) <= 0.01);
    /* the same at every batch */
    assert_true(acc[4] == acc[3]);
    assert_true(acc[5] == acc[3]);
    json_decref(doc);
    run_rmdir(out);
}

static void test_mlp(void **state)
{
    (void)state;
    check_model("mlp:784-64-10", "2", "20000");
}

static void test_smallcnn(void **state)
{
    (void)state;
    check_model("smallcnn", "1", "20000");
}

static void test_resnet8(void **state)
{
    (void)state;
    char model[800];
    snprintf(model, sizeof model, "%s/tests/data/resnet8-fashion.txt", root);
    check_model(model, "1", "10000");
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: test-int8-fashion TRAIN SWEEP SOURCE_ROOT\n");
        return 2;
    }
    train_app = argv[1];
    sweep_app = argv[2];
    root = argv[3];
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mlp),
        cmocka_unit_test(test_smallcnn),
        cmocka_unit_test(test_resnet8),
    };
    const int rc = cmocka_run_group_tests(tests, NULL, NULL);
    rmdir(tmpdir);
    return rc;
}
