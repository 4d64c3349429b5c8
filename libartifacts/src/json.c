#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "alloc_rec.h" /* last: it wraps malloc and co. */

struct art_doc {
    json_t *obj;
};


ART_API int art_doc_create(art_doc **out)
{
    if (!out) {
        return ART_E_INVALID;
    }
    *out = NULL;
    art_doc *d = malloc(sizeof *d);
    if (!d) {
        return ART_E_NOMEM;
    }
    d->obj = json_object();
    if (!d->obj) {
        free(d);
        return ART_E_NOMEM;
    }
    *out = d;
    return ART_OK;
}

ART_API void art_doc_destroy(art_doc *d)
{
    if (!d) {
        return;
    }
    json_decref(d->obj);
    free(d);
}

/* Takes the reference to v in every case. */
static int set_new(art_doc *d, const char *key, json_t *v)
{
    if (!d || !key) {
        json_decref(v);
        return ART_E_INVALID;
    }
    if (!v) {
        return ART_E_NOMEM;
    }
    return json_object_set_new(d->obj, key, v) == 0 ? ART_OK : ART_E_INVALID;
}

ART_API int art_doc_set_int(art_doc *d, const char *key, int64_t v)
{
    return set_new(d, key, json_integer(v));
}

ART_API int art_doc_set_uint(art_doc *d, const char *key, uint64_t v)
{
    return set_new(d, key, v <= INT64_MAX ? json_integer((json_int_t)v)
                                          : json_real((double)v));
}

ART_API int art_doc_set_real(art_doc *d, const char *key, double v)
{
    return set_new(d, key, isfinite(v) ? json_real(v) : json_null());
}

ART_API int art_doc_set_text(art_doc *d, const char *key, const char *v)
{
    if (!v) {
        return ART_E_INVALID;
    }
    json_t *s = json_string(v);
    if (!s) {
        return ART_E_INVALID; /* not UTF-8 */
    }
    return set_new(d, key, s);
}

ART_API int art_doc_set_bool(art_doc *d, const char *key, bool v)
{
    return set_new(d, key, json_boolean(v));
}

ART_API int art_doc_set_texts(art_doc *d, const char *key,
                              const char *const *v, size_t n)
{
    if (!v && n) {
        return ART_E_INVALID;
    }
    json_t *arr = json_array();
    if (!arr) {
        return ART_E_NOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        json_t *s = v[i] ? json_string(v[i]) : NULL;
        if (!s || json_array_append_new(arr, s) != 0) {
            json_decref(arr);
            return ART_E_INVALID;
        }
    }
    return set_new(d, key, arr);
}

ART_API int art_doc_set_table(art_doc *d, const char *key, const art_table *t)
{
    if (!t) {
        return ART_E_INVALID;
    }
    return set_new(d, key, art_table_to_json(t));
}

ART_API int art_doc_set_doc(art_doc *d, const char *key, const art_doc *sub)
{
    if (!sub || sub == d) {
        return ART_E_INVALID;
    }
    return set_new(d, key, json_deep_copy(sub->obj));
}

/* jansson writes every real with a fixed number of digits (17 gives
 * 0.29886600000000002 for 0.298866), so the values are written here, in
 * jansson's indented layout, with each real in the shortest form that
 * reads back exactly (art_format_real) and ".0" kept on whole numbers so
 * they stay reals. Strings, with their escapes, are still jansson's. */
static int emit(json_t *v, FILE *f, int depth, const char *key,
                art_round_fn round);

static int indent(FILE *f, int depth)
{
    return fprintf(f, "\n%*s", 2 * depth, "") < 0 ? ART_E_IO : ART_OK;
}

static int emit_real(double x, FILE *f, const char *key, art_round_fn round)
{
    char buf[64];
    if (round && isfinite(x)) {
        x = round(key, x);
    }
    art_format_real(x, buf, sizeof buf);
    if (!isfinite(x)) {
        return fputs("null", f) == EOF ? ART_E_IO : ART_OK;
    }
    const int whole = strpbrk(buf, ".eE") == NULL;
    return fprintf(f, "%s%s", buf, whole ? ".0" : "") < 0 ? ART_E_IO
                                                          : ART_OK;
}

/* key: the member whose value v is (an array's elements and the rows of a
 * table have their array's key), "" at the top; round may be NULL. */
