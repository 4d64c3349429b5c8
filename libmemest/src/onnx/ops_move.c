/*
 * ONNX import: data movement and reductions (ReduceMean, ReduceMax).
 *
 * A reduction over the plane of an NxCxHxW activation (axes {2, 3} in any
 * order or sign) is a global pool: ReduceMean a globalavgpool, ReduceMax
 * a maxpool whose window is the whole plane (k=HxW s=HxW, one output
 * pixel), the same maximum. keepdims=0 then drops the two unit axes: a
 * flatten of the Cx1x1 result, a view. Reductions over other axes (the
 * channels, one spatial axis) have no layer and are refused naming the
 * axes.
 *
 * Slice and Split of a computed tensor along one per-sample axis, step 1,
 * are `slice` layers (a copy: a range of channels is contiguous within a
 * sample but not over the batch). ShuffleNet's channel shuffle, Reshape
 * to [N, g, C/g, H, W], Transpose (0 2 1 3 4), Reshape back to [N, C, H,
 * W] (patterns.c finds the nodes), is one `shuffle g=` layer.
 */
#include "onnx/fold.h"
#include "onnx/onnx_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../alloc_rec.h" /* last: it wraps malloc and co. */

static int reduce_plane(struct imp *I, size_t node, int is_max)
{
    const Onnx__NodeProto *n = I->g->node[node];
    int64_t axes[4];
    size_t naxes = 0;
    int64_t keepdims = 1;
    int64_t noop = 0;
    unsigned seen = 0;
    uint64_t dim[4];
    size_t x = 0;
    size_t l = 0;
    int st;

    if ((st = get_act(I, node, 0, &x)) ||
        (st = attr_int(I, node, "keepdims", 1, &keepdims)) ||
        (st = attr_int(I, node, "noop_with_empty_axes", 0, &noop))) {
        return st;
    }
    if (n->n_input > 1 && in_name(n, 1)[0] != '\0') {
        /* opset 18 moved axes to an input */
        return node_fail(I, node, MEMEST_E_PARSE,
                         "axes given as an input (opset 18) are not "
                         "supported: only the attribute 'axes'");
    }
    if ((st = attr_ints(I, node, "axes", 0, axes, &naxes))) {
        return st;
    }
    if ((st = need_rank(I, node, &I->v[x], 4, "NxCxHxW"))) {
        return st;
    }
    if (naxes == 0) {
        return node_fail(I, node, MEMEST_E_PARSE,
                         "attribute 'axes' is %s: a reduction over every "
                         "axis is not supported, only over H and W "
                         "(axes [2, 3])",
                         noop ? "empty with noop_with_empty_axes=1"
                              : "missing");
    }
    for (size_t i = 0; i < naxes; i++) {
        int64_t a = axes[i] < 0 ? axes[i] + 4 : axes[i];
        if (a < 0 || a > 3 || (seen & (1u << a))) {
            return node_fail(I, node, MEMEST_E_PARSE,
                             "attribute 'axes' has %s axis %lld of a "
                             "rank-4 input",
                             (a >= 0 && a <= 3) ? "a repeated" : "the",
                             (long long)axes[i]);
        }
        seen |= 1u << a;
    }
    if (seen != 0xcu) {
        char list[64] = "";
        size_t off = 0;
        for (size_t i = 0; i < naxes && off + 24 < sizeof list; i++) {
            off += (size_t)snprintf(list + off, sizeof list - off, "%s%lld",
                                    i ? ", " : "", (long long)axes[i]);
        }
        return node_fail(I, node, MEMEST_E_PARSE,
                         "attribute 'axes' [%s] is not supported: only a "
                         "reduction over H and W (axes [2, 3]), a global "
                         "pool", list);
    }
    if (keepdims != 0 && keepdims != 1) {
        return node_fail(I, node, MEMEST_E_PARSE,
                         "attribute 'keepdims' %lld is not 0 or 1",
                         (long long)keepdims);
    }
    dim[0] = I->v[x].dim[0];
    dim[1] = I->v[x].dim[1];
    dim[2] = dim[3] = 1;
    if (is_max) {
        st = push_layer(I, node, "maxpool", n->name, "pool", &l);
        if (st == MEMEST_OK) {
            char k[48];
            snprintf(k, sizeof k, "%llux%llu",
                     (unsigned long long)I->v[x].dim[2],
                     (unsigned long long)I->v[x].dim[3]);
            snprintf(I->L[l].args, sizeof I->L[l].args, "k=%s s=%s p=0", k,
                     k);
            st = layer_inputs(I, l, &x, 1);
        }
        if (st == MEMEST_OK) {
            st = set_output(I, node, 0, l, 4, dim);
        }
    } else {
        st = emit_simple(I, node, "globalavgpool", "gap", x, 4, dim);
    }
    if (st != MEMEST_OK || keepdims) {
        return st;
    }
    /* keepdims=0: the flatten reads the pool's output, which the node's
     * output names until set_output moves it to the flatten */
    {
        size_t y = value_of(I, str(n->output[0]));
        return emit_flat(I, node, y);
    }
}

