/* Checks of the convolution family: every path against the C reference
 * (the definition) on random shapes: 1 x 1 ones that take the direct GEMM
 * (pixel counts that are and are not multiples of the 24-column tile),
 * rectangular kernels up to 7 x 5, strides 1 to 3 per axis, asymmetric
 * padding up to 3 per side, groups, output-channel counts that leave 1, 2
 * or 3 rows in the last 4-row tile, planes whose phase pitch leaves junk
 * columns and planes without, batch 1 to 3 (each sample of a batch also
 * run alone on the packed path: the same bits), with and without bias, each
 * fused activation, output-channel counts that span several 16-channel
 * blocks of packed weights or end inside one. Outputs are poisoned
 * beforehand, so an unwritten value fails; a guard after each output, one
 * after the scratch (sized exactly as kern_conv2d_work_bytes says) and one
 * after the packed weights (kern_conv2d_packed_bytes) must stay untouched.
 *
 * The packed tile's K blocks run at this host's size and at 8, 16 and 40
 * steps (running sums kept between blocks: the same bits as unblocked).
 *
 * Both entry points run on each shape: raw weights and weights packed by
 * kern_conv2d_pack_f32; on one path the two must give the same bits
 * (their tiles add the same terms in the same order) except for a 1 x 1
 * convolution on a plane under 24 pixels, whose raw path takes dot
 * products. On ungrouped shapes, and grouped ones whose groups are whole
 * blocks of 8 channels in and out, the packed path also runs every pair
 * of NCHW and NCHW8c layouts (input channel counts up to 40, whole and
 * partial blocks of 8), which must give the NCHW result's bits after
 * conversion (check_layouts).
 *
 * Tolerance: both paths add the K terms in the same order from the bias,
 * the vector path with fused multiply-adds, so each differs from the exact
 * sum by at most about (K + 1) FLT_EPSILON S, S = |bias| + sum |w x|; the
 * check allows 2 (K + 2) FLT_EPSILON S per output. */
#include <float.h>
#include <stdbool.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checkkern.h"
#include "conv.h"
#include "layout.h"

enum { GUARD = 64 };

static void random_shape(struct kern_conv2d_shape *s, size_t *oh,
                         size_t *ow, int t)
{
    for (;;) {
        s->batch = (size_t)ck_randi(1, 2);
        s->groups = (size_t)(t % 5 == 4 ? ck_randi(2, 3) : 1);
        s->in_c = s->groups * (size_t)ck_randi(1, 6);
        if (t % 6 == 5 && s->groups == 1) { /* whole and partial blocks */
            s->in_c = (size_t)ck_randi(7, 40);
        }
        s->out_c = s->groups * (size_t)ck_randi(1, t % 7 == 6 ? 40 : 11);
        if (t % 10 == 9) { /* groups of whole blocks: blocked layouts too */
            s->in_c = s->groups * 8 * (size_t)ck_randi(1, 2);
            s->out_c = s->groups * 8 * (size_t)ck_randi(1, 3);
        }
        if (s->groups == s->in_c && s->out_c == s->in_c) {
            s->out_c *= 2; /* depthwise is the dwconv family's */
        }
        if (t % 4 == 0) { /* the direct 1 x 1 GEMM */
            s->kh = s->kw = 1;
            s->stride_h = s->stride_w = 1;
            s->pad_top = s->pad_left = s->pad_bottom = s->pad_right = 0;
        } else {
            s->kh = (size_t)ck_randi(1, 7);
            s->kw = (size_t)ck_randi(1, 5);
            s->stride_h = (size_t)ck_randi(1, 3);
            s->stride_w = (size_t)ck_randi(1, 3);
            s->pad_top = (size_t)ck_randi(0, 3);
            s->pad_left = (size_t)ck_randi(0, 3);
            s->pad_bottom = (size_t)ck_randi(0, 3);
            s->pad_right = (size_t)ck_randi(0, 3);
        }
        if (t % 12 == 11) { /* 1 x 1 unpadded, strided: read in place */
            s->kh = s->kw = 1;
            s->pad_top = s->pad_left = s->pad_bottom = s->pad_right = 0;
        }
        s->in_h = (size_t)ck_randi(1, 30);
        s->in_w = (size_t)ck_randi(1, t % 3 ? 20 : 70);
        if (s->kh == 1 && s->kw == 1 && s->groups == 1 && t % 3 == 2) {
            /* more output channels than input pixels, batch 3: the 1 x 1
             * path that runs the batch as GEMM columns */
            s->batch = 3;
            s->in_h = (size_t)ck_randi(1, 4);
            s->in_w = (size_t)ck_randi(1, 5);
            s->out_c = s->in_h * s->in_w + (size_t)ck_randi(1, 30);
        }
        if (kern_conv2d_out_hw(s, oh, ow) == KERN_OK) {
            return;
        }
    }
}

