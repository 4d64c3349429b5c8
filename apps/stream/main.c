/* edgefit-stream: run the four operators of a streaming model on real data,
 * time each, and say what bounds it on this host and how much of the
 * stream interval it leaves (the original streaming profile, measured). */
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "calib.h"
#include "cli.h"
#include "devices.h"
#include "table.h"
#include "edgefit/artifacts.h"
#include "edgefit/profile.h"

struct options {
    struct prof_stream_opts stream;
    struct cli_calib_opts calib;
    struct cli_common co;
    struct cli_device_opts dev;
    int have_power;
    double power_watts;
};

static void usage(FILE *f)
{
    fprintf(f,
        "usage: edgefit-stream [options]\n"
        "\n"
        "Run a streaming model's operators (input_normalization,\n"
        "linear_projection, activation, decision_head) on real data, time\n"
        "each, and report memory, bandwidth, the share of the stream interval\n"
        "used and what bounds it on this host.\n"
        "\n"
        "  --features N           features per sample (default 64)\n"
        "  --batch N              samples per stream step (default 32)\n"
        "  --hidden N             width of linear_projection (default 64)\n"
        "  --outputs N            decision_head outputs (default 1)\n"
        "  --stream-interval-ms X time between batches, ms (default 10)\n"
        "  --activation A         relu|gelu (default relu)\n"
        "  --repeats N            timed runs per operator, median kept\n"
        "                         (default 50)\n"
        "  --warmup N             untimed runs first (default 3)\n"
        "  --latency-multiplier X scale measured latencies (default 1)\n"
        "  --data D               auto|fashion-mnist|synthetic (default auto:\n"
        "                         Fashion-MNIST when features <= 784 and the\n"
        "                         files are readable, else a synthetic\n"
        "                         stream)\n"
        "  --data-dir DIR         Fashion-MNIST folder (default\n"
        "                         " PROF_FASHION_MNIST_DIR ")\n"
        "  --seed N               weights and synthetic data (default 42)\n"
        "  --threads N            run the dense layers of at least 2^20 MACs\n"
        "                         on N threads (default 1); predictions count\n"
        "                         min(N, cores) cores for them\n"
        "  --triad-mib X          size of the bandwidth calibration's three\n"
        "                         arrays together, MiB (default 2 x L3)\n"
        "  --recalibrate          measure the host again instead of reading\n"
        "                         the calibration cache\n"
        "  --device D             also predict each operator on D: a\n"
        "                         --list-devices board (rpi4, ...), host, a device of\n"
        "                         --devices, or\n"
        "                         name=..,bandwidth_gbps=..,peak_gmacs=..\n"
        "                         [,power_watts=..,memory_mb=..]\n"
        "  --devices FILE         devices of your own: a CSV file with the\n"
        "                         catalogue's columns name, bandwidth_gbps,\n"
        "                         peak_gmacs[, power_watts, memory_mb]\n"
        "  --list-devices         print the catalogue with the source of\n"
        "                         each figure (and the --devices file), exit\n"
        "  --power-watts W        the device's power for the energy proxy\n"
        "                         (default its own; unknown for host)\n"
        "  --format F             table|csv|json on stdout (default table)\n"
        "  --out DIR              write operator_profile.csv,\n"
        "                         hardware_totals.csv, hardware_profile.json\n"
        "                         (replaced whole: a kill or a full disk leaves the old\n"
        "                         folder or the new one; '.', a mount point and a\n"
        "                         folder holding a folder are refused)\n"
        "  --strict               exit 3 when a batch takes longer than the\n"
        "                         interval\n"
        "  --quiet                no progress messages on stderr (they appear\n"
        "                         only on a terminal anyway)\n"
        "  -h, --help, --version   this text; the version, the kernel paths\n"
        "                           built and selected, the dependencies\n"
        "\n"
        "The host prediction is cache-aware (each operator at the bandwidth\n"
        "of the smallest cache that holds its bytes); host_dram_* is the\n"
        "plain roofline on main memory. Energy is left empty when the\n"
        "device's power is unknown.\n"
        "\n"
        "Exit status: 0 success, 1 runtime failure, 2 bad usage or input,\n"
        "3 constraint not met with --strict.\n");
}

/* Sizes are capped so that every tensor stays far inside memory; the
 * library checks the products again. */
#define SIZE_MAX_OPT UINT64_C(1048576)

