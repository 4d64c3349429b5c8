/* Behaviour of the public int8 API: quantisation worked out by hand (ties
 * to even, saturation, special values), per-channel scales, the packed GEMM
 * against a plain loop written here (exact), requantisation by hand, and
 * error statuses. Registered several times with KERN_CPU_MASK so the C,
 * AVX2 and widest paths all run through the public entry points. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "edgefit/kernels.h"

static uint32_t rng = 12345u;

static uint32_t next_rand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 17;
    rng ^= rng << 5;
    return rng;
}

/* Quantise `n` copies of a pattern (so vector bodies and scalar tails of
 * every path see each value) and compare with the hand results. */
static void expect_quant(const float *x, const int8_t *want, size_t len,
                         float scale)
{
    enum { COPIES = 7 };
    float in[16 * COPIES];
    int8_t out[16 * COPIES];
    assert_true(len <= 16);
    for (size_t c = 0; c < COPIES; c++) {
        memcpy(in + c * len, x, len * sizeof *x);
    }
    assert_int_equal(kern_q8_quantize_f32(in, len * COPIES, scale, out),
                     KERN_OK);
    for (size_t i = 0; i < len * COPIES; i++) {
        if (out[i] != want[i % len]) {
            fail_msg("x=%g scale=%g: got %d, want %d", (double)in[i],
                     (double)scale, out[i], want[i % len]);
        }
    }
}

static void test_round_half_even(void **state)
{
    (void)state;
    /* With scale 1 the values are the quotients themselves. */
    const float x[] = {0.5f, 1.5f, 2.5f, -0.5f, -1.5f, -2.5f, 3.5f, 0.49f,
                       126.5f, 125.5f, -126.5f, 1.0f, 0.0f, -0.0f, 7.0f};
    const int8_t want[] = {0, 2, 2, 0, -2, -2, 4, 0,
                           126, 126, -126, 1, 0, 0, 7};
    expect_quant(x, want, sizeof x / sizeof x[0], 1.0f);
    /* Scale 0.5: 0.25 / 0.5 = 0.5 -> 0, 0.75 -> 1.5 -> 2, 1.25 -> 2.5 -> 2. */
    const float y[] = {0.25f, 0.75f, 1.25f, -0.75f};
    const int8_t wy[] = {0, 2, 2, -2};
    expect_quant(y, wy, 4, 0.5f);
}

static void test_saturation(void **state)
{
    (void)state;
    const float x[] = {127.0f, 127.4f, 127.5f, 128.0f, 1e30f, -127.5f,
                       -128.0f, -1e30f, INFINITY, -INFINITY, NAN};
    const int8_t want[] = {127, 127, 127, 127, 127, -127,
                           -127, -127, 127, -127, 0};
    expect_quant(x, want, sizeof x / sizeof x[0], 1.0f);
}

static void test_scale(void **state)
{
    (void)state;
    /* 31.75 / 127 = 0.25 exactly. */
    const float x[] = {1.0f, -31.75f, 0.125f, 3.0f};
    float s = 0.0f;
    assert_int_equal(kern_q8_scale_f32(x, 4, &s), KERN_OK);
    assert_true(s == 0.25f);
    const float zeros[5] = {0.0f, -0.0f, 0.0f, 0.0f, 0.0f};
    assert_int_equal(kern_q8_scale_f32(zeros, 5, &s), KERN_OK);
    assert_true(s == 1.0f);
    assert_int_equal(kern_q8_scale_f32(NULL, 0, &s), KERN_OK);
    assert_true(s == 1.0f);
    /* The smallest subnormals: max / 127 underflows to 0, scale 1. */
    const float tiny[3] = {1e-44f, -2e-45f, 0.0f};
    assert_int_equal(kern_q8_scale_f32(tiny, 3, &s), KERN_OK);
    assert_true(s == 1.0f);
    const float bad[] = {1.0f, INFINITY};
    assert_int_equal(kern_q8_scale_f32(bad, 2, &s), KERN_E_RANGE);
    const float nan[] = {NAN, 1.0f};
    assert_int_equal(kern_q8_scale_f32(nan, 2, &s), KERN_E_RANGE);
    assert_int_equal(kern_q8_scale_f32(x, 4, NULL), KERN_E_INVALID);
}

