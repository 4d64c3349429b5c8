/*
 * resize: nearest or bilinear resizing of the H x W planes of a CxHxW
 * tensor, as ONNX's Resize (opset 11 and later) and Upsample (opset 9),
 * and PyTorch's nn.Upsample and F.interpolate. scale= gives the factor of
 * each axis, either a decimal (rounded to float as ONNX's scales are; the
 * output is floor(in * scale) and coordinates are mapped with the factor)
 * or a ratio N/D (the output is floor(in * N / D) in whole numbers and
 * coordinates are mapped with out / in, ONNX's rule when the sizes are
 * given). mode= is the interpolation, its coordinate transformation
 * (ONNX's coordinate_transformation_mode) and, for nearest, its rounding
 * (nearest_mode). No parameters; MACs 0, as for the other layers that
 * only move or blend values.
 */
#include "op.h"

#include <inttypes.h>
#include <math.h>

const char *const op_resize_modes[2] = {"nearest", "bilinear"};
const char *const op_resize_coords[4] = {"half_pixel", "pytorch_half_pixel",
                                         "align_corners", "asymmetric"};
const char *const op_resize_nearests[4] = {
    "round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};

/* The output length of one axis. */
static int axis_out(const struct op_infer *x, uint64_t in, double scale,
                    uint64_t num, uint64_t den, const char *axis,
                    uint64_t *out)
{
    uint64_t v;

    if (scale == 0.0) {
        uint64_t p;
        if (mul_ovf(in, num, &p)) {
            return op_overflow(x, "the output size");
        }
        v = p / den;
    } else {
        const double f = floor((double)in * scale);
        if (!(f < 1.8e19)) {
            return op_overflow(x, "the output size");
        }
        v = (uint64_t)f;
    }
    if (v == 0) {
        return op_fail(x, MEMEST_E_SHAPE, x->sp->col_scale,
                       "resize: the scale makes the %s 0 (input %" PRIu64
                       ")", axis, in);
    }
    *out = v;
    return MEMEST_OK;
}

static int infer(const struct op_infer *x, struct memest_layer *L)
{
    const struct op_spec *sp = x->sp;
    const struct memest_shape *in = x->in[0];
    uint64_t oh = 0, ow = 0;
    int st = op_need_chw(x);

    if (st != MEMEST_OK) {
        return st;
    }
    st = axis_out(x, in->dim[1], sp->scale_h, sp->rat_num_h, sp->rat_den_h,
                  "height", &oh);
    if (st == MEMEST_OK) {
        st = axis_out(x, in->dim[2], sp->scale_w, sp->rat_num_w,
                      sp->rat_den_w, "width", &ow);
    }
    if (st != MEMEST_OK) {
        return st;
    }
    L->resize_mode = sp->resize_mode;
    L->resize_coord = sp->resize_coord;
    L->resize_nearest = sp->resize_nearest;
    L->scale_h = sp->scale_h;
    L->scale_w = sp->scale_w;
    L->out_shape.rank = 3;
    L->out_shape.dim[0] = in->dim[0];
    L->out_shape.dim[1] = oh;
    L->out_shape.dim[2] = ow;
    L->weight_count = 0;
    L->bias_count = 0;
    L->macs_per_sample = 0;
    return MEMEST_OK;
}

/* One axis's factor: the decimal (%.9g gives a float back exactly) or
 * out/in, which parses back to the same output. */
static void put_factor(struct op_out *o, double scale, uint64_t out,
                       uint64_t in)
{
    if (scale != 0.0) {
        op_put(o, "%.9g", scale);
    } else {
        op_put(o, "%" PRIu64 "/%" PRIu64, out, in);
    }
}

static void write_line(struct op_out *o, const struct op_write *w)
{
    const struct memest_layer *L = w->L;
    const int mode = L->resize_mode & 1;
    const int coord = L->resize_coord & 3;

    op_put(o, "resize scale=");
    put_factor(o, L->scale_h, L->out_shape.dim[1], L->in_shape.dim[1]);
    op_put(o, "x");
    put_factor(o, L->scale_w, L->out_shape.dim[2], L->in_shape.dim[2]);
    op_put(o, " mode=%s,%s", op_resize_modes[mode], op_resize_coords[coord]);
    if (mode == 0) {
        op_put(o, ",%s", op_resize_nearests[L->resize_nearest & 3]);
    }
}

const struct memest_op_def op_resize = {
    .word = "resize",
    .prefix = "resize",
    .keys = OP_KEY_NAME | OP_KEY_IN | OP_KEY_SCALE | OP_KEY_MODE,
    .required = OP_KEY_SCALE,
    .example = "resize scale=2 mode=nearest",
    .params = OP_PARAMS_NONE,
    .infer = infer,
    .write = write_line,
};
