/*
 * ONNX import: the operators of sequence models (transformers) on
 * N x T x D tensors, held as per-sample T x D (CONTRACTS: rank 2 = a
 * sequence of T steps of D features) and, for attention's heads,
 * N x H x T x d as per-sample H x T x d:
 *   LayerNormalization (opset 17) and the decomposition PyTorch exports
 *     before it (patterns.c's find_layernorm) -> layernorm;
 *   Transpose of the axes of a sample (the batch kept first) -> transpose;
 *   MatMul of two computed tensors -> matmul (a constant B is a dense over
 *     the last axis, ops_dense.c);
 *   Concat of an expanded class-token parameter -> clstoken, Add of a
 *     [1, T, D] parameter -> posembed (ops_misc.c, ops_binary.c call
 *     here);
 *   nn.MultiheadAttention's export (patterns.c's find_mha) -> attention.
 */
#include "onnx/onnx_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../alloc_rec.h" /* last: it wraps malloc and co. */

/* A 1-D copy of a constant's floats (the layer's [D] gamma or beta). */
static int gamma_beta(struct imp *I, size_t node, size_t slot,
                      const char *role, uint64_t d, const struct cval **out)
{
    int st = get_const(I, node, slot, role, out);
    if (st != MEMEST_OK) {
        return st;
    }
    if ((*out)->f == NULL || (*out)->count != d) {
        return node_fail(I, node, MEMEST_E_SHAPE,
                         "the %s has %llu values for a normalised width of "
                         "%llu", role, (unsigned long long)(*out)->count,
                         (unsigned long long)d);
    }
    return MEMEST_OK;
}

/* The layernorm layer of x over ONNX axes a..rank-1 with gamma (and beta,
 * may be NULL). */
static int emit_layernorm(struct imp *I, size_t node, size_t x, unsigned a,
                          double eps, const struct cval *gamma,
                          const struct cval *beta)
{
    const struct value *v = &I->v[x];
    uint64_t d = gamma->count;
    size_t l = 0;
    int st;

    if (!(eps > 0.0) || !isfinite(eps)) {
        return node_fail(I, node, MEMEST_E_RANGE,
                         "epsilon %g must be finite and positive", eps);
    }
    if ((st = push_layer(I, node, "layernorm", I->g->node[node]->name, "ln",
                         &l))) {
        return st;
    }
    snprintf(I->L[l].args, sizeof I->L[l].args, "eps=%.17g bias=%s", eps,
             beta != NULL ? "yes" : "no");
    if (a + 1 != v->rank) {
        size_t len = strlen(I->L[l].args);
        snprintf(I->L[l].args + len, sizeof I->L[l].args - len, " axis=%u",
                 a - 1);
    }
    if ((st = push_weight(I, l, "weight", 1, &d, gamma->f, NULL)) ||
        (beta != NULL &&
         (st = push_weight(I, l, "bias", 1, &d, beta->f, NULL))) ||
        (st = layer_inputs(I, l, &x, 1))) {
        return st;
    }
    return set_output(I, node, 0, l, v->rank, v->dim);
}

int onnx_layernorm(struct imp *I, size_t node)
{
    const Onnx__NodeProto *n = I->g->node[node];
    const struct cval *gamma = NULL, *beta = NULL;
    int64_t axis, stash;
    double eps;
    uint64_t d = 1;
    size_t x = 0;
    int st;

    if ((st = attr_int(I, node, "axis", -1, &axis)) ||
        (st = attr_int(I, node, "stash_type", 1, &stash)) ||
        (st = attr_float(I, node, "epsilon", 1e-5, &eps)) ||
        (st = get_act(I, node, 0, &x))) {
        return st;
    }
    if (stash != 1) {
        return node_fail(I, node, MEMEST_E_PARSE,
                         "attribute 'stash_type' %lld is not supported "
                         "(only 1, float32 statistics)", (long long)stash);
    }
    for (size_t o = 1; o < n->n_output; o++) {
        size_t vo = str(n->output[o])[0] ? value_of(I, n->output[o])
                                         : SIZE_MAX;
        if (vo != SIZE_MAX && I->v[vo].readers > 0) {
            return node_fail(I, node, MEMEST_E_PARSE,
                             "its output %zu (Mean or InvStdDev) is read; "
                             "only the normalised output is supported", o);
        }
    }
    const struct value *v = &I->v[x];
    if (axis < -(int64_t)v->rank || axis >= (int64_t)v->rank) {
        return node_fail(I, node, MEMEST_E_RANGE,
                         "attribute 'axis' %lld is outside the rank %u "
                         "input", (long long)axis, v->rank);
    }
    if (axis < 0) {
        axis += v->rank;
    }
    if (axis == 0) {
        return node_fail(I, node, MEMEST_E_PARSE,
                         "attribute 'axis' 0 normalises over the batch: "
                         "only the axes of a sample (1 .. %u) are "
                         "supported", v->rank - 1);
    }
    for (unsigned k = (unsigned)axis; k < v->rank; k++) {
        d *= v->dim[k]; /* within the per-sample element count */
    }
    if ((st = gamma_beta(I, node, 1, "scale", d, &gamma))) {
        return st;
    }
    if (n->n_input > 2 && str(n->input[2])[0] &&
        (st = gamma_beta(I, node, 2, "bias B", d, &beta))) {
        return st;
    }
    return emit_layernorm(I, node, x, (unsigned)axis, eps, gamma, beta);
}

