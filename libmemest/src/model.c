/* Model accessors, names of enums, shape text and the canonical writer. */
#include "internal.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void memest_model_destroy(memest_model *model)
{
    if (model == NULL) {
        return;
    }
    for (size_t i = 0; i < model->count; i++) {
        free((char *)model->layers[i].name);
    }
    free(model->layers);
    free(model->slots);
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

struct memest_shape memest_model_input_shape(const memest_model *model)
{
    struct memest_shape none = {0, {0, 0, 0}};
    return model ? model->input : none;
}

struct memest_shape memest_model_output_shape(const memest_model *model)
{
    struct memest_shape none = {0, {0, 0, 0}};
    if (model == NULL || model->count == 0) {
        return none;
    }
    return model->layers[model->count - 1].out_shape;
}

uint64_t memest_model_parameter_count(const memest_model *model)
{
    return model ? model->parameter_count : 0;
}

const char *memest_kind_name(enum memest_kind kind)
{
    switch (kind) {
    case MEMEST_KIND_INPUT:
        return "input";
    case MEMEST_KIND_DENSE:
        return "dense";
    case MEMEST_KIND_CONV2D:
        return "conv2d";
    case MEMEST_KIND_MAXPOOL:
        return "maxpool";
    case MEMEST_KIND_AVGPOOL:
        return "avgpool";
    case MEMEST_KIND_FLATTEN:
        return "flatten";
    case MEMEST_KIND_ACTIVATION:
        return "activation";
    default:
        return NULL;
    }
}

const char *memest_act_name(enum memest_act act)
{
    switch (act) {
    case MEMEST_ACT_NONE:
        return "none";
    case MEMEST_ACT_RELU:
        return "relu";
    case MEMEST_ACT_GELU:
        return "gelu";
    case MEMEST_ACT_SIGMOID:
        return "sigmoid";
    case MEMEST_ACT_TANH:
        return "tanh";
    case MEMEST_ACT_SOFTMAX:
        return "softmax";
    default:
        return NULL;
    }
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

/* Appends to a bounded buffer, counting the full length. */
struct out {
    char *buf;
    size_t cap;
    size_t len;
};

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static void put(struct out *o, const char *fmt, ...)
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

int memest_model_write(const memest_model *model, char *buf, size_t cap,
                       size_t *len)
{
    struct out o = {buf, cap, 0};
    char shape[MEMEST_SHAPE_TEXT_MAX];

    if (model == NULL || len == NULL || (buf == NULL && cap != 0)) {
        return MEMEST_E_INVALID;
    }
    if (cap > 0) {
        buf[0] = '\0';
    }
    put(&o, "name %s\n", model->name);
    memest_shape_format(&model->input, shape, sizeof shape);
    put(&o, "input %s\n", shape);
    for (size_t i = 0; i < model->count; i++) {
        const struct memest_layer *L = &model->layers[i];
        switch (L->kind) {
        case MEMEST_KIND_DENSE:
            put(&o, "dense %" PRIu64 " act=%s bias=%s", L->units,
                memest_act_name(L->act), L->has_bias ? "yes" : "no");
            break;
        case MEMEST_KIND_CONV2D:
            put(&o,
                "conv2d %" PRIu64 " k=%" PRIu64 " s=%" PRIu64
                " p=%" PRIu64 " g=%" PRIu64 " act=%s bias=%s",
                L->units, L->kernel, L->stride, L->padding, L->groups,
                memest_act_name(L->act), L->has_bias ? "yes" : "no");
            break;
        case MEMEST_KIND_MAXPOOL:
        case MEMEST_KIND_AVGPOOL:
            put(&o, "%s k=%" PRIu64 " s=%" PRIu64 " p=%" PRIu64,
                memest_kind_name(L->kind), L->kernel, L->stride,
                L->padding);
            break;
        case MEMEST_KIND_FLATTEN:
            put(&o, "flatten");
            break;
        default:
            put(&o, "%s", memest_act_name(L->act));
            break;
        }
        put(&o, " name=%s\n", L->name);
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
