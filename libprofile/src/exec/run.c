/* The run loop: the caller's inputs staged at the storage precision, then
 * each layer through its kind's entry (exec/ops.h): run_f32 on the arena
 * at fp32, run_16 and run_s8 (or the generic conversions of precision.c)
 * at 16-bit and int8. A view computes nothing at any precision. */
#include <stdlib.h>
#include <string.h>

#include "edgefit/kernels.h"
#include "edgefit/profile.h"
#include "exec/executor.h"
#include "exec/ops.h"
#include "../alloc_rec.h" /* last: it wraps malloc and co. */

int exec_stage_inputs(prof_exec *ex, const float *const *inputs)
{
    int st = PROF_OK;
    for (size_t k = 0; st == PROF_OK && k < ex->ninputs; k++) {
        unsigned char *dst = ex->arena + ex->t_off[k];
        const size_t n = ex->t_n[k];
        switch (ex->precision) {
        case MEMEST_FP32:
            memcpy(dst, inputs[k], n * sizeof(float));
            break;
        case MEMEST_FP16:
        case MEMEST_BF16:
            st = exec_narrow(ex, (uint16_t *)dst, inputs[k], n);
            break;
        case MEMEST_INT8:
            /* the input tensor's fixed params */
            st = exec_s8_quantize(inputs[k], n, ex->t_scale[k],
                                  ex->t_zero[k], (int8_t *)dst);
            break;
        case MEMEST_INT8_DYNAMIC:
            st = exec_kern_status(kern_q8_quantize_tensor_f32(
                inputs[k], n, (int8_t *)dst, &ex->t_scale[k]));
            break;
        default:
            st = PROF_E_INVALID;
            break;
        }
    }
    return st;
}

int exec_run_layer(prof_exec *ex, size_t i)
{
    const struct exec_op *op = &ex->ops[i];
    const struct exec_op_vtable *vt = op->vt;
    const bool last = i + 1 == ex->nlayers;
    switch (ex->precision) {
    case MEMEST_FP32: {
        if (op->alias) {
            return PROF_OK; /* the output is the input's buffer */
        }
        const struct exec_f32_args a = {
            (const float *)(ex->arena + op->in_off), op->w,
            op->wpk ? op->wpk : op->dwpk, op->b,
            (float *)(ex->arena + op->out_off), true,
        };
        return vt->run_f32(ex, op, &a);
    }
    case MEMEST_FP16:
    case MEMEST_BF16:
        if (op->alias) {
            /* the last layer's float result is what prof_exec_run
             * returns */
            return last ? exec_widen(ex, ex->y32,
                                     (const uint16_t *)(ex->arena +
                                                        op->out_off),
                                     op->out_n)
                        : PROF_OK;
        }
        return vt->run_16 ? vt->run_16(ex, op) : exec_run_16_generic(ex, op);
    case MEMEST_INT8:
    case MEMEST_INT8_DYNAMIC: {
        int st = PROF_OK;
        if (op->alias) {
            /* the same bytes: the same params (fixed so at static int8) */
            ex->t_scale[op->out_t] = exec_input_scale(ex, op);
        } else {
            int (*run)(prof_exec *, const struct exec_op *) =
                exec_static_s8(ex) ? vt->run_s8s : vt->run_s8;
            st = run ? run(ex, op) : exec_run_s8_generic(ex, op);
        }
        /* The model's output: int8-dynamic returns the last layer's float
         * result (y32; a view's input dequantised); static int8 the output
         * tensor dequantised, or a final softmax's float result. */
        if (st == PROF_OK && last &&
            (op->alias || exec_static_s8(ex)) &&
            !exec_s8_final_float(ex, op)) {
            exec_s8_dequantize((const int8_t *)(ex->arena + op->out_off),
                               op->out_n, ex->t_scale[op->out_t],
                               ex->t_zero[op->out_t], ex->y32);
        }
        return st;
    }
    default:
        return PROF_E_INVALID;
    }
}

int exec_linear_f32(prof_exec *ex, const struct exec_op *op, const float *x,
                    float *y)
{
    const struct exec_f32_args a = {x, op->w, NULL, op->b, y, false};
    return op->vt->run_f32(ex, op, &a);
}

int exec_act_f32(const prof_exec *ex, const struct exec_op *op,
                 enum memest_act act, const float *x, float *y)
{
    return exec_apply_act(ex, op, act, x, y);
}

