/*
 * The operator table, indexed by kind, the names of the kinds, and the
 * helpers the operators' files share (messages, windows, the writer's
 * buffer). See op.h for what an operator defines and how to add one.
 */
#include "op.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* A kind missing here has no definition: the drivers refuse its layers
 * (MEMEST_KIND_INPUT is a model input, not a layer, and has none). */
static const struct memest_op_def *const table[MEMEST_KIND_COUNT] = {
    [MEMEST_KIND_DENSE] = &op_dense,
    [MEMEST_KIND_CONV2D] = &op_conv2d,
    [MEMEST_KIND_MAXPOOL] = &op_maxpool,
    [MEMEST_KIND_AVGPOOL] = &op_avgpool,
    [MEMEST_KIND_FLATTEN] = &op_flatten,
    [MEMEST_KIND_ACTIVATION] = &op_activation,
    [MEMEST_KIND_GLOBALAVGPOOL] = &op_globalavgpool,
    [MEMEST_KIND_ADD] = &op_add,
    [MEMEST_KIND_CONCAT] = &op_concat,
    [MEMEST_KIND_BATCHNORM] = &op_batchnorm,
    [MEMEST_KIND_IDENTITY] = &op_identity,
    [MEMEST_KIND_DROPOUT] = &op_dropout,
    [MEMEST_KIND_SUB] = &op_sub,
    [MEMEST_KIND_MUL] = &op_mul,
    [MEMEST_KIND_DIV] = &op_div,
    [MEMEST_KIND_CONV_TRANSPOSE] = &op_conv_transpose,
    [MEMEST_KIND_RESIZE] = &op_resize,
    [MEMEST_KIND_PAD] = &op_pad,
    [MEMEST_KIND_SHUFFLE] = &op_shuffle,
    [MEMEST_KIND_SLICE] = &op_slice,
    [MEMEST_KIND_RESHAPE] = &op_reshape,
    [MEMEST_KIND_LAYERNORM] = &op_layernorm,
    [MEMEST_KIND_CLSTOKEN] = &op_clstoken,
    [MEMEST_KIND_POSEMBED] = &op_posembed,
    [MEMEST_KIND_MATMUL] = &op_matmul,
    [MEMEST_KIND_TRANSPOSE] = &op_transpose,
    [MEMEST_KIND_ATTENTION] = &op_attention,
    [MEMEST_KIND_LSTM] = &op_lstm,
    [MEMEST_KIND_GRU] = &op_gru,
};

const struct memest_op_def *op_def(enum memest_kind kind)
{
    if ((unsigned)kind >= MEMEST_KIND_COUNT) {
        return NULL;
    }
    return table[kind];
}

const char *memest_kind_name(enum memest_kind kind)
{
#define KIND_NAME(id, name) [MEMEST_KIND_##id] = name,
    static const char *const names[MEMEST_KIND_COUNT] = {
        MEMEST_KINDS(KIND_NAME)};
#undef KIND_NAME
    if ((unsigned)kind >= MEMEST_KIND_COUNT) {
        return NULL;
    }
    return names[kind];
}

int memest_kind_is_view(enum memest_kind kind)
{
    const struct memest_op_def *def = op_def(kind);
    return def != NULL && def->is_view;
}

size_t memest_layer_param_tensors(
    const struct memest_layer *layer,
    struct memest_param_tensor out[MEMEST_PARAM_TENSORS_MAX])
{
    const struct memest_op_def *def;
    uint64_t d[OP_WEIGHT_MAX_RANK];
    unsigned rank;

    if (layer == NULL || out == NULL ||
        (def = op_def(layer->kind)) == NULL || layer->parameter_count == 0) {
        return 0;
    }
    switch (def->params) {
    case OP_PARAMS_NONE:
    case OP_PARAMS_BATCHNORM:
        return 0;
    case OP_PARAMS_TENSORS:
        return def->param_tensors ? def->param_tensors(layer, out) : 0;
    case OP_PARAMS_WEIGHT_BIAS:
        if (def->weight_shape == NULL || layer->folded_bn != NULL) {
            return 0;
        }
        memset(out, 0, 2 * sizeof *out);
        rank = def->weight_shape(layer, d);
        out[0].suffix = ".weight";
        out[0].rank = rank;
        for (unsigned i = 0; i < rank; i++) {
            out[0].dim[i] = d[i];
        }
        if (layer->bias_count == 0) {
            return 1;
        }
        out[1].suffix = ".bias";
        out[1].rank = 1;
        out[1].dim[0] = layer->bias_count;
        out[1].in_bias = 1;
        return 2;
    }
    return 0;
}

