#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli.h"
#include "data.h"
#include "model.h"
#include "sweep.h"
#include "validate.h"
#include "alloc_rec.h" /* last: it wraps malloc and co. */

void sweep_config_init(struct sweep_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    const enum memest_precision all[] = {MEMEST_FP32, MEMEST_FP16,
                                         MEMEST_BF16, MEMEST_INT8};
    memcpy(cfg->precisions, all, sizeof all);
    cfg->n_precisions = 4;
    cfg->batches[0] = 1;
    cfg->batches[1] = 8;
    cfg->batches[2] = 32;
    cfg->n_batches = 3;
    cfg->max_latency_ms = INFINITY;
    cfg->max_memory_mb = INFINITY;
    cfg->min_accuracy = 0;
    prof_time_opts_init(&cfg->timing);
    cfg->timing.warmup = 2;
    cfg->timing.repeats = 7;
    /* a batch of one runs in microseconds: group calls so the clock's
     * own cost does not count */
    cfg->timing.min_sample_ms = 2;
}

bool sweep_parse_precisions(const char *opt, const char *text,
                            struct sweep_config *cfg)
{
    return cli_parse_precisions(opt, text, cfg->precisions,
                                SWEEP_MAX_PRECISIONS, &cfg->n_precisions);
}

bool sweep_parse_batches(const char *opt, const char *text,
                         struct sweep_config *cfg)
{
    char items[SWEEP_MAX_BATCHES + 1][32];
    size_t n;
    if (!cli_split_list(opt, text, items, SWEEP_MAX_BATCHES, &n)) {
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        /* Each batch runs the whole test set, the last batch padded: a
         * batch above SWEEP_MAX_BATCH (65,536 rows, 205 MB of 784-pixel
         * images in fp32) only pads. */
        if (!cli_parse_u64(opt, items[i], 1, SWEEP_MAX_BATCH,
                           &cfg->batches[i])) {
            return false;
        }
        /* The same configuration twice would run and print twice. */
        for (size_t k = 0; k < i; k++) {
            if (cfg->batches[k] == cfg->batches[i]) {
                cli_error("%s: %s given twice", opt, items[i]);
                return false;
            }
        }
    }
    cfg->n_batches = n;
    return true;
}

void sweep_result_free(struct sweep_result *r)
{
    free(r->rows);
    r->rows = NULL;
    r->n = 0;
}

static void judge_row(struct sweep_row *row, const struct sweep_config *cfg)
{
    row->rejected_by[0] = '\0';
    const char *why[3] = {NULL, NULL, NULL};
    size_t n = 0;
    if (!(row->latency_ms <= cfg->max_latency_ms)) {
        why[n++] = "latency";
    }
    if (!(row->memory_mb <= cfg->max_memory_mb)) {
        why[n++] = "memory";
    }
    /* without labels (or without data) there is no accuracy to hold
     * against the bound */
    if (!isnan(cfg->min_accuracy) && !isnan(row->accuracy) &&
        !(row->accuracy >= cfg->min_accuracy)) {
        why[n++] = "accuracy";
    }
    for (size_t i = 0; i < n; i++) {
        strcat(row->rejected_by, i ? "," : "");
        strcat(row->rejected_by, why[i]);
    }
    row->accepted = n == 0;
}

void sweep_judge(struct sweep_result *r, const struct sweep_config *cfg)
{
    for (size_t i = 0; i < r->n; i++) {
        judge_row(&r->rows[i], cfg);
    }
}

struct timed_run {
    prof_exec *ex;
    const float *in;
    float *out;
    size_t n_in, n_out;
};

static int run_once(void *ctx)
{
    struct timed_run *t = ctx;
    return prof_exec_run(t->ex, t->in, t->n_in, t->out, t->n_out);
}

/* Index of the largest of n scores (the first on a tie, as argmax). */
static size_t argmax(const float *v, size_t n)
{
    size_t best = 0;
    for (size_t i = 1; i < n; i++) {
        if (v[i] > v[best]) {
            best = i;
        }
    }
    return best;
}

