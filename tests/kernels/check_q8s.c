/* Checks of the q8s family (static int8, integer-only output stage and
 * add): every path against the C reference, bit for bit, over random
 * lengths (vector bodies and tails) and extreme values (INT32_MIN
 * squared, the largest shifts, clamps at and inside [-128, 127]). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checkkern.h"
#include "q8s.h"

#include "edgefit/kernels.h"

static int32_t rand_i32(void)
{
    const int32_t sp[6] = {INT32_MIN, INT32_MIN + 1, INT32_MAX, -1, 0, 1};
    const int kind = ck_randi(0, 3);
    if (kind == 0) {
        return sp[ck_randi(0, 5)];
    }
    if (kind == 1) {
        return (int32_t)ck_rand();
    }
    return ck_randi(-3000000, 3000000);
}

static void check_requant(const struct kern_q8s_dsp *isa,
                          const struct kern_q8s_dsp *ref)
{
    enum { MAXN = 133 };
    if (!ck_func((const void *)isa->requant, "q8s_requant")) {
        return;
    }
    int32_t acc[MAXN], add[MAXN], mult[MAXN], lsh[MAXN], rsh[MAXN];
    int8_t q0[MAXN], q1[MAXN];
    for (int t = 0; t < 2000; t++) {
        const size_t n = (size_t)ck_randi(1, MAXN);
        for (size_t j = 0; j < n; j++) {
            acc[j] = rand_i32();
            add[j] = t % 3 ? ck_randi(-100000, 100000) : rand_i32();
            mult[j] = t % 5 ? ck_randi(1 << 30, INT32_MAX) : rand_i32();
            const int s = ck_randi(-31, 30);
            lsh[j] = s > 0 ? s : 0;
            rsh[j] = s > 0 ? 0 : -s;
        }
        const int32_t zp = ck_randi(-128, 127);
        int32_t lo = ck_randi(-128, 127), hi = ck_randi(-128, 127);
        if (lo > hi) {
            const int32_t x = lo;
            lo = hi;
            hi = x;
        }
        ck_poison(q0, sizeof q0);
        ck_poison(q1, sizeof q1);
        ref->requant(n, acc, add, mult, lsh, rsh, zp, lo, hi, q0);
        isa->requant(n, acc, add, mult, lsh, rsh, zp, lo, hi, q1);
        if (memcmp(q0, q1, sizeof q0) != 0) {
            for (size_t j = 0; j < MAXN; j++) {
                if (q0[j] != q1[j]) {
                    ck_fail("n=%zu j=%zu acc=%d add=%d mult=%d lsh=%d rsh=%d "
                            "zp=%d: %d, want %d", n, j, acc[j], add[j],
                            mult[j], lsh[j], rsh[j], zp, q1[j], q0[j]);
                    break;
                }
            }
        }
    }
    ck_report();
}

static void check_requant_tile(const struct kern_q8s_dsp *isa,
                               const struct kern_q8s_dsp *ref)
{
    enum { MAXM = 13, MAXN = Q8S_TILE_N, LD = Q8S_TILE_N + 5 };
    if (!ck_func((const void *)isa->requant_tile, "q8s_requant_tile")) {
        return;
    }
    static int32_t acc[MAXM * LD];
    int32_t add[MAXN], mult[MAXN], lsh[MAXN], rsh[MAXN];
    static int8_t q0[MAXM * LD], q1[MAXM * LD];
    for (int t = 0; t < 1000; t++) {
        const size_t m = (size_t)ck_randi(1, MAXM);
        const size_t n = (size_t)ck_randi(1, MAXN);
        const size_t lda = n + (size_t)ck_randi(0, LD - MAXN);
        const size_t ldq = n + (size_t)ck_randi(0, LD - MAXN);
        for (size_t i = 0; i < m * lda; i++) {
            acc[i] = rand_i32();
        }
        for (size_t j = 0; j < n; j++) {
            add[j] = t % 3 ? ck_randi(-100000, 100000) : rand_i32();
            /* now and then INT32_MIN (the saturating path) */
            mult[j] = t % 17 == 0 ? rand_i32() : ck_randi(1 << 30, INT32_MAX);
            /* left shifts in a few tiles only (the hoisted variant) */
            const int s = t % 4 == 0 ? ck_randi(-31, 30) : ck_randi(-31, 0);
            lsh[j] = s > 0 ? s : 0;
            rsh[j] = s > 0 ? 0 : -s;
        }
        const int32_t zp = ck_randi(-128, 127);
        int32_t lo = ck_randi(-128, 127), hi = ck_randi(-128, 127);
        if (lo > hi) {
            const int32_t x = lo;
            lo = hi;
            hi = x;
        }
        ck_poison(q0, sizeof q0);
        ck_poison(q1, sizeof q1);
        ref->requant_tile(m, n, acc, lda, add, mult, lsh, rsh, zp, lo, hi,
                          q0, ldq);
        isa->requant_tile(m, n, acc, lda, add, mult, lsh, rsh, zp, lo, hi,
                          q1, ldq);
        if (memcmp(q0, q1, sizeof q0) != 0) {
            ck_fail("m=%zu n=%zu lda=%zu ldq=%zu: outputs differ", m, n, lda,
                    ldq);
        }
    }
    ck_report();
}

/* A scale of the float stage: a power of two now and then (products land
 * on halves: the ties), 0, a large one (products beyond int32's range
 * clamp), else a typical x_scale w_scale / y_scale. */
static float rand_fscale(void)
{
    const int kind = ck_randi(0, 9);
    if (kind == 0) {
        return ldexpf(1.0f, -ck_randi(1, 20));
    }
    if (kind == 1) {
        return ck_randi(0, 1) ? 0.0f : 1e12f;
    }
    return ldexpf((float)ck_randi(1 << 23, (1 << 24) - 1), -23 - ck_randi(3, 16));
}

/* Case t's output stage of the kp GEMM and convolution checks: per row
 * n's bias, fixed-point multiplier and shifts (extreme ones in some
 * cases), float scales, and *sc = the float stage in half the cases; the
 * zero point and a clamp range (the whole int8 range in odd cases). */
