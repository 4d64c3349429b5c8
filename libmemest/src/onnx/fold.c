/*
 * ONNX import: constant folding.
 *
 * Exporters compute shapes in the graph: PyTorch's x.view(x.size(0), -1)
 * is Shape -> Gather -> Unsqueeze -> Concat -> Reshape, torch.flatten and
 * a channel shuffle's view(b, g, c // g, h, w) add Div and Mul on int64,
 * and masks come from ConstantOfShape, Equal and Where. Every node whose
 * inputs are constants (initializers, Constant nodes, earlier folded
 * outputs) or which reads only a shape is computed here, at import, in
 * the nodes' order, so that the layers see fixed shapes.
 *
 * The batch may be free (a named first dimension): then a Shape of an
 * activation gives the batch as a symbol, and each integer element
 * carries its coefficient of the batch N (struct cval's `nb`): element i
 * is ints[i] + nb[i] * N. Moving elements (Gather, Concat, Slice...) moves
 * the coefficients; Add and Sub add them; Mul and Div by a number scale
 * them when the result stays a whole multiple of N. What would depend on
 * the batch's value (a product of two batch terms, a division that is not
 * exact for every N, a tensor whose size or a comparison whose result
 * depends on N) is refused, naming the node, never guessed. With a fixed
 * batch the Shape is a plain number.
 *
 * Integers are computed exactly in int64 with overflow checks; floats in
 * float32 as the tensors hold them. A tensor that folding would make
 * bigger than MAX_FOLD_ELEMENTS is refused before anything is allocated.
 */
#include "onnx/onnx_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int is_int_type(int t)
{
    switch (t) {
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT64:
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT32:
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT16:
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT8:
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT64:
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT32:
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT16:
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT8:
    case ONNX__TENSOR_PROTO__DATA_TYPE__BOOL:
        return 1;
    default:
        return 0;
    }
}

static int is_float_type(int t)
{
    return t == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT ||
           t == ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE ||
           t == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16 ||
           t == ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16;
}

static int has_batch(const struct cval *c, uint64_t i)
{
    return c->nb != NULL && c->nb[i] != 0;
}

static int any_batch(const struct cval *c)
{
    for (uint64_t i = 0; c->nb != NULL && i < c->count; i++) {
        if (c->nb[i] != 0) {
            return 1;
        }
    }
    return 0;
}

/* An element as an integer: exact when the tensor holds integers. */
static int64_t int_at(const struct cval *c, uint64_t i)
{
    return c->ints ? c->ints[i] : (int64_t)c->f[i];
}

/*
 * A new tensor of `rank` x `dim` in o: floats always (the layers read
 * them), exact integers when `ints`, batch coefficients when `nb`. More
 * than `limit` elements (MAX_FOLD_ELEMENTS where folding can grow a
 * tensor; UINT64_MAX where the result is no bigger than its inputs,
 * which are in memory) is refused before allocating.
 */
static int make(struct imp *I, size_t node, struct cval *o, unsigned rank,
                const uint64_t *dim, int ints, int nb, int dtype,
                uint64_t limit)
{
    uint64_t count = 1;
    size_t n;

    memset(o, 0, sizeof *o);
    if (rank > MEMEST_TENSOR_MAX_RANK) {
        return node_fail(I, node, MEMEST_E_RANGE,
                         "its output would have rank %u (at most %d)", rank,
                         MEMEST_TENSOR_MAX_RANK);
    }
    for (unsigned d = 0; d < rank; d++) {
        if (mul_ovf(count, dim[d], &count)) {
            return node_fail(I, node, MEMEST_E_RANGE,
                             "its output would have more elements than 64 "
                             "bits count");
        }
        o->dim[d] = dim[d];
    }
    if (count > limit || count > MAX_ELEMENTS) {
        return node_fail(I, node, MEMEST_E_RANGE,
                         "folding it would make a tensor of %llu elements "
                         "(at most %llu)", (unsigned long long)count,
                         (unsigned long long)(limit < MAX_ELEMENTS
                                                  ? limit : MAX_ELEMENTS));
    }
    o->rank = rank;
    o->count = count;
    o->dtype = dtype;
    n = count ? (size_t)count : 1;
    o->owned = calloc(n, sizeof *o->owned);
    o->ints = ints ? calloc(n, sizeof *o->ints) : NULL;
    o->nb = nb ? calloc(n, sizeof *o->nb) : NULL;
    if (o->owned == NULL || (ints && o->ints == NULL) ||
        (nb && o->nb == NULL)) {
        cval_free(o);
        return nomem(I);
    }
    o->f = o->owned;
    return MEMEST_OK;
}

/* A new tensor of x's kind (integers, batch terms, type). */
static int make_like(struct imp *I, size_t node, struct cval *o,
                     const struct cval *x, unsigned rank, const uint64_t *dim,
                     uint64_t limit)
{
    return make(I, node, o, rank, dim, x->ints != NULL, x->nb != NULL,
                x->dtype, limit);
}

/* o[j] = x[i], with its exact value and batch term. */
static void move(struct cval *o, uint64_t j, const struct cval *x,
                 uint64_t i)
{
    o->owned[j] = x->f[i];
    if (o->ints != NULL) {
        o->ints[j] = int_at(x, i);
    }
    if (o->nb != NULL) {
        o->nb[j] = x->nb ? x->nb[i] : 0;
    }
}

/* o[j] = v + c * N, an integer. */
static void set_int(struct cval *o, uint64_t j, int64_t v, int64_t c)
{
    o->ints[j] = v;
    o->owned[j] = (float)v;
    if (o->nb != NULL) {
        o->nb[j] = c;
    }
}

/* Read a list of integers from a constant operand (rank 0 or 1, no batch
 * term) into out (at most MEMEST_TENSOR_MAX_RANK). */
static int int_list(struct imp *I, size_t node, size_t slot,
                    const char *role, int64_t *out, size_t *n)
{
    const struct cval *c;
    int st = get_const(I, node, slot, role, &c);
    if (st != MEMEST_OK) {
        return st;
    }
    if (c->ints == NULL || c->rank > 1 || c->count > MEMEST_TENSOR_MAX_RANK) {
        return node_fail(I, node, MEMEST_E_PARSE,
                         "the %s must be a list of at most %d integers", role,
                         MEMEST_TENSOR_MAX_RANK);
    }
    if (any_batch(c)) {
        return node_fail(I, node, MEMEST_E_PARSE,
                         "the %s depends on the batch, which is free here",
                         role);
    }
    for (uint64_t i = 0; i < c->count; i++) {
        out[i] = c->ints[i];
    }
    *n = (size_t)c->count;
    return MEMEST_OK;
}

