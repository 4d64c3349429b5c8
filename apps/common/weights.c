#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "edgefit/kernels.h"
#include "weights.h"

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
        if (!weight_shape(l, &probe)) {
            cli_error("%s: layer '%s' (%s) has parameters but no weight "
                      "layout", memest_model_name(model), l->name,
                      memest_kind_name(l->kind));
            return false;
        }
        layers++;
        tensors += l->has_bias ? 2 : 1;
        /* "<name>.weight" and "<name>.bias", NUL included */
        name_bytes += 2 * (strlen(l->name) + sizeof ".weight");
        floats += l->parameter_count;
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
        wl->layer = i;
        wl->weight = p;
        wl->weight_count = (size_t)l->weight_count;
        p += wl->weight_count;
        struct art_tensor *t = &w->tensors[w->tensor_count++];
        const size_t room = 2 * (strlen(l->name) + sizeof ".weight");
        const int len = snprintf(name, room, "%s.weight", l->name);
        t->name = name;
        name += len + 1;
        t->dtype = ART_DTYPE_F32;
        (void)weight_shape(l, t); /* checked in the first pass */
        t->data = wl->weight;
        if (l->has_bias) {
            wl->bias = p;
            wl->bias_count = (size_t)l->bias_count;
            p += wl->bias_count;
            t = &w->tensors[w->tensor_count++];
            snprintf(name, room - (size_t)len - 1, "%s.bias", l->name);
            t->name = name;
            name += strlen(name) + 1;
            t->dtype = ART_DTYPE_F32;
            t->ndim = 1;
            t->shape[0] = l->bias_count;
            t->data = wl->bias;
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
}
