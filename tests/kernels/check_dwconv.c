/* Checks of the depthwise convolution: every path against the C reference
 * on random shapes (odd sizes, rectangular kernels up to 7 x 7, asymmetric
 * padding up to 3 per side, strides 1, 2 and 3, channel counts below and
 * above 8 at batch 1 and 2 (partial groups of interleaved planes, groups
 * spanning two samples, groups of 8 consecutive channels), output counts
 * below 8 and not a multiple of 8, widths that exercise the row-by-row
 * loops and their tails, planes tall enough to be cut into bands, bands
 * wholly in the padding, and a plane too wide for the interleaved
 * buffer), with and without bias, with each fused activation. Outputs are
 * poisoned beforehand, so an unwritten value fails, and a guard after the
 * output must stay untouched.
 *
 * Tolerance: the vector paths add the same terms in the same order with
 * fused multiply-adds (each product rounded once less), so a path and the
 * reference each differ from the exact sum by at most about n FLT_EPSILON
 * times S = |bias| + sum of |w * x| (n = kh * kw + 1 terms): the check
 * allows 2 (n + 1) FLT_EPSILON S, computed per output. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checkkern.h"
#include "dwconv.h"

enum { GUARD = 64 };

static void random_shape(struct kern_dwconv2d_shape *s, size_t *oh,
                         size_t *ow, int t)
{
    for (;;) {
        s->batch = (size_t)ck_randi(1, 2);
        /* more than 8 channels now and then: groups of 8 consecutive
         * channels (their filters transposed as a block) and, at batch
         * 2, groups whose lanes span two samples */
        s->channels = (size_t)(t % 4 == 1 ? ck_randi(6, 20) : ck_randi(1, 5));
        s->kh = (size_t)ck_randi(1, 7);
        s->kw = (size_t)ck_randi(1, 7);
        s->stride_w = (size_t)(t % 7 == 6 ? 3 : ck_randi(1, 2));
        s->stride_h = (size_t)ck_randi(1, 3);
        s->pad_top = (size_t)ck_randi(0, 3);
        s->pad_left = (size_t)ck_randi(0, 3);
        s->pad_bottom = (size_t)ck_randi(0, 3);
        s->pad_right = (size_t)ck_randi(0, 3);
        s->in_h = (size_t)ck_randi(1, t % 10 == 9 ? 700 : 30);
        s->in_w = (size_t)ck_randi(1, t % 3 ? 40 : 90);
        if (t == 5) {
            /* wider than the padded buffer: the reference on every path */
            s->in_w = 7000;
            s->in_h = 3;
            s->channels = 1;
        }
        if (kern_dwconv2d_out_hw(s, oh, ow) == KERN_OK) {
            return;
        }
    }
}

/* |bias| + sum of |w * x| over the taps of output i (the error scale). */
static double magnitude(const struct kern_dwconv2d_shape *s, size_t oh,
                        size_t ow, const float *x, const float *w,
                        const float *bias, size_t i)
{
    const size_t ox = i % ow, oy = i / ow % oh, p = i / (ow * oh);
    const size_t c = p % s->channels;
    double m = bias ? fabs((double)bias[c]) : 0.0;
    for (size_t ky = 0; ky < s->kh; ky++) {
        const size_t iy = oy * s->stride_h + ky - s->pad_top;
        for (size_t kx = 0; kx < s->kw && iy < s->in_h; kx++) {
            const size_t ix = ox * s->stride_w + kx - s->pad_left;
            if (ix < s->in_w) {
                m += fabs((double)w[(c * s->kh + ky) * s->kw + kx] *
                          (double)x[(p * s->in_h + iy) * s->in_w + ix]);
            }
        }
    }
    return m;
}

