/* edgefit-layerwise end to end: the per-layer table against hand-computed
 * counts of a tiny network, predictions against the roofline of the
 * catalogue device, the summary against the original formulas, exit codes,
 * and that rejected input writes no file. No timing is compared with a
 * threshold. The program path comes as argv[1]. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <dirent.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "edgefit/artifacts.h"
#include "edgefit/kernels.h"
#include "edgefit/profile.h"
#include "run.h"

static const char *layerwise;
static char tmpdir[] = "/tmp/edgefit-layerwise-XXXXXX";

#define RUN(r, ...)                                                          \
    do {                                                                     \
        char *argv_[] = {(char *)layerwise, __VA_ARGS__, NULL};              \
        run_argv(argv_, (r));                                                \
    } while (0)

#define ASSERT_NEAR(a, b, tol)                                              \
    do {                                                                    \
        const double a_ = (a), b_ = (b), t_ = (tol);                        \
        if (!(fabs(a_ - b_) <= t_)) {                                       \
            fail_msg("%s = %.17g, expected %.17g (tolerance %.3g)", #a, a_, \
                     b_, t_);                                               \
        }                                                                   \
    } while (0)

/* What the apps write is rounded (run_written_tol): a value read back is
 * within that of the exact one, and a figure computed from read values
 * carries their relative rounding. */
static double rel(const char *name, double v)
{
    return v != 0.0 ? run_written_tol(name, v) / fabs(v) : 0.0;
}

#define ASSERT_WRITTEN(a, b, name, tol)                                     \
    ASSERT_NEAR(a, b, (tol) + run_written_tol((name), (b)))

/* input 4, dense 3 relu, dense 2 softmax at batch 2, fp32:
 *   input   8 elements,  32 B
 *   dense1  6 elements,  24 B, 15 parameters (60 B), 2*4*3 = 24 MACs
 *   dense2  4 elements,  16 B,  8 parameters (32 B), 2*3*2 = 12 MACs
 * bytes moved per operator: dense1 60 + 32 + 24 = 116, dense2 32 + 24 + 16
 * = 72; the input row is not an operator (no latency, no prediction). */
static const char *const TINY = "input 4\ndense 3 act=relu\n"
                                "dense 2 act=softmax\n";
static char tiny_path[512];

static double cell_real(const art_table *t, size_t row, const char *col)
{
    long c = art_table_find_column(t, col);
    if (c < 0) {
        fail_msg("no column %s", col);
    }
    double v = 0.0;
    assert_int_equal(art_table_get_real(t, row, (size_t)c, &v), ART_OK);
    return v;
}

static int cell_set(const art_table *t, size_t row, const char *col)
{
    long c = art_table_find_column(t, col);
    if (c < 0) {
        fail_msg("no column %s", col);
    }
    return art_table_is_set(t, row, (size_t)c);
}

static const char *cell_text(const art_table *t, size_t row, const char *col)
{
    long c = art_table_find_column(t, col);
    if (c < 0) {
        fail_msg("no column %s", col);
    }
    const char *v = NULL;
    assert_int_equal(art_table_get_text(t, row, (size_t)c, &v), ART_OK);
    return v;
}

static char *out_path(const char *name)
{
    return art_path_join(tmpdir, name);
}

