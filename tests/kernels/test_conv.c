/* Behaviour of the public convolution functions: kern_conv2d_f32 against
 * a double-precision loop written here (the definition) over combinations
 * of rectangular kernels, per-axis strides, asymmetric padding, groups
 * (depthwise included), bias and fused activations, with and without the
 * caller's scratch; tiny cases computed by hand; the backward pass against
 * its adjoint loops; kern_im2col_f32 and kern_im2col_s8 against the
 * definition of a column, kern_col2im_f32 as the exact adjoint of im2col
 * (<im2col(x), c> = <x, col2im(c)>, in integers so that both sides are
 * exact); the packed convolution on NCHW8c activations against values
 * computed by hand in every layout pair; and error statuses. Registered several times with KERN_CPU_MASK
 * so that every path runs through the public entry points. */
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

static uint32_t rng = 2024u;

static float randf(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 17;
    rng ^= rng << 5;
    return (float)(rng >> 8) / 8388608.0f - 1.0f; /* [-1, 1) */
}

static void fill(float *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        p[i] = randf();
    }
}

/* A small integer in [-2^(32-shift-1), 2^(32-shift-1)). */
static int small_int(int shift)
{
    rng = rng * 1664525u + 1013904223u;
    return (int)(rng >> shift) - (1 << (31 - shift));
}

/* The definition, in double: y = act(b + sum w * x over the window). */
static void conv_naive(const struct kern_conv2d_shape *s, size_t oh,
                       size_t ow, const float *x, const float *w,
                       const float *b, int act, double *y, double *mag)
{
    const long icg = (long)(s->in_c / s->groups);
    const long ocg = (long)(s->out_c / s->groups);
    const long kh = (long)s->kh, kw = (long)s->kw;
    const long ih = (long)s->in_h, iw = (long)s->in_w;
    const long dh = s->dilation_h ? (long)s->dilation_h : 1;
    const long dw = s->dilation_w ? (long)s->dilation_w : 1;
    for (long n = 0; n < (long)s->batch; n++) {
        for (long oc = 0; oc < (long)s->out_c; oc++) {
            for (long oy = 0; oy < (long)oh; oy++) {
                for (long ox = 0; ox < (long)ow; ox++) {
                    double acc = b ? b[oc] : 0.0;
                    double sum_abs = b ? fabs(b[oc]) : 0.0;
                    for (long ci = 0; ci < icg; ci++) {
                        const long ic = oc / ocg * icg + ci;
                        for (long ky = 0; ky < kh; ky++) {
                            for (long kx = 0; kx < kw; kx++) {
                                const long iy = oy * (long)s->stride_h +
                                                ky * dh - (long)s->pad_top;
                                const long ix = ox * (long)s->stride_w +
                                                kx * dw - (long)s->pad_left;
                                if (iy < 0 || iy >= ih || ix < 0 ||
                                    ix >= iw) {
                                    continue;
                                }
                                const double term =
                                    (double)w[((oc * icg + ci) * kh + ky) *
                                                  kw + kx] *
                                    x[((n * (long)s->in_c + ic) * ih + iy) *
                                          iw + ix];
                                acc += term;
                                sum_abs += fabs(term);
                            }
                        }
                    }
                    const long yi =
                        ((n * (long)s->out_c + oc) * (long)oh + oy) *
                            (long)ow + ox;
                    if (act != KERN_FUSE_NONE) {
                        acc = acc < 0.0 ? 0.0 : acc;
                    }
                    if (act == KERN_FUSE_RELU6) {
                        acc = acc > 6.0 ? 6.0 : acc;
                    }
                    y[yi] = acc;
                    mag[yi] = sum_abs;
                }
            }
        }
    }
}

static void check_y(const struct kern_conv2d_shape *s, size_t oh, size_t ow,
                    int act, const float *y, const double *want,
                    const double *mag);

/* One shape: kern_conv2d_f32 (scratch given or not), and for all but
 * depthwise shapes kern_conv2d_packed_f32 on kern_conv2d_pack_f32's
 * weights, against the double loop, within the documented bound (K + 1)
 * FLT_EPSILON sum |w x|. */
static void run_case(const struct kern_conv2d_shape *s, int act,
                     int with_bias, int own_work)
{
    size_t oh, ow;
    assert_int_equal(kern_conv2d_out_hw(s, &oh, &ow), KERN_OK);
    const size_t dh = s->dilation_h ? s->dilation_h : 1;
    const size_t dw = s->dilation_w ? s->dilation_w : 1;
    assert_int_equal(oh, (s->in_h + s->pad_top + s->pad_bottom -
                          dh * (s->kh - 1) - 1) / s->stride_h + 1);
    assert_int_equal(ow, (s->in_w + s->pad_left + s->pad_right -
                          dw * (s->kw - 1) - 1) / s->stride_w + 1);
    const size_t K = s->in_c / s->groups * s->kh * s->kw;
    const size_t nx = s->batch * s->in_c * s->in_h * s->in_w;
    const size_t nw = s->out_c * K;
    const size_t ny = s->batch * s->out_c * oh * ow;
    float *x = malloc(nx * 4), *w = malloc(nw * 4);
    float *b = malloc(s->out_c * 4), *y = malloc(ny * 4);
    double *want = malloc(ny * 8), *mag = malloc(ny * 8);
    const size_t wb = kern_conv2d_work_bytes(s);
    void *work = own_work && wb ? malloc(wb) : NULL;
    assert_true(x && w && b && y && want && mag);
    assert_true(!own_work || !wb || work);
    fill(x, nx);
    fill(w, nw);
    fill(b, s->out_c);
    if (act) {
        for (size_t i = 0; i < nw; i++) {
            w[i] *= 4.0f; /* sums beyond 6: the clamp is exercised */
        }
    }
    const float *bias = with_bias ? b : NULL;
    conv_naive(s, oh, ow, x, w, bias, act, want, mag);
    memset(y, 0xff, ny * 4); /* NaN: must be overwritten */
    assert_int_equal(kern_conv2d_f32(s, x, w, bias, act, work, y), KERN_OK);
    check_y(s, oh, ow, act, y, want, mag);
    const size_t pb = kern_conv2d_packed_bytes(s);
    if (s->groups != s->in_c || s->out_c != s->in_c) {
        float *wp = malloc(pb);
        assert_true(pb && wp);
        assert_int_equal(kern_conv2d_pack_f32(s, w, wp), KERN_OK);
        memset(y, 0xff, ny * 4);
        assert_int_equal(
            kern_conv2d_packed_f32(s, x, wp, bias, act, work, y), KERN_OK);
        check_y(s, oh, ow, act, y, want, mag);
        free(wp);
    } else {
        assert_int_equal(pb, 0); /* depthwise: its own kernel */
    }
    free(x);
    free(w);
    free(b);
    free(y);
    free(want);
    free(mag);
    free(work);
}

static void check_y(const struct kern_conv2d_shape *s, size_t oh, size_t ow,
                    int act, const float *y, const double *want,
                    const double *mag)
{
    const size_t K = s->in_c / s->groups * s->kh * s->kw;
    const size_t ny = s->batch * s->out_c * oh * ow;
    const double kk = (double)K + 1.0;
    for (size_t i = 0; i < ny; i++) {
        if (!(fabs(y[i] - want[i]) <= kk * 1.1920929e-7 * mag[i] + 1e-30)) {
            fail_msg("%zux%zux%zu -> %zu k%zux%zu s%zux%zu p%zu,%zu,%zu,%zu "
                     "g%zu act %d: y[%zu] = %.8g, want %.8g", s->in_c,
                     s->in_h, s->in_w, s->out_c, s->kh, s->kw, s->stride_h,
                     s->stride_w, s->pad_top, s->pad_left, s->pad_bottom,
                     s->pad_right, s->groups, act, i, (double)y[i],
                     want[i]);
        }
    }
}

