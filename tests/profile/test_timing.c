/*
 * Timing: the statistics on fixed arrays of fake durations worked out by
 * hand, their errors, and the harness's call counts and lower bounds (a
 * sleep of d ms can only be measured as >= d ms, so no bound can flake).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <math.h>
#include <time.h>

#include "edgefit/profile.h"

#define TOL 1e-12

static void test_odd_count(void **state)
{
    (void)state;
    const double v[5] = {5.0, 1.0, 4.0, 2.0, 3.0};
    struct prof_stats s;
    assert_int_equal(prof_stats_compute(v, 5, 1.0, &s), PROF_OK);
    assert_int_equal(s.count, 5);
    assert_true(fabs(s.min_ms - 1.0) < TOL);
    assert_true(fabs(s.max_ms - 5.0) < TOL);
    assert_true(fabs(s.median_ms - 3.0) < TOL);
    /* rank 0.9 * 4 = 3.6: 4 + 0.6 * (5 - 4) */
    assert_true(fabs(s.p90_ms - 4.6) < TOL);
    assert_true(fabs(s.mean_ms - 3.0) < TOL);
    /* squares of deviations 4 + 1 + 0 + 1 + 4 = 10, / (5 - 1) */
    assert_true(fabs(s.stddev_ms - sqrt(2.5)) < TOL);
    /* |v - 3| = {2, 2, 1, 1, 0}: median 1 */
    assert_true(fabs(s.mad_ms - 1.0) < TOL);
    /* the input is not reordered */
    assert_true(v[0] == 5.0 && v[4] == 3.0);
}

static void test_even_count_and_multiplier(void **state)
{
    (void)state;
    const double v[4] = {10.0, 2.0, 1.0, 3.0};
    struct prof_stats s;
    assert_int_equal(prof_stats_compute(v, 4, 1.0, &s), PROF_OK);
    assert_true(fabs(s.median_ms - 2.5) < TOL);
    /* rank 0.9 * 3 = 2.7: 3 + 0.7 * (10 - 3) */
    assert_true(fabs(s.p90_ms - 7.9) < TOL);
    assert_true(fabs(s.mean_ms - 4.0) < TOL);
    /* deviations -3 -2 -1 6: 9 + 4 + 1 + 36 = 50, / 3 */
    assert_true(fabs(s.stddev_ms - sqrt(50.0 / 3.0)) < TOL);
    /* |v - 2.5| = {7.5, 0.5, 1.5, 0.5}: sorted 0.5 0.5 1.5 7.5 -> 1.0 */
    assert_true(fabs(s.mad_ms - 1.0) < TOL);

    /* latency_multiplier scales every statistic */
    struct prof_stats m;
    assert_int_equal(prof_stats_compute(v, 4, 2.5, &m), PROF_OK);
    assert_true(fabs(m.min_ms - 2.5) < TOL);
    assert_true(fabs(m.median_ms - 6.25) < TOL);
    assert_true(fabs(m.p90_ms - 7.9 * 2.5) < 1e-11);
    assert_true(fabs(m.max_ms - 25.0) < TOL);
    assert_true(fabs(m.stddev_ms - 2.5 * sqrt(50.0 / 3.0)) < 1e-11);
    assert_true(fabs(m.mad_ms - 2.5) < TOL);
}

static void test_single_sample(void **state)
{
    (void)state;
    const double v[1] = {0.75};
    struct prof_stats s;
    assert_int_equal(prof_stats_compute(v, 1, 1.0, &s), PROF_OK);
    assert_true(s.min_ms == 0.75 && s.median_ms == 0.75 &&
                s.p90_ms == 0.75 && s.max_ms == 0.75);
    assert_true(s.stddev_ms == 0.0 && s.mad_ms == 0.0);
}

