/*
 * ONNX import: quantised models. QuantizeLinear and DequantizeLinear
 * (opset 10: per tensor; 13: per axis too; int8 and uint8, int32 for a
 * dequantised bias), QLinearConv, QLinearMatMul and com.microsoft's
 * QLinearAdd, as ONNX Runtime's quantizer writes them (QDQ and QOperator
 * formats).
 *
 * The model made is the float graph: a DequantizeLinear of a constant
 * (int8 weights, int32 biases) folds into float weights w = scale * (q -
 * zero point), computed as ONNX Runtime does in float; a QuantizeLinear ->
 * DequantizeLinear pair on a computed tensor makes no layer, its params
 * are recorded for the tensor it reads (the output of the layer that made
 * it, or a model input) and given to the model
 * (memest_model_set_tensor_quant) once it is built. An int8 tensor (a
 * QuantizeLinear's or QLinear operator's output) is held as an alias of
 * the float tensor it stands for, with its params, so that a
 * DequantizeLinear or a QLinear operator reading it checks that the params
 * it is given are those the tensor carries: a pair whose params differ
 * would mean a requantisation the model cannot say, and is refused naming
 * the node. A conv2d's or dense layer's per-output-channel weight scales
 * (symmetric int8: every zero point 0) are given with
 * memest_model_set_weight_scales, so that the static int8 path quantises
 * the float weights back to the file's int8 values exactly.
 */
#include "onnx/onnx_internal.h"
#include "onnx/fold.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../alloc_rec.h" /* last: it wraps malloc and co. */

enum {
    T_INT8 = ONNX__TENSOR_PROTO__DATA_TYPE__INT8,
    T_UINT8 = ONNX__TENSOR_PROTO__DATA_TYPE__UINT8,
    T_INT32 = ONNX__TENSOR_PROTO__DATA_TYPE__INT32,
    T_FLOAT = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT,
};

/* One (scale, zero point) operand pair of a node, checked: count 1 (per
 * tensor) or one per element along `axis` of the tensor quantised. */
struct qp {
    const struct cval *s; /* float scales */
    const struct cval *z; /* zero points, or NULL (all 0) */
    int type;             /* T_INT8, T_UINT8 or T_INT32 */
    uint64_t count;
    unsigned axis;        /* when count > 1 */
};

static int32_t qp_zero(const struct qp *p, uint64_t c)
{
    if (p->z == NULL) {
        return 0;
    }
    return (int32_t)p->z->ints[p->z->count == 1 ? 0 : c];
}

static float qp_scale(const struct qp *p, uint64_t c)
{
    return p->s->f[p->s->count == 1 ? 0 : c];
}

static const char *qtype_name(int t)
{
    return t == T_UINT8 ? "uint8" : t == T_INT8 ? "int8" : "int32";
}

/*
 * Read the scale (slot ss) and zero point (slot zs, optional) of a node
 * quantising a tensor of rank `rank` whose sizes are `dim` (dim[0] the
 * batch for a computed tensor: `per_axis_ok` 0 then). `type_default` is
 * the element type without a zero point (uint8 for QuantizeLinear, the
 * input's for DequantizeLinear); `allow32` lets an int32 (bias) through.
 * Refuses, naming the operand: a scale that is not float or not finite
 * and > 0, a zero point of another type or outside its type's range (an
 * int32's must be 0), per-axis scales whose count is not the axis size.
 */
static int read_qp(struct imp *I, size_t node, size_t ss, size_t zs,
                   const char *what, int type_default, int allow32,
                   unsigned rank, const uint64_t *dim, int per_axis_ok,
                   struct qp *p)
{
    const Onnx__NodeProto *n = I->g->node[node];
    const char *op = str(n->op_type);
    /* Quantize/DequantizeLinear's axis is an attribute (1 by default);
     * the QLinear operators' per-channel scales are along the output
     * channels: a QLinearConv weight's axis 0, a QLinearMatMul B's 1 */
    const int qdq = strncmp(op, "QLinear", 7) != 0;
    int64_t axis = qdq || strcmp(op, "QLinearMatMul") == 0 ? 1 : 0;
    int st;