/* The axes of Squeeze/Unsqueeze: an attribute before opset 13, an input
 * from 13. *n = SIZE_MAX when absent. */
static int axes_of(struct imp *I, size_t node, int64_t *axes, size_t *n)
{
    const Onnx__NodeProto *nd = I->g->node[node];
    *n = SIZE_MAX;
    if (I->opset < 13) {
        size_t k = 0;
        int st;
        if (attr(nd, "axes") == NULL) {
            return MEMEST_OK;
        }
        st = attr_ints(I, node, "axes", 0, axes, &k);
        *n = k;
        return st;
    }
    if (attr(nd, "axes") != NULL) {
        return node_fail(I, node, MEMEST_E_PARSE,
                         "attribute 'axes' is not supported from opset 13 "
                         "(the axes are an input)");
    }
    if (in_name(nd, 1)[0] == '\0') {
        return MEMEST_OK;
    }
    return int_list(I, node, 1, "axes", axes, n);
}

/* Normalise axis a (negative counts from the end) for rank r. */
static int norm_axis(struct imp *I, size_t node, int64_t a, unsigned r,
                     const char *what, unsigned *out)
{
    if (a < -(int64_t)r || a >= (int64_t)r) {
        return node_fail(I, node, MEMEST_E_RANGE,
                         "%s %lld is outside rank %u", what, (long long)a, r);
    }
    *out = (unsigned)(a < 0 ? a + (int64_t)r : a);
    return MEMEST_OK;
}

/* Row-major strides of dim. */
static void strides_of(unsigned rank, const uint64_t *dim, uint64_t *st)
{
    uint64_t s = 1;
    for (unsigned d = rank; d-- > 0;) {
        st[d] = s;
        s *= dim[d];
    }
}

void onnx_term_text(int64_t v, int64_t c, char *buf, size_t cap)
{
    if (c == 0) {
        snprintf(buf, cap, "%lld", (long long)v);
        return;
    }
    if (c == 1 || c == -1) {
        snprintf(buf, cap, "%sN", c < 0 ? "-" : "");
    } else {
        snprintf(buf, cap, "%lldN", (long long)c);
    }
    if (v != 0) {
        size_t off = strlen(buf);
        snprintf(buf + off, cap - off, "%+lld", (long long)v);
    }
}

/* ---- Constant, Identity, Transpose, Reshape, Squeeze, Unsqueeze -------- */

int fold_constant(struct imp *I, size_t node, struct cval *c)
{
    const Onnx__NodeProto *n = I->g->node[node];
    const Onnx__AttributeProto *a;
    char why[160];
    int st;

    memset(c, 0, sizeof *c);
    if (n->n_attribute != 1) {
        return node_fail(I, node, MEMEST_E_PARSE,
                         "a Constant needs exactly one value attribute");
    }
    a = n->attribute[0];
    if (str_eq(a->name, "value") && a->t != NULL) {
        st = decode_tensor(a->t, c, why, sizeof why);
        if (st != MEMEST_OK) {
            return node_fail(I, node, st, "its value %s", why);
        }
        if (c->count > MAX_ELEMENTS) {
            return node_fail(I, node, MEMEST_E_RANGE,
                             "its value has %llu elements",
                             (unsigned long long)c->count);
        }
        return MEMEST_OK;
    }
    if (str_eq(a->name, "value_float") || str_eq(a->name, "value_int")) {
        c->owned = malloc(sizeof(float));
        if (c->owned == NULL) {
            return nomem(I);
        }
        c->count = 1;
        c->owned[0] = str_eq(a->name, "value_float") ? a->f : (float)a->i;
        c->dtype = str_eq(a->name, "value_float")
                       ? ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT
                       : ONNX__TENSOR_PROTO__DATA_TYPE__INT64;
        if (str_eq(a->name, "value_int")) {
            c->ints = malloc(sizeof(int64_t));
            if (c->ints == NULL) {
                cval_free(c);
                return nomem(I);
            }
            c->ints[0] = a->i;
        }
        c->f = c->owned;
        return MEMEST_OK;
    }
    if (str_eq(a->name, "value_floats") || str_eq(a->name, "value_ints")) {
        int ints = str_eq(a->name, "value_ints");
        size_t cnt = ints ? a->n_ints : a->n_floats;
        c->owned = malloc((cnt ? cnt : 1) * sizeof(float));
        c->ints = ints ? malloc((cnt ? cnt : 1) * sizeof(int64_t)) : NULL;
        if (c->owned == NULL || (ints && c->ints == NULL)) {
            cval_free(c);
            return nomem(I);
        }
        for (size_t i = 0; i < cnt; i++) {
            c->owned[i] = ints ? (float)a->ints[i] : a->floats[i];
            if (ints) {
                c->ints[i] = a->ints[i];
            }
        }
        c->rank = 1;
        c->dim[0] = cnt;
        c->count = cnt;
        c->dtype = ints ? ONNX__TENSOR_PROTO__DATA_TYPE__INT64
                        : ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
        c->f = c->owned;
        return MEMEST_OK;
    }
    return node_fail(I, node, MEMEST_E_PARSE,
                     "a Constant given by '%.40s' is not supported (value, "
                     "value_float(s) and value_int(s) are)", str(a->name));
}

/* An Identity of a constant (PyTorch exports one per initializer that
 * two names share): the same values, the floats shared with the source,
 * which lives as long as the import. */
int fold_identity(struct imp *I, size_t node, struct cval *c)
{
    const struct cval *x;
    int st = get_const(I, node, 0, "input", &x);
    size_t n;

    memset(c, 0, sizeof *c);
    if (st != MEMEST_OK) {
        return st;
    }
    *c = *x;
    c->owned = NULL;
    c->ints = NULL;
    c->nb = NULL;
    n = x->count ? (size_t)x->count : 1;
    if (x->ints != NULL) {
        c->ints = malloc(n * sizeof *c->ints);
        if (c->ints == NULL) {
            return nomem(I);
        }
        memcpy(c->ints, x->ints, (size_t)x->count * sizeof *c->ints);
    }
    if (x->nb != NULL) {
        c->nb = malloc(n * sizeof *c->nb);
        if (c->nb == NULL) {
            return nomem(I);
        }
        memcpy(c->nb, x->nb, (size_t)x->count * sizeof *c->nb);
    }
    return MEMEST_OK;
}

