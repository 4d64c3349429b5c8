/* Activation ranges for static int8: the fp32 model run on calibration
 * samples through the executor's observer (prof_exec_run_observed), one
 * range per tensor by min-max, a percentile of |x| or entropy (KL), and
 * the int8 scale and zero point of each range. The calibration file is in
 * quant_calib_file.c. This is not the host calibration of calib.c. */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "edgefit/profile.h"
#include "exec/executor.h"
#include "internal.h"
#include "alloc_rec.h" /* last: it wraps malloc and co. */

/* What is gathered per tensor. The histogram of |x| is filled in a second
 * pass, once max|x| over every sample is known, so the bins (and their
 * integer counts) do not depend on the order of the samples. */
struct acc {
    float min, max;
    double max_abs;
    uint64_t *hist; /* PROF_RANGES_BINS counts, or NULL (min-max) */
};

struct run_ctx {
    struct acc *acc;
    int pass;        /* 1: min, max; 2: histograms */
    uint64_t valid;  /* samples of the batch that are real, not padding */
    int status;
    struct prof_diag *diag;
};

/* The bin of |x|: computed in double, as the reference in
 * scripts/make-calibration-fixture.py does, so both agree bit for bit. */
static size_t bin_of(float x, double max_abs)
{
    const double b = (double)fabsf(x) * (double)PROF_RANGES_BINS / max_abs;
    return b >= (double)(PROF_RANGES_BINS - 1) ? PROF_RANGES_BINS - 1
                                               : (size_t)b;
}

static int observe(void *vctx, const struct prof_exec_tensor *t)
{
    struct run_ctx *c = vctx;
    struct acc *a = &c->acc[t->tensor];
    /* Padding samples of a last partial batch follow the real ones (the
     * batch is the outermost axis in both layouts) and are skipped. */
    const size_t n = t->count / t->batch * (size_t)c->valid;
    if (c->pass == 1) {
        for (size_t i = 0; i < n; i++) {
            const float x = t->data[i];
            if (!isfinite(x)) {
                exec_diag_set(c->diag, "tensor %s: a value that is not finite "
                         "(%g) on calibration data", t->name, (double)x);
                c->status = PROF_E_RANGE;
                return 1;
            }
            a->min = x < a->min ? x : a->min;
            a->max = x > a->max ? x : a->max;
        }
        return 0;
    }
    if (a->max_abs > 0.0) {
        for (size_t i = 0; i < n; i++) {
            a->hist[bin_of(t->data[i], a->max_abs)]++;
        }
    } else {
        a->hist[0] += n;
    }
    return 0;
}

/* Run every batch of the first `count` samples, padding the last one with
 * zeros (ignored by the observer). */
static int run_pass(prof_exec *ex, const struct prof_dataset *d,
                    uint64_t count, struct run_ctx *c, float *xb)
{
    const uint64_t batch = prof_exec_batch(ex);
    const size_t per = (size_t)d->sample_count;
    const size_t n_in = prof_exec_input_count(ex);
    for (uint64_t at = 0; at < count; at += batch) {
        const uint64_t take = count - at < batch ? count - at : batch;
        memcpy(xb, d->x + at * per, (size_t)take * per * sizeof(float));
        memset(xb + take * per, 0,
               (size_t)(batch - take) * per * sizeof(float));
        c->valid = take;
        const float *in = xb;
        int st = prof_exec_run_observed(ex, &in, &n_in, 1, observe, c);
        if (st != PROF_OK) {
            return st == PROF_E_CALLBACK ? c->status : st;
        }
    }
    return PROF_OK;
}

/* The first bin at which the cumulative share of |x| reaches pct %
 * (numpy: searchsorted(cumsum(hist) / total, pct / 100)). */
static size_t percentile_bin(const uint64_t *h, double pct)
{
    uint64_t total = 0;
    for (size_t i = 0; i < PROF_RANGES_BINS; i++) {
        total += h[i];
    }
    uint64_t cum = 0;
    for (size_t i = 0; i < PROF_RANGES_BINS; i++) {
        cum += h[i];
        if ((double)cum / (double)total >= pct / 100.0) {
            return i;
        }
    }
    return PROF_RANGES_BINS - 1;
}

/* MXNet's _smooth_distribution (eps 1e-4) in place: false when p is all
 * zero or smoothing would leave a bin that is not positive. */
static bool smooth(double *p, size_t n)
{
    const double eps = 1e-4;
    size_t zeros = 0;
    for (size_t i = 0; i < n; i++) {
        zeros += p[i] == 0.0;
    }
    if (zeros == n) {
        return false;
    }
    const double eps1 = eps * (double)zeros / (double)(n - zeros);
    for (size_t i = 0; i < n; i++) {
        p[i] = p[i] == 0.0 ? eps : p[i] - eps1;
        if (!(p[i] > 0.0)) {
            return false;
        }
    }
    return true;
}