unsigned memest_layer_weight_shape(const struct memest_layer *layer,
                                   uint64_t dim[MEMEST_TENSOR_MAX_RANK])
{
    const struct memest_op_def *def;
    uint64_t d[OP_WEIGHT_MAX_RANK];
    unsigned rank;

    if (layer == NULL || dim == NULL ||
        (def = op_def(layer->kind)) == NULL || def->weight_shape == NULL ||
        layer->parameter_count == 0) {
        return 0;
    }
    rank = def->weight_shape(layer, d);
    for (unsigned i = 0; i < rank; i++) {
        dim[i] = d[i];
    }
    return rank;
}

/* The order in which messages list the keys ("name, in, k, s, p, g, act,
 * bias"). */
const struct op_key_info op_keys[] = {
    {"name", "name", OP_KEY_NAME},
    {"in", "input names", OP_KEY_IN},
    {"k", "kernel size", OP_KEY_K},
    {"s", "stride", OP_KEY_S},
    {"p", "padding", OP_KEY_P},
    {"g", "groups", OP_KEY_G},
    {"act", "activation", OP_KEY_ACT},
    {"bias", "bias", OP_KEY_BIAS},
    {"eps", "epsilon", OP_KEY_EPS},
    {"count_pad", "count_pad", OP_KEY_COUNT_PAD},
    {"alpha", "alpha", OP_KEY_ALPHA},
    {"beta", "beta", OP_KEY_BETA},
    {"min", "lower bound", OP_KEY_ALPHA},
    {"max", "upper bound", OP_KEY_BETA},
    {"scalar", "constant operand", OP_KEY_SCALAR},
    {"scalar_left", "constant left operand", OP_KEY_SCALAR_LEFT},
    {"d", "dilation", OP_KEY_D},
    {"op", "output padding", OP_KEY_OUT_PAD},
    {"scale", "scale", OP_KEY_SCALE},
    {"mode", "mode", OP_KEY_MODE},
    {"ceil", "ceil mode", OP_KEY_CEIL},
    {"value", "padding value", OP_KEY_VALUE},
    {"axis", "axis", OP_KEY_AXIS},
    {"begin", "begin", OP_KEY_BEGIN},
    {"end", "end", OP_KEY_END},
    {"shape", "target shape", OP_KEY_SHAPE},
    {"dir", "direction", OP_KEY_DIR},
    {"seq", "sequence output", OP_KEY_SEQ},
    {"lbr", "linear_before_reset", OP_KEY_LBR},
    {"perm", "axis permutation", OP_KEY_PERM},
    {"heads", "head count", OP_KEY_HEADS},
};
const size_t op_key_count = sizeof op_keys / sizeof op_keys[0];

int op_fail(const struct op_infer *x, int status, int col, const char *fmt,
            ...)
{
    va_list ap;

    if (x->diag == NULL) {
        return status;
    }
    x->diag->line = x->line;
    x->diag->column = x->line > 0 ? col : 0;
    va_start(ap, fmt);
    vsnprintf(x->diag->message, sizeof x->diag->message, fmt, ap);
    va_end(ap);
    return status;
}

int op_overflow(const struct op_infer *x, const char *what)
{
    return op_fail(x, MEMEST_E_OVERFLOW, x->sp->col_kind,
                   "%s: %s does not fit in 64 bits", x->sp->kind_text, what);
}

int op_need_chw(const struct op_infer *x)
{
    char text[MEMEST_SHAPE_TEXT_MAX];

    if (x->in[0]->rank == 3) {
        return MEMEST_OK;
    }
    memest_shape_format(x->in[0], text, sizeof text);
    return op_fail(x, MEMEST_E_SHAPE, x->sp->col_kind,
                   "%s needs a CxHxW input but gets %s", x->sp->kind_text,
                   text);
}

void op_set_window(struct memest_layer *L, const struct op_spec *sp,
                   uint64_t sh, uint64_t sw)
{
    L->kernel_h = sp->kh;
    L->kernel_w = sp->kw;
    L->stride_h = sh;
    L->stride_w = sw;
    L->pad_top = sp->pt;
    L->pad_left = sp->pl;
    L->pad_bottom = sp->pb;
    L->pad_right = sp->pr;
}

int op_window_out(const struct op_infer *x, uint64_t h, uint64_t k,
                  uint64_t s, uint64_t before, uint64_t after,
                  const char *axis, bool pad_below_window, uint64_t *out)
{
    const struct op_spec *sp = x->sp;
    uint64_t padded;
    char text[MEMEST_SHAPE_TEXT_MAX];

    if (add_ovf(before, after, &padded) || add_ovf(padded, h, &padded)) {
        return op_fail(x, MEMEST_E_OVERFLOW, sp->col_p,
                       "%s: the %s with its padding overflows 64 bits",
                       sp->kind_text, axis);
    }
    if (k > padded) {
        memest_shape_format(x->in[0], text, sizeof text);
        return op_fail(x, MEMEST_E_SHAPE, sp->col_k,
                       "%s: kernel %s %llu is larger than the padded input "
                       "%s %llu (input %s, padding %llu+%llu)",
                       sp->kind_text, axis, (unsigned long long)k, axis,
                       (unsigned long long)padded, text,
                       (unsigned long long)before, (unsigned long long)after);
    }
    if (pad_below_window && (before >= k || after >= k)) {
        return op_fail(x, MEMEST_E_SHAPE, sp->col_p,
                       "%s: padding %llu+%llu on the %s is not smaller than "
                       "the window %llu, so a window could hold only padding",
                       sp->kind_text, (unsigned long long)before,
                       (unsigned long long)after, axis, (unsigned long long)k);
    }
    *out = (padded - k) / s + 1;
    return MEMEST_OK;
}

