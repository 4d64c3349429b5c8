/* The portable 128-bit products of internal/wide.h against a reference:
 * hand-computed values, and on targets that have unsigned __int128 the
 * compiler's own arithmetic over many random operands. */
#include <float.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "wide.h"

static uint64_t next(uint64_t *s)
{
    uint64_t z = (*s += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

static void test_by_hand(void **state)
{
    (void)state;
    struct wide_u128 r = wide_mul_64(UINT64_MAX, UINT64_MAX);
    /* (2^64 - 1)^2 = 2^128 - 2^65 + 1 */
    assert_true(r.hi == UINT64_MAX - 1 && r.lo == 1);
    r = wide_mul_64(UINT64_C(1) << 63, 2);
    assert_true(r.hi == 1 && r.lo == 0);
    r = wide_mul_64(0xffffffffu, 0xffffffffu);
    assert_true(r.hi == 0 && r.lo == UINT64_C(0xfffffffe00000001));
    assert_true(wide_mulhi_64(UINT64_C(3) << 62, 4) == 3);

    struct wide_u128 t;
    assert_true(wide_mul_128_64(wide_mul_64(UINT64_MAX, UINT64_C(1) << 40),
                                8, &t));
    /* (2^64 - 1) * 2^43 rounds to 2^107 in a double */
    assert_true(wide_to_double(t) == 0x1p107);
    assert_false(wide_mul_128_64(wide_mul_64(UINT64_MAX, UINT64_MAX),
                                 UINT64_MAX, &t));
    /* 2^65 * 2^63 = 2^128 does not fit; 2^65 * 2^62 = 2^127 does */
    assert_false(wide_mul_128_64(wide_mul_64(UINT64_C(1) << 63, 4),
                                 UINT64_C(1) << 63, &t));
    assert_true(wide_mul_128_64(wide_mul_64(UINT64_C(1) << 63, 4),
                                UINT64_C(1) << 62, &t));
    assert_true(t.hi == UINT64_C(1) << 63 && t.lo == 0);

    /* a tie at 53 bits decided by a bit far below the top 64: 2^64 + 2^11
     * + 1 is above the halfway point 2^64 + 2^11 and rounds up, where
     * dropping the low bits would round to even (down) */
    const struct wide_u128 tie = {1, (UINT64_C(1) << 11) + 1};
    assert_true(wide_to_double(tie) == 0x1p64 + 0x1p12);
    const struct wide_u128 even = {1, UINT64_C(1) << 11};
    assert_true(wide_to_double(even) == 0x1p64);
    const struct wide_u128 max = {UINT64_MAX, UINT64_MAX};
    assert_true(wide_to_double(max) == 0x1p128);
}

static void test_against_int128(void **state)
{
    (void)state;
#if defined(__SIZEOF_INT128__)
    __extension__ typedef unsigned __int128 u128;
    uint64_t s = 42;
    for (int i = 0; i < 200000; i++) {
        /* operands of every width, so that carries and short values both
         * happen */
        const uint64_t a = next(&s) >> (next(&s) % 64);
        const uint64_t b = next(&s) >> (next(&s) % 64);
        const u128 want = (u128)a * b;
        const struct wide_u128 got = wide_mul_64(a, b);
        assert_true(got.hi == (uint64_t)(want >> 64));
        assert_true(got.lo == (uint64_t)want);
        const struct wide_u128 v = {(uint64_t)(want >> 64), (uint64_t)want};
        assert_true(wide_to_double(v) == (double)want);
    }
#else
    skip();
#endif
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_by_hand),
        cmocka_unit_test(test_against_int128),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
