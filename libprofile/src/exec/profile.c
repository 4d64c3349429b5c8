/* The executor's operator profile (each operator timed alone with the
 * timing harness) and its roofline prediction on a device. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "edgefit/profile.h"
#include "exec/executor.h"
#include "../alloc_rec.h" /* last: it wraps malloc and co. */

/* What a timed callback runs, and the status it met. */
struct op_work {
    prof_exec *ex;
    const float *input;
    size_t op;  /* 0: stage the input; i: layer i - 1 */
    int status;
};

static int run_op(void *ctx)
{
    struct op_work *w = ctx;
    w->status = w->op == 0 ? exec_stage_inputs(w->ex, &w->input)
                           : exec_run_layer(w->ex, w->op - 1);
    return w->status != PROF_OK;
}

static int run_forward(void *ctx)
{
    struct op_work *w = ctx;
    w->status = exec_forward(w->ex, &w->input);
    return w->status != PROF_OK;
}

/* edge_opt's hardware summary's clamp: a latency is never taken below 1 ns. */
static double per_second(double amount, double latency_ms)
{
    const double s = latency_ms / 1000.0;
    return amount / (s > 1e-9 ? s : 1e-9) / 1e9;
}

/* A failed timing: the callback's own status when it reported one. */
static int timing_status(int st, const struct op_work *w)
{
    return st == PROF_E_CALLBACK && w->status != PROF_OK ? w->status : st;
}

PROF_API int prof_exec_profile(prof_exec *ex, const float *input,
                               size_t n_in, const struct prof_time_opts *opts,
                               struct prof_exec_profile *out)
{
    if (!out) {
        return PROF_E_INVALID;
    }
    memset(out, 0, sizeof *out);
    if (!ex || !input || ex->ninputs != 1 || n_in != ex->input_n) {
        return PROF_E_INVALID;
    }
    const size_t count = ex->nlayers + 1;
    struct prof_exec_op_row *rows = calloc(count, sizeof *rows);
    if (!rows) {
        return PROF_E_NOMEM;
    }
    struct op_work w = {.ex = ex, .input = input, .status = PROF_OK};
    int st = prof_time(run_forward, &w, opts, &out->forward, NULL);
    if (st != PROF_OK) {
        st = timing_status(st, &w);
        goto fail;
    }
    /* Operators in execution order: each timed run recomputes the same
     * output from the same inputs, which earlier operators left in the
     * arena (the plan keeps a tensor's buffer until its last reader has
     * run, and an operator writes only its own output). */
    double sum = 0.0;
    for (size_t i = 0; i < count; i++) {
        struct prof_exec_op_row *r = &rows[i];
        if ((st = prof_exec_op_info(ex, i, &r->info)) != PROF_OK) {
            goto fail;
        }
        w.op = i;
        st = prof_time(run_op, &w, opts, &r->stats, NULL);
        if (st != PROF_OK) {
            st = timing_status(st, &w);
            goto fail;
        }
        r->latency_ms = r->stats.median_ms;
        r->achieved_gbps =
            per_second((double)r->info.bytes_moved, r->latency_ms);
        r->achieved_gmacs = per_second((double)r->info.macs, r->latency_ms);
        r->memory_kb =
            (double)(r->info.bytes_moved + r->info.scratch_bytes) / 1024.0;
        sum += r->latency_ms;
    }
    out->count = count;
    out->ops = rows;
    out->forward_ms = out->forward.median_ms;
    out->operator_sum_ms = sum;
    out->framing_ms = out->forward_ms - sum;
    out->precision = ex->precision;
    return PROF_OK;
fail:
    free(rows);
    memset(out, 0, sizeof *out);
    return st;
}

PROF_API void prof_exec_profile_finish(struct prof_exec_profile *p)
{
    if (!p) {
        return;
    }
    free(p->ops);
    memset(p, 0, sizeof *p);
}

PROF_API int prof_exec_predict(const struct prof_exec_profile *p,
                               const struct prof_device *dev,
                               struct prof_layer_prediction *out,
                               struct prof_prediction_total *total)
{
    if (!p || !p->ops || p->count == 0 || !dev || !out || !total) {
        return PROF_E_INVALID;
    }
    struct prof_work *work = calloc(p->count, sizeof *work);
    double *measured = calloc(p->count, sizeof *measured);
    int st = PROF_E_NOMEM;
    if (work && measured) {
        for (size_t i = 0; i < p->count; i++) {
            /* Staging the input is the executor's copy of the caller's
             * floats, not a layer: nothing to predict or compare. */
            if (p->ops[i].info.kind == MEMEST_KIND_INPUT) {
                measured[i] = NAN;
                continue;
            }
            work[i].macs = p->ops[i].info.macs;
            work[i].bytes = p->ops[i].info.bytes_moved;
            /* a layer split among threads is predicted on as many cores */
            work[i].threads = p->ops[i].info.threads;
            measured[i] = p->ops[i].latency_ms;
        }
        /* int8 work runs at the int8 peak, 16-bit at the 16-bit one: the
         * fp32 roof predicted an int8 dense measured at 0.008 ms at
         * 0.032 ms. */
        struct prof_device d = *dev;
        d.peak_gmacs = prof_device_peak(dev, p->precision);
        st = prof_predict_layers(&d, work, p->count, measured, out, total);
    }
    free(measured);
    free(work);
    return st;
}

PROF_API void prof_exec_predictions_finish(struct prof_exec_predictions *p)
{
    if (!p) {
        return;
    }
    free(p->host_pred);
    free(p->dram_pred);
    free(p->device_pred);
    memset(p, 0, sizeof *p);
}

PROF_API int prof_exec_predict_all(const struct prof_exec_profile *p,
                                   const struct prof_calibration *cal,
                                   const struct prof_device *device,
                                   double power_watts,
                                   struct prof_exec_predictions *out)
{
    if (!out) {
        return PROF_E_INVALID;
    }
    memset(out, 0, sizeof *out);
    if (!p || !p->ops || p->count == 0 || !cal) {
        return PROF_E_INVALID;
    }
    if (!isfinite(power_watts) || power_watts < 0.0) {
        return PROF_E_RANGE;
    }
    int st = prof_device_host(cal, &out->host);
    if (st != PROF_OK) {
        return st;
    }
    out->host_dram = out->host;
    out->host_dram.cache_count = 0;
    out->device = device ? *device : out->host;
    if (power_watts > 0.0) {
        out->host.power_watts = power_watts;
        out->host_dram.power_watts = power_watts;
        out->device.power_watts = power_watts;
    }
    out->count = p->count;
    out->host_pred = calloc(p->count, sizeof *out->host_pred);
    out->dram_pred = calloc(p->count, sizeof *out->dram_pred);
    out->device_pred = calloc(p->count, sizeof *out->device_pred);
    st = PROF_E_NOMEM;
    if (out->host_pred && out->dram_pred && out->device_pred &&
        (st = prof_exec_predict(p, &out->host, out->host_pred,
                                &out->host_total)) == PROF_OK &&
        (st = prof_exec_predict(p, &out->host_dram, out->dram_pred,
                                &out->dram_total)) == PROF_OK) {
        st = prof_exec_predict(p, &out->device, out->device_pred,
                               &out->device_total);
    }
    if (st != PROF_OK) {
        prof_exec_predictions_finish(out);
    }
    return st;
}
