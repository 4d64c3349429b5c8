/* Model accessors, names of activations, shape text and the canonical
 * writer (a driver over the operators' write(), op.h). */
#include "internal.h"
#include "op.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "alloc_rec.h" /* last: it wraps malloc and co. */

void memest_model_destroy(memest_model *model)
{
    if (model == NULL) {
        return;
    }
    for (size_t i = 0; i < model->count; i++) {
        free((char *)model->layers[i].name);
        free((size_t *)model->layers[i].inputs);
        free((char *)model->layers[i].folded_bn);
        free(model->extra[i].weight);
        free(model->extra[i].bias);
        free(model->extra[i].weight_scales);
    }
    for (size_t i = 0; i < model->input_count; i++) {
        free(model->inputs[i].name);
    }
    free(model->inputs);
    free(model->layers);
    free(model->extra);
    free(model->name);
    free(model);
}

const char *memest_model_name(const memest_model *model)
{
    return model ? model->name : NULL;
}

size_t memest_model_layer_count(const memest_model *model)
{
    return model ? model->count : 0;
}

const struct memest_layer *memest_model_layer(const memest_model *model,
                                              size_t i)
{
    if (model == NULL || i >= model->count) {
        return NULL;
    }
    return &model->layers[i];
}

const struct memest_shape *model_tensor_shape(const struct memest_model *m,
                                              size_t t)
{
    if (t < m->input_count) {
        return &m->inputs[t].shape;
    }
    if (t - m->input_count < m->count) {
        return &m->layers[t - m->input_count].out_shape;
    }
    return NULL;
}

void model_set_fixed_batch(struct memest_model *m, uint64_t batch)
{
    m->fixed_batch = batch;
}

void model_set_batch_axes(struct memest_model *m, size_t k, unsigned in_axis,
                          unsigned out_axis)
{
    if (k < m->input_count) {
        m->inputs[k].batch_axis = in_axis;
    }
    m->output_batch_axis = out_axis;
}

unsigned memest_model_input_batch_axis(const memest_model *model, size_t k)
{
    return model && k < model->input_count ? model->inputs[k].batch_axis : 0;
}

unsigned memest_model_output_batch_axis(const memest_model *model)
{
    return model ? model->output_batch_axis : 0;
}

static const struct memest_shape no_shape;

struct memest_shape memest_model_input_shape(const memest_model *model)
{
    return memest_model_input_shape_at(model, 0);
}

size_t memest_model_input_count(const memest_model *model)
{
    return model ? model->input_count : 0;
}

const char *memest_model_input_name(const memest_model *model, size_t k)
{
    if (model == NULL || k >= model->input_count) {
        return NULL;
    }
    return model->inputs[k].name;
}

struct memest_shape memest_model_input_shape_at(const memest_model *model,
                                                size_t k)
{
    if (model == NULL || k >= model->input_count) {
        return no_shape;
    }
    return model->inputs[k].shape;
}

size_t memest_model_tensor_count(const memest_model *model)
{
    return model ? model->input_count + model->count : 0;
}

struct memest_shape memest_model_tensor_shape(const memest_model *model,
                                              size_t t)
{
    const struct memest_shape *sh;
    if (model == NULL || (sh = model_tensor_shape(model, t)) == NULL) {
        return no_shape;
    }
    return *sh;
}

struct memest_shape memest_model_output_shape(const memest_model *model)
{
    if (model == NULL || model->count == 0) {
        return no_shape;
    }
    return model->layers[model->count - 1].out_shape;
}

uint64_t memest_model_parameter_count(const memest_model *model)
{
    return model ? model->parameter_count : 0;
}

int memest_model_layer_declared_bias(const memest_model *model, size_t i)
{
    if (model == NULL || i >= model->count) {
        return 0;
    }
    return model->extra[i].declared_bias != 0;
}

int memest_model_has_weights(const memest_model *model)
{
    int any = 0;
    if (model == NULL) {
        return 0;
    }
    for (size_t i = 0; i < model->count; i++) {
        const struct memest_layer *L = &model->layers[i];
        if (L->parameter_count == 0) {
            continue;
        }
        if (L->weight == NULL || (L->bias_count != 0 && L->bias == NULL)) {
            return 0;
        }
        any = 1;
    }
    return any;
}

uint64_t memest_model_fixed_batch(const memest_model *model)
{
    return model ? model->fixed_batch : 0;
}

