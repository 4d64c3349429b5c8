/* Shared by edgefit-sweep and edgefit-report: the precision sweep. For each
 * precision and batch, the executor runs the whole test set with the given
 * weights (accuracy) and is timed on one batch (latency); libmemest's peak
 * plan gives the memory, the device's power the energy proxy, and the
 * roofline the device's latency. Then the original's precision trade-off
 * table (prof_precision_tradeoff) and its chart. Not installed. */
#ifndef EDGEFIT_APPS_SWEEP_H
#define EDGEFIT_APPS_SWEEP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "edgefit/artifacts.h"
#include "edgefit/memest.h"
#include "edgefit/profile.h"
#include "weights.h"

/* fp32, fp16, bf16, int8 (static) and int8-dynamic */
#define SWEEP_MAX_PRECISIONS 5
#define SWEEP_MAX_BATCHES 16
/* The largest batch of --batches. */
#define SWEEP_MAX_BATCH 65536

struct sweep_config {
    enum memest_precision precisions[SWEEP_MAX_PRECISIONS];
    size_t n_precisions;
    uint64_t batches[SWEEP_MAX_BATCHES];
    size_t n_batches;
    /* Constraints: a configuration is accepted when it meets all three.
     * INFINITY / 0 when not given. */
    double max_latency_ms;
    double max_memory_mb;
    double min_accuracy;
    struct prof_time_opts timing; /* latency of one batch */
    struct prof_device device;    /* power and roofline */
    unsigned threads;             /* executor threads (0: 1) */
    /* Static int8 (MEMEST_INT8): the activation ranges it runs with
     * (calibration_ranges()), not owned, and the sentence saying where
     * they came from, copied into each int8 row. NULL when the sweep has
     * no int8; an int8 configuration without ranges fails. */
    const struct prof_ranges *ranges;
    const char *calibration;
    enum prof_int8_requant int8_requant; /* static int8's output stage */
    /* Progress (may be NULL): called before each configuration. */
    void (*progress)(void *ctx, size_t done, size_t total,
                     const char *what);
    void *progress_ctx;
};

/* The defaults: fp32, fp16, bf16, int8 (static); batches 1, 8, 32; no constraint;
 * 2 warm-up runs, 7 samples of at least 2 ms each. The device is the
 * caller's to set. */
void sweep_config_init(struct sweep_config *cfg);

/* Parse "fp32,int8" or "1,8,32" into cfg (option names opt in messages):
 * each at most once, batches 1 to SWEEP_MAX_BATCH. */
bool sweep_parse_precisions(const char *opt, const char *text,
                            struct sweep_config *cfg);
bool sweep_parse_batches(const char *opt, const char *text,
                         struct sweep_config *cfg);

struct sweep_row {
    char precision[16];
    char calibration[320];      /* int8: where its ranges came from
                                   (int8-dynamic: "per batch"); else "" */
    uint64_t batch;             /* 0: not given (a CSV without it) */
    double accuracy;            /* correct / samples over the test set;
                                   NaN when the data has no labels */
    double accuracy_stderr;     /* sqrt(p (1 - p) / samples): accuracy
                                   differences below it are noise; NaN
                                   without labels */
    uint64_t samples;
    /* Against the data's reference outputs (--test-data); NaN without. */
    double max_abs_error;       /* max |output - reference| */
    double rms_error;           /* sqrt(mean((output - reference)^2)) */
    double top1_agreement;      /* share of samples whose largest output
                                   is the reference's; NaN unless the
                                   model is a classifier */
    double latency_ms;          /* median of the samples, one batch */
    double latency_p90_ms;
    double memory_mb;           /* libmemest's peak inference plan */
    double energy_proxy_j;      /* device power * device_latency_ms / 1000
                                   (latency_ms for the host); NaN when
                                   the power is unknown */
    double device_latency_ms;   /* roofline prediction of one batch */
    const char *device_bound;   /* "memory" or "compute" (static) */
    bool accepted;
    char rejected_by[48];       /* "latency,memory,accuracy" or "" */
};

struct sweep_result {
    struct sweep_row *rows;
    size_t n;
};

/*
 * Run the sweep of model with the parameters w (NULL: the executor's seeded
 * initial weights) over the test set: accuracy when it has labels, the
 * agreement with its reference outputs when it has those (both when it
 * has both). The caller checks the data first (data_check). On failure
 * print "prog: message" and return false. Release with
 * sweep_result_free().
 */
bool sweep_run(const memest_model *model, const struct cli_weights *w,
               const struct prof_dataset *test,
               const struct sweep_config *cfg, struct sweep_result *out);
void sweep_result_free(struct sweep_result *r);

/* Judge each row against cfg's constraints (sets accepted, rejected_by).
 * A NaN min_accuracy is no accuracy constraint (no data to measure it). */
void sweep_judge(struct sweep_result *r, const struct sweep_config *cfg);

/*
 * Read rows from a CSV with at least the columns precision, accuracy,
 * latency_ms, memory_mb, energy_proxy_j and accepted (true/false, any
 * case, or 1/0); batch_size is optional. On a bad file print
 * "prog: FILE:LINE: column 'NAME': reason" and return false.
 */
bool sweep_load_csv(const char *path, struct sweep_result *out);

/* sweep_results.csv: one row per configuration, units in the names. NULL
 * when out of memory. Release with art_table_destroy(). */
art_table *sweep_results_table(const struct sweep_result *r);

/* precision_tradeoffs.csv: the original's precision_tradeoff_table()
 * (prof_precision_tradeoff: means per precision, sorted by mean latency).
 * NULL after printing why. */
art_table *sweep_tradeoff_table(const struct sweep_result *r);

/* The trade-off scatter: latency against accuracy, one point per
 * configuration labelled with its batch, with its standard error as an
 * error bar, a colour per precision, filled
 * when accepted and open when rejected (at most SWEEP_MAX_PRECISIONS
 * precisions; more is an error). The storage behind the
 * chart lives in *chart; release with sweep_chart_free(). */
struct sweep_chart {
    struct art_chart chart;
    /* one colour per precision, filled when accepted, open when not */
    struct art_series series[2 * SWEEP_MAX_PRECISIONS];
    char names[2 * SWEEP_MAX_PRECISIONS][48];
    double *x, *y;
    double *err; /* each point's accuracy standard error (error bars) */
    const char **labels;
    char (*text)[40];
};
bool sweep_chart_init(const struct sweep_result *r, struct sweep_chart *c);
void sweep_chart_free(struct sweep_chart *c);

#endif
