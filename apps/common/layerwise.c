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


void layerwise_free(struct layerwise *r)
{
    layerwise_tables_free(r);
    art_table_destroy(r->hw);
    art_table_destroy(r->layers_view);
    art_table_destroy(r->layers);
    free(r->dram_pred);
    free(r->host_pred);
    free(r->pred);
    cli_devices_free(&r->devs);
    prof_exec_profile_finish(&r->prof);
    free(r->rows);
    prof_exec_destroy(r->ex);
    prof_ranges_finish(&r->ranges);
    memest_model_destroy(r->model);
}

/* The device named on the command line (among the --devices file's
 * first); "host" waits for calibration. */
int layerwise_resolve_device(const struct layerwise_opts *o, struct layerwise *r)
{
    if (o->dev.devices_file &&
        !cli_devices_load(o->dev.devices_file, &r->devs)) {
        return CLI_EXIT_USAGE;
    }
    /* --device A,B,...: the first is the run's device, each has its
     * column */
    const char *name = o->dev.device;
    if (layerwise_is_device_list(name)) {
        const int rc = layerwise_resolve_devices(o, r);
        if (rc != CLI_EXIT_OK) {
            return rc;
        }
        name = r->devices[0].name;
    }
    if (strcmp(name, "host") == 0) {
        r->device_is_host = 1;
        return CLI_EXIT_OK;
    }
    if (!cli_device_resolve(name,
                            o->dev.devices_file ? &r->devs : NULL,
                            &r->device)) {
        return CLI_EXIT_USAGE;
    }
    return CLI_EXIT_OK;
}

/* What running the model holds: activations, stored parameters, scratch.
 * The fp32 master copy beside lower precisions serves
 * prof_exec_get_params/set_params, not inference: reported apart. */
static uint64_t working_of(const struct prof_exec_memory *m)
{
    return m->arena_bytes + m->parameter_bytes + m->scratch_bytes;
}

/*
 * The run's real working memory, part of the plan the summary reports,
 * against fp32's. Lower precisions store 2 or 1 bytes per value between
 * operators, but the kernels compute in fp32 (16-bit: operands widened in
 * tiles) or need int32 accumulators and staging (int8), in scratch; when
 * that makes the run need more than fp32 (a model of small layers, where
 * the tiles are large beside what 16 bits save), memory_note says why,
 * with the figures.
 */
static int working_memory(const struct layerwise_opts *o, struct layerwise *r,
                          struct prof_diag *d)
{
    r->working_bytes = working_of(&r->mem);
    r->fp32_working_bytes = r->working_bytes;
    uint64_t widest = 0;
    for (size_t i = 0; i < prof_exec_op_count(r->ex); i++) {
        struct prof_exec_op_info info;
        if (prof_exec_op_info(r->ex, i, &info) == PROF_OK &&
            info.scratch_bytes > widest) {
            widest = info.scratch_bytes;
            r->widest_op = i;
        }
    }
    if (o->precision == MEMEST_FP32) {
        return PROF_OK;
    }
    struct prof_exec_opts eo;
    prof_exec_opts_init(&eo);
    eo.batch = r->batch;
    eo.precision = MEMEST_FP32;
    eo.seed = o->seed;
    prof_exec *f32 = NULL;
    int st = prof_exec_create(r->model, &eo, &f32, d);
    if (st != PROF_OK) {
        return st;
    }
    struct prof_exec_memory m32;
    prof_exec_memory(f32, &m32);
    prof_exec_destroy(f32);
    r->fp32_working_bytes = working_of(&m32);
    if (r->working_bytes > r->fp32_working_bytes) {
        struct prof_exec_op_info info;
        prof_exec_op_info(r->ex, r->widest_op, &info);
        snprintf(r->memory_note, sizeof r->memory_note,
                 "%s needs %" PRIu64 " B against fp32's %" PRIu64 " B: its "
                 "values are stored in %s, but its kernels work on wider "
                 "copies in scratch (%s), %s alone %" PRIu64 " B, more than "
                 "the narrower storage saves on this model",
                 memest_precision_name(o->precision), r->working_bytes,
                 r->fp32_working_bytes,
                 memest_precision_is_int8(o->precision) ? "8 bits" : "16 bits",
                 memest_precision_is_int8(o->precision)
                     ? "int8 columns, int32 accumulators, fp32 results"
                     : "fp32 inputs and results, fp32 weight tiles",
                 info.layer, info.scratch_bytes);
    }
    return PROF_OK;
}

/* The timing input: uniform in [0, 1) like pixel intensities, from the
 * seed (SplitMix64, as the executor's weights). */
