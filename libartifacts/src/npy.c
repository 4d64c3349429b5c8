/*
 * NumPy .npy files (numpy.lib.format): the magic "\x93NUMPY", a major and
 * a minor version byte, the header length (2 bytes little-endian in
 * version 1, 4 bytes in versions 2 and 3), then the header: a Python dict
 * literal
 *
 *     {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }
 *
 * padded with spaces and ended by a newline, and the array's bytes.
 *
 * The reader trusts nothing in the file. The header length is checked
 * against the file's size before the header is looked at; the dict is
 * parsed as the small part of Python's literal syntax numpy writes
 * (strings in either quote, True/False, a tuple of integers), with the
 * three keys exactly once each; each dimension and their product times the
 * element size are checked for overflow and must equal the bytes the file
 * holds after the header: a truncated file and trailing bytes are both
 * refused, naming the numbers. Only C order is read: a Fortran-order
 * array would need a transpose the caller does not expect.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "internal.h"
#include "alloc_rec.h" /* last: it wraps malloc and co. */

static const unsigned char MAGIC[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};

/* Header lengths above this are refused before anything else: numpy
 * itself refuses headers over 10000 bytes unless told otherwise, and the
 * largest honest header (32 dimensions of 20 digits) is far below. */
#define HEADER_MAX 65536u

struct art_npy {
    struct art_tensor t;
    char *name;
    unsigned major, minor;
    void *data;
};

static int fail(struct art_diag *diag, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail(struct art_diag *diag, int status, const char *fmt, ...)
{
    if (diag) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(diag->message, sizeof diag->message, fmt, ap);
        va_end(ap);
        diag->line = 0;
        diag->sys_errno = 0;
    }
    return status;
}

/* The dtypes numpy spells with a kind letter and a size. */
static const struct {
    char kind;
    unsigned size;
    enum art_dtype dtype;
} descrs[] = {
    {'f', 2, ART_DTYPE_F16}, {'f', 4, ART_DTYPE_F32},
    {'f', 8, ART_DTYPE_F64}, {'i', 1, ART_DTYPE_I8},
    {'u', 1, ART_DTYPE_U8},  {'i', 4, ART_DTYPE_I32},
    {'i', 8, ART_DTYPE_I64},
};
#define N_DESCRS (sizeof descrs / sizeof descrs[0])
#define SUPPORTED "'<f2', '<f4', '<f8', '|i1', '|u1', '<i4', '<i8' " \
                  "(or '>' for big-endian)"

/* ---- Reading ----------------------------------------------------------- */

/* A cursor over the header text, for the parser below. */
struct cur {
    const char *p, *end;
};

static void skip_space(struct cur *c)
{
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' ||
                             *c->p == '\n' || *c->p == '\r')) {
        c->p++;
    }
}

static int eat(struct cur *c, char ch)
{
    skip_space(c);
    if (c->p < c->end && *c->p == ch) {
        c->p++;
        return 1;
    }
    return 0;
}

/* A quoted string without escapes (numpy writes none in the three keys
 * and in simple descrs) into buf; -1 when there is none or it is too
 * long. */
static int parse_string(struct cur *c, char *buf, size_t cap)
{
    skip_space(c);
    if (c->p >= c->end || (*c->p != '\'' && *c->p != '"')) {
        return -1;
    }
    const char q = *c->p++;
    size_t n = 0;
    while (c->p < c->end && *c->p != q) {
        if (*c->p == '\\' || n + 1 >= cap) {
            return -1;
        }
        buf[n++] = *c->p++;
    }
    if (c->p >= c->end) {
        return -1;
    }
    c->p++;
    buf[n] = '\0';
    return 0;
}

static int parse_word(struct cur *c, const char *word)
{
    skip_space(c);
    const size_t n = strlen(word);
    if ((size_t)(c->end - c->p) >= n && memcmp(c->p, word, n) == 0) {
        c->p += n;
        return 1;
    }
    return 0;
}

/* A non-negative decimal integer (Python 2's trailing L accepted, as
 * numpy does for old files); 1 on overflow of int64, -1 when absent. */
static int parse_uint(struct cur *c, uint64_t *out)
{
    skip_space(c);
    if (c->p >= c->end || *c->p < '0' || *c->p > '9') {
        return -1;
    }
    uint64_t v = 0;
    int over = 0;
    while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
        const unsigned d = (unsigned)(*c->p++ - '0');
        if (v > ((uint64_t)INT64_MAX - d) / 10) {
            over = 1;
        } else {
            v = v * 10 + d;
        }
    }
    if (c->p < c->end && (*c->p == 'L' || *c->p == 'l')) {
        c->p++;
    }
    *out = v;
    return over;
}

