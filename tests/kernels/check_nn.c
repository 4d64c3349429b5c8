/* Checks of the nn family: every path against the C reference. bias_add,
 * all_finite, scale and sgd must match bit for bit (same float operations
 * in the same order) (the convolution has check_conv.c).
 *
 * Pooling (every path, the C reference included; square and rectangular
 * windows, one or two strides, symmetric and per-side padding, both
 * average divisors, odd sizes and vector tails) is compared bit for bit
 * with the direct window loops written here: max pooling picks the same
 * element (first maximum, first NaN; ties of +0 and -0 tell), average
 * pooling performs the same float additions in the same order (a NaN it
 * produces may differ in sign and payload).
 *
 * Softmax is compared with exp((double)(x - max)) / sum in double written
 * here (every path evaluates exp at the float difference): tolerance 6e-7
 * relative (a sub-ulp exp, the rounded 1/sum and the product) plus FLT_MIN
 * absolute (the vector paths flush exponentials below FLT_MIN to 0).
 * Cross-entropy is compared with a double evaluation: loss within
 * 1e-6 (1 + |loss|); each gradient element within 3e-7 / batch absolute
 * plus 2e-6 relative (the vector paths round x - max to float, a relative
 * error of |x - max| 2^-24 in the probability, |x - max| <= 20 here). */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checkkern.h"
#include "nn.h"

static bool same_bits(const void *a, const void *b, size_t bytes)
{
    return memcmp(a, b, bytes) == 0;
}

static void check_simple(const struct kern_nn_dsp *isa,
                         const struct kern_nn_dsp *ref)
{
    enum { MAXN = 2000 };
    static float x0[MAXN], x1[MAXN], g[MAXN], v0[MAXN], v1[MAXN], bias[64];

    if (ck_func((const void *)isa->bias_add, "nn_bias_add")) {
        for (int t = 0; t < 200; t++) {
            const size_t ch = (size_t)ck_randi(1, 64);
            const size_t rows = (size_t)ck_randi(1, MAXN / (int)ch);
            ck_fill_f32(x0, rows * ch, -10.0f, 10.0f);
            memcpy(x1, x0, rows * ch * sizeof *x0);
            ck_fill_f32(bias, ch, -1.0f, 1.0f);
            ref->bias_add(x0, rows, ch, bias);
            isa->bias_add(x1, rows, ch, bias);
            if (!same_bits(x0, x1, rows * ch * sizeof *x0)) {
                ck_fail("rows=%zu channels=%zu: outputs differ", rows, ch);
            }
        }
        ck_report();
    }
    if (ck_func((const void *)isa->gap_blk, "nn_gap_blk")) {
        /* one NCHW8c block's global means: pixel counts below, at and
         * past whole groups of four, values of mixed magnitudes, and a
         * NaN or an infinity in some; any NaN will do where both are NaN.
         * (A change in the order of the double sums seldom reaches a
         * float mean: this checks the lanes, the tail and the division,
         * each of which a mutation was seen to fail.) */
        for (int t = 0; t < 300; t++) {
            const size_t hw = (size_t)ck_randi(1, MAXN / 8);
            ck_fill_f32(x0, 8 * hw, -1e6f, 1e6f);
            for (size_t i = 0; i < 8 * hw; i += 3) {
                x0[i] *= 1e-6f;
            }
            if (t % 7 == 3) {
                const float sp[3] = {INFINITY, -INFINITY, NAN};
                x0[ck_randi(0, (int)(8 * hw) - 1)] = sp[ck_randi(0, 2)];
            }
            float m0[8], m1[8];
            ref->gap_blk(x0, hw, m0);
            isa->gap_blk(x0, hw, m1);
            for (int l = 0; l < 8; l++) {
                if (!(isnan(m0[l]) && isnan(m1[l])) &&
                    !same_bits(&m0[l], &m1[l], sizeof m0[l])) {
                    ck_fail("hw=%zu lane %d: %.9g, want %.9g", hw, l,
                            (double)m1[l], (double)m0[l]);
                    break;
                }
            }
        }
        ck_report();
    }
    if (ck_func((const void *)isa->all_finite, "nn_all_finite")) {
        for (int t = 0; t < 300; t++) {
            const size_t n = (size_t)ck_randi(1, MAXN);
            ck_fill_f32(x0, n, -1e30f, 1e30f);
            if (t % 3) {
                const float sp[4] = {INFINITY, -INFINITY, NAN, -NAN};
                x0[ck_randi(0, (int)n - 1)] = sp[ck_randi(0, 3)];
            }
            if (ref->all_finite(x0, n) != isa->all_finite(x0, n)) {
                ck_fail("n=%zu: verdicts differ", n);
            }
        }
        ck_report();
    }
    if (ck_func((const void *)isa->scale, "nn_scale")) {
        for (int t = 0; t < 100; t++) {
            const size_t n = (size_t)ck_randi(1, MAXN);
            ck_fill_f32(x0, n, -100.0f, 100.0f);
            memcpy(x1, x0, n * sizeof *x0);
            const float s = ck_randf(-2.0f, 2.0f);
            ref->scale(x0, n, s);
            isa->scale(x1, n, s);
            if (!same_bits(x0, x1, n * sizeof *x0)) {
                ck_fail("n=%zu: outputs differ", n);
            }
        }
        ck_report();
    }
    if (ck_func((const void *)isa->sgd, "nn_sgd")) {
        for (int t = 0; t < 200; t++) {
            const size_t n = (size_t)ck_randi(1, MAXN);
            ck_fill_f32(x0, n, -1.0f, 1.0f);
            memcpy(x1, x0, n * sizeof *x0);
            ck_fill_f32(g, n, -1.0f, 1.0f);
            ck_fill_f32(v0, n, -0.5f, 0.5f);
            memcpy(v1, v0, n * sizeof *v0);
            const float lr = ck_randf(0.001f, 0.5f);
            const float mu = t % 2 ? ck_randf(0.5f, 0.99f) : 0.0f;
            const float wd = t % 3 ? ck_randf(0.0f, 0.01f) : 0.0f;
            ref->sgd(x0, g, v0, n, lr, mu, wd);
            isa->sgd(x1, g, v1, n, lr, mu, wd);
            if (!same_bits(x0, x1, n * sizeof *x0) ||
                !same_bits(v0, v1, n * sizeof *v0)) {
                ck_fail("n=%zu mu=%g wd=%g: outputs differ", n, (double)mu,
                        (double)wd);
            }
        }
        ck_report();
    }
}

