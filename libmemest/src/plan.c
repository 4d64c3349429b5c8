/*
 * Batch fitting, the hardware-simulation config, run plans and the
 * slowdown arithmetic, with the semantics of the original
 * hardware_simulation.py and utils/hardware.py.
 */
#include "internal.h"
#include "wide.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int bad_budget(double mb)
{
    return !isfinite(mb) || mb < 0.0;
}

const char *memest_measure_name(enum memest_measure measure)
{
    switch (measure) {
    case MEMEST_MEASURE_PEAK_INFERENCE:
        return "peak_inference";
    case MEMEST_MEASURE_TRAINING:
        return "training";
    }
    return NULL;
}

/* The words of a warning: the name with '_' read as ' '. */
static const char *measure_words(enum memest_measure measure)
{
    switch (measure) {
    case MEMEST_MEASURE_PEAK_INFERENCE:
        return "peak inference";
    case MEMEST_MEASURE_TRAINING:
        return "training";
    }
    return "?";
}

int memest_measure_mb(const memest_model *model, uint64_t batch,
                      enum memest_precision precision,
                      enum memest_measure measure, enum memest_optimizer opt,
                      double *out_mb)
{
    if (model == NULL || out_mb == NULL ||
        memest_precision_bytes(precision) == 0 ||
        memest_measure_name(measure) == NULL ||
        memest_optimizer_name(opt) == NULL) {
        return MEMEST_E_INVALID;
    }
    if (batch == 0) {
        return MEMEST_E_RANGE;
    }
    switch (measure) {
    case MEMEST_MEASURE_PEAK_INFERENCE: {
        struct memest_totals t;
        int st = memest_estimate_totals(model, batch, precision, &t);
        if (st == MEMEST_OK) {
            *out_mb = t.peak_inference_mb;
        }
        return st;
    }
    case MEMEST_MEASURE_TRAINING: {
        /* libprofile's trainer: 16-bit precisions train mixed, int8 is
         * quantised after an fp32 training */
        struct memest_training t;
        int st = MEMEST_E_INVALID;
        switch (precision) {
        case MEMEST_FP16:
        case MEMEST_BF16:
            st = memest_training_memory_mixed(model, batch, opt, &t);
            break;
        case MEMEST_INT8:
        case MEMEST_INT8_DYNAMIC:
            st = memest_training_memory(model, batch, MEMEST_FP32, opt, &t);
            break;
        case MEMEST_FP32:
        case MEMEST_FP64:
            st = memest_training_memory(model, batch, precision, opt, &t);
            break;
        }
        if (st == MEMEST_OK) {
            *out_mb = t.total_mb;
        }
        return st;
    }
    }
    return MEMEST_E_INVALID;
}

/* Whether `batch` fits: a batch whose bytes overflow does not. */
static int fits_at(const memest_model *model, uint64_t batch,
                   double max_memory_mb, enum memest_precision precision,
                   enum memest_measure measure, enum memest_optimizer opt,
                   int *fits)
{
    double mb;
    int st = memest_measure_mb(model, batch, precision, measure, opt, &mb);
    if (st == MEMEST_E_OVERFLOW) {
        *fits = 0;
        return MEMEST_OK;
    }
    if (st == MEMEST_OK) {
        *fits = mb <= max_memory_mb;
    }
    return st;
}

int memest_fit_batch_measure(const memest_model *model,
                             uint64_t requested_batch, double max_memory_mb,
                             enum memest_precision precision,
                             uint64_t batch_limit, enum memest_measure measure,
                             enum memest_optimizer opt, uint64_t *out_batch)
{
    uint64_t capped;
    uint64_t low;
    uint64_t high;
    uint64_t feasible = 0;
    int fits = 0;
    int st;

