/* edgefit-stream end to end: its totals are the sums of its operators in
 * every output, the three artifacts are written and agree, and bad input
 * exits 2 without writing a file. The program path comes as argv[1]. Runs
 * use few repeats and small calibration arrays (--triad-mib) to stay quick;
 * no check depends on how fast anything ran. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "edgefit/artifacts.h"
#include "run.h"

static const char *stream;
static char tmpdir[] = "/tmp/edgefit-stream-XXXXXX";

#define RUN(r, ...)                                                          \
    do {                                                                     \
        char *argv_[] = {(char *)stream, __VA_ARGS__, NULL};                 \
        run_argv(argv_, (r));                                                \
    } while (0)

static const char *const op_names[4] = {
    "input_normalization", "linear_projection", "activation",
    "decision_head",
};

static json_t *parse_json(const char *text)
{
    json_error_t err;
    json_t *j = json_loads(text, 0, &err);
    if (!j) {
        fail_msg("not JSON (%s): %s", err.text, text);
    }
    return j;
}

static double jreal(json_t *obj, const char *key)
{
    json_t *v = json_object_get(obj, key);
    if (!json_is_number(v)) {
        fail_msg("no number '%s'", key);
    }
    return json_number_value(v);
}

/* Written values are rounded (run_written_tol): what a figure computed
 * from them carries. */
static double wtol(const char *name, double v)
{
    return run_written_tol(name, v);
}

static double wrel(const char *name, double v)
{
    return v != 0.0 ? wtol(name, v) / fabs(v) : 0.0;
}

/* The totals of a hardware_profile document against its operators: sums
 * in operator order, as the library adds them, each operator's value
 * rounded as written (the tolerances add up). */
static void check_profile(json_t *j, double interval_ms)
{
    json_t *ops = json_object_get(j, "operator_profile");
    assert_int_equal(json_array_size(ops), 4);
    double lat = 0.0, mem = 0.0, lat16 = 0.0, lat8 = 0.0;
    double lat_tol = 0.0, mem_tol = 0.0, lat16_tol = 0.0, lat8_tol = 0.0;
    for (size_t i = 0; i < 4; i++) {
        json_t *op = json_array_get(ops, i);
        assert_string_equal(json_string_value(json_object_get(op,
                                                              "operator")),
                            op_names[i]);
        assert_true(jreal(op, "latency_ms") >= 0.0);
        lat += jreal(op, "latency_ms");
        mem += jreal(op, "memory_kb");
        lat16 += jreal(op, "fp16_latency_ms");
        lat8 += jreal(op, "int8_dynamic_latency_ms");
        lat_tol += wtol("latency_ms", jreal(op, "latency_ms"));
        mem_tol += wtol("memory_kb", jreal(op, "memory_kb"));
        lat16_tol += wtol("fp16_latency_ms", jreal(op, "fp16_latency_ms"));
        lat8_tol += wtol("int8_dynamic_latency_ms", jreal(op, "int8_dynamic_latency_ms"));
    }
    json_t *t = json_object_get(j, "totals");
    assert_true(run_written_near(jreal(t, "latency_ms"), lat, "latency_ms",
                                 lat_tol));
    assert_true(run_written_near(jreal(t, "memory_kb"), mem, "memory_kb",
                                 mem_tol));
    assert_true(run_written_near(jreal(t, "stream_utilization"),
                                 fmin(1.0, lat / interval_ms),
                                 "stream_utilization",
                                 (lat_tol + wtol("latency_ms", lat)) /
                                     interval_ms));
    const double bw = jreal(t, "estimated_bandwidth_mb_s");
    const double tl = jreal(t, "latency_ms");
    assert_true(run_written_near(
        bw, jreal(t, "bytes_moved") / fmax(tl / 1000.0, 1e-9) / 1048576.0,
        "estimated_bandwidth_mb_s", bw * wrel("latency_ms", tl)));
    json_t *p = json_object_get(j, "precision_tradeoffs");
    assert_true(run_written_near(jreal(p, "fp32_memory_kb"), mem,
                                 "fp32_memory_kb", mem_tol));
    assert_true(run_written_near(jreal(p, "fp16_memory_kb"), mem / 2.0,
                                 "fp16_memory_kb", mem_tol / 2.0));
    assert_true(run_written_near(jreal(p, "int8_dynamic_memory_kb"), mem / 4.0,
                                 "int8_dynamic_memory_kb", mem_tol / 4.0));
    assert_true(run_written_near(jreal(p, "fp32_latency_ms"), lat,
                                 "fp32_latency_ms", lat_tol));
    assert_true(run_written_near(jreal(p, "fp16_latency_ms"), lat16,
                                 "fp16_latency_ms", lat16_tol));
    assert_true(run_written_near(jreal(p, "int8_dynamic_latency_ms"), lat8,
                                 "int8_dynamic_latency_ms", lat8_tol));
    assert_true(jreal(p, "fp16_max_abs_diff") < 1e-2);
    assert_true(jreal(p, "int8_dynamic_max_abs_diff") < 1e-1);
    json_t *e = json_object_get(j, "edge_constraints");
    /* the sentence states the total (to 4 decimals) */
    const char *head = json_string_value(json_object_get(e, "headroom"));
    const char *at = strstr(head, "takes ");
    assert_non_null(at);
    assert_true(fabs(strtod(at + 6, NULL) - tl) <=
                5e-5 + wtol("latency_ms", tl));
    assert_non_null(json_string_value(json_object_get(e, "bottleneck")));
    assert_non_null(json_string_value(json_object_get(e,
                                                      "cache_sensitivity")));
}