int onnx_reducemean(struct imp *I, size_t node)
{
    return reduce_plane(I, node, 0);
}

int onnx_reducemax(struct imp *I, size_t node)
{
    return reduce_plane(I, node, 1);
}

/* A layer of `kind` with the text arguments `args`, reading x, making
 * output `slot` of node with the shape given. */
static int emit_args(struct imp *I, size_t node, size_t slot,
                     const char *kind, const char *args, size_t x,
                     unsigned rank, const uint64_t *dim)
{
    size_t l = 0;
    int st = push_layer(I, node, kind, I->g->node[node]->name, kind, &l);
    if (st == MEMEST_OK) {
        snprintf(I->L[l].args, sizeof I->L[l].args, "%s", args);
        st = layer_inputs(I, l, &x, 1);
    }
    if (st == MEMEST_OK) {
        st = set_output(I, node, slot, l, rank, dim);
    }
    return st;
}

/* The per-sample axis word of ONNX axis a (1 .. rank - 1) of a rank-2 or
 * rank-4 activation: c, h, w as the text's slice names them. */
static char axis_word(unsigned rank, unsigned a)
{
    return rank == 4 ? "nchw"[a] : "nch"[a];
}

/* A slice layer of x's [b, e) along ONNX axis a, as output `slot`; the
 * whole axis is an identity. */
static int emit_range(struct imp *I, size_t node, size_t slot, size_t x,
                      unsigned a, uint64_t b, uint64_t e)
{
    const struct value *v = &I->v[x];
    uint64_t dim[4];
    char args[96];
    memcpy(dim, v->dim, sizeof dim);
    if (b == 0 && e == v->dim[a]) {
        return emit_args(I, node, slot, "identity", "", x, v->rank, dim);
    }
    dim[a] = e - b;
    snprintf(args, sizeof args, "axis=%c begin=%llu end=%llu",
             axis_word(v->rank, a), (unsigned long long)b,
             (unsigned long long)e);
    return emit_args(I, node, slot, "slice", args, x, v->rank, dim);
}

/* The computed tensor's axis for a slice: not the batch, and of a rank
 * the text has (a vector, or CxHxW). */
static int slice_axis(struct imp *I, size_t node, size_t x, int64_t axis,
                      unsigned *a)
{
    const struct value *v = &I->v[x];
    int st;
    if (v->sig) {
        /* ONNX's N x C x L held as N x C x 1 x L: axis 2 is w */
        if ((st = norm_axis(I, node, axis, 3, "axis", a))) {
            return st;
        }
        if (*a == 0) {
            return node_fail(I, node, MEMEST_E_PARSE,
                             "axis %lld is the batch: only the axes of a "
                             "sample (1 .. 2) are sliced", (long long)axis);
        }
        *a = *a == 2 ? 3 : *a;
        return MEMEST_OK;
    }
    if (v->rank < 2) {
        return node_fail(I, node, MEMEST_E_PARSE,
                         "the input is rank %u: only NxC, NxTxD and "
                         "NxCxHxW tensors are sliced", v->rank);
    }
    if ((st = norm_axis(I, node, axis, v->rank, "axis", a))) {
        return st;
    }
    if (*a == 0) {
        return node_fail(I, node, MEMEST_E_PARSE,
                         "axis %lld is the batch: only the axes of a "
                         "sample (1 .. %u) are sliced", (long long)axis,
                         v->rank - 1);
    }
    return MEMEST_OK;
}

