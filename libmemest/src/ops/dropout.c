/*
 * dropout: the output is the input at inference, as PyTorch's nn.Dropout
 * in eval mode; a view with no storage of its own. (The trainer, which
 * could drop, runs it as the identity too: the estimates are of inference
 * and of a trainer without dropout.)
 */
#include "op.h"

static int infer(const struct op_infer *x, struct memest_layer *L)
{
    L->out_shape = *x->in[0];
    return MEMEST_OK;
}

const struct memest_op_def op_dropout = {
    .word = "dropout",
    .prefix = "dropout",
    .keys = OP_KEY_NAME | OP_KEY_IN,
    .example = "dropout",
    .is_view = true,
    .params = OP_PARAMS_NONE,
    .infer = infer,
};
