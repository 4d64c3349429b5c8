/* Every app speaks one vocabulary: each app runs with --format json and
 * --format csv (and --out, whose files are read too); every CSV column and
 * every JSON key must be in the glossary (docs/glossary.md), and no value
 * of a column or key that claims a utilisation (its name contains
 * "utilization" or "utilisation") may exceed 1. Each app's terminal is
 * readable too: its default table (with --quiet) fits 120 characters,
 * -h is --help, --version names the kernel paths and the dependencies,
 * and --list-devices --format json prints JSON. A TAP test.
 *
 * Usage: test-vocabulary docs/glossary.md NAME=PATH...  (the apps this build
 * has). An app is added with one line of the table below. */
#include <dirent.h>
#include <jansson.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "edgefit/artifacts.h"
#include "run.h"
#include "verdict_check.h"

/* name, then the cheapest arguments that still print every column. The
 * CSV run of an app whose stdout holds one table of several also writes
 * --out, where every table is a file. */
/* Zero weights of mlp:784-64-10 for edgefit-sweep, written at start. */
static char sweep_weights[640];
/* edgefit-validate's fixture (tests/apps/data/validate), found from the
 * glossary's folder (docs/) at start. */
static char validate_model[640], validate_weights[640];
/* edgefit-device's measurements (tests/apps/data/device). */
static char device_csv[640];
/* A classifier's ONNX file and its reference outputs, for the report's
 * agreement mode and the quantizer: resnet8 (tests/data/models). The
 * preset of the report's analysis-only run: ds-cnn.
 *
 * EDGEFIT_EMULATED=1 (CI's qemu stage, where a whole model through the
 * report costs minutes) takes the smallest that print the same columns
 * and keys: LeNet-5 of the zoo (tests/data/zoo/lenet5, a classifier with
 * its reference outputs) and the smallcnn preset; every other run and
 * check is the same. */
static char ref_onnx[700], ref_dir[640];
static char nodata_model[16] = "ds-cnn";

static const struct app {
    const char *name;
    bool devices; /* has --list-devices */
    const char *args[12];
    bool no_csv;  /* --format is table or json only (a verdict, no table) */
} apps[] = {
    {"edgefit-memfit", true, {"--model", "smallcnn", "--max-memory-mb", "1"}, false},
    {"edgefit-layerwise", true, {"--model", "mlp:784-64-10", "--batch", "2",
                                 "--precision", "fp16", "--repeats", "1",
                                 "--warmup", "0", "--device", "rpi4"}, false},
    {"edgefit-stream", true, {"--repeats", "1", "--warmup", "0", "--device",
                              "jetson-nano"}, false},
    {"edgefit-bench", false, {"--quick", "--repeats", "1"}, false},
    {"edgefit-train", false, {"--epochs", "1", "--train-limit", "512",
                              "--test-limit", "256", "--max-memory-mb",
                              "0.5"}, false},
    {"edgefit-sweep", true, {"--weights", sweep_weights, "--test-limit",
                             "64", "--batches", "1,8", "--repeats", "1"}, false},
    {"edgefit-report", true, {"--epochs", "1", "--train-limit", "256",
                              "--test-limit", "64"}, true},
    /* the report again, against reference outputs (the agreement's
     * names), and without data (analysis only) */
    {"edgefit-report", true, {"--model", ref_onnx, "--test-data",
                              ref_dir}, true},
    {"edgefit-report", true, {"--model", nodata_model, "--no-data"}, true},
    {"edgefit-validate", false, {"--model", validate_model, "--weights",
                                 validate_weights, "--precision",
                                 "fp32,int8"}, false},
    {"edgefit-quantize", false, {"--model", ref_onnx,
                                 "--calibration-data", ref_dir}, false},
    {"edgefit-device", true, {"--fit", device_csv}, false},
};

static int tests_run, tests_failed;

