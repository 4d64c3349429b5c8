/* Checker for the activations: every path against the C reference. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "act.h"
#include "checkkern.h"

enum { MAX_N = 4133, GUARD = 19, BENCH_N = 1 << 20, BENCH_REPS = 15 };

/* How a function's result is compared with the C reference. */
enum tol_kind {
    TOL_EXACT,    /* bit-identical (NaN equal to NaN) */
    TOL_ULP,      /* within `ulp` units in the last place */
    TOL_GELU,     /* ulp + 3 |2u| ulp for x < 0 (kernels.h) */
    TOL_CLOSE,    /* |a - b| <= abs + rel |b| */
};

struct tol {
    enum tol_kind kind;
    unsigned ulp;
    float abs_tol, rel_tol;
};

/* Inputs: mostly uniform in [lo, hi], with specials and a few extremes. */
static void fill_x(float *x, size_t n, float lo, float hi)
{
    static const float specials[] = {
        0.0f, -0.0f, INFINITY, -INFINITY, NAN, -NAN, 1e-40f, -1e-40f,
        1e-20f, -1e-20f, 30.0f, -30.0f, 1e30f, -1e30f, 3.4e38f, -3.4e38f,
        0.625f, -0.625f, 0.875f, -0.875f, 14.28f, -14.28f, 20.0f, -20.0f,
        9.0f, -9.0f, 103.9f, -103.9f, 10.1f, -10.1f,
    };
    const size_t ns = sizeof specials / sizeof specials[0];
    ck_fill_f32(x, n, lo, hi);
    for (size_t i = 0; i < n; i++) {
        if (ck_randi(0, 15) == 0) {
            x[i] = specials[(size_t)ck_randi(0, (int)ns - 1)];
        }
    }
}

static double gelu_arg2(float x)
{
    const double xd = x;
    return fabs(1.5957691216057308 * xd * (1.0 + 0.044715 * xd * xd));
}

static bool agree(float got, float want, float x, const struct tol *t)
{
    /* The SIMD paths may flush tiny results to zero (kernels.h). */
    if (t->kind != TOL_EXACT && fabsf(want) < KERN_ACT_FLUSH_BELOW &&
        fabsf(got - want) <= KERN_ACT_FLUSH_BELOW) {
        return true;
    }
    switch (t->kind) {
    case TOL_EXACT: {
        if (isnan(got) || isnan(want)) {
            return isnan(got) && isnan(want);
        }
        uint32_t a, b;
        memcpy(&a, &got, 4);
        memcpy(&b, &want, 4);
        return a == b;
    }
    case TOL_ULP:
        return ck_ulp_f32(got, want) <= t->ulp;
    case TOL_GELU: {
        double bound = t->ulp;
        if (x < 0.0f) {
            bound += KERN_ACT_GELU_ULP_PER_U * gelu_arg2(x);
        }
        return (double)ck_ulp_f32(got, want) <= bound;
    }
    case TOL_CLOSE:
        return ck_close_f32(got, want, t->abs_tol, t->rel_tol);
    }
    return false;
}

static void bench_unary(kern_act_fn ref, kern_act_fn fn, const char *what)
{
    float *x = malloc(BENCH_N * sizeof *x);
    float *y = malloc(BENCH_N * sizeof *y);
    if (!x || !y) {
        free(x);
        free(y);
        return;
    }
    ck_fill_f32(x, BENCH_N, -6.0f, 6.0f);
    double tr[BENCH_REPS], tf[BENCH_REPS];
    for (int r = 0; r < BENCH_REPS; r++) {
        double t0 = ck_now_ns();
        ref(y, x, BENCH_N);
        double t1 = ck_now_ns();
        fn(y, x, BENCH_N);
        double t2 = ck_now_ns();
        tr[r] = t1 - t0;
        tf[r] = t2 - t1;
    }
    ck_bench_report(what, ck_median(tr, BENCH_REPS),
                    ck_median(tf, BENCH_REPS));
    free(x);
    free(y);
}

