/* Broadcast arithmetic and the blocked channel scale through the public
 * API, on whatever path KERN_CPU_MASK leaves (meson runs this on every
 * path): random broadcasts against a reference that walks the output's
 * four indices and maps each to its operands by numpy's rule (not the
 * library's merged rows), hand-computed values, in-place use, the
 * blocked scale against kern_binary_f32 through the layout conversions,
 * and the errors. */
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

static uint32_t rng = 0x2545f491u;

static uint32_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 17;
    rng ^= rng << 5;
    return rng;
}

static int randi(int lo, int hi)
{
    return lo + (int)(next() % (uint32_t)(hi - lo + 1));
}

static float randf(void)
{
    return (float)((double)(next() >> 8) / 16777216.0 * 8.0 - 4.0);
}

static float apply(int op, float a, float b)
{
    switch (op) {
    case KERN_BINARY_ADD:
        return a + b;
    case KERN_BINARY_SUB:
        return a - b;
    case KERN_BINARY_MUL:
        return a * b;
    case KERN_BINARY_DIV:
        return a / b;
    }
    return NAN;
}

/* The extent of dimension k (of 4, right-aligned) of a shape. */
static size_t ext4(const size_t *shape, size_t ndim, size_t k)
{
    return k + ndim >= 4 ? shape[k + ndim - 4] : 1;
}

/* y = a op b by the definition: output index (i0, i1, i2, i3) reads each
 * operand at the same index with 0 wherever the operand's extent is 1. */
static void reference(int op, const float *a, const size_t *as, size_t an,
                      const float *b, const size_t *bs, size_t bn, float *y)
{
    size_t ad[4], bd[4], yd[4];
    for (size_t k = 0; k < 4; k++) {
        ad[k] = ext4(as, an, k);
        bd[k] = ext4(bs, bn, k);
        yd[k] = ad[k] > bd[k] ? ad[k] : bd[k];
    }
    size_t o = 0;
    for (size_t i0 = 0; i0 < yd[0]; i0++) {
        for (size_t i1 = 0; i1 < yd[1]; i1++) {
            for (size_t i2 = 0; i2 < yd[2]; i2++) {
                for (size_t i3 = 0; i3 < yd[3]; i3++) {
                    const size_t ia =
                        (((ad[0] > 1 ? i0 : 0) * ad[1] +
                          (ad[1] > 1 ? i1 : 0)) * ad[2] +
                         (ad[2] > 1 ? i2 : 0)) * ad[3] +
                        (ad[3] > 1 ? i3 : 0);
                    const size_t ib =
                        (((bd[0] > 1 ? i0 : 0) * bd[1] +
                          (bd[1] > 1 ? i1 : 0)) * bd[2] +
                         (bd[2] > 1 ? i2 : 0)) * bd[3] +
                        (bd[3] > 1 ? i3 : 0);
                    y[o++] = apply(op, a[ia], b[ib]);
                }
            }
        }
    }
}

static size_t elems(const size_t *s, size_t n)
{
    size_t e = 1;
    for (size_t k = 0; k < n; k++) {
        e *= s[k];
    }
    return e;
}

static void test_random_broadcasts(void **state)
{
    (void)state;
    enum { CAP = 12 * 12 * 12 * 12 };
    static float a[CAP], b[CAP], y[CAP], want[CAP], inpl[CAP];
    for (int iter = 0; iter < 3000; iter++) {
        const int op = randi(0, 3);
        const size_t nd = (size_t)randi(0, 4);
        size_t ys[4], as[4], bs[4];
        for (size_t k = 0; k < nd; k++) {
            ys[k] = (size_t)randi(1, 12);
            as[k] = randi(0, 2) ? ys[k] : 1;
            bs[k] = randi(0, 2) ? ys[k] : 1;
        }
        const size_t an = nd - (size_t)(nd ? randi(0, 1) : 0);
        const size_t bn = nd - (size_t)(nd ? randi(0, 1) : 0);
        const size_t *ap = as + (nd - an), *bp = bs + (nd - bn);
        const size_t ea = elems(ap, an), eb = elems(bp, bn);
        for (size_t i = 0; i < ea; i++) {
            a[i] = randf();
        }
        for (size_t i = 0; i < eb; i++) {
            b[i] = randf();
        }
        size_t got_shape[4], got_nd, ey;
        assert_int_equal(kern_binary_shape(ap, an, bp, bn, got_shape,
                                           &got_nd, &ey),
                         KERN_OK);
        reference(op, a, ap, an, b, bp, bn, want);
        memset(y, 0xff, sizeof y);
        assert_int_equal(kern_binary_f32(op, a, ap, an, b, bp, bn, y),
                         KERN_OK);
        if (memcmp(y, want, ey * sizeof *y) != 0) {
            print_error("op %d ranks %zu/%zu: result differs\n", op, an, bn);
            fail();
        }
        /* In place into an operand of the output's shape. */
        if (ea == ey && an == got_nd) {
            memcpy(inpl, a, ea * sizeof *a);
            assert_int_equal(kern_binary_f32(op, inpl, ap, an, b, bp, bn,
                                             inpl),
                             KERN_OK);
            assert_memory_equal(inpl, want, ey * sizeof *y);
        } else if (eb == ey && bn == got_nd) {
            memcpy(inpl, b, eb * sizeof *b);
            assert_int_equal(kern_binary_f32(op, a, ap, an, inpl, bp, bn,
                                             inpl),
                             KERN_OK);
            assert_memory_equal(inpl, want, ey * sizeof *y);
        }
    }
}