static void ok(bool cond, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#include <stdarg.h>
static void ok(bool cond, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    printf("%s %d - ", cond ? "ok" : "not ok", ++tests_run);
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    tests_failed += !cond;
}

/* ---- the glossary ---------------------------------------------------------- */

static char **glossary;
static size_t nglossary;

/* Names in backquotes in the first cell of the table rows of
 * docs/glossary.md (the file is the glossary: every such row counts). */
static bool load_glossary(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        perror(path);
        return false;
    }
    char line[4096];
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "| `", 3) != 0) {
            continue;
        }
        char *end = strchr(line + 1, '|');
        if (end) {
            *end = '\0';
        }
        for (char *p = strchr(line, '`'); p; p = strchr(p, '`')) {
            char *q = strchr(p + 1, '`');
            if (!q) {
                break;
            }
            glossary = realloc(glossary, (nglossary + 1) * sizeof *glossary);
            glossary[nglossary++] = strndup(p + 1, (size_t)(q - p - 1));
            p = q + 1;
        }
    }
    fclose(f);
    return nglossary > 0;
}

/* An entry ending in an upper-case word names a family: predicted_ms_DEVICE
 * is predicted_ms_ followed by a device's name ([a-z0-9_]). */
static bool in_family_head(const char *entry, const char *name);

static bool in_family(const char *entry, const char *name)
{
    if (in_family_head(entry, name)) {
        return true;
    }
    const char *us = strrchr(entry, '_');
    if (!us || !us[1]) {
        return false;
    }
    for (const char *c = us + 1; *c; c++) {
        if (*c < 'A' || *c > 'Z') {
            return false;
        }
    }
    const size_t k = (size_t)(us + 1 - entry);
    if (strncmp(entry, name, k) != 0 || !name[k]) {
        return false;
    }
    return strspn(name + k, "abcdefghijklmnopqrstuvwxyz0123456789_") ==
           strlen(name + k);
}

/* An entry starting with an upper-case word names a family too:
 * DEVICE_predicted_ms is a device's name ([a-z0-9_]) followed by
 * _predicted_ms. */
static bool in_family_head(const char *entry, const char *name)
{
    const char *us = strchr(entry, '_');
    if (!us || us == entry) {
        return false;
    }
    for (const char *c = entry; c < us; c++) {
        if (*c < 'A' || *c > 'Z') {
            return false;
        }
    }
    const size_t nlen = strlen(name), tail = strlen(us);
    if (nlen <= tail || strcmp(name + nlen - tail, us) != 0) {
        return false;
    }
    return strspn(name, "abcdefghijklmnopqrstuvwxyz0123456789_") >=
           nlen - tail;
}

static bool in_glossary(const char *name)
{
    for (size_t i = 0; i < nglossary; i++) {
        if (strcmp(glossary[i], name) == 0 || in_family(glossary[i], name)) {
            return true;
        }
    }
    return false;
}

static bool claims_utilisation(const char *name)
{
    return strstr(name, "utilization") || strstr(name, "utilisation");
}

/* ---- checks ---------------------------------------------------------------- */

struct tally {
    size_t names, unknown, over, noisy;
    char first_unknown[128];
    char first_over[160];
    char first_noisy[200];
};

/* The reals written as text: none with float noise or digits that mean
 * nothing (README, Glossary: at most a time's microseconds or six
 * significant digits; nine allows 123456.789 ms). */
static void note_text(struct tally *t, const char *what, const char *text)
{
    char bad[64];
    if (text && !run_digits_ok(text, 9, bad, sizeof bad)) {
        if (t->noisy++ == 0) {
            snprintf(t->first_noisy, sizeof t->first_noisy, "%s in %s", bad,
                     what);
        }
    }
}

/* A whole file as text (NULL when unreadable); the caller frees it. */
static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        return NULL;
    }
    fseek(f, 0, SEEK_END);
    const long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    if (buf) {
        buf[n] = '\0';
    }
    fclose(f);
    return buf;
}

