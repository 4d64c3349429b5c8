/* edgefit-validate: run a model on reference inputs through the executor
 * at each precision and compare its output with the reference output:
 * largest absolute error, RMSE, cosine similarity and top-1 agreement,
 * and a verdict against a tolerance on the error relative to the
 * reference's largest magnitude. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "calib.h"
#include "calibration.h"
#include "cli.h"
#include "model.h"
#include "table.h"
#include "validate.h"
#include "weights.h"
#include "edgefit/artifacts.h"
#include "edgefit/memest.h"
#include "edgefit/profile.h"
#include "alloc_rec.h" /* last: it wraps malloc and co. */

#define MAX_SETS 256

struct options {
    const char *model;
    const char *weights;
    const char *test_data[MAX_SETS];
    size_t n_test_data;
    enum memest_precision precisions[MEMEST_PRECISION_COUNT];
    size_t n_precisions;
    double tolerance[MEMEST_PRECISION_COUNT]; /* NaN: the default */
    uint64_t batch;                           /* 0: not given */
    struct calibration_opts cal;              /* static int8's ranges */
    struct cli_common co;
};

static void usage(FILE *f)
{
    fprintf(f,
        "usage: edgefit-validate --model SPEC [options]\n"
        "\n"
        "Run a model on reference inputs at each precision and compare its\n"
        "output with the reference output.\n"
        "\n"
        "  --model SPEC          a model: .onnx (with its weights), a text\n"
        "                        file or a preset (with --weights)\n"
        "  --test-data DIR       a folder of input_K / output_K files, ONNX\n"
        "                        TensorProto (.pb) or NumPy (.npy); may be\n"
        "                        given several times (default: every\n"
        "                        test_data_set_* folder beside the model)\n"
        "  --weights FILE        the parameters of a text model or preset\n"
        "                        (safetensors, PyTorch names)\n"
        "  --precision LIST      of fp32,fp16,bf16,int8,int8-dynamic (default\n"
        "                        fp32); int8 is static int8, compared with the\n"
        "                        reference outputs and with edgefit's own\n"
        "                        fp32 run (reference fp32); its activation\n"
        "                        ranges are the model's own (a QDQ file),\n"
        "                        else from the options below, else\n"
        "                        calibrated on the test set's own inputs\n"
        CLI_CALIBRATION_HELP
        "  --tolerance T         the largest relative_error that passes, for\n"
        "                        every precision, or P=T[,P=T...] for some\n"
        "                        (default fp32=1e-4,fp16=1e-2,bf16=5e-2,\n"
        "                        int8=1e-1)\n"
        "  --batch N             run the samples N at a time (default all at\n"
        "                        once, or the batch the ONNX file fixes)\n"
        "  --strict              exit 3 when any comparison fails\n"
        "  --quiet               no progress on stderr (shown only on a\n"
        "                        terminal)\n"
        "  --format F            table|csv|json on stdout (default table)\n"
        "  --out DIR             write validation.csv and validation.json\n"
        "                        (replaced whole: a kill or a full disk leaves the old\n"
        "                        folder or the new one; '.', a mount point and a folder\n"
        "                        holding a folder are refused)\n"
        "  -h, --help, --version this text; the version, the kernel paths\n"
        "                        built and selected, the dependencies\n"
        "\n"
        "The first dimension of a reference tensor is the batch (a tensor of\n"
        "exactly the model's per-sample shape is one sample). ONNX node\n"
        "tests pass weights as graph inputs: every input_K.pb is offered to\n"
        "the ONNX model as a constant by its name, and those that stay model\n"
        "inputs are fed in the model's input order (by name, else by\n"
        "position). Per precision and output: max_abs_error = max |y - r|,\n"
        "relative_error = max_abs_error / max |r|, rmse, cosine_similarity\n"
        "and, for a classifier, top1_agreement (the share of samples\n"
        "whose largest value is one of the reference's largest). The\n"
        "verdict is pass when relative_error <= the tolerance.\n"
        "\n"
        "Exit status: 0 success (whatever the verdicts), 1 runtime failure,\n"
        "2 bad usage or input, 3 --strict and a comparison failed.\n");
}

