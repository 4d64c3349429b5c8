/* edgefit-report: the whole question in one run. Train the model on the
 * data with the original's defaults, sweep every precision and batch with
 * the trained weights, analyse the layers on this machine against the
 * device's roofline, and write every table and chart into one folder with
 * summary.json and a static report.html; print a short verdict. Each step
 * is the shared code of edgefit-train, edgefit-sweep and
 * edgefit-layerwise (apps/common). */
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "calib.h"
#include "cli.h"
#include "devices.h"
#include "edgefit/artifacts.h"
#include "edgefit/memest.h"
#include "edgefit/profile.h"
#include "layerwise.h"
#include "sweep.h"
#include "train_charts.h"
#include "training.h"
#include "weights.h"

#define DEFAULT_MODEL "mlp:784-64-10"
#define DEFAULT_DEVICE "rpi4"
#define DEFAULT_OUT "edgefit-report"
#define PHASES 5
#define VERDICT_LINES 8
#define LINE_MAX_ 400

struct options {
    const char *model;
    const char *data;
    uint64_t epochs;
    uint64_t train_limit, test_limit;
    uint64_t batch;            /* training and layer-wise batch */
    double max_latency_ms;
    double max_memory_mb;      /* NaN: the device's memory */
    double max_accuracy_drop;
    struct cli_device_opts dev;
    struct cli_calib_opts calib;
    struct cli_common co;
};

static void usage(FILE *f)
{
    fprintf(f,
        "usage: edgefit-report [options]\n"
        "\n"
        "Does the model fit the device, how fast does it run there, and what\n"
        "does each precision cost? Trains the model (the original's defaults:\n"
        "SGD, learning rate 0.1, batch 32, seed 42), runs the trained weights\n"
        "at fp32, fp16, bf16 and int8 and batches 1, 8 and 32 over the test\n"
        "set, analyses every layer on this machine against the device's\n"
        "roofline, writes every table and chart with summary.json and\n"
        "report.html into one folder, and prints the verdict.\n"
        "\n"
        "  --model SPEC           a model file, mlp:W0-...-Wn or smallcnn\n"
        "                         ending in softmax (default " DEFAULT_MODEL
        ")\n"
        "  --weights FILE         start the training from these weights:\n"
        "                         safetensors in PyTorch's state_dict names\n"
        "  --data DIR             IDX files train-* and t10k-* (default %s)\n"
        "  --device D             the device (default " DEFAULT_DEVICE ")\n"
        "  --devices FILE         devices of your own (a CSV, as for\n"
        "                         edgefit-layerwise)\n"
        "  --list-devices         print the catalogue and exit\n"
        "  --epochs N             training epochs (default 5)\n"
        "  --out DIR              the folder (default " DEFAULT_OUT ")\n"
        "  --train-limit N        the first N training images (default all)\n"
        "  --test-limit N         the first N test images (default all)\n"
        "  --max-latency-ms X     reject a configuration slower than X ms per\n"
        "                         batch on this machine (default: none)\n"
        "  --max-memory-mb X      reject one whose peak plan exceeds X MB\n"
        "                         (default: the device's memory)\n"
        "  --max-accuracy-drop X  reject one more than X below fp32's test\n"
        "                         accuracy at batch 1 (default 0.01)\n"
        "  --format F             table (the verdict) or json (summary.json)\n"
        "  --strict               exit 3 when no configuration is accepted\n"
        "  --quiet                no progress on stderr\n"
        CLI_CALIB_HELP
        "  --help, --version\n"
        "\n"
        "Progress per phase goes to stderr on a terminal. Exit status: 0\n"
        "success, 1 runtime failure, 2 bad usage or input, 3 with --strict\n"
        "when no configuration is accepted.\n",
        prof_dataset_default_dir());
}

static const struct cli_app app = {"edgefit-report", EDGEFIT_VERSION, usage,
                                   cli_version_details};

