/* edgefit-memfit end to end: its outputs against hand-computed figures of
 * the 784-64-10 network, its exit codes, and that rejected input writes no
 * file. The program path comes as argv[1]. */
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
#include "run.h"

static const char *memfit;
static char tmpdir[] = "/tmp/edgefit-memfit-XXXXXX";

#define RUN(r, ...)                                                          \
    do {                                                                     \
        char *argv_[] = {(char *)memfit, __VA_ARGS__, NULL};                 \
        run_argv(argv_, (r));                                                \
    } while (0)

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
    assert_non_null(v);
    return json_number_value(v);
}

static json_int_t jint(json_t *obj, const char *key)
{
    json_t *v = json_object_get(obj, key);
    assert_true(json_is_integer(v));
    return json_integer_value(v);
}

/* The example: fp16 under a 1 MB budget keeps batch 32 at
 * (50,890 + 27,456) * 2 bytes = 156,692 B = 0.149433 MB. */
static void test_seed_example_json(void **state)
{
    (void)state;
    struct run_result r;
    RUN(&r, "--model", "mlp:784-64-10", "--batch", "32", "--precision", "fp16",
        "--max-memory-mb", "1", "--batch-limit", "64", "--format", "json");
    assert_int_equal(r.status, 0);
    json_t *j = parse_json(r.out);
    json_t *plan = json_object_get(j, "memory_plan");
    assert_true(json_is_true(json_object_get(plan, "enabled")));
    assert_int_equal(jint(plan, "batch_size"), 32);
    assert_string_equal(
        json_string_value(json_object_get(plan, "precision_mode")), "fp16");
    /* The plan speaks of peak inference memory: 101,780 B of parameters
     * + the input and hidden buffers, (25,088 + 2,048) * 2 B = 156,052 B;
     * the original's sum (0.149433 MB) stays as total_memory_mb. */
    assert_written(jreal(plan, "estimated_memory_mb"), 0.148823,
                   "estimated_memory_mb");
    assert_string_equal(
        json_string_value(json_object_get(plan, "memory_measure")),
        "peak_inference");
    assert_int_equal(json_array_size(json_object_get(plan, "warnings")), 0);
    assert_int_equal(jint(plan, "parameter_count"), 50890);
    /* as written: six significant digits */
    assert_written(jreal(plan, "parameter_memory_mb"), 101780.0 / 1048576.0,
                   "parameter_memory_mb");
    assert_written(jreal(plan, "activation_memory_mb"), 54912.0 / 1048576.0,
                   "activation_memory_mb");
    assert_written(jreal(plan, "total_memory_mb"), 156692.0 / 1048576.0,
                   "total_memory_mb");
    /* Peak: parameters + the input and hidden buffers alive together. */
    assert_written(jreal(plan, "peak_inference_memory_mb"),
                   (101780.0 + (25088 + 2048) * 2) / 1048576.0,
                   "peak_inference_memory_mb");
    /* Training with SGD in fp16: params + grads + activations + working
     * buffers (activation gradients 2 x 32 x 74, labels 4 x 32, float
     * staging 4 x 32 x 2 x (784 + 64) and 4 x 50240). */
    assert_written(jreal(plan, "training_memory_mb"),
                   (2 * 101780.0 + 54912 + 4736 + 128 + 217088 + 200960) /
                    1048576.0, "training_memory_mb");

    json_t *layers = json_object_get(j, "layers");
    assert_int_equal(json_array_size(layers), 3);
    const struct {
        const char *shape;
        json_int_t elems, params, pbytes, abytes, macs;
    } want[] = {
        {"784", 25088, 0, 0, 50176, 0},
        {"64", 2048, 50240, 100480, 4096, 32 * 784 * 64},
        {"10", 320, 650, 1300, 640, 32 * 64 * 10},
    };
    for (size_t i = 0; i < 3; i++) {
        json_t *row = json_array_get(layers, i);
        assert_string_equal(json_string_value(json_object_get(row, "output_shape")),
                            want[i].shape);
        assert_int_equal(jint(row, "output_elements"), want[i].elems);
        assert_int_equal(jint(row, "parameter_count"), want[i].params);
        assert_int_equal(jint(row, "parameter_bytes"), want[i].pbytes);
        assert_int_equal(jint(row, "activation_bytes"), want[i].abytes);
        assert_int_equal(jint(row, "macs"), want[i].macs);
    }
    json_decref(j);
    run_free(&r);
}

