/* Checks of the spatial families against their C references on random
 * shapes: the transposed convolution's GEMM path against its scatter
 * reference; dilated convolutions (kern_conv2d_f32's im2col + sgemm path
 * against kern_conv2d_c, and the dilated depthwise loop against
 * kern_dwconv2d_c); transposes and constant padding against index
 * arithmetic. These paths do not dispatch on the instruction set
 * themselves (the GEMM does, on the CPU's flags), so each is checked
 * once, at the first level. Outputs are poisoned beforehand and a guard
 * after each must stay untouched.
 *
 * Tolerance of the GEMM paths: both sides add the same K products in
 * different orders (and the GEMM with fused multiply-adds), so they
 * differ by at most about 2 (K + 1) FLT_EPSILON S, S = |bias| + sum |w x|
 * (computed by running the reference on |w| and |x|); the check allows
 * 2 (K + 2) FLT_EPSILON S. The dilated depthwise loop adds the same terms
 * in the same order as its reference: bits must match. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checkkern.h"
#include "conv.h"
#include "deconv.h"
#include "dwconv.h"

enum { GUARD = 64 };

static float *alloc_f(size_t n)
{
    return malloc((n + GUARD) * sizeof(float));
}

static bool guard_ok(const float *p, size_t n)
{
    unsigned char want[sizeof(float)];
    ck_poison(want, sizeof want);
    for (size_t i = 0; i < GUARD; i++) {
        if (memcmp(p + n + i, want, sizeof want) != 0) {
            return false;
        }
    }
    return true;
}

static void abs_copy(float *dst, const float *src, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        dst[i] = fabsf(src[i]);
    }
}

/* ---- transposed convolution ---------------------------------------------- */

static void random_deconv(struct kern_conv_transpose2d_shape *s, size_t *oh,
                          size_t *ow, int t)
{
    for (;;) {
        memset(s, 0, sizeof *s);
        s->batch = (size_t)ck_randi(1, 2);
        s->groups = (size_t)(t % 4 == 3 ? ck_randi(2, 3) : 1);
        s->in_c = s->groups * (size_t)ck_randi(1, 9);
        s->out_c = s->groups * (size_t)ck_randi(1, 9);
        const bool oned = t % 6 == 5;
        s->in_h = oned ? 1 : (size_t)ck_randi(1, 12);
        s->in_w = (size_t)ck_randi(1, 17);
        s->kh = oned ? 1 : (size_t)ck_randi(1, 5);
        s->kw = (size_t)ck_randi(1, 5);
        s->stride_h = oned ? 1 : (size_t)ck_randi(1, 3);
        s->stride_w = (size_t)ck_randi(1, 3);
        s->dilation_h = oned ? 1 : (size_t)ck_randi(0, 3);
        s->dilation_w = (size_t)ck_randi(0, 3);
        s->pad_top = oned ? 0 : (size_t)ck_randi(0, 2);
        s->pad_bottom = oned ? 0 : (size_t)ck_randi(0, 2);
        s->pad_left = (size_t)ck_randi(0, 2);
        s->pad_right = (size_t)ck_randi(0, 2);
        s->out_pad_h = (size_t)ck_randi(0, (int)s->stride_h - 1);
        s->out_pad_w = (size_t)ck_randi(0, (int)s->stride_w - 1);
        if (kern_conv_transpose2d_out_hw(s, oh, ow) == KERN_OK) {
            return;
        }
    }
}

