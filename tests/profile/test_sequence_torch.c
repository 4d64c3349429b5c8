/*
 * PyTorch's numbers for a keyword transformer's per-position layers
 * (tests/data/sequence-torch.txt, scripts/make-sequence-fixture.py):
 *   - the executor at fp32 on a text model of nn.Linear + GELU (erf form),
 *     the class token, the position embedding, nn.LayerNorm and a softmax
 *     over the steps, with PyTorch's weights set through the public API
 *     in state_dict layouts: within 1e-5 of the largest output (float
 *     rounding of a few chained operations; a wrong axis, a missing
 *     token or an unbiased variance errs by 1e-2 and more);
 *   - libkernels' layer norm and its backward on rows far from zero
 *     (mean 3): y, dx, dgamma, dbeta within 1e-5 of each one's largest
 *     magnitude (float sums over 8 and 10 terms);
 *   - and each check is shown to catch a wrong answer.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../max_seen.h"
#include "edgefit/kernels.h"
#include "edgefit/memest.h"
#include "edgefit/profile.h"

static char *fixture;

static int setup(void **state)
{
    (void)state;
    const char *root = getenv("EDGEFIT_SOURCE_ROOT");
    char path[4096];
    snprintf(path, sizeof path, "%s/tests/data/sequence-torch.txt",
             root ? root : ".");
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "%s: cannot open (EDGEFIT_SOURCE_ROOT?)\n", path);
        return -1;
    }
    fseek(f, 0, SEEK_END);
    const long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    fixture = malloc((size_t)n + 1);
    if (!fixture || fread(fixture, 1, (size_t)n, f) != (size_t)n) {
        fclose(f);
        return -1;
    }
    fixture[n] = '\0';
    fclose(f);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    free(fixture);
    return 0;
}

/* The text of case `name`, up to the next case (a pointer into the
 * fixture and its length). */
static const char *case_of(const char *name, size_t *len)
{
    char head[64];
    snprintf(head, sizeof head, "\ncase %s ", name);
    const char *s = strstr(fixture, head);
    assert_non_null(s);
    s++;
    const char *e = strstr(s + 1, "\ncase ");
    *len = e ? (size_t)(e - s) : strlen(s);
    return s;
}

/* The floats of line "key v v v ..." of a case: exactly n of them. */
static void floats(const char *c, size_t len, const char *key, float *out,
                   size_t n)
{
    char head[64];
    snprintf(head, sizeof head, "\n%s ", key);
    const char *s = strstr(c, head);
    assert_true(s != NULL && (size_t)(s - c) < len);
    s += strlen(head);
    for (size_t i = 0; i < n; i++) {
        char *end;
        out[i] = strtof(s, &end);
        assert_true(end != s);
        s = end;
    }
    assert_true(*s == '\n' || *s == '\0');
}

/* Largest |a - b| over the largest |b|. */
static double rel_err(const float *a, const float *b, size_t n)
{
    double mx = 0, e = 0;
    for (size_t i = 0; i < n; i++) {
        mx = max_seen(mx, fabs(b[i]));
        e = max_seen(e, fabs((double)a[i] - b[i]));
    }
    return e / fmax(mx, 1e-30);
}

/* The model case through the executor: returns the error against
 * PyTorch's y; `wrong` scales one gamma by 1.001, a smaller slip than
 * any wrong formula (the check must then fail; a beta moved would not
 * show: the softmax over the steps ignores a constant per feature). */
