/* Status texts and diagnostics formatting. */
#include "edgefit/memest.h"

#include "internal.h"

#include <stdio.h>

#include "alloc_rec.h" /* last: it wraps malloc and co. */

const char *memest_strerror(int status)
{
    switch (status) {
    case MEMEST_OK:
        return "success";
    case MEMEST_E_PARSE:
        return "malformed model description";
    case MEMEST_E_RANGE:
        return "value out of range";
    case MEMEST_E_OVERFLOW:
        return "size too large to count in 64 bits";
    case MEMEST_E_NOMEM:
        return "out of memory";
    case MEMEST_E_IO:
        return "cannot read file";
    case MEMEST_E_INVALID:
        return "invalid argument";
    case MEMEST_E_SHAPE:
        return "shapes do not agree";
    case MEMEST_E_NOTFOUND:
        return "not found";
    default:
        return "unknown status";
    }
}

const char *memest_version(void)
{
    return MEMEST_VERSION_TEXT;
}

size_t memest_diag_format(const struct memest_diag *diag, char *buf,
                          size_t cap)
{
    char empty[1];
    int n;

    if (buf == NULL || cap == 0) {
        buf = empty;
        cap = 1;
    }
    if (diag == NULL) {
        buf[0] = '\0';
        return 0;
    }
    if (diag->line > 0 && diag->column > 0) {
        n = snprintf(buf, cap, "%s:%d:%d: %s", diag->source, diag->line,
                     diag->column, diag->message);
    } else if (diag->line > 0) {
        /* a place with no column: an ONNX node's index + 1 */
        n = snprintf(buf, cap, "%s:%d: %s", diag->source, diag->line,
                     diag->message);
    } else {
        n = snprintf(buf, cap, "%s: %s", diag->source, diag->message);
    }
    return n < 0 ? 0 : (size_t)n;
}

/* alloc_rec.h's record of the last failed request on this thread */
ALLOC_REC_DEFINE(, memest)

/* The library's one wording of an out-of-memory diagnostic. */
int diag_nomem(struct memest_diag *diag, const char *what, size_t bytes)
{
    return diag_fail(diag, MEMEST_E_NOMEM, "out of memory: %s (%zu bytes)",
                     what, bytes);
}