/*
 * The decomposed LayerNorm found by patterns.c: this node (the Add of
 * beta, or the Mul of gamma when there is no beta) stands for
 * ReduceMean, Sub, Pow, ReduceMean, Add(eps), Sqrt, Div, Mul(gamma).
 */
int onnx_layernorm_pattern(struct imp *I, size_t node)
{
    const struct ln_pattern *p = &I->ni[node].ln;
    const Onnx__NodeProto *mul = I->g->node[p->mul];
    const struct cval *gamma = NULL, *beta = NULL;
    const size_t x = p->x;
    double eps;
    size_t gslot, bslot;
    int st;

    if (!I->v[x].shaped) {
        if ((st = make_model_input(I, node, x))) {
            return st;
        }
    }
    gslot = str_eq(in_name(mul, 0), str(I->g->node[p->div]->output[0]))
                ? 1 : 0;
    if ((st = get_scalar(I, p->add_eps, p->eps_slot, "epsilon", &eps)) ||
        (st = gamma_beta(I, p->mul, gslot, "scale",
                         I->v[x].dim[I->v[x].rank - 1], &gamma))) {
        return st;
    }
    if (p->mul != node) {
        const Onnx__NodeProto *an = I->g->node[node];
        bslot = str_eq(in_name(an, 0), str(mul->output[0])) ? 1 : 0;
        if ((st = gamma_beta(I, node, bslot, "bias",
                             I->v[x].dim[I->v[x].rank - 1], &beta))) {
            return st;
        }
    }
    return emit_layernorm(I, node, x, I->v[x].rank - 1, eps, gamma, beta);
}

int onnx_transpose(struct imp *I, size_t node)
{
    int64_t perm[4];
    size_t np = 0;
    uint64_t dim[4] = {0, 0, 0, 0};
    unsigned seen = 0;
    int identity = 1;
    size_t x = 0;
    size_t l = 0;
    int st;

    if ((st = get_act(I, node, 0, &x))) {
        return st;
    }
    const struct value *v = &I->v[x];
    if ((st = attr_ints(I, node, "perm", 0, perm, &np))) {
        return st;
    }
    if (np == 0) {
        /* the default reverses the axes, the batch last */
        return node_fail(I, node, MEMEST_E_PARSE,
                         "a Transpose without 'perm' reverses the axes and "
                         "moves the batch: only permutations of a sample's "
                         "axes (the batch kept first) are supported");
    }
    if (np != v->rank) {
        return node_fail(I, node, MEMEST_E_SHAPE,
                         "attribute 'perm' has %zu entries for a rank %u "
                         "input", np, v->rank);
    }
    for (size_t k = 0; k < np; k++) {
        if (perm[k] < 0 || perm[k] >= (int64_t)v->rank ||
            (seen & (1u << perm[k]))) {
            return node_fail(I, node, MEMEST_E_PARSE,
                             "attribute 'perm' is not a permutation of 0 .. "
                             "%u", v->rank - 1);
        }
        seen |= 1u << perm[k];
        dim[k] = v->dim[perm[k]];
        identity &= perm[k] == (int64_t)k;
    }
    if (perm[0] != 0) {
        /* nn.MultiheadAttention's export starts so: say why it was not
         * read as one attention layer */
        return node_fail(I, node, MEMEST_E_PARSE,
                         "attribute 'perm' moves the batch (axis 0 to %lld): "
                         "only permutations of a sample's axes are "
                         "supported%s", (long long)perm[0],
                         v->rank == 3 && perm[0] == 1 && perm[1] == 0
                             ? " (nn.MultiheadAttention is read only as "
                               "exported without masks, see "
                               "libmemest/README.md)"
                             : "");
    }
    if (v->rank < 3) {
        return emit_simple(I, node, "identity", "identity", x, v->rank, dim);
    }
    if (identity) {
        return emit_simple(I, node, "identity", "identity", x, v->rank, dim);
    }
    if ((st = push_layer(I, node, "transpose", I->g->node[node]->name,
                         "transpose", &l))) {
        return st;
    }
    /* the text's perm counts the axes of a sample */
    if (v->rank == 3) {
        snprintf(I->L[l].args, sizeof I->L[l].args, "perm=%lld,%lld",
                 (long long)perm[1] - 1, (long long)perm[2] - 1);
    } else {
        snprintf(I->L[l].args, sizeof I->L[l].args, "perm=%lld,%lld,%lld",
                 (long long)perm[1] - 1, (long long)perm[2] - 1,
                 (long long)perm[3] - 1);
    }
    if ((st = layer_inputs(I, l, &x, 1))) {
        return st;
    }
    return set_output(I, node, 0, l, v->rank, dim);
}

