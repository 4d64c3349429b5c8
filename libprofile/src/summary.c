#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "edgefit/memest.h"
#include "edgefit/profile.h"
#include "internal.h"
#include "alloc_rec.h" /* last: it wraps malloc and co. */

PROF_API const char *prof_bound_name(enum prof_bound bound)
{
    return bound == PROF_BOUND_COMPUTE ? "compute" : "memory";
}

PROF_API const char *prof_utilization_reading(double bandwidth_utilization)
{
    /* The thresholds of the original's documentation. */
    if (bandwidth_utilization > 0.8) {
        return "memory-bound";
    }
    if (bandwidth_utilization < 0.2) {
        return "compute-bound or inefficient";
    }
    return "balanced";
}

static int finite_nonneg(double v)
{
    return isfinite(v) && v >= 0.0;
}

/* The original's clamp: a latency of 0 (or under a nanosecond) counts as
 * one nanosecond rather than dividing by zero. */
static double clamped_latency_s(double latency_ms)
{
    return fmax(latency_ms / 1000.0, 1e-9);
}

PROF_API int prof_compute_utilization(double macs, double latency_ms,
                                      double peak_gmacs, double *out)
{
    if (!out) {
        return PROF_E_INVALID;
    }
    if (!finite_nonneg(macs) || !finite_nonneg(latency_ms) ||
        !isfinite(peak_gmacs) || peak_gmacs <= 0.0) {
        return PROF_E_RANGE;
    }
    const double gmacs = macs / clamped_latency_s(latency_ms) / 1e9;
    *out = fmin(1.0, fmax(0.0, gmacs / peak_gmacs));
    return PROF_OK;
}

PROF_API int prof_summarize_hardware(const struct prof_layer_cost *layers,
                                     size_t n, double latency_ms,
                                     double bandwidth_gbps, double peak_gmacs,
                                     struct prof_hw_summary *out)
{
    if (!layers || !out || n == 0) {
        return PROF_E_INVALID;
    }
    if (!finite_nonneg(latency_ms) || !finite_nonneg(bandwidth_gbps) ||
        !isfinite(peak_gmacs) || peak_gmacs <= 0.0) {
        return PROF_E_RANGE;
    }
    uint64_t param = 0, act = 0, macs = 0;
    for (size_t i = 0; i < n; i++) {
        if (layers[i].parameter_bytes > UINT64_MAX - param ||
            layers[i].activation_bytes > UINT64_MAX - act ||
            layers[i].macs > UINT64_MAX - macs) {
            return PROF_E_OVERFLOW;
        }
        param += layers[i].parameter_bytes;
        act += layers[i].activation_bytes;
        macs += layers[i].macs;
    }
    if (param > UINT64_MAX - act) {
        return PROF_E_OVERFLOW;
    }
    struct prof_hw_summary s;
    memset(&s, 0, sizeof(s));
    /* Summed as integers, then converted once, like float(df.sum()). */
    s.estimated_total_bytes = (double)(param + act);
    s.estimated_total_macs = (double)macs;
    s.latency_ms = latency_ms;
    const double latency_s = clamped_latency_s(latency_ms);
    s.achieved_bandwidth_gbps = (s.estimated_total_bytes / latency_s) / 1e9;
    s.configured_memory_bandwidth_gbps = bandwidth_gbps;
    /* A utilisation is a share of a roof: at most 1. A rate above the
     * roof means the roof was not the one that served the data (a cache
     * faster than the level assumed); above_roof says so rather than
     * printing 4.7 "utilisation". */
    const double bw_ratio =
        s.achieved_bandwidth_gbps / fmax(bandwidth_gbps, 1e-9);
    s.above_roof = bw_ratio > 1.0;
    s.bandwidth_utilization = fmin(1.0, bw_ratio);
    s.achieved_gmacs = (s.estimated_total_macs / latency_s) / 1e9;
    s.peak_gmacs = peak_gmacs;
    if (param + act == 0) {
        s.arithmetic_intensity = macs == 0 ? 0.0 : INFINITY;
    } else {
        s.arithmetic_intensity =
            s.estimated_total_macs / s.estimated_total_bytes;
    }
    s.roofline_knee = peak_gmacs / fmax(bandwidth_gbps, 1e-9);
    s.bound = s.arithmetic_intensity < s.roofline_knee ? PROF_BOUND_MEMORY
                                                       : PROF_BOUND_COMPUTE;
    /* As for bandwidth: a rate above the peak is a wrong peak (another
     * machine's, or a calibration below the kernels), said, not shown
     * as a utilisation of 1. */
    s.above_peak = s.achieved_gmacs > peak_gmacs;
    s.compute_utilization = fmin(1.0, fmax(0.0, s.achieved_gmacs /
                                                    peak_gmacs));
    s.reading = prof_utilization_reading(s.bandwidth_utilization);
    *out = s;
    return PROF_OK;
}

