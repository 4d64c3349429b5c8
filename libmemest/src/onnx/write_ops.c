/*
 * ONNX export: THE table of how each memest kind becomes ONNX nodes (one
 * row per kind, opset 13), and of how each activation does. Each form is
 * the one the importer (ops.c) reads back as the same layer: Gemm with
 * transB=1 for dense (PyTorch's [out][in] weight as it is), Conv with the
 * pads (top, left, bottom, right) in ONNX's order (begins, then ends),
 * Clip with its bounds as inputs, x * Sigmoid(x) for SiLU and
 * x * HardSigmoid(x) for hard-swish (opset 13 has no HardSwish),
 * PyTorch's erf decomposition for exact GELU, and ShuffleNet's Reshape,
 * Transpose, Reshape for a channel shuffle.
 */
#include "onnx/write.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#define NOMEM(w) wr_fail((w), MEMEST_E_NOMEM, "out of memory")

/* One node op(in...) -> out, named. */
static int node1(struct wr *w, const char *op, const char *name, size_t nin,
                 const char *const *in, const char *out,
                 Onnx__NodeProto **made)
{
    Onnx__NodeProto *n = wr_node(w, op, name, nin, in, 1, &out);
    if (n == NULL) {
        return NOMEM(w);
    }
    if (made != NULL) {
        *made = n;
    }
    return MEMEST_OK;
}

/* "<layer>/<what>" */
static const char *aux(struct wr *w, const struct memest_layer *L,
                       const char *what)
{
    return wr_name(w, "%s/%s", L->name, what);
}

static int int64_list(struct wr *w, const struct memest_layer *L,
                      const char *what, size_t n, const int64_t *v,
                      const char **out)
{
    uint64_t dim[1] = {n};
    const char *name = aux(w, L, what);
    if (name == NULL) {
        return NOMEM(w);
    }
    *out = name;
    return wr_init_i64(w, name, 1, dim, v);
}

/* ---- Activations -------------------------------------------------------- */

/* x op c, named */
static int with_scalar(struct wr *w, const char *op, const char *name,
                       const char *x, const char *cname, float c, int left,
                       const char *out)
{
    const char *cn = NULL;
    const char *in[2];
    int st = wr_scalar(w, cname, c, &cn);
    if (st != MEMEST_OK) {
        return st;
    }
    in[left ? 1 : 0] = x;
    in[left ? 0 : 1] = cn;
    return node1(w, op, name, 2, in, out, NULL);
}

