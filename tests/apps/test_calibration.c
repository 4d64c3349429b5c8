/* Where static int8's ranges come from (apps/common/calibration.c): the
 * options refused by what they say, the ranges of --calibration-data (a
 * NumPy folder's training split, an ONNX test_data_set folder) and of a
 * fallback set, checked against the min and max of the first N samples
 * read here straight from the .npy bytes (the independent truth: the
 * input tensor's observed range is the data's own), a calibration file read
 * back bit for bit, and the sentences that say which samples were used.
 *
 * usage: test-calibration ZOO_DIR */
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

#include "calibration.h"
#include "cli.h"
#include "edgefit/memest.h"
#include "edgefit/profile.h"

static const char *zoo_dir;
static char tmp[64];

/* The float32 payload of a .npy file numpy.save wrote (version 1.0). */
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

static memest_model *lenet(void)
{
    char p[4200];
    snprintf(p, sizeof p, "%s/lenet5/model.onnx", zoo_dir);
    return model(p);
}

static void min_max(const float *v, size_t n, float *lo, float *hi)
{
    *lo = v[0];
    *hi = v[0];
    for (size_t i = 1; i < n; i++) {
        *lo = v[i] < *lo ? v[i] : *lo;
        *hi = v[i] > *hi ? v[i] : *hi;
    }
}

static int option(struct calibration_opts *o, int c, const char *arg)
{
    return calibration_option(c, arg, o);
}

static void test_options(void **state)
{
    (void)state;
    struct calibration_opts o;
    calibration_opts_init(&o);
    assert_int_equal(o.samples, 512);
    assert_int_equal(o.method, PROF_RANGE_MINMAX);
    assert_false(calibration_given(&o));
    assert_int_equal(option(&o, CLI_OPT_CALIBRATION_METHOD, "entropy"), 1);
    assert_int_equal(o.method, PROF_RANGE_ENTROPY);
    assert_int_equal(option(&o, CLI_OPT_CALIBRATION_METHOD, "percentile"),
                     1);
    assert_int_equal(o.method, PROF_RANGE_PERCENTILE);
    assert_true(o.percentile == 99.99);
    assert_int_equal(option(&o, CLI_OPT_CALIBRATION_METHOD,
                            "percentile:99.9"), 1);
    assert_true(o.percentile == 99.9);
    assert_int_equal(option(&o, CLI_OPT_CALIBRATION_METHOD, "minmax"), 1);
    assert_int_equal(o.method, PROF_RANGE_MINMAX);
    /* refused */
    assert_int_equal(option(&o, CLI_OPT_CALIBRATION_METHOD, "max"), -1);
    assert_int_equal(option(&o, CLI_OPT_CALIBRATION_METHOD, "minmax:3"), -1);
    assert_int_equal(option(&o, CLI_OPT_CALIBRATION_METHOD,
                            "percentile:50"), -1);
    assert_int_equal(option(&o, CLI_OPT_CALIBRATION_METHOD,
                            "percentile:100.5"), -1);
    assert_int_equal(option(&o, CLI_OPT_CALIBRATION_METHOD,
                            "percentile:x"), -1);
    assert_int_equal(o.method, PROF_RANGE_MINMAX); /* unchanged */
    assert_int_equal(option(&o, CLI_OPT_CALIBRATION_SAMPLES, "-1"), -1);
    assert_int_equal(option(&o, CLI_OPT_CALIBRATION_SAMPLES, "12x"), -1);
    assert_int_equal(option(&o, CLI_OPT_CALIBRATION_SAMPLES, "0"), 1);
    /* the output stage: the model's by default, fixed or float on
     * request */
    assert_int_equal(o.requant, PROF_INT8_REQUANT_MODEL);
    assert_int_equal(option(&o, CLI_OPT_INT8_REQUANT, "float"), 1);
    assert_int_equal(o.requant, PROF_INT8_REQUANT_FLOAT);
    assert_int_equal(option(&o, CLI_OPT_INT8_REQUANT, "half"), -1);
    assert_int_equal(o.requant, PROF_INT8_REQUANT_FLOAT); /* unchanged */
    assert_int_equal(option(&o, CLI_OPT_INT8_REQUANT, "fixed"), 1);
    assert_int_equal(o.requant, PROF_INT8_REQUANT_FIXED);
    assert_int_equal(option(&o, CLI_OPT_INT8_REQUANT, "model"), 1);
    assert_int_equal(o.requant, PROF_INT8_REQUANT_MODEL);
    assert_int_equal(o.samples, 0);
    assert_int_equal(option(&o, CLI_OPT_CALIBRATION_FILE, tmp), -1); /* dir */
    assert_int_equal(option(&o, CLI_OPT_FORMAT, "csv"), 0);
    /* a file with data, samples or a method is ambiguous */
    calibration_opts_init(&o);
    o.file = "ranges.json";
    assert_int_equal(calibration_check(&o), CLI_EXIT_OK);
    o.data = "somewhere";
    assert_int_equal(calibration_check(&o), CLI_EXIT_USAGE);
    o.data = NULL;
    assert_int_equal(option(&o, CLI_OPT_CALIBRATION_SAMPLES, "8"), 1);
    assert_int_equal(calibration_check(&o), CLI_EXIT_USAGE);
}