static void test_tiny_on_rpi4(void **state)
{
    (void)state;
    struct run_result r;
    RUN(&r, "--model", tiny_path, "--batch", "2", "--device", "rpi4",
        "--repeats", "3", "--warmup", "1", "--power-watts", "6.5",
        "--format", "csv", "--out", tmpdir);
    assert_int_equal(r.status, 0);
    /* stdout is the breakdown as CSV, the file holds the same table */
    char *lw_path = out_path("layerwise_breakdown.csv");
    FILE *f = fopen(lw_path, "rb");
    assert_non_null(f);
    char file_text[8192] = {0};
    size_t got = fread(file_text, 1, sizeof file_text - 1, f);
    fclose(f);
    assert_true(got > 0);
    assert_string_equal(r.out, file_text);
    assert_true(strncmp(r.out,
                        "layer,kind,output_shape,output_elements,"
                        "parameter_count,parameter_bytes,activation_bytes,"
                        "macs,latency_ms,predicted_ms,bound,",
                        110) == 0);
    run_free(&r);

    art_table *t = NULL;
    struct art_diag d;
    assert_int_equal(art_table_load_csv(lw_path, &t, &d), ART_OK);
    assert_int_equal(art_table_rows(t), 3);
    const char *names[] = {"input", "dense1", "dense2"};
    const double elems[] = {8, 6, 4}, params[] = {0, 15, 8};
    const double pbytes[] = {0, 60, 32}, abytes[] = {32, 24, 16};
    const double macs[] = {0, 24, 12}, moved[] = {0, 116, 72};
    struct prof_device rpi4;
    assert_int_equal(prof_device_lookup("rpi4", &rpi4, NULL), PROF_OK);
    double pred_sum = 0.0;
    for (size_t i = 0; i < 3; i++) {
        assert_string_equal(cell_text(t, i, "layer"), names[i]);
        assert_true(cell_real(t, i, "output_elements") == elems[i]);
        assert_true(cell_real(t, i, "parameter_count") == params[i]);
        assert_true(cell_real(t, i, "parameter_bytes") == pbytes[i]);
        assert_true(cell_real(t, i, "activation_bytes") == abytes[i]);
        assert_true(cell_real(t, i, "macs") == macs[i]);
        if (i == 0) {
            /* not an operator: every measured or predicted cell empty */
            static const char *const empty[] = {
                "latency_ms", "predicted_ms", "bound", "latency_p90_ms",
                "bytes_moved", "achieved_bandwidth_gbps",
                "predicted_energy_proxy_j",
                "host_predicted_ms", "host_prediction_error",
                "host_memory_level", "host_dram_predicted_ms",
                "host_dram_prediction_error", "threads", "output_layout",
            };
            for (size_t k = 0; k < sizeof empty / sizeof empty[0]; k++) {
                if (cell_set(t, i, empty[k])) {
                    fail_msg("input row: %s is not empty", empty[k]);
                }
            }
            continue;
        }
        assert_true(cell_real(t, i, "bytes_moved") == moved[i]);
        /* roofline on the catalogue's rpi4, one thread: one core */
        assert_true(cell_real(t, i, "threads") == 1.0);
        /* dense layers read and write NCHW (plain vectors) */
        assert_string_equal(cell_text(t, i, "output_layout"), "nchw");
        const double c_ms =
            macs[i] / (rpi4.peak_gmacs / rpi4.cores * 1e9) * 1e3;
        const double m_ms = moved[i] / (rpi4.bandwidth_gbps * 1e9) * 1e3;
        const double pred = cell_real(t, i, "predicted_ms");
        ASSERT_WRITTEN(pred, fmax(c_ms, m_ms), "predicted_ms", 0.0);
        assert_string_equal(cell_text(t, i, "bound"),
                            c_ms > m_ms ? "compute" : "memory");
        ASSERT_WRITTEN(cell_real(t, i, "predicted_energy_proxy_j"),
                       6.5 * pred / 1e3, "predicted_energy_proxy_j",
                       6.5 * run_written_tol("predicted_ms", pred) / 1e3);
        const double lat = cell_real(t, i, "latency_ms");
        assert_true(lat >= 0.0);
        assert_true(cell_real(t, i, "latency_p90_ms") >= lat);
        /* the host predictions' errors, as documented: empty when the
         * median is below the clock (0) */
        const double hp = cell_real(t, i, "host_predicted_ms");
        const double hd = cell_real(t, i, "host_dram_predicted_ms");
        if (lat > 0.0) {
            const double rl = rel("latency_ms", lat);
            ASSERT_WRITTEN(cell_real(t, i, "host_prediction_error"),
                           (hp - lat) / lat, "host_prediction_error",
                           fabs(hp / lat) *
                               (rel("host_predicted_ms", hp) + rl));
            ASSERT_WRITTEN(cell_real(t, i, "host_dram_prediction_error"),
                           (hd - lat) / lat, "host_dram_prediction_error",
                           fabs(hd / lat) *
                               (rel("host_dram_predicted_ms", hd) + rl));
        } else {
            assert_false(cell_set(t, i, "host_prediction_error"));
        }
        /* a hundred bytes sit in the smallest cache the host knows */
        const char *lvl = cell_text(t, i, "host_memory_level");
        if (prof_cache_bytes(1) >= 1024) {
            assert_string_equal(lvl, "L1");
        }
        pred_sum += pred;
    }
    art_table_destroy(t);

    char *hw_path = out_path("hardware_summary.csv");
    assert_int_equal(art_table_load_csv(hw_path, &t, &d), ART_OK);
    assert_int_equal(art_table_rows(t), 1);
    assert_string_equal(cell_text(t, 0, "device"), "rpi4");
    assert_true(cell_real(t, 0, "estimated_total_bytes") == 92 + 72);
    assert_true(cell_real(t, 0, "estimated_total_macs") == 36);
    /* The run was measured on this machine: its utilisations are of this
     * machine's roofs, never of the Pi's (the old summary divided the
     * host's rate by the Pi's peak and printed "utilisation 1.000"). */
    assert_string_equal(cell_text(t, 0, "utilization_machine"), "host");
    const double roof = cell_real(t, 0, "configured_memory_bandwidth_gbps");
    assert_true(roof != rpi4.bandwidth_gbps);
    assert_true(roof >= cell_real(t, 0, "host_bandwidth_gbps"));
    const double lat = cell_real(t, 0, "latency_ms");
    const double lat_s = fmax(lat / 1000.0, 1e-9);
    const double gbps = cell_real(t, 0, "achieved_bandwidth_gbps");
    const double rlat = rel("latency_ms", lat);
    ASSERT_WRITTEN(gbps, 164.0 / lat_s / 1e9, "achieved_bandwidth_gbps",
                   gbps * rlat);
    const double rroof = rel("configured_memory_bandwidth_gbps", roof);
    ASSERT_WRITTEN(cell_real(t, 0, "bandwidth_utilization"),
                   fmin(1.0, gbps / roof), "bandwidth_utilization",
                   gbps / roof * (rel("achieved_bandwidth_gbps", gbps) +
                                  rroof));
    const double host_peak = cell_real(t, 0, "host_peak_gmacs");
    assert_true(cell_real(t, 0, "peak_gmacs") == host_peak);
    assert_true(cell_real(t, 0, "compute_utilization") <= 1.0);
    assert_true(cell_real(t, 0, "bandwidth_utilization") <= 1.0);
    ASSERT_WRITTEN(cell_real(t, 0, "achieved_gmacs"), 36.0 / lat_s / 1e9,
                   "achieved_gmacs", 36.0 / lat_s / 1e9 * rlat);
    ASSERT_WRITTEN(cell_real(t, 0, "intensity_mac_per_byte"), 36.0 / 164.0,
                   "intensity_mac_per_byte", 0.0);
    /* one thread: one of the Pi's four cores */
    const double core_peak = rpi4.peak_gmacs / rpi4.cores;
    assert_true(cell_real(t, 0, "threads") == 1.0);
    ASSERT_WRITTEN(cell_real(t, 0, "knee_mac_per_byte"), host_peak / roof,
                   "knee_mac_per_byte",
                   host_peak / roof *
                       (rel("host_peak_gmacs", host_peak) + rroof));
    ASSERT_WRITTEN(cell_real(t, 0, "device_peak_gmacs"), core_peak,
                   "device_peak_gmacs", 0.0);
    ASSERT_WRITTEN(cell_real(t, 0, "device_bandwidth_gbps"),
                   rpi4.bandwidth_gbps, "device_bandwidth_gbps", 0.0);
    assert_string_equal(cell_text(t, 0, "regime"),
                        36.0 / 164.0 < core_peak / rpi4.bandwidth_gbps
                            ? "memory"
                            : "compute");
    const double pred = cell_real(t, 0, "predicted_ms");
    /* the layers' cells are rounded each: at most half a digit each */
    ASSERT_WRITTEN(pred, pred_sum, "predicted_ms",
                   3.0 * run_written_tol("predicted_ms", pred_sum));
    /* Nothing was measured on the Pi: no prediction error (the old one
     * compared the Pi's prediction with this machine's time); the host's
     * own prediction is judged against the host's time. */
    assert_false(cell_set(t, 0, "prediction_error"));
    const double hpred = cell_real(t, 0, "host_predicted_ms");
    ASSERT_WRITTEN(cell_real(t, 0, "host_prediction_error"),
                   (hpred - lat) / lat, "host_prediction_error",
                   fabs(hpred / lat) * (rel("host_predicted_ms", hpred) +
                                        rlat));
    /* The device's latency: its roofline bound to 2 significant digits,
     * and that bound times this machine's over-run of its own roofline
     * (within a unit of the second digit: pred is read back rounded). */
    const double overrun = cell_real(t, 0, "host_roofline_overrun");
    ASSERT_WRITTEN(overrun, lat / hpred, "host_roofline_overrun",
                   overrun * (rlat + rel("host_predicted_ms", hpred)));
    const double unit = pow(10.0, floor(log10(pred)) - 1);
    ASSERT_NEAR(cell_real(t, 0, "device_latency_lower_bound_ms"), pred,
                unit);
    const double real_ms = pred * overrun;
    ASSERT_NEAR(cell_real(t, 0, "device_latency_realistic_ms"), real_ms,
                pow(10.0, floor(log10(real_ms)) - 1) +
                    real_ms * (rel("predicted_ms", pred) +
                               rel("host_roofline_overrun", overrun)));
    const double opsum = cell_real(t, 0, "operator_sum_ms");
    ASSERT_WRITTEN(cell_real(t, 0, "framing_ms"), lat - opsum, "framing_ms",
                   run_written_tol("latency_ms", lat) +
                       run_written_tol("operator_sum_ms", opsum) +
                       run_written_tol("framing_ms", lat - opsum));
    /* the Pi's power times the Pi's latency, never this machine's */
    ASSERT_WRITTEN(cell_real(t, 0, "energy_proxy_j"), 6.5 * pred / 1000.0,
                   "energy_proxy_j",
                   6.5 * run_written_tol("predicted_ms", pred) / 1000.0);
    assert_true(cell_real(t, 0, "power_watts") == 6.5);
    /* the arena is the peak plan minus parameters: the largest pair is
     * the input and dense1, (8 + 6) * 4 bytes */
    assert_true(cell_real(t, 0, "arena_bytes") == 56);
    assert_true(cell_real(t, 0, "peak_inference_bytes") == 56 + 92);
    art_table_destroy(t);
    free(hw_path);
    free(lw_path);
}

/* The audit: resnet8 on rpi4 at batch 1 printed "28.43 GMAC/s achieved of
 * the fp32 peak 6 (utilisation 1.000)" and "+393% vs measured": this
 * machine's time against the Pi's roofs. Now the utilisations are this
 * machine's, the Pi gets its roofline bound and a realistic range, and
 * no utilisation anywhere exceeds 1. */
static void test_audit_no_mixed_machines(void **state)
{
    (void)state;
    struct run_result r;
    RUN(&r, "--model", "resnet8", "--device", "rpi4", "--batch", "1",
        "--repeats", "2");
    if (r.status != 0) {
        fail_msg("exit %d: %s", r.status, r.err);
    }
    assert_null(strstr(r.out, "vs measured"));
    assert_null(strstr(r.out, "peak 6 "));
    assert_non_null(strstr(r.out, "this machine's fp32 peak"));
    assert_non_null(strstr(r.out, "(roofline lower bound)"));
    assert_non_null(strstr(r.out, "its own roofline, so about"));
    run_free(&r);

    RUN(&r, "--model", "resnet8", "--device", "rpi4", "--batch", "1",
        "--repeats", "2", "--format", "json");
    assert_int_equal(r.status, 0);
    json_t *j = json_loads(r.out, 0, NULL);
    assert_non_null(j);
    json_t *row = json_array_get(json_object_get(j, "hardware_summary"), 0);
    const char *key;
    json_t *v;
    json_object_foreach(row, key, v) {
        if (strstr(key, "utilization") && json_is_number(v)) {
            assert_true(json_number_value(v) <= 1.0);
        }
    }
    assert_true(json_is_null(json_object_get(row, "prediction_error")));
    assert_true(json_number_value(json_object_get(row, "peak_gmacs")) ==
                json_number_value(json_object_get(row, "host_peak_gmacs")));
    json_decref(j);
    run_free(&r);
}

