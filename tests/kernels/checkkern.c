#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "act.h"
#include "checkkern.h"
#include "conv.h"
#include "cvt.h"
#include "dsp.h"
#include "dwconv.h"
#include "elem.h"
#include "layout.h"
#include "matmul.h"
#include "nn.h"
#include "norm.h"
#include "q8.h"
#include "q8s.h"

/* The family checks; each lives in its own check_<family>.c. */
#define CK_FAMILIES(X) \
    X(cpu) \
    X(act) \
    X(elem) \
    X(cvt) \
    X(nn) \
    X(dwconv) \
    X(conv) \
    X(layout) \
    X(im2col_s8) \
    X(q8) \
    X(q8s) \
    X(matmul) \
    X(spatial) \
    X(norm)

#define CK_DECLARE(f) void check_##f(unsigned flags);
CK_FAMILIES(CK_DECLARE)

static const struct {
    const char *name;
    ck_family_fn fn;
} families[] = {
#define CK_ENTRY(f) {#f, check_##f},
    CK_FAMILIES(CK_ENTRY)
};

static const struct {
    const char *name;
    unsigned flags;
} levels[] = {
    {"c", 0},
    {"avx2", KERN_CPU_AVX2},
    {"avx512", KERN_CPU_AVX2 | KERN_CPU_AVX512},
    {"avx512vnni", KERN_CPU_AVX2 | KERN_CPU_AVX512 | KERN_CPU_AVX512VNNI},
    {"avx512bf16", KERN_CPU_AVX2 | KERN_CPU_AVX512 | KERN_CPU_AVX512VNNI |
                       KERN_CPU_AVX512BF16},
    {"avx512vbmi", KERN_CPU_AVX2 | KERN_CPU_AVX512 | KERN_CPU_AVX512VNNI |
                       KERN_CPU_AVX512BF16 | KERN_CPU_AVX512VBMI},
    {"neon", KERN_CPU_NEON},
    {"neon-dotprod", KERN_CPU_NEON | KERN_CPU_ARM_DOTPROD},
};

enum { MAX_TESTED = 4096, MAX_PRINTED_FAILS = 5 };

static struct {
    const void *tested[MAX_TESTED];
    int ntested;
    const char *isa;
    const char *filter;
    bool bench;
    bool in_check;
    char name[128];
    int fails_here;
    int checks, failed;
    uint32_t rng;
} ck;

uint32_t ck_rand(void)
{
    uint32_t x = ck.rng;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    ck.rng = x;
    return x;
}

float ck_randf(float lo, float hi)
{
    return lo + (hi - lo) * (float)((ck_rand() >> 8) * (1.0 / 16777216.0));
}

int ck_randi(int lo, int hi)
{
    /* in 64 bits: the span of [INT32_MIN + 1, INT32_MAX] overflows int */
    const uint64_t span = (uint64_t)((int64_t)hi - lo + 1);
    return (int)((int64_t)lo + (int64_t)(ck_rand() % span));
}

void ck_fill_f32(float *p, size_t n, float lo, float hi)
{
    for (size_t i = 0; i < n; i++) {
        p[i] = ck_randf(lo, hi);
    }
}

void ck_poison(void *p, size_t bytes)
{
    memset(p, 0x7f, bytes); /* 0x7f7f7f7f is a large finite float */
    unsigned char *c = p;
    for (size_t i = 0; i + 4 <= bytes; i += 4) {
        const uint32_t nan = 0x7fa5a5a5u;
        memcpy(c + i, &nan, 4);
    }
}

uint32_t ck_ulp_f32(float a, float b)
{
    if (isnan(a) && isnan(b)) {
        return 0;
    }
    if (isnan(a) || isnan(b)) {
        return UINT32_MAX;
    }
    int32_t ia, ib;
    memcpy(&ia, &a, 4);
    memcpy(&ib, &b, 4);
    /* Map sign-magnitude to a monotonic integer line. */
    int64_t la = ia < 0 ? (int64_t)INT32_MIN - ia : ia;
    int64_t lb = ib < 0 ? (int64_t)INT32_MIN - ib : ib;
    int64_t d = la > lb ? la - lb : lb - la;
    return d > UINT32_MAX ? UINT32_MAX : (uint32_t)d;
}

