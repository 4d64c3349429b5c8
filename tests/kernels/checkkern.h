/* The kernel checker: every kernel, on every instruction-set level the CPU
 * has, against its C reference. In the manner of dav1d's checkasm, each
 * family's check function builds its dispatch table for the flags it is
 * given, and tests only the function pointers that are new at this level
 * (ck_func), so every implementation is checked exactly once. */
#ifndef EDGEFIT_CHECKKERN_H
#define EDGEFIT_CHECKKERN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A family check: called once per instruction-set level with its flags. */
typedef void (*ck_family_fn)(unsigned flags);

/* True when fn has not been tested yet and the name passes the filter;
 * starts a check named "<name>_<isa>". Between ck_func and ck_report, use
 * ck_fail for every mismatch. */
bool ck_func(const void *fn, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* ck_func for kernels that are only checked together (a packed path and
 * the direct one it must equal, a layout change and its inverse): true
 * when either is new at this level; both count as tested. */
bool ck_func2(const void *fn, const void *with, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Ends the current check (prints OK or FAILED, counts it). */
void ck_report(void);
/* Records a failure of the current check with a message (first few are
 * printed). Returns false so callers can `return ck_fail(...)`. */
bool ck_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Deterministic random numbers (xorshift), reseeded per family. */
uint32_t ck_rand(void);
/* Uniform in [lo, hi). */
float ck_randf(float lo, float hi);
/* An integer in [lo, hi]. */
int ck_randi(int lo, int hi);
void ck_fill_f32(float *p, size_t n, float lo, float hi);
/* Fill with a signalling-looking NaN pattern so unwritten output shows. */
void ck_poison(void *p, size_t bytes);

/* Distance in units in the last place between two floats (0 if both NaN). */
uint32_t ck_ulp_f32(float a, float b);
/* |a - b| <= abs_tol + rel_tol * |b|, NaN equal to NaN, inf to same inf. */
bool ck_close_f32(float a, float b, float abs_tol, float rel_tol);

/* Benchmarks (--bench): true when the current check should be timed. */
bool ck_bench_on(void);
/* Monotonic nanoseconds. */
double ck_now_ns(void);
/* Median of n values (sorts v in place). */
double ck_median(double *v, int n);
/* Prints "name: C x ns, ISA y ns, speedup" for the current check. */
void ck_bench_report(const char *what, double ref_ns, double isa_ns);

/* The name of the current level ("c", "avx2", ...). */
const char *ck_isa(void);

#endif
