/*
 * Devices: the catalogue's figures, the key=value parser and each of its
 * errors (with the column it names), lookups, and roofline predictions and
 * errors worked out by hand.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "edgefit/profile.h"

static void near(double got, double want)
{
    const double tol = 1e-12 * fmax(1.0, fabs(want));
    if (!(fabs(got - want) <= tol)) {
        fail_msg("got %.17g, want %.17g", got, want);
    }
}

static void test_catalog(void **state)
{
    (void)state;
    /* Hand-computed from the boards' data sheets and ARM's optimisation
     * guides: peak = cores x GHz x fp32 lanes x FMLA per cycle; fp16 and
     * int8 (SDOT, 16 MACs per 128-bit instruction) only on the A76 and
     * A78; on the A53, A57 and A72 16-bit storage computes at the fp32
     * peak and int8 as 16-bit SMLAL, 8 lanes. One-core bandwidth is twice
     * a published tinymembench "C copy" (MB/s, 1e6 B). */
    static const struct {
        const char *name;
        unsigned cores;
        double ghz, f32, f16, i8, bw1, l1d_kib, l2_kib, l3_kib;
    } want[] = {
        {"rpi3bplus", 4, 1.4, 4 * 1.4 * 4 * 1, 4 * 1.4 * 4 * 1,
         4 * 1.4 * 8, 2 * 1213.0e-3, 32, 512, 0},
        {"rpizero2w", 4, 1.0, 4 * 1.0 * 4 * 1, 4 * 1.0 * 4 * 1,
         4 * 1.0 * 8, 2 * 1280.2e-3, 32, 512, 0},
        {"rpi4", 4, 1.5, 4 * 1.5 * 4 * 1, 4 * 1.5 * 4 * 1, 4 * 1.5 * 8,
         2 * 2563.5e-3, 32, 1024, 0},
        {"rpi4-1.8", 4, 1.8, 4 * 1.8 * 4 * 1, 4 * 1.8 * 4 * 1, 4 * 1.8 * 8,
         2 * 2420.6e-3, 32, 1024, 0},
        {"rpi5", 4, 2.4, 4 * 2.4 * 4 * 2, 4 * 2.4 * 8 * 2, 4 * 2.4 * 16 * 2,
         2 * 5340.0e-3, 64, 4 * 512, 2048},
        {"jetson-nano", 4, 1.43, 4 * 1.43 * 4 * 1, 4 * 1.43 * 4 * 1,
         4 * 1.43 * 8, 2 * 3776.5e-3, 32, 2048, 0},
        {"jetson-orin-nano", 6, 1.5, 6 * 1.5 * 4 * 2, 6 * 1.5 * 8 * 2,
         6 * 1.5 * 16 * 2, 2 * 6726.3e-3, 64, 6 * 256, 2048},
        {"desktop", 8, 3.5, 8 * 3.5 * 8 * 2, 8 * 3.5 * 8 * 2, 8 * 3.5 * 32,
         0.0, 0, 0, 0},
    };
    const size_t n = sizeof want / sizeof want[0];
    assert_int_equal(prof_device_catalog_count(), n);
    for (size_t i = 0; i < n; i++) {
        const struct prof_device *d = prof_device_catalog(i);
        assert_non_null(d);
        assert_string_equal(d->name, want[i].name);
        assert_int_equal(d->cores, want[i].cores);
        near(d->clock_ghz, want[i].ghz);
        near(d->peak_gmacs, want[i].f32);
        near(d->peak_gmacs_f16, want[i].f16);
        near(d->peak_gmacs_int8, want[i].i8);
        near(d->bandwidth_1core_gbps, want[i].bw1);
        assert_true(d->l1d_bytes == (uint64_t)want[i].l1d_kib * 1024);
        assert_true(d->l2_bytes == (uint64_t)want[i].l2_kib * 1024);
        assert_true(d->l3_bytes == (uint64_t)want[i].l3_kib * 1024);
        /* all cores together sustain at least what one core does */
        assert_true(d->bandwidth_gbps >= d->bandwidth_1core_gbps);
        assert_true(d->peak_gmacs > 0.0 && d->memory_mb > 0.0);
        assert_true(d->power_watts >= 0.0 && d->idle_watts >= 0.0);
        assert_true(d->power_watts == 0.0 || d->idle_watts < d->power_watts);
        assert_int_equal(prof_device_validate(d, NULL), PROF_OK);
        struct prof_device by_name;
        assert_int_equal(prof_device_lookup(want[i].name, &by_name, NULL),
                         PROF_OK);
        assert_memory_equal(&by_name, d, sizeof(by_name));
        /* every figure has a line of its own in the source */
        const char *src = prof_device_catalog_source(i);
        static const char *const figures[] = {
            "\ncores ", "clock ", "\npeak ", "\npeak fp16 ",
            "\npeak int8 ", "\nl1d", "\nbandwidth ",
            "\nbandwidth 1 core ", "idle power", "power ", "\nmemory "};
        char buf[8192];
        snprintf(buf, sizeof buf, "\n%s", src);
        for (size_t k = 0; k < sizeof figures / sizeof figures[0]; k++) {
            if (!strstr(buf, figures[k])) {
                fail_msg("%s: no source line for '%s'", want[i].name,
                         figures[k]);
            }
        }
    }
    assert_null(prof_device_catalog(n));
    /* the known wrongs stay fixed: the Jetson Nano's 25.6 GB/s is the
     * DRAM bus peak, no core's sustained figure */
    struct prof_device nano;
    assert_int_equal(prof_device_lookup("jetson-nano", &nano, NULL),
                     PROF_OK);
    assert_true(nano.bandwidth_gbps < 25.6 / 2);
}