/* An ONNX file that fixes its batch (3) runs at 3, not at 32: the table's
 * MACs and the summary's batch say so; a contradicting --batch is refused
 * naming both. */
static const char *onnx_dir;

static void test_onnx_fixed_batch(void **state)
{
    (void)state;
    char path[4096];
    snprintf(path, sizeof path, "%s/typed_fixed_batch/model.onnx", onnx_dir);
    struct run_result r;
    RUN(&r, "--model", path, "--repeats", "1", "--format", "json");
    if (r.status != 0) {
        fail_msg("exit %d: %s", r.status, r.err);
    }
    json_t *j = json_loads(r.out, 0, NULL);
    assert_non_null(j);
    json_t *row = json_array_get(json_object_get(j, "hardware_summary"), 0);
    assert_true(json_number_value(json_object_get(row, "batch_size")) == 3.0);
    /* the input row: 3 samples of 4 features */
    json_t *in = json_array_get(json_object_get(j, "layers"), 0);
    assert_int_equal(json_integer_value(json_object_get(in,
                                                        "activation_bytes")),
                     3 * 4 * 4);
    json_decref(j);
    run_free(&r);

    RUN(&r, "--model", path, "--batch", "32", "--repeats", "1");
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "--batch 32"));
    assert_non_null(strstr(r.err, "fixes the batch at 3"));
    run_free(&r);
}

static void test_json_and_host(void **state)
{
    (void)state;
    struct run_result r;
    RUN(&r, "--model", "mlp:8-5-3", "--batch", "4", "--precision", "int8",
        "--repeats", "2", "--format", "json", "--latency-multiplier", "3");
    assert_int_equal(r.status, 0);
    json_error_t err;
    json_t *j = json_loads(r.out, 0, &err);
    assert_non_null(j);
    json_t *layers = json_object_get(j, "layers");
    assert_int_equal(json_array_size(layers), 3);
    json_t *hw = json_object_get(j, "hardware_summary");
    assert_int_equal(json_array_size(hw), 1);
    json_t *row = json_array_get(hw, 0);
    assert_string_equal(json_string_value(json_object_get(row, "device")),
                        "host");
    assert_string_equal(json_string_value(json_object_get(row, "precision")),
                        "int8");
    assert_true(json_number_value(json_object_get(row,
                                                  "latency_multiplier")) ==
                3.0);
    /* on the host, the device prediction is the host prediction */
    assert_true(json_number_value(json_object_get(row, "predicted_ms")) ==
                json_number_value(json_object_get(row, "host_predicted_ms")));
    /* int8 as an int8 model file stores it: dense1's 8*5 weights in a
     * byte, 5 biases in int32, a float32 scale and int8 zero point per
     * output channel and one pair for its output: 40 + 20 + 25 + 5 */
    json_t *l1 = json_array_get(layers, 1);
    assert_int_equal(json_integer_value(json_object_get(l1,
                                                        "parameter_bytes")),
                     90);
    assert_int_equal(json_integer_value(json_object_get(l1,
                                                        "parameter_count")),
                     45);
    assert_int_equal(json_integer_value(json_object_get(l1, "macs")),
                     4 * 8 * 5);
    json_decref(j);
    run_free(&r);
}

/* int8 work is predicted with the device's int8 peak, not the fp32 one
 * (an int8 dense measured at 0.008 ms was predicted at 0.032 ms): on a
 * device of 1 GMAC/s fp32 and 100 GMAC/s int8 with a bandwidth too high to
 * matter, dense1's 24 MACs take 24 / 100e9 s = 2.4e-7 ms. */
static void test_int8_peak(void **state)
{
    (void)state;
    struct run_result r;
    RUN(&r, "--model", tiny_path, "--batch", "2", "--precision", "int8",
        "--repeats", "1", "--device",
        "name=b,bandwidth_gbps=1e6,peak_gmacs=1,peak_gmacs_int8=100",
        "--format", "json");
    assert_int_equal(r.status, 0);
    json_t *j = json_loads(r.out, 0, NULL);
    assert_non_null(j);
    json_t *l1 = json_array_get(json_object_get(j, "layers"), 1);
    ASSERT_WRITTEN(json_number_value(json_object_get(l1, "predicted_ms")),
                   2.4e-7, "predicted_ms", 1e-18);
    json_t *row = json_array_get(json_object_get(j, "hardware_summary"), 0);
    assert_true(json_number_value(json_object_get(row, "device_peak_gmacs")) ==
                100.0);
    json_decref(j);
    run_free(&r);
}

/* --threads 2 on smallcnn at batch 4: its two convolutions (226k and
 * 903k MACs, at least the executor's 2^17) run on two threads, the dense
 * layer (31k) and the pools (25k and 13k window reads) on one; a device of
 * 4 cores at 40 GMAC/s predicts the convolutions at 20 GMAC/s and the
 * dense layer at 10, and the summary's peak is two cores'. */
static void test_threads(void **state)
{
    (void)state;
    struct run_result r;
    RUN(&r, "--model", "smallcnn", "--batch", "4", "--threads", "2",
        "--repeats", "1", "--warmup", "0", "--device",
        "name=b,bandwidth_gbps=1e6,peak_gmacs=40,cores=4", "--format",
        "json");
    if (r.status != 0) {
        fail_msg("exit %d: %s", r.status, r.err);
    }
    json_t *j = json_loads(r.out, 0, NULL);
    assert_non_null(j);
    json_t *layers = json_object_get(j, "layers");
    size_t convs = 0;
    for (size_t i = 1; i < json_array_size(layers); i++) {
        json_t *l = json_array_get(layers, i);
        const char *kind = json_string_value(json_object_get(l, "kind"));
        const double macs = json_number_value(json_object_get(l, "macs"));
        const double t = json_number_value(json_object_get(l, "threads"));
        assert_true(t == (macs >= 131072.0 ? 2.0 : 1.0));
        if (strcmp(kind, "conv2d") == 0) {
            convs++;
            assert_true(t == 2.0);
        }
        if (macs > 0.0) {
            /* the memory term is negligible at 1e6 GB/s */
            ASSERT_WRITTEN(
                json_number_value(json_object_get(l, "predicted_ms")),
                macs / (10.0 * t) / 1e6, "predicted_ms", 1e-9 * macs / 1e7);
        }
    }
    assert_int_equal(convs, 2);
    json_t *row = json_array_get(json_object_get(j, "hardware_summary"), 0);
    assert_true(json_number_value(json_object_get(row, "device_peak_gmacs")) ==
                20.0);
    assert_true(json_number_value(json_object_get(row, "threads")) == 2.0);
    json_decref(j);
    run_free(&r);
    static char bad[2][4] = {"0", "65"};
    for (size_t i = 0; i < 2; i++) {
        RUN(&r, "--threads", bad[i]);
        assert_int_equal(r.status, 2);
        assert_non_null(strstr(r.err, "--threads"));
        run_free(&r);
    }
}

/* fp16 must not need more memory than fp32, or say why: the 784-64-10
 * network at batch 32 runs in 296,212 B against fp32's 312,104 B (see
 * tests/profile/test_exec.c); smallcnn, whose pooling layers widen whole
 * tensors, needs more and the summary says why. */
