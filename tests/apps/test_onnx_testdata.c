/* ONNX's own backend test cases as ours: every case of Debian's
 * libonnx-testdata under data/node, data/pytorch-converted and data/simple
 * (a model.onnx beside its test_data_set_* folders of TensorProto files)
 * runs through edgefit-validate in fp32 at its default tolerance (a
 * relative error of 1e-4 of the output's largest magnitude).
 *
 * Each case ends one of two ways, and anything else fails the test:
 *   - accepted: exit 0 and every comparison's verdict "pass" (a case whose
 *     operators are supported must give ONNX's answers);
 *   - refused: exit 2, nothing on stdout, one diagnostic on stderr that
 *     names the case's file (the model -- at a node, the node and its op
 *     type -- or the reference tensor): never a crash, exit 1 or a
 *     silent failure.
 * The number of cases that pass is printed and must not drop below the
 * committed minimum (tests/data/onnx-testdata-min.txt), so that what
 * works keeps working; raise it when more passes.
 *
 * argv: EDGEFIT-VALIDATE DATA_ROOT MIN_FILE. TAP output. A machine without
 * the package, and a build without ONNX (-Donnx=disabled), skip the test
 * (exit 77). */
#include <dirent.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "run.h"

static int test_no, failed;
static unsigned run, passed, refused;

static void ok(bool cond, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void ok(bool cond, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    printf("%s %d - ", cond ? "ok" : "not ok", ++test_no);
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    failed += !cond;
}

/* The first line of s, at most cap - 1 bytes, for TAP. */
static const char *first_line(const char *s, char *buf, size_t cap)
{
    snprintf(buf, cap, "%.*s", (int)strcspn(s, "\n"), s);
    return buf;
}

/* Count "fail" verdicts in the CSV edgefit-validate printed: the column
 * is the last, so a failing row ends in ",fail". */
static unsigned failures(const char *csv, unsigned *rows)
{
    unsigned n = 0;
    *rows = 0;
    for (const char *p = strchr(csv, '\n'); p && p[1]; p = strchr(p + 1,
                                                                  '\n')) {
        const char *e = strchr(p + 1, '\n');
        const size_t len = e ? (size_t)(e - p - 1) : strlen(p + 1);
        (*rows)++;
        n += len >= 5 && strncmp(p + 1 + len - 5, ",fail", 5) == 0;
    }
    return n;
}

static void run_case(const char *exe, const char *area, const char *dir,
                     const char *name)
{
    char model[1400];
    snprintf(model, sizeof model, "%s/model.onnx", dir);
    struct stat sb;
    if (stat(model, &sb) != 0) {
        return; /* not a case */
    }
    char *argv[] = {(char *)exe, "--model", model, "--format", "csv",
                    "--quiet", NULL};
    struct run_result r;
    run_argv(argv, &r);
    char label[1400], line[400];
    snprintf(label, sizeof label, "%s/%s", area, name);
    run++;
    if (r.status == 0) {
        unsigned rows;
        const unsigned bad = failures(r.out, &rows);
        if (bad == 0 && rows > 0) {
            passed++;
            ok(true, "%s: passes", label);
        } else {
            ok(false, "%s: accepted but wrong (%u of %u comparisons fail)",
               label, bad, rows);
            printf("# %s", r.out);
        }
    } else if (r.status == 2) {
        refused++;
        /* One clean diagnostic: the program's prefix and the case's own
         * path (the model or a tensor file), nothing on stdout. */
        bool clean = r.out[0] == '\0' &&
                     strncmp(r.err, "edgefit-validate: ", 18) == 0 &&
                     strstr(r.err, dir) != NULL;
        /* A refusal at a node of the model (model.onnx:LINE:) names the
         * node and its op type: "node 'name' (OpType)". */
        const char *at = strstr(r.err, "model.onnx:");
        if (at && at[11] >= '0' && at[11] <= '9') {
            const char *node = strstr(at, "node '");
            clean = clean && node && strstr(node, "' (") != NULL;
        }
        ok(clean, "%s: refused: %s", label,
           first_line(r.err + (strncmp(r.err, "edgefit-validate: ", 18)
                                       == 0 ? 18 : 0),
                      line, sizeof line));
    } else {
        ok(false, "%s: status %d (a crash, or a runtime failure)", label,
           r.status);
        printf("# %s\n", first_line(r.err, line, sizeof line));
    }
    run_free(&r);
}

static void run_area(const char *exe, const char *root, const char *area)
{
    char path[1000];
    snprintf(path, sizeof path, "%s/%s", root, area);
    struct dirent **names = NULL;
    const int n = scandir(path, &names, NULL, alphasort);
    if (n < 0) {
        ok(false, "%s: %s cannot be listed", area, path);
        return;
    }
    for (int i = 0; i < n; i++) {
        if (names[i]->d_name[0] != '.') {
            char dir[1300];
            snprintf(dir, sizeof dir, "%s/%s", path, names[i]->d_name);
            run_case(exe, area, dir, names[i]->d_name);
        }
        free(names[i]);
    }
    free(names);
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: %s EDGEFIT-VALIDATE DATA_ROOT MIN_FILE\n",
                argv[0]);
        return 2;
    }
    struct stat sb;
    if (stat(argv[2], &sb) != 0) {
        printf("1..0 # SKIP %s is missing (Debian's libonnx-testdata)\n",
               argv[2]);
        return 77;
    }
    char relu[1200];
    snprintf(relu, sizeof relu, "%s/node/test_relu/model.onnx", argv[2]);
    char *probe[] = {argv[1], "--model", relu, NULL};
    struct run_result r;
    run_argv(probe, &r);
    const bool no_onnx = strstr(r.err, "reads no ONNX files") != NULL;
    run_free(&r);
    if (no_onnx) {
        printf("1..0 # SKIP this build reads no ONNX files\n");
        return 77;
    }
    FILE *f = fopen(argv[3], "r");
    unsigned min_passed = 0;
    if (!f || fscanf(f, "%u", &min_passed) != 1) {
        printf("Bail out! cannot read the minimum from %s\n", argv[3]);
        return 1;
    }
    fclose(f);
    static const char *const areas[] = {"node", "pytorch-converted",
                                        "simple"};
    for (size_t i = 0; i < sizeof areas / sizeof areas[0]; i++) {
        run_area(argv[1], argv[2], areas[i]);
    }
    ok(passed >= min_passed, "%u cases run, %u passed, %u refused; at "
       "least %u must pass", run, passed, refused, min_passed);
    printf("# ONNX test data: %u cases run, %u passed, %u refused "
           "(minimum %u)\n", run, passed, refused, min_passed);
    printf("1..%d\n", test_no);
    return failed ? 1 : 0;
}
