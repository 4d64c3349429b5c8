/*
 * A standalone activation: a line "relu", "gelu", ... (any enum memest_act
 * but none) is a layer applying that function, with an output of its own
 * shaped as its input. Softmax and logsoftmax normalise one per-sample
 * axis, axis=K (L->axis): by default a vector's features, a T x D
 * sequence's features D (axis 1), the channels at each pixel of C x H x W.
 * No parameters, no MACs. leakyrelu and elu take alpha=, hardsigmoid
 * alpha= and beta=, clip min= and max= (parse.c checks which; their values
 * are the layer's act_alpha and act_beta).
 */
#include "op.h"

static bool is_softmax(enum memest_act act)
{
    return act == MEMEST_ACT_SOFTMAX || act == MEMEST_ACT_LOGSOFTMAX;
}

static int infer(const struct op_infer *x, struct memest_layer *L)
{
    const struct op_spec *sp = x->sp;
    const struct memest_shape *in = x->in[0];

    if (sp->have_axis && !is_softmax(L->act)) {
        return op_fail(x, MEMEST_E_PARSE, sp->col_axis,
                       "%s takes no axis= (only softmax and logsoftmax "
                       "normalise along an axis)",
                       sp->kind_text);
    }
    if (is_softmax(L->act)) {
        L->axis = op_softmax_default_axis(in);
        if (sp->have_axis) {
            if (sp->axis >= in->rank) {
                char text[MEMEST_SHAPE_TEXT_MAX];
                memest_shape_format(in, text, sizeof text);
                return op_fail(x, MEMEST_E_SHAPE, sp->col_axis,
                               "%s: axis %u is outside its input %s (axes "
                               "0 to %u)",
                               sp->kind_text, sp->axis, text, in->rank - 1);
            }
            L->axis = sp->axis;
        }
    }
    L->out_shape = *in;
    return MEMEST_OK;
}

/* The axis only when it is not the default, so that the text of models
 * written before softmax took one is unchanged. */
static void write_line(struct op_out *o, const struct op_write *w)
{
    op_put(o, "%s", memest_act_name(w->L->act));
    op_put_act_params(o, w->L->act, w->L);
    if (is_softmax(w->L->act) &&
        w->L->axis != op_softmax_default_axis(&w->L->in_shape)) {
        op_put(o, " axis=%u", w->L->axis);
    }
}

const struct memest_op_def op_activation = {
    .act_keyword = true,
    .prefix = "act",
    .keys = OP_KEY_NAME | OP_KEY_IN | OP_KEY_ALPHA | OP_KEY_BETA |
            OP_KEY_AXIS,
    .example = "relu",
    .params = OP_PARAMS_NONE,
    .infer = infer,
    .write = write_line,
};