int onnx_slice(struct imp *I, size_t node)
{
    struct slice_args sa;
    unsigned cut = 0, done = 0;
    uint64_t b = 0, e = 0;
    size_t x = 0;
    int st;

    if ((st = get_act(I, node, 0, &x))) {
        return st;
    }
    if ((st = slice_args(I, node, &sa))) {
        return st;
    }
    if (sa.ns != sa.ne || (sa.na != SIZE_MAX && sa.na != sa.ns) ||
        (sa.nt != SIZE_MAX && sa.nt != sa.ns) || sa.ns == 0) {
        return node_fail(I, node, MEMEST_E_PARSE,
                         "starts, ends, axes and steps must have one "
                         "length, 1 to the rank %u", I->v[x].rank);
    }
    for (size_t k = 0; k < sa.ns; k++) {
        unsigned a = 0;
        int64_t size, lo, hi;
        if ((st = slice_axis(I, node, x, sa.na != SIZE_MAX ? sa.axes[k]
                                                        : (int64_t)k, &a))) {
            return st;
        }
        if (done & (1u << a)) {
            return node_fail(I, node, MEMEST_E_PARSE, "axis %u is sliced "
                             "twice", a);
        }
        done |= 1u << a;
        if (sa.nt != SIZE_MAX && sa.steps[k] != 1) {
            return node_fail(I, node, MEMEST_E_PARSE,
                             "step %lld along axis %u is not supported: "
                             "only 1", (long long)sa.steps[k], a);
        }
        /* negative counts from the end; then clamped to [0, size]
         * (INT64_MAX stands for "to the end") */
        size = (int64_t)I->v[x].dim[a];
        lo = sa.starts[k] < 0 ? sa.starts[k] + size : sa.starts[k];
        hi = sa.ends[k] < 0 ? sa.ends[k] + size : sa.ends[k];
        lo = lo < 0 ? 0 : lo > size ? size : lo;
        hi = hi < 0 ? 0 : hi > size ? size : hi;
        if (lo >= hi) {
            return node_fail(I, node, MEMEST_E_PARSE,
                             "the slice [%lld, %lld) of axis %u is empty",
                             (long long)sa.starts[k], (long long)sa.ends[k], a);
        }
        if (lo == 0 && hi == size) {
            continue; /* the whole axis */
        }
        if (cut != 0) {
            return node_fail(I, node, MEMEST_E_PARSE,
                             "axes %u and %u are both cut: only a slice "
                             "along one axis is supported", cut, a);
        }
        cut = a;
        b = (uint64_t)lo;
        e = (uint64_t)hi;
    }
    if (cut == 0) {
        return emit_range(I, node, 0, x, 1, 0, I->v[x].dim[1]);
    }
    return emit_range(I, node, 0, x, cut, b, e);
}

