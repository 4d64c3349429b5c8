/* edgefit-train: train a model on labelled images (Fashion-MNIST by default)
 * under the original hardware simulation's constraints: a batch fitted to a
 * memory budget, a slowdown factor and a precision (fp32, fp16 or bf16
 * mixed precision, or int8 by post-training quantisation). */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "calib.h"
#include "calibration.h"
#include "cli.h"
#include "data.h"
#include "table.h"
#include "edgefit/artifacts.h"
#include "edgefit/kernels.h"
#include "edgefit/memest.h"
#include "edgefit/profile.h"
#include "model.h"
#include "train_charts.h"
#include "training.h"
#include "weights.h"
#include "alloc_rec.h" /* last: it wraps malloc and co. */

#define DEFAULT_MODEL "mlp:784-64-10"
#define DEFAULT_WEIGHTS "weights.safetensors"

struct options {
    const char *model;
    uint64_t epochs;
    double alpha;
    uint64_t batch;
    uint64_t seed;
    enum memest_optimizer optimizer;
    enum memest_precision precision;
    bool simulate;
    double max_memory_mb;
    double speed_factor;
    uint64_t batch_limit;
    double loss_scale;
    bool sleep;
    uint64_t threads;
    const char *data;         /* NULL: the default folder */
    uint64_t train_limit;     /* 0: all */
    uint64_t test_limit;
    const char *save_weights; /* NULL: DEFAULT_WEIGHTS in --out, if any */
    const char *init_weights;
    struct calibration_opts cal; /* int8's ranges */
    struct cli_common co;
};

static void usage(FILE *f)
{
    fprintf(f,
        "usage: edgefit-train [options]\n"
        "\n"
        "Train a model on labelled images (Fashion-MNIST by default) under\n"
        "simulated device constraints: the batch fitted to a memory budget, a\n"
        "slowdown factor, and a precision (fp32; fp16 or bf16 mixed precision\n"
        "with fp32 master weights; int8 by post-training quantisation).\n"
        "\n"
        "  --model SPEC          a model file, mlp:W0-W1-...-Wn or smallcnn\n"
        "                        ending in softmax (default " DEFAULT_MODEL ")\n"
        "  --epochs N            passes over the training set (default 5; 0\n"
        "                        trains nothing and evaluates the weights)\n"
        "  --alpha X             learning rate (default 0.1)\n"
        "  --batch N             requested batch size (default 32)\n"
        "  --seed N              initial weights and shuffles (default 42)\n"
        "  --optimizer O         sgd|momentum|adam (default sgd; momentum 0.9,\n"
        "                        adam 0.9, 0.999, 1e-8)\n"
        "  --precision P         fp32|fp16|bf16|int8|int8-dynamic (default\n"
        "                        fp32); int8 trains in fp32, then quantises\n"
        "                        statically (ranges calibrated on the first\n"
        "                        512 training samples, or as below) and\n"
        "                        reports the fp32 and int8 test accuracy;\n"
        "                        int8-dynamic re-quantises every tensor with\n"
        "                        its own range instead\n"
        CLI_CALIBRATION_HELP
        "  --simulate            fit the batch to the memory budget (the\n"
        "                        original run plan and its warnings)\n"
        "  --max-memory-mb X     the budget in MB (1 MB = 1024^2 bytes) of\n"
        "                        parameters + activations at the precision;\n"
        "                        implies --simulate (default 512)\n"
        "  --batch-limit N       upper bound on the fitted batch (default 128)\n"
        "  --speed-factor X      simulated slowdown: artificial_delay_s =\n"
        "                        training_time_s * (X - 1) when X > 1\n"
        "                        (default 1)\n"
        "  --sleep               really sleep for the delay (default: only\n"
        "                        count it)\n"
        "  --loss-scale X        initial fp16 loss scale in [1, 65536]\n"
        "                        (default 1024)\n"
        "  --threads N           worker threads of the trainer (default 1)\n"
        "  --data DIR            IDX files train-* and t10k-*, gzipped or not\n"
        "                        (default %s),\n"
        "                        or train_inputs.npy / test_inputs.npy [N, ...]\n"
        "                        float32 with train_labels.npy /\n"
        "                        test_labels.npy [N] integers\n"
        "  --train-limit N       use the first N training images (default all)\n"
        "  --test-limit N        use the first N test images (default all)\n"
        "  --init-weights FILE   start from a safetensors file (PyTorch names\n"
        "                        and layouts; F32, F16 or BF16)\n"
        "  --save-weights FILE   where the trained weights go (default\n"
        "                        " DEFAULT_WEIGHTS " in --out; a bare name is\n"
        "                        a file of --out)\n"
        "  --out DIR             write run_log.json, training_history.csv,\n"
        "                        training_curves.png (loss_scale.png for\n"
        "                        fp16) and the weights\n"
        "                        (replaced whole: a kill or a full disk leaves the old\n"
        "                        folder or the new one; '.', a mount point and a folder\n"
        "                        holding a folder are refused)\n"
        "  --format F            table|csv|json on stdout (default table)\n"
        "  --quiet               no progress bar\n"
        "  --help, --version\n"
        "\n"
        "A progress bar (step, loss, ETA) is drawn on stderr when it is a\n"
        "terminal. Exit status: 0 success, 1 runtime failure, 2 bad usage or\n"
        "input.\n",
        prof_dataset_default_dir());
}

