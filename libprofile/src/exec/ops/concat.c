/* A concat along one axis of a sample of two or more inputs, read from
 * the arena: fp32 and 16-bit join the stored bits, int8 dequantises each
 * input with its own scale and quantises the whole with one. */
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

static int concat_blocks(prof_exec *ex, const struct exec_op *op,
                         concat_block_fn block)
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
    for (size_t b = 0; st == PROF_OK && b < ex->batch; b++) {
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

static int concat_run_f32(prof_exec *ex, const struct exec_op *op,
                          const struct exec_f32_args *a)
{
    (void)a;
    return concat_blocks(ex, op, copy_block);
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

const struct exec_op_vtable exec_op_concat = {
    .run_f32 = concat_run_f32,
    .run_16 = concat_run_16,
    .run_s8 = concat_run_s8,
};