static void test_parse_ok(void **state)
{
    (void)state;
    struct prof_device d;
    struct prof_diag diag;
    assert_int_equal(
        prof_device_parse("name=board,bandwidth_gbps=12.8,peak_gmacs=40,"
                          "power_watts=5,memory_mb=2048",
                          &d, &diag),
        PROF_OK);
    assert_string_equal(d.name, "board");
    near(d.bandwidth_gbps, 12.8);
    near(d.peak_gmacs, 40.0);
    near(d.power_watts, 5.0);
    near(d.memory_mb, 2048.0);
    /* any order, spaces, optional fields default to 0 */
    assert_int_equal(prof_device_parse(" peak_gmacs = 1e1 , name = my board "
                                       ", bandwidth_gbps=0.5",
                                       &d, &diag),
                     PROF_OK);
    assert_string_equal(d.name, "my board");
    near(d.peak_gmacs, 10.0);
    near(d.bandwidth_gbps, 0.5);
    assert_true(d.power_watts == 0.0 && d.memory_mb == 0.0);
    /* lookup passes a description through */
    assert_int_equal(prof_device_lookup("name=x,bandwidth_gbps=1,"
                                        "peak_gmacs=2",
                                        &d, &diag),
                     PROF_OK);
    assert_string_equal(d.name, "x");
}

struct bad_case {
    const char *spec;
    int status;
    int column;
    const char *needle;
};

