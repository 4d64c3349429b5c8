#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "edgefit/profile.h"

/* Read exactly len bytes; gzread also reads files that are not gzipped. */
static int read_all(gzFile f, void *buf, uint64_t len)
{
    unsigned char *p = buf;
    while (len > 0) {
        const unsigned chunk = len > (1u << 30) ? (1u << 30) : (unsigned)len;
        const int n = gzread(f, p, chunk);
        if (n <= 0) {
            return -1;
        }
        p += n;
        len -= (unsigned)n;
    }
    return 0;
}

static uint32_t be32(const unsigned char *b)
{
    return ((uint32_t)b[0] << 24) | ((uint32_t)b[1] << 16) |
           ((uint32_t)b[2] << 8) | (uint32_t)b[3];
}

PROF_API int prof_idx_load_images(const char *path, uint64_t max_count,
                                  struct prof_idx_images *out)
{
    if (!path || !out) {
        return PROF_E_INVALID;
    }
    memset(out, 0, sizeof(*out));
    gzFile f = gzopen(path, "rb");
    if (!f) {
        return PROF_E_IO;
    }
    int st = PROF_OK;
    unsigned char head[16];
    if (read_all(f, head, sizeof(head)) != 0) {
        st = PROF_E_IO;
        goto done;
    }
    /* IDX: two zero bytes, type 0x08 (unsigned byte), 3 dimensions. */
    if (head[0] != 0 || head[1] != 0 || head[2] != 0x08 || head[3] != 3) {
        st = PROF_E_PARSE;
        goto done;
    }
    uint64_t count = be32(head + 4);
    const uint64_t rows = be32(head + 8);
    const uint64_t cols = be32(head + 12);
    if (rows == 0 || cols == 0) {
        st = PROF_E_PARSE;
        goto done;
    }
    if (max_count != 0 && max_count < count) {
        count = max_count;
    }
    /* rows and cols are below 2^32, so rows * cols fits; the product with
     * count is checked. */
    const uint64_t per = rows * cols;
    if (count != 0 && per > SIZE_MAX / count) {
        st = PROF_E_OVERFLOW;
        goto done;
    }
    const uint64_t bytes = per * count;
    uint8_t *pixels = malloc(bytes ? (size_t)bytes : 1u);
    if (!pixels) {
        st = PROF_E_NOMEM;
        goto done;
    }
    if (read_all(f, pixels, bytes) != 0) {
        free(pixels);
        st = PROF_E_IO;
        goto done;
    }
    out->pixels = pixels;
    out->count = count;
    out->rows = rows;
    out->cols = cols;
done:
    gzclose(f);
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