static void test_npy_training_split(void **state)
{
    (void)state;
    memest_model *m = lenet();
    char dir[4200], f[4300];
    snprintf(dir, sizeof dir, "%s/lenet5/data", zoo_dir);
    snprintf(f, sizeof f, "%s/train_inputs.npy", dir);
    float *x = npy_floats(f, 16 * 1024);
    struct calibration_opts o;
    calibration_opts_init(&o);
    assert_int_equal(option(&o, CLI_OPT_CALIBRATION_DATA, dir), 1);
    assert_int_equal(option(&o, CLI_OPT_CALIBRATION_SAMPLES, "5"), 1);
    struct prof_ranges r;
    char src[512];
    assert_int_equal(calibration_ranges(m, &o, NULL, NULL, &r, src,
                                        sizeof src), CLI_EXIT_OK);
    assert_int_equal(r.samples, 5);
    assert_int_equal(r.count, memest_model_tensor_count(m));
    float lo, hi;
    min_max(x, 5 * 1024, &lo, &hi);
    assert_true(r.tensors[0].observed_min == lo);
    assert_true(r.tensors[0].observed_max == hi);
    /* all 16 samples reach further than the first 5, or the check above
     * could not tell 5 from 16 */
    float lo16, hi16;
    min_max(x, 16 * 1024, &lo16, &hi16);
    assert_true(lo16 < lo || hi16 > hi);
    char want[4600];
    snprintf(want, sizeof want, "min-max ranges of the first 5 training "
             "samples, read from %s", f);
    assert_string_equal(src, want);
    prof_ranges_finish(&r);

    /* more than the set holds: all of it, said so */
    assert_int_equal(option(&o, CLI_OPT_CALIBRATION_SAMPLES, "100"), 1);
    assert_int_equal(option(&o, CLI_OPT_CALIBRATION_METHOD, "percentile:99"),
                     1);
    assert_int_equal(calibration_ranges(m, &o, NULL, NULL, &r, src,
                                        sizeof src), CLI_EXIT_OK);
    assert_int_equal(r.samples, 16);
    assert_int_equal(r.method, PROF_RANGE_PERCENTILE);
    assert_true(r.percentile == 99.0);
    assert_true(r.tensors[0].observed_min == lo16);
    assert_true(r.tensors[0].observed_max == hi16);
    snprintf(want, sizeof want, "99th-percentile ranges of all 16 training "
             "samples, read from %s", f);
    assert_string_equal(src, want);
    prof_ranges_finish(&r);
    free(x);
    memest_model_destroy(m);
}

