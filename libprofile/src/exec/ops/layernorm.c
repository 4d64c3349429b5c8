/* Layer normalisation (nn.LayerNorm over the last D elements of each
 * position, libmemest's ops/layernorm.c): kern_layernorm_f32 over the
 * batch's rows of D, gamma in op->w and beta in op->b (none with
 * bias=no). 16-bit and int8 run the generic paths (the row in float); the
 * backward is kern_layernorm_backward_f32, which recomputes the row's
 * statistics from x. */
#include <stddef.h>

#include "edgefit/kernels.h"
#include "edgefit/profile.h"
#include "exec/ops.h"

/* Rows of D: D is units (the product of the normalised axes), the rows
 * every other element of the batch. */
static size_t ln_rows(const struct exec_op *op)
{
    return op->out_n / (size_t)op->layer->units;
}

static int ln_scratch(const prof_exec *ex, struct exec_op *op,
                      struct exec_scratch *n)
{
    if (ex->precision == MEMEST_FP16 || ex->precision == MEMEST_BF16) {
        n->w32 = op->wn; /* the generic path widens gamma and beta */
        n->b32 = op->bn;
    }
    return exec_scratch_float_input(ex, op, n);
}

/* PyTorch's fresh nn.LayerNorm: gamma 1, beta 0, no draws (the other
 * layers' values do not depend on where the norms sit). */
static void ln_init(struct exec_op *op, uint64_t *rng)
{
    (void)rng;
    for (size_t i = 0; i < op->wn; i++) {
        op->w[i] = 1.0f;
    }
    for (size_t i = 0; i < op->bn; i++) {
        op->b[i] = 0.0f;
    }
}

static int ln_run_f32(prof_exec *ex, const struct exec_op *op,
                      const struct exec_f32_args *a)
{
    const struct memest_layer *L = op->layer;
    const int st = exec_kern_status(kern_layernorm_f32(
        a->x, ln_rows(op), (size_t)L->units, a->w, op->bn ? a->b : NULL,
        (float)L->bn_epsilon, a->y));
    return exec_then_act(ex, op, a, st);
}

static int ln_backward(prof_exec *ex, const struct exec_op *op,
                       const struct exec_grad_args *a)
{
    (void)ex;
    const struct memest_layer *L = op->layer;
    return exec_kern_status(kern_layernorm_backward_f32(
        a->x, a->g, ln_rows(op), (size_t)L->units, op->w,
        (float)L->bn_epsilon, a->gx, a->gw, op->bn ? a->gb : NULL));
}

static unsigned ln_reads(const struct exec_op *op, bool loss_softmax)
{
    (void)op;
    (void)loss_softmax;
    return EXEC_READS_X;
}

const struct exec_op_vtable exec_op_layernorm = {
    .scratch = ln_scratch,
    .init_params = ln_init,
    .run_f32 = ln_run_f32,
    .backward_f32 = ln_backward,
    .backward_reads = ln_reads,
};
