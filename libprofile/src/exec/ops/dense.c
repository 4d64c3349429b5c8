/* A dense (fully connected) layer: y = x . W + b, then its activation;
 * on a T x D sequence the same over the last axis, one GEMM whose rows are
 * the batch's T * batch positions (nn.Linear on N x T x D).
 * Its master weights are kept input-major, [in][out], so that the product
 * runs on kern_sgemm's untransposed path without copying B on every call
 * (exec_w_slot translates from the API's [out][in]). 16-bit storage runs
 * it tile by tile; int8 on a packed int8 GEMM (static int8 with its
 * integer output stage fused). */
#include <stdlib.h>

#include "edgefit/kernels.h"
#include "edgefit/profile.h"
#include "exec/ops.h"
#include "../../alloc_rec.h" /* last: it wraps malloc and co. */

static int dense_plan(prof_exec *ex, struct exec_op *op,
                      struct prof_diag *diag)
{
    (void)ex;
    (void)diag;
    const struct memest_layer *L = op->layer;
    /* per position: D features in, N out; the positions are GEMM rows */
    op->steps = L->in_shape.rank == 2 ? (size_t)L->in_shape.dim[0] : 1;
    op->c_in = (size_t)L->in_shape.dim[L->in_shape.rank - 1];
    op->c_out = (size_t)L->units;
    op->h_in = op->w_in = op->h_out = op->w_out = op->hw_out = 1;
    op->kdim = op->c_in;
    op->ocg = op->c_out;
    op->w_input_major = true;
    return PROF_OK;
}

/* The GEMM's rows: every position of every sample (checked: they are
 * out_n / c_out). */
static size_t dense_rows(const prof_exec *ex, const struct exec_op *op)
{
    return ex->batch * op->steps;
}

/* Tiles of about 8192 floats (32 KiB) of input rows and 32768 (128 KiB)
 * of weight columns: small beside what 16-bit storage saves on a layer
 * whose operands are large, and wide enough (32 columns and more of a
 * 784-input layer) that kern_sgemm keeps its speed and the inputs are not
 * widened more than a few times (mlp:784-256-256-10 at batch 32: 0.29-0.44
 * ms for the operators against 0.29-0.39 widening whole operands, runs
 * side by side on a busy two-core machine). Weight columns in multiples of
 * 16 (whole vectors of every SIMD path) unless the layer has fewer. */
#define DENSE16_TILE_FLOATS 8192u

static void dense_tiles(const prof_exec *ex, struct exec_op *op)
{
    const size_t k = op->kdim ? op->kdim : 1;
    size_t nb = 4u * DENSE16_TILE_FLOATS / k / 16u * 16u;
    if (nb < 16u) {
        nb = 16u;
    }
    op->tile_n = nb < op->c_out ? nb : op->c_out;
    size_t mb = DENSE16_TILE_FLOATS / k;
    if (mb < 1u) {
        mb = 1u;
    }
    op->tile_m = mb < dense_rows(ex, op) ? mb : dense_rows(ex, op);
}

static int dense_scratch(const prof_exec *ex, struct exec_op *op,
                         struct exec_scratch *n)
{
    const enum memest_precision p = ex->precision;
    if (p == MEMEST_FP16 || p == MEMEST_BF16) {
        /* Tiles of the input rows and weight columns, not the whole
         * operands: widening all of a 784 x 64 layer's weights and a
         * batch of inputs took 309,504 B of scratch, more than fp32's
         * whole arena, for a precision meant to need less memory. */
        dense_tiles(ex, op);
        n->x32 = op->tile_m * op->kdim;
        n->w32 = op->kdim * op->tile_n;
        n->b32 = op->bn;
    } else if (memest_precision_is_int8(p)) {
        n->acc = op->out_n;
    }
    return PROF_OK;
}

static void dense_init(struct exec_op *op, uint64_t *rng)
{
    exec_init_uniform(op, (double)op->kdim, (double)op->layer->units, rng);
}

/* int8 only: fp32 runs the master. */
static int dense_alloc_stored(prof_exec *ex, struct exec_op *op)
{
    return memest_precision_is_int8(ex->precision) ? exec_q8_alloc_gemm(ex, op)
                                        : PROF_OK;
}

static int dense_store(prof_exec *ex, struct exec_op *op)
{
    if (!memest_precision_is_int8(ex->precision)) {
        return PROF_OK;
    }
    /* Channels are rows of [out][in]: the input-major master is turned
     * back for this (once per weight update). */
    float *rows = malloc(op->wn * sizeof *rows);
    if (!rows) {
        return PROF_E_NOMEM;
    }
    for (size_t i = 0; i < op->wn; i++) {
        rows[i] = op->w[exec_w_slot(op, i)];
    }
    const int st = exec_q8_store_gemm(ex, op, rows);
    free(rows);
    return st;
}

