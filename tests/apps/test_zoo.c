/* The model zoo (tests/data/zoo, written by scripts/make-zoo-fixtures.py
 * from PyTorch): the architectures a user exports, each either supported
 * or refused cleanly, so that this test documents the coverage.
 *
 * For each model of manifest.json:
 *   - listed in supported.txt: edgefit-memfit --format json at the
 *     manifest's batch gives exactly the manifest's parameter count (batch
 *     norms folded) and MACs, which PyTorch's modules gave through forward
 *     hooks; edgefit-validate at fp32 reproduces PyTorch's outputs with a
 *     relative error (largest absolute error over the largest output
 *     magnitude) of at most 1e-4, on every sample; a model with a text
 *     twin (model.txt and model.safetensors beside model.onnx) counts the
 *     same parameters and MACs through the twin;
 *   - not listed: both apps refuse it with exit 2, nothing on stdout and
 *     one diagnostic that names the file, an ONNX node ("node 'NAME'
 *     (OpType)") and an op type that the exported graph really holds
 *     (the manifest's onnx_ops). A model that imports is a failure too:
 *     it belongs in supported.txt, where its numbers are checked.
 * Moving a model into supported.txt is how the coverage grows. Each
 * refusal is printed, so the log says what blocks each model today.
 *
 * argv: EDGEFIT-MEMFIT EDGEFIT-VALIDATE ZOO_DIR. A build that reads no
 * ONNX files (-Donnx=disabled) skips the test (exit 77).
 *
 * EDGEFIT_ZOO_APPS=NAME,NAME... (unset: every supported model) names the
 * supported models that also go through layerwise, sweep and report; the
 * counts, the outputs against PyTorch and the refusals are checked for
 * every model whatever it says. Under an emulator (CI's qemu stage) the
 * three apps' timed runs of all fifteen models cost most of an hour; each
 * name must be a supported model, so a typo cannot check nothing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "run.h"

/* The fp32 tolerance the issue and edgefit-validate's default state. */
#define REL_TOLERANCE 1e-4

static const char *memfit_exe, *validate_exe, *zoo;
/* the apps that run a whole network on its own data (optional) */
static const char *layerwise_exe, *sweep_exe, *report_exe;
static char tmp_dir[] = "/tmp/edgefit-zoo-XXXXXX";
static json_t *manifest;
static char *supported; /* supported.txt, one name a line */

/* Whether name is a line of supported.txt ('#' starts a comment). */
static bool is_supported(const char *name)
{
    const size_t n = strlen(name);
    for (const char *p = supported; p && *p;) {
        const char *e = strchr(p, '\n');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        while (len > 0 && (p[len - 1] == ' ' || p[len - 1] == '\r')) {
            len--;
        }
        if (p[0] != '#' && len == n && strncmp(p, name, n) == 0) {
            return true;
        }
        p = e ? e + 1 : p + len;
    }
    return false;
}

static char *read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        return NULL;
    }
    char *buf = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (len + 4096 + 1 > cap) {
            cap = cap ? 2 * cap : 8192;
            char *grown = realloc(buf, cap);
            if (!grown) {
                free(buf);
                fclose(f);
                return NULL;
            }
            buf = grown;
        }
        const size_t got = fread(buf + len, 1, 4096, f);
        len += got;
        if (got < 4096) {
            break;
        }
    }
    fclose(f);
    buf[len] = '\0';
    return buf;
}

static json_int_t jint(const json_t *obj, const char *key)
{
    const json_t *v = json_object_get(obj, key);
    if (!json_is_integer(v)) {
        fail_msg("'%s' is not an integer", key);
    }
    return json_integer_value(v);
}

static const char *jstr(const json_t *obj, const char *key)
{
    const char *s = json_string_value(json_object_get(obj, key));
    if (!s) {
        fail_msg("'%s' is not a string", key);
    }
    return s;
}

static json_t *parse_json(const char *what, const char *text)
{
    json_error_t err;
    json_t *j = json_loads(text, 0, &err);
    if (!j) {
        fail_msg("%s: not JSON (%s): %s", what, err.text, text);
    }
    return j;
}

