/*
 * ONNX import: the handlers of reshaping, activations, Concat,
 * Dropout, Identity, the fused GELU, and the refusals of operators read
 * only in a folded or fused form.
 */
#include "onnx/fold.h"
#include "onnx/onnx_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../alloc_rec.h" /* last: it wraps malloc and co. */

int onnx_flatten(struct imp *I, size_t node)
{
    int64_t axis;
    size_t x = 0;
    int st;
    if ((st = attr_int(I, node, "axis", 1, &axis)) ||
        (st = get_act(I, node, 0, &x))) {
        return st;
    }
    if (axis < 0) {
        axis += I->v[x].rank;
    }
    if (axis != 1) {
        return node_fail(I, node, MEMEST_E_PARSE,
                         "axis %lld is not supported: only 1 (keep the "
                         "batch, flatten each sample)", (long long)axis);
    }
    return emit_flat(I, node, x);
}

/* The shape for a message: "[N, 2, -1]", the batch written N. */
static void shape_value_text(const struct cval *s, char *buf, size_t cap)
{
    size_t off = 0;
    buf[0] = '\0';
    for (uint64_t i = 0; i < s->count && off + 40 < cap; i++) {
        off += (size_t)snprintf(buf + off, cap - off, "%s", i ? ", " : "[");
        onnx_term_text(s->ints[i], s->nb ? s->nb[i] : 0, buf + off,
                       cap - off);
        off += strlen(buf + off);
    }
    snprintf(buf + off, cap - off, "%s]", s->count == 0 ? "[" : "");
}

int onnx_reshape(struct imp *I, size_t node)
{
    const Onnx__NodeProto *n = I->g->node[node];
    const struct cval *s;
    int64_t allowzero;
    size_t x = 0;
    uint64_t k;
    char text[96];
    int st;

    if ((st = attr_int(I, node, "allowzero", 0, &allowzero)) ||
        (st = get_act(I, node, 0, &x)) ||
        (st = get_const(I, node, 1, "shape", &s))) {
        return st;
    }
    k = per_sample(&I->v[x]);
    if (s->ints == NULL || s->rank != 1) {
        return node_fail(I, node, MEMEST_E_PARSE,
                         "the shape '%.60s' must be a list of integers; it "
                         "is a rank %u tensor of %s", in_name(n, 1), s->rank,
                         s->ints ? "integers" : "floats");
    }
    if (s->count == 2) {
        /* [N, K], [N, -1], [0, K], [0, -1], [-1, K] with N the batch: a
         * number equal to a fixed batch, or the batch itself where a
         * Shape of an activation was folded with the batch free
         * (x.view(x.size(0), -1)) */
        int64_t a = s->ints[0], b = s->ints[1];
        int a_is_n = s->nb != NULL && s->nb[0] == 1 && a == 0;
        int a_num = s->nb == NULL || s->nb[0] == 0;
        int b_num = s->nb == NULL || s->nb[1] == 0;
        int batch_ok = a_is_n ||
                       (a_num && ((a == 0 && !allowzero) ||
                                  (a > 0 && (uint64_t)a == I->v[x].dim[0]) ||
                                  (a == -1 && b > 0 && (uint64_t)b == k)));
        int k_ok = b_num && (b == -1 ? !(a_num && a == -1)
                                     : (b > 0 && (uint64_t)b == k));
        if (batch_ok && k_ok) {
            return emit_flat(I, node, x);
        }
    }
    if (s->count == 5) {
        return onnx_reshape_5d(I, node, x, s);
    }
    if (s->count == 3 || s->count == 4) {
        return onnx_reshape_view(I, node, x, s, allowzero);
    }
    shape_value_text(s, text, sizeof text);
    return node_fail(I, node, MEMEST_E_PARSE,
                     "the shape %s is not supported: only a reshape of each "
                     "sample to a flat vector ([N, %llu] or [N, -1])", text,
                     (unsigned long long)k);
}

