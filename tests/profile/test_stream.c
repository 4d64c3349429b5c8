/*
 * Stream profile: the stream is a model of four named layers run by the
 * executor; the totals are the sums of their operators, memory and
 * intensity per operator equal counts worked out by hand, the precision
 * memories are 1/2 and 1/4 of fp32, the bound follows the knee given, the
 * constraints carry the numbers, more threads change no result, and bad
 * options are refused. A fixed calibration stands in for the host so that
 * the bounds are known.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "edgefit/profile.h"

static void near(double got, double want)
{
    const double tol = 1e-12 * fmax(1.0, fabs(want));
    if (!(fabs(got - want) <= tol)) {
        fail_msg("got %.17g, want %.17g", got, want);
    }
}

static struct prof_calibration fake_cal(double knee)
{
    struct prof_calibration c;
    memset(&c, 0, sizeof(c));
    c.peak.gmacs = 30.0 * knee;
    c.triad.gbps = 30.0;
    c.knee_mac_per_byte = knee;
    c.l1_bytes = 48 * 1024;
    c.l2_bytes = 2048 * 1024;
    c.l3_bytes = 0;
    /* L1 at 10 x, L2 at 4 x main memory */
    c.level_count = 3;
    c.levels[0].level = 1;
    c.levels[0].capacity_bytes = c.l1_bytes;
    c.levels[0].triad.gbps = 300.0;
    c.levels[1].level = 2;
    c.levels[1].capacity_bytes = c.l2_bytes;
    c.levels[1].triad.gbps = 120.0;
    c.levels[2].triad = c.triad;
    return c;
}

static struct prof_stream_opts small_opts(void)
{
    struct prof_stream_opts o;
    prof_stream_opts_init(&o);
    o.feature_count = 10;
    o.batch = 4;
    o.hidden = 8;
    o.outputs = 2;
    o.stream_interval_ms = 5.0;
    o.data = PROF_DATA_SYNTHETIC;
    o.timing.warmup = 1;
    o.timing.repeats = 3;
    return o;
}

static void test_defaults(void **state)
{
    (void)state;
    struct prof_stream_opts o;
    prof_stream_opts_init(&o);
    assert_int_equal(o.feature_count, 64);
    assert_int_equal(o.batch, 32);
    assert_int_equal(o.outputs, 1);
    assert_true(o.stream_interval_ms == 10.0);
    assert_true(o.measure_precisions);
}

