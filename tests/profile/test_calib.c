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
#include <stdio.h>
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
    /* No environment variable changes the size any more: a setting that
     * used to pass through PROF_TRIAD_MIB is an option field now. */
    const uint64_t d = prof_triad_default_bytes();
    const uint64_t llc = prof_cache_bytes(3) ? prof_cache_bytes(3)
                                             : prof_cache_bytes(2);
    assert_int_equal(d % 192, 0);
    assert_true(d > 0);
    /* 2 x the last-level cache unless memory bounds it */
    assert_true(d <= (2 * llc > 64 * MIB ? 2 * llc : 64 * MIB));
    setenv("PROF_TRIAD_MIB", "96", 1);
    assert_int_equal(prof_triad_default_bytes(), d);
    unsetenv("PROF_TRIAD_MIB");
    struct prof_calib_opts o;
    prof_calib_opts_init(&o);
    assert_int_equal(o.triad_bytes, 0);
    assert_int_equal(o.trials, 5);
}

/* prof_bandwidth_roof and prof_device_peak against a device by hand:
 * L1 32 KiB at 200 GB/s, L2 1 MiB at 100, main memory 20. */
static void test_roof_and_peaks(void **state)
{
    (void)state;
    struct prof_device d;
    memset(&d, 0, sizeof d);
    snprintf(d.name, sizeof d.name, "x");
    d.bandwidth_gbps = 20.0;
    d.peak_gmacs = 50.0;
    d.cache_count = 2;
    d.cache[0] = (struct prof_cache_level){1, 32 * 1024, 200.0};
    d.cache[1] = (struct prof_cache_level){2, MIB, 100.0};
    unsigned level = 9;
    double gbps = 0.0;
    /* 512 KiB live in L2; 60 GB/s achieved is under its roof */
    assert_int_equal(prof_bandwidth_roof(&d, 512 * 1024, 60.0, &level,
                                         &gbps), PROF_OK);
    assert_int_equal(level, 2);
    assert_true(gbps == 100.0);
    /* 150 GB/s beats L2: L1 served it */
    assert_int_equal(prof_bandwidth_roof(&d, 512 * 1024, 150.0, &level,
                                         &gbps), PROF_OK);
    assert_int_equal(level, 1);
    assert_true(gbps == 200.0);
    /* beyond every cache: main memory, or the fastest level above it */
    assert_int_equal(prof_bandwidth_roof(&d, 8 * MIB, 10.0, &level, &gbps),
                     PROF_OK);
    assert_int_equal(level, 0);
    assert_true(gbps == 20.0);
    assert_int_equal(prof_bandwidth_roof(&d, 8 * MIB, 500.0, &level, &gbps),
                     PROF_OK);
    assert_int_equal(level, 1);
    assert_int_equal(prof_bandwidth_roof(NULL, 1, 1.0, &level, &gbps),
                     PROF_E_INVALID);
    /* peaks per precision; 0 falls back on fp32 */
    assert_true(prof_device_peak(&d, MEMEST_INT8) == 50.0);
    d.peak_gmacs_int8 = 120.0;
    d.peak_gmacs_f16 = 40.0;
    assert_true(prof_device_peak(&d, MEMEST_INT8) == 120.0);
    assert_true(prof_device_peak(&d, MEMEST_FP16) == 40.0);
    assert_true(prof_device_peak(&d, MEMEST_BF16) == 40.0);
    assert_true(prof_device_peak(&d, MEMEST_FP32) == 50.0);
    assert_true(prof_device_peak(NULL, MEMEST_FP32) == 0.0);
    /* the catalogue states every precision */
    for (size_t i = 0; i < prof_device_catalog_count(); i++) {
        const struct prof_device *c = prof_device_catalog(i);
        assert_true(c->peak_gmacs_f16 > 0.0 && c->peak_gmacs_int8 > 0.0);
    }
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
    struct prof_calib_opts o;
    prof_calib_opts_init(&o);
    o.triad_bytes = 48 * MIB;
    o.trials = 3;
    struct prof_calibration a, b;
    assert_int_equal(prof_calibrate(&o, &a), PROF_OK);
    assert_int_equal(prof_host_calibration_set(&a), PROF_OK);
    assert_int_equal(prof_host_calibration(&b), PROF_OK);
    assert_memory_equal(&a, &b, sizeof(a)); /* installed, not measured */
    assert_int_equal(a.trials, 3);
    assert_int_equal(a.triad.total_bytes, 48 * MIB);
    assert_true(a.peak.gmacs > 0.0 && a.triad.gbps > 0.0);
    /* the fp32 roof is the best of the FMA loop and the kernel, so no
     * kernel of this library runs above it */
    assert_true(a.fma.gmacs > 0.0 && a.sgemm.gmacs > 0.0);
    assert_true(a.peak.gmacs == fmax(a.fma.gmacs, a.sgemm.gmacs));
    assert_true(a.f16.gmacs > 0.0 && a.int8.gmacs > 0.0);
    /* each figure is the best of its trials, with the spread */
    assert_true(a.fma.gmacs == a.fma.gmacs_max);
    assert_true(a.fma.gmacs_min <= a.fma.gmacs_max);
    assert_true(fabs(a.knee_mac_per_byte - a.peak.gmacs / a.triad.gbps) <
                1e-12 * a.knee_mac_per_byte);
    assert_true(a.memory_mb > 0);
    /* the levels: known caches smallest first, then main memory, and
     * never a smaller level slower than a larger one */
    assert_true(a.level_count >= 1 && a.level_count <= PROF_MEM_LEVELS_MAX);
    for (unsigned i = 0; i + 1 < a.level_count; i++) {
        assert_true(a.levels[i].triad.gbps >= a.levels[i + 1].triad.gbps);
    }
    for (unsigned i = 0; i < a.level_count; i++) {
        const struct prof_triad *t = &a.levels[i].triad;
        assert_true(t->gbps_min <= t->gbps_max);
        if (a.order_fixed == 0) {
            assert_true(t->gbps == t->gbps_max);
        }
    }
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
    assert_true(host.peak_gmacs == a.peak.gmacs * host.cores);
    assert_true(host.bandwidth_gbps == a.triad.gbps);
    assert_true(host.power_watts == 0.0);
    assert_int_equal(host.cache_count, a.level_count - 1);
    for (unsigned i = 0; i < host.cache_count; i++) {
        assert_true(host.cache[i].bandwidth_gbps == a.levels[i].triad.gbps);
    }
    assert_true(host.peak_gmacs_f16 == a.f16.gmacs * host.cores);
    assert_true(host.peak_gmacs_int8 == a.int8.gmacs * host.cores);
    assert_int_equal(prof_host_calibration(NULL), PROF_E_INVALID);
    struct prof_calibration bad = a;
    bad.peak.gmacs = 0.0;
    assert_int_equal(prof_host_calibration_set(&bad), PROF_E_RANGE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_peak_every_path),
        cmocka_unit_test(test_triad),
        cmocka_unit_test(test_default_size),
        cmocka_unit_test(test_roof_and_peaks),
        cmocka_unit_test(test_cache_triad),
        cmocka_unit_test(test_footprints),
        cmocka_unit_test(test_cache_sizes),
        cmocka_unit_test(test_host_once),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