static void bench_binary(kern_act_bwd_fn ref, kern_act_bwd_fn fn,
                         const char *what, float lo, float hi)
{
    float *go = malloc(BENCH_N * sizeof *go);
    float *v = malloc(BENCH_N * sizeof *v);
    float *gi = malloc(BENCH_N * sizeof *gi);
    if (go && v && gi) {
        ck_fill_f32(go, BENCH_N, -2.0f, 2.0f);
        ck_fill_f32(v, BENCH_N, lo, hi);
        double tr[BENCH_REPS], tf[BENCH_REPS];
        for (int r = 0; r < BENCH_REPS; r++) {
            double t0 = ck_now_ns();
            ref(gi, go, v, BENCH_N);
            double t1 = ck_now_ns();
            fn(gi, go, v, BENCH_N);
            double t2 = ck_now_ns();
            tr[r] = t1 - t0;
            tf[r] = t2 - t1;
        }
        ck_bench_report(what, ck_median(tr, BENCH_REPS),
                        ck_median(tf, BENCH_REPS));
    }
    free(go);
    free(v);
    free(gi);
}

static void check_unary(kern_act_fn ref, kern_act_fn fn, const char *name,
                        float lo, float hi, struct tol t)
{
    if (!ck_func((const void *)fn, "%s", name)) {
        return;
    }
    static float x[MAX_N], want[MAX_N], got[MAX_N + GUARD], inpl[MAX_N];
    for (int iter = 0; iter < 60; iter++) {
        size_t n = iter < 40 ? (size_t)iter : (size_t)ck_randi(1, MAX_N);
        if (n > MAX_N) {
            n = MAX_N;
        }
        fill_x(x, n, lo, hi);
        ref(want, x, n);
        ck_poison(got, sizeof got);
        fn(got, x, n);
        for (size_t i = 0; i < n; i++) {
            if (!agree(got[i], want[i], x[i], &t)) {
                ck_fail("n %zu x[%zu] = %a: got %a, want %a (%u ulp)", n, i,
                        (double)x[i], (double)got[i], (double)want[i],
                        ck_ulp_f32(got[i], want[i]));
                break;
            }
        }
        uint32_t poison;
        ck_poison(&poison, sizeof poison);
        for (size_t i = n; i < n + GUARD; i++) {
            if (memcmp(&got[i], &poison, 4) != 0) {
                ck_fail("n %zu: wrote past the end at %zu", n, i);
                break;
            }
        }
        /* In place gives the same bits as out of place. */
        memcpy(inpl, x, n * sizeof *x);
        fn(inpl, inpl, n);
        if (n && memcmp(inpl, got, n * sizeof *got) != 0) {
            ck_fail("n %zu: in-place result differs", n);
        }
    }
    if (ck_bench_on()) {
        bench_unary(ref, fn, name);
    }
    ck_report();
}

/* The activations with parameters: the unary check for a few parameter
 * pairs, random ones among them. */
