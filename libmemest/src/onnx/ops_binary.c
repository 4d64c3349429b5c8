/*
 * ONNX import: Add, Sub, Mul and Div of float tensors with numpy's
 * broadcasting, into the text layers add, sub, mul and div
 * (src/ops/binary.c). Two computed tensors broadcast over their
 * per-sample shapes (both carry the batch first: squeeze-excite's
 * N x C x 1 x 1 gate times N x C x H x W, in either order); a constant
 * operand of one value (a scalar, or a tensor whose elements are all
 * equal and whose shape adds nothing to the other's) becomes the layer's
 * scalar= (x op c) or scalar_left= (c op x). Arithmetic on integers is
 * shape arithmetic, folded at import (fold_arith.c) before a handler
 * runs; one on a computed tensor is refused. The patterns (patterns.c)
 * claim their nodes first (GELU, a MatMul's bias Add); a Mul of x by
 * Sigmoid(x) or HardSigmoid(x) is SiLU or HardSwish, also a pattern's,
 * and is not read here as a mul.
 */
#include "onnx/onnx_internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* The ONNX shape for a message: "N x 16 x 1 x 1". */
static void act_shape_text(const struct value *v, char *buf, size_t cap)
{
    size_t off = (size_t)snprintf(buf, cap, "N");
    for (unsigned d = 1; d < v->rank && off < cap; d++) {
        off += (size_t)snprintf(buf + off, cap - off, "x%llu",
                                (unsigned long long)v->dim[d]);
    }
}

static void const_shape_text(const struct cval *c, char *buf, size_t cap)
{
    size_t off = (size_t)snprintf(buf, cap, "[");
    for (unsigned d = 0; d < c->rank && off < cap; d++) {
        off += (size_t)snprintf(buf + off, cap - off, "%s%llu",
                                d ? ", " : "",
                                (unsigned long long)c->dim[d]);
    }
    if (off < cap) {
        snprintf(buf + off, cap - off, "]");
    }
}

/* Whether the operand in `slot` is a constant of the graph (an
 * initializer, a Constant, a folded value; a graph input is data even when
 * the caller binds a value to it). */
static int const_operand(struct imp *I, size_t node, size_t slot)
{
    size_t vi = value_of(I, in_name(I->g->node[node], slot));
    return vi != SIZE_MAX && I->v[vi].kind == V_CONST;
}

/* x * Sigmoid(x) or x * HardSigmoid(x): SiLU's and HardSwish's pattern. */
static int self_gated(struct imp *I, size_t node)
{
    const Onnx__NodeProto *n = I->g->node[node];
    for (size_t k = 0; k < 2; k++) {
        size_t vi = value_of(I, in_name(n, k));
        const Onnx__NodeProto *p;
        if (vi == SIZE_MAX || I->v[vi].kind != V_ACT) {
            continue;
        }
        p = I->g->node[I->v[vi].producer];
        if ((str_eq(p->op_type, "Sigmoid") ||
             str_eq(p->op_type, "HardSigmoid")) &&
            p->n_input >= 1 && strcmp(in_name(p, 0), in_name(n, 1 - k)) == 0) {
            return 1;
        }
    }
    return 0;
}

