/* libmemest's "matmul in=A,B": each sample's A [s_a][M][K] times B
 * [s_b][K][N] into [s][M][N], the stacks s_a, s_b broadcast (1 or
 * missing against s), by libkernels' batched product kern_matmul_nd
 * (kern_sgemm per matrix). Both operands are read from the arena, so every
 * precision has its own entry: 16-bit widens them into x32 and w32 (the
 * kind has no weights), int8 dequantises them with their params, the
 * product runs in float into y32 and is narrowed or quantised with the
 * output's params (static) or its own scale (dynamic). The backward pass
 * gives both operands their gradients, summed over the stacks an operand
 * broadcasts along. */
#include <string.h>

#include "edgefit/kernels.h"
#include "edgefit/profile.h"
#include "exec/ops.h"

/* A per-sample operand as [stack][rows][cols] (stack 1 for a matrix). */
struct mm_dims {
    size_t s, r, c;
};

static struct mm_dims dims_of(const struct memest_shape *sh)
{
    struct mm_dims d;
    d.s = sh->rank == 3 ? (size_t)sh->dim[0] : 1;
    d.r = (size_t)sh->dim[sh->rank - 2];
    d.c = (size_t)sh->dim[sh->rank - 1];
    return d;
}

static int matmul_plan(prof_exec *ex, struct exec_op *op,
                       struct prof_diag *diag)
{
    const struct memest_layer *L = op->layer;
    (void)ex;
    if (L->input_count != 2 || L->in_shape.rank < 2 ||
        L->in_shape_b.rank < 2 ||
        dims_of(&L->in_shape).c != dims_of(&L->in_shape_b).r) {
        exec_diag_set(diag, "%s: matmul needs two operands M x K and K x N",
                      L->name);
        return PROF_E_RANGE;
    }
    return PROF_OK;
}

static int matmul_scratch(const prof_exec *ex, struct exec_op *op,
                          struct exec_scratch *n)
{
    /* 16-bit and int8: A into x32, B into w32, the product into y32 */
    if (ex->precision != MEMEST_FP32) {
        n->x32 = op->in_n;
        n->w32 = ex->t_n[op->layer->inputs[1]];
    }
    return PROF_OK;
}

/* y = A.B over the batch from float operands. */
static int mm_f32(const prof_exec *ex, const struct exec_op *op,
                  const float *a, const float *b, float *y)
{
    const struct mm_dims da = dims_of(&op->layer->in_shape);
    const struct mm_dims db = dims_of(&op->layer->in_shape_b);
    const size_t as[4] = {ex->batch, da.s, da.r, da.c};
    const size_t bs[4] = {ex->batch, db.s, db.r, db.c};
    char msg[128];
    return exec_kern_status(kern_matmul_nd(0, a, as, 4, b, bs, 4, y, msg,
                                           sizeof msg));
}

static int mm_float(prof_exec *ex, const struct exec_op *op,
                    exec_load_fn load, float *abuf, float *bbuf, float *y)
{
    int st = PROF_OK;
    const float *a = load(ex, op->layer->inputs[0], abuf, &st);
    if (st != PROF_OK) {
        return st;
    }
    const float *b = load(ex, op->layer->inputs[1], bbuf, &st);
    if (st != PROF_OK) {
        return st;
    }
    return mm_f32(ex, op, a, b, y);
}

static int matmul_run_f32(prof_exec *ex, const struct exec_op *op,
                          const struct exec_f32_args *a)
{
    return exec_then_act(ex, op, a,
                         mm_float(ex, op, exec_load_f32, NULL, NULL, a->y));
}

static int matmul_run_16(prof_exec *ex, const struct exec_op *op)
{
    const int st = mm_float(ex, op, exec_load_16, ex->x32, ex->w32, ex->y32);
    return st == PROF_OK
               ? exec_narrow(ex, (uint16_t *)(ex->arena + op->out_off),
                             ex->y32, op->out_n)
               : st;
}

static int matmul_run_s8(prof_exec *ex, const struct exec_op *op)
{
    const int st = mm_float(ex, op, exec_load_s8, ex->x32, ex->w32, ex->y32);
    return st == PROF_OK ? exec_quantize_out(ex, op) : st;
}

int exec_matmul_train_f32(const prof_exec *ex, const struct exec_op *op,
                          const float *const *xs, float *y)
{
    return mm_f32(ex, op, xs[0], xs[1], y);
}

/* dA[s] = g[s] B[s]^T and dB[s] = A[s]^T g[s], each summed into the
 * operand's stack (one matrix when it broadcasts). */
static int matmul_backward(prof_exec *ex, const struct exec_op *op,
                           const struct exec_grad_args *g)
{
    const struct mm_dims da = dims_of(&op->layer->in_shape);
    const struct mm_dims db = dims_of(&op->layer->in_shape_b);
    const size_t s = da.s > db.s ? da.s : db.s;
    const size_t M = da.r, K = da.c, N = db.c;
    const size_t na = da.s * M * K, nb = db.s * K * N;
    float *ga = g->gxs ? g->gxs[0] : NULL;
    float *gb = g->gxs ? g->gxs[1] : NULL;
    if (!g->xs) {
        return PROF_E_INVALID;
    }
    const float *A = g->xs[0], *B = g->xs[1];
    if (ga && !(g->gx_add && g->gx_add[0])) {
        memset(ga, 0, ex->batch * na * sizeof(float));
    }
    if (gb && !(g->gx_add && g->gx_add[1])) {
        memset(gb, 0, ex->batch * nb * sizeof(float));
    }
    for (size_t n = 0; n < ex->batch; n++) {
        for (size_t k = 0; k < s; k++) {
            const size_t ka = da.s == 1 ? 0 : k, kb = db.s == 1 ? 0 : k;
            const float *gy = g->g + (n * s + k) * M * N;
            const float *a = A + n * na + ka * M * K;
            const float *b = B + n * nb + kb * K * N;
            int kst = KERN_OK;
            if (ga) {
                kst = kern_sgemm(KERN_MM_TRANS_B | KERN_MM_ACCUMULATE, M, K,
                                 N, gy, N, b, N, ga + n * na + ka * M * K, K);
            }
            if (kst == KERN_OK && gb) {
                kst = kern_sgemm(KERN_MM_TRANS_A | KERN_MM_ACCUMULATE, K, N,
                                 M, a, K, gy, N, gb + n * nb + kb * K * N, N);
            }
            if (kst != KERN_OK) {
                return exec_kern_status(kst);
            }
        }
    }
    return PROF_OK;
}

const struct exec_op_vtable exec_op_matmul = {
    .plan = matmul_plan,
    .scratch = matmul_scratch,
    .run_f32 = matmul_run_f32,
    .run_16 = matmul_run_16,
    .run_s8 = matmul_run_s8,
    .run_s8s = matmul_run_s8,
    .backward_f32 = matmul_backward,
};