static void check_one(kern_dwconv2d_fn fn, kern_dwconv2d_fn ref, int t)
{
    struct kern_dwconv2d_shape s = {0};
    size_t oh, ow;
    random_shape(&s, &oh, &ow, t);
    const size_t nx = s.batch * s.channels * s.in_h * s.in_w;
    const size_t nw = s.channels * s.kh * s.kw;
    const size_t ny = s.batch * s.channels * oh * ow;
    float *x = malloc(nx * sizeof *x), *w = malloc(nw * sizeof *w);
    float *b = malloc(s.channels * sizeof *b);
    float *y0 = malloc(ny * sizeof *y0);
    float *y1 = malloc((ny + GUARD) * sizeof *y1);
    float *guard = malloc(GUARD * sizeof *guard);
    if (!x || !w || !b || !y0 || !y1 || !guard) {
        ck_fail("out of memory");
        goto done;
    }
    ck_fill_f32(x, nx, -1.0f, 1.0f);
    ck_fill_f32(w, nw, -1.0f, 1.0f);
    ck_fill_f32(b, s.channels, -1.0f, 1.0f);
    ck_poison(y0, ny * sizeof *y0);
    ck_poison(y1, (ny + GUARD) * sizeof *y1);
    memcpy(guard, y1 + ny, GUARD * sizeof *guard);
    const float *bias = t % 4 ? b : NULL;
    const int act = t % 3; /* KERN_FUSE_NONE, _RELU, _RELU6 */
    if (act == KERN_FUSE_RELU6) {
        /* sums beyond 6 so that the clamp is exercised */
        for (size_t i = 0; i < nw; i++) {
            w[i] *= 8.0f;
        }
    }
    ref(&s, oh, ow, x, w, bias, act, y0);
    fn(&s, oh, ow, x, w, bias, act, y1);
    const double n = (double)(s.kh * s.kw + 1);
    for (size_t i = 0; i < ny; i++) {
        const double tol = 2.0 * (n + 1.0) * FLT_EPSILON *
                           magnitude(&s, oh, ow, x, w, bias, i);
        if (!(fabs((double)y1[i] - (double)y0[i]) <= tol)) {
            ck_fail("b%zu c%zu %zux%zu k%zux%zu s%zux%zu p%zu,%zu,%zu,%zu "
                    "act%d bias%d: y[%zu] = %g, want %g (tol %g)", s.batch,
                    s.channels, s.in_h, s.in_w, s.kh, s.kw, s.stride_h, s.stride_w,
                    s.pad_top, s.pad_left, s.pad_bottom, s.pad_right, act,
                    bias != NULL, i, (double)y1[i], (double)y0[i], tol);
            break;
        }
    }
    if (memcmp(guard, y1 + ny, GUARD * sizeof *guard) != 0) {
        ck_fail("b%zu c%zu %zux%zu k%zux%zu s%zux%zu: wrote past the output",
                s.batch, s.channels, s.in_h, s.in_w, s.kh, s.kw, s.stride_h,
                s.stride_w);
    }
done:
    free(x);
    free(w);
    free(b);
    free(y0);
    free(y1);
    free(guard);
}

/* The executor's former depthwise path, for the benchmark: per sample and
 * channel, the kh x kw columns of the plane gathered ([kh kw][oh ow], zero
 * outside the input), one 1-row kern_sgemm with the channel's filter, then
 * the bias and relu over the whole output. */
static int im2col_path(const struct kern_dwconv2d_shape *s, size_t oh,
                       size_t ow, const float *x, const float *w,
                       const float *b, float *col, float *y)
{
    const size_t ih = s->in_h, iw = s->in_w, kh = s->kh, kw = s->kw;
    const size_t hw = oh * ow;
    int st = KERN_OK;
    for (size_t p = 0; st == KERN_OK && p < s->batch * s->channels; p++) {
        const size_t c = p % s->channels;
        const float *xp = x + p * ih * iw;
        for (size_t ky = 0; ky < kh; ky++) {
            for (size_t kx = 0; kx < kw; kx++) {
                float *row = col + (ky * kw + kx) * hw;
                for (size_t oy = 0; oy < oh; oy++) {
                    const size_t iy = oy * s->stride_h + ky - s->pad_top;
                    for (size_t ox = 0; ox < ow; ox++) {
                        const size_t ix = ox * s->stride_w + kx - s->pad_left;
                        row[oy * ow + ox] =
                            iy < ih && ix < iw ? xp[iy * iw + ix] : 0.0f;
                    }
                }
            }
        }
        st = kern_sgemm(0, 1, hw, kh * kw, w + c * kh * kw, kh * kw, col, hw,
                        y + p * hw, hw);
    }
    if (st == KERN_OK) {
        st = kern_nn_bias_add_nchw_f32(y, s->batch, s->channels, hw, b);
    }
    if (st == KERN_OK) {
        st = kern_relu_f32(y, y, s->batch * s->channels * hw);
    }
    return st;
}

