/* edgefit-memfit: estimate a model layer by layer and fit its batch size to
 * a memory budget, the way the hardware simulation planned its runs. */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calib.h"
#include "cli.h"
#include "devices.h"
#include "model.h"
#include "table.h"
#include "edgefit/artifacts.h"
#include "edgefit/memest.h"
#include "edgefit/profile.h"
#include "alloc_rec.h" /* last: it wraps malloc and co. */

#define DEFAULT_MODEL "mlp:784-64-10"
/* The largest batch is searched up to the largest --batch accepted. */
#define LARGEST_SEARCH_LIMIT UINT64_C(4294967295)

struct options {
    const char *model;
    uint64_t batch;
    int have_batch;           /* --batch given */
    enum memest_precision precision;
    int simulate;
    double max_memory_mb;
    int have_budget;          /* --max-memory-mb given */
    struct cli_device_opts dev;
    int have_device;          /* --device given: its memory is the budget */
    uint64_t batch_limit;
    enum memest_optimizer optimizer;
    struct cli_common co;
};

static void usage(FILE *f)
{
    fprintf(f,
        "usage: edgefit-memfit [options]\n"
        "\n"
        "Estimate a model layer by layer (parameters, activations, MACs) and fit\n"
        "its batch size to a memory budget.\n"
        "\n"
        "  --model SPEC          a model file (text, or .onnx with its\n"
        "                        weights), mlp:W0-W1-...-Wn or a preset:\n"
        "                        smallcnn, resnet8, ds-cnn, mobilenetv1-0.25,\n"
        "                        fc-autoencoder, kwt, lstm-kws (default\n"
        "                        " DEFAULT_MODEL ")\n"
        "  --weights FILE        the model's weights, safetensors in PyTorch's\n"
        "                        state_dict names: checked against the model\n"
        "                        (the estimates do not depend on them)\n"
        "  --batch N             requested batch size (default: the batch\n"
        "                        an ONNX file fixes, else 32)\n"
        "  --precision P         fp64|fp32|fp16|bf16|int8 (default fp32)\n"
        "  --max-memory-mb X     memory budget in MB (1 MB = 1024^2 bytes);\n"
        "                        turns the simulation on and fits the batch\n"
        "  --device D            fit to the memory of a device instead: a\n"
        "                        --list-devices board (rpi4, ...), host (this machine's\n"
        "                        physical memory), name=..,memory_mb=M,..\n"
        "                        or a device of --devices FILE\n"
        "  --devices FILE        devices of your own (a CSV file)\n"
        "  --list-devices        print the catalogue and exit\n"
        "  --batch-limit N       upper bound on the batch (default 128)\n"
        "  --optimizer O         sgd|momentum|adam for the training memory\n"
        "                        (default sgd)\n"
        "  --format F            table|csv|json on stdout (default table)\n"
        "  --out DIR             write layerwise_breakdown.csv, memory_plan.json\n"
        "                        (replaced whole: a kill or a full disk leaves the old\n"
        "                        folder or the new one; '.', a mount point and a folder\n"
        "                        holding a folder are refused)\n"
        "  --quiet               no progress (memfit does no long work;\n"
        "                        accepted as by every edgefit app)\n"
        "  --strict              exit 3 when the model does not fit the budget\n"
        "                        (needs --max-memory-mb or --device)\n"
        "  -h, --help, --version   this text; the version, the kernel paths\n"
        "                           built and selected, the dependencies\n"
        "\n"
        "The batch is fitted by peak inference memory: parameters + the\n"
        "planned activation arena. The sum of all activations (the\n"
        "original's estimate, total_memory_mb) is shown for reference only.\n"
        "\n"
        "Warnings (a batch capped or reduced, a budget exceeded) go to stderr\n"
        "in every format, and into memory_plan.json's \"warnings\".\n"
        "\n"
        "Exit status: 0 success, 1 runtime failure, 2 bad usage or input,\n"
        "3 constraint not met with --strict.\n");
}