int wr_act(struct wr *w, const struct memest_layer *L, enum memest_act act,
           const char *x, const char *out, const char *name)
{
    Onnx__NodeProto *n = NULL;
    const char *in[3] = {x, "", ""};
    const char *t[8];
    int st;

    switch (act) {
    case MEMEST_ACT_NONE:
        return wr_fail(w, MEMEST_E_PARSE, "no activation to write");
    case MEMEST_ACT_RELU:
        return node1(w, "Relu", name, 1, in, out, NULL);
    case MEMEST_ACT_SIGMOID:
        return node1(w, "Sigmoid", name, 1, in, out, NULL);
    case MEMEST_ACT_TANH:
        return node1(w, "Tanh", name, 1, in, out, NULL);
    case MEMEST_ACT_ERF:
        return node1(w, "Erf", name, 1, in, out, NULL);
    case MEMEST_ACT_SOFTPLUS:
        return node1(w, "Softplus", name, 1, in, out, NULL);
    case MEMEST_ACT_SOFTMAX:
    case MEMEST_ACT_LOGSOFTMAX:
        /* the per-sample axis L->axis, after the batch's (opset 13's
         * Softmax is per axis): 1 for a vector's features or the channels
         * of CxHxW */
        if ((st = node1(w, act == MEMEST_ACT_SOFTMAX ? "Softmax"
                                                     : "LogSoftmax",
                        name, 1, in, out, &n))) {
            return st;
        }
        return wr_attr_int(w, n, "axis", (int64_t)L->axis + 1);
    case MEMEST_ACT_RELU6:
    case MEMEST_ACT_CLIP: {
        const double lo = act == MEMEST_ACT_RELU6 ? 0.0 : L->act_alpha;
        const double hi = act == MEMEST_ACT_RELU6 ? 6.0 : L->act_beta;
        /* an infinite bound is an omitted input */
        if (isfinite(lo) &&
            (st = wr_scalar(w, act == MEMEST_ACT_RELU6 ? "clip_min" : "min",
                            (float)lo, &in[1]))) {
            return st;
        }
        if (isfinite(hi) &&
            (st = wr_scalar(w, act == MEMEST_ACT_RELU6 ? "clip_max" : "max",
                            (float)hi, &in[2]))) {
            return st;
        }
        return node1(w, "Clip", name, in[2][0] ? 3 : in[1][0] ? 2 : 1, in,
                     out, NULL);
    }
    case MEMEST_ACT_HARDSIGMOID:
        if ((st = node1(w, "HardSigmoid", name, 1, in, out, &n)) ||
            (st = wr_attr_float(w, n, "alpha", (float)L->act_alpha))) {
            return st;
        }
        return wr_attr_float(w, n, "beta", (float)L->act_beta);
    case MEMEST_ACT_LEAKYRELU:
    case MEMEST_ACT_ELU:
        if ((st = node1(w, act == MEMEST_ACT_ELU ? "Elu" : "LeakyRelu", name,
                        1, in, out, &n))) {
            return st;
        }
        return wr_attr_float(w, n, "alpha", (float)L->act_alpha);
    case MEMEST_ACT_SILU:
    case MEMEST_ACT_HARDSWISH:
        /* x * Sigmoid(x), x * HardSigmoid(x; 1/6, 1/2): PyTorch's export
         * of SiLU and of Hardswish before opset 14 */
        if ((t[0] = wr_name(w, "%s/gate", name)) == NULL) {
            return NOMEM(w);
        }
        if (act == MEMEST_ACT_SILU) {
            st = node1(w, "Sigmoid", wr_name(w, "%s/Sigmoid", name), 1, in,
                       t[0], NULL);
        } else {
            st = node1(w, "HardSigmoid", wr_name(w, "%s/HardSigmoid", name),
                       1, in, t[0], &n);
            if (st == MEMEST_OK) {
                st = wr_attr_float(w, n, "alpha", 1.0f / 6.0f);
            }
            if (st == MEMEST_OK) {
                st = wr_attr_float(w, n, "beta", 0.5f);
            }
        }
        if (st != MEMEST_OK) {
            return st;
        }
        in[1] = t[0];
        return node1(w, "Mul", name, 2, in, out, NULL);
    case MEMEST_ACT_GELU_ERF:
        /* PyTorch's nn.GELU(): x * 0.5 * (1 + erf(x / sqrt 2)), the
         * pattern the importer reads back as one gelu_erf */
        for (int k = 0; k < 4; k++) {
            static const char *const sfx[4] = {"div", "erf", "add", "mul"};
            if ((t[k] = wr_name(w, "%s/%s", name, sfx[k])) == NULL) {
                return NOMEM(w);
            }
        }
        if ((st = with_scalar(w, "Div", t[0], x, "sqrt2",
                              1.41421356237309504880f, 0, t[0])) ||
            (st = node1(w, "Erf", t[1], 1, &t[0], t[1], NULL)) ||
            (st = with_scalar(w, "Add", t[2], t[1], "one", 1.0f, 0, t[2]))) {
            return st;
        }
        in[1] = t[2];
        if ((st = node1(w, "Mul", t[3], 2, in, t[3], NULL))) {
            return st;
        }
        return with_scalar(w, "Mul", name, t[3], "half", 0.5f, 0, out);
    case MEMEST_ACT_GELU: {
        /* the tanh form: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))),
         * in opset 13's operators (it imports back as its parts) */
        static const char *const sfx[8] = {"x2", "x3", "cx3", "inner",
                                           "scaled", "tanh", "onep", "xt"};
        const char *a[2];
        for (int k = 0; k < 8; k++) {
            if ((t[k] = wr_name(w, "%s/%s", name, sfx[k])) == NULL) {
                return NOMEM(w);
            }
        }
        a[0] = x;
        a[1] = x;
        if ((st = node1(w, "Mul", t[0], 2, a, t[0], NULL))) {
            return st;
        }
        a[0] = t[0];
        if ((st = node1(w, "Mul", t[1], 2, a, t[1], NULL)) ||
            (st = with_scalar(w, "Mul", t[2], t[1], "c", 0.044715f, 0,
                              t[2]))) {
            return st;
        }
        a[0] = x;
        a[1] = t[2];
        if ((st = node1(w, "Add", t[3], 2, a, t[3], NULL)) ||
            (st = with_scalar(w, "Mul", t[4], t[3], "k",
                              0.79788456080286535588f, 0, t[4])) ||
            (st = node1(w, "Tanh", t[5], 1, &t[4], t[5], NULL)) ||
            (st = with_scalar(w, "Add", t[6], t[5], "one", 1.0f, 0, t[6]))) {
            return st;
        }
        a[1] = t[6];
        if ((st = node1(w, "Mul", t[7], 2, a, t[7], NULL))) {
            return st;
        }
        return with_scalar(w, "Mul", name, t[7], "half", 0.5f, 0, out);
    }
    }
    return wr_fail(w, MEMEST_E_PARSE, "activation %d has no ONNX form",
                   (int)act);
}