/* A DS-CNN-like depthwise layer (64 channels, 25 x 5, 3 x 3, pad 1,
 * batch 1) and MobileNet-like ones, timed on this path against the
 * reference and against an im2col path, interleaved, medians of R runs. */
static void bench(kern_dwconv2d_fn fn, kern_dwconv2d_fn ref)
{
    static const struct kern_dwconv2d_shape shapes[] = {
        {1, 64, 25, 5, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},
        {1, 32, 48, 48, 3, 3, 2, 2, 0, 0, 1, 1, 1, 1},
        {1, 128, 12, 12, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},
    };
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        const struct kern_dwconv2d_shape *s = &shapes[i];
        size_t oh, ow;
        kern_dwconv2d_out_hw(s, &oh, &ow);
        const size_t nx = s->batch * s->channels * s->in_h * s->in_w;
        const size_t nw = s->channels * s->kh * s->kw;
        const size_t ny = s->batch * s->channels * oh * ow;
        float *x = malloc(nx * sizeof *x), *w = malloc(nw * sizeof *w);
        float *b = malloc(s->channels * sizeof *b);
        float *y = malloc(ny * sizeof *y);
        float *col = malloc(s->kh * s->kw * oh * ow * sizeof *col);
        if (x && w && b && y && col) {
            ck_fill_f32(x, nx, -1.0f, 1.0f);
            ck_fill_f32(w, nw, -1.0f, 1.0f);
            ck_fill_f32(b, s->channels, -1.0f, 1.0f);
            enum { R = 201 };
            double tr[R], ti[R], tc[R];
            for (int r = 0; r < R; r++) {
                double t0 = ck_now_ns();
                ref(s, oh, ow, x, w, b, KERN_FUSE_RELU, y);
                tr[r] = ck_now_ns() - t0;
                t0 = ck_now_ns();
                fn(s, oh, ow, x, w, b, KERN_FUSE_RELU, y);
                ti[r] = ck_now_ns() - t0;
                t0 = ck_now_ns();
                if (im2col_path(s, oh, ow, x, w, b, col, y) != KERN_OK) {
                    ck_fail("im2col path failed");
                }
                tc[r] = ck_now_ns() - t0;
            }
            const double mi = ck_median(ti, R);
            char what[64];
            snprintf(what, sizeof what, "dwconv2d c%zu %zux%zu k%zux%zu s%zux%zu",
                     s->channels, s->in_h, s->in_w, s->kh, s->kw, s->stride_h,
                     s->stride_w);
            ck_bench_report(what, ck_median(tr, R), mi);
            const double mc = ck_median(tc, R);
            printf("    bench   im2col + sgemm per channel %8.1f ns, "
                   "dwconv2d %s x%.2f\n", mc, ck_isa(), mc / mi);
        }
        free(x);
        free(w);
        free(b);
        free(y);
        free(col);
    }
}

/* ---- the NCHW8c kernel ----------------------------------------------
 *
 * Against the NCHW kernel of the same level on the same tensors
 * converted: the same bits (kernels.h), every padding lane of y +0
 * although those of x hold NaN and infinities, nothing written past the
 * output, and the blocks outside a sub-range untouched. Against the
 * definition in double too, within the documented (kh kw + 1) FLT_EPSILON
 * S. */

