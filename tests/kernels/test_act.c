/* Activations against double-precision references on every path this CPU
 * has: dense sweeps with measured ulp errors (asserted against the bounds
 * of kernels.h), GELU forms against each other, derivatives against
 * central differences, limits, NaN and API errors. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "act.h"
#include "edgefit/kernels.h"

#define K_GELU 0.7978845608028654
#define A_GELU 0.044715

enum { BLOCK = 1 << 16, NPATHS = 4 };

struct path {
    const char *name;
    unsigned flags;
    struct kern_act_dsp dsp;
};

static struct path paths[NPATHS];
static int npaths;

static int setup(void **state)
{
    (void)state;
    static const struct {
        const char *name;
        unsigned flags;
    } all[NPATHS] = {
        {"c", 0},
        {"avx2", KERN_CPU_AVX2},
        {"avx512", KERN_CPU_AVX2 | KERN_CPU_AVX512},
        {"neon", KERN_CPU_NEON},
    };
    const unsigned host = kern_cpu_flags();
    npaths = 0;
    for (int i = 0; i < NPATHS; i++) {
        if ((all[i].flags & host) != all[i].flags) {
            continue;
        }
        paths[npaths].name = all[i].name;
        paths[npaths].flags = all[i].flags;
        kern_act_dsp_init(&paths[npaths].dsp, all[i].flags);
        npaths++;
    }
    return 0;
}

static float bits_f(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* Distance in ulp between a float and the float nearest to a double. */
static double ulp_err(float got, double want)
{
    const float w = (float)want;
    if (isnan(got) || isnan(w)) {
        return isnan(got) && isnan(w) ? 0.0 : INFINITY;
    }
    int32_t a, b;
    memcpy(&a, &got, 4);
    memcpy(&b, &w, 4);
    const int64_t la = a < 0 ? (int64_t)INT32_MIN - a : a;
    const int64_t lb = b < 0 ? (int64_t)INT32_MIN - b : b;
    return (double)(la > lb ? la - lb : lb - la);
}

static double ref_sigmoid(double x)
{
    return x >= 0 ? 1.0 / (1.0 + exp(-x)) : exp(x) / (1.0 + exp(x));
}

static double ref_gelu(double x)
{
    if (isinf(x)) {
        return x > 0 ? x : 0.0;
    }
    const double u = K_GELU * (x + A_GELU * x * x * x);
    return x / (1.0 + exp(-2.0 * u));
}

static double ref_gelu_erf(double x)
{
    if (isinf(x)) {
        return x > 0 ? x : 0.0;
    }
    return 0.5 * x * erfc(-x / sqrt(2.0));
}

enum fn_id { F_TANH, F_ERF, F_SIGMOID, F_GELU, F_GELU_ERF, NFN };

static const char *const fn_names[NFN] = {"tanh", "erf", "sigmoid", "gelu",
                                          "gelu_erf"};

static kern_act_fn fn_of(const struct kern_act_dsp *d, int f)
{
    switch (f) {
    case F_TANH:
        return d->tanh_f32;
    case F_ERF:
        return d->erf_f32;
    case F_SIGMOID:
        return d->sigmoid_f32;
    case F_GELU:
        return d->gelu_f32;
    default:
        return d->gelu_erf_f32;
    }
}

static double ref_of(int f, double x)
{
    switch (f) {
    case F_TANH:
        return tanh(x);
    case F_ERF:
        return erf(x);
    case F_SIGMOID:
        return ref_sigmoid(x);
    case F_GELU:
        return ref_gelu(x);
    default:
        return ref_gelu_erf(x);
    }
}

/* The stated bound for one input (kernels.h). */
static double bound_of(int f, float x)
{
    switch (f) {
    case F_TANH:
        return KERN_ACT_MAX_ULP_TANH;
    case F_ERF:
        return KERN_ACT_MAX_ULP_ERF;
    case F_SIGMOID:
        return KERN_ACT_MAX_ULP_SIGMOID;
    case F_GELU: {
        if (x >= 0.0f) {
            return KERN_ACT_MAX_ULP_GELU;
        }
        const double xd = x;
        const double u2 = fabs(2.0 * K_GELU * (xd + A_GELU * xd * xd * xd));
        return KERN_ACT_MAX_ULP_GELU + KERN_ACT_GELU_ULP_PER_U * u2;
    }
    default:
        return KERN_ACT_MAX_ULP_GELU_ERF;
    }
}

