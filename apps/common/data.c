#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "data.h"
#include "edgefit/artifacts.h"
#include "model.h"
#include "validate.h"
#include "alloc_rec.h" /* last: it wraps malloc and co. */

/* A shape as "1x28x28" (rank 0: "a scalar"). */
static void shape_text(const uint64_t *dim, unsigned rank, char *buf,
                       size_t len)
{
    size_t n = 0;
    buf[0] = '\0';
    if (rank == 0) {
        snprintf(buf, len, "a scalar");
        return;
    }
    for (unsigned i = 0; i < rank; i++) {
        const int w = snprintf(buf + n, len - n, "%s%" PRIu64, i ? "x" : "",
                               dim[i]);
        if (w < 0 || (size_t)w >= len - n) {
            return;
        }
        n += (size_t)w;
    }
}

static bool exists(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0;
}

/* A libprofile failure on the data: bad input (2) unless memory ran out. */
static int prof_failed(const char *what, int st, const struct prof_diag *d)
{
    cli_prof_failed(what, st, d);
    return st == PROF_E_NOMEM ? CLI_EXIT_FAILURE : CLI_EXIT_USAGE;
}

/* Copy n floats, refusing a value that is not finite: the executor cannot
 * quantise it and the sums of the comparison would lose their meaning. */
static int copy_finite(float *dst, const float *src, size_t n,
                       size_t per, const char *path)
{
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(src[i])) {
            cli_error("%s: sample %zu holds %s (value %zu of the sample): "
                      "every value must be finite", path, i / per,
                      isnan(src[i]) ? "NaN" : "an infinity", i % per);
            return CLI_EXIT_USAGE;
        }
        dst[i] = src[i];
    }
    return CLI_EXIT_OK;
}

/* ---- --data: NumPy -------------------------------------------------------- */

/* Labels [N] (or [N, 1]) of an integer dtype, each 0 to 255, into y;
 * *n receives N. */
static int load_labels(const char *path, uint8_t **y, uint64_t *n)
{
    *y = NULL;
    art_npy *a = NULL;
    struct art_diag d;
    const int st = art_npy_load(path, &a, &d);
    if (st != ART_OK) {
        cli_error("%s", d.message);
        return st == ART_E_NOMEM ? CLI_EXIT_FAILURE : CLI_EXIT_USAGE;
    }
    const struct art_tensor *t = art_npy_tensor(a);
    int rc = CLI_EXIT_USAGE;
    if (t->ndim != 1 && !(t->ndim == 2 && t->shape[1] == 1)) {
        char s[200];
        shape_text(t->shape, (unsigned)t->ndim, s, sizeof s);
        cli_error("%s: labels of shape %s; they must be one integer per "
                  "sample, [N]", path, s);
        goto done;
    }
    const uint64_t count = t->shape[0];
    if (!(*y = malloc(count ? (size_t)count : 1))) {
        cli_error("%s: out of memory", path);
        rc = CLI_EXIT_FAILURE;
        goto done;
    }
    for (uint64_t i = 0; i < count; i++) {
        int64_t v = 0;
        switch (t->dtype) {
        case ART_DTYPE_I8:
            v = ((const int8_t *)t->data)[i];
            break;
        case ART_DTYPE_U8:
            v = ((const uint8_t *)t->data)[i];
            break;
        case ART_DTYPE_I32:
            v = ((const int32_t *)t->data)[i];
            break;
        case ART_DTYPE_I64:
            v = ((const int64_t *)t->data)[i];
            break;
        case ART_DTYPE_F32:
        case ART_DTYPE_F16:
        case ART_DTYPE_BF16:
        case ART_DTYPE_F64:
            cli_error("%s: labels of dtype %s; they must be integers "
                      "(int64, int32, int8 or uint8)", path,
                      art_dtype_name(t->dtype));
            goto done;
        }
        if (v < 0 || v > 255) {
            cli_error("%s: label %" PRId64 " of sample %" PRIu64 " is "
                      "outside 0 to 255 (a class index)", path, v, i);
            goto done;
        }
        (*y)[i] = (uint8_t)v;
    }
    *n = count;
    rc = CLI_EXIT_OK;
done:
    if (rc != CLI_EXIT_OK) {
        free(*y);
        *y = NULL;
    }
    art_npy_destroy(a);
    return rc;
}

