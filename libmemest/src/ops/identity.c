/*
 * identity: the output is the input, as PyTorch's nn.Identity (ONNX's
 * Identity); a view with no storage of its own.
 */
#include "op.h"

static int infer(const struct op_infer *x, struct memest_layer *L)
{
    L->out_shape = *x->in[0];
    return MEMEST_OK;
}

const struct memest_op_def op_identity = {
    .word = "identity",
    .prefix = "identity",
    .keys = OP_KEY_NAME | OP_KEY_IN,
    .example = "identity",
    .is_view = true,
    .params = OP_PARAMS_NONE,
    .infer = infer,
};