static void note_name(struct tally *t, const char *name)
{
    t->names++;
    if (!in_glossary(name)) {
        if (t->unknown++ == 0) {
            snprintf(t->first_unknown, sizeof t->first_unknown, "%s", name);
        }
    }
}

static void note_value(struct tally *t, const char *name, double v)
{
    if (claims_utilisation(name) && !(v <= 1.0)) {
        if (t->over++ == 0) {
            snprintf(t->first_over, sizeof t->first_over, "%s = %.17g",
                     name, v);
        }
    }
}

static void walk_json(json_t *j, struct tally *t)
{
    if (json_is_object(j)) {
        const char *key;
        json_t *v;
        json_object_foreach(j, key, v) {
            note_name(t, key);
            if (json_is_number(v)) {
                note_value(t, key, json_number_value(v));
            }
            walk_json(v, t);
        }
    } else if (json_is_array(j)) {
        for (size_t i = 0; i < json_array_size(j); i++) {
            walk_json(json_array_get(j, i), t);
        }
    }
}

static bool check_csv_file(const char *path, struct tally *t)
{
    art_table *tab = NULL;
    if (art_table_load_csv(path, &tab, NULL) != ART_OK) {
        return false;
    }
    for (size_t c = 0; c < art_table_cols(tab); c++) {
        const char *name = art_table_column_name(tab, c);
        note_name(t, name);
        for (size_t r = 0; r < art_table_rows(tab); r++) {
            double v;
            if (art_table_column_type(tab, c) == ART_REAL &&
                art_table_get_real(tab, r, c, &v) == ART_OK) {
                note_value(t, name, v);
            }
            uint64_t u;
            if (art_table_column_type(tab, c) == ART_UINT &&
                art_table_get_uint(tab, r, c, &u) == ART_OK) {
                note_value(t, name, (double)u);
            }
        }
    }
    art_table_destroy(tab);
    return true;
}

/* Every file of an --out folder. */
static bool check_dir(const char *dir, struct tally *t, size_t *files)
{
    DIR *d = opendir(dir);
    if (!d) {
        return false;
    }
    bool good = true;
    struct dirent *e;
    while ((e = readdir(d))) {
        const size_t n = strlen(e->d_name);
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        const bool csv = n > 4 && strcmp(e->d_name + n - 4, ".csv") == 0;
        const bool json = n > 5 && strcmp(e->d_name + n - 5, ".json") == 0;
        if (csv || json) {
            char *text = slurp(path);
            note_text(t, e->d_name, text);
            free(text);
        }
        if (csv) {
            good = check_csv_file(path, t) && good;
            ++*files;
        } else if (json) {
            json_t *j = json_load_file(path, 0, NULL);
            good = j != NULL && good;
            walk_json(j, t);
            json_decref(j);
            ++*files;
        }
    }
    closedir(d);
    return good;
}

/* The first line of stderr, for a failure's message. */
static const char *first_line(const char *err, char *buf, size_t len)
{
    snprintf(buf, len, "%.*s", (int)strcspn(err, "\n"), err);
    return buf;
}

static void report(const char *app, const char *what, const struct tally *t)
{
    ok(t->names > 0, "%s %s: names found (%zu)", app, what, t->names);
    ok(t->unknown == 0, "%s %s: every name in the glossary%s%s", app, what,
       t->unknown ? "; missing: " : "", t->first_unknown);
    ok(t->over == 0, "%s %s: no utilisation above 1%s%s", app, what,
       t->over ? "; " : "", t->first_over);
    ok(t->noisy == 0, "%s %s: reals rounded (no float noise)%s%s", app,
       what, t->noisy ? "; " : "", t->first_noisy);
}

