/* The portable 128-bit products of internal/wide.h against a reference:
 * hand-computed values, a product by 16-bit digits over many random
 * operands (every target), and on targets that have unsigned __int128 the
 * compiler's own arithmetic, roundings to double included. */
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

/* a * b by schoolbook multiplication in base 2^16 (another base than
 * wide.h's 2^32 halves), exact on every target, 32-bit ones included. */
static struct wide_u128 mul_by_digits(uint64_t a, uint64_t b)
{
    uint64_t r[8] = {0};
    for (int i = 0; i < 4; i++) {
        uint64_t carry = 0;
        const uint64_t ai = (a >> (16 * i)) & 0xffffu;
        for (int j = 0; j < 4; j++) {
            /* at most (2^16-1)^2 + 2 * (2^16-1): fits 64 bits */
            const uint64_t t = ai * ((b >> (16 * j)) & 0xffffu) +
                               r[i + j] + carry;
            r[i + j] = t & 0xffffu;
            carry = t >> 16;
        }
        r[i + 4] += carry;
    }
    struct wide_u128 w = {0, 0};
    for (int k = 0; k < 4; k++) {
        w.lo |= r[k] << (16 * k);
        w.hi |= r[k + 4] << (16 * k);
    }
    return w;
}

static void test_against_digits(void **state)
{
    (void)state;
    uint64_t s = 7;
    for (int i = 0; i < 200000; i++) {
        const uint64_t a = next(&s) >> (next(&s) % 64);
        const uint64_t b = next(&s) >> (next(&s) % 64);
        const struct wide_u128 want = mul_by_digits(a, b);
        const struct wide_u128 got = wide_mul_64(a, b);
        assert_true(got.hi == want.hi && got.lo == want.lo);
    }
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
        cmocka_unit_test(test_against_digits),
        cmocka_unit_test(test_against_int128),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