struct sweep_stats {
    double max_ulp[NFN][NPATHS];
    float worst_x[NFN][NPATHS];
    double gelu_neg_per_u[NPATHS]; /* max (ulp - 4) / |2u| for x < 0 */
    double gelu_pos[NPATHS];       /* max ulp for x >= 0 */
    long fails;
};

/* Runs every function and path over xs[0..n) and folds errors in. */
static void sweep_block(const float *xs, size_t n, struct sweep_stats *st)
{
    static float out[BLOCK];
    static double ref[BLOCK];
    for (int f = 0; f < NFN; f++) {
        for (size_t i = 0; i < n; i++) {
            ref[i] = ref_of(f, xs[i]);
        }
        for (int p = 0; p < npaths; p++) {
            fn_of(&paths[p].dsp, f)(out, xs, n);
            for (size_t i = 0; i < n; i++) {
                if (fabs(ref[i]) < KERN_ACT_FLUSH_BELOW) {
                    /* May be flushed (kernels.h): absolute error only. */
                    if (fabs(out[i] - ref[i]) > KERN_ACT_FLUSH_BELOW) {
                        if (st->fails++ < 10) {
                            print_error("%s/%s x = %a: got %a, want %a\n",
                                        fn_names[f], paths[p].name,
                                        (double)xs[i], (double)out[i],
                                        ref[i]);
                        }
                    }
                    continue;
                }
                const double e = ulp_err(out[i], ref[i]);
                if (e > st->max_ulp[f][p]) {
                    st->max_ulp[f][p] = e;
                    st->worst_x[f][p] = xs[i];
                }
                if (f == F_GELU && xs[i] >= 0.0f && e > st->gelu_pos[p]) {
                    st->gelu_pos[p] = e;
                }
                if (f == F_GELU && xs[i] < 0.0f) {
                    const double xd = xs[i];
                    const double u2 =
                        fabs(2.0 * K_GELU * (xd + A_GELU * xd * xd * xd));
                    const double per = (e - KERN_ACT_MAX_ULP_GELU) / u2;
                    if (per > st->gelu_neg_per_u[p]) {
                        st->gelu_neg_per_u[p] = per;
                    }
                }
                if (e > bound_of(f, xs[i])) {
                    if (st->fails++ < 10) {
                        print_error("%s/%s x = %a: got %a, want %a "
                                    "(%.0f ulp > %.1f)\n",
                                    fn_names[f], paths[p].name,
                                    (double)xs[i], (double)out[i], ref[i], e,
                                    bound_of(f, xs[i]));
                    }
                }
            }
        }
    }
}

/* Every 61st float in [-10, 10] (about 36 million inputs), the ranges out
 * to +-110 every 4099th, and special values. */
static void test_sweep(void **state)
{
    (void)state;
    static struct sweep_stats st;
    static float xs[BLOCK];
    memset(&st, 0, sizeof st);
    const uint32_t ten = 0x41200000u;  /* 10.0f */
    const uint32_t far = 0x42dc0000u;  /* 110.0f */
    for (int sign = 0; sign < 2; sign++) {
        const uint32_t s = sign ? 0x80000000u : 0;
        size_t n = 0;
        for (uint64_t u = 0; u <= far; u += (u < ten ? 61 : 4099)) {
            xs[n++] = bits_f(s | (uint32_t)u);
            if (n == BLOCK) {
                sweep_block(xs, n, &st);
                n = 0;
            }
        }
        sweep_block(xs, n, &st);
    }
    const float specials[] = {INFINITY, -INFINITY, 3.4e38f, -3.4e38f, 1e30f,
                              -1e30f, 1e-45f, -1e-45f, 0.0f, -0.0f};
    sweep_block(specials, sizeof specials / sizeof specials[0], &st);

    printf("max ulp against double (x in [-110, 110], results of magnitude "
           ">= 2^-125; worst x):\n");
    for (int f = 0; f < NFN; f++) {
        printf("  %-9s", fn_names[f]);
        for (int p = 0; p < npaths; p++) {
            printf("  %s %3.0f (%+.4g)", paths[p].name, st.max_ulp[f][p],
                   (double)st.worst_x[f][p]);
        }
        printf("\n");
    }
    printf("  gelu x>=0: max ulp:");
    for (int p = 0; p < npaths; p++) {
        printf("  %s %.0f", paths[p].name, st.gelu_pos[p]);
    }
    printf("\n");
    printf("  gelu x<0: max (ulp - %d) / |2u|:", KERN_ACT_MAX_ULP_GELU);
    for (int p = 0; p < npaths; p++) {
        printf("  %s %.3f", paths[p].name, st.gelu_neg_per_u[p]);
    }
    printf("\n");
    assert_int_equal(st.fails, 0);
}