static void timing_input(uint64_t seed, float *x, size_t n)
{
    uint64_t s = seed ^ UINT64_C(0x5DEECE66D);
    for (size_t i = 0; i < n; i++) {
        uint64_t z = (s += UINT64_C(0x9E3779B97F4A7C15));
        z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
        z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
        z ^= z >> 31;
        x[i] = (float)((double)(z >> 40) * 0x1p-24);
    }
}

/* Static int8's ranges: the caller's, else --calibration-data or
 * --calibration-file, else the batch of timing inputs itself (said so:
 * the latency of an int8 operator does not depend on the values, only
 * saturation would, and the input is what is timed). */
static int int8_ranges(const struct layerwise_opts *o, struct layerwise *r,
                       const struct prof_ranges **out)
{
    if (o->ranges) {
        snprintf(r->int8_calibration, sizeof r->int8_calibration, "%s",
                 o->calibration ? o->calibration : "");
        *out = o->ranges;
        return CLI_EXIT_OK;
    }
    struct prof_dataset timing = {0};
    const struct prof_dataset *fallback = NULL;
    if (!calibration_given(&o->cal)) {
        const struct memest_shape s = memest_model_input_shape(r->model);
        uint64_t shape[3] = {1, 1, 1};
        for (unsigned i = 0; i < s.rank && i < 3; i++) {
            shape[i] = s.dim[i];
        }
        struct prof_diag pd = {0};
        const int st = prof_dataset_init(&timing, r->batch,
                                         s.rank ? s.rank : 1, shape, false, 0,
                                         NULL, NULL, &pd);
        if (st != PROF_OK) {
            return cli_prof_failed("the model's input", st, &pd);
        }
        timing_input(o->seed, timing.x,
                     (size_t)(timing.count * timing.sample_count));
        fallback = &timing;
    }
    struct calibration_opts cal = o->cal;
    cal.seed = o->seed;
    const int rc = calibration_ranges(
        r->model, &cal, fallback,
        "timing inputs (uniform in [0, 1); the timing does not depend on "
        "the values)",
        &r->ranges, r->int8_calibration, sizeof r->int8_calibration);
    prof_dataset_finish(&timing);
    *out = calibration_exec_ranges(&r->ranges);
    return rc;
}

int layerwise_run(const struct layerwise_opts *o, struct layerwise *r)
{
    const int rc = cli_model_load(o->model, o->weights, &r->model);
    if (rc != CLI_EXIT_OK) {
        return rc;
    }
    if (cli_model_batch(r->model, o->model, o->have_batch, o->batch, "run",
                        &r->batch) != CLI_EXIT_OK) {
        return CLI_EXIT_USAGE;
    }
    int st;
    r->nrows = memest_estimate_row_count(r->model);
    r->rows = calloc(r->nrows, sizeof *r->rows);
    if (!r->rows) {
        cli_error("out of memory: the per-layer rows");
        return CLI_EXIT_FAILURE;
    }
    st = memest_estimate_layers(r->model, r->batch, o->precision, r->rows,
                                r->nrows, &r->nrows);
    if (st != MEMEST_OK) {
        cli_error("%s: %s", o->model, memest_strerror(st));
        return st == MEMEST_E_NOMEM ? CLI_EXIT_FAILURE : CLI_EXIT_USAGE;
    }

    struct prof_exec_opts eo;
    prof_exec_opts_init(&eo);
    eo.batch = r->batch;
    eo.precision = o->precision;
    eo.seed = o->seed;
    eo.threads = o->threads ? o->threads : 1;
    if (o->precision == MEMEST_INT8) {
        eo.int8_requant = o->cal.requant;
        const int crc = int8_ranges(o, r, &eo.ranges);
        if (crc != CLI_EXIT_OK) {
            return crc;
        }
    } else if (o->precision == MEMEST_INT8_DYNAMIC) {
        snprintf(r->int8_calibration, sizeof r->int8_calibration,
                 "per batch (int8-dynamic: each tensor's own range at run "
                 "time)");
    }
    struct prof_diag d = {0};
    st = prof_exec_create(r->model, &eo, &r->ex, &d);
    if (st != PROF_OK) {
        return cli_prof_failed(o->model, st, &d);
    }
    prof_exec_memory(r->ex, &r->mem);
    st = working_memory(o, r, &d);
    if (st != PROF_OK) {
        return cli_prof_failed(o->model, st, &d);
    }

    /* The input: uniform in [0, 1) like pixel intensities, from the same
     * seed (SplitMix64, as the executor's weights). */
    const size_t nin = prof_exec_input_count(r->ex);
    float *x = malloc(nin * sizeof(float));
    if (!x) {
        cli_error("out of memory: the input of the measured run");
        return CLI_EXIT_FAILURE;
    }
    timing_input(o->seed, x, nin);
    struct prof_time_opts to;
    prof_time_opts_init(&to);
    to.repeats = (unsigned)o->repeats;
    to.warmup = (unsigned)o->warmup;
    to.latency_multiplier = o->latency_multiplier;
    /* Operators of a few microseconds are timed in groups of back-to-back
     * runs so that the clock's own cost does not dominate them. */
    to.min_sample_ms = o->min_sample_ms;
    cli_progress(cli_progress_wanted(o->quiet), 0, 2,
                 "timing every operator");
    st = prof_exec_profile(r->ex, x, nin, &to, &r->prof);
    free(x);
    if (st != PROF_OK) {
        return cli_prof_failed("measuring", st, NULL);
    }
    if (r->prof.count != r->nrows) {
        cli_error("internal error: %zu operators for %zu layers",
                  r->prof.count, r->nrows);
        return CLI_EXIT_FAILURE;
    }
    return CLI_EXIT_OK;
}