/* One configuration: accuracy over the test set (labels) and the
 * agreement with its reference outputs, then the timing. */
static bool run_config(const memest_model *model, const struct cli_weights *w,
                       const struct prof_dataset *test,
                       enum memest_precision prec, uint64_t batch,
                       const struct sweep_config *cfg, struct sweep_row *row)
{
    struct prof_exec_opts eo;
    prof_exec_opts_init(&eo);
    eo.batch = batch;
    eo.precision = prec;
    eo.threads = cfg->threads ? cfg->threads : 1;
    /* Static int8's scales are fixed before the run, so its accuracy is
     * the same at every batch; int8-dynamic's depend on the batch. */
    eo.ranges = prec == MEMEST_INT8 ? cfg->ranges : NULL;
    eo.int8_requant = cfg->int8_requant;
    prof_exec *ex = NULL;
    struct prof_diag diag = {0};
    float *in = NULL, *out = NULL, *got = NULL;
    bool ok = false;
    int st = prof_exec_create(model, &eo, &ex, &diag);
    if (st != PROF_OK) {
        /* an out-of-memory diagnostic says so itself, with its bytes */
        const bool says = st == PROF_E_NOMEM && diag.message[0];
        cli_error("%s batch %llu: %s%s%s", memest_precision_name(prec),
                  (unsigned long long)batch, says ? "" : prof_strerror(st),
                  diag.message[0] && !says ? ": " : "", diag.message);
        return false;
    }
    for (size_t i = 0; w && i < w->layer_count; i++) {
        const struct cli_weights_layer *l = &w->layers[i];
        st = prof_exec_set_params(ex, l->layer, l->weight, l->weight_count,
                                  l->bias, l->bias_count);
        if (st != PROF_OK) {
            cli_error("weights of layer %zu: %s", l->layer,
                      prof_strerror(st));
            goto done;
        }
    }
    const size_t n_in = prof_exec_input_count(ex);
    const size_t n_out = prof_exec_output_count(ex);
    const size_t feat = n_in / batch, classes = n_out / batch;
    /* data_check() has compared the shapes; the counts are what the
     * copies below rely on, so they are checked here too. */
    if (feat != test->sample_count || (test->ref && classes !=
                                       test->ref_count)) {
        char have[128];
        cli_error("the model reads %zu values and gives %zu per sample; "
                  "the data has %s (%llu values)%s", feat, classes,
                  prof_dataset_shape_text(test, have, sizeof have),
                  (unsigned long long)test->sample_count,
                  test->ref ? " with reference outputs of another size"
                            : "");
        goto done;
    }
    in = calloc(n_in, sizeof *in);
    out = malloc(n_out * sizeof *out);
    got = test->ref ? malloc((size_t)test->count * classes * sizeof *got)
                    : NULL;
    if (!in || !out || (test->ref && !got)) {
        cli_error("out of memory: the buffers of a batch's inputs and "
                  "outputs");
        goto done;
    }
    /* The whole test set in batches; the last, partial one is padded with
     * zero samples whose results are not counted. */
    uint64_t correct = 0;
    for (uint64_t s = 0; s < test->count; s += batch) {
        const uint64_t take =
            test->count - s < batch ? test->count - s : batch;
        memcpy(in, test->x + s * feat, take * feat * sizeof *in);
        if (take < batch) {
            memset(in + take * feat, 0, (batch - take) * feat * sizeof *in);
        }
        st = prof_exec_run(ex, in, n_in, out, n_out);
        if (st != PROF_OK) {
            cli_error("%s batch %llu: running the test set: %s",
                      memest_precision_name(prec), (unsigned long long)batch,
                      prof_strerror(st));
            goto done;
        }
        for (uint64_t k = 0; test->y && k < take; k++) {
            correct += argmax(out + k * classes, classes) == test->y[s + k];
        }
        if (got) {
            memcpy(got + s * classes, out, take * classes * sizeof *out);
        }
    }
    /* Latency: the first batch of the test set, timed whole. */
    const uint64_t first = test->count < batch ? test->count : batch;
    memcpy(in, test->x, first * feat * sizeof *in);
    memset(in + first * feat, 0, (batch - first) * feat * sizeof *in);
    struct timed_run tr = {ex, in, out, n_in, n_out};
    struct prof_stats stats;
    st = prof_time(run_once, &tr, &cfg->timing, &stats, NULL);
    if (st != PROF_OK) {
        cli_error("timing %s batch %llu: %s", memest_precision_name(prec),
                  (unsigned long long)batch, prof_strerror(st));
        goto done;
    }
    struct memest_totals tot;
    const int mst = memest_estimate_totals(model, batch, prec, &tot);
    if (mst != MEMEST_OK) {
        cli_error("libmemest cannot estimate the model at batch %llu: %s",
                  (unsigned long long)batch, memest_strerror(mst));
        goto done;
    }
    /* the device's peak for this precision (int8 and 16-bit storage have
     * their own on some boards) */
    struct prof_device dev = cfg->device;
    dev.peak_gmacs = prof_device_peak(&cfg->device, prec);
    struct prof_prediction pred;
    st = prof_predict(&dev, tot.macs, tot.total_bytes, &pred);
    if (st != PROF_OK) {
        cli_error("predicting on %s: %s", cfg->device.name,
                  prof_strerror(st));
        goto done;
    }
    memset(row, 0, sizeof *row);
    snprintf(row->precision, sizeof row->precision, "%s",
             memest_precision_name(prec));
    if (prec == MEMEST_INT8) {
        snprintf(row->calibration, sizeof row->calibration, "%s",
                 cfg->calibration ? cfg->calibration : "");
    } else if (prec == MEMEST_INT8_DYNAMIC) {
        snprintf(row->calibration, sizeof row->calibration,
                 "per batch (each tensor's own range at run time)");
    }
    row->batch = batch;
    row->samples = test->count;
    row->accuracy = NAN;
    row->accuracy_stderr = NAN;
    if (test->y) {
        row->accuracy = (double)correct / (double)test->count;
        row->accuracy_stderr =
            data_accuracy_stderr(row->accuracy, test->count);
    }
    row->max_abs_error = NAN;
    row->rms_error = NAN;
    row->top1_agreement = NAN;
    if (got) {
        struct validate_metrics m;
        validate_compare(got, test->ref, (size_t)test->count, classes,
                         validate_is_classifier(model), &m);
        row->max_abs_error = m.max_abs_error;
        row->rms_error = m.rmse;
        row->top1_agreement = m.top1_agreement;
    }
    row->latency_ms = stats.median_ms;
    row->latency_p90_ms = stats.p90_ms;
    row->memory_mb = tot.peak_inference_mb;
    /* One machine's power times the same machine's latency: the host's
     * measured time when the device is this machine, else the device's
     * roofline latency (never the device's watts over the host's time). */
    const double energy_ms = strcmp(cfg->device.name, "host") == 0
                                 ? stats.median_ms
                                 : pred.predicted_ms;
    row->energy_proxy_j = cfg->device.power_watts > 0
        ? cfg->device.power_watts * energy_ms / 1000.0
        : NAN;
    row->device_latency_ms = pred.predicted_ms;
    row->device_bound = prof_bound_name(pred.bound);
    judge_row(row, cfg);
    ok = true;
done:
    free(in);
    free(out);
    free(got);
    prof_exec_destroy(ex);
    return ok;
}

