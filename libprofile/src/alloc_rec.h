/* Private: malloc and co. here record the size of a failed request in
 * prof_nomem_last (defined in status.c, read by prof_nomem_bytes()); the
 * wrappers are internal/alloc_rec_impl.h. Include this header last: it
 * redefines malloc and co. */
#ifndef PROF_ALLOC_REC_H
#define PROF_ALLOC_REC_H

#define ALLOC_REC_LAST prof_nomem_last
#define ALLOC_REC_WHEN prof_nomem_time
#include "../../internal/alloc_rec_impl.h"

#endif