static void test_fp16_memory(void **state)
{
    (void)state;
    struct run_result r;
    RUN(&r, "--model", "mlp:784-64-10", "--batch", "32", "--precision",
        "fp16", "--repeats", "1", "--format", "json");
    assert_int_equal(r.status, 0);
    json_t *j = json_loads(r.out, 0, NULL);
    assert_non_null(j);
    json_t *row = json_array_get(json_object_get(j, "hardware_summary"), 0);
    assert_int_equal(json_integer_value(json_object_get(
                         row, "working_memory_bytes")), 296212);
    assert_int_equal(json_integer_value(json_object_get(
                         row, "fp32_working_memory_bytes")), 312104);
    assert_int_equal(json_integer_value(json_object_get(row,
                                                        "scratch_bytes")),
                     140160);
    assert_string_equal(json_string_value(json_object_get(row,
                                                          "memory_note")),
                        "");
    json_decref(j);
    run_free(&r);

    RUN(&r, "--model", "smallcnn", "--batch", "4", "--precision", "fp16",
        "--repeats", "1");
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "why more than fp32  fp16 needs"));
    run_free(&r);
}

/* The hardware summary's row of a --format json run. */
static json_t *summary_row(json_t *j)
{
    return json_array_get(json_object_get(j, "hardware_summary"), 0);
}

static double host_peak_of_run(const char *extra1, const char *extra2)
{
    struct run_result r;
    char *argv[16] = {(char *)layerwise, "--model", tiny_path, "--batch", "2",
                      "--repeats", "1", "--warmup", "0", "--format", "json",
                      (char *)extra1, (char *)extra2, NULL};
    run_argv(argv, &r);
    if (r.status != 0) {
        fail_msg("status %d: %s", r.status, r.err);
    }
    json_t *j = json_loads(r.out, 0, NULL);
    assert_non_null(j);
    const double v =
        json_number_value(json_object_get(summary_row(j), "host_peak_gmacs"));
    json_decref(j);
    run_free(&r);
    return v;
}

/* Set a figure of the cache file: "peak"."gmacs", or its key. */
static void edit_cache(const char *path, double peak, const char *key)
{
    json_t *j = json_load_file(path, 0, NULL);
    assert_non_null(j);
    if (peak > 0.0) {
        json_object_set_new(json_object_get(j, "peak"), "gmacs",
                            json_real(peak));
    }
    if (key) {
        json_object_set_new(j, "key", json_string(key));
    }
    assert_int_equal(json_dump_file(j, path, JSON_INDENT(2)), 0);
    json_decref(j);
}

/* The host-*.json files of dir/edgefit: how many, and the first's path. */
static int cache_files(const char *dir, char *first, size_t len)
{
    char sub[700];
    snprintf(sub, sizeof sub, "%s/edgefit", dir);
    DIR *d = opendir(sub);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d)) != NULL;) {
        const size_t l = strlen(e->d_name);
        if (strncmp(e->d_name, "host-", 5) == 0 && l > 10 &&
            strcmp(e->d_name + l - 5, ".json") == 0) {
            if (n++ == 0) {
                snprintf(first, len, "%s/%s", sub, e->d_name);
            }
        }
    }
    if (d) {
        closedir(d);
    }
    return n;
}

/* The calibration is kept in $XDG_CACHE_HOME/edgefit/host-XXXXXXXX.json
 * (here a folder of the test's), one file per key: the build's kernel
 * paths, the selected CPU flags and the CPU model. It is read back when
 * the key and the options match, and measured again with --recalibrate,
 * another --triad-mib, or a file whose key is another build's (a C-only
 * build beside a SIMD one) or another CPU's. A planted peak of 1234.5
 * GMAC/s shows which runs read the file. Without XDG_CACHE_HOME,
 * ~/.cache is used. */
static void test_calibration_cache(void **state)
{
    (void)state;
    char cache[600], file[1400], other[1400], home[600];
    snprintf(cache, sizeof cache, "%s/xdg", tmpdir);
    snprintf(home, sizeof home, "%s/home", tmpdir);
    char *old_xdg = getenv("XDG_CACHE_HOME") ? strdup(getenv("XDG_CACHE_HOME"))
                                             : NULL;
    setenv("XDG_CACHE_HOME", cache, 1);

    assert_true(host_peak_of_run("--triad-mib", "8") > 0.0);
    assert_int_equal(cache_files(cache, file, sizeof file), 1);
    json_t *j = json_load_file(file, 0, NULL);
    assert_non_null(j);
    assert_int_equal(json_integer_value(json_object_get(
                         j, "triad_request_bytes")), 8 << 20);
    assert_true(json_array_size(json_object_get(j, "levels")) >= 1);
    /* the key names this build's paths and this process's flags (the app
     * runs with the same environment, so the same KERN_CPU_MASK) */
    char want[600];
    snprintf(want, sizeof want, "paths=%s; flags=0x%x; cpu=",
             kern_built_paths(), kern_cpu_flags());
    const char *key = json_string_value(json_object_get(j, "key"));
    assert_non_null(key);
    if (strncmp(key, want, strlen(want)) != 0) {
        fail_msg("key \"%s\" does not start \"%s\"", key, want);
    }
    char own_key[600];
    snprintf(own_key, sizeof own_key, "%s", key);
    json_decref(j);

    edit_cache(file, 1234.5, NULL);
    assert_true(host_peak_of_run("--triad-mib", "8") == 1234.5);
    /* --recalibrate measures and replaces the file */
    assert_true(host_peak_of_run("--triad-mib", "8") == 1234.5);
    const double fresh = host_peak_of_run("--recalibrate", "--triad-mib=8");
    assert_true(fresh != 1234.5 && fresh > 0.0);
    assert_true(host_peak_of_run("--triad-mib", "8") == fresh);
    /* other options, another build's kernel paths or another CPU: not
     * this calibration */
    edit_cache(file, 1234.5, NULL);
    assert_true(host_peak_of_run("--triad-mib", "9") != 1234.5);
    snprintf(want, sizeof want, "paths=c; flags=0x0; cpu=%s",
             strstr(own_key, "cpu=") + 4);
    if (strcmp(want, own_key) != 0) {
        edit_cache(file, 1234.5, want);
        assert_true(host_peak_of_run("--triad-mib", "9") != 1234.5);
    }
    snprintf(want, sizeof want, "%.*sAnother CPU",
             (int)(strstr(own_key, "cpu=") + 4 - own_key), own_key);
    edit_cache(file, 1234.5, want);
    assert_true(host_peak_of_run("--triad-mib", "9") != 1234.5);
    assert_int_equal(cache_files(cache, other, sizeof other), 1);

    /* Fewer flags (KERN_CPU_MASK=0: the C path) is another key and another
     * file: the planted figure of the full flags is neither read nor
     * replaced. A build or CPU with no SIMD path has nothing to lower. */
    if (kern_cpu_flags() != 0) {
        edit_cache(file, 1234.5, own_key);
        assert_true(host_peak_of_run("--triad-mib", "9") == 1234.5);
        setenv("KERN_CPU_MASK", "0", 1);
        const double c_only = host_peak_of_run("--triad-mib", "9");
        unsetenv("KERN_CPU_MASK");
        assert_true(c_only != 1234.5 && c_only > 0.0);
        assert_int_equal(cache_files(cache, other, sizeof other), 2);
        assert_true(host_peak_of_run("--triad-mib", "9") == 1234.5);
    }

    /* a file that is not JSON is measured over, not an error */
    FILE *f = fopen(file, "w");
    assert_non_null(f);
    fputs("{not json", f);
    fclose(f);
    assert_true(host_peak_of_run("--triad-mib", "9") > 0.0);
    j = json_load_file(file, 0, NULL);
    assert_non_null(j);
    json_decref(j);

    /* no XDG_CACHE_HOME: $HOME/.cache */
    char *old_home = getenv("HOME") ? strdup(getenv("HOME")) : NULL;
    unsetenv("XDG_CACHE_HOME");
    setenv("HOME", home, 1);
    assert_true(host_peak_of_run("--triad-mib", "8") > 0.0);
    char dot[700];
    snprintf(dot, sizeof dot, "%s/.cache", home);
    assert_int_equal(cache_files(dot, file, sizeof file), 1);
    if (old_home) {
        setenv("HOME", old_home, 1);
    }
    if (old_xdg) {
        setenv("XDG_CACHE_HOME", old_xdg, 1);
    }
    free(old_home);
    free(old_xdg);
    char cmd[1400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s' '%s'", cache, home);
    assert_int_equal(system(cmd), 0);
}

/* No setting reaches the library through the environment: PROF_TRIAD_MIB
 * is not read; --triad-mib is. */
static void test_no_environment_settings(void **state)
{
    (void)state;
    char cache[600];
    snprintf(cache, sizeof cache, "%s/xdg-env", tmpdir);
    char *old_xdg = getenv("XDG_CACHE_HOME") ? strdup(getenv("XDG_CACHE_HOME"))
                                             : NULL;
    setenv("XDG_CACHE_HOME", cache, 1);
    setenv("PROF_TRIAD_MIB", "3", 1);
    struct run_result r;
    RUN(&r, "--model", tiny_path, "--batch", "2", "--repeats", "1",
        "--triad-mib", "6", "--recalibrate", "--format", "json");
    unsetenv("PROF_TRIAD_MIB");
    assert_int_equal(r.status, 0);
    char file[1400];
    assert_int_equal(cache_files(cache, file, sizeof file), 1);
    json_t *j = json_load_file(file, 0, NULL);
    assert_non_null(j);
    json_t *levels = json_object_get(j, "levels");
    json_t *dram = json_array_get(levels, json_array_size(levels) - 1);
    /* 6 MiB in three arrays of whole 64-byte lines */
    assert_int_equal(json_integer_value(json_object_get(dram,
                                                        "total_bytes")),
                     (6 << 20) / 192 * 192);
    json_decref(j);
    run_free(&r);
    if (old_xdg) {
        setenv("XDG_CACHE_HOME", old_xdg, 1);
    } else {
        unsetenv("XDG_CACHE_HOME");
    }
    free(old_xdg);
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", cache);
    assert_int_equal(system(cmd), 0);
}

static void test_table_output(void **state)
{
    (void)state;
    struct run_result r;
    RUN(&r, "--model", "smallcnn", "--batch", "1", "--precision", "bf16",
        "--device", "name=board,bandwidth_gbps=12.8,peak_gmacs=40",
        "--repeats", "1");
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "conv2"));
    assert_non_null(strstr(r.out, "device board"));
    assert_non_null(strstr(r.out, "host, cache-aware"));
    assert_non_null(strstr(r.out, "host, DRAM only"));
    /* the board has no power figure: no energy, and a hint */
    assert_non_null(strstr(r.out, "power unknown: give --power-watts"));
    /* every figure of the summary with its unit (the p90 had none) */
    double med, p90;
    const char *fw = strstr(r.out, "measured forward");
    assert_non_null(fw);
    int end = 0;
    assert_int_equal(sscanf(fw, "measured forward %lf ms (p90 %lf ms)%n",
                            &med, &p90, &end),
                     2);
    assert_true(end > 0); /* the text after the p90 matched too */
    assert_true(p90 >= med);
    run_free(&r);
}

