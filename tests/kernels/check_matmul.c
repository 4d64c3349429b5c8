/* Checks of the float32 matrix-product paths.
 *
 * Every path (the chooser, and each forced path) is compared, on random
 * shapes with odd tails, against a double-precision product computed here.
 * Tolerance: |c - exact| <= k * FLT_EPSILON * max|a| * max|b|
 * + 2 * FLT_EPSILON * |c0| (c0 the prior C under accumulate). A float sum
 * of k products is within about k * eps * sum|a_p b_p| of the exact sum
 * whatever its order or blocking, and the data here are drawn so that the
 * cancellation which makes that bound loose is what every order shares; the
 * stated bound leaves room for any order and for fused multiply-adds.
 * Leading dimensions exceed the rows, the gaps of A and B hold NaN (read
 * one and the result shows it), C starts poisoned (NaN) unless the product
 * accumulates, and C's gaps must come back untouched. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checkkern.h"
#include "matmul.h"

void check_matmul(unsigned flags);

struct mm_case {
    size_t m, n, k;
    size_t lda, ldb, ldc;
    unsigned flags;
};

static size_t a_rows(const struct mm_case *t)
{
    return (t->flags & KERN_MM_TRANS_A) ? t->k : t->m;
}

static size_t a_cols(const struct mm_case *t)
{
    return (t->flags & KERN_MM_TRANS_A) ? t->m : t->k;
}

static size_t b_rows(const struct mm_case *t)
{
    return (t->flags & KERN_MM_TRANS_B) ? t->n : t->k;
}

static size_t b_cols(const struct mm_case *t)
{
    return (t->flags & KERN_MM_TRANS_B) ? t->k : t->n;
}

/* Fills rows x cols of a ld-strided buffer with uniform values in [-1, 1)
 * and the gaps with NaN; returns max |x|. */
static float fill_matrix(float *p, size_t rows, size_t cols, size_t ld)
{
    ck_poison(p, rows * ld * sizeof *p);
    float mx = 0.0f;
    for (size_t r = 0; r < rows; r++) {
        ck_fill_f32(p + r * ld, cols, -1.0f, 1.0f);
        for (size_t j = 0; j < cols; j++) {
            mx = fmaxf(mx, fabsf(p[r * ld + j]));
        }
    }
    return mx;
}

/* Runs one case of fn and compares; false on the first mismatch. */
static bool run_case(kern_sgemm_fn fn, const struct mm_case *t)
{
    const size_t ar = a_rows(t), br = b_rows(t);
    float *a = malloc(ar * t->lda * sizeof *a);
    float *b = malloc(br * t->ldb * sizeof *b);
    float *c = malloc(t->m * t->ldc * sizeof *c);
    float *c0 = malloc(t->m * t->ldc * sizeof *c0);
    bool ok = true;
    if (!a || !b || !c || !c0) {
        ok = ck_fail("out of memory for %zux%zux%zu", t->m, t->k, t->n);
        goto out;
    }
    const float amax = fill_matrix(a, ar, a_cols(t), t->lda);
    const float bmax = fill_matrix(b, br, b_cols(t), t->ldb);
    const int acc = (t->flags & KERN_MM_ACCUMULATE) != 0;
    ck_poison(c0, t->m * t->ldc * sizeof *c0);
    if (acc) {
        for (size_t i = 0; i < t->m; i++) {
            ck_fill_f32(c0 + i * t->ldc, t->n, -4.0f, 4.0f);
        }
    }
    memcpy(c, c0, t->m * t->ldc * sizeof *c);

    const int st = fn(t->flags, t->m, t->n, t->k, a, t->lda, b, t->ldb, c,
                      t->ldc);
    if (st != KERN_OK) {
        ok = ck_fail("%zux%zux%zu flags %u: status %d", t->m, t->k, t->n,
                     t->flags, st);
        goto out;
    }
    const int ta = (t->flags & KERN_MM_TRANS_A) != 0;
    const int tb = (t->flags & KERN_MM_TRANS_B) != 0;
    const double base = (double)t->k * FLT_EPSILON * amax * bmax;
    for (size_t i = 0; i < t->m && ok; i++) {
        for (size_t j = 0; j < t->ldc && ok; j++) {
            const float got = c[i * t->ldc + j];
            if (j >= t->n) {
                if (memcmp(&got, &c0[i * t->ldc + j], sizeof got) != 0) {
                    ok = ck_fail("%zux%zux%zu flags %u ldc %zu: gap of C "
                                 "at (%zu, %zu) written",
                                 t->m, t->k, t->n, t->flags, t->ldc, i, j);
                }
                continue;
            }
            double want = acc ? c0[i * t->ldc + j] : 0.0;
            for (size_t p = 0; p < t->k; p++) {
                const double x = ta ? a[p * t->lda + i] : a[i * t->lda + p];
                const double y = tb ? b[j * t->ldb + p] : b[p * t->ldb + j];
                want += x * y;
            }
            const double tol =
                base + (acc ? 2.0 * FLT_EPSILON * fabs(c0[i * t->ldc + j])
                            : 0.0) + 1e-30;
            if (!(fabs((double)got - want) <= tol)) {
                ok = ck_fail("%zux%zux%zu flags %u (lda %zu ldb %zu ldc "
                             "%zu): C(%zu, %zu) = %.9g, want %.9g (tol %.3g)",
                             t->m, t->k, t->n, t->flags, t->lda, t->ldb,
                             t->ldc, i, j, got, want, tol);
            }
        }
    }
out:
    free(a);
    free(b);
    free(c);
    free(c0);
    return ok;
}