static void test_conv_combinations(void **state)
{
    (void)state;
    static const size_t kernels[][2] = {{1, 1}, {3, 3}, {5, 5}, {10, 4},
                                        {2, 3}, {1, 7}};
    static const size_t pads[][4] = {{0, 0, 0, 0}, {1, 1, 1, 1},
                                     {2, 2, 2, 2}, {5, 1, 5, 2},
                                     {0, 0, 1, 1}, {1, 0, 0, 2}};
    int tested = 0, n = 0;
    for (size_t sh = 1; sh <= 3; sh++) {
        for (size_t sw = 1; sw <= 3; sw++) {
            for (size_t ki = 0; ki < 6; ki++) {
                for (size_t pi = 0; pi < 6; pi++) {
                    for (int gmode = 0; gmode < 4; gmode++, n++) {
                        struct kern_conv2d_shape s = {
                            .batch = 1 + (size_t)(n % 2),
                            .in_h = 11 + sh, .in_w = 23 + pi,
                            .kh = kernels[ki][0], .kw = kernels[ki][1],
                            .stride_h = sh, .stride_w = sw,
                            .pad_top = pads[pi][0], .pad_left = pads[pi][1],
                            .pad_bottom = pads[pi][2],
                            .pad_right = pads[pi][3]};
                        if (gmode == 0) { /* dense */
                            s.in_c = 3, s.out_c = 5, s.groups = 1;
                        } else if (gmode == 1) { /* grouped */
                            s.in_c = 4, s.out_c = 6, s.groups = 2;
                        } else if (gmode == 2) { /* depthwise */
                            s.in_c = 4, s.out_c = 4, s.groups = 4;
                        } else { /* wide, several 4-channel tiles */
                            s.in_c = 16, s.out_c = 9, s.groups = 1;
                            s.in_w = 61;
                        }
                        size_t oh, ow;
                        if (kern_conv2d_out_hw(&s, &oh, &ow) != KERN_OK) {
                            continue;
                        }
                        run_case(&s, n % 3, n % 5 != 0, n % 2);
                        tested++;
                    }
                }
            }
        }
    }
    assert_true(tested >= 1000);
}

/* Dilated convolutions (dense, grouped, depthwise) against the double
 * loop, with both entry points; the packed path's blocked layouts against
 * the same loop; the depthwise blocked entry point against the NCHW one
 * bit for bit; the int8 lowering against the float one; and a case by
 * hand. A dilation of 0 is 1 (the other tests leave the fields out). */