    memset(p, 0, sizeof *p);
    if ((st = get_const(I, node, ss, "scale", &p->s))) {
        return st;
    }
    if (p->s->dtype != T_FLOAT) {
        return node_fail(I, node, MEMEST_E_PARSE,
                         "the %s scale is %s; only float is supported", what,
                         dtype_name(p->s->dtype));
    }
    if (in_name(n, zs)[0] != '\0') {
        if ((st = get_const(I, node, zs, "zero point", &p->z))) {
            return st;
        }
        p->type = p->z->dtype;
    } else {
        p->type = type_default;
    }
    if (p->type != T_INT8 && p->type != T_UINT8 &&
        !(allow32 && p->type == T_INT32)) {
        return node_fail(I, node, MEMEST_E_PARSE,
                         "the %s is %s; supported are int8 and uint8%s", what,
                         dtype_name(p->type),
                         allow32 ? " (int32 for a bias)" : "");
    }
    if (p->z != NULL && (p->z->ints == NULL || p->z->count != p->s->count)) {
        return node_fail(I, node, MEMEST_E_SHAPE,
                         "the %s has %llu zero points for %llu scales", what,
                         (unsigned long long)p->z->count,
                         (unsigned long long)p->s->count);
    }
    p->count = p->s->count;
    for (uint64_t c = 0; c < p->count; c++) {
        const float s = p->s->f[c];
        if (!isfinite(s) || !(s > 0.0f)) {
            return node_fail(I, node, MEMEST_E_RANGE,
                             "the %s scale %s%g is not finite and positive",
                             what, p->count > 1 ? "of a channel, " : "",
                             (double)s);
        }
    }
    for (uint64_t c = 0; p->z != NULL && c < p->count; c++) {
        const int64_t z = p->z->ints[c];
        const int64_t lo = p->type == T_UINT8 ? 0 : p->type == T_INT8 ? -128
                                                                      : 0;
        const int64_t hi = p->type == T_UINT8 ? 255 : p->type == T_INT8 ? 127
                                                                       : 0;
        if (z < lo || z > hi) {
            return node_fail(I, node, MEMEST_E_RANGE,
                             "the %s zero point %lld is out of range for "
                             "%s (%lld to %lld)", what, (long long)z,
                             qtype_name(p->type), (long long)lo,
                             (long long)hi);
        }
    }
    if (p->count == 1 && p->s->rank <= 1) {
        return MEMEST_OK;
    }
    /* per axis: a 1-D scale, one per element along `axis` */
    if (attr(n, "axis") != NULL &&
        (st = attr_int(I, node, "axis", 1, &axis))) {
        return st;
    }
    if (p->s->rank != 1) {
        return node_fail(I, node, MEMEST_E_SHAPE,
                         "the %s scale has rank %u; a scalar or a 1-D "
                         "tensor (per axis) is supported", what, p->s->rank);
    }
    if (!per_axis_ok) {
        return node_fail(I, node, MEMEST_E_PARSE,
                         "the %s has %llu scales: per-axis quantisation of "
                         "a computed tensor is not supported (only of a "
                         "constant)", what, (unsigned long long)p->count);
    }
    if (qdq && I->opset < 13) {
        return node_fail(I, node, MEMEST_E_PARSE,
                         "the %s has %llu scales: per-axis quantisation "
                         "needs opset 13 (the model imports %lld)", what,
                         (unsigned long long)p->count, (long long)I->opset);
    }
    if (axis < -(int64_t)rank || axis >= (int64_t)rank) {
        return node_fail(I, node, MEMEST_E_RANGE,
                         "axis %lld is outside the %s's rank %u",
                         (long long)axis, what, rank);
    }
    p->axis = (unsigned)(axis < 0 ? axis + (int64_t)rank : axis);
    if (dim[p->axis] != p->count) {
        return node_fail(I, node, MEMEST_E_SHAPE,
                         "the %s has %llu scales for axis %u of size %llu",
                         what, (unsigned long long)p->count, p->axis,
                         (unsigned long long)dim[p->axis]);
    }
    return MEMEST_OK;
}

/* The channel along p->axis of element i of a tensor of this shape. */
static uint64_t channel_of(const struct qp *p, unsigned rank,
                           const uint64_t *dim, uint64_t i)
{
    uint64_t inner = 1;
    if (p->count == 1) {
        return 0;
    }
    for (unsigned d = p->axis + 1; d < rank; d++) {
        inner *= dim[d];
    }
    return (i / inner) % dim[p->axis];
}

/* Per-tensor params as the model keeps them: the zero point in int8's
 * domain (a uint8's minus 128). */
static struct memest_quant to_quant(const struct qp *p)
{
    struct memest_quant q;
    q.scale = qp_scale(p, 0);
    q.zero_point = qp_zero(p, 0) - (p->type == T_UINT8 ? 128 : 0);
    q.is_unsigned = p->type == T_UINT8;
    return q;
}

static int quant_eq(const struct memest_quant *a, const struct memest_quant *b)
{
    return a->scale == b->scale && a->zero_point == b->zero_point &&
           a->is_unsigned == b->is_unsigned;
}

static void quant_text(const struct memest_quant *q, char *buf, size_t cap)
{
    snprintf(buf, cap, "scale %.9g, zero point %d (%s)", (double)q->scale,
             q->is_unsigned ? q->zero_point + 128 : q->zero_point,
             q->is_unsigned ? "uint8" : "int8");
}