static struct mm_case make_case(size_t m, size_t n, size_t k, unsigned fl,
                                int pad)
{
    struct mm_case t = {m, n, k, 0, 0, 0, fl};
    t.lda = a_cols(&t) + (pad ? (size_t)ck_randi(0, 5) : 0);
    t.ldb = b_cols(&t) + (pad ? (size_t)ck_randi(0, 5) : 0);
    t.ldc = n + (pad ? (size_t)ck_randi(0, 5) : 0);
    return t;
}

/* Random shapes (every flag combination each) plus shapes that cross the
 * blocking boundaries of the packed path and the edge shapes of small
 * networks. gemv_only restricts to m == 1 or n == 1. */
static void check_path(kern_sgemm_fn fn, bool gemv_only)
{
    static const size_t fixed[][3] = {
        {1, 1, 1},     {1, 17, 1},    {17, 1, 1},    {2, 3, 4},
        {32, 64, 784}, {1, 64, 784},  {32, 10, 64},  {16, 256, 1024},
        {1, 512, 512}, {531, 37, 260}, {13, 4101, 9}, {70, 97, 513},
        {12, 32, 256}, {25, 33, 1},   {1, 129, 300}, {300, 1, 129},
        /* A packed by the packed path: tall, or rows 4 KiB apart */
        {1030, 40, 20}, {37, 50, 1024},
    };
    const int randoms = 40;
    for (int r = 0; r < randoms; r++) {
        size_t m = (size_t)ck_randi(1, 40), n = (size_t)ck_randi(1, 90);
        const size_t k = (size_t)ck_randi(1, 300);
        if (r % 5 == 0) {
            m = 1; /* always some row vectors and column vectors */
        } else if (r % 5 == 1) {
            n = 1;
        } else if (gemv_only) {
            if (r % 2) {
                m = 1;
            } else {
                n = 1;
            }
        }
        for (unsigned fl = 0; fl < 8; fl++) {
            struct mm_case t = make_case(m, n, k, fl, 1);
            if (!run_case(fn, &t)) {
                return;
            }
        }
    }
    for (size_t s = 0; s < sizeof fixed / sizeof fixed[0]; s++) {
        const size_t m = fixed[s][0], n = fixed[s][1], k = fixed[s][2];
        if (gemv_only && m != 1 && n != 1) {
            continue;
        }
        for (unsigned fl = 0; fl < 8; fl++) {
            struct mm_case t = make_case(m, n, k, fl, (int)(fl & 1));
            if (!run_case(fn, &t)) {
                return;
            }
        }
    }
}

