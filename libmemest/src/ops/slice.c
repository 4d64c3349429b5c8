/*
 * slice: the elements [begin, end) along one axis of each sample, step 1,
 * as x[:, begin:end] (axis c: the channels of CxHxW or the features of a
 * vector), x[:, :, begin:end] (h) or x[:, :, :, begin:end] (w); ONNX's
 * Slice and Split, PyTorch's chunk and narrow. No parameters, no MACs.
 * Its output is copied into storage of its own: even a range of channels,
 * contiguous within a sample, is not contiguous over a batch.
 */
#include "op.h"

static const char axis_word[3] = {'c', 'h', 'w'};

static int infer(const struct op_infer *x, struct memest_layer *L)
{
    const struct op_spec *sp = x->sp;
    const struct memest_shape *in = x->in[0];
    char text[MEMEST_SHAPE_TEXT_MAX];
    uint64_t end = sp->end;

    memest_shape_format(in, text, sizeof text);
    if (sp->axis >= in->rank) {
        return op_fail(x, MEMEST_E_SHAPE, sp->col_axis,
                       "slice: axis=%c needs a CxHxW input, but '%s' is %s",
                       axis_word[sp->axis < 3 ? sp->axis : 0],
                       x->in_name[0], text);
    }
    if (end > in->dim[sp->axis]) {
        return op_fail(x, MEMEST_E_SHAPE, sp->col_end,
                       "slice: end=%llu is past the %llu elements of axis "
                       "%c of '%s' (%s)",
                       (unsigned long long)end,
                       (unsigned long long)in->dim[sp->axis],
                       axis_word[sp->axis], x->in_name[0], text);
    }
    if (sp->begin >= end) {
        return op_fail(x, MEMEST_E_SHAPE, sp->col_begin,
                       "slice: begin=%llu must be below end=%llu (an empty "
                       "slice has no layer)",
                       (unsigned long long)sp->begin,
                       (unsigned long long)end);
    }
    L->slice_axis = sp->axis;
    L->slice_begin = sp->begin;
    L->slice_end = end;
    L->out_shape = *in;
    L->out_shape.dim[sp->axis] = end - sp->begin;
    return MEMEST_OK;
}

static void write_line(struct op_out *o, const struct op_write *w)
{
    const struct memest_layer *L = w->L;
    op_put(o, "slice axis=%c begin=%llu end=%llu",
           axis_word[L->slice_axis < 3 ? L->slice_axis : 0],
           (unsigned long long)L->slice_begin,
           (unsigned long long)L->slice_end);
}

const struct memest_op_def op_slice = {
    .word = "slice",
    .prefix = "slice",
    .keys = OP_KEY_NAME | OP_KEY_IN | OP_KEY_AXIS | OP_KEY_BEGIN |
            OP_KEY_END,
    .required = OP_KEY_AXIS | OP_KEY_END,
    .example = "slice axis=c begin=0 end=16",
    .params = OP_PARAMS_NONE,
    .infer = infer,
    .write = write_line,
};