static void test_conv_dilated(void **state)
{
    (void)state;
    static const size_t dil[][2] = {{2, 2}, {3, 3}, {1, 2}, {2, 1}, {4, 3}};
    static const size_t kernels[][2] = {{3, 3}, {2, 2}, {3, 1}, {1, 3},
                                        {5, 2}};
    int tested = 0, n = 0;
    for (size_t di = 0; di < 5; di++) {
        for (size_t ki = 0; ki < 5; ki++) {
            for (size_t st = 1; st <= 2; st++) {
                for (int gmode = 0; gmode < 3; gmode++, n++) {
                    struct kern_conv2d_shape s = {
                        .batch = 1 + (size_t)(n % 2), .in_h = 13,
                        .in_w = 17 + (size_t)n % 5, .kh = kernels[ki][0],
                        .kw = kernels[ki][1], .stride_h = st,
                        .stride_w = 1 + (size_t)n % 2,
                        .pad_top = (size_t)n % 3, .pad_left = (size_t)n % 4,
                        .pad_bottom = (size_t)n % 2, .pad_right = 2,
                        .dilation_h = dil[di][0], .dilation_w = dil[di][1]};
                    if (gmode == 0) {
                        s.in_c = 3, s.out_c = 11, s.groups = 1;
                    } else if (gmode == 1) {
                        s.in_c = 4, s.out_c = 6, s.groups = 2;
                    } else {
                        s.in_c = 5, s.out_c = 5, s.groups = 5;
                    }
                    size_t oh, ow;
                    if (kern_conv2d_out_hw(&s, &oh, &ow) != KERN_OK) {
                        continue; /* the dilated kernel outgrows the input */
                    }
                    run_case(&s, n % 3, n % 4 != 0, n % 2);
                    tested++;
                }
            }
        }
    }
    assert_true(tested >= 120);
    /* A plane large enough for the scratch to hold a band of output rows,
     * not the whole plane: K = 576, 64 columns, 7 rows a band (the last
     * band 3 rows), grouped and not, both entry points. */
    const struct kern_conv2d_shape band = {.batch = 2, .in_c = 64,
        .in_h = 66, .in_w = 64, .out_c = 10, .kh = 3, .kw = 3,
        .stride_h = 1, .stride_w = 1, .pad_top = 2, .pad_left = 2,
        .pad_bottom = 2, .pad_right = 2, .groups = 1, .dilation_h = 2,
        .dilation_w = 2};
    assert_true(kern_conv2d_work_bytes(&band) <
                (size_t)576 * 66 * 64 * sizeof(float) / 4);
    run_case(&band, KERN_FUSE_RELU, 1, 1);
    run_case(&band, KERN_FUSE_NONE, 0, 0);
    struct kern_conv2d_shape band2 = band;
    band2.groups = 2;
    run_case(&band2, KERN_FUSE_RELU6, 1, 1);

    /* By hand: x[i][j] = 5 i + j on a 5 x 5 plane, a 2 x 2 kernel of
     * ones dilated by 2: y[i][j] = x[i][j] + x[i][j+2] + x[i+2][j] +
     * x[i+2][j+2] = 4 (5 i + j) + 24, a 3 x 3 output. */
    const struct kern_conv2d_shape h = {.batch = 1, .in_c = 1, .in_h = 5,
        .in_w = 5, .out_c = 1, .kh = 2, .kw = 2, .stride_h = 1,
        .stride_w = 1, .groups = 1, .dilation_h = 2, .dilation_w = 2};
    float x[25], w[4] = {1, 1, 1, 1}, y[9];
    for (int i = 0; i < 25; i++) {
        x[i] = (float)i;
    }
    size_t oh, ow;
    assert_int_equal(kern_conv2d_out_hw(&h, &oh, &ow), KERN_OK);
    assert_int_equal(oh, 3);
    assert_int_equal(ow, 3);
    assert_int_equal(kern_conv2d_f32(&h, x, w, NULL, 0, NULL, y), KERN_OK);
    for (int i = 0; i < 3; i++) {
        for (int j = 0; j < 3; j++) {
            assert_true(y[i * 3 + j] == (float)(4 * (5 * i + j) + 24));
        }
    }
    /* The same with padding 2 and stride 2 on each side: y[0][0] reads
     * x at rows and columns -2 and 0: only x[0][0] = 0 is real, and
     * y[1][1] = x[0][0] + x[0][2] + x[2][0] + x[2][2] = 24. */
    struct kern_conv2d_shape hp = h;
    hp.pad_top = hp.pad_left = hp.pad_bottom = hp.pad_right = 2;
    hp.stride_h = hp.stride_w = 2;
    assert_int_equal(kern_conv2d_out_hw(&hp, &oh, &ow), KERN_OK);
    assert_int_equal(oh, 4); /* (5 + 4 - 3) / 2 + 1 */
    float yp[16];
    assert_int_equal(kern_conv2d_f32(&hp, x, w, NULL, 0, NULL, yp), KERN_OK);
    assert_true(yp[0] == 0.0f && yp[5] == 24.0f);
    assert_true(yp[1] == 0.0f + 2.0f); /* x[0][0] + x[0][2] */
    /* depthwise (groups = channels): kern_dwconv2d_f32's dilated loop */
    struct kern_conv2d_shape hd = h;
    float x2[50], w2[8] = {1, 1, 1, 1, 2, 2, 2, 2}, y2[18];
    hd.in_c = hd.out_c = hd.groups = 2;
    for (int i = 0; i < 50; i++) {
        x2[i] = (float)(i % 25);
    }
    assert_int_equal(kern_conv2d_f32(&hd, x2, w2, NULL, 0, NULL, y2),
                     KERN_OK);
    for (int i = 0; i < 9; i++) {
        const float v = (float)(4 * (5 * (i / 3) + i % 3) + 24);
        assert_true(y2[i] == v && y2[9 + i] == 2.0f * v);
    }
    /* too large a dilation for the input: refused */
    struct kern_conv2d_shape big = h;
    big.dilation_h = 5; /* extent 6 > 5 */
    assert_int_equal(kern_conv2d_out_hw(&big, &oh, &ow), KERN_E_SHAPE);
    big.dilation_h = SIZE_MAX / 2;
    assert_int_equal(kern_conv2d_out_hw(&big, &oh, &ow), KERN_E_SHAPE);

    /* blocked layouts of the packed path, and the int8 lowering */
    const struct kern_conv2d_shape sl = {.batch = 2, .in_c = 11, .in_h = 9,
        .in_w = 10, .out_c = 13, .kh = 3, .kw = 3, .stride_h = 1,
        .stride_w = 2, .pad_top = 2, .pad_left = 1, .pad_bottom = 2,
        .pad_right = 3, .groups = 1, .dilation_h = 2, .dilation_w = 3};
    assert_int_equal(kern_conv2d_out_hw(&sl, &oh, &ow), KERN_OK);
    const size_t K = 11 * 9, P = oh * ow, hw = 90;
    const size_t nx = 2 * 11 * hw, ny = 2 * 13 * P;
    const size_t nxb = 2 * 16 * hw, nyb = 2 * 16 * P;
    float *xs = malloc(nx * 4), *ws = malloc(13 * K * 4);
    float *bs = malloc(13 * 4), *xb = malloc(nxb * 4);
    float *ys = malloc(nyb * 4), *yn = malloc(ny * 4);
    float *wp = malloc(kern_conv2d_packed_bytes(&sl));
    double *want = malloc(ny * 8), *mag = malloc(ny * 8);
    assert_true(xs && ws && bs && xb && ys && yn && wp && want && mag);
    fill(xs, nx);
    fill(ws, 13 * K);
    fill(bs, 13);
    conv_naive(&sl, oh, ow, xs, ws, bs, KERN_FUSE_RELU, want, mag);
    assert_int_equal(kern_conv2d_pack_f32(&sl, ws, wp), KERN_OK);
    assert_int_equal(kern_nchw_to_nchw8c_f32(2, 11, hw, xs, xb), KERN_OK);
    for (int il = 0; il < 2; il++) {
        for (int ol = 0; ol < 2; ol++) {
            memset(ys, 0xff, nyb * 4);
            assert_int_equal(kern_conv2d_packed_layout_f32(
                                 &sl, il, ol, il ? xb : xs, wp, bs,
                                 KERN_FUSE_RELU, NULL, ys),
                             KERN_OK);
            if (ol) {
                for (size_t b = 0; b < 2; b++) { /* padding lanes: +0 */
                    for (size_t p = 0; p < P; p++) {
                        for (size_t l = 13 - 8; l < 8; l++) {
                            assert_true(ys[((b * 2 + 1) * P + p) * 8 + l] ==
                                        0.0f);
                        }
                    }
                }
                assert_int_equal(kern_nchw8c_to_nchw_f32(2, 13, P, ys, yn),
                                 KERN_OK);
            } else {
                memcpy(yn, ys, ny * 4);
            }
            check_y(&sl, oh, ow, KERN_FUSE_RELU, yn, want, mag);
        }
    }
    int8_t *x8 = malloc(nx), *c8 = malloc(K * P);
    float *cf = malloc(K * P * 4);
    assert_true(x8 && c8 && cf);
    for (size_t i = 0; i < nx; i++) {
        x8[i] = (int8_t)small_int(25);
        xs[i] = (float)x8[i];
    }
    for (size_t g = 0; g < 2; g++) { /* samples 0 and 1 */
        assert_int_equal(kern_im2col_s8(&sl, x8, g, 0, c8), KERN_OK);
        assert_int_equal(kern_im2col_f32(&sl, xs, g, 0, cf), KERN_OK);
        for (size_t k = 0; k < K; k++) {
            for (size_t p = 0; p < P; p++) {
                assert_true((float)c8[p * K + k] == cf[k * P + p]);
            }
        }
    }
    free(x8);
    free(c8);
    free(cf);
    free(xs);
    free(ws);
    free(bs);
    free(xb);
    free(ys);
    free(yn);
    free(wp);
    free(want);
    free(mag);

    /* The blocked depthwise entry point: the NCHW bits, lane for lane. */
    const struct kern_dwconv2d_shape ds = {.batch = 1, .channels = 10,
        .in_h = 12, .in_w = 11, .kh = 3, .kw = 3, .stride_h = 1,
        .stride_w = 1, .pad_top = 2, .pad_left = 2, .pad_bottom = 2,
        .pad_right = 2, .dilation_h = 2, .dilation_w = 2};
    assert_int_equal(kern_dwconv2d_out_hw(&ds, &oh, &ow), KERN_OK);
    assert_int_equal(oh, 12);
    float *dx = malloc(10 * 132 * 4), *dxb = malloc(16 * 132 * 4);
    float *dw_ = malloc(90 * 4), *dwp = malloc(kern_dwconv2d_packed_bytes(&ds));
    float *dy = malloc(10 * 132 * 4), *dyb = malloc(16 * 132 * 4);
    float *dyn = malloc(10 * 132 * 4);
    assert_true(dx && dxb && dw_ && dwp && dy && dyb && dyn);
    fill(dx, 10 * 132);
    fill(dw_, 90);
    assert_int_equal(kern_dwconv2d_f32(&ds, dx, dw_, NULL, 0, dy), KERN_OK);
    assert_int_equal(kern_nchw_to_nchw8c_f32(1, 10, 132, dx, dxb), KERN_OK);
    assert_int_equal(kern_dwconv2d_pack_f32(&ds, dw_, dwp), KERN_OK);
    assert_int_equal(kern_dwconv2d_nchw8c_f32(&ds, dxb, dwp, NULL, 0, dyb),
                     KERN_OK);
    assert_int_equal(kern_nchw8c_to_nchw_f32(1, 10, 132, dyb, dyn), KERN_OK);
    assert_memory_equal(dy, dyn, 10 * 132 * 4);
    free(dx);
    free(dxb);
    free(dw_);
    free(dwp);
    free(dy);
    free(dyb);
    free(dyn);
}

/* The MLPerf Tiny models' convolution shapes at batch 1, each act. */
static void test_conv_models(void **state)
{
    (void)state;
    /* {batch, in_c, in_h, in_w, out_c, kh, kw, stride_h, stride_w,
     *  pad_top, pad_left, pad_bottom, pad_right, groups} */
    static const struct kern_conv2d_shape shapes[] = {
        {1, 3, 32, 32, 16, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1},
        {1, 16, 32, 32, 32, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1},
        {1, 16, 32, 32, 32, 1, 1, 2, 2, 0, 0, 0, 0, 1, 1, 1},
        {1, 64, 8, 8, 64, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1},
        {1, 1, 49, 10, 64, 10, 4, 2, 2, 5, 1, 5, 2, 1, 1, 1},
        {1, 64, 25, 5, 64, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1},
        {1, 64, 25, 5, 64, 3, 3, 1, 1, 1, 1, 1, 1, 64, 1, 1},
        {1, 3, 96, 96, 8, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1},
        {1, 8, 48, 48, 16, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1},
        {1, 64, 3, 3, 64, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1},
    };
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        for (int act = 0; act < 3; act++) {
            run_case(&shapes[i], act, act != 1, act != 2);
        }
    }
}

