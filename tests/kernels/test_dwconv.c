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
    struct kern_dwconv2d_shape s = {1, 1, 3, 3, 2, 2, 1, 1, 1, 0, 0, 1, 1, 1};
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
        {1, 64, 25, 5, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},
        {1, 64, 24, 5, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},
        {2, 8, 33, 47, 3, 3, 2, 2, 0, 0, 1, 1, 1, 1},
        {1, 16, 48, 48, 5, 5, 2, 2, 2, 2, 2, 2, 1, 1},
        {1, 3, 9, 11, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1},
        {1, 2, 300, 37, 7, 1, 1, 1, 3, 0, 3, 0, 1, 1},
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
            randn(0, 3), randn(0, 3), randn(0, 3), randn(0, 3), 1, 1};
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
    const struct kern_dwconv2d_shape ok = {1, 2, 4, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1};
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

/* ---- NCHW8c ---------------------------------------------------------- */

/* 11 channels of 2 x 3 filters, w[c][t] = 100 c + t: packed
 * [2][2][3][8], tap t of channel c at (c / 8 * 6 + t) * 8 + c % 8, lanes
 * of channels 11..15 zero. */
static void test_packed_layout(void **state)
{
    (void)state;
    const struct kern_dwconv2d_shape s = {1, 11, 4, 5, 2, 3, 1, 1,
                                          0, 0, 0, 0, 1, 1};
    assert_int_equal(kern_dwconv2d_packed_bytes(&s), 2 * 6 * 8 * 4);
    float w[66], p[96];
    for (int c = 0; c < 11; c++) {
        for (int t = 0; t < 6; t++) {
            w[c * 6 + t] = (float)(100 * c + t);
        }
    }
    memset(p, 0xff, sizeof p);
    assert_int_equal(kern_dwconv2d_pack_f32(&s, w, p), KERN_OK);
    for (int j = 0; j < 2; j++) {
        for (int t = 0; t < 6; t++) {
            for (int l = 0; l < 8; l++) {
                const int c = j * 8 + l;
                const float want = c < 11 ? (float)(100 * c + t) : 0.0f;
                assert_float_equal(p[(j * 6 + t) * 8 + l], want, 0.0f);
            }
        }
    }
    /* the 3 x 3 case of test_by_hand, as 9 channels (a partial block)
     * with channel c's input scaled by c + 1: y = (c + 1) y_hand, bias
     * added; every padding lane +0; 2 samples, the second negated */
    const struct kern_dwconv2d_shape h = {2, 9, 3, 3, 2, 2, 1, 1, 1, 0, 0, 1, 1, 1};
    const float want[9] = {11, 18, 9, 37, 47, 21, 67, 77, 33};
    float x[2 * 9 * 9], xb[2 * 2 * 9 * 8], wh[9 * 4], wp[2 * 4 * 8];
    float bias[9], y[2 * 2 * 9 * 8];
    for (int b = 0; b < 2; b++) {
        for (int c = 0; c < 9; c++) {
            for (int i = 0; i < 9; i++) {
                x[(b * 9 + c) * 9 + i] = (b ? -1.0f : 1.0f) *
                                         (float)((c + 1) * (i + 1));
            }
        }
    }
    for (int c = 0; c < 9; c++) {
        for (int t = 0; t < 4; t++) {
            wh[c * 4 + t] = (float)(t + 1);
        }
        bias[c] = (float)c;
    }
    assert_int_equal(kern_nchw_to_nchw8c_f32(2, 9, 9, x, xb), KERN_OK);
    assert_int_equal(kern_dwconv2d_pack_f32(&h, wh, wp), KERN_OK);
    memset(y, 0xff, sizeof y);
    assert_int_equal(kern_dwconv2d_nchw8c_f32(&h, xb, wp, bias,
                                              KERN_FUSE_NONE, y),
                     KERN_OK);
    for (int b = 0; b < 2; b++) {
        for (int j = 0; j < 2; j++) {
            for (int i = 0; i < 9; i++) {
                for (int l = 0; l < 8; l++) {
                    const int c = j * 8 + l;
                    const float got = y[((b * 2 + j) * 9 + i) * 8 + l];
                    if (c >= 9) {
                        uint32_t u;
                        memcpy(&u, &got, sizeof u);
                        assert_int_equal(u, 0);
                        continue;
                    }
                    const float v = (b ? -1.0f : 1.0f) *
                                    (float)(c + 1) * want[i] + (float)c;
                    assert_float_equal(got, v, 0.0f);
                }
            }
        }
    }
    /* block 1 alone: block 0 of both samples untouched */
    memset(y, 0xff, sizeof y);
    assert_int_equal(kern_dwconv2d_nchw8c_blocks_f32(&h, 1, 2, xb, wp, bias,
                                                     KERN_FUSE_RELU, y),
                     KERN_OK);
    for (int b = 0; b < 2; b++) {
        for (int i = 0; i < 9 * 8; i++) {
            assert_true(isnan(y[b * 2 * 9 * 8 + i]));
        }
        /* channel 8: (9 y_hand, negated in sample 1) + 8, relu */
        const float v = (b ? -9.0f : 9.0f) * want[4] + 8.0f;
        assert_float_equal(y[((b * 2 + 1) * 9 + 4) * 8],
                           v > 0.0f ? v : 0.0f, 0.0f);
    }
}