/* ---- Kinds -------------------------------------------------------------- */

static int w_dense(struct wr *w, const struct memest_layer *L,
                   const char *const *in, const char *out, const char *name)
{
    uint64_t dim[MEMEST_TENSOR_MAX_RANK];
    unsigned rank = memest_layer_weight_shape(L, dim);
    const char *a[3] = {in[0], NULL, NULL};
    Onnx__NodeProto *n = NULL;
    int st;

    if (L->in_shape.rank != 1) {
        /* Gemm takes a matrix: a Linear over a sequence's last axis would
         * be a MatMul of N x T x D; refused rather than written wrong */
        return wr_fail(w, MEMEST_E_SHAPE,
                       "a dense layer over a sequence (T x D) has no ONNX "
                       "form in the writer yet");
    }
    /* PyTorch's [out][in] weight is Gemm's B with transB=1, unchanged */
    if ((st = wr_weight(w, L, "weight", rank, dim, L->weight, &a[1])) ||
        (L->bias_count && (st = wr_bias(w, L, L->bias, &a[2]))) ||
        (st = node1(w, "Gemm", name, L->bias_count ? 3 : 2, a, out, &n))) {
        return st;
    }
    return wr_attr_int(w, n, "transB", 1);
}

/* kernel_shape, strides, pads (begins then ends) and, for convolutions,
 * dilations */
static int window(struct wr *w, Onnx__NodeProto *n,
                  const struct memest_layer *L, int dilations)
{
    const int64_t k[2] = {(int64_t)L->kernel_h, (int64_t)L->kernel_w};
    const int64_t s[2] = {(int64_t)L->stride_h, (int64_t)L->stride_w};
    const int64_t p[4] = {(int64_t)L->pad_top, (int64_t)L->pad_left,
                          (int64_t)L->pad_bottom, (int64_t)L->pad_right};
    const int64_t d[2] = {(int64_t)(L->dilation_h ? L->dilation_h : 1),
                          (int64_t)(L->dilation_w ? L->dilation_w : 1)};
    int st;
    if ((st = wr_attr_ints(w, n, "kernel_shape", 2, k)) ||
        (st = wr_attr_ints(w, n, "strides", 2, s)) ||
        (st = wr_attr_ints(w, n, "pads", 4, p))) {
        return st;
    }
    return dilations ? wr_attr_ints(w, n, "dilations", 2, d) : MEMEST_OK;
}

