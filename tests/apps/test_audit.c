/* The audit's defects of the apps' options and inputs (issue 18): each
 * case failed on the program before its fix. argv: memfit, layerwise,
 * sweep, train, validate, report, the folder of the presets' PyTorch
 * files (tests/data/models). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "edgefit/artifacts.h"
#include "run.h"

static const char *memfit, *layerwise, *sweep, *train, *validate, *report;
static const char *models;
static char tmpdir[] = "/tmp/edgefit-audit-XXXXXX";

#define ARGV(...) ((char *[]){__VA_ARGS__, NULL})

static void expect_rejected(char *const argv[], const char *needle)
{
    const char *bad = run_rejected(argv, needle);
    if (bad) {
        fail_msg("%s %s: %s", argv[0], argv[1], bad);
    }
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
}

/* A misspelt preset is named as one, with the presets listed; an empty
 * name is refused as empty; a path that does not exist says so with the
 * system's reason. (Before: "resnet9: cannot open the model file".) */
static void test_model_names(void **state)
{
    (void)state;
    expect_rejected(ARGV((char *)memfit, "--model", "resnet9"),
                    "--model resnet9: unknown preset");
    expect_rejected(ARGV((char *)memfit, "--model", "resnet9"),
                    "resnet8, smallcnn");
    expect_rejected(ARGV((char *)memfit, "--model", ""),
                    "--model: the name is empty");
    expect_rejected(ARGV((char *)memfit, "--model", "no/such/model.txt"),
                    "--model no/such/model.txt: No such file or directory");
    /* every app that takes --model goes the same way */
    const char *apps[] = {layerwise, sweep, train, validate, report};
    for (size_t i = 0; i < sizeof apps / sizeof apps[0]; i++) {
        expect_rejected(ARGV((char *)apps[i], "--model", "resnet9"),
                        "unknown preset");
    }
}

/* A FIFO as the model is refused before it is opened (opening it for
 * reading blocked until a writer came: forever). */
static void test_model_fifo(void **state)
{
    (void)state;
    char fifo[256];
    snprintf(fifo, sizeof fifo, "%s/model.fifo", tmpdir);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    struct run_result r;
    run_argv_in(ARGV((char *)memfit, "--model", fifo), NULL, 20, &r);
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "a FIFO, not a regular file"));
    run_free(&r);
    /* the other inputs read as files: --weights, --devices, --from-csv */
    char *const other[][6] = {
        {(char *)memfit, "--weights", fifo, NULL},
        {(char *)memfit, "--devices", fifo, "--device", "x", NULL},
        {(char *)sweep, "--from-csv", fifo, NULL},
    };
    for (size_t i = 0; i < 3; i++) {
        run_argv_in(other[i], NULL, 20, &r);
        if (r.status != 2 || !strstr(r.err, "a FIFO, not a regular file")) {
            fail_msg("%s %s FIFO: status %d: %s", other[i][0], other[i][1],
                     r.status, r.err);
        }
        run_free(&r);
    }
    char *dir = tmpdir;
    run_argv_in(ARGV((char *)memfit, "--model", dir), NULL, 20, &r);
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "a folder, not a regular file"));
    run_free(&r);
    unlink(fifo);
}

/* --model - reads a text model or an ONNX file from stdin: the same
 * table as from the file itself. */
static void test_model_stdin(void **state)
{
    (void)state;
    char path[256], onnx[512];
    snprintf(path, sizeof path, "%s/tiny.txt", tmpdir);
    write_file(path, "input 12\ndense 5 act=relu\ndense 3\n");
    snprintf(onnx, sizeof onnx, "%s/resnet8/model.onnx", models);
    const char *files[] = {path, onnx};
    for (size_t i = 0; i < 2; i++) {
        struct run_result a, b;
        run_argv_in(ARGV((char *)memfit, "--model", "-", "--format", "csv"),
                    files[i], 60, &a);
        run_argv(ARGV((char *)memfit, "--model", (char *)files[i],
                      "--format", "csv"), &b);
        if (a.status != 0) {
            fail_msg("--model - < %s: status %d: %s", files[i], a.status,
                     a.err);
        }
        assert_int_equal(b.status, 0);
        assert_string_equal(a.out, b.out);
        run_free(&a);
        run_free(&b);
    }
    /* a bad text on stdin is named <stdin>:line:column, in every app */
    char bad[256];
    snprintf(bad, sizeof bad, "%s/bad.txt", tmpdir);
    write_file(bad, "input 12\ndense 5 act=relu\nbogus 3\n");
    const char *apps[] = {memfit, layerwise, sweep, train, validate, report};
    for (size_t i = 0; i < sizeof apps / sizeof apps[0]; i++) {
        struct run_result r;
        run_argv_in(ARGV((char *)apps[i], "--model", "-"), bad, 60, &r);
        if (r.status != 2 || !strstr(r.err, "<stdin>:3:1: unknown layer")) {
            fail_msg("%s --model - < bad: status %d: %s", apps[i], r.status,
                     r.err);
        }
        run_free(&r);
    }
}

