/* Precision and optimizer names, aliases and sizes; status texts. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <string.h>

#include "edgefit/memest.h"

struct alias_case {
    const char *text;
    enum memest_precision p;
    unsigned bytes;
    const char *name;
    const char *mode;
};

static void test_precision_aliases(void **state)
{
    static const struct alias_case cases[] = {
        {"fp64", MEMEST_FP64, 8, "fp64", "float64"},
        {"float64", MEMEST_FP64, 8, "fp64", "float64"},
        {"fp32", MEMEST_FP32, 4, "fp32", "float32"},
        {"float32", MEMEST_FP32, 4, "fp32", "float32"},
        {"fp16", MEMEST_FP16, 2, "fp16", "float16"},
        {"float16", MEMEST_FP16, 2, "fp16", "float16"},
        {"half", MEMEST_FP16, 2, "fp16", "float16"},
        {"bf16", MEMEST_BF16, 2, "bf16", "bfloat16"},
        {"bfloat16", MEMEST_BF16, 2, "bf16", "bfloat16"},
        {"int8", MEMEST_INT8, 1, "int8", "int8"},
        {"int8-dynamic", MEMEST_INT8_DYNAMIC, 1, "int8-dynamic",
         "int8-dynamic"},
        {"INT8-Dynamic", MEMEST_INT8_DYNAMIC, 1, "int8-dynamic",
         "int8-dynamic"},
        {"FP16", MEMEST_FP16, 2, "fp16", "float16"},
        {"Half", MEMEST_FP16, 2, "fp16", "float16"},
        {"BFloat16", MEMEST_BF16, 2, "bf16", "bfloat16"},
    };
    static const char *const bad[] = {"fp8",  "",       "float",
                                      "int4", "fp16 ",  "bf",
                                      "double", "int8-", "int8dynamic"};
    (void)state;

    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        enum memest_precision p = MEMEST_INT8;
        if (cases[i].p == MEMEST_INT8) {
            p = MEMEST_FP64;
        }
        assert_int_equal(memest_precision_parse(cases[i].text, &p),
                         MEMEST_OK);
        assert_int_equal(p, cases[i].p);
        assert_int_equal(memest_precision_bytes(p), cases[i].bytes);
        assert_string_equal(memest_precision_name(p), cases[i].name);
        assert_string_equal(memest_precision_mode_name(p), cases[i].mode);
    }
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        enum memest_precision p = MEMEST_FP32;
        assert_int_equal(memest_precision_parse(bad[i], &p), MEMEST_E_PARSE);
        assert_int_equal(p, MEMEST_FP32);
    }
    assert_int_equal(memest_precision_parse(NULL, NULL), MEMEST_E_INVALID);
    assert_int_equal(memest_precision_bytes((enum memest_precision)6), 0);
    assert_null(memest_precision_name((enum memest_precision)6));
    assert_null(memest_precision_mode_name((enum memest_precision)-1));
    /* every precision's short name parses back to itself */
    for (int i = 0; i < MEMEST_PRECISION_COUNT; i++) {
        enum memest_precision p;
        const char *names[2] = {
            memest_precision_name((enum memest_precision)i),
            memest_precision_mode_name((enum memest_precision)i)};
        for (int j = 0; j < 2; j++) {
            assert_int_equal(memest_precision_parse(names[j], &p), MEMEST_OK);
            assert_int_equal(p, i);
        }
    }
}

static void test_optimizers(void **state)
{
    enum memest_optimizer o;
    (void)state;
    assert_int_equal(memest_optimizer_parse("sgd", &o), MEMEST_OK);
    assert_int_equal(o, MEMEST_OPT_SGD);
    assert_int_equal(memest_optimizer_parse("Momentum", &o), MEMEST_OK);
    assert_int_equal(o, MEMEST_OPT_MOMENTUM);
    assert_int_equal(memest_optimizer_parse("ADAM", &o), MEMEST_OK);
    assert_int_equal(o, MEMEST_OPT_ADAM);
    assert_int_equal(memest_optimizer_parse("adamw", &o), MEMEST_E_PARSE);
    assert_int_equal(memest_optimizer_parse(NULL, &o), MEMEST_E_INVALID);
    assert_string_equal(memest_optimizer_name(MEMEST_OPT_MOMENTUM),
                        "momentum");
    assert_null(memest_optimizer_name((enum memest_optimizer)3));
    assert_int_equal(memest_optimizer_state_factor(MEMEST_OPT_SGD), 0);
    assert_int_equal(memest_optimizer_state_factor(MEMEST_OPT_MOMENTUM), 1);
    assert_int_equal(memest_optimizer_state_factor(MEMEST_OPT_ADAM), 2);
}

static void test_status_texts(void **state)
{
    (void)state;
    /* distinct texts for every code; a default for anything else */
    for (int a = MEMEST_OK; a <= MEMEST_E_NOTFOUND; a++) {
        assert_string_not_equal(memest_strerror(a), "unknown status");
        for (int b = a + 1; b <= MEMEST_E_NOTFOUND; b++) {
            assert_string_not_equal(memest_strerror(a), memest_strerror(b));
        }
    }
    assert_string_equal(memest_strerror(-1), "unknown status");
    assert_string_equal(memest_strerror(MEMEST_E_NOTFOUND + 1),
                        "unknown status");
    assert_true(strlen(memest_version()) >= 5);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_precision_aliases),
        cmocka_unit_test(test_optimizers),
        cmocka_unit_test(test_status_texts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
