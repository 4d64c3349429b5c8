/* edgefit-report end to end on a small learnable data set written here as
 * IDX files: the verdict on stdout, every file summary.json lists exists
 * (and nothing else is in the folder), report.html refers only to files
 * that exist, by relative names, with no script; every PNG is a PNG; bad
 * input is refused before any work and leaves no folder. The program path
 * comes as argv[1]. */
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
#include <unistd.h>

#include "run.h"

static const char *report_app;
static char tmpdir[] = "/tmp/edgefit-report-XXXXXX";
static char datadir[600];

static int setup(void **state)
{
    (void)state;
    if (!mkdtemp(tmpdir)) {
        return -1;
    }
    snprintf(datadir, sizeof datadir, "%s/data", tmpdir);
    return mkdir(datadir, 0777);
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

static void test_report(void **state)
{
    (void)state;
    assert_int_equal(run_write_bands(datadir, "train", 640, 3), 0);
    assert_int_equal(run_write_bands(datadir, "t10k", 200, 5), 0);
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
    static const char *const parts[] = {"Memory: fits rpi4", "Precision: ",
                                        "On rpi4 (roofline)", "Bound: ",
                                        "Training: 2 epochs"};
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
        if (!strstr(r.out, parts[i])) {
            fail_msg("no '%s' in the verdict:\n%s", parts[i], r.out);
        }
    }
    /* The device's energy is its power over the device's latency (not
     * this machine's, as energy_proxy_j), and says so. */
    const char *on = strstr(r.out, "On rpi4 (roofline): ");
    double ms, mj, watts;
    char prec[16];
    if (sscanf(on, "On rpi4 (roofline): %lf ms per input at %15s batch 1, "
                   "energy %lf mJ at %lf W over that time (the sweep's "
                   "energy_proxy_j uses this machine's latency)",
               &ms, prec, &mj, &watts) != 4) {
        fail_msg("the device sentence: %.200s", on);
    }
    if (fabs(mj - watts * ms) > 0.005 * mj) {
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
    char *a2[] = {(char *)report_app, "--epochs", "0", "--out", out, NULL};
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
    };
    for (size_t i = 0; i < 4; i++) {
        const char *why = run_rejected(cases[i].argv, cases[i].needle);
        if (why) {
            fail_msg("case %zu: %s", i, why);
        }
    }
    assert_int_equal(run_count_entries(out), -1);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: test-report PATH-TO-edgefit-report\n");
        return 2;
    }
    report_app = argv[1];
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_report),
        cmocka_unit_test(test_bad_input),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
