/* edgefit-report end to end on a small learnable data set written here as
 * IDX files: the verdict on stdout, every file summary.json lists exists
 * (and nothing else is in the folder), report.html refers only to files
 * that exist, by relative names, with no script; every PNG is a PNG; bad
 * input is refused before any work and leaves no folder. The program path
 * comes as argv[1]. EDGEFIT_EMULATED=1 (CI's qemu stage) takes the
 * smallest models of each kind (see `emulated`). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <jansson.h>
#include <stdbool.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "run.h"
#include "verdict_check.h"


static const char *report_app;
static const char *source_root; /* the tree, for tests/data */
/* EDGEFIT_EMULATED=1: the tests run under an emulator (CI's qemu stage,
 * where each whole model through the report costs minutes of CPU). The
 * runs over several models of one kind then take the smallest that
 * print the same sentences and columns (named where they are chosen);
 * every check of a run is the same, and the native suite runs them
 * all. */
static bool emulated;
static char tmpdir[] = "/tmp/edgefit-report-XXXXXX";
static char datadir[600];

static int setup(void **state)
{
    (void)state;
    if (!mkdtemp(tmpdir)) {
        return -1;
    }
    snprintf(datadir, sizeof datadir, "%s/data", tmpdir);
    if (mkdir(datadir, 0777) != 0) {
        return -1;
    }
    return run_write_bands(datadir, "train", 640, 3) ||
           run_write_bands(datadir, "t10k", 200, 5);
}

static int teardown(void **state)
{
    (void)state;
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    return system(cmd);
}

static bool exists_in(const char *dir, const char *name)
{
    char path[1200];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0;
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    const long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    assert_non_null(s);
    assert_int_equal(fread(s, 1, (size_t)n, f), (size_t)n);
    s[n] = '\0';
    fclose(f);
    return s;
}

/* The width of a PNG, from its IHDR chunk. */
static unsigned png_width(const char *path)
{
    unsigned char h[24];
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    assert_int_equal(fread(h, 1, 24, f), 24);
    fclose(f);
    return (unsigned)h[16] << 24 | (unsigned)h[17] << 16 |
           (unsigned)h[18] << 8 | h[19];
}

/* Every src="..." and href="..." of the page names a file of the folder
 * by a relative name. */
static size_t check_links(const char *html, const char *dir)
{
    size_t n = 0;
    static const char *const attrs[] = {"src=\"", "href=\""};
    for (size_t a = 0; a < 2; a++) {
        for (const char *p = strstr(html, attrs[a]); p;
             p = strstr(p + 1, attrs[a])) {
            const char *v = p + strlen(attrs[a]);
            const char *end = strchr(v, '"');
            assert_non_null(end);
            char name[256];
            assert_true((size_t)(end - v) < sizeof name);
            memcpy(name, v, (size_t)(end - v));
            name[end - v] = '\0';
            if (strchr(name, '/') || strchr(name, ':') || name[0] == '.') {
                fail_msg("not a relative file name: %s", name);
            }
            if (!exists_in(dir, name)) {
                fail_msg("report.html refers to %s, which is not there",
                         name);
            }
            n++;
        }
    }
    return n;
}

/* The checker itself, on hand-made summaries: a figure rounded to two
 * significant digits (105.3 printed "110", 954 printed "950") holds, one
 * that rounds elsewhere (104 is not "110") does not, and an integer that
 * is not so rounded ("4096", "21843") keeps its exact check. */
