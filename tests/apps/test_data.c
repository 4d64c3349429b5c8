/* The user's data (apps/common/data.c) on real files: the NumPy samples of
 * tests/data/zoo/lenet5/data, written by numpy.save (their bytes read here
 * straight from the file, the header skipped, as the independent truth),
 * ONNX test data sets in .pb (the zoo's, PyTorch's exporter) and .npy,
 * several sets joined in the order of their numbers, IDX files of another
 * image size; then the check of model against data (shapes, labels,
 * reference outputs), the classifier rule and the standard error against
 * the hand formula.
 *
 * usage: test-data ZOO_DIR MODELS_DIR */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "data.h"
#include "edgefit/memest.h"
#include "edgefit/profile.h"
#include "validate.h"

static const char *zoo_dir, *models_dir;
static char tmp[64];

/* The float32 payload of a .npy file numpy.save wrote: version 1.0, the
 * header length at bytes 8-9 (little-endian), the data after it. */
static float *npy_floats(const char *path, size_t n)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    unsigned char head[10];
    assert_int_equal(fread(head, 1, 10, f), 10);
    assert_memory_equal(head, "\x93NUMPY\x01\x00", 8);
    const long skip = 10 + head[8] + 256L * head[9];
    assert_int_equal(fseek(f, skip, SEEK_SET), 0);
    float *v = malloc(n * sizeof *v);
    assert_non_null(v);
    assert_int_equal(fread(v, sizeof *v, n, f), n);
    char extra;
    assert_int_equal(fread(&extra, 1, 1, f), 0); /* n is all of it */
    fclose(f);
    return v;
}

static memest_model *model(const char *spec)
{
    memest_model *m = NULL;
    struct memest_diag d;
    if (memest_model_load(spec, &m, &d) != MEMEST_OK) {
        fail_msg("%s: %s", spec, d.message);
    }
    return m;
}

static void path(char *buf, size_t len, const char *dir, const char *rest)
{
    snprintf(buf, len, "%s/%s", dir, rest);
}

static void test_npy_folder(void **state)
{
    (void)state;
    char dir[4096], f[4200];
    path(dir, sizeof dir, zoo_dir, "lenet5/data");
    struct prof_dataset d;
    assert_int_equal(data_load(dir, DATA_TEST, 0, &d), CLI_EXIT_OK);
    assert_int_equal(d.count, 16);
    assert_int_equal(d.rank, 3);
    assert_int_equal(d.shape[0], 1);
    assert_int_equal(d.shape[1], 32);
    assert_int_equal(d.shape[2], 32);
    assert_int_equal(d.sample_count, 1024);
    assert_null(d.ref);
    assert_int_equal(d.rows, 0); /* not IDX images */
    char text[64];
    assert_string_equal(prof_dataset_shape_text(&d, text, sizeof text),
                        "1x32x32");
    /* the labels make-zoo-fixtures.py wrote: PyTorch's top-1 (9 and 2
     * alternating), the last four moved to the next class */
    static const uint8_t want[16] = {9, 2, 9, 2, 9, 2, 9, 2,
                                     9, 2, 9, 2, 0, 3, 0, 3};
    assert_memory_equal(d.y, want, 16);
    assert_int_equal(d.classes, 10);
    path(f, sizeof f, dir, "test_inputs.npy");
    assert_non_null(strstr(d.source, "test_inputs.npy"));
    float *x = npy_floats(f, 16 * 1024);
    assert_memory_equal(d.x, x, 16 * 1024 * sizeof(float));
    free(x);
    prof_dataset_finish(&d);

    /* a limit; the training split */
    assert_int_equal(data_load(dir, DATA_TRAIN, 5, &d), CLI_EXIT_OK);
    assert_int_equal(d.count, 5);
    assert_int_equal(d.y[0], 9);
    assert_int_equal(d.y[1], 2);
    path(f, sizeof f, dir, "train_inputs.npy");
    x = npy_floats(f, 16 * 1024);
    assert_memory_equal(d.x, x, 5 * 1024 * sizeof(float));
    free(x);
    prof_dataset_finish(&d);
}

/* A folder of the NumPy layout made here from the zoo's files (symbolic
 * links), with one file replaced. */
static void npy_variant(const char *labels)
{
    char src[4200], dst[4200];
    snprintf(dst, sizeof dst, "%s/test_inputs.npy", tmp);
    unlink(dst);
    snprintf(src, sizeof src, "%s/lenet5/data/test_inputs.npy", zoo_dir);
    assert_int_equal(symlink(src, dst), 0);
    snprintf(dst, sizeof dst, "%s/test_labels.npy", tmp);
    unlink(dst);
    if (labels) {
        assert_int_equal(symlink(labels, dst), 0);
    }
}