const char *memest_act_name(enum memest_act act)
{
    static const char *const names[MEMEST_ACT_COUNT] = {
        "none", "relu", "gelu", "sigmoid", "tanh", "softmax", "relu6",
        "logsoftmax", "erf", "gelu_erf", "silu", "hardsigmoid", "hardswish",
        "leakyrelu", "elu", "softplus", "clip"};
    if ((unsigned)act >= MEMEST_ACT_COUNT) {
        return NULL;
    }
    return names[act];
}

size_t memest_shape_format(const struct memest_shape *shape, char *buf,
                           size_t cap)
{
    char empty[1];
    int n;

    if (buf == NULL || cap == 0) {
        buf = empty;
        cap = 1;
    }
    if (shape == NULL || shape->rank == 0 || shape->rank > 3) {
        buf[0] = '\0';
        return 0;
    }
    if (shape->rank == 1) {
        n = snprintf(buf, cap, "%" PRIu64, shape->dim[0]);
    } else if (shape->rank == 2) {
        n = snprintf(buf, cap, "%" PRIu64 "x%" PRIu64, shape->dim[0],
                     shape->dim[1]);
    } else {
        n = snprintf(buf, cap, "%" PRIu64 "x%" PRIu64 "x%" PRIu64,
                     shape->dim[0], shape->dim[1], shape->dim[2]);
    }
    return n < 0 ? 0 : (size_t)n;
}

int memest_model_write(const memest_model *model, char *buf, size_t cap,
                       size_t *len)
{
    struct op_out o = {buf, cap, 0};
    char shape[MEMEST_SHAPE_TEXT_MAX];

    if (model == NULL || len == NULL || (buf == NULL && cap != 0)) {
        return MEMEST_E_INVALID;
    }
    if (cap > 0) {
        buf[0] = '\0';
    }
    op_put(&o, "name %s\n", model->name);
    for (size_t k = 0; k < model->input_count; k++) {
        memest_shape_format(&model->inputs[k].shape, shape, sizeof shape);
        if (model->input_count == 1 &&
            strcmp(model->inputs[k].name, "input") == 0) {
            op_put(&o, "input %s\n", shape);
        } else {
            op_put(&o, "input %s name=%s\n", shape, model->inputs[k].name);
        }
    }
    for (size_t i = 0; i < model->count; i++) {
        const struct memest_layer *L = &model->layers[i];
        const size_t self = model->input_count + i;
        /* a folded batch norm is written back as its own line, so that
         * parsing folds it again: the layer keeps its declared bias and
         * the batch norm carries the activation */
        const enum memest_act act = L->folded_bn ? MEMEST_ACT_NONE : L->act;
        const int bias = L->folded_bn ? model->extra[i].declared_bias
                                      : L->has_bias;
        const struct memest_op_def *def = op_def(L->kind);
        const struct op_write w = {L, act, bias};
        if (def == NULL) {
            /* a model holds only layers the parser made from a definition;
             * anything else is refused, never written as another kind */
            *len = 0;
            return MEMEST_E_INVALID;
        }
        if (def->write != NULL) {
            def->write(&o, &w);
        } else {
            op_put(&o, "%s", def->word);
        }
        if (L->input_count != 1 || L->inputs[0] + 1 != self) {
            for (size_t k = 0; k < L->input_count; k++) {
                const size_t t = L->inputs[k];
                const struct memest_layer *P =
                    t < model->input_count
                        ? NULL
                        : &model->layers[t - model->input_count];
                /* a layer with a folded batch norm is named by the batch
                 * norm's line, which comes after it: naming the layer
                 * itself would read it twice and keep the norm from
                 * folding again */
                op_put(&o, "%s%s", k ? "," : " in=",
                       P == NULL      ? model->inputs[t].name
                       : P->folded_bn ? P->folded_bn
                                      : P->name);
            }
        }
        op_put(&o, " name=%s\n", L->name);
        if (L->folded_bn) {
            /* the batch norm's own line, by the batch norm's writer */
            struct memest_layer bn;
            struct op_write bw;
            memset(&bn, 0, sizeof bn);
            bn.kind = MEMEST_KIND_BATCHNORM;
            bn.act = L->act;
            bn.bn_epsilon = L->bn_epsilon;
            bn.act_alpha = L->act_alpha;
            bn.act_beta = L->act_beta;
            bw.L = &bn;
            bw.act = L->act;
            bw.bias = 0;
            op_def(MEMEST_KIND_BATCHNORM)->write(&o, &bw);
            op_put(&o, " name=%s\n", L->folded_bn);
        }
    }
    *len = o.len;
    if (buf != NULL && o.len >= cap) {
        if (cap > 0) {
            buf[cap - 1] = '\0';
        }
        return MEMEST_E_RANGE;
    }
    return buf == NULL ? MEMEST_E_RANGE : MEMEST_OK;
}

