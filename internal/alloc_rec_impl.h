/* Allocation that remembers how much it failed to get; shared by the
 * libraries and the apps, each of which compiles its own copy (everything
 * here is static inline; not installed).
 *
 * An out-of-memory message names what was being allocated and how many
 * bytes; the size is known where malloc() is called and often lost by the
 * time the failure reaches a message (an index insert, a table cell, a
 * tree node several calls down). A source file that includes its
 * library's alloc_rec.h last has its malloc, calloc, realloc,
 * aligned_alloc, strdup and strndup go through these wrappers, which
 * record the request of a call that returns NULL in the library's
 * thread-local variable, named by ALLOC_REC_LAST before this header is
 * included, and otherwise behave exactly like the C library's (a worker
 * thread's failure is recorded on that thread). They are forced inline so
 * that each allocation keeps its own call site (tests/faults counts and
 * names sites by the caller's address). */
#ifndef EDGEFIT_INTERNAL_ALLOC_REC_H
#define EDGEFIT_INTERNAL_ALLOC_REC_H

#if !defined ALLOC_REC_LAST || !defined ALLOC_REC_WHEN
#error "define ALLOC_REC_LAST and ALLOC_REC_WHEN (the library's records)"
#endif

#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* the including library's record: the request of the last allocation this
 * thread failed to get (0: none since the thread started), and when it
 * failed (CLOCK_MONOTONIC, ns). The time lets a message take the newest of
 * the libraries' records: a failure a library did without (a best-effort
 * step) stays recorded, and a larger, older request must not be named for
 * a later failure elsewhere. */
extern _Thread_local size_t ALLOC_REC_LAST;
extern _Thread_local unsigned long long ALLOC_REC_WHEN;

/* The record and the library's two public readers of it
 * (NAME_nomem_bytes(), NAME_nomem_when()), defined once per library: one
 * source file that includes its alloc_rec.h expands
 * ALLOC_REC_DEFINE(API, NAME) at file scope, API being the library's
 * export attribute. */
#define ALLOC_REC_DEFINE(api, name)                                        \
    _Thread_local size_t ALLOC_REC_LAST;                                   \
    _Thread_local unsigned long long ALLOC_REC_WHEN;                       \
    api size_t name##_nomem_bytes(void) { return ALLOC_REC_LAST; }         \
    api unsigned long long name##_nomem_when(void) { return ALLOC_REC_WHEN; }

#define ALLOC_REC_INLINE static inline __attribute__((always_inline, unused))

/* the time a record is stamped with (1 if the clock cannot be read: still
 * "a failure", older than any other) */
static inline __attribute__((unused)) unsigned long long alloc_rec_now(void)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0) {
        return 1;
    }
    return (unsigned long long)ts.tv_sec * 1000000000ull +
           (unsigned long long)ts.tv_nsec + 1;
}

/* a failed request of n bytes, recorded */
static inline __attribute__((unused)) void alloc_rec_note(size_t n)
{
    ALLOC_REC_LAST = n;
    ALLOC_REC_WHEN = alloc_rec_now();
}

ALLOC_REC_INLINE void *alloc_rec_malloc(size_t n)
{
    void *p = malloc(n);
    if (p == NULL) {
        alloc_rec_note(n);
    }
    return p;
}

ALLOC_REC_INLINE void *alloc_rec_calloc(size_t k, size_t n)
{
    void *p = calloc(k, n);
    if (p == NULL) {
        size_t b;
        /* a product too large for size_t is reported as SIZE_MAX */
        alloc_rec_note(__builtin_mul_overflow(k, n, &b) ? (size_t)-1 : b);
    }
    return p;
}

ALLOC_REC_INLINE void *alloc_rec_realloc(void *old, size_t n)
{
    void *p = realloc(old, n);
    if (p == NULL && n != 0) {
        alloc_rec_note(n);
    }
    return p;
}

ALLOC_REC_INLINE char *alloc_rec_strdup(const char *s)
{
    const size_t n = strlen(s) + 1;
    char *p = malloc(n);
    if (p == NULL) {
        alloc_rec_note(n);
        return NULL;
    }
    return memcpy(p, s, n);
}

ALLOC_REC_INLINE char *alloc_rec_strndup(const char *s, size_t max)
{
    const size_t len = strnlen(s, max);
    char *p = malloc(len + 1);
    if (p == NULL) {
        alloc_rec_note(len + 1);
        return NULL;
    }
    memcpy(p, s, len);
    p[len] = '\0';
    return p;
}

ALLOC_REC_INLINE void *alloc_rec_aligned_alloc(size_t align, size_t n)
{
    void *p = aligned_alloc(align, n);
    if (p == NULL) {
        alloc_rec_note(n);
    }
    return p;
}

#define malloc(n) alloc_rec_malloc(n)
#define calloc(k, n) alloc_rec_calloc(k, n)
#define realloc(p, n) alloc_rec_realloc(p, n)
#define strdup(s) alloc_rec_strdup(s)
#define strndup(s, n) alloc_rec_strndup(s, n)
#define aligned_alloc(a, n) alloc_rec_aligned_alloc(a, n)

#endif