/* The GELU forms against each other: the unfused reference differs from
 * the fused one by its absolute error (about 2^-24 |x| from 1 + tanh, plus
 * the tanh kernel's), and the tanh form approximates the erf form to
 * within 5e-4 (the known maximum gap of the approximation is ~4.7e-4). */
static void test_gelu_forms(void **state)
{
    (void)state;
    enum { N = 200001 };
    float *x = malloc(N * sizeof *x);
    float *fused = malloc(N * sizeof *fused);
    float *unfused = malloc(N * sizeof *unfused);
    float *erf_form = malloc(N * sizeof *erf_form);
    float *scratch = malloc(N * sizeof *scratch);
    assert_non_null(x && fused && unfused && erf_form && scratch);
    for (int i = 0; i < N; i++) {
        x[i] = -12.0f + 24.0f * (float)i / (float)(N - 1);
    }
    assert_int_equal(kern_gelu_f32(fused, x, N), KERN_OK);
    assert_int_equal(kern_gelu_unfused_f32(unfused, x, N, scratch), KERN_OK);
    assert_int_equal(kern_gelu_erf_f32(erf_form, x, N), KERN_OK);
    double max_unf = 0, max_erf = 0;
    for (int i = 0; i < N; i++) {
        const double tol = 6e-7 * fmax(1.0, fabs(x[i]));
        const double du = fabs((double)fused[i] - unfused[i]);
        const double de = fabs((double)fused[i] - erf_form[i]);
        max_unf = fmax(max_unf, du / fmax(1.0, fabs(x[i])));
        max_erf = fmax(max_erf, de);
        if (du > tol || de > 5e-4) {
            print_error("x = %a: fused %a unfused %a erf %a\n", (double)x[i],
                        (double)fused[i], (double)unfused[i],
                        (double)erf_form[i]);
            fail();
        }
    }
    printf("gelu: |fused - unfused| / max(1,|x|) <= %.3g, "
           "|tanh form - erf form| <= %.3g\n", max_unf, max_erf);
    /* TinyTorch's example values (tanh form). */
    const float xs[5] = {-2, -1, 0, 1, 2};
    const double want[5] = {-0.04540230591222, -0.15880800939172, 0.0,
                            0.84119199060828, 1.95459769408778};
    float y[5];
    assert_int_equal(kern_gelu_f32(y, xs, 5), KERN_OK);
    for (int i = 0; i < 5; i++) {
        assert_true(fabs(y[i] - want[i]) <= 1e-6 * fmax(1.0, fabs(want[i])));
    }
    free(x);
    free(fused);
    free(unfused);
    free(erf_form);
    free(scratch);
}

static double gelu_tanh_d(double x)
{
    return 0.5 * x * (1.0 + tanh(K_GELU * (x + A_GELU * x * x * x)));
}

static double gelu_erf_d(double x)
{
    return 0.5 * x * erfc(-x / sqrt(2.0));
}

static double central(double (*g)(double), double x)
{
    const double h = 1e-5 * fmax(1.0, fabs(x));
    return (g(x + h) - g(x - h)) / (2.0 * h);
}

/* Backward kernels against central differences of the double forward
 * functions, on every path: |err| <= 2e-6 + 2e-5 |d| (the difference
 * quotient itself is good to ~1e-10). tanh and sigmoid take the forward
 * output y, computed by the same path. */