bool sweep_run(const memest_model *model, const struct cli_weights *w,
               const struct prof_dataset *test,
               const struct sweep_config *cfg, struct sweep_result *out)
{
    out->rows = NULL;
    out->n = 0;
    if (test->count == 0) {
        cli_error("the test set is empty");
        return false;
    }
    if (!test->y && !test->ref) {
        cli_error("the test set has neither labels nor reference outputs: "
                  "nothing to measure a precision by");
        return false;
    }
    const size_t total = cfg->n_precisions * cfg->n_batches;
    out->rows = calloc(total, sizeof *out->rows);
    if (!out->rows) {
        cli_error("out of memory: the rows of the sweep");
        return false;
    }
    for (size_t p = 0; p < cfg->n_precisions; p++) {
        for (size_t b = 0; b < cfg->n_batches; b++) {
            if (cfg->progress) {
                char what[64];
                snprintf(what, sizeof what, "%s batch %llu",
                         memest_precision_name(cfg->precisions[p]),
                         (unsigned long long)cfg->batches[b]);
                cfg->progress(cfg->progress_ctx, out->n, total, what);
            }
            if (!run_config(model, w, test, cfg->precisions[p],
                            cfg->batches[b], cfg, &out->rows[out->n])) {
                sweep_result_free(out);
                return false;
            }
            out->n++;
        }
    }
    return true;
}