static void model_path(const json_t *m, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s/%s", zoo, jstr(m, "model"));
}

/* memfit's parameter count and MACs of path (with weights, unless NULL)
 * at the manifest's batch. */
static void memfit_counts(const json_t *m, const char *path,
                          const char *weights, json_int_t *params,
                          json_int_t *macs)
{
    char batch[32];
    snprintf(batch, sizeof batch, "%lld", (long long)jint(m, "batch"));
    char *argv[] = {(char *)memfit_exe, "--model", (char *)path, "--batch",
                    batch, "--format", "json", "--quiet", NULL, NULL, NULL};
    if (weights) {
        argv[8] = "--weights";
        argv[9] = (char *)weights;
    }
    struct run_result r;
    run_argv(argv, &r);
    if (r.status != 0) {
        fail_msg("%s: edgefit-memfit exit %d: %s", path, r.status, r.err);
    }
    json_t *j = parse_json(path, r.out);
    const json_t *plan = json_object_get(j, "memory_plan");
    assert_non_null(plan);
    assert_int_equal(jint(plan, "batch_size"), jint(m, "batch"));
    *params = jint(plan, "parameter_count");
    *macs = jint(plan, "macs");
    json_decref(j);
    run_free(&r);
}

/* memfit's parameter count and MACs at the manifest's batch. */
static void check_counts(const json_t *m)
{
    char path[1200];
    model_path(m, path, sizeof path);
    json_int_t params, macs;
    memfit_counts(m, path, NULL, &params, &macs);
    if (params != jint(m, "parameters") || macs != jint(m, "macs")) {
        fail_msg("%s: %lld parameters and %lld MACs; PyTorch's are %lld "
                 "(batch norms folded) and %lld", path, (long long)params,
                 (long long)macs, (long long)jint(m, "parameters"),
                 (long long)jint(m, "macs"));
    }
}

/* A model's text twin, when its folder has one: model.txt, written from
 * the same PyTorch module, and model.safetensors, the module's state_dict
 * (the weights of model.onnx). memfit counts the twin with its weights
 * exactly as the ONNX model: the text format describes the architecture
 * (the twin's outputs are checked by the validate-twin-* tests). */
static void check_twin_counts(const json_t *m)
{
    char onnx[1200], txt[1200], weights[1200];
    model_path(m, onnx, sizeof onnx);
    snprintf(txt, sizeof txt, "%s/%s/model.txt", zoo, jstr(m, "name"));
    snprintf(weights, sizeof weights, "%s/%s/model.safetensors", zoo,
             jstr(m, "name"));
    FILE *f = fopen(txt, "rb");
    if (!f) {
        return;
    }
    fclose(f);
    json_int_t params, macs, twin_params, twin_macs;
    memfit_counts(m, onnx, NULL, &params, &macs);
    memfit_counts(m, txt, weights, &twin_params, &twin_macs);
    if (twin_params != params || twin_macs != macs) {
        fail_msg("%s: %lld parameters and %lld MACs; the ONNX model's are "
                 "%lld and %lld", txt, (long long)twin_params,
                 (long long)twin_macs, (long long)params, (long long)macs);
    }
    print_message("%s: the text twin counts %lld parameters, %lld MACs\n",
                  jstr(m, "name"), (long long)twin_params,
                  (long long)twin_macs);
}

