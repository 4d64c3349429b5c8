/*
 * ONNX import: ConvTranspose (a convtranspose layer) and Resize (opset 10
 * and later) and Upsample (opset 7 to 9), which become a resize layer.
 */
#include "onnx/onnx_internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

int onnx_conv_transpose(struct imp *I, size_t node)
{
    const Onnx__NodeProto *n = I->g->node[node];
    const struct cval *W;
    const struct cval *B = NULL;
    int64_t group;
    int64_t ks[4], st_[4], pads[4], dil[4], opad[4], oshape[4];
    size_t nks, nst, npads, ndil, nopad, noshape;
    uint64_t s[2] = {1, 1}, d[2] = {1, 1}, op[2] = {0, 0}, p[4] = {0};
    uint64_t dim[4];
    char apbuf[32];
    const char *ap = attr_str(n, "auto_pad", "NOTSET", apbuf, sizeof apbuf);
    size_t x = 0;
    size_t l = 0;
    int st;

    if ((st = get_act(I, node, 0, &x)) ||
        (st = need_rank(I, node, &I->v[x], 4,
                        "NxCxHxW (2-D transposed convolution)")) ||
        (st = get_const(I, node, 1, "weight", &W)) ||
        (st = attr_int(I, node, "group", 1, &group)) ||
        (st = attr_ints(I, node, "kernel_shape", 2, ks, &nks)) ||
        (st = attr_ints(I, node, "strides", 2, st_, &nst)) ||
        (st = attr_ints(I, node, "pads", 4, pads, &npads)) ||
        (st = attr_ints(I, node, "dilations", 2, dil, &ndil)) ||
        (st = attr_ints(I, node, "output_padding", 2, opad, &nopad)) ||
        (st = attr_ints(I, node, "output_shape", 0, oshape, &noshape))) {
        return st;
    }
    if (in_name(n, 2)[0] != '\0' &&
        (st = get_const(I, node, 2, "bias", &B))) {
        return st;
    }
    /* output_shape asks the importer to find the padding; PyTorch never
     * exports it (it writes pads and output_padding) */
    if (noshape != 0) {
        return node_fail(I, node, MEMEST_E_PARSE,
                         "attribute 'output_shape' is not supported; give "
                         "pads and output_padding");
    }
    if (strcmp(ap, "NOTSET") != 0 && strcmp(ap, "VALID") != 0) {
        return node_fail(I, node, MEMEST_E_PARSE,
                         "auto_pad '%s' is not supported (NOTSET or VALID)",
                         ap);
    }
    if (W->rank != 4) {
        return node_fail(I, node, MEMEST_E_SHAPE,
                         "the weight has rank %u; a 2-D transposed "
                         "convolution needs 4 (in, out/group, kh, kw)",
                         W->rank);
    }
    if (group < 1 || W->dim[0] != I->v[x].dim[1] ||
        I->v[x].dim[1] % (uint64_t)group != 0) {
        return node_fail(I, node, MEMEST_E_SHAPE,
                         "weight %llux%llux%llux%llu with group %lld does "
                         "not fit %llu input channels",
                         (unsigned long long)W->dim[0],
                         (unsigned long long)W->dim[1],
                         (unsigned long long)W->dim[2],
                         (unsigned long long)W->dim[3], (long long)group,
                         (unsigned long long)I->v[x].dim[1]);
    }
    if (B != NULL && (B->rank != 1 || B->count != W->dim[1] * (uint64_t)group)) {
        return node_fail(I, node, MEMEST_E_SHAPE,
                         "the bias has %llu values for %llu output channels",
                         (unsigned long long)B->count,
                         (unsigned long long)(W->dim[1] * (uint64_t)group));
    }
    if (nks == 2 && ((uint64_t)ks[0] != W->dim[2] ||
                     (uint64_t)ks[1] != W->dim[3])) {
        return node_fail(I, node, MEMEST_E_SHAPE,
                         "kernel_shape %lldx%lld disagrees with the "
                         "weights' %llux%llu", (long long)ks[0],
                         (long long)ks[1], (unsigned long long)W->dim[2],
                         (unsigned long long)W->dim[3]);
    }
    for (int i = 0; i < 2; i++) {
        if ((nst && (st_[i] <= 0 || (uint64_t)st_[i] > MAX_ELEMENTS)) ||
            (ndil && (dil[i] <= 0 || (uint64_t)dil[i] > MAX_ELEMENTS))) {
            return node_fail(I, node, MEMEST_E_RANGE,
                             "attribute '%s' must be positive",
                             nst && st_[i] <= 0 ? "strides" : "dilations");
        }
        if (nopad && (opad[i] < 0 || (uint64_t)opad[i] > MAX_ELEMENTS)) {
            return node_fail(I, node, MEMEST_E_RANGE,
                             "attribute 'output_padding' must be 0 or more");
        }
        s[i] = nst ? (uint64_t)st_[i] : 1;
        d[i] = ndil ? (uint64_t)dil[i] : 1;
        op[i] = nopad ? (uint64_t)opad[i] : 0;
    }
    if (strcmp(ap, "NOTSET") == 0 && npads == 4) {
        for (int i = 0; i < 4; i++) {
            if (pads[i] < 0 || (uint64_t)pads[i] > MAX_ELEMENTS) {
                return node_fail(I, node, MEMEST_E_RANGE,
                                 "attribute 'pads' must be 0 to %llu",
                                 (unsigned long long)MAX_ELEMENTS);
            }
            p[i] = (uint64_t)pads[i];
        }
    }
    for (int i = 0; i < 2; i++) {
        if (op[i] >= s[i] && op[i] >= d[i]) {
            return node_fail(I, node, MEMEST_E_RANGE,
                             "attribute 'output_padding' %llu must be "
                             "smaller than the stride or the dilation",
                             (unsigned long long)op[i]);
        }
    }
    dim[0] = I->v[x].dim[0];
    dim[1] = W->dim[1] * (uint64_t)group;
    for (int i = 0; i < 2; i++) {
        /* (in - 1) * s - pads + d * (k - 1) + op + 1, sizes bounded by
         * MAX_ELEMENTS so that nothing here overflows */
        const uint64_t full = (I->v[x].dim[2 + i] - 1) * s[i] +
                              d[i] * (W->dim[2 + i] - 1) + op[i] + 1;
        const uint64_t crop = p[i] + p[i + 2];
        if (crop >= full) {
            return node_fail(I, node, MEMEST_E_SHAPE,
                             "attribute 'pads' crops the whole output");
        }
        dim[2 + i] = full - crop;
    }
    if ((st = push_layer(I, node, "convtranspose", n->name, "deconv", &l))) {
        return st;
    }
    I->L[l].takes_act = 1;
    snprintf(I->L[l].args, sizeof I->L[l].args,
             "%llu k=%llux%llu s=%llux%llu p=%llu,%llu,%llu,%llu "
             "op=%llux%llu d=%llux%llu g=%lld bias=%s",
             (unsigned long long)dim[1], (unsigned long long)W->dim[2],
             (unsigned long long)W->dim[3], (unsigned long long)s[0],
             (unsigned long long)s[1], (unsigned long long)p[0],
             (unsigned long long)p[1], (unsigned long long)p[2],
             (unsigned long long)p[3], (unsigned long long)op[0],
             (unsigned long long)op[1], (unsigned long long)d[0],
             (unsigned long long)d[1], (long long)group, B ? "yes" : "no");
    if ((st = layer_inputs(I, l, &x, 1)) ||
        (st = push_weight(I, l, "weight", 4, W->dim, W->f, NULL)) ||
        (B && (st = push_weight(I, l, "bias", 1, &B->dim[0], B->f, NULL)))) {
        return st;
    }
    return set_output(I, node, 0, l, 4, dim);
}

