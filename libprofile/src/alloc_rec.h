/* Private: allocation that remembers how much it failed to get.
 *
 * An out-of-memory message names what was being allocated and how many
 * bytes (prof_nomem_bytes() in the public header); the size is known where
 * malloc() is called and often lost by the time the failure reaches a
 * message (an index insert, a table cell, a tree node several calls
 * down). A source file that includes this header last has its malloc,
 * calloc, realloc, aligned_alloc, strdup and strndup go through these
 * wrappers, which record the request of a call that returns NULL in a
 * thread-local variable and otherwise behave exactly like the C
 * library's (a worker thread's failure is recorded on that thread).
 * They are forced inline so that each allocation keeps its own call site
 * (tests/faults counts and names sites by the caller's address). */
#ifndef PROF_ALLOC_REC_H
#define PROF_ALLOC_REC_H

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* status.c: the request of the last allocation this thread failed to get
 * (0: none since the thread started) */
extern _Thread_local size_t prof_nomem_last;

#define PROF_REC_INLINE static inline __attribute__((always_inline, unused))

PROF_REC_INLINE void *prof_rec_malloc(size_t n)
{
    void *p = malloc(n);
    if (p == NULL) {
        prof_nomem_last = n;
    }
    return p;
}

PROF_REC_INLINE void *prof_rec_calloc(size_t k, size_t n)
{
    void *p = calloc(k, n);
    if (p == NULL) {
        size_t b;
        /* a product too large for size_t is reported as SIZE_MAX */
        prof_nomem_last = __builtin_mul_overflow(k, n, &b) ? (size_t)-1 : b;
    }
    return p;
}

PROF_REC_INLINE void *prof_rec_realloc(void *old, size_t n)
{
    void *p = realloc(old, n);
    if (p == NULL && n != 0) {
        prof_nomem_last = n;
    }
    return p;
}

PROF_REC_INLINE char *prof_rec_strdup(const char *s)
{
    const size_t n = strlen(s) + 1;
    char *p = malloc(n);
    if (p == NULL) {
        prof_nomem_last = n;
        return NULL;
    }
    return memcpy(p, s, n);
}

PROF_REC_INLINE char *prof_rec_strndup(const char *s, size_t max)
{
    const size_t len = strnlen(s, max);
    char *p = malloc(len + 1);
    if (p == NULL) {
        prof_nomem_last = len + 1;
        return NULL;
    }
    memcpy(p, s, len);
    p[len] = '\0';
    return p;
}

PROF_REC_INLINE void *prof_rec_aligned_alloc(size_t align, size_t n)
{
    void *p = aligned_alloc(align, n);
    if (p == NULL) {
        prof_nomem_last = n;
    }
    return p;
}

#define malloc(n) prof_rec_malloc(n)
#define calloc(k, n) prof_rec_calloc(k, n)
#define realloc(p, n) prof_rec_realloc(p, n)
#define strdup(s) prof_rec_strdup(s)
#define strndup(s, n) prof_rec_strndup(s, n)
#define aligned_alloc(a, n) prof_rec_aligned_alloc(a, n)

#endif
