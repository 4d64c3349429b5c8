/* Behaviour of the static int8 API (integer-only requantisation):
 * TFLite's QuantizeMultiplier on hand values and its edge cases, the
 * output stage on hand-computed values and against a brute-force
 * reference of the same formula in extended precision (exact integer
 * equality, saturation included), the fused GEMM and the depthwise
 * convolution against plain loops over (x - zero_point) * w, and the
 * integer Add against its formula and against float. Registered with
 * KERN_CPU_MASK so the C, AVX2 and widest paths all run. */
#include <float.h>
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

static uint32_t rng = 2463534242u;

static uint32_t next_rand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 17;
    rng ^= rng << 5;
    return rng;
}

static int32_t randi(int32_t lo, int32_t hi)
{
    return lo + (int32_t)(next_rand() % (uint32_t)((int64_t)hi - lo + 1));
}

static double randu(void)
{
    return (double)next_rand() / 4294967296.0;
}

/* ---- the reference: the formula in exact integers ---------------------- */

/* floor((x m + 2^30) / 2^31), the product exact in 64-bit integers
 * (|x m| <= 2^62, so x m + 2^30 fits too) and the division a true floor
 * (C's division truncates toward zero), then INT32_MIN squared
 * saturating. On every target: long double has no 64-bit mantissa on
 * ARM. */
static int64_t ref_srdhm(int64_t x, int64_t m)
{
    if (x == INT32_MIN && m == INT32_MIN) {
        return INT32_MAX;
    }
    const int64_t p = x * m + ((int64_t)1 << 30);
    const int64_t d = (int64_t)1 << 31;
    int64_t q = p / d;
    if (p % d != 0 && p < 0) {
        q--;
    }
    return q;
}

/* x / 2^e rounded half away from zero: exact in double for |x| < 2^53 */
static int64_t ref_rdbpot(int64_t x, int e)
{
    return (int64_t)round((double)x / ldexp(1.0, e));
}

static int32_t wrap32(int64_t v)
{
    return (int32_t)(uint32_t)(uint64_t)v;
}

static int64_t ref_mbqm(int64_t x, int32_t mult, int shift)
{
    const int ls = shift > 0 ? shift : 0, rs = shift > 0 ? 0 : -shift;
    const int32_t xs = wrap32(x * ((int64_t)1 << ls));
    return ref_rdbpot(ref_srdhm(xs, mult), rs);
}

static int8_t ref_out(int64_t acc_plus_bias, int32_t mult, int shift,
                      int32_t zp, int32_t qmin, int32_t qmax)
{
    int64_t v = ref_mbqm(wrap32(acc_plus_bias), mult, shift) + zp;
    return (int8_t)(v < qmin ? qmin : v > qmax ? qmax : v);
}

/* ---- QuantizeMultiplier ------------------------------------------------- */

static void expect_qm(double real, int32_t want_m, int want_s)
{
    int32_t m = -1;
    int s = -99;
    assert_int_equal(kern_q8_quantize_multiplier(real, &m, &s), KERN_OK);
    if (m != want_m || s != want_s) {
        fail_msg("real %a: mult %d shift %d, want %d %d", real, m, s, want_m,
                 want_s);
    }
}

static void test_quantize_multiplier(void **state)
{
    (void)state;
    expect_qm(0.0, 0, 0);
    expect_qm(0.5, 1 << 30, 0);
    expect_qm(1.0, 1 << 30, 1);
    expect_qm(0.75, 1610612736, 0);
    expect_qm(0.1, 1717986918, -3); /* 0.8 * 2^31 = 1717986918.4 */
    expect_qm(3.0, 1610612736, 2);
    /* the fraction rounds up to 2^31: halved, shift one more */
    expect_qm(1.0 - ldexp(1.0, -40), 1 << 30, 1);
    expect_qm(0.5 - ldexp(1.0, -42), 1 << 30, 0);
    /* smallest kept and first flushed (TFLite: shift < -31 gives 0) */
    expect_qm(ldexp(1.0, -32), 1 << 30, -31);
    expect_qm(ldexp(1.0, -33), 0, 0);
    /* the cap of the shift */
    expect_qm(ldexp(1.0, 29), 1 << 30, 30);
    expect_qm(ldexp(1.0, 40), INT32_MAX, 30);
    int32_t m;
    int s;
    assert_int_equal(kern_q8_quantize_multiplier(-0.5, &m, &s), KERN_E_RANGE);
    assert_int_equal(kern_q8_quantize_multiplier(NAN, &m, &s), KERN_E_RANGE);
    assert_int_equal(kern_q8_quantize_multiplier(INFINITY, &m, &s),
                     KERN_E_RANGE);
    assert_int_equal(kern_q8_quantize_multiplier(0.5, NULL, &s),
                     KERN_E_INVALID);
    /* random reals: mult * 2^(shift - 31) within half a unit of real */
    for (int t = 0; t < 2000; t++) {
        const double real = ldexp(0.5 + 0.5 * randu(), randi(-30, 10));
        assert_int_equal(kern_q8_quantize_multiplier(real, &m, &s), KERN_OK);
        assert_true(m >= (1 << 30));
        const double back = ldexp((double)m, s - 31);
        assert_true(fabs(back - real) <= ldexp(1.0, s - 32));
    }
}

/* ---- output stage ------------------------------------------------------- */

/* acc repeated over 21 columns (vector body and tail), per tensor */
static void expect_stage(int32_t acc, int32_t bias, int32_t mult, int shift,
                         int32_t zp, int32_t qmin, int32_t qmax, int want)
{
    enum { N = 21 };
    int32_t a[N], b[N];
    int8_t q[N];
    for (int j = 0; j < N; j++) {
        a[j] = acc;
        b[j] = bias;
    }
    const struct kern_q8_outstage os = {b, &mult, &shift, 0, zp, qmin, qmax, NULL};
    assert_int_equal(kern_q8_requantize_s8(1, N, a, N, &os, q, N), KERN_OK);
    for (int j = 0; j < N; j++) {
        if (q[j] != want) {
            fail_msg("acc %d bias %d mult %d shift %d zp %d: q[%d] = %d, "
                     "want %d", acc, bias, mult, shift, zp, j, q[j], want);
        }
    }
}

static void test_stage_hand(void **state)
{
    (void)state;
    const int32_t half = 1 << 30; /* 0.5 in Q31 */
    /* SRDHM rounds half up: 50.5 -> 51, -50.5 -> -50 */
    expect_stage(100, 0, half, 0, 0, -128, 127, 50);
    expect_stage(101, 0, half, 0, 0, -128, 127, 51);
    expect_stage(-101, 0, half, 0, 0, -128, 127, -50);
    /* RoundingDivideByPOT rounds half away: 2.5 -> 3, -2.5 -> -3,
     * -1.5 -> -2, 2.25 -> 2 */
    expect_stage(20, 0, half, -2, 0, -128, 127, 3);
    expect_stage(-20, 0, half, -2, 0, -128, 127, -3);
    expect_stage(-12, 0, half, -2, 0, -128, 127, -2);
    expect_stage(18, 0, half, -2, 0, -128, 127, 2);
    /* bias before the multiplier, zero point after */
    expect_stage(10, -30, half, 0, 0, -128, 127, -10);
    expect_stage(10, -30, half, 0, 7, -128, 127, -3);
    /* left shift: 0.5 * 2^3 = 4 */
    expect_stage(-9, 0, half, 3, 0, -128, 127, -36);
    /* clamp: saturation and relu (qmin = zp), relu6 (qmax) */
    expect_stage(1000, 0, half, 0, 5, -128, 127, 127);
    expect_stage(-1000, 0, half, 0, 5, -128, 127, -128);
    expect_stage(-40, 0, half, 0, -3, -3, 127, -3);
    expect_stage(40, 0, half, 0, -3, -3, 17, 17);
    /* INT32_MIN * INT32_MIN saturates to INT32_MAX; / 2^31 -> 1 */
    expect_stage(INT32_MIN, 0, INT32_MIN, 0, 0, -128, 127, 127);
    expect_stage(INT32_MIN, 0, INT32_MIN, -31, 4, -128, 127, 5);
    /* INT32_MIN * INT32_MAX: -(2^31 - 1), / 2^31 -> -1 */
    expect_stage(INT32_MIN, 0, INT32_MAX, -31, 4, -128, 127, 3);
    expect_stage(INT32_MAX, 0, INT32_MAX, -31, 0, -128, 127, 1);
    /* mult 0 (real 0) gives the zero point */
    expect_stage(12345, 0, 0, 0, -9, -128, 127, -9);
}

