/* edgefit-sweep: what each precision and batch costs and keeps. Trained
 * weights run over the whole test set at every precision and batch through
 * the executor (accuracy), timed on one batch (latency); libmemest's plan
 * gives the memory, the device the energy proxy and a roofline latency;
 * constraints accept or reject each configuration; the original's
 * precision trade-off table and a chart close it. */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "calib.h"
#include "calibration.h"
#include "cli.h"
#include "data.h"
#include "devices.h"
#include "model.h"
#include "table.h"
#include "edgefit/artifacts.h"
#include "edgefit/memest.h"
#include "edgefit/profile.h"
#include "sweep.h"

#define DEFAULT_MODEL "mlp:784-64-10"
#define DEFAULT_DEVICE "rpi4"

struct options {
    const char *model;
    const char *data;
    const char *test_data;
    uint64_t test_limit;
    const char *from_csv;
    struct cli_device_opts dev;
    struct sweep_config cfg;
    struct calibration_opts cal;
    struct cli_common co;
};

static void usage(FILE *f)
{
    fprintf(f,
        "usage: edgefit-sweep [--model SPEC] --weights FILE [options]\n"
        "       edgefit-sweep --model FILE.onnx [options]\n"
        "       edgefit-sweep --model FILE.onnx --test-data DIR [options]\n"
        "       edgefit-sweep --from-csv FILE [--out DIR]\n"
        "\n"
        "Run trained weights at every precision and batch: test accuracy over\n"
        "the whole test set (the executor; int8 is static post-training\n"
        "quantisation, its activation ranges calibrated once on the first\n"
        "512 training samples of --data, or on --calibration-data, so its\n"
        "accuracy is the same at every batch), latency of one batch on this machine (median of the\n"
        "samples), memory (libmemest's peak inference plan), the energy proxy\n"
        "(the device's power x its roofline latency; x the latency measured\n"
        "when the device is the host) and the device's roofline\n"
        "latency; accept or reject each configuration against the\n"
        "constraints, then average per precision as the original's\n"
        "precision trade-off table did (sorted by mean latency).\n"
        "\n"
        "  --weights FILE         the model's weights: safetensors with PyTorch's\n"
        "                         state_dict names (dense1.weight, ...), e.g.\n"
        "                         from edgefit-train; an ONNX model has its own\n"
        "  --model SPEC           the model of the weights (default "
        DEFAULT_MODEL ")\n"
        "  --data DIR             labelled test data: IDX files t10k-* (default\n"
        "                         %s) or test_inputs.npy\n"
        "                         [N, ...] float32 with test_labels.npy [N]\n"
        "                         integers\n"
        "  --test-data DIR        reference outputs instead of labels: ONNX\n"
        "                         test_data_set_* folders (input_0, output_0 as\n"
        "                         .pb or .npy), one or a folder of several;\n"
        "                         each precision is compared with them\n"
        "                         (max_abs_error, rms_error, top1_agreement\n"
        "                         for a classifier)\n"
        "  --test-limit N         the first N test samples (default all)\n"
        "  --precisions LIST      of fp32,fp16,bf16,int8,int8-dynamic\n"
        "                         (default fp32,fp16,bf16,int8; int8 is\n"
        "                         static, int8-dynamic re-quantises every\n"
        "                         tensor with its own range per batch)\n"
        CLI_CALIBRATION_HELP
        "  --batches LIST         batch sizes (default 1,8,32)\n"
        "  --device D             power and roofline (default " DEFAULT_DEVICE
        ")\n"
        "  --devices FILE         devices of your own (a CSV, as for\n"
        "                         edgefit-layerwise)\n"
        "  --list-devices         print the catalogue and exit\n"
        "  --max-latency-ms X     reject a configuration slower than X per\n"
        "                         batch\n"
        "  --max-memory-mb X      reject one whose peak plan exceeds X MB\n"
        "                         (default: the device's memory when known)\n"
        "  --min-accuracy X       reject one below this test accuracy (0-1)\n"
        "  --repeats N            timed samples per configuration (default "
        "7)\n"
        "  --from-csv FILE        aggregate a CSV with the columns precision,\n"
        "                         accuracy, latency_ms, memory_mb,\n"
        "                         energy_proxy_j, accepted (batch_size\n"
        "                         optional) instead of running\n"
        "  --out DIR              write sweep_results.csv,\n"
        "                         precision_tradeoffs.csv and\n"
        "                         precision_tradeoffs.png\n"
        "                         (replaced whole: a kill or a full disk leaves the old\n"
        "                         folder or the new one; '.', a mount point and a\n"
        "                         folder holding a folder are refused)\n"
        "  --format F             table|csv|json on stdout (default table;\n"
        "                         csv: the trade-off table)\n"
        "  --strict               exit 3 when no configuration is accepted\n"
        "  --quiet                no progress on stderr\n"
        "  --help, --version\n"
        "\n"
        "Units: MB = 1024^2 bytes, ms per batch, J. Exit status: 0 success,\n"
        "1 runtime failure, 2 bad usage or input, 3 with --strict when no\n"
        "configuration is accepted.\n",
        prof_dataset_default_dir());
}