/* KL(P || Q) of two positive vectors, each normalised first (scipy's
 * entropy(p, q)). */
static double kl(const double *p, const double *q, size_t n)
{
    double ps = 0.0, qs = 0.0;
    for (size_t i = 0; i < n; i++) {
        ps += p[i];
        qs += q[i];
    }
    double d = 0.0;
    for (size_t i = 0; i < n; i++) {
        const double pi = p[i] / ps, qi = q[i] / qs;
        d += pi * log(pi / qi);
    }
    return d;
}

/* The number of bins i (LEVELS..BINS) the entropy method keeps; p and q
 * are scratch of PROF_RANGES_BINS doubles. See profile.h. */
static size_t entropy_bins(const uint64_t *h, double *p, double *q)
{
    const size_t L = PROF_RANGES_LEVELS;
    double best = INFINITY;
    size_t best_i = PROF_RANGES_BINS;
    for (size_t i = L; i <= PROF_RANGES_BINS; i++) {
        uint64_t outliers = 0;
        for (size_t j = i; j < PROF_RANGES_BINS; j++) {
            outliers += h[j];
        }
        for (size_t j = 0; j < i; j++) {
            p[j] = (double)h[j];
            q[j] = 0.0;
        }
        p[i - 1] += (double)outliers;
        const size_t merged = i / L;
        for (size_t g = 0; g < L; g++) {
            const size_t lo = g * merged;
            const size_t hi = g + 1 == L ? i : lo + merged;
            uint64_t sum = 0, nonzero = 0;
            for (size_t j = lo; j < hi; j++) {
                sum += h[j];
                nonzero += h[j] != 0;
            }
            for (size_t j = lo; j < hi && nonzero; j++) {
                q[j] = h[j] != 0 ? (double)sum / (double)nonzero : 0.0;
            }
        }
        for (size_t j = 0; j < i; j++) {
            q[j] = p[j] == 0.0 ? 0.0 : q[j];
        }
        if (!smooth(p, i) || !smooth(q, i)) {
            continue;
        }
        const double d = kl(p, q, i);
        if (d < best) {
            best = d;
            best_i = i;
        }
    }
    return best_i;
}

PROF_API const char *prof_range_method_name(enum prof_range_method m)
{
    switch (m) {
    case PROF_RANGE_MINMAX:
        return "minmax";
    case PROF_RANGE_PERCENTILE:
        return "percentile";
    case PROF_RANGE_ENTROPY:
        return "entropy";
    }
    return NULL;
}

PROF_API int prof_range_method_parse(const char *text,
                                     enum prof_range_method *out)
{
    static const enum prof_range_method all[] = {
        PROF_RANGE_MINMAX, PROF_RANGE_PERCENTILE, PROF_RANGE_ENTROPY};
    if (!text || !out) {
        return PROF_E_INVALID;
    }
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        if (strcmp(text, prof_range_method_name(all[i])) == 0) {
            *out = all[i];
            return PROF_OK;
        }
    }
    return PROF_E_INVALID;
}

PROF_API void prof_ranges_opts_init(struct prof_ranges_opts *opts)
{
    if (!opts) {
        return;
    }
    memset(opts, 0, sizeof *opts);
    opts->method = PROF_RANGE_MINMAX;
    opts->percentile = 99.99;
    opts->samples = PROF_RANGES_DEFAULT_SAMPLES;
    opts->seed = 42;
    opts->threads = 1;
}

/* numpy's round: half to even (the default rounding mode of rint). */
PROF_API int prof_quant_params(float min, float max, float *scale,
                               int32_t *zero_point)
{
    if (!scale || !zero_point) {
        return PROF_E_INVALID;
    }
    if (!isfinite(min) || !isfinite(max) || min > max) {
        return PROF_E_RANGE;
    }
    const float rmin = min < 0.0f ? min : 0.0f;
    const float rmax = max > 0.0f ? max : 0.0f;
    const float s = rmax == rmin ? 1.0f : (rmax - rmin) / 255.0f;
    float zp = rintf(-128.0f - rmin / s);
    zp = zp < -128.0f ? -128.0f : zp > 127.0f ? 127.0f : zp;
    *scale = s;
    *zero_point = (int32_t)zp;
    return PROF_OK;
}