/* Record params q for the float tensor x (the output of its layer, or a
 * model input); `why` names the node. A second, different record for
 * the same ONNX value is refused; a record for another value of the same
 * layer (an activation fused into it since) replaces the first. */
static int record(struct imp *I, size_t node, size_t x,
                  const struct memest_quant *q)
{
    struct value *v = &I->v[x];
    char a[96], b[96];
    if (v->layer != SIZE_MAX) {
        struct out_layer *L = &I->L[v->layer];
        if (L->has_quant && L->quant_value == x && !quant_eq(&L->quant, q)) {
            quant_text(&L->quant, a, sizeof a);
            quant_text(q, b, sizeof b);
            return node_fail(I, node, MEMEST_E_PARSE,
                             "'%.60s' is quantised twice, with %s and %s; "
                             "one tensor has one quantisation", v->name, a,
                             b);
        }
        L->has_quant = 1;
        L->quant = *q;
        L->quant_value = x;
        return MEMEST_OK;
    }
    if (v->model_input > 0) {
        struct value *in = &I->v[I->input_values[v->model_input - 1]];
        if (in->has_rec && !quant_eq(&in->rec, q)) {
            quant_text(&in->rec, a, sizeof a);
            quant_text(q, b, sizeof b);
            return node_fail(I, node, MEMEST_E_PARSE,
                             "the model input '%.60s' is quantised twice, "
                             "with %s and %s", in->name, a, b);
        }
        in->has_rec = 1;
        in->rec = *q;
        return MEMEST_OK;
    }
    return node_fail(I, node, MEMEST_E_PARSE,
                     "'%.60s' is made by no layer and is no model input",
                     v->name);
}

/* Output `slot` of node is an alias of value x (no layer): its shape,
 * layer and name, and the int8 params given (NULL: float). */
static int alias_output(struct imp *I, size_t node, size_t slot, size_t x,
                        const struct memest_quant *q)
{
    const Onnx__NodeProto *n = I->g->node[node];
    size_t out = slot < n->n_output ? value_of(I, str(n->output[slot]))
                                    : SIZE_MAX;
    struct value *o;
    if (out == SIZE_MAX) {
        return node_fail(I, node, MEMEST_E_PARSE, "the node has no output");
    }
    o = &I->v[out];
    o->shaped = 1;
    o->rank = I->v[x].rank;
    memcpy(o->dim, I->v[x].dim, sizeof o->dim);
    o->layer = I->v[x].layer;
    o->ref = I->v[x].ref;
    o->sig = I->v[x].sig;
    o->model_input = I->v[x].model_input;
    o->has_pad = 0;
    o->qtype = q == NULL ? 0 : q->is_unsigned ? 2 : 1;
    if (q != NULL) {
        o->q = *q;
    }
    return MEMEST_OK;
}

/* The computed int8 tensor in `slot` with the params of the slots after
 * it, which must be those it carries. */
static int read_q_input(struct imp *I, size_t node, size_t slot,
                        const char *what, size_t *x, struct memest_quant *q)
{
    struct qp p;
    char a[96], b[96];
    int st;
    if ((st = get_act(I, node, slot, x))) {
        return st;
    }
    if (I->v[*x].qtype == 0) {
        return node_fail(I, node, MEMEST_E_PARSE,
                         "the %s '%.60s' is a float tensor; an int8 or "
                         "uint8 one (from QuantizeLinear or a QLinear "
                         "operator) is needed", what, I->v[*x].name);
    }
    if ((st = read_qp(I, node, slot + 1, slot + 2, what, T_UINT8, 0,
                      I->v[*x].rank, I->v[*x].dim, 0, &p))) {
        return st;
    }
    *q = to_quant(&p);
    if (!quant_eq(q, &I->v[*x].q)) {
        quant_text(q, a, sizeof a);
        quant_text(&I->v[*x].q, b, sizeof b);
        return node_fail(I, node, MEMEST_E_PARSE,
                         "the %s's %s differ from those of '%.60s' (%s), "
                         "which made it", what, a, I->v[*x].name, b);
    }
    return MEMEST_OK;
}

int onnx_quantize(struct imp *I, size_t node)
{
    const Onnx__NodeProto *n = I->g->node[node];
    size_t x = 0;
    size_t out = n->n_output ? value_of(I, str(n->output[0])) : SIZE_MAX;
    struct qp p;
    struct memest_quant q;
    int st;

    if ((st = get_act(I, node, 0, &x))) {
        return st;
    }
    if (I->v[x].qtype != 0) {
        return node_fail(I, node, MEMEST_E_PARSE,
                         "its input '%.60s' is already quantised",
                         I->v[x].name);
    }
    if (out == I->output_value) {
        return node_fail(I, node, MEMEST_E_PARSE,
                         "its int8 output is the graph's output; only a "
                         "float output (after DequantizeLinear) is "
                         "supported");
    }
    if ((st = read_qp(I, node, 1, 2, "output", T_UINT8, 0, I->v[x].rank,
                      I->v[x].dim, 0, &p))) {
        return st;
    }
    q = to_quant(&p);
    if ((st = record(I, node, x, &q)) ||
        (st = alias_output(I, node, 0, x, &q))) {
        return st;
    }
    return MEMEST_OK;
}