/* "1e-4" for every precision, or "fp16=1e-2,int8=0.2". */
static bool parse_tolerance(const char *text, struct options *o)
{
    if (!strchr(text, '=')) {
        double t;
        if (!cli_parse_positive("--tolerance", text, 1e30, &t)) {
            return false;
        }
        for (size_t i = 0; i < MEMEST_PRECISION_COUNT; i++) {
            o->tolerance[i] = t;
        }
        return true;
    }
    char items[MEMEST_PRECISION_COUNT + 1][32];
    size_t n;
    if (!cli_split_list("--tolerance", text, items, MEMEST_PRECISION_COUNT,
                        &n)) {
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        char *eq = strchr(items[i], '=');
        enum memest_precision p;
        if (!eq) {
            cli_error("--tolerance: '%s' is not P=T", items[i]);
            return false;
        }
        *eq = '\0';
        if (memest_precision_parse(items[i], &p) != MEMEST_OK ||
            p == MEMEST_FP64) {
            cli_error("--tolerance: '%s' is not one of fp32, fp16, bf16, "
                      "int8", items[i]);
            return false;
        }
        if (!cli_parse_positive("--tolerance", eq + 1, 1e30,
                                &o->tolerance[p])) {
            return false;
        }
    }
    return true;
}

static int parse_args(int argc, char **argv, struct options *o)
{
    enum { O_MODEL = 256, O_TEST_DATA, O_WEIGHTS, O_PRECISION, O_TOLERANCE,
           O_BATCH };
    static const struct option longopts[] = {
        {"model", required_argument, NULL, O_MODEL},
        {"test-data", required_argument, NULL, O_TEST_DATA},
        {"weights", required_argument, NULL, O_WEIGHTS},
        {"precision", required_argument, NULL, O_PRECISION},
        {"tolerance", required_argument, NULL, O_TOLERANCE},
        {"batch", required_argument, NULL, O_BATCH},
        CLI_CALIBRATION_OPTIONS,
        CLI_COMMON_OPTIONS,
        CLI_STRICT_OPTION,
        CLI_QUIET_OPTION,
        {NULL, 0, NULL, 0},
    };
    static const struct cli_app app = {"edgefit-validate", EDGEFIT_VERSION,
                                       usage, cli_version_details};
    memset(o, 0, sizeof *o);
    calibration_opts_init(&o->cal);
    o->precisions[0] = MEMEST_FP32;
    o->n_precisions = 1;
    for (size_t i = 0; i < MEMEST_PRECISION_COUNT; i++) {
        o->tolerance[i] = NAN;
    }
    opterr = 0;
    static const char *const repeatable[] = {"test-data", NULL};
    if (cli_refuse_repeats(argc, argv, longopts, repeatable) != CLI_EXIT_OK) {
        return CLI_EXIT_USAGE;
    }
    int c;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (c) {
        case O_MODEL:
            o->model = optarg;
            break;
        case O_TEST_DATA:
            if (o->n_test_data == MAX_SETS) {
                cli_error("--test-data: at most %d folders", MAX_SETS);
                return CLI_EXIT_USAGE;
            }
            o->test_data[o->n_test_data++] = optarg;
            break;
        case O_WEIGHTS:
            o->weights = optarg;
            break;
        case O_PRECISION:
            if (!cli_parse_precisions("--precision", optarg, o->precisions,
                                      MEMEST_PRECISION_COUNT,
                                      &o->n_precisions)) {
                return CLI_EXIT_USAGE;
            }
            break;
        case O_TOLERANCE:
            if (!parse_tolerance(optarg, o)) {
                return CLI_EXIT_USAGE;
            }
            break;
        case O_BATCH:
            if (!cli_parse_u64("--batch", optarg, 1, 1u << 20, &o->batch)) {
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
            const int rc = cli_common_option(c, &app, argv, &o->co);
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
    if (!o->model) {
        cli_error("--model SPEC is required (a .onnx file, a text model or "
                  "a preset)");
        return CLI_EXIT_USAGE;
    }
    for (size_t i = 0; i < MEMEST_PRECISION_COUNT; i++) {
        if (isnan(o->tolerance[i])) {
            o->tolerance[i] =
                validate_default_tolerance((enum memest_precision)i);
        }
    }
    return cli_no_operands(argc, argv);
}

/* ---- the work --------------------------------------------------------------- */

/* One test set, its model and how its inputs feed the model. */
struct job {
    struct validate_set set;
    memest_model *model; /* owned when own_model */
    bool own_model;
    size_t map[VALIDATE_MAX_INPUTS]; /* input k <- set.inputs[map[k]] */
    uint64_t samples;
    uint64_t batch;      /* the executor's */
    /* static int8: the ranges (made once, when the model carries no
     * quantisation of its own) and where they came from */
    struct prof_ranges ranges;
    bool have_ranges, ranges_tried;
    char calibration[320];
};

struct row {
    const char *test_set;
    enum memest_precision precision;
    const char *reference;   /* "test data" or "fp32" (edgefit's own) */
    const char *calibration; /* static int8: where its ranges came from */
    const char *output;
    uint64_t batch;
    uint64_t samples;
    struct validate_metrics m;
    double tolerance;
    bool pass;
};

struct run {
    struct job *jobs;
    size_t n_jobs;
    memest_model *text_model; /* the one model of a non-ONNX spec */
    struct row *rows;
    size_t n_rows;
};

static void run_free(struct run *r)
{
    for (size_t i = 0; i < r->n_jobs; i++) {
        validate_set_free(&r->jobs[i].set);
        prof_ranges_finish(&r->jobs[i].ranges);
        if (r->jobs[i].own_model) {
            memest_model_destroy(r->jobs[i].model);
        }
    }
    free(r->jobs);
    memest_model_destroy(r->text_model);
    free(r->rows);
}

static bool is_onnx(const char *spec)
{
    const size_t n = strlen(spec);
    return !memest_is_preset_name(spec) && n > 5 &&
           strcmp(spec + n - 5, ".onnx") == 0;
}

/* The folders to validate: --test-data, else those beside the model. */
static int find_dirs(const struct options *o, char ***dirs, size_t *n)
{
    if (o->n_test_data > 0) {
        *dirs = calloc(o->n_test_data, sizeof **dirs);
        if (!*dirs) {
            cli_error("out of memory: the list of --test-data");
            return CLI_EXIT_FAILURE;
        }
        for (size_t i = 0; i < o->n_test_data; i++) {
            if (!((*dirs)[i] = strdup(o->test_data[i]))) {
                validate_dirs_free(*dirs, i);
                cli_error("out of memory: a --test-data name");
                return CLI_EXIT_FAILURE;
            }
        }
        *n = o->n_test_data;
        return CLI_EXIT_OK;
    }
    if (memest_is_preset_name(o->model)) {
        cli_error("--model %s is a preset: give --test-data DIR", o->model);
        return CLI_EXIT_USAGE;
    }
    if (strcmp(o->model, "-") == 0) {
        cli_error("--model - reads the model from stdin, beside no "
                  "test_data_set_* folder: give --test-data DIR");
        return CLI_EXIT_USAGE;
    }
    if (!validate_find_sets(o->model, dirs, n)) {
        return CLI_EXIT_USAGE;
    }
    if (*n == 0) {
        validate_dirs_free(*dirs, 0);
        *dirs = NULL;
        cli_error("--model %s: no test_data_set_* folder beside it: give "
                  "--test-data DIR", o->model);
        return CLI_EXIT_USAGE;
    }
    return CLI_EXIT_OK;
}

/* Everything is read and checked before anything runs. */
static int prepare(const struct options *o, struct run *r)
{
    int rc = cli_model_check_spec(o->model);
    if (rc != CLI_EXIT_OK) {
        return rc;
    }
    const bool onnx = is_onnx(o->model);
    if (onnx && o->weights) {
        cli_error("--weights: %s carries its weights (an ONNX file)",
                  o->model);
        return CLI_EXIT_USAGE;
    }
    if (onnx) {
        /* The model is read before the test data is looked for: a file
         * that is no ONNX model (unreadable, not a protocol buffer, no
         * graph, an opset not supported: an error of the file, line 0) is
         * refused at once. An error at a node waits for the test sets,
         * whose input_K.pb may give the values of graph inputs (ONNX's
         * node tests pass a convolution's weights so). */
        memest_model *m = NULL;
        struct memest_diag md;
        const int st = memest_model_load_onnx(o->model, NULL, &m, &md);
        memest_model_destroy(m);
        if (st != MEMEST_OK && md.line == 0) {
            char msg[600];
            memest_diag_format(&md, msg, sizeof msg);
            cli_error("%s", msg);
            return st == MEMEST_E_NOMEM ? CLI_EXIT_FAILURE : CLI_EXIT_USAGE;
        }
    }
    if (!onnx) {
        rc = validate_model_load(o->model, NULL, &r->text_model);
        if (rc != CLI_EXIT_OK) {
            return rc;
        }
        if (o->weights) {
            rc = cli_weights_load("--weights", o->weights, r->text_model);
            if (rc != CLI_EXIT_OK) {
                return rc;
            }
        } else if (memest_model_parameter_count(r->text_model) > 0 &&
                   !memest_model_has_weights(r->text_model)) {
            cli_error("--model %s has no weights to validate: give "
                      "--weights FILE", o->model);
            return CLI_EXIT_USAGE;
        }
    }
    char **dirs = NULL;
    size_t n = 0;
    rc = find_dirs(o, &dirs, &n);
    if (rc != CLI_EXIT_OK) {
        return rc;
    }
    if (!(r->jobs = calloc(n, sizeof *r->jobs))) {
        validate_dirs_free(dirs, n);
        cli_error("out of memory: the validation jobs");
        return CLI_EXIT_FAILURE;
    }
    for (size_t i = 0; i < n && rc == CLI_EXIT_OK; i++) {
        struct job *j = &r->jobs[i];
        rc = validate_set_load(dirs[i], &j->set);
        if (rc != CLI_EXIT_OK) {
            break;
        }
        r->n_jobs++;
        if (onnx) {
            rc = validate_model_load(o->model, &j->set, &j->model);
            j->own_model = rc == CLI_EXIT_OK;
        } else {
            j->model = r->text_model;
        }
        if (rc != CLI_EXIT_OK) {
            break;
        }
        if (memest_model_input_count(j->model) >
            sizeof j->map / sizeof j->map[0]) {
            cli_error("--model %s: %zu inputs, at most %zu", o->model,
                      memest_model_input_count(j->model),
                      sizeof j->map / sizeof j->map[0]);
            rc = CLI_EXIT_USAGE;
            break;
        }
        rc = validate_match(j->model, &j->set, j->map, &j->samples);
        if (rc != CLI_EXIT_OK) {
            break;
        }
        /* The batch: --batch, else the file's, else every sample at
         * once; a file that fixes it accepts no other. */
        rc = cli_model_batch(j->model, o->model, o->batch != 0,
                             o->batch ? o->batch : j->samples, "run",
                             &j->batch);
        if (rc != CLI_EXIT_OK) {
            break;
        }
    }
    validate_dirs_free(dirs, n);
    return rc;
}

/* Static int8's ranges for job j: the model's own (none needed), else
 * --calibration-data or --calibration-file, else the set's own inputs
 * (one input; said so). */
static int job_ranges(const struct options *o, struct job *j)
{
    j->ranges_tried = true;
    struct prof_dataset own = {0};
    const struct prof_dataset *fallback = NULL;
    if (!calibration_given(&o->cal) &&
        memest_model_input_count(j->model) == 1) {
        const struct validate_ref *in = &j->set.inputs[j->map[0]];
        static const uint64_t one = 1;
        const unsigned rank = in->rank > 1 ? in->rank - 1 : 1;
        const uint64_t *shape = in->rank > 1 ? in->dim + 1 : &one;
        struct prof_diag pd = {0};
        const int st = prof_dataset_init(&own, j->samples, rank, shape, false,
                                         0, NULL, in->path, &pd);
        if (st != PROF_OK) {
            return cli_prof_failed(in->path, st, &pd);
        }
        memcpy(own.x, in->data,
               (size_t)(own.count * own.sample_count) * sizeof(float));
        fallback = &own;
    }
    const int rc = calibration_ranges(j->model, &o->cal, fallback,
                                      "reference inputs", &j->ranges,
                                      j->calibration,
                                      sizeof j->calibration);
    prof_dataset_finish(&own);
    j->have_ranges = rc == CLI_EXIT_OK;
    return rc;
}

static struct row *add_row(const struct options *o, struct run *r,
                           const struct job *j, enum memest_precision p,
                           const char *reference, const float *got,
                           const float *ref, size_t features)
{
    struct row *row = &r->rows[r->n_rows++];
    row->test_set = j->set.name;
    row->precision = p;
    row->reference = reference;
    row->calibration = p == MEMEST_INT8 ? j->calibration : "";
    row->output = j->set.outputs[0].name;
    row->batch = j->batch;
    row->samples = j->samples;
    row->tolerance = o->tolerance[p];
    validate_compare(got, ref, (size_t)j->samples, features,
                     validate_is_classifier(j->model), &row->m);
    row->pass = validate_passes(&row->m, row->tolerance);
    return row;
}

static int validate_job(const struct options *o, struct run *r,
                        struct job *j, enum memest_precision p)
{
    const struct validate_ref *ref = &j->set.outputs[0];
    const size_t n = ref->count ? ref->count : 1;
    int rc = CLI_EXIT_OK;
    if (p == MEMEST_INT8 && !j->ranges_tried) {
        rc = job_ranges(o, j);
        if (rc != CLI_EXIT_OK) {
            return rc;
        }
    }
    float *got = malloc(n * sizeof *got);
    float *f32 = p == MEMEST_INT8 ? malloc(n * sizeof *f32) : NULL;
    if (!got || (p == MEMEST_INT8 && !f32)) {
        free(got);
        free(f32);
        cli_error("%s: out of memory: the model's outputs (%zu bytes)",
                  j->set.dir, n * sizeof *got);
        return CLI_EXIT_FAILURE;
    }
    rc = validate_run_ranges(j->model, &j->set, j->map, j->samples, j->batch,
                             p, j->have_ranges ? calibration_exec_ranges(&j->ranges) : NULL,
                             o->cal.requant, got);
    const size_t features = ref->count / (size_t)j->samples;
    if (rc == CLI_EXIT_OK) {
        add_row(o, r, j, p, "test data", got, ref->data, features);
    }
    /* Static int8 against edgefit's own fp32 on the same inputs: the
     * quantisation's error alone (the reference may be another runtime's,
     * a QDQ file's int8 outputs). */
    if (rc == CLI_EXIT_OK && f32) {
        rc = validate_run(j->model, &j->set, j->map, j->samples, j->batch,
                          MEMEST_FP32, f32);
        if (rc == CLI_EXIT_OK) {
            add_row(o, r, j, p, "fp32", got, f32, features);
        }
    }
    free(got);
    free(f32);
    return rc;
}

/* ---- output ----------------------------------------------------------------- */

#define ROW(ctx, i) (&((const struct row *)(ctx))[i])

static bool get_set(const void *ctx, size_t i, union cli_value *v)
{
    v->s = ROW(ctx, i)->test_set;
    return true;
}
static bool get_reference(const void *ctx, size_t i, union cli_value *v)
{
    v->s = ROW(ctx, i)->reference;
    return true;
}

static bool get_calibration(const void *ctx, size_t i, union cli_value *v)
{
    v->s = ROW(ctx, i)->calibration;
    return true;
}

static bool get_precision(const void *ctx, size_t i, union cli_value *v)
{
    v->s = memest_precision_name(ROW(ctx, i)->precision);
    return true;
}
static bool get_output(const void *ctx, size_t i, union cli_value *v)
{
    v->s = ROW(ctx, i)->output;
    return true;
}
static bool get_batch(const void *ctx, size_t i, union cli_value *v)
{
    v->u = ROW(ctx, i)->batch;
    return true;
}
static bool get_samples(const void *ctx, size_t i, union cli_value *v)
{
    v->u = ROW(ctx, i)->samples;
    return true;
}
static bool get_elements(const void *ctx, size_t i, union cli_value *v)
{
    v->u = ROW(ctx, i)->m.elements;
    return true;
}
/* Reals: a value that is not finite (an infinite error, an undefined
 * cosine) is an empty cell, as the glossary says. */
#define REAL_GETTER(fn, field)                                              \
    static bool fn(const void *ctx, size_t i, union cli_value *v)          \
    {                                                                       \
        v->r = ROW(ctx, i)->field;                                          \
        return isfinite(v->r);                                              \
    }
REAL_GETTER(get_max_err, m.max_abs_error)
REAL_GETTER(get_max_ref, m.max_abs_reference)
REAL_GETTER(get_rel_err, m.relative_error)
REAL_GETTER(get_rmse, m.rmse)
REAL_GETTER(get_cos, m.cosine_similarity)
REAL_GETTER(get_top1, m.top1_agreement)
REAL_GETTER(get_tol, tolerance)
static bool get_verdict(const void *ctx, size_t i, union cli_value *v)
{
    v->s = ROW(ctx, i)->pass ? "pass" : "fail";
    return true;
}

static const struct cli_column columns[] = {
    {"test_set", ART_TEXT, get_set, CLI_COL_KEY},
    {"precision", ART_TEXT, get_precision, CLI_COL_KEY},
    {"reference", ART_TEXT, get_reference, CLI_COL_KEY},
    {"output", ART_TEXT, get_output, CLI_COL_ALL},
    {"batch_size", ART_UINT, get_batch, CLI_COL_ALL},
    {"samples", ART_UINT, get_samples, CLI_COL_ALL},
    {"output_elements", ART_UINT, get_elements, CLI_COL_ALL},
    {"max_abs_error", ART_REAL, get_max_err, CLI_COL_KEY},
    {"max_abs_reference", ART_REAL, get_max_ref, CLI_COL_ALL},
    {"relative_error", ART_REAL, get_rel_err, CLI_COL_KEY},
    {"rmse", ART_REAL, get_rmse, CLI_COL_KEY},
    {"cosine_similarity", ART_REAL, get_cos, CLI_COL_ALL},
    {"top1_agreement", ART_REAL, get_top1, CLI_COL_KEY},
    {"tolerance", ART_REAL, get_tol, CLI_COL_ALL},
    {"verdict", ART_TEXT, get_verdict, CLI_COL_KEY},
    {"int8_calibration", ART_TEXT, get_calibration, CLI_COL_ALL},
};

static size_t failures(const struct run *r)
{
    size_t n = 0;
    for (size_t i = 0; i < r->n_rows; i++) {
        n += !r->rows[i].pass;
    }
    return n;
}

static int build_summary(const struct options *o, const struct run *r,
                         art_doc **out)
{
    art_doc *d = NULL;
    const size_t failed = failures(r);
    const char *name = r->n_jobs ? memest_model_name(r->jobs[0].model)
                                 : "";
    int st = art_doc_create(&d);
    if (st == ART_OK) {
        st = art_doc_set_text(d, "model", name);
    }
    if (st == ART_OK) {
        st = art_doc_set_text(d, "model_file", o->model);
    }
    if (st == ART_OK) {
        st = art_doc_set_uint(d, "test_sets", r->n_jobs);
    }
    if (st == ART_OK) {
        st = art_doc_set_uint(d, "comparisons", r->n_rows);
    }
    if (st == ART_OK) {
        st = art_doc_set_uint(d, "passed", r->n_rows - failed);
    }
    if (st == ART_OK) {
        st = art_doc_set_uint(d, "failed", failed);
    }
    if (st == ART_OK) {
        st = art_doc_set_text(d, "verdict", failed ? "fail" : "pass");
    }
    if (st != ART_OK) {
        art_doc_destroy(d);
        d = NULL;
    }
    *out = d;
    return st;
}

static int emit(const struct options *o, const struct run *r)
{
    const struct cli_column_set set = {columns,
                                       sizeof columns / sizeof columns[0],
                                       r->rows};
    art_table *t = NULL, *view = NULL;
    art_doc *summary = NULL, *all = NULL;
    int rc = CLI_EXIT_FAILURE;
    int st = cli_table_build("validation", &set, 1, r->n_rows, CLI_COL_ALL,
                             &t);
    if (st == ART_OK) {
        st = cli_table_build("validation", &set, 1, r->n_rows, CLI_COL_KEY,
                             &view);
    }
    if (st == ART_OK) {
        st = build_summary(o, r, &summary);
    }
    if (st == ART_OK) {
        st = art_doc_create(&all);
    }
    if (st == ART_OK) {
        st = art_doc_set_doc(all, "summary", summary);
    }
    if (st == ART_OK) {
        st = art_doc_set_table(all, "validation", t);
    }
    if (st != ART_OK) {
        cli_error("building the output: %s", art_strerror(st));
        goto done;
    }
    const struct cli_output outs[] = {
        {.key = "summary", .doc = summary},
        {.key = "validation", .table = t, .view = view},
    };
    /* the folder first: a full stdout after it is only a warning */
    rc = CLI_EXIT_OK;
    if (o->co.out_dir) {
        const struct cli_out_file files[] = {
            {.name = "validation.csv", .csv = t},
            {.name = "validation.json", .doc = all},
        };
        rc = cli_out_write(o->co.out_dir, files, 2);
    }
    if (rc == CLI_EXIT_OK) {
        rc = cli_emit(o->co.format, outs, 2);
    }
    if (rc == CLI_EXIT_OK && o->co.format == CLI_FORMAT_TABLE) {
        const size_t failed = failures(r);
        printf("\n%s: %zu comparison%s over %zu test set%s, %zu passed, "
               "%zu failed\n  verdict: relative_error = max_abs_error / "
               "max_abs_reference <= tolerance (",
               memest_model_name(r->jobs[0].model), r->n_rows,
               r->n_rows == 1 ? "" : "s", r->n_jobs,
               r->n_jobs == 1 ? "" : "s", r->n_rows - failed, failed);
        for (size_t i = 0; i < o->n_precisions; i++) {
            printf("%s%s %g", i ? ", " : "",
                   memest_precision_name(o->precisions[i]),
                   o->tolerance[o->precisions[i]]);
        }
        printf(")\n");
        for (size_t i = 0; i < r->n_jobs; i++) {
            if (r->jobs[i].calibration[0]) {
                printf("  int8 on %s: static int8, with %s\n",
                       r->jobs[i].set.name, r->jobs[i].calibration);
            }
        }
        rc = cli_stdout_finish(ART_OK);
    }
done:
    art_table_destroy(t);
    art_table_destroy(view);
    art_doc_destroy(summary);
    art_doc_destroy(all);
    return rc;
}

int main(int argc, char **argv)
{
    cli_set_program("edgefit-validate");
    struct options o;
    int rc = parse_args(argc, argv, &o);
    if (rc == CLI_EXIT_OK) {
        rc = cli_out_check(o.co.out_dir);
    }
    if (rc != CLI_EXIT_OK) {
        return cli_exit(rc);
    }
    struct run r;
    memset(&r, 0, sizeof r);
    rc = prepare(&o, &r);
    if (rc == CLI_EXIT_OK) {
        /* int8 adds a row per set: against edgefit's fp32 */
        r.rows = calloc(r.n_jobs * (o.n_precisions + 1), sizeof *r.rows);
        if (!r.rows) {
            cli_error("out of memory: the result rows");
            rc = CLI_EXIT_FAILURE;
        }
    }
    const bool progress = cli_progress_wanted(o.co.quiet);
    const unsigned total = (unsigned)(r.n_jobs * o.n_precisions);
    for (size_t i = 0; rc == CLI_EXIT_OK && i < r.n_jobs; i++) {
        for (size_t p = 0; rc == CLI_EXIT_OK && p < o.n_precisions; p++) {
            char what[300];
            snprintf(what, sizeof what, "%s %s", r.jobs[i].set.name,
                     memest_precision_name(o.precisions[p]));
            cli_progress(progress, (unsigned)(i * o.n_precisions + p), total,
                         what);
            rc = validate_job(&o, &r, &r.jobs[i], o.precisions[p]);
        }
    }
    cli_progress(progress, total, total, NULL);
    if (rc == CLI_EXIT_OK) {
        rc = emit(&o, &r);
    }
    if (rc == CLI_EXIT_OK && o.co.strict && failures(&r) > 0) {
        cli_error("--strict: %zu of %zu comparisons failed", failures(&r),
                  r.n_rows);
        rc = CLI_EXIT_CONSTRAINT;
    }
    run_free(&r);
    return cli_exit(rc);
}
