/* Per-tensor error of static int8 against fp32 (prof_quant_error): the
 * model run twice per sample, at fp32 and at static int8, each through the
 * executor's observer; the fp32 tensors of a sample are kept, then the
 * int8 run compares each of its (dequantised) tensors with them. */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "edgefit/profile.h"
#include "exec/executor.h"
#include "internal.h"
#include "alloc_rec.h" /* last: it wraps malloc and co. */

struct err_ctx {
    int pass;               /* 1: fp32 (keep), 2: int8 (compare) */
    size_t nt;              /* tensors */
    const size_t *offset;   /* tensor t's floats of one sample in keep */
    const size_t *per;      /* floats of one sample of tensor t */
    float *keep;            /* the fp32 tensors of the current sample */
    bool *seen;             /* tensor t observed in this pass */
    struct prof_tensor_error *rows;
    int status;
    struct prof_diag *diag;
};

static int observe(void *vctx, const struct prof_exec_tensor *t)
{
    struct err_ctx *c = vctx;
    if (t->tensor >= c->nt || t->batch != 1 || t->count != c->per[t->tensor]) {
        exec_diag_set(c->diag, "tensor %s: %zu values observed, %zu expected",
                      t->name ? t->name : "?", t->count,
                      t->tensor < c->nt ? c->per[t->tensor] : (size_t)0);
        c->status = PROF_E_RANGE;
        return 1;
    }
    if (t->layout != 0) {
        /* both runs ask for NCHW; another layout would pair the wrong
         * elements */
        exec_diag_set(c->diag, "tensor %s: observed in layout %d, not NCHW",
                      t->name, t->layout);
        c->status = PROF_E_RANGE;
        return 1;
    }
    float *k = c->keep + c->offset[t->tensor];
    c->seen[t->tensor] = true;
    if (c->pass == 1) {
        memcpy(k, t->data, t->count * sizeof *k);
        return 0;
    }
    struct prof_tensor_error *r = &c->rows[t->tensor];
    for (size_t i = 0; i < t->count; i++) {
        const double x = k[i], y = t->data[i];
        if (!isfinite(x) || !isfinite(y)) {
            exec_diag_set(c->diag, "tensor %s: a value that is not finite "
                          "(fp32 %g, int8 %g)", t->name, x, y);
            c->status = PROF_E_RANGE;
            return 1;
        }
        const double e = x - y;
        r->signal_sum_sq += x * x;
        r->error_sum_sq += e * e;
        r->max_abs_error = fabs(e) > r->max_abs_error ? fabs(e)
                                                      : r->max_abs_error;
    }
    r->elements += t->count;
    return 0;
}

/* The first largest of n values. */
static size_t argmax(const float *v, size_t n)
{
    size_t best = 0;
    for (size_t i = 1; i < n; i++) {
        best = v[i] > v[best] ? i : best;
    }
    return best;
}

PROF_API void prof_quant_error_opts_init(struct prof_quant_error_opts *o)
{
    if (o) {
        o->samples = PROF_RANGES_DEFAULT_SAMPLES;
        o->seed = 42;
        o->threads = 1;
        o->int8_requant = PROF_INT8_REQUANT_MODEL;
    }
}

PROF_API void prof_quant_error_finish(struct prof_quant_error *e)
{
    if (e) {
        free(e->tensors);
        memset(e, 0, sizeof *e);
    }
}

/* 10 log10(s / e) with the ends spelt out (see profile.h). */
static double sqnr_db(double s, double e)
{
    if (e == 0.0) {
        return INFINITY;
    }
    if (s == 0.0) {
        return -INFINITY;
    }
    return 10.0 * log10(s / e);
}

/* Run one sample at both precisions: keep fp32's tensors, then compare
 * int8's with them; the outputs land in of32 and oi8. */
static int run_sample(prof_exec *fp, prof_exec *i8, const float *x,
                      size_t n_in, struct err_ctx *c, float *of32,
                      float *oi8, size_t n_out)
{
    const float *in = x;
    for (int pass = 1; pass <= 2; pass++) {
        c->pass = pass;
        memset(c->seen, 0, c->nt * sizeof *c->seen);
        prof_exec *ex = pass == 1 ? fp : i8;
        int st = prof_exec_run_observed(ex, &in, &n_in, 1, observe, c);
        if (st != PROF_OK) {
            return st == PROF_E_CALLBACK ? c->status : st;
        }
        for (size_t t = 0; t < c->nt; t++) {
            if (!c->seen[t]) {
                exec_diag_set(c->diag, "tensor %zu was not observed", t);
                return PROF_E_RANGE;
            }
        }
        /* the output as the model gives it (a final softmax of int8 in
         * float on the dequantised logits) */
        st = prof_exec_run(ex, x, n_in, pass == 1 ? of32 : oi8, n_out);
        if (st != PROF_OK) {
            return st;
        }
    }
    return PROF_OK;
}