/* A Transpose of a constant (PyTorch's older exports transpose a Linear's
 * weight in the graph). */
int fold_transpose(struct imp *I, size_t node, struct cval *c)
{
    const Onnx__AttributeProto *a = attr(I->g->node[node], "perm");
    const struct cval *x;
    uint64_t stride[MEMEST_TENSOR_MAX_RANK];
    uint64_t dim[MEMEST_TENSOR_MAX_RANK];
    size_t perm[MEMEST_TENSOR_MAX_RANK];
    int st;

    if ((st = get_const(I, node, 0, "input", &x))) {
        return st;
    }
    for (unsigned d = 0; d < x->rank; d++) {
        perm[d] = x->rank - 1 - d; /* the default reverses the axes */
    }
    if (a != NULL) {
        unsigned seen = 0;
        if (a->n_ints != x->rank) {
            return node_fail(I, node, MEMEST_E_SHAPE,
                             "perm has %zu axes for a rank %u tensor",
                             a->n_ints, x->rank);
        }
        for (unsigned d = 0; d < x->rank; d++) {
            if (a->ints[d] < 0 || a->ints[d] >= (int64_t)x->rank ||
                (seen & (1u << a->ints[d]))) {
                return node_fail(I, node, MEMEST_E_PARSE,
                                 "perm is not a permutation of the axes");
            }
            seen |= 1u << a->ints[d];
            perm[d] = (size_t)a->ints[d];
        }
    }
    for (unsigned d = 0; d < x->rank; d++) {
        dim[d] = x->dim[perm[d]];
    }
    if ((st = make_like(I, node, c, x, x->rank, dim, UINT64_MAX))) {
        return st;
    }
    strides_of(x->rank, x->dim, stride);
    for (uint64_t i = 0; i < x->count; i++) {
        /* i indexes the output; walk its coordinates back to the input */
        uint64_t rest = i;
        uint64_t src = 0;
        for (unsigned d = x->rank; d-- > 0;) {
            uint64_t coord = rest % c->dim[d];
            rest /= c->dim[d];
            src += coord * stride[perm[d]];
        }
        move(c, i, x, src);
    }
    return MEMEST_OK;
}

/* The same elements in row-major order under a new shape. */
static int relabel(struct imp *I, size_t node, struct cval *c,
                   const struct cval *x, unsigned rank, const uint64_t *dim)
{
    int st = make_like(I, node, c, x, rank, dim, UINT64_MAX);
    if (st != MEMEST_OK) {
        return st;
    }
    if (c->count != x->count) {
        return node_fail(I, node, MEMEST_E_SHAPE,
                         "%llu elements cannot take a shape of %llu",
                         (unsigned long long)x->count,
                         (unsigned long long)c->count);
    }
    for (uint64_t i = 0; i < x->count; i++) {
        move(c, i, x, i);
    }
    return MEMEST_OK;
}

int fold_reshape(struct imp *I, size_t node, struct cval *c)
{
    const struct cval *x;
    int64_t shape[MEMEST_TENSOR_MAX_RANK];
    uint64_t dim[MEMEST_TENSOR_MAX_RANK];
    int64_t allowzero;
    size_t n = 0;
    size_t minus = SIZE_MAX;
    uint64_t known = 1;
    int st;

    if ((st = attr_int(I, node, "allowzero", 0, &allowzero)) ||
        (st = get_const(I, node, 0, "data", &x)) ||
        (st = int_list(I, node, 1, "shape", shape, &n))) {
        return st;
    }
    for (size_t d = 0; d < n; d++) {
        if (shape[d] == -1 && minus == SIZE_MAX) {
            minus = d;
            continue;
        }
        if (shape[d] == 0 && !allowzero) {
            if (d >= x->rank) {
                return node_fail(I, node, MEMEST_E_SHAPE,
                                 "shape entry %zu is 0 (copy) past the "
                                 "input's rank %u", d, x->rank);
            }
            dim[d] = x->dim[d];
        } else if (shape[d] < 0) {
            return node_fail(I, node, MEMEST_E_SHAPE,
                             "shape entry %zu is %lld", d,
                             (long long)shape[d]);
        } else {
            dim[d] = (uint64_t)shape[d];
        }
        if (mul_ovf(known, dim[d], &known)) {
            return node_fail(I, node, MEMEST_E_RANGE, "the shape is too "
                             "large");
        }
    }
    if (minus != SIZE_MAX) {
        if (known == 0 || x->count % known != 0) {
            return node_fail(I, node, MEMEST_E_SHAPE,
                             "%llu elements do not divide into the shape",
                             (unsigned long long)x->count);
        }
        dim[minus] = x->count / known;
    }
    return relabel(I, node, c, x, (unsigned)n, dim);
}

int fold_unsqueeze(struct imp *I, size_t node, struct cval *c)
{
    const struct cval *x;
    int64_t axes[MEMEST_TENSOR_MAX_RANK];
    uint64_t dim[MEMEST_TENSOR_MAX_RANK];
    unsigned is_new = 0;
    size_t n = 0;
    unsigned r = 0;
    int st;

    if ((st = get_const(I, node, 0, "data", &x)) ||
        (st = axes_of(I, node, axes, &n))) {
        return st;
    }
    if (n == SIZE_MAX || n == 0) {
        return node_fail(I, node, MEMEST_E_PARSE, "the axes are missing");
    }
    r = x->rank + (unsigned)n;
    if (r > MEMEST_TENSOR_MAX_RANK) {
        return node_fail(I, node, MEMEST_E_RANGE,
                         "its output would have rank %u (at most %d)", r,
                         MEMEST_TENSOR_MAX_RANK);
    }
    for (size_t k = 0; k < n; k++) {
        unsigned a = 0;
        if ((st = norm_axis(I, node, axes[k], r, "axis", &a))) {
            return st;
        }
        if (is_new & (1u << a)) {
            return node_fail(I, node, MEMEST_E_PARSE, "axis %lld is given "
                             "twice", (long long)axes[k]);
        }
        is_new |= 1u << a;
    }
    for (unsigned d = 0, s = 0; d < r; d++) {
        dim[d] = (is_new & (1u << d)) ? 1 : x->dim[s++];
    }
    return relabel(I, node, c, x, r, dim);
}