static void test_quantize_tensor(void **state)
{
    (void)state;
    /* scale 0.25: 31.75 -> 127, -0.375 -> -1.5 -> -2, 0.125 -> 0.5 -> 0,
     * 0.625 -> 2.5 -> 2, -31.75 -> -127, 1 -> 4. */
    const float x[] = {31.75f, -0.375f, 0.125f, 0.625f, -31.75f, 1.0f};
    const int8_t want[] = {127, -2, 0, 2, -127, 4};
    int8_t q[6];
    float s = 0.0f;
    assert_int_equal(kern_q8_quantize_tensor_f32(x, 6, q, &s), KERN_OK);
    assert_true(s == 0.25f);
    assert_memory_equal(q, want, 6);
    float back[6];
    assert_int_equal(kern_q8_dequantize_f32(q, 6, s, back), KERN_OK);
    const float wb[] = {31.75f, -0.5f, 0.0f, 0.5f, -31.75f, 1.0f};
    for (int i = 0; i < 6; i++) {
        assert_true(back[i] == wb[i]);
    }
}

static void test_per_channel(void **state)
{
    (void)state;
    /* Row 0: max 31.75 -> scale 0.25; row 1: max 63.5 -> 0.5; row 2: all
     * zero -> 1. */
    const float x[] = {31.75f, 0.375f, -1.0f,  /* 127, 1.5 -> 2, -4 */
                       0.25f, 0.75f, -63.5f,   /* 0.5 -> 0, 2, -127 */
                       0.0f, 0.0f, -0.0f};
    const int8_t want[] = {127, 2, -4, 0, 2, -127, 0, 0, 0};
    int8_t q[9];
    float scales[3];
    assert_int_equal(kern_q8_quantize_channels_f32(x, 3, 3, q, scales),
                     KERN_OK);
    assert_true(scales[0] == 0.25f);
    assert_true(scales[1] == 0.5f);
    assert_true(scales[2] == 1.0f);
    assert_memory_equal(q, want, 9);
    float back[9];
    assert_int_equal(kern_q8_dequantize_channels_f32(q, 3, 3, scales, back),
                     KERN_OK);
    const float wb[] = {31.75f, 0.5f, -1.0f, 0.0f, 1.0f, -63.5f, 0, 0, 0};
    for (int i = 0; i < 9; i++) {
        assert_true(back[i] == wb[i]);
    }
    const float inf[] = {1.0f, INFINITY};
    assert_int_equal(kern_q8_quantize_channels_f32(inf, 1, 2, q, scales),
                     KERN_E_RANGE);
    assert_int_equal(
        kern_q8_quantize_channels_f32(x, SIZE_MAX / 2, 3, q, scales),
        KERN_E_OVERFLOW);
}

static void test_quant_errors(void **state)
{
    (void)state;
    const float x[2] = {1, 2};
    int8_t q[2];
    float f[2];
    assert_int_equal(kern_q8_quantize_f32(x, 2, 0.0f, q), KERN_E_RANGE);
    assert_int_equal(kern_q8_quantize_f32(x, 2, -1.0f, q), KERN_E_RANGE);
    assert_int_equal(kern_q8_quantize_f32(x, 2, INFINITY, q), KERN_E_RANGE);
    assert_int_equal(kern_q8_quantize_f32(x, 2, NAN, q), KERN_E_RANGE);
    assert_int_equal(kern_q8_quantize_f32(NULL, 2, 1.0f, q), KERN_E_INVALID);
    assert_int_equal(kern_q8_quantize_f32(x, 2, 1.0f, NULL), KERN_E_INVALID);
    assert_int_equal(kern_q8_dequantize_f32(q, 2, NAN, f), KERN_E_RANGE);
    assert_int_equal(kern_q8_dequantize_f32(NULL, 2, 1.0f, f),
                     KERN_E_INVALID);
}

static void gemm_loop(size_t m, size_t n, size_t k, const int8_t *a,
                      size_t lda, const int8_t *w, size_t ldw, int32_t *c,
                      size_t ldc)
{
    for (size_t i = 0; i < m; i++) {
        for (size_t j = 0; j < n; j++) {
            int64_t s = 0;
            for (size_t t = 0; t < k; t++) {
                s += (int64_t)a[i * lda + t] * w[j * ldw + t];
            }
            c[i * ldc + j] = (int32_t)s;
        }
    }
}