/* On the host without --power-watts the energy cells are empty, not 0. */
static void test_energy_unknown(void **state)
{
    (void)state;
    char dir[600];
    snprintf(dir, sizeof dir, "%s/energy", tmpdir);
    struct run_result r;
    RUN(&r, "--model", tiny_path, "--batch", "2", "--repeats", "2",
        "--out", dir);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "power unknown: give --power-watts"));
    assert_null(strstr(r.out, "at 0 W"));
    run_free(&r);
    char *lw = art_path_join(dir, "layerwise_breakdown.csv");
    char *hw = art_path_join(dir, "hardware_summary.csv");
    art_table *t = NULL;
    struct art_diag d;
    assert_int_equal(art_table_load_csv(lw, &t, &d), ART_OK);
    for (size_t i = 0; i < art_table_rows(t); i++) {
        assert_false(cell_set(t, i, "predicted_energy_proxy_j"));
    }
    art_table_destroy(t);
    assert_int_equal(art_table_load_csv(hw, &t, &d), ART_OK);
    assert_false(cell_set(t, 0, "energy_proxy_j"));
    assert_false(cell_set(t, 0, "predicted_energy_proxy_j"));
    assert_false(cell_set(t, 0, "power_watts"));
    art_table_destroy(t);
    free(hw);
    free(lw);
    run_rmdir(dir);
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    assert_true(fputs(text, f) >= 0);
    assert_int_equal(fclose(f), 0);
}

/* A device file: a device from it is predicted with its own figures. */
static void test_devices_file(void **state)
{
    (void)state;
    char path[600], dir[600];
    snprintf(path, sizeof path, "%s/boards.csv", tmpdir);
    snprintf(dir, sizeof dir, "%s/boards", tmpdir);
    /* columns in another order; power and memory optional */
    write_file(path, "peak_gmacs,name,bandwidth_gbps,power_watts\n"
                     "2,slowboard,0.5,3\n"
                     "100,fastboard,20,\n");
    struct run_result r;
    RUN(&r, "--model", tiny_path, "--batch", "2", "--repeats", "2",
        "--devices", path, "--device", "slowboard", "--format", "csv",
        "--out", dir);
    if (r.status != 0) {
        fail_msg("exit %d: %s", r.status, r.err);
    }
    run_free(&r);
    char *lw = art_path_join(dir, "layerwise_breakdown.csv");
    art_table *t = NULL;
    struct art_diag d;
    assert_int_equal(art_table_load_csv(lw, &t, &d), ART_OK);
    /* dense1: 24 MAC / 2e9 = 1.2e-5 ms; 116 B / 0.5e9 = 2.32e-4 ms */
    ASSERT_WRITTEN(cell_real(t, 1, "predicted_ms"), 2.32e-4, "predicted_ms",
                   1e-15);
    ASSERT_WRITTEN(cell_real(t, 1, "predicted_energy_proxy_j"),
                   3.0 * 2.32e-4 / 1000.0, "predicted_energy_proxy_j", 1e-18);
    /* dense2: 72 B / 0.5e9 = 1.44e-4 ms */
    ASSERT_WRITTEN(cell_real(t, 2, "predicted_ms"), 1.44e-4, "predicted_ms",
                   1e-15);
    art_table_destroy(t);
    free(lw);
    run_rmdir(dir);

    /* the second board has no power: no energy */
    RUN(&r, "--model", tiny_path, "--batch", "2", "--repeats", "1",
        "--devices", path, "--device", "fastboard");
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "device fastboard"));
    assert_non_null(strstr(r.out, "power unknown: give --power-watts"));
    run_free(&r);

    /* the catalogue with its sources, then the file's boards */
    RUN(&r, "--list-devices", "--devices", path);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "rpi4: bandwidth 5.127 GB/s"));
    /* every board of the catalogue, its one-core bandwidth, clock and
     * caches, and a source line per figure */
    assert_non_null(strstr(r.out, "rpi4-1.8: bandwidth 4.8412 GB/s (one "
                                  "core 4.8412)"));
    assert_non_null(strstr(r.out, "6 cores at 1.5 GHz, L1d 64 KiB, L2 "
                                  "1536 KiB, L3 2048 KiB"));
    assert_non_null(strstr(r.out, "\n    peak int8 307.2 GMAC/s: ARMv8.2 "
                                  "SDOT"));
    assert_non_null(strstr(r.out, "\n    bandwidth 1 core 7.553 GB/s"));
    assert_non_null(strstr(r.out, "data sheet"));
    assert_non_null(strstr(r.out, "host: this machine"));
    assert_non_null(strstr(r.out, "slowboard: bandwidth 0.5 GB/s, peak 2 "
                                  "GMAC/s, power 3 W, memory unknown"));
    char where[700];
    snprintf(where, sizeof where, "source: %s:3", path);
    assert_non_null(strstr(r.out, where));
    run_free(&r);
    RUN(&r, "--list-devices");
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "jetson-nano"));
    assert_null(strstr(r.out, "slowboard"));
    run_free(&r);
}

