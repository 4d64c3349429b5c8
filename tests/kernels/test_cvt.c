/* fp16/bf16 conversions on every path: all 2^16 patterns of each format
 * widened against an independent decoder (ldexp in double) and round
 * tripped; hand-picked rounding cases; API errors. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "cvt.h"
#include "edgefit/kernels.h"

enum { NPATHS = 5, ALL = 1 << 16 };

struct path {
    const char *name;
    struct kern_cvt_dsp dsp;
};

static struct path paths[NPATHS];
static int npaths;

static int setup(void **state)
{
    (void)state;
    static const struct {
        const char *name;
        unsigned flags;
    } all[NPATHS] = {
        {"c", 0},
        {"avx2", KERN_CPU_AVX2},
        {"avx512", KERN_CPU_AVX2 | KERN_CPU_AVX512},
        {"avx512bf16", KERN_CPU_AVX2 | KERN_CPU_AVX512 | KERN_CPU_AVX512BF16},
        {"neon", KERN_CPU_NEON},
    };
    const unsigned host = kern_cpu_flags();
    for (int i = 0; i < NPATHS; i++) {
        if ((all[i].flags & host) == all[i].flags) {
            paths[npaths].name = all[i].name;
            kern_cvt_dsp_init(&paths[npaths].dsp, all[i].flags);
            npaths++;
        }
    }
    return 0;
}

static uint32_t f_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static float bits_f(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* Value of a half from its fields, by arithmetic rather than bit moves. */
static double half_value(uint16_t h)
{
    const int e = (h >> 10) & 0x1f;
    const int m = h & 0x3ff;
    const double s = (h & 0x8000) ? -1.0 : 1.0;
    if (e == 0) {
        return s * ldexp(m, -24);
    }
    if (e == 31) {
        return m ? NAN : s * INFINITY;
    }
    return s * ldexp(1024 + m, e - 25);
}

static void test_half_all(void **state)
{
    (void)state;
    static uint16_t h[ALL], back[ALL];
    static float f[ALL];
    for (int i = 0; i < ALL; i++) {
        h[i] = (uint16_t)i;
    }
    for (int p = 0; p < npaths; p++) {
        const struct kern_cvt_dsp *d = &paths[p].dsp;
        d->f16_to_f32(f, h, ALL);
        d->f32_to_f16(back, f, ALL);
        for (int i = 0; i < ALL; i++) {
            const double want = half_value(h[i]);
            const uint32_t fb = f_bits(f[i]);
            const bool sign = (fb >> 31) != 0;
            if (isnan(want)) {
                /* Quiet NaN, same sign, payload kept below the quiet bit. */
                const uint32_t want_bits = ((uint32_t)(h[i] & 0x8000u) << 16) |
                                           0x7fc00000u |
                                           ((uint32_t)(h[i] & 0x1ffu) << 13);
                assert_true(isnan(f[i]));
                assert_int_equal(fb, want_bits);
                assert_int_equal(back[i], h[i] | 0x200u);
                continue;
            }
            if ((double)f[i] != want || sign != ((h[i] & 0x8000u) != 0)) {
                print_error("%s: half %#06x -> %a, want %a\n", paths[p].name,
                            h[i], (double)f[i], want);
                fail();
            }
            assert_int_equal(back[i], h[i]);
        }
    }
}

static void test_bf16_all(void **state)
{
    (void)state;
    static uint16_t b[ALL], back[ALL];
    static float f[ALL];
    for (int i = 0; i < ALL; i++) {
        b[i] = (uint16_t)i;
    }
    for (int p = 0; p < npaths; p++) {
        const struct kern_cvt_dsp *d = &paths[p].dsp;
        d->bf16_to_f32(f, b, ALL);
        d->f32_to_bf16(back, f, ALL);
        for (int i = 0; i < ALL; i++) {
            /* bf16 is the top half of a float: exact, NaN payload too. */
            assert_int_equal(f_bits(f[i]), (uint32_t)b[i] << 16);
            const bool nan = (b[i] & 0x7f80u) == 0x7f80u && (b[i] & 0x7fu);
            assert_int_equal(back[i], nan ? (b[i] | 0x40u) : b[i]);
        }
    }
}

struct case16 {
    uint32_t in;
    uint16_t out;
};

static void run_cases(const struct case16 *c, size_t n, bool bf16)
{
    for (int p = 0; p < npaths; p++) {
        const struct kern_cvt_dsp *d = &paths[p].dsp;
        for (size_t i = 0; i < n; i++) {
            /* Alone and amid neighbours (vector body and tail alike). */
            float in[37];
            uint16_t out[37];
            for (int j = 0; j < 37; j++) {
                in[j] = bits_f(c[i].in);
            }
            (bf16 ? d->f32_to_bf16 : d->f32_to_f16)(out, in, 37);
            for (int j = 0; j < 37; j++) {
                if (out[j] != c[i].out) {
                    print_error("%s %s: %#010x -> %#06x, want %#06x\n",
                                paths[p].name, bf16 ? "bf16" : "f16", c[i].in,
                                out[j], c[i].out);
                    fail();
                }
            }
        }
    }
}