/* A whole number too large for 64 bits is out of range, naming the range
 * (before: "not a whole number"); a range with no upper end says so
 * (before: 18446744073709551615), an integer bound prints as one (before:
 * 1.04858e+06). */
static void test_number_ranges(void **state)
{
    (void)state;
    expect_rejected(ARGV((char *)memfit, "--batch", "99999999999999999999"),
                    "--batch: 99999999999999999999 is out of range: "
                    "accepted [1, 4294967295]");
    expect_rejected(ARGV((char *)memfit, "--batch", "0"),
                    "--batch: 0 is out of range: accepted [1, 4294967295]");
    expect_rejected(ARGV((char *)memfit, "--batch", "12x"),
                    "--batch: '12x' is not a whole number");
    expect_rejected(ARGV((char *)layerwise, "--seed", "99999999999999999999"),
                    "accepted 0 or more, no upper limit");
    expect_rejected(ARGV((char *)layerwise, "--triad-mib", "2000000"),
                    "accepted [1, 1048576]");
}

/* edgefit-validate reads the model before it looks for test data: a file
 * that is no ONNX model is named so (before: "no test_data_set_* folder
 * beside it"); top-1 agreement only for a classifier (before: reported
 * for fc-autoencoder's 640-value reconstruction). */
static void test_validate(void **state)
{
    (void)state;
    char dir[256], path[300];
    snprintf(dir, sizeof dir, "%s/junk", tmpdir);
    assert_int_equal(mkdir(dir, 0700), 0);
    snprintf(path, sizeof path, "%s/model.onnx", dir);
    write_file(path, "not a protocol buffer\n");
    expect_rejected(ARGV((char *)validate, "--model", path),
                    "not an ONNX model");
    const char *nets[] = {"fc-autoencoder", "resnet8"};
    for (size_t i = 0; i < 2; i++) {
        char onnx[512];
        snprintf(onnx, sizeof onnx, "%s/%s/model.onnx", models, nets[i]);
        struct run_result r;
        run_argv(ARGV((char *)validate, "--model", onnx, "--format", "json",
                      "--quiet"), &r);
        assert_int_equal(r.status, 0);
        json_error_t je;
        json_t *j = json_loads(r.out, 0, &je);
        assert_non_null(j);
        json_t *rows = json_object_get(j, "validation");
        assert_true(json_is_array(rows) && json_array_size(rows) > 0);
        json_t *t = json_object_get(json_array_get(rows, 0),
                                    "top1_agreement");
        if (i == 0) {
            assert_true(t == NULL || json_is_null(t));
        } else {
            assert_true(json_is_number(t));
            assert_true(json_number_value(t) == 1.0);
        }
        json_decref(j);
        run_free(&r);
    }
}

/* Every figure of a device in a sane range, named (before: 1e308 GB/s
 * accepted, from a file and inline); a memory fit asks only for the
 * memory (before: memfit demanded bandwidth_gbps). */
static void test_devices(void **state)
{
    (void)state;
    char csv[256];
    snprintf(csv, sizeof csv, "%s/devices.csv", tmpdir);
    write_file(csv, "name,bandwidth_gbps,peak_gmacs,memory_mb\n"
                    "ok,10,20,512\n"
                    "\n"
                    "huge,1e308,1,1\n");
    expect_rejected(ARGV((char *)memfit, "--devices", csv, "--device", "ok"),
                    "devices.csv:4: bandwidth_gbps 1e+308 is out of range: "
                    "accepted 0.001 to 1000000 GB/s");
    expect_rejected(ARGV((char *)layerwise, "--model", "mlp:8-4", "--device",
                         "name=x,bandwidth_gbps=1e308,peak_gmacs=1"),
                    "--device x: bandwidth_gbps 1e+308 is out of range");
    expect_rejected(ARGV((char *)layerwise, "--model", "mlp:8-4", "--device",
                         "name=x,bandwidth_gbps=10,peak_gmacs=1e300"),
                    "peak_gmacs 1e+300 is out of range");
    expect_rejected(ARGV((char *)memfit, "--model", "mlp:8-4", "--device",
                         "name=x,memory_mb=1e300"),
                    "memory_mb 1e+300 is out of range: accepted 0.001 to "
                    "1000000000 MB (or 0: unknown)");
    struct run_result r;
    run_argv(ARGV((char *)memfit, "--model", "mlp:784-64-10", "--device",
                  "name=mcu,memory_mb=0.5", "--format", "json"), &r);
    if (r.status != 0) {
        fail_msg("memfit --device name=mcu,memory_mb=0.5: %d %s", r.status,
                 r.err);
    }
    json_error_t je;
    json_t *j = json_loads(r.out, 0, &je);
    assert_non_null(j);
    json_decref(j);
    run_free(&r);
}

