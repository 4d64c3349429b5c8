/* Attention's operators (matmul, transpose, attention) in the executor
 * against independent truths:
 *   - PyTorch's nn.MultiheadAttention on a fixture
 *     (tests/data/attention-torch.h, scripts/make-attention-fixture.py):
 *     the state_dict's tensors given through memest_model_set_weights(),
 *     the output within 1e-5 of the largest output;
 *   - a double-precision reference written here (its own loops: the
 *     product with broadcasting, the permutation, attention head by head)
 *     at fp32, fp16, bf16, int8-dynamic and static int8, batch 2;
 *   - the backward passes against central finite differences of that
 *     reference (h = 1e-5 in double: truncation and rounding far below
 *     the float gradients' own error), for the input(s) and every
 *     parameter, with a check that a wrong gradient is caught;
 *   - the arena: libmemest's plan gives the attention's T x T block, alive
 *     during its layer alone, and the executor's arena equals the plan.
 *
 * Tolerances, relative to the largest reference magnitude: fp32 1e-5
 * (sums of a few dozen products and a softmax, each within a few float
 * roundings); fp16 and bf16 8 and 64 units of the format's rounding
 * (2^-11, 2^-8) times the few roundings every stored tensor takes; int8
 * 6% (a 255-step quantisation of each tensor and of the probabilities). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../max_seen.h"
#include "edgefit/memest.h"
#include "edgefit/profile.h"
#include "exec/executor.h"
#include "exec/ops.h"

#include "../data/attention-torch.h"

static uint64_t rng_state = UINT64_C(20261127);

static double rnd(void) /* uniform in [-1, 1) */
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return (double)((rng_state * UINT64_C(0x2545F4914F6CDD1D)) >> 11) *
               0x1p-52 - 1.0;
}

static memest_model *model_of(const char *text)
{
    memest_model *m = NULL;
    struct memest_diag d;
    if (memest_model_parse(text, &m, &d) != MEMEST_OK) {
        fail_msg("model: %s at %d:%d", d.message, d.line, d.column);
    }
    return m;
}

static size_t elems(const struct memest_shape *s)
{
    size_t n = 1;
    for (unsigned i = 0; i < s->rank; i++) {
        n *= (size_t)s->dim[i];
    }
    return n;
}

/* ---- the double-precision reference (one sample) ---------------------- */

static void ref_transpose(const struct memest_layer *L, const double *x,
                          double *y)
{
    size_t d[3] = {1, 1, 1}, od[3] = {1, 1, 1};
    const unsigned r = L->in_shape.rank;
    for (unsigned i = 0; i < r; i++) {
        d[i] = (size_t)L->in_shape.dim[i];
        od[i] = (size_t)L->out_shape.dim[i];
    }
    size_t o[3];
    for (o[0] = 0; o[0] < od[0]; o[0]++) {
        for (o[1] = 0; o[1] < od[1]; o[1]++) {
            for (o[2] = 0; o[2] < od[2]; o[2]++) {
                size_t in[3] = {0, 0, 0};
                for (unsigned i = 0; i < r; i++) {
                    in[L->perm[i]] = o[i];
                }
                y[(o[0] * od[1] + o[1]) * od[2] + o[2]] =
                    x[(in[0] * d[1] + in[1]) * d[2] + in[2]];
            }
        }
    }
}

static void ref_matmul(const struct memest_layer *L, const double *a,
                       const double *b, double *y)
{
    const struct memest_shape *sa = &L->in_shape, *sb = &L->in_shape_b;
    const size_t na = sa->rank == 3 ? (size_t)sa->dim[0] : 1;
    const size_t nb = sb->rank == 3 ? (size_t)sb->dim[0] : 1;
    const size_t M = (size_t)sa->dim[sa->rank - 2];
    const size_t K = (size_t)sa->dim[sa->rank - 1];
    const size_t N = (size_t)sb->dim[sb->rank - 1];
    const size_t s = na > nb ? na : nb;
    for (size_t k = 0; k < s; k++) {
        const double *A = a + (na == 1 ? 0 : k) * M * K;
        const double *B = b + (nb == 1 ? 0 : k) * K * N;
        for (size_t i = 0; i < M; i++) {
            for (size_t j = 0; j < N; j++) {
                double acc = 0.0;
                for (size_t q = 0; q < K; q++) {
                    acc += A[i * K + q] * B[q * N + j];
                }
                y[(k * M + i) * N + j] = acc;
            }
        }
    }
}

