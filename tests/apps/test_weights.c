/*
 * --weights FILE end to end: the MLPerf Tiny presets with the state_dicts
 * PyTorch saved for them (tests/data/models, scripts/make-model-fixtures.py)
 * are accepted by edgefit-memfit and edgefit-layerwise, in F32 and as BF16;
 * a file of another model, a missing, unused or misshapen tensor, a tensor
 * of integers, a non-finite value, a truncated file, a file that is not
 * there and an empty name are refused with exit 2 and a message naming the
 * tensor or the file, before any output is written; edgefit-sweep wants
 * weights for a text model.
 *
 * argv: edgefit-memfit, edgefit-layerwise, edgefit-sweep, the fixtures
 * folder.
 */
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

#include "edgefit/artifacts.h"
#include "run.h"

static const char *memfit, *layerwise, *sweep, *fixtures;
static char tmpdir[] = "/tmp/edgefit-weights-XXXXXX";

static void fixture(char *buf, size_t cap, const char *model)
{
    snprintf(buf, cap, "%s/%s/%s.safetensors", fixtures, model, model);
}

static void tmpfile_path(char *buf, size_t cap, const char *name)
{
    snprintf(buf, cap, "%s/%s", tmpdir, name);
}

/* Copy the tensors of a fixture into caller-owned arrays so that a test
 * can change them and save a variant. */
struct tensors {
    art_safetensors *st;
    struct art_tensor *t;
    size_t n;
};

static void load_fixture(const char *model, struct tensors *ts)
{
    char path[1024];
    fixture(path, sizeof path, model);
    struct art_diag d = {0};
    assert_int_equal(art_safetensors_load(path, &ts->st, &d), ART_OK);
    ts->n = art_safetensors_count(ts->st);
    ts->t = calloc(ts->n + 1, sizeof *ts->t);
    assert_non_null(ts->t);
    for (size_t i = 0; i < ts->n; i++) {
        ts->t[i] = *art_safetensors_tensor(ts->st, i);
    }
}

static void free_fixture(struct tensors *ts)
{
    free(ts->t);
    art_safetensors_destroy(ts->st);
}

static size_t find(const struct tensors *ts, const char *name)
{
    for (size_t i = 0; i < ts->n; i++) {
        if (strcmp(ts->t[i].name, name) == 0) {
            return i;
        }
    }
    fail_msg("no tensor %s", name);
    return 0;
}

static void save(const char *path, const struct art_tensor *t, size_t n)
{
    struct art_diag d = {0};
    assert_int_equal(art_safetensors_save(path, t, n, NULL, NULL, 0, &d),
                     ART_OK);
}

static void expect_rejected(const char *why, char *const argv[],
                            const char *needle)
{
    const char *bad = run_rejected(argv, needle);
    if (bad) {
        fail_msg("%s: %s", why, bad);
    }
}

/* The fixtures are accepted: the model's parameter count is unchanged by
 * its weights, and layerwise runs them. */
static void test_fixtures_accepted(void **state)
{
    (void)state;
    static const char *const models[] = {"resnet8", "ds-cnn",
                                         "mobilenetv1-0.25",
                                         "fc-autoencoder"};
    static const char *const params[] = {
        "\"parameter_count\": 77706", "\"parameter_count\": 22604",
        "\"parameter_count\": 210850", "\"parameter_count\": 265864"};
    for (size_t i = 0; i < 4; i++) {
        char w[1024];
        fixture(w, sizeof w, models[i]);
        char *argv[] = {(char *)memfit, "--model", (char *)models[i],
                        "--weights", w, "--batch", "1", "--format", "json",
                        NULL};
        struct run_result r;
        run_argv(argv, &r);
        if (r.status != 0) {
            fail_msg("%s: exit %d: %s", models[i], r.status, r.err);
        }
        if (!strstr(r.out, params[i])) {
            fail_msg("%s: no %s in %s", models[i], params[i], r.out);
        }
        run_free(&r);
    }
    /* The dense autoencoder runs through the executor with its weights. */
    char w[1024];
    fixture(w, sizeof w, "fc-autoencoder");
    char *argv[] = {(char *)layerwise, "--model", "fc-autoencoder",
                    "--weights", w, "--batch", "2", "--repeats", "1",
                    "--warmup", "0", "--min-sample-ms", "0", "--device",
                    "rpi4", "--format", "csv", "--quiet", NULL};
    struct run_result r;
    run_argv(argv, &r);
    if (r.status != 0) {
        fail_msg("layerwise: exit %d: %s", r.status, r.err);
    }
    assert_non_null(strstr(r.out, "fc10"));
    run_free(&r);
}