static int conv_like(struct wr *w, const struct memest_layer *L,
                     const char *const *in, const char *out,
                     const char *name, const char *op)
{
    uint64_t dim[MEMEST_TENSOR_MAX_RANK];
    unsigned rank = memest_layer_weight_shape(L, dim);
    const char *a[3] = {in[0], NULL, NULL};
    Onnx__NodeProto *n = NULL;
    int st;

    if ((st = wr_weight(w, L, "weight", rank, dim, L->weight, &a[1])) ||
        (L->bias_count && (st = wr_bias(w, L, L->bias, &a[2]))) ||
        (st = node1(w, op, name, L->bias_count ? 3 : 2, a, out, &n)) ||
        (st = window(w, n, L, 1)) ||
        (st = wr_attr_int(w, n, "group", (int64_t)L->groups))) {
        return st;
    }
    if (L->kind == MEMEST_KIND_CONV_TRANSPOSE &&
        (L->out_pad_h != 0 || L->out_pad_w != 0)) {
        const int64_t op2[2] = {(int64_t)L->out_pad_h,
                                (int64_t)L->out_pad_w};
        return wr_attr_ints(w, n, "output_padding", 2, op2);
    }
    return MEMEST_OK;
}

static int w_conv2d(struct wr *w, const struct memest_layer *L,
                    const char *const *in, const char *out, const char *name)
{
    return conv_like(w, L, in, out, name, "Conv");
}

static int w_convtranspose(struct wr *w, const struct memest_layer *L,
                           const char *const *in, const char *out,
                           const char *name)
{
    return conv_like(w, L, in, out, name, "ConvTranspose");
}

static int pool(struct wr *w, const struct memest_layer *L,
                const char *const *in, const char *out, const char *name,
                int is_max)
{
    Onnx__NodeProto *n = NULL;
    int st;
    if ((st = node1(w, is_max ? "MaxPool" : "AveragePool", name, 1, in, out,
                    &n)) ||
        (st = window(w, n, L, 0))) {
        return st;
    }
    if (L->ceil_mode && (st = wr_attr_int(w, n, "ceil_mode", 1))) {
        return st;
    }
    if (!is_max) {
        return wr_attr_int(w, n, "count_include_pad",
                           L->count_include_pad ? 1 : 0);
    }
    return MEMEST_OK;
}

static int w_maxpool(struct wr *w, const struct memest_layer *L,
                     const char *const *in, const char *out,
                     const char *name)
{
    return pool(w, L, in, out, name, 1);
}

static int w_avgpool(struct wr *w, const struct memest_layer *L,
                     const char *const *in, const char *out,
                     const char *name)
{
    return pool(w, L, in, out, name, 0);
}

static int w_gap(struct wr *w, const struct memest_layer *L,
                 const char *const *in, const char *out, const char *name)
{
    (void)L;
    return node1(w, "GlobalAveragePool", name, 1, in, out, NULL);
}

static int w_flatten(struct wr *w, const struct memest_layer *L,
                     const char *const *in, const char *out,
                     const char *name)
{
    Onnx__NodeProto *n = NULL;
    int st;
    (void)L;
    if ((st = node1(w, "Flatten", name, 1, in, out, &n))) {
        return st;
    }
    return wr_attr_int(w, n, "axis", 1);
}

static int w_identity(struct wr *w, const struct memest_layer *L,
                      const char *const *in, const char *out,
                      const char *name)
{
    (void)L;
    return node1(w, "Identity", name, 1, in, out, NULL);
}

static int w_activation(struct wr *w, const struct memest_layer *L,
                        const char *const *in, const char *out,
                        const char *name)
{
    return wr_act(w, L, L->act, in[0], out, name);
}

/* add, sub, mul, div: two tensors of the same rank (numpy broadcasting
 * of the per-sample shapes is ONNX's once both carry the batch first),
 * or one tensor and the layer's constant; more than two inputs (an add
 * of 2+) chain, left to right */
