/*
 * ONNX import: the operator table and the dispatch.
 *
 * Adding an operator:
 *   1. a row below, in alphabetical order of op_type (the supported list
 *      in messages and libmemest/README.md's table come from this order;
 *      tests/memest/test_onnx.c checks that the README names every row),
 *      with every attribute the operator reads (any other is refused,
 *      named, before the handler runs);
 *   2. a handler in ops_*.c that reads its operands with get_act() and
 *      get_const(), refuses each value it cannot take with node_fail()
 *      naming the attribute ("mode 'cubic' is not supported"), and makes
 *      its layers with push_layer()/emit_simple() and set_output(); and/or
 *      a fold function in fold.c when the operator can be computed on
 *      constants at import time;
 *   3. a fixture in scripts/make-onnx-test-models.py and its test.
 * An operator without a row is refused with the list of the rows.
 */
#include "onnx/onnx_internal.h"

#include <stdio.h>
#include <string.h>

/* broadcast and axis of the element-wise operators (before opset 7) only
 * allowed broadcasting, which the handlers check on the shapes anyway;
 * Gemm's broadcast likewise allowed only C to broadcast */
static const struct onnx_op ops[] = {
    {"Add", "axis broadcast", onnx_binary, fold_add, 0},
    {"AveragePool", "auto_pad ceil_mode count_include_pad dilations "
                    "kernel_shape pads strides", onnx_avgpool, NULL, 0},
    /* is_test (before opset 7) and momentum matter only for training;
     * spatial=0 (before opset 9) is refused by the handler */
    {"BatchNormalization", "epsilon is_test momentum spatial training_mode",
     onnx_batchnorm, NULL, 0},
    {"Cast", "to", NULL, fold_cast, 0},
    {"Clip", "max min", onnx_clip, NULL, 0},
    {"Concat", "axis", onnx_concat, fold_concat, 0},
    {"Constant", "value value_float value_floats value_int value_ints", NULL,
     fold_constant, 0},
    {"ConstantOfShape", "value", NULL, fold_constant_of_shape, 0},
    {"Conv", "auto_pad dilations group kernel_shape pads strides", onnx_conv,
     NULL, 0},
    /* output_shape is refused by the handler (it names it) */
    {"ConvTranspose", "auto_pad dilations group kernel_shape output_padding "
                      "output_shape pads strides", onnx_conv_transpose, NULL,
     0},
    {"DequantizeLinear", "axis", onnx_dequantize, fold_dequantize, 0},
    {"Div", "axis broadcast", onnx_binary, fold_div, 0},
    {"Dropout", "is_test ratio seed", onnx_dropout, NULL, 0},
    {"Elu", "alpha", onnx_elu, NULL, 0},
    {"Equal", "axis broadcast", NULL, fold_equal, 0},
    {"Erf", "", onnx_erf, NULL, 0},
    {"Expand", "", NULL, fold_expand, 0},
    {"Flatten", "axis", onnx_flatten, NULL, 0},
    {"GRU", "activation_alpha activation_beta activations clip direction "
            "hidden_size layout linear_before_reset", onnx_gru, NULL, 0},
    {"Gather", "axis", onnx_gather, fold_gather, 0},
    {"Gemm", "alpha beta broadcast transA transB", onnx_gemm, NULL, 0},
    {"GlobalAveragePool", "", onnx_gap, NULL, 0},
    {"HardSigmoid", "alpha beta", onnx_hardsigmoid, NULL, 0},
    {"HardSwish", "", onnx_hardswish, NULL, 0},
    {"Identity", "", onnx_identity, fold_identity, 0},
    {"LSTM", "activation_alpha activation_beta activations clip direction "
             "hidden_size input_forget layout", onnx_lstm, NULL, 0},
    /* stash_type other than 1 is refused by the handler */
    {"LayerNormalization", "axis epsilon stash_type", onnx_layernorm, NULL,
     0},
    {"LeakyRelu", "alpha", onnx_leakyrelu, NULL, 0},
    {"LogSoftmax", "axis", onnx_logsoftmax, NULL, 0},
    {"MatMul", "", onnx_matmul, NULL, 0},
    {"MaxPool", "auto_pad ceil_mode dilations kernel_shape pads "
                "storage_order strides", onnx_maxpool, NULL, 0},
    {"Mul", "axis broadcast", onnx_binary, fold_mul, 0},
    /* pads and value were attributes before opset 11 */
    {"Pad", "mode pads value", onnx_pad, NULL, 0},
    /* QLinearAdd is com.microsoft's (ONNX Runtime's contrib operator) */
    {"QLinearAdd", "", onnx_qlinearadd, NULL, 0},
    {"QLinearConv", "auto_pad dilations group kernel_shape pads strides",
     onnx_qlinearconv, NULL, 0},
    {"QLinearMatMul", "", onnx_qlinearmatmul, NULL, 0},
    {"QuantizeLinear", "axis", onnx_quantize, fold_quantize, 0},
    {"Range", "", NULL, fold_range, 0},
    {"Reciprocal", "", onnx_reciprocal, NULL, 0},
    /* axes: only [2, 3], a global pool (ops_move.c) */
    {"ReduceMax", "axes keepdims noop_with_empty_axes", onnx_reducemax, NULL,
     0},
    {"ReduceMean", "axes keepdims noop_with_empty_axes", onnx_reducemean,
     NULL, 0},
    {"Relu", "", onnx_relu, NULL, 0},
    {"Reshape", "allowzero", onnx_reshape, fold_reshape, 0},
    /* cubic_coeff_a and extrapolation_value matter only for modes the
     * handler refuses (cubic, tf_crop_and_resize) */
    {"Resize", "coordinate_transformation_mode cubic_coeff_a "
               "exclude_outside extrapolation_value mode nearest_mode",
     onnx_resize, NULL, 0},
    {"Shape", "end start", NULL, fold_shape, 1},
    {"Sigmoid", "", onnx_sigmoid, NULL, 0},
    /* starts, ends and axes were attributes before opset 10 */
    {"Slice", "axes ends starts", onnx_slice, fold_slice, 0},
    {"Softmax", "axis", onnx_softmax, NULL, 0},
    {"Softplus", "", onnx_softplus, NULL, 0},
    /* split was an attribute before opset 13 */
    {"Split", "axis split", onnx_split, NULL, 0},
    {"Squeeze", "axes", onnx_squeeze, fold_squeeze, 0},
    {"Sub", "axis broadcast", onnx_binary, fold_sub, 0},
    {"Tanh", "", onnx_tanh, NULL, 0},
    {"Transpose", "perm", onnx_transpose, fold_transpose, 0},
    {"Unsqueeze", "axes", onnx_unsqueeze, fold_unsqueeze, 0},
    {"Upsample", "mode", onnx_upsample, NULL, 0},
    {"Where", "", NULL, fold_where, 0},
};

