/* Per-tensor quantisation error (prof_quant_error): the input tensor's
 * SQNR and max error computed by hand for quantisation parameters chosen
 * so that every step is exact; a model's output row and top-1 agreement
 * against a reference computed here from prof_exec_run()'s outputs at
 * fp32 and static int8; the same bits on a second run and on two threads;
 * the refusals. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "edgefit/memest.h"
#include "edgefit/profile.h"

static memest_model *model_of(const char *text)
{
    memest_model *m = NULL;
    struct memest_diag d;
    if (memest_model_parse(text, &m, &d) != MEMEST_OK) {
        fail_msg("model: %s at %d:%d", d.message, d.line, d.column);
    }
    return m;
}

/* Ranges of every tensor from a calibration on d, then the input's
 * quantisation replaced by (scale, zp). */
static struct prof_ranges ranges_of(const memest_model *m,
                                    const struct prof_dataset *d)
{
    struct prof_ranges r;
    struct prof_diag diag;
    struct prof_ranges_opts o;
    prof_ranges_opts_init(&o);
    o.samples = 0;
    if (prof_ranges_calibrate(m, d, &o, &r, &diag) != PROF_OK) {
        fail_msg("calibrate: %s", diag.message);
    }
    return r;
}

/* ---- the input tensor, by hand ---- */

/* Input scale 0.5, zero point 0: q = clamp(round_half_even(x / 0.5)),
 * x' = q * 0.5.
 *   sample 0: 0.3 -> 1 -> 0.5 (err 0.2); 1.0 -> 2 -> 1.0 (0);
 *             -0.7 -> -1 -> -0.5 (0.2); 100 -> 200, clamped 127 -> 63.5
 *             (36.5)
 *   sample 1: -1.0 -> -2 -> -1.0 (0); 0.25 -> 0.5, half to even 0 -> 0
 *             (0.25); 0.5 -> 1 -> 0.5 (0); 0 -> 0 (0)
 * sum x^2 = 0.09 + 1 + 0.49 + 10000 + 1 + 0.0625 + 0.25 = 10002.8925
 * sum e^2 = 0.04 + 0.04 + 1332.25 + 0.0625 = 1332.3925
 * (0.3, -0.7 and their errors in float, as the test computes them.) */
static void test_input_by_hand(void **state)
{
    (void)state;
    memest_model *m = model_of("input 4\ndense 3 act=relu name=fc\n");
    const uint64_t shape[1] = {4};
    struct prof_dataset d;
    assert_int_equal(prof_dataset_init(&d, 2, 1, shape, false, 0, NULL,
                                       "hand", NULL), PROF_OK);
    const float x[8] = {0.3f, 1.0f, -0.7f, 100.0f, -1.0f, 0.25f, 0.5f, 0};
    memcpy(d.x, x, sizeof x);
    struct prof_ranges r = ranges_of(m, &d);
    r.tensors[0].scale = 0.5f;
    r.tensors[0].zero_point = 0;
    struct prof_quant_error e;
    struct prof_diag diag;
    struct prof_quant_error_opts o;
    prof_quant_error_opts_init(&o);
    int st = prof_quant_error(m, &d, &r, &o, &e, &diag);
    if (st != PROF_OK) {
        fail_msg("prof_quant_error: %s (%s)", diag.message,
                 prof_strerror(st));
    }
    assert_int_equal(e.count, 2);
    assert_int_equal(e.samples, 2);
    const struct prof_tensor_error *in = &e.tensors[0];
    assert_string_equal(in->name, "input");
    assert_int_equal(in->kind, MEMEST_KIND_INPUT);
    assert_int_equal(in->elements, 8);
    const double e03 = (double)0.3f - 0.5, e07 = (double)-0.7f + 0.5;
    const double sig = (double)0.3f * (double)0.3f + 1.0 +
                       (double)0.7f * (double)0.7f + 10000.0 + 1.0 +
                       0.0625 + 0.25;
    const double err = e03 * e03 + e07 * e07 + 36.5 * 36.5 + 0.0625;
    assert_true(fabs(in->signal_sum_sq - sig) <= 1e-9 * sig);
    assert_true(fabs(in->error_sum_sq - err) <= 1e-9 * err);
    /* 10 log10(10002.8925 / 1332.3925) = 8.7550 dB */
    assert_true(fabs(in->sqnr_db - 10.0 * log10(sig / err)) < 1e-9);
    assert_true(fabs(in->sqnr_db - 8.7550) < 1e-4);
    assert_true(in->max_abs_error == 36.5);
    assert_true(in->scale == 0.5f && in->zero_point == 0);
    assert_string_equal(e.tensors[1].name, "fc");
    assert_int_equal(e.tensors[1].kind, MEMEST_KIND_DENSE);
    assert_int_equal(e.tensors[1].elements, 6);
    /* unlabelled: a classifier's agreement, no accuracy */
    assert_true(e.classifier);
    assert_false(e.labelled);
    assert_true(isnan(e.fp32_accuracy));
    prof_quant_error_finish(&e);
    prof_ranges_finish(&r);
    prof_dataset_finish(&d);
    memest_model_destroy(m);
}

