/* Static int8 (MEMEST_INT8) in the executor, against a reference written
 * here from TFLite's integer formulas in plain C with 64-bit sums: every
 * tensor the executor writes is read back through the observer (the int8
 * values, dequantised, give back their integers exactly), and each layer's
 * output is recomputed from its inputs' integers:
 *
 *   conv2d, dense: weights symmetric per output channel (max|w_c| / 127,
 *     round half to even), bias round_half_even(b / (x_scale * w_scale)),
 *     acc = sum (x - x_zero) * w in int64, the output stage of TFLite's
 *     QuantizeMultiplier and MultiplyByQuantizedMultiplier, relu / relu6 as
 *     the clamp: bit for bit;
 *   add of two: TFLite's Add (left shift 20, twice the larger input
 *     scale): bit for bit;
 *   concat: each input dequantised and quantised again with the output's
 *     params (ONNX's DequantizeLinear / QuantizeLinear): bit for bit;
 *   max pool: the int8 maximum (calibration gives it its input's params):
 *     bit for bit; a view: its input's bytes;
 *   average pools and the float path of other activations: within one
 *     output step of the double-precision result.
 *
 * And every layer within one quantisation step of the double-precision
 * result of its quantised operands; the same bits at batch 1, 8 and 32 and
 * on 1 or 2 threads; a final softmax in float on the logits; refusals of a
 * missing calibration and of another model's. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "edgefit/kernels.h"
#include "edgefit/memest.h"
#include "edgefit/profile.h"

static memest_model *model_of(const char *text)
{
    memest_model *m = NULL;
    struct memest_diag d;
    if (memest_model_parse(text, &m, &d) != MEMEST_OK) {
        fail_msg("model: %s at %d:%d", d.message, d.line, d.column);
    }
    return m;
}

static uint64_t rng = 0x5eed5eedULL;

static double uniform(double lo, double hi)
{
    rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
    return lo + (hi - lo) * (double)(rng >> 11) * 0x1p-53;
}

static size_t shape_n(const struct memest_shape *s)
{
    size_t n = 1;
    for (unsigned i = 0; i < s->rank; i++) {
        n *= (size_t)s->dim[i];
    }
    return n;
}

/* ---- TFLite's integer arithmetic, 64-bit ------------------------------- */

/* QuantizeMultiplier: real = m * 2^(shift - 31), m in [2^30, 2^31). */
static void quantize_multiplier(double real, int32_t *m, int *shift)
{
    if (real == 0.0) {
        *m = 0;
        *shift = 0;
        return;
    }
    int e;
    const double q = frexp(real, &e);
    long long qf = llround(q * 2147483648.0);
    if (qf == 2147483648LL) {
        qf /= 2;
        e++;
    }
    if (e < -31) {
        e = 0;
        qf = 0;
    }
    if (e > 30) {
        e = 30;
        qf = 2147483647LL;
    }
    *m = (int32_t)qf;
    *shift = e;
}

/* gemmlowp's SaturatingRoundingDoublingHighMul */
static int32_t srdhm(int32_t a, int32_t b)
{
    if (a == INT32_MIN && b == INT32_MIN) {
        return INT32_MAX;
    }
    const int64_t ab = (int64_t)a * (int64_t)b;
    const int64_t nudge = ab >= 0 ? (1LL << 30) : (1 - (1LL << 30));
    return (int32_t)((ab + nudge) / (1LL << 31));
}

/* gemmlowp's RoundingDivideByPOT (half away from zero) */
static int32_t rdpot(int32_t x, int e)
{
    const int32_t mask = (int32_t)((1LL << e) - 1);
    const int32_t rem = x & mask;
    const int32_t th = (mask >> 1) + (x < 0 ? 1 : 0);
    return (x >> e) + (rem > th ? 1 : 0);
}

/* MultiplyByQuantizedMultiplier */
static int32_t mbqm(int32_t x, int32_t m, int shift)
{
    const int left = shift > 0 ? shift : 0, right = shift > 0 ? 0 : -shift;
    return rdpot(srdhm((int32_t)((uint32_t)x << left), m), right);
}

static int32_t clampi(int64_t v, int32_t lo, int32_t hi)
{
    return v < lo ? lo : v > hi ? hi : (int32_t)v;
}

/* ONNX's QuantizeLinear in float: round half to even, saturate. */
static int8_t quantize(float x, float s, int32_t z)
{
    const float v = rintf(x / s) + (float)z;
    return (int8_t)(v <= -128.0f ? -128 : v >= 127.0f ? 127 : (int)v);
}

/* TFLite's activation range in the output's params. */
static bool act_range(const struct memest_layer *L, float s, int32_t z,
                      int32_t *lo, int32_t *hi)
{
    *lo = -128;
    *hi = 127;
    if (L->act == MEMEST_ACT_NONE) {
        return true;
    }
    if (L->act == MEMEST_ACT_RELU || L->act == MEMEST_ACT_RELU6) {
        *lo = clampi(z, -128, 127);
        if (L->act == MEMEST_ACT_RELU6) {
            *hi = clampi((int64_t)z + (int64_t)roundf(6.0f / s), -128, 127);
        }
        return true;
    }
    return false;
}