static void rand_kp_stage(size_t t, size_t n, int32_t *add, int32_t *mult,
                          int32_t *lsh, int32_t *rsh, float *fscale,
                          const float **sc, int32_t *zp, int32_t *lo,
                          int32_t *hi)
{
    for (size_t j = 0; j < n; j++) {
        add[j] = t % 3 ? ck_randi(-100000, 100000) : rand_i32();
        mult[j] = t % 4 ? ck_randi(1 << 30, INT32_MAX)
                        : ck_randi(INT32_MIN + 1, INT32_MAX);
        const int sh = t % 4 ? ck_randi(-20, 2) : ck_randi(-31, 30);
        lsh[j] = sh > 0 ? sh : 0;
        rsh[j] = sh > 0 ? 0 : -sh;
        fscale[j] = rand_fscale();
    }
    *sc = (t / 2) % 2 ? fscale : NULL;
    *zp = ck_randi(-128, 127);
    *lo = ck_randi(-128, 127);
    *hi = ck_randi(-128, 127);
    if (t % 2) {
        *lo = -128, *hi = 127;
    } else if (*lo > *hi) {
        const int32_t v = *lo;
        *lo = *hi;
        *hi = v;
    }
}


/* the float stage (ONNX Runtime's): row and tile against the C
 * reference */
static void check_requantf(const struct kern_q8s_dsp *isa,
                           const struct kern_q8s_dsp *ref)
{
    enum { MAXM = 13, MAXN = 133, LD = 140 };
    if (!ck_func((const void *)isa->requantf, "q8s_requantf") ||
        !ck_func((const void *)isa->requantf_tile, "q8s_requantf_tile")) {
        return;
    }
    static int32_t acc[MAXM * LD];
    int32_t add[MAXN];
    float scale[MAXN];
    static int8_t q0[MAXM * LD], q1[MAXM * LD];
    for (int t = 0; t < 2000; t++) {
        const size_t m = t % 2 ? 1 : (size_t)ck_randi(1, MAXM);
        const size_t n = (size_t)ck_randi(1, MAXN);
        const size_t lda = n + (size_t)ck_randi(0, LD - MAXN);
        const size_t ldq = n + (size_t)ck_randi(0, LD - MAXN);
        for (size_t i = 0; i < m * lda; i++) {
            acc[i] = t % 3 ? ck_randi(-300000, 300000) : rand_i32();
        }
        for (size_t j = 0; j < n; j++) {
            add[j] = t % 3 ? ck_randi(-100000, 100000) : rand_i32();
            scale[j] = rand_fscale();
        }
        const int32_t zp = ck_randi(-128, 127);
        int32_t lo = ck_randi(-128, 127), hi = ck_randi(-128, 127);
        if (lo > hi) {
            const int32_t x = lo;
            lo = hi;
            hi = x;
        }
        ck_poison(q0, sizeof q0);
        ck_poison(q1, sizeof q1);
        if (m == 1) {
            ref->requantf(n, acc, add, scale, zp, lo, hi, q0);
            isa->requantf(n, acc, add, scale, zp, lo, hi, q1);
        } else {
            ref->requantf_tile(m, n, acc, lda, add, scale, zp, lo, hi, q0,
                               ldq);
            isa->requantf_tile(m, n, acc, lda, add, scale, zp, lo, hi, q1,
                               ldq);
        }
        if (memcmp(q0, q1, sizeof q0) != 0) {
            ck_fail("m=%zu n=%zu lda=%zu ldq=%zu zp=%d: outputs differ", m,
                    n, lda, ldq, zp);
        }
    }
    ck_report();
}

static void check_transpose(const struct kern_q8s_dsp *isa,
                            const struct kern_q8s_dsp *ref)
{
    enum { MAXM = 70, MAXN = 70 };
    if (!ck_func((const void *)isa->transpose, "q8s_transpose")) {
        return;
    }
    static int8_t x[MAXM * MAXN], y0[MAXN * (MAXM + 3)],
        y1[MAXN * (MAXM + 3)];
    for (int t = 0; t < 300; t++) {
        const size_t m = (size_t)ck_randi(1, MAXM);
        const size_t n = (size_t)ck_randi(1, MAXN);
        const size_t ldx = n + (size_t)ck_randi(0, MAXN - (int)n);
        const size_t ldy = m + (size_t)ck_randi(0, 3);
        for (size_t i = 0; i < m * ldx; i++) {
            x[i] = (int8_t)ck_randi(-128, 127);
        }
        ck_poison(y0, sizeof y0);
        ck_poison(y1, sizeof y1);
        ref->transpose(m, n, x, ldx, y0, ldy);
        isa->transpose(m, n, x, ldx, y1, ldy);
        if (memcmp(y0, y1, sizeof y0) != 0) {
            ck_fail("m=%zu n=%zu ldx=%zu ldy=%zu: outputs differ", m, n, ldx,
                    ldy);
        }
    }
    ck_report();
}

static void check_quant(const struct kern_q8s_dsp *isa,
                        const struct kern_q8s_dsp *ref)
{
    enum { MAXN = 301 };
    if (!ck_func((const void *)isa->quant, "q8s_quant")) {
        return;
    }
    float x[MAXN];
    int8_t q0[MAXN], q1[MAXN];
    const float sp[] = {0.0f, -0.0f, 0.5f, -0.5f, 1.5f, -2.5f, 1e30f,
                        -1e30f, 3e38f, INFINITY, -INFINITY, NAN};
    /* scales whose reciprocals are not normal floats, or barely are */
    const float ssp[] = {1e-39f, 3e-39f, 1e-38f, 1e37f, 2e38f, 3.4e38f};
    for (int t = 0; t < 1500; t++) {
        const size_t n = (size_t)ck_randi(1, MAXN);
        const float scale = t % 25 == 7   ? ssp[ck_randi(0, 5)]
                            : t % 4       ? ck_randf(0.001f, 1.0f)
                                          : 1.0f;
        const int32_t zero = ck_randi(-128, 127);
        for (size_t i = 0; i < n; i++) {
            /* exact halves (scale 1), the clamp, inf and NaN; every third
             * case values within a few ulps of (k + 1/2) scale, where a
             * quotient by a multiply may round the other way */
            if (t % 3 == 2) {
                float v = ((float)ck_randi(-300, 300) + 0.5f) * scale;
                for (int u = ck_randi(-3, 3); u != 0; u += u > 0 ? -1 : 1) {
                    v = nextafterf(v, u > 0 ? INFINITY : -INFINITY);
                }
                x[i] = v;
                continue;
            }
            x[i] = ck_randi(0, 9) == 0 ? sp[ck_randi(0, 11)]
                   : t % 4            ? ck_randf(-200.0f, 200.0f)
                                      : (float)ck_randi(-300, 300) * 0.5f;
        }
        ck_poison(q0, sizeof q0);
        ck_poison(q1, sizeof q1);
        ref->quant(x, n, scale, zero, q0);
        isa->quant(x, n, scale, zero, q1);
        if (memcmp(q0, q1, sizeof q0) != 0) {
            ck_fail("n=%zu scale=%g zero=%d: outputs differ", n,
                    (double)scale, zero);
        }
    }
    ck_report();
}