/* v to two significant digits: an uncalibrated device model's latency
 * is not known better (NaN and 0 as they are). */
static double round_sig(double v, int digits)
{
    if (!isfinite(v) || v == 0.0) {
        return v;
    }
    char buf[32];
    snprintf(buf, sizeof buf, "%.*g", digits, v);
    return strtod(buf, NULL);
}

/* The fitted device model's prediction of the whole run (NaN without a
 * model for the device in --devices), to 3 significant digits. */
static void predict_device_model(const struct layerwise_opts *o,
                                 struct layerwise *r)
{
    static const char *const suffix[3] = {"", "_low", "_high"};
    for (int k = 0; k < 3; k++) {
        r->dm_ms[k] = NAN;
        cli_device_column(r->device.name, suffix[k], r->dm_col[k],
                          sizeof r->dm_col[k]);
    }
    r->device_runtime[0] = '\0';
    /* the host's columns are its roofline's (host_predicted_ms): a host
     * model is shown by edgefit-device --check-host */
    if (r->device_is_host) {
        return;
    }
    const struct prof_devmodel *m = cli_devices_pick(
        o->dev.devices_file ? &r->devs : NULL, r->device.name,
        o->dev.runtime);
    struct prof_dm_net net;
    if (!m || prof_dm_net_from_model(r->model, &net) != PROF_OK) {
        return;
    }
    enum memest_precision p = o->precision;
    if (p == MEMEST_INT8_DYNAMIC) {
        p = MEMEST_INT8;
    }
    const struct prof_dm_case c = {&net, o->threads ? o->threads : 1, p,
                                   r->batch, 0.0, NULL};
    double v[3];
    if (p != MEMEST_FP64 &&
        prof_dm_predict(m, &c, &v[0], &v[1], &v[2]) == PROF_OK) {
        for (int k = 0; k < 3; k++) {
            r->dm_ms[k] = round_sig(v[k], 3);
        }
        snprintf(r->device_runtime, sizeof r->device_runtime, "%s",
                 m->runtime);
    }
    prof_dm_net_free(&net);
}


/* The totals are judged against the measured forward pass (staging and
 * framing included), not against the sum of the operators run alone. */
static void judge_total(struct prof_prediction_total *t, double forward_ms)
{
    t->measured_ms = forward_ms;
    t->relative_error = forward_ms > 0.0 && t->predicted_ms > 0.0
                            ? (t->predicted_ms - forward_ms) / forward_ms
                            : NAN;
}