static int parse_args(int argc, char **argv, struct options *o)
{
    enum { O_MODEL = 256, O_EPOCHS, O_ALPHA, O_BATCH, O_SEED, O_OPT,
           O_PRECISION, O_SIMULATE, O_MAXMEM, O_LIMIT, O_SPEED, O_SLEEP,
           O_SCALE, O_THREADS, O_DATA, O_TRAIN_LIMIT, O_TEST_LIMIT,
           O_SAVE, O_INIT };
    static const struct option longopts[] = {
        {"model", required_argument, NULL, O_MODEL},
        {"epochs", required_argument, NULL, O_EPOCHS},
        {"alpha", required_argument, NULL, O_ALPHA},
        {"batch", required_argument, NULL, O_BATCH},
        {"seed", required_argument, NULL, O_SEED},
        {"optimizer", required_argument, NULL, O_OPT},
        {"precision", required_argument, NULL, O_PRECISION},
        {"simulate", no_argument, NULL, O_SIMULATE},
        {"max-memory-mb", required_argument, NULL, O_MAXMEM},
        {"batch-limit", required_argument, NULL, O_LIMIT},
        {"speed-factor", required_argument, NULL, O_SPEED},
        {"sleep", no_argument, NULL, O_SLEEP},
        {"loss-scale", required_argument, NULL, O_SCALE},
        {"threads", required_argument, NULL, O_THREADS},
        {"data", required_argument, NULL, O_DATA},
        {"train-limit", required_argument, NULL, O_TRAIN_LIMIT},
        {"test-limit", required_argument, NULL, O_TEST_LIMIT},
        {"save-weights", required_argument, NULL, O_SAVE},
        {"init-weights", required_argument, NULL, O_INIT},
        CLI_CALIBRATION_OPTIONS,
        CLI_COMMON_OPTIONS,
        CLI_QUIET_OPTION,
        {NULL, 0, NULL, 0},
    };
    static const struct cli_app app = {"edgefit-train", EDGEFIT_VERSION,
                                       usage, cli_version_details};
    struct memest_hw_config hw;
    memest_hw_config_init(&hw);
    struct prof_train_opts to;
    prof_train_opts_init(&to);
    /* The original's defaults: 784-64-10, 5 epochs, alpha 0.1, batch 32,
     * seed 42; the simulation's budget and limit. */
    *o = (struct options){
        .model = DEFAULT_MODEL,
        .epochs = 5,
        .alpha = 0.1,
        .batch = 32,
        .seed = 42,
        .optimizer = MEMEST_OPT_SGD,
        .precision = MEMEST_FP32,
        .max_memory_mb = hw.max_memory_mb,
        .speed_factor = hw.compute_speed_factor,
        .batch_limit = hw.batch_size_limit,
        .loss_scale = to.loss_scale,
        .threads = 1,
    };
    calibration_opts_init(&o->cal);
    opterr = 0;
    if (cli_refuse_repeats(argc, argv, longopts, NULL) != CLI_EXIT_OK) {
        return CLI_EXIT_USAGE;
    }
    int c;
    /* "-h" is the one short option. */
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        bool ok = true;
        switch (c) {
        case 'h':
            usage(stdout);
            exit(CLI_EXIT_OK);
        case O_MODEL:
            o->model = optarg;
            break;
        case O_EPOCHS:
            ok = cli_parse_u64("--epochs", optarg, 0, 100000, &o->epochs);
            break;
        case O_ALPHA:
            ok = cli_parse_double("--alpha", optarg, 0.0, 1e6, &o->alpha);
            if (ok && o->alpha == 0.0) {
                cli_error("--alpha: the learning rate must be above 0");
                ok = false;
            }
            break;
        case O_BATCH:
            ok = cli_parse_u64("--batch", optarg, 1, UINT32_MAX, &o->batch);
            break;
        case O_SEED:
            ok = cli_parse_u64("--seed", optarg, 0, UINT64_MAX, &o->seed);
            break;
        case O_OPT:
            if (memest_optimizer_parse(optarg, &o->optimizer) != MEMEST_OK) {
                cli_error("--optimizer: '%s' is not one of sgd, momentum, "
                          "adam", optarg);
                ok = false;
            }
            break;
        case O_PRECISION:
            if (memest_precision_parse(optarg, &o->precision) != MEMEST_OK ||
                o->precision == MEMEST_FP64) {
                cli_error("--precision: '%s' is not one of fp32, fp16, bf16, "
                          "int8 (or float32, float16, half, bfloat16)",
                          optarg);
                ok = false;
            }
            break;
        case O_SIMULATE:
            o->simulate = true;
            break;
        case O_MAXMEM:
            ok = cli_parse_double("--max-memory-mb", optarg, 0.0, 1e15,
                                  &o->max_memory_mb);
            o->simulate = true;
            break;
        case O_LIMIT:
            ok = cli_parse_u64("--batch-limit", optarg, 1, UINT32_MAX,
                               &o->batch_limit);
            break;
        case O_SPEED:
            ok = cli_parse_double("--speed-factor", optarg, 0.0, 1e6,
                                  &o->speed_factor);
            if (ok && o->speed_factor == 0.0) {
                cli_error("--speed-factor: must be above 0 (1 is this "
                          "machine's speed, 2 twice slower)");
                ok = false;
            }
            break;
        case O_SLEEP:
            o->sleep = true;
            break;
        case O_SCALE:
            ok = cli_parse_double("--loss-scale", optarg, 1.0, 65536.0,
                                  &o->loss_scale);
            break;
        case O_THREADS:
            ok = cli_parse_u64("--threads", optarg, 1, KERN_MAX_THREADS,
                               &o->threads);
            break;
        case O_DATA:
            if (!*optarg) {
                cli_error("--data: the folder name is empty");
                ok = false;
            }
            o->data = optarg;
            break;
        case O_TRAIN_LIMIT:
            ok = cli_parse_u64("--train-limit", optarg, 1, UINT32_MAX,
                               &o->train_limit);
            break;
        case O_TEST_LIMIT:
            ok = cli_parse_u64("--test-limit", optarg, 1, UINT32_MAX,
                               &o->test_limit);
            break;
        case O_SAVE:
            if (!*optarg) {
                cli_error("--save-weights: the file name is empty");
                ok = false;
            }
            o->save_weights = optarg;
            break;
        case O_INIT:
            if (!*optarg) {
                cli_error("--init-weights: the file name is empty");
                ok = false;
            }
            o->init_weights = optarg;
            break;
        default: {
            const int k = calibration_option(c, optarg, &o->cal);
            if (k < 0) {
                return CLI_EXIT_USAGE;
            }
            if (k > 0) {
                break;
            }
            const int rc = cli_common_option(c, &app, argv, &o->co);
            if (rc != CLI_EXIT_OK) {
                return rc;
            }
            break;
        }
        }
        if (!ok) {
            return CLI_EXIT_USAGE;
        }
    }
    if (calibration_check(&o->cal) != CLI_EXIT_OK) {
        return CLI_EXIT_USAGE;
    }
    if (o->precision != MEMEST_INT8 &&
        (o->cal.data || o->cal.file || o->cal.samples_given ||
         o->cal.method_given)) {
        cli_error("--calibration-*: the activation ranges of static int8; "
                  "this run is %s (give --precision int8)",
                  memest_precision_name(o->precision));
        return CLI_EXIT_USAGE;
    }
    return cli_no_operands(argc, argv);
}

