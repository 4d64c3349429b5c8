/* The position embedding (libmemest's ops/posembed.c): y = x + P for each
 * sample, P the learned T x D parameter (op->w). 16-bit and int8 run the
 * generic paths. Backward: the input's gradient is the output's, P's the
 * sum over the batch. */
#include <string.h>

#include "edgefit/kernels.h"
#include "edgefit/profile.h"
#include "exec/ops.h"

static int pos_scratch(const prof_exec *ex, struct exec_op *op,
                       struct exec_scratch *n)
{
    if (ex->precision == MEMEST_FP16 || ex->precision == MEMEST_BF16) {
        n->w32 = op->wn;
    }
    return exec_scratch_float_input(ex, op, n);
}

/* A small start, as ViT's trunc_normal_(std=0.02): uniform in [-a, a)
 * with a = 0.02 sqrt(3) has that standard deviation; exec_init_uniform's
 * Glorot bound sqrt(6 / (fan_in + fan_out)) is that a for fan_in = 6 /
 * a^2 = 5000 and fan_out 0 (the layer has no activation). */
static void pos_init(struct exec_op *op, uint64_t *rng)
{
    exec_init_uniform(op, 6.0 / (3.0 * 0.02 * 0.02), 0.0, rng);
}

static int pos_run_f32(prof_exec *ex, const struct exec_op *op,
                       const struct exec_f32_args *a)
{
    /* P is a bias over each sample's T x D elements */
    if (a->x != a->y) {
        memcpy(a->y, a->x, op->out_n * sizeof *a->y);
    }
    const int kst = kern_nn_bias_add_f32(a->y, ex->batch, op->wn, a->w);
    return exec_then_act(ex, op, a, exec_kern_status(kst));
}

static int pos_backward(prof_exec *ex, const struct exec_op *op,
                        const struct exec_grad_args *a)
{
    const size_t n = op->wn;
    memset(a->gw, 0, n * sizeof *a->gw);
    for (size_t b = 0; b < ex->batch; b++) {
        const float *g = a->g + b * n;
        for (size_t i = 0; i < n; i++) {
            a->gw[i] += g[i];
        }
    }
    if (a->gx && a->gx != a->g) {
        memcpy(a->gx, a->g, op->in_n * sizeof *a->gx);
    }
    return PROF_OK;
}

const struct exec_op_vtable exec_op_posembed = {
    .scratch = pos_scratch,
    .init_params = pos_init,
    .run_f32 = pos_run_f32,
    .backward_f32 = pos_backward,
};