/* Softmax and LogSoftmax: only axes whose meaning is the layer's. */
static int softmax_on(struct imp *I, size_t node, size_t x, int64_t axis,
                      int flattens, enum memest_act act);

static int softmax(struct imp *I, size_t node, enum memest_act act)
{
    int64_t axis;
    size_t x = 0;
    int st;

    if ((st = attr_int(I, node, "axis", I->opset >= 13 ? -1 : 1, &axis)) ||
        (st = get_act(I, node, 0, &x))) {
        return st;
    }
    return softmax_on(I, node, x, axis, I->opset < 13, act);
}

/* The expanded form (patterns.c's find_softmax): ReduceMax, Sub, Exp,
 * ReduceSum and Div (LogSoftmax: Log and Sub) along one axis, which is
 * that axis alone whatever the opset. */
int onnx_softmax_pattern(struct imp *I, size_t node)
{
    const struct sm_pattern *p = &I->ni[node].sm;
    size_t x = 0;
    int st = get_act(I, p->first, 0, &x);
    if (st != MEMEST_OK) {
        return st;
    }
    return softmax_on(I, node, x, p->axis, 0, p->act);
}

/* Along `axis` of x; `flattens` when the input is flattened from the
 * axis on (Softmax before opset 13). */
static int softmax_on(struct imp *I, size_t node, size_t x, int64_t axis,
                      int flattens, enum memest_act act)
{
    const Onnx__NodeProto *n = I->g->node[node];
    int ok;
    int st;
    const struct value *v = &I->v[x];
    if (axis < -(int64_t)v->rank || axis >= (int64_t)v->rank) {
        return node_fail(I, node, MEMEST_E_RANGE,
                         "axis %lld is outside the rank %u input",
                         (long long)axis, v->rank);
    }
    if (axis < 0) {
        axis += v->rank;
    }
    /* before opset 13 the input is flattened from the axis on: the same
     * as along the axis only when every later axis has size 1 (then
     * along the last axis of size above 1, or the axis itself) */
    ok = axis >= 1;
    for (unsigned d = (unsigned)axis + 1; ok && flattens &&
                                          d < v->rank; d++) {
        ok = v->dim[d] == 1;
    }
    if (!ok) {
        return node_fail(I, node, MEMEST_E_PARSE,
                         "axis %lld of a rank %u input (opset %lld) is not "
                         "supported: only along one axis of a sample (before "
                         "opset 13 the axes from it on are flattened into "
                         "one, the same only when the later axes have size "
                         "1)", (long long)axis, v->rank, (long long)I->opset);
    }
    {
        /* the text's default axis (CONTRACTS): the features of a vector
         * or of T x D, the channels of CxHxW (and of H x T x d); another
         * axis is a standalone layer with axis=, never fused */
        const unsigned pa = (unsigned)axis - 1;
        const unsigned def = v->rank == 3 ? 1 : 0;
        size_t l = 0;
        if (pa == def || v->sig) {
            return emit_act(I, node, x, act, n->name);
        }
        if ((st = push_layer(I, node, memest_act_name(act), n->name,
                             memest_act_name(act), &l))) {
            return st;
        }
        snprintf(I->L[l].args, sizeof I->L[l].args, "axis=%u", pa);
        if ((st = layer_inputs(I, l, &x, 1))) {
            return st;
        }
        return set_output(I, node, 0, l, v->rank, v->dim);
    }
}

