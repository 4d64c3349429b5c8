/*
 * LSTM and GRU keyword spotters from PyTorch (tests/data/onnx/torch_lstm_kws,
 * torch_gru_kws, torch_bigru, written by scripts/make-rnn-fixtures.py):
 * the text model of each (model.txt: two lstm or gru lines and a dense)
 * with the state_dict PyTorch saved (weights.safetensors, loaded the
 * apps' way by cli_model_load) counts exactly (parameters: PyTorch's sum
 * of numel, printed by the script; MACs: dirs * T * G * (D + H) * H per
 * recurrent layer plus the dense layer's) and, run at fp32 on the input
 * PyTorch ran, reproduces PyTorch's output within 1e-4 of its largest
 * magnitude; with the executor's seeded weights it must not. The 16-bit
 * and int8 paths run too and stay near (a loose bound: they round). The
 * ONNX export of each (model.onnx) imports with the same counts and
 * reproduces the same output.
 *
 * The keyword transformer preset (kwt) with its PyTorch twin's weights
 * (tests/data/seq-presets/kwt, scripts/make-seq-preset-fixtures.py) and
 * that twin's ONNX export (model.onnx beside them): the same parameter
 * and MAC counts, and the same outputs at fp32 -- each other's within
 * 1e-4 of the largest, and PyTorch's.
 *
 * argv[1]: tests/data/onnx; argv[2]: tests/data/seq-presets.
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

#include "../max_seen.h"
#include "edgefit/memest.h"
#include "edgefit/profile.h"
#include "cli.h"
#include "model.h"
#include "twin.h"

static const char *fixtures;
static const char *presets;

/* Run m at fp32 on x; the outputs, n_out of them (the caller frees). */
static float *run_fp32(const memest_model *m, const struct memest_tensor *x,
                       size_t n_out)
{
    struct prof_exec_opts eo;
    prof_exec_opts_init(&eo);
    eo.batch = x->dim[0];
    prof_exec *ex = NULL;
    struct prof_diag d = {0};
    if (prof_exec_create(m, &eo, &ex, &d) != PROF_OK) {
        fail_msg("%s: %s", memest_model_name(m), d.message);
    }
    assert_int_equal(prof_exec_input_count(ex), twin_elements(x));
    assert_int_equal(prof_exec_output_count(ex), n_out);
    float *y = calloc(n_out, sizeof *y);
    assert_non_null(y);
    assert_int_equal(prof_exec_run(ex, x->data, twin_elements(x), y, n_out),
                     PROF_OK);
    prof_exec_destroy(ex);
    return y;
}

struct spotter {
    const char *name;
    uint64_t params; /* PyTorch's sum(p.numel()) */
    uint64_t gates, dirs;
    int time_major; /* the ONNX input is [T, N, D] (no batch_first) */
};

/* x [T, N, D] as [N, T, D] in buf (the executor's order) */
static struct memest_tensor batch_first(const struct memest_tensor *x,
                                        float *buf)
{
    const size_t T = (size_t)x->dim[0], N = (size_t)x->dim[1],
                 D = (size_t)x->dim[2];
    for (size_t t = 0; t < T; t++) {
        for (size_t n = 0; n < N; n++) {
            memcpy(buf + (n * T + t) * D, x->data + (t * N + n) * D,
                   D * sizeof *buf);
        }
    }
    struct memest_tensor b = *x;
    b.dim[0] = N;
    b.dim[1] = T;
    b.data = buf;
    return b;
}

/* T = 49 steps of D = 10 features, H = 64, two layers, dense to 12 */
static uint64_t macs_of(const struct spotter *s)
{
    const uint64_t T = 49, D = 10, H = 64;
    return s->dirs * T * s->gates * (D + H) * H +
           s->dirs * T * s->gates * (s->dirs * H + H) * H +
           s->dirs * H * 12;
}