/* descr into dtype and whether its bytes are big-endian. */
static int parse_descr(const char *src, const char *descr,
                       enum art_dtype *dtype, int *swap,
                       struct art_diag *diag)
{
    const char order = descr[0];
    if ((order != '<' && order != '>' && order != '|' && order != '=') ||
        !descr[1]) {
        return fail(diag, ART_E_PARSE, "%s: dtype '%.40s' is not supported:"
                    " give one of " SUPPORTED, src, descr);
    }
    char *endp = NULL;
    errno = 0;
    const unsigned long size = strtoul(descr + 2, &endp, 10);
    if (errno || endp == descr + 2 || *endp) {
        return fail(diag, ART_E_PARSE, "%s: dtype '%.40s' is not supported:"
                    " give one of " SUPPORTED, src, descr);
    }
    for (size_t i = 0; i < N_DESCRS; i++) {
        if (descrs[i].kind == descr[1] && descrs[i].size == size) {
            /* '|' is "not applicable", only right for one-byte types;
             * '=' is the writer's native order. */
            if (order == '|' && size != 1) {
                break;
            }
            *dtype = descrs[i].dtype;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
            *swap = size > 1 && order == '<';
#else
            *swap = size > 1 && order == '>';
#endif
            return ART_OK;
        }
    }
    return fail(diag, ART_E_PARSE, "%s: dtype '%.40s' is not supported: "
                "give one of " SUPPORTED, src, descr);
}

/* The header dict into a (name, dtype, shape) and whether to swap. */
static int parse_header(const char *src, const char *text, size_t len,
                        struct art_tensor *t, int *swap,
                        struct art_diag *diag)
{
    struct cur c = {text, text + len};
    int have_descr = 0, have_order = 0, have_shape = 0;
    char descr[64];
    if (!eat(&c, '{')) {
        return fail(diag, ART_E_PARSE, "%s: the header is not a Python "
                    "dict: it does not start with '{'", src);
    }
    for (;;) {
        if (eat(&c, '}')) {
            break;
        }
        char key[32];
        if (parse_string(&c, key, sizeof key) != 0 || !eat(&c, ':')) {
            return fail(diag, ART_E_PARSE, "%s: header, byte %td: expected "
                        "a quoted key and ':'", src, c.p - text);
        }
        if (strcmp(key, "descr") == 0) {
            if (have_descr++) {
                return fail(diag, ART_E_PARSE, "%s: header: 'descr' appears "
                            "twice", src);
            }
            if (parse_string(&c, descr, sizeof descr) != 0) {
                return fail(diag, ART_E_PARSE, "%s: header: 'descr' is not "
                            "a simple dtype string (structured arrays are "
                            "not supported)", src);
            }
            const int st = parse_descr(src, descr, &t->dtype, swap, diag);
            if (st != ART_OK) {
                return st;
            }
        } else if (strcmp(key, "fortran_order") == 0) {
            if (have_order++) {
                return fail(diag, ART_E_PARSE, "%s: header: 'fortran_order' "
                            "appears twice", src);
            }
            if (parse_word(&c, "True")) {
                return fail(diag, ART_E_PARSE, "%s: fortran_order is True: "
                            "only C-order arrays are read (save with "
                            "numpy.ascontiguousarray)", src);
            }
            if (!parse_word(&c, "False")) {
                return fail(diag, ART_E_PARSE, "%s: header: fortran_order is"
                            " neither True nor False", src);
            }
        } else if (strcmp(key, "shape") == 0) {
            if (have_shape++) {
                return fail(diag, ART_E_PARSE, "%s: header: 'shape' appears "
                            "twice", src);
            }
            if (!eat(&c, '(')) {
                return fail(diag, ART_E_PARSE, "%s: header: shape is not a "
                            "tuple", src);
            }
            t->ndim = 0;
            while (!eat(&c, ')')) {
                uint64_t d;
                const int r = parse_uint(&c, &d);
                if (r < 0) {
                    return fail(diag, ART_E_PARSE, "%s: header: shape[%zu] "
                                "is not a non-negative integer", src,
                                t->ndim);
                }
                if (r > 0) {
                    return fail(diag, ART_E_OVERFLOW, "%s: header: shape[%zu]"
                                " does not fit in 64 bits", src, t->ndim);
                }
                if (t->ndim == ART_TENSOR_MAX_DIMS) {
                    return fail(diag, ART_E_PARSE, "%s: more than %d "
                                "dimensions are not supported", src,
                                ART_TENSOR_MAX_DIMS);
                }
                t->shape[t->ndim++] = d;
                if (!eat(&c, ',')) {
                    if (!eat(&c, ')')) {
                        return fail(diag, ART_E_PARSE, "%s: header: shape is "
                                    "not a tuple of integers", src);
                    }
                    /* Python's one-element tuple needs its comma. */
                    if (t->ndim == 1) {
                        return fail(diag, ART_E_PARSE, "%s: header: shape "
                                    "(N) is not a tuple; (N,) is", src);
                    }
                    break;
                }
            }
        } else {
            return fail(diag, ART_E_PARSE, "%s: header: unknown key '%s' "
                        "(a .npy header has descr, fortran_order and shape)",
                        src, key);
        }
        if (!eat(&c, ',')) {
            if (!eat(&c, '}')) {
                return fail(diag, ART_E_PARSE, "%s: header, byte %td: "
                            "expected ',' or '}'", src, c.p - text);
            }
            break;
        }
    }
    skip_space(&c);
    if (c.p != c.end) {
        return fail(diag, ART_E_PARSE, "%s: header: text after the dict "
                    "(byte %td)", src, c.p - text);
    }
    if (!have_descr || !have_order || !have_shape) {
        return fail(diag, ART_E_PARSE, "%s: header: no '%s' key", src,
                    !have_descr ? "descr"
                    : !have_order ? "fortran_order" : "shape");
    }
    return ART_OK;
}

