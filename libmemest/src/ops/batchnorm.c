/*
 * batchnorm: inference batch normalization over the first dimension
 * (channels), y = (x - mean) / sqrt(var + eps) * gamma + beta, then an
 * optional activation. A batch norm that reads only a dense or conv2d
 * layer folds into it (parse.c's finalize()); one that does not is this
 * layer, a per-channel scale and shift: 2*C parameters, as PyTorch counts
 * gamma and beta (the running statistics are buffers, not parameters).
 */
#include "op.h"

static int infer(const struct op_infer *x, struct memest_layer *L)
{
    /* one scale and one shift per channel (dim[0]) */
    L->weight_count = x->in[0]->dim[0];
    L->bias_count = x->in[0]->dim[0];
    L->bn_epsilon = x->sp->eps;
    L->out_shape = *x->in[0];
    return MEMEST_OK;
}

/* nn.BatchNorm2d's [C] (gamma; the layer keeps its folded scale). */
static unsigned weight_shape(const struct memest_layer *L,
                             uint64_t dim[OP_WEIGHT_MAX_RANK])
{
    dim[0] = L->weight_count;
    return 1;
}

/* %.17g: the epsilon survives the round trip exactly. */
static void write_line(struct op_out *o, const struct op_write *w)
{
    op_put(o, "batchnorm act=%s eps=%.17g", memest_act_name(w->act),
           w->L->bn_epsilon);
    op_put_act_params(o, w->act, w->L);
}

const struct memest_op_def op_batchnorm = {
    .word = "batchnorm",
    .prefix = "bn",
    .keys = OP_KEY_NAME | OP_KEY_IN | OP_KEY_ACT | OP_KEY_EPS |
            OP_KEY_ALPHA | OP_KEY_BETA,
    .example = "batchnorm eps=1e-5",
    .params = OP_PARAMS_BATCHNORM,
    .infer = infer,
    .weight_shape = weight_shape,
    .write = write_line,
};