static void test_json(void **state)
{
    (void)state;
    struct run_result r;
    RUN(&r, "--features", "24", "--batch", "8", "--hidden", "16",
        "--stream-interval-ms", "2.5", "--repeats", "3", "--triad-mib", "16",
        "--data", "synthetic", "--format", "json");
    if (r.status != 0) {
        fail_msg("exit %d: %s", r.status, r.err);
    }
    json_t *j = parse_json(r.out);
    check_profile(j, 2.5);
    json_t *c = json_object_get(j, "config");
    assert_true(jreal(c, "feature_count") == 24);
    assert_true(jreal(c, "batch_size") == 8);
    assert_true(jreal(c, "hidden") == 16);
    assert_string_equal(json_string_value(json_object_get(c, "data_source")),
                        "synthetic");
    /* memory by hand, fp32: normalization 2*8*24 + 2*24 = 432 elements,
     * projection 192 + 384 + 16 + 128 = 720, activation 256,
     * head 128 + 16 + 1 + 8 = 153: 1561 * 4 bytes */
    assert_written(jreal(json_object_get(j, "totals"), "memory_kb"),
                   1561 * 4 / 1024.0, "memory_kb");
    json_t *host = json_object_get(j, "host");
    assert_true(jreal(host, "peak_gmacs") > 0.0);
    /* 16 MiB rounded down to whole elements of the three arrays */
    const double triad = jreal(host, "triad_total_bytes");
    assert_true(triad <= 16 * 1048576.0 && triad > 16 * 1048576.0 - 192);
    json_decref(j);
    run_free(&r);
}

/* The bandwidth of the smallest level in the document's memory_levels
 * whose capacity holds bytes (main memory has no capacity), and its
 * name. */
static double level_gbps(json_t *levels, double bytes, const char **name)
{
    const size_t n = json_array_size(levels);
    for (size_t i = 0; i < n; i++) {
        json_t *l = json_array_get(levels, i);
        json_t *cap = json_object_get(l, "capacity_bytes");
        if (json_is_null(cap) || bytes <= json_number_value(cap)) {
            *name = json_string_value(json_object_get(l, "level"));
            return jreal(l, "triad_gbps");
        }
    }
    fail_msg("no level holds %g bytes", bytes);
    return 0.0;
}

