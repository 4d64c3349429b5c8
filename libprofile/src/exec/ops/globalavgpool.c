/* Global average pooling: C x H x W to C x 1 x 1, the mean of each plane,
 * from NCHW or NCHW8c (its output is NCHW either way, see pool.c). */
#include "edgefit/kernels.h"
#include "edgefit/profile.h"
#include "exec/ops.h"

static unsigned gap_caps(const struct exec_op *op)
{
    return op->c_in % KERN_CBLOCK == 0 ? EXEC_BLK_IN : 0u;
}

static int gap_run_f32(prof_exec *ex, const struct exec_op *op,
                       const struct exec_f32_args *a)
{
    const size_t hw = op->h_in * op->w_in;
    int kst;
    if (exec_t_blocked(ex, op->layer->inputs[0])) {
        kst = kern_nn_global_avgpool_nchw8c_f32(a->x, ex->batch, op->c_in,
                                                hw, a->y);
    } else {
        kst = kern_nn_global_avgpool_f32(a->x, ex->batch * op->c_in, hw,
                                         a->y);
    }
    return exec_then_act(ex, op, a, exec_kern_status(kst));
}

/* Static int8: libkernels' integer average of each plane (q - x_zero
 * summed, requantised in integer), a relu, relu6 or clip as the clamp;
 * another activation: the float generic path. */
static int gap_run_s8s(prof_exec *ex, const struct exec_op *op)
{
    const struct memest_layer *L = op->layer;
    const size_t tx = L->inputs[0], ty = op->out_t;
    int32_t qmin, qmax;
    if (!exec_s8_clamp(L->act, L->act_alpha, L->act_beta, ex->t_scale[ty],
                       ex->t_zero[ty], &qmin, &qmax)) {
        return exec_run_s8_generic(ex, op);
    }
    return exec_kern_status(kern_q8_global_avgpool_s8(
        ex->batch, op->c_in, op->h_in * op->w_in,
        (const int8_t *)(ex->arena + op->in_off), ex->t_zero[tx],
        ex->t_scale[tx], ex->t_zero[ty], ex->t_scale[ty], qmin, qmax,
        (int8_t *)(ex->arena + op->out_off)));
}

/* Each plane's mean: every position of plane (b, c) receives g[b, c] / hw
 * (after the fused activation, if any). The trainer's tensors are NCHW. */
static int gap_backward(prof_exec *ex, const struct exec_op *op,
                        const struct exec_grad_args *a)
{
    const int st = exec_fused_act_backward(op, a);
    if (st != PROF_OK || !a->gx) {
        return st;
    }
    const size_t hw = op->h_in * op->w_in, planes = ex->batch * op->c_in;
    const float inv = (float)(1.0 / (double)hw);
    for (size_t p = 0; p < planes; p++) {
        const float v = a->g[p] * inv;
        float *d = a->gx + p * hw;
        for (size_t k = 0; k < hw; k++) {
            d[k] = v;
        }
    }
    return PROF_OK;
}

static unsigned gap_reads(const struct exec_op *op, bool loss_softmax)
{
    return !loss_softmax && op->layer->act != MEMEST_ACT_NONE
               ? EXEC_READS_Y
               : 0u;
}

const struct exec_op_vtable exec_op_globalavgpool = {
    .backward_f32 = gap_backward,
    .backward_reads = gap_reads,
    .scratch = exec_scratch_float_input,
    .layout_caps = gap_caps,
    .run_f32 = gap_run_f32,
    .run_s8s = gap_run_s8s,
};
