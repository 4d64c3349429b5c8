/*
 * ONNX import: the graph's analysis before translation. Values are
 * registered (initializers, graph inputs, node outputs); a node's outputs
 * are constants when its operator folds and its inputs are constants (a
 * Shape folds whatever it reads); liveness runs back from the output; and
 * the fused patterns are found: PyTorch's exact GELU, x * Sigmoid(x)
 * (SiLU), x * HardSigmoid(x) (hard-swish) and a MatMul's bias Add.
 */
#include "onnx/onnx_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "../alloc_rec.h" /* last: it wraps malloc and co. */

/* The node making value vi, SIZE_MAX if none. */
static size_t producer(const struct imp *I, size_t vi)
{
    return vi != SIZE_MAX && I->v[vi].kind == V_ACT ? I->v[vi].producer
                                                    : SIZE_MAX;
}

static int op_is(const struct imp *I, size_t node, const char *op)
{
    return node != SIZE_MAX && str_eq(I->g->node[node]->op_type, op) &&
           I->ni[node].live && !I->ni[node].skip &&
           I->ni[node].gelu_x == SIZE_MAX && I->ni[node].swish_x == SIZE_MAX;
}

/* The only reader of value vi, or SIZE_MAX. */
static size_t sole_reader(const struct imp *I, size_t vi)
{
    if (vi == SIZE_MAX) {
        return SIZE_MAX; /* an output with no name */
    }
    return I->v[vi].readers == 1 && vi != I->output_value ? I->v[vi].reader
                                                         : SIZE_MAX;
}

static size_t out0(struct imp *I, size_t node)
{
    const Onnx__NodeProto *n = I->g->node[node];
    return n->n_output >= 1 ? value_of(I, str(n->output[0])) : SIZE_MAX;
}

/* For a binary node with one scalar constant operand close to c: the
 * other operand's value, else SIZE_MAX. */
static size_t binary_with(struct imp *I, size_t node, double c, int either)
{
    const Onnx__NodeProto *n = I->g->node[node];
    double s;
    if (n->n_input != 2) {
        return SIZE_MAX;
    }
    for (size_t k = 0; k < (either ? 2u : 1u); k++) {
        size_t cslot = 1 - k;
        if (peek_scalar(I, n, cslot, &s) && fabs(s - c) <= 1e-4 * fabs(c)) {
            return value_of(I, in_name(n, k));
        }
    }
    return SIZE_MAX;
}

/*
 * Find PyTorch's exported GELU, x * 0.5 * (1 + erf(x / sqrt(2))):
 * Div(x, sqrt2) or Mul(x, 1/sqrt2) -> Erf -> Add(., 1) -> Mul(x, .) ->
 * Mul(., 0.5), or with the half taken first: Mul(x, 0.5) -> Mul(., Add).
 * Every intermediate has one reader. The last node then stands for the
 * whole pattern (gelu_x), the others are skipped, and x loses the reader
 * the pattern counted twice.
 */
static void find_gelu(struct imp *I)
{
    for (size_t e = 0; e < I->g->n_node; e++) {
        size_t d, x, a, m, fin, h = SIZE_MAX, ev, av, mv, other;
        if (!op_is(I, e, "Erf") || I->g->node[e]->n_input != 1) {
            continue;
        }
        d = producer(I, value_of(I, in_name(I->g->node[e], 0)));
        if (d == SIZE_MAX || sole_reader(I, out0(I, d)) != e) {
            continue;
        }
        if (op_is(I, d, "Div")) {
            x = binary_with(I, d, 1.4142135623730951, 0);
        } else if (op_is(I, d, "Mul")) {
            x = binary_with(I, d, 0.70710678118654752, 1);
        } else {
            continue;
        }
        ev = out0(I, e);
        if (x == SIZE_MAX || ev == SIZE_MAX) {
            continue;
        }
        a = sole_reader(I, ev);
        if (!op_is(I, a, "Add") || binary_with(I, a, 1.0, 1) != ev) {
            continue;
        }
        av = out0(I, a);
        m = av != SIZE_MAX ? sole_reader(I, av) : SIZE_MAX;
        if (!op_is(I, m, "Mul") || I->g->node[m]->n_input != 2) {
            continue;
        }
        other = value_of(I, in_name(I->g->node[m], 0)) == av
                    ? value_of(I, in_name(I->g->node[m], 1))
                    : value_of(I, in_name(I->g->node[m], 0));
        mv = out0(I, m);
        if (other == x && mv != SIZE_MAX) {
            fin = sole_reader(I, mv);
            if (!op_is(I, fin, "Mul") || binary_with(I, fin, 0.5, 1) != mv) {
                continue;
            }
        } else {
            h = producer(I, other);
            if (!op_is(I, h, "Mul") || binary_with(I, h, 0.5, 1) != x ||
                sole_reader(I, other) != m) {
                continue;
            }
            fin = m;
        }
        I->ni[d].skip = 1;
        I->ni[e].skip = 1;
        I->ni[a].skip = 1;
        if (fin != m) {
            I->ni[m].skip = 1;
        } else {
            I->ni[h].skip = 1;
        }
        I->ni[fin].gelu_x = x;
        I->ni[fin].gelu_erf = e;
        I->v[x].readers--; /* read by d and by m or h: one gelu now */
    }
}

/* A float attribute of a node, def when absent or of another type. */
static double attr_f(const Onnx__NodeProto *n, const char *name, double def)
{
    const Onnx__AttributeProto *a = attr(n, name);
    return a != NULL && a->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT
               ? (double)a->f
               : def;
}