/* nn.MultiheadAttention's formulas, written out: w = in_proj_weight then
 * out_proj.weight, b = in_proj_bias then out_proj.bias (NULL: none). */
static void ref_attention(const struct memest_layer *L, const double *x,
                          const double *w, const double *b, double *y)
{
    const size_t T = (size_t)L->in_shape.dim[0];
    const size_t D = (size_t)L->in_shape.dim[1];
    const size_t H = (size_t)L->heads, d = D / H;
    double *q = calloc(3 * T * D + T * D + T, sizeof(double));
    double *ctx = q + 3 * T * D, *p = ctx + T * D;
    for (size_t t = 0; t < T; t++) {
        for (size_t j = 0; j < 3 * D; j++) {
            double acc = b ? b[j] : 0.0;
            for (size_t k = 0; k < D; k++) {
                acc += x[t * D + k] * w[j * D + k];
            }
            q[t * 3 * D + j] = acc;
        }
    }
    for (size_t h = 0; h < H; h++) {
        for (size_t i = 0; i < T; i++) {
            double mx = -INFINITY, sum = 0.0;
            for (size_t j = 0; j < T; j++) {
                double s = 0.0;
                for (size_t k = 0; k < d; k++) {
                    s += q[i * 3 * D + h * d + k] *
                         q[j * 3 * D + D + h * d + k];
                }
                p[j] = s / sqrt((double)d);
                mx = p[j] > mx ? p[j] : mx;
            }
            for (size_t j = 0; j < T; j++) {
                p[j] = exp(p[j] - mx);
                sum += p[j];
            }
            for (size_t k = 0; k < d; k++) {
                double acc = 0.0;
                for (size_t j = 0; j < T; j++) {
                    acc += p[j] / sum * q[j * 3 * D + 2 * D + h * d + k];
                }
                ctx[i * D + h * d + k] = acc;
            }
        }
    }
    for (size_t t = 0; t < T; t++) {
        for (size_t j = 0; j < D; j++) {
            double acc = b ? b[3 * D + j] : 0.0;
            for (size_t k = 0; k < D; k++) {
                acc += ctx[t * D + k] * w[3 * D * D + j * D + k];
            }
            y[t * D + j] = acc;
        }
    }
    free(q);
}

/* The model on one sample's inputs (xs[k], input k) with parameters
 * pw[i], pb[i] per layer; every tensor kept, the output returned in out. */
static void ref_model(const memest_model *m, const double *const *xs,
                      double *const *pw, double *const *pb, double *out)
{
    const size_t I = memest_model_input_count(m);
    const size_t n = memest_model_layer_count(m);
    double **t = calloc(I + n, sizeof *t);
    for (size_t k = 0; k < I; k++) {
        t[k] = (double *)xs[k];
    }
    for (size_t i = 0; i < n; i++) {
        const struct memest_layer *L = memest_model_layer(m, i);
        double *y = calloc(elems(&L->out_shape), sizeof(double));
        const double *x = t[L->inputs[0]];
        switch (L->kind) {
        case MEMEST_KIND_TRANSPOSE:
            ref_transpose(L, x, y);
            break;
        case MEMEST_KIND_MATMUL:
            ref_matmul(L, x, t[L->inputs[1]], y);
            break;
        case MEMEST_KIND_ATTENTION:
            ref_attention(L, x, pw[i], L->bias_count ? pb[i] : NULL, y);
            break;
        case MEMEST_KIND_RESHAPE:
            memcpy(y, x, elems(&L->out_shape) * sizeof(double));
            break;
        default:
            fail_msg("the reference has no %s", memest_kind_name(L->kind));
        }
        t[I + i] = y;
    }
    const struct memest_layer *last = memest_model_layer(m, n - 1);
    memcpy(out, t[I + n - 1], elems(&last->out_shape) * sizeof(double));
    for (size_t i = 0; i < n; i++) {
        free(t[I + i]);
    }
    free(t);
}

