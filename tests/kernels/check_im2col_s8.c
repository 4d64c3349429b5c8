/* Checks of the int8 lowering (kern_im2col_s8): every path against the C
 * reference, byte for byte (the lowering is a copy), on random shapes: 1 x 1
 * stride 1 unpadded ones (the byte transpose; channel counts under, at and
 * past 16 and pixel counts that do and do not fill 16-pixel blocks),
 * rectangular kernels up to 17 wide (each load width 4, 8, 16 and the
 * reference's fallback), strides 1 to 3 per axis, asymmetric padding up to
 * 4 per side (windows wholly in the padding included), planes narrower than
 * a load and planes over 64 columns wide, groups, and a sample index b > 0.
 * The output is poisoned first, so an unwritten byte fails, and a guard
 * after it must stay untouched. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checkkern.h"
#include "conv.h"

enum { GUARD = 64 };

static void random_shape(struct kern_conv2d_shape *s, size_t *oh,
                         size_t *ow, int t)
{
    for (;;) {
        s->batch = (size_t)ck_randi(1, 3);
        s->groups = (size_t)(t % 5 == 4 ? ck_randi(2, 4) : 1);
        s->in_c = s->groups * (size_t)ck_randi(1, t % 3 ? 9 : 40);
        s->out_c = s->groups;
        if (t % 4 == 0) { /* the transpose */
            s->kh = s->kw = 1;
            s->stride_h = s->stride_w = 1;
            s->pad_top = s->pad_left = s->pad_bottom = s->pad_right = 0;
        } else {
            s->kh = (size_t)ck_randi(1, 7);
            s->kw = (size_t)(t % 9 == 1 ? ck_randi(9, 17) : ck_randi(1, 8));
            s->stride_h = (size_t)ck_randi(1, 3);
            s->stride_w = (size_t)ck_randi(1, 3);
            s->pad_top = (size_t)ck_randi(0, 4);
            s->pad_left = (size_t)ck_randi(0, 4);
            s->pad_bottom = (size_t)ck_randi(0, 4);
            s->pad_right = (size_t)ck_randi(0, 4);
        }
        s->in_h = (size_t)ck_randi(1, 24);
        /* rows wider than the 64 columns whose controls are kept */
        s->in_w = (size_t)ck_randi(1, t % 3 ? 20 : t % 2 ? 45 : 100);
        if (kern_conv2d_out_hw(s, oh, ow) == KERN_OK) {
            return;
        }
    }
}

static void check_one(kern_im2col_s8_fn fn, kern_im2col_s8_fn ref, int t)
{
    struct kern_conv2d_shape s = {0};
    size_t oh, ow;
    random_shape(&s, &oh, &ow, t);
    const size_t cg = s.in_c / s.groups, K = cg * s.kh * s.kw;
    const size_t n = K * oh * ow, hw = s.in_h * s.in_w;
    const size_t nx = s.batch * s.in_c * hw;
    int8_t *x = malloc(nx), *c0 = malloc(n), *c1 = malloc(n + GUARD);
    unsigned char guard[GUARD];
    memset(guard, 0xa5, sizeof guard);
    if (!x || !c0 || !c1) {
        ck_fail("out of memory");
        goto done;
    }
    for (size_t i = 0; i < nx; i++) {
        x[i] = (int8_t)(ck_rand() >> 24);
    }
    const size_t b = s.batch - 1, g = (size_t)ck_randi(0, (int)s.groups - 1);
    const int8_t *xg = x + (b * s.in_c + g * cg) * hw;
    ck_poison(c0, n);
    ck_poison(c1, n);
    memcpy(c1 + n, guard, sizeof guard);
    ref(&s, oh, ow, xg, c0);
    fn(&s, oh, ow, xg, c1);
    if (memcmp(c0, c1, n) != 0) {
        size_t i = 0;
        while (c0[i] == c1[i]) {
            i++;
        }
        ck_fail("%zux%zux%zu g%zu b%zu k%zux%zu s%zux%zu p%zu,%zu,%zu,%zu: "
                "pixel %zu byte %zu is %d, want %d", s.in_c, s.in_h, s.in_w,
                s.groups, b, s.kh, s.kw, s.stride_h, s.stride_w, s.pad_top,
                s.pad_left, s.pad_bottom, s.pad_right, i / K, i % K, c1[i],
                c0[i]);
    }
    if (memcmp(c1 + n, guard, sizeof guard) != 0) {
        ck_fail("%zux%zux%zu k%zux%zu s%zux%zu: wrote past the columns",
                s.in_c, s.in_h, s.in_w, s.kh, s.kw, s.stride_h, s.stride_w);
    }
done:
    free(x);
    free(c0);
    free(c1);
}

/* The int8 layers of the MLPerf Tiny presets at batch 1. */
static void bench(kern_im2col_s8_fn fn, kern_im2col_s8_fn ref)
{
    static const struct kern_conv2d_shape shapes[] = {
        /* ResNet-8's 3 x 3 16 -> 16 on 32 x 32 */
        {1, 16, 32, 32, 16, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1},
        /* ResNet-8's 3 x 3 stride 2, 16 -> 32 */
        {1, 16, 32, 32, 32, 3, 3, 2, 2, 0, 0, 1, 1, 1, 1, 1},
        /* DS-CNN's first layer, 10 x 4 stride 2 */
        {1, 1, 49, 10, 64, 10, 4, 2, 2, 5, 1, 5, 2, 1, 1, 1},
        /* DS-CNN's pointwise 64 -> 64 on 25 x 5 */
        {1, 64, 25, 5, 64, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1},
        /* one channel of MobileNetV1 0.25's first depthwise layer */
        {1, 1, 48, 48, 1, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1},
    };
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        const struct kern_conv2d_shape *s = &shapes[i];
        size_t oh, ow;
        kern_conv2d_out_hw(s, &oh, &ow);
        const size_t nx = s->in_c * s->in_h * s->in_w;
        const size_t n = s->in_c * s->kh * s->kw * oh * ow;
        int8_t *x = calloc(nx, 1), *col = malloc(n);
        if (x && col) {
            enum { R = 51 };
            double tr[R], ti[R];
            for (int r = 0; r < R; r++) {
                double t0 = ck_now_ns();
                ref(s, oh, ow, x, col);
                tr[r] = ck_now_ns() - t0;
                t0 = ck_now_ns();
                fn(s, oh, ow, x, col);
                ti[r] = ck_now_ns() - t0;
            }
            char what[64];
            snprintf(what, sizeof what, "im2col_s8 %zu %zux%zu k%zux%zu s%zu",
                     s->in_c, s->in_h, s->in_w, s->kh, s->kw, s->stride_h);
            ck_bench_report(what, ck_median(tr, R), ck_median(ti, R));
        }
        free(x);
        free(col);
    }
}

void check_im2col_s8(unsigned flags);

void check_im2col_s8(unsigned flags)
{
    struct kern_conv_dsp isa, ref;
    kern_conv_dsp_init(&isa, flags);
    kern_conv_dsp_init(&ref, 0);
    if (!ck_func((const void *)isa.im2col_s8, "im2col_s8")) {
        return;
    }
    for (int t = 0; t < 2000; t++) {
        check_one(isa.im2col_s8, ref.im2col_s8, t);
    }
    if (ck_bench_on()) {
        bench(isa.im2col_s8, ref.im2col_s8);
    }
    ck_report();
}
