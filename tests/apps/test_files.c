/* Files in and out of every app. --out is checked before any work with
 * the system's reason (a file, a file on the way, a link to nowhere) and
 * written all or nothing when the disk fills up while the files are
 * written; a model file must be UTF-8 (a BOM is skipped).
 * argv: memfit layerwise stream bench train sweep report validate, then
 * edgefit-validate's fixture folder (tests/apps/data/validate). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "run.h"

enum { MEMFIT, LAYERWISE, STREAM, BENCH, TRAIN, SWEEP, REPORT, VALIDATE,
       NAPPS };
static const char *exe[NAPPS];
static char tmpdir[] = "/tmp/edgefit-out-XXXXXX";
/* Zero weights of mlp:784-64-10 for edgefit-sweep, written at start. */
static char sweep_weights[640];
/* edgefit-validate's model and weights, beside their test_data_set_*. */
static char validate_model[640], validate_weights[640];

/* Arguments that make each app do real work (seconds at least for
 * layerwise and stream if the --out check came after it). */
static const char *const work[NAPPS][12] = {
    {"--model", "smallcnn", NULL},
    {"--model", "mlp:1024-1024-1024", "--repeats", "2000", NULL},
    {"--features", "784", "--hidden", "512", "--repeats", "5000", NULL},
    {"--table", "matmul", NULL},
    /* epochs of Fashion-MNIST on a wide MLP, a sweep of the test set and
     * a report's training: each many seconds (the default MLP trains an
     * epoch in less than half a second) */
    {"--model", "mlp:784-512-512-10", "--epochs", "3", NULL},
    {"--weights", sweep_weights, "--batches", "1,8,32,128", "--repeats",
     "200", NULL},
    {"--model", "mlp:784-512-512-10", "--epochs", "3", NULL},
    {"--model", validate_model, "--weights", validate_weights, "--precision",
     "fp32,fp16,bf16,int8", NULL},
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Run app with its work arguments and --out out; rc and what it printed. */
static void run_app(int app, const char *out, struct run_result *r,
                    double *seconds)
{
    char *argv[20];
    int n = 0;
    argv[n++] = (char *)exe[app];
    for (int i = 0; work[app][i]; i++) {
        argv[n++] = (char *)work[app][i];
    }
    argv[n++] = "--out";
    argv[n++] = (char *)out;
    argv[n] = NULL;
    const double t0 = now_s();
    run_argv(argv, r);
    *seconds = now_s() - t0;
}

static void expect_refused(const char *out, const char *reason,
                           const char *extra)
{
    for (int app = 0; app < NAPPS; app++) {
        struct run_result r;
        double s;
        run_app(app, out, &r, &s);
        char want[800];
        snprintf(want, sizeof want, "--out %s: ", out);
        if (r.status != 2 || !strstr(r.err, want) ||
            !strstr(r.err, reason) || (extra && !strstr(r.err, extra)) ||
            r.out[0] != '\0') {
            fail_msg("%s --out %s: status %d, stderr '%s' (want 2 and "
                     "'%s' '%s')",
                     exe[app], out, r.status, r.err, want, reason);
        }
        /* Before the work: far below what the work takes (many seconds
         * for layerwise, stream and bench). */
        if (s > 2.0) {
            fail_msg("%s --out %s: refused only after %.1f s", exe[app], out,
                     s);
        }
        run_free(&r);
    }
}

static void test_out_is_a_file(void **state)
{
    (void)state;
    char file[600];
    snprintf(file, sizeof file, "%s/a-file", tmpdir);
    FILE *f = fopen(file, "w");
    assert_non_null(f);
    fclose(f);
    expect_refused(file, strerror(ENOTDIR), NULL);

    /* a folder to create below a file */
    char below[700];
    snprintf(below, sizeof below, "%s/sub/deeper", file);
    expect_refused(below, strerror(ENOTDIR), NULL);
    unlink(file);
}

static void test_out_dangling_link(void **state)
{
    (void)state;
    char link[600], target[600];
    snprintf(link, sizeof link, "%s/link", tmpdir);
    snprintf(target, sizeof target, "%s/nowhere", tmpdir);
    assert_int_equal(symlink(target, link), 0);
    expect_refused(link, strerror(ENOENT), "symbolic link");
    /* and as a folder on the way */
    char below[700];
    snprintf(below, sizeof below, "%s/x", link);
    expect_refused(below, strerror(ENOENT), "symbolic link");
    unlink(link);
}

/* Root may write anywhere, so permission is only checked when the test
 * runs as another user. */
static void test_out_not_writable(void **state)
{
    (void)state;
    if (geteuid() == 0) {
        skip();
    }
    char dir[600], below[700];
    snprintf(dir, sizeof dir, "%s/read-only", tmpdir);
    assert_int_equal(mkdir(dir, 0500), 0);
    expect_refused(dir, strerror(EACCES), NULL);
    snprintf(below, sizeof below, "%s/new", dir);
    expect_refused(below, strerror(EACCES), NULL);
    rmdir(dir);
}

/* A disk that fills up while the files are written: RLIMIT_FSIZE between
 * the sizes of the first and second files makes the second one's flush
 * fail. Nothing may appear, and the message names the file and the
 * system's reason. */
static void fill_up(int app, char *const argv[], const char *dir,
                    const char *first, const char *second)
{
    struct run_result r;
    run_argv(argv, &r); /* room enough: sizes of both */
    assert_int_equal(r.status, 0);
    run_free(&r);
    char a[700], b[700];
    snprintf(a, sizeof a, "%s/%s", dir, first);
    snprintf(b, sizeof b, "%s/%s", dir, second);
    struct stat sa, sb;
    assert_int_equal(stat(a, &sa), 0);
    assert_int_equal(stat(b, &sb), 0);
    if (sa.st_size + 64 >= sb.st_size) {
        fail_msg("%s: %s (%lld B) is not smaller than %s (%lld B)", exe[app],
                 first, (long long)sa.st_size, second,
                 (long long)sb.st_size);
    }
    run_rmdir(dir);

    const long limit = (long)(sa.st_size + sb.st_size) / 2;
    run_argv_fsize(argv, limit, &r);
    if (run_count_entries(dir) > 0) {
        fail_msg("%s under a %ld B limit: %d files appeared in %s",
                 exe[app], limit, run_count_entries(dir), dir);
    }
    char want[800];
    snprintf(want, sizeof want, "%s: %s", b, strerror(EFBIG));
    if (r.status != 1 || !strstr(r.err, want)) {
        fail_msg("%s under a %ld B limit: status %d, stderr '%s' (want 1 "
                 "and '%s')",
                 exe[app], limit, r.status, r.err, want);
    }
    run_free(&r);
    run_rmdir(dir);
}

static void test_full_disk(void **state)
{
    (void)state;
    char dir[600];
    snprintf(dir, sizeof dir, "%s/full", tmpdir);
    char *memfit[] = {(char *)exe[MEMFIT], "--model", "smallcnn", "--out",
                      dir, NULL};
    fill_up(MEMFIT, memfit, dir, "layerwise_breakdown.csv",
            "memory_plan.json");
    char *layerwise[] = {(char *)exe[LAYERWISE], "--model", "mlp:8-4-2",
                         "--repeats", "1", "--warmup", "0", "--out", dir,
                         NULL};
    fill_up(LAYERWISE, layerwise, dir, "layerwise_breakdown.csv",
            "hardware_summary.csv");
    char *validate[] = {(char *)exe[VALIDATE], "--model", validate_model,
                        "--weights", validate_weights, "--out", dir, NULL};
    fill_up(VALIDATE, validate, dir, "validation.csv", "validation.json");
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
}

/* A Latin-1 name once made "--format json" fail with "stdout: out of
 * memory" and wrote a CSV other tools could not read: now refused at its
 * line and column, in memfit as in layerwise, before any output. */
static void test_model_not_utf8(void **state)
{
    (void)state;
    char model[600], dir[600];
    snprintf(model, sizeof model, "%s/latin1.model", tmpdir);
    snprintf(dir, sizeof dir, "%s/not-written", tmpdir);
    write_text(model, "input 4\ndense 3 name=caf\xe9\n");
    char want[700];
    snprintf(want, sizeof want, "%s:2:17: invalid UTF-8 (byte 0xE9)", model);
    for (int app = 0; app < 2; app++) {
        char *argv[] = {(char *)exe[app == 0 ? MEMFIT : LAYERWISE],
                        "--model", model, "--format", "json", "--out", dir,
                        NULL};
        const char *bad = run_rejected(argv, want);
        if (bad) {
            fail_msg("%s: %s", argv[0], bad);
        }
        assert_int_equal(run_count_entries(dir), -1);
    }

    /* The same name in UTF-8, after a byte-order mark: accepted, and the
     * JSON carries it. */
    write_text(model, "\xef\xbb\xbfname caf\xc3\xa9\ninput 4\ndense 3\n");
    char *argv[] = {(char *)exe[MEMFIT], "--model", model, "--format",
                    "json", NULL};
    struct run_result r;
    run_argv(argv, &r);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "caf\xc3\xa9"));
    run_free(&r);
    unlink(model);
}