/* Bad device files: exit 2, the message names file:line, no output. */
static void test_devices_errors(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        int line;
        const char *what;
    } cases[] = {
        {"name,bandwidth_gbps\nb,1\n", 1, "missing column 'peak_gmacs'"},
        {"name,bandwidth_gbps,peak_gmacs,colour\nb,1,2,red\n", 1,
         "unknown column 'colour'"},
        {"name,bandwidth_gbps,peak_gmacs\n", 1, "no devices"},
        {"name,bandwidth_gbps,peak_gmacs\na,1,2\nb,fast,2\n", 3,
         "bandwidth_gbps: 'fast' is not a number"},
        /* blank lines count: the lines are the file's own */
        {"\nname,bandwidth_gbps,peak_gmacs\n\na,1,2\n  \nb,fast,2\n", 6,
         "bandwidth_gbps: 'fast' is not a number"},
        {"\n\nname,bandwidth_gbps\nb,1\n", 3,
         "missing column 'peak_gmacs'"},
        {"name,bandwidth_gbps,peak_gmacs\na,1,2\n\na,3,4\n", 4,
         "'a' already given on line 2"},
        /* a subnormal is a number, only out of range */
        {"name,bandwidth_gbps,peak_gmacs\na,1e-310,2\n", 2,
         "bandwidth_gbps: '1e-310' is out of range (too small"},
        {"name,bandwidth_gbps,peak_gmacs\na,1,1e999\n", 2,
         "is out of range (too large"},
        /* a built-in name is refused, not silently overridden */
        {"name,bandwidth_gbps,peak_gmacs\nrpi4,1,2\n", 2,
         "'rpi4' is a built-in device"},
        /* not UTF-8: Latin-1 e acute, at its column */
        {"name,bandwidth_gbps,peak_gmacs\ncaf\xe9,1,2\n", 2,
         "column 4: invalid UTF-8 (byte 0xE9)"},
        {"name,bandwidth_gbps,peak_gmacs\na,-1,2\n", 2,
         "bandwidth_gbps must be a number > 0"},
        {"name,bandwidth_gbps,peak_gmacs,power_watts\na,1,2,-5\n", 2,
         "power_watts must be a number >= 0"},
        {"name,bandwidth_gbps,peak_gmacs\na,1,2\na,3,4\n", 3,
         "'a' already given on line 2"},
        {"name,bandwidth_gbps,peak_gmacs\nhost,1,2\n", 2, "'host'"},
        {"name,bandwidth_gbps,peak_gmacs\n,1,2\n", 2, "name"},
        {"name,bandwidth_gbps,peak_gmacs\na,1\n", 2, ""},
    };
    char path[600], dir[600];
    snprintf(path, sizeof path, "%s/bad.csv", tmpdir);
    snprintf(dir, sizeof dir, "%s/rejected-devices", tmpdir);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        write_file(path, cases[i].text);
        struct run_result r;
        RUN(&r, "--model", tiny_path, "--devices", path, "--out", dir);
        if (r.status != 2) {
            fail_msg("case %zu: exit %d (%s)", i, r.status, r.err);
        }
        char where[700];
        snprintf(where, sizeof where, "%s:%d: ", path, cases[i].line);
        if (!strstr(r.err, where) || !strstr(r.err, cases[i].what)) {
            fail_msg("case %zu: expected '%s' and '%s' in: %s", i, where,
                     cases[i].what, r.err);
        }
        assert_int_equal(strlen(r.out), 0);
        assert_int_equal(run_count_entries(dir), -1);
        run_free(&r);
    }
    struct run_result r;
    RUN(&r, "--devices", "no-such-devices.csv", "--out", dir);
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "no-such-devices.csv"));
    assert_int_equal(run_count_entries(dir), -1);
    run_free(&r);
    /* a file that is not there: the system's reason */
    RUN(&r, "--devices", "no-such-devices.csv", "--out", dir);
    assert_non_null(strstr(r.err, "no-such-devices.csv: No such file"));
    run_free(&r);
    /* a leading byte-order mark is skipped, lines still the file's */
    write_file(path, "\xef\xbb\xbfname,bandwidth_gbps,peak_gmacs\n\nbom,1,2\n");
    RUN(&r, "--devices", path, "--list-devices");
    assert_int_equal(r.status, 0);
    char where[700];
    snprintf(where, sizeof where, "bom: bandwidth 1 GB/s");
    assert_non_null(strstr(r.out, where));
    snprintf(where, sizeof where, "source: %s:3", path);
    assert_non_null(strstr(r.out, where));
    run_free(&r);
    /* a name neither in the file nor in the catalogue */
    write_file(path, "name,bandwidth_gbps,peak_gmacs\na,1,2\n");
    RUN(&r, "--devices", path, "--device", "b", "--out", dir);
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "unknown device 'b'"));
    assert_int_equal(run_count_entries(dir), -1);
    run_free(&r);
}

/* Bad input: exit 2 with a message naming the argument, and no file. */
static void test_bad_input(void **state)
{
    (void)state;
    char dir[600];
    snprintf(dir, sizeof dir, "%s/rejected", tmpdir);
    const char *bad[][2] = {
        {"--device", "mars"},
        {"--device", "name=x,bandwidth_gbps=abc,peak_gmacs=1"},
        {"--device", "name=x,bandwidth_gbps=-1,peak_gmacs=1"},
        {"--precision", "fp64"},
        {"--precision", "int4"},
        {"--batch", "0"},
        {"--repeats", "0"},
        {"--format", "xml"},
        {"--model", "mlp:8"},
        {"--model", "no-such-file.model"},
        {"--latency-multiplier", "-1"},
        {"--power-watts", "nan"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct run_result r;
        RUN(&r, (char *)bad[i][0], (char *)bad[i][1], "--out", dir);
        if (r.status != 2) {
            fail_msg("%s %s: exit %d (%s)", bad[i][0], bad[i][1], r.status,
                     r.err);
        }
        assert_true(strlen(r.err) > 0);
        assert_int_equal(run_count_entries(dir), -1);
        run_free(&r);
    }
    struct run_result r;
    RUN(&r, "--device", "mars");
    assert_non_null(strstr(r.err, "mars"));
    run_free(&r);
    RUN(&r, "--bogus");
    assert_int_equal(r.status, 2);
    run_free(&r);
    RUN(&r, "--help");
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "--device"));
    run_free(&r);
    RUN(&r, "--version");
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "edgefit-layerwise"));
    run_free(&r);
}

/* ---- the presentation: totals, shares, order, kinds, devices ------------- */

static double jnum(json_t *obj, const char *key)
{
    json_t *v = json_object_get(obj, key);
    if (!json_is_number(v)) {
        fail_msg("no number '%s'", key);
    }
    return json_number_value(v);
}

static json_t *run_json(struct run_result *r)
{
    if (r->status != 0) {
        fail_msg("exit %d: %s", r->status, r->err);
    }
    json_t *j = json_loads(r->out, 0, NULL);
    assert_non_null(j);
    return j;
}

/* resnet8 at batch 1: the totals are the sums of the rows and the
 * preset's known figures (77,706 parameters: Keras' 78,666 less the
 * folded batch norms; 12,501,632 MACs, tests/memest/test_presets.c); the
 * shares sum to 1 and the running share ends at 1; the spread brackets
 * the median; the kinds add up to the model. */