static int binary(struct wr *w, const struct memest_layer *L,
                  const char *const *in, const char *out, const char *name,
                  const char *op)
{
    if (L->scalar_side != MEMEST_SCALAR_NONE) {
        if ((double)(float)L->scalar != L->scalar) {
            return wr_fail(w, MEMEST_E_PARSE,
                           "the constant %.17g is not a float32, which "
                           "ONNX's float tensors hold", L->scalar);
        }
        return with_scalar(w, op, name, in[0], "scalar", (float)L->scalar,
                           L->scalar_side == MEMEST_SCALAR_LEFT, out);
    }
    if (L->input_count == 2 && L->in_shape.rank != L->in_shape_b.rank) {
        return wr_fail(w, MEMEST_E_PARSE,
                       "its inputs have ranks %u and %u per sample; the "
                       "writer needs equal ranks (the batch leads both)",
                       L->in_shape.rank, L->in_shape_b.rank);
    }
    {
        const char *acc = in[0];
        for (size_t j = 1; j < L->input_count; j++) {
            const int last = j + 1 == L->input_count;
            const char *a[2] = {acc, in[j]};
            const char *o = last ? out : wr_name(w, "%s/sum%zu", L->name, j);
            const char *nn = last ? name : o;
            int st;
            if (o == NULL) {
                return NOMEM(w);
            }
            if ((st = node1(w, op, nn, 2, a, o, NULL))) {
                return st;
            }
            acc = o;
        }
    }
    return MEMEST_OK;
}

static int w_add(struct wr *w, const struct memest_layer *L,
                 const char *const *in, const char *out, const char *name)
{
    return binary(w, L, in, out, name, "Add");
}

static int w_sub(struct wr *w, const struct memest_layer *L,
                 const char *const *in, const char *out, const char *name)
{
    return binary(w, L, in, out, name, "Sub");
}

static int w_mul(struct wr *w, const struct memest_layer *L,
                 const char *const *in, const char *out, const char *name)
{
    return binary(w, L, in, out, name, "Mul");
}

static int w_div(struct wr *w, const struct memest_layer *L,
                 const char *const *in, const char *out, const char *name)
{
    return binary(w, L, in, out, name, "Div");
}

static int w_concat(struct wr *w, const struct memest_layer *L,
                    const char *const *in, const char *out,
                    const char *name)
{
    Onnx__NodeProto *n = wr_node(w, "Concat", name, L->input_count, in, 1,
                                 &out);
    if (n == NULL) {
        return NOMEM(w);
    }
    return wr_attr_int(w, n, "axis", (int64_t)L->concat_axis + 1);
}

/* A standalone batch norm: its weight is already the folded scale and
 * its bias the shift, so the node has mean 0, variance 1 and an epsilon
 * of FLT_MIN, which leaves sqrt(1 + eps) = 1 in float and in double:
 * the importer's fold gives the scale and shift back bit for bit. */
static int w_batchnorm(struct wr *w, const struct memest_layer *L,
                       const char *const *in, const char *out,
                       const char *name)
{
    uint64_t dim[1] = {L->weight_count};
    const char *a[5] = {in[0], NULL, NULL, NULL, NULL};
    float *zeros = wr_alloc(w, (size_t)L->weight_count * sizeof *zeros);
    float *ones = wr_alloc(w, (size_t)L->weight_count * sizeof *ones);
    Onnx__NodeProto *n = NULL;
    int st;

    if (zeros == NULL || ones == NULL || (a[3] = aux(w, L, "mean")) == NULL ||
        (a[4] = aux(w, L, "var")) == NULL) {
        return NOMEM(w);
    }
    for (uint64_t c = 0; c < L->weight_count; c++) {
        ones[c] = 1.0f;
    }
    if ((st = wr_weight(w, L, "weight", 1, dim, L->weight, &a[1])) ||
        (st = wr_weight(w, L, "bias", 1, dim, L->bias, &a[2])) ||
        (st = wr_init_f32(w, a[3], 1, dim, zeros)) ||
        (st = wr_init_f32(w, a[4], 1, dim, ones)) ||
        (st = node1(w, "BatchNormalization", name, 5, a, out, &n))) {
        return st;
    }
    return wr_attr_float(w, n, "epsilon", FLT_MIN);
}

/* [0 (the batch, copied), per-sample dims] */
static int w_reshape(struct wr *w, const struct memest_layer *L,
                     const char *const *in, const char *out,
                     const char *name)
{
    int64_t shape[4] = {0, 0, 0, 0};
    const char *a[2] = {in[0], NULL};
    int st;
    for (unsigned d = 0; d < L->out_shape.rank; d++) {
        shape[d + 1] = (int64_t)L->out_shape.dim[d];
    }
    if ((st = int64_list(w, L, "shape", L->out_shape.rank + 1, shape,
                         &a[1]))) {
        return st;
    }
    return node1(w, "Reshape", name, 2, a, out, NULL);
}