static void test_table_output(void **state)
{
    (void)state;
    struct run_result r;
    RUN(&r, "--model", "mlp:784-64-10", "--batch", "32", "--precision", "fp16",
        "--max-memory-mb", "1", "--batch-limit", "64");
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "output_shape"));
    /* thousands separated on the terminal (the files keep 1605632) */
    assert_non_null(strstr(r.out, "1,605,632"));
    assert_null(strstr(r.out, "1605632"));
    assert_non_null(strstr(r.out, "0.149433"));
    assert_non_null(strstr(r.out, "peak inference memory 0.148823 MB "
                                  "within 1.0000 MB"));
    assert_string_equal(r.err, "");
    run_free(&r);

    /* The summary's figures in one column, whatever the optimizer's name
     * (the training line's was two columns left of the others). */
    RUN(&r, "--model", "smallcnn", "--optimizer", "adam");
    assert_int_equal(r.status, 0);
    const char *lines[] = {"\n  parameters ", "\n  MACs ",
                           "\n  training (adam) "};
    size_t col[3];
    for (size_t i = 0; i < 3; i++) {
        const char *p = strstr(r.out, lines[i]);
        assert_non_null(p);
        col[i] = strspn(p + strlen(lines[i]), " ") + strlen(lines[i]);
    }
    assert_int_equal(col[0], col[1]);
    assert_int_equal(col[0], col[2]);
    run_free(&r);
}

static void test_out_dir(void **state)
{
    (void)state;
    char dir[512];
    snprintf(dir, sizeof dir, "%s/plan", tmpdir);
    struct run_result r;
    RUN(&r, "--model", "smallcnn", "--batch", "8", "--out", dir, "--format",
        "csv");
    assert_int_equal(r.status, 0);
    assert_int_equal(run_count_entries(dir), 2);

    char path[600];
    snprintf(path, sizeof path, "%s/layerwise_breakdown.csv", dir);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    char file_text[8192] = {0};
    assert_true(fread(file_text, 1, sizeof file_text - 1, f) > 0);
    fclose(f);
    /* stdout's CSV is the file's. */
    assert_string_equal(r.out, file_text);
    static const char header[] =
        "layer,kind,output_shape,output_elements,parameter_count,"
        "parameter_bytes,activation_bytes,macs\n";
    assert_int_equal(strncmp(file_text, header, sizeof header - 1), 0);

    art_table *t = NULL;
    assert_int_equal(art_table_load_csv(path, &t, NULL), ART_OK);
    /* smallcnn at batch 8: input, conv1, pool1, conv2, pool2, flatten,
     * dense; conv1 = 8 * 1 * 3 * 3 + 8 = 80 parameters, 8x28x28 output,
     * MACs 8 * 8*28*28 * 9; dense 784 * 10 + 10. */
    assert_int_equal(art_table_rows(t), 7);
    uint64_t v;
    const char *s;
    assert_int_equal(art_table_get_text(t, 1, 2, &s), ART_OK);
    assert_string_equal(s, "8x28x28");
    assert_int_equal(art_table_get_uint(t, 1, 4, &v), ART_OK);
    assert_int_equal(v, 80);
    assert_int_equal(art_table_get_uint(t, 1, 7, &v), ART_OK);
    assert_int_equal(v, 8ull * 8 * 28 * 28 * 9);
    assert_int_equal(art_table_get_uint(t, 6, 4, &v), ART_OK);
    assert_int_equal(v, 7850);
    art_table_destroy(t);

    snprintf(path, sizeof path, "%s/memory_plan.json", dir);
    json_error_t err;
    json_t *j = json_load_file(path, 0, &err);
    assert_non_null(j);
    assert_true(json_is_false(json_object_get(j, "enabled")));
    assert_int_equal(jint(j, "batch_size"), 8);
    assert_int_equal(jint(j, "parameter_count"), 80 + 1168 + 7850);
    json_decref(j);
    run_free(&r);
    run_rmdir(dir);
}