static void test_stats_errors(void **state)
{
    (void)state;
    struct prof_stats s;
    const double ok[2] = {1.0, 2.0};
    const double neg[2] = {1.0, -2.0};
    const double nan_v[2] = {1.0, NAN};
    const double inf_v[2] = {INFINITY, 1.0};
    assert_int_equal(prof_stats_compute(NULL, 2, 1.0, &s), PROF_E_INVALID);
    assert_int_equal(prof_stats_compute(ok, 0, 1.0, &s), PROF_E_INVALID);
    assert_int_equal(prof_stats_compute(ok, 2, 1.0, NULL), PROF_E_INVALID);
    assert_int_equal(prof_stats_compute(neg, 2, 1.0, &s), PROF_E_RANGE);
    assert_int_equal(prof_stats_compute(nan_v, 2, 1.0, &s), PROF_E_RANGE);
    assert_int_equal(prof_stats_compute(inf_v, 2, 1.0, &s), PROF_E_RANGE);
    assert_int_equal(prof_stats_compute(ok, 2, 0.0, &s), PROF_E_RANGE);
    assert_int_equal(prof_stats_compute(ok, 2, -1.0, &s), PROF_E_RANGE);
    assert_int_equal(prof_stats_compute(ok, 2, NAN, &s), PROF_E_RANGE);
}

struct counter {
    unsigned calls;
    unsigned fail_at; /* 0: never */
    long sleep_ns;
};

static int count_call(void *ctx)
{
    struct counter *c = ctx;
    c->calls++;
    if (c->sleep_ns > 0) {
        struct timespec ts = {0, c->sleep_ns};
        while (nanosleep(&ts, &ts) != 0) {
        }
    }
    return c->fail_at != 0 && c->calls == c->fail_at ? -1 : 0;
}

static void test_harness_counts(void **state)
{
    (void)state;
    struct prof_time_opts o;
    prof_time_opts_init(&o);
    assert_int_equal(o.repeats, 5); /* edge_opt's benchmark_repeats */
    assert_true(o.latency_multiplier == 1.0);
    o.warmup = 3;
    o.repeats = 7;
    struct counter c = {0, 0, 0};
    struct prof_stats s;
    double samples[7];
    assert_int_equal(prof_time(count_call, &c, &o, &s, samples), PROF_OK);
    assert_int_equal(c.calls, 10);
    assert_int_equal(s.count, 7);
    assert_int_equal(s.calls_per_sample, 1);
    /* the stats are those of the returned samples */
    struct prof_stats again;
    assert_int_equal(prof_stats_compute(samples, 7, 1.0, &again), PROF_OK);
    assert_true(again.median_ms == s.median_ms && again.max_ms == s.max_ms);
    assert_true(s.min_ms >= 0.0 && s.min_ms <= s.median_ms &&
                s.median_ms <= s.p90_ms && s.p90_ms <= s.max_ms);

    /* NULL options: the defaults, 2 warm-up + 5 */
    c.calls = 0;
    assert_int_equal(prof_time(count_call, &c, NULL, &s, NULL), PROF_OK);
    assert_int_equal(c.calls, 7);
}

static void test_harness_lower_bound(void **state)
{
    (void)state;
    struct prof_time_opts o = {.warmup = 0, .repeats = 3,
                               .latency_multiplier = 3.0};
    struct counter c = {0, 0, 2000000}; /* 2 ms */
    struct prof_stats s;
    double raw[3];
    assert_int_equal(prof_time(count_call, &c, &o, &s, raw), PROF_OK);
    for (int i = 0; i < 3; i++) {
        assert_true(raw[i] >= 2.0);
    }
    assert_true(s.min_ms >= 6.0); /* multiplied */
    assert_true(fabs(s.min_ms - 3.0 * fmin(raw[0], fmin(raw[1], raw[2]))) <
                1e-9);
}

