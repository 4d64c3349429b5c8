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
#include "layerwise.h"
#include "table.h"
#include "edgefit/artifacts.h"
#include "edgefit/memest.h"
#include "edgefit/profile.h"

#define DEFAULT_MODEL "smallcnn"

struct options {
    struct layerwise_opts lw;
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
        "  --model SPEC             a model file (text, or .onnx with its\n"
        "                           weights), mlp:W0-W1-...-Wn or a preset:\n"
        "                           smallcnn, resnet8, ds-cnn, mobilenetv1-0.25,\n"
        "                           fc-autoencoder, kwt, lstm-kws (default\n"
        "                           " DEFAULT_MODEL ")\n"
        "  --weights FILE           the model's weights: safetensors in PyTorch's\n"
        "                           state_dict names (default: seeded ones)\n"
        "  --batch N                batch size (default: the batch an\n"
        "                           ONNX file fixes, else 32)\n"
        "  --precision P            fp32|fp16|bf16|int8|int8-dynamic (default\n"
        "                           fp32); int8 is static int8, its ranges\n"
        "                           from --calibration-data or\n"
        "                           --calibration-file, else calibrated on\n"
        "                           the timing inputs (the timing does not\n"
        "                           depend on the values)\n"
        CLI_CALIBRATION_HELP
        "  --device D               a --list-devices board (rpi4, ...), host (this\n"
        "                           machine, calibrated) or\n"
        "                           name=X,bandwidth_gbps=B,peak_gmacs=P\n"
        "                           [,power_watts=W,memory_mb=M]\n"
        "                           (default host), or a device of --devices;\n"
        "                           several, comma-separated (rpi4,host): the\n"
        "                           first is the summary's, each gets its\n"
        "                           predicted_ms_NAME column\n"
        "  --devices FILE           devices of your own: a CSV file with the\n"
        "                           catalogue's columns name, bandwidth_gbps,\n"
        "                           peak_gmacs[, power_watts, memory_mb],\n"
        "                           or fitted device models (written by\n"
        "                           edgefit-device): DEVICE_predicted_ms and\n"
        "                           its interval in the hardware summary\n"
        "  --runtime NAME           the fitted model of --device to use\n"
        "                           (ncnn, tflite-xnnpack, ...; default the\n"
        "                           file's first for the device)\n"
        "  --list-devices           print the catalogue with the source of\n"
        "                           each figure (and the --devices file) and\n"
        "                           exit\n"
        "  --sort KEY               the layer table's order: order (as run,\n"
        "                           the default), time, macs, params, memory\n"
        "                           (activation_bytes), the largest first, or\n"
        "                           name\n"
        "  --top N                  only the first N rows of the layer table\n"
        "                           (the totals stay the whole model's)\n"
        "  --repeats N              timed runs per operator (default 5)\n"
        "  --warmup N               untimed runs first (default 2)\n"
        "  --min-sample-ms X        time back-to-back runs of an operator\n"
        "                           until a sample lasts X ms and report the\n"
        "                           time per run (default 0.05; 0: one run\n"
        "                           per sample)\n"
        "  --power-watts W          power for the energy proxy (default the\n"
        "                           device's; unknown for host: no energy)\n"
        "  --latency-multiplier X   scale every measured latency (default 1)\n"
        "  --seed N                 input and, without --weights, weights\n"
        "                           (default 42)\n"
        "  --threads N              run dense and conv2d layers of at least\n"
        "                           2^20 MACs (pools of 2^20 window reads,\n"
        "                           fp32 adds and concats of 2^20 elements)\n"
        "                           on N threads (default 1); the\n"
        "                           predictions count min(N, cores) cores\n"
        "                           for them (threads column)\n"
        CLI_CALIB_HELP
        "  --quiet                  no progress on stderr (shown only on a\n"
        "                           terminal)\n"
        "  --format F               table|csv|json on stdout (default table)\n"
        "  --out DIR                write layerwise_breakdown.csv,\n"
        "                           layerwise_by_kind.csv, hardware_summary.csv,\n"
        "                           layerwise.json (with the totals) and the\n"
        "                           charts\n"
        "                           (replaced whole: a kill or a full disk leaves the\n"
        "                           old folder or the new one; '.', a mount point and a\n"
        "                           folder holding a folder are refused)\n"
        "  -h, --help, --version   this text; the version, the kernel paths\n"
        "                           built and selected, the dependencies\n"
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
           O_WARMUP, O_MINSAMPLE, O_POWER, O_MULT, O_SEED, O_THREADS,
           O_SORT, O_TOP };
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
        {"threads", required_argument, NULL, O_THREADS},
        {"sort", required_argument, NULL, O_SORT},
        {"top", required_argument, NULL, O_TOP},
        CLI_CALIB_OPTIONS,
        CLI_CALIBRATION_OPTIONS,
        CLI_COMMON_OPTIONS,
        CLI_QUIET_OPTION,
        CLI_WEIGHTS_OPTION,
        {NULL, 0, NULL, 0},
    };
    static const struct cli_app app = {"edgefit-layerwise", EDGEFIT_VERSION,
                                       usage,
                                       cli_version_details};
    *o = (struct options){.lw = {
        .model = DEFAULT_MODEL,
        .batch = 32,
        .precision = MEMEST_FP32,
        .dev = {.device = "host"},
        .repeats = 5,
        .warmup = 2,
        .min_sample_ms = 0.05,
        .latency_multiplier = 1.0,
        .seed = 42,
        .threads = 1,
    }};
    cli_calib_opts_init(&o->lw.calib);
    calibration_opts_init(&o->lw.cal);
    opterr = 0;
    if (cli_refuse_repeats(argc, argv, longopts, NULL) != CLI_EXIT_OK) {
        return CLI_EXIT_USAGE;
    }
    int c;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (c) {
        case O_MODEL:
            o->lw.model = optarg;
            break;
        case O_BATCH:
            if (!cli_parse_u64("--batch", optarg, 1, UINT32_MAX, &o->lw.batch)) {
                return CLI_EXIT_USAGE;
            }
            o->lw.have_batch = true;
            break;
        case O_PRECISION:
            if (memest_precision_parse(optarg, &o->lw.precision) != MEMEST_OK ||
                o->lw.precision == MEMEST_FP64) {
                cli_error("--precision: '%s' is not one of fp32, fp16, bf16, "
                          "int8 (or float32, float16, half, bfloat16); fp64 "
                          "is estimated by edgefit-memfit, not executed",
                          optarg);
                return CLI_EXIT_USAGE;
            }
            break;
        case O_REPEATS:
            if (!cli_parse_u64("--repeats", optarg, 1, 100000, &o->lw.repeats)) {
                return CLI_EXIT_USAGE;
            }
            break;
        case O_WARMUP:
            if (!cli_parse_u64("--warmup", optarg, 0, 100000, &o->lw.warmup)) {
                return CLI_EXIT_USAGE;
            }
            break;
        case O_MINSAMPLE:
            if (!cli_parse_double("--min-sample-ms", optarg, 0.0, 1e4,
                                  &o->lw.min_sample_ms)) {
                return CLI_EXIT_USAGE;
            }
            break;
        case O_POWER:
            if (!cli_parse_positive("--power-watts", optarg, 1e6,
                                    &o->lw.power_watts)) {
                return CLI_EXIT_USAGE;
            }
            o->lw.have_power = 1;
            break;
        case O_MULT:
            if (!cli_parse_double("--latency-multiplier", optarg, 1e-6, 1e6,
                                  &o->lw.latency_multiplier)) {
                return CLI_EXIT_USAGE;
            }
            break;
        case O_SEED:
            if (!cli_parse_u64("--seed", optarg, 0, UINT64_MAX, &o->lw.seed)) {
                return CLI_EXIT_USAGE;
            }
            break;
        case O_THREADS: {
            uint64_t t = 0;
            if (!cli_parse_u64("--threads", optarg, 1, 64, &t)) {
                return CLI_EXIT_USAGE;
            }
            o->lw.threads = (unsigned)t;
            break;
        }
        case O_SORT:
            if (!layerwise_sort_parse(optarg, &o->lw.sort)) {
                cli_error("--sort: '%s' is not one of order, time, macs, "
                          "params, memory, name", optarg);
                return CLI_EXIT_USAGE;
            }
            break;
        case O_TOP:
            if (!cli_parse_u64("--top", optarg, 1, UINT32_MAX, &o->lw.top)) {
                return CLI_EXIT_USAGE;
            }
            break;
        default: {
            const int k = calibration_option(c, optarg, &o->lw.cal);
            if (k < 0) {
                return CLI_EXIT_USAGE;
            }
            if (k > 0) {
                break;
            }
            const int rc = cli_shared_option(c, &o->lw.calib, &o->lw.dev, &app, argv,
                                             &o->co);
            if (rc != CLI_EXIT_OK) {
                return rc;
            }
            break;
        }
        }
    }
    o->lw.quiet = o->co.quiet;
    o->lw.weights = o->co.weights;
    o->lw.cal.seed = o->lw.seed;
    if (calibration_check(&o->lw.cal) != CLI_EXIT_OK) {
        return CLI_EXIT_USAGE;
    }
    if (o->lw.precision != MEMEST_INT8 && calibration_given(&o->lw.cal)) {
        cli_error("--calibration-%s: the activation ranges of static int8; "
                  "this run is %s (give --precision int8)",
                  o->lw.cal.file ? "file" : "data",
                  memest_precision_name(o->lw.precision));
        return CLI_EXIT_USAGE;
    }
    return cli_no_operands(argc, argv);
}