int exec_forward(prof_exec *ex, const float *const *inputs)
{
    exec_wake_threads(ex);
    int st = exec_stage_inputs(ex, inputs);
    for (size_t i = 0; st == PROF_OK && i < ex->nlayers; i++) {
        st = exec_run_layer(ex, i);
    }
    return st;
}

PROF_API int prof_exec_run_inputs(prof_exec *ex, const float *const *inputs,
                                  const size_t *n_in, size_t count,
                                  float *output, size_t n_out)
{
    if (!ex || !inputs || !n_in || !output || count != ex->ninputs ||
        n_out != ex->output_n) {
        return PROF_E_INVALID;
    }
    for (size_t k = 0; k < count; k++) {
        if (!inputs[k] || n_in[k] != ex->t_n[k]) {
            return PROF_E_INVALID;
        }
    }
    int st = exec_forward(ex, inputs);
    if (st != PROF_OK) {
        return st;
    }
    const float *result =
        ex->precision == MEMEST_FP32
            ? (const float *)(ex->arena + ex->t_off[ex->ntensors - 1])
            : ex->y32;
    memcpy(output, result, n_out * sizeof(float));
    return PROF_OK;
}

PROF_API int prof_exec_run(prof_exec *ex, const float *input, size_t n_in,
                           float *output, size_t n_out)
{
    if (!ex || ex->ninputs != 1) {
        return PROF_E_INVALID;
    }
    return prof_exec_run_inputs(ex, &input, &n_in, 1, output, n_out);
}

/* The observer sees each tensor right after it is written, before a later
 * layer may reuse its arena buffer (the plan shares buffers between
 * tensors whose lifetimes do not meet). fp32 holds floats in the arena;
 * int8 shows each tensor dequantised into buf (what the int8 values
 * represent; a final softmax's float result as it is). 16-bit storage
 * would need a widening copy, which nothing asks for yet. */
static int observe(prof_exec *ex, size_t t, prof_exec_observe_fn fn,
                   void *ctx, float *buf)
{
    const size_t ni = ex->ninputs;
    const float *data = (const float *)(ex->arena + ex->t_off[t]);
    if (memest_precision_is_int8(ex->precision)) {
        if (t == ex->ntensors - 1 && t >= ni &&
            exec_s8_final_float(ex, &ex->ops[t - ni])) {
            data = ex->y32;
        } else {
            exec_s8_dequantize((const int8_t *)(ex->arena + ex->t_off[t]),
                               ex->t_n[t], ex->t_scale[t], ex->t_zero[t],
                               buf);
            data = buf;
        }
    }
    struct prof_exec_tensor v = {
        t,
        t < ni ? memest_model_input_name(ex->model, t)
               : ex->ops[t - ni].layer->name,
        data,
        ex->t_n[t],
        ex->batch,
        exec_t_blocked(ex, t) ? 1 : 0,
    };
    return fn(ctx, &v) == 0 ? PROF_OK : PROF_E_CALLBACK;
}

PROF_API int prof_exec_run_observed(prof_exec *ex,
                                    const float *const *inputs,
                                    const size_t *n_in, size_t count,
                                    prof_exec_observe_fn fn, void *ctx)
{
    if (!ex || !inputs || !n_in || !fn || count != ex->ninputs) {
        return PROF_E_INVALID;
    }
    if (ex->precision != MEMEST_FP32 &&
        !memest_precision_is_int8(ex->precision)) {
        return PROF_E_RANGE;
    }
    for (size_t k = 0; k < count; k++) {
        if (!inputs[k] || n_in[k] != ex->t_n[k]) {
            return PROF_E_INVALID;
        }
    }
    float *buf = NULL;
    if (ex->precision != MEMEST_FP32) {
        size_t most = 0;
        for (size_t t = 0; t < ex->ntensors; t++) {
            most = exec_max_sz(most, ex->t_n[t]);
        }
        buf = exec_calloc(most, sizeof *buf);
        if (most && !buf) {
            return PROF_E_NOMEM;
        }
    }
    int st = exec_stage_inputs(ex, inputs);
    for (size_t k = 0; st == PROF_OK && k < count; k++) {
        st = observe(ex, k, fn, ctx, buf);
    }
    for (size_t i = 0; st == PROF_OK && i < ex->nlayers; i++) {
        st = exec_run_layer(ex, i);
        if (st == PROF_OK) {
            st = observe(ex, ex->ops[i].out_t, fn, ctx, buf);
        }
    }
    free(buf);
    return st;
}