bool ck_close_f32(float a, float b, float abs_tol, float rel_tol)
{
    if (isnan(a) || isnan(b)) {
        return isnan(a) && isnan(b);
    }
    if (isinf(a) || isinf(b)) {
        return a == b;
    }
    return fabsf(a - b) <= abs_tol + rel_tol * fabsf(b);
}

static bool ck_was_tested(const void *fn)
{
    for (int i = 0; i < ck.ntested; i++) {
        if (ck.tested[i] == fn) {
            return true;
        }
    }
    return false;
}

static void ck_mark(const void *fn)
{
    if (fn && !ck_was_tested(fn) && ck.ntested < MAX_TESTED) {
        ck.tested[ck.ntested++] = fn;
    }
}

__attribute__((format(printf, 3, 0))) static bool
ck_start(const void *fn, const void *with, const char *fmt, va_list ap)
{
    if (!fn || (ck_was_tested(fn) && (!with || ck_was_tested(with)))) {
        return false;
    }
    char base[96];
    vsnprintf(base, sizeof base, fmt, ap);
    if (ck.filter && !strstr(base, ck.filter)) {
        return false;
    }
    ck_mark(fn);
    ck_mark(with);
    snprintf(ck.name, sizeof ck.name, "%s_%s", base, ck.isa);
    ck.in_check = true;
    ck.fails_here = 0;
    return true;
}

bool ck_func(const void *fn, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    const bool go = ck_start(fn, NULL, fmt, ap);
    va_end(ap);
    return go;
}

bool ck_func2(const void *fn, const void *with, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    const bool go = ck_start(fn, with, fmt, ap);
    va_end(ap);
    return go;
}

bool ck_fail(const char *fmt, ...)
{
    if (ck.fails_here++ < MAX_PRINTED_FAILS) {
        va_list ap;
        va_start(ap, fmt);
        fprintf(stderr, "  %s: ", ck.name);
        vfprintf(stderr, fmt, ap);
        fputc('\n', stderr);
        va_end(ap);
    }
    return false;
}

void ck_report(void)
{
    if (!ck.in_check) {
        return;
    }
    ck.checks++;
    if (ck.fails_here) {
        ck.failed++;
        printf("  %-40s FAILED (%d mismatches)\n", ck.name, ck.fails_here);
    } else {
        printf("  %-40s OK\n", ck.name);
    }
    fflush(stdout);
    ck.in_check = false;
}

bool ck_bench_on(void)
{
    return ck.bench;
}

double ck_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double ck_median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

void ck_bench_report(const char *what, double ref_ns, double isa_ns)
{
    printf("    bench %-34s c %12.1f ns  %-10s %12.1f ns  x%.2f\n", what,
           ref_ns, ck.isa, isa_ns, isa_ns > 0 ? ref_ns / isa_ns : 0.0);
}

const char *ck_isa(void)
{
    return ck.isa;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: checkkern [--bench] [--test NAME] [--seed N]\n"
               "  Checks every kernel on every instruction-set level of this\n"
               "  CPU against its C reference. --test keeps the checks whose\n"
               "  name contains NAME; --bench also times each against C.\n");
}

/* The cpu family checks the dispatch plumbing itself. */
void check_cpu(unsigned flags)
{
    if (ck_func((const void *)kern_cpu_path_name, "cpu_path_name")) {
        const char *want = ck_isa();
        const char *got = kern_cpu_path_name(flags);
        if (strcmp(want, "avx512bf16") != 0 && strcmp(got, want) != 0) {
            ck_fail("flags %#x named %s, want %s", flags, got, want);
        }
        ck_report();
    }
}

