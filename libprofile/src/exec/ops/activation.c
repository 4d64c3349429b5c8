/* A standalone activation layer ("relu", "softmax", ... lines), and the
 * activations every operator applies after itself (exec_apply_act) and
 * their derivatives for the trainer. */
#include <math.h>
#include <string.h>

#include "edgefit/kernels.h"
#include "edgefit/profile.h"
#include "exec/ops.h"

int exec_fuse_of(enum memest_act act)
{
    switch (act) {
    case MEMEST_ACT_NONE:
        return KERN_FUSE_NONE;
    case MEMEST_ACT_RELU:
        return KERN_FUSE_RELU;
    case MEMEST_ACT_RELU6:
        return KERN_FUSE_RELU6;
    default:
        return -1;
    }
}

void exec_softmax_geometry(const struct memest_layer *L, size_t batch,
                           size_t *outer, size_t *n, size_t *inner)
{
    const struct memest_shape *s = &L->out_shape;
    *outer = batch;
    *inner = 1;
    *n = 1;
    for (unsigned i = 0; i < s->rank; i++) {
        /* within the output's element count, checked by libmemest */
        const size_t d = (size_t)s->dim[i];
        if (i < L->axis) {
            *outer *= d;
        } else if (i == L->axis) {
            *n = d;
        } else {
            *inner *= d;
        }
    }
}

/* Softmax or log-softmax along the layer's axis of a [outer][n][inner]
 * tensor: directly on the rows when the axis is the last (inner 1: a
 * vector's or a sequence's features), else transposed to [outer * inner]
 * [n] in t32, normalised and transposed back (the channels of C x H x W,
 * the steps of T x D). */
static int softmax_axis(const prof_exec *ex, const struct exec_op *op,
                        bool log_sm, const float *x, float *y)
{
    size_t O, N, I;
    exec_softmax_geometry(op->layer, ex->batch, &O, &N, &I);
    if (I == 1) {
        return exec_kern_status(log_sm ? kern_nn_log_softmax_f32(x, O, N, y)
                                       : kern_nn_softmax_f32(x, O, N, y));
    }
    for (size_t o = 0; o < O; o++) {
        for (size_t c = 0; c < N; c++) {
            const float *src = x + (o * N + c) * I;
            for (size_t i = 0; i < I; i++) {
                ex->t32[(o * I + i) * N + c] = src[i];
            }
        }
    }
    int kst = log_sm ? kern_nn_log_softmax_f32(ex->t32, O * I, N, ex->t32)
                     : kern_nn_softmax_f32(ex->t32, O * I, N, ex->t32);
    if (kst != KERN_OK) {
        return exec_kern_status(kst);
    }
    for (size_t o = 0; o < O; o++) {
        for (size_t c = 0; c < N; c++) {
            float *dst = y + (o * N + c) * I;
            for (size_t i = 0; i < I; i++) {
                dst[i] = ex->t32[(o * I + i) * N + c];
            }
        }
    }
    return PROF_OK;
}

/* The gradient of a softmax (y = softmax(x) along the axis: gx = y (g -
 * sum(g y))) or log-softmax (gx = g - exp(y) sum(g)) from its output y, n
 * elements of the layer's output shape (the batch is n over a sample's
 * elements). Sums in double; gin may equal g (each line's sum is taken
 * before it is written). */
static int softmax_backward(const struct memest_layer *L, bool log_sm,
                            float *gin, const float *g, const float *y,
                            size_t n)
{
    size_t O, N, I;
    if (y == NULL || L->output_elements == 0) {
        return PROF_E_INVALID;
    }
    exec_softmax_geometry(L, n / (size_t)L->output_elements, &O, &N, &I);
    for (size_t o = 0; o < O; o++) {
        for (size_t i = 0; i < I; i++) {
            const size_t base = o * N * I + i;
            double s = 0.0;
            for (size_t c = 0; c < N; c++) {
                const size_t k = base + c * I;
                s += log_sm ? (double)g[k] : (double)g[k] * y[k];
            }
            for (size_t c = 0; c < N; c++) {
                const size_t k = base + c * I;
                gin[k] = log_sm ? (float)(g[k] - exp(y[k]) * s)
                                : (float)(y[k] * (g[k] - s));
            }
        }
    }
    return PROF_OK;
}