int onnx_clip(struct imp *I, size_t node)
{
    const Onnx__NodeProto *n = I->g->node[node];
    double lo = -INFINITY, hi = INFINITY;
    size_t x = 0;
    int st;

    if (I->opset >= 11 && n->n_attribute > 0) {
        /* from opset 11 the bounds are inputs */
        return node_fail(I, node, MEMEST_E_PARSE,
                         "attribute '%.40s' is not supported from opset 11 "
                         "(the bounds are inputs)",
                         str(n->attribute[0]->name));
    }
    if ((st = get_act(I, node, 0, &x))) {
        return st;
    }
    if (I->opset < 11) {
        /* before opset 11 the bounds were attributes */
        if ((st = attr_float(I, node, "min", -INFINITY, &lo)) ||
            (st = attr_float(I, node, "max", INFINITY, &hi))) {
            return st;
        }
    }
    if (in_name(n, 1)[0] && (st = get_scalar(I, node, 1, "min", &lo))) {
        return st;
    }
    if (in_name(n, 2)[0] && (st = get_scalar(I, node, 2, "max", &hi))) {
        return st;
    }
    if (lo == 0.0 && hi == 6.0) {
        return emit_act(I, node, x, MEMEST_ACT_RELU6, n->name);
    }
    if (lo == 0.0 && hi == INFINITY) {
        return emit_act(I, node, x, MEMEST_ACT_RELU, n->name);
    }
    if (lo != lo || hi != hi) {
        return node_fail(I, node, MEMEST_E_RANGE,
                         "a NaN bound (min %g, max %g) is not supported", lo,
                         hi);
    }
    /* the kernel clips in float: a bound is the float it rounds to, as
     * in ONNX, whose bounds are tensors of the input's type */
    return emit_act_params(I, node, x, MEMEST_ACT_CLIP, (double)(float)lo,
                           (double)(float)hi, n->name);
}

static void shape_text(const struct value *v, char *buf, size_t cap)
{
    size_t off = (size_t)snprintf(buf, cap, "N");
    for (unsigned d = 1; d < v->rank && off < cap; d++) {
        off += (size_t)snprintf(buf + off, cap - off, "x%llu",
                                (unsigned long long)v->dim[d]);
    }
}

int onnx_concat(struct imp *I, size_t node)
{
    const Onnx__NodeProto *n = I->g->node[node];
    size_t *xs;
    uint64_t dim[4];
    int64_t axis;
    unsigned a = 0;
    size_t l = 0;
    int st;

    if ((st = attr_int(I, node, "axis", I->opset < 4 ? 1 : INT64_MIN,
                       &axis))) {
        return st;
    }
    if (n->n_input < 1 || axis == INT64_MIN) {
        return node_fail(I, node, MEMEST_E_PARSE,
                         "a Concat needs inputs and an axis");
    }
    xs = malloc(n->n_input * sizeof *xs);
    if (xs == NULL) {
        return nomem(I);
    }
    for (size_t i = 0; i < n->n_input; i++) {
        if ((st = get_act(I, node, i, &xs[i]))) {
            goto done;
        }
    }
    memcpy(dim, I->v[xs[0]].dim, sizeof dim);
    if ((st = norm_axis(I, node, axis, I->v[xs[0]].rank, "axis", &a))) {
        goto done;
    }
    if (a == 0) {
        st = node_fail(I, node, MEMEST_E_PARSE,
                       "axis %lld is the batch: only the axes of a sample "
                       "(1 .. %u) are joined", (long long)axis,
                       I->v[xs[0]].rank - 1);
        goto done;
    }
    dim[a] = 0;
    for (size_t i = 0; i < n->n_input; i++) {
        const struct value *va = &I->v[xs[0]];
        const struct value *vb = &I->v[xs[i]];
        int ok = va->rank == vb->rank;
        for (unsigned d = 1; ok && d < va->rank; d++) {
            ok = d == a || va->dim[d] == vb->dim[d];
        }
        if (!ok) {
            char sa[64], sb[64];
            shape_text(va, sa, sizeof sa);
            shape_text(vb, sb, sizeof sb);
            st = node_fail(I, node, MEMEST_E_SHAPE,
                           "shape mismatch along axes other than %u: "
                           "'%.40s' is %s, '%.40s' is %s",
                           a, va->name, sa, vb->name, sb);
            goto done;
        }
        dim[a] += vb->dim[a]; /* each at most MAX_ELEMENTS: no overflow */
    }
    if (n->n_input == 1) {
        st = emit_simple(I, node, "identity", "identity", xs[0],
                         I->v[xs[0]].rank, dim);
        goto done;
    }
    if ((st = push_layer(I, node, "concat", n->name, "concat", &l)) ||
        (st = layer_inputs(I, l, xs, n->n_input))) {
        goto done;
    }
    /* the text's axis counts the dimensions of a sample: c, h, w for ONNX
     * axes 1, 2, 3 (of NxC, NxAxB or NxCxHxW); c is its default */
    if (a > 1) {
        snprintf(I->L[l].args, sizeof I->L[l].args, "axis=%c", "chw"[a - 1]);
    }
    st = set_output(I, node, 0, l, I->v[xs[0]].rank, dim);
done:
    free(xs);
    return st;
}