/* The layer of a computed tensor x and a constant c (in slot cslot). */
static int with_constant(struct imp *I, size_t node, const char *kind,
                         size_t cslot)
{
    const Onnx__NodeProto *n = I->g->node[node];
    const char *op = str(n->op_type);
    const struct cval *c = NULL;
    size_t x = 0;
    size_t l = 0;
    char cs[96], xs[64];
    int st;

    if ((st = get_const(I, node, cslot, "operand", &c)) ||
        (st = get_act(I, node, 1 - cslot, &x))) {
        return st;
    }
    if (c->ints != NULL || c->f == NULL) {
        return node_fail(I, node, MEMEST_E_PARSE,
                         "integer arithmetic on a computed tensor is not "
                         "supported: only on shapes and constants, which "
                         "are folded at import");
    }
    const_shape_text(c, cs, sizeof cs);
    act_shape_text(&I->v[x], xs, sizeof xs);
    if (c->count == 0) {
        return node_fail(I, node, MEMEST_E_SHAPE,
                         "%s: the constant '%.60s' is empty (%s)", op,
                         in_name(n, cslot), cs);
    }
    /* one value, repeated: a scalar, as long as the constant's shape
     * broadcasts into x's without growing it */
    for (uint64_t i = 1; i < c->count; i++) {
        if (memcmp(&c->f[i], &c->f[0], sizeof c->f[0]) != 0) {
            return node_fail(I, node, MEMEST_E_PARSE,
                             "%s: the constant operand '%.60s' %s holds "
                             "different values; only a constant of one "
                             "value (a scalar) is supported",
                             op, in_name(n, cslot), cs);
        }
    }
    if (c->rank > I->v[x].rank) {
        return node_fail(I, node, MEMEST_E_SHAPE,
                         "%s: the constant '%.60s' %s has a higher rank "
                         "than '%.60s' (%s)", op, in_name(n, cslot), cs,
                         I->v[x].name, xs);
    }
    for (unsigned d = 0; d < c->rank; d++) {
        const uint64_t xd = I->v[x].dim[I->v[x].rank - c->rank + d];
        if (c->dim[d] != 1 && c->dim[d] != xd) {
            return node_fail(I, node, MEMEST_E_SHAPE,
                             "%s: the constant '%.60s' %s does not "
                             "broadcast to '%.60s' (%s) without growing "
                             "it", op, in_name(n, cslot), cs,
                             I->v[x].name, xs);
        }
    }
    if (!isfinite(c->f[0])) {
        return node_fail(I, node, MEMEST_E_RANGE,
                         "%s: the constant '%.60s' is %g; only a finite "
                         "value is supported", op, in_name(n, cslot),
                         (double)c->f[0]);
    }
    if ((st = push_layer(I, node, kind, n->name, kind, &l))) {
        return st;
    }
    I->L[l].takes_act = 1;
    /* %.9g gives the float back exactly; Add and Mul commute, Sub and
     * Div with the constant first read scalar_left= */
    snprintf(I->L[l].args, sizeof I->L[l].args, "%s=%.9g",
             cslot == 0 && (strcmp(kind, "sub") == 0 ||
                            strcmp(kind, "div") == 0)
                 ? "scalar_left"
                 : "scalar",
             (double)c->f[0]);
    if ((st = layer_inputs(I, l, &x, 1))) {
        return st;
    }
    return set_output(I, node, 0, l, I->v[x].rank, I->v[x].dim);
}

/* The layer of two computed tensors, broadcast over their per-sample
 * shapes. */
static int two_tensors(struct imp *I, size_t node, const char *kind)
{
    size_t xs[2];
    int st;

    for (size_t i = 0; i < 2; i++) {
        if ((st = get_act(I, node, i, &xs[i]))) {
            return st;
        }
    }
    return emit_two(I, node, kind, xs);
}