    if (model == NULL || out_batch == NULL ||
        memest_precision_bytes(precision) == 0 ||
        memest_measure_name(measure) == NULL ||
        memest_optimizer_name(opt) == NULL) {
        return MEMEST_E_INVALID;
    }
    if (bad_budget(max_memory_mb)) {
        return MEMEST_E_RANGE;
    }
    /* max(1, min(requested, limit)) */
    capped = requested_batch < batch_limit ? requested_batch : batch_limit;
    if (capped < 1) {
        capped = 1;
    }
    st = fits_at(model, capped, max_memory_mb, precision, measure, opt,
                 &fits);
    if (st != MEMEST_OK) {
        return st;
    }
    if (fits) {
        *out_batch = capped;
        return MEMEST_OK;
    }
    /* The memory grows with the batch (every buffer is the batch times a
     * per-sample size), so the fitting sizes are a prefix of [1, capped]. */
    low = 1;
    high = capped;
    while (low <= high) {
        /* (low + high) // 2 without overflowing */
        uint64_t mid = low + (high - low) / 2;
        st = fits_at(model, mid, max_memory_mb, precision, measure, opt,
                     &fits);
        if (st != MEMEST_OK) {
            return st;
        }
        if (fits) {
            feasible = mid;
            low = mid + 1;
        } else {
            high = mid - 1;
        }
    }
    *out_batch = feasible;
    return MEMEST_OK;
}

int memest_fit_batch(const memest_model *model, uint64_t requested_batch,
                     double max_memory_mb, enum memest_precision precision,
                     uint64_t batch_limit, uint64_t *out_batch)
{
    return memest_fit_batch_measure(model, requested_batch, max_memory_mb,
                                    precision, batch_limit,
                                    MEMEST_MEASURE_PEAK_INFERENCE,
                                    MEMEST_OPT_SGD, out_batch);
}

int memest_largest_batch(const memest_model *model, double max_memory_mb,
                         enum memest_precision precision,
                         uint64_t search_limit, enum memest_measure measure,
                         enum memest_optimizer opt,
                         struct memest_batch_search *out)
{
    struct memest_batch_search r;
    int st;

    if (out == NULL) {
        return MEMEST_E_INVALID;
    }
    memset(out, 0, sizeof *out);
    if (search_limit == 0) {
        return MEMEST_E_RANGE;
    }
    memset(&r, 0, sizeof r);
    r.budget_mb = max_memory_mb;
    r.measure = measure;
    st = memest_fit_batch_measure(model, search_limit, max_memory_mb,
                                  precision, search_limit, measure, opt,
                                  &r.batch);
    if (st != MEMEST_OK) {
        return st;
    }
    r.capped = r.batch == search_limit;
    st = memest_measure_mb(model, r.batch ? r.batch : 1, precision, measure,
                           opt, &r.memory_mb);
    if (st == MEMEST_E_OVERFLOW) {
        r.memory_mb = HUGE_VAL; /* batch 1 too large to count */
    } else if (st != MEMEST_OK) {
        return st;
    }
    *out = r;
    return MEMEST_OK;
}

int memest_estimate_batch_memory_mb(uint64_t features, uint64_t batch,
                                    uint64_t bytes_per_feature,
                                    double *out_mb)
{
    if (out_mb == NULL) {
        return MEMEST_E_INVALID;
    }
    {
        /* in 128 bits, so that a product beyond 64 bits still has an
         * answer, rounded once; the same bits on every target */
        struct wide_u128 total;
        if (!wide_mul_128_64(wide_mul_64(features, batch), bytes_per_feature,
                             &total)) {
            return MEMEST_E_OVERFLOW;
        }
        /* dividing by 2^20 is exact */
        *out_mb = wide_to_double(total) / 1048576.0;
    }
    return MEMEST_OK;
}

int memest_auto_adjust_batch_size(uint64_t features, uint64_t batch,
                                  double max_memory_mb,
                                  uint64_t bytes_per_feature,
                                  uint64_t *out_batch)
{
    if (out_batch == NULL) {
        return MEMEST_E_INVALID;
    }
    if (batch == 0 || bad_budget(max_memory_mb)) {
        return MEMEST_E_RANGE;
    }
    while (batch > 1) {
        double mb;
        int st = memest_estimate_batch_memory_mb(features, batch,
                                                 bytes_per_feature, &mb);
        /* a size too large to count does not fit any finite budget */
        if (st == MEMEST_OK && mb <= max_memory_mb) {
            break;
        }
        batch /= 2;
    }
    *out_batch = batch;
    return MEMEST_OK;
}

