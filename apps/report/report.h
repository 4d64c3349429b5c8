/* The parts of edgefit-report (private): main.c reads the options and
 * runs the phases, verdict.c phrases the verdict from the figures, page.c
 * writes summary.json, report.html and the folder. */
#ifndef EDGEFIT_REPORT_H
#define EDGEFIT_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "calib.h"
#include "calibration.h"
#include "cli.h"
#include "devices.h"
#include "edgefit/artifacts.h"
#include "edgefit/memest.h"
#include "edgefit/profile.h"
#include "layerwise.h"
#include "sweep.h"
#include "train_charts.h"
#include "training.h"
#include "weights.h"

#define VERDICT_LINES 8
#define LINE_MAX_ 480
/* The largest batch the memory search tries: beyond it memory is said to
 * be no constraint rather than a cap printed as a batch. */
#define BATCH_SEARCH_CAP (UINT64_C(1) << 20)

enum train_mode { TRAIN_DEFAULT, TRAIN_YES, TRAIN_NO };

enum data_kind {
    DATA_NONE,      /* analysis only: memory, layers, device latency */
    DATA_LABELLED,  /* --data (or the default Fashion-MNIST): accuracy */
    DATA_REFERENCE, /* --test-data: agreement with reference outputs */
};

struct options {
    const char *model;
    const char *data, *test_data;
    bool no_data;
    enum train_mode train;
    uint64_t epochs;
    bool epochs_given;
    uint64_t threads;
    uint64_t train_limit, test_limit;
    uint64_t batch;            /* training and the sweep's largest batch */
    double max_latency_ms;
    double max_memory_mb;      /* NaN: the device's memory */
    double max_accuracy_drop;
    struct cli_device_opts dev;
    struct cli_calib_opts calib;
    struct calibration_opts cal;   /* static int8's ranges */
    struct cli_common co;
    int argc;
    char **argv;
};

struct report {
    memest_model *model;
    struct prof_device device;
    struct cli_devices devs;
    enum data_kind data;
    const char *data_dir;       /* what was read, for the page */
    bool classifier;
    struct prof_dataset train, test;
    bool training;              /* the training phase runs */
    const char *no_training;    /* why not, when it does not */
    bool has_weights;           /* from the file or --weights */
    prof_train *trainer;
    struct prof_train_memory train_mem;
    struct cli_weights weights;
    struct cli_train_log log;
    art_table *history;
    struct train_charts tch;
    struct sweep_config scfg;
    struct prof_ranges ranges;      /* static int8's, for the sweep */
    char int8_calibration[320];     /* where they came from ("": none) */
    struct sweep_result sweep;
    art_table *sweep_table, *tradeoffs;
    struct sweep_chart sch;
    bool have_chart;
    struct layerwise_opts lwo;
    struct layerwise lw;
    struct layerwise_charts lch;
    art_table *layers_brief;
    /* the verdict's figures, all in summary.json */
    uint64_t first_batch;           /* 1, or the ONNX file's fixed batch */
    uint64_t batch;                 /* --batch, or the fixed batch */
    uint64_t fixed_batch;           /* memest_model_fixed_batch(), 0: free */
    const struct sweep_row *best;   /* the recommended configuration */
    const struct sweep_row *fp32_b1;
    const struct sweep_row *best_b; /* best's precision at --batch */
    double fp32_stderr;             /* fp32's accuracy's standard error */
    double memory_limit_mb;
    const char *limit_name;
    double fp32_b1_mb, fp32_batch_mb, smallest_b1_mb;
    const char *smallest_prec;      /* the precision of smallest_b1_mb */
    uint64_t largest_batch;         /* fp32 within the limit */
    bool memory_unconstrained;      /* fits even at BATCH_SEARCH_CAP */
    bool fits;                      /* some precision fits at batch 1 */
    size_t accepted;
    char verdict[VERDICT_LINES][LINE_MAX_];
    size_t n_verdict;
    /* the page's facts */
    char machine[256];
    char command[1024];
    char date[40];
    art_doc *summary;
    double wall_s;
};

/* The sweep row of precision prec at batch, or NULL. */
const struct sweep_row *report_row(const struct report *r, const char *prec,
                                   uint64_t batch);

/* The verdict lines (r->verdict) from the phases' figures. A CLI_EXIT_
 * code. */
int report_judge(const struct options *o, struct report *r);

/* The machine, the command line and the date, for the page and
 * summary.json. */
void report_facts(const struct options *o, struct report *r);
/* summary.json (r->summary), then the folder: every file or none. CLI_EXIT_
 * codes after a message. */
int report_summary(const struct options *o, struct report *r);
int report_write(const struct options *o, struct report *r);

#endif
