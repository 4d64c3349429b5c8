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
#include "onnx/fold.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../alloc_rec.h" /* last: it wraps malloc and co. */

int is_int_type(int t)
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

int is_float_type(int t)
{
    return t == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT ||
           t == ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE ||
           t == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16 ||
           t == ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16;
}

int has_batch(const struct cval *c, uint64_t i)
{
    return c->nb != NULL && c->nb[i] != 0;
}

int any_batch(const struct cval *c)
{
    for (uint64_t i = 0; c->nb != NULL && i < c->count; i++) {
        if (c->nb[i] != 0) {
            return 1;
        }
    }
    return 0;
}

/* An element as an integer: exact when the tensor holds integers. */
int64_t int_at(const struct cval *c, uint64_t i)
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
int fold_new(struct imp *I, size_t node, struct cval *o, unsigned rank,
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
    if (count > I->fold_left) {
        return node_fail(I, node, MEMEST_E_RANGE,
                         "folding it would make %llu more elements, past "
                         "the %llu the import may fold in all",
                         (unsigned long long)count,
                         (unsigned long long)(MAX_FOLD_ELEMENTS +
                                              I->file_bytes));
    }
    I->fold_left -= count;
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
int fold_new_like(struct imp *I, size_t node, struct cval *o,
                     const struct cval *x, unsigned rank, const uint64_t *dim,
                     uint64_t limit)
{
    return fold_new(I, node, o, rank, dim, x->ints != NULL, x->nb != NULL,
                x->dtype, limit);
}

/* o[j] = x[i], with its exact value and batch term. */
void fold_move(struct cval *o, uint64_t j, const struct cval *x,
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
void fold_set_int(struct cval *o, uint64_t j, int64_t v, int64_t c)
{
    o->ints[j] = v;
    o->owned[j] = (float)v;
    if (o->nb != NULL) {
        o->nb[j] = c;
    }
}

/* Read a list of integers from a constant operand (rank 0 or 1, no batch
 * term) into out (at most MEMEST_TENSOR_MAX_RANK). */
int int_list(struct imp *I, size_t node, size_t slot,
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

/* Slice's starts, ends, axes and steps: attributes before opset 10
 * (where a step is always 1), the constant inputs 1 to 4 from it. */
int slice_args(struct imp *I, size_t node, struct slice_args *a)
{
    const Onnx__NodeProto *n = I->g->node[node];
    int st;

    a->ns = a->ne = 0;
    a->na = a->nt = SIZE_MAX;
    if (I->opset < 10) {
        if ((st = attr_ints(I, node, "starts", 0, a->starts, &a->ns)) ||
            (st = attr_ints(I, node, "ends", 0, a->ends, &a->ne))) {
            return st;
        }
        if (attr(n, "axes") != NULL &&
            (st = attr_ints(I, node, "axes", 0, a->axes, &a->na))) {
            return st;
        }
        return MEMEST_OK;
    }
    if (n->n_attribute > 0) {
        return node_fail(I, node, MEMEST_E_PARSE,
                         "attribute '%.40s' is not supported from opset "
                         "10 (starts, ends and axes are inputs)",
                         str(n->attribute[0]->name));
    }
    if ((st = int_list(I, node, 1, "starts", a->starts, &a->ns)) ||
        (st = int_list(I, node, 2, "ends", a->ends, &a->ne))) {
        return st;
    }
    if (in_name(n, 3)[0] &&
        (st = int_list(I, node, 3, "axes", a->axes, &a->na))) {
        return st;
    }
    if (in_name(n, 4)[0] &&
        (st = int_list(I, node, 4, "steps", a->steps, &a->nt))) {
        return st;
    }
    return MEMEST_OK;
}

/* The axes of Squeeze/Unsqueeze: an attribute before opset 13, an input
 * from 13. *n = SIZE_MAX when absent. */
int axes_of(struct imp *I, size_t node, int64_t *axes, size_t *n)
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
int norm_axis(struct imp *I, size_t node, int64_t a, unsigned r,
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
void strides_of(unsigned rank, const uint64_t *dim, uint64_t *st)
{
    uint64_t s = 1;
    for (unsigned d = rank; d > 0;) {
        d--; /* backwards, without wrapping past zero */
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
    if ((st = fold_new_like(I, node, c, x, x->rank, dim, UINT64_MAX))) {
        return st;
    }
    strides_of(x->rank, x->dim, stride);
    for (uint64_t i = 0; i < x->count; i++) {
        /* i indexes the output; walk its coordinates back to the input */
        uint64_t rest = i;
        uint64_t src = 0;
        for (unsigned d = x->rank; d > 0;) {
            d--; /* backwards, without wrapping past zero */
            uint64_t coord = rest % c->dim[d];
            rest /= c->dim[d];
            src += coord * stride[perm[d]];
        }
        fold_move(c, i, x, src);
    }
    return MEMEST_OK;
}

/* The same elements in row-major order under a new shape. */
static int relabel(struct imp *I, size_t node, struct cval *c,
                   const struct cval *x, unsigned rank, const uint64_t *dim)
{
    int st = fold_new_like(I, node, c, x, rank, dim, UINT64_MAX);
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
        fold_move(c, i, x, i);
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