static void check_add(const struct kern_q8s_dsp *isa,
                      const struct kern_q8s_dsp *ref)
{
    /* lengths from 1 to 300 and, every other draw, 256 to 1200 (where the
     * AVX-512 path tabulates each input's rescale) */
    enum { MAXN = 1201 };
    if (!ck_func((const void *)isa->add, "q8s_add")) {
        return;
    }
    int8_t a[MAXN], b[MAXN], o0[MAXN], o1[MAXN];
    for (int t = 0; t < 1000; t++) {
        struct kern_q8_add_params p;
        const int32_t zo = ck_randi(-128, 127);
        /* every fifth case the two inputs' scales equal (both rescales
         * then have the multiplier 2^30 and shift 0) */
        const float sa = ck_randf(0.001f, 1.0f);
        const float sb = t % 5 == 3 ? sa : ck_randf(0.001f, 1.0f);
        if (kern_q8_add_params_init(sa, ck_randi(-128, 127),
                                    sb, ck_randi(-128, 127),
                                    ck_randf(0.001f, 1.0f), zo,
                                    t % 2 ? zo : -128, 127,
                                    &p) != KERN_OK) {
            ck_fail("kern_q8_add_params_init refused its arguments");
            continue;
        }
        if (t % 3 == 2) {
            /* any parameters the kernel accepts: multipliers of either
             * sign, small input shifts and a large output shift, so that
             * the wrapping left shift of the sum brings the inputs'
             * rescales' last bits (their rounding) into the output */
            p.left_shift = ck_randi(0, 20);
            p.a_mult = t % 9 == 2 ? INT32_MIN : rand_i32();
            p.b_mult = rand_i32();
            p.a_shift = ck_randi(-4, 0);
            p.b_shift = ck_randi(-31, 0);
            p.out_mult = rand_i32();
            p.out_shift = ck_randi(-31, 30);
        }
        const size_t n =
            (size_t)(t % 4 < 2 ? ck_randi(1, 300) : ck_randi(256, MAXN - 1));
        for (size_t i = 0; i < n; i++) {
            a[i] = (int8_t)ck_randi(-128, 127);
            b[i] = (int8_t)ck_randi(-128, 127);
        }
        ck_poison(o0, sizeof o0);
        ck_poison(o1, sizeof o1);
        ref->add(n, a, b, &p, o0);
        isa->add(n, a, b, &p, o1);
        if (memcmp(o0, o1, sizeof o0) != 0) {
            ck_fail("n=%zu: outputs differ", n);
        }
    }
    ck_report();
}

/* ONNX Runtime's float add: random scales (ratios from 1/64 to 64, so
 * that sums reach past the clamp), zero points and clamps, lengths with
 * every tail */
static void check_addf(const struct kern_q8s_dsp *isa,
                       const struct kern_q8s_dsp *ref)
{
    enum { MAXN = 301 };
    if (!ck_func((const void *)isa->addf, "q8s_addf")) {
        return;
    }
    int8_t a[MAXN], b[MAXN], o0[MAXN], o1[MAXN];
    for (int t = 0; t < 1000; t++) {
        struct kern_q8_addf_params p;
        const int32_t zo = ck_randi(-128, 127);
        const float so = ck_randf(0.01f, 1.0f);
        if (kern_q8_addf_params_init(so * ldexpf(ck_randf(1.0f, 2.0f),
                                                 ck_randi(-6, 5)),
                                     ck_randi(-128, 127),
                                     so * ldexpf(ck_randf(1.0f, 2.0f),
                                                 ck_randi(-6, 5)),
                                     ck_randi(-128, 127), so, zo,
                                     t % 2 ? zo : -128,
                                     t % 3 || zo > 100 ? 127 : 100,
                                     t % 4 < 2, &p) != KERN_OK) {
            ck_fail("kern_q8_addf_params_init refused its arguments");
            continue;
        }
        const size_t n = (size_t)ck_randi(1, MAXN);
        for (size_t i = 0; i < n; i++) {
            a[i] = (int8_t)ck_randi(-128, 127);
            b[i] = (int8_t)ck_randi(-128, 127);
        }
        ck_poison(o0, sizeof o0);
        ck_poison(o1, sizeof o1);
        ref->addf(n, a, b, &p, o0);
        isa->addf(n, a, b, &p, o1);
        if (memcmp(o0, o1, sizeof o0) != 0) {
            ck_fail("n=%zu: outputs differ", n);
        }
    }
    ck_report();
}

static void check_rescale(const struct kern_q8s_dsp *isa,
                          const struct kern_q8s_dsp *ref)
{
    enum { MAXN = 301 };
    if (!ck_func((const void *)isa->rescale, "q8s_rescale")) {
        return;
    }
    int8_t x[MAXN], o0[MAXN], o1[MAXN];
    for (int t = 0; t < 2000; t++) {
        struct kern_q8_rescale r;
        const int32_t zo = ck_randi(-128, 127);
        /* ratios from 1/2000 to 2000, past the cap of 1024 */
        const float in_s = ck_randf(0.001f, 2.0f);
        const float out_s = t % 7 ? ck_randf(0.001f, 2.0f) : in_s;
        if (kern_q8_rescale_init(in_s, out_s, zo, t % 2 ? zo : -128,
                                 t % 3 ? 127 : ck_randi(zo, 127),
                                 &r) != KERN_OK) {
            ck_fail("kern_q8_rescale_init refused its arguments");
            continue;
        }
        if (t % 11 == 0) {
            /* hand-made parameters at the edges the check allows */
            r.left_shift = ck_randi(0, 22);
            r.shift = ck_randi(-31, 22 - r.left_shift);
            r.mult = rand_i32();
        }
        const int32_t zx = ck_randi(-128, 127);
        const size_t n = (size_t)ck_randi(1, MAXN);
        for (size_t i = 0; i < n; i++) {
            x[i] = (int8_t)ck_randi(-128, 127);
        }
        ck_poison(o0, sizeof o0);
        ck_poison(o1, sizeof o1);
        ref->rescale(n, x, zx, &r, o0);
        isa->rescale(n, x, zx, &r, o1);
        if (memcmp(o0, o1, sizeof o0) != 0) {
            ck_fail("n=%zu mult=%d shift=%d ls=%d: outputs differ", n,
                    r.mult, r.shift, r.left_shift);
        }
    }
    ck_report();
}