int onnx_dequantize(struct imp *I, size_t node)
{
    const Onnx__NodeProto *n = I->g->node[node];
    size_t xq = 0;
    size_t out = n->n_output ? value_of(I, str(n->output[0])) : SIZE_MAX;
    struct memest_quant q;
    int st;

    if ((st = read_q_input(I, node, 0, "input", &xq, &q))) {
        return st;
    }
    if ((st = alias_output(I, node, 0, xq, NULL))) {
        return st;
    }
    /* no activation fuses into the layer behind the pair: the file
     * quantises that layer's output before the activation reads it, and
     * ONNX Runtime requantises the activation's result from those params,
     * rounding twice; a fused layer would round once and differ by a step
     * (try_fuse() takes only a value of one reader) */
    if (out != SIZE_MAX) {
        I->v[out].readers += 1;
    }
    if (out == I->output_value && I->v[out].layer == SIZE_MAX) {
        return node_fail(I, node, MEMEST_E_PARSE,
                         "the graph output is a model input");
    }
    return MEMEST_OK;
}

/* x quantised (QuantizeLinear's arithmetic: round half to even of x /
 * scale, plus the zero point, saturated). */
int fold_quantize(struct imp *I, size_t node, struct cval *c)
{
    const struct cval *x;
    struct qp p;
    int st;

    if ((st = get_const(I, node, 0, "input", &x))) {
        return st;
    }
    if (x->ints != NULL || x->nb != NULL) {
        return node_fail(I, node, MEMEST_E_PARSE,
                         "its input holds %s; QuantizeLinear reads float",
                         dtype_name(x->dtype));
    }
    if ((st = read_qp(I, node, 1, 2, "output", T_UINT8, 0, x->rank, x->dim,
                      1, &p)) ||
        (st = fold_new(I, node, c, x->rank, x->dim, 1, 0, p.type,
                       UINT64_MAX))) {
        return st;
    }
    for (uint64_t i = 0; i < x->count; i++) {
        const uint64_t ch = channel_of(&p, x->rank, x->dim, i);
        const float r = rintf(x->f[i] / qp_scale(&p, ch));
        const float lo = p.type == T_UINT8 ? 0.0f : -128.0f;
        const float hi = p.type == T_UINT8 ? 255.0f : 127.0f;
        float v = r + (float)qp_zero(&p, ch);
        v = v < lo ? lo : v > hi ? hi : v; /* NaN stays NaN: refused */
        if (isnan(v)) {
            return node_fail(I, node, MEMEST_E_RANGE,
                             "element %llu of its input is not a number",
                             (unsigned long long)i);
        }
        fold_set_int(c, i, (int64_t)v, 0);
    }
    return MEMEST_OK;
}

/* A constant dequantised: (q - zero point) * scale in float, as ONNX
 * Runtime computes it. */
int fold_dequantize(struct imp *I, size_t node, struct cval *c)
{
    const struct cval *x;
    struct qp p;
    int st;

    if ((st = get_const(I, node, 0, "input", &x))) {
        return st;
    }
    if (x->dtype != T_INT8 && x->dtype != T_UINT8 && x->dtype != T_INT32) {
        return node_fail(I, node, MEMEST_E_PARSE,
                         "its input holds %s; supported are int8, uint8 "
                         "and int32 (a bias)", dtype_name(x->dtype));
    }
    if ((st = read_qp(I, node, 1, 2, "input", x->dtype, 1, x->rank, x->dim,
                      1, &p))) {
        return st;
    }
    if (p.type != x->dtype) {
        return node_fail(I, node, MEMEST_E_PARSE,
                         "its input holds %s and its zero point %s",
                         dtype_name(x->dtype), dtype_name(p.type));
    }
    if ((st = fold_new(I, node, c, x->rank, x->dim, 0, 0, T_FLOAT,
                       UINT64_MAX))) {
        return st;
    }
    for (uint64_t i = 0; i < x->count; i++) {
        const uint64_t ch = channel_of(&p, x->rank, x->dim, i);
        c->owned[i] = (float)(x->ints[i] - qp_zero(&p, ch)) * qp_scale(&p, ch);
    }
    return MEMEST_OK;
}