#define NOPS (sizeof ops / sizeof ops[0])

const struct onnx_op *onnx_op_find(const char *op_type)
{
    /* a binary search: the rows are in strcmp order */
    size_t lo = 0, hi = NOPS;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(op_type, ops[mid].op_type);
        if (c == 0) {
            return &ops[mid];
        }
        if (c < 0) {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    return NULL;
}

void onnx_supported_ops(char *buf, size_t cap)
{
    size_t off = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < NOPS && off < cap; i++) {
        int k = snprintf(buf + off, cap - off, "%s%s", i ? " " : "",
                         ops[i].op_type);
        off += k > 0 ? (size_t)k : 0;
    }
}

int onnx_refuse_listing(struct imp *I, size_t node, const char *head)
{
    const Onnx__NodeProto *n = I->g->node[node];
    char list[NOPS * 24];
    /* node_message() writes "node '%.48s' (%.32s): " first; the list is
     * cut at a word, with " ...", where the diag would cut it */
    size_t used = 6 + strnlen(node_name(n), 48) + 3 +
                  strnlen(str(n->op_type), 32) + 3 + strlen(head);
    size_t room = used + 5 < sizeof I->diag->message
                      ? sizeof I->diag->message - 1 - used
                      : 0;
    size_t len;

    onnx_supported_ops(list, sizeof list);
    len = strlen(list);
    if (len > room) {
        len = room > 4 ? room - 4 : 0;
        while (len > 0 && list[len] != ' ') {
            len--;
        }
        return node_fail(I, node, MEMEST_E_PARSE, "%s%.*s ...", head,
                         (int)len, list);
    }
    return node_fail(I, node, MEMEST_E_PARSE, "%s%s", head, list);
}

/* The operators that understand a 1-D signal held as N x C x 1 x L
 * (struct value's sig): the window operators, Slice and Gather (which map
 * ONNX axis 2 to w) and the element-wise ones. Any other would read the
 * held rank 4 as ONNX's axes, so it is refused. */
