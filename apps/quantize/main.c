/* edgefit-quantize: static int8 post-training quantisation of a trained
 * model. The activation ranges come from calibration samples (or a
 * calibration file); the model is written as a QDQ ONNX file with them,
 * beside the calibration file and the per-layer error of static int8
 * against fp32 (SQNR in dB, the layers that lose most first), all in one
 * folder written all or nothing. */
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calib.h"
#include "calibration.h"
#include "cli.h"
#include "data.h"
#include "model.h"
#include "table.h"
#include "edgefit/artifacts.h"
#include "edgefit/memest.h"
#include "edgefit/profile.h"

/* The worst layers the terminal lists; the files hold every tensor. */
#define WORST_SHOWN 10

struct options {
    const char *model;
    const char *data;          /* --data: the error's samples */
    uint64_t error_samples;    /* --error-samples (0: all) */
    bool error_samples_given;
    struct calibration_opts cal;
    struct cli_common co;
};

static void usage(FILE *f)
{
    fprintf(f,
        "usage: edgefit-quantize --model SPEC [--weights FILE]\n"
        "                        --calibration-data PATH --out DIR [options]\n"
        "       edgefit-quantize --model SPEC [--weights FILE]\n"
        "                        --calibration-file FILE --data PATH --out DIR\n"
        "\n"
        "Quantise a trained model to static int8 as it is deployed: the\n"
        "activation ranges of the fp32 model on calibration samples fix each\n"
        "tensor's scale and zero point once; weights are int8 symmetric per\n"
        "output channel, biases int32. Writes into DIR, all or nothing:\n"
        "  model.qdq.onnx     the model with QuantizeLinear/DequantizeLinear\n"
        "                     pairs as ONNX Runtime's quantize_static writes\n"
        "                     them (ONNX Runtime and edgefit read it)\n"
        "  calibration.json   the ranges, for --calibration-file\n"
        "  layer_error.csv    each tensor's error of static int8 against\n"
        "                     fp32 (sqnr_db, max_abs_error, rmse), the\n"
        "                     tensors that lose most first; layer_error.json\n"
        "                     holds it with the summary\n"
        "and prints which samples calibrated, the method, the worst layers\n"
        "and the share of samples whose int8 top-1 is fp32's (with the\n"
        "accuracies when the samples are labelled).\n"
        "\n"
        "  --model SPEC             a preset, a model file or an ONNX file\n"
        "  --weights FILE           the model's trained weights (safetensors,\n"
        "                           e.g. from edgefit-train); an ONNX model has\n"
        "                           its own\n"
        CLI_CALIBRATION_HELP
        "  --data PATH              samples to measure the error on (the test\n"
        "                           split of an IDX or NumPy folder, or ONNX\n"
        "                           test_data_set_* folders; default: the\n"
        "                           calibration samples)\n"
        "  --error-samples N        measure on the first N of them (default\n"
        "                           512; 0: all)\n"
        "  --out DIR                the folder to write (required)\n"
        "                           (replaced whole: a kill or a full disk leaves the\n"
        "                           old folder or the new one; '.', a mount point and a\n"
        "                           folder holding a folder are refused)\n"
        "  --format F               table|csv|json on stdout (default table;\n"
        "                           csv: the error table)\n"
        "  --quiet                  no progress on stderr\n"
        "  --help, --version\n"
        "\n"
        "sqnr_db is 10 log10(sum x^2 / sum (x - y)^2) over every element of\n"
        "every sample, x fp32's value and y what the int8 tensor represents;\n"
        "inf when they are equal. Exit status: 0 success, 1 runtime failure,\n"
        "2 bad usage or input.\n");
}

static const struct cli_app app = {"edgefit-quantize", EDGEFIT_VERSION,
                                   usage, cli_version_details};