/* The activations the float path runs, in double. */
static double act_d(const struct memest_layer *L, double v)
{
    switch (L->act) {
    case MEMEST_ACT_NONE:
        return v;
    case MEMEST_ACT_RELU:
        return v > 0 ? v : 0;
    case MEMEST_ACT_RELU6:
        return v < 0 ? 0 : v > 6 ? 6 : v;
    case MEMEST_ACT_TANH:
        return tanh(v);
    case MEMEST_ACT_SIGMOID:
        return 1.0 / (1.0 + exp(-v));
    default:
        fail_msg("%s: no reference for its activation", L->name);
    }
    return v;
}

/* ---- one run, read back ------------------------------------------------- */

struct run {
    const memest_model *m;
    const struct prof_ranges *r;
    size_t batch, nt;
    int8_t **q;      /* per tensor: its integers */
    float **f;       /* per tensor: the floats the observer showed */
};

static int keep(void *ctx, const struct prof_exec_tensor *t)
{
    struct run *run = ctx;
    const float s = run->r->tensors[t->tensor].scale;
    const int32_t z = run->r->tensors[t->tensor].zero_point;
    run->q[t->tensor] = malloc(t->count);
    run->f[t->tensor] = malloc(t->count * sizeof(float));
    if (!run->q[t->tensor] || !run->f[t->tensor]) {
        return 1;
    }
    memcpy(run->f[t->tensor], t->data, t->count * sizeof(float));
    for (size_t i = 0; i < t->count; i++) {
        /* (q - z) * s divided by s is within a few ulps of q - z */
        run->q[t->tensor][i] = (int8_t)(lrintf(t->data[i] / s) + z);
    }
    return 0;
}

static void run_free(struct run *run)
{
    for (size_t t = 0; t < run->nt; t++) {
        free(run->q[t]);
        free(run->f[t]);
    }
    free(run->q);
    free(run->f);
}

/* ---- the reference per layer -------------------------------------------- */

struct check {
    const char *model;
    size_t exact, near;  /* elements checked bit for bit, within a step */
};

/* Per output channel: TFLite's (and ONNX Runtime's) symmetric int8. */
static void weights_q8(const float *w, size_t oc, size_t per, int8_t *q,
                       float *scale)
{
    for (size_t c = 0; c < oc; c++) {
        float mx = 0.0f;
        for (size_t j = 0; j < per; j++) {
            mx = fmaxf(mx, fabsf(w[c * per + j]));
        }
        scale[c] = mx > 0.0f ? mx / 127.0f : 1.0f;
        for (size_t j = 0; j < per; j++) {
            const float v = rintf(w[c * per + j] / scale[c]);
            q[c * per + j] = (int8_t)(v < -127 ? -127 : v > 127 ? 127 : v);
        }
    }
}

