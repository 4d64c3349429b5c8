/*
 * concat: two or more tensors joined along one axis of a sample, the other
 * dimensions equal, as torch.cat(dim=1|2|3): axis=c (the default: the
 * channels of CxHxW, the features of a vector, the first dimension of an
 * AxB), axis=h (the rows, or B of an AxB) or axis=w (the columns). No
 * parameters, no MACs.
 */
#include "op.h"

static const char axis_word[3] = {'c', 'h', 'w'};

static int infer(const struct op_infer *x, struct memest_layer *L)
{
    const struct memest_shape *in = x->in[0];
    const unsigned axis = x->sp->axis;

    if (axis >= in->rank) {
        char a[MEMEST_SHAPE_TEXT_MAX];
        memest_shape_format(in, a, sizeof a);
        return op_fail(x, MEMEST_E_SHAPE, x->sp->col_axis,
                       "concat: axis=%c needs a tensor of %u dimensions per "
                       "sample, but '%s' is %s",
                       axis_word[axis < 3 ? axis : 0], axis + 1,
                       x->in_name[0], a);
    }
    L->concat_axis = axis;
    L->out_shape = *in;
    for (size_t i = 1; i < x->nin; i++) {
        const struct memest_shape *o = x->in[i];
        int ok = o->rank == in->rank;
        for (unsigned d = 0; ok && d < in->rank; d++) {
            ok = d == axis || o->dim[d] == in->dim[d];
        }
        if (!ok) {
            char a[MEMEST_SHAPE_TEXT_MAX];
            char b[MEMEST_SHAPE_TEXT_MAX];
            memest_shape_format(in, a, sizeof a);
            memest_shape_format(o, b, sizeof b);
            return op_fail(x, MEMEST_E_SHAPE, x->sp->in[i].col,
                           "concat: input '%s' is %s but '%s' is %s; "
                           "concat axis=%c joins dimension %u and needs the "
                           "others equal",
                           x->in_name[i], b, x->in_name[0], a,
                           axis_word[axis], axis + 1);
        }
        if (add_ovf(L->out_shape.dim[axis], o->dim[axis],
                    &L->out_shape.dim[axis])) {
            return op_overflow(x, "the joined dimension");
        }
    }
    return MEMEST_OK;
}

/* axis=c is the default and is left out, so that the text of a channel
 * concat reads as it always did. */
static void write_line(struct op_out *o, const struct op_write *w)
{
    const struct memest_layer *L = w->L;
    if (L->concat_axis == 0) {
        op_put(o, "concat");
    } else {
        op_put(o, "concat axis=%c",
               axis_word[L->concat_axis < 3 ? L->concat_axis : 0]);
    }
}

const struct memest_op_def op_concat = {
    .word = "concat",
    .prefix = "concat",
    .keys = OP_KEY_NAME | OP_KEY_IN | OP_KEY_AXIS,
    .example = "concat in=conv2,pool1",
    .multi_input = true,
    .params = OP_PARAMS_NONE,
    .infer = infer,
    .write = write_line,
};
