/*
 * IDX files, the format of MNIST and Fashion-MNIST: images (IDX3) and
 * labels (IDX1), gzip-compressed or plain, and the labelled data sets made
 * of one of each.
 *
 * The header's sizes are never trusted with memory: a plain file must be
 * exactly as long as its header says (fstat, before any allocation), and a
 * gzip stream, whose length is unknown until it ends, is read into a buffer
 * that grows geometrically with what really arrives. Either way a lying
 * header costs at most about twice the bytes the file really holds.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "edgefit/profile.h"
#include "internal.h"
#include "alloc_rec.h" /* last: it wraps malloc and co. */

/* The first read of a gzip stream asks for at most this much memory; the
 * buffer doubles from there. */
#define GZ_FIRST_CHUNK ((uint64_t)1 << 20)

/* The largest read handed to gzread at once (it takes an unsigned and
 * returns an int). */
#define GZ_MAX_READ ((uint64_t)1 << 30)

#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static int fail(struct prof_diag *diag, int status, const char *fmt, ...)
{
    if (diag) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(diag->message, sizeof(diag->message), fmt, ap);
        va_end(ap);
        diag->column = 0;
    }
    return status;
}

static uint32_t be32(const unsigned char *b)
{
    return ((uint32_t)b[0] << 24) | ((uint32_t)b[1] << 16) |
           ((uint32_t)b[2] << 8) | (uint32_t)b[3];
}

/* An open IDX file: the stream, whether it is compressed and, for a plain
 * file, its size. */
struct idx_file {
    const char *path;
    gzFile gz;
    bool plain;
    bool sized;          /* a regular file, whose size fstat knows */
    uint64_t file_bytes;
};

/* The reason of the last gzread failure: the system's for an I/O error,
 * zlib's for a corrupt stream (PROF_E_PARSE). */
static int read_error(const struct idx_file *f, struct prof_diag *diag)
{
    int zerr = Z_OK;
    const char *msg = gzerror(f->gz, &zerr);
    if (zerr == Z_ERRNO) {
        return fail(diag, PROF_E_IO, "%s: cannot read: %s", f->path,
                    strerror(errno));
    }
    if (zerr == Z_MEM_ERROR) {
        return fail(diag, PROF_E_NOMEM, "%s: out of memory while "
                    "decompressing", f->path);
    }
    return fail(diag, PROF_E_PARSE, "%s: corrupt gzip stream (%s)",
                f->path, msg ? msg : "unknown zlib error");
}

/* Read up to len bytes; *got receives how many arrived before the end of
 * the data. */
static int read_some(const struct idx_file *f, void *buf, uint64_t len,
                     uint64_t *got, struct prof_diag *diag)
{
    unsigned char *p = buf;
    *got = 0;
    while (len > 0) {
        const unsigned chunk =
            (unsigned)(len > GZ_MAX_READ ? GZ_MAX_READ : len);
        const int n = gzread(f->gz, p, chunk);
        if (n < 0) {
            return read_error(f, diag);
        }
        if (n == 0) {
            break;
        }
        p += n;
        *got += (uint64_t)n;
        len -= (uint64_t)n;
    }
    return PROF_OK;
}

static int idx_open(const char *path, struct idx_file *f,
                    struct prof_diag *diag)
{
    memset(f, 0, sizeof(*f));
    f->path = path;
    const int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return fail(diag, PROF_E_IO, "%s: cannot open: %s", path,
                    strerror(errno));
    }
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        const int e = errno;
        close(fd);
        return fail(diag, PROF_E_IO, "%s: cannot stat: %s", path,
                    strerror(e));
    }
    if (S_ISDIR(sb.st_mode)) {
        close(fd);
        return fail(diag, PROF_E_IO, "%s: cannot read: %s", path,
                    strerror(EISDIR));
    }
    /* A pipe or a device has no size to check against: it is read like a
     * gzip stream, growing the buffer with the data. */
    f->sized = S_ISREG(sb.st_mode);
    f->file_bytes = sb.st_size > 0 ? (uint64_t)sb.st_size : 0;
    f->gz = gzdopen(fd, "rb");
    if (!f->gz) {
        close(fd);
        return fail(diag, PROF_E_NOMEM, "%s: out of memory opening the "
                    "stream", path);
    }
    return PROF_OK;
}