/* A full disk under stdout: the system's reason, exit 1 (was "input/output
 * error" for every cause). */
static void test_stdout_full(void **state)
{
    (void)state;
    if (access("/dev/full", W_OK) != 0) {
        skip();
    }
    static const char *const args[NAPPS][8] = {
        {"--format", "json", NULL},
        {"--list-devices", NULL},
        {"--list-devices", NULL},
        {"--table", "mixed_precision", "--format", "csv", NULL},
        {"--epochs", "1", "--train-limit", "128", "--test-limit", "64",
         NULL},
        {"--list-devices", NULL},
        {"--list-devices", NULL},
        {"--model", validate_model, "--weights", validate_weights, NULL},
    };
    for (int app = 0; app < NAPPS; app++) {
        char *argv[10] = {(char *)exe[app]};
        for (int i = 0; args[app][i]; i++) {
            argv[1 + i] = (char *)args[app][i];
        }
        struct run_result r;
        run_argv_stdout(argv, "/dev/full", &r);
        char want[200];
        snprintf(want, sizeof want, "stdout: %s", strerror(ENOSPC));
        if (r.status != 1 || !strstr(r.err, want)) {
            fail_msg("%s > /dev/full: status %d, stderr '%s' (want 1 and "
                     "'%s')", exe[app], r.status, r.err, want);
        }
        run_free(&r);
    }
}