/* MatMul of two computed tensors, both with the batch first: matmul. */
int onnx_matmul_two(struct imp *I, size_t node)
{
    size_t xs[2];
    uint64_t dim[4] = {0, 0, 0, 0};
    size_t l = 0;
    int st;

    if (I->ni[node].bias_add != SIZE_MAX) {
        return node_fail(I, node, MEMEST_E_PARSE,
                         "a MatMul of two computed tensors followed by a "
                         "constant Add is not supported");
    }
    for (size_t i = 0; i < 2; i++) {
        if ((st = get_act(I, node, i, &xs[i]))) {
            return st;
        }
    }
    const struct value *a = &I->v[xs[0]];
    const struct value *b = &I->v[xs[1]];
    if (a->rank != b->rank || a->rank < 3) {
        return node_fail(I, node, MEMEST_E_SHAPE,
                         "a MatMul of '%.40s' (rank %u) and '%.40s' (rank "
                         "%u) is not supported: only of two N x M x K and "
                         "N x K x P or N x H x M x K and N x H x K x P "
                         "tensors", a->name, a->rank, b->name, b->rank);
    }
    if (a->dim[a->rank - 1] != b->dim[b->rank - 2]) {
        return node_fail(I, node, MEMEST_E_SHAPE,
                         "'%.40s' has %llu columns, '%.40s' %llu rows",
                         a->name, (unsigned long long)a->dim[a->rank - 1],
                         b->name, (unsigned long long)b->dim[b->rank - 2]);
    }
    dim[0] = a->dim[0];
    for (unsigned d = 1; d + 2 < a->rank; d++) {
        if (a->dim[d] != b->dim[d] && a->dim[d] != 1 && b->dim[d] != 1) {
            return node_fail(I, node, MEMEST_E_SHAPE,
                             "the leading dimensions %llu and %llu do not "
                             "broadcast", (unsigned long long)a->dim[d],
                             (unsigned long long)b->dim[d]);
        }
        dim[d] = a->dim[d] > b->dim[d] ? a->dim[d] : b->dim[d];
    }
    dim[a->rank - 2] = a->dim[a->rank - 2];
    dim[a->rank - 1] = b->dim[b->rank - 1];
    if ((st = push_layer(I, node, "matmul", I->g->node[node]->name,
                         "matmul", &l)) ||
        (st = layer_inputs(I, l, xs, 2))) {
        return st;
    }
    return set_output(I, node, 0, l, a->rank, dim);
}

/* Concat of Expand(cls_token [1, 1, D], [N, 1, D]) and x N x T x D along
 * axis 1 (patterns.c's find_clstoken): clstoken. */
int onnx_clstoken(struct imp *I, size_t node)
{
    const size_t e = I->ni[node].cls_expand;
    const struct cval *p = NULL;
    uint64_t dim[4];
    size_t x = 0;
    size_t l = 0;
    int st;

    if ((st = get_act(I, node, 1, &x)) ||
        (st = get_const(I, e, 0, "class token", &p))) {
        return st;
    }
    const struct value *v = &I->v[x];
    if (v->rank != 3 || p->rank != 3 || p->dim[0] != 1 || p->dim[1] != 1 ||
        p->dim[2] != v->dim[2] || p->f == NULL) {
        return node_fail(I, node, MEMEST_E_SHAPE,
                         "the class token '%.60s' must be [1, 1, D] and "
                         "'%.60s' N x T x D with the same D",
                         in_name(I->g->node[e], 0), v->name);
    }
    memcpy(dim, v->dim, sizeof dim);
    dim[1] += 1;
    if ((st = push_layer(I, node, "clstoken", I->g->node[node]->name, "cls",
                         &l)) ||
        (st = push_weight(I, l, "weight", 3, p->dim, p->f, NULL)) ||
        (st = layer_inputs(I, l, &x, 1))) {
        return st;
    }
    return set_output(I, node, 0, l, 3, dim);
}