PROF_API void prof_ranges_finish(struct prof_ranges *r)
{
    if (!r) {
        return;
    }
    for (size_t i = 0; r->tensors && i < r->count; i++) {
        free(r->tensors[i].name);
    }
    free(r->tensors);
    free(r->model);
    memset(r, 0, sizeof *r);
}

PROF_API bool prof_shapes_match(const uint64_t *a, unsigned na,
                                const uint64_t *b, unsigned nb)
{
    unsigned i = 0, j = 0;
    for (;;) {
        while (i < na && a[i] == 1) {
            i++;
        }
        while (j < nb && b[j] == 1) {
            j++;
        }
        if (i == na || j == nb) {
            return i == na && j == nb;
        }
        if (a[i] != b[j]) {
            return false;
        }
        i++;
        j++;
    }
}

static void shape_text(const uint64_t *dim, unsigned rank, char *buf,
                       size_t len)
{
    size_t at = 0;
    buf[0] = '\0';
    for (unsigned i = 0; i < rank && at < len; i++) {
        int w = snprintf(buf + at, len - at, "%s%llu", i ? "x" : "",
                         (unsigned long long)dim[i]);
        at += w > 0 ? (size_t)w : 0;
    }
}

PROF_API int prof_dataset_check_input(const memest_model *model,
                                      const struct prof_dataset *d,
                                      struct prof_diag *diag)
{
    if (!model || !d) {
        return PROF_E_INVALID;
    }
    const char *name = memest_model_name(model);
    const size_t ni = memest_model_input_count(model);
    if (ni != 1) {
        exec_diag_set(diag, "the model %s has %zu inputs; a data set feeds one",
                 name, ni);
        return PROF_E_UNSUPPORTED;
    }
    const struct memest_shape in = memest_model_input_shape_at(model, 0);
    const bool flat = in.rank == 1 && in.dim[0] == d->sample_count;
    if (!flat && !prof_shapes_match(d->shape, d->rank, in.dim, in.rank)) {
        char have[128], want[128];
        prof_dataset_shape_text(d, have, sizeof have);
        shape_text(in.dim, in.rank, want, sizeof want);
        exec_diag_set(diag, "the model %s reads %s%s per sample; the data has "
                 "%s per sample (%llu values, %s)", name, want,
                 in.rank == 1 ? " values" : "", have,
                 (unsigned long long)d->sample_count,
                 d->source ? d->source : "the data set");
        return PROF_E_RANGE;
    }
    return PROF_OK;
}

static int check_opts(const struct prof_ranges_opts *o,
                      struct prof_diag *diag)
{
    if (!prof_range_method_name(o->method)) {
        exec_diag_set(diag, "unknown range method %d", (int)o->method);
        return PROF_E_RANGE;
    }
    if (o->method == PROF_RANGE_PERCENTILE &&
        !(o->percentile > 50.0 && o->percentile <= 100.0)) {
        exec_diag_set(diag, "percentile %g: outside (50, 100]", o->percentile);
        return PROF_E_RANGE;
    }
    if (o->threads > 64) {
        exec_diag_set(diag, "calibration threads %u: more than 64", o->threads);
        return PROF_E_RANGE;
    }
    return PROF_OK;
}

/* The chosen range of one tensor from its statistics. */
static void choose(const struct acc *a, const struct prof_ranges_opts *o,
                   double *scratch, struct prof_tensor_range *r)
{
    r->observed_min = a->min;
    r->observed_max = a->max;
    r->min = a->min;
    r->max = a->max;
    if (o->method != PROF_RANGE_MINMAX && a->max_abs > 0.0) {
        const size_t edge =
            o->method == PROF_RANGE_PERCENTILE
                ? percentile_bin(a->hist, o->percentile) + 1
                : entropy_bins(a->hist, scratch, scratch + PROF_RANGES_BINS);
        const float t =
            (float)(a->max_abs * (double)edge / (double)PROF_RANGES_BINS);
        r->min = a->min > -t ? a->min : -t;
        r->max = a->max < t ? a->max : t;
    }
    (void)prof_quant_params(r->min, r->max, &r->scale, &r->zero_point);
}

/* A layer whose output holds only values of its input (or zeros, which
 * every range holds), so it keeps its input's scale and zero point, as
 * TFLite and ONNX Runtime's quantizer share one scale across it: a max
 * pool, a view (flatten, reshape, identity, dropout), a pad with 0, a
 * slice, a channel shuffle, a transpose, a nearest resize; none with an
 * activation. */
