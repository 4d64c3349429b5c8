/* An element-wise sum of two or more inputs of one shape, then its
 * activation (two inputs that broadcast, or one and a constant, run as
 * ops/binary.c's). Every precision adds in float, left to right; each gives
 * only how an input becomes floats (exec_load_f32, _16, _s8), except
 * static int8's add of two, in integer (add_run_s8s). The inputs
 * are read from the arena; the trainer, which runs operators on its own
 * buffers, calls exec_add_train_f32 and the backward pass below. */
#include <string.h>

#include "edgefit/kernels.h"
#include "edgefit/profile.h"
#include "exec/ops.h"

/* y = act(x0 + x1 + ...) over the operator's output size (all of an add's
 * inputs have it), left to right in float, at every precision: each input
 * comes from `load` (x0 into y, the others into xbuf). A relu or relu6
 * runs in the last addition's pass (the bits of a pass of its own, one
 * pass over y fewer: ResNet-8's residual adds); any other activation runs
 * after. */
static int add_float(prof_exec *ex, const struct exec_op *op,
                     exec_load_fn load, float *xbuf, float *y, bool fused)
{
    const struct memest_layer *L = op->layer;
    const enum memest_act act_after = fused ? L->act : MEMEST_ACT_NONE;
    const int fuse = exec_fuse_of(act_after);
    int st = PROF_OK;
    const float *sum = load(ex, L->inputs[0], y, &st);
    for (size_t j = 1; st == PROF_OK && j < L->input_count; j++) {
        const float *x = load(ex, L->inputs[j], xbuf, &st);
        if (st != PROF_OK) {
            break;
        }
        const float *pair[2] = {sum, x};
        const int act = j + 1 == L->input_count && fuse >= 0
                            ? fuse
                            : KERN_FUSE_NONE;
        st = exec_kern_status(
            kern_nn_add_act_f32(y, pair, 2, op->out_n, act));
        sum = y;
    }
    if (st == PROF_OK && fuse < 0) {
        st = exec_apply_act(ex, op, act_after, y, y);
    }
    return st;
}

static int add_scratch(const prof_exec *ex, struct exec_op *op,
                       struct exec_scratch *n)
{
    if (exec_binary_broadcasts(op->layer)) {
        return exec_binary_scratch(ex, op, n);
    }
    /* 16-bit and int8: the sum builds in y32, each further input is
     * widened into x32 (all inputs have the output's size) */
    if (ex->precision != MEMEST_FP32) {
        n->x32 = op->out_n;
    }
    return PROF_OK;
}

static unsigned add_caps(const struct exec_op *op)
{
    if (exec_binary_broadcasts(op->layer)) {
        return exec_binary_caps(op);
    }
    return exec_blk_possible(op) && op->c_out % KERN_CBLOCK == 0
               ? EXEC_BLK_IN | EXEC_BLK_OUT | EXEC_BLK_SAME
               : 0u;
}

/* An fp32 add of same-shaped inputs split among threads (exec_split):
 * by samples when the batch has several (each thread keeps the samples
 * its convolutions wrote), else by runs of ADD_UNIT elements. Each part
 * makes add_float's additions, in its order, on its own elements. */
enum { ADD_UNIT = 4096 };

struct add_job {
    prof_exec *ex;
    const struct exec_op *op;
    float *y;
    int fuse;   /* the last addition's, KERN_FUSE_NONE for none */
    size_t unit; /* elements a unit */
};

static int add_part(void *arg, size_t part, size_t lo, size_t hi)
{
    (void)part;
    const struct add_job *j = arg;
    const struct memest_layer *L = j->op->layer;
    const size_t a = lo * j->unit;
    const size_t b = hi * j->unit < j->op->out_n ? hi * j->unit
                                                 : j->op->out_n;
    int st = PROF_OK;
    const float *sum = exec_load_f32(j->ex, L->inputs[0], NULL, &st) + a;
    for (size_t k = 1; st == PROF_OK && k < L->input_count; k++) {
        const float *x = exec_load_f32(j->ex, L->inputs[k], NULL, &st) + a;
        const float *pair[2] = {sum, x};
        const int act = k + 1 == L->input_count ? j->fuse : KERN_FUSE_NONE;
        st = exec_kern_status(
            kern_nn_add_act_f32(j->y + a, pair, 2, b - a, act));
        sum = j->y + a;
    }
    return st;
}