static void test_fitting_and_warnings(void **state)
{
    (void)state;
    struct run_result r;
    /* fp32 peak: 203,560 + 3,392 b bytes <= 0.25 MB = 262,144 B -> 17. */
    RUN(&r, "--batch", "32", "--max-memory-mb", "0.25", "--batch-limit", "64",
        "--format", "json");
    assert_int_equal(r.status, 0);
    json_t *j = parse_json(r.out);
    json_t *plan = json_object_get(j, "memory_plan");
    assert_int_equal(jint(plan, "batch_size"), 17);
    json_t *w = json_object_get(plan, "warnings");
    assert_int_equal(json_array_size(w), 1);
    assert_string_equal(json_string_value(json_array_get(w, 0)),
        "Batch size reduced from 32 to 17 due to memory constraints.");
    json_decref(j);
    run_free(&r);

    /* Nothing fits: batch 1 (206,952 B) with two warnings, and no
     * "reduced" after "even batch 1"; --strict exits 3. */
    RUN(&r, "--batch", "32", "--max-memory-mb", "0.1", "--format", "json",
        "--strict");
    assert_int_equal(r.status, 3);
    j = parse_json(r.out);
    plan = json_object_get(j, "memory_plan");
    assert_int_equal(jint(plan, "batch_size"), 1);
    w = json_object_get(plan, "warnings");
    assert_int_equal(json_array_size(w), 2);
    assert_string_equal(json_string_value(json_array_get(w, 1)),
        "Projected peak inference memory (0.1974 MB) exceeds limit "
        "(0.1000 MB).");
    assert_non_null(strstr(r.err, "--strict"));
    json_decref(j);
    run_free(&r);

    /* Without a budget the plan is off and the batch stays as asked, even
     * above the limit. */
    RUN(&r, "--batch", "500", "--format", "json");
    assert_int_equal(r.status, 0);
    j = parse_json(r.out);
    plan = json_object_get(j, "memory_plan");
    assert_true(json_is_false(json_object_get(plan, "enabled")));
    assert_int_equal(jint(plan, "batch_size"), 500);
    json_decref(j);
    run_free(&r);
}

/* A plan that does not fit says so: the table's plan line says "EXCEEDS",
 * never "within", the JSON says fits false, and the warnings reach stderr
 * in every format (a CSV on stdout has no room for them). */
static void test_plan_tells_the_truth(void **state)
{
    (void)state;
    struct run_result r;
    /* 3 x 3e4 widths (within the 2^31 - 1 parameters a model may have):
     * 1.8e9 + 6e4 parameters and two 3e4 buffers, 7,200,480,000 B =
     * 6,866.912842 MB at batch 1. */
    RUN(&r, "--model", "mlp:30000-30000-30000", "--max-memory-mb", "4096");
    assert_int_equal(r.status, 0);
    assert_null(strstr(r.out, "within"));
    assert_non_null(strstr(r.out, "6866.912842 MB EXCEEDS 4096.0000 MB"));
    assert_non_null(strstr(r.err, "warning: Projected peak inference memory "
                                  "(6866.9128 MB) exceeds limit "
                                  "(4096.0000 MB)."));
    assert_null(strstr(r.out, "warning"));
    run_free(&r);

    /* Even batch 1 exceeds: said once, and never followed by "reduced
     * from 32 to 1" as if 1 had been chosen to fit. */
    RUN(&r, "--max-memory-mb", "0.01", "--format", "csv");
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.err, "even batch_size=1 needs 0.1974 MB of "
                                  "peak inference memory"));
    assert_null(strstr(r.err, "reduced"));
    assert_null(strstr(r.out, "warning"));
    run_free(&r);

    RUN(&r, "--max-memory-mb", "0.01", "--format", "json");
    assert_int_equal(r.status, 0);
    assert_null(strstr(r.err, "reduced"));
    json_t *j = parse_json(r.out);
    json_t *plan = json_object_get(j, "memory_plan");
    assert_true(json_is_false(json_object_get(plan, "fits")));
    assert_int_equal(json_array_size(json_object_get(plan, "warnings")), 2);
    assert_int_equal(jint(plan, "largest_batch_size"), 0);
    json_decref(j);
    run_free(&r);

    /* A request above the limit: said, not blamed on memory alone. */
    RUN(&r, "--batch", "500", "--batch-limit", "64", "--max-memory-mb",
        "100", "--format", "json");
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.err, "above --batch-limit 64"));
    j = parse_json(r.out);
    plan = json_object_get(j, "memory_plan");
    assert_int_equal(jint(plan, "batch_size"), 64);
    assert_true(json_is_true(json_object_get(plan, "fits")));
    json_t *w = json_object_get(plan, "warnings");
    assert_int_equal(json_array_size(w), 2);
    assert_non_null(strstr(json_string_value(json_array_get(w, 1)),
                           "above --batch-limit 64"));
    json_decref(j);
    run_free(&r);

    /* Without a budget the limit does nothing: warned. */
    RUN(&r, "--batch", "500", "--batch-limit", "64");
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.err, "--batch-limit 64 has no effect"));
    run_free(&r);
}