/* Through the public entry points on whatever path KERN_CPU_MASK leaves:
 * the NCHW8c kernel gives the bits of kern_dwconv2d_f32 (kernels.h). */
static void test_nchw8c_bits(void **state)
{
    (void)state;
    for (int t = 0; t < 200; t++) {
        const struct kern_dwconv2d_shape s = {
            randn(1, 3), randn(1, 27), randn(1, 20), randn(1, 30),
            randn(1, 5), randn(1, 5), randn(1, 3), randn(1, 3),
            randn(0, 2), randn(0, 2), randn(0, 2), randn(0, 2), 1, 1};
        size_t oh, ow;
        if (kern_dwconv2d_out_hw(&s, &oh, &ow) != KERN_OK) {
            continue;
        }
        const size_t nb = (s.channels + 7) / 8, hw = s.in_h * s.in_w;
        const size_t nx = s.batch * s.channels * hw;
        const size_t ny = s.batch * s.channels * oh * ow;
        const size_t nw = s.channels * s.kh * s.kw;
        float *x = malloc(nx * sizeof *x);
        float *xb = malloc(s.batch * nb * hw * 8 * sizeof *xb);
        float *w = malloc(nw * sizeof *w);
        float *wp = malloc(kern_dwconv2d_packed_bytes(&s));
        float *b = malloc(s.channels * sizeof *b);
        float *y0 = malloc(ny * sizeof *y0), *y1 = malloc(ny * sizeof *y1);
        float *yb = malloc(s.batch * nb * oh * ow * 8 * sizeof *yb);
        assert_non_null(x && xb && w && wp && b && y0 && y1 && yb);
        for (size_t i = 0; i < nx; i++) {
            x[i] = randf();
        }
        for (size_t i = 0; i < nw; i++) {
            w[i] = 4.0f * randf();
        }
        for (size_t i = 0; i < s.channels; i++) {
            b[i] = randf();
        }
        const float *bias = t % 2 ? b : NULL;
        const int act = t % 3;
        assert_int_equal(kern_dwconv2d_f32(&s, x, w, bias, act, y0),
                         KERN_OK);
        assert_int_equal(kern_nchw_to_nchw8c_f32(s.batch, s.channels, hw, x,
                                                 xb),
                         KERN_OK);
        assert_int_equal(kern_dwconv2d_pack_f32(&s, w, wp), KERN_OK);
        assert_int_equal(kern_dwconv2d_nchw8c_f32(&s, xb, wp, bias, act, yb),
                         KERN_OK);
        assert_int_equal(kern_nchw8c_to_nchw_f32(s.batch, s.channels,
                                                 oh * ow, yb, y1),
                         KERN_OK);
        if (memcmp(y0, y1, ny * sizeof *y0) != 0) {
            fail_msg("b%zu c%zu %zux%zu k%zux%zu s%zux%zu: NCHW8c bits "
                     "differ from kern_dwconv2d_f32", s.batch, s.channels,
                     s.in_h, s.in_w, s.kh, s.kw, s.stride_h, s.stride_w);
        }
        free(x);
        free(xb);
        free(w);
        free(wp);
        free(b);
        free(y0);
        free(y1);
        free(yb);
    }
}