/*
 * Find x * Sigmoid(x), PyTorch's export of nn.SiLU, and x * HardSigmoid(x)
 * with alpha 1/6 and beta 0.5, its export of nn.Hardswish before opset
 * 14: a Mul whose one operand is the Sigmoid's (HardSigmoid's) output,
 * read by the Mul alone, and whose other operand is that node's own input.
 * A Mul of a gate computed from another tensor (squeeze-excite's) is not
 * this pattern. The Mul then stands for the activation (swish_x), the
 * Sigmoid is skipped, and x loses the reader counted twice.
 */
static void find_swish(struct imp *I)
{
    for (size_t m = 0; m < I->g->n_node; m++) {
        const Onnx__NodeProto *mn = I->g->node[m];
        if (!op_is(I, m, "Mul") || mn->n_input != 2) {
            continue;
        }
        for (size_t k = 0; k < 2; k++) {
            const size_t s = value_of(I, in_name(mn, k));
            const size_t x = value_of(I, in_name(mn, 1 - k));
            const size_t p = producer(I, s);
            enum memest_act act;
            if (p == SIZE_MAX || x == SIZE_MAX || x == s ||
                sole_reader(I, s) != m || I->g->node[p]->n_input != 1 ||
                value_of(I, in_name(I->g->node[p], 0)) != x) {
                continue;
            }
            if (op_is(I, p, "Sigmoid")) {
                act = MEMEST_ACT_SILU;
            } else if (op_is(I, p, "HardSigmoid") &&
                       fabs(attr_f(I->g->node[p], "alpha", 0.2) -
                            1.0 / 6.0) <= 1e-7 &&
                       attr_f(I->g->node[p], "beta", 0.5) == 0.5) {
                act = MEMEST_ACT_HARDSWISH;
            } else {
                continue;
            }
            I->ni[p].skip = 1;
            I->ni[m].swish_x = x;
            I->ni[m].swish_act = act;
            I->v[x].readers--; /* read by p and by m: one activation */
            break;
        }
    }
}

/* A MatMul whose only reader adds a constant: the bias of one dense. */
static void find_matmul_bias(struct imp *I)
{
    for (size_t mm = 0; mm < I->g->n_node; mm++) {
        size_t yv, a, b;
        const Onnx__NodeProto *an;
        if (!op_is(I, mm, "MatMul") || (yv = out0(I, mm)) == SIZE_MAX) {
            continue;
        }
        a = sole_reader(I, yv);
        if (!op_is(I, a, "Add") || I->g->node[a]->n_input != 2) {
            continue;
        }
        an = I->g->node[a];
        b = value_of(I, in_name(an, value_of(I, in_name(an, 0)) == yv));
        if (b == SIZE_MAX || !is_constant(&I->v[b])) {
            continue;
        }
        I->ni[mm].bias_add = a;
        I->ni[a].skip = 1;
    }
}

/* Whether node's int list attribute `name` is exactly want[0..n). */
static int ints_attr_is(const Onnx__NodeProto *n, const char *name,
                        const int64_t *want, size_t cnt)
{
    const Onnx__AttributeProto *a = attr(n, name);
    return a != NULL && a->n_ints == cnt &&
           memcmp(a->ints, want, cnt * sizeof *want) == 0;
}

/* An int attribute, def when absent. */
static int64_t int_attr(const Onnx__NodeProto *n, const char *name,
                        int64_t def)
{
    const Onnx__AttributeProto *a = attr(n, name);
    return a != NULL && a->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT
               ? a->i
               : def;
}

/* The first live node after `after` reading value vi in slot `slot` with
 * operator op, or SIZE_MAX. */
static size_t reader_op(struct imp *I, size_t vi, size_t after,
                        const char *op, size_t slot)
{
    for (size_t i = after + 1; vi != SIZE_MAX && i < I->g->n_node; i++) {
        const Onnx__NodeProto *n = I->g->node[i];
        if (op_is(I, i, op) && n->n_input > slot &&
            value_of(I, in_name(n, slot)) == vi) {
            return i;
        }
    }
    return SIZE_MAX;
}

/* A ReduceMean over the last axis with the dimension kept, as PyTorch
 * exports LayerNorm's mean and variance (axes an attribute before opset
 * 18). */
static int mean_last(struct imp *I, size_t node)
{
    static const int64_t last[1] = {-1};
    const Onnx__NodeProto *n = I->g->node[node];
    return op_is(I, node, "ReduceMean") && n->n_input == 1 &&
           ints_attr_is(n, "axes", last, 1) &&
           int_attr(n, "keepdims", 1) == 1;
}

/* The slot of a binary node's one constant operand, or SIZE_MAX. */
static size_t const_slot(struct imp *I, size_t node)
{
    const Onnx__NodeProto *n = I->g->node[node];
    for (size_t k = 0; n->n_input == 2 && k < 2; k++) {
        size_t vi = value_of(I, in_name(n, k));
        size_t vo = value_of(I, in_name(n, 1 - k));
        if (vi != SIZE_MAX && is_constant(&I->v[vi]) &&
            (vo == SIZE_MAX || !is_constant(&I->v[vo]))) {
            return k;
        }
    }
    return SIZE_MAX;
}