/* --device fits against the device's memory: rpi4 has 4096 MB, so the
 * 6,867 MB model exceeds it and a 3 MB one fits at the requested batch. */
static void test_device_budget(void **state)
{
    (void)state;
    struct run_result r;
    RUN(&r, "--model", "mlp:30000-30000-30000", "--device", "rpi4",
        "--format", "json", "--strict");
    assert_int_equal(r.status, 3);
    json_t *j = parse_json(r.out);
    json_t *plan = json_object_get(j, "memory_plan");
    assert_true(json_is_true(json_object_get(plan, "enabled")));
    assert_true(jreal(plan, "max_memory_mb") == 4096.0);
    assert_string_equal(json_string_value(json_object_get(plan, "device")),
                        "rpi4");
    assert_true(json_is_false(json_object_get(plan, "fits")));
    json_decref(j);
    run_free(&r);

    RUN(&r, "--device", "name=b,bandwidth_gbps=1,peak_gmacs=1,memory_mb=0.25",
        "--batch", "32", "--format", "json");
    assert_int_equal(r.status, 0);
    j = parse_json(r.out);
    plan = json_object_get(j, "memory_plan");
    /* The same fit as --max-memory-mb 0.25: batch 17. */
    assert_int_equal(jint(plan, "batch_size"), 17);
    json_decref(j);
    run_free(&r);

    RUN(&r, "--device", "host");
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "MB of host"));
    run_free(&r);
}

/* The audit: resnet8 at batch 1 needs 0.484 MB of peak inference memory
 * (77,706 * 4 = 310,824 B of parameters + three 16x32x32 fp32 buffers
 * alive at a residual add, 3 * 65,536 B): it fits 0.6 MB, and the plan,
 * "fits" and the text agree. The old plan measured parameters + every
 * activation summed (0.746 MB) and said "even batch 1 exceeds". */
static void test_audit_resnet8_fits(void **state)
{
    (void)state;
    struct run_result r;
    const double peak = (310824.0 + 196608.0) / 1048576.0;
    RUN(&r, "--model", "resnet8", "--batch", "1", "--max-memory-mb", "0.6",
        "--format", "json", "--strict");
    assert_int_equal(r.status, 0);
    json_t *j = parse_json(r.out);
    json_t *plan = json_object_get(j, "memory_plan");
    assert_true(json_is_true(json_object_get(plan, "fits")));
    assert_written(jreal(plan, "peak_inference_memory_mb"), peak,
                   "peak_inference_memory_mb");
    assert_true(fabs(jreal(plan, "estimated_memory_mb") - peak) < 5e-7);
    assert_int_equal(json_array_size(json_object_get(plan, "warnings")), 0);
    /* the original's sum is still there, under its own name */
    assert_true(jreal(plan, "total_memory_mb") > 0.6);
    json_decref(j);
    assert_null(strstr(r.err, "exceeds"));
    run_free(&r);

    RUN(&r, "--model", "resnet8", "--batch", "1", "--max-memory-mb", "0.6");
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "peak inference memory 0.483925 MB within "
                                  "0.6000 MB"));
    assert_null(strstr(r.out, "EXCEEDS"));
    run_free(&r);

    /* smallcnn at 0.07 MB: memfit and the sweep (sweep_results.csv's
     * memory_mb) both measure the peak, (9,098 + 7,840) * 4 B =
     * 0.064613 MB, so both accept batch 1. */
    RUN(&r, "--model", "smallcnn", "--max-memory-mb", "0.07", "--format",
        "json");
    assert_int_equal(r.status, 0);
    j = parse_json(r.out);
    plan = json_object_get(j, "memory_plan");
    assert_true(json_is_true(json_object_get(plan, "fits")));
    assert_int_equal(jint(plan, "batch_size"), 1);
    assert_true(jreal(plan, "estimated_memory_mb") == 0.064613);
    json_decref(j);
    run_free(&r);
}