PROF_API int prof_summarize_model(const memest_model *model, uint64_t batch,
                                  enum memest_precision precision,
                                  double latency_ms, double bandwidth_gbps,
                                  double peak_gmacs,
                                  struct prof_hw_summary *out)
{
    if (!model || !out) {
        return PROF_E_INVALID;
    }
    const size_t n = memest_estimate_row_count(model);
    if (n == 0 || n > SIZE_MAX / sizeof(struct memest_layer_estimate)) {
        return PROF_E_OVERFLOW;
    }
    struct memest_layer_estimate *rows = calloc(n, sizeof(*rows));
    struct prof_layer_cost *costs = calloc(n, sizeof(*costs));
    int st = PROF_OK;
    if (!rows || !costs) {
        st = PROF_E_NOMEM;
        goto done;
    }
    size_t count = 0;
    const int mst =
        memest_estimate_layers(model, batch, precision, rows, n, &count);
    if (mst != MEMEST_OK || count != n) {
        st = mst != MEMEST_OK ? prof_of_memest(mst) : PROF_E_MEMEST;
        goto done;
    }
    for (size_t i = 0; i < n; i++) {
        costs[i].parameter_bytes = rows[i].parameter_bytes;
        costs[i].activation_bytes = rows[i].activation_bytes;
        costs[i].macs = rows[i].macs;
    }
    st = prof_summarize_hardware(costs, n, latency_ms, bandwidth_gbps,
                                 peak_gmacs, out);
done:
    free(rows);
    free(costs);
    return st;
}

struct group {
    const char *precision;
    size_t count;
    double accuracy, latency_ms, memory_mb, energy_proxy_j;
    size_t accepted;
};

static int cmp_group(const void *a, const void *b)
{
    const struct prof_tradeoff_row *x = a;
    const struct prof_tradeoff_row *y = b;
    if (x->latency_ms_mean < y->latency_ms_mean) {
        return -1;
    }
    if (x->latency_ms_mean > y->latency_ms_mean) {
        return 1;
    }
    return strcmp(x->precision, y->precision);
}

PROF_API int prof_precision_tradeoff(const struct prof_sweep_row *rows,
                                     size_t n, struct prof_tradeoff_row *out,
                                     size_t cap, size_t *out_n)
{
    if (!rows || !out_n || n == 0) {
        return PROF_E_INVALID;
    }
    for (size_t i = 0; i < n; i++) {
        const struct prof_sweep_row *r = &rows[i];
        if (!r->precision || !*r->precision) {
            return PROF_E_INVALID;
        }
        if (!isfinite(r->accuracy) || !isfinite(r->latency_ms) ||
            !isfinite(r->memory_mb) || !isfinite(r->energy_proxy_j)) {
            return PROF_E_RANGE;
        }
    }
    struct group *g = calloc(n, sizeof(*g));
    if (!g) {
        return PROF_E_NOMEM;
    }
    /* Sweeps hold a handful of precisions: a linear search per row is
     * simpler than a hash and keeps the input order of the sums. */
    size_t groups = 0;
    for (size_t i = 0; i < n; i++) {
        size_t j = 0;
        while (j < groups && strcmp(g[j].precision, rows[i].precision) != 0) {
            j++;
        }
        if (j == groups) {
            g[groups++].precision = rows[i].precision;
        }
        g[j].count++;
        g[j].accuracy += rows[i].accuracy;
        g[j].latency_ms += rows[i].latency_ms;
        g[j].memory_mb += rows[i].memory_mb;
        g[j].energy_proxy_j += rows[i].energy_proxy_j;
        g[j].accepted += rows[i].accepted ? 1u : 0u;
    }
    *out_n = groups;
    if (!out || cap < groups) {
        free(g);
        return PROF_E_RANGE;
    }
    for (size_t j = 0; j < groups; j++) {
        const double c = (double)g[j].count;
        out[j] = (struct prof_tradeoff_row){
            .precision = g[j].precision,
            .count = g[j].count,
            .accuracy_mean = g[j].accuracy / c,
            .latency_ms_mean = g[j].latency_ms / c,
            .memory_mb_mean = g[j].memory_mb / c,
            .energy_proxy_j_mean = g[j].energy_proxy_j / c,
            .accepted_ratio = (double)g[j].accepted / c,
        };
    }
    /* Names are unique, so the comparison is a total order and qsort's
     * instability cannot show. */
    qsort(out, groups, sizeof(*out), cmp_group);
    free(g);
    return PROF_OK;
}
