/* Checker for the broadcast arithmetic: every row kind of every operation
 * and the NCHW8c channel scale on every path, bit for bit against the C
 * rows (each output is one IEEE operation, kernels.h), then random
 * broadcasts through the driver with each path's table. --bench times the
 * squeeze-excite shapes, a scalar and equal shapes against C. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checkkern.h"
#include "elem.h"

enum { MAX_N = 2100, GUARD = 19, BENCH_REPS = 15 };

static const char *const op_names[KERN_ELEM_NOPS] = {"add", "sub", "mul",
                                                     "div"};
static const char *const kind_names[KERN_ELEM_NKIND] = {"vv", "vs", "sv"};

/* Operands with zeros, signed zeros, infinities and NaN among them, so
 * that division by zero and NaN propagation are compared too. */
static void fill_operand(float *x, size_t n)
{
    static const float specials[] = {0.0f, -0.0f, INFINITY, -INFINITY,
                                     NAN, 1e-40f, -3e38f, 3e38f, 1.0f};
    ck_fill_f32(x, n, -4.0f, 4.0f);
    for (size_t i = 0; i < n; i++) {
        if (ck_randi(0, 20) == 0) {
            x[i] = specials[ck_randi(0, 8)];
        }
    }
}

static bool same_bits(const float *a, const float *b, size_t n, size_t *at)
{
    for (size_t i = 0; i < n; i++) {
        if (memcmp(&a[i], &b[i], sizeof *a) != 0) {
            *at = i;
            return false;
        }
    }
    return true;
}

static void check_row(kern_elem_row_fn ref, kern_elem_row_fn fn, int kind,
                      const char *name)
{
    if (!ck_func((const void *)fn, "%s", name)) {
        return;
    }
    static float a[MAX_N], b[MAX_N], want[MAX_N], got[MAX_N + GUARD],
        inpl[MAX_N];
    for (int iter = 0; iter < 80; iter++) {
        const size_t n = iter < 70 ? (size_t)iter + 1
                                   : (size_t)ck_randi(1, MAX_N);
        fill_operand(a, n);
        fill_operand(b, n);
        ref(want, a, b, n);
        ck_poison(got, sizeof got);
        fn(got, a, b, n);
        size_t at;
        if (!same_bits(got, want, n, &at)) {
            ck_fail("n %zu [%zu]: a %a b %a: got %a, want %a", n, at,
                    (double)a[kind == KERN_ELEM_SV ? 0 : at],
                    (double)b[kind == KERN_ELEM_VS ? 0 : at],
                    (double)got[at], (double)want[at]);
        }
        uint32_t poison;
        ck_poison(&poison, sizeof poison);
        for (size_t i = n; i < n + GUARD; i++) {
            if (memcmp(&got[i], &poison, 4) != 0) {
                ck_fail("n %zu: wrote past the end at %zu", n, i);
                break;
            }
        }
        /* In place on the operand that has n elements. */
        if (kind == KERN_ELEM_SV) {
            memcpy(inpl, b, n * sizeof *b);
            fn(inpl, a, inpl, n);
        } else {
            memcpy(inpl, a, n * sizeof *a);
            fn(inpl, inpl, b, n);
        }
        if (!same_bits(inpl, want, n, &at)) {
            ck_fail("n %zu: in-place result differs at %zu", n, at);
        }
    }
    ck_report();
}

static void check_scale8c(kern_elem_scale8c_fn ref, kern_elem_scale8c_fn fn)
{
    if (!ck_func((const void *)fn, "elem_scale_nchw8c")) {
        return;
    }
    enum { MAX_HW = 300 };
    static float x[MAX_HW * 8], want[MAX_HW * 8], got[MAX_HW * 8 + GUARD];
    float s[8];
    for (int iter = 0; iter < 120; iter++) {
        const size_t hw = iter < 40 ? (size_t)iter + 1
                                    : (size_t)ck_randi(1, MAX_HW);
        const size_t lanes = (size_t)ck_randi(1, 8);
        fill_operand(x, hw * 8);
        fill_operand(s, 8);
        /* Padding lanes may hold anything, NaN and inf included. */
        for (size_t i = 0; i < hw; i++) {
            for (size_t l = lanes; l < 8; l++) {
                x[i * 8 + l] = ck_randi(0, 1) ? NAN : INFINITY;
            }
        }
        ref(want, x, s, hw, lanes);
        ck_poison(got, sizeof got);
        fn(got, x, s, hw, lanes);
        size_t at;
        if (!same_bits(got, want, hw * 8, &at)) {
            ck_fail("hw %zu lanes %zu [%zu]: got %a, want %a", hw, lanes, at,
                    (double)got[at], (double)want[at]);
        }
        uint32_t poison;
        ck_poison(&poison, sizeof poison);
        for (size_t i = hw * 8; i < hw * 8 + GUARD; i++) {
            if (memcmp(&got[i], &poison, 4) != 0) {
                ck_fail("hw %zu: wrote past the end at %zu", hw, i);
                break;
            }
        }
        fn(x, x, s, hw, lanes); /* in place */
        if (!same_bits(x, want, hw * 8, &at)) {
            ck_fail("hw %zu: in-place result differs at %zu", hw, at);
        }
    }
    ck_report();
}

