/*
 * reshape: the same elements of each sample in the same order, read with
 * another shape (shape=N, AxB or CxHxW, per sample), as PyTorch's
 * x.view(n, ...) / reshape and ONNX's Reshape, Squeeze and Unsqueeze
 * when the batch stays first. A view: the output is the input's buffer.
 * No parameters, no MACs.
 */
#include "op.h"

static int infer(const struct op_infer *x, struct memest_layer *L)
{
    const struct op_spec *sp = x->sp;
    if (shape_elements(&sp->shape) != shape_elements(x->in[0])) {
        char a[MEMEST_SHAPE_TEXT_MAX];
        char b[MEMEST_SHAPE_TEXT_MAX];
        memest_shape_format(&sp->shape, a, sizeof a);
        memest_shape_format(x->in[0], b, sizeof b);
        return op_fail(x, MEMEST_E_SHAPE, sp->col_shape,
                       "reshape: shape=%s has %llu elements but '%s' (%s) "
                       "has %llu",
                       a, (unsigned long long)shape_elements(&sp->shape),
                       x->in_name[0], b,
                       (unsigned long long)shape_elements(x->in[0]));
    }
    L->out_shape = sp->shape;
    return MEMEST_OK;
}

static void write_line(struct op_out *o, const struct op_write *w)
{
    char s[MEMEST_SHAPE_TEXT_MAX];
    memest_shape_format(&w->L->out_shape, s, sizeof s);
    op_put(o, "reshape shape=%s", s);
}

const struct memest_op_def op_reshape = {
    .word = "reshape",
    .prefix = "reshape",
    .keys = OP_KEY_NAME | OP_KEY_IN | OP_KEY_SHAPE,
    .required = OP_KEY_SHAPE,
    .example = "reshape shape=2x8x4",
    .is_view = true,
    .params = OP_PARAMS_NONE,
    .infer = infer,
    .write = write_line,
};