static void check_maxpool(const struct kern_q8s_dsp *isa,
                          const struct kern_q8s_dsp *ref)
{
    if (!ck_func((const void *)isa->maxpool, "q8s_maxpool")) {
        return;
    }
    for (int t = 0; t < 400; t++) {
        struct kern_pool2d_shape s = {0};
        s.batch = (size_t)ck_randi(1, 2);
        s.channels = (size_t)ck_randi(1, 3);
        s.in_h = (size_t)ck_randi(1, 20);
        /* widths past one and two vectors, and their tails */
        s.in_w = (size_t)ck_randi(1, t % 4 ? 40 : 150);
        s.kh = (size_t)ck_randi(1, 4);
        s.kw = (size_t)ck_randi(1, 4);
        s.stride_h = (size_t)ck_randi(1, 3);
        s.stride_w = (size_t)(t % 3 == 0 ? 2 : ck_randi(1, 4));
        s.pad_top = (size_t)ck_randi(0, (int)s.kh - 1);
        s.pad_bottom = (size_t)ck_randi(0, (int)s.kh - 1);
        s.pad_left = (size_t)ck_randi(0, (int)s.kw - 1);
        s.pad_right = (size_t)ck_randi(0, (int)s.kw - 1);
        size_t oh, ow;
        if (kern_pool2d_out_hw(&s, &oh, &ow) != KERN_OK) {
            continue; /* a window larger than the padded input */
        }
        const size_t nx = s.batch * s.channels * s.in_h * s.in_w;
        const size_t ny = s.batch * s.channels * oh * ow;
        const size_t sb = q8s_maxpool_scratch(s.pad_left, s.in_w,
                                              s.pad_right, s.kw);
        int8_t *x = malloc(nx), *y0 = malloc(ny + 64), *y1 = malloc(ny + 64);
        int8_t *scratch = malloc(sb);
        if (!x || !y0 || !y1 || !scratch) {
            ck_fail("out of memory");
            free(x), free(y0), free(y1), free(scratch);
            break;
        }
        for (size_t i = 0; i < nx; i++) {
            /* a narrow range now and then, so that ties and -128 occur */
            x[i] = (int8_t)(t % 5 ? ck_randi(-128, 127) : ck_randi(-128, -126));
        }
        ck_poison(y0, ny + 64);
        ck_poison(y1, ny + 64);
        ref->maxpool(&s, oh, ow, x, y0, NULL);
        isa->maxpool(&s, oh, ow, x, y1, scratch);
        if (memcmp(y0, y1, ny + 64) != 0) {
            ck_fail("%zux%zux%zux%zu k %zux%zu stride %zux%zu pad %zu,%zu,"
                    "%zu,%zu: outputs differ", s.batch, s.channels, s.in_h,
                    s.in_w, s.kh, s.kw, s.stride_h, s.stride_w, s.pad_top,
                    s.pad_left, s.pad_bottom, s.pad_right);
        }
        free(x), free(y0), free(y1), free(scratch);
    }
    ck_report();
}