static int parse_args(int argc, char **argv, struct options *o)
{
    enum { O_FEATURES = 256, O_BATCH, O_HIDDEN, O_OUTPUTS, O_INTERVAL,
           O_ACT, O_REPEATS, O_WARMUP, O_MULT, O_DATA, O_DATA_DIR, O_SEED,
           O_TRIAD, O_POWER, O_THREADS };
    static const struct option longopts[] = {
        {"features", required_argument, NULL, O_FEATURES},
        {"batch", required_argument, NULL, O_BATCH},
        {"hidden", required_argument, NULL, O_HIDDEN},
        {"outputs", required_argument, NULL, O_OUTPUTS},
        {"stream-interval-ms", required_argument, NULL, O_INTERVAL},
        {"activation", required_argument, NULL, O_ACT},
        {"repeats", required_argument, NULL, O_REPEATS},
        {"warmup", required_argument, NULL, O_WARMUP},
        {"latency-multiplier", required_argument, NULL, O_MULT},
        {"data", required_argument, NULL, O_DATA},
        {"data-dir", required_argument, NULL, O_DATA_DIR},
        {"seed", required_argument, NULL, O_SEED},
        {"threads", required_argument, NULL, O_THREADS},
        CLI_CALIB_OPTIONS,
        CLI_DEVICE_OPTIONS,
        {"power-watts", required_argument, NULL, O_POWER},
        CLI_COMMON_OPTIONS,
        CLI_STRICT_OPTION,
        CLI_QUIET_OPTION,
        {NULL, 0, NULL, 0},
    };
    static const struct cli_app app = {"edgefit-stream", EDGEFIT_VERSION,
                                       usage,
                                       cli_version_details};
    memset(o, 0, sizeof(*o));
    prof_stream_opts_init(&o->stream);
    cli_calib_opts_init(&o->calib);
    struct prof_stream_opts *s = &o->stream;
    uint64_t v = 0;
    opterr = 0;
    if (cli_refuse_repeats(argc, argv, longopts, NULL) != CLI_EXIT_OK) {
        return CLI_EXIT_USAGE;
    }
    int c;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (c) {
        case O_FEATURES:
            if (!cli_parse_u64("--features", optarg, 1, SIZE_MAX_OPT,
                               &s->feature_count)) {
                return CLI_EXIT_USAGE;
            }
            break;
        case O_BATCH:
            if (!cli_parse_u64("--batch", optarg, 1, SIZE_MAX_OPT,
                               &s->batch)) {
                return CLI_EXIT_USAGE;
            }
            break;
        case O_HIDDEN:
            if (!cli_parse_u64("--hidden", optarg, 1, SIZE_MAX_OPT,
                               &s->hidden)) {
                return CLI_EXIT_USAGE;
            }
            break;
        case O_OUTPUTS:
            if (!cli_parse_u64("--outputs", optarg, 1, SIZE_MAX_OPT,
                               &s->outputs)) {
                return CLI_EXIT_USAGE;
            }
            break;
        case O_INTERVAL:
            if (!cli_parse_double("--stream-interval-ms", optarg, 1e-9, 1e12,
                                  &s->stream_interval_ms)) {
                return CLI_EXIT_USAGE;
            }
            break;
        case O_ACT:
            if (strcmp(optarg, "relu") == 0) {
                s->activation = PROF_STREAM_RELU;
            } else if (strcmp(optarg, "gelu") == 0) {
                s->activation = PROF_STREAM_GELU;
            } else {
                cli_error("--activation: '%s' is not relu or gelu", optarg);
                return CLI_EXIT_USAGE;
            }
            break;
        case O_REPEATS:
            if (!cli_parse_u64("--repeats", optarg, 1, 1000000, &v)) {
                return CLI_EXIT_USAGE;
            }
            s->timing.repeats = (unsigned)v;
            break;
        case O_WARMUP:
            if (!cli_parse_u64("--warmup", optarg, 0, 1000000, &v)) {
                return CLI_EXIT_USAGE;
            }
            s->timing.warmup = (unsigned)v;
            break;
        case O_MULT:
            if (!cli_parse_double("--latency-multiplier", optarg, 1e-6, 1e6,
                                  &s->timing.latency_multiplier)) {
                return CLI_EXIT_USAGE;
            }
            break;
        case O_DATA:
            if (strcmp(optarg, "auto") == 0) {
                s->data = PROF_DATA_AUTO;
            } else if (strcmp(optarg, "fashion-mnist") == 0) {
                s->data = PROF_DATA_FASHION_MNIST;
            } else if (strcmp(optarg, "synthetic") == 0) {
                s->data = PROF_DATA_SYNTHETIC;
            } else {
                cli_error("--data: '%s' is not auto, fashion-mnist or "
                          "synthetic", optarg);
                return CLI_EXIT_USAGE;
            }
            break;
        case O_DATA_DIR:
            if (!*optarg) {
                cli_error("--data-dir: the folder name is empty");
                return CLI_EXIT_USAGE;
            }
            s->data_dir = optarg;
            break;
        case O_SEED:
            if (!cli_parse_u64("--seed", optarg, 0, UINT64_MAX, &s->seed)) {
                return CLI_EXIT_USAGE;
            }
            break;
        case O_THREADS:
            if (!cli_parse_u64("--threads", optarg, 1, 64, &v)) {
                return CLI_EXIT_USAGE;
            }
            s->threads = (unsigned)v;
            break;
        case O_POWER:
            if (!cli_parse_positive("--power-watts", optarg, 1e6,
                                    &o->power_watts)) {
                return CLI_EXIT_USAGE;
            }
            o->have_power = 1;
            break;
        default: {
            const int rc = cli_shared_option(c, &o->calib, &o->dev, &app, argv,
                                             &o->co);
            if (rc != CLI_EXIT_OK) {
                return rc;
            }
            break;
        }
        }
    }
    return cli_no_operands(argc, argv);
}

