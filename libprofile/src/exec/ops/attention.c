/* libmemest's "attention heads=H": nn.MultiheadAttention(D, H,
 * batch_first=True) as self-attention on each sample's T x D sequence.
 * The parameters are the state_dict's, concatenated: w = in_proj_weight
 * [3D][D] then out_proj.weight [D][D], b = in_proj_bias [3D] then
 * out_proj.bias [D] (none with bias=no).
 *
 * One sample at a time: QKV = x Win^T + bin (T x 3D, kern_sgemm), then
 * head by head, with d = D / H, S = Q_h K_h^T (T x T) scaled by
 * 1/sqrt(d), a softmax over each row (the keys), ctx_h = P V_h into the
 * head's columns of ctx (T x D), and y = ctx Wout^T + bout. QKV and ctx
 * are the operator's scratch (col32, 4 T D floats); the score matrix is
 * libmemest's working block of the layer (memest_layer.work_elements, T x
 * T a sample), placed in the arena by the plan and alive only during the
 * layer. At fp32 it holds the scores in float. At 16-bit and int8 storage
 * (the generic paths: the input widened or dequantised, the float
 * operator, the result narrowed or quantised) the block has 2 or 1 bytes
 * an element, so the scores go a row at a time through a T-float row of
 * the scratch and the block keeps the probabilities at the storage
 * precision: fp16/bf16 rounded, int8 as q = round(255 p) - 128 (scale
 * 1/255, zero point -128, TFLite's softmax output scheme with 255 steps
 * over [0, 1]); A.V reads them back. The trainer, which has no arena,
 * keeps one float T x T in the scratch instead.
 *
 * The backward pass recomputes QKV, each head's probabilities and ctx
 * for each sample and takes the gradients of x and of every parameter
 * through the same products transposed; its buffers (8 T D + 2 T T
 * floats) are the trainer's scratch, which attn_scratch sizes for them
 * when the executor is the trainer's (libmemest's train_work counts the
 * same). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "edgefit/kernels.h"
#include "edgefit/profile.h"
#include "exec/ops.h"

struct attn_geom {
    size_t T, D, H, d;
    float scale;
};

static struct attn_geom geom_of(const struct exec_op *op)
{
    const struct memest_layer *L = op->layer;
    struct attn_geom g;
    g.T = (size_t)L->in_shape.dim[0];
    g.D = (size_t)L->in_shape.dim[1];
    g.H = (size_t)L->heads;
    g.d = g.H ? g.D / g.H : 0;
    g.scale = (float)(1.0 / sqrt((double)g.d));
    return g;
}

static int attn_plan(prof_exec *ex, struct exec_op *op,
                     struct prof_diag *diag)
{
    const struct memest_layer *L = op->layer;
    const struct attn_geom g = geom_of(op);
    size_t t;
    if (L->in_shape.rank != 2 || g.H == 0 || g.D % g.H != 0 ||
        op->wn != 4 * g.D * g.D || (op->bn != 0 && op->bn != 4 * g.D)) {
        exec_diag_set(diag, "%s: attention needs a T x D input, heads that "
                      "divide D and 4 D x D weights", L->name);
        return PROF_E_RANGE;
    }
    /* the scratch's 4 T D + T T floats (attn_scratch) and the backward
     * pass's 8 T D + 2 T T, in bytes */
    size_t td, tt;
    if (exec_mul3_sz(8, g.T, g.D, &td) != PROF_OK ||
        exec_mul3_sz(2, g.T, g.T, &tt) != PROF_OK || td > SIZE_MAX - tt ||
        exec_mul_sz(td + tt, sizeof(float), &t) != PROF_OK) {
        return PROF_E_OVERFLOW;
    }
    (void)ex;
    return PROF_OK;
}

/* Scratch col32: QKV (3 T D) and ctx (T D); a row of T scores when the
 * block is not float (16-bit, int8), the whole T x T when there is no
 * arena (the trainer). 16-bit widens the parameters into w32, b32. */
