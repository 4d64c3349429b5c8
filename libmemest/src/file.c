/* What the readers of files share: diagnostics without a place, reading a
 * whole file, and releasing a tensor a loader filled. */
#include "internal.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "alloc_rec.h" /* last: it wraps malloc and co. */

int diag_fail(struct memest_diag *diag, int status, const char *fmt, ...)
{
    va_list ap;

    if (diag == NULL) {
        return status;
    }
    diag->line = 0;
    diag->column = 0;
    va_start(ap, fmt);
    vsnprintf(diag->message, sizeof diag->message, fmt, ap);
    va_end(ap);
    return status;
}

int read_whole_file(const char *path, const char *what, size_t max_bytes,
                    const char *limit_text, char **out, size_t *out_len,
                    struct memest_diag *diag)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    size_t len = 0;
    size_t cap = 0;
    int st;

    *out = NULL;
    *out_len = 0;
    if (f == NULL) {
        return diag_fail(diag, MEMEST_E_IO, "cannot open the %s: %s", what,
                         strerror(errno));
    }
    for (;;) {
        size_t got;
        if (len == cap) {
            char *grown;
            /* read one chunk past the limit to tell a file of exactly
             * max_bytes from a longer one */
            if (cap > max_bytes) {
                st = diag_fail(diag, MEMEST_E_RANGE,
                               "the %s is larger than %s", what,
                               limit_text);
                goto fail;
            }
            cap = cap ? cap * 2 : 4096;
            grown = realloc(buf, cap);
            if (grown == NULL) {
                st = diag_fail(diag, MEMEST_E_NOMEM,
                               "out of memory reading the %s (%zu bytes)",
                               what, cap);
                goto fail;
            }
            buf = grown;
        }
        got = fread(buf + len, 1, cap - len, f);
        len += got;
        if (got == 0) {
            break;
        }
    }
    if (ferror(f)) {
        st = diag_fail(diag, MEMEST_E_IO, "error reading the %s: %s", what,
                       strerror(errno));
        goto fail;
    }
    if (len > max_bytes) {
        st = diag_fail(diag, MEMEST_E_RANGE, "the %s is larger than %s",
                       what, limit_text);
        goto fail;
    }
    fclose(f);
    *out = buf;
    *out_len = len;
    return MEMEST_OK;

fail:
    fclose(f);
    free(buf);
    return st;
}

void memest_owned_tensor_free(struct memest_owned_tensor *t)
{
    if (t == NULL) {
        return;
    }
    free(t->name);
    free(t->data);
    memset(t, 0, sizeof *t);
}
