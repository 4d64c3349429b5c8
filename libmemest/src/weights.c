/*
 * Weights for a model, by PyTorch's state_dict names, with batch norms
 * folded here: a model carries float32 parameters in the layouts its
 * layers document, whatever the file that gave them. The layouts are the
 * operators' (op.h: params and weight_shape()); this file only looks
 * tensors up, checks and folds them.
 */
#include "internal.h"
#include "op.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "alloc_rec.h" /* last: it wraps malloc and co. */

static uint64_t tensor_elements(const struct memest_tensor *t)
{
    uint64_t n = 1;
    for (unsigned i = 0; i < t->rank; i++) {
        if (mul_ovf(n, t->dim[i], &n)) {
            return UINT64_MAX;
        }
    }
    return n;
}

static void shape_text(const uint64_t *dim, unsigned rank, char *buf,
                       size_t cap)
{
    size_t len = 0;
    buf[0] = '\0';
    len += (size_t)snprintf(buf, cap, "[");
    for (unsigned i = 0; i < rank && len < cap; i++) {
        len += (size_t)snprintf(buf + len, cap - len, "%s%llu",
                                i ? ", " : "", (unsigned long long)dim[i]);
    }
    if (len < cap) {
        snprintf(buf + len, cap - len, "]");
    }
}

struct lookup {
    const struct memest_tensor *tensors;
    size_t count;
    unsigned char *used;
};

/*
 * The tensor "<prefix><suffix>" with exactly this shape: *out points at its
 * data. MEMEST_E_PARSE when it is missing (optional: *out = NULL, OK),
 * MEMEST_E_SHAPE when its shape differs, MEMEST_E_RANGE for a non-finite
 * value.
 */
static int need(struct lookup *lk, const char *prefix, const char *suffix,
                const uint64_t *dim, unsigned rank, int optional,
                const float **out, struct memest_diag *diag)
{
    char name[300];
    snprintf(name, sizeof name, "%s%s", prefix, suffix);
    *out = NULL;
    for (size_t i = 0; i < lk->count; i++) {
        const struct memest_tensor *t = &lk->tensors[i];
        int same = t->rank == rank;
        uint64_t n;
        if (t->name == NULL || strcmp(t->name, name) != 0) {
            continue;
        }
        for (unsigned d = 0; same && d < rank; d++) {
            same = t->dim[d] == dim[d];
        }
        if (!same) {
            char want[160];
            char got[160];
            shape_text(dim, rank, want, sizeof want);
            shape_text(t->dim, t->rank > MEMEST_TENSOR_MAX_RANK
                                   ? MEMEST_TENSOR_MAX_RANK
                                   : t->rank,
                       got, sizeof got);
            return diag_fail(diag, MEMEST_E_SHAPE,
                             "tensor '%s' has shape %s but the model needs %s",
                             name, got, want);
        }
        n = tensor_elements(t);
        if (t->data == NULL && n > 0) {
            return diag_fail(diag, MEMEST_E_INVALID, "tensor '%s' has no data",
                             name);
        }
        for (uint64_t k = 0; k < n; k++) {
            if (!isfinite(t->data[k])) {
                return diag_fail(diag, MEMEST_E_RANGE,
                                 "tensor '%s' holds a value that is not finite "
                                 "at element %llu",
                                 name, (unsigned long long)k);
            }
        }
        lk->used[i] = 1;
        *out = t->data;
        return MEMEST_OK;
    }
    if (optional) {
        return MEMEST_OK;
    }
    return diag_fail(diag, MEMEST_E_PARSE,
                     "tensor '%s' is missing (the model's layer needs it)",
                     name);
}