/* The device_latency_ms of column col of every row of a sweep's CSV. */
static void csv_column(const char *path, const char *col, double *v,
                       size_t *n)
{
    art_table *t = NULL;
    struct art_diag d;
    assert_int_equal(art_table_load_csv(path, &t, &d), ART_OK);
    const long c = art_table_find_column(t, col);
    assert_true(c >= 0);
    *n = art_table_rows(t);
    for (size_t r = 0; r < *n; r++) {
        if (art_table_get_real(t, r, (size_t)c, &v[r]) != ART_OK) {
            v[r] = -1.0;
        }
    }
    art_table_destroy(t);
}

/* edgefit-sweep: --from-csv refuses an accuracy above 1 and a negative
 * latency at their file:line and column (before: accepted); keeps
 * device_latency_ms when it reads back a sweep's own file (before:
 * dropped); --batches refuses a batch that only pads (1048576) and one
 * given twice (before: 8,8 ran twice). */
static void test_sweep(void **state)
{
    (void)state;
    char csv[256];
    snprintf(csv, sizeof csv, "%s/sweep.csv", tmpdir);
    write_file(csv, "precision,accuracy,latency_ms,memory_mb,energy_proxy_j,"
                    "accepted\n"
                    "fp32,0.5,1,1,1,true\n"
                    "\n"
                    "fp16,1.5,1,1,1,true\n");
    expect_rejected(ARGV((char *)sweep, "--from-csv", csv),
                    "sweep.csv:4: column 'accuracy': 1.5 is out of range: "
                    "accepted 0 to 1");
    write_file(csv, "precision,accuracy,latency_ms,memory_mb,energy_proxy_j,"
                    "accepted\n"
                    "fp16,0.5,-1,1,1,true\n");
    expect_rejected(ARGV((char *)sweep, "--from-csv", csv),
                    "sweep.csv:2: column 'latency_ms': -1 is out of range");
    expect_rejected(ARGV((char *)sweep, "--batches", "1048576"),
                    "--batches: 1048576 is out of range: accepted "
                    "[1, 65536]");
    expect_rejected(ARGV((char *)sweep, "--batches", "1,8,8"),
                    "--batches: 8 given twice");

    char data[256], weights[256], out1[256], out2[256], res1[300],
        res2[300];
    snprintf(data, sizeof data, "%s/fashion", tmpdir);
    snprintf(weights, sizeof weights, "%s/zero.safetensors", tmpdir);
    snprintf(out1, sizeof out1, "%s/sweep1", tmpdir);
    snprintf(out2, sizeof out2, "%s/sweep2", tmpdir);
    assert_int_equal(mkdir(data, 0700), 0);
    assert_int_equal(run_write_bands(data, "t10k", 40, 5), 0);
    assert_int_equal(run_write_zero_mlp(weights), 0);
    struct run_result r;
    run_argv(ARGV((char *)sweep, "--weights", weights, "--data", data,
                  "--precisions", "fp32,int8", "--batches", "1,8",
                  "--repeats", "1", "--device", "rpi4", "--out", out1,
                  "--quiet"), &r);
    if (r.status != 0) {
        fail_msg("sweep: %d %s", r.status, r.err);
    }
    run_free(&r);
    snprintf(res1, sizeof res1, "%s/sweep_results.csv", out1);
    snprintf(res2, sizeof res2, "%s/sweep_results.csv", out2);
    run_argv(ARGV((char *)sweep, "--from-csv", res1, "--out", out2,
                  "--quiet"), &r);
    if (r.status != 0) {
        fail_msg("sweep --from-csv: %d %s", r.status, r.err);
    }
    run_free(&r);
    static const char *const cols[] = {"device_latency_ms", "batch_size",
                                       "latency_ms", "test_samples"};
    for (size_t c = 0; c < sizeof cols / sizeof cols[0]; c++) {
        double a[16], b[16];
        size_t na, nb;
        csv_column(res1, cols[c], a, &na);
        csv_column(res2, cols[c], b, &nb);
        assert_int_equal(na, 4);
        assert_int_equal(nb, na);
        for (size_t i = 0; i < na; i++) {
            if (!(a[i] > 0.0) || a[i] != b[i]) {
                fail_msg("%s row %zu: %g written, %g read back", cols[c], i,
                         a[i], b[i]);
            }
        }
    }
}