struct result {
    struct cli_devices devs;
    /* the device of --device (resolved before anything is measured; the
     * host waits for calibration) */
    int have_device, device_is_host;
    struct prof_calibration cal;
    struct prof_stream_profile p;
    /* the roofline of the host from its own calibration against what was
     * measured (cache-aware, and on main memory alone), and of --device:
     * row 0 is the executor's input staging, rows 1-4 the operators */
    struct prof_exec_predictions pr;
    struct prof_device device; /* --device, resolved before the run */
    char note[PROF_SENTENCE_MAX];
    art_table *ops;
    art_table *ops_view; /* the terminal's */
    art_table *totals;
    art_doc *doc;
};

static void result_free(struct result *r)
{
    art_doc_destroy(r->doc);
    art_table_destroy(r->totals);
    art_table_destroy(r->ops_view);
    art_table_destroy(r->ops);
    prof_exec_predictions_finish(&r->pr);
    cli_devices_free(&r->devs);
}

static int art_failed(const char *what, int st)
{
    cli_error("%s: %s", what, art_strerror(st));
    return CLI_EXIT_FAILURE;
}

/* "L1".."L3", or "DRAM" for main memory. */
static const char *level_name(unsigned level)
{
    static const char *const names[] = {"DRAM", "L1", "L2", "L3"};
    return level < 4 ? names[level] : "?";
}

/* The operator table: one column list of {name, type, getter} over the
 * result, the original streaming profile's columns first, then what the
 * measurement adds; the device's columns when --device is given. */
#define RES(ctx) ((const struct result *)(ctx))
#define OP(ctx, i) (&RES(ctx)->p.ops[(i)])

static bool real_cell(double x, union cli_value *v)
{
    v->r = x;
    return isfinite(x);
}

static bool g_operator(const void *c, size_t i, union cli_value *v)
{
    v->s = OP(c, i)->operator_name;
    return true;
}

static bool g_latency(const void *c, size_t i, union cli_value *v)
{
    return real_cell(OP(c, i)->latency_ms, v);
}

static bool g_memory_kb(const void *c, size_t i, union cli_value *v)
{
    return real_cell(OP(c, i)->memory_kb, v);
}

static bool g_min(const void *c, size_t i, union cli_value *v)
{
    return real_cell(OP(c, i)->stats.min_ms, v);
}

static bool g_p90(const void *c, size_t i, union cli_value *v)
{
    return real_cell(OP(c, i)->stats.p90_ms, v);
}

static bool g_max(const void *c, size_t i, union cli_value *v)
{
    return real_cell(OP(c, i)->stats.max_ms, v);
}

static bool g_mad(const void *c, size_t i, union cli_value *v)
{
    return real_cell(OP(c, i)->stats.mad_ms, v);
}

static bool g_bytes(const void *c, size_t i, union cli_value *v)
{
    v->u = OP(c, i)->bytes_moved;
    return true;
}

static bool g_macs(const void *c, size_t i, union cli_value *v)
{
    v->u = OP(c, i)->macs;
    return true;
}

static bool g_intensity(const void *c, size_t i, union cli_value *v)
{
    return real_cell(OP(c, i)->intensity_mac_per_byte, v);
}

static bool g_bound(const void *c, size_t i, union cli_value *v)
{
    v->s = prof_bound_name(OP(c, i)->bound);
    return true;
}

static bool g_fp16(const void *c, size_t i, union cli_value *v)
{
    return real_cell(OP(c, i)->fp16_latency_ms, v);
}

static bool g_int8(const void *c, size_t i, union cli_value *v)
{
    return real_cell(OP(c, i)->int8_latency_ms, v);
}

static bool g_threads(const void *c, size_t i, union cli_value *v)
{
    v->u = OP(c, i)->threads;
    return true;
}

/* Operator i is row i + 1 of the predictions (row 0 stages the input). */
#define PRED(ctx, which, i) (&RES(ctx)->pr.which[(i) + 1])

static bool g_host_pred(const void *c, size_t i, union cli_value *v)
{
    return real_cell(PRED(c, host_pred, i)->pred.predicted_ms, v);
}

static bool g_host_err(const void *c, size_t i, union cli_value *v)
{
    return real_cell(PRED(c, host_pred, i)->relative_error, v);
}

static bool g_host_level(const void *c, size_t i, union cli_value *v)
{
    v->s = level_name(PRED(c, host_pred, i)->pred.memory_level);
    return true;
}

static bool g_dram_pred(const void *c, size_t i, union cli_value *v)
{
    return real_cell(PRED(c, dram_pred, i)->pred.predicted_ms, v);
}

static bool g_dram_err(const void *c, size_t i, union cli_value *v)
{
    return real_cell(PRED(c, dram_pred, i)->relative_error, v);
}

static bool g_dev_pred(const void *c, size_t i, union cli_value *v)
{
    return real_cell(PRED(c, device_pred, i)->pred.predicted_ms, v);
}

static bool g_dev_bound(const void *c, size_t i, union cli_value *v)
{
    v->s = prof_bound_name(PRED(c, device_pred, i)->pred.bound);
    return true;
}

static bool g_dev_energy(const void *c, size_t i, union cli_value *v)
{
    return real_cell(PRED(c, device_pred, i)->pred.energy_proxy_j, v);
}