static void random_blk_shape(struct kern_dwconv2d_shape *s, size_t *oh,
                             size_t *ow, int t, bool dil)
{
    if (dil) {
        /* dilated shapes (dilated TCNs, segmentation heads): 1 to 3 each
         * way, at least one above 1, with the same spread otherwise */
        for (;;) {
            random_blk_shape(s, oh, ow, t + 7, false);
            s->dilation_h = (size_t)ck_randi(1, 3);
            s->dilation_w = (size_t)(s->dilation_h > 1 && t % 2
                                         ? ck_randi(1, 3)
                                         : ck_randi(2, 3));
            if (kern_dwconv2d_out_hw(s, oh, ow) == KERN_OK) {
                return;
            }
        }
    }
    /* MobileNetV1's and DS-CNN's depthwise layers, some with a partial
     * last block */
    static const struct kern_dwconv2d_shape fixed[] = {
        {1, 32, 48, 48, 3, 3, 2, 2, 0, 0, 1, 1, 1, 1},
        {1, 64, 24, 24, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},
        {1, 128, 6, 6, 3, 3, 2, 2, 0, 0, 1, 1, 1, 1},
        {1, 256, 3, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},
        {1, 64, 25, 5, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},
        {2, 13, 12, 12, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},
        {3, 21, 7, 9, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1},
    };
    const int nf = (int)(sizeof fixed / sizeof fixed[0]);
    if (t < nf) {
        *s = fixed[t];
        kern_dwconv2d_out_hw(s, oh, ow);
        return;
    }
    for (;;) {
        s->batch = (size_t)ck_randi(1, 3);
        s->channels = (size_t)(t % 3 ? ck_randi(1, 40) : ck_randi(1, 9));
        s->kh = (size_t)ck_randi(1, 7);
        s->kw = t % 5 ? (size_t)ck_randi(1, 7) : s->kh;
        s->stride_h = (size_t)ck_randi(1, 3);
        s->stride_w = (size_t)ck_randi(1, 3);
        s->pad_top = (size_t)ck_randi(0, 3);
        s->pad_left = (size_t)ck_randi(0, 3);
        s->pad_bottom = (size_t)ck_randi(0, 3);
        s->pad_right = (size_t)ck_randi(0, 3);
        s->in_h = (size_t)ck_randi(1, t % 4 ? 16 : 40);
        s->in_w = (size_t)ck_randi(1, t % 6 == 5 ? 300 : 24);
        if (t % 3 == 1) {
            /* 3 x 3, the filters with their own loops: block by block
             * and (from 4 full blocks, or small planes) pixel-major, pad
             * 0..2 */
            s->kh = s->kw = 3;
            s->stride_w = (size_t)ck_randi(1, 2);
            s->pad_left = (size_t)ck_randi(0, 2);
            s->pad_right = (size_t)ck_randi(0, 2);
            s->channels = (size_t)(t % 2 ? ck_randi(25, 72) : ck_randi(1, 12));
        }
        if (t % 3 == 2 && t % 4 == 3) {
            /* 5 x 5, unrolled block by block and pixel-major (planes of
             * at most 64 outputs with a full block): 12 x 12 and smaller
             * planes, pad 0..3, stride 1 or 2 */
            s->kh = s->kw = 5;
            s->stride_h = s->stride_w = (size_t)ck_randi(1, 2);
            s->in_h = (size_t)ck_randi(1, 13);
            s->in_w = (size_t)ck_randi(1, 13);
            s->channels = (size_t)(t % 2 ? ck_randi(25, 72) : ck_randi(1, 12));
        }
        if (t % 17 == 16) {
            /* wider than the NCHW kernel's buffers: its scalar loop */
            s->in_w = (size_t)ck_randi(2000, 3000);
            s->in_h = (size_t)ck_randi(1, 4);
            s->channels = (size_t)ck_randi(1, 9);
            s->batch = 1;
        }
        if (kern_dwconv2d_out_hw(s, oh, ow) == KERN_OK) {
            return;
        }
    }
}

