/* Planning an executor: each layer's geometry and parameter counts (the
 * common part here, the rest in its kind's plan), the scratch every
 * operator asks for, the channel-blocked layouts of fp32 inference, the
 * tensors' lifetimes and their places in the arena (libmemest's plan,
 * checked). */
#include <stdlib.h>
#include <string.h>

#include "edgefit/kernels.h"
#include "edgefit/profile.h"
#include "exec/executor.h"
#include "exec/ops.h"
#include "../alloc_rec.h" /* last: it wraps malloc and co. */

static size_t shape_elements(const struct memest_shape *s)
{
    size_t n = 1;
    for (unsigned i = 0; i < s->rank; i++) {
        n *= (size_t)s->dim[i]; /* checked by libmemest when it was built */
    }
    return n;
}

/* A per-sample shape as channels x h x w: rank 1 is features x 1 x 1,
 * rank 2 d0 x d1 x 1 (the element-wise layers' "over dim[0]"). */
static void shape_chw(const struct memest_shape *s, size_t *c, size_t *h,
                      size_t *w)
{
    *c = (size_t)s->dim[0];
    *h = s->rank >= 2 ? (size_t)s->dim[1] : 1;
    *w = s->rank >= 3 ? (size_t)s->dim[2] : 1;
}

/* Geometry of one layer, parameters, and what its kernels need. */
int exec_plan_layer(prof_exec *ex, struct exec_op *op,
                    struct prof_diag *diag)
{
    const struct memest_layer *L = op->layer;
    const struct exec_op_vtable *vt = op->vt;
    const size_t B = ex->batch;
    int st;

    op->groups = 1;
    op->out_t = ex->ninputs + op->index;
    shape_chw(&L->in_shape, &op->c_in, &op->h_in, &op->w_in);
    shape_chw(&L->out_shape, &op->c_out, &op->h_out, &op->w_out);
    if ((st = exec_mul_sz(B, shape_elements(&L->in_shape), &op->in_n)) !=
            PROF_OK ||
        (st = exec_mul_sz(B, shape_elements(&L->out_shape), &op->out_n)) !=
            PROF_OK) {
        return st;
    }
    op->hw_out = op->h_out * op->w_out;
    op->alias = memest_kind_is_view(L->kind);
    if (vt->init_params &&
        ((st = exec_u64_sz(L->weight_count, &op->wn)) != PROF_OK ||
         (st = exec_u64_sz(L->bias_count, &op->bn)) != PROF_OK)) {
        return st;
    }
    if (vt->plan && (st = vt->plan(ex, op, diag)) != PROF_OK) {
        return st;
    }
    if (vt->init_params && memest_precision_is_int8(ex->precision) &&
        op->kdim > 131071) {
        exec_diag_set(diag, "%s: %zu inputs per output are more than the "
                      "int8 GEMM sums exactly (131071)", L->name, op->kdim);
        return PROF_E_RANGE;
    }
    return PROF_OK;
}

/* A softmax or log-softmax along an axis other than the last (the
 * channels of C x H x W, the steps of T x D), which runs on a transposed
 * copy. */
static bool channel_softmax(const struct memest_layer *L)
{
    size_t outer, n, inner;
    if (L->act != MEMEST_ACT_SOFTMAX && L->act != MEMEST_ACT_LOGSOFTMAX) {
        return false;
    }
    exec_softmax_geometry(L, 1, &outer, &n, &inner);
    return inner > 1;
}

int exec_scratch_float_input(const prof_exec *ex, struct exec_op *op,
                             struct exec_scratch *need)
{
    if (ex->precision != MEMEST_FP32) {
        need->x32 = op->in_n;
    }
    return PROF_OK;
}

static int layer_scratch(const prof_exec *ex, struct exec_op *op,
                         struct exec_scratch *n)
{
    memset(n, 0, sizeof *n);
    if (ex->precision != MEMEST_FP32) {
        n->y32 = op->out_n; /* every operator computes its result in float */
    }
    if (channel_softmax(op->layer)) {
        n->t32 = op->out_n;
    }
    return op->vt->scratch ? op->vt->scratch(ex, op, n) : PROF_OK;
}

