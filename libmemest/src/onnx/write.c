/*
 * ONNX export: the builder of the ModelProto and the entry point
 * memest_model_to_onnx(). The layers are written in execution order by
 * the rows of write_ops.c; this file gives them nodes, attributes,
 * initializers and names, writes the graph's inputs and output, and packs
 * the message with protobuf-c.
 *
 * Names: a layer's output tensor and its main node carry the layer's
 * name, so that the importer (which names layers after nodes) gives the
 * names back; helper nodes and constants are "<layer>/<what>", which no
 * layer name can be (the text format's names have no '/').
 */
#include "onnx/write.h"

#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../alloc_rec.h" /* last: it wraps malloc and co. */

/* ONNX's IR version 7 is the one of opset 13 (ONNX 1.8). */
#define WR_IR_VERSION 7
#define WR_OPSET 13
/* Protocol buffers cannot encode a message over 2 GiB. */
#define WR_MAX_BYTES ((size_t)2 * 1024 * 1024 * 1024 - 1)

static int grow(void **arr, size_t *cap, size_t n, size_t elem)
{
    size_t c;
    void *g;
    if (n < *cap) {
        return 1;
    }
    c = *cap ? *cap * 2 : 64;
    g = realloc(*arr, c * elem);
    if (g == NULL) {
        return 0;
    }
    *arr = g;
    *cap = c;
    return 1;
}

void *wr_alloc(struct wr *w, size_t size)
{
    void *p;
    if (!grow((void **)&w->blocks, &w->capblocks, w->nblocks,
              sizeof *w->blocks)) {
        return NULL;
    }
    p = calloc(1, size ? size : 1);
    if (p != NULL) {
        w->blocks[w->nblocks++] = p;
    }
    return p;
}

static uint64_t hash_name(const char *s)
{
    return memest_hash_bytes(s, strlen(s));
}

static int name_taken(const struct wr *w, const char *s)
{
    if (w->names_cap == 0) {
        return 0;
    }
    for (size_t i = (size_t)hash_name(s) & (w->names_cap - 1);
         w->names[i] != NULL; i = (i + 1) & (w->names_cap - 1)) {
        if (strcmp(w->names[i], s) == 0) {
            return 1;
        }
    }
    return 0;
}

int wr_claim(struct wr *w, const char *name)
{
    size_t i;
    if (2 * (w->names_n + 1) > w->names_cap) {
        size_t cap = w->names_cap ? w->names_cap * 2 : 256;
        const char **g = calloc(cap, sizeof *g);
        if (g == NULL) {
            return 0;
        }
        for (size_t k = 0; k < w->names_cap; k++) {
            if (w->names[k] != NULL) {
                size_t j = (size_t)hash_name(w->names[k]) & (cap - 1);
                while (g[j] != NULL) {
                    j = (j + 1) & (cap - 1);
                }
                g[j] = w->names[k];
            }
        }
        free(w->names);
        w->names = g;
        w->names_cap = cap;
    }
    for (i = (size_t)hash_name(name) & (w->names_cap - 1);
         w->names[i] != NULL; i = (i + 1) & (w->names_cap - 1)) {
        if (strcmp(w->names[i], name) == 0) {
            return 1;
        }
    }
    w->names[i] = name;
    w->names_n++;
    return 1;
}

char *wr_name(struct wr *w, const char *fmt, ...)
{
    va_list ap;
    int n;
    char *s;

    va_start(ap, fmt);
    n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    /* room for "~" and a counter */
    if (n < 0 || (s = wr_alloc(w, (size_t)n + 24)) == NULL) {
        return NULL;
    }
    va_start(ap, fmt);
    vsnprintf(s, (size_t)n + 1, fmt, ap);
    va_end(ap);
    for (unsigned k = 1; name_taken(w, s); k++) {
        snprintf(s + n, 24, "~%u", k);
    }
    return wr_claim(w, s) ? s : NULL;
}

int wr_fail(struct wr *w, int status, const char *fmt, ...)
{
    const struct memest_layer *L = memest_model_layer(w->m, w->layer);
    char msg[sizeof w->diag->message];
    va_list ap;

    if (w->diag == NULL) {
        return status;
    }
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (L != NULL) {
        snprintf(w->diag->message, sizeof w->diag->message,
                 "layer '%.60s' (%s): %.160s", L->name,
                 memest_kind_name(L->kind), msg);
        w->diag->line = L->line;
    } else {
        snprintf(w->diag->message, sizeof w->diag->message, "%.200s", msg);
        w->diag->line = 0;
    }
    w->diag->column = 0;
    return status;
}