static void test_verdict_rounding(void **state)
{
    (void)state;
    static const struct {
        const char *line;
        double figure;
        bool holds;
    } cases[] = {
        {"about 110 ms.", 105.3, true},  {"about 110 ms.", 104.0, false},
        {"at least 950 mJ per input", 0.954, true},
        {"about 2300 ms", 2345.0, true}, {"about 2300 ms", 2351.0, false},
        {"fits 4096 MB", 4096.0, true},  {"fits 4096 MB", 4095.0, false},
        {"batch 21843", 21843.4, true},  {"batch 21843", 21844.0, false},
        {"about 100 ms", 95.0, true},    {"about 100 ms", 94.9, false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        json_t *j = json_pack("{s:[s], s:b, s:f}", "verdict", cases[i].line,
                              "fits", 1, "figure", cases[i].figure);
        assert_non_null(j);
        const char *why = verdict_check(j);
        if ((why == NULL) != cases[i].holds) {
            fail_msg("'%s' against %g: %s", cases[i].line, cases[i].figure,
                     why ? why : "holds");
        }
        json_decref(j);
    }
}

static void test_report(void **state)
{
    (void)state;
    char out[700];
    snprintf(out, sizeof out, "%s/out", tmpdir);
    char *argv[] = {(char *)report_app, "--data", datadir, "--epochs", "2",
                    "--out", out, "--device", "rpi4", "--quiet", NULL};
    struct run_result r;
    run_argv(argv, &r);
    if (r.status != 0) {
        fail_msg("exit %d: %s", r.status, r.err);
    }
    /* the verdict answers each question */
    static const char *const parts[] = {"Memory: not a constraint",
                                        "Precision: ",
                                        "On rpi4 (roofline lower bound)",
                                        "Bound (", "Training: 2 epochs"};
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
        if (!strstr(r.out, parts[i])) {
            fail_msg("no '%s' in the verdict:\n%s", parts[i], r.out);
        }
    }
    /* The device's energy is its power over the device's latency per
     * input. */
    const char *on = strstr(r.out, "On rpi4 (roofline lower bound): ");
    double ms = 0, mj = 0, watts = 0;
    char prec[16];
    const char *energy = on ? strstr(on, "energy at least ") : NULL;
    if (sscanf(on, "On rpi4 (roofline lower bound): at least %lf ms per "
                   "input at %15s batch 1", &ms, prec) != 2 || !energy ||
        sscanf(energy, "energy at least %lf mJ per input at %lf W", &mj,
               &watts) != 2) {
        fail_msg("the device sentence: %.200s", on);
    }
    /* both printed to two significant digits */
    if (fabs(mj - watts * ms) > 0.06 * mj) {
        fail_msg("%g mJ is not %g W x %g ms", mj, watts, ms);
    }
    run_free(&r);

    char path[900];
    snprintf(path, sizeof path, "%s/summary.json", out);
    json_error_t err;
    json_t *j = json_load_file(path, 0, &err);
    if (!j) {
        fail_msg("%s: %s", path, err.text);
    }
    json_t *files = json_object_get(j, "files");
    assert_true(json_is_array(files));
    const size_t nfiles = json_array_size(files);
    assert_true(nfiles >= 14);
    for (size_t i = 0; i < nfiles; i++) {
        const char *name = json_string_value(json_array_get(files, i));
        assert_non_null(name);
        if (!exists_in(out, name)) {
            fail_msg("summary.json lists %s, which is not there", name);
        }
        const size_t len = strlen(name);
        if ((len > 4 && strcmp(name + len - 4, ".csv") == 0) ||
            (len > 5 && strcmp(name + len - 5, ".json") == 0)) {
            /* numbers rounded to what they mean: no float noise (a time
             * to the microsecond may keep up to 9 digits) */
            char file[900], bad[64];
            if (snprintf(file, sizeof file, "%s/%s", out, name) >=
                (int)sizeof file) {
                fail_msg("%s/%s: path too long", out, name);
            }
            char *text = slurp(file);
            if (!run_digits_ok(text, 9, bad, sizeof bad)) {
                fail_msg("%s holds %s", name, bad);
            }
            free(text);
        }
        if (len > 4 && strcmp(name + len - 4, ".png") == 0) {
            char png[900];
            snprintf(png, sizeof png, "%s/%s", out, name);
            char *bytes = slurp(png);
            assert_int_equal(memcmp(bytes, "\x89PNG\r\n\x1a\n", 8), 0);
            free(bytes);
        }
    }
    /* and nothing unlisted */
    assert_int_equal(run_count_entries(out), (int)nfiles);
    /* the figures agree with the verdict's sources */
    json_t *tr = json_object_get(j, "training");
    assert_int_equal(json_integer_value(json_object_get(tr, "epochs")), 2);
    assert_int_equal(json_integer_value(json_object_get(
                         json_object_get(j, "data"), "test_samples")),
                     200);
    assert_true(json_real_value(json_object_get(tr, "test_accuracy")) > 0.5);
    const char *why = verdict_check(j);
    if (why) {
        fail_msg("%s", why);
    }
    json_decref(j);

    snprintf(path, sizeof path, "%s/report.html", out);
    char *html = slurp(path);
    assert_null(strstr(html, "<script"));
    assert_non_null(strstr(html, "<!DOCTYPE html>"));
    /* every chart on the page, and the links all resolve */
    static const char *const charts[] = {
        "training_curves.png", "precision_tradeoffs.png",
        "layerwise_activation_memory.png", "layerwise_macs.png",
        "roofline.png"};
    for (size_t i = 0; i < 5; i++) {
        char img[128];
        snprintf(img, sizeof img, "<img src=\"%s\"", charts[i]);
        assert_non_null(strstr(html, img));
    }
    assert_true(check_links(html, out) >= 5 + nfiles);
    /* the page states the machine, the command, the date and the
     * version, and shows every chart at no less than 0.7 of its pixels
     * (a 19 px label is then 13 px: no 7-pixel text) */
    static const char *const facts[] = {"<th>machine</th>",
                                        "<th>command</th>",
                                        "<th>date</th>", "<th>edgefit</th>",
                                        "--epochs 2"};
    for (size_t i = 0; i < 5; i++) {
        if (!strstr(html, facts[i])) {
            fail_msg("no %s on the page", facts[i]);
        }
    }
    for (const char *p = strstr(html, "<img "); p;
         p = strstr(p + 1, "<img ")) {
        const char *w = strstr(p, "width=\"");
        assert_non_null(w);
        const double shown = atof(w + 7);
        char name[128];
        assert_int_equal(sscanf(p, "<img src=\"%127[^\"]", name), 1);
        char png[900];
        snprintf(png, sizeof png, "%s/%s", out, name);
        const unsigned px = png_width(png);
        if (shown < 0.7 * px) {
            fail_msg("%s: %u px wide shown at %.0f px", name, px, shown);
        }
    }
    free(html);
}

