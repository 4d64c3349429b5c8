/* TEMPLATE: when implementing a new operator in the executor, copy this
 * file to exec/ops/<kind>.c (it is not compiled) and replace "mykind".
 *
 * The operator's kind, its text keyword, shapes, parameter counts and MACs
 * come from libmemest; this file says how the kind RUNS. The steps, all
 * on the libprofile side:
 *   1. this file, with a const struct exec_op_vtable exec_op_mykind;
 *   2. `extern const struct exec_op_vtable exec_op_mykind;` at the end of
 *      exec/ops.h;
 *   3. `[MEMEST_KIND_MYKIND] = &exec_op_mykind,` in exec/ops/table.c;
 *   4. 'src/exec/ops/mykind.c' in prof_src, libprofile/meson.build;
 *   5. tests: tests/profile/test_exec.c (its double-precision reference
 *      at fp32, fp16, bf16 and int8, arena = plan), and test_train.c when
 *      the kind has a backward pass.
 * No driver changes: plan.c, params.c, run.c, precision.c and the trainer
 * only call through the table. A field left NULL takes the default named
 * in exec/ops.h; only run_f32 is required.
 *
 * The example is an element-wise y = -x, then the fused activation:
 * one input, no parameters, any layout.
 */
#include <string.h>

#include "edgefit/kernels.h"
#include "edgefit/profile.h"
#include "exec/ops.h"

/* Geometry beyond the common one (c/h/w of input and output, in_n, out_n,
 * wn and bn when init_params is set). Check here what libkernels cannot
 * run and say why in diag, naming the layer. NULL when nothing more. */
static int mykind_plan(prof_exec *ex, struct exec_op *op,
                       struct prof_diag *diag)
{
    (void)ex;
    if (op->in_n != op->out_n) {
        exec_diag_set(diag, "%s: mykind keeps the shape (%zu elements in, "
                      "%zu out)", op->layer->name, op->in_n, op->out_n);
        return PROF_E_RANGE;
    }
    return PROF_OK;
}

/* Scratch, in elements of the executor's shared buffers; sizes through
 * exec_mul_sz and friends. Computing from the input in float at 16-bit
 * and int8 (the generic paths) needs x32 = in_n: exec_scratch_float_input
 * says so, and can be the field itself. */
static int mykind_scratch(const prof_exec *ex, struct exec_op *op,
                          struct exec_scratch *need)
{
    return exec_scratch_float_input(ex, op, need);
}

/* Layouts at fp32: element-wise, so NCHW8c in and out as long as both
 * are (EXEC_BLK_SAME) and the channels fill whole blocks. NULL: NCHW. */
static unsigned mykind_caps(const struct exec_op *op)
{
    return exec_blk_possible(op) && op->c_out % KERN_CBLOCK == 0
               ? EXEC_BLK_IN | EXEC_BLK_OUT | EXEC_BLK_SAME
               : 0u;
}

/* The float form, which every precision ends up in: a->x to a->y
 * (op->out_n floats, the whole batch), with the fused activation through
 * exec_then_act when a->fused. Status from libkernels through
 * exec_kern_status. A kernel that is not in libkernels yet goes there
 * first (a C reference, SIMD checked by checkkern), not here. */
static int mykind_run_f32(prof_exec *ex, const struct exec_op *op,
                          const struct exec_f32_args *a)
{
    /* kern_scale_f32 works in place: copy first when x is elsewhere */
    if (a->x != a->y) {
        memcpy(a->y, a->x, op->out_n * sizeof(float));
    }
    const int st = exec_kern_status(kern_scale_f32(a->y, op->out_n, -1.0f));
    return exec_then_act(ex, op, a, st);
}

/* The trainer's backward: gx = -g when the input's gradient is wanted
 * (a->gx NULL for the first layer). NULL: the trainer refuses a model
 * with this layer, naming it. */
static int mykind_backward(prof_exec *ex, const struct exec_op *op,
                           const struct exec_grad_args *a)
{
    (void)ex;
    if (!a->gx) {
        return PROF_OK;
    }
    for (size_t i = 0; i < op->in_n; i++) {
        a->gx[i] = -a->g[i];
    }
    return PROF_OK;
}

const struct exec_op_vtable exec_op_mykind = {
    /* A view (output = the input's buffer: identity, dropout, flatten)
     * is declared once, by libmemest's definition (is_view); then nothing
     * runs at inference. */
    .plan = mykind_plan,
    .scratch = mykind_scratch,
    .layout_caps = mykind_caps,
    /* .init_params, .alloc_stored, .store: a kind with weights (see
     * dense.c: exec_init_uniform, exec_q8_alloc_gemm/_store_gemm) */
    .run_f32 = mykind_run_f32,
    /* .run_16 = NULL: widen the input, run_f32, narrow (precision.c);
     * .run_s8 = NULL: dequantise, run_f32, quantise (int8-dynamic);
     * .run_s8s = NULL: the same with the tensors' fixed params (static
     * int8). Write them only for speed or memory (dense.c's tiles,
     * conv2d.c's int8 GEMM, integer kernels) or for several inputs
     * (add.c, concat.c: required). */
    .backward_f32 = mykind_backward,
    /* .backward_reads: EXEC_READS_X / _Y when the backward reads the
     * forward input or output (mixed precision widens only those) */
};