static void check_deconv_one(int t)
{
    struct kern_conv_transpose2d_shape s;
    size_t oh, ow;
    random_deconv(&s, &oh, &ow, t);
    const size_t nx = s.batch * s.in_c * s.in_h * s.in_w;
    const size_t nw = s.in_c * (s.out_c / s.groups) * s.kh * s.kw;
    const size_t ny = s.batch * s.out_c * oh * ow;
    const size_t K = s.in_c / s.groups * s.kh * s.kw;
    const size_t wb = kern_conv_transpose2d_work_bytes(&s);
    float *x = alloc_f(nx), *w = alloc_f(nw), *b = alloc_f(s.out_c);
    float *xa = alloc_f(nx), *wa = alloc_f(nw), *ba = alloc_f(s.out_c);
    float *y0 = alloc_f(ny), *y1 = alloc_f(ny), *mag = alloc_f(ny);
    float *work = alloc_f(wb / sizeof(float));
    if (!x || !w || !b || !xa || !wa || !ba || !y0 || !y1 || !mag ||
        !work) {
        ck_fail("out of memory");
        goto done;
    }
    ck_fill_f32(x, nx, -1.0f, 1.0f);
    ck_fill_f32(w, nw, -1.0f, 1.0f);
    ck_fill_f32(b, s.out_c, -1.0f, 1.0f);
    abs_copy(xa, x, nx);
    abs_copy(wa, w, nw);
    abs_copy(ba, b, s.out_c);
    const float *bias = t % 3 ? b : NULL;
    kern_conv_transpose2d_c(&s, oh, ow, x, w, bias, y0);
    kern_conv_transpose2d_c(&s, oh, ow, xa, wa, bias ? ba : NULL, mag);
    ck_poison(y1, (ny + GUARD) * sizeof(float));
    ck_poison(work, wb + GUARD * sizeof(float));
    if (kern_conv_transpose2d_gemm(&s, oh, ow, x, w, bias, work, y1) !=
        KERN_OK) {
        ck_fail("t %d: gemm path failed", t);
        goto done;
    }
    const float tol = 2.0f * (float)(K + 2) * FLT_EPSILON;
    for (size_t i = 0; i < ny; i++) {
        if (!(fabsf(y1[i] - y0[i]) <= tol * mag[i] + 1e-30f)) {
            ck_fail("t %d: %zux%zux%zu -> %zu k%zux%zu s%zux%zu d%zux%zu "
                    "g%zu: y[%zu] = %.8g, ref %.8g", t, s.in_c, s.in_h,
                    s.in_w, s.out_c, s.kh, s.kw, s.stride_h, s.stride_w,
                    s.dilation_h, s.dilation_w, s.groups, i, (double)y1[i],
                    (double)y0[i]);
            break;
        }
    }
    if (!guard_ok(y1, ny) || !guard_ok(work, wb / sizeof(float))) {
        ck_fail("t %d: wrote past the output or the scratch", t);
    }
done:
    free(x);
    free(w);
    free(b);
    free(xa);
    free(wa);
    free(ba);
    free(y0);
    free(y1);
    free(mag);
    free(work);
}

/* ---- dilated convolutions ------------------------------------------------ */

