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
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "edgefit/artifacts.h"
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

/* input 4, dense 3 relu, dense 2 softmax at batch 2, fp32:
 *   input   8 elements,  32 B
 *   dense1  6 elements,  24 B, 15 parameters (60 B), 2*4*3 = 24 MACs
 *   dense2  4 elements,  16 B,  8 parameters (32 B), 2*3*2 = 12 MACs
 * bytes moved per operator: staging 8*4 + 8*4 = 64, dense1 60 + 32 + 24 =
 * 116, dense2 32 + 24 + 16 = 72. */
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
    const double macs[] = {0, 24, 12}, moved[] = {64, 116, 72};
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
        assert_true(cell_real(t, i, "bytes_moved") == moved[i]);
        /* roofline on the catalogue's rpi4 */
        const double c_ms = macs[i] / (rpi4.peak_gmacs * 1e9) * 1e3;
        const double m_ms = moved[i] / (rpi4.bandwidth_gbps * 1e9) * 1e3;
        const double pred = cell_real(t, i, "predicted_ms");
        ASSERT_NEAR(pred, fmax(c_ms, m_ms), 1e-12 * pred);
        assert_string_equal(cell_text(t, i, "bound"),
                            c_ms > m_ms ? "compute" : "memory");
        ASSERT_NEAR(cell_real(t, i, "predicted_energy_proxy_j"),
                    6.5 * pred / 1e3, 1e-12);
        const double lat = cell_real(t, i, "latency_ms");
        assert_true(lat >= 0.0);
        assert_true(cell_real(t, i, "latency_p90_ms") >= lat);
        /* the host prediction's error, as documented */
        const double hp = cell_real(t, i, "host_predicted_ms");
        ASSERT_NEAR(cell_real(t, i, "host_prediction_error"),
                    (hp - fmax(lat, 1e-6)) / fmax(lat, 1e-6),
                    1e-9 * fabs(hp / fmax(lat, 1e-6)) + 1e-12);
        pred_sum += pred;
    }
    art_table_destroy(t);

    char *hw_path = out_path("hardware_summary.csv");
    assert_int_equal(art_table_load_csv(hw_path, &t, &d), ART_OK);
    assert_int_equal(art_table_rows(t), 1);
    assert_string_equal(cell_text(t, 0, "device"), "rpi4");
    assert_true(cell_real(t, 0, "estimated_total_bytes") == 92 + 72);
    assert_true(cell_real(t, 0, "estimated_total_macs") == 36);
    assert_true(cell_real(t, 0, "configured_memory_bandwidth_gbps") ==
                rpi4.bandwidth_gbps);
    const double lat = cell_real(t, 0, "latency_ms");
    const double lat_s = fmax(lat / 1000.0, 1e-9);
    const double gbps = cell_real(t, 0, "achieved_bandwidth_gbps");
    ASSERT_NEAR(gbps, 164.0 / lat_s / 1e9, 1e-9 * gbps);
    ASSERT_NEAR(cell_real(t, 0, "bandwidth_utilization"),
                gbps / rpi4.bandwidth_gbps, 1e-9 * gbps);
    ASSERT_NEAR(cell_real(t, 0, "achieved_gmacs"), 36.0 / lat_s / 1e9,
                1e-9 * (36.0 / lat_s / 1e9));
    ASSERT_NEAR(cell_real(t, 0, "arithmetic_intensity"), 36.0 / 164.0,
                1e-15);
    ASSERT_NEAR(cell_real(t, 0, "roofline_knee"),
                rpi4.peak_gmacs / rpi4.bandwidth_gbps, 1e-12);
    assert_string_equal(cell_text(t, 0, "regime"),
                        36.0 / 164.0 < rpi4.peak_gmacs / rpi4.bandwidth_gbps
                            ? "memory"
                            : "compute");
    const double pred = cell_real(t, 0, "predicted_ms");
    ASSERT_NEAR(pred, pred_sum, 1e-12 * pred_sum);
    /* against the measured forward pass */
    ASSERT_NEAR(cell_real(t, 0, "prediction_error"),
                (pred - lat) / lat, 1e-9 * fabs(pred / lat) + 1e-12);
    ASSERT_NEAR(cell_real(t, 0, "framing_ms"),
                lat - cell_real(t, 0, "operator_sum_ms"), 1e-12);
    ASSERT_NEAR(cell_real(t, 0, "energy_proxy_j"), 6.5 * lat / 1000.0,
                1e-15);
    assert_true(cell_real(t, 0, "power_watts") == 6.5);
    /* the arena is the peak plan minus parameters: the largest pair is
     * the input and dense1, (8 + 6) * 4 bytes */
    assert_true(cell_real(t, 0, "arena_bytes") == 56);
    assert_true(cell_real(t, 0, "peak_inference_bytes") == 56 + 92);
    art_table_destroy(t);
    free(hw_path);
    free(lw_path);
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
    /* int8 stores one byte per element: dense1 8*5 + 5 parameters */
    json_t *l1 = json_array_get(layers, 1);
    assert_int_equal(json_integer_value(json_object_get(l1,
                                                        "parameter_bytes")),
                     45);
    assert_int_equal(json_integer_value(json_object_get(l1, "macs")),
                     4 * 8 * 5);
    json_decref(j);
    run_free(&r);
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
    assert_non_null(strstr(r.out, "host prediction"));
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

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s path/to/edgefit-layerwise\n", argv[0]);
        return 2;
    }
    layerwise = argv[1];
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
        cmocka_unit_test(test_json_and_host),
        cmocka_unit_test(test_table_output),
        cmocka_unit_test(test_bad_input),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    run_rmdir(tmpdir);
    return rc;
}