static void test_totals_and_shares(void **state)
{
    (void)state;
    char dir[600];
    snprintf(dir, sizeof dir, "%s/totals", tmpdir);
    struct run_result r;
    RUN(&r, "--model", "resnet8", "--batch", "1", "--repeats", "3",
        "--warmup", "2", "--format", "json", "--out", dir);
    json_t *j = run_json(&r);
    json_t *layers = json_object_get(j, "layers");
    json_t *tot = json_array_get(json_object_get(j, "totals"), 0);
    assert_non_null(tot);
    const size_t n = json_array_size(layers);
    assert_int_equal(n, 16); /* the input and 15 layers */
    uint64_t params = 0, macs = 0, pbytes = 0, abytes = 0;
    double lat = 0.0, lat_tol = 0.0, share = 0.0, share_tol = 0.0;
    double prev_cum = 0.0;
    for (size_t i = 0; i < n; i++) {
        json_t *l = json_array_get(layers, i);
        params += (uint64_t)jnum(l, "parameter_count");
        macs += (uint64_t)jnum(l, "macs");
        pbytes += (uint64_t)jnum(l, "parameter_bytes");
        abytes += (uint64_t)jnum(l, "activation_bytes");
        if (i == 0) {
            /* staging the input is not a layer: no share */
            assert_true(json_is_null(json_object_get(l, "time_share")) ||
                        !json_object_get(l, "time_share"));
            continue;
        }
        const double t = jnum(l, "latency_ms");
        lat += t;
        lat_tol += run_written_tol("latency_ms", t);
        const double sh = jnum(l, "time_share");
        share += sh;
        share_tol += run_written_tol("time_share", sh);
        /* the running share follows the table's order */
        const double cum = jnum(l, "cumulative_time_share");
        assert_true(run_written_near(cum, prev_cum + sh,
                                     "cumulative_time_share", share_tol));
        assert_true(cum >= prev_cum);
        prev_cum = cum;
        assert_true(jnum(l, "latency_min_ms") <= t &&
                    t <= jnum(l, "latency_max_ms"));
        assert_true(jnum(l, "latency_std_ms") >= 0.0);
        assert_true(jnum(l, "first_run_ms") > 0.0);
    }
    /* the shares are the latencies over their sum */
    for (size_t i = 1; i < n; i++) {
        json_t *l = json_array_get(layers, i);
        const double t = jnum(l, "latency_ms");
        assert_true(run_written_near(jnum(l, "time_share"), t / lat,
                                     "time_share",
                                     (run_written_tol("latency_ms", t) / t +
                                      lat_tol / lat) * t / lat));
    }
    assert_true(fabs(share - 1.0) <= share_tol + 1e-12);
    assert_true(run_written_near(prev_cum, 1.0, "cumulative_time_share",
                                 0.0));
    /* the totals: the rows' sums, and the preset's known figures */
    assert_true(jnum(tot, "layer_count") == 15.0);
    assert_true(jnum(tot, "parameter_count") == (double)params);
    assert_true(jnum(tot, "macs") == (double)macs);
    assert_true(params == 77706 && macs == 12501632);
    assert_true(jnum(tot, "parameter_bytes") == (double)pbytes);
    assert_true(pbytes == 4 * 77706);
    assert_true(jnum(tot, "activation_bytes") == (double)abytes);
    assert_written(jnum(tot, "parameter_memory_mb"), pbytes / 1048576.0,
                   "parameter_memory_mb");
    assert_written(jnum(tot, "activation_memory_mb"), abytes / 1048576.0,
                   "activation_memory_mb");
    json_t *hw = json_array_get(json_object_get(j, "hardware_summary"), 0);
    const double peak = jnum(hw, "peak_inference_bytes");
    assert_true(jnum(tot, "peak_inference_bytes") == peak);
    assert_written(jnum(tot, "peak_inference_memory_mb"), peak / 1048576.0,
                   "peak_inference_memory_mb");
    assert_true(run_written_near(jnum(tot, "layer_latency_sum_ms"), lat,
                                 "layer_latency_sum_ms", lat_tol));
    assert_true(jnum(tot, "latency_ms") == jnum(hw, "latency_ms"));
    assert_true(jnum(tot, "first_run_ms") > 0.0);
    assert_true(jnum(tot, "warmup_mean_ms") > 0.0);

    /* by kind: 9 convolutions, 3 adds, a pool, a flatten, a dense; the
     * counts, MACs, parameters and shares add up to the model's */
    json_t *kinds = json_object_get(j, "layers_by_kind");
    assert_int_equal(json_array_size(kinds), 5);
    double kl = 0.0, kshare = 0.0, kshare_tol = 0.0, prev = INFINITY;
    uint64_t kmacs = 0, kparams = 0;
    for (size_t k = 0; k < json_array_size(kinds); k++) {
        json_t *e = json_array_get(kinds, k);
        const char *kind = json_string_value(json_object_get(e, "kind"));
        const double count = jnum(e, "layer_count");
        size_t want = 0;
        for (size_t i = 1; i < n; i++) {
            want += strcmp(json_string_value(json_object_get(
                               json_array_get(layers, i), "kind")),
                           kind) == 0;
        }
        assert_true(count == (double)want);
        if (strcmp(kind, "conv2d") == 0) {
            assert_true(count == 9.0);
        }
        kl += count;
        kmacs += (uint64_t)jnum(e, "macs");
        kparams += (uint64_t)jnum(e, "parameter_count");
        const double sh = jnum(e, "time_share");
        kshare += sh;
        kshare_tol += run_written_tol("time_share", sh);
        /* the most time first */
        assert_true(jnum(e, "latency_ms") <= prev);
        prev = jnum(e, "latency_ms");
    }
    assert_true(kl == 15.0 && kmacs == macs && kparams == params);
    assert_true(fabs(kshare - 1.0) <= kshare_tol + 1e-12);
    json_decref(j);
    run_free(&r);

    /* the files: the kinds as their own CSV, the totals in the JSON only */
    char *kind_csv = art_path_join(dir, "layerwise_by_kind.csv");
    art_table *t = NULL;
    struct art_diag d;
    assert_int_equal(art_table_load_csv(kind_csv, &t, &d), ART_OK);
    assert_int_equal(art_table_rows(t), 5);
    art_table_destroy(t);
    free(kind_csv);
    char *totals_csv = art_path_join(dir, "totals.csv");
    assert_int_equal(access(totals_csv, F_OK), -1);
    free(totals_csv);
    char *lj = art_path_join(dir, "layerwise.json");
    j = json_load_file(lj, 0, NULL);
    assert_non_null(j);
    assert_true(jnum(json_array_get(json_object_get(j, "totals"), 0),
                     "parameter_count") == 77706.0);
    assert_non_null(json_object_get(j, "layers_by_kind"));
    json_decref(j);
    free(lj);
    run_rmdir(dir);
}

/* Thousands separators and scaled units on the terminal, plain numbers in
 * CSV; the totals block follows the layer table, the kinds after it. */
static void test_terminal_numbers(void **state)
{
    (void)state;
    struct run_result r;
    RUN(&r, "--model", "resnet8", "--batch", "1", "--repeats", "1",
        "--warmup", "0", "--quiet");
    assert_int_equal(r.status, 0);
    /* s1_conv1: 2,359,296 MACs and 2,320 parameters */
    assert_non_null(strstr(r.out, "2,359,296"));
    assert_null(strstr(r.out, "2359296"));
    const char *totals = strstr(r.out, "Total parameters:       77,706\n");
    assert_non_null(totals);
    assert_non_null(strstr(r.out, "Total MACs:             12,501,632 "
                                  "(12.5 M)\n"));
    /* 310,824 bytes of parameters: 0.30 MB */
    assert_non_null(strstr(r.out, "Parameter size:         0.30 MB "
                                  "(310,824 bytes)"));
    const char *kinds = strstr(r.out, "by operator kind:");
    assert_non_null(kinds);
    assert_true(strstr(r.out, "s1_conv1") < totals && totals < kinds);
    run_free(&r);

    RUN(&r, "--model", "resnet8", "--batch", "1", "--repeats", "1",
        "--warmup", "0", "--format", "csv");
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, ",2359296,"));
    assert_null(strstr(r.out, "2,359,296"));
    run_free(&r);
}

