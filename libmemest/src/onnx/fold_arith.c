/*
 * ONNX import, constant folding: Cast, ConstantOfShape, Range, and the
 * broadcasting operators Expand, Equal, Where, Add, Sub, Mul, Div (fold.c
 * says how folding carries a free batch).
 */
#include "onnx/fold.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    if ((st = fold_new(I, node, c, x->rank, x->dim, is_int_type((int)to),
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
        fold_set_int(c, i, v, x->nb ? x->nb[i] : 0);
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
    if ((st = fold_new(I, node, c, (unsigned)n, dim, is_int_type(dtype), 0, dtype,
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
        if ((st = fold_new(I, node, c, 1, &count, 1, 0, p[0]->dtype,
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
            fold_set_int(c, i, v, 0);
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
    if ((st = fold_new(I, node, c, 1, &count, 0, 0, p[0]->dtype,
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
    for (unsigned d = r; d > 0;) {
        d--; /* backwards, without wrapping past zero */
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
        (st = fold_new_like(I, node, c, x, r, dim, MAX_FOLD_ELEMENTS))) {
        return st;
    }
    for (uint64_t j = 0; j < c->count; j++) {
        fold_move(c, j, x, bcast_at(x, r, dim, j));
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
        (st = fold_new(I, node, c, r, dim, 1, 0,
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
        fold_set_int(c, j, eq, 0);
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
        (st = fold_new(I, node, c, r, dim,
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
        fold_move(c, j, src, bcast_at(src, r, dim, j));
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
    if ((st = fold_new(I, node, c, r, dim, ints,
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
            fold_set_int(c, j, v, cv);
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
