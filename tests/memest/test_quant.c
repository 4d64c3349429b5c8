/*
 * The quantisation a model carries (memest_model_set_tensor_quant and
 * friends): values kept exactly as given, every bad value refused with
 * its status and the model unchanged, the per-channel weight scales tied
 * to the layer's output channels, and memest_model_is_quantized true only
 * when every tensor carries params.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <math.h>
#include <string.h>

#include "edgefit/memest.h"

static memest_model *parse_ok(const char *text)
{
    memest_model *m = NULL;
    struct memest_diag d;
    int st = memest_model_parse(text, &m, &d);
    if (st != MEMEST_OK) {
        fail_msg("parse: %s at %d:%d", d.message, d.line, d.column);
    }
    return m;
}

/* input, conv (4 channels), relu, flatten, dense (3): five tensors */
static const char net[] = "input 2x5x5\n"
                          "conv2d 4 k=3 name=c\n"
                          "relu name=r\n"
                          "flatten name=f\n"
                          "dense 3 name=d\n";

static void test_tensor_quant_round_trip(void **state)
{
    (void)state;
    memest_model *m = parse_ok(net);
    struct memest_quant q = {0.0f, 0, 0};
    struct memest_quant in = {0.0125f, -3, 0};
    struct memest_quant u8 = {0.5f, 127 - 128, 1}; /* uint8 zero point 127 */
    const size_t n = memest_model_tensor_count(m);

    assert_int_equal(n, 5);
    for (size_t t = 0; t < n; t++) {
        assert_int_equal(memest_model_tensor_quant(m, t, &q),
                         MEMEST_E_NOTFOUND);
    }
    assert_int_equal(memest_model_is_quantized(m), 0);
    assert_int_equal(memest_model_set_tensor_quant(m, 0, &in), MEMEST_OK);
    assert_int_equal(memest_model_set_tensor_quant(m, 2, &u8), MEMEST_OK);
    assert_int_equal(memest_model_tensor_quant(m, 0, &q), MEMEST_OK);
    assert_true(q.scale == 0.0125f);
    assert_int_equal(q.zero_point, -3);
    assert_int_equal(q.is_unsigned, 0);
    assert_int_equal(memest_model_tensor_quant(m, 2, &q), MEMEST_OK);
    assert_true(q.scale == 0.5f);
    assert_int_equal(q.zero_point, -1);
    assert_int_equal(q.is_unsigned, 1);
    /* the others still carry none */
    assert_int_equal(memest_model_tensor_quant(m, 1, &q), MEMEST_E_NOTFOUND);
    assert_int_equal(memest_model_is_quantized(m), 0);
    for (size_t t = 0; t < n; t++) {
        assert_int_equal(memest_model_set_tensor_quant(m, t, &in), MEMEST_OK);
    }
    assert_int_equal(memest_model_is_quantized(m), 1);
    /* NULL clears one; the model is no longer quantised whole */
    assert_int_equal(memest_model_set_tensor_quant(m, 3, NULL), MEMEST_OK);
    assert_int_equal(memest_model_tensor_quant(m, 3, &q), MEMEST_E_NOTFOUND);
    assert_int_equal(memest_model_is_quantized(m), 0);
    memest_model_destroy(m);
}

static void test_tensor_quant_refusals(void **state)
{
    (void)state;
    memest_model *m = parse_ok(net);
    struct memest_quant good = {0.25f, 10, 0};
    struct memest_quant q;
    const struct memest_quant bad[] = {
        {0.0f, 0, 0},      {-1.0f, 0, 0},  {NAN, 0, 0},
        {INFINITY, 0, 0},  {0.1f, 128, 0}, {0.1f, -129, 0},
        {0.1f, 255, 1},    {0.1f, 0, 2},
    };

    assert_int_equal(memest_model_set_tensor_quant(m, 1, &good), MEMEST_OK);
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        assert_int_equal(memest_model_set_tensor_quant(m, 1, &bad[k]),
                         MEMEST_E_RANGE);
        /* refused: what was there stays */
        assert_int_equal(memest_model_tensor_quant(m, 1, &q), MEMEST_OK);
        assert_true(q.scale == 0.25f);
        assert_int_equal(q.zero_point, 10);
    }
    /* the extremes of int8's domain are accepted */
    good.zero_point = -128;
    assert_int_equal(memest_model_set_tensor_quant(m, 2, &good), MEMEST_OK);
    good.zero_point = 127;
    assert_int_equal(memest_model_set_tensor_quant(m, 2, &good), MEMEST_OK);
    assert_int_equal(memest_model_set_tensor_quant(m, 5, &good),
                     MEMEST_E_RANGE);
    assert_int_equal(memest_model_tensor_quant(m, 5, &q), MEMEST_E_RANGE);
    assert_int_equal(memest_model_set_tensor_quant(NULL, 0, &good),
                     MEMEST_E_INVALID);
    assert_int_equal(memest_model_tensor_quant(NULL, 0, &q),
                     MEMEST_E_INVALID);
    assert_int_equal(memest_model_tensor_quant(m, 0, NULL), MEMEST_E_INVALID);
    assert_int_equal(memest_model_is_quantized(NULL), 0);
    memest_model_destroy(m);
}

