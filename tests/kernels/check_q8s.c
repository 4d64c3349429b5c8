/* Checks of the q8s family (static int8, integer-only output stage and
 * add): every path against the C reference, bit for bit, over random
 * lengths (vector bodies and tails) and extreme values (INT32_MIN
 * squared, the largest shifts, clamps at and inside [-128, 127]). */
#include <stdint.h>
#include <string.h>

#include "checkkern.h"
#include "q8s.h"

#include "edgefit/kernels.h"

static int32_t rand_i32(void)
{
    const int32_t sp[6] = {INT32_MIN, INT32_MIN + 1, INT32_MAX, -1, 0, 1};
    const int kind = ck_randi(0, 3);
    if (kind == 0) {
        return sp[ck_randi(0, 5)];
    }
    if (kind == 1) {
        return (int32_t)ck_rand();
    }
    return ck_randi(-3000000, 3000000);
}

static void check_requant(const struct kern_q8s_dsp *isa,
                          const struct kern_q8s_dsp *ref)
{
    enum { MAXN = 133 };
    if (!ck_func((const void *)isa->requant, "q8s_requant")) {
        return;
    }
    int32_t acc[MAXN], add[MAXN], mult[MAXN], lsh[MAXN], rsh[MAXN];
    int8_t q0[MAXN], q1[MAXN];
    for (int t = 0; t < 2000; t++) {
        const size_t n = (size_t)ck_randi(1, MAXN);
        for (size_t j = 0; j < n; j++) {
            acc[j] = rand_i32();
            add[j] = t % 3 ? ck_randi(-100000, 100000) : rand_i32();
            mult[j] = t % 5 ? ck_randi(1 << 30, INT32_MAX) : rand_i32();
            const int s = ck_randi(-31, 30);
            lsh[j] = s > 0 ? s : 0;
            rsh[j] = s > 0 ? 0 : -s;
        }
        const int32_t zp = ck_randi(-128, 127);
        int32_t lo = ck_randi(-128, 127), hi = ck_randi(-128, 127);
        if (lo > hi) {
            const int32_t x = lo;
            lo = hi;
            hi = x;
        }
        ck_poison(q0, sizeof q0);
        ck_poison(q1, sizeof q1);
        ref->requant(n, acc, add, mult, lsh, rsh, zp, lo, hi, q0);
        isa->requant(n, acc, add, mult, lsh, rsh, zp, lo, hi, q1);
        if (memcmp(q0, q1, sizeof q0) != 0) {
            for (size_t j = 0; j < MAXN; j++) {
                if (q0[j] != q1[j]) {
                    ck_fail("n=%zu j=%zu acc=%d add=%d mult=%d lsh=%d rsh=%d "
                            "zp=%d: %d, want %d", n, j, acc[j], add[j],
                            mult[j], lsh[j], rsh[j], zp, q1[j], q0[j]);
                    break;
                }
            }
        }
    }
    ck_report();
}

static void check_add(const struct kern_q8s_dsp *isa,
                      const struct kern_q8s_dsp *ref)
{
    enum { MAXN = 301 };
    if (!ck_func((const void *)isa->add, "q8s_add")) {
        return;
    }
    int8_t a[MAXN], b[MAXN], o0[MAXN], o1[MAXN];
    for (int t = 0; t < 1000; t++) {
        struct kern_q8_add_params p;
        const int32_t zo = ck_randi(-128, 127);
        if (kern_q8_add_params_init(ck_randf(0.001f, 1.0f), ck_randi(-128, 127),
                                    ck_randf(0.001f, 1.0f), ck_randi(-128, 127),
                                    ck_randf(0.001f, 1.0f), zo,
                                    t % 2 ? zo : -128, 127,
                                    &p) != KERN_OK) {
            ck_fail("kern_q8_add_params_init refused its arguments");
            continue;
        }
        const size_t n = (size_t)ck_randi(1, MAXN);
        for (size_t i = 0; i < n; i++) {
            a[i] = (int8_t)ck_randi(-128, 127);
            b[i] = (int8_t)ck_randi(-128, 127);
        }
        ck_poison(o0, sizeof o0);
        ck_poison(o1, sizeof o1);
        ref->add(n, a, b, &p, o0);
        isa->add(n, a, b, &p, o1);
        if (memcmp(o0, o1, sizeof o0) != 0) {
            ck_fail("n=%zu: outputs differ", n);
        }
    }
    ck_report();
}

void check_q8s(unsigned flags);

void check_q8s(unsigned flags)
{
    struct kern_q8s_dsp isa, ref;
    kern_q8s_dsp_init(&ref, 0);
    kern_q8s_dsp_init(&isa, flags);
    check_requant(&isa, &ref);
    check_add(&isa, &ref);
}