int main(int argc, char **argv)
{
    if (argc != 2 + NAPPS) {
        fprintf(stderr,
                "usage: %s MEMFIT LAYERWISE STREAM BENCH TRAIN SWEEP "
                "REPORT VALIDATE VALIDATE_FIXTURES\n",
                argv[0]);
        return 2;
    }
    snprintf(validate_model, sizeof validate_model, "%s/cnn.txt",
             argv[1 + NAPPS]);
    snprintf(validate_weights, sizeof validate_weights,
             "%s/cnn.safetensors", argv[1 + NAPPS]);
    for (int i = 0; i < NAPPS; i++) {
        exe[i] = argv[1 + i];
    }
    if (!mkdtemp(tmpdir)) {
        return 1;
    }
    snprintf(sweep_weights, sizeof sweep_weights, "%s/weights.safetensors",
             tmpdir);
    if (run_write_zero_mlp(sweep_weights) != 0) {
        fprintf(stderr, "cannot write %s\n", sweep_weights);
        run_rmdir(tmpdir);
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_out_is_a_file),
        cmocka_unit_test(test_out_dangling_link),
        cmocka_unit_test(test_out_not_writable),
        cmocka_unit_test(test_full_disk),
        cmocka_unit_test(test_model_not_utf8),
        cmocka_unit_test(test_stdout_full),
    };
    const int rc = cmocka_run_group_tests(tests, NULL, NULL);
    run_rmdir(tmpdir);
    return rc;
}