static const struct cli_app app = {"edgefit-sweep", EDGEFIT_VERSION, usage,
                                   cli_version_details};

static int parse_args(int argc, char **argv, struct options *o)
{
    enum { O_MODEL = 256, O_DATA, O_TEST_DATA, O_TEST_LIMIT, O_PRECISIONS,
           O_BATCHES, O_MAXLAT, O_MAXMEM, O_MINACC, O_REPEATS, O_FROM };
    static const struct option longopts[] = {
        {"model", required_argument, NULL, O_MODEL},
        CLI_WEIGHTS_OPTION,
        {"data", required_argument, NULL, O_DATA},
        {"test-data", required_argument, NULL, O_TEST_DATA},
        {"test-limit", required_argument, NULL, O_TEST_LIMIT},
        {"precisions", required_argument, NULL, O_PRECISIONS},
        {"batches", required_argument, NULL, O_BATCHES},
        {"max-latency-ms", required_argument, NULL, O_MAXLAT},
        {"max-memory-mb", required_argument, NULL, O_MAXMEM},
        {"min-accuracy", required_argument, NULL, O_MINACC},
        {"repeats", required_argument, NULL, O_REPEATS},
        {"from-csv", required_argument, NULL, O_FROM},
        CLI_CALIBRATION_OPTIONS,
        CLI_DEVICE_OPTIONS,
        CLI_STRICT_OPTION,
        CLI_QUIET_OPTION,
        CLI_COMMON_OPTIONS,
        {0, 0, 0, 0},
    };
    memset(o, 0, sizeof *o);
    o->model = DEFAULT_MODEL;
    o->dev.device = DEFAULT_DEVICE;
    sweep_config_init(&o->cfg);
    calibration_opts_init(&o->cal);
    o->cfg.max_memory_mb = NAN; /* NaN: the device's, decided later */
    opterr = 0;
    if (cli_refuse_repeats(argc, argv, longopts, NULL) != CLI_EXIT_OK) {
        return CLI_EXIT_USAGE;
    }
    int c;
    uint64_t u;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        int d = cli_device_option(c, &o->dev);
        if (d < 0) {
            return CLI_EXIT_USAGE;
        }
        if (d > 0) {
            continue;
        }
        d = calibration_option(c, optarg, &o->cal);
        if (d < 0) {
            return CLI_EXIT_USAGE;
        }
        if (d > 0) {
            continue;
        }
        switch (c) {
        case O_MODEL:
            o->model = optarg;
            break;
        case O_DATA:
            o->data = optarg;
            break;
        case O_TEST_DATA:
            o->test_data = optarg;
            break;
        case O_TEST_LIMIT:
            if (!cli_parse_u64("--test-limit", optarg, 1, UINT64_MAX,
                               &o->test_limit)) {
                return CLI_EXIT_USAGE;
            }
            break;
        case O_PRECISIONS:
            if (!sweep_parse_precisions("--precisions", optarg, &o->cfg)) {
                return CLI_EXIT_USAGE;
            }
            break;
        case O_BATCHES:
            if (!sweep_parse_batches("--batches", optarg, &o->cfg)) {
                return CLI_EXIT_USAGE;
            }
            break;
        case O_MAXLAT:
            if (!cli_parse_double("--max-latency-ms", optarg, 0, INFINITY,
                                  &o->cfg.max_latency_ms)) {
                return CLI_EXIT_USAGE;
            }
            break;
        case O_MAXMEM:
            if (!cli_parse_double("--max-memory-mb", optarg, 0, INFINITY,
                                  &o->cfg.max_memory_mb)) {
                return CLI_EXIT_USAGE;
            }
            break;
        case O_MINACC:
            if (!cli_parse_double("--min-accuracy", optarg, 0, 1,
                                  &o->cfg.min_accuracy)) {
                return CLI_EXIT_USAGE;
            }
            break;
        case O_REPEATS:
            if (!cli_parse_u64("--repeats", optarg, 1, 100000, &u)) {
                return CLI_EXIT_USAGE;
            }
            o->cfg.timing.repeats = (unsigned)u;
            break;
        case O_FROM:
            o->from_csv = optarg;
            break;
        default:
            if (cli_common_option(c, &app, argv, &o->co) != CLI_EXIT_OK) {
                return CLI_EXIT_USAGE;
            }
            break;
        }
    }
    if (cli_no_operands(argc, argv) != CLI_EXIT_OK) {
        return CLI_EXIT_USAGE;
    }
    if (o->data && o->test_data) {
        cli_error("--data and --test-data: give one (labels or reference "
                  "outputs)");
        return CLI_EXIT_USAGE;
    }
    if (o->test_data && o->cfg.min_accuracy > 0) {
        cli_error("--min-accuracy needs labels (--data): --test-data has "
                  "reference outputs, no accuracy");
        return CLI_EXIT_USAGE;
    }
    if (calibration_check(&o->cal) != CLI_EXIT_OK) {
        return CLI_EXIT_USAGE;
    }
    if (o->from_csv && calibration_given(&o->cal)) {
        cli_error("--from-csv aggregates a file: --calibration-%s is not "
                  "used with it", o->cal.file ? "file" : "data");
        return CLI_EXIT_USAGE;
    }
    if (o->from_csv && o->co.weights) {
        cli_error("--from-csv aggregates a file: --weights is not used "
                  "with it");
        return CLI_EXIT_USAGE;
    }
    return CLI_EXIT_OK;
}

