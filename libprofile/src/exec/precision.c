/* Precision conversion: 16-bit storage widened to float and narrowed back
 * (round to nearest even), int8 tensors quantised per tensor and
 * dequantised (int8-dynamic: a scale per batch; static int8: a scale and
 * zero point fixed when the executor is built, and the output stage of
 * dense and conv2d layers: int32 bias, fixed-point multipliers, the
 * clamp), and the generic path an operator without its own run_16,
 * run_s8 or run_s8s takes: convert its input, run its float form, convert
 * the result. */
#include <math.h>
#include <string.h>

#include "edgefit/kernels.h"
#include "edgefit/profile.h"
#include "exec/executor.h"
#include "exec/ops.h"

/* Quantise the float result y32 into the layer's output: with the
 * output's fixed params at static int8 (nothing for a final softmax, whose
 * float result is the model's output), with the result's own scale at
 * int8-dynamic. */
int exec_quantize_out(prof_exec *ex, const struct exec_op *op)
{
    int8_t *y = (int8_t *)(ex->arena + op->out_off);
    if (exec_static_s8(ex)) {
        if (exec_s8_final_float(ex, op)) {
            return PROF_OK;
        }
        return exec_s8_quantize(ex->y32, op->out_n, ex->t_scale[op->out_t],
                                ex->t_zero[op->out_t], y);
    }
    return exec_kern_status(kern_q8_quantize_tensor_f32(
        ex->y32, op->out_n, y, &ex->t_scale[op->out_t]));
}

float exec_input_scale(const prof_exec *ex, const struct exec_op *op)
{
    return ex->t_scale[op->layer->inputs[0]];
}

int32_t exec_input_zero(const prof_exec *ex, const struct exec_op *op)
{
    return ex->t_zero[op->layer->inputs[0]];
}

int exec_s8_quantize(const float *x, size_t n, float scale, int32_t zero,
                     int8_t *q)
{
    /* libkernels' formula (its vector path where there is one); every
     * scale and zero point reaching here was checked when the executor
     * was built, so a refusal is a defect, reported as such */
    return exec_kern_status(kern_q8_quantize_zp_f32(x, n, scale, zero, q));
}

void exec_s8_dequantize(const int8_t *q, size_t n, float scale, int32_t zero,
                        float *x)
{
    if (zero == 0) {
        (void)kern_q8_dequantize_f32(q, n, scale, x);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        x[i] = (float)((int32_t)q[i] - zero) * scale;
    }
}

/* One bound of a clamp: zero + round(v / scale) (half away from zero,
 * TFLite's TfLiteRound on the float quotient), within [-128, 127]. */
static int32_t clamp_bound(double v, float scale, int32_t zero)
{
    const float r = roundf((float)v / scale);
    const float f = r + (float)zero;
    return f <= -128.0f ? -128 : f >= 127.0f ? 127 : (int32_t)f;
}

bool exec_s8_clamp(enum memest_act act, double lo, double hi, float scale,
                   int32_t zero, int32_t *qmin, int32_t *qmax)
{
    *qmin = -128;
    *qmax = 127;
    if (act == MEMEST_ACT_NONE) {
        return true;
    }
    if (act == MEMEST_ACT_RELU) {
        *qmin = clamp_bound(0.0, scale, zero);
        return true;
    }
    if (act == MEMEST_ACT_RELU6) {
        *qmin = clamp_bound(0.0, scale, zero);
        *qmax = clamp_bound(6.0, scale, zero);
        return true;
    }
    if (act == MEMEST_ACT_CLIP) {
        *qmin = clamp_bound(lo, scale, zero);
        *qmax = clamp_bound(hi, scale, zero);
        if (*qmax < *qmin) {
            *qmax = *qmin;
        }
        return true;
    }
    return false;
}