static int load_npy_split(const char *opt, const char *inputs,
                          const char *labels, uint64_t max_count,
                          struct prof_dataset *out)
{
    if (!exists(labels)) {
        cli_error("%s: %s is missing: the labels of %s (one integer "
                  "per sample)", opt, labels, inputs);
        return CLI_EXIT_USAGE;
    }
    struct validate_ref x;
    int rc = validate_ref_load(inputs, &x);
    if (rc != CLI_EXIT_OK) {
        return rc;
    }
    uint8_t *y = NULL;
    uint64_t n_labels = 0;
    rc = load_labels(labels, &y, &n_labels);
    if (rc != CLI_EXIT_OK) {
        goto done;
    }
    rc = CLI_EXIT_USAGE;
    if (x.rank < 1) {
        cli_error("%s: a scalar; the inputs must be [N, ...], one sample "
                  "per row", inputs);
        goto done;
    }
    if (x.dim[0] != n_labels) {
        cli_error("%s holds %" PRIu64 " labels but %s holds %" PRIu64
                  " samples", labels, n_labels, inputs, x.dim[0]);
        goto done;
    }
    if (x.dim[0] == 0) {
        cli_error("%s: no samples", inputs);
        goto done;
    }
    const uint64_t take =
        max_count && max_count < x.dim[0] ? max_count : x.dim[0];
    /* [N] is N samples of one value. */
    const uint64_t one = 1;
    const unsigned rank = x.rank > 1 ? x.rank - 1 : 1;
    const uint64_t *shape = x.rank > 1 ? x.dim + 1 : &one;
    struct prof_diag pd = {0};
    const int st = prof_dataset_init(out, take, rank, shape, true, 0, NULL,
                                     inputs, &pd);
    if (st != PROF_OK) {
        rc = prof_failed(opt, st, &pd);
        goto done;
    }
    rc = copy_finite(out->x, x.data, (size_t)(take * out->sample_count),
                     (size_t)out->sample_count, inputs);
    if (rc != CLI_EXIT_OK) {
        prof_dataset_finish(out);
        goto done;
    }
    unsigned top = 0;
    for (uint64_t i = 0; i < take; i++) {
        out->y[i] = y[i];
        top = y[i] > top ? y[i] : top;
    }
    out->classes = top + 1;
done:
    free(y);
    validate_ref_free(&x);
    return rc;
}

bool data_has_split(const char *dir, enum data_split split)
{
    const char *d = dir ? dir : prof_dataset_default_dir();
    const bool train = split == DATA_TRAIN;
    char p[4200];
    snprintf(p, sizeof p, "%s/%s" DATA_NPY_INPUTS, d, train ? "train" : "test");
    if (exists(p)) {
        return true;
    }
    snprintf(p, sizeof p, "%s/%s-images-idx3-ubyte", d, train ? "train"
                                                               : "t10k");
    if (exists(p)) {
        return true;
    }
    snprintf(p, sizeof p, "%s/%s-images-idx3-ubyte.gz", d,
             train ? "train" : "t10k");
    return exists(p);
}

int data_load(const char *dir, enum data_split split, uint64_t max_count,
              struct prof_dataset *out)
{
    return data_load_as("--data", dir, split, max_count, out);
}

int data_load_as(const char *opt, const char *dir, enum data_split split,
                 uint64_t max_count, struct prof_dataset *out)
{
    memset(out, 0, sizeof *out);
    const char *d = dir ? dir : prof_dataset_default_dir();
    const char *name = split == DATA_TRAIN ? "train" : "test";
    char inputs[4200], labels[4200];
    snprintf(inputs, sizeof inputs, "%s/%s" DATA_NPY_INPUTS, d, name);
    snprintf(labels, sizeof labels, "%s/%s" DATA_NPY_LABELS, d, name);
    if (exists(inputs)) {
        return load_npy_split(opt, inputs, labels, max_count, out);
    }
    struct prof_diag pd = {0};
    const int st = prof_dataset_load(dir, split == DATA_TRAIN ? "train"
                                                              : "t10k",
                                     max_count, out, &pd);
    if (st != PROF_OK) {
        return prof_failed(opt, st, &pd);
    }
    return CLI_EXIT_OK;
}

/* Whether dir holds ONNX test data: input_0 itself, or test_data_set_*
 * folders (numbered from 0, or from 1 as some models' folders are). */
static bool has_onnx_test_data(const char *dir)
{
    static const char *const names[] = {"input_0.pb", "input_0.npy",
                                        "test_data_set_0", "test_data_set_1"};
    char p[4200];
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, names[i]);
        if (exists(p)) {
            return true;
        }
    }
    return false;
}