/* Roofline by hand from the JSON's own figures: max(MACs / peak,
 * bytes / bandwidth) per operator, on the host (cache-aware: the
 * bandwidth of the smallest level holding the bytes; and DRAM only) and
 * on rpi4 (5.127 GB/s; 24 GMAC/s over four cores, so 6 for the one thread
 * the operators run on), and the host's signed error against the
 * measurement. */
static void test_predictions(void **state)
{
    (void)state;
    struct run_result r;
    RUN(&r, "--features", "48", "--batch", "16", "--repeats", "3",
        "--triad-mib", "16", "--device", "rpi4", "--format", "json");
    if (r.status != 0) {
        fail_msg("exit %d: %s", r.status, r.err);
    }
    json_t *j = parse_json(r.out);
    json_t *host = json_object_get(j, "host");
    json_t *dev = json_object_get(j, "device");
    assert_non_null(dev);
    assert_string_equal(json_string_value(json_object_get(dev, "name")),
                        "rpi4");
    const double peak = jreal(host, "peak_gmacs");
    const double bw = jreal(host, "triad_gbps");
    json_t *levels = json_object_get(host, "memory_levels");
    assert_true(json_array_size(levels) >= 1);
    /* the last level is main memory, the triad's */
    json_t *last = json_array_get(levels, json_array_size(levels) - 1);
    assert_string_equal(json_string_value(json_object_get(last, "level")),
                        "DRAM");
    assert_true(jreal(last, "triad_gbps") == bw);
    json_t *ops = json_object_get(j, "operator_profile");
    double host_sum = 0.0, dram_sum = 0.0, dev_sum = 0.0, measured = 0.0;
    for (size_t i = 0; i < 4; i++) {
        json_t *op = json_array_get(ops, i);
        const double macs = jreal(op, "macs");
        const double bytes = jreal(op, "bytes_moved");
        const double lat = jreal(op, "latency_ms");
        const char *lvl = NULL;
        const double lbw = level_gbps(levels, bytes, &lvl);
        const double hp = fmax(macs / peak / 1e6, bytes / lbw / 1e6);
        const double hd = fmax(macs / peak / 1e6, bytes / bw / 1e6);
        const double dp = fmax(macs / 6.0 / 1e6, bytes / 5.127 / 1e6);
        /* peak and bandwidths are read as written: 6 digits each */
        const double in_rel = wrel("peak_gmacs", peak) + wrel("triad_gbps", bw);
        assert_true(run_written_near(jreal(op, "host_predicted_ms"), hp,
                                     "host_predicted_ms", hp * in_rel));
        assert_true(run_written_near(jreal(op, "host_dram_predicted_ms"), hd,
                                     "host_dram_predicted_ms", hd * in_rel));
        assert_string_equal(
            json_string_value(json_object_get(op, "host_memory_level")), lvl);
        if (lat > 0.0) {
            const double r_lat = wrel("latency_ms", lat);
            assert_true(run_written_near(
                jreal(op, "host_prediction_error"), (hp - lat) / lat,
                "host_prediction_error",
                fabs(hp / lat) * (in_rel + wrel("host_predicted_ms", hp) +
                                  r_lat)));
            assert_true(run_written_near(
                jreal(op, "host_dram_prediction_error"), (hd - lat) / lat,
                "host_dram_prediction_error",
                fabs(hd / lat) * (in_rel + wrel("host_dram_predicted_ms", hd) +
                                  r_lat)));
        } else {
            assert_true(json_is_null(
                json_object_get(op, "host_prediction_error")));
        }
        assert_written(jreal(op, "device_predicted_ms"), dp,
                       "device_predicted_ms");
        assert_written(jreal(op, "device_energy_proxy_j"), 6.4 * dp / 1000.0,
                       "device_energy_proxy_j");
        host_sum += hp;
        dram_sum += hd;
        dev_sum += dp;
        measured += lat;
    }
    const double in_rel = wrel("peak_gmacs", peak) + wrel("triad_gbps", bw);
    assert_true(run_written_near(jreal(host, "predicted_ms"), host_sum,
                                 "predicted_ms", host_sum * in_rel));
    /* the measured total: four latencies, each rounded as written */
    assert_true(run_written_near(
        jreal(host, "prediction_error"), (host_sum - measured) / measured,
        "prediction_error",
        fabs(host_sum / measured) *
            (in_rel + 4.0 * wrel("latency_ms", measured) +
             wrel("predicted_ms", host_sum))));
    assert_true(run_written_near(jreal(host, "host_dram_predicted_ms"),
                                 dram_sum, "host_dram_predicted_ms",
                                 dram_sum * in_rel));
    assert_written(jreal(dev, "predicted_ms"), dev_sum, "predicted_ms");
    json_decref(j);
    run_free(&r);
}