static uint64_t need_bytes(const struct exec_scratch *n)
{
    return (uint64_t)n->col32 * 4 + (uint64_t)n->col8 +
           (uint64_t)n->acc * 4 + (uint64_t)n->x32 * 4 +
           (uint64_t)n->y32 * 4 + (uint64_t)n->t32 * 4 +
           (uint64_t)n->w32 * 4 + (uint64_t)n->b32 * 4;
}

/* ---- channel-blocked activations ----------------------------------------- */

static unsigned blk_caps(const struct exec_op *op)
{
    return op->vt->layout_caps ? op->vt->layout_caps(op) : 0u;
}

static size_t uf_find(size_t *parent, size_t t)
{
    while (parent[t] != t) {
        parent[t] = parent[parent[t]];
        t = parent[t];
    }
    return t;
}

/* A tensor of C x 1 x 1, C a multiple of the block, has the same bytes in
 * both layouts ([n][c] either way, no padding lanes): it need not share
 * a layout with the others of a layer (squeeze-excite's gate, read by a
 * mul with the C x H x W it scales, would otherwise tie that to the
 * layouts of whatever else reads the gate). */
static bool layout_neutral(const struct prof_exec *ex, size_t t)
{
    const struct memest_shape s = memest_model_tensor_shape(ex->model, t);
    return s.rank == 3 && s.dim[1] == 1 && s.dim[2] == 1 &&
           s.dim[0] % KERN_CBLOCK == 0;
}

/* A C x H x W tensor whose channels are not whole blocks: held NCHW (a
 * concat on blocked tensors joins whole blocks). */
static bool partial_blocks(const struct prof_exec *ex, size_t t)
{
    const struct memest_shape s = memest_model_tensor_shape(ex->model, t);
    return s.rank == 3 && s.dim[0] % KERN_CBLOCK != 0;
}

/* Choose each tensor's layout (ex->t_blk). A tensor is blocked unless it
 * is a model input or the output, its channels are not whole blocks, or
 * some layer that writes or reads it cannot do so blocked; a layer whose
 * tensors must share a layout joins them in one set, which is blocked
 * only if none of its members is held to NCHW. Nothing is converted
 * between layers: a convolution that feeds a pooling simply writes NCHW. */
int exec_plan_layouts(struct prof_exec *ex)
{
    const size_t n = ex->ntensors;
    size_t *parent = malloc(n * sizeof *parent);
    unsigned char *nchw = calloc(n, 1);
    ex->t_blk = calloc(n, 1);
    if (!parent || !nchw || !ex->t_blk) {
        free(parent);
        free(nchw);
        return PROF_E_NOMEM;
    }
    for (size_t t = 0; t < n; t++) {
        parent[t] = t;
        nchw[t] = t < ex->ninputs || t == n - 1 || partial_blocks(ex, t);
    }
    for (size_t i = 0; i < ex->nlayers; i++) {
        const struct exec_op *op = &ex->ops[i];
        const struct memest_layer *L = op->layer;
        const unsigned caps = blk_caps(op);
        if (!(caps & EXEC_BLK_OUT)) {
            nchw[op->out_t] = 1;
        }
        for (size_t j = 0; j < L->input_count; j++) {
            const size_t t = L->inputs[j];
            if (!(caps & EXEC_BLK_IN)) {
                nchw[t] = 1;
            }
            if ((caps & EXEC_BLK_SAME) && !layout_neutral(ex, t)) {
                parent[uf_find(parent, t)] = uf_find(parent, op->out_t);
            }
        }
    }
    for (size_t t = 0; t < n; t++) {
        if (nchw[t]) {
            nchw[uf_find(parent, t)] = 1;
        }
    }
    for (size_t t = 0; t < n; t++) {
        ex->t_blk[t] = !nchw[uf_find(parent, t)];
    }
    free(parent);
    free(nchw);
    return PROF_OK;
}

/*
 * Tensor lifetimes as the executor runs the model: input t is written at
 * step 0, layer i's output at step i, and a tensor lives until the last
 * step that reads it (the model's output until the last step). A view
 * (memest_kind_is_view: identity, dropout, flatten) is its input's buffer: root[t] names the
 * tensor that owns t's buffer, and the owner lives as long as any tensor
 * that shares it. Roots precede their aliases, so one pass in tensor
 * order carries each life to its owner.
 */