/* A tensor that int8 holds exactly (a 0-1 pattern with scale 1/255 ...)
 * would be rare; an all-zero input is exact: +inf dB, no error. */
static void test_exact_is_inf(void **state)
{
    (void)state;
    memest_model *m = model_of("input 4\ndense 2 name=fc\n");
    const uint64_t shape[1] = {4};
    struct prof_dataset d;
    assert_int_equal(prof_dataset_init(&d, 3, 1, shape, false, 0, NULL,
                                       "zeros", NULL), PROF_OK);
    struct prof_ranges r = ranges_of(m, &d);
    struct prof_quant_error e;
    assert_int_equal(prof_quant_error(m, &d, &r, NULL, &e, NULL), PROF_OK);
    assert_true(isinf(e.tensors[0].sqnr_db) && e.tensors[0].sqnr_db > 0);
    assert_true(e.tensors[0].max_abs_error == 0.0);
    assert_true(e.tensors[0].signal_sum_sq == 0.0);
    prof_quant_error_finish(&e);
    prof_ranges_finish(&r);
    prof_dataset_finish(&d);
    memest_model_destroy(m);
}

/* ---- the output against prof_exec_run ---- */

static struct prof_dataset labelled_set(uint64_t n, unsigned features,
                                        unsigned classes)
{
    const uint64_t shape[1] = {features};
    struct prof_dataset d;
    assert_int_equal(prof_dataset_init(&d, n, 1, shape, true, 0, NULL,
                                       "lcg", NULL), PROF_OK);
    uint64_t s = 12345;
    for (uint64_t i = 0; i < n * features; i++) {
        s = s * 6364136223846793005ULL + 1442695040888963407ULL;
        d.x[i] = (float)((double)(s >> 40) / 16777216.0 * 2.0 - 1.0);
    }
    for (uint64_t i = 0; i < n; i++) {
        d.y[i] = (uint8_t)(i % classes);
    }
    d.classes = classes;
    return d;
}

static size_t first_max(const float *v, size_t n)
{
    size_t b = 0;
    for (size_t i = 1; i < n; i++) {
        if (v[i] > v[b]) {
            b = i;
        }
    }
    return b;
}