static void swap_bytes(unsigned char *p, size_t n, size_t size)
{
    for (size_t i = 0; i < n; i++, p += size) {
        for (size_t a = 0, b = size - 1; a < b; a++, b--) {
            const unsigned char x = p[a];
            p[a] = p[b];
            p[b] = x;
        }
    }
}

ART_API void art_npy_destroy(art_npy *a)
{
    if (a) {
        free(a->name);
        free(a->data);
        free(a);
    }
}

ART_API int art_npy_parse(const void *buf, size_t len, const char *source,
                          art_npy **out, struct art_diag *diag)
{
    const char *src = source ? source : "<buffer>";
    if (out) {
        *out = NULL;
    }
    if (!out || (!buf && len > 0)) {
        return fail(diag, ART_E_INVALID, "%s: NULL %s", src,
                    out ? "buffer" : "output");
    }
    const unsigned char *b = buf;
    if (len < 10 || memcmp(b, MAGIC, sizeof MAGIC) != 0) {
        if (len >= sizeof MAGIC && memcmp(b, MAGIC, sizeof MAGIC) == 0) {
            return fail(diag, ART_E_PARSE, "%s: truncated: %zu bytes, "
                        "shorter than the preamble", src, len);
        }
        return fail(diag, ART_E_PARSE, "%s: not a .npy file (no "
                    "\\x93NUMPY magic)", src);
    }
    const unsigned major = b[6], minor = b[7];
    if (major < 1 || major > 3) {
        return fail(diag, ART_E_PARSE, "%s: .npy format version %u.%u is "
                    "not supported (1.0, 2.0 and 3.0 are)", src, major,
                    minor);
    }
    size_t pre = major == 1 ? 10 : 12;
    if (len < pre) {
        return fail(diag, ART_E_PARSE, "%s: truncated: %zu bytes, shorter "
                    "than the preamble", src, len);
    }
    uint64_t hlen = (uint64_t)b[8] | (uint64_t)b[9] << 8;
    if (major > 1) {
        hlen |= (uint64_t)b[10] << 16 | (uint64_t)b[11] << 24;
    }
    if (hlen > len - pre) {
        return fail(diag, ART_E_PARSE, "%s: truncated: the header length %"
                    PRIu64 " runs past the end of the file (%zu bytes)",
                    src, hlen, len);
    }
    if (hlen > HEADER_MAX) {
        return fail(diag, ART_E_PARSE, "%s: a header of %" PRIu64 " bytes "
                    "(at most %u)", src, hlen, HEADER_MAX);
    }
    const char *text = (const char *)b + pre;
    /* Version 1 and 2 headers are Latin-1 (ASCII in practice), version 3
     * UTF-8; the parts read here are ASCII either way, and a NUL byte is
     * never part of a valid header. */
    if (memchr(text, '\0', (size_t)hlen)) {
        return fail(diag, ART_E_PARSE, "%s: a NUL byte in the header", src);
    }
    art_npy *a = calloc(1, sizeof *a);
    if (!a || !(a->name = strdup(src))) {
        art_npy_destroy(a);
        return fail(diag, ART_E_NOMEM, "%s: out of memory (%zu bytes)", src,
                    art_nomem_last);
    }
    a->major = major;
    a->minor = minor;
    a->t.name = a->name;
    int swap = 0;
    int st = parse_header(src, text, (size_t)hlen, &a->t, &swap, diag);
    if (st != ART_OK) {
        art_npy_destroy(a);
        return st;
    }
    const size_t size = art_dtype_size(a->t.dtype);
    uint64_t count = 1;
    for (size_t d = 0; d < a->t.ndim; d++) {
        if (a->t.shape[d] != 0 && count > UINT64_MAX / size /
                                              a->t.shape[d]) {
            art_npy_destroy(a);
            return fail(diag, ART_E_OVERFLOW, "%s: the shape's size does "
                        "not fit in 64 bits", src);
        }
        count *= a->t.shape[d];
    }
    const uint64_t bytes = count * size;
    const uint64_t have = (uint64_t)(len - pre - (size_t)hlen);
    if (bytes != have) {
        art_npy_destroy(a);
        if (bytes > have) {
            return fail(diag, ART_E_PARSE, "%s: truncated: the shape and "
                        "dtype make %" PRIu64 " bytes of data, the file "
                        "holds %" PRIu64, src, bytes, have);
        }
        return fail(diag, ART_E_PARSE, "%s: %" PRIu64 " trailing bytes "
                    "after the %" PRIu64 " bytes of data", src,
                    have - bytes, bytes);
    }
    if (!(a->data = malloc(bytes ? (size_t)bytes : 1u))) {
        art_npy_destroy(a);
        return fail(diag, ART_E_NOMEM, "%s: out of memory for %" PRIu64
                    " bytes", src, bytes);
    }
    if (bytes) {
        memcpy(a->data, text + hlen, (size_t)bytes);
    }
    if (swap) {
        swap_bytes(a->data, (size_t)count, size);
    }
    a->t.data = a->data;
    *out = a;
    return ART_OK;
}