/* The definition in double and its error scale S = |bias| + sum |w x|. */
static double exact(const struct kern_dwconv2d_shape *s, const float *x,
                    const float *w, const float *bias, int act, size_t p,
                    size_t oy, size_t ox, double *mag)
{
    const size_t c = p % s->channels;
    const size_t dh = s->dilation_h ? s->dilation_h : 1;
    const size_t dw = s->dilation_w ? s->dilation_w : 1;
    double acc = bias ? bias[c] : 0.0, m = fabs(acc);
    for (size_t ky = 0; ky < s->kh; ky++) {
        const size_t iy = oy * s->stride_h + ky * dh - s->pad_top;
        for (size_t kx = 0; kx < s->kw && iy < s->in_h; kx++) {
            const size_t ix = ox * s->stride_w + kx * dw - s->pad_left;
            if (ix < s->in_w) {
                const double v = (double)w[(c * s->kh + ky) * s->kw + kx] *
                                 x[(p * s->in_h + iy) * s->in_w + ix];
                acc += v;
                m += fabs(v);
            }
        }
    }
    if (act != KERN_FUSE_NONE) {
        acc = acc < 0.0 ? 0.0 : acc;
    }
    if (act == KERN_FUSE_RELU6) {
        acc = acc > 6.0 ? 6.0 : acc;
    }
    *mag = m;
    return acc;
}