/* Static int8's ranges, when the sweep runs int8: --calibration-data or
 * --calibration-file, else the first --calibration-samples training
 * samples of --data (the test set's own inputs when there is no training
 * split: --test-data, or a --data folder of test files only), so the test
 * set int8 is measured on is not the one it was calibrated on whenever
 * there is a choice; the output says which. */
static int sweep_ranges(struct options *o, const memest_model *model,
                        const struct prof_dataset *test,
                        struct prof_ranges *ranges, char *source,
                        size_t source_len)
{
    bool int8 = false;
    for (size_t i = 0; i < o->cfg.n_precisions; i++) {
        int8 = int8 || o->cfg.precisions[i] == MEMEST_INT8;
    }
    if (!int8) {
        return CLI_EXIT_OK;
    }
    struct prof_dataset train = {0};
    const struct prof_dataset *fallback = NULL;
    const char *what = NULL;
    int rc = CLI_EXIT_OK;
    if (!calibration_given(&o->cal)) {
        if (o->test_data) {
            fallback = test;
            what = "test samples (--test-data has no training split)";
        } else if (!data_has_split(o->data, DATA_TRAIN)) {
            fallback = test;
            what = "test samples (--data has no training split)";
        } else {
            rc = data_load(o->data, DATA_TRAIN, o->cal.samples, &train);
            fallback = &train;
            what = "training samples";
        }
    }
    if (rc == CLI_EXIT_OK) {
        rc = calibration_ranges(model, &o->cal, fallback, what, ranges,
                                source, source_len);
    }
    prof_dataset_finish(&train);
    if (rc == CLI_EXIT_OK) {
        o->cfg.ranges = calibration_exec_ranges(ranges);
        o->cfg.int8_requant = o->cal.requant;
        o->cfg.calibration = source;
    }
    return rc;
}

static void progress(void *ctx, size_t done, size_t total, const char *what)
{
    (void)ctx;
    fprintf(stderr, "\r\033[Ksweep %zu/%zu: %s", done + 1, total, what);
    fflush(stderr);
}

/* The line under the sweep table that says which accuracy differences
 * are noise: the largest standard error of the rows. */