int layerwise_predict(const struct layerwise_opts *o, struct layerwise *r)
{
    bool cached = false;
    struct cli_calib_opts co = o->calib;
    cli_progress(cli_progress_wanted(o->quiet), 1, 2,
                 "calibrating the host (or reading its cache)");
    int st = cli_host_calibration(&co, &r->cal, &cached);
    cli_progress(cli_progress_wanted(o->quiet), 2, 2, NULL);
    if (st != PROF_OK) {
        return cli_prof_failed("calibrating the host", st, NULL);
    }
    struct prof_exec_predictions pr;
    st = prof_exec_predict_all(&r->prof, &r->cal,
                               r->device_is_host ? NULL : &r->device,
                               o->have_power ? o->power_watts : 0.0, &pr);
    if (st != PROF_OK) {
        return cli_prof_failed("predicting", st, NULL);
    }
    /* the arrays are ours now (released by layerwise_free) */
    r->host = pr.host;
    r->host_dram = pr.host_dram;
    r->device = pr.device;
    r->pred = pr.device_pred;
    r->host_pred = pr.host_pred;
    r->dram_pred = pr.dram_pred;
    r->total = pr.device_total;
    r->host_total = pr.host_total;
    r->dram_total = pr.dram_total;
    /* The original summary: the model's estimated bytes and MACs over the
     * measured forward latency, against the roof of the memory level that
     * holds the data (a first pass finds the bytes and the achieved rate)
     * and the peak for this precision. The latency was measured on this
     * machine, so the roofs are this machine's whatever --device names:
     * a host's time over a board's peak is no utilisation of anything. */
    /* the peak of the cores the run used */
    r->peak_gmacs = prof_device_peak_threads(&r->host, o->precision,
                                             o->threads);
    double roof_gbps = r->host.bandwidth_gbps;
    st = prof_summarize_model(r->model, r->batch, o->precision,
                              r->prof.forward_ms, roof_gbps, r->peak_gmacs,
                              &r->summary);
    if (st == PROF_OK) {
        st = prof_bandwidth_roof(&r->host,
                                 (uint64_t)r->summary.estimated_total_bytes,
                                 r->summary.achieved_bandwidth_gbps,
                                 &r->roof_level, &roof_gbps);
    }
    if (st == PROF_OK) {
        st = prof_summarize_model(r->model, r->batch, o->precision,
                                  r->prof.forward_ms, roof_gbps,
                                  r->peak_gmacs, &r->summary);
    }
    if (st != PROF_OK) {
        return cli_prof_failed("summarising", st, NULL);
    }
    /* One regime: the bound that limits most of the predicted time, with
     * how many layers it limits, so the sentence and the count agree. */
    double t_mem = 0.0, t_all = 0.0;
    size_t n_mem = 0;
    for (size_t i = 0; i < r->prof.count; i++) {
        if (r->prof.ops[i].info.kind == MEMEST_KIND_INPUT) {
            continue;
        }
        const struct prof_prediction *p = &r->pred[i].pred;
        r->n_layers++;
        t_all += p->predicted_ms;
        if (p->bound == PROF_BOUND_MEMORY) {
            n_mem++;
            t_mem += p->predicted_ms;
        }
    }
    const int mem = t_all > 0.0 ? t_mem * 2.0 >= t_all : n_mem * 2 >= r->n_layers;
    r->regime = mem ? PROF_BOUND_MEMORY : PROF_BOUND_COMPUTE;
    r->regime_layers = mem ? n_mem : r->n_layers - n_mem;
    r->regime_share = t_all > 0.0 ? (mem ? t_mem : t_all - t_mem) / t_all
                                  : NAN;
    snprintf(r->regime_text, sizeof r->regime_text,
             "%s-bound on %s: %zu of %zu layers, %.0f%% of the predicted "
             "time, are limited by %s",
             prof_bound_name(r->regime), r->device.name, r->regime_layers,
             r->n_layers, 100.0 * (isfinite(r->regime_share) ? r->regime_share
                                                           : 0.0),
             mem ? "memory bandwidth" : "the compute peak");
    /* Energy is one machine's power times the same machine's latency:
     * the host's measured forward pass with the power given for it, or
     * the device's predicted latency with the device's power. */
    if (r->device_is_host) {
        r->energy_proxy_j =
            r->device.power_watts > 0.0
                ? r->device.power_watts * r->prof.forward_ms / 1000.0
                : NAN;
    } else {
        r->energy_proxy_j = r->total.energy_proxy_j;
    }
    /* A prediction is judged only against a measurement of the machine
     * it predicts: the device's total has none until it runs there. */
    if (r->device_is_host) {
        judge_total(&r->total, r->prof.forward_ms);
    } else {
        r->total.measured_ms = NAN;
        r->total.relative_error = NAN;
    }
    judge_total(&r->host_total, r->prof.forward_ms);
    judge_total(&r->dram_total, r->prof.forward_ms);
    /* The device's roofline is a lower bound; how far this machine runs
     * above its own (cache-aware) roofline is the nearest measured hint
     * of how far the device will, until its model is calibrated. */
    r->host_overrun = r->host_total.predicted_ms > 0.0
                          ? r->prof.forward_ms / r->host_total.predicted_ms
                          : NAN;
    r->device_latency_lower_ms = round_sig(r->total.predicted_ms, 2);
    r->device_latency_realistic_ms =
        round_sig(r->total.predicted_ms * r->host_overrun, 2);
    predict_device_model(o, r);
    return layerwise_predict_devices(o, r);
}

/* "L1".."L3", or "DRAM" for main memory. */
const char *layerwise_level_name(unsigned level)
{
    static const char *const names[] = {"DRAM", "L1", "L2", "L3"};
    return level < 4 ? names[level] : "?";
}

/* ---- tables ---------------------------------------------------------------- */

/* The measured columns, after the estimates of apps/common: one row per
 * operator of the profile (the input row's cells stay empty: staging is
 * not a layer). */
static bool measured(const struct layerwise *r, size_t i)
{
    return r->prof.ops[i].info.kind != MEMEST_KIND_INPUT;
}

