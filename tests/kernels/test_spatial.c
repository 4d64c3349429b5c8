/* Behaviour of the spatial kernels through their public entry points:
 * the transposed convolution against a double-precision scatter written
 * here (the definition) over strides, pads, output padding, groups,
 * dilations and 1-D shapes, plus cases by hand; constant padding,
 * transposes and resizing against index arithmetic written here and
 * values by hand (PyTorch's for bilinear); ceil-mode pooling through
 * kern_pool2d_ceil_pad against a direct ceil-mode loop with PyTorch's
 * divisor. Registered with several KERN_CPU_MASK values (kern_sgemm's
 * paths). */
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

static uint32_t rng = 17u;

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

/* ---- transposed convolution ---------------------------------------------- */

/* The scatter in double, with sum |terms| per output for the bound. */
static void deconv_naive(const struct kern_conv_transpose2d_shape *s,
                         size_t oh, size_t ow, const float *x,
                         const float *w, const float *b, double *y,
                         double *mag)
{
    const long icg = (long)(s->in_c / s->groups);
    const long ocg = (long)(s->out_c / s->groups);
    const long dh = s->dilation_h ? (long)s->dilation_h : 1;
    const long dw = s->dilation_w ? (long)s->dilation_w : 1;
    const long kh = (long)s->kh, kw = (long)s->kw;
    const long OH = (long)oh, OW = (long)ow, C = (long)s->out_c;
    for (long n = 0; n < (long)s->batch; n++) {
        for (long oc = 0; oc < C; oc++) {
            for (long p = 0; p < OH * OW; p++) {
                y[(n * C + oc) * OH * OW + p] = b ? b[oc] : 0.0;
                mag[(n * C + oc) * OH * OW + p] = b ? fabs(b[oc]) : 0.0;
            }
        }
        for (long ic = 0; ic < (long)s->in_c; ic++) {
            for (long iy = 0; iy < (long)s->in_h; iy++) {
                for (long ix = 0; ix < (long)s->in_w; ix++) {
                    const double xv =
                        x[((n * (long)s->in_c + ic) * (long)s->in_h + iy) *
                              (long)s->in_w + ix];
                    for (long o = 0; o < ocg; o++) {
                        const long oc = ic / icg * ocg + o;
                        for (long ky = 0; ky < kh; ky++) {
                            for (long kx = 0; kx < kw; kx++) {
                                const long oy = iy * (long)s->stride_h +
                                                ky * dh - (long)s->pad_top;
                                const long ox = ix * (long)s->stride_w +
                                                kx * dw - (long)s->pad_left;
                                if (oy < 0 || oy >= OH || ox < 0 ||
                                    ox >= OW) {
                                    continue;
                                }
                                const double t =
                                    xv * w[((ic * ocg + o) * kh + ky) * kw +
                                           kx];
                                const long yi =
                                    ((n * C + oc) * OH + oy) * OW + ox;
                                y[yi] += t;
                                mag[yi] += fabs(t);
                            }
                        }
                    }
                }
            }
        }
    }
}

static void deconv_case(const struct kern_conv_transpose2d_shape *s)
{
    size_t oh, ow;
    assert_int_equal(kern_conv_transpose2d_out_hw(s, &oh, &ow), KERN_OK);
    const size_t dh = s->dilation_h ? s->dilation_h : 1;
    const size_t dw = s->dilation_w ? s->dilation_w : 1;
    assert_int_equal(oh, (s->in_h - 1) * s->stride_h - s->pad_top -
                             s->pad_bottom + dh * (s->kh - 1) +
                             s->out_pad_h + 1);
    assert_int_equal(ow, (s->in_w - 1) * s->stride_w - s->pad_left -
                             s->pad_right + dw * (s->kw - 1) +
                             s->out_pad_w + 1);
    const size_t nx = s->batch * s->in_c * s->in_h * s->in_w;
    const size_t nw = s->in_c * (s->out_c / s->groups) * s->kh * s->kw;
    const size_t ny = s->batch * s->out_c * oh * ow;
    float *x = malloc(nx * 4), *w = malloc(nw * 4), *b = malloc(s->out_c * 4);
    float *y = malloc(ny * 4);
    double *want = malloc(ny * 8), *mag = malloc(ny * 8);
    assert_true(x && w && b && y && want && mag);
    fill(x, nx);
    fill(w, nw);
    fill(b, s->out_c);
    deconv_naive(s, oh, ow, x, w, b, want, mag);
    memset(y, 0xff, ny * 4);
    assert_int_equal(kern_conv_transpose2d_f32(s, x, w, b, NULL, y), KERN_OK);
    const double k = (double)(s->in_c / s->groups * s->kh * s->kw) + 1.0;
    for (size_t i = 0; i < ny; i++) {
        if (!(fabs(y[i] - want[i]) <= k * 1.1920929e-7 * mag[i] + 1e-30)) {
            fail_msg("deconv %zux%zux%zu -> %zu k%zux%zu s%zux%zu d%zux%zu "
                     "op%zu,%zu g%zu: y[%zu] = %.8g, want %.8g", s->in_c,
                     s->in_h, s->in_w, s->out_c, s->kh, s->kw, s->stride_h,
                     s->stride_w, dh, dw, s->out_pad_h, s->out_pad_w,
                     s->groups, i, (double)y[i], want[i]);
        }
    }
    free(x);
    free(w);
    free(b);
    free(y);
    free(want);
    free(mag);
}

