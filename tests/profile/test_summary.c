/*
 * Summaries against values worked out by hand: summarize_hardware's
 * formulas and clamps, the roofline knee and bound, the utilisation
 * reading's thresholds, compute_utilization, a libmemest model, and the
 * precision trade-off aggregation against a hand-made table.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <math.h>
#include <string.h>

#include "edgefit/profile.h"

static void near(double got, double want)
{
    const double tol = 1e-12 * fmax(1.0, fabs(want));
    if (!(fabs(got - want) <= tol)) {
        fail_msg("got %.17g, want %.17g", got, want);
    }
}

static const struct prof_layer_cost two_layers[2] = {
    {.parameter_bytes = 1000, .activation_bytes = 3000, .macs = 8000},
    {.parameter_bytes = 0, .activation_bytes = 1000, .macs = 2000},
};

static void test_summary_by_hand(void **state)
{
    (void)state;
    struct prof_hw_summary s;
    assert_int_equal(prof_summarize_hardware(two_layers, 2, 2.0, 4.3, 24.0,
                                             &s),
                     PROF_OK);
    near(s.estimated_total_bytes, 5000.0);
    near(s.estimated_total_macs, 10000.0);
    near(s.latency_ms, 2.0);
    /* 5000 B / 0.002 s = 2.5e6 B/s = 2.5e-3 GB/s */
    near(s.achieved_bandwidth_gbps, 2.5e-3);
    near(s.configured_memory_bandwidth_gbps, 4.3);
    near(s.bandwidth_utilization, 2.5e-3 / 4.3);
    /* 10000 MAC / 0.002 s = 5e6 MAC/s */
    near(s.achieved_gmacs, 5e-3);
    near(s.peak_gmacs, 24.0);
    near(s.arithmetic_intensity, 2.0);
    near(s.roofline_knee, 24.0 / 4.3);
    assert_int_equal(s.bound, PROF_BOUND_MEMORY); /* 2 < 5.58 */
    near(s.compute_utilization, 5e-3 / 24.0);
    assert_string_equal(s.reading, "compute-bound or inefficient");

    /* A knee below the intensity: compute-bound. 24 / 20 = 1.2 < 2. */
    assert_int_equal(prof_summarize_hardware(two_layers, 2, 2.0, 20.0, 24.0,
                                             &s),
                     PROF_OK);
    assert_int_equal(s.bound, PROF_BOUND_COMPUTE);
    /* Intensity equal to the knee counts as compute (not below it). */
    assert_int_equal(prof_summarize_hardware(two_layers, 2, 2.0, 12.0, 24.0,
                                             &s),
                     PROF_OK);
    near(s.roofline_knee, 2.0);
    assert_int_equal(s.bound, PROF_BOUND_COMPUTE);
}

static void test_summary_clamps(void **state)
{
    (void)state;
    struct prof_hw_summary s;
    /* latency 0 -> 1e-9 s: 5000 B / 1e-9 s = 5e12 B/s = 5000 GB/s */
    assert_int_equal(prof_summarize_hardware(two_layers, 2, 0.0, 4.3, 24.0,
                                             &s),
                     PROF_OK);
    near(s.achieved_bandwidth_gbps, 5000.0);
    near(s.achieved_gmacs, 10000.0);
    assert_string_equal(s.reading, "memory-bound");
    near(s.compute_utilization, 1.0); /* clamped */
    /* 1e-7 ms = 1e-10 s, also below the clamp */
    assert_int_equal(prof_summarize_hardware(two_layers, 2, 1e-7, 4.3, 24.0,
                                             &s),
                     PROF_OK);
    near(s.achieved_bandwidth_gbps, 5000.0);
    /* bandwidth 0 -> 1e-9 in the utilisation and the knee */
    assert_int_equal(prof_summarize_hardware(two_layers, 2, 2.0, 0.0, 24.0,
                                             &s),
                     PROF_OK);
    /* 2.5e-3 / 1e-9 of the roof: capped at 1 and flagged */
    near(s.bandwidth_utilization, 1.0);
    assert_true(s.above_roof);
    near(s.roofline_knee, 24.0 / 1e-9);
    /* bytes 0: intensity +inf with MACs, 0 without */
    const struct prof_layer_cost only_macs = {0, 0, 10};
    const struct prof_layer_cost nothing = {0, 0, 0};
    assert_int_equal(prof_summarize_hardware(&only_macs, 1, 1.0, 4.3, 24.0,
                                             &s),
                     PROF_OK);
    assert_true(isinf(s.arithmetic_intensity));
    assert_int_equal(s.bound, PROF_BOUND_COMPUTE);
    assert_int_equal(prof_summarize_hardware(&nothing, 1, 1.0, 4.3, 24.0,
                                             &s),
                     PROF_OK);
    assert_true(s.arithmetic_intensity == 0.0);
}