static int emit(json_t *v, FILE *f, int depth, const char *key,
                art_round_fn round)
{
    int st = ART_OK;
    switch (json_typeof(v)) {
    case JSON_OBJECT: {
        if (json_object_size(v) == 0) {
            return fputs("{}", f) == EOF ? ART_E_IO : ART_OK;
        }
        if (fputc('{', f) == EOF) {
            return ART_E_IO;
        }
        const char *name;
        json_t *val;
        size_t i = 0;
        json_object_foreach(v, name, val) {
            if (st == ART_OK && i++ > 0 && fputc(',', f) == EOF) {
                st = ART_E_IO;
            }
            if (st == ART_OK) {
                st = indent(f, depth + 1);
            }
            json_t *k = st == ART_OK ? json_string(name) : NULL;
            if (st == ART_OK && !k) {
                st = ART_E_NOMEM;
            }
            if (st == ART_OK &&
                (json_dumpf(k, f, JSON_ENCODE_ANY) != 0 ||
                 fputs(": ", f) == EOF)) {
                st = ART_E_IO;
            }
            json_decref(k);
            if (st == ART_OK) {
                st = emit(val, f, depth + 1, name, round);
            }
        }
        if (st == ART_OK) {
            st = indent(f, depth);
        }
        return st == ART_OK && fputc('}', f) == EOF ? ART_E_IO : st;
    }
    case JSON_ARRAY: {
        if (json_array_size(v) == 0) {
            return fputs("[]", f) == EOF ? ART_E_IO : ART_OK;
        }
        if (fputc('[', f) == EOF) {
            return ART_E_IO;
        }
        for (size_t i = 0; st == ART_OK && i < json_array_size(v); i++) {
            if (i > 0 && fputc(',', f) == EOF) {
                st = ART_E_IO;
            }
            if (st == ART_OK) {
                st = indent(f, depth + 1);
            }
            if (st == ART_OK) {
                st = emit(json_array_get(v, i), f, depth + 1, key, round);
            }
        }
        if (st == ART_OK) {
            st = indent(f, depth);
        }
        return st == ART_OK && fputc(']', f) == EOF ? ART_E_IO : st;
    }
    case JSON_REAL:
        return emit_real(json_real_value(v), f, key, round);
    default:
        return json_dumpf(v, f, JSON_ENCODE_ANY) != 0 ? ART_E_IO : ART_OK;
    }
}

static int dump(json_t *v, FILE *f, art_round_fn round)
{
    int st = emit(v, f, 0, "", round);
    if (st == ART_OK && fputc('\n', f) == EOF) {
        st = ART_E_IO;
    }
    return st == ART_OK && ferror(f) ? ART_E_IO : st;
}

static int write_doc(const void *obj, FILE *f)
{
    return dump(((const art_doc *)obj)->obj, f, NULL);
}

int art_doc_write_with(const art_doc *d, FILE *f, art_round_fn round)
{
    return dump(d->obj, f, round);
}

ART_API int art_doc_write_rounded(const art_doc *d, FILE *f,
                                  art_round_fn round)
{
    if (!d || !f || !round) {
        return ART_E_INVALID;
    }
    return dump(d->obj, f, round);
}

ART_API int art_doc_write(const art_doc *d, FILE *f)
{
    if (!d || !f) {
        return ART_E_INVALID;
    }
    return write_doc(d, f);
}

ART_API int art_doc_save(const art_doc *d, const char *path,
                         struct art_diag *diag)
{
    art_diag_clear(diag);
    if (!d || !path) {
        return ART_E_INVALID;
    }
    return art_save_with(path, write_doc, d, diag);
}

static int write_table_json(const void *obj, FILE *f)
{
    json_t *arr = art_table_to_json(obj);
    if (!arr) {
        return ART_E_NOMEM;
    }
    int st = dump(arr, f, NULL);
    json_decref(arr);
    return st;
}

ART_API int art_table_write_json(const art_table *t, FILE *f)
{
    if (!t || !f) {
        return ART_E_INVALID;
    }
    return write_table_json(t, f);
}

ART_API int art_table_save_json(const art_table *t, const char *path,
                                struct art_diag *diag)
{
    art_diag_clear(diag);
    if (!t || !path) {
        return ART_E_INVALID;
    }
    return art_save_with(path, write_table_json, t, diag);
}
