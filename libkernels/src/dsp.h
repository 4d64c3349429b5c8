/* Private: CPU feature detection and run-time dispatch shared by every
 * kernel family. Each family keeps its own table of function pointers
 * (struct kern_<family>_dsp in src/<family>.h) with an init function
 * `kern_<family>_dsp_init(dsp, flags)` that the checker calls once per
 * instruction-set level; public wrappers use the table built from
 * kern_cpu_flags() exactly once. */
#ifndef EDGEFIT_KERNELS_DSP_H
#define EDGEFIT_KERNELS_DSP_H

#include <pthread.h>

#include "edgefit/kernels.h"

#if defined(__x86_64__) || defined(_M_X64)
#define KERN_HAVE_X86 1
#else
#define KERN_HAVE_X86 0
#endif

/* AArch64 and 32-bit ARM have NEON paths (part of the base architecture
 * on AArch64, detected at run time on 32-bit ARM, whose build has them
 * when KERN_SIMD says so); the dot-product path is AArch64's only. */
#if defined(__aarch64__)
#define KERN_HAVE_ARM 1
#define KERN_HAVE_NEON 1
#define KERN_HAVE_NEON_DOTPROD 1
#elif defined(__arm__)
#define KERN_HAVE_ARM 1
#define KERN_HAVE_NEON 1
#define KERN_HAVE_NEON_DOTPROD 0
#else
#define KERN_HAVE_ARM 0
#define KERN_HAVE_NEON 0
#define KERN_HAVE_NEON_DOTPROD 0
#endif

/* Flags of the CPU before KERN_CPU_MASK is applied. */
unsigned kern_cpu_flags_raw(void);

/* Build a table once, on first use, from kern_cpu_flags(). Usage:
 *
 *     static struct kern_gelu_dsp dsp;
 *     static pthread_once_t once = PTHREAD_ONCE_INIT;
 *     static void init_dsp(void) { kern_gelu_dsp_init(&dsp, kern_cpu_flags()); }
 *     ...
 *     pthread_once(&once, init_dsp);
 */

#endif