static void test_values(void **state)
{
    (void)state;
    /* [2][3] - [3] */
    const float m[6] = {1, 2, 3, 4, 5, 6}, v[3] = {10, 20, 30};
    const size_t s23[2] = {2, 3}, s3[1] = {3};
    float y[12];
    assert_int_equal(kern_binary_f32(KERN_BINARY_SUB, m, s23, 2, v, s3, 1, y),
                     KERN_OK);
    const float sub[6] = {-9, -18, -27, -6, -15, -24};
    assert_memory_equal(y, sub, sizeof sub);
    /* [2][1] * [1][3]: the outer product */
    const float c2[2] = {2, -3}, r3[3] = {1, 5, 7};
    const size_t s21[2] = {2, 1}, s13[2] = {1, 3};
    assert_int_equal(kern_binary_f32(KERN_BINARY_MUL, c2, s21, 2, r3, s13, 2,
                                     y),
                     KERN_OK);
    const float outer[6] = {2, 10, 14, -3, -15, -21};
    assert_memory_equal(y, outer, sizeof outer);
    /* scalar / tensor, rank 0 */
    const float one = 1.0f, d4[4] = {2, -4, 0, -0.0f};
    const size_t s4[1] = {4};
    assert_int_equal(kern_binary_f32(KERN_BINARY_DIV, &one, NULL, 0, d4, s4,
                                     1, y),
                     KERN_OK);
    assert_true(y[0] == 0.5f && y[1] == -0.25f && y[2] == INFINITY &&
                y[3] == -INFINITY);
    /* squeeze-excite: 1x2x2x2 * 1x2x1x1 */
    const float x[8] = {1, 2, 3, 4, 5, 6, 7, 8}, g[2] = {0.5f, -2.0f};
    const size_t sx[4] = {1, 2, 2, 2}, sg[4] = {1, 2, 1, 1};
    assert_int_equal(kern_binary_f32(KERN_BINARY_MUL, x, sx, 4, g, sg, 4, y),
                     KERN_OK);
    const float se[8] = {0.5f, 1, 1.5f, 2, -10, -12, -14, -16};
    assert_memory_equal(y, se, sizeof se);
    /* the gate first gives the same */
    assert_int_equal(kern_binary_f32(KERN_BINARY_MUL, g, sg, 4, x, sx, 4, y),
                     KERN_OK);
    assert_memory_equal(y, se, sizeof se);
    /* NaN propagates; 0/0 is NaN */
    const float nz[2] = {NAN, 0.0f}, zz[2] = {1.0f, 0.0f};
    const size_t s2[1] = {2};
    assert_int_equal(kern_binary_f32(KERN_BINARY_DIV, nz, s2, 1, zz, s2, 1,
                                     y),
                     KERN_OK);
    assert_true(isnan(y[0]) && isnan(y[1]));
}