PROF_API int prof_quant_error(const memest_model *model,
                              const struct prof_dataset *data,
                              const struct prof_ranges *ranges,
                              const struct prof_quant_error_opts *opts,
                              struct prof_quant_error *out,
                              struct prof_diag *diag)
{
    if (out) {
        memset(out, 0, sizeof *out);
    }
    if (diag) {
        memset(diag, 0, sizeof *diag);
    }
    if (!model || !data || !out || !data->x) {
        return PROF_E_INVALID;
    }
    struct prof_quant_error_opts o;
    if (opts) {
        o = *opts;
    } else {
        prof_quant_error_opts_init(&o);
    }
    if (o.threads > 64) {
        exec_diag_set(diag, "threads %u: more than 64", o.threads);
        return PROF_E_RANGE;
    }
    const size_t nt = memest_model_tensor_count(model);
    const size_t ni = memest_model_input_count(model);
    if (ranges && ranges->count != nt) {
        exec_diag_set(diag, "the ranges hold %zu tensors; the model %s has "
                      "%zu", ranges->count, memest_model_name(model), nt);
        return PROF_E_RANGE;
    }
    int st = prof_dataset_check_input(model, data, diag);
    if (st != PROF_OK) {
        return st;
    }
    const uint64_t count =
        o.samples && o.samples < data->count ? o.samples : data->count;

    struct prof_exec_opts eo;
    prof_exec_opts_init(&eo);
    eo.batch = 1; /* as the calibration: values of a sample alone */
    eo.seed = o.seed;
    eo.threads = o.threads ? o.threads : 1;
    eo.channel_blocked = 0; /* element i of both runs is the same element */
    prof_exec *fp = NULL, *i8 = NULL;
    size_t *offset = calloc(nt + 1, sizeof *offset);
    size_t *per = calloc(nt + 1, sizeof *per);
    bool *seen = calloc(nt + 1, sizeof *seen);
    struct prof_tensor_error *rows = calloc(nt + 1, sizeof *rows);
    float *keep = NULL, *of32 = NULL, *oi8 = NULL;
    st = offset && per && seen && rows ? PROF_OK : PROF_E_NOMEM;
    if (st == PROF_OK) {
        eo.precision = MEMEST_FP32;
        st = prof_exec_create(model, &eo, &fp, diag);
    }
    if (st == PROF_OK) {
        eo.precision = MEMEST_INT8;
        eo.ranges = ranges;
        eo.int8_requant = o.int8_requant;
        st = prof_exec_create(model, &eo, &i8, diag);
    }
    if (st != PROF_OK) {
        goto done;
    }
    /* the floats of one sample of every tensor, end to end */
    size_t total = 0;
    for (size_t t = 0; t < nt; t++) {
        const struct memest_shape s =
            t < ni ? memest_model_input_shape_at(model, t)
                   : memest_model_layer(model, t - ni)->out_shape;
        size_t n = 1;
        for (unsigned a = 0; a < s.rank; a++) {
            if (s.dim[a] && n > SIZE_MAX / s.dim[a]) {
                st = PROF_E_OVERFLOW;
                goto done;
            }
            n *= (size_t)s.dim[a];
        }
        if (total > SIZE_MAX / sizeof(float) - n) {
            st = PROF_E_OVERFLOW;
            goto done;
        }
        offset[t] = total;
        per[t] = n;
        total += n;
    }
    const size_t n_in = prof_exec_input_count(fp);
    const size_t n_out = prof_exec_output_count(fp);
    keep = malloc((total ? total : 1) * sizeof *keep);
    of32 = malloc(n_out * sizeof *of32);
    oi8 = malloc(n_out * sizeof *oi8);
    if (!keep || !of32 || !oi8) {
        st = PROF_E_NOMEM;
        goto done;
    }
    struct err_ctx c = {0, nt, offset, per, keep, seen, rows, PROF_OK, diag};
    const bool classifier = n_out >= 2;
    const bool labelled = classifier && data->y != NULL;
    uint64_t agree = 0, right32 = 0, right8 = 0;
    for (uint64_t s = 0; s < count; s++) {
        st = run_sample(fp, i8, data->x + s * data->sample_count, n_in, &c,
                        of32, oi8, n_out);
        if (st != PROF_OK) {
            goto done;
        }
        if (classifier) {
            const size_t a = argmax(of32, n_out), b = argmax(oi8, n_out);
            agree += a == b;
            if (labelled) {
                right32 += a == data->y[s];
                right8 += b == data->y[s];
            }
        }
    }
    for (size_t t = 0; t < nt; t++) {
        struct prof_tensor_error *r = &rows[t];
        r->tensor = t;
        if (t < ni) {
            r->name = memest_model_input_name(model, t);
            r->kind = MEMEST_KIND_INPUT;
        } else {
            const struct memest_layer *l = memest_model_layer(model, t - ni);
            r->name = l->name;
            r->kind = l->kind;
        }
        r->sqnr_db = sqnr_db(r->signal_sum_sq, r->error_sum_sq);
        if (ranges) {
            r->scale = ranges->tensors[t].scale;
            r->zero_point = ranges->tensors[t].zero_point;
        } else {
            struct memest_quant q;
            if (memest_model_tensor_quant(model, t, &q) == MEMEST_OK) {
                r->scale = q.scale;
                r->zero_point = q.zero_point;
            }
        }
    }
    out->samples = count;
    out->count = nt;
    out->tensors = rows;
    rows = NULL;
    out->classifier = classifier;
    out->top1_agree = agree;
    out->top1_agreement =
        classifier && count ? (double)agree / (double)count : NAN;
    out->labelled = labelled;
    out->fp32_accuracy = labelled ? (double)right32 / (double)count : NAN;
    out->int8_accuracy = labelled ? (double)right8 / (double)count : NAN;
done:
    free(rows);
    free(offset);
    free(per);
    free(seen);
    free(keep);
    free(of32);
    free(oi8);
    prof_exec_destroy(fp);
    prof_exec_destroy(i8);
    return st;
}
