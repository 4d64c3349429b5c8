#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include "dsp.h"
#include "alloc_rec.h" /* last: it wraps malloc and co. */

#if KERN_HAVE_X86
#include <cpuid.h>

static unsigned long long read_xcr0(void)
{
    unsigned eax, edx;
    /* xgetbv with ecx = 0; spelled as bytes so no -mxsave is needed. */
    __asm__ volatile(".byte 0x0f, 0x01, 0xd0" : "=a"(eax), "=d"(edx) : "c"(0));
    return ((unsigned long long)edx << 32) | eax;
}

static unsigned detect(void)
{
    unsigned a, b, c, d;
    unsigned flags = 0;

    if (!__get_cpuid(1, &a, &b, &c, &d)) {
        return 0;
    }
    const int osxsave = (c >> 27) & 1;
    const int fma = (c >> 12) & 1;
    const int f16c = (c >> 29) & 1;
    const int avx = (c >> 28) & 1;
    if (!osxsave || !avx) {
        return 0;
    }
    const unsigned long long xcr0 = read_xcr0();
    const int os_ymm = (xcr0 & 0x6) == 0x6;
    const int os_zmm = (xcr0 & 0xe6) == 0xe6;
    if (!os_ymm || __get_cpuid_max(0, NULL) < 7) {
        return 0;
    }
    __cpuid_count(7, 0, a, b, c, d);
    const int avx2 = (b >> 5) & 1;
    const int avx512f = (b >> 16) & 1;
    const int avx512dq = (b >> 17) & 1;
    const int avx512bw = (b >> 30) & 1;
    const int avx512vl = (b >> 31) & 1;
    const int vnni = (c >> 11) & 1;
    const int vbmi = (c >> 1) & 1;
    unsigned a1 = 0, b1 = 0, c1 = 0, d1 = 0;
    __cpuid_count(7, 1, a1, b1, c1, d1);
    const int bf16 = (a1 >> 5) & 1;

    if (avx2 && fma && f16c) {
        flags |= KERN_CPU_AVX2;
        if (os_zmm && avx512f && avx512dq && avx512bw && avx512vl) {
            flags |= KERN_CPU_AVX512;
            if (vnni) {
                flags |= KERN_CPU_AVX512VNNI;
            }
            if (bf16) {
                flags |= KERN_CPU_AVX512BF16;
            }
            if (vbmi) {
                flags |= KERN_CPU_AVX512VBMI;
            }
        }
    }
    return flags;
}
#elif KERN_HAVE_ARM
#include <sys/auxv.h>

/* The HWCAP bits of Linux's uapi asm/hwcap.h, spelled here so an older
 * libc's headers do not decide what can be detected. */
#if defined(__aarch64__)
enum {
    ARM_HWCAP_ASIMD = 1ul << 1,
    ARM_HWCAP_ASIMDHP = 1ul << 10,
    ARM_HWCAP_ASIMDDP = 1ul << 20,
    ARM_HWCAP2_I8MM = 1ul << 13,
    ARM_HWCAP2_BF16 = 1ul << 14,
};
#else
enum { ARM_HWCAP_NEON = 1ul << 12, ARM_HWCAP_VFPv4 = 1ul << 16 };
#endif

static unsigned detect(void)
{
    const unsigned long hw = getauxval(AT_HWCAP);
    unsigned flags = 0;
#if defined(__aarch64__)
    const unsigned long hw2 = getauxval(AT_HWCAP2);
    if (!(hw & ARM_HWCAP_ASIMD)) {
        return 0;
    }
    flags |= KERN_CPU_NEON;
    if (hw & ARM_HWCAP_ASIMDHP) {
        flags |= KERN_CPU_ARM_FP16;
    }
    if (hw & ARM_HWCAP_ASIMDDP) {
        flags |= KERN_CPU_ARM_DOTPROD;
    }
    if (hw2 & ARM_HWCAP2_I8MM) {
        flags |= KERN_CPU_ARM_I8MM;
    }
    if (hw2 & ARM_HWCAP2_BF16) {
        flags |= KERN_CPU_ARM_BF16;
    }
#else
    /* 32-bit ARM: NEON is optional (a Pi's Cortex-A has it, some cores
     * do not); the NEON paths run only where the kernel says it is
     * there, with VFPv4 (fused multiply-add, half conversion), which the
     * paths are built for: a Cortex-A8 or A9 has NEON without it. The dot
     * product is not looked for: no 32-bit path uses it. */
    if ((hw & ARM_HWCAP_NEON) && (hw & ARM_HWCAP_VFPv4)) {
        flags |= KERN_CPU_NEON;
    }
#endif
    return flags;
}
#else
static unsigned detect(void)
{
    return 0;
}
#endif

