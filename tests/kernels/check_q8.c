/* Checks of the q8 family: every path against the C reference. The GEMM and
 * every quantising kernel must match bit for bit (integer arithmetic, or
 * the same float operations in the same order); float outputs of
 * dequantisation and requantisation are compared exactly too. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checkkern.h"
#include "q8.h"

#include "edgefit/kernels.h"

static void fill_s8(int8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        p[i] = (int8_t)ck_randi(-128, 127);
    }
}

/* Random floats with some special values: exact ties of the rounding,
 * zeros, values beyond the saturation point, inf and NaN. */
static void fill_quant_input(float *x, size_t n, float scale)
{
    for (size_t i = 0; i < n; i++) {
        const int kind = ck_randi(0, 15);
        if (kind == 0) {
            x[i] = ((float)ck_randi(-300, 300) + 0.5f) * scale;
        } else if (kind == 1) {
            x[i] = ck_randi(0, 1) ? 0.0f : -0.0f;
        } else if (kind == 2) {
            x[i] = ck_randf(-1000.0f, 1000.0f) * scale;
        } else if (kind == 3) {
            const float sp[3] = {__builtin_inff(), -__builtin_inff(),
                                 __builtin_nanf("")};
            x[i] = sp[ck_randi(0, 2)];
        } else {
            x[i] = ck_randf(-130.0f, 130.0f) * scale;
        }
    }
}

static bool same_bits(const void *a, const void *b, size_t bytes)
{
    return memcmp(a, b, bytes) == 0;
}

static void check_gemm(const struct kern_q8_dsp *isa,
                       const struct kern_q8_dsp *ref)
{
    if (!ck_func((const void *)isa->gemm, "q8_gemm")) {
        return;
    }
    for (int t = 0; t < 120; t++) {
        size_t m = (size_t)ck_randi(1, 40);
        size_t n = (size_t)ck_randi(1, 140);
        size_t k = (size_t)ck_randi(1, 700);
        if (t < 8) {
            /* K below one group, exact multiples and the KC boundary. */
            const size_t ks[8] = {1, 2, 3, 4, 512, 513, 1024, 1031};
            k = ks[t];
        }
        if (t % 10 == 1) {
            n = 16 * (size_t)ck_randi(1, 5);
        }
        if (t % 10 == 3 || t == 4) {
            /* one column: a depthwise group; K of a 3 x 3 kernel, short
             * and long ones, over a row block */
            n = 1;
            m = (size_t)ck_randi(1, 300);
            k = t % 20 == 3 ? 9 : k;
        }
        if (t == 9) {
            m = 200; /* more than one row block */
        }
        if (t == 10) {
            /* C beyond 512 KiB: the large K blocks, two of them. */
            m = 300;
            n = 450;
            k = 2053;
        }
        const size_t lda = k + (size_t)ck_randi(0, 5);
        const size_t ldw = k + (size_t)ck_randi(0, 3);
        const size_t ldc = n + (size_t)ck_randi(0, 7);
        int8_t *a = malloc(m * lda);
        int8_t *w = malloc(n * ldw);
        const size_t pb = kern_q8_packed_bytes(n, k);
        unsigned char *packed = malloc(pb);
        int32_t *c0 = malloc(m * ldc * sizeof *c0);
        int32_t *c1 = malloc(m * ldc * sizeof *c1);
        if (!a || !w || !packed || !c0 || !c1) {
            ck_fail("out of memory");
            goto next;
        }
        fill_s8(a, m * lda);
        fill_s8(w, n * ldw);
        if (kern_q8_pack_weights(w, n, k, ldw, packed, pb) != KERN_OK) {
            ck_fail("pack %zux%zu failed", n, k);
            goto next;
        }
        ck_poison(c0, m * ldc * sizeof *c0);
        ck_poison(c1, m * ldc * sizeof *c1);
        ref->gemm(m, n, k, a, lda, packed + Q8_HDR_BYTES, c0, ldc);
        isa->gemm(m, n, k, a, lda, packed + Q8_HDR_BYTES, c1, ldc);
        /* Exact, padding columns included (they must stay poisoned). */
        for (size_t i = 0; i < m * ldc; i++) {
            if (c0[i] != c1[i]) {
                ck_fail("m=%zu n=%zu k=%zu ldc=%zu: c[%zu][%zu] = %d, "
                        "want %d", m, n, k, ldc, i / ldc, i % ldc,
                        (int)c1[i], (int)c0[i]);
                break;
            }
        }
    next:
        free(a);
        free(w);
        free(packed);
        free(c0);
        free(c1);
    }
    if (ck_bench_on()) {
        static const size_t shapes[][3] = {
            {32, 784, 64}, {256, 784, 64}, {16, 1024, 256}, {1, 784, 64},
            {256, 256, 256}, {512, 512, 512},
        };
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
            const size_t m = shapes[s][0], k = shapes[s][1], n = shapes[s][2];
            int8_t *a = malloc(m * k);
            int8_t *w = malloc(n * k);
            const size_t pb = kern_q8_packed_bytes(n, k);
            unsigned char *packed = malloc(pb);
            int32_t *c = malloc(m * n * sizeof *c);
            if (!a || !w || !packed || !c) {
                free(a);
                free(w);
                free(packed);
                free(c);
                continue;
            }
            fill_s8(a, m * k);
            fill_s8(w, n * k);
            kern_q8_pack_weights(w, n, k, k, packed, pb);
            double tr[5], ti[31];
            for (int r = 0; r < 5; r++) {
                const double t0 = ck_now_ns();
                ref->gemm(m, n, k, a, k, packed + Q8_HDR_BYTES, c, n);
                tr[r] = ck_now_ns() - t0;
            }
            for (int r = 0; r < 31; r++) {
                const double t0 = ck_now_ns();
                isa->gemm(m, n, k, a, k, packed + Q8_HDR_BYTES, c, n);
                ti[r] = ck_now_ns() - t0;
            }
            char what[64];
            const double ops = 2.0 * (double)m * (double)n * (double)k;
            const double mi = ck_median(ti, 31);
            snprintf(what, sizeof what, "q8_gemm %zux%zux%zu %.0f GOP/s",
                     m, k, n, ops / mi);
            ck_bench_report(what, ck_median(tr, 5), mi);
            free(a);
            free(w);
            free(packed);
            free(c);
        }
    }
    ck_report();
}

