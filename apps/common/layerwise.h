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

#include "calib.h"
#include "devices.h"
#include "edgefit/artifacts.h"
#include "edgefit/memest.h"
#include "edgefit/profile.h"

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
    art_table *layers;
    art_table *layers_view; /* the terminal's */
    art_table *hw;
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