ART_API int art_npy_load(const char *path, art_npy **out,
                         struct art_diag *diag)
{
    if (out) {
        *out = NULL;
    }
    if (!path || !out) {
        return fail(diag, ART_E_INVALID, "npy: NULL %s",
                    path ? "output" : "path");
    }
    FILE *f = fopen(path, "rb");
    if (!f) {
        const int err = errno;
        fail(diag, ART_E_IO, "%s: %s", path, strerror(err));
        if (diag) {
            diag->sys_errno = err;
        }
        return ART_E_IO;
    }
    int st = ART_OK;
    unsigned char *buf = NULL;
    struct stat sb;
    if (fstat(fileno(f), &sb) != 0 || !S_ISREG(sb.st_mode)) {
        const int err = S_ISDIR(sb.st_mode) ? EISDIR : errno;
        st = fail(diag, ART_E_IO, "%s: %s", path,
                  err ? strerror(err) : "not a regular file");
        if (diag) {
            diag->sys_errno = err;
        }
        goto done;
    }
    /* The file's real size bounds the allocation: a header that claims
     * more is refused by art_npy_parse() without allocating. */
    if ((uint64_t)sb.st_size > SIZE_MAX - 1) {
        st = fail(diag, ART_E_OVERFLOW, "%s: too large to read here", path);
        goto done;
    }
    const size_t len = (size_t)sb.st_size;
    if (!(buf = malloc(len ? len : 1))) {
        st = fail(diag, ART_E_NOMEM, "%s: out of memory for %zu bytes", path,
                  len);
        goto done;
    }
    if (len && fread(buf, 1, len, f) != len) {
        const int err = ferror(f) ? errno : 0;
        st = fail(diag, ART_E_IO, "%s: cannot read: %s", path,
                  err ? strerror(err) : "the file shrank");
        if (diag) {
            diag->sys_errno = err;
        }
        goto done;
    }
    st = art_npy_parse(buf, len, path, out, diag);
done:
    free(buf);
    fclose(f);
    return st;
}

ART_API const struct art_tensor *art_npy_tensor(const art_npy *a)
{
    return a ? &a->t : NULL;
}

ART_API unsigned art_npy_version(const art_npy *a)
{
    return a ? a->major : 0;
}