static double magnitude(const struct kern_conv2d_shape *s, size_t oh,
                        size_t ow, const float *x, const float *w,
                        const float *bias, size_t i)
{
    const size_t ox = i % ow, oy = i / ow % oh;
    const size_t oc = i / (ow * oh) % s->out_c, b = i / (ow * oh * s->out_c);
    const size_t icg = s->in_c / s->groups, g = oc / (s->out_c / s->groups);
    double m = bias ? fabs((double)bias[oc]) : 0.0;
    for (size_t ci = 0; ci < icg; ci++) {
        const float *xc = x + (b * s->in_c + g * icg + ci) * s->in_h * s->in_w;
        for (size_t ky = 0; ky < s->kh; ky++) {
            const size_t iy = oy * s->stride_h + ky - s->pad_top;
            for (size_t kx = 0; iy < s->in_h && kx < s->kw; kx++) {
                const size_t ix = ox * s->stride_w + kx - s->pad_left;
                if (ix < s->in_w) {
                    m += fabs((double)w[((oc * icg + ci) * s->kh + ky) *
                                            s->kw + kx] *
                              (double)xc[iy * s->in_w + ix]);
                }
            }
        }
    }
    return m;
}

/* y against the reference y0, within the tolerance above. */
static void compare(const char *path, const struct kern_conv2d_shape *sp,
                    size_t oh, size_t ow, const float *x, const float *w,
                    const float *bias, int act, const float *y0,
                    const float *y)
{
    const struct kern_conv2d_shape s = *sp;
    const size_t K = s.in_c / s.groups * s.kh * s.kw;
    const size_t ny = s.batch * s.out_c * oh * ow;
    for (size_t i = 0; i < ny; i++) {
        const double tol = 2.0 * ((double)K + 2.0) * FLT_EPSILON *
                           magnitude(&s, oh, ow, x, w, bias, i);
        if (!(fabs((double)y[i] - (double)y0[i]) <= tol)) {
            ck_fail("%s: b%zu %zux%zux%zu -> %zu k%zux%zu s%zux%zu "
                    "p%zu,%zu,%zu,%zu g%zu act%d bias%d: y[%zu] = %g, "
                    "want %g (tol %g)", path, s.batch, s.in_c, s.in_h,
                    s.in_w, s.out_c, s.kh, s.kw, s.stride_h, s.stride_w,
                    s.pad_top, s.pad_left, s.pad_bottom, s.pad_right,
                    s.groups, act, bias != NULL, i, (double)y[i],
                    (double)y0[i], tol);
            return;
        }
    }
}

/* Bits of a blocked tensor's lanes past channel c: all must be +0. */
static bool padding_zero(const float *t, size_t batch, size_t c, size_t hw)
{
    const size_t cb = (c + KERN_CBLOCK - 1) / KERN_CBLOCK;
    for (size_t b = 0; b < batch; b++) {
        for (size_t p = 0; p < hw; p++) {
            for (size_t l = c % KERN_CBLOCK; c % KERN_CBLOCK && l < 8; l++) {
                const float v = t[((b * cb + cb - 1) * hw + p) * 8 + l];
                uint32_t u;
                memcpy(&u, &v, sizeof u);
                if (u != 0) {
                    return false;
                }
            }
        }
    }
    return true;
}

/* The output pixels [a, b) of every plane, cut at random points (the
 * documented row split among threads), on this path in layouts il > ol,
 * against `full`, the whole call's n floats: each part writes the whole
 * call's bits at its pixels and nothing at the others (they keep the
 * poison), and the parts together are the whole. */
