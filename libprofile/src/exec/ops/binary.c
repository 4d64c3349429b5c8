/* Element-wise a op b with numpy's broadcasting (sub, mul, div, and an add
 * of two inputs of different shapes or of one input and a constant), then
 * the activation. libkernels' kern_binary_f32 computes every form on NCHW
 * tensors; in fp32 inference, where convolutions keep channel-blocked
 * (NCHW8c) tensors, operands of one shape and a constant operand run on
 * the blocked form as they are (element-wise, no padding lanes when the
 * channels are a multiple of the block), and squeeze-excite's gate, a mul
 * of C x H x W by C x 1 x 1, runs on it through
 * kern_channel_scale_nchw8c_f32. Every precision computes in float: each
 * gives only how an operand becomes floats (exec_load_f32, _16, _s8). The
 * trainer has no backward for these kinds and refuses them by name. */
#include <string.h>

#include "edgefit/kernels.h"
#include "edgefit/profile.h"
#include "exec/ops.h"

/* The kernel's operation of one of the four kinds, -1 for any other (the
 * table gives this file's entries only to those four). Not a switch: a
 * switch over every kind would have to name each kind added later. */
static int kern_op_of(enum memest_kind kind)
{
    return kind == MEMEST_KIND_ADD   ? KERN_BINARY_ADD
           : kind == MEMEST_KIND_SUB ? KERN_BINARY_SUB
           : kind == MEMEST_KIND_MUL ? KERN_BINARY_MUL
           : kind == MEMEST_KIND_DIV ? KERN_BINARY_DIV
                                     : -1;
}

static bool same_shape(const struct memest_shape *a,
                       const struct memest_shape *b)
{
    if (a->rank != b->rank) {
        return false;
    }
    for (unsigned d = 0; d < a->rank; d++) {
        if (a->dim[d] != b->dim[d]) {
            return false;
        }
    }
    return true;
}

bool exec_binary_broadcasts(const struct memest_layer *L)
{
    return L->scalar_side != MEMEST_SCALAR_NONE ||
           (L->input_count == 2 && (!same_shape(&L->in_shape, &L->out_shape) ||
                                    !same_shape(&L->in_shape_b,
                                                &L->out_shape)));
}

/* The batch and the per-sample shape s padded on the left with 1s to the
 * output's rank: the operand's shape as kern_binary_f32 reads it. */
static size_t kern_shape(size_t batch, const struct memest_shape *s,
                         unsigned out_rank, size_t *dim)
{
    dim[0] = batch;
    for (unsigned d = 0; d < out_rank; d++) {
        dim[1 + d] = d + s->rank >= out_rank
                         ? (size_t)s->dim[d + s->rank - out_rank]
                         : 1;
    }
    return (size_t)out_rank + 1;
}

/* Squeeze-excite's gate: one operand is the C x H x W output's shape, the
 * other C x 1 x 1 (*big says which, 0 or 1). */
static bool gate_form(const struct memest_layer *L, int *big)
{
    const struct memest_shape *o = &L->out_shape;
    const struct memest_shape *s[2] = {&L->in_shape, &L->in_shape_b};
    if (L->kind != MEMEST_KIND_MUL || L->input_count != 2 ||
        L->scalar_side != MEMEST_SCALAR_NONE || o->rank != 3 ||
        o->dim[1] * o->dim[2] <= 1) {
        return false;
    }
    for (int k = 0; k < 2; k++) {
        const struct memest_shape *g = s[1 - k];
        if (same_shape(s[k], o) && g->rank == 3 && g->dim[0] == o->dim[0] &&
            g->dim[1] == 1 && g->dim[2] == 1) {
            *big = k;
            return true;
        }
    }
    return false;
}