static void check_dilated_one(int t)
{
    struct kern_conv2d_shape s = {0};
    size_t oh, ow;
    do {
        s.batch = (size_t)ck_randi(1, 2);
        s.groups = (size_t)(t % 3 == 2 ? ck_randi(2, 3) : 1);
        s.in_c = s.groups * (size_t)ck_randi(1, 6);
        s.out_c = s.groups * (size_t)ck_randi(1, 20);
        if (s.groups == s.in_c && s.out_c == s.in_c) {
            s.out_c *= 2;
        }
        s.in_h = (size_t)ck_randi(4, 20);
        s.in_w = (size_t)ck_randi(4, 24);
        s.kh = (size_t)ck_randi(1, 4);
        s.kw = (size_t)ck_randi(1, 4);
        s.stride_h = (size_t)ck_randi(1, 3);
        s.stride_w = (size_t)ck_randi(1, 3);
        s.pad_top = (size_t)ck_randi(0, 3);
        s.pad_left = (size_t)ck_randi(0, 3);
        s.pad_bottom = (size_t)ck_randi(0, 3);
        s.pad_right = (size_t)ck_randi(0, 3);
        s.dilation_h = (size_t)ck_randi(2, 4);
        s.dilation_w = (size_t)ck_randi(1, 4);
    } while (kern_conv2d_out_hw(&s, &oh, &ow) != KERN_OK);
    const size_t K = s.in_c / s.groups * s.kh * s.kw;
    const size_t nx = s.batch * s.in_c * s.in_h * s.in_w;
    const size_t nw = s.out_c * K, ny = s.batch * s.out_c * oh * ow;
    const size_t wb = kern_conv2d_work_bytes(&s);
    float *x = alloc_f(nx), *w = alloc_f(nw), *b = alloc_f(s.out_c);
    float *xa = alloc_f(nx), *wa = alloc_f(nw), *ba = alloc_f(s.out_c);
    float *y0 = alloc_f(ny), *y1 = alloc_f(ny), *mag = alloc_f(ny);
    float *work = alloc_f(wb / sizeof(float));
    if (!x || !w || !b || !xa || !wa || !ba || !y0 || !y1 || !mag ||
        !work) {
        ck_fail("out of memory");
        goto done;
    }
    ck_fill_f32(x, nx, -1.0f, 1.0f);
    ck_fill_f32(w, nw, -1.0f, 1.0f);
    ck_fill_f32(b, s.out_c, -1.0f, 1.0f);
    abs_copy(xa, x, nx);
    abs_copy(wa, w, nw);
    abs_copy(ba, b, s.out_c);
    kern_conv2d_c(&s, oh, ow, x, w, b, KERN_FUSE_NONE, NULL, y0);
    kern_conv2d_c(&s, oh, ow, xa, wa, ba, KERN_FUSE_NONE, NULL, mag);
    ck_poison(y1, (ny + GUARD) * sizeof(float));
    ck_poison(work, wb + GUARD * sizeof(float));
    if (kern_conv2d_f32(&s, x, w, b, KERN_FUSE_NONE, work, y1) != KERN_OK) {
        ck_fail("t %d: kern_conv2d_f32 failed", t);
        goto done;
    }
    const float tol = 2.0f * (float)(K + 2) * FLT_EPSILON;
    for (size_t i = 0; i < ny; i++) {
        if (!(fabsf(y1[i] - y0[i]) <= tol * mag[i] + 1e-30f)) {
            ck_fail("t %d: dilated %zux%zu d%zux%zu: y[%zu] = %.8g, ref "
                    "%.8g", t, s.kh, s.kw, s.dilation_h, s.dilation_w, i,
                    (double)y1[i], (double)y0[i]);
            break;
        }
    }
    if (!guard_ok(y1, ny) || !guard_ok(work, wb / sizeof(float))) {
        ck_fail("t %d: wrote past the output or the scratch", t);
    }
done:
    free(x);
    free(w);
    free(b);
    free(xa);
    free(wa);
    free(ba);
    free(y0);
    free(y1);
    free(mag);
    free(work);
}

static void check_dilated_dw_one(kern_dwconv2d_fn fn, int t)
{
    struct kern_dwconv2d_shape s = {0};
    size_t oh, ow;
    do {
        s.batch = (size_t)ck_randi(1, 2);
        s.channels = (size_t)ck_randi(1, 19);
        s.in_h = (size_t)ck_randi(3, 30);
        s.in_w = (size_t)ck_randi(3, 40);
        s.kh = (size_t)ck_randi(1, 5);
        s.kw = (size_t)ck_randi(1, 5);
        s.stride_h = (size_t)ck_randi(1, 2);
        s.stride_w = (size_t)ck_randi(1, 3);
        s.pad_top = (size_t)ck_randi(0, 4);
        s.pad_left = (size_t)ck_randi(0, 4);
        s.pad_bottom = (size_t)ck_randi(0, 4);
        s.pad_right = (size_t)ck_randi(0, 4);
        s.dilation_h = (size_t)ck_randi(1, 4);
        s.dilation_w = (size_t)ck_randi(2, 4);
    } while (kern_dwconv2d_out_hw(&s, &oh, &ow) != KERN_OK);
    const size_t nx = s.batch * s.channels * s.in_h * s.in_w;
    const size_t nw = s.channels * s.kh * s.kw;
    const size_t ny = s.batch * s.channels * oh * ow;
    const int act = t % 3;
    float *x = alloc_f(nx), *w = alloc_f(nw), *b = alloc_f(s.channels);
    float *y0 = alloc_f(ny), *y1 = alloc_f(ny);
    if (!x || !w || !b || !y0 || !y1) {
        ck_fail("out of memory");
        goto done;
    }
    ck_fill_f32(x, nx, -2.0f, 2.0f);
    ck_fill_f32(w, nw, -2.0f, 2.0f);
    ck_fill_f32(b, s.channels, -1.0f, 1.0f);
    kern_dwconv2d_c(&s, oh, ow, x, w, b, act, y0);
    ck_poison(y1, (ny + GUARD) * sizeof(float));
    fn(&s, oh, ow, x, w, b, act, y1);
    if (memcmp(y0, y1, ny * sizeof(float)) != 0) {
        ck_fail("t %d: dilated depthwise %zux%zu d%zux%zu differs from the "
                "reference", t, s.kh, s.kw, s.dilation_h, s.dilation_w);
    }
    if (!guard_ok(y1, ny)) {
        ck_fail("t %d: wrote past the output", t);
    }
done:
    free(x);
    free(w);
    free(b);
    free(y0);
    free(y1);
}