static void test_deconv_random(void **state)
{
    (void)state;
    int tested = 0;
    for (int t = 0; t < 400; t++) {
        struct kern_conv_transpose2d_shape s = {0};
        const int oned = t % 7 == 3;
        s.batch = 1 + (size_t)(t % 2);
        s.groups = t % 5 == 4 ? 2 : 1;
        s.in_c = s.groups * (size_t)(1 + t % 4);
        s.out_c = s.groups * (size_t)(1 + (t / 3) % 5);
        s.in_h = oned ? 1 : (size_t)(1 + (t * 7) % 9);
        s.in_w = (size_t)(1 + (t * 5) % 11);
        s.kh = oned ? 1 : (size_t)(1 + t % 4);
        s.kw = (size_t)(1 + (t / 2) % 5);
        s.stride_h = oned ? 1 : (size_t)(1 + (t / 4) % 3);
        s.stride_w = (size_t)(1 + (t / 5) % 3);
        s.dilation_h = oned ? 0 : (size_t)(t / 9) % 3;
        s.dilation_w = (size_t)(t / 11) % 3;
        s.pad_top = oned ? 0 : (size_t)t % 3;
        s.pad_bottom = oned ? 0 : (size_t)(t / 2) % 2;
        s.pad_left = (size_t)(t / 3) % 3;
        s.pad_right = (size_t)t % 2;
        s.out_pad_h = s.stride_h > 1 ? (size_t)t % s.stride_h : 0;
        s.out_pad_w = s.stride_w > 1 ? (size_t)(t / 2) % s.stride_w : 0;
        size_t oh, ow;
        if (kern_conv_transpose2d_out_hw(&s, &oh, &ow) != KERN_OK) {
            continue; /* the padding crops everything */
        }
        deconv_case(&s);
        tested++;
    }
    assert_true(tested >= 300);
    /* Columns for a band of input rows, not the whole plane: M = 64 * 16
     * rows of col, 40 columns: 6 input rows a band, the last 4. */
    struct kern_conv_transpose2d_shape band = {.batch = 2, .in_c = 8,
        .in_h = 40, .in_w = 40, .out_c = 64, .kh = 4, .kw = 4,
        .stride_h = 2, .stride_w = 2, .pad_top = 1, .pad_left = 1,
        .pad_bottom = 1, .pad_right = 1, .out_pad_h = 1, .groups = 1};
    assert_true(kern_conv_transpose2d_work_bytes(&band) <
                (size_t)1024 * 1600 * sizeof(float) / 4);
    deconv_case(&band);
    band.groups = 2;
    band.dilation_w = 2;
    deconv_case(&band);
}

