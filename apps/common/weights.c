#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "edgefit/kernels.h"
#include "weights.h"
#include "alloc_rec.h" /* last: it wraps malloc and co. */

void cli_weights_free(struct cli_weights *w)
{
    free(w->data);
    free(w->names);
    free(w->tensors);
    free(w->layers);
    memset(w, 0, sizeof *w);
}

_Static_assert(MEMEST_TENSOR_MAX_RANK <= ART_TENSOR_MAX_DIMS,
               "a libmemest weight must fit in a safetensors tensor");

/* PyTorch's shape of a layer's weight, as libmemest states it for every
 * operator (memest_layer_weight_shape()); false when it gives none. */
static bool weight_shape(const struct memest_layer *l, struct art_tensor *t)
{
    uint64_t dim[MEMEST_TENSOR_MAX_RANK];
    t->ndim = memest_layer_weight_shape(l, dim);
    for (size_t d = 0; d < t->ndim; d++) {
        t->shape[d] = dim[d];
    }
    return t->ndim != 0;
}

/* The channels of layer l's batch norm (a batchnorm layer, or one folded
 * into it), 0 when it has none. */
static size_t bn_channels(const struct memest_layer *l)
{
    if (l->kind == MEMEST_KIND_BATCHNORM) {
        return (size_t)l->weight_count;
    }
    return l->folded_bn ? (size_t)l->units : 0;
}

static const char *const BN_SUFFIX[4] = {".weight", ".bias", ".running_mean",
                                         ".running_var"};

/* Append tensor `prefix``suffix` of ndim dims (shape) over data. */
static void add_tensor(struct cli_weights *w, char **name, const char *prefix,
                       const char *suffix, float *data, unsigned ndim,
                       const uint64_t *shape)
{
    struct art_tensor *t = &w->tensors[w->tensor_count++];
    const size_t len = strlen(prefix) + strlen(suffix) + 1;
    snprintf(*name, len, "%s%s", prefix, suffix);
    t->name = *name;
    *name += len;
    t->dtype = ART_DTYPE_F32;
    t->ndim = ndim;
    for (unsigned d = 0; d < ndim; d++) {
        t->shape[d] = shape[d];
    }
    t->data = data;
}

bool cli_weights_init(const memest_model *model, struct cli_weights *w)
{
    memset(w, 0, sizeof *w);
    const size_t n = memest_model_layer_count(model);
    size_t layers = 0, tensors = 0, name_bytes = 0;
    uint64_t floats = 0;
    for (size_t i = 0; i < n; i++) {
        const struct memest_layer *l = memest_model_layer(model, i);
        if (l->parameter_count == 0) {
            continue;
        }
        /* a layer with parameters but no layout is refused, never saved
         * in another kind's layout */
        struct art_tensor probe;
        struct memest_param_tensor pt[MEMEST_PARAM_TENSORS_MAX];
        const size_t npt = memest_layer_param_tensors(l, pt);
        if (npt == 0 && !weight_shape(l, &probe)) {
            cli_error("%s: layer '%s' (%s) has parameters but no weight "
                      "layout", memest_model_name(model), l->name,
                      memest_kind_name(l->kind));
            return false;
        }
        layers++;
        /* the executor's form, and the saved one: "<name>.weight" and
         * "<name>.bias" (NUL included), or a batch norm's four tensors and
         * the weights (and declared bias) of the layer it is folded into */
        const size_t C = bn_channels(l);
        const size_t suffixes = sizeof ".running_mean" + sizeof ".weight";
        floats += l->parameter_count;
        if (C == 0) {
            /* its state_dict tensors, "<name>.weight" and "<name>.bias"
             * or the operator's own list (attention, lstm, gru) */
            tensors += npt;
            for (size_t k = 0; k < npt; k++) {
                name_bytes += strlen(l->name) + strlen(pt[k].suffix) + 1;
            }
            continue;
        }
        tensors += 4;
        floats += 4 * (uint64_t)C;
        if (l->folded_bn) {
            const int declared = memest_model_layer_declared_bias(model, i);
            tensors += declared ? 2 : 1;
            floats += l->weight_count + (declared ? C : 0);
            name_bytes += 4 * (strlen(l->folded_bn) + suffixes);
        }
        name_bytes += 4 * (strlen(l->name) + suffixes);
    }
    /* libmemest checked the counts for overflow; a model whose parameters
     * do not fit in memory is refused here rather than wrapped. */
    if (floats > SIZE_MAX / sizeof(float)) {
        cli_error("%s: %" PRIu64 " parameters do not fit in memory",
                  memest_model_name(model), floats);
        return false;
    }
    w->layers = calloc(layers ? layers : 1, sizeof *w->layers);
    w->tensors = calloc(tensors ? tensors : 1, sizeof *w->tensors);
    w->names = malloc(name_bytes ? name_bytes : 1);
    w->data = calloc(floats ? (size_t)floats : 1, sizeof(float));
    if (!w->layers || !w->tensors || !w->names || !w->data) {
        cli_error("out of memory for %" PRIu64 " parameters", floats);
        cli_weights_free(w);
        return false;
    }
    char *name = w->names;
    float *p = w->data;
    for (size_t i = 0; i < n; i++) {
        const struct memest_layer *l = memest_model_layer(model, i);
        if (l->parameter_count == 0) {
            continue;
        }
        struct cli_weights_layer *wl = &w->layers[w->layer_count++];
        struct art_tensor shape;
        (void)weight_shape(l, &shape); /* checked in the first pass */
        wl->layer = i;
        wl->weight = p;
        wl->weight_count = (size_t)l->weight_count;
        p += wl->weight_count;
        if (l->bias_count) { /* a batchnorm's shift is no has_bias */
            wl->bias = p;
            wl->bias_count = (size_t)l->bias_count;
            p += wl->bias_count;
        }
        const size_t C = bn_channels(l);
        if (C == 0) {
            struct memest_param_tensor pt[MEMEST_PARAM_TENSORS_MAX];
            const size_t npt = memest_layer_param_tensors(l, pt);
            for (size_t k = 0; k < npt; k++) {
                float *base = pt[k].in_bias ? wl->bias : wl->weight;
                add_tensor(w, &name, l->name, pt[k].suffix,
                           base + pt[k].offset, pt[k].rank, pt[k].dim);
            }
            continue;
        }
        const uint64_t dim = C;
        if (l->folded_bn) {
            wl->raw_weight = p;
            p += wl->weight_count;
            add_tensor(w, &name, l->name, ".weight", wl->raw_weight,
                       shape.ndim, shape.shape);
            if (memest_model_layer_declared_bias(model, i)) {
                /* zeros: beta holds the bias once the batch norm trains */
                add_tensor(w, &name, l->name, ".bias", p, 1, &dim);
                p += C;
            }
        }
        wl->bn = p;
        wl->bn_count = C;
        p += 4 * C;
        const char *bn = l->folded_bn ? l->folded_bn : l->name;
        for (int k = 0; k < 4; k++) {
            add_tensor(w, &name, bn, BN_SUFFIX[k], wl->bn + (size_t)k * C, 1,
                       &dim);
        }
    }
    return true;
}