/* The output pass of a split dense layer (bias, then an element-wise
 * activation) on its rows [lo, hi), so that it is split too when it has
 * DENSE_OUT_SPLIT elements or more: a GELU on a transformer's 99 x 256
 * hidden layer costs as much as its product (KWT on two threads: 0.88 ->
 * 0.80 of its one-thread time), while splitting the bias and relu of the
 * FC autoencoder's 8 x 640 outputs made it slower than one thread. */
enum { DENSE_OUT_SPLIT = 16384 };

struct dense_out {
    const struct exec_op *op;
    const float *b; /* NULL: no bias */
    enum memest_act act;
    float *y;
};

static int dense_out_part(void *arg, size_t part, size_t lo, size_t hi)
{
    (void)part;
    const struct dense_out *d = arg;
    const size_t n = d->op->c_out;
    float *y = d->y + lo * n;
    int st = PROF_OK;
    if (d->b) {
        st = exec_kern_status(kern_nn_bias_add_f32(y, hi - lo, n, d->b));
    }
    if (st == PROF_OK && d->act != MEMEST_ACT_NONE) {
        st = exec_apply_act_n(d->op, d->act, y, y, (hi - lo) * n);
    }
    return st;
}

static int dense_run_f32(prof_exec *ex, const struct exec_op *op,
                         const struct exec_f32_args *a)
{
    const size_t m = dense_rows(ex, op);
    int st = exec_sgemm(ex, op, m, op->c_out, op->kdim, a->x, op->kdim, a->w,
                        op->c_out, a->y, op->c_out);
    const unsigned t = exec_op_threads(ex, op);
    const enum memest_act act = a->fused ? op->layer->act : MEMEST_ACT_NONE;
    if (st == PROF_OK && t > 1 && m > 1 && op->out_n >= DENSE_OUT_SPLIT &&
        act != MEMEST_ACT_SOFTMAX && act != MEMEST_ACT_LOGSOFTMAX) {
        struct dense_out d = {op, op->bn ? a->b : NULL, act, a->y};
        return exec_split(m, t, dense_out_part, &d);
    }
    if (st == PROF_OK && op->bn && a->b) {
        st = exec_kern_status(
            kern_nn_bias_add_f32(a->y, m, op->c_out, a->b));
    }
    return exec_then_act(ex, op, a, st);
}

/*
 * A dense layer stored in 16 bits, computed in fp32 tile by tile: for each
 * block of tile_n weight columns (widened once), each block of tile_m input
 * rows is widened and multiplied into the fp32 result y32, whose every
 * element still sums over all K inputs in one product, as in the untiled
 * layer. Then the bias and the activation on the whole result, narrowed
 * into the arena.
 */
static int dense_run_16(prof_exec *ex, const struct exec_op *op)
{
    const uint16_t *x = (const uint16_t *)(ex->arena + op->in_off);
    const size_t m = dense_rows(ex, op), k = op->kdim, n = op->c_out;
    int st = PROF_OK;
    for (size_t j0 = 0; st == PROF_OK && j0 < n; j0 += op->tile_n) {
        const size_t nb = n - j0 < op->tile_n ? n - j0 : op->tile_n;
        /* weights are input-major, [k][n]: one row piece per input */
        for (size_t kk = 0; st == PROF_OK && kk < k; kk++) {
            st = exec_widen(ex, ex->w32 + kk * nb, op->w16 + kk * n + j0, nb);
        }
        for (size_t i0 = 0; st == PROF_OK && i0 < m; i0 += op->tile_m) {
            const size_t mb = m - i0 < op->tile_m ? m - i0 : op->tile_m;
            st = exec_widen(ex, ex->x32, x + i0 * k, mb * k);
            if (st == PROF_OK) {
                st = exec_sgemm(ex, op, mb, nb, k, ex->x32, k, ex->w32, nb,
                                ex->y32 + i0 * n + j0, n);
            }
        }
    }
    if (st == PROF_OK && op->bn) {
        st = exec_widen(ex, ex->b32, op->b16, op->bn);
        if (st == PROF_OK) {
            st = exec_kern_status(
                kern_nn_bias_add_f32(ex->y32, m, n, ex->b32));
        }
    }
    if (st == PROF_OK) {
        st = exec_apply_act(ex, op, op->layer->act, ex->y32, ex->y32);
    }
    if (st == PROF_OK) {
        st = exec_narrow(ex, (uint16_t *)(ex->arena + op->out_off), ex->y32,
                         op->out_n);
    }
    return st;
}