static unsigned raw_flags;
static unsigned masked_flags;
static pthread_once_t flags_once = PTHREAD_ONCE_INIT;

static void init_flags(void)
{
    raw_flags = detect();
    masked_flags = raw_flags;
    const char *env = getenv("KERN_CPU_MASK");
    if (env && *env) {
        char *end = NULL;
        errno = 0;
        unsigned long keep = strtoul(env, &end, 0);
        /* A malformed mask is ignored rather than silently forcing C. */
        if (errno == 0 && end && *end == '\0') {
            masked_flags = raw_flags & (unsigned)keep;
        }
    }
#if !KERN_SIMD
    /* A build without the vector paths (-Dsimd=disabled) selects the C
     * path whatever the CPU has: the flags say what runs, so that the
     * apps report "c" and a cached host calibration of a vector build is
     * not taken for this one (its cache key holds the flags). */
    masked_flags = 0;
#endif
#if KERN_HAVE_X86
    /* Higher rungs build on lower ones: no AVX-512 without AVX2. */
    if (!(masked_flags & KERN_CPU_AVX2)) {
        masked_flags = 0;
    }
    if (!(masked_flags & KERN_CPU_AVX512)) {
        masked_flags &= KERN_CPU_AVX2;
    }
#elif KERN_HAVE_ARM
    /* Every ARM extension is an extension of NEON's registers. */
    if (!(masked_flags & KERN_CPU_NEON)) {
        masked_flags = 0;
    }
#endif
}

unsigned kern_cpu_flags_raw(void)
{
    pthread_once(&flags_once, init_flags);
    return raw_flags;
}

KERN_API unsigned kern_cpu_flags(void)
{
    pthread_once(&flags_once, init_flags);
    return masked_flags;
}

KERN_API const char *kern_built_paths(void)
{
#if KERN_SIMD && KERN_HAVE_X86
    return "c avx2 avx512 avx512vnni avx512bf16";
#elif KERN_SIMD && KERN_HAVE_NEON_DOTPROD
    return "c neon neon-dotprod";
#elif KERN_SIMD && KERN_HAVE_NEON
    return "c neon";
#else
    return "c";
#endif
}

KERN_API const char *kern_cpu_path_name(unsigned flags)
{
    if (flags & KERN_CPU_AVX512VNNI) {
        return "avx512vnni";
    }
    if (flags & KERN_CPU_AVX512) {
        return "avx512";
    }
    if (flags & KERN_CPU_AVX2) {
        return "avx2";
    }
    /* The ARM rungs that have paths of their own; FP16, I8MM and BF16 are
     * detected (and shown by the flags) but select no path yet. */
    if ((flags & KERN_CPU_NEON) && (flags & KERN_CPU_ARM_DOTPROD)) {
        return "neon-dotprod";
    }
    if (flags & KERN_CPU_NEON) {
        return "neon";
    }
    return "c";
}

KERN_API const char *kern_strerror(int status)
{
    switch (status) {
    case KERN_OK:
        return "success";
    case KERN_E_INVALID:
        return "invalid argument";
    case KERN_E_SHAPE:
        return "shapes do not agree";
    case KERN_E_OVERFLOW:
        return "size overflows";
    case KERN_E_NOMEM:
        return "out of memory";
    case KERN_E_RANGE:
        return "value out of range";
    default:
        return "unknown status";
    }
}

/* alloc_rec.h's record of the last failed request on this thread */
ALLOC_REC_DEFINE(KERN_API, kern)