static void test_harness_grouping(void **state)
{
    (void)state;
    /* Each call sleeps 2 ms, so the first group of one call already lasts
     * min_sample_ms = 1: exactly warm-up + 1 (the group search) + repeats
     * calls, one per sample. */
    struct prof_time_opts o = {.warmup = 2, .repeats = 3,
                               .latency_multiplier = 1.0,
                               .min_sample_ms = 1.0};
    struct counter c = {0, 0, 2000000};
    struct prof_stats s;
    assert_int_equal(prof_time(count_call, &c, &o, &s, NULL), PROF_OK);
    assert_int_equal(c.calls, 2 + 1 + 3);
    assert_int_equal(s.calls_per_sample, 1);
    assert_true(s.min_ms >= 2.0);

    /* A call that takes no time is grouped: the search doubles from 1 to
     * the final group g (1 + 2 + ... + g = 2g - 1 calls), then 4 samples
     * of g calls each. */
    o = (struct prof_time_opts){.warmup = 0, .repeats = 4,
                                .latency_multiplier = 1.0,
                                .min_sample_ms = 0.01};
    c = (struct counter){0, 0, 0};
    assert_int_equal(prof_time(count_call, &c, &o, &s, NULL), PROF_OK);
    const uint64_t g = s.calls_per_sample;
    assert_true(g >= 1 && (g & (g - 1)) == 0); /* a power of two */
    assert_int_equal(c.calls, (2 * g - 1) + 4 * g);

    o.min_sample_ms = -1.0;
    assert_int_equal(prof_time(count_call, &c, &o, &s, NULL), PROF_E_RANGE);
    o.min_sample_ms = NAN;
    assert_int_equal(prof_time(count_call, &c, &o, &s, NULL), PROF_E_RANGE);
    /* a failure inside a group is reported */
    o.min_sample_ms = 0.01;
    c = (struct counter){0, 3, 0};
    assert_int_equal(prof_time(count_call, &c, &o, &s, NULL),
                     PROF_E_CALLBACK);
}

/* A callback whose first call is slow (100 ms, a cold start) and the
 * others return at once: the gap is far above what a loaded machine's
 * scheduler adds to a call, so the orderings below cannot flip. */
static int cold_call(void *ctx)
{
    unsigned *calls = ctx;
    if (++*calls == 1) {
        struct timespec ts = {0, 100000000L};
        while (nanosleep(&ts, &ts) != 0) {
        }
    }
    return 0;
}

static void test_harness_first_and_warmup(void **state)
{
    (void)state;
    /* The cold call is the first warm-up call: first_ms holds it, the
     * warm-up mean is (100 + 0) / 2 at least, the samples do not see it. */
    struct prof_time_opts o = {.warmup = 2, .repeats = 3,
                               .latency_multiplier = 2.0};
    unsigned calls = 0;
    struct prof_stats s;
    assert_int_equal(prof_time(cold_call, &calls, &o, &s, NULL), PROF_OK);
    assert_true(s.first_ms >= 200.0);            /* multiplied */
    assert_true(s.warmup_mean_ms >= 100.0 && s.warmup_mean_ms < s.first_ms);
    assert_true(s.max_ms < s.first_ms);
    /* no warm-up: the first sample is the cold call */
    o = (struct prof_time_opts){.warmup = 0, .repeats = 3,
                                .latency_multiplier = 1.0};
    calls = 0;
    assert_int_equal(prof_time(cold_call, &calls, &o, &s, NULL), PROF_OK);
    assert_true(s.first_ms >= 100.0 && s.first_ms == s.max_ms);
    assert_true(isnan(s.warmup_mean_ms));
    /* no warm-up, grouped: the group search's first call */
    o.min_sample_ms = 0.5;
    calls = 0;
    assert_int_equal(prof_time(cold_call, &calls, &o, &s, NULL), PROF_OK);
    assert_true(s.first_ms >= 100.0 && s.max_ms < s.first_ms);
    /* prof_stats_compute has no call to time */
    const double v[2] = {1.0, 2.0};
    assert_int_equal(prof_stats_compute(v, 2, 1.0, &s), PROF_OK);
    assert_true(isnan(s.first_ms) && isnan(s.warmup_mean_ms));
}

static void test_harness_errors(void **state)
{
    (void)state;
    struct prof_time_opts o;
    prof_time_opts_init(&o);
    struct counter c = {0, 4, 0};
    struct prof_stats s;
    assert_int_equal(prof_time(count_call, &c, &o, &s, NULL),
                     PROF_E_CALLBACK);
    assert_int_equal(c.calls, 4); /* stops at the failure */
    c = (struct counter){0, 1, 0};
    assert_int_equal(prof_time(count_call, &c, &o, &s, NULL),
                     PROF_E_CALLBACK); /* fails during warm-up */
    assert_int_equal(prof_time(NULL, &c, &o, &s, NULL), PROF_E_INVALID);
    assert_int_equal(prof_time(count_call, &c, &o, NULL, NULL),
                     PROF_E_INVALID);
    o.repeats = 0;
    assert_int_equal(prof_time(count_call, &c, &o, &s, NULL), PROF_E_RANGE);
    o.repeats = 1;
    o.latency_multiplier = 0.0;
    assert_int_equal(prof_time(count_call, &c, &o, &s, NULL), PROF_E_RANGE);
}

