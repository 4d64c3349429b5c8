/*
 * ONNX export: THE table of how each memest kind becomes ONNX nodes (one
 * row per kind, opset 13), and of how each activation does. Each form is
 * the one the importer (ops.c) reads back as the same layer: Gemm with
 * transB=1 for dense (PyTorch's [out][in] weight as it is), Conv with the
 * pads (top, left, bottom, right) in ONNX's order (begins, then ends),
 * Clip with its bounds as inputs, x * Sigmoid(x) for SiLU and
 * x * HardSigmoid(x) for hard-swish (opset 13 has no HardSwish),
 * PyTorch's erf decomposition for exact GELU, and ShuffleNet's Reshape,
 * Transpose, Reshape for a channel shuffle. The sequence kinds take the
 * forms PyTorch 1.13 exports at opset 13 (the importer's patterns):
 * LayerNorm decomposed (opset 13 has no LayerNormalization), a Linear over
 * T x D as MatMul + Add, the class token as Concat(Expand), the position
 * embedding as Add, attention as the hand-written MatMul/Softmax graph,
 * LSTM and GRU time-major inside Transposes.
 */
#include "onnx/write.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

/* the request that failed: libmemest records it (alloc_rec.h) */
#define NOMEM(w)                                                           \
    wr_fail((w), MEMEST_E_NOMEM, "out of memory: a node (%zu bytes)",      \
            memest_nomem_bytes())

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

/* ---- Sequence kinds: helpers ------------------------------------------- */

/* A node op(in...) -> out with an int list attribute. */
static int node_ints(struct wr *w, const char *op, const char *name,
                     size_t nin, const char *const *in, const char *out,
                     const char *attr, size_t n, const int64_t *v)
{
    Onnx__NodeProto *nd = NULL;
    int st = node1(w, op, name, nin, in, out, &nd);
    return st != MEMEST_OK ? st : wr_attr_ints(w, nd, attr, n, v);
}

/* A new tensor name "<layer>/<what>", or NULL when out of memory. */
static const char *tmp(struct wr *w, const struct memest_layer *L,
                       const char *what)
{
    return aux(w, L, what);
}

/* rows x cols of src transposed into a new float block (the writer's). */
static float *transposed(struct wr *w, const float *src, uint64_t rows,
                         uint64_t cols)
{
    float *t = wr_alloc(w, (size_t)(rows * cols) * sizeof *t);
    if (t == NULL) {
        return NULL;
    }
    for (uint64_t r = 0; r < rows; r++) {
        for (uint64_t c = 0; c < cols; c++) {
            t[c * rows + r] = src[r * cols + c];
        }
    }
    return t;
}

/* A float initializer "<layer>.<suffix>", unquantised whatever the
 * model's QDQ says (the sequence kinds keep float weights in QDQ). */
static int float_init(struct wr *w, const struct memest_layer *L,
                      const char *suffix, unsigned rank, const uint64_t *dim,
                      const float *data, const char **out)
{
    const char *n = wr_name(w, "%s.%s", L->name, suffix);
    if (n == NULL) {
        return NOMEM(w);
    }
    *out = n;
    return wr_init_f32(w, n, rank, dim, data);
}

/*
 * dense over the last axis of T x D: MatMul(x, W^T) (+ Add(bias)), as
 * PyTorch exports nn.Linear on a 3-D input; the importer reads the
 * MatMul by a constant as dense and folds the bias Add into it. W^T is a
 * transposed copy of PyTorch's [out][in] weight, so QDQ's per-channel
 * int8 (axis 0 of [out][in]) does not apply: refused in QDQ.
 */
