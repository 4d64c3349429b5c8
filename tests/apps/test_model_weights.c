/*
 * A model's weights from PyTorch, run by the executor: each MLPerf Tiny
 * preset given the state_dict PyTorch saved for it (cli_model_load() with
 * --weights, the apps' path: safetensors read, batch norms folded by
 * libmemest) and run at fp32 on the inputs PyTorch ran must reproduce
 * PyTorch's outputs within 1e-4 of their largest magnitude
 * (tests/data/models/<preset>/test_data_set_0, written by
 * scripts/make-model-fixtures.py). The same preset with the executor's
 * seeded weights must not, or the comparison would prove nothing; the
 * ONNX export of the same network (model.onnx, weights as initializers)
 * must reproduce them too. And 16-bit files are widened exactly: a layer
 * of an F16 copy carries exactly the F16 values.
 *
 * argv[1]: the fixtures folder, tests/data/models; argv[2..]: the presets
 * to run (at least one).
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

#include "../max_seen.h"
#include "edgefit/artifacts.h"
#include "edgefit/kernels.h"
#include "edgefit/memest.h"
#include "edgefit/profile.h"
#include "cli.h"
#include "model.h"
#include "twin.h"
#include "weights.h"

static const char *fixtures;

static void check_preset(const char *name)
{
    char w[1024];
    snprintf(w, sizeof w, "%s/%s/%s.safetensors", fixtures, name, name);
    memest_model *m = NULL, *seeded = NULL;
    assert_int_equal(cli_model_load(name, w, &m), 0);
    assert_int_equal(memest_model_has_weights(m), 1);
    assert_int_equal(cli_model_load(name, NULL, &seeded), 0);
    assert_int_equal(memest_model_has_weights(seeded), 0);

    struct memest_owned_tensor x = {0}, ref = {0};
    twin_load_pb(fixtures, name, "input_0.pb", &x);
    twin_load_pb(fixtures, name, "output_0.pb", &ref);
    assert_int_equal(x.t.dim[0], 2); /* the batch PyTorch ran */
    assert_int_equal(ref.t.dim[0], 2);

    double scale = 0.0;
    const double err = twin_compare(m, MEMEST_FP32, &x.t, &ref.t, &scale);
    double seeded_scale = 0.0;
    const double seeded_err = twin_compare(seeded, MEMEST_FP32, &x.t, &ref.t,
                                              &seeded_scale);
    print_message("%-17s max |edgefit - PyTorch| %.3g of max |PyTorch| "
                  "%.3g (%.2g relative); seeded weights: %.3g\n",
                  name, err, scale, err / scale, seeded_err);
    assert_true(scale > 0.0);
    assert_true(err <= 1e-4 * scale);
    assert_true(seeded_err > 1e-2 * scale);

    /* The ONNX export of the same network carries the same weights as
     * initializers (batch norms folded by PyTorch's exporter or by the
     * importer): the same outputs. */
    char onnx_path[1024];
    snprintf(onnx_path, sizeof onnx_path, "%s/%s/model.onnx", fixtures,
             name);
    memest_model *onnx = NULL;
    assert_int_equal(cli_model_load(onnx_path, NULL, &onnx), 0);
    double onnx_scale = 0.0;
    const double onnx_err = twin_compare(onnx, MEMEST_FP32, &x.t, &ref.t,
                                            &onnx_scale);
    print_message("%-17s ONNX: max |edgefit - PyTorch| %.3g (%.2g "
                  "relative)\n", name, onnx_err, onnx_err / onnx_scale);
    assert_true(onnx_err <= 1e-4 * onnx_scale);
    memest_model_destroy(onnx);

    memest_owned_tensor_free(&x);
    memest_owned_tensor_free(&ref);
    memest_model_destroy(seeded);
    memest_model_destroy(m);
}

static const char *const *presets; /* argv[2..]: the presets to run */
static int preset_count;

static void test_presets(void **state)
{
    (void)state;
    for (int i = 0; i < preset_count; i++) {
        check_preset(presets[i]);
    }
}

/* An F16 copy of the autoencoder's state_dict: fc10 (no batch norm) then
 * holds exactly the half-precision values, widened. */
static void test_f16_widened_exactly(void **state)
{
    (void)state;
    char src[1024], dst[] = "/tmp/edgefit-f16-XXXXXX";
    snprintf(src, sizeof src, "%s/fc-autoencoder/fc-autoencoder.safetensors",
             fixtures);
    const int fd = mkstemp(dst);
    assert_true(fd >= 0);
    close(fd);
    art_safetensors *st = NULL;
    assert_int_equal(art_safetensors_load(src, &st, NULL), ART_OK);
    const size_t n = art_safetensors_count(st);
    struct art_tensor *t = calloc(n, sizeof *t);
    uint16_t **half = calloc(n, sizeof *half);
    assert_non_null(t);
    assert_non_null(half);
    for (size_t i = 0; i < n; i++) {
        t[i] = *art_safetensors_tensor(st, i);
        if (t[i].dtype != ART_DTYPE_F32) {
            continue; /* num_batches_tracked */
        }
        size_t count = 1;
        for (size_t d = 0; d < t[i].ndim; d++) {
            count *= (size_t)t[i].shape[d];
        }
        half[i] = malloc(count * sizeof **half);
        assert_non_null(half[i]);
        const unsigned char *b = t[i].data;
        for (size_t k = 0; k < count; k++) {
            uint32_t u = (uint32_t)b[4 * k] | (uint32_t)b[4 * k + 1] << 8 |
                         (uint32_t)b[4 * k + 2] << 16 |
                         (uint32_t)b[4 * k + 3] << 24;
            float f;
            memcpy(&f, &u, sizeof f);
            half[i][k] = kern_f32_to_f16_1(f);
        }
        t[i].dtype = ART_DTYPE_F16;
        t[i].data = half[i];
    }
    assert_int_equal(art_safetensors_save(dst, t, n, NULL, NULL, 0, NULL),
                     ART_OK);

    memest_model *m = NULL;
    assert_int_equal(cli_model_load("fc-autoencoder", dst, &m), 0);
    const struct memest_layer *fc10 =
        memest_model_layer(m, memest_model_layer_count(m) - 1);
    assert_string_equal(fc10->name, "fc10");
    const uint16_t *w = NULL, *b = NULL;
    for (size_t i = 0; i < n; i++) {
        if (strcmp(t[i].name, "fc10.weight") == 0) {
            w = half[i];
        } else if (strcmp(t[i].name, "fc10.bias") == 0) {
            b = half[i];
        }
    }
    assert_non_null(w);
    assert_non_null(b);
    for (size_t k = 0; k < fc10->weight_count; k++) {
        if (fc10->weight[k] != kern_f16_to_f32_1(w[k])) {
            fail_msg("fc10.weight[%zu]: %.9g, not the half %.9g", k,
                     fc10->weight[k], kern_f16_to_f32_1(w[k]));
        }
    }
    for (size_t k = 0; k < fc10->bias_count; k++) {
        assert_true(fc10->bias[k] == kern_f16_to_f32_1(b[k]));
    }
    memest_model_destroy(m);
    for (size_t i = 0; i < n; i++) {
        free(half[i]);
    }
    free(half);
    free(t);
    art_safetensors_destroy(st);
    unlink(dst);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: test-model-weights FIXTURES PRESET...\n");
        return 2;
    }
    fixtures = argv[1];
    presets = (const char *const *)argv + 2;
    preset_count = argc - 2;
    cli_set_program("test-model-weights");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_presets),
        cmocka_unit_test(test_f16_widened_exactly),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