static void test_deconv_hand(void **state)
{
    (void)state;
    const float x[4] = {1, 2, 3, 4}, ones[4] = {1, 1, 1, 1};
    float y[25];
    /* stride 2, 2 x 2 ones: each input fills its own 2 x 2 block */
    struct kern_conv_transpose2d_shape s = {.batch = 1, .in_c = 1,
        .in_h = 2, .in_w = 2, .out_c = 1, .kh = 2, .kw = 2, .stride_h = 2,
        .stride_w = 2, .groups = 1};
    const float s2[16] = {1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4};
    assert_int_equal(kern_conv_transpose2d_f32(&s, x, ones, NULL, NULL, y),
                     KERN_OK);
    assert_memory_equal(y, s2, sizeof s2);
    /* stride 1: overlapping blocks add up */
    s.stride_h = s.stride_w = 1;
    const float s1[9] = {1, 3, 2, 4, 10, 6, 3, 7, 4};
    assert_int_equal(kern_conv_transpose2d_f32(&s, x, ones, NULL, NULL, y),
                     KERN_OK);
    assert_memory_equal(y, s1, sizeof s1);
    /* padding 1 crops the border: only the centre, 10 */
    s.pad_top = s.pad_left = s.pad_bottom = s.pad_right = 1;
    size_t oh, ow;
    assert_int_equal(kern_conv_transpose2d_out_hw(&s, &oh, &ow), KERN_OK);
    assert_true(oh == 1 && ow == 1);
    assert_int_equal(kern_conv_transpose2d_f32(&s, x, ones, NULL, NULL, y),
                     KERN_OK);
    assert_true(y[0] == 10.0f);
    /* stride 2 with output padding 1: a fifth row and column of bias */
    s = (struct kern_conv_transpose2d_shape){.batch = 1, .in_c = 1,
        .in_h = 2, .in_w = 2, .out_c = 1, .kh = 2, .kw = 2, .stride_h = 2,
        .stride_w = 2, .out_pad_h = 1, .out_pad_w = 1, .groups = 1};
    const float bias = 0.5f;
    assert_int_equal(kern_conv_transpose2d_f32(&s, x, ones, &bias, NULL, y),
                     KERN_OK);
    for (int i = 0; i < 5; i++) {
        for (int j = 0; j < 5; j++) {
            const float v = i < 4 && j < 4 ? s2[i * 4 + j] + 0.5f : 0.5f;
            assert_true(y[i * 5 + j] == v);
        }
    }
    /* 1-D (ConvTranspose1d): x {1, 2, 3}, w {1, 10}, stride 2 */
    const float x1[3] = {1, 2, 3}, w1[2] = {1, 10};
    const float y1[6] = {1, 10, 2, 20, 3, 30};
    s = (struct kern_conv_transpose2d_shape){.batch = 1, .in_c = 1,
        .in_h = 1, .in_w = 3, .out_c = 1, .kh = 1, .kw = 2, .stride_h = 1,
        .stride_w = 2, .groups = 1};
    assert_int_equal(kern_conv_transpose2d_f32(&s, x1, w1, NULL, NULL, y),
                     KERN_OK);
    assert_memory_equal(y, y1, sizeof y1);
    /* dilation 2, stride 1: taps two apart, {1, 0, 10} per input:
     * y = {1, 2, 3 + 10, 20, 30} */
    s.stride_w = 1;
    s.dilation_w = 2;
    const float yd[5] = {1, 2, 13, 20, 30};
    assert_int_equal(kern_conv_transpose2d_f32(&s, x1, w1, NULL, NULL, y),
                     KERN_OK);
    assert_memory_equal(y, yd, sizeof yd);
    /* groups 2, weights [in_c][out_c/g]: channel 0 feeds outputs 0 and 1
     * (w 1 and 2), channel 1 feeds outputs 2 and 3 (w 3 and 4) */
    const float xg[2] = {5, 7}, wg[4] = {1, 2, 3, 4};
    s = (struct kern_conv_transpose2d_shape){.batch = 1, .in_c = 2,
        .in_h = 1, .in_w = 1, .out_c = 4, .kh = 1, .kw = 1, .stride_h = 1,
        .stride_w = 1, .groups = 2};
    const float yg[4] = {5, 10, 21, 28};
    assert_int_equal(kern_conv_transpose2d_f32(&s, xg, wg, NULL, NULL, y),
                     KERN_OK);
    assert_memory_equal(y, yg, sizeof yg);
    /* errors */
    s.out_pad_h = 1; /* not below stride 1 or dilation 1 */
    assert_int_equal(kern_conv_transpose2d_out_hw(&s, &oh, &ow),
                     KERN_E_RANGE);
    s.out_pad_h = 0;
    s.groups = 3;
    assert_int_equal(kern_conv_transpose2d_out_hw(&s, &oh, &ow),
                     KERN_E_SHAPE);
    s.groups = 2;
    s.pad_top = 1; /* crops the single row */
    assert_int_equal(kern_conv_transpose2d_out_hw(&s, &oh, &ow),
                     KERN_E_SHAPE);
    s.pad_top = 0;
    assert_int_equal(kern_conv_transpose2d_f32(&s, NULL, wg, NULL, NULL, y),
                     KERN_E_INVALID);
    s.in_h = SIZE_MAX / 2;
    s.stride_h = 4;
    assert_int_equal(kern_conv_transpose2d_out_hw(&s, &oh, &ow),
                     KERN_E_OVERFLOW);
    assert_int_equal(kern_conv_transpose2d_work_bytes(&s), 0);
}

/* ---- pad and transpose --------------------------------------------------- */

