/* Checker for the layer normalisation: every path against the C
 * reference, and the reference against the formula in double.
 *
 * Tolerance: the paths share the float steps ((x - m) * rstd, one FMA with
 * gamma and beta) and differ only in the order of the double sums of the
 * mean and variance, which can move the float mean m or rstd by one
 * rounding; y then moves by at most |gamma| (|h| + rstd |m|) 2^-23, h the
 * normalised value. The bound below is four times that, plus beta's
 * share. Against double, the reference's float steps add a few roundings
 * of the same terms: the same form of bound, eight times. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checkkern.h"
#include "norm.h"

enum { MAX_COLS = 1100, MAX_ROWS = 7, GUARD = 19 };

static float xs[MAX_ROWS * MAX_COLS], gm[MAX_COLS], bt[MAX_COLS];
static float want[MAX_ROWS * MAX_COLS], got[MAX_ROWS * MAX_COLS + GUARD];
static float poison[MAX_ROWS * MAX_COLS + GUARD];

/* The row's mean and 1/sqrt(var + eps) in double, by the formula. */
static void exact_stats(const float *x, size_t n, float eps, double *m,
                        double *rs)
{
    long double s = 0, v = 0;
    for (size_t c = 0; c < n; c++) {
        s += x[c];
    }
    *m = (double)(s / n);
    for (size_t c = 0; c < n; c++) {
        v += ((long double)x[c] - *m) * ((long double)x[c] - *m);
    }
    *rs = 1.0 / sqrt((double)(v / n) + eps);
}

static void fill(size_t rows, size_t cols, int affine)
{
    for (size_t r = 0; r < rows; r++) {
        /* rows far from zero (1000 + noise) test the cancellation; some
         * rows constant (variance 0: y = beta, rstd = 1/sqrt(eps)) */
        const float off = ck_randi(0, 3) == 0 ? ck_randf(-2000.0f, 2000.0f)
                                               : 0.0f;
        const float spread = ck_randi(0, 9) == 0 ? 0.0f
                                                  : ck_randf(0.01f, 20.0f);
        for (size_t c = 0; c < cols; c++) {
            xs[r * cols + c] = off + spread * ck_randf(-1.0f, 1.0f);
        }
    }
    for (size_t c = 0; c < cols; c++) {
        gm[c] = affine ? ck_randf(-2.0f, 2.0f) : 1.0f;
        bt[c] = affine ? ck_randf(-2.0f, 2.0f) : 0.0f;
    }
}

static void check_layernorm(kern_layernorm_fn ref, kern_layernorm_fn fn,
                            bool vs_double)
{
    if (!ck_func((const void *)fn, "layernorm")) {
        return;
    }
    for (int iter = 0; iter < 300; iter++) {
        const size_t cols = iter < 40 ? (size_t)iter + 1
                                      : (size_t)ck_randi(1, MAX_COLS);
        const size_t rows = (size_t)ck_randi(1, MAX_ROWS);
        const int affine = iter % 3 != 0;
        const float eps = iter % 2 ? 1e-5f : 1e-12f;
        fill(rows, cols, affine);
        ref(xs, rows, cols, affine ? gm : NULL, affine ? bt : NULL, eps,
            want);
        ck_poison(got, sizeof got);
        fn(xs, rows, cols, affine ? gm : NULL, affine ? bt : NULL, eps, got);
        for (size_t r = 0; r < rows; r++) {
            double m, rs;
            exact_stats(xs + r * cols, cols, eps, &m, &rs);
            for (size_t c = 0; c < cols; c++) {
                const size_t i = r * cols + c;
                const double h = ((double)xs[i] - m) * rs;
                const double scale =
                    fabs(gm[c]) * (fabs(h) + rs * fabs(m)) + fabs(bt[c]);
                const double tol = 4.0 * scale * FLT_EPSILON + FLT_MIN;
                if (!(fabs((double)got[i] - want[i]) <= tol)) {
                    ck_fail("rows %zu cols %zu y[%zu][%zu]: got %.9g, "
                            "reference %.9g (tolerance %.3g)",
                            rows, cols, r, c, got[i], want[i], tol);
                    goto next;
                }
                const double exact = h * gm[c] + bt[c];
                if (vs_double && !(fabs(want[i] - exact) <= 2.0 * tol)) {
                    ck_fail("rows %zu cols %zu y[%zu][%zu]: reference "
                            "%.9g, formula in double %.9g",
                            rows, cols, r, c, want[i], exact);
                    goto next;
                }
            }
        }
        ck_poison(poison, sizeof poison);
        if (memcmp(got + rows * cols, poison + rows * cols,
                   GUARD * sizeof *got) != 0) {
            ck_fail("rows %zu cols %zu: wrote past the end", rows, cols);
        }
    next:;
    }
    /* in place, and NaN and inf rows */
    fill(2, 37, 1);
    ref(xs, 2, 37, gm, bt, 1e-5f, want);
    memcpy(got, xs, 2 * 37 * sizeof *got);
    fn(got, 2, 37, gm, bt, 1e-5f, got);
    for (size_t i = 0; i < 2 * 37; i++) {
        if (!ck_close_f32(got[i], want[i], 1e-5f, 1e-5f)) {
            ck_fail("in place: y[%zu] got %.9g want %.9g", i, got[i],
                    want[i]);
            break;
        }
    }
    xs[3] = NAN;
    xs[37 + 5] = INFINITY;
    fn(xs, 2, 37, gm, bt, 1e-5f, got);
    for (size_t i = 0; i < 2 * 37; i++) {
        if (!isnan(got[i])) {
            ck_fail("a row with NaN or inf: y[%zu] = %g, not NaN", i,
                    got[i]);
            break;
        }
    }
    if (ck_bench_on()) {
        enum { BR = 256, BC = 768, REPS = 21 };
        float *bx = malloc(BR * BC * sizeof *bx);
        float *by = malloc(BR * BC * sizeof *by);
        if (bx && by) {
            ck_fill_f32(bx, BR * BC, -3.0f, 3.0f);
            double tr[REPS], tf[REPS];
            for (int r = 0; r < REPS; r++) {
                double t0 = ck_now_ns();
                ref(bx, BR, BC, gm, bt, 1e-5f, by);
                double t1 = ck_now_ns();
                fn(bx, BR, BC, gm, bt, 1e-5f, by);
                double t2 = ck_now_ns();
                tr[r] = t1 - t0;
                tf[r] = t2 - t1;
            }
            ck_bench_report("layernorm 256x768", ck_median(tr, REPS),
                            ck_median(tf, REPS));
        }
        free(bx);
        free(by);
    }
    ck_report();
}

void check_norm(unsigned flags);

void check_norm(unsigned flags)
{
    struct kern_norm_dsp c, d;
    kern_norm_dsp_init(&c, 0);
    kern_norm_dsp_init(&d, flags);
    check_layernorm(c.layernorm, d.layernorm, flags == 0);
}
