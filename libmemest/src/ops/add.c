/*
 * add: the element-wise sum of two or more tensors of one shape (a
 * residual connection), then an optional activation (act=); two inputs
 * may also broadcast as numpy's, and one input with scalar= adds a
 * constant (ops/binary.c, shared with sub, mul and div). No parameters;
 * the additions are not counted as MACs.
 */
#include "op.h"

static int infer(const struct op_infer *x, struct memest_layer *L)
{
    const struct memest_shape *in = x->in[0];

    if (x->nin <= 2) {
        return op_binary_infer(x, L);
    }
    for (size_t i = 1; i < x->nin; i++) {
        const struct memest_shape *o = x->in[i];
        int same = o->rank == in->rank;
        for (unsigned d = 0; same && d < in->rank; d++) {
            same = o->dim[d] == in->dim[d];
        }
        if (!same) {
            char a[MEMEST_SHAPE_TEXT_MAX];
            char b[MEMEST_SHAPE_TEXT_MAX];
            memest_shape_format(in, a, sizeof a);
            memest_shape_format(o, b, sizeof b);
            return op_fail(x, MEMEST_E_SHAPE, x->sp->in[i].col,
                           "add: input '%s' is %s but '%s' is %s; an add "
                           "of three or more inputs needs inputs of one "
                           "shape (two may broadcast)",
                           x->in_name[i], b, x->in_name[0], a);
        }
    }
    L->out_shape = *in;
    L->in_shape_b = *x->in[1];
    return MEMEST_OK;
}

static void write_line(struct op_out *o, const struct op_write *w)
{
    op_put(o, "add act=%s", memest_act_name(w->L->act));
    op_put_act_params(o, w->L->act, w->L);
    op_binary_put_scalar(o, w->L);
}

const struct memest_op_def op_add = {
    .word = "add",
    .prefix = "add",
    .keys = OP_KEY_NAME | OP_KEY_IN | OP_KEY_ACT | OP_KEY_ALPHA |
            OP_KEY_BETA | OP_KEY_SCALAR | OP_KEY_SCALAR_LEFT,
    .example = "add in=conv2,pool1",
    .multi_input = true,
    .params = OP_PARAMS_NONE,
    .infer = infer,
    .write = write_line,
};