/* A search limit is not the largest batch: a budget memory never reaches
 * says so, in the text and in JSON. mlp:4-2 needs 32 B of parameters +
 * 24 B a sample: any batch up to 2^32 - 1 fits 1e6 MB. */
static void test_budget_never_reached(void **state)
{
    (void)state;
    struct run_result r;
    RUN(&r, "--model", "mlp:4-2", "--max-memory-mb", "1e6", "--format",
        "json");
    assert_int_equal(r.status, 0);
    json_t *j = parse_json(r.out);
    json_t *plan = json_object_get(j, "memory_plan");
    assert_true(json_is_true(json_object_get(plan, "largest_batch_size_capped")));
    assert_int_equal(jint(plan, "largest_batch_size"), 4294967295);
    json_decref(j);
    run_free(&r);
    RUN(&r, "--model", "mlp:4-2", "--max-memory-mb", "1e6");
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "memory is not a constraint: "));
    assert_null(strstr(r.out, "largest batch"));
    run_free(&r);

    /* 0.25 MB: the largest batch is memory's, (262,144 - 203,560) / 3,392
     * = 17, not capped. */
    RUN(&r, "--max-memory-mb", "0.25", "--format", "json");
    assert_int_equal(r.status, 0);
    j = parse_json(r.out);
    plan = json_object_get(j, "memory_plan");
    assert_true(json_is_false(json_object_get(plan, "largest_batch_size_capped")));
    assert_int_equal(jint(plan, "largest_batch_size"), 17);
    json_decref(j);
    run_free(&r);
}

/* An ONNX file that fixes its batch (3) is planned at 3, not at 32; a
 * --batch that contradicts it is refused naming both. */
static const char *onnx_dir;

static void test_onnx_fixed_batch(void **state)
{
    (void)state;
    char path[4096];
    snprintf(path, sizeof path, "%s/typed_fixed_batch/model.onnx", onnx_dir);
    struct run_result r;
    RUN(&r, "--model", path, "--format", "json");
    assert_int_equal(r.status, 0);
    json_t *j = parse_json(r.out);
    json_t *plan = json_object_get(j, "memory_plan");
    assert_int_equal(jint(plan, "batch_size"), 3);
    assert_int_equal(jint(plan, "model_fixed_batch_size"), 3);
    json_decref(j);
    run_free(&r);

    RUN(&r, "--model", path, "--batch", "3", "--format", "json");
    assert_int_equal(r.status, 0);
    run_free(&r);

    RUN(&r, "--model", path, "--batch", "4");
    assert_int_equal(r.status, 2);
    assert_string_equal(r.out, "");
    assert_non_null(strstr(r.err, "--batch 4"));
    assert_non_null(strstr(r.err, "fixes the batch at 3"));
    run_free(&r);
}

/* Each training figure says what it counts, so mixed precision needing
 * more than fp32 on a small model is explained by its terms. */
static void test_training_sentences(void **state)
{
    (void)state;
    struct run_result r;
    RUN(&r, "--model", "smallcnn");
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "working buffers +"));
    assert_non_null(strstr(r.out, "fp32 staging of 16-bit operators"));
    run_free(&r);
}

static void expect_rejected(const char *why, char *const argv[],
                            const char *needle)
{
    const char *bad = run_rejected(argv, needle);
    if (bad) {
        fail_msg("%s: %s", why, bad);
    }
}