static bool keeps_input_range(const struct memest_layer *L)
{
    if (L->act != MEMEST_ACT_NONE) {
        return false;
    }
    const enum memest_kind k = L->kind;
    return memest_kind_is_view(k) || k == MEMEST_KIND_MAXPOOL ||
           k == MEMEST_KIND_SLICE || k == MEMEST_KIND_SHUFFLE ||
           k == MEMEST_KIND_TRANSPOSE ||
           (k == MEMEST_KIND_PAD && L->pad_value == 0.0) ||
           (k == MEMEST_KIND_RESIZE && L->resize_mode == 0);
}

PROF_API int prof_ranges_calibrate(const memest_model *model,
                                   const struct prof_dataset *data,
                                   const struct prof_ranges_opts *opts,
                                   struct prof_ranges *out,
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
    struct prof_ranges_opts o;
    if (opts) {
        o = *opts;
    } else {
        prof_ranges_opts_init(&o);
    }
    int st = check_opts(&o, diag);
    if (st == PROF_OK) {
        st = prof_dataset_check_input(model, data, diag);
    }
    if (st != PROF_OK) {
        return st;
    }
    const uint64_t count =
        o.samples && o.samples < data->count ? o.samples : data->count;

    struct prof_exec_opts eo;
    prof_exec_opts_init(&eo);
    eo.batch = 1; /* see "Determinism" in profile.h */
    eo.precision = MEMEST_FP32;
    eo.seed = o.seed;
    eo.threads = o.threads ? o.threads : 1;
    prof_exec *ex = NULL;
    const size_t nt = memest_model_tensor_count(model);
    struct acc *acc = calloc(nt, sizeof *acc);
    float *xb = NULL;
    double *scratch = NULL;
    st = acc ? prof_exec_create(model, &eo, &ex, diag) : PROF_E_NOMEM;
    if (st != PROF_OK) {
        goto done;
    }
    size_t n_in = prof_exec_input_count(ex);
    xb = malloc(n_in * sizeof *xb);
    if (!xb) {
        st = PROF_E_NOMEM;
        goto done;
    }
    for (size_t t = 0; t < nt; t++) {
        acc[t].min = INFINITY;
        acc[t].max = -INFINITY;
    }
    struct run_ctx c = {acc, 1, 0, PROF_OK, diag};
    st = run_pass(ex, data, count, &c, xb);
    if (st != PROF_OK) {
        goto done;
    }
    if (o.method != PROF_RANGE_MINMAX) {
        for (size_t t = 0; t < nt; t++) {
            const double lo = fabs((double)acc[t].min);
            const double hi = fabs((double)acc[t].max);
            acc[t].max_abs = lo > hi ? lo : hi;
            acc[t].hist = calloc(PROF_RANGES_BINS, sizeof *acc[t].hist);
            if (!acc[t].hist) {
                st = PROF_E_NOMEM;
                goto done;
            }
        }
        c.pass = 2;
        st = run_pass(ex, data, count, &c, xb);
        if (st != PROF_OK) {
            goto done;
        }
        scratch = malloc(2 * PROF_RANGES_BINS * sizeof *scratch);
        if (!scratch) {
            st = PROF_E_NOMEM;
            goto done;
        }
    }
    out->tensors = calloc(nt, sizeof *out->tensors);
    out->model = strdup(memest_model_name(model));
    if (!out->tensors || !out->model) {
        st = PROF_E_NOMEM;
        goto done;
    }
    out->count = nt;
    out->method = o.method;
    out->percentile = o.method == PROF_RANGE_PERCENTILE ? o.percentile : 0;
    out->samples = count;
    const size_t ni = memest_model_input_count(model);
    for (size_t t = 0; t < nt; t++) {
        const char *name = t < ni ? memest_model_input_name(model, t)
                                  : memest_model_layer(model, t - ni)->name;
        out->tensors[t].name = strdup(name ? name : "");
        if (!out->tensors[t].name) {
            st = PROF_E_NOMEM;
            goto done;
        }
        choose(&acc[t], &o, scratch, &out->tensors[t]);
        const struct memest_layer *L =
            t < ni ? NULL : memest_model_layer(model, t - ni);
        if (L && keeps_input_range(L)) {
            /* its input precedes it: already chosen (a chain of such
             * layers takes its first input's) */
            const struct prof_tensor_range *in = &out->tensors[L->inputs[0]];
            struct prof_tensor_range *r = &out->tensors[t];
            r->min = in->min;
            r->max = in->max;
            r->scale = in->scale;
            r->zero_point = in->zero_point;
        }
    }
done:
    if (st != PROF_OK) {
        prof_ranges_finish(out);
    }
    for (size_t t = 0; acc && t < nt; t++) {
        free(acc[t].hist);
    }
    free(acc);
    free(xb);
    free(scratch);
    prof_exec_destroy(ex);
    return st;
}
