/* Behaviour of kern_dwconv2d_f32 through the public entry point: a small
 * case computed by hand (asymmetric padding, both strides, each fused
 * activation), many shapes against a naive double-precision loop written
 * here, and error statuses. Registered several times with KERN_CPU_MASK so
 * every path runs. */
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

static uint32_t rng = 77u;

static float randf(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 17;
    rng ^= rng << 5;
    return (float)(rng >> 8) / 8388608.0f - 1.0f; /* [-1, 1) */
}

static size_t randn(size_t lo, size_t hi)
{
    rng ^= rng << 13;
    rng ^= rng >> 17;
    rng ^= rng << 5;
    return lo + rng % (hi - lo + 1);
}

/* x = 1..9 in a 3 x 3 plane, w = [[1, 2], [3, 4]], one row of zeros above
 * and one column right: padded rows 0000 / 1230 / 4560 / 7890, so
 * y[oy][ox] = P[oy][ox] + 2 P[oy][ox+1] + 3 P[oy+1][ox] + 4 P[oy+1][ox+1]
 * = 11 18 9 / 37 47 21 / 67 77 33 at stride 1. */
static void test_by_hand(void **state)
{
    (void)state;
    const float x[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
    const float w[4] = {1, 2, 3, 4};
    struct kern_dwconv2d_shape s = {1, 1, 3, 3, 2, 2, 1, 1, 1, 0, 0, 1};
    size_t oh = 0, ow = 0;
    assert_int_equal(kern_dwconv2d_out_hw(&s, &oh, &ow), KERN_OK);
    assert_int_equal(oh, 3);
    assert_int_equal(ow, 3);
    float y[9];
    const float want[9] = {11, 18, 9, 37, 47, 21, 67, 77, 33};
    assert_int_equal(kern_dwconv2d_f32(&s, x, w, NULL, KERN_FUSE_NONE, y),
                     KERN_OK);
    for (int i = 0; i < 9; i++) {
        assert_float_equal(y[i], want[i], 0.0f);
    }
    const float bias = -40.0f;
    const float relu[9] = {0, 0, 0, 0, 7, 0, 27, 37, 0};
    assert_int_equal(kern_dwconv2d_f32(&s, x, w, &bias, KERN_FUSE_RELU, y),
                     KERN_OK);
    for (int i = 0; i < 9; i++) {
        assert_float_equal(y[i], relu[i], 0.0f);
    }
    const float relu6[9] = {0, 0, 0, 0, 6, 0, 6, 6, 0};
    assert_int_equal(kern_dwconv2d_f32(&s, x, w, &bias, KERN_FUSE_RELU6, y),
                     KERN_OK);
    for (int i = 0; i < 9; i++) {
        assert_float_equal(y[i], relu6[i], 0.0f);
    }
    /* stride 2 keeps outputs (0, 0), (0, 2), (2, 0), (2, 2) */
    s.stride_h = 2;
    s.stride_w = 2;
    assert_int_equal(kern_dwconv2d_out_hw(&s, &oh, &ow), KERN_OK);
    assert_int_equal(oh, 2);
    assert_int_equal(ow, 2);
    const float want2[4] = {11, 9, 67, 33};
    assert_int_equal(kern_dwconv2d_f32(&s, x, w, NULL, KERN_FUSE_NONE, y),
                     KERN_OK);
    for (int i = 0; i < 4; i++) {
        assert_float_equal(y[i], want2[i], 0.0f);
    }
}

/* The definition in double; *mag receives |bias| + sum |w x| per output. */
static void naive(const struct kern_dwconv2d_shape *s, size_t oh, size_t ow,
                  const float *x, const float *w, const float *bias, int act,
                  double *y, double *mag)
{
    for (size_t p = 0; p < s->batch * s->channels; p++) {
        const size_t c = p % s->channels;
        for (size_t oy = 0; oy < oh; oy++) {
            for (size_t ox = 0; ox < ow; ox++) {
                double acc = bias ? bias[c] : 0.0;
                double m = fabs(acc);
                for (size_t ky = 0; ky < s->kh; ky++) {
                    for (size_t kx = 0; kx < s->kw; kx++) {
                        const long iy = (long)(oy * s->stride_h + ky) -
                                        (long)s->pad_top;
                        const long ix = (long)(ox * s->stride_w + kx) -
                                        (long)s->pad_left;
                        if (iy < 0 || ix < 0 || iy >= (long)s->in_h ||
                            ix >= (long)s->in_w) {
                            continue;
                        }
                        const double t =
                            (double)w[(c * s->kh + ky) * s->kw + kx] *
                            x[(p * s->in_h + (size_t)iy) * s->in_w +
                              (size_t)ix];
                        acc += t;
                        m += fabs(t);
                    }
                }
                if (act != KERN_FUSE_NONE) {
                    acc = acc < 0.0 ? 0.0 : acc;
                }
                if (act == KERN_FUSE_RELU6) {
                    acc = acc > 6.0 ? 6.0 : acc;
                }
                y[(p * oh + oy) * ow + ox] = acc;
                mag[(p * oh + oy) * ow + ox] = m;
            }
        }
    }
}

static void run_case(const struct kern_dwconv2d_shape *s, int act,
                     int with_bias)
{
    size_t oh, ow;
    assert_int_equal(kern_dwconv2d_out_hw(s, &oh, &ow), KERN_OK);
    const size_t nx = s->batch * s->channels * s->in_h * s->in_w;
    const size_t nw = s->channels * s->kh * s->kw;
    const size_t ny = s->batch * s->channels * oh * ow;
    float *x = malloc(nx * sizeof *x), *w = malloc(nw * sizeof *w);
    float *b = malloc(s->channels * sizeof *b);
    float *y = malloc(ny * sizeof *y);
    double *want = malloc(ny * sizeof *want), *mag = malloc(ny * sizeof *mag);
    assert_non_null(x && w && b && y && want && mag);
    for (size_t i = 0; i < nx; i++) {
        x[i] = randf();
    }
    for (size_t i = 0; i < nw; i++) {
        w[i] = 4.0f * randf(); /* sums past 6 now and then */
    }
    for (size_t i = 0; i < s->channels; i++) {
        b[i] = randf();
    }
    memset(y, 0xff, ny * sizeof *y); /* NaN: an unwritten output fails */
    const float *bias = with_bias ? b : NULL;
    assert_int_equal(kern_dwconv2d_f32(s, x, w, bias, act, y), KERN_OK);
    naive(s, oh, ow, x, w, bias, act, want, mag);
    /* the bound documented in kernels.h */
    const double n = (double)(s->kh * s->kw + 1);
    for (size_t i = 0; i < ny; i++) {
        const double err = fabs((double)y[i] - want[i]);
        if (!(err <= n * FLT_EPSILON * mag[i])) {
            fail_msg("c%zu %zux%zu k%zux%zu s%zux%zu pads %zu,%zu,%zu,%zu "
                     "act %d: y[%zu] = %.9g, want %.9g", s->channels,
                     s->in_h, s->in_w, s->kh, s->kw, s->stride_h, s->stride_w,
                     s->pad_top,
                     s->pad_left, s->pad_bottom, s->pad_right, act, i,
                     (double)y[i], want[i]);
        }
    }
    free(x);
    free(w);
    free(b);
    free(y);
    free(want);
    free(mag);
}

static void test_against_double(void **state)
{
    (void)state;
    /* DS-CNN's depthwise layer, MobileNet-like strided ones, a 1 x 1 */
    static const struct kern_dwconv2d_shape fixed[] = {
        {1, 64, 25, 5, 3, 3, 1, 1, 1, 1, 1, 1},
        {1, 64, 24, 5, 3, 3, 1, 1, 1, 1, 1, 1},
        {2, 8, 33, 47, 3, 3, 2, 2, 0, 0, 1, 1},
        {1, 16, 48, 48, 5, 5, 2, 2, 2, 2, 2, 2},
        {1, 3, 9, 11, 1, 1, 1, 1, 0, 0, 0, 0},
        {1, 2, 300, 37, 7, 1, 1, 1, 3, 0, 3, 0},
    };
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++) {
        for (int act = 0; act < 3; act++) {
            run_case(&fixed[i], act, act != 1);
        }
    }
    for (int t = 0; t < 300; t++) {
        struct kern_dwconv2d_shape s = {
            randn(1, 2), randn(1, 4), randn(1, 40), randn(1, 70),
            randn(1, 6), randn(1, 6), randn(1, 3), randn(1, 3),
            randn(0, 3), randn(0, 3), randn(0, 3), randn(0, 3)};
        size_t oh, ow;
        if (kern_dwconv2d_out_hw(&s, &oh, &ow) != KERN_OK) {
            continue;
        }
        run_case(&s, t % 3, t % 2);
    }
}