static void test_counts_and_totals(void **state)
{
    (void)state;
    const struct prof_stream_opts o = small_opts();
    const struct prof_calibration cal = fake_cal(0.3);
    struct prof_stream_profile p;
    assert_int_equal(prof_stream_profile(&o, &cal, &p, NULL), PROF_OK);
    assert_string_equal(p.data_source, "synthetic");
    assert_string_equal(p.activation, "relu");

    /* B=4 F=10 H=8 O=2, fp32 (4 bytes), by hand:
     * normalization: x 40 + scale 10 + shift 10 + out 40 = 100 elements
     * projection: in 40 + W 80 + b 8 + out 32 = 160
     * activation: in 32 + out 32 = 64
     * head: in 32 + W 16 + b 2 + out 8 = 58 (the sigmoid is fused)
     * MACs are libmemest's: the dense layers' only (4*10*8, 4*8*2). */
    const char *names[4] = {"input_normalization", "linear_projection",
                            "activation", "decision_head"};
    const double mem_kb[4] = {400 / 1024.0, 640 / 1024.0, 256 / 1024.0,
                              232 / 1024.0};
    const uint64_t moved[4] = {400, 640, 256, 232};
    const uint64_t macs[4] = {0, 320, 0, 64};
    /* The 0.8 KiB working set sits in L1 (300 GB/s): the knee is the
     * 9 GMAC/s peak over 300 GB/s, 0.03 MAC/byte, below the dense
     * layers' intensities (0.5, 0.28): compute-bound; the normalisation
     * and the activation do no multiply-adds: memory-bound. */
    const enum prof_bound bound[4] = {PROF_BOUND_MEMORY, PROF_BOUND_COMPUTE,
                                      PROF_BOUND_MEMORY, PROF_BOUND_COMPUTE};
    double lat = 0.0, mem = 0.0, lat16 = 0.0, lat8 = 0.0;
    uint64_t bytes = 0;
    for (int i = 0; i < 4; i++) {
        const struct prof_stream_op *op = &p.ops[i];
        assert_string_equal(op->operator_name, names[i]);
        near(op->memory_kb, mem_kb[i]);
        assert_int_equal(op->bytes_moved, moved[i]);
        assert_int_equal(op->macs, macs[i]);
        near(op->intensity_mac_per_byte, (double)macs[i] / moved[i]);
        assert_int_equal(op->bound, bound[i]);
        assert_true(op->latency_ms == op->stats.median_ms);
        assert_int_equal(op->stats.count, 3);
        assert_true(op->latency_ms >= 0.0);
        assert_true(op->fp16_latency_ms >= 0.0 && op->int8_latency_ms >= 0.0);
        assert_int_equal(op->threads, 1);
        /* the executor's row of the same operator */
        assert_string_equal(p.exec_ops[i + 1].info.layer, names[i]);
        assert_true(p.exec_ops[i + 1].latency_ms == op->latency_ms);
        lat += op->latency_ms;
        mem += op->memory_kb;
        bytes += op->bytes_moved;
        lat16 += op->fp16_latency_ms;
        lat8 += op->int8_latency_ms;
    }
    near(p.latency_ms, lat);
    near(p.memory_kb, mem);
    near(p.memory_kb, 382 * 4 / 1024.0);
    assert_int_equal(p.bytes_moved, bytes);
    near(p.fp32_latency_ms, lat);
    near(p.fp16_latency_ms, lat16);
    near(p.int8_latency_ms, lat8);
    near(p.estimated_bandwidth_mb_s,
         (double)bytes / fmax(lat / 1000.0, 1e-9) / 1048576.0);
    near(p.stream_utilization, fmin(1.0, lat / 5.0));
    near(p.fp32_memory_kb, 382 * 4 / 1024.0);
    near(p.fp16_memory_kb, 382 * 2 / 1024.0);
    near(p.int8_memory_kb, 382 / 1024.0);
    near(p.host_knee_mac_per_byte, 0.3);
    assert_true(p.first_score > 0.0 && p.first_score < 1.0);
    /* Lower precision moves the sigmoid scores a little, not wildly: fp16
     * keeps 11 significant bits (relative 2^-11 per rounding, a few
     * roundings per score, slope of the sigmoid <= 1/4), int8 about 7. */
    assert_true(p.fp16_max_abs_diff >= 0.0 && p.fp16_max_abs_diff < 1e-2);
    assert_true(p.int8_max_abs_diff >= 0.0 && p.int8_max_abs_diff < 1e-1);

    /* the sentences carry the numbers */
    char buf[64];
    snprintf(buf, sizeof(buf), "%.4f ms", p.latency_ms);
    assert_non_null(strstr(p.headroom, buf));
    assert_non_null(strstr(p.headroom, "5.000 ms interval"));
    /* One roof for the whole sentence: the working set fits L1, whose
     * 300 GB/s puts the knee at 9 / 300 = 0.03 MAC/byte. */
    assert_non_null(strstr(p.bottleneck, "served by L1 at 300.00 GB/s"));
    assert_non_null(strstr(p.bottleneck, "the knee is 0.03 MAC/byte"));
    assert_non_null(strstr(p.bottleneck, "of the 9.0 GMAC/s peak"));
    assert_non_null(strstr(p.bottleneck, "of the L1 roof"));
    assert_null(strstr(p.bottleneck, "operators are below"));
    /* the executor's parameters, 4*(20+80+8+16+2) = 504 B, and its arena:
     * the input and its normalisation (2 x 40 floats) are alive together,
     * every later pair is smaller and reuses their room, 320 B: 824 B */
    assert_non_null(strstr(p.cache_sensitivity, "0.8 KiB"));
    assert_non_null(strstr(p.cache_sensitivity, "0.5 KiB of weights"));
    assert_non_null(strstr(p.cache_sensitivity, "fits in L1 (48 KiB)"));
}