static void test_conv_hand(void **state)
{
    (void)state;
    const float x[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
    /* 2x2 kernel of ones, bias 1: window sums + 1. */
    const float w1[4] = {1, 1, 1, 1};
    const float b1 = 1.0f;
    struct kern_conv2d_shape s = {1, 1, 3, 3, 1, 2, 2, 1, 1, 0, 0, 0, 0, 1,
        1, 1};
    float y[9];
    assert_int_equal(kern_conv2d_f32(&s, x, w1, &b1, KERN_FUSE_NONE, NULL, y),
                     KERN_OK);
    assert_true(y[0] == 13 && y[1] == 17 && y[2] == 25 && y[3] == 29);
    /* bias -20, relu6: 0 0 4 6 */
    const float bm = -20.0f;
    assert_int_equal(kern_conv2d_f32(&s, x, w1, &bm, KERN_FUSE_RELU6, NULL,
                                     y), KERN_OK);
    assert_true(y[0] == 0 && y[1] == 0 && y[2] == 4 && y[3] == 6);
    /* 3x3 kernel picking the centre, padding 1, stride 2: the corners. */
    const float w2[9] = {0, 0, 0, 0, 1, 0, 0, 0, 0};
    struct kern_conv2d_shape s2 = {1, 1, 3, 3, 1, 3, 3, 2, 2, 1, 1, 1, 1, 1,
        1, 1};
    size_t oh, ow;
    assert_int_equal(kern_conv2d_out_hw(&s2, &oh, &ow), KERN_OK);
    assert_int_equal(oh, 2);
    assert_int_equal(ow, 2);
    assert_int_equal(kern_conv2d_f32(&s2, x, w2, NULL, 0, NULL, y), KERN_OK);
    assert_true(y[0] == 1 && y[1] == 3 && y[2] == 7 && y[3] == 9);
    /* A 1x3 kernel [1 10 100], strides 1 and 2, pads top 0, left 1,
     * bottom 1, right 0: padded 4 x 4, out_h = 4, out_w = (4 - 3) / 2 + 1
     * = 1, y[oy] = x[oy][-1] + 10 x[oy][0] + 100 x[oy][1] (the padding
     * row 3 gives 0). */
    const float w4[3] = {1, 10, 100};
    struct kern_conv2d_shape s4 = {1, 1, 3, 3, 1, 1, 3, 1, 2, 0, 1, 1, 0, 1,
        1, 1};
    assert_int_equal(kern_conv2d_out_hw(&s4, &oh, &ow), KERN_OK);
    assert_int_equal(oh, 4);
    assert_int_equal(ow, 1);
    assert_int_equal(kern_conv2d_f32(&s4, x, w4, NULL, 0, NULL, y), KERN_OK);
    assert_true(y[0] == 210 && y[1] == 540 && y[2] == 870 && y[3] == 0);
    /* Two groups: channel 0 scaled by 2, channel 1 by -1 (1x1 kernel). */
    const float x2[2] = {3, 5};
    const float w3[2] = {2, -1};
    struct kern_conv2d_shape s3 = {1, 2, 1, 1, 2, 1, 1, 1, 1, 0, 0, 0, 0, 2,
        1, 1};
    float y2[2];
    assert_int_equal(kern_conv2d_f32(&s3, x2, w3, NULL, 0, NULL, y2),
                     KERN_OK);
    assert_true(y2[0] == 6 && y2[1] == -5);
}

/* The packed layout written out by hand, a range of output channels run on
 * its own, and the packed API's refusals. */
static void test_conv_packed(void **state)
{
    (void)state;
    /* 18 output channels of 2 x 1 x 1 weights, w[oc][ic] = 10 oc + ic:
     * blocks of 8 channels, [k][8] each: block 0 holds channels 0..7,
     * block 1 8..15, block 2 channels 16, 17 and zeros. */
    const struct kern_conv2d_shape s = {1, 2, 3, 4, 18, 1, 1, 1, 1,
                                        0, 0, 0, 0, 1, 1, 1};
    float w[36], wp[3 * 2 * 8];
    for (int oc = 0; oc < 18; oc++) {
        w[oc * 2] = (float)(10 * oc);
        w[oc * 2 + 1] = (float)(10 * oc + 1);
    }
    assert_int_equal(KERN_CONV_PACK_BLOCK, 8);
    assert_int_equal(kern_conv2d_packed_bytes(&s), sizeof wp);
    memset(wp, 0xff, sizeof wp);
    assert_int_equal(kern_conv2d_pack_f32(&s, w, wp), KERN_OK);
    assert_true(wp[0] == 0.0f && wp[1] == 10.0f && wp[7] == 70.0f);
    assert_true(wp[8] == 1.0f && wp[8 + 5] == 51.0f);
    assert_true(wp[16] == 80.0f && wp[23] == 150.0f && wp[24] == 81.0f);
    assert_true(wp[32] == 160.0f && wp[33] == 170.0f && wp[34] == 0.0f);
    assert_true(wp[40] == 161.0f && wp[41] == 171.0f && wp[47] == 0.0f);
    /* channels 16, 17 alone (block 1, bias and y moved) give the same
     * values as in the whole run */
    float x[24], bias[18], y[18 * 12], y2[2 * 12];
    fill(x, 24);
    fill(bias, 18);
    assert_int_equal(kern_conv2d_packed_f32(&s, x, wp, bias, KERN_FUSE_NONE,
                                            NULL, y),
                     KERN_OK);
    struct kern_conv2d_shape s2 = s;
    s2.out_c = 2;
    assert_int_equal(kern_conv2d_packed_f32(&s2, x, wp + 2 * 2 * 8, bias + 16,
                                            KERN_FUSE_NONE, NULL, y2),
                     KERN_OK);
    assert_memory_equal(y2, y + 16 * 12, sizeof y2);
    /* y[17][5] = 170 x[0][5] + 171 x[1][5] + bias, by hand */
    const double want = 170.0 * x[5] + 171.0 * x[12 + 5] + bias[17];
    assert_true(fabs(y[17 * 12 + 5] - want) <= 1e-4 * fabs(want) + 1e-6);
    /* refusals */
    const struct kern_conv2d_shape dw = {1, 4, 3, 3, 4, 3, 3, 1, 1,
                                         1, 1, 1, 1, 4, 1, 1};
    assert_int_equal(kern_conv2d_packed_bytes(&dw), 0);
    assert_int_equal(kern_conv2d_pack_f32(&dw, w, wp), KERN_E_SHAPE);
    assert_int_equal(kern_conv2d_packed_f32(&dw, x, wp, NULL, 0, NULL, y),
                     KERN_E_SHAPE);
    assert_int_equal(kern_conv2d_pack_f32(NULL, w, wp), KERN_E_INVALID);
    assert_int_equal(kern_conv2d_pack_f32(&s, NULL, wp), KERN_E_INVALID);
    assert_int_equal(kern_conv2d_packed_f32(&s, x, NULL, NULL, 0, NULL, y),
                     KERN_E_INVALID);
    assert_int_equal(kern_conv2d_packed_f32(&s, x, wp, NULL, 7, NULL, y),
                     KERN_E_RANGE);
    struct kern_conv2d_shape bad = s;
    bad.groups = 4; /* does not divide 2 input channels */
    assert_int_equal(kern_conv2d_packed_bytes(&bad), 0);
    assert_int_equal(kern_conv2d_pack_f32(&bad, w, wp), KERN_E_SHAPE);
    bad = s;
    bad.in_c = (SIZE_MAX >> 2) + 1; /* 2^62 on 64-bit targets, 2^30 on 32 */
    bad.kh = bad.kw = 1;
    assert_int_equal(kern_conv2d_packed_bytes(&bad), 0);
}

/* kern_conv2d_split_channels: the width of the selected path's widest
 * tile (by its name: 8 for C, 24 for the 8-float tiles of AVX2 and NEON,
 * 32 for AVX-512's 16-lane tile), and parts of that many channels of a
 * blocked convolution, each run on its own with weights, bias and output
 * advanced to its first channel, give the whole run's bits (80 channels:
 * two whole parts and a ragged one; a 1 x 1 layer, which AVX-512 runs on
 * its 16-lane tile, and a padded 3 x 3 one on phase planes). */
static void test_conv_split_channels(void **state)
{
    (void)state;
    const size_t u = kern_conv2d_split_channels();
    const char *path = kern_cpu_path_name(kern_cpu_flags());
    const size_t want = strncmp(path, "avx512", 6) == 0 ? 32
                        : strcmp(path, "c") == 0      ? 8
                                                      : 24;
    assert_int_equal(u, want);
    assert_int_equal(u % KERN_CONV_PACK_BLOCK, 0);
    enum { C = 16, H = 6, W = 7, OC = 80 };
    for (int k = 1; k <= 3; k += 2) {
        const size_t pad = (size_t)(k / 2);
        const struct kern_conv2d_shape s = {1, C, H, W, OC, (size_t)k,
                                            (size_t)k, 1, 1, pad, pad,
                                            pad, pad, 1, 1, 1};
        const size_t K = C * (size_t)(k * k), plane = H * W;
        float *w = malloc(OC * K * sizeof *w);
        float *wp = malloc(kern_conv2d_packed_bytes(&s));
        float x[C * H * W], bias[OC];
        float *y = malloc(OC * plane * sizeof *y);
        float *y2 = malloc(OC * plane * sizeof *y2);
        assert_non_null(w);
        assert_non_null(wp);
        assert_non_null(y);
        assert_non_null(y2);
        fill(w, OC * K);
        fill(x, C * H * W);
        fill(bias, OC);
        assert_int_equal(kern_conv2d_pack_f32(&s, w, wp), KERN_OK);
        assert_int_equal(kern_conv2d_packed_layout_f32(
                             &s, KERN_LAYOUT_NCHW8C, KERN_LAYOUT_NCHW8C, x,
                             wp, bias, KERN_FUSE_RELU, NULL, y),
                         KERN_OK);
        memset(y2, 0xff, OC * plane * sizeof *y2);
        for (size_t lo = 0; lo < OC; lo += u) {
            struct kern_conv2d_shape p = s;
            p.out_c = OC - lo < u ? OC - lo : u;
            /* blocked output: channel lo's block starts lo x plane in */
            assert_int_equal(kern_conv2d_packed_layout_f32(
                                 &p, KERN_LAYOUT_NCHW8C, KERN_LAYOUT_NCHW8C,
                                 x, wp + lo * K, bias + lo, KERN_FUSE_RELU,
                                 NULL, y2 + lo * plane),
                             KERN_OK);
        }
        assert_memory_equal(y2, y, OC * plane * sizeof *y);
        free(y2);
        free(y);
        free(wp);
        free(w);
    }
}

/* kern_conv2d_packed_pixels_f32: rows of output pixels cut at uneven
 * points (tiles of every width end inside a row) in each layout pair
 * give the whole call's bits and touch no other pixel; then the range's
 * and a dilated shape's refusals. */
static void test_conv_split_pixels(void **state)
{
    (void)state;
    enum { C = 12, H = 9, W = 11, OC = 16 };
    const struct kern_conv2d_shape s = {1, C, H, W, OC, 3, 3, 1, 1,
                                        1, 1, 1, 1, 1, 1, 1};
    const size_t plane = H * W, n = (OC + 7) / 8 * 8 * plane;
    static const size_t cuts[] = {0, 5, 13, 50, 51, 98, H * W};
    float *w = malloc(OC * C * 9 * sizeof *w);
    float *wp = malloc(kern_conv2d_packed_bytes(&s));
    float *x = malloc((C + 7) / 8 * 8 * H * W * sizeof *x);
    float *y = malloc(n * sizeof *y), *y2 = malloc(n * sizeof *y2);
    float bias[OC];
    assert_non_null(w);
    assert_non_null(wp);
    assert_non_null(x);
    assert_non_null(y);
    assert_non_null(y2);
    fill(w, OC * C * 9);
    fill(x, (C + 7) / 8 * 8 * H * W);
    fill(bias, OC);
    assert_int_equal(kern_conv2d_pack_f32(&s, w, wp), KERN_OK);
    for (int lay = 0; lay < 4; lay++) {
        const int il = lay / 2 ? KERN_LAYOUT_NCHW8C : KERN_LAYOUT_NCHW;
        const int ol = lay % 2 ? KERN_LAYOUT_NCHW8C : KERN_LAYOUT_NCHW;
        const size_t ny = ol == KERN_LAYOUT_NCHW8C ? n : OC * plane;
        assert_int_equal(kern_conv2d_packed_layout_f32(&s, il, ol, x, wp,
                                                       bias, KERN_FUSE_RELU,
                                                       NULL, y),
                         KERN_OK);
        memset(y2, 0xff, ny * sizeof *y2);
        /* the parts in reverse: a part that wrote past its end would
         * overwrite the next one, done already */
        for (size_t i = sizeof cuts / sizeof cuts[0] - 1; i > 0; i--) {
            assert_int_equal(kern_conv2d_packed_pixels_f32(
                                 &s, il, ol, cuts[i - 1], cuts[i], x, wp,
                                 bias, KERN_FUSE_RELU, NULL, y2),
                             KERN_OK);
        }
        assert_memory_equal(y2, y, ny * sizeof *y);
    }
    /* an empty range writes nothing */
    memset(y2, 0xff, n * sizeof *y2);
    memcpy(y, y2, n * sizeof *y);
    assert_int_equal(kern_conv2d_packed_pixels_f32(
                         &s, KERN_LAYOUT_NCHW, KERN_LAYOUT_NCHW, 7, 7, x, wp,
                         bias, KERN_FUSE_NONE, NULL, y2),
                     KERN_OK);
    assert_memory_equal(y2, y, n * sizeof *y);
    assert_int_equal(kern_conv2d_packed_pixels_f32(
                         &s, KERN_LAYOUT_NCHW, KERN_LAYOUT_NCHW, 8, 7, x, wp,
                         bias, KERN_FUSE_NONE, NULL, y2),
                     KERN_E_RANGE);
    assert_int_equal(kern_conv2d_packed_pixels_f32(
                         &s, KERN_LAYOUT_NCHW, KERN_LAYOUT_NCHW, 0,
                         H * W + 1, x, wp, bias, KERN_FUSE_NONE, NULL, y2),
                     KERN_E_RANGE);
    struct kern_conv2d_shape d = s;
    d.dilation_h = d.dilation_w = 2;
    d.pad_top = d.pad_left = d.pad_bottom = d.pad_right = 2;
    assert_int_equal(kern_conv2d_packed_pixels_f32(
                         &d, KERN_LAYOUT_NCHW, KERN_LAYOUT_NCHW, 0, 5, x, wp,
                         bias, KERN_FUSE_NONE, NULL, y2),
                     KERN_E_SHAPE);
    assert_int_equal(kern_conv2d_packed_pixels_f32(
                         &d, KERN_LAYOUT_NCHW, KERN_LAYOUT_NCHW, 0, H * W, x,
                         wp, bias, KERN_FUSE_NONE, NULL, y2),
                     KERN_OK);
    free(y2);
    free(y);
    free(x);
    free(wp);
    free(w);
}

/* kern_conv2d_packed_layout_f32 by hand: 10 channels (a full block and a
 * partial one) on a 5 x 5 plane, batch 2, weights that pick channel oc
 * with factor oc + 1 (a 1 x 1 convolution, read in place, and a 3 x 3
 * one at stride 2 whose centre tap does, read through the padded copy),
 * bias -oc: y[b][oc][oy][ox] = (oc + 1) x[b][oc][s oy][s ox] - oc,
 * exact in float. Every layout pair; a blocked input's padding lanes hold
 * NaN, which must not reach any output; a blocked output's padding lanes
 * must be zero. Then the refusals. */
static void test_conv_layouts(void **state)
{
    (void)state;
    enum { B = 2, C = 10, H = 5, W = 5, CB = 2 };
    static float x[B * C * H * W], xb[B * CB * H * W * 8];
    static float y[B * CB * 8 * H * W];
    float w[C * C * 9], wp[CB * 8 * C * 9], bias[C];
    for (size_t b = 0; b < B; b++) {
        for (size_t c = 0; c < C; c++) {
            for (size_t p = 0; p < H * W; p++) {
                x[(b * C + c) * H * W + p] =
                    (float)(b * 100 + c * 10) + (float)(p % 7) - 3.0f;
            }
        }
    }
    assert_int_equal(kern_nchw_to_nchw8c_f32(B, C, H * W, x, xb), KERN_OK);
    for (size_t b = 0; b < B; b++) {
        for (size_t p = 0; p < H * W; p++) {
            for (size_t l = C % 8; l < 8; l++) {
                xb[((b * CB + 1) * H * W + p) * 8 + l] = NAN;
            }
        }
    }
    for (size_t oc = 0; oc < C; oc++) {
        bias[oc] = -(float)oc;
    }
    for (int k3 = 0; k3 < 2; k3++) {
        const size_t k = k3 ? 3 : 1, st = k3 ? 2 : 1, pad = k3 ? 1 : 0;
        const struct kern_conv2d_shape s = {B, C, H, W, C, k, k, st, st,
                                            pad, pad, pad, pad, 1, 1, 1};
        size_t oh, ow;
        assert_int_equal(kern_conv2d_out_hw(&s, &oh, &ow), KERN_OK);
        assert_int_equal(oh, k3 ? 3 : 5);
        memset(w, 0, sizeof w);
        for (size_t oc = 0; oc < C; oc++) {
            /* tap (k / 2, k / 2) of input channel oc */
            w[((oc * C + oc) * k + k / 2) * k + k / 2] = (float)(oc + 1);
        }
        assert_int_equal(kern_conv2d_pack_f32(&s, w, wp), KERN_OK);
        for (int il = 0; il < 2; il++) {
            for (int ol = 0; ol < 2; ol++) {
                for (size_t i = 0; i < sizeof y / sizeof y[0]; i++) {
                    y[i] = -7.0f; /* must be overwritten */
                }
                assert_int_equal(kern_conv2d_packed_layout_f32(
                                     &s, il, ol, il ? xb : x, wp, bias,
                                     KERN_FUSE_NONE, NULL, y),
                                 KERN_OK);
                const size_t hw = oh * ow;
                for (size_t b = 0; b < B; b++) {
                    for (size_t oc = 0; oc < CB * 8; oc++) {
                        for (size_t p = 0; p < hw; p++) {
                            const size_t iy = p / ow * st, ix = p % ow * st;
                            const float want =
                                oc < C ? (float)(oc + 1) *
                                                 x[(b * C + oc) * H * W +
                                                   iy * W + ix] -
                                             (float)oc
                                       : 0.0f;
                            if (!ol && oc >= C) {
                                continue;
                            }
                            const size_t at =
                                ol ? ((b * CB + oc / 8) * hw + p) * 8 +
                                         oc % 8
                                   : (b * C + oc) * hw + p;
                            assert_true(y[at] == want);
                        }
                    }
                }
            }
        }
    }
    /* refusals: a blocked layout on a grouped convolution whose groups
     * are not whole blocks of 8 channels, a layout that is neither */
    const struct kern_conv2d_shape g2 = {1, 4, 3, 3, 4, 1, 1, 1, 1,
                                         0, 0, 0, 0, 2, 1, 1};
    assert_int_equal(kern_conv2d_pack_f32(&g2, w, wp), KERN_OK);
    assert_int_equal(kern_conv2d_packed_layout_f32(
                         &g2, KERN_LAYOUT_NCHW8C, KERN_LAYOUT_NCHW, xb, wp,
                         NULL, 0, NULL, y),
                     KERN_E_SHAPE);
    assert_int_equal(kern_conv2d_packed_layout_f32(
                         &g2, KERN_LAYOUT_NCHW, KERN_LAYOUT_NCHW8C, x, wp,
                         NULL, 0, NULL, y),
                     KERN_E_SHAPE);
    assert_int_equal(kern_conv2d_packed_layout_f32(
                         &g2, KERN_LAYOUT_NCHW, KERN_LAYOUT_NCHW, x, wp,
                         NULL, 0, NULL, y),
                     KERN_OK);
    const struct kern_conv2d_shape s1 = {1, 4, 3, 3, 4, 1, 1, 1, 1,
                                         0, 0, 0, 0, 1, 1, 1};
    assert_int_equal(kern_conv2d_pack_f32(&s1, w, wp), KERN_OK);
    assert_int_equal(kern_conv2d_packed_layout_f32(&s1, 2, KERN_LAYOUT_NCHW,
                                                   x, wp, NULL, 0, NULL, y),
                     KERN_E_RANGE);
    assert_int_equal(kern_conv2d_packed_layout_f32(&s1, KERN_LAYOUT_NCHW, -1,
                                                   x, wp, NULL, 0, NULL, y),
                     KERN_E_RANGE);
    assert_int_equal(kern_conv2d_packed_layout_f32(
                         &s1, KERN_LAYOUT_NCHW8C, KERN_LAYOUT_NCHW8C, NULL,
                         wp, NULL, 0, NULL, y),
                     KERN_E_INVALID);
}

static void test_conv_errors(void **state)
{
    (void)state;
    float buf[16] = {0};
    size_t oh, ow;
    struct kern_conv2d_shape s = {1, 3, 4, 4, 2, 3, 3, 1, 1, 0, 0, 0, 0, 2,
        1, 1};
    assert_int_equal(kern_conv2d_out_hw(&s, &oh, &ow), KERN_E_SHAPE);
    assert_int_equal(kern_conv2d_work_bytes(&s), 0);
    s = (struct kern_conv2d_shape){1, 1, 2, 2, 1, 5, 5, 1, 1, 1, 1, 1, 1, 1,
        1, 1};
    assert_int_equal(kern_conv2d_out_hw(&s, &oh, &ow), KERN_E_SHAPE);
    s = (struct kern_conv2d_shape){1, 1, 2, 2, 1, 2, 2, 0, 1, 0, 0, 0, 0, 1,
        1, 1};
    assert_int_equal(kern_conv2d_out_hw(&s, &oh, &ow), KERN_E_SHAPE);
    s = (struct kern_conv2d_shape){1, 1, 2, 2, 1, 2, 2, 1, 0, 0, 0, 0, 0, 1,
        1, 1};
    assert_int_equal(kern_conv2d_out_hw(&s, &oh, &ow), KERN_E_SHAPE);
    /* kernel 2x5 fits only with 3 columns of padding */
    s = (struct kern_conv2d_shape){1, 1, 2, 2, 1, 2, 5, 1, 1, 0, 1, 0, 1, 1,
        1, 1};
    assert_int_equal(kern_conv2d_out_hw(&s, &oh, &ow), KERN_E_SHAPE);
    s.pad_right = 2;
    assert_int_equal(kern_conv2d_out_hw(&s, &oh, &ow), KERN_OK);
    assert_int_equal(ow, 1);
    s = (struct kern_conv2d_shape){SIZE_MAX / 2, 4, 2, 2, 1, 1, 1, 1, 1,
                                   0, 0, 0, 0, 1, 1, 1};
    assert_int_equal(kern_conv2d_out_hw(&s, &oh, &ow), KERN_E_OVERFLOW);
    s = (struct kern_conv2d_shape){1, 1, 2, 2, 1, 1, 1, 1, 1, 0, 0,
                                   SIZE_MAX - 1, 0, 1, 1, 1};
    assert_int_equal(kern_conv2d_out_hw(&s, &oh, &ow), KERN_E_OVERFLOW);
    s = (struct kern_conv2d_shape){1, 1, 2, 2, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1,
        1, 1};
    assert_int_equal(kern_conv2d_f32(&s, NULL, buf, NULL, 0, NULL, buf),
                     KERN_E_INVALID);
    assert_int_equal(kern_conv2d_f32(&s, buf, buf, NULL, 3, NULL, buf),
                     KERN_E_RANGE);
    assert_int_equal(kern_conv2d_f32(NULL, buf, buf, NULL, 0, NULL, buf),
                     KERN_E_INVALID);
    assert_int_equal(kern_conv2d_backward_f32(&s, buf, NULL, buf, buf, NULL,
                                              NULL), KERN_E_INVALID);
    assert_int_equal(kern_im2col_f32(&s, buf, 1, 0, buf), KERN_E_SHAPE);
    assert_int_equal(kern_im2col_f32(&s, buf, 0, 1, buf), KERN_E_SHAPE);
    assert_int_equal(kern_col2im_f32(&s, NULL, 0, 0, buf), KERN_E_INVALID);
    assert_int_equal(kern_im2col_s8(&s, NULL, 0, 0, (int8_t *)buf),
                     KERN_E_INVALID);
}

/* im2col against the definition of a column, col2im as its adjoint, and
 * the int8 lowering as the float one transposed. Values are small
 * integers, so every sum below is exact in float and double. */
static void test_lowering(void **state)
{
    (void)state;
    static const struct kern_conv2d_shape shapes[] = {
        {2, 4, 7, 9, 6, 3, 3, 2, 2, 1, 1, 1, 1, 2, 1, 1},
        {1, 1, 13, 10, 3, 10, 4, 2, 2, 5, 1, 5, 2, 1, 1, 1},
        {2, 3, 6, 11, 3, 2, 3, 1, 3, 0, 2, 1, 0, 3, 1, 1},
        {1, 5, 4, 4, 2, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1},
        {1, 2, 9, 5, 4, 4, 2, 3, 1, 2, 0, 1, 3, 2, 1, 1},
        /* dilated: the gather steps by the dilation */
        {2, 4, 12, 14, 6, 3, 3, 1, 2, 2, 3, 1, 2, 2, 2, 3},
        {1, 3, 1, 25, 2, 1, 4, 1, 1, 0, 5, 0, 1, 1, 1, 3},
    };
    for (size_t t = 0; t < sizeof shapes / sizeof shapes[0]; t++) {
        const struct kern_conv2d_shape *s = &shapes[t];
        size_t oh, ow;
        assert_int_equal(kern_conv2d_out_hw(s, &oh, &ow), KERN_OK);
        const size_t cg = s->in_c / s->groups, K = cg * s->kh * s->kw;
        const size_t P = oh * ow, nx = s->batch * s->in_c * s->in_h * s->in_w;
        float *x = malloc(nx * 4), *col = malloc(K * P * 4);
        float *c2 = malloc(K * P * 4), *back = calloc(nx, 4);
        int8_t *x8 = malloc(nx), *col8 = malloc(K * P);
        assert_true(x && col && c2 && back && x8 && col8);
        for (size_t i = 0; i < nx; i++) {
            x8[i] = (int8_t)small_int(26); /* [-32, 32) */
            x[i] = (float)x8[i];
        }
        for (size_t i = 0; i < K * P; i++) {
            c2[i] = (float)small_int(27);
        }
        for (size_t b = 0; b < s->batch; b++) {
            for (size_t g = 0; g < s->groups; g++) {
                memset(col, 0xff, K * P * 4);
                assert_int_equal(kern_im2col_f32(s, x, b, g, col), KERN_OK);
                assert_int_equal(kern_im2col_s8(s, x8, b, g, col8), KERN_OK);
                double dot_col = 0.0;
                for (size_t k = 0; k < K; k++) {
                    const size_t ci = k / (s->kh * s->kw);
                    const size_t ky = k / s->kw % s->kh, kx = k % s->kw;
                    for (size_t p = 0; p < P; p++) {
                        const size_t oy = p / ow, ox = p % ow;
                        const size_t dh = s->dilation_h ? s->dilation_h : 1;
                        const size_t dw = s->dilation_w ? s->dilation_w : 1;
                        const long iy = (long)(oy * s->stride_h + ky * dh) -
                                        (long)s->pad_top;
                        const long ix = (long)(ox * s->stride_w + kx * dw) -
                                        (long)s->pad_left;
                        float want = 0.0f;
                        if (iy >= 0 && iy < (long)s->in_h && ix >= 0 &&
                            ix < (long)s->in_w) {
                            want = x[((b * s->in_c + g * cg + ci) *
                                          s->in_h + (size_t)iy) *
                                         s->in_w + (size_t)ix];
                        }
                        if (col[k * P + p] != want ||
                            (float)col8[p * K + k] != want) {
                            fail_msg("shape %zu b%zu g%zu: col[%zu][%zu] = "
                                     "%g, int8 %d, want %g", t, b, g, k, p,
                                     (double)col[k * P + p],
                                     col8[p * K + k], (double)want);
                        }
                        dot_col += (double)want * c2[k * P + p];
                    }
                }
                /* <im2col(x), c2> = <x, col2im(c2)> over this group */
                memset(back, 0, nx * 4);
                assert_int_equal(kern_col2im_f32(s, c2, b, g, back),
                                 KERN_OK);
                double dot_x = 0.0;
                for (size_t i = 0; i < nx; i++) {
                    const size_t ch = i / (s->in_h * s->in_w) % s->in_c;
                    const size_t bi = i / (s->in_h * s->in_w * s->in_c);
                    if (back[i] != 0.0f) {
                        /* nothing outside sample b, group g */
                        assert_int_equal(bi, b);
                        assert_int_equal(ch / cg, g);
                    }
                    dot_x += (double)x[i] * back[i];
                }
                assert_true(dot_col == dot_x);
            }
        }
        free(x);
        free(col);
        free(c2);
        free(back);
        free(x8);
        free(col8);
    }
}

static void test_conv_backward(void **state)
{
    (void)state;
    /* Grouped, dense, depthwise-like, strided and a wide one. */
    /* {batch, in_c, in_h, in_w, out_c, kh, kw, stride_h, stride_w,
     *  pad_top, pad_left, pad_bottom, pad_right, groups} */
    const struct kern_conv2d_shape shapes[] = {
        {2, 4, 7, 9, 6, 3, 3, 2, 2, 1, 1, 1, 1, 2, 1, 1},
        {1, 3, 6, 5, 2, 2, 2, 1, 1, 0, 0, 0, 0, 1, 1, 1},
        {2, 3, 5, 8, 3, 3, 3, 1, 1, 2, 2, 2, 2, 3, 1, 1},
        {2, 3, 6, 9, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1},
        {2, 4, 9, 11, 8, 3, 3, 2, 2, 1, 1, 1, 1, 2, 1, 1},
        {1, 16, 4, 61, 4, 5, 5, 1, 1, 2, 2, 2, 2, 1, 1, 1},
        /* DS-CNN's first layer, shrunk: 10 x 4, stride 2, pads 5,1,5,2 */
        {1, 1, 13, 10, 3, 10, 4, 2, 2, 5, 1, 5, 2, 1, 1, 1},
        {2, 2, 7, 6, 2, 2, 3, 1, 3, 0, 2, 1, 0, 1, 1, 1},
        /* dilated: 2 x 3 grouped, and a 1-D one (a TCN's) */
        {2, 4, 11, 13, 6, 3, 3, 1, 2, 2, 1, 2, 3, 2, 2, 3},
        {1, 3, 1, 20, 4, 1, 3, 1, 1, 0, 4, 0, 4, 1, 1, 4},
    };
    for (size_t t = 0; t < sizeof shapes / sizeof shapes[0]; t++) {
        const struct kern_conv2d_shape *s = &shapes[t];
        size_t oh, ow;
        assert_int_equal(kern_conv2d_out_hw(s, &oh, &ow), KERN_OK);
        const long icg = (long)(s->in_c / s->groups);
        const long ocg = (long)(s->out_c / s->groups);
        const long kh = (long)s->kh, kw = (long)s->kw;
        const size_t nx = s->batch * s->in_c * s->in_h * s->in_w;
        const size_t nw = s->out_c * (size_t)icg * s->kh * s->kw;
        const size_t ny = s->batch * s->out_c * oh * ow;
        float *x = malloc(nx * 4), *w = malloc(nw * 4), *dy = malloc(ny * 4);
        float *gx = malloc(nx * 4), *gw = malloc(nw * 4);
        float *gb = malloc(s->out_c * 4);
        double *wx = calloc(nx, 8), *ww = calloc(nw, 8);
        double *wb = calloc(s->out_c, 8);
        assert_true(x && w && dy && gx && gw && gb && wx && ww && wb);
        fill(x, nx);
        fill(w, nw);
        fill(dy, ny);
        /* The adjoint of the forward loop: every term w * x feeds y. */
        for (long n = 0; n < (long)s->batch; n++) {
            for (long oc = 0; oc < (long)s->out_c; oc++) {
                for (long oy = 0; oy < (long)oh; oy++) {
                    for (long ox = 0; ox < (long)ow; ox++) {
                        const double d =
                            dy[((n * (long)s->out_c + oc) * (long)oh + oy) *
                                   (long)ow + ox];
                        wb[oc] += d;
                        for (long ci = 0; ci < icg; ci++) {
                            const long ic = oc / ocg * icg + ci;
                            for (long ky = 0; ky < kh; ky++) {
                                for (long kx = 0; kx < kw; kx++) {
                                    const long iy =
                                        oy * (long)s->stride_h +
                                        ky * (long)(s->dilation_h
                                                        ? s->dilation_h
                                                        : 1) -
                                        (long)s->pad_top;
                                    const long ix =
                                        ox * (long)s->stride_w +
                                        kx * (long)(s->dilation_w
                                                        ? s->dilation_w
                                                        : 1) -
                                        (long)s->pad_left;
                                    if (iy < 0 || iy >= (long)s->in_h ||
                                        ix < 0 || ix >= (long)s->in_w) {
                                        continue;
                                    }
                                    const long xi =
                                        ((n * (long)s->in_c + ic) *
                                             (long)s->in_h + iy) *
                                            (long)s->in_w + ix;
                                    const long wi =
                                        ((oc * icg + ci) * kh + ky) * kw + kx;
                                    wx[xi] += d * w[wi];
                                    ww[wi] += d * x[xi];
                                }
                            }
                        }
                    }
                }
            }
        }
        /* Every output on its own too (the others NULL). */
        for (int only = 0; only < 4; only++) {
            memset(gx, 0xff, nx * 4); /* NaN: must be overwritten */
            memset(gw, 0xff, nw * 4);
            memset(gb, 0xff, s->out_c * 4);
            float *px = only == 0 || only == 1 ? gx : NULL;
            float *pw = only == 0 || only == 2 ? gw : NULL;
            float *pb = only == 0 || only == 3 ? gb : NULL;
            assert_int_equal(kern_conv2d_backward_f32(s, x, w, dy, px, pw,
                                                      pb), KERN_OK);
            for (size_t i = 0; px && i < nx; i++) {
                if (!(fabs(gx[i] - wx[i]) <= 1e-4)) {
                    fail_msg("shape %zu: grad_x[%zu] = %g, want %g", t, i,
                             (double)gx[i], wx[i]);
                }
            }
            for (size_t i = 0; pw && i < nw; i++) {
                if (!(fabs(gw[i] - ww[i]) <= 1e-4)) {
                    fail_msg("shape %zu: grad_w[%zu] = %g, want %g", t, i,
                             (double)gw[i], ww[i]);
                }
            }
            for (size_t i = 0; pb && i < s->out_c; i++) {
                assert_true(fabs(gb[i] - wb[i]) <= 1e-4);
            }
        }
        free(x);
        free(w);
        free(dy);
        free(gx);
        free(gw);
        free(gb);
        free(wx);
        free(ww);
        free(wb);
    }
}

/* NCHW8c by hand: 2 samples of 11 channels (a full block and 3 of the
 * next, 5 padding lanes) over 3 pixels; every element placed where the
 * layout's formula says, padding zero, and back again unchanged. */
static void test_layout_nchw8c(void **state)
{
    (void)state;
    enum { B = 2, C = 11, HW = 3, CB = 2 };
    float x[B * C * HW], blk[B * CB * HW * 8], back[B * C * HW];
    for (size_t i = 0; i < B * C * HW; i++) {
        x[i] = (float)i + 0.5f;
    }
    for (size_t i = 0; i < B * CB * HW * 8; i++) {
        blk[i] = -1.0f; /* the padding must be overwritten with zeros */
    }
    assert_int_equal(kern_nchw_to_nchw8c_f32(B, C, HW, x, blk), KERN_OK);
    for (size_t b = 0; b < B; b++) {
        for (size_t k = 0; k < CB; k++) {
            for (size_t p = 0; p < HW; p++) {
                for (size_t l = 0; l < 8; l++) {
                    const size_t ch = k * 8 + l;
                    const float want =
                        ch < C ? x[(b * C + ch) * HW + p] : 0.0f;
                    assert_true(blk[((b * CB + k) * HW + p) * 8 + l] ==
                                want);
                }
            }
        }
    }
    /* one element by hand: sample 1, channel 9, pixel 2 */
    assert_true(blk[((1 * CB + 1) * HW + 2) * 8 + 1] ==
                (float)((1 * C + 9) * HW + 2) + 0.5f);
    assert_int_equal(kern_nchw8c_to_nchw_f32(B, C, HW, blk, back), KERN_OK);
    assert_memory_equal(back, x, sizeof x);
    assert_int_equal(kern_nchw_to_nchw8c_f32(B, C, HW, NULL, blk),
                     KERN_E_INVALID);
    assert_int_equal(kern_nchw8c_to_nchw_f32(B, 0, HW, blk, back),
                     KERN_E_SHAPE);
    assert_int_equal(kern_nchw_to_nchw8c_f32(SIZE_MAX / 8, 16, 1, x, blk),
                     KERN_E_OVERFLOW);
}

/* kern_conv2d_dw_shape copies a depthwise conv2d's geometry field by
 * field (an asymmetric, strided, rectangular shape checked by hand), and
 * kern_conv2d_f32 on the conv2d shape gives the bits of kern_dwconv2d_f32
 * on the copied one. */
static void test_conv_dw_shape(void **state)
{
    (void)state;
    const struct kern_conv2d_shape s = {
        .batch = 2, .in_c = 5, .in_h = 7, .in_w = 6, .out_c = 5, .kh = 3,
        .kw = 2, .stride_h = 2, .stride_w = 1, .pad_top = 1, .pad_left = 0,
        .pad_bottom = 2, .pad_right = 1, .groups = 5,
    };
    const struct kern_dwconv2d_shape d = kern_conv2d_dw_shape(&s);
    assert_int_equal(d.batch, 2);
    assert_int_equal(d.channels, 5);
    assert_int_equal(d.in_h, 7);
    assert_int_equal(d.in_w, 6);
    assert_int_equal(d.kh, 3);
    assert_int_equal(d.kw, 2);
    assert_int_equal(d.stride_h, 2);
    assert_int_equal(d.stride_w, 1);
    assert_int_equal(d.pad_top, 1);
    assert_int_equal(d.pad_left, 0);
    assert_int_equal(d.pad_bottom, 2);
    assert_int_equal(d.pad_right, 1);
    size_t oh, ow;
    assert_int_equal(kern_conv2d_out_hw(&s, &oh, &ow), KERN_OK);
    /* out_h = (7 + 1 + 2 - 3) / 2 + 1 = 4, out_w = (6 + 0 + 1 - 2) + 1 = 6 */
    enum { NX = 2 * 5 * 7 * 6, NW = 5 * 3 * 2, NY = 2 * 5 * 4 * 6 };
    assert_int_equal(2 * 5 * oh * ow, NY);
    float x[NX], w[NW], b[5], y0[NY], y1[NY];
    for (size_t i = 0; i < NX; i++) {
        x[i] = (float)((i * 37) % 19) - 9.0f;
    }
    for (size_t i = 0; i < NW; i++) {
        w[i] = 0.25f * (float)((i * 11) % 7) - 0.75f;
    }
    for (size_t i = 0; i < 5; i++) {
        b[i] = 0.5f * (float)i - 1.0f;
    }
    assert_int_equal(kern_conv2d_f32(&s, x, w, b, KERN_FUSE_RELU, NULL, y0),
                     KERN_OK);
    assert_int_equal(kern_dwconv2d_f32(&d, x, w, b, KERN_FUSE_RELU, y1),
                     KERN_OK);
    assert_memory_equal(y0, y1, sizeof y0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_conv_combinations),
        cmocka_unit_test(test_conv_models),
        cmocka_unit_test(test_conv_hand),
        cmocka_unit_test(test_conv_dilated),
        cmocka_unit_test(test_conv_errors),
        cmocka_unit_test(test_conv_packed),
        cmocka_unit_test(test_conv_split_channels),
        cmocka_unit_test(test_conv_split_pixels),
        cmocka_unit_test(test_conv_layouts),
        cmocka_unit_test(test_conv_backward),
        cmocka_unit_test(test_lowering),
        cmocka_unit_test(test_layout_nchw8c),
        cmocka_unit_test(test_conv_dw_shape),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
