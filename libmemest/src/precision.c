/* Precisions and optimizers: names, aliases, sizes. */
#include "edgefit/memest.h"

#include <stddef.h>
#include <strings.h>

struct alias {
    const char *text;
    int value;
};

static const struct alias precision_aliases[] = {
    {"fp64", MEMEST_FP64},     {"float64", MEMEST_FP64},
    {"fp32", MEMEST_FP32},     {"float32", MEMEST_FP32},
    {"fp16", MEMEST_FP16},     {"float16", MEMEST_FP16},
    {"half", MEMEST_FP16},     {"bf16", MEMEST_BF16},
    {"bfloat16", MEMEST_BF16}, {"int8", MEMEST_INT8},
    {"int8-dynamic", MEMEST_INT8_DYNAMIC},
};

static const struct alias optimizer_aliases[] = {
    {"sgd", MEMEST_OPT_SGD},
    {"momentum", MEMEST_OPT_MOMENTUM},
    {"adam", MEMEST_OPT_ADAM},
};

static int lookup(const struct alias *table, size_t n, const char *text,
                  int *out)
{
    for (size_t i = 0; i < n; i++) {
        if (strcasecmp(table[i].text, text) == 0) {
            *out = table[i].value;
            return MEMEST_OK;
        }
    }
    return MEMEST_E_PARSE;
}

int memest_precision_parse(const char *text, enum memest_precision *out)
{
    int value;
    int st;

    if (text == NULL || out == NULL) {
        return MEMEST_E_INVALID;
    }
    st = lookup(precision_aliases,
                sizeof precision_aliases / sizeof precision_aliases[0], text,
                &value);
    if (st == MEMEST_OK) {
        *out = (enum memest_precision)value;
    }
    return st;
}

unsigned memest_precision_bytes(enum memest_precision p)
{
    switch (p) {
    case MEMEST_FP64:
        return 8;
    case MEMEST_FP32:
        return 4;
    case MEMEST_FP16:
    case MEMEST_BF16:
        return 2;
    case MEMEST_INT8:
    case MEMEST_INT8_DYNAMIC:
        return 1;
    default:
        return 0;
    }
}

const char *memest_precision_name(enum memest_precision p)
{
    switch (p) {
    case MEMEST_FP64:
        return "fp64";
    case MEMEST_FP32:
        return "fp32";
    case MEMEST_FP16:
        return "fp16";
    case MEMEST_BF16:
        return "bf16";
    case MEMEST_INT8:
        return "int8";
    case MEMEST_INT8_DYNAMIC:
        return "int8-dynamic";
    default:
        return NULL;
    }
}

const char *memest_precision_mode_name(enum memest_precision p)
{
    switch (p) {
    case MEMEST_FP64:
        return "float64";
    case MEMEST_FP32:
        return "float32";
    case MEMEST_FP16:
        return "float16";
    case MEMEST_BF16:
        return "bfloat16";
    case MEMEST_INT8:
        return "int8";
    case MEMEST_INT8_DYNAMIC:
        return "int8-dynamic";
    default:
        return NULL;
    }
}

int memest_optimizer_parse(const char *text, enum memest_optimizer *out)
{
    int value;
    int st;

    if (text == NULL || out == NULL) {
        return MEMEST_E_INVALID;
    }
    st = lookup(optimizer_aliases,
                sizeof optimizer_aliases / sizeof optimizer_aliases[0], text,
                &value);
    if (st == MEMEST_OK) {
        *out = (enum memest_optimizer)value;
    }
    return st;
}

const char *memest_optimizer_name(enum memest_optimizer opt)
{
    switch (opt) {
    case MEMEST_OPT_SGD:
        return "sgd";
    case MEMEST_OPT_MOMENTUM:
        return "momentum";
    case MEMEST_OPT_ADAM:
        return "adam";
    default:
        return NULL;
    }
}

unsigned memest_optimizer_state_factor(enum memest_optimizer opt)
{
    switch (opt) {
    case MEMEST_OPT_SGD:
        return 0;
    case MEMEST_OPT_MOMENTUM:
        return 1;
    case MEMEST_OPT_ADAM:
        return 2;
    default:
        return 0;
    }
}