static int dense_run_s8(prof_exec *ex, const struct exec_op *op)
{
    const int8_t *x = (const int8_t *)(ex->arena + op->in_off);
    const enum memest_act act = op->layer->act;
    const size_t m = dense_rows(ex, op);
    int st = exec_q8_gemm(ex, op, m, op->c_out, op->kdim, x, op->kdim,
                          op->wpack, ex->acc, op->c_out);
    if (st != PROF_OK) {
        return st;
    }
    const int kst = kern_q8_requant_f32(m, op->c_out, ex->acc,
                                        op->c_out, exec_input_scale(ex, op),
                                        op->wscale, op->bn ? op->b : NULL,
                                        act == MEMEST_ACT_RELU, ex->y32,
                                        op->c_out);
    if (kst != KERN_OK) {
        return exec_kern_status(kst);
    }
    if (act != MEMEST_ACT_RELU) {
        st = exec_apply_act(ex, op, act, ex->y32, ex->y32);
        if (st != PROF_OK) {
            return st;
        }
    }
    return exec_quantize_out(ex, op);
}

/* Static int8: the packed int8 GEMM with the input's zero point and the
 * integer output stage fused (kern_q8_gemm_s8), a relu, relu6 or clip as
 * its clamp, straight into the arena. Any other activation, and a final
 * softmax: the int32 sums to float (the real values the stage would
 * requantise), the activation in float, quantised with the output's
 * params (or kept: a final softmax is the model's output). */
static int dense_run_s8s(prof_exec *ex, const struct exec_op *op)
{
    const int8_t *x = (const int8_t *)(ex->arena + op->in_off);
    const int32_t zx = exec_input_zero(ex, op);
    const size_t m = dense_rows(ex, op);
    if (!op->s8_float_act && !exec_s8_final_float(ex, op)) {
        const struct kern_q8_outstage os = exec_s8_outstage(ex, op, 0);
        return exec_q8_gemm_s8(ex, op, m, op->c_out, op->kdim, x,
                               op->kdim, zx, op->wpack, op->wsum, &os,
                               (int8_t *)(ex->arena + op->out_off),
                               op->c_out);
    }
    int st = exec_q8_gemm(ex, op, m, op->c_out, op->kdim, x, op->kdim,
                          op->wpack, ex->acc, op->c_out);
    if (st != PROF_OK) {
        return st;
    }
    exec_s8_acc_fix(ex, op, ex->acc, m, op->c_out, op->c_out, 0);
    const int kst = kern_q8_requant_f32(m, op->c_out, ex->acc,
                                        op->c_out, exec_input_scale(ex, op),
                                        op->wscale, NULL, 0, ex->y32,
                                        op->c_out);
    if (kst != KERN_OK) {
        return exec_kern_status(kst);
    }
    st = exec_apply_act(ex, op, op->layer->act, ex->y32, ex->y32);
    return st == PROF_OK ? exec_quantize_out(ex, op) : st;
}

/* dZ = g after the fused activation; dW [in][out] = X^T . dZ (the
 * master's input-major layout), db = column sums (unless gb is NULL: a
 * folded batch norm's beta takes the bias's place), dX = dZ . W^T. */
static int dense_backward(prof_exec *ex, const struct exec_op *op,
                          const struct exec_grad_args *a)
{
    int st = exec_fused_act_backward(op, a);
    if (st != PROF_OK) {
        return st;
    }
    const size_t B = dense_rows(ex, op), in = op->kdim, o = op->c_out;
    int k = kern_sgemm(KERN_MM_TRANS_A, in, o, B, a->x, in, a->g, o, a->gw,
                       o);
    if (k == KERN_OK && op->bn && a->gb) {
        k = kern_nn_bias_grad_f32(a->g, B, o, a->gb);
    }
    if (k == KERN_OK && a->gx) {
        k = kern_sgemm(KERN_MM_TRANS_B, B, in, o, a->g, o, op->w, o, a->gx,
                       in);
    }
    return exec_kern_status(k);
}

/* The input always; the output when the activation's derivative is taken
 * from it (all but gelu, whose pre-activation the trainer keeps). */
static unsigned dense_reads(const struct exec_op *op, bool loss_softmax)
{
    const enum memest_act act = op->layer->act;
    return EXEC_READS_X |
           (!loss_softmax && act != MEMEST_ACT_NONE && !exec_act_keeps_pre(act)
                ? EXEC_READS_Y
                : 0u);
}

const struct exec_op_vtable exec_op_dense = {
    .threaded = true,
    .plan = dense_plan,
    .scratch = dense_scratch,
    .init_params = dense_init,
    .alloc_stored = dense_alloc_stored,
    .store = dense_store,
    .run_f32 = dense_run_f32,
    .run_16 = dense_run_16,
    .run_s8 = dense_run_s8,
    .run_s8s = dense_run_s8s,
    .backward_f32 = dense_backward,
    .backward_reads = dense_reads,
};