/* Widen n little-endian values of dtype at src into dst. The file's bytes
 * need not be aligned for float, so each value is assembled from bytes. */
static void widen(float *dst, const unsigned char *src, enum art_dtype dtype,
                  size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (dtype == ART_DTYPE_F32) {
            const unsigned char *b = src + 4 * i;
            const uint32_t u = (uint32_t)b[0] | (uint32_t)b[1] << 8 |
                               (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
            memcpy(&dst[i], &u, sizeof u);
        } else {
            const unsigned char *b = src + 2 * i;
            const uint16_t h = (uint16_t)(b[0] | b[1] << 8);
            dst[i] = dtype == ART_DTYPE_F16 ? kern_f16_to_f32_1(h)
                                            : kern_bf16_to_f32_1(h);
        }
    }
}

/* "<bn>.num_batches_tracked": the step counter PyTorch keeps beside a
 * batch norm's statistics; inference has no use for it. */
static bool is_step_counter(const char *name)
{
    static const char suffix[] = ".num_batches_tracked";
    const size_t n = strlen(name), s = sizeof suffix - 1;
    return n > s && strcmp(name + n - s, suffix) == 0;
}

int cli_weights_load(const char *opt, const char *path, memest_model *model)
{
    if (!cli_check_regular_file(opt, path)) {
        return CLI_EXIT_USAGE;
    }
    art_safetensors *st = NULL;
    struct art_diag diag = {0};
    int s = art_safetensors_load(path, &st, &diag);
    if (s != ART_OK) {
        /* The reader's messages name the file already. */
        if (diag.message[0]) {
            cli_error("%s: %s", opt, diag.message);
        } else {
            cli_error("%s %s: %s", opt, path, art_strerror(s));
        }
        return s == ART_E_NOMEM ? CLI_EXIT_FAILURE : CLI_EXIT_USAGE;
    }
    int rc = CLI_EXIT_USAGE;
    const size_t count = art_safetensors_count(st);
    struct memest_tensor *ts = calloc(count ? count : 1, sizeof *ts);
    float *data = NULL;
    if (!ts) {
        cli_error("out of memory for the %zu tensors of %s", count, path);
        rc = CLI_EXIT_FAILURE;
        goto done;
    }
    /* The reader checked every tensor's bytes against the file, so the
     * element counts cannot overflow; their sum as floats still might on
     * a 32-bit machine (16-bit values double in size). */
    uint64_t floats = 0;
    size_t n = 0;
    for (size_t i = 0; i < count; i++) {
        const struct art_tensor *t = art_safetensors_tensor(st, i);
        if (is_step_counter(t->name)) {
            continue;
        }
        if (t->dtype != ART_DTYPE_F32 && t->dtype != ART_DTYPE_F16 &&
            t->dtype != ART_DTYPE_BF16) {
            cli_error("%s %s: tensor '%s': dtype %s, not F32, F16 or BF16",
                      opt, path, t->name, art_dtype_name(t->dtype));
            goto done;
        }
        if (t->ndim > MEMEST_TENSOR_MAX_RANK) {
            cli_error("%s %s: tensor '%s': %zu dimensions, at most %d",
                      opt, path, t->name, t->ndim, MEMEST_TENSOR_MAX_RANK);
            goto done;
        }
        struct memest_tensor *mt = &ts[n++];
        mt->name = t->name;
        mt->rank = (unsigned)t->ndim;
        uint64_t elems = 1;
        for (size_t d = 0; d < t->ndim; d++) {
            mt->dim[d] = t->shape[d];
            elems *= t->shape[d];
        }
        floats += elems;
    }
    if (floats > SIZE_MAX / sizeof(float)) {
        cli_error("%s %s: %" PRIu64 " values do not fit in memory", opt,
                  path, floats);
        goto done;
    }
    data = malloc(floats ? (size_t)floats * sizeof(float) : 1);
    if (!data) {
        cli_error("out of memory for the %" PRIu64 " values of %s", floats,
                  path);
        rc = CLI_EXIT_FAILURE;
        goto done;
    }
    float *p = data;
    for (size_t i = 0, k = 0; i < count; i++) {
        const struct art_tensor *t = art_safetensors_tensor(st, i);
        if (is_step_counter(t->name)) {
            continue;
        }
        size_t elems = 1;
        for (size_t d = 0; d < t->ndim; d++) {
            elems *= (size_t)t->shape[d];
        }
        widen(p, t->data, t->dtype, elems);
        ts[k++].data = p;
        p += elems;
    }
    /* libmemest checks the names, shapes and values against the model and
     * folds the batch norms; its message names the tensor. */
    struct memest_diag md = {0};
    s = memest_model_set_weights(model, ts, n, &md);
    if (s != MEMEST_OK) {
        cli_error("%s %s: %s", opt, path,
                  md.message[0] ? md.message : memest_strerror(s));
        rc = s == MEMEST_E_NOMEM ? CLI_EXIT_FAILURE : CLI_EXIT_USAGE;
        goto done;
    }
    rc = CLI_EXIT_OK;
done:
    free(data);
    free(ts);
    art_safetensors_destroy(st);
    return rc;
}

