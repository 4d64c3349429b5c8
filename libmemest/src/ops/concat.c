/*
 * concat: two or more tensors joined along their first dimension
 * (channels of CxHxW, features of a vector), the other dimensions equal,
 * as torch.cat(dim=1). No parameters, no MACs.
 */
#include "op.h"

static int infer(const struct op_infer *x, struct memest_layer *L)
{
    const struct memest_shape *in = x->in[0];

    L->out_shape = *in;
    for (size_t i = 1; i < x->nin; i++) {
        const struct memest_shape *o = x->in[i];
        int ok = o->rank == in->rank;
        for (unsigned d = 1; ok && d < in->rank; d++) {
            ok = o->dim[d] == in->dim[d];
        }
        if (!ok) {
            char a[MEMEST_SHAPE_TEXT_MAX];
            char b[MEMEST_SHAPE_TEXT_MAX];
            memest_shape_format(in, a, sizeof a);
            memest_shape_format(o, b, sizeof b);
            return op_fail(x, MEMEST_E_SHAPE, x->sp->in[i].col,
                           "concat: input '%s' is %s but '%s' is %s; "
                           "concat joins channels (the first dimension) "
                           "and needs the others equal",
                           x->in_name[i], b, x->in_name[0], a);
        }
        if (add_ovf(L->out_shape.dim[0], o->dim[0], &L->out_shape.dim[0])) {
            return op_overflow(x, "the channel count");
        }
    }
    return MEMEST_OK;
}

const struct memest_op_def op_concat = {
    .word = "concat",
    .prefix = "concat",
    .keys = OP_KEY_NAME | OP_KEY_IN,
    .example = "concat in=conv2,pool1",
    .multi_input = true,
    .params = OP_PARAMS_NONE,
    .infer = infer,
};