/* A conv2d (dense: 1 x 1 on a C x 1 x 1 input) of layer L. */
static void ref_linear(prof_exec *ex, size_t li, const struct run *run,
                       struct check *ck)
{
    const memest_model *m = run->m;
    const struct memest_layer *L = memest_model_layer(m, li);
    const size_t ni = memest_model_input_count(m);
    const size_t tx = L->inputs[0], ty = ni + li;
    const struct memest_shape is = memest_model_tensor_shape(m, tx);
    const struct memest_shape os = memest_model_tensor_shape(m, ty);
    const bool dense = L->kind == MEMEST_KIND_DENSE;
    /* a dense over a T x D sequence: T rows per sample of D features */
    const size_t steps = dense && is.rank == 2 ? (size_t)is.dim[0] : 1;
    const size_t C = dense ? shape_n(&is) / steps : (size_t)is.dim[0];
    const size_t H = dense ? 1 : (size_t)is.dim[1];
    const size_t W = dense ? 1 : (size_t)is.dim[2];
    const size_t OC = dense ? shape_n(&os) / steps : (size_t)os.dim[0];
    const size_t OH = dense ? 1 : (size_t)os.dim[1];
    const size_t OW = dense ? 1 : (size_t)os.dim[2];
    const size_t G = dense ? 1 : (size_t)L->groups;
    const size_t KH = dense ? 1 : (size_t)L->kernel_h;
    const size_t KW = dense ? 1 : (size_t)L->kernel_w;
    const size_t SH = dense ? 1 : (size_t)L->stride_h;
    const size_t SW = dense ? 1 : (size_t)L->stride_w;
    const size_t DH = L->dilation_h ? (size_t)L->dilation_h : 1;
    const size_t DW = L->dilation_w ? (size_t)L->dilation_w : 1;
    const size_t ICG = C / G, OCG = OC / G, per = ICG * KH * KW;
    const size_t wn = (size_t)L->weight_count, bn = (size_t)L->bias_count;
    float *w = malloc(wn * sizeof *w), *b = calloc(OC, sizeof *b);
    int8_t *wq = malloc(wn);
    float *ws = malloc(OC * sizeof *ws);
    assert_non_null(w);
    assert_non_null(b);
    assert_non_null(wq);
    assert_non_null(ws);
    assert_int_equal(prof_exec_get_params(ex, li, w, wn, b, bn), PROF_OK);
    weights_q8(w, OC, per, wq, ws);
    const float sx = run->r->tensors[tx].scale;
    const int32_t zx = run->r->tensors[tx].zero_point;
    const float sy = run->r->tensors[ty].scale;
    const int32_t zy = run->r->tensors[ty].zero_point;
    int32_t lo, hi;
    const bool clamp = act_range(L, sy, zy, &lo, &hi);
    const bool last = li + 1 == memest_model_layer_count(m);
    for (size_t bi = 0; bi < run->batch * steps; bi++) {
        for (size_t oc = 0; oc < OC; oc++) {
            const size_t g = oc / OCG;
            const float bs = sx * ws[oc];
            const int32_t bias = (int32_t)rintf(b[oc] / bs);
            int32_t mult;
            int shift;
            quantize_multiplier((double)sx * (double)ws[oc] / (double)sy,
                                &mult, &shift);
            for (size_t oy = 0; oy < OH; oy++) {
                for (size_t ox = 0; ox < OW; ox++) {
                    int64_t acc = 0;
                    for (size_t ic = 0; ic < ICG; ic++) {
                        for (size_t ky = 0; ky < KH; ky++) {
                            for (size_t kx = 0; kx < KW; kx++) {
                                const long iy = (long)(oy * SH + ky * DH) -
                                                (long)L->pad_top;
                                const long ix = (long)(ox * SW + kx * DW) -
                                                (long)L->pad_left;
                                if (iy < 0 || ix < 0 || iy >= (long)H ||
                                    ix >= (long)W) {
                                    continue; /* x_zero: a real 0 */
                                }
                                const size_t c = g * ICG + ic;
                                const int8_t xv =
                                    run->q[tx][((bi * C + c) * H +
                                                (size_t)iy) * W +
                                               (size_t)ix];
                                acc += (int64_t)(xv - zx) *
                                       wq[(oc * ICG + ic) * KH * KW +
                                          ky * KW + kx];
                            }
                        }
                    }
                    const size_t o = ((bi * OC + oc) * OH + oy) * OW + ox;
                    const double real =
                        act_d(L, (double)(acc + bias) * (double)sx *
                                     (double)ws[oc]);
                    if (last && (L->act == MEMEST_ACT_SOFTMAX)) {
                        continue; /* checked by test_final_softmax */
                    }
                    if (clamp) {
                        const int32_t q = clampi(
                            (int64_t)mbqm((int32_t)(acc + bias), mult,
                                          shift) + zy, lo, hi);
                        if (run->q[ty][o] != q) {
                            fail_msg("%s: %s output %zu is %d, TFLite's %d",
                                     ck->model, L->name, o, run->q[ty][o],
                                     q);
                        }
                        ck->exact++;
                    }
                    /* within one step of the real value, saturated */
                    const double rq = fmin(fmax(real, (-128 - zy) * (double)sy),
                                           (127 - zy) * (double)sy);
                    const double got = (double)(run->q[ty][o] - zy) * sy;
                    if (!(fabs(got - rq) <= (double)sy)) {
                        fail_msg("%s: %s output %zu is %g, the real %g: more "
                                 "than one step %g", ck->model, L->name, o,
                                 got, rq, (double)sy);
                    }
                    ck->near++;
                }
            }
        }
    }
    free(w);
    free(b);
    free(wq);
    free(ws);
}

static void ref_add(size_t li, const struct run *run, struct check *ck)
{
    const struct memest_layer *L = memest_model_layer(run->m, li);
    const size_t ni = memest_model_input_count(run->m);
    const size_t ta = L->inputs[0], tb = L->inputs[1], ty = ni + li;
    const struct prof_tensor_range *A = &run->r->tensors[ta],
                                   *B = &run->r->tensors[tb],
                                   *Y = &run->r->tensors[ty];
    const double twice = 2.0 * fmax((double)A->scale, (double)B->scale);
    int32_t ma, mb, mo, lo, hi;
    int sa, sb, so;
    quantize_multiplier((double)A->scale / twice, &ma, &sa);
    quantize_multiplier((double)B->scale / twice, &mb, &sb);
    quantize_multiplier(twice / ((double)(1 << 20) * (double)Y->scale), &mo,
                        &so);
    assert_true(act_range(L, Y->scale, Y->zero_point, &lo, &hi));
    const size_t n = shape_n(&L->out_shape) * run->batch;
    for (size_t i = 0; i < n; i++) {
        const int32_t a = (run->q[ta][i] - A->zero_point) * (1 << 20);
        const int32_t b = (run->q[tb][i] - B->zero_point) * (1 << 20);
        const int32_t s = mbqm(a, ma, sa) + mbqm(b, mb, sb);
        const int32_t q =
            clampi((int64_t)mbqm(s, mo, so) + Y->zero_point, lo, hi);
        if (run->q[ty][i] != q) {
            fail_msg("%s: %s element %zu is %d, TFLite's %d", ck->model,
                     L->name, i, run->q[ty][i], q);
        }
        const double real =
            act_d(L, (run->q[ta][i] - A->zero_point) * (double)A->scale +
                         (run->q[tb][i] - B->zero_point) * (double)B->scale);
        const double rq =
            fmin(fmax(real, (-128 - Y->zero_point) * (double)Y->scale),
                 (127 - Y->zero_point) * (double)Y->scale);
        assert_true(fabs((run->q[ty][i] - Y->zero_point) * (double)Y->scale -
                         rq) <= (double)Y->scale);
        ck->exact++;
    }
}

