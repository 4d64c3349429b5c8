/*
 * ONNX import: the dense layers (Gemm, MatMul with a following bias Add)
 * and BatchNormalization.
 */
#include "onnx/onnx_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include "../alloc_rec.h" /* last: it wraps malloc and co. */

/* A bias of m values from a constant broadcast to [m] (scalar, [m],
 * [1, m]), times beta, into a new array. */
static int broadcast_bias(struct imp *I, size_t node, const struct cval *C,
                          uint64_t m, double beta, float **out)
{
    int ok = C->count == 1 ||
             (C->count == m && (C->rank == 1 ||
                                (C->rank == 2 && C->dim[0] == 1)));
    float *b;
    *out = NULL;
    if (!ok) {
        return node_fail(I, node, MEMEST_E_PARSE,
                         "a bias of %llu values (rank %u) is not supported: "
                         "only one value per output (%llu) or a scalar",
                         (unsigned long long)C->count, C->rank,
                         (unsigned long long)m);
    }
    b = malloc((size_t)m * sizeof *b);
    if (b == NULL) {
        return nomem(I);
    }
    for (uint64_t i = 0; i < m; i++) {
        b[i] = (float)(beta * C->f[C->count == 1 ? 0 : i]);
    }
    *out = b;
    return MEMEST_OK;
}

/* A dense layer y = x W^T + b from a weight given as [k][m] (transposed)
 * or [m][k], scaled by alpha. */
int emit_dense(struct imp *I, size_t node, size_t x, const struct cval *Bm,
               int b_is_km, double alpha, const float *bias,
               float *bias_owned)
{
    const Onnx__NodeProto *n = I->g->node[node];
    uint64_t k = b_is_km ? Bm->dim[0] : Bm->dim[1];
    uint64_t m = b_is_km ? Bm->dim[1] : Bm->dim[0];
    uint64_t wdim[2] = {m, k};
    uint64_t bdim[1] = {m};
    /* a batch of vectors N x K, or a Linear over the last axis of a
     * sequence N x T x K (the text's dense on T x K) */
    const unsigned rank = I->v[x].rank;
    const uint64_t kin = I->v[x].dim[rank - 1];
    uint64_t odim[4] = {I->v[x].dim[0], rank == 3 ? I->v[x].dim[1] : m,
                        rank == 3 ? m : 0, 0};
    float *w = NULL;
    size_t l = 0;
    int st;

    if (k != kin) {
        free(bias_owned);
        return node_fail(I, node, MEMEST_E_SHAPE,
                         "the weight expects %llu input features, the "
                         "input '%.60s' has %llu", (unsigned long long)k,
                         I->v[x].name, (unsigned long long)kin);
    }
    if (b_is_km || alpha != 1.0) {
        w = malloc((size_t)(m * k) * sizeof *w);
        if (w == NULL) {
            free(bias_owned);
            return nomem(I);
        }
        for (uint64_t i = 0; i < m; i++) {
            for (uint64_t j = 0; j < k; j++) {
                float v = b_is_km ? Bm->f[j * m + i] : Bm->f[i * k + j];
                w[i * k + j] = (float)(alpha * v);
            }
        }
    }
    st = push_layer(I, node, "dense", n->name, "dense", &l);
    if (st != MEMEST_OK) {
        free(w);
        free(bias_owned);
        return st;
    }
    I->L[l].takes_act = 1;
    snprintf(I->L[l].args, sizeof I->L[l].args, "%llu bias=%s",
             (unsigned long long)m, bias ? "yes" : "no");
    st = push_weight(I, l, "weight", 2, wdim, w ? w : Bm->f, w);
    if (st != MEMEST_OK) {
        free(bias_owned);
        return st;
    }
    if (bias != NULL &&
        (st = push_weight(I, l, "bias", 1, bdim, bias, bias_owned))) {
        return st;
    }
    if ((st = layer_inputs(I, l, &x, 1))) {
        return st;
    }
    return set_output(I, node, 0, l, rank, odim);
}