/* An option given twice is refused, naming it and both values (before:
 * the last one silently won); abbreviations and --name=value count; the
 * options meant to be repeated (validate's --test-data) still are. */
static void test_repeated_options(void **state)
{
    (void)state;
    expect_rejected(ARGV((char *)memfit, "--model", "smallcnn", "--model",
                         "resnet8"),
                    "--model given twice ('smallcnn', then 'resnet8')");
    expect_rejected(ARGV((char *)memfit, "--mod=smallcnn", "--batch", "2",
                         "--model", "resnet8"),
                    "--model given twice");
    expect_rejected(ARGV((char *)sweep, "--strict", "--quiet", "--strict"),
                    "--strict given twice: give it once");
    expect_rejected(ARGV((char *)train, "--epochs", "1", "--epochs", "2"),
                    "--epochs given twice ('1', then '2')");
    expect_rejected(ARGV((char *)layerwise, "--device", "rpi4", "--device",
                         "desktop"),
                    "--device given twice");
    expect_rejected(ARGV((char *)validate, "--model", "a.onnx", "--batch",
                         "1", "--batch", "2"),
                    "--batch given twice");
    expect_rejected(ARGV((char *)report, "--epochs", "1", "--epochs", "2"),
                    "--epochs given twice ('1', then '2')");
    /* a value that looks like an option is a value */
    char out[256];
    snprintf(out, sizeof out, "%s/--model", tmpdir);
    struct run_result r;
    run_argv(ARGV((char *)memfit, "--model", "mlp:4-2", "--out", out), &r);
    assert_int_equal(r.status, 0);
    run_free(&r);
    /* --test-data is repeatable: the second folder is read (and is
     * missing), not refused as a repeat */
    char onnx[512];
    snprintf(onnx, sizeof onnx, "%s/resnet8/model.onnx", models);
    char set[600];
    snprintf(set, sizeof set, "%s/resnet8/test_data_set_0", models);
    expect_rejected(ARGV((char *)validate, "--model", onnx, "--test-data",
                         set, "--test-data", "/nonexistent-edgefit"),
                    "/nonexistent-edgefit");
}

static size_t count_of(const char *text, const char *needle)
{
    size_t n = 0;
    for (const char *p = text; (p = strstr(p, needle)); p++) {
        n++;
    }
    return n;
}

/* edgefit-train's plan warnings once, on stderr (before: on stdout too,
 * in table mode). 0.12 MB reduces the batch on training memory (the plan's
 * measure: 0.1003 MB at batch 1). */
static void test_train_warnings_once(void **state)
{
    (void)state;
    char data[256];
    snprintf(data, sizeof data, "%s/train-data", tmpdir);
    assert_int_equal(mkdir(data, 0700), 0);
    assert_int_equal(run_write_bands(data, "train", 64, 1), 0);
    assert_int_equal(run_write_bands(data, "t10k", 32, 2), 0);
    struct run_result r;
    run_argv(ARGV((char *)train, "--data", data, "--model", "mlp:784-16-10",
                  "--epochs", "1", "--max-memory-mb", "0.12", "--quiet"),
            &r);
    if (r.status != 0) {
        fail_msg("train: %d %s", r.status, r.err);
    }
    assert_int_equal(count_of(r.err, "Batch size reduced"), 1);
    assert_int_equal(count_of(r.out, "Batch size reduced"), 0);
    run_free(&r);
}

/* An allocation that fails says how many bytes, for what (before:
 * "resnet8: out of memory"). resnet8's arena is 196,608 bytes a sample at
 * fp32 (3x32x32 in, 16x32x32 twice: memfit's plan), so batch 4294967295
 * asks 844,424,929,935,360 bytes: more than any address space, refused
 * by malloc on every machine. */