static void test_half_rounding(void **state)
{
    (void)state;
    const struct case16 cases[] = {
        {0x3f800000u, 0x3c00u}, /* 1 */
        {0xbf800000u, 0xbc00u}, /* -1 */
        {0x00000000u, 0x0000u}, /* +0 */
        {0x80000000u, 0x8000u}, /* -0 */
        {0x477fe000u, 0x7bffu}, /* 65504, the largest half */
        {0x477fefffu, 0x7bffu}, /* just below 65520 */
        {0x477ff000u, 0x7c00u}, /* 65520 ties to even: inf */
        {0x49742400u, 0x7c00u}, /* 1e6 */
        {0xff800000u, 0xfc00u}, /* -inf */
        {0x33800000u, 0x0001u}, /* 2^-24, smallest subnormal */
        {0x33000000u, 0x0000u}, /* 2^-25 ties to even: 0 */
        {0xb3000000u, 0x8000u}, /* -2^-25: -0 */
        {0x33000001u, 0x0001u}, /* just above 2^-25 */
        {0x33c00000u, 0x0002u}, /* 3 * 2^-25 ties to even: 2 */
        {0x38800000u, 0x0400u}, /* 2^-14, smallest normal */
        {0x387fc000u, 0x03ffu}, /* largest subnormal */
        {0x387fe000u, 0x0400u}, /* ties up into the normal range */
        {0x3f801000u, 0x3c00u}, /* 1 + 2^-11 ties to even (down) */
        {0x3f803000u, 0x3c02u}, /* 1 + 3 2^-11 ties to even (up) */
        {0x3f801001u, 0x3c01u}, /* just above the tie */
        {0x7fc00000u, 0x7e00u}, /* qNaN */
        {0xffc00000u, 0xfe00u}, /* -qNaN keeps its sign */
        {0x7f800001u, 0x7e00u}, /* sNaN: quiet, low payload dropped */
        {0x7fa00000u, 0x7f00u}, /* sNaN: top payload bit kept */
        {0xff802000u, 0xfe01u}, /* -sNaN: payload bit 13 kept */
        {0x00000001u, 0x0000u}, /* float subnormal */
    };
    run_cases(cases, sizeof cases / sizeof cases[0], false);
}

static void test_bf16_rounding(void **state)
{
    (void)state;
    const struct case16 cases[] = {
        {0x3f800000u, 0x3f80u}, /* 1 */
        {0x3f808000u, 0x3f80u}, /* 1 + 2^-8 ties to even (down) */
        {0x3f818000u, 0x3f82u}, /* 1 + 3 2^-8 ties to even (up) */
        {0x3f808001u, 0x3f81u}, /* above the tie */
        {0x7f7fffffu, 0x7f80u}, /* FLT_MAX rounds to inf */
        {0x7f7f7fffu, 0x7f7fu}, /* below the tie: largest bf16 */
        {0x7f7f8000u, 0x7f80u}, /* tie, odd: up to inf */
        {0xff7f8000u, 0xff80u}, /* -tie: -inf */
        {0x00000001u, 0x0000u}, /* smallest float subnormal */
        {0x00008000u, 0x0000u}, /* subnormal tie to even: 0 */
        {0x00018000u, 0x0002u}, /* subnormal tie to even: up */
        {0x00008001u, 0x0001u}, /* subnormal above the tie */
        {0x807fffffu, 0x8080u}, /* largest subnormal rounds to min normal */
        {0x7fc00001u, 0x7fc0u}, /* qNaN */
        {0xff800001u, 0xffc0u}, /* -sNaN: quiet, sign kept */
        {0x7f810000u, 0x7fc1u}, /* sNaN: top payload bits kept */
        {0x7f800000u, 0x7f80u}, /* inf */
    };
    run_cases(cases, sizeof cases / sizeof cases[0], true);
}

/* The public API and the inline scalar helpers agree with the tables. */
static void test_api(void **state)
{
    (void)state;
    float f[3] = {1.0f, 65520.0f, -2.5f};
    uint16_t h[3];
    float back[3];
    assert_int_equal(kern_f32_to_f16(h, f, 3), KERN_OK);
    assert_true(h[0] == 0x3c00u && h[1] == 0x7c00u && h[2] == 0xc100u);
    assert_int_equal(kern_f16_to_f32(back, h, 3), KERN_OK);
    assert_true(back[0] == 1.0f && isinf(back[1]) && back[2] == -2.5f);
    assert_int_equal(kern_f32_to_bf16(h, f, 3), KERN_OK);
    assert_true(h[0] == 0x3f80u && h[2] == 0xc020u);
    assert_int_equal(kern_bf16_to_f32(back, h, 3), KERN_OK);
    assert_true(back[0] == 1.0f && back[2] == -2.5f);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(kern_f32_to_f16_1(f[i]),
                         kern_f32_to_f16_1(kern_f16_to_f32_1(
                             kern_f32_to_f16_1(f[i]))));
    }
    assert_int_equal(kern_f32_to_f16(NULL, f, 3), KERN_E_INVALID);
    assert_int_equal(kern_f16_to_f32(back, NULL, 3), KERN_E_INVALID);
    assert_int_equal(kern_f32_to_bf16(NULL, NULL, 0), KERN_OK);
    assert_int_equal(kern_bf16_to_f32(back, h, SIZE_MAX / 2),
                     KERN_E_OVERFLOW);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_half_all),
        cmocka_unit_test(test_bf16_all),
        cmocka_unit_test(test_half_rounding),
        cmocka_unit_test(test_bf16_rounding),
        cmocka_unit_test(test_api),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