static void print_noise(const struct sweep_result *r)
{
    double se = NAN;
    uint64_t n = 0;
    for (size_t i = 0; i < r->n; i++) {
        const double v = r->rows[i].accuracy_stderr;
        if (!isnan(v) && !(v <= se)) {
            se = v;
            n = r->rows[i].samples;
        }
    }
    if (!isnan(se)) {
        printf("Accuracy differences below %.4f (the largest "
               "accuracy_stderr, sqrt(p(1-p)/n) over %llu samples) are "
               "noise.\n", se, (unsigned long long)n);
    }
}

/* feed: data_feed_note()'s sentence, or "". */
static int print_tables(const struct options *o, const art_table *res,
                        const art_table *trade, const struct sweep_result *r,
                        const char *feed)
{
    switch (o->co.format) {
    case CLI_FORMAT_CSV:
        return art_table_write_csv_rounded(trade, stdout, cli_round_file);
    case CLI_FORMAT_JSON: {
        art_doc *d = NULL;
        int st = art_doc_create(&d);
        st = st ? st : art_doc_set_table(d, "sweep_results", res);
        st = st ? st : art_doc_set_table(d, "precision_tradeoffs", trade);
        if (!st && o->cfg.calibration) {
            st = art_doc_set_text(d, "int8_calibration", o->cfg.calibration);
        }
        st = st ? st : art_doc_write_rounded(d, stdout, cli_round_file);
        art_doc_destroy(d);
        return st;
    }
    case CLI_FORMAT_TABLE:
    default:
    {
        /* The key columns in at most 120 characters; CSV and JSON carry
         * accuracy_stderr (the line under the table gives the largest),
         * test_samples, latency_p90_ms and device_bound too. */
        static const char *const keep[] = {
            "precision", "batch_size", "accuracy", "latency_ms",
            "memory_mb", "energy_proxy_j", "device_latency_ms",
            "accepted", "rejected_by", NULL};
        /* against reference outputs: the agreement instead of the empty
         * accuracy columns */
        static const char *const keep_ref[] = {
            "precision", "batch_size", "max_abs_error", "rmse",
            "top1_agreement", "latency_ms", "memory_mb", "energy_proxy_j",
            "device_latency_ms", "accepted", "rejected_by", NULL};
        art_table *view = NULL;
        int st = cli_table_view(res, o->test_data ? keep_ref : keep, &view);
        if (st != ART_OK) {
            return st;
        }
        printf("Sweep (latency per batch on this machine; device figures "
               "from the roofline)\n");
        st = art_table_print_grouped(view, stdout);
        art_table_destroy(view);
        if (st != ART_OK) {
            return st;
        }
        print_noise(r);
        if (o->cfg.calibration) {
            char line[512];
            snprintf(line, sizeof line, "int8 is static int8, with %s.",
                     o->cfg.calibration);
            cli_print_wrapped(stdout, line, 0, 100);
        }
        if (*feed) {
            char line[512];
            snprintf(line, sizeof line, "The data: %s.", feed);
            cli_print_wrapped(stdout, line, 0, 100);
        }
        static const char *const trade_keep[] = {
            "precision", "accuracy_mean", "latency_ms_mean", "memory_mb_mean",
            "energy_proxy_j_mean", "accepted_ratio", NULL};
        st = cli_table_view(trade, trade_keep, &view);
        if (st != ART_OK) {
            return st;
        }
        printf("\nPrecision trade-offs (means per precision, by mean "
               "latency)\n");
        st = art_table_print_grouped(view, stdout);
        art_table_destroy(view);
        return st;
    }
    }
}