static void test_derivatives(void **state)
{
    (void)state;
    enum { N = 16001 };
    static float x[N], go[N], gi[N], y[N];
    for (int i = 0; i < N; i++) {
        x[i] = -8.0f + 16.0f * (float)i / (float)(N - 1);
        go[i] = 1.0f;
    }
    for (int p = 0; p < npaths; p++) {
        const struct kern_act_dsp *d = &paths[p].dsp;
        for (int which = 0; which < 4; which++) {
            const char *name = "";
            if (which == 0) {
                name = "gelu";
                d->gelu_backward_f32(gi, go, x, N);
            } else if (which == 1) {
                name = "gelu_erf";
                d->gelu_erf_backward_f32(gi, go, x, N);
            } else if (which == 2) {
                name = "tanh";
                d->tanh_f32(y, x, N);
                d->tanh_backward_f32(gi, go, y, N);
            } else {
                name = "sigmoid";
                d->sigmoid_f32(y, x, N);
                d->sigmoid_backward_f32(gi, go, y, N);
            }
            for (int i = 0; i < N; i++) {
                double want;
                if (which == 0) {
                    want = central(gelu_tanh_d, x[i]);
                } else if (which == 1) {
                    want = central(gelu_erf_d, x[i]);
                } else if (which == 2) {
                    const double t = tanh(x[i]);
                    want = 1.0 - t * t;
                } else {
                    const double s = ref_sigmoid(x[i]);
                    want = s * (1.0 - s);
                }
                if (fabs(gi[i] - want) > 2e-6 + 2e-5 * fabs(want)) {
                    print_error("%s/%s x = %a: got %a, want %.9g\n", name,
                                paths[p].name, (double)x[i], (double)gi[i],
                                want);
                    fail();
                }
            }
        }
        /* Scaling by grad_out, and the exact relu backward. */
        const float xr[6] = {-2.0f, -0.0f, 0.0f, 1e-30f, 3.0f, NAN};
        const float gr[6] = {5.0f, 5.0f, 5.0f, 5.0f, -7.0f, 1.0f};
        float out[6];
        d->relu_backward_f32(out, gr, xr, 6);
        assert_true(out[0] == 0.0f && out[1] == 0.0f && out[2] == 0.0f);
        assert_true(out[3] == 5.0f && out[4] == -7.0f && isnan(out[5]));
        const float g3[3] = {2.0f, -3.0f, 0.5f};
        const float x3[3] = {0.0f, 0.0f, 0.0f};
        d->gelu_backward_f32(out, g3, x3, 3); /* gelu'(0) = 1/2 */
        assert_float_equal(out[0], 1.0f, 1e-6f);
        assert_float_equal(out[1], -1.5f, 2e-6f);
        assert_float_equal(out[2], 0.25f, 1e-6f);
    }
}

/* Limits at +-inf, huge finite inputs, NaN, signed zeros, relu. */
static void test_limits(void **state)
{
    (void)state;
    const float in[8] = {INFINITY, -INFINITY, NAN, 3.4e38f, -3.4e38f, 0.0f,
                         -0.0f, -NAN};
    for (int p = 0; p < npaths; p++) {
        const struct kern_act_dsp *d = &paths[p].dsp;
        float o[8];
        d->tanh_f32(o, in, 8);
        assert_true(o[0] == 1.0f && o[1] == -1.0f && isnan(o[2]));
        assert_true(o[3] == 1.0f && o[4] == -1.0f);
        assert_true(o[5] == 0.0f && !signbit(o[5]) && signbit(o[6]));
        assert_true(isnan(o[7]));
        d->erf_f32(o, in, 8);
        assert_true(o[0] == 1.0f && o[1] == -1.0f && isnan(o[2]));
        assert_true(o[3] == 1.0f && o[4] == -1.0f && signbit(o[6]));
        d->sigmoid_f32(o, in, 8);
        assert_true(o[0] == 1.0f && o[1] == 0.0f && isnan(o[2]));
        assert_true(o[3] == 1.0f && o[4] == 0.0f && o[5] == 0.5f);
        d->gelu_f32(o, in, 8);
        assert_true(o[0] == INFINITY && o[1] == 0.0f && isnan(o[2]));
        assert_true(o[3] == 3.4e38f && o[4] == 0.0f && o[5] == 0.0f);
        assert_true(isnan(o[7]));
        d->gelu_erf_f32(o, in, 8);
        assert_true(o[0] == INFINITY && o[1] == 0.0f && isnan(o[2]));
        assert_true(o[3] == 3.4e38f && o[4] == 0.0f && o[5] == 0.0f);
        d->relu_f32(o, in, 8);
        assert_true(o[0] == INFINITY && o[1] == 0.0f && isnan(o[2]));
        assert_true(o[4] == 0.0f && !signbit(o[6]) && isnan(o[7]));
        const float one[8] = {1, 1, 1, 1, 1, 1, 1, 1};
        d->gelu_backward_f32(o, one, in, 8);
        assert_true(o[0] == 1.0f && o[1] == 0.0f && isnan(o[2]));
        assert_true(o[3] == 1.0f && o[4] == 0.0f && o[5] == 0.5f);
        d->gelu_erf_backward_f32(o, one, in, 8);
        assert_true(o[0] == 1.0f && o[1] == 0.0f && isnan(o[2]));
        assert_true(o[3] == 1.0f && o[4] == 0.0f && o[5] == 0.5f);
        /* Every output finite for finite inputs across the whole range. */
        static float xs[BLOCK], ys[BLOCK];
        size_t n = 0;
        for (uint64_t u = 0; u < 0x7f800000u; u += 0x10001u) {
            xs[n] = bits_f((uint32_t)u);
            xs[n + 1] = -xs[n];
            n += 2;
        }
        for (int f = 0; f < NFN; f++) {
            fn_of(d, f)(ys, xs, n);
            for (size_t i = 0; i < n; i++) {
                if (!isfinite(ys[i])) {
                    print_error("%s/%s(%a) = %a\n", fn_names[f],
                                paths[p].name, (double)xs[i], (double)ys[i]);
                    fail();
                }
            }
        }
    }
}