static void test_nchw8c_errors(void **state)
{
    (void)state;
    const struct kern_dwconv2d_shape ok = {1, 9, 4, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1};
    float x[2 * 16 * 8] = {0}, w[81] = {0}, wp[2 * 9 * 8], y[2 * 16 * 8];
    assert_int_equal(kern_dwconv2d_pack_f32(&ok, w, wp), KERN_OK);
    assert_int_equal(kern_dwconv2d_packed_bytes(NULL), 0);
    assert_int_equal(kern_dwconv2d_pack_f32(NULL, w, wp), KERN_E_INVALID);
    assert_int_equal(kern_dwconv2d_pack_f32(&ok, NULL, wp), KERN_E_INVALID);
    assert_int_equal(kern_dwconv2d_pack_f32(&ok, w, NULL), KERN_E_INVALID);
    assert_int_equal(kern_dwconv2d_nchw8c_f32(NULL, x, wp, NULL, 0, y),
                     KERN_E_INVALID);
    assert_int_equal(kern_dwconv2d_nchw8c_f32(&ok, NULL, wp, NULL, 0, y),
                     KERN_E_INVALID);
    assert_int_equal(kern_dwconv2d_nchw8c_f32(&ok, x, NULL, NULL, 0, y),
                     KERN_E_INVALID);
    assert_int_equal(kern_dwconv2d_nchw8c_f32(&ok, x, wp, NULL, 0, NULL),
                     KERN_E_INVALID);
    assert_int_equal(kern_dwconv2d_nchw8c_f32(&ok, x, wp, NULL, 3, y),
                     KERN_E_RANGE);
    assert_int_equal(kern_dwconv2d_nchw8c_f32(&ok, x, wp, NULL, -1, y),
                     KERN_E_RANGE);
    /* block ranges: empty, reversed, past ceil(9 / 8) = 2 */
    assert_int_equal(kern_dwconv2d_nchw8c_blocks_f32(&ok, 1, 1, x, wp, NULL,
                                                     0, y),
                     KERN_E_RANGE);
    assert_int_equal(kern_dwconv2d_nchw8c_blocks_f32(&ok, 2, 1, x, wp, NULL,
                                                     0, y),
                     KERN_E_RANGE);
    assert_int_equal(kern_dwconv2d_nchw8c_blocks_f32(&ok, 0, 3, x, wp, NULL,
                                                     0, y),
                     KERN_E_RANGE);
    assert_int_equal(kern_dwconv2d_nchw8c_blocks_f32(&ok, 1, 2, x, wp, NULL,
                                                     0, y),
                     KERN_OK);
    struct kern_dwconv2d_shape s = ok;
    s.channels = 0;
    assert_int_equal(kern_dwconv2d_packed_bytes(&s), 0);
    assert_int_equal(kern_dwconv2d_pack_f32(&s, w, wp), KERN_E_SHAPE);
    assert_int_equal(kern_dwconv2d_nchw8c_f32(&s, x, wp, NULL, 0, y),
                     KERN_E_SHAPE);
    s = ok;
    s.in_w = 0;
    assert_int_equal(kern_dwconv2d_nchw8c_f32(&s, x, wp, NULL, 0, y),
                     KERN_E_SHAPE);
    s = ok;
    s.stride_h = 0;
    assert_int_equal(kern_dwconv2d_nchw8c_f32(&s, x, wp, NULL, 0, y),
                     KERN_E_SHAPE);
    /* NCHW fits, the blocked form does not: SIZE_MAX / 4 channels of a
     * 1 x 1 plane (2^62 - 1 on 64-bit targets, 2^30 - 1 on 32) are
     * SIZE_MAX - 3 bytes in NCHW, SIZE_MAX / 4 + 1 floats (SIZE_MAX + 1
     * bytes) once rounded up to whole blocks */
    s = ok;
    s.channels = SIZE_MAX >> 2;
    s.in_h = s.in_w = 1;
    s.kh = s.kw = 1;
    s.pad_top = s.pad_left = s.pad_bottom = s.pad_right = 0;
    size_t oh, ow;
    assert_int_equal(kern_dwconv2d_out_hw(&s, &oh, &ow), KERN_OK);
    assert_int_equal(kern_dwconv2d_packed_bytes(&s), 0);
    assert_int_equal(kern_dwconv2d_pack_f32(&s, w, wp), KERN_E_OVERFLOW);
    assert_int_equal(kern_dwconv2d_nchw8c_f32(&s, x, wp, NULL, 0, y),
                     KERN_E_OVERFLOW);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_by_hand),
        cmocka_unit_test(test_against_double),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_packed_layout),
        cmocka_unit_test(test_nchw8c_bits),
        cmocka_unit_test(test_nchw8c_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