static void check_dwconv(const struct kern_q8s_dsp *isa,
                         const struct kern_q8s_dsp *ref)
{
    if (!ck_func((const void *)isa->dwconv, "q8s_dwconv")) {
        return;
    }
    /* narrow maps with many channels, which the vector path runs 16
     * channels at a time: DS-CNN's 25 x 5, MobileNet's 6 x 6 and 3 x 3, a
     * 1 x 1 map, channels not a multiple of 16, stride 2, asymmetric
     * padding, dilation; the channels 16 * k + 1 leave one live lane */
    static const struct kern_dwconv2d_shape fixed[] = {
        {1, 64, 25, 5, 3, 3, 1, 1, 1, 1, 1, 1, 0, 0},
        {2, 70, 25, 5, 3, 3, 1, 1, 1, 1, 1, 1, 0, 0},
        {1, 64, 6, 6, 3, 3, 1, 1, 1, 1, 1, 1, 0, 0},
        {1, 33, 12, 12, 3, 3, 2, 2, 0, 0, 1, 1, 0, 0},
        {1, 17, 6, 6, 3, 3, 2, 2, 1, 0, 1, 2, 0, 0},
        {1, 80, 3, 3, 3, 3, 1, 1, 1, 1, 1, 1, 0, 0},
        {2, 49, 1, 1, 3, 3, 1, 1, 1, 1, 1, 1, 0, 0},
        {1, 16, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0},
        {1, 20, 7, 9, 3, 3, 1, 1, 2, 1, 0, 2, 2, 2},
        {1, 31, 10, 15, 5, 3, 1, 2, 2, 1, 2, 1, 1, 3},
        {1, 15, 8, 8, 9, 9, 1, 1, 4, 4, 4, 4, 0, 0},
        {1, 18, 5, 40, 3, 3, 1, 3, 1, 1, 1, 1, 0, 0},
        /* the VNNI path's 32 channels at a time: two blocks and 8 more,
         * 4 taps (its gather's least) at stride 2, 5 taps in a row */
        {1, 72, 6, 6, 3, 3, 1, 1, 1, 1, 1, 1, 0, 0},
        {2, 40, 5, 5, 2, 2, 2, 2, 0, 1, 1, 0, 0, 0},
        {1, 36, 4, 7, 1, 5, 1, 1, 0, 2, 0, 2, 0, 0},
        /* stride 1 on maps of 16 columns or more (the VNNI path's 64
         * outputs along the flattened plane): MobileNet's 48 x 48 with
         * channels past a vector, a kernel of two groups of 4 taps per
         * row with a dilated column and uneven padding, no padding with
         * the map exactly as wide as the output */
        {1, 9, 48, 48, 3, 3, 1, 1, 1, 1, 1, 1, 0, 0},
        {2, 11, 9, 33, 5, 7, 1, 1, 2, 3, 2, 1, 2, 1},
        {1, 3, 20, 64, 3, 1, 1, 1, 0, 0, 0, 0, 0, 0},
        /* stride 2 along the row on wide maps (32 outputs a block and a
         * tail), with stride 1 and 3 down */
        {1, 10, 9, 70, 3, 3, 2, 2, 1, 1, 1, 1, 0, 0},
        {2, 9, 11, 67, 5, 6, 3, 2, 2, 0, 1, 3, 1, 1},
        {1, 12, 6, 96, 3, 3, 1, 2, 0, 1, 0, 1, 0, 0},
    };
    const int nfixed = (int)(sizeof fixed / sizeof fixed[0]);
    for (int t = 0; t < 300 + 4 * nfixed; t++) {
        struct kern_dwconv2d_shape s = {0};
        s.batch = (size_t)ck_randi(1, 2);
        s.channels = (size_t)ck_randi(1, 5);
        s.in_h = (size_t)ck_randi(1, 12);
        s.in_w = (size_t)ck_randi(1, t % 4 ? 40 : 90);
        const int big = t % 9 == 0;
        s.kh = (size_t)ck_randi(1, big ? 9 : 5);
        s.kw = (size_t)ck_randi(1, big ? 9 : 5);
        s.stride_h = (size_t)ck_randi(1, 3);
        s.stride_w = (size_t)(t % 5 == 4 ? 3 : ck_randi(1, 2));
        s.pad_top = (size_t)ck_randi(0, 3);
        s.pad_bottom = (size_t)ck_randi(0, 3);
        s.pad_left = (size_t)ck_randi(0, 3);
        s.pad_right = (size_t)ck_randi(0, 3);
        s.dilation_h = (size_t)(t % 7 == 0 ? 2 : ck_randi(0, 1));
        s.dilation_w = (size_t)(t % 7 == 0 ? 2 : ck_randi(0, 1));
        if (t >= 300) {
            /* each fixed shape four times: the other parameters (bias,
             * per-channel or not, shifts, x_zero) vary with t */
            s = fixed[(t - 300) / 4];
        }
        size_t oh, ow;
        if (kern_dwconv2d_out_hw(&s, &oh, &ow) != KERN_OK) {
            continue;
        }
        const size_t ch = s.channels, taps = s.kh * s.kw;
        const size_t nx = s.batch * ch * s.in_h * s.in_w;
        const size_t ny = s.batch * ch * oh * ow;
        const size_t sb = q8s_dwconv_scratch(&s);
        int8_t *x = malloc(nx), *w = malloc(ch * taps);
        int8_t *y0 = malloc(ny), *y1 = malloc(ny), *scratch = malloc(sb);
        int32_t bias[80], mult[80];
        int shift[80];
        float fscale[80];
        if (!x || !w || !y0 || !y1 || !scratch) {
            ck_fail("out of memory");
            free(x), free(w), free(y0), free(y1), free(scratch);
            break;
        }
        for (size_t i = 0; i < nx; i++) {
            x[i] = (int8_t)ck_randi(-128, 127);
        }
        for (size_t i = 0; i < ch * taps; i++) {
            /* -128 now and then: the widest product */
            w[i] = (int8_t)(t % 6 ? ck_randi(-127, 127) : -128);
        }
        /* every fourth case (all of the fixed stage, per channel) draws
         * around the AVX-512 stage's bounded form, which takes sums below
         * 2^29 and multipliers >= 0: kind 0 every bias from 2^30 on (past
         * it), kind 1 every bias at its edge (inside), kind 2 multipliers
         * of either sign now and then, kind 3 biases of any size now and
         * then */
        const int wild = t % 4 == 1 ? (t / 4) % 4 : -1;
        const int64_t edge = ((int64_t)1 << 29) - (int64_t)taps * 255 * 128;
        for (size_t c = 0; c < ch; c++) {
            const int32_t sign = c % 2 ? 1 : -1;
            bias[c] = wild == 0 ? sign * ck_randi(1 << 30, INT32_MAX)
                      : wild == 1
                          ? sign * (int32_t)(edge - ck_randi(1, 2))
                      : wild == 3 && (t + c) % 7 == 0
                          ? rand_i32()
                          : ck_randi(-50000, 50000);
            mult[c] = wild == 2 && c % 3 != 0 ? rand_i32()
                                              : ck_randi(1 << 30, INT32_MAX);
            shift[c] = t % 8 ? ck_randi(-14, -5) : ck_randi(-31, 3);
            fscale[c] = rand_fscale();
        }
        const int32_t zp = ck_randi(-128, 127);
        struct kern_q8_outstage os = {
            .bias = t % 3 ? bias : NULL, .mult = mult, .shift = shift,
            .per_channel = t % 4 != 0, .zero_point = zp,
            .qmin = t % 2 ? zp : -128, .qmax = 127,
            /* the float stage in half the cases (each fixed shape twice) */
            .scale = (t / 2) % 2 ? fscale : NULL};
        const int32_t xz = t % 5 ? ck_randi(-128, 127) : -128;
        ck_poison(y0, ny);
        ck_poison(y1, ny);
        ref->dwconv(&s, oh, ow, x, xz, w, &os, y0, NULL);
        isa->dwconv(&s, oh, ow, x, xz, w, &os, y1, scratch);
        if (memcmp(y0, y1, ny) != 0) {
            ck_fail("%zux%zux%zux%zu k %zux%zu stride %zux%zu dil %zux%zu: "
                    "outputs differ", s.batch, ch, s.in_h, s.in_w, s.kh,
                    s.kw, s.stride_h, s.stride_w, s.dilation_h,
                    s.dilation_w);
        }
        free(x), free(w), free(y0), free(y1), free(scratch);
    }
    ck_report();
}

/* The average pools' plane sums: window lengths with every tail of a
 * vector (1 to 300 values, and DS-CNN's 120 of 125, MobileNet's 9 and
 * 36), planes packed (ld = n) or apart (ld > n), values random or all
 * -128 or all 127 (the largest sums of each sign); the buffer ends with
 * the last window, so a read past it would show under the sanitizers. */
static void check_plane_sum(const struct kern_q8s_dsp *isa,
                            const struct kern_q8s_dsp *ref)
{
    enum { MAXP = 70, MAXHW = 300 };
    if (!ck_func((const void *)isa->plane_sum, "q8s_plane_sum")) {
        return;
    }
    int32_t s0[MAXP], s1[MAXP];
    static const size_t fixed_n[] = {1, 9, 31, 32, 33, 36, 64, 120, 300};
    const int nf = (int)(sizeof fixed_n / sizeof fixed_n[0]);
    for (int t = 0; t < 400; t++) {
        const size_t np = (size_t)ck_randi(1, MAXP);
        const size_t n = t < 3 * nf ? fixed_n[t / 3]
                                    : (size_t)ck_randi(1, MAXHW);
        const size_t ld = n + (t % 2 ? (size_t)ck_randi(1, 40) : 0);
        const size_t len = (np - 1) * ld + n;
        int8_t *x = malloc(len);
        if (!x) {
            ck_fail("out of memory");
            break;
        }
        const int fill = t % 3; /* 0 random, 1 all -128, 2 all 127 */
        for (size_t i = 0; i < len; i++) {
            x[i] = (int8_t)(fill == 1   ? -128
                            : fill == 2 ? 127
                                        : ck_randi(-128, 127));
        }
        ref->plane_sum(np, n, ld, x, s0);
        isa->plane_sum(np, n, ld, x, s1);
        if (memcmp(s0, s1, np * sizeof s0[0]) != 0) {
            ck_fail("planes %zu n %zu ld %zu: sums differ", np, n, ld);
        }
        free(x);
    }
    ck_report();
}

