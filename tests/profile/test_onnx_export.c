/*
 * ONNX export through the executor: every model of the zoo (and of
 * tests/data/models) imported, written by memest_model_to_onnx(), imported
 * again, runs at fp32 to the same outputs bit for bit as the model it was
 * written from, on the same inputs. The weights come from the files (the
 * executor's seeded ones are not used: every layer carries its own).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "edgefit/memest.h"
#include "edgefit/profile.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *root;

static memest_model *export_import(const memest_model *m)
{
    unsigned char *buf = NULL;
    size_t len = 0;
    struct memest_diag diag;
    memest_model *back = NULL;
    char path[64];
    FILE *f;
    if (memest_model_to_onnx(m, &buf, &len, &diag) != MEMEST_OK) {
        fail_msg("%s: export: %s", memest_model_name(m), diag.message);
    }
    snprintf(path, sizeof path, "test-prof-onnx-export-%ld.onnx",
             (long)getpid());
    f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(buf, 1, len, f), len);
    assert_int_equal(fclose(f), 0);
    free(buf);
    if (memest_model_load_onnx(path, NULL, &back, &diag) != MEMEST_OK) {
        fail_msg("%s: import of the export: %s", memest_model_name(m),
                 diag.message);
    }
    remove(path);
    return back;
}

/* Run m at `precision` on deterministic inputs; *out (malloc) of *n
 * floats. */
static void run_at(const memest_model *m, uint64_t batch,
                   enum memest_precision precision, float **out, size_t *n)
{
    struct prof_exec_opts o;
    prof_exec *ex = NULL;
    struct prof_diag diag;
    size_t count;
    float **in;
    size_t *n_in;
    uint32_t s = 12345;

    prof_exec_opts_init(&o);
    o.batch = batch;
    o.precision = precision;
    if (prof_exec_create(m, &o, &ex, &diag) != PROF_OK) {
        fail_msg("%s: executor: %s", memest_model_name(m), diag.message);
    }
    count = prof_exec_input_tensors(ex);
    in = calloc(count, sizeof *in);
    n_in = calloc(count, sizeof *n_in);
    assert_non_null(in);
    assert_non_null(n_in);
    for (size_t k = 0; k < count; k++) {
        n_in[k] = prof_exec_input_count_at(ex, k);
        in[k] = malloc(n_in[k] * sizeof(float));
        assert_non_null(in[k]);
        for (size_t i = 0; i < n_in[k]; i++) {
            s = s * 1664525u + 1013904223u;
            in[k][i] = (float)((double)(s >> 8) / 16777216.0 * 2.0 - 1.0);
        }
    }
    *n = prof_exec_output_count(ex);
    *out = malloc(*n * sizeof(float));
    assert_non_null(*out);
    assert_int_equal(prof_exec_run_inputs(ex, (const float *const *)in, n_in,
                                          count, *out, *n),
                     PROF_OK);
    for (size_t k = 0; k < count; k++) {
        free(in[k]);
    }
    free(in);
    free(n_in);
    prof_exec_destroy(ex);
}

static void run(const memest_model *m, uint64_t batch, float **out,
                size_t *n)
{
    run_at(m, batch, MEMEST_FP32, out, n);
}

/* Calibrate m (min-max, 16 samples uniform in [-1, 1)) and give every
 * tensor its quantisation. */
static void quantise(memest_model *m)
{
    struct prof_dataset data;
    struct prof_ranges r;
    struct prof_diag pd;
    struct memest_shape sh = memest_model_input_shape(m);
    uint64_t per = 1;
    uint32_t s = 31;
    memset(&data, 0, sizeof data);
    data.rank = sh.rank;
    for (unsigned d = 0; d < sh.rank; d++) {
        data.shape[d] = sh.dim[d];
        per *= sh.dim[d];
    }
    data.count = 16;
    data.sample_count = per;
    data.x = malloc((size_t)(per * data.count) * sizeof(float));
    assert_non_null(data.x);
    for (uint64_t i = 0; i < per * data.count; i++) {
        s = s * 1664525u + 1013904223u;
        data.x[i] = (float)((double)(s >> 8) / 16777216.0 * 2.0 - 1.0);
    }
    if (prof_ranges_calibrate(m, &data, NULL, &r, &pd) != PROF_OK) {
        fail_msg("%s: calibration: %s", memest_model_name(m), pd.message);
    }
    free(data.x);
    for (size_t t = 0; t < r.count; t++) {
        struct memest_quant q = {r.tensors[t].scale, r.tensors[t].zero_point,
                                 0};
        assert_int_equal(memest_model_set_tensor_quant(m, t, &q), 0);
    }
    prof_ranges_finish(&r);
    assert_true(memest_model_is_quantized(m));
}