static void check_pixel_split(const struct kern_conv_dsp *isa,
                              const struct kern_conv2d_shape *s, size_t oh,
                              size_t ow, int il, int ol, const float *x,
                              const float *wp, const float *bias, int act,
                              unsigned char *work, size_t wb,
                              const float *full, size_t n, float *yp)
{
    const size_t hw = oh * ow;
    size_t a = (size_t)ck_randi(0, (int)hw), b = (size_t)ck_randi(0, (int)hw);
    if (a > b) {
        const size_t t = a;
        a = b;
        b = t;
    }
    const size_t cuts[4] = {0, a, b, hw};
    ck_poison(yp, n * sizeof *yp);
    for (int part = 0; part < 3; part++) {
        /* the middle part first, on a poisoned output */
        static const int order[3] = {1, 0, 2};
        const size_t lo = cuts[order[part]], hi = cuts[order[part] + 1];
        if (lo == hi) {
            continue;
        }
        ck_poison(work, wb);
        isa->conv2d_packed(s, oh, ow, il, ol, x, wp, bias, act, work, yp, lo,
                           hi);
        if (part > 0) {
            continue;
        }
        uint32_t poison;
        ck_poison(&poison, sizeof poison);
        for (size_t i = 0; i < n; i++) {
            const size_t p = (ol ? i / KERN_CBLOCK : i) % hw;
            const bool in = p >= lo && p < hi;
            if (in ? memcmp(yp + i, full + i, sizeof *yp) != 0
                   : memcmp(yp + i, &poison, sizeof poison) != 0) {
                ck_fail("%zux%zux%zu -> %zu k%zux%zu s%zux%zu b%zu "
                        "layouts %d>%d: pixels [%zu, %zu) of %zu alone %s "
                        "pixel %zu", s->in_c, s->in_h, s->in_w, s->out_c,
                        s->kh, s->kw, s->stride_h, s->stride_w, s->batch,
                        il, ol, lo, hi, hw, in ? "gave other bits at"
                                               : "wrote", p);
                return;
            }
        }
    }
    if (memcmp(yp, full, n * sizeof *yp) != 0) {
        ck_fail("%zux%zux%zu -> %zu k%zux%zu layouts %d>%d: pixels cut at "
                "%zu and %zu of %zu differ from the whole", s->in_c, s->in_h,
                s->in_w, s->out_c, s->kh, s->kw, il, ol, a, b, hw);
    }
}

/* Every blocked combination of layouts on this path against y, the NCHW
 * result of the same path: the same bits once converted (the C
 * definitions of the conversions), the output's padding lanes +0, its
 * guard intact. The blocked input's padding lanes hold NaN, so a path that
 * let them into a sum fails. At batch 1, channels [8, out_c) are also run
 * on their own (the documented channel split) and must give the same
 * bits. */
