/*
 * safetensors files: an 8-byte little-endian header length N, N bytes of
 * JSON (padded with spaces to a multiple of 8 when written here), then the
 * tensors' bytes.
 *
 * The reader trusts nothing in the header: the length is checked against
 * the file size before anything is allocated for it, every entry's dtype,
 * shape and offsets are checked (sizes with overflow checks), and the
 * tensors, ordered by offset, must tile the data buffer exactly. Only then
 * is the data read, each tensor into a slot of its own aligned for any
 * type, so callers may read the data as the dtype's C type directly.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "internal.h"
#include "alloc_rec.h" /* last: it wraps malloc and co. */

/* The largest header read. The format's reference reader stops at 100 MB;
 * a header of a hundred thousand tensors (~100 bytes each) is under
 * 16 MiB, and refusing anything larger before it is read bounds what a
 * hostile file costs (jansson takes several times the text). */
#define MAX_HEADER_BYTES (16 * 1024 * 1024)

#define META_KEY "__metadata__"

/* Tensor slots in the loaded data start at multiples of this. */
#define SLOT_ALIGN 16u

static const struct {
    const char *name;
    size_t size;
} dtypes[] = {
    [ART_DTYPE_F32] = {"F32", 4}, [ART_DTYPE_F16] = {"F16", 2},
    [ART_DTYPE_BF16] = {"BF16", 2}, [ART_DTYPE_F64] = {"F64", 8},
    [ART_DTYPE_I8] = {"I8", 1},   [ART_DTYPE_U8] = {"U8", 1},
    [ART_DTYPE_I32] = {"I32", 4}, [ART_DTYPE_I64] = {"I64", 8},
};
#define N_DTYPES (sizeof(dtypes) / sizeof(dtypes[0]))

ART_API size_t art_dtype_size(enum art_dtype dtype)
{
    return (unsigned)dtype < N_DTYPES ? dtypes[dtype].size : 0;
}

ART_API const char *art_dtype_name(enum art_dtype dtype)
{
    return (unsigned)dtype < N_DTYPES ? dtypes[dtype].name : NULL;
}

static int dtype_from_name(const char *name, enum art_dtype *out)
{
    for (size_t i = 0; i < N_DTYPES; i++) {
        if (strcmp(name, dtypes[i].name) == 0) {
            *out = (enum art_dtype)i;
            return 0;
        }
    }
    return -1;
}

/* Fill diag; sys_errno is the errno of the system call that failed, 0
 * when the failure is not the system's. */
#if defined(__GNUC__)
__attribute__((format(printf, 4, 0)))
#endif
static int fail_errno(struct art_diag *diag, int status, int sys_errno,
                      const char *fmt, va_list ap)
{
    if (diag) {
        vsnprintf(diag->message, sizeof(diag->message), fmt, ap);
        diag->line = 0;
        diag->sys_errno = sys_errno;
    }
    return status;
}

