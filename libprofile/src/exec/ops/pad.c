/* Constant padding of H and W (kern_pad_f32 on the NCHW batch). */
#include "edgefit/kernels.h"
#include "edgefit/profile.h"
#include "exec/ops.h"

static int pad_run_f32(prof_exec *ex, const struct exec_op *op,
                       const struct exec_f32_args *a)
{
    const struct memest_layer *L = op->layer;
    const size_t shape[4] = {ex->batch, op->c_in, op->h_in, op->w_in};
    const size_t lo[4] = {0, 0, (size_t)L->pad_top, (size_t)L->pad_left};
    const size_t hi[4] = {0, 0, (size_t)L->pad_bottom,
                          (size_t)L->pad_right};
    const int st = exec_kern_status(kern_pad_f32(
        shape, 4, lo, hi, (float)L->pad_value, a->x, a->y));
    return exec_then_act(ex, op, a, st);
}

const struct exec_op_vtable exec_op_pad = {
    .scratch = exec_scratch_float_input,
    .run_f32 = pad_run_f32,
    /* no backward yet: the trainer refuses a pad layer by name */
};