static void test_summary_errors(void **state)
{
    (void)state;
    struct prof_hw_summary s;
    assert_int_equal(prof_summarize_hardware(NULL, 1, 1.0, 1.0, 1.0, &s),
                     PROF_E_INVALID);
    assert_int_equal(prof_summarize_hardware(two_layers, 0, 1.0, 1.0, 1.0,
                                             &s),
                     PROF_E_INVALID);
    assert_int_equal(prof_summarize_hardware(two_layers, 2, -1.0, 1.0, 1.0,
                                             &s),
                     PROF_E_RANGE);
    assert_int_equal(prof_summarize_hardware(two_layers, 2, NAN, 1.0, 1.0,
                                             &s),
                     PROF_E_RANGE);
    assert_int_equal(prof_summarize_hardware(two_layers, 2, 1.0, -4.3, 1.0,
                                             &s),
                     PROF_E_RANGE);
    assert_int_equal(prof_summarize_hardware(two_layers, 2, 1.0, 4.3, 0.0,
                                             &s),
                     PROF_E_RANGE);
    const struct prof_layer_cost huge[2] = {
        {UINT64_MAX, 0, 0},
        {1, 0, 0},
    };
    assert_int_equal(prof_summarize_hardware(huge, 2, 1.0, 1.0, 1.0, &s),
                     PROF_E_OVERFLOW);
    const struct prof_layer_cost split[1] = {{UINT64_MAX, 1, 0}};
    assert_int_equal(prof_summarize_hardware(split, 1, 1.0, 1.0, 1.0, &s),
                     PROF_E_OVERFLOW);
}

static void test_reading_thresholds(void **state)
{
    (void)state;
    assert_string_equal(prof_utilization_reading(0.81), "memory-bound");
    assert_string_equal(prof_utilization_reading(1.7), "memory-bound");
    assert_string_equal(prof_utilization_reading(0.8), "balanced");
    assert_string_equal(prof_utilization_reading(0.5), "balanced");
    assert_string_equal(prof_utilization_reading(0.2), "balanced");
    assert_string_equal(prof_utilization_reading(0.19),
                        "compute-bound or inefficient");
    assert_string_equal(prof_utilization_reading(0.0),
                        "compute-bound or inefficient");
    assert_string_equal(prof_bound_name(PROF_BOUND_MEMORY), "memory");
    assert_string_equal(prof_bound_name(PROF_BOUND_COMPUTE), "compute");
}

static void test_compute_utilization(void **state)
{
    (void)state;
    double u;
    /* 1e9 MAC in 100 ms = 10 GMAC/s of a 40 GMAC/s peak */
    assert_int_equal(prof_compute_utilization(1e9, 100.0, 40.0, &u),
                     PROF_OK);
    near(u, 0.25);
    assert_int_equal(prof_compute_utilization(1e9, 10.0, 40.0, &u),
                     PROF_OK);
    near(u, 1.0); /* 100 GMAC/s, clamped */
    assert_int_equal(prof_compute_utilization(0.0, 10.0, 40.0, &u),
                     PROF_OK);
    near(u, 0.0);
    assert_int_equal(prof_compute_utilization(1e3, 0.0, 1e9, &u), PROF_OK);
    near(u, 1e3 / 1e-9 / 1e9 / 1e9); /* the 1e-9 s clamp */
    assert_int_equal(prof_compute_utilization(-1.0, 1.0, 1.0, &u),
                     PROF_E_RANGE);
    assert_int_equal(prof_compute_utilization(1.0, 1.0, 0.0, &u),
                     PROF_E_RANGE);
    assert_int_equal(prof_compute_utilization(1.0, NAN, 1.0, &u),
                     PROF_E_RANGE);
    assert_int_equal(prof_compute_utilization(1.0, 1.0, 1.0, NULL),
                     PROF_E_INVALID);
}