/* The four tensors of a batch norm over c channels. */
static int need_bn(struct lookup *lk, const char *bn, uint64_t c,
                   const float *p[4], struct memest_diag *diag)
{
    static const char *const suffix[4] = {".weight", ".bias",
                                          ".running_mean", ".running_var"};
    for (int k = 0; k < 4; k++) {
        int st = need(lk, bn, suffix[k], &c, 1, 0, &p[k], diag);
        if (st != MEMEST_OK) {
            return st;
        }
    }
    for (uint64_t i = 0; i < c; i++) {
        if (p[3][i] < 0.0f) {
            return diag_fail(diag, MEMEST_E_RANGE,
                             "tensor '%s.running_var' holds a negative "
                             "variance at element %llu",
                             bn, (unsigned long long)i);
        }
    }
    return MEMEST_OK;
}

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s);
    size_t m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

int memest_model_set_weights(memest_model *model,
                             const struct memest_tensor *tensors,
                             size_t count, struct memest_diag *diag)
{
    struct lookup lk = {tensors, count, NULL};
    float **w = NULL;
    float **b = NULL;
    int st = MEMEST_OK;

    if (diag != NULL) {
        memset(diag, 0, sizeof *diag);
        snprintf(diag->source, sizeof diag->source, "%s",
                 model && model->name ? model->name : "<weights>");
    }
    if (model == NULL || (tensors == NULL && count > 0)) {
        return diag_fail(diag, MEMEST_E_INVALID, "no model or no tensors");
    }
    lk.used = calloc(count ? count : 1, 1);
    w = calloc(model->count ? model->count : 1, sizeof *w);
    b = calloc(model->count ? model->count : 1, sizeof *b);
    if (lk.used == NULL || w == NULL || b == NULL) {
        st = diag_fail(diag, MEMEST_E_NOMEM,
                       "out of memory: the weight tables (%zu bytes)",
                       (count ? count : 1) +
                           2 * (model->count ? model->count : 1) *
                               sizeof *w);
        goto out;
    }
    for (size_t i = 0; i < model->count && st == MEMEST_OK; i++) {
        const struct memest_layer *L = &model->layers[i];
        const struct memest_op_def *def = op_def(L->kind);
        const char *name = L->name;
        uint64_t dim[OP_WEIGHT_MAX_RANK];
        unsigned rank;
        const float *pw = NULL;
        const float *pb = NULL;
        const float *bn[4] = {NULL, NULL, NULL, NULL};
        struct memest_param_tensor pt[MEMEST_PARAM_TENSORS_MAX];
        const float *pd[MEMEST_PARAM_TENSORS_MAX] = {NULL};
        size_t npt = 0;

        if (L->parameter_count == 0) {
            continue;
        }
        if (def == NULL) {
            st = diag_fail(diag, MEMEST_E_INVALID,
                           "layer '%s': kind %d has no operator definition, "
                           "so no weight layout",
                           name, (int)L->kind);
            break;
        }
        switch (def->params) {
        case OP_PARAMS_NONE:
            st = diag_fail(diag, MEMEST_E_INVALID,
                           "layer '%s': %s has %llu parameters but its "
                           "operator takes none",
                           name, memest_kind_name(L->kind),
                           (unsigned long long)L->parameter_count);
            break;
        case OP_PARAMS_BATCHNORM:
            st = need_bn(&lk, name, L->weight_count, bn, diag);
            break;
        case OP_PARAMS_TENSORS:
            npt = def->param_tensors ? def->param_tensors(L, pt) : 0;
            if (npt == 0) {
                st = diag_fail(diag, MEMEST_E_INVALID,
                               "layer '%s': %s lists no parameter tensors",
                               name, memest_kind_name(L->kind));
            }
            for (size_t k = 0; k < npt && st == MEMEST_OK; k++) {
                st = need(&lk, name, pt[k].suffix, pt[k].dim, pt[k].rank, 0,
                          &pd[k], diag);
            }
            break;
        case OP_PARAMS_WEIGHT_BIAS:
            rank = def->weight_shape(L, dim);
            st = need(&lk, name, ".weight", dim, rank, 0, &pw, diag);
            if (st == MEMEST_OK && model->extra[i].declared_bias) {
                st = need(&lk, name, ".bias", &L->units, 1, 0, &pb, diag);
            }
            if (st == MEMEST_OK && L->folded_bn != NULL) {
                st = need_bn(&lk, L->folded_bn, L->units, bn, diag);
            }
            break;
        }
        if (st != MEMEST_OK) {
            break;
        }
        w[i] = malloc(L->weight_count * sizeof(float));
        b[i] = L->bias_count ? malloc(L->bias_count * sizeof(float)) : NULL;
        if (w[i] == NULL || (L->bias_count && b[i] == NULL)) {
            st = diag_fail(diag, MEMEST_E_NOMEM,
                           "out of memory: the weights of layer '%s' "
                           "(%llu bytes)",
                           name,
                           (unsigned long long)((L->weight_count +
                                                 L->bias_count) *
                                                sizeof(float)));
            break;
        }
        switch (def->params) {
        case OP_PARAMS_NONE: /* refused above */
            break;
        case OP_PARAMS_TENSORS:
            /* the operator's list covers weight and bias exactly once
             * (memest_layer_param_tensors()), so the copies fill both */
            for (size_t k = 0; k < npt; k++) {
                uint64_t n = 1;
                for (unsigned d = 0; d < pt[k].rank; d++) {
                    n *= pt[k].dim[d];
                }
                memcpy((pt[k].in_bias ? b[i] : w[i]) + pt[k].offset, pd[k],
                       (size_t)n * sizeof(float));
            }
            break;
        case OP_PARAMS_BATCHNORM:
            /* y = (x - mean) / sqrt(var + eps) * gamma + beta
             *   = x * scale + (beta - mean * scale) */
            for (uint64_t c = 0; c < L->weight_count; c++) {
                const double scale =
                    bn[0][c] / sqrt((double)bn[3][c] + L->bn_epsilon);
                w[i][c] = (float)scale;
                b[i][c] = (float)(bn[1][c] - bn[2][c] * scale);
            }
            break;
        case OP_PARAMS_WEIGHT_BIAS:
            if (L->folded_bn != NULL) {
                /* layer(x) * scale + shift per output channel (the first
                 * dimension of the weight, absorbs_bn): the weights of
                 * channel c scale by scale[c]; the bias becomes
                 * (bias - mean) * scale + beta */
                const uint64_t per = L->weight_count / L->units;
                for (uint64_t c = 0; c < L->units; c++) {
                    const double scale =
                        bn[0][c] / sqrt((double)bn[3][c] + L->bn_epsilon);
                    const double bias = pb ? pb[c] : 0.0;
                    for (uint64_t k = 0; k < per; k++) {
                        w[i][c * per + k] = (float)(pw[c * per + k] * scale);
                    }
                    b[i][c] = (float)((bias - bn[2][c]) * scale + bn[1][c]);
                }
                break;
            }
            memcpy(w[i], pw, L->weight_count * sizeof(float));
            if (L->bias_count) {
                memcpy(b[i], pb, L->bias_count * sizeof(float));
            }
            break;
        }
    }
    for (size_t k = 0; k < count && st == MEMEST_OK; k++) {
        if (!lk.used[k] && !(tensors[k].name != NULL &&
                             ends_with(tensors[k].name,
                                       ".num_batches_tracked"))) {
            st = diag_fail(diag, MEMEST_E_PARSE,
                           "tensor '%s' matches no layer of the model",
                           tensors[k].name ? tensors[k].name : "(unnamed)");
        }
    }
    if (st == MEMEST_OK) {
        for (size_t i = 0; i < model->count; i++) {
            if (model->layers[i].parameter_count == 0) {
                continue;
            }
            free(model->extra[i].weight);
            free(model->extra[i].bias);
            model->extra[i].weight = w[i];
            model->extra[i].bias = b[i];
            model->layers[i].weight = w[i];
            model->layers[i].bias = b[i];
            w[i] = NULL;
            b[i] = NULL;
        }
    }
out:
    /* either table may be the one whose allocation failed */
    for (size_t i = 0; i < model->count; i++) {
        if (w != NULL) {
            free(w[i]);
        }
        if (b != NULL) {
            free(b[i]);
        }
    }
    free(w);
    free(b);
    free(lk.used);
    return st;
}