/* ---- pooling --------------------------------------------------------- */

/* The definition, window by window: max keeps the first maximum in
 * row-major window order (the first NaN wins), average sums the real
 * elements from +0 in that order and divides by kh * kw, or with
 * count_include_pad 0 by the number of real elements it summed. */
static void naive_pool(const struct kern_pool2d_shape *s, size_t oh,
                       size_t ow, const float *x, float *y, bool is_max)
{
    const ptrdiff_t ih = (ptrdiff_t)s->in_h, iw = (ptrdiff_t)s->in_w;
    const ptrdiff_t kh = (ptrdiff_t)s->kh, kw = (ptrdiff_t)s->kw;
    const ptrdiff_t sh = (ptrdiff_t)s->stride_h, sw = (ptrdiff_t)s->stride_w;
    const ptrdiff_t pt = (ptrdiff_t)s->pad_top, pl = (ptrdiff_t)s->pad_left;
    for (size_t p = 0; p < s->batch * s->channels; p++) {
        const float *plane = x + p * s->in_h * s->in_w;
        for (size_t oy = 0; oy < oh; oy++) {
            for (size_t ox = 0; ox < ow; ox++) {
                float best = 0.0f, sum = 0.0f;
                size_t real = 0;
                bool first = true;
                for (ptrdiff_t ky = 0; ky < kh; ky++) {
                    const ptrdiff_t iy = (ptrdiff_t)oy * sh + ky - pt;
                    for (ptrdiff_t kx = 0; kx < kw; kx++) {
                        const ptrdiff_t ix = (ptrdiff_t)ox * sw + kx - pl;
                        if (iy < 0 || iy >= ih || ix < 0 || ix >= iw) {
                            continue;
                        }
                        const float v = plane[iy * iw + ix];
                        if (first) {
                            best = v;
                            first = false;
                        } else if (best == best && (v > best || v != v)) {
                            best = v;
                        }
                        sum += v;
                        real++;
                    }
                }
                const float div = s->count_include_pad
                                      ? (float)(s->kh * s->kw)
                                      : (float)real;
                y[(p * oh + oy) * ow + ox] = is_max ? best : sum / div;
            }
        }
    }
}

