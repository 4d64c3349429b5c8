/* Checker for the fp16/bf16 conversions: every path bit-identical to the
 * C reference (conversions are exact or correctly rounded, so the
 * tolerance is zero). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checkkern.h"
#include "cvt.h"

enum { MAX_N = 4133, GUARD = 21, BENCH_N = 1 << 22, BENCH_REPS = 11 };

/* Random float bit patterns with every class represented: uniform bits,
 * values near the fp16 range limits, and patterns whose dropped bits sit
 * exactly at a rounding tie. */
static void fill_bits(float *x, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        uint32_t u = ck_rand();
        switch (ck_randi(0, 6)) {
        case 0: /* near the fp16 subnormal/normal and overflow edges */
            u = (u & 0x80000000u) | (u & 0x3fffu) |
                (ck_randi(0, 1) ? 0x33000000u : 0x477fe000u);
            break;
        case 1: /* fp16 tie: the 13 dropped bits are 1000000000000 */
            u = (u & 0xffffe000u) | 0x1000u;
            break;
        case 2: /* bf16 tie */
            u = (u & 0xffff0000u) | 0x8000u;
            break;
        case 3: /* NaN or inf with a random payload */
            u = (u & 0x807fffffu) | 0x7f800000u;
            break;
        case 4: /* float subnormal */
            u &= 0x807fffffu;
            break;
        default:
            break;
        }
        memcpy(&x[i], &u, 4);
    }
}

static void check_narrow(kern_cvt_narrow_fn ref, kern_cvt_narrow_fn fn,
                         const char *name)
{
    if (!ck_func((const void *)fn, "%s", name)) {
        return;
    }
    static float x[MAX_N];
    static uint16_t want[MAX_N], got[MAX_N + GUARD];
    for (int iter = 0; iter < 200; iter++) {
        const size_t n = iter < 70 ? (size_t)iter : (size_t)ck_randi(1, MAX_N);
        fill_bits(x, n);
        ref(want, x, n);
        ck_poison(got, sizeof got);
        fn(got, x, n);
        for (size_t i = 0; i < n; i++) {
            if (got[i] != want[i]) {
                uint32_t u;
                memcpy(&u, &x[i], 4);
                ck_fail("n %zu x[%zu] = %#010x: got %#06x, want %#06x", n, i,
                        u, got[i], want[i]);
                break;
            }
        }
        /* The poison pattern is 4 bytes long: compare in phase. */
        static uint16_t poison[MAX_N + GUARD];
        ck_poison(poison, sizeof poison);
        if (memcmp(got + n, poison + n, GUARD * sizeof *got) != 0) {
            ck_fail("n %zu: wrote past the end", n);
        }
    }
    if (ck_bench_on()) {
        float *bx = malloc(BENCH_N * sizeof *bx);
        uint16_t *by = malloc(BENCH_N * sizeof *by);
        if (bx && by) {
            ck_fill_f32(bx, BENCH_N, -1000.0f, 1000.0f);
            double tr[BENCH_REPS], tf[BENCH_REPS];
            for (int r = 0; r < BENCH_REPS; r++) {
                double t0 = ck_now_ns();
                ref(by, bx, BENCH_N);
                double t1 = ck_now_ns();
                fn(by, bx, BENCH_N);
                double t2 = ck_now_ns();
                tr[r] = t1 - t0;
                tf[r] = t2 - t1;
            }
            ck_bench_report(name, ck_median(tr, BENCH_REPS),
                            ck_median(tf, BENCH_REPS));
        }
        free(bx);
        free(by);
    }
    ck_report();
}

static void check_widen(kern_cvt_widen_fn ref, kern_cvt_widen_fn fn,
                        const char *name)
{
    if (!ck_func((const void *)fn, "%s", name)) {
        return;
    }
    /* Every 16-bit pattern, in one call and in odd-sized pieces. */
    enum { ALL = 1 << 16 };
    uint16_t *h = malloc(ALL * sizeof *h);
    float *want = malloc(ALL * sizeof *want);
    float *got = malloc((ALL + GUARD) * sizeof *got);
    if (!h || !want || !got) {
        ck_fail("out of memory");
        goto done;
    }
    for (size_t i = 0; i < ALL; i++) {
        h[i] = (uint16_t)i;
    }
    ref(want, h, ALL);
    for (int pass = 0; pass < 2; pass++) {
        ck_poison(got, (ALL + GUARD) * sizeof *got);
        if (pass == 0) {
            fn(got, h, ALL);
        } else {
            for (size_t i = 0; i < ALL;) {
                size_t len = (size_t)ck_randi(0, 77);
                if (len > ALL - i) {
                    len = ALL - i;
                }
                fn(got + i, h + i, len);
                i += len;
            }
        }
        if (memcmp(got, want, ALL * sizeof *got) != 0) {
            for (size_t i = 0; i < ALL; i++) {
                if (memcmp(&got[i], &want[i], 4) != 0) {
                    uint32_t a, b;
                    memcpy(&a, &got[i], 4);
                    memcpy(&b, &want[i], 4);
                    ck_fail("pass %d h %#06zx: got %#010x, want %#010x", pass,
                            i, a, b);
                    break;
                }
            }
        }
        float poison[GUARD];
        ck_poison(poison, sizeof poison);
        if (memcmp(got + ALL, poison, sizeof poison) != 0) {
            ck_fail("pass %d: wrote past the end", pass);
        }
    }
    if (ck_bench_on()) {
        uint16_t *bh = malloc(BENCH_N * sizeof *bh);
        float *by = malloc(BENCH_N * sizeof *by);
        if (bh && by) {
            for (size_t i = 0; i < BENCH_N; i++) {
                bh[i] = (uint16_t)(ck_rand() & 0x7bffu);
            }
            double tr[BENCH_REPS], tf[BENCH_REPS];
            for (int r = 0; r < BENCH_REPS; r++) {
                double t0 = ck_now_ns();
                ref(by, bh, BENCH_N);
                double t1 = ck_now_ns();
                fn(by, bh, BENCH_N);
                double t2 = ck_now_ns();
                tr[r] = t1 - t0;
                tf[r] = t2 - t1;
            }
            ck_bench_report(name, ck_median(tr, BENCH_REPS),
                            ck_median(tf, BENCH_REPS));
        }
        free(bh);
        free(by);
    }
done:
    free(h);
    free(want);
    free(got);
    ck_report();
}

void check_cvt(unsigned flags);

void check_cvt(unsigned flags)
{
    struct kern_cvt_dsp c, d;
    kern_cvt_dsp_init(&c, 0);
    kern_cvt_dsp_init(&d, flags);
    check_narrow(c.f32_to_f16, d.f32_to_f16, "f32_to_f16");
    check_widen(c.f16_to_f32, d.f16_to_f32, "f16_to_f32");
    check_narrow(c.f32_to_bf16, d.f32_to_bf16, "f32_to_bf16");
    check_widen(c.bf16_to_f32, d.bf16_to_f32, "bf16_to_f32");
}