static void idx_close(struct idx_file *f)
{
    if (f->gz) {
        gzclose(f->gz);
        f->gz = NULL;
    }
}

static const char *kind_name(unsigned ndim)
{
    return ndim == 3 ? "images (IDX3)" : "labels (IDX1)";
}

/*
 * Read the magic number and the ndim sizes; check them; *item receives the
 * bytes per item (rows * cols for images, 1 for labels) and *count the
 * items claimed.
 */
static int read_header(struct idx_file *f, unsigned ndim, uint64_t *dims,
                       struct prof_diag *diag)
{
    unsigned char head[16];
    const uint64_t head_bytes = 4 + 4 * (uint64_t)ndim;
    /* The magic number first, so that a file of the wrong kind is named
     * as such even when it is shorter than the header expected. */
    uint64_t got = 0;
    int st = read_some(f, head, 4, &got, diag);
    if (st != PROF_OK) {
        return st;
    }
    /* gzdirect() is valid once the first read has looked at the data. */
    f->plain = gzdirect(f->gz) != 0;
    if (got == 4) {
        uint64_t more = 0;
        st = read_some(f, head + 4, head_bytes - 4, &more, diag);
        if (st != PROF_OK) {
            return st;
        }
        got += more;
    }
    if (got < 4) {
        return fail(diag, PROF_E_PARSE,
                    "%s: truncated: %" PRIu64 " bytes, shorter than the "
                    "%" PRIu64 "-byte header of IDX %s",
                    f->path, got, head_bytes, kind_name(ndim));
    }
    const uint32_t magic = be32(head);
    const uint32_t want = 0x800u | ndim;
    if (magic != want) {
        if ((magic & 0xffff0000u) != 0) {
            return fail(diag, PROF_E_PARSE,
                        "%s: not an IDX file (magic number 0x%08" PRIx32
                        ", expected 0x%08" PRIx32 " for %s)",
                        f->path, magic, want, kind_name(ndim));
        }
        if ((magic & 0xff00u) != 0x800u) {
            return fail(diag, PROF_E_PARSE,
                        "%s: IDX data type 0x%02x is not unsigned bytes "
                        "(0x08)", f->path, (unsigned)((magic >> 8) & 0xff));
        }
        return fail(diag, PROF_E_PARSE,
                    "%s: IDX data of %u dimension(s), not %s (magic number "
                    "0x%08" PRIx32 ", expected 0x%08" PRIx32 ")",
                    f->path, (unsigned)(magic & 0xff), kind_name(ndim),
                    magic, want);
    }
    if (got < head_bytes) {
        return fail(diag, PROF_E_PARSE,
                    "%s: truncated: %" PRIu64 " bytes, shorter than the "
                    "%" PRIu64 "-byte header of IDX %s",
                    f->path, got, head_bytes, kind_name(ndim));
    }
    for (unsigned i = 0; i < ndim; i++) {
        dims[i] = be32(head + 4 + 4 * i);
    }
    for (unsigned i = 1; i < ndim; i++) {
        if (dims[i] == 0) {
            return fail(diag, PROF_E_RANGE, "%s: image size %" PRIu64
                        "x%" PRIu64 " has a zero dimension", f->path,
                        dims[1], dims[2]);
        }
    }
    return PROF_OK;
}

/*
 * Read the data after the header: `take` items of `item` bytes out of the
 * `count` the header claims. A plain file is checked against its size
 * first; a gzip stream grows its buffer with the data. When every item is
 * taken, nothing may follow.
 */
