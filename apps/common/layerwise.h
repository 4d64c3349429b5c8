/* Shared by edgefit-layerwise and edgefit-report: the layer-wise analysis.
 * The model runs on this machine layer by layer through the executor, each
 * operator is timed, predicted on a device with the roofline (and on the
 * calibrated host, with and without its caches), summarised as the
 * original's summarize_hardware() did, and drawn: activation memory and
 * MACs per layer, and the roofline. Not installed. */
#ifndef EDGEFIT_APPS_LAYERWISE_H
#define EDGEFIT_APPS_LAYERWISE_H

#include <stdbool.h>
#include <stdint.h>

#include <stdio.h>

#include "calib.h"
#include "calibration.h"
#include "devices.h"
#include "table.h"
#include "edgefit/artifacts.h"
#include "edgefit/memest.h"
#include "edgefit/profile.h"

/* The order of the layer table (--sort): as the model runs, or the
 * heaviest first by measured latency, MACs, parameters or activation
 * memory, or by layer name. */
enum layerwise_sort {
    LAYERWISE_SORT_ORDER = 0,
    LAYERWISE_SORT_TIME,
    LAYERWISE_SORT_MACS,
    LAYERWISE_SORT_PARAMS,
    LAYERWISE_SORT_MEMORY,
    LAYERWISE_SORT_NAME,
};

/* "order", "time", ...; false for another word. */
bool layerwise_sort_parse(const char *s, enum layerwise_sort *out);

struct layerwise_opts {
    const char *model;
    const char *weights; /* --weights FILE, NULL: the executor's seeded
                            weights (or an ONNX model's own) */
    uint64_t batch;  /* without have_batch, a file's fixed batch wins */
    bool have_batch; /* --batch given: a file's fixed batch must agree */
    enum memest_precision precision;
    struct cli_device_opts dev;
    uint64_t repeats;
    uint64_t warmup;
    double min_sample_ms;
    int have_power;
    double power_watts;
    double latency_multiplier;
    uint64_t seed;
    unsigned threads; /* executor threads (0: 1) */
    struct cli_calib_opts calib;
    bool quiet; /* no calibration progress */
    enum layerwise_sort sort; /* the layer table's order (default ORDER) */
    uint64_t top;             /* the first top rows of it (0: all) */
    /* Static int8 (MEMEST_INT8): ranges given by the caller (not owned;
     * calibration says where they came from), else made by
     * layerwise_run() from cal, else from its own timing inputs. */
    const struct prof_ranges *ranges;
    const char *calibration;
    struct calibration_opts cal;
};

/* One device of --device A,B,...: its predictions per row. */
struct layerwise_device {
    char name[64];   /* as given */
    char column[96]; /* predicted_ms_NAME, the name in [a-z0-9_] */
    int is_host;
    struct prof_device dev;
    const struct prof_exec_profile *prof; /* the run's */
    struct prof_layer_prediction *pred;
    struct prof_prediction_total total;
};

/* One kind of operator in the summary by kind. */
struct layerwise_kind {
    enum memest_kind kind;
    uint64_t layers, macs, parameters;
    double latency_ms, time_share;
};

/* Everything the run computes, before anything is printed or written. */
struct layerwise {
    memest_model *model;
    uint64_t batch; /* the batch run: --batch, or the file's fixed one */
    prof_exec *ex;
    struct memest_layer_estimate *rows;
    size_t nrows;
    struct prof_exec_profile prof;
    struct prof_exec_memory mem;
    /* The working memory of the run: activations, stored parameters, the
     * float master copy kept beside other precisions, and the scratch;
     * and the same for fp32, to compare. */
    uint64_t working_bytes, fp32_working_bytes;
    size_t widest_op;          /* the operator with the most scratch */
    char memory_note[320];
    struct cli_devices devs;
    struct prof_calibration cal;
    /* host: cache-aware; host_dram: the same without its caches */
    struct prof_device device, host, host_dram;
    int device_is_host;
    struct prof_layer_prediction *pred, *host_pred, *dram_pred;
    struct prof_prediction_total total, host_total, dram_total;
    struct prof_hw_summary summary;
    unsigned roof_level;   /* the memory level the summary's roof is */
    double peak_gmacs;     /* this machine's peak for the precision and
                              threads: the summary is of the run measured */
    enum prof_bound regime; /* the bound of most of the predicted time */
    double regime_share;    /* that share of the predicted time */
    size_t regime_layers, n_layers;
    char regime_text[200];
    double energy_proxy_j; /* one machine's power x its own latency */
    /* this machine's measured forward over its own cache-aware roofline;
     * the device's roofline lower bound and that bound times the
     * over-run, both to 2 significant digits */
    double host_overrun;
    double device_latency_lower_ms, device_latency_realistic_ms;
    /* The device model of --device from --devices (a fitted model of a
     * runtime, edgefit-device): the whole run predicted with its
     * interval, under columns named for the device; NaN without one. */
    char device_runtime[32];
    char dm_col[3][96]; /* NAME_predicted_ms, _low, _high */
    double dm_ms[3];
    art_table *layers;
    art_table *layers_view; /* the terminal's */
    art_table *hw;
    /* The presentation (apps/common/layerwise_tables.c): each row's share
     * of the layers' summed latency and the running share in the
     * table's order, the order itself (its first nshown rows are shown),
     * the summary by kind, the totals, and the devices of --device
     * A,B,... (none for one device). */
    double layer_sum_ms;
    double *time_share, *cumulative_share; /* per row, NaN for the input */
    size_t *order, nshown;
    struct layerwise_kind *kinds;
    size_t nkinds;
    art_table *by_kind, *by_kind_view, *totals;
    struct layerwise_device *devices;
    size_t ndevices;
    struct prof_ranges ranges;   /* static int8's, when made here */
    char int8_calibration[320];  /* where int8's ranges came from; "" */
};