static void test_onnx_test_data(void **state)
{
    (void)state;
    memest_model *m = lenet();
    char dir[4200], f[4300];
    snprintf(dir, sizeof dir, "%s/lenet5/data/test_data_set_0", zoo_dir);
    snprintf(f, sizeof f, "%s/input_0.npy", dir);
    float *x = npy_floats(f, 16 * 1024);
    struct calibration_opts o;
    calibration_opts_init(&o);
    o.data = dir;
    o.samples = 3;
    struct prof_ranges r;
    char src[512];
    assert_int_equal(calibration_ranges(m, &o, NULL, NULL, &r, src,
                                        sizeof src), CLI_EXIT_OK);
    float lo, hi;
    min_max(x, 3 * 1024, &lo, &hi);
    assert_true(r.tensors[0].observed_min == lo);
    assert_true(r.tensors[0].observed_max == hi);
    assert_int_equal(r.samples, 3);
    assert_non_null(strstr(src, "min-max ranges of the first 3 samples, read from "));
    prof_ranges_finish(&r);
    free(x);
    memest_model_destroy(m);
}

/* A set made by hand: 4 samples of 8 values, the 4th far outside. */
static void hand_set(struct prof_dataset *d)
{
    const uint64_t shape[1] = {8};
    assert_int_equal(prof_dataset_init(d, 4, 1, shape, true, 0, NULL,
                                       "hand.npy", NULL), PROF_OK);
    for (size_t i = 0; i < 32; i++) {
        d->x[i] = (float)((int)(i % 7) - 3) * 0.25f;
    }
    d->x[3 * 8 + 5] = 40.0f;
    d->classes = 2;
}

static void test_fallback_and_file(void **state)
{
    (void)state;
    memest_model *m = model("mlp:8-6-2");
    struct prof_dataset d;
    hand_set(&d);
    struct calibration_opts o;
    calibration_opts_init(&o);
    o.samples = 3;
    struct prof_ranges r;
    char src[512];
    assert_int_equal(calibration_ranges(m, &o, &d, "training samples", &r,
                                        src, sizeof src), CLI_EXIT_OK);
    float lo, hi;
    min_max(d.x, 24, &lo, &hi);
    assert_true(r.tensors[0].observed_min == lo);
    assert_true(r.tensors[0].observed_max == hi);
    assert_true(hi < 40.0f);
    assert_string_equal(src, "min-max ranges of the first 3 of 4 training "
                             "samples, read from hand.npy");
    /* written and read back through --calibration-file: the same bits */
    char path[128];
    snprintf(path, sizeof path, "%s/ranges.json", tmp);
    struct prof_diag pd = {0};
    assert_int_equal(prof_ranges_save(&r, path, &pd), PROF_OK);
    struct calibration_opts of;
    calibration_opts_init(&of);
    assert_int_equal(option(&of, CLI_OPT_CALIBRATION_FILE, path), 1);
    struct prof_ranges back;
    assert_int_equal(calibration_ranges(m, &of, &d, "training samples",
                                        &back, src, sizeof src),
                     CLI_EXIT_OK);
    assert_int_equal(back.count, r.count);
    for (size_t i = 0; i < r.count; i++) {
        assert_string_equal(back.tensors[i].name, r.tensors[i].name);
        assert_memory_equal(&back.tensors[i].scale, &r.tensors[i].scale,
                            sizeof(float));
        assert_int_equal(back.tensors[i].zero_point, r.tensors[i].zero_point);
    }
    char want[256];
    snprintf(want, sizeof want, "ranges read from %s (min-max over 3 "
             "samples)", path);
    assert_string_equal(src, want);
    prof_ranges_finish(&back);
    /* the file belongs to another model: refused */
    memest_model *other = model("mlp:8-6-4-2");
    assert_int_equal(calibration_ranges(other, &of, NULL, NULL, &back, src,
                                        sizeof src), CLI_EXIT_USAGE);
    assert_null(back.tensors);
    memest_model_destroy(other);
    /* all samples (0): the outlier is in */
    o.samples = 0;
    prof_ranges_finish(&r);
    assert_int_equal(calibration_ranges(m, &o, &d, "training samples", &r,
                                        src, sizeof src), CLI_EXIT_OK);
    assert_true(r.tensors[0].observed_max == 40.0f);
    assert_string_equal(src, "min-max ranges of all 4 training samples, "
                             "read from hand.npy");
    prof_ranges_finish(&r);
    unlink(path);
    prof_dataset_finish(&d);
    memest_model_destroy(m);
}