static void check(const struct spotter *s)
{
    char txt[1024], w[1024];
    snprintf(txt, sizeof txt, "%s/%s/model.txt", fixtures, s->name);
    snprintf(w, sizeof w, "%s/%s/weights.safetensors", fixtures, s->name);
    memest_model *m = NULL, *seeded = NULL;
    assert_int_equal(cli_model_load(txt, w, &m), 0);
    assert_int_equal(memest_model_has_weights(m), 1);
    assert_int_equal(cli_model_load(txt, NULL, &seeded), 0);
    assert_int_equal(memest_model_parameter_count(m), s->params);
    uint64_t macs = 0;
    for (size_t i = 0; i < memest_model_layer_count(m); i++) {
        macs += memest_model_layer(m, i)->macs_per_sample;
    }
    assert_int_equal(macs, macs_of(s));

    struct memest_owned_tensor x = {0}, ref = {0};
    twin_load_pb(fixtures, s->name, "input_0.pb", &x);
    twin_load_pb(fixtures, s->name, "output_0.pb", &ref);
    float *moved = NULL;
    if (s->time_major) {
        /* PyTorch's input as the file holds it, [49, 2, 10]: the models
         * take it batch first; read as it lies, the samples would mix
         * (the check below that it then fails shows the move matters) */
        assert_int_equal(x.t.rank, 3);
        assert_int_equal(x.t.dim[0], 49);
        moved = malloc(twin_elements(&x.t) * sizeof *moved);
        assert_non_null(moved);
        struct memest_tensor as_is = x.t;
        as_is.dim[0] = x.t.dim[1];
        as_is.dim[1] = x.t.dim[0];
        double sc = 0.0;
        const double e = twin_compare(m, MEMEST_FP32, &as_is, &ref.t, &sc);
        assert_true(e > 1e-2 * sc);
        x.t = batch_first(&x.t, moved);
    }
    double scale = 0.0, seeded_scale = 0.0;
    const double err = twin_compare(m, MEMEST_FP32, &x.t, &ref.t, &scale);
    const double seeded_err = twin_compare(seeded, MEMEST_FP32, &x.t,
                                              &ref.t, &seeded_scale);
    print_message("%-15s max |edgefit - PyTorch| %.3g of %.3g (%.2g "
                  "relative); seeded weights %.3g\n", s->name, err, scale,
                  err / scale, seeded_err);
    assert_true(scale > 0.0);
    assert_true(err <= 1e-4 * scale);
    assert_true(seeded_err > 1e-2 * scale);
    static const enum memest_precision low[] = {MEMEST_FP16, MEMEST_BF16,
                                                MEMEST_INT8_DYNAMIC};
    for (size_t k = 0; k < sizeof low / sizeof low[0]; k++) {
        double sc = 0.0;
        const double e = twin_compare(m, low[k], &x.t, &ref.t, &sc);
        print_message("%-15s %s: %.3g relative\n", s->name,
                      memest_precision_name(low[k]), e / sc);
        assert_true(e <= 0.1 * sc);
    }
    /* The ONNX export of the same network (weights as initializers,
     * gates in ONNX's order, the Transpose/Squeeze chains PyTorch wraps
     * the nodes in): the same counts and the same outputs. */
    char onnx_path[1024];
    snprintf(onnx_path, sizeof onnx_path, "%s/%s/model.onnx", fixtures,
             s->name);
    memest_model *onnx = NULL;
    assert_int_equal(cli_model_load(onnx_path, NULL, &onnx), 0);
    assert_int_equal(memest_model_parameter_count(onnx), s->params);
    /* the file's batch: axis 1 of a time-major input; the output is
     * batch first (logits [N, 12]) either way */
    assert_int_equal(memest_model_input_batch_axis(onnx, 0),
                     s->time_major ? 1 : 0);
    assert_int_equal(memest_model_output_batch_axis(onnx), 0);
    assert_int_equal(memest_model_input_shape(onnx).dim[0], 49);
    assert_int_equal(memest_model_input_shape(onnx).dim[1], 10);
    uint64_t onnx_macs = 0;
    for (size_t i = 0; i < memest_model_layer_count(onnx); i++) {
        onnx_macs += memest_model_layer(onnx, i)->macs_per_sample;
    }
    assert_int_equal(onnx_macs, macs_of(s));
    double onnx_scale = 0.0;
    const double onnx_err = twin_compare(onnx, MEMEST_FP32, &x.t, &ref.t,
                                            &onnx_scale);
    print_message("%-15s ONNX: max |edgefit - PyTorch| %.3g (%.2g "
                  "relative)\n", s->name, onnx_err, onnx_err / onnx_scale);
    assert_true(onnx_err <= 1e-4 * onnx_scale);
    memest_model_destroy(onnx);

    free(moved);
    memest_owned_tensor_free(&x);
    memest_owned_tensor_free(&ref);
    memest_model_destroy(seeded);
    memest_model_destroy(m);
}

static uint64_t macs_sum(const memest_model *m)
{
    uint64_t macs = 0;
    for (size_t i = 0; i < memest_model_layer_count(m); i++) {
        macs += memest_model_layer(m, i)->macs_per_sample;
    }
    return macs;
}