int data_load_folder(const char *opt, const char *dir,
                     enum data_split prefer, uint64_t max_count,
                     struct prof_dataset *out, const char **what)
{
    memset(out, 0, sizeof *out);
    struct stat sb;
    if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
        cli_error("%s %s: %s", opt, dir,
                  stat(dir, &sb) != 0
                      ? "no such folder"
                      : "not a folder (an IDX or NumPy folder, or ONNX "
                        "test_data_set_* folders)");
        return CLI_EXIT_USAGE;
    }
    const enum data_split other = prefer == DATA_TRAIN ? DATA_TEST
                                                       : DATA_TRAIN;
    enum data_split split = prefer;
    if (!data_has_split(dir, prefer)) {
        if (has_onnx_test_data(dir)) {
            *what = "samples";
            return data_load_reference_as(opt, dir, max_count, NULL, out);
        }
        if (!data_has_split(dir, other)) {
            cli_error("%s %s: no samples: neither train_inputs.npy nor "
                      "train-images-idx3-ubyte[.gz], test_inputs.npy, "
                      "t10k-images-idx3-ubyte[.gz], input_0 or "
                      "test_data_set_* folders",
                      opt, dir);
            return CLI_EXIT_USAGE;
        }
        split = other;
    }
    *what = split == DATA_TRAIN ? "training samples" : "test samples";
    return data_load_as(opt, dir, split, max_count, out);
}

/* ---- --test-data ------------------------------------------------------------ */

/* The sets of dir: dir itself when it holds input_0, else its
 * test_data_set_* folders. */
static int find_sets(const char *opt, const char *dir, char ***dirs,
                     size_t *n)
{
    char p[4200];
    *dirs = NULL;
    *n = 0;
    static const char *const own[] = {"input_0.pb", "input_0.npy",
                                      "output_0.pb", "output_0.npy"};
    for (size_t i = 0; i < 4; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, own[i]);
        if (exists(p)) {
            if (!(*dirs = malloc(sizeof **dirs)) ||
                !((*dirs)[0] = strdup(dir))) {
                free(*dirs);
                *dirs = NULL;
                return cli_nomem("the --test-data folder's name",
                                 sizeof **dirs + strlen(dir) + 1);
            }
            *n = 1;
            return CLI_EXIT_OK;
        }
    }
    snprintf(p, sizeof p, "%s %s", opt, dir);
    if (!validate_find_sets_in(dir, p, dirs, n)) {
        return CLI_EXIT_USAGE;
    }
    if (*n == 0) {
        cli_error("%s %s: no input_0.pb or input_0.npy, and no "
                  "test_data_set_* folder", opt, dir);
        return CLI_EXIT_USAGE;
    }
    return CLI_EXIT_OK;
}

/* The samples and per-sample shape of a reference tensor: its first axis
 * counts the samples ([N] is N samples of one value). */
static bool split_batch(const struct validate_ref *r, uint64_t *samples,
                        unsigned *rank, const uint64_t **shape)
{
    static const uint64_t one = 1;
    if (r->rank == 0) {
        return false;
    }
    *samples = r->dim[0];
    *rank = r->rank > 1 ? r->rank - 1 : 1;
    *shape = r->rank > 1 ? r->dim + 1 : &one;
    return true;
}

static bool same_shape(const uint64_t *a, unsigned na, const uint64_t *b,
                       unsigned nb)
{
    return na == nb && memcmp(a, b, na * sizeof *a) == 0;
}

int data_load_reference(const char *dir, uint64_t max_count,
                        const memest_model *model, struct prof_dataset *out)
{
    return data_load_reference_as("--test-data", dir, max_count, model,
                                  out);
}

