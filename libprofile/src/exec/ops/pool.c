/* Max and average pooling over kh x kw windows (the average's divisor as
 * count_include_pad says, see struct kern_pool2d_shape), NCHW, or NCHW8c
 * in and NCHW out for a pool that closes a network; their backward passes
 * for the trainer. */
#include <string.h>

#include "edgefit/kernels.h"
#include "edgefit/profile.h"
#include "exec/ops.h"

struct kern_pool2d_shape exec_pool_shape(const struct exec_op *op,
                                         size_t batch)
{
    if (op->pool_copy) {
        /* the padded copy: its own padding is only ceil_mode's extra */
        return (struct kern_pool2d_shape){
            .batch = batch, .channels = op->c_in,
            .in_h = op->h_in + op->pad_t + op->pad_b - op->pool_extra_h,
            .in_w = op->w_in + op->pad_l + op->pad_r - op->pool_extra_w,
            .kh = op->kh, .kw = op->kw, .stride_h = op->sh,
            .stride_w = op->sw, .pad_bottom = op->pool_extra_h,
            .pad_right = op->pool_extra_w, .count_include_pad = 0,
        };
    }
    return (struct kern_pool2d_shape){
        .batch = batch, .channels = op->c_in, .in_h = op->h_in,
        .in_w = op->w_in, .kh = op->kh, .kw = op->kw, .stride_h = op->sh,
        .stride_w = op->sw, .pad_top = op->pad_t, .pad_left = op->pad_l,
        .pad_bottom = op->pad_b, .pad_right = op->pad_r,
        .count_include_pad = op->count_include_pad,
    };
}

static bool is_max(const struct exec_op *op)
{
    return op->vt == &exec_op_maxpool;
}

static int pool_plan(prof_exec *ex, struct exec_op *op,
                     struct prof_diag *diag)
{
    const struct memest_layer *L = op->layer;
    op->kh = (size_t)L->kernel_h;
    op->kw = (size_t)L->kernel_w;
    op->sh = (size_t)L->stride_h;
    op->sw = (size_t)L->stride_w;
    op->pad_t = (size_t)L->pad_top;
    op->pad_l = (size_t)L->pad_left;
    op->pad_b = (size_t)L->pad_bottom;
    op->pad_r = (size_t)L->pad_right;
    /* a max ignores the padding; an average divides as the layer says */
    op->count_include_pad = is_max(op) ? 1 : L->count_include_pad;
    op->pool_extra_h = op->pool_extra_w = 0;
    op->pool_copy = false;
    if (L->ceil_mode) {
        /* ceil_mode is the floor size of a pool padded further at the end
         * (see kern_pool2d_ceil_pad) */
        size_t oh, ow;
        if (kern_pool2d_ceil_pad(op->h_in, op->kh, op->sh, op->pad_t,
                                 op->pad_b, &oh, &op->pool_extra_h) !=
                KERN_OK ||
            kern_pool2d_ceil_pad(op->w_in, op->kw, op->sw, op->pad_l,
                                 op->pad_r, &ow, &op->pool_extra_w) !=
                KERN_OK) {
            exec_diag_set(diag, "%s: the ceil-mode pooling kernels refuse "
                          "the model's shape", L->name);
            return PROF_E_RANGE;
        }
        op->pad_b += op->pool_extra_h;
        op->pad_r += op->pool_extra_w;
        op->pool_copy = !is_max(op) && op->count_include_pad &&
                        (op->pool_extra_h || op->pool_extra_w);
    }
    struct kern_pool2d_shape ps = exec_pool_shape(op, ex->batch);
    size_t oh, ow;
    int kst = kern_pool2d_out_hw(&ps, &oh, &ow);
    if (kst == KERN_E_RANGE) {
        exec_diag_set(diag, "%s: padding %zu,%zu,%zu,%zu (top, left, "
                      "bottom, right) reaches a whole %zux%zu window, "
                      "which leaves windows with no input", L->name,
                      op->pad_t, op->pad_l, op->pad_b, op->pad_r,
                      op->kh, op->kw);
        return PROF_E_RANGE;
    }
    if (kst != KERN_OK || oh != op->h_out || ow != op->w_out) {
        exec_diag_set(diag, "%s: the pooling kernels disagree with the "
                      "model's shape", L->name);
        return PROF_E_RANGE;
    }
    return PROF_OK;
}

