/* The layer table as the tools people know present it: each layer's share
 * of the time and the running share (TFLite's benchmark_model op profile,
 * "%" and "cdf%"), the spread of the repeats and the first run, an order
 * (--sort) and a cut (--top), a summary by operator kind (its "summary by
 * node type"), a totals block (torchinfo's), and one predicted column per
 * device of --device A,B,... The numbers come from layerwise.c's run;
 * this file only arranges them. */
#include <ctype.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "layerwise.h"
#include "model.h"
#include "table.h"
#include "alloc_rec.h" /* last: it wraps malloc and co. */

bool layerwise_sort_parse(const char *s, enum layerwise_sort *out)
{
    static const struct {
        const char *name;
        enum layerwise_sort sort;
    } names[] = {
        {"order", LAYERWISE_SORT_ORDER},   {"time", LAYERWISE_SORT_TIME},
        {"macs", LAYERWISE_SORT_MACS},     {"params", LAYERWISE_SORT_PARAMS},
        {"memory", LAYERWISE_SORT_MEMORY}, {"name", LAYERWISE_SORT_NAME},
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (strcmp(s, names[i].name) == 0) {
            *out = names[i].sort;
            return true;
        }
    }
    return false;
}

void layerwise_tables_free(struct layerwise *r)
{
    for (size_t k = 0; k < r->ndevices; k++) {
        free(r->devices[k].pred);
    }
    free(r->devices);
    art_table_destroy(r->totals);
    art_table_destroy(r->by_kind_view);
    art_table_destroy(r->by_kind);
    free(r->kinds);
    free(r->order);
    free(r->cumulative_share);
    free(r->time_share);
    r->devices = NULL;
    r->ndevices = 0;
    r->totals = r->by_kind = r->by_kind_view = NULL;
    r->kinds = NULL;
    r->order = NULL;
    r->time_share = r->cumulative_share = NULL;
}

/* ---- several devices ------------------------------------------------------- */

bool layerwise_is_device_list(const char *spec)
{
    /* an inline device (name=X,bandwidth_gbps=...) has commas too */
    return spec && strchr(spec, ',') && !strchr(spec, '=');
}

int layerwise_resolve_devices(const struct layerwise_opts *o,
                              struct layerwise *r)
{
    const char *spec = o->dev.device;
    size_t n = 1;
    for (const char *p = spec; *p; p++) {
        n += *p == ',';
    }
    r->devices = calloc(n, sizeof *r->devices);
    if (!r->devices) {
        cli_error("out of memory: the list of --devices");
        return CLI_EXIT_FAILURE;
    }
    const char *p = spec;
    for (size_t k = 0; k < n; k++) {
        const size_t len = strcspn(p, ",");
        struct layerwise_device *d = &r->devices[k];
        if (len == 0 || len >= sizeof d->name) {
            cli_error("--device %s: device %zu of the list is %s", spec,
                      k + 1, len ? "too long" : "empty");
            return CLI_EXIT_USAGE;
        }
        memcpy(d->name, p, len);
        d->name[len] = '\0';
        for (size_t j = 0; j < k; j++) {
            if (strcmp(r->devices[j].name, d->name) == 0) {
                cli_error("--device %s: %s is listed twice", spec, d->name);
                return CLI_EXIT_USAGE;
            }
        }
        /* the column: predicted_ms_ and the name in [a-z0-9_] */
        char *c = d->column + snprintf(d->column, sizeof d->column,
                                       "predicted_ms_");
        for (size_t j = 0; j < len; j++) {
            const unsigned char ch = (unsigned char)d->name[j];
            *c++ = isalnum(ch) ? (char)tolower(ch) : '_';
        }
        *c = '\0';
        for (size_t j = 0; j < k; j++) {
            if (strcmp(r->devices[j].column, d->column) == 0) {
                cli_error("--device %s: %s and %s would share the column %s",
                          spec, r->devices[j].name, d->name, d->column);
                return CLI_EXIT_USAGE;
            }
        }
        d->is_host = strcmp(d->name, "host") == 0;
        if (!d->is_host &&
            !cli_device_resolve(d->name,
                                o->dev.devices_file ? &r->devs : NULL,
                                &d->dev)) {
            return CLI_EXIT_USAGE;
        }
        p += len + (p[len] == ',');
    }
    r->ndevices = n;
    return CLI_EXIT_OK;
}