/* ---- transpose and pad --------------------------------------------------- */

static void check_transpose_one(int t)
{
    const size_t nd = 1 + (size_t)t % KERN_TENSOR_MAX_RANK;
    size_t s[KERN_TENSOR_MAX_RANK], perm[KERN_TENSOR_MAX_RANK], n = 1;
    for (size_t i = 0; i < nd; i++) {
        s[i] = (size_t)ck_randi(1, nd <= 2 ? 70 : 9);
        perm[i] = i;
        n *= s[i];
    }
    for (size_t i = nd; i > 1; i--) {
        const size_t j = (size_t)ck_randi(0, (int)i - 1);
        const size_t tmp = perm[i - 1];
        perm[i - 1] = perm[j];
        perm[j] = tmp;
    }
    float *x = alloc_f(n), *y = alloc_f(n);
    if (!x || !y) {
        ck_fail("out of memory");
        goto done;
    }
    ck_fill_f32(x, n, -1.0f, 1.0f);
    ck_poison(y, (n + GUARD) * sizeof(float));
    if (kern_transpose_f32(s, nd, perm, x, y) != KERN_OK) {
        ck_fail("t %d: transpose failed", t);
        goto done;
    }
    size_t xs[KERN_TENSOR_MAX_RANK];
    xs[nd - 1] = 1;
    for (size_t i = nd - 1; i > 0; i--) {
        xs[i - 1] = xs[i] * s[i];
    }
    for (size_t j = 0; j < n; j++) {
        size_t r = j, xi = 0;
        for (size_t a = nd; a-- > 0;) {
            xi += (r % s[perm[a]]) * xs[perm[a]];
            r /= s[perm[a]];
        }
        if (memcmp(&y[j], &x[xi], sizeof(float)) != 0) {
            ck_fail("t %d: rank %zu: y[%zu] is not x[%zu]", t, nd, j, xi);
            break;
        }
    }
    if (!guard_ok(y, n)) {
        ck_fail("t %d: wrote past the output", t);
    }
done:
    free(x);
    free(y);
}

