/*
 * globalavgpool: CxHxW to Cx1x1, the mean of each channel's plane, as
 * PyTorch's nn.AdaptiveAvgPool2d(1). No parameters; the sums are not
 * counted as MACs (the convention of the other pools).
 */
#include "op.h"

static int infer(const struct op_infer *x, struct memest_layer *L)
{
    int st = op_need_chw(x);

    if (st != MEMEST_OK) {
        return st;
    }
    L->out_shape.rank = 3;
    L->out_shape.dim[0] = x->in[0]->dim[0];
    L->out_shape.dim[1] = 1;
    L->out_shape.dim[2] = 1;
    return MEMEST_OK;
}

const struct memest_op_def op_globalavgpool = {
    .word = "globalavgpool",
    .prefix = "gap",
    .keys = OP_KEY_NAME | OP_KEY_IN,
    .example = "globalavgpool",
    .params = OP_PARAMS_NONE,
    .infer = infer,
};