static void test_output_against_run(void **state)
{
    (void)state;
    memest_model *m = model_of("input 16\ndense 12 act=relu name=h\n"
                               "dense 5 name=logits\n");
    struct prof_dataset d = labelled_set(40, 16, 5);
    struct prof_ranges r = ranges_of(m, &d);
    struct prof_quant_error_opts o;
    prof_quant_error_opts_init(&o);
    o.samples = 30; /* the first 30 of 40 */
    struct prof_quant_error e;
    struct prof_diag diag;
    int st = prof_quant_error(m, &d, &r, &o, &e, &diag);
    if (st != PROF_OK) {
        fail_msg("prof_quant_error: %s (%s)", diag.message,
                 prof_strerror(st));
    }
    assert_int_equal(e.samples, 30);
    assert_int_equal(e.count, 3);

    /* the reference: both precisions run whole with prof_exec_run */
    struct prof_exec_opts eo;
    prof_exec_opts_init(&eo);
    prof_exec *fp = NULL, *i8 = NULL;
    assert_int_equal(prof_exec_create(m, &eo, &fp, NULL), PROF_OK);
    eo.precision = MEMEST_INT8;
    eo.ranges = &r;
    assert_int_equal(prof_exec_create(m, &eo, &i8, NULL), PROF_OK);
    double sig = 0, err = 0, maxe = 0;
    uint64_t agree = 0, right32 = 0, right8 = 0;
    for (uint64_t s = 0; s < 30; s++) {
        float a[5], b[5];
        assert_int_equal(prof_exec_run(fp, d.x + s * 16, 16, a, 5), PROF_OK);
        assert_int_equal(prof_exec_run(i8, d.x + s * 16, 16, b, 5), PROF_OK);
        for (int k = 0; k < 5; k++) {
            const double dx = (double)a[k] - (double)b[k];
            sig += (double)a[k] * (double)a[k];
            err += dx * dx;
            maxe = fabs(dx) > maxe ? fabs(dx) : maxe;
        }
        const size_t ta = first_max(a, 5), tb = first_max(b, 5);
        agree += ta == tb;
        right32 += ta == d.y[s];
        right8 += tb == d.y[s];
    }
    const struct prof_tensor_error *out = &e.tensors[2];
    assert_string_equal(out->name, "logits");
    assert_int_equal(out->elements, 150);
    assert_true(err > 0); /* int8 does lose something here */
    assert_true(fabs(out->signal_sum_sq - sig) <= 1e-12 * sig);
    assert_true(fabs(out->error_sum_sq - err) <= 1e-12 * err);
    assert_true(fabs(out->sqnr_db - 10 * log10(sig / err)) < 1e-9);
    assert_true(out->max_abs_error == maxe);
    assert_true(out->scale == r.tensors[2].scale);
    assert_true(e.classifier && e.labelled);
    assert_int_equal(e.top1_agree, agree);
    assert_true(e.top1_agreement == (double)agree / 30.0);
    assert_true(e.fp32_accuracy == (double)right32 / 30.0);
    assert_true(e.int8_accuracy == (double)right8 / 30.0);
    /* every SQNR finite and a real ratio: the hidden layer loses less than
     * its signal */
    assert_true(isfinite(e.tensors[1].sqnr_db) && e.tensors[1].sqnr_db > 0);

    /* the same bits again, and on two threads */
    for (unsigned th = 1; th <= 2; th++) {
        struct prof_quant_error e2;
        o.threads = th;
        assert_int_equal(prof_quant_error(m, &d, &r, &o, &e2, NULL),
                         PROF_OK);
        for (size_t t = 0; t < e.count; t++) {
            assert_memory_equal(&e.tensors[t].signal_sum_sq,
                                &e2.tensors[t].signal_sum_sq, sizeof(double));
            assert_memory_equal(&e.tensors[t].error_sum_sq,
                                &e2.tensors[t].error_sum_sq, sizeof(double));
            assert_memory_equal(&e.tensors[t].max_abs_error,
                                &e2.tensors[t].max_abs_error, sizeof(double));
        }
        assert_int_equal(e2.top1_agree, e.top1_agree);
        prof_quant_error_finish(&e2);
    }
    prof_exec_destroy(fp);
    prof_exec_destroy(i8);
    prof_quant_error_finish(&e);
    prof_ranges_finish(&r);
    prof_dataset_finish(&d);
    memest_model_destroy(m);
}

/* ---- refusals ---- */

static void test_refusals(void **state)
{
    (void)state;
    memest_model *m = model_of("input 16\ndense 5 name=fc\n");
    struct prof_dataset d = labelled_set(4, 16, 5);
    struct prof_ranges r = ranges_of(m, &d);
    struct prof_quant_error e;
    struct prof_diag diag;
    assert_int_equal(prof_quant_error(NULL, &d, &r, NULL, &e, NULL),
                     PROF_E_INVALID);
    assert_int_equal(prof_quant_error(m, &d, &r, NULL, NULL, NULL),
                     PROF_E_INVALID);
    /* ranges of another model: a count that does not match */
    r.count = 1;
    assert_int_equal(prof_quant_error(m, &d, &r, NULL, &e, &diag),
                     PROF_E_RANGE);
    assert_non_null(strstr(diag.message, "hold 1 tensors"));
    r.count = 2;
    /* data of the wrong shape, named */
    struct prof_dataset d8 = labelled_set(4, 8, 5);
    assert_int_equal(prof_quant_error(m, &d8, &r, NULL, &e, &diag),
                     PROF_E_RANGE);
    assert_non_null(strstr(diag.message, "lcg"));
    assert_null(e.tensors);
    /* no ranges and a model that carries none: static int8 refuses */
    assert_int_equal(prof_quant_error(m, &d, NULL, NULL, &e, &diag),
                     PROF_E_RANGE);
    assert_true(diag.message[0] != '\0');
    struct prof_quant_error_opts o;
    prof_quant_error_opts_init(&o);
    o.threads = 65;
    assert_int_equal(prof_quant_error(m, &d, &r, &o, &e, &diag),
                     PROF_E_RANGE);
    prof_dataset_finish(&d8);
    prof_ranges_finish(&r);
    prof_dataset_finish(&d);
    memest_model_destroy(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_input_by_hand),
        cmocka_unit_test(test_exact_is_inf),
        cmocka_unit_test(test_output_against_run),
        cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
