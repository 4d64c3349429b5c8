/* Private: malloc and co. here record the size of a failed request in
 * kern_nomem_last (defined in cpu.c, read by kern_nomem_bytes()); the
 * wrappers are internal/alloc_rec_impl.h. Include this header last: it
 * redefines malloc and co. */
#ifndef KERN_ALLOC_REC_H
#define KERN_ALLOC_REC_H

#define ALLOC_REC_LAST kern_nomem_last
#define ALLOC_REC_WHEN kern_nomem_time
#include "../../internal/alloc_rec_impl.h"

#endif
