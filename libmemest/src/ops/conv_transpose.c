/*
 * convtranspose: a transposed 2-D convolution over CxHxW, as PyTorch's
 * nn.ConvTranspose2d and ONNX's ConvTranspose: out_c channels, kernel kh x
 * kw, strides (1 by default), padding per side (it crops the full
 * output), output_padding (op=, rows and columns added at the bottom and
 * right), groups and dilations (d=). The output height is
 *     (H - 1) * sh - pt - pb + dh * (kh - 1) + oph + 1,
 * the width alike. Parameters as PyTorch counts them: the weight
 * [in_c][out_c/g][kh][kw] and, with bias=yes, out_c biases. MACs are the
 * multiplies done: every input element times out_c/g * kh * kw (each
 * input pixel scatters into out_c/g channels through the whole kernel),
 * whatever the padding later crops.
 *
 * A batch norm after it is not folded: the weight's first dimension is
 * the input channel, so the norm's per-output-channel scale would not
 * scale contiguous rows (the norm stays a layer of its own).
 */
#include "op.h"

#include <inttypes.h>

/* One axis: (in - 1) * s - before - after + d * (k - 1) + op + 1 >= 1. */
static int axis_out(const struct op_infer *x, uint64_t in, uint64_t k,
                    uint64_t s, uint64_t d, uint64_t before, uint64_t after,
                    uint64_t op, const char *axis, uint64_t *out)
{
    uint64_t full, span, crop;

    /* PyTorch's rule: the extra rows must lie within one stride or one
     * dilation, else they would be rows no input reaches */
    if (op >= s && op >= d) {
        return op_fail(x, MEMEST_E_RANGE, x->sp->col_op,
                       "convtranspose: output padding op=%" PRIu64 " along "
                       "the %s must be smaller than the stride (%" PRIu64
                       ") or the dilation (%" PRIu64 ")",
                       op, axis, s, d);
    }
    if (mul_ovf(in - 1, s, &full) || mul_ovf(d, k - 1, &span) ||
        add_ovf(full, span, &full) || add_ovf(full, op, &full) ||
        add_ovf(full, 1, &full) || add_ovf(before, after, &crop)) {
        return op_overflow(x, "the output size");
    }
    if (crop >= full) {
        return op_fail(x, MEMEST_E_SHAPE, x->sp->col_p,
                       "convtranspose: padding %" PRIu64 "+%" PRIu64
                       " crops the whole %s (%" PRIu64 " before cropping)",
                       before, after, axis, full);
    }
    *out = full - crop;
    return MEMEST_OK;
}

static int infer(const struct op_infer *x, struct memest_layer *L)
{
    const struct op_spec *sp = x->sp;
    const struct memest_shape *in = x->in[0];
    const uint64_t sh = sp->have_s ? sp->sh : 1;
    const uint64_t sw = sp->have_s ? sp->sw : 1;
    /* set by axis_out() on success; zero for gcc's armhf flow analysis,
     * which cannot see that (a -Wmaybe-uninitialized there) */
    uint64_t oh = 0, ow = 0, per_tap, in_elems;
    int st = op_need_chw(x);

    if (st != MEMEST_OK) {
        return st;
    }
    op_set_window(L, sp, sh, sw);
    L->dilation_h = sp->dh;
    L->dilation_w = sp->dw;
    L->out_pad_h = sp->oph;
    L->out_pad_w = sp->opw;
    st = axis_out(x, in->dim[1], sp->kh, sh, sp->dh, sp->pt, sp->pb, sp->oph,
                  "height", &oh);
    if (st == MEMEST_OK) {
        st = axis_out(x, in->dim[2], sp->kw, sw, sp->dw, sp->pl, sp->pr,
                      sp->opw, "width", &ow);
    }
    if (st != MEMEST_OK) {
        return st;
    }
    if (in->dim[0] % sp->g != 0) {
        return op_fail(x, MEMEST_E_SHAPE, sp->col_g,
                       "convtranspose: input channels %" PRIu64 " are not "
                       "divisible by groups g=%" PRIu64, in->dim[0], sp->g);
    }
    if (sp->units % sp->g != 0) {
        return op_fail(x, MEMEST_E_SHAPE, sp->col_g,
                       "convtranspose: output channels %" PRIu64 " are not "
                       "divisible by groups g=%" PRIu64, sp->units, sp->g);
    }
    L->units = sp->units;
    L->groups = sp->g;
    L->has_bias = sp->has_bias;
    L->out_shape.rank = 3;
    L->out_shape.dim[0] = sp->units;
    L->out_shape.dim[1] = oh;
    L->out_shape.dim[2] = ow;
    /* per_tap: out_c/g * kh * kw, the multiplies of one input element */
    if (mul_ovf(sp->units / sp->g, sp->kh, &per_tap) ||
        mul_ovf(per_tap, sp->kw, &per_tap) ||
        mul_ovf(per_tap, in->dim[0], &L->weight_count)) {
        return op_overflow(x, "the weight count");
    }
    L->bias_count = sp->has_bias ? sp->units : 0;
    if (mul_ovf(in->dim[0], in->dim[1], &in_elems) ||
        mul_ovf(in_elems, in->dim[2], &in_elems) ||
        mul_ovf(in_elems, per_tap, &L->macs_per_sample)) {
        return op_overflow(x, "the MAC count");
    }
    return MEMEST_OK;
}

/* nn.ConvTranspose2d's [in_channels, out_channels/groups, kernel_h,
 * kernel_w]. */
static unsigned weight_shape(const struct memest_layer *L,
                             uint64_t dim[OP_WEIGHT_MAX_RANK])
{
    dim[0] = L->in_shape.dim[0];
    dim[1] = L->units / L->groups;
    dim[2] = L->kernel_h;
    dim[3] = L->kernel_w;
    return 4;
}

static void write_line(struct op_out *o, const struct op_write *w)
{
    const struct memest_layer *L = w->L;

    op_put(o, "convtranspose %" PRIu64, L->units);
    op_put_pair(o, "k", L->kernel_h, L->kernel_w);
    op_put_pair(o, "s", L->stride_h, L->stride_w);
    op_put_pads(o, L);
    op_put_pair(o, "op", L->out_pad_h, L->out_pad_w);
    op_put_pair(o, "d", L->dilation_h, L->dilation_w);
    op_put(o, " g=%" PRIu64 " act=%s bias=%s", L->groups,
           memest_act_name(w->act), w->bias ? "yes" : "no");
}

const struct memest_op_def op_conv_transpose = {
    .word = "convtranspose",
    .prefix = "deconv",
    .keys = OP_KEY_NAME | OP_KEY_IN | OP_KEY_K | OP_KEY_S | OP_KEY_P |
            OP_KEY_G | OP_KEY_ACT | OP_KEY_BIAS | OP_KEY_D | OP_KEY_OUT_PAD,
    .required = OP_KEY_K,
    .width_what = "convtranspose output channels",
    .width_noun = "output channels",
    .example = "convtranspose 16 k=2 s=2",
    .absorbs_bn = false,
    .params = OP_PARAMS_WEIGHT_BIAS,
    .infer = infer,
    .weight_shape = weight_shape,
    .train_work = NULL,
    .write = write_line,
};