static void check_layouts(const struct kern_conv_dsp *isa,
                          const struct kern_conv2d_shape *s, size_t oh,
                          size_t ow, const float *x, const float *wp,
                          const float *bias, int act, unsigned char *work,
                          size_t wb, const float *y, const float *guard)
{
    const size_t hw_in = s->in_h * s->in_w, hw_out = oh * ow;
    const size_t nxb = s->batch * (s->in_c + 7) / 8 * 8 * hw_in;
    const size_t nyb = s->batch * (s->out_c + 7) / 8 * 8 * hw_out;
    const size_t ny = s->batch * s->out_c * hw_out;
    const size_t K = s->in_c * s->kh * s->kw;
    float *xb = malloc(nxb * sizeof *xb);
    float *yb = malloc((nyb + GUARD) * sizeof *yb);
    float *yn = malloc((nyb > ny ? nyb : ny) * sizeof *yn);
    if (!xb || !yb || !yn) {
        ck_fail("out of memory");
        goto done;
    }
    kern_nchw_to_nchw8c_c(s->batch, s->in_c, hw_in, x, xb);
    if (s->in_c % 8) {
        const size_t cb = (s->in_c + 7) / 8;
        for (size_t b = 0; b < s->batch; b++) {
            for (size_t p = 0; p < hw_in; p++) {
                for (size_t l = s->in_c % 8; l < 8; l++) {
                    xb[((b * cb + cb - 1) * hw_in + p) * 8 + l] = NAN;
                }
            }
        }
    }
    for (int il = 0; il < 2; il++) {
        for (int ol = 0; ol < 2; ol++) {
            const size_t n = ol ? nyb : ny;
            if (!il && !ol) {
                /* y itself */
                check_pixel_split(isa, s, oh, ow, il, ol, x, wp, bias, act,
                                  work, wb, y, n, yn);
                continue;
            }
            ck_poison(yb, n * sizeof *yb);
            ck_poison(work, wb);
            memcpy(yb + n, guard, GUARD * sizeof *guard);
            isa->conv2d_packed(s, oh, ow, il, ol, il ? xb : x, wp, bias, act,
                               work, yb, 0, oh * ow);
            if (memcmp(yb + n, guard, GUARD * sizeof *guard) != 0) {
                ck_fail("layouts %d>%d: wrote past the output", il, ol);
            }
            if (ol && !padding_zero(yb, s->batch, s->out_c, hw_out)) {
                ck_fail("layouts %d>%d %zu channels: padding lanes not "
                        "zero", il, ol, s->out_c);
            }
            check_pixel_split(isa, s, oh, ow, il, ol, il ? xb : x, wp, bias,
                              act, work, wb, yb, n, yn);
            const float *yc = yb;
            if (ol) {
                kern_nchw8c_to_nchw_c(s->batch, s->out_c, hw_out, yb, yn);
                yc = yn;
            }
            if (memcmp(yc, y, ny * sizeof *y) != 0) {
                ck_fail("%zux%zux%zu -> %zu k%zux%zu s%zux%zu p%zu,%zu,%zu,"
                        "%zu b%zu act%d: layouts %d>%d give other bits than "
                        "NCHW", s->in_c, s->in_h, s->in_w, s->out_c, s->kh,
                        s->kw, s->stride_h, s->stride_w, s->pad_top,
                        s->pad_left, s->pad_bottom, s->pad_right, s->batch,
                        act, il, ol);
            }
            if (s->batch != 1 || s->out_c <= 8 || s->groups != 1) {
                continue;
            }
            /* channels [8, out_c) alone, over the whole call's output */
            struct kern_conv2d_shape part = *s;
            part.out_c -= 8;
            memcpy(yn, yb, n * sizeof *yb);
            ck_poison(yb + 8 * hw_out, (n - 8 * hw_out) * sizeof *yb);
            isa->conv2d_packed(&part, oh, ow, il, ol, il ? xb : x,
                               wp + 8 * K, bias ? bias + 8 : NULL, act, work,
                               yb + 8 * hw_out, 0, oh * ow);
            if (memcmp(yn, yb, n * sizeof *yb) != 0) {
                ck_fail("%zux%zux%zu -> %zu k%zux%zu layouts %d>%d: "
                        "channels [8, %zu) alone differ", s->in_c, s->in_h,
                        s->in_w, s->out_c, s->kh, s->kw, il, ol, s->out_c);
            }
            if (memcmp(yb + n, guard, GUARD * sizeof *guard) != 0) {
                ck_fail("layouts %d>%d: channel split wrote past the output",
                        il, ol);
            }
        }
    }
done:
    free(xb);
    free(yb);
    free(yn);
}

