/* edgefit-layerwise: run a model layer by layer on this machine, measure
 * each operator, predict it on a device with the roofline, and summarise
 * the hardware use the way the original layer-wise analysis did. */
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calib.h"
#include "cli.h"
#include "devices.h"
#include "edgefit/artifacts.h"
#include "edgefit/memest.h"
#include "edgefit/profile.h"

#define DEFAULT_MODEL "smallcnn"

struct options {
    const char *model;
    uint64_t batch;
    enum memest_precision precision;
    struct cli_device_opts dev;
    uint64_t repeats;
    uint64_t warmup;
    double min_sample_ms;
    int have_power;
    double power_watts;
    double latency_multiplier;
    uint64_t seed;
    struct cli_calib_opts calib;
    struct cli_common co;
};

static void usage(FILE *f)
{
    fprintf(f,
        "usage: edgefit-layerwise [options]\n"
        "\n"
        "Run a model layer by layer on this machine, time every operator,\n"
        "predict each on a device (roofline: max(MACs / peak, bytes /\n"
        "bandwidth)) and summarise bandwidth and compute use.\n"
        "\n"
        "  --model SPEC             a model file, mlp:W0-W1-...-Wn or smallcnn\n"
        "                           (default " DEFAULT_MODEL ")\n"
        "  --batch N                batch size (default 32)\n"
        "  --precision P            fp32|fp16|bf16|int8 (default fp32)\n"
        "  --device D               rpi4, jetson-nano, desktop, host (this\n"
        "                           machine, calibrated) or\n"
        "                           name=X,bandwidth_gbps=B,peak_gmacs=P\n"
        "                           [,power_watts=W,memory_mb=M]\n"
        "                           (default host), or a device of --devices\n"
        "  --devices FILE           devices of your own: a CSV file with the\n"
        "                           catalogue's columns name, bandwidth_gbps,\n"
        "                           peak_gmacs[, power_watts, memory_mb]\n"
        "  --list-devices           print the catalogue with the source of\n"
        "                           each figure (and the --devices file) and\n"
        "                           exit\n"
        "  --repeats N              timed runs per operator (default 5)\n"
        "  --warmup N               untimed runs first (default 2)\n"
        "  --min-sample-ms X        time back-to-back runs of an operator\n"
        "                           until a sample lasts X ms and report the\n"
        "                           time per run (default 0.05; 0: one run\n"
        "                           per sample)\n"
        "  --power-watts W          power for the energy proxy (default the\n"
        "                           device's; unknown for host: no energy)\n"
        "  --latency-multiplier X   scale every measured latency (default 1)\n"
        "  --seed N                 weights and input (default 42)\n"
        CLI_CALIB_HELP
        "  --quiet                  no progress on stderr (shown only on a\n"
        "                           terminal)\n"
        "  --format F               table|csv|json on stdout (default table)\n"
        "  --out DIR                write layerwise_breakdown.csv and\n"
        "                           hardware_summary.csv\n"
        "  --help, --version\n"
        "\n"
        "Latencies are medians of the timed runs. The host prediction (from\n"
        "this machine's own calibration) is always compared with the\n"
        "measurement: host_prediction_error = (predicted - measured) /\n"
        "measured, per layer and in total. It is cache-aware: each layer\n"
        "streams its bytes at the bandwidth of the smallest cache that holds\n"
        "them (host_memory_level); host_dram_* is the plain roofline on the\n"
        "main-memory bandwidth, which catalogue devices use. The input row\n"
        "is not a layer (no latency, no prediction); an error is left empty\n"
        "when either side is zero.\n"
        "\n"
        "Exit status: 0 success, 1 runtime failure, 2 bad usage or input.\n");
}