static int nomem(struct wr *w)
{
    if (w->diag != NULL) {
        snprintf(w->diag->message, sizeof w->diag->message,
                 "out of memory: writing the ONNX model (%zu bytes)",
                 memest_nomem_last);
    }
    return MEMEST_E_NOMEM;
}

Onnx__NodeProto *wr_node(struct wr *w, const char *op_type, const char *name,
                         size_t nin, const char *const *in, size_t nout,
                         const char *const *out)
{
    Onnx__NodeProto *n = wr_alloc(w, sizeof *n);
    char **ins = wr_alloc(w, (nin ? nin : 1) * sizeof *ins);
    char **outs = wr_alloc(w, (nout ? nout : 1) * sizeof *outs);

    if (n == NULL || ins == NULL || outs == NULL ||
        !grow((void **)&w->nodes, &w->capn, w->nn, sizeof *w->nodes)) {
        return NULL;
    }
    onnx__node_proto__init(n);
    /* the strings are the writer's or the model's, alive until packing */
    for (size_t i = 0; i < nin; i++) {
        ins[i] = (char *)in[i];
    }
    for (size_t i = 0; i < nout; i++) {
        outs[i] = (char *)out[i];
    }
    n->n_input = nin;
    n->input = ins;
    n->n_output = nout;
    n->output = outs;
    n->name = (char *)name;
    n->op_type = (char *)op_type;
    w->nodes[w->nn++] = n;
    return n;
}

static Onnx__AttributeProto *add_attr(struct wr *w, Onnx__NodeProto *n,
                                      const char *name,
                                      Onnx__AttributeProto__AttributeType t)
{
    Onnx__AttributeProto *a = wr_alloc(w, sizeof *a);
    Onnx__AttributeProto **list =
        wr_alloc(w, (n->n_attribute + 1) * sizeof *list);
    if (a == NULL || list == NULL) {
        return NULL;
    }
    onnx__attribute_proto__init(a);
    a->name = (char *)name;
    a->has_type = 1;
    a->type = t;
    if (n->n_attribute) {
        memcpy(list, n->attribute, n->n_attribute * sizeof *list);
    }
    list[n->n_attribute++] = a;
    n->attribute = list;
    return a;
}

