/*
 * A standalone activation: a line "relu", "gelu", ... (any enum memest_act
 * but none) is a layer applying that function, with an output of its own
 * shaped as its input. Softmax and logsoftmax run over a vector's features
 * or over the channels at each pixel of CxHxW. No parameters, no MACs.
 * leakyrelu and elu take alpha=, hardsigmoid alpha= and beta=, clip min=
 * and max= (parse.c checks which; their values are the layer's act_alpha
 * and act_beta).
 */
#include "op.h"

static int infer(const struct op_infer *x, struct memest_layer *L)
{
    L->out_shape = *x->in[0];
    return MEMEST_OK;
}

static void write_line(struct op_out *o, const struct op_write *w)
{
    op_put(o, "%s", memest_act_name(w->L->act));
    op_put_act_params(o, w->L->act, w->L);
}

const struct memest_op_def op_activation = {
    .act_keyword = true,
    .prefix = "act",
    .keys = OP_KEY_NAME | OP_KEY_IN | OP_KEY_ALPHA | OP_KEY_BETA,
    .example = "relu",
    .params = OP_PARAMS_NONE,
    .infer = infer,
    .write = write_line,
};