static int read_items(struct idx_file *f, uint64_t head_bytes,
                      uint64_t count, uint64_t take, uint64_t item,
                      const char *what, uint8_t **out,
                      struct prof_diag *diag)
{
    *out = NULL;
    /* item < 2^64 and count < 2^32: check the product before using it. */
    if (count != 0 && item > (UINT64_MAX - head_bytes) / count) {
        return fail(diag, PROF_E_OVERFLOW, "%s: the header claims %" PRIu64
                    " %s of %" PRIu64 " bytes, more than 2^64 bytes",
                    f->path, count, what, item);
    }
    const uint64_t claimed = count * item;
    const uint64_t want = take * item;
    if (f->plain && f->sized && f->file_bytes != head_bytes + claimed) {
        /* The cheap, exact check: refuse before allocating anything. */
        const uint64_t body =
            f->file_bytes > head_bytes ? f->file_bytes - head_bytes : 0;
        if (f->file_bytes < head_bytes + claimed) {
            return fail(diag, PROF_E_PARSE,
                        "%s: truncated: the header claims %" PRIu64
                        " %s (%" PRIu64 " bytes) but the file holds %"
                        PRIu64 " bytes of data (%" PRIu64 " whole %s)",
                        f->path, count, what, claimed, body, body / item,
                        what);
        }
        return fail(diag, PROF_E_PARSE,
                    "%s: %" PRIu64 " bytes after the %" PRIu64 " %s the "
                    "header claims", f->path, body - claimed, count, what);
    }
    /* A plain file is now known to hold want bytes, allocated at once; a
     * gzip stream starts small and doubles, so memory follows the data
     * and a stream shorter than its header claims is refused as truncated
     * wherever size_t is narrow (on a 32-bit target too) */
    const bool at_once = f->plain && f->sized;
    if (want > SIZE_MAX - 1 && at_once) {
        return fail(diag, PROF_E_OVERFLOW, "%s: %" PRIu64 " %s of %" PRIu64
                    " bytes do not fit in memory here", f->path, take, what,
                    item);
    }
    uint64_t cap = at_once ? want
                           : (want < GZ_FIRST_CHUNK ? want : GZ_FIRST_CHUNK);
    uint8_t *buf = malloc(cap ? (size_t)cap : 1u);
    if (!buf) {
        return fail(diag, PROF_E_NOMEM, "%s: out of memory for %" PRIu64
                    " bytes of %s", f->path, cap, what);
    }
    uint64_t have = 0;
    int st = PROF_OK;
    for (;;) {
        uint64_t got = 0;
        st = read_some(f, buf + have, cap - have, &got, diag);
        if (st != PROF_OK) {
            goto fail;
        }
        have += got;
        if (have < cap || cap == want) {
            break; /* the end of the stream, or all we want */
        }
        const uint64_t next = cap > want / 2 ? want : cap * 2;
        if (next > SIZE_MAX - 1) {
            st = fail(diag, PROF_E_OVERFLOW, "%s: %" PRIu64 " %s of %"
                      PRIu64 " bytes do not fit in memory here", f->path,
                      take, what, item);
            goto fail;
        }
        uint8_t *grown = realloc(buf, (size_t)next);
        if (!grown) {
            st = fail(diag, PROF_E_NOMEM, "%s: out of memory for %" PRIu64
                      " bytes of %s", f->path, next, what);
            goto fail;
        }
        buf = grown;
        cap = next;
    }
    if (have < want) {
        st = fail(diag, PROF_E_PARSE,
                  "%s: truncated: the header claims %" PRIu64 " %s (%" PRIu64
                  " bytes) but the data ends after %" PRIu64 " bytes (%"
                  PRIu64 " whole %s)",
                  f->path, count, what, claimed, have, have / item, what);
        goto fail;
    }
    if (take == count) {
        /* Everything was read: the stream must end here. */
        unsigned char extra;
        uint64_t got = 0;
        st = read_some(f, &extra, 1, &got, diag);
        if (st != PROF_OK) {
            goto fail;
        }
        if (got != 0) {
            st = fail(diag, PROF_E_PARSE, "%s: data after the %" PRIu64
                      " %s the header claims", f->path, count, what);
            goto fail;
        }
    }
    *out = buf;
    return PROF_OK;
fail:
    free(buf);
    return st;
}

