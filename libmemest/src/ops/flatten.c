/*
 * flatten: CxHxW (or any shape) to a feature vector of its elements, as
 * PyTorch's nn.Flatten; a view, the same buffer read as a vector.
 */
#include "op.h"

static int infer(const struct op_infer *x, struct memest_layer *L)
{
    L->out_shape.rank = 1;
    L->out_shape.dim[0] = shape_elements(x->in[0]);
    return MEMEST_OK;
}

const struct memest_op_def op_flatten = {
    .word = "flatten",
    .prefix = "flatten",
    .keys = OP_KEY_NAME | OP_KEY_IN,
    .example = "flatten",
    .is_view = true,
    .params = OP_PARAMS_NONE,
    .infer = infer,
};