static void check_blk_one(kern_dwconv2d_blk_fn fn, kern_dwconv2d_fn nchw,
                          int t, bool dil)
{
    struct kern_dwconv2d_shape s = {0};
    size_t oh, ow;
    random_blk_shape(&s, &oh, &ow, t, dil);
    const size_t nb = (s.channels + 7) / 8;
    const size_t nx = s.batch * s.channels * s.in_h * s.in_w;
    const size_t nxb = s.batch * nb * s.in_h * s.in_w * 8;
    const size_t nw = s.channels * s.kh * s.kw;
    const size_t ny = s.batch * s.channels * oh * ow;
    const size_t nyb = s.batch * nb * oh * ow * 8;
    float *x = malloc(nx * sizeof *x), *xb = malloc(nxb * sizeof *xb);
    float *w = malloc(nw * sizeof *w);
    float *wp = malloc(kern_dwconv2d_packed_bytes(&s));
    float *b = malloc(s.channels * sizeof *b);
    float *y0 = malloc(ny * sizeof *y0), *y1 = malloc(ny * sizeof *y1);
    float *yb = malloc((nyb + GUARD) * sizeof *yb);
    float *guard = malloc(GUARD * sizeof *guard);
    char what[160];
    snprintf(what, sizeof what,
             "b%zu c%zu %zux%zu k%zux%zu s%zux%zu p%zu,%zu,%zu,%zu d%zux%zu",
             s.batch, s.channels, s.in_h, s.in_w, s.kh, s.kw, s.stride_h,
             s.stride_w, s.pad_top, s.pad_left, s.pad_bottom, s.pad_right,
             s.dilation_h ? s.dilation_h : 1,
             s.dilation_w ? s.dilation_w : 1);
    if (!x || !xb || !w || !wp || !b || !y0 || !y1 || !yb || !guard) {
        ck_fail("out of memory");
        goto done;
    }
    ck_fill_f32(x, nx, -1.0f, 1.0f);
    ck_fill_f32(w, nw, -1.0f, 1.0f);
    ck_fill_f32(b, s.channels, -1.0f, 1.0f);
    const float *bias = t % 4 ? b : NULL;
    int act = t % 3;
    if (act == KERN_FUSE_RELU6) {
        for (size_t i = 0; i < nw; i++) {
            w[i] *= 8.0f;
        }
    }
    /* The taps outside the input: the AVX2 path adds w * +0 for them, the
     * C path skips them, and either way so must the NCHW8c kernel. Sums
     * of -0 terms from a -0 bias turn +0 on a padding tap; an infinite
     * weight on a padding tap makes NaN. Neither is compared with the
     * double reference. */
    const int zeros = t % 20 == 7, inf = t % 20 == 8;
    if (zeros) {
        bias = b;
        act = KERN_FUSE_NONE;
        for (size_t i = 0; i < nx; i++) {
            x[i] = -0.0f;
        }
        for (size_t i = 0; i < s.channels; i++) {
            b[i] = -0.0f;
        }
        for (size_t i = 0; i < nw; i++) {
            w[i] = fabsf(w[i]); /* w * -0 = -0 keeps the sum -0 */
        }
    }
    if (inf) {
        for (size_t i = 0; i < nw; i += 3) {
            w[i] = INFINITY;
        }
    }
    if (kern_nchw_to_nchw8c_f32(s.batch, s.channels, s.in_h * s.in_w, x,
                                xb) != KERN_OK ||
        kern_dwconv2d_pack_f32(&s, w, wp) != KERN_OK) {
        ck_fail("%s: conversion failed", what);
        goto done;
    }
    /* padding lanes of x: NaN and infinities, which must not reach y */
    for (size_t i = 0; i < nxb; i++) {
        if ((i / (s.in_h * s.in_w * 8) % nb) * 8 + i % 8 >= s.channels) {
            xb[i] = i % 2 ? NAN : -INFINITY;
        }
    }
    ck_poison(y0, ny * sizeof *y0);
    ck_poison(yb, (nyb + GUARD) * sizeof *yb);
    memcpy(guard, yb + nyb, GUARD * sizeof *guard);
    nchw(&s, oh, ow, x, w, bias, act, y0);
    if (t % 2 && nb > 1) {
        /* a sub-range first: the other blocks stay poisoned */
        const size_t j0 = (size_t)ck_randi(0, (int)nb - 1);
        const size_t j1 = (size_t)ck_randi((int)j0 + 1, (int)nb);
        fn(&s, oh, ow, j0, j1, xb, wp, bias, act, yb);
        uint32_t poison;
        memcpy(&poison, yb + nyb, sizeof poison);
        for (size_t i = 0; i < nyb; i++) {
            const size_t j = i / (oh * ow * 8) % nb;
            uint32_t u;
            memcpy(&u, yb + i, sizeof u);
            if ((j < j0 || j >= j1) && u != poison) {
                ck_fail("%s: blocks [%zu, %zu) wrote y[%zu] of block %zu",
                        what, j0, j1, i, j);
                break;
            }
        }
        if (j0 > 0) {
            fn(&s, oh, ow, 0, j0, xb, wp, bias, act, yb);
        }
        if (j1 < nb) {
            fn(&s, oh, ow, j1, nb, xb, wp, bias, act, yb);
        }
    } else {
        fn(&s, oh, ow, 0, nb, xb, wp, bias, act, yb);
    }
    if (memcmp(guard, yb + nyb, GUARD * sizeof *guard) != 0) {
        ck_fail("%s: wrote past the output", what);
    }
    for (size_t i = 0; i < nyb; i++) {
        const size_t c = (i / (oh * ow * 8) % nb) * 8 + i % 8;
        uint32_t u;
        memcpy(&u, yb + i, sizeof u);
        if (c >= s.channels && u != 0) {
            ck_fail("%s act%d: padding lane y[%zu] = %g, want +0", what, act,
                    i, (double)yb[i]);
            goto done;
        }
    }
    kern_nchw8c_to_nchw_f32(s.batch, s.channels, oh * ow, yb, y1);
    const double n = (double)(s.kh * s.kw + 1);
    for (size_t i = 0; i < ny; i++) {
        if (memcmp(y0 + i, y1 + i, sizeof *y0) != 0) {
            ck_fail("%s act%d bias%d: y[%zu] = %.9g, NCHW gives %.9g", what,
                    act, bias != NULL, i, (double)y1[i], (double)y0[i]);
            break;
        }
        if (zeros || inf) {
            continue;
        }
        double mag;
        const double e = exact(&s, x, w, bias, act, i / (oh * ow),
                               i / ow % oh, i % ow, &mag);
        if (!(fabs((double)y1[i] - e) <= n * FLT_EPSILON * mag)) {
            ck_fail("%s act%d: y[%zu] = %.9g, exact %.9g", what, act, i,
                    (double)y1[i], e);
            break;
        }
    }
done:
    free(x);
    free(xb);
    free(w);
    free(wp);
    free(b);
    free(y0);
    free(y1);
    free(yb);
    free(guard);
}

/* MobileNetV1 0.25's and DS-CNN's depthwise layers (the shapes of
 * edgefit-bench --table conv), batch 1: the NCHW kernel against the
 * NCHW8c kernel of the same level, interleaved, medians of R runs. */