/* ---- Writing ----------------------------------------------------------- */

/* What numpy writes for each dtype on a little-endian host. */
static const char *descr_of(enum art_dtype dtype)
{
    switch (dtype) {
    case ART_DTYPE_F32:
        return "<f4";
    case ART_DTYPE_F16:
        return "<f2";
    case ART_DTYPE_F64:
        return "<f8";
    case ART_DTYPE_I8:
        return "|i1";
    case ART_DTYPE_U8:
        return "|u1";
    case ART_DTYPE_I32:
        return "<i4";
    case ART_DTYPE_I64:
        return "<i8";
    default:
        return NULL; /* BF16: NumPy has no such type */
    }
}

struct npy_out {
    const struct art_tensor *t;
    uint64_t bytes;
};

/* numpy.lib.format.write_array's header, byte for byte: the dict with a
 * trailing ", ", padded with spaces so that the data starts at a multiple
 * of 64 bytes, ended by a newline; version 1.0 while the length fits in
 * two bytes. */
static int write_npy(const void *obj, FILE *f)
{
    const struct npy_out *o = obj;
    char dict[64 + ART_TENSOR_MAX_DIMS * 24];
    int n = snprintf(dict, sizeof dict,
                     "{'descr': '%s', 'fortran_order': False, 'shape': (",
                     descr_of(o->t->dtype));
    for (size_t d = 0; d < o->t->ndim; d++) {
        n += snprintf(dict + n, sizeof dict - (size_t)n, "%s%" PRIu64,
                      d ? ", " : "", o->t->shape[d]);
    }
    n += snprintf(dict + n, sizeof dict - (size_t)n, "%s), }",
                  o->t->ndim == 1 ? "," : "");
    /* Preamble 10 bytes; the header text plus newline padded to 64. */
    const size_t total = (10 + (size_t)n + 1 + 63) / 64 * 64;
    const size_t hlen = total - 10;
    unsigned char pre[10];
    memcpy(pre, MAGIC, sizeof MAGIC);
    pre[6] = 1;
    pre[7] = 0;
    pre[8] = (unsigned char)(hlen & 0xff);
    pre[9] = (unsigned char)(hlen >> 8);
    if (fwrite(pre, 1, sizeof pre, f) != sizeof pre ||
        fwrite(dict, 1, (size_t)n, f) != (size_t)n) {
        return ART_E_IO;
    }
    for (size_t i = (size_t)n; i + 1 < hlen; i++) {
        if (fputc(' ', f) == EOF) {
            return ART_E_IO;
        }
    }
    if (fputc('\n', f) == EOF) {
        return ART_E_IO;
    }
    if (o->bytes &&
        fwrite(o->t->data, 1, (size_t)o->bytes, f) != o->bytes) {
        return ART_E_IO;
    }
    return ART_OK;
}

ART_API int art_npy_save(const char *path, const struct art_tensor *t,
                         struct art_diag *diag)
{
    if (!path || !*path || !t) {
        return fail(diag, ART_E_INVALID, "npy: NULL %s",
                    t ? "path" : "tensor");
    }
    if (!descr_of(t->dtype)) {
        return fail(diag, ART_E_INVALID, "%s: dtype %s has no NumPy "
                    "equivalent", path,
                    art_dtype_name(t->dtype) ? art_dtype_name(t->dtype)
                                             : "(unknown)");
    }
    if (t->ndim > ART_TENSOR_MAX_DIMS) {
        return fail(diag, ART_E_INVALID, "%s: %zu dimensions, at most %d",
                    path, t->ndim, ART_TENSOR_MAX_DIMS);
    }
    uint64_t bytes = art_dtype_size(t->dtype);
    for (size_t d = 0; d < t->ndim; d++) {
        if (t->shape[d] > (uint64_t)INT64_MAX ||
            (t->shape[d] && bytes > UINT64_MAX / t->shape[d])) {
            return fail(diag, ART_E_OVERFLOW, "%s: the shape's size does "
                        "not fit in 64 bits", path);
        }
        bytes *= t->shape[d];
    }
    if (bytes > SIZE_MAX) {
        return fail(diag, ART_E_OVERFLOW, "%s: too large to write here",
                    path);
    }
    if (bytes && !t->data) {
        return fail(diag, ART_E_INVALID, "%s: NULL data for %" PRIu64
                    " bytes", path, bytes);
    }
    const struct npy_out o = {t, bytes};
    return art_save_with(path, write_npy, &o, diag);
}