static void test_npy_refused(void **state)
{
    (void)state;
    struct prof_dataset d;
    char f[4200];
    /* no labels beside the inputs */
    npy_variant(NULL);
    assert_int_equal(data_load(tmp, DATA_TEST, 0, &d), CLI_EXIT_USAGE);
    assert_null(d.x);
    /* labels that are floats: the reference outputs' file */
    snprintf(f, sizeof f, "%s/lenet5/data/test_data_set_0/output_0.npy",
             zoo_dir);
    npy_variant(f);
    assert_int_equal(data_load(tmp, DATA_TEST, 0, &d), CLI_EXIT_USAGE);
    /* 16 inputs, 16 labels of another file are fine; the training
     * labels stand in */
    snprintf(f, sizeof f, "%s/lenet5/data/train_labels.npy", zoo_dir);
    npy_variant(f);
    assert_int_equal(data_load(tmp, DATA_TEST, 0, &d), CLI_EXIT_OK);
    assert_int_equal(d.y[12], 9);
    prof_dataset_finish(&d);
    snprintf(f, sizeof f, "%s/test_inputs.npy", tmp);
    unlink(f);
    snprintf(f, sizeof f, "%s/test_labels.npy", tmp);
    unlink(f);
}

static void test_reference_sets(void **state)
{
    (void)state;
    char dir[4096], f[4200];
    struct prof_dataset one, npy, both;
    /* a model's folder: its test_data_set_0, TensorProto files of two
     * samples */
    path(dir, sizeof dir, zoo_dir, "lenet5");
    assert_int_equal(data_load_reference(dir, 0, NULL, &one), CLI_EXIT_OK);
    assert_int_equal(one.count, 2);
    assert_int_equal(one.rank, 3);
    assert_int_equal(one.shape[1], 32);
    assert_null(one.y);
    assert_int_equal(one.ref_rank, 1);
    assert_int_equal(one.ref_shape[0], 10);
    assert_int_equal(one.ref_count, 10);
    /* one set named directly, .npy */
    path(dir, sizeof dir, zoo_dir, "lenet5/data/test_data_set_0");
    assert_int_equal(data_load_reference(dir, 0, NULL, &npy), CLI_EXIT_OK);
    assert_int_equal(npy.count, 16);
    path(f, sizeof f, dir, "output_0.npy");
    float *ref = npy_floats(f, 16 * 10);
    assert_memory_equal(npy.ref, ref, 16 * 10 * sizeof(float));
    free(ref);
    /* several sets joined in the order of their numbers: 2 before 10 */
    char a[4200], b[4200];
    snprintf(a, sizeof a, "%s/test_data_set_2", tmp);
    snprintf(b, sizeof b, "%s/test_data_set_10", tmp);
    path(f, sizeof f, zoo_dir, "lenet5/test_data_set_0");
    assert_int_equal(symlink(f, a), 0);
    assert_int_equal(symlink(dir, b), 0);
    assert_int_equal(data_load_reference(tmp, 0, NULL, &both), CLI_EXIT_OK);
    assert_int_equal(both.count, 18);
    assert_memory_equal(both.x, one.x, 2 * 1024 * sizeof(float));
    assert_memory_equal(both.x + 2 * 1024, npy.x, 16 * 1024 * sizeof(float));
    assert_memory_equal(both.ref, one.ref, 2 * 10 * sizeof(float));
    assert_memory_equal(both.ref + 20, npy.ref, 16 * 10 * sizeof(float));
    prof_dataset_finish(&both);
    /* a limit across the sets */
    assert_int_equal(data_load_reference(tmp, 3, NULL, &both), CLI_EXIT_OK);
    assert_int_equal(both.count, 3);
    assert_memory_equal(both.ref + 20, npy.ref, 10 * sizeof(float));
    prof_dataset_finish(&both);
    /* sets of different shapes are not one data set */
    unlink(b);
    path(f, sizeof f, zoo_dir, "conv-autoencoder/test_data_set_0");
    assert_int_equal(symlink(f, b), 0);
    assert_int_equal(data_load_reference(tmp, 0, NULL, &both), CLI_EXIT_USAGE);
    assert_null(both.x);
    unlink(a);
    unlink(b);
    /* nothing there */
    assert_int_equal(data_load_reference(tmp, 0, NULL, &both), CLI_EXIT_USAGE);
    prof_dataset_finish(&one);
    prof_dataset_finish(&npy);
}