/* ---- CSV in ---------------------------------------------------------------- */

/* A cell as text (whatever type the reader inferred for its column). */
static void cell_text(const art_table *t, size_t r, size_t c, char *buf,
                      size_t len)
{
    art_table_format_cell(t, r, c, buf, len);
}

/* The line of row r in the file (blank lines and quoted line breaks
 * counted), for messages. */
static size_t row_line(const art_table *t, size_t r)
{
    const long line = art_table_row_line(t, r);
    return line > 0 ? (size_t)line : r + 2;
}

/* A number of column c in [lo, hi] (hi may be INFINITY). empty_ok: an
 * empty cell is NaN (unknown), as the sweep writes an energy it cannot
 * know. */
static bool cell_real(const char *path, const art_table *t, size_t r,
                      long c, const char *name, double lo, double hi,
                      bool empty_ok, double *v)
{
    char buf[64];
    cell_text(t, r, (size_t)c, buf, sizeof buf);
    if (art_table_get_real(t, r, (size_t)c, v) != ART_OK || !isfinite(*v)) {
        /* a column with one bad cell reads as text: parse the others */
        char *end = NULL;
        *v = strtod(buf, &end);
        if (!buf[0] && empty_ok) {
            *v = NAN;
            return true;
        }
        if (!buf[0] || !end || *end || !isfinite(*v)) {
            cli_error("%s:%zu: column '%s': '%s' is not a finite number",
                      path, row_line(t, r), name, buf);
            return false;
        }
    }
    if (!(*v >= lo && *v <= hi)) {
        if (isinf(hi)) {
            cli_error("%s:%zu: column '%s': %s is out of range: accepted %g "
                      "or more", path, row_line(t, r), name, buf, lo);
        } else {
            cli_error("%s:%zu: column '%s': %s is out of range: accepted %g "
                      "to %g", path, row_line(t, r), name, buf, lo, hi);
        }
        return false;
    }
    return true;
}