static void check_elementwise(const struct kern_q8_dsp *isa,
                              const struct kern_q8_dsp *ref)
{
    enum { MAXN = 1000 };
    static float x[MAXN], f0[MAXN], f1[MAXN], ws[MAXN], bias[MAXN];
    static int8_t q0[MAXN], q1[MAXN];
    static int32_t acc[MAXN];

    if (ck_func((const void *)isa->absmax, "q8_absmax")) {
        for (int t = 0; t < 200; t++) {
            const size_t n = (size_t)ck_randi(1, MAXN);
            fill_quant_input(x, n, 0.01f);
            if (t % 2) {
                for (size_t i = 0; i < n; i++) {
                    x[i] = ck_randf(-5.0f, 5.0f); /* all finite */
                }
            }
            const uint32_t a = ref->absmax(x, n), b = isa->absmax(x, n);
            if (a != b) {
                ck_fail("n=%zu: %#x, want %#x", n, b, a);
            }
        }
        ck_report();
    }
    if (ck_func((const void *)isa->quant, "q8_quant")) {
        for (int t = 0; t < 200; t++) {
            const size_t n = (size_t)ck_randi(1, MAXN);
            const float scale = ck_randf(0.001f, 2.0f);
            fill_quant_input(x, n, scale);
            ck_poison(q0, sizeof q0);
            ck_poison(q1, sizeof q1);
            ref->quant(x, n, scale, q0);
            isa->quant(x, n, scale, q1);
            if (!same_bits(q0, q1, sizeof q0)) {
                for (size_t i = 0; i < MAXN; i++) {
                    if (q0[i] != q1[i]) {
                        ck_fail("n=%zu x[%zu]=%a scale=%a: %d, want %d", n,
                                i, (double)x[i], (double)scale, q1[i], q0[i]);
                        break;
                    }
                }
            }
        }
        ck_report();
    }
    if (ck_func((const void *)isa->dequant, "q8_dequant")) {
        for (int t = 0; t < 100; t++) {
            const size_t n = (size_t)ck_randi(1, MAXN);
            const float scale = ck_randf(0.001f, 2.0f);
            fill_s8(q0, n);
            ck_poison(f0, sizeof f0);
            ck_poison(f1, sizeof f1);
            ref->dequant(q0, n, scale, f0);
            isa->dequant(q0, n, scale, f1);
            if (!same_bits(f0, f1, sizeof f0)) {
                ck_fail("n=%zu: outputs differ", n);
            }
        }
        ck_report();
    }
    if (ck_func((const void *)isa->requant_f32, "q8_requant_f32")) {
        for (int t = 0; t < 100; t++) {
            const size_t n = (size_t)ck_randi(1, MAXN);
            const float as = ck_randf(0.001f, 0.1f);
            for (size_t i = 0; i < n; i++) {
                acc[i] = (int32_t)ck_randi(-200000, 200000);
                ws[i] = ck_randf(0.0001f, 0.05f);
                bias[i] = ck_randf(-3.0f, 3.0f);
            }
            const int relu = t % 2;
            const float *b = t % 3 ? bias : NULL;
            ck_poison(f0, sizeof f0);
            ck_poison(f1, sizeof f1);
            ref->requant_f32(n, acc, as, ws, b, relu, f0);
            isa->requant_f32(n, acc, as, ws, b, relu, f1);
            if (!same_bits(f0, f1, sizeof f0)) {
                ck_fail("n=%zu relu=%d bias=%d: outputs differ", n, relu,
                        b != NULL);
            }
        }
        ck_report();
    }
    if (ck_func((const void *)isa->requant_s8, "q8_requant_s8")) {
        for (int t = 0; t < 100; t++) {
            const size_t n = (size_t)ck_randi(1, MAXN);
            const float as = ck_randf(0.001f, 0.1f);
            for (size_t i = 0; i < n; i++) {
                acc[i] = (int32_t)ck_randi(-200000, 200000);
                ws[i] = ck_randf(0.0001f, 0.05f);
                bias[i] = ck_randf(-3.0f, 3.0f);
            }
            const int relu = t % 2;
            const float *b = t % 3 ? bias : NULL;
            const float os = ck_randf(0.005f, 0.2f);
            ck_poison(q0, sizeof q0);
            ck_poison(q1, sizeof q1);
            ref->requant_s8(n, acc, as, ws, b, relu, os, q0);
            isa->requant_s8(n, acc, as, ws, b, relu, os, q1);
            if (!same_bits(q0, q1, sizeof q0)) {
                ck_fail("n=%zu relu=%d bias=%d: outputs differ", n, relu,
                        b != NULL);
            }
        }
        ck_report();
    }
}