/* Every family's table, for the coverage check: a function a table can
 * hold that no check reached is a path shipped untested. */
#define CK_TABLES(X) \
    X(act) \
    X(conv) \
    X(cvt) \
    X(dwconv) \
    X(elem) \
    X(layout) \
    X(matmul) \
    X(nn) \
    X(norm) \
    X(q8) \
    X(q8s)

typedef void (*ck_any_fn)(void);

/* The tables hold nothing but function pointers (checked below), all of
 * one representation on the platforms the library builds for, so a table
 * is read as an array of them. Returns how many entries no check took. */
static int ck_untested(const void *table, size_t size, const char *family,
                       const char *isa)
{
    int missed = 0;
    for (size_t i = 0; i < size / sizeof(ck_any_fn); i++) {
        ck_any_fn fn;
        memcpy(&fn, (const char *)table + i * sizeof fn, sizeof fn);
        if (fn && !ck_was_tested((const void *)fn)) {
            printf("  %s table entry %zu at %s: no check ran it\n", family,
                   i, isa);
            missed++;
        }
    }
    return missed;
}

#define CK_COVER(f)                                                        \
    _Static_assert(sizeof(struct kern_##f##_dsp) % sizeof(ck_any_fn) == 0,  \
                   #f "'s table holds function pointers only");             \
    {                                                                       \
        struct kern_##f##_dsp t;                                            \
        memset(&t, 0, sizeof t);                                            \
        kern_##f##_dsp_init(&t, flags);                                     \
        missed += ck_untested(&t, sizeof t, #f, isa);                       \
    }

static int ck_coverage(unsigned flags, const char *isa)
{
    int missed = 0;
    CK_TABLES(CK_COVER)
    return missed;
}

int main(int argc, char **argv)
{
    uint32_t seed = 0x9e3779b9u;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--bench")) {
            ck.bench = true;
        } else if (!strcmp(argv[i], "--test") && i + 1 < argc) {
            ck.filter = argv[++i];
        } else if (!strcmp(argv[i], "--seed") && i + 1 < argc) {
            seed = (uint32_t)strtoul(argv[++i], NULL, 0);
        } else if (!strcmp(argv[i], "--help")) {
            usage(stdout);
            return 0;
        } else {
            fprintf(stderr, "checkkern: unknown argument '%s'\n", argv[i]);
            usage(stderr);
            return 2;
        }
    }
    if (!seed) {
        seed = 1;
    }
    const unsigned host = kern_cpu_flags();
    printf("checkkern: seed %" PRIu32 ", cpu flags %#x (%s)\n", seed, host,
           kern_cpu_path_name(host));
    for (size_t l = 0; l < sizeof levels / sizeof levels[0]; l++) {
        if ((levels[l].flags & host) != levels[l].flags) {
            continue;
        }
        ck.isa = levels[l].name;
        printf("%s:\n", ck.isa);
        for (size_t f = 0; f < sizeof families / sizeof families[0]; f++) {
            ck.rng = seed ^ (uint32_t)(f * 0x85ebca6bu);
            if (!ck.rng) {
                ck.rng = 1;
            }
            families[f].fn(levels[l].flags);
            ck_report();
        }
    }
    /* Only a whole run can tell: --test leaves the others out. */
    if (!ck.filter) {
        int missed = 0;
        for (size_t l = 0; l < sizeof levels / sizeof levels[0]; l++) {
            if ((levels[l].flags & host) == levels[l].flags) {
                missed += ck_coverage(levels[l].flags, levels[l].name);
            }
        }
        printf("checkkern: every table entry of every level checked: %s\n",
               missed ? "no" : "yes");
        if (missed) {
            ck.failed++;
        }
    }
    printf("checkkern: %d checks, %d failed (seed %" PRIu32 ")\n", ck.checks,
           ck.failed, seed);
    return ck.failed ? 1 : 0;
}
