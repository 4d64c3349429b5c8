/*
 * ONNX import: Conv, MaxPool and AveragePool, which share the reading of
 * a window (kernel, strides, pads, auto_pad, dilations, ceil_mode).
 */
#include "onnx/onnx_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct window {
    uint64_t kh, kw, sh, sw;
    uint64_t pt, pl, pb, pr;
    uint64_t oh, ow;
    uint64_t dh, dw; /* dilations (Conv) */
    int ceil;        /* ceil_mode changes the output size (pools) */
};

static int out_size(uint64_t in, uint64_t p0, uint64_t p1, uint64_t k,
                    uint64_t s, int ceil_mode, uint64_t *out)
{
    uint64_t span;
    if (add_ovf(in, p0, &span) || add_ovf(span, p1, &span) || span < k) {
        return -1;
    }
    *out = (span - k) / s + 1;
    /* ceil_mode adds the window that covers the rest, unless it would
     * start past the input and the leading padding (PyTorch's rule, which
     * ONNX Runtime follows) */
    if (ceil_mode && (span - k) % s != 0 && *out * s < in + p0) {
        (*out)++;
    }
    return 0;
}

/* Read kernel_shape (or the given kernel), strides, pads, auto_pad,
 * dilations (a Conv's; 1 only for pools: the kernels have no dilated
 * pooling) and ceil_mode (pools). */