static void bench_blk(const struct kern_dwconv_dsp *isa)
{
    static const struct kern_dwconv2d_shape shapes[] = {
        {1, 64, 25, 5, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},
        {1, 8, 48, 48, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},
        {1, 16, 48, 48, 3, 3, 2, 2, 0, 0, 1, 1, 1, 1},
        {1, 32, 24, 24, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},
        {1, 32, 24, 24, 3, 3, 2, 2, 0, 0, 1, 1, 1, 1},
        {1, 64, 12, 12, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},
        {1, 64, 12, 12, 3, 3, 2, 2, 0, 0, 1, 1, 1, 1},
        {1, 128, 6, 6, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},
        {1, 128, 6, 6, 3, 3, 2, 2, 0, 0, 1, 1, 1, 1},
        {1, 256, 3, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},
    };
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        const struct kern_dwconv2d_shape *s = &shapes[i];
        size_t oh, ow;
        kern_dwconv2d_out_hw(s, &oh, &ow);
        const size_t nx = s->channels * s->in_h * s->in_w;
        const size_t nw = s->channels * s->kh * s->kw;
        const size_t ny = s->channels * oh * ow;
        const size_t nb = (s->channels + 7) / 8;
        float *x = malloc(nx * sizeof *x), *xb = malloc(nx * sizeof *xb);
        float *w = malloc(nw * sizeof *w), *wp = malloc(nw * sizeof *wp);
        float *b = malloc(s->channels * sizeof *b);
        float *y = malloc(ny * sizeof *y);
        if (x && xb && w && wp && b && y) {
            ck_fill_f32(x, nx, -1.0f, 1.0f);
            ck_fill_f32(w, nw, -1.0f, 1.0f);
            ck_fill_f32(b, s->channels, -1.0f, 1.0f);
            kern_nchw_to_nchw8c_f32(1, s->channels, s->in_h * s->in_w, x, xb);
            kern_dwconv2d_pack_f32(s, w, wp);
            enum { R = 301 };
            double tn[R], tb[R];
            for (int r = 0; r < R; r++) {
                double t0 = ck_now_ns();
                isa->dwconv2d(s, oh, ow, x, w, b, KERN_FUSE_RELU, y);
                tn[r] = ck_now_ns() - t0;
                t0 = ck_now_ns();
                isa->dwconv2d_blk(s, oh, ow, 0, nb, xb, wp, b, KERN_FUSE_RELU,
                                  y);
                tb[r] = ck_now_ns() - t0;
            }
            const double mn = ck_median(tn, R), mb = ck_median(tb, R);
            printf("    bench   dwconv2d c%zu %zux%zu k%zux%zu s%zu %s: "
                   "NCHW %8.1f ns, NCHW8c %8.1f ns, x%.2f\n", s->channels,
                   s->in_h, s->in_w, s->kh, s->kw, s->stride_h, ck_isa(), mn,
                   mb, mn / mb);
        }
        free(x);
        free(xb);
        free(w);
        free(wp);
        free(b);
        free(y);
    }
}

void check_dwconv(unsigned flags);

void check_dwconv(unsigned flags)
{
    struct kern_dwconv_dsp isa, ref;
    kern_dwconv_dsp_init(&isa, flags);
    kern_dwconv_dsp_init(&ref, 0);
    if (ck_func((const void *)isa.dwconv2d, "dwconv2d")) {
        for (int t = 0; t < 400; t++) {
            check_one(isa.dwconv2d, ref.dwconv2d, t);
        }
        if (ck_bench_on()) {
            bench(isa.dwconv2d, ref.dwconv2d);
        }
        ck_report();
    }
    if (ck_func((const void *)isa.dwconv2d_blk, "dwconv2d_nchw8c")) {
        for (int t = 0; t < 400; t++) {
            check_blk_one(isa.dwconv2d_blk, isa.dwconv2d, t, false);
        }
        if (ck_bench_on()) {
            bench_blk(&isa);
        }
        ck_report();
    }
    /* dilated NCHW8c shapes against the dilated NCHW loop of the same
     * level, which has the C reference's bits (checked above) */
    if (ck_func((const void *)isa.dwconv2d_blk_dil, "dwconv2d_nchw8c_dil")) {
        for (int t = 0; t < 200; t++) {
            check_blk_one(isa.dwconv2d_blk_dil, isa.dwconv2d_dil, t, true);
        }
        ck_report();
    }
}