/* A random window: square or rectangular, one stride or two, padding
 * equal on every side or chosen per side, either divisor. */
static void random_pool(struct kern_pool2d_shape *s, size_t *oh, size_t *ow,
                        int t)
{
    for (;;) {
        memset(s, 0, sizeof *s);
        s->batch = (size_t)ck_randi(1, 2);
        s->channels = (size_t)ck_randi(1, 3);
        s->in_h = (size_t)ck_randi(1, 17);
        s->in_w = (size_t)ck_randi(1, 75);
        s->count_include_pad = ck_randi(0, 1);
        if (t % 25 == 4) {
            /* 3 x 3 windows at stride 2, unpadded or padded by one
             * (SqueezeNet's and ResNet's pools, paths of their own), rows
             * of one to seven 16-column vectors; fill_pool_input gives
             * every third such shape neither NaN nor -0 */
            static const size_t widths[] = {27, 3,  15, 80, 4,  16, 33, 17,
                                            31, 112, 32, 64, 34, 35, 65};
            const size_t m = (size_t)t / 25, p = (m / 3) % 2;
            s->kh = s->kw = 3;
            s->stride_h = s->stride_w = 2;
            s->pad_top = s->pad_left = s->pad_bottom = s->pad_right = p;
            s->in_h = (size_t)ck_randi(3, 9);
            s->in_w = widths[m % (sizeof widths / sizeof widths[0])];
        } else if (t % 25 == 9 || t % 25 == 14) {
            /* planes of at most 32 cells, an output of at most 16 (the
             * AVX-512 path for tiny maps: GoogLeNet's 3 x 3 pools of a
             * 4 x 4 map), any window, stride and padding up to the
             * window's side less one */
            s->in_h = (size_t)ck_randi(1, 6);
            s->in_w = (size_t)ck_randi(1, (int)(32 / s->in_h < 8
                                                     ? 32 / s->in_h
                                                     : 8));
            s->kh = (size_t)ck_randi(1, 5);
            s->kw = (size_t)ck_randi(1, 5);
            s->stride_h = (size_t)ck_randi(1, 2);
            s->stride_w = (size_t)ck_randi(1, 2);
            s->pad_top = (size_t)ck_randi(0, (int)s->kh - 1);
            s->pad_bottom = (size_t)ck_randi(0, (int)s->kh - 1);
            s->pad_left = (size_t)ck_randi(0, (int)s->kw - 1);
            s->pad_right = (size_t)ck_randi(0, (int)s->kw - 1);
        } else if (t % 3 == 0) {
            s->kh = s->kw = 2;
            s->stride_h = s->stride_w = 2;
        } else if (t % 50 == 7) {
            /* Windows wider than the vector paths' limit of 32. */
            s->kw = (size_t)ck_randi(33, 36);
            s->kh = (size_t)ck_randi(1, 4);
            s->stride_h = (size_t)ck_randi(1, 3);
            s->stride_w = (size_t)ck_randi(1, 3);
            s->pad_left = s->pad_right = (size_t)ck_randi(0, 3);
            s->in_h = s->kh + (size_t)ck_randi(0, 3);
            s->in_w = s->kw + (size_t)ck_randi(0, 40);
        } else if (t % 3 == 1) {
            const size_t k = (size_t)ck_randi(1, 5);
            s->kh = s->kw = k;
            s->stride_h = s->stride_w = (size_t)ck_randi(1, 3);
            s->pad_top = s->pad_left = s->pad_bottom = s->pad_right =
                (size_t)ck_randi(0, (int)k / 2);
        } else {
            s->kh = (size_t)ck_randi(1, 6);
            s->kw = (size_t)ck_randi(1, 6);
            s->stride_h = (size_t)ck_randi(1, 3);
            s->stride_w = (size_t)ck_randi(1, 3);
            s->pad_top = (size_t)ck_randi(0, (int)s->kh - 1);
            s->pad_bottom = (size_t)ck_randi(0, (int)s->kh - 1);
            s->pad_left = (size_t)ck_randi(0, (int)s->kw - 1);
            s->pad_right = (size_t)ck_randi(0, (int)s->kw - 1);
        }
        if (kern_pool2d_out_hw(s, oh, ow) == KERN_OK) {
            return;
        }
    }
}