/* ---- output ---------------------------------------------------------------- */

static void print_summary(const struct options *o, const struct layerwise *r)
{
    const struct prof_hw_summary *s = &r->summary;
    printf("\nmodel %s, %s, batch %" PRIu64 ", device %s\n",
           memest_model_name(r->model), memest_precision_name(o->lw.precision),
           r->batch, r->device.name);
    if (o->lw.precision == MEMEST_INT8) {
        printf("  int8                static int8, with %s\n",
               r->int8_calibration);
    }
    printf("  measured forward    %.4f ms (p90 %.4f ms); operators alone "
           "%.4f ms; framing %+.4f ms\n",
           r->prof.forward_ms, r->prof.forward.p90_ms,
           r->prof.operator_sum_ms, r->prof.framing_ms);
    printf("  input staging       %.4f ms (a copy into the arena, not a "
           "layer: not predicted)\n",
           r->prof.ops[0].latency_ms);
    if (r->device_is_host) {
        printf("  predicted on %-6s %.4f ms (%+.1f%% vs measured); ",
               r->device.name, r->total.predicted_ms,
               100.0 * r->total.relative_error);
    } else if (r->device_runtime[0] != '\0') {
        /* A fitted device model of --devices: its prediction, the interval
         * of its cross-validated errors, the runtime it was fitted to. */
        printf("  on %-16s %.3g ms with %s (%.3g to %.3g ms, the 10th to "
               "90th percentile of its cross-validated errors); at least "
               "%.2g ms (roofline lower bound)\n  ",
               r->device.name, r->dm_ms[0], r->device_runtime, r->dm_ms[1],
               r->dm_ms[2], r->device_latency_lower_ms);
    } else {
        /* Nothing measured there: the roofline bound, and this machine's
         * over-run of its own roofline as the realistic range. */
        printf("  on %-16s at least %.2g ms (roofline lower bound); this "
               "machine runs %.2gx its own roofline, so about %.2g ms "
               "(device model not calibrated)\n  ", r->device.name,
               r->device_latency_lower_ms, r->host_overrun,
               r->device_latency_realistic_ms);
    }
    if (r->device.power_watts > 0.0) {
        printf("energy proxy %.3g J = %g W (%s) x %.4g ms (%s)\n",
               r->energy_proxy_j, r->device.power_watts, r->device.name,
               r->device_is_host ? r->prof.forward_ms
                                 : r->total.predicted_ms,
               r->device_is_host ? "measured" : "its roofline lower bound");
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
    printf("  host peaks          fp32 %.1f GMAC/s per core (%s; FMA loop "
           "%.1f, sgemm %.1f), 16-bit %.1f, int8 %.1f; %u cores, %u "
           "thread(s) used\n",
           r->cal.peak.gmacs, r->cal.peak.path, r->cal.fma.gmacs,
           r->cal.sgemm.gmacs, r->cal.f16.gmacs, r->cal.int8.gmacs,
           prof_device_cores(&r->host), o->lw.threads);
    printf("  host triads         best of %u trials:", r->cal.trials);
    for (unsigned i = 0; i < r->cal.level_count; i++) {
        const struct prof_mem_level *l = &r->cal.levels[i];
        printf(" %s %.1f GB/s (min %.1f)%s", layerwise_level_name(l->level),
               l->triad.gbps, l->triad.gbps_min,
               i + 1 < r->cal.level_count ? "," : "\n");
    }
    printf("  bandwidth           %.4g GB/s achieved against this machine's "
           "%s roof of %.4g GB/s (%.4g MB of data; utilisation %.3f%s)\n",
           s->achieved_bandwidth_gbps, layerwise_level_name(r->roof_level),
           s->configured_memory_bandwidth_gbps,
           s->estimated_total_bytes / 1048576.0, s->bandwidth_utilization,
           s->above_roof ? ", capped: faster than every level calibrated"
                         : "");
    printf("  compute             %.4g GMAC/s achieved of this machine's %s "
           "peak %.4g (utilisation %.3f%s)\n",
           s->achieved_gmacs, memest_precision_name(o->lw.precision),
           s->peak_gmacs, s->compute_utilization,
           s->above_peak ? ", capped: faster than the calibrated peak" : "");
    printf("  regime              %s\n", r->regime_text);
    printf("  roofline            intensity %.4g MAC/B, knee %.4g MAC/B "
           "(the whole model, against this machine's %s roof)\n",
           s->arithmetic_intensity, s->roofline_knee,
           layerwise_level_name(r->roof_level));
    printf("  memory              arena %" PRIu64 " B (= the plan), "
           "stored parameters %" PRIu64 " B, scratch %" PRIu64 " B\n",
           r->mem.arena_bytes, r->mem.parameter_bytes, r->mem.scratch_bytes);
    printf("  working memory      %" PRIu64 " B = arena + stored parameters "
           "+ scratch (fp32: %" PRIu64 " B)", r->working_bytes,
           r->fp32_working_bytes);
    if (r->mem.master_unread_bytes) {
        printf("; beside it %" PRIu64 " B of fp32 master weights for "
               "get/set_params, which inference does not read",
               r->mem.master_unread_bytes);
    }
    printf("\n");
    if (r->memory_note[0]) {
        printf("  why more than fp32  %s\n", r->memory_note);
    }
}

static int print_stdout(const struct options *o, const struct layerwise *r)
{
    /* CSV on stdout is the layer table; the summary, the totals and the
     * summary by kind are files of --out and keys of the JSON. On the
     * terminal: the layer table, its totals, the kinds, the summary. */
    const bool json = o->co.format == CLI_FORMAT_JSON;
    const struct cli_output outs[] = {
        {.key = "layers", .table = r->layers, .view = r->layers_view},
        {.key = "hardware_summary", .table = json ? r->hw : NULL},
        {.key = "totals", .table = json ? r->totals : NULL},
        {.key = "layers_by_kind", .table = json ? r->by_kind : NULL},
    };
    int rc = cli_emit(o->co.format, outs, json ? 4 : 1);
    if (rc != CLI_EXIT_OK || o->co.format != CLI_FORMAT_TABLE) {
        return rc;
    }
    layerwise_print_totals(&o->lw, r, stdout);
    printf("\nby operator kind:\n");
    const struct cli_output kinds = {.key = "layers_by_kind",
                                     .table = r->by_kind,
                                     .view = r->by_kind_view};
    rc = cli_emit(o->co.format, &kinds, 1);
    if (rc != CLI_EXIT_OK) {
        return rc;
    }
    print_summary(o, r);
    return cli_stdout_finish(ART_OK);
}

/* The CSVs, the charts and one JSON of both tables appear together or not
 * at all. */
static int write_artifacts(const struct options *o, const struct layerwise *r)
{
    struct layerwise_charts ch;
    if (!layerwise_charts_init(&o->lw, r, &ch)) {
        return CLI_EXIT_FAILURE;
    }
    const struct cli_output outs[] = {
        {.key = "layers", .file = "layerwise_breakdown.csv",
         .table = r->layers},
        {.key = "hardware_summary", .file = "hardware_summary.csv",
         .table = r->hw},
        {.key = "layers_by_kind", .file = "layerwise_by_kind.csv",
         .table = r->by_kind},
        /* a record of the JSON only: each CSV stays one table */
        {.key = "totals", .table = r->totals, .json_only = true},
        {.file = "layerwise_activation_memory.png", .chart = &ch.activation},
        {.file = "layerwise_macs.png", .chart = &ch.macs},
        {.file = "roofline.png", .chart = &ch.roofline},
    };
    const int rc = cli_write_outputs(o->co.out_dir, outs, 7,
                                     "layerwise.json");
    layerwise_charts_free(&ch);
    return rc;
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
        return cli_exit(rc);
    }
    struct layerwise r;
    memset(&r, 0, sizeof r);
    /* Bad input is rejected before anything is measured or written. */
    rc = layerwise_resolve_device(&o.lw, &r);
    if (rc == CLI_EXIT_OK && o.lw.dev.list) {
        const int lrc = cli_devices_print(
            o.co.format, o.lw.dev.devices_file ? &r.devs : NULL);
        layerwise_free(&r);
        return cli_exit(lrc);
    }
    if (rc == CLI_EXIT_OK) {
        rc = layerwise_run(&o.lw, &r);
    }
    if (rc == CLI_EXIT_OK) {
        rc = layerwise_predict(&o.lw, &r);
    }
    if (rc == CLI_EXIT_OK &&
        layerwise_build_tables(&o.lw, &r) != ART_OK) {
        cli_error("building the output: out of memory");
        rc = CLI_EXIT_FAILURE;
    }
    if (rc == CLI_EXIT_OK && o.co.out_dir) {
        rc = write_artifacts(&o, &r);
    }
    if (rc == CLI_EXIT_OK) {
        rc = print_stdout(&o, &r);
    }
    layerwise_free(&r);
    return cli_exit(rc);
}
