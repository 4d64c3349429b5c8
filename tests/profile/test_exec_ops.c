/* The executor's operator table (libprofile/src/exec/ops/table.c), linked
 * from the library's objects: every kind a model can hold has an entry
 * that runs in float, the model-input kind and kinds outside the enum have
 * none; the view rule agrees with the arena plan libmemest makes (a view
 * shares its input's buffer there, and only a view); every kind whose
 * layers have parameters in libmemest's counts draws them (an entry
 * without init_params would silently drop a layer's weights); the
 * trainer's backward is where the trainer claims to train; and the
 * trainer's batch norm in training mode (forward, running statistics,
 * backward) gives PyTorch's numbers (tests/data/batchnorm-torch.txt). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "edgefit/memest.h"
#include "edgefit/profile.h"
#include "exec/ops.h"
#include "bn_fixture.h"

/* A layer of every kind the text format has (the input's aside). */
static const char *const EVERY_KIND =
    "input 8x6x6\n"
    "input 6x8 name=seq\n"
    "convtranspose 8 k=2 s=2 p=3 in=input name=ct\n"
    "resize scale=1/2 mode=bilinear name=rs\n"
    "conv2d 8 k=3 p=1 act=relu name=c\n"
    "maxpool k=2 name=mp\n"
    "avgpool k=1 name=ap\n"
    "batchnorm name=bn\n"
    "identity name=id\n"
    "dropout name=dr\n"
    "relu name=r\n"
    "add in=r,ap name=sum\n"
    "concat in=sum,mp name=cat\n"
    "pad p=1,0,0,1 value=0.5 name=pd\n"
    "globalavgpool name=gap\n"
    "flatten name=fl\n"
    "dense 4 act=softmax name=d\n"
    "sub in=d scalar=1 name=sb\n"
    "mul in=sb,d name=ml\n"
    "div in=ml scalar_left=2 name=dv\n"
    "slice axis=c begin=1 end=3 in=dv name=sl\n"
    "shuffle g=2 in=cat name=sh\n"
    "globalavgpool name=gap2\n"
    "reshape shape=4x2x2 name=rsh\n"
    "flatten name=fl2\n"
    "attention heads=2 in=seq name=att\n"
    "transpose perm=1,0 in=att name=tr\n"
    "matmul in=att,tr name=mm\n"
    "flatten in=mm name=fl3\n"
    "concat in=sl,fl2,fl3 name=out\n"
    "layernorm in=seq name=ln\n"
    "clstoken name=cls\n"
    "posembed name=pe\n"
    "dense 4 name=sd\n"
    "flatten name=fl4\n"
    "lstm 4 in=seq name=ls\n"
    "gru 4 dir=bidirectional seq=no lbr=no name=gr\n"
    "concat in=out,fl4,gr name=out2\n";

static memest_model *model_of(const char *text)
{
    memest_model *m = NULL;
    struct memest_diag d;
    if (memest_model_parse(text, &m, &d) != MEMEST_OK) {
        fail_msg("model: %s at %d:%d", d.message, d.line, d.column);
    }
    return m;
}

static void test_entries(void **state)
{
    (void)state;
    assert_null(exec_op_find(MEMEST_KIND_INPUT));
    assert_null(exec_op_find((enum memest_kind)MEMEST_KIND_COUNT));
    assert_null(exec_op_find((enum memest_kind)-1));
    /* every kind of the enum but the input's appears in the model */
    memest_model *m = model_of(EVERY_KIND);
    bool seen[MEMEST_KIND_COUNT] = {false};
    for (size_t i = 0; i < memest_model_layer_count(m); i++) {
        seen[memest_model_layer(m, i)->kind] = true;
    }
    for (unsigned k = 1; k < MEMEST_KIND_COUNT; k++) {
        const struct exec_op_vtable *vt = exec_op_find((enum memest_kind)k);
        if (!seen[k]) {
            fail_msg("kind %s is missing from the test model",
                     memest_kind_name((enum memest_kind)k));
        }
        if (!vt || !vt->run_f32) {
            fail_msg("kind %s has no entry",
                     memest_kind_name((enum memest_kind)k));
        }
    }
    memest_model_destroy(m);
}