/* Along the channels: each input requantised to the output's params. */
static void ref_concat(size_t li, const struct run *run, struct check *ck)
{
    const struct memest_layer *L = memest_model_layer(run->m, li);
    const size_t ni = memest_model_input_count(run->m), ty = ni + li;
    const struct prof_tensor_range *Y = &run->r->tensors[ty];
    const size_t out_sample = shape_n(&L->out_shape);
    size_t at = 0;
    for (size_t j = 0; j < L->input_count; j++) {
        const size_t t = L->inputs[j];
        const struct prof_tensor_range *X = &run->r->tensors[t];
        const struct memest_shape s = memest_model_tensor_shape(run->m, t);
        const size_t n = shape_n(&s);
        for (size_t bi = 0; bi < run->batch; bi++) {
            for (size_t e = 0; e < n; e++) {
                const int8_t x = run->q[t][bi * n + e];
                const int8_t q = quantize(
                    (float)(x - X->zero_point) * X->scale, Y->scale,
                    Y->zero_point);
                const int8_t got = run->q[ty][bi * out_sample + at + e];
                if (got != q) {
                    fail_msg("%s: %s input %zu element %zu is %d, not %d",
                             ck->model, L->name, j, e, got, q);
                }
                ck->exact++;
            }
        }
        at += n;
    }
}

/* Max pool (on its input's params, bit for bit), average pools (within
 * one step of the double mean of the dequantised window). */
static void ref_pool(size_t li, const struct run *run, struct check *ck)
{
    const struct memest_layer *L = memest_model_layer(run->m, li);
    const size_t ni = memest_model_input_count(run->m);
    const size_t tx = L->inputs[0], ty = ni + li;
    const struct prof_tensor_range *X = &run->r->tensors[tx],
                                   *Y = &run->r->tensors[ty];
    const bool gap = L->kind == MEMEST_KIND_GLOBALAVGPOOL;
    const bool mx = L->kind == MEMEST_KIND_MAXPOOL;
    const size_t C = (size_t)L->in_shape.dim[0], H = (size_t)L->in_shape.dim[1],
                 W = (size_t)L->in_shape.dim[2];
    const size_t OH = gap ? 1 : (size_t)L->out_shape.dim[1];
    const size_t OW = gap ? 1 : (size_t)L->out_shape.dim[2];
    const size_t KH = gap ? H : (size_t)L->kernel_h;
    const size_t KW = gap ? W : (size_t)L->kernel_w;
    const size_t SH = gap ? 1 : (size_t)L->stride_h;
    const size_t SW = gap ? 1 : (size_t)L->stride_w;
    const long PT = gap ? 0 : (long)L->pad_top, PL = gap ? 0 : (long)L->pad_left;
    if (mx) {
        /* the calibration's rule: a max pool keeps its input's range */
        assert_true(X->scale == Y->scale && X->zero_point == Y->zero_point);
    }
    for (size_t b = 0; b < run->batch; b++) {
        for (size_t c = 0; c < C; c++) {
            for (size_t oy = 0; oy < OH; oy++) {
                for (size_t ox = 0; ox < OW; ox++) {
                    int best = -129;
                    double sum = 0.0;
                    size_t cnt = 0;
                    for (size_t ky = 0; ky < KH; ky++) {
                        for (size_t kx = 0; kx < KW; kx++) {
                            const long iy = (long)(oy * SH + ky) - PT;
                            const long ix = (long)(ox * SW + kx) - PL;
                            if (iy < 0 || ix < 0 || iy >= (long)H ||
                                ix >= (long)W) {
                                cnt += L->count_include_pad && !mx;
                                continue;
                            }
                            const int8_t v =
                                run->q[tx][((b * C + c) * H + (size_t)iy) * W +
                                           (size_t)ix];
                            best = v > best ? v : best;
                            sum += (v - X->zero_point) * (double)X->scale;
                            cnt++;
                        }
                    }
                    const size_t o = ((b * C + c) * OH + oy) * OW + ox;
                    const int8_t got = run->q[ty][o];
                    if (mx) {
                        if (got != best) {
                            fail_msg("%s: %s output %zu is %d, the max %d",
                                     ck->model, L->name, o, got, best);
                        }
                        ck->exact++;
                        continue;
                    }
                    const double mean = sum / (double)cnt;
                    const double d = fabs((got - Y->zero_point) *
                                              (double)Y->scale -
                                          mean);
                    if (!(d <= (double)Y->scale)) {
                        fail_msg("%s: %s output %zu: %g from the mean %g",
                                 ck->model, L->name, o, d, mean);
                    }
                    ck->near++;
                }
            }
        }
    }
}