/* A QDQ file (tests/data/onnx/qdq/cnn, ONNX Runtime's quantize_static
 * layout): with no option, no ranges (the executor reads the file's own
 * scales and zero points), said so, and the executor given
 * calibration_exec_ranges' NULL with --int8-requant float gives ONNX
 * Runtime's output (the fixture's, made by ONNX Runtime) on every
 * element; with --calibration-data, a calibration instead. */
static void test_qdq_model(void **state)
{
    (void)state;
    char p[4200];
    snprintf(p, sizeof p, "%s/../onnx/qdq/cnn/model.onnx", zoo_dir);
    memest_model *m = model(p);
    assert_int_equal(memest_model_is_quantized(m), 1);
    struct calibration_opts o;
    calibration_opts_init(&o);
    struct prof_ranges r;
    char src[256];
    assert_int_equal(calibration_ranges(m, &o, NULL, NULL, &r, src,
                                        sizeof src), CLI_EXIT_OK);
    assert_non_null(strstr(src, "the model's own quantisation"));
    /* by default (model) a QDQ file's own params run ONNX Runtime's
     * stage, and the sentence says so; fixed asked, it does not */
    assert_non_null(strstr(src, "requantised as ONNX Runtime does "
                                "(--int8-requant model)"));
    prof_ranges_finish(&r);
    assert_int_equal(option(&o, CLI_OPT_INT8_REQUANT, "fixed"), 1);
    assert_int_equal(calibration_ranges(m, &o, NULL, NULL, &r, src,
                                        sizeof src), CLI_EXIT_OK);
    assert_null(strstr(src, "ONNX Runtime"));
    assert_int_equal(r.count, 0);
    assert_null(r.tensors);
    assert_null(calibration_exec_ranges(&r));
    prof_ranges_finish(&r);
    assert_int_equal(option(&o, CLI_OPT_INT8_REQUANT, "float"), 1);
    assert_int_equal(calibration_ranges(m, &o, NULL, NULL, &r, src,
                                        sizeof src), CLI_EXIT_OK);
    assert_non_null(strstr(src, "the model's own quantisation"));
    assert_non_null(strstr(src, "requantised as ONNX Runtime does"));
    {
        struct memest_owned_tensor x, y;
        struct memest_diag md;
        char f[4300];
        snprintf(f, sizeof f, "%s/../onnx/qdq/cnn/test_data_set_0/input_0.pb",
                 zoo_dir);
        assert_int_equal(memest_tensor_load_pb(f, &x, &md), MEMEST_OK);
        snprintf(f, sizeof f,
                 "%s/../onnx/qdq/cnn/test_data_set_0/output_0.pb", zoo_dir);
        assert_int_equal(memest_tensor_load_pb(f, &y, &md), MEMEST_OK);
        size_t nx = 1, ny = 1;
        for (unsigned d = 0; d < x.t.rank; d++) {
            nx *= (size_t)x.t.dim[d];
        }
        for (unsigned d = 0; d < y.t.rank; d++) {
            ny *= (size_t)y.t.dim[d];
        }
        struct prof_exec_opts eo;
        prof_exec_opts_init(&eo);
        eo.precision = MEMEST_INT8;
        eo.batch = x.t.dim[0];
        eo.ranges = calibration_exec_ranges(&r);
        eo.int8_requant = o.requant;
        prof_exec *ex = NULL;
        struct prof_diag pd;
        if (prof_exec_create(m, &eo, &ex, &pd) != PROF_OK) {
            fail_msg("the QDQ model without ranges: %s", pd.message);
        }
        assert_int_equal(prof_exec_output_count(ex), ny);
        float *out = calloc(ny, sizeof *out);
        assert_non_null(out);
        assert_int_equal(prof_exec_run(ex, x.data, nx, out, ny), PROF_OK);
        for (size_t i = 0; i < ny; i++) {
            if (out[i] != y.data[i]) {
                fail_msg("element %zu: %.9g, ONNX Runtime's %.9g", i,
                         (double)out[i], (double)y.data[i]);
            }
        }
        free(out);
        prof_exec_destroy(ex);
        memest_owned_tensor_free(&x);
        memest_owned_tensor_free(&y);
    }
    prof_ranges_finish(&r);
    o.requant = PROF_INT8_REQUANT_MODEL;
    /* its test inputs as calibration data: calibrated, not its own, so
     * the default stage is the fixed-point one */
    char dir[4200];
    snprintf(dir, sizeof dir, "%s/../onnx/qdq/cnn/test_data_set_0", zoo_dir);
    o.data = dir;
    assert_int_equal(calibration_ranges(m, &o, NULL, NULL, &r, src,
                                        sizeof src), CLI_EXIT_OK);
    assert_non_null(strstr(src, "min-max ranges of"));
    assert_null(strstr(src, "ONNX Runtime"));
    prof_ranges_finish(&r);
    memest_model_destroy(m);
}

