/*
 * shuffle: ShuffleNet's channel shuffle with g groups, the exported
 * x.view(N, g, C/g, H, W).transpose(1, 2).reshape(N, C, H, W): output
 * channel j * g + i is input channel i * (C/g) + j. The same shape out as
 * in, no parameters, no MACs (data movement). Its output has storage of
 * its own: the channels move, so it cannot be a view.
 */
#include "op.h"

static int infer(const struct op_infer *x, struct memest_layer *L)
{
    const struct memest_shape *in = x->in[0];
    int st = op_need_chw(x);

    if (st != MEMEST_OK) {
        return st;
    }
    if (in->dim[0] % x->sp->g != 0) {
        return op_fail(x, MEMEST_E_SHAPE, x->sp->col_g,
                       "shuffle: %llu channels do not split into g=%llu "
                       "equal groups",
                       (unsigned long long)in->dim[0],
                       (unsigned long long)x->sp->g);
    }
    L->groups = x->sp->g;
    L->out_shape = *in;
    return MEMEST_OK;
}

static void write_line(struct op_out *o, const struct op_write *w)
{
    op_put(o, "shuffle g=%llu", (unsigned long long)w->L->groups);
}

const struct memest_op_def op_shuffle = {
    .word = "shuffle",
    .prefix = "shuffle",
    .keys = OP_KEY_NAME | OP_KEY_IN | OP_KEY_G,
    .required = OP_KEY_G,
    .example = "shuffle g=2",
    .params = OP_PARAMS_NONE,
    .infer = infer,
    .write = write_line,
};