/* The float stage (ONNX Runtime's), by hand: acc + bias times the scale
 * in float, rounded half to even (where the fixed-point stage rounds half
 * away from zero), clamped, plus the zero point; per channel; errors. */
static void test_stage_float_hand(void **state)
{
    (void)state;
    /* column 0 scale 0.5, column 1 scale 0.25, column 2 scale 3 */
    const float sc[3] = {0.5f, 0.25f, 3.0f};
    const int32_t bias[3] = {0, 2, -1};
    const int32_t acc[4 * 3] = {
        5, 8, 1,     /* 2.5 -> 2; 10 * .25 = 2.5 -> 2; 0 */
        3, 12, 2,    /* 1.5 -> 2; 3.5 -> 4; 3 */
        -5, -12, 50, /* -2.5 -> -2; -2.5 -> -2; 147 -> clamp */
        7, 0, -60,   /* 3.5 -> 4; 0.5 -> 0; -183 -> clamp */
    };
    const int8_t want[4 * 3] = {
        2 + 3, 2 + 3, 0 + 3,
        2 + 3, 4 + 3, 3 + 3,
        -2 + 3, -2 + 3, 100,
        4 + 3, 0 + 3, -128,
    };
    const struct kern_q8_outstage os = {.bias = bias, .per_channel = 1,
                                        .zero_point = 3, .qmin = -128,
                                        .qmax = 100, .scale = sc};
    int8_t q[4 * 3];
    assert_int_equal(kern_q8_requantize_s8(4, 3, acc, 3, &os, q, 3),
                     KERN_OK);
    assert_memory_equal(q, want, sizeof want);
    /* the fixed-point stage of 0.5 on 5 gives 3 (half away from zero) */
    int32_t m;
    int sh;
    assert_int_equal(kern_q8_quantize_multiplier(0.5, &m, &sh), KERN_OK);
    const struct kern_q8_outstage fx = {.mult = &m, .shift = &sh,
                                        .qmin = -128, .qmax = 127};
    assert_int_equal(kern_q8_requantize_s8(1, 1, acc, 1, &fx, q, 1),
                     KERN_OK);
    assert_int_equal(q[0], 3);
    /* mult and shift may be NULL with a scale; a negative, NaN or inf
     * scale is refused */
    float bad = -1.0f;
    struct kern_q8_outstage e = {.per_channel = 0, .qmin = -128,
                                 .qmax = 127, .scale = &bad};
    assert_int_equal(kern_q8_requantize_s8(1, 1, acc, 1, &e, q, 1),
                     KERN_E_RANGE);
    bad = NAN;
    assert_int_equal(kern_q8_requantize_s8(1, 1, acc, 1, &e, q, 1),
                     KERN_E_RANGE);
    bad = INFINITY;
    assert_int_equal(kern_q8_requantize_s8(1, 1, acc, 1, &e, q, 1),
                     KERN_E_RANGE);
    e.scale = NULL; /* and then neither stage */
    assert_int_equal(kern_q8_requantize_s8(1, 1, acc, 1, &e, q, 1),
                     KERN_E_INVALID);
}

static int32_t rand_extreme(void)
{
    const int32_t sp[6] = {INT32_MIN, INT32_MIN + 1, INT32_MAX, -1, 0, 1};
    switch (randi(0, 3)) {
    case 0:
        return sp[randi(0, 5)];
    case 1:
        return (int32_t)next_rand();
    case 2:
        return randi(-2000000, 2000000);
    case 3:
        return randi(-300, 300);
    }
    return 0;
}

static void test_stage_bruteforce(void **state)
{
    (void)state;
    enum { MAXN = 150 };
    static int32_t acc[4 * MAXN], bias[MAXN], mult[MAXN];
    static int shift[MAXN];
    static int8_t q[4 * MAXN];
    for (int t = 0; t < 400; t++) {
        const size_t n = (size_t)randi(1, MAXN), m = (size_t)randi(1, 4);
        const int per_ch = t % 3 != 0;
        for (size_t j = 0; j < n; j++) {
            bias[j] = t % 5 == 0 ? rand_extreme() : randi(-100000, 100000);
            mult[j] = t % 7 == 0 ? rand_extreme()
                                 : randi(1 << 30, INT32_MAX);
            shift[j] = randi(-31, t % 4 == 0 ? 30 : 2);
        }
        for (size_t i = 0; i < m * n; i++) {
            acc[i] = rand_extreme();
        }
        const int32_t zp = randi(-128, 127);
        int32_t qmin = randi(-128, 127), qmax = randi(-128, 127);
        if (qmin > qmax) {
            const int32_t x = qmin;
            qmin = qmax;
            qmax = x;
        }
        const struct kern_q8_outstage os = {t % 11 ? bias : NULL, mult, shift,
                                            per_ch, zp, qmin, qmax, NULL};
        assert_int_equal(kern_q8_requantize_s8(m, n, acc, n, &os, q, n),
                         KERN_OK);
        for (size_t i = 0; i < m; i++) {
            for (size_t j = 0; j < n; j++) {
                const size_t c = per_ch ? j : 0;
                const int64_t x =
                    (int64_t)acc[i * n + j] + (os.bias ? bias[j] : 0);
                const int8_t want =
                    ref_out(x, mult[c], shift[c], zp, qmin, qmax);
                if (q[i * n + j] != want) {
                    fail_msg("t %d [%zu][%zu]: acc %d bias %d mult %d "
                             "shift %d: %d, want %d", t, i, j, acc[i * n + j],
                             os.bias ? bias[j] : 0, mult[c], shift[c],
                             q[i * n + j], want);
                }
            }
        }
    }
}

/* Against the real multiplier: for values inside the clamp the fixed-point
 * result is within one step of round(acc * real) + zp. */
static void test_stage_vs_real(void **state)
{
    (void)state;
    for (int t = 0; t < 3000; t++) {
        const double real = ldexp(0.5 + 0.5 * randu(), randi(-20, 0));
        int32_t m;
        int s;
        assert_int_equal(kern_q8_quantize_multiplier(real, &m, &s), KERN_OK);
        const int32_t acc = randi(-(int32_t)(100 / real), (int32_t)(100 / real));
        const struct kern_q8_outstage os = {NULL, &m, &s, 0, 0, -128, 127, NULL};
        int8_t q;
        assert_int_equal(kern_q8_requantize_s8(1, 1, &acc, 1, &os, &q, 1),
                         KERN_OK);
        assert_true(fabs((double)q - round(acc * real)) <= 1.0);
    }
}

static void test_stage_errors(void **state)
{
    (void)state;
    int32_t acc[4] = {0}, m = 1 << 30;
    int s = 0, bad = 31;
    int8_t q[4];
    struct kern_q8_outstage os = {NULL, &m, &s, 0, 0, -128, 127, NULL};
    assert_int_equal(kern_q8_requantize_s8(2, 2, acc, 2, NULL, q, 2),
                     KERN_E_INVALID);
    assert_int_equal(kern_q8_requantize_s8(2, 2, acc, 1, &os, q, 2),
                     KERN_E_SHAPE);
    assert_int_equal(kern_q8_requantize_s8(2, 2, acc, 2, &os, q, SIZE_MAX),
                     KERN_E_OVERFLOW);
    os.zero_point = 128;
    assert_int_equal(kern_q8_requantize_s8(2, 2, acc, 2, &os, q, 2),
                     KERN_E_RANGE);
    os.zero_point = 0;
    os.qmin = 5;
    os.qmax = 4;
    assert_int_equal(kern_q8_requantize_s8(2, 2, acc, 2, &os, q, 2),
                     KERN_E_RANGE);
    os.qmin = -128;
    os.qmax = 127;
    os.shift = &bad;
    assert_int_equal(kern_q8_requantize_s8(2, 2, acc, 2, &os, q, 2),
                     KERN_E_RANGE);
}

/* ---- fused GEMM --------------------------------------------------------- */

