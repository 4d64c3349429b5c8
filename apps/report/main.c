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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "data.h"
#include "validate.h"
#include "report.h"

#define DEFAULT_MODEL "mlp:784-64-10"
#define DEFAULT_DEVICE "rpi4"
#define DEFAULT_OUT "edgefit-report"
#define PHASES 5

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
        "data (int8 is static int8: its activation ranges calibrated once on\n"
        "the first 512 training samples, or --calibration-data), analyses every layer of the recommended configuration on this\n"
        "machine against the device's roofline, writes every table and chart\n"
        "with summary.json and report.html into one folder, and prints the\n"
        "verdict.\n"
        "\n"
        "  --model SPEC           a preset (mlp:W0-...-Wn, smallcnn, resnet8,\n"
        "                         ds-cnn, mobilenetv1-0.25, fc-autoencoder,\n"
        "                         kwt, lstm-kws), a\n"
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
        "                         edgefit-layerwise; fitted device models\n"
        "                         of edgefit-device give the verdict a\n"
        "                         device latency with its interval)\n"
        "  --runtime NAME         the fitted model of --device to use\n"
        "  --list-devices         print the catalogue and exit\n"
        "  --out DIR              the folder (default " DEFAULT_OUT ")\n"
        "                         (replaced whole: a kill or a full disk leaves the old\n"
        "                         folder or the new one; '.', a mount point and a\n"
        "                         folder holding a folder are refused)\n"
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
        CLI_CALIBRATION_HELP
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
        CLI_CALIBRATION_OPTIONS,
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
    calibration_opts_init(&o->cal);
    opterr = 0;
    if (cli_refuse_repeats(argc, argv, longopts, NULL) != CLI_EXIT_OK) {
        return CLI_EXIT_USAGE;
    }
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
            const int k = calibration_option(c, optarg, &o->cal);
            if (k < 0) {
                return CLI_EXIT_USAGE;
            }
            if (k > 0) {
                break;
            }
            const int rc = cli_shared_option(c, &o->calib, &o->dev, &app, argv,
                                             &o->co);
            if (rc != CLI_EXIT_OK) {
                return rc;
            }
            break;
        }
        }
    }
    if (calibration_check(&o->cal) != CLI_EXIT_OK) {
        return CLI_EXIT_USAGE;
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
    prof_ranges_finish(&r->ranges);
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
           validate_is_classifier(m);
}