#define RES(ctx) ((const struct layerwise *)(ctx))

static bool real_cell(double x, union cli_value *v)
{
    v->r = x;
    return isfinite(x);
}

static bool get_latency(const void *ctx, size_t i, union cli_value *v)
{
    return measured(RES(ctx), i) &&
           real_cell(RES(ctx)->prof.ops[i].latency_ms, v);
}

static bool get_predicted(const void *ctx, size_t i, union cli_value *v)
{
    return measured(RES(ctx), i) &&
           real_cell(RES(ctx)->pred[i].pred.predicted_ms, v);
}

static bool get_bound(const void *ctx, size_t i, union cli_value *v)
{
    v->s = prof_bound_name(RES(ctx)->pred[i].pred.bound);
    return measured(RES(ctx), i);
}

static bool get_p90(const void *ctx, size_t i, union cli_value *v)
{
    return measured(RES(ctx), i) &&
           real_cell(RES(ctx)->prof.ops[i].stats.p90_ms, v);
}

static bool get_bytes_moved(const void *ctx, size_t i, union cli_value *v)
{
    v->u = RES(ctx)->prof.ops[i].info.bytes_moved;
    return measured(RES(ctx), i);
}

static bool get_gmacs(const void *ctx, size_t i, union cli_value *v)
{
    return measured(RES(ctx), i) &&
           real_cell(RES(ctx)->prof.ops[i].achieved_gmacs, v);
}

static bool get_gbps(const void *ctx, size_t i, union cli_value *v)
{
    return measured(RES(ctx), i) &&
           real_cell(RES(ctx)->prof.ops[i].achieved_gbps, v);
}

static bool get_memory_kb(const void *ctx, size_t i, union cli_value *v)
{
    return measured(RES(ctx), i) &&
           real_cell(RES(ctx)->prof.ops[i].memory_kb, v);
}

static bool get_energy(const void *ctx, size_t i, union cli_value *v)
{
    return measured(RES(ctx), i) &&
           real_cell(RES(ctx)->pred[i].pred.energy_proxy_j, v);
}

static bool get_threads(const void *ctx, size_t i, union cli_value *v)
{
    v->u = RES(ctx)->prof.ops[i].info.threads;
    return measured(RES(ctx), i);
}

static bool get_host_pred(const void *ctx, size_t i, union cli_value *v)
{
    return measured(RES(ctx), i) &&
           real_cell(RES(ctx)->host_pred[i].pred.predicted_ms, v);
}

static bool get_host_err(const void *ctx, size_t i, union cli_value *v)
{
    return measured(RES(ctx), i) &&
           real_cell(RES(ctx)->host_pred[i].relative_error, v);
}

static bool get_host_level(const void *ctx, size_t i, union cli_value *v)
{
    v->s = layerwise_level_name(RES(ctx)->host_pred[i].pred.memory_level);
    return measured(RES(ctx), i);
}

static bool get_dram_pred(const void *ctx, size_t i, union cli_value *v)
{
    return measured(RES(ctx), i) &&
           real_cell(RES(ctx)->dram_pred[i].pred.predicted_ms, v);
}

static bool get_dram_err(const void *ctx, size_t i, union cli_value *v)
{
    return measured(RES(ctx), i) &&
           real_cell(RES(ctx)->dram_pred[i].relative_error, v);
}

static bool get_layout(const void *ctx, size_t i, union cli_value *v)
{
    v->s = RES(ctx)->prof.ops[i].info.output_layout ? "nchw8c" : "nchw";
    return measured(RES(ctx), i);
}

static const struct cli_column measured_cols[] = {
    {"latency_ms", ART_REAL, get_latency, CLI_COL_BRIEF},
    {"predicted_ms", ART_REAL, get_predicted, CLI_COL_BRIEF},
    {"bound", ART_TEXT, get_bound, CLI_COL_KEY},
    {"latency_p90_ms", ART_REAL, get_p90, CLI_COL_ALL},
    {"bytes_moved", ART_UINT, get_bytes_moved, CLI_COL_ALL},
    {"achieved_gmacs", ART_REAL, get_gmacs, CLI_COL_ALL},
    {"achieved_bandwidth_gbps", ART_REAL, get_gbps, CLI_COL_ALL},
    {"memory_kb", ART_REAL, get_memory_kb, CLI_COL_ALL},
    {"threads", ART_UINT, get_threads, CLI_COL_ALL},
    {"output_layout", ART_TEXT, get_layout, CLI_COL_ALL},
    {"predicted_energy_proxy_j", ART_REAL, get_energy, CLI_COL_ALL},
    {"host_predicted_ms", ART_REAL, get_host_pred, CLI_COL_ALL},
    {"host_prediction_error", ART_REAL, get_host_err, CLI_COL_KEY},
    {"host_memory_level", ART_TEXT, get_host_level, CLI_COL_ALL},
    {"host_dram_predicted_ms", ART_REAL, get_dram_pred, CLI_COL_ALL},
    {"host_dram_prediction_error", ART_REAL, get_dram_err, CLI_COL_ALL},
};