/* ---- PyTorch ------------------------------------------------------------ */

static void test_torch_attention(void **state)
{
    (void)state;
    memest_model *m = model_of("input 7x16\nattention heads=4 name=attn\n");
    const struct memest_tensor ts[4] = {
        {"attn.in_proj_weight", 2, {48, 16}, att_in_proj_weight},
        {"attn.in_proj_bias", 1, {48}, att_in_proj_bias},
        {"attn.out_proj.weight", 2, {16, 16}, att_out_proj_weight},
        {"attn.out_proj.bias", 1, {16}, att_out_proj_bias},
    };
    struct memest_diag d;
    if (memest_model_set_weights(m, ts, 4, &d) != MEMEST_OK) {
        fail_msg("weights: %s", d.message);
    }
    struct prof_exec_opts o;
    prof_exec_opts_init(&o);
    prof_exec *ex = NULL;
    struct prof_diag pd;
    if (prof_exec_create(m, &o, &ex, &pd) != PROF_OK) {
        fail_msg("executor: %s", pd.message);
    }
    float y[ATT_T * ATT_D];
    assert_int_equal(prof_exec_run(ex, att_x, ATT_T * ATT_D, y,
                                   ATT_T * ATT_D), PROF_OK);
    double top = 0.0, err = 0.0;
    for (size_t i = 0; i < ATT_T * ATT_D; i++) {
        top = max_seen(top, fabs((double)att_y[i]));
        err = max_seen(err, fabs((double)y[i] - (double)att_y[i]));
    }
    printf("# attention vs PyTorch: %.3g of the largest output\n",
           err / top);
    assert_true(err <= 1e-5 * top);
    /* and the check can fail: a wrong output projection bias */
    assert_true(fabs((double)y[0] + 1e-3 * top - att_y[0]) > 1e-5 * top);
    prof_exec_destroy(ex);
    memest_model_destroy(m);
}

/* ---- every precision against the reference ------------------------------ */

static const char *const SEQ_MODEL =
    "input 6x4\n"
    "transpose perm=1,0 name=xt\n"          /* 4x6 */
    "reshape shape=2x3x4 in=input name=r\n" /* 2x3x4 */
    "matmul in=r,xt name=m1\n"              /* 2x3x6, B broadcast */
    "transpose perm=0,2,1 name=t3\n"        /* 2x6x3 */
    "matmul in=xt,t3 name=m2\n"             /* 2x4x3, A broadcast */
    "transpose perm=2,0,1 name=t4\n"        /* 3x2x4 */
    "reshape shape=6x4 name=r4\n"
    "attention heads=2 name=att\n"          /* 6x4 */
    "transpose perm=1,0 name=out\n";