/* The audit: a stream far too slow for its interval printed "stream
 * utilization 1.000000" and nothing else. The utilisation stays the
 * original's min(1, latency / interval), and the factor beside it says
 * how far behind: 784 features x 512 hidden x batch 64 (25.7 million
 * MACs) against a 0.001 ms interval, on this machine and on rpi4. */
static void test_stream_too_slow(void **state)
{
    (void)state;
    struct run_result r;
    RUN(&r, "--features", "784", "--hidden", "512", "--batch", "64",
        "--repeats", "2", "--triad-mib", "16", "--device", "rpi4",
        "--stream-interval-ms", "0.001", "--format", "json");
    if (r.status != 0) {
        fail_msg("exit %d: %s", r.status, r.err);
    }
    json_t *j = parse_json(r.out);
    json_t *tot = json_object_get(j, "totals");
    const double lat = jreal(tot, "latency_ms");
    assert_true(jreal(tot, "stream_utilization") == 1.0);
    /* both figures as written: each carries its rounding */
    const double ratio = jreal(tot, "latency_over_interval");
    assert_true(fabs(ratio - lat / 0.001) <=
                run_written_tol("latency_over_interval", ratio) +
                    run_written_tol("latency_ms", lat) / 0.001);
    assert_true(jreal(tot, "latency_over_interval") > 1.0);
    json_t *dev = json_object_get(j, "device");
    const double dev_ms = jreal(dev, "predicted_ms");
    /* every figure as written: a comparison carries the rounding of each
     * side (run_written_tol), relative for a quotient or a product */
    const double t_dev = run_written_tol("predicted_ms", dev_ms);
    assert_true(jreal(dev, "stream_utilization") == 1.0);
    const double dratio = jreal(dev, "latency_over_interval");
    assert_true(fabs(dratio - dev_ms / 0.001) <=
                run_written_tol("latency_over_interval", dratio) +
                    t_dev / 0.001);
    const double lower = jreal(dev, "latency_lower_bound_ms");
    assert_true(fabs(lower - dev_ms) <=
                run_written_tol("latency_lower_bound_ms", lower) + t_dev);
    /* the realistic latency: the bound x this machine's measured over
     * its own roofline */
    const double hp = jreal(json_object_get(j, "host"), "predicted_ms");
    const double over = lat / hp;
    const double rel = run_written_tol("latency_ms", lat) / lat +
                       run_written_tol("predicted_ms", hp) / hp;
    const double got_over = jreal(dev, "host_roofline_overrun");
    assert_true(fabs(got_over - over) <=
                run_written_tol("host_roofline_overrun", got_over) +
                    over * rel);
    const double realistic = jreal(dev, "latency_realistic_ms");
    assert_true(fabs(realistic - dev_ms * over) <=
                run_written_tol("latency_realistic_ms", realistic) +
                    dev_ms * over * (rel + t_dev / dev_ms));
    json_decref(j);
    run_free(&r);

    RUN(&r, "--features", "784", "--hidden", "512", "--batch", "64",
        "--repeats", "2", "--triad-mib", "16", "--device", "rpi4",
        "--stream-interval-ms", "0.001");
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "stream utilization 1.000000 (capped: a "
                                  "batch takes "));
    assert_non_null(strstr(r.out, "the stream falls behind even at the "
                                  "bound"));
    assert_non_null(strstr(r.out, "(roofline lower bound;"));
    run_free(&r);
}