/* The full table (CSV, JSON) and the terminal's brief view, in the order
 * of --sort, cut at --top (apps/common/layerwise_tables.c). */
static int build_layers_table(struct layerwise *r)
{
    const size_t nsets = 3 + r->ndevices;
    struct cli_column_set *sets = calloc(nsets, sizeof *sets);
    struct cli_column *dev_cols = calloc(r->ndevices + 1, sizeof *dev_cols);
    if (!sets || !dev_cols) {
        free(sets);
        free(dev_cols);
        return ART_E_NOMEM;
    }
    sets[0] = (struct cli_column_set){cli_breakdown_columns,
                                      cli_breakdown_column_count, r->rows};
    sets[1] = (struct cli_column_set){
        measured_cols, sizeof measured_cols / sizeof measured_cols[0], r};
    sets[2] = (struct cli_column_set){layerwise_share_columns,
                                      layerwise_share_column_count, r};
    layerwise_device_columns(r, dev_cols, sets + 3);
    int st = cli_table_build("layers", sets, nsets, r->nrows, CLI_COL_ALL,
                             &r->layers);
    if (st == ART_OK) {
        st = cli_table_build("layers", sets, nsets, r->nrows, CLI_COL_BRIEF,
                             &r->layers_view);
    }
    free(dev_cols);
    free(sets);
    return st == ART_OK ? layerwise_order_tables(r) : st;
}

static int build_hw_table(const struct layerwise_opts *o, struct layerwise *r)
{
    const struct prof_hw_summary *s = &r->summary;
    const struct cli_field f[] = {
        /* the original summarize_hardware() keys */
        CLI_REAL("estimated_total_bytes", s->estimated_total_bytes),
        CLI_REAL("estimated_total_macs", s->estimated_total_macs),
        CLI_REAL("achieved_bandwidth_gbps", s->achieved_bandwidth_gbps),
        CLI_REAL("configured_memory_bandwidth_gbps",
                 s->configured_memory_bandwidth_gbps),
        CLI_REAL("bandwidth_utilization", s->bandwidth_utilization),
        CLI_REAL("achieved_gmacs", s->achieved_gmacs),
        /* the roofline, against the roof of the level holding the data */
        CLI_TEXT("bandwidth_roof_level", layerwise_level_name(r->roof_level)),
        CLI_BOOL("bandwidth_above_roof", s->above_roof),
        CLI_REAL("peak_gmacs", s->peak_gmacs),
        CLI_REAL("intensity_mac_per_byte", s->arithmetic_intensity),
        CLI_REAL("knee_mac_per_byte", s->roofline_knee),
        CLI_TEXT("model_bound", prof_bound_name(s->bound)),
        CLI_TEXT("reading", s->reading),
        CLI_REAL("compute_utilization", s->compute_utilization),
        CLI_BOOL("compute_above_peak", s->above_peak),
        /* the run */
        CLI_TEXT("model", memest_model_name(r->model)),
        CLI_UINT("batch_size", r->batch),
        CLI_TEXT("precision", memest_precision_name(o->precision)),
        CLI_TEXT("int8_calibration", r->int8_calibration),
        CLI_TEXT("device", r->device.name),
        CLI_REAL("latency_ms", r->prof.forward_ms),
        CLI_REAL("latency_p90_ms", r->prof.forward.p90_ms),
        CLI_REAL("operator_sum_ms", r->prof.operator_sum_ms),
        CLI_REAL("framing_ms", r->prof.framing_ms),
        CLI_REAL("predicted_ms", r->total.predicted_ms),
        /* host prediction against host measurement only: empty under a
         * --device other than the host */
        CLI_REAL("prediction_error", r->total.relative_error),
        /* the machine whose roofs the utilisations above are against */
        CLI_TEXT("utilization_machine", "host"),
        CLI_REAL("device_latency_lower_bound_ms", r->device_latency_lower_ms),
        CLI_REAL("host_roofline_overrun", r->host_overrun),
        CLI_REAL("device_latency_realistic_ms",
                 r->device_latency_realistic_ms),
        /* one regime: the bound of most of the predicted time */
        CLI_TEXT("regime", prof_bound_name(r->regime)),
        CLI_UINT("regime_layers", r->regime_layers),
        CLI_REAL("regime_time_share", r->regime_share),
        CLI_TEXT("regime_reading", r->regime_text),
        CLI_REAL("host_predicted_ms", r->host_total.predicted_ms),
        CLI_REAL("host_prediction_error", r->host_total.relative_error),
        CLI_REAL("host_mean_abs_error",
                 r->host_total.mean_abs_relative_error),
        CLI_REAL("host_dram_predicted_ms", r->dram_total.predicted_ms),
        CLI_REAL("host_dram_prediction_error", r->dram_total.relative_error),
        CLI_REAL("host_dram_mean_abs_error",
                 r->dram_total.mean_abs_relative_error),
        CLI_REAL("input_staging_ms", r->prof.ops[0].latency_ms),
        /* the device's roofs, which only its predictions use */
        CLI_REAL("device_peak_gmacs",
                 prof_device_peak_threads(&r->device, o->precision,
                                          o->threads)),
        CLI_REAL("device_bandwidth_gbps", r->device.bandwidth_gbps),
        CLI_REAL("host_peak_gmacs",
                 prof_device_peak_threads(&r->host, o->precision,
                                          o->threads)),
        CLI_UINT("threads", o->threads ? o->threads : 1),
        CLI_REAL("host_bandwidth_gbps", r->host.bandwidth_gbps),
        CLI_REAL("power_watts", r->device.power_watts > 0.0
                                    ? r->device.power_watts
                                    : NAN),
        CLI_REAL("energy_proxy_j", r->energy_proxy_j),
        CLI_REAL("predicted_energy_proxy_j", r->total.energy_proxy_j),
        CLI_UINT("arena_bytes", r->mem.arena_bytes),
        CLI_UINT("peak_inference_bytes", r->mem.peak_inference_bytes),
        CLI_UINT("stored_parameter_bytes", r->mem.parameter_bytes),
        CLI_UINT("scratch_bytes", r->mem.scratch_bytes),
        CLI_UINT("master_parameter_bytes", r->mem.master_unread_bytes),
        CLI_UINT("working_memory_bytes", r->working_bytes),
        CLI_UINT("fp32_working_memory_bytes", r->fp32_working_bytes),
        CLI_TEXT("memory_note", r->memory_note),
        CLI_REAL("latency_multiplier", o->latency_multiplier),
        CLI_UINT("repeats", o->repeats),
        /* last: the device model's, only when --devices has one for the
         * device */
        CLI_TEXT("device_runtime", r->device_runtime),
        CLI_REAL(r->dm_col[0], r->dm_ms[0]),
        CLI_REAL(r->dm_col[1], r->dm_ms[1]),
        CLI_REAL(r->dm_col[2], r->dm_ms[2]),
    };
    const size_t n = sizeof f / sizeof f[0] -
                     (r->device_runtime[0] != '\0' ? 0 : 4);
    return cli_record_build("hardware_summary", f, n, &r->hw);
}