int fold_squeeze(struct imp *I, size_t node, struct cval *c)
{
    const struct cval *x;
    int64_t axes[MEMEST_TENSOR_MAX_RANK];
    uint64_t dim[MEMEST_TENSOR_MAX_RANK];
    unsigned drop = 0;
    unsigned r = 0;
    size_t n = 0;
    int st;

    if ((st = get_const(I, node, 0, "data", &x)) ||
        (st = axes_of(I, node, axes, &n))) {
        return st;
    }
    for (unsigned d = 0; n == SIZE_MAX && d < x->rank; d++) {
        drop |= (x->dim[d] == 1) << d; /* no axes: every 1 goes */
    }
    for (size_t k = 0; n != SIZE_MAX && k < n; k++) {
        unsigned a = 0;
        if ((st = norm_axis(I, node, axes[k], x->rank, "axis", &a))) {
            return st;
        }
        if (x->dim[a] != 1) {
            return node_fail(I, node, MEMEST_E_SHAPE,
                             "axis %lld has size %llu, not 1",
                             (long long)axes[k],
                             (unsigned long long)x->dim[a]);
        }
        drop |= 1u << a;
    }
    for (unsigned d = 0; d < x->rank; d++) {
        if (!(drop & (1u << d))) {
            dim[r++] = x->dim[d];
        }
    }
    return relabel(I, node, c, x, r, dim);
}

/* ---- Shape, Gather, Concat, Slice --------------------------------------- */

/* The shape of the input: an activation's (its batch N when free), or a
 * constant's. start and end (opset 15) take a part of it. */
int fold_shape(struct imp *I, size_t node, struct cval *c)
{
    const Onnx__NodeProto *n = I->g->node[node];
    size_t vi = value_of(I, in_name(n, 0));
    uint64_t dim[MEMEST_TENSOR_MAX_RANK];
    int64_t start, end;
    unsigned rank;
    int free_batch = 0;
    uint64_t len;
    int st;

    if (vi != SIZE_MAX && I->v[vi].kind == V_CONST) {
        const struct cval *x;
        if ((st = get_const(I, node, 0, "input", &x))) {
            return st;
        }
        rank = x->rank;
        memcpy(dim, x->dim, sizeof dim);
    } else {
        size_t a = 0;
        /* an activation's shape is known once its node is translated;
         * pattern matching (before) gets no answer */
        if (!I->translating) {
            return node_fail(I, node, MEMEST_E_PARSE, "not yet shaped");
        }
        if ((st = get_act(I, node, 0, &a))) {
            return st;
        }
        rank = I->v[a].rank;
        for (unsigned d = 0; d < rank; d++) {
            dim[d] = I->v[a].dim[d];
        }
        free_batch = dim[0] == 0;
    }
    if ((st = attr_int(I, node, "start", 0, &start)) ||
        (st = attr_int(I, node, "end", (int64_t)rank, &end))) {
        return st;
    }
    /* clamped as the operator says */
    start = start < 0 ? start + (int64_t)rank : start;
    end = end < 0 ? end + (int64_t)rank : end;
    start = start < 0 ? 0 : start > (int64_t)rank ? (int64_t)rank : start;
    end = end < 0 ? 0 : end > (int64_t)rank ? (int64_t)rank : end;
    len = end > start ? (uint64_t)(end - start) : 0;
    if ((st = make(I, node, c, 1, &len, 1, free_batch,
                   ONNX__TENSOR_PROTO__DATA_TYPE__INT64, UINT64_MAX))) {
        return st;
    }
    for (uint64_t i = 0; i < len; i++) {
        unsigned d = (unsigned)start + (unsigned)i;
        if (free_batch && d == 0) {
            set_int(c, i, 0, 1);
        } else {
            set_int(c, i, (int64_t)dim[d], 0);
        }
    }
    return MEMEST_OK;
}

int fold_gather(struct imp *I, size_t node, struct cval *c)
{
    const struct cval *x, *ix;
    uint64_t dim[MEMEST_TENSOR_MAX_RANK];
    uint64_t outer = 1, inner = 1;
    int64_t axis;
    unsigned ax = 0, r;
    int st;

    if ((st = attr_int(I, node, "axis", 0, &axis)) ||
        (st = get_const(I, node, 0, "data", &x)) ||
        (st = get_const(I, node, 1, "indices", &ix))) {
        return st;
    }
    if (ix->ints == NULL || any_batch(ix)) {
        return node_fail(I, node, MEMEST_E_PARSE,
                         "the indices must be integers");
    }
    if ((st = norm_axis(I, node, axis, x->rank, "axis", &ax))) {
        return st;
    }
    r = x->rank - 1 + ix->rank;
    if (r > MEMEST_TENSOR_MAX_RANK) {
        return node_fail(I, node, MEMEST_E_RANGE,
                         "its output would have rank %u (at most %d)", r,
                         MEMEST_TENSOR_MAX_RANK);
    }
    for (unsigned d = 0; d < ax; d++) {
        dim[d] = x->dim[d];
        outer *= x->dim[d];
    }
    for (unsigned d = 0; d < ix->rank; d++) {
        dim[ax + d] = ix->dim[d];
    }
    for (unsigned d = ax + 1; d < x->rank; d++) {
        dim[ix->rank + d - 1] = x->dim[d];
        inner *= x->dim[d];
    }
    for (uint64_t k = 0; k < ix->count; k++) {
        int64_t i = ix->ints[k];
        if (i < -(int64_t)x->dim[ax] || i >= (int64_t)x->dim[ax]) {
            return node_fail(I, node, MEMEST_E_RANGE,
                             "index %lld is outside axis %u of size %llu",
                             (long long)i, ax,
                             (unsigned long long)x->dim[ax]);
        }
    }
    if ((st = make_like(I, node, c, x, r, dim, MAX_FOLD_ELEMENTS))) {
        return st;
    }
    for (uint64_t o = 0, j = 0; o < outer; o++) {
        for (uint64_t k = 0; k < ix->count; k++) {
            int64_t i = ix->ints[k];
            uint64_t row = (uint64_t)(i < 0 ? i + (int64_t)x->dim[ax] : i);
            for (uint64_t e = 0; e < inner; e++, j++) {
                move(c, j, x, (o * x->dim[ax] + row) * inner + e);
            }
        }
    }
    return MEMEST_OK;
}