static void check_precision(enum memest_precision p, double tol)
{
    memest_model *m = model_of(SEQ_MODEL);
    const size_t B = 2, n_in = 24, n_out = 24;
    const size_t nl = memest_model_layer_count(m);
    float x[48], y[48];
    for (size_t i = 0; i < B * n_in; i++) {
        x[i] = (float)rnd();
    }
    struct prof_exec_opts o;
    prof_exec_opts_init(&o);
    o.batch = B;
    o.precision = p;
    struct prof_ranges ranges;
    memset(&ranges, 0, sizeof ranges);
    if (p == MEMEST_INT8) {
        struct prof_dataset ds;
        memset(&ds, 0, sizeof ds);
        ds.x = x;
        ds.count = B;
        ds.rank = 2;
        ds.shape[0] = 6;
        ds.shape[1] = 4;
        ds.sample_count = n_in;
        struct prof_diag cd;
        if (prof_ranges_calibrate(m, &ds, NULL, &ranges, &cd) != PROF_OK) {
            fail_msg("calibration: %s", cd.message);
        }
        o.ranges = &ranges;
        /* a transpose keeps its input's range (tensor 1, xt, reads the
         * input, tensor 0), so its int8 values move unchanged */
        assert_true(ranges.tensors[1].scale == ranges.tensors[0].scale);
        assert_int_equal(ranges.tensors[1].zero_point,
                         ranges.tensors[0].zero_point);
    }
    prof_exec *ex = NULL;
    struct prof_diag pd;
    if (prof_exec_create(m, &o, &ex, &pd) != PROF_OK) {
        fail_msg("executor at %s: %s", memest_precision_name(p), pd.message);
    }
    /* the executor's drawn parameters, as the reference's */
    double *pw[16] = {NULL}, *pb[16] = {NULL};
    for (size_t i = 0; i < nl; i++) {
        const struct memest_layer *L = memest_model_layer(m, i);
        if (L->parameter_count == 0) {
            continue;
        }
        float *w = calloc(L->weight_count, sizeof(float));
        float *b = calloc(L->bias_count + 1, sizeof(float));
        assert_int_equal(prof_exec_get_params(ex, i, w, L->weight_count, b,
                                              L->bias_count), PROF_OK);
        pw[i] = calloc(L->weight_count, sizeof(double));
        pb[i] = calloc(L->bias_count + 1, sizeof(double));
        for (size_t k = 0; k < L->weight_count; k++) {
            pw[i][k] = w[k];
        }
        for (size_t k = 0; k < L->bias_count; k++) {
            pb[i][k] = b[k];
        }
        free(w);
        free(b);
    }
    assert_int_equal(prof_exec_run(ex, x, B * n_in, y, B * n_out), PROF_OK);
    double top = 0.0, err = 0.0;
    for (size_t s = 0; s < B; s++) {
        double xd[24], yd[24];
        for (size_t i = 0; i < n_in; i++) {
            xd[i] = x[s * n_in + i];
        }
        const double *xs[1] = {xd};
        ref_model(m, xs, pw, pb, yd);
        for (size_t i = 0; i < n_out; i++) {
            top = max_seen(top, fabs(yd[i]));
            err = max_seen(err, fabs(yd[i] - (double)y[s * n_out + i]));
        }
    }
    printf("# %s: %.3g of the largest output (tolerance %.3g)\n",
           memest_precision_name(p), err / top, tol);
    if (!(err <= tol * top)) {
        fail_msg("%s: error %.3g of the largest output, tolerance %.3g",
                 memest_precision_name(p), err / top, tol);
    }
    for (size_t i = 0; i < nl; i++) {
        free(pw[i]);
        free(pb[i]);
    }
    prof_ranges_finish(&ranges);
    prof_exec_destroy(ex);
    memest_model_destroy(m);
}

static void test_precisions(void **state)
{
    (void)state;
    check_precision(MEMEST_FP32, 1e-5);
    check_precision(MEMEST_FP16, 8 * 0x1p-11 * 4);
    check_precision(MEMEST_BF16, 8 * 0x1p-8 * 4);
    check_precision(MEMEST_INT8_DYNAMIC, 0.06);
    check_precision(MEMEST_INT8, 0.06);
}

/* ---- gradients against finite differences ------------------------------- */

/* One layer's model (its inputs, then it) at batch 2 in the trainer's
 * executor (no arena): the executor's backward of L = sum(r * y) against
 * central differences of the reference's L for every input element and
 * parameter. wrong: perturb one gradient, which must then fail. Returns
 * the worst error relative to the largest gradient. */