/* ---- The activations of the vision zoo ---------------------------------
 *
 * silu, softplus and elu against double evaluations written here (not the
 * C path's), over the same inputs as test_sweep; the exact ones against
 * their definition in double with the bound of two float roundings, and
 * hand-computed values. */

enum zoo_fn { Z_SILU, Z_SOFTPLUS, Z_ELU1, Z_ELU_HALF };
enum { NZOO = Z_ELU_HALF + 1 };

static const char *const zoo_names[NZOO] = {"silu", "softplus", "elu(1)",
                                            "elu(0.5)"};

static double zoo_ref(enum zoo_fn f, double x)
{
    switch (f) {
    case Z_SILU:
        return isinf(x) ? (x > 0 ? x : 0.0) : x * ref_sigmoid(x);
    case Z_SOFTPLUS:
        /* log(1 + e^x) = x + log(1 + e^-x): whichever exponent is <= 0 */
        return x > 0 ? x + log1p(exp(-x)) : log1p(exp(x));
    case Z_ELU1:
        return x > 0 ? x : expm1(x);
    case Z_ELU_HALF:
        return x > 0 ? x : 0.5 * expm1(x);
    }
    return NAN;
}

static double zoo_bound(enum zoo_fn f)
{
    switch (f) {
    case Z_SILU:
        return KERN_ACT_MAX_ULP_SILU;
    case Z_SOFTPLUS:
        return KERN_ACT_MAX_ULP_SOFTPLUS;
    case Z_ELU1:
    case Z_ELU_HALF:
        return KERN_ACT_MAX_ULP_ELU;
    }
    return 0.0;
}

static void zoo_run(const struct kern_act_dsp *d, enum zoo_fn f, float *out,
                    const float *x, size_t n)
{
    switch (f) {
    case Z_SILU:
        d->silu_f32(out, x, n);
        break;
    case Z_SOFTPLUS:
        d->softplus_f32(out, x, n);
        break;
    case Z_ELU1:
        d->elu_f32(out, x, n, 1.0f, 0.0f);
        break;
    case Z_ELU_HALF:
        d->elu_f32(out, x, n, 0.5f, 0.0f);
        break;
    }
}

struct zoo_stats {
    double max_ulp[NZOO][NPATHS];
    float worst_x[NZOO][NPATHS];
    long fails;
};

