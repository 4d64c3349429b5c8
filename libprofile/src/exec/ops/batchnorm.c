/* A standalone batch norm, folded to a per-channel scale and shift (its
 * weights and biases): y = x * scale[c] + shift[c], then its activation.
 * fp32 and int8 compute it on the float master (int8 has no packed form
 * of it); 16-bit storage widens its 16-bit copy. The trainer runs it in
 * training mode instead (exec_bn_train_f32, exec_bn_eval_f32, bn_backward:
 * gamma and beta in place of the scale and shift, see ops.h). */
#include <math.h>

#include "edgefit/kernels.h"
#include "edgefit/profile.h"
#include "exec/ops.h"

static int bn_plan(prof_exec *ex, struct exec_op *op, struct prof_diag *diag)
{
    (void)ex;
    if (op->wn != op->c_out || op->bn != op->c_out) {
        exec_diag_set(diag, "%s: a batchnorm needs one scale and one "
                      "shift per channel (%zu), the model gives %zu and "
                      "%zu", op->layer->name, op->c_out, op->wn, op->bn);
        return PROF_E_RANGE;
    }
    return PROF_OK;
}

static int bn_scratch(const prof_exec *ex, struct exec_op *op,
                      struct exec_scratch *n)
{
    /* its widened parameters, then its input in float */
    if (ex->precision == MEMEST_FP16 || ex->precision == MEMEST_BF16) {
        n->w32 = op->wn;
        n->b32 = op->bn;
    }
    return exec_scratch_float_input(ex, op, n);
}

/* PyTorch's fresh batch norm (weight 1, bias 0, running mean 0, variance
 * 1) folded: no draws, so the other layers' values do not depend on
 * where batch norms sit. */
static void bn_init(struct exec_op *op, uint64_t *rng)
{
    (void)rng;
    const float scale = (float)(1.0 / sqrt(1.0 + op->layer->bn_epsilon));
    for (size_t i = 0; i < op->wn; i++) {
        op->w[i] = scale;
    }
    for (size_t i = 0; i < op->bn; i++) {
        op->b[i] = 0.0f;
    }
}

static int bn_run_f32(prof_exec *ex, const struct exec_op *op,
                      const struct exec_f32_args *a)
{
    const int st = exec_kern_status(kern_nn_channel_affine_f32(
        a->x, ex->batch, op->c_out, op->hw_out, a->w, a->b, a->y));
    return exec_then_act(ex, op, a, st);
}

/* y = gamma (x - mean) inv + beta over channel c's positions. */
static void bn_apply(const struct exec_bn *bn, const float *x, float *y,
                     size_t c, double mean, double inv)
{
    const size_t C = bn->channels, hw = bn->hw;
    const float scale = (float)((double)bn->gamma[c] * inv);
    const float shift =
        (float)((double)bn->beta[c] - mean * (double)bn->gamma[c] * inv);
    for (size_t b = 0; b < bn->batch; b++) {
        const float *xs = x + (b * C + c) * hw;
        float *ys = y + (b * C + c) * hw;
        for (size_t k = 0; k < hw; k++) {
            ys[k] = xs[k] * scale + shift;
        }
    }
}

/* Mean and biased variance in double (two passes: the mean first, so the
 * variance does not cancel). PyTorch normalises with the biased variance
 * and keeps the unbiased one, n / (n - 1) times it, in its running
 * variance; the trainer refuses a batch norm with one value per channel
 * (n = 1), as PyTorch does in training. */
int exec_bn_train(const struct exec_bn *bn, const float *x, float *y,
                  float *stat, float *run)
{
    const size_t C = bn->channels, hw = bn->hw, n = bn->batch * hw;
    const double m = EXEC_BN_MOMENTUM;
    for (size_t c = 0; c < C; c++) {
        double sum = 0.0, sq = 0.0;
        for (size_t b = 0; b < bn->batch; b++) {
            const float *xs = x + (b * C + c) * hw;
            for (size_t k = 0; k < hw; k++) {
                sum += xs[k];
            }
        }
        const double mean = sum / (double)n;
        for (size_t b = 0; b < bn->batch; b++) {
            const float *xs = x + (b * C + c) * hw;
            for (size_t k = 0; k < hw; k++) {
                const double d = xs[k] - mean;
                sq += d * d;
            }
        }
        const double var = sq / (double)n;
        const double inv = 1.0 / sqrt(var + bn->eps);
        stat[c] = (float)mean;
        stat[C + c] = (float)inv;
        bn_apply(bn, x, y, c, mean, inv);
        const double unbiased = n > 1 ? sq / (double)(n - 1) : var;
        run[c] = (float)((1.0 - m) * run[c] + m * mean);
        run[C + c] = (float)((1.0 - m) * run[C + c] + m * unbiased);
    }
    return PROF_OK;
}