bool sweep_load_csv(const char *path, struct sweep_result *out)
{
    out->rows = NULL;
    out->n = 0;
    if (!cli_check_regular_file("--from-csv", path)) {
        return false;
    }
    art_table *t = NULL;
    struct art_diag diag = {0};
    int st = art_table_load_csv(path, &t, &diag);
    if (st != ART_OK) {
        if (diag.sys_errno != 0) {
            cli_error("%s", diag.message); /* "path: reason" */
        } else if (diag.line > 0) {
            cli_error("%s:%d: %s", path, diag.line,
                      diag.message[0] ? diag.message : art_strerror(st));
        } else {
            cli_error("%s: %s", path,
                      diag.message[0] ? diag.message : art_strerror(st));
        }
        return false;
    }
    static const char *const need[] = {"precision", "accuracy", "latency_ms",
                                       "memory_mb", "energy_proxy_j",
                                       "accepted"};
    long col[6];
    for (size_t i = 0; i < 6; i++) {
        col[i] = art_table_find_column(t, need[i]);
        if (col[i] < 0) {
            cli_error("%s:%ld: no column '%s' (need precision, accuracy, "
                      "latency_ms, memory_mb, energy_proxy_j, accepted)",
                      path, art_table_header_line(t), need[i]);
            art_table_destroy(t);
            return false;
        }
    }
    /* What the sweep writes beyond those, kept when present so that a
     * file read back loses nothing (device_latency_ms was dropped). */
    const long cb = art_table_find_column(t, "batch_size");
    const long cs = art_table_find_column(t, "test_samples");
    const long cp90 = art_table_find_column(t, "latency_p90_ms");
    const long cdev = art_table_find_column(t, "device_latency_ms");
    const long cbound = art_table_find_column(t, "device_bound");
    const size_t n = art_table_rows(t);
    if (n == 0) {
        cli_error("%s: no rows", path);
        art_table_destroy(t);
        return false;
    }
    out->rows = calloc(n, sizeof *out->rows);
    if (!out->rows) {
        cli_error("out of memory: the rows of the table read");
        art_table_destroy(t);
        return false;
    }
    for (size_t r = 0; r < n; r++) {
        struct sweep_row *row = &out->rows[r];
        const size_t line = row_line(t, r);
        char buf[64];
        cell_text(t, r, (size_t)col[0], buf, sizeof buf);
        if (!buf[0] || strlen(buf) >= sizeof row->precision) {
            cli_error("%s:%zu: column 'precision': '%s' is not a precision "
                      "name", path, line, buf);
            goto fail;
        }
        snprintf(row->precision, sizeof row->precision, "%s", buf);
        /* accuracy is a share of the test set; times, memory and energy
         * cannot be negative (an energy may be empty: power unknown) */
        if (!cell_real(path, t, r, col[1], need[1], 0.0, 1.0, false,
                       &row->accuracy) ||
            !cell_real(path, t, r, col[2], need[2], 0.0, INFINITY, false,
                       &row->latency_ms) ||
            !cell_real(path, t, r, col[3], need[3], 0.0, INFINITY, false,
                       &row->memory_mb) ||
            !cell_real(path, t, r, col[4], need[4], 0.0, INFINITY, true,
                       &row->energy_proxy_j)) {
            goto fail;
        }
        cell_text(t, r, (size_t)col[5], buf, sizeof buf);
        if (strcasecmp(buf, "true") == 0 || strcmp(buf, "1") == 0) {
            row->accepted = true;
        } else if (strcasecmp(buf, "false") == 0 || strcmp(buf, "0") == 0) {
            row->accepted = false;
        } else {
            cli_error("%s:%zu: column 'accepted': '%s' is not true or false",
                      path, line, buf);
            goto fail;
        }
        const long whole[2] = {cb, cs};
        uint64_t *dest[2] = {&row->batch, &row->samples};
        static const char *const whole_name[2] = {"batch_size",
                                                  "test_samples"};
        for (size_t k = 0; k < 2; k++) {
            if (whole[k] < 0 ||
                !art_table_is_set(t, r, (size_t)whole[k])) {
                continue;
            }
            uint64_t b;
            if (art_table_get_uint(t, r, (size_t)whole[k], &b) != ART_OK ||
                b == 0) {
                cell_text(t, r, (size_t)whole[k], buf, sizeof buf);
                cli_error("%s:%zu: column '%s': '%s' is not a whole number "
                          ">= 1", path, line, whole_name[k], buf);
                goto fail;
            }
            *dest[k] = b;
        }
        row->latency_p90_ms = NAN;
        row->device_latency_ms = NAN;
        row->accuracy_stderr = NAN;
        row->max_abs_error = NAN;
        row->rms_error = NAN;
        row->top1_agreement = NAN;
        if ((cp90 >= 0 &&
             !cell_real(path, t, r, cp90, "latency_p90_ms", 0.0, INFINITY,
                        true, &row->latency_p90_ms)) ||
            (cdev >= 0 &&
             !cell_real(path, t, r, cdev, "device_latency_ms", 0.0,
                        INFINITY, true, &row->device_latency_ms))) {
            goto fail;
        }
        if (cbound >= 0 && art_table_is_set(t, r, (size_t)cbound)) {
            cell_text(t, r, (size_t)cbound, buf, sizeof buf);
            if (strcmp(buf, "memory") == 0) {
                row->device_bound = "memory";
            } else if (strcmp(buf, "compute") == 0) {
                row->device_bound = "compute";
            } else {
                cli_error("%s:%zu: column 'device_bound': '%s' is not memory "
                          "or compute", path, line, buf);
                goto fail;
            }
        }
        out->n++;
    }
    art_table_destroy(t);
    return true;
fail:
    art_table_destroy(t);
    sweep_result_free(out);
    return false;
}

