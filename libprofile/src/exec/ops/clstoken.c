/* The class token (libmemest's ops/clstoken.c): each sample's T x D rows
 * copied one row down, the learned D-vector (op->w) in row 0. Copies
 * only, so 16-bit and int8 run the generic paths (the token is rounded
 * to the output's storage like every other element). Backward: the
 * input's gradient is the output's rows 1..T, the token's the sum of row
 * 0 over the batch. */
#include <string.h>

#include "edgefit/kernels.h"
#include "edgefit/profile.h"
#include "exec/ops.h"

static int cls_scratch(const prof_exec *ex, struct exec_op *op,
                       struct exec_scratch *n)
{
    if (ex->precision == MEMEST_FP16 || ex->precision == MEMEST_BF16) {
        n->w32 = op->wn;
    }
    return exec_scratch_float_input(ex, op, n);
}

/* timm's and the ViT papers' cls_token starts at zero (nn.Parameter(
 * torch.zeros(1, 1, D))): no draws. */
static void cls_init(struct exec_op *op, uint64_t *rng)
{
    (void)rng;
    memset(op->w, 0, op->wn * sizeof *op->w);
}

static int cls_run_f32(prof_exec *ex, const struct exec_op *op,
                       const struct exec_f32_args *a)
{
    const size_t D = op->wn, in = op->in_n / ex->batch;
    for (size_t b = 0; b < ex->batch; b++) {
        float *y = a->y + b * (in + D);
        memcpy(y, a->w, D * sizeof *y);
        memcpy(y + D, a->x + b * in, in * sizeof *y);
    }
    return exec_then_act(ex, op, a, PROF_OK);
}

static int cls_backward(prof_exec *ex, const struct exec_op *op,
                        const struct exec_grad_args *a)
{
    const size_t D = op->wn, in = op->in_n / ex->batch;
    memset(a->gw, 0, D * sizeof *a->gw);
    for (size_t b = 0; b < ex->batch; b++) {
        const float *g = a->g + b * (in + D);
        for (size_t d = 0; d < D; d++) {
            a->gw[d] += g[d];
        }
        if (a->gx) {
            memcpy(a->gx + b * in, g + D, in * sizeof *a->gx);
        }
    }
    return PROF_OK;
}

const struct exec_op_vtable exec_op_clstoken = {
    .scratch = cls_scratch,
    .init_params = cls_init,
    .run_f32 = cls_run_f32,
    .backward_f32 = cls_backward,
};