/* The thread's CPU clock does not count a sleep, which the wall clock
 * must: 20 ms asleep is >= 20 ms of wall time and some microseconds of
 * CPU (waking up), far under 10 ms however loaded the machine. */
/* Busy for 20 ms of this thread's CPU time. */
static int spin_cpu(void *ctx)
{
    (void)ctx;
    struct timespec t0, t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
    do {
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    } while ((double)(t.tv_sec - t0.tv_sec) * 1e3 +
                 (double)(t.tv_nsec - t0.tv_nsec) / 1e6 <
             20.0);
    return 0;
}

static void test_harness_thread_cpu_clock(void **state)
{
    (void)state;
    struct prof_time_opts o;
    prof_time_opts_init(&o);
    assert_int_equal(o.clock, PROF_CLOCK_WALL);
    o.warmup = 0;
    o.repeats = 3;
    struct counter c = {0, 0, 20000000}; /* 20 ms */
    struct prof_stats s;
    double raw[3];
    assert_int_equal(prof_time(count_call, &c, &o, &s, raw), PROF_OK);
    for (int i = 0; i < 3; i++) {
        assert_true(raw[i] >= 20.0);
    }
    o.clock = PROF_CLOCK_THREAD_CPU;
    assert_int_equal(prof_time(count_call, &c, &o, &s, raw), PROF_OK);
    for (int i = 0; i < 3; i++) {
        assert_true(raw[i] >= 0.0 && raw[i] < 10.0);
    }
    /* wall time less the run-queue delay: a sleep is no wait for a core,
     * so it counts whole */
    o.clock = PROF_CLOCK_UNQUEUED;
    assert_int_equal(prof_time(count_call, &c, &o, &s, raw), PROF_OK);
    for (int i = 0; i < 3; i++) {
        assert_true(raw[i] >= 20.0);
    }
    /* and work counts at least its CPU time, however loaded the machine
     * (wall time is on-cpu plus queued plus asleep) */
    assert_int_equal(prof_time(spin_cpu, NULL, &o, &s, raw), PROF_OK);
    for (int i = 0; i < 3; i++) {
        assert_true(raw[i] >= 20.0 * 0.999);
    }
    o.clock = (enum prof_clock)7;
    assert_int_equal(prof_time(count_call, &c, &o, &s, NULL), PROF_E_RANGE);
}

static void test_clock_monotonic(void **state)
{
    (void)state;
    uint64_t prev = prof_now_ns();
    for (int i = 0; i < 1000; i++) {
        const uint64_t t = prof_now_ns();
        assert_true(t >= prev);
        prev = t;
    }
}

static void test_strerror(void **state)
{
    (void)state;
    for (int st = PROF_OK; st <= PROF_E_MEMEST; st++) {
        assert_string_not_equal(prof_strerror(st), "unknown status");
    }
    assert_string_equal(prof_strerror(-1), "unknown status");
    assert_string_equal(prof_strerror(1000), "unknown status");
    assert_string_equal(prof_version(), "0.1.0");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_odd_count),
        cmocka_unit_test(test_even_count_and_multiplier),
        cmocka_unit_test(test_single_sample),
        cmocka_unit_test(test_stats_errors),
        cmocka_unit_test(test_harness_counts),
        cmocka_unit_test(test_harness_lower_bound),
        cmocka_unit_test(test_harness_grouping),
        cmocka_unit_test(test_harness_first_and_warmup),
        cmocka_unit_test(test_harness_errors),
        cmocka_unit_test(test_harness_thread_cpu_clock),
        cmocka_unit_test(test_clock_monotonic),
        cmocka_unit_test(test_strerror),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