static void test_pad(void **state)
{
    (void)state;
    /* NCHW per side: one 2 x 3 plane, top 1, left 2, bottom 0, right 1 */
    const size_t sh[4] = {1, 1, 2, 3}, pb[4] = {0, 0, 1, 2};
    const size_t pe[4] = {0, 0, 0, 1};
    const float x[6] = {1, 2, 3, 4, 5, 6};
    float y[3 * 6];
    const float v = -9.0f;
    const float want[18] = {v, v, v, v, v, v, v, v, 1, 2, 3, v,
                            v, v, 4, 5, 6, v};
    assert_int_equal(kern_pad_f32(sh, 4, pb, pe, v, x, y), KERN_OK);
    assert_memory_equal(y, want, sizeof want);
    /* random shapes of every rank against the index arithmetic */
    for (int t = 0; t < 200; t++) {
        const size_t nd = 1 + (size_t)t % KERN_TENSOR_MAX_RANK;
        size_t s[KERN_TENSOR_MAX_RANK], b[KERN_TENSOR_MAX_RANK];
        size_t e[KERN_TENSOR_MAX_RANK], ys[KERN_TENSOR_MAX_RANK];
        size_t nx = 1, ny = 1;
        for (size_t i = 0; i < nd; i++) {
            s[i] = 1 + (size_t)(randf() + 1.0f) * 2;
            b[i] = (size_t)((randf() + 1.0f) * 1.5f);
            e[i] = (size_t)((randf() + 1.0f) * 1.5f);
            ys[i] = s[i] + b[i] + e[i];
            nx *= s[i];
            ny *= ys[i];
        }
        float *xx = malloc(nx * 4), *yy = malloc(ny * 4);
        assert_true(xx && yy);
        fill(xx, nx);
        memset(yy, 0xff, ny * 4);
        assert_int_equal(kern_pad_f32(s, nd, b, e, 0.25f, xx, yy), KERN_OK);
        for (size_t j = 0; j < ny; j++) {
            size_t r = j, xi = 0, xstride = 1;
            bool inside = true;
            for (size_t a = nd; a-- > 0;) {
                const size_t c = r % ys[a];
                r /= ys[a];
                inside = inside && c >= b[a] && c < b[a] + s[a];
                xi += (c - b[a]) * xstride;
                xstride *= s[a];
            }
            assert_true(yy[j] == (inside ? xx[xi] : 0.25f));
        }
        free(xx);
        free(yy);
    }
    assert_int_equal(kern_pad_f32(sh, 0, pb, pe, 0, x, y), KERN_E_SHAPE);
    assert_int_equal(kern_pad_f32(sh, 4, pb, pe, 0, NULL, y),
                     KERN_E_INVALID);
    const size_t big[4] = {1, 1, 2, SIZE_MAX - 1};
    assert_int_equal(kern_pad_f32(sh, 4, pb, big, 0, x, y), KERN_E_OVERFLOW);
}

/* y[j] for a transpose, by index arithmetic. */
static void transpose_naive(const size_t *s, size_t nd, const size_t *perm,
                            const float *x, float *y, size_t n)
{
    size_t xs[KERN_TENSOR_MAX_RANK];
    xs[nd - 1] = 1;
    for (size_t i = nd - 1; i > 0; i--) {
        xs[i - 1] = xs[i] * s[i];
    }
    for (size_t j = 0; j < n; j++) {
        size_t r = j, xi = 0;
        for (size_t a = nd; a-- > 0;) {
            const size_t d = s[perm[a]];
            xi += (r % d) * xs[perm[a]];
            r /= d;
        }
        y[j] = x[xi];
    }
}

static void transpose_case(const size_t *s, size_t nd, const size_t *perm)
{
    size_t n = 1;
    for (size_t i = 0; i < nd; i++) {
        n *= s[i];
    }
    float *x = malloc(n * 4), *y = malloc(n * 4), *want = malloc(n * 4);
    assert_true(x && y && want);
    fill(x, n);
    transpose_naive(s, nd, perm, x, want, n);
    memset(y, 0xff, n * 4);
    assert_int_equal(kern_transpose_f32(s, nd, perm, x, y), KERN_OK);
    assert_memory_equal(y, want, n * 4);
    free(x);
    free(y);
    free(want);
}