/* --threads: a projection of 40 x 256 x 128 = 1.3 million MACs runs on two
 * threads (the head, 10k MACs, stays on one), the decision scores do not
 * move (the precision differences are the one-thread run's, bit for bit),
 * and rpi4 predicts the projection on two of its four cores. Bad counts
 * are refused. */
static void test_threads(void **state)
{
    (void)state;
    double diff16[2], diff8[2];
    for (int t = 0; t < 2; t++) {
        struct run_result r;
        RUN(&r, "--features", "256", "--hidden", "128", "--batch", "40",
            "--repeats", "2", "--triad-mib", "16", "--data", "synthetic",
            "--device", "rpi4", "--threads", t ? "2" : "1", "--format",
            "json");
        if (r.status != 0) {
            fail_msg("exit %d: %s", r.status, r.err);
        }
        json_t *j = parse_json(r.out);
        json_t *ops = json_object_get(j, "operator_profile");
        assert_true(jreal(json_object_get(j, "config"), "threads") == t + 1);
        assert_true(jreal(json_array_get(ops, 1), "threads") == t + 1);
        assert_true(jreal(json_array_get(ops, 3), "threads") == 1);
        const double macs = jreal(json_array_get(ops, 1), "macs");
        const double bytes = jreal(json_array_get(ops, 1), "bytes_moved");
        assert_true(macs == 40.0 * 256 * 128);
        /* rpi4: 6 GMAC/s a core, 5.127 GB/s */
        const double dp = fmax(macs / (6.0 * (t + 1)) / 1e6,
                               bytes / 5.127 / 1e6);
        assert_written(jreal(json_array_get(ops, 1), "device_predicted_ms"),
                       dp, "device_predicted_ms");
        json_t *p = json_object_get(j, "precision_tradeoffs");
        diff16[t] = jreal(p, "fp16_max_abs_diff");
        diff8[t] = jreal(p, "int8_dynamic_max_abs_diff");
        json_decref(j);
        run_free(&r);
    }
    assert_true(diff16[0] == diff16[1]);
    assert_true(diff8[0] == diff8[1]);
    static char bad[3][4] = {"0", "65", "two"};
    for (size_t i = 0; i < 3; i++) {
        struct run_result r;
        RUN(&r, "--threads", bad[i]);
        assert_int_equal(r.status, 2);
        assert_non_null(strstr(r.err, "--threads"));
        run_free(&r);
    }
}