/*
 * nn.LayerNorm as PyTorch exports it before opset 17: ReduceMean(x, -1)
 * -> Sub(x, mean) = xc -> Pow(xc, 2) -> ReduceMean(-1) -> Add(., eps)
 * -> Sqrt -> Div(xc, .) -> Mul(., gamma) -> Add(., beta). Every
 * intermediate is read by the next node alone (xc by the Pow and the
 * Div). The last node (the Mul without a beta) then stands for one
 * layernorm; the others are skipped. Anything else leaves the pieces to
 * their handlers, which refuse them by name (a ReduceMean over the last
 * axis, Pow, Sqrt have none).
 */
static void find_layernorm(struct imp *I)
{
    for (size_t r1 = 0; r1 < I->g->n_node; r1++) {
        size_t x, sub, xc, pw, r2, ae, sq, dv, mu, fin, b, es;
        double two;
        if (!mean_last(I, r1)) {
            continue;
        }
        x = value_of(I, in_name(I->g->node[r1], 0));
        sub = sole_reader(I, out0(I, r1));
        if (x == SIZE_MAX || !op_is(I, sub, "Sub") ||
            I->g->node[sub]->n_input != 2 ||
            value_of(I, in_name(I->g->node[sub], 0)) != x ||
            (xc = out0(I, sub)) == SIZE_MAX || I->v[xc].readers != 2) {
            continue;
        }
        pw = reader_op(I, xc, sub, "Pow", 0);
        dv = reader_op(I, xc, sub, "Div", 0);
        if (pw == SIZE_MAX || dv == SIZE_MAX ||
            !peek_scalar(I, I->g->node[pw], 1, &two) || two != 2.0) {
            continue;
        }
        r2 = sole_reader(I, out0(I, pw));
        if (r2 == SIZE_MAX || !mean_last(I, r2)) {
            continue;
        }
        ae = sole_reader(I, out0(I, r2));
        if (!op_is(I, ae, "Add") || (es = const_slot(I, ae)) == SIZE_MAX) {
            continue;
        }
        sq = sole_reader(I, out0(I, ae));
        if (!op_is(I, sq, "Sqrt") || sole_reader(I, out0(I, sq)) != dv ||
            value_of(I, in_name(I->g->node[dv], 1)) != out0(I, sq)) {
            continue;
        }
        mu = sole_reader(I, out0(I, dv));
        if (!op_is(I, mu, "Mul") || const_slot(I, mu) == SIZE_MAX) {
            continue;
        }
        b = sole_reader(I, out0(I, mu));
        fin = op_is(I, b, "Add") && const_slot(I, b) != SIZE_MAX ? b : mu;
        I->ni[r1].skip = 1;
        I->ni[sub].skip = 1;
        I->ni[pw].skip = 1;
        I->ni[r2].skip = 1;
        I->ni[ae].skip = 1;
        I->ni[sq].skip = 1;
        I->ni[dv].skip = 1;
        if (fin != mu) {
            I->ni[mu].skip = 1;
        }
        I->ni[fin].ln.on = 1;
        I->ni[fin].ln.x = x;
        I->ni[fin].ln.div = dv;
        I->ni[fin].ln.mul = mu;
        I->ni[fin].ln.add_eps = ae;
        I->ni[fin].ln.eps_slot = es;
        I->v[x].readers--; /* read by the mean and the Sub: one layer */
    }
}

/* A ReduceMax or ReduceSum over one axis with the dimension kept: the
 * axis from the attribute (before opset 13 for ReduceSum, before 18 for
 * ReduceMax) or from a constant second input. */
static int reduce_one(struct imp *I, size_t node, const char *op,
                      int64_t *axis)
{
    const Onnx__NodeProto *n = I->g->node[node];
    const Onnx__AttributeProto *a = attr(n, "axes");
    double s;
    if (!op_is(I, node, op) || int_attr(n, "keepdims", 1) != 1) {
        return 0;
    }
    if (n->n_input == 1 && a != NULL && a->n_ints == 1) {
        *axis = a->ints[0];
        return 1;
    }
    if (n->n_input == 2 && a == NULL && peek_scalar(I, n, 1, &s) &&
        s == floor(s) && fabs(s) <= 8) {
        *axis = (int64_t)s;
        return 1;
    }
    return 0;
}

/* The other operand of binary node `node` when one is value vi (in slot
 * `slot`), else SIZE_MAX. */
static size_t operand(struct imp *I, size_t node, size_t slot, size_t vi)
{
    const Onnx__NodeProto *n = I->g->node[node];
    if (n->n_input != 2 || value_of(I, in_name(n, slot)) != vi) {
        return SIZE_MAX;
    }
    return value_of(I, in_name(n, 1 - slot));
}

/*
 * Softmax and LogSoftmax as ONNX's function bodies expand them (the
 * "_expanded" forms of the backend tests, and what converters emit for a
 * runtime without the operator): ReduceMax(x, a) = m -> Sub(x, m) = xs ->
 * Exp = e -> ReduceSum(e, a) = s -> Div(e, s) (Softmax), or -> Log(s) ->
 * Sub(xs, .) (LogSoftmax). Both reductions along the same written axis,
 * each intermediate read only by the pattern. The last node then stands
 * for one softmax (logsoftmax) along that axis alone; the others are
 * skipped and x loses the reader counted twice.
 */