void op_put(struct op_out *o, const char *fmt, ...)
{
    va_list ap;
    int n;
    char *dst = NULL;
    size_t room = 0;

    if (o->buf != NULL && o->len < o->cap) {
        dst = o->buf + o->len;
        room = o->cap - o->len;
    }
    va_start(ap, fmt);
    n = vsnprintf(dst, room, fmt, ap);
    va_end(ap);
    if (n > 0) {
        o->len += (size_t)n;
    }
}

void op_put_pair(struct op_out *o, const char *key, uint64_t h, uint64_t w)
{
    if (h == w) {
        op_put(o, " %s=%" PRIu64, key, h);
    } else {
        op_put(o, " %s=%" PRIu64 "x%" PRIu64, key, h, w);
    }
}

void op_put_pads(struct op_out *o, const struct memest_layer *L)
{
    if (L->pad_top == L->pad_bottom && L->pad_left == L->pad_right) {
        op_put_pair(o, "p", L->pad_top, L->pad_left);
    } else {
        op_put(o, " p=%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64,
               L->pad_top, L->pad_left, L->pad_bottom, L->pad_right);
    }
}

/* ---- Activation parameters ---------------------------------------------- */

const char *op_act_alpha_word(enum memest_act act)
{
    switch (act) {
    case MEMEST_ACT_LEAKYRELU:
    case MEMEST_ACT_ELU:
    case MEMEST_ACT_HARDSIGMOID:
        return "alpha";
    case MEMEST_ACT_CLIP:
        return "min";
    case MEMEST_ACT_NONE:
    case MEMEST_ACT_RELU:
    case MEMEST_ACT_GELU:
    case MEMEST_ACT_SIGMOID:
    case MEMEST_ACT_TANH:
    case MEMEST_ACT_SOFTMAX:
    case MEMEST_ACT_RELU6:
    case MEMEST_ACT_LOGSOFTMAX:
    case MEMEST_ACT_ERF:
    case MEMEST_ACT_GELU_ERF:
    case MEMEST_ACT_SILU:
    case MEMEST_ACT_HARDSWISH:
    case MEMEST_ACT_SOFTPLUS:
        return NULL;
    }
    return NULL;
}

const char *op_act_beta_word(enum memest_act act)
{
    if (act == MEMEST_ACT_HARDSIGMOID) {
        return "beta";
    }
    return act == MEMEST_ACT_CLIP ? "max" : NULL;
}

void op_act_defaults(enum memest_act act, double *alpha, double *beta)
{
    *alpha = 0.0;
    *beta = 0.0;
    switch (act) {
    case MEMEST_ACT_LEAKYRELU:
        *alpha = 0.01;
        break;
    case MEMEST_ACT_ELU:
        *alpha = 1.0;
        break;
    case MEMEST_ACT_HARDSIGMOID:
        *alpha = 0.2;
        *beta = 0.5;
        break;
    case MEMEST_ACT_HARDSWISH:
        *alpha = 1.0 / 6.0;
        *beta = 0.5;
        break;
    case MEMEST_ACT_CLIP:
        *alpha = -INFINITY;
        *beta = INFINITY;
        break;
    case MEMEST_ACT_NONE:
    case MEMEST_ACT_RELU:
    case MEMEST_ACT_GELU:
    case MEMEST_ACT_SIGMOID:
    case MEMEST_ACT_TANH:
    case MEMEST_ACT_SOFTMAX:
    case MEMEST_ACT_RELU6:
    case MEMEST_ACT_LOGSOFTMAX:
    case MEMEST_ACT_ERF:
    case MEMEST_ACT_GELU_ERF:
    case MEMEST_ACT_SILU:
    case MEMEST_ACT_SOFTPLUS:
        break;
    }
}

/* %.17g prints an infinite bound as "inf" or "-inf", which strtod reads
 * back. */
void op_put_act_params(struct op_out *o, enum memest_act act,
                       const struct memest_layer *L)
{
    const char *a = op_act_alpha_word(act);
    const char *b = op_act_beta_word(act);
    if (a != NULL) {
        op_put(o, " %s=%.17g", a, L->act_alpha);
    }
    if (b != NULL) {
        op_put(o, " %s=%.17g", b, L->act_beta);
    }
}