static void zoo_block(const float *xs, size_t n, struct zoo_stats *st)
{
    static float out[BLOCK];
    static double ref[BLOCK];
    for (int fi = 0; fi < NZOO; fi++) {
        const enum zoo_fn f = (enum zoo_fn)fi;
        for (size_t i = 0; i < n; i++) {
            ref[i] = zoo_ref(f, xs[i]);
        }
        for (int p = 0; p < npaths; p++) {
            zoo_run(&paths[p].dsp, f, out, xs, n);
            for (size_t i = 0; i < n; i++) {
                double e;
                if (fabs(ref[i]) < KERN_ACT_FLUSH_BELOW) {
                    e = fabs(out[i] - ref[i]) <= KERN_ACT_FLUSH_BELOW
                            ? 0.0
                            : INFINITY;
                } else {
                    e = ulp_err(out[i], ref[i]);
                }
                if (e > st->max_ulp[f][p]) {
                    st->max_ulp[f][p] = e;
                    st->worst_x[f][p] = xs[i];
                }
                if (e > zoo_bound(f) && st->fails++ < 10) {
                    print_error("%s/%s x = %a: got %a, want %a\n",
                                zoo_names[f], paths[p].name, (double)xs[i],
                                (double)out[i], ref[i]);
                }
            }
        }
    }
}

static void test_zoo_sweep(void **state)
{
    (void)state;
    static struct zoo_stats st;
    static float xs[BLOCK];
    memset(&st, 0, sizeof st);
    const uint32_t ten = 0x41200000u;  /* 10.0f */
    const uint32_t far = 0x42dc0000u;  /* 110.0f */
    for (int sign = 0; sign < 2; sign++) {
        const uint32_t s = sign ? 0x80000000u : 0;
        size_t n = 0;
        for (uint64_t u = 0; u <= far; u += (u < ten ? 61 : 4099)) {
            xs[n++] = bits_f(s | (uint32_t)u);
            if (n == BLOCK) {
                zoo_block(xs, n, &st);
                n = 0;
            }
        }
        zoo_block(xs, n, &st);
    }
    const float specials[] = {INFINITY, -INFINITY, 3.4e38f, -3.4e38f, 1e30f,
                              -1e30f, 1e-45f, -1e-45f, 0.0f, -0.0f,
                              -87.5f, -90.0f, -92.0f, -103.0f, -150.0f};
    zoo_block(specials, sizeof specials / sizeof specials[0], &st);
    printf("max ulp against double (x in [-110, 110]; worst x):\n");
    for (int f = 0; f < NZOO; f++) {
        printf("  %-9s", zoo_names[f]);
        for (int p = 0; p < npaths; p++) {
            printf("  %s %3.0f (%+.4g)", paths[p].name, st.max_ulp[f][p],
                   (double)st.worst_x[f][p]);
        }
        printf("\n");
    }
    assert_int_equal(st.fails, 0);
}

/* The exact functions: a float product and a float sum are within
 * 2^-24 (|a x| + |a x + b|) of the real a x + b, and clamping and the
 * final product with x keep that (relative 2^-24 more for hard_swish). */
static void test_zoo_exact(void **state)
{
    (void)state;
    enum { N = 40001 };
    static float x[N], y[N];
    for (int i = 0; i < N; i++) {
        x[i] = -8.0f + 16.0f * (float)i / (float)(N - 1);
    }
    const double eps = 0x1p-24;
    for (int p = 0; p < npaths; p++) {
        const struct kern_act_dsp *d = &paths[p].dsp;
        const float a = 0.2f, b = 0.5f;
        d->hard_sigmoid_f32(y, x, N, a, b);
        for (int i = 0; i < N; i++) {
            const double ax = (double)a * x[i];
            const double want = fmax(0.0, fmin(1.0, ax + b));
            const double tol = eps * (fabs(ax) + 2.0 * fabs(ax + b));
            if (fabs(y[i] - want) > tol) {
                print_error("hard_sigmoid/%s x = %a: got %a want %a\n",
                            paths[p].name, (double)x[i], (double)y[i], want);
                fail();
            }
        }
        d->hard_swish_f32(y, x, N);
        for (int i = 0; i < N; i++) {
            const double xd = x[i];
            /* PyTorch's formula, in double */
            const double want = xd * fmax(0.0, fmin(6.0, xd + 3.0)) / 6.0;
            const double tol =
                eps * fabs(xd) * (fabs(xd) / 6.0 + 2.0 * fabs(want / xd)) +
                eps * fabs(want);
            if (xd != 0.0 && fabs(y[i] - want) > tol) {
                print_error("hard_swish/%s x = %a: got %a want %a\n",
                            paths[p].name, xd, (double)y[i], want);
                fail();
            }
        }
        d->leaky_relu_f32(y, x, N, 0.01f, 0.0f);
        for (int i = 0; i < N; i++) {
            const float want = x[i] < 0.0f ? (float)(0.01f * (double)x[i])
                                           : x[i];
            assert_true(y[i] == want);
        }
        d->clip_f32(y, x, N, -1.5f, 2.25f);
        for (int i = 0; i < N; i++) {
            const float want = x[i] < -1.5f ? -1.5f
                               : x[i] > 2.25f ? 2.25f
                                              : x[i];
            assert_true(y[i] == want);
        }
    }
}