/* ---- Tables and the chart ------------------------------------------------- */

/* Whether any row of r has reference outputs to agree with. */
static bool has_reference(const struct sweep_result *r)
{
    for (size_t i = 0; i < r->n; i++) {
        if (!isnan(r->rows[i].rms_error)) {
            return true;
        }
    }
    return false;
}

/* A real cell, left empty when the value is unknown (NaN). */
static int set_real(art_table *t, size_t row, size_t col, double v)
{
    return isnan(v) ? ART_OK : art_table_set_real(t, row, col, v);
}

art_table *sweep_results_table(const struct sweep_result *r)
{
    enum { C_PREC, C_BATCH, C_ACC, C_ACC_SE, C_SAMPLES, C_MAXERR, C_RMS,
           C_TOP1, C_LAT, C_P90, C_MEM, C_ENERGY, C_DEVLAT, C_BOUND, C_ACC_OK,
           C_WHY, C_CAL, C_COUNT };
    static const struct {
        const char *name;
        enum art_type type;
    } cols[C_COUNT] = {
        {"precision", ART_TEXT},        {"batch_size", ART_UINT},
        {"accuracy", ART_REAL},         {"accuracy_stderr", ART_REAL},
        {"test_samples", ART_UINT},     {"max_abs_error", ART_REAL},
        {"rmse", ART_REAL},             {"top1_agreement", ART_REAL},
        {"latency_ms", ART_REAL},       {"latency_p90_ms", ART_REAL},
        {"memory_mb", ART_REAL},        {"energy_proxy_j", ART_REAL},
        {"device_latency_ms", ART_REAL}, {"device_bound", ART_TEXT},
        {"accepted", ART_BOOL},         {"rejected_by", ART_TEXT},
        {"int8_calibration", ART_TEXT},
    };
    /* The agreement columns only for a sweep against reference outputs:
     * a labelled run has nothing to put in them. */
    const bool ref = has_reference(r);
    /* int8_calibration only when an int8 row says where its ranges came
     * from */
    bool cal = false;
    for (size_t i = 0; i < r->n; i++) {
        cal = cal || r->rows[i].calibration[0];
    }
    size_t at[C_COUNT];
    art_table *t = NULL;
    if (art_table_create("sweep_results", &t) != ART_OK) {
        return NULL;
    }
    int st = ART_OK;
    size_t nc = 0;
    for (size_t i = 0; i < C_COUNT && !st; i++) {
        if ((!ref && (i == C_MAXERR || i == C_RMS || i == C_TOP1)) ||
            (!cal && i == C_CAL)) {
            continue;
        }
        at[i] = nc++;
        st = art_table_add_column(t, cols[i].name, cols[i].type);
    }
    for (size_t i = 0; i < r->n && !st; i++) {
        const struct sweep_row *w = &r->rows[i];
        size_t row;
        st = art_table_add_row(t, &row);
        st = st ? st : art_table_set_text(t, row, at[C_PREC], w->precision);
        if (!st && w->batch) {
            st = art_table_set_uint(t, row, at[C_BATCH], w->batch);
        }
        st = st ? st : set_real(t, row, at[C_ACC], w->accuracy);
        st = st ? st : set_real(t, row, at[C_ACC_SE], w->accuracy_stderr);
        if (!st && w->samples) {
            st = art_table_set_uint(t, row, at[C_SAMPLES], w->samples);
        }
        if (ref) {
            st = st ? st : set_real(t, row, at[C_MAXERR], w->max_abs_error);
            st = st ? st : set_real(t, row, at[C_RMS], w->rms_error);
            st = st ? st : set_real(t, row, at[C_TOP1], w->top1_agreement);
        }
        st = st ? st : art_table_set_real(t, row, at[C_LAT], w->latency_ms);
        if (!st && isfinite(w->latency_p90_ms)) {
            st = art_table_set_real(t, row, at[C_P90], w->latency_p90_ms);
        }
        st = st ? st : art_table_set_real(t, row, at[C_MEM], w->memory_mb);
        if (!st && isfinite(w->energy_proxy_j)) {
            st = art_table_set_real(t, row, at[C_ENERGY], w->energy_proxy_j);
        }
        if (!st && isfinite(w->device_latency_ms)) {
            st = art_table_set_real(t, row, at[C_DEVLAT],
                                    w->device_latency_ms);
        }
        if (!st && w->device_bound) {
            st = art_table_set_text(t, row, at[C_BOUND], w->device_bound);
        }
        st = st ? st : art_table_set_bool(t, row, at[C_ACC_OK], w->accepted);
        st = st ? st : art_table_set_text(t, row, at[C_WHY], w->rejected_by);
        if (!st && cal) {
            st = art_table_set_text(t, row, at[C_CAL], w->calibration);
        }
    }
    if (st != ART_OK) {
        art_table_destroy(t);
        return NULL;
    }
    return t;
}

