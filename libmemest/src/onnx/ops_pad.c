/*
 * ONNX import: Pad (constant mode) of an NxCxHxW activation, per side of
 * H and W. PyTorch exports AvgPool2d as a Pad (often of zeros all round)
 * before an AveragePool with pads 0, and F.pad before a convolution is
 * common; neither needs a layer:
 *   - a Pad of nothing is its input (the value aliases it);
 *   - a Pad of zeros read only by a Conv, or by an AveragePool that counts
 *     padding in its divisor (count_include_pad=1, or no padding of its
 *     own), is that node's padding: the padded cells are zeros there too,
 *     and an average that counts the explicit Pad's cells counts them as
 *     padding (count_pad=yes); with ceil_mode, where its last window is
 *     the one PyTorch's rule keeps, a cut window divides by the cells of
 *     the padded tensor, which is count_pad=yes with ceil=yes. ops_conv.c
 *     adds value->pad to the window.
 * Any other Pad (a nonzero value, one before a MaxPool, where zeros are
 * not padding, or one read by several nodes) is a `pad` layer. The modes
 * reflect and edge, negative pads and padding of the batch or channels
 * are refused, named.
 */
#include "onnx/onnx_internal.h"

#include <stdio.h>
#include <string.h>

/* Whether node `r` (the only reader of the Pad's output) takes the
 * padding into its own window exactly. */
static int folds_into(struct imp *I, size_t r, const uint64_t pad[4],
                      const uint64_t *dim, int sig)
{
    const Onnx__NodeProto *n = I->g->node[r];
    const int conv = str_eq(n->op_type, "Conv");
    char apbuf[32];
    const char *ap = attr_str(n, "auto_pad", "NOTSET", apbuf, sizeof apbuf);
    const Onnx__AttributeProto *a;
    int64_t cip = 0, ceil = 0;
    int64_t own[4] = {0, 0, 0, 0};
    int64_t ks[2] = {0, 0};
    int64_t sh = 1, sw = 1;

    if (!conv && !str_eq(n->op_type, "AveragePool")) {
        return 0;
    }
    if (strcmp(ap, "NOTSET") != 0) {
        return 0;
    }
    if (conv) {
        return 1;
    }
    if ((a = attr(n, "pads")) != NULL && a->n_ints == 4 && !sig) {
        memcpy(own, a->ints, sizeof own);
    }
    if ((a = attr(n, "kernel_shape")) != NULL && a->n_ints == 2 && !sig) {
        ks[0] = a->ints[0];
        ks[1] = a->ints[1];
    }
    if ((a = attr(n, "strides")) != NULL && a->n_ints == 2 && !sig) {
        sh = a->ints[0];
        sw = a->ints[1];
    }
    /* a 1-D signal's pool (struct value's sig): its window is the w
     * axis of a height-1 one */
    if ((a = attr(n, "pads")) != NULL && a->n_ints == 2 && sig) {
        own[1] = a->ints[0];
        own[3] = a->ints[1];
    }
    if ((a = attr(n, "kernel_shape")) != NULL && a->n_ints == 1 && sig) {
        ks[0] = 1;
        ks[1] = a->ints[0];
    }
    if ((a = attr(n, "strides")) != NULL && a->n_ints == 1 && sig) {
        sw = a->ints[0];
    }
    if (sh <= 0 || sw <= 0) {
        return 0;
    }
    if ((a = attr(n, "count_include_pad")) != NULL) {
        cip = a->i;
    }
    if ((a = attr(n, "ceil_mode")) != NULL) {
        ceil = a->i;
    }
    if (!cip && (own[0] || own[1] || own[2] || own[3])) {
        return 0;
    }
    if (ceil && (cip || own[0] || own[1] || own[2] || own[3])) {
        return 0;
    }
    /* ceil_mode on the padded tensor keeps a last window that starts in
     * the Pad's trailing cells, where the folded layer follows PyTorch's
     * rule (it must start inside the input or the leading padding): fold
     * only where the two agree */
    for (int ax = 0; ceil && ax < 2; ax++) {
        const uint64_t in = dim[2 + ax], lo = pad[ax], hi = pad[2 + ax];
        const uint64_t k = (uint64_t)ks[ax];
        const uint64_t st = ax ? (uint64_t)sw : (uint64_t)sh;
        const uint64_t span = in + lo + hi;
        if (k == 0 || st == 0 || span < k) {
            return 0;
        }
        if ((span - k) % st != 0 && ((span - k) / st + 1) * st >= in + lo) {
            return 0;
        }
    }
    /* every window must keep a real cell: the pools' own rule */
    for (int i = 0; i < 4; i++) {
        if (own[i] < 0 || (uint64_t)own[i] + pad[i] >= (uint64_t)ks[i % 2]) {
            return 0;
        }
    }
    return 1;
}

/* The pad layer: x padded by pad (top, left, bottom, right) with value. */
static int emit_pad(struct imp *I, size_t node, size_t x,
                    const uint64_t pad[4], double value)
{
    const Onnx__NodeProto *n = I->g->node[node];
    uint64_t dim[4];
    size_t l = 0;
    int st;

    memcpy(dim, I->v[x].dim, sizeof dim);
    /* each at most MAX_ELEMENTS: set_output() refuses a size too large */
    dim[2] += pad[0] + pad[2];
    dim[3] += pad[1] + pad[3];
    if ((st = push_layer(I, node, "pad", n->name, "pad", &l))) {
        return st;
    }
    /* %.9g: the float value exactly */
    snprintf(I->L[l].args, sizeof I->L[l].args,
             "p=%llu,%llu,%llu,%llu value=%.9g", (unsigned long long)pad[0],
             (unsigned long long)pad[1], (unsigned long long)pad[2],
             (unsigned long long)pad[3], value);
    if ((st = layer_inputs(I, l, &x, 1))) {
        return st;
    }
    return set_output(I, node, 0, l, 4, dim);
}