static void test_interval_exceeded(void **state)
{
    (void)state;
    struct prof_stream_opts o = small_opts();
    o.stream_interval_ms = 1e-9;
    o.measure_precisions = false;
    /* peak 600 GMAC/s: the L1 knee is 600 / 300 = 2 MAC/byte, above
     * every operator's intensity: all memory-bound */
    const struct prof_calibration cal = fake_cal(20.0);
    struct prof_stream_profile p;
    assert_int_equal(prof_stream_profile(&o, &cal, &p, NULL), PROF_OK);
    assert_true(p.stream_utilization == 1.0); /* min(1, ...) */
    assert_non_null(strstr(p.headroom, "falls behind"));
    assert_true(isnan(p.fp16_latency_ms) && isnan(p.int8_latency_ms));
    assert_true(isnan(p.ops[0].fp16_latency_ms));
    assert_true(isnan(p.fp16_max_abs_diff) && isnan(p.int8_max_abs_diff));
    for (int i = 0; i < 4; i++) {
        assert_int_equal(p.ops[i].bound, PROF_BOUND_MEMORY);
    }
}

static void test_deterministic(void **state)
{
    (void)state;
    struct prof_stream_opts o = small_opts();
    o.measure_precisions = false;
    o.activation = PROF_STREAM_GELU;
    const struct prof_calibration cal = fake_cal(1.0);
    struct prof_stream_profile a, b, c;
    assert_int_equal(prof_stream_profile(&o, &cal, &a, NULL), PROF_OK);
    assert_int_equal(prof_stream_profile(&o, &cal, &b, NULL), PROF_OK);
    assert_string_equal(a.activation, "gelu");
    assert_true(a.first_score == b.first_score);
    o.seed = 7;
    assert_int_equal(prof_stream_profile(&o, &cal, &c, NULL), PROF_OK);
    assert_true(c.first_score != a.first_score);
}

/* Two threads compute the same scores, bit for bit (the projection is
 * made large enough, 2^17 MACs and more, to be split);
 * the view of the fp32 run predicts as an executor profile does. */
static void test_threads_and_view(void **state)
{
    (void)state;
    struct prof_stream_opts o = small_opts();
    o.feature_count = 256;
    o.hidden = 128;
    o.batch = 40; /* 40 x 256 x 128 = 1.3 million MACs */
    o.timing.repeats = 1;
    const struct prof_calibration cal = fake_cal(1.0);
    struct prof_stream_profile a, b;
    assert_int_equal(prof_stream_profile(&o, &cal, &a, NULL), PROF_OK);
    o.threads = 2;
    assert_int_equal(prof_stream_profile(&o, &cal, &b, NULL), PROF_OK);
    assert_int_equal(a.threads, 1);
    assert_int_equal(b.threads, 2);
    assert_int_equal(b.ops[1].threads, 2); /* linear_projection */
    assert_int_equal(b.ops[3].threads, 1); /* decision_head: 10k MACs */
    assert_true(a.first_score == b.first_score);
    assert_true(a.fp16_max_abs_diff == b.fp16_max_abs_diff);
    assert_true(a.int8_max_abs_diff == b.int8_max_abs_diff);

    struct prof_exec_profile v;
    prof_stream_exec_view(&b, &v);
    assert_int_equal(v.count, 5);
    assert_int_equal(v.ops[0].info.kind, MEMEST_KIND_INPUT);
    assert_int_equal(v.ops[1].info.kind, MEMEST_KIND_BATCHNORM);
    assert_int_equal(v.ops[4].info.kind, MEMEST_KIND_DENSE);
    struct prof_device host;
    assert_int_equal(prof_device_host(&cal, &host), PROF_OK);
    struct prof_layer_prediction pred[5];
    struct prof_prediction_total t;
    assert_int_equal(prof_exec_predict(&v, &host, pred, &t), PROF_OK);
    /* the projection on two threads gets two cores' share of the peak */
    assert_int_equal(pred[2].pred.threads, 2);
    near(t.measured_ms, b.latency_ms);
    o.threads = 65;
    assert_int_equal(prof_stream_profile(&o, &cal, &b, NULL), PROF_E_RANGE);
}