static void check_pad_one(int t)
{
    const size_t nd = 1 + (size_t)t % 4;
    size_t s[4], b[4], e[4], ys[4], n = 1, ny = 1;
    for (size_t i = 0; i < nd; i++) {
        s[i] = (size_t)ck_randi(1, 11);
        b[i] = (size_t)ck_randi(0, 3);
        e[i] = (size_t)ck_randi(0, 3);
        ys[i] = s[i] + b[i] + e[i];
        n *= s[i];
        ny *= ys[i];
    }
    float *x = alloc_f(n), *y = alloc_f(ny);
    if (!x || !y) {
        ck_fail("out of memory");
        goto done;
    }
    ck_fill_f32(x, n, -1.0f, 1.0f);
    ck_poison(y, (ny + GUARD) * sizeof(float));
    if (kern_pad_f32(s, nd, b, e, -3.5f, x, y) != KERN_OK) {
        ck_fail("t %d: pad failed", t);
        goto done;
    }
    for (size_t j = 0; j < ny; j++) {
        size_t r = j, xi = 0, stride = 1;
        bool in = true;
        for (size_t a = nd; a-- > 0;) {
            const size_t c = r % ys[a];
            r /= ys[a];
            in = in && c >= b[a] && c < b[a] + s[a];
            xi += (c - b[a]) * stride;
            stride *= s[a];
        }
        if (y[j] != (in ? x[xi] : -3.5f)) {
            ck_fail("t %d: y[%zu] wrong", t, j);
            break;
        }
    }
    if (!guard_ok(y, ny)) {
        ck_fail("t %d: wrote past the output", t);
    }
done:
    free(x);
    free(y);
}

/* ---- benchmarks ---------------------------------------------------------- */

enum { R = 7 };

typedef void (*bench_fn)(void *ctx, int which);

static void bench(const char *what, bench_fn fn, void *ctx)
{
    double tr[R], tf[R];
    fn(ctx, 0); /* warm */
    fn(ctx, 1);
    for (int r = 0; r < R; r++) {
        double t0 = ck_now_ns();
        fn(ctx, 0);
        tr[r] = ck_now_ns() - t0;
        t0 = ck_now_ns();
        fn(ctx, 1);
        tf[r] = ck_now_ns() - t0;
    }
    ck_bench_report(what, ck_median(tr, R), ck_median(tf, R));
}

struct deconv_ctx {
    struct kern_conv_transpose2d_shape s;
    size_t oh, ow;
    float *x, *w, *b, *y;
    void *work;
};

static void deconv_run(void *p, int which)
{
    struct deconv_ctx *c = p;
    if (which) {
        (void)kern_conv_transpose2d_gemm(&c->s, c->oh, c->ow, c->x, c->w,
                                         c->b, c->work, c->y);
    } else {
        kern_conv_transpose2d_c(&c->s, c->oh, c->ow, c->x, c->w, c->b, c->y);
    }
}

static void bench_deconv(const char *what,
                         struct kern_conv_transpose2d_shape s)
{
    struct deconv_ctx c = {.s = s};
    if (kern_conv_transpose2d_out_hw(&s, &c.oh, &c.ow) != KERN_OK) {
        return;
    }
    const size_t nx = s.in_c * s.in_h * s.in_w;
    const size_t nw = s.in_c * s.out_c / s.groups * s.kh * s.kw;
    c.x = malloc(nx * 4);
    c.w = malloc(nw * 4);
    c.b = malloc(s.out_c * 4);
    c.y = malloc(s.out_c * c.oh * c.ow * 4);
    c.work = malloc(kern_conv_transpose2d_work_bytes(&s));
    if (c.x && c.w && c.b && c.y && c.work) {
        ck_fill_f32(c.x, nx, -1, 1);
        ck_fill_f32(c.w, nw, -1, 1);
        ck_fill_f32(c.b, s.out_c, -1, 1);
        bench(what, deconv_run, &c);
    }
    free(c.x);
    free(c.w);
    free(c.b);
    free(c.y);
    free(c.work);
}

struct conv_ctx {
    struct kern_conv2d_shape s;
    size_t oh, ow;
    float *x, *w, *y;
    void *work;
};

static void conv_run(void *p, int which)
{
    struct conv_ctx *c = p;
    const bool dw = c->s.groups == c->s.in_c && c->s.out_c == c->s.in_c;
    if (which) {
        (void)kern_conv2d_f32(&c->s, c->x, c->w, NULL, 0, c->work, c->y);
    } else if (dw) {
        const struct kern_dwconv2d_shape ds = kern_conv2d_dw_shape(&c->s);
        kern_dwconv2d_c(&ds, c->oh, c->ow, c->x, c->w, NULL, 0, c->y);
    } else {
        kern_conv2d_c(&c->s, c->oh, c->ow, c->x, c->w, NULL, 0, NULL, c->y);
    }
}