static void check_one(const struct kern_conv_dsp *isa,
                      const struct kern_conv_dsp *ref, int t)
{
    struct kern_conv2d_shape s = {0};
    size_t oh, ow;
    random_shape(&s, &oh, &ow, t);
    /* K blocks of the packed tile: the default (this host's cache), or
     * blocks of 8, 16 or 40 steps, so that shallow shapes split their
     * depth too, into blocks that do and do not divide it */
    static const size_t kblocks[] = {0, 8, 16, 40};
    kern_conv_set_kblock(kblocks[(t / 4) % 4]);
    const size_t K = s.in_c / s.groups * s.kh * s.kw;
    const size_t nx = s.batch * s.in_c * s.in_h * s.in_w;
    const size_t nw = s.out_c * K;
    const size_t ny = s.batch * s.out_c * oh * ow;
    const size_t wb = kern_conv2d_work_bytes(&s);
    const size_t pb = kern_conv2d_packed_bytes(&s);
    float *x = malloc(nx * sizeof *x), *w = malloc(nw * sizeof *w);
    float *b = malloc(s.out_c * sizeof *b);
    float *y0 = malloc(ny * sizeof *y0);
    float *y1 = malloc((ny + GUARD) * sizeof *y1);
    float *y2 = malloc((ny + GUARD) * sizeof *y2);
    float *wp = malloc(pb + sizeof(float) * GUARD);
    /* one byte more: odd checks pass the scratch at an odd address, which
     * the contract allows */
    unsigned char *work0 = malloc(wb + 1 + GUARD);
    unsigned char *work = work0 ? work0 + t % 2 : NULL;
    float guard[GUARD];
    unsigned char wguard[GUARD];
    if (!x || !w || !b || !y0 || !y1 || !y2 || !wp || !work) {
        ck_fail("out of memory");
        goto done;
    }
    if (wb == 0 || pb % (sizeof(float) * KERN_CONV_OCB) != 0 ||
        pb / sizeof(float) <
            s.groups * KERN_CONV_OCB *
                ((s.out_c / s.groups + KERN_CONV_OCB - 1) / KERN_CONV_OCB) *
                K) {
        ck_fail("scratch %zu or packed size %zu wrong for a valid shape", wb,
                pb);
        goto done;
    }
    ck_fill_f32(x, nx, -1.0f, 1.0f);
    ck_fill_f32(w, nw, -1.0f, 1.0f);
    ck_fill_f32(b, s.out_c, -1.0f, 1.0f);
    ck_fill_f32(guard, GUARD, -1.0f, 1.0f);
    for (size_t i = 0; i < GUARD; i++) {
        wguard[i] = (unsigned char)ck_rand();
    }
    ck_poison(y0, ny * sizeof *y0);
    ck_poison(y1, ny * sizeof *y1);
    ck_poison(y2, ny * sizeof *y2);
    ck_poison(work, wb);
    memcpy(y1 + ny, guard, sizeof guard);
    memcpy(y2 + ny, guard, sizeof guard);
    memcpy(wp + pb / sizeof(float), guard, sizeof guard);
    memcpy(work + wb, wguard, sizeof wguard);
    const int act = t % 3;
    const float *bias = t % 5 != 1 ? b : NULL;
    if (act) {
        /* sums beyond 6 so that the clamp is exercised */
        for (size_t i = 0; i < nw; i++) {
            w[i] *= 4.0f;
        }
    }
    if (kern_conv2d_pack_f32(&s, w, wp) != KERN_OK) {
        ck_fail("kern_conv2d_pack_f32 refused a valid shape");
        goto done;
    }
    ref->conv2d(&s, oh, ow, x, w, bias, act, NULL, y0);
    isa->conv2d(&s, oh, ow, x, w, bias, act, work, y1);
    compare("raw", &s, oh, ow, x, w, bias, act, y0, y1);
    ck_poison(work, wb);
    isa->conv2d_packed(&s, oh, ow, KERN_LAYOUT_NCHW, KERN_LAYOUT_NCHW, x, wp,
                       bias, act, work, y2, 0, oh * ow);
    compare("packed", &s, oh, ow, x, w, bias, act, y0, y2);
    if (s.batch > 1) {
        /* each sample alone: the same bits as within the batch (a path
         * may order its work across samples, never change a sum) */
        struct kern_conv2d_shape one = s;
        one.batch = 1;
        const size_t sx = nx / s.batch, sy = ny / s.batch;
        for (size_t i = 0; i < s.batch; i++) {
            ck_poison(y1, sy * sizeof *y1);
            isa->conv2d_packed(&one, oh, ow, KERN_LAYOUT_NCHW,
                               KERN_LAYOUT_NCHW, x + i * sx, wp, bias, act,
                               work, y1, 0, oh * ow);
            if (memcmp(y1, y2 + i * sy, sy * sizeof *y1) != 0) {
                ck_fail("%zux%zux%zu -> %zu k%zux%zu s%zux%zu b%zu: sample "
                        "%zu alone gave other bits than in the batch",
                        s.in_c, s.in_h, s.in_w, s.out_c, s.kh, s.kw,
                        s.stride_h, s.stride_w, s.batch, i);
            }
        }
        ck_poison(y1, ny * sizeof *y1);
        isa->conv2d(&s, oh, ow, x, w, bias, act, work, y1);
    }
    if (s.groups == 1 || (s.in_c / s.groups % 8 == 0 &&
                          s.out_c / s.groups % 8 == 0)) {
        check_layouts(isa, &s, oh, ow, x, wp, bias, act, work, wb, y2,
                      guard);
    }
    const bool dots = s.kh == 1 && s.kw == 1 && s.stride_h == 1 &&
                      s.stride_w == 1 && !s.pad_top && !s.pad_left &&
                      !s.pad_bottom && !s.pad_right &&
                      oh * ow < KERN_CONV_NR;
    if (!dots && memcmp(y1, y2, ny * sizeof *y1) != 0) {
        ck_fail("%zux%zux%zu -> %zu k%zux%zu s%zux%zu g%zu: raw and packed "
                "weights gave different bits", s.in_c, s.in_h, s.in_w,
                s.out_c, s.kh, s.kw, s.stride_h, s.stride_w, s.groups);
    }
    if (memcmp(guard, y1 + ny, sizeof guard) != 0 ||
        memcmp(guard, y2 + ny, sizeof guard) != 0) {
        ck_fail("%zux%zux%zu k%zux%zu: wrote past the output", s.in_c,
                s.in_h, s.in_w, s.kh, s.kw);
    }
    if (memcmp(guard, wp + pb / sizeof(float), sizeof guard) != 0) {
        ck_fail("%zux%zux%zu k%zux%zu: packing wrote past its size",
                s.in_c, s.in_h, s.in_w, s.kh, s.kw);
    }
    if (memcmp(wguard, work + wb, sizeof wguard) != 0) {
        ck_fail("%zux%zux%zu k%zux%zu: wrote past the scratch", s.in_c,
                s.in_h, s.in_w, s.kh, s.kw);
    }
done:
    kern_conv_set_kblock(0);
    free(x);
    free(w);
    free(b);
    free(y0);
    free(y1);
    free(y2);
    free(wp);
    free(work0);
}