/* The sequence layers, which run in float on the dequantised input and
 * quantise with the output's params (the generic path): each output within
 * one step of the double-precision result (saturated) of its dequantised
 * input and the float parameters. */
static void ref_float_seq(prof_exec *ex, size_t li, const struct run *run,
                          struct check *ck)
{
    const struct memest_layer *L = memest_model_layer(run->m, li);
    const size_t ni = memest_model_input_count(run->m);
    const size_t tx = L->inputs[0], ty = ni + li;
    const size_t in = shape_n(&L->in_shape), on = shape_n(&L->out_shape);
    const size_t wn = (size_t)L->weight_count, bn = (size_t)L->bias_count;
    float *w = malloc(wn * sizeof *w), *b = calloc(bn + 1, sizeof *b);
    double *r = malloc(on * sizeof *r);
    assert_non_null(w);
    assert_non_null(b);
    assert_non_null(r);
    assert_int_equal(prof_exec_get_params(ex, li, w, wn, b, bn), PROF_OK);
    const struct prof_tensor_range *Y = &run->r->tensors[ty];
    for (size_t bi = 0; bi < run->batch; bi++) {
        const float *x = run->f[tx] + bi * in;
        if (L->kind == MEMEST_KIND_CLSTOKEN) {
            for (size_t i = 0; i < on; i++) {
                r[i] = i < wn ? w[i] : x[i - wn];
            }
        } else if (L->kind == MEMEST_KIND_POSEMBED) {
            for (size_t i = 0; i < on; i++) {
                r[i] = (double)x[i] + w[i];
            }
        } else {
            const size_t D = (size_t)L->units;
            for (size_t row = 0; row < on / D; row++) {
                double mean = 0, var = 0;
                for (size_t j = 0; j < D; j++) {
                    mean += x[row * D + j];
                }
                mean /= (double)D;
                for (size_t j = 0; j < D; j++) {
                    const double d = x[row * D + j] - mean;
                    var += d * d;
                }
                const double inv = 1 / sqrt(var / (double)D + L->bn_epsilon);
                for (size_t j = 0; j < D; j++) {
                    r[row * D + j] = (x[row * D + j] - mean) * inv * w[j] +
                                     (bn ? b[j] : 0.0);
                }
            }
        }
        for (size_t i = 0; i < on; i++) {
            const double sy = Y->scale;
            const double rq = fmin(fmax(r[i], (-128 - Y->zero_point) * sy),
                                   (127 - Y->zero_point) * sy);
            const double got =
                (double)(run->q[ty][bi * on + i] - Y->zero_point) * sy;
            if (!(fabs(got - rq) <= sy)) {
                fail_msg("%s: %s output %zu is %g, the real %g: more than "
                         "one step %g", ck->model, L->name, bi * on + i,
                         got, rq, sy);
            }
            ck->near++;
        }
    }
    free(w);
    free(b);
    free(r);
}