art_table *sweep_tradeoff_table(const struct sweep_result *r)
{
    struct prof_sweep_row *in = calloc(r->n, sizeof *in);
    struct prof_tradeoff_row *agg = calloc(r->n, sizeof *agg);
    art_table *t = NULL;
    if (!in || !agg) {
        cli_error("out of memory: the rows of the precision trade-off");
        goto done;
    }
    /* A device of unknown power has no energy: the aggregation gets 0
     * and the mean is left empty rather than shown as 0 J. */
    bool energy_known = true, accuracy_known = true;
    for (size_t i = 0; i < r->n; i++) {
        const struct sweep_row *w = &r->rows[i];
        energy_known = energy_known && isfinite(w->energy_proxy_j);
        /* data without labels (reference outputs) has no accuracy: its
         * mean is left empty too */
        accuracy_known = accuracy_known && !isnan(w->accuracy);
        in[i] = (struct prof_sweep_row){
            w->precision, isnan(w->accuracy) ? 0 : w->accuracy,
            w->latency_ms, w->memory_mb,
            isfinite(w->energy_proxy_j) ? w->energy_proxy_j : 0,
            w->accepted};
    }
    size_t n = 0;
    int st = prof_precision_tradeoff(in, r->n, agg, r->n, &n);
    if (st != PROF_OK) {
        cli_error("precision trade-off: %s", prof_strerror(st));
        goto done;
    }
    static const char *const cols[] = {"precision", "accuracy_mean",
                                       "latency_ms_mean", "memory_mb_mean",
                                       "energy_proxy_j_mean",
                                       "accepted_ratio"};
    if (art_table_create("precision_tradeoffs", &t) != ART_OK) {
        goto done;
    }
    st = art_table_add_column(t, cols[0], ART_TEXT);
    for (size_t i = 1; i < 6 && !st; i++) {
        st = art_table_add_column(t, cols[i], ART_REAL);
    }
    for (size_t i = 0; i < n && !st; i++) {
        size_t row;
        st = art_table_add_row(t, &row);
        st = st ? st : art_table_set_text(t, row, 0, agg[i].precision);
        if (!st && accuracy_known) {
            st = art_table_set_real(t, row, 1, agg[i].accuracy_mean);
        }
        st = st ? st : art_table_set_real(t, row, 2, agg[i].latency_ms_mean);
        st = st ? st : art_table_set_real(t, row, 3, agg[i].memory_mb_mean);
        if (!st && energy_known) {
            st = art_table_set_real(t, row, 4, agg[i].energy_proxy_j_mean);
        }
        st = st ? st : art_table_set_real(t, row, 5, agg[i].accepted_ratio);
    }
    if (st != ART_OK) {
        cli_error("out of memory: the precision trade-off table");
        art_table_destroy(t);
        t = NULL;
    }
done:
    free(in);
    free(agg);
    return t;
}