static int parse_args(int argc, char **argv, struct options *o)
{
    enum { O_MODEL = 256, O_BATCH, O_PRECISION, O_REPEATS,
           O_WARMUP, O_MINSAMPLE, O_POWER, O_MULT, O_SEED };
    static const struct option longopts[] = {
        {"model", required_argument, NULL, O_MODEL},
        {"batch", required_argument, NULL, O_BATCH},
        {"precision", required_argument, NULL, O_PRECISION},
        CLI_DEVICE_OPTIONS,
        {"repeats", required_argument, NULL, O_REPEATS},
        {"warmup", required_argument, NULL, O_WARMUP},
        {"min-sample-ms", required_argument, NULL, O_MINSAMPLE},
        {"power-watts", required_argument, NULL, O_POWER},
        {"latency-multiplier", required_argument, NULL, O_MULT},
        {"seed", required_argument, NULL, O_SEED},
        CLI_CALIB_OPTIONS,
        CLI_COMMON_OPTIONS,
        CLI_QUIET_OPTION,
        {NULL, 0, NULL, 0},
    };
    static const struct cli_app app = {"edgefit-layerwise", EDGEFIT_VERSION,
                                       usage};
    *o = (struct options){
        .model = DEFAULT_MODEL,
        .batch = 32,
        .precision = MEMEST_FP32,
        .dev = {.device = "host"},
        .repeats = 5,
        .warmup = 2,
        .min_sample_ms = 0.05,
        .latency_multiplier = 1.0,
        .seed = 42,
    };
    cli_calib_opts_init(&o->calib);
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (c) {
        case O_MODEL:
            o->model = optarg;
            break;
        case O_BATCH:
            if (!cli_parse_u64("--batch", optarg, 1, UINT32_MAX, &o->batch)) {
                return CLI_EXIT_USAGE;
            }
            break;
        case O_PRECISION:
            if (memest_precision_parse(optarg, &o->precision) != MEMEST_OK ||
                o->precision == MEMEST_FP64) {
                cli_error("--precision: '%s' is not one of fp32, fp16, bf16, "
                          "int8 (or float32, float16, half, bfloat16); fp64 "
                          "is estimated by edgefit-memfit, not executed",
                          optarg);
                return CLI_EXIT_USAGE;
            }
            break;
        case O_REPEATS:
            if (!cli_parse_u64("--repeats", optarg, 1, 100000, &o->repeats)) {
                return CLI_EXIT_USAGE;
            }
            break;
        case O_WARMUP:
            if (!cli_parse_u64("--warmup", optarg, 0, 100000, &o->warmup)) {
                return CLI_EXIT_USAGE;
            }
            break;
        case O_MINSAMPLE:
            if (!cli_parse_double("--min-sample-ms", optarg, 0.0, 1e4,
                                  &o->min_sample_ms)) {
                return CLI_EXIT_USAGE;
            }
            break;
        case O_POWER:
            if (!cli_parse_positive("--power-watts", optarg, 1e6,
                                    &o->power_watts)) {
                return CLI_EXIT_USAGE;
            }
            o->have_power = 1;
            break;
        case O_MULT:
            if (!cli_parse_double("--latency-multiplier", optarg, 1e-6, 1e6,
                                  &o->latency_multiplier)) {
                return CLI_EXIT_USAGE;
            }
            break;
        case O_SEED:
            if (!cli_parse_u64("--seed", optarg, 0, UINT64_MAX, &o->seed)) {
                return CLI_EXIT_USAGE;
            }
            break;
        default: {
            const int cv = cli_calib_option(c, &o->calib);
            const int dv = cv ? cv : cli_device_option(c, &o->dev);
            if (dv != 0) {
                if (dv < 0) {
                    return CLI_EXIT_USAGE;
                }
                break;
            }
            const int rc = cli_common_option(c, &app, argv, &o->co);
            if (rc != CLI_EXIT_OK) {
                return rc;
            }
            break;
        }
        }
    }
    return cli_no_operands(argc, argv);
}

/* Everything the run computes, before anything is printed or written. */
struct result {
    memest_model *model;
    prof_exec *ex;
    struct memest_layer_estimate *rows;
    size_t nrows;
    struct prof_exec_profile prof;
    struct prof_exec_memory mem;
    struct cli_devices devs;
    struct prof_calibration cal;
    /* host: cache-aware; host_dram: the same without its caches */
    struct prof_device device, host, host_dram;
    int device_is_host;
    struct prof_layer_prediction *pred, *host_pred, *dram_pred;
    struct prof_prediction_total total, host_total, dram_total;
    struct prof_hw_summary summary;
    unsigned roof_level;   /* the memory level the summary's roof is */
    double peak_gmacs;     /* the device's peak for the precision */
    enum prof_bound regime; /* the bound of most of the predicted time */
    double regime_share;    /* that share of the predicted time */
    size_t regime_layers, n_layers;
    char regime_text[200];
    double energy_proxy_j;
    art_table *layers;
    art_table *hw;
};

