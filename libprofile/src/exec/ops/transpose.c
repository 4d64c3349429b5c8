/* libmemest's "transpose perm=...": each sample's axes permuted (output
 * axis i is input axis perm[i]) by libkernels' transpose, the batch kept
 * first. 16-bit and int8 go through the generic widen / dequantise paths:
 * a permutation changes no value, and static int8's calibration gives the
 * output its input's params (quant_calib.c), so the int8 values come back
 * exactly. The gradient moves back by the inverse permutation. */
#include "edgefit/kernels.h"
#include "edgefit/profile.h"
#include "exec/ops.h"

/* The tensor [batch][in dims] and the permutation with the batch first;
 * inverse: the output's shape and the inverse permutation instead (the
 * backward). Returns the rank with the batch. */
static size_t perm_of(const prof_exec *ex, const struct exec_op *op,
                      int inverse, size_t shape[4], size_t perm[4])
{
    const struct memest_layer *L = op->layer;
    const unsigned r = L->in_shape.rank;
    shape[0] = ex->batch;
    perm[0] = 0;
    for (unsigned i = 0; i < r; i++) {
        if (!inverse) {
            shape[1 + i] = (size_t)L->in_shape.dim[i];
            perm[1 + i] = 1 + (size_t)L->perm[i];
        } else {
            shape[1 + i] = (size_t)L->out_shape.dim[i];
            perm[1 + L->perm[i]] = 1 + (size_t)i;
        }
    }
    return (size_t)r + 1;
}

static int transpose_plan(prof_exec *ex, struct exec_op *op,
                          struct prof_diag *diag)
{
    const struct memest_layer *L = op->layer;
    (void)ex;
    unsigned seen = 0;
    for (unsigned i = 0; i < L->in_shape.rank; i++) {
        seen |= L->perm[i] < 3 ? 1u << L->perm[i] : 8u;
    }
    if ((L->in_shape.rank != 2 && L->in_shape.rank != 3) ||
        seen != (1u << L->in_shape.rank) - 1u) {
        exec_diag_set(diag, "%s: transpose needs a permutation of the %u "
                      "axes of its input", L->name, L->in_shape.rank);
        return PROF_E_RANGE;
    }
    return PROF_OK;
}

static int transpose_run_f32(prof_exec *ex, const struct exec_op *op,
                             const struct exec_f32_args *a)
{
    size_t shape[4], perm[4];
    const size_t n = perm_of(ex, op, 0, shape, perm);
    return exec_then_act(
        ex, op, a,
        exec_kern_status(kern_transpose_f32(shape, n, perm, a->x, a->y)));
}

static int transpose_backward(prof_exec *ex, const struct exec_op *op,
                              const struct exec_grad_args *a)
{
    size_t shape[4], perm[4];
    if (!a->gx) {
        return PROF_OK;
    }
    const size_t n = perm_of(ex, op, 1, shape, perm);
    return exec_kern_status(kern_transpose_f32(shape, n, perm, a->g, a->gx));
}

const struct exec_op_vtable exec_op_transpose = {
    .plan = transpose_plan,
    .scratch = exec_scratch_float_input,
    .run_f32 = transpose_run_f32,
    .backward_f32 = transpose_backward,
};
