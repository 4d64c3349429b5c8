/* Private: malloc and co. here record the size of a failed request in
 * cli_nomem_last (defined in cli.c, read by cli_nomem_bytes() in cli.h); the
 * wrappers are internal/alloc_rec_impl.h. Include this header last: it
 * redefines malloc and co. */
#ifndef CLI_ALLOC_REC_H
#define CLI_ALLOC_REC_H

#define ALLOC_REC_LAST cli_nomem_last
#define ALLOC_REC_WHEN cli_nomem_time
#include "../../internal/alloc_rec_impl.h"

#endif