static void find_softmax(struct imp *I)
{
    for (size_t r = 0; r < I->g->n_node; r++) {
        size_t x, m, sub, xs, ex, e, rs, s, fin, lg;
        int64_t a1, a2;
        enum memest_act act;
        if (!reduce_one(I, r, "ReduceMax", &a1)) {
            continue;
        }
        x = value_of(I, in_name(I->g->node[r], 0));
        m = out0(I, r);
        sub = sole_reader(I, m);
        if (x == SIZE_MAX || m == SIZE_MAX || !op_is(I, sub, "Sub") ||
            operand(I, sub, 1, m) != x || (xs = out0(I, sub)) == SIZE_MAX ||
            xs == I->output_value) {
            continue;
        }
        ex = reader_op(I, xs, sub, "Exp", 0);
        e = ex != SIZE_MAX ? out0(I, ex) : SIZE_MAX;
        rs = reader_op(I, e, ex, "ReduceSum", 0);
        if (rs == SIZE_MAX || e == I->output_value ||
            !reduce_one(I, rs, "ReduceSum", &a2) || a2 != a1 ||
            (s = out0(I, rs)) == SIZE_MAX) {
            continue;
        }
        lg = SIZE_MAX;
        if (I->v[xs].readers == 1 && I->v[e].readers == 2) {
            fin = reader_op(I, e, rs, "Div", 0);
            if (fin == SIZE_MAX || sole_reader(I, s) != fin ||
                operand(I, fin, 0, e) != s) {
                continue;
            }
            act = MEMEST_ACT_SOFTMAX;
        } else if (I->v[xs].readers == 2 && I->v[e].readers == 1) {
            lg = sole_reader(I, s);
            if (!op_is(I, lg, "Log") || out0(I, lg) == SIZE_MAX) {
                continue;
            }
            fin = sole_reader(I, out0(I, lg));
            if (!op_is(I, fin, "Sub") || operand(I, fin, 0, xs) !=
                                             out0(I, lg)) {
                continue;
            }
            act = MEMEST_ACT_LOGSOFTMAX;
        } else {
            continue;
        }
        I->ni[r].skip = 1;
        I->ni[sub].skip = 1;
        I->ni[ex].skip = 1;
        I->ni[rs].skip = 1;
        if (lg != SIZE_MAX) {
            I->ni[lg].skip = 1;
        }
        I->ni[fin].sm.on = 1;
        I->ni[fin].sm.x = x;
        I->ni[fin].sm.first = r;
        I->ni[fin].sm.axis = a1;
        I->ni[fin].sm.act = act;
        I->v[x].readers--; /* read by the ReduceMax and the Sub: one layer */
    }
}

/* A Transpose with exactly this 3-entry perm. */
static int transpose_is(struct imp *I, size_t node, int64_t a, int64_t b,
                        int64_t c)
{
    const int64_t want[3] = {a, b, c};
    return op_is(I, node, "Transpose") &&
           ints_attr_is(I->g->node[node], "perm", want, 3);
}

/*
 * The in-projection both attention forms begin with: MatMul `mm` (a
 * constant weight in slot 1) -> Add of a constant bias -> three Slices of
 * the sum (q, k, v, in the exporter's order; q's from 0) -> a Reshape of
 * each -> the node that reads each Reshape. Fills *ad (the Add), *bs (its
 * bias slot), sl, rs and tr (the Slices, Reshapes and their readers);
 * 0 when the pattern differs.
 */
static int qkv_split(struct imp *I, size_t mm, size_t *ad, size_t *bs,
                     size_t sl[3], size_t rs[3], size_t tr[3])
{
    size_t av, found = 0;
    double q0;
    if (!op_is(I, mm, "MatMul") || const_slot(I, mm) != 1) {
        return 0;
    }
    *ad = sole_reader(I, out0(I, mm));
    if (!op_is(I, *ad, "Add") || (*bs = const_slot(I, *ad)) == SIZE_MAX ||
        (av = out0(I, *ad)) == SIZE_MAX || I->v[av].readers != 3) {
        return 0;
    }
    for (size_t i = *ad + 1; i < I->g->n_node && found < 3; i++) {
        if (op_is(I, i, "Slice") &&
            value_of(I, in_name(I->g->node[i], 0)) == av) {
            sl[found++] = i;
        }
    }
    if (found != 3 || !peek_scalar(I, I->g->node[sl[0]], 1, &q0) ||
        q0 != 0.0) {
        return 0;
    }
    for (size_t k = 0; k < 3; k++) {
        rs[k] = sole_reader(I, out0(I, sl[k]));
        tr[k] = op_is(I, rs[k], "Reshape") ? sole_reader(I, out0(I, rs[k]))
                                           : SIZE_MAX;
        if (tr[k] == SIZE_MAX) {
            return 0;
        }
    }
    return 1;
}

/*
 * The end both attention forms share: the sole reader of node `scores`
 * is a Softmax over the last axis (-1, or `last`), read alone by a
 * MatMul of it and the value tensor that node `v` makes (read by it
 * alone). Returns that MatMul (A V) and the Softmax in *sm, or SIZE_MAX.
 */
static size_t softmax_av(struct imp *I, size_t scores, int64_t last,
                         size_t v, size_t *sm)
{
    size_t m2;
    *sm = sole_reader(I, out0(I, scores));
    const int64_t axis =
        *sm != SIZE_MAX
            ? int_attr(I->g->node[*sm], "axis", I->opset >= 13 ? -1 : 1)
            : 0;
    if (!op_is(I, *sm, "Softmax") || (axis != -1 && axis != last)) {
        return SIZE_MAX;
    }
    m2 = sole_reader(I, out0(I, *sm));
    if (!op_is(I, m2, "MatMul") ||
        value_of(I, in_name(I->g->node[m2], 0)) != out0(I, *sm) ||
        value_of(I, in_name(I->g->node[m2], 1)) != out0(I, v) ||
        sole_reader(I, out0(I, v)) != m2) {
        return SIZE_MAX;
    }
    return m2;
}