int exec_bn_eval(const struct exec_bn *bn, const float *x, float *y,
                 const float *run)
{
    const size_t C = bn->channels;
    for (size_t c = 0; c < C; c++) {
        bn_apply(bn, x, y, c, run[c],
                 1.0 / sqrt((double)run[C + c] + bn->eps));
    }
    return PROF_OK;
}

/* With xhat = (x - mean) inv and g the output's gradient, over the n
 * positions of each channel:
 *   dbeta = sum g, dgamma = sum g xhat,
 *   dx = gamma inv / n (n g - dbeta - xhat dgamma),
 * the batch statistics' own derivatives included (sums in double). gx
 * may be g (each element is read before it is written). */
int exec_bn_backward(const struct exec_bn *bn, const float *x,
                     const float *g, const float *stat, float *gx,
                     float *ggamma, float *gbeta)
{
    const size_t C = bn->channels, hw = bn->hw, n = bn->batch * hw;
    for (size_t c = 0; c < C; c++) {
        const double mean = stat[c], inv = stat[C + c];
        double sg = 0.0, sgx = 0.0;
        for (size_t b = 0; b < bn->batch; b++) {
            const float *xs = x + (b * C + c) * hw;
            const float *gs = g + (b * C + c) * hw;
            for (size_t k = 0; k < hw; k++) {
                sg += gs[k];
                sgx += gs[k] * ((xs[k] - mean) * inv);
            }
        }
        ggamma[c] = (float)sgx;
        gbeta[c] = (float)sg;
        if (!gx) {
            continue;
        }
        const double k0 = (double)bn->gamma[c] * inv / (double)n;
        for (size_t b = 0; b < bn->batch; b++) {
            const float *xs = x + (b * C + c) * hw;
            const float *gs = g + (b * C + c) * hw;
            float *dx = gx + (b * C + c) * hw;
            for (size_t k = 0; k < hw; k++) {
                const double xhat = (xs[k] - mean) * inv;
                dx[k] = (float)(k0 * ((double)n * gs[k] - sg - xhat * sgx));
            }
        }
    }
    return PROF_OK;
}

/* A standalone batch norm's: gamma and beta are its parameters. */
struct exec_bn exec_bn_of(const prof_exec *ex, const struct exec_op *op)
{
    return (struct exec_bn){ex->batch, op->c_out,          op->hw_out,
                            op->layer->bn_epsilon, op->w, op->b};
}

static int bn_backward(prof_exec *ex, const struct exec_op *op,
                       const struct exec_grad_args *a)
{
    const int st = exec_fused_act_backward(op, a);
    if (st != PROF_OK) {
        return st;
    }
    if (!a->stat) {
        return PROF_E_INVALID; /* the trainer's forward gave no statistics */
    }
    const struct exec_bn bn = exec_bn_of(ex, op);
    return exec_bn_backward(&bn, a->x, a->g, a->stat, a->gx, a->gw, a->gb);
}

/* The input (xhat), and the output for the fused activation. */
static unsigned bn_reads(const struct exec_op *op, bool loss_softmax)
{
    return EXEC_READS_X | (!loss_softmax && op->layer->act != MEMEST_ACT_NONE
                               ? EXEC_READS_Y
                               : 0u);
}

const struct exec_op_vtable exec_op_batchnorm = {
    .backward_f32 = bn_backward,
    .backward_reads = bn_reads,
    .plan = bn_plan,
    .scratch = bn_scratch,
    .init_params = bn_init,
    .run_f32 = bn_run_f32,
};