static void test_transpose(void **state)
{
    (void)state;
    /* by hand: a 2 x 3 matrix */
    const size_t s2[2] = {2, 3}, p2[2] = {1, 0};
    const float x[6] = {1, 2, 3, 4, 5, 6}, want[6] = {1, 4, 2, 5, 3, 6};
    float y[6];
    assert_int_equal(kern_transpose_f32(s2, 2, p2, x, y), KERN_OK);
    assert_memory_equal(y, want, sizeof want);
    /* ShuffleNet's channel shuffle: [N][g][C/g][H][W], perm 0 2 1 3 4;
     * channel (i, j) of x goes to j * g + i of y */
    const size_t ss[5] = {2, 2, 3, 4, 5}, ps[5] = {0, 2, 1, 3, 4};
    transpose_case(ss, 5, ps);
    float xs[120], ys[120];
    for (int i = 0; i < 120; i++) {
        xs[i] = (float)i;
    }
    const size_t s1[5] = {1, 2, 3, 4, 5};
    assert_int_equal(kern_transpose_f32(s1, 5, ps, xs, ys), KERN_OK);
    for (int c = 0; c < 6; c++) { /* y channel c = j * 2 + i */
        const int i = c % 2, j = c / 2, xc = i * 3 + j;
        for (int p = 0; p < 20; p++) {
            assert_true(ys[c * 20 + p] == (float)(xc * 20 + p));
        }
    }
    /* NCHW <-> NHWC, tiles with tails, every permutation of rank 3/4 */
    const size_t nchw[4] = {2, 13, 7, 9}, to_nhwc[4] = {0, 2, 3, 1};
    const size_t to_nchw[4] = {0, 3, 1, 2};
    transpose_case(nchw, 4, to_nhwc);
    transpose_case(nchw, 4, to_nchw);
    const size_t s3[3] = {3, 17, 11};
    const size_t p3[6][3] = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2},
                             {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
    for (int i = 0; i < 6; i++) {
        transpose_case(s3, 3, p3[i]);
    }
    for (int t = 0; t < 300; t++) {
        const size_t nd = 1 + (size_t)t % KERN_TENSOR_MAX_RANK;
        size_t s[KERN_TENSOR_MAX_RANK], perm[KERN_TENSOR_MAX_RANK];
        for (size_t i = 0; i < nd; i++) {
            s[i] = 1 + (size_t)((randf() + 1.0f) * 2.5f);
            perm[i] = i;
        }
        for (size_t i = nd; i > 1; i--) { /* Fisher-Yates */
            const size_t j = (size_t)((randf() + 1.0f) * 0.5f * (float)i) % i;
            const size_t tmp = perm[i - 1];
            perm[i - 1] = perm[j];
            perm[j] = tmp;
        }
        transpose_case(s, nd, perm);
    }
    const size_t bad[2] = {1, 1};
    assert_int_equal(kern_transpose_f32(s2, 2, bad, x, y), KERN_E_RANGE);
    const size_t out[2] = {0, 2};
    assert_int_equal(kern_transpose_f32(s2, 2, out, x, y), KERN_E_RANGE);
    assert_int_equal(kern_transpose_f32(s2, 7, p2, x, y), KERN_E_SHAPE);
}

/* ---- resize -------------------------------------------------------------- */

static void resize_run(int mode, int coord, int nearest, size_t ih,
                       size_t iw, size_t oh, size_t ow, float sh, float sw,
                       const float *x, float *y)
{
    const struct kern_resize_shape s = {.planes = 1, .in_h = ih, .in_w = iw,
        .out_h = oh, .out_w = ow, .scale_h = sh, .scale_w = sw,
        .mode = mode, .coord = coord, .nearest = nearest};
    assert_int_equal(kern_resize_f32(&s, x, y), KERN_OK);
}

static void assert_near(const float *y, const float *want, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (!(fabsf(y[i] - want[i]) <= 1e-6f)) {
            fail_msg("y[%zu] = %.8g, want %.8g", i, (double)y[i],
                     (double)want[i]);
        }
    }
}

/* The definition in double (coordinates in float, as documented). */
static void resize_naive(const struct kern_resize_shape *s, const float *x,
                         double *y)
{
    const size_t in[2] = {s->in_h, s->in_w}, out[2] = {s->out_h, s->out_w};
    const float sc[2] = {s->scale_h ? s->scale_h
                                    : (float)s->out_h / (float)s->in_h,
                         s->scale_w ? s->scale_w
                                    : (float)s->out_w / (float)s->in_w};
    for (size_t p = 0; p < s->planes; p++) {
        for (size_t oy = 0; oy < s->out_h; oy++) {
            for (size_t ox = 0; ox < s->out_w; ox++) {
                long i0[2], i1[2];
                double w1[2];
                const size_t o[2] = {oy, ox};
                for (int a = 0; a < 2; a++) {
                    float c = 0.0f;
                    if (s->coord == KERN_RESIZE_ASYMMETRIC) {
                        c = (float)o[a] / sc[a];
                    } else if (s->coord == KERN_RESIZE_ALIGN_CORNERS) {
                        c = out[a] == 1 ? 0.0f
                                        : (float)o[a] * (float)(in[a] - 1) /
                                              (float)(out[a] - 1);
                    } else if (s->coord == KERN_RESIZE_HALF_PIXEL ||
                               out[a] > 1) {
                        c = ((float)o[a] + 0.5f) / sc[a] - 0.5f;
                    }
                    double r = c;
                    if (s->mode == KERN_RESIZE_NEAREST) {
                        const double f = floor(c);
                        if (s->nearest == KERN_NEAREST_FLOOR) {
                            r = f;
                        } else if (s->nearest == KERN_NEAREST_CEIL) {
                            r = ceil(c);
                        } else if (c - f == 0.5) {
                            r = s->nearest == KERN_NEAREST_ROUND_PREFER_FLOOR
                                    ? f : f + 1.0;
                        } else {
                            r = floor(c + 0.5);
                        }
                        r = r < 0 ? 0 : r > (double)(in[a] - 1)
                                            ? (double)(in[a] - 1) : r;
                        i0[a] = i1[a] = (long)r;
                        w1[a] = 0.0;
                    } else {
                        r = r < 0 ? 0 : r > (double)(in[a] - 1)
                                            ? (double)(in[a] - 1) : r;
                        i0[a] = (long)floor(r);
                        i1[a] = i0[a] + 1 < (long)in[a] ? i0[a] + 1 : i0[a];
                        w1[a] = r - (double)i0[a];
                    }
                }
                const float *xp = x + p * s->in_h * s->in_w;
                const long W = (long)s->in_w;
                const double a = xp[i0[0] * W + i0[1]];
                const double b = xp[i0[0] * W + i1[1]];
                const double c = xp[i1[0] * W + i0[1]];
                const double d = xp[i1[0] * W + i1[1]];
                y[(p * s->out_h + oy) * s->out_w + ox] =
                    (1 - w1[0]) * ((1 - w1[1]) * a + w1[1] * b) +
                    w1[0] * ((1 - w1[1]) * c + w1[1] * d);
            }
        }
    }
}