/* --bench: the depthwise layers of DS-CNN (25 x 5), MobileNetV1-0.25
 * (48 x 48 to 3 x 3) and MobileNetV2 (28 x 28, 14 x 14, 7 x 7), this level
 * against the C reference. */
static void bench_dwconv(const struct kern_q8s_dsp *isa,
                         const struct kern_q8s_dsp *ref)
{
    static const struct kern_dwconv2d_shape shapes[] = {
        {1, 64, 25, 5, 3, 3, 1, 1, 1, 1, 1, 1, 0, 0},
        {1, 64, 12, 12, 3, 3, 1, 1, 1, 1, 1, 1, 0, 0},
        {1, 128, 12, 12, 3, 3, 2, 2, 0, 0, 1, 1, 0, 0},
        {1, 128, 6, 6, 3, 3, 1, 1, 1, 1, 1, 1, 0, 0},
        {1, 256, 3, 3, 3, 3, 1, 1, 1, 1, 1, 1, 0, 0},
        {1, 32, 48, 48, 3, 3, 1, 1, 1, 1, 1, 1, 0, 0},
        {1, 32, 48, 48, 3, 3, 2, 2, 0, 0, 1, 1, 0, 0},
        {1, 192, 28, 28, 3, 3, 1, 1, 1, 1, 1, 1, 0, 0},
        {1, 576, 14, 14, 3, 3, 1, 1, 1, 1, 1, 1, 0, 0},
        {1, 960, 7, 7, 3, 3, 1, 1, 1, 1, 1, 1, 0, 0},
    };
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        const struct kern_dwconv2d_shape *s = &shapes[i];
        size_t oh, ow;
        kern_dwconv2d_out_hw(s, &oh, &ow);
        const size_t ch = s->channels;
        const size_t nx = ch * s->in_h * s->in_w, ny = ch * oh * ow;
        int8_t *x = malloc(nx), *w = malloc(ch * 9), *y = malloc(ny);
        int8_t *scratch = malloc(q8s_dwconv_scratch(s));
        int32_t *bias = malloc(ch * sizeof *bias);
        int32_t *mult = malloc(ch * sizeof *mult);
        int *shift = malloc(ch * sizeof *shift);
        if (x && w && y && scratch && bias && mult && shift) {
            for (size_t j = 0; j < nx; j++) {
                x[j] = (int8_t)ck_randi(-128, 127);
            }
            for (size_t j = 0; j < ch * 9; j++) {
                w[j] = (int8_t)ck_randi(-127, 127);
            }
            for (size_t c = 0; c < ch; c++) {
                bias[c] = ck_randi(-5000, 5000);
                mult[c] = ck_randi(1 << 30, INT32_MAX);
                shift[c] = ck_randi(-12, -6);
            }
            const struct kern_q8_outstage os = {
                .bias = bias, .mult = mult, .shift = shift,
                .per_channel = 1, .zero_point = 3, .qmin = -128,
                .qmax = 127};
            enum { R = 201 };
            double tr[R], ti[R];
            for (int r = 0; r < R; r++) {
                double t0 = ck_now_ns();
                ref->dwconv(s, oh, ow, x, -5, w, &os, y, NULL);
                tr[r] = ck_now_ns() - t0;
                t0 = ck_now_ns();
                isa->dwconv(s, oh, ow, x, -5, w, &os, y, scratch);
                ti[r] = ck_now_ns() - t0;
            }
            char what[64];
            snprintf(what, sizeof what, "q8s_dwconv c%zu %zux%zu s%zu", ch,
                     s->in_h, s->in_w, s->stride_h);
            ck_bench_report(what, ck_median(tr, R), ck_median(ti, R));
        }
        free(x), free(w), free(y), free(scratch);
        free(bias), free(mult), free(shift);
    }
}

/* The kp GEMM: random shapes (pixel blocks of 64 and their tails, 1 to
 * 3 channels past a group of 4, K not a multiple of 4), strides past the
 * rows, extreme weights and activations (-128 everywhere, so the
 * accumulators are largest) and random output stages, fixed-point and
 * float. The multiplier is never INT32_MIN (the wrapper routes that to
 * the C reference). */