static int check_signal_reader(struct imp *I, size_t node)
{
    static const char *const window[] = {"AveragePool", "Conv", "Gather",
                                         "MaxPool", "Pad", "Slice"};
    static const char *const elementwise[] = {
        "Add", "BatchNormalization", "Div", "Elu", "HardSigmoid",
        "HardSwish", "Identity", "LeakyRelu", "Mul", "Relu", "Sigmoid",
        "Softplus", "Sub", "Tanh"};
    const Onnx__NodeProto *n = I->g->node[node];
    int reads = 0;
    int ok = 0;

    for (size_t i = 0; i < n->n_input; i++) {
        size_t vi = value_of(I, str(n->input[i]));
        if (vi != SIZE_MAX && I->v[vi].sig) {
            reads = 1;
        }
    }
    if (!reads) {
        return MEMEST_OK;
    }
    for (size_t k = 0; k < sizeof window / sizeof *window; k++) {
        if (str_eq(n->op_type, window[k])) {
            return MEMEST_OK;
        }
    }
    for (size_t k = 0; k < sizeof elementwise / sizeof *elementwise; k++) {
        ok |= str_eq(n->op_type, elementwise[k]);
    }
    /* element-wise, and every other operand a signal too or one number
     * (a constant of ONNX rank 3 would broadcast over other axes than
     * the held rank 4's); BatchNormalization's are per channel */
    for (size_t i = 0; ok && i < n->n_input; i++) {
        size_t vi = value_of(I, str(n->input[i]));
        const struct cval *c;
        if (vi == SIZE_MAX || I->v[vi].sig ||
            str_eq(n->op_type, "BatchNormalization")) {
            continue;
        }
        if (!is_constant(&I->v[vi]) ||
            get_const(I, node, i, "operand", &c) != MEMEST_OK ||
            c->count != 1) {
            ok = 0;
        }
    }
    if (!ok) {
        return node_fail(I, node, MEMEST_E_PARSE,
                         "it reads a 1-D signal (N x C x L); supported on "
                         "one are Conv, MaxPool, AveragePool, Pad, Slice, "
                         "Gather and element-wise operators with signals of "
                         "one shape or single numbers");
    }
    return MEMEST_OK;
}

int translate_node(struct imp *I, size_t node)
{
    const Onnx__NodeProto *n = I->g->node[node];
    const struct onnx_op *op;
    int keeps = 0;
    int st;

    if (I->ni[node].gelu_x != SIZE_MAX) {
        return onnx_gelu(I, node);
    }
    if (I->ni[node].swish_x != SIZE_MAX) {
        return onnx_swish(I, node);
    }
    if (I->ni[node].ln.on) {
        return onnx_layernorm_pattern(I, node);
    }
    if (I->ni[node].sm.on) {
        return onnx_softmax_pattern(I, node);
    }
    if (I->ni[node].mha.on) {
        return onnx_mha(I, node);
    }
    if (I->ni[node].cls_expand != SIZE_MAX) {
        return onnx_clstoken(I, node);
    }
    op = onnx_op_find(str(n->op_type));
    if (op == NULL) {
        return onnx_refuse_listing(I, node,
                                   "unsupported operator; supported: ");
    }
    if ((st = check_attrs(I, node, op->attrs)) != MEMEST_OK) {
        return st;
    }
    if (op->handler == NULL) {
        return node_fail(I, node, MEMEST_E_PARSE,
                         "%s of a computed tensor is not supported: only of "
                         "shapes and constants, which are folded at import",
                         op->op_type);
    }
    if ((st = check_signal_reader(I, node)) != MEMEST_OK ||
        (st = quant_check_reader(I, node, &keeps)) != MEMEST_OK ||
        (st = op->handler(I, node)) != MEMEST_OK) {
        return st;
    }
    return keeps ? quant_keep(I, node) : MEMEST_OK;
}

int fold_output(struct imp *I, size_t node, size_t out, struct cval *c)
{
    const Onnx__NodeProto *n = I->g->node[node];
    const struct onnx_op *op = onnx_op_find(str(n->op_type));
    int st;

    memset(c, 0, sizeof *c);
    if (op == NULL || op->fold == NULL) {
        /* analyse() marks only the outputs of folding rows constant */
        return node_fail(I, node, MEMEST_E_PARSE, "cannot be folded");
    }
    if (out != 0) {
        return node_fail(I, node, MEMEST_E_PARSE,
                         "its output %zu is read; only the first is "
                         "supported", out);
    }
    if ((st = check_attrs(I, node, op->attrs)) != MEMEST_OK) {
        return st;
    }
    st = op->fold(I, node, c);
    if (st != MEMEST_OK) {
        cval_free(c);
    }
    return st;
}