/*
 * Read an IDX file of ndim dimensions (3: images, 1: labels): dims
 * receives the header's sizes (dims[0] the count it claims), *taken the
 * items read (at most max_count, 0: all) and *data their bytes.
 */
static int load_idx(const char *path, unsigned ndim, uint64_t max_count,
                    uint64_t *dims, uint64_t *taken, uint8_t **data,
                    struct prof_diag *diag)
{
    struct idx_file f;
    int st = idx_open(path, &f, diag);
    if (st != PROF_OK) {
        return st;
    }
    st = read_header(&f, ndim, dims, diag);
    if (st == PROF_OK) {
        const uint64_t take =
            max_count != 0 && max_count < dims[0] ? max_count : dims[0];
        /* rows and cols are below 2^32, so their product fits. */
        const uint64_t item = ndim == 3 ? dims[1] * dims[2] : 1;
        st = read_items(&f, 4 + 4 * (uint64_t)ndim, dims[0], take, item,
                        ndim == 3 ? "images" : "labels", data, diag);
        *taken = take;
    }
    idx_close(&f);
    return st;
}

PROF_API int prof_idx_load_images(const char *path, uint64_t max_count,
                                  struct prof_idx_images *out,
                                  struct prof_diag *diag)
{
    if (out) {
        memset(out, 0, sizeof(*out));
    }
    if (!path || !out) {
        return fail(diag, PROF_E_INVALID, "idx images: NULL %s",
                    path ? "output" : "path");
    }
    uint64_t dims[3] = {0, 0, 0}, taken = 0;
    const int st = load_idx(path, 3, max_count, dims, &taken, &out->pixels,
                            diag);
    if (st == PROF_OK) {
        out->count = taken;
        out->rows = dims[1];
        out->cols = dims[2];
    }
    return st;
}

PROF_API void prof_idx_images_finish(struct prof_idx_images *images)
{
    if (!images) {
        return;
    }
    free(images->pixels);
    memset(images, 0, sizeof(*images));
}

PROF_API int prof_idx_load_labels(const char *path, uint64_t max_count,
                                  struct prof_idx_labels *out,
                                  struct prof_diag *diag)
{
    if (out) {
        memset(out, 0, sizeof(*out));
    }
    if (!path || !out) {
        return fail(diag, PROF_E_INVALID, "idx labels: NULL %s",
                    path ? "output" : "path");
    }
    uint64_t dims[1] = {0}, taken = 0;
    const int st = load_idx(path, 1, max_count, dims, &taken, &out->labels,
                            diag);
    if (st == PROF_OK) {
        out->count = taken;
    }
    return st;
}

PROF_API void prof_idx_labels_finish(struct prof_idx_labels *labels)
{
    if (!labels) {
        return;
    }
    free(labels->labels);
    memset(labels, 0, sizeof(*labels));
}

PROF_API const char *prof_dataset_default_dir(void)
{
    return PROF_FASHION_MNIST_DIR;
}

int prof_idx_path(char *buf, size_t len, const char *dir, const char *split,
                  const char *kind)
{
    int n = snprintf(buf, len, "%s/%s-%s.gz", dir, split, kind);
    if (n < 0 || (size_t)n >= len) {
        return -1;
    }
    if (access(buf, F_OK) != 0 && errno == ENOENT) {
        char plain[4096];
        n = snprintf(plain, sizeof(plain), "%s/%s-%s", dir, split, kind);
        if (n >= 0 && (size_t)n < sizeof(plain) && (size_t)n < len &&
            access(plain, F_OK) == 0) {
            memcpy(buf, plain, (size_t)n + 1);
        }
    }
    return 0;
}