int exec_s8_outstage_prep(prof_exec *ex, struct exec_op *op)
{
    if (!exec_static_s8(ex)) {
        return PROF_OK;
    }
    const struct memest_layer *L = op->layer;
    const float sx = exec_input_scale(ex, op);
    const float sy = ex->t_scale[op->out_t];
    const int32_t zy = ex->t_zero[op->out_t];
    op->s8_float_act = !exec_s8_clamp(L->act, L->act_alpha, L->act_beta, sy,
                                      zy, &op->qmin, &op->qmax);
    for (size_t c = 0; c < op->c_out; c++) {
        /* the bias in the accumulator's scale, as ONNX Runtime's
         * quantizer writes it: a float quotient rounded half to even */
        const float bs = sx * op->wscale[c];
        double q = 0.0;
        if (op->bn && op->b) {
            /* scales this small underflow the product to 0: a zero bias
             * over it is 0/0, still a zero bias */
            const float qf = op->b[c] == 0.0f ? 0.0f : op->b[c] / bs;
            q = (double)rintf(qf);
            q = q < -2147483648.0 ? -2147483648.0
                : q > 2147483647.0 ? 2147483647.0
                                   : q;
        }
        op->bias32[c] = (int32_t)q;
        /* TFLite's effective scale, in double */
        const double real = (double)sx * (double)op->wscale[c] / (double)sy;
        const int kst =
            kern_q8_quantize_multiplier(real, &op->mult[c], &op->shift[c]);
        if (kst != KERN_OK) {
            return exec_kern_status(kst);
        }
        if (op->fscale) {
            /* ONNX Runtime's QLinearConv and QGemm: X_scale * W_scale[c] /
             * Y_scale, each step in float */
            op->fscale[c] = sx * op->wscale[c] / sy;
        }
    }
    return PROF_OK;
}

struct kern_q8_outstage exec_s8_outstage(const prof_exec *ex,
                                         const struct exec_op *op, size_t c0)
{
    return (struct kern_q8_outstage){
        .bias = op->bias32 + c0, .mult = op->mult + c0,
        .shift = op->shift + c0, .per_channel = 1,
        .zero_point = ex->t_zero[op->out_t],
        .qmin = op->qmin, .qmax = op->qmax,
        .scale = op->fscale ? op->fscale + c0 : NULL,
    };
}

void exec_s8_acc_fix(const prof_exec *ex, const struct exec_op *op,
                     int32_t *acc, size_t m, size_t n, size_t ld, size_t c0)
{
    const uint32_t zx = (uint32_t)exec_input_zero(ex, op);
    const int32_t *bias = op->bias32 + c0, *sums = op->wsum + c0;
    for (size_t i = 0; i < m; i++) {
        int32_t *row = acc + i * ld;
        for (size_t j = 0; j < n; j++) {
            row[j] = (int32_t)((uint32_t)row[j] + (uint32_t)bias[j] -
                               zx * (uint32_t)sums[j]);
        }
    }
}

bool exec_s8_final_float(const prof_exec *ex, const struct exec_op *op)
{
    const enum memest_act act = op->layer->act;
    return exec_static_s8(ex) && op->index + 1 == ex->nlayers &&
           (act == MEMEST_ACT_SOFTMAX || act == MEMEST_ACT_LOGSOFTMAX);
}

/* The name of tensor t: a model input's, or the layer's that writes it. */
static const char *tensor_name(const prof_exec *ex, size_t t)
{
    const char *n = t < ex->ninputs ? memest_model_input_name(ex->model, t)
                                    : ex->ops[t - ex->ninputs].layer->name;
    return n ? n : "";
}

