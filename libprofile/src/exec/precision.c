/* Precision conversion: 16-bit storage widened to float and narrowed back
 * (round to nearest even), int8 tensors quantised per tensor and
 * dequantised, and the two generic paths an operator without its own
 * run_16 or run_s8 takes: convert its input, run its float form, convert
 * the result. Every operator computes in float; only the storage between
 * operators differs. */
#include <string.h>

#include "edgefit/kernels.h"
#include "edgefit/profile.h"
#include "exec/executor.h"
#include "exec/ops.h"

/* Quantise the float result y32 per tensor into the layer's output. */
int exec_quantize_out(prof_exec *ex, const struct exec_op *op)
{
    int8_t *y = (int8_t *)(ex->arena + op->out_off);
    return exec_kern_status(kern_q8_quantize_tensor_f32(
        ex->y32, op->out_n, y, &ex->t_scale[op->out_t]));
}

float exec_input_scale(const prof_exec *ex, const struct exec_op *op)
{
    return ex->t_scale[op->layer->inputs[0]];
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

/* int8: an input dequantised with its own scale into buf. */
const float *exec_load_s8(prof_exec *ex, size_t t, float *buf, int *st)
{
    *st = exec_kern_status(kern_q8_dequantize_f32(
        (const int8_t *)(ex->arena + ex->t_off[t]), ex->t_n[t],
        ex->t_scale[t], buf));
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
 * shift, global average) into y32, quantised with the result's own
 * scale. */
int exec_run_s8_generic(prof_exec *ex, const struct exec_op *op)
{
    const int8_t *x = (const int8_t *)(ex->arena + op->in_off);
    int st = exec_kern_status(kern_q8_dequantize_f32(
        x, op->in_n, exec_input_scale(ex, op), ex->x32));
    if (st == PROF_OK) {
        const struct exec_f32_args a = {ex->x32, op->w, NULL, op->b,
                                        ex->y32, true};
        st = op->vt->run_f32(ex, op, &a);
    }
    if (st == PROF_OK) {
        st = exec_quantize_out(ex, op);
    }
    return st;
}