static void result_free(struct result *r)
{
    art_table_destroy(r->hw);
    art_table_destroy(r->layers);
    free(r->dram_pred);
    free(r->host_pred);
    free(r->pred);
    cli_devices_free(&r->devs);
    prof_exec_profile_finish(&r->prof);
    free(r->rows);
    prof_exec_destroy(r->ex);
    memest_model_destroy(r->model);
}

static int prof_failed(const char *what, int st, const struct prof_diag *d)
{
    if (d && d->message[0]) {
        cli_error("%s: %s", what, d->message);
    } else {
        cli_error("%s: %s", what, prof_strerror(st));
    }
    return st == PROF_E_NOMEM || st == PROF_E_KERNEL ||
                   st == PROF_E_CALLBACK || st == PROF_E_IO
               ? CLI_EXIT_FAILURE
               : CLI_EXIT_USAGE;
}

/* The device named on the command line (among the --devices file's
 * first); "host" waits for calibration. */
static int resolve_device(const struct options *o, struct result *r)
{
    if (o->dev.devices_file &&
        !cli_devices_load(o->dev.devices_file, &r->devs)) {
        return CLI_EXIT_USAGE;
    }
    if (strcmp(o->dev.device, "host") == 0) {
        r->device_is_host = 1;
        return CLI_EXIT_OK;
    }
    if (!cli_device_resolve(o->dev.device,
                            o->dev.devices_file ? &r->devs : NULL,
                            &r->device)) {
        return CLI_EXIT_USAGE;
    }
    return CLI_EXIT_OK;
}