/* ---- the run --------------------------------------------------------------- */

/* Everything the run computes, before anything is printed or written. */
struct result {
    memest_model *model;
    struct memest_run_plan plan;
    prof_train *trainer;
    struct prof_train_memory mem;
    struct cli_weights weights;
    struct prof_dataset train, test;
    struct cli_train_log epochs; /* the epochs and their evaluations */
    double training_time_s, artificial_delay_s, effective_time_s;
    double final_accuracy, final_loss;
    double test_accuracy, test_loss;
    /* int8: both through the executor, one test image at a time */
    double exec_fp32_accuracy, exec_int8_accuracy;
    struct prof_ranges ranges;      /* static int8's */
    char int8_calibration[320];     /* where they came from */
    enum prof_int8_requant int8_requant; /* --int8-requant */
    const struct prof_train_scale_event *scale_events;
    size_t scale_event_count;
    bool slept;
    const char *weights_path;  /* the file written, NULL if none */
    bool weights_in_bundle;    /* a member of the --out bundle */
    art_table *history;
    art_table *scale_table;
    art_doc *log;
};

static void result_free(struct result *r)
{
    art_doc_destroy(r->log);
    art_table_destroy(r->scale_table);
    art_table_destroy(r->history);
    cli_train_log_free(&r->epochs);
    prof_dataset_finish(&r->test);
    prof_dataset_finish(&r->train);
    prof_ranges_finish(&r->ranges);
    cli_weights_free(&r->weights);
    prof_train_destroy(r->trainer);
    memest_model_destroy(r->model);
}

/* The model, the run plan, the trainer and the starting weights: all of
 * it checked before any data is read. */
static int prepare(const struct options *o, struct result *r)
{
    int rc = cli_model_load(o->model, NULL, &r->model);
    if (rc == CLI_EXIT_OK && o->init_weights) {
        /* Before the trainer is made from the model: the weights are
         * the model's from now on. */
        rc = cli_weights_load("--init-weights", o->init_weights, r->model);
    }
    if (rc != CLI_EXIT_OK) {
        return rc;
    }
    struct memest_hw_config hw;
    memest_hw_config_init(&hw);
    hw.enabled = o->simulate;
    hw.max_memory_mb = o->max_memory_mb;
    hw.compute_speed_factor = o->speed_factor;
    hw.precision = o->precision;
    hw.batch_size_limit = o->batch_limit;
    /* The plan fits what the trainer will allocate (libprofile checks its
     * buffers against the same libmemest figure), not an inference
     * estimate. */
    hw.measure = MEMEST_MEASURE_TRAINING;
    hw.optimizer = o->optimizer;
    int st = memest_prepare_run(r->model, o->batch, &hw, &r->plan);
    if (st != MEMEST_OK) {
        cli_error("planning the run: %s", memest_strerror(st));
        return st == MEMEST_E_NOMEM ? CLI_EXIT_FAILURE : CLI_EXIT_USAGE;
    }
    if (o->train_limit && r->plan.batch_size > o->train_limit) {
        cli_error("--batch: the batch of %" PRIu64 " is larger than the %"
                  PRIu64 " images of --train-limit", r->plan.batch_size,
                  o->train_limit);
        return CLI_EXIT_USAGE;
    }

    struct prof_train_opts to;
    prof_train_opts_init(&to);
    to.batch = r->plan.batch_size;
    /* int8 is post-training quantisation: the training itself is fp32. */
    to.precision = memest_precision_is_int8(o->precision) ? MEMEST_FP32 : o->precision;
    to.optimizer = o->optimizer;
    to.alpha = o->alpha;
    to.seed = o->seed;
    to.threads = (unsigned)o->threads;
    to.loss_scale = o->loss_scale;
    const int trc = cli_train_create(r->model, o->model, &to, &r->trainer,
                                     &r->mem, &r->weights);
    if (trc != CLI_EXIT_OK) {
        return trc;
    }
    /* From --init-weights, or from an ONNX model's own weights. */
    char what[300];
    snprintf(what, sizeof what, "%s %s",
             o->init_weights ? "--init-weights" : "--model",
             o->init_weights ? o->init_weights : o->model);
    return cli_train_start_from_model(r->trainer, r->model, &r->weights,
                                      what);
}