static const struct cli_column op_cols[] = {
    {"operator", ART_TEXT, g_operator, CLI_COL_BRIEF},
    {"latency_ms", ART_REAL, g_latency, CLI_COL_BRIEF},
    {"memory_kb", ART_REAL, g_memory_kb, CLI_COL_BRIEF},
    {"latency_min_ms", ART_REAL, g_min, CLI_COL_ALL},
    {"latency_p90_ms", ART_REAL, g_p90, CLI_COL_ALL},
    {"latency_max_ms", ART_REAL, g_max, CLI_COL_ALL},
    {"latency_mad_ms", ART_REAL, g_mad, CLI_COL_ALL},
    {"bytes_moved", ART_UINT, g_bytes, CLI_COL_ALL},
    {"macs", ART_UINT, g_macs, CLI_COL_ALL},
    {"intensity_mac_per_byte", ART_REAL, g_intensity, CLI_COL_ALL},
    {"bound", ART_TEXT, g_bound, CLI_COL_BRIEF},
    {"fp16_latency_ms", ART_REAL, g_fp16, CLI_COL_BRIEF},
    {"int8_dynamic_latency_ms", ART_REAL, g_int8, CLI_COL_BRIEF},
    {"threads", ART_UINT, g_threads, CLI_COL_ALL},
    {"host_predicted_ms", ART_REAL, g_host_pred, CLI_COL_ALL},
    {"host_prediction_error", ART_REAL, g_host_err, CLI_COL_BRIEF},
    {"host_memory_level", ART_TEXT, g_host_level, CLI_COL_ALL},
    {"host_dram_predicted_ms", ART_REAL, g_dram_pred, CLI_COL_ALL},
    {"host_dram_prediction_error", ART_REAL, g_dram_err, CLI_COL_ALL},
};

static const struct cli_column op_device_cols[] = {
    {"device_predicted_ms", ART_REAL, g_dev_pred, CLI_COL_ALL},
    {"device_bound", ART_TEXT, g_dev_bound, CLI_COL_ALL},
    {"device_energy_proxy_j", ART_REAL, g_dev_energy, CLI_COL_ALL},
};

static int build_ops_table(struct result *r)
{
    const struct cli_column_set sets[] = {
        {op_cols, sizeof op_cols / sizeof op_cols[0], r},
        {op_device_cols, sizeof op_device_cols / sizeof op_device_cols[0],
         r},
    };
    const size_t nsets = r->device.name[0] != '\0' ? 2 : 1;
    int st = cli_table_build("operator_profile", sets, nsets,
                             PROF_STREAM_OPERATORS, CLI_COL_ALL, &r->ops);
    if (st == ART_OK) {
        st = cli_table_build("operator_profile", sets, nsets,
                             PROF_STREAM_OPERATORS, CLI_COL_BRIEF,
                             &r->ops_view);
    }
    return st;
}

/* This machine's measured latency over its own cache-aware roofline: how
 * far a roofline bound is from a real run, the nearest measured hint of
 * the device's until its model is calibrated. */
static double host_overrun(const struct result *r)
{
    return r->pr.host_total.predicted_ms > 0.0
               ? r->p.latency_ms / r->pr.host_total.predicted_ms
               : NAN;
}

static int build_totals_table(struct result *r)
{
    const struct prof_stream_profile *p = &r->p;
    const int with_dev = r->device.name[0] != '\0';
    const struct cli_field f[] = {
        CLI_REAL("latency_ms", p->latency_ms),
        CLI_REAL("memory_kb", p->memory_kb),
        CLI_REAL("estimated_bandwidth_mb_s", p->estimated_bandwidth_mb_s),
        CLI_REAL("stream_utilization", p->stream_utilization),
        CLI_REAL("latency_over_interval", p->latency_over_interval),
        CLI_REAL("stream_interval_ms", p->stream_interval_ms),
        CLI_UINT("feature_count", p->feature_count),
        CLI_UINT("batch_size", p->batch),
        CLI_UINT("bytes_moved", p->bytes_moved),
        CLI_UINT("threads", p->threads),
        CLI_REAL("fp32_memory_kb", p->fp32_memory_kb),
        CLI_REAL("fp16_memory_kb", p->fp16_memory_kb),
        CLI_REAL("int8_dynamic_memory_kb", p->int8_memory_kb),
        CLI_REAL("fp32_latency_ms", p->fp32_latency_ms),
        CLI_REAL("fp16_latency_ms", p->fp16_latency_ms),
        CLI_REAL("int8_dynamic_latency_ms", p->int8_latency_ms),
        CLI_REAL("host_peak_gmacs", p->host_peak_gmacs),
        CLI_REAL("host_bandwidth_gbps", p->host_bandwidth_gbps),
        CLI_REAL("host_knee_mac_per_byte", p->host_knee_mac_per_byte),
        CLI_REAL("host_predicted_ms", r->pr.host_total.predicted_ms),
        CLI_REAL("host_prediction_error", r->pr.host_total.relative_error),
        CLI_REAL("host_dram_predicted_ms", r->pr.dram_total.predicted_ms),
        CLI_REAL("host_dram_prediction_error", r->pr.dram_total.relative_error),
        /* the device's, when --device is given */
        CLI_TEXT("device", r->device.name),
        CLI_REAL("device_predicted_ms", r->pr.device_total.predicted_ms),
        CLI_REAL("device_stream_utilization",
                 fmin(1.0, r->pr.device_total.predicted_ms / p->stream_interval_ms)),
        CLI_REAL("device_latency_over_interval",
                 r->pr.device_total.predicted_ms / p->stream_interval_ms),
        CLI_REAL("device_energy_proxy_j", r->pr.device_total.energy_proxy_j),
        CLI_REAL("host_roofline_overrun", host_overrun(r)),
        CLI_REAL("device_latency_realistic_ms",
                 r->pr.device_total.predicted_ms * host_overrun(r)),
    };
    const size_t n = sizeof f / sizeof f[0] - (with_dev ? 0 : 7);
    return cli_record_build("totals", f, n, &r->totals);
}

