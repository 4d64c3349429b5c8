/* The calibration file of activation ranges (prof_ranges_save/_load): JSON
 * through jansson, written atomically, read back only for the model whose
 * tensors it names. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "edgefit/profile.h"
#include "exec/executor.h"
#include "alloc_rec.h" /* last: it wraps malloc and co. */

static const char FORMAT[] = "edgefit-calibration";
enum { VERSION = 1 };

static json_t *to_json(const struct prof_ranges *r)
{
    json_t *tensors = json_array();
    json_t *root = json_pack(
        "{s:s, s:i, s:s, s:s, s:f, s:I, s:o}", "format", FORMAT, "version",
        VERSION, "model", r->model ? r->model : "", "method",
        prof_range_method_name(r->method) ? prof_range_method_name(r->method)
                                          : "",
        "percentile", r->percentile, "samples", (json_int_t)r->samples,
        "tensors", tensors);
    if (!root) {
        return NULL;
    }
    for (size_t i = 0; i < r->count; i++) {
        const struct prof_tensor_range *t = &r->tensors[i];
        json_t *e = json_pack(
            "{s:s, s:f, s:f, s:f, s:i, s:f, s:f}", "name", t->name, "min",
            (double)t->min, "max", (double)t->max, "scale", (double)t->scale,
            "zero_point", (int)t->zero_point, "observed_min",
            (double)t->observed_min, "observed_max", (double)t->observed_max);
        if (!e || json_array_append_new(tensors, e) != 0) {
            json_decref(root);
            return NULL;
        }
    }
    return root;
}

PROF_API int prof_ranges_save(const struct prof_ranges *r, const char *path,
                              struct prof_diag *diag)
{
    if (diag) {
        memset(diag, 0, sizeof *diag);
    }
    if (!r || !path || (r->count && !r->tensors)) {
        return PROF_E_INVALID;
    }
    json_t *root = to_json(r);
    if (!root) {
        return PROF_E_NOMEM;
    }
    /* A temporary file beside path (the same file system, so rename() is
     * atomic), flushed to disk before it replaces path. */
    const size_t len = strlen(path) + sizeof ".tmp.XXXXXX";
    char *tmp = malloc(len);
    if (!tmp) {
        json_decref(root);
        return PROF_E_NOMEM;
    }
    snprintf(tmp, len, "%s.tmp.XXXXXX", path);
    int st = PROF_OK;
    const int fd = mkstemp(tmp);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!f) {
        exec_diag_set(diag, "%s: %s", path, strerror(errno));
        if (fd >= 0) {
            close(fd);
            unlink(tmp);
        }
        st = PROF_E_IO;
        goto done;
    }
    const int dumped = json_dumpf(root, f, JSON_INDENT(2) |
                                               JSON_REAL_PRECISION(9) |
                                               JSON_PRESERVE_ORDER);
    int err = dumped != 0 || fputc('\n', f) == EOF || fflush(f) != 0 ||
                      fsync(fileno(f)) != 0
                  ? errno
                  : 0;
    if (fclose(f) != 0 && !err) {
        err = errno;
    }
    if (!err && rename(tmp, path) != 0) {
        err = errno;
    }
    if (err) {
        exec_diag_set(diag, "%s: %s", path, strerror(err ? err : EIO));
        unlink(tmp);
        st = PROF_E_IO;
    }
done:
    free(tmp);
    json_decref(root);
    return st;
}

PROF_API int prof_ranges_write(const struct prof_ranges *r, FILE *f)
{
    if (!r || !f || (r->count && !r->tensors)) {
        return PROF_E_INVALID;
    }
    json_t *root = to_json(r);
    if (!root) {
        return PROF_E_NOMEM;
    }
    const int dumped = json_dumpf(root, f, JSON_INDENT(2) |
                                               JSON_REAL_PRECISION(9) |
                                               JSON_PRESERVE_ORDER);
    json_decref(root);
    return dumped != 0 || fputc('\n', f) == EOF ? PROF_E_IO : PROF_OK;
}

/* A number field (jansson reads 0 as an integer, 0.5 as a real). */
static bool get_num(const json_t *o, const char *key, double *out)
{
    const json_t *v = json_object_get(o, key);
    if (!json_is_number(v)) {
        return false;
    }
    *out = json_number_value(v);
    return true;
}

