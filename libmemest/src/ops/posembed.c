/*
 * posembed: a learned position embedding added to a T x D sequence,
 * y = x + P (x + self.pos_embedding in PyTorch, P broadcast over the
 * batch). Parameter ".weight" [1, T, D]; no bias; 0 MACs (an addition,
 * as add's).
 */
#include "op.h"

static int infer(const struct op_infer *x, struct memest_layer *L)
{
    const struct memest_shape *in = x->in[0];
    int st = op_need_seq(x);
    if (st != MEMEST_OK) {
        return st;
    }
    L->units = in->dim[1];
    /* T x D fits: it is the input's checked element count */
    L->weight_count = in->dim[0] * in->dim[1];
    L->out_shape = *in;
    return MEMEST_OK;
}

static unsigned weight_shape(const struct memest_layer *L,
                             uint64_t dim[OP_WEIGHT_MAX_RANK])
{
    dim[0] = 1;
    dim[1] = L->in_shape.dim[0];
    dim[2] = L->in_shape.dim[1];
    return 3;
}

const struct memest_op_def op_posembed = {
    .word = "posembed",
    .prefix = "pos",
    .keys = OP_KEY_NAME | OP_KEY_IN,
    .example = "posembed",
    .params = OP_PARAMS_WEIGHT_BIAS,
    .infer = infer,
    .weight_shape = weight_shape,
};