/* The original profile's note warned that latency effects of lower precision depend on
 * the deployment; here it states what this host measured. */
static void write_note(struct result *r)
{
    const struct prof_stream_profile *p = &r->p;
    snprintf(r->note, sizeof(r->note),
             "memory scales with bytes per element (fp16 %.1f KiB, int8-dynamic "
             "%.1f KiB of %.1f KiB); latency does not: on this host fp16 "
             "storage took %.4f ms (%.2fx fp32) and int8-dynamic %.4f ms "
             "(%.2fx), "
             "conversions and quantisation included, and another device's "
             "kernels will differ; decision scores moved by at most %.2g "
             "(fp16) and %.2g (int8-dynamic: each tensor quantised with its own "
             "range per batch)",
             p->fp16_memory_kb, p->int8_memory_kb, p->fp32_memory_kb,
             p->fp16_latency_ms, p->fp16_latency_ms / p->fp32_latency_ms,
             p->int8_latency_ms, p->int8_latency_ms / p->fp32_latency_ms,
             p->fp16_max_abs_diff, p->int8_max_abs_diff);
}

#define DOC_SET(call)                                                        \
    do {                                                                     \
        if (st == ART_OK) {                                                  \
            st = (call);                                                     \
        }                                                                    \
    } while (0)

static int build_doc(const struct options *o, struct result *r)
{
    const struct prof_stream_profile *p = &r->p;
    art_doc *d = NULL, *totals = NULL, *prec = NULL, *edge = NULL,
            *config = NULL, *host = NULL, *dev = NULL;
    int st = art_doc_create(&d);
    r->doc = d;
    DOC_SET(art_doc_create(&totals));
    DOC_SET(art_doc_create(&prec));
    DOC_SET(art_doc_create(&edge));
    DOC_SET(art_doc_create(&config));
    DOC_SET(art_doc_create(&host));
    DOC_SET(art_doc_create(&dev));

    DOC_SET(art_doc_set_real(totals, "latency_ms", p->latency_ms));
    DOC_SET(art_doc_set_real(totals, "memory_kb", p->memory_kb));
    DOC_SET(art_doc_set_real(totals, "estimated_bandwidth_mb_s",
                             p->estimated_bandwidth_mb_s));
    DOC_SET(art_doc_set_real(totals, "stream_utilization",
                             p->stream_utilization));
    DOC_SET(art_doc_set_real(totals, "latency_over_interval",
                             p->latency_over_interval));
    DOC_SET(art_doc_set_uint(totals, "bytes_moved", p->bytes_moved));

    DOC_SET(art_doc_set_real(prec, "fp32_memory_kb", p->fp32_memory_kb));
    DOC_SET(art_doc_set_real(prec, "fp16_memory_kb", p->fp16_memory_kb));
    DOC_SET(art_doc_set_real(prec, "int8_dynamic_memory_kb", p->int8_memory_kb));
    DOC_SET(art_doc_set_real(prec, "fp32_latency_ms", p->fp32_latency_ms));
    DOC_SET(art_doc_set_real(prec, "fp16_latency_ms", p->fp16_latency_ms));
    DOC_SET(art_doc_set_real(prec, "int8_dynamic_latency_ms", p->int8_latency_ms));
    DOC_SET(art_doc_set_real(prec, "fp16_max_abs_diff",
                             p->fp16_max_abs_diff));
    DOC_SET(art_doc_set_real(prec, "int8_dynamic_max_abs_diff",
                             p->int8_max_abs_diff));
    DOC_SET(art_doc_set_text(prec, "note", r->note));

    DOC_SET(art_doc_set_text(edge, "cache_sensitivity",
                             p->cache_sensitivity));
    DOC_SET(art_doc_set_text(edge, "bottleneck", p->bottleneck));
    DOC_SET(art_doc_set_text(edge, "headroom", p->headroom));

    DOC_SET(art_doc_set_uint(config, "feature_count", p->feature_count));
    DOC_SET(art_doc_set_uint(config, "batch_size", p->batch));
    DOC_SET(art_doc_set_uint(config, "hidden", p->hidden));
    DOC_SET(art_doc_set_uint(config, "outputs", p->outputs));
    DOC_SET(art_doc_set_real(config, "stream_interval_ms",
                             p->stream_interval_ms));
    DOC_SET(art_doc_set_text(config, "activation", p->activation));
    DOC_SET(art_doc_set_text(config, "data_source", p->data_source));
    DOC_SET(art_doc_set_uint(config, "seed", o->stream.seed));
    DOC_SET(art_doc_set_uint(config, "threads", p->threads));
    DOC_SET(art_doc_set_uint(config, "warmup", o->stream.timing.warmup));
    DOC_SET(art_doc_set_uint(config, "repeats", o->stream.timing.repeats));
    DOC_SET(art_doc_set_real(config, "latency_multiplier",
                             o->stream.timing.latency_multiplier));

    DOC_SET(art_doc_set_real(host, "peak_gmacs", r->cal.peak.gmacs));
    DOC_SET(art_doc_set_text(host, "peak_path", r->cal.peak.path));
    DOC_SET(art_doc_set_real(host, "triad_gbps", r->cal.triad.gbps));
    DOC_SET(art_doc_set_uint(host, "triad_total_bytes",
                             r->cal.triad.total_bytes));
    DOC_SET(art_doc_set_real(host, "knee_mac_per_byte",
                             r->cal.knee_mac_per_byte));
    DOC_SET(art_doc_set_real(host, "predicted_ms",
                             r->pr.host_total.predicted_ms));
    DOC_SET(art_doc_set_real(host, "measured_ms", r->pr.host_total.measured_ms));
    DOC_SET(art_doc_set_real(host, "prediction_error",
                             r->pr.host_total.relative_error));
    DOC_SET(art_doc_set_real(host, "host_mean_abs_error",
                             r->pr.host_total.mean_abs_relative_error));
    DOC_SET(art_doc_set_real(host, "host_dram_predicted_ms",
                             r->pr.dram_total.predicted_ms));
    DOC_SET(art_doc_set_real(host, "host_dram_prediction_error",
                             r->pr.dram_total.relative_error));
    DOC_SET(art_doc_set_real(host, "host_dram_mean_abs_error",
                             r->pr.dram_total.mean_abs_relative_error));
    art_table *levels = NULL;
    DOC_SET(art_table_create("memory_levels", &levels));
    DOC_SET(art_table_add_column(levels, "level", ART_TEXT));
    DOC_SET(art_table_add_column(levels, "capacity_bytes", ART_UINT));
    DOC_SET(art_table_add_column(levels, "triad_total_bytes", ART_UINT));
    DOC_SET(art_table_add_column(levels, "triad_gbps", ART_REAL));
    DOC_SET(art_table_add_column(levels, "triad_min_gbps", ART_REAL));
    for (unsigned i = 0; st == ART_OK && i < r->cal.level_count; i++) {
        const struct prof_mem_level *l = &r->cal.levels[i];
        size_t row = 0;
        DOC_SET(art_table_add_row(levels, &row));
        DOC_SET(art_table_set_text(levels, row, 0, level_name(l->level)));
        if (l->capacity_bytes) {
            DOC_SET(art_table_set_uint(levels, row, 1, l->capacity_bytes));
        }
        DOC_SET(art_table_set_uint(levels, row, 2, l->triad.total_bytes));
        DOC_SET(art_table_set_real(levels, row, 3, l->triad.gbps));
        /* the spread of the trials (triad_gbps is their best) */
        DOC_SET(art_table_set_real(levels, row, 4, l->triad.gbps_min));
    }
    DOC_SET(art_doc_set_table(host, "memory_levels", levels));
    art_table_destroy(levels);
    const int with_dev = r->device.name[0] != '\0';
    if (with_dev) {
        DOC_SET(art_doc_set_text(dev, "name", r->device.name));
        DOC_SET(art_doc_set_real(dev, "bandwidth_gbps",
                                 r->device.bandwidth_gbps));
        DOC_SET(art_doc_set_real(dev, "peak_gmacs", r->device.peak_gmacs));
        DOC_SET(art_doc_set_uint(dev, "cores", prof_device_cores(&r->device)));
        if (r->device.power_watts > 0.0) {
            DOC_SET(art_doc_set_real(dev, "power_watts",
                                     r->device.power_watts));
        } else {
            DOC_SET(art_doc_set_text(dev, "power_watts",
                                     "unknown: give --power-watts"));
        }
        DOC_SET(art_doc_set_real(dev, "memory_mb", r->device.memory_mb));
        DOC_SET(art_doc_set_real(dev, "predicted_ms",
                                 r->pr.device_total.predicted_ms));
        DOC_SET(art_doc_set_real(dev, "stream_utilization",
                                 fmin(1.0, r->pr.device_total.predicted_ms /
                                               p->stream_interval_ms)));
        DOC_SET(art_doc_set_real(dev, "latency_over_interval",
                                 r->pr.device_total.predicted_ms /
                                     p->stream_interval_ms));
        DOC_SET(art_doc_set_real(dev, "latency_lower_bound_ms",
                                 r->pr.device_total.predicted_ms));
        DOC_SET(art_doc_set_real(dev, "host_roofline_overrun",
                                 host_overrun(r)));
        DOC_SET(art_doc_set_real(dev, "latency_realistic_ms",
                                 r->pr.device_total.predicted_ms *
                                     host_overrun(r)));
        DOC_SET(art_doc_set_real(dev, "energy_proxy_j",
                                 r->pr.device_total.energy_proxy_j));
    }

    DOC_SET(art_doc_set_table(d, "operator_profile", r->ops));
    DOC_SET(art_doc_set_doc(d, "totals", totals));
    DOC_SET(art_doc_set_doc(d, "precision_tradeoffs", prec));
    DOC_SET(art_doc_set_doc(d, "edge_constraints", edge));
    DOC_SET(art_doc_set_doc(d, "config", config));
    DOC_SET(art_doc_set_doc(d, "host", host));
    if (with_dev) {
        DOC_SET(art_doc_set_doc(d, "device", dev));
    }
    art_doc_destroy(dev);
    art_doc_destroy(host);
    art_doc_destroy(config);
    art_doc_destroy(edge);
    art_doc_destroy(prec);
    art_doc_destroy(totals);
    return st;
}