int onnx_split(struct imp *I, size_t node)
{
    const Onnx__NodeProto *n = I->g->node[node];
    int64_t axis = 0;
    int64_t parts[MEMEST_TENSOR_MAX_RANK]; /* what int_list may write */
    size_t np = SIZE_MAX;
    uint64_t at = 0, size;
    unsigned a = 0;
    size_t x = 0;
    int st;

    if ((st = get_act(I, node, 0, &x)) ||
        (st = attr_int(I, node, "axis", 0, &axis)) ||
        (st = slice_axis(I, node, x, axis, &a))) {
        return st;
    }
    size = I->v[x].dim[a];
    if (n->n_output == 0 || n->n_output > 4) {
        return node_fail(I, node, MEMEST_E_PARSE,
                         "%zu outputs: 1 to 4 are supported", n->n_output);
    }
    if (I->opset < 13) {
        if (attr(n, "split") != NULL &&
            (st = attr_ints(I, node, "split", n->n_output, parts, &np))) {
            return st;
        }
        if (np == 0) {
            np = SIZE_MAX;
        }
    } else if (in_name(n, 1)[0] &&
               (st = int_list(I, node, 1, "split", parts, &np))) {
        return st;
    }
    if (np == SIZE_MAX) {
        /* equal parts, as ONNX says: the axis must divide */
        if (size % n->n_output != 0) {
            return node_fail(I, node, MEMEST_E_PARSE,
                             "axis %u of size %llu does not split into %zu "
                             "equal parts", a, (unsigned long long)size,
                             n->n_output);
        }
        for (size_t k = 0; k < n->n_output; k++) {
            parts[k] = (int64_t)(size / n->n_output);
        }
        np = n->n_output;
    }
    if (np != n->n_output) {
        return node_fail(I, node, MEMEST_E_PARSE,
                         "'split' has %zu sizes for %zu outputs", np,
                         n->n_output);
    }
    for (size_t k = 0; k < np; k++) {
        if (parts[k] <= 0 || (uint64_t)parts[k] > size - at) {
            return node_fail(I, node, MEMEST_E_PARSE,
                             "'split' size %lld of output %zu does not fit "
                             "axis %u of size %llu", (long long)parts[k], k,
                             a, (unsigned long long)size);
        }
        at += (uint64_t)parts[k];
    }
    if (at != size) {
        return node_fail(I, node, MEMEST_E_PARSE,
                         "the 'split' sizes add up to %llu, not the %llu of "
                         "axis %u", (unsigned long long)at,
                         (unsigned long long)size, a);
    }
    at = 0;
    for (size_t k = 0; k < np; k++) {
        size_t vk = value_of(I, str(n->output[k]));
        /* an output nothing reads has no layer (the text refuses a
         * layer no one reads) */
        if (vk != SIZE_MAX && I->v[vk].readers > 0 &&
            (st = emit_range(I, node, k, x, a, at,
                             at + (uint64_t)parts[k]))) {
            return st;
        }
        at += (uint64_t)parts[k];
    }
    return MEMEST_OK;
}

/* A value of a folded shape: `want`, or the batch where `want` is it. */
static int shape_is(const struct cval *s, uint64_t i, uint64_t want,
                    int batch, int64_t fixed)
{
    const int64_t v = s->ints[i];
    const int64_t nb = s->nb ? s->nb[i] : 0;
    if (batch) {
        /* N as the folded batch symbol, 0 (copy), -1 (infer) or the
         * fixed batch */
        return (nb == 1 && v == 0) || (nb == 0 && (v == 0 || v == -1)) ||
               (nb == 0 && v == fixed);
    }
    return nb == 0 && v >= 0 && (uint64_t)v == want;
}