/* Values on a coarse grid (many ties, +0 and -0), with NaNs of both signs
 * and infinities sprinkled in some tests. */
static void fill_pool_input(float *x, size_t n, int t)
{
    /* random_pool's 3 x 3, stride-2 shapes: values of at most 0, so that
     * windows whose maxima are ties are common: of +0 and -0, or of +0
     * alone with no NaN (every third such shape, where the AVX-512 path's
     * speculative order runs to the end instead of handing the plane
     * back to the reference), or with NaNs */
    const bool k3s2 = t % 25 == 4;
    const int hi = k3s2 ? 0 : 6;
    const bool neg_zero = k3s2 ? (t / 25) % 3 == 2 : true;
    const bool nans = k3s2 ? (t / 25) % 3 == 1 : t % 2;
    for (size_t i = 0; i < n; i++) {
        x[i] = (float)ck_randi(-6, hi) * 0.5f;
        if (neg_zero && x[i] == 0.0f && ck_randi(0, 1)) {
            x[i] = -0.0f;
        }
        if (nans && ck_randi(0, 40) == 0) {
            const float sp[4] = {INFINITY, -INFINITY, NAN, -NAN};
            x[i] = sp[ck_randi(0, 3)];
        }
    }
}

static double time_pool(kern_nn_pool2d_fn fn, const struct kern_pool2d_shape *s,
                        size_t oh, size_t ow, const float *x, float *y)
{
    double t[21];
    for (int r = 0; r < 21; r++) {
        const double t0 = ck_now_ns();
        fn(s, oh, ow, x, y);
        t[r] = ck_now_ns() - t0;
    }
    return ck_median(t, 21);
}

static void naive_max(const struct kern_pool2d_shape *s, size_t oh,
                      size_t ow, const float *x, float *y)
{
    naive_pool(s, oh, ow, x, y, true);
}

static void naive_avg(const struct kern_pool2d_shape *s, size_t oh,
                      size_t ow, const float *x, float *y)
{
    naive_pool(s, oh, ow, x, y, false);
}

static void check_pool_one(kern_nn_pool2d_fn fn, kern_nn_pool2d_fn ref,
                           bool is_max)
{
    for (int t = 0; t < 400; t++) {
        struct kern_pool2d_shape s;
        size_t oh, ow;
        random_pool(&s, &oh, &ow, t);
        const size_t nx = s.batch * s.channels * s.in_h * s.in_w;
        const size_t ny = s.batch * s.channels * oh * ow;
        float *x = malloc(nx * sizeof *x);
        float *y0 = malloc(ny * sizeof *y0), *y1 = malloc(ny * sizeof *y1);
        if (x && y0 && y1) {
            fill_pool_input(x, nx, t);
            ck_poison(y1, ny * sizeof *y1);
            naive_pool(&s, oh, ow, x, y0, is_max);
            fn(&s, oh, ow, x, y1);
            for (size_t i = 0; i < ny; i++) {
                /* The sign and payload of a NaN made by an addition depend
                 * on the operand order the compiler picks: any NaN will do
                 * for average pooling. Max pooling must return the very
                 * element. */
                const bool nans = !is_max && isnan(y0[i]) && isnan(y1[i]);
                if (!nans && memcmp(&y0[i], &y1[i], sizeof *y0)) {
                    ck_fail("b%zu c%zu %zux%zu k%zux%zu s%zux%zu "
                            "p%zu,%zu,%zu,%zu cip%d: y[%zu] = %g, want %g",
                            s.batch, s.channels, s.in_h, s.in_w, s.kh, s.kw,
                            s.stride_h, s.stride_w, s.pad_top, s.pad_left,
                            s.pad_bottom, s.pad_right, s.count_include_pad,
                            i, (double)y1[i], (double)y0[i]);
                    break;
                }
            }
        } else {
            ck_fail("out of memory");
        }
        free(x);
        free(y0);
        free(y1);
    }
    if (!ck_bench_on()) {
        return;
    }
    /* smallcnn's pool1 and pool2 at batch 32, then 3x3 windows. */
#define SQ(b, c, h, w, k, st, p)                                             \
    {.batch = b, .channels = c, .in_h = h, .in_w = w, .kh = k, .kw = k,    \
     .stride_h = st, .stride_w = st, .pad_top = p, .pad_left = p,          \
     .pad_bottom = p, .pad_right = p, .count_include_pad = 1}
    static const struct kern_pool2d_shape shapes[] = {
        SQ(32, 8, 28, 28, 2, 2, 0),
        SQ(32, 16, 14, 14, 2, 2, 0),
        SQ(32, 16, 28, 28, 3, 2, 1),
        SQ(32, 16, 28, 28, 3, 1, 1),
    };
#undef SQ
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        const struct kern_pool2d_shape *s = &shapes[i];
        size_t oh, ow;
        kern_pool2d_out_hw(s, &oh, &ow);
        const size_t nx = s->batch * s->channels * s->in_h * s->in_w;
        const size_t ny = s->batch * s->channels * oh * ow;
        float *x = malloc(nx * sizeof *x), *y = malloc(ny * sizeof *y);
        if (x && y) {
            ck_fill_f32(x, nx, -1.0f, 1.0f);
            const double tn = time_pool(is_max ? naive_max : naive_avg, s,
                                        oh, ow, x, y);
            const double tr = time_pool(ref, s, oh, ow, x, y);
            const double ti = time_pool(fn, s, oh, ow, x, y);
            char what[64];
            snprintf(what, sizeof what, "%s %zux%zux%zu k%zus%zup%zu",
                     is_max ? "maxpool" : "avgpool", s->channels, s->in_h,
                     s->in_w, s->kh, s->stride_h, s->pad_top);
            ck_bench_report(what, tr, ti);
            printf("    bench   ns per input element: window loops %.3f, "
                   "c %.3f, %s %.3f\n", tn / (double)nx, tr / (double)nx,
                   ck_isa(), ti / (double)nx);
        }
        free(x);
        free(y);
    }
}