/* The resize layer of node: x, its mode and coordinate words, and either
 * the scales (4 floats, N and C 1) or the sizes (4 integers, N and C
 * those of x). */
static int emit_resize(struct imp *I, size_t node, size_t x, int linear,
                       const char *coord, const char *nearest,
                       const struct cval *scales, const struct cval *sizes)
{
    const Onnx__NodeProto *n = I->g->node[node];
    const struct value *v = &I->v[x];
    uint64_t dim[4];
    char f[2][40];
    size_t l = 0;
    int st;

    dim[0] = v->dim[0];
    dim[1] = v->dim[1];
    if (scales != NULL) {
        if (scales->count != 4) {
            return node_fail(I, node, MEMEST_E_SHAPE,
                             "input 'scales' has %llu values; a 4-D input "
                             "needs 4", (unsigned long long)scales->count);
        }
        if (scales->f[0] != 1.0f || scales->f[1] != 1.0f) {
            return node_fail(I, node, MEMEST_E_PARSE,
                             "scales %g on N and %g on C are not supported "
                             "(only H and W resize)", (double)scales->f[0],
                             (double)scales->f[1]);
        }
        for (int i = 0; i < 2; i++) {
            const float sc = scales->f[2 + i];
            double o;
            if (!(sc > 0.0f) || !isfinite(sc)) {
                return node_fail(I, node, MEMEST_E_RANGE,
                                 "scale %g is not positive and finite",
                                 (double)sc);
            }
            /* ONNX: output = floor(input * scale) */
            o = floor((double)v->dim[2 + i] * (double)sc);
            if (o < 1.0 || o > (double)MAX_ELEMENTS) {
                return node_fail(I, node, MEMEST_E_SHAPE,
                                 "scale %g makes an axis of %llu %.0f long",
                                 (double)sc,
                                 (unsigned long long)v->dim[2 + i], o);
            }
            /* align_corners maps by (in - 1) / (in * scale - 1), the
             * unrounded length in ONNX's definition; the kernels (and
             * PyTorch) use the whole output length, the same only when
             * in * scale is whole */
            if (strcmp(coord, "align_corners") == 0 &&
                o != (double)v->dim[2 + i] * (double)sc) {
                return node_fail(I, node, MEMEST_E_PARSE,
                                 "coordinate_transformation_mode "
                                 "'align_corners' with scale %g on an axis "
                                 "of %llu (not a whole length) is not "
                                 "supported", (double)sc,
                                 (unsigned long long)v->dim[2 + i]);
            }
            dim[2 + i] = (uint64_t)o;
            snprintf(f[i], sizeof f[i], "%.9g", (double)sc);
        }
    } else {
        if (sizes->count != 4 || sizes->ints == NULL) {
            return node_fail(I, node, MEMEST_E_SHAPE,
                             "input 'sizes' must be 4 integers");
        }
        if ((uint64_t)sizes->ints[0] != v->dim[0] ||
            (uint64_t)sizes->ints[1] != v->dim[1]) {
            return node_fail(I, node, MEMEST_E_PARSE,
                             "sizes %lld on N and %lld on C are not "
                             "supported (only H and W resize)",
                             (long long)sizes->ints[0],
                             (long long)sizes->ints[1]);
        }
        for (int i = 0; i < 2; i++) {
            const int64_t o = sizes->ints[2 + i];
            if (o < 1 || (uint64_t)o > MAX_ELEMENTS) {
                return node_fail(I, node, MEMEST_E_RANGE,
                                 "size %lld is not 1 to %llu", (long long)o,
                                 (unsigned long long)MAX_ELEMENTS);
            }
            dim[2 + i] = (uint64_t)o;
            /* the text's ratio form: output o for input in, coordinates
             * mapped with o / in (ONNX's rule for sizes) */
            snprintf(f[i], sizeof f[i], "%lld/%llu", (long long)o,
                     (unsigned long long)v->dim[2 + i]);
        }
    }
    if ((st = push_layer(I, node, "resize", n->name, "resize", &l))) {
        return st;
    }
    snprintf(I->L[l].args, sizeof I->L[l].args, "scale=%sx%s mode=%s,%s%s%s",
             f[0], f[1], linear ? "bilinear" : "nearest", coord,
             linear ? "" : ",", linear ? "" : nearest);
    if ((st = layer_inputs(I, l, &x, 1))) {
        return st;
    }
    return set_output(I, node, 0, l, 4, dim);
}