/* Roofline predictions of the four operators, from the executor's rows:
 * on the host from its own calibration, compared with what was measured,
 * and on --device (prof_exec_predict_all, as edgefit-layerwise). */
static int predict(const struct options *o, struct result *r)
{
    struct prof_exec_profile view;
    prof_stream_exec_view(&r->p, &view);
    const int st = prof_exec_predict_all(
        &view, &r->cal, r->have_device && !r->device_is_host ? &r->device
                                                              : NULL,
        o->have_power ? o->power_watts : 0.0, &r->pr);
    if (st != PROF_OK) {
        cli_error("predicting the operators: %s", prof_strerror(st));
        return CLI_EXIT_FAILURE;
    }
    if (r->have_device) {
        r->device = r->pr.device;
    }
    return CLI_EXIT_OK;
}

/* Progress by stage: calibration, the operators (fp32, then fp16 and
 * int8 inside the library), done. */
static void progress(const struct options *o, unsigned step,
                     const char *what)
{
    cli_progress(cli_progress_wanted(o->co.quiet), step, 2, what);
}

static int compute(const struct options *o, struct result *r)
{
    bool cached = false;
    struct cli_calib_opts co = o->calib;
    progress(o, 0, "calibrating the host (or reading its cache)");
    int st = cli_host_calibration(&co, &r->cal, &cached);
    if (st != PROF_OK) {
        progress(o, 0, NULL);
        cli_error("calibrating the host: %s", prof_strerror(st));
        return CLI_EXIT_FAILURE;
    }
    progress(o, 1, "timing the operators in fp32, fp16 and int8-dynamic");
    struct prof_diag diag;
    memset(&diag, 0, sizeof(diag));
    st = prof_stream_profile(&o->stream, &r->cal, &r->p, &diag);
    progress(o, 2, NULL);
    if (st != PROF_OK) {
        if (diag.message[0] != '\0') {
            /* The data could not be used: the reader says which file and
             * why. A missing, unreadable or malformed data file is bad
             * input; running out of memory is a runtime failure. */
            cli_error("--data fashion-mnist: %s", diag.message);
            return st == PROF_E_NOMEM ? CLI_EXIT_FAILURE : CLI_EXIT_USAGE;
        }
        cli_error("stream profile: %s", prof_strerror(st));
        return st == PROF_E_RANGE || st == PROF_E_OVERFLOW
                   ? CLI_EXIT_USAGE
                   : CLI_EXIT_FAILURE;
    }
    st = predict(o, r);
    if (st != CLI_EXIT_OK) {
        return st;
    }
    write_note(r);
    if ((st = build_ops_table(r)) != ART_OK ||
        (st = build_totals_table(r)) != ART_OK ||
        (st = build_doc(o, r)) != ART_OK) {
        return art_failed("building the output", st);
    }
    return CLI_EXIT_OK;
}