static void test_weight_scales(void **state)
{
    (void)state;
    memest_model *m = parse_ok(net);
    const float conv_s[4] = {0.5f, 0.25f, 1e-3f, 7.0f};
    const float dense_s[3] = {0.1f, 0.2f, 0.3f};
    float bad[4] = {0.5f, 0.25f, 1e-3f, 7.0f};
    size_t n = 99;
    const float *got;

    assert_null(memest_model_weight_scales(m, 0, &n));
    assert_int_equal(n, 0);
    assert_int_equal(memest_model_set_weight_scales(m, 0, conv_s, 4),
                     MEMEST_OK);
    assert_int_equal(memest_model_set_weight_scales(m, 3, dense_s, 3),
                     MEMEST_OK);
    got = memest_model_weight_scales(m, 0, &n);
    assert_non_null(got);
    assert_int_equal(n, 4);
    assert_memory_equal(got, conv_s, sizeof conv_s);
    assert_true(got != conv_s); /* a copy */
    got = memest_model_weight_scales(m, 3, &n);
    assert_int_equal(n, 3);
    assert_memory_equal(got, dense_s, sizeof dense_s);
    /* n must be the layer's output channels */
    assert_int_equal(memest_model_set_weight_scales(m, 0, conv_s, 3),
                     MEMEST_E_SHAPE);
    assert_int_equal(memest_model_set_weight_scales(m, 3, conv_s, 4),
                     MEMEST_E_SHAPE);
    /* every scale finite and > 0 */
    bad[2] = 0.0f;
    assert_int_equal(memest_model_set_weight_scales(m, 0, bad, 4),
                     MEMEST_E_RANGE);
    bad[2] = -1.0f;
    assert_int_equal(memest_model_set_weight_scales(m, 0, bad, 4),
                     MEMEST_E_RANGE);
    bad[2] = NAN;
    assert_int_equal(memest_model_set_weight_scales(m, 0, bad, 4),
                     MEMEST_E_RANGE);
    bad[2] = INFINITY;
    assert_int_equal(memest_model_set_weight_scales(m, 0, bad, 4),
                     MEMEST_E_RANGE);
    /* refused: the earlier scales stay */
    got = memest_model_weight_scales(m, 0, &n);
    assert_int_equal(n, 4);
    assert_memory_equal(got, conv_s, sizeof conv_s);
    /* a relu or flatten has no weights to scale */
    assert_int_equal(memest_model_set_weight_scales(m, 1, conv_s, 4),
                     MEMEST_E_INVALID);
    assert_int_equal(memest_model_set_weight_scales(m, 4, conv_s, 4),
                     MEMEST_E_RANGE);
    assert_int_equal(memest_model_set_weight_scales(m, 0, NULL, 4),
                     MEMEST_E_INVALID);
    /* NULL, 0 clears */
    assert_int_equal(memest_model_set_weight_scales(m, 0, NULL, 0),
                     MEMEST_OK);
    assert_null(memest_model_weight_scales(m, 0, &n));
    assert_int_equal(n, 0);
    assert_null(memest_model_weight_scales(m, 9, NULL));
    memest_model_destroy(m);
}

static void test_notfound_text(void **state)
{
    (void)state;
    assert_string_equal(memest_strerror(MEMEST_E_NOTFOUND), "not found");
    assert_string_not_equal(memest_strerror(MEMEST_E_NOTFOUND),
                            memest_strerror(-1));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tensor_quant_round_trip),
        cmocka_unit_test(test_tensor_quant_refusals),
        cmocka_unit_test(test_weight_scales),
        cmocka_unit_test(test_notfound_text),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
