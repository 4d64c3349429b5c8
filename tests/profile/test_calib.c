/*
 * Calibration sanity: every FMA path the CPU has gives a positive rate and
 * its own name, the triad a positive bandwidth over the array size asked
 * for, repeated measurements agree within a loose factor, the default size
 * follows its rules, and the host calibration is computed once. No timing
 * threshold: only signs, sizes, identities and a factor of 20.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "edgefit/kernels.h"
#include "edgefit/profile.h"

#define MIB (UINT64_C(1) << 20)

static void test_peak_every_path(void **state)
{
    (void)state;
    const unsigned flags = kern_cpu_flags();
    const unsigned levels[3] = {0, KERN_CPU_AVX2,
                                KERN_CPU_AVX2 | KERN_CPU_AVX512};
    const char *names[3] = {"c", "avx2", "avx512"};
    for (int i = 0; i < 3; i++) {
        if ((flags & levels[i]) != levels[i]) {
            continue;
        }
        struct prof_peak p;
        assert_int_equal(prof_measure_peak(levels[i], 3, &p), PROF_OK);
        assert_string_equal(p.path, names[i]);
        assert_int_equal(p.runs, 3);
        assert_true(p.gmacs > 0.0 && isfinite(p.gmacs));
        assert_true(p.gmacs_min <= p.gmacs && p.gmacs <= p.gmacs_max);
    }
    struct prof_peak a, b;
    assert_int_equal(prof_measure_peak(flags, 3, &a), PROF_OK);
    assert_int_equal(prof_measure_peak(flags, 3, &b), PROF_OK);
    assert_string_equal(a.path, kern_cpu_path_name(flags & (KERN_CPU_AVX2 |
                                                            KERN_CPU_AVX512)));
    assert_true(a.gmacs / b.gmacs < 20.0 && b.gmacs / a.gmacs < 20.0);
    assert_int_equal(prof_measure_peak(flags, 0, &a), PROF_E_RANGE);
    assert_int_equal(prof_measure_peak(flags, 1, NULL), PROF_E_INVALID);
}

static void test_triad(void **state)
{
    (void)state;
    struct prof_triad t, u;
    const uint64_t total = 48 * MIB;
    assert_int_equal(prof_measure_triad(total, 3, &t), PROF_OK);
    /* 48 MiB / 24 bytes per element, a multiple of 8 */
    assert_int_equal(t.elements, 2097152);
    assert_int_equal(t.array_bytes, 16 * MIB);
    assert_int_equal(t.total_bytes, 48 * MIB);
    assert_true(t.gbps > 0.0 && isfinite(t.gbps));
    assert_true(t.gbps_min <= t.gbps && t.gbps <= t.gbps_max);
    assert_int_equal(prof_measure_triad(total, 3, &u), PROF_OK);
    assert_true(t.gbps / u.gbps < 20.0 && u.gbps / t.gbps < 20.0);
    assert_int_equal(prof_measure_triad(total, 0, &t), PROF_E_RANGE);
    assert_int_equal(prof_measure_triad(1000, 1, &t), PROF_E_RANGE);
    assert_int_equal(prof_measure_triad(total, 1, NULL), PROF_E_INVALID);
}

static void test_default_size(void **state)
{
    (void)state;
    unsetenv("PROF_TRIAD_MIB");
    const uint64_t d = prof_triad_default_bytes();
    const uint64_t llc = prof_cache_bytes(3) ? prof_cache_bytes(3)
                                             : prof_cache_bytes(2);
    assert_int_equal(d % 192, 0);
    assert_true(d > 0);
    /* 2 x the last-level cache unless memory bounds it */
    assert_true(d <= (2 * llc > 64 * MIB ? 2 * llc : 64 * MIB));
    setenv("PROF_TRIAD_MIB", "96", 1);
    assert_int_equal(prof_triad_default_bytes(), 96 * MIB);
    setenv("PROF_TRIAD_MIB", "0.5", 1);
    assert_int_equal(prof_triad_default_bytes(), MIB / 2 / 192 * 192);
    setenv("PROF_TRIAD_MIB", "lots", 1); /* ignored */
    assert_int_equal(prof_triad_default_bytes(), d);
    unsetenv("PROF_TRIAD_MIB");
}

static void test_cache_triad(void **state)
{
    (void)state;
    struct prof_triad t;
    /* 24 KiB: 1024 doubles per array, a multiple of 8 */
    assert_int_equal(prof_measure_cache_triad(24 * 1024, 3, &t), PROF_OK);
    assert_int_equal(t.elements, 1024);
    assert_int_equal(t.array_bytes, 8192);
    assert_int_equal(t.total_bytes, 24576);
    assert_int_equal(t.runs, 3);
    assert_true(t.gbps > 0.0 && isfinite(t.gbps));
    assert_true(t.gbps_min <= t.gbps && t.gbps <= t.gbps_max);
    /* 1000 bytes per array round down to 120 doubles (whole lines) */
    assert_int_equal(prof_measure_cache_triad(3000, 1, &t), PROF_OK);
    assert_int_equal(t.elements, 120);
    /* the smallest: 64 doubles per array */
    assert_int_equal(prof_measure_cache_triad(1536, 1, &t), PROF_OK);
    assert_int_equal(prof_measure_cache_triad(1535, 1, &t), PROF_E_RANGE);
    assert_int_equal(prof_measure_cache_triad(24 * 1024, 0, &t),
                     PROF_E_RANGE);
    assert_int_equal(prof_measure_cache_triad(24 * 1024, 1, NULL),
                     PROF_E_INVALID);
}

