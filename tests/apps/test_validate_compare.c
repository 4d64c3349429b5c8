/* edgefit-validate's comparison (apps/common/validate.c) on values whose
 * metrics are worked out by hand: a 3-4-5 triangle for the cosine, ties
 * in the reference for top-1, non-finite values on either side, an
 * all-zero reference, and the verdict at the tolerance's edge. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <math.h>

#include "validate.h"

static void test_by_hand(void **state)
{
    (void)state;
    /* got - ref = [0, -1, 2, 0]: max 2, rmse sqrt(5 / 4); max |ref| 4 */
    const float got[4] = {3, 3, 2, 0}, ref[4] = {3, 4, 0, 0};
    struct validate_metrics m;
    validate_compare(got, ref, 2, 2, true, &m);
    assert_int_equal(m.elements, 4);
    assert_true(m.max_abs_error == 2.0);
    assert_true(m.max_abs_reference == 4.0);
    assert_true(m.relative_error == 0.5);
    assert_true(fabs(m.rmse - sqrt(5.0 / 4.0)) < 1e-15);
    /* got . ref = 21, |got| = sqrt(22), |ref| = 5 */
    assert_true(fabs(m.cosine_similarity - 21.0 / (sqrt(22.0) * 5.0)) <
                1e-15);
    /* sample 0: got picks class 0 (3 = 3, first), ref's top is class 1:
     * no; sample 1: got picks 0, ref [0, 0] ties: yes */
    assert_true(m.top1_agreement == 0.5);
    assert_true(validate_passes(&m, 0.5));
    assert_false(validate_passes(&m, 0.4999));

    /* not a vector: no top-1 */
    validate_compare(got, ref, 1, 4, false, &m);
    assert_true(isnan(m.top1_agreement));
}

static void test_non_finite(void **state)
{
    (void)state;
    const float ref[3] = {1.0f, INFINITY, NAN};
    float got[3] = {1.0f, INFINITY, NAN};
    struct validate_metrics m;
    validate_compare(got, ref, 1, 3, false, &m);
    assert_true(m.max_abs_error == 0.0);
    assert_true(m.max_abs_reference == 1.0);
    assert_true(validate_passes(&m, 1e-4));

    got[2] = 0.0f; /* a number where the reference has NaN */
    validate_compare(got, ref, 1, 3, false, &m);
    assert_true(isinf(m.max_abs_error));
    assert_false(validate_passes(&m, 1e30));

    got[2] = NAN;
    got[0] = NAN; /* NaN where the reference is finite */
    validate_compare(got, ref, 1, 3, false, &m);
    assert_true(isinf(m.max_abs_error));
    assert_false(validate_passes(&m, 1e30));
}

static void test_zero_reference(void **state)
{
    (void)state;
    const float ref[2] = {0, 0};
    float got[2] = {0, 0};
    struct validate_metrics m;
    validate_compare(got, ref, 1, 2, true, &m);
    assert_true(m.relative_error == 0.0);
    assert_true(isnan(m.cosine_similarity)); /* a zero side */
    assert_true(validate_passes(&m, 1e-4));
    got[1] = 1e-30f;
    validate_compare(got, ref, 1, 2, true, &m);
    assert_true(isinf(m.relative_error));
    assert_false(validate_passes(&m, 1e-4));
}

static void test_defaults(void **state)
{
    (void)state;
    assert_true(validate_default_tolerance(MEMEST_FP32) == 1e-4);
    assert_true(validate_default_tolerance(MEMEST_FP16) == 1e-2);
    assert_true(validate_default_tolerance(MEMEST_BF16) == 5e-2);
    assert_true(validate_default_tolerance(MEMEST_INT8) == 1e-1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_by_hand),
        cmocka_unit_test(test_non_finite),
        cmocka_unit_test(test_zero_reference),
        cmocka_unit_test(test_defaults),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