/* mode: nearest or linear ("bilinear" in the text); anything else is
 * refused by name. */
static int read_mode(struct imp *I, size_t node, int *linear)
{
    char buf[32];
    const char *m = attr_str(I->g->node[node], "mode", "nearest", buf,
                             sizeof buf);
    if (strcmp(m, "nearest") == 0) {
        *linear = 0;
    } else if (strcmp(m, "linear") == 0 || strcmp(m, "bilinear") == 0) {
        *linear = 1;
    } else {
        return node_fail(I, node, MEMEST_E_PARSE,
                         "mode '%s' is not supported (nearest or linear)",
                         m);
    }
    return MEMEST_OK;
}

int onnx_resize(struct imp *I, size_t node)
{
    const Onnx__NodeProto *n = I->g->node[node];
    /* opset 10 has (X, scales); opset 11 and later (X, roi, scales,
     * sizes) */
    const size_t scales_slot = I->opset >= 11 ? 2 : 1;
    const struct cval *scales = NULL;
    const struct cval *sizes = NULL;
    char cbuf[40], nbuf[40];
    const char *coord = attr_str(n, "coordinate_transformation_mode",
                                 "half_pixel", cbuf, sizeof cbuf);
    const char *nearest = attr_str(n, "nearest_mode", "round_prefer_floor",
                                   nbuf, sizeof nbuf);
    int64_t exclude = 0;
    int linear = 0;
    size_t x = 0;
    int st;

    if ((st = get_act(I, node, 0, &x)) ||
        (st = need_rank(I, node, &I->v[x], 4, "NxCxHxW")) ||
        (st = read_mode(I, node, &linear)) ||
        (st = attr_int(I, node, "exclude_outside", 0, &exclude))) {
        return st;
    }
    if (I->opset < 11) {
        /* opset 10's Resize maps coordinates as asymmetric and rounds
         * nearest down, as Upsample does */
        coord = "asymmetric";
        nearest = "floor";
    }
    /* the kernels' coordinate transformations; the TensorFlow ones
     * (tf_half_pixel_for_nn, tf_crop_and_resize, which reads roi) are
     * refused, so roi is never read */
    if (strcmp(coord, "half_pixel") != 0 &&
        strcmp(coord, "pytorch_half_pixel") != 0 &&
        strcmp(coord, "align_corners") != 0 &&
        strcmp(coord, "asymmetric") != 0) {
        return node_fail(I, node, MEMEST_E_PARSE,
                         "coordinate_transformation_mode '%s' is not "
                         "supported (half_pixel, pytorch_half_pixel, "
                         "align_corners or asymmetric)", coord);
    }
    if (!linear && strcmp(nearest, "round_prefer_floor") != 0 &&
        strcmp(nearest, "round_prefer_ceil") != 0 &&
        strcmp(nearest, "floor") != 0 && strcmp(nearest, "ceil") != 0) {
        return node_fail(I, node, MEMEST_E_PARSE,
                         "nearest_mode '%s' is not supported", nearest);
    }
    if (exclude != 0) {
        return node_fail(I, node, MEMEST_E_PARSE,
                         "exclude_outside=%lld is not supported (only 0)",
                         (long long)exclude);
    }
    if (in_name(n, scales_slot)[0] != '\0' &&
        (st = get_const(I, node, scales_slot, "scales", &scales))) {
        return st;
    }
    /* PyTorch gives an empty scales tensor when it gives sizes */
    if (scales != NULL && scales->count == 0) {
        scales = NULL;
    }
    if (scales == NULL) {
        if (I->opset < 11 || in_name(n, 3)[0] == '\0') {
            return node_fail(I, node, MEMEST_E_PARSE,
                             "neither 'scales' nor 'sizes' is given");
        }
        if ((st = get_const(I, node, 3, "sizes", &sizes))) {
            return st;
        }
    }
    return emit_resize(I, node, x, linear, coord, nearest, scales, sizes);
}

int onnx_upsample(struct imp *I, size_t node)
{
    const struct cval *scales = NULL;
    int linear = 0;
    size_t x = 0;
    int st;

    if ((st = get_act(I, node, 0, &x)) ||
        (st = need_rank(I, node, &I->v[x], 4, "NxCxHxW")) ||
        (st = read_mode(I, node, &linear))) {
        return st;
    }
    if (in_name(I->g->node[node], 1)[0] == '\0') {
        return node_fail(I, node, MEMEST_E_PARSE,
                         "input 'scales' is missing (the opset 7 'scales' "
                         "attribute is not supported)");
    }
    if ((st = get_const(I, node, 1, "scales", &scales))) {
        return st;
    }
    /* Upsample maps coordinates as asymmetric, nearest rounding down */
    return emit_resize(I, node, x, linear, "asymmetric", "floor", scales,
                       NULL);
}