/* ---- Quantisation a model carries -------------------------------------- */

static int quant_valid(const struct memest_quant *q)
{
    return isfinite(q->scale) && q->scale > 0.0f && q->zero_point >= -128 &&
           q->zero_point <= 127 && (q->is_unsigned == 0 || q->is_unsigned == 1);
}

int memest_model_set_tensor_quant(memest_model *model, size_t t,
                                  const struct memest_quant *q)
{
    int *has;
    struct memest_quant *slot;
    if (model == NULL) {
        return MEMEST_E_INVALID;
    }
    if (t < model->input_count) {
        has = &model->inputs[t].has_quant;
        slot = &model->inputs[t].quant;
    } else if (t - model->input_count < model->count) {
        has = &model->extra[t - model->input_count].has_quant;
        slot = &model->extra[t - model->input_count].quant;
    } else {
        return MEMEST_E_RANGE;
    }
    if (q == NULL) {
        *has = 0;
        memset(slot, 0, sizeof *slot);
        return MEMEST_OK;
    }
    if (!quant_valid(q)) {
        return MEMEST_E_RANGE;
    }
    *slot = *q;
    *has = 1;
    return MEMEST_OK;
}

int memest_model_tensor_quant(const memest_model *model, size_t t,
                              struct memest_quant *out)
{
    int has;
    const struct memest_quant *slot;
    if (model == NULL || out == NULL) {
        return MEMEST_E_INVALID;
    }
    if (t < model->input_count) {
        has = model->inputs[t].has_quant;
        slot = &model->inputs[t].quant;
    } else if (t - model->input_count < model->count) {
        has = model->extra[t - model->input_count].has_quant;
        slot = &model->extra[t - model->input_count].quant;
    } else {
        return MEMEST_E_RANGE;
    }
    if (!has) {
        return MEMEST_E_NOTFOUND;
    }
    *out = *slot;
    return MEMEST_OK;
}

int memest_model_set_weight_scales(memest_model *model, size_t layer,
                                   const float *scales, size_t n)
{
    const struct memest_layer *L;
    float *copy;
    if (model == NULL || (scales == NULL && n > 0)) {
        return MEMEST_E_INVALID;
    }
    if (layer >= model->count) {
        return MEMEST_E_RANGE;
    }
    L = &model->layers[layer];
    /* the two kinds whose weights the static int8 path quantises per
     * output channel; any other kind has no such scales */
    if (L->kind != MEMEST_KIND_CONV2D && L->kind != MEMEST_KIND_DENSE) {
        return MEMEST_E_INVALID;
    }
    if (n == 0) {
        free(model->extra[layer].weight_scales);
        model->extra[layer].weight_scales = NULL;
        model->extra[layer].weight_scale_count = 0;
        return MEMEST_OK;
    }
    if ((uint64_t)n != L->units) {
        return MEMEST_E_SHAPE;
    }
    for (size_t c = 0; c < n; c++) {
        if (!isfinite(scales[c]) || !(scales[c] > 0.0f)) {
            return MEMEST_E_RANGE;
        }
    }
    if (n > SIZE_MAX / sizeof *copy) {
        return MEMEST_E_OVERFLOW;
    }
    copy = malloc(n * sizeof *copy);
    if (copy == NULL) {
        return MEMEST_E_NOMEM;
    }
    memcpy(copy, scales, n * sizeof *copy);
    free(model->extra[layer].weight_scales);
    model->extra[layer].weight_scales = copy;
    model->extra[layer].weight_scale_count = n;
    return MEMEST_OK;
}

const float *memest_model_weight_scales(const memest_model *model,
                                        size_t layer, size_t *n)
{
    if (n != NULL) {
        *n = 0;
    }
    if (model == NULL || layer >= model->count ||
        model->extra[layer].weight_scales == NULL) {
        return NULL;
    }
    if (n != NULL) {
        *n = model->extra[layer].weight_scale_count;
    }
    return model->extra[layer].weight_scales;
}

int memest_model_is_quantized(const memest_model *model)
{
    if (model == NULL || model->input_count + model->count == 0) {
        return 0;
    }
    for (size_t k = 0; k < model->input_count; k++) {
        if (!model->inputs[k].has_quant) {
            return 0;
        }
    }
    for (size_t i = 0; i < model->count; i++) {
        if (!model->extra[i].has_quant) {
            return 0;
        }
    }
    return 1;
}
