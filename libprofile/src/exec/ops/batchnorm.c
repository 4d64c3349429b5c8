/* A standalone batch norm, folded to a per-channel scale and shift (its
 * weights and biases): y = x * scale[c] + shift[c], then its activation.
 * fp32 and int8 compute it on the float master (int8 has no packed form
 * of it); 16-bit storage widens its 16-bit copy. */
#include <math.h>

#include "edgefit/kernels.h"
#include "edgefit/profile.h"
#include "exec/ops.h"

static int bn_plan(prof_exec *ex, struct exec_op *op, struct prof_diag *diag)
{
    (void)ex;
    if (op->wn != op->c_out || op->bn != op->c_out) {
        exec_diag_set(diag, "%s: a batchnorm needs one scale and one "
                      "shift per channel (%zu), the model gives %zu and "
                      "%zu", op->layer->name, op->c_out, op->wn, op->bn);
        return PROF_E_RANGE;
    }
    return PROF_OK;
}

static int bn_scratch(const prof_exec *ex, struct exec_op *op,
                      struct exec_scratch *n)
{
    /* its widened parameters, then its input in float */
    if (ex->precision == MEMEST_FP16 || ex->precision == MEMEST_BF16) {
        n->w32 = op->wn;
        n->b32 = op->bn;
    }
    return exec_scratch_float_input(ex, op, n);
}

/* PyTorch's fresh batch norm (weight 1, bias 0, running mean 0, variance
 * 1) folded: no draws, so the other layers' values do not depend on
 * where batch norms sit. */
static void bn_init(struct exec_op *op, uint64_t *rng)
{
    (void)rng;
    const float scale = (float)(1.0 / sqrt(1.0 + op->layer->bn_epsilon));
    for (size_t i = 0; i < op->wn; i++) {
        op->w[i] = scale;
    }
    for (size_t i = 0; i < op->bn; i++) {
        op->b[i] = 0.0f;
    }
}

static int bn_run_f32(prof_exec *ex, const struct exec_op *op,
                      const struct exec_f32_args *a)
{
    const int st = exec_kern_status(kern_nn_channel_affine_f32(
        a->x, ex->batch, op->c_out, op->hw_out, a->w, a->b, a->y));
    return exec_then_act(ex, op, a, st);
}

const struct exec_op_vtable exec_op_batchnorm = {
    .plan = bn_plan,
    .scratch = bn_scratch,
    .init_params = bn_init,
    .run_f32 = bn_run_f32,
};