/* Median time of one product, in ns. */
static double time_product(kern_sgemm_fn fn, size_t m, size_t n, size_t k,
                           const float *a, const float *b, float *c)
{
    enum { REPS = 15 };
    double t[REPS];
    const double flops = 2.0 * (double)m * (double)n * (double)k;
    /* Repeat each sample to about 200 us so the clock resolves it. */
    int inner = (int)(2e5 / (flops / 50.0) + 1);
    if (inner > 1000) {
        inner = 1000;
    }
    for (int r = 0; r < REPS; r++) {
        const double t0 = ck_now_ns();
        for (int i = 0; i < inner; i++) {
            fn(0, m, n, k, a, k, b, n, c, n);
        }
        t[r] = (ck_now_ns() - t0) / inner;
    }
    return ck_median(t, REPS);
}

static void bench_chooser(kern_sgemm_fn ref, kern_sgemm_fn fn)
{
    static const size_t shapes[][3] = {
        {32, 784, 64}, {256, 784, 64}, {16, 1024, 256}, {32, 64, 10},
        {1, 784, 64},  {1, 512, 512},  {256, 256, 256}, {512, 512, 512},
    };
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        const size_t m = shapes[s][0], k = shapes[s][1], n = shapes[s][2];
        float *a = malloc(m * k * sizeof *a);
        float *b = malloc(k * n * sizeof *b);
        float *c = malloc(m * n * sizeof *c);
        if (a && b && c) {
            ck_fill_f32(a, m * k, -1.0f, 1.0f);
            ck_fill_f32(b, k * n, -1.0f, 1.0f);
            const double tr = time_product(ref, m, n, k, a, b, c);
            const double tf = time_product(fn, m, n, k, a, b, c);
            char what[64];
            snprintf(what, sizeof what, "%zux%zux%zu %.0f GFLOP/s", m, k, n,
                     2.0 * (double)m * (double)n * (double)k / tf);
            ck_bench_report(what, tr, tf);
        }
        free(a);
        free(b);
        free(c);
    }
}

void check_matmul(unsigned flags)
{
    struct kern_matmul_dsp ref, dsp;
    kern_matmul_dsp_init(&ref, 0);
    kern_matmul_dsp_init(&dsp, flags);
    const struct {
        kern_sgemm_fn fn;
        const char *name;
        bool gemv_only;
    } paths[] = {
        {dsp.sgemm_ref, "sgemm_ref", false},
        {dsp.sgemm, "sgemm", false},
        {dsp.sgemm_direct, "sgemm_direct", false},
        {dsp.sgemm_packed, "sgemm_packed", false},
        {dsp.sgemv, "sgemv", true},
    };
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++) {
        if (ck_func((const void *)paths[i].fn, "%s", paths[i].name)) {
            check_path(paths[i].fn, paths[i].gemv_only);
            if (ck_bench_on() && i == 1) {
                bench_chooser(ref.sgemm_ref, paths[i].fn);
            }
            ck_report();
        }
    }
    /* The chooser's choice computes the product, for every shape class it
     * tells apart (row and column vectors, skinny, tiny, deep, tall), in
     * all eight transpose/accumulate forms. */
    if (ck_func((const void *)dsp.pick, "sgemm_pick")) {
        static const size_t dims[] = {1, 2, 7, 33, 100, 531};
        const size_t nd = sizeof dims / sizeof dims[0];
        for (size_t x = 0; x < nd * nd * nd; x++) {
            const size_t m = dims[x % nd], n = dims[x / nd % nd];
            const size_t k = dims[x / (nd * nd)];
            const kern_sgemm_fn fn = dsp.pick(m, n, k);
            if (!fn) {
                ck_fail("%zux%zux%zu: no path", m, n, k);
                continue;
            }
            for (unsigned fl = 0; fl < 8; fl++) {
                struct mm_case t = make_case(m, n, k, fl, (int)(fl & 1));
                if (!run_case(fn, &t)) {
                    break;
                }
            }
        }
        ck_report();
    }
}