static void bench_conv(const char *what, struct kern_conv2d_shape s)
{
    struct conv_ctx c = {.s = s};
    if (kern_conv2d_out_hw(&s, &c.oh, &c.ow) != KERN_OK) {
        return;
    }
    const size_t nx = s.in_c * s.in_h * s.in_w;
    const size_t nw = s.out_c * s.in_c / s.groups * s.kh * s.kw;
    const size_t wb = kern_conv2d_work_bytes(&s);
    c.x = malloc(nx * 4);
    c.w = malloc(nw * 4);
    c.y = malloc(s.out_c * c.oh * c.ow * 4);
    c.work = wb ? malloc(wb) : NULL;
    if (c.x && c.w && c.y && (c.work || !wb)) {
        ck_fill_f32(c.x, nx, -1, 1);
        ck_fill_f32(c.w, nw, -1, 1);
        bench(what, conv_run, &c);
    }
    free(c.x);
    free(c.w);
    free(c.y);
    free(c.work);
}

struct tr_ctx {
    size_t s[5], perm[5], nd, n;
    float *x, *y;
};

static void tr_run(void *p, int which)
{
    struct tr_ctx *c = p;
    if (which) {
        (void)kern_transpose_f32(c->s, c->nd, c->perm, c->x, c->y);
        return;
    }
    /* the index arithmetic, one element at a time */
    size_t xs[5];
    xs[c->nd - 1] = 1;
    for (size_t i = c->nd - 1; i > 0; i--) {
        xs[i - 1] = xs[i] * c->s[i];
    }
    for (size_t j = 0; j < c->n; j++) {
        size_t r = j, xi = 0;
        for (size_t a = c->nd; a-- > 0;) {
            xi += (r % c->s[c->perm[a]]) * xs[c->perm[a]];
            r /= c->s[c->perm[a]];
        }
        c->y[j] = c->x[xi];
    }
}

static void bench_transpose(const char *what, const size_t *s,
                            const size_t *perm, size_t nd)
{
    struct tr_ctx c = {.nd = nd, .n = 1};
    for (size_t i = 0; i < nd; i++) {
        c.s[i] = s[i];
        c.perm[i] = perm[i];
        c.n *= s[i];
    }
    c.x = malloc(c.n * 4);
    c.y = malloc(c.n * 4);
    if (c.x && c.y) {
        ck_fill_f32(c.x, c.n, -1, 1);
        bench(what, tr_run, &c);
    }
    free(c.x);
    free(c.y);
}

struct rs_ctx {
    struct kern_resize_shape s;
    float *x, *y;
};

/* The definition a pixel at a time: coordinates per output, no tables. */
static void rs_run(void *p, int which)
{
    struct rs_ctx *c = p;
    const struct kern_resize_shape *s = &c->s;
    if (which) {
        (void)kern_resize_f32(s, c->x, c->y);
        return;
    }
    const float sh = s->scale_h ? s->scale_h
                                : (float)s->out_h / (float)s->in_h;
    const float sw = s->scale_w ? s->scale_w
                                : (float)s->out_w / (float)s->in_w;
    for (size_t p0 = 0; p0 < s->planes; p0++) {
        const float *xp = c->x + p0 * s->in_h * s->in_w;
        for (size_t oy = 0; oy < s->out_h; oy++) {
            for (size_t ox = 0; ox < s->out_w; ox++) {
                float cy = ((float)oy + 0.5f) / sh - 0.5f;
                float cx = ((float)ox + 0.5f) / sw - 0.5f;
                float v;
                if (s->mode == KERN_RESIZE_NEAREST) {
                    /* asymmetric, floor */
                    const size_t iy = (size_t)((float)oy / sh);
                    const size_t ix = (size_t)((float)ox / sw);
                    v = xp[(iy < s->in_h ? iy : s->in_h - 1) * s->in_w +
                           (ix < s->in_w ? ix : s->in_w - 1)];
                } else {
                    cy = cy < 0 ? 0 : cy > (float)(s->in_h - 1)
                                          ? (float)(s->in_h - 1) : cy;
                    cx = cx < 0 ? 0 : cx > (float)(s->in_w - 1)
                                          ? (float)(s->in_w - 1) : cx;
                    const size_t y0 = (size_t)cy, x0 = (size_t)cx;
                    const size_t y1 = y0 + 1 < s->in_h ? y0 + 1 : y0;
                    const size_t x1 = x0 + 1 < s->in_w ? x0 + 1 : x0;
                    const float ly = cy - (float)y0, lx = cx - (float)x0;
                    const float *r0 = xp + y0 * s->in_w;
                    const float *r1 = xp + y1 * s->in_w;
                    v = (1 - ly) * ((1 - lx) * r0[x0] + lx * r0[x1]) +
                        ly * ((1 - lx) * r1[x0] + lx * r1[x1]);
                }
                c->y[(p0 * s->out_h + oy) * s->out_w + ox] = v;
            }
        }
    }
}