static void test_parse_errors(void **state)
{
    (void)state;
    const struct bad_case cases[] = {
        {"name=a,speed=3,bandwidth_gbps=1,peak_gmacs=1", PROF_E_PARSE, 8,
         "unknown key 'speed'"},
        {"name=a,name=b,bandwidth_gbps=1,peak_gmacs=1", PROF_E_PARSE, 8,
         "given twice"},
        {"name=a,bandwidth_gbps,peak_gmacs=1", PROF_E_PARSE, 8,
         "no '=value'"},
        {"name=a,bandwidth_gbps=fast,peak_gmacs=1", PROF_E_PARSE, 23,
         "'fast' is not a finite number"},
        {"name=a,bandwidth_gbps=1x,peak_gmacs=1", PROF_E_PARSE, 23,
         "not a finite number"},
        {"name=a,bandwidth_gbps=inf,peak_gmacs=1", PROF_E_PARSE, 23,
         "not a finite number"},
        {"name=a,bandwidth_gbps=,peak_gmacs=1", PROF_E_PARSE, 23,
         "empty value"},
        {"name=a,peak_gmacs=1", PROF_E_PARSE, 20,
         "missing key 'bandwidth_gbps'"},
        {"bandwidth_gbps=1,peak_gmacs=1", PROF_E_PARSE, 30,
         "missing key 'name'"},
        {"name=a,bandwidth_gbps=1,peak_gmacs=1,", PROF_E_PARSE, 38,
         "expected key=value"},
        {"", PROF_E_PARSE, 1, "expected key=value"},
        {"name=a,bandwidth_gbps=-1,peak_gmacs=1", PROF_E_RANGE, 0,
         "bandwidth_gbps must be a number > 0"},
        {"name=a,bandwidth_gbps=1,peak_gmacs=0", PROF_E_RANGE, 0,
         "peak_gmacs must be a number > 0"},
        {"name=a,bandwidth_gbps=1,peak_gmacs=1,power_watts=-2",
         PROF_E_RANGE, 0, "power_watts must be a number >= 0"},
        {"name=a,bandwidth_gbps=1,peak_gmacs=1,memory_mb=-1", PROF_E_RANGE,
         0, "memory_mb must be a number >= 0"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct prof_device d;
        memset(&d, 0x5a, sizeof(d));
        struct prof_device before = d;
        struct prof_diag diag = {0, ""};
        const int st = prof_device_parse(cases[i].spec, &d, &diag);
        if (st != cases[i].status || diag.column != cases[i].column ||
            !strstr(diag.message, cases[i].needle)) {
            fail_msg("'%s': status %d column %d '%s'", cases[i].spec, st,
                     diag.column, diag.message);
        }
        /* a failed parse leaves the output alone */
        assert_memory_equal(&d, &before, sizeof(d));
    }
    struct prof_device d;
    struct prof_diag diag;
    assert_int_equal(prof_device_lookup("pi5", &d, &diag), PROF_E_INVALID);
    assert_non_null(strstr(diag.message, "unknown device 'pi5'"));
    assert_int_equal(prof_device_parse(NULL, &d, NULL), PROF_E_INVALID);
    /* diag may be NULL */
    assert_int_equal(prof_device_parse("name=a", &d, NULL), PROF_E_PARSE);
}

static void test_predict_by_hand(void **state)
{
    (void)state;
    struct prof_device d;
    assert_int_equal(prof_device_parse("name=t,bandwidth_gbps=10,"
                                       "peak_gmacs=20,power_watts=5",
                                       &d, NULL),
                     PROF_OK);
    struct prof_prediction p;
    /* 4e6 MAC / 20e9 = 0.2 ms; 1e6 B / 10e9 = 0.1 ms */
    assert_int_equal(prof_predict(&d, 4000000, 1000000, &p), PROF_OK);
    near(p.compute_ms, 0.2);
    near(p.memory_ms, 0.1);
    near(p.predicted_ms, 0.2);
    assert_int_equal(p.bound, PROF_BOUND_COMPUTE);
    near(p.energy_proxy_j, 5.0 * 0.2e-3);
    /* 1e6 MAC: 0.05 ms; 3e6 B: 0.3 ms */
    assert_int_equal(prof_predict(&d, 1000000, 3000000, &p), PROF_OK);
    near(p.predicted_ms, 0.3);
    assert_int_equal(p.bound, PROF_BOUND_MEMORY);
    /* a tie reads as memory-bound */
    assert_int_equal(prof_predict(&d, 2000000, 1000000, &p), PROF_OK);
    assert_int_equal(p.bound, PROF_BOUND_MEMORY);

    const struct prof_work layers[3] = {
        {4000000, 1000000, 1}, /* 0.2 ms */
        {1000000, 3000000, 1}, /* 0.3 ms */
        {0, 500000, 1},        /* 0.05 ms */
    };
    const double measured[3] = {0.25, 0.2, 0.1};
    struct prof_layer_prediction out[3];
    struct prof_prediction_total t;
    assert_int_equal(prof_predict_layers(&d, layers, 3, measured, out, &t),
                     PROF_OK);
    near(out[0].relative_error, (0.2 - 0.25) / 0.25);
    near(out[1].relative_error, (0.3 - 0.2) / 0.2);
    near(out[2].relative_error, (0.05 - 0.1) / 0.1);
    near(out[1].measured_ms, 0.2);
    near(t.predicted_ms, 0.55);
    near(t.measured_ms, 0.55);
    near(t.relative_error, 0.0);
    near(t.mean_abs_relative_error, (0.2 + 0.5 + 0.5) / 3.0);
    near(t.energy_proxy_j, 5.0 * 0.55e-3);
    assert_int_equal(t.compared, 3);

    assert_int_equal(prof_predict_layers(&d, layers, 3, NULL, out, &t),
                     PROF_OK);
    assert_true(isnan(out[0].relative_error) && isnan(t.measured_ms) &&
                isnan(t.relative_error));
    near(t.predicted_ms, 0.55);

    const double bad[3] = {0.25, -0.1, 0.1};
    assert_int_equal(prof_predict_layers(&d, layers, 3, bad, out, &t),
                     PROF_E_RANGE);
    const double inf[3] = {0.25, INFINITY, 0.1};
    assert_int_equal(prof_predict_layers(&d, layers, 3, inf, out, &t),
                     PROF_E_RANGE);
    assert_int_equal(prof_predict_layers(&d, layers, 0, NULL, out, &t),
                     PROF_E_INVALID);
    struct prof_device broken = d;
    broken.peak_gmacs = 0.0;
    assert_int_equal(prof_predict(&broken, 1, 1, &p), PROF_E_RANGE);
}

static void test_host_from_calibration(void **state)
{
    (void)state;
    struct prof_calibration cal;
    memset(&cal, 0, sizeof(cal));
    cal.peak.gmacs = 100.0;
    cal.triad.gbps = 12.5;
    cal.memory_mb = 8192;
    struct prof_device d;
    assert_int_equal(prof_device_host(&cal, &d), PROF_OK);
    assert_string_equal(d.name, "host");
    /* one thread's calibrated peak, counted over every online core */
    const long online = sysconf(_SC_NPROCESSORS_ONLN);
    assert_int_equal(d.cores, online < 1 ? 1 : (unsigned)online);
    near(d.peak_gmacs, 100.0 * d.cores);
    near(prof_device_peak_threads(&d, MEMEST_FP32, 1), 100.0);
    near(d.bandwidth_gbps, 12.5);
    near(d.memory_mb, 8192.0);
    assert_true(d.power_watts == 0.0);
    struct prof_prediction p;
    assert_int_equal(prof_predict(&d, 1000000, 1000000, &p), PROF_OK);
    near(p.predicted_ms, 1e6 / 12.5e9 * 1e3); /* memory term */
    /* no power figure: no energy, rather than 0 J */
    assert_true(isnan(p.energy_proxy_j));
    assert_int_equal(d.cache_count, 0); /* no levels calibrated */
    d.power_watts = 2.0;
    assert_int_equal(prof_predict(&d, 1000000, 1000000, &p), PROF_OK);
    near(p.energy_proxy_j, 2.0 * p.predicted_ms / 1000.0);
    /* the vector lanes of the path the peak was measured on */
    assert_int_equal(d.simd_lanes, 0); /* no path */
    static const struct {
        const char *path;
        unsigned lanes;
    } paths[] = {{"avx512", 16}, {"avx2", 8}, {"c", 0}};
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++) {
        cal.peak.path = paths[i].path;
        assert_int_equal(prof_device_host(&cal, &d), PROF_OK);
        assert_int_equal(d.simd_lanes, paths[i].lanes);
    }
}