static void check_gemm_kp(const struct kern_q8s_dsp *isa,
                          const struct kern_q8s_dsp *ref)
{
    enum { MAXN = 70, MAXP = 200, MAXK = 600, PAD = 7 };
    if (!ck_func((const void *)isa->gemm_kp, "q8s_gemm_kp")) {
        return;
    }
    int8_t *w = malloc((size_t)MAXN * MAXK);
    void *wk = malloc(kern_q8_kp_bytes(MAXN, MAXK));
    int8_t *x = malloc((size_t)MAXK * (MAXP + PAD));
    int8_t *y0 = malloc((size_t)MAXN * (MAXP + PAD));
    int8_t *y1 = malloc((size_t)MAXN * (MAXP + PAD));
    uint8_t *work = malloc(q8s_kp_work(MAXK));
    int32_t add[MAXN], mult[MAXN], lsh[MAXN], rsh[MAXN];
    float fscale[MAXN];
    if (!w || !wk || !x || !y0 || !y1 || !work) {
        ck_fail("out of memory");
        goto out;
    }
    for (int t = 0; t < 300; t++) {
        const size_t n = (size_t)ck_randi(1, MAXN);
        const size_t p = (size_t)ck_randi(1, MAXP);
        const size_t k = t % 7 == 0 ? MAXK : (size_t)ck_randi(1, MAXK);
        const size_t ldx = p + (size_t)ck_randi(0, PAD);
        const size_t ldy = p + (size_t)ck_randi(0, PAD);
        const int extreme = t % 5 == 0;
        for (size_t i = 0; i < n * k; i++) {
            w[i] = (int8_t)(extreme ? -128 : ck_randi(-128, 127));
        }
        for (size_t i = 0; i < k * ldx; i++) {
            x[i] = (int8_t)(extreme ? -128 : ck_randi(-128, 127));
        }
        if (kern_q8_pack_kp(n, k, w, k, wk) != KERN_OK) {
            ck_fail("kern_q8_pack_kp n=%zu k=%zu refused", n, k);
            break;
        }
        const float *sc;
        int32_t zp, lo, hi;
        rand_kp_stage(t, n, add, mult, lsh, rsh, fscale, &sc, &zp, &lo, &hi);
        ck_poison(y0, (size_t)MAXN * (MAXP + PAD));
        ck_poison(y1, (size_t)MAXN * (MAXP + PAD));
        ref->gemm_kp(n, p, k, wk, add, mult, lsh, rsh, sc, zp, lo, hi, x, ldx,
                     y0, ldy, work);
        isa->gemm_kp(n, p, k, wk, add, mult, lsh, rsh, sc, zp, lo, hi, x, ldx,
                     y1, ldy, work);
        if (memcmp(y0, y1, (size_t)MAXN * (MAXP + PAD)) != 0) {
            for (size_t i = 0; i < (size_t)MAXN * (MAXP + PAD); i++) {
                if (y0[i] != y1[i]) {
                    ck_fail("n=%zu p=%zu k=%zu ldx=%zu ldy=%zu %s stage: "
                            "byte %zu (channel %zu pixel %zu) %d, want %d", n,
                            p, k, ldx, ldy, sc ? "float" : "fixed", i,
                            i / ldy, i % ldy, y1[i], y0[i]);
                    break;
                }
            }
        }
    }
out:
    free(w), free(wk), free(x), free(y0), free(y1), free(work);
    ck_report();
}

/* The kp convolution read in place: random row offsets (taps reading
 * overlapping and distinct stretches of one buffer), virtual row widths
 * vw with ow <= vw output columns (ow == vw, the GEMM's case, included),
 * pixel counts with 64-blocks and tails, extreme values and both output
 * stages, against the C reference byte for byte, the planes' bytes past
 * each output included (poisoned, so a stray store shows). */
static void check_conv_kp(const struct kern_q8s_dsp *isa,
                          const struct kern_q8s_dsp *ref)
{
    enum { MAXN = 40, MAXP = 300, MAXK = 300, XB = 4096, PAD = 5 };
    if (!ck_func((const void *)isa->conv_kp, "q8s_conv_kp")) {
        return;
    }
    int8_t *w = malloc((size_t)MAXN * MAXK);
    void *wk = malloc(kern_q8_kp_bytes(MAXN, MAXK));
    int8_t *x = malloc(XB + MAXP);
    size_t *roff = malloc(MAXK * sizeof *roff);
    const size_t ysz = (size_t)MAXN * (MAXP + 80 + PAD);
    int8_t *y0 = malloc(ysz), *y1 = malloc(ysz);
    uint8_t *work = malloc(q8s_kp_work(MAXK));
    int32_t add[MAXN], mult[MAXN], lsh[MAXN], rsh[MAXN];
    float fscale[MAXN];
    if (!w || !wk || !x || !roff || !y0 || !y1 || !work) {
        ck_fail("out of memory");
        goto out;
    }
    for (int t = 0; t < 300; t++) {
        const size_t n = (size_t)ck_randi(1, MAXN);
        const size_t p = (size_t)ck_randi(1, MAXP);
        const size_t k = t % 7 == 0 ? MAXK : (size_t)ck_randi(1, MAXK);
        const size_t vw = (size_t)ck_randi(1, 80);
        const size_t ow = t % 4 == 0 ? vw : (size_t)ck_randi(1, (int)vw);
        /* output plane: rows of ow, the last one's columns up to ow */
        const size_t rows = (p + vw - 1) / vw;
        const size_t ldy = rows * ow + (size_t)ck_randi(0, PAD);
        const int extreme = t % 5 == 0;
        for (size_t i = 0; i < n * k; i++) {
            w[i] = (int8_t)(extreme ? -128 : ck_randi(-128, 127));
        }
        for (size_t i = 0; i < XB + MAXP; i++) {
            x[i] = (int8_t)(extreme ? -128 : ck_randi(-128, 127));
        }
        for (size_t i = 0; i < k; i++) {
            roff[i] = (size_t)ck_randi(0, XB);
        }
        if (kern_q8_pack_kp(n, k, w, k, wk) != KERN_OK) {
            ck_fail("kern_q8_pack_kp n=%zu k=%zu refused", n, k);
            break;
        }
        const float *sc;
        int32_t zp, lo, hi;
        rand_kp_stage(t, n, add, mult, lsh, rsh, fscale, &sc, &zp, &lo, &hi);
        ck_poison(y0, ysz);
        ck_poison(y1, ysz);
        ref->conv_kp(n, p, k, wk, add, mult, lsh, rsh, sc, zp, lo, hi, x,
                     roff, vw, ow, y0, ldy, work);
        isa->conv_kp(n, p, k, wk, add, mult, lsh, rsh, sc, zp, lo, hi, x,
                     roff, vw, ow, y1, ldy, work);
        if (memcmp(y0, y1, ysz) != 0) {
            for (size_t i = 0; i < ysz; i++) {
                if (y0[i] != y1[i]) {
                    ck_fail("n=%zu p=%zu k=%zu vw=%zu ow=%zu ldy=%zu %s "
                            "stage: byte %zu (channel %zu output %zu) %d, "
                            "want %d", n, p, k, vw, ow, ldy,
                            sc ? "float" : "fixed", i, i / ldy, i % ldy,
                            y1[i], y0[i]);
                    break;
                }
            }
        }
    }
out:
    free(w), free(wk), free(x), free(roff), free(y0), free(y1), free(work);
    ck_report();
}

/* The kp GEMM's speed (--bench) on layer shapes of the MLPerf Tiny and
 * MobileNetV2 models, as conv_kp in its GEMM form (row t at t * p): C
 * against the vector path, medians of alternated runs, and the vector
 * path's int8 GOP/s (2 n p k operations per call). */
