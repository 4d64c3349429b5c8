/* edgefit-report's outputs: summary.json (the verdict and every figure
 * it quotes), report.html (one static page) and the folder, written as
 * one bundle. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "data.h"
#include "report.h"
/* ---- the facts of the run: machine, command, date -------------------------- */

void report_facts(const struct options *o, struct report *r)
{
    cli_cpu_model(r->machine, sizeof r->machine);
    /* the command as a shell would take it back: words with anything
     * but plain characters in single quotes */
    size_t len = 0;
    r->command[0] = '\0';
    for (int i = 0; i < o->argc && len + 4 < sizeof r->command; i++) {
        const char *a = i == 0 ? "edgefit-report" : o->argv[i];
        const bool plain = a[0] && strspn(a, "abcdefghijklmnopqrstuvwxyz"
                                             "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                             "0123456789-_./:=,+@%") ==
                                       strlen(a);
        len += (size_t)snprintf(r->command + len, sizeof r->command - len,
                                "%s%s%s%s", i ? " " : "", plain ? "" : "'",
                                a, plain ? "" : "'");
        if (len >= sizeof r->command) {
            len = sizeof r->command - 1;
        }
    }
    const time_t now = time(NULL);
    struct tm tm;
    if (gmtime_r(&now, &tm)) {
        strftime(r->date, sizeof r->date, "%Y-%m-%d %H:%M UTC", &tm);
    }
}

/* ---- summary.json and report.html ------------------------------------------ */

struct artifact {
    const char *file;
    const char *what;
    /* only with training; only with labels; only with labels or
     * reference outputs */
    bool training, labels, chart;
};

/* Every file of the folder, in the order the page shows them. */
static const struct artifact artifacts[] = {
    {"report.html", "this page: the verdict, the key tables and every chart",
     false, false, false},
    {"summary.json", "the verdict and the figures behind it, for scripts",
     false, false, false},
    {"training_history.csv", "one row per epoch: loss, train and test "
                             "accuracy, time", true, false, false},
    {"training_curves.png", "loss and accuracy per epoch, train and test",
     true, false, false},
    {"weights.safetensors", "the trained weights (PyTorch names), for "
                            "--weights", true, false, false},
    {"sweep_results.csv", "every precision and batch: accuracy or "
                          "agreement, latency, memory, energy, accepted or "
                          "why not", false, false, false},
    {"precision_tradeoffs.csv", "means per precision, fastest first (the "
                                "original's trade-off table)", false, true,
     true},
    {"precision_tradeoffs.png", "latency against accuracy (with error "
                                "bars) or against the error, one point per "
                                "precision and batch", false, false, true},
    {"layerwise_breakdown.csv", "every layer: shapes, bytes, MACs, measured "
                                "and predicted time", false, false, false},
    {"hardware_summary.csv", "the whole model: bandwidth and compute use, "
                             "roofline, regime", false, false, false},
    {"layerwise.json", "the two layer tables as JSON", false, false, false},
    {"layerwise_activation_memory.png", "activation memory per layer (MB)",
     false, false, false},
    {"layerwise_macs.png", "multiply-accumulates per layer (millions)",
     false, false, false},
    {"roofline.png", "each layer against the device's and this machine's "
                     "roofs", false, false, false},
};
#define N_ARTIFACTS (sizeof artifacts / sizeof artifacts[0])

static bool written(const struct report *r, const struct artifact *a)
{
    return (!a->training || r->training) &&
           (!a->labels || r->tradeoffs) && (!a->chart || r->have_chart);
}

static const char *data_kind_name(enum data_kind k)
{
    switch (k) {
    case DATA_NONE:
        return "none";
    case DATA_LABELLED:
        return "labelled";
    case DATA_REFERENCE:
        return "reference outputs";
    }
    return "?";
}

/* One sweep row's figures (those the verdict quotes). */
static int row_doc(art_doc *d, const struct sweep_row *w,
                   const struct report *r)
{
    int st = art_doc_set_text(d, "precision", w->precision);
    st = st ? st : art_doc_set_uint(d, "batch_size", w->batch);
    st = st ? st : art_doc_set_real(d, "memory_mb", w->memory_mb);
    st = st ? st : art_doc_set_real(d, "device_latency_ms",
                                    w->device_latency_ms);
    st = st ? st : art_doc_set_real(d, "device_latency_ms_per_input",
                                    w->device_latency_ms / (double)w->batch);
    if (r->data == DATA_LABELLED) {
        st = st ? st : art_doc_set_real(d, "accuracy", w->accuracy);
        st = st ? st : art_doc_set_real(d, "accuracy_stderr",
                                        data_accuracy_stderr(w->accuracy,
                                                             w->samples));
    }
    if (r->data == DATA_REFERENCE) {
        st = st ? st : art_doc_set_real(d, "max_abs_error", w->max_abs_error);
        st = st ? st : art_doc_set_real(d, "rmse", w->rms_error);
        if (r->classifier) {
            st = st ? st : art_doc_set_real(d, "top1_agreement",
                                            w->top1_agreement);
        }
    }
    return st;
}

int report_summary(const struct options *o, struct report *r)
{
    enum { D_DEV, D_DATA, D_TR, D_BEST, D_BB, D_F32, D_F32B, D_SMALL, N_SUB };
    art_doc *d = NULL, *sub[N_SUB] = {0};
    int st = art_doc_create(&d);
    for (size_t i = 0; i < N_SUB; i++) {
        st = st ? st : art_doc_create(&sub[i]);
    }
    const char *lines[VERDICT_LINES];
    for (size_t i = 0; i < r->n_verdict; i++) {
        lines[i] = r->verdict[i];
    }
    const char *files[N_ARTIFACTS];
    size_t nfiles = 0;
    for (size_t i = 0; i < N_ARTIFACTS; i++) {
        if (written(r, &artifacts[i])) {
            files[nfiles++] = artifacts[i].file;
        }
    }
    st = st ? st : art_doc_set_text(d, "model", memest_model_name(r->model));
    st = st ? st : art_doc_set_texts(d, "verdict", lines, r->n_verdict);
    st = st ? st : art_doc_set_text(d, "edgefit_version", EDGEFIT_VERSION);
    st = st ? st : art_doc_set_text(d, "machine", r->machine);
    st = st ? st : art_doc_set_text(d, "command_line", r->command);
    st = st ? st : art_doc_set_text(d, "date", r->date);
    st = st ? st : art_doc_set_uint(d, "threads", o->threads);
    st = st ? st : art_doc_set_uint(d, "batch_size", o->batch);

    art_doc *dev = sub[D_DEV];
    st = st ? st : art_doc_set_text(dev, "name", r->device.name);
    st = st ? st : art_doc_set_real(dev, "bandwidth_gbps",
                                    r->device.bandwidth_gbps);
    st = st ? st : art_doc_set_real(dev, "peak_gmacs", r->device.peak_gmacs);
    st = st ? st : art_doc_set_real(dev, "power_watts",
                                    r->device.power_watts);
    st = st ? st : art_doc_set_real(dev, "memory_mb", r->device.memory_mb);
    st = st ? st : art_doc_set_doc(d, "device", dev);

    art_doc *data = sub[D_DATA];
    st = st ? st : art_doc_set_text(data, "data_kind",
                                    data_kind_name(r->data));
    if (r->data_dir) {
        st = st ? st : art_doc_set_text(data, "dir", r->data_dir);
    }
    st = st ? st : art_doc_set_uint(data, "train_samples", r->train.count);
    st = st ? st : art_doc_set_uint(data, "test_samples", r->test.count);
    if (r->int8_calibration[0]) {
        st = st ? st : art_doc_set_text(data, "int8_calibration",
                                        r->int8_calibration);
    }
    st = st ? st : art_doc_set_doc(d, "data", data);

    art_doc *tr = sub[D_TR];
    st = st ? st : art_doc_set_bool(tr, "trained", r->training);
    if (!r->training) {
        st = st ? st : art_doc_set_text(tr, "training_skipped",
                                        r->no_training);
    }
    const size_t n = r->log.done;
    if (r->training) {
        st = st ? st : art_doc_set_uint(tr, "epochs", n);
        st = st ? st : art_doc_set_uint(tr, "batch_size", o->batch);
        st = st ? st : art_doc_set_real(tr, "training_time_s",
                                        r->log.elapsed_s);
        st = st ? st : art_doc_set_real(
                           tr, "training_memory_mb",
                           (double)r->train_mem.total_bytes / 1048576.0);
        st = st ? st : art_doc_set_uint(tr, "training_memory_bytes",
                                        r->train_mem.total_bytes);
    }
    if (n > 0) {
        st = st ? st : art_doc_set_real(tr, "final_loss",
                                        r->log.epochs[n - 1].loss);
        st = st ? st : art_doc_set_real(tr, "final_train_accuracy",
                                        r->log.epochs[n - 1].train_accuracy);
        st = st ? st : art_doc_set_real(tr, "test_accuracy",
                                        r->log.test_accuracy[n - 1]);
        st = st ? st : art_doc_set_real(tr, "test_loss",
                                        r->log.test_loss[n - 1]);
    }
    st = st ? st : art_doc_set_doc(d, "training", tr);

    st = st ? st : art_doc_set_real(d, "memory_limit_mb", r->memory_limit_mb);
    st = st ? st : art_doc_set_bool(d, "fits", r->fits);
    st = st ? st : art_doc_set_uint(d, "largest_fp32_batch",
                                    r->largest_batch);
    st = st ? st : art_doc_set_bool(d, "batch_search_capped",
                                    r->memory_unconstrained);
    if (r->smallest_prec) {
        st = st ? st : art_doc_set_text(sub[D_SMALL], "precision",
                                        r->smallest_prec);
        st = st ? st : art_doc_set_real(sub[D_SMALL], "memory_mb",
                                        r->smallest_b1_mb);
        st = st ? st : art_doc_set_doc(d, "smallest_memory", sub[D_SMALL]);
    }
    if (!isnan(r->scfg.min_accuracy)) {
        st = st ? st : art_doc_set_real(d, "min_accuracy",
                                        r->scfg.min_accuracy);
    }
    st = st ? st : art_doc_set_uint(d, "configurations", r->sweep.n);
    st = st ? st : art_doc_set_uint(d, "accepted_configurations",
                                    r->accepted);
    if (r->fp32_b1) {
        st = st ? st : row_doc(sub[D_F32], r->fp32_b1, r);
        st = st ? st : art_doc_set_doc(d, "fp32", sub[D_F32]);
    }
    const struct sweep_row *fb = report_row(r, "fp32", o->batch);
    if (fb) {
        st = st ? st : row_doc(sub[D_F32B], fb, r);
        st = st ? st : art_doc_set_doc(d, "fp32_at_batch", sub[D_F32B]);
    }
    if (r->best) {
        art_doc *best = sub[D_BEST];
        st = st ? st : row_doc(best, r->best, r);
        if (r->data == DATA_LABELLED && r->fp32_b1) {
            st = st ? st : art_doc_set_real(best, "accuracy_cost",
                                            r->fp32_b1->accuracy -
                                                r->best->accuracy);
        }
        /* the realistic end of the device's latency per input: the
         * bound x this machine's over-run of its own roofline */
        if (isfinite(r->lw.host_overrun) && r->lw.host_overrun > 0) {
            st = st ? st : art_doc_set_real(best, "host_roofline_overrun",
                                            r->lw.host_overrun);
            st = st ? st : art_doc_set_real(
                               best, "device_latency_realistic_ms_per_input",
                               r->best->device_latency_ms /
                                   (double)r->best->batch *
                                   r->lw.host_overrun);
        }
        /* per input, as the verdict says it */
        st = st ? st : art_doc_set_real(
                           best, "device_energy_j",
                           r->device.power_watts > 0
                               ? r->device.power_watts *
                                     r->best->device_latency_ms /
                                     (double)r->best->batch / 1000.0
                               : NAN);
        st = st ? st : art_doc_set_doc(d, "best", best);
        if (r->best_b) {
            st = st ? st : row_doc(sub[D_BB], r->best_b, r);
            st = st ? st : art_doc_set_doc(d, "best_at_batch", sub[D_BB]);
        }
    }
    st = st ? st : art_doc_set_text(d, "bound",
                                    prof_bound_name(r->lw.regime));
    st = st ? st : art_doc_set_text(d, "bound_reading", r->lw.regime_text);
    st = st ? st : art_doc_set_text(d, "precision",
                                    memest_precision_name(r->lwo.precision));
    st = st ? st : art_doc_set_uint(d, "regime_layers", r->lw.regime_layers);
    st = st ? st : art_doc_set_uint(d, "layer_count", r->lw.n_layers);
    st = st ? st : art_doc_set_real(d, "regime_time_share",
                                    isfinite(r->lw.regime_share)
                                        ? r->lw.regime_share
                                        : 0.0);
    if (r->tradeoffs) {
        st = st ? st : art_doc_set_table(d, "precision_tradeoffs",
                                         r->tradeoffs);
    }
    st = st ? st : art_doc_set_texts(d, "files", files, nfiles);
    st = st ? st : art_doc_set_real(d, "wall_time_s", r->wall_s);
    for (size_t i = 0; i < N_SUB; i++) {
        art_doc_destroy(sub[i]);
    }
    if (st != ART_OK) {
        art_doc_destroy(d);
        cli_error("building summary.json: %s", art_strerror(st));
        return CLI_EXIT_FAILURE;
    }
    r->summary = d;
    return CLI_EXIT_OK;
}

/* A chart at 900 px wide on a page of at most 960 px: the PNG's 1260 px
 * are shown at 0.71, so its smallest text (19 px) reads at 13 px. */
static void html_figure(FILE *f, const char *file, const char *alt)
{
    fputs("<figure><a href=\"", f);
    art_html_write_text(f, file);
    fputs("\"><img src=\"", f);
    art_html_write_text(f, file);
    fputs("\" alt=\"", f);
    art_html_write_text(f, alt);
    fputs("\" width=\"900\"></a><figcaption>", f);
    art_html_write_text(f, alt);
    fputs("</figcaption></figure>\n", f);
}

static void html_section(FILE *f, const char *title, const char *lead)
{
    fputs("<h2>", f);
    art_html_write_text(f, title);
    fputs("</h2>\n<p>", f);
    art_html_write_text(f, lead);
    fputs("</p>\n", f);
}

/* Every table scrolls sideways inside the page rather than widening it. */
static void html_table(FILE *f, const art_table *t)
{
    fputs("<div class=\"scroll\">", f);
    art_table_write_html(t, f, 4);
    fputs("</div>\n", f);
}

static void html_fact(FILE *f, const char *name, const char *value)
{
    fputs("<tr><th>", f);
    art_html_write_text(f, name);
    fputs("</th><td>", f);
    art_html_write_text(f, value);
    fputs("</td></tr>\n", f);
}

static void html_precisions(FILE *f, const struct report *r)
{
    char buf[700];
    const char *measure = "";
    switch (r->data) {
    case DATA_LABELLED:
        measure = "Accuracy on the labelled test set; differences below "
                  "the standard error (the chart's error bars) are noise.";
        break;
    case DATA_REFERENCE:
        measure = "Agreement of each precision's outputs with the "
                  "reference outputs: max_abs_error and rmse (and "
                  "top1_agreement for a classifier).";
        break;
    case DATA_NONE:
        measure = "No data given: no accuracy; the rows are memory and "
                  "latency alone.";
        break;
    }
    snprintf(buf, sizeof buf,
             "%s Accepted: peak inference memory <= %.6g MB%s%s. Latency "
             "per batch measured on this machine; device_latency_ms is "
             "%s's roofline lower bound; energy_proxy_j = %.3g W x "
             "device_latency_ms (one machine's power and latency).",
             measure, r->memory_limit_mb,
             isnan(r->scfg.min_accuracy)
                 ? ""
                 : ", test accuracy at least fp32's at the first batch "
                   "minus the allowed drop",
             isfinite(r->scfg.max_latency_ms) ? ", latency under the limit"
                                              : "",
             r->device.name, r->device.power_watts);
    html_section(f, "Precisions", buf);
    if (r->have_chart) {
        html_figure(f, "precision_tradeoffs.png",
                    r->data == DATA_LABELLED
                        ? "Latency against accuracy per precision and "
                          "batch (bars: one standard error)"
                        : "Latency against the RMS error per precision "
                          "and batch");
    }
    if (r->tradeoffs) {
        html_table(f, r->tradeoffs);
    }
    html_table(f, r->sweep_table);
}

static int write_html(const void *obj, FILE *f)
{
    const struct report *r = obj;
    char buf[700];
    fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n"
          "<meta charset=\"utf-8\">\n"
          "<meta name=\"viewport\" content=\"width=device-width\">\n<title>",
          f);
    snprintf(buf, sizeof buf, "edgefit report: %s on %s",
             memest_model_name(r->model), r->device.name);
    art_html_write_text(f, buf);
    fputs("</title>\n<style>\n"
          "body{font-family:'DejaVu Sans',sans-serif;max-width:960px;"
          "margin:1em auto;padding:0 1em;color:#222;font-size:16px}\n"
          "h1{font-size:1.5em}h2{font-size:1.2em;border-bottom:1px solid "
          "#ccc;margin-top:1.6em}\n"
          ".verdict{background:#f4f7fb;border-left:4px solid #1f77b4;"
          "padding:.6em 1em}\n.verdict li{margin:.3em 0}\n"
          "table{border-collapse:collapse;font-size:.85em;margin:.6em 0}\n"
          "th,td{border:1px solid #ddd;padding:.2em .5em}\n"
          "th{background:#f0f0f0;text-align:left}td.num{text-align:right;"
          "font-variant-numeric:tabular-nums}\n"
          ".scroll{overflow-x:auto;max-width:100%}\n"
          "figure{margin:.8em 0}\n"
          "figure img{border:1px solid #ddd;max-width:100%;height:auto}\n"
          "figcaption{font-size:.9em;color:#555}\n"
          ".facts td{word-break:break-all}\n"
          "</style>\n</head>\n<body>\n<h1>", f);
    art_html_write_text(f, buf);
    fputs("</h1>\n<div class=\"verdict\"><ul>\n", f);
    for (size_t i = 0; i < r->n_verdict; i++) {
        fputs("<li>", f);
        art_html_write_text(f, r->verdict[i]);
        fputs("</li>\n", f);
    }
    fputs("</ul></div>\n<table class=\"facts\">\n", f);
    html_fact(f, "machine", r->machine);
    html_fact(f, "command", r->command);
    html_fact(f, "date", r->date);
    html_fact(f, "edgefit", EDGEFIT_VERSION);
    snprintf(buf, sizeof buf, "%s (%s)", data_kind_name(r->data),
             r->data_dir ? r->data_dir : "no data given: no accuracy");
    html_fact(f, "data", buf);
    if (r->int8_calibration[0]) {
        html_fact(f, "int8 calibration", r->int8_calibration);
    }
    snprintf(buf, sizeof buf, "%u", r->lwo.threads);
    html_fact(f, "threads", buf);
    fputs("</table>\n", f);

    if (r->training) {
        snprintf(buf, sizeof buf,
                 "%" PRIu64 " training and %" PRIu64 " test samples; SGD, "
                 "learning rate 0.1, batch 32, seed 42.",
                 r->train.count, r->test.count);
        html_section(f, "Training", buf);
        html_figure(f, "training_curves.png",
                    "Loss and accuracy per epoch, train and test");
        html_table(f, r->history);
    } else {
        snprintf(buf, sizeof buf, "No training (%s).", r->no_training);
        html_section(f, "Training", buf);
    }

    html_precisions(f, r);

    snprintf(buf, sizeof buf, "%s at batch %" PRIu64 ": %s.",
             memest_precision_name(r->lwo.precision), r->lwo.batch,
             r->lw.regime_text);
    html_section(f, "Layers", buf);
    html_figure(f, "layerwise_activation_memory.png",
                "Activation memory per layer");
    html_figure(f, "layerwise_macs.png", "Compute per layer");
    html_figure(f, "roofline.png", "Roofline: measured here, predicted on "
                                   "the device");
    html_table(f, r->layers_brief);

    html_section(f, "Files", "Everything in this folder.");
    fputs("<ul>\n", f);
    for (size_t i = 0; i < N_ARTIFACTS; i++) {
        if (!written(r, &artifacts[i])) {
            continue;
        }
        fputs("<li><a href=\"", f);
        art_html_write_text(f, artifacts[i].file);
        fputs("\">", f);
        art_html_write_text(f, artifacts[i].file);
        fputs("</a>: ", f);
        art_html_write_text(f, artifacts[i].what);
        fputs("</li>\n", f);
    }
    fprintf(f, "</ul>\n<p>edgefit %s</p>\n</body>\n</html>\n",
            EDGEFIT_VERSION);
    return ferror(f) ? ART_E_IO : ART_OK;
}