/* The weight of a QLinear operator (slot ws, scale and zero point after
 * it), dequantised into *out (malloc) with its out-channel scales into
 * *scales (malloc, `outs` of them along axis `out_axis`; NULL when the
 * weights are not symmetric int8, which the static path then quantises
 * itself). */
static int qlinear_weight(struct imp *I, size_t node, size_t ws,
                          unsigned out_axis, const struct cval **W,
                          float **out, float **scales, uint64_t *outs,
                          float **ch_scale)
{
    struct qp p;
    int symmetric;
    int st;

    *out = NULL;
    *scales = NULL;
    *ch_scale = NULL;
    if ((st = get_const(I, node, ws, "weight", W))) {
        return st;
    }
    if ((*W)->dtype != T_INT8 && (*W)->dtype != T_UINT8) {
        return node_fail(I, node, MEMEST_E_PARSE,
                         "the weight holds %s; supported are int8 and uint8",
                         dtype_name((*W)->dtype));
    }
    if ((*W)->rank <= out_axis) {
        return node_fail(I, node, MEMEST_E_SHAPE,
                         "the weight has rank %u", (*W)->rank);
    }
    if ((st = read_qp(I, node, ws + 1, ws + 2, "weight", (*W)->dtype, 0,
                      (*W)->rank, (*W)->dim, 1, &p))) {
        return st;
    }
    if (p.count > 1 && p.axis != out_axis) {
        return node_fail(I, node, MEMEST_E_PARSE,
                         "the weight's scales are along axis %u; only per "
                         "output channel (axis %u) is supported", p.axis,
                         out_axis);
    }
    *outs = (*W)->dim[out_axis];
    *out = malloc((size_t)((*W)->count ? (*W)->count : 1) * sizeof **out);
    *ch_scale = malloc((size_t)*outs * sizeof **ch_scale);
    if (*out == NULL || *ch_scale == NULL) {
        free(*out);
        free(*ch_scale);
        *out = NULL;
        *ch_scale = NULL;
        return nomem(I);
    }
    symmetric = p.type == T_INT8;
    for (uint64_t c = 0; c < *outs; c++) {
        (*ch_scale)[c] = qp_scale(&p, c);
        symmetric &= qp_zero(&p, c) == 0;
    }
    for (uint64_t i = 0; i < (*W)->count; i++) {
        const uint64_t ch = channel_of(&p, (*W)->rank, (*W)->dim, i);
        (*out)[i] = (float)((*W)->ints[i] - qp_zero(&p, ch)) *
                    qp_scale(&p, ch);
    }
    if (symmetric) {
        *scales = malloc((size_t)*outs * sizeof **scales);
        if (*scales == NULL) {
            free(*out);
            free(*ch_scale);
            *out = NULL;
            *ch_scale = NULL;
            return nomem(I);
        }
        memcpy(*scales, *ch_scale, (size_t)*outs * sizeof **scales);
    }
    return MEMEST_OK;
}

/* Record the output params and weight scales on layer of value out. */
static int qlinear_finish(struct imp *I, size_t node, size_t ys,
                          float *scales, uint64_t n)
{
    const Onnx__NodeProto *n_ = I->g->node[node];
    size_t out = value_of(I, str(n_->output[0]));
    struct qp p;
    struct memest_quant q;
    int st;

    if (out == SIZE_MAX || I->v[out].layer == SIZE_MAX) {
        free(scales);
        return node_fail(I, node, MEMEST_E_PARSE, "the node has no output");
    }
    if ((st = read_qp(I, node, ys, ys + 1, "output", T_UINT8, 0,
                      I->v[out].rank, I->v[out].dim, 0, &p))) {
        free(scales);
        return st;
    }
    if (out == I->output_value) {
        free(scales);
        return node_fail(I, node, MEMEST_E_PARSE,
                         "its int8 output is the graph's output; only a "
                         "float output (after DequantizeLinear) is "
                         "supported");
    }
    q = to_quant(&p);
    if ((st = record(I, node, out, &q))) {
        free(scales);
        return st;
    }
    I->v[out].qtype = q.is_unsigned ? 2 : 1;
    I->v[out].q = q;
    if (scales != NULL) {
        struct out_layer *L = &I->L[I->v[out].layer];
        free(L->wscales);
        L->wscales = scales;
        L->nwscales = (size_t)n;
    }
    return MEMEST_OK;
}