/* ---- pooling on NCHW8c ------------------------------------------------- */

/* x (NCHW) into NCHW8c xb; the padding lanes get values of the same grid
 * (NaNs included), which must not reach a real channel. */
static void to_blocked(const struct kern_pool2d_shape *s, const float *x,
                       float *xb, int t)
{
    const size_t nb = (s->channels + 7) / 8, hw = s->in_h * s->in_w;
    fill_pool_input(xb, s->batch * nb * 8 * hw, t);
    for (size_t n = 0; n < s->batch; n++) {
        for (size_t c = 0; c < s->channels; c++) {
            for (size_t i = 0; i < hw; i++) {
                xb[((n * nb + c / 8) * hw + i) * 8 + c % 8] =
                    x[(n * s->channels + c) * hw + i];
            }
        }
    }
}

/* Every path on NCHW8c against the window loops on the NCHW form, bit for
 * bit on the real channels (the same rules as check_pool_one). */
static void check_pool_blk_one(kern_nn_pool2d_fn fn, bool is_max)
{
    for (int t = 0; t < 300; t++) {
        struct kern_pool2d_shape s;
        size_t oh, ow;
        random_pool(&s, &oh, &ow, t);
        s.channels = (size_t)ck_randi(1, 19); /* tails of a block */
        const size_t nb = (s.channels + 7) / 8;
        const size_t nx = s.batch * s.channels * s.in_h * s.in_w;
        const size_t ny = s.batch * s.channels * oh * ow;
        const size_t nxb = s.batch * nb * 8 * s.in_h * s.in_w;
        const size_t nyb = s.batch * nb * 8 * oh * ow;
        float *x = malloc(nx * sizeof *x), *xb = malloc(nxb * sizeof *xb);
        float *y0 = malloc(ny * sizeof *y0), *y1 = malloc(nyb * sizeof *y1);
        if (x && xb && y0 && y1) {
            fill_pool_input(x, nx, t);
            to_blocked(&s, x, xb, t);
            ck_poison(y1, nyb * sizeof *y1);
            naive_pool(&s, oh, ow, x, y0, is_max);
            fn(&s, oh, ow, xb, y1);
            bool bad = false;
            for (size_t n = 0; n < s.batch && !bad; n++) {
                for (size_t c = 0; c < s.channels && !bad; c++) {
                    for (size_t i = 0; i < oh * ow && !bad; i++) {
                        const float a = y0[(n * s.channels + c) * oh * ow + i];
                        const float b =
                            y1[((n * nb + c / 8) * oh * ow + i) * 8 + c % 8];
                        const bool nans = !is_max && isnan(a) && isnan(b);
                        if (!nans && memcmp(&a, &b, sizeof a)) {
                            ck_fail("blocked b%zu c%zu %zux%zu k%zux%zu "
                                    "s%zux%zu p%zu,%zu,%zu,%zu cip%d: "
                                    "channel %zu cell %zu = %g, want %g",
                                    s.batch, s.channels, s.in_h, s.in_w, s.kh,
                                    s.kw, s.stride_h, s.stride_w, s.pad_top,
                                    s.pad_left, s.pad_bottom, s.pad_right,
                                    s.count_include_pad, c, i, (double)b,
                                    (double)a);
                            bad = true;
                        }
                    }
                }
            }
        } else {
            ck_fail("out of memory");
        }
        free(x);
        free(xb);
        free(y0);
        free(y1);
    }
}