/* A calibration made up for the test: L1 32 KiB at 200 GB/s, L2 1 MiB at
 * 100 GB/s, L3 16 MiB at 40 GB/s, main memory 10 GB/s, peak 50 GMAC/s. */
static void fake_calibration(struct prof_calibration *cal)
{
    memset(cal, 0, sizeof *cal);
    cal->peak.gmacs = 50.0;
    cal->triad.gbps = 10.0;
    cal->memory_mb = 1024;
    const uint64_t cap[3] = {32 * 1024, 1024 * 1024, 16 * 1024 * 1024};
    const double bw[3] = {200.0, 100.0, 40.0};
    for (unsigned i = 0; i < 3; i++) {
        cal->levels[i].level = i + 1;
        cal->levels[i].capacity_bytes = cap[i];
        cal->levels[i].triad.gbps = bw[i];
    }
    cal->levels[3].level = 0;
    cal->levels[3].triad.gbps = 10.0;
    cal->level_count = 4;
}

static void test_cache_aware(void **state)
{
    (void)state;
    struct prof_calibration cal;
    fake_calibration(&cal);
    struct prof_device d;
    assert_int_equal(prof_device_host(&cal, &d), PROF_OK);
    assert_int_equal(d.cache_count, 3);
    assert_int_equal(d.cache[0].level, 1);
    assert_int_equal(d.cache[2].capacity_bytes, 16 * 1024 * 1024);
    near(d.bandwidth_gbps, 10.0);
    struct prof_prediction p;
    /* 32768 B fit L1 exactly: 32768 / 200e9 s = 1.6384e-4 ms */
    assert_int_equal(prof_predict(&d, 0, 32768, &p), PROF_OK);
    assert_int_equal(p.memory_level, 1);
    near(p.bandwidth_gbps, 200.0);
    near(p.memory_ms, 32768.0 / 200e9 * 1e3);
    /* one byte more goes to L2: 32769 / 100e9 s */
    assert_int_equal(prof_predict(&d, 0, 32769, &p), PROF_OK);
    assert_int_equal(p.memory_level, 2);
    near(p.memory_ms, 32769.0 / 100e9 * 1e3);
    /* 2 MiB: L3, 2097152 / 40e9 s = 0.0524288 ms, against 1e6 MAC at
     * 50 GMAC/s = 0.02 ms: memory-bound */
    assert_int_equal(prof_predict(&d, 1000000, 2097152, &p), PROF_OK);
    assert_int_equal(p.memory_level, 3);
    near(p.predicted_ms, 0.0524288);
    assert_int_equal(p.bound, PROF_BOUND_MEMORY);
    /* 32 MiB: main memory, 33554432 / 10e9 s = 3.3554432 ms */
    assert_int_equal(prof_predict(&d, 0, 33554432, &p), PROF_OK);
    assert_int_equal(p.memory_level, 0);
    near(p.predicted_ms, 3.3554432);
    /* compute-bound in L1: 1e6 MAC = 0.02 ms > 8000 B / 200e9 s */
    assert_int_equal(prof_predict(&d, 1000000, 8000, &p), PROF_OK);
    assert_int_equal(p.bound, PROF_BOUND_COMPUTE);
    near(p.predicted_ms, 0.02);

    /* The plain roofline of the same host: every byte at 10 GB/s. */
    struct prof_device dram = d;
    dram.cache_count = 0;
    assert_int_equal(prof_predict(&dram, 0, 32768, &p), PROF_OK);
    assert_int_equal(p.memory_level, 0);
    near(p.memory_ms, 32768.0 / 10e9 * 1e3);

    /* Both over three layers measured 0.001, 0.05 and 4 ms: cache-aware
     * 1.6384e-4, 0.0524288, 3.3554432 ms. */
    const struct prof_work w[3] = {{0, 32768, 1}, {1000000, 2097152, 1},
                                   {0, 33554432, 1}};
    const double meas[3] = {0.001, 0.05, 4.0};
    struct prof_layer_prediction out[3];
    struct prof_prediction_total t;
    assert_int_equal(prof_predict_layers(&d, w, 3, meas, out, &t), PROF_OK);
    near(out[0].relative_error, (1.6384e-4 - 0.001) / 0.001);
    near(out[1].relative_error, (0.0524288 - 0.05) / 0.05);
    near(out[2].relative_error, (3.3554432 - 4.0) / 4.0);
    near(t.predicted_ms, 1.6384e-4 + 0.0524288 + 3.3554432);
    near(t.relative_error, (1.6384e-4 + 0.0524288 + 3.3554432 - 4.051) /
                               4.051);
    assert_true(isnan(t.energy_proxy_j)); /* the host has no power */

    /* An invalid cache list is rejected. */
    struct prof_device bad = d;
    bad.cache[1].capacity_bytes = bad.cache[0].capacity_bytes;
    assert_int_equal(prof_device_validate(&bad, NULL), PROF_E_RANGE);
    bad = d;
    bad.cache[2].bandwidth_gbps = NAN;
    assert_int_equal(prof_device_validate(&bad, NULL), PROF_E_RANGE);
    bad = d;
    bad.cache_count = PROF_CACHE_LEVELS_MAX + 1;
    assert_int_equal(prof_predict(&bad, 1, 1, &p), PROF_E_RANGE);
}