int data_load_reference_as(const char *opt, const char *dir,
                           uint64_t max_count, const memest_model *model,
                           struct prof_dataset *out)
{
    memset(out, 0, sizeof *out);
    char **dirs = NULL;
    size_t n = 0;
    int rc = find_sets(opt, dir, &dirs, &n);
    if (rc != CLI_EXIT_OK) {
        return rc;
    }
    struct validate_set *sets = calloc(n, sizeof *sets);
    if (!sets) {
        validate_dirs_free(dirs, n);
        return cli_nomem("the list of test sets", n * sizeof *sets);
    }
    size_t loaded = 0;
    uint64_t total = 0;
    unsigned in_rank = 0, out_rank = 0;
    const uint64_t *in_shape = NULL, *out_shape = NULL;
    char a[200], b[200];
    for (size_t i = 0; i < n; i++) {
        rc = validate_set_load(dirs[i], &sets[i]);
        if (rc != CLI_EXIT_OK) {
            goto done;
        }
        loaded++;
        struct validate_set *s = &sets[i];
        rc = CLI_EXIT_USAGE;
        if (s->n_inputs != 1 || s->n_outputs != 1) {
            cli_error("%s %s: %zu input%s and %zu output%s; this "
                      "reads one of each (edgefit-validate runs the "
                      "others)", opt, s->dir, s->n_inputs,
                      s->n_inputs == 1 ? "" : "s", s->n_outputs,
                      s->n_outputs == 1 ? "" : "s");
            goto done;
        }
        if (model && memest_model_input_count(model) == 1 &&
            ((rc = validate_ref_batch_first(
                  &s->inputs[0], memest_model_input_batch_axis(model, 0),
                  memest_model_input_shape(model))) != CLI_EXIT_OK ||
             (rc = validate_ref_batch_first(
                  &s->outputs[0], memest_model_output_batch_axis(model),
                  memest_model_output_shape(model))) != CLI_EXIT_OK)) {
            goto done;
        }
        rc = CLI_EXIT_USAGE;
        uint64_t ni, no;
        unsigned ri, ro;
        const uint64_t *si, *so;
        if (!split_batch(&s->inputs[0], &ni, &ri, &si) ||
            !split_batch(&s->outputs[0], &no, &ro, &so)) {
            cli_error("%s: a scalar; a reference tensor is [N, ...], the "
                      "samples first", s->inputs[0].rank == 0
                                           ? s->inputs[0].path
                                           : s->outputs[0].path);
            goto done;
        }
        if (ni != no) {
            cli_error("%s holds %" PRIu64 " samples but %s holds %" PRIu64,
                      s->outputs[0].path, no, s->inputs[0].path, ni);
            goto done;
        }
        if (i == 0) {
            in_rank = ri;
            in_shape = si;
            out_rank = ro;
            out_shape = so;
        } else if (!same_shape(si, ri, in_shape, in_rank) ||
                   !same_shape(so, ro, out_shape, out_rank)) {
            const bool in = !same_shape(si, ri, in_shape, in_rank);
            shape_text(in ? si : so, in ? ri : ro, a, sizeof a);
            shape_text(in ? in_shape : out_shape, in ? in_rank : out_rank,
                       b, sizeof b);
            cli_error("%s: samples of shape %s, but %s holds samples of "
                      "shape %s", in ? s->inputs[0].path : s->outputs[0].path,
                      a, sets[0].dir, b);
            goto done;
        }
        total += ni;
        rc = CLI_EXIT_OK;
    }
    if (total == 0) {
        cli_error("%s %s: no samples (the first dimension is 0)", opt,
                  dir);
        rc = CLI_EXIT_USAGE;
        goto done;
    }
    const uint64_t take = max_count && max_count < total ? max_count : total;
    struct prof_diag pd = {0};
    int st = prof_dataset_init(out, take, in_rank, in_shape, false, out_rank,
                               out_shape, dir, &pd);
    if (st != PROF_OK) {
        rc = prof_failed(opt, st, &pd);
        goto done;
    }
    uint64_t at = 0;
    for (size_t i = 0; i < n && at < take && rc == CLI_EXIT_OK; i++) {
        const struct validate_set *s = &sets[i];
        const uint64_t rows = s->inputs[0].dim[0] < take - at
                                  ? s->inputs[0].dim[0] : take - at;
        rc = copy_finite(out->x + at * out->sample_count, s->inputs[0].data,
                         (size_t)(rows * out->sample_count),
                         (size_t)out->sample_count, s->inputs[0].path);
        if (rc == CLI_EXIT_OK) {
            /* A reference output may hold an infinity or NaN the model
             * really gives: the comparison matches it like for like. */
            memcpy(out->ref + at * out->ref_count, s->outputs[0].data,
                   (size_t)(rows * out->ref_count) * sizeof(float));
        }
        at += rows;
    }
    if (rc != CLI_EXIT_OK) {
        prof_dataset_finish(out);
    }
done:
    for (size_t i = 0; i < loaded; i++) {
        validate_set_free(&sets[i]);
    }
    free(sets);
    validate_dirs_free(dirs, n);
    return rc;
}

/* ---- the check ---------------------------------------------------------------- */