int onnx_dropout(struct imp *I, size_t node)
{
    const Onnx__NodeProto *n = I->g->node[node];
    size_t x = 0;
    int st;

    int64_t is_test;
    if ((st = attr_int(I, node, "is_test", I->opset < 7 ? 0 : 1,
                       &is_test))) {
        return st;
    }
    if (is_test == 0) {
        /* before opset 7 a Dropout dropped unless is_test=1 */
        return node_fail(I, node, MEMEST_E_PARSE,
                         "is_test=0 drops at random; only inference (an "
                         "identity) is supported");
    }
    if (n->n_output > 1 && str(n->output[1])[0] != '\0' &&
        I->v[value_of(I, n->output[1])].readers > 0) {
        return node_fail(I, node, MEMEST_E_PARSE,
                         "its mask output is read, which is not supported");
    }
    if (in_name(n, 2)[0] != '\0') {
        double training = 0.0;
        if ((st = get_scalar(I, node, 2, "training_mode", &training))) {
            return st;
        }
        if (training != 0.0) {
            return node_fail(I, node, MEMEST_E_PARSE,
                             "training_mode is true; only inference (an "
                             "identity) is supported");
        }
    }
    if ((st = get_act(I, node, 0, &x))) {
        return st;
    }
    return emit_simple(I, node, "dropout", "dropout", x, I->v[x].rank,
                       I->v[x].dim);
}

int onnx_gap(struct imp *I, size_t node)
{
    uint64_t dim[4];
    size_t x = 0;
    int st;
    if ((st = get_act(I, node, 0, &x)) ||
        (st = need_rank(I, node, &I->v[x], 4, "NxCxHxW"))) {
        return st;
    }
    dim[0] = I->v[x].dim[0];
    dim[1] = I->v[x].dim[1];
    dim[2] = dim[3] = 1;
    return emit_simple(I, node, "globalavgpool", "gap", x, 4, dim);
}

/* An element-wise activation node (Relu, Sigmoid, Tanh, Erf). */
static int unary(struct imp *I, size_t node, enum memest_act act)
{
    size_t x = 0;
    int st;
    if ((st = get_act(I, node, 0, &x))) {
        return st;
    }
    return emit_act(I, node, x, act, I->g->node[node]->name);
}

int onnx_gelu(struct imp *I, size_t node)
{
    const size_t x = I->ni[node].gelu_x;
    const Onnx__NodeProto *erf = I->g->node[I->ni[node].gelu_erf];
    /* the pattern reads x from the node that starts it, already checked
     * to be a computed tensor or a graph input */
    size_t vi = x;
    int st = MEMEST_OK;
    if (!I->v[vi].shaped) {
        if (I->v[vi].kind != V_GRAPH_INPUT) {
            return node_fail(I, node, MEMEST_E_PARSE,
                             "the GELU input '%.60s' is not computed "
                             "before it", I->v[vi].name);
        }
        st = make_model_input(I, node, vi);
    }
    if (st == MEMEST_OK) {
        /* PyTorch names the nodes of the pattern after their operators
         * (Div_3, Erf_4, ...), none of which names the whole: "gelu".
         * The pattern is the exact GELU, not the tanh form of act=gelu */
        (void)erf;
        st = emit_act(I, node, vi, MEMEST_ACT_GELU_ERF, "gelu");
    }
    return st;
}