int exec_apply_act(const prof_exec *ex, const struct exec_op *op,
                   enum memest_act act, const float *x, float *y)
{
    if (act == MEMEST_ACT_SOFTMAX || act == MEMEST_ACT_LOGSOFTMAX) {
        return softmax_axis(ex, op, act == MEMEST_ACT_LOGSOFTMAX, x, y);
    }
    return exec_apply_act_n(op, act, x, y, op->out_n);
}

int exec_apply_act_n(const struct exec_op *op, enum memest_act act,
                     const float *x, float *y, size_t n)
{
    const struct memest_layer *L = op->layer;
    int kst = KERN_OK;
    switch (act) {
    case MEMEST_ACT_NONE:
        if (x != y) {
            memcpy(y, x, n * sizeof(float));
        }
        break;
    case MEMEST_ACT_RELU:
        kst = kern_relu_f32(y, x, n);
        break;
    case MEMEST_ACT_GELU:
        kst = kern_gelu_f32(y, x, n);
        break;
    case MEMEST_ACT_GELU_ERF:
        kst = kern_gelu_erf_f32(y, x, n);
        break;
    case MEMEST_ACT_SIGMOID:
        kst = kern_sigmoid_f32(y, x, n);
        break;
    case MEMEST_ACT_TANH:
        kst = kern_tanh_f32(y, x, n);
        break;
    case MEMEST_ACT_RELU6:
        kst = kern_nn_relu6_f32(y, x, n);
        break;
    case MEMEST_ACT_ERF:
        kst = kern_erf_f32(y, x, n);
        break;
    case MEMEST_ACT_SILU:
        kst = kern_silu_f32(y, x, n);
        break;
    case MEMEST_ACT_SOFTPLUS:
        kst = kern_softplus_f32(y, x, n);
        break;
    case MEMEST_ACT_HARDSWISH:
        kst = kern_hard_swish_f32(y, x, n);
        break;
    /* the parameters were checked finite and within float's range when
     * the layer was built (clip's bounds may be infinite) */
    case MEMEST_ACT_HARDSIGMOID:
        kst = kern_hard_sigmoid_f32(y, x, n, (float)L->act_alpha,
                                    (float)L->act_beta);
        break;
    case MEMEST_ACT_LEAKYRELU:
        kst = kern_leaky_relu_f32(y, x, n, (float)L->act_alpha);
        break;
    case MEMEST_ACT_ELU:
        kst = kern_elu_f32(y, x, n, (float)L->act_alpha);
        break;
    case MEMEST_ACT_CLIP:
        kst = kern_clip_f32(y, x, n, (float)L->act_alpha,
                            (float)L->act_beta);
        break;
    default: /* softmax and log-softmax: exec_apply_act */
        return PROF_E_INVALID;
    }
    return exec_kern_status(kst);
}

/* The derivatives of the activations of the mobile networks, from the
 * forward output y where it determines them (so that a fused one needs
 * no pre-activation kept), from the input x for silu and hardswish (whose
 * outputs do not: x is there only for a standalone layer; the trainer
 * refuses them fused). Parameters are the layer's (alpha, beta); the
 * conventions at the kinks follow PyTorch's backward: hardsigmoid's and
 * clip's derivative is 1 (alpha) strictly inside the range, leakyrelu's
 * and elu's the slope of x <= 0 at 0. */