static int w_slice(struct wr *w, const struct memest_layer *L,
                   const char *const *in, const char *out, const char *name)
{
    const int64_t b = (int64_t)L->slice_begin;
    const int64_t e = (int64_t)L->slice_end;
    const int64_t ax = (int64_t)L->slice_axis + 1;
    const char *a[4] = {in[0], NULL, NULL, NULL};
    int st;
    if ((st = int64_list(w, L, "starts", 1, &b, &a[1])) ||
        (st = int64_list(w, L, "ends", 1, &e, &a[2])) ||
        (st = int64_list(w, L, "axes", 1, &ax, &a[3]))) {
        return st;
    }
    return node1(w, "Slice", name, 4, a, out, NULL);
}

/* constant padding of H and W: pads [0, 0, top, left, 0, 0, bottom,
 * right] */
static int w_pad(struct wr *w, const struct memest_layer *L,
                 const char *const *in, const char *out, const char *name)
{
    const int64_t p[8] = {0, 0, (int64_t)L->pad_top, (int64_t)L->pad_left,
                          0, 0, (int64_t)L->pad_bottom,
                          (int64_t)L->pad_right};
    const char *a[3] = {in[0], NULL, NULL};
    Onnx__NodeProto *n = NULL;
    int st;
    if ((double)(float)L->pad_value != L->pad_value) {
        return wr_fail(w, MEMEST_E_PARSE,
                       "the value %.17g is not a float32, which ONNX's "
                       "float tensors hold", L->pad_value);
    }
    if ((st = int64_list(w, L, "pads", 8, p, &a[1])) ||
        (st = wr_scalar(w, "value", (float)L->pad_value, &a[2])) ||
        (st = node1(w, "Pad", name, 3, a, out, &n))) {
        return st;
    }
    return wr_attr_str(w, n, "mode", "constant");
}

/* ShuffleNet's channel shuffle with g groups: Reshape to [N, g, C/g, H,
 * W], Transpose (0, 2, 1, 3, 4), Reshape back to [N, C, H, W]; the layer
 * is named at the first node, as PyTorch's export reads */
static int w_shuffle(struct wr *w, const struct memest_layer *L,
                     const char *const *in, const char *out,
                     const char *name)
{
    const uint64_t c = L->in_shape.dim[0], g = L->groups;
    const int64_t s5[5] = {0, (int64_t)g, (int64_t)(c / g),
                           (int64_t)L->in_shape.dim[1],
                           (int64_t)L->in_shape.dim[2]};
    const int64_t s4[4] = {0, (int64_t)c, (int64_t)L->in_shape.dim[1],
                           (int64_t)L->in_shape.dim[2]};
    const int64_t perm[5] = {0, 2, 1, 3, 4};
    const char *a[2] = {in[0], NULL};
    const char *t1 = aux(w, L, "grouped");
    const char *t2 = aux(w, L, "transposed");
    Onnx__NodeProto *n = NULL;
    int st;

    if (t1 == NULL || t2 == NULL) {
        return NOMEM(w);
    }
    if ((st = int64_list(w, L, "shape5", 5, s5, &a[1])) ||
        (st = node1(w, "Reshape", name, 2, a, t1, NULL)) ||
        (st = node1(w, "Transpose", aux(w, L, "Transpose"), 1, &t1, t2,
                    &n)) ||
        (st = wr_attr_ints(w, n, "perm", 5, perm))) {
        return st;
    }
    a[0] = t2;
    if ((st = int64_list(w, L, "shape4", 4, s4, &a[1]))) {
        return st;
    }
    return node1(w, "Reshape", aux(w, L, "Reshape"), 2, a, out, NULL);
}

