/* edgefit-report: the whole question in one run, on any model edgefit can
 * import (a preset, a text description, an ONNX file) and the user's own
 * data. Phases: read and check everything (model, weights, data, device)
 * before any work; train, when asked or when the model has no weights and
 * the data is labelled and fits it; sweep every precision and batch over
 * the data (accuracy with labels, agreement with reference outputs, or
 * memory and latency alone without data); analyse the layers of the
 * recommended configuration on this machine against the device's
 * roofline; write every table and chart into one folder with summary.json
 * and a static report.html; print the verdict. Each step is the shared
 * code of edgefit-train, edgefit-sweep and edgefit-layerwise
 * (apps/common); this file holds the options, the decisions and the
 * phrasing. */
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "calib.h"
#include "cli.h"
#include "data.h"
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
#define LINE_MAX_ 480
/* The largest batch the memory search tries: beyond it memory is said to
 * be no constraint rather than a cap printed as a batch. */
#define BATCH_SEARCH_CAP (UINT64_C(1) << 20)

enum train_mode { TRAIN_DEFAULT, TRAIN_YES, TRAIN_NO };

enum data_kind {
    DATA_NONE,      /* analysis only: memory, layers, device latency */
    DATA_LABELLED,  /* --data (or the default Fashion-MNIST): accuracy */
    DATA_REFERENCE, /* --test-data: agreement with reference outputs */
};

struct options {
    const char *model;
    const char *data, *test_data;
    bool no_data;
    enum train_mode train;
    uint64_t epochs;
    bool epochs_given;
    uint64_t threads;
    uint64_t train_limit, test_limit;
    uint64_t batch;            /* training and the sweep's largest batch */
    double max_latency_ms;
    double max_memory_mb;      /* NaN: the device's memory */
    double max_accuracy_drop;
    struct cli_device_opts dev;
    struct cli_calib_opts calib;
    struct cli_common co;
    int argc;
    char **argv;
};

static void usage(FILE *f)
{
    fprintf(f,
        "usage: edgefit-report [options]\n"
        "\n"
        "Does the model fit the device, how fast does it run there, and what\n"
        "does each precision cost? Reads the model and the data and checks\n"
        "them against each other, trains when there is something to train\n"
        "(the original's defaults: SGD, learning rate 0.1, batch 32, seed\n"
        "42), runs fp32, fp16, bf16 and int8 at batches 1, 8 and 32 over the\n"
        "data, analyses every layer of the recommended configuration on this\n"
        "machine against the device's roofline, writes every table and chart\n"
        "with summary.json and report.html into one folder, and prints the\n"
        "verdict.\n"
        "\n"
        "  --model SPEC           a preset (mlp:W0-...-Wn, smallcnn, resnet8,\n"
        "                         ds-cnn, mobilenetv1-0.25, fc-autoencoder), a\n"
        "                         text model or an ONNX file (default "
        DEFAULT_MODEL ")\n"
        "  --weights FILE         its weights: safetensors in PyTorch's\n"
        "                         state_dict names (an ONNX file has its own)\n"
        "  --data DIR             labelled data: IDX train-*/t10k-* files, or\n"
        "                         train_inputs.npy/train_labels.npy and\n"
        "                         test_inputs.npy/test_labels.npy (default,\n"
        "                         for a model of 784 inputs and 10 classes:\n"
        "                         %s)\n"
        "  --test-data DIR        reference outputs instead of labels: ONNX's\n"
        "                         test_data_set_N (input_0, output_0) or a\n"
        "                         folder of them; the sweep then reports the\n"
        "                         agreement with them (max and RMS error, top-1\n"
        "                         agreement for a classifier)\n"
        "  --no-data              analysis only: memory, layers and device\n"
        "                         latency, no accuracy\n"
        "  --train, --no-train    train or not (default: train when the model\n"
        "                         has no weights and the data is labelled)\n"
        "  --epochs N             training epochs (default 5; 0: no training)\n"
        "  --threads N            executor threads, 1 to 64 (default 1)\n"
        "  --device D             the device (default " DEFAULT_DEVICE ")\n"
        "  --devices FILE         devices of your own (a CSV, as for\n"
        "                         edgefit-layerwise)\n"
        "  --list-devices         print the catalogue and exit\n"
        "  --out DIR              the folder (default " DEFAULT_OUT ")\n"
        "  --train-limit N        the first N training samples (default all)\n"
        "  --test-limit N         the first N test samples (default all)\n"
        "  --max-latency-ms X     reject a configuration slower than X ms per\n"
        "                         batch on this machine (default: none)\n"
        "  --max-memory-mb X      reject one whose peak inference memory\n"
        "                         exceeds X MB (default: the device's memory)\n"
        "  --max-accuracy-drop X  reject one more than X below fp32's test\n"
        "                         accuracy at batch 1 (default 0.01); with\n"
        "                         --test-data, a classifier's top-1 agreement\n"
        "                         below 1 - X\n"
        "  --format F             table (the verdict) or json (summary.json)\n"
        "  --strict               exit 3 when no configuration is accepted\n"
        "  --quiet                no progress on stderr\n"
        CLI_CALIB_HELP
        "  --help, --version\n"
        "\n"
        "Every combination of model, weights and data is checked before any\n"
        "work: a mismatch exits 2 naming both shapes. Progress per phase goes\n"
        "to stderr on a terminal. Exit status: 0 success, 1 runtime failure,\n"
        "2 bad usage or input, 3 with --strict when no configuration is\n"
        "accepted.\n",
        prof_dataset_default_dir());
}