static void tensor_lifetimes(const struct prof_exec *ex, size_t *root,
                             size_t *first, size_t *last)
{
    for (size_t t = 0; t < ex->ninputs; t++) {
        root[t] = t;
        first[t] = last[t] = 0;
    }
    for (size_t i = 0; i < ex->nlayers; i++) {
        const struct exec_op *op = &ex->ops[i];
        const struct memest_layer *L = op->layer;
        root[op->out_t] = op->alias ? root[L->inputs[0]] : op->out_t;
        first[op->out_t] = last[op->out_t] = i;
        for (size_t j = 0; j < L->input_count; j++) {
            last[L->inputs[j]] = i;
        }
    }
    last[ex->ntensors - 1] = ex->nlayers - 1;
    for (size_t t = 0; t < ex->ntensors; t++) {
        if (root[t] != t && last[t] > last[root[t]]) {
            last[root[t]] = last[t];
        }
    }
}

/*
 * Take the offsets of libmemest's arena plan and check them, not assume
 * them: each tensor has the size the executor computes, aliases share
 * their owner's offset, offsets are multiples of the element size, and no
 * two buffers alive at a common step (by the executor's own lifetimes)
 * overlap. *need receives the arena this placement needs, the highest end
 * of a buffer. PROF_E_MEMEST, with a message naming the tensors, when the
 * plan breaks a rule.
 */
int exec_place_tensors(struct prof_exec *ex,
                       const struct memest_arena_plan *plan, uint64_t *need,
                       struct prof_diag *diag)
{
    const size_t T = ex->ntensors;
    size_t *root = calloc(T, sizeof *root);
    size_t *first = calloc(T, sizeof *first);
    size_t *last = calloc(T, sizeof *last);
    int st = PROF_OK;
    if (!root || !first || !last) {
        st = PROF_E_NOMEM;
        goto done;
    }
    if (plan->tensor_count != T) {
        exec_diag_set(diag, "the arena plan places %zu tensors, the model "
                      "has %zu", plan->tensor_count, T);
        st = PROF_E_MEMEST;
        goto done;
    }
    tensor_lifetimes(ex, root, first, last);
    uint64_t end = 0;
    for (size_t t = 0; t < T; t++) {
        const uint64_t off = plan->offset[t];
        if (plan->bytes[t] != ex->t_bytes[t] || off % ex->sbytes != 0 ||
            (root[t] != t && off != plan->offset[root[t]]) ||
            off > UINT64_MAX - ex->t_bytes[t]) {
            exec_diag_set(diag, "the arena plan puts tensor %zu (%llu bytes) "
                          "at offset %llu; the executor needs %zu bytes at "
                          "a multiple of %u%s", t,
                          (unsigned long long)plan->bytes[t],
                          (unsigned long long)off, ex->t_bytes[t],
                          ex->sbytes,
                          root[t] != t ? ", sharing its input's buffer" : "");
            st = PROF_E_MEMEST;
            goto done;
        }
        if (off + ex->t_bytes[t] > end) {
            end = off + ex->t_bytes[t];
        }
    }
    for (size_t a = 0; a < T; a++) {
        for (size_t b = a + 1; b < T && root[a] == a; b++) {
            if (root[b] != b || first[b] > last[a] || first[a] > last[b]) {
                continue;
            }
            const uint64_t a0 = plan->offset[a], b0 = plan->offset[b];
            if (a0 < b0 + ex->t_bytes[b] && b0 < a0 + ex->t_bytes[a]) {
                exec_diag_set(diag, "the arena plan overlaps tensors %zu and "
                              "%zu, both alive at step %zu", a, b,
                              first[a] > first[b] ? first[a] : first[b]);
                st = PROF_E_MEMEST;
                goto done;
            }
        }
    }
    /* Working blocks (an attention's score matrix): the size the
     * executor computes, and no overlap with a tensor alive at the
     * layer's step. */
    if (plan->layer_count != ex->nlayers) {
        exec_diag_set(diag, "the arena plan has %zu layers, the model %zu",
                      plan->layer_count, ex->nlayers);
        st = PROF_E_MEMEST;
        goto done;
    }
    for (size_t i = 0; i < ex->nlayers; i++) {
        struct exec_op *op = &ex->ops[i];
        const uint64_t want = (uint64_t)ex->batch *
                              op->layer->work_elements * ex->sbytes;
        const uint64_t w0 = plan->work_offset[i], wb = plan->work_bytes[i];
        if (wb != want || w0 % ex->sbytes != 0 || w0 > UINT64_MAX - wb) {
            exec_diag_set(diag, "the arena plan gives layer %zu a working "
                          "block of %llu bytes at %llu; the executor needs "
                          "%llu", i, (unsigned long long)wb,
                          (unsigned long long)w0, (unsigned long long)want);
            st = PROF_E_MEMEST;
            goto done;
        }
        if (wb == 0) {
            continue;
        }
        for (size_t t = 0; t < T; t++) {
            const uint64_t t0 = plan->offset[t];
            if (root[t] == t && first[t] <= i && i <= last[t] &&
                t0 < w0 + wb && w0 < t0 + ex->t_bytes[t]) {
                exec_diag_set(diag, "the arena plan overlaps layer %zu's "
                              "working block with tensor %zu", i, t);
                st = PROF_E_MEMEST;
                goto done;
            }
        }
        if (w0 + wb > end) {
            end = w0 + wb;
        }
        if ((st = exec_u64_sz(w0, &op->work_off)) != PROF_OK ||
            (st = exec_u64_sz(wb, &op->work_bytes)) != PROF_OK) {
            goto done;
        }
    }
    for (size_t t = 0; t < T; t++) {
        if ((st = exec_u64_sz(plan->offset[t], &ex->t_off[t])) != PROF_OK) {
            goto done;
        }
    }
    for (size_t i = 0; i < ex->nlayers; i++) {
        struct exec_op *op = &ex->ops[i];
        op->in_off = ex->t_off[op->layer->inputs[0]];
        op->out_off = ex->t_off[op->out_t];
    }
    *need = end;
done:
    free(root);
    free(first);
    free(last);
    return st;
}