/* Every layer of model `text` at `batch` against the reference. */
static void check_model(const char *text, size_t batch)
{
    memest_model *m = model_of(text);
    const size_t ni = memest_model_input_count(m);
    const size_t nt = memest_model_tensor_count(m);
    const struct memest_shape in = memest_model_input_shape_at(m, 0);
    const size_t per = shape_n(&in);
    /* inputs in [-1, 2): an asymmetric range, a zero point away from 0 */
    float *x = malloc(batch * per * sizeof *x);
    assert_non_null(x);
    for (size_t i = 0; i < batch * per; i++) {
        x[i] = (float)uniform(-1.0, 2.0);
    }
    struct prof_dataset d;
    assert_int_equal(prof_dataset_init(&d, batch, in.rank, in.dim, false, 0,
                                       NULL, "test inputs", NULL),
                     PROF_OK);
    memcpy(d.x, x, batch * per * sizeof *x);
    struct prof_ranges r;
    struct prof_diag diag;
    assert_int_equal(prof_ranges_calibrate(m, &d, NULL, &r, &diag), PROF_OK);

    struct prof_exec_opts eo;
    prof_exec_opts_init(&eo);
    eo.batch = batch;
    eo.precision = MEMEST_INT8;
    eo.ranges = &r;
    prof_exec *ex = NULL;
    if (prof_exec_create(m, &eo, &ex, &diag) != PROF_OK) {
        fail_msg("%s", diag.message);
    }
    struct run run = {m, &r, batch, nt, calloc(nt, sizeof(int8_t *)),
                      calloc(nt, sizeof(float *))};
    assert_non_null(run.q);
    assert_non_null(run.f);
    const float *xs = x;
    const size_t nx = batch * per;
    assert_int_equal(prof_exec_run_observed(ex, &xs, &nx, 1, keep, &run),
                     PROF_OK);
    /* the input as static int8 stores it: ONNX's QuantizeLinear */
    for (size_t i = 0; i < nx; i++) {
        const int8_t q = quantize(x[i], r.tensors[0].scale,
                                  r.tensors[0].zero_point);
        assert_int_equal(run.q[0][i], q);
        assert_true(run.f[0][i] ==
                    (float)(q - r.tensors[0].zero_point) * r.tensors[0].scale);
    }
    struct check ck = {text, 0, 0};
    for (size_t li = 0; li < memest_model_layer_count(m); li++) {
        const struct memest_layer *L = memest_model_layer(m, li);
        switch (L->kind) {
        case MEMEST_KIND_CONV2D:
        case MEMEST_KIND_DENSE:
            ref_linear(ex, li, &run, &ck);
            break;
        case MEMEST_KIND_ADD:
            ref_add(li, &run, &ck);
            break;
        case MEMEST_KIND_CONCAT:
            ref_concat(li, &run, &ck);
            break;
        case MEMEST_KIND_MAXPOOL:
        case MEMEST_KIND_AVGPOOL:
        case MEMEST_KIND_GLOBALAVGPOOL:
            ref_pool(li, &run, &ck);
            break;
        case MEMEST_KIND_FLATTEN:
            assert_memory_equal(run.q[ni + li], run.q[L->inputs[0]],
                                shape_n(&L->out_shape) * batch);
            break;
        case MEMEST_KIND_LAYERNORM:
        case MEMEST_KIND_CLSTOKEN:
        case MEMEST_KIND_POSEMBED:
            ref_float_seq(ex, li, &run, &ck);
            break;
        default:
            fail_msg("%s: no reference for its kind", L->name);
        }
    }
    /* prof_exec_run's output is the last tensor dequantised */
    const size_t no = prof_exec_output_count(ex);
    float *y = malloc(no * sizeof *y);
    assert_non_null(y);
    assert_int_equal(prof_exec_run(ex, x, nx, y, no), PROF_OK);
    assert_memory_equal(y, run.f[nt - 1], no * sizeof *y);
    if (getenv("EXEC_TEST_VERBOSE")) {
        fprintf(stderr, "batch %zu: %zu elements bit for bit, %zu within a "
                "step\n", batch, ck.exact, ck.near);
    }
    assert_true(ck.exact > 0);
    free(y);
    run_free(&run);
    prof_exec_destroy(ex);
    prof_ranges_finish(&r);
    prof_dataset_finish(&d);
    free(x);
    memest_model_destroy(m);
}

/* Convolutions: general with padding (a zero point away from 0 in the
 * padding), grouped with relu6, depthwise on relu6's output (zero point
 * -128, so padding is not the integer 0), 1 x 1, max and average pools,
 * dense layers. */
static const char CONVS[] =
    "input 4x9x9\n"
    "conv2d 8 k=3 s=2 p=1 act=relu name=c\n"
    "conv2d 8 k=3 p=1 g=2 act=relu6 name=g\n"
    "conv2d 8 k=3 p=1 g=8 name=dw\n"
    "conv2d 8 k=3 p=1 g=8 act=relu name=dw2\n"
    "conv2d 6 k=1 act=relu name=pw\n"
    "maxpool k=3 s=2 p=1 name=mp\n"
    "avgpool k=2 s=1 name=ap\n"
    "flatten\n"
    "dense 7 act=relu name=fc\n"
    "dense 3 name=out\n";

/* A residual add, concats of other params and of equal ones, global
 * average pooling, float activations (tanh, sigmoid) after a conv, a
 * depthwise conv and a dense. */
static const char GRAPH[] =
    "input 3x8x8\n"
    "conv2d 8 k=3 p=1 act=relu name=c1\n"
    "conv2d 8 k=3 p=1 name=c2\n"
    "add in=c1,c2 act=relu name=sum\n"
    "add in=c1,c2 name=diff\n"
    "conv2d 4 k=1 in=sum name=c3\n"
    "concat in=c3,sum,diff name=cat\n"
    "concat in=cat,cat name=twice\n"
    "conv2d 8 k=3 p=1 act=tanh name=t\n"
    "conv2d 8 k=3 p=1 g=8 act=sigmoid name=dws\n"
    "globalavgpool name=gap\n"
    "flatten\n"
    "dense 6 act=tanh name=fc\n"
    "dense 4 name=out\n";

/* A keyword transformer's per-position layers: dense over the features
 * of 5 steps (the integer GEMM on batch * 5 rows), class token, position
 * embedding, layernorm (float on the dequantised input), dense. */
static const char SEQ[] =
    "input 5x6\n"
    "dense 8 act=relu name=fc\n"
    "clstoken name=cls\n"
    "posembed name=pos\n"
    "layernorm name=ln\n"
    "dense 4 name=out\n";

static void test_reference(void **state)
{
    (void)state;
    check_model(CONVS, 1);
    check_model(CONVS, 5);
    check_model(GRAPH, 3);
    check_model(SEQ, 1);
    check_model(SEQ, 4);
}

/* The same samples at batch 1, 8 and 32, on 1 and 2 threads (every
 * layer split), give the same bits. */
