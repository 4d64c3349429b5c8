/*
 * TEMPLATE (not compiled): when adding an operator to libmemest, copy this
 * file to src/ops/<op>.c and fill it in. The steps that go with it (the
 * MEMEST_KINDS line, the table row, meson.build, tests) are listed at the
 * top of src/op.h.
 *
 * Open the file as the others do: what the operator computes, which
 * PyTorch module or ONNX operator it matches, and its counting
 * conventions (parameters as PyTorch counts them, MACs as the multiplies
 * it does, 0 for element-wise and activation layers), so that a reader
 * can check infer() against them.
 *
 * Example: "scale", y = x * s with one learned s per channel.
 */
#include "op.h"

/*
 * Shape inference, parameter counts and MACs, from the line (x->sp) and
 * the inputs (x->in[0..x->nin-1], shapes per sample; x->in_name[] their
 * names for messages). Fill only what the operator has: out_shape always;
 * units, kernel_*, stride_*, pad_*, groups, has_bias ... when it has them;
 * weight_count and bias_count (0 when none); macs_per_sample for batch 1.
 *
 * Every product or sum of sizes goes through mul_ovf()/add_ovf() and
 * fails with op_overflow(x, "the weight count"). Every refusal names the
 * operator and the values, at the column of the offending key (x->sp's
 * col_*), e.g.
 *
 *     return op_fail(x, MEMEST_E_SHAPE, x->sp->col_kind,
 *                    "scale needs ... but gets %s", text);
 *
 * Shared checks: op_need_chw(x) for a CxHxW input, op_window_out() for a
 * kernel/stride/padding window along one axis.
 */
static int infer(const struct op_infer *x, struct memest_layer *L)
{
    const struct memest_shape *in = x->in[0];
    int st = op_need_chw(x);

    if (st != MEMEST_OK) {
        return st;
    }
    L->weight_count = in->dim[0]; /* one s per channel */
    L->out_shape = *in;
    return MEMEST_OK;
}

/*
 * PyTorch's layout of "<name>.weight", which is also the layout of
 * layer->weight and the one memest_model_set_weights() checks tensors
 * against and apps/common/weights.c saves in (through
 * memest_layer_weight_shape()). Leave it out (NULL) for an operator
 * without parameters. With .absorbs_bn, dim[0] must be the output
 * channel: a folded batch norm scales the weights of channel c by its
 * scale[c], dim[1..] being contiguous.
 */
static unsigned weight_shape(const struct memest_layer *L,
                             uint64_t dim[OP_WEIGHT_MAX_RANK])
{
    dim[0] = L->weight_count;
    return 1;
}

/*
 * The text writer: the keyword and every option explicit, so that parsing
 * the line gives the layer back (tests/memest checks the round trip).
 * The driver appends in= and name=. Leave it out (NULL) when the keyword
 * alone describes the layer.
 */
static void write_line(struct op_out *o, const struct op_write *w)
{
    (void)w;
    op_put(o, "scale");
}

const struct memest_op_def op_scale = {
    /* the text format: keyword, prefix of automatic names ("scale1") */
    .word = "scale",
    .prefix = "scale",
    /* keys it accepts (OP_KEY_*; a new key: see op.h step 5) and those it
     * must have; messages list them */
    .keys = OP_KEY_NAME | OP_KEY_IN,
    .required = 0,
    /* a positional number after the keyword ("dense 10"): what it is and
     * what it counts, for messages; leave NULL when it takes none */
    .width_what = NULL,
    .width_noun = NULL,
    .example = "scale",
    /* reads 2+ inputs (in=A,B); otherwise exactly one */
    .multi_input = false,
    /* the output is the input's buffer, unchanged (reshapes): no storage
     * in the arena, and libprofile's executor aliases it too */
    .is_view = false,
    /* a batch norm reading only this layer folds into it */
    .absorbs_bn = false,
    /* how the parameters arrive: OP_PARAMS_NONE, OP_PARAMS_WEIGHT_BIAS
     * ("<name>.weight" in weight_shape()'s layout, "<name>.bias") or
     * OP_PARAMS_BATCHNORM */
    .params = OP_PARAMS_WEIGHT_BIAS,
    .infer = infer,
    .weight_shape = weight_shape,
    /* extra working buffers of the trainer (see dense.c, conv2d.c) */
    .train_work = NULL,
    .write = write_line,
};