PROF_API int prof_dataset_load(const char *dir, const char *split,
                               uint64_t max_count, struct prof_dataset *out,
                               struct prof_diag *diag)
{
    if (out) {
        memset(out, 0, sizeof(*out));
    }
    if (!split || !out) {
        return fail(diag, PROF_E_INVALID, "dataset: NULL %s",
                    split ? "output" : "split");
    }
    if (strcmp(split, "train") != 0 && strcmp(split, "t10k") != 0) {
        return fail(diag, PROF_E_INVALID, "dataset: unknown split '%s' "
                    "(train or t10k)", split);
    }
    if (!dir) {
        dir = prof_dataset_default_dir();
    }
    char ipath[4096], lpath[4096];
    if (prof_idx_path(ipath, sizeof(ipath), dir, split, "images-idx3-ubyte") ||
        prof_idx_path(lpath, sizeof(lpath), dir, split, "labels-idx1-ubyte")) {
        return fail(diag, PROF_E_INVALID, "dataset: folder name too long");
    }
    struct prof_idx_images im;
    struct prof_idx_labels lb;
    memset(&im, 0, sizeof(im));
    memset(&lb, 0, sizeof(lb));
    uint64_t idims[3] = {0, 0, 0}, ldims[1] = {0};
    int st = load_idx(ipath, 3, max_count, idims, &im.count, &im.pixels,
                      diag);
    if (st != PROF_OK) {
        goto done;
    }
    im.rows = idims[1];
    im.cols = idims[2];
    st = load_idx(lpath, 1, max_count, ldims, &lb.count, &lb.labels, diag);
    if (st != PROF_OK) {
        goto done;
    }
    if (idims[0] != ldims[0]) {
        /* The headers' counts, compared even when a limit reads fewer:
         * files that disagree are not one data set. */
        st = fail(diag, PROF_E_RANGE,
                  "%s holds %" PRIu64 " labels but %s holds %" PRIu64
                  " images", lpath, ldims[0], ipath, idims[0]);
        goto done;
    }
    if (im.count == 0) {
        st = fail(diag, PROF_E_RANGE, "%s: no images", ipath);
        goto done;
    }
    const uint64_t per = im.rows * im.cols;
    if (per > SIZE_MAX / sizeof(float) / im.count) {
        st = fail(diag, PROF_E_OVERFLOW, "%s: %" PRIu64 " images of %"
                  PRIu64 " pixels do not fit in memory as floats", ipath,
                  im.count, per);
        goto done;
    }
    const size_t n = (size_t)(per * im.count);
    float *x = malloc(n * sizeof(float));
    if (!x) {
        st = fail(diag, PROF_E_NOMEM, "%s: out of memory for %" PRIu64
                  " images as floats", ipath, im.count);
        goto done;
    }
    /* byte / 255 correctly rounded, as numpy's float32 division gives. */
    float scale[256];
    for (int v = 0; v < 256; v++) {
        scale[v] = (float)v / 255.0f;
    }
    for (size_t i = 0; i < n; i++) {
        x[i] = scale[im.pixels[i]];
    }
    unsigned top = 0;
    for (uint64_t i = 0; i < lb.count; i++) {
        top = lb.labels[i] > top ? lb.labels[i] : top;
    }
    out->source = strdup(ipath);
    if (!out->source) {
        free(x);
        st = fail(diag, PROF_E_NOMEM, "%s: out of memory (%zu bytes)",
                  ipath, prof_nomem_last);
        goto done;
    }
    out->x = x;
    out->y = lb.labels;
    lb.labels = NULL;
    out->count = im.count;
    out->rows = im.rows;
    out->cols = im.cols;
    out->rank = 3;
    out->shape[0] = 1;
    out->shape[1] = im.rows;
    out->shape[2] = im.cols;
    out->sample_count = per;
    out->classes = top + 1;
done:
    prof_idx_images_finish(&im);
    prof_idx_labels_finish(&lb);
    return st;
}

PROF_API void prof_dataset_finish(struct prof_dataset *d)
{
    if (!d) {
        return;
    }
    free(d->x);
    free(d->y);
    free(d->ref);
    free(d->source);
    memset(d, 0, sizeof(*d));
}