/* The MLPerf Tiny models' heaviest non-depthwise layers at batch 1, this
 * path against the reference (edgefit-bench --table conv sets them beside
 * oneDNN and XNNPACK). */
static void bench(kern_conv2d_fn fn, kern_conv2d_fn ref)
{
    static const struct kern_conv2d_shape shapes[] = {
        /* ResNet-8's 3 x 3 16 -> 16 on 32 x 32 */
        {1, 16, 32, 32, 16, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1},
        /* DS-CNN's first layer, 10 x 4 stride 2 */
        {1, 1, 49, 10, 64, 10, 4, 2, 2, 5, 1, 5, 2, 1, 1, 1},
        /* DS-CNN's pointwise 64 -> 64 on 25 x 5 */
        {1, 64, 25, 5, 64, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1},
        /* MobileNetV1 0.25's pointwise 32 -> 64 on 24 x 24 */
        {1, 32, 24, 24, 64, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1},
    };
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        const struct kern_conv2d_shape *s = &shapes[i];
        size_t oh, ow;
        kern_conv2d_out_hw(s, &oh, &ow);
        const size_t nx = s->in_c * s->in_h * s->in_w;
        const size_t nw = s->out_c * s->in_c * s->kh * s->kw;
        const size_t ny = s->out_c * oh * ow;
        float *x = malloc(nx * sizeof *x), *w = malloc(nw * sizeof *w);
        float *y = malloc(ny * sizeof *y);
        void *work = malloc(kern_conv2d_work_bytes(s));
        if (x && w && y && work) {
            ck_fill_f32(x, nx, -1.0f, 1.0f);
            ck_fill_f32(w, nw, -1.0f, 1.0f);
            enum { R = 51 };
            double tr[R], ti[R];
            for (int r = 0; r < R; r++) {
                double t0 = ck_now_ns();
                ref(s, oh, ow, x, w, NULL, KERN_FUSE_RELU, work, y);
                tr[r] = ck_now_ns() - t0;
                t0 = ck_now_ns();
                fn(s, oh, ow, x, w, NULL, KERN_FUSE_RELU, work, y);
                ti[r] = ck_now_ns() - t0;
            }
            char what[64];
            snprintf(what, sizeof what, "conv2d %zu>%zu %zux%zu k%zux%zu s%zu",
                     s->in_c, s->out_c, s->in_h, s->in_w, s->kh, s->kw,
                     s->stride_h);
            ck_bench_report(what, ck_median(tr, R), ck_median(ti, R));
        }
        free(x);
        free(w);
        free(y);
        free(work);
    }
}

void check_conv(unsigned flags);

void check_conv(unsigned flags)
{
    struct kern_conv_dsp isa, ref;
    kern_conv_dsp_init(&isa, flags);
    kern_conv_dsp_init(&ref, 0);
    if (!ck_func2((const void *)isa.conv2d, (const void *)isa.conv2d_packed,
                  "conv2d")) {
        return;
    }
    for (int t = 0; t < 700; t++) {
        check_one(&isa, &ref, t);
    }
    if (ck_bench_on()) {
        bench(isa.conv2d, ref.conv2d);
    }
    ck_report();
}
