/* Private: malloc and co. here record the size of a failed request in
 * art_nomem_last (defined in atomic.c, read by art_nomem_bytes()); the
 * wrappers are internal/alloc_rec_impl.h. Include this header last: it
 * redefines malloc and co. */
#ifndef ART_ALLOC_REC_H
#define ART_ALLOC_REC_H

#define ALLOC_REC_LAST art_nomem_last
#define ALLOC_REC_WHEN art_nomem_time
#include "../../internal/alloc_rec_impl.h"

#endif