/* fp32 adds of same-shaped inputs split; the others run on one thread */
static bool add_serial(const prof_exec *ex, const struct exec_op *op)
{
    return ex->precision != MEMEST_FP32 || exec_binary_broadcasts(op->layer);
}

static int add_run_f32(prof_exec *ex, const struct exec_op *op,
                       const struct exec_f32_args *a)
{
    if (exec_binary_broadcasts(op->layer)) {
        return exec_binary_float(ex, op, exec_load_f32, NULL, NULL, a->y,
                                 a->fused);
    }
    const unsigned t = exec_op_threads(ex, op);
    if (t < 2) {
        return add_float(ex, op, exec_load_f32, NULL, a->y, a->fused);
    }
    const enum memest_act act = a->fused ? op->layer->act : MEMEST_ACT_NONE;
    const int fuse = exec_fuse_of(act);
    struct add_job j = {ex, op, a->y, fuse >= 0 ? fuse : KERN_FUSE_NONE,
                        ex->batch > 1 ? op->out_n / ex->batch : ADD_UNIT};
    int st = exec_split((op->out_n + j.unit - 1) / j.unit, t, add_part, &j);
    if (st == PROF_OK && fuse < 0) {
        st = exec_apply_act(ex, op, act, a->y, a->y);
    }
    return st;
}

static int add_run_16(prof_exec *ex, const struct exec_op *op)
{
    if (exec_binary_broadcasts(op->layer)) {
        return exec_binary_run_16(ex, op);
    }
    const int st = add_float(ex, op, exec_load_16, ex->x32, ex->y32, true);
    return st == PROF_OK
               ? exec_narrow(ex, (uint16_t *)(ex->arena + op->out_off),
                             ex->y32, op->out_n)
               : st;
}

/* The inputs carry scales of their own: dequantised, added in y32, the
 * result quantised again with its own scale. */
static int add_run_s8(prof_exec *ex, const struct exec_op *op)
{
    if (exec_binary_broadcasts(op->layer)) {
        return exec_binary_run_s8(ex, op);
    }
    const int st = add_float(ex, op, exec_load_s8, ex->x32, ex->y32, true);
    return st == PROF_OK ? exec_quantize_out(ex, op) : st;
}

/* Static int8: two inputs of one shape added in integer as TFLite's Add
 * (kern_q8_add_s8: each rescaled to twice the larger input scale, the sum
 * requantised to the output's params), or with ONNX Runtime's output
 * stage (PROF_INT8_REQUANT_FLOAT) as its QLinearAdd adds, in float
 * (kern_q8_addf_s8); a relu, relu6 or clip as the clamp. Broadcasting or constant forms, more than two inputs and other
 * activations: in float (dequantised, added, quantised with the output's
 * params). */
/* Tensor t runs on the params the model carries and the file stored it
 * as uint8. */
static int add_file_u8(const prof_exec *ex, size_t t)
{
    struct memest_quant q;
    return memest_model_tensor_quant(ex->model, t, &q) == MEMEST_OK &&
           q.is_unsigned && q.scale == ex->t_scale[t] &&
           q.zero_point == ex->t_zero[t];
}