int fold_concat(struct imp *I, size_t node, struct cval *c)
{
    const Onnx__NodeProto *n = I->g->node[node];
    const struct cval *first, *x;
    uint64_t dim[MEMEST_TENSOR_MAX_RANK];
    uint64_t outer = 1, inner = 1;
    int any_ints = 0, all_ints = 1, any_nb = 0;
    int64_t axis;
    unsigned ax = 0;
    int st;

    if ((st = attr_int(I, node, "axis", INT64_MIN, &axis)) ||
        (st = get_const(I, node, 0, "first input", &first))) {
        return st;
    }
    if (axis == INT64_MIN) {
        return node_fail(I, node, MEMEST_E_PARSE, "the axis is missing");
    }
    if ((st = norm_axis(I, node, axis, first->rank, "axis", &ax))) {
        return st;
    }
    memcpy(dim, first->dim, sizeof dim);
    dim[ax] = 0;
    for (size_t k = 0; k < n->n_input; k++) {
        if ((st = get_const(I, node, k, "input", &x))) {
            return st;
        }
        int ok = x->rank == first->rank;
        for (unsigned d = 0; ok && d < x->rank; d++) {
            ok = d == ax || x->dim[d] == first->dim[d];
        }
        if (!ok) {
            return node_fail(I, node, MEMEST_E_SHAPE,
                             "input %zu's shape does not match the first's "
                             "but on axis %u", k, ax);
        }
        /* the inputs are in memory: their sum fits */
        dim[ax] += x->dim[ax];
        any_ints |= x->ints != NULL;
        all_ints &= x->ints != NULL;
        any_nb |= x->nb != NULL;
    }
    if (any_ints != all_ints) {
        return node_fail(I, node, MEMEST_E_PARSE,
                         "it mixes integer and floating point inputs");
    }
    for (unsigned d = 0; d < ax; d++) {
        outer *= dim[d];
    }
    for (unsigned d = ax + 1; d < first->rank; d++) {
        inner *= dim[d];
    }
    if ((st = make(I, node, c, first->rank, dim, any_ints, any_nb,
                   first->dtype, UINT64_MAX))) {
        return st;
    }
    for (uint64_t o = 0, j = 0; o < outer; o++) {
        for (size_t k = 0; k < n->n_input; k++) {
            get_const(I, node, k, "input", &x); /* read above */
            uint64_t span = x->dim[ax] * inner;
            for (uint64_t e = 0; e < span; e++, j++) {
                move(c, j, x, o * span + e);
            }
        }
    }
    return MEMEST_OK;
}

/* Slice: starts, ends, axes, steps as inputs from opset 10, the first
 * three as attributes before. */
int fold_slice(struct imp *I, size_t node, struct cval *c)
{
    const Onnx__NodeProto *n = I->g->node[node];
    const struct cval *x;
    int64_t starts[MEMEST_TENSOR_MAX_RANK], ends[MEMEST_TENSOR_MAX_RANK];
    int64_t axes[MEMEST_TENSOR_MAX_RANK], steps[MEMEST_TENSOR_MAX_RANK];
    int64_t first[MEMEST_TENSOR_MAX_RANK], step[MEMEST_TENSOR_MAX_RANK];
    uint64_t dim[MEMEST_TENSOR_MAX_RANK], stride[MEMEST_TENSOR_MAX_RANK];
    size_t ns = 0, ne = 0, na = SIZE_MAX, nt = SIZE_MAX;
    unsigned done = 0;
    int st;

    if ((st = get_const(I, node, 0, "data", &x))) {
        return st;
    }
    if (I->opset < 10) {
        if ((st = attr_ints(I, node, "starts", 0, starts, &ns)) ||
            (st = attr_ints(I, node, "ends", 0, ends, &ne))) {
            return st;
        }
        if (attr(n, "axes") != NULL &&
            (st = attr_ints(I, node, "axes", 0, axes, &na))) {
            return st;
        }
    } else {
        if (n->n_attribute > 0) {
            return node_fail(I, node, MEMEST_E_PARSE,
                             "attribute '%.40s' is not supported from opset "
                             "10 (starts, ends and axes are inputs)",
                             str(n->attribute[0]->name));
        }
        if ((st = int_list(I, node, 1, "starts", starts, &ns)) ||
            (st = int_list(I, node, 2, "ends", ends, &ne))) {
            return st;
        }
        if (in_name(n, 3)[0] &&
            (st = int_list(I, node, 3, "axes", axes, &na))) {
            return st;
        }
        if (in_name(n, 4)[0] &&
            (st = int_list(I, node, 4, "steps", steps, &nt))) {
            return st;
        }
    }
    if (ns != ne || (na != SIZE_MAX && na != ns) ||
        (nt != SIZE_MAX && nt != ns) || ns > x->rank) {
        return node_fail(I, node, MEMEST_E_PARSE,
                         "starts, ends, axes and steps must have one "
                         "length, at most the rank %u", x->rank);
    }
    for (unsigned d = 0; d < x->rank; d++) {
        first[d] = 0;
        step[d] = 1;
        dim[d] = x->dim[d];
    }
    for (size_t k = 0; k < ns; k++) {
        unsigned a = 0;
        int64_t s = nt != SIZE_MAX ? steps[k] : 1;
        int64_t size;
        int64_t b, e;
        if ((st = norm_axis(I, node, na != SIZE_MAX ? axes[k] : (int64_t)k,
                            x->rank, "axis", &a))) {
            return st;
        }
        if (done & (1u << a)) {
            return node_fail(I, node, MEMEST_E_PARSE, "axis %u is sliced "
                             "twice", a);
        }
        done |= 1u << a;
        if (s == 0) {
            return node_fail(I, node, MEMEST_E_PARSE, "a step is 0");
        }
        if (s == INT64_MIN) {
            s = -INT64_MAX; /* takes one element either way; -s exists */
        }
        size = (int64_t)x->dim[a];
        /* negative counts from the end, then clamped: to [0, size] going
         * forward, to [0, size - 1] (start) and [-1, size - 1] (end)
         * going back; INT64_MIN/MAX stand for "to the end" */
        b = starts[k] < 0 ? (starts[k] < -size ? -1 : starts[k] + size)
                          : starts[k];
        e = ends[k] < 0 ? (ends[k] < -size ? -1 : ends[k] + size) : ends[k];
        if (s > 0) {
            b = b < 0 ? 0 : b > size ? size : b;
            e = e < 0 ? 0 : e > size ? size : e;
            dim[a] = e > b ? (uint64_t)((e - b - 1) / s + 1) : 0;
        } else {
            b = b < 0 ? 0 : b > size - 1 ? size - 1 : b;
            e = e < -1 ? -1 : e > size - 1 ? size - 1 : e;
            dim[a] = b > e ? (uint64_t)((b - e - 1) / -s + 1) : 0;
        }
        first[a] = b;
        step[a] = s;
    }
    if ((st = make_like(I, node, c, x, x->rank, dim, UINT64_MAX))) {
        return st;
    }
    strides_of(x->rank, x->dim, stride);
    for (uint64_t j = 0; j < c->count; j++) {
        uint64_t rest = j, src = 0;
        for (unsigned d = x->rank; d-- > 0;) {
            uint64_t coord = rest % dim[d];
            rest /= dim[d];
            src += (uint64_t)(first[d] + (int64_t)coord * step[d]) *
                   stride[d];
        }
        move(c, j, x, src);
    }
    return MEMEST_OK;
}

