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
            return nomem(I);
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
    for (size_t i = g->n_node; i-- > 0;) {
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
    find_matmul_bias(I);
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
