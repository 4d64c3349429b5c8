/* ShuffleNet's channel shuffle (libmemest's "shuffle g="): each sample
 * [g][C/g][H*W] transposed to [C/g][g][H*W], whole planes moved by
 * libkernels' transpose. 16-bit and int8 go through the generic widen /
 * dequantise paths (a permutation changes no value, so int8 keeps the
 * input's values exactly up to the re-quantisation). */
#include "edgefit/kernels.h"
#include "edgefit/profile.h"
#include "exec/ops.h"

static int shuffle_plan(prof_exec *ex, struct exec_op *op,
                        struct prof_diag *diag)
{
    (void)ex;
    const size_t g = (size_t)op->layer->groups;
    if (g == 0 || op->c_in % g != 0 || op->in_n != op->out_n) {
        exec_diag_set(diag, "%s: shuffle needs the %zu channels in g=%zu "
                      "equal groups and the shape kept",
                      op->layer->name, op->c_in, g);
        return PROF_E_RANGE;
    }
    op->groups = g;
    return PROF_OK;
}

/* inverse 0: forward, [g][C/g] to [C/g][g]; 1: back (the backward). */
static int shuffle_move(const prof_exec *ex, const struct exec_op *op,
                        const float *x, float *y, int inverse)
{
    const size_t g = op->groups, cg = op->c_in / g;
    const size_t shape[4] = {ex->batch, inverse ? cg : g, inverse ? g : cg,
                             op->h_in * op->w_in};
    static const size_t perm[4] = {0, 2, 1, 3};
    return exec_kern_status(kern_transpose_f32(shape, 4, perm, x, y));
}

static int shuffle_run_f32(prof_exec *ex, const struct exec_op *op,
                           const struct exec_f32_args *a)
{
    return exec_then_act(ex, op, a, shuffle_move(ex, op, a->x, a->y, 0));
}

/* The gradient moves back by the inverse permutation. */
static int shuffle_backward(prof_exec *ex, const struct exec_op *op,
                            const struct exec_grad_args *a)
{
    if (!a->gx) {
        return PROF_OK;
    }
    return shuffle_move(ex, op, a->g, a->gx, 1);
}

const struct exec_op_vtable exec_op_shuffle = {
    .plan = shuffle_plan,
    .scratch = exec_scratch_float_input,
    .run_f32 = shuffle_run_f32,
    .backward_f32 = shuffle_backward,
};