static void test_views_and_params(void **state)
{
    (void)state;
    memest_model *m = model_of(EVERY_KIND);
    struct memest_arena_plan plan;
    assert_int_equal(memest_plan_arena(m, 2, MEMEST_FP32, &plan), MEMEST_OK);
    struct prof_exec_opts o;
    prof_exec_opts_init(&o);
    o.batch = 2;
    prof_exec *ex = NULL;
    struct prof_diag d;
    assert_int_equal(prof_exec_create(m, &o, &ex, &d), PROF_OK);
    const size_t ninputs = memest_model_input_count(m);
    size_t views = 0;
    for (size_t i = 0; i < memest_model_layer_count(m); i++) {
        const struct memest_layer *L = memest_model_layer(m, i);
        const struct exec_op_vtable *vt = exec_op_find(L->kind);
        const size_t t = ninputs + i;
        const bool shares = plan.alias[t] != t;
        /* the executor's own decision, as it runs the layer */
        if (shares != ex->ops[i].alias) {
            fail_msg("%s: libmemest's plan %s its input's buffer, the "
                     "executor's layer is %sa view", L->name,
                     shares ? "shares" : "does not share",
                     ex->ops[i].alias ? "" : "not ");
        }
        views += shares;
        if ((L->parameter_count > 0) != (vt->init_params != NULL)) {
            fail_msg("%s: %llu parameters in libmemest's counts, "
                     "init_params %s", L->name,
                     (unsigned long long)L->parameter_count,
                     vt->init_params ? "set" : "NULL");
        }
    }
    /* identity, dropout, four flattens, reshape */
    assert_int_equal(views, 7);
    prof_exec_destroy(ex);
    memest_arena_plan_free(&plan);
    memest_model_destroy(m);
}

/* Whether `name` is one of the items of "a, b and c" (a whole item:
 * "mul" is not listed by "matmul"). */
static bool listed(const char *list, const char *name)
{
    const size_t n = strlen(name);
    for (const char *p = list; (p = strstr(p, name)) != NULL; p++) {
        const bool starts = p == list || p[-1] == ' ';
        const char e = p[n];
        if (starts && (e == '\0' || e == ',' || e == ' ')) {
            return true;
        }
    }
    return false;
}

static void test_trainable(void **state)
{
    (void)state;
    char buf[320];
    exec_trainable_kinds(buf, sizeof buf);
    assert_string_equal(buf, "dense, conv2d, maxpool, avgpool, flatten, "
                             "activation, globalavgpool, add, concat, "
                             "batchnorm, identity, dropout, shuffle, slice, "
                             "reshape, layernorm, clstoken, posembed, "
                             "matmul, transpose, attention, lstm and gru");
    /* a short buffer stays terminated */
    exec_trainable_kinds(buf, 12);
    assert_string_equal(buf, "dense, conv");
    for (unsigned k = 1; k < MEMEST_KIND_COUNT; k++) {
        const struct exec_op_vtable *vt = exec_op_find((enum memest_kind)k);
        const char *name = memest_kind_name((enum memest_kind)k);
        exec_trainable_kinds(buf, sizeof buf);
        if ((vt->backward_f32 != NULL) != listed(buf, name)) {
            fail_msg("%s: backward %s, listed as trained: %s", name,
                     vt->backward_f32 ? "set" : "NULL", buf);
        }
    }
}

/* A layer whose kind has no entry is refused by name, never run as
 * another kind: here a model's layer turned into the model-input kind and
 * into a kind past the enum (what a kind libmemest gains before the
 * executor does looks like to it). */
static void test_refused(void **state)
{
    (void)state;
    const enum memest_kind bad[] = {MEMEST_KIND_INPUT,
                                    (enum memest_kind)MEMEST_KIND_COUNT};
    for (size_t b = 0; b < sizeof bad / sizeof bad[0]; b++) {
        memest_model *m = model_of("input 4\ndense 3 name=d1\n"
                                   "relu name=odd\ndense 2\n");
        struct memest_layer *L =
            (struct memest_layer *)memest_model_layer(m, 1);
        L->kind = bad[b];
        prof_exec *ex = (prof_exec *)m;
        struct prof_diag d;
        int st = prof_exec_create(m, NULL, &ex, &d);
        assert_int_equal(st, PROF_E_UNSUPPORTED);
        assert_null(ex);
        const char *want = b == 0
                               ? "odd: the executor has no operator for "
                                 "input layers"
                               : "odd: the executor has no operator for "
                                 "(unknown) layers";
        assert_string_equal(d.message, want);
        memest_model_destroy(m);
    }
}

