/* edgefit-report's verdict: one line per question (memory, precision,
 * the device, the bound, training), phrased from the phases' figures. */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "data.h"
#include "report.h"

/* Every number a verdict line prints is a field of summary.json, rounded
 * as printed (test_vocabulary holds them against each other): no line
 * derives a figure the file does not hold. */

static void say(struct report *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void say(struct report *r, const char *fmt, ...)
{
    if (r->n_verdict == VERDICT_LINES) {
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->verdict[r->n_verdict++], LINE_MAX_, fmt, ap);
    va_end(ap);
}

/* Two significant digits without an exponent: the device's latency is
 * the roofline's lower bound, no more precise than that. */
static const char *sig2(char *buf, size_t len, double v)
{
    if (!isfinite(v) || v <= 0) {
        snprintf(buf, len, "%g", v);
        return buf;
    }
    const int mag = (int)floor(log10(v));
    const int decimals = mag >= 1 ? 0 : 1 - mag;
    /* rounding may carry into the next decade: 0.0996 -> 0.10 */
    snprintf(buf, len, "%.*f", decimals, v);
    if (mag >= 1) {
        const double unit = pow(10.0, mag - 1);
        snprintf(buf, len, "%.0f", round(v / unit) * unit);
    }
    return buf;
}

/* Peak inference memory (parameters + planned arena), the one measure of
 * every memory sentence and of the sweep's memory_mb (libmemest's
 * MEMEST_MEASURE_PEAK_INFERENCE). */
static double peak_mb(const memest_model *m, uint64_t batch,
                      enum memest_precision p)
{
    double mb;
    return memest_measure_mb(m, batch, p, MEMEST_MEASURE_PEAK_INFERENCE,
                             MEMEST_OPT_SGD, &mb) == MEMEST_OK
               ? mb
               : INFINITY;
}

static void judge_memory(const struct options *o, struct report *r)
{
    const double lim = r->memory_limit_mb;
    const uint64_t b1 = r->first_batch;
    r->fp32_b1_mb = peak_mb(r->model, b1, MEMEST_FP32);
    r->fp32_batch_mb = peak_mb(r->model, r->batch, MEMEST_FP32);
    r->smallest_b1_mb = INFINITY;
    for (size_t i = 0; i < r->scfg.n_precisions; i++) {
        const double mb = peak_mb(r->model, b1, r->scfg.precisions[i]);
        if (mb < r->smallest_b1_mb) {
            r->smallest_b1_mb = mb;
            r->smallest_prec = memest_precision_name(r->scfg.precisions[i]);
        }
    }
    r->limit_name = !isnan(o->max_memory_mb) ? "--max-memory-mb"
                                             : "the device's memory";
    r->fits = !(r->smallest_b1_mb > lim);
    char train[160] = "";
    if (r->training) {
        const double mb = (double)r->train_mem.total_bytes / 1048576.0;
        snprintf(train, sizeof train, "; training at batch %" PRIu64
                 " needs %.3g MB%s", o->batch, mb,
                 mb > lim ? ", over the limit" : "");
    }
    if (!isfinite(lim)) {
        say(r, "Memory: no limit known (%s's memory is not in the "
            "catalogue; --max-memory-mb sets one): fp32 inference needs "
            "%.3g MB at batch %" PRIu64 " and %.3g MB at batch %" PRIu64
            " (peak inference memory: parameters + arena)%s.",
            r->device.name, r->fp32_b1_mb, b1, r->fp32_batch_mb, r->batch,
            train);
        return;
    }
    if (!r->fits) {
        say(r, "Memory: DOES NOT FIT: even %s at batch %" PRIu64 " needs "
            "%.3g MB of peak inference memory, over the %.6g MB limit "
            "(%s)%s.", r->smallest_prec, b1, r->smallest_b1_mb, lim,
            r->limit_name, train);
        return;
    }
    if (r->fixed_batch > 0) {
        /* the file fixes the batch: no other batch to fit */
        const bool fp32_fits = r->fp32_b1_mb <= lim;
        say(r, "Memory: fits the %.6g MB limit (%s)%s at the file's fixed "
            "batch %" PRIu64 ": fp32 inference needs %.3g MB of peak "
            "inference memory%s%s.", lim, r->limit_name,
            fp32_fits ? "" : " only below fp32", b1, r->fp32_b1_mb,
            fp32_fits ? "" : ", over the limit", train);
        return;
    }
    /* the largest fp32 batch, or "not a constraint" when even the
     * search's cap fits (a cap is not a size memory allows) */
    struct memest_batch_search bs;
    if (memest_largest_batch(r->model, lim, MEMEST_FP32, BATCH_SEARCH_CAP,
                             MEMEST_MEASURE_PEAK_INFERENCE, MEMEST_OPT_SGD,
                             &bs) != MEMEST_OK) {
        bs.batch = 0;
        bs.capped = 0;
    }
    r->largest_batch = bs.batch;
    r->memory_unconstrained = bs.capped != 0;
    if (r->largest_batch == 0) {
        /* fp32 does not fit, a smaller precision does */
        const char *prec = r->best ? r->best->precision : r->smallest_prec;
        const double mb = r->best ? r->best->memory_mb : r->smallest_b1_mb;
        say(r, "Memory: fits the %.6g MB limit (%s) only below fp32: %s "
            "at batch 1 needs %.3g MB of peak inference memory, fp32 "
            "%.3g MB%s.", lim, r->limit_name, prec, mb, r->fp32_b1_mb,
            train);
    } else if (r->memory_unconstrained) {
        say(r, "Memory: not a constraint: fp32 inference needs %.3g MB at "
            "batch %" PRIu64 " (peak inference memory: parameters + "
            "arena) of the %.6g MB limit (%s)%s.", r->fp32_batch_mb,
            r->batch, lim, r->limit_name, train);
    } else {
        say(r, "Memory: fits the %.6g MB limit (%s): fp32 inference needs "
            "%.3g MB of peak inference memory at batch 1, fits up to batch "
            "%" PRIu64 ", and needs %.3g MB at batch %" PRIu64 "%s%s.",
            lim, r->limit_name, r->fp32_b1_mb, r->largest_batch,
            r->fp32_batch_mb, r->batch,
            r->fp32_batch_mb > lim ? ", over the limit" : "", train);
    }
}

/* The accuracy of the recommended configuration against fp32's, with the
 * test set's standard error: a smaller difference is noise. */
static void judge_precision(const struct options *o, struct report *r)
{
    (void)o;
    const struct sweep_row *b = r->best, *f = r->fp32_b1;
    if (!b) {
        say(r, "Precision: NO configuration meets the constraints "
            "(memory <= %.6g MB%s%s): see sweep_results.csv, column "
            "rejected_by.", r->memory_limit_mb,
            isnan(r->scfg.min_accuracy) ? "" : ", accuracy >= fp32's "
            "minus the allowed drop",
            isfinite(o->max_latency_ms) ? ", latency limit" : "");
        return;
    }
    switch (r->data) {
    case DATA_LABELLED: {
        const double diff = b->accuracy - f->accuracy;
        char delta[200];
        if (b == f) {
            snprintf(delta, sizeof delta, "fp32 itself");
        } else if (diff == 0) {
            snprintf(delta, sizeof delta, "the same as fp32's");
        } else if (fabs(diff) < r->fp32_stderr) {
            snprintf(delta, sizeof delta, "against fp32's %.4f: the %.2f "
                     "point difference is below the test set's standard "
                     "error of %.2f points, noise", f->accuracy,
                     100.0 * fabs(diff), 100.0 * r->fp32_stderr);
        } else {
            snprintf(delta, sizeof delta, "%.2f points %s fp32's %.4f "
                     "(standard error %.2f points)", 100.0 * fabs(diff),
                     diff < 0 ? "below" : "above", f->accuracy,
                     100.0 * r->fp32_stderr);
        }
        say(r, "Precision: %s is the best accepted at batch %" PRIu64 " (%zu "
            "of %zu configurations accepted): test accuracy %.4f, %s; "
            "memory %.3g MB instead of fp32's %.3g MB.", b->precision,
            b->batch, r->accepted, r->sweep.n, b->accuracy, delta,
            b->memory_mb, f->memory_mb);
        break;
    }
    case DATA_REFERENCE: {
        char top1[80] = "";
        if (r->classifier) {
            snprintf(top1, sizeof top1, ", top-1 agreement %.4f",
                     b->top1_agreement);
        }
        say(r, "Precision: %s is the best accepted at batch %" PRIu64 " (%zu "
            "of %zu configurations accepted): against the reference outputs, "
            "max error %.3g, rmse %.3g%s (fp32: max %.3g, rmse %.3g)%s; "
            "memory %.3g MB instead of fp32's %.3g MB.", b->precision,
            b->batch, r->accepted, r->sweep.n, b->max_abs_error,
            b->rms_error, top1,
            f->max_abs_error, f->rms_error,
            r->classifier ? "" : ", reported, not judged: the model is "
                                 "not a classifier",
            b->memory_mb, f->memory_mb);
        break;
    }
    case DATA_NONE:
        say(r, "Precision: no data given: no accuracy. %s at batch %" PRIu64
            " is the fastest within the limits (%zu of %zu configurations "
            "accepted, on memory and latency alone): %.3g MB instead of "
            "fp32's %.3g MB; what it costs in accuracy is unknown.",
            b->precision, b->batch, r->accepted, r->sweep.n, b->memory_mb,
            f->memory_mb);
        break;
    }
}

static void judge_training(const struct report *r, struct report *w)
{
    if (!r->training) {
        const char *weights = r->has_weights
            ? "its own weights"
            : "seeded random weights, so any accuracy is chance";
        say(w, "Training: none (%s); the model runs on %s.", r->no_training,
            weights);
        return;
    }
    const size_t n = r->log.done;
    if (n == 0) {
        return;
    }
    const struct prof_train_epoch_result *last = &r->log.epochs[n - 1];
    const double test_acc = r->log.test_accuracy[n - 1];
    const double gain = n > 1 ? test_acc - r->log.test_accuracy[n - 2]
                              : NAN;
    const char *trend = "levelled off";
    if (last->train_accuracy - test_acc > 0.05) {
        trend = "overfitting: train accuracy well above test";
    } else if (n == 1) {
        trend = "one epoch: no trend yet";
    } else if (gain > 0.005) {
        trend = "still improving in the last epoch: more epochs may help";
    } else if (gain < -0.005) {
        trend = "the last epoch lost accuracy: see training_history.csv";
    }
    say(w, "Training: %zu epoch%s in %.3g s, train loss %.4f, train "
        "accuracy %.4f, test accuracy %.4f (%s).", n, n == 1 ? "" : "s",
        r->log.elapsed_s, last->loss, last->train_accuracy, test_acc, trend);
}

int report_judge(const struct options *o, struct report *r)
{
    if (r->data == DATA_NONE) {
        say(r, "Data: no data given: no accuracy. Memory, layers and "
            "device latency only (--data DIR for labelled data, "
            "--test-data DIR for reference outputs).");
    }
    judge_memory(o, r);
    judge_precision(o, r);
    const struct sweep_row *b = r->best;
    if (b) {
        char ms[32], mj[32], per[32], real[32];
        /* per input: a fixed batch runs several at once */
        const double in_ms = b->device_latency_ms / (double)b->batch;
        /* The roofline is a lower bound; this machine's measured over-run
         * of its own roofline (the layer analysis ran the same
         * configuration) is the nearest hint of the realistic end. */
        char range[160] = "";
        if (isfinite(r->lw.host_overrun) && r->lw.host_overrun > 0) {
            snprintf(range, sizeof range, ", about %s ms at this machine's "
                     "over-run of its own roofline",
                     sig2(real, sizeof real, in_ms * r->lw.host_overrun));
        }
        const double e_j = r->device.power_watts > 0
            ? r->device.power_watts * in_ms / 1000.0
            : NAN;
        char energy[160] = "";
        if (isfinite(e_j)) {
            snprintf(energy, sizeof energy, "; energy at least %s mJ per "
                     "input at %.3g W",
                     sig2(mj, sizeof mj, 1000.0 * e_j),
                     r->device.power_watts);
        }
        char batch[120] = "";
        if (r->best_b && r->best_b != b) {
            snprintf(batch, sizeof batch, "; at batch %" PRIu64 " at least "
                     "%s ms per input", r->best_b->batch,
                     sig2(per, sizeof per, r->best_b->device_latency_ms /
                                               (double)r->best_b->batch));
        }
        say(r, "On %s (roofline lower bound): at least %s ms per input at "
            "%s batch %" PRIu64 "%s%s%s.", r->device.name,
            sig2(ms, sizeof ms, in_ms), b->precision, b->batch, range,
            energy, batch);
    }
    if (isfinite(r->lw.dm_ms[0])) {
        /* the device model fitted to measurements (--devices): the
         * latency to plan with, with the interval its cross-validated
         * residuals give */
        char a[32], lo[32], hi[32];
        say(r, "On %s with %s (device model, %s, batch %" PRIu64 ", %u "
            "thread%s): about %s ms, %s to %s ms (the 10th to 90th "
            "percentile of its cross-validated errors).",
            r->device.name, r->lw.device_runtime,
            memest_precision_name(r->lwo.precision), r->lwo.batch,
            r->lwo.threads, r->lwo.threads == 1 ? "" : "s",
            sig2(a, sizeof a, r->lw.dm_ms[0]),
            sig2(lo, sizeof lo, r->lw.dm_ms[1]),
            sig2(hi, sizeof hi, r->lw.dm_ms[2]));
    }
    say(r, "Bound (%s, batch %" PRIu64 ", %u thread%s%s): %s.",
        memest_precision_name(r->lwo.precision), r->lwo.batch,
        r->lwo.threads, r->lwo.threads == 1 ? "" : "s",
        b ? ", the recommended configuration" : ", none is accepted",
        r->lw.regime_text);
    judge_training(r, r);
    return CLI_EXIT_OK;
}