int onnx_reshape_5d(struct imp *I, size_t node, size_t x,
                    const struct cval *s)
{
    const struct value *v = &I->v[x];
    size_t tr = SIZE_MAX, tail;
    const struct cval *s2;
    uint64_t g, dim[4];
    char args[48];
    int st;

    if (v->rank != 4 || s->ints[1] <= 0 || (s->nb && s->nb[1] != 0) ||
        v->dim[1] % (uint64_t)s->ints[1] != 0) {
        goto refuse;
    }
    g = (uint64_t)s->ints[1];
    if (!shape_is(s, 0, 0, 1, (int64_t)v->dim[0]) ||
        !shape_is(s, 2, v->dim[1] / g, 0, 0) ||
        !shape_is(s, 3, v->dim[2], 0, 0) ||
        !shape_is(s, 4, v->dim[3], 0, 0)) {
        goto refuse;
    }
    tail = find_shuffle_tail(I, node, &tr);
    if (tail == SIZE_MAX) {
        goto refuse;
    }
    if ((st = get_const(I, tail, 1, "shape", &s2))) {
        return st;
    }
    if (s2->ints == NULL || s2->rank != 1 || s2->count != 4 ||
        !shape_is(s2, 0, 0, 1, (int64_t)v->dim[0]) ||
        !(shape_is(s2, 1, v->dim[1], 0, 0) ||
          (s2->ints[1] == -1 && (s2->nb == NULL || s2->nb[1] == 0))) ||
        !shape_is(s2, 2, v->dim[2], 0, 0) ||
        !shape_is(s2, 3, v->dim[3], 0, 0)) {
        return node_fail(I, tail, MEMEST_E_PARSE,
                         "the reshape after the channel shuffle's "
                         "Transpose must give back [N, %llu, %llu, %llu]",
                         (unsigned long long)v->dim[1],
                         (unsigned long long)v->dim[2],
                         (unsigned long long)v->dim[3]);
    }
    memcpy(dim, v->dim, sizeof dim);
    snprintf(args, sizeof args, "g=%llu", (unsigned long long)g);
    /* the layer is named after the first node, made at the last, and the
     * two after the first are covered by it */
    {
        size_t l = 0;
        st = push_layer(I, node, "shuffle", I->g->node[node]->name,
                        "shuffle", &l);
        if (st == MEMEST_OK) {
            snprintf(I->L[l].args, sizeof I->L[l].args, "%s", args);
            st = layer_inputs(I, l, &x, 1);
        }
        if (st == MEMEST_OK) {
            st = set_output(I, tail, 0, l, 4, dim);
        }
    }
    I->ni[tr].skip = 1;
    I->ni[tail].skip = 1;
    return st;

refuse:
    {
        char text[160] = "";
        size_t off = 0;
        for (uint64_t i = 0; i < s->count && off + 40 < sizeof text; i++) {
            off += (size_t)snprintf(text + off, sizeof text - off, "%s",
                                    i ? ", " : "[");
            onnx_term_text(s->ints[i], s->nb ? s->nb[i] : 0, text + off,
                           sizeof text - off);
            off += strlen(text + off);
        }
        return node_fail(I, node, MEMEST_E_PARSE,
                         "the shape %s] is not supported: a 5-D reshape "
                         "only as ShuffleNet's channel shuffle, [N, g, "
                         "C/g, H, W] then Transpose (0, 2, 1, 3, 4) and "
                         "a Reshape back to [N, C, H, W]", text);
    }
}

/* A view of x as [N, dim[1..rank-1]]: a flatten to a vector, the identity
 * when the shape does not change, else a reshape. */
static int emit_view(struct imp *I, size_t node, size_t x, unsigned rank,
                     const uint64_t *dim)
{
    const struct value *v = &I->v[x];
    char args[96];
    size_t off = 0;
    int same = rank == v->rank;
    for (unsigned d = 1; same && d < rank; d++) {
        same = dim[d] == v->dim[d];
    }
    if (same) {
        return emit_args(I, node, 0, "identity", "", x, rank, dim);
    }
    if (rank == 2) {
        return emit_flat(I, node, x);
    }
    off = (size_t)snprintf(args, sizeof args, "shape=");
    for (unsigned d = 1; d < rank && off < sizeof args; d++) {
        off += (size_t)snprintf(args + off, sizeof args - off, "%s%llu",
                                d > 1 ? "x" : "",
                                (unsigned long long)dim[d]);
    }
    return emit_args(I, node, 0, "reshape", args, x, rank, dim);
}

