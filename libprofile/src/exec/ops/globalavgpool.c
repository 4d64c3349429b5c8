/* Global average pooling: C x H x W to C x 1 x 1, the mean of each plane,
 * from NCHW or NCHW8c (its output is NCHW either way, see pool.c). */
#include "edgefit/kernels.h"
#include "edgefit/profile.h"
#include "exec/ops.h"

static unsigned gap_caps(const struct exec_op *op)
{
    return op->c_in % KERN_CBLOCK == 0 ? EXEC_BLK_IN : 0u;
}

static int gap_run_f32(prof_exec *ex, const struct exec_op *op,
                       const struct exec_f32_args *a)
{
    const size_t hw = op->h_in * op->w_in;
    int kst;
    if (exec_t_blocked(ex, op->layer->inputs[0])) {
        kst = kern_nn_global_avgpool_nchw8c_f32(a->x, ex->batch, op->c_in,
                                                hw, a->y);
    } else {
        kst = kern_nn_global_avgpool_f32(a->x, ex->batch * op->c_in, hw,
                                         a->y);
    }
    return exec_then_act(ex, op, a, exec_kern_status(kst));
}

const struct exec_op_vtable exec_op_globalavgpool = {
    .scratch = exec_scratch_float_input,
    .layout_caps = gap_caps,
    .run_f32 = gap_run_f32,
};