static const struct cli_app app = {"edgefit-report", EDGEFIT_VERSION, usage,
                                   cli_version_details};

static int parse_args(int argc, char **argv, struct options *o)
{
    enum { O_MODEL = 256, O_DATA, O_TEST_DATA, O_NO_DATA, O_TRAIN,
           O_NO_TRAIN, O_EPOCHS, O_THREADS, O_TRAIN_LIMIT, O_TEST_LIMIT,
           O_MAXLAT, O_MAXMEM, O_DROP };
    static const struct option longopts[] = {
        {"model", required_argument, NULL, O_MODEL},
        {"data", required_argument, NULL, O_DATA},
        {"test-data", required_argument, NULL, O_TEST_DATA},
        {"no-data", no_argument, NULL, O_NO_DATA},
        {"train", no_argument, NULL, O_TRAIN},
        {"no-train", no_argument, NULL, O_NO_TRAIN},
        {"epochs", required_argument, NULL, O_EPOCHS},
        {"threads", required_argument, NULL, O_THREADS},
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
    o->argc = argc;
    o->argv = argv;
    o->model = DEFAULT_MODEL;
    o->epochs = 5;
    o->threads = 1;
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
        case O_TEST_DATA:
            o->test_data = optarg;
            break;
        case O_NO_DATA:
            o->no_data = true;
            break;
        case O_TRAIN:
        case O_NO_TRAIN: {
            const enum train_mode m = c == O_TRAIN ? TRAIN_YES : TRAIN_NO;
            if (o->train != TRAIN_DEFAULT && o->train != m) {
                cli_error("--train and --no-train: give one");
                return CLI_EXIT_USAGE;
            }
            o->train = m;
            break;
        }
        case O_EPOCHS:
            if (!cli_parse_u64("--epochs", optarg, 0, 1000, &o->epochs)) {
                return CLI_EXIT_USAGE;
            }
            o->epochs_given = true;
            break;
        case O_THREADS:
            if (!cli_parse_u64("--threads", optarg, 1, 64, &o->threads)) {
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
    /* The combinations that cannot mean anything, before anything is
     * read. */
    if (o->data && o->test_data) {
        cli_error("--data and --test-data: give one (labelled data, or "
                  "reference outputs)");
        return CLI_EXIT_USAGE;
    }
    if (o->no_data && (o->data || o->test_data)) {
        cli_error("--no-data with %s: give one", o->data ? "--data"
                                                         : "--test-data");
        return CLI_EXIT_USAGE;
    }
    if (o->train == TRAIN_YES && o->epochs_given && o->epochs == 0) {
        cli_error("--train with --epochs 0: nothing would be trained");
        return CLI_EXIT_USAGE;
    }
    if (o->train == TRAIN_NO && o->epochs_given && o->epochs > 0) {
        cli_error("--no-train with --epochs %" PRIu64 ": give one",
                  o->epochs);
        return CLI_EXIT_USAGE;
    }
    if (o->train == TRAIN_YES && (o->test_data || o->no_data)) {
        cli_error("--train needs labelled data (--data DIR), not %s",
                  o->test_data ? "--test-data" : "--no-data");
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
    enum data_kind data;
    const char *data_dir;       /* what was read, for the page */
    bool classifier;
    struct prof_dataset train, test;
    bool training;              /* the training phase runs */
    const char *no_training;    /* why not, when it does not */
    bool has_weights;           /* from the file or --weights */
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
    bool have_chart;
    struct layerwise_opts lwo;
    struct layerwise lw;
    struct layerwise_charts lch;
    art_table *layers_brief;
    /* the verdict's figures, all in summary.json */
    const struct sweep_row *best;   /* the recommended configuration */
    const struct sweep_row *fp32_b1;
    const struct sweep_row *best_b; /* best's precision at --batch */
    double fp32_stderr;             /* fp32's accuracy's standard error */
    double memory_limit_mb;
    const char *limit_name;
    double fp32_b1_mb, fp32_batch_mb, smallest_b1_mb;
    const char *smallest_prec;      /* the precision of smallest_b1_mb */
    uint64_t largest_batch;         /* fp32 within the limit */
    bool memory_unconstrained;      /* fits even at BATCH_SEARCH_CAP */
    bool fits;                      /* some precision fits at batch 1 */
    size_t accepted;
    char verdict[VERDICT_LINES][LINE_MAX_];
    size_t n_verdict;
    /* the page's facts */
    char machine[256];
    char command[1024];
    char date[40];
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

/* Per-sample values of the model's input 0, and of its output. */
static uint64_t shape_elements(struct memest_shape s)
{
    uint64_t n = s.rank ? 1 : 0;
    for (unsigned i = 0; i < s.rank && i < 3; i++) {
        n *= s.dim[i];
    }
    return n;
}

/* The default data, Fashion-MNIST, answers only a model that reads one
 * 28 x 28 image (784 values) and gives 10 class scores; any other model
 * without --data is analysed without data rather than fed images it
 * cannot read. */
static bool takes_default_data(const memest_model *m)
{
    return memest_model_input_count(m) == 1 &&
           shape_elements(memest_model_input_shape(m)) == 784 &&
           shape_elements(memest_model_output_shape(m)) == 10 &&
           data_is_classifier(m);
}

/* The data: which kind, read and checked against the model. */
static int prepare_data(const struct options *o, struct report *r)
{
    int rc = CLI_EXIT_OK;
    if (o->test_data) {
        r->data = DATA_REFERENCE;
        r->data_dir = o->test_data;
        rc = data_load_reference(o->test_data, o->test_limit, &r->test);
        return rc ? rc : data_check(r->model, &r->test, "--test-data");
    }
    if (o->no_data || (!o->data && !takes_default_data(r->model))) {
        r->data = DATA_NONE;
        return CLI_EXIT_OK;
    }
    r->data = DATA_LABELLED;
    r->data_dir = o->data ? o->data : prof_dataset_default_dir();
    rc = data_load(o->data, DATA_TEST, o->test_limit, &r->test);
    return rc ? rc : data_check(r->model, &r->test, "--data");
}

/* Train or not, decided before any work: asked for, or by default when
 * there is labelled data and nothing to start from. */
static int prepare_training(const struct options *o, struct report *r)
{
    if (o->train == TRAIN_NO || o->epochs == 0) {
        r->no_training = o->train == TRAIN_NO ? "--no-train"
                                              : "--epochs 0";
        return CLI_EXIT_OK;
    }
    if (r->data != DATA_LABELLED) {
        if (o->train == TRAIN_YES) {
            cli_error("--train needs labelled data: %s", r->data == DATA_NONE
                      ? "the model does not read the default data "
                        "(784 values, 10 classes); give --data DIR"
                      : "give --data DIR");
            return CLI_EXIT_USAGE;
        }
        r->no_training = r->data == DATA_NONE ? "no data"
                                              : "reference outputs, no "
                                                "labels";
        return CLI_EXIT_OK;
    }
    if (o->train == TRAIN_DEFAULT && r->has_weights) {
        r->no_training = "the model has its weights; --train to fine-tune";
        return CLI_EXIT_OK;
    }
    r->training = true;
    int rc = data_load(o->data, DATA_TRAIN, o->train_limit, &r->train);
    rc = rc ? rc : data_check(r->model, &r->train, "--data");
    if (rc != CLI_EXIT_OK) {
        return rc;
    }
    if (r->train.count < o->batch) {
        cli_error("--train-limit: %" PRIu64 " training samples are fewer "
                  "than one batch of %" PRIu64, r->train.count, o->batch);
        return CLI_EXIT_USAGE;
    }
    struct prof_train_opts to;
    prof_train_opts_init(&to); /* the original's defaults */
    to.batch = o->batch;
    /* the trainer refuses a layer it has no backward for, by name: bad
     * input, said now rather than after the data is read */
    rc = cli_train_create(r->model, o->model, &to, &r->trainer,
                          &r->train_mem, &r->weights);
    if (rc == CLI_EXIT_OK) {
        /* --weights (or an ONNX model's own): the training starts there */
        rc = cli_train_start_from_model(r->trainer, r->model, &r->weights,
                                        o->co.weights ? o->co.weights
                                                      : o->model);
    }
    return rc;
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
    int rc = cli_model_load(o->model, o->co.weights, &r->model);
    if (rc != CLI_EXIT_OK) {
        return rc;
    }
    r->has_weights = memest_model_has_weights(r->model) != 0;
    r->classifier = data_is_classifier(r->model);
    rc = prepare_data(o, r);
    return rc ? rc : prepare_training(o, r);
}

static int train(const struct options *o, struct report *r,
                 const struct progress *p)
{
    int rc = cli_train_epochs(r->trainer, &r->train, &r->test, o->epochs,
                              p->on, &r->log);
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

/* Without data the sweep still measures memory and latency: it runs one
 * sample of zeros of the model's input shape against a reference of
 * zeros, and what it would compare is no agreement at all, so the rows
 * carry none (sweep() clears it). */
static int no_data_set(const struct report *r, struct prof_dataset *d)
{
    const struct memest_shape s = memest_model_input_shape(r->model);
    const struct memest_shape os = memest_model_output_shape(r->model);
    uint64_t shape[3], oshape[3];
    for (unsigned i = 0; i < s.rank && i < 3; i++) {
        shape[i] = s.dim[i];
    }
    for (unsigned i = 0; i < os.rank && i < 3; i++) {
        oshape[i] = os.dim[i];
    }
    struct prof_diag diag = {0};
    const int st = prof_dataset_init(d, 1, s.rank, shape, false, os.rank,
                                     oshape, "no data", &diag);
    return st == PROF_OK ? CLI_EXIT_OK
                         : cli_prof_failed("the model's input", st, &diag);
}

static int sweep(const struct options *o, struct report *r,
                 const struct progress *p)
{
    sweep_config_init(&r->scfg);
    r->scfg.device = r->device;
    r->scfg.threads = (unsigned)o->threads;
    r->memory_limit_mb = isnan(o->max_memory_mb)
        ? (r->device.memory_mb > 0 ? r->device.memory_mb : INFINITY)
        : o->max_memory_mb;
    r->scfg.max_memory_mb = r->memory_limit_mb;
    r->scfg.max_latency_ms = o->max_latency_ms;
    if (p->on) {
        r->scfg.progress = sweep_progress;
    }
    struct prof_dataset zeros = {0};
    const struct prof_dataset *set = &r->test;
    if (r->data == DATA_NONE) {
        const int rc = no_data_set(r, &zeros);
        if (rc != CLI_EXIT_OK) {
            return rc;
        }
        set = &zeros;
    }
    const bool ok = sweep_run(r->model, r->training ? &r->weights : NULL,
                              set, &r->scfg, &r->sweep);
    prof_dataset_finish(&zeros);
    if (p->on) {
        fputs("\r\033[K", stderr);
    }
    if (!ok) {
        return CLI_EXIT_FAILURE;
    }
    if (r->data == DATA_NONE) {
        for (size_t i = 0; i < r->sweep.n; i++) {
            r->sweep.rows[i].accuracy = NAN;
            r->sweep.rows[i].accuracy_stderr = NAN;
            r->sweep.rows[i].max_abs_error = NAN;
            r->sweep.rows[i].rms_error = NAN;
            r->sweep.rows[i].top1_agreement = NAN;
            r->sweep.rows[i].samples = 0;
        }
    }
    r->fp32_b1 = row_of(r, "fp32", 1);
    /* The accuracy bar is fp32's at batch 1, known only now; without
     * labels there is none (NaN: no accuracy constraint). */
    r->scfg.min_accuracy = NAN;
    if (r->data == DATA_LABELLED && r->fp32_b1) {
        r->scfg.min_accuracy =
            fmax(0, r->fp32_b1->accuracy - o->max_accuracy_drop);
        r->fp32_stderr = data_accuracy_stderr(r->fp32_b1->accuracy,
                                              r->fp32_b1->samples);
    }
    sweep_judge(&r->sweep, &r->scfg);
    /* Against reference outputs a classifier's top-1 agreement is its
     * accuracy relative to the reference: the same allowed drop. */
    for (size_t i = 0; r->data == DATA_REFERENCE && r->classifier &&
                       i < r->sweep.n; i++) {
        struct sweep_row *w = &r->sweep.rows[i];
        if (!(w->top1_agreement >= 1.0 - o->max_accuracy_drop)) {
            const size_t len = strlen(w->rejected_by);
            snprintf(w->rejected_by + len, sizeof w->rejected_by - len,
                     "%sagreement", len ? "," : "");
            w->accepted = false;
        }
    }
    r->sweep_table = sweep_results_table(&r->sweep);
    if (!r->sweep_table) {
        cli_error("building sweep_results.csv: out of memory");
        return CLI_EXIT_FAILURE;
    }
    /* The trade-off table is of accuracy (labels only); the chart draws
     * accuracy, or the error against reference outputs. */
    if (r->data == DATA_LABELLED) {
        r->tradeoffs = sweep_tradeoff_table(&r->sweep);
        if (!r->tradeoffs) {
            return CLI_EXIT_FAILURE;
        }
    }
    if (r->data != DATA_NONE) {
        if (!sweep_chart_init(&r->sweep, &r->sch)) {
            return CLI_EXIT_FAILURE;
        }
        r->have_chart = true;
    }
    /* The recommended configuration: accepted, at batch 1 (one input as
     * it arrives), the fastest on the device by the roofline (a
     * deterministic figure), then the smaller memory. */
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
    if (r->best) {
        r->best_b = row_of(r, r->best->precision, o->batch);
    }
    return CLI_EXIT_OK;
}

/* The layers of the recommended configuration (fp32 at the batch when
 * none is accepted): the verdict's Bound line describes what it
 * recommends. */
static int layerwise(const struct options *o, struct report *r)
{
    enum memest_precision prec = MEMEST_FP32;
    if (r->best && memest_precision_parse(r->best->precision, &prec) !=
                       MEMEST_OK) {
        prec = MEMEST_FP32;
    }
    r->lwo = (struct layerwise_opts){
        .model = o->model, .weights = o->co.weights,
        .batch = r->best ? r->best->batch : o->batch, .precision = prec,
        .dev = o->dev, .repeats = 5, .warmup = 2, .min_sample_ms = 0.05,
        .latency_multiplier = 1.0, .seed = 42,
        .threads = (unsigned)o->threads, .calib = o->calib,
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

/* The key columns of the layer breakdown, for the page: few enough that
 * the table fits its width. */
static int layers_brief(struct report *r)
{
    static const char *const names[] = {
        "layer", "kind", "output_shape", "activation_bytes", "macs",
        "latency_ms", "predicted_ms", "bound"};
    enum { N = sizeof names / sizeof names[0] };
    art_table *t = NULL;
    int st = art_table_create("layers", &t);
    long src[N];
    for (size_t c = 0; st == ART_OK && c < N; c++) {
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
        for (size_t c = 0; st == ART_OK && c < N; c++) {
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
            case ART_INT: {
                int64_t v;
                st = art_table_get_int(r->lw.layers, i, sc, &v);
                st = st ? st : art_table_set_int(t, row, c, v);
                break;
            }
            case ART_UINT: {
                uint64_t v;
                st = art_table_get_uint(r->lw.layers, i, sc, &v);
                st = st ? st : art_table_set_uint(t, row, c, v);
                break;
            }
            case ART_REAL: {
                double v;
                st = art_table_get_real(r->lw.layers, i, sc, &v);
                st = st ? st : art_table_set_real(t, row, c, v);
                break;
            }
            case ART_BOOL: {
                bool v;
                st = art_table_get_bool(r->lw.layers, i, sc, &v);
                st = st ? st : art_table_set_bool(t, row, c, v);
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

/* Every number a verdict line prints is a field of summary.json, rounded
 * as printed (test_vocabulary holds them against each other): no line
 * derives a figure the file does not hold. */

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

/* Two significant digits without an exponent: the device's latency is
 * the roofline's lower bound, no more precise than that. */
static const char *sig2(char *buf, size_t len, double v)
{
    if (!isfinite(v) || v <= 0) {
        snprintf(buf, len, "%g", v);
        return buf;
    }
    const int mag = (int)floor(log10(v));
    const int decimals = mag >= 1 ? 0 : 1 - mag;
    /* rounding may carry into the next decade: 0.0996 -> 0.10 */
    snprintf(buf, len, "%.*f", decimals, v);
    if (mag >= 1) {
        const double unit = pow(10.0, mag - 1);
        snprintf(buf, len, "%.0f", round(v / unit) * unit);
    }
    return buf;
}

/* Peak inference memory (parameters + planned arena), the one measure of
 * every memory sentence and of the sweep's memory_mb. */
static double peak_mb(const memest_model *m, uint64_t batch,
                      enum memest_precision p)
{
    struct memest_totals t;
    return memest_estimate_totals(m, batch, p, &t) == MEMEST_OK
               ? t.peak_inference_mb
               : INFINITY;
}

/* The largest batch in [1, cap] whose peak fits limit_mb (0 if none):
 * the peak grows with the batch, so a binary search. */
static uint64_t largest_batch(const memest_model *m, double limit_mb,
                              enum memest_precision p, uint64_t cap)
{
    if (!(peak_mb(m, 1, p) <= limit_mb)) {
        return 0;
    }
    uint64_t lo = 1, hi = cap;
    while (lo < hi) {
        const uint64_t mid = lo + (hi - lo + 1) / 2;
        if (peak_mb(m, mid, p) <= limit_mb) {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    return lo;
}

static void judge_memory(const struct options *o, struct report *r)
{
    const double lim = r->memory_limit_mb;
    r->fp32_b1_mb = peak_mb(r->model, 1, MEMEST_FP32);
    r->fp32_batch_mb = peak_mb(r->model, o->batch, MEMEST_FP32);
    r->smallest_b1_mb = INFINITY;
    for (size_t i = 0; i < r->scfg.n_precisions; i++) {
        const double mb = peak_mb(r->model, 1, r->scfg.precisions[i]);
        if (mb < r->smallest_b1_mb) {
            r->smallest_b1_mb = mb;
            r->smallest_prec = memest_precision_name(r->scfg.precisions[i]);
        }
    }
    r->limit_name = !isnan(o->max_memory_mb) ? "--max-memory-mb"
                                             : "the device's memory";
    r->fits = !(r->smallest_b1_mb > lim);
    char train[160] = "";
    if (r->training) {
        const double mb = (double)r->train_mem.total_bytes / 1048576.0;
        snprintf(train, sizeof train, "; training at batch %" PRIu64
                 " needs %.3g MB%s", o->batch, mb,
                 mb > lim ? ", over the limit" : "");
    }
    if (!isfinite(lim)) {
        say(r, "Memory: no limit known (%s's memory is not in the "
            "catalogue; --max-memory-mb sets one): fp32 inference needs "
            "%.3g MB at batch 1 and %.3g MB at batch %" PRIu64 " (peak "
            "inference memory: parameters + arena)%s.", r->device.name,
            r->fp32_b1_mb, r->fp32_batch_mb, o->batch, train);
        return;
    }
    if (!r->fits) {
        say(r, "Memory: DOES NOT FIT: even %s at batch 1 needs %.3g MB of "
            "peak inference memory, over the %.6g MB limit (%s)%s.",
            r->smallest_prec, r->smallest_b1_mb, lim, r->limit_name, train);
        return;
    }
    r->largest_batch = largest_batch(r->model, lim, MEMEST_FP32,
                                     BATCH_SEARCH_CAP);
    r->memory_unconstrained = r->largest_batch == BATCH_SEARCH_CAP;
    if (r->largest_batch == 0) {
        /* fp32 does not fit, a smaller precision does */
        const char *prec = r->best ? r->best->precision : r->smallest_prec;
        const double mb = r->best ? r->best->memory_mb : r->smallest_b1_mb;
        say(r, "Memory: fits the %.6g MB limit (%s) only below fp32: %s "
            "at batch 1 needs %.3g MB of peak inference memory, fp32 "
            "%.3g MB%s.", lim, r->limit_name, prec, mb, r->fp32_b1_mb,
            train);
    } else if (r->memory_unconstrained) {
        say(r, "Memory: not a constraint: fp32 inference needs %.3g MB at "
            "batch %" PRIu64 " (peak inference memory: parameters + "
            "arena) of the %.6g MB limit (%s)%s.", r->fp32_batch_mb,
            o->batch, lim, r->limit_name, train);
    } else {
        say(r, "Memory: fits the %.6g MB limit (%s): fp32 inference needs "
            "%.3g MB of peak inference memory at batch 1, fits up to batch "
            "%" PRIu64 ", and needs %.3g MB at batch %" PRIu64 "%s%s.",
            lim, r->limit_name, r->fp32_b1_mb, r->largest_batch,
            r->fp32_batch_mb, o->batch,
            r->fp32_batch_mb > lim ? ", over the limit" : "", train);
    }
}

/* The accuracy of the recommended configuration against fp32's, with the
 * test set's standard error: a smaller difference is noise. */
static void judge_precision(const struct options *o, struct report *r)
{
    (void)o;
    const struct sweep_row *b = r->best, *f = r->fp32_b1;
    if (!b) {
        say(r, "Precision: NO configuration meets the constraints "
            "(memory <= %.6g MB%s%s): see sweep_results.csv, column "
            "rejected_by.", r->memory_limit_mb,
            isnan(r->scfg.min_accuracy) ? "" : ", accuracy >= fp32's "
            "minus the allowed drop",
            isfinite(o->max_latency_ms) ? ", latency limit" : "");
        return;
    }
    switch (r->data) {
    case DATA_LABELLED: {
        const double diff = b->accuracy - f->accuracy;
        char delta[200];
        if (b == f) {
            snprintf(delta, sizeof delta, "fp32 itself");
        } else if (fabs(diff) < r->fp32_stderr) {
            snprintf(delta, sizeof delta, "against fp32's %.4f: the %.2f "
                     "point difference is below the test set's standard "
                     "error of %.2f points, noise", f->accuracy,
                     100.0 * fabs(diff), 100.0 * r->fp32_stderr);
        } else {
            snprintf(delta, sizeof delta, "%.2f points %s fp32's %.4f "
                     "(standard error %.2f points)", 100.0 * fabs(diff),
                     diff < 0 ? "below" : "above", f->accuracy,
                     100.0 * r->fp32_stderr);
        }
        say(r, "Precision: %s is the best accepted at batch 1 (%zu of %zu "
            "configurations accepted): test accuracy %.4f, %s; memory "
            "%.3g MB instead of fp32's %.3g MB.", b->precision, r->accepted,
            r->sweep.n, b->accuracy, delta, b->memory_mb, f->memory_mb);
        break;
    }
    case DATA_REFERENCE: {
        char top1[80] = "";
        if (r->classifier) {
            snprintf(top1, sizeof top1, ", top-1 agreement %.4f",
                     b->top1_agreement);
        }
        say(r, "Precision: %s is the best accepted at batch 1 (%zu of %zu "
            "configurations accepted): against the reference outputs, "
            "max error %.3g, rmse %.3g%s (fp32: max %.3g, rmse %.3g)%s; "
            "memory %.3g MB instead of fp32's %.3g MB.", b->precision,
            r->accepted, r->sweep.n, b->max_abs_error, b->rms_error, top1,
            f->max_abs_error, f->rms_error,
            r->classifier ? "" : ", reported, not judged: the model is "
                                 "not a classifier",
            b->memory_mb, f->memory_mb);
        break;
    }
    case DATA_NONE:
        say(r, "Precision: no data given: no accuracy. %s at batch 1 is "
            "the fastest within the limits (%zu of %zu configurations "
            "accepted, on memory and latency alone): %.3g MB instead of "
            "fp32's %.3g MB; what it costs in accuracy is unknown.",
            b->precision, r->accepted, r->sweep.n, b->memory_mb,
            f->memory_mb);
        break;
    }
}

static void judge_training(const struct report *r, struct report *w)
{
    if (!r->training) {
        const char *weights = r->has_weights
            ? "its own weights"
            : "seeded random weights, so any accuracy is chance";
        say(w, "Training: none (%s); the model runs on %s.", r->no_training,
            weights);
        return;
    }
    const size_t n = r->log.done;
    if (n == 0) {
        return;
    }
    const struct prof_train_epoch_result *last = &r->log.epochs[n - 1];
    const double test_acc = r->log.test_accuracy[n - 1];
    const double gain = n > 1 ? test_acc - r->log.test_accuracy[n - 2]
                              : NAN;
    const char *trend = "levelled off";
    if (last->train_accuracy - test_acc > 0.05) {
        trend = "overfitting: train accuracy well above test";
    } else if (n == 1) {
        trend = "one epoch: no trend yet";
    } else if (gain > 0.005) {
        trend = "still improving in the last epoch: more epochs may help";
    } else if (gain < -0.005) {
        trend = "the last epoch lost accuracy: see training_history.csv";
    }
    say(w, "Training: %zu epoch%s in %.3g s, train loss %.4f, train "
        "accuracy %.4f, test accuracy %.4f (%s).", n, n == 1 ? "" : "s",
        r->log.elapsed_s, last->loss, last->train_accuracy, test_acc, trend);
}

static int judge(const struct options *o, struct report *r)
{
    if (r->data == DATA_NONE) {
        say(r, "Data: no data given: no accuracy. Memory, layers and "
            "device latency only (--data DIR for labelled data, "
            "--test-data DIR for reference outputs).");
    }
    judge_memory(o, r);
    judge_precision(o, r);
    const struct sweep_row *b = r->best;
    if (b) {
        char ms[32], mj[32], per[32];
        const double e_j = r->device.power_watts > 0
            ? r->device.power_watts * b->device_latency_ms / 1000.0
            : NAN;
        char energy[160] = "";
        if (isfinite(e_j)) {
            snprintf(energy, sizeof energy, ", energy at least %s mJ at "
                     "%.3g W over that time (the sweep's energy_proxy_j "
                     "uses this machine's latency)",
                     sig2(mj, sizeof mj, 1000.0 * e_j),
                     r->device.power_watts);
        }
        char batch[120] = "";
        if (r->best_b && r->best_b != b) {
            snprintf(batch, sizeof batch, "; at batch %" PRIu64 " at least "
                     "%s ms per input", r->best_b->batch,
                     sig2(per, sizeof per, r->best_b->device_latency_ms /
                                               (double)r->best_b->batch));
        }
        say(r, "On %s (roofline lower bound): at least %s ms per input at "
            "%s batch 1%s%s.", r->device.name,
            sig2(ms, sizeof ms, b->device_latency_ms), b->precision, energy,
            batch);
    }
    say(r, "Bound (%s, batch %" PRIu64 ", %u thread%s%s): %s.",
        memest_precision_name(r->lwo.precision), r->lwo.batch,
        r->lwo.threads, r->lwo.threads == 1 ? "" : "s",
        b ? ", the recommended configuration" : ", none is accepted",
        r->lw.regime_text);
    judge_training(r, r);
    return CLI_EXIT_OK;
}

/* ---- the facts of the run: machine, command, date -------------------------- */

static void run_facts(const struct options *o, struct report *r)
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

static int build_summary(const struct options *o, struct report *r)
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
    const struct sweep_row *fb = row_of(r, "fp32", o->batch);
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
        st = st ? st : art_doc_set_real(
                           best, "device_energy_j",
                           r->device.power_watts > 0
                               ? r->device.power_watts *
                                     r->best->device_latency_ms / 1000.0
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
                  "reference outputs: max_abs_error and rms_error (and "
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
             "latency_ms.", measure, r->memory_limit_mb,
             isnan(r->scfg.min_accuracy)
                 ? ""
                 : ", test accuracy at least fp32's at batch 1 minus the "
                   "allowed drop",
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

static int write_folder(const struct options *o, struct report *r)
{
    art_bundle *b = NULL;
    int st = art_bundle_create(o->co.out_dir, &b);
    st = st ? st : art_bundle_add(b, "report.html", write_html, r);
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
    phase(&p, 1, "reading and checking the model, the device and the data");
    rc = prepare(&o, &r);
    if (rc == CLI_EXIT_OK && r.training) {
        phase(&p, 2, "training");
        rc = train(&o, &r, &p);
    }
    if (rc == CLI_EXIT_OK) {
        phase(&p, 3, r.data == DATA_NONE
                         ? "timing precisions and batches (no data)"
                         : "sweeping precisions and batches over the data");
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
        run_facts(&o, &r);
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