/* Hand-computed values (exact values from the formulas, to 1e-7), limits,
 * NaN, signed zeros and ranges. */
static void test_zoo_values(void **state)
{
    (void)state;
    for (int p = 0; p < npaths; p++) {
        const struct kern_act_dsp *d = &paths[p].dsp;
        const float x[6] = {1.0f, -1.0f, 0.0f, 2.0f, -3.0f, 3.0f};
        float y[6];
        d->silu_f32(y, x, 6);
        /* 1 / (1 + e^-1), -1 / (1 + e), 0, 2 / (1 + e^-2) */
        assert_float_equal(y[0], 0.7310585786300049, 1e-7);
        assert_float_equal(y[1], -0.2689414213699951, 1e-7);
        assert_true(y[2] == 0.0f);
        assert_float_equal(y[3], 1.7615941559557649, 2e-7);
        d->softplus_f32(y, x, 6);
        assert_float_equal(y[0], 1.3132616875182228, 2e-7);
        assert_float_equal(y[1], 0.31326168751822286, 1e-7);
        assert_float_equal(y[2], 0.6931471805599453, 1e-7);
        d->elu_f32(y, x, 6, 1.0f, 0.0f);
        assert_float_equal(y[1], -0.6321205588285577, 1e-7);
        assert_true(y[0] == 1.0f && y[3] == 2.0f);
        d->hard_swish_f32(y, x, 6);
        /* x (x + 3) / 6 inside (-3, 3); 0 and x outside */
        assert_float_equal(y[0], 2.0 / 3.0, 1e-7);
        assert_float_equal(y[1], -1.0 / 3.0, 1e-7);
        assert_true(y[2] == 0.0f && y[4] == 0.0f && y[5] == 3.0f);
        d->hard_sigmoid_f32(y, x, 6, 0.2f, 0.5f);
        assert_float_equal(y[0], 0.7, 1e-7);
        assert_float_equal(y[1], 0.3, 1e-7);
        assert_true(y[5] == 1.0f && y[4] == 0.0f);

        const float in[8] = {INFINITY, -INFINITY, NAN, 3.4e38f, -3.4e38f,
                             0.0f, -0.0f, -NAN};
        float o[8];
        d->silu_f32(o, in, 8);
        assert_true(o[0] == INFINITY && o[1] == 0.0f && isnan(o[2]));
        assert_true(o[3] == 3.4e38f && o[4] == 0.0f && isnan(o[7]));
        d->softplus_f32(o, in, 8);
        assert_true(o[0] == INFINITY && o[1] == 0.0f && isnan(o[2]));
        assert_true(o[3] == 3.4e38f && o[4] == 0.0f && isnan(o[7]));
        assert_float_equal(o[5], 0.6931471805599453, 1e-7);
        d->elu_f32(o, in, 8, 2.0f, 0.0f);
        assert_true(o[0] == INFINITY && o[1] == -2.0f && isnan(o[2]));
        assert_true(o[3] == 3.4e38f && o[4] == -2.0f && isnan(o[7]));
        d->hard_swish_f32(o, in, 8);
        assert_true(o[0] == INFINITY && isnan(o[2]) && o[3] == 3.4e38f);
        assert_true(o[4] == 0.0f && isnan(o[7]));
        d->hard_sigmoid_f32(o, in, 8, 0.2f, 0.5f);
        assert_true(o[0] == 1.0f && o[1] == 0.0f && isnan(o[2]));
        assert_true(o[5] == 0.5f && isnan(o[7]));
        d->leaky_relu_f32(o, in, 8, 0.1f, 0.0f);
        assert_true(o[0] == INFINITY && o[1] == -INFINITY && isnan(o[2]));
        assert_true(signbit(o[6]) && o[6] == 0.0f && isnan(o[7]));
        d->clip_f32(o, in, 8, 0.0f, 6.0f);
        assert_true(o[0] == 6.0f && o[1] == 0.0f && isnan(o[2]));
        assert_true(o[3] == 6.0f && o[4] == 0.0f && signbit(o[6]));
        d->clip_f32(o, in, 8, -INFINITY, INFINITY);
        assert_true(o[0] == INFINITY && o[1] == -INFINITY && isnan(o[2]));
        d->clip_f32(o, in, 8, 3.0f, -1.0f); /* lo > hi: hi */
        assert_true(o[0] == -1.0f && o[1] == -1.0f && isnan(o[2]));
        assert_true(o[5] == -1.0f && o[6] == -1.0f);
    }
    /* Parameters checked by the public functions. */
    float a[2] = {1.0f, -1.0f}, b[2];
    assert_int_equal(kern_hard_sigmoid_f32(b, a, 2, NAN, 0.5f), KERN_E_RANGE);
    assert_int_equal(kern_hard_sigmoid_f32(b, a, 2, 0.2f, INFINITY),
                     KERN_E_RANGE);
    assert_int_equal(kern_leaky_relu_f32(b, a, 2, INFINITY), KERN_E_RANGE);
    assert_int_equal(kern_elu_f32(b, a, 0, NAN), KERN_E_RANGE);
    assert_int_equal(kern_clip_f32(b, a, 2, NAN, 1.0f), KERN_E_RANGE);
    assert_int_equal(kern_clip_f32(b, a, 2, -INFINITY, INFINITY), KERN_OK);
    assert_int_equal(kern_silu_f32(NULL, a, 2), KERN_E_INVALID);
    assert_int_equal(kern_softplus_f32(b, a, SIZE_MAX / 2), KERN_E_OVERFLOW);
    assert_int_equal(kern_hard_swish_f32(NULL, NULL, 0), KERN_OK);
    assert_int_equal(kern_elu_f32(a, a, 2, 1.0f), KERN_OK);
    assert_true(a[0] == 1.0f);
    assert_float_equal(a[1], -0.6321205588285577, 1e-7);
    assert_int_equal(kern_leaky_relu_f32(b, a, 2, -2.0f), KERN_OK);
    assert_true(b[0] == 1.0f && b[1] == -2.0f * a[1]);
}

