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
        st = exec_mul_sz(kern_q8_maxpool2d_work_bytes(&ps),
                         exec_op_threads(ex, op), &need->col8);
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

/* Which kernel a pool runs on float tensors (pool_run_f32), and on
 * static int8 (pool_run_s8s). */
enum pool_kind {
    POOL_NCHW,      /* NCHW in and out, or the padded copy (pool_copy) */
    POOL_BLOCKED,   /* NCHW8c in and out (pool_caps) */
    POOL_CLOSING,   /* NCHW8c in, its 1 x 1 output NCHW */
    POOL_S8_MAX,    /* static int8 (pool_run_s8s) */
    POOL_S8_AVG,
};

/* One pool split among threads (exec_split): by samples when the batch
 * has several, else the single sample's channels, whole 8-channel blocks
 * on NCHW8c (each block's [H][W][8] is contiguous, and so is its part of
 * the [C] output of a closing pool). Every output is computed as on one
 * thread. */
struct pool_job {
    const prof_exec *ex;
    const struct exec_op *op;
    enum pool_kind kind;
    bool max;
    struct kern_pool2d_shape ps;
    const void *x;
    void *y;
    size_t esize;  /* bytes of an element: 4, or 1 at int8 */
    size_t cunit;  /* channels per unit of a single sample's split */
    size_t work;   /* int8 max: work bytes per thread, in ex->col8 */
    int32_t x_zero, y_zero;
    float x_scale, y_scale;
    int32_t qmin, qmax;
};

static size_t pool_units(const struct pool_job *j)
{
    return j->ps.batch > 1 ? j->ps.batch : j->ps.channels / j->cunit;
}

static int pool_part(void *arg, size_t part, size_t lo, size_t hi)
{
    const struct pool_job *j = arg;
    struct kern_pool2d_shape ps = j->ps;
    const size_t in_hw = ps.in_h * ps.in_w, out_hw = j->op->hw_out;
    size_t xo, yo; /* elements before the part's first */
    if (ps.batch > 1) {
        ps.batch = hi - lo;
        xo = lo * ps.channels * in_hw;
        yo = lo * ps.channels * out_hw;
    } else {
        ps.channels = (hi - lo) * j->cunit;
        xo = lo * j->cunit * in_hw;
        yo = lo * j->cunit * out_hw;
    }
    const char *xb = (const char *)j->x + xo * j->esize;
    char *yb = (char *)j->y + yo * j->esize;
    const float *x = (const float *)(const void *)xb;
    float *y = (float *)(void *)yb;
    int kst = KERN_OK;
    switch (j->kind) {
    case POOL_NCHW:
        kst = j->max ? kern_maxpool2d_f32(&ps, x, y)
                     : kern_avgpool2d_f32(&ps, x, y);
        break;
    case POOL_BLOCKED:
        kst = j->max ? kern_maxpool2d_blocked_f32(&ps, x, y)
                     : kern_avgpool2d_blocked_f32(&ps, x, y);
        break;
    case POOL_CLOSING:
        kst = j->max ? kern_maxpool2d_nchw8c_f32(&ps, x, y)
                     : kern_avgpool2d_nchw8c_f32(&ps, x, y);
        break;
    case POOL_S8_AVG:
        kst = kern_q8_avgpool2d_s8(&ps, (const int8_t *)xb, j->x_zero,
                                   j->x_scale, j->y_zero, j->y_scale,
                                   j->qmin, j->qmax, (int8_t *)yb);
        break;
    case POOL_S8_MAX: {
        kst = kern_q8_maxpool2d_s8(&ps, (const int8_t *)xb,
                                   j->ex->col8 + part * j->work,
                                   (int8_t *)yb);
        const size_t n = ps.batch * ps.channels * out_hw;
        int8_t *q = (int8_t *)yb;
        if (kst == KERN_OK && (j->qmin > -128 || j->qmax < 127)) {
            for (size_t i = 0; i < n; i++) {
                q[i] = (int8_t)(q[i] < j->qmin   ? j->qmin
                                : q[i] > j->qmax ? j->qmax
                                                 : q[i]);
            }
        }
        break;
    }
    }
    return exec_kern_status(kst);
}