static void test_refused(void **state)
{
    (void)state;
    memest_model *m = model("mlp:8-6-2");
    struct calibration_opts o;
    calibration_opts_init(&o);
    struct prof_ranges r;
    char src[64];
    /* no data, no file, no fallback */
    assert_int_equal(calibration_ranges(m, &o, NULL, NULL, &r, src,
                                        sizeof src), CLI_EXIT_USAGE);
    assert_null(r.tensors);
    /* data of the wrong shape: 1x32x32 for a model of 8 inputs */
    char dir[4200];
    snprintf(dir, sizeof dir, "%s/lenet5/data", zoo_dir);
    o.data = dir;
    assert_int_equal(calibration_ranges(m, &o, NULL, NULL, &r, src,
                                        sizeof src), CLI_EXIT_USAGE);
    /* a folder with no data, a path that is no folder */
    o.data = tmp;
    assert_int_equal(calibration_ranges(m, &o, NULL, NULL, &r, src,
                                        sizeof src), CLI_EXIT_USAGE);
    snprintf(dir, sizeof dir, "%s/lenet5/model.onnx", zoo_dir);
    o.data = dir;
    assert_int_equal(calibration_ranges(m, &o, NULL, NULL, &r, src,
                                        sizeof src), CLI_EXIT_USAGE);
    /* a file and data at once */
    o.file = "x.json";
    assert_int_equal(calibration_ranges(m, &o, NULL, NULL, &r, src,
                                        sizeof src), CLI_EXIT_USAGE);
    memest_model_destroy(m);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: test-calibration ZOO_DIR\n");
        return 2;
    }
    zoo_dir = argv[1];
    cli_set_program("test-calibration");
    snprintf(tmp, sizeof tmp, "/tmp/edgefit-calibration-XXXXXX");
    if (!mkdtemp(tmp)) {
        perror("mkdtemp");
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_options),
        cmocka_unit_test(test_npy_training_split),
        cmocka_unit_test(test_onnx_test_data),
        cmocka_unit_test(test_fallback_and_file),
        cmocka_unit_test(test_qdq_model),
        cmocka_unit_test(test_refused),
    };
    const int rc = cmocka_run_group_tests(tests, NULL, NULL);
    rmdir(tmp);
    return rc;
}