void memest_hw_config_init(struct memest_hw_config *config)
{
    if (config == NULL) {
        return;
    }
    memset(config, 0, sizeof *config);
    config->enabled = 0;
    config->max_memory_mb = 512.0;
    config->compute_speed_factor = 1.0;
    config->precision = MEMEST_FP32;
    config->batch_size_limit = 128;
    config->measure = MEMEST_MEASURE_PEAK_INFERENCE;
    config->optimizer = MEMEST_OPT_SGD;
}

/* Python's round(x, 6): the correctly rounded 6-decimal text (glibc's
 * printf rounds the exact binary value), read back. 512 bytes hold the
 * longest finite double with 6 decimals. */
double memest_round6(double x)
{
    if (!isfinite(x)) {
        return x;
    }
    char buf[512];
    snprintf(buf, sizeof buf, "%.6f", x);
    return strtod(buf, NULL);
}

int memest_prepare_run(const memest_model *model, uint64_t requested_batch,
                       const struct memest_hw_config *config,
                       struct memest_run_plan *plan)
{
    struct memest_run_plan p;
    uint64_t adjusted;
    double projected;
    int st;

    if (plan != NULL) {
        memset(plan, 0, sizeof *plan);
    }
    if (model == NULL || config == NULL || plan == NULL ||
        memest_precision_bytes(config->precision) == 0 ||
        memest_measure_name(config->measure) == NULL ||
        memest_optimizer_name(config->optimizer) == NULL) {
        return MEMEST_E_INVALID;
    }
    if (requested_batch == 0 || bad_budget(config->max_memory_mb) ||
        !isfinite(config->compute_speed_factor) ||
        config->compute_speed_factor < 0.0 ||
        config->batch_size_limit == 0) {
        return MEMEST_E_RANGE;
    }
    memset(&p, 0, sizeof p);
    p.precision = config->precision;
    p.measure = config->measure;
    if (!config->enabled) {
        p.enabled = 0;
        p.batch_size = requested_batch;
        st = memest_measure_mb(model, requested_batch, p.precision,
                               p.measure, config->optimizer, &projected);
        if (st != MEMEST_OK) {
            return st;
        }
        p.estimated_memory_mb = memest_round6(projected);
        *plan = p;
        return MEMEST_OK;
    }
    p.enabled = 1;
    st = memest_fit_batch_measure(model, requested_batch,
                                  config->max_memory_mb, p.precision,
                                  config->batch_size_limit, p.measure,
                                  config->optimizer, &adjusted);
    if (st != MEMEST_OK) {
        return st;
    }
    const int none_fits = adjusted == 0;
    if (none_fits) {
        adjusted = 1;
    }
    st = memest_measure_mb(model, adjusted, p.precision, p.measure,
                           config->optimizer, &projected);
    if (st != MEMEST_OK) {
        return st;
    }
    const char *what = measure_words(p.measure);
    if (none_fits) {
        /* The run still proceeds at batch 1, as the original's did; the
         * warning says so, so that no "reduced" line follows it as if 1
         * had been chosen to fit. */
        snprintf(p.warnings[p.warning_count++], MEMEST_WARNING_TEXT_MAX,
                 "Model cannot run under current memory and precision "
                 "constraints; even batch_size=1 needs %.4f MB of %s "
                 "memory, over max_memory_mb; the run proceeds at batch 1.",
                 projected, what);
    }
    p.fits = projected <= config->max_memory_mb;
    if (!p.fits) {
        snprintf(p.warnings[p.warning_count++], MEMEST_WARNING_TEXT_MAX,
                 "Projected %s memory (%.4f MB) exceeds limit (%.4f MB).",
                 what, projected, config->max_memory_mb);
    }
    if (!none_fits && adjusted < requested_batch) {
        snprintf(p.warnings[p.warning_count++], MEMEST_WARNING_TEXT_MAX,
                 "Batch size reduced from %" PRIu64 " to %" PRIu64
                 " due to memory constraints.",
                 requested_batch, adjusted);
    }
    p.batch_size = adjusted;
    p.estimated_memory_mb = memest_round6(projected);
    *plan = p;
    return MEMEST_OK;
}

double memest_compute_slowdown_s(double elapsed_s, double factor)
{
    if (!(factor > 1.0) || !(elapsed_s > 0.0)) {
        return 0.0;
    }
    return elapsed_s * (factor - 1.0);
}