static double check_grads(const char *text, bool wrong)
{
    memest_model *m = model_of(text);
    const size_t B = 2, I = memest_model_input_count(m);
    const struct memest_layer *L = memest_model_layer(m, 0);
    struct prof_exec_opts o;
    prof_exec_opts_init(&o);
    o.batch = B;
    prof_exec *ex = NULL;
    struct prof_diag pd;
    if (exec_create(m, &o, false, &ex, &pd) != PROF_OK) {
        fail_msg("executor: %s", pd.message);
    }
    struct exec_op *op = &ex->ops[0];
    const size_t n_out = elems(&L->out_shape);
    const size_t wn = op->wn, bn = op->bn;
    size_t n_in[2];
    float *xf[2] = {NULL, NULL}, *gxf[2] = {NULL, NULL};
    double *xd[2] = {NULL, NULL};
    for (size_t k = 0; k < I; k++) {
        const struct memest_shape s = memest_model_input_shape_at(m, k);
        n_in[k] = elems(&s);
        xf[k] = calloc(B * n_in[k], sizeof(float));
        gxf[k] = calloc(B * n_in[k], sizeof(float));
        xd[k] = calloc(B * n_in[k], sizeof(double));
        for (size_t i = 0; i < B * n_in[k]; i++) {
            xf[k][i] = (float)rnd();
            xd[k][i] = xf[k][i];
        }
    }
    double *wd = calloc(wn + 1, sizeof(double));
    double *bd = calloc(bn + 1, sizeof(double));
    for (size_t i = 0; i < wn; i++) {
        op->w[i] = (float)(0.5 * rnd());
        wd[i] = op->w[i];
    }
    for (size_t i = 0; i < bn; i++) {
        op->b[i] = (float)(0.5 * rnd());
        bd[i] = op->b[i];
    }
    float *r = calloc(B * n_out, sizeof(float));
    float *y = calloc(B * n_out, sizeof(float));
    float *gw = calloc(wn + 1, sizeof(float));
    float *gb = calloc(bn + 1, sizeof(float));
    for (size_t i = 0; i < B * n_out; i++) {
        r[i] = (float)rnd();
    }
    /* the executor's forward and backward */
    const float *xs[2] = {xf[0], xf[1]};
    float *gxs[2] = {gxf[0], gxf[1]};
    const bool add[2] = {false, false};
    int st;
    if (L->kind == MEMEST_KIND_MATMUL) {
        st = exec_matmul_train_f32(ex, op, xs, y);
    } else {
        st = exec_linear_f32(ex, op, xf[0], y);
    }
    assert_int_equal(st, PROF_OK);
    const struct exec_grad_args a = {.x = xf[0], .y = y, .g = r,
                                     .gx = gxf[0], .gw = gw, .gb = gb,
                                     .gxs = gxs, .gx_add = add, .xs = xs};
    assert_int_equal(op->vt->backward_f32(ex, op, &a), PROF_OK);
    if (wrong) {
        gxf[0][1] += 0.05f;
    }
    /* the reference's L, and its differences */
    double *pw[1] = {wd}, *pb[1] = {bd};
    double *yd = calloc(n_out, sizeof(double));
    double top = 0.0, worst = 0.0;
#define LOSS(out)                                                          \
    do {                                                                   \
        out = 0.0;                                                         \
        for (size_t s_ = 0; s_ < B; s_++) {                                \
            const double *in_[2] = {xd[0] + s_ * n_in[0],                  \
                                    I > 1 ? xd[1] + s_ * n_in[1] : NULL};  \
            ref_model(m, in_, pw, pb, yd);                                 \
            for (size_t i_ = 0; i_ < n_out; i_++) {                        \
                out += yd[i_] * (double)r[s_ * n_out + i_];                \
            }                                                              \
        }                                                                  \
    } while (0)
    const double h = 1e-5;
    struct {
        double *v;
        const float *g;
        size_t n;
    } sets[4] = {{xd[0], gxf[0], B * n_in[0]},
                 {I > 1 ? xd[1] : NULL, gxf[1], I > 1 ? B * n_in[1] : 0},
                 {wd, gw, wn},
                 {bd, gb, bn}};
    double *fd[4];
    for (int k = 0; k < 4; k++) {
        fd[k] = calloc(sets[k].n + 1, sizeof(double));
        for (size_t i = 0; i < sets[k].n; i++) {
            const double keep = sets[k].v[i];
            double lp, lm;
            sets[k].v[i] = keep + h;
            LOSS(lp);
            sets[k].v[i] = keep - h;
            LOSS(lm);
            sets[k].v[i] = keep;
            fd[k][i] = (lp - lm) / (2 * h);
            top = max_seen(top, fabs(fd[k][i]));
        }
    }
#undef LOSS
    for (int k = 0; k < 4; k++) {
        for (size_t i = 0; i < sets[k].n; i++) {
            worst = max_seen(worst, fabs(fd[k][i] - (double)sets[k].g[i]));
        }
        free(fd[k]);
    }
    for (size_t k = 0; k < I; k++) {
        free(xf[k]);
        free(gxf[k]);
        free(xd[k]);
    }
    free(wd);
    free(bd);
    free(r);
    free(y);
    free(gw);
    free(gb);
    free(yd);
    prof_exec_destroy(ex);
    memest_model_destroy(m);
    return worst / top;
}