static int dense_seq(struct wr *w, const struct memest_layer *L,
                     const char *const *in, const char *out, const char *name)
{
    const uint64_t D = L->in_shape.dim[L->in_shape.rank - 1], O = L->units;
    uint64_t dim[2] = {D, O};
    const char *a[2] = {in[0], NULL};
    const char *mm = L->bias_count ? tmp(w, L, "MatMul") : out;
    float *wt;
    int st;

    if (w->quant) {
        return wr_fail(w, MEMEST_E_PARSE,
                       "a dense layer over a sequence (T x D) is written in "
                       "float only, not as QDQ");
    }
    if (mm == NULL || (wt = transposed(w, L->weight, O, D)) == NULL) {
        return NOMEM(w);
    }
    if ((st = float_init(w, L, "weight_t", 2, dim, wt, &a[1])) ||
        (st = node1(w, "MatMul", name, 2, a, mm, NULL))) {
        return st;
    }
    if (L->bias_count == 0) {
        return MEMEST_OK;
    }
    a[0] = mm;
    if ((st = wr_bias(w, L, L->bias, &a[1]))) {
        return st;
    }
    return node1(w, "Add", aux(w, L, "Add"), 2, a, out, NULL);
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
        return dense_seq(w, L, in, out, name);
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

/* ---- Sequence kinds ----------------------------------------------------- */

/*
 * layernorm over the last axis: opset 13 has no LayerNormalization, so
 * the decomposition PyTorch exports (the importer's find_layernorm reads
 * it back as one layer): ReduceMean(-1) -> Sub -> Pow(2) -> ReduceMean(-1)
 * -> Add(eps) -> Sqrt -> Div -> Mul(gamma) (-> Add(beta)). A layernorm
 * over more axes than the last has no such form: refused.
 */
static int w_layernorm(struct wr *w, const struct memest_layer *L,
                       const char *const *in, const char *out,
                       const char *name)
{
    static const int64_t last[1] = {-1};
    uint64_t dim[1] = {L->units};
    const char *m = tmp(w, L, "mean"), *xc = tmp(w, L, "centred"),
               *sq = tmp(w, L, "squared"), *var = tmp(w, L, "var"),
               *ve = tmp(w, L, "var_eps"), *sd = tmp(w, L, "std"),
               *nrm = tmp(w, L, "normalised");
    const char *scaled = L->bias_count ? tmp(w, L, "scaled") : out;
    const char *a[2] = {in[0], NULL};
    const char *two = NULL, *eps = NULL;
    int st;

    if (L->axis + 1 != L->in_shape.rank) {
        return wr_fail(w, MEMEST_E_PARSE,
                       "a layernorm over the axes from %u of a rank %u "
                       "sample is not written (opset 13's decomposition "
                       "normalises the last axis)", L->axis,
                       L->in_shape.rank);
    }
    if (m == NULL || xc == NULL || sq == NULL || var == NULL || ve == NULL ||
        sd == NULL || nrm == NULL || scaled == NULL) {
        return NOMEM(w);
    }
    if ((st = node_ints(w, "ReduceMean", aux(w, L, "ReduceMean"), 1, a, m,
                        "axes", 1, last))) {
        return st;
    }
    a[1] = m;
    if ((st = node1(w, "Sub", aux(w, L, "Sub"), 2, a, xc, NULL)) ||
        (st = wr_scalar(w, "two", 2.0f, &two))) {
        return st;
    }
    a[0] = xc;
    a[1] = two;
    if ((st = node1(w, "Pow", aux(w, L, "Pow"), 2, a, sq, NULL)) ||
        (st = node_ints(w, "ReduceMean", aux(w, L, "ReduceMean_var"), 1, &sq,
                        var, "axes", 1, last)) ||
        (st = wr_scalar(w, "eps", (float)L->bn_epsilon, &eps))) {
        return st;
    }
    a[0] = var;
    a[1] = eps;
    if ((st = node1(w, "Add", aux(w, L, "Add_eps"), 2, a, ve, NULL)) ||
        (st = node1(w, "Sqrt", aux(w, L, "Sqrt"), 1, &ve, sd, NULL))) {
        return st;
    }
    a[0] = xc;
    a[1] = sd;
    if ((st = node1(w, "Div", aux(w, L, "Div"), 2, a, nrm, NULL))) {
        return st;
    }
    a[0] = nrm;
    if ((st = wr_weight(w, L, "weight", 1, dim, L->weight, &a[1])) ||
        (st = node1(w, "Mul", L->bias_count ? aux(w, L, "Mul") : name, 2, a,
                    scaled, NULL))) {
        return st;
    }
    if (L->bias_count == 0) {
        return MEMEST_OK;
    }
    a[0] = scaled;
    if ((st = wr_weight(w, L, "bias", 1, dim, L->bias, &a[1]))) {
        return st;
    }
    return node1(w, "Add", name, 2, a, out, NULL);
}

/*
 * clstoken: Concat(Expand(cls [1, 1, D], [N, 1, D]), x) along the steps,
 * as PyTorch exports torch.cat((cls.expand(N, -1, -1), x), 1). The
 * Expand's shape is computed from x's (Shape, Gather of the batch,
 * Unsqueeze, Concat with 1 and D), so the file runs at any batch.
 */
static int w_clstoken(struct wr *w, const struct memest_layer *L,
                      const char *const *in, const char *out,
                      const char *name)
{
    const uint64_t D = L->in_shape.dim[1];
    uint64_t dim[3] = {1, 1, D}, one[1] = {1};
    const int64_t zero0 = 0, one1 = 1, d1 = (int64_t)D, zero1[1] = {0};
    const char *shp = tmp(w, L, "x_shape"), *nb = tmp(w, L, "batch"),
               *nb1 = tmp(w, L, "batch_1d"), *es = tmp(w, L, "expand_shape"),
               *ex = tmp(w, L, "expanded"), *idx = tmp(w, L, "batch_index"),
               *ax = tmp(w, L, "unsqueeze_axes"), *c1 = tmp(w, L, "one"),
               *cd = tmp(w, L, "width");
    const char *a[3] = {NULL, NULL, NULL};
    Onnx__NodeProto *n = NULL;
    int st;

    if (shp == NULL || nb == NULL || nb1 == NULL || es == NULL ||
        ex == NULL || idx == NULL || ax == NULL || c1 == NULL || cd == NULL) {
        return NOMEM(w);
    }
    if ((st = wr_init_i64(w, idx, 0, NULL, &zero0)) ||
        (st = wr_init_i64(w, ax, 1, one, zero1)) ||
        (st = wr_init_i64(w, c1, 1, one, &one1)) ||
        (st = wr_init_i64(w, cd, 1, one, &d1)) ||
        (st = node1(w, "Shape", aux(w, L, "Shape"), 1, in, shp, NULL))) {
        return st;
    }
    a[0] = shp;
    a[1] = idx;
    if ((st = node1(w, "Gather", aux(w, L, "Gather"), 2, a, nb, &n)) ||
        (st = wr_attr_int(w, n, "axis", 0))) {
        return st;
    }
    a[0] = nb;
    a[1] = ax;
    if ((st = node1(w, "Unsqueeze", aux(w, L, "Unsqueeze"), 2, a, nb1,
                    NULL))) {
        return st;
    }
    a[0] = nb1;
    a[1] = c1;
    a[2] = cd;
    if ((st = node1(w, "Concat", aux(w, L, "ShapeConcat"), 3, a, es, &n)) ||
        (st = wr_attr_int(w, n, "axis", 0)) ||
        (st = float_init(w, L, "weight", 3, dim, L->weight, &a[0]))) {
        return st;
    }
    a[1] = es;
    if ((st = node1(w, "Expand", aux(w, L, "Expand"), 2, a, ex, NULL))) {
        return st;
    }
    a[0] = ex;
    a[1] = in[0];
    if ((st = node1(w, "Concat", name, 2, a, out, &n))) {
        return st;
    }
    return wr_attr_int(w, n, "axis", 1);
}

/* posembed: Add(x, P [1, T, D]), the importer's posembed. */
static int w_posembed(struct wr *w, const struct memest_layer *L,
                      const char *const *in, const char *out,
                      const char *name)
{
    uint64_t dim[3] = {1, L->in_shape.dim[0], L->in_shape.dim[1]};
    const char *a[2] = {in[0], NULL};
    int st = float_init(w, L, "weight", 3, dim, L->weight, &a[1]);
    return st != MEMEST_OK ? st : node1(w, "Add", name, 2, a, out, NULL);
}

/* matmul: MatMul of two computed tensors, broadcast as ONNX does. */
static int w_matmul(struct wr *w, const struct memest_layer *L,
                    const char *const *in, const char *out, const char *name)
{
    (void)L;
    return node1(w, "MatMul", name, 2, in, out, NULL);
}

/* transpose: perm [0, 1 + perm...], the batch kept first. */
static int w_transpose(struct wr *w, const struct memest_layer *L,
                       const char *const *in, const char *out,
                       const char *name)
{
    int64_t perm[4] = {0, 0, 0, 0};
    for (unsigned d = 0; d < L->in_shape.rank && d < 3; d++) {
        perm[d + 1] = (int64_t)L->perm[d] + 1;
    }
    return node_ints(w, "Transpose", name, 1, in, out, "perm",
                     L->in_shape.rank + 1, perm);
}

/*
 * attention: the hand-written self-attention (timm's ViT form) that the
 * importer's find_sdpa reads back as one layer, in standard operators
 * only: x -> MatMul(in_proj_weight^T) -> Add(in_proj_bias) -> Slices q,
 * k, v -> Reshape [N, T, h, d] -> Transposes (q, v: 0,2,1,3; k: 0,2,3,1)
 * -> MatMul(q, k) -> Mul(1/sqrt d) -> Softmax(-1) -> MatMul(., v) ->
 * Transpose(0,2,1,3) -> Reshape [N, T, D] -> MatMul(out_proj.weight^T) ->
 * Add(out_proj.bias). The pattern needs both biases: bias=no is refused.
 */
static int w_attention(struct wr *w, const struct memest_layer *L,
                       const char *const *in, const char *out,
                       const char *name)
{
    const uint64_t D = L->units, T = L->in_shape.dim[0], h = L->heads;
    const uint64_t d = h ? D / h : 0;
    uint64_t din[2] = {D, 3 * D}, dout[2] = {D, D}, b3[1] = {3 * D},
             b1[1] = {D};
    static const int64_t p0213[4] = {0, 2, 1, 3}, p0231[4] = {0, 2, 3, 1};
    const int64_t heads4[4] = {0, 0, (int64_t)h, (int64_t)d};
    const int64_t merged[3] = {0, 0, (int64_t)D};
    static const char *const qkv[3] = {"q", "k", "v"};
    const char *a[4] = {in[0], NULL, NULL, NULL};
    const char *mm = tmp(w, L, "qkv_mm"), *qb = tmp(w, L, "qkv");
    const char *sl[3], *rs[3], *tr[3];
    const char *sh4 = NULL, *sh3 = NULL, *axes = NULL, *scale = NULL;
    const char *sc = tmp(w, L, "scores"), *scs = tmp(w, L, "scaled"),
               *pr = tmp(w, L, "probs"), *av = tmp(w, L, "heads"),
               *at = tmp(w, L, "heads_t"), *am = tmp(w, L, "merged"),
               *po = tmp(w, L, "proj");
    float *wi, *wo;
    Onnx__NodeProto *n = NULL;
    int st;

    (void)T;
    if (L->bias_count == 0 || d == 0 || d * h != D) {
        return wr_fail(w, MEMEST_E_PARSE,
                       "an attention layer without biases (or with heads "
                       "not dividing its width) has no form the importer "
                       "reads back as one layer");
    }
    if (w->quant) {
        return wr_fail(w, MEMEST_E_PARSE,
                       "an attention layer is written in float only, not "
                       "as QDQ");
    }
    if (mm == NULL || qb == NULL || sc == NULL || scs == NULL ||
        pr == NULL || av == NULL || at == NULL || am == NULL || po == NULL ||
        (wi = transposed(w, L->weight, 3 * D, D)) == NULL ||
        (wo = transposed(w, L->weight + 3 * D * D, D, D)) == NULL) {
        return NOMEM(w);
    }
    if ((st = float_init(w, L, "in_proj_weight_t", 2, din, wi, &a[1])) ||
        (st = node1(w, "MatMul", aux(w, L, "MatMul_in"), 2, a, mm, NULL)) ||
        (st = float_init(w, L, "in_proj_bias", 1, b3, L->bias, &a[1]))) {
        return st;
    }
    a[0] = mm;
    if ((st = node1(w, "Add", aux(w, L, "Add_in"), 2, a, qb, NULL))) {
        return st;
    }
    {
        const int64_t last = -1;
        uint64_t one[1] = {1};
        if ((axes = tmp(w, L, "slice_axes")) == NULL) {
            return NOMEM(w);
        }
        if ((st = wr_init_i64(w, axes, 1, one, &last))) {
            return st;
        }
    }
    /* the Slices first, in q, k, v order: the pattern takes them so */
    for (size_t k = 0; k < 3; k++) {
        const int64_t b = (int64_t)(k * D), e = (int64_t)((k + 1) * D);
        char what[24];
        snprintf(what, sizeof what, "%s_starts", qkv[k]);
        if ((st = int64_list(w, L, what, 1, &b, &a[1]))) {
            return st;
        }
        snprintf(what, sizeof what, "%s_ends", qkv[k]);
        if ((st = int64_list(w, L, what, 1, &e, &a[2]))) {
            return st;
        }
        a[0] = qb;
        a[3] = axes;
        if ((sl[k] = tmp(w, L, qkv[k])) == NULL) {
            return NOMEM(w);
        }
        snprintf(what, sizeof what, "Slice_%s", qkv[k]);
        if ((st = node1(w, "Slice", aux(w, L, what), 4, a, sl[k], NULL))) {
            return st;
        }
    }
    if ((st = int64_list(w, L, "heads_shape", 4, heads4, &sh4)) ||
        (st = int64_list(w, L, "merged_shape", 3, merged, &sh3))) {
        return st;
    }
    for (size_t k = 0; k < 3; k++) {
        char what[24];
        snprintf(what, sizeof what, "%s_heads", qkv[k]);
        rs[k] = tmp(w, L, what);
        snprintf(what, sizeof what, "%s_t", qkv[k]);
        tr[k] = tmp(w, L, what);
        if (rs[k] == NULL || tr[k] == NULL) {
            return NOMEM(w);
        }
        a[0] = sl[k];
        a[1] = sh4;
        snprintf(what, sizeof what, "Reshape_%s", qkv[k]);
        if ((st = node1(w, "Reshape", aux(w, L, what), 2, a, rs[k], NULL))) {
            return st;
        }
        snprintf(what, sizeof what, "Transpose_%s", qkv[k]);
        if ((st = node_ints(w, "Transpose", aux(w, L, what), 1, &rs[k], tr[k],
                            "perm", 4, k == 1 ? p0231 : p0213))) {
            return st;
        }
    }
    a[0] = tr[0];
    a[1] = tr[1];
    if ((st = node1(w, "MatMul", aux(w, L, "MatMul_qk"), 2, a, sc, NULL)) ||
        (st = wr_scalar(w, "scale", (float)(1.0 / sqrt((double)d)),
                        &scale))) {
        return st;
    }
    a[0] = sc;
    a[1] = scale;
    if ((st = node1(w, "Mul", aux(w, L, "Mul_scale"), 2, a, scs, NULL)) ||
        (st = node1(w, "Softmax", aux(w, L, "Softmax"), 1, &scs, pr, &n)) ||
        (st = wr_attr_int(w, n, "axis", -1))) {
        return st;
    }
    a[0] = pr;
    a[1] = tr[2];
    if ((st = node1(w, "MatMul", aux(w, L, "MatMul_av"), 2, a, av, NULL)) ||
        (st = node_ints(w, "Transpose", aux(w, L, "Transpose_heads"), 1, &av,
                        at, "perm", 4, p0213))) {
        return st;
    }
    a[0] = at;
    a[1] = sh3;
    if ((st = node1(w, "Reshape", aux(w, L, "Reshape_merge"), 2, a, am,
                    NULL)) ||
        (st = float_init(w, L, "out_proj.weight_t", 2, dout, wo, &a[1]))) {
        return st;
    }
    a[0] = am;
    if ((st = node1(w, "MatMul", aux(w, L, "MatMul_out"), 2, a, po, NULL)) ||
        (st = float_init(w, L, "out_proj.bias", 1, b1, L->bias + 3 * D,
                         &a[1]))) {
        return st;
    }
    a[0] = po;
    return node1(w, "Add", name, 2, a, out, NULL);
}

/* ONNX's gate g comes from PyTorch's gate from_pt[g] (LSTM i, o, f, c
 * from i, f, g, o; GRU z, r, h from r, z, n): the inverse of the
 * importer's maps. */
static const size_t lstm_to_onnx[4] = {0, 3, 1, 2};
static const size_t gru_to_onnx[3] = {1, 0, 2};

/*
 * lstm and gru: the time-major ONNX operator inside the Transposes
 * PyTorch wraps a batch_first nn.LSTM/nn.GRU in (the importer's
 * rnn_match forms): Transpose(1,0,2) -> LSTM -> every step: Squeeze(1)
 * (bidirectional: Transpose(0,2,1,3) and Reshape [T, N, 2H]) ->
 * Transpose(1,0,2); the last state of one direction: Y_h -> Squeeze(0);
 * of both: every step's output, then torch.cat((y[:, -1, :H], y[:, 0,
 * H:]), 1). W [dirs, G*H, D], R [dirs, G*H, H], B [dirs, 2*G*H] in ONNX's
 * gate order; no initial states (zeros).
 */
static int w_rnn(struct wr *w, const struct memest_layer *L,
                 const char *const *in, const char *out, const char *name)
{
    const int gru = L->kind == MEMEST_KIND_GRU;
    const uint64_t G = gru ? 3 : 4, H = L->units, T = L->in_shape.dim[0],
                   D = L->in_shape.dim[1], GH = G * H;
    const uint64_t dirs = L->direction == MEMEST_RNN_BIDIRECTIONAL ? 2 : 1;
    const size_t *map = gru ? gru_to_onnx : lstm_to_onnx;
    static const char *const dir_word[3] = {"forward", "reverse",
                                            "bidirectional"};
    static const int64_t p102[3] = {1, 0, 2}, p0213[4] = {0, 2, 1, 3};
    uint64_t wd[3] = {dirs, GH, D}, rd[3] = {dirs, GH, H},
             bd[2] = {dirs, 2 * GH};
    const char *xt = tmp(w, L, "time_major"), *y = tmp(w, L, "Y");
    const char *a[4] = {NULL, NULL, NULL, NULL};
    float *W = wr_alloc(w, (size_t)(dirs * GH * D) * sizeof *W);
    float *R = wr_alloc(w, (size_t)(dirs * GH * H) * sizeof *R);
    float *B = L->bias_count ? wr_alloc(w, (size_t)(dirs * 2 * GH) *
                                               sizeof *B)
                             : NULL;
    Onnx__NodeProto *n = NULL;
    int st;

    if (xt == NULL || y == NULL || W == NULL || R == NULL ||
        (L->bias_count && B == NULL)) {
        return NOMEM(w);
    }
    if (L->direction < 0 || L->direction > 2) {
        return wr_fail(w, MEMEST_E_INVALID, "direction %d", L->direction);
    }
    /* per direction: weight_ih [GH][D], weight_hh [GH][H] (L->weight);
     * bias_ih [GH], bias_hh [GH] (L->bias) */
    for (uint64_t dd = 0; dd < dirs; dd++) {
        const float *wih = L->weight + dd * GH * (D + H);
        const float *whh = wih + GH * D;
        for (uint64_t g = 0; g < G; g++) {
            memcpy(W + (dd * GH + g * H) * D, wih + map[g] * H * D,
                   (size_t)(H * D) * sizeof *W);
            memcpy(R + (dd * GH + g * H) * H, whh + map[g] * H * H,
                   (size_t)(H * H) * sizeof *R);
            if (B != NULL) {
                const float *bih = L->bias + dd * 2 * GH;
                memcpy(B + dd * 2 * GH + g * H, bih + map[g] * H,
                       (size_t)H * sizeof *B);
                memcpy(B + dd * 2 * GH + GH + g * H, bih + GH + map[g] * H,
                       (size_t)H * sizeof *B);
            }
        }
    }
    if ((st = node_ints(w, "Transpose", aux(w, L, "Transpose_in"), 1, in, xt,
                        "perm", 3, p102))) {
        return st;
    }
    a[0] = xt;
    if ((st = float_init(w, L, "W", 3, wd, W, &a[1])) ||
        (st = float_init(w, L, "R", 3, rd, R, &a[2])) ||
        (B != NULL && (st = float_init(w, L, "B", 2, bd, B, &a[3])))) {
        return st;
    }
    {
        const int last_state = !L->return_sequence && dirs == 1;
        const char *outs[2] = {last_state ? "" : y, last_state ? y : ""};
        n = wr_node(w, gru ? "GRU" : "LSTM", name, B != NULL ? 4 : 3, a,
                    last_state ? 2 : 1, outs);
        if (n == NULL) {
            return NOMEM(w);
        }
        if ((st = wr_attr_int(w, n, "hidden_size", (int64_t)H)) ||
            (st = wr_attr_str(w, n, "direction",
                              dir_word[L->direction])) ||
            (gru && (st = wr_attr_int(w, n, "linear_before_reset",
                                      L->linear_before_reset ? 1 : 0)))) {
            return st;
        }
        if (last_state) {
            static const int64_t zero[1] = {0};
            const char *ax = NULL;
            a[0] = y;
            if ((st = int64_list(w, L, "squeeze_axes", 1, zero, &ax))) {
                return st;
            }
            a[1] = ax;
            return node1(w, "Squeeze", aux(w, L, "Squeeze"), 2, a, out, NULL);
        }
    }
    /* every step, [T, dirs, N, H] -> [T, N, dirs*H] -> [N, T, dirs*H] */
    const char *tm = tmp(w, L, "steps_time_major");
    const char *bf = L->return_sequence ? out : tmp(w, L, "steps");
    if (tm == NULL || bf == NULL) {
        return NOMEM(w);
    }
    if (dirs == 1) {
        static const int64_t one[1] = {1};
        const char *ax = NULL;
        a[0] = y;
        if ((st = int64_list(w, L, "squeeze_axes", 1, one, &ax))) {
            return st;
        }
        a[1] = ax;
        if ((st = node1(w, "Squeeze", aux(w, L, "Squeeze"), 2, a, tm,
                        NULL))) {
            return st;
        }
    } else {
        static const int64_t merged[3] = {0, 0, -1};
        const char *yt = tmp(w, L, "Y_t"), *sh = NULL;
        if (yt == NULL) {
            return NOMEM(w);
        }
        if ((st = node_ints(w, "Transpose", aux(w, L, "Transpose_dirs"), 1,
                            &y, yt, "perm", 4, p0213)) ||
            (st = int64_list(w, L, "merge_shape", 3, merged, &sh))) {
            return st;
        }
        a[0] = yt;
        a[1] = sh;
        if ((st = node1(w, "Reshape", aux(w, L, "Reshape"), 2, a, tm,
                        NULL))) {
            return st;
        }
    }
    if ((st = node_ints(w, "Transpose", aux(w, L, "Transpose_out"), 1, &tm,
                        bf, "perm", 3, p102))) {
        return st;
    }
    if (L->return_sequence) {
        return MEMEST_OK;
    }
    /* both directions' last states: y[:, T-1, :H] and y[:, 0, H:] */
    {
        const int64_t steps[2] = {(int64_t)T - 1, 0};
        const int64_t lo[2] = {0, (int64_t)H}, hi[2] = {(int64_t)H,
                                                        (int64_t)(2 * H)};
        static const char *const half[2] = {"forward", "reverse"};
        const char *cat[2];
        for (size_t k = 0; k < 2; k++) {
            char what[40];
            const char *gi = NULL, *g, *s, *ax = NULL;
            const int64_t one = 1;
            snprintf(what, sizeof what, "%s_step", half[k]);
            g = tmp(w, L, what);
            snprintf(what, sizeof what, "%s_last", half[k]);
            s = tmp(w, L, what);
            snprintf(what, sizeof what, "%s_step_index", half[k]);
            gi = tmp(w, L, what);
            if (g == NULL || s == NULL || gi == NULL) {
                return NOMEM(w);
            }
            if ((st = wr_init_i64(w, gi, 0, NULL, &steps[k]))) {
                return st;
            }
            a[0] = bf;
            a[1] = gi;
            snprintf(what, sizeof what, "Gather_%s", half[k]);
            if ((st = node1(w, "Gather", aux(w, L, what), 2, a, g, &n)) ||
                (st = wr_attr_int(w, n, "axis", 1))) {
                return st;
            }
            snprintf(what, sizeof what, "%s_starts", half[k]);
            if ((st = int64_list(w, L, what, 1, &lo[k], &a[1]))) {
                return st;
            }
            snprintf(what, sizeof what, "%s_ends", half[k]);
            if ((st = int64_list(w, L, what, 1, &hi[k], &a[2]))) {
                return st;
            }
            snprintf(what, sizeof what, "%s_axes", half[k]);
            if ((st = int64_list(w, L, what, 1, &one, &ax))) {
                return st;
            }
            a[0] = g;
            a[3] = ax;
            snprintf(what, sizeof what, "Slice_%s", half[k]);
            if ((st = node1(w, "Slice", aux(w, L, what), 4, a, s, NULL))) {
                return st;
            }
            cat[k] = s;
        }
        if ((st = node1(w, "Concat", aux(w, L, "Concat"), 2, cat, out,
                        &n))) {
            return st;
        }
        return wr_attr_int(w, n, "axis", 1);
    }
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
    [MEMEST_KIND_LAYERNORM] = {w_layernorm, 0, 0},
    [MEMEST_KIND_CLSTOKEN] = {w_clstoken, 0, 0},
    [MEMEST_KIND_POSEMBED] = {w_posembed, 0, 0},
    [MEMEST_KIND_MATMUL] = {w_matmul, 0, 0},
    [MEMEST_KIND_TRANSPOSE] = {w_transpose, 0, 0},
    [MEMEST_KIND_ATTENTION] = {w_attention, 0, 0},
    [MEMEST_KIND_LSTM] = {w_rnn, 0, 0},
    [MEMEST_KIND_GRU] = {w_rnn, 0, 0},
};

const struct wr_kind *wr_kind_of(enum memest_kind kind)
{
    if ((unsigned)kind >= MEMEST_KIND_COUNT) {
        return NULL;
    }
    return &kinds[kind];
}