/* A window that covers its input, one value per channel: the pool that
 * closes a network reads blocked input; its output, [C][1][1] per sample,
 * is the same memory in either layout but is held NCHW, so that what
 * follows (flatten, dense) needs nothing. Any other pool on whole blocks
 * of channels reads and writes NCHW8c (kern_maxpool2d_blocked_f32), so
 * that the convolutions around it (ResNet's stem, SqueezeNet's fire
 * modules) stay blocked; the padded copy of a ceil-mode average counting
 * its padding is NCHW. */
static unsigned pool_caps(const struct exec_op *op)
{
    if (op->c_in % KERN_CBLOCK != 0 || op->pool_copy) {
        return 0u;
    }
    if (op->layer->out_shape.rank == 3 && op->hw_out == 1) {
        return EXEC_BLK_IN;
    }
    return exec_blk_possible(op) ? EXEC_BLK_IN | EXEC_BLK_OUT | EXEC_BLK_SAME
                                 : 0u;
}

/* The padded copy's elements (pool_copy), counted at plan time. */
static int pool_copy_n(const prof_exec *ex, const struct exec_op *op,
                       size_t *n)
{
    struct kern_pool2d_shape ps = exec_pool_shape(op, ex->batch);
    int st = exec_mul3_sz(ps.batch, ps.channels, ps.in_h, n);
    return st == PROF_OK ? exec_mul3_sz(*n, ps.in_w, 1, n) : st;
}

static int pool_scratch(const prof_exec *ex, struct exec_op *op,
                        struct exec_scratch *need)
{
    int st = exec_scratch_float_input(ex, op, need);
    if (st == PROF_OK && exec_static_s8(ex) && is_max(op)) {
        /* kern_q8_maxpool2d_s8's work (pool_run_s8s) */
        const struct kern_pool2d_shape ps = exec_pool_shape(op, ex->batch);
        need->col8 = kern_q8_maxpool2d_work_bytes(&ps);
    }
    if (st == PROF_OK && op->pool_copy) {
        size_t n;
        if ((st = pool_copy_n(ex, op, &n)) == PROF_OK) {
            need->t32 = n;
        }
    }
    return st;
}

/* x zero-padded by the layer's own pads into ex->t32 (pool_copy). */
static int pool_pad_copy(prof_exec *ex, const struct exec_op *op,
                         const float *x)
{
    const size_t shape[4] = {ex->batch, op->c_in, op->h_in, op->w_in};
    const size_t lo[4] = {0, 0, op->pad_t, op->pad_l};
    const size_t hi[4] = {0, 0, op->pad_b - op->pool_extra_h,
                          op->pad_r - op->pool_extra_w};
    return exec_kern_status(kern_pad_f32(shape, 4, lo, hi, 0.0f, x, ex->t32));
}

static int pool_run_f32(prof_exec *ex, const struct exec_op *op,
                        const struct exec_f32_args *a)
{
    struct kern_pool2d_shape ps = exec_pool_shape(op, ex->batch);
    const bool max = is_max(op);
    int kst;
    if (op->pool_copy) {
        int st = pool_pad_copy(ex, op, a->x);
        if (st != PROF_OK) {
            return st;
        }
        kst = kern_avgpool2d_f32(&ps, ex->t32, a->y);
    } else if (exec_t_blocked(ex, op->out_t)) {
        /* blocked in and out (pool_caps) */
        kst = max ? kern_maxpool2d_blocked_f32(&ps, a->x, a->y)
                  : kern_avgpool2d_blocked_f32(&ps, a->x, a->y);
    } else if (exec_t_blocked(ex, op->layer->inputs[0])) {
        /* a closing pool (pool_caps): its 1 x 1 output is NCHW */
        kst = max ? kern_maxpool2d_nchw8c_f32(&ps, a->x, a->y)
                  : kern_avgpool2d_nchw8c_f32(&ps, a->x, a->y);
    } else {
        kst = max ? kern_maxpool2d_f32(&ps, a->x, a->y)
                  : kern_avgpool2d_f32(&ps, a->x, a->y);
    }
    return exec_then_act(ex, op, a, exec_kern_status(kst));
}