static int load_tensor(const json_t *e, size_t i, const char *path,
                       const char *want, struct prof_tensor_range *t,
                       struct prof_diag *diag)
{
    const char *name = json_string_value(json_object_get(e, "name"));
    double mn, mx, sc, omn, omx;
    const json_t *zp = json_object_get(e, "zero_point");
    if (!json_is_object(e) || !name || !get_num(e, "min", &mn) ||
        !get_num(e, "max", &mx) || !get_num(e, "scale", &sc) ||
        !get_num(e, "observed_min", &omn) ||
        !get_num(e, "observed_max", &omx) || !json_is_integer(zp)) {
        exec_diag_set(diag, "%s: tensor %zu: needs name, min, max, scale, "
                 "zero_point, observed_min and observed_max", path, i);
        return PROF_E_PARSE;
    }
    if (strcmp(name, want) != 0) {
        exec_diag_set(diag, "%s: tensor %zu is %s but the model's is %s: the "
                 "file calibrates another model", path, i, name, want);
        return PROF_E_RANGE;
    }
    t->min = (float)mn;
    t->max = (float)mx;
    t->observed_min = (float)omn;
    t->observed_max = (float)omx;
    float s;
    int32_t z;
    if (prof_quant_params(t->min, t->max, &s, &z) != PROF_OK ||
        !isfinite(t->observed_min) || !isfinite(t->observed_max)) {
        exec_diag_set(diag, "%s: tensor %s: range [%g, %g] is not finite or "
                 "upside down", path, name, mn, mx);
        return PROF_E_RANGE;
    }
    if ((float)sc != s || json_integer_value(zp) != z) {
        exec_diag_set(diag, "%s: tensor %s: scale %.9g and zero point %lld do "
                 "not match its range [%.9g, %.9g] (scale %.9g, zero point "
                 "%d)", path, name, sc, (long long)json_integer_value(zp),
                 mn, mx, (double)s, (int)z);
        return PROF_E_RANGE;
    }
    t->scale = s;
    t->zero_point = z;
    t->name = strdup(name);
    return t->name ? PROF_OK : PROF_E_NOMEM;
}

PROF_API int prof_ranges_load(const char *path, const memest_model *model,
                              struct prof_ranges *out,
                              struct prof_diag *diag)
{
    if (out) {
        memset(out, 0, sizeof *out);
    }
    if (diag) {
        memset(diag, 0, sizeof *diag);
    }
    if (!path || !model || !out) {
        return PROF_E_INVALID;
    }
    FILE *f = fopen(path, "rb");
    if (!f) {
        exec_diag_set(diag, "%s: %s", path, strerror(errno));
        return PROF_E_IO;
    }
    json_error_t jerr;
    json_t *root = json_loadf(f, 0, &jerr);
    fclose(f);
    if (!root) {
        exec_diag_set(diag, "%s:%d: %s", path, jerr.line, jerr.text);
        return PROF_E_PARSE;
    }
    int st = PROF_E_PARSE;
    const char *fmt = json_string_value(json_object_get(root, "format"));
    const char *model_name =
        json_string_value(json_object_get(root, "model"));
    const char *method = json_string_value(json_object_get(root, "method"));
    const json_t *samples = json_object_get(root, "samples");
    const json_t *tensors = json_object_get(root, "tensors");
    double pct = 0.0;
    if (!fmt || strcmp(fmt, FORMAT) != 0 ||
        json_integer_value(json_object_get(root, "version")) != VERSION) {
        exec_diag_set(diag, "%s: not an %s file of version %d", path, FORMAT,
                 VERSION);
        goto done;
    }
    if (!model_name || !method || !json_is_integer(samples) ||
        json_integer_value(samples) < 0 || !json_is_array(tensors) ||
        !get_num(root, "percentile", &pct)) {
        exec_diag_set(diag, "%s: needs model, method, percentile, samples and "
                 "tensors", path);
        goto done;
    }
    if (prof_range_method_parse(method, &out->method) != PROF_OK) {
        exec_diag_set(diag, "%s: unknown method %s", path, method);
        goto done;
    }
    const size_t nt = memest_model_tensor_count(model);
    const size_t ni = memest_model_input_count(model);
    if (json_array_size(tensors) != nt) {
        exec_diag_set(diag, "%s: %zu tensors, but the model %s has %zu: the file "
                 "calibrates another model (%s)", path,
                 json_array_size(tensors), memest_model_name(model), nt,
                 model_name);
        st = PROF_E_RANGE;
        goto done;
    }
    out->percentile = pct;
    out->samples = (uint64_t)json_integer_value(samples);
    out->model = strdup(model_name);
    out->tensors = calloc(nt ? nt : 1, sizeof *out->tensors);
    if (!out->model || !out->tensors) {
        st = PROF_E_NOMEM;
        goto done;
    }
    out->count = nt;
    st = PROF_OK;
    for (size_t t = 0; st == PROF_OK && t < nt; t++) {
        const char *want = t < ni ? memest_model_input_name(model, t)
                                  : memest_model_layer(model, t - ni)->name;
        st = load_tensor(json_array_get(tensors, t), t, path,
                         want ? want : "", &out->tensors[t], diag);
    }
done:
    if (st != PROF_OK) {
        prof_ranges_finish(out);
    }
    json_decref(root);
    return st;
}