/* Random shapes of rank 0..4 with extents 1..9, each operand taking the
 * output's extent or 1 at random, through the driver on both tables. */
/* ck_func keys the checks that run a whole table (not one function) by
 * level: one byte each for the C, AVX2 and AVX-512 tables. */
static const void *level_key(int which, unsigned flags)
{
    static const char keys[2][3];
    const int level = (flags & KERN_CPU_AVX512)  ? 2
                      : (flags & KERN_CPU_AVX2) ? 1
                                                : 0;
    return &keys[which][level];
}

static void check_driver(const struct kern_elem_dsp *c,
                         const struct kern_elem_dsp *d, unsigned flags)
{
    if (!ck_func(level_key(0, flags), "elem_binary_broadcast")) {
        return;
    }
    enum { CAP = 9 * 9 * 9 * 9 };
    static float a[CAP], b[CAP], want[CAP], got[CAP];
    for (int iter = 0; iter < 400; iter++) {
        const int op = ck_randi(0, KERN_ELEM_NOPS - 1);
        const size_t nd = (size_t)ck_randi(0, KERN_BINARY_MAX_NDIM);
        size_t ys[KERN_BINARY_MAX_NDIM], as[KERN_BINARY_MAX_NDIM],
            bs[KERN_BINARY_MAX_NDIM];
        for (size_t k = 0; k < nd; k++) {
            ys[k] = (size_t)ck_randi(1, 9);
            as[k] = ck_randi(0, 2) ? ys[k] : 1;
            bs[k] = ck_randi(0, 2) ? ys[k] : 1;
        }
        /* Drop leading dimensions of one operand now and then. */
        const size_t an = nd - (size_t)(nd ? ck_randi(0, 1) : 0);
        const size_t bn = nd - (size_t)(nd && an == nd ? ck_randi(0, 1) : 0);
        fill_operand(a, CAP);
        fill_operand(b, CAP);
        int s1 = kern_elem_binary_run(c, op, a, as + (nd - an), an, b,
                                      bs + (nd - bn), bn, want);
        ck_poison(got, sizeof got);
        int s2 = kern_elem_binary_run(d, op, a, as + (nd - an), an, b,
                                      bs + (nd - bn), bn, got);
        size_t ys2[KERN_BINARY_MAX_NDIM], nd2, elems = 0;
        kern_binary_shape(as + (nd - an), an, bs + (nd - bn), bn, ys2, &nd2,
                          &elems);
        size_t at;
        if (s1 != KERN_OK || s2 != KERN_OK) {
            ck_fail("status %d/%d", s1, s2);
        } else if (!same_bits(got, want, elems, &at)) {
            ck_fail("%s rank %zu/%zu [%zu]: got %a, want %a", op_names[op],
                    an, bn, at, (double)got[at], (double)want[at]);
        }
    }
    ck_report();
}

static double time_binary(const struct kern_elem_dsp *t, int op,
                          const float *a, const size_t *as, size_t an,
                          const float *b, const size_t *bs, size_t bn,
                          float *y, double *ref_ns,
                          const struct kern_elem_dsp *c)
{
    double tr[BENCH_REPS], tf[BENCH_REPS];
    for (int r = 0; r < BENCH_REPS; r++) {
        const double t0 = ck_now_ns();
        kern_elem_binary_run(c, op, a, as, an, b, bs, bn, y);
        const double t1 = ck_now_ns();
        kern_elem_binary_run(t, op, a, as, an, b, bs, bn, y);
        const double t2 = ck_now_ns();
        tr[r] = t1 - t0;
        tf[r] = t2 - t1;
    }
    *ref_ns = ck_median(tr, BENCH_REPS);
    return ck_median(tf, BENCH_REPS);
}