static void test_gemm_s8(void **state)
{
    (void)state;
    for (int t = 0; t < 60; t++) {
        size_t m = (size_t)randi(1, 70), n = (size_t)randi(1, 150),
               k = (size_t)randi(1, 300);
        if (t == 0) {
            m = 1, n = 1, k = 1;
        }
        if (t == 1) {
            m = 33, n = 64, k = 4; /* one row past a row tile */
        }
        if (t == 2) {
            m = 5, n = 65, k = 1031; /* one column past a tile */
        }
        const size_t lda = k + (size_t)randi(0, 3),
                     ldq = n + (size_t)randi(0, 3);
        int8_t *a = malloc(m * lda), *w = malloc(n * k), *q = malloc(m * ldq);
        int32_t *bias = malloc(n * 4), *mult = malloc(n * 4),
                *sums = malloc(n * 4);
        int *shift = malloc(n * sizeof(int));
        const size_t pb = kern_q8_packed_bytes(n, k);
        void *packed = malloc(pb);
        assert_non_null(a && w && q && bias && mult && sums && shift &&
                        packed);
        for (size_t i = 0; i < m * lda; i++) {
            a[i] = (int8_t)randi(-128, 127);
        }
        for (size_t i = 0; i < n * k; i++) {
            w[i] = (int8_t)randi(t % 4 ? -127 : -128, 127);
        }
        const int per_ch = t % 3 != 2;
        for (size_t j = 0; j < n; j++) {
            bias[j] = randi(-50000, 50000);
            /* a_scale * w_scale / out_scale of a layer: about 1 / k */
            assert_int_equal(kern_q8_quantize_multiplier(
                                 (0.2 + randu()) / (128.0 * (double)k), &mult[j],
                                 &shift[j]), KERN_OK);
        }
        const int32_t za = t == 3 ? -128 : t == 4 ? 127 : randi(-128, 127);
        const int32_t zo = randi(-128, 127);
        const int32_t qmin = t % 2 ? zo : -128; /* relu every other */
        assert_int_equal(kern_q8_pack_weights(w, n, k, k, packed, pb),
                         KERN_OK);
        assert_int_equal(kern_q8_packed_row_sums(packed, sums), KERN_OK);
        for (size_t j = 0; j < n; j++) {
            int32_t s = 0;
            for (size_t x = 0; x < k; x++) {
                s += w[j * k + x];
            }
            assert_int_equal(sums[j], s);
        }
        const struct kern_q8_outstage os = {bias, mult, shift, per_ch, zo,
                                            qmin, 127, NULL};
        memset(q, 0x5a, m * ldq);
        assert_int_equal(kern_q8_gemm_s8(m, n, k, a, lda, za, packed, sums,
                                         &os, q, ldq), KERN_OK);
        for (size_t i = 0; i < m; i++) {
            for (size_t j = 0; j < n; j++) {
                int64_t acc = bias[j];
                for (size_t x = 0; x < k; x++) {
                    acc += ((int64_t)a[i * lda + x] - za) * w[j * k + x];
                }
                const size_t c = per_ch ? j : 0;
                const int8_t want =
                    ref_out(acc, mult[c], shift[c], zo, qmin, 127);
                if (q[i * ldq + j] != want) {
                    fail_msg("m %zu n %zu k %zu za %d: q[%zu][%zu] = %d, "
                             "want %d", m, n, k, za, i, j, q[i * ldq + j],
                             want);
                }
            }
        }
        free(a), free(w), free(q), free(bias), free(mult), free(sums);
        free(shift), free(packed);
    }
}

static void test_gemm_s8_errors(void **state)
{
    (void)state;
    int8_t w[4] = {1, 2, 3, 4}, a[4] = {0}, q[4];
    int32_t sums[2], m = 1 << 30;
    int s = 0;
    unsigned char packed[256];
    assert_true(kern_q8_packed_bytes(2, 2) <= sizeof packed);
    assert_int_equal(kern_q8_pack_weights(w, 2, 2, 2, packed, sizeof packed),
                     KERN_OK);
    assert_int_equal(kern_q8_packed_row_sums(packed, sums), KERN_OK);
    assert_int_equal(sums[0], 3);
    assert_int_equal(sums[1], 7);
    const struct kern_q8_outstage os = {NULL, &m, &s, 0, 0, -128, 127, NULL};
    assert_int_equal(kern_q8_gemm_s8(2, 2, 2, a, 2, 128, packed, sums, &os,
                                     q, 2), KERN_E_RANGE);
    assert_int_equal(kern_q8_gemm_s8(2, 2, 3, a, 3, 0, packed, sums, &os, q,
                                     2), KERN_E_SHAPE);
    assert_int_equal(kern_q8_gemm_s8(2, 2, 2, a, 2, 0, packed, NULL, &os, q,
                                     2), KERN_E_INVALID);
    /* a buffer of the header's size that kern_q8_pack_weights did not
     * write */
    unsigned char junk[64] = {0};
    assert_int_equal(kern_q8_packed_row_sums(junk, sums), KERN_E_INVALID);
}

/* ---- depthwise ---------------------------------------------------------- */

static void test_dwconv_s8(void **state)
{
    (void)state;
    for (int t = 0; t < 40; t++) {
        struct kern_dwconv2d_shape s = {0};
        s.batch = (size_t)randi(1, 2);
        s.channels = (size_t)randi(1, 9);
        s.in_h = (size_t)randi(1, 12);
        s.in_w = (size_t)randi(1, 80);
        s.kh = (size_t)randi(1, 3) | 1;
        s.kw = (size_t)randi(1, 5) | 1;
        s.stride_h = (size_t)randi(1, 2);
        s.stride_w = (size_t)randi(1, 2);
        s.pad_top = (size_t)randi(0, 2);
        s.pad_left = (size_t)randi(0, 2);
        s.pad_bottom = (size_t)randi(0, 2);
        s.pad_right = (size_t)randi(0, 2);
        s.dilation_h = t % 5 == 0 ? 2 : 1;
        s.dilation_w = t % 7 == 0 ? 2 : 0;
        size_t oh, ow;
        if (kern_dwconv2d_out_hw(&s, &oh, &ow) != KERN_OK) {
            continue;
        }
        const size_t C = s.channels, taps = s.kh * s.kw;
        const size_t xn = s.batch * C * s.in_h * s.in_w;
        const size_t yn = s.batch * C * oh * ow;
        int8_t *x = malloc(xn), *w = malloc(C * taps), *y = malloc(yn);
        int32_t *bias = malloc(C * 4), *mult = malloc(C * 4);
        int *shift = malloc(C * sizeof(int));
        assert_non_null(x && w && y && bias && mult && shift);
        for (size_t i = 0; i < xn; i++) {
            x[i] = (int8_t)randi(-128, 127);
        }
        for (size_t i = 0; i < C * taps; i++) {
            w[i] = (int8_t)randi(-127, 127);
        }
        for (size_t c = 0; c < C; c++) {
            bias[c] = randi(-3000, 3000);
            assert_int_equal(kern_q8_quantize_multiplier(
                                 (0.5 + randu()) / (64.0 * (double)taps),
                                 &mult[c], &shift[c]), KERN_OK);
        }
        const int32_t xz = randi(-128, 127), zo = randi(-20, 20);
        const struct kern_q8_outstage os = {bias, mult, shift, 1, zo, -128,
                                            100, NULL};
        /* the caller's work (any alignment: one byte in) every other
         * case, else the kernel's own */
        const size_t wb = kern_q8_dwconv2d_work_bytes(&s);
        assert_true(wb > 0);
        unsigned char *work = t % 2 ? malloc(wb + 1) : NULL;
        if (work) {
            memset(work, 0xa5, wb + 1);
        }
        assert_int_equal(kern_q8_dwconv2d_s8(&s, x, xz, w, &os,
                                             work ? work + 1 : NULL, y),
                         KERN_OK);
        free(work);
        /* the reference pads the input explicitly with its zero point */
        const size_t dh = s.dilation_h ? s.dilation_h : 1,
                     dw = s.dilation_w ? s.dilation_w : 1;
        const size_t ph = s.in_h + s.pad_top + s.pad_bottom,
                     pw = s.in_w + s.pad_left + s.pad_right;
        int8_t *pad = malloc(ph * pw);
        assert_non_null(pad);
        for (size_t b = 0; b < s.batch; b++) {
            for (size_t c = 0; c < C; c++) {
                memset(pad, (int)(int8_t)xz, ph * pw);
                for (size_t r = 0; r < s.in_h; r++) {
                    memcpy(pad + (r + s.pad_top) * pw + s.pad_left,
                           x + ((b * C + c) * s.in_h + r) * s.in_w, s.in_w);
                }
                for (size_t oy = 0; oy < oh; oy++) {
                    for (size_t ox = 0; ox < ow; ox++) {
                        int64_t acc = bias[c];
                        for (size_t ky = 0; ky < s.kh; ky++) {
                            for (size_t kx = 0; kx < s.kw; kx++) {
                                const int8_t v =
                                    pad[(oy * s.stride_h + ky * dh) * pw +
                                        ox * s.stride_w + kx * dw];
                                acc += ((int64_t)v - xz) *
                                       w[c * taps + ky * s.kw + kx];
                            }
                        }
                        const int8_t want =
                            ref_out(acc, mult[c], shift[c], zo, -128, 100);
                        const int8_t got = y[((b * C + c) * oh + oy) * ow + ox];
                        if (got != want) {
                            fail_msg("t %d b %zu c %zu (%zu, %zu): %d, want "
                                     "%d", t, b, c, oy, ox, got, want);
                        }
                    }
                }
            }
        }
        free(pad), free(x), free(w), free(y), free(bias), free(mult);
        free(shift);
    }
}