/* ---- Cast, ConstantOfShape, Range --------------------------------------- */

int fold_cast(struct imp *I, size_t node, struct cval *c)
{
    const struct cval *x;
    int64_t to;
    int st;

    if ((st = attr_int(I, node, "to", 0, &to)) ||
        (st = get_const(I, node, 0, "input", &x))) {
        return st;
    }
    if (to > INT32_MAX || to < 0 ||
        (!is_int_type((int)to) && !is_float_type((int)to))) {
        return node_fail(I, node, MEMEST_E_PARSE,
                         "attribute 'to' = %s (%lld) is not supported",
                         dtype_name((int)to), (long long)to);
    }
    if (any_batch(x) && !(is_int_type((int)to) &&
                          to != ONNX__TENSOR_PROTO__DATA_TYPE__BOOL)) {
        return node_fail(I, node, MEMEST_E_PARSE,
                         "casting the batch, which is free here, to %s is "
                         "not supported", dtype_name((int)to));
    }
    if ((st = make(I, node, c, x->rank, x->dim, is_int_type((int)to),
                   x->nb != NULL, (int)to, UINT64_MAX))) {
        return st;
    }
    for (uint64_t i = 0; i < x->count; i++) {
        if (c->ints == NULL) {
            c->owned[i] = x->ints ? (float)x->ints[i] : x->f[i];
            continue;
        }
        if (x->ints == NULL && !(fabsf(x->f[i]) < 9.2e18f)) {
            return node_fail(I, node, MEMEST_E_RANGE,
                             "%g does not fit %s", (double)x->f[i],
                             dtype_name((int)to));
        }
        int64_t v = int_at(x, i); /* floats truncate toward zero */
        if (to == ONNX__TENSOR_PROTO__DATA_TYPE__BOOL) {
            v = x->ints ? v != 0 : x->f[i] != 0.0f;
        }
        set_int(c, i, v, x->nb ? x->nb[i] : 0);
    }
    return MEMEST_OK;
}

int fold_constant_of_shape(struct imp *I, size_t node, struct cval *c)
{
    const Onnx__AttributeProto *a = attr(I->g->node[node], "value");
    int64_t shape[MEMEST_TENSOR_MAX_RANK];
    uint64_t dim[MEMEST_TENSOR_MAX_RANK];
    struct cval v;
    size_t n = 0;
    int dtype = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
    float fv = 0.0f;
    int64_t iv = 0;
    char why[160];
    int st;

    if ((st = int_list(I, node, 0, "shape", shape, &n))) {
        return st;
    }
    if (a != NULL) {
        if (a->t == NULL) {
            return node_fail(I, node, MEMEST_E_PARSE,
                             "attribute 'value' must be a tensor");
        }
        if ((st = decode_tensor(a->t, &v, why, sizeof why))) {
            return node_fail(I, node, st, "attribute 'value' %s", why);
        }
        if (v.count != 1) {
            cval_free(&v);
            return node_fail(I, node, MEMEST_E_PARSE,
                             "attribute 'value' must hold one element");
        }
        dtype = v.dtype;
        fv = v.f[0];
        iv = v.ints ? v.ints[0] : 0;
        cval_free(&v);
    }
    for (size_t d = 0; d < n; d++) {
        if (shape[d] < 0) {
            return node_fail(I, node, MEMEST_E_SHAPE,
                             "shape entry %zu is %lld", d,
                             (long long)shape[d]);
        }
        dim[d] = (uint64_t)shape[d];
    }
    if ((st = make(I, node, c, (unsigned)n, dim, is_int_type(dtype), 0, dtype,
                   MAX_FOLD_ELEMENTS))) {
        return st;
    }
    for (uint64_t i = 0; i < c->count; i++) {
        c->owned[i] = c->ints ? (float)iv : fv;
        if (c->ints != NULL) {
            c->ints[i] = iv;
        }
    }
    return MEMEST_OK;
}

int fold_range(struct imp *I, size_t node, struct cval *c)
{
    static const char *const roles[3] = {"start", "limit", "delta"};
    const struct cval *p[3];
    uint64_t count;
    int ints = 1;
    int st;

    for (size_t k = 0; k < 3; k++) {
        if ((st = get_const(I, node, k, roles[k], &p[k]))) {
            return st;
        }
        if (p[k]->count != 1 || any_batch(p[k])) {
            return node_fail(I, node, MEMEST_E_PARSE,
                             "the %s must be one number%s", roles[k],
                             any_batch(p[k]) ? " (not the batch)" : "");
        }
        ints &= p[k]->ints != NULL;
    }
    if (ints) {
        int64_t s = p[0]->ints[0], l = p[1]->ints[0], d = p[2]->ints[0];
        /* the span in double: int64 differences may overflow */
        double span = ((double)l - (double)s) / (double)d;
        if (d == 0) {
            return node_fail(I, node, MEMEST_E_PARSE, "delta is 0");
        }
        count = span > 0 ? (uint64_t)fmin(ceil(span), 1e19) : 0;
        if (count > MAX_FOLD_ELEMENTS) {
            return node_fail(I, node, MEMEST_E_RANGE,
                             "folding it would make a tensor of %llu "
                             "elements (at most %llu)",
                             (unsigned long long)count,
                             (unsigned long long)MAX_FOLD_ELEMENTS);
        }
        if ((st = make(I, node, c, 1, &count, 1, 0, p[0]->dtype,
                       MAX_FOLD_ELEMENTS))) {
            return st;
        }
        for (uint64_t i = 0; i < count; i++) {
            int64_t v;
            if (__builtin_mul_overflow((int64_t)i, d, &v) ||
                __builtin_add_overflow(s, v, &v)) {
                return node_fail(I, node, MEMEST_E_RANGE,
                                 "its values overflow 64 bits");
            }
            set_int(c, i, v, 0);
        }
        return MEMEST_OK;
    }
    double s = p[0]->f[0], l = p[1]->f[0], d = p[2]->f[0];
    double span = (l - s) / d;
    if (d == 0 || !isfinite(span)) {
        return node_fail(I, node, MEMEST_E_PARSE,
                         "start, limit and delta give no finite count");
    }
    count = span > 0 ? (uint64_t)fmin(ceil(span), 1e19) : 0;
    if ((st = make(I, node, c, 1, &count, 0, 0, p[0]->dtype,
                   MAX_FOLD_ELEMENTS))) {
        return st;
    }
    for (uint64_t i = 0; i < count; i++) {
        c->owned[i] = (float)(s + (double)i * d);
    }
    return MEMEST_OK;
}