int onnx_softmax(struct imp *I, size_t node)
{
    return softmax(I, node, MEMEST_ACT_SOFTMAX);
}

int onnx_logsoftmax(struct imp *I, size_t node)
{
    return softmax(I, node, MEMEST_ACT_LOGSOFTMAX);
}

int onnx_relu(struct imp *I, size_t node)
{
    return unary(I, node, MEMEST_ACT_RELU);
}

int onnx_sigmoid(struct imp *I, size_t node)
{
    return unary(I, node, MEMEST_ACT_SIGMOID);
}

int onnx_tanh(struct imp *I, size_t node)
{
    return unary(I, node, MEMEST_ACT_TANH);
}

int onnx_erf(struct imp *I, size_t node)
{
    return unary(I, node, MEMEST_ACT_ERF);
}

int onnx_softplus(struct imp *I, size_t node)
{
    return unary(I, node, MEMEST_ACT_SOFTPLUS);
}

int onnx_hardswish(struct imp *I, size_t node)
{
    return unary(I, node, MEMEST_ACT_HARDSWISH);
}

/* An activation with attribute alpha (and beta), each finite: the float
 * the attribute holds. */
static int unary_params(struct imp *I, size_t node, enum memest_act act,
                        double def_alpha, const char *beta_name,
                        double def_beta)
{
    double alpha = def_alpha, beta = def_beta;
    size_t x = 0;
    int st;
    if ((st = attr_float(I, node, "alpha", def_alpha, &alpha)) ||
        (beta_name && (st = attr_float(I, node, beta_name, def_beta,
                                       &beta)))) {
        return st;
    }
    if (!isfinite(alpha) || !isfinite(beta)) {
        return node_fail(I, node, MEMEST_E_RANGE,
                         "attribute '%s' is not finite",
                         isfinite(alpha) ? "beta" : "alpha");
    }
    if ((st = get_act(I, node, 0, &x))) {
        return st;
    }
    return emit_act_params(I, node, x, act, alpha, beta,
                           I->g->node[node]->name);
}

int onnx_hardsigmoid(struct imp *I, size_t node)
{
    return unary_params(I, node, MEMEST_ACT_HARDSIGMOID, (double)0.2f,
                        "beta", 0.5);
}

int onnx_leakyrelu(struct imp *I, size_t node)
{
    return unary_params(I, node, MEMEST_ACT_LEAKYRELU, (double)0.01f, NULL,
                        0.0);
}

int onnx_elu(struct imp *I, size_t node)
{
    return unary_params(I, node, MEMEST_ACT_ELU, 1.0, NULL, 0.0);
}

/* x * Sigmoid(x) or x * HardSigmoid(x) (patterns.c): one silu or
 * hardswish layer reading x, fused into x's producer like any
 * activation. */
int onnx_swish(struct imp *I, size_t node)
{
    const size_t x = I->ni[node].swish_x;
    const enum memest_act act = I->ni[node].swish_act;
    int st = MEMEST_OK;
    if (!I->v[x].shaped) {
        if (I->v[x].kind != V_GRAPH_INPUT) {
            return node_fail(I, node, MEMEST_E_PARSE,
                             "the %s input '%.60s' is not computed before "
                             "it", memest_act_name(act), I->v[x].name);
        }
        st = make_model_input(I, node, x);
    }
    if (st == MEMEST_OK) {
        st = emit_act(I, node, x, act, memest_act_name(act));
    }
    return st;
}

int onnx_identity(struct imp *I, size_t node)
{
    size_t x = 0;
    int st = get_act(I, node, 0, &x);
    if (st != MEMEST_OK) {
        return st;
    }
    return emit_simple(I, node, "identity", "identity", x, I->v[x].rank,
                       I->v[x].dim);
}