static void test_resize(void **state)
{
    (void)state;
    const float x[4] = {1, 2, 3, 4};
    float y[64];
    /* PyTorch's F.interpolate(scale_factor=2, mode='nearest'): asymmetric,
     * floor: each value doubled both ways */
    const float n2[16] = {1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4};
    resize_run(KERN_RESIZE_NEAREST, KERN_RESIZE_ASYMMETRIC,
               KERN_NEAREST_FLOOR, 2, 2, 4, 4, 2.0f, 2.0f, x, y);
    assert_memory_equal(y, n2, sizeof n2);
    /* PyTorch's bilinear, align_corners=False (half_pixel and
     * pytorch_half_pixel agree here), scale 2 */
    const float b2[16] = {1.0f, 1.25f, 1.75f, 2.0f, 1.5f, 1.75f, 2.25f, 2.5f,
                          2.5f, 2.75f, 3.25f, 3.5f, 3.0f, 3.25f, 3.75f, 4.0f};
    resize_run(KERN_RESIZE_LINEAR, KERN_RESIZE_PYTORCH_HALF_PIXEL, 0, 2, 2,
               4, 4, 0.0f, 0.0f, x, y);
    assert_near(y, b2, 16);
    resize_run(KERN_RESIZE_LINEAR, KERN_RESIZE_HALF_PIXEL, 0, 2, 2, 4, 4,
               2.0f, 2.0f, x, y);
    assert_near(y, b2, 16);
    /* align_corners=True, 2 -> 3: the midpoints */
    const float ac[9] = {1, 1.5f, 2, 2, 2.5f, 3, 3, 3.5f, 4};
    resize_run(KERN_RESIZE_LINEAR, KERN_RESIZE_ALIGN_CORNERS, 0, 2, 2, 3, 3,
               0.0f, 0.0f, x, y);
    assert_near(y, ac, 9);
    /* nearest 1 x 4 -> 1 x 6 (scale 1.5), half_pixel: coordinates
     * (o + 0.5) / 1.5 - 0.5 = -1/6, 1/2, 7/6, 11/6, 5/2, 19/6; the ties
     * 1/2 and 5/2 go down (round_prefer_floor) or up (_ceil) */
    const float r4[4] = {10, 20, 30, 40};
    const float pf[6] = {10, 10, 20, 30, 30, 40};
    const float pc[6] = {10, 20, 20, 30, 40, 40};
    resize_run(KERN_RESIZE_NEAREST, KERN_RESIZE_HALF_PIXEL,
               KERN_NEAREST_ROUND_PREFER_FLOOR, 1, 4, 1, 6, 1.0f, 1.5f, r4,
               y);
    assert_memory_equal(y, pf, sizeof pf);
    resize_run(KERN_RESIZE_NEAREST, KERN_RESIZE_HALF_PIXEL,
               KERN_NEAREST_ROUND_PREFER_CEIL, 1, 4, 1, 6, 1.0f, 1.5f, r4,
               y);
    assert_memory_equal(y, pc, sizeof pc);
    /* ceil, asymmetric, 4 -> 6: o / 1.5 = 0, 2/3, 4/3, 2, 8/3, 10/3 */
    const float ce[6] = {10, 20, 30, 30, 40, 40};
    resize_run(KERN_RESIZE_NEAREST, KERN_RESIZE_ASYMMETRIC,
               KERN_NEAREST_CEIL, 1, 4, 1, 6, 0.0f, 0.0f, r4, y);
    assert_memory_equal(y, ce, sizeof ce);
    /* downscale 4 -> 2 linear half_pixel: coordinates 0.5, 2.5 */
    const float dn[2] = {15, 35};
    resize_run(KERN_RESIZE_LINEAR, KERN_RESIZE_HALF_PIXEL, 0, 1, 4, 1, 2,
               0.0f, 0.0f, r4, y);
    assert_near(y, dn, 2);
    /* random shapes, every mode, against the double definition */
    for (int t = 0; t < 400; t++) {
        struct kern_resize_shape s = {.planes = 1 + (size_t)t % 3,
            .in_h = 1 + (size_t)(t * 7) % 9, .in_w = 1 + (size_t)(t * 5) % 13,
            .mode = t % 2, .coord = (t / 2) % 4, .nearest = (t / 8) % 4};
        s.out_h = 1 + (size_t)(t * 11) % 17;
        s.out_w = 1 + (size_t)(t * 3) % 19;
        if (t % 5 == 0) { /* integer scale, given */
            s.out_h = s.in_h * 2;
            s.out_w = s.in_w * 3;
            s.scale_h = 2.0f;
            s.scale_w = 3.0f;
        }
        const size_t nx = s.planes * s.in_h * s.in_w;
        const size_t ny = s.planes * s.out_h * s.out_w;
        float *xx = malloc(nx * 4), *yy = malloc(ny * 4);
        double *want = malloc(ny * 8);
        assert_true(xx && yy && want);
        fill(xx, nx);
        memset(yy, 0xff, ny * 4);
        assert_int_equal(kern_resize_f32(&s, xx, yy), KERN_OK);
        resize_naive(&s, xx, want);
        for (size_t i = 0; i < ny; i++) {
            const double tol = s.mode == KERN_RESIZE_NEAREST ? 0.0 : 3e-7;
            if (!(fabs(yy[i] - want[i]) <= tol)) {
                fail_msg("resize t %d mode %d coord %d nearest %d "
                         "%zux%zu -> %zux%zu: y[%zu] = %.9g, want %.9g", t,
                         s.mode, s.coord, s.nearest, s.in_h, s.in_w, s.out_h,
                         s.out_w, i, (double)yy[i], want[i]);
            }
        }
        /* with the caller's work instead of its own tables: the same bits */
        const size_t wb = kern_resize_work_bytes(&s);
        assert_true(wb > 0);
        size_t *work = malloc(wb);
        float *y2 = malloc(ny * 4);
        assert_true(work && y2);
        memset(work, 0xff, wb);
        assert_int_equal(kern_resize_work_f32(&s, xx, work, y2), KERN_OK);
        assert_memory_equal(y2, yy, ny * 4);
        free(work);
        free(y2);
        free(xx);
        free(yy);
        free(want);
    }
    struct kern_resize_shape bad = {.planes = 1, .in_h = 2, .in_w = 2,
        .out_h = 4, .out_w = 4, .mode = 2};
    assert_int_equal(kern_resize_f32(&bad, x, y), KERN_E_RANGE);
    bad.mode = KERN_RESIZE_LINEAR;
    bad.scale_h = -1.0f;
    assert_int_equal(kern_resize_f32(&bad, x, y), KERN_E_RANGE);
    bad.scale_h = 0.0f;
    bad.out_w = 0;
    assert_int_equal(kern_resize_f32(&bad, x, y), KERN_E_SHAPE);
    assert_int_equal(kern_resize_work_bytes(&bad), 0);
}