static void run_app(const struct app *a, const char *path, const char *tmp)
{
    char *argv[24];
    size_t n = 0;
    argv[n++] = (char *)path;
    for (size_t i = 0; i < 12 && a->args[i]; i++) {
        argv[n++] = (char *)a->args[i];
    }
    const size_t base = n;
    char dir[600];

    /* JSON on stdout, and --out's files */
    snprintf(dir, sizeof dir, "%s/%s-json", tmp, a->name);
    argv[n++] = "--format";
    argv[n++] = "json";
    argv[n++] = "--out";
    argv[n++] = dir;
    argv[n] = NULL;
    struct run_result r;
    run_argv(argv, &r);
    char line[256];
    ok(r.status == 0, "%s --format json exits 0 (%d %s)", a->name,
       r.status, first_line(r.err, line, sizeof line));
    json_t *j = json_loads(r.out, 0, NULL);
    ok(j != NULL, "%s --format json prints JSON", a->name);
    if (strcmp(a->name, "edgefit-report") == 0) {
        /* the verdict says only what summary.json's figures say */
        const char *why = j ? verdict_check(j) : "no JSON";
        ok(why == NULL, "%s: every number of the verdict is one of "
           "summary.json's, and \"fits\" agrees%s%s", a->name,
           why ? ": " : "", why ? why : "");
    }
    struct tally t = {0};
    note_text(&t, "stdout", r.out);
    walk_json(j, &t);
    json_decref(j);
    report(a->name, "json", &t);
    struct tally tf = {0};
    size_t files = 0;
    bool read_back = check_dir(dir, &tf, &files);
    ok(read_back && files > 0, "%s --out: %zu files read back", a->name,
       files);
    report(a->name, "--out files", &tf);
    run_free(&r);
    run_rmdir(dir);

    if (a->no_csv) {
        return;
    }
    /* CSV on stdout: one table (an app with several writes each under
     * --out instead, never glued). */
    n = base;
    snprintf(dir, sizeof dir, "%s/%s-csv", tmp, a->name);
    argv[n++] = "--format";
    argv[n++] = "csv";
    argv[n++] = "--out";
    argv[n++] = dir;
    argv[n] = NULL;
    run_argv(argv, &r);
    ok(r.status == 0, "%s --format csv exits 0 (%d %s)", a->name,
       r.status, first_line(r.err, line, sizeof line));
    struct tally tc = {0};
    note_text(&tc, "stdout", r.out);
    if (r.out[0]) {
        char csv[700];
        snprintf(csv, sizeof csv, "%s/stdout.csv", tmp);
        FILE *f = fopen(csv, "w");
        fputs(r.out, f);
        fclose(f);
        ok(check_csv_file(csv, &tc), "%s --format csv prints one CSV table",
           a->name);
        unlink(csv);
    }
    files = 0;
    read_back = check_dir(dir, &tc, &files);
    ok(read_back && files > 0, "%s --format csv --out: %zu files read back",
       a->name, files);
    report(a->name, "csv", &tc);
    run_free(&r);
    run_rmdir(dir);
}

/* The terminal: the default table with --quiet, -h, --version,
 * --list-devices --format json. */