int onnx_reshape_view(struct imp *I, size_t node, size_t x,
                      const struct cval *s, int64_t allowzero)
{
    const struct value *v = &I->v[x];
    const unsigned rank = (unsigned)s->count;
    uint64_t dim[4] = {v->dim[0], 1, 1, 1};
    uint64_t known = 1;
    unsigned infer = 0;

    if (!shape_is(s, 0, 0, 1, (int64_t)v->dim[0])) {
        return node_fail(I, node, MEMEST_E_PARSE,
                         "the first entry of the shape must be the batch "
                         "(N, 0 or -1): a reshape keeps each sample whole");
    }
    for (unsigned d = 1; d < rank; d++) {
        const int64_t e = s->ints[d];
        if (s->nb != NULL && s->nb[d] != 0) {
            return node_fail(I, node, MEMEST_E_PARSE,
                             "entry %u of the shape depends on the batch: "
                             "a reshape keeps each sample whole", d);
        }
        if (e == -1 && infer == 0) {
            infer = d;
            continue;
        }
        if (e == 0 && !allowzero && d < v->rank) {
            dim[d] = v->dim[d];
        } else if (e > 0) {
            dim[d] = (uint64_t)e;
        } else {
            return node_fail(I, node, MEMEST_E_PARSE,
                             "entry %u of the shape is %lld: only sizes, "
                             "one -1 and 0 (copy) are supported", d,
                             (long long)e);
        }
        if (mul_ovf(known, dim[d], &known)) {
            return node_fail(I, node, MEMEST_E_OVERFLOW,
                             "the shape's entries overflow");
        }
    }
    if (infer != 0) {
        if (per_sample(v) % known != 0) {
            return node_fail(I, node, MEMEST_E_PARSE,
                             "the shape's -1 has no whole size: %llu "
                             "elements per sample over %llu",
                             (unsigned long long)per_sample(v),
                             (unsigned long long)known);
        }
        dim[infer] = per_sample(v) / known;
        known = per_sample(v);
    }
    if (known != per_sample(v)) {
        return node_fail(I, node, MEMEST_E_PARSE,
                         "the shape has %llu elements per sample, the "
                         "input %llu", (unsigned long long)known,
                         (unsigned long long)per_sample(v));
    }
    return emit_view(I, node, x, rank, dim);
}

/* Squeeze and Unsqueeze of a computed tensor: views, the batch kept. */
static int squeeze_view(struct imp *I, size_t node, int un)
{
    const char *op = un ? "Unsqueeze" : "Squeeze";
    int64_t axes[8];
    size_t na = SIZE_MAX;
    unsigned marked = 0, rank;
    uint64_t dim[4];
    size_t x = 0;
    int st;

    if ((st = get_act(I, node, 0, &x)) ||
        (st = axes_of(I, node, axes, &na))) {
        return st;
    }
    const struct value *v = &I->v[x];
    if (na == SIZE_MAX || na == 0) {
        if (un) {
            return node_fail(I, node, MEMEST_E_PARSE, "Unsqueeze needs axes");
        }
        /* every axis of size 1 but the batch */
        for (unsigned d = 1; d < v->rank; d++) {
            marked |= v->dim[d] == 1 ? 1u << d : 0u;
        }
        na = 0;
    }
    rank = un ? v->rank + (unsigned)na : v->rank;
    for (size_t k = 0; k < na; k++) {
        unsigned a = 0;
        if ((st = norm_axis(I, node, axes[k], un ? rank : v->rank, "axis",
                            &a))) {
            return st;
        }
        if (a == 0 || (marked & (1u << a))) {
            return node_fail(I, node, MEMEST_E_PARSE,
                             "axis %lld is %s: a %s keeps the batch first",
                             (long long)axes[k],
                             a == 0 ? "the batch" : "repeated", op);
        }
        if (!un && v->dim[a] != 1) {
            return node_fail(I, node, MEMEST_E_PARSE,
                             "axis %u has size %llu, not 1", a,
                             (unsigned long long)v->dim[a]);
        }
        marked |= 1u << a;
    }
    if (!un) {
        unsigned out = 0;
        for (unsigned d = 0; d < v->rank; d++) {
            if (!(marked & (1u << d))) {
                dim[out++] = v->dim[d];
            }
        }
        rank = out;
    } else {
        unsigned in = 0;
        if (rank > 4) {
            return node_fail(I, node, MEMEST_E_PARSE,
                             "the result would have rank %u: at most 4 "
                             "(NxCxHxW) is supported", rank);
        }
        for (unsigned d = 0; d < rank; d++) {
            dim[d] = (marked & (1u << d)) ? 1 : v->dim[in++];
        }
    }
    if (rank < 2) {
        return node_fail(I, node, MEMEST_E_PARSE,
                         "the result would have rank %u: a sample must "
                         "keep at least one axis", rank);
    }
    return emit_view(I, node, x, rank, dim);
}