/* edgefit-validate at fp32 against PyTorch's outputs. */
static void check_outputs(const json_t *m)
{
    char path[1200], tol[32];
    model_path(m, path, sizeof path);
    snprintf(tol, sizeof tol, "%g", REL_TOLERANCE);
    char *argv[] = {(char *)validate_exe, "--model", path, "--precision",
                    "fp32", "--tolerance", tol, "--format", "json",
                    "--quiet", NULL};
    struct run_result r;
    run_argv(argv, &r);
    if (r.status != 0) {
        fail_msg("%s: edgefit-validate exit %d: %s", path, r.status, r.err);
    }
    json_t *j = parse_json(path, r.out);
    const json_t *rows = json_object_get(j, "validation");
    assert_int_equal(json_array_size(rows), 1);
    const json_t *row = json_array_get(rows, 0);
    assert_int_equal(jint(row, "samples"), jint(m, "batch"));
    const double rel =
        json_number_value(json_object_get(row, "relative_error"));
    if (!(rel <= REL_TOLERANCE) ||
        strcmp(jstr(row, "verdict"), "pass") != 0) {
        fail_msg("%s: relative error %g against PyTorch (at most %g)", path,
                 rel, REL_TOLERANCE);
    }
    print_message("%s: relative error %.3g\n", jstr(m, "name"), rel);
    json_decref(j);
    run_free(&r);
}

/* The op type a refusal names, "node 'NAME' (OpType)", into op. */
static bool refused_op(const char *err, char *op, size_t cap)
{
    const char *at = strstr(err, "model.onnx:");
    const char *node = at ? strstr(at, "node '") : NULL;
    const char *open = node ? strstr(node + 6, "' (") : NULL;
    const char *close = open ? strchr(open + 3, ')') : NULL;
    if (!close || (size_t)(close - open - 3) >= cap || close == open + 3) {
        return false;
    }
    snprintf(op, cap, "%.*s", (int)(close - open - 3), open + 3);
    return true;
}

static void check_refused(const json_t *m, const char *exe,
                          const char *prog)
{
    char path[1200];
    model_path(m, path, sizeof path);
    char *argv[] = {(char *)exe, "--model", path, "--format", "json",
                    "--quiet", NULL};
    struct run_result r;
    run_argv(argv, &r);
    if (r.status == 0) {
        fail_msg("%s: %s accepts it: add '%s' to supported.txt, where its "
                 "counts and outputs are checked", path, prog,
                 jstr(m, "name"));
    }
    if (r.status != 2) {
        fail_msg("%s: %s exit %d (want 2, a refusal): %s", path, prog,
                 r.status, r.err);
    }
    char prefix[64], op[64];
    snprintf(prefix, sizeof prefix, "%s: ", prog);
    if (r.out[0] != '\0' || strncmp(r.err, prefix, strlen(prefix)) != 0 ||
        !strstr(r.err, path) || strchr(r.err, '\n') != r.err +
                                                        strlen(r.err) - 1) {
        fail_msg("%s: %s's refusal is not one line naming the file: "
                 "stdout '%s', stderr '%s'", path, prog, r.out, r.err);
    }
    if (!refused_op(r.err, op, sizeof op)) {
        fail_msg("%s: %s's refusal names no node and op type: %s", path,
                 prog, r.err);
    }
    const json_t *ops = json_object_get(m, "onnx_ops");
    if (!json_object_get(ops, op)) {
        fail_msg("%s: %s names op type '%s', which the graph does not "
                 "hold: %s", path, prog, op, r.err);
    }
    print_message("%s: refused by %s: %.*s\n", jstr(m, "name"), prog,
                  (int)(strlen(r.err) - strlen(prefix) - 1),
                  r.err + strlen(prefix));
    run_free(&r);
}

/* Every app takes the model: layerwise analyses it, the sweep runs it at
 * every precision against PyTorch's outputs beside it (test_data_set_0),
 * fp32 within 1e-4 of them and int8 further off than fp32, and the report
 * writes its folder on the same data. */