static void test_out_of_memory_says_size(void **state)
{
    (void)state;
    /* under AddressSanitizer a failed malloc returns NULL, as in a
     * plain build, instead of aborting */
    const char *old = getenv("ASAN_OPTIONS");
    char *saved = old ? strdup(old) : NULL;
    char opts[512];
    snprintf(opts, sizeof opts, "%s%sallocator_may_return_null=1",
             old ? old : "", old && *old ? ":" : "");
    setenv("ASAN_OPTIONS", opts, 1);
    struct run_result r, t;
    run_argv(ARGV((char *)layerwise, "--model", "resnet8", "--batch",
                  "4294967295", "--repeats", "1"), &r);
    /* edgefit-train's trainer: libmemest's training estimate, which for
     * mlp:784-64-10 at this batch is above 1e13 bytes */
    char data[256];
    snprintf(data, sizeof data, "%s/oom-data", tmpdir);
    assert_int_equal(mkdir(data, 0700), 0);
    assert_int_equal(run_write_bands(data, "train", 16, 1), 0);
    assert_int_equal(run_write_bands(data, "t10k", 16, 2), 0);
    run_argv(ARGV((char *)train, "--data", data, "--model", "mlp:784-64-10",
                  "--batch", "4294967295", "--epochs", "1", "--quiet"), &t);
    if (saved) {
        setenv("ASAN_OPTIONS", saved, 1);
        free(saved);
    } else {
        unsetenv("ASAN_OPTIONS");
    }
    if (r.status != 1 ||
        !strstr(r.err, "resnet8: out of memory: the activation arena of "
                       "844424929935360 bytes") ||
        !strstr(r.err, "for batch 4294967295 at fp32")) {
        fail_msg("status %d: %s", r.status, r.err);
    }
    run_free(&r);
    if (t.status != 1 ||
        !strstr(t.err, "out of memory: training at batch 4294967295 needs "
                       "about 1")) {
        fail_msg("train: status %d: %s", t.status, t.err);
    }
    run_free(&t);
}

/* A full stdout after a complete --out folder is a warning and the run
 * succeeds (before: exit 1); without a folder it is still a failure. */
static void test_stdout_full_after_folder(void **state)
{
    (void)state;
    if (access("/dev/full", W_OK) != 0) {
        skip();
    }
    char out[256];
    snprintf(out, sizeof out, "%s/full-stdout", tmpdir);
    const char *apps[] = {memfit, validate};
    char onnx[512];
    snprintf(onnx, sizeof onnx, "%s/resnet8/model.onnx", models);
    for (size_t i = 0; i < 2; i++) {
        struct run_result r;
        char *argv[] = {(char *)apps[i], "--model",
                        i == 0 ? "smallcnn" : onnx, "--out", out,
                        "--quiet", NULL};
        if (i == 0) {
            argv[5] = NULL; /* memfit has no --quiet */
        }
        run_argv_stdout(argv, "/dev/full", &r);
        if (r.status != 0 ||
            !strstr(r.err, "warning: stdout: No space left on device (the "
                           "results are complete in ")) {
            fail_msg("%s --out > /dev/full: status %d: %s", apps[i],
                     r.status, r.err);
        }
        assert_int_equal(run_count_entries(out), 2);
        run_free(&r);
        run_rmdir(out);
        char *plain[] = {(char *)apps[i], "--model",
                         i == 0 ? "smallcnn" : onnx, NULL};
        run_argv_stdout(plain, "/dev/full", &r);
        assert_int_equal(r.status, 1);
        assert_non_null(strstr(r.err, "stdout: No space left on device"));
        run_free(&r);
    }
}

static int setup(void **state)
{
    (void)state;
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    run_rmdir(tmpdir);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 8) {
        fprintf(stderr, "usage: test-audit MEMFIT LAYERWISE SWEEP TRAIN "
                        "VALIDATE REPORT MODELS-DIR\n");
        return 2;
    }
    memfit = argv[1];
    layerwise = argv[2];
    sweep = argv[3];
    train = argv[4];
    validate = argv[5];
    report = argv[6];
    models = argv[7];
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_model_names),
        cmocka_unit_test(test_model_fifo),
        cmocka_unit_test(test_model_stdin),
        cmocka_unit_test(test_number_ranges),
        cmocka_unit_test(test_validate),
        cmocka_unit_test(test_devices),
        cmocka_unit_test(test_sweep),
        cmocka_unit_test(test_repeated_options),
        cmocka_unit_test(test_train_warnings_once),
        cmocka_unit_test(test_out_of_memory_says_size),
        cmocka_unit_test(test_stdout_full_after_folder),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