int main(int argc, char **argv)
{
    cli_set_program("edgefit-sweep");
    struct options o;
    int rc = parse_args(argc, argv, &o);
    if (rc != CLI_EXIT_OK) {
        return cli_exit(rc);
    }
    struct cli_devices devs = {0};
    if (o.dev.devices_file && !cli_devices_load(o.dev.devices_file, &devs)) {
        return CLI_EXIT_USAGE;
    }
    if (o.dev.list) {
        rc = cli_devices_print(o.co.format,
                               o.dev.devices_file ? &devs : NULL);
        cli_devices_free(&devs);
        return cli_exit(rc);
    }
    rc = CLI_EXIT_USAGE;
    memest_model *model = NULL;
    struct prof_dataset test = {0};
    struct sweep_result res = {0};
    art_table *rt = NULL, *tt = NULL;
    struct sweep_chart ch = {0};
    struct prof_ranges ranges = {0};
    char cal_source[320] = "";
    char feed[400] = ""; /* how the data feeds a sequence model */
    if (cli_out_check(o.co.out_dir) != CLI_EXIT_OK) {
        goto done;
    }
    if (o.from_csv) {
        if (!sweep_load_csv(o.from_csv, &res)) {
            goto done;
        }
    } else {
        if (!cli_device_resolve(o.dev.device, &devs, &o.cfg.device)) {
            goto done;
        }
        if (isnan(o.cfg.max_memory_mb)) {
            o.cfg.max_memory_mb = o.cfg.device.memory_mb > 0
                ? o.cfg.device.memory_mb : INFINITY;
        }
        if (cli_model_load(o.model, o.co.weights, &model) != CLI_EXIT_OK) {
            goto done;
        }
        /* An ONNX model carries its weights; a text model takes them
         * from --weights. Seeded initial weights would make the accuracy
         * columns meaningless. A model without parameters (a softmax, a
         * pool) needs none. */
        if (memest_model_parameter_count(model) > 0 &&
            !memest_model_has_weights(model)) {
            cli_error("--weights FILE is required: %s carries no weights "
                      "(give trained weights, e.g. from edgefit-train --out "
                      "DIR, or an ONNX model), or --from-csv FILE", o.model);
            goto done;
        }
        rc = o.test_data
                 ? data_load_reference(o.test_data, o.test_limit, model,
                                       &test)
                 : data_load(o.data, DATA_TEST, o.test_limit, &test);
        if (rc != CLI_EXIT_OK ||
            (rc = data_check(model, &test,
                             o.test_data ? "--test-data" : "--data")) !=
                CLI_EXIT_OK) {
            goto done;
        }
        data_feed_note(model, &test, feed, sizeof feed);
        rc = sweep_ranges(&o, model, &test, &ranges, cal_source,
                          sizeof cal_source);
        if (rc != CLI_EXIT_OK) {
            goto done;
        }
        if (!o.co.quiet && isatty(STDERR_FILENO)) {
            o.cfg.progress = progress;
        }
        rc = CLI_EXIT_FAILURE;
        bool ok = sweep_run(model, NULL, &test, &o.cfg, &res);
        if (o.cfg.progress) {
            fprintf(stderr, "\r\033[K");
        }
        if (!ok) {
            goto done;
        }
    }
    rc = CLI_EXIT_FAILURE;
    rt = sweep_results_table(&res);
    tt = sweep_tradeoff_table(&res);
    if (!rt || !tt || !sweep_chart_init(&res, &ch)) {
        /* each builder fails only for want of memory */
        cli_error("out of memory: building the result tables and their "
                  "chart (%zu configurations)",
                  res.n);
        goto done;
    }
    if (o.co.out_dir) {
        const struct cli_out_file files[] = {
            {.name = "sweep_results.csv", .csv = rt},
            {.name = "precision_tradeoffs.csv", .csv = tt},
            {.name = "precision_tradeoffs.png", .chart = &ch.chart},
        };
        if (cli_out_write(o.co.out_dir, files, 3) != CLI_EXIT_OK) {
            goto done;
        }
    }
    rc = cli_stdout_finish(print_tables(&o, rt, tt, &res, feed));
    if (rc != CLI_EXIT_OK) {
        goto done;
    }
    if (o.co.strict) {
        bool any = false;
        for (size_t i = 0; i < res.n; i++) {
            any = any || res.rows[i].accepted;
        }
        if (!any) {
            cli_error("--strict: no configuration meets the constraints");
            rc = CLI_EXIT_CONSTRAINT;
        }
    }
done:
    sweep_chart_free(&ch);
    art_table_destroy(rt);
    art_table_destroy(tt);
    sweep_result_free(&res);
    prof_ranges_finish(&ranges);
    prof_dataset_finish(&test);
    memest_model_destroy(model);
    cli_devices_free(&devs);
    return cli_exit(rc);
}
