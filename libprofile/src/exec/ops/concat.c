/* A concat along one axis of a sample of two or more inputs, read from
 * the arena: fp32 and 16-bit join the stored bits, int8-dynamic
 * dequantises each input with its own scale and quantises the whole with
 * one, static int8 requantises each input into the output's params. The
 * trainer joins float buffers and splits the gradient (concat_walk). */
#include <stdint.h>
#include <string.h>

#include "edgefit/kernels.h"
#include "edgefit/profile.h"
#include "exec/ops.h"

/* A concat along per-sample axis a: each sample of the output is, for
 * each of the `outer` positions of the dimensions before a (one along the
 * channels, the rows of a CxHxW along w...), the inputs' blocks of that
 * position one after the other; an input's block is its sample / outer
 * elements (its dimensions from a on), contiguous in input and output.
 * Along the channels outer is 1: a sample is one block per input, as it
 * always was. `block` moves n elements of tensor t, from element `from` of
 * t to element `to` of the output, in whatever form it works on. */
typedef int (*concat_block_fn)(prof_exec *ex, const struct exec_op *op,
                               size_t t, size_t from, size_t to, size_t n);

static int concat_samples(prof_exec *ex, const struct exec_op *op,
                          concat_block_fn block, size_t b0, size_t b1)
{
    const struct memest_layer *L = op->layer;
    const size_t out_sample = op->out_n / ex->batch;
    size_t outer = 1;
    int st = PROF_OK;
    /* the output's dimensions before the axis: no overflow, their product
     * divides the sample's element count, which the plan has checked */
    for (unsigned d = 0; d < L->concat_axis && d < L->out_shape.rank; d++) {
        outer *= (size_t)L->out_shape.dim[d];
    }
    for (size_t b = b0; st == PROF_OK && b < b1; b++) {
        size_t at = b * out_sample;
        for (size_t o = 0; st == PROF_OK && o < outer; o++) {
            for (size_t j = 0; st == PROF_OK && j < L->input_count; j++) {
                const size_t t = L->inputs[j];
                const size_t sample = ex->t_n[t] / ex->batch;
                const size_t n = sample / outer;
                st = block(ex, op, t, b * sample + o * n, at, n);
                at += n;
            }
        }
    }
    return st;
}

static int concat_blocks(prof_exec *ex, const struct exec_op *op,
                         concat_block_fn block)
{
    return concat_samples(ex, op, block, 0, ex->batch);
}

/* fp32 and 16-bit: joining copies the stored bits. */
static int copy_block(prof_exec *ex, const struct exec_op *op, size_t t,
                      size_t from, size_t to, size_t n)
{
    memcpy(ex->arena + op->out_off + to * ex->sbytes,
           ex->arena + ex->t_off[t] + from * ex->sbytes, n * ex->sbytes);
    return PROF_OK;
}

/* int8: each block dequantised with its input's scale into y32. */
static int dequantize_block(prof_exec *ex, const struct exec_op *op,
                            size_t t, size_t from, size_t to, size_t n)
{
    (void)op;
    return exec_kern_status(kern_q8_dequantize_f32(
        (const int8_t *)(ex->arena + ex->t_off[t]) + from, n, ex->t_scale[t],
        ex->y32 + to));
}

/* Static int8: each input requantised into the output's params: its
 * bytes themselves when the params are equal (calibration gives a concat
 * and its inputs their own ranges; a QDQ model often one), else
 * dequantised and quantised with the output's params (round half to
 * even) through a table of the 256 values an int8 holds (ONNX Runtime's
 * QLinearConcat builds the same table), made once per input and run, then
 * applied to every block of that input (concat_blocks' order, input by
 * input). */
static int concat_run_s8s(prof_exec *ex, const struct exec_op *op)
{
    const struct memest_layer *L = op->layer;
    const size_t o_t = op->out_t;
    const size_t out_sample = op->out_n / ex->batch;
    size_t outer = 1;
    for (unsigned d = 0; d < L->concat_axis && d < L->out_shape.rank; d++) {
        outer *= (size_t)L->out_shape.dim[d];
    }
    /* an output position's run of blocks, one of each input */
    const size_t stride = out_sample / outer;
    int8_t *y = (int8_t *)(ex->arena + op->out_off);
    size_t at = 0; /* input j's block within the run */
    for (size_t j = 0; j < L->input_count; j++) {
        const size_t t = L->inputs[j];
        const int8_t *x = (const int8_t *)(ex->arena + ex->t_off[t]);
        const size_t sample = ex->t_n[t] / ex->batch, n = sample / outer;
        const bool same = ex->t_scale[t] == ex->t_scale[o_t] &&
                          ex->t_zero[t] == ex->t_zero[o_t];
        int8_t all[256], table[256];
        if (!same) {
            float real[256];
            for (int v = 0; v < 256; v++) {
                all[v] = (int8_t)(v - 128);
            }
            exec_s8_dequantize(all, 256, ex->t_scale[t], ex->t_zero[t], real);
            const int st = exec_s8_quantize(real, 256, ex->t_scale[o_t],
                                            ex->t_zero[o_t], table);
            if (st != PROF_OK) {
                return st;
            }
        }
        for (size_t b = 0; b < ex->batch; b++) {
            for (size_t o = 0; o < outer; o++) {
                const int8_t *src = x + b * sample + o * n;
                int8_t *dst = y + b * out_sample + o * stride + at;
                if (same) {
                    memcpy(dst, src, n);
                    continue;
                }
                for (size_t i = 0; i < n; i++) {
                    dst[i] = table[(int)src[i] + 128];
                }
            }
        }
        at += n;
    }
    return PROF_OK;
}