int layerwise_build_tables(const struct layerwise_opts *o, struct layerwise *r)
{
    int st = layerwise_presentation(o, r);
    st = st == ART_OK ? build_layers_table(r) : st;
    return st == ART_OK ? build_hw_table(o, r) : st;
}

/* ---- charts ---------------------------------------------------------------- */

void layerwise_charts_free(struct layerwise_charts *c)
{
    free(c->names);
    free(c->act_mb);
    free(c->macs_m);
    free(c->x);
    free(c->host_y);
    free(c->dev_y);
    free(c->point_names);
    memset(c, 0, sizeof *c);
}

bool layerwise_charts_init(const struct layerwise_opts *o,
                           const struct layerwise *r,
                           struct layerwise_charts *c)
{
    memset(c, 0, sizeof *c);
    const size_t n = r->nrows;
    c->names = calloc(n, sizeof *c->names);
    c->act_mb = calloc(n, sizeof *c->act_mb);
    c->macs_m = calloc(n, sizeof *c->macs_m);
    c->x = calloc(n, sizeof *c->x);
    c->host_y = calloc(n, sizeof *c->host_y);
    c->dev_y = calloc(n, sizeof *c->dev_y);
    c->point_names = calloc(n, sizeof *c->point_names);
    if (!c->names || !c->act_mb || !c->macs_m || !c->x || !c->host_y ||
        !c->dev_y || !c->point_names) {
        cli_error("out of memory: the points of the charts");
        layerwise_charts_free(c);
        return false;
    }
    /* The original's two bar charts, one bar per row of the breakdown
     * (the input row included: its activation is memory too). */
    for (size_t i = 0; i < n; i++) {
        c->names[i] = r->rows[i].layer;
        c->act_mb[i] = (double)r->rows[i].activation_bytes / 1048576.0;
        c->macs_m[i] = (double)r->rows[i].macs / 1e6;
    }
    c->act_series = (struct art_series){.n = n, .y = c->act_mb};
    c->macs_series = (struct art_series){.n = n, .y = c->macs_m};
    c->activation = (struct art_chart){
        .kind = ART_CHART_BAR, .title = "Layer-wise Activation Memory",
        .x_label = "Layer", .y_label = "Activation Memory (MB)",
        .categories = c->names, .n_categories = n,
        .series = &c->act_series, .n_series = 1, .value_labels = true};
    c->macs = c->activation;
    c->macs.title = "Layer-wise Compute Estimate";
    c->macs.y_label = "MACs (Millions)";
    c->macs.series = &c->macs_series;