int exec_s8_fix_params(prof_exec *ex, const struct prof_exec_opts *opts,
                       struct prof_diag *diag)
{
    if (!exec_static_s8(ex)) {
        return PROF_OK;
    }
    const struct prof_ranges *r = opts->ranges;
    const char *mname = memest_model_name(ex->model);
    if (!r && memest_model_is_quantized(ex->model)) {
        /* a QDQ model: the params its file gives every tensor */
        for (size_t t = 0; t < ex->ntensors; t++) {
            struct memest_quant q;
            if (memest_model_tensor_quant(ex->model, t, &q) != MEMEST_OK) {
                exec_diag_set(diag, "tensor %s of the model %s carries no "
                              "quantisation", tensor_name(ex, t),
                              mname ? mname : "");
                return PROF_E_RANGE;
            }
            ex->t_scale[t] = q.scale;
            ex->t_zero[t] = q.zero_point;
        }
        goto views;
    }
    if (!r) {
        exec_diag_set(diag, "static int8 needs every tensor's scale and zero "
                      "point: the model %s carries none; calibrate its "
                      "ranges (prof_ranges_calibrate, or a calibration "
                      "file through prof_ranges_load) or give a QDQ model "
                      "(int8-dynamic runs without)", mname ? mname : "");
        return PROF_E_RANGE;
    }
    if (r->count != ex->ntensors || !r->tensors) {
        exec_diag_set(diag, "the calibration (of model %s) holds %zu tensor "
                      "ranges; the model %s has %zu tensors",
                      r->model ? r->model : "?", r->count,
                      mname ? mname : "", ex->ntensors);
        return PROF_E_RANGE;
    }
    for (size_t t = 0; t < ex->ntensors; t++) {
        const struct prof_tensor_range *tr = &r->tensors[t];
        const char *want = tensor_name(ex, t);
        if (!tr->name || strcmp(tr->name, want) != 0) {
            exec_diag_set(diag, "the calibration (of model %s) names tensor "
                          "%zu %s; the model %s's is %s: ranges of another "
                          "model", r->model ? r->model : "?", t,
                          tr->name ? tr->name : "(none)",
                          mname ? mname : "", want);
            return PROF_E_RANGE;
        }
        if (!(tr->scale > 0.0f) || !isfinite(tr->scale) ||
            tr->zero_point < -128 || tr->zero_point > 127) {
            exec_diag_set(diag, "the calibration's tensor %s: scale %g and "
                          "zero point %d (a scale must be finite and > 0, "
                          "a zero point in [-128, 127])", want,
                          (double)tr->scale, (int)tr->zero_point);
            return PROF_E_RANGE;
        }
        ex->t_scale[t] = tr->scale;
        ex->t_zero[t] = tr->zero_point;
    }
views:
    /* A view's bytes are its input's: so are its params (calibration gives
     * it its input's range; any other would be read wrongly). Layers run
     * in order, so a chain of views takes its root's. */
    for (size_t i = 0; i < ex->nlayers; i++) {
        const struct exec_op *op = &ex->ops[i];
        if (op->alias) {
            ex->t_scale[op->out_t] = exec_input_scale(ex, op);
            ex->t_zero[op->out_t] = exec_input_zero(ex, op);
        }
    }
    return PROF_OK;
}

/* fp32: the inputs are read in the arena. */
const float *exec_load_f32(prof_exec *ex, size_t t, float *buf, int *st)
{
    (void)buf;
    (void)st;
    return (const float *)(ex->arena + ex->t_off[t]);
}

/* 16-bit storage: an input widened into buf. */
const float *exec_load_16(prof_exec *ex, size_t t, float *buf, int *st)
{
    *st = exec_widen(ex, buf, (const uint16_t *)(ex->arena + ex->t_off[t]),
                     ex->t_n[t]);
    return buf;
}

/* int8: an input dequantised with its own params into buf. */
const float *exec_load_s8(prof_exec *ex, size_t t, float *buf, int *st)
{
    *st = PROF_OK;
    exec_s8_dequantize((const int8_t *)(ex->arena + ex->t_off[t]), ex->t_n[t],
                       ex->t_scale[t], ex->t_zero[t], buf);
    return buf;
}

/* 16-bit storage: the input and the parameters widened into x32, w32 and
 * b32, the float operator into y32 (which prof_exec_run returns for the
 * last layer), the result narrowed into the arena. */
int exec_run_16_generic(prof_exec *ex, const struct exec_op *op)
{
    const uint16_t *x = (const uint16_t *)(ex->arena + op->in_off);
    uint16_t *y = (uint16_t *)(ex->arena + op->out_off);
    int st;
    if ((st = exec_widen(ex, ex->x32, x, op->in_n)) != PROF_OK) {
        return st;
    }
    if (op->wn) {
        if ((st = exec_widen(ex, ex->w32, op->w16, op->wn)) != PROF_OK ||
            (st = exec_widen(ex, ex->b32, op->b16, op->bn)) != PROF_OK) {
            return st;
        }
    }
    const struct exec_f32_args a = {ex->x32, ex->w32, NULL, ex->b32,
                                    ex->y32, true};
    if ((st = op->vt->run_f32(ex, op, &a)) != PROF_OK) {
        return st;
    }
    return exec_narrow(ex, y, ex->y32, op->out_n);
}

/* int8: the input dequantised into x32, the float operator on the float
 * master parameters (pooling, activations, a batch norm's scale and
 * shift, global average) into y32, quantised with the output's params
 * (static) or the result's own scale (dynamic). */
int exec_run_s8_generic(prof_exec *ex, const struct exec_op *op)
{
    const int8_t *x = (const int8_t *)(ex->arena + op->in_off);
    exec_s8_dequantize(x, op->in_n, exec_input_scale(ex, op),
                       exec_input_zero(ex, op), ex->x32);
    const struct exec_f32_args a = {ex->x32, op->w, NULL, op->b, ex->y32,
                                    true};
    int st = op->vt->run_f32(ex, op, &a);
    if (st == PROF_OK) {
        st = exec_quantize_out(ex, op);
    }
    return st;
}