/* QLinearConv(x, x_scale, x_zp, w, w_scale, w_zp, y_scale, y_zp, B) */
int onnx_qlinearconv(struct imp *I, size_t node)
{
    const Onnx__NodeProto *n = I->g->node[node];
    const struct cval *W = NULL;
    const struct cval *Bq = NULL;
    struct cval wc, bc;
    struct memest_quant xq;
    float *w = NULL, *scales = NULL, *chs = NULL, *b = NULL;
    uint64_t outs = 0;
    size_t x = 0;
    int st;

    if ((st = read_q_input(I, node, 0, "input", &x, &xq)) ||
        (st = qlinear_weight(I, node, 3, 0, &W, &w, &scales, &outs, &chs))) {
        return st;
    }
    if (in_name(n, 8)[0] != '\0') {
        if ((st = get_const(I, node, 8, "bias", &Bq))) {
            goto fail;
        }
        if (Bq->dtype != T_INT32 || Bq->rank != 1 || Bq->count != outs) {
            st = node_fail(I, node, MEMEST_E_SHAPE,
                           "the bias must be int32 with one value per "
                           "output channel (%llu); it is %s with %llu",
                           (unsigned long long)outs, dtype_name(Bq->dtype),
                           (unsigned long long)Bq->count);
            goto fail;
        }
        b = malloc((size_t)(outs ? outs : 1) * sizeof *b);
        if (b == NULL) {
            st = nomem(I);
            goto fail;
        }
        /* ONNX's definition: the bias is quantised with scale x_scale *
         * w_scale and zero point 0 */
        for (uint64_t c = 0; c < outs; c++) {
            b[c] = (float)Bq->ints[c] * (xq.scale * chs[c]);
        }
    }
    wc = *W;
    wc.f = w;
    wc.owned = NULL;
    wc.ints = NULL;
    if (Bq != NULL) {
        bc = *Bq;
        bc.f = b;
        bc.owned = NULL;
        bc.ints = NULL;
    }
    free(chs);
    chs = NULL;
    st = conv_emit(I, node, x, &wc, Bq ? &bc : NULL, w, b);
    w = NULL;
    b = NULL;
    if (st != MEMEST_OK) {
        goto fail;
    }
    return qlinear_finish(I, node, 6, scales, outs);
fail:
    free(w);
    free(b);
    free(chs);
    free(scales);
    return st;
}

/* QLinearMatMul(a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp) with a
 * constant b: a dense layer without bias */
int onnx_qlinearmatmul(struct imp *I, size_t node)
{
    const struct cval *B = NULL;
    struct cval wc;
    struct memest_quant xq;
    float *w = NULL, *scales = NULL, *chs = NULL;
    uint64_t outs = 0;
    size_t x = 0;
    int st;

    if ((st = read_q_input(I, node, 0, "input A", &x, &xq)) ||
        (st = need_rank(I, node, &I->v[x], 2, "NxK (a batch of vectors)"))) {
        return st;
    }
    if ((st = get_const(I, node, 3, "weight B", &B))) {
        return st;
    }
    if (B->rank != 2) {
        return node_fail(I, node, MEMEST_E_SHAPE,
                         "the weight B has rank %u, not 2", B->rank);
    }
    if ((st = qlinear_weight(I, node, 3, 1, &B, &w, &scales, &outs, &chs))) {
        return st;
    }
    free(chs);
    wc = *B;
    wc.f = w;
    wc.owned = NULL;
    wc.ints = NULL;
    /* emit_dense() copies a [k][m] weight into its own [m][k] */
    st = emit_dense(I, node, x, &wc, 1, 1.0, NULL, NULL);
    free(w);
    if (st != MEMEST_OK) {
        free(scales);
        return st;
    }
    return qlinear_finish(I, node, 6, scales, outs);
}

/* com.microsoft's QLinearAdd(A, A_scale, A_zp, B, B_scale, B_zp,
 * C_scale, C_zp) of two computed tensors */
int onnx_qlinearadd(struct imp *I, size_t node)
{
    struct memest_quant qa, qb;
    size_t xs[2] = {0, 0};
    int st;

    if ((st = read_q_input(I, node, 0, "input A", &xs[0], &qa)) ||
        (st = read_q_input(I, node, 3, "input B", &xs[1], &qb)) ||
        (st = emit_two(I, node, "add", xs))) {
        return st;
    }
    return qlinear_finish(I, node, 6, NULL, 0);
}

/* The operators that may read an int8 tensor as it is, their output
 * keeping its params (a view, or a max of values on one scale). */
static const char *const keeps_params[] = {"Flatten", "Identity", "MaxPool",
                                           "Reshape", "Squeeze", "Unsqueeze"};