    /* The roofline: each layer that does work at its intensity (MACs over
     * the bytes it moves), at the rate measured on this machine and at the
     * rate the device's roofline predicts (MACs over the predicted
     * time). Staging the input and layers without MACs have no point. */
    size_t k = 0;
    /* the fastest memory level a plotted prediction used */
    const struct prof_prediction *fastest = NULL;
    for (size_t i = 0; i < r->prof.count; i++) {
        const struct prof_exec_op_row *op = &r->prof.ops[i];
        const double pred_ms = r->pred[i].pred.predicted_ms;
        if (op->info.kind == MEMEST_KIND_INPUT || op->info.macs == 0 ||
            op->info.bytes_moved == 0) {
            continue;
        }
        c->x[k] = (double)op->info.macs / (double)op->info.bytes_moved;
        c->host_y[k] = op->achieved_gmacs > 0 ? op->achieved_gmacs : NAN;
        c->dev_y[k] = pred_ms > 0 ? (double)op->info.macs / pred_ms / 1e6
                                  : NAN;
        c->point_names[k] = op->info.layer;
        if (!fastest ||
            r->pred[i].pred.bandwidth_gbps > fastest->bandwidth_gbps) {
            fastest = &r->pred[i].pred;
        }
        k++;
    }
    const double dev_peak =
        prof_device_peak_threads(&r->device, o->precision, o->threads);
    const double host_peak =
        prof_device_peak_threads(&r->host_dram, o->precision, o->threads);
    snprintf(c->roof_names[0], sizeof c->roof_names[0],
             "%s roof: %.3g GB/s, %.3g GMAC/s %s", r->device.name,
             r->device.bandwidth_gbps, dev_peak,
             memest_precision_name(o->precision));
    c->roofs[0] = (struct art_roof){c->roof_names[0],
                                    r->device.bandwidth_gbps, dev_peak};
    size_t nroofs = 1;
    if (!r->device_is_host) {
        snprintf(c->roof_names[1], sizeof c->roof_names[1],
                 "this machine (DRAM): %.3g GB/s, %.3g GMAC/s",
                 r->host_dram.bandwidth_gbps, host_peak);
        c->roofs[1] = (struct art_roof){c->roof_names[1],
                                        r->host_dram.bandwidth_gbps,
                                        host_peak};
        nroofs = 2;
    }
    /* A device with caches predicts a layer whose data fits one against
     * that cache's bandwidth: without its roof, such points would sit
     * above the only roof drawn (the host's L2 or L3 points did). */
    if (fastest && fastest->memory_level != 0 &&
        fastest->bandwidth_gbps > r->device.bandwidth_gbps) {
        snprintf(c->roof_names[nroofs], sizeof c->roof_names[nroofs],
                 "%s %s roof (data in cache): %.3g GB/s", r->device.name,
                 layerwise_level_name(fastest->memory_level),
                 fastest->bandwidth_gbps);
        c->roofs[nroofs] = (struct art_roof){c->roof_names[nroofs],
                                             fastest->bandwidth_gbps,
                                             dev_peak};
        nroofs++;
    }
    snprintf(c->dev_series_name, sizeof c->dev_series_name,
             "predicted on %s", r->device_is_host ? "this machine (roofline)"
                                                 : r->device.name);
    c->roof_series[0] = (struct art_series){
        .name = "measured on this machine", .n = k, .x = c->x,
        .y = c->host_y, .labels = c->point_names,
        .marker = ART_MARKER_CIRCLE};
    c->roof_series[1] = (struct art_series){
        .name = c->dev_series_name, .n = k, .x = c->x,
        .y = c->dev_y, .labels = c->point_names,
        .marker = ART_MARKER_SQUARE};
    c->roofline = (struct art_chart){
        .kind = ART_CHART_ROOFLINE,
        .title = "Roofline: layers measured here and predicted by the "
                 "roofline",
        .x_label = "Arithmetic intensity (MAC per byte moved)",
        .y_label = "Throughput (GMAC/s)", .series = c->roof_series,
        .n_series = k ? 2 : 0, .roofs = c->roofs, .n_roofs = nroofs};
    return true;
}