int onnx_gemm(struct imp *I, size_t node)
{
    const Onnx__NodeProto *n = I->g->node[node];
    const struct cval *B;
    const struct cval *C = NULL;
    double alpha, beta;
    int64_t ta, tb;
    float *bias = NULL;
    size_t x = 0;
    int st;

    /* broadcast (before opset 7) only allowed C to broadcast, which the
     * bias check below handles */
    if ((st = attr_float(I, node, "alpha", 1.0, &alpha)) ||
        (st = attr_float(I, node, "beta", 1.0, &beta)) ||
        (st = attr_int(I, node, "transA", 0, &ta)) ||
        (st = attr_int(I, node, "transB", 0, &tb))) {
        return st;
    }
    if (ta != 0) {
        /* A^T: A is [K, N], the batch its second axis. A graph input that
         * only this Gemm reads is held batch first (N x K) and its data
         * moved so by whoever feeds it (memest_model_input_batch_axis);
         * a computed A would need the batch moved between layers */
        const size_t av = value_of(I, in_name(n, 0));
        struct value *a = av != SIZE_MAX ? &I->v[av] : NULL;
        if (a == NULL || a->kind != V_GRAPH_INPUT || a->readers != 1 ||
            (a->shaped && a->batch_axis != 1)) {
            return node_fail(I, node, MEMEST_E_PARSE,
                             "transA=1 is supported when A is a graph input "
                             "[K, N] that only this Gemm reads (its batch "
                             "is the second axis); A '%.60s' is not",
                             in_name(n, 0));
        }
        a->batch_axis = 1;
    }
    if ((st = get_act(I, node, 0, &x)) ||
        (st = need_rank(I, node, &I->v[x], 2, "NxK (a batch of vectors)")) ||
        (st = get_const(I, node, 1, "weight B", &B))) {
        return st;
    }
    if (B->rank != 2) {
        return node_fail(I, node, MEMEST_E_SHAPE,
                         "the weight B has rank %u, not 2", B->rank);
    }
    if (in_name(n, 2)[0] != '\0') {
        if ((st = get_const(I, node, 2, "bias C", &C)) ||
            (st = broadcast_bias(I, node, C, tb ? B->dim[0] : B->dim[1],
                                 beta, &bias))) {
            return st;
        }
    }
    return emit_dense(I, node, x, B, tb == 0, alpha, bias, bias);
}

int onnx_matmul(struct imp *I, size_t node)
{
    const struct cval *B;
    const struct cval *C = NULL;
    float *bias = NULL;
    size_t x = 0;
    int st;

    {
        /* two computed tensors: a batched matmul (ops_seq.c) */
        size_t vb = value_of(I, in_name(I->g->node[node], 1));
        if (vb != SIZE_MAX && !is_constant(&I->v[vb])) {
            return onnx_matmul_two(I, node);
        }
        /* A graph input bound as a constant (ONNX's node tests bind every
         * input) of rank 3 or 4 whose first axis is A's batch holds one
         * matrix (or stack) per sample: data, not a weight. It stays a
         * model input, read by this MatMul alone. */
        if (vb != SIZE_MAX && I->v[vb].kind == V_GRAPH_INPUT &&
            I->v[vb].user != NULL && I->v[vb].user->rank >= 3 &&
            I->v[vb].readers == 1) {
            if ((st = get_act(I, node, 0, &x))) {
                return st;
            }
            if (I->v[x].rank == I->v[vb].user->rank &&
                I->v[x].dim[0] == I->v[vb].user->dim[0]) {
                I->v[vb].user = NULL;
                return onnx_matmul_two(I, node);
            }
        }
    }
    if ((st = get_act(I, node, 0, &x)) ||
        (st = get_const(I, node, 1, "weight", &B))) {
        return st;
    }
    if (I->v[x].rank != 2 && I->v[x].rank != 3) {
        return node_fail(I, node, MEMEST_E_SHAPE,
                         "its input '%.60s' has rank %u; a MatMul by a "
                         "constant is supported on NxK (a batch of "
                         "vectors) and NxTxK (a Linear over the last axis "
                         "of a sequence)", I->v[x].name, I->v[x].rank);
    }
    if (B->rank != 2) {
        return node_fail(I, node, MEMEST_E_SHAPE,
                         "the constant operand has rank %u, not 2", B->rank);
    }
    if (I->ni[node].bias_add != SIZE_MAX) {
        size_t a = I->ni[node].bias_add;
        const Onnx__NodeProto *an = I->g->node[a];
        size_t slot = str_eq(an->input[0], str(I->g->node[node]->output[0]))
                          ? 1 : 0;
        if ((st = get_const(I, a, slot, "bias", &C)) ||
            (st = broadcast_bias(I, a, C, B->dim[1], 1.0, &bias))) {
            return st;
        }
    }
    st = emit_dense(I, node, x, B, 1, 1.0, bias, bias);
    if (st == MEMEST_OK && I->ni[node].bias_add != SIZE_MAX) {
        /* the Add's output is the dense layer's */
        const struct value *y = &I->v[value_of(
            I, str(I->g->node[node]->output[0]))];
        st = set_output(I, I->ni[node].bias_add, 0, y->layer, y->rank,
                        y->dim);
    }
    return st;
}