static int pool_split(struct pool_job *j)
{
    return exec_split(pool_units(j), exec_op_threads(j->ex, j->op),
                      pool_part, j);
}

static int pool_run_f32(prof_exec *ex, const struct exec_op *op,
                        const struct exec_f32_args *a)
{
    struct pool_job j = {.ex = ex, .op = op, .max = is_max(op),
                         .ps = exec_pool_shape(op, ex->batch), .x = a->x,
                         .y = a->y, .esize = sizeof(float), .cunit = 1};
    if (op->pool_copy) {
        int st = pool_pad_copy(ex, op, a->x);
        if (st != PROF_OK) {
            return st;
        }
        j.kind = POOL_NCHW;
        j.x = ex->t32;
    } else if (exec_t_blocked(ex, op->out_t)) {
        j.kind = POOL_BLOCKED; /* blocked in and out (pool_caps) */
        j.cunit = KERN_CBLOCK;
    } else if (exec_t_blocked(ex, op->layer->inputs[0])) {
        j.kind = POOL_CLOSING; /* its 1 x 1 output is NCHW (pool_caps) */
        j.cunit = KERN_CBLOCK;
    } else {
        j.kind = POOL_NCHW;
    }
    return exec_then_act(ex, op, a, pool_split(&j));
}

/* Static int8 on libkernels' integer pools: a max pool whose input and
 * output share params (calibration's rule) takes the int8 maximum, its
 * fused relu, relu6 or clip then a clamp of the bytes; an average pool
 * sums q - x_zero over its window and requantises in integer (TFLite's
 * integer average). Other params, activations and the padded copy of a
 * ceil-mode average counting its padding: the float generic path, on one
 * thread (pool_serial). */
static bool pool_s8_generic(const prof_exec *ex, const struct exec_op *op,
                            int32_t *qmin, int32_t *qmax)
{
    const struct memest_layer *L = op->layer;
    const size_t tx = L->inputs[0], ty = op->out_t;
    if (op->pool_copy ||
        !exec_s8_clamp(L->act, L->act_alpha, L->act_beta, ex->t_scale[ty],
                       ex->t_zero[ty], qmin, qmax)) {
        return true;
    }
    return is_max(op) && (ex->t_scale[tx] != ex->t_scale[ty] ||
                          ex->t_zero[tx] != ex->t_zero[ty]);
}

static bool pool_serial(const prof_exec *ex, const struct exec_op *op)
{
    int32_t qmin, qmax;
    return exec_static_s8(ex) && pool_s8_generic(ex, op, &qmin, &qmax);
}

static int pool_run_s8s(prof_exec *ex, const struct exec_op *op)
{
    const struct memest_layer *L = op->layer;
    const size_t tx = L->inputs[0], ty = op->out_t;
    int32_t qmin, qmax;
    if (pool_s8_generic(ex, op, &qmin, &qmax)) {
        return exec_run_s8_generic(ex, op);
    }
    struct pool_job j = {
        .ex = ex, .op = op, .max = is_max(op),
        .kind = is_max(op) ? POOL_S8_MAX : POOL_S8_AVG,
        .ps = exec_pool_shape(op, ex->batch),
        .x = ex->arena + op->in_off, .y = ex->arena + op->out_off,
        .esize = 1, .cunit = 1, .x_zero = ex->t_zero[tx],
        .y_zero = ex->t_zero[ty], .x_scale = ex->t_scale[tx],
        .y_scale = ex->t_scale[ty], .qmin = qmin, .qmax = qmax};
    j.work = kern_q8_maxpool2d_work_bytes(&j.ps);
    return pool_split(&j);
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
    .threaded = true,
    .serial = pool_serial,
    .plan = pool_plan,
    .scratch = pool_scratch,
    .layout_caps = pool_caps,
    .run_f32 = pool_run_f32,
    .run_s8s = pool_run_s8s,
    .backward_f32 = pool_backward,
    .backward_reads = maxpool_reads,
};

const struct exec_op_vtable exec_op_avgpool = {
    .threaded = true,
    .serial = pool_serial,
    .plan = pool_plan,
    .scratch = pool_scratch,
    .layout_caps = pool_caps,
    .run_f32 = pool_run_f32,
    .run_s8s = pool_run_s8s,
    .backward_f32 = pool_backward,
};