static void test_model_summary(void **state)
{
    (void)state;
    memest_model *m = NULL;
    assert_int_equal(memest_model_preset("mlp:784-64-10", &m, NULL),
                     MEMEST_OK);
    struct prof_hw_summary s;
    assert_int_equal(prof_summarize_model(m, 32, MEMEST_FP32, 1.0, 4.3,
                                          24.0, &s),
                     PROF_OK);
    /* parameters 784*64+64 + 64*10+10 = 50890, x 4 bytes */
    /* activations 32 * (784 + 64 + 10) = 27456 elements, x 4 bytes */
    near(s.estimated_total_bytes, 50890.0 * 4 + 27456.0 * 4);
    /* MACs 32 * (784*64 + 64*10) */
    near(s.estimated_total_macs, 32.0 * (784 * 64 + 64 * 10));
    near(s.achieved_bandwidth_gbps, (50890.0 + 27456.0) * 4 / 1e-3 / 1e9);
    near(s.arithmetic_intensity,
         32.0 * 50816 / ((50890.0 + 27456.0) * 4));
    assert_int_equal(prof_summarize_model(m, 16, MEMEST_FP16, 1.0, 4.3,
                                          24.0, &s),
                     PROF_OK);
    near(s.estimated_total_bytes, 50890.0 * 2 + 16.0 * 858 * 2);
    assert_int_equal(prof_summarize_model(m, 0, MEMEST_FP32, 1.0, 4.3,
                                          24.0, &s),
                     PROF_E_MEMEST);
    assert_int_equal(prof_summarize_model(NULL, 1, MEMEST_FP32, 1.0, 4.3,
                                          24.0, &s),
                     PROF_E_INVALID);
    memest_model_destroy(m);
}

static void test_tradeoff_table(void **state)
{
    (void)state;
    const struct prof_sweep_row rows[] = {
        {"fp32", 0.90, 10.0, 4.0, 0.020, true},
        {"int8", 0.70, 6.0, 1.0, 0.012, true},
        {"fp16", 0.85, 6.0, 2.0, 0.012, true},
        {"fp32", 0.80, 12.0, 4.0, 0.024, false},
        {"int8", 0.75, 6.0, 1.0, 0.010, false},
        {"bf16", 0.84, 8.0, 2.0, 0.016, false},
    };
    /* By hand: fp16 (6.0) and int8 (6.0) tie, name order puts fp16 first;
     * then bf16 (8.0), fp32 (11.0). */
    const struct prof_tradeoff_row want[] = {
        {"fp16", 1, 0.85, 6.0, 2.0, 0.012, 1.0},
        {"int8", 2, 0.725, 6.0, 1.0, 0.011, 0.5},
        {"bf16", 1, 0.84, 8.0, 2.0, 0.016, 0.0},
        {"fp32", 2, 0.85, 11.0, 4.0, 0.022, 0.5},
    };
    struct prof_tradeoff_row out[6];
    size_t n = 0;
    assert_int_equal(prof_precision_tradeoff(rows, 6, out, 6, &n), PROF_OK);
    assert_int_equal(n, 4);
    for (size_t i = 0; i < 4; i++) {
        assert_string_equal(out[i].precision, want[i].precision);
        assert_int_equal(out[i].count, want[i].count);
        near(out[i].accuracy_mean, want[i].accuracy_mean);
        near(out[i].latency_ms_mean, want[i].latency_ms_mean);
        near(out[i].memory_mb_mean, want[i].memory_mb_mean);
        near(out[i].energy_proxy_j_mean, want[i].energy_proxy_j_mean);
        near(out[i].accepted_ratio, want[i].accepted_ratio);
    }
    /* too little room: the count needed comes back */
    assert_int_equal(prof_precision_tradeoff(rows, 6, out, 3, &n),
                     PROF_E_RANGE);
    assert_int_equal(n, 4);
    const struct prof_sweep_row bad[] = {{"fp32", NAN, 1.0, 1.0, 1.0, 1}};
    const struct prof_sweep_row unnamed[] = {{"", 1.0, 1.0, 1.0, 1.0, 1}};
    assert_int_equal(prof_precision_tradeoff(bad, 1, out, 6, &n),
                     PROF_E_RANGE);
    assert_int_equal(prof_precision_tradeoff(unnamed, 1, out, 6, &n),
                     PROF_E_INVALID);
    assert_int_equal(prof_precision_tradeoff(rows, 0, out, 6, &n),
                     PROF_E_INVALID);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_summary_by_hand),
        cmocka_unit_test(test_summary_clamps),
        cmocka_unit_test(test_summary_errors),
        cmocka_unit_test(test_reading_thresholds),
        cmocka_unit_test(test_compute_utilization),
        cmocka_unit_test(test_model_summary),
        cmocka_unit_test(test_tradeoff_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