/* The transposed requantisation on random M x N (1 to 40 each, so 8 x 8
 * tiles, overlapping last tiles and the scalar loop all run) with pitches
 * past the minimum: every output element against the reference's bits,
 * the gaps between output rows and a guard after the last untouched; one
 * trial in five has one column. */
static void check_requant_t(const struct kern_q8_dsp *isa,
                            const struct kern_q8_dsp *ref)
{
    enum { MAXD = 40, MAXA = MAXD * (MAXD + 3), GUARD = 16 };
    static int32_t acc[MAXA];
    static float ws[MAXD], bias[MAXD], y0[MAXA + GUARD], y1[MAXA + GUARD];
    if (!ck_func((const void *)isa->requant_f32_t, "q8_requant_f32_t")) {
        return;
    }
    for (int t = 0; t < 300; t++) {
        const size_t m = (size_t)ck_randi(1, MAXD);
        /* one column with a dense accumulator is a depthwise layer's */
        const size_t n = t % 5 ? (size_t)ck_randi(1, MAXD) : 1;
        const size_t ld_acc = n + (t % 4 ? (size_t)ck_randi(0, 3) : 0);
        const size_t ldy = m + (size_t)ck_randi(0, 3);
        const float as = ck_randf(0.001f, 0.1f);
        for (size_t i = 0; i < m * ld_acc; i++) {
            acc[i] = (int32_t)ck_randi(-200000, 200000);
        }
        for (size_t j = 0; j < n; j++) {
            ws[j] = ck_randf(0.0001f, 0.05f);
            bias[j] = ck_randf(-3.0f, 3.0f);
        }
        const int relu = t % 2;
        const float *b = t % 3 ? bias : NULL;
        ck_poison(y0, sizeof y0);
        ck_poison(y1, sizeof y1);
        ref->requant_f32_t(m, n, acc, ld_acc, as, ws, b, relu, y0, ldy);
        isa->requant_f32_t(m, n, acc, ld_acc, as, ws, b, relu, y1, ldy);
        if (memcmp(y0, y1, sizeof y0) != 0) {
            ck_fail("%zux%zu ld_acc=%zu ldy=%zu relu=%d bias=%d: outputs "
                    "differ", m, n, ld_acc, ldy, relu, b != NULL);
        }
        /* the reference itself: each element where the row-major
         * requantisation puts it */
        float row[MAXD];
        for (size_t i = 0; i < m; i++) {
            ref->requant_f32(n, acc + i * ld_acc, as, ws, b, relu, row);
            for (size_t j = 0; j < n; j++) {
                if (memcmp(&row[j], &y0[j * ldy + i], sizeof row[j]) != 0) {
                    ck_fail("%zux%zu: reference (%zu, %zu) misplaced", m, n,
                            i, j);
                }
            }
        }
    }
    ck_report();
}

void check_q8(unsigned flags);

void check_q8(unsigned flags)
{
    struct kern_q8_dsp isa, ref;
    kern_q8_dsp_init(&isa, flags);
    kern_q8_dsp_init(&ref, 0);
    check_gemm(&isa, &ref);
    check_elementwise(&isa, &ref);
    check_requant_t(&isa, &ref);
}