/* ---- conv: the zero-point lowering and the fused GEMM --------------------- */

/* A grouped, padded, strided (sometimes dilated) int8 convolution with an
 * asymmetric input as kern_im2col_s8_zp + kern_q8_gemm_s8, against a plain
 * loop over an input padded explicitly with its zero point. */
static void test_conv_s8(void **state)
{
    (void)state;
    for (int t = 0; t < 60; t++) {
        struct kern_conv2d_shape s = {0};
        s.batch = 1;
        s.groups = (size_t)randi(1, 2);
        s.in_c = s.groups * (size_t)randi(1, 5);
        s.out_c = s.groups * (size_t)randi(1, 20);
        s.in_h = (size_t)randi(3, t % 3 ? 11 : 40);
        s.in_w = (size_t)randi(3, t % 3 ? 11 : 40);
        s.kh = (size_t)randi(1, 3);
        s.kw = (size_t)randi(1, 3);
        s.stride_h = (size_t)randi(1, 2);
        s.stride_w = (size_t)randi(1, 2);
        s.pad_top = (size_t)randi(0, 2);
        s.pad_left = (size_t)randi(0, 2);
        s.pad_bottom = (size_t)randi(0, 1);
        s.pad_right = (size_t)randi(0, 1);
        s.dilation_h = t % 4 == 0 ? 2 : 1;
        size_t oh, ow;
        if (kern_conv2d_out_hw(&s, &oh, &ow) != KERN_OK) {
            continue;
        }
        const size_t cg = s.in_c / s.groups, og = s.out_c / s.groups;
        const size_t K = cg * s.kh * s.kw, P = oh * ow;
        const size_t xn = s.in_c * s.in_h * s.in_w;
        int8_t *x = malloc(xn), *w = malloc(s.out_c * K), *col = malloc(P * K);
        int8_t *y = malloc(P * og), *col0 = malloc(P * K);
        int32_t *bias = malloc(og * 4), *mult = malloc(og * 4),
                *sums = malloc(og * 4);
        int *shift = malloc(og * sizeof(int));
        const size_t pb = kern_q8_packed_bytes(og, K);
        void *packed = malloc(pb);
        assert_non_null(x && w && col && y && col0 && bias && mult && sums &&
                        shift && packed);
        for (size_t i = 0; i < xn; i++) {
            x[i] = (int8_t)randi(-128, 127);
        }
        for (size_t i = 0; i < s.out_c * K; i++) {
            w[i] = (int8_t)randi(-127, 127);
        }
        const int32_t xz = t == 1 ? 0 : randi(-128, 127), zo = randi(-50, 50);
        for (size_t g = 0; g < s.groups; g++) {
            assert_int_equal(kern_im2col_s8_zp(&s, x, 0, g, xz, col),
                             KERN_OK);
            /* x_zero 0 is the plain lowering */
            assert_int_equal(kern_im2col_s8_zp(&s, x, 0, g, 0, col0),
                             KERN_OK);
            int8_t *plain = malloc(P * K);
            assert_non_null(plain);
            assert_int_equal(kern_im2col_s8(&s, x, 0, g, plain), KERN_OK);
            assert_memory_equal(col0, plain, P * K);
            free(plain);
            const int8_t *wg = w + g * og * K;
            assert_int_equal(kern_q8_pack_weights(wg, og, K, K, packed, pb),
                             KERN_OK);
            assert_int_equal(kern_q8_packed_row_sums(packed, sums), KERN_OK);
            for (size_t o = 0; o < og; o++) {
                bias[o] = randi(-2000, 2000);
                assert_int_equal(kern_q8_quantize_multiplier(
                                     (0.5 + randu()) / (64.0 * (double)K),
                                     &mult[o], &shift[o]), KERN_OK);
            }
            const struct kern_q8_outstage os = {bias, mult, shift, 1, zo, zo,
                                                127, NULL};
            assert_int_equal(kern_q8_gemm_s8(P, og, K, col, K, xz, packed,
                                             sums, &os, y, og), KERN_OK);
            const size_t dh = s.dilation_h ? s.dilation_h : 1;
            for (size_t oy = 0; oy < oh; oy++) {
                for (size_t ox = 0; ox < ow; ox++) {
                    for (size_t o = 0; o < og; o++) {
                        int64_t acc = bias[o];
                        size_t kk = 0;
                        for (size_t c = 0; c < cg; c++) {
                            for (size_t ky = 0; ky < s.kh; ky++) {
                                for (size_t kx = 0; kx < s.kw; kx++, kk++) {
                                    const long iy = (long)(oy * s.stride_h +
                                                           ky * dh) -
                                                    (long)s.pad_top;
                                    const long ix = (long)(ox * s.stride_w +
                                                           kx) -
                                                    (long)s.pad_left;
                                    int32_t v = xz;
                                    if (iy >= 0 && ix >= 0 &&
                                        iy < (long)s.in_h &&
                                        ix < (long)s.in_w) {
                                        v = x[((g * cg + c) * s.in_h +
                                               (size_t)iy) * s.in_w +
                                              (size_t)ix];
                                    }
                                    acc += (int64_t)(v - xz) *
                                           wg[o * K + kk];
                                }
                            }
                        }
                        const int8_t want =
                            ref_out(acc, mult[o], shift[o], zo, zo, 127);
                        const int8_t got = y[(oy * ow + ox) * og + o];
                        if (got != want) {
                            fail_msg("t %d g %zu (%zu, %zu) o %zu: %d, want "
                                     "%d", t, g, oy, ox, o, got, want);
                        }
                    }
                }
            }
            /* the kp layout: rows lowered, NCHW planes out, the same
             * bytes as the checked [pixels][channels] result */
            void *wk = malloc(kern_q8_kp_bytes(og, K));
            void *work = malloc(kern_q8_kp_work_bytes(og, K));
            int8_t *rows = malloc(P * K), *yk = malloc(P * og);
            assert_non_null(wk && work && rows && yk);
            assert_int_equal(kern_q8_pack_kp(og, K, wg, K, wk), KERN_OK);
            assert_int_equal(kern_im2row_s8_kp(&s, x, 0, g, xz, rows),
                             KERN_OK);
            for (size_t i = 0; i < P; i++) {
                for (size_t kk = 0; kk < K; kk++) {
                    if (rows[kk * P + i] != col[i * K + kk]) {
                        fail_msg("t %d g %zu: row %zu pixel %zu: %d, want %d",
                                 t, g, kk, i, rows[kk * P + i],
                                 col[i * K + kk]);
                    }
                }
            }
            assert_int_equal(kern_q8_gemm_kp_s8(og, P, K, wk, rows, P, xz, &os,
                                                yk, P, work),
                             KERN_OK);
            for (size_t i = 0; i < P; i++) {
                for (size_t o = 0; o < og; o++) {
                    if (yk[o * P + i] != y[i * og + o]) {
                        fail_msg("t %d g %zu kp: pixel %zu o %zu: %d, want %d",
                                 t, g, i, o, yk[o * P + i], y[i * og + o]);
                    }
                }
            }
            /* the kp form read in place (groups 1, undilated): the same
             * bytes as the checked [pixels][channels] result */
            const size_t cwb = kern_q8_conv_kp_work_bytes(&s);
            if (s.groups == 1 && s.dilation_h <= 1 && s.dilation_w <= 1) {
                assert_true(cwb > 0);
                void *cw = malloc(cwb);
                assert_non_null(cw);
                memset(yk, 0x5a, P * og);
                assert_int_equal(kern_q8_conv_kp_s8(&s, wk, x, 0, xz, &os, yk,
                                                    cw),
                                 KERN_OK);
                for (size_t i = 0; i < P; i++) {
                    for (size_t o = 0; o < og; o++) {
                        if (yk[o * P + i] != y[i * og + o]) {
                            fail_msg("t %d conv kp: pixel %zu o %zu: %d, "
                                     "want %d", t, i, o, yk[o * P + i],
                                     y[i * og + o]);
                        }
                    }
                }
                free(cw);
            } else {
                assert_int_equal(cwb, 0);
            }
            /* the float stage (ONNX Runtime's) through kp: the same bytes
             * as through the packed [pixels][K] GEMM */
            float *fs = malloc(og * sizeof *fs);
            int8_t *yf = malloc(P * og);
            assert_non_null(fs && yf);
            for (size_t o = 0; o < og; o++) {
                fs[o] = (float)((0.5 + randu()) / (64.0 * (double)K));
            }
            const struct kern_q8_outstage osf = {bias, NULL, NULL, 1, zo, zo,
                                                 127, fs};
            assert_int_equal(kern_q8_gemm_s8(P, og, K, col, K, xz, packed,
                                             sums, &osf, yf, og), KERN_OK);
            assert_int_equal(kern_q8_gemm_kp_s8(og, P, K, wk, rows, P, xz,
                                                &osf, yk, P, work),
                             KERN_OK);
            for (size_t i = 0; i < P; i++) {
                for (size_t o = 0; o < og; o++) {
                    if (yk[o * P + i] != yf[i * og + o]) {
                        fail_msg("t %d g %zu kp float: pixel %zu o %zu: %d, "
                                 "want %d", t, g, i, o, yk[o * P + i],
                                 yf[i * og + o]);
                    }
                }
            }
            free(fs), free(yf);
            free(wk), free(work), free(rows), free(yk);
        }
        free(x), free(w), free(col), free(y), free(col0), free(bias);
        free(mult), free(sums), free(shift), free(packed);
    }
    struct kern_conv2d_shape s = {1, 1, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
                                  1, 1};
    int8_t x[9] = {0}, col[9];
    assert_int_equal(kern_im2col_s8_zp(&s, x, 0, 0, 128, col), KERN_E_RANGE);
}

