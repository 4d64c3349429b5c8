/* libmemest's "slice axis= begin= end=": each sample's range along one
 * axis copied out, as runs of `inner` contiguous elements (the whole
 * planes of a channel range, a row's run of a column range). 16-bit and
 * int8 go through the generic widen / dequantise paths. */
#include <string.h>

#include "edgefit/kernels.h"
#include "edgefit/profile.h"
#include "exec/ops.h"

/* The sample's dims as c x h x w, and the geometry of the copy: `outer`
 * runs per sample (the dims before the axis), each of `keep` x `inner`
 * elements taken at `skip` x `inner` into a run of `len` x `inner`. */
struct slice_geom {
    size_t outer, inner, len, keep, skip;
};

static struct slice_geom slice_geom(const struct exec_op *op)
{
    const struct memest_layer *L = op->layer;
    const size_t d[3] = {op->c_in, op->h_in, op->w_in};
    struct slice_geom s = {1, 1, d[L->slice_axis], 0, 0};
    for (unsigned i = 0; i < L->slice_axis; i++) {
        s.outer *= d[i];
    }
    for (unsigned i = L->slice_axis + 1; i < 3; i++) {
        s.inner *= d[i];
    }
    s.keep = (size_t)(L->slice_end - L->slice_begin);
    s.skip = (size_t)L->slice_begin;
    return s;
}

static int slice_plan(prof_exec *ex, struct exec_op *op,
                      struct prof_diag *diag)
{
    const struct memest_layer *L = op->layer;
    const size_t d[3] = {op->c_in, op->h_in, op->w_in};
    (void)ex;
    if (L->slice_axis > 2 || L->slice_end > d[L->slice_axis] ||
        L->slice_begin >= L->slice_end) {
        exec_diag_set(diag, "%s: slice [%llu, %llu) of axis %u does not "
                      "fit its input", L->name,
                      (unsigned long long)L->slice_begin,
                      (unsigned long long)L->slice_end, L->slice_axis);
        return PROF_E_RANGE;
    }
    return PROF_OK;
}

static int slice_run_f32(prof_exec *ex, const struct exec_op *op,
                         const struct exec_f32_args *a)
{
    const struct slice_geom s = slice_geom(op);
    const size_t runs = ex->batch * s.outer;
    for (size_t r = 0; r < runs; r++) {
        memcpy(a->y + r * s.keep * s.inner,
               a->x + (r * s.len + s.skip) * s.inner,
               s.keep * s.inner * sizeof(float));
    }
    return exec_then_act(ex, op, a, PROF_OK);
}

/* The gradient of the kept range goes back to it; the rest is 0. */
static int slice_backward(prof_exec *ex, const struct exec_op *op,
                          const struct exec_grad_args *a)
{
    const struct slice_geom s = slice_geom(op);
    const size_t runs = ex->batch * s.outer;
    if (!a->gx) {
        return PROF_OK;
    }
    memset(a->gx, 0, op->in_n * sizeof(float));
    for (size_t r = 0; r < runs; r++) {
        memcpy(a->gx + (r * s.len + s.skip) * s.inner,
               a->g + r * s.keep * s.inner,
               s.keep * s.inner * sizeof(float));
    }
    return PROF_OK;
}

const struct exec_op_vtable exec_op_slice = {
    .plan = slice_plan,
    .scratch = exec_scratch_float_input,
    .run_f32 = slice_run_f32,
    .backward_f32 = slice_backward,
};