int quant_check_reader(struct imp *I, size_t node, int *keeps)
{
    const Onnx__NodeProto *n = I->g->node[node];
    const char *op = str(n->op_type);
    size_t first = SIZE_MAX;

    *keeps = 0;
    if (strcmp(op, "DequantizeLinear") == 0 ||
        strncmp(op, "QLinear", 7) == 0) {
        return MEMEST_OK;
    }
    for (size_t i = 0; i < n->n_input; i++) {
        size_t vi = value_of(I, str(n->input[i]));
        if (vi != SIZE_MAX && I->v[vi].kind == V_ACT && I->v[vi].qtype) {
            first = vi;
            break;
        }
    }
    if (first == SIZE_MAX) {
        return MEMEST_OK;
    }
    for (size_t k = 0; k < sizeof keeps_params / sizeof *keeps_params; k++) {
        if (strcmp(op, keeps_params[k]) == 0 &&
            value_of(I, in_name(n, 0)) == first) {
            *keeps = 1;
            return MEMEST_OK;
        }
    }
    return node_fail(I, node, MEMEST_E_PARSE,
                     "it reads the int8 tensor '%.60s'; an int8 tensor is "
                     "read by DequantizeLinear, the QLinear operators, "
                     "MaxPool, Flatten, Reshape, Squeeze, Unsqueeze and "
                     "Identity", I->v[first].name);
}

int quant_keep(struct imp *I, size_t node)
{
    const Onnx__NodeProto *n = I->g->node[node];
    size_t x = value_of(I, in_name(n, 0));
    size_t out = n->n_output ? value_of(I, str(n->output[0])) : SIZE_MAX;
    int st;
    if (x == SIZE_MAX || out == SIZE_MAX) {
        return node_fail(I, node, MEMEST_E_PARSE, "the node has no output");
    }
    if (out == I->output_value) {
        return node_fail(I, node, MEMEST_E_PARSE,
                         "its int8 output is the graph's output; only a "
                         "float output (after DequantizeLinear) is "
                         "supported");
    }
    I->v[out].qtype = I->v[x].qtype;
    I->v[out].q = I->v[x].q;
    if (I->v[out].layer != I->v[x].layer &&
        (st = record(I, node, out, &I->v[x].q))) {
        return st;
    }
    return MEMEST_OK;
}

int quant_domain_ok(const char *domain, const char *op_type)
{
    return strcmp(domain, "com.microsoft") == 0 &&
           strcmp(op_type, "QLinearAdd") == 0;
}

/* The model layer the text layer `name` became (a folded batch norm's
 * name is its conv's layer), or SIZE_MAX. */
/* The model's layers by name, and by the name of a batch norm folded into
 * one: the lowest index for each, as a scan would find it, in one pass
 * (a lookup per layer would make quant_apply quadratic in layers). */
static int layer_index(const memest_model *m, struct strmap *out)
{
    for (size_t i = 0; i < memest_model_layer_count(m); i++) {
        const struct memest_layer *L = memest_model_layer(m, i);
        if (strmap_get(out, L->name) == SIZE_MAX &&
            strmap_put(out, L->name, i) != MEMEST_OK) {
            return MEMEST_E_NOMEM;
        }
        if (L->folded_bn != NULL && strmap_get(out, L->folded_bn) == SIZE_MAX &&
            strmap_put(out, L->folded_bn, i) != MEMEST_OK) {
            return MEMEST_E_NOMEM;
        }
    }
    return MEMEST_OK;
}

/*
 * The weight scales of a Conv, Gemm or MatMul whose weight is a folded
 * DequantizeLinear of symmetric int8 (every zero point 0): one per output
 * channel (a per-tensor scale repeated), into *out (malloc, n of them);
 * *out NULL when the weight is not such (the static path then quantises
 * the float weights itself).
 */
static int qdq_weight_scales(struct imp *I, size_t node, uint64_t units,
                             float **out)
{
    const Onnx__NodeProto *n = I->g->node[node];
    const char *op = str(n->op_type);
    size_t wv = value_of(I, in_name(n, 1));
    size_t dq;
    const struct cval *x;
    unsigned out_axis;
    int64_t tb = 0;
    double alpha = 1.0;
    struct qp p;
    int st;

    *out = NULL;
    if (wv == SIZE_MAX || I->v[wv].kind != V_CONST ||
        I->v[wv].producer == SIZE_MAX) {
        return MEMEST_OK;
    }
    dq = I->v[wv].producer;
    if (!str_eq(I->g->node[dq]->op_type, "DequantizeLinear")) {
        return MEMEST_OK;
    }
    if (strcmp(op, "Conv") == 0) {
        out_axis = 0;
    } else if (strcmp(op, "Gemm") == 0) {
        if ((st = attr_int(I, node, "transB", 0, &tb)) ||
            (st = attr_float(I, node, "alpha", 1.0, &alpha))) {
            return st;
        }
        if (alpha != 1.0) {
            return MEMEST_OK; /* the weights are scaled by alpha */
        }
        out_axis = tb ? 0 : 1;
    } else if (strcmp(op, "MatMul") == 0) {
        out_axis = 1;
    } else {
        return MEMEST_OK;
    }
    if ((st = get_const(I, dq, 0, "input", &x)) ||
        (st = read_qp(I, dq, 1, 2, "input", x->dtype, 1, x->rank, x->dim, 1,
                      &p))) {
        return st;
    }
    if (p.type != T_INT8 || x->rank <= out_axis ||
        x->dim[out_axis] != units || (p.count > 1 && p.axis != out_axis)) {
        return MEMEST_OK;
    }
    for (uint64_t c = 0; c < p.count; c++) {
        if (qp_zero(&p, c) != 0) {
            return MEMEST_OK;
        }
    }
    *out = malloc((size_t)(units ? units : 1) * sizeof **out);
    if (*out == NULL) {
        return nomem(I);
    }
    for (uint64_t c = 0; c < units; c++) {
        (*out)[c] = qp_scale(&p, c);
    }
    return MEMEST_OK;
}