/* ---- add ---------------------------------------------------------------- */

static int8_t ref_add(int8_t a, int8_t b, const struct kern_q8_add_params *p)
{
    const int64_t xa = ((int64_t)a - p->a_zero) * ((int64_t)1 << p->left_shift);
    const int64_t xb = ((int64_t)b - p->b_zero) * ((int64_t)1 << p->left_shift);
    const int64_t s = ref_mbqm(xa, p->a_mult, p->a_shift) +
                      ref_mbqm(xb, p->b_mult, p->b_shift);
    const int64_t v = ref_mbqm(s, p->out_mult, p->out_shift) + p->out_zero;
    return (int8_t)(v < p->qmin ? p->qmin : v > p->qmax ? p->qmax : v);
}

/* ONNX Runtime's float add, by hand: a_scale 0.5, b_scale 0.25, out 1
 * with zero point 3 (fixed part 3 - (0.5 * -2 + 0.25 * 4) = 3) and
 * qmax 90: the halves round to even, the sums past the clamp saturate */
static void test_addf(void **state)
{
    (void)state;
    struct kern_q8_addf_params p;
    assert_int_equal(kern_q8_addf_params_init(0.5f, -2, 0.25f, 4, 1.0f, 3,
                                              -128, 90, 0, &p), KERN_OK);
    assert_true(p.ra == 0.5f && p.rb == 0.25f && p.fixed == 3.0f);
    /* f = 0.5 a + 0.25 b + 3 */
    const int8_t a[20] = {-2, -1, 0, 1, 127, -128, 3, -3, 5, 7,
                          -2, -2, -2, -2, -2, -2, -2, -2, 100, -100};
    const int8_t b[20] = {4, 4, 4, 4, 4, 4, 4, 4, 4, 4,
                          6, 2, 10, -2, 127, -128, 5, 3, 127, -128};
    /* 3, 3.5, 4, 4.5, 67.5, -60, 5.5, 2.5, 6.5, 7.5,
     * 3.5, 2.5, 4.5, 1.5, 33.75, -30, 3.25, 2.75, 84.75, -79 */
    const int8_t want[20] = {3, 4, 4, 4, 68, -60, 6, 2, 6, 8,
                             4, 2, 4, 2, 34, -30, 3, 3, 85, -79};
    int8_t out[20];
    assert_int_equal(kern_q8_addf_s8(20, a, b, &p, out), KERN_OK);
    assert_memory_equal(out, want, sizeof want);
    /* the clamp: 63.5 + 31.75 + 3 = 98.25 past qmax 90 */
    const int8_t big = 127;
    assert_int_equal(kern_q8_addf_s8(1, &big, &big, &p, out), KERN_OK);
    assert_int_equal(out[0], 90);
    /* the uint8 domain: every value, zero point and bound plus 128, the
     * result minus 128; with these powers of two every product is exact,
     * so the same bytes */
    assert_int_equal(kern_q8_addf_params_init(0.5f, -2, 0.25f, 4, 1.0f, 3,
                                              -128, 90, 1, &p), KERN_OK);
    assert_int_equal(p.off, 128);
    assert_int_equal(kern_q8_addf_s8(20, a, b, &p, out), KERN_OK);
    assert_memory_equal(out, want, sizeof want);
    assert_int_equal(kern_q8_addf_params_init(0.5f, 0, 0.5f, 0, 0.0f, 0,
                                              -128, 127, 0, &p),
                     KERN_E_RANGE);
    assert_int_equal(kern_q8_addf_params_init(0.5f, 0, 0.5f, 0, 1.0f, 0,
                                              10, 5, 0, &p), KERN_E_RANGE);
    assert_int_equal(kern_q8_addf_s8(1, NULL, &big, &p, out),
                     KERN_E_INVALID);
}