/* ---- ceil-mode pooling --------------------------------------------------- */

/* PyTorch's ceil-mode pooling written out (aten's avg_pool2d and
 * max_pool2d loops): windows clipped to the padded input for the
 * count_include_pad divisor, then to the input. */
static void pool_ceil_naive(size_t ih, size_t iw, size_t k, size_t st,
                            size_t pad, int avg, int cip, const float *x,
                            size_t oh, size_t ow, float *y)
{
    for (size_t oy = 0; oy < oh; oy++) {
        for (size_t ox = 0; ox < ow; ox++) {
            long hs = (long)(oy * st) - (long)pad;
            long ws = (long)(ox * st) - (long)pad;
            long he = hs + (long)k, we = ws + (long)k;
            he = he < (long)(ih + pad) ? he : (long)(ih + pad);
            we = we < (long)(iw + pad) ? we : (long)(iw + pad);
            const long size = (he - hs) * (we - ws);
            hs = hs < 0 ? 0 : hs;
            ws = ws < 0 ? 0 : ws;
            he = he < (long)ih ? he : (long)ih;
            we = we < (long)iw ? we : (long)iw;
            double sum = 0.0, mx = -INFINITY;
            for (long i = hs; i < he; i++) {
                for (long j = ws; j < we; j++) {
                    const double v = x[i * (long)iw + j];
                    sum += v;
                    mx = v > mx ? v : mx;
                }
            }
            const double div = cip ? (double)size
                                   : (double)((he - hs) * (we - ws));
            y[oy * ow + ox] = avg ? (float)(sum / div) : (float)mx;
        }
    }
}