/* Rows without a measurement or without work have no error and stay out
 * of the mean; the total compares only what was measured. */
static void test_undefined_errors(void **state)
{
    (void)state;
    struct prof_device d;
    assert_int_equal(prof_device_make("t", 10.0, 20.0, 0.0, 0.0, &d, NULL),
                     PROF_OK);
    const struct prof_work w[4] = {
        {0, 0, 1},              /* not a layer: no measurement */
        {4000000, 1000000, 1},  /* 0.2 ms, measured 0.25 */
        {0, 0, 1},              /* no work, measured 0.01 */
        {1000000, 3000000, 1},  /* 0.3 ms, measured 0 (below the clock) */
    };
    const double meas[4] = {NAN, 0.25, 0.01, 0.0};
    struct prof_layer_prediction out[4];
    struct prof_prediction_total t;
    assert_int_equal(prof_predict_layers(&d, w, 4, meas, out, &t), PROF_OK);
    assert_true(isnan(out[0].measured_ms) && isnan(out[0].relative_error));
    near(out[1].relative_error, -0.2);
    assert_true(isnan(out[2].relative_error));
    assert_true(isnan(out[3].relative_error));
    assert_int_equal(t.compared, 1);
    near(t.mean_abs_relative_error, 0.2);
    near(t.predicted_ms, 0.5);
    near(t.measured_ms, 0.26);
    near(t.relative_error, (0.5 - 0.26) / 0.26);
    assert_true(isnan(t.energy_proxy_j) && isnan(out[1].pred.energy_proxy_j));
    /* nothing measured at all */
    const double none[4] = {NAN, NAN, NAN, NAN};
    assert_int_equal(prof_predict_layers(&d, w, 4, none, out, &t), PROF_OK);
    assert_true(isnan(t.measured_ms) && isnan(t.relative_error) &&
                isnan(t.mean_abs_relative_error));
    assert_int_equal(t.compared, 0);
}