unsigned exec_binary_caps(const struct exec_op *op)
{
    const struct memest_layer *L = op->layer;
    int big;
    if (!exec_blk_possible(op) || op->c_out % KERN_CBLOCK != 0) {
        return 0u;
    }
    /* element-wise over equal layouts; the gate (C x 1 x 1, C a multiple
     * of the block) has the same bytes blocked and NCHW */
    if (!exec_binary_broadcasts(L) || L->scalar_side != MEMEST_SCALAR_NONE ||
        gate_form(L, &big)) {
        return EXEC_BLK_IN | EXEC_BLK_OUT | EXEC_BLK_SAME;
    }
    return 0u;
}

int exec_binary_scratch(const prof_exec *ex, struct exec_op *op,
                        struct exec_scratch *n)
{
    /* 16-bit and int8: the first operand into x32, the second into w32
     * (these kinds have no weights), the result into y32 */
    const struct memest_layer *L = op->layer;
    if (ex->precision != MEMEST_FP32) {
        n->x32 = op->in_n;
        if (L->scalar_side == MEMEST_SCALAR_NONE && L->input_count == 2) {
            n->w32 = ex->t_n[L->inputs[1]];
        }
    }
    return PROF_OK;
}

int exec_binary_float(prof_exec *ex, const struct exec_op *op,
                      exec_load_fn load, float *abuf, float *bbuf, float *y,
                      bool fused)
{
    const struct memest_layer *L = op->layer;
    const int kop = kern_op_of(L->kind);
    const unsigned r = L->out_shape.rank;
    size_t ya[KERN_BINARY_MAX_NDIM];
    size_t as[KERN_BINARY_MAX_NDIM], bs[KERN_BINARY_MAX_NDIM];
    size_t an, bn;
    int big;
    int st = PROF_OK;
    const float *a = load(ex, L->inputs[0], abuf, &st);

    if (kop < 0) {
        return PROF_E_INVALID;
    }
    if (st != PROF_OK) {
        return st;
    }
    if (L->scalar_side != MEMEST_SCALAR_NONE) {
        const float s = (float)L->scalar;
        an = kern_shape(ex->batch, &L->out_shape, r, ya);
        st = exec_kern_status(
            L->scalar_side == MEMEST_SCALAR_RIGHT
                ? kern_binary_f32(kop, a, ya, an, &s, NULL, 0, y)
                : kern_binary_f32(kop, &s, NULL, 0, a, ya, an, y));
    } else {
        const float *b = load(ex, L->inputs[1], bbuf, &st);
        if (st != PROF_OK) {
            return st;
        }
        if (exec_t_blocked(ex, op->out_t) && exec_binary_broadcasts(L) &&
            gate_form(L, &big)) {
            /* NCHW8c: the only broadcast exec_binary_caps lets through */
            st = exec_kern_status(kern_channel_scale_nchw8c_f32(
                big == 0 ? a : b, ex->batch, op->c_out, op->hw_out,
                big == 0 ? b : a, y));
        } else {
            an = kern_shape(ex->batch, &L->in_shape, r, as);
            bn = kern_shape(ex->batch, &L->in_shape_b, r, bs);
            st = exec_kern_status(kern_binary_f32(kop, a, as, an, b, bs, bn,
                                                  y));
        }
    }
    if (st == PROF_OK && fused && L->act != MEMEST_ACT_NONE) {
        st = exec_apply_act(ex, op, L->act, y, y);
    }
    return st;
}

int exec_binary_train_f32(const prof_exec *ex, const struct exec_op *op,
                          const float *a, const float *b, float *y)
{
    const struct memest_layer *L = op->layer;
    const int kop = kern_op_of(L->kind);
    const unsigned r = L->out_shape.rank;
    size_t as[KERN_BINARY_MAX_NDIM], bs[KERN_BINARY_MAX_NDIM];
    if (kop < 0) {
        return PROF_E_INVALID;
    }
    if (L->scalar_side != MEMEST_SCALAR_NONE) {
        const float s = (float)L->scalar;
        const size_t an = kern_shape(ex->batch, &L->out_shape, r, as);
        return exec_kern_status(
            L->scalar_side == MEMEST_SCALAR_RIGHT
                ? kern_binary_f32(kop, a, as, an, &s, NULL, 0, y)
                : kern_binary_f32(kop, &s, NULL, 0, a, as, an, y));
    }
    const size_t an = kern_shape(ex->batch, &L->in_shape, r, as);
    const size_t bn = kern_shape(ex->batch, &L->in_shape_b, r, bs);
    return exec_kern_status(kern_binary_f32(kop, a, as, an, b, bs, bn, y));
}

