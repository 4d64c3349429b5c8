/*
 * Quantised ONNX import: the fixtures of tests/data/onnx/qdq (QDQ and
 * QOperator models made by scripts/make-qdq-fixtures.py with PyTorch and
 * hand-placed QuantizeLinear/DequantizeLinear, as ONNX Runtime's
 * quantize_static writes them) import as their float graph, each tensor
 * carrying exactly the scale and zero point the file gives it, the
 * per-channel weight scales kept and the weights and biases dequantised
 * bit for bit as the script computed them (expect.txt, written from the
 * values the script put in the file); and every malformed quantisation of
 * tests/data/onnx/bad/qdq_*.onnx is refused naming the node.
 *
 * usage: test-memest-qdq FIXTURES (tests/data/onnx)
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "edgefit/memest.h"

static const char *fixtures;

static size_t layer_named(const memest_model *m, const char *name)
{
    for (size_t i = 0; i < memest_model_layer_count(m); i++) {
        if (strcmp(memest_model_layer(m, i)->name, name) == 0) {
            return i;
        }
    }
    fail_msg("no layer named '%s'", name);
    return SIZE_MAX;
}

/* n floats of the line after its head, each %.9g of a float32 (exact) */
static float *read_floats(FILE *f, size_t n)
{
    float *v = calloc(n ? n : 1, sizeof *v);
    assert_non_null(v);
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(fscanf(f, "%f", &v[i]), 1);
    }
    return v;
}

/* Check one fixture against its expect.txt; returns the tensors checked */
static size_t check_fixture(const char *name)
{
    char path[1024], word[32], layer[128];
    memest_model *m = NULL;
    struct memest_diag d;
    struct memest_quant q;
    size_t tensors = 0;
    FILE *f;
    int st;

    snprintf(path, sizeof path, "%s/qdq/%s/model.onnx", fixtures, name);
    st = memest_model_load(path, &m, &d);
    if (st != MEMEST_OK) {
        fail_msg("%s: %s (%s:%d)", name, d.message, d.source, d.line);
    }
    snprintf(path, sizeof path, "%s/qdq/%s/expect.txt", fixtures, name);
    f = fopen(path, "r");
    assert_non_null(f);
    const size_t ni = memest_model_input_count(m);
    while (fscanf(f, "%31s %127s", word, layer) == 2) {
        if (strcmp(word, "input") == 0 || strcmp(word, "tensor") == 0) {
            float scale;
            int zp, u8;
            size_t t;
            assert_int_equal(fscanf(f, "%f %d %d", &scale, &zp, &u8), 3);
            t = strcmp(word, "input") == 0 ? 0 : ni + layer_named(m, layer);
            assert_int_equal(memest_model_tensor_quant(m, t, &q), MEMEST_OK);
            if (q.scale != scale || q.zero_point != zp - (u8 ? 128 : 0) ||
                q.is_unsigned != u8) {
                fail_msg("%s: %s %s carries scale %.9g zero point %d "
                         "unsigned %d; the file gives %.9g %d %d", name,
                         word, layer, (double)q.scale, q.zero_point,
                         q.is_unsigned, (double)scale, zp, u8);
            }
            tensors++;
        } else {
            size_t n, got = 0;
            const size_t l = layer_named(m, layer);
            const struct memest_layer *L = memest_model_layer(m, l);
            const float *have;
            float *want;
            assert_int_equal(fscanf(f, "%zu", &n), 1);
            want = read_floats(f, n);
            if (strcmp(word, "wscales") == 0) {
                have = memest_model_weight_scales(m, l, &got);
            } else if (strcmp(word, "weight") == 0) {
                have = L->weight;
                got = (size_t)L->weight_count;
            } else {
                assert_string_equal(word, "bias");
                have = L->bias;
                got = (size_t)L->bias_count;
            }
            assert_non_null(have);
            assert_int_equal(got, n);
            for (size_t i = 0; i < n; i++) {
                if (have[i] != want[i]) {
                    fail_msg("%s: %s of %s [%zu] is %.9g, the file's is "
                             "%.9g", name, word, layer, i, (double)have[i],
                             (double)want[i]);
                }
            }
            free(want);
        }
    }
    fclose(f);
    /* every tensor (input and each layer's output) carries params: the
     * expect file names each once */
    assert_int_equal(tensors, memest_model_tensor_count(m));
    assert_int_equal(memest_model_is_quantized(m), 1);
    memest_model_destroy(m);
    return tensors;
}

static void test_qdq_cnn(void **state)
{
    (void)state;
    /* x, conv1, pool, conv2, add, relu, flatten, fc: no layer for any of
     * the 8 QuantizeLinear/DequantizeLinear pairs */
    assert_int_equal(check_fixture("cnn"), 8);
}

static void test_qdq_concat(void **state)
{
    (void)state;
    assert_int_equal(check_fixture("concat"), 8);
}