/* ---- Broadcasting: Expand, Equal, Where, Add, Sub, Mul, Div ------------ */

/* numpy's broadcast of the shapes of x[0..n) into rank and dim. */
static int broadcast_shape(struct imp *I, size_t node,
                           const struct cval *const *x, size_t n,
                           unsigned *rank, uint64_t *dim)
{
    unsigned r = 0;
    for (size_t k = 0; k < n; k++) {
        r = x[k]->rank > r ? x[k]->rank : r;
    }
    for (unsigned d = 0; d < r; d++) {
        dim[d] = 1;
    }
    for (size_t k = 0; k < n; k++) {
        unsigned off = r - x[k]->rank;
        for (unsigned d = 0; d < x[k]->rank; d++) {
            uint64_t a = dim[off + d], b = x[k]->dim[d];
            if (a != b && a != 1 && b != 1) {
                return node_fail(I, node, MEMEST_E_SHAPE,
                                 "shapes do not broadcast: %llu against "
                                 "%llu on axis %u", (unsigned long long)a,
                                 (unsigned long long)b, off + d);
            }
            dim[off + d] = a == 1 ? b : a;
        }
    }
    *rank = r;
    return MEMEST_OK;
}

/* The element of x that output element j of shape (r, dim) reads. */
static uint64_t bcast_at(const struct cval *x, unsigned r,
                         const uint64_t *dim, uint64_t j)
{
    uint64_t src = 0, mul = 1;
    for (unsigned d = r; d-- > 0;) {
        uint64_t coord = j % dim[d];
        j /= dim[d];
        if (d >= r - x->rank) {
            unsigned xd = d - (r - x->rank);
            if (x->dim[xd] != 1) {
                src += coord * mul;
            }
            mul *= x->dim[xd];
        }
    }
    return src;
}

int fold_expand(struct imp *I, size_t node, struct cval *c)
{
    const struct cval *x;
    struct cval shape;
    const struct cval *both[2];
    int64_t s[MEMEST_TENSOR_MAX_RANK];
    uint64_t dim[MEMEST_TENSOR_MAX_RANK];
    size_t n = 0;
    unsigned r = 0;
    int st;

    if ((st = get_const(I, node, 0, "input", &x)) ||
        (st = int_list(I, node, 1, "shape", s, &n))) {
        return st;
    }
    memset(&shape, 0, sizeof shape);
    shape.rank = (unsigned)n;
    for (size_t d = 0; d < n; d++) {
        if (s[d] < 0) {
            return node_fail(I, node, MEMEST_E_SHAPE,
                             "shape entry %zu is %lld", d, (long long)s[d]);
        }
        shape.dim[d] = (uint64_t)s[d];
    }
    both[0] = x;
    both[1] = &shape;
    if ((st = broadcast_shape(I, node, both, 2, &r, dim)) ||
        (st = make_like(I, node, c, x, r, dim, MAX_FOLD_ELEMENTS))) {
        return st;
    }
    for (uint64_t j = 0; j < c->count; j++) {
        move(c, j, x, bcast_at(x, r, dim, j));
    }
    return MEMEST_OK;
}

/* a + ca * N == b + cb * N for every batch N >= 1: 1 or 0; -1 when it
 * holds for one N only (depends on the batch). */
static int same_value(int64_t a, int64_t ca, int64_t b, int64_t cb)
{
    if (ca == cb) {
        return a == b;
    }
    /* N = (b - a) / (ca - cb), in double: the operands may be large */
    double nv = ((double)b - (double)a) / ((double)ca - (double)cb);
    return nv >= 1 && nv == floor(nv) ? -1 : 0;
}

int fold_equal(struct imp *I, size_t node, struct cval *c)
{
    const struct cval *x[2];
    uint64_t dim[MEMEST_TENSOR_MAX_RANK];
    unsigned r = 0;
    int st;

    if ((st = get_const(I, node, 0, "A", &x[0])) ||
        (st = get_const(I, node, 1, "B", &x[1])) ||
        (st = broadcast_shape(I, node, x, 2, &r, dim)) ||
        (st = make(I, node, c, r, dim, 1, 0,
                   ONNX__TENSOR_PROTO__DATA_TYPE__BOOL, MAX_FOLD_ELEMENTS))) {
        return st;
    }
    for (uint64_t j = 0; j < c->count; j++) {
        uint64_t i0 = bcast_at(x[0], r, dim, j);
        uint64_t i1 = bcast_at(x[1], r, dim, j);
        int eq;
        if (x[0]->ints != NULL && x[1]->ints != NULL) {
            eq = same_value(x[0]->ints[i0], x[0]->nb ? x[0]->nb[i0] : 0,
                            x[1]->ints[i1], x[1]->nb ? x[1]->nb[i1] : 0);
        } else if (has_batch(x[0], i0) || has_batch(x[1], i1)) {
            eq = -1;
        } else {
            eq = x[0]->f[i0] == x[1]->f[i1];
        }
        if (eq < 0) {
            return node_fail(I, node, MEMEST_E_PARSE,
                             "the comparison depends on the batch, which "
                             "is free here");
        }
        set_int(c, j, eq, 0);
    }
    return MEMEST_OK;
}