/* ONNX's own test data (Debian's libonnx-testdata): a converted PyTorch
 * Linear and a Conv2d, read as their models' folders. */
static void test_onnx_testdata(void **state)
{
    (void)state;
    static const char *const base =
        "/usr/share/libonnx-testdata/data/pytorch-converted";
    if (access(base, R_OK) != 0) {
        skip();
    }
    char dir[4096], m[4200];
    snprintf(dir, sizeof dir, "%s/test_Conv2d", base);
    struct prof_dataset d;
    assert_int_equal(data_load_reference(dir, 0, NULL, &d), CLI_EXIT_OK);
    snprintf(m, sizeof m, "%s/model.onnx", dir);
    memest_model *mo = model(m);
    const struct memest_shape in = memest_model_input_shape(mo);
    const struct memest_shape out = memest_model_output_shape(mo);
    assert_int_equal(d.rank, in.rank);
    for (unsigned i = 0; i < in.rank; i++) {
        assert_int_equal(d.shape[i], in.dim[i]);
    }
    assert_int_equal(d.ref_rank, out.rank);
    assert_int_equal(data_check(mo, &d, "--test-data"), CLI_EXIT_OK);
    /* a Conv2d's output is a feature map, not class scores */
    assert_false(validate_is_classifier(mo));
    memest_model_destroy(mo);
    prof_dataset_finish(&d);
}

/* IDX images of 28 x 28 through data_load (the rows and cols kept). */
static void write_idx(const char *dir)
{
    char p[4200];
    unsigned char head[16] = {0, 0, 8, 3, 0, 0, 0, 4, 0, 0, 0, 28, 0, 0,
                              0, 28};
    snprintf(p, sizeof p, "%s/t10k-images-idx3-ubyte", dir);
    FILE *f = fopen(p, "wb");
    assert_non_null(f);
    fwrite(head, 1, 16, f);
    for (int i = 0; i < 4 * 784; i++) {
        fputc(i % 251, f);
    }
    fclose(f);
    unsigned char lh[8] = {0, 0, 8, 1, 0, 0, 0, 4};
    snprintf(p, sizeof p, "%s/t10k-labels-idx1-ubyte", dir);
    f = fopen(p, "wb");
    assert_non_null(f);
    fwrite(lh, 1, 8, f);
    fwrite("\x01\x09\x00\x03", 1, 4, f);
    fclose(f);
}

static void remove_idx(const char *dir)
{
    char p[4200];
    snprintf(p, sizeof p, "%s/t10k-images-idx3-ubyte", dir);
    unlink(p);
    snprintf(p, sizeof p, "%s/t10k-labels-idx1-ubyte", dir);
    unlink(p);
}

static void test_idx_and_check(void **state)
{
    (void)state;
    write_idx(tmp);
    struct prof_dataset d;
    assert_int_equal(data_load(tmp, DATA_TEST, 0, &d), CLI_EXIT_OK);
    assert_int_equal(d.count, 4);
    assert_int_equal(d.rank, 3);
    assert_int_equal(d.rows, 28);
    assert_int_equal(d.sample_count, 784);
    assert_int_equal(d.classes, 10);
    assert_true(d.x[250] == 250.0f / 255.0f);
    /* an MLP reads the image as 784 values; a CNN of 1x28x28 too */
    static const char *const fit[] = {"mlp:784-16-10", "smallcnn"};
    for (size_t i = 0; i < 2; i++) {
        memest_model *m = model(fit[i]);
        assert_int_equal(data_check(m, &d, "--data"), CLI_EXIT_OK);
        assert_true(data_fits(m, &d));
        memest_model_destroy(m);
    }
    /* the audit's cases and their kin: another size, another shape of
     * the same size (ds-cnn reads 1x49x10 = 490), too few classes (labels
     * up to 9), no class scores (an autoencoder) */
    static const char *const refused[] = {
        "mlp:784000-10", "mlp:1000-10", "ds-cnn", "resnet8",
        "mlp:784-16-4", "fc-autoencoder"};
    for (size_t i = 0; i < sizeof refused / sizeof *refused; i++) {
        memest_model *m = model(refused[i]);
        if (data_check(m, &d, "--data") != CLI_EXIT_USAGE) {
            fail_msg("%s was not refused", refused[i]);
        }
        assert_false(data_fits(m, &d));
        memest_model_destroy(m);
    }
    /* labels for an autoencoder of the data's own shape: no classes */
    char p[4096];
    path(p, sizeof p, zoo_dir, "conv-autoencoder/model.onnx");
    memest_model *ae = model(p);
    assert_int_equal(data_check(ae, &d, "--data"), CLI_EXIT_USAGE);
    memest_model_destroy(ae);
    prof_dataset_finish(&d);
    remove_idx(tmp);
}