static int fail(struct art_diag *diag, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail(struct art_diag *diag, int status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fail_errno(diag, status, 0, fmt, ap);
    va_end(ap);
    return status;
}

/* An I/O failure: the message ends in strerror(err) (or says why when the
 * stream had no errno), and sys_errno keeps err. */
static int fail_io(struct art_diag *diag, int err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail_io(struct art_diag *diag, int err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fail_errno(diag, ART_E_IO, err, fmt, ap);
    va_end(ap);
    return ART_E_IO;
}

/* Bytes of a tensor: prod(shape) * size, or -1 on overflow. */
static int tensor_bytes(enum art_dtype dtype, size_t ndim,
                        const uint64_t *shape, uint64_t *out)
{
    uint64_t n = art_dtype_size(dtype);
    for (size_t d = 0; d < ndim; d++) {
        if (shape[d] != 0 && n > UINT64_MAX / shape[d]) {
            return -1;
        }
        n *= shape[d];
    }
    *out = n;
    return 0;
}

/* ---- Writing ----------------------------------------------------------- */

/* What a writer needs: the tensors and the optional metadata. */
struct st_set {
    struct art_tensor *tensors; /* owned copy of the array */
    size_t n;
    const char *const *meta_keys;
    const char *const *meta_values;
    size_t n_meta;
};

/* Check the tensors a caller asks to write; diag names the one at fault. */
static int check_tensors(const struct art_tensor *t, size_t n,
                         struct art_diag *diag)
{
    if (n > 0 && !t) {
        return fail(diag, ART_E_INVALID, "safetensors: NULL tensor array");
    }
    uint64_t total = 0;
    for (size_t i = 0; i < n; i++) {
        if (!t[i].name || !*t[i].name) {
            return fail(diag, ART_E_INVALID,
                        "safetensors: tensor %zu has no name", i);
        }
        if (strcmp(t[i].name, META_KEY) == 0) {
            return fail(diag, ART_E_INVALID, "safetensors: '%s' is reserved "
                        "for the metadata, not a tensor name", META_KEY);
        }
        for (size_t j = 0; j < i; j++) {
            if (strcmp(t[i].name, t[j].name) == 0) {
                return fail(diag, ART_E_INVALID, "safetensors: tensor "
                            "'%.100s' appears twice", t[i].name);
            }
        }
        if (art_dtype_size(t[i].dtype) == 0) {
            return fail(diag, ART_E_INVALID, "safetensors: tensor '%.100s': "
                        "unknown dtype %d", t[i].name, (int)t[i].dtype);
        }
        if (t[i].ndim > ART_TENSOR_MAX_DIMS) {
            return fail(diag, ART_E_INVALID, "safetensors: tensor '%.100s': "
                        "%zu dimensions, at most %d", t[i].name, t[i].ndim,
                        ART_TENSOR_MAX_DIMS);
        }
        uint64_t bytes;
        if (tensor_bytes(t[i].dtype, t[i].ndim, t[i].shape, &bytes) != 0 ||
            bytes > UINT64_MAX - total || bytes > (uint64_t)INT64_MAX) {
            return fail(diag, ART_E_OVERFLOW, "safetensors: tensor '%.100s':"
                        " size does not fit in 64 bits", t[i].name);
        }
        if (bytes > 0 && !t[i].data) {
            return fail(diag, ART_E_INVALID, "safetensors: tensor '%.100s': "
                        "NULL data for %" PRIu64 " bytes", t[i].name, bytes);
        }
        total += bytes;
    }
    /* Offsets are JSON integers, which jansson keeps as signed 64-bit. */
    if (total > (uint64_t)INT64_MAX) {
        return fail(diag, ART_E_OVERFLOW, "safetensors: %" PRIu64 " bytes of "
                    "data do not fit in the format's offsets", total);
    }
    return ART_OK;
}

static int check_meta(const char *const *keys, const char *const *values,
                      size_t n, struct art_diag *diag)
{
    if (n > 0 && (!keys || !values)) {
        return fail(diag, ART_E_INVALID, "safetensors: NULL metadata arrays");
    }
    for (size_t i = 0; i < n; i++) {
        if (!keys[i] || !values[i]) {
            return fail(diag, ART_E_INVALID, "safetensors: metadata entry %zu"
                        " has a NULL key or value", i);
        }
        for (size_t j = 0; j < i; j++) {
            if (strcmp(keys[i], keys[j]) == 0) {
                return fail(diag, ART_E_INVALID, "safetensors: metadata key "
                            "'%.100s' appears twice", keys[i]);
            }
        }
    }
    return ART_OK;
}

/* The header object: metadata first (as the reference writer does), then
 * the tensors with contiguous offsets in the order given. */
static json_t *build_header(const struct st_set *s, uint64_t *data_bytes)
{
    json_t *root = json_object();
    if (!root) {
        return NULL;
    }
    if (s->n_meta > 0) {
        json_t *meta = json_object();
        if (!meta || json_object_set_new(root, META_KEY, meta) != 0) {
            goto fail;
        }
        for (size_t i = 0; i < s->n_meta; i++) {
            /* json_string refuses invalid UTF-8: NULL here is bad text,
             * reported as ART_E_INVALID by the caller's check below. */
            json_t *v = json_string(s->meta_values[i]);
            if (!v || json_object_set_new(meta, s->meta_keys[i], v) != 0) {
                goto fail;
            }
        }
    }
    uint64_t offset = 0;
    for (size_t i = 0; i < s->n; i++) {
        const struct art_tensor *t = &s->tensors[i];
        uint64_t bytes = 0; /* checked by check_tensors() */
        (void)tensor_bytes(t->dtype, t->ndim, t->shape, &bytes);
        json_t *shape = json_array();
        json_t *offs = json_pack("[II]", (json_int_t)offset,
                                 (json_int_t)(offset + bytes));
        json_t *e = json_object();
        int bad = !shape || !offs || !e;
        for (size_t d = 0; !bad && d < t->ndim; d++) {
            bad = t->shape[d] > (uint64_t)INT64_MAX ||
                  json_array_append_new(shape,
                                        json_integer((json_int_t)t->shape[d]))
                      != 0;
        }
        bad = bad ||
              json_object_set_new(e, "dtype",
                                  json_string(art_dtype_name(t->dtype))) ||
              json_object_set(e, "shape", shape) ||
              json_object_set(e, "data_offsets", offs) ||
              json_object_set(root, t->name, e);
        json_decref(shape);
        json_decref(offs);
        json_decref(e);
        if (bad) {
            goto fail;
        }
        offset += bytes;
    }
    *data_bytes = offset;
    return root;
fail:
    json_decref(root);
    return NULL;
}

static int write_le64(FILE *f, uint64_t v)
{
    unsigned char b[8];
    for (int i = 0; i < 8; i++) {
        b[i] = (unsigned char)(v >> (8 * i));
    }
    return fwrite(b, 1, 8, f) == 8 ? 0 : -1;
}

static int write_set(const void *obj, FILE *f)
{
    const struct st_set *s = obj;
    uint64_t data_bytes = 0;
    json_t *root = build_header(s, &data_bytes);
    if (!root) {
        return ART_E_NOMEM;
    }
    char *text = json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(root);
    if (!text) {
        return ART_E_NOMEM;
    }
    /* Pad with spaces so the data starts 8-byte aligned in the file, as
     * the reference writer does; JSON ignores trailing whitespace. */
    const size_t len = strlen(text);
    const size_t pad = (8 - len % 8) % 8;
    static const char spaces[8] = "        ";
    int st = ART_OK;
    if (write_le64(f, (uint64_t)(len + pad)) != 0 ||
        fwrite(text, 1, len, f) != len || fwrite(spaces, 1, pad, f) != pad) {
        st = ART_E_IO;
    }
    free(text);
    for (size_t i = 0; st == ART_OK && i < s->n; i++) {
        const struct art_tensor *t = &s->tensors[i];
        uint64_t bytes = 0; /* checked by check_tensors() */
        (void)tensor_bytes(t->dtype, t->ndim, t->shape, &bytes);
        /* The bytes are copied as they are: the format is little-endian,
         * like every host edgefit builds for. */
        if (bytes > 0 && fwrite(t->data, 1, (size_t)bytes, f) != bytes) {
            st = ART_E_IO;
        }
    }
    return st;
}

/* Metadata text must be valid UTF-8 for JSON: check before writing so the
 * failure is a clear ART_E_INVALID, not a missing file. */
static int check_text(const struct st_set *s, struct art_diag *diag)
{
    for (size_t i = 0; i < s->n; i++) {
        json_t *v = json_string(s->tensors[i].name);
        if (!v) {
            return fail(diag, ART_E_INVALID, "safetensors: tensor %zu: the "
                        "name is not valid UTF-8", i);
        }
        json_decref(v);
    }
    for (size_t i = 0; i < s->n_meta; i++) {
        json_t *k = json_string(s->meta_keys[i]);
        json_t *v = json_string(s->meta_values[i]);
        const int bad = !k || !v;
        json_decref(k);
        json_decref(v);
        if (bad) {
            return fail(diag, ART_E_INVALID, "safetensors: metadata entry %zu"
                        " is not valid UTF-8", i);
        }
    }
    return ART_OK;
}

static int make_set(const struct art_tensor *tensors, size_t n,
                    const char *const *meta_keys,
                    const char *const *meta_values, size_t n_meta,
                    struct st_set **out, struct art_diag *diag)
{
    *out = NULL;
    int st = check_tensors(tensors, n, diag);
    if (st == ART_OK) {
        st = check_meta(meta_keys, meta_values, n_meta, diag);
    }
    if (st != ART_OK) {
        return st;
    }
    struct st_set *s = calloc(1, sizeof *s);
    if (!s || (n > 0 && !(s->tensors = malloc(n * sizeof *s->tensors)))) {
        free(s);
        return fail(diag, ART_E_NOMEM,
                    "safetensors: out of memory (%zu bytes)",
                    art_nomem_last);
    }
    if (n > 0) {
        memcpy(s->tensors, tensors, n * sizeof *s->tensors);
    }
    s->n = n;
    s->meta_keys = meta_keys;
    s->meta_values = meta_values;
    s->n_meta = n_meta;
    st = check_text(s, diag);
    if (st != ART_OK) {
        free(s->tensors);
        free(s);
        return st;
    }
    *out = s;
    return ART_OK;
}

static void free_set(void *obj)
{
    struct st_set *s = obj;
    if (s) {
        free(s->tensors);
        free(s);
    }
}

ART_API int art_safetensors_save(const char *path,
                                 const struct art_tensor *tensors, size_t n,
                                 const char *const *meta_keys,
                                 const char *const *meta_values,
                                 size_t n_meta, struct art_diag *diag)
{
    if (!path || !*path) {
        return fail(diag, ART_E_INVALID, "safetensors: no file name");
    }
    struct st_set *s = NULL;
    int st = make_set(tensors, n, meta_keys, meta_values, n_meta, &s, diag);
    if (st != ART_OK) {
        return st;
    }
    /* "path: reason" and the errno, as every libartifacts write. */
    st = art_save_with(path, write_set, s, diag);
    free_set(s);
    return st;
}

ART_API int art_bundle_add_safetensors(art_bundle *b, const char *name,
                                       const struct art_tensor *tensors,
                                       size_t n)
{
    if (!b || !name) {
        return ART_E_INVALID;
    }
    struct st_set *s = NULL;
    int st = make_set(tensors, n, NULL, NULL, 0, &s, NULL);
    if (st != ART_OK) {
        return st;
    }
    st = art_bundle_add_owned(b, name, write_set, s, free_set);
    if (st != ART_OK) {
        free_set(s);
    }
    return st;
}

/* ---- Reading ----------------------------------------------------------- */

struct art_safetensors {
    struct art_tensor *tensors; /* sorted by offset; names in names[] */
    char **names;
    size_t n;
    char **meta_keys, **meta_values;
    size_t n_meta;
    unsigned char *data; /* every tensor's slot */
};

ART_API void art_safetensors_destroy(art_safetensors *st)
{
    if (!st) {
        return;
    }
    for (size_t i = 0; i < st->n; i++) {
        free(st->names[i]);
    }
    for (size_t i = 0; i < st->n_meta; i++) {
        free(st->meta_keys[i]);
        free(st->meta_values[i]);
    }
    free(st->names);
    free(st->meta_keys);
    free(st->meta_values);
    free(st->tensors);
    free(st->data);
    free(st);
}

ART_API size_t art_safetensors_count(const art_safetensors *st)
{
    return st ? st->n : 0;
}

ART_API const struct art_tensor *
art_safetensors_tensor(const art_safetensors *st, size_t i)
{
    return st && i < st->n ? &st->tensors[i] : NULL;
}

ART_API const struct art_tensor *
art_safetensors_find(const art_safetensors *st, const char *name)
{
    if (!st || !name) {
        return NULL;
    }
    for (size_t i = 0; i < st->n; i++) {
        if (strcmp(st->tensors[i].name, name) == 0) {
            return &st->tensors[i];
        }
    }
    return NULL;
}

ART_API size_t art_safetensors_meta_count(const art_safetensors *st)
{
    return st ? st->n_meta : 0;
}

ART_API const char *art_safetensors_meta(const art_safetensors *st,
                                         const char *key)
{
    if (!st || !key) {
        return NULL;
    }
    for (size_t i = 0; i < st->n_meta; i++) {
        if (strcmp(st->meta_keys[i], key) == 0) {
            return st->meta_values[i];
        }
    }
    return NULL;
}

ART_API int art_safetensors_meta_at(const art_safetensors *st, size_t i,
                                    const char **key, const char **value)
{
    if (!st || !key || !value) {
        return ART_E_INVALID;
    }
    if (i >= st->n_meta) {
        return ART_E_RANGE;
    }
    *key = st->meta_keys[i];
    *value = st->meta_values[i];
    return ART_OK;
}

/* One header entry while checking: where its bytes are. */
struct entry {
    uint64_t begin, end;
    size_t index; /* into the tensors array */
};

static int by_offset(const void *a, const void *b)
{
    const struct entry *x = a, *y = b;
    if (x->begin != y->begin) {
        return x->begin < y->begin ? -1 : 1;
    }
    if (x->end != y->end) {
        return x->end < y->end ? -1 : 1;
    }
    return x->index < y->index ? -1 : x->index > y->index;
}

/* A non-negative JSON integer, or -1. */
static int get_count(const json_t *v, uint64_t *out)
{
    if (!json_is_integer(v) || json_integer_value(v) < 0) {
        return -1;
    }
    *out = (uint64_t)json_integer_value(v);
    return 0;
}

/* Check one tensor entry and fill t (its name set by the caller). */
static int parse_entry(const char *path, const char *name, json_t *e,
                       uint64_t buffer_bytes, struct art_tensor *t,
                       struct entry *where, struct art_diag *diag)
{
    if (!json_is_object(e)) {
        return fail(diag, ART_E_PARSE, "%s: tensor '%.80s': the entry is "
                    "not an object", path, name);
    }
    const char *key;
    json_t *v;
    json_object_foreach(e, key, v) {
        if (strcmp(key, "dtype") != 0 && strcmp(key, "shape") != 0 &&
            strcmp(key, "data_offsets") != 0) {
            return fail(diag, ART_E_PARSE, "%s: tensor '%.80s': unknown "
                        "field '%.40s'", path, name, key);
        }
    }
    json_t *dt = json_object_get(e, "dtype");
    if (!json_is_string(dt)) {
        return fail(diag, ART_E_PARSE, "%s: tensor '%.80s': %s", path, name,
                    dt ? "dtype is not a string" : "no dtype");
    }
    if (dtype_from_name(json_string_value(dt), &t->dtype) != 0) {
        return fail(diag, ART_E_PARSE, "%s: tensor '%.80s': unknown dtype "
                    "'%.20s' (F32, F16, BF16, F64, I8, U8, I32 or I64)",
                    path, name, json_string_value(dt));
    }
    json_t *shape = json_object_get(e, "shape");
    if (!json_is_array(shape)) {
        return fail(diag, ART_E_PARSE, "%s: tensor '%.80s': %s", path, name,
                    shape ? "shape is not an array" : "no shape");
    }
    if (json_array_size(shape) > ART_TENSOR_MAX_DIMS) {
        return fail(diag, ART_E_PARSE, "%s: tensor '%.80s': %zu dimensions, "
                    "at most %d", path, name, json_array_size(shape),
                    ART_TENSOR_MAX_DIMS);
    }
    t->ndim = json_array_size(shape);
    for (size_t d = 0; d < t->ndim; d++) {
        if (get_count(json_array_get(shape, d), &t->shape[d]) != 0) {
            return fail(diag, ART_E_PARSE, "%s: tensor '%.80s': shape[%zu] "
                        "is not a non-negative integer", path, name, d);
        }
    }
    json_t *offs = json_object_get(e, "data_offsets");
    if (!json_is_array(offs) || json_array_size(offs) != 2 ||
        get_count(json_array_get(offs, 0), &where->begin) != 0 ||
        get_count(json_array_get(offs, 1), &where->end) != 0) {
        return fail(diag, ART_E_PARSE, "%s: tensor '%.80s': %s", path, name,
                    offs ? "data_offsets is not [begin, end] of two "
                           "non-negative integers"
                         : "no data_offsets");
    }
    if (where->end < where->begin) {
        return fail(diag, ART_E_PARSE, "%s: tensor '%.80s': data_offsets [%"
                    PRIu64 ", %" PRIu64 "] end before they begin", path,
                    name, where->begin, where->end);
    }
    if (where->end > buffer_bytes) {
        return fail(diag, ART_E_PARSE, "%s: tensor '%.80s': data_offsets [%"
                    PRIu64 ", %" PRIu64 "] run past the end of the %" PRIu64
                    "-byte data buffer", path, name, where->begin,
                    where->end, buffer_bytes);
    }
    uint64_t bytes;
    if (tensor_bytes(t->dtype, t->ndim, t->shape, &bytes) != 0) {
        return fail(diag, ART_E_PARSE, "%s: tensor '%.80s': the shape's size"
                    " does not fit in 64 bits", path, name);
    }
    if (bytes != where->end - where->begin) {
        return fail(diag, ART_E_PARSE, "%s: tensor '%.80s': the shape and "
                    "dtype make %" PRIu64 " bytes but data_offsets [%" PRIu64
                    ", %" PRIu64 "] hold %" PRIu64, path, name, bytes,
                    where->begin, where->end, where->end - where->begin);
    }
    return ART_OK;
}

static int parse_meta(const char *path, json_t *meta, art_safetensors *st,
                      struct art_diag *diag)
{
    if (!json_is_object(meta)) {
        return fail(diag, ART_E_PARSE, "%s: %s is not an object", path,
                    META_KEY);
    }
    const size_t n = json_object_size(meta);
    st->meta_keys = calloc(n ? n : 1, sizeof(char *));
    st->meta_values = calloc(n ? n : 1, sizeof(char *));
    if (!st->meta_keys || !st->meta_values) {
        return fail(diag, ART_E_NOMEM, "%s: out of memory (%zu bytes)", path,
                  art_nomem_last);
    }
    const char *key;
    json_t *v;
    json_object_foreach(meta, key, v) {
        if (!json_is_string(v)) {
            return fail(diag, ART_E_PARSE, "%s: %s: the value of '%.80s' is "
                        "not a string", path, META_KEY, key);
        }
        char *k = strdup(key);
        char *s = strdup(json_string_value(v));
        if (!k || !s) {
            free(k);
            free(s);
            return fail(diag, ART_E_NOMEM,
                        "%s: out of memory (%zu bytes)", path,
                        art_nomem_last);
        }
        st->meta_keys[st->n_meta] = k;
        st->meta_values[st->n_meta] = s;
        st->n_meta++;
    }
    return ART_OK;
}

/* Parse and check the header; on success st holds the tensors (sorted by
 * offset, data not yet read) and ents their offsets in the same order. */
static int parse_header(const char *path, const char *text, size_t len,
                        uint64_t buffer_bytes, art_safetensors *st,
                        struct entry **ents_out, struct art_diag *diag)
{
    json_error_t jerr;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!root) {
        /* jansson names a duplicate key in its text ("duplicate object
         * key near '"name"'"): say it in the format's words. */
        static const char dup[] = "duplicate object key near '";
        const size_t n = strlen(jerr.text);
        if (strncmp(jerr.text, dup, sizeof(dup) - 1) == 0 &&
            jerr.text[n - 1] == '\'') {
            return fail(diag, ART_E_PARSE, "%s: duplicate name %.*s in the "
                        "header (column %d); names must be unique", path,
                        (int)(n - sizeof(dup)), jerr.text + sizeof(dup) - 1,
                        jerr.column);
        }
        return fail(diag, ART_E_PARSE, "%s: header JSON, column %d: %s",
                    path, jerr.column, jerr.text);
    }
    int rc = ART_OK;
    struct entry *ents = NULL;
    if (!json_is_object(root)) {
        rc = fail(diag, ART_E_PARSE, "%s: the header is not a JSON object",
                  path);
        goto done;
    }
    const size_t n_keys = json_object_size(root);
    ents = calloc(n_keys ? n_keys : 1, sizeof *ents);
    st->tensors = calloc(n_keys ? n_keys : 1, sizeof *st->tensors);
    st->names = calloc(n_keys ? n_keys : 1, sizeof *st->names);
    if (!ents || !st->tensors || !st->names) {
        rc = fail(diag, ART_E_NOMEM, "%s: out of memory (%zu bytes)", path,
                  art_nomem_last);
        goto done;
    }
    const char *key;
    json_t *v;
    json_object_foreach(root, key, v) {
        if (strcmp(key, META_KEY) == 0) {
            rc = parse_meta(path, v, st, diag);
            if (rc != ART_OK) {
                goto done;
            }
            continue;
        }
        if (!*key) {
            rc = fail(diag, ART_E_PARSE, "%s: a tensor with an empty name",
                      path);
            goto done;
        }
        struct art_tensor *t = &st->tensors[st->n];
        rc = parse_entry(path, key, v, buffer_bytes, t, &ents[st->n], diag);
        if (rc != ART_OK) {
            goto done;
        }
        if (!(st->names[st->n] = strdup(key))) {
            rc = fail(diag, ART_E_NOMEM, "%s: out of memory (%zu bytes)", path,
                  art_nomem_last);
            goto done;
        }
        t->name = st->names[st->n];
        ents[st->n].index = st->n;
        st->n++;
    }
    /* The tensors must tile the buffer: sorted by offset, each begins
     * where the one before ends, the first at 0, the last at the end. */
    qsort(ents, st->n, sizeof *ents, by_offset);
    uint64_t at = 0;
    const char *prev = NULL;
    for (size_t i = 0; i < st->n; i++) {
        const char *name = st->tensors[ents[i].index].name;
        if (ents[i].begin < at) {
            rc = fail(diag, ART_E_PARSE, "%s: tensor '%.60s' (bytes %" PRIu64
                      " to %" PRIu64 ") overlaps tensor '%.60s' (which ends "
                      "at %" PRIu64 ")", path, name, ents[i].begin,
                      ents[i].end, prev, at);
            goto done;
        }
        if (ents[i].begin > at) {
            rc = fail(diag, ART_E_PARSE, "%s: a gap of %" PRIu64 " bytes "
                      "before tensor '%.60s' (begins at %" PRIu64 "%s%.60s%s)",
                      path, ents[i].begin - at, name, ents[i].begin,
                      prev ? ", after tensor '" : ", the buffer's start",
                      prev ? prev : "", prev ? "'" : "");
            goto done;
        }
        at = ents[i].end;
        prev = name;
    }
    if (at != buffer_bytes) {
        if (prev) {
            rc = fail(diag, ART_E_PARSE, "%s: %" PRIu64 " trailing bytes "
                      "after the last tensor '%.60s' (ends at %" PRIu64
                      ", the data buffer holds %" PRIu64 ")", path,
                      buffer_bytes - at, prev, at, buffer_bytes);
        } else {
            rc = fail(diag, ART_E_PARSE, "%s: %" PRIu64 " trailing bytes "
                      "and no tensor", path, buffer_bytes);
        }
        goto done;
    }
    /* Keep the tensors in file order (of their offsets). */
    struct art_tensor *sorted = malloc((st->n ? st->n : 1) * sizeof *sorted);
    if (!sorted) {
        rc = fail(diag, ART_E_NOMEM, "%s: out of memory (%zu bytes)", path,
                  art_nomem_last);
        goto done;
    }
    for (size_t i = 0; i < st->n; i++) {
        sorted[i] = st->tensors[ents[i].index];
        ents[i].index = i;
    }
    free(st->tensors);
    st->tensors = sorted;
done:
    json_decref(root);
    if (rc != ART_OK) {
        free(ents);
        ents = NULL;
    }
    *ents_out = ents;
    return rc;
}

static int read_exact(FILE *f, void *buf, uint64_t len)
{
    return len == 0 || fread(buf, 1, (size_t)len, f) == len ? 0 : -1;
}

static uint64_t round_up(uint64_t v)
{
    return (v + SLOT_ALIGN - 1) / SLOT_ALIGN * SLOT_ALIGN;
}

ART_API int art_safetensors_load(const char *path, art_safetensors **out,
                                 struct art_diag *diag)
{
    if (out) {
        *out = NULL;
    }
    if (!path || !out) {
        return fail(diag, ART_E_INVALID, "safetensors: NULL %s",
                    path ? "output" : "path");
    }
    FILE *f = fopen(path, "rb");
    if (!f) {
        return fail_io(diag, errno, "%s: cannot open: %s", path,
                       strerror(errno));
    }
    art_safetensors *st = calloc(1, sizeof *st);
    char *text = NULL;
    struct entry *ents = NULL;
    int rc = ART_OK;
    struct stat sb;
    if (!st) {
        rc = fail(diag, ART_E_NOMEM, "%s: out of memory (%zu bytes)", path,
                  art_nomem_last);
        goto done;
    }
    if (fstat(fileno(f), &sb) != 0) {
        rc = fail_io(diag, errno, "%s: cannot stat: %s", path,
                     strerror(errno));
        goto done;
    }
    if (!S_ISREG(sb.st_mode)) {
        rc = fail(diag, ART_E_IO, "%s: not a regular file", path);
        goto done;
    }
    const uint64_t file_bytes = (uint64_t)sb.st_size;
    unsigned char lenb[8];
    if (file_bytes < 8) {
        rc = fail(diag, ART_E_PARSE, "%s: truncated: %" PRIu64 " bytes, "
                  "shorter than the 8-byte header length", path, file_bytes);
        goto done;
    }
    if (read_exact(f, lenb, 8) != 0) {
        rc = fail_io(diag, ferror(f) ? errno : 0, "%s: cannot read: %s",
                     path, ferror(f) ? strerror(errno) : "the file shrank");
        goto done;
    }
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--) {
        hlen = (hlen << 8) | lenb[i];
    }
    if (hlen > file_bytes - 8) {
        /* Checked before allocating: the length comes from the file. */
        rc = fail(diag, ART_E_PARSE, "%s: the header length %" PRIu64
                  " runs past the end of the file (%" PRIu64 " bytes)",
                  path, hlen, file_bytes);
        goto done;
    }
    if (hlen < 2) {
        rc = fail(diag, ART_E_PARSE, "%s: a header of %" PRIu64 " bytes "
                  "cannot hold a JSON object", path, hlen);
        goto done;
    }
    if (hlen > MAX_HEADER_BYTES) {
        /* before reading or parsing it: JSON costs several times its
         * text in memory */
        rc = fail(diag, ART_E_PARSE, "%s: a header of %" PRIu64 " bytes "
                  "(at most %d are read: 16 MiB, a hundred thousand "
                  "tensors)", path, hlen, MAX_HEADER_BYTES);
        goto done;
    }
    if (!(text = malloc((size_t)hlen))) {
        rc = fail(diag, ART_E_NOMEM, "%s: out of memory for a %" PRIu64
                  "-byte header", path, hlen);
        goto done;
    }
    if (read_exact(f, text, hlen) != 0) {
        rc = fail_io(diag, ferror(f) ? errno : 0, "%s: cannot read: %s",
                     path, ferror(f) ? strerror(errno) : "the file shrank");
        goto done;
    }
    const uint64_t buffer_bytes = file_bytes - 8 - hlen;
    rc = parse_header(path, text, (size_t)hlen, buffer_bytes, st, &ents,
                      diag);
    if (rc != ART_OK) {
        goto done;
    }
    /* Every slot starts aligned for any dtype; the padding adds at most
     * SLOT_ALIGN - 1 bytes per tensor to what the file holds. */
    uint64_t total = 0;
    for (size_t i = 0; i < st->n; i++) {
        const uint64_t bytes = ents[i].end - ents[i].begin;
        if (bytes > UINT64_MAX - SLOT_ALIGN - total ||
            round_up(total + bytes) > SIZE_MAX) {
            rc = fail(diag, ART_E_OVERFLOW, "%s: tensor '%.80s' does not "
                      "fit in memory here", path, st->tensors[i].name);
            goto done;
        }
        total = round_up(total + bytes);
    }
    /* aligned_alloc, not malloc: malloc promises only 8 bytes on 32-bit
     * targets, and the slots' 16 are offsets from this base (total is a
     * multiple of SLOT_ALIGN, as aligned_alloc wants) */
    if (!(st->data = aligned_alloc(SLOT_ALIGN,
                                   total ? (size_t)total : SLOT_ALIGN))) {
        rc = fail(diag, ART_E_NOMEM, "%s: out of memory for %" PRIu64
                  " bytes of data", path, buffer_bytes);
        goto done;
    }
    uint64_t slot = 0;
    for (size_t i = 0; i < st->n; i++) {
        const uint64_t bytes = ents[i].end - ents[i].begin;
        /* Contiguous in the file, so the slots fill in one pass. */
        if (read_exact(f, st->data + slot, bytes) != 0) {
            rc = fail_io(diag, ferror(f) ? errno : 0,
                         "%s: cannot read tensor '%.80s': %s", path,
                         st->tensors[i].name,
                         ferror(f) ? strerror(errno) : "the file shrank");
            goto done;
        }
        st->tensors[i].data = st->data + slot;
        slot = round_up(slot + bytes);
    }
done:
    fclose(f);
    free(text);
    free(ents);
    if (rc != ART_OK) {
        art_safetensors_destroy(st);
        return rc;
    }
    *out = st;
    return ART_OK;
}