static int read_window(struct imp *I, size_t node, const struct value *x,
                       const uint64_t *kernel, struct window *w)
{
    const Onnx__NodeProto *n = I->g->node[node];
    int64_t ks[4], st[4], pads[4], dil[4];
    size_t nks, nst, npads, ndil;
    int64_t ceil_mode = 0;
    char apbuf[32];
    const char *ap = attr_str(n, "auto_pad", "NOTSET", apbuf, sizeof apbuf);
    uint64_t ih = x->dim[2], iw = x->dim[3];
    uint64_t fh = 0, fw = 0, ekh, ekw;
    /* a signal's window is 1-D: one kernel size, stride and dilation and
     * two pads (begin, end), which become the w axis of a height-1
     * window */
    const size_t sp = x->sig ? 1 : 2;
    int s;

    if ((s = attr_ints(I, node, "kernel_shape", sp, ks, &nks)) ||
        (s = attr_ints(I, node, "strides", sp, st, &nst)) ||
        (s = attr_ints(I, node, "pads", 2 * sp, pads, &npads)) ||
        (s = attr_ints(I, node, "dilations", sp, dil, &ndil))) {
        return s;
    }
    if (x->sig) {
        if (nks == 1) {
            ks[1] = ks[0];
            ks[0] = 1;
            nks = 2;
        }
        if (nst == 1) {
            st[1] = st[0];
            st[0] = 1;
            nst = 2;
        }
        if (npads == 2) {
            pads[3] = pads[1];
            pads[1] = pads[0];
            pads[0] = 0;
            pads[2] = 0;
            npads = 4;
        }
        if (ndil == 1) {
            dil[1] = dil[0];
            dil[0] = 1;
            ndil = 2;
        }
    }
    if (attr(n, "ceil_mode") != NULL &&
        (s = attr_int(I, node, "ceil_mode", 0, &ceil_mode))) {
        return s;
    }
    w->dh = w->dw = 1;
    if (ndil == 2 && kernel == NULL && (dil[0] != 1 || dil[1] != 1)) {
        return node_fail(I, node, MEMEST_E_PARSE,
                         "dilations %lldx%lld are not supported in pooling "
                         "(only 1)", (long long)dil[0], (long long)dil[1]);
    }
    if (ndil == 2) {
        if (dil[0] <= 0 || dil[1] <= 0 || (uint64_t)dil[0] > MAX_ELEMENTS ||
            (uint64_t)dil[1] > MAX_ELEMENTS) {
            return node_fail(I, node, MEMEST_E_RANGE,
                             "dilations %lldx%lld must be 1 to %llu",
                             (long long)dil[0], (long long)dil[1],
                             (unsigned long long)MAX_ELEMENTS);
        }
        w->dh = (uint64_t)dil[0];
        w->dw = (uint64_t)dil[1];
    }

    if (kernel != NULL) {
        if (nks == 2 && ((uint64_t)ks[0] != kernel[0] ||
                         (uint64_t)ks[1] != kernel[1])) {
            return node_fail(I, node, MEMEST_E_SHAPE,
                             "kernel_shape %lldx%lld disagrees with the "
                             "weights' %llux%llu", (long long)ks[0],
                             (long long)ks[1], (unsigned long long)kernel[0],
                             (unsigned long long)kernel[1]);
        }
        w->kh = kernel[0];
        w->kw = kernel[1];
    } else {
        if (nks != 2) {
            return node_fail(I, node, MEMEST_E_PARSE,
                             "kernel_shape (2 values) is required");
        }
        if (ks[0] <= 0 || ks[1] <= 0) {
            return node_fail(I, node, MEMEST_E_RANGE,
                             "kernel_shape must be positive");
        }
        w->kh = (uint64_t)ks[0];
        w->kw = (uint64_t)ks[1];
    }
    w->sh = w->sw = 1;
    if (nst == 2) {
        if (st[0] <= 0 || st[1] <= 0) {
            return node_fail(I, node, MEMEST_E_RANGE,
                             "strides must be positive");
        }
        w->sh = (uint64_t)st[0];
        w->sw = (uint64_t)st[1];
    }
    w->pt = w->pl = w->pb = w->pr = 0;
    if (strcmp(ap, "NOTSET") == 0) {
        if (npads == 4) {
            for (int i = 0; i < 4; i++) {
                if (pads[i] < 0 || (uint64_t)pads[i] > MAX_ELEMENTS) {
                    return node_fail(I, node, MEMEST_E_RANGE,
                                     "pads must be 0 to %llu",
                                     (unsigned long long)MAX_ELEMENTS);
                }
            }
            /* ONNX orders pads as begins then ends: top, left, bottom,
             * right, which is the text format's p=t,l,b,r */
            w->pt = (uint64_t)pads[0];
            w->pl = (uint64_t)pads[1];
            w->pb = (uint64_t)pads[2];
            w->pr = (uint64_t)pads[3];
        }
        if (x->has_pad) {
            /* a zero Pad before this node (ops_pad.c); both at most
             * MAX_ELEMENTS, so the sums do not overflow */
            w->pt += x->pad[0];
            w->pl += x->pad[1];
            w->pb += x->pad[2];
            w->pr += x->pad[3];
        }
    } else if (strcmp(ap, "SAME_UPPER") == 0 ||
               strcmp(ap, "SAME_LOWER") == 0) {
        /* output ceil(in / stride); the padding that needs, split with the
         * odd cell at the end (UPPER) or at the start (LOWER) */
        uint64_t oh = (ih + w->sh - 1) / w->sh;
        uint64_t ow = (iw + w->sw - 1) / w->sw;
        uint64_t need_h = (oh - 1) * w->sh + w->dh * (w->kh - 1) + 1;
        uint64_t need_w = (ow - 1) * w->sw + w->dw * (w->kw - 1) + 1;
        uint64_t th = need_h > ih ? need_h - ih : 0;
        uint64_t tw = need_w > iw ? need_w - iw : 0;
        int lower = strcmp(ap, "SAME_LOWER") == 0;
        w->pt = lower ? th - th / 2 : th / 2;
        w->pb = th - w->pt;
        w->pl = lower ? tw - tw / 2 : tw / 2;
        w->pr = tw - w->pl;
    } else if (strcmp(ap, "VALID") != 0) {
        return node_fail(I, node, MEMEST_E_PARSE,
                         "auto_pad '%s' is not one of NOTSET, SAME_UPPER, "
                         "SAME_LOWER, VALID", ap);
    }
    /* the dilated kernel's extent, d * (k - 1) + 1 (both at most
     * MAX_ELEMENTS: no overflow) */
    ekh = w->dh * (w->kh - 1) + 1;
    ekw = w->dw * (w->kw - 1) + 1;
    if (out_size(ih, w->pt, w->pb, ekh, w->sh, 0, &w->oh) != 0 ||
        out_size(iw, w->pl, w->pr, ekw, w->sw, 0, &w->ow) != 0) {
        return node_fail(I, node, MEMEST_E_SHAPE,
                         "the %llux%llu window does not fit the padded "
                         "%llux%llu input", (unsigned long long)w->kh,
                         (unsigned long long)w->kw, (unsigned long long)ih,
                         (unsigned long long)iw);
    }
    w->ceil = 0;
    if (ceil_mode) {
        /* the layer says ceil=yes only where rounding up changes the size,
         * so that other pools read as they always have */
        out_size(ih, w->pt, w->pb, w->kh, w->sh, 1, &fh);
        out_size(iw, w->pl, w->pr, w->kw, w->sw, 1, &fw);
        if (fh != w->oh || fw != w->ow) {
            w->ceil = 1;
            w->oh = fh;
            w->ow = fw;
        }
    }
    return MEMEST_OK;
}