static void test_check_reference(void **state)
{
    (void)state;
    char dir[4096];
    path(dir, sizeof dir, zoo_dir, "lenet5/model.onnx");
    memest_model *lenet = model(dir);
    path(dir, sizeof dir, zoo_dir, "lenet5/data");
    struct prof_dataset d;
    /* labels and reference outputs that fit it */
    assert_int_equal(data_load(dir, DATA_TEST, 0, &d), CLI_EXIT_OK);
    assert_int_equal(data_check(lenet, &d, "--data"), CLI_EXIT_OK);
    prof_dataset_finish(&d);
    assert_int_equal(data_load_reference(dir, 0, NULL, &d), CLI_EXIT_OK);
    assert_int_equal(data_check(lenet, &d, "--test-data"), CLI_EXIT_OK);
    prof_dataset_finish(&d);
    /* reference outputs of 5 values for a model of 10 */
    const uint64_t shape[3] = {1, 32, 32}, five = 5, ten[3] = {10, 1, 1};
    assert_int_equal(prof_dataset_init(&d, 2, 3, shape, false, 1, &five,
                                       "by hand", NULL), PROF_OK);
    assert_int_equal(data_check(lenet, &d, "--test-data"), CLI_EXIT_USAGE);
    prof_dataset_finish(&d);
    /* 10 x 1 x 1 is the same 10 values */
    assert_int_equal(prof_dataset_init(&d, 2, 3, shape, false, 3, ten,
                                       NULL, NULL), PROF_OK);
    assert_int_equal(data_check(lenet, &d, "--test-data"), CLI_EXIT_OK);
    prof_dataset_finish(&d);
    /* the other resnet8's inputs: 3x32x32 */
    path(dir, sizeof dir, models_dir, "resnet8");
    assert_int_equal(data_load_reference(dir, 0, NULL, &d), CLI_EXIT_OK);
    assert_int_equal(data_check(lenet, &d, "--test-data"), CLI_EXIT_USAGE);
    prof_dataset_finish(&d);
    memest_model_destroy(lenet);
}

static void test_classifier(void **state)
{
    (void)state;
    char p[4096];
    struct {
        const char *spec;
        bool zoo, classifier;
    } cases[] = {
        {"lenet5/model.onnx", true, true},            /* 10 logits */
        {"conv-autoencoder/model.onnx", true, false}, /* 1x28x28 back */
        {"tcn/model.onnx", true, true},               /* 4x64 to 5 */
        {"mlp:784-64-10", false, true},               /* softmax */
        {"fc-autoencoder", false, false},             /* 640 to 640 */
        {"ds-cnn", false, true},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        if (cases[i].zoo) {
            path(p, sizeof p, zoo_dir, cases[i].spec);
        } else {
            snprintf(p, sizeof p, "%s", cases[i].spec);
        }
        memest_model *m = model(p);
        if (validate_is_classifier(m) != cases[i].classifier) {
            fail_msg("%s: classifier %d", cases[i].spec,
                     (int)validate_is_classifier(m));
        }
        memest_model_destroy(m);
    }
}

static void test_stderr(void **state)
{
    (void)state;
    /* sqrt(p (1 - p) / n) by hand: 0.75 over 16 is sqrt(3) / 16 */
    assert_true(fabs(data_accuracy_stderr(0.75, 16) - sqrt(3.0) / 16.0) <
                1e-16);
    /* 0.9 over 10000: sqrt(0.09 / 10000) = 0.003 */
    assert_true(fabs(data_accuracy_stderr(0.9, 10000) - 0.003) < 1e-15);
    assert_true(data_accuracy_stderr(1.0, 50) == 0.0);
    assert_true(isnan(data_accuracy_stderr(0.5, 0)));
    assert_true(isnan(data_accuracy_stderr(1.5, 10)));
    assert_true(isnan(data_accuracy_stderr(NAN, 10)));
}