static void check_apps(const json_t *m)
{
    char path[1200], dir[1200], out[1300];
    model_path(m, path, sizeof path);
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash) {
        *slash = '\0';
    }
    struct run_result r;
    char *lw[] = {(char *)layerwise_exe, "--model", path, "--format", "json",
                  "--quiet", "--repeats", "1", NULL};
    run_argv(lw, &r);
    if (r.status != 0) {
        fail_msg("%s: edgefit-layerwise exit %d: %s", path, r.status, r.err);
    }
    run_free(&r);
    char *sw[] = {(char *)sweep_exe, "--model", path, "--test-data", dir,
                  "--format", "json", "--quiet", NULL};
    run_argv(sw, &r);
    if (r.status != 0) {
        fail_msg("%s: edgefit-sweep exit %d: %s", path, r.status, r.err);
    }
    json_t *j = parse_json("edgefit-sweep's JSON", r.out);
    const json_t *rows = json_object_get(j, "sweep_results");
    double fp32 = -1, int8 = -1;
    size_t i;
    const json_t *row;
    json_array_foreach(rows, i, row) {
        const char *p = json_string_value(json_object_get(row, "precision"));
        const double e =
            json_number_value(json_object_get(row, "max_abs_error"));
        if (!p || !(e >= 0)) {
            fail_msg("%s: sweep row %zu has no max_abs_error", path, i);
        }
        if (strcmp(p, "fp32") == 0) {
            fp32 = fmax(fp32, e);
        } else if (strcmp(p, "int8") == 0) {
            int8 = fmax(int8, e);
        }
    }
    if (!(fp32 >= 0 && fp32 <= 1e-4 && int8 > fp32)) {
        fail_msg("%s: sweep's max_abs_error fp32 %g, int8 %g (want fp32 <= "
                 "1e-4 < int8)", path, fp32, int8);
    }
    json_decref(j);
    run_free(&r);
    snprintf(out, sizeof out, "%s/report-%s", tmp_dir, jstr(m, "name"));
    char *rp[] = {(char *)report_exe, "--model", path, "--test-data", dir,
                  "--out", out, "--quiet", NULL};
    run_argv(rp, &r);
    if (r.status != 0) {
        fail_msg("%s: edgefit-report exit %d: %s", path, r.status, r.err);
    }
    run_free(&r);
    char summary[1400];
    snprintf(summary, sizeof summary, "%s/summary.json", out);
    json_error_t err;
    json_t *sj = json_load_file(summary, 0, &err);
    if (!sj || json_array_size(json_object_get(sj, "verdict")) == 0) {
        fail_msg("%s: no verdict in %s", path, summary);
    }
    json_decref(sj);
    run_rmdir(out);
}

/* Whether NAME is in EDGEFIT_ZOO_APPS's list (or the list is unset). */
static bool apps_wanted(const char *name)
{
    const char *list = getenv("EDGEFIT_ZOO_APPS");
    if (!list) {
        return true;
    }
    const size_t len = strlen(name);
    for (const char *p = list; *p;) {
        const char *e = strchr(p, ',');
        const size_t n = e ? (size_t)(e - p) : strlen(p);
        if (n == len && strncmp(p, name, n) == 0) {
            return true;
        }
        p = e ? e + 1 : p + n;
    }
    return false;
}

static void test_model(void **state)
{
    const json_t *m = *state;
    if (is_supported(jstr(m, "name"))) {
        check_counts(m);
        check_outputs(m);
        check_twin_counts(m);
        if (report_exe && apps_wanted(jstr(m, "name"))) {
            check_apps(m);
        } else if (report_exe) {
            print_message("%s: not through layerwise, sweep and report "
                          "(EDGEFIT_ZOO_APPS)\n", jstr(m, "name"));
        }
    } else {
        check_refused(m, memfit_exe, "edgefit-memfit");
        check_refused(m, validate_exe, "edgefit-validate");
    }
}

/* The manifest is whole, and supported.txt names only its models: a typo
 * there would silently check nothing. */