static void test_fashion_mnist(void **state)
{
    (void)state;
    struct prof_stream_opts o = small_opts();
    o.data = PROF_DATA_FASHION_MNIST;
    o.measure_precisions = false;
    /* peak 600 GMAC/s: the L1 knee is 600 / 300 = 2 MAC/byte, above
     * every operator's intensity: all memory-bound */
    const struct prof_calibration cal = fake_cal(20.0);
    struct prof_stream_profile p;
    int st = prof_stream_profile(&o, &cal, &p, NULL);
    if (st == PROF_E_IO) {
        skip(); /* the dataset package is not installed */
    }
    assert_int_equal(st, PROF_OK);
    assert_string_equal(p.data_source, "fashion-mnist");
    struct prof_diag diag;
    o.feature_count = 785; /* more than the 784 pixels */
    assert_int_equal(prof_stream_profile(&o, &cal, &p, &diag), PROF_E_RANGE);
    assert_non_null(strstr(diag.message, "785 features"));
    assert_non_null(strstr(diag.message, "784 pixels"));
    o.feature_count = 10;
    o.data_dir = "/nonexistent";
    assert_int_equal(prof_stream_profile(&o, &cal, &p, &diag), PROF_E_IO);
    assert_non_null(strstr(diag.message,
                           "/nonexistent/train-images-idx3-ubyte.gz"));
    assert_non_null(strstr(diag.message, "No such file"));
    o.data = PROF_DATA_AUTO; /* falls back to the synthetic stream */
    assert_int_equal(prof_stream_profile(&o, &cal, &p, NULL), PROF_OK);
    assert_string_equal(p.data_source, "synthetic");
}

static void test_bad_options(void **state)
{
    (void)state;
    const struct prof_calibration cal = fake_cal(1.0);
    struct prof_stream_profile p;
    struct prof_stream_opts o = small_opts();
    o.feature_count = 0;
    assert_int_equal(prof_stream_profile(&o, &cal, &p, NULL), PROF_E_RANGE);
    o = small_opts();
    o.batch = 0;
    assert_int_equal(prof_stream_profile(&o, &cal, &p, NULL), PROF_E_RANGE);
    o = small_opts();
    o.stream_interval_ms = 0.0;
    assert_int_equal(prof_stream_profile(&o, &cal, &p, NULL), PROF_E_RANGE);
    o.stream_interval_ms = NAN;
    assert_int_equal(prof_stream_profile(&o, &cal, &p, NULL), PROF_E_RANGE);
    o = small_opts();
    o.timing.repeats = 0;
    assert_int_equal(prof_stream_profile(&o, &cal, &p, NULL), PROF_E_RANGE);
    o = small_opts();
    o.feature_count = UINT64_C(1) << 40;
    assert_int_equal(prof_stream_profile(&o, &cal, &p, NULL), PROF_E_OVERFLOW);
    o = small_opts();
    assert_int_equal(prof_stream_profile(NULL, &cal, &p, NULL), PROF_E_INVALID);
    assert_int_equal(prof_stream_profile(&o, &cal, NULL, NULL), PROF_E_INVALID);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_counts_and_totals),
        cmocka_unit_test(test_interval_exceeded),
        cmocka_unit_test(test_deterministic),
        cmocka_unit_test(test_threads_and_view),
        cmocka_unit_test(test_fashion_mnist),
        cmocka_unit_test(test_bad_options),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
