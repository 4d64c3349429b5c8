/*
 * layernorm: PyTorch's nn.LayerNorm over the last per-sample axis (ONNX's
 * LayerNormalization may start earlier: the axes axis..rank-1 are
 * normalised together), y = (x - mean) / sqrt(var + eps) * gamma + beta
 * with the biased variance and eps inside the root. units = D, the
 * normalised width (the product of those axes); parameters gamma
 * ".weight" [D] and beta ".bias" [D] (bias=no: gamma only); 0 MACs, as
 * the other normalisations (README, "Counting conventions").
 */
#include "op.h"

static int infer(const struct op_infer *x, struct memest_layer *L)
{
    const struct op_spec *sp = x->sp;
    const struct memest_shape *in = x->in[0];
    unsigned axis = in->rank - 1;
    uint64_t d = 1;

    if (sp->have_axis) {
        if (sp->axis >= in->rank) {
            char text[MEMEST_SHAPE_TEXT_MAX];
            memest_shape_format(in, text, sizeof text);
            return op_fail(x, MEMEST_E_SHAPE, sp->col_axis,
                           "layernorm: axis %u is outside its input %s "
                           "(axes 0 to %u)",
                           sp->axis, text, in->rank - 1);
        }
        axis = sp->axis;
    }
    for (unsigned i = axis; i < in->rank; i++) {
        d *= in->dim[i]; /* a part of the input's checked element count */
    }
    L->axis = axis;
    L->units = d;
    L->has_bias = sp->has_bias;
    L->weight_count = d;
    L->bias_count = sp->has_bias ? d : 0;
    L->bn_epsilon = sp->eps;
    L->out_shape = *in;
    return MEMEST_OK;
}

/* nn.LayerNorm's gamma [D]. */
static unsigned weight_shape(const struct memest_layer *L,
                             uint64_t dim[OP_WEIGHT_MAX_RANK])
{
    dim[0] = L->units;
    return 1;
}

/* The axis only when it is not the last (ONNX's earlier axis); %.17g:
 * the epsilon survives the round trip exactly. */
static void write_line(struct op_out *o, const struct op_write *w)
{
    op_put(o, "layernorm eps=%.17g bias=%s", w->L->bn_epsilon,
           w->bias ? "yes" : "no");
    if (w->L->axis + 1 != w->L->in_shape.rank) {
        op_put(o, " axis=%u", w->L->axis);
    }
}

const struct memest_op_def op_layernorm = {
    .word = "layernorm",
    .prefix = "ln",
    .keys = OP_KEY_NAME | OP_KEY_IN | OP_KEY_EPS | OP_KEY_BIAS | OP_KEY_AXIS,
    .example = "layernorm eps=1e-5",
    .params = OP_PARAMS_WEIGHT_BIAS,
    .infer = infer,
    .weight_shape = weight_shape,
    .write = write_line,
};