/* A device from a --devices file, and the host's unknown power. */
static void test_devices(void **state)
{
    (void)state;
    char path[] = "/tmp/edgefit-stream-devices-XXXXXX";
    const int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    assert_non_null(f);
    assert_true(fputs("name,bandwidth_gbps,peak_gmacs,power_watts,"
                      "memory_mb\nboard,2,8,4,512\n", f) >= 0);
    assert_int_equal(fclose(f), 0);
    struct run_result r;
    RUN(&r, "--features", "32", "--batch", "8", "--repeats", "2",
        "--triad-mib", "16", "--devices", path, "--device", "board",
        "--format", "json");
    if (r.status != 0) {
        fail_msg("exit %d: %s", r.status, r.err);
    }
    json_t *j = parse_json(r.out);
    json_t *dev = json_object_get(j, "device");
    assert_string_equal(json_string_value(json_object_get(dev, "name")),
                        "board");
    json_t *ops = json_object_get(j, "operator_profile");
    for (size_t i = 0; i < 4; i++) {
        json_t *op = json_array_get(ops, i);
        const double dp = fmax(jreal(op, "macs") / 8.0 / 1e6,
                               jreal(op, "bytes_moved") / 2.0 / 1e6);
        assert_written(jreal(op, "device_predicted_ms"), dp,
                       "device_predicted_ms");
        assert_written(jreal(op, "device_energy_proxy_j"), 4.0 * dp / 1000.0,
                       "device_energy_proxy_j");
    }
    json_decref(j);
    run_free(&r);

    /* the host as the device: no power, so no energy and a hint */
    RUN(&r, "--features", "32", "--batch", "8", "--repeats", "2",
        "--triad-mib", "16", "--device", "host");
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "power unknown: give --power-watts"));
    run_free(&r);
    RUN(&r, "--features", "32", "--batch", "8", "--repeats", "2",
        "--triad-mib", "16", "--device", "host", "--power-watts", "15",
        "--format", "json");
    assert_int_equal(r.status, 0);
    j = parse_json(r.out);
    dev = json_object_get(j, "device");
    assert_true(jreal(dev, "power_watts") == 15.0);
    assert_true(jreal(dev, "energy_proxy_j") > 0.0);
    json_decref(j);
    run_free(&r);

    RUN(&r, "--list-devices", "--devices", path);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "desktop: bandwidth 50 GB/s"));
    assert_non_null(strstr(r.out, "board: bandwidth 2 GB/s, peak 8 GMAC/s, "
                                  "power 4 W, memory 512 MB"));
    run_free(&r);

    /* a bad file: file:line, exit 2, nothing on stdout */
    f = fopen(path, "w");
    assert_non_null(f);
    assert_true(fputs("name,bandwidth_gbps,peak_gmacs\nboard,2,zero\n", f) >=
                0);
    assert_int_equal(fclose(f), 0);
    RUN(&r, "--devices", path, "--device", "board");
    assert_int_equal(r.status, 2);
    char where[128];
    snprintf(where, sizeof where, "%s:2: peak_gmacs", path);
    assert_non_null(strstr(r.err, where));
    assert_int_equal(strlen(r.out), 0);
    run_free(&r);
    unlink(path);
}

