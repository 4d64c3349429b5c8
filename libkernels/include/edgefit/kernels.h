/*
 * libkernels: exact and fast compute kernels for small neural networks.
 *
 * Every kernel has a portable C reference; SIMD versions (AVX2+FMA, AVX-512,
 * F16C, VNNI) are chosen once at run time from the CPU's features. The
 * environment variable KERN_CPU_MASK (a number, e.g. 0 or 0x3) clears
 * feature bits so any path, the C one included, can be forced.
 *
 * Buffers belong to the caller. Shapes are row-major. Unless stated
 * otherwise, kernels do not allocate and are safe to call from several
 * threads at once.
 */
#ifndef EDGEFIT_KERNELS_H
#define EDGEFIT_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32) && defined(KERN_BUILDING)
#define KERN_API __declspec(dllexport)
#elif defined(KERN_BUILDING) && defined(__GNUC__)
#define KERN_API __attribute__((visibility("default")))
#else
#define KERN_API
#endif

/* ---- Status codes ------------------------------------------------------ */

enum kern_status {
    KERN_OK = 0,
    KERN_E_INVALID,  /* a NULL pointer or a bad flag */
    KERN_E_SHAPE,    /* dimensions that do not agree */
    KERN_E_OVERFLOW, /* a size that does not fit in size_t */
    KERN_E_NOMEM,    /* an allocation failed */
    KERN_E_RANGE,    /* a value outside its domain (e.g. a zero scale) */
};

/* Static text for a status code; "unknown status" for anything else. */
KERN_API const char *kern_strerror(int status);

/* ---- CPU features ------------------------------------------------------ */

enum kern_cpu_flag {
    KERN_CPU_AVX2 = 1u << 0,       /* AVX2 + FMA3 + F16C */
    KERN_CPU_AVX512 = 1u << 1,     /* AVX-512 F, BW, DQ, VL */
    KERN_CPU_AVX512VNNI = 1u << 2, /* AVX-512 VNNI (u8 x s8 dot products) */
    KERN_CPU_AVX512BF16 = 1u << 3, /* AVX-512 BF16 conversions */
};

/* The features of this CPU that the OS enables, with the bits named in
 * KERN_CPU_MASK cleared. Read once; later calls return the cached value. */
KERN_API unsigned kern_cpu_flags(void);

/* Name of the widest path a set of flags selects: "c", "avx2", "avx512",
 * "avx512vnni"... Static text. */
KERN_API const char *kern_cpu_path_name(unsigned flags);

#ifdef __cplusplus
}
#endif

#endif /* EDGEFIT_KERNELS_H */