static void test_add(void **state)
{
    (void)state;
    struct kern_q8_add_params p;
    /* hand: unit scales, zero points 0: a + b saturated */
    assert_int_equal(kern_q8_add_params_init(1.0f, 0, 1.0f, 0, 1.0f, 0, -128,
                                             127, &p), KERN_OK);
    {
        const int8_t a[9] = {3, -5, 100, -100, 0, 127, -128, 60, 1};
        const int8_t b[9] = {4, 2, 100, -100, 0, 0, -128, 67, -1};
        const int8_t want[9] = {7, -3, 127, -128, 0, 127, -128, 127, 0};
        int8_t out[9];
        assert_int_equal(kern_q8_add_s8(9, a, b, &p, out), KERN_OK);
        assert_memory_equal(out, want, 9);
    }
    /* hand: a scale 0.5 zp 10, b scale 0.25 zp -4, out scale 1 zp 3:
     * (20 - 10) * 0.5 + (12 + 4) * 0.25 = 9 -> 12 */
    assert_int_equal(kern_q8_add_params_init(0.5f, 10, 0.25f, -4, 1.0f, 3,
                                             -128, 127, &p), KERN_OK);
    {
        int8_t a[19], b[19], out[19];
        memset(a, 20, sizeof a);
        memset(b, 12, sizeof b);
        assert_int_equal(kern_q8_add_s8(19, a, b, &p, out), KERN_OK);
        for (int i = 0; i < 19; i++) {
            assert_int_equal(out[i], 12);
        }
    }
    /* random: the formula exactly, and float within one step */
    enum { MAXN = 300 };
    static int8_t a[MAXN], b[MAXN], out[MAXN];
    for (int t = 0; t < 300; t++) {
        const float sa = (float)ldexp(0.5 + randu(), randi(-8, 0));
        const float sb = (float)ldexp(0.5 + randu(), randi(-8, 0));
        const float so = (float)ldexp(0.5 + randu(), randi(-7, 1));
        const int32_t za = randi(-128, 127), zb = randi(-128, 127),
                      zo = randi(-128, 127);
        const int32_t qmin = t % 2 ? zo : -128;
        assert_int_equal(kern_q8_add_params_init(sa, za, sb, zb, so, zo, qmin,
                                                 127, &p), KERN_OK);
        const size_t n = (size_t)randi(1, MAXN);
        for (size_t i = 0; i < n; i++) {
            a[i] = (int8_t)randi(-128, 127);
            b[i] = (int8_t)randi(-128, 127);
        }
        assert_int_equal(kern_q8_add_s8(n, a, b, &p, out), KERN_OK);
        for (size_t i = 0; i < n; i++) {
            assert_int_equal(out[i], ref_add(a[i], b[i], &p));
            double f = ((a[i] - za) * (double)sa + (b[i] - zb) * (double)sb) /
                           so + zo;
            f = f < qmin ? qmin : f > 127 ? 127 : f;
            assert_true(fabs(out[i] - f) <= 1.0);
        }
    }
    assert_int_equal(kern_q8_add_params_init(0.0f, 0, 1.0f, 0, 1.0f, 0, -128,
                                             127, &p), KERN_E_RANGE);
    assert_int_equal(kern_q8_add_params_init(1.0f, 200, 1.0f, 0, 1.0f, 0,
                                             -128, 127, &p), KERN_E_RANGE);
    assert_int_equal(kern_q8_add_s8(1, NULL, a, &p, out), KERN_E_INVALID);
}

/* kern_im2col_s8_zp against its definition (a padded tap reads the zero
 * point) on shapes wide enough for the vector lowerings, every stride and
 * padding up to the window: the undilated path lowers with zeros and then
 * sets the padded taps. */
static void test_im2col_zp(void **state)
{
    (void)state;
    for (int t = 0; t < 200; t++) {
        struct kern_conv2d_shape s = {0};
        s.batch = (size_t)randi(1, 2);
        s.groups = (size_t)randi(1, 2);
        s.in_c = s.groups * (size_t)randi(1, 4);
        s.out_c = s.groups;
        s.in_h = (size_t)randi(1, 12);
        s.in_w = (size_t)randi(1, 40);
        s.kh = (size_t)randi(1, 5);
        s.kw = (size_t)randi(1, 5);
        s.stride_h = (size_t)randi(1, 3);
        s.stride_w = (size_t)randi(1, 3);
        s.pad_top = (size_t)randi(0, (int)s.kh - 1);
        s.pad_left = (size_t)randi(0, (int)s.kw - 1);
        s.pad_bottom = (size_t)randi(0, (int)s.kh - 1);
        s.pad_right = (size_t)randi(0, (int)s.kw - 1);
        s.dilation_w = t % 10 == 0 ? 2 : 1;
        size_t oh, ow;
        if (kern_conv2d_out_hw(&s, &oh, &ow) != KERN_OK) {
            continue;
        }
        const size_t cg = s.in_c / s.groups, K = cg * s.kh * s.kw;
        const size_t xn = s.batch * s.in_c * s.in_h * s.in_w;
        const size_t dw = s.dilation_w;
        int8_t *x = malloc(xn), *col = malloc(oh * ow * K);
        assert_non_null(x);
        assert_non_null(col);
        for (size_t i = 0; i < xn; i++) {
            x[i] = (int8_t)randi(-128, 127);
        }
        const int32_t zp = randi(-128, 127);
        const size_t b = (size_t)randi(0, (int)s.batch - 1);
        const size_t g = (size_t)randi(0, (int)s.groups - 1);
        assert_int_equal(kern_im2col_s8_zp(&s, x, b, g, zp, col), KERN_OK);
        for (size_t oy = 0; oy < oh; oy++) {
            for (size_t ox = 0; ox < ow; ox++) {
                for (size_t c = 0; c < cg; c++) {
                    for (size_t ky = 0; ky < s.kh; ky++) {
                        for (size_t kx = 0; kx < s.kw; kx++) {
                            const long iy = (long)(oy * s.stride_h + ky) -
                                            (long)s.pad_top;
                            const long ix = (long)(ox * s.stride_w + kx * dw) -
                                            (long)s.pad_left;
                            int want = zp;
                            if (iy >= 0 && iy < (long)s.in_h && ix >= 0 &&
                                ix < (long)s.in_w) {
                                want = x[((b * s.in_c + g * cg + c) * s.in_h +
                                          (size_t)iy) * s.in_w + (size_t)ix];
                            }
                            const int got =
                                col[(oy * ow + ox) * K +
                                    (c * s.kh + ky) * s.kw + kx];
                            if (got != want) {
                                fail_msg("shape %d: oy %zu ox %zu c %zu ky "
                                         "%zu kx %zu: %d, want %d", t, oy,
                                         ox, c, ky, kx, got, want);
                            }
                        }
                    }
                }
            }
        }
        free(x);
        free(col);
    }
}

/* kern_q8_gemm_s8_t gives kern_q8_gemm_s8's bytes transposed, on shapes
 * with partial tiles in both directions and a padded ldq. */
static void test_gemm_s8_t(void **state)
{
    (void)state;
    const size_t shapes[][3] = {{1, 1, 1},    {5, 3, 7},     {48, 64, 16},
                                {50, 70, 27}, {130, 16, 9},  {97, 100, 64},
                                {16, 16, 144}, {2304, 8, 8}};
    for (size_t t = 0; t < sizeof shapes / sizeof shapes[0]; t++) {
        const size_t m = shapes[t][0], n = shapes[t][1], k = shapes[t][2];
        const size_t ldq = m + 3;
        int8_t *a = malloc(m * k), *w = malloc(n * k), *q = malloc(m * n);
        int8_t *qt = malloc(n * ldq);
        int32_t *bias = malloc(n * 4), *mult = malloc(n * 4),
                *sums = malloc(n * 4);
        int *shift = malloc(n * sizeof(int));
        const size_t pb = kern_q8_packed_bytes(n, k);
        void *packed = malloc(pb);
        assert_non_null(a && w && q && qt && bias && mult && sums && shift &&
                        packed);
        for (size_t i = 0; i < m * k; i++) {
            a[i] = (int8_t)randi(-128, 127);
        }
        for (size_t i = 0; i < n * k; i++) {
            w[i] = (int8_t)randi(-127, 127);
        }
        for (size_t j = 0; j < n; j++) {
            bias[j] = randi(-5000, 5000);
            assert_int_equal(kern_q8_quantize_multiplier(
                                 (0.5 + randu()) / (64.0 * (double)k),
                                 &mult[j], &shift[j]),
                             KERN_OK);
        }
        assert_int_equal(kern_q8_pack_weights(w, n, k, k, packed, pb),
                         KERN_OK);
        assert_int_equal(kern_q8_packed_row_sums(packed, sums), KERN_OK);
        const struct kern_q8_outstage os = {bias, mult, shift, 1, 5, -128,
                                            127, NULL};
        assert_int_equal(kern_q8_gemm_s8(m, n, k, a, k, -7, packed, sums, &os,
                                         q, n),
                         KERN_OK);
        memset(qt, 0x55, n * ldq);
        assert_int_equal(kern_q8_gemm_s8_t(m, n, k, a, k, -7, packed, sums,
                                           &os, qt, ldq),
                         KERN_OK);
        for (size_t i = 0; i < m; i++) {
            for (size_t j = 0; j < n; j++) {
                assert_int_equal(qt[j * ldq + i], q[i * n + j]);
            }
        }
        /* the padding of each plane is untouched */
        for (size_t j = 0; j < n; j++) {
            for (size_t i = m; i < ldq; i++) {
                assert_int_equal(qt[j * ldq + i], 0x55);
            }
        }
        /* planes shorter than M */
        assert_int_equal(kern_q8_gemm_s8_t(m, n, k, a, k, -7, packed, sums,
                                           &os, qt, m - 1),
                         KERN_E_SHAPE);
        free(a), free(w), free(q), free(qt), free(bias), free(mult);
        free(sums), free(shift), free(packed);
    }
}