static void test_api_errors(void **state)
{
    (void)state;
    float a[4] = {1, 2, 3, 4}, b[4], s[4];
    assert_int_equal(kern_tanh_f32(NULL, a, 4), KERN_E_INVALID);
    assert_int_equal(kern_gelu_f32(b, NULL, 4), KERN_E_INVALID);
    assert_int_equal(kern_relu_f32(NULL, NULL, 0), KERN_OK);
    assert_int_equal(kern_sigmoid_f32(b, a, SIZE_MAX / 2), KERN_E_OVERFLOW);
    assert_int_equal(kern_gelu_backward_f32(b, a, NULL, 4), KERN_E_INVALID);
    assert_int_equal(kern_relu_backward_f32(b, NULL, a, 4), KERN_E_INVALID);
    assert_int_equal(kern_gelu_unfused_f32(b, a, 4, NULL), KERN_E_INVALID);
    assert_int_equal(kern_gelu_unfused_f32(b, a, 4, a), KERN_E_INVALID);
    assert_int_equal(kern_gelu_unfused_f32(b, a, 4, b), KERN_E_INVALID);
    assert_int_equal(kern_gelu_unfused_f32(b, a, 4, s), KERN_OK);
    /* In place through the public API. */
    assert_int_equal(kern_relu_f32(a, a, 4), KERN_OK);
    assert_true(a[0] == 1.0f && a[3] == 4.0f);
    const float neg[3] = {-1.0f, 2.0f, -0.5f};
    memcpy(a, neg, sizeof neg);
    assert_int_equal(kern_relu_f32(a, a, 3), KERN_OK);
    assert_true(a[0] == 0.0f && a[1] == 2.0f && a[2] == 0.0f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_api_errors),
        cmocka_unit_test(test_limits),
        cmocka_unit_test(test_derivatives),
        cmocka_unit_test(test_gelu_forms),
        cmocka_unit_test(test_sweep),
        cmocka_unit_test(test_zoo_exact),
        cmocka_unit_test(test_zoo_values),
        cmocka_unit_test(test_zoo_sweep),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