static void print_summary(const struct result *r)
{
    const struct prof_stream_profile *p = &r->p;
    printf("\nstream: %" PRIu64 " features, batch %" PRIu64 ", hidden %"
           PRIu64 ", %" PRIu64 " output(s), %s, %s data, interval %.3f ms\n",
           p->feature_count, p->batch, p->hidden, p->outputs, p->activation,
           p->data_source, p->stream_interval_ms);
    printf("host: peak %.1f GMAC/s (%s, one thread; best of the FMA loop "
           "and sgemm), main-memory triad %.2f GB/s (%.0f MiB), DRAM knee "
           "%.2f MAC/byte\n",
           r->cal.peak.gmacs, r->cal.peak.path, r->cal.triad.gbps,
           (double)r->cal.triad.total_bytes / 1048576.0,
           r->cal.knee_mac_per_byte);
    printf("totals: latency %.6f ms, memory %.3f KB, bandwidth %.1f MB/s, "
           "stream utilization %.6f",
           p->latency_ms, p->memory_kb, p->estimated_bandwidth_mb_s,
           p->stream_utilization);
    if (p->latency_over_interval > 1.0) {
        /* capped at 1: the factor is what says how far behind */
        printf(" (capped: a batch takes %.3g intervals, the stream falls "
               "behind)", p->latency_over_interval);
    }
    printf("\n");
    printf("precision: fp32 %.3f KB %.6f ms; fp16 %.3f KB %.6f ms; "
           "int8-dynamic %.3f KB %.6f ms\n",
           p->fp32_memory_kb, p->fp32_latency_ms, p->fp16_memory_kb,
           p->fp16_latency_ms, p->int8_memory_kb, p->int8_latency_ms);
    printf("note: %s\n", r->note);
    printf("host roofline, cache-aware: %.6f ms predicted for %.6f ms "
           "measured (%+.0f%%; per operator on average %.0f%% off)\n",
           r->pr.host_total.predicted_ms, r->pr.host_total.measured_ms,
           100.0 * r->pr.host_total.relative_error,
           100.0 * r->pr.host_total.mean_abs_relative_error);
    printf("host roofline, DRAM only:   %.6f ms predicted (%+.0f%%; per "
           "operator on average %.0f%% off)\n",
           r->pr.dram_total.predicted_ms, 100.0 * r->pr.dram_total.relative_error,
           100.0 * r->pr.dram_total.mean_abs_relative_error);
    if (r->device.name[0] != '\0') {
        /* Nothing ran there: the roofline bound, and the range this
         * machine's own over-run of its roofline suggests. */
        const double dev_ms = r->pr.device_total.predicted_ms;
        const double ratio = dev_ms / p->stream_interval_ms;
        printf("on %s: at least %.2g ms per batch (roofline lower bound; "
               "about %.2g ms at this machine's %.3gx over-run of its own "
               "roofline), %s; ", r->device.name, dev_ms,
               dev_ms * host_overrun(r), host_overrun(r),
               ratio > 1.0 ? "the stream falls behind even at the bound"
                           : "within the interval at the bound");
        if (ratio > 1.0) {
            printf("%.3g intervals per batch; ", ratio);
        } else {
            printf("stream utilization %.2g; ", ratio);
        }
        if (r->device.power_watts > 0.0) {
            printf("energy proxy %.3g J per batch (%s's power x the lower "
                   "bound)\n", r->pr.device_total.energy_proxy_j,
                   r->device.name);
        } else {
            printf("energy: power unknown: give --power-watts\n");
        }
    }
    printf("bottleneck: %s\n", p->bottleneck);
    printf("headroom: %s\n", p->headroom);
    printf("cache: %s\n", p->cache_sensitivity);
}