static void window_args(const struct window *w, char *buf, size_t cap)
{
    int n = snprintf(buf, cap, "k=%llux%llu s=%llux%llu p=%llu,%llu,%llu,%llu",
                     (unsigned long long)w->kh, (unsigned long long)w->kw,
                     (unsigned long long)w->sh, (unsigned long long)w->sw,
                     (unsigned long long)w->pt, (unsigned long long)w->pl,
                     (unsigned long long)w->pb, (unsigned long long)w->pr);
    size_t at = n > 0 ? (size_t)n : 0;
    if (at < cap && (w->dh != 1 || w->dw != 1)) {
        n = snprintf(buf + at, cap - at, " d=%llux%llu",
                     (unsigned long long)w->dh, (unsigned long long)w->dw);
        at += n > 0 ? (size_t)n : 0;
    }
    if (at < cap && w->ceil) {
        snprintf(buf + at, cap - at, " ceil=yes");
    }
}

int onnx_conv(struct imp *I, size_t node)
{
    const Onnx__NodeProto *n = I->g->node[node];
    const struct cval *W;
    const struct cval *B = NULL;
    size_t x = 0;
    int st;

    if ((st = get_act(I, node, 0, &x)) ||
        (st = get_const(I, node, 1, "weight", &W))) {
        return st;
    }
    if (in_name(n, 2)[0] != '\0' &&
        (st = get_const(I, node, 2, "bias", &B))) {
        return st;
    }
    return conv_emit(I, node, x, W, B, NULL, NULL);
}