/* A calibrated model written as QDQ and read back runs at static int8 to
 * the same outputs bit for bit: the file's int8 weights, int32 biases and
 * tensor params are the ones the executor derives from the model. */
static void test_qdq_int8_outputs(void **state)
{
    static const char *const models[] = {
        "tests/data/zoo/lenet5/model.onnx",
        "tests/data/zoo/resnet8/model.onnx",
        "tests/data/models/resnet8/model.onnx",
        "tests/data/models/ds-cnn/model.onnx",
        "tests/data/models/mobilenetv1-0.25/model.onnx",
        "tests/data/zoo/mobilenetv3-small/model.onnx",
        "tests/data/zoo/googlenet-quarter/model.onnx",
    };
    size_t done = 0;
    (void)state;
    for (size_t i = 0; i < sizeof models / sizeof models[0]; i++) {
        char path[512];
        memest_model *m = NULL, *back;
        struct memest_diag diag;
        float *a, *b;
        size_t na, nb;
        snprintf(path, sizeof path, "%s/%s", root, models[i]);
        if (access(path, R_OK) != 0) {
            continue;
        }
        if (memest_model_load_onnx(path, NULL, &m, &diag) != MEMEST_OK) {
            fail_msg("%s: %s", path, diag.message);
        }
        quantise(m);
        back = export_import(m);
        assert_true(memest_model_is_quantized(back));
        run_at(m, 2, MEMEST_INT8, &a, &na);
        run_at(back, 2, MEMEST_INT8, &b, &nb);
        assert_int_equal(na, nb);
        for (size_t k = 0; k < na; k++) {
            if (memcmp(&a[k], &b[k], sizeof a[k]) != 0) {
                fail_msg("%s at int8: output %zu is %.9g from the model, "
                         "%.9g from its QDQ export", path, k, (double)a[k],
                         (double)b[k]);
            }
        }
        free(a);
        free(b);
        memest_model_destroy(back);
        memest_model_destroy(m);
        done++;
    }
    assert_true(done >= 3);
}

static void test_zoo_outputs(void **state)
{
    static const char *const models[] = {
        "zoo/resnet8", "zoo/ds-cnn", "zoo/mobilenetv1-0.25",
        "zoo/fc-autoencoder", "zoo/mobilenetv3-small", "zoo/efficientnet-b0",
        "zoo/unet-tiny", "zoo/conv-autoencoder", "zoo/googlenet-quarter",
        "zoo/lenet5", "zoo/densenet-reduced", "zoo/mnasnet0.5",
        "zoo/shufflenetv2-x0.5", "zoo/yolo-tiny", "zoo/tcn",
    };
    size_t done = 0;
    (void)state;
    for (size_t i = 0; i < sizeof models / sizeof models[0]; i++) {
        char path[512];
        memest_model *m = NULL, *back;
        struct memest_diag diag;
        float *a, *b;
        size_t na, nb;
        snprintf(path, sizeof path, "%s/tests/data/%s/model.onnx", root,
                 models[i]);
        if (access(path, R_OK) != 0) {
            continue;
        }
        if (memest_model_load_onnx(path, NULL, &m, &diag) != MEMEST_OK) {
            fail_msg("%s: %s", path, diag.message);
        }
        back = export_import(m);
        run(m, 2, &a, &na);
        run(back, 2, &b, &nb);
        assert_int_equal(na, nb);
        for (size_t k = 0; k < na; k++) {
            if (memcmp(&a[k], &b[k], sizeof a[k]) != 0) {
                fail_msg("%s: output %zu is %.9g from the file, %.9g from "
                         "its export", path, k, (double)a[k], (double)b[k]);
            }
        }
        free(a);
        free(b);
        memest_model_destroy(back);
        memest_model_destroy(m);
        done++;
    }
    assert_true(done >= 10);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_zoo_outputs),
        cmocka_unit_test(test_qdq_int8_outputs),
    };
    root = getenv("EDGEFIT_SOURCE_ROOT");
    if (root == NULL) {
        fprintf(stderr, "EDGEFIT_SOURCE_ROOT is not set\n");
        return 2;
    }
    if (!memest_onnx_available()) {
        return 77; /* skipped: this build reads and writes no ONNX */
    }
    return cmocka_run_group_tests(tests, NULL, NULL);
}
