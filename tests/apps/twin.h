/* What the twin tests share (a model checked against reference outputs of
 * its PyTorch or ONNX twin): loading a test-data tensor, counting its
 * elements, running a model through the executor and measuring how far its
 * outputs are from the reference. Header-only; include it after cmocka.h,
 * math.h, stdio.h, stdlib.h, "../max_seen.h", edgefit/memest.h and
 * edgefit/profile.h. */
#ifndef EDGEFIT_TESTS_TWIN_H
#define EDGEFIT_TESTS_TWIN_H

/* DIR/MODEL/test_data_set_0/FILE into *t, or the test fails naming it. */
static void twin_load_pb(const char *dir, const char *model, const char *file,
                         struct memest_owned_tensor *t)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s/test_data_set_0/%s", dir, model, file);
    struct memest_diag d;
    if (memest_tensor_load_pb(path, t, &d) != MEMEST_OK) {
        char buf[600];
        memest_diag_format(&d, buf, sizeof buf);
        fail_msg("%s", buf);
    }
}

static size_t twin_elements(const struct memest_tensor *t)
{
    size_t n = 1;
    for (unsigned d = 0; d < t->rank; d++) {
        n *= (size_t)t->dim[d];
    }
    return n;
}

/* Run m at prec on x (batch = x's first dimension); returns the largest
 * |y - ref| and sets *scale to the largest |ref|. */
static double twin_compare(const memest_model *m, enum memest_precision prec,
                           const struct memest_tensor *x,
                           const struct memest_tensor *ref, double *scale)
{
    struct prof_exec_opts eo;
    prof_exec_opts_init(&eo);
    eo.batch = x->dim[0];
    eo.precision = prec;
    prof_exec *ex = NULL;
    struct prof_diag d = {0};
    if (prof_exec_create(m, &eo, &ex, &d) != PROF_OK) {
        fail_msg("%s: %s", memest_model_name(m), d.message);
    }
    const size_t n_in = prof_exec_input_count(ex);
    const size_t n_out = prof_exec_output_count(ex);
    assert_int_equal(n_in, twin_elements(x));
    assert_int_equal(n_out, twin_elements(ref));
    float *y = calloc(n_out, sizeof *y);
    assert_non_null(y);
    assert_int_equal(prof_exec_run(ex, x->data, n_in, y, n_out), PROF_OK);
    double err = 0.0, big = 0.0;
    for (size_t i = 0; i < n_out; i++) {
        err = max_seen(err, fabs((double)y[i] - ref->data[i]));
        big = max_seen(big, fabs((double)ref->data[i]));
    }
    free(y);
    prof_exec_destroy(ex);
    *scale = big;
    return err;
}

#endif