int conv_emit(struct imp *I, size_t node, size_t x, const struct cval *W,
              const struct cval *B, float *w_owned, float *b_owned)
{
    const Onnx__NodeProto *n = I->g->node[node];
    struct window w;
    int64_t group;
    size_t l = 0;
    uint64_t dim[4];
    uint64_t wdim[4];
    char win[120];
    int st;

    if ((st = need_rank(I, node, &I->v[x], 4,
                        "NxCxL (1-D) or NxCxHxW (2-D convolution)")) ||
        (st = attr_int(I, node, "group", 1, &group))) {
        goto fail;
    }
    if (I->v[x].sig) {
        /* a 1-D convolution's out x in/group x k weight is the
         * out x in/group x 1 x k one of the same data */
        if (W->rank != 3) {
            st = node_fail(I, node, MEMEST_E_SHAPE,
                           "the weight has rank %u; a 1-D convolution "
                           "needs 3 (out, in/group, k)", W->rank);
            goto fail;
        }
        wdim[0] = W->dim[0];
        wdim[1] = W->dim[1];
        wdim[2] = 1;
        wdim[3] = W->dim[2];
    } else if (W->rank != 4) {
        st = node_fail(I, node, MEMEST_E_SHAPE,
                       "the weight has rank %u; a 2-D convolution needs "
                       "4 (out, in/group, kh, kw)", W->rank);
        goto fail;
    } else {
        memcpy(wdim, W->dim, sizeof wdim);
    }
    if (group < 1 || (uint64_t)group > I->v[x].dim[1] ||
        I->v[x].dim[1] % (uint64_t)group != 0 ||
        wdim[1] * (uint64_t)group != I->v[x].dim[1] ||
        wdim[0] % (uint64_t)group != 0) {
        st = node_fail(I, node, MEMEST_E_SHAPE,
                       "weight %llux%llux%llux%llu with group %lld does "
                       "not fit %llu input channels",
                       (unsigned long long)wdim[0],
                       (unsigned long long)wdim[1],
                       (unsigned long long)wdim[2],
                       (unsigned long long)wdim[3], (long long)group,
                       (unsigned long long)I->v[x].dim[1]);
        goto fail;
    }
    if (B != NULL && (B->count != wdim[0] || B->rank != 1)) {
        st = node_fail(I, node, MEMEST_E_SHAPE,
                       "the bias has %llu values for %llu output channels",
                       (unsigned long long)B->count,
                       (unsigned long long)wdim[0]);
        goto fail;
    }
    if ((st = read_window(I, node, &I->v[x], &wdim[2], &w)) ||
        (st = push_layer(I, node, "conv2d", n->name, "conv", &l))) {
        goto fail;
    }
    I->L[l].takes_act = 1;
    window_args(&w, win, sizeof win);
    snprintf(I->L[l].args, sizeof I->L[l].args, "%llu %s g=%lld bias=%s",
             (unsigned long long)wdim[0], win, (long long)group,
             B ? "yes" : "no");
    dim[0] = I->v[x].dim[0];
    dim[1] = wdim[0];
    dim[2] = w.oh;
    dim[3] = w.ow;
    if ((st = layer_inputs(I, l, &x, 1))) {
        goto fail;
    }
    /* push_weight() owns (and on error frees) what it is handed */
    st = push_weight(I, l, "weight", 4, wdim, W->f, w_owned);
    w_owned = NULL;
    if (st != MEMEST_OK) {
        goto fail;
    }
    if (B != NULL) {
        st = push_weight(I, l, "bias", 1, wdim, B->f, b_owned);
        b_owned = NULL;
        if (st != MEMEST_OK) {
            goto fail;
        }
    }
    free(b_owned);
    return set_output(I, node, 0, l, 4, dim);
fail:
    free(w_owned);
    free(b_owned);
    return st;
}

static int onnx_pool(struct imp *I, size_t node, int is_max)
{
    const Onnx__NodeProto *n = I->g->node[node];
    struct window w;
    int64_t cip = 0;
    int64_t order = 0;
    uint64_t dim[4];
    char win[120];
    size_t x = 0;
    size_t l = 0;
    int st;

    if (is_max) {
        st = attr_int(I, node, "storage_order", 0, &order);
        if (st == MEMEST_OK && n->n_output > 1 &&
            str(n->output[1])[0] != '\0' &&
            I->v[value_of(I, n->output[1])].readers > 0) {
            return node_fail(I, node, MEMEST_E_PARSE,
                             "its Indices output is read, which is not "
                             "supported");
        }
    } else {
        st = attr_int(I, node, "count_include_pad", 0, &cip);
    }
    if (st || (st = get_act(I, node, 0, &x)) ||
        (st = need_rank(I, node, &I->v[x], 4,
                        "NxCxL (1-D) or NxCxHxW (2-D pooling)")) ||
        (st = read_window(I, node, &I->v[x], NULL, &w))) {
        return st;
    }
    (void)order; /* only the Indices output depends on it */
    if (I->v[x].has_pad) {
        /* the Pad folded in: its cells are zeros the divisor counts */
        cip = 1;
    }
    if ((st = push_layer(I, node, is_max ? "maxpool" : "avgpool", n->name,
                         "pool", &l))) {
        return st;
    }
    window_args(&w, win, sizeof win);
    if (is_max) {
        snprintf(I->L[l].args, sizeof I->L[l].args, "%s", win);
    } else {
        snprintf(I->L[l].args, sizeof I->L[l].args, "%s count_pad=%s", win,
                 cip ? "yes" : "no");
    }
    dim[0] = I->v[x].dim[0];
    dim[1] = I->v[x].dim[1];
    dim[2] = w.oh;
    dim[3] = w.ow;
    if ((st = layer_inputs(I, l, &x, 1))) {
        return st;
    }
    return set_output(I, node, 0, l, 4, dim);
}

int onnx_maxpool(struct imp *I, size_t node)
{
    return onnx_pool(I, node, 1);
}

int onnx_avgpool(struct imp *I, size_t node)
{
    return onnx_pool(I, node, 0);
}