/* prod(shape[0..rank)) into *n; false when a size is 0 or the product
 * (times count floats) does not fit in size_t. */
static int shape_size(unsigned rank, const uint64_t *shape, uint64_t count,
                      const char *what, uint64_t *n, struct prof_diag *diag)
{
    if (rank < 1 || rank > PROF_DATASET_MAX_RANK) {
        return fail(diag, PROF_E_RANGE, "dataset: %s of rank %u (1 to %d)",
                    what, rank, PROF_DATASET_MAX_RANK);
    }
    uint64_t p = 1;
    for (unsigned i = 0; i < rank; i++) {
        if (shape[i] == 0) {
            return fail(diag, PROF_E_RANGE, "dataset: %s has a zero size "
                        "(axis %u)", what, i);
        }
        if (shape[i] > UINT64_MAX / p) {
            return fail(diag, PROF_E_OVERFLOW, "dataset: %s is larger than "
                        "2^64 values", what);
        }
        p *= shape[i];
    }
    if (p > SIZE_MAX / sizeof(float) / count) {
        return fail(diag, PROF_E_OVERFLOW, "dataset: %" PRIu64 " samples "
                    "of %" PRIu64 " values do not fit in memory as floats",
                    count, p);
    }
    *n = p;
    return PROF_OK;
}

PROF_API int prof_dataset_init(struct prof_dataset *out, uint64_t count,
                               unsigned rank, const uint64_t *shape,
                               bool labelled, unsigned ref_rank,
                               const uint64_t *ref_shape, const char *source,
                               struct prof_diag *diag)
{
    if (out) {
        memset(out, 0, sizeof(*out));
    }
    if (!out || !shape || (ref_rank > 0 && !ref_shape)) {
        return fail(diag, PROF_E_INVALID, "dataset: NULL %s",
                    !out ? "output" : !shape ? "shape" : "reference shape");
    }
    if (count == 0) {
        return fail(diag, PROF_E_RANGE, "dataset: no samples");
    }
    uint64_t per = 0, ref_per = 0;
    int st = shape_size(rank, shape, count, "a sample", &per, diag);
    if (st == PROF_OK && ref_rank > 0) {
        st = shape_size(ref_rank, ref_shape, count, "a reference output",
                        &ref_per, diag);
    }
    if (st != PROF_OK) {
        return st;
    }
    out->x = calloc((size_t)(count * per), sizeof(float));
    out->y = labelled ? calloc((size_t)count, 1) : NULL;
    out->ref = ref_rank ? calloc((size_t)(count * ref_per), sizeof(float))
                        : NULL;
    out->source = source ? strdup(source) : NULL;
    if (!out->x || (labelled && !out->y) || (ref_rank && !out->ref) ||
        (source && !out->source)) {
        prof_dataset_finish(out);
        return fail(diag, PROF_E_NOMEM, "dataset: out of memory for %"
                    PRIu64 " samples of %" PRIu64 " values", count, per);
    }
    out->count = count;
    out->rank = rank;
    memcpy(out->shape, shape, rank * sizeof(*shape));
    out->sample_count = per;
    out->ref_rank = ref_rank;
    if (ref_rank) {
        memcpy(out->ref_shape, ref_shape, ref_rank * sizeof(*ref_shape));
    }
    out->ref_count = ref_per;
    return PROF_OK;
}

PROF_API char *prof_dataset_shape_text(const struct prof_dataset *d,
                                       char *buf, size_t len)
{
    if (!buf || len == 0) {
        return buf;
    }
    buf[0] = '\0';
    size_t n = 0;
    for (unsigned i = 0; d && i < d->rank && i < PROF_DATASET_MAX_RANK;
         i++) {
        const int w = snprintf(buf + n, len - n, "%s%" PRIu64, i ? "x" : "",
                               d->shape[i]);
        if (w < 0 || (size_t)w >= len - n) {
            break; /* cut short: snprintf left a NUL */
        }
        n += (size_t)w;
    }
    return buf;
}