int exec_alloc_scratch(struct prof_exec *ex)
{
    struct exec_scratch tot = {0};
    for (size_t i = 0; i < ex->nlayers; i++) {
        struct exec_scratch n;
        int st = layer_scratch(ex, &ex->ops[i], &n);
        if (st != PROF_OK) {
            return st;
        }
        ex->ops[i].scratch_bytes = need_bytes(&n);
        tot.col32 = exec_max_sz(tot.col32, n.col32);
        tot.col8 = exec_max_sz(tot.col8, n.col8);
        tot.acc = exec_max_sz(tot.acc, n.acc);
        tot.x32 = exec_max_sz(tot.x32, n.x32);
        tot.y32 = exec_max_sz(tot.y32, n.y32);
        tot.t32 = exec_max_sz(tot.t32, n.t32);
        tot.w32 = exec_max_sz(tot.w32, n.w32);
        tot.b32 = exec_max_sz(tot.b32, n.b32);
    }
    /* int8 weights are quantised into the column scratch before packing. */
    if (memest_precision_is_int8(ex->precision)) {
        for (size_t i = 0; i < ex->nlayers; i++) {
            tot.col8 = exec_max_sz(tot.col8, ex->ops[i].wn);
        }
    }
    /* known before the allocations, for the message of a failed one */
    ex->scratch_bytes = need_bytes(&tot);
    ex->col32 = exec_calloc(tot.col32, sizeof(float));
    ex->col32_n = tot.col32;
    ex->col8 = exec_calloc(tot.col8, 1);
    ex->acc = exec_calloc(tot.acc, sizeof(int32_t));
    ex->x32 = exec_calloc(tot.x32, sizeof(float));
    ex->y32 = exec_calloc(tot.y32, sizeof(float));
    ex->t32 = exec_calloc(tot.t32, sizeof(float));
    ex->w32 = exec_calloc(tot.w32, sizeof(float));
    ex->b32 = exec_calloc(tot.b32, sizeof(float));
    if ((tot.col32 && !ex->col32) || (tot.col8 && !ex->col8) ||
        (tot.acc && !ex->acc) || (tot.x32 && !ex->x32) ||
        (tot.y32 && !ex->y32) || (tot.t32 && !ex->t32) ||
        (tot.w32 && !ex->w32) || (tot.b32 && !ex->b32)) {
        return PROF_E_NOMEM;
    }
    ex->wq_stage = ex->col8;
    return PROF_OK;
}