static void test_bad_input(void **state)
{
    (void)state;
    char out[700], missing[700];
    snprintf(out, sizeof out, "%s/never", tmpdir);
    snprintf(missing, sizeof missing, "%s/no-such-data", tmpdir);
    char *a1[] = {(char *)report_app, "--data", missing, "--out", out,
                  NULL};
    char *a2[] = {(char *)report_app, "--train", "--epochs", "0", "--out",
                  out, NULL};
    /* the audit's: a model that does not read the data is refused at
     * once, naming both shapes (today: a segfault, a heap over-read, and
     * seven minutes of training on misaligned rows) */
    char *a5[] = {(char *)report_app, "--model", "mlp:784000-10", "--data",
                  datadir, "--epochs", "1", "--out", out, NULL};
    char *a6[] = {(char *)report_app, "--model", "mlp:1000-10", "--data",
                  datadir, "--out", out, NULL};
    char *a7[] = {(char *)report_app, "--model", "ds-cnn", "--data",
                  datadir, "--out", out, NULL};
    char *a8[] = {(char *)report_app, "--data", datadir, "--test-data",
                  datadir, "--out", out, NULL};
    char *a9[] = {(char *)report_app, "--train", "--no-data", "--out", out,
                  NULL};
    char *a10[] = {(char *)report_app, "--no-train", "--epochs", "3",
                   "--out", out, NULL};
    char *a3[] = {(char *)report_app, "--device", "nosuchboard", "--out",
                  out, NULL};
    char *a4[] = {(char *)report_app, "--model", "mlp:784-x", "--out", out,
                  NULL};
    const struct {
        char **argv;
        const char *needle;
    } cases[] = {
        {a1, "no-such-data"},
        {a2, "--epochs"},
        {a3, "nosuchboard"},
        {a4, "mlp:784-x:1:9"},
        {a5, "784000"},
        {a6, "1000"},
        {a7, "49x10"},
        {a8, "--test-data"},
        {a9, "--train"},
        {a10, "--epochs 3"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *why = run_rejected(cases[i].argv, cases[i].needle);
        if (why) {
            fail_msg("case %zu: %s", i, why);
        }
    }
    assert_int_equal(run_count_entries(out), -1);
}

/* Run the report with args (NULL-terminated, at most 20) into a fresh
 * folder out; the exit status, stdout in *text (to free) and
 * summary.json (to json_decref; NULL when none was written). */
static int report_run(const char *out, char **text, json_t **summary,
                      const char *const *args)
{
    char *argv[32];
    size_t n = 0;
    argv[n++] = (char *)report_app;
    for (size_t i = 0; args[i]; i++) {
        argv[n++] = (char *)args[i];
    }
    argv[n++] = "--out";
    argv[n++] = (char *)out;
    argv[n++] = "--quiet";
    argv[n] = NULL;
    struct run_result r;
    run_argv(argv, &r);
    const int status = r.status;
    if (status != 0 && status != 3) {
        fprintf(stderr, "%s\n", r.err);
    }
    *text = strdup(r.out);
    run_free(&r);
    char path[900];
    snprintf(path, sizeof path, "%s/summary.json", out);
    *summary = json_load_file(path, 0, NULL);
    return status;
}

/* The audit: under --max-memory-mb 0.1 --strict the verdict said "DOES
 * NOT FIT" and then named int8 the best accepted configuration at
 * 0.0493 MB, exit 0. fp32 does not fit there, int8 does: the Memory line
 * says so, "fits" is true, and the run succeeds. Below every precision's
 * memory it does not fit, says so, and --strict exits 3. */
static void test_memory_sentences(void **state)
{
    (void)state;
    char out[700];
    snprintf(out, sizeof out, "%s/mem", tmpdir);
    char *text;
    json_t *j;
    const char *a1[] = {"--data", datadir, "--epochs", "1",
                        "--max-memory-mb", "0.1", "--strict", NULL};
    assert_int_equal(report_run(out, &text, &j, a1), 0);
    assert_null(strstr(text, "DOES NOT FIT"));
    assert_non_null(strstr(text, "only below fp32"));
    assert_non_null(j);
    assert_true(json_is_true(json_object_get(j, "fits")));
    const char *why = verdict_check(j);
    if (why) {
        fail_msg("%s", why);
    }
    free(text);
    json_decref(j);
    run_rmdir(out);

    const char *a2[] = {"--data", datadir, "--epochs", "1",
                        "--max-memory-mb", "0.01", "--strict", NULL};
    assert_int_equal(report_run(out, &text, &j, a2), 3);
    assert_non_null(strstr(text, "DOES NOT FIT"));
    assert_non_null(j);
    assert_false(json_is_true(json_object_get(j, "fits")));
    assert_null(verdict_check(j));
    free(text);
    json_decref(j);
    run_rmdir(out);

    /* The audit: "fits up to batch 80501" beside "0.992 MB at batch 32"
     * (two memory measures). One measure now: the largest batch and the
     * memory at batch 32 agree with the limit. */
    const char *a3[] = {"--model", "smallcnn", "--no-data",
                        "--max-memory-mb", "1", NULL};
    assert_int_equal(report_run(out, &text, &j, a3), 0);
    const char *m = strstr(text, "fits up to batch ");
    assert_non_null(m);
    unsigned long largest = strtoul(m + 17, NULL, 10);
    const char *at = strstr(m, "needs ");
    assert_non_null(at);
    const double mb32 = atof(at + 6);
    if ((mb32 <= 1.0) != (largest >= 32)) {
        fail_msg("fits up to batch %lu, yet %g MB at batch 32 against "
                 "1 MB", largest, mb32);
    }
    assert_null(verdict_check(j));
    free(text);
    json_decref(j);
    run_rmdir(out);
}

/* A stdout that fails after the folder is complete (> /dev/full) is a
 * warning naming the folder, and the run succeeds; the folder is whole. */
static void test_full_stdout(void **state)
{
    (void)state;
    char out[700];
    snprintf(out, sizeof out, "%s/full", tmpdir);
    char *argv[] = {(char *)report_app, "--model", "mlp:16-4", "--no-data",
                    "--out", out, "--quiet", NULL};
    struct run_result r;
    run_argv_stdout(argv, "/dev/full", &r);
    if (r.status != 0) {
        fail_msg("exit %d: %s", r.status, r.err);
    }
    assert_non_null(strstr(r.err, "warning: stdout:"));
    assert_non_null(strstr(r.err, "complete in"));
    assert_true(exists_in(out, "summary.json"));
    assert_true(exists_in(out, "report.html"));
    run_free(&r);
    run_rmdir(out);
}

/* No data: analysis only, said on the terminal and the page; no
 * accuracy anywhere, no training files. --epochs 0 means no training. */
static void test_no_data(void **state)
{
    (void)state;
    char out[700];
    snprintf(out, sizeof out, "%s/nodata", tmpdir);
    char *text;
    json_t *j;
    /* the sentences and the cells checked are the model's no more than
     * the data's: ds-cnn when emulated (its input, 49x10, matches no data
     * set, as resnet8's does not; smallcnn would take Fashion-MNIST) */
    const char *a[] = {"--model", emulated ? "ds-cnn" : "resnet8",
                       "--epochs", "0", "--threads", "2", NULL};
    assert_int_equal(report_run(out, &text, &j, a), 0);
    assert_non_null(strstr(text, "no data given: no accuracy"));
    assert_non_null(j);
    assert_string_equal(json_string_value(json_object_get(
                            json_object_get(j, "data"), "data_kind")),
                        "none");
    assert_int_equal(json_integer_value(json_object_get(j, "threads")), 2);
    assert_false(exists_in(out, "training_history.csv"));
    assert_false(exists_in(out, "precision_tradeoffs.png"));
    assert_null(verdict_check(j));
    char path[900];
    snprintf(path, sizeof path, "%s/report.html", out);
    char *html = slurp(path);
    assert_non_null(strstr(html, "no data given: no accuracy"));
    assert_non_null(strstr(html, "<td>2</td>"));
    free(html);
    snprintf(path, sizeof path, "%s/sweep_results.csv", out);
    char *csv = slurp(path);
    /* precision,batch_size,accuracy,...: the accuracy cells are empty */
    assert_non_null(strstr(csv, "fp32,1,,"));
    free(csv);
    free(text);
    json_decref(j);
    run_rmdir(out);
}

/* The MLPerf Tiny models, as presets with PyTorch's weights and as their
 * ONNX exports, against PyTorch's reference outputs (tests/data/models):
 * each end to end in under 60 s; fp32 agrees with PyTorch; top-1
 * agreement is reported for the classifiers and never for the
 * autoencoder. Then a text model with a residual add on labelled data. */
static void test_models(void **state)
{
    (void)state;
    static const struct {
        const char *name;
        bool classifier;
    } models[] = {{"resnet8", true}, {"ds-cnn", true},
                  {"mobilenetv1-0.25", true}, {"fc-autoencoder", false}};
    for (size_t i = 0; i < 4; i++) {
        if (emulated && i != 1 && i != 3) {
            /* a classifier (ds-cnn, the smallest) and the autoencoder */
            continue;
        }
        for (int onnx = 0; onnx < 2; onnx++) {
            char dir[700], model[800], weights[800], out[700];
            snprintf(dir, sizeof dir, "%s/tests/data/models/%s", source_root,
                     models[i].name);
            snprintf(model, sizeof model, "%s/model.onnx", dir);
            snprintf(weights, sizeof weights, "%s/%s.safetensors", dir,
                     models[i].name);
            snprintf(out, sizeof out, "%s/m%zu%d", tmpdir, i, onnx);
            const char *a_onnx[] = {"--model", model, "--test-data", dir,
                                    NULL};
            const char *a_preset[] = {"--model", models[i].name, "--weights",
                                      weights, "--test-data", dir, NULL};
            char *text;
            json_t *j;
            const int st = report_run(out, &text, &j,
                                      onnx ? a_onnx : a_preset);
            if (st != 0 || !j) {
                fail_msg("%s (%s): exit %d", models[i].name,
                         onnx ? "ONNX" : "preset", st);
            }
            const char *why = verdict_check(j);
            if (why) {
                fail_msg("%s: %s", models[i].name, why);
            }
            json_t *f32 = json_object_get(j, "fp32");
            const double err = json_real_value(
                json_object_get(f32, "max_abs_error"));
            if (!(err < 1e-4)) {
                fail_msg("%s: fp32 is %g from PyTorch's outputs",
                         models[i].name, err);
            }
            json_t *top1 = json_object_get(json_object_get(j, "best"),
                                           "top1_agreement");
            assert_int_equal(top1 != NULL, models[i].classifier);
            assert_int_equal(strstr(text, "top-1") != NULL,
                             models[i].classifier);
            free(text);
            json_decref(j);
            run_rmdir(out);
        }
    }
    /* the residual text model, and ResNet-8 and DS-CNN shaped for 28 x 28
     * images (batch norms, adds, global pooling): no weights and labelled
     * data that fits, so each trains */
    static const char *const trained[] = {"tests/apps/data/residual.txt",
                                          "tests/data/resnet8-fashion.txt",
                                          "tests/data/ds-cnn-fashion.txt"};
    /* emulated: the residual text model (adds, no batch norm) alone */
    for (size_t i = 0; i < (emulated ? 1u : 3u); i++) {
        char model[800], out[700];
        snprintf(model, sizeof model, "%s/%s", source_root, trained[i]);
        snprintf(out, sizeof out, "%s/trained%zu", tmpdir, i);
        const char *a[] = {"--model", model, "--data", datadir, "--epochs",
                           "1", NULL};
        char *text;
        json_t *j;
        assert_int_equal(report_run(out, &text, &j, a), 0);
        assert_non_null(j);
        const char *why = verdict_check(j);
        if (why) {
            fail_msg("%s: %s", trained[i], why);
        }
        assert_non_null(strstr(text, "test accuracy"));
        assert_non_null(strstr(text, "Training: 1 epoch in"));
        assert_true(json_is_true(json_object_get(
            json_object_get(j, "training"), "trained")));
        assert_true(exists_in(out, "weights.safetensors"));
        free(text);
        json_decref(j);
        run_rmdir(out);
    }
}

/* Sequence models a user exports from PyTorch (tests/data/onnx: the
 * keyword transformer at opset 17, the tiny ViT, the batch-first LSTM
 * spotter and the GRU spotter without batch_first, whose test data is
 * time-major [49, 2, 10]): one of each family; the report takes each
 * with its reference outputs, the verdict holds together and fp32 is
 * PyTorch's answer within 1e-4. */
static void test_sequence_models(void **state)
{
    (void)state;
    static const char *const names[] = {"kwt17", "vit", "torch_lstm_kws",
                                        "torch_gru_tm"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (emulated && (i == 0 || i == 2)) {
            /* attention and recurrence once each: the tiny ViT (a third of
             * the keyword transformer's time) and the time-major GRU */
            continue;
        }
        char dir[700], model[800], out[700];
        snprintf(dir, sizeof dir, "%s/tests/data/onnx/%s", source_root,
                 names[i]);
        snprintf(model, sizeof model, "%s/model.onnx", dir);
        snprintf(out, sizeof out, "%s/seq%zu", tmpdir, i);
        const char *a[] = {"--model", model, "--test-data", dir, NULL};
        char *text;
        json_t *j;
        const int st = report_run(out, &text, &j, a);
        if (st != 0 || !j) {
            fail_msg("%s: exit %d", names[i], st);
        }
        const char *why = verdict_check(j);
        if (why) {
            fail_msg("%s: %s", names[i], why);
        }
        const double err = json_real_value(json_object_get(
            json_object_get(j, "fp32"), "max_abs_error"));
        if (!(err < 1e-4)) {
            fail_msg("%s: fp32 is %g from PyTorch's outputs", names[i], err);
        }
        free(text);
        json_decref(j);
        run_rmdir(out);
    }
}

/* An ONNX file that fixes its batch (3) runs at that batch only, as it
 * would be deployed: every sweep row, the recommended configuration and
 * the verdict's sentences are at batch 3 (the audit: a fixed batch was
 * ignored and batch 32 planned). */
static void test_fixed_batch(void **state)
{
    (void)state;
    char dir[700], model[800], out[700];
    snprintf(dir, sizeof dir, "%s/tests/data/onnx/typed_fixed_batch",
             source_root);
    snprintf(model, sizeof model, "%s/model.onnx", dir);
    snprintf(out, sizeof out, "%s/fixed", tmpdir);
    const char *a[] = {"--model", model, "--test-data", dir, NULL};
    char *text;
    json_t *j;
    assert_int_equal(report_run(out, &text, &j, a), 0);
    assert_non_null(j);
    assert_int_equal(json_integer_value(json_object_get(
                         json_object_get(j, "best"), "batch_size")),
                     3);
    assert_int_equal(json_integer_value(json_object_get(j,
                                                        "configurations")),
                     4);
    assert_non_null(strstr(text, "fixed batch 3"));
    assert_null(strstr(text, "batch 32"));
    assert_null(verdict_check(j));
    free(text);
    json_decref(j);
    run_rmdir(out);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: test-report PATH-TO-edgefit-report "
                        "SOURCE-ROOT\n");
        return 2;
    }
    report_app = argv[1];
    source_root = argv[2];
    const char *em = getenv("EDGEFIT_EMULATED");
    emulated = em && strcmp(em, "1") == 0;
    if (emulated) {
        print_message("EDGEFIT_EMULATED=1: the smallest models of each "
                      "kind\n");
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_verdict_rounding),
        cmocka_unit_test(test_report),
        cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_memory_sentences),
        cmocka_unit_test(test_no_data),
        cmocka_unit_test(test_models),
        cmocka_unit_test(test_fixed_batch),
        cmocka_unit_test(test_sequence_models),
        cmocka_unit_test(test_full_stdout),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
