/* Resize (ONNX Resize and Upsample, PyTorch interpolate) through
 * libkernels' kern_resize_f32: nearest or bilinear, the coordinate
 * transformation and nearest rounding of the layer. No parameters. Its
 * per-axis tables and two blended rows (kern_resize_work_bytes) are the
 * executor's scratch, col32, so a run allocates nothing. fp16, bf16 and
 * int8 run through the generic paths. The trainer refuses it by name. */
#include "edgefit/kernels.h"
#include "edgefit/profile.h"
#include "exec/ops.h"

/* libmemest's resize_* values, mapped to libkernels' by name so that the
 * two numberings may differ. */
static int rs_mode(int m)
{
    return m == 1 ? KERN_RESIZE_LINEAR : KERN_RESIZE_NEAREST;
}

static int rs_coord(int c)
{
    switch (c) {
    case 0: return KERN_RESIZE_HALF_PIXEL;
    case 1: return KERN_RESIZE_PYTORCH_HALF_PIXEL;
    case 2: return KERN_RESIZE_ALIGN_CORNERS;
    case 3: return KERN_RESIZE_ASYMMETRIC;
    }
    return -1;
}

static int rs_nearest(int n)
{
    switch (n) {
    case 0: return KERN_NEAREST_ROUND_PREFER_FLOOR;
    case 1: return KERN_NEAREST_ROUND_PREFER_CEIL;
    case 2: return KERN_NEAREST_FLOOR;
    case 3: return KERN_NEAREST_CEIL;
    }
    return -1;
}

static struct kern_resize_shape rs_shape(const prof_exec *ex,
                                         const struct exec_op *op);

static int rs_plan(prof_exec *ex, struct exec_op *op, struct prof_diag *diag)
{
    const struct memest_layer *L = op->layer;
    const struct kern_resize_shape s = rs_shape(ex, op);
    if (kern_resize_work_bytes(&s) == 0 || L->in_shape.rank != 3 || L->resize_mode < 0 || L->resize_mode > 1 ||
        rs_coord(L->resize_coord) < 0 || rs_nearest(L->resize_nearest) < 0 ||
        op->c_in != op->c_out) {
        exec_diag_set(diag, "%s: libkernels cannot run this resize (mode "
                      "%d, coordinates %d, rounding %d)", L->name,
                      L->resize_mode, L->resize_coord, L->resize_nearest);
        return PROF_E_RANGE;
    }
    return PROF_OK;
}

static struct kern_resize_shape rs_shape(const prof_exec *ex,
                                         const struct exec_op *op)
{
    const struct memest_layer *L = op->layer;
    const struct kern_resize_shape s = {
        .planes = ex->batch * op->c_in,
        .in_h = op->h_in,
        .in_w = op->w_in,
        .out_h = op->h_out,
        .out_w = op->w_out,
        /* 0: out / in, libmemest's "ratio" form (ONNX's sizes) */
        .scale_h = (float)L->scale_h,
        .scale_w = (float)L->scale_w,
        .mode = rs_mode(L->resize_mode),
        .coord = rs_coord(L->resize_coord),
        .nearest = rs_nearest(L->resize_nearest),
    };
    return s;
}

static int rs_scratch(const prof_exec *ex, struct exec_op *op,
                      struct exec_scratch *n)
{
    const struct kern_resize_shape s = rs_shape(ex, op);
    n->col32 = (kern_resize_work_bytes(&s) + 3) / 4;
    return exec_scratch_float_input(ex, op, n);
}

static int rs_run_f32(prof_exec *ex, const struct exec_op *op,
                      const struct exec_f32_args *a)
{
    const struct kern_resize_shape s = rs_shape(ex, op);
    const int st =
        exec_kern_status(kern_resize_work_f32(&s, a->x, ex->col32, a->y));
    return exec_then_act(ex, op, a, st);
}

const struct exec_op_vtable exec_op_resize = {
    .plan = rs_plan,
    .scratch = rs_scratch,
    .run_f32 = rs_run_f32,
};
