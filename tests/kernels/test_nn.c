/* Behaviour of the public network primitives (the convolution has
 * test_conv.c): pooling by hand, softmax of large inputs, cross-entropy
 * and its gradient against finite differences, SGD with momentum by hand,
 * the loss scaler's transitions, and error statuses. Registered several times with KERN_CPU_MASK so every path runs
 * through the public entry points. */
#include <math.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../max_seen.h"
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

/* A square window with equal stride and padding on every side, average
 * pooling dividing by the whole window (PyTorch's defaults). */
static struct kern_pool2d_shape square_pool(size_t batch, size_t channels,
                                            size_t in_h, size_t in_w,
                                            size_t k, size_t stride,
                                            size_t pad)
{
    return (struct kern_pool2d_shape){
        .batch = batch, .channels = channels, .in_h = in_h, .in_w = in_w,
        .kh = k, .kw = k, .stride_h = stride, .stride_w = stride,
        .pad_top = pad, .pad_left = pad, .pad_bottom = pad,
        .pad_right = pad, .count_include_pad = 1,
    };
}

static void test_pool_hand(void **state)
{
    (void)state;
    float x[16];
    for (int i = 0; i < 16; i++) {
        x[i] = (float)(i + 1);
    }
    struct kern_pool2d_shape s = square_pool(1, 1, 4, 4, 2, 2, 0);
    float y[4];
    assert_int_equal(kern_maxpool2d_f32(&s, x, y), KERN_OK);
    assert_true(y[0] == 6 && y[1] == 8 && y[2] == 14 && y[3] == 16);
    assert_int_equal(kern_avgpool2d_f32(&s, x, y), KERN_OK);
    /* (1+2+5+6)/4 = 3.5, (3+4+7+8)/4 = 5.5, 11.5, 13.5 */
    assert_true(y[0] == 3.5f && y[1] == 5.5f && y[2] == 11.5f &&
                y[3] == 13.5f);
    /* Padding 1, k 2, stride 2 over [1 2; 3 4]: each window holds one real
     * value; avg divides by 4 (count_include_pad), max ignores padding
     * even for negative values. */
    const float x2[4] = {1, 2, 3, 4};
    struct kern_pool2d_shape s2 = square_pool(1, 1, 2, 2, 2, 2, 1);
    assert_int_equal(kern_avgpool2d_f32(&s2, x2, y), KERN_OK);
    assert_true(y[0] == 0.25f && y[1] == 0.5f && y[2] == 0.75f &&
                y[3] == 1.0f);
    const float x3[4] = {-1, -2, -3, -4};
    assert_int_equal(kern_maxpool2d_f32(&s2, x3, y), KERN_OK);
    assert_true(y[0] == -1 && y[1] == -2 && y[2] == -3 && y[3] == -4);
    /* Stride 1, k 3, pad 1 over 3x3: the centre window sees everything. */
    float y9[9];
    struct kern_pool2d_shape s3 = square_pool(1, 1, 3, 3, 3, 1, 1);
    const float x9[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
    assert_int_equal(kern_avgpool2d_f32(&s3, x9, y9), KERN_OK);
    assert_true(y9[4] == 5.0f);           /* 45 / 9 */
    assert_true(y9[0] == 12.0f / 9.0f);   /* (1+2+4+5) / 9 */
    assert_int_equal(kern_maxpool2d_f32(&s3, x9, y9), KERN_OK);
    assert_true(y9[0] == 5 && y9[4] == 9 && y9[8] == 9);
    /* count_include_pad 0 (ONNX's default): the corner window holds 4
     * real cells, the edge window 6, the centre 9. */
    s3.count_include_pad = 0;
    assert_int_equal(kern_avgpool2d_f32(&s3, x9, y9), KERN_OK);
    assert_true(y9[0] == 12.0f / 4.0f);            /* (1+2+4+5) / 4 */
    assert_true(y9[1] == 21.0f / 6.0f);            /* (1+2+3+4+5+6) / 6 */
    assert_true(y9[4] == 5.0f);
}

static void test_pool_rect(void **state)
{
    (void)state;
    /* x is 3x4: rows {1 2 3 4}, {5 6 7 8}, {9 10 11 12}. A 1x3 window
     * (kh 1, kw 3), stride 2 down and 1 across, padding only on the right
     * (t,l,b,r = 0,0,0,1): out_h = (3 - 1) / 2 + 1 = 2 (rows 0 and 2),
     * out_w = (4 + 1 - 3) / 1 + 1 = 3. */
    float x[12];
    for (int i = 0; i < 12; i++) {
        x[i] = (float)(i + 1);
    }
    struct kern_pool2d_shape s = {
        .batch = 1, .channels = 1, .in_h = 3, .in_w = 4, .kh = 1, .kw = 3,
        .stride_h = 2, .stride_w = 1, .pad_right = 1,
        .count_include_pad = 1,
    };
    size_t oh, ow;
    assert_int_equal(kern_pool2d_out_hw(&s, &oh, &ow), KERN_OK);
    assert_int_equal(oh, 2);
    assert_int_equal(ow, 3);
    float y[6];
    assert_int_equal(kern_maxpool2d_f32(&s, x, y), KERN_OK);
    const float want_max[6] = {3, 4, 4, 11, 12, 12};
    assert_memory_equal(y, want_max, sizeof y);
    assert_int_equal(kern_avgpool2d_f32(&s, x, y), KERN_OK);
    /* the last window of each row holds 2 real cells + the pad */
    assert_true(y[0] == 6.0f / 3.0f && y[1] == 9.0f / 3.0f &&
                y[2] == 7.0f / 3.0f && y[3] == 30.0f / 3.0f &&
                y[4] == 33.0f / 3.0f && y[5] == 23.0f / 3.0f);
    s.count_include_pad = 0;
    assert_int_equal(kern_avgpool2d_f32(&s, x, y), KERN_OK);
    assert_true(y[2] == 7.0f / 2.0f && y[5] == 23.0f / 2.0f &&
                y[0] == 2.0f);
    /* Backward with the real-cell divisor: the right pad takes nothing,
     * x[3] (4) gets dy[1] / 3 + dy[2] / 2. */
    const float dy[6] = {3, 6, 4, 0, 0, 0};
    float gx[12];
    assert_int_equal(kern_avgpool2d_backward_f32(&s, dy, gx), KERN_OK);
    assert_true(gx[0] == 1.0f && gx[1] == 1.0f + 2.0f &&
                gx[2] == 1.0f + 2.0f + 2.0f && gx[3] == 2.0f + 2.0f &&
                gx[4] == 0.0f);
    /* Asymmetric padding top/left only, 2x2 window, stride 2 over 3x3:
     * out 2x2, the top-left window holds x[0] alone. */
    const float x9[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
    struct kern_pool2d_shape a = {
        .batch = 1, .channels = 1, .in_h = 3, .in_w = 3, .kh = 2, .kw = 2,
        .stride_h = 2, .stride_w = 2, .pad_top = 1, .pad_left = 1,
        .count_include_pad = 0,
    };
    assert_int_equal(kern_pool2d_out_hw(&a, &oh, &ow), KERN_OK);
    assert_true(oh == 2 && ow == 2);
    assert_int_equal(kern_avgpool2d_f32(&a, x9, y), KERN_OK);
    assert_true(y[0] == 1.0f && y[1] == 2.5f && y[2] == 5.5f &&
                y[3] == 7.0f);
    assert_int_equal(kern_maxpool2d_f32(&a, x9, y), KERN_OK);
    assert_true(y[0] == 1 && y[1] == 3 && y[2] == 7 && y[3] == 9);
    /* A pad as large as its window side is refused; one less is not
     * (ONNX's averagepool_2d_pads: k 3, pads 2). */
    a.pad_bottom = 2;
    assert_int_equal(kern_pool2d_out_hw(&a, &oh, &ow), KERN_E_RANGE);
    struct kern_pool2d_shape p2 = square_pool(1, 1, 3, 3, 3, 1, 2);
    assert_int_equal(kern_pool2d_out_hw(&p2, &oh, &ow), KERN_OK);
    assert_true(oh == 5 && ow == 5);
}

static void test_pool_backward(void **state)
{
    (void)state;
    /* Overlapping windows (k 3, stride 1, pad 1) over 3x3: the maximum 9
     * collects the gradients of the 4 windows that contain it, 5 of the
     * top-left window, ... */
    const float x[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
    const float dy[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
    float gx[9];
    struct kern_pool2d_shape s = square_pool(1, 1, 3, 3, 3, 1, 1);
    assert_int_equal(kern_maxpool2d_backward_f32(&s, x, dy, gx), KERN_OK);
    /* Window maxima: (0,0)->5 (1,1), (0,1)->6, (0,2)->6, (1,0)->8,
     * (1,1)->9, (1,2)->9, (2,0)->8, (2,1)->9, (2,2)->9. */
    const float want[9] = {0, 0, 0, 0, 1, 2 + 3, 0, 4 + 7, 5 + 6 + 8 + 9};
    for (int i = 0; i < 9; i++) {
        assert_true(gx[i] == want[i]);
    }
    /* Ties: the first in window order wins. */
    const float same[4] = {2, 2, 2, 2};
    const float one = 1.0f;
    float g4[4];
    struct kern_pool2d_shape s2 = square_pool(1, 1, 2, 2, 2, 2, 0);
    assert_int_equal(kern_maxpool2d_backward_f32(&s2, same, &one, g4),
                     KERN_OK);
    assert_true(g4[0] == 1 && g4[1] == 0 && g4[2] == 0 && g4[3] == 0);
    /* The unrolled 2x2 path against the rule written out: 2 x 3 planes of
     * 5 x 7 (an odd row and column left out), with ties and NaN. */
    {
        enum { B = 2, C = 3, H = 5, W = 7, OH = 2, OW = 3 };
        float xx[B * C * H * W], dd[B * C * OH * OW], gg[B * C * H * W];
        float want2[B * C * H * W];
        for (int i = 0; i < B * C * H * W; i++) {
            xx[i] = (float)((i * 37) % 11) - 5.0f; /* many ties */
        }
        xx[9] = NAN;
        xx[W * H + 1] = NAN;
        xx[W * H + 8] = NAN; /* two NaN in one window: the first wins */
        for (int i = 0; i < B * C * OH * OW; i++) {
            dd[i] = (float)(i + 1);
        }
        memset(want2, 0, sizeof want2);
        for (int p = 0; p < B * C; p++) {
            for (int oy = 0; oy < OH; oy++) {
                for (int ox = 0; ox < OW; ox++) {
                    int bi = -1;
                    for (int ky = 0; ky < 2 && bi < 0; ky++) {
                        for (int kx = 0; kx < 2 && bi < 0; kx++) {
                            int i = p * H * W + (2 * oy + ky) * W + 2 * ox +
                                    kx;
                            if (xx[i] != xx[i]) {
                                bi = i;
                            }
                        }
                    }
                    for (int ky = 0; ky < 2 && bi < 0; ky++) {
                        for (int kx = 0; kx < 2; kx++) {
                            int i = p * H * W + (2 * oy + ky) * W + 2 * ox +
                                    kx;
                            float mx = -INFINITY;
                            for (int q = 0; q < 4; q++) {
                                float v = xx[p * H * W +
                                             (2 * oy + q / 2) * W + 2 * ox +
                                             q % 2];
                                mx = v > mx ? v : mx;
                            }
                            if (bi < 0 && xx[i] == mx) {
                                bi = i;
                            }
                        }
                    }
                    want2[bi] += dd[(p * OH + oy) * OW + ox];
                }
            }
        }
        struct kern_pool2d_shape s4 = square_pool(B, C, H, W, 2, 2, 0);
        assert_int_equal(kern_maxpool2d_backward_f32(&s4, xx, dd, gg),
                         KERN_OK);
        assert_memory_equal(gg, want2, sizeof gg);
    }
    /* Average: each real element of each window gets dy / k^2. */
    const float d1[4] = {4, 8, 12, 16};
    float gavg[4];
    struct kern_pool2d_shape s3 = square_pool(1, 1, 2, 2, 2, 2, 1);
    assert_int_equal(kern_avgpool2d_backward_f32(&s3, d1, gavg), KERN_OK);
    assert_true(gavg[0] == 1 && gavg[1] == 2 && gavg[2] == 3 &&
                gavg[3] == 4);
    struct kern_pool2d_shape bad = square_pool(1, 1, 4, 4, 2, 2, 2);
    assert_int_equal(kern_maxpool2d_f32(&bad, x, gx), KERN_E_RANGE);
}

static void test_softmax(void **state)
{
    (void)state;
    float x[2] = {1000.0f, 1001.0f};
    float y[2];
    assert_int_equal(kern_nn_softmax_f32(x, 1, 2, y), KERN_OK);
    /* 1 / (1 + e) and e / (1 + e). */
    const double e = exp(1.0);
    assert_true(isfinite(y[0]) && isfinite(y[1]));
    assert_true(fabs(y[0] - 1.0 / (1.0 + e)) < 1e-7);
    assert_true(fabs(y[1] - e / (1.0 + e)) < 1e-7);
    /* In place, two rows, -inf entries give 0. */
    float z[6] = {0, 0, 0, -INFINITY, 3, 3};
    assert_int_equal(kern_nn_softmax_f32(z, 2, 3, z), KERN_OK);
    assert_true(fabs(z[0] - 1.0 / 3.0) < 1e-7 && z[3] == 0.0f &&
                z[4] == 0.5f && z[5] == 0.5f);
    float n[2] = {NAN, 1};
    assert_int_equal(kern_nn_softmax_f32(n, 1, 2, n), KERN_OK);
    assert_true(isnan(n[0]) && isnan(n[1]));
}

static double xent_loss(const float *logits, const int32_t *labels,
                        size_t batch, size_t classes)
{
    float loss = 0.0f;
    assert_int_equal(kern_nn_softmax_xent_f32(logits, labels, batch,
                                              classes, &loss, NULL),
                     KERN_OK);
    return loss;
}

static void test_xent(void **state)
{
    (void)state;
    /* Equal logits: loss ln 2, grad (0.5 - 1, 0.5). */
    const float l0[2] = {0, 0};
    const int32_t lab0 = 0;
    float loss, g[2];
    assert_int_equal(kern_nn_softmax_xent_f32(l0, &lab0, 1, 2, &loss, g),
                     KERN_OK);
    assert_true(fabs(loss - log(2.0)) < 1e-7);
    assert_true(g[0] == -0.5f && g[1] == 0.5f);
    /* Large logits stay finite. */
    const float big[2] = {1000, 1001};
    assert_int_equal(kern_nn_softmax_xent_f32(big, &lab0, 1, 2, &loss, g),
                     KERN_OK);
    assert_true(fabs(loss - log(1.0 + exp(1.0))) < 1e-5);
    /* Gradient against central differences of the mean loss. */
    enum { B = 3, C = 5 };
    float x[B * C];
    fill(x, B * C);
    for (int i = 0; i < B * C; i++) {
        x[i] *= 3.0f;
    }
    const int32_t labels[B] = {4, 0, 2};
    float grad[B * C];
    assert_int_equal(kern_nn_softmax_xent_f32(x, labels, B, C, &loss, grad),
                     KERN_OK);
    for (int i = 0; i < B * C; i++) {
        const float h = 1e-2f;
        float xp[B * C], xm[B * C];
        memcpy(xp, x, sizeof x);
        memcpy(xm, x, sizeof x);
        xp[i] += h;
        xm[i] -= h;
        const double fd = (xent_loss(xp, labels, B, C) -
                           xent_loss(xm, labels, B, C)) /
                          ((double)xp[i] - (double)xm[i]);
        if (fabs(fd - grad[i]) > 2e-4) {
            fail_msg("grad[%d] = %g, finite difference %g", i,
                     (double)grad[i], fd);
        }
    }
    const int32_t badlab[1] = {2};
    assert_int_equal(kern_nn_softmax_xent_f32(l0, badlab, 1, 2, &loss, g),
                     KERN_E_RANGE);
    const int32_t neg[1] = {-1};
    assert_int_equal(kern_nn_softmax_xent_f32(l0, neg, 1, 2, &loss, g),
                     KERN_E_RANGE);
}

static void test_bias_finite_scale(void **state)
{
    (void)state;
    float x[2 * 19];
    float bias[19];
    for (int i = 0; i < 38; i++) {
        x[i] = (float)i;
    }
    for (int c = 0; c < 19; c++) {
        bias[c] = (float)(100 * c);
    }
    assert_int_equal(kern_nn_bias_add_f32(x, 2, 19, bias), KERN_OK);
    for (int i = 0; i < 38; i++) {
        assert_true(x[i] == (float)(i + 100 * (i % 19)));
    }
    /* Bias gradient: column sums of x (now i + 100 c) over the 2 rows:
     * c + (19 + c) + 200 c. */
    float gb[19];
    assert_int_equal(kern_nn_bias_grad_f32(x, 2, 19, gb), KERN_OK);
    for (int c = 0; c < 19; c++) {
        assert_true(gb[c] == (float)(c + 19 + c + 200 * c));
    }
    assert_int_equal(kern_nn_bias_grad_f32(NULL, 2, 19, gb), KERN_E_INVALID);
    float img[2 * 3 * 5];
    const float cb[3] = {1, 2, 3};
    memset(img, 0, sizeof img);
    assert_int_equal(kern_nn_bias_add_nchw_f32(img, 2, 3, 5, cb), KERN_OK);
    for (int i = 0; i < 30; i++) {
        assert_true(img[i] == cb[(i / 5) % 3]);
    }
    float f[37];
    for (int i = 0; i < 37; i++) {
        f[i] = (float)i - 18.0f;
    }
    assert_true(kern_all_finite_f32(f, 37));
    assert_true(kern_all_finite_f32(NULL, 0));
    assert_false(kern_all_finite_f32(NULL, 3));
    for (int pos = 0; pos < 37; pos += 6) {
        const float keep = f[pos];
        f[pos] = pos % 4 ? INFINITY : NAN;
        assert_false(kern_all_finite_f32(f, 37));
        f[pos] = keep;
    }
    f[36] = -INFINITY;
    assert_false(kern_all_finite_f32(f, 37));
    assert_true(kern_all_finite_f32(f, 36));
    assert_int_equal(kern_scale_f32(f, 36, 0.5f), KERN_OK);
    for (int i = 0; i < 36; i++) {
        assert_true(f[i] == ((float)i - 18.0f) * 0.5f);
    }
}

/* The graph primitives against double references written here. */
static void test_add_affine_gap(void **state)
{
    (void)state;
    enum { N = 1003 }; /* odd: every vector tail */
    static float a[N], b[N], c[N], y[N];
    fill(a, N);
    fill(b, N);
    fill(c, N);
    const float *two[2] = {a, b}, *three[3] = {a, b, c};
    assert_int_equal(kern_nn_add_f32(y, two, 2, N), KERN_OK);
    for (size_t i = 0; i < N; i++) {
        /* one float addition of two floats: the rounded exact sum */
        assert_true(y[i] == (float)((double)a[i] + (double)b[i]));
    }
    assert_int_equal(kern_nn_add_f32(y, three, 3, N), KERN_OK);
    for (size_t i = 0; i < N; i++) {
        const double want = (double)a[i] + (double)b[i] + (double)c[i];
        /* two roundings of values below 3 in magnitude */
        assert_true(fabs(y[i] - want) <= 2.0 * 0x1p-23 * 3.0);
    }
    /* in place on the first input */
    memcpy(y, a, sizeof y);
    const float *inplace[2] = {y, b};
    assert_int_equal(kern_nn_add_f32(y, inplace, 2, N), KERN_OK);
    assert_true(y[7] == a[7] + b[7]);
    assert_int_equal(kern_nn_add_f32(y, two, 0, N), KERN_E_SHAPE);
    const float *hole[2] = {a, NULL};
    assert_int_equal(kern_nn_add_f32(y, hole, 2, N), KERN_E_INVALID);

    /* affine: 3 samples, 5 channels, 7x9 planes */
    enum { B = 3, C = 5, HW = 63 };
    static float x[B * C * HW], z[B * C * HW];
    float scale[C], shift[C];
    fill(x, B * C * HW);
    fill(scale, C);
    fill(shift, C);
    assert_int_equal(
        kern_nn_channel_affine_f32(x, B, C, HW, scale, shift, z), KERN_OK);
    for (size_t n = 0; n < B; n++) {
        for (size_t ch = 0; ch < C; ch++) {
            for (size_t i = 0; i < HW; i++) {
                const size_t at = (n * C + ch) * HW + i;
                const double want = (double)x[at] * scale[ch] + shift[ch];
                assert_true(fabs(z[at] - want) <= 2.0 * 0x1p-24 * 2.0);
            }
        }
    }
    /* feature vectors (hw 1, the contiguous path): 4 samples of 37
     * features, each the product rounded, then the sum rounded */
    enum { VB = 4, VC = 37 };
    float vscale[VC], vshift[VC];
    fill(vscale, VC);
    fill(vshift, VC);
    assert_int_equal(
        kern_nn_channel_affine_f32(x, VB, VC, 1, vscale, vshift, z), KERN_OK);
    for (size_t n = 0; n < VB; n++) {
        for (size_t ch = 0; ch < VC; ch++) {
            const size_t at = n * VC + ch;
            assert_true(z[at] == (float)((double)(float)((double)x[at] *
                                                         vscale[ch]) +
                                         vshift[ch]));
        }
    }

    /* global average of 15 planes of 63 values, and of one long plane
     * whose float sum would lose digits */
    assert_int_equal(kern_nn_global_avgpool_f32(x, B * C, HW, z), KERN_OK);
    for (size_t p = 0; p < B * C; p++) {
        double sum = 0.0;
        for (size_t i = 0; i < HW; i++) {
            sum += x[p * HW + i];
        }
        assert_true(z[p] == (float)(sum / HW));
    }
    enum { LONG = 100003 };
    float *big = malloc(LONG * sizeof *big);
    assert_non_null(big);
    for (size_t i = 0; i < LONG; i++) {
        big[i] = 1.0f + (float)(i % 3) * 0x1p-20f;
    }
    float mean;
    assert_int_equal(kern_nn_global_avgpool_f32(big, 1, LONG, &mean),
                     KERN_OK);
    double want = 0.0;
    for (size_t i = 0; i < LONG; i++) {
        want += big[i];
    }
    assert_true(mean == (float)(want / LONG));
    free(big);
    assert_int_equal(kern_nn_global_avgpool_f32(x, 1, 0, z), KERN_E_SHAPE);
}

/* Two floats with the same bits (NaN equal to NaN, -0 unlike +0). */
static bool same_bits(float a, float b)
{
    return memcmp(&a, &b, sizeof a) == 0;
}

/* x [batch][c][hw] into its NCHW8c form, the padding lanes set to NaN so
 * that a kernel reading them would show it. */
static float *to_blocked(const float *x, size_t batch, size_t c, size_t hw)
{
    const size_t nb = (c + 7) / 8;
    float *xb = malloc(batch * nb * 8 * hw * sizeof *xb);
    assert_non_null(xb);
    assert_int_equal(kern_nchw_to_nchw8c_f32(batch, c, hw, x, xb), KERN_OK);
    for (size_t b = 0; b < batch; b++) {
        for (size_t l = c % 8 ? c % 8 : 8; l < 8; l++) {
            for (size_t i = 0; i < hw; i++) {
                xb[((b * nb + nb - 1) * hw + i) * 8 + l] = NAN;
            }
        }
    }
    return xb;
}

/* The closing pools on NCHW8c input: by hand on nine channels (a second
 * block with one real lane), then the same bits as the NCHW kernels on
 * the presets' last pools and padded, odd and NaN / -0 cases; refusals. */
static void test_pool_nchw8c(void **state)
{
    (void)state;
    /* x[b][c][i] = 100 b + 10 c + i over a 3 x 3 plane: the maximum is the
     * last cell, the mean the middle one (sums of small integers, exact) */
    enum { HB = 2, HC = 9 };
    float x[HB * HC * 9], y[HB * HC];
    for (size_t b = 0; b < HB; b++) {
        for (size_t c = 0; c < HC; c++) {
            for (size_t i = 0; i < 9; i++) {
                x[(b * HC + c) * 9 + i] = (float)(100 * b + 10 * c + i);
            }
        }
    }
    float *xb = to_blocked(x, HB, HC, 9);
    struct kern_pool2d_shape s = square_pool(HB, HC, 3, 3, 3, 1, 0);
    assert_int_equal(kern_maxpool2d_nchw8c_f32(&s, xb, y), KERN_OK);
    for (size_t b = 0; b < HB; b++) {
        for (size_t c = 0; c < HC; c++) {
            assert_true(y[b * HC + c] == (float)(100 * b + 10 * c + 8));
        }
    }
    assert_int_equal(kern_avgpool2d_nchw8c_f32(&s, xb, y), KERN_OK);
    for (size_t b = 0; b < HB; b++) {
        for (size_t c = 0; c < HC; c++) {
            assert_true(y[b * HC + c] == (float)(100 * b + 10 * c + 4));
        }
    }
    /* k=3 s=2 p=1 on a 2 x 2 input: the window
     * holds the four real cells and five padding ones; ONNX's divisor (4)
     * and PyTorch's (9) */
    float x2[HC * 4], y2[HC];
    for (size_t c = 0; c < HC; c++) {
        for (size_t i = 0; i < 4; i++) {
            x2[c * 4 + i] = (float)(c + i); /* sum 4c + 6 */
        }
    }
    float *x2b = to_blocked(x2, 1, HC, 4);
    s = square_pool(1, HC, 2, 2, 3, 2, 1);
    s.count_include_pad = 0;
    assert_int_equal(kern_avgpool2d_nchw8c_f32(&s, x2b, y2), KERN_OK);
    for (size_t c = 0; c < HC; c++) {
        assert_true(y2[c] == (float)(4 * c + 6) / 4.0f);
    }
    s.count_include_pad = 1;
    assert_int_equal(kern_avgpool2d_nchw8c_f32(&s, x2b, y2), KERN_OK);
    for (size_t c = 0; c < HC; c++) {
        assert_true(y2[c] == (float)(4 * c + 6) / 9.0f);
    }

    /* the NCHW kernels' bits: ResNet-8's, DS-CNN's and MobileNet's closing
     * pools, a padded window that misses the input's last row and
     * column, a 2 x 2 window (the NCHW kernels' k2s2 path), 12 channels,
     * 76 channels */
    static const struct {
        size_t batch, c, h, w, kh, kw, sh, sw, pt, pl, pb, pr;
        int cip;
    } cases[] = {
        {1, 64, 8, 8, 8, 8, 8, 8, 0, 0, 0, 0, 1},
        {3, 64, 25, 5, 25, 5, 25, 5, 0, 0, 0, 0, 1},
        {2, 256, 3, 3, 3, 3, 1, 1, 0, 0, 0, 0, 1},
        {2, 12, 7, 6, 6, 5, 3, 4, 1, 2, 0, 0, 0},
        {2, 12, 7, 6, 6, 5, 3, 4, 1, 2, 0, 0, 1},
        {3, 12, 2, 2, 2, 2, 2, 2, 0, 0, 0, 0, 1},
        /* ten blocks, the last of four lanes: eight blocks at a time and
         * a tail of two */
        {2, 76, 5, 4, 5, 4, 5, 4, 0, 0, 0, 0, 1},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        const struct kern_pool2d_shape ps = {
            .batch = cases[k].batch, .channels = cases[k].c,
            .in_h = cases[k].h, .in_w = cases[k].w, .kh = cases[k].kh,
            .kw = cases[k].kw, .stride_h = cases[k].sh,
            .stride_w = cases[k].sw, .pad_top = cases[k].pt,
            .pad_left = cases[k].pl, .pad_bottom = cases[k].pb,
            .pad_right = cases[k].pr, .count_include_pad = cases[k].cip,
        };
        const size_t hw = ps.in_h * ps.in_w, n = ps.batch * ps.channels;
        float *xn = malloc(n * hw * sizeof *xn);
        float *want = malloc(n * sizeof *want), *got = malloc(n * sizeof *got);
        assert_true(xn && want && got);
        fill(xn, n * hw);
        xn[3] = NAN;           /* plane 0: NaN wins the maximum */
        xn[hw + 1] = -0.0f;    /* plane 1: a -0 among the cells */
        for (size_t i = 0; i < hw; i++) {
            xn[2 * hw + i] = -0.0f; /* plane 2: all -0; the mean is +0 */
        }
        float *xnb = to_blocked(xn, ps.batch, ps.channels, hw);
        assert_int_equal(kern_maxpool2d_f32(&ps, xn, want), KERN_OK);
        assert_int_equal(kern_maxpool2d_nchw8c_f32(&ps, xnb, got), KERN_OK);
        for (size_t i = 0; i < n; i++) {
            assert_true(same_bits(got[i], want[i]));
        }
        assert_int_equal(kern_avgpool2d_f32(&ps, xn, want), KERN_OK);
        assert_int_equal(kern_avgpool2d_nchw8c_f32(&ps, xnb, got), KERN_OK);
        for (size_t i = 0; i < n; i++) {
            assert_true(same_bits(got[i], want[i]));
        }
        free(xn);
        free(xnb);
        free(want);
        free(got);
    }

    /* global average: by hand (plane c of sample b holds 10 c + 100 b +
     * i, i < 9: mean 10 c + 100 b + 4), then the NCHW kernel's bits with
     * and without a tail of the four-way split */
    assert_int_equal(kern_nn_global_avgpool_nchw8c_f32(xb, HB, HC, 9, y),
                     KERN_OK);
    for (size_t b = 0; b < HB; b++) {
        for (size_t c = 0; c < HC; c++) {
            assert_true(y[b * HC + c] == (float)(100 * b + 10 * c + 4));
        }
    }
    static const size_t gshape[][3] = {
        {1, 64, 64}, {3, 12, 63}, {2, 16, 1}, {2, 256, 9}, {1, 9, 101},
    };
    for (size_t k = 0; k < sizeof gshape / sizeof gshape[0]; k++) {
        const size_t gb = gshape[k][0], gc = gshape[k][1], ghw = gshape[k][2];
        float *xn = malloc(gb * gc * ghw * sizeof *xn);
        float *want = malloc(gb * gc * sizeof *want);
        float *got = malloc(gb * gc * sizeof *got);
        assert_true(xn && want && got);
        fill(xn, gb * gc * ghw);
        float *xnb = to_blocked(xn, gb, gc, ghw);
        assert_int_equal(kern_nn_global_avgpool_f32(xn, gb * gc, ghw, want),
                         KERN_OK);
        assert_int_equal(
            kern_nn_global_avgpool_nchw8c_f32(xnb, gb, gc, ghw, got),
            KERN_OK);
        for (size_t i = 0; i < gb * gc; i++) {
            assert_true(same_bits(got[i], want[i]));
        }
        free(xn);
        free(xnb);
        free(want);
        free(got);
    }

    /* refusals: an output larger than 1 x 1, a window of padding, NULL,
     * zero sizes */
    s = square_pool(HB, HC, 3, 3, 2, 1, 0); /* 2 x 2 output */
    assert_int_equal(kern_avgpool2d_nchw8c_f32(&s, xb, y), KERN_E_SHAPE);
    assert_int_equal(kern_maxpool2d_nchw8c_f32(&s, xb, y), KERN_E_SHAPE);
    s = square_pool(HB, HC, 3, 3, 3, 1, 3);
    assert_int_equal(kern_maxpool2d_nchw8c_f32(&s, xb, y), KERN_E_RANGE);
    s = square_pool(HB, HC, 3, 3, 3, 1, 0);
    assert_int_equal(kern_maxpool2d_nchw8c_f32(NULL, xb, y), KERN_E_INVALID);
    assert_int_equal(kern_avgpool2d_nchw8c_f32(&s, NULL, y), KERN_E_INVALID);
    assert_int_equal(kern_avgpool2d_nchw8c_f32(&s, xb, NULL), KERN_E_INVALID);
    s.channels = 0;
    assert_int_equal(kern_avgpool2d_nchw8c_f32(&s, xb, y), KERN_E_SHAPE);
    /* the NCHW size fits, the blocked one (16 channels) does not */
    s = square_pool(SIZE_MAX / 16, 9, 1, 1, 1, 1, 0);
    assert_int_equal(kern_avgpool2d_nchw8c_f32(&s, xb, y), KERN_E_OVERFLOW);
    assert_int_equal(kern_nn_global_avgpool_nchw8c_f32(xb, HB, HC, 0, y),
                     KERN_E_SHAPE);
    assert_int_equal(kern_nn_global_avgpool_nchw8c_f32(xb, 0, HC, 9, y),
                     KERN_E_SHAPE);
    assert_int_equal(kern_nn_global_avgpool_nchw8c_f32(NULL, HB, HC, 9, y),
                     KERN_E_INVALID);
    assert_int_equal(
        kern_nn_global_avgpool_nchw8c_f32(xb, SIZE_MAX / 8, 9, 9, y),
        KERN_E_OVERFLOW);
    free(xb);
    free(x2b);
}

/* The add with its activation fused: by hand (a sum of two -0 is -0,
 * which relu turns into +0; NaN passes), the bits of add then
 * kern_relu_f32 / kern_nn_relu6_f32 for one to four inputs and in place,
 * refusals. */
static void test_add_act(void **state)
{
    (void)state;
    const float a[6] = {1.0f, -2.0f, -0.0f, 3.0f, 5.0f, NAN};
    const float b[6] = {2.0f, 1.0f, -0.0f, 4.0f, 2.0f, 0.0f};
    const float relu[6] = {3.0f, 0.0f, 0.0f, 7.0f, 7.0f, NAN};
    const float relu6[6] = {3.0f, 0.0f, 0.0f, 6.0f, 6.0f, NAN};
    const float *ab[2] = {a, b};
    float y[6];
    assert_int_equal(kern_nn_add_act_f32(y, ab, 2, 6, KERN_FUSE_RELU),
                     KERN_OK);
    for (size_t i = 0; i < 6; i++) {
        assert_true(same_bits(y[i], relu[i]));
    }
    assert_int_equal(kern_nn_add_act_f32(y, ab, 2, 6, KERN_FUSE_RELU6),
                     KERN_OK);
    for (size_t i = 0; i < 6; i++) {
        assert_true(same_bits(y[i], relu6[i]));
    }
    assert_int_equal(kern_nn_add_act_f32(y, ab, 2, 6, KERN_FUSE_NONE),
                     KERN_OK);
    assert_true(same_bits(y[2], -0.0f) && y[3] == 7.0f);

    enum { N = 1003 };
    static float in[4][N], want[N], got[N];
    for (size_t j = 0; j < 4; j++) {
        fill(in[j], N);
        for (size_t i = 0; i < N; i++) {
            in[j][i] *= 5.0f; /* sums beyond 6 as well as below 0 */
        }
    }
    in[0][5] = in[1][5] = -0.0f;
    in[0][6] = NAN;
    const float *xs[4] = {in[0], in[1], in[2], in[3]};
    for (int act = KERN_FUSE_NONE; act <= KERN_FUSE_RELU6; act++) {
        for (size_t count = 1; count <= 4; count++) {
            assert_int_equal(kern_nn_add_f32(want, xs, count, N), KERN_OK);
            if (act == KERN_FUSE_RELU) {
                assert_int_equal(kern_relu_f32(want, want, N), KERN_OK);
            } else if (act == KERN_FUSE_RELU6) {
                assert_int_equal(kern_nn_relu6_f32(want, want, N), KERN_OK);
            }
            assert_int_equal(kern_nn_add_act_f32(got, xs, count, N, act),
                             KERN_OK);
            assert_memory_equal(got, want, sizeof want);
            /* in place on the first input */
            memcpy(got, in[0], sizeof got);
            const float *inplace[4] = {got, in[1], in[2], in[3]};
            assert_int_equal(
                kern_nn_add_act_f32(got, inplace, count, N, act), KERN_OK);
            assert_memory_equal(got, want, sizeof want);
        }
    }
    assert_int_equal(kern_nn_add_act_f32(y, ab, 2, 6, 3), KERN_E_RANGE);
    assert_int_equal(kern_nn_add_act_f32(y, ab, 2, 6, -1), KERN_E_RANGE);
    assert_int_equal(kern_nn_add_act_f32(y, ab, 0, 6, KERN_FUSE_RELU),
                     KERN_E_SHAPE);
    const float *hole[2] = {a, NULL};
    assert_int_equal(kern_nn_add_act_f32(y, hole, 2, 6, KERN_FUSE_RELU),
                     KERN_E_INVALID);
    assert_int_equal(kern_nn_add_act_f32(NULL, ab, 2, 6, KERN_FUSE_RELU),
                     KERN_E_INVALID);
    assert_int_equal(
        kern_nn_add_act_f32(y, ab, 2, SIZE_MAX / 2, KERN_FUSE_RELU),
        KERN_E_OVERFLOW);
}

static void test_relu6_log_softmax(void **state)
{
    (void)state;
    const float in[8] = {-1.0f, -0.0f, 0.5f, 6.0f, 7.5f, NAN, INFINITY,
                         -INFINITY};
    float out[8];
    assert_int_equal(kern_nn_relu6_f32(out, in, 8), KERN_OK);
    assert_true(out[0] == 0.0f && !signbit(out[0]));
    assert_true(out[1] == 0.0f && !signbit(out[1]));
    assert_true(out[2] == 0.5f && out[3] == 6.0f && out[4] == 6.0f);
    assert_true(isnan(out[5]) && out[6] == 6.0f && out[7] == 0.0f);
    /* backward from y: the slope is 1 strictly inside (0, 6) */
    const float go[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    float gi[8];
    assert_int_equal(kern_nn_relu6_backward_f32(gi, go, out, 8), KERN_OK);
    assert_true(gi[0] == 0.0f && gi[1] == 0.0f && gi[2] == 3.0f &&
                gi[3] == 0.0f && gi[4] == 0.0f && isnan(gi[5]) &&
                gi[6] == 0.0f && gi[7] == 0.0f);
    assert_int_equal(kern_nn_relu6_backward_f32(NULL, go, out, 8),
                     KERN_E_INVALID);

    enum { R = 7, CO = 37 };
    static float x[R * CO], y[R * CO];
    fill(x, R * CO);
    for (size_t i = 0; i < R * CO; i++) {
        x[i] *= 30.0f; /* exponents far apart */
    }
    x[3 * CO + 5] = 1000.0f; /* a row dominated by one class */
    assert_int_equal(kern_nn_log_softmax_f32(x, R, CO, y), KERN_OK);
    for (size_t r = 0; r < R; r++) {
        double mx = -INFINITY, sum = 0.0;
        for (size_t c = 0; c < CO; c++) {
            mx = max_seen(mx, x[r * CO + c]);
        }
        for (size_t c = 0; c < CO; c++) {
            sum += exp(x[r * CO + c] - mx);
        }
        for (size_t c = 0; c < CO; c++) {
            const double want = x[r * CO + c] - mx - log(sum);
            assert_true(fabs(y[r * CO + c] - want) <=
                        0x1p-23 * fabs(want) + 1e-30);
        }
    }
    /* log softmax of {0, 0} is -log 2; in place */
    float two[2] = {0.0f, 0.0f};
    assert_int_equal(kern_nn_log_softmax_f32(two, 1, 2, two), KERN_OK);
    assert_true(two[0] == (float)-log(2.0) && two[1] == two[0]);
    float bad[3] = {1.0f, NAN, 2.0f};
    assert_int_equal(kern_nn_log_softmax_f32(bad, 1, 3, bad), KERN_OK);
    assert_true(isnan(bad[0]) && isnan(bad[2]));
}

static void test_sgd(void **state)
{
    (void)state;
    /* Momentum 0.9, lr 0.1, g 0.5 twice: v = 0.5, w = 1 - 0.05 = 0.95;
     * v = 0.45 + 0.5 = 0.95, w = 0.95 - 0.095 = 0.855. */
    float w[17], v[17], g[17];
    for (int i = 0; i < 17; i++) {
        w[i] = 1.0f;
        v[i] = 0.0f;
        g[i] = 0.5f;
    }
    assert_int_equal(kern_nn_sgd_f32(w, g, v, 17, 0.1f, 0.9f, 0.0f),
                     KERN_OK);
    assert_true(fabsf(w[16] - 0.95f) < 1e-7f && v[16] == 0.5f);
    assert_int_equal(kern_nn_sgd_f32(w, g, v, 17, 0.1f, 0.9f, 0.0f),
                     KERN_OK);
    for (int i = 0; i < 17; i++) {
        assert_true(fabsf(w[i] - 0.855f) < 1e-6f);
        assert_true(fabsf(v[i] - 0.95f) < 1e-7f);
    }
    /* Plain SGD with weight decay 0.5: g' = 0.5 + 0.5 * 2 = 1.5; w = 2 -
     * 0.1 * 1.5 = 1.85. No velocity needed. */
    float w2[3] = {2, 2, 2};
    assert_int_equal(kern_nn_sgd_f32(w2, g, NULL, 3, 0.1f, 0.0f, 0.5f),
                     KERN_OK);
    assert_true(fabsf(w2[0] - 1.85f) < 1e-6f);
    assert_int_equal(kern_nn_sgd_f32(w2, g, NULL, 3, 0.1f, 0.9f, 0.0f),
                     KERN_E_INVALID);
    assert_int_equal(kern_nn_sgd_f32(w2, g, v, 3, NAN, 0.9f, 0.0f),
                     KERN_E_RANGE);
}

static void test_adam(void **state)
{
    (void)state;
    /* By hand, lr 0.1, betas 0.9 and 0.999, eps 1e-8, w 1:
     * step 1, g 0.5: m = 0.05, v = 0.00025; m^ = 0.05 / 0.1 = 0.5,
     * v^ = 0.00025 / 0.001 = 0.25; w = 1 - 0.1 * 0.5 / (0.5 + 1e-8)
     * = 0.9 + 2e-9 (Adam's first step is lr * sign(g)).
     * step 2, g -0.25: m = 0.045 - 0.025 = 0.02, v = 0.00024975 +
     * 0.0000625 = 0.00031225; m^ = 0.02 / 0.19 = 0.105263158,
     * v^ = 0.00031225 / 0.001999 = 0.156203102, sqrt = 0.395225381;
     * w = 0.9 - 0.1 * 0.105263158 / 0.395225391 = 0.8733663. */
    float w[9], g[9], m[9], v[9];
    for (int i = 0; i < 9; i++) {
        w[i] = 1.0f;
        g[i] = 0.5f;
        m[i] = v[i] = 0.0f;
    }
    assert_int_equal(kern_nn_adam_f32(w, g, m, v, 9, 0.1, 0.9, 0.999,
                                      1e-8, 1),
                     KERN_OK);
    for (int i = 0; i < 9; i++) {
        assert_true(fabsf(w[i] - 0.9f) < 1e-7f);
        assert_true(fabsf(m[i] - 0.05f) < 1e-7f);
        assert_true(fabsf(v[i] - 0.00025f) < 1e-9f);
        g[i] = -0.25f;
    }
    assert_int_equal(kern_nn_adam_f32(w, g, m, v, 9, 0.1, 0.9, 0.999,
                                      1e-8, 2),
                     KERN_OK);
    for (int i = 0; i < 9; i++) {
        assert_true(fabs(w[i] - 0.8733663) < 1e-6);
        assert_true(fabsf(m[i] - 0.02f) < 1e-7f);
        assert_true(fabsf(v[i] - 0.00031225f) < 1e-9f);
    }
    /* zero gradient from zero moments: no move */
    float w1 = 3.0f, g0 = 0.0f, m0 = 0.0f, v0 = 0.0f;
    assert_int_equal(kern_nn_adam_f32(&w1, &g0, &m0, &v0, 1, 0.1, 0.9,
                                      0.999, 1e-8, 1),
                     KERN_OK);
    assert_true(w1 == 3.0f);
    assert_int_equal(kern_nn_adam_f32(w, g, m, v, 9, 0.1, 0.9, 0.999,
                                      1e-8, 0),
                     KERN_E_RANGE);
    assert_int_equal(kern_nn_adam_f32(w, g, m, v, 9, 0.1, 1.0, 0.999,
                                      1e-8, 1),
                     KERN_E_RANGE);
    assert_int_equal(kern_nn_adam_f32(w, g, m, v, 9, 0.1, 0.9, 0.999,
                                      0.0, 1),
                     KERN_E_RANGE);
    assert_int_equal(kern_nn_adam_f32(w, NULL, m, v, 9, 0.1, 0.9, 0.999,
                                      1e-8, 1),
                     KERN_E_INVALID);
}

static void test_loss_scaler(void **state)
{
    (void)state;
    struct kern_loss_scaler s;
    kern_loss_scaler_init(&s);
    assert_true(s.scale == 1024.0f && s.min_scale == 1.0f &&
                s.max_scale == 65536.0f && s.growth_interval == 2000);
    for (int i = 0; i < 1999; i++) {
        assert_true(kern_loss_scaler_update(&s, true));
    }
    assert_true(s.scale == 1024.0f);
    assert_int_equal(s.good_steps, 1999);
    assert_true(kern_loss_scaler_update(&s, true)); /* the 2000th */
    assert_true(s.scale == 2048.0f);
    assert_int_equal(s.good_steps, 0);
    /* Overflow: skip, halve, restart the count. */
    for (int i = 0; i < 10; i++) {
        assert_true(kern_loss_scaler_update(&s, true));
    }
    assert_false(kern_loss_scaler_update(&s, false));
    assert_true(s.scale == 1024.0f);
    assert_int_equal(s.good_steps, 0);
    assert_int_equal(s.skipped_steps, 1);
    /* Bounds: a small configuration. */
    assert_int_equal(kern_loss_scaler_config(&s, 2.0f, 1.0f, 4.0f, 2.0f,
                                             0.5f, 3), KERN_OK);
    assert_false(kern_loss_scaler_update(&s, false));
    assert_true(s.scale == 1.0f);
    assert_false(kern_loss_scaler_update(&s, false));
    assert_true(s.scale == 1.0f); /* floor */
    for (int i = 0; i < 9; i++) {
        kern_loss_scaler_update(&s, true);
    }
    assert_true(s.scale == 4.0f); /* 1 -> 2 -> 4 -> capped at 4 */
    assert_int_equal(s.skipped_steps, 2);
    assert_int_equal(kern_loss_scaler_config(&s, 8.0f, 1.0f, 4.0f, 2.0f,
                                             0.5f, 3), KERN_E_RANGE);
    assert_int_equal(kern_loss_scaler_config(&s, 2.0f, 0.0f, 4.0f, 2.0f,
                                             0.5f, 3), KERN_E_RANGE);
    assert_int_equal(kern_loss_scaler_config(&s, 2.0f, 1.0f, 4.0f, 2.0f,
                                             1.5f, 3), KERN_E_RANGE);
    assert_int_equal(kern_loss_scaler_config(&s, 2.0f, 1.0f, 4.0f, 2.0f,
                                             0.5f, 0), KERN_E_RANGE);
    assert_true(s.scale == 4.0f); /* untouched by a rejected config */
}

/* One LSTM and one GRU step (kern_lstm_cell_f32, kern_gru_cell_f32)
 * against the equations in double, on sizes with odd tails, on whichever
 * path KERN_CPU_MASK leaves: the new state, and the activated gates the
 * executor's backward pass reads. */
static void test_rnn_cells(void **state)
{
    (void)state;
    static const size_t sizes[] = {1, 3, 8, 13, 64, 67};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        const size_t h = sizes[s];
        float g[4 * 67], c[67], hh[67], gh[3 * 67], b[3 * 67], g3[3 * 67];
        double want_g[4 * 67], want_c[67], want_h[67];
        for (size_t j = 0; j < 4 * h; j++) {
            g[j] = 4.0f * randf();
        }
        for (size_t j = 0; j < h; j++) {
            c[j] = 2.0f * randf();
        }
        for (size_t j = 0; j < h; j++) {
            const double i = 1 / (1 + exp(-(double)g[j]));
            const double f = 1 / (1 + exp(-(double)g[h + j]));
            const double gg = tanh((double)g[2 * h + j]);
            const double o = 1 / (1 + exp(-(double)g[3 * h + j]));
            want_g[j] = i;
            want_g[h + j] = f;
            want_g[2 * h + j] = gg;
            want_g[3 * h + j] = o;
            want_c[j] = f * c[j] + i * gg;
            want_h[j] = o * tanh(want_c[j]);
        }
        assert_int_equal(kern_lstm_cell_f32(h, g, c, hh), KERN_OK);
        for (size_t j = 0; j < 4 * h; j++) {
            assert_true(fabs(g[j] - want_g[j]) <= 1e-6);
        }
        for (size_t j = 0; j < h; j++) {
            assert_true(fabs(c[j] - want_c[j]) <= 2e-6 * (1 + fabs(want_c[j])));
            assert_true(fabs(hh[j] - want_h[j]) <= 2e-6);
        }
        /* gru, linear_before_reset: hout is the previous h, updated */
        for (size_t j = 0; j < 3 * h; j++) {
            g3[j] = 3.0f * randf();
            gh[j] = 3.0f * randf();
            b[j] = randf();
        }
        for (size_t j = 0; j < h; j++) {
            hh[j] = randf();
            const double r = 1 / (1 + exp(-((double)g3[j] + gh[j] + b[j])));
            const double z = 1 / (1 + exp(-((double)g3[h + j] + gh[h + j] +
                                             b[h + j])));
            const double n = tanh((double)g3[2 * h + j] +
                                  r * ((double)gh[2 * h + j] + b[2 * h + j]));
            want_g[j] = r;
            want_g[h + j] = z;
            want_g[2 * h + j] = n;
            want_h[j] = (1 - z) * n + z * hh[j];
        }
        assert_int_equal(kern_gru_cell_f32(h, g3, gh, b, hh), KERN_OK);
        for (size_t j = 0; j < 3 * h; j++) {
            assert_true(fabs(g3[j] - want_g[j]) <= 2e-6);
        }
        for (size_t j = 0; j < h; j++) {
            assert_true(fabs(hh[j] - want_h[j]) <= 2e-6);
        }
    }
    float one = 0.0f;
    assert_int_equal(kern_lstm_cell_f32(0, NULL, NULL, NULL), KERN_OK);
    assert_int_equal(kern_lstm_cell_f32(1, &one, NULL, &one), KERN_E_INVALID);
    assert_int_equal(kern_gru_cell_f32(1, &one, NULL, NULL, &one),
                     KERN_E_INVALID);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pool_hand),
        cmocka_unit_test(test_rnn_cells),
        cmocka_unit_test(test_pool_rect),
        cmocka_unit_test(test_add_affine_gap),
        cmocka_unit_test(test_pool_nchw8c),
        cmocka_unit_test(test_add_act),
        cmocka_unit_test(test_relu6_log_softmax),
        cmocka_unit_test(test_pool_backward),
        cmocka_unit_test(test_softmax),
        cmocka_unit_test(test_xent),
        cmocka_unit_test(test_bias_finite_scale),
        cmocka_unit_test(test_sgd),
        cmocka_unit_test(test_adam),
        cmocka_unit_test(test_loss_scaler),
    };
    printf("test_nn: path %s, seed %u\n", kern_cpu_path_name(kern_cpu_flags()),
           (unsigned)rng);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