int layerwise_predict_devices(const struct layerwise_opts *o,
                              struct layerwise *r)
{
    for (size_t k = 0; k < r->ndevices; k++) {
        struct layerwise_device *d = &r->devices[k];
        /* as a run with this device alone: the host is the calibrated,
         * cache-aware one, and --power-watts replaces any device's power
         * (prof_exec_predict_all) */
        if (d->is_host) {
            d->dev = r->host;
        } else if (o->have_power) {
            d->dev.power_watts = o->power_watts;
        }
        d->prof = &r->prof;
        d->pred = calloc(r->prof.count, sizeof *d->pred);
        if (!d->pred) {
            cli_error("out of memory: a device's predictions");
            return CLI_EXIT_FAILURE;
        }
        const int st = prof_exec_predict(&r->prof, &d->dev, d->pred,
                                         &d->total);
        if (st != PROF_OK) {
            return cli_prof_failed("predicting", st, NULL);
        }
    }
    return CLI_EXIT_OK;
}

/* ---- the columns ------------------------------------------------------------ */

#define RES(ctx) ((const struct layerwise *)(ctx))

static bool is_layer(const struct layerwise *r, size_t i)
{
    return r->prof.ops[i].info.kind != MEMEST_KIND_INPUT;
}

static bool real_of(bool defined, double x, union cli_value *v)
{
    v->r = x;
    return defined && isfinite(x);
}

static bool get_share(const void *ctx, size_t i, union cli_value *v)
{
    return real_of(is_layer(RES(ctx), i), RES(ctx)->time_share[i], v);
}

static bool get_cumulative(const void *ctx, size_t i, union cli_value *v)
{
    return real_of(is_layer(RES(ctx), i), RES(ctx)->cumulative_share[i], v);
}

static bool get_min(const void *ctx, size_t i, union cli_value *v)
{
    return real_of(is_layer(RES(ctx), i), RES(ctx)->prof.ops[i].stats.min_ms,
                   v);
}

static bool get_max(const void *ctx, size_t i, union cli_value *v)
{
    return real_of(is_layer(RES(ctx), i), RES(ctx)->prof.ops[i].stats.max_ms,
                   v);
}

static bool get_std(const void *ctx, size_t i, union cli_value *v)
{
    return real_of(is_layer(RES(ctx), i),
                   RES(ctx)->prof.ops[i].stats.stddev_ms, v);
}

static bool get_first(const void *ctx, size_t i, union cli_value *v)
{
    return real_of(is_layer(RES(ctx), i),
                   RES(ctx)->prof.ops[i].stats.first_ms, v);
}

const struct cli_column layerwise_share_columns[] = {
    {"time_share", ART_REAL, get_share, CLI_COL_BRIEF},
    {"cumulative_time_share", ART_REAL, get_cumulative, CLI_COL_BRIEF},
    {"latency_min_ms", ART_REAL, get_min, CLI_COL_ALL},
    {"latency_max_ms", ART_REAL, get_max, CLI_COL_ALL},
    {"latency_std_ms", ART_REAL, get_std, CLI_COL_ALL},
    {"first_run_ms", ART_REAL, get_first, CLI_COL_ALL},
};
const size_t layerwise_share_column_count =
    sizeof layerwise_share_columns / sizeof layerwise_share_columns[0];

/* A device's column: the context is the device, the input row empty as
 * in predicted_ms. */
static bool get_device_pred(const void *ctx, size_t i, union cli_value *v)
{
    const struct layerwise_device *d = ctx;
    v->r = d->pred[i].pred.predicted_ms;
    return d->prof->ops[i].info.kind != MEMEST_KIND_INPUT && isfinite(v->r);
}

void layerwise_device_columns(const struct layerwise *r,
                              struct cli_column *cols,
                              struct cli_column_set *sets)
{
    for (size_t k = 0; k < r->ndevices; k++) {
        cols[k] = (struct cli_column){r->devices[k].column, ART_REAL,
                                      get_device_pred, CLI_COL_BRIEF};
        sets[k] = (struct cli_column_set){&cols[k], 1, &r->devices[k]};
    }
}