int onnx_batchnorm(struct imp *I, size_t node)
{
    static const char *const roles[4] = {"scale", "bias B", "mean",
                                         "variance"};
    static const char *const names[4] = {"weight", "bias", "running_mean",
                                         "running_var"};
    const Onnx__NodeProto *n = I->g->node[node];
    const struct cval *p[4];
    double eps;
    int64_t training;
    int64_t spatial;
    size_t x = 0;
    size_t l = 0;
    int st;

    /* is_test (before opset 7) and momentum matter only for training;
     * spatial=0 (before opset 9) means statistics per element */
    if ((st = attr_int(I, node, "spatial", 1, &spatial)) ||
        (st = attr_float(I, node, "epsilon", 1e-5, &eps)) ||
        (st = attr_int(I, node, "training_mode", 0, &training))) {
        return st;
    }
    if (training != 0) {
        return node_fail(I, node, MEMEST_E_PARSE,
                         "training_mode=1 is not supported (inference "
                         "only)");
    }
    if (spatial != 1) {
        return node_fail(I, node, MEMEST_E_PARSE,
                         "spatial=0 (statistics per element) is not "
                         "supported");
    }
    for (size_t o = 1; o < n->n_output; o++) {
        if (str(n->output[o])[0] != '\0' &&
            I->v[value_of(I, n->output[o])].readers > 0) {
            return node_fail(I, node, MEMEST_E_PARSE,
                             "its running statistics outputs are read; "
                             "only inference is supported");
        }
    }
    if ((st = get_act(I, node, 0, &x))) {
        return st;
    }
    if (I->v[x].rank < 2) {
        return node_fail(I, node, MEMEST_E_SHAPE, "its input has no channel "
                         "dimension");
    }
    for (size_t i = 0; i < 4; i++) {
        if ((st = get_const(I, node, i + 1, roles[i], &p[i]))) {
            return st;
        }
        if (p[i]->count != I->v[x].dim[1] || p[i]->rank != 1) {
            return node_fail(I, node, MEMEST_E_SHAPE,
                             "the %s has %llu values for %llu channels",
                             roles[i], (unsigned long long)p[i]->count,
                             (unsigned long long)I->v[x].dim[1]);
        }
    }
    if (!(eps >= 0.0) || !isfinite(eps)) {
        return node_fail(I, node, MEMEST_E_RANGE,
                         "epsilon must be finite and not negative");
    }
    if ((st = push_layer(I, node, "batchnorm", n->name, "bn", &l))) {
        return st;
    }
    I->L[l].takes_act = 1;
    /* the float attribute, printed exactly */
    snprintf(I->L[l].args, sizeof I->L[l].args, "eps=%.17g", eps);
    for (size_t i = 0; i < 4; i++) {
        if ((st = push_weight(I, l, names[i], 1, p[i]->dim, p[i]->f,
                              NULL))) {
            return st;
        }
    }
    if ((st = layer_inputs(I, l, &x, 1))) {
        return st;
    }
    return set_output(I, node, 0, l, I->v[x].rank, I->v[x].dim);
}