static void test_rejected_input(void **state)
{
    (void)state;
    char dir[512], bad[512];
    snprintf(dir, sizeof dir, "%s/rejected", tmpdir);
    snprintf(bad, sizeof bad, "%s/bad.model", tmpdir);
    FILE *f = fopen(bad, "w");
    assert_non_null(f);
    fputs("input 784\ndense 64\nconv2d 8 k=3\n", f);
    fclose(f);
    char *m = (char *)memfit, *o = dir;
    struct {
        const char *why;
        char *argv[8];
        const char *needle;
    } cases[] = {
        {"zero batch", {m, "--batch", "0", "--out", o, NULL}, "--batch"},
        {"negative batch", {m, "--batch", "-3", "--out", o, NULL}, "--batch"},
        {"text batch", {m, "--batch", "12x", "--out", o, NULL}, "--batch"},
        {"precision", {m, "--precision", "fp8", "--out", o, NULL}, "fp8"},
        {"nan budget", {m, "--max-memory-mb", "nan", "--out", o, NULL},
         "--max-memory-mb"},
        {"negative budget", {m, "--max-memory-mb", "-1", "--out", o, NULL},
         "--max-memory-mb"},
        {"zero limit", {m, "--batch-limit", "0", "--out", o, NULL},
         "--batch-limit"},
        {"format", {m, "--format", "xml", "--out", o, NULL}, "--format"},
        {"unknown option", {m, "--frobnicate", "--out", o, NULL},
         "--frobnicate"},
        {"missing value", {m, "--out", o, "--batch", NULL}, "--batch"},
        {"bad preset", {m, "--model", "mlp:784-0-10", "--out", o, NULL},
         "mlp:784-0-10:1:"},
        {"missing file", {m, "--model", "/nonexistent/model.txt", "--out", o,
         NULL}, "/nonexistent/model.txt"},
        {"bad model file", {m, "--model", bad, "--out", o, NULL},
         "bad.model:3:"},
        {"stray argument", {m, "extra", "--out", o, NULL}, "extra"},
        {"zero budget", {m, "--max-memory-mb", "0", "--out", o, NULL},
         "must be above 0"},
        {"negative zero budget", {m, "--max-memory-mb", "-0", "--out", o,
         NULL}, "must be above 0"},
        {"strict without a budget", {m, "--strict", "--out", o, NULL},
         "--strict"},
        {"two budgets", {m, "--device", "rpi4", "--max-memory-mb", "5",
         "--out", o, NULL}, "one budget"},
        {"device without memory", {m, "--device",
         "name=b,bandwidth_gbps=1,peak_gmacs=1", "--out", o, NULL},
         "memory of 'b' is unknown"},
        {"unknown device", {m, "--device", "toaster", "--out", o, NULL},
         "toaster"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        expect_rejected(cases[i].why, cases[i].argv, cases[i].needle);
        /* No output folder, let alone a file. */
        assert_int_equal(run_count_entries(dir), -1);
    }
    unlink(bad);
}

static void test_help_version(void **state)
{
    (void)state;
    struct run_result r;
    RUN(&r, "--help");
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "--max-memory-mb"));
    run_free(&r);
    RUN(&r, "--version");
    assert_int_equal(r.status, 0);
    assert_int_equal(strncmp(r.out, "edgefit-memfit ", 15), 0);
    run_free(&r);
}

static int setup(void **state)
{
    (void)state;
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    rmdir(tmpdir);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: test-memfit PATH-TO-edgefit-memfit\n");
        return 2;
    }
    memfit = argv[1];
    onnx_dir = argc > 2 ? argv[2] : "tests/data/onnx";
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_seed_example_json),
        cmocka_unit_test(test_table_output),
        cmocka_unit_test(test_out_dir),
        cmocka_unit_test(test_fitting_and_warnings),
        cmocka_unit_test(test_plan_tells_the_truth),
        cmocka_unit_test(test_device_budget),
        cmocka_unit_test(test_audit_resnet8_fits),
        cmocka_unit_test(test_budget_never_reached),
        cmocka_unit_test(test_onnx_fixed_batch),
        cmocka_unit_test(test_training_sentences),
        cmocka_unit_test(test_rejected_input),
        cmocka_unit_test(test_help_version),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