static void bench_resize(const char *what, struct kern_resize_shape s)
{
    struct rs_ctx c = {.s = s};
    c.x = malloc(s.planes * s.in_h * s.in_w * 4);
    c.y = malloc(s.planes * s.out_h * s.out_w * 4);
    if (c.x && c.y) {
        ck_fill_f32(c.x, s.planes * s.in_h * s.in_w, -1, 1);
        bench(what, rs_run, &c);
    }
    free(c.x);
    free(c.y);
}

struct dwd_ctx {
    kern_dwconv2d_fn fn;
    struct kern_dwconv2d_shape s;
    size_t oh, ow;
    float *x, *w, *y;
};

static void dwd_run(void *p, int which)
{
    struct dwd_ctx *c = p;
    (which ? c->fn : kern_dwconv2d_c)(&c->s, c->oh, c->ow, c->x, c->w, NULL,
                                      0, c->y);
}

/* The dilated depthwise loop on this level against the C reference (the
 * definition, a tap at a time with bounds tests). */
static void bench_dw_dil(kern_dwconv2d_fn fn)
{
    struct dwd_ctx c = {.fn = fn, .s = {.batch = 1, .channels = 64,
        .in_h = 32, .in_w = 32, .kh = 3, .kw = 3, .stride_h = 1,
        .stride_w = 1, .pad_top = 2, .pad_left = 2, .pad_bottom = 2,
        .pad_right = 2, .dilation_h = 2, .dilation_w = 2}};
    if (kern_dwconv2d_out_hw(&c.s, &c.oh, &c.ow) != KERN_OK) {
        return;
    }
    c.x = malloc(64 * 32 * 32 * 4);
    c.w = malloc(64 * 9 * 4);
    c.y = malloc(64 * c.oh * c.ow * 4);
    if (c.x && c.w && c.y) {
        ck_fill_f32(c.x, 64 * 32 * 32, -1, 1);
        ck_fill_f32(c.w, 64 * 9, -1, 1);
        bench("dwconv2d 64 3x3 d2 32x32", dwd_run, &c);
    }
    free(c.x);
    free(c.w);
    free(c.y);
}

