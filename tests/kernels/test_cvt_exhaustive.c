/* Every one of the 2^32 float bit patterns through float -> fp16 and
 * float -> bf16 on every path this CPU has, against a reference written
 * here that works in double arithmetic: within one binade the encoding is
 * (binade base) + round-to-nearest-even(|x| * 2^k) (carries into the next
 * exponent and up to infinity fall out of the sum), and rounding to an
 * integer is done by adding and subtracting 2^52 in double, which the FPU
 * rounds to nearest even. The library's C path instead shifts and adds
 * rounding bias on the integer bits.
 *
 * Blocks of 64 Ki floats, two threads (the upper and lower halves of the
 * bit space). Prints the first mismatches and a summary; exit status 0
 * when all agree. */
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cvt.h"
#include "edgefit/kernels.h"

enum { BLOCK = 1 << 16, NPATHS = 5, NTHREADS = 2 };

static struct kern_cvt_dsp tables[NPATHS];
static const char *names[NPATHS] = {"c", "avx2", "avx512", "avx512bf16",
                                     "neon"};
static int have[NPATHS];

static double rne(double v) /* 0 <= v < 2^52 */
{
    return (v + 4503599627370496.0) - 4503599627370496.0;
}

/* Per float biased exponent: the scale that makes |x| an integer count of
 * the target's units, and the encoding of the binade's base. */
static double scale16[256], scaleb[256];
static unsigned base16[256], baseb[256];
static bool inf16[256];

static void init_ref(void)
{
    for (int be = 0; be < 255; be++) {
        const int e = be == 0 ? -126 : be - 127; /* exponent of the binade */
        if (e < -14) { /* half subnormals: units of 2^-24 */
            scale16[be] = ldexp(1.0, 24);
            base16[be] = 0;
        } else { /* q in [1024, 2048]: 11 significant bits */
            scale16[be] = ldexp(1.0, 10 - e);
            base16[be] = (unsigned)(e + 14) << 10;
        }
        inf16[be] = e > 15;
        if (be == 0) { /* float subnormals: bf16 units of 2^-133 */
            scaleb[be] = ldexp(1.0, 133);
            baseb[be] = 0;
        } else { /* q in [128, 256]: 8 significant bits */
            scaleb[be] = ldexp(1.0, 7 - e);
            baseb[be] = (unsigned)(e + 126) << 7;
        }
    }
}

static uint16_t ref_f16(float f, uint32_t u)
{
    const uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    const unsigned be = (u >> 23) & 0xffu;
    if (be == 0xff) {
        if (u & 0x7fffffu) {
            return (uint16_t)(sign | 0x7e00u | ((u >> 13) & 0x3ffu));
        }
        return (uint16_t)(sign | 0x7c00u);
    }
    if (inf16[be]) {
        return (uint16_t)(sign | 0x7c00u);
    }
    unsigned h = base16[be] + (unsigned)rne(fabs((double)f) * scale16[be]);
    if (h > 0x7c00u) {
        h = 0x7c00u;
    }
    return (uint16_t)(sign | h);
}

static uint16_t ref_bf16(float f, uint32_t u)
{
    const uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    const unsigned be = (u >> 23) & 0xffu;
    if (be == 0xff) {
        if (u & 0x7fffffu) {
            return (uint16_t)((u >> 16) | 0x0040u);
        }
        return (uint16_t)(sign | 0x7f80u);
    }
    return (uint16_t)(sign | (baseb[be] + (unsigned)rne(fabs((double)f) *
                                                        scaleb[be])));
}

struct job {
    uint64_t first, last; /* [first, last) in bit space */
    uint64_t mismatches[NPATHS][2];
};

static void *run(void *arg)
{
    struct job *job = arg;
    float *x = malloc(BLOCK * sizeof *x);
    uint16_t *want16 = malloc(BLOCK * sizeof *want16);
    uint16_t *wantb = malloc(BLOCK * sizeof *wantb);
    uint16_t *got = malloc(BLOCK * sizeof *got);
    if (!x || !want16 || !wantb || !got) {
        fprintf(stderr, "test_cvt_exhaustive: out of memory\n");
        job->mismatches[0][0] = UINT64_MAX;
        goto done;
    }
    for (uint64_t b = job->first; b < job->last; b += BLOCK) {
        for (uint32_t i = 0; i < BLOCK; i++) {
            const uint32_t u = (uint32_t)(b + i);
            memcpy(&x[i], &u, 4);
            want16[i] = ref_f16(x[i], u);
            wantb[i] = ref_bf16(x[i], u);
        }
        for (int p = 0; p < NPATHS; p++) {
            if (!have[p]) {
                continue;
            }
            for (int fmt = 0; fmt < 2; fmt++) {
                const uint16_t *want = fmt ? wantb : want16;
                (fmt ? tables[p].f32_to_bf16 : tables[p].f32_to_f16)(
                    got, x, BLOCK);
                if (memcmp(got, want, BLOCK * sizeof *got) == 0) {
                    continue;
                }
                for (uint32_t i = 0; i < BLOCK; i++) {
                    if (got[i] != want[i] &&
                        job->mismatches[p][fmt]++ < 5) {
                        fprintf(stderr,
                                "%s %s: %#010" PRIx64 " -> %#06x, want "
                                "%#06x\n", names[p], fmt ? "bf16" : "f16",
                                b + i, got[i], want[i]);
                    }
                }
            }
        }
    }
done:
    free(x);
    free(want16);
    free(wantb);
    free(got);
    return NULL;
}

int main(void)
{
    static const unsigned flags[NPATHS] = {
        0, KERN_CPU_AVX2, KERN_CPU_AVX2 | KERN_CPU_AVX512,
        KERN_CPU_AVX2 | KERN_CPU_AVX512 | KERN_CPU_AVX512BF16, KERN_CPU_NEON};
    const unsigned host = kern_cpu_flags();
    init_ref();
    for (int p = 0; p < NPATHS; p++) {
        have[p] = (flags[p] & host) == flags[p];
        kern_cvt_dsp_init(&tables[p], flags[p]);
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    static struct job jobs[NTHREADS];
    pthread_t th[NTHREADS];
    const uint64_t total = (uint64_t)1 << 32;
    int started = 0;
    for (int t = 0; t < NTHREADS; t++) {
        jobs[t].first = total / NTHREADS * (uint64_t)t;
        jobs[t].last = total / NTHREADS * (uint64_t)(t + 1);
        if (pthread_create(&th[t], NULL, run, &jobs[t]) != 0) {
            run(&jobs[t]); /* no thread: do it here */
        } else {
            started |= 1 << t;
        }
    }
    for (int t = 0; t < NTHREADS; t++) {
        if (started & (1 << t)) {
            pthread_join(th[t], NULL);
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    uint64_t bad = 0;
    for (int p = 0; p < NPATHS; p++) {
        if (!have[p]) {
            printf("%-10s not on this CPU\n", names[p]);
            continue;
        }
        uint64_t m16 = 0, mb = 0;
        for (int t = 0; t < NTHREADS; t++) {
            m16 += jobs[t].mismatches[p][0];
            mb += jobs[t].mismatches[p][1];
        }
        printf("%-10s f32->f16: %" PRIu64 " mismatches, f32->bf16: %" PRIu64
               " mismatches (of 2^32 each)\n", names[p], m16, mb);
        bad += m16 + mb;
    }
    printf("%.1f s\n", (double)(t1.tv_sec - t0.tv_sec) +
                           1e-9 * (double)(t1.tv_nsec - t0.tv_nsec));
    return bad ? 1 : 0;
}