int report_write(const struct options *o, struct report *r)
{
    /* the apps' bundle: every file keeps the digits that mean something,
     * and once it is committed a failing stdout is only a warning */
    art_bundle *b = NULL;
    if (cli_out_bundle(o->co.out_dir, NULL, 0, &b) != CLI_EXIT_OK) {
        return CLI_EXIT_FAILURE;
    }
    int st = art_bundle_add(b, "report.html", write_html, r);
    st = st ? st : art_bundle_add_doc(b, "summary.json", r->summary);
    if (r->training) {
        st = st ? st : art_bundle_add_csv(b, "training_history.csv",
                                          r->history);
        st = st ? st : art_bundle_add_figure(b, "training_curves.png",
                                             &r->tch.curves);
        st = st ? st : art_bundle_add_safetensors(b, "weights.safetensors",
                                                  r->weights.tensors,
                                                  r->weights.tensor_count);
    }
    st = st ? st : art_bundle_add_csv(b, "sweep_results.csv", r->sweep_table);
    if (r->tradeoffs) {
        st = st ? st : art_bundle_add_csv(b, "precision_tradeoffs.csv",
                                          r->tradeoffs);
    }
    if (r->have_chart) {
        st = st ? st : art_bundle_add_chart(b, "precision_tradeoffs.png",
                                            &r->sch.chart);
    }
    st = st ? st : art_bundle_add_csv(b, "layerwise_breakdown.csv",
                                      r->lw.layers);
    st = st ? st : art_bundle_add_csv(b, "hardware_summary.csv", r->lw.hw);
    art_doc *lj = NULL;
    st = st ? st : art_doc_create(&lj);
    st = st ? st : art_doc_set_table(lj, "layers", r->lw.layers);
    st = st ? st : art_doc_set_table(lj, "hardware_summary", r->lw.hw);
    st = st ? st : art_bundle_add_doc(b, "layerwise.json", lj);
    st = st ? st : art_bundle_add_chart(b, "layerwise_activation_memory.png",
                                        &r->lch.activation);
    st = st ? st : art_bundle_add_chart(b, "layerwise_macs.png",
                                        &r->lch.macs);
    st = st ? st : art_bundle_add_chart(b, "roofline.png", &r->lch.roofline);
    if (st != ART_OK) {
        art_bundle_destroy(b);
        art_doc_destroy(lj);
        cli_error("--out %s: %s", o->co.out_dir, art_strerror(st));
        return CLI_EXIT_FAILURE;
    }
    const int rc = cli_out_commit(b);
    art_doc_destroy(lj);
    return rc;
}