/* The data: which kind, read and checked against the model. */
static int prepare_data(const struct options *o, struct report *r)
{
    int rc = CLI_EXIT_OK;
    if (o->test_data) {
        r->data = DATA_REFERENCE;
        r->data_dir = o->test_data;
        rc = data_load_reference(o->test_data, o->test_limit, r->model,
                                 &r->test);
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
    r->classifier = validate_is_classifier(r->model);
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

const struct sweep_row *report_row(const struct report *r,
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

/* Static int8's ranges for the sweep: --calibration-data or
 * --calibration-file, else the first --calibration-samples training
 * samples (the ones just trained on, or the training split of --data),
 * else the test set's inputs (reference outputs, no training split), else
 * (no data) the zero sample the sweep times, said so: timing does not
 * depend on the values. Calibration runs the model's own weights, so the
 * trained ones are given to it first. */
static int report_ranges(const struct options *o, struct report *r,
                         const struct prof_dataset *set)
{
    bool int8 = false;
    for (size_t i = 0; i < r->scfg.n_precisions; i++) {
        int8 = int8 || r->scfg.precisions[i] == MEMEST_INT8;
    }
    if (!int8) {
        return CLI_EXIT_OK;
    }
    int rc = CLI_EXIT_OK;
    if (r->training) {
        rc = cli_weights_to_model(&r->weights, r->model);
        if (rc != CLI_EXIT_OK) {
            return rc;
        }
    }
    struct prof_dataset train = {0};
    const struct prof_dataset *fallback = NULL;
    const char *what = NULL;
    if (!calibration_given(&o->cal)) {
        switch (r->data) {
        case DATA_LABELLED:
            if (r->training) {
                fallback = &r->train;
                what = "training samples";
            } else if (!data_has_split(o->data, DATA_TRAIN)) {
                fallback = set;
                what = "test samples (--data has no training split)";
            } else {
                rc = data_load(o->data, DATA_TRAIN, o->cal.samples, &train);
                fallback = &train;
                what = "training samples";
            }
            break;
        case DATA_REFERENCE:
            fallback = set;
            what = "test samples (--test-data has no training split)";
            break;
        case DATA_NONE:
            fallback = set;
            what = "zero samples (no data: int8's latency and memory do "
                   "not depend on the values)";
            break;
        }
    }
    if (rc == CLI_EXIT_OK) {
        rc = calibration_ranges(r->model, &o->cal, fallback, what, &r->ranges,
                                r->int8_calibration,
                                sizeof r->int8_calibration);
    }
    prof_dataset_finish(&train);
    if (rc == CLI_EXIT_OK) {
        r->scfg.ranges = calibration_exec_ranges(&r->ranges);
        r->scfg.int8_requant = o->cal.requant;
        r->scfg.calibration = r->int8_calibration;
    }
    return rc;
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
    /* A file that fixes its batch runs at that batch only, as it would
     * be deployed. */
    r->fixed_batch = memest_model_fixed_batch(r->model);
    r->first_batch = 1;
    r->batch = o->batch;
    if (r->fixed_batch > 0) {
        r->scfg.batches[0] = r->fixed_batch;
        r->scfg.n_batches = 1;
        r->first_batch = r->batch = r->fixed_batch;
    }
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
    int rc = report_ranges(o, r, set);
    if (rc != CLI_EXIT_OK) {
        prof_dataset_finish(&zeros);
        return rc;
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
    r->fp32_b1 = report_row(r, "fp32", r->first_batch);
    /* The accuracy bar is fp32's at the first batch, known only now; without
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
     * it arrives; a fixed batch otherwise), the fastest on the device by
     * the roofline (a deterministic figure), then the smaller memory. */
    for (size_t i = 0; i < r->sweep.n; i++) {
        const struct sweep_row *w = &r->sweep.rows[i];
        r->accepted += w->accepted;
        if (!w->accepted || w->batch != r->first_batch) {
            continue;
        }
        if (!r->best || w->device_latency_ms < r->best->device_latency_ms ||
            (w->device_latency_ms == r->best->device_latency_ms &&
             w->memory_mb < r->best->memory_mb)) {
            r->best = w;
        }
    }
    if (r->best) {
        r->best_b = report_row(r, r->best->precision, r->batch);
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
        .batch = r->best ? r->best->batch : r->batch, .have_batch = true,
        .precision = prec,
        .dev = o->dev, .repeats = 5, .warmup = 2, .min_sample_ms = 0.05,
        .latency_multiplier = 1.0, .seed = 42,
        .threads = (unsigned)o->threads, .calib = o->calib,
        .quiet = o->co.quiet, .cal = o->cal};
    /* static int8: the sweep's ranges (the model's tensors are the same) */
    if (prec == MEMEST_INT8 && r->scfg.ranges) {
        r->lwo.ranges = r->scfg.ranges;
        r->lwo.calibration = r->scfg.calibration;
    }
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


int main(int argc, char **argv)
{
    cli_set_program("edgefit-report");
    struct options o;
    int rc = parse_args(argc, argv, &o);
    if (rc == CLI_EXIT_OK) {
        rc = cli_out_check(o.co.out_dir);
    }
    if (rc != CLI_EXIT_OK) {
        return cli_exit(rc);
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
        rc = report_judge(&o, &r);
    }
    if (rc == CLI_EXIT_OK) {
        phase(&p, 5, "writing the folder");
        report_facts(&o, &r);
        r.wall_s = (double)(prof_now_ns() - p.start_ns) * 1e-9;
        rc = report_summary(&o, &r);
    }
    if (rc == CLI_EXIT_OK) {
        rc = report_write(&o, &r);
    }
    if (rc == CLI_EXIT_OK) {
        if (o.co.format == CLI_FORMAT_JSON) {
            if (art_doc_write_rounded(r.summary, stdout, cli_round_file) !=
                ART_OK) {
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
    return cli_exit(rc);
}