static void run_benchmarks(void)
{
    bench_resize("resize nearest x2 128x20x20",
                 (struct kern_resize_shape){.planes = 128, .in_h = 20,
                     .in_w = 20, .out_h = 40, .out_w = 40, .scale_h = 2,
                     .scale_w = 2, .mode = KERN_RESIZE_NEAREST,
                     .coord = KERN_RESIZE_ASYMMETRIC,
                     .nearest = KERN_NEAREST_FLOOR});
    bench_resize("resize bilinear x2 64x32x32",
                 (struct kern_resize_shape){.planes = 64, .in_h = 32,
                     .in_w = 32, .out_h = 64, .out_w = 64,
                     .mode = KERN_RESIZE_LINEAR,
                     .coord = KERN_RESIZE_PYTORCH_HALF_PIXEL});
    /* a UNet's up-convolution, a DCGAN's, a 1-D decoder's */
    bench_deconv("conv_transpose2d 64->32 k2s2 16x16",
                 (struct kern_conv_transpose2d_shape){.batch = 1,
                     .in_c = 64, .in_h = 16, .in_w = 16, .out_c = 32,
                     .kh = 2, .kw = 2, .stride_h = 2, .stride_w = 2,
                     .groups = 1});
    bench_deconv("conv_transpose2d 64->32 k4s2p1 16x16",
                 (struct kern_conv_transpose2d_shape){.batch = 1,
                     .in_c = 64, .in_h = 16, .in_w = 16, .out_c = 32,
                     .kh = 4, .kw = 4, .stride_h = 2, .stride_w = 2,
                     .pad_top = 1, .pad_left = 1, .pad_bottom = 1,
                     .pad_right = 1, .groups = 1});
    bench_deconv("conv_transpose1d 32->32 k4s2 L256",
                 (struct kern_conv_transpose2d_shape){.batch = 1,
                     .in_c = 32, .in_h = 1, .in_w = 256, .out_c = 32,
                     .kh = 1, .kw = 4, .stride_h = 1, .stride_w = 2,
                     .groups = 1});
    bench_conv("conv2d 32->32 3x3 d2 32x32",
               (struct kern_conv2d_shape){.batch = 1, .in_c = 32,
                   .in_h = 32, .in_w = 32, .out_c = 32, .kh = 3, .kw = 3,
                   .stride_h = 1, .stride_w = 1, .pad_top = 2,
                   .pad_left = 2, .pad_bottom = 2, .pad_right = 2,
                   .groups = 1, .dilation_h = 2, .dilation_w = 2});
    bench_conv("conv1d 64->64 k3 d4 L512 (TCN)",
               (struct kern_conv2d_shape){.batch = 1, .in_c = 64,
                   .in_h = 1, .in_w = 512, .out_c = 64, .kh = 1, .kw = 3,
                   .stride_h = 1, .stride_w = 1, .pad_left = 8,
                   .groups = 1, .dilation_h = 1, .dilation_w = 4});
    const size_t s2[2] = {512, 384}, p2[2] = {1, 0};
    bench_transpose("transpose 512x384", s2, p2, 2);
    const size_t sn[4] = {1, 58, 28, 28}, pn[4] = {0, 2, 3, 1};
    bench_transpose("transpose NCHW->NHWC 58x28x28", sn, pn, 4);
    const size_t ss[5] = {1, 2, 58, 28, 28}, ps[5] = {0, 2, 1, 3, 4};
    bench_transpose("channel shuffle 2x58x28x28", ss, ps, 5);
}

void check_spatial(unsigned flags);

void check_spatial(unsigned flags)
{
    if (ck_func((const void *)kern_conv_transpose2d_gemm,
                "conv_transpose2d")) {
        for (int t = 0; t < 200; t++) {
            check_deconv_one(t);
        }
        ck_report();
    }
    if (ck_func((const void *)kern_conv2d_f32, "conv2d_dilated")) {
        for (int t = 0; t < 120; t++) {
            check_dilated_one(t);
        }
        ck_report();
    }
    struct kern_dwconv_dsp dw;
    kern_dwconv_dsp_init(&dw, flags);
    if (ck_func((const void *)dw.dwconv2d_dil, "dwconv2d_dilated")) {
        for (int t = 0; t < 200; t++) {
            check_dilated_dw_one(dw.dwconv2d_dil, t);
        }
        ck_report();
        if (ck_bench_on()) {
            bench_dw_dil(dw.dwconv2d_dil);
        }
    }
    if (ck_func((const void *)kern_transpose_f32, "transpose")) {
        for (int t = 0; t < 300; t++) {
            check_transpose_one(t);
        }
        ck_report();
    }
    if (ck_func((const void *)kern_pad_f32, "pad")) {
        for (int t = 0; t < 200; t++) {
            check_pad_one(t);
        }
        ck_report();
        if (ck_bench_on()) {
            run_benchmarks();
        }
    }
}
