/* Checks of the nn family: every path against the C reference. bias_add,
 * all_finite, scale and sgd must match bit for bit (same float operations
 * in the same order). The convolution uses fused multiply-adds, so each
 * product is rounded once less than in the reference: the tolerance is
 * 4e-7 per accumulated term (inputs and weights in [-1, 1], so every term
 * is at most 1 in magnitude) plus 1e-5 relative. */
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

/* A random valid convolution shape. */
static void random_conv(struct kern_conv2d_shape *s, size_t *oh, size_t *ow)
{
    for (;;) {
        s->batch = (size_t)ck_randi(1, 2);
        s->groups = (size_t)ck_randi(1, 3);
        const int depthwise = ck_randi(0, 4) == 0;
        s->in_c = s->groups * (size_t)(depthwise ? 1 : ck_randi(1, 4));
        s->out_c = depthwise ? s->in_c : s->groups * (size_t)ck_randi(1, 4);
        s->k = (size_t)ck_randi(1, 5);
        s->stride = (size_t)ck_randi(1, 3);
        s->pad = (size_t)ck_randi(0, 2);
        s->in_h = (size_t)ck_randi(1, 20);
        s->in_w = (size_t)ck_randi(1, 80);
        if (kern_conv2d_out_hw(s, oh, ow) == KERN_OK) {
            return;
        }
    }
}

static void check_conv(const struct kern_nn_dsp *isa,
                       const struct kern_nn_dsp *ref)
{
    if (!ck_func((const void *)isa->conv2d, "nn_conv2d")) {
        return;
    }
    for (int t = 0; t < 300; t++) {
        struct kern_conv2d_shape s;
        size_t oh, ow;
        random_conv(&s, &oh, &ow);
        const size_t nx = s.batch * s.in_c * s.in_h * s.in_w;
        const size_t terms = s.in_c / s.groups * s.k * s.k;
        const size_t nw = s.out_c * terms;
        const size_t ny = s.batch * s.out_c * oh * ow;
        float *x = malloc(nx * sizeof *x), *w = malloc(nw * sizeof *w);
        float *b = malloc(s.out_c * sizeof *b);
        float *y0 = malloc(ny * sizeof *y0), *y1 = malloc(ny * sizeof *y1);
        if (x && w && b && y0 && y1) {
            ck_fill_f32(x, nx, -1.0f, 1.0f);
            ck_fill_f32(w, nw, -1.0f, 1.0f);
            ck_fill_f32(b, s.out_c, -1.0f, 1.0f);
            ck_poison(y0, ny * sizeof *y0);
            ck_poison(y1, ny * sizeof *y1);
            const float *bias = t % 4 ? b : NULL;
            ref->conv2d(&s, oh, ow, x, w, bias, y0);
            isa->conv2d(&s, oh, ow, x, w, bias, y1);
            const float tol = 4e-7f * (float)(terms + 1);
            for (size_t i = 0; i < ny; i++) {
                if (!ck_close_f32(y1[i], y0[i], tol, 1e-5f)) {
                    ck_fail("b%zu %zux%zux%zu -> %zu k%zu s%zu p%zu g%zu: "
                            "y[%zu] = %g, want %g", s.batch, s.in_c, s.in_h,
                            s.in_w, s.out_c, s.k, s.stride, s.pad, s.groups,
                            i, (double)y1[i], (double)y0[i]);
                    break;
                }
            }
        } else {
            ck_fail("out of memory");
        }
        free(x);
        free(w);
        free(b);
        free(y0);
        free(y1);
    }
    struct kern_nn_dsp host;
    kern_nn_dsp_init(&host, kern_cpu_flags());
    const bool public_too = host.conv2d == isa->conv2d;
    if (ck_bench_on()) {
        /* smallcnn's two convolutions at batch 32, a strided one and a
         * depthwise one. */
        static const struct kern_conv2d_shape shapes[] = {
            {32, 1, 28, 28, 8, 3, 1, 1, 1},
            {32, 8, 14, 14, 16, 3, 1, 1, 1},
            {32, 16, 28, 28, 32, 3, 2, 1, 1},
            {32, 32, 14, 14, 32, 3, 1, 1, 32},
        };
        for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
            const struct kern_conv2d_shape *s = &shapes[i];
            size_t oh, ow;
            kern_conv2d_out_hw(s, &oh, &ow);
            const size_t nx = s->batch * s->in_c * s->in_h * s->in_w;
            const size_t nw = s->out_c * s->in_c / s->groups * s->k * s->k;
            const size_t ny = s->batch * s->out_c * oh * ow;
            float *x = malloc(nx * sizeof *x), *w = malloc(nw * sizeof *w);
            float *y = malloc(ny * sizeof *y);
            if (x && w && y) {
                ck_fill_f32(x, nx, -1.0f, 1.0f);
                ck_fill_f32(w, nw, -1.0f, 1.0f);
                double tr[5], ti[15];
                for (int r = 0; r < 5; r++) {
                    const double t0 = ck_now_ns();
                    ref->conv2d(s, oh, ow, x, w, NULL, y);
                    tr[r] = ck_now_ns() - t0;
                }
                for (int r = 0; r < 15; r++) {
                    const double t0 = ck_now_ns();
                    isa->conv2d(s, oh, ow, x, w, NULL, y);
                    ti[r] = ck_now_ns() - t0;
                }
                char what[64];
                snprintf(what, sizeof what,
                         "conv2d %zu>%zu %zux%zu k%zus%zug%zu", s->in_c,
                         s->out_c, s->in_h, s->in_w, s->k, s->stride,
                         s->groups);
                ck_bench_report(what, ck_median(tr, 5), ck_median(ti, 15));
                if (public_too) {
                    /* kern_conv2d_f32 itself: patches + kern_sgemm where
                     * that pays, on the host's widest path. */
                    for (int r = 0; r < 15; r++) {
                        const double t0 = ck_now_ns();
                        kern_conv2d_f32(s, x, w, NULL, y);
                        ti[r] = ck_now_ns() - t0;
                    }
                    snprintf(what, sizeof what, "  kern_conv2d_f32 (%s)",
                             kern_cpu_path_name(kern_cpu_flags()));
                    ck_bench_report(what, ck_median(tr, 5),
                                    ck_median(ti, 15));
                }
            }
            free(x);
            free(w);
            free(y);
        }
    }
    ck_report();
}

void check_nn(unsigned flags);

void check_nn(unsigned flags)
{
    struct kern_nn_dsp isa, ref;
    kern_nn_dsp_init(&isa, flags);
    kern_nn_dsp_init(&ref, 0);
    check_simple(&isa, &ref);
    check_conv(&isa, &ref);
}
