/*
 * maxpool and avgpool: a window's maximum or mean over each channel of
 * CxHxW, as PyTorch's nn.MaxPool2d and nn.AvgPool2d (ceil_mode off): kernel
 * kh x kw, strides (the kernel by default), padding per side smaller than
 * the window. avgpool divides by the whole window, padding included
 * (count_pad=yes, PyTorch's default), or by the cells inside the input
 * (count_pad=no, ONNX's default). ceil=yes is PyTorch's ceil_mode: the
 * output size rounds up, out = ceil((in + pads - k) / s) + 1, less one
 * when the last window would start past the input and its leading
 * padding; such a last window is cut at the padded input's end. An
 * average divides a cut window by its cells inside the input (count_pad=no)
 * or inside input and padding (count_pad=yes), as PyTorch does. No
 * parameters, no MACs. The two share everything but that divisor, so they
 * share this file.
 */
#include "op.h"

/* ceil_mode's size from the floor size `fl` that op_window_out() found
 * (so in + lo + hi >= k and nothing below overflows): one more window when
 * the floor leaves cells uncovered, unless that window would start past
 * the input and the leading padding (PyTorch's rule). */
static uint64_t ceil_out(uint64_t in, uint64_t k, uint64_t s, uint64_t lo,
                         uint64_t hi, uint64_t fl)
{
    const uint64_t span = in + lo + hi;
    if ((span - k) % s != 0 && fl * s < in + lo) {
        return fl + 1;
    }
    return fl;
}

static int infer_window(const struct op_infer *x, struct memest_layer *L)
{
    const struct op_spec *sp = x->sp;
    const struct memest_shape *in = x->in[0];
    /* a pool's stride defaults to its kernel: windows side by side */
    const uint64_t sh = sp->have_s ? sp->sh : sp->kh;
    const uint64_t sw = sp->have_s ? sp->sw : sp->kw;
    uint64_t oh, ow;
    int st = op_need_chw(x);

    if (st != MEMEST_OK) {
        return st;
    }
    op_set_window(L, sp, sh, sw);
    st = op_window_out(x, in->dim[1], sp->kh, sh, sp->pt, sp->pb, "height",
                       true, &oh);
    if (st == MEMEST_OK) {
        st = op_window_out(x, in->dim[2], sp->kw, sw, sp->pl, sp->pr,
                           "width", true, &ow);
    }
    if (st != MEMEST_OK) {
        return st;
    }
    L->ceil_mode = sp->ceil_mode;
    if (sp->ceil_mode) {
        oh = ceil_out(in->dim[1], sp->kh, sh, sp->pt, sp->pb, oh);
        ow = ceil_out(in->dim[2], sp->kw, sw, sp->pl, sp->pr, ow);
    }
    L->out_shape.rank = 3;
    L->out_shape.dim[0] = in->dim[0];
    L->out_shape.dim[1] = oh;
    L->out_shape.dim[2] = ow;
    return MEMEST_OK;
}

static int infer_avg(const struct op_infer *x, struct memest_layer *L)
{
    L->count_include_pad = x->sp->count_pad;
    return infer_window(x, L);
}

static void write_window(struct op_out *o, const struct memest_layer *L)
{
    op_put_pair(o, "k", L->kernel_h, L->kernel_w);
    op_put_pair(o, "s", L->stride_h, L->stride_w);
    op_put_pads(o, L);
    /* written only when set, so that the lines of pools without it stay
     * as they were */
    if (L->ceil_mode) {
        op_put(o, " ceil=yes");
    }
}

static void write_max(struct op_out *o, const struct op_write *w)
{
    op_put(o, "maxpool");
    write_window(o, w->L);
}

static void write_avg(struct op_out *o, const struct op_write *w)
{
    op_put(o, "avgpool");
    write_window(o, w->L);
    op_put(o, " count_pad=%s", w->L->count_include_pad ? "yes" : "no");
}

const struct memest_op_def op_maxpool = {
    .word = "maxpool",
    .prefix = "pool",
    .keys = OP_KEY_NAME | OP_KEY_IN | OP_KEY_K | OP_KEY_S | OP_KEY_P |
            OP_KEY_CEIL,
    .required = OP_KEY_K,
    .example = "maxpool k=2",
    .params = OP_PARAMS_NONE,
    .infer = infer_window,
    .write = write_max,
};

const struct memest_op_def op_avgpool = {
    .word = "avgpool",
    .prefix = "pool",
    .keys = OP_KEY_NAME | OP_KEY_IN | OP_KEY_K | OP_KEY_S | OP_KEY_P |
            OP_KEY_COUNT_PAD | OP_KEY_CEIL,
    .required = OP_KEY_K,
    .example = "avgpool k=2",
    .params = OP_PARAMS_NONE,
    .infer = infer_avg,
    .write = write_avg,
};