static void test_out_dir(void **state)
{
    (void)state;
    char dir[sizeof(tmpdir) + 16];
    snprintf(dir, sizeof(dir), "%s/out", tmpdir);
    struct run_result r;
    RUN(&r, "--features", "32", "--batch", "4", "--repeats", "3",
        "--triad-mib", "16", "--out", dir, "--format", "csv");
    if (r.status != 0) {
        fail_msg("exit %d: %s", r.status, r.err);
    }
    assert_true(strncmp(r.out, "operator,latency_ms,memory_kb,", 30) == 0);
    assert_int_equal(run_count_entries(dir), 3);

    char path[512];
    art_table *ops = NULL, *tot = NULL;
    snprintf(path, sizeof(path), "%s/operator_profile.csv", dir);
    assert_int_equal(art_table_load_csv(path, &ops, NULL), ART_OK);
    snprintf(path, sizeof(path), "%s/hardware_totals.csv", dir);
    assert_int_equal(art_table_load_csv(path, &tot, NULL), ART_OK);
    assert_int_equal(art_table_rows(ops), 4);
    assert_int_equal(art_table_rows(tot), 1);
    assert_string_equal(art_table_column_name(tot, 0), "latency_ms");
    assert_string_equal(art_table_column_name(tot, 1), "memory_kb");
    assert_string_equal(art_table_column_name(tot, 2),
                        "estimated_bandwidth_mb_s");
    assert_string_equal(art_table_column_name(tot, 3), "stream_utilization");
    double lat = 0.0, mem = 0.0, lat_tol = 0.0, mem_tol = 0.0, v;
    for (size_t i = 0; i < 4; i++) {
        const char *name = NULL;
        assert_int_equal(art_table_get_text(ops, i, 0, &name), ART_OK);
        assert_string_equal(name, op_names[i]);
        assert_int_equal(art_table_get_real(ops, i, 1, &v), ART_OK);
        lat += v;
        lat_tol += wtol("latency_ms", v);
        assert_int_equal(art_table_get_real(ops, i, 2, &v), ART_OK);
        mem += v;
        mem_tol += wtol("memory_kb", v);
    }
    assert_int_equal(art_table_get_real(tot, 0, 0, &v), ART_OK);
    assert_true(run_written_near(v, lat, "latency_ms", lat_tol));
    assert_int_equal(art_table_get_real(tot, 0, 1, &v), ART_OK);
    assert_true(run_written_near(v, mem, "memory_kb", mem_tol));
    assert_int_equal(art_table_get_real(tot, 0, 3, &v), ART_OK);
    /* default interval */
    assert_true(run_written_near(v, fmin(1.0, lat / 10.0),
                                 "stream_utilization",
                                 (lat_tol + wtol("latency_ms", lat)) / 10.0));

    snprintf(path, sizeof(path), "%s/hardware_profile.json", dir);
    json_error_t err;
    json_t *j = json_load_file(path, 0, &err);
    assert_non_null(j);
    check_profile(j, 10.0);
    /* the JSON and the CSV write the same total the same way */
    assert_int_equal(art_table_get_real(tot, 0, 0, &v), ART_OK);
    assert_true(jreal(json_object_get(j, "totals"), "latency_ms") == v);
    json_decref(j);
    art_table_destroy(ops);
    art_table_destroy(tot);
    run_rmdir(dir);
    run_free(&r);
}

static void test_table_and_strict(void **state)
{
    (void)state;
    struct run_result r;
    RUN(&r, "--features", "16", "--batch", "2", "--repeats", "3",
        "--triad-mib", "16", "--activation", "gelu", "--quiet");
    assert_int_equal(r.status, 0);
    assert_string_equal(r.err, ""); /* no progress, no diagnostics */
    assert_non_null(strstr(r.out, "linear_projection"));
    assert_non_null(strstr(r.out, "stream utilization"));
    assert_non_null(strstr(r.out, "gelu"));
    run_free(&r);
    /* no batch runs in a picosecond */
    RUN(&r, "--features", "16", "--batch", "2", "--repeats", "3",
        "--triad-mib", "16", "--stream-interval-ms", "1e-9", "--strict",
        "--format", "csv");
    assert_int_equal(r.status, 3);
    assert_non_null(strstr(r.err, "--strict"));
    run_free(&r);
}