static void test_batch_threads(void **state)
{
    (void)state;
    const char *texts[2] = {CONVS, GRAPH};
    for (int k = 0; k < 2; k++) {
        memest_model *m = model_of(texts[k]);
        const struct memest_shape in = memest_model_input_shape_at(m, 0);
        const size_t per = shape_n(&in), N = 32;
        struct prof_dataset d;
        assert_int_equal(prof_dataset_init(&d, N, in.rank, in.dim, false, 0,
                                           NULL, "test inputs", NULL),
                         PROF_OK);
        for (size_t i = 0; i < N * per; i++) {
            d.x[i] = (float)uniform(-1.0, 2.0);
        }
        struct prof_ranges r;
        assert_int_equal(prof_ranges_calibrate(m, &d, NULL, &r, NULL),
                         PROF_OK);
        float *first = NULL;
        size_t no_all = 0;
        const size_t batches[3] = {1, 8, 32};
        for (int bi = 0; bi < 3; bi++) {
            for (unsigned th = 1; th <= 2; th++) {
                struct prof_exec_opts eo;
                prof_exec_opts_init(&eo);
                eo.batch = batches[bi];
                eo.precision = MEMEST_INT8;
                eo.ranges = &r;
                eo.threads = th;
                eo.thread_min_macs = 1;
                prof_exec *ex = NULL;
                assert_int_equal(prof_exec_create(m, &eo, &ex, NULL), PROF_OK);
                const size_t no = prof_exec_output_count(ex) / batches[bi];
                float *y = malloc(N * no * sizeof *y);
                assert_non_null(y);
                for (size_t s = 0; s < N; s += batches[bi]) {
                    assert_int_equal(
                        prof_exec_run(ex, d.x + s * per, batches[bi] * per,
                                      y + s * no, batches[bi] * no),
                        PROF_OK);
                }
                if (!first) {
                    first = y;
                    no_all = N * no;
                } else {
                    assert_memory_equal(first, y, no_all * sizeof *y);
                    free(y);
                }
                prof_exec_destroy(ex);
            }
        }
        free(first);
        prof_ranges_finish(&r);
        prof_dataset_finish(&d);
        memest_model_destroy(m);
    }
}

/* A final softmax runs in float on the logits: the reference's logits
 * (int32 sums with the bias, times x_scale * w_scale) through a double
 * softmax. */
static void test_final_softmax(void **state)
{
    (void)state;
    memest_model *m = model_of("input 12\ndense 10 act=relu name=h\n"
                               "dense 6 act=softmax name=out\n");
    const size_t B = 4;
    struct prof_dataset d;
    const uint64_t shape[1] = {12};
    assert_int_equal(prof_dataset_init(&d, B, 1, shape, false, 0, NULL,
                                       "test inputs", NULL),
                     PROF_OK);
    for (size_t i = 0; i < B * 12; i++) {
        d.x[i] = (float)uniform(-1.0, 2.0);
    }
    struct prof_ranges r;
    assert_int_equal(prof_ranges_calibrate(m, &d, NULL, &r, NULL), PROF_OK);
    struct prof_exec_opts eo;
    prof_exec_opts_init(&eo);
    eo.batch = B;
    eo.precision = MEMEST_INT8;
    eo.ranges = &r;
    prof_exec *ex = NULL;
    assert_int_equal(prof_exec_create(m, &eo, &ex, NULL), PROF_OK);
    struct run run = {m, &r, B, 3, calloc(3, sizeof(int8_t *)),
                      calloc(3, sizeof(float *))};
    const float *xs = d.x;
    const size_t nx = B * 12;
    assert_int_equal(prof_exec_run_observed(ex, &xs, &nx, 1, keep, &run),
                     PROF_OK);
    float w[60], b[6], ws[6];
    int8_t wq[60];
    assert_int_equal(prof_exec_get_params(ex, 1, w, 60, b, 6), PROF_OK);
    weights_q8(w, 6, 10, wq, ws);
    const float sx = r.tensors[1].scale;
    const int32_t zx = r.tensors[1].zero_point;
    for (size_t s = 0; s < B; s++) {
        double z[6], mx = -INFINITY, sum = 0.0;
        for (size_t o = 0; o < 6; o++) {
            int64_t acc = (int64_t)rintf(b[o] / (sx * ws[o]));
            for (size_t k = 0; k < 10; k++) {
                acc += (int64_t)(run.q[1][s * 10 + k] - zx) * wq[o * 10 + k];
            }
            z[o] = (double)acc * (double)sx * (double)ws[o];
            mx = fmax(mx, z[o]);
        }
        for (size_t o = 0; o < 6; o++) {
            sum += exp(z[o] - mx);
        }
        double total = 0.0;
        for (size_t o = 0; o < 6; o++) {
            const double want = exp(z[o] - mx) / sum;
            const float got = run.f[2][s * 6 + o];
            assert_true(fabs((double)got - want) <= 1e-6);
            total += got;
        }
        assert_true(fabs(total - 1.0) <= 1e-5);
    }
    run_free(&run);
    prof_exec_destroy(ex);
    prof_ranges_finish(&r);
    prof_dataset_finish(&d);
    memest_model_destroy(m);
}