static int add_run_s8s(prof_exec *ex, const struct exec_op *op)
{
    const struct memest_layer *L = op->layer;
    if (exec_binary_broadcasts(L)) {
        return exec_binary_run_s8(ex, op);
    }
    const size_t ta = L->inputs[0], tb = L->inputs[1], ty = op->out_t;
    int32_t qmin, qmax;
    if (L->input_count != 2 ||
        !exec_s8_clamp(L->act, L->act_alpha, L->act_beta, ex->t_scale[ty],
                       ex->t_zero[ty], &qmin, &qmax)) {
        const int st =
            add_float(ex, op, exec_load_s8, ex->x32, ex->y32, true);
        return st == PROF_OK ? exec_quantize_out(ex, op) : st;
    }
    const int8_t *xa = (const int8_t *)(ex->arena + ex->t_off[ta]);
    const int8_t *xb = (const int8_t *)(ex->arena + ex->t_off[tb]);
    int8_t *y = (int8_t *)(ex->arena + op->out_off);
    if (ex->int8_requant == PROF_INT8_REQUANT_FLOAT) {
        /* ONNX Runtime's own add (its QLinearAdd), in float, on the type
         * the file stored (its three tensors share it) */
        struct kern_q8_addf_params pf;
        int kst = kern_q8_addf_params_init(
            ex->t_scale[ta], ex->t_zero[ta], ex->t_scale[tb], ex->t_zero[tb],
            ex->t_scale[ty], ex->t_zero[ty], qmin, qmax, add_file_u8(ex, ty),
            &pf);
        if (kst == KERN_OK) {
            kst = kern_q8_addf_s8(op->out_n, xa, xb, &pf, y);
        }
        return exec_kern_status(kst);
    }
    struct kern_q8_add_params p;
    int kst = kern_q8_add_params_init(ex->t_scale[ta], ex->t_zero[ta],
                                      ex->t_scale[tb], ex->t_zero[tb],
                                      ex->t_scale[ty], ex->t_zero[ty], qmin,
                                      qmax, &p);
    if (kst == KERN_OK) {
        kst = kern_q8_add_s8(op->out_n, xa, xb, &p, y);
    }
    return exec_kern_status(kst);
}

int exec_add_train_f32(const prof_exec *ex, const struct exec_op *op,
                       const float *const *xs, float *y)
{
    if (exec_binary_broadcasts(op->layer)) {
        return exec_binary_train_f32(ex, op, xs[0],
                                     op->layer->input_count > 1 ? xs[1]
                                                                : NULL,
                                     y);
    }
    return exec_kern_status(
        kern_nn_add_f32(y, xs, op->layer->input_count, op->out_n));
}

/* d(x0 + x1 + ...)/dxk = 1: each input's gradient is the output's (after
 * the fused activation), summed over the dimensions it broadcasts along,
 * written or added to the share of another reader. */
static int add_backward(prof_exec *ex, const struct exec_op *op,
                        const struct exec_grad_args *a)
{
    int st = exec_fused_act_backward(op, a);
    const bool bcast = exec_binary_broadcasts(op->layer);
    for (size_t k = 0; st == PROF_OK && k < op->layer->input_count; k++) {
        float *gx = a->gxs ? a->gxs[k] : NULL;
        const bool add = a->gx_add && a->gx_add[k];
        if (!gx) {
            continue;
        }
        if (bcast) { /* summed over what input k broadcasts along */
            st = exec_binary_reduce_grad(ex, op, k, a->g, gx, add);
        } else if (add) {
            const float *pair[2] = {gx, a->g};
            st = exec_kern_status(kern_nn_add_f32(gx, pair, 2, op->out_n));
        } else {
            memcpy(gx, a->g, op->out_n * sizeof(float));
        }
    }
    return st;
}

/* The output, for the fused activation's derivative (relu, relu6, ...:
 * the trainer keeps no pre-activation of an add). */
static unsigned add_reads(const struct exec_op *op, bool loss_softmax)
{
    return !loss_softmax && op->layer->act != MEMEST_ACT_NONE
               ? EXEC_READS_Y
               : 0u;
}

const struct exec_op_vtable exec_op_add = {
    .threaded = true,
    .serial = add_serial,
    .backward_f32 = add_backward,
    .backward_reads = add_reads,
    .scratch = add_scratch,
    .layout_caps = add_caps,
    .run_f32 = add_run_f32,
    .run_16 = add_run_16,
    .run_s8 = add_run_s8,
    .run_s8s = add_run_s8s,
};