static int attn_scratch(const prof_exec *ex, struct exec_op *op,
                        struct exec_scratch *n)
{
    const struct attn_geom g = geom_of(op);
    n->col32 = 4 * g.T * g.D;
    if (ex->lowering) {
        /* the trainer: the forward's 4 T D + T T, and the backward's
         * 8 T D + 2 T T (the larger) */
        n->col32 = 8 * g.T * g.D + 2 * g.T * g.T;
    } else if (ex->precision != MEMEST_FP32) {
        n->col32 += g.T;
    }
    if (ex->precision == MEMEST_FP16 || ex->precision == MEMEST_BF16) {
        n->w32 = op->wn;
        n->b32 = op->bn;
    }
    return exec_scratch_float_input(ex, op, n);
}

static void attn_init(struct exec_op *op, uint64_t *rng)
{
    /* nn.MultiheadAttention: xavier_uniform_ on in_proj_weight, whose
     * fans are D and 3D, bound sqrt(6 / 4D); zero biases. The out
     * projection keeps nn.Linear's bound 1/sqrt(D): its draws are
     * rescaled from the first bound to that one. */
    const struct attn_geom g = geom_of(op);
    exec_init_uniform(op, (double)g.D, 3.0 * (double)g.D, rng);
    const float a = (float)(1.0 / sqrt((double)g.D));
    for (size_t i = 3 * g.D * g.D; i < op->wn; i++) {
        op->w[i] = op->w[i] * a / (float)sqrt(6.0 / (4.0 * (double)g.D));
    }
    for (size_t i = 0; i < op->bn; i++) {
        op->b[i] = 0.0f;
    }
}

/* QKV = x Win^T + bin for one sample. */
static int project_in(const struct attn_geom *g, const float *x,
                      const float *w, const float *b, float *qkv)
{
    const size_t D3 = 3 * g->D;
    int kst = kern_sgemm(KERN_MM_TRANS_B, g->T, D3, g->D, x, g->D, w, g->D,
                         qkv, D3);
    if (kst == KERN_OK && b) {
        for (size_t t = 0; t < g->T; t++) {
            for (size_t j = 0; j < D3; j++) {
                qkv[t * D3 + j] += b[j];
            }
        }
    }
    return exec_kern_status(kst);
}

/* P = softmax(Q_h K_h^T / sqrt(d)) over the keys, T x T in float. */
static int head_probs(const struct attn_geom *g, const float *qkv, size_t h,
                      float *p)
{
    const size_t D3 = 3 * g->D;
    int kst = kern_sgemm(KERN_MM_TRANS_B, g->T, g->T, g->d, qkv + h * g->d,
                         D3, qkv + g->D + h * g->d, D3, p, g->T);
    if (kst != KERN_OK) {
        return exec_kern_status(kst);
    }
    for (size_t i = 0; i < g->T * g->T; i++) {
        p[i] *= g->scale;
    }
    return exec_kern_status(kern_nn_softmax_f32(p, g->T, g->T, p));
}

/* One query row's probabilities through a float row r into the block's
 * row at the storage precision, and back into r as the values A.V will
 * read (rounded as stored). */
static int row_store(const prof_exec *ex, float *r, size_t T,
                     unsigned char *blk_row)
{
    if (ex->precision == MEMEST_FP16 || ex->precision == MEMEST_BF16) {
        int st = exec_narrow(ex, (uint16_t *)blk_row, r, T);
        return st == PROF_OK ? exec_widen(ex, r, (const uint16_t *)blk_row, T)
                             : st;
    }
    int8_t *q = (int8_t *)blk_row;
    int st = exec_s8_quantize(r, T, 1.0f / 255.0f, -128, q);
    if (st == PROF_OK) {
        exec_s8_dequantize(q, T, 1.0f / 255.0f, -128, r);
    }
    return st;
}