static void test_make_and_sources(void **state)
{
    (void)state;
    struct prof_device d;
    struct prof_diag diag = {0, ""};
    assert_int_equal(prof_device_make("board", 12.8, 40.0, 5.0, 2048.0, &d,
                                      &diag),
                     PROF_OK);
    assert_string_equal(d.name, "board");
    near(d.bandwidth_gbps, 12.8);
    near(d.peak_gmacs, 40.0);
    near(d.power_watts, 5.0);
    near(d.memory_mb, 2048.0);
    assert_int_equal(d.cache_count, 0);
    /* the same device as the key=value form */
    struct prof_device e;
    assert_int_equal(prof_device_parse("name=board,bandwidth_gbps=12.8,"
                                       "peak_gmacs=40,power_watts=5,"
                                       "memory_mb=2048",
                                       &e, NULL),
                     PROF_OK);
    assert_memory_equal(&d, &e, sizeof d);
    /* errors leave *out alone and name the field */
    assert_int_equal(prof_device_make("x", 0.0, 1.0, 0.0, 0.0, &d, &diag),
                     PROF_E_RANGE);
    assert_non_null(strstr(diag.message, "bandwidth_gbps"));
    assert_string_equal(d.name, "board");
    assert_int_equal(prof_device_make("x", 1.0, 1.0, -1.0, 0.0, &d, &diag),
                     PROF_E_RANGE);
    assert_non_null(strstr(diag.message, "power_watts"));
    assert_int_equal(prof_device_make("", 1.0, 1.0, 0.0, 0.0, &d, &diag),
                     PROF_E_RANGE);
    char longname[PROF_DEVICE_NAME_MAX + 1];
    memset(longname, 'a', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    assert_int_equal(prof_device_make(longname, 1.0, 1.0, 0.0, 0.0, &d,
                                      NULL),
                     PROF_E_RANGE);
    assert_int_equal(prof_device_make(NULL, 1.0, 1.0, 0.0, 0.0, &d, NULL),
                     PROF_E_INVALID);
    /* every catalogue board has a source for each figure and no caches */
    for (size_t i = 0; i < prof_device_catalog_count(); i++) {
        const char *src = prof_device_catalog_source(i);
        assert_non_null(src);
        assert_non_null(strstr(src, "bandwidth"));
        assert_non_null(strstr(src, "peak"));
        assert_non_null(strstr(src, "power"));
        assert_non_null(strstr(src, "memory"));
        assert_int_equal(prof_device_catalog(i)->cache_count, 0);
    }
    assert_null(prof_device_catalog_source(prof_device_catalog_count()));
}

/* Cores: the catalogue's peaks count every core of the board, a run on T
 * threads is predicted at min(T, cores) of them (hand-computed), and a
 * description may say how many cores its peak counts. */
static void test_cores(void **state)
{
    (void)state;
    /* rpi3bplus, rpizero2w, rpi4, rpi4-1.8, rpi5, jetson-nano,
     * jetson-orin-nano, desktop */
    const unsigned want[] = {4, 4, 4, 4, 4, 4, 6, 8};
    assert_int_equal(prof_device_catalog_count(),
                     sizeof want / sizeof want[0]);
    for (size_t i = 0; i < prof_device_catalog_count(); i++) {
        const struct prof_device *c = prof_device_catalog(i);
        assert_int_equal(c->cores, want[i]);
        assert_non_null(strstr(prof_device_catalog_source(i), "cores"));
    }
    struct prof_device rpi;
    assert_int_equal(prof_device_lookup("rpi4", &rpi, NULL), PROF_OK);
    near(prof_device_peak_threads(&rpi, MEMEST_FP32, 0), 6.0);
    near(prof_device_peak_threads(&rpi, MEMEST_FP32, 1), 6.0);
    near(prof_device_peak_threads(&rpi, MEMEST_FP32, 2), 12.0);
    near(prof_device_peak_threads(&rpi, MEMEST_INT8, 4), 48.0);
    near(prof_device_peak_threads(&rpi, MEMEST_FP32, 9), 24.0);
    /* 6e6 MACs and 43 bytes on one core of the Pi: 6e6 / 6e9 s = 1 ms;
     * on two cores 0.5 ms; the memory term 1e-8 ms */
    struct prof_prediction p;
    assert_int_equal(prof_predict(&rpi, 6000000, 43, &p), PROF_OK);
    near(p.compute_ms, 1.0);
    near(p.peak_gmacs, 6.0);
    assert_int_equal(p.threads, 1);
    assert_int_equal(prof_predict_threads(&rpi, 6000000, 43, 2, &p),
                     PROF_OK);
    near(p.compute_ms, 0.5);
    assert_int_equal(p.threads, 2);
    /* layers carry their own thread counts */
    const struct prof_work w[2] = {{6000000, 43, 1}, {6000000, 43, 4}};
    struct prof_layer_prediction out[2];
    struct prof_prediction_total t;
    assert_int_equal(prof_predict_layers(&rpi, w, 2, NULL, out, &t),
                     PROF_OK);
    near(out[0].pred.predicted_ms, 1.0);
    near(out[1].pred.predicted_ms, 0.25);
    near(t.predicted_ms, 1.25);

    /* a description: cores defaults to 1 (the peak is one core's) */
    struct prof_device d;
    struct prof_diag diag;
    assert_int_equal(prof_device_parse("name=b,bandwidth_gbps=1,"
                                       "peak_gmacs=40,cores=8", &d, &diag),
                     PROF_OK);
    assert_int_equal(d.cores, 8);
    near(prof_device_peak_threads(&d, MEMEST_FP32, 2), 10.0);
    assert_int_equal(prof_device_parse("name=b,bandwidth_gbps=1,"
                                       "peak_gmacs=40", &d, &diag),
                     PROF_OK);
    assert_int_equal(prof_device_cores(&d), 1);
    near(prof_device_peak_threads(&d, MEMEST_FP32, 2), 40.0);
    const char *bad[] = {"cores=0", "cores=2.5", "cores=5000", "cores=-1"};
    for (size_t i = 0; i < 4; i++) {
        char spec[128];
        snprintf(spec, sizeof spec, "name=b,bandwidth_gbps=1,peak_gmacs=4,%s",
                 bad[i]);
        assert_int_equal(prof_device_parse(spec, &d, &diag), PROF_E_RANGE);
        assert_non_null(strstr(diag.message, "cores"));
        assert_int_equal(diag.column, 44); /* the value */
    }
    d.cores = PROF_DEVICE_CORES_MAX + 1;
    assert_int_equal(prof_device_validate(&d, NULL), PROF_E_RANGE);
}

/* The three predictions the profile apps share, by hand from a made-up
 * calibration (one thread at 50 GMAC/s; L1 32 KiB at 200 GB/s, L2 1 MiB at
 * 100, L3 16 MiB at 40, DRAM 10) and a profile of three rows: the input
 * staging, a layer of 5e6 MACs and 40 KiB on one thread, one of 2e8 MACs
 * and 4 MiB on two threads. */
static void test_predict_all(void **state)
{
    (void)state;
    struct prof_calibration cal;
    fake_calibration(&cal);
    struct prof_exec_op_row rows[3];
    memset(rows, 0, sizeof rows);
    rows[0].info.kind = MEMEST_KIND_INPUT;
    rows[0].info.bytes_moved = 1000;
    rows[0].info.threads = 1;
    rows[0].latency_ms = 0.001;
    rows[1].info.kind = MEMEST_KIND_DENSE;
    rows[1].info.macs = 5000000;
    rows[1].info.bytes_moved = 40960;
    rows[1].info.threads = 1;
    rows[1].latency_ms = 0.2;
    rows[2].info.kind = MEMEST_KIND_CONV2D;
    rows[2].info.macs = 200000000;
    rows[2].info.bytes_moved = 4194304;
    rows[2].info.threads = 2;
    rows[2].latency_ms = 3.0;
    struct prof_exec_profile p;
    memset(&p, 0, sizeof p);
    p.count = 3;
    p.ops = rows;
    p.precision = MEMEST_FP32;

    struct prof_exec_predictions pr;
    struct prof_device rpi;
    assert_int_equal(prof_device_lookup("rpi4", &rpi, NULL), PROF_OK);
    assert_int_equal(prof_exec_predict_all(&p, &cal, &rpi, 5.0, &pr),
                     PROF_OK);
    assert_int_equal(pr.count, 3);
    /* the input row is not predicted */
    assert_true(isnan(pr.host_pred[0].measured_ms));
    assert_true(pr.device_pred[0].pred.predicted_ms == 0.0);
    /* host, cache-aware: row 1 in L2 (40 KiB > 32 KiB): max(5e6 / 50e9,
     * 40960 / 100e9) s = 0.1 ms; row 2 in L3 on two cores: max(2e8 /
     * 100e9, 4194304 / 40e9) s = 2 ms */
    near(pr.host_pred[1].pred.predicted_ms, 0.1);
    assert_int_equal(pr.host_pred[1].pred.memory_level, 2);
    near(pr.host_pred[2].pred.predicted_ms,
         cal.peak.gmacs * prof_device_cores(&pr.host) >= 100.0 ? 2.0
                                                               : 4.0);
    near(pr.host_pred[1].relative_error, (0.1 - 0.2) / 0.2);
    near(pr.host_total.measured_ms, 3.2);
    /* the same host on DRAM only: row 1 max(0.1, 0.004096) ms */
    assert_int_equal(pr.host_dram.cache_count, 0);
    near(pr.dram_pred[1].pred.predicted_ms, 0.1);
    near(pr.dram_pred[2].pred.memory_ms, 4194304 / 10e9 * 1e3);
    /* rpi4: one core 6 GMAC/s, two cores 12; 5.127 GB/s; 5 W given */
    near(pr.device_pred[1].pred.predicted_ms,
         fmax(5e6 / 6e9, 40960 / 5.127e9) * 1e3);
    near(pr.device_pred[2].pred.predicted_ms,
         fmax(2e8 / 12e9, 4194304 / 5.127e9) * 1e3);
    near(pr.device_total.energy_proxy_j,
         5.0 * pr.device_total.predicted_ms / 1000.0);
    assert_true(pr.host.power_watts == 5.0);
    prof_exec_predictions_finish(&pr);
    assert_null(pr.host_pred);

    /* no device: the host; no power: unknown */
    assert_int_equal(prof_exec_predict_all(&p, &cal, NULL, 0.0, &pr),
                     PROF_OK);
    assert_string_equal(pr.device.name, "host");
    near(pr.device_total.predicted_ms, pr.host_total.predicted_ms);
    assert_true(isnan(pr.device_total.energy_proxy_j));
    prof_exec_predictions_finish(&pr);
    assert_int_equal(prof_exec_predict_all(&p, &cal, NULL, -1.0, &pr),
                     PROF_E_RANGE);
    assert_int_equal(prof_exec_predict_all(NULL, &cal, NULL, 0.0, &pr),
                     PROF_E_INVALID);
    cal.peak.gmacs = NAN;
    assert_int_equal(prof_exec_predict_all(&p, &cal, NULL, 0.0, &pr),
                     PROF_E_RANGE);
    assert_null(pr.host_pred);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_catalog),
        cmocka_unit_test(test_parse_ok),
        cmocka_unit_test(test_parse_errors),
        cmocka_unit_test(test_predict_by_hand),
        cmocka_unit_test(test_host_from_calibration),
        cmocka_unit_test(test_cache_aware),
        cmocka_unit_test(test_undefined_errors),
        cmocka_unit_test(test_make_and_sources),
        cmocka_unit_test(test_cores),
        cmocka_unit_test(test_predict_all),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
