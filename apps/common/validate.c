#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "edgefit/artifacts.h"
#include "edgefit/kernels.h"
#include "model.h"
#include "validate.h"
#include "alloc_rec.h" /* last: it wraps malloc and co. */

/* ---- finding and reading the sets ------------------------------------------ */

void validate_dirs_free(char **dirs, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(dirs[i]);
    }
    free(dirs);
}

/* test_data_set_2 before test_data_set_10: the shorter name first, then
 * in byte order. */
static int by_set_number(const void *a, const void *b)
{
    const char *x = *(const char *const *)a, *y = *(const char *const *)b;
    const size_t nx = strlen(x), ny = strlen(y);
    return nx != ny ? (nx < ny ? -1 : 1) : strcmp(x, y);
}

bool validate_find_sets(const char *model_path, char ***dirs, size_t *n)
{
    *dirs = NULL;
    *n = 0;
    const char *slash = strrchr(model_path, '/');
    char *dir = slash ? strndup(model_path, (size_t)(slash - model_path) +
                                                (slash == model_path))
                      : strdup(".");
    if (!dir) {
        cli_nomem("the folder name of --model", strlen(model_path) + 1);
        return false;
    }
    char what[4200];
    snprintf(what, sizeof what, "--model %s", model_path);
    const bool ok = validate_find_sets_in(dir, what, dirs, n);
    free(dir);
    return ok;
}

