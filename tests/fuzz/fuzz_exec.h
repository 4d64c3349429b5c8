/* Shared by the end-to-end fuzz targets (fuzz_model_exec.c,
 * fuzz_onnx_exec.c, fuzz_qdq.c): a model that a reader accepted goes
 * through libprofile's executor, plan and one forward pass on zero input,
 * at every precision it can run at. Header-only, as fuzz_temp.h. */
#ifndef EDGEFIT_FUZZ_EXEC_H
#define EDGEFIT_FUZZ_EXEC_H

#include <stdint.h>
#include <stdlib.h>

#include "edgefit/memest.h"
#include "edgefit/profile.h"

/* A model within these bounds is run; a larger one is what a user's
 * memory budget (memfit) refuses before anything is built, and would only
 * make the fuzzer slow: 16 MiB of parameters and activations at fp32 and
 * 4 M multiply-accumulates (which also bounds im2col's columns, at most
 * one float per MAC, below 16 MiB). */
#define FUZZ_EXEC_MAX_BYTES (UINT64_C(16) << 20)
#define FUZZ_EXEC_MAX_MACS (UINT64_C(4) << 20)

#define FUZZ_CHECK(cond)                                                     \
    do {                                                                     \
        if (!(cond)) {                                                       \
            abort();                                                         \
        }                                                                    \
    } while (0)

/* Whether every tensor of m carries a quantisation (a QDQ file's), so
 * that static int8 can run without calibration. */
static inline int fuzz_exec_has_ranges(const memest_model *m)
{
    const size_t n = memest_model_tensor_count(m);
    struct memest_quant q;
    if (n == 0) {
        return 0;
    }
    for (size_t t = 0; t < n; t++) {
        if (memest_model_tensor_quant(m, t, &q) != MEMEST_OK) {
            return 0;
        }
        /* what the model carries was checked when it was set */
        FUZZ_CHECK(q.scale > 0 && q.scale <= 3.4e38f);
        FUZZ_CHECK(q.zero_point >= -128 && q.zero_point <= 127);
    }
    return 1;
}

/* Build an executor at precision p and run it once on zeros: whatever the
 * model, each call ends in a documented status (a refusal with a
 * message), never a crash or a read out of bounds. */
static inline void fuzz_exec_one(const memest_model *m,
                                 enum memest_precision p)
{
    struct prof_exec_opts o;
    struct prof_diag d;
    prof_exec *ex = NULL;
    int st;

    d.message[0] = '\0';
    prof_exec_opts_init(&o);
    o.precision = p;
    st = prof_exec_create(m, &o, &ex, &d);
    if (st != PROF_OK) {
        FUZZ_CHECK(ex == NULL);
        FUZZ_CHECK(st == PROF_E_RANGE || st == PROF_E_MEMEST ||
                   st == PROF_E_OVERFLOW || st == PROF_E_NOMEM ||
                   st == PROF_E_KERNEL || st == PROF_E_UNSUPPORTED);
        FUZZ_CHECK(d.message[0] != '\0');
        return;
    }
    FUZZ_CHECK(prof_exec_precision(ex) == p);
    const size_t k = prof_exec_input_tensors(ex);
    const size_t nout = prof_exec_output_count(ex);
    float **in = calloc(k ? k : 1, sizeof *in);
    size_t *nin = calloc(k ? k : 1, sizeof *nin);
    float *out = malloc((nout ? nout : 1) * sizeof *out);
    int ok = in != NULL && nin != NULL && out != NULL;
    for (size_t i = 0; ok && i < k; i++) {
        nin[i] = prof_exec_input_count_at(ex, i);
        in[i] = calloc(nin[i] ? nin[i] : 1, sizeof **in);
        ok = in[i] != NULL;
    }
    if (ok) {
        st = prof_exec_run_inputs(ex, (const float *const *)in, nin, k, out,
                                  nout);
        FUZZ_CHECK(st == PROF_OK || st == PROF_E_RANGE ||
                   st == PROF_E_KERNEL);
    }
    for (size_t i = 0; in != NULL && i < k; i++) {
        free(in[i]);
    }
    free(in);
    free(nin);
    free(out);
    prof_exec_destroy(ex);
}

/* Every precision the executor has: fp32, fp16, bf16, int8-dynamic, and
 * static int8 when the model carries its ranges. A model too large for
 * the bounds above is left after the estimate. */
static inline void fuzz_exec_model(const memest_model *m)
{
    struct memest_totals t;
    if (memest_estimate_totals(m, 1, MEMEST_FP32, &t) != MEMEST_OK ||
        t.total_bytes > FUZZ_EXEC_MAX_BYTES ||
        t.arena_bytes > FUZZ_EXEC_MAX_BYTES ||
        t.macs > FUZZ_EXEC_MAX_MACS) {
        return;
    }
    fuzz_exec_one(m, MEMEST_FP32);
    fuzz_exec_one(m, MEMEST_FP16);
    fuzz_exec_one(m, MEMEST_BF16);
    fuzz_exec_one(m, MEMEST_INT8_DYNAMIC);
    if (fuzz_exec_has_ranges(m)) {
        fuzz_exec_one(m, MEMEST_INT8);
    }
}

#endif