/* The kwt preset and its ONNX twin, the same network and weights. */
static void test_kwt_twin(void **state)
{
    (void)state;
    char w[1024], onnx_path[1024], path[1024];
    snprintf(w, sizeof w, "%s/kwt/weights.safetensors", presets);
    snprintf(onnx_path, sizeof onnx_path, "%s/kwt/model.onnx", presets);
    memest_model *m = NULL, *onnx = NULL;
    assert_int_equal(cli_model_load("kwt", w, &m), 0);
    assert_int_equal(memest_model_has_weights(m), 1);
    assert_int_equal(cli_model_load(onnx_path, NULL, &onnx), 0);
    /* PyTorch's sum of numel for the KWT module of the script */
    assert_int_equal(memest_model_parameter_count(m), 209868);
    assert_int_equal(memest_model_parameter_count(onnx), 209868);
    assert_int_equal(macs_sum(onnx), macs_sum(m));

    struct memest_owned_tensor x = {0}, ref = {0};
    struct memest_diag d;
    snprintf(path, sizeof path, "%s/kwt/test_data_set_0/input_0.pb",
             presets);
    assert_int_equal(memest_tensor_load_pb(path, &x, &d), MEMEST_OK);
    snprintf(path, sizeof path, "%s/kwt/test_data_set_0/output_0.pb",
             presets);
    assert_int_equal(memest_tensor_load_pb(path, &ref, &d), MEMEST_OK);
    const size_t n = twin_elements(&ref.t);
    float *yp = run_fp32(m, &x.t, n), *yo = run_fp32(onnx, &x.t, n);
    double twin = 0.0, torch = 0.0, big = 0.0;
    for (size_t i = 0; i < n; i++) {
        twin = max_seen(twin, fabs((double)yp[i] - yo[i]));
        torch = max_seen(torch, fabs((double)yo[i] - ref.t.data[i]));
        big = max_seen(big, fabs((double)ref.t.data[i]));
    }
    print_message("kwt: max |preset - ONNX twin| %.3g, |ONNX twin - "
                  "PyTorch| %.3g, of %.3g; %llu MACs per sample\n", twin,
                  torch, big, (unsigned long long)macs_sum(m));
    assert_true(big > 0.0);
    assert_true(twin <= 1e-4 * big);
    assert_true(torch <= 1e-4 * big);
    free(yp);
    free(yo);
    memest_owned_tensor_free(&x);
    memest_owned_tensor_free(&ref);
    memest_model_destroy(onnx);
    memest_model_destroy(m);
}

static void test_lstm(void **state)
{
    static const struct spotter s = {"torch_lstm_kws", 53516, 4, 1, 0};
    (void)state;
    check(&s);
}

static void test_gru(void **state)
{
    static const struct spotter s = {"torch_gru_kws", 40332, 3, 1, 0};
    (void)state;
    check(&s);
}

static void test_bigru(void **state)
{
    static const struct spotter s = {"torch_bigru", 105228, 3, 2, 0};
    (void)state;
    check(&s);
}

/* The same LSTM spotter reading h_n[-1] (ONNX: each layer's Y_h, a
 * Concat, a Gather) instead of y[:, -1]: the same text model. */
static void test_lstm_hn(void **state)
{
    static const struct spotter s = {"torch_lstm_hn", 53516, 4, 1, 0};
    (void)state;
    check(&s);
}

/* The same spotters without batch_first (PyTorch's default): the ONNX
 * graph input is time-major [49, N, 10], read straight by the first
 * LSTM/GRU node; the LSTM's output is y[-1] (a Gather of axis 0), the
 * GRU's h_n[-1]. The text twins are the batch-first ones. */
static void test_lstm_time_major(void **state)
{
    static const struct spotter s = {"torch_lstm_tm", 53516, 4, 1, 1};
    (void)state;
    check(&s);
}

static void test_gru_time_major(void **state)
{
    static const struct spotter s = {"torch_gru_tm", 40332, 3, 1, 1};
    (void)state;
    check(&s);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s FIXTURES PRESET-FIXTURES\n", argv[0]);
        return 2;
    }
    fixtures = argv[1];
    presets = argv[2];
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lstm),
        cmocka_unit_test(test_gru),
        cmocka_unit_test(test_bigru),
        cmocka_unit_test(test_lstm_hn),
        cmocka_unit_test(test_lstm_time_major),
        cmocka_unit_test(test_gru_time_major),
        cmocka_unit_test(test_kwt_twin),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