/* ---- order, shares, kinds, totals ------------------------------------------ */

/* A row to sort with its key: a number (the heavier first) or a name;
 * ties keep the run's order. */
struct sort_item {
    size_t row;
    double key;
    const char *name;
};

/* The heavier first. */
static int cmp_desc(double a, double b)
{
    return (a < b) - (a > b);
}

static int cmp_items(const void *pa, const void *pb)
{
    const struct sort_item *a = pa, *b = pb;
    const int c = a->name ? strcmp(a->name, b->name)
                          : cmp_desc(a->key, b->key);
    return c ? c : (a->row > b->row) - (a->row < b->row);
}

/* The key of row i; the input row (no latency) sorts after every layer
 * by time. */
static struct sort_item sort_item(const struct layerwise *r,
                                  enum layerwise_sort sort, size_t i)
{
    const struct memest_layer_estimate *e = &r->rows[i];
    struct sort_item it = {i, 0.0, NULL};
    switch (sort) {
    case LAYERWISE_SORT_ORDER:
        it.key = -(double)i;
        break;
    case LAYERWISE_SORT_TIME:
        it.key = is_layer(r, i) ? r->prof.ops[i].latency_ms : -1.0;
        break;
    case LAYERWISE_SORT_MACS:
        it.key = (double)e->macs;
        break;
    case LAYERWISE_SORT_PARAMS:
        it.key = (double)e->parameter_count;
        break;
    case LAYERWISE_SORT_MEMORY:
        it.key = (double)e->activation_bytes;
        break;
    case LAYERWISE_SORT_NAME:
        it.name = e->layer;
        break;
    }
    return it;
}

static int cmp_kinds(const void *pa, const void *pb)
{
    const struct layerwise_kind *a = pa, *b = pb;
    const int c = cmp_desc(a->latency_ms, b->latency_ms);
    return c ? c : (a->kind > b->kind) - (a->kind < b->kind);
}

static bool get_kind_name(const void *ctx, size_t i, union cli_value *v)
{
    v->s = memest_kind_name(((const struct layerwise_kind *)ctx)[i].kind);
    return true;
}

static bool get_kind_layers(const void *ctx, size_t i, union cli_value *v)
{
    v->u = ((const struct layerwise_kind *)ctx)[i].layers;
    return true;
}

static bool get_kind_latency(const void *ctx, size_t i, union cli_value *v)
{
    return real_of(true, ((const struct layerwise_kind *)ctx)[i].latency_ms,
                   v);
}

static bool get_kind_share(const void *ctx, size_t i, union cli_value *v)
{
    return real_of(true, ((const struct layerwise_kind *)ctx)[i].time_share,
                   v);
}

static bool get_kind_macs(const void *ctx, size_t i, union cli_value *v)
{
    v->u = ((const struct layerwise_kind *)ctx)[i].macs;
    return true;
}

static bool get_kind_params(const void *ctx, size_t i, union cli_value *v)
{
    v->u = ((const struct layerwise_kind *)ctx)[i].parameters;
    return true;
}

static const struct cli_column kind_cols[] = {
    {"kind", ART_TEXT, get_kind_name, CLI_COL_BRIEF},
    {"layer_count", ART_UINT, get_kind_layers, CLI_COL_BRIEF},
    {"latency_ms", ART_REAL, get_kind_latency, CLI_COL_BRIEF},
    {"time_share", ART_REAL, get_kind_share, CLI_COL_BRIEF},
    {"macs", ART_UINT, get_kind_macs, CLI_COL_BRIEF},
    {"parameter_count", ART_UINT, get_kind_params, CLI_COL_BRIEF},
};

/* The operators by kind, the most time first (kinds without layers are
 * left out). */