static void test_errors(void **state)
{
    (void)state;
    const float a[4] = {1, 2, 3, 4};
    float y[4];
    const size_t s4[1] = {4}, s3[1] = {3}, s0[1] = {0};
    const size_t s5[5] = {1, 1, 1, 1, 4};
    const size_t huge[2] = {SIZE_MAX / 8, 16};
    size_t ys[4], nd;
    assert_int_equal(kern_binary_f32(4, a, s4, 1, a, s4, 1, y),
                     KERN_E_RANGE);
    assert_int_equal(kern_binary_f32(-1, a, s4, 1, a, s4, 1, y),
                     KERN_E_RANGE);
    assert_int_equal(kern_binary_f32(0, NULL, s4, 1, a, s4, 1, y),
                     KERN_E_INVALID);
    assert_int_equal(kern_binary_f32(0, a, s4, 1, a, s4, 1, NULL),
                     KERN_E_INVALID);
    assert_int_equal(kern_binary_f32(0, a, NULL, 1, a, s4, 1, y),
                     KERN_E_INVALID);
    assert_int_equal(kern_binary_f32(0, a, s4, 1, a, s3, 1, y),
                     KERN_E_SHAPE);
    assert_int_equal(kern_binary_f32(0, a, s5, 5, a, s4, 1, y),
                     KERN_E_SHAPE);
    assert_int_equal(kern_binary_f32(0, a, s0, 1, a, s4, 1, y),
                     KERN_E_SHAPE);
    assert_int_equal(kern_binary_shape(huge, 2, s4, 0, ys, &nd, NULL),
                     KERN_E_OVERFLOW);
    assert_int_equal(kern_binary_shape(s4, 1, s3, 1, ys, &nd, NULL),
                     KERN_E_SHAPE);
    /* Shapes: [4] with [2][1][1] is [2][1][4]. */
    const size_t s211[3] = {2, 1, 1};
    size_t e = 0;
    assert_int_equal(kern_binary_shape(s4, 1, s211, 3, ys, &nd, &e),
                     KERN_OK);
    assert_true(nd == 3 && ys[0] == 2 && ys[1] == 1 && ys[2] == 4 && e == 8);
    /* The blocked scale. */
    assert_int_equal(kern_channel_scale_nchw8c_f32(NULL, 1, 4, 1, a, y),
                     KERN_E_INVALID);
    assert_int_equal(kern_channel_scale_nchw8c_f32(a, 1, 0, 1, a, y),
                     KERN_E_SHAPE);
    assert_int_equal(kern_channel_scale_nchw8c_f32(a, SIZE_MAX / 4, 3, 5, a,
                                                   y),
                     KERN_E_OVERFLOW);
}

/* The blocked scale gives, lane for lane, kern_binary_f32's bits on the
 * NCHW form; padding lanes are +0 even when x's hold NaN. */
static void test_scale_nchw8c(void **state)
{
    (void)state;
    for (int iter = 0; iter < 60; iter++) {
        const size_t batch = (size_t)randi(1, 3);
        const size_t ch = (size_t)randi(1, 40);
        const size_t hw = (size_t)randi(1, 30);
        const size_t cb = (ch + 7) / 8 * 8;
        const size_t n = batch * ch * hw, nb = batch * cb * hw;
        float *x = malloc(n * sizeof *x), *g = malloc(batch * ch * sizeof *g);
        float *ref = malloc(n * sizeof *ref);
        float *xb = malloc(nb * sizeof *xb), *yb = malloc(nb * sizeof *yb);
        float *want = malloc(nb * sizeof *want);
        assert_non_null(x && g && ref && xb && yb && want);
        for (size_t i = 0; i < n; i++) {
            x[i] = randf();
        }
        for (size_t i = 0; i < batch * ch; i++) {
            g[i] = randf();
        }
        const size_t sx[4] = {batch, ch, hw, 1}, sg[4] = {batch, ch, 1, 1};
        assert_int_equal(kern_binary_f32(KERN_BINARY_MUL, x, sx, 4, g, sg, 4,
                                         ref),
                         KERN_OK);
        assert_int_equal(kern_nchw_to_nchw8c_f32(batch, ch, hw, ref, want),
                         KERN_OK);
        assert_int_equal(kern_nchw_to_nchw8c_f32(batch, ch, hw, x, xb),
                         KERN_OK);
        for (size_t b = 0; b < batch; b++) { /* poison x's padding lanes */
            for (size_t i = 0; i < hw; i++) {
                for (size_t c = ch; c < cb; c++) {
                    xb[((b * (cb / 8) + c / 8) * hw + i) * 8 + c % 8] = NAN;
                }
            }
        }
        assert_int_equal(kern_channel_scale_nchw8c_f32(xb, batch, ch, hw, g,
                                                       yb),
                         KERN_OK);
        assert_memory_equal(yb, want, nb * sizeof *yb);
        assert_int_equal(kern_channel_scale_nchw8c_f32(xb, batch, ch, hw, g,
                                                       xb),
                         KERN_OK);
        assert_memory_equal(xb, want, nb * sizeof *xb);
        free(x);
        free(g);
        free(ref);
        free(xb);
        free(yb);
        free(want);
    }
}

/* A build without vector paths selects the C path on every CPU, and says
 * so: its flags are 0 (they once reported the CPU's AVX2 while the C
 * path ran, and the apps printed "selected avx2"). */
static void test_selected_is_built(void **state)
{
    (void)state;
    const char *sel = kern_cpu_path_name(kern_cpu_flags());
    if (strcmp(kern_built_paths(), "c") == 0) {
        assert_int_equal(kern_cpu_flags(), 0);
    }
    assert_non_null(strstr(kern_built_paths(), sel));
}

int main(void)
{
    printf("path: %s\n", kern_cpu_path_name(kern_cpu_flags()));
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_values),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_random_broadcasts),
        cmocka_unit_test(test_scale_nchw8c),
        cmocka_unit_test(test_selected_is_built),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