static void test_footprints(void **state)
{
    (void)state;
    const uint64_t k = 1024;
    /* half of each cache */
    assert_int_equal(prof_cache_footprint_bytes(1, 48 * k, 2048 * k,
                                                480 * MIB),
                     24 * k);
    assert_int_equal(prof_cache_footprint_bytes(2, 48 * k, 2048 * k,
                                                480 * MIB),
                     1024 * k);
    /* a huge L3 is measured at 8 x L2 = 16 MiB, not 240 MiB */
    assert_int_equal(prof_cache_footprint_bytes(3, 48 * k, 2048 * k,
                                                480 * MIB),
                     16 * MIB);
    /* a small one at its half: 8 MiB of 16 */
    assert_int_equal(prof_cache_footprint_bytes(3, 32 * k, 1024 * k,
                                                16 * MIB),
                     8 * MIB);
    /* unknown sizes, and a level no larger than the one below */
    assert_int_equal(prof_cache_footprint_bytes(3, 32 * k, 1024 * k, 0), 0);
    assert_int_equal(prof_cache_footprint_bytes(2, 64 * k, 96 * k, 0), 0);
    assert_int_equal(prof_cache_footprint_bytes(0, 64 * k, 96 * k, 0), 0);
    assert_int_equal(prof_cache_footprint_bytes(1, 1024, 0, 0), 0);
}

static void test_cache_sizes(void **state)
{
    (void)state;
    assert_int_equal(prof_cache_bytes(0), 0);
    assert_int_equal(prof_cache_bytes(4), 0);
    const uint64_t l1 = prof_cache_bytes(1), l2 = prof_cache_bytes(2);
    if (l1 && l2) {
        assert_true(l1 <= l2);
    }
}

static void test_host_once(void **state)
{
    (void)state;
    /* Small arrays keep the test quick; the size rule is tested above. */
    setenv("PROF_TRIAD_MIB", "48", 1);
    struct prof_calibration a, b;
    assert_int_equal(prof_host_calibration(&a), PROF_OK);
    assert_int_equal(prof_host_calibration(&b), PROF_OK);
    assert_memory_equal(&a, &b, sizeof(a)); /* cached, not measured twice */
    assert_int_equal(a.triad.total_bytes, 48 * MIB);
    assert_true(a.peak.gmacs > 0.0 && a.triad.gbps > 0.0);
    assert_true(fabs(a.knee_mac_per_byte - a.peak.gmacs / a.triad.gbps) <
                1e-12 * a.knee_mac_per_byte);
    assert_true(a.memory_mb > 0);
    /* the levels: known caches smallest first, then main memory */
    assert_true(a.level_count >= 1 && a.level_count <= PROF_MEM_LEVELS_MAX);
    const struct prof_mem_level *dram = &a.levels[a.level_count - 1];
    assert_int_equal(dram->level, 0);
    assert_int_equal(dram->capacity_bytes, 0);
    assert_true(dram->triad.gbps == a.triad.gbps);
    const uint64_t sizes[3] = {a.l1_bytes, a.l2_bytes, a.l3_bytes};
    unsigned expect = 0;
    for (int lv = 1; lv <= 3; lv++) {
        const uint64_t fp = prof_cache_footprint_bytes(lv, sizes[0],
                                                       sizes[1], sizes[2]);
        if (fp == 0) {
            continue;
        }
        const struct prof_mem_level *l = &a.levels[expect++];
        assert_int_equal(l->level, lv);
        assert_int_equal(l->capacity_bytes, sizes[lv - 1]);
        assert_true(l->triad.total_bytes <= fp && l->triad.gbps > 0.0);
    }
    assert_int_equal(a.level_count, expect + 1);
    struct prof_device host;
    assert_int_equal(prof_device_host(NULL, &host), PROF_OK);
    assert_string_equal(host.name, "host");
    assert_true(host.peak_gmacs == a.peak.gmacs);
    assert_true(host.bandwidth_gbps == a.triad.gbps);
    assert_true(host.power_watts == 0.0);
    assert_int_equal(host.cache_count, a.level_count - 1);
    for (unsigned i = 0; i < host.cache_count; i++) {
        assert_true(host.cache[i].bandwidth_gbps == a.levels[i].triad.gbps);
    }
    assert_int_equal(prof_host_calibration(NULL), PROF_E_INVALID);
    unsetenv("PROF_TRIAD_MIB");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_peak_every_path),
        cmocka_unit_test(test_triad),
        cmocka_unit_test(test_default_size),
        cmocka_unit_test(test_cache_triad),
        cmocka_unit_test(test_footprints),
        cmocka_unit_test(test_cache_sizes),
        cmocka_unit_test(test_host_once),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