static double model_error(int wrong)
{
    size_t len;
    const char *c = case_of("model", &len);
    char text[512] = "";
    for (const char *s = c; (s = strstr(s, "\ntext ")) && s < c + len;) {
        s += 6;
        const char *e = strchr(s, '\n');
        strncat(text, s, (size_t)(e - s) + 1);
    }
    memest_model *m = NULL;
    struct memest_diag d;
    if (memest_model_parse(text, &m, &d) != MEMEST_OK) {
        fail_msg("%s at %d:%d", d.message, d.line, d.column);
    }
    struct prof_exec_opts o;
    prof_exec_opts_init(&o);
    o.batch = 2;
    prof_exec *ex = NULL;
    struct prof_diag pd;
    if (prof_exec_create(m, &o, &ex, &pd) != PROF_OK) {
        fail_msg("%s", pd.message);
    }
    float x[80], fw[48], fb[6], cls[6], pos[36], lw[6], lb[6], y[72], got[72];
    floats(c, len, "x", x, 80);
    floats(c, len, "fc.weight", fw, 48);
    floats(c, len, "fc.bias", fb, 6);
    floats(c, len, "cls.weight", cls, 6);
    floats(c, len, "pos.weight", pos, 36);
    floats(c, len, "ln.weight", lw, 6);
    floats(c, len, "ln.bias", lb, 6);
    floats(c, len, "y", y, 72);
    if (wrong) {
        lw[0] *= 1.001f;
    }
    assert_int_equal(prof_exec_set_params(ex, 0, fw, 48, fb, 6), PROF_OK);
    assert_int_equal(prof_exec_set_params(ex, 1, cls, 6, NULL, 0), PROF_OK);
    assert_int_equal(prof_exec_set_params(ex, 2, pos, 36, NULL, 0), PROF_OK);
    assert_int_equal(prof_exec_set_params(ex, 3, lw, 6, lb, 6), PROF_OK);
    assert_int_equal(prof_exec_output_count(ex), 72);
    assert_int_equal(prof_exec_run(ex, x, 80, got, 72), PROF_OK);
    prof_exec_destroy(ex);
    memest_model_destroy(m);
    return rel_err(got, y, 72);
}

static void test_model(void **state)
{
    (void)state;
    const double e = model_error(0);
    if (!(e <= 1e-5)) {
        fail_msg("the executor is %.3g of the largest output away from "
                 "PyTorch's", e);
    }
    assert_true(model_error(1) > 1e-5);
}

static void test_layernorm_kernel(void **state)
{
    (void)state;
    size_t len;
    const char *c = case_of("layernorm", &len);
    float x[80], gm[8], bt[8], g[80], y[80], dx[80], dg[8], db[8];
    float y2[80], dx2[80], dg2[8], db2[8];
    floats(c, len, "x", x, 80);
    floats(c, len, "gamma", gm, 8);
    floats(c, len, "beta", bt, 8);
    floats(c, len, "g", g, 80);
    floats(c, len, "y", y, 80);
    floats(c, len, "dx", dx, 80);
    floats(c, len, "dgamma", dg, 8);
    floats(c, len, "dbeta", db, 8);
    assert_int_equal(kern_layernorm_f32(x, 10, 8, gm, bt, 1e-5f, y2), KERN_OK);
    assert_int_equal(kern_layernorm_backward_f32(x, g, 10, 8, gm, 1e-5f, dx2,
                                                 dg2, db2),
                     KERN_OK);
    const double e[4] = {rel_err(y2, y, 80), rel_err(dx2, dx, 80),
                         rel_err(dg2, dg, 8), rel_err(db2, db, 8)};
    for (int i = 0; i < 4; i++) {
        if (!(e[i] <= 1e-5)) {
            fail_msg("layernorm %s is %.3g of its largest away from "
                     "PyTorch's", (const char *[]){"y", "dx", "dgamma",
                                                   "dbeta"}[i], e[i]);
        }
    }
    /* the unbiased variance (n - 1), a plausible slip, scales y - beta
     * by sqrt(7/8): the comparison catches it */
    {
        float yb[80];
        float gb[8];
        for (int i = 0; i < 8; i++) {
            gb[i] = gm[i] * sqrtf(7.0f / 8.0f);
        }
        assert_int_equal(kern_layernorm_f32(x, 10, 8, gb, bt, 1e-5f, yb),
                         KERN_OK);
        assert_true(rel_err(yb, y, 80) > 1e-3);
    }
    /* arguments */
    assert_int_equal(kern_layernorm_f32(NULL, 1, 8, gm, bt, 1e-5f, y2),
                     KERN_E_INVALID);
    assert_int_equal(kern_layernorm_f32(x, 1, 0, gm, bt, 1e-5f, y2),
                     KERN_E_SHAPE);
    assert_int_equal(kern_layernorm_f32(x, 1, 8, gm, bt, -1.0f, y2),
                     KERN_E_RANGE);
    assert_int_equal(kern_layernorm_f32(x, SIZE_MAX / 2, 8, gm, bt, 1e-5f,
                                        y2),
                     KERN_E_OVERFLOW);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_model),
        cmocka_unit_test(test_layernorm_kernel),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