static void test_pool_ceil(void **state)
{
    (void)state;
    size_t out, extra;
    /* 6, k 3, s 2: floor gives 2, ceil 3 (a window over the last row) */
    assert_int_equal(kern_pool2d_ceil_pad(6, 3, 2, 0, 0, &out, &extra),
                     KERN_OK);
    assert_true(out == 3 && extra == 1);
    /* 5, k 2, s 2, pad 1: ceil(5 / 2) + 1 = 4, but the 4th window would
     * start at 6 - 1 = 5, past the input: PyTorch gives 3 */
    assert_int_equal(kern_pool2d_ceil_pad(5, 2, 2, 1, 1, &out, &extra),
                     KERN_OK);
    assert_true(out == 3 && extra == 0);
    /* exact fit: ceil equals floor */
    assert_int_equal(kern_pool2d_ceil_pad(7, 3, 2, 0, 0, &out, &extra),
                     KERN_OK);
    assert_true(out == 3 && extra == 0);
    assert_int_equal(kern_pool2d_ceil_pad(2, 3, 1, 0, 0, &out, &extra),
                     KERN_E_SHAPE);
    assert_int_equal(kern_pool2d_ceil_pad(2, 3, 1, 0, 0, NULL, &extra),
                     KERN_E_INVALID);
    /* The recipe on random planes against PyTorch's loop: max and
     * count_include_pad 0 with the extra padding; count_include_pad 1
     * through an explicit zero pad when there is an overhang. */
    int overhang = 0;
    for (int t = 0; t < 300; t++) {
        const size_t k = 2 + (size_t)t % 3, st = 1 + (size_t)(t / 3) % 3;
        const size_t pad = (size_t)(t / 9) % 2 * (k / 2);
        const size_t ih = k + (size_t)(t * 7) % 9, iw = k + (size_t)(t * 5) % 8;
        const int avg = t % 2, cip = (t / 2) % 2;
        size_t oh, ow, eh, ew;
        assert_int_equal(kern_pool2d_ceil_pad(ih, k, st, pad, pad, &oh, &eh),
                         KERN_OK);
        assert_int_equal(kern_pool2d_ceil_pad(iw, k, st, pad, pad, &ow, &ew),
                         KERN_OK);
        overhang += eh || ew;
        float *x = malloc(ih * iw * 4), *y = malloc(oh * ow * 4);
        float *want = malloc(oh * ow * 4);
        float *xp = malloc((ih + 2 * pad) * (iw + 2 * pad) * 4);
        assert_true(x && y && want && xp);
        fill(x, ih * iw);
        pool_ceil_naive(ih, iw, k, st, pad, avg, cip, x, oh, ow, want);
        struct kern_pool2d_shape s = {.batch = 1, .channels = 1, .in_h = ih,
            .in_w = iw, .kh = k, .kw = k, .stride_h = st, .stride_w = st,
            .pad_top = pad, .pad_left = pad, .pad_bottom = pad + eh,
            .pad_right = pad + ew, .count_include_pad = cip};
        const float *src = x;
        if (avg && cip && (eh || ew)) {
            const size_t sh[2] = {ih, iw}, pb[2] = {pad, pad};
            assert_int_equal(kern_pad_f32(sh, 2, pb, pb, 0.0f, x, xp),
                             KERN_OK);
            s.in_h += 2 * pad;
            s.in_w += 2 * pad;
            s.pad_top = s.pad_left = 0;
            s.pad_bottom = eh;
            s.pad_right = ew;
            s.count_include_pad = 0;
            src = xp;
        }
        size_t kh_out, kw_out;
        assert_int_equal(kern_pool2d_out_hw(&s, &kh_out, &kw_out), KERN_OK);
        assert_true(kh_out == oh && kw_out == ow);
        assert_int_equal(avg ? kern_avgpool2d_f32(&s, src, y)
                             : kern_maxpool2d_f32(&s, src, y),
                         KERN_OK);
        for (size_t i = 0; i < oh * ow; i++) {
            if (!(fabsf(y[i] - want[i]) <= 1e-6f)) {
                fail_msg("pool t %d k%zu s%zu p%zu avg %d cip %d: y[%zu] = "
                         "%.8g, want %.8g", t, k, st, pad, avg, cip, i,
                         (double)y[i], (double)want[i]);
            }
        }
        free(x);
        free(y);
        free(want);
        free(xp);
    }
    assert_true(overhang > 50);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_deconv_hand),
        cmocka_unit_test(test_deconv_random),
        cmocka_unit_test(test_pad),
        cmocka_unit_test(test_transpose),
        cmocka_unit_test(test_resize),
        cmocka_unit_test(test_pool_ceil),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
