#include <inttypes.h>
#include <math.h>
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

/* PyTorch's shape of a layer's weight: dense [out, in], conv2d
 * [out_c, in_c/groups, kernel_h, kernel_w]. */
static void weight_shape(const struct memest_layer *l, struct art_tensor *t)
{
    if (l->kind == MEMEST_KIND_CONV2D) {
        t->ndim = 4;
        t->shape[0] = l->units;
        t->shape[1] = l->in_shape.dim[0] / l->groups;
        t->shape[2] = l->kernel_h;
        t->shape[3] = l->kernel_w;
    } else {
        t->ndim = 2;
        t->shape[0] = l->units;
        t->shape[1] = l->weight_count / l->units;
    }
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
        weight_shape(l, t);
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

static void shape_text(const uint64_t *shape, size_t ndim, char *buf,
                       size_t cap)
{
    size_t used = (size_t)snprintf(buf, cap, "[");
    for (size_t d = 0; d < ndim && used < cap; d++) {
        used += (size_t)snprintf(buf + used, cap - used, "%s%" PRIu64,
                                 d ? ", " : "", shape[d]);
    }
    if (used < cap) {
        snprintf(buf + used, cap - used, "]");
    }
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

bool cli_weights_read(const char *opt, const char *path,
                      const memest_model *model, struct cli_weights *w)
{
    (void)model; /* w was laid out for it */
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
        return false;
    }
    bool ok = false;
    /* Every tensor of the file must be one of the model's: a name the model
     * does not have is usually a file of another model. */
    const size_t count = art_safetensors_count(st);
    for (size_t i = 0; i < count; i++) {
        const struct art_tensor *t = art_safetensors_tensor(st, i);
        size_t k = 0;
        while (k < w->tensor_count && strcmp(w->tensors[k].name, t->name)) {
            k++;
        }
        if (k == w->tensor_count) {
            cli_error("%s %s: tensor '%s': the model %s has no such "
                      "parameter", opt, path, t->name,
                      memest_model_name(model));
            goto done;
        }
    }
    for (size_t k = 0; k < w->tensor_count; k++) {
        const struct art_tensor *want = &w->tensors[k];
        const struct art_tensor *t = art_safetensors_find(st, want->name);
        char ws[128], ts[128];
        if (!t) {
            cli_error("%s %s: tensor '%s' is missing", opt, path,
                      want->name);
            goto done;
        }
        if (t->dtype != ART_DTYPE_F32 && t->dtype != ART_DTYPE_F16 &&
            t->dtype != ART_DTYPE_BF16) {
            cli_error("%s %s: tensor '%s': dtype %s, not F32, F16 or BF16",
                      opt, path, t->name, art_dtype_name(t->dtype));
            goto done;
        }
        if (t->ndim != want->ndim ||
            memcmp(t->shape, want->shape, want->ndim * sizeof t->shape[0])) {
            shape_text(t->shape, t->ndim, ts, sizeof ts);
            shape_text(want->shape, want->ndim, ws, sizeof ws);
            cli_error("%s %s: tensor '%s': shape %s, the model needs %s",
                      opt, path, t->name, ts, ws);
            goto done;
        }
        float *dst = (float *)want->data;
        size_t n = 1;
        for (size_t d = 0; d < want->ndim; d++) {
            n *= (size_t)want->shape[d]; /* sized by cli_weights_init() */
        }
        widen(dst, t->data, t->dtype, n);
        for (size_t i = 0; i < n; i++) {
            if (!isfinite(dst[i])) {
                cli_error("%s %s: tensor '%s': element %zu is not finite",
                          opt, path, t->name, i);
                goto done;
            }
        }
    }
    ok = true;
done:
    art_safetensors_destroy(st);
    return ok;
}