static void test_qdq_depthwise(void **state)
{
    (void)state;
    assert_int_equal(check_fixture("depthwise"), 7);
}

/* the depthwise conv's weights with one scale per tensor: the model keeps
 * it repeated per output channel */
static void test_qdq_depthwise_per_tensor(void **state)
{
    (void)state;
    assert_int_equal(check_fixture("depthwise_pt"), 7);
}

/* opset 10: no axis, every scale per tensor */
static void test_qdq_opset10(void **state)
{
    (void)state;
    assert_int_equal(check_fixture("opset10"), 5);
}

static void test_qdq_uint8(void **state)
{
    (void)state;
    assert_int_equal(check_fixture("uint8"), 6);
}

/* x, stem, expand, dw, project, add, dw2 */
static void test_qdq_invres(void **state)
{
    (void)state;
    assert_int_equal(check_fixture("invres"), 7);
}

static void test_qoperator(void **state)
{
    (void)state;
    assert_int_equal(check_fixture("qop"), 7);
}

/* The layers a QDQ model becomes: the float graph, kinds in order. */
static void test_qdq_layers(void **state)
{
    static const enum memest_kind want[] = {
        MEMEST_KIND_CONV2D, MEMEST_KIND_MAXPOOL, MEMEST_KIND_CONV2D,
        MEMEST_KIND_ADD,    MEMEST_KIND_ACTIVATION, MEMEST_KIND_FLATTEN,
        MEMEST_KIND_DENSE};
    char path[1024];
    memest_model *m = NULL;
    struct memest_diag d;
    (void)state;
    snprintf(path, sizeof path, "%s/qdq/cnn/model.onnx", fixtures);
    assert_int_equal(memest_model_load(path, &m, &d), MEMEST_OK);
    assert_int_equal(memest_model_layer_count(m), 7);
    for (size_t i = 0; i < 7; i++) {
        assert_int_equal(memest_model_layer(m, i)->kind, want[i]);
    }
    /* the Relu after the Add, between two QDQ pairs, is a layer of its
     * own (the file rounds the add's output first): not fused */
    assert_int_equal(memest_model_layer(m, 3)->act, MEMEST_ACT_NONE);
    assert_int_equal(memest_model_layer(m, 4)->act, MEMEST_ACT_RELU);
    memest_model_destroy(m);
}

static void refused(const char *file, int status, const char *node,
                    const char *what)
{
    char path[1024];
    memest_model *m = NULL;
    struct memest_diag d;
    int st;
    snprintf(path, sizeof path, "%s/bad/%s.onnx", fixtures, file);
    st = memest_model_load(path, &m, &d);
    assert_null(m);
    if (st != status || strstr(d.message, node) == NULL ||
        strstr(d.message, what) == NULL) {
        fail_msg("%s: status %d, message '%s'; expected %d naming %s and "
                 "'%s'", file, st, d.message, status, node, what);
    }
    assert_true(d.line > 0); /* the node's index + 1 */
}

static void test_qdq_refusals(void **state)
{
    (void)state;
    refused("qdq_zero_scale", MEMEST_E_RANGE, "'quant_x'",
            "scale 0 is not finite and positive");
    refused("qdq_negative_scale", MEMEST_E_RANGE, "'quant_x'",
            "scale -0.05 is not finite and positive");
    refused("qdq_nan_scale", MEMEST_E_RANGE, "'quant_x'",
            "not finite and positive");
    refused("qdq_zero_point_range", MEMEST_E_RANGE, "'quant_x'",
            "zero point 200 is out of range for int8 (-128 to 127)");
    refused("qdq_axis_length", MEMEST_E_SHAPE, "'dequant_w'",
            "has 3 scales for axis 0 of size 4");
    refused("qdq_pair_differs", MEMEST_E_PARSE, "'dequant_x'",
            "differ from those of");
    refused("qdq_int16", MEMEST_E_PARSE, "'quant_x'",
            "int16; supported are int8 and uint8");
    refused("qdq_per_axis_opset10", MEMEST_E_PARSE, "'dequant_w'",
            "per-axis quantisation needs opset 13 (the model imports 10)");
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_qdq_cnn),
        cmocka_unit_test(test_qdq_concat),
        cmocka_unit_test(test_qdq_depthwise),
        cmocka_unit_test(test_qdq_depthwise_per_tensor),
        cmocka_unit_test(test_qdq_opset10),
        cmocka_unit_test(test_qdq_uint8), cmocka_unit_test(test_qdq_invres),
        cmocka_unit_test(test_qoperator),
        cmocka_unit_test(test_qdq_layers),
        cmocka_unit_test(test_qdq_refusals),
    };
    if (argc < 2) {
        fprintf(stderr, "usage: %s FIXTURES\n", argv[0]);
        return 2;
    }
    fixtures = argv[1];
    if (!memest_onnx_available()) {
        printf("# skipped: this build reads no ONNX\n");
        return 77;
    }
    return cmocka_run_group_tests(tests, NULL, NULL);
}