static void *pack(const int8_t *w, size_t n, size_t k, size_t ldw)
{
    const size_t bytes = kern_q8_packed_bytes(n, k);
    assert_true(bytes > 0);
    void *p = malloc(bytes);
    assert_non_null(p);
    assert_int_equal(kern_q8_pack_weights(w, n, k, ldw, p, bytes), KERN_OK);
    return p;
}

static void test_gemm_hand(void **state)
{
    (void)state;
    /* [1 2 3; -4 5 -6] . [7 -8 9; 1 1 1]^T:
     * 7 - 16 + 27 = 18, 1 + 2 + 3 = 6, -28 - 40 - 54 = -122, -4 + 5 - 6 = -5 */
    const int8_t a[] = {1, 2, 3, -4, 5, -6};
    const int8_t w[] = {7, -8, 9, 1, 1, 1};
    void *p = pack(w, 2, 3, 3);
    int32_t c[4] = {0};
    assert_int_equal(kern_q8_gemm(2, 2, 3, a, 3, p, c, 2), KERN_OK);
    const int32_t want[] = {18, 6, -122, -5};
    assert_memory_equal(c, want, sizeof want);
    free(p);
}

static void test_gemm_extremes(void **state)
{
    (void)state;
    /* -128 * -128 * 1000 = 16384000 and -128 * 127 * 1000 = -16256000. */
    enum { K = 1000, N = 33, M = 7 };
    int8_t *a = malloc(M * K), *w = malloc(N * K);
    int32_t *c = malloc(M * N * sizeof *c);
    assert_true(a && w && c);
    memset(a, 0x80, M * K);
    for (int j = 0; j < N; j++) {
        memset(w + j * K, j % 2 ? 127 : -128, K);
    }
    void *p = pack(w, N, K, K);
    assert_int_equal(kern_q8_gemm(M, N, K, a, K, p, c, N), KERN_OK);
    for (int i = 0; i < M * N; i++) {
        assert_int_equal(c[i], (i % N) % 2 ? -16256000 : 16384000);
    }
    free(p);
    free(a);
    free(w);
    free(c);
}

static void test_gemm_random(void **state)
{
    (void)state;
    for (int t = 0; t < 150; t++) {
        const uint32_t seed = rng;
        const size_t m = 1 + next_rand() % 50, n = 1 + next_rand() % 100;
        const size_t k = 1 + next_rand() % (t % 5 ? 300 : 1100);
        const size_t lda = k + next_rand() % 4, ldw = k + next_rand() % 4;
        const size_t ldc = n + next_rand() % 4;
        int8_t *a = malloc(m * lda), *w = malloc(n * ldw);
        int32_t *c = malloc(m * ldc * sizeof *c);
        int32_t *want = malloc(m * ldc * sizeof *want);
        assert_true(a && w && c && want);
        for (size_t i = 0; i < m * lda; i++) {
            a[i] = (int8_t)(next_rand() & 0xff);
        }
        for (size_t i = 0; i < n * ldw; i++) {
            w[i] = (int8_t)(next_rand() & 0xff);
        }
        memset(c, 0x5a, m * ldc * sizeof *c);
        memcpy(want, c, m * ldc * sizeof *c);
        gemm_loop(m, n, k, a, lda, w, ldw, want, ldc);
        void *p = pack(w, n, k, ldw);
        assert_int_equal(kern_q8_gemm(m, n, k, a, lda, p, c, ldc), KERN_OK);
        if (memcmp(c, want, m * ldc * sizeof *c) != 0) {
            fail_msg("seed %u: m=%zu n=%zu k=%zu differs from the loop",
                     (unsigned)seed, m, n, k);
        }
        free(p);
        free(a);
        free(w);
        free(c);
        free(want);
    }
}