int fold_where(struct imp *I, size_t node, struct cval *c)
{
    const struct cval *x[3];
    uint64_t dim[MEMEST_TENSOR_MAX_RANK];
    unsigned r = 0;
    int st;

    if ((st = get_const(I, node, 0, "condition", &x[0])) ||
        (st = get_const(I, node, 1, "X", &x[1])) ||
        (st = get_const(I, node, 2, "Y", &x[2]))) {
        return st;
    }
    if (any_batch(x[0])) {
        return node_fail(I, node, MEMEST_E_PARSE,
                         "the condition depends on the batch, which is "
                         "free here");
    }
    if ((st = broadcast_shape(I, node, x, 3, &r, dim)) ||
        (st = make(I, node, c, r, dim,
                   x[1]->ints != NULL && x[2]->ints != NULL,
                   x[1]->nb != NULL || x[2]->nb != NULL, x[1]->dtype,
                   MAX_FOLD_ELEMENTS))) {
        return st;
    }
    for (uint64_t j = 0; j < c->count; j++) {
        uint64_t ic = bcast_at(x[0], r, dim, j);
        int pick = x[0]->ints ? x[0]->ints[ic] != 0 : x[0]->f[ic] != 0.0f;
        const struct cval *src = pick ? x[1] : x[2];
        if (c->ints == NULL && any_batch(src)) {
            return node_fail(I, node, MEMEST_E_PARSE,
                             "mixes the batch with floats");
        }
        move(c, j, src, bcast_at(src, r, dim, j));
    }
    return MEMEST_OK;
}

enum arith { ADD, SUB, MUL, DIV };

/*
 * One integer operation on a + ca*N and b + cb*N into *v + *cv*N; a
 * message in `why` when the result would overflow or depend on the
 * batch's value.
 */
static int int_op(enum arith op, int64_t a, int64_t ca, int64_t b,
                  int64_t cb, int64_t *v, int64_t *cv, const char **why)
{
    int bad = 0;
    switch (op) {
    case ADD:
        bad = __builtin_add_overflow(a, b, v) ||
              __builtin_add_overflow(ca, cb, cv);
        break;
    case SUB:
        bad = __builtin_sub_overflow(a, b, v) ||
              __builtin_sub_overflow(ca, cb, cv);
        break;
    case MUL:
        if (ca != 0 && cb != 0) {
            *why = "multiplies the batch by itself";
            return -1;
        }
        bad = __builtin_mul_overflow(a, b, v) ||
              __builtin_mul_overflow(ca, b, cv) ||
              (cb != 0 && __builtin_mul_overflow(a, cb, cv));
        break;
    case DIV:
        if (cb != 0) {
            *why = "divides by the batch";
            return -1;
        }
        if (b == 0) {
            *why = "divides by zero";
            return -1;
        }
        if ((a == INT64_MIN || ca == INT64_MIN) && b == -1) {
            bad = 1;
            break;
        }
        if (ca != 0 && (ca % b != 0 || a % b != 0)) {
            /* (ca*N + a) / b is a multiple of N plus a number only when b
             * divides both */
            *why = "divides the batch by a number that need not divide it";
            return -1;
        }
        /* integer Div truncates toward zero, as C's */
        *v = a / b;
        *cv = ca / b;
        break;
    }
    if (bad) {
        *why = "overflows 64 bits";
        return -1;
    }
    return 0;
}

static int arith(struct imp *I, size_t node, struct cval *c, enum arith op)
{
    static const char *const names[4] = {"Add", "Sub", "Mul", "Div"};
    const struct cval *x[2];
    uint64_t dim[MEMEST_TENSOR_MAX_RANK];
    int ints;
    unsigned r = 0;
    int st;

    if ((st = get_const(I, node, 0, "A", &x[0])) ||
        (st = get_const(I, node, 1, "B", &x[1])) ||
        (st = broadcast_shape(I, node, x, 2, &r, dim))) {
        return st;
    }
    ints = x[0]->ints != NULL && x[1]->ints != NULL;
    if (!ints && (any_batch(x[0]) || any_batch(x[1]))) {
        return node_fail(I, node, MEMEST_E_PARSE,
                         "%s mixes the batch with floats", names[op]);
    }
    if ((st = make(I, node, c, r, dim, ints,
                   x[0]->nb != NULL || x[1]->nb != NULL,
                   ints ? x[0]->dtype : ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT,
                   MAX_FOLD_ELEMENTS))) {
        return st;
    }
    for (uint64_t j = 0; j < c->count; j++) {
        uint64_t i0 = bcast_at(x[0], r, dim, j);
        uint64_t i1 = bcast_at(x[1], r, dim, j);
        if (ints) {
            const char *why = "";
            int64_t v = 0, cv = 0;
            int64_t c0 = x[0]->nb ? x[0]->nb[i0] : 0;
            int64_t c1 = x[1]->nb ? x[1]->nb[i1] : 0;
            if (int_op(op, x[0]->ints[i0], c0, x[1]->ints[i1], c1, &v, &cv,
                       &why) != 0) {
                char ta[48], tb[48];
                onnx_term_text(x[0]->ints[i0], c0, ta, sizeof ta);
                onnx_term_text(x[1]->ints[i1], c1, tb, sizeof tb);
                return node_fail(I, node, MEMEST_E_PARSE,
                                 "integer %s of %s and %s %s%s", names[op],
                                 ta, tb, why,
                                 c0 || c1 ? " (the batch N is free here)"
                                          : "");
            }
            set_int(c, j, v, cv);
            continue;
        }
        float a = x[0]->f[i0], b = x[1]->f[i1];
        switch (op) {
        case ADD:
            c->owned[j] = a + b;
            break;
        case SUB:
            c->owned[j] = a - b;
            break;
        case MUL:
            c->owned[j] = a * b;
            break;
        case DIV:
            c->owned[j] = a / b;
            break;
        }
    }
    return MEMEST_OK;
}

int fold_add(struct imp *I, size_t node, struct cval *c)
{
    return arith(I, node, c, ADD);
}

int fold_sub(struct imp *I, size_t node, struct cval *c)
{
    return arith(I, node, c, SUB);
}

int fold_mul(struct imp *I, size_t node, struct cval *c)
{
    return arith(I, node, c, MUL);
}

int fold_div(struct imp *I, size_t node, struct cval *c)
{
    return arith(I, node, c, DIV);
}