int onnx_pad(struct imp *I, size_t node)
{
    const Onnx__NodeProto *n = I->g->node[node];
    char mbuf[32];
    const char *mode = attr_str(n, "mode", "constant", mbuf, sizeof mbuf);
    int64_t p[8];
    size_t np = 0;
    double value = 0.0;
    uint64_t pad[4];
    size_t x = 0;
    size_t out;
    int st;

    if (strcmp(mode, "constant") != 0) {
        return node_fail(I, node, MEMEST_E_PARSE,
                         "mode '%.16s' is not supported (only constant)",
                         mode);
    }
    if ((st = get_act(I, node, 0, &x)) ||
        (st = need_rank(I, node, &I->v[x], 4, "NxCxL or NxCxHxW"))) {
        return st;
    }
    const int sig = I->v[x].sig;
    const size_t want = sig ? 6 : 8;
    if (I->opset < 11) {
        /* attr_ints() reads at most 4 (windows); a Pad's are 8 */
        const Onnx__AttributeProto *a = attr(n, "pads");
        if (a == NULL ||
            a->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS ||
            a->n_ints != want) {
            return node_fail(I, node, MEMEST_E_PARSE,
                             "attribute 'pads' must be a list of %zu "
                             "integers (begin and end of %s)", want,
                             sig ? "N, C, L" : "N, C, H, W");
        }
        np = want;
        memcpy(p, a->ints, np * sizeof *p);
        if ((st = attr_float(I, node, "value", 0.0, &value))) {
            return st;
        }
    } else {
        const struct cval *c;
        if ((st = get_const(I, node, 1, "pads", &c))) {
            return st;
        }
        if (c->ints == NULL || c->count != want) {
            return node_fail(I, node, MEMEST_E_PARSE,
                             "pads must be %zu integers (begin and end of "
                             "%s)", want, sig ? "N, C, L" : "N, C, H, W");
        }
        np = (size_t)c->count;
        memcpy(p, c->ints, np * sizeof *p);
        if (n->n_input > 2 && in_name(n, 2)[0] != '\0' &&
            (st = get_scalar(I, node, 2, "constant_value", &value))) {
            return st;
        }
        if (n->n_input > 3 && in_name(n, 3)[0] != '\0') {
            return node_fail(I, node, MEMEST_E_PARSE,
                             "the axes input is not supported");
        }
    }
    if (np != want) {
        return node_fail(I, node, MEMEST_E_PARSE,
                         "pads must be %zu integers (begin and end of "
                         "%s), it has %zu", want, sig ? "N, C, L" : "N, C, H, W",
                         np);
    }
    if (sig) {
        /* N, C, L's begins and ends: those of N, C, 1, L */
        const int64_t q[8] = {p[0], p[1], 0, p[2], p[3], p[4], 0, p[5]};
        memcpy(p, q, sizeof q);
    }
    for (int i = 0; i < 8; i++) {
        if (p[i] < 0) {
            return node_fail(I, node, MEMEST_E_PARSE,
                             "negative pads (a crop) are not supported");
        }
        if ((uint64_t)p[i] > MAX_ELEMENTS) {
            return node_fail(I, node, MEMEST_E_RANGE,
                             "pads must be 0 to %llu",
                             (unsigned long long)MAX_ELEMENTS);
        }
    }
    if (p[0] || p[1] || p[4] || p[5]) {
        return node_fail(I, node, MEMEST_E_PARSE,
                         "padding of the batch or channel axis is not "
                         "supported (only of H and W)");
    }
    /* ONNX orders pads as all begins, then all ends */
    pad[0] = (uint64_t)p[2];
    pad[1] = (uint64_t)p[3];
    pad[2] = (uint64_t)p[6];
    pad[3] = (uint64_t)p[7];
    out = n->n_output > 0 ? value_of(I, str(n->output[0])) : SIZE_MAX;
    if (out == SIZE_MAX) {
        return node_fail(I, node, MEMEST_E_PARSE, "the node has no output");
    }
    if (!(pad[0] || pad[1] || pad[2] || pad[3])) {
        if (out == I->output_value || I->v[x].layer == SIZE_MAX) {
            /* the model's output or input needs a layer of its own */
            return emit_simple(I, node, "identity", "identity", x,
                               I->v[x].rank, I->v[x].dim);
        }
        I->v[out].shaped = 1;
        I->v[out].rank = I->v[x].rank;
        memcpy(I->v[out].dim, I->v[x].dim, sizeof I->v[out].dim);
        I->v[out].layer = I->v[x].layer;
        I->v[out].ref = I->v[x].ref;
        I->v[out].sig = sig;
        return MEMEST_OK;
    }
    if (value == 0.0 && I->v[out].readers == 1 &&
        out != I->output_value && !I->v[x].has_pad &&
        folds_into(I, I->v[out].reader, pad, I->v[x].dim, sig)) {
        I->v[out].shaped = 1;
        I->v[out].rank = 4;
        memcpy(I->v[out].dim, I->v[x].dim, sizeof I->v[out].dim);
        I->v[out].layer = I->v[x].layer;
        I->v[out].ref = I->v[x].ref;
        I->v[out].sig = sig;
        I->v[out].has_pad = 1;
        memcpy(I->v[out].pad, pad, sizeof pad);
        return MEMEST_OK;
    }
    /* a value other than 0, a reader that cannot take the padding, or
     * several readers: a layer of its own */
    return emit_pad(I, node, x, pad, value);
}