static void test_manifest(void **state)
{
    (void)state;
    const json_t *models = json_object_get(manifest, "models");
    assert_true(json_array_size(models) >= 11);
    size_t i;
    const json_t *m;
    json_array_foreach(models, i, m) {
        char path[1200];
        model_path(m, path, sizeof path);
        FILE *f = fopen(path, "rb");
        if (!f) {
            fail_msg("%s is missing", path);
        }
        fclose(f);
        assert_true(jint(m, "batch") >= 1);
        assert_true(jint(m, "parameters") > 0);
        assert_true(jint(m, "macs") > 0);
        assert_true(json_object_size(json_object_get(m, "onnx_ops")) > 0);
    }
    /* Every name of EDGEFIT_ZOO_APPS is a supported model. */
    const char *list = getenv("EDGEFIT_ZOO_APPS");
    for (const char *p = list ? list : ""; *p;) {
        const char *e = strchr(p, ',');
        const size_t n = e ? (size_t)(e - p) : strlen(p);
        char name[96];
        if (n == 0 || n >= sizeof name) {
            fail_msg("EDGEFIT_ZOO_APPS: an empty or overlong name in '%s'",
                     list);
        }
        memcpy(name, p, n);
        name[n] = '\0';
        if (!is_supported(name)) {
            fail_msg("EDGEFIT_ZOO_APPS: '%s' is not a model of "
                     "supported.txt", name);
        }
        p = e ? e + 1 : p + n;
    }
    for (const char *p = supported; p && *p;) {
        const char *e = strchr(p, '\n');
        const size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len > 0 && p[0] != '#') {
            bool found = false;
            json_array_foreach(models, i, m) {
                const char *name = jstr(m, "name");
                found = found || (strlen(name) == len &&
                                  strncmp(name, p, len) == 0);
            }
            if (!found) {
                fail_msg("supported.txt: '%.*s' is not a model of the "
                         "manifest", (int)len, p);
            }
        }
        p = e ? e + 1 : p + len;
    }
}

int main(int argc, char **argv)
{
    if (argc != 4 && argc != 7) {
        fprintf(stderr, "usage: %s EDGEFIT-MEMFIT EDGEFIT-VALIDATE ZOO_DIR "
                "[EDGEFIT-LAYERWISE EDGEFIT-SWEEP EDGEFIT-REPORT]\n",
                argv[0]);
        return 2;
    }
    memfit_exe = argv[1];
    validate_exe = argv[2];
    zoo = argv[3];
    if (argc == 7) {
        layerwise_exe = argv[4];
        sweep_exe = argv[5];
        report_exe = argv[6];
        if (!mkdtemp(tmp_dir)) {
            perror("mkdtemp");
            return 1;
        }
    }
    char path[1200];
    snprintf(path, sizeof path, "%s/manifest.json", zoo);
    json_error_t err;
    if (!(manifest = json_load_file(path, 0, &err))) {
        fprintf(stderr, "%s:%d: %s\n", path, err.line, err.text);
        return 1;
    }
    snprintf(path, sizeof path, "%s/supported.txt", zoo);
    if (!(supported = read_file(path))) {
        fprintf(stderr, "%s: cannot be read\n", path);
        return 1;
    }
    const json_t *models = json_object_get(manifest, "models");
    const size_t n = json_array_size(models);
    if (n > 0) {
        char model[1200];
        model_path(json_array_get(models, 0), model, sizeof model);
        char *probe[] = {(char *)memfit_exe, "--model", model, NULL};
        struct run_result r;
        run_argv(probe, &r);
        const bool no_onnx = strstr(r.err, "reads no ONNX files") != NULL;
        run_free(&r);
        if (no_onnx) {
            printf("this build reads no ONNX files: skipped\n");
            return 77;
        }
    }
    struct CMUnitTest *tests = calloc(n + 1, sizeof *tests);
    char(*names)[96] = calloc(n + 1, sizeof *names);
    if (!tests || !names) {
        return 1;
    }
    tests[0] = (struct CMUnitTest)cmocka_unit_test(test_manifest);
    for (size_t i = 0; i < n; i++) {
        const json_t *m = json_array_get(models, i);
        const char *name = json_string_value(json_object_get(m, "name"));
        snprintf(names[i + 1], sizeof names[i + 1], "%s (%s)",
                 name ? name : "?",
                 name && is_supported(name) ? "supported" : "refused");
        tests[i + 1] = (struct CMUnitTest){names[i + 1], test_model, NULL,
                                           NULL, (void *)m};
    }
    const int rc = _cmocka_run_group_tests("zoo", tests, n + 1, NULL, NULL);
    free(tests);
    free(names);
    free(supported);
    json_decref(manifest);
    if (report_exe) {
        rmdir(tmp_dir);
    }
    return rc;
}