/* Add of x N x T x D and a constant [1, T, D] (or [T, D]): posembed. 1 when
 * the node is one (*st its status), 0 when the constant has another
 * shape. */
int onnx_try_posembed(struct imp *I, size_t node, size_t cslot, int *st)
{
    const struct cval *c = NULL;
    size_t vx = value_of(I, in_name(I->g->node[node], 1 - cslot));
    uint64_t wdim[3];
    size_t x = 0;
    size_t l = 0;

    if (vx == SIZE_MAX || get_const(I, node, cslot, "operand", &c) ||
        c->f == NULL || c->ints != NULL) {
        return 0;
    }
    if ((*st = get_act(I, node, 1 - cslot, &x))) {
        return 1;
    }
    const struct value *v = &I->v[x];
    if (v->rank != 3 || c->count != v->dim[1] * v->dim[2] ||
        c->count < 2 || !(c->rank == 2 || (c->rank == 3 && c->dim[0] == 1)) ||
        c->dim[c->rank - 1] != v->dim[2]) {
        *st = MEMEST_OK;
        return 0;
    }
    wdim[0] = 1;
    wdim[1] = v->dim[1];
    wdim[2] = v->dim[2];
    if ((*st = push_layer(I, node, "posembed", I->g->node[node]->name, "pos",
                          &l)) ||
        (*st = push_weight(I, l, "weight", 3, wdim, c->f, NULL)) ||
        (*st = layer_inputs(I, l, &x, 1))) {
        return 1;
    }
    *st = set_output(I, node, 0, l, v->rank, v->dim);
    return 1;
}

/*
 * nn.MultiheadAttention(batch_first=True) as PyTorch 1.13 exports it
 * (patterns.c's find_mha): this node, the last Transpose back to
 * N x T x D, stands for Transpose to T x N x D, the in-projection MatMul
 * and its bias Add, the three Slices into q, k, v, their Reshapes to
 * T x (N h) x d and Transposes into heads, q's scaling, Q K^T, Softmax,
 * A V, the merge, the out-projection Gemm and the Reshape to T x N x D.
 * Its weights, in the attention layer's state_dict: in_proj_weight
 * [3D, D] (the MatMul's constant is its transpose), out_proj.weight
 * [D, D], in_proj_bias [3D], out_proj.bias [D].
 */