/* Where the weights go: a bare name (or the default) is a member of the
 * --out bundle; a path is its own file. */
static void plan_weights_output(const struct options *o, struct result *r)
{
    if (o->save_weights && strchr(o->save_weights, '/')) {
        r->weights_path = o->save_weights;
    } else if (o->co.out_dir) {
        r->weights_path = o->save_weights ? o->save_weights : DEFAULT_WEIGHTS;
        r->weights_in_bundle = true;
    } else if (o->save_weights) {
        r->weights_path = o->save_weights; /* in the current folder */
    }
}

static int check_outputs(const struct options *o, const struct result *r)
{
    if (r->weights_in_bundle &&
        (strcmp(r->weights_path, "run_log.json") == 0 ||
         strcmp(r->weights_path, "training_history.csv") == 0)) {
        cli_error("--save-weights: '%s' is the name of another output",
                  r->weights_path);
        return CLI_EXIT_USAGE;
    }
    if (o->co.out_dir && !cli_check_out_dir("--out", o->co.out_dir)) {
        return CLI_EXIT_USAGE;
    }
    const int lock = o->co.out_dir ? cli_out_lock(o->co.out_dir) : CLI_EXIT_OK;
    if (lock != CLI_EXIT_OK) {
        return lock;
    }
    if (!r->weights_path || r->weights_in_bundle) {
        return CLI_EXIT_OK;
    }
    return cli_check_out_file("--save-weights", r->weights_path)
               ? CLI_EXIT_OK
               : CLI_EXIT_USAGE;
}

/* A data set that cannot be read is bad input (exit 2), whatever the
 * reason; only running out of memory is a failure of the run. Both sets
 * are checked against the model (data_check) before a step is taken. */
static int load_data(const struct options *o, struct result *r)
{
    int rc = data_load(o->data, DATA_TRAIN, o->train_limit, &r->train);
    rc = rc ? rc : data_check(r->model, &r->train, "--data");
    rc = rc ? rc : data_load(o->data, DATA_TEST, o->test_limit, &r->test);
    rc = rc ? rc : data_check(r->model, &r->test, "--data");
    if (rc != CLI_EXIT_OK) {
        return rc;
    }
    const char *dir = o->data ? o->data : prof_dataset_default_dir();
    if (r->train.count < r->plan.batch_size) {
        cli_error("--batch: the batch of %" PRIu64 " is larger than the %"
                  PRIu64 " training images of %s", r->plan.batch_size,
                  r->train.count, dir);
        return CLI_EXIT_USAGE;
    }
    return CLI_EXIT_OK;
}

/* ---- training -------------------------------------------------------------- */