static void test_errors(void **state)
{
    (void)state;
    const struct kern_dwconv2d_shape ok = {1, 2, 4, 4, 3, 3, 1, 1, 1, 1, 1, 1};
    float x[32] = {0}, w[18] = {0}, y[32];
    size_t oh, ow;
    assert_int_equal(kern_dwconv2d_f32(NULL, x, w, NULL, 0, y),
                     KERN_E_INVALID);
    assert_int_equal(kern_dwconv2d_f32(&ok, NULL, w, NULL, 0, y),
                     KERN_E_INVALID);
    assert_int_equal(kern_dwconv2d_f32(&ok, x, NULL, NULL, 0, y),
                     KERN_E_INVALID);
    assert_int_equal(kern_dwconv2d_f32(&ok, x, w, NULL, 0, NULL),
                     KERN_E_INVALID);
    assert_int_equal(kern_dwconv2d_out_hw(&ok, NULL, &ow), KERN_E_INVALID);
    assert_int_equal(kern_dwconv2d_f32(&ok, x, w, NULL, 3, y), KERN_E_RANGE);
    assert_int_equal(kern_dwconv2d_f32(&ok, x, w, NULL, -1, y),
                     KERN_E_RANGE);
    struct kern_dwconv2d_shape s = ok;
    s.channels = 0;
    assert_int_equal(kern_dwconv2d_out_hw(&s, &oh, &ow), KERN_E_SHAPE);
    s = ok;
    s.stride_w = 0;
    assert_int_equal(kern_dwconv2d_out_hw(&s, &oh, &ow), KERN_E_SHAPE);
    s = ok;
    s.kw = 7; /* 4 + 1 + 1 < 7 */
    assert_int_equal(kern_dwconv2d_out_hw(&s, &oh, &ow), KERN_E_SHAPE);
    s.pad_right = 2; /* 4 + 1 + 2 == 7: one column */
    assert_int_equal(kern_dwconv2d_out_hw(&s, &oh, &ow), KERN_OK);
    assert_int_equal(ow, 1);
    s = ok;
    s.channels = SIZE_MAX / 2;
    assert_int_equal(kern_dwconv2d_out_hw(&s, &oh, &ow), KERN_E_OVERFLOW);
    s = ok;
    s.pad_bottom = SIZE_MAX - 2;
    assert_int_equal(kern_dwconv2d_out_hw(&s, &oh, &ow), KERN_E_OVERFLOW);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_by_hand),
        cmocka_unit_test(test_against_double),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