/* Max pooling 3x3 stride 2 against a copy of its input's bytes, timed
 * alternately (medians): ResNet-18's stem pool and SqueezeNet 1.1's three,
 * NCHW and NCHW8c. */
static void bench_pool_copy(const struct kern_nn_dsp *isa)
{
    static const size_t shapes[][4] = {
        {64, 112, 112, 1}, {64, 111, 111, 0}, {128, 55, 55, 0},
        {256, 27, 27, 0}};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        const size_t p = shapes[i][3];
        const struct kern_pool2d_shape s = {
            .batch = 1, .channels = shapes[i][0], .in_h = shapes[i][1],
            .in_w = shapes[i][2], .kh = 3, .kw = 3, .stride_h = 2,
            .stride_w = 2, .pad_top = p, .pad_left = p, .pad_bottom = p,
            .pad_right = p};
        size_t oh, ow;
        kern_pool2d_out_hw(&s, &oh, &ow);
        const size_t nx = s.channels * s.in_h * s.in_w;
        float *x = malloc(nx * sizeof *x), *c = malloc(nx * sizeof *c);
        float *y = malloc(s.channels * oh * ow * sizeof *y);
        if (x && c && y) {
            ck_fill_f32(x, nx, -1.0f, 1.0f);
            double tc[21], tp[21], tb[21];
            for (int r = 0; r < 21; r++) {
                double t0 = ck_now_ns();
                memcpy(c, x, nx * sizeof *x);
                tc[r] = ck_now_ns() - t0;
                t0 = ck_now_ns();
                isa->maxpool2d(&s, oh, ow, x, y);
                tp[r] = ck_now_ns() - t0;
                t0 = ck_now_ns();
                isa->maxpool2d_blk(&s, oh, ow, x, y);
                tb[r] = ck_now_ns() - t0;
            }
            const double mc = ck_median(tc, 21), mp = ck_median(tp, 21);
            const double mb = ck_median(tb, 21);
            printf("    bench   maxpool %zux%zux%zu k3s2p%zu vs copy: copy "
                   "%.1f us, NCHW %.1f us (%.2fx), NCHW8c %.1f us (%.2fx)\n",
                   s.channels, s.in_h, s.in_w, p, mc / 1e3, mp / 1e3,
                   mp / mc, mb / 1e3, mb / mc);
        }
        free(x);
        free(c);
        free(y);
    }
}

static void check_pool(const struct kern_nn_dsp *isa,
                       const struct kern_nn_dsp *ref)
{
    if (ck_func((const void *)isa->maxpool2d, "nn_maxpool2d")) {
        check_pool_one(isa->maxpool2d, ref->maxpool2d, true);
        ck_report();
    }
    if (ck_func((const void *)isa->avgpool2d, "nn_avgpool2d")) {
        check_pool_one(isa->avgpool2d, ref->avgpool2d, false);
        ck_report();
    }
    if (ck_func((const void *)isa->maxpool2d_blk, "nn_maxpool2d_blk")) {
        check_pool_blk_one(isa->maxpool2d_blk, true);
        ck_report();
    }
    if (ck_func((const void *)isa->avgpool2d_blk, "nn_avgpool2d_blk")) {
        check_pool_blk_one(isa->avgpool2d_blk, false);
        ck_report();
    }
    if (ck_bench_on()) {
        bench_pool_copy(isa);
    }
}

/* ---- softmax ----------------------------------------------------------- */

/* Softmax of one row in double from the float differences x - max; false
 * for a row the kernels turn into NaN. */