static void test_init(void **state)
{
    (void)state;
    struct prof_dataset d;
    struct prof_diag diag;
    const uint64_t shape[2] = {3, 4}, zero[2] = {3, 0};
    const uint64_t huge[2] = {UINT64_MAX / 2, 4};
    assert_int_equal(prof_dataset_init(&d, 0, 2, shape, true, 0, NULL,
                                       NULL, &diag), PROF_E_RANGE);
    assert_int_equal(prof_dataset_init(&d, 1, 0, shape, true, 0, NULL,
                                       NULL, &diag), PROF_E_RANGE);
    assert_int_equal(prof_dataset_init(&d, 1, PROF_DATASET_MAX_RANK + 1,
                                       shape, true, 0, NULL, NULL, &diag),
                     PROF_E_RANGE);
    assert_int_equal(prof_dataset_init(&d, 1, 2, zero, true, 0, NULL, NULL,
                                       &diag), PROF_E_RANGE);
    assert_non_null(strstr(diag.message, "zero size"));
    assert_int_equal(prof_dataset_init(&d, 1, 2, huge, true, 0, NULL, NULL,
                                       &diag), PROF_E_OVERFLOW);
    assert_int_equal(prof_dataset_init(&d, 3, 2, shape, false, 2, huge,
                                       NULL, &diag), PROF_E_OVERFLOW);
    assert_null(d.x);
    assert_int_equal(prof_dataset_init(&d, 3, 2, shape, true, 0, NULL,
                                       "src", &diag), PROF_OK);
    assert_int_equal(d.sample_count, 12);
    assert_non_null(d.y);
    assert_null(d.ref);
    assert_string_equal(d.source, "src");
    char text[6];
    /* "3x4" fits; a short buffer cuts the text, NUL-terminated */
    assert_string_equal(prof_dataset_shape_text(&d, text, sizeof text),
                        "3x4");
    assert_string_equal(prof_dataset_shape_text(&d, text, 2), "3");
    prof_dataset_finish(&d);
    assert_null(d.x);
}

/* A time-major model's reference data (an ONNX LSTM reading [T, N, D]):
 * read as the file says, each sample's 49 x 10 rows gathered from the
 * file's [49, 2, 10]; without the model, the steps would be the samples
 * and the output's 2 disagree. */
static void test_time_major_reference(void **state)
{
    (void)state;
    char dir[4096], model_path[4200], f[4300];
    path(dir, sizeof dir, models_dir, "../onnx/torch_lstm_tm");
    path(model_path, sizeof model_path, dir, "model.onnx");
    memest_model *m = NULL;
    if (!memest_onnx_available()) {
        skip();
    }
    struct memest_diag md;
    assert_int_equal(memest_model_load(model_path, &m, &md), MEMEST_OK);
    assert_int_equal(memest_model_input_batch_axis(m, 0), 1);
    struct prof_dataset d, flat;
    assert_int_equal(data_load_reference(dir, 0, NULL, &flat),
                     CLI_EXIT_USAGE);
    assert_int_equal(data_load_reference(dir, 0, m, &d), CLI_EXIT_OK);
    assert_int_equal(d.count, 2);
    assert_int_equal(d.rank, 2);
    assert_int_equal(d.shape[0], 49);
    assert_int_equal(d.shape[1], 10);
    path(f, sizeof f, dir, "test_data_set_0/input_0.pb");
    struct validate_ref raw;
    assert_int_equal(validate_ref_load(f, &raw), CLI_EXIT_OK);
    assert_int_equal(raw.dim[0], 49);
    assert_int_equal(raw.dim[1], 2);
    for (size_t n = 0; n < 2; n++) {
        for (size_t t = 0; t < 49; t++) {
            assert_memory_equal(d.x + (n * 49 + t) * 10,
                                raw.data + (t * 2 + n) * 10,
                                10 * sizeof(float));
        }
    }
    validate_ref_free(&raw);
    prof_dataset_finish(&d);
    memest_model_destroy(m);
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: test-data ZOO_DIR MODELS_DIR\n");
        return 2;
    }
    zoo_dir = argv[1];
    models_dir = argv[2];
    cli_set_program("test-data");
    snprintf(tmp, sizeof tmp, "/tmp/edgefit-data-XXXXXX");
    if (!mkdtemp(tmp)) {
        perror("mkdtemp");
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_npy_folder),
        cmocka_unit_test(test_npy_refused),
        cmocka_unit_test(test_reference_sets),
        cmocka_unit_test(test_time_major_reference),
        cmocka_unit_test(test_onnx_testdata),
        cmocka_unit_test(test_idx_and_check),
        cmocka_unit_test(test_check_reference),
        cmocka_unit_test(test_classifier),
        cmocka_unit_test(test_stderr),
        cmocka_unit_test(test_init),
    };
    const int rc = cmocka_run_group_tests(tests, NULL, NULL);
    rmdir(tmp);
    return rc;
}