static int parse_args(int argc, char **argv, struct options *o)
{
    enum { O_MODEL = 256, O_DATA, O_ERROR_SAMPLES };
    static const struct option longopts[] = {
        {"model", required_argument, NULL, O_MODEL},
        CLI_WEIGHTS_OPTION,
        CLI_CALIBRATION_OPTIONS,
        {"data", required_argument, NULL, O_DATA},
        {"error-samples", required_argument, NULL, O_ERROR_SAMPLES},
        CLI_QUIET_OPTION,
        CLI_COMMON_OPTIONS,
        {0, 0, 0, 0},
    };
    memset(o, 0, sizeof *o);
    o->error_samples = PROF_RANGES_DEFAULT_SAMPLES;
    calibration_opts_init(&o->cal);
    opterr = 0;
    if (cli_refuse_repeats(argc, argv, longopts, NULL) != CLI_EXIT_OK) {
        return CLI_EXIT_USAGE;
    }
    int c;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        const int k = calibration_option(c, optarg, &o->cal);
        if (k < 0) {
            return CLI_EXIT_USAGE;
        }
        if (k > 0) {
            continue;
        }
        switch (c) {
        case O_MODEL:
            o->model = optarg;
            break;
        case O_DATA:
            o->data = optarg;
            break;
        case O_ERROR_SAMPLES:
            if (!cli_parse_u64("--error-samples", optarg, 0, UINT64_MAX,
                               &o->error_samples)) {
                return CLI_EXIT_USAGE;
            }
            o->error_samples_given = true;
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
    if (!o->model) {
        cli_error("--model SPEC is required (the trained model to "
                  "quantise)");
        return CLI_EXIT_USAGE;
    }
    if (!o->co.out_dir) {
        cli_error("--out DIR is required (where model.qdq.onnx, "
                  "calibration.json and layer_error.csv go)");
        return CLI_EXIT_USAGE;
    }
    if (calibration_check(&o->cal) != CLI_EXIT_OK) {
        return CLI_EXIT_USAGE;
    }
    if (!calibration_given(&o->cal)) {
        cli_error("static int8 needs activation ranges: give "
                  "--calibration-data PATH (samples to calibrate on) or "
                  "--calibration-file FILE (ranges calibrated before)");
        return CLI_EXIT_USAGE;
    }
    if (o->cal.file && !o->data) {
        cli_error("--calibration-file %s: give --data PATH too (the samples "
                  "to measure the per-layer error on)", o->cal.file);
        return CLI_EXIT_USAGE;
    }
    return CLI_EXIT_OK;
}

/* ---- the error table ---- */

struct error_rows {
    const struct prof_quant_error *e;
    const size_t *order; /* worst first */
};

static const struct prof_tensor_error *row(const void *ctx, size_t i)
{
    const struct error_rows *r = ctx;
    return &r->e->tensors[r->order[i]];
}

static bool get_layer(const void *ctx, size_t i, union cli_value *v)
{
    v->s = row(ctx, i)->name;
    return v->s != NULL;
}

static bool get_kind(const void *ctx, size_t i, union cli_value *v)
{
    v->s = memest_kind_name(row(ctx, i)->kind);
    return v->s != NULL;
}

static bool get_sqnr(const void *ctx, size_t i, union cli_value *v)
{
    v->r = row(ctx, i)->sqnr_db;
    return !isnan(v->r);
}

static bool get_max_abs(const void *ctx, size_t i, union cli_value *v)
{
    v->r = row(ctx, i)->max_abs_error;
    return true;
}

static bool get_rmse(const void *ctx, size_t i, union cli_value *v)
{
    const struct prof_tensor_error *t = row(ctx, i);
    v->r = t->elements ? sqrt(t->error_sum_sq / (double)t->elements) : NAN;
    return t->elements > 0;
}

static bool get_scale(const void *ctx, size_t i, union cli_value *v)
{
    v->r = row(ctx, i)->scale;
    return v->r > 0;
}

static bool get_zero(const void *ctx, size_t i, union cli_value *v)
{
    v->i = row(ctx, i)->zero_point;
    return row(ctx, i)->scale > 0;
}

static const struct cli_column error_cols[] = {
    {"layer", ART_TEXT, get_layer, CLI_COL_KEY},
    {"kind", ART_TEXT, get_kind, CLI_COL_KEY},
    {"sqnr_db", ART_REAL, get_sqnr, CLI_COL_KEY},
    {"max_abs_error", ART_REAL, get_max_abs, CLI_COL_KEY},
    {"rmse", ART_REAL, get_rmse, CLI_COL_KEY},
    {"activation_scale", ART_REAL, get_scale, CLI_COL_KEY},
    {"activation_zero_point", ART_INT, get_zero, CLI_COL_KEY},
};

/* Worst first: the lowest SQNR (-inf, then finite, then +inf), ties in
 * the model's order, so the order is the same on every run. */
static const struct prof_quant_error *sort_e;
static int by_sqnr(const void *a, const void *b)
{
    const size_t i = *(const size_t *)a, j = *(const size_t *)b;
    const double x = sort_e->tensors[i].sqnr_db;
    const double y = sort_e->tensors[j].sqnr_db;
    if (x < y) {
        return -1;
    }
    if (x > y) {
        return 1;
    }
    return i < j ? -1 : i > j;
}

/* ---- the files ---- */

struct blob {
    const unsigned char *data;
    size_t len;
};

static int write_blob(const void *obj, FILE *f)
{
    const struct blob *b = obj;
    return fwrite(b->data, 1, b->len, f) == b->len ? ART_OK : ART_E_IO;
}

static int write_ranges(const void *obj, FILE *f)
{
    const int st = prof_ranges_write(obj, f);
    return st == PROF_OK ? ART_OK : st == PROF_E_NOMEM ? ART_E_NOMEM
                                                       : ART_E_IO;
}

/* Give the model each tensor's quantisation from the ranges and write it
 * as QDQ ONNX into *out (free()). */
static int export_qdq(memest_model *m, const struct prof_ranges *r,
                      unsigned char **out, size_t *len)
{
    for (size_t t = 0; t < r->count; t++) {
        const struct memest_quant q = {r->tensors[t].scale,
                                       r->tensors[t].zero_point, 0};
        const int st = memest_model_set_tensor_quant(m, t, &q);
        if (st != MEMEST_OK) {
            cli_error("tensor %s: its quantisation (scale %g, zero point "
                      "%d): %s", r->tensors[t].name, (double)q.scale,
                      (int)q.zero_point, memest_strerror(st));
            return CLI_EXIT_FAILURE;
        }
    }
    struct memest_diag md;
    memset(&md, 0, sizeof md);
    const int st = memest_model_to_onnx(m, out, len, &md);
    if (st != MEMEST_OK) {
        cli_error("QDQ ONNX: %s", md.message[0] ? md.message
                                                : memest_strerror(st));
        return st == MEMEST_E_NOMEM ? CLI_EXIT_FAILURE : CLI_EXIT_USAGE;
    }
    return CLI_EXIT_OK;
}

/* ---- the summary ---- */

struct summary {
    const char *model;
    char calibration[400];  /* where the ranges came from */
    char method[64];
    uint64_t calibration_samples;
    const char *error_what;   /* "training samples", ... */
    const char *error_data;   /* the folder */
    const struct prof_quant_error *e;
    const size_t *order;
};

static int summary_record(const struct summary *s, art_table **out)
{
    const struct prof_tensor_error *w =
        s->e->count ? &s->e->tensors[s->order[0]] : NULL;
    const struct cli_field f[] = {
        CLI_TEXT("model", s->model),
        CLI_TEXT("calibration_source", s->calibration),
        CLI_TEXT("calibration_method", s->method),
        CLI_UINT("calibration_samples", s->calibration_samples),
        CLI_TEXT("error_data", s->error_data),
        CLI_UINT("error_samples", s->e->samples),
        CLI_TEXT("worst_layer", w ? w->name : ""),
        {"worst_sqnr_db", ART_REAL, {.r = w ? w->sqnr_db : NAN},
         w && !isnan(w->sqnr_db)},
        CLI_REAL("top1_agreement", s->e->top1_agreement),
        CLI_REAL("fp32_accuracy", s->e->fp32_accuracy),
        CLI_REAL("int8_accuracy", s->e->int8_accuracy),
    };
    return cli_record_build("summary", f, sizeof f / sizeof f[0], out);
}

/* The terminal's summary: where the ranges came from, on what the error
 * was measured, the agreement, and the worst tensors. */
static int print_summary(const struct summary *s, const art_table *view,
                         const char *dir)
{
    const struct prof_quant_error *e = s->e;
    printf("Quantised %s to static int8 (%s).\n", s->model, s->method);
    printf("Calibration: %s.\n", s->calibration);
    printf("Error of int8 against fp32 measured on %" PRIu64 " %s, read "
           "from %s.\n", e->samples, s->error_what, s->error_data);
    if (e->classifier) {
        printf("Top-1 agreement of int8 with fp32: %.4f (%" PRIu64 " of %"
               PRIu64 " samples)", e->top1_agreement, e->top1_agree,
               e->samples);
        if (e->labelled) {
            printf("; accuracy fp32 %.4f, int8 %.4f", e->fp32_accuracy,
                   e->int8_accuracy);
        }
        printf(".\n");
    }
    const size_t shown = e->count < WORST_SHOWN ? e->count : WORST_SHOWN;
    printf("\nThe %zu tensors that lose most (lowest sqnr_db; all %zu in "
           "%s/layer_error.csv)\n", shown, e->count, dir);
    size_t rows[WORST_SHOWN];
    for (size_t i = 0; i < shown; i++) {
        rows[i] = i;
    }
    art_table *top = NULL;
    int st = cli_table_select(view, NULL, rows, shown, true, &top);
    if (st == ART_OK) {
        st = art_table_print_grouped(top, stdout);
    }
    art_table_destroy(top);
    return st;
}

int main(int argc, char **argv)
{
    cli_set_program("edgefit-quantize");
    struct options o;
    int rc = parse_args(argc, argv, &o);
    if (rc != CLI_EXIT_OK) {
        return cli_exit(rc);
    }
    memest_model *model = NULL;
    struct prof_ranges ranges = {0};
    struct prof_dataset samples = {0};
    struct prof_quant_error qe = {0};
    size_t *order = NULL;
    unsigned char *onnx = NULL;
    size_t onnx_len = 0;
    art_table *table = NULL, *view = NULL, *record = NULL;
    art_doc *doc = NULL;
    struct summary s;
    memset(&s, 0, sizeof s);
    if (cli_out_check(o.co.out_dir) != CLI_EXIT_OK) {
        return CLI_EXIT_USAGE;
    }
    if (o.cal.file && !cli_check_regular_file("--calibration-file",
                                              o.cal.file)) {
        return CLI_EXIT_USAGE;
    }
    rc = cli_model_load(o.model, o.co.weights, &model);
    if (rc != CLI_EXIT_OK) {
        goto done;
    }
    rc = CLI_EXIT_USAGE;
    /* Quantising initial weights would describe nothing deployed. */
    if (memest_model_parameter_count(model) > 0 &&
        !memest_model_has_weights(model)) {
        cli_error("--weights FILE is required: %s carries no weights (give "
                  "trained weights, e.g. from edgefit-train --out DIR, or an "
                  "ONNX model)", o.model);
        goto done;
    }
    /* The ranges first: their messages name --calibration-data or
     * --calibration-file. */
    char source[400];
    rc = calibration_ranges(model, &o.cal, NULL, NULL, &ranges, source,
                            sizeof source);
    if (rc != CLI_EXIT_OK) {
        goto done;
    }
    snprintf(s.calibration, sizeof s.calibration, "%s", source);
    calibration_method_text(ranges.method, ranges.percentile, s.method,
                            sizeof s.method);
    s.calibration_samples = ranges.samples;
    s.model = memest_model_name(model);
    /* the error's samples: --data, else the calibration's own */
    const char *opt = o.data ? "--data" : "--calibration-data";
    s.error_data = o.data ? o.data : o.cal.data;
    rc = data_load_folder(opt, s.error_data, o.data ? DATA_TEST : DATA_TRAIN,
                          o.error_samples, &samples, &s.error_what);
    if (rc != CLI_EXIT_OK) {
        goto done;
    }
    struct prof_diag pd;
    memset(&pd, 0, sizeof pd);
    int st = prof_dataset_check_input(model, &samples, &pd);
    if (st != PROF_OK) {
        char what[4200];
        snprintf(what, sizeof what, "%s %s", opt, s.error_data);
        rc = cli_prof_failed(what, st, &pd);
        goto done;
    }
    struct prof_quant_error_opts qo;
    prof_quant_error_opts_init(&qo);
    qo.samples = o.error_samples;
    qo.int8_requant = o.cal.requant;
    st = prof_quant_error(model, &samples, &ranges, &qo, &qe, &pd);
    if (st != PROF_OK) {
        rc = cli_prof_failed("per-layer error", st, &pd);
        goto done;
    }
    rc = export_qdq(model, &ranges, &onnx, &onnx_len);
    if (rc != CLI_EXIT_OK) {
        goto done;
    }
    rc = CLI_EXIT_FAILURE;
    order = malloc((qe.count ? qe.count : 1) * sizeof *order);
    if (!order) {
        cli_error("out of memory");
        goto done;
    }
    for (size_t i = 0; i < qe.count; i++) {
        order[i] = i;
    }
    sort_e = &qe;
    qsort(order, qe.count, sizeof *order, by_sqnr);
    s.e = &qe;
    s.order = order;
    const struct error_rows er = {&qe, order};
    const struct cli_column_set set = {
        error_cols, sizeof error_cols / sizeof error_cols[0], &er};
    if (cli_table_build("layer_error", &set, 1, qe.count, CLI_COL_ALL,
                        &table) != ART_OK ||
        cli_table_build("layer_error", &set, 1, qe.count, CLI_COL_KEY,
                        &view) != ART_OK ||
        summary_record(&s, &record) != ART_OK || art_doc_create(&doc) ||
        art_doc_set_table(doc, "summary", record) ||
        art_doc_set_table(doc, "layer_error", table)) {
        cli_error("out of memory");
        goto done;
    }

    /* The folder, all or nothing: the error table and its JSON, the
     * calibration file and the ONNX file. */
    const struct cli_out_file files[] = {
        {.name = "layer_error.csv", .csv = table},
        {.name = "layer_error.json", .doc = doc},
    };
    art_bundle *b = NULL;
    rc = cli_out_bundle(o.co.out_dir, files, 2, &b);
    if (rc != CLI_EXIT_OK) {
        goto done;
    }
    const struct blob blob = {onnx, onnx_len};
    st = art_bundle_add(b, "calibration.json", write_ranges, &ranges);
    st = st ? st : art_bundle_add(b, "model.qdq.onnx", write_blob, &blob);
    if (st != ART_OK) {
        art_bundle_destroy(b);
        cli_error("--out %s: %s", o.co.out_dir, art_strerror(st));
        goto done;
    }
    rc = cli_out_commit(b);
    if (rc != CLI_EXIT_OK) {
        goto done;
    }

    switch (o.co.format) {
    case CLI_FORMAT_CSV:
        st = art_table_write_csv_rounded(table, stdout, cli_round_file);
        break;
    case CLI_FORMAT_JSON:
        st = art_doc_write_rounded(doc, stdout, cli_round_file);
        break;
    case CLI_FORMAT_TABLE:
        st = print_summary(&s, view, o.co.out_dir);
        break;
    }
    rc = cli_stdout_finish(st);
done:
    art_doc_destroy(doc);
    art_table_destroy(record);
    art_table_destroy(view);
    art_table_destroy(table);
    free(order);
    free(onnx);
    prof_quant_error_finish(&qe);
    prof_dataset_finish(&samples);
    prof_ranges_finish(&ranges);
    memest_model_destroy(model);
    return cli_exit(rc);
}