static uint64_t elements(struct memest_shape s)
{
    uint64_t n = s.rank ? 1 : 0;
    for (unsigned i = 0; i < s.rank; i++) {
        n *= s.dim[i];
    }
    return n;
}

/* A message only when the caller wants one. */
#define SAY(...)                                                            \
    do {                                                                    \
        if (say) {                                                          \
            cli_error(__VA_ARGS__);                                         \
        }                                                                   \
    } while (0)

/* data_check(), saying why only when say is true. */
static int check(const memest_model *model, const struct prof_dataset *d,
                 const char *opt, bool say)
{
    const char *name = memest_model_name(model);
    const char *src = d->source ? d->source : "";
    char have[200], want[200];
    const size_t ni = memest_model_input_count(model);
    if (ni != 1) {
        SAY("%s: the model %s has %zu inputs; %s feeds one "
                  "(edgefit-validate runs a model of several inputs)", opt,
                  name, ni, opt);
        return CLI_EXIT_USAGE;
    }
    /* the input's rule is the library's (calibration checks it too) */
    struct prof_diag pd;
    if (prof_dataset_check_input(model, d, &pd) != PROF_OK) {
        SAY("%s: %s", opt, pd.message);
        return CLI_EXIT_USAGE;
    }
    const struct memest_shape o = memest_model_output_shape(model);
    shape_text(o.dim, o.rank, want, sizeof want);
    if (o.rank == 1) {
        strcat(want, " values");
    }
    if (d->y) {
        if (!validate_is_classifier(model)) {
            SAY("%s: the data has labels (classes 0 to %u) but the "
                      "model %s gives %s per sample, not class scores "
                      "(give reference outputs with --test-data)", opt,
                      d->classes ? d->classes - 1 : 0, name, want);
            return CLI_EXIT_USAGE;
        }
        if (d->classes > elements(o)) {
            SAY("%s: the labels go up to %u (%s) but the model %s has "
                      "%" PRIu64 " outputs (classes 0 to %" PRIu64 ")", opt,
                      d->classes - 1, src, name, elements(o),
                      elements(o) - 1);
            return CLI_EXIT_USAGE;
        }
    }
    if (d->ref &&
        !prof_shapes_match(d->ref_shape, d->ref_rank, o.dim, o.rank)) {
        shape_text(d->ref_shape, d->ref_rank, have, sizeof have);
        SAY("%s: the model %s gives %s per sample; the reference "
                  "outputs are %s per sample (%s)", opt, name, want, have,
                  src);
        return CLI_EXIT_USAGE;
    }
    return CLI_EXIT_OK;
}

#undef SAY

int data_check(const memest_model *model, const struct prof_dataset *d,
               const char *opt)
{
    return check(model, d, opt, true);
}

bool data_fits(const memest_model *model, const struct prof_dataset *d)
{
    return check(model, d, "", false) == CLI_EXIT_OK;
}

const char *data_feed_note(const memest_model *model,
                           const struct prof_dataset *d, char *buf,
                           size_t len)
{
    if (!buf || len == 0) {
        return "";
    }
    buf[0] = '\0';
    if (!model || !d || memest_model_input_count(model) != 1) {
        return buf;
    }
    const struct memest_shape in = memest_model_input_shape_at(model, 0);
    if (in.rank != 2 || (d->rank == 2 && d->shape[0] == in.dim[0] &&
                         d->shape[1] == in.dim[1])) {
        return buf; /* not a sequence, or nothing to say */
    }
    char have[200], want[200];
    shape_text(d->shape, d->rank, have, sizeof have);
    shape_text(in.dim, in.rank, want, sizeof want);
    /* IDX images are rows x cols, row-major: the model's step t is the
     * image's row t exactly when the steps are the rows */
    const bool rows = d->rows && d->rows == in.dim[0] && d->cols == in.dim[1];
    snprintf(buf, len,
             "%s %s fed as the model's input %s, a sequence of %" PRIu64
             " steps of %" PRIu64 " features (%sthe same %" PRIu64
             " values in the same order)",
             d->rows ? "images" : "samples", have, want, in.dim[0],
             in.dim[1], rows ? "row r of an image is step r; " : "",
             d->sample_count);
    return buf;
}

double data_accuracy_stderr(double p, uint64_t n)
{
    if (n == 0 || !(p >= 0.0 && p <= 1.0)) {
        return NAN;
    }
    return sqrt(p * (1.0 - p) / (double)n);
}