/*
 * nn.MultiheadAttention(batch_first=True) self-attention as PyTorch 1.13
 * exports it (need_weights=False, no masks): x -> Transpose(1,0,2) ->
 * MatMul(in_proj_weight^T) -> Add(in_proj_bias) -> three Slices (q, k, v,
 * in that order) -> Reshape each to T x (N h) x d -> q: Transpose(1,0,2)
 * -> Div(sqrt d) (or Mul(1/sqrt d)); k: Transpose(1,2,0); v:
 * Transpose(1,0,2) -> MatMul(q, k) -> Softmax(-1) -> MatMul(., v) ->
 * Transpose(1,0,2) -> Reshape(T N x D) -> Gemm(out_proj, transB=1) ->
 * Reshape(T x N x D) -> Transpose(1,0,2). Each intermediate is read by
 * the next alone (Shapes aside, which then fold to nothing). The last
 * Transpose stands for one attention layer; the rest is skipped. The
 * Reshapes' targets are computed from the shapes of these intermediates
 * (T x N x 3D), which the layer never makes: the head width comes from
 * the scaling instead, and the Slices are taken in the exporter's order
 * (q's from 0).
 */
static void find_mha(struct imp *I)
{
    for (size_t t0 = 0; t0 < I->g->n_node; t0++) {
        size_t mm, ad, sl[3], rs[3], tr[3], sc, m1, sm, m2, tm, rm, gm, ro,
            fin, bs;
        double c;
        if (!transpose_is(I, t0, 1, 0, 2)) {
            continue;
        }
        mm = sole_reader(I, out0(I, t0));
        if (!qkv_split(I, mm, &ad, &bs, sl, rs, tr) ||
            !transpose_is(I, tr[0], 1, 0, 2) ||
            !transpose_is(I, tr[1], 1, 2, 0) ||
            !transpose_is(I, tr[2], 1, 0, 2)) {
            continue;
        }
        sc = sole_reader(I, out0(I, tr[0]));
        if (!(op_is(I, sc, "Div") || op_is(I, sc, "Mul")) ||
            const_slot(I, sc) != 1 ||
            !peek_scalar(I, I->g->node[sc], 1, &c) || !(c > 0.0)) {
            continue;
        }
        m1 = sole_reader(I, out0(I, sc));
        if (!op_is(I, m1, "MatMul") ||
            value_of(I, in_name(I->g->node[m1], 0)) != out0(I, sc) ||
            value_of(I, in_name(I->g->node[m1], 1)) != out0(I, tr[1]) ||
            sole_reader(I, out0(I, tr[1])) != m1) {
            continue;
        }
        if ((m2 = softmax_av(I, m1, 2, tr[2], &sm)) == SIZE_MAX) {
            continue;
        }
        tm = sole_reader(I, out0(I, m2));
        rm = transpose_is(I, tm, 1, 0, 2) ? sole_reader(I, out0(I, tm))
                                          : SIZE_MAX;
        gm = op_is(I, rm, "Reshape") ? sole_reader(I, out0(I, rm)) : SIZE_MAX;
        if (!op_is(I, gm, "Gemm") ||
            value_of(I, in_name(I->g->node[gm], 0)) != out0(I, rm)) {
            continue;
        }
        ro = sole_reader(I, out0(I, gm));
        fin = op_is(I, ro, "Reshape") ? sole_reader(I, out0(I, ro))
                                      : SIZE_MAX;
        if (!transpose_is(I, fin, 1, 0, 2)) {
            continue;
        }
        {
            const size_t skipped[] = {t0, mm, ad, sl[0], sl[1], sl[2], rs[0],
                                      rs[1], rs[2], tr[0], tr[1], tr[2], sc,
                                      m1, sm, m2, tm, rm, gm, ro};
            struct mha_pattern *p = &I->ni[fin].mha;
            /* Div by sqrt(d) or Mul by 1/sqrt(d), d the head width */
            const double d = op_is(I, sc, "Div") ? c * c : 1.0 / (c * c);
            const double hd = floor(d + 0.5);
            for (size_t k = 0; k < sizeof skipped / sizeof *skipped; k++) {
                I->ni[skipped[k]].skip = 1;
            }
            p->on = 1;
            p->first = t0;
            p->in_mm = mm;
            p->in_add = ad;
            p->in_bias_slot = bs;
            p->gemm = gm;
            p->scale = sc;
            p->scale_value = c;
            p->head_dim = hd >= 1 && fabs(d - hd) <= 1e-5 * hd ? (uint64_t)hd
                                                               : 0;
        }
    }
}

/* A Transpose with exactly this 4-entry perm. */
static int transpose4_is(struct imp *I, size_t node, int64_t a, int64_t b,
                         int64_t c, int64_t d)
{
    const int64_t want[4] = {a, b, c, d};
    return op_is(I, node, "Transpose") &&
           ints_attr_is(I->g->node[node], "perm", want, 4);
}

/* The head count a Reshape to [N, T, h, d] names as a constant third
 * entry of the Concat that makes its shape, or 0. */
static uint64_t reshape_heads(struct imp *I, size_t rs)
{
    size_t sv = value_of(I, in_name(I->g->node[rs], 1));
    size_t c = sv != SIZE_MAX ? I->v[sv].producer : SIZE_MAX;
    double h;
    if (c == SIZE_MAX || !str_eq(I->g->node[c]->op_type, "Concat") ||
        I->g->node[c]->n_input != 4 ||
        !peek_scalar(I, I->g->node[c], 2, &h) || !(h >= 1) ||
        h != floor(h) || h > 65536) {
        return 0;
    }
    return (uint64_t)h;
}