static void test_grads(void **state)
{
    (void)state;
    static const char *const models[] = {
        "input 3x4x5\ntranspose perm=2,0,1\n",
        "input 4x5\ntranspose perm=1,0\n",
        "input 2x3x4 name=a\ninput 4x5 name=b\nmatmul in=a,b\n",
        "input 3x4 name=a\ninput 2x4x5 name=b\nmatmul in=a,b\n",
        "input 2x3x4 name=a\ninput 2x4x2 name=b\nmatmul in=a,b\n",
        "input 5x8\nattention heads=2\n",
        "input 4x6\nattention heads=3 bias=no\n",
    };
    for (size_t i = 0; i < sizeof models / sizeof models[0]; i++) {
        const double e = check_grads(models[i], false);
        printf("# gradients of model %zu: %.3g of the largest\n", i, e);
        if (!(e < 2e-6)) {
            fail_msg("gradients of %s: %.3g of the largest", models[i], e);
        }
    }
    /* a wrong gradient is caught */
    assert_true(check_grads("input 5x8\nattention heads=2\n", true) > 1e-3);
}

/* ---- the arena ----------------------------------------------------------- */

static void test_arena(void **state)
{
    (void)state;
    memest_model *m = model_of("input 10x8\nattention heads=2 name=a1\n"
                               "attention heads=4 name=a2\n"
                               "transpose perm=1,0\n");
    const enum memest_precision ps[] = {MEMEST_FP32, MEMEST_FP16,
                                        MEMEST_INT8_DYNAMIC};
    for (size_t k = 0; k < 3; k++) {
        const uint64_t B = 3, eb = memest_precision_bytes(ps[k]);
        struct memest_arena_plan plan;
        assert_int_equal(memest_plan_arena(m, B, ps[k], &plan), MEMEST_OK);
        assert_int_equal(plan.layer_count, 3);
        /* one head's 10 x 10 scores a sample, during its layer alone */
        assert_int_equal(plan.work_bytes[0], B * 100 * eb);
        assert_int_equal(plan.work_bytes[1], B * 100 * eb);
        assert_int_equal(plan.work_bytes[2], 0);
        /* at step 0 the input (80), a1's output (80) and a1's block
         * (100) are alive; at step 1 a1's and a2's outputs and a2's
         * block: 260 elements a sample, no more at any step */
        assert_int_equal(plan.live_lower_bound_bytes, B * 260 * eb);
        assert_true(plan.arena_bytes >= plan.live_lower_bound_bytes);
        struct prof_exec_opts o;
        prof_exec_opts_init(&o);
        o.batch = B;
        o.precision = ps[k];
        prof_exec *ex = NULL;
        struct prof_diag pd;
        if (prof_exec_create(m, &o, &ex, &pd) != PROF_OK) {
            fail_msg("executor: %s", pd.message);
        }
        struct prof_exec_memory mem;
        assert_int_equal(prof_exec_memory(ex, &mem), PROF_OK);
        assert_true(mem.arena_bytes == plan.arena_bytes);
        assert_true(mem.plan_bytes == mem.arena_bytes);
        assert_int_equal(ex->ops[0].work_off, plan.work_offset[0]);
        assert_int_equal(ex->ops[1].work_bytes, plan.work_bytes[1]);
        /* a plan whose block overlaps a live tensor is refused */
        plan.work_offset[1] = plan.offset[1];
        uint64_t need;
        assert_int_equal(exec_place_tensors(ex, &plan, &need, &pd),
                         PROF_E_MEMEST);
        assert_non_null(strstr(pd.message, "working block"));
        prof_exec_destroy(ex);
        memest_arena_plan_free(&plan);
    }
    /* the estimates count the blocks as activation memory */
    struct memest_totals t;
    assert_int_equal(memest_estimate_totals(m, 1, MEMEST_FP32, &t),
                     MEMEST_OK);
    assert_int_equal(t.activation_bytes, 4 * (80 + 80 + 100 + 80 + 100 + 80));
    memest_model_destroy(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_torch_attention),
        cmocka_unit_test(test_precisions),
        cmocka_unit_test(test_grads),
        cmocka_unit_test(test_arena),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