static int act_param_backward(enum memest_act act, double alpha,
                              double beta, float *gin, const float *g,
                              const float *x, const float *y, size_t n)
{
    const float a = (float)alpha, b = (float)beta;
    if (act == MEMEST_ACT_SILU || act == MEMEST_ACT_HARDSWISH) {
        if (x == NULL) {
            return PROF_E_INVALID;
        }
    } else if (y == NULL && !(act == MEMEST_ACT_CLIP && x != NULL)) {
        return PROF_E_INVALID;
    }
    for (size_t i = 0; i < n; i++) {
        float d = 0.0f;
        switch (act) {
        case MEMEST_ACT_SILU: {
            const float s = 1.0f / (1.0f + expf(-x[i]));
            d = s * (1.0f + x[i] * (1.0f - s));
            break;
        }
        case MEMEST_ACT_HARDSWISH:
            /* PyTorch's: 0 below -3, 1 above 3, (2x + 3) / 6 between */
            d = x[i] < -3.0f  ? 0.0f
                : x[i] > 3.0f ? 1.0f
                              : (2.0f * x[i] + 3.0f) / 6.0f;
            break;
        case MEMEST_ACT_SOFTPLUS:
            /* sigmoid(x) = 1 - exp(-softplus(x)) */
            d = -expm1f(-y[i]);
            break;
        case MEMEST_ACT_HARDSIGMOID:
            d = y[i] > 0.0f && y[i] < 1.0f ? a : 0.0f;
            break;
        case MEMEST_ACT_LEAKYRELU:
            /* with alpha >= 0, y > 0 exactly when x > 0 */
            d = y[i] > 0.0f ? 1.0f : a;
            break;
        case MEMEST_ACT_ELU:
            /* with alpha > 0, y > 0 exactly when x > 0; below,
             * alpha exp(x) = y + alpha */
            d = y[i] > 0.0f ? 1.0f : y[i] + a;
            break;
        case MEMEST_ACT_CLIP:
            /* standalone, PyTorch's: 1 for lo <= x <= hi; fused, from
             * the output: 1 strictly inside (the trainer refuses a fused
             * clip whose bounds its 16-bit storage would round) */
            d = x != NULL ? (x[i] >= a && x[i] <= b ? 1.0f : 0.0f)
                : y[i] > a && y[i] < b ? 1.0f
                                       : 0.0f;
            break;
        case MEMEST_ACT_NONE:
        case MEMEST_ACT_RELU:
        case MEMEST_ACT_GELU:
        case MEMEST_ACT_SIGMOID:
        case MEMEST_ACT_TANH:
        case MEMEST_ACT_SOFTMAX:
        case MEMEST_ACT_RELU6:
        case MEMEST_ACT_LOGSOFTMAX:
        case MEMEST_ACT_ERF:
        case MEMEST_ACT_GELU_ERF:
            return PROF_E_INVALID;
        }
        gin[i] = g[i] * d;
    }
    return PROF_OK;
}

bool exec_act_trainable(enum memest_act act, double alpha, bool fused)
{
    switch (act) {
    case MEMEST_ACT_NONE:
    case MEMEST_ACT_RELU:
    case MEMEST_ACT_GELU:
    case MEMEST_ACT_SIGMOID:
    case MEMEST_ACT_TANH:
    case MEMEST_ACT_RELU6:
    case MEMEST_ACT_SOFTMAX:
    case MEMEST_ACT_SOFTPLUS:
    case MEMEST_ACT_HARDSIGMOID:
    case MEMEST_ACT_CLIP:
        return true;
    case MEMEST_ACT_LEAKYRELU:
        return alpha >= 0.0;
    case MEMEST_ACT_ELU:
        return alpha > 0.0;
    case MEMEST_ACT_SILU:
    case MEMEST_ACT_HARDSWISH:
        return !fused;
    case MEMEST_ACT_LOGSOFTMAX:
        return !fused;
    case MEMEST_ACT_GELU_ERF:
        return true;
    case MEMEST_ACT_ERF:
        return false;
    }
    return false;
}