static int w_resize(struct wr *w, const struct memest_layer *L,
                    const char *const *in, const char *out,
                    const char *name)
{
    static const char *const coord[4] = {"half_pixel", "pytorch_half_pixel",
                                         "align_corners", "asymmetric"};
    static const char *const nearest[4] = {"round_prefer_floor",
                                           "round_prefer_ceil", "floor",
                                           "ceil"};
    const char *a[4] = {in[0], "", NULL, ""};
    Onnx__NodeProto *n = NULL;
    uint64_t four[1] = {4};
    int st;

    if (L->resize_coord < 0 || L->resize_coord > 3 ||
        L->resize_nearest < 0 || L->resize_nearest > 3 ||
        L->resize_mode < 0 || L->resize_mode > 1) {
        return wr_fail(w, MEMEST_E_INVALID, "resize modes %d, %d, %d",
                       L->resize_mode, L->resize_coord, L->resize_nearest);
    }
    if (L->scale_h > 0.0 && L->scale_w > 0.0 &&
        (double)(float)L->scale_h == L->scale_h &&
        (double)(float)L->scale_w == L->scale_w) {
        const float sc[4] = {1.0f, 1.0f, (float)L->scale_h,
                             (float)L->scale_w};
        const char *sn = aux(w, L, "scales");
        if (sn == NULL) {
            return NOMEM(w);
        }
        a[2] = sn;
        if ((st = wr_init_f32(w, sn, 1, four, sc))) {
            return st;
        }
    } else {
        return wr_fail(w, MEMEST_E_PARSE,
                       "only a resize by float32 scale factors is written "
                       "(this one has %.17g x %.17g)", L->scale_h,
                       L->scale_w);
    }
    if ((st = node1(w, "Resize", name, 3, a, out, &n)) ||
        (st = wr_attr_str(w, n, "mode",
                          L->resize_mode ? "linear" : "nearest")) ||
        (st = wr_attr_str(w, n, "coordinate_transformation_mode",
                          coord[L->resize_coord]))) {
        return st;
    }
    if (!L->resize_mode) {
        return wr_attr_str(w, n, "nearest_mode", nearest[L->resize_nearest]);
    }
    return MEMEST_OK;
}

/* THE table: one row per kind. */
static const struct wr_kind kinds[MEMEST_KIND_COUNT] = {
    [MEMEST_KIND_INPUT] = {NULL, 0, 0}, /* not a layer */
    [MEMEST_KIND_DENSE] = {w_dense, 1, 0},
    [MEMEST_KIND_CONV2D] = {w_conv2d, 1, 0},
    [MEMEST_KIND_MAXPOOL] = {w_maxpool, 0, 0},
    [MEMEST_KIND_AVGPOOL] = {w_avgpool, 0, 0},
    [MEMEST_KIND_FLATTEN] = {w_flatten, 0, 0},
    [MEMEST_KIND_ACTIVATION] = {w_activation, 0, 0},
    [MEMEST_KIND_GLOBALAVGPOOL] = {w_gap, 0, 0},
    [MEMEST_KIND_ADD] = {w_add, 1, 0},
    [MEMEST_KIND_CONCAT] = {w_concat, 0, 0},
    [MEMEST_KIND_BATCHNORM] = {w_batchnorm, 1, 0},
    [MEMEST_KIND_IDENTITY] = {w_identity, 0, 0},
    [MEMEST_KIND_DROPOUT] = {NULL, 0, 1},
    [MEMEST_KIND_SUB] = {w_sub, 1, 0},
    [MEMEST_KIND_MUL] = {w_mul, 1, 0},
    [MEMEST_KIND_DIV] = {w_div, 1, 0},
    [MEMEST_KIND_CONV_TRANSPOSE] = {w_convtranspose, 1, 0},
    [MEMEST_KIND_RESIZE] = {w_resize, 0, 0},
    [MEMEST_KIND_PAD] = {w_pad, 0, 0},
    [MEMEST_KIND_SHUFFLE] = {w_shuffle, 0, 0},
    [MEMEST_KIND_SLICE] = {w_slice, 0, 0},
    [MEMEST_KIND_RESHAPE] = {w_reshape, 0, 0},
};

const struct wr_kind *wr_kind_of(enum memest_kind kind)
{
    if ((unsigned)kind >= MEMEST_KIND_COUNT) {
        return NULL;
    }
    return &kinds[kind];
}