static bool truth_softmax(const float *x, size_t cols, double *p)
{
    float mx = -INFINITY;
    for (size_t c = 0; c < cols; c++) {
        if (isnan(x[c])) {
            return false;
        }
        mx = x[c] > mx ? x[c] : mx;
    }
    if (isinf(mx)) {
        return false;
    }
    double sum = 0.0;
    for (size_t c = 0; c < cols; c++) {
        p[c] = exp((double)(x[c] - mx));
        sum += p[c];
    }
    for (size_t c = 0; c < cols; c++) {
        p[c] /= sum;
    }
    return true;
}

static void fill_logits(float *x, size_t n, int t)
{
    const float span = t % 4 == 0 ? 20.0f : t % 4 == 1 ? 3.0f : 10.0f;
    ck_fill_f32(x, n, -span, span);
    if (t % 5 == 1) {
        /* Far below the maximum: exponentials that underflow. */
        x[ck_randi(0, (int)n - 1)] = -120.0f;
        x[ck_randi(0, (int)n - 1)] = -INFINITY;
    }
}

static double time_softmax(kern_nn_softmax_fn fn, const float *x,
                           size_t rows, size_t cols, float *y)
{
    double t[31];
    for (int r = 0; r < 31; r++) {
        const double t0 = ck_now_ns();
        fn(x, rows, cols, y);
        t[r] = ck_now_ns() - t0;
    }
    return ck_median(t, 31);
}

static double time_xent(kern_nn_xent_fn fn, const float *x,
                        const int32_t *lab, size_t rows, size_t cols,
                        float *g)
{
    double t[31];
    volatile double sink = 0.0;
    for (int r = 0; r < 31; r++) {
        const double t0 = ck_now_ns();
        sink += fn(x, lab, rows, cols, g);
        t[r] = ck_now_ns() - t0;
    }
    (void)sink;
    return ck_median(t, 31);
}

