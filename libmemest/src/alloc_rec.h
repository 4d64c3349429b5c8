/* Private: malloc and co. here record the size of a failed request in
 * memest_nomem_last (defined in status.c, read by memest_nomem_bytes()); the
 * wrappers are internal/alloc_rec_impl.h. Include this header last: it
 * redefines malloc and co. */
#ifndef MEMEST_ALLOC_REC_H
#define MEMEST_ALLOC_REC_H

#define ALLOC_REC_LAST memest_nomem_last
#define ALLOC_REC_WHEN memest_nomem_time
#include "../../internal/alloc_rec_impl.h"

#endif