bool sweep_chart_init(const struct sweep_result *r, struct sweep_chart *c)
{
    memset(c, 0, sizeof *c);
    c->x = calloc(r->n, sizeof *c->x);
    c->y = calloc(r->n, sizeof *c->y);
    c->err = calloc(r->n, sizeof *c->err);
    c->labels = calloc(r->n, sizeof *c->labels);
    c->text = calloc(r->n, sizeof *c->text);
    if (!c->x || !c->y || !c->err || !c->labels || !c->text) {
        cli_error("out of memory: the points of the trade-off chart");
        sweep_chart_free(c);
        return false;
    }
    /* the precisions in order of first appearance */
    const char *prec[SWEEP_MAX_PRECISIONS];
    size_t np = 0;
    for (size_t i = 0; i < r->n; i++) {
        size_t k = 0;
        while (k < np && strcmp(prec[k], r->rows[i].precision) != 0) {
            k++;
        }
        if (k == np) {
            if (np == SWEEP_MAX_PRECISIONS) {
                cli_error("more than %d precisions to draw",
                          SWEEP_MAX_PRECISIONS);
                sweep_chart_free(c);
                return false;
            }
            prec[np++] = r->rows[i].precision;
        }
    }
    /* Against reference outputs the chart shows the RMS error, there
     * being no accuracy. */
    const bool ref = has_reference(r);
    /* one series per precision and verdict, each a contiguous run */
    size_t k = 0, ns = 0;
    for (int pass = 0; pass < 2; pass++) {
        for (size_t p = 0; p < np; p++) {
            const size_t start = k;
            for (size_t i = 0; i < r->n; i++) {
                const struct sweep_row *w = &r->rows[i];
                if (w->accepted != (pass == 0) ||
                    strcmp(w->precision, prec[p]) != 0) {
                    continue;
                }
                c->x[k] = w->latency_ms;
                c->y[k] = ref ? w->rms_error : w->accuracy;
                /* the accuracy's standard error: differences inside
                 * the bars are noise */
                c->err[k] = ref ? NAN : w->accuracy_stderr;
                if (w->batch) {
                    snprintf(c->text[k], sizeof c->text[k], "b%llu",
                             (unsigned long long)w->batch);
                    c->labels[k] = c->text[k];
                }
                k++;
            }
            if (k == start) {
                continue;
            }
            snprintf(c->names[ns], sizeof c->names[ns], "%s%s", prec[p],
                     pass == 0 ? "" : " rejected");
            c->series[ns] = (struct art_series){
                .name = c->names[ns], .n = k - start,
                .x = c->x + start, .y = c->y + start,
                .y_err = c->err + start, .labels = c->labels + start,
                .hollow = pass == 1,
                .marker = pass == 0 ? ART_MARKER_CIRCLE : ART_MARKER_SQUARE,
                .color = (int)p + 1};
            ns++;
        }
    }
    c->chart = (struct art_chart){
        .kind = ART_CHART_SCATTER,
        .title = ref ? "Precision trade-offs: latency against the error"
                     : "Precision trade-offs: latency against accuracy",
        .x_label = "Latency per batch on this machine (ms); "
                   "bN = batch of N",
        .y_label = ref ? "RMS error against the reference output"
                       : "Test accuracy (fraction correct; bars: one "
                         "standard error)",
        .x_scale = ART_SCALE_LOG,
        /* errors span decades (fp32 ~1e-8, int8 ~1e-3), and an RMS error
         * is never negative: a log axis */
        .y_scale = ref ? ART_SCALE_LOG : ART_SCALE_LINEAR,
        .series = c->series, .n_series = ns};
    return true;
}

void sweep_chart_free(struct sweep_chart *c)
{
    free(c->x);
    free(c->y);
    free(c->err);
    free(c->labels);
    free(c->text);
    memset(c, 0, sizeof *c);
}