static void test_quantize_zp(void **state)
{
    (void)state;
    /* scale 0.5, zero -3: x / 0.5 rounded half to even, then -3 */
    const float x[12] = {0.0f,  0.25f, 0.75f, -0.25f, -0.75f, 1.0f,
                         100.0f, -100.0f, NAN, INFINITY, -INFINITY, 0.26f};
    const int8_t want[12] = {-3, -3, -1, -3, -5, -1, 127, -128, -3, 127,
                             -128, -2};
    int8_t q[12];
    assert_int_equal(kern_q8_quantize_zp_f32(x, 12, 0.5f, -3, q), KERN_OK);
    assert_memory_equal(q, want, 12);
    /* 20 values: the vector body and its tail agree with the short form */
    float xl[20];
    int8_t ql[20];
    for (int i = 0; i < 20; i++) {
        xl[i] = x[i % 12];
    }
    assert_int_equal(kern_q8_quantize_zp_f32(xl, 20, 0.5f, -3, ql), KERN_OK);
    for (int i = 0; i < 20; i++) {
        assert_int_equal(ql[i], want[i % 12]);
    }
    assert_int_equal(kern_q8_quantize_zp_f32(x, 1, 0.0f, 0, q), KERN_E_RANGE);
    assert_int_equal(kern_q8_quantize_zp_f32(x, 1, 1.0f, 128, q),
                     KERN_E_RANGE);
    assert_int_equal(kern_q8_quantize_zp_f32(NULL, 1, 1.0f, 0, q),
                     KERN_E_INVALID);
}

/* ---- rescale and pools --------------------------------------------------- */

static void test_rescale(void **state)
{
    (void)state;
    struct kern_q8_rescale r;
    /* ratio 2 exactly: y = 3 + 2 (x + 2), clamped */
    assert_int_equal(kern_q8_rescale_init(0.5f, 0.25f, 3, -128, 127, &r),
                     KERN_OK);
    const int8_t x[6] = {-2, -1, 0, 10, 127, -128};
    const int8_t want[6] = {3, 5, 7, 27, 127, -128};
    int8_t y[8];
    assert_int_equal(kern_q8_rescale_s8(6, x, -2, &r, y), KERN_OK);
    assert_memory_equal(y, want, 6);
    /* ratio 1/4: halves round away from zero (TFLite's MBQM) */
    assert_int_equal(kern_q8_rescale_init(1.0f, 4.0f, 0, -128, 127, &r),
                     KERN_OK);
    const int8_t x2[8] = {1, 2, -2, 6, -6, 3, -3, 127};
    const int8_t want2[8] = {0, 1, -1, 2, -2, 1, -1, 32};
    assert_int_equal(kern_q8_rescale_s8(8, x2, 0, &r, y), KERN_OK);
    assert_memory_equal(y, want2, 8);
    /* relu as the clamp qmin = out_zero, in place */
    assert_int_equal(kern_q8_rescale_init(1.0f, 1.0f, -10, -10, 127, &r),
                     KERN_OK);
    int8_t x3[4] = {-5, 0, 5, 100};
    const int8_t want3[4] = {-10, -10, -5, 90};
    assert_int_equal(kern_q8_rescale_s8(4, x3, 0, &r, x3), KERN_OK);
    assert_memory_equal(x3, want3, 4);
    /* a ratio of 2000, capped at 1024: every nonzero difference saturates */
    assert_int_equal(kern_q8_rescale_init(2000.0f, 1.0f, 0, -128, 127, &r),
                     KERN_OK);
    const int8_t x4[3] = {1, 0, -1};
    const int8_t want4[3] = {127, 0, -128};
    assert_int_equal(kern_q8_rescale_s8(3, x4, 0, &r, y), KERN_OK);
    assert_memory_equal(y, want4, 3);
    /* a long vector against the real formula rounded half away from zero
     * (the ratio is not a power of two; both roundings agree away from
     * exact halves, which 0.37 / 0.11 never gives on these integers) */
    assert_int_equal(kern_q8_rescale_init(0.37f, 0.11f, 7, -128, 127, &r),
                     KERN_OK);
    int8_t xl[256], yl[256];
    for (int i = 0; i < 256; i++) {
        xl[i] = (int8_t)(i - 128);
    }
    assert_int_equal(kern_q8_rescale_s8(256, xl, -3, &r, yl), KERN_OK);
    for (int i = 0; i < 256; i++) {
        double v = 7.0 + round((double)(xl[i] + 3) * (0.37f / (double)0.11f));
        v = v < -128 ? -128 : v > 127 ? 127 : v;
        assert_int_equal(yl[i], (int)v);
    }
    /* errors */
    assert_int_equal(kern_q8_rescale_init(0.0f, 1.0f, 0, -128, 127, &r),
                     KERN_E_RANGE);
    assert_int_equal(kern_q8_rescale_init(1.0f, NAN, 0, -128, 127, &r),
                     KERN_E_RANGE);
    assert_int_equal(kern_q8_rescale_init(1.0f, 1.0f, 128, -128, 127, &r),
                     KERN_E_RANGE);
    assert_int_equal(kern_q8_rescale_init(1.0f, 1.0f, 0, 5, 4, &r),
                     KERN_E_RANGE);
    assert_int_equal(kern_q8_rescale_init(1.0f, 1.0f, 0, -128, 127, NULL),
                     KERN_E_INVALID);
    assert_int_equal(kern_q8_rescale_init(1.0f, 1.0f, 0, -128, 127, &r),
                     KERN_OK);
    assert_int_equal(kern_q8_rescale_s8(1, x, 200, &r, y), KERN_E_RANGE);
    assert_int_equal(kern_q8_rescale_s8(1, NULL, 0, &r, y), KERN_E_INVALID);
    struct kern_q8_rescale bad = r;
    bad.left_shift = 20;
    bad.shift = 3; /* (x - zero) 2^23 could leave int32 */
    assert_int_equal(kern_q8_rescale_s8(1, x, 0, &bad, y), KERN_E_RANGE);
}

static void test_maxpool_s8(void **state)
{
    (void)state;
    /* 2x2 stride 2 */
    const int8_t x[12] = {1, -5, 3, 2, -7, 9, -128, 4, 0, -1, 6, -3};
    struct kern_pool2d_shape s = {.batch = 1, .channels = 1, .in_h = 3,
                                  .in_w = 4, .kh = 2, .kw = 2,
                                  .stride_h = 2, .stride_w = 2};
    int8_t y[9];
    assert_int_equal(kern_q8_maxpool2d_s8(&s, x, NULL, y), KERN_OK);
    assert_int_equal(y[0], 9);
    assert_int_equal(y[1], 4);
    /* padding never wins, even over -128: 2x2 stride 1 pad 1 on 2x2 */
    const int8_t x2[4] = {-100, -120, -128, -90};
    const int8_t want2[9] = {-100, -100, -120, -100, -90, -90, -128, -90,
                             -90};
    struct kern_pool2d_shape s2 = {.batch = 1, .channels = 1, .in_h = 2,
                                   .in_w = 2, .kh = 2, .kw = 2,
                                   .stride_h = 1, .stride_w = 1,
                                   .pad_top = 1, .pad_left = 1,
                                   .pad_bottom = 1, .pad_right = 1};
    assert_int_equal(kern_q8_maxpool2d_s8(&s2, x2, NULL, y), KERN_OK);
    assert_memory_equal(y, want2, 9);
    /* wide rows (whole vectors and tails) for strides 1, 2 and 3 against
     * a plain loop over each window */
    enum { H = 3, W = 75 };
    int8_t xw[2 * H * W], yw[2 * H * W];
    for (int i = 0; i < 2 * H * W; i++) {
        xw[i] = (int8_t)randi(-128, 127);
    }
    for (size_t st = 1; st <= 3; st++) {
        struct kern_pool2d_shape sw = {.batch = 1, .channels = 2,
                                       .in_h = H, .in_w = W, .kh = 2,
                                       .kw = 3, .stride_h = 1,
                                       .stride_w = st, .pad_left = 1,
                                       .pad_right = 2};
        size_t oh, ow;
        assert_int_equal(kern_pool2d_out_hw(&sw, &oh, &ow), KERN_OK);
        /* the caller's work, poisoned, one byte off alignment */
        const size_t wb = kern_q8_maxpool2d_work_bytes(&sw);
        assert_true(wb > 0);
        unsigned char *work = malloc(wb + 1);
        assert_non_null(work);
        memset(work, 0x5a, wb + 1);
        assert_int_equal(kern_q8_maxpool2d_s8(&sw, xw, work + 1, yw),
                         KERN_OK);
        free(work);
        for (size_t c = 0; c < 2; c++) {
            for (size_t oy = 0; oy < oh; oy++) {
                for (size_t ox = 0; ox < ow; ox++) {
                    int m = -1000;
                    for (size_t ky = 0; ky < 2; ky++) {
                        for (size_t kx = 0; kx < 3; kx++) {
                            const long ix = (long)(ox * st + kx) - 1;
                            if (ix >= 0 && ix < W) {
                                const int v =
                                    xw[(c * H + oy + ky) * W + (size_t)ix];
                                m = v > m ? v : m;
                            }
                        }
                    }
                    assert_int_equal(yw[(c * oh + oy) * ow + ox], m);
                }
            }
        }
    }
    /* errors as the float pool's */
    assert_int_equal(kern_q8_maxpool2d_s8(NULL, x, NULL, y), KERN_E_INVALID);
    assert_int_equal(kern_q8_maxpool2d_work_bytes(NULL), 0);
    s.kh = 5;
    assert_int_equal(kern_q8_maxpool2d_s8(&s, x, NULL, y), KERN_E_SHAPE);
    assert_int_equal(kern_q8_maxpool2d_work_bytes(&s), 0);
    s.kh = 2;
    s.pad_top = 2;
    assert_int_equal(kern_q8_maxpool2d_s8(&s, x, NULL, y), KERN_E_RANGE);
}

