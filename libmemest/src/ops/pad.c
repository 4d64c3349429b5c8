/*
 * pad: constant padding of the H and W of CxHxW, as PyTorch's F.pad(x,
 * (left, right, top, bottom), value=v) and ONNX's Pad in constant mode:
 * p=top,left,bottom,right (or N, HxW as the windows' p=), value= the fill
 * (0 by default). Output Cx(H+top+bottom)x(W+left+right). No parameters,
 * no MACs (it copies). A Pad that a convolution or pooling can take as its
 * own padding is folded into it by the ONNX importer; this layer is the
 * rest (a value other than 0, a Pad before a max pool or read twice).
 */
#include "op.h"

#include <inttypes.h>

static int infer(const struct op_infer *x, struct memest_layer *L)
{
    const struct op_spec *sp = x->sp;
    const struct memest_shape *in = x->in[0];
    uint64_t h, w;
    int st = op_need_chw(x);

    if (st != MEMEST_OK) {
        return st;
    }
    if (add_ovf(in->dim[1], sp->pt, &h) || add_ovf(h, sp->pb, &h) ||
        add_ovf(in->dim[2], sp->pl, &w) || add_ovf(w, sp->pr, &w)) {
        return op_overflow(x, "the padded size");
    }
    L->pad_top = sp->pt;
    L->pad_left = sp->pl;
    L->pad_bottom = sp->pb;
    L->pad_right = sp->pr;
    L->pad_value = sp->value;
    L->out_shape.rank = 3;
    L->out_shape.dim[0] = in->dim[0];
    L->out_shape.dim[1] = h;
    L->out_shape.dim[2] = w;
    return MEMEST_OK;
}

static void write_line(struct op_out *o, const struct op_write *w)
{
    op_put(o, "pad");
    op_put_pads(o, w->L);
    /* %.9g: the float value back exactly */
    op_put(o, " value=%.9g", w->L->pad_value);
}

const struct memest_op_def op_pad = {
    .word = "pad",
    .prefix = "pad",
    .keys = OP_KEY_NAME | OP_KEY_IN | OP_KEY_P | OP_KEY_VALUE,
    .required = OP_KEY_P,
    .example = "pad p=1 value=0",
    .params = OP_PARAMS_NONE,
    .infer = infer,
    .write = write_line,
};