int exec_binary_reduce_grad(const prof_exec *ex, const struct exec_op *op,
                            size_t k, const float *g, float *gx, bool add)
{
    const struct memest_layer *L = op->layer;
    const unsigned r = L->out_shape.rank;
    size_t od[KERN_BINARY_MAX_NDIM], id[KERN_BINARY_MAX_NDIM];
    const struct memest_shape *in = k == 0 ? &L->in_shape : &L->in_shape_b;
    const size_t nd = kern_shape(ex->batch, &L->out_shape, r, od);
    (void)kern_shape(ex->batch,
                     L->scalar_side != MEMEST_SCALAR_NONE ? &L->out_shape
                                                          : in,
                     r, id);
    /* the input's strides, 0 along a dimension it broadcasts */
    size_t stride[KERN_BINARY_MAX_NDIM], in_n = 1;
    for (size_t d = nd; d-- > 0;) {
        stride[d] = id[d] == 1 && od[d] != 1 ? 0 : in_n;
        in_n *= id[d];
    }
    if (!add) {
        memset(gx, 0, in_n * sizeof(float));
    }
    size_t idx[KERN_BINARY_MAX_NDIM] = {0};
    for (size_t e = 0; e < op->out_n; e++) {
        size_t at = 0;
        for (size_t d = 0; d < nd; d++) {
            at += idx[d] * stride[d];
        }
        gx[at] += g[e];
        for (size_t d = nd; d-- > 0;) { /* the next output index */
            if (++idx[d] < od[d]) {
                break;
            }
            idx[d] = 0;
        }
    }
    return PROF_OK;
}

static int binary_run_f32(prof_exec *ex, const struct exec_op *op,
                          const struct exec_f32_args *a)
{
    return exec_binary_float(ex, op, exec_load_f32, NULL, NULL, a->y,
                             a->fused);
}

int exec_binary_run_16(prof_exec *ex, const struct exec_op *op)
{
    const int st = exec_binary_float(ex, op, exec_load_16, ex->x32, ex->w32,
                                     ex->y32, true);
    return st == PROF_OK
               ? exec_narrow(ex, (uint16_t *)(ex->arena + op->out_off),
                             ex->y32, op->out_n)
               : st;
}

/* The operands carry params of their own: dequantised, combined in y32,
 * the result quantised again with its own scale (dynamic) or the output's
 * params (static: the float generic path of several inputs). */
int exec_binary_run_s8(prof_exec *ex, const struct exec_op *op)
{
    const int st = exec_binary_float(ex, op, exec_load_s8, ex->x32, ex->w32,
                                     ex->y32, true);
    return st == PROF_OK ? exec_quantize_out(ex, op) : st;
}

const struct exec_op_vtable exec_op_sub = {
    .scratch = exec_binary_scratch,
    .layout_caps = exec_binary_caps,
    .run_f32 = binary_run_f32,
    .run_16 = exec_binary_run_16,
    .run_s8 = exec_binary_run_s8,
    .run_s8s = exec_binary_run_s8,
};

const struct exec_op_vtable exec_op_mul = {
    .scratch = exec_binary_scratch,
    .layout_caps = exec_binary_caps,
    .run_f32 = binary_run_f32,
    .run_16 = exec_binary_run_16,
    .run_s8 = exec_binary_run_s8,
    .run_s8s = exec_binary_run_s8,
};

const struct exec_op_vtable exec_op_div = {
    .scratch = exec_binary_scratch,
    .layout_caps = exec_binary_caps,
    .run_f32 = binary_run_f32,
    .run_16 = exec_binary_run_16,
    .run_s8 = exec_binary_run_s8,
    .run_s8s = exec_binary_run_s8,
};
