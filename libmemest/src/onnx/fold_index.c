/*
 * ONNX import, constant folding: Shape, Gather, Concat and Slice (fold.c
 * says how folding carries a free batch).
 */
#include "onnx/fold.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    unsigned batch_at = 0; /* the shape's axis of the batch */
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
        if (I->v[a].batch_axis == 1) {
            /* a time-major graph input, held N x T x D: its shape is the
             * file's [T, N, D] (PyTorch sizes the zero initial states of
             * a time-major LSTM by Shape(x)[1]) */
            const uint64_t t = dim[1];
            dim[1] = dim[0];
            dim[0] = t;
            batch_at = 1;
        }
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
    if ((st = fold_new(I, node, c, 1, &len, 1, free_batch,
                   ONNX__TENSOR_PROTO__DATA_TYPE__INT64, UINT64_MAX))) {
        return st;
    }
    for (uint64_t i = 0; i < len; i++) {
        unsigned d = (unsigned)start + (unsigned)i;
        if (free_batch && d == batch_at) {
            fold_set_int(c, i, 0, 1);
        } else {
            fold_set_int(c, i, (int64_t)dim[d], 0);
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
    if ((st = fold_new_like(I, node, c, x, r, dim, MAX_FOLD_ELEMENTS))) {
        return st;
    }
    for (uint64_t o = 0, j = 0; o < outer; o++) {
        for (uint64_t k = 0; k < ix->count; k++) {
            int64_t i = ix->ints[k];
            uint64_t row = (uint64_t)(i < 0 ? i + (int64_t)x->dim[ax] : i);
            for (uint64_t e = 0; e < inner; e++, j++) {
                fold_move(c, j, x, (o * x->dim[ax] + row) * inner + e);
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
    if ((st = fold_new(I, node, c, first->rank, dim, any_ints, any_nb,
                   first->dtype, UINT64_MAX))) {
        return st;
    }
    for (uint64_t o = 0, j = 0; o < outer; o++) {
        for (size_t k = 0; k < n->n_input; k++) {
            get_const(I, node, k, "input", &x); /* read above */
            uint64_t span = x->dim[ax] * inner;
            for (uint64_t e = 0; e < span; e++, j++) {
                fold_move(c, j, x, o * span + e);
            }
        }
    }
    return MEMEST_OK;
}

/* Slice: starts, ends, axes, steps as inputs from opset 10, the first
 * three as attributes before. */
int fold_slice(struct imp *I, size_t node, struct cval *c)
{
    const struct cval *x;
    struct slice_args sa;
    int64_t first[MEMEST_TENSOR_MAX_RANK], step[MEMEST_TENSOR_MAX_RANK];
    uint64_t dim[MEMEST_TENSOR_MAX_RANK], stride[MEMEST_TENSOR_MAX_RANK];
    unsigned done = 0;
    int st;

    if ((st = get_const(I, node, 0, "data", &x))) {
        return st;
    }
    if ((st = slice_args(I, node, &sa))) {
        return st;
    }
    if (sa.ns != sa.ne || (sa.na != SIZE_MAX && sa.na != sa.ns) ||
        (sa.nt != SIZE_MAX && sa.nt != sa.ns) || sa.ns > x->rank) {
        return node_fail(I, node, MEMEST_E_PARSE,
                         "starts, ends, axes and steps must have one "
                         "length, at most the rank %u", x->rank);
    }
    for (unsigned d = 0; d < x->rank; d++) {
        first[d] = 0;
        step[d] = 1;
        dim[d] = x->dim[d];
    }
    for (size_t k = 0; k < sa.ns; k++) {
        unsigned a = 0;
        int64_t s = sa.nt != SIZE_MAX ? sa.steps[k] : 1;
        int64_t size;
        int64_t b, e;
        if ((st = norm_axis(I, node, sa.na != SIZE_MAX ? sa.axes[k] : (int64_t)k,
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
        b = sa.starts[k] < 0 ? (sa.starts[k] < -size ? -1 : sa.starts[k] + size)
                          : sa.starts[k];
        e = sa.ends[k] < 0 ? (sa.ends[k] < -size ? -1 : sa.ends[k] + size) : sa.ends[k];
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
    if ((st = fold_new_like(I, node, c, x, x->rank, dim, UINT64_MAX))) {
        return st;
    }
    strides_of(x->rank, x->dim, stride);
    for (uint64_t j = 0; j < c->count; j++) {
        uint64_t rest = j, src = 0;
        for (unsigned d = x->rank; d > 0;) {
            d--; /* backwards, without wrapping past zero */
            uint64_t coord = rest % dim[d];
            rest /= dim[d];
            src += (uint64_t)(first[d] + (int64_t)coord * step[d]) *
                   stride[d];
        }
        fold_move(c, j, x, src);
    }
    return MEMEST_OK;
}