/* The steps, in order; each prints "prog: message" on failure and returns
 * a CLI_EXIT_ code. Release with layerwise_free() whatever happened. */
/* The device named by o->dev (among the --devices file's first); "host"
 * waits for calibration. */
int layerwise_resolve_device(const struct layerwise_opts *o,
                             struct layerwise *r);
/* Load the model, estimate it, run and time it operator by operator. */
int layerwise_run(const struct layerwise_opts *o, struct layerwise *r);
/* Calibrate the host (cached), predict on the device and the host,
 * summarise. */
int layerwise_predict(const struct layerwise_opts *o, struct layerwise *r);
/* r->layers (layerwise_breakdown.csv) and r->hw (hardware_summary.csv).
 * An ART_ status. */
int layerwise_build_tables(const struct layerwise_opts *o,
                           struct layerwise *r);
void layerwise_free(struct layerwise *r);

/* ---- apps/common/layerwise_tables.c --------------------------------------- */

/* --device A,B,...: true when spec names several devices (a list with no
 * '=', which only an inline device has). */
bool layerwise_is_device_list(const char *spec);
/* Resolve each device of the list into r->devices (the first is also the
 * run's device, resolved by layerwise_resolve_device). A CLI_EXIT_ code. */
int layerwise_resolve_devices(const struct layerwise_opts *o,
                              struct layerwise *r);
/* Predict every operator on each device of r->devices (after
 * layerwise_predict: the host's from its calibration). A CLI_EXIT_ code. */
int layerwise_predict_devices(const struct layerwise_opts *o,
                              struct layerwise *r);
/* The shares, the order, the summary by kind and the totals; then the
 * layer table's extra columns (latency spread, first run, shares, one
 * predicted_ms_NAME per device) for build_layers_table. An ART_ status. */
int layerwise_presentation(const struct layerwise_opts *o,
                           struct layerwise *r);
extern const struct cli_column layerwise_share_columns[];
extern const size_t layerwise_share_column_count;
/* The column sets of r->devices (cols: r->ndevices entries to fill). */
void layerwise_device_columns(const struct layerwise *r,
                              struct cli_column *cols,
                              struct cli_column_set *sets);
/* r->layers and r->layers_view in r->order, the first r->nshown rows. */
int layerwise_order_tables(struct layerwise *r);
/* The terminal's totals block (torchinfo's), after the layer table. */
void layerwise_print_totals(const struct layerwise_opts *o,
                            const struct layerwise *r, FILE *f);
void layerwise_tables_free(struct layerwise *r);

/* "L1".."L3", or "DRAM" for main memory. */
const char *layerwise_level_name(unsigned level);

/* The three charts: layerwise_activation_memory.png and layerwise_macs.png
 * (the original's titles and axes) and roofline.png (the device's roof and
 * the host's, one point per layer measured on the host and one predicted
 * on the device). The storage behind them lives here. */
struct layerwise_charts {
    struct art_chart activation, macs, roofline;
    struct art_series act_series, macs_series, roof_series[2];
    struct art_roof roofs[3];
    char roof_names[3][96];
    char dev_series_name[96];
    const char **names;      /* layer names (all rows) */
    double *act_mb, *macs_m; /* per row */
    double *x, *host_y, *dev_y; /* per layer with work */
    const char **point_names;
};
bool layerwise_charts_init(const struct layerwise_opts *o,
                           const struct layerwise *r,
                           struct layerwise_charts *c);
void layerwise_charts_free(struct layerwise_charts *c);

#endif