static void test_avgpool_s8(void **state)
{
    (void)state;
    /* x_zero 10, x_scale 0.5, out_scale 1, out_zero -5 */
    const int8_t x[6] = {10, 20, 30, 40, 50, 61};
    struct kern_pool2d_shape s = {.batch = 1, .channels = 1, .in_h = 2,
                                  .in_w = 3, .kh = 2, .kw = 2,
                                  .stride_h = 1, .stride_w = 1};
    int8_t y[4];
    assert_int_equal(kern_q8_avgpool2d_s8(&s, x, 10, 0.5f, -5, 1.0f, -128,
                                          127, y), KERN_OK);
    /* (0 + 10 + 30 + 40) 0.5 / 4 = 10; (10 + 20 + 40 + 51) 0.5 / 4 =
     * 15.125 */
    assert_int_equal(y[0], 5);
    assert_int_equal(y[1], 10);
    /* stride 2, one column of right padding: the second window holds
     * 20 + 51 = 71 over 4 cells (8.875) or over its 2 real ones (17.75) */
    s.stride_w = 2;
    s.pad_right = 1;
    s.count_include_pad = 1;
    assert_int_equal(kern_q8_avgpool2d_s8(&s, x, 10, 0.5f, -5, 1.0f, -128,
                                          127, y), KERN_OK);
    assert_int_equal(y[0], 5);
    assert_int_equal(y[1], 4);
    s.count_include_pad = 0;
    assert_int_equal(kern_q8_avgpool2d_s8(&s, x, 10, 0.5f, -5, 1.0f, -128,
                                          127, y), KERN_OK);
    assert_int_equal(y[0], 5);
    assert_int_equal(y[1], 13);
    /* one window of the top rows of an unpadded map (DS-CNN's 24 x 5 of
     * 25 x 5): the last row is outside every window; (0 + 10 + 20 + 30)
     * 0.5 / 4 = 7.5, half away from zero 8, -5: 3 */
    const int8_t t3[6] = {10, 20, 30, 40, 99, 99};
    const struct kern_pool2d_shape st = {.batch = 1, .channels = 1,
                                         .in_h = 3, .in_w = 2, .kh = 2,
                                         .kw = 2, .stride_h = 2,
                                         .stride_w = 2};
    assert_int_equal(kern_q8_avgpool2d_s8(&st, t3, 10, 0.5f, -5, 1.0f, -128,
                                          127, y), KERN_OK);
    assert_int_equal(y[0], 3);
    /* equal params: TFLite's integer average, halves away from zero, even
     * for a divisor (6) whose reciprocal no Q31 multiplier holds exactly */
    const int8_t h[12] = {1, 1, 1, 0, 0, 0, -1, -1, -1, 0, 0, 0};
    struct kern_pool2d_shape s6 = {.batch = 1, .channels = 2, .in_h = 1,
                                   .in_w = 6, .kh = 1, .kw = 6,
                                   .stride_h = 1, .stride_w = 1};
    assert_int_equal(kern_q8_avgpool2d_s8(&s6, h, 0, 0.3f, 0, 0.3f, -128,
                                          127, y), KERN_OK);
    assert_int_equal(y[0], 1);
    assert_int_equal(y[1], -1);
    assert_int_equal(kern_q8_global_avgpool_s8(1, 2, 6, h, 0, 0.3f, 0, 0.3f,
                                               -128, 127, y), KERN_OK);
    assert_int_equal(y[0], 1);
    assert_int_equal(y[1], -1);
    /* global: x_zero 5, 0.1 -> 0.3, out_zero 2: (0 + 3 + 9 + 12) 0.1 /
     * (4 0.3) = 2; and a clamp at qmax */
    const int8_t g[8] = {5, 8, 14, 17, 127, 127, 127, 127};
    assert_int_equal(kern_q8_global_avgpool_s8(2, 1, 4, g, 5, 0.1f, 2, 0.3f,
                                               -128, 20, y), KERN_OK);
    assert_int_equal(y[0], 4);
    assert_int_equal(y[1], 20);
    /* a ratio below 2^-10 gives the zero point */
    assert_int_equal(kern_q8_global_avgpool_s8(2, 1, 4, g, 5, 1e-4f, 2, 1.0f,
                                               -128, 127, y), KERN_OK);
    assert_int_equal(y[0], 2);
    assert_int_equal(y[1], 2);
    /* errors */
    assert_int_equal(kern_q8_global_avgpool_s8(0, 1, 4, g, 5, 0.1f, 2, 0.3f,
                                               -128, 127, y), KERN_E_SHAPE);
    assert_int_equal(kern_q8_global_avgpool_s8(1, 1, 4, g, 5, 0.0f, 2, 0.3f,
                                               -128, 127, y), KERN_E_RANGE);
    assert_int_equal(kern_q8_global_avgpool_s8(1, 1, 4, g, 5, 0.1f, 2, 0.3f,
                                               10, 9, y), KERN_E_RANGE);
    assert_int_equal(kern_q8_global_avgpool_s8(1, 1, 4, NULL, 5, 0.1f, 2,
                                               0.3f, -128, 127, y),
                     KERN_E_INVALID);
    assert_int_equal(kern_q8_global_avgpool_s8(SIZE_MAX, 2, 4, g, 5, 0.1f, 2,
                                               0.3f, -128, 127, y),
                     KERN_E_OVERFLOW);
    assert_int_equal(kern_q8_avgpool2d_s8(&s, x, -129, 0.5f, -5, 1.0f, -128,
                                          127, y), KERN_E_RANGE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_quantize_multiplier),
        cmocka_unit_test(test_stage_hand),
        cmocka_unit_test(test_stage_float_hand),
        cmocka_unit_test(test_stage_bruteforce),
        cmocka_unit_test(test_stage_vs_real),
        cmocka_unit_test(test_stage_errors),
        cmocka_unit_test(test_gemm_s8),
        cmocka_unit_test(test_gemm_s8_errors),
        cmocka_unit_test(test_dwconv_s8),
        cmocka_unit_test(test_conv_s8),
        cmocka_unit_test(test_add), cmocka_unit_test(test_addf),
        cmocka_unit_test(test_im2col_zp),
        cmocka_unit_test(test_gemm_s8_t),
        cmocka_unit_test(test_quantize_zp),
        cmocka_unit_test(test_rescale),
        cmocka_unit_test(test_maxpool_s8),
        cmocka_unit_test(test_avgpool_s8),
    };
    printf("test_q8s: path %s\n", kern_cpu_path_name(kern_cpu_flags()));
    return cmocka_run_group_tests(tests, NULL, NULL);
}