/* The view kinds whose output keeps its input's params when the file
 * gives the output none (ONNX Runtime's quantizer shares one scale
 * across them). */
static int keeps_input_params(enum memest_kind k)
{
    return k == MEMEST_KIND_FLATTEN || k == MEMEST_KIND_RESHAPE ||
           k == MEMEST_KIND_IDENTITY || k == MEMEST_KIND_DROPOUT ||
           k == MEMEST_KIND_MAXPOOL;
}

/* quant_apply()'s layers: each output's params and each conv2d's or
 * dense layer's weight scales; *any when some params were set. */
static int quant_layers(struct imp *I, memest_model *m,
                        const struct strmap *byname, size_t ni, int *any)
{
    int st;
    for (size_t l = 0; l < I->nl; l++) {
        const struct out_layer *L = &I->L[l];
        const size_t ml = strmap_get(byname, L->name);
        const struct memest_layer *ML = memest_model_layer(m, ml);
        float *scales = NULL;
        if (ML == NULL) {
            continue;
        }
        if (L->has_quant) {
            *any = 1;
            if ((st = memest_model_set_tensor_quant(m, ni + ml,
                                                    &L->quant))) {
                return node_fail(I, L->node, st, "the params of its "
                                 "output are refused");
            }
        }
        if (ML->kind != MEMEST_KIND_CONV2D && ML->kind != MEMEST_KIND_DENSE) {
            continue;
        }
        /* a folded batch norm changed the weights: the file's scales no
         * longer give them */
        if (ML->folded_bn != NULL) {
            continue;
        }
        if (L->wscales != NULL) {
            st = memest_model_set_weight_scales(m, ml, L->wscales,
                                                L->nwscales);
        } else {
            if ((st = qdq_weight_scales(I, L->node, ML->units, &scales))) {
                return st;
            }
            st = scales == NULL ? MEMEST_OK
                                : memest_model_set_weight_scales(
                                      m, ml, scales, (size_t)ML->units);
            free(scales);
        }
        if (st != MEMEST_OK) {
            return node_fail(I, L->node, st, "its weight scales are "
                             "refused");
        }
    }
    return MEMEST_OK;
}

int quant_apply(struct imp *I, memest_model *m)
{
    const size_t ni = memest_model_input_count(m);
    int any = 0;
    int st;

    for (size_t k = 0; k < I->ninputs && k < ni; k++) {
        const struct value *v = &I->v[I->input_values[k]];
        if (v->has_rec) {
            any = 1;
            if ((st = memest_model_set_tensor_quant(m, k, &v->rec))) {
                return diag_fail(I->diag, st, "the params of the model "
                                 "input '%.60s' are refused", v->name);
            }
        }
    }
    struct strmap byname = {NULL, NULL, 0, 0};
    st = layer_index(m, &byname);
    if (st != MEMEST_OK) {
        strmap_free(&byname);
        return nomem(I);
    }
    st = quant_layers(I, m, &byname, ni, &any);
    strmap_free(&byname);
    if (st != MEMEST_OK) {
        return st;
    }
    if (!any) {
        return MEMEST_OK;
    }
    /* views and max pools the file left without params share their
     * input's (in order: a chain of them takes the first's) */
    for (size_t i = 0; i < memest_model_layer_count(m); i++) {
        const struct memest_layer *L = memest_model_layer(m, i);
        struct memest_quant q;
        if (!keeps_input_params(L->kind) || L->input_count != 1 ||
            memest_model_tensor_quant(m, ni + i, &q) == MEMEST_OK ||
            memest_model_tensor_quant(m, L->inputs[0], &q) != MEMEST_OK) {
            continue;
        }
        if ((st = memest_model_set_tensor_quant(m, ni + i, &q))) {
            return diag_fail(I->diag, st, "layer '%.60s': params refused",
                             L->name);
        }
    }
    return MEMEST_OK;
}