bool validate_find_sets_in(const char *dir, const char *what, char ***dirs,
                           size_t *n)
{
    *dirs = NULL;
    *n = 0;
    /* Read with opendir rather than glob so that no character of the
     * path is taken for a pattern. */
    char **out = NULL;
    size_t k = 0, cap = 0;
    DIR *d = opendir(dir);
    if (!d) {
        cli_error("%s: cannot list its folder: %s", what, strerror(errno));
        return false;
    }
    struct dirent *e;
    bool good = true;
    while (good && (e = readdir(d))) {
        if (strncmp(e->d_name, "test_data_set_", 14) != 0) {
            continue;
        }
        char *path = malloc(strlen(dir) + strlen(e->d_name) + 2);
        struct stat sb;
        if (!path) {
            good = false;
            break;
        }
        sprintf(path, "%s/%s", dir, e->d_name);
        if (stat(path, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
            free(path); /* a file of that name, not a set */
            continue;
        }
        if (k == cap) {
            cap = cap ? 2 * cap : 8;
            char **grown = realloc(out, cap * sizeof *out);
            if (!grown) {
                free(path);
                good = false;
                break;
            }
            out = grown;
        }
        out[k++] = path;
    }
    closedir(d);
    if (!good) {
        validate_dirs_free(out, k);
        cli_nomem("the list of test_data_set_* folders",
                  (k + 1) * sizeof *out + strlen(dir) + 256);
        return false;
    }
    if (k > 1) {
        qsort(out, k, sizeof *out, by_set_number);
    }
    *dirs = out;
    *n = k;
    return true;
}

static void ref_free(struct validate_ref *r)
{
    free(r->path);
    free(r->name);
    free(r->data);
    memset(r, 0, sizeof *r);
}

void validate_set_free(struct validate_set *s)
{
    for (size_t i = 0; i < s->n_inputs; i++) {
        ref_free(&s->inputs[i]);
    }
    for (size_t i = 0; i < s->n_outputs; i++) {
        ref_free(&s->outputs[i]);
    }
    free(s->inputs);
    free(s->outputs);
    free(s->dir);
    memset(s, 0, sizeof *s);
}

/* A .npy array of any dtype the reader takes, as float32: 16-bit floats
 * widened exactly by libkernels, integers and doubles rounded once. */
static int load_npy(const char *path, struct validate_ref *r)
{
    art_npy *a = NULL;
    struct art_diag d;
    const int st = art_npy_load(path, &a, &d);
    if (st != ART_OK) {
        cli_error("%s", d.message);
        return st == ART_E_NOMEM ? CLI_EXIT_FAILURE : CLI_EXIT_USAGE;
    }
    const struct art_tensor *t = art_npy_tensor(a);
    size_t count = 1;
    for (size_t i = 0; i < t->ndim; i++) {
        /* art_npy_load checked the size against the file's bytes. */
        count *= (size_t)t->shape[i];
        r->dim[i] = t->shape[i];
    }
    r->rank = (unsigned)t->ndim;
    r->count = count;
    if (!(r->data = malloc((count ? count : 1) * sizeof(float)))) {
        art_npy_destroy(a);
        cli_error("%s: out of memory", path);
        return CLI_EXIT_FAILURE;
    }
    for (size_t i = 0; i < count; i++) {
        float v = 0.0f;
        switch (t->dtype) {
        case ART_DTYPE_F32:
            v = ((const float *)t->data)[i];
            break;
        case ART_DTYPE_F16:
            v = kern_f16_to_f32_1(((const uint16_t *)t->data)[i]);
            break;
        case ART_DTYPE_BF16:
            v = kern_bf16_to_f32_1(((const uint16_t *)t->data)[i]);
            break;
        case ART_DTYPE_F64:
            v = (float)((const double *)t->data)[i];
            break;
        case ART_DTYPE_I8:
            v = (float)((const int8_t *)t->data)[i];
            break;
        case ART_DTYPE_U8:
            v = (float)((const uint8_t *)t->data)[i];
            break;
        case ART_DTYPE_I32:
            v = (float)((const int32_t *)t->data)[i];
            break;
        case ART_DTYPE_I64:
            v = (float)((const int64_t *)t->data)[i];
            break;
        }
        r->data[i] = v;
    }
    art_npy_destroy(a);
    return CLI_EXIT_OK;
}

static int load_pb(const char *path, struct validate_ref *r)
{
    struct memest_owned_tensor t;
    struct memest_diag md;
    memset(&t, 0, sizeof t);
    const int st = memest_tensor_load_pb(path, &t, &md);
    if (st != MEMEST_OK) {
        char msg[600];
        memest_diag_format(&md, msg, sizeof msg);
        cli_error("%s", msg);
        memest_owned_tensor_free(&t);
        return st == MEMEST_E_NOMEM ? CLI_EXIT_FAILURE : CLI_EXIT_USAGE;
    }
    size_t count = 1;
    for (unsigned i = 0; i < t.t.rank; i++) {
        count *= (size_t)t.t.dim[i];
        r->dim[i] = t.t.dim[i];
    }
    r->rank = t.t.rank;
    r->count = count;
    /* Take the loader's buffer and name. */
    r->data = t.data;
    t.data = NULL;
    if (t.name && t.name[0]) {
        r->name = t.name;
        t.name = NULL;
    }
    memest_owned_tensor_free(&t);
    return CLI_EXIT_OK;
}

int validate_ref_load(const char *path, struct validate_ref *r)
{
    memset(r, 0, sizeof *r);
    const size_t n = strlen(path);
    const bool pb = n >= 3 && strcmp(path + n - 3, ".pb") == 0;
    if (!(r->path = strdup(path))) {
        return cli_nomem("a test file's name", n + 1);
    }
    const int rc = pb ? load_pb(path, r) : load_npy(path, r);
    if (rc != CLI_EXIT_OK) {
        ref_free(r);
    }
    return rc;
}

void validate_ref_free(struct validate_ref *r)
{
    ref_free(r);
}

enum { SIDE_INPUT, SIDE_OUTPUT };

/* input_K.pb / output_K.npy: the side, K and whether it is .pb; false for
 * any other name. */
static bool parse_name(const char *name, int *side, unsigned long *k,
                       bool *pb)
{
    const char *p;
    if (strncmp(name, "input_", 6) == 0) {
        *side = SIDE_INPUT;
        p = name + 6;
    } else if (strncmp(name, "output_", 7) == 0) {
        *side = SIDE_OUTPUT;
        p = name + 7;
    } else {
        return false;
    }
    if (*p < '0' || *p > '9' || (p[0] == '0' && p[1] >= '0' && p[1] <= '9')) {
        return false;
    }
    char *end;
    errno = 0;
    *k = strtoul(p, &end, 10);
    if (errno || *k > 4096) {
        return false;
    }
    if (strcmp(end, ".pb") == 0) {
        *pb = true;
    } else if (strcmp(end, ".npy") == 0) {
        *pb = false;
    } else {
        return false;
    }
    return true;
}

int validate_set_load(const char *dir, struct validate_set *s)
{
    memset(s, 0, sizeof *s);
    DIR *d = opendir(dir);
    if (!d) {
        cli_error("--test-data %s: %s", dir, strerror(errno));
        return CLI_EXIT_USAGE;
    }
    if (!(s->dir = strdup(dir))) {
        closedir(d);
        return cli_nomem("the --test-data folder's name", strlen(dir) + 1);
    }
    const char *slash = strrchr(s->dir, '/');
    s->name = slash && slash[1] ? slash + 1 : s->dir;
    /* Count first: the highest K of each side, and a file of each K. */
    unsigned long max[2] = {0, 0};
    size_t count[2] = {0, 0};
    struct dirent *e;
    while ((e = readdir(d))) {
        int side;
        unsigned long k;
        bool pb;
        if (parse_name(e->d_name, &side, &k, &pb)) {
            count[side]++;
            max[side] = k + 1 > max[side] ? k + 1 : max[side];
        }
    }
    closedir(d);
    static const char *const what[2] = {"input", "output"};
    for (int side = 0; side < 2; side++) {
        if (count[side] == 0) {
            cli_error("--test-data %s: no %s_0.pb or %s_0.npy", dir,
                      what[side], what[side]);
            validate_set_free(s);
            return CLI_EXIT_USAGE;
        }
    }
    s->inputs = calloc(max[0], sizeof *s->inputs);
    s->outputs = calloc(max[1], sizeof *s->outputs);
    if (!s->inputs || !s->outputs) {
        validate_set_free(s);
        return cli_nomem("the lists of test inputs and outputs",
                         (max[0] + max[1]) * sizeof *s->inputs);
    }
    int rc = CLI_EXIT_OK;
    for (int side = 0; side < 2 && rc == CLI_EXIT_OK; side++) {
        struct validate_ref *refs = side == SIDE_INPUT ? s->inputs
                                                       : s->outputs;
        for (unsigned long k = 0; k < max[side]; k++) {
            char pb[4200], npy[4200];
            snprintf(pb, sizeof pb, "%s/%s_%lu.pb", dir, what[side], k);
            snprintf(npy, sizeof npy, "%s/%s_%lu.npy", dir, what[side], k);
            struct stat st;
            const bool has_pb = stat(pb, &st) == 0;
            const bool has_npy = stat(npy, &st) == 0;
            if (has_pb && has_npy) {
                cli_error("--test-data %s: both %s_%lu.pb and %s_%lu.npy: "
                          "keep one", dir, what[side], k, what[side], k);
                rc = CLI_EXIT_USAGE;
                break;
            }
            if (!has_pb && !has_npy) {
                cli_error("--test-data %s: %s_%lu.pb or .npy is missing "
                          "(%s_%lu is there)", dir, what[side], k,
                          what[side], max[side] - 1);
                rc = CLI_EXIT_USAGE;
                break;
            }
            struct validate_ref *r = &refs[k];
            char name[64];
            snprintf(name, sizeof name, "%s_%lu", what[side], k);
            if (!(r->path = strdup(has_pb ? pb : npy))) {
                rc = cli_nomem("a test file's name",
                               strlen(has_pb ? pb : npy) + 1);
                break;
            }
            if (side == SIDE_INPUT) {
                s->n_inputs++;
            } else {
                s->n_outputs++;
            }
            rc = has_pb ? load_pb(r->path, r) : load_npy(r->path, r);
            if (rc == CLI_EXIT_OK && !r->name && !(r->name = strdup(name))) {
                rc = cli_nomem("a test tensor's name", strlen(name) + 1);
            }
            if (rc != CLI_EXIT_OK) {
                break;
            }
        }
    }
    if (rc != CLI_EXIT_OK) {
        validate_set_free(s);
    }
    return rc;
}

/* ---- the model and the shapes ------------------------------------------------ */

static bool ends_with(const char *s, const char *suffix)
{
    const size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

int validate_model_load(const char *spec, const struct validate_set *s,
                        memest_model **out)
{
    *out = NULL;
    if (!s || !ends_with(spec, ".onnx") || memest_is_preset_name(spec)) {
        return cli_model_load(spec, NULL, out);
    }
    struct memest_tensor *c = calloc(s->n_inputs, sizeof *c);
    if (!c) {
        return cli_nomem("the model's input tensors",
                         s->n_inputs * sizeof *c);
    }
    for (size_t i = 0; i < s->n_inputs; i++) {
        const struct validate_ref *r = &s->inputs[i];
        c[i].name = r->name;
        c[i].rank = r->rank;
        memcpy(c[i].dim, r->dim, sizeof c[i].dim);
        c[i].data = r->data;
    }
    const struct memest_onnx_opts opts = {c, s->n_inputs};
    struct memest_diag md;
    const int st = memest_model_load_onnx(spec, &opts, out, &md);
    free(c);
    if (st != MEMEST_OK) {
        char msg[600];
        memest_diag_format(&md, msg, sizeof msg);
        cli_error("%s", msg);
        return st == MEMEST_E_NOMEM ? CLI_EXIT_FAILURE : CLI_EXIT_USAGE;
    }
    return CLI_EXIT_OK;
}

static void ref_shape_text(const struct validate_ref *r, char *buf,
                           size_t cap)
{
    size_t n = 0;
    buf[0] = '\0';
    if (r->rank == 0) {
        snprintf(buf, cap, "a scalar");
        return;
    }
    for (unsigned i = 0; i < r->rank && n < cap; i++) {
        n += (size_t)snprintf(buf + n, cap - n, "%s%" PRIu64, i ? "x" : "",
                              r->dim[i]);
    }
}

/* The samples r holds when it is a batch of shape (batch first) or one
 * sample of exactly that shape, or either up to axes of size 1 (an ONNX
 * model's 1-D signals N x C x L are held as N x C x 1 x L); false when it
 * is none of these. */
static bool samples_of(const struct validate_ref *r, struct memest_shape s,
                       uint64_t *samples)
{
    bool same = r->rank == s.rank + 1;
    for (unsigned i = 0; same && i < s.rank; i++) {
        same = r->dim[i + 1] == s.dim[i];
    }
    if (same) {
        *samples = r->dim[0];
        return true;
    }
    same = r->rank == s.rank;
    for (unsigned i = 0; same && i < s.rank; i++) {
        same = r->dim[i] == s.dim[i];
    }
    if (same) {
        *samples = 1;
        return true;
    }
    if (r->rank >= 1 &&
        prof_shapes_match(r->dim + 1, r->rank - 1, s.dim, s.rank)) {
        *samples = r->dim[0];
        return true;
    }
    return false;
}

static int shape_mismatch(const struct validate_ref *r, const char *what,
                          struct memest_shape s)
{
    char have[200], want[MEMEST_SHAPE_TEXT_MAX];
    ref_shape_text(r, have, sizeof have);
    memest_shape_format(&s, want, sizeof want);
    cli_error("%s: %s '%s' has shape %s; the model's is N x %s (N samples)",
              r->path, what, r->name, have, want);
    return CLI_EXIT_USAGE;
}

/* r's data with its axis `axis` moved first (the batch of a time-major
 * [T, N, D]: sample n's rows are then contiguous), when r has one axis
 * more than the per-sample shape s; a tensor of exactly s is one sample
 * and stays. */
int validate_ref_batch_first(struct validate_ref *r, unsigned axis,
                             struct memest_shape s)
{
    if (axis == 0 || r->rank != s.rank + 1 || axis >= r->rank) {
        return CLI_EXIT_OK;
    }
    /* r->count = outer * n * inner, checked when it was read */
    size_t outer = 1, inner = 1;
    const size_t n = (size_t)r->dim[axis];
    for (unsigned i = 0; i < axis; i++) {
        outer *= (size_t)r->dim[i];
    }
    for (unsigned i = axis + 1; i < r->rank; i++) {
        inner *= (size_t)r->dim[i];
    }
    float *moved = malloc((r->count ? r->count : 1) * sizeof *moved);
    if (!moved) {
        cli_error("%s: out of memory (%zu bytes to move the batch, axis %u, "
                  "first)", r->path, r->count * sizeof *moved, axis);
        return CLI_EXIT_FAILURE;
    }
    for (size_t o = 0; o < outer; o++) {
        for (size_t b = 0; b < n; b++) {
            memcpy(moved + (b * outer + o) * inner,
                   r->data + (o * n + b) * inner, inner * sizeof *moved);
        }
    }
    free(r->data);
    r->data = moved;
    const uint64_t nb = r->dim[axis];
    memmove(r->dim + 1, r->dim, axis * sizeof r->dim[0]);
    r->dim[0] = nb;
    return CLI_EXIT_OK;
}

int validate_match(const memest_model *model, struct validate_set *s,
                   size_t *map, uint64_t *samples)
{
    const size_t ni = memest_model_input_count(model);
    bool by_name = true;
    for (size_t k = 0; k < ni && by_name; k++) {
        const char *name = memest_model_input_name(model, k);
        by_name = false;
        for (size_t j = 0; j < s->n_inputs; j++) {
            if (strcmp(s->inputs[j].name, name) == 0) {
                map[k] = j;
                by_name = true;
                break;
            }
        }
    }
    if (!by_name) {
        if (s->n_inputs != ni) {
            cli_error("--test-data %s: %zu input files for a model of %zu "
                      "input%s (by name: %s%s)", s->dir, s->n_inputs, ni,
                      ni == 1 ? "" : "s", memest_model_input_name(model, 0),
                      ni > 1 ? ", ..." : "");
            return CLI_EXIT_USAGE;
        }
        for (size_t k = 0; k < ni; k++) {
            map[k] = k;
        }
    }
    uint64_t n = 0;
    for (size_t k = 0; k < ni; k++) {
        struct validate_ref *r = &s->inputs[map[k]];
        uint64_t rows;
        const int moved = validate_ref_batch_first(
            r, memest_model_input_batch_axis(model, k),
            memest_model_input_shape_at(model, k));
        if (moved != CLI_EXIT_OK) {
            return moved;
        }
        if (!samples_of(r, memest_model_input_shape_at(model, k), &rows)) {
            return shape_mismatch(r, "input",
                                  memest_model_input_shape_at(model, k));
        }
        if (k > 0 && rows != n) {
            cli_error("%s: %" PRIu64 " samples, but %s has %" PRIu64,
                      r->path, rows, s->inputs[map[0]].path, n);
            return CLI_EXIT_USAGE;
        }
        n = rows;
    }
    if (n == 0) {
        cli_error("%s: no samples (the first dimension is 0)",
                  s->inputs[map[0]].path);
        return CLI_EXIT_USAGE;
    }
    if (s->n_outputs != 1) {
        cli_error("--test-data %s: %zu output files; the model has one "
                  "output", s->dir, s->n_outputs);
        return CLI_EXIT_USAGE;
    }
    uint64_t rows;
    const struct memest_shape os = memest_model_output_shape(model);
    const int moved = validate_ref_batch_first(
        &s->outputs[0], memest_model_output_batch_axis(model), os);
    if (moved != CLI_EXIT_OK) {
        return moved;
    }
    if (!samples_of(&s->outputs[0], os, &rows)) {
        return shape_mismatch(&s->outputs[0], "output", os);
    }
    if (rows != n) {
        cli_error("%s: %" PRIu64 " samples, but the inputs have %" PRIu64,
                  s->outputs[0].path, rows, n);
        return CLI_EXIT_USAGE;
    }
    *samples = n;
    return CLI_EXIT_OK;
}

/* ---- running ------------------------------------------------------------------ */

/* Feed every sample through ex, batch by batch (the last one padded with
 * zeros, its padding not kept), into out (samples x output elements). */
static int run_all(prof_exec *ex, const memest_model *model,
                   const struct validate_set *s, const size_t *map,
                   uint64_t samples, uint64_t b, float *out)
{
    const size_t ni = memest_model_input_count(model);
    size_t in_per[VALIDATE_MAX_INPUTS], n_in[VALIDATE_MAX_INPUTS];
    const float *ins[VALIDATE_MAX_INPUTS];
    float *stage[VALIDATE_MAX_INPUTS] = {0};
    int rc = CLI_EXIT_OK;
    const size_t out_count = prof_exec_output_count(ex);
    const size_t out_each = out_count / (size_t)b;
    float *y = malloc((out_count ? out_count : 1) * sizeof *y);
    for (size_t k = 0; k < ni; k++) {
        in_per[k] = s->inputs[map[k]].count / (size_t)samples;
        n_in[k] = in_per[k] * (size_t)b;
        stage[k] = calloc(n_in[k] ? n_in[k] : 1, sizeof(float));
        if (!stage[k]) {
            rc = CLI_EXIT_FAILURE;
        }
    }
    if (!y || rc != CLI_EXIT_OK) {
        cli_error("%s: out of memory", s->dir);
        rc = CLI_EXIT_FAILURE;
        goto done;
    }
    for (uint64_t s0 = 0; s0 < samples; s0 += b) {
        const size_t rows = (size_t)(samples - s0 < b ? samples - s0 : b);
        for (size_t k = 0; k < ni; k++) {
            const float *src = s->inputs[map[k]].data +
                               (size_t)s0 * in_per[k];
            memcpy(stage[k], src, rows * in_per[k] * sizeof(float));
            memset(stage[k] + rows * in_per[k], 0,
                   ((size_t)b - rows) * in_per[k] * sizeof(float));
            ins[k] = stage[k];
        }
        const int st = prof_exec_run_inputs(ex, ins, n_in, ni, y,
                                            out_count);
        if (st != PROF_OK) {
            rc = cli_prof_failed(s->dir, st, NULL);
            goto done;
        }
        memcpy(out + (size_t)s0 * out_each, y, rows * out_each * sizeof *y);
    }
done:
    for (size_t k = 0; k < ni; k++) {
        free(stage[k]);
    }
    free(y);
    return rc;
}

int validate_run(const memest_model *model, const struct validate_set *s,
                 const size_t *map, uint64_t samples, uint64_t batch,
                 enum memest_precision p, float *out)
{
    return validate_run_ranges(model, s, map, samples, batch, p, NULL,
                               PROF_INT8_REQUANT_FIXED, out);
}

int validate_run_ranges(const memest_model *model,
                        const struct validate_set *s, const size_t *map,
                        uint64_t samples, uint64_t batch,
                        enum memest_precision p,
                        const struct prof_ranges *ranges,
                        enum prof_int8_requant requant, float *out)
{
    struct prof_exec_opts eo;
    prof_exec_opts_init(&eo);
    eo.batch = batch;
    eo.precision = p;
    eo.ranges = p == MEMEST_INT8 ? ranges : NULL;
    eo.int8_requant = requant;
    prof_exec *ex = NULL;
    struct prof_diag pd;
    char what[600];
    snprintf(what, sizeof what, "%s at %s", s->dir,
             memest_precision_name(p));
    int st = prof_exec_create(model, &eo, &ex, &pd);
    if (st != PROF_OK) {
        return cli_prof_failed(what, st, &pd);
    }
    const int rc = run_all(ex, model, s, map, samples, batch, out);
    prof_exec_destroy(ex);
    return rc;
}

/* ---- the comparison ---------------------------------------------------------- */

/* Same non-finite value: NaN matches NaN, an infinity itself. */
static bool same_nonfinite(float a, float b)
{
    return (isnan(a) && isnan(b)) || a == b;
}

void validate_compare(const float *got, const float *ref, size_t samples,
                      size_t features, bool top1,
                      struct validate_metrics *m)
{
    const size_t n = samples * features;
    double max_err = 0.0, max_ref = 0.0, sq = 0.0, dot = 0.0, gg = 0.0,
           rr = 0.0;
    size_t finite = 0;
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(ref[i])) {
            if (!same_nonfinite(got[i], ref[i])) {
                max_err = INFINITY;
            }
            continue;
        }
        const double g = got[i], r = ref[i];
        const double e = fabs(g - r); /* inf or NaN for a bad got */
        if (!(e <= max_err)) {
            max_err = isnan(e) ? INFINITY : e;
        }
        max_ref = fabs(r) > max_ref ? fabs(r) : max_ref;
        sq += (g - r) * (g - r);
        dot += g * r;
        gg += g * g;
        rr += r * r;
        finite++;
    }
    m->elements = n;
    m->max_abs_error = max_err;
    m->max_abs_reference = max_ref;
    if (max_ref > 0.0) {
        m->relative_error = max_err / max_ref;
    } else {
        m->relative_error = max_err == 0.0 ? 0.0 : INFINITY;
    }
    m->rmse = finite ? sqrt(sq / (double)finite) : 0.0;
    if (!isfinite(sq)) {
        m->rmse = INFINITY;
    }
    m->cosine_similarity = gg > 0.0 && rr > 0.0 && isfinite(dot)
                               ? dot / (sqrt(gg) * sqrt(rr))
                               : NAN;
    m->top1_agreement = NAN;
    if (top1 && features > 1 && samples > 0) {
        size_t agree = 0;
        for (size_t s = 0; s < samples; s++) {
            const float *g = got + s * features, *r = ref + s * features;
            size_t best = 0;
            float rmax = r[0];
            for (size_t j = 1; j < features; j++) {
                best = g[j] > g[best] ? j : best;
                rmax = r[j] > rmax ? r[j] : rmax;
            }
            /* The reference's ties all count: the model's pick agrees
             * when it is one of the reference's largest. */
            agree += r[best] == rmax;
        }
        m->top1_agreement = (double)agree / (double)samples;
    }
}

