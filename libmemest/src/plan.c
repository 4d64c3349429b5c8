/*
 * Batch fitting, the hardware-simulation config, run plans and the
 * slowdown arithmetic, with the semantics of the original
 * hardware_simulation.py and utils/hardware.py.
 */
#include "internal.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int bad_budget(double mb)
{
    return !isfinite(mb) || mb < 0.0;
}

int memest_fit_batch(const memest_model *model, uint64_t requested_batch,
                     double max_memory_mb, enum memest_precision precision,
                     uint64_t batch_limit, uint64_t *out_batch)
{
    uint64_t capped;
    uint64_t low;
    uint64_t high;
    uint64_t feasible = 0;
    double mb;
    int st;

    if (model == NULL || out_batch == NULL ||
        memest_precision_bytes(precision) == 0) {
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
    st = memest_total_memory_mb(model, capped, precision, &mb);
    if (st != MEMEST_OK) {
        return st;
    }
    if (mb <= max_memory_mb) {
        *out_batch = capped;
        return MEMEST_OK;
    }
    low = 1;
    high = capped;
    while (low <= high) {
        /* (low + high) // 2 without overflowing */
        uint64_t mid = low + (high - low) / 2;
        st = memest_total_memory_mb(model, mid, precision, &mb);
        if (st != MEMEST_OK) {
            return st;
        }
        if (mb <= max_memory_mb) {
            feasible = mid;
            low = mid + 1;
        } else {
            high = mid - 1;
        }
    }
    *out_batch = feasible;
    return MEMEST_OK;
}

int memest_estimate_batch_memory_mb(uint64_t features, uint64_t batch,
                                    uint64_t bytes_per_feature,
                                    double *out_mb)
{
    if (out_mb == NULL) {
        return MEMEST_E_INVALID;
    }
#if defined(__SIZEOF_INT128__)
    {
        __extension__ typedef unsigned __int128 u128;
        u128 fb = (u128)features * batch;
        u128 total;
        if (bytes_per_feature != 0 &&
            fb > ((u128)0 - 1) / bytes_per_feature) {
            return MEMEST_E_OVERFLOW;
        }
        total = fb * bytes_per_feature;
        /* one rounding (u128 to double); dividing by 2^20 is exact */
        *out_mb = (double)total / 1048576.0;
    }
#else
    {
        uint64_t total;
        if (mul_ovf(features, batch, &total) ||
            mul_ovf(total, bytes_per_feature, &total)) {
            return MEMEST_E_OVERFLOW;
        }
        *out_mb = (double)total / 1048576.0;
    }
#endif
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
        memest_precision_bytes(config->precision) == 0) {
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
    if (!config->enabled) {
        p.enabled = 0;
        p.batch_size = requested_batch;
        st = memest_total_memory_mb(model, requested_batch, p.precision,
                                    &projected);
        if (st != MEMEST_OK) {
            return st;
        }
        p.estimated_memory_mb = memest_round6(projected);
        *plan = p;
        return MEMEST_OK;
    }
    p.enabled = 1;
    st = memest_fit_batch(model, requested_batch, config->max_memory_mb,
                          p.precision, config->batch_size_limit, &adjusted);
    if (st != MEMEST_OK) {
        return st;
    }
    if (adjusted == 0) {
        snprintf(p.warnings[p.warning_count++], MEMEST_WARNING_TEXT_MAX,
                 "Model cannot run under current memory and precision "
                 "constraints; even batch_size=1 exceeds max_memory_mb.");
        adjusted = 1;
    }
    st = memest_total_memory_mb(model, adjusted, p.precision, &projected);
    if (st != MEMEST_OK) {
        return st;
    }
    if (projected > config->max_memory_mb) {
        snprintf(p.warnings[p.warning_count++], MEMEST_WARNING_TEXT_MAX,
                 "Projected memory (%.4f MB) exceeds limit (%.4f MB).",
                 projected, config->max_memory_mb);
    }
    if (adjusted < requested_batch) {
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