/* The same weights rounded to bfloat16 (top 16 bits of each float) are
 * read and widened. */
static void test_bf16_accepted(void **state)
{
    (void)state;
    struct tensors ts;
    load_fixture("fc-autoencoder", &ts);
    uint16_t *store[64] = {0};
    assert_true(ts.n <= 64);
    for (size_t i = 0; i < ts.n; i++) {
        struct art_tensor *t = &ts.t[i];
        if (t->dtype != ART_DTYPE_F32) {
            continue; /* num_batches_tracked stays int64 */
        }
        size_t n = 1;
        for (size_t d = 0; d < t->ndim; d++) {
            n *= (size_t)t->shape[d];
        }
        store[i] = malloc(n * sizeof(uint16_t));
        assert_non_null(store[i]);
        const unsigned char *b = t->data;
        for (size_t k = 0; k < n; k++) {
            /* little-endian float: its high half is bytes 2 and 3 */
            store[i][k] = (uint16_t)(b[4 * k + 2] | b[4 * k + 3] << 8);
        }
        t->dtype = ART_DTYPE_BF16;
        t->data = store[i];
    }
    char path[1024];
    tmpfile_path(path, sizeof path, "bf16.safetensors");
    save(path, ts.t, ts.n);
    char *argv[] = {(char *)memfit, "--model", "fc-autoencoder", "--weights",
                    path, "--format", "csv", NULL};
    struct run_result r;
    run_argv(argv, &r);
    if (r.status != 0) {
        fail_msg("bf16: exit %d: %s", r.status, r.err);
    }
    run_free(&r);
    for (size_t i = 0; i < 64; i++) {
        free(store[i]);
    }
    free_fixture(&ts);
    unlink(path);
}