/* The shapes of MobileNetV3-Small's and EfficientNet-B0's squeeze-excite
 * scales at batch 1 (channels x plane), a scalar and an equal-shape add
 * of 1 Mi floats, and the blocked scale. */
static void bench_elem(const struct kern_elem_dsp *c,
                       const struct kern_elem_dsp *d, unsigned flags)
{
    if (!ck_bench_on() || !ck_func(level_key(1, flags), "elem_bench")) {
        return;
    }
    const size_t big = (size_t)3 << 19; /* the largest shape is 1.2 Mi */
    float *a = malloc(big * sizeof *a), *b = malloc(big * sizeof *b),
          *y = malloc(big * sizeof *y);
    if (!a || !b || !y) {
        free(a);
        free(b);
        free(y);
        return;
    }
    ck_fill_f32(a, big, -4.0f, 4.0f);
    ck_fill_f32(b, big, 0.5f, 4.0f);
    static const size_t se[][3] = {{16, 56, 56}, {96, 14, 14}, {576, 7, 7},
                                   {96, 112, 112}, {240, 28, 28},
                                   {1152, 7, 7}};
    char what[64];
    double ref, t;
    for (size_t k = 0; k < sizeof se / sizeof se[0]; k++) {
        const size_t xs[4] = {1, se[k][0], se[k][1], se[k][2]};
        const size_t gs[4] = {1, se[k][0], 1, 1};
        t = time_binary(d, KERN_BINARY_MUL, a, xs, 4, b, gs, 4, y, &ref, c);
        snprintf(what, sizeof what, "se_mul 1x%zux%zux%zu", se[k][0],
                 se[k][1], se[k][2]);
        ck_bench_report(what, ref, t);
        double tr[BENCH_REPS], tf[BENCH_REPS];
        for (int r = 0; r < BENCH_REPS; r++) {
            const double t0 = ck_now_ns();
            kern_elem_scale_nchw8c_run(c, a, 1, se[k][0],
                                       se[k][1] * se[k][2], b, y);
            const double t1 = ck_now_ns();
            kern_elem_scale_nchw8c_run(d, a, 1, se[k][0],
                                       se[k][1] * se[k][2], b, y);
            const double t2 = ck_now_ns();
            tr[r] = t1 - t0;
            tf[r] = t2 - t1;
        }
        snprintf(what, sizeof what, "se_nchw8c 1x%zux%zux%zu", se[k][0],
                 se[k][1], se[k][2]);
        ck_bench_report(what, ck_median(tr, BENCH_REPS),
                        ck_median(tf, BENCH_REPS));
    }
    const size_t full[1] = {big};
    t = time_binary(d, KERN_BINARY_ADD, a, full, 1, b, full, 1, y, &ref, c);
    ck_bench_report("add equal 1.5Mi", ref, t);
    t = time_binary(d, KERN_BINARY_DIV, a, full, 1, b, NULL, 0, y, &ref, c);
    ck_bench_report("div scalar 1.5Mi", ref, t);
    const size_t rs[4] = {1, 64, 64, 64}, bias[1] = {64};
    t = time_binary(d, KERN_BINARY_SUB, a, rs, 4, b, bias, 1, y, &ref, c);
    ck_bench_report("sub 1x64x64x64 - [64]", ref, t);
    free(a);
    free(b);
    free(y);
    ck_report();
}

void check_elem(unsigned flags);

void check_elem(unsigned flags)
{
    struct kern_elem_dsp c, d;
    kern_elem_dsp_init(&c, 0);
    kern_elem_dsp_init(&d, flags);
    char name[64];
    for (int op = 0; op < KERN_ELEM_NOPS; op++) {
        for (int k = 0; k < KERN_ELEM_NKIND; k++) {
            snprintf(name, sizeof name, "elem_%s_%s", op_names[op],
                     kind_names[k]);
            check_row(c.row[op][k], d.row[op][k], k, name);
        }
    }
    check_scale8c(c.scale_nchw8c, d.scale_nchw8c);
    check_driver(&c, &d, flags);
    bench_elem(&c, &d, flags);
}