static int parse_args(int argc, char **argv, struct options *o)
{
    enum { O_MODEL = 256, O_BATCH, O_PRECISION, O_MAXMEM, O_LIMIT, O_OPT };
    static const struct option longopts[] = {
        {"model", required_argument, NULL, O_MODEL},
        {"batch", required_argument, NULL, O_BATCH},
        {"precision", required_argument, NULL, O_PRECISION},
        {"max-memory-mb", required_argument, NULL, O_MAXMEM},
        {"batch-limit", required_argument, NULL, O_LIMIT},
        {"optimizer", required_argument, NULL, O_OPT},
        CLI_DEVICE_OPTIONS,
        CLI_COMMON_OPTIONS,
        CLI_STRICT_OPTION,
        CLI_QUIET_OPTION,
        CLI_WEIGHTS_OPTION,
        {NULL, 0, NULL, 0},
    };
    static const struct cli_app app = {"edgefit-memfit", EDGEFIT_VERSION,
                                       usage,
                                       cli_version_details};
    *o = (struct options){
        .model = DEFAULT_MODEL,
        .batch = 32,
        .precision = MEMEST_FP32,
        .batch_limit = 128,
        .optimizer = MEMEST_OPT_SGD,
        .dev = {.device = NULL},
    };
    opterr = 0;
    if (cli_refuse_repeats(argc, argv, longopts, NULL) != CLI_EXIT_OK) {
        return CLI_EXIT_USAGE;
    }
    int c, rc = CLI_EXIT_OK;
    while (rc == CLI_EXIT_OK &&
           (c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (c) {
        case O_MODEL:
            o->model = optarg;
            break;
        case O_BATCH:
            if (!cli_parse_u64("--batch", optarg, 1, UINT32_MAX, &o->batch)) {
                rc = CLI_EXIT_USAGE;
            }
            o->have_batch = 1;
            break;
        case O_PRECISION:
            if (memest_precision_parse(optarg, &o->precision) != MEMEST_OK) {
                cli_error("--precision: '%s' is not one of fp64, fp32, fp16, "
                          "bf16, int8 (or float64, float32, float16, half, "
                          "bfloat16)", optarg);
                rc = CLI_EXIT_USAGE;
            }
            break;
        case O_MAXMEM:
            /* A budget of 0 (or -0) would plan nothing: refused. */
            if (!cli_parse_positive("--max-memory-mb", optarg, 1e15,
                                    &o->max_memory_mb)) {
                rc = CLI_EXIT_USAGE;
            }
            o->simulate = 1;
            o->have_budget = 1;
            break;
        case O_LIMIT:
            if (!cli_parse_u64("--batch-limit", optarg, 1, UINT32_MAX,
                               &o->batch_limit)) {
                rc = CLI_EXIT_USAGE;
            }
            break;
        case O_OPT:
            if (memest_optimizer_parse(optarg, &o->optimizer) != MEMEST_OK) {
                cli_error("--optimizer: '%s' is not one of sgd, momentum, "
                          "adam", optarg);
                rc = CLI_EXIT_USAGE;
            }
            break;
        default:
            rc = cli_shared_option(c, NULL, &o->dev, &app, argv, &o->co);
            break;
        }
    }
    if (rc == CLI_EXIT_OK) {
        rc = cli_no_operands(argc, argv);
    }
    if (rc != CLI_EXIT_OK || o->dev.list) {
        return rc;
    }
    o->have_device = o->dev.device != NULL;
    if (o->have_device && o->have_budget) {
        cli_error("--device and --max-memory-mb: give one budget, not both");
        return CLI_EXIT_USAGE;
    }
    if (o->co.strict && !o->have_budget && !o->have_device) {
        cli_error("--strict: there is no budget to hold the model to; give "
                  "--max-memory-mb or --device");
        return CLI_EXIT_USAGE;
    }
    return CLI_EXIT_OK;
}

/* --device: its memory becomes the budget, as if given with
 * --max-memory-mb. */
static int device_budget(struct options *o, struct cli_devices *devs)
{
    if (o->dev.devices_file && !cli_devices_load(o->dev.devices_file, devs)) {
        return CLI_EXIT_USAGE;
    }
    struct prof_device d;
    memset(&d, 0, sizeof d);
    if (strcmp(o->dev.device, "host") == 0) {
        /* Only the memory is needed: no calibration run. */
        snprintf(d.name, sizeof d.name, "host");
        d.memory_mb = (double)prof_host_memory_bytes() / (1024.0 * 1024.0);
    } else if (!cli_device_resolve_memory(o->dev.device,
                                          o->dev.devices_file ? devs : NULL,
                                          &d)) {
        return CLI_EXIT_USAGE;
    }
    if (!(d.memory_mb > 0.0)) {
        cli_error("--device: the memory of '%s' is unknown (give it with "
                  "memory_mb=, or use --max-memory-mb)", d.name);
        return CLI_EXIT_USAGE;
    }
    o->max_memory_mb = d.memory_mb;
    o->simulate = 1;
    return CLI_EXIT_OK;
}

/* Everything the run computes, before anything is printed or written. */
struct result {
    memest_model *model;
    struct memest_layer_estimate *rows;
    size_t nrows;
    struct memest_run_plan plan;
    struct memest_totals totals;
    struct memest_training training, training_mixed;
    /* Under a budget: the largest batch whose peak inference memory fits,
     * searched up to LARGEST_SEARCH_LIMIT (capped: memory never reached
     * the budget there). */
    struct memest_batch_search largest;
    uint64_t batch;           /* requested: --batch, the file's, or 32 */
    /* The plan's warnings, then the app's own (a capped batch). */
    size_t warning_count;
    const char *warnings[MEMEST_PLAN_MAX_WARNINGS + 1];
    char cap_warning[160];
    art_table *layers;
    art_doc *plan_doc;
};

static void result_free(struct result *r)
{
    art_doc_destroy(r->plan_doc);
    art_table_destroy(r->layers);
    free(r->rows);
    memest_model_destroy(r->model);
}

static int memest_failed(const char *what, int st)
{
    cli_error("%s: %s", what, memest_strerror(st));
    return st == MEMEST_E_NOMEM ? CLI_EXIT_FAILURE : CLI_EXIT_USAGE;
}

static int art_failed(const char *what, int st)
{
    cli_error("%s: %s", what, art_strerror(st));
    return CLI_EXIT_FAILURE;
}

static int build_layers_table(struct result *r)
{
    const struct cli_column_set set = {cli_breakdown_columns,
                                       cli_breakdown_column_count, r->rows};
    return cli_table_build("layers", &set, 1, r->nrows, CLI_COL_ALL,
                           &r->layers);
}

static int build_plan_doc(const struct options *o, struct result *r)
{
    const struct memest_run_plan *p = &r->plan;
    art_doc *d = NULL;
    int st = art_doc_create(&d);
    r->plan_doc = d;
    /* The original run plan's keys first, then the totals. */
    if (st == ART_OK) {
        st = art_doc_set_bool(d, "enabled", p->enabled);
    }
    if (st == ART_OK) {
        st = art_doc_set_uint(d, "batch_size", p->batch_size);
    }
    if (st == ART_OK) {
        st = art_doc_set_text(d, "precision_mode",
                              memest_precision_name(p->precision));
    }
    if (st == ART_OK) {
        st = art_doc_set_real(d, "estimated_memory_mb",
                              p->estimated_memory_mb);
    }
    if (st == ART_OK) {
        st = art_doc_set_text(d, "memory_measure",
                              memest_measure_name(p->measure));
    }
    if (st == ART_OK) {
        st = art_doc_set_texts(d, "warnings", r->warnings,
                               r->warning_count);
    }
    if (st == ART_OK) {
        st = art_doc_set_text(d, "model", memest_model_name(r->model));
    }
    if (st == ART_OK) {
        st = art_doc_set_uint(d, "requested_batch_size", r->batch);
    }
    if (st == ART_OK) {
        st = art_doc_set_uint(d, "model_fixed_batch_size",
                              memest_model_fixed_batch(r->model));
    }
    if (st == ART_OK && o->simulate) {
        st = art_doc_set_real(d, "max_memory_mb", o->max_memory_mb);
    }
    if (st == ART_OK && o->simulate) {
        st = art_doc_set_bool(d, "fits", p->fits);
    }
    if (st == ART_OK && o->simulate) {
        st = art_doc_set_uint(d, "largest_batch_size", r->largest.batch);
    }
    if (st == ART_OK && o->simulate) {
        st = art_doc_set_bool(d, "largest_batch_size_capped",
                              r->largest.capped);
    }
    if (st == ART_OK && o->simulate) {
        st = art_doc_set_uint(d, "largest_batch_search_limit",
                              LARGEST_SEARCH_LIMIT);
    }
    if (st == ART_OK && o->have_device) {
        st = art_doc_set_text(d, "device", o->dev.device);
    }
    if (st == ART_OK && o->simulate) {
        st = art_doc_set_uint(d, "batch_size_limit", o->batch_limit);
    }
    const struct memest_totals *t = &r->totals;
    if (st == ART_OK) {
        st = art_doc_set_uint(d, "parameter_count", t->parameter_count);
    }
    if (st == ART_OK) {
        st = art_doc_set_real(d, "parameter_memory_mb", t->parameter_mb);
    }
    if (st == ART_OK) {
        st = art_doc_set_real(d, "activation_memory_mb", t->activation_mb);
    }
    if (st == ART_OK) {
        st = art_doc_set_real(d, "total_memory_mb", t->total_mb);
    }
    if (st == ART_OK) {
        st = art_doc_set_real(d, "peak_inference_memory_mb",
                              t->peak_inference_mb);
    }
    if (st == ART_OK) {
        st = art_doc_set_real(d, "arena_memory_mb",
                              (double)t->arena_bytes / 1048576.0);
    }
    if (st == ART_OK) {
        st = art_doc_set_real(d, "live_lower_bound_mb",
                              (double)t->live_lower_bound_bytes / 1048576.0);
    }
    if (st == ART_OK) {
        st = art_doc_set_uint(d, "macs", t->macs);
    }
    if (st == ART_OK) {
        st = art_doc_set_text(d, "optimizer",
                              memest_optimizer_name(o->optimizer));
    }
    if (st == ART_OK) {
        st = art_doc_set_real(d, "training_memory_mb", r->training.total_mb);
    }
    if (st == ART_OK) {
        st = art_doc_set_real(d, "training_memory_mixed_precision_mb",
                              r->training_mixed.total_mb);
    }
    return st;
}

static int compute(const struct options *o, struct result *r)
{
    const int rc = cli_model_load(o->model, o->co.weights, &r->model);
    if (rc != CLI_EXIT_OK) {
        return rc;
    }
    if (cli_model_batch(r->model, o->model, o->have_batch, o->batch, "plan",
                        &r->batch) != CLI_EXIT_OK) {
        return CLI_EXIT_USAGE;
    }
    struct memest_hw_config cfg;
    memest_hw_config_init(&cfg);
    cfg.enabled = o->simulate;
    cfg.precision = o->precision;
    cfg.batch_size_limit = o->batch_limit;
    cfg.measure = MEMEST_MEASURE_PEAK_INFERENCE;
    if (o->simulate) {
        cfg.max_memory_mb = o->max_memory_mb;
    }
    int st = memest_prepare_run(r->model, r->batch, &cfg, &r->plan);
    if (st != MEMEST_OK) {
        return memest_failed("planning the run", st);
    }
    for (size_t i = 0; i < r->plan.warning_count; i++) {
        r->warnings[r->warning_count++] = r->plan.warnings[i];
    }
    /* The original's warning says "due to memory constraints" even when
     * the limit, not the memory, capped the batch: say which. */
    if (o->simulate && r->batch > o->batch_limit) {
        snprintf(r->cap_warning, sizeof r->cap_warning,
                 "Requested batch %" PRIu64 " is above --batch-limit %" PRIu64
                 "; the plan starts from %" PRIu64 ".",
                 r->batch, o->batch_limit, o->batch_limit);
        r->warnings[r->warning_count++] = r->cap_warning;
    } else if (!o->simulate && r->batch > o->batch_limit) {
        snprintf(r->cap_warning, sizeof r->cap_warning,
                 "--batch-limit %" PRIu64 " has no effect without a budget "
                 "(--max-memory-mb or --device); batch %" PRIu64 " is "
                 "planned as requested.", o->batch_limit, r->batch);
        r->warnings[r->warning_count++] = r->cap_warning;
    }
    if (o->simulate) {
        st = memest_largest_batch(r->model, o->max_memory_mb, o->precision,
                                  LARGEST_SEARCH_LIMIT,
                                  MEMEST_MEASURE_PEAK_INFERENCE,
                                  MEMEST_OPT_SGD, &r->largest);
        if (st != MEMEST_OK) {
            return memest_failed("fitting the batch", st);
        }
    }
    const uint64_t batch = r->plan.batch_size;
    st = memest_estimate_totals(r->model, batch, o->precision, &r->totals);
    if (st == MEMEST_OK) {
        st = memest_training_memory(r->model, batch, o->precision,
                                    o->optimizer, &r->training);
    }
    if (st == MEMEST_OK) {
        st = memest_training_memory_mixed(r->model, batch, o->optimizer,
                                          &r->training_mixed);
    }
    if (st != MEMEST_OK) {
        return memest_failed(o->model, st);
    }
    r->nrows = memest_estimate_row_count(r->model);
    r->rows = calloc(r->nrows, sizeof *r->rows);
    if (!r->rows) {
        return memest_failed("estimating", MEMEST_E_NOMEM);
    }
    st = memest_estimate_layers(r->model, batch, o->precision, r->rows,
                                r->nrows, &r->nrows);
    if (st != MEMEST_OK) {
        return memest_failed(o->model, st);
    }
    if ((st = build_layers_table(r)) != ART_OK ||
        (st = build_plan_doc(o, r)) != ART_OK) {
        return art_failed("building the output", st);
    }
    return CLI_EXIT_OK;
}

/* Signed difference a - b of two byte counts, in MB. */
static double diff_mb(uint64_t a, uint64_t b)
{
    return a >= b ? (double)(a - b) / 1048576.0
                  : -((double)(b - a) / 1048576.0);
}

static void print_summary(const struct options *o, const struct result *r)
{
    const struct memest_totals *t = &r->totals;
    const struct memest_run_plan *p = &r->plan;
    printf("\nmodel %s, %s, batch %" PRIu64 "\n", memest_model_name(r->model),
           memest_precision_name(o->precision), p->batch_size);
    printf("  parameters        %" PRIu64 " (%.6f MB)\n", t->parameter_count,
           t->parameter_mb);
    printf("  peak inference    %.6f MB: parameters + an arena of %.6f MB "
           "(no plan below %.6f MB); the batch is fitted by this\n",
           t->peak_inference_mb, (double)t->arena_bytes / 1048576.0,
           (double)t->live_lower_bound_bytes / 1048576.0);
    printf("  activations       %" PRIu64 " elements (%.6f MB) summed, every "
           "output kept\n", t->activation_elements, t->activation_mb);
    printf("  total             %.6f MB: parameters + activations summed "
           "(the original's estimate; a bound, not what a run holds)\n",
           t->total_mb);
    printf("  MACs              %" PRIu64 "\n", t->macs);
    /* Each training figure is what libprofile's trainer allocates, all of
     * it: mixed precision halves the activations but computes each 16-bit
     * operator in fp32 staging buffers, so on a model with small
     * activations it needs more than fp32 (edgefit-bench's
     * mixed_precision table is TinyTorch's formula for Adam, without
     * working buffers, on other sizes). Say which term wins. */
    const struct memest_training *f = &r->training, *m = &r->training_mixed;
    const double change = f->total_bytes
        ? 100.0 * diff_mb(m->total_bytes, f->total_bytes) /
              ((double)f->total_bytes / 1048576.0)
        : 0.0;
    char training[40];
    snprintf(training, sizeof training, "training (%s)",
             memest_optimizer_name(o->optimizer));
    printf("  %-17s %.6f MB at %s: parameters, gradients, optimizer state, "
           "activations kept for backward, working buffers\n", training,
           f->total_mb, memest_precision_name(o->precision));
    printf("  mixed precision   %.6f MB (%+.0f%%): activations %+.6f MB, "
           "gradients %+.6f MB, working buffers %+.6f MB (fp32 staging of "
           "16-bit operators), parameters and state %+.6f MB\n",
           m->total_mb, change,
           diff_mb(m->activation_bytes, f->activation_bytes),
           diff_mb(m->gradient_bytes, f->gradient_bytes),
           diff_mb(m->working_bytes, f->working_bytes),
           diff_mb(m->parameter_bytes + m->optimizer_state_bytes,
                   f->parameter_bytes + f->optimizer_state_bytes));
    if (p->enabled) {
        printf("plan: batch %" PRIu64 " of %" PRIu64 " requested, %s, "
               "peak inference memory %.6f MB %s %.4f MB%s%s (batch limit "
               "%" PRIu64 ")\n",
               p->batch_size, r->batch, memest_precision_name(p->precision),
               p->estimated_memory_mb, p->fits ? "within" : "EXCEEDS",
               o->max_memory_mb, o->have_device ? " of " : "",
               o->have_device ? o->dev.device : "", o->batch_limit);
        const struct memest_batch_search *l = &r->largest;
        if (l->capped) {
            printf("memory is not a constraint: %.3g MB of %.6g MB at batch "
                   "%" PRIu64 "; any batch up to %" PRIu64 " fits\n",
                   t->peak_inference_mb, o->max_memory_mb, p->batch_size,
                   l->batch);
        } else if (l->batch == 0) {
            printf("no batch fits: batch 1 needs %.6f MB of peak inference "
                   "memory, over %.4f MB\n", l->memory_mb, o->max_memory_mb);
        } else {
            printf("largest batch within %.4f MB: %" PRIu64 " (%.6f MB of "
                   "peak inference memory)\n", o->max_memory_mb, l->batch,
                   l->memory_mb);
        }
    } else {
        printf("plan: simulation off (give --max-memory-mb or --device), "
               "batch %" PRIu64 ", peak inference memory %.6f MB\n",
               p->batch_size, p->estimated_memory_mb);
    }
}

static int print_stdout(const struct options *o, const struct result *r)
{
    const struct cli_output outs[] = {
        {.key = "layers", .table = r->layers},
        {.key = "memory_plan", .doc = r->plan_doc},
    };
    const int rc = cli_emit(o->co.format, outs, 2);
    if (rc != CLI_EXIT_OK || o->co.format != CLI_FORMAT_TABLE) {
        return rc;
    }
    print_summary(o, r);
    return cli_stdout_finish(ART_OK);
}

/* Both files appear together or not at all. */
static int write_artifacts(const char *dir, const struct result *r)
{
    const struct cli_output outs[] = {
        {.key = "layers", .file = "layerwise_breakdown.csv",
         .table = r->layers},
        {.key = "memory_plan", .file = "memory_plan.json",
         .doc = r->plan_doc},
    };
    return cli_write_outputs(dir, outs, 2, NULL);
}

int main(int argc, char **argv)
{
    cli_set_program("edgefit-memfit");
    struct options o;
    int rc = parse_args(argc, argv, &o);
    if (rc == CLI_EXIT_OK) {
        rc = cli_out_check(o.co.out_dir);
    }
    if (rc != CLI_EXIT_OK) {
        return cli_exit(rc);
    }
    struct cli_devices devs;
    memset(&devs, 0, sizeof devs);
    if (o.dev.list) {
        return cli_devices_list_run(&o.dev, o.co.format);
    }
    if (o.have_device) {
        rc = device_budget(&o, &devs);
        cli_devices_free(&devs);
        if (rc != CLI_EXIT_OK) {
            return cli_exit(rc);
        }
    }
    struct result r = {0};
    rc = compute(&o, &r);
    /* Warnings reach stderr whatever the format: a CSV on stdout has no
     * room for them and a user piping it must still see them. */
    for (size_t i = 0; rc == CLI_EXIT_OK && i < r.warning_count; i++) {
        cli_warn("%s", r.warnings[i]);
    }
    if (rc == CLI_EXIT_OK && o.co.out_dir) {
        rc = write_artifacts(o.co.out_dir, &r);
    }
    if (rc == CLI_EXIT_OK) {
        rc = print_stdout(&o, &r);
    }
    if (rc == CLI_EXIT_OK && o.co.strict && r.plan.enabled &&
        !r.plan.fits) {
        cli_error("--strict: the model needs %.6f MB of peak inference "
                  "memory at batch %" PRIu64 ", over the %.4f MB budget",
                  r.totals.peak_inference_mb, r.plan.batch_size,
                  o.max_memory_mb);
        rc = CLI_EXIT_CONSTRAINT;
    }
    result_free(&r);
    return cli_exit(rc);
}