static void check_softmax(const struct kern_nn_dsp *isa,
                          const struct kern_nn_dsp *ref)
{
    enum { MAXR = 40, MAXC = 1100 };
    static float x[MAXR * MAXC], y[MAXR * MAXC], g[MAXR * MAXC];
    static double p[MAXC];
    static int32_t lab[MAXR];
    if (ck_func((const void *)isa->softmax, "nn_softmax")) {
        for (int t = 0; t < 200; t++) {
            const size_t rows = (size_t)ck_randi(1, MAXR);
            const size_t cols = (size_t)ck_randi(1, t % 2 ? 40 : MAXC);
            const size_t n = rows * cols;
            fill_logits(x, n, t);
            if (t % 7 == 3) {
                const float sp[3] = {NAN, INFINITY, -NAN};
                x[ck_randi(0, (int)n - 1)] = sp[ck_randi(0, 2)];
            }
            const bool in_place = t % 3 == 2;
            float *out = in_place ? x : y;
            float *saved = in_place ? g : x;
            if (in_place) {
                memcpy(g, x, n * sizeof *x);
            } else {
                ck_poison(y, n * sizeof *y);
            }
            isa->softmax(x, rows, cols, out);
            for (size_t r = 0; r < rows; r++) {
                const bool ok = truth_softmax(saved + r * cols, cols, p);
                for (size_t c = 0; c < cols; c++) {
                    const float v = out[r * cols + c];
                    if (ok ? !ck_close_f32(v, (float)p[c], FLT_MIN, 6e-7f)
                           : !isnan(v)) {
                        ck_fail("%zux%zu%s: y[%zu][%zu] = %.9g, want %.9g",
                                rows, cols, in_place ? " in place" : "", r,
                                c, (double)v, ok ? p[c] : (double)NAN);
                        r = rows;
                        break;
                    }
                }
            }
        }
        if (ck_bench_on()) {
            static const size_t shapes[][2] = {{32, 10}, {256, 1000}};
            for (size_t i = 0; i < 2; i++) {
                const size_t rows = shapes[i][0], cols = shapes[i][1];
                float *bx = malloc(rows * cols * sizeof *bx);
                float *by = malloc(rows * cols * sizeof *by);
                if (bx && by) {
                    ck_fill_f32(bx, rows * cols, -10.0f, 10.0f);
                    const double tr =
                        time_softmax(ref->softmax, bx, rows, cols, by);
                    const double ti =
                        time_softmax(isa->softmax, bx, rows, cols, by);
                    char what[64];
                    snprintf(what, sizeof what, "softmax %zux%zu", rows,
                             cols);
                    ck_bench_report(what, tr, ti);
                    printf("    bench   ns per element: c %.3f, %s %.3f\n",
                           tr / (double)(rows * cols), ck_isa(),
                           ti / (double)(rows * cols));
                }
                free(bx);
                free(by);
            }
        }
        ck_report();
    }
    if (ck_func((const void *)isa->xent, "nn_softmax_xent")) {
        for (int t = 0; t < 200; t++) {
            const size_t rows = (size_t)ck_randi(1, MAXR);
            const size_t cols = (size_t)ck_randi(1, t % 2 ? 40 : MAXC);
            const size_t n = rows * cols;
            fill_logits(x, n, t);
            for (size_t r = 0; r < rows; r++) {
                lab[r] = ck_randi(0, (int)cols - 1);
                /* A -inf label logit makes the loss infinite. */
                if (isinf(x[r * cols + (size_t)lab[r]])) {
                    x[r * cols + (size_t)lab[r]] = 0.0f;
                }
            }
            ck_poison(g, n * sizeof *g);
            const bool with_grad = t % 4 != 3;
            const double loss =
                isa->xent(x, lab, rows, cols, with_grad ? g : NULL);
            double want = 0.0;
            const double ib = 1.0 / (double)rows;
            bool bad = false;
            for (size_t r = 0; r < rows && !bad; r++) {
                const float *xr = x + r * cols;
                truth_softmax(xr, cols, p);
                float mx = -INFINITY;
                for (size_t c = 0; c < cols; c++) {
                    mx = xr[c] > mx ? xr[c] : mx;
                }
                double sum = 0.0;
                for (size_t c = 0; c < cols; c++) {
                    sum += exp((double)xr[c] - (double)mx);
                }
                const double lse = (double)mx + log(sum);
                want += lse - (double)xr[lab[r]];
                for (size_t c = 0; c < cols && with_grad; c++) {
                    const double gw =
                        (exp((double)xr[c] - lse) - (c == (size_t)lab[r])) *
                        ib;
                    if (!ck_close_f32(g[r * cols + c], (float)gw,
                                      (float)(3e-7 * ib), 2e-6f)) {
                        ck_fail("%zux%zu: grad[%zu][%zu] = %.9g, want %.9g",
                                rows, cols, r, c,
                                (double)g[r * cols + c], gw);
                        bad = true;
                        break;
                    }
                }
            }
            if (!(fabs(loss * ib - want * ib) <=
                  1e-6 * (1.0 + fabs(want * ib)))) {
                ck_fail("%zux%zu: loss %.9g, want %.9g", rows, cols,
                        loss * ib, want * ib);
            }
        }
        if (ck_bench_on()) {
            static const size_t shapes[][2] = {{32, 10}, {256, 1000}};
            for (size_t i = 0; i < 2; i++) {
                const size_t rows = shapes[i][0], cols = shapes[i][1];
                float *bx = malloc(rows * cols * sizeof *bx);
                float *bg = malloc(rows * cols * sizeof *bg);
                int32_t *bl = malloc(rows * sizeof *bl);
                if (bx && bg && bl) {
                    ck_fill_f32(bx, rows * cols, -10.0f, 10.0f);
                    for (size_t r = 0; r < rows; r++) {
                        bl[r] = ck_randi(0, (int)cols - 1);
                    }
                    const double tr =
                        time_xent(ref->xent, bx, bl, rows, cols, bg);
                    const double ti =
                        time_xent(isa->xent, bx, bl, rows, cols, bg);
                    char what[64];
                    snprintf(what, sizeof what, "softmax_xent %zux%zu+grad",
                             rows, cols);
                    ck_bench_report(what, tr, ti);
                    printf("    bench   ns per element: c %.3f, %s %.3f\n",
                           tr / (double)(rows * cols), ck_isa(),
                           ti / (double)(rows * cols));
                }
                free(bx);
                free(bg);
                free(bl);
            }
        }
        ck_report();
    }
}

void check_nn(unsigned flags);

void check_nn(unsigned flags)
{
    struct kern_nn_dsp isa, ref;
    kern_nn_dsp_init(&isa, flags);
    kern_nn_dsp_init(&ref, 0);
    check_simple(&isa, &ref);
    check_pool(&isa, &ref);
    check_softmax(&isa, &ref);
}