static int attn_sample(prof_exec *ex, const struct exec_op *op,
                       const struct attn_geom *g, const float *x,
                       const float *w, const float *b, float *y)
{
    const size_t T = g->T, D = g->D, D3 = 3 * D;
    float *qkv = ex->col32, *ctx = qkv + T * D3, *s = ctx + T * D;
    int st = project_in(g, x, w, b, qkv);
    const bool rows = ex->arena && ex->precision != MEMEST_FP32;
    if (ex->arena && !rows) {
        s = (float *)(ex->arena + op->work_off);
    }
    for (size_t h = 0; st == PROF_OK && h < g->H; h++) {
        const float *v = qkv + 2 * D + h * g->d;
        if (!rows) {
            st = head_probs(g, qkv, h, s);
            if (st == PROF_OK) {
                st = exec_kern_status(kern_sgemm(0, T, g->d, T, s, T, v, D3,
                                                 ctx + h * g->d, D));
            }
            continue;
        }
        const size_t eb = ex->sbytes;
        unsigned char *blk = ex->arena + op->work_off;
        for (size_t i = 0; st == PROF_OK && i < T; i++) {
            st = exec_kern_status(kern_sgemm(
                KERN_MM_TRANS_B, 1, T, g->d, qkv + i * D3 + h * g->d, D3,
                qkv + D + h * g->d, D3, s, T));
            for (size_t j = 0; st == PROF_OK && j < T; j++) {
                s[j] *= g->scale;
            }
            if (st == PROF_OK) {
                st = exec_kern_status(kern_nn_softmax_f32(s, 1, T, s));
            }
            if (st == PROF_OK) {
                st = row_store(ex, s, T, blk + i * T * eb);
            }
            if (st == PROF_OK) {
                st = exec_kern_status(kern_sgemm(0, 1, g->d, T, s, T, v, D3,
                                                 ctx + i * D + h * g->d, D));
            }
        }
    }
    if (st != PROF_OK) {
        return st;
    }
    st = exec_kern_status(kern_sgemm(KERN_MM_TRANS_B, T, D, D, ctx, D,
                                     w + 3 * D * D, D, y, D));
    if (st == PROF_OK && b) {
        for (size_t t = 0; t < T; t++) {
            for (size_t j = 0; j < D; j++) {
                y[t * D + j] += b[3 * D + j];
            }
        }
    }
    return st;
}

static int attn_run_f32(prof_exec *ex, const struct exec_op *op,
                        const struct exec_f32_args *a)
{
    const struct attn_geom g = geom_of(op);
    const size_t n = g.T * g.D;
    const float *b = op->bn ? a->b : NULL;
    int st = PROF_OK;
    for (size_t k = 0; st == PROF_OK && k < ex->batch; k++) {
        st = attn_sample(ex, op, &g, a->x + k * n, a->w, b, a->y + k * n);
    }
    return exec_then_act(ex, op, a, st);
}

/* Column sums of rows x cols into out (added). */
static void add_col_sums(const float *m, size_t rows, size_t cols,
                         float *out)
{
    for (size_t r = 0; r < rows; r++) {
        for (size_t c = 0; c < cols; c++) {
            out[c] += m[r * cols + c];
        }
    }
}