static void test_bad_input(void **state)
{
    (void)state;
    char dir[sizeof(tmpdir) + 16];
    snprintf(dir, sizeof(dir), "%s/bad", tmpdir);
    const char *bad_features[] = {"0", "abc", "-3", "12x", "1e3", ""};
    for (size_t i = 0; i < sizeof(bad_features) / sizeof(*bad_features);
         i++) {
        struct run_result r;
        RUN(&r, "--features", (char *)bad_features[i], "--out", dir,
            "--triad-mib", "16");
        if (r.status != 2 || !strstr(r.err, "--features")) {
            fail_msg("--features '%s': exit %d, %s", bad_features[i],
                     r.status, r.err);
        }
        assert_int_equal(run_count_entries(dir), -1);
        run_free(&r);
    }
    struct run_result r;
    RUN(&r, "--out", dir, "--features");
    assert_int_equal(r.status, 2);
    run_free(&r);
    RUN(&r, "--batch", "0", "--out", dir);
    assert_int_equal(r.status, 2);
    run_free(&r);
    RUN(&r, "--stream-interval-ms", "0", "--out", dir);
    assert_int_equal(r.status, 2);
    run_free(&r);
    RUN(&r, "--activation", "swish", "--out", dir);
    assert_int_equal(r.status, 2);
    run_free(&r);
    RUN(&r, "--format", "xml", "--out", dir);
    assert_int_equal(r.status, 2);
    run_free(&r);
    RUN(&r, "--device", "pi5", "--out", dir);
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "--device: unknown device 'pi5'"));
    run_free(&r);
    RUN(&r, "--device", "name=x,bandwidth_gbps=-1,peak_gmacs=1", "--out",
        dir);
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "bandwidth_gbps"));
    run_free(&r);
    RUN(&r, "--bogus");
    assert_int_equal(r.status, 2);
    run_free(&r);
    RUN(&r, "extra");
    assert_int_equal(r.status, 2);
    run_free(&r);
    /* Fashion-MNIST has 784 pixels */
    RUN(&r, "--data", "fashion-mnist", "--features", "785", "--repeats", "3",
        "--triad-mib", "16", "--out", dir);
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "fashion-mnist"));
    if (strstr(r.err, "No such file") == NULL) { /* the data is installed */
        assert_non_null(strstr(r.err, "785 features"));
        assert_non_null(strstr(r.err, "784 pixels"));
    }
    run_free(&r);
    RUN(&r, "--data", "fashion-mnist", "--data-dir", "/nonexistent",
        "--repeats", "3", "--triad-mib", "16", "--out", dir);
    assert_int_equal(r.status, 2);
    /* the reader's own message: the file and the system's reason */
    assert_non_null(strstr(r.err, "/nonexistent/train-images-idx3-ubyte.gz"));
    assert_non_null(strstr(r.err, "No such file or directory"));
    run_free(&r);
    /* A 17-byte file claiming 2^31 images of 28 x 28 (1.68 TB): refused
     * with the reason, not "out of memory". */
    char liar_dir[sizeof(tmpdir) + 16], liar[sizeof(tmpdir) + 64];
    snprintf(liar_dir, sizeof(liar_dir), "%s/liar", tmpdir);
    snprintf(liar, sizeof(liar), "%s/train-images-idx3-ubyte", liar_dir);
    assert_int_equal(mkdir(liar_dir, 0700), 0);
    FILE *f = fopen(liar, "wb");
    assert_non_null(f);
    static const unsigned char head[17] = {0, 0, 8, 3, 0x80, 0, 0, 0, 0, 0,
                                           0, 28, 0, 0, 0, 28, 1};
    assert_int_equal(fwrite(head, 1, 17, f), 17);
    fclose(f);
    RUN(&r, "--data", "fashion-mnist", "--data-dir", liar_dir, "--repeats",
        "3", "--triad-mib", "16", "--out", dir);
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, liar));
    assert_non_null(strstr(r.err, "the header claims 2147483648 images"));
    assert_null(strstr(r.err, "out of memory"));
    run_free(&r);
    run_rmdir(liar_dir);
    assert_int_equal(run_count_entries(dir), -1);
}

static void test_help_version(void **state)
{
    (void)state;
    struct run_result r;
    RUN(&r, "--help");
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "usage: edgefit-stream"));
    assert_non_null(strstr(r.out, "--stream-interval-ms"));
    run_free(&r);
    RUN(&r, "--version");
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "edgefit-stream 0.1.0"));
    run_free(&r);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: test-stream PATH-TO-edgefit-stream\n");
        return 1;
    }
    stream = argv[1];
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_json),
        cmocka_unit_test(test_predictions),
        cmocka_unit_test(test_stream_too_slow),
        cmocka_unit_test(test_threads),
        cmocka_unit_test(test_devices),
        cmocka_unit_test(test_out_dir),
        cmocka_unit_test(test_table_and_strict),
        cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_help_version),
    };
    const int rc = cmocka_run_group_tests(tests, NULL, NULL);
    run_rmdir(tmpdir);
    return rc;
}
