/*
 * clstoken: a vision or keyword transformer's class token, a learned
 * D-vector put before the T steps of a T x D sequence: the output is
 * (T + 1) x D, the parameter its row 0 (torch.cat((cls_token.expand(N,
 * -1, -1), x), dim=1)). Parameter ".weight" [1, 1, D], PyTorch's
 * cls_token; no bias; 0 MACs.
 */
#include "op.h"

/* MEMEST_OK when input 0 is a T x D sequence, else a message naming the
 * kind (posembed.c has the same rule). */
int op_need_seq(const struct op_infer *x)
{
    const struct memest_shape *in = x->in[0];
    if (in->rank != 2) {
        char text[MEMEST_SHAPE_TEXT_MAX];
        memest_shape_format(in, text, sizeof text);
        return op_fail(x, MEMEST_E_SHAPE, x->sp->col_kind,
                       "%s needs a sequence T x D (e.g. 'input 49x10') but "
                       "its input is %s",
                       x->sp->kind_text, text);
    }
    return MEMEST_OK;
}

static int infer(const struct op_infer *x, struct memest_layer *L)
{
    const struct memest_shape *in = x->in[0];
    int st = op_need_seq(x);
    if (st != MEMEST_OK) {
        return st;
    }
    L->units = in->dim[1];
    L->weight_count = in->dim[1];
    L->out_shape = *in;
    /* T + 1 cannot wrap: T x D is at most MEMEST_MAX_ELEMENTS */
    L->out_shape.dim[0] = in->dim[0] + 1;
    return MEMEST_OK;
}

static unsigned weight_shape(const struct memest_layer *L,
                             uint64_t dim[OP_WEIGHT_MAX_RANK])
{
    dim[0] = 1;
    dim[1] = 1;
    dim[2] = L->units;
    return 3;
}

const struct memest_op_def op_clstoken = {
    .word = "clstoken",
    .prefix = "cls",
    .keys = OP_KEY_NAME | OP_KEY_IN,
    .example = "clstoken",
    .params = OP_PARAMS_WEIGHT_BIAS,
    .infer = infer,
    .weight_shape = weight_shape,
};