int onnx_mha(struct imp *I, size_t node)
{
    const struct mha_pattern *p = &I->ni[node].mha;
    const Onnx__NodeProto *gemm = I->g->node[p->gemm];
    const struct cval *win = NULL, *bin = NULL, *wout = NULL, *bout = NULL;
    int64_t ta = 0, tb = 0;
    double alpha = 1, beta = 1;
    uint64_t d3dim[2], ddim[2], b3, bd;
    float *w = NULL;
    uint64_t D;
    size_t x = 0;
    size_t l = 0;
    int st;

    if ((st = get_act(I, p->first, 0, &x))) {
        return st;
    }
    const struct value *v = &I->v[x];
    if (v->rank != 3) {
        return node_fail(I, p->first, MEMEST_E_SHAPE,
                         "the attention's input '%.60s' has rank %u, not "
                         "3 (N x T x D)", v->name, v->rank);
    }
    D = v->dim[2];
    if ((st = get_const(I, p->in_mm, 1, "in_proj weight", &win)) ||
        (st = get_const(I, p->in_add, p->in_bias_slot, "in_proj bias",
                        &bin)) ||
        (st = get_const(I, p->gemm, 1, "out_proj weight", &wout))) {
        return st;
    }
    if (p->written) {
        /* MatMul(proj.weight^T) and its bias Add, this node */
        if ((st = get_const(I, node, p->out_bias_slot, "proj bias",
                            &bout))) {
            return st;
        }
    } else {
        if ((st = attr_int(I, p->gemm, "transA", 0, &ta)) ||
            (st = attr_int(I, p->gemm, "transB", 0, &tb)) ||
            (st = attr_float(I, p->gemm, "alpha", 1.0, &alpha)) ||
            (st = attr_float(I, p->gemm, "beta", 1.0, &beta))) {
            return st;
        }
        if (gemm->n_input < 3 || str(gemm->input[2])[0] == '\0') {
            return node_fail(I, p->gemm, MEMEST_E_PARSE,
                             "the attention's out-projection has no bias: "
                             "only nn.MultiheadAttention with bias=True is "
                             "supported");
        }
        if ((st = get_const(I, p->gemm, 2, "out_proj bias", &bout))) {
            return st;
        }
        if (ta != 0 || tb != 1 || alpha != 1.0 || beta != 1.0) {
            return node_fail(I, p->gemm, MEMEST_E_PARSE,
                             "the attention's out-projection Gemm must have "
                             "transA=0, transB=1, alpha=1, beta=1");
        }
    }
    if (win->rank != 2 || win->dim[0] != D || win->dim[1] != 3 * D ||
        bin->count != 3 * D || wout->rank != 2 || wout->dim[0] != D ||
        wout->dim[1] != D || bout->count != D || win->f == NULL ||
        bin->f == NULL || wout->f == NULL || bout->f == NULL) {
        return node_fail(I, node, MEMEST_E_SHAPE,
                         "the attention's projections must be [%llu, %llu], "
                         "[%llu], [%llu, %llu], [%llu] for D = %llu",
                         (unsigned long long)D, (unsigned long long)(3 * D),
                         (unsigned long long)(3 * D), (unsigned long long)D,
                         (unsigned long long)D, (unsigned long long)D,
                         (unsigned long long)D);
    }
    if (p->head_dim == 0 || D % p->head_dim != 0 ||
        (p->heads != 0 && p->heads * p->head_dim != D)) {
        return node_fail(I, p->scale, MEMEST_E_PARSE,
                         "the scaling by %g is not 1/sqrt(d) of the head "
                         "width d = D / heads (D = %llu%s): not read as "
                         "one attention layer", p->scale_value,
                         (unsigned long long)D,
                         p->heads != 0 ? ", heads from the Reshape" : "");
    }
    /* the weight as the layer's state_dict keeps it: in_proj_weight
     * [3D, D] (the transpose of the MatMul's [D, 3D]), then
     * out_proj.weight [D, D] */
    w = malloc((size_t)(4 * D * D) * sizeof *w);
    if (w == NULL) {
        return nomem(I);
    }
    for (uint64_t i = 0; i < 3 * D; i++) {
        for (uint64_t j = 0; j < D; j++) {
            w[i * D + j] = win->f[j * 3 * D + i];
        }
    }
    /* a hand-written attention's proj MatMul holds proj.weight^T: the
     * layer keeps out_proj.weight after in_proj_weight in the same
     * array */
    for (uint64_t i = 0; p->written && i < D; i++) {
        for (uint64_t j = 0; j < D; j++) {
            w[3 * D * D + i * D + j] = wout->f[j * D + i];
        }
    }
    {
        /* named after the module: "/blocks.0/attn/Transpose" gives
         * "/blocks.0/attn" */
        const char *fn = str(I->g->node[p->first]->name);
        const char *slash = strrchr(fn, '/');
        char want[128];
        snprintf(want, sizeof want, "%.*s",
                 slash != NULL && slash > fn ? (int)(slash - fn)
                                             : (int)strlen(fn), fn);
        if ((st = push_layer(I, node, "attention", want, "attn", &l))) {
            free(w);
            return st;
        }
    }
    snprintf(I->L[l].args, sizeof I->L[l].args, "heads=%llu bias=yes",
             (unsigned long long)(D / p->head_dim));
    d3dim[0] = 3 * D;
    d3dim[1] = D;
    ddim[0] = D;
    ddim[1] = D;
    b3 = 3 * D;
    bd = D;
    if ((st = push_weight(I, l, "in_proj_weight", 2, d3dim, w, w)) ||
        (st = push_weight(I, l, "out_proj.weight", 2, ddim,
                          p->written ? w + 3 * D * D : wout->f, NULL)) ||
        (st = push_weight(I, l, "in_proj_bias", 1, &b3, bin->f, NULL)) ||
        (st = push_weight(I, l, "out_proj.bias", 1, &bd, bout->f, NULL)) ||
        (st = layer_inputs(I, l, &x, 1))) {
        return st;
    }
    return set_output(I, node, 0, l, 3, v->dim);
}