int onnx_squeeze(struct imp *I, size_t node)
{
    return squeeze_view(I, node, 0);
}

int onnx_unsqueeze(struct imp *I, size_t node)
{
    return squeeze_view(I, node, 1);
}

/* Gather of one index of a 1-D signal's channel or time axis, x[:, :, -1]
 * (a TCN's last step): a slice of width 1, then, for a scalar index that
 * drops the axis, a flatten to N x (the other axis). Gather of any other
 * computed tensor is not supported (of constants and shapes it is
 * folded). */
int onnx_gather(struct imp *I, size_t node)
{
    const Onnx__NodeProto *n = I->g->node[node];
    const struct cval *ix;
    int64_t axis = 0;
    int64_t i;
    unsigned a = 0;
    uint64_t size;
    uint64_t dim[4];
    size_t x = 0;
    size_t l = 0;
    size_t f = 0;
    int st;

    if ((st = get_act(I, node, 0, &x)) ||
        (st = attr_int(I, node, "axis", 0, &axis))) {
        return st;
    }
    if (!I->v[x].sig && I->v[x].rank != 3) {
        return node_fail(I, node, MEMEST_E_PARSE,
                         "Gather of a computed tensor is supported only on "
                         "a 1-D signal (N x C x L) and a sequence (N x T x "
                         "D, x[:, 0], a class token); of shapes and "
                         "constants it is folded at import");
    }
    if (I->v[x].sig) {
        st = slice_axis(I, node, x, axis, &a);
    } else if ((st = norm_axis(I, node, axis, 3, "axis", &a)) == MEMEST_OK &&
               a == 0) {
        st = node_fail(I, node, MEMEST_E_PARSE,
                       "axis %lld is the batch: only the axes of a sample "
                       "(1 .. 2) are gathered from", (long long)axis);
    }
    if (st != MEMEST_OK ||
        (st = get_const(I, node, 1, "indices", &ix))) {
        return st;
    }
    if (ix->ints == NULL || ix->count != 1 || ix->rank > 1 ||
        ix->nb != NULL) {
        return node_fail(I, node, MEMEST_E_PARSE,
                         "indices must be one constant integer (a scalar or "
                         "a list of one)");
    }
    size = I->v[x].dim[a];
    i = ix->ints[0] < 0 ? ix->ints[0] + (int64_t)size : ix->ints[0];
    if (i < 0 || (uint64_t)i >= size) {
        return node_fail(I, node, MEMEST_E_RANGE,
                         "index %lld is outside the axis of %llu",
                         (long long)ix->ints[0], (unsigned long long)size);
    }
    if (ix->rank == 1) {
        /* the axis is kept, of size 1: still a signal */
        return emit_range(I, node, 0, x, a, (uint64_t)i, (uint64_t)i + 1);
    }
    if ((st = push_layer(I, node, "slice", n->name, "slice", &l))) {
        return st;
    }
    snprintf(I->L[l].args, sizeof I->L[l].args, "axis=%c begin=%lld end=%lld",
             axis_word(I->v[x].rank, a), (long long)i, (long long)i + 1);
    if ((st = layer_inputs(I, l, &x, 1)) ||
        (st = push_layer(I, node, "flatten", NULL, "flatten", &f))) {
        return st;
    }
    /* the flatten reads the slice, which no ONNX value names */
    I->L[f].in = malloc(strlen(I->L[l].name) + 1);
    if (I->L[f].in == NULL) {
        return nomem(I);
    }
    strcpy(I->L[f].in, I->L[l].name);
    memcpy(dim, I->v[x].dim, sizeof dim);
    dim[a] = 1;
    if (I->v[x].rank == 3) {
        dim[3] = 1; /* N x T x D has no fourth axis */
    }
    dim[1] = dim[1] * dim[2] * dim[3]; /* within MAX_ELEMENTS: x's part */
    dim[2] = dim[3] = 0;
    return set_output(I, node, 0, f, 2, dim);
}
