#include "edgefit/profile.h"

#include <stddef.h>

#include "alloc_rec.h" /* last: it wraps malloc and co. */

PROF_API const char *prof_strerror(int status)
{
    switch (status) {
    case PROF_OK:
        return "success";
    case PROF_E_INVALID:
        return "invalid argument";
    case PROF_E_RANGE:
        return "value out of range";
    case PROF_E_NOMEM:
        return "out of memory";
    case PROF_E_OVERFLOW:
        return "size overflows";
    case PROF_E_PARSE:
        return "cannot parse the description";
    case PROF_E_IO:
        return "cannot read the data file";
    case PROF_E_CALLBACK:
        return "the timed work failed";
    case PROF_E_KERNEL:
        return "a compute kernel failed";
    case PROF_E_MEMEST:
        return "the model estimate failed";
    case PROF_E_UNSUPPORTED:
        return "not supported for this model";
    default:
        return "unknown status";
    }
}

PROF_API const char *prof_version(void)
{
    return PROF_VERSION_TEXT;
}

/* alloc_rec.h's record of the last failed request on this thread */
ALLOC_REC_DEFINE(PROF_API, prof)