static void check_param(kern_act_param_fn ref, kern_act_param_fn fn,
                        const char *name, float lo, float hi,
                        const float (*params)[2], size_t nparams,
                        struct tol t)
{
    if (!ck_func((const void *)fn, "%s", name)) {
        return;
    }
    static float x[MAX_N], want[MAX_N], got[MAX_N + GUARD], inpl[MAX_N];
    for (int iter = 0; iter < 60; iter++) {
        size_t n = iter < 40 ? (size_t)iter : (size_t)ck_randi(1, MAX_N);
        if (n > MAX_N) {
            n = MAX_N;
        }
        const float *pp = params[(size_t)iter % nparams];
        fill_x(x, n, lo, hi);
        ref(want, x, n, pp[0], pp[1]);
        ck_poison(got, sizeof got);
        fn(got, x, n, pp[0], pp[1]);
        for (size_t i = 0; i < n; i++) {
            if (!agree(got[i], want[i], x[i], &t)) {
                ck_fail("n %zu params (%a, %a) x[%zu] = %a: got %a, want %a",
                        n, (double)pp[0], (double)pp[1], i, (double)x[i],
                        (double)got[i], (double)want[i]);
                break;
            }
        }
        uint32_t poison;
        ck_poison(&poison, sizeof poison);
        for (size_t i = n; i < n + GUARD; i++) {
            if (memcmp(&got[i], &poison, 4) != 0) {
                ck_fail("n %zu: wrote past the end at %zu", n, i);
                break;
            }
        }
        memcpy(inpl, x, n * sizeof *x);
        fn(inpl, inpl, n, pp[0], pp[1]);
        if (n && memcmp(inpl, got, n * sizeof *got) != 0) {
            ck_fail("n %zu: in-place result differs", n);
        }
    }
    if (ck_bench_on()) {
        float *bx = malloc(BENCH_N * sizeof *bx);
        float *by = malloc(BENCH_N * sizeof *by);
        if (bx && by) {
            ck_fill_f32(bx, BENCH_N, -6.0f, 6.0f);
            double tr[BENCH_REPS], tf[BENCH_REPS];
            for (int r = 0; r < BENCH_REPS; r++) {
                const double t0 = ck_now_ns();
                ref(by, bx, BENCH_N, params[0][0], params[0][1]);
                const double t1 = ck_now_ns();
                fn(by, bx, BENCH_N, params[0][0], params[0][1]);
                const double t2 = ck_now_ns();
                tr[r] = t1 - t0;
                tf[r] = t2 - t1;
            }
            ck_bench_report(name, ck_median(tr, BENCH_REPS),
                            ck_median(tf, BENCH_REPS));
        }
        free(bx);
        free(by);
    }
    ck_report();
}

static void check_binary(kern_act_bwd_fn ref, kern_act_bwd_fn fn,
                         const char *name, float lo, float hi, struct tol t)
{
    if (!ck_func((const void *)fn, "%s", name)) {
        return;
    }
    static float go[MAX_N], v[MAX_N], want[MAX_N], got[MAX_N + GUARD],
        inpl[MAX_N];
    for (int iter = 0; iter < 60; iter++) {
        size_t n = iter < 40 ? (size_t)iter : (size_t)ck_randi(1, MAX_N);
        if (n > MAX_N) {
            n = MAX_N;
        }
        fill_x(v, n, lo, hi);
        ck_fill_f32(go, n, -2.0f, 2.0f);
        ref(want, go, v, n);
        ck_poison(got, sizeof got);
        fn(got, go, v, n);
        for (size_t i = 0; i < n; i++) {
            if (!agree(got[i], want[i], v[i], &t)) {
                ck_fail("n %zu v[%zu] = %a, go %a: got %a, want %a", n, i,
                        (double)v[i], (double)go[i], (double)got[i],
                        (double)want[i]);
                break;
            }
        }
        uint32_t poison;
        ck_poison(&poison, sizeof poison);
        for (size_t i = n; i < n + GUARD; i++) {
            if (memcmp(&got[i], &poison, 4) != 0) {
                ck_fail("n %zu: wrote past the end at %zu", n, i);
                break;
            }
        }
        memcpy(inpl, go, n * sizeof *go);
        fn(inpl, inpl, v, n); /* grad_in == grad_out */
        if (n && memcmp(inpl, got, n * sizeof *got) != 0) {
            ck_fail("n %zu: in-place result differs", n);
        }
    }
    if (ck_bench_on()) {
        bench_binary(ref, fn, name, lo, hi);
    }
    ck_report();
}

void check_act(unsigned flags);

