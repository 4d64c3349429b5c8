/*
 * conv2d: a 2-D convolution over CxHxW, as PyTorch's nn.Conv2d: out_c
 * channels, kernel kh x kw, strides (1 by default), padding per side,
 * groups, dilations d=HxW (1 by default: the taps of a dilated kernel are
 * d apart, so it spans d*(k-1)+1 cells). Parameters out_c*(in_c/g)*kh*kw +
 * out_c (bias=no: no bias term); MACs output elements * (in_c/g)*kh*kw,
 * whatever the dilation (the same taps, spread wider).
 */
#include "op.h"

#include <inttypes.h>

static int infer(const struct op_infer *x, struct memest_layer *L)
{
    const struct op_spec *sp = x->sp;
    const struct memest_shape *in = x->in[0];
    /* a convolution's stride defaults to 1 */
    const uint64_t sh = sp->have_s ? sp->sh : 1;
    const uint64_t sw = sp->have_s ? sp->sw : 1;
    uint64_t oh, ow, per_group, kk, out_elems, ekh, ekw;
    int st = op_need_chw(x);

    if (st != MEMEST_OK) {
        return st;
    }
    op_set_window(L, sp, sh, sw);
    L->dilation_h = sp->dh;
    L->dilation_w = sp->dw;
    /* the dilated kernel's extent d*(k-1)+1 is what the windows slide */
    if (mul_ovf(sp->dh, sp->kh - 1, &ekh) || add_ovf(ekh, 1, &ekh) ||
        mul_ovf(sp->dw, sp->kw - 1, &ekw) || add_ovf(ekw, 1, &ekw)) {
        return op_overflow(x, "the dilated kernel");
    }
    if ((sp->dh != 1 || sp->dw != 1) &&
        ((ekh > in->dim[1] && ekh - in->dim[1] > sp->pt &&
          ekh - in->dim[1] - sp->pt > sp->pb) ||
         (ekw > in->dim[2] && ekw - in->dim[2] > sp->pl &&
          ekw - in->dim[2] - sp->pl > sp->pr))) {
        return op_fail(x, MEMEST_E_SHAPE, sp->col_d,
                       "conv2d: the dilated kernel spans %llux%llu cells "
                       "(k=%llux%llu d=%llux%llu), more than the padded "
                       "input", (unsigned long long)ekh,
                       (unsigned long long)ekw, (unsigned long long)sp->kh,
                       (unsigned long long)sp->kw, (unsigned long long)sp->dh,
                       (unsigned long long)sp->dw);
    }
    /* a convolution may pad by more than its kernel (the output then has
     * border cells that see only padding and the bias), as PyTorch allows */
    st = op_window_out(x, in->dim[1], ekh, sh, sp->pt, sp->pb, "height",
                       false, &oh);
    if (st == MEMEST_OK) {
        st = op_window_out(x, in->dim[2], ekw, sw, sp->pl, sp->pr,
                           "width", false, &ow);
    }
    if (st != MEMEST_OK) {
        return st;
    }
    L->units = sp->units;
    L->groups = sp->g;
    L->has_bias = sp->has_bias;
    L->out_shape.rank = 3;
    L->out_shape.dim[0] = sp->units;
    L->out_shape.dim[1] = oh;
    L->out_shape.dim[2] = ow;
    if (in->dim[0] % sp->g != 0) {
        return op_fail(x, MEMEST_E_SHAPE, sp->col_g,
                       "conv2d: input channels %llu are not divisible by "
                       "groups g=%llu",
                       (unsigned long long)in->dim[0],
                       (unsigned long long)sp->g);
    }
    if (sp->units % sp->g != 0) {
        return op_fail(x, MEMEST_E_SHAPE, sp->col_g,
                       "conv2d: output channels %llu are not divisible by "
                       "groups g=%llu",
                       (unsigned long long)sp->units,
                       (unsigned long long)sp->g);
    }
    per_group = in->dim[0] / sp->g;
    if (mul_ovf(sp->kh, sp->kw, &kk) || mul_ovf(kk, per_group, &kk) ||
        mul_ovf(kk, sp->units, &L->weight_count)) {
        return op_overflow(x, "the weight count");
    }
    L->bias_count = sp->has_bias ? sp->units : 0;
    if (mul_ovf(sp->units, oh, &out_elems) ||
        mul_ovf(out_elems, ow, &out_elems)) {
        return op_overflow(x, "the output size");
    }
    /* kk is kh*kw*(in_c/g): MACs per output element */
    if (mul_ovf(out_elems, kk, &L->macs_per_sample)) {
        return op_overflow(x, "the MAC count");
    }
    return MEMEST_OK;
}

/* nn.Conv2d's [out_channels, in_channels/groups, kernel_h, kernel_w]. */
static unsigned weight_shape(const struct memest_layer *L,
                             uint64_t dim[OP_WEIGHT_MAX_RANK])
{
    dim[0] = L->units;
    dim[1] = L->in_shape.dim[0] / L->groups;
    dim[2] = L->kernel_h;
    dim[3] = L->kernel_w;
    return 4;
}

/* The trainer's im2col columns of one sample and group, in_c/g*kh*kw x
 * out_h*out_w floats, and a fused gelu's pre-activation. */
static int train_work(const struct memest_layer *L, uint64_t *preact,
                      uint64_t *columns)
{
    const uint64_t kdim =
        L->in_shape.dim[0] / L->groups * L->kernel_h * L->kernel_w;
    const uint64_t hw = L->out_shape.dim[1] * L->out_shape.dim[2];

    /* the gelus' pre-activation, which their backward reads */
    *preact = L->act == MEMEST_ACT_GELU || L->act == MEMEST_ACT_GELU_ERF
                  ? L->output_elements
                  : 0;
    if (mul_ovf(kdim, hw, columns)) {
        return MEMEST_E_OVERFLOW;
    }
    return MEMEST_OK;
}

static void write_line(struct op_out *o, const struct op_write *w)
{
    const struct memest_layer *L = w->L;

    op_put(o, "conv2d %" PRIu64, L->units);
    op_put_pair(o, "k", L->kernel_h, L->kernel_w);
    op_put_pair(o, "s", L->stride_h, L->stride_w);
    op_put_pads(o, L);
    /* written only when dilated, so that other lines stay as they were */
    if (L->dilation_h != 1 || L->dilation_w != 1) {
        op_put_pair(o, "d", L->dilation_h, L->dilation_w);
    }
    op_put(o, " g=%" PRIu64 " act=%s bias=%s", L->groups,
           memest_act_name(w->act), w->bias ? "yes" : "no");
    op_put_act_params(o, w->act, L);
}

const struct memest_op_def op_conv2d = {
    .word = "conv2d",
    .prefix = "conv",
    .keys = OP_KEY_NAME | OP_KEY_IN | OP_KEY_K | OP_KEY_S | OP_KEY_P |
            OP_KEY_G | OP_KEY_ACT | OP_KEY_BIAS | OP_KEY_ALPHA | OP_KEY_BETA |
            OP_KEY_D,
    .required = OP_KEY_K,
    .width_what = "conv2d output channels",
    .width_noun = "output channels",
    .example = "conv2d 8 k=3",
    .absorbs_bn = true,
    .params = OP_PARAMS_WEIGHT_BIAS,
    .infer = infer,
    .weight_shape = weight_shape,
    .train_work = train_work,
    .write = write_line,
};
