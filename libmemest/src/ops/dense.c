/*
 * dense: a fully connected layer, y = W x + b on a feature vector, as
 * PyTorch's nn.Linear. Parameters in*out + out (bias=no: in*out); MACs
 * in*out per sample. On a T x D sequence it is nn.Linear over the last
 * axis, the same weights at every step: output T x out, MACs T*D*out.
 */
#include "op.h"

#include <inttypes.h>

static int infer(const struct op_infer *x, struct memest_layer *L)
{
    const struct op_spec *sp = x->sp;
    const struct memest_shape *in = x->in[0];
    char text[MEMEST_SHAPE_TEXT_MAX];

    if (in->rank != 1 && in->rank != 2) {
        memest_shape_format(in, text, sizeof text);
        return op_fail(x, MEMEST_E_SHAPE, sp->col_kind,
                       "dense needs a feature vector or a sequence T x D "
                       "but its input is %s; add a 'flatten' line before "
                       "it",
                       text);
    }
    /* the features are the last axis; a sequence's T steps share W */
    const uint64_t steps = in->rank == 2 ? in->dim[0] : 1;
    const uint64_t feats = in->dim[in->rank - 1];
    L->units = sp->units;
    L->has_bias = sp->has_bias;
    if (mul_ovf(feats, sp->units, &L->weight_count)) {
        return op_overflow(x, "the weight count");
    }
    L->bias_count = sp->has_bias ? sp->units : 0;
    if (mul_ovf(steps, L->weight_count, &L->macs_per_sample)) {
        return op_overflow(x, "the MAC count");
    }
    L->out_shape = *in;
    L->out_shape.dim[in->rank - 1] = sp->units;
    return MEMEST_OK;
}

/* nn.Linear's [out_features, in_features]. */
static unsigned weight_shape(const struct memest_layer *L,
                             uint64_t dim[OP_WEIGHT_MAX_RANK])
{
    dim[0] = L->units;
    dim[1] = L->in_shape.dim[L->in_shape.rank - 1];
    return 2;
}

/* The trainer keeps the pre-activation of a fused tanh-form gelu for its
 * derivative. */
static int train_work(const struct memest_layer *L, uint64_t *preact,
                      uint64_t *columns)
{
    /* the gelus' pre-activation, which their backward reads */
    *preact = L->act == MEMEST_ACT_GELU || L->act == MEMEST_ACT_GELU_ERF
                  ? L->output_elements
                  : 0;
    *columns = 0;
    return MEMEST_OK;
}

static void write_line(struct op_out *o, const struct op_write *w)
{
    op_put(o, "dense %" PRIu64 " act=%s bias=%s", w->L->units,
           memest_act_name(w->act), w->bias ? "yes" : "no");
    op_put_act_params(o, w->act, w->L);
}

const struct memest_op_def op_dense = {
    .word = "dense",
    .prefix = "dense",
    .keys = OP_KEY_NAME | OP_KEY_IN | OP_KEY_ACT | OP_KEY_BIAS |
            OP_KEY_ALPHA | OP_KEY_BETA,
    .width_what = "dense width",
    .width_noun = "output features",
    .example = "dense 10",
    .absorbs_bn = true,
    .params = OP_PARAMS_WEIGHT_BIAS,
    .infer = infer,
    .weight_shape = weight_shape,
    .train_work = train_work,
    .write = write_line,
};