bool validate_is_classifier(const memest_model *model)
{
    const struct memest_shape o = memest_model_output_shape(model);
    /* Class scores are a vector: C, or C x 1 x 1 after a global pool. */
    const bool vector =
        (o.rank == 1 && o.dim[0] >= 2) ||
        (o.rank == 3 && o.dim[0] >= 2 && o.dim[1] == 1 && o.dim[2] == 1);
    if (!vector) {
        return false;
    }
    const size_t n = memest_model_layer_count(model);
    const struct memest_layer *last = n ? memest_model_layer(model, n - 1)
                                        : NULL;
    if (last && (last->act == MEMEST_ACT_SOFTMAX ||
                 last->act == MEMEST_ACT_LOGSOFTMAX)) {
        return true;
    }
    /* Logits with no softmax, unless the vector is an input given back
     * (an autoencoder's reconstruction, a denoiser): the position of its
     * largest value means nothing. */
    for (size_t k = 0; k < memest_model_input_count(model); k++) {
        const struct memest_shape in = memest_model_input_shape_at(model, k);
        if (prof_shapes_match(o.dim, o.rank, in.dim, in.rank)) {
            return false;
        }
    }
    return true;
}

bool validate_passes(const struct validate_metrics *m, double tolerance)
{
    return m->relative_error <= tolerance;
}

double validate_default_tolerance(enum memest_precision p)
{
    switch (p) {
    case MEMEST_FP16:
        return 1e-2;
    case MEMEST_BF16:
        return 5e-2;
    case MEMEST_INT8:
    case MEMEST_INT8_DYNAMIC:
        return 1e-1;
    default:
        return 1e-4;
    }
}