/* fp32 at a batch of several splits by samples (exec_split): each thread
 * copies the samples its convolutions wrote and will read. */
struct concat_job {
    prof_exec *ex;
    const struct exec_op *op;
};

static int concat_part(void *arg, size_t part, size_t lo, size_t hi)
{
    (void)part;
    const struct concat_job *j = arg;
    return concat_samples(j->ex, j->op, copy_block, lo, hi);
}

static bool concat_serial(const prof_exec *ex, const struct exec_op *op)
{
    (void)op;
    return ex->precision != MEMEST_FP32 || ex->batch < 2;
}

static int concat_run_f32(prof_exec *ex, const struct exec_op *op,
                          const struct exec_f32_args *a)
{
    (void)a;
    struct concat_job j = {ex, op};
    return exec_split(ex->batch, exec_op_threads(ex, op), concat_part, &j);
}

/* Nothing to compute; the last layer's float result is what
 * prof_exec_run returns. */
static int concat_run_16(prof_exec *ex, const struct exec_op *op)
{
    const int st = concat_blocks(ex, op, copy_block);
    if (st != PROF_OK || op->index + 1 != ex->nlayers) {
        return st;
    }
    return exec_widen(ex, ex->y32,
                      (const uint16_t *)(ex->arena + op->out_off),
                      op->out_n);
}

static int concat_run_s8(prof_exec *ex, const struct exec_op *op)
{
    const int st = concat_blocks(ex, op, dequantize_block);
    return st == PROF_OK ? exec_quantize_out(ex, op) : st;
}

/* The trainer's concat on float buffers: each input's blocks in the order
 * concat_blocks walks them. to_whole: parts[j] into whole (the forward);
 * otherwise whole's blocks into parts[j] (the backward: the output's
 * gradient split along the axis), written, or added when add[j]. A NULL
 * part is skipped (its gradient is not wanted). */
static int concat_walk(const prof_exec *ex, const struct exec_op *op,
                       float *const *parts, float *whole, bool to_whole,
                       const bool *add)
{
    const struct memest_layer *L = op->layer;
    const size_t out_sample = op->out_n / ex->batch;
    size_t outer = 1;
    for (unsigned d = 0; d < L->concat_axis && d < L->out_shape.rank; d++) {
        outer *= (size_t)L->out_shape.dim[d];
    }
    for (size_t b = 0; b < ex->batch; b++) {
        size_t at = b * out_sample;
        for (size_t o = 0; o < outer; o++) {
            for (size_t j = 0; j < L->input_count; j++) {
                const size_t sample = ex->t_n[L->inputs[j]] / ex->batch;
                const size_t n = sample / outer;
                float *part = parts[j] ? parts[j] + b * sample + o * n : NULL;
                if (part && to_whole) {
                    memcpy(whole + at, part, n * sizeof(float));
                } else if (part && add && add[j]) {
                    for (size_t e = 0; e < n; e++) {
                        part[e] += whole[at + e];
                    }
                } else if (part) {
                    memcpy(part, whole + at, n * sizeof(float));
                }
                at += n;
            }
        }
    }
    return PROF_OK;
}

int exec_concat_train_f32(const prof_exec *ex, const struct exec_op *op,
                          const float *const *xs, float *y)
{
    /* the forward only reads the parts: the cast drops the const that
     * the backward's direction needs off */
    return concat_walk(ex, op, (float *const *)(uintptr_t)xs, y, true, NULL);
}

/* The output's gradient split by the concat axis into the inputs'. A
 * concat applies no activation (the format gives it no act=). */
static int concat_backward(prof_exec *ex, const struct exec_op *op,
                           const struct exec_grad_args *a)
{
    if (!a->gxs) {
        return PROF_OK;
    }
    return concat_walk(ex, op, a->gxs, a->g, false, a->gx_add);
}

/* Inputs joined along the channels: a sample of NCHW8c is its blocks of 8
 * channels one after the other, so when every input has whole blocks
 * (exec_plan_layouts holds any other tensor NCHW) the blocked output is
 * the inputs' samples one after the other, the very copies concat_blocks
 * makes on NCHW (SqueezeNet's fire modules stay blocked through their
 * concat). */
static unsigned concat_caps(const struct exec_op *op)
{
    return op->layer->concat_axis == 0 && exec_blk_possible(op) &&
                   op->c_out % KERN_CBLOCK == 0
               ? EXEC_BLK_IN | EXEC_BLK_OUT | EXEC_BLK_SAME
               : 0u;
}

const struct exec_op_vtable exec_op_concat = {
    .threaded = true,
    .serial = concat_serial,
    .layout_caps = concat_caps,
    .backward_f32 = concat_backward,
    .run_f32 = concat_run_f32,
    .run_16 = concat_run_16,
    .run_s8 = concat_run_s8,
    .run_s8s = concat_run_s8s,
};