/*
 * A hand-written self-attention as timm's ViT writes it (chunk form):
 * x -> MatMul(qkv.weight^T) -> Add(qkv.bias) -> three Slices (q, k, v)
 * -> Reshape each to [N, T, h, d] -> q, v: Transpose(0,2,1,3), k:
 * Transpose(0,2,3,1) -> MatMul(q, k) -> Mul(scale) or Div(1/scale) ->
 * Softmax(-1) -> MatMul(., v) -> Transpose(0,2,1,3) -> Reshape [N, T, D]
 * -> MatMul(proj.weight^T) -> Add(proj.bias). Each intermediate read by
 * the next alone. The last Add stands for one attention layer, the same
 * computation as nn.MultiheadAttention's with in_proj = qkv and out_proj
 * = proj; the head width comes from the scaling, checked against the
 * Reshape's constant head count when it has one.
 */
static void find_sdpa(struct imp *I)
{
    for (size_t mm = 0; mm < I->g->n_node; mm++) {
        size_t ad, sl[3], rs[3], tr[3], m1, sc, sm, m2, tm, rm, mo, fin, bs,
            fs;
        double c;
        if (!qkv_split(I, mm, &ad, &bs, sl, rs, tr) ||
            !transpose4_is(I, tr[0], 0, 2, 1, 3) ||
            !transpose4_is(I, tr[1], 0, 2, 3, 1) ||
            !transpose4_is(I, tr[2], 0, 2, 1, 3)) {
            continue;
        }
        m1 = sole_reader(I, out0(I, tr[0]));
        if (!op_is(I, m1, "MatMul") ||
            value_of(I, in_name(I->g->node[m1], 0)) != out0(I, tr[0]) ||
            value_of(I, in_name(I->g->node[m1], 1)) != out0(I, tr[1]) ||
            sole_reader(I, out0(I, tr[1])) != m1) {
            continue;
        }
        sc = sole_reader(I, out0(I, m1));
        if (!(op_is(I, sc, "Div") || op_is(I, sc, "Mul")) ||
            const_slot(I, sc) != 1 ||
            !peek_scalar(I, I->g->node[sc], 1, &c) || !(c > 0.0)) {
            continue;
        }
        if ((m2 = softmax_av(I, sc, 3, tr[2], &sm)) == SIZE_MAX) {
            continue;
        }
        tm = sole_reader(I, out0(I, m2));
        rm = transpose4_is(I, tm, 0, 2, 1, 3) ? sole_reader(I, out0(I, tm))
                                               : SIZE_MAX;
        mo = op_is(I, rm, "Reshape") ? sole_reader(I, out0(I, rm)) : SIZE_MAX;
        if (!op_is(I, mo, "MatMul") || const_slot(I, mo) != 1 ||
            value_of(I, in_name(I->g->node[mo], 0)) != out0(I, rm)) {
            continue;
        }
        fin = sole_reader(I, out0(I, mo));
        if (!op_is(I, fin, "Add") || (fs = const_slot(I, fin)) == SIZE_MAX) {
            continue;
        }
        {
            const size_t skipped[] = {mm, ad, sl[0], sl[1], sl[2], rs[0],
                                      rs[1], rs[2], tr[0], tr[1], tr[2], m1,
                                      sc, sm, m2, tm, rm, mo};
            struct mha_pattern *p = &I->ni[fin].mha;
            /* Mul by 1/sqrt(d) or Div by sqrt(d), d the head width */
            const double d = op_is(I, sc, "Div") ? c * c : 1.0 / (c * c);
            const double hd = floor(d + 0.5);
            uint64_t h[3];
            for (size_t k = 0; k < 3; k++) {
                h[k] = reshape_heads(I, rs[k]);
            }
            if (h[0] != h[1] || h[1] != h[2]) {
                continue; /* q, k and v split into different heads */
            }
            for (size_t k = 0; k < sizeof skipped / sizeof *skipped; k++) {
                I->ni[skipped[k]].skip = 1;
            }
            p->on = 1;
            p->written = 1;
            p->first = mm;
            p->in_mm = mm;
            p->in_add = ad;
            p->in_bias_slot = bs;
            p->gemm = mo;
            p->out_bias_slot = fs;
            p->scale = sc;
            p->scale_value = c;
            p->heads = h[0];
            p->head_dim = hd >= 1 && fabs(d - hd) <= 1e-5 * hd ? (uint64_t)hd
                                                               : 0;
        }
    }
}

/* Concat(Expand(cls_token [1, 1, D], [N, 1, D]), x) along axis 1: the
 * class token prepended (the Expand, whose shape depends on the batch,
 * is skipped, not folded). */
static void find_clstoken(struct imp *I)
{
    for (size_t c = 0; c < I->g->n_node; c++) {
        const Onnx__NodeProto *n = I->g->node[c];
        size_t ev, e, xv, tv;
        if (!op_is(I, c, "Concat") || n->n_input != 2 ||
            int_attr(n, "axis", 0) != 1) {
            continue;
        }
        ev = value_of(I, in_name(n, 0));
        xv = value_of(I, in_name(n, 1));
        if (ev == SIZE_MAX || xv == SIZE_MAX || is_constant(&I->v[xv]) ||
            (e = I->v[ev].producer) == SIZE_MAX ||
            !op_is(I, e, "Expand") || I->v[ev].readers != 1) {
            continue;
        }
        tv = value_of(I, in_name(I->g->node[e], 0));
        if (tv == SIZE_MAX || I->v[tv].tp == NULL) {
            continue; /* not an initializer */
        }
        I->ni[e].skip = 1;
        I->ni[c].cls_expand = e;
    }
}