static void bench_conv_kp(const struct kern_q8s_dsp *isa,
                          const struct kern_q8s_dsp *ref)
{
    static const size_t shapes[][3] = {
        /* n, p, k: ResNet-8 s1 3 x 3 (16 x 32 x 32), s2 (32 x 16 x 16),
         * DS-CNN 1 x 1 (64 x 25 x 5), MobileNetV2 1 x 1 expansion (96
         * x 112 x 112, K 16) and 14 x 14 expansion (576, K 96),
         * MobileNetV1-0.25's 1 x 1 layers at 6 x 6 and 3 x 3 (short
         * blocks) */
        {16, 1024, 144}, {32, 256, 288}, {64, 125, 64}, {96, 12544, 16},
        {576, 196, 96}, {128, 36, 128}, {256, 9, 256},
    };
    if (isa->conv_kp == ref->conv_kp) {
        return; /* the C level: nothing to compare */
    }
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
        const size_t n = shapes[si][0], p = shapes[si][1], k = shapes[si][2];
        int8_t *w = malloc(n * k), *x = malloc(p * k), *y = malloc(n * p);
        void *wk = malloc(kern_q8_kp_bytes(n, k));
        size_t *roff = malloc(k * sizeof *roff);
        uint8_t *work = malloc(q8s_kp_work(k));
        int32_t *add = malloc(n * 4 * sizeof *add);
        if (!w || !x || !y || !wk || !roff || !work || !add) {
            ck_fail("out of memory");
            free(w), free(x), free(y), free(wk), free(roff), free(work);
            free(add);
            return;
        }
        int32_t *mult = add + n, *lsh = mult + n, *rsh = lsh + n;
        for (size_t i = 0; i < n * k; i++) {
            w[i] = (int8_t)ck_randi(-128, 127);
        }
        for (size_t i = 0; i < p * k; i++) {
            x[i] = (int8_t)ck_randi(-128, 127);
        }
        for (size_t t = 0; t < k; t++) {
            roff[t] = t * p;
        }
        for (size_t j = 0; j < n; j++) {
            add[j] = ck_randi(-100000, 100000);
            mult[j] = ck_randi(1 << 30, INT32_MAX);
            lsh[j] = 0;
            rsh[j] = ck_randi(8, 20);
        }
        (void)kern_q8_pack_kp(n, k, w, k, wk);
        enum { R = 15 };
        double tr[R], ti[R];
        for (int r = 0; r < R; r++) {
            double t0 = ck_now_ns();
            ref->conv_kp(n, p, k, wk, add, mult, lsh, rsh, NULL, -3, -128,
                         127, x, roff, p, p, y, p, work);
            tr[r] = ck_now_ns() - t0;
            t0 = ck_now_ns();
            isa->conv_kp(n, p, k, wk, add, mult, lsh, rsh, NULL, -3, -128,
                         127, x, roff, p, p, y, p, work);
            ti[r] = ck_now_ns() - t0;
        }
        char what[64];
        snprintf(what, sizeof what, "q8s_conv_kp n%zu p%zu k%zu", n, p, k);
        const double mi = ck_median(ti, R);
        ck_bench_report(what, ck_median(tr, R), mi);
        printf("      %.1f int8 GOP/s (2 n p k / time)\n",
               2.0 * (double)n * (double)p * (double)k / mi);
        free(w), free(x), free(y), free(wk), free(roff), free(work);
        free(add);
    }
}

/* The integer add on the lengths of ResNet-8's three adds (a batch of
 * one), against the C reference. */
static void bench_add(const struct kern_q8s_dsp *isa,
                      const struct kern_q8s_dsp *ref)
{
    static const size_t lens[] = {4096, 8192, 16384};
    for (size_t l = 0; l < sizeof lens / sizeof lens[0]; l++) {
        const size_t n = lens[l];
        int8_t *a = malloc(n), *b = malloc(n), *y = malloc(n);
        struct kern_q8_add_params p;
        if (a && b && y &&
            kern_q8_add_params_init(0.05f, 3, 0.08f, -7, 0.1f, -2, -128, 127,
                                    &p) == KERN_OK) {
            for (size_t i = 0; i < n; i++) {
                a[i] = (int8_t)ck_randi(-128, 127);
                b[i] = (int8_t)ck_randi(-128, 127);
            }
            enum { R = 201 };
            double tr[R], ti[R];
            for (int r = 0; r < R; r++) {
                double t0 = ck_now_ns();
                ref->add(n, a, b, &p, y);
                tr[r] = ck_now_ns() - t0;
                t0 = ck_now_ns();
                isa->add(n, a, b, &p, y);
                ti[r] = ck_now_ns() - t0;
            }
            char what[64];
            snprintf(what, sizeof what, "q8s_add n%zu", n);
            ck_bench_report(what, ck_median(tr, R), ck_median(ti, R));
        }
        free(a), free(b), free(y);
    }
}

/* The input quantisation on MobileNetV1-0.25's input (3 x 96 x 96),
 * against the C reference. */
static void bench_quant(const struct kern_q8s_dsp *isa,
                        const struct kern_q8s_dsp *ref)
{
    enum { N = 3 * 96 * 96, R = 101 };
    float *x = malloc(N * sizeof *x);
    int8_t *y = malloc(N);
    if (x && y) {
        for (size_t i = 0; i < N; i++) {
            x[i] = ck_randf(-1.0f, 1.0f);
        }
        double tr[R], ti[R];
        for (int r = 0; r < R; r++) {
            double t0 = ck_now_ns();
            ref->quant(x, N, 0.0078f, 3, y);
            tr[r] = ck_now_ns() - t0;
            t0 = ck_now_ns();
            isa->quant(x, N, 0.0078f, 3, y);
            ti[r] = ck_now_ns() - t0;
        }
        ck_bench_report("q8s_quant n27648", ck_median(tr, R),
                        ck_median(ti, R));
    }
    free(x), free(y);
}

void check_q8s(unsigned flags);

void check_q8s(unsigned flags)
{
    struct kern_q8s_dsp isa, ref;
    kern_q8s_dsp_init(&ref, 0);
    kern_q8s_dsp_init(&isa, flags);
    check_requant(&isa, &ref);
    check_requant_tile(&isa, &ref);
    check_transpose(&isa, &ref);
    check_quant(&isa, &ref);
    check_add(&isa, &ref);
    check_addf(&isa, &ref);
    check_rescale(&isa, &ref);
    check_requantf(&isa, &ref);
    check_maxpool(&isa, &ref);
    check_plane_sum(&isa, &ref);
    check_dwconv(&isa, &ref);
    check_gemm_kp(&isa, &ref);
    check_conv_kp(&isa, &ref);
    if (ck_bench_on()) {
        bench_dwconv(&isa, &ref);
        bench_conv_kp(&isa, &ref);
        bench_add(&isa, &ref);
        bench_quant(&isa, &ref);
    }
}