static int build_kinds(struct layerwise *r)
{
    r->kinds = calloc(MEMEST_KIND_COUNT, sizeof *r->kinds);
    if (!r->kinds) {
        return ART_E_NOMEM;
    }
    for (size_t i = 0; i < r->nrows; i++) {
        if (!is_layer(r, i)) {
            continue;
        }
        const enum memest_kind kind = r->prof.ops[i].info.kind;
        size_t k = 0;
        while (k < r->nkinds && r->kinds[k].kind != kind) {
            k++;
        }
        if (k == r->nkinds) {
            r->kinds[r->nkinds++] = (struct layerwise_kind){.kind = kind};
        }
        struct layerwise_kind *e = &r->kinds[k];
        e->layers++;
        e->macs += r->rows[i].macs;
        e->parameters += r->rows[i].parameter_count;
        e->latency_ms += r->prof.ops[i].latency_ms;
    }
    for (size_t k = 0; k < r->nkinds; k++) {
        r->kinds[k].time_share = r->layer_sum_ms > 0.0
                                     ? r->kinds[k].latency_ms / r->layer_sum_ms
                                     : NAN;
    }
    qsort(r->kinds, r->nkinds, sizeof *r->kinds, cmp_kinds);
    const struct cli_column_set set = {
        kind_cols, sizeof kind_cols / sizeof kind_cols[0], r->kinds};
    int st = cli_table_build("layers_by_kind", &set, 1, r->nkinds,
                             CLI_COL_ALL, &r->by_kind);
    if (st == ART_OK) {
        st = cli_table_build("layers_by_kind", &set, 1, r->nkinds,
                             CLI_COL_BRIEF, &r->by_kind_view);
    }
    return st;
}

/* The sums over every row of the breakdown (the input row's activation
 * included: it is memory too), as torchinfo totals its table. */
struct sums {
    uint64_t params, param_bytes, act_bytes, macs;
};

static struct sums sum_rows(const struct layerwise *r)
{
    struct sums s = {0};
    for (size_t i = 0; i < r->nrows; i++) {
        s.params += r->rows[i].parameter_count;
        s.param_bytes += r->rows[i].parameter_bytes;
        s.act_bytes += r->rows[i].activation_bytes;
        s.macs += r->rows[i].macs;
    }
    return s;
}

static int build_totals(const struct layerwise_opts *o, struct layerwise *r)
{
    (void)o;
    const struct sums s = sum_rows(r);
    const struct cli_field f[] = {
        /* memfit's names for the same quantities */
        CLI_UINT("layer_count", r->n_layers),
        CLI_UINT("parameter_count", s.params),
        CLI_UINT("macs", s.macs),
        CLI_UINT("parameter_bytes", s.param_bytes),
        CLI_REAL("parameter_memory_mb", (double)s.param_bytes / 1048576.0),
        CLI_UINT("activation_bytes", s.act_bytes),
        CLI_REAL("activation_memory_mb", (double)s.act_bytes / 1048576.0),
        CLI_UINT("peak_inference_bytes", r->mem.peak_inference_bytes),
        CLI_REAL("peak_inference_memory_mb",
                 (double)r->mem.peak_inference_bytes / 1048576.0),
        CLI_REAL("layer_latency_sum_ms", r->layer_sum_ms),
        CLI_REAL("latency_ms", r->prof.forward_ms),
        CLI_REAL("first_run_ms", r->prof.forward.first_ms),
        CLI_REAL("warmup_mean_ms", r->prof.forward.warmup_mean_ms),
    };
    return cli_record_build("totals", f, sizeof f / sizeof f[0],
                            &r->totals);
}

int layerwise_presentation(const struct layerwise_opts *o,
                           struct layerwise *r)
{
    const size_t n = r->nrows;
    r->time_share = calloc(n ? n : 1, sizeof *r->time_share);
    r->cumulative_share = calloc(n ? n : 1, sizeof *r->cumulative_share);
    r->order = calloc(n ? n : 1, sizeof *r->order);
    if (!r->time_share || !r->cumulative_share || !r->order) {
        return ART_E_NOMEM;
    }
    /* the layers' own time: staging the input is not a layer */
    r->layer_sum_ms = 0.0;
    for (size_t i = 0; i < n; i++) {
        if (is_layer(r, i) && isfinite(r->prof.ops[i].latency_ms)) {
            r->layer_sum_ms += r->prof.ops[i].latency_ms;
        }
    }
    for (size_t i = 0; i < n; i++) {
        r->order[i] = i;
        r->time_share[i] = is_layer(r, i) && r->layer_sum_ms > 0.0
                               ? r->prof.ops[i].latency_ms / r->layer_sum_ms
                               : NAN;
    }
    struct sort_item *items = calloc(n ? n : 1, sizeof *items);
    if (!items) {
        return ART_E_NOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        items[i] = sort_item(r, o->sort, i);
    }
    qsort(items, n, sizeof *items, cmp_items);
    for (size_t k = 0; k < n; k++) {
        r->order[k] = items[k].row;
    }
    free(items);
    /* the running share follows the table's order, as TFLite's cdf% */
    double cum = 0.0;
    for (size_t k = 0; k < n; k++) {
        const size_t i = r->order[k];
        if (isfinite(r->time_share[i])) {
            cum += r->time_share[i];
        }
        r->cumulative_share[i] = is_layer(r, i) ? cum : NAN;
    }
    r->nshown = o->top && o->top < n ? (size_t)o->top : n;
    int st = build_kinds(r);
    return st == ART_OK ? build_totals(o, r) : st;
}