/* Static int8 on libkernels' integer pools: a max pool whose input and
 * output share params (calibration's rule) takes the int8 maximum, its
 * fused relu, relu6 or clip then a clamp of the bytes; an average pool
 * sums q - x_zero over its window and requantises in integer (TFLite's
 * integer average). Other params, activations and the padded copy of a
 * ceil-mode average counting its padding: the float generic path. */
static int pool_run_s8s(prof_exec *ex, const struct exec_op *op)
{
    const struct memest_layer *L = op->layer;
    const size_t tx = L->inputs[0], ty = op->out_t;
    int32_t qmin, qmax;
    if (op->pool_copy ||
        !exec_s8_clamp(L->act, L->act_alpha, L->act_beta, ex->t_scale[ty],
                       ex->t_zero[ty], &qmin, &qmax)) {
        return exec_run_s8_generic(ex, op);
    }
    const struct kern_pool2d_shape ps = exec_pool_shape(op, ex->batch);
    const int8_t *x = (const int8_t *)(ex->arena + op->in_off);
    int8_t *y = (int8_t *)(ex->arena + op->out_off);
    if (!is_max(op)) {
        return exec_kern_status(kern_q8_avgpool2d_s8(
            &ps, x, ex->t_zero[tx], ex->t_scale[tx], ex->t_zero[ty],
            ex->t_scale[ty], qmin, qmax, y));
    }
    if (ex->t_scale[tx] != ex->t_scale[ty] ||
        ex->t_zero[tx] != ex->t_zero[ty]) {
        return exec_run_s8_generic(ex, op);
    }
    const int kst = kern_q8_maxpool2d_s8(&ps, x, ex->col8, y);
    if (kst == KERN_OK && (qmin > -128 || qmax < 127)) {
        for (size_t i = 0; i < op->out_n; i++) {
            y[i] = (int8_t)(y[i] < qmin ? qmin : y[i] > qmax ? qmax : y[i]);
        }
    }
    return exec_kern_status(kst);
}

static int pool_backward(prof_exec *ex, const struct exec_op *op,
                         const struct exec_grad_args *a)
{
    if (!a->gx) {
        return PROF_OK;
    }
    struct kern_pool2d_shape ps = exec_pool_shape(op, ex->batch);
    if (op->pool_copy) {
        /* the gradient of the padded copy, then its interior */
        int st = exec_kern_status(
            kern_avgpool2d_backward_f32(&ps, a->g, ex->t32));
        if (st != PROF_OK) {
            return st;
        }
        for (size_t p = 0; p < ps.batch * ps.channels; p++) {
            for (size_t y = 0; y < op->h_in; y++) {
                memcpy(a->gx + (p * op->h_in + y) * op->w_in,
                       ex->t32 + (p * ps.in_h + y + op->pad_t) * ps.in_w +
                           op->pad_l,
                       op->w_in * sizeof(float));
            }
        }
        return PROF_OK;
    }
    return exec_kern_status(
        is_max(op) ? kern_maxpool2d_backward_f32(&ps, a->x, a->g, a->gx)
                   : kern_avgpool2d_backward_f32(&ps, a->g, a->gx));
}

/* A max pool's gradient goes to the maximum of each window, found in x. */
static unsigned maxpool_reads(const struct exec_op *op, bool loss_softmax)
{
    (void)op;
    (void)loss_softmax;
    return EXEC_READS_X;
}

const struct exec_op_vtable exec_op_maxpool = {
    .plan = pool_plan,
    .scratch = pool_scratch,
    .layout_caps = pool_caps,
    .run_f32 = pool_run_f32,
    .run_s8s = pool_run_s8s,
    .backward_f32 = pool_backward,
    .backward_reads = maxpool_reads,
};

const struct exec_op_vtable exec_op_avgpool = {
    .plan = pool_plan,
    .scratch = pool_scratch,
    .layout_caps = pool_caps,
    .run_f32 = pool_run_f32,
    .run_s8s = pool_run_s8s,
    .backward_f32 = pool_backward,
};