static int attn_backward(prof_exec *ex, const struct exec_op *op,
                         const struct exec_grad_args *a)
{
    const struct attn_geom g = geom_of(op);
    const size_t T = g.T, D = g.D, D3 = 3 * D, d = g.d;
    const float *w = op->w, *b = op->bn ? op->b : NULL;
    const float *wo = w + 3 * D * D;
    /* qkv, ctx, gctx, gqkv, then P and gP of one head: the trainer's
     * scratch (attn_scratch) */
    float *buf = ex->col32;
    float *qkv = buf, *ctx = qkv + T * D3, *gctx = ctx + T * D;
    float *gqkv = gctx + T * D, *p = gqkv + T * D3, *gp = p + T * T;
    int kst = KERN_OK;
    int st = PROF_OK;
    if (a->gw) {
        memset(a->gw, 0, op->wn * sizeof(float));
    }
    if (a->gb && op->bn) {
        memset(a->gb, 0, op->bn * sizeof(float));
    }
    for (size_t n = 0; st == PROF_OK && n < ex->batch; n++) {
        const float *x = a->x + n * T * D, *gy = a->g + n * T * D;
        st = project_in(&g, x, w, b, qkv);
        /* ctx again, head by head (P is recomputed below) */
        for (size_t h = 0; st == PROF_OK && h < g.H; h++) {
            st = head_probs(&g, qkv, h, p);
            if (st == PROF_OK) {
                st = exec_kern_status(kern_sgemm(0, T, d, T, p, T,
                                                 qkv + 2 * D + h * d, D3,
                                                 ctx + h * d, D));
            }
        }
        if (st != PROF_OK) {
            break;
        }
        /* out projection: gWo += gy^T ctx, gbo += sum gy, gctx = gy Wo */
        if (a->gw) {
            kst = kern_sgemm(KERN_MM_TRANS_A | KERN_MM_ACCUMULATE, D, D, T,
                             gy, D, ctx, D, a->gw + 3 * D * D, D);
        }
        if (a->gb && op->bn) {
            add_col_sums(gy, T, D, a->gb + 3 * D);
        }
        if (kst == KERN_OK) {
            kst = kern_sgemm(0, T, D, D, gy, D, wo, D, gctx, D);
        }
        for (size_t h = 0; kst == KERN_OK && h < g.H; h++) {
            const float *q = qkv + h * d, *k = qkv + D + h * d;
            const float *v = qkv + 2 * D + h * d, *gc = gctx + h * d;
            if ((st = head_probs(&g, qkv, h, p)) != PROF_OK) {
                break;
            }
            /* gP = gctx_h V_h^T; gV_h = P^T gctx_h */
            kst = kern_sgemm(KERN_MM_TRANS_B, T, T, d, gc, D, v, D3, gp, T);
            if (kst == KERN_OK) {
                kst = kern_sgemm(KERN_MM_TRANS_A, T, d, T, p, T, gc, D,
                                 gqkv + 2 * D + h * d, D3);
            }
            /* through the softmax: gS = P (gP - sum_j gP P), scaled */
            for (size_t i = 0; kst == KERN_OK && i < T; i++) {
                double dot = 0.0;
                for (size_t j = 0; j < T; j++) {
                    dot += (double)gp[i * T + j] * p[i * T + j];
                }
                for (size_t j = 0; j < T; j++) {
                    gp[i * T + j] = p[i * T + j] *
                                    (gp[i * T + j] - (float)dot) * g.scale;
                }
            }
            /* gQ_h = gS K_h; gK_h = gS^T Q_h */
            if (kst == KERN_OK) {
                kst = kern_sgemm(0, T, d, T, gp, T, k, D3, gqkv + h * d, D3);
            }
            if (kst == KERN_OK) {
                kst = kern_sgemm(KERN_MM_TRANS_A, T, d, T, gp, T, q, D3,
                                 gqkv + D + h * d, D3);
            }
        }
        if (st != PROF_OK) {
            break;
        }
        /* in projection: gWin += gqkv^T x, gbin += sum gqkv,
         * gx = gqkv Win */
        if (kst == KERN_OK && a->gw) {
            kst = kern_sgemm(KERN_MM_TRANS_A | KERN_MM_ACCUMULATE, D3, D, T,
                             gqkv, D3, x, D, a->gw, D);
        }
        if (kst == KERN_OK && a->gb && op->bn) {
            add_col_sums(gqkv, T, D3, a->gb);
        }
        if (kst == KERN_OK && a->gx) {
            kst = kern_sgemm(0, T, D, D3, gqkv, D3, w, D, a->gx + n * T * D,
                             D);
        }
        st = exec_kern_status(kst);
    }
    return st;
}

static unsigned attn_reads(const struct exec_op *op, bool loss_softmax)
{
    (void)op;
    (void)loss_softmax;
    return EXEC_READS_X;
}

const struct exec_op_vtable exec_op_attention = {
    .plan = attn_plan,
    .scratch = attn_scratch,
    .init_params = attn_init,
    .run_f32 = attn_run_f32,
    .backward_f32 = attn_backward,
    .backward_reads = attn_reads,
};