static void run_terminal(const struct app *a, const char *path,
                         const char *tmp)
{
    char *argv[24];
    size_t n = 0;
    argv[n++] = (char *)path;
    for (size_t i = 0; i < 12 && a->args[i]; i++) {
        argv[n++] = (char *)a->args[i];
    }
    /* edgefit-quantize's product is its folder: --out is required */
    const bool needs_out = strcmp(a->name, "edgefit-quantize") == 0;
    char out[600];
    snprintf(out, sizeof out, "%s/%s-terminal", tmp, a->name);
    if (needs_out) {
        argv[n++] = "--out";
        argv[n++] = out;
    }
    argv[n++] = "--quiet";
    argv[n] = NULL;
    struct run_result r;
    run_argv(argv, &r);
    ok(r.status == 0, "%s --quiet exits 0", a->name);
    ok(strchr(r.err, '\r') == NULL, "%s --quiet: no progress", a->name);
    /* The first table: the lines up to the first blank one (bench prints
     * a title line first). */
    size_t widest = 0, lines = 0;
    for (const char *p = r.out; *p;) {
        const size_t len = strcspn(p, "\n");
        if (len == 0 && lines > 1) {
            break;
        }
        widest = len > widest ? len : widest;
        lines++;
        p += len + (p[len] == '\n');
    }
    ok(lines > 1 && widest <= 120, "%s: the default table is %zu "
       "characters wide (at most 120)", a->name, widest);
    run_free(&r);
    if (needs_out) {
        run_rmdir(out);
    }

    char *help[] = {(char *)path, "-h", NULL};
    run_argv(help, &r);
    ok(r.status == 0 && strncmp(r.out, "usage:", 6) == 0,
       "%s -h prints the usage", a->name);
    run_free(&r);

    char *version[] = {(char *)path, "--version", NULL};
    run_argv(version, &r);
    ok(r.status == 0 && strncmp(r.out, a->name, strlen(a->name)) == 0 &&
           strstr(r.out, "kernel paths: built c") &&
           strstr(r.out, "selected ") && strstr(r.out, "jansson ") &&
           strstr(r.out, "libcsv ") && strstr(r.out, "zlib "),
       "%s --version names the version, the kernel paths and the "
       "dependencies", a->name);
    run_free(&r);

    if (a->devices) {
        char *list[] = {(char *)path, "--list-devices", "--format", "json",
                        NULL};
        run_argv(list, &r);
        json_t *j = json_loads(r.out, 0, NULL);
        ok(r.status == 0 && json_array_size(json_object_get(j, "devices")) >
                                4 - 1,
           "%s --list-devices --format json prints the devices as JSON",
           a->name);
        struct tally t = {0};
        walk_json(j, &t);
        report(a->name, "--list-devices", &t);
        json_decref(j);
        run_free(&r);
    }
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr,
                "usage: test-vocabulary docs/glossary.md NAME=PATH...\n");
        return 2;
    }
    if (!load_glossary(argv[1])) {
        printf("Bail out! no glossary in %s\n", argv[1]);
        return 1;
    }
    /* The checker itself: a name outside the glossary and a utilisation
     * above 1 are caught. */
    struct tally t = {0};
    note_name(&t, "latency_ms_p90");
    note_value(&t, "pct_of_roofline_utilization", 3.8);
    note_value(&t, "bandwidth_utilization", 1.0);
    ok(t.unknown == 1 && t.over == 1, "the checker catches a stray name "
       "and a utilisation above 1");
    /* and the verdict checker catches a figure the summary does not
     * hold, a rounding that is not the summary's, and a "DOES NOT FIT"
     * beside "fits": true (the audit's --max-memory-mb 0.1 --strict) */
    json_t *good = json_pack(
        "{s:[s,s], s:b, s:f, s:{s:f, s:f}}", "verdict",
        "Memory: fits the 4096 MB limit: 0.298 MB at batch 32.",
        "Precision: int8: test accuracy 0.5664, 0.39 points below, "
        "0.077 mJ at 6.4 W, 100% of the time.",
        "fits", 1, "memory_limit_mb", 4096.0, "best", "memory_mb",
        0.29786, "accuracy", 0.56641);
    json_object_set_new(json_object_get(good, "best"), "accuracy_cost",
                        json_real(-0.0039));
    json_object_set_new(good, "batch_size", json_integer(32));
    json_object_set_new(good, "device_energy_j", json_real(7.7e-5));
    json_object_set_new(good, "power_watts", json_real(6.4));
    json_object_set_new(good, "regime_time_share", json_real(1.0));
    const bool accepts = verdict_check(good) == NULL;
    json_object_set_new(json_object_get(good, "best"), "memory_mb",
                        json_real(0.2991));
    const bool rounding = verdict_check(good) != NULL;
    json_object_set_new(json_object_get(good, "best"), "memory_mb",
                        json_real(0.29786));
    json_array_set_new(json_object_get(good, "verdict"), 0,
                       json_string("Memory: DOES NOT FIT: 0.298 MB over "
                                   "the 4096 MB limit."));
    const bool fits_flag = verdict_check(good) != NULL;
    json_decref(good);
    ok(accepts && rounding && fits_flag, "the verdict checker accepts a "
       "true verdict (%d) and catches a wrong rounding (%d) and a DOES NOT "
       "FIT beside fits: true (%d)", accepts, rounding, fits_flag);
    /* a family of the glossary (predicted_ms_DEVICE), and float noise */
    t = (struct tally){0};
    note_name(&t, "predicted_ms_rpi4");
    note_name(&t, "predicted_ms_jetson_nano");
    note_name(&t, "rpi4_1_8_predicted_ms_low");
    ok(t.unknown == 0, "the checker accepts predicted_ms_DEVICE's and "
       "DEVICE_predicted_ms_low's columns");
    note_name(&t, "predicted_ms_");
    note_name(&t, "predicted_ms_Rpi4");
    note_name(&t, "Rpi4_predicted_ms");
    ok(t.unknown == 3, "the checker refuses predicted_ms_ alone and upper "
       "case");
    note_text(&t, "a", "{\"x\": 0.123457, \"n\": 9282560, "
              "\"s\": \"1.1376585700000001\", \"d\": 1.0}");
    note_text(&t, "b", "layer,x\n16x32x32,1.235\n");
    ok(t.noisy == 0, "the checker lets rounded reals, whole numbers and "
       "text pass");
    note_text(&t, "c", "latency_ms\n1.1376585700000001\n");
    ok(t.noisy == 1, "the checker catches 1.1376585700000001");

    char tmp[] = "/tmp/edgefit-vocabulary-XXXXXX";
    if (!mkdtemp(tmp)) {
        printf("Bail out! mkdtemp\n");
        return 1;
    }
    snprintf(sweep_weights, sizeof sweep_weights, "%s/weights.safetensors",
             tmp);
    if (run_write_zero_mlp(sweep_weights) != 0) {
        printf("Bail out! cannot write %s\n", sweep_weights);
        return 1;
    }
    const char *slash = strrchr(argv[1], '/');
    const int root = slash ? (int)(slash - argv[1]) : 1;
    const char *emulated = getenv("EDGEFIT_EMULATED");
    const bool small = emulated && strcmp(emulated, "1") == 0;
    snprintf(ref_dir, sizeof ref_dir, "%.*s/../tests/data/%s", root,
             slash ? argv[1] : ".", small ? "zoo/lenet5" : "models/resnet8");
    if (small) {
        snprintf(nodata_model, sizeof nodata_model, "smallcnn");
        printf("# EDGEFIT_EMULATED=1: the report and the quantizer take "
               "lenet5 and smallcnn\n");
    }
    snprintf(ref_onnx, sizeof ref_onnx, "%s/model.onnx", ref_dir);
    snprintf(validate_model, sizeof validate_model,
             "%.*s/../tests/apps/data/validate/cnn.txt", root,
             slash ? argv[1] : ".");
    snprintf(device_csv, sizeof device_csv,
             "%.*s/../tests/apps/data/device/measurements.csv", root,
             slash ? argv[1] : ".");
    snprintf(validate_weights, sizeof validate_weights,
             "%.*s/../tests/apps/data/validate/cnn.safetensors", root,
             slash ? argv[1] : ".");
    for (size_t i = 0; i < sizeof apps / sizeof apps[0]; i++) {
        const char *path = NULL;
        const size_t len = strlen(apps[i].name);
        for (int k = 2; k < argc; k++) {
            if (strncmp(argv[k], apps[i].name, len) == 0 &&
                argv[k][len] == '=') {
                path = argv[k] + len + 1;
            }
        }
        if (!path) {
            printf("ok %d - %s # SKIP not built\n", ++tests_run,
                   apps[i].name);
            continue;
        }
        run_app(&apps[i], path, tmp);
        run_terminal(&apps[i], path, tmp);
    }
    rmdir(tmp);
    printf("1..%d\n", tests_run);
    return tests_failed ? 1 : 0;
}