int emit_two(struct imp *I, size_t node, const char *kind, const size_t *xs)
{
    const Onnx__NodeProto *n = I->g->node[node];
    const char *op = str(n->op_type);
    uint64_t dim[4] = {0, 0, 0, 0};
    size_t l = 0;
    int st;
    {
        const struct value *a = &I->v[xs[0]];
        const struct value *b = &I->v[xs[1]];
        char ta[64], tb[64];
        act_shape_text(a, ta, sizeof ta);
        act_shape_text(b, tb, sizeof tb);
        /* both carry the batch first: the per-sample shapes must then
         * have one rank, or numpy would align the batch with a feature */
        if (a->rank != b->rank) {
            return node_fail(I, node, MEMEST_E_SHAPE,
                             "%s: '%.40s' is %s and '%.40s' is %s; "
                             "broadcasting between tensors of different "
                             "ranks (over the batch) is not supported",
                             op, a->name, ta, b->name, tb);
        }
        dim[0] = a->dim[0];
        for (unsigned d = 1; d < a->rank; d++) {
            if (a->dim[d] != b->dim[d] && a->dim[d] != 1 && b->dim[d] != 1) {
                return node_fail(I, node, MEMEST_E_SHAPE,
                                 "shape mismatch: '%.40s' is %s, '%.40s' "
                                 "is %s, which do not broadcast",
                                 a->name, ta, b->name, tb);
            }
            dim[d] = a->dim[d] > b->dim[d] ? a->dim[d] : b->dim[d];
        }
        if ((st = push_layer(I, node, kind, n->name, kind, &l))) {
            return st;
        }
        I->L[l].takes_act = 1;
        if ((st = layer_inputs(I, l, xs, 2))) {
            return st;
        }
        return set_output(I, node, 0, l, a->rank, dim);
    }
}

int onnx_binary(struct imp *I, size_t node)
{
    const Onnx__NodeProto *n = I->g->node[node];
    const char *op = str(n->op_type);
    const char *kind = str_eq(op, "Add")   ? "add"
                       : str_eq(op, "Sub") ? "sub"
                       : str_eq(op, "Mul") ? "mul"
                                           : "div";
    const int c0 = n->n_input == 2 && const_operand(I, node, 0);
    const int c1 = n->n_input == 2 && const_operand(I, node, 1);
    int64_t bc = 0;
    int st;

    if (n->n_input != 2) {
        return node_fail(I, node, MEMEST_E_PARSE,
                         "%s needs two inputs, got %zu", op, n->n_input);
    }
    /* before opset 7, broadcasting was asked for with broadcast=1 (and
     * aligned at axis=), not numpy's */
    if ((st = attr_int(I, node, "broadcast", 0, &bc))) {
        return st;
    }
    if (bc != 0 || attr(n, "axis") != NULL) {
        return node_fail(I, node, MEMEST_E_PARSE,
                         "%s: attribute '%s' (broadcasting before opset 7) "
                         "is not supported", op,
                         bc != 0 ? "broadcast" : "axis");
    }
    if (str_eq(op, "Mul") && self_gated(I, node)) {
        return node_fail(I, node, MEMEST_E_PARSE,
                         "Mul of a tensor by its own Sigmoid or HardSigmoid "
                         "is SiLU or HardSwish, read only as that pattern");
    }
    if (c0 && c1) {
        /* analyse() folds a node of constants; reaching here means it
         * could not */
        return node_fail(I, node, MEMEST_E_PARSE,
                         "%s of two constants that could not be folded", op);
    }
    if ((c0 || c1) && str_eq(op, "Add")) {
        /* a position embedding: a [1, T, D] parameter added to N x T x D */
        if (onnx_try_posembed(I, node, c0 ? 0 : 1, &st)) {
            return st;
        }
    }
    if (c0 || c1) {
        return with_constant(I, node, kind, c0 ? 0 : 1);
    }
    return two_tensors(I, node, kind);
}

/* Reciprocal(x) = 1 / x, as PyTorch exports `c / x` (Reciprocal, then Mul
 * by c): a div with scalar_left=1. */
int onnx_reciprocal(struct imp *I, size_t node)
{
    const Onnx__NodeProto *n = I->g->node[node];
    size_t x = 0;
    size_t l = 0;
    int st;

    if ((st = get_act(I, node, 0, &x)) ||
        (st = push_layer(I, node, "div", n->name, "div", &l))) {
        return st;
    }
    I->L[l].takes_act = 1;
    snprintf(I->L[l].args, sizeof I->L[l].args, "scalar_left=1");
    if ((st = layer_inputs(I, l, &x, 1))) {
        return st;
    }
    return set_output(I, node, 0, l, I->v[x].rank, I->v[x].dim);
}