void cli_weights_from_model(const memest_model *model, struct cli_weights *w)
{
    for (size_t i = 0; i < w->layer_count; i++) {
        const struct cli_weights_layer *wl = &w->layers[i];
        const struct memest_layer *l = memest_model_layer(model, wl->layer);
        if (l->weight) {
            memcpy(wl->weight, l->weight, wl->weight_count * sizeof(float));
        }
        if (l->bias && wl->bias) {
            memcpy(wl->bias, l->bias, wl->bias_count * sizeof(float));
        }
    }
    cli_weights_unfold(model, w);
}

void cli_weights_unfold(const memest_model *model, struct cli_weights *w)
{
    for (size_t i = 0; i < w->layer_count; i++) {
        const struct cli_weights_layer *wl = &w->layers[i];
        const struct memest_layer *l = memest_model_layer(model, wl->layer);
        const size_t C = wl->bn_count;
        if (!wl->bn) {
            continue;
        }
        /* the batch norm of running mean 0 and variance 1 that computes
         * the folded values: gamma scale sqrt(1 + eps) (a folded one's
         * sqrt(1 + eps), on the folded weights), beta the shift */
        const double root = sqrt(1.0 + l->bn_epsilon);
        if (wl->raw_weight) {
            memcpy(wl->raw_weight, wl->weight,
                   wl->weight_count * sizeof(float));
        }
        for (size_t c = 0; c < C; c++) {
            wl->bn[c] = wl->raw_weight ? (float)root
                                       : (float)(wl->weight[c] * root);
            wl->bn[C + c] = wl->bias ? wl->bias[c] : 0.0f;
            wl->bn[2 * C + c] = 0.0f;
            wl->bn[3 * C + c] = 1.0f;
        }
    }
}

int cli_weights_to_model(const struct cli_weights *w, memest_model *model)
{
    struct memest_tensor *ts =
        calloc(w->tensor_count ? w->tensor_count : 1, sizeof *ts);
    if (!ts) {
        cli_error("out of memory: the tensors of the weights");
        return CLI_EXIT_FAILURE;
    }
    for (size_t i = 0; i < w->tensor_count; i++) {
        const struct art_tensor *t = &w->tensors[i];
        ts[i].name = t->name;
        ts[i].rank = (unsigned)t->ndim;
        for (size_t d = 0; d < t->ndim && d < MEMEST_TENSOR_MAX_RANK; d++) {
            ts[i].dim[d] = t->shape[d];
        }
        ts[i].data = t->data;
    }
    struct memest_diag md = {0};
    const int s = memest_model_set_weights(model, ts, w->tensor_count, &md);
    free(ts);
    if (s != MEMEST_OK) {
        cli_error("the trained weights: %s",
                  md.message[0] ? md.message : memest_strerror(s));
        return s == MEMEST_E_NOMEM ? CLI_EXIT_FAILURE : CLI_EXIT_USAGE;
    }
    return CLI_EXIT_OK;
}