static int print_stdout(const struct options *o, const struct result *r)
{
    int rc;
    if (o->co.format == CLI_FORMAT_JSON) {
        /* The document (hardware_profile.json) holds the tables and the
         * sentences. */
        return cli_stdout_finish(
            art_doc_write_rounded(r->doc, stdout, cli_round_file));
    }
    const struct cli_output outs[] = {
        {.key = "operator_profile", .table = r->ops, .view = r->ops_view},
    };
    rc = cli_emit(o->co.format, outs, 1);
    if (rc != CLI_EXIT_OK || o->co.format != CLI_FORMAT_TABLE) {
        return rc;
    }
    print_summary(r);
    return cli_stdout_finish(ART_OK);
}

/* All three files appear together or not at all. */
static int write_artifacts(const char *dir, const struct result *r)
{
    const struct cli_output outs[] = {
        {.key = "operator_profile", .file = "operator_profile.csv",
         .table = r->ops},
        {.key = "totals", .file = "hardware_totals.csv", .table = r->totals},
        {.key = "hardware_profile", .file = "hardware_profile.json",
         .doc = r->doc},
    };
    return cli_write_outputs(dir, outs, 3, NULL);
}

int main(int argc, char **argv)
{
    cli_set_program("edgefit-stream");
    struct options o;
    int rc = parse_args(argc, argv, &o);
    if (rc == CLI_EXIT_OK) {
        rc = cli_out_check(o.co.out_dir);
    }
    if (rc != CLI_EXIT_OK) {
        return cli_exit(rc);
    }
    struct result r;
    memset(&r, 0, sizeof(r));
    /* Bad input is rejected before anything is measured or written. */
    if (o.dev.devices_file &&
        !cli_devices_load(o.dev.devices_file, &r.devs)) {
        result_free(&r);
        return CLI_EXIT_USAGE;
    }
    if (o.dev.device) {
        r.have_device = 1;
        r.device_is_host = strcmp(o.dev.device, "host") == 0;
        if (!r.device_is_host &&
            !cli_device_resolve(o.dev.device,
                                o.dev.devices_file ? &r.devs : NULL,
                                &r.device)) {
            result_free(&r);
            return CLI_EXIT_USAGE;
        }
    }
    if (o.dev.list) {
        const int lrc = cli_devices_print(
            o.co.format, o.dev.devices_file ? &r.devs : NULL);
        result_free(&r);
        return cli_exit(lrc);
    }
    rc = compute(&o, &r);
    if (rc == CLI_EXIT_OK && o.co.out_dir) {
        rc = write_artifacts(o.co.out_dir, &r);
    }
    if (rc == CLI_EXIT_OK) {
        rc = print_stdout(&o, &r);
    }
    if (rc == CLI_EXIT_OK && o.co.strict &&
        r.p.latency_ms > r.p.stream_interval_ms) {
        cli_error("--strict: a batch takes %.6f ms, longer than the %.6f ms "
                  "stream interval", r.p.latency_ms, r.p.stream_interval_ms);
        rc = CLI_EXIT_CONSTRAINT;
    }
    result_free(&r);
    return cli_exit(rc);
}