/*
 * After the patterns: a folded node whose outputs only skipped (or dead)
 * nodes read is dead too, so that the shape arithmetic of a pattern's
 * inner tensors (which no layer makes) is never folded.
 */
static int prune_folds(struct imp *I)
{
    unsigned *uses = calloc(I->nv ? I->nv : 1, sizeof *uses);
    if (uses == NULL) {
        return nomem(I);
    }
    uses[I->output_value] = 1;
    /* backwards, without the wrap of "i-- > 0" past zero */
    for (size_t r = 0; r < I->g->n_node; r++) {
        const size_t i = I->g->n_node - 1 - r;
        const Onnx__NodeProto *n = I->g->node[i];
        size_t o = out0(I, i);
        if (!I->ni[i].live) {
            continue;
        }
        if (o != SIZE_MAX && I->v[o].kind == V_CONST) {
            int used = 0;
            for (size_t k = 0; k < n->n_output; k++) {
                size_t vk = value_of(I, str(n->output[k]));
                used |= vk != SIZE_MAX && uses[vk] > 0;
            }
            I->ni[i].live = used;
        }
        if (!I->ni[i].live || I->ni[i].skip) {
            continue;
        }
        for (size_t k = 0; k < n->n_input; k++) {
            size_t vi = value_of(I, str(n->input[k]));
            if (vi != SIZE_MAX) {
                uses[vi]++;
            }
        }
    }
    free(uses);
    return MEMEST_OK;
}

/* The node reads only its input's shape (a row with reads_shape_only). */
static int reads_shape_only(const Onnx__NodeProto *n)
{
    const struct onnx_op *op = NULL;
    if (str_eq(n->domain, "") || str_eq(n->domain, "ai.onnx")) {
        op = onnx_op_find(str(n->op_type));
    }
    return op != NULL && op->reads_shape_only;
}

/*
 * Whether node n's outputs are constants, folded at import: its operator
 * folds and every input it names is a constant of the file (an
 * initializer or an earlier folded output; a graph input bound by
 * opts->constants may still be read as data, so it does not count), or it
 * reads only a shape. The nodes come in topological order, so the inputs'
 * kinds are known.
 */
static int folds(struct imp *I, const Onnx__NodeProto *n)
{
    const struct onnx_op *op = NULL;
    if (str_eq(n->domain, "") || str_eq(n->domain, "ai.onnx")) {
        op = onnx_op_find(str(n->op_type));
    }
    if (op == NULL || op->fold == NULL) {
        return 0;
    }
    if (op->reads_shape_only) {
        return 1;
    }
    for (size_t k = 0; k < n->n_input; k++) {
        const char *nm = str(n->input[k]);
        size_t src = nm[0] ? value_of(I, nm) : SIZE_MAX;
        if (nm[0] && (src == SIZE_MAX || I->v[src].kind != V_CONST)) {
            return 0;
        }
    }
    return 1;
}

static int register_value(struct imp *I, const char *name, enum vkind kind,
                          size_t *out)
{
    size_t vi = strmap_get(&I->vmap, name);
    struct value *v;
    if (vi != SIZE_MAX) {
        *out = vi;
        return MEMEST_OK;
    }
    v = &I->v[I->nv];
    memset(v, 0, sizeof *v);
    v->name = name;
    v->kind = kind;
    v->producer = SIZE_MAX;
    v->reader = SIZE_MAX;
    v->layer = SIZE_MAX;
    if (strmap_put(&I->vmap, name, I->nv) != MEMEST_OK) {
        return nomem(I);
    }
    *out = I->nv++;
    return MEMEST_OK;
}

