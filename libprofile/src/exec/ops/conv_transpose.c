/* A transposed 2-D convolution (ONNX ConvTranspose, PyTorch
 * ConvTranspose2d) through libkernels' kern_conv_transpose2d_f32: a GEMM
 * per sample and group into columns, then col2im into the output. Its
 * scratch is those columns (kern_conv_transpose2d_work_bytes), in col32;
 * the weights stay in PyTorch's [in_c][out_c/g][kh][kw], which the kernel
 * reads as they are. fp16, bf16 and int8 run through the generic paths
 * (widened or dequantised input and parameters, this float operator). The
 * trainer has no backward for it and refuses a model with one, naming the
 * layer. */
#include "edgefit/kernels.h"
#include "edgefit/profile.h"
#include "exec/ops.h"

/* libkernels' geometry of the layer (whole batch). */
static struct kern_conv_transpose2d_shape ct_shape(const prof_exec *ex,
                                                   const struct exec_op *op)
{
    const struct memest_layer *L = op->layer;
    struct kern_conv_transpose2d_shape s = {
        .batch = ex->batch,
        .in_c = op->c_in,
        .in_h = op->h_in,
        .in_w = op->w_in,
        .out_c = op->c_out,
        .kh = (size_t)L->kernel_h,
        .kw = (size_t)L->kernel_w,
        .stride_h = (size_t)L->stride_h,
        .stride_w = (size_t)L->stride_w,
        .pad_top = (size_t)L->pad_top,
        .pad_left = (size_t)L->pad_left,
        .pad_bottom = (size_t)L->pad_bottom,
        .pad_right = (size_t)L->pad_right,
        .out_pad_h = (size_t)L->out_pad_h,
        .out_pad_w = (size_t)L->out_pad_w,
        .groups = (size_t)L->groups,
        .dilation_h = (size_t)L->dilation_h,
        .dilation_w = (size_t)L->dilation_w,
    };
    return s;
}

/* The layer's sizes are libmemest's; libkernels must agree on them (a
 * size_t narrower than the model's counts would not). */
static int ct_plan(prof_exec *ex, struct exec_op *op, struct prof_diag *diag)
{
    const struct memest_layer *L = op->layer;
    const struct kern_conv_transpose2d_shape s = ct_shape(ex, op);
    size_t oh = 0, ow = 0;
    const int kst = kern_conv_transpose2d_out_hw(&s, &oh, &ow);

    if (kst != KERN_OK || oh != op->h_out || ow != op->w_out ||
        kern_conv_transpose2d_work_bytes(&s) == 0) {
        exec_diag_set(diag, "%s: libkernels cannot run this convtranspose "
                      "(%zux%zux%zu to %zux%zux%zu)", L->name, op->c_in,
                      op->h_in, op->w_in, op->c_out, op->h_out, op->w_out);
        return PROF_E_RANGE;
    }
    op->groups = s.groups;
    op->kh = s.kh;
    op->kw = s.kw;
    op->sh = s.stride_h;
    op->sw = s.stride_w;
    op->ocg = op->c_out / s.groups;
    /* inputs that reach one output, as a convolution's depth: the int8
     * limit of plan.c does not apply (int8 computes in float here) */
    op->kdim = op->c_in / s.groups;
    return PROF_OK;
}

static int ct_scratch(const prof_exec *ex, struct exec_op *op,
                      struct exec_scratch *n)
{
    const struct kern_conv_transpose2d_shape s = ct_shape(ex, op);
    /* the columns of one sample and group, in floats */
    n->col32 = (kern_conv_transpose2d_work_bytes(&s) + 3) / 4;
    if (ex->precision == MEMEST_FP16 || ex->precision == MEMEST_BF16) {
        n->w32 = op->wn;
        n->b32 = op->bn;
    }
    return exec_scratch_float_input(ex, op, n);
}

/* Seeded weights scaled as a convolution's of the same geometry: fan-in
 * in_c/g * kh * kw (the most input taps one output sums), fan-out
 * out_c/g * kh * kw (the outputs one input reaches). */
static void ct_init(struct exec_op *op, uint64_t *rng)
{
    const double k = (double)(op->layer->kernel_h * op->layer->kernel_w);
    exec_init_uniform(op, (double)(op->c_in / op->groups) * k,
                      (double)op->ocg * k, rng);
}

static int ct_run_f32(prof_exec *ex, const struct exec_op *op,
                      const struct exec_f32_args *a)
{
    const struct kern_conv_transpose2d_shape s = ct_shape(ex, op);
    const int st = exec_kern_status(kern_conv_transpose2d_f32(
        &s, a->x, a->w, op->layer->has_bias ? a->b : NULL, ex->col32, a->y));
    return exec_then_act(ex, op, a, st);
}

const struct exec_op_vtable exec_op_conv_transpose = {
    .plan = ct_plan,
    .scratch = ct_scratch,
    .init_params = ct_init,
    .run_f32 = ct_run_f32,
};