/* Largest |a - ref| over n values within 4e-6 of the largest |ref| plus
 * 4e-6 of the value (float against PyTorch's float: a few ulp of sums of
 * 24 terms; a wrong statistic is off by percents). */
static void near(const char *what, const float *a, const float *ref,
                 size_t n)
{
    double mx = 0;
    for (size_t i = 0; i < n; i++) {
        mx = fabs((double)ref[i]) > mx ? fabs((double)ref[i]) : mx;
    }
    for (size_t i = 0; i < n; i++) {
        const double tol = 4e-6 * mx + 4e-6 * fabs((double)ref[i]);
        if (!(fabs((double)a[i] - (double)ref[i]) <= tol)) {
            fail_msg("%s[%zu]: %.9g, PyTorch %.9g", what, i, (double)a[i],
                     (double)ref[i]);
        }
    }
}

static void test_batchnorm_torch(void **state)
{
    (void)state;
    char *file = bn_fixture_read();
    assert_non_null(file);
    const char *names[] = {"bn2d", "bn1d"};
    for (size_t k = 0; k < 2; k++) {
        struct bn_case c;
        assert_true(bn_fixture_case(file, names[k], &c));
        const size_t C = c.channels, n = c.batch * C * c.hw;
        float *buf = calloc(9 * n + 16 * C, sizeof *buf);
        assert_non_null(buf);
        float *x = buf, *x2 = x + n, *g = x2 + n, *y = g + n, *dx = y + n;
        float *ry = dx + n, *rdx = ry + n, *y2 = rdx + n;
        float *gamma = y2 + n, *beta = gamma + C, *stat = beta + C;
        float *run = stat + 2 * C, *dg = run + 2 * C, *db = dg + C;
        float *rdg = db + C, *rdb = rdg + C, *r1 = rdb + C, *r2 = r1 + 2 * C;
        assert_true(bn_fixture_values(&c, "x", x, n));
        assert_true(bn_fixture_values(&c, "x2", x2, n));
        assert_true(bn_fixture_values(&c, "g", g, n));
        assert_true(bn_fixture_values(&c, "gamma", gamma, C));
        assert_true(bn_fixture_values(&c, "beta", beta, C));
        assert_true(bn_fixture_values(&c, "y", ry, n));
        assert_true(bn_fixture_values(&c, "dx", rdx, n));
        assert_true(bn_fixture_values(&c, "dgamma", rdg, C));
        assert_true(bn_fixture_values(&c, "dbeta", rdb, C));
        assert_true(bn_fixture_values(&c, "run1_mean", r1, C));
        assert_true(bn_fixture_values(&c, "run1_var", r1 + C, C));
        assert_true(bn_fixture_values(&c, "run2_mean", r2, C));
        assert_true(bn_fixture_values(&c, "run2_var", r2 + C, C));
        const struct exec_bn bn = {c.batch, C, c.hw, c.eps, gamma, beta};
        for (size_t i = 0; i < C; i++) { /* a fresh module's */
            run[i] = 0.0f;
            run[C + i] = 1.0f;
        }
        assert_int_equal(exec_bn_train(&bn, x, y, stat, run), PROF_OK);
        near("y", y, ry, n);
        near("running statistics after x", run, r1, 2 * C);
        assert_int_equal(exec_bn_backward(&bn, x, g, stat, dx, dg, db),
                         PROF_OK);
        near("dx", dx, rdx, n);
        near("dgamma", dg, rdg, C);
        near("dbeta", db, rdb, C);
        assert_int_equal(exec_bn_train(&bn, x2, y2, stat, run), PROF_OK);
        near("running statistics after x2", run, r2, 2 * C);
        free(buf);
    }
    free(file);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_entries),
        cmocka_unit_test(test_views_and_params),
        cmocka_unit_test(test_trainable),
        cmocka_unit_test(test_refused),
        cmocka_unit_test(test_batchnorm_torch),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