int exec_act_backward(const struct memest_layer *L, enum memest_act act,
                      float *gin, const float *g, const float *x,
                      const float *y, size_t n)
{
    switch (act) {
    case MEMEST_ACT_SILU:
    case MEMEST_ACT_HARDSWISH:
    case MEMEST_ACT_SOFTPLUS:
    case MEMEST_ACT_HARDSIGMOID:
    case MEMEST_ACT_LEAKYRELU:
    case MEMEST_ACT_ELU:
    case MEMEST_ACT_CLIP:
        return act_param_backward(act, L->act_alpha, L->act_beta, gin, g, x,
                                  y, n);
    case MEMEST_ACT_NONE:
        if (gin != g) {
            memcpy(gin, g, n * sizeof(float));
        }
        return PROF_OK;
    case MEMEST_ACT_RELU:
        /* y = relu(x) > 0 exactly when x > 0, so y serves as well */
        return exec_kern_status(kern_relu_backward_f32(gin, g, x ? x : y, n));
    case MEMEST_ACT_GELU:
        return exec_kern_status(kern_gelu_backward_f32(gin, g, x, n));
    case MEMEST_ACT_GELU_ERF:
        return exec_kern_status(kern_gelu_erf_backward_f32(gin, g, x, n));
    case MEMEST_ACT_SIGMOID:
        return exec_kern_status(kern_sigmoid_backward_f32(gin, g, y, n));
    case MEMEST_ACT_TANH:
        return exec_kern_status(kern_tanh_backward_f32(gin, g, y, n));
    case MEMEST_ACT_RELU6:
        return exec_kern_status(kern_nn_relu6_backward_f32(gin, g, y, n));
    case MEMEST_ACT_SOFTMAX:
    case MEMEST_ACT_LOGSOFTMAX:
        return softmax_backward(L, act == MEMEST_ACT_LOGSOFTMAX, gin, g, y,
                                n);
    default:
        return PROF_E_INVALID;
    }
}

int exec_fused_act_backward(const struct exec_op *op,
                            const struct exec_grad_args *a)
{
    const enum memest_act act = op->layer->act;
    if (a->loss_softmax || a->act_done || act == MEMEST_ACT_NONE) {
        return PROF_OK;
    }
    /* the pre-activation is kept for the two gelus only (the 16-bit
     * trainer passes its widened output there for the others): every
     * other fused activation's derivative is read from y */
    return exec_act_backward(op->layer, act, a->g, a->g,
                             exec_act_keeps_pre(act) ? a->pre : NULL, a->y,
                             op->out_n);
}

static unsigned act_caps(const struct exec_op *op)
{
    return exec_blk_possible(op) && op->c_out % KERN_CBLOCK == 0
               ? EXEC_BLK_IN | EXEC_BLK_OUT | EXEC_BLK_SAME
               : 0u;
}

/* The layer's act is its function: applied whether or not a->fused. */
static int act_run_f32(prof_exec *ex, const struct exec_op *op,
                       const struct exec_f32_args *a)
{
    return exec_apply_act(ex, op, op->layer->act, a->x, a->y);
}

static int act_backward(prof_exec *ex, const struct exec_op *op,
                        const struct exec_grad_args *a)
{
    (void)ex;
    if (!a->gx) {
        return PROF_OK;
    }
    if (a->loss_softmax) {
        memcpy(a->gx, a->g, op->in_n * sizeof(float));
        return PROF_OK;
    }
    return exec_act_backward(op->layer, op->layer->act, a->gx, a->g, a->x,
                             a->y, op->out_n);
}

static unsigned act_reads(const struct exec_op *op, bool loss_softmax)
{
    const enum memest_act act = op->layer->act;
    if (loss_softmax) {
        return 0;
    }
    if (act == MEMEST_ACT_RELU || exec_act_keeps_pre(act) ||
        act == MEMEST_ACT_SILU || act == MEMEST_ACT_HARDSWISH ||
        act == MEMEST_ACT_CLIP) {
        return EXEC_READS_X;
    }
    if (act == MEMEST_ACT_SIGMOID || act == MEMEST_ACT_TANH ||
        act == MEMEST_ACT_RELU6 || act == MEMEST_ACT_SOFTPLUS ||
        act == MEMEST_ACT_SOFTMAX || act == MEMEST_ACT_LOGSOFTMAX ||
        act == MEMEST_ACT_HARDSIGMOID || act == MEMEST_ACT_LEAKYRELU ||
        act == MEMEST_ACT_ELU) {
        return EXEC_READS_Y;
    }
    return 0;
}

const struct exec_op_vtable exec_op_activation = {
    .scratch = exec_scratch_float_input,
    .layout_caps = act_caps,
    .run_f32 = act_run_f32,
    .backward_f32 = act_backward,
    .backward_reads = act_reads,
};