/* Static int8 without a calibration, with another model's, or with a
 * zero point out of range is refused, saying why. */
static void test_refusals(void **state)
{
    (void)state;
    memest_model *m = model_of("input 12\ndense 10 act=relu name=h\n"
                               "dense 6 name=out\n");
    memest_model *other = model_of("input 12\ndense 10 act=relu name=a\n"
                                   "dense 6 name=b\n");
    memest_model *longer = model_of("input 12\ndense 10 act=relu name=h\n"
                                    "dense 6 name=out\ndense 2 name=z\n");
    struct prof_dataset d;
    const uint64_t shape[1] = {12};
    assert_int_equal(prof_dataset_init(&d, 2, 1, shape, false, 0, NULL,
                                       "test inputs", NULL),
                     PROF_OK);
    for (size_t i = 0; i < 24; i++) {
        d.x[i] = (float)uniform(-1.0, 1.0);
    }
    struct prof_ranges r;
    assert_int_equal(prof_ranges_calibrate(m, &d, NULL, &r, NULL), PROF_OK);
    struct prof_exec_opts eo;
    /* prof_exec_opts_init sets every field: no ranges, whatever the
     * memory held (it used to leave `ranges` as it found it) */
    memset(&eo, 0xa5, sizeof eo);
    prof_exec_opts_init(&eo);
    assert_null(eo.ranges);
    eo.precision = MEMEST_INT8;
    prof_exec *ex = NULL;
    struct prof_diag diag;
    /* no ranges, and the model carries none */
    assert_int_equal(prof_exec_create(m, &eo, &ex, &diag), PROF_E_RANGE);
    assert_null(ex);
    assert_non_null(strstr(diag.message, "prof_ranges_calibrate"));
    /* int8-dynamic needs none */
    eo.precision = MEMEST_INT8_DYNAMIC;
    assert_int_equal(prof_exec_create(m, &eo, &ex, &diag), PROF_OK);
    prof_exec_destroy(ex);
    ex = NULL;
    eo.precision = MEMEST_INT8;
    eo.ranges = &r;
    /* another model's names */
    assert_int_equal(prof_exec_create(other, &eo, &ex, &diag), PROF_E_RANGE);
    assert_null(ex);
    assert_non_null(strstr(diag.message, "another model"));
    assert_non_null(strstr(diag.message, "h"));
    /* another model's count */
    assert_int_equal(prof_exec_create(longer, &eo, &ex, &diag), PROF_E_RANGE);
    assert_non_null(strstr(diag.message, "3 tensor ranges"));
    /* a zero point out of range */
    const int32_t keep_zp = r.tensors[1].zero_point;
    r.tensors[1].zero_point = 128;
    assert_int_equal(prof_exec_create(m, &eo, &ex, &diag), PROF_E_RANGE);
    assert_non_null(strstr(diag.message, "zero point 128"));
    r.tensors[1].zero_point = keep_zp;
    assert_int_equal(prof_exec_create(m, &eo, &ex, &diag), PROF_OK);
    prof_exec_destroy(ex);
    prof_ranges_finish(&r);
    prof_dataset_finish(&d);
    memest_model_destroy(m);
    memest_model_destroy(other);
    memest_model_destroy(longer);
}

/* The parameter bytes static int8 stores: the packed int8 weights, and per
 * output channel a float scale, the int32 bias, multiplier, shift and the
 * weights' row sum; the arena holds 1-byte tensors as the plan says. */
static void test_memory(void **state)
{
    (void)state;
    memest_model *m = model_of("input 12\ndense 10 act=relu name=h\n");
    struct prof_dataset d;
    const uint64_t shape[1] = {12};
    assert_int_equal(prof_dataset_init(&d, 1, 1, shape, false, 0, NULL,
                                       "test inputs", NULL),
                     PROF_OK);
    struct prof_ranges r;
    assert_int_equal(prof_ranges_calibrate(m, &d, NULL, &r, NULL), PROF_OK);
    struct prof_exec_opts eo;
    prof_exec_opts_init(&eo);
    eo.batch = 4;
    eo.precision = MEMEST_INT8;
    eo.ranges = &r;
    prof_exec *ex = NULL;
    assert_int_equal(prof_exec_create(m, &eo, &ex, NULL), PROF_OK);
    struct prof_exec_memory mem;
    assert_int_equal(prof_exec_memory(ex, &mem), PROF_OK);
    assert_int_equal(mem.parameter_bytes,
                     kern_q8_packed_bytes(10, 12) + 10 * (4 + 4 + 4 + 4 + 4));
    /* input and output, 1 byte each, both alive at the one layer */
    assert_int_equal(mem.arena_bytes, 4 * 12 + 4 * 10);
    assert_int_equal(mem.arena_bytes, mem.plan_bytes);
    prof_exec_destroy(ex);
    prof_ranges_finish(&r);
    prof_dataset_finish(&d);
    memest_model_destroy(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reference),
        cmocka_unit_test(test_batch_threads),
        cmocka_unit_test(test_final_softmax),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_memory),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
