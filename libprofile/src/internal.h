/* Private to libprofile: the per-ISA FMA loops of the calibration and
 * small helpers shared between files. */
#ifndef EDGEFIT_PROFILE_INTERNAL_H
#define EDGEFIT_PROFILE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

/* The path of an IDX file of a data set: dir/<split>-<kind>.gz, or the
 * same without .gz when only the plain file exists (kind e.g.
 * "images-idx3-ubyte"). Nonzero when buf is too small. */
int prof_idx_path(char *buf, size_t len, const char *dir, const char *split,
                  const char *kind);

#if defined(__x86_64__) || defined(_M_X64)
#define PROF_HAVE_X86 1
#else
#define PROF_HAVE_X86 0
#endif

/* Each runs iters iterations of independent FMA chains and returns the
 * number of multiply-accumulates done; *sink receives a value that depends
 * on every chain so that no compiler drops the work. */
uint64_t prof_fma_loop_c(uint64_t iters, float *sink);
#if PROF_SIMD
uint64_t prof_fma_loop_avx2(uint64_t iters, float *sink);
uint64_t prof_fma_loop_avx512(uint64_t iters, float *sink);
#endif

/* SplitMix64 (Steele, Lea and Flood): the one generator of libprofile,
 * behind the executor's seeded weights, the trainer's shuffles and the
 * stream profile's synthetic data: state += 0x9E3779B97F4A7C15, then the
 * xor-shift-multiply finaliser. Its adds and multiplies wrap by design;
 * clang's unsigned-integer-overflow check (scripts/ci-faults.sh) is told
 * so here. */
#if defined(__clang__)
__attribute__((no_sanitize("unsigned-integer-overflow")))
#endif
static inline uint64_t prof_splitmix64(uint64_t *state)
{
    uint64_t z = (*state += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

/* libmemest's status as libprofile's: no memory stays no memory (never
 * "libmemest failed", which the apps tell as bad input), an overflow an
 * overflow, anything else PROF_E_MEMEST. Values as in memest.h and
 * profile.h; the caller includes both. */
#define prof_of_memest(mst)                                                 \
    ((mst) == MEMEST_E_NOMEM      ? PROF_E_NOMEM                            \
     : (mst) == MEMEST_E_OVERFLOW ? PROF_E_OVERFLOW                         \
                                  : PROF_E_MEMEST)

#endif