static int run_model(const struct options *o, struct result *r)
{
    struct memest_diag md;
    int st = memest_model_load(o->model, &r->model, &md);
    if (st != MEMEST_OK) {
        char msg[600];
        memest_diag_format(&md, msg, sizeof msg);
        cli_error("%s", msg);
        return st == MEMEST_E_NOMEM ? CLI_EXIT_FAILURE : CLI_EXIT_USAGE;
    }
    r->nrows = memest_estimate_row_count(r->model);
    r->rows = calloc(r->nrows, sizeof *r->rows);
    if (!r->rows) {
        cli_error("out of memory");
        return CLI_EXIT_FAILURE;
    }
    st = memest_estimate_layers(r->model, o->batch, o->precision, r->rows,
                                r->nrows, &r->nrows);
    if (st != MEMEST_OK) {
        cli_error("%s: %s", o->model, memest_strerror(st));
        return st == MEMEST_E_NOMEM ? CLI_EXIT_FAILURE : CLI_EXIT_USAGE;
    }

    struct prof_exec_opts eo;
    prof_exec_opts_init(&eo);
    eo.batch = o->batch;
    eo.precision = o->precision;
    eo.seed = o->seed;
    struct prof_diag d = {0};
    st = prof_exec_create(r->model, &eo, &r->ex, &d);
    if (st != PROF_OK) {
        return prof_failed(o->model, st, &d);
    }
    prof_exec_memory(r->ex, &r->mem);

    /* The input: uniform in [0, 1) like pixel intensities, from the same
     * seed (SplitMix64, as the executor's weights). */
    const size_t nin = prof_exec_input_count(r->ex);
    float *x = malloc(nin * sizeof(float));
    if (!x) {
        cli_error("out of memory");
        return CLI_EXIT_FAILURE;
    }
    uint64_t s = o->seed ^ UINT64_C(0x5DEECE66D);
    for (size_t i = 0; i < nin; i++) {
        uint64_t z = (s += UINT64_C(0x9E3779B97F4A7C15));
        z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
        z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
        z ^= z >> 31;
        x[i] = (float)((double)(z >> 40) * 0x1p-24);
    }
    struct prof_time_opts to;
    prof_time_opts_init(&to);
    to.repeats = (unsigned)o->repeats;
    to.warmup = (unsigned)o->warmup;
    to.latency_multiplier = o->latency_multiplier;
    /* Operators of a few microseconds are timed in groups of back-to-back
     * runs so that the clock's own cost does not dominate them. */
    to.min_sample_ms = o->min_sample_ms;
    st = prof_exec_profile(r->ex, x, nin, &to, &r->prof);
    free(x);
    if (st != PROF_OK) {
        return prof_failed("measuring", st, NULL);
    }
    if (r->prof.count != r->nrows) {
        cli_error("internal error: %zu operators for %zu layers",
                  r->prof.count, r->nrows);
        return CLI_EXIT_FAILURE;
    }
    return CLI_EXIT_OK;
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

static int predict(const struct options *o, struct result *r)
{
    bool cached = false;
    struct cli_calib_opts co = o->calib;
    co.quiet = o->co.quiet;
    int st = cli_host_calibration(&co, &r->cal, &cached);
    if (st == PROF_OK) {
        st = prof_device_host(&r->cal, &r->host);
    }
    if (st != PROF_OK) {
        return prof_failed("calibrating the host", st, NULL);
    }
    r->host_dram = r->host;
    r->host_dram.cache_count = 0;
    if (r->device_is_host) {
        r->device = r->host;
    }
    if (o->have_power) {
        r->device.power_watts = o->power_watts;
        r->host.power_watts = o->power_watts;
        r->host_dram.power_watts = o->power_watts;
    }
    r->pred = calloc(r->prof.count, sizeof *r->pred);
    r->host_pred = calloc(r->prof.count, sizeof *r->host_pred);
    r->dram_pred = calloc(r->prof.count, sizeof *r->dram_pred);
    if (!r->pred || !r->host_pred || !r->dram_pred) {
        cli_error("out of memory");
        return CLI_EXIT_FAILURE;
    }
    if ((st = prof_exec_predict(&r->prof, &r->device, r->pred, &r->total)) !=
            PROF_OK ||
        (st = prof_exec_predict(&r->prof, &r->host, r->host_pred,
                                &r->host_total)) != PROF_OK ||
        (st = prof_exec_predict(&r->prof, &r->host_dram, r->dram_pred,
                                &r->dram_total)) != PROF_OK) {
        return prof_failed("predicting", st, NULL);
    }
    /* The original summary: the model's estimated bytes and MACs over the
     * measured forward latency, against the roof of the memory level that
     * holds the data (a first pass finds the bytes and the achieved rate)
     * and the device's peak for this precision. */
    r->peak_gmacs = prof_device_peak(&r->device, o->precision);
    double roof_gbps = r->device.bandwidth_gbps;
    st = prof_summarize_model(r->model, o->batch, o->precision,
                              r->prof.forward_ms, roof_gbps, r->peak_gmacs,
                              &r->summary);
    if (st == PROF_OK) {
        st = prof_bandwidth_roof(&r->device,
                                 (uint64_t)r->summary.estimated_total_bytes,
                                 r->summary.achieved_bandwidth_gbps,
                                 &r->roof_level, &roof_gbps);
    }
    if (st == PROF_OK) {
        st = prof_summarize_model(r->model, o->batch, o->precision,
                                  r->prof.forward_ms, roof_gbps,
                                  r->peak_gmacs, &r->summary);
    }
    if (st != PROF_OK) {
        return prof_failed("summarising", st, NULL);
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
    r->energy_proxy_j =
        r->device.power_watts > 0.0
            ? r->device.power_watts * r->prof.forward_ms / 1000.0
            : NAN;
    judge_total(&r->total, r->prof.forward_ms);
    judge_total(&r->host_total, r->prof.forward_ms);
    judge_total(&r->dram_total, r->prof.forward_ms);
    return CLI_EXIT_OK;
}

/* "L1".."L3", or "DRAM" for main memory. */
static const char *level_name(unsigned level)
{
    static const char *const names[] = {"DRAM", "L1", "L2", "L3"};
    return level < 4 ? names[level] : "?";
}

/* A real cell, left empty when the value is undefined (NaN). */
static int set_real_opt(art_table *t, size_t row, size_t col, double v)
{
    return isfinite(v) ? art_table_set_real(t, row, col, v) : ART_OK;
}

/* ---- tables ---------------------------------------------------------------- */

struct col {
    const char *name;
    enum art_type type;
};

static int add_columns(art_table *t, const struct col *cols, size_t n)
{
    int st = ART_OK;
    for (size_t i = 0; st == ART_OK && i < n; i++) {
        st = art_table_add_column(t, cols[i].name, cols[i].type);
    }
    return st;
}

static int build_layers_table(struct result *r)
{
    static const struct col cols[] = {
        {"layer", ART_TEXT},
        {"kind", ART_TEXT},
        {"output_shape", ART_TEXT},
        {"output_elements", ART_UINT},
        {"parameter_count", ART_UINT},
        {"parameter_bytes", ART_UINT},
        {"activation_bytes", ART_UINT},
        {"macs", ART_UINT},
        {"latency_ms", ART_REAL},
        {"predicted_ms", ART_REAL},
        {"bound", ART_TEXT},
        {"latency_p90_ms", ART_REAL},
        {"bytes_moved", ART_UINT},
        {"achieved_gmacs", ART_REAL},
        {"achieved_bandwidth_gbps", ART_REAL},
        {"memory_kb", ART_REAL},
        {"predicted_energy_proxy_j", ART_REAL},
        {"host_predicted_ms", ART_REAL},
        {"host_prediction_error", ART_REAL},
        {"host_memory_level", ART_TEXT},
        {"host_dram_predicted_ms", ART_REAL},
        {"host_dram_prediction_error", ART_REAL},
    };
    int st = art_table_create("layers", &r->layers);
    if (st == ART_OK) {
        st = add_columns(r->layers, cols, sizeof cols / sizeof cols[0]);
    }
    for (size_t i = 0; st == ART_OK && i < r->nrows; i++) {
        const struct memest_layer_estimate *e = &r->rows[i];
        const struct prof_exec_op_row *op = &r->prof.ops[i];
        const struct prof_layer_prediction *p = &r->pred[i];
        const struct prof_layer_prediction *h = &r->host_pred[i];
        size_t row = 0;
        size_t c = 0;
        st = art_table_add_row(r->layers, &row);
        if (st == ART_OK) {
            st = art_table_set_text(r->layers, row, c++, e->layer);
        }
        if (st == ART_OK) {
            st = art_table_set_text(r->layers, row, c++,
                                    memest_kind_name(e->kind));
        }
        if (st == ART_OK) {
            st = art_table_set_text(r->layers, row, c++, e->output_shape);
        }
        const uint64_t u[] = {e->output_elements, e->parameter_count,
                              e->parameter_bytes, e->activation_bytes,
                              e->macs};
        for (size_t k = 0; st == ART_OK && k < 5; k++) {
            st = art_table_set_uint(r->layers, row, c++, u[k]);
        }
        /* Staging the input is not a layer: its measured and predicted
         * cells stay empty. */
        if (op->info.kind == MEMEST_KIND_INPUT) {
            continue;
        }
        if (st == ART_OK) {
            st = art_table_set_real(r->layers, row, c++, op->latency_ms);
        }
        if (st == ART_OK) {
            st = art_table_set_real(r->layers, row, c++,
                                    p->pred.predicted_ms);
        }
        if (st == ART_OK) {
            st = art_table_set_text(r->layers, row, c++,
                                    prof_bound_name(p->pred.bound));
        }
        if (st == ART_OK) {
            st = art_table_set_real(r->layers, row, c++, op->stats.p90_ms);
        }
        if (st == ART_OK) {
            st = art_table_set_uint(r->layers, row, c++,
                                    op->info.bytes_moved);
        }
        const double v[] = {op->achieved_gmacs, op->achieved_gbps,
                            op->memory_kb, p->pred.energy_proxy_j,
                            h->pred.predicted_ms, h->relative_error};
        for (size_t k = 0; st == ART_OK && k < 6; k++) {
            st = set_real_opt(r->layers, row, c++, v[k]);
        }
        if (st == ART_OK) {
            st = art_table_set_text(r->layers, row, c++,
                                    level_name(h->pred.memory_level));
        }
        const struct prof_layer_prediction *dp = &r->dram_pred[i];
        if (st == ART_OK) {
            st = set_real_opt(r->layers, row, c++, dp->pred.predicted_ms);
        }
        if (st == ART_OK) {
            st = set_real_opt(r->layers, row, c++, dp->relative_error);
        }
    }
    return st;
}

static int build_hw_table(const struct options *o, struct result *r)
{
    const struct prof_hw_summary *s = &r->summary;
    static const struct col cols[] = {
        /* the original summarize_hardware() keys */
        {"estimated_total_bytes", ART_REAL},
        {"estimated_total_macs", ART_REAL},
        {"achieved_bandwidth_gbps", ART_REAL},
        {"configured_memory_bandwidth_gbps", ART_REAL},
        {"bandwidth_utilization", ART_REAL},
        {"achieved_gmacs", ART_REAL},
        /* the roofline */
        {"peak_gmacs", ART_REAL},
        {"intensity_mac_per_byte", ART_REAL},
        {"knee_mac_per_byte", ART_REAL},
        {"model_bound", ART_TEXT},
        {"reading", ART_TEXT},
        {"compute_utilization", ART_REAL},
        /* the run */
        {"model", ART_TEXT},
        {"batch_size", ART_UINT},
        {"precision", ART_TEXT},
        {"device", ART_TEXT},
        {"latency_ms", ART_REAL},
        {"latency_p90_ms", ART_REAL},
        {"operator_sum_ms", ART_REAL},
        {"framing_ms", ART_REAL},
        {"predicted_ms", ART_REAL},
        {"prediction_error", ART_REAL},
        {"regime", ART_TEXT},
        {"regime_layers", ART_UINT},
        {"regime_time_share", ART_REAL},
        {"regime_reading", ART_TEXT},
        {"bandwidth_roof_level", ART_TEXT},
        {"host_predicted_ms", ART_REAL},
        {"host_prediction_error", ART_REAL},
        {"host_mean_abs_layer_error", ART_REAL},
        {"host_dram_predicted_ms", ART_REAL},
        {"host_dram_prediction_error", ART_REAL},
        {"host_dram_mean_abs_layer_error", ART_REAL},
        {"input_staging_ms", ART_REAL},
        {"host_peak_gmacs", ART_REAL},
        {"host_bandwidth_gbps", ART_REAL},
        {"power_watts", ART_REAL},
        {"energy_proxy_j", ART_REAL},
        {"predicted_energy_proxy_j", ART_REAL},
        {"arena_bytes", ART_UINT},
        {"peak_inference_bytes", ART_UINT},
        {"stored_parameter_bytes", ART_UINT},
        {"scratch_bytes", ART_UINT},
        {"latency_multiplier", ART_REAL},
        {"repeats", ART_UINT},
    };
    int st = art_table_create("hardware_summary", &r->hw);
    if (st == ART_OK) {
        st = add_columns(r->hw, cols, sizeof cols / sizeof cols[0]);
    }
    size_t row = 0, c = 0;
    if (st == ART_OK) {
        st = art_table_add_row(r->hw, &row);
    }
    const double a[] = {s->estimated_total_bytes, s->estimated_total_macs,
                        s->achieved_bandwidth_gbps,
                        s->configured_memory_bandwidth_gbps,
                        s->bandwidth_utilization, s->achieved_gmacs,
                        s->peak_gmacs, s->arithmetic_intensity,
                        s->roofline_knee};
    for (size_t k = 0; st == ART_OK && k < 9; k++) {
        st = art_table_set_real(r->hw, row, c++, a[k]);
    }
    if (st == ART_OK) {
        st = art_table_set_text(r->hw, row, c++, prof_bound_name(s->bound));
    }
    if (st == ART_OK) {
        st = art_table_set_text(r->hw, row, c++, s->reading);
    }
    if (st == ART_OK) {
        st = art_table_set_real(r->hw, row, c++, s->compute_utilization);
    }
    if (st == ART_OK) {
        st = art_table_set_text(r->hw, row, c++,
                                memest_model_name(r->model));
    }
    if (st == ART_OK) {
        st = art_table_set_uint(r->hw, row, c++, o->batch);
    }
    if (st == ART_OK) {
        st = art_table_set_text(r->hw, row, c++,
                                memest_precision_name(o->precision));
    }
    if (st == ART_OK) {
        st = art_table_set_text(r->hw, row, c++, r->device.name);
    }
    const double b[] = {r->prof.forward_ms, r->prof.forward.p90_ms,
                        r->prof.operator_sum_ms, r->prof.framing_ms,
                        r->total.predicted_ms, r->total.relative_error};
    for (size_t k = 0; st == ART_OK && k < 6; k++) {
        st = set_real_opt(r->hw, row, c++, b[k]);
    }
    if (st == ART_OK) {
        st = art_table_set_text(r->hw, row, c++, prof_bound_name(r->regime));
    }
    if (st == ART_OK) {
        st = art_table_set_uint(r->hw, row, c++, r->regime_layers);
    }
    if (st == ART_OK) {
        st = set_real_opt(r->hw, row, c++, r->regime_share);
    }
    if (st == ART_OK) {
        st = art_table_set_text(r->hw, row, c++, r->regime_text);
    }
    if (st == ART_OK) {
        st = art_table_set_text(r->hw, row, c++, level_name(r->roof_level));
    }
    const double d[] = {r->host_total.predicted_ms,
                        r->host_total.relative_error,
                        r->host_total.mean_abs_relative_error,
                        r->dram_total.predicted_ms,
                        r->dram_total.relative_error,
                        r->dram_total.mean_abs_relative_error,
                        r->prof.ops[0].latency_ms,
                        r->host.peak_gmacs, r->host.bandwidth_gbps,
                        r->device.power_watts > 0.0 ? r->device.power_watts
                                                    : NAN,
                        r->energy_proxy_j, r->total.energy_proxy_j};
    for (size_t k = 0; st == ART_OK && k < 12; k++) {
        st = set_real_opt(r->hw, row, c++, d[k]);
    }
    const uint64_t m[] = {r->mem.arena_bytes, r->mem.peak_inference_bytes,
                          r->mem.parameter_bytes, r->mem.scratch_bytes};
    for (size_t k = 0; st == ART_OK && k < 4; k++) {
        st = art_table_set_uint(r->hw, row, c++, m[k]);
    }
    if (st == ART_OK) {
        st = art_table_set_real(r->hw, row, c++, o->latency_multiplier);
    }
    if (st == ART_OK) {
        st = art_table_set_uint(r->hw, row, c++, o->repeats);
    }
    return st;
}

/* ---- output ---------------------------------------------------------------- */

static void print_summary(const struct options *o, const struct result *r)
{
    const struct prof_hw_summary *s = &r->summary;
    printf("\nmodel %s, %s, batch %" PRIu64 ", device %s\n",
           memest_model_name(r->model), memest_precision_name(o->precision),
           o->batch, r->device.name);
    printf("  measured forward    %.4f ms (p90 %.4f); operators alone "
           "%.4f ms; framing %+.4f ms\n",
           r->prof.forward_ms, r->prof.forward.p90_ms,
           r->prof.operator_sum_ms, r->prof.framing_ms);
    printf("  input staging       %.4f ms (a copy into the arena, not a "
           "layer: not predicted)\n",
           r->prof.ops[0].latency_ms);
    printf("  predicted on %-6s %.4f ms (%+.1f%% vs measured); ",
           r->device.name, r->total.predicted_ms,
           100.0 * r->total.relative_error);
    if (r->device.power_watts > 0.0) {
        printf("energy proxy %.6g J at %g W\n", r->total.energy_proxy_j,
               r->device.power_watts);
    } else {
        printf("energy: power unknown: give --power-watts\n");
    }
    printf("  host, cache-aware   %.4f ms, error %+.1f%% in total, mean "
           "|error| over %zu layers %.1f%%\n",
           r->host_total.predicted_ms, 100.0 * r->host_total.relative_error,
           r->host_total.compared,
           100.0 * r->host_total.mean_abs_relative_error);
    printf("  host, DRAM only     %.4f ms, error %+.1f%% in total, mean "
           "|error| over %zu layers %.1f%%\n",
           r->dram_total.predicted_ms, 100.0 * r->dram_total.relative_error,
           r->dram_total.compared,
           100.0 * r->dram_total.mean_abs_relative_error);
    printf("  host calibration    peak fp32 %.1f GMAC/s (%s; FMA loop %.1f, "
           "sgemm %.1f), 16-bit %.1f, int8 %.1f; best of %u trials; triad",
           r->host.peak_gmacs, r->cal.peak.path, r->cal.fma.gmacs,
           r->cal.sgemm.gmacs, r->cal.f16.gmacs, r->cal.int8.gmacs,
           r->cal.trials);
    for (unsigned i = 0; i < r->cal.level_count; i++) {
        const struct prof_mem_level *l = &r->cal.levels[i];
        printf(" %s %.1f GB/s%s", level_name(l->level), l->triad.gbps,
               i + 1 < r->cal.level_count ? "," : "\n");
    }
    printf("  bandwidth           %.4g GB/s achieved against the %s roof of "
           "%.4g GB/s (%.4g MB of data; utilisation %.3f%s)\n",
           s->achieved_bandwidth_gbps, level_name(r->roof_level),
           s->configured_memory_bandwidth_gbps,
           s->estimated_total_bytes / 1048576.0, s->bandwidth_utilization,
           s->above_roof ? ", capped: faster than every level calibrated"
                         : "");
    printf("  compute             %.4g GMAC/s achieved of the %s peak %.4g "
           "(utilisation %.3f)\n",
           s->achieved_gmacs, memest_precision_name(o->precision),
           s->peak_gmacs, s->compute_utilization);
    printf("  regime              %s\n", r->regime_text);
    printf("  roofline            intensity %.4g MAC/B, knee %.4g MAC/B "
           "(the whole model, against the %s roof)\n",
           s->arithmetic_intensity, s->roofline_knee,
           level_name(r->roof_level));
    printf("  memory              arena %" PRIu64 " B = plan (peak %" PRIu64
           " B incl. parameters); stored parameters %" PRIu64
           " B; scratch %" PRIu64 " B\n",
           r->mem.arena_bytes, r->mem.peak_inference_bytes,
           r->mem.parameter_bytes, r->mem.scratch_bytes);
}

static int print_stdout(const struct options *o, const struct result *r)
{
    int st = ART_OK;
    switch (o->co.format) {
    case CLI_FORMAT_TABLE:
        st = art_table_print(r->layers, stdout, 4);
        if (st == ART_OK) {
            print_summary(o, r);
        }
        break;
    case CLI_FORMAT_CSV:
        st = art_table_write_csv(r->layers, stdout);
        break;
    case CLI_FORMAT_JSON: {
        art_doc *d = NULL;
        st = art_doc_create(&d);
        if (st == ART_OK) {
            st = art_doc_set_table(d, "layers", r->layers);
        }
        if (st == ART_OK) {
            st = art_doc_set_table(d, "hardware_summary", r->hw);
        }
        if (st == ART_OK) {
            st = art_doc_write(d, stdout);
        }
        art_doc_destroy(d);
        break;
    }
    }
    if (st == ART_OK && fflush(stdout) != 0) {
        st = ART_E_IO;
    }
    if (st != ART_OK) {
        cli_error("stdout: %s", art_strerror(st));
        return CLI_EXIT_FAILURE;
    }
    return CLI_EXIT_OK;
}

/* Both files appear together or not at all. */
static int write_artifacts(const char *dir, const struct result *r)
{
    art_bundle *b = NULL;
    int st = art_bundle_create(dir, &b);
    if (st == ART_OK) {
        st = art_bundle_add_csv(b, "layerwise_breakdown.csv", r->layers);
    }
    if (st == ART_OK) {
        st = art_bundle_add_csv(b, "hardware_summary.csv", r->hw);
    }
    if (st != ART_OK) {
        art_bundle_destroy(b);
        cli_error("--out %s: %s", dir, art_strerror(st));
        return CLI_EXIT_FAILURE;
    }
    return cli_out_commit(b);
}

int main(int argc, char **argv)
{
    cli_set_program("edgefit-layerwise");
    struct options o;
    int rc = parse_args(argc, argv, &o);
    if (rc == CLI_EXIT_OK) {
        rc = cli_out_check(o.co.out_dir);
    }
    if (rc != CLI_EXIT_OK) {
        return rc;
    }
    struct result r;
    memset(&r, 0, sizeof r);
    /* Bad input is rejected before anything is measured or written. */
    rc = resolve_device(&o, &r);
    if (rc == CLI_EXIT_OK && o.dev.list) {
        cli_devices_list(stdout, o.dev.devices_file ? &r.devs : NULL);
        result_free(&r);
        return fflush(stdout) == 0 ? CLI_EXIT_OK : CLI_EXIT_FAILURE;
    }
    if (rc == CLI_EXIT_OK) {
        rc = run_model(&o, &r);
    }
    if (rc == CLI_EXIT_OK) {
        rc = predict(&o, &r);
    }
    if (rc == CLI_EXIT_OK &&
        (build_layers_table(&r) != ART_OK ||
         build_hw_table(&o, &r) != ART_OK)) {
        cli_error("building the output: out of memory");
        rc = CLI_EXIT_FAILURE;
    }
    if (rc == CLI_EXIT_OK) {
        rc = print_stdout(&o, &r);
    }
    if (rc == CLI_EXIT_OK && o.co.out_dir) {
        rc = write_artifacts(o.co.out_dir, &r);
    }
    result_free(&r);
    return rc;
}