int analyse(struct imp *I)
{
    Onnx__GraphProto *g = I->g;
    size_t total = g->n_initializer + g->n_input;
    const struct memest_onnx_opts *o = I->opts;
    int st;

    for (size_t i = 0; i < g->n_node; i++) {
        if (total > SIZE_MAX - g->node[i]->n_output) {
            return diag_nomem(I->diag, "the table of the graph's values",
                              SIZE_MAX);
        }
        total += g->node[i]->n_output;
    }
    I->v = calloc(total ? total : 1, sizeof *I->v);
    I->ni = calloc(g->n_node ? g->n_node : 1, sizeof *I->ni);
    if (I->v == NULL || I->ni == NULL) {
        return nomem(I);
    }
    for (size_t i = 0; i < g->n_initializer; i++) {
        size_t vi = 0;
        if ((st = register_value(I, str(g->initializer[i]->name), V_CONST,
                                 &vi))) {
            return st;
        }
        I->v[vi].tp = g->initializer[i];
    }
    for (size_t i = 0; i < g->n_input; i++) {
        size_t vi = 0;
        const char *nm = str(g->input[i]->name);
        if ((st = register_value(I, nm, V_GRAPH_INPUT, &vi))) {
            return st;
        }
        I->v[vi].vi = g->input[i];
        for (size_t k = 0; o != NULL && k < o->constant_count; k++) {
            if (o->constants[k].name != NULL &&
                strcmp(o->constants[k].name, nm) == 0) {
                /* a bound value overrides an initializer's default */
                I->v[vi].kind = V_GRAPH_INPUT;
                I->v[vi].user = &o->constants[k];
            }
        }
    }
    for (size_t i = 0; i < g->n_node; i++) {
        const Onnx__NodeProto *n = g->node[i];
        int constant = folds(I, n);
        I->ni[i].gelu_x = SIZE_MAX;
        I->ni[i].gelu_erf = SIZE_MAX;
        I->ni[i].swish_x = SIZE_MAX;
        I->ni[i].bias_add = SIZE_MAX;
        I->ni[i].cls_expand = SIZE_MAX;
        for (size_t k = 0; k < n->n_output; k++) {
            size_t vi = 0;
            const char *nm = str(n->output[k]);
            if (nm[0] == '\0') {
                continue;
            }
            if (strmap_get(&I->vmap, nm) != SIZE_MAX) {
                I->output_value = SIZE_MAX;
                return node_fail(I, i, MEMEST_E_PARSE,
                                 "its output '%.60s' is already defined "
                                 "(by a graph input, an initializer or an "
                                 "earlier node)", nm);
            }
            if ((st = register_value(I, nm, constant ? V_CONST : V_ACT,
                                     &vi))) {
                return st;
            }
            I->v[vi].producer = i;
        }
    }
    if (g->n_output > 1) {
        /* name the node whose second result is wanted too (a
         * LayerNormalization's Mean and InvStdDev, an LSTM's Y_h) */
        for (size_t k = 1; k < g->n_output; k++) {
            const size_t vi = value_of(I, str(g->output[k]->name));
            const size_t p = vi != SIZE_MAX ? I->v[vi].producer : SIZE_MAX;
            if (p != SIZE_MAX && p < g->n_node) {
                I->output_value = SIZE_MAX;
                return node_fail(I, p, MEMEST_E_PARSE,
                                 "its result '%.60s' is graph output %zu "
                                 "of %zu: one graph output is supported "
                                 "(the model's one result)",
                                 str(g->output[k]->name), k + 1,
                                 g->n_output);
            }
        }
    }
    if (g->n_output != 1) {
        return diag_fail(I->diag, MEMEST_E_PARSE,
                         "the graph has %zu outputs; one is supported",
                         g->n_output);
    }
    I->output_value = value_of(I, str(g->output[0]->name));
    if (I->output_value == SIZE_MAX ||
        I->v[I->output_value].kind == V_CONST) {
        return diag_fail(I->diag, MEMEST_E_PARSE,
                         "the graph output '%.60s' is not computed by any "
                         "node", str(g->output[0]->name));
    }
    /* liveness, backwards from the output; readers of live nodes */
    I->v[I->output_value].live = 1;
    I->v[I->output_value].readers = 1;
    for (size_t r = 0; r < g->n_node; r++) {
        const size_t i = g->n_node - 1 - r; /* backwards, no wrap */
        const Onnx__NodeProto *n = g->node[i];
        for (size_t k = 0; k < n->n_output; k++) {
            size_t vi = value_of(I, str(n->output[k]));
            I->ni[i].live |= vi != SIZE_MAX && I->v[vi].live;
        }
        if (!I->ni[i].live) {
            continue;
        }
        for (size_t k = 0; k < n->n_input; k++) {
            size_t vi = value_of(I, str(n->input[k]));
            if (vi == SIZE_MAX) {
                continue; /* optional or missing: the operator says */
            }
            I->v[vi].live = 1;
            if (reads_shape_only(n)) {
                continue; /* a Shape does not read the data: x's layer may
                           * still take a fused activation */
            }
            I->v[vi].readers++;
            I->v[vi].reader = i;
        }
    }
    find_gelu(I);
    find_swish(I);
    find_layernorm(I);
    find_softmax(I);
    find_mha(I);
    find_sdpa(I);
    find_clstoken(I);
    find_matmul_bias(I);
    /* after prune_folds: an LSTM's or GRU's initial state may be a fold
     * (a Slice of a zero constant) that only the RNN node reads, and the
     * chains around it keep their small constant folds */
    const int pruned = prune_folds(I);
    if (pruned != MEMEST_OK) {
        return pruned;
    }
    onnx_rnn_find(I);
    return MEMEST_OK;
}

/*
 * ShuffleNet's channel shuffle as exported: Reshape(x, [N, g, C/g, H, W])
 * -> Transpose(perm 0 2 1 3 4) -> Reshape(., [N, C, H, W]), each the sole
 * reader of the one before. Given the first Reshape, the last one (whose
 * output the shuffle layer then makes) and the Transpose, or SIZE_MAX.
 * Only the structure is matched here; the handler (ops_move.c) checks the
 * folded shapes, which are known only while translating.
 */
size_t find_shuffle_tail(struct imp *I, size_t reshape, size_t *transpose)
{
    size_t t = sole_reader(I, out0(I, reshape));
    size_t r;
    const Onnx__AttributeProto *perm;
    static const int64_t want[5] = {0, 2, 1, 3, 4};

    *transpose = SIZE_MAX;
    if (!op_is(I, t, "Transpose")) {
        return SIZE_MAX;
    }
    perm = attr(I->g->node[t], "perm");
    if (perm == NULL || perm->n_ints != 5 ||
        memcmp(perm->ints, want, sizeof want) != 0) {
        return SIZE_MAX;
    }
    r = sole_reader(I, out0(I, t));
    if (!op_is(I, r, "Reshape")) {
        return SIZE_MAX;
    }
    *transpose = t;
    return r;
}