int wr_attr_int(struct wr *w, Onnx__NodeProto *n, const char *name,
                int64_t v)
{
    Onnx__AttributeProto *a =
        add_attr(w, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
    if (a == NULL) {
        return nomem(w);
    }
    a->has_i = 1;
    a->i = v;
    return MEMEST_OK;
}

int wr_attr_ints(struct wr *w, Onnx__NodeProto *n, const char *name,
                 size_t count, const int64_t *v)
{
    Onnx__AttributeProto *a =
        add_attr(w, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
    int64_t *copy = wr_alloc(w, count * sizeof *copy);
    if (a == NULL || copy == NULL) {
        return nomem(w);
    }
    memcpy(copy, v, count * sizeof *copy);
    a->n_ints = count;
    a->ints = copy;
    return MEMEST_OK;
}

int wr_attr_float(struct wr *w, Onnx__NodeProto *n, const char *name,
                  float v)
{
    Onnx__AttributeProto *a =
        add_attr(w, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);
    if (a == NULL) {
        return nomem(w);
    }
    a->has_f = 1;
    a->f = v;
    return MEMEST_OK;
}

int wr_attr_str(struct wr *w, Onnx__NodeProto *n, const char *name,
                const char *v)
{
    Onnx__AttributeProto *a =
        add_attr(w, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
    if (a == NULL) {
        return nomem(w);
    }
    a->has_s = 1;
    a->s.data = (uint8_t *)v;
    a->s.len = strlen(v);
    return MEMEST_OK;
}

/* A tensor of `count` elements with its dims; the data is the caller's. */
static Onnx__TensorProto *new_init(struct wr *w, const char *name,
                                   int32_t type, unsigned rank,
                                   const uint64_t *dim, uint64_t *count)
{
    Onnx__TensorProto *t = wr_alloc(w, sizeof *t);
    int64_t *dims = wr_alloc(w, (rank ? rank : 1) * sizeof *dims);
    uint64_t n = 1;

    if (t == NULL || dims == NULL ||
        !grow((void **)&w->inits, &w->capi, w->ni, sizeof *w->inits)) {
        return NULL;
    }
    onnx__tensor_proto__init(t);
    for (unsigned d = 0; d < rank; d++) {
        dims[d] = (int64_t)dim[d];
        n *= dim[d]; /* a layer's sizes, checked when it was built */
    }
    t->n_dims = rank;
    t->dims = dims;
    t->has_data_type = 1;
    t->data_type = type;
    t->name = (char *)name;
    w->inits[w->ni++] = t;
    *count = n;
    return t;
}

int wr_init_f32(struct wr *w, const char *name, unsigned rank,
                const uint64_t *dim, const float *data)
{
    uint64_t n = 0;
    Onnx__TensorProto *t = new_init(
        w, name, ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, rank, dim, &n);
    float *copy = t ? wr_alloc(w, (size_t)n * sizeof *copy) : NULL;
    if (copy == NULL) {
        return nomem(w);
    }
    memcpy(copy, data, (size_t)n * sizeof *copy);
    t->n_float_data = (size_t)n;
    t->float_data = copy;
    return MEMEST_OK;
}

int wr_init_i64(struct wr *w, const char *name, unsigned rank,
                const uint64_t *dim, const int64_t *data)
{
    uint64_t n = 0;
    Onnx__TensorProto *t = new_init(
        w, name, ONNX__TENSOR_PROTO__DATA_TYPE__INT64, rank, dim, &n);
    int64_t *copy = t ? wr_alloc(w, (size_t)n * sizeof *copy) : NULL;
    if (copy == NULL) {
        return nomem(w);
    }
    memcpy(copy, data, (size_t)n * sizeof *copy);
    t->n_int64_data = (size_t)n;
    t->int64_data = copy;
    return MEMEST_OK;
}

int wr_init_int(struct wr *w, const char *name, int32_t type, unsigned rank,
                const uint64_t *dim, const int32_t *data)
{
    uint64_t n = 0;
    Onnx__TensorProto *t = new_init(w, name, type, rank, dim, &n);
    int32_t *copy = t ? wr_alloc(w, (size_t)n * sizeof *copy) : NULL;
    if (copy == NULL) {
        return nomem(w);
    }
    memcpy(copy, data, (size_t)n * sizeof *copy);
    t->n_int32_data = (size_t)n;
    t->int32_data = copy;
    return MEMEST_OK;
}

int wr_scalar(struct wr *w, const char *what, float v, const char **out)
{
    const struct memest_layer *L = memest_model_layer(w->m, w->layer);
    char *name = wr_name(w, "%s/%s", L->name, what);
    if (name == NULL) {
        return nomem(w);
    }
    *out = name;
    return wr_init_f32(w, name, 0, NULL, &v);
}

/* The per-output-channel scales of layer L's weight in QDQ: the model's
 * (memest_model_weight_scales), else max|w_c| / 127 (ONNX Runtime's and
 * TFLite's symmetric int8); a channel of zeros gets 1, any scale
 * dequantising it to zeros. NULL when out of memory. */
static const float *weight_scales(struct wr *w, const struct memest_layer *L)
{
    size_t n = 0;
    const float *given = memest_model_weight_scales(w->m, w->layer, &n);
    const uint64_t per = L->weight_count / L->units;
    float *s;
    if (given != NULL && n == L->units) {
        return given;
    }
    if ((s = wr_alloc(w, (size_t)L->units * sizeof *s)) == NULL) {
        return NULL;
    }
    for (uint64_t c = 0; c < L->units; c++) {
        float m = 0.0f;
        for (uint64_t k = 0; k < per; k++) {
            m = fmaxf(m, fabsf(L->weight[c * per + k]));
        }
        s[c] = m > 0.0f ? m / 127.0f : 1.0f;
    }
    return s;
}

/* Whether layer L's weight is written as int8 in QDQ: the kinds whose
 * weight's first axis is the output channel and that carry weight scales
 * (conv2d and dense); other parameters stay float, as ONNX Runtime's
 * quantizer leaves them. */
static int quantised_weight(const struct wr *w, const struct memest_layer *L)
{
    return w->quant && (L->kind == MEMEST_KIND_CONV2D ||
                        L->kind == MEMEST_KIND_DENSE);
}

/* A DequantizeLinear(q, scale, zero point; axis 0) into `out`. */
static int dequant(struct wr *w, const char *q, const char *scale,
                   const char *zp, const char *out, const char *name,
                   int per_axis)
{
    const char *in[3] = {q, scale, zp};
    Onnx__NodeProto *n = wr_node(w, "DequantizeLinear", name, 3, in, 1, &out);
    if (n == NULL) {
        return nomem(w);
    }
    return per_axis ? wr_attr_int(w, n, "axis", 0) : MEMEST_OK;
}

/* A float quotient rounded half to even, as ONNX Runtime's quantizer
 * computes in float32 (numpy) and the executor's static int8 does: the
 * same bits whichever reads the model. */
static double round_quotient(float num, float den)
{
    return (double)nearbyintf(num / den);
}

int wr_weight(struct wr *w, const struct memest_layer *L, const char *suffix,
              unsigned rank, const uint64_t *dim, const float *data,
              const char **out)
{
    char *name = wr_name(w, "%s.%s", L->name, suffix);
    const float *sc;
    char *qn, *sn, *zn;
    int32_t *q, *zeros;
    uint64_t cdim[1] = {L->units};
    uint64_t per, count = 1;
    int st;

    if (name == NULL) {
        return nomem(w);
    }
    *out = name;
    if (!quantised_weight(w, L) || strcmp(suffix, "weight") != 0) {
        return wr_init_f32(w, name, rank, dim, data);
    }
    for (unsigned d = 0; d < rank; d++) {
        count *= dim[d];
    }
    per = count / L->units;
    sc = weight_scales(w, L);
    qn = wr_name(w, "%s_quantized", name);
    sn = wr_name(w, "%s_scale", name);
    zn = wr_name(w, "%s_zero_point", name);
    q = wr_alloc(w, (size_t)count * sizeof *q);
    zeros = wr_alloc(w, (size_t)L->units * sizeof *zeros);
    if (sc == NULL || qn == NULL || sn == NULL || zn == NULL || q == NULL ||
        zeros == NULL) {
        return nomem(w);
    }
    for (uint64_t c = 0; c < L->units; c++) {
        for (uint64_t k = 0; k < per; k++) {
            double v = round_quotient(data[c * per + k], sc[c]);
            /* symmetric: [-127, 127] */
            q[c * per + k] = (int32_t)(v < -127.0 ? -127.0
                                       : v > 127.0 ? 127.0 : v);
        }
    }
    if ((st = wr_init_int(w, qn, ONNX__TENSOR_PROTO__DATA_TYPE__INT8, rank,
                          dim, q)) ||
        (st = wr_init_f32(w, sn, 1, cdim, sc)) ||
        (st = wr_init_int(w, zn, ONNX__TENSOR_PROTO__DATA_TYPE__INT8, 1, cdim,
                          zeros))) {
        return st;
    }
    return dequant(w, qn, sn, zn, name, wr_name(w, "%s_DequantizeLinear",
                                                 name), 1);
}

int wr_bias(struct wr *w, const struct memest_layer *L, const float *data,
            const char **out)
{
    uint64_t dim[1] = {L->bias_count};
    struct memest_quant xq;
    const float *sc;
    char *name, *qn, *sn, *zn;
    float *bs;
    int32_t *q, *zeros;
    int st;

    if (!quantised_weight(w, L)) {
        return wr_weight(w, L, "bias", 1, dim, data, out);
    }
    /* int32 with scale x_scale * w_scale[c], zero point 0 */
    if (memest_model_tensor_quant(w->m, L->inputs[0], &xq) != MEMEST_OK) {
        return wr_fail(w, MEMEST_E_INVALID, "its input carries no "
                       "quantisation in a quantised model");
    }
    sc = weight_scales(w, L);
    name = wr_name(w, "%s.bias", L->name);
    qn = wr_name(w, "%s.bias_quantized", L->name);
    sn = wr_name(w, "%s.bias_scale", L->name);
    zn = wr_name(w, "%s.bias_zero_point", L->name);
    bs = wr_alloc(w, (size_t)L->bias_count * sizeof *bs);
    q = wr_alloc(w, (size_t)L->bias_count * sizeof *q);
    zeros = wr_alloc(w, (size_t)L->bias_count * sizeof *zeros);
    if (sc == NULL || name == NULL || qn == NULL || sn == NULL ||
        zn == NULL || bs == NULL || q == NULL || zeros == NULL) {
        return nomem(w);
    }
    *out = name;
    for (uint64_t c = 0; c < L->bias_count; c++) {
        double v;
        bs[c] = xq.scale * sc[c];
        v = round_quotient(data[c], bs[c]);
        q[c] = (int32_t)(v < -2147483648.0 ? -2147483648.0
                         : v > 2147483647.0 ? 2147483647.0 : v);
    }
    if ((st = wr_init_int(w, qn, ONNX__TENSOR_PROTO__DATA_TYPE__INT32, 1,
                          dim, q)) ||
        (st = wr_init_f32(w, sn, 1, dim, bs)) ||
        (st = wr_init_int(w, zn, ONNX__TENSOR_PROTO__DATA_TYPE__INT32, 1, dim,
                          zeros))) {
        return st;
    }
    return dequant(w, qn, sn, zn, name,
                   wr_name(w, "%s_DequantizeLinear", name), 1);
}

/* QDQ: tensor t (written as `name`) followed by QuantizeLinear and
 * DequantizeLinear with its quantisation (int8, or uint8 with the zero
 * point + 128 when the tensor was stored so); its readers read the
 * DequantizeLinear's output, *out. */
static int qdq(struct wr *w, size_t t, const char *name, const char **out)
{
    struct memest_quant q;
    char *sn, *zn, *qn, *dn;
    int32_t zp;
    const char *in[3];
    int st = memest_model_tensor_quant(w->m, t, &q);

    if (st != MEMEST_OK) {
        return wr_fail(w, MEMEST_E_INVALID, "tensor '%.60s' carries no "
                       "quantisation in a quantised model", name);
    }
    sn = wr_name(w, "%s_scale", name);
    zn = wr_name(w, "%s_zero_point", name);
    qn = wr_name(w, "%s_QuantizeLinear_Output", name);
    dn = wr_name(w, "%s_DequantizeLinear_Output", name);
    if (sn == NULL || zn == NULL || qn == NULL || dn == NULL) {
        return nomem(w);
    }
    zp = q.is_unsigned ? q.zero_point + 128 : q.zero_point;
    if ((st = wr_init_f32(w, sn, 0, NULL, &q.scale)) ||
        (st = wr_init_int(w, zn,
                          q.is_unsigned ? ONNX__TENSOR_PROTO__DATA_TYPE__UINT8
                                        : ONNX__TENSOR_PROTO__DATA_TYPE__INT8,
                          0, NULL, &zp))) {
        return st;
    }
    in[0] = name;
    in[1] = sn;
    in[2] = zn;
    if (wr_node(w, "QuantizeLinear", wr_name(w, "%s_QuantizeLinear", name),
                3, in, 1, (const char *const *)&qn) == NULL) {
        return nomem(w);
    }
    if ((st = dequant(w, qn, sn, zn, dn,
                      wr_name(w, "%s_DequantizeLinear", name), 0))) {
        return st;
    }
    *out = dn;
    return MEMEST_OK;
}

/* ---- Graph inputs and output ------------------------------------------- */

/* A float tensor's value info, [batch, per-sample dims]. */
static Onnx__ValueInfoProto *value_info(struct wr *w, const char *name,
                                        const struct memest_shape *sh,
                                        uint64_t batch)
{
    Onnx__ValueInfoProto *vi = wr_alloc(w, sizeof *vi);
    Onnx__TypeProto *tp = wr_alloc(w, sizeof *tp);
    Onnx__TypeProto__Tensor *tt = wr_alloc(w, sizeof *tt);
    Onnx__TensorShapeProto *shp = wr_alloc(w, sizeof *shp);
    Onnx__TensorShapeProto__Dimension **dims =
        wr_alloc(w, (sh->rank + 1) * sizeof *dims);

    if (vi == NULL || tp == NULL || tt == NULL || shp == NULL ||
        dims == NULL) {
        return NULL;
    }
    for (unsigned d = 0; d <= sh->rank; d++) {
        Onnx__TensorShapeProto__Dimension *dm = wr_alloc(w, sizeof *dm);
        if (dm == NULL) {
            return NULL;
        }
        onnx__tensor_shape_proto__dimension__init(dm);
        if (d == 0 && batch == 0) {
            dm->value_case =
                ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
            dm->dim_param = (char *)"N";
        } else {
            dm->value_case =
                ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
            dm->dim_value = (int64_t)(d == 0 ? batch : sh->dim[d - 1]);
        }
        dims[d] = dm;
    }
    onnx__value_info_proto__init(vi);
    onnx__type_proto__init(tp);
    onnx__type_proto__tensor__init(tt);
    onnx__tensor_shape_proto__init(shp);
    shp->n_dim = sh->rank + 1;
    shp->dim = dims;
    tt->has_elem_type = 1;
    tt->elem_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
    tt->shape = shp;
    tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    tp->tensor_type = tt;
    vi->name = (char *)name;
    vi->type = tp;
    return vi;
}

/* ---- The layers --------------------------------------------------------- */

static int write_layer(struct wr *w, size_t i)
{
    const struct memest_layer *L = memest_model_layer(w->m, i);
    const size_t nin = memest_model_input_count(w->m);
    const struct wr_kind *k = wr_kind_of(L->kind);
    const char **in;
    const char *out = L->name;
    int st;

    w->layer = i;
    if (k == NULL || (k->write == NULL && !k->dropped)) {
        return wr_fail(w, MEMEST_E_PARSE,
                       "the ONNX writer has no form for kind '%s'",
                       memest_kind_name(L->kind));
    }
    if (L->input_count == 0 ||
        (in = wr_alloc(w, L->input_count * sizeof *in)) == NULL) {
        return L->input_count == 0
                   ? wr_fail(w, MEMEST_E_INVALID, "the layer reads nothing")
                   : nomem(w);
    }
    for (size_t j = 0; j < L->input_count; j++) {
        in[j] = w->tname[L->inputs[j]];
    }
    if (k->dropped) {
        /* its readers read its input (a dropout is the identity at
         * inference, and deployed graphs carry none) */
        w->tname[nin + i] = in[0];
        return MEMEST_OK;
    }
    if (k->takes_act && L->act != MEMEST_ACT_NONE) {
        const char *pre = wr_name(w, "%s/preact", L->name);
        if (pre == NULL) {
            return nomem(w);
        }
        st = k->write(w, L, in, pre, L->name);
        if (st == MEMEST_OK) {
            const char *an =
                wr_name(w, "%s/%s", L->name, memest_act_name(L->act));
            st = an ? wr_act(w, L, L->act, pre, out, an) : nomem(w);
        }
    } else if (!k->takes_act && L->act != MEMEST_ACT_NONE &&
               L->kind != MEMEST_KIND_ACTIVATION) {
        return wr_fail(w, MEMEST_E_PARSE,
                       "the ONNX writer has no form for act=%s after kind "
                       "'%s'", memest_act_name(L->act),
                       memest_kind_name(L->kind));
    } else {
        st = k->write(w, L, in, out, L->name);
    }
    if (st != MEMEST_OK) {
        return st;
    }
    w->tname[nin + i] = out;
    return w->quant ? qdq(w, nin + i, out, &w->tname[nin + i]) : MEMEST_OK;
}

static int build_model(struct wr *w, Onnx__ModelProto *mp)
{
    const memest_model *m = w->m;
    const size_t nin = memest_model_input_count(m);
    const size_t nl = memest_model_layer_count(m);
    const uint64_t batch = memest_model_fixed_batch(m);
    Onnx__GraphProto *g = wr_alloc(w, sizeof *g);
    Onnx__OperatorSetIdProto *ops = wr_alloc(w, sizeof *ops);
    Onnx__OperatorSetIdProto **opsv = wr_alloc(w, sizeof *opsv);
    Onnx__ValueInfoProto **gin = wr_alloc(w, nin * sizeof *gin);
    Onnx__ValueInfoProto **gout = wr_alloc(w, sizeof *gout);
    struct memest_shape osh;
    int st;

    w->tname = wr_alloc(w, (nin + nl) * sizeof *w->tname);
    if (g == NULL || ops == NULL || opsv == NULL || gin == NULL ||
        gout == NULL || w->tname == NULL) {
        return nomem(w);
    }
    /* the model's names first: what the writer makes yields to them */
    for (size_t k = 0; k < nin; k++) {
        if (!wr_claim(w, memest_model_input_name(m, k))) {
            return nomem(w);
        }
    }
    for (size_t i = 0; i < nl; i++) {
        if (!wr_claim(w, memest_model_layer(m, i)->name)) {
            return nomem(w);
        }
    }
    w->layer = SIZE_MAX;
    for (size_t k = 0; k < nin; k++) {
        struct memest_shape sh = memest_model_input_shape_at(m, k);
        w->tname[k] = memest_model_input_name(m, k);
        gin[k] = value_info(w, w->tname[k], &sh, batch);
        if (gin[k] == NULL) {
            return nomem(w);
        }
        if (w->quant && (st = qdq(w, k, w->tname[k], &w->tname[k]))) {
            return st;
        }
    }
    for (size_t i = 0; i < nl; i++) {
        if ((st = write_layer(w, i)) != MEMEST_OK) {
            return st;
        }
    }
    osh = memest_model_output_shape(m);
    w->layer = SIZE_MAX;
    if ((gout[0] = value_info(w, w->tname[nin + nl - 1], &osh, batch)) ==
        NULL) {
        return nomem(w);
    }
    onnx__graph_proto__init(g);
    g->name = (char *)memest_model_name(m);
    g->n_node = w->nn;
    g->node = w->nodes;
    g->n_initializer = w->ni;
    g->initializer = w->inits;
    g->n_input = nin;
    g->input = gin;
    g->n_output = 1;
    g->output = gout;
    onnx__operator_set_id_proto__init(ops);
    ops->domain = (char *)"";
    ops->has_version = 1;
    ops->version = WR_OPSET;
    opsv[0] = ops;
    onnx__model_proto__init(mp);
    mp->has_ir_version = 1;
    mp->ir_version = WR_IR_VERSION;
    mp->n_opset_import = 1;
    mp->opset_import = opsv;
    mp->producer_name = (char *)"edgefit";
    mp->producer_version = (char *)memest_version();
    mp->graph = g;
    return MEMEST_OK;
}

int memest_model_to_onnx(const memest_model *model, unsigned char **out,
                         size_t *len, struct memest_diag *diag)
{
    struct wr w;
    Onnx__ModelProto mp;
    size_t size;
    unsigned char *buf;
    int st;

    if (out != NULL) {
        *out = NULL;
    }
    if (len != NULL) {
        *len = 0;
    }
    if (diag != NULL) {
        memset(diag, 0, sizeof *diag);
        snprintf(diag->source, sizeof diag->source, "%s",
                 model ? memest_model_name(model) : "<onnx>");
    }
    if (model == NULL || out == NULL || len == NULL) {
        return diag_fail(diag, MEMEST_E_INVALID,
                         "memest_model_to_onnx: NULL argument");
    }
    if (model->parameter_count > 0 && !memest_model_has_weights(model)) {
        return diag_fail(diag, MEMEST_E_INVALID,
                         "the model has %llu parameters but carries no "
                         "weights: an ONNX file needs them (give them with "
                         "memest_model_set_weights() or train the model)",
                         (unsigned long long)model->parameter_count);
    }
    memset(&w, 0, sizeof w);
    w.m = model;
    w.diag = diag;
    w.quant = memest_model_is_quantized(model);
    st = build_model(&w, &mp);
    if (st == MEMEST_OK) {
        size = onnx__model_proto__get_packed_size(&mp);
        if (size > WR_MAX_BYTES) {
            st = diag_fail(diag, MEMEST_E_RANGE,
                           "the model needs %zu bytes in ONNX, over 2 GiB, "
                           "the limit of protocol buffers", size);
        } else if ((buf = malloc(size ? size : 1)) == NULL) {
            st = nomem(&w);
        } else {
            *len = onnx__model_proto__pack(&mp, buf);
            *out = buf;
        }
    }
    for (size_t i = 0; i < w.nblocks; i++) {
        free(w.blocks[i]);
    }
    free(w.blocks);
    free(w.names);
    free(w.nodes);
    free(w.inits);
    return st;
}