/* The layers' names, kinds and a numeric column of a CSV table. */
static art_table *run_csv_table(struct run_result *r)
{
    if (r->status != 0) {
        fail_msg("exit %d: %s", r->status, r->err);
    }
    char path[700];
    snprintf(path, sizeof path, "%s/sorted.csv", tmpdir);
    write_file(path, r->out);
    art_table *t = NULL;
    struct art_diag d;
    assert_int_equal(art_table_load_csv(path, &t, &d), ART_OK);
    unlink(path);
    return t;
}

/* --sort orders the rows, --top keeps the first N, the running share
 * follows the order; bad values are refused. */
static void test_sort_and_top(void **state)
{
    (void)state;
    static const struct {
        const char *key, *column;
        bool text;
    } sorts[] = {
        {"time", "latency_ms", false},
        {"macs", "macs", false},
        {"params", "parameter_count", false},
        {"memory", "activation_bytes", false},
        {"name", "layer", true},
    };
    for (size_t s = 0; s < sizeof sorts / sizeof sorts[0]; s++) {
        struct run_result r;
        RUN(&r, "--model", "smallcnn", "--batch", "2", "--repeats", "1",
            "--warmup", "0", "--sort", (char *)sorts[s].key, "--format",
            "csv");
        art_table *t = run_csv_table(&r);
        run_free(&r);
        const size_t rows = art_table_rows(t);
        assert_true(rows > 3);
        for (size_t i = 1; i < rows; i++) {
            if (sorts[s].text) {
                assert_true(strcmp(cell_text(t, i - 1, sorts[s].column),
                                   cell_text(t, i, sorts[s].column)) < 0);
                continue;
            }
            /* the input row has no latency: it comes last by time */
            if (!cell_set(t, i, sorts[s].column)) {
                assert_true(i == rows - 1);
                continue;
            }
            if (cell_real(t, i - 1, sorts[s].column) <
                cell_real(t, i, sorts[s].column)) {
                fail_msg("--sort %s: row %zu above row %zu", sorts[s].key,
                         i, i - 1);
            }
        }
        if (strcmp(sorts[s].key, "time") == 0) {
            /* the running share climbs down the sorted table to 1 */
            double prev = 0.0;
            for (size_t i = 0; i + 1 < rows; i++) {
                const double c = cell_real(t, i, "cumulative_time_share");
                assert_true(c >= prev);
                prev = c;
            }
            assert_true(run_written_near(prev, 1.0, "cumulative_time_share",
                                         1e-5));
        }
        art_table_destroy(t);
    }
    /* --top 2 by time: the two slowest layers, in every output */
    struct run_result r;
    char dir[600];
    snprintf(dir, sizeof dir, "%s/top", tmpdir);
    RUN(&r, "--model", "smallcnn", "--batch", "2", "--repeats", "1",
        "--warmup", "0", "--sort", "time", "--top", "2", "--format", "csv",
        "--out", dir);
    art_table *t = run_csv_table(&r);
    run_free(&r);
    assert_int_equal(art_table_rows(t), 2);
    assert_true(cell_real(t, 0, "latency_ms") >=
                cell_real(t, 1, "latency_ms"));
    art_table_destroy(t);
    char *lw = art_path_join(dir, "layerwise_breakdown.csv");
    assert_int_equal(art_table_load_csv(lw, &t, NULL), ART_OK);
    assert_int_equal(art_table_rows(t), 2);
    art_table_destroy(t);
    free(lw);
    run_rmdir(dir);
    /* the terminal says the totals are the model's */
    RUN(&r, "--model", "smallcnn", "--batch", "2", "--repeats", "1",
        "--warmup", "0", "--sort", "time", "--top", "2", "--quiet");
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "(the first 2 of "));
    run_free(&r);
    /* bad values */
    const char *bad[][2] = {{"--sort", "speed"}, {"--top", "0"},
                            {"--top", "-1"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        RUN(&r, (char *)bad[i][0], (char *)bad[i][1]);
        assert_int_equal(r.status, 2);
        assert_non_null(strstr(r.err, bad[i][0]));
        run_free(&r);
    }
}

/* --device rpi4,jetson-nano,host: one column per device, each the
 * prediction a run with that device alone gives. */
static void test_several_devices(void **state)
{
    (void)state;
    struct run_result r;
    RUN(&r, "--model", "smallcnn", "--batch", "2", "--repeats", "1",
        "--warmup", "0", "--device", "rpi4,jetson-nano,host", "--format",
        "json");
    json_t *multi = run_json(&r);
    run_free(&r);
    json_t *ml = json_object_get(multi, "layers");
    /* the first device is the run's */
    assert_string_equal(json_string_value(json_object_get(
                            json_array_get(json_object_get(
                                               multi, "hardware_summary"),
                                           0),
                            "device")),
                        "rpi4");
    static const char *const devs[][2] = {
        {"rpi4", "predicted_ms_rpi4"},
        {"jetson-nano", "predicted_ms_jetson_nano"},
        {"host", "predicted_ms_host"},
    };
    for (size_t k = 0; k < 3; k++) {
        RUN(&r, "--model", "smallcnn", "--batch", "2", "--repeats", "1",
            "--warmup", "0", "--device", (char *)devs[k][0], "--format",
            "json");
        json_t *one = run_json(&r);
        run_free(&r);
        json_t *ol = json_object_get(one, "layers");
        assert_int_equal(json_array_size(ol), json_array_size(ml));
        /* no per-device column for one device */
        assert_null(json_object_get(json_array_get(ol, 1), devs[k][1]));
        for (size_t i = 0; i < json_array_size(ol); i++) {
            json_t *a = json_object_get(json_array_get(ml, i), devs[k][1]);
            json_t *b = json_object_get(json_array_get(ol, i),
                                        "predicted_ms");
            if (i == 0) { /* the input row: no prediction */
                assert_true(!a || json_is_null(a));
                continue;
            }
            if (json_number_value(a) != json_number_value(b)) {
                fail_msg("%s row %zu: %.17g in the run of three, %.17g "
                         "alone", devs[k][0], i, json_number_value(a),
                         json_number_value(b));
            }
        }
        json_decref(one);
    }
    json_decref(multi);
    /* refused: a device twice, an unknown one, an empty one */
    const char *bad[][2] = {{"rpi4,rpi4", "listed twice"},
                            {"rpi4,mars", "mars"},
                            {"rpi4,", "empty"},
                            {",rpi4", "empty"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        RUN(&r, "--model", "smallcnn", "--device", (char *)bad[i][0]);
        assert_int_equal(r.status, 2);
        if (!strstr(r.err, bad[i][1])) {
            fail_msg("--device %s: '%s' not in: %s", bad[i][0], bad[i][1],
                     r.err);
        }
        run_free(&r);
    }
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s path/to/edgefit-layerwise\n", argv[0]);
        return 2;
    }
    layerwise = argv[1];
    onnx_dir = argc > 2 ? argv[2] : "tests/data/onnx";
    /* A small triad keeps the host calibration quick; its value is not
     * checked against anything. */
    setenv("PROF_TRIAD_MIB", "24", 1);
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    snprintf(tiny_path, sizeof tiny_path, "%s/tiny.model", tmpdir);
    FILE *f = fopen(tiny_path, "w");
    if (!f || fputs(TINY, f) < 0 || fclose(f) != 0) {
        perror(tiny_path);
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tiny_on_rpi4),
        cmocka_unit_test(test_audit_no_mixed_machines),
        cmocka_unit_test(test_onnx_fixed_batch),
        cmocka_unit_test(test_json_and_host),
        cmocka_unit_test(test_table_output),
        cmocka_unit_test(test_calibration_cache),
        cmocka_unit_test(test_fp16_memory),
        cmocka_unit_test(test_int8_peak),
        cmocka_unit_test(test_threads),
        cmocka_unit_test(test_no_environment_settings),
        cmocka_unit_test(test_energy_unknown),
        cmocka_unit_test(test_devices_file),
        cmocka_unit_test(test_devices_errors),
        cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_totals_and_shares),
        cmocka_unit_test(test_terminal_numbers),
        cmocka_unit_test(test_sort_and_top),
        cmocka_unit_test(test_several_devices),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    run_rmdir(tmpdir);
    return rc;
}