/* Sleep for seconds, resuming after signals. */
static void sleep_s(double seconds)
{
    struct timespec ts;
    ts.tv_sec = (time_t)seconds;
    ts.tv_nsec = (long)((seconds - (double)ts.tv_sec) * 1e9);
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

static int train(const struct options *o, struct result *r)
{
    int rc = cli_train_epochs(r->trainer, &r->train, &r->test, o->epochs,
                              !o->co.quiet && isatty(STDERR_FILENO),
                              &r->epochs);
    if (rc != CLI_EXIT_OK) {
        return rc;
    }
    const double elapsed = r->epochs.elapsed_s;
    if (r->epochs.done) {
        r->test_loss = r->epochs.test_loss[r->epochs.done - 1];
    }
    int st = PROF_OK;
    /* The original timed fit() alone; the per-epoch test evaluation is
     * not training and is left out. */
    r->training_time_s = memest_round6(elapsed);
    const double delay = memest_compute_slowdown_s(elapsed, o->speed_factor);
    r->artificial_delay_s = memest_round6(delay);
    r->effective_time_s = memest_round6(elapsed + delay);
    if (o->epochs > 0) {
        const struct prof_train_epoch_result *last =
            &r->epochs.epochs[o->epochs - 1];
        r->final_accuracy = memest_round6(last->train_accuracy);
        r->final_loss = memest_round6(last->loss);
        r->test_accuracy = r->epochs.test_accuracy[o->epochs - 1];
    } else {
        /* Nothing trained: the starting weights on both sets. */
        double acc = 0.0, loss = 0.0;
        st = prof_train_evaluate(r->trainer, r->train.x, r->train.y,
                                 r->train.count, &acc, &loss);
        if (st == PROF_OK) {
            r->final_accuracy = memest_round6(acc);
            r->final_loss = memest_round6(loss);
            st = prof_train_evaluate(r->trainer, r->test.x, r->test.y,
                                     r->test.count, &r->test_accuracy,
                                     &r->test_loss);
        }
        if (st != PROF_OK) {
            return cli_prof_failed("evaluating", st, NULL);
        }
    }
    if (o->sleep && delay > 0.0) {
        sleep_s(delay);
        r->slept = true;
    }
    if (o->precision == MEMEST_FP16) {
        r->scale_event_count =
            prof_train_scale_events(r->trainer, &r->scale_events);
    }
    /* The trained weights, in PyTorch's layouts, for the file and for the
     * int8 executor. */
    return cli_train_read_weights(r->trainer, &r->weights);
}

/* Static int8's ranges after training: the model is given the trained
 * weights (calibration runs the model's own), then calibrated on the
 * first --calibration-samples training samples, or on --calibration-data,
 * or read from --calibration-file. */
static int int8_ranges(const struct options *o, struct result *r)
{
    int rc = cli_weights_to_model(&r->weights, r->model);
    r->int8_requant = o->cal.requant;
    return rc ? rc : calibration_ranges(r->model, &o->cal, &r->train,
                                        "training samples", &r->ranges,
                                        r->int8_calibration,
                                        sizeof r->int8_calibration);
}

/* Test accuracy of the trained weights run by the executor at precision,
 * one image at a time (int8-dynamic quantises each activation tensor with
 * its own scale, so a batch would let images change each other's results;
 * static int8 gives the same at any batch). */
static int executor_accuracy(const struct result *r,
                             enum memest_precision precision, double *out)
{
    struct prof_exec_opts eo;
    prof_exec_opts_init(&eo);
    eo.batch = 1;
    eo.precision = precision;
    eo.ranges =
        precision == MEMEST_INT8 ? calibration_exec_ranges(&r->ranges) : NULL;
    eo.int8_requant = r->int8_requant;
    prof_exec *ex = NULL;
    struct prof_diag d = {0};
    int st = prof_exec_create(r->model, &eo, &ex, &d);
    if (st != PROF_OK) {
        return cli_prof_failed(memest_precision_name(precision), st, &d);
    }
    for (size_t i = 0; st == PROF_OK && i < r->weights.layer_count; i++) {
        const struct cli_weights_layer *l = &r->weights.layers[i];
        st = prof_exec_set_params(ex, l->layer, l->weight, l->weight_count,
                                  l->bias, l->bias_count);
    }
    const size_t nin = prof_exec_input_count(ex);
    const size_t nout = prof_exec_output_count(ex);
    float *y = malloc(nout * sizeof *y);
    if (!y) {
        st = PROF_E_NOMEM;
    }
    uint64_t correct = 0;
    for (uint64_t i = 0; st == PROF_OK && i < r->test.count; i++) {
        st = prof_exec_run(ex, r->test.x + i * nin, nin, y, nout);
        size_t best = 0;
        for (size_t k = 1; st == PROF_OK && k < nout; k++) {
            if (y[k] > y[best]) {
                best = k;
            }
        }
        correct += st == PROF_OK && best == r->test.y[i];
    }
    free(y);
    prof_exec_destroy(ex);
    if (st != PROF_OK) {
        return cli_prof_failed(memest_precision_is_int8(precision) ? "int8 quantisation"
                                                    : "fp32 execution",
                           st, NULL);
    }
    *out = (double)correct / (double)r->test.count;
    return CLI_EXIT_OK;
}

/* ---- outputs --------------------------------------------------------------- */

static int build_history(struct result *r)
{
    r->history = cli_train_history(&r->epochs);
    return r->history ? ART_OK : ART_E_NOMEM;
}

static int build_scale_table(struct result *r)
{
    int st = art_table_create("loss_scale_events", &r->scale_table);
    if (st == ART_OK) {
        st = art_table_add_column(r->scale_table, "step", ART_UINT);
    }
    if (st == ART_OK) {
        st = art_table_add_column(r->scale_table, "loss_scale", ART_REAL);
    }
    if (st == ART_OK) {
        st = art_table_add_column(r->scale_table, "skipped", ART_BOOL);
    }
    for (size_t i = 0; st == ART_OK && i < r->scale_event_count; i++) {
        const struct prof_train_scale_event *ev = &r->scale_events[i];
        size_t row = 0;
        st = art_table_add_row(r->scale_table, &row);
        if (st == ART_OK) {
            st = art_table_set_uint(r->scale_table, row, 0, ev->step);
        }
        if (st == ART_OK) {
            st = art_table_set_real(r->scale_table, row, 1, ev->scale);
        }
        if (st == ART_OK) {
            st = art_table_set_bool(r->scale_table, row, 2, ev->skipped);
        }
    }
    return st;
}

/* One helper per JSON value type keeps the document builders flat: each
 * does nothing once an earlier call failed. */
static void set_uint(art_doc *d, const char *k, uint64_t v, int *st)
{
    if (*st == ART_OK) {
        *st = art_doc_set_uint(d, k, v);
    }
}

static void set_real(art_doc *d, const char *k, double v, int *st)
{
    if (*st == ART_OK) {
        *st = art_doc_set_real(d, k, v);
    }
}

static void set_text(art_doc *d, const char *k, const char *v, int *st)
{
    if (*st == ART_OK) {
        *st = art_doc_set_text(d, k, v);
    }
}

static void set_bool(art_doc *d, const char *k, bool v, int *st)
{
    if (*st == ART_OK) {
        *st = art_doc_set_bool(d, k, v);
    }
}

static void set_doc(art_doc *d, const char *k, art_doc *sub, int *st)
{
    if (*st == ART_OK) {
        *st = art_doc_set_doc(d, k, sub);
    }
    art_doc_destroy(sub);
}

static art_doc *new_doc(int *st)
{
    art_doc *d = NULL;
    if (*st == ART_OK) {
        *st = art_doc_create(&d);
    }
    return d;
}

static art_doc *config_doc(const struct options *o, const struct result *r,
                           int *st)
{
    art_doc *d = new_doc(st);
    set_text(d, "model", o->model, st);
    set_uint(d, "epochs", o->epochs, st);
    set_real(d, "alpha", o->alpha, st);
    set_uint(d, "batch_size", o->batch, st);
    set_uint(d, "seed", o->seed, st);
    set_text(d, "optimizer", memest_optimizer_name(o->optimizer), st);
    set_text(d, "precision", memest_precision_name(o->precision), st);
    set_text(d, "training_precision",
             memest_precision_is_int8(o->precision) ? "fp32"
                                         : memest_precision_name(o->precision),
             st);
    /* The original HardwareSimulationConfig's fields. */
    set_bool(d, "simulate", o->simulate, st);
    set_real(d, "max_memory_mb", o->max_memory_mb, st);
    set_real(d, "compute_speed_factor", o->speed_factor, st);
    set_uint(d, "batch_size_limit", o->batch_limit, st);
    if (o->precision == MEMEST_FP16) {
        set_real(d, "loss_scale", o->loss_scale, st);
    }
    set_bool(d, "sleep", o->sleep, st);
    set_uint(d, "threads", o->threads, st);
    set_text(d, "data", o->data ? o->data : prof_dataset_default_dir(), st);
    set_uint(d, "train_samples", r->train.count, st);
    set_uint(d, "test_samples", r->test.count, st);
    if (o->init_weights) {
        set_text(d, "init_weights", o->init_weights, st);
    }
    return d;
}

static art_doc *setup_doc(const struct result *r, int *st)
{
    const struct memest_run_plan *p = &r->plan;
    const char *warnings[MEMEST_PLAN_MAX_WARNINGS];
    for (size_t i = 0; i < p->warning_count; i++) {
        warnings[i] = p->warnings[i];
    }
    art_doc *d = new_doc(st);
    set_bool(d, "enabled", p->enabled, st);
    set_uint(d, "batch_size", p->batch_size, st);
    /* fp32, as every other file and column says (the original's
     * "float32" only in its own key's name) */
    set_text(d, "precision_mode", memest_precision_name(p->precision), st);
    set_real(d, "estimated_memory_mb", p->estimated_memory_mb, st);
    set_text(d, "memory_measure", memest_measure_name(p->measure), st);
    if (p->enabled) {
        set_bool(d, "fits", p->fits, st);
    }
    if (*st == ART_OK) {
        *st = art_doc_set_texts(d, "warnings", warnings, p->warning_count);
    }
    return d;
}

static art_doc *results_doc(const struct options *o, const struct result *r,
                            int *st)
{
    art_doc *d = new_doc(st);
    set_real(d, "training_time_s", r->training_time_s, st);
    set_real(d, "artificial_delay_s", r->artificial_delay_s, st);
    set_real(d, "effective_time_s", r->effective_time_s, st);
    set_real(d, "final_accuracy", r->final_accuracy, st);
    set_real(d, "final_loss", r->final_loss, st);
    set_real(d, "test_accuracy", r->test_accuracy, st);
    set_real(d, "test_loss", r->test_loss, st);
    set_bool(d, "slept", r->slept, st);
    set_uint(d, "steps_per_epoch", r->train.count / r->plan.batch_size, st);
    if (memest_precision_is_int8(o->precision)) {
        set_real(d, "fp32_test_accuracy", r->exec_fp32_accuracy, st);
        set_real(d, "int8_test_accuracy", r->exec_int8_accuracy, st);
        set_text(d, "int8_calibration",
                 o->precision == MEMEST_INT8
                     ? r->int8_calibration
                     : "per batch (int8-dynamic: each tensor's own range "
                       "at run time)",
                 st);
    }
    if (o->precision == MEMEST_FP16) {
        set_uint(d, "skipped_steps", r->epochs.skipped_steps, st);
        set_real(d, "final_loss_scale",
                 r->epochs.done ? r->epochs.epochs[r->epochs.done - 1].loss_scale
                                : o->loss_scale,
                 st);
    }
    return d;
}

/* One side of the training memory: the trainer's buffers or libmemest's
 * estimate, term by term. */
static art_doc *memory_terms_doc(uint64_t parameter_bytes,
                                 uint64_t gradient_bytes,
                                 uint64_t optimizer_state_bytes,
                                 uint64_t activation_bytes,
                                 uint64_t working_bytes, uint64_t total_bytes,
                                 int *st)
{
    art_doc *d = new_doc(st);
    set_uint(d, "parameter_bytes", parameter_bytes, st);
    set_uint(d, "gradient_bytes", gradient_bytes, st);
    set_uint(d, "optimizer_state_bytes", optimizer_state_bytes, st);
    set_uint(d, "activation_bytes", activation_bytes, st);
    set_uint(d, "working_bytes", working_bytes, st);
    set_uint(d, "total_bytes", total_bytes, st);
    set_real(d, "total_mb", (double)total_bytes / 1048576.0, st);
    return d;
}

static art_doc *memory_doc(const struct result *r, int *st)
{
    const struct prof_train_memory *m = &r->mem;
    const struct memest_training *e = &m->estimate;
    art_doc *d = new_doc(st);
    set_doc(d, "trainer",
            memory_terms_doc(m->parameter_bytes, m->gradient_bytes,
                             m->optimizer_state_bytes, m->activation_bytes,
                             m->working_bytes, m->total_bytes, st),
            st);
    set_doc(d, "estimate",
            memory_terms_doc(e->parameter_bytes, e->gradient_bytes,
                             e->optimizer_state_bytes, e->activation_bytes,
                             e->working_bytes, e->total_bytes, st),
            st);
    return d;
}

static int build_log(const struct options *o, struct result *r)
{
    int st = art_doc_create(&r->log);
    set_doc(r->log, "config", config_doc(o, r, &st), &st);
    set_doc(r->log, "setup", setup_doc(r, &st), &st);
    set_doc(r->log, "results", results_doc(o, r, &st), &st);
    set_doc(r->log, "training_memory", memory_doc(r, &st), &st);
    if (st == ART_OK) {
        st = art_doc_set_table(r->log, "history", r->history);
    }
    if (st == ART_OK && o->precision == MEMEST_FP16) {
        st = art_doc_set_table(r->log, "loss_scale_events", r->scale_table);
    }
    return st;
}

static void print_summary(const struct options *o, const struct result *r)
{
    const struct memest_run_plan *p = &r->plan;
    printf("\nmodel %s, %s, %s, batch %" PRIu64 " of %" PRIu64
           " requested, %" PRIu64 " training and %" PRIu64 " test images\n",
           memest_model_name(r->model), memest_precision_name(o->precision),
           memest_optimizer_name(o->optimizer), p->batch_size, o->batch,
           r->train.count, r->test.count);
    char feed[400];
    if (*data_feed_note(r->model, &r->train, feed, sizeof feed)) {
        printf("  data              %s\n", feed);
    }
    const struct prof_train_memory *m = &r->mem;
    const double allocated_mb = (double)m->total_bytes / 1048576.0;
    if (p->enabled) {
        /* The plan and the allocation are the same quantity (the trainer
         * checks its buffers against libmemest's training estimate), so
         * each is compared with the budget on its own figure. */
        printf("  plan              %.6f MB of training memory (%s) %s "
               "%.4f MB\n", p->estimated_memory_mb,
               memest_precision_name(p->precision),
               p->fits ? "within" : "EXCEEDS", o->max_memory_mb);
    }
    printf("  training_time_s   %.6f; artificial_delay_s %.6f (speed factor "
           "%g%s); effective_time_s %.6f\n",
           r->training_time_s, r->artificial_delay_s, o->speed_factor,
           r->slept ? ", slept" : "", r->effective_time_s);
    printf("  final_accuracy    %.6f; final_loss %.6f (training set, last "
           "epoch)\n",
           r->final_accuracy, r->final_loss);
    printf("  test_accuracy     %.6f; test_loss %.6f\n", r->test_accuracy,
           r->test_loss);
    if (memest_precision_is_int8(o->precision)) {
        printf("  %-17s test accuracy %.6f after quantisation, "
               "fp32 %.6f (executor, %+.2f points)\n",
               memest_precision_name(o->precision), r->exec_int8_accuracy,
               r->exec_fp32_accuracy,
               100.0 * (r->exec_int8_accuracy - r->exec_fp32_accuracy));
        if (o->precision == MEMEST_INT8) {
            printf("                    static int8, with %s\n",
                   r->int8_calibration);
        }
    }
    if (o->precision == MEMEST_FP16) {
        printf("  loss scale        %g -> %g, %" PRIu64 " skipped steps, %zu "
               "scale events\n",
               o->loss_scale,
               r->epochs.done ? r->epochs.epochs[r->epochs.done - 1].loss_scale
                              : o->loss_scale,
               r->epochs.skipped_steps, r->scale_event_count);
    }
    printf("  training memory   %.6f MB = %" PRIu64 " B allocated (parameters "
           "%" PRIu64 ", gradients %" PRIu64 ", optimizer state %" PRIu64
           ", activations %" PRIu64 ", working %" PRIu64
           "); libmemest's training estimate %" PRIu64 " B%s\n",
           allocated_mb, m->total_bytes,
           m->parameter_bytes, m->gradient_bytes, m->optimizer_state_bytes,
           m->activation_bytes, m->working_bytes, m->estimate_total_bytes,
           !p->enabled ? ""
           : allocated_mb <= o->max_memory_mb ? "; within the budget"
                                              : "; OVER the budget");
    /* The plan's warnings went to stderr before training (cli_warn):
     * not printed again here. */
}

static int print_stdout(const struct options *o, const struct result *r)
{
    int st = ART_OK;
    switch (o->co.format) {
    case CLI_FORMAT_TABLE: {
        /* four significant digits, in the shortest form (a loss scale of
         * 1024 reads 1024, not 1024.0000) */
        static const char *const keep[] = {
            "epoch", "loss", "train_accuracy", "test_accuracy", "test_loss",
            "epoch_time_s", "steps", "loss_scale", "skipped_steps", NULL};
        art_table *view = NULL;
        st = cli_table_view(r->history, keep, &view);
        if (st == ART_OK) {
            st = art_table_print_grouped(view, stdout);
        }
        art_table_destroy(view);
        if (st == ART_OK) {
            print_summary(o, r);
        }
        break;
    }
    case CLI_FORMAT_CSV:
        st = art_table_write_csv_rounded(r->history, stdout,
                                         cli_round_file);
        break;
    case CLI_FORMAT_JSON:
        st = art_doc_write_rounded(r->log, stdout, cli_round_file);
        break;
    }
    return cli_stdout_finish(st);
}

/* The run log, the history and the weights appear together or not at all
 * (one bundle); weights given as a path of their own follow once the
 * bundle is in place, written atomically too. */
static int write_outputs(const struct options *o, const struct result *r)
{
    const struct cli_weights *w = &r->weights;
    if (o->co.out_dir) {
        /* the curves when something was trained; the loss scale for fp16 */
        struct train_charts ch = {0};
        const bool charts = r->epochs.done > 0;
        if (charts &&
            !train_charts_init(r->epochs.epochs, r->epochs.done,
                               r->epochs.test_accuracy, r->epochs.test_loss,
                               r->scale_events, r->scale_event_count,
                               o->precision == MEMEST_FP16 ? o->loss_scale
                                                           : 0,
                               &ch)) {
            return CLI_EXIT_FAILURE;
        }
        const struct cli_out_file files[] = {
            {.name = "run_log.json", .doc = r->log},
            {.name = "training_history.csv", .csv = r->history},
            {.name = "training_curves.png", .figure = &ch.curves},
            {.name = "loss_scale.png", .chart = &ch.scale},
        };
        const size_t nfiles = !charts ? 2 : ch.has_scale ? 4 : 3;
        art_bundle *b = NULL;
        int rc = cli_out_bundle(o->co.out_dir, files, nfiles, &b);
        if (rc == CLI_EXIT_OK && r->weights_in_bundle) {
            const int st = art_bundle_add_safetensors(
                b, r->weights_path, w->tensors, w->tensor_count);
            if (st != ART_OK) {
                art_bundle_destroy(b);
                b = NULL;
                cli_error("--out %s: %s: %s", o->co.out_dir, r->weights_path,
                          art_strerror(st));
                rc = CLI_EXIT_FAILURE;
            }
        }
        if (rc == CLI_EXIT_OK) {
            rc = cli_out_commit(b);
        }
        train_charts_free(&ch);
        if (rc != CLI_EXIT_OK) {
            return rc;
        }
    }
    if (r->weights_path && !r->weights_in_bundle) {
        struct art_diag d = {0, "", 0};
        /* Its folder may not exist yet (checked creatable at the start). */
        char *dir = strdup(r->weights_path);
        if (!dir) {
            cli_error("out of memory: the --save-weights folder's name");
            return CLI_EXIT_FAILURE;
        }
        char *slash = strrchr(dir, '/');
        int st = ART_OK;
        if (slash && slash != dir) {
            *slash = '\0';
            st = art_mkdir_p(dir, &d);
        }
        free(dir);
        if (st == ART_OK) {
            st = art_safetensors_save(r->weights_path, w->tensors,
                                      w->tensor_count, NULL, NULL, 0, &d);
        }
        if (st != ART_OK) {
            cli_error("--save-weights: %s",
                      d.message[0] ? d.message : art_strerror(st));
            return CLI_EXIT_FAILURE;
        }
    }
    return CLI_EXIT_OK;
}

int main(int argc, char **argv)
{
    cli_set_program("edgefit-train");
    struct options o;
    int rc = parse_args(argc, argv, &o);
    if (rc != CLI_EXIT_OK) {
        return cli_exit(rc);
    }
    struct result r;
    memset(&r, 0, sizeof r);
    /* Every argument, the model, the starting weights and the output
     * folders are checked before the data is read or a step is taken. */
    rc = prepare(&o, &r);
    if (rc == CLI_EXIT_OK) {
        plan_weights_output(&o, &r);
        rc = check_outputs(&o, &r);
    }
    if (rc == CLI_EXIT_OK) {
        rc = load_data(&o, &r);
    }
    if (rc == CLI_EXIT_OK) {
        for (size_t i = 0; i < r.plan.warning_count; i++) {
            cli_warn("%s", r.plan.warnings[i]);
        }
        rc = train(&o, &r);
    }
    if (rc == CLI_EXIT_OK && memest_precision_is_int8(o.precision)) {
        rc = executor_accuracy(&r, MEMEST_FP32, &r.exec_fp32_accuracy);
        if (rc == CLI_EXIT_OK && o.precision == MEMEST_INT8) {
            rc = int8_ranges(&o, &r);
        }
        if (rc == CLI_EXIT_OK) {
            rc = executor_accuracy(&r, o.precision, &r.exec_int8_accuracy);
        }
    }
    if (rc == CLI_EXIT_OK &&
        (build_history(&r) != ART_OK || build_scale_table(&r) != ART_OK ||
         build_log(&o, &r) != ART_OK)) {
        cli_error("building the output: out of memory");
        rc = CLI_EXIT_FAILURE;
    }
    if (rc == CLI_EXIT_OK) {
        rc = write_outputs(&o, &r);
    }
    if (rc == CLI_EXIT_OK) {
        rc = print_stdout(&o, &r);
    }
    result_free(&r);
    return cli_exit(rc);
}