static void test_rejected(void **state)
{
    (void)state;
    char out[512];
    snprintf(out, sizeof out, "%s/out", tmpdir);
    char resnet[1024], ae[1024];
    fixture(resnet, sizeof resnet, "resnet8");
    fixture(ae, sizeof ae, "fc-autoencoder");

    struct tensors ts;
    load_fixture("fc-autoencoder", &ts);
    char missing[1024], extra[1024], shape[1024], ints[1024], nan_[1024],
        trunc[1024];
    tmpfile_path(missing, sizeof missing, "missing.safetensors");
    tmpfile_path(extra, sizeof extra, "extra.safetensors");
    tmpfile_path(shape, sizeof shape, "shape.safetensors");
    tmpfile_path(ints, sizeof ints, "ints.safetensors");
    tmpfile_path(nan_, sizeof nan_, "nan.safetensors");
    tmpfile_path(trunc, sizeof trunc, "trunc.safetensors");

    /* bn5.running_var left out */
    const size_t var5 = find(&ts, "bn5.running_var");
    struct art_tensor keep = ts.t[var5];
    ts.t[var5] = ts.t[ts.n - 1];
    save(missing, ts.t, ts.n - 1);
    ts.t[var5] = keep;

    /* a tensor no layer has */
    static const float one[1] = {1.0f};
    ts.t[ts.n] = (struct art_tensor){.name = "fc11.weight",
                                     .dtype = ART_DTYPE_F32, .ndim = 1,
                                     .shape = {1}, .data = one};
    save(extra, ts.t, ts.n + 1);

    /* fc5.weight [8, 128] given as [16, 64] (same size) */
    const size_t fc5 = find(&ts, "fc5.weight");
    ts.t[fc5].shape[0] = 16;
    ts.t[fc5].shape[1] = 64;
    save(shape, ts.t, ts.n);
    ts.t[fc5].shape[0] = 8;
    ts.t[fc5].shape[1] = 128;

    /* fc10.bias as int32 */
    const size_t b10 = find(&ts, "fc10.bias");
    ts.t[b10].dtype = ART_DTYPE_I32;
    save(ints, ts.t, ts.n);
    ts.t[b10].dtype = ART_DTYPE_F32;

    /* a NaN in bn2.running_mean */
    const size_t m2 = find(&ts, "bn2.running_mean");
    float *mean = malloc(128 * sizeof(float));
    assert_non_null(mean);
    memcpy(mean, ts.t[m2].data, 128 * sizeof(float));
    mean[17] = NAN;
    ts.t[m2].data = mean;
    save(nan_, ts.t, ts.n);
    free(mean);
    free_fixture(&ts);

    /* the fixture cut short */
    FILE *in = fopen(ae, "rb");
    FILE *o = fopen(trunc, "wb");
    assert_non_null(in);
    assert_non_null(o);
    char buf[4096];
    size_t got = fread(buf, 1, sizeof buf, in);
    fwrite(buf, 1, got, o);
    fclose(in);
    fclose(o);

    char *m = (char *)memfit, *l = (char *)layerwise, *s = (char *)sweep;
    struct {
        const char *why;
        char *argv[12];
        const char *needle;
    } cases[] = {
        {"another model's file", {m, "--model", "ds-cnn", "--weights",
         resnet, "--out", out, NULL}, "conv1.weight"},
        {"another model's file (layerwise)", {l, "--model", "ds-cnn",
         "--weights", resnet, "--out", out, NULL}, "conv1.weight"},
        {"missing tensor", {m, "--model", "fc-autoencoder", "--weights",
         missing, "--out", out, NULL}, "bn5.running_var"},
        {"unused tensor", {m, "--model", "fc-autoencoder", "--weights",
         extra, "--out", out, NULL}, "fc11.weight"},
        {"wrong shape", {m, "--model", "fc-autoencoder", "--weights",
         shape, "--out", out, NULL}, "fc5.weight"},
        {"integer tensor", {m, "--model", "fc-autoencoder", "--weights",
         ints, "--out", out, NULL}, "fc10.bias"},
        {"not finite", {m, "--model", "fc-autoencoder", "--weights",
         nan_, "--out", out, NULL}, "bn2.running_mean"},
        {"truncated", {m, "--model", "fc-autoencoder", "--weights", trunc,
         "--out", out, NULL}, "trunc.safetensors"},
        {"no such file", {m, "--model", "fc-autoencoder", "--weights",
         "/nonexistent/w.safetensors", "--out", out, NULL},
         "No such file or directory"},
        {"empty name", {m, "--weights", "", "--out", out, NULL},
         "--weights"},
        {"text model without weights (sweep)", {s, "--model", "resnet8",
         "--out", out, NULL}, "--weights FILE is required"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        expect_rejected(cases[i].why, cases[i].argv, cases[i].needle);
        assert_int_equal(run_count_entries(out), -1);
    }
    unlink(missing);
    unlink(extra);
    unlink(shape);
    unlink(ints);
    unlink(nan_);
    unlink(trunc);
}

static int setup(void **state)
{
    (void)state;
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    run_rmdir(tmpdir);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 5) {
        fprintf(stderr, "usage: test-weights MEMFIT LAYERWISE SWEEP "
                        "FIXTURES\n");
        return 2;
    }
    memfit = argv[1];
    layerwise = argv[2];
    sweep = argv[3];
    fixtures = argv[4];
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fixtures_accepted),
        cmocka_unit_test(test_bf16_accepted),
        cmocka_unit_test(test_rejected),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