int layerwise_order_tables(struct layerwise *r)
{
    art_table *full = NULL, *view = NULL;
    /* With several devices the terminal shows each device's column, not
     * predicted_ms beside its copy predicted_ms_FIRST. */
    const size_t ncols = art_table_cols(r->layers_view);
    const char **keep = calloc(ncols + 1, sizeof *keep);
    if (!keep) {
        return ART_E_NOMEM;
    }
    for (size_t c = 0, k = 0; c < ncols; c++) {
        const char *name = art_table_column_name(r->layers_view, c);
        if (!(r->ndevices > 0 && strcmp(name, "predicted_ms") == 0)) {
            keep[k++] = name;
        }
    }
    int st = cli_table_select(r->layers, NULL, r->order, r->nshown, false,
                              &full);
    if (st == ART_OK) {
        st = cli_table_select(r->layers_view, keep, r->order, r->nshown,
                              false, &view);
    }
    free(keep);
    if (st != ART_OK) {
        art_table_destroy(full);
        return st;
    }
    art_table_destroy(r->layers);
    art_table_destroy(r->layers_view);
    r->layers = full;
    r->layers_view = view;
    return ART_OK;
}

void layerwise_print_totals(const struct layerwise_opts *o,
                            const struct layerwise *r, FILE *f)
{
    const struct sums s = sum_rows(r);
    char a[48], b[48];
    if (r->nshown < r->nrows) {
        fprintf(f, "(the first %zu of %zu rows", r->nshown, r->nrows);
        if (o->sort != LAYERWISE_SORT_ORDER && r->nshown > 0) {
            const size_t last = r->order[r->nshown - 1];
            if (isfinite(r->cumulative_share[last])) {
                fprintf(f, ": %.1f%% of the layers' time",
                        100.0 * r->cumulative_share[last]);
            }
        }
        fprintf(f, "; the totals are the whole model's)\n");
    }
    fprintf(f, "==============================================\n");
    fprintf(f, "Layers:                 %zu\n", r->n_layers);
    fprintf(f, "Total parameters:       %s\n",
            cli_format_count(s.params, a, sizeof a));
    fprintf(f, "Total MACs:             %s (%s)\n",
            cli_format_count(s.macs, a, sizeof a),
            cli_format_scaled((double)s.macs, b, sizeof b));
    fprintf(f, "----------------------------------------------\n");
    fprintf(f, "Parameter size:         %s (%s bytes)\n",
            cli_format_mb(s.param_bytes, a, sizeof a),
            cli_format_count(s.param_bytes, b, sizeof b));
    fprintf(f, "Activation size:        %s (every layer's output, batch "
               "%" PRIu64 ")\n",
            cli_format_mb(s.act_bytes, a, sizeof a), o->batch);
    fprintf(f, "Peak inference memory:  %s (parameters + the planned "
               "activations)\n",
            cli_format_mb(r->mem.peak_inference_bytes, a, sizeof a));
    fprintf(f, "----------------------------------------------\n");
    fprintf(f, "Layers' time:           %.4g ms (sum of the medians)\n",
            r->layer_sum_ms);
    fprintf(f, "Forward pass:           %.4g ms median; first run %.4g "
               "ms",
            r->prof.forward_ms, r->prof.forward.first_ms);
    if (isfinite(r->prof.forward.warmup_mean_ms)) {
        fprintf(f, ", warm-up mean %.4g ms", r->prof.forward.warmup_mean_ms);
    }
    fprintf(f, "\n==============================================\n");
}