void check_act(unsigned flags)
{
    struct kern_act_dsp c, d;
    kern_act_dsp_init(&c, 0);
    kern_act_dsp_init(&d, flags);

    /* Tolerances: the SIMD bounds of kernels.h (4 ulp) plus the C
     * reference's own libm error (glibc: <= 2 ulp for tanhf, erff, expf);
     * the GELU references are correctly rounded, so the GELU bounds apply
     * as stated. Backward derivatives: within 1e-5 relative or 1e-6
     * absolute (|grad_out| <= 2), which covers the derivative's zero near
     * x = -0.75 where relative error is meaningless. */
    const struct tol ulp6 = {TOL_ULP, 6, 0, 0};
    const struct tol exact = {TOL_EXACT, 0, 0, 0};
    const struct tol gelu = {TOL_GELU, 4, 0, 0};
    const struct tol gelu_erf = {TOL_ULP, KERN_ACT_MAX_ULP_GELU_ERF, 0, 0};
    const struct tol close = {TOL_CLOSE, 0, 1e-6f, 1e-5f};

    check_unary(c.tanh_f32, d.tanh_f32, "tanh_f32", -10.0f, 10.0f, ulp6);
    check_unary(c.erf_f32, d.erf_f32, "erf_f32", -5.0f, 5.0f, ulp6);
    check_unary(c.sigmoid_f32, d.sigmoid_f32, "sigmoid_f32", -110.0f, 30.0f,
                ulp6);
    check_unary(c.relu_f32, d.relu_f32, "relu_f32", -4.0f, 4.0f, exact);
    check_unary(c.gelu_f32, d.gelu_f32, "gelu_f32", -12.0f, 8.0f, gelu);
    check_unary(c.gelu_erf_f32, d.gelu_erf_f32, "gelu_erf_f32", -15.0f, 8.0f,
                gelu_erf);
    /* silu, softplus, elu: the SIMD bound of kernels.h plus 1 ulp for the
     * C reference (double, rounded once); the others are exact. */
    const struct tol silu = {TOL_ULP, KERN_ACT_MAX_ULP_SILU + 1, 0, 0};
    const struct tol softplus = {TOL_ULP, KERN_ACT_MAX_ULP_SOFTPLUS + 1, 0,
                                 0};
    const struct tol elu = {TOL_ULP, KERN_ACT_MAX_ULP_ELU + 1, 0, 0};
    check_unary(c.silu_f32, d.silu_f32, "silu_f32", -110.0f, 30.0f, silu);
    check_unary(c.softplus_f32, d.softplus_f32, "softplus_f32", -110.0f,
                30.0f, softplus);
    check_unary(c.hard_swish_f32, d.hard_swish_f32, "hard_swish_f32", -5.0f,
                5.0f, exact);
    const float hs[][2] = {{0.2f, 0.5f},
                           {KERN_HARD_SWISH_ALPHA, KERN_HARD_SWISH_BETA},
                           {ck_randf(-3.0f, 3.0f), ck_randf(-2.0f, 2.0f)},
                           {-1.0f, 0.0f}};
    check_param(c.hard_sigmoid_f32, d.hard_sigmoid_f32, "hard_sigmoid_f32",
                -8.0f, 8.0f, hs, 4, exact);
    const float lk[][2] = {{0.01f, 0}, {0.2f, 0}, {ck_randf(-2, 2), 0}};
    check_param(c.leaky_relu_f32, d.leaky_relu_f32, "leaky_relu_f32", -4.0f,
                4.0f, lk, 3, exact);
    const float el[][2] = {{1.0f, 0}, {0.5f, 0}, {ck_randf(-3, 3), 0}};
    check_param(c.elu_f32, d.elu_f32, "elu_f32", -110.0f, 10.0f, el, 3, elu);
    const float cl[][2] = {{0.0f, 6.0f}, {-INFINITY, 1.5f},
                           {ck_randf(-3, 0), ck_randf(0, 3)},
                           {2.0f, -1.0f}, {-0.0f, INFINITY}};
    check_param(c.clip_f32, d.clip_f32, "clip_f32", -8.0f, 8.0f, cl, 5,
                exact);
    check_binary(c.tanh_backward_f32, d.tanh_backward_f32,
                 "tanh_backward_f32", -1.0f, 1.0f, exact);
    check_binary(c.sigmoid_backward_f32, d.sigmoid_backward_f32,
                 "sigmoid_backward_f32", 0.0f, 1.0f, exact);
    check_binary(c.relu_backward_f32, d.relu_backward_f32,
                 "relu_backward_f32", -4.0f, 4.0f, exact);
    check_binary(c.gelu_backward_f32, d.gelu_backward_f32,
                 "gelu_backward_f32", -12.0f, 12.0f, close);
    check_binary(c.gelu_erf_backward_f32, d.gelu_erf_backward_f32,
                 "gelu_erf_backward_f32", -15.0f, 15.0f, close);
}