static void test_gemm_errors(void **state)
{
    (void)state;
    const int8_t a[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    int32_t c[4];
    assert_int_equal(kern_q8_packed_bytes(0, 4), 0);
    assert_int_equal(kern_q8_packed_bytes(4, 0), 0);
    assert_int_equal(kern_q8_packed_bytes(SIZE_MAX / 2, SIZE_MAX / 2), 0);
    unsigned char small[16];
    assert_int_equal(kern_q8_pack_weights(a, 2, 4, 4, small, sizeof small),
                     KERN_E_NOMEM);
    assert_int_equal(kern_q8_pack_weights(a, 2, 4, 3, small, sizeof small),
                     KERN_E_SHAPE);
    assert_int_equal(kern_q8_pack_weights(NULL, 2, 4, 4, small, 16),
                     KERN_E_INVALID);
    void *p = pack(a, 2, 4, 4);
    assert_int_equal(kern_q8_gemm(1, 3, 4, a, 4, p, c, 3), KERN_E_SHAPE);
    assert_int_equal(kern_q8_gemm(1, 2, 3, a, 4, p, c, 2), KERN_E_SHAPE);
    assert_int_equal(kern_q8_gemm(1, 2, 4, a, 3, p, c, 2), KERN_E_SHAPE);
    assert_int_equal(kern_q8_gemm(1, 2, 4, a, 4, p, c, 1), KERN_E_SHAPE);
    unsigned char junk[128];
    memset(junk, 0x11, sizeof junk);
    assert_int_equal(kern_q8_gemm(1, 2, 4, a, 4, junk, c, 2),
                     KERN_E_INVALID);
    assert_int_equal(kern_q8_gemm(1, 2, 4, NULL, 4, p, c, 2),
                     KERN_E_INVALID);
    assert_int_equal(kern_q8_gemm(0, 2, 4, NULL, 4, p, NULL, 2), KERN_OK);
    free(p);
    /* K beyond 131071 could overflow int32. */
    const size_t big = 131072;
    int8_t *w = calloc(big, 1);
    assert_non_null(w);
    p = pack(w, 1, big, big);
    assert_int_equal(kern_q8_gemm(1, 1, big, w, big, p, c, 1), KERN_E_RANGE);
    free(p);
    free(w);
}

static void test_requant(void **state)
{
    (void)state;
    /* mul = 0.5 * {0.25, 2} = {0.125, 1}; y = {100 * 0.125, -50 * 1} + bias
     * {1, 0.5} = {13.5, -49.5}; relu: {13.5, 0}. int8 with out_scale 0.5:
     * {27, -99}; relu {27, 0}. Third column: 10 * 0.125 + 0 = 1.25 -> 2.5 ->
     * 2 (tie to even); fourth: 2e6 saturates. */
    const int32_t acc[] = {100, -50, 10, 2000000};
    const float ws[] = {0.25f, 2.0f, 0.25f, 0.25f};
    const float bias[] = {1.0f, 0.5f, 0.0f, 0.0f};
    float y[4];
    assert_int_equal(kern_q8_requant_f32(1, 4, acc, 4, 0.5f, ws, bias, 0, y,
                                         4), KERN_OK);
    assert_true(y[0] == 13.5f && y[1] == -49.5f && y[2] == 1.25f &&
                y[3] == 250000.0f);
    assert_int_equal(kern_q8_requant_f32(1, 4, acc, 4, 0.5f, ws, bias, 1, y,
                                         4), KERN_OK);
    assert_true(y[0] == 13.5f && y[1] == 0.0f);
    int8_t q[4];
    assert_int_equal(kern_q8_requant_s8(1, 4, acc, 4, 0.5f, ws, bias, 0,
                                        0.5f, q, 4), KERN_OK);
    const int8_t want[] = {27, -99, 2, 127};
    assert_memory_equal(q, want, 4);
    assert_int_equal(kern_q8_requant_s8(1, 4, acc, 4, 0.5f, ws, bias, 1,
                                        0.5f, q, 4), KERN_OK);
    assert_int_equal(q[1], 0);
    /* Without bias, two rows with leading dimensions. */
    const int32_t acc2[] = {8, 16, -1, 24, 32, -1};
    float y2[2 * 3];
    memset(y2, 0, sizeof y2);
    const float ws2[] = {1.0f, 0.5f};
    assert_int_equal(kern_q8_requant_f32(2, 2, acc2, 3, 0.25f, ws2, NULL, 0,
                                         y2, 3), KERN_OK);
    assert_true(y2[0] == 2.0f && y2[1] == 2.0f && y2[3] == 6.0f &&
                y2[4] == 4.0f && y2[2] == 0.0f);
    assert_int_equal(kern_q8_requant_f32(1, 2, acc, 2, 0.0f, ws, NULL, 0, y,
                                         2), KERN_E_RANGE);
    assert_int_equal(kern_q8_requant_s8(1, 2, acc, 2, 1.0f, ws, NULL, 0,
                                        -1.0f, q, 2), KERN_E_RANGE);
    assert_int_equal(kern_q8_requant_f32(1, 2, acc, 1, 1.0f, ws, NULL, 0, y,
                                         2), KERN_E_SHAPE);
}

/* The transposed requantisation: a 2 x 2 by hand, then 19 x 21 (8 x 8
 * tiles, overlapping last ones) with pitches past the minimum against
 * values exact in float: acc small integers, scales powers of two, biases
 * halves. */
static void test_requant_t(void **state)
{
    (void)state;
    /* acc [[8, 16], [-4, 24]], a_scale 0.25, ws {1, 0.5}, bias {1, -1}:
     * row 0 -> {3, 1}, row 1 -> {0, 2}; relu keeps them (none below 0);
     * transposed: y[0] = {3, 0}, y[1] = {1, 2} */
    const int32_t acc[] = {8, 16, -4, 24};
    const float ws[] = {1.0f, 0.5f}, bias[] = {1.0f, -1.0f};
    float y[2 * 3] = {0};
    assert_int_equal(kern_q8_requant_f32_t(2, 2, acc, 2, 0.25f, ws, bias, 1,
                                           y, 3), KERN_OK);
    assert_true(y[0] == 3.0f && y[1] == 0.0f && y[2] == 0.0f &&
                y[3] == 1.0f && y[4] == 2.0f && y[5] == 0.0f);

    enum { M = 19, N = 21, LDA = N + 2, LDY = M + 3 };
    static int32_t a[M * LDA];
    static float w[N], b[N], out[N * LDY];
    for (size_t i = 0; i < M; i++) {
        for (size_t j = 0; j < LDA; j++) {
            a[i * LDA + j] = (int32_t)(i * 13 % 29) - (int32_t)(j * 7 % 31);
        }
    }
    for (size_t j = 0; j < N; j++) {
        w[j] = j % 3 ? 0.5f : 2.0f;
        b[j] = 0.5f * (float)((int)j - 10);
    }
    for (int relu = 0; relu < 2; relu++) {
        for (size_t k = 0; k < N * LDY; k++) {
            out[k] = -1234.0f;
        }
        assert_int_equal(kern_q8_requant_f32_t(M, N, a, LDA, 0.25f, w, b,
                                               relu, out, LDY), KERN_OK);
        for (size_t j = 0; j < N; j++) {
            for (size_t i = 0; i < LDY; i++) {
                double want = -1234.0; /* the gap after each row */
                if (i < M) {
                    want = a[i * LDA + j] * 0.25 * w[j] + b[j];
                    want = relu && want < 0.0 ? 0.0 : want;
                }
                assert_true(out[j * LDY + i] == (float)want);
            }
        }
    }
    assert_int_equal(kern_q8_requant_f32_t(2, 2, acc, 2, 0.25f, ws, NULL, 0,
                                           y, 1), KERN_E_SHAPE);
    assert_int_equal(kern_q8_requant_f32_t(2, 2, acc, 1, 0.25f, ws, NULL, 0,
                                           y, 2), KERN_E_SHAPE);
    assert_int_equal(kern_q8_requant_f32_t(2, 2, acc, 2, -1.0f, ws, NULL, 0,
                                           y, 2), KERN_E_RANGE);
    assert_int_equal(kern_q8_requant_f32_t(2, 2, acc, 2, 0.25f, ws, NULL, 0,
                                           NULL, 2), KERN_E_INVALID);
    assert_int_equal(kern_q8_requant_f32_t(2, 2, acc, 2, 0.25f, ws, NULL, 0,
                                           y, SIZE_MAX), KERN_E_OVERFLOW);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_half_even),
        cmocka_unit_test(test_saturation),
        cmocka_unit_test(test_scale),
        cmocka_unit_test(test_quantize_tensor),
        cmocka_unit_test(test_per_channel),
        cmocka_unit_test(test_quant_errors),
        cmocka_unit_test(test_gemm_hand),
        cmocka_unit_test(test_gemm_extremes),
        cmocka_unit_test(test_gemm_random),
        cmocka_unit_test(test_gemm_errors),
        cmocka_unit_test(test_requant),
        cmocka_unit_test(test_requant_t),
    };
    printf("test_q8: path %s, seed %u\n", kern_cpu_path_name(kern_cpu_flags()),
           (unsigned)rng);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