static int parse_args(int argc, char **argv, struct options *o)
{
    enum { O_MODEL = 256, O_DATA, O_EPOCHS, O_TRAIN_LIMIT, O_TEST_LIMIT,
           O_MAXLAT, O_MAXMEM, O_DROP };
    static const struct option longopts[] = {
        {"model", required_argument, NULL, O_MODEL},
        {"data", required_argument, NULL, O_DATA},
        {"epochs", required_argument, NULL, O_EPOCHS},
        {"train-limit", required_argument, NULL, O_TRAIN_LIMIT},
        {"test-limit", required_argument, NULL, O_TEST_LIMIT},
        {"max-latency-ms", required_argument, NULL, O_MAXLAT},
        {"max-memory-mb", required_argument, NULL, O_MAXMEM},
        {"max-accuracy-drop", required_argument, NULL, O_DROP},
        CLI_DEVICE_OPTIONS,
        CLI_CALIB_OPTIONS,
        CLI_STRICT_OPTION,
        CLI_QUIET_OPTION,
        CLI_WEIGHTS_OPTION,
        CLI_COMMON_OPTIONS,
        {0, 0, 0, 0},
    };
    memset(o, 0, sizeof *o);
    o->model = DEFAULT_MODEL;
    o->epochs = 5;
    o->batch = 32;
    o->max_latency_ms = INFINITY;
    o->max_memory_mb = NAN;
    o->max_accuracy_drop = 0.01;
    o->dev.device = DEFAULT_DEVICE;
    cli_calib_opts_init(&o->calib);
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (c) {
        case O_MODEL:
            o->model = optarg;
            break;
        case O_DATA:
            o->data = optarg;
            break;
        case O_EPOCHS:
            if (!cli_parse_u64("--epochs", optarg, 1, 1000, &o->epochs)) {
                return CLI_EXIT_USAGE;
            }
            break;
        case O_TRAIN_LIMIT:
            if (!cli_parse_u64("--train-limit", optarg, 1, UINT64_MAX,
                               &o->train_limit)) {
                return CLI_EXIT_USAGE;
            }
            break;
        case O_TEST_LIMIT:
            if (!cli_parse_u64("--test-limit", optarg, 1, UINT64_MAX,
                               &o->test_limit)) {
                return CLI_EXIT_USAGE;
            }
            break;
        case O_MAXLAT:
            if (!cli_parse_positive("--max-latency-ms", optarg, 1e9,
                                    &o->max_latency_ms)) {
                return CLI_EXIT_USAGE;
            }
            break;
        case O_MAXMEM:
            if (!cli_parse_positive("--max-memory-mb", optarg, 1e12,
                                    &o->max_memory_mb)) {
                return CLI_EXIT_USAGE;
            }
            break;
        case O_DROP:
            if (!cli_parse_double("--max-accuracy-drop", optarg, 0, 1,
                                  &o->max_accuracy_drop)) {
                return CLI_EXIT_USAGE;
            }
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
    if (o->co.format == CLI_FORMAT_CSV) {
        cli_error("--format: the report prints the verdict (table) or "
                  "summary.json (json); its CSV files are in --out");
        return CLI_EXIT_USAGE;
    }
    if (!o->co.out_dir) {
        o->co.out_dir = DEFAULT_OUT;
    }
    return cli_no_operands(argc, argv);
}

/* ---- progress -------------------------------------------------------------- */

struct progress {
    bool on;
    uint64_t start_ns;
};

static void phase(const struct progress *p, int i, const char *what)
{
    if (!p->on) {
        return;
    }
    fprintf(stderr, "\r\033[K[%d/%d %.1fs] %s\n", i, PHASES,
            (double)(prof_now_ns() - p->start_ns) * 1e-9, what);
    fflush(stderr);
}

static void sweep_progress(void *ctx, size_t done, size_t total,
                           const char *what)
{
    (void)ctx;
    fprintf(stderr, "\r\033[K  %zu/%zu: %s", done + 1, total, what);
    fflush(stderr);
}

/* ---- the run --------------------------------------------------------------- */

struct report {
    memest_model *model;
    struct prof_device device;
    struct cli_devices devs;
    struct prof_dataset train, test;
    prof_train *trainer;
    struct prof_train_memory train_mem;
    struct cli_weights weights;
    struct cli_train_log log;
    art_table *history;
    struct train_charts tch;
    struct sweep_config scfg;
    struct sweep_result sweep;
    art_table *sweep_table, *tradeoffs;
    struct sweep_chart sch;
    struct layerwise_opts lwo;
    struct layerwise lw;
    struct layerwise_charts lch;
    art_table *layers_brief;
    /* the verdict */
    double fp32_accuracy;
    const struct sweep_row *best; /* the best accepted configuration */
    const struct sweep_row *fp32_b1;
    uint64_t largest_batch;       /* fp32 inference within the memory */
    double memory_limit_mb;
    size_t accepted;
    char verdict[VERDICT_LINES][LINE_MAX_];
    size_t n_verdict;
    art_doc *summary;
    double wall_s;
};

static void report_free(struct report *r)
{
    art_doc_destroy(r->summary);
    art_table_destroy(r->layers_brief);
    layerwise_charts_free(&r->lch);
    layerwise_free(&r->lw);
    sweep_chart_free(&r->sch);
    art_table_destroy(r->tradeoffs);
    art_table_destroy(r->sweep_table);
    sweep_result_free(&r->sweep);
    train_charts_free(&r->tch);
    art_table_destroy(r->history);
    cli_train_log_free(&r->log);
    cli_weights_free(&r->weights);
    prof_train_destroy(r->trainer);
    prof_dataset_finish(&r->test);
    prof_dataset_finish(&r->train);
    cli_devices_free(&r->devs);
    memest_model_destroy(r->model);
}


/* Everything that can be wrong with the input, before any long work. */
static int prepare(const struct options *o, struct report *r)
{
    if (o->dev.devices_file &&
        !cli_devices_load(o->dev.devices_file, &r->devs)) {
        return CLI_EXIT_USAGE;
    }
    if (!cli_device_resolve(o->dev.device,
                            o->dev.devices_file ? &r->devs : NULL,
                            &r->device)) {
        return CLI_EXIT_USAGE;
    }
    const int rc = cli_model_load(o->model, o->co.weights, &r->model);
    if (rc != CLI_EXIT_OK) {
        return rc;
    }
    struct prof_diag d = {0};
    int st = prof_dataset_load(o->data, "train", o->train_limit, &r->train,
                               &d);
    if (st == PROF_OK) {
        st = prof_dataset_load(o->data, "t10k", o->test_limit, &r->test, &d);
    }
    if (st != PROF_OK) {
        return cli_data_failed(st, &d);
    }
    if (r->train.count < o->batch) {
        cli_error("--train-limit: %" PRIu64 " training images are fewer "
                  "than one batch of %" PRIu64, r->train.count, o->batch);
        return CLI_EXIT_USAGE;
    }
    return CLI_EXIT_OK;
}

static int train(const struct options *o, struct report *r,
                 const struct progress *p)
{
    struct prof_train_opts to;
    prof_train_opts_init(&to); /* the original's defaults */
    to.batch = o->batch;
    int rc = cli_train_create(r->model, o->model, &to, &r->trainer,
                              &r->train_mem, &r->weights);
    if (rc == CLI_EXIT_OK) {
        /* --weights (or an ONNX model's own): the training starts there */
        rc = cli_train_start_from_model(r->trainer, r->model, &r->weights,
                                        o->co.weights ? o->co.weights
                                                      : o->model);
    }
    if (rc == CLI_EXIT_OK) {
        rc = cli_train_epochs(r->trainer, &r->train, &r->test, o->epochs,
                              p->on, &r->log);
    }
    if (rc == CLI_EXIT_OK) {
        rc = cli_train_read_weights(r->trainer, &r->weights);
    }
    if (rc != CLI_EXIT_OK) {
        return rc;
    }
    r->history = cli_train_history(&r->log);
    if (!r->history) {
        cli_error("out of memory");
        return CLI_EXIT_FAILURE;
    }
    if (!train_charts_init(r->log.epochs, r->log.done, r->log.test_accuracy,
                           r->log.test_loss, NULL, 0, 0, &r->tch)) {
        return CLI_EXIT_FAILURE;
    }
    return CLI_EXIT_OK;
}

static int sweep(const struct options *o, struct report *r,
                 const struct progress *p)
{
    sweep_config_init(&r->scfg);
    r->scfg.device = r->device;
    r->memory_limit_mb = isnan(o->max_memory_mb)
        ? (r->device.memory_mb > 0 ? r->device.memory_mb : INFINITY)
        : o->max_memory_mb;
    r->scfg.max_memory_mb = r->memory_limit_mb;
    r->scfg.max_latency_ms = o->max_latency_ms;
    if (p->on) {
        r->scfg.progress = sweep_progress;
    }
    const bool ok = sweep_run(r->model, &r->weights, &r->test, &r->scfg,
                              &r->sweep);
    if (p->on) {
        fputs("\r\033[K", stderr);
    }
    if (!ok) {
        return CLI_EXIT_FAILURE;
    }
    /* The accuracy bar is fp32's at batch 1, known only now. */
    for (size_t i = 0; i < r->sweep.n; i++) {
        const struct sweep_row *w = &r->sweep.rows[i];
        if (strcmp(w->precision, "fp32") == 0 && w->batch == 1) {
            r->fp32_b1 = w;
        }
    }
    r->fp32_accuracy = r->fp32_b1 ? r->fp32_b1->accuracy : NAN;
    r->scfg.min_accuracy = r->fp32_b1
        ? fmax(0, r->fp32_accuracy - o->max_accuracy_drop) : 0;
    sweep_judge(&r->sweep, &r->scfg);
    r->sweep_table = sweep_results_table(&r->sweep);
    r->tradeoffs = sweep_tradeoff_table(&r->sweep);
    if (!r->sweep_table || !r->tradeoffs ||
        !sweep_chart_init(&r->sweep, &r->sch)) {
        return CLI_EXIT_FAILURE;
    }
    /* The best accepted configuration at batch 1 (one input as it
     * arrives): the fastest on the device by the roofline, a deterministic
     * figure, then the smaller memory. */
    for (size_t i = 0; i < r->sweep.n; i++) {
        const struct sweep_row *w = &r->sweep.rows[i];
        r->accepted += w->accepted;
        if (!w->accepted || w->batch != 1) {
            continue;
        }
        if (!r->best || w->device_latency_ms < r->best->device_latency_ms ||
            (w->device_latency_ms == r->best->device_latency_ms &&
             w->memory_mb < r->best->memory_mb)) {
            r->best = w;
        }
    }
    return CLI_EXIT_OK;
}

static int layerwise(const struct options *o, struct report *r)
{
    r->lwo = (struct layerwise_opts){
        .model = o->model, .weights = o->co.weights, .batch = o->batch,
        .precision = MEMEST_FP32,
        .dev = o->dev, .repeats = 5, .warmup = 2, .min_sample_ms = 0.05,
        .latency_multiplier = 1.0, .seed = 42, .calib = o->calib,
        .quiet = o->co.quiet};
    int rc = layerwise_resolve_device(&r->lwo, &r->lw);
    if (rc == CLI_EXIT_OK) {
        rc = layerwise_run(&r->lwo, &r->lw);
    }
    if (rc == CLI_EXIT_OK) {
        rc = layerwise_predict(&r->lwo, &r->lw);
    }
    if (rc == CLI_EXIT_OK &&
        layerwise_build_tables(&r->lwo, &r->lw) != ART_OK) {
        cli_error("building the layer tables: out of memory");
        rc = CLI_EXIT_FAILURE;
    }
    if (rc == CLI_EXIT_OK && !layerwise_charts_init(&r->lwo, &r->lw, &r->lch)) {
        rc = CLI_EXIT_FAILURE;
    }
    return rc;
}

/* The key columns of the layer breakdown, for the page. */
static int layers_brief(struct report *r)
{
    static const char *const names[] = {
        "layer", "kind", "output_shape", "activation_bytes", "macs",
        "latency_ms", "predicted_ms", "bound"};
    art_table *t = NULL;
    int st = art_table_create("layers", &t);
    long src[8];
    for (size_t c = 0; st == ART_OK && c < 8; c++) {
        src[c] = art_table_find_column(r->lw.layers, names[c]);
        st = src[c] < 0 ? ART_E_INVALID
                        : art_table_add_column(
                              t, names[c],
                              art_table_column_type(r->lw.layers,
                                                    (size_t)src[c]));
    }
    for (size_t i = 0; st == ART_OK && i < art_table_rows(r->lw.layers);
         i++) {
        size_t row;
        st = art_table_add_row(t, &row);
        for (size_t c = 0; st == ART_OK && c < 8; c++) {
            const size_t sc = (size_t)src[c];
            if (!art_table_is_set(r->lw.layers, i, sc)) {
                continue;
            }
            switch (art_table_column_type(t, c)) {
            case ART_TEXT: {
                const char *v;
                st = art_table_get_text(r->lw.layers, i, sc, &v);
                st = st ? st : art_table_set_text(t, row, c, v);
                break;
            }
            case ART_UINT: {
                uint64_t v;
                st = art_table_get_uint(r->lw.layers, i, sc, &v);
                st = st ? st : art_table_set_uint(t, row, c, v);
                break;
            }
            default: {
                double v;
                st = art_table_get_real(r->lw.layers, i, sc, &v);
                st = st ? st : art_table_set_real(t, row, c, v);
                break;
            }
            }
        }
    }
    if (st != ART_OK) {
        art_table_destroy(t);
        cli_error("building the layer table: %s", art_strerror(st));
        return CLI_EXIT_FAILURE;
    }
    r->layers_brief = t;
    return CLI_EXIT_OK;
}

/* ---- the verdict ----------------------------------------------------------- */

static void say(struct report *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void say(struct report *r, const char *fmt, ...)
{
    if (r->n_verdict == VERDICT_LINES) {
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->verdict[r->n_verdict++], LINE_MAX_, fmt, ap);
    va_end(ap);
}

static const struct sweep_row *row_of(const struct report *r,
                                      const char *prec, uint64_t batch)
{
    for (size_t i = 0; i < r->sweep.n; i++) {
        if (strcmp(r->sweep.rows[i].precision, prec) == 0 &&
            r->sweep.rows[i].batch == batch) {
            return &r->sweep.rows[i];
        }
    }
    return NULL;
}

static int judge(const struct options *o, struct report *r)
{
    const double mem_mb = r->device.memory_mb;
    /* Memory: the largest fp32 inference batch within the limit, and the
     * training run's real buffers. */
    const uint64_t cap = UINT64_C(1) << 20;
    if (isfinite(r->memory_limit_mb) &&
        memest_fit_batch(r->model, cap, r->memory_limit_mb, MEMEST_FP32, cap,
                         &r->largest_batch) != MEMEST_OK) {
        cli_error("fitting the batch: %s", memest_strerror(MEMEST_E_RANGE));
        return CLI_EXIT_FAILURE;
    }
    const struct sweep_row *b32 = row_of(r, "fp32", o->batch);
    const double train_mb = (double)r->train_mem.total_bytes / 1048576.0;
    if (!isfinite(r->memory_limit_mb)) {
        say(r, "Memory: %s's memory is unknown; inference at batch %" PRIu64
            " needs %.3g MB (fp32), training %.3g MB.", r->device.name,
            o->batch, b32 ? b32->memory_mb : NAN, train_mb);
    } else if (r->largest_batch == 0) {
        say(r, "Memory: DOES NOT FIT: even batch 1 needs more than the "
            "%.6g MB limit%s.", r->memory_limit_mb,
            mem_mb > 0 ? " of the device" : "");
    } else {
        char most[80];
        if (r->largest_batch >= cap) {
            snprintf(most, sizeof most, "at any batch up to %" PRIu64
                     " (the most tried)", cap);
        } else {
            snprintf(most, sizeof most, "up to batch %" PRIu64 " (fp32)",
                     r->largest_batch);
        }
        say(r, "Memory: fits %s (%.6g MB) %s; at batch %" PRIu64 " fp32 "
            "inference needs %.3g MB and training %.3g MB.",
            r->device.name, r->memory_limit_mb, most, o->batch,
            b32 ? b32->memory_mb : NAN, train_mb);
    }
    if (r->best && r->fp32_b1) {
        const double cost = r->fp32_b1->accuracy - r->best->accuracy;
        char delta[64];
        if (fabs(100.0 * cost) < 0.005) {
            snprintf(delta, sizeof delta, "the same as");
        } else {
            snprintf(delta, sizeof delta, "%+.2f points against",
                     -100.0 * cost);
        }
        say(r, "Precision: %s is the best accepted at batch 1 (%zu of %zu "
            "configurations accepted): test accuracy %.4f, %s fp32's %.4f, "
            "memory %.3g MB instead of %.3g MB.",
            r->best->precision, r->accepted, r->sweep.n, r->best->accuracy,
            delta, r->fp32_b1->accuracy, r->best->memory_mb,
            r->fp32_b1->memory_mb);
        const double e_j = r->device.power_watts > 0
            ? r->device.power_watts * r->best->device_latency_ms / 1000.0
            : NAN;
        const struct sweep_row *bb = row_of(r, r->best->precision, o->batch);
        /* The sweep's energy_proxy_j is the power times this machine's
         * latency (the original's proxy); here the device's own latency:
         * said, since the two differ for the same configuration. */
        say(r, "On %s (roofline): %.4g ms per input at %s batch 1, energy "
            "%.3g mJ at %.3g W over that time (the sweep's energy_proxy_j "
            "uses this machine's latency); at batch %" PRIu64 " %.4g ms "
            "per input.",
            r->device.name, r->best->device_latency_ms, r->best->precision,
            1000.0 * e_j, r->device.power_watts, o->batch,
            bb ? bb->device_latency_ms / (double)o->batch : NAN);
    } else {
        say(r, "Precision: NO configuration meets the constraints (memory "
            "<= %.6g MB, accuracy >= %.4f%s): see sweep_results.csv, "
            "column rejected_by.", r->memory_limit_mb, r->scfg.min_accuracy,
            isfinite(o->max_latency_ms) ? ", latency limit" : "");
    }
    say(r, "Bound: %s.", r->lw.regime_text);
    const size_t n = r->log.done;
    if (n > 0) {
        const struct prof_train_epoch_result *last = &r->log.epochs[n - 1];
        const double test_acc = r->log.test_accuracy[n - 1];
        const double gain = n > 1 ? test_acc - r->log.test_accuracy[n - 2]
                                  : NAN;
        size_t best_e = 0;
        for (size_t e = 1; e < n; e++) {
            if (r->log.test_accuracy[e] > r->log.test_accuracy[best_e]) {
                best_e = e;
            }
        }
        char trend[160];
        if (last->train_accuracy - test_acc > 0.05) {
            snprintf(trend, sizeof trend, "overfitting: train accuracy "
                     "%.1f points above test", 100.0 *
                     (last->train_accuracy - test_acc));
        } else if (isfinite(gain) && gain > 0.005) {
            snprintf(trend, sizeof trend, "still improving, %+.1f points in "
                     "the last epoch: more epochs may help", 100.0 * gain);
        } else if (isfinite(gain) && gain < -0.005) {
            snprintf(trend, sizeof trend, "the last epoch lost %.1f points; "
                     "the best was %.4f after epoch %zu", -100.0 * gain,
                     r->log.test_accuracy[best_e], best_e + 1);
        } else if (n == 1) {
            snprintf(trend, sizeof trend, "one epoch: no trend yet");
        } else {
            snprintf(trend, sizeof trend, "levelled off");
        }
        say(r, "Training: %zu epoch%s in %.2f s, train loss %.4f, train "
            "accuracy %.4f, test accuracy %.4f (%s).", n, n == 1 ? "" : "s",
            r->log.elapsed_s, last->loss, last->train_accuracy, test_acc,
            trend);
    }
    return CLI_EXIT_OK;
}

/* ---- summary.json and report.html ------------------------------------------ */

struct artifact {
    const char *file;
    const char *what;
};

/* Every file of the folder, in the order the page shows them. */
static const struct artifact artifacts[] = {
    {"report.html", "this page: the verdict, the key tables and every chart"},
    {"summary.json", "the verdict and the figures behind it, for scripts"},
    {"training_history.csv", "one row per epoch: loss, train and test "
                             "accuracy, time"},
    {"training_curves.png", "loss and accuracy per epoch, train and test"},
    {"weights.safetensors", "the trained weights (PyTorch names), for "
                            "edgefit-sweep --weights"},
    {"sweep_results.csv", "every precision and batch: accuracy, latency, "
                          "memory, energy, accepted or why not"},
    {"precision_tradeoffs.csv", "means per precision, fastest first (the "
                                "original's trade-off table)"},
    {"precision_tradeoffs.png", "latency against accuracy, one point per "
                                "precision and batch"},
    {"layerwise_breakdown.csv", "every layer: shapes, bytes, MACs, measured "
                                "and predicted time"},
    {"hardware_summary.csv", "the whole model: bandwidth and compute use, "
                             "roofline, regime"},
    {"layerwise.json", "the two layer tables as JSON"},
    {"layerwise_activation_memory.png", "activation memory per layer (MB)"},
    {"layerwise_macs.png", "multiply-accumulates per layer (millions)"},
    {"roofline.png", "each layer against the device's and this machine's "
                     "roofs"},
};
#define N_ARTIFACTS (sizeof artifacts / sizeof artifacts[0])

static int build_summary(const struct options *o, struct report *r)
{
    art_doc *d = NULL, *dev = NULL, *tr = NULL, *best = NULL, *data = NULL;
    int st = art_doc_create(&d);
    st = st ? st : art_doc_create(&dev);
    st = st ? st : art_doc_create(&tr);
    st = st ? st : art_doc_create(&best);
    st = st ? st : art_doc_create(&data);
    const char *lines[VERDICT_LINES];
    for (size_t i = 0; i < r->n_verdict; i++) {
        lines[i] = r->verdict[i];
    }
    const char *files[N_ARTIFACTS];
    for (size_t i = 0; i < N_ARTIFACTS; i++) {
        files[i] = artifacts[i].file;
    }
    st = st ? st : art_doc_set_text(d, "model", memest_model_name(r->model));
    st = st ? st : art_doc_set_texts(d, "verdict", lines, r->n_verdict);
    st = st ? st : art_doc_set_text(dev, "name", r->device.name);
    st = st ? st : art_doc_set_real(dev, "bandwidth_gbps",
                                    r->device.bandwidth_gbps);
    st = st ? st : art_doc_set_real(dev, "peak_gmacs", r->device.peak_gmacs);
    st = st ? st : art_doc_set_real(dev, "power_watts",
                                    r->device.power_watts);
    st = st ? st : art_doc_set_real(dev, "memory_mb", r->device.memory_mb);
    st = st ? st : art_doc_set_doc(d, "device", dev);
    st = st ? st : art_doc_set_text(data, "dir",
                                    o->data ? o->data
                                            : prof_dataset_default_dir());
    st = st ? st : art_doc_set_uint(data, "train_samples", r->train.count);
    st = st ? st : art_doc_set_uint(data, "test_samples", r->test.count);
    st = st ? st : art_doc_set_doc(d, "data", data);
    const size_t n = r->log.done;
    st = st ? st : art_doc_set_uint(tr, "epochs", n);
    st = st ? st : art_doc_set_uint(tr, "batch_size", o->batch);
    st = st ? st : art_doc_set_real(tr, "training_time_s", r->log.elapsed_s);
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
    st = st ? st : art_doc_set_uint(tr, "training_memory_bytes",
                                    r->train_mem.total_bytes);
    st = st ? st : art_doc_set_doc(d, "training", tr);
    st = st ? st : art_doc_set_real(d, "memory_limit_mb", r->memory_limit_mb);
    st = st ? st : art_doc_set_uint(d, "largest_fp32_batch",
                                    r->largest_batch);
    st = st ? st : art_doc_set_real(d, "min_accuracy", r->scfg.min_accuracy);
    st = st ? st : art_doc_set_uint(d, "accepted_configurations",
                                    r->accepted);
    if (r->best) {
        st = st ? st : art_doc_set_text(best, "precision",
                                        r->best->precision);
        st = st ? st : art_doc_set_uint(best, "batch_size", r->best->batch);
        st = st ? st : art_doc_set_real(best, "accuracy", r->best->accuracy);
        st = st ? st : art_doc_set_real(best, "accuracy_cost",
                                        r->fp32_accuracy - r->best->accuracy);
        st = st ? st : art_doc_set_real(best, "memory_mb",
                                        r->best->memory_mb);
        st = st ? st : art_doc_set_real(best, "device_latency_ms",
                                        r->best->device_latency_ms);
        st = st ? st : art_doc_set_real(
                           best, "device_energy_j",
                           r->device.power_watts > 0
                               ? r->device.power_watts *
                                     r->best->device_latency_ms / 1000.0
                               : NAN);
        st = st ? st : art_doc_set_doc(d, "best", best);
    }
    st = st ? st : art_doc_set_text(d, "bound",
                                    prof_bound_name(r->lw.regime));
    st = st ? st : art_doc_set_text(d, "bound_reading", r->lw.regime_text);
    st = st ? st : art_doc_set_table(d, "precision_tradeoffs", r->tradeoffs);
    st = st ? st : art_doc_set_texts(d, "files", files, N_ARTIFACTS);
    st = st ? st : art_doc_set_real(d, "wall_time_s", r->wall_s);
    art_doc_destroy(dev);
    art_doc_destroy(tr);
    art_doc_destroy(best);
    art_doc_destroy(data);
    if (st != ART_OK) {
        art_doc_destroy(d);
        cli_error("building summary.json: %s", art_strerror(st));
        return CLI_EXIT_FAILURE;
    }
    r->summary = d;
    return CLI_EXIT_OK;
}

static void html_figure(FILE *f, const char *file, const char *alt)
{
    fputs("<figure><a href=\"", f);
    art_html_write_text(f, file);
    fputs("\"><img src=\"", f);
    art_html_write_text(f, file);
    fputs("\" alt=\"", f);
    art_html_write_text(f, alt);
    fputs("\" width=\"600\"></a><figcaption>", f);
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

static int write_html(const void *obj, FILE *f)
{
    const struct report *r = obj;
    char buf[512];
    fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n"
          "<meta charset=\"utf-8\">\n<title>", f);
    snprintf(buf, sizeof buf, "edgefit report: %s on %s",
             memest_model_name(r->model), r->device.name);
    art_html_write_text(f, buf);
    fputs("</title>\n<style>\n"
          "body{font-family:'DejaVu Sans',sans-serif;max-width:1300px;"
          "margin:1em auto;padding:0 1em;color:#222}\n"
          "h1{font-size:1.5em}h2{font-size:1.2em;border-bottom:1px solid "
          "#ccc;margin-top:1.6em}\n"
          ".verdict{background:#f4f7fb;border-left:4px solid #1f77b4;"
          "padding:.6em 1em}\n.verdict li{margin:.3em 0}\n"
          "table{border-collapse:collapse;font-size:.85em;margin:.6em 0}\n"
          "th,td{border:1px solid #ddd;padding:.2em .5em}\n"
          "th{background:#f0f0f0}td.num{text-align:right;"
          "font-variant-numeric:tabular-nums}\n"
          ".scroll{overflow-x:auto}\n"
          "figure{display:inline-block;margin:.5em;vertical-align:top}\n"
          "figure img{border:1px solid #ddd}\n"
          "figcaption{font-size:.85em;color:#555}\n"
          "</style>\n</head>\n<body>\n<h1>", f);
    art_html_write_text(f, buf);
    fputs("</h1>\n<div class=\"verdict\"><ul>\n", f);
    for (size_t i = 0; i < r->n_verdict; i++) {
        fputs("<li>", f);
        art_html_write_text(f, r->verdict[i]);
        fputs("</li>\n", f);
    }
    fputs("</ul></div>\n", f);

    snprintf(buf, sizeof buf,
             "%" PRIu64 " training and %" PRIu64 " test images; SGD, "
             "learning rate 0.1, batch 32, seed 42.",
             r->train.count, r->test.count);
    html_section(f, "Training", buf);
    html_figure(f, "training_curves.png",
                "Loss and accuracy per epoch, train and test");
    fputs("<div class=\"scroll\">", f);
    art_table_write_html(r->history, f, 4);
    fputs("</div>\n", f);

    snprintf(buf, sizeof buf,
             "Accepted: peak memory <= %.6g MB, test accuracy >= %.4f "
             "(fp32 at batch 1 minus the allowed drop)%s. Latency per batch "
             "measured on this machine; device_latency_ms from %s's "
             "roofline; energy_proxy_j = %.3g W x latency_ms.",
             r->memory_limit_mb, r->scfg.min_accuracy,
             isfinite(r->scfg.max_latency_ms) ? ", latency under the limit"
                                              : "",
             r->device.name, r->device.power_watts);
    html_section(f, "Precisions", buf);
    html_figure(f, "precision_tradeoffs.png",
                "Latency against accuracy per precision and batch");
    art_table_write_html(r->tradeoffs, f, 4);
    fputs("<div class=\"scroll\">", f);
    art_table_write_html(r->sweep_table, f, 4);
    fputs("</div>\n", f);

    html_section(f, "Layers", r->lw.regime_text);
    html_figure(f, "layerwise_activation_memory.png",
                "Activation memory per layer");
    html_figure(f, "layerwise_macs.png", "Compute per layer");
    html_figure(f, "roofline.png", "Roofline: measured here, predicted on "
                                   "the device");
    fputs("<div class=\"scroll\">", f);
    art_table_write_html(r->layers_brief, f, 4);
    fputs("</div>\n", f);

    html_section(f, "Files", "Everything in this folder.");
    fputs("<ul>\n", f);
    for (size_t i = 0; i < N_ARTIFACTS; i++) {
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

static int write_folder(const struct options *o, struct report *r)
{
    art_bundle *b = NULL;
    int st = art_bundle_create(o->co.out_dir, &b);
    st = st ? st : art_bundle_add(b, "report.html", write_html, r);
    st = st ? st : art_bundle_add_doc(b, "summary.json", r->summary);
    st = st ? st : art_bundle_add_csv(b, "training_history.csv", r->history);
    st = st ? st : art_bundle_add_figure(b, "training_curves.png",
                                         &r->tch.curves);
    st = st ? st : art_bundle_add_safetensors(b, "weights.safetensors",
                                              r->weights.tensors,
                                              r->weights.tensor_count);
    st = st ? st : art_bundle_add_csv(b, "sweep_results.csv", r->sweep_table);
    st = st ? st : art_bundle_add_csv(b, "precision_tradeoffs.csv",
                                      r->tradeoffs);
    st = st ? st : art_bundle_add_chart(b, "precision_tradeoffs.png",
                                        &r->sch.chart);
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
    struct art_diag diag = {0, "", 0};
    st = art_bundle_commit(b, &diag);
    art_doc_destroy(lj);
    if (st != ART_OK) {
        cli_error("%s", diag.message[0] ? diag.message : art_strerror(st));
        return CLI_EXIT_FAILURE;
    }
    return CLI_EXIT_OK;
}

int main(int argc, char **argv)
{
    cli_set_program("edgefit-report");
    struct options o;
    int rc = parse_args(argc, argv, &o);
    if (rc == CLI_EXIT_OK) {
        rc = cli_out_check(o.co.out_dir);
    }
    if (rc != CLI_EXIT_OK) {
        return rc;
    }
    struct report r;
    memset(&r, 0, sizeof r);
    if (o.dev.list) {
        return cli_devices_list_run(&o.dev, o.co.format);
    }
    struct progress p = {!o.co.quiet && isatty(STDERR_FILENO),
                         prof_now_ns()};
    phase(&p, 1, "reading the model, the device and the data");
    rc = prepare(&o, &r);
    if (rc == CLI_EXIT_OK) {
        phase(&p, 2, "training");
        rc = train(&o, &r, &p);
    }
    if (rc == CLI_EXIT_OK) {
        phase(&p, 3, "sweeping precisions and batches over the test set");
        rc = sweep(&o, &r, &p);
    }
    if (rc == CLI_EXIT_OK) {
        phase(&p, 4, "layer-wise analysis (host calibration, roofline)");
        rc = layerwise(&o, &r);
    }
    if (rc == CLI_EXIT_OK) {
        rc = layers_brief(&r);
    }
    if (rc == CLI_EXIT_OK) {
        rc = judge(&o, &r);
    }
    if (rc == CLI_EXIT_OK) {
        phase(&p, 5, "writing the folder");
        r.wall_s = (double)(prof_now_ns() - p.start_ns) * 1e-9;
        rc = build_summary(&o, &r);
    }
    if (rc == CLI_EXIT_OK) {
        rc = write_folder(&o, &r);
    }
    if (rc == CLI_EXIT_OK) {
        if (o.co.format == CLI_FORMAT_JSON) {
            if (art_doc_write(r.summary, stdout) != ART_OK) {
                rc = CLI_EXIT_FAILURE;
            }
        } else {
            printf("%s on %s:\n", memest_model_name(r.model), r.device.name);
            for (size_t i = 0; i < r.n_verdict; i++) {
                cli_print_wrapped(stdout, r.verdict[i], 2, 100);
            }
            printf("Everything is in %s/ (open report.html).\n",
                   o.co.out_dir);
        }
        rc = cli_stdout_finish(rc == CLI_EXIT_OK ? ART_OK : ART_E_IO);
    }
    if (rc == CLI_EXIT_OK && o.co.strict && r.accepted == 0) {
        cli_error("--strict: no configuration meets the constraints");
        rc = CLI_EXIT_CONSTRAINT;
    }
    report_free(&r);
    return rc;
}
