/* edgefit-device: fit the device model (libprofile's prof_dm_*) to
 * measured latencies, published tables or this machine's micro-suite,
 * evaluate it leave-one-model-out, and predict with it. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "calib.h"
#include "cli.h"
#include "devices.h"
#include "model.h"
#include "table.h"
#include "edgefit/artifacts.h"
#include "edgefit/memest.h"
#include "edgefit/profile.h"

static const char *const runtimes[] = {
    "edgefit", "ncnn", "tflite-xnnpack", "onnxruntime", "pytorch", "armnn",
};
#define RUNTIME_COUNT (sizeof runtimes / sizeof runtimes[0])

/* How far a board's parameters may stray from its runtime's fit across
 * boards, natural log units (1: a factor 2.7 per standard deviation). On
 * the published tables, leave-one-model-out, 1 and 0 (each board alone)
 * score the same share within 25% averaged over the boards, 0.3 and 0.5
 * less; 1 leans on the other boards where a board has few rows. */
#define DEFAULT_POOL_SIGMA 1.0

enum mode { MODE_NONE, MODE_FIT, MODE_MEASURE, MODE_PREDICT, MODE_CHECK };

struct options {
    enum mode mode;
    const char *runtime;      /* --runtime, NULL: every runtime (fit) */
    const char *models_dir;   /* --models DIR, NULL: beside each CSV */
    const char *model;        /* --model (predict) */
    unsigned threads[8];
    size_t nthreads;
    uint64_t batches[8];
    size_t nbatches;
    enum memest_precision precision;
    unsigned repeats;
    double prior_sigma;       /* --pool-sigma (0: each board alone) */
    struct cli_device_opts dev;
    struct cli_calib_opts calib;
    struct cli_common co;
};

enum {
    OPT_FIT = 1,
    OPT_MEASURE,
    OPT_PREDICT,
    OPT_CHECK_HOST,
    OPT_MODELS,
    OPT_MODEL,
    OPT_THREADS,
    OPT_BATCHES,
    OPT_PRECISION,
    OPT_REPEATS,
    OPT_POOL_SIGMA,
};

static void usage(FILE *f)
{
    fprintf(f,
        "usage: edgefit-device --fit FILE.csv [FILE.csv...] [options]\n"
        "       edgefit-device --measure --out DIR [options]\n"
        "       edgefit-device --predict --model SPEC --device D --runtime R\n"
        "       edgefit-device --check-host --devices FILE MODEL...\n"
        "\n"
        "The device model: per layer, MACs at an efficiency of the operator\n"
        "class (depthwise, pointwise, 3x3, other convolution, GEMM, ...) of\n"
        "the device's peak, bytes at its bandwidth, a per-layer overhead and\n"
        "an Amdahl thread curve; fitted by least squares on log time, ten\n"
        "parameters for a published runtime, thirteen for edgefit's own.\n"
        "\n"
        "  --fit                 fit every (device, runtime) of the\n"
        "                        measurement files (header model,device,\n"
        "                        runtime,threads,precision,batch,latency_ms,\n"
        "                        source), evaluate it leave-one-model-out and\n"
        "                        print the shares within 10%%, 25%% and 2x;\n"
        "                        --out DIR writes devices.csv (for --devices),\n"
        "                        fit_residuals.csv and cross_validation.csv\n"
        "  --pool-sigma X        each board's parameters are pulled towards\n"
        "                        its runtime's fit across every board, X per\n"
        "                        standard deviation in natural log units\n"
        "                        (default 1; 0: each board alone)\n"
        "  --models DIR          where a measurement's model is DIR/MODEL.txt\n"
        "                        (default: ../models beside each file); a\n"
        "                        model without a file is a preset name\n"
        "  --measure             time a fixed micro-suite of layers on this\n"
        "                        machine (each operator class at several\n"
        "                        shapes, 1 to N threads, fp32, fp16, int8)\n"
        "                        and fit device 'host', runtime edgefit;\n"
        "                        needs --out DIR (host_measurements.csv too)\n"
        "  --predict             predict --model on --device with --runtime\n"
        "                        (a fitted model of --devices FILE)\n"
        "  --check-host          time each MODEL on this machine and compare\n"
        "                        with the host model of --devices FILE\n"
        "  --runtime NAME        edgefit, ncnn, tflite-xnnpack, onnxruntime,\n"
        "                        pytorch, armnn: the fitted model predictions\n"
        "                        use (with --fit: fit only this runtime)\n"
        "  --model SPEC          a model file or preset (--predict)\n"
        "  --threads LIST        threads, e.g. 1,2 (default 1; --measure: 1\n"
        "                        to the cores, at most 4)\n"
        "  --batches LIST        batches, e.g. 1,8 (default 1)\n"
        "  --precision P         fp32|fp16|bf16|int8 (default fp32)\n"
        "  --repeats N           timed samples per measurement (default 5)\n"
        "  --device D            the device to predict on\n"
        "  --devices FILE        devices and fitted models (a devices CSV)\n"
        "  --list-devices        print the catalogue and exit\n"
        CLI_CALIB_HELP
        "  --format F            table|csv|json on stdout (default table)\n"
        "  --out DIR             write the files named above\n"
        "                        (replaced whole: a kill or a full disk leaves the old\n"
        "                        folder or the new one; '.', a mount point and a folder\n"
        "                        holding a folder are refused)\n"
        "  --quiet               no progress\n"
        "  -h, --help, --version   this text; the version\n"
        "\n"
        "Host timings (--measure, --check-host) are wall time less the\n"
        "time the calling thread waited for a core: the median of\n"
        "--repeats samples (each of calls lasting 10 ms), so that other\n"
        "work on a shared machine does not count, and waits for worker\n"
        "threads do.\n");
}

static const struct cli_app app = {"edgefit-device", EDGEFIT_VERSION, usage,
                                   cli_version_details};

static bool runtime_known(const char *name)
{
    for (size_t i = 0; i < RUNTIME_COUNT; i++) {
        if (strcmp(runtimes[i], name) == 0) {
            return true;
        }
    }
    return false;
}

/* ---- Tables ----------------------------------------------------------- */

/* A table being filled row by row; the first failure sticks in st. */
struct tab {
    art_table *t;
    int st;
    size_t row;
};

static void tab_new(struct tab *b, const char *name, const char *const *cols,
                    const enum art_type *types, size_t n)
{
    b->st = art_table_create(name, &b->t);
    for (size_t i = 0; i < n && b->st == ART_OK; i++) {
        b->st = art_table_add_column(b->t, cols[i], types[i]);
    }
}

static void tab_row(struct tab *b)
{
    if (b->st == ART_OK) {
        b->st = art_table_add_row(b->t, &b->row);
    }
}

static void tab_text(struct tab *b, size_t col, const char *v)
{
    if (b->st == ART_OK) {
        b->st = art_table_set_text(b->t, b->row, col, v);
    }
}

/* v to digits significant digits: what a fit to noisy timings can
 * claim, and what a reader reads. */
static double sig(double v, int digits)
{
    if (!isfinite(v) || v == 0.0) {
        return v;
    }
    const double e = floor(log10(fabs(v))) + 1.0 - digits;
    const double p = pow(10.0, -e);
    return round(v * p) / p;
}

/* A real to 6 significant digits; NaN leaves the cell empty. */
static void tab_real(struct tab *b, size_t col, double v)
{
    if (b->st == ART_OK && isfinite(v)) {
        b->st = art_table_set_real(b->t, b->row, col, sig(v, 6));
    }
}

/* A share (0 to 1) to 3 significant digits. */
static void tab_share(struct tab *b, size_t col, double v)
{
    if (b->st == ART_OK && isfinite(v)) {
        b->st = art_table_set_real(b->t, b->row, col, sig(v, 3));
    }
}

static void tab_uint(struct tab *b, size_t col, uint64_t v)
{
    if (b->st == ART_OK) {
        b->st = art_table_set_uint(b->t, b->row, col, v);
    }
}

/* ---- Measurements ----------------------------------------------------- */

/* A network loaded once, by the model name the measurements give. */
struct net_entry {
    char key[512];
    struct prof_dm_net net;
};

struct sample {
    size_t net;                 /* index in the nets */
    struct prof_device device;
    char runtime[PROF_DM_RUNTIME_MAX];
    unsigned threads;
    enum memest_precision precision;
    uint64_t batch;
    double latency_ms;
    char *source;
    char *file;                 /* where it was read, for messages */
    size_t line;
};

struct data {
    struct net_entry *nets;
    size_t nnets, capnets;
    struct sample *s;
    size_t n, cap;
};

static void data_free(struct data *d)
{
    for (size_t i = 0; i < d->nnets; i++) {
        prof_dm_net_free(&d->nets[i].net);
    }
    for (size_t i = 0; i < d->n; i++) {
        free(d->s[i].source);
        free(d->s[i].file);
    }
    free(d->nets);
    free(d->s);
    memset(d, 0, sizeof *d);
}

/* The network of model name (a file in models_dir, else a preset),
 * loaded once: its index, or -1 after a message naming file:line. */
static long net_index(struct data *d, const char *models_dir,
                      const char *name, const char *file, size_t line)
{
    for (size_t i = 0; i < d->nnets; i++) {
        if (strcmp(d->nets[i].key, name) == 0) {
            return (long)i;
        }
    }
    char path[1600];
    const int plen = snprintf(path, sizeof path, "%s/%s.txt", models_dir,
                              name);
    if (plen < 0 || (size_t)plen >= sizeof path) {
        cli_error("%s:%zu: model: '%s': the path is too long", file, line,
                  name);
        return -1;
    }
    memest_model *m = NULL;
    struct memest_diag md;
    memset(&md, 0, sizeof md);
    int st;
    struct stat sb;
    if (strchr(name, '/') == NULL && stat(path, &sb) == 0) {
        st = memest_model_load(path, &m, &md);
    } else if (memest_is_preset_name(name)) {
        st = memest_model_preset(name, &m, &md);
    } else if (strchr(name, '/') != NULL && stat(name, &sb) == 0) {
        /* a path (a host measurement of a file of this machine) */
        st = memest_model_load(name, &m, &md);
    } else {
        cli_error("%s:%zu: model: '%s' is neither %s nor a preset "
                  "(edgefit-memfit --list-presets)",
                  file, line, name, path);
        return -1;
    }
    if (st != MEMEST_OK) {
        char msg[600];
        memest_diag_format(&md, msg, sizeof msg);
        cli_error("%s:%zu: model '%s': %s", file, line, name, msg);
        return -1;
    }
    if (d->nnets == d->capnets) {
        const size_t cap = d->capnets ? d->capnets * 2 : 16;
        struct net_entry *p = realloc(d->nets, cap * sizeof *p);
        if (!p) {
            memest_model_destroy(m);
            cli_error("out of memory (the networks)");
            return -2;
        }
        d->nets = p;
        d->capnets = cap;
    }
    struct net_entry *e = &d->nets[d->nnets];
    memset(e, 0, sizeof *e);
    snprintf(e->key, sizeof e->key, "%s", name);
    st = prof_dm_net_from_model(m, &e->net);
    memest_model_destroy(m);
    if (st != PROF_OK) {
        cli_error("out of memory (the layers of '%s')", name);
        return -2;
    }
    snprintf(e->net.name, sizeof e->net.name, "%s", name);
    return (long)d->nnets++;
}

static const char *cell(const art_table *t, size_t row, long col, char *buf,
                        size_t len)
{
    if (col < 0 || !art_table_is_set(t, row, (size_t)col)) {
        return "";
    }
    const size_t need = art_table_format_cell(t, row, (size_t)col, buf, len);
    return need < len ? buf : "";
}

static const char *const meas_cols[] = {
    "model", "device", "runtime", "threads", "precision", "batch",
    "latency_ms", "source",
};
#define MEAS_COLS 8

/* Read one measurement file into d. Returns a CLI_EXIT_ code. */
static int load_measurements(const char *path, const struct options *o,
                             const struct cli_devices *devs, struct data *d)
{
    if (!cli_check_regular_file("--fit", path)) {
        return CLI_EXIT_USAGE;
    }
    art_table *t = NULL;
    struct art_diag ad = {0, "", 0};
    if (art_table_load_csv(path, &t, &ad) != ART_OK) {
        if (ad.sys_errno != 0) {
            cli_error("%s", ad.message);
        } else {
            cli_error("%s:%d: %s", path, ad.line, ad.message);
        }
        return CLI_EXIT_USAGE;
    }
    const long head = art_table_header_line(t);
    long col[MEAS_COLS];
    if (art_table_cols(t) != MEAS_COLS) {
        cli_error("%s:%ld: the header must be exactly "
                  "model,device,runtime,threads,precision,batch,latency_ms,"
                  "source",
                  path, head);
        art_table_destroy(t);
        return CLI_EXIT_USAGE;
    }
    for (int c = 0; c < MEAS_COLS; c++) {
        col[c] = art_table_find_column(t, meas_cols[c]);
        if (col[c] < 0) {
            cli_error("%s:%ld: missing column '%s' (the header must be "
                      "model,device,runtime,threads,precision,batch,"
                      "latency_ms,source)",
                      path, head, meas_cols[c]);
            art_table_destroy(t);
            return CLI_EXIT_USAGE;
        }
    }
    char models_dir[1024];
    if (o->models_dir) {
        snprintf(models_dir, sizeof models_dir, "%s", o->models_dir);
    } else {
        const char *slash = strrchr(path, '/');
        if (slash) {
            snprintf(models_dir, sizeof models_dir, "%.*s/../models",
                     (int)(slash - path), path);
        } else {
            snprintf(models_dir, sizeof models_dir, "../models");
        }
    }
    int rc = CLI_EXIT_OK;
    size_t excluded = 0;
    for (size_t r = 0; r < art_table_rows(t) && rc == CLI_EXIT_OK; r++) {
        const size_t line = (size_t)art_table_row_line(t, r);
        static char b[MEAS_COLS][8192]; /* a source cites a whole row */
        const char *v[MEAS_COLS];
        for (int c = 0; c < MEAS_COLS; c++) {
            v[c] = cell(t, r, col[c], b[c], sizeof b[c]);
            if (art_table_is_set(t, r, (size_t)col[c]) && v[c][0] == '\0') {
                cli_error("%s:%zu: %s: longer than %zu bytes", path, line,
                          meas_cols[c], sizeof b[c] - 1);
                rc = CLI_EXIT_USAGE;
                break;
            }
            if (v[c][0] == '\0') {
                cli_error("%s:%zu: %s: empty", path, line, meas_cols[c]);
                rc = CLI_EXIT_USAGE;
                break;
            }
        }
        if (rc != CLI_EXIT_OK) {
            break;
        }
        if (!runtime_known(v[2])) {
            cli_error("%s:%zu: runtime: '%s' is not one of edgefit, ncnn, "
                      "tflite-xnnpack, onnxruntime, pytorch, armnn",
                      path, line, v[2]);
            rc = CLI_EXIT_USAGE;
            break;
        }
        if (o->runtime && strcmp(o->runtime, v[2]) != 0) {
            continue;
        }
        /* A row kept in the file for the record but marked excluded, its
         * source saying why (data/published/README.md): never fitted nor
         * evaluated, and counted aloud so no row is dropped silently. */
        if (strncmp(v[7], "excluded:", 9) == 0) {
            excluded++;
            continue;
        }
        struct sample s;
        memset(&s, 0, sizeof s);
        char *end = NULL;
        errno = 0;
        const unsigned long th = strtoul(v[3], &end, 10);
        if (*end != '\0' || errno || th < 1 || th > 4096) {
            cli_error("%s:%zu: threads: '%s' is not a whole number from 1 "
                      "to 4096", path, line, v[3]);
            rc = CLI_EXIT_USAGE;
            break;
        }
        s.threads = (unsigned)th;
        if (memest_precision_parse(v[4], &s.precision) != MEMEST_OK ||
            s.precision == MEMEST_FP64) {
            cli_error("%s:%zu: precision: '%s' is not fp32, fp16, bf16 or "
                      "int8", path, line, v[4]);
            rc = CLI_EXIT_USAGE;
            break;
        }
        if (s.precision == MEMEST_INT8_DYNAMIC) {
            s.precision = MEMEST_INT8;
        }
        errno = 0;
        const unsigned long long bt = strtoull(v[5], &end, 10);
        if (*end != '\0' || errno || bt < 1 || bt > 1000000) {
            cli_error("%s:%zu: batch: '%s' is not a whole number from 1 to "
                      "1000000", path, line, v[5]);
            rc = CLI_EXIT_USAGE;
            break;
        }
        s.batch = bt;
        errno = 0;
        s.latency_ms = strtod(v[6], &end);
        if (*end != '\0' || errno || !(s.latency_ms > 0.0) ||
            !isfinite(s.latency_ms)) {
            cli_error("%s:%zu: latency_ms: '%s' is not a number above 0",
                      path, line, v[6]);
            rc = CLI_EXIT_USAGE;
            break;
        }
        if (strcmp(v[1], "host") == 0) {
            /* the host's figures: this machine's calibration */
            struct prof_calibration cal;
            bool cached = false;
            const int cst = cli_host_calibration(&o->calib, &cal, &cached);
            if (cst != PROF_OK || prof_device_host(&cal, &s.device) !=
                                      PROF_OK) {
                cli_error("%s:%zu: device host: the calibration failed",
                          path, line);
                rc = CLI_EXIT_FAILURE;
                break;
            }
        } else {
            struct prof_diag pd = {0, ""};
            bool found = false;
            for (size_t k = 0; devs && k < devs->count; k++) {
                if (strcmp(devs->devs[k].name, v[1]) == 0) {
                    s.device = devs->devs[k];
                    found = true;
                }
            }
            if (!found && (strchr(v[1], '=') != NULL ||
                           prof_device_lookup(v[1], &s.device, &pd) !=
                               PROF_OK)) {
                cli_error("%s:%zu: device: '%s' is not a device of the "
                          "catalogue (--list-devices)%s",
                          path, line, v[1],
                          devs ? " nor of --devices" : "");
                rc = CLI_EXIT_USAGE;
                break;
            }
        }
        const long ni = net_index(d, models_dir, v[0], path, line);
        if (ni < 0) {
            rc = ni == -2 ? CLI_EXIT_FAILURE : CLI_EXIT_USAGE;
            break;
        }
        s.net = (size_t)ni;
        snprintf(s.runtime, sizeof s.runtime, "%s", v[2]);
        s.source = strdup(v[7]);
        s.file = strdup(path);
        s.line = line;
        if (d->n == d->cap) {
            const size_t cap = d->cap ? d->cap * 2 : 64;
            struct sample *p = realloc(d->s, cap * sizeof *p);
            if (!p) {
                free(s.source);
                free(s.file);
                cli_error("out of memory (the measurements)");
                rc = CLI_EXIT_FAILURE;
                break;
            }
            d->s = p;
            d->cap = cap;
        }
        if (!s.source || !s.file) {
            free(s.source);
            free(s.file);
            cli_error("out of memory (the measurements)");
            rc = CLI_EXIT_FAILURE;
            break;
        }
        d->s[d->n++] = s;
    }
    art_table_destroy(t);
    if (rc == CLI_EXIT_OK && excluded > 0) {
        cli_warn("%s: %zu row%s marked excluded (source begins "
                 "'excluded:' and says why), not used", path, excluded,
                 excluded == 1 ? "" : "s");
    }
    return rc;
}

/* ---- Fit and cross-validation ------------------------------------------ */

static const char *const dev_cols[] = {
    "name", "bandwidth_gbps", "peak_gmacs", "power_watts", "memory_mb",
    "cores", "peak_gmacs_f16", "peak_gmacs_int8", "bandwidth_1core_gbps",
    "runtime", "combine",
    /* then the parameters (prof_dm_param_name), then: */
};
#define DEV_COLS 11
static const char *const dev_tail[] = {
    "interval_low", "interval_high", "samples", "rms_log_residual",
};
#define DEV_TAIL 4

static void devices_table(struct tab *b)
{
    const char *names[DEV_COLS + PROF_DM_PARAM_COUNT + DEV_TAIL];
    enum art_type types[DEV_COLS + PROF_DM_PARAM_COUNT + DEV_TAIL];
    size_t n = 0;
    for (size_t i = 0; i < DEV_COLS; i++) {
        names[n] = dev_cols[i];
        types[n++] = i == 0 || i >= 9 ? ART_TEXT
                     : i == 5         ? ART_UINT
                                      : ART_REAL;
    }
    for (int k = 0; k < PROF_DM_PARAM_COUNT; k++) {
        names[n] = prof_dm_param_name((enum prof_dm_param)k);
        types[n++] = ART_REAL;
    }
    for (size_t i = 0; i < DEV_TAIL; i++) {
        names[n] = dev_tail[i];
        types[n++] = i == 2 ? ART_UINT : ART_REAL;
    }
    tab_new(b, "devices", names, types, n);
}

static void devices_row(struct tab *b, const struct prof_devmodel *m)
{
    const struct prof_device *d = &m->device;
    tab_row(b);
    tab_text(b, 0, d->name);
    tab_real(b, 1, d->bandwidth_gbps);
    tab_real(b, 2, d->peak_gmacs);
    tab_real(b, 3, d->power_watts);
    tab_real(b, 4, d->memory_mb);
    tab_uint(b, 5, prof_device_cores(d));
    tab_real(b, 6, d->peak_gmacs_f16);
    tab_real(b, 7, d->peak_gmacs_int8);
    tab_real(b, 8, d->bandwidth_1core_gbps);
    tab_text(b, 9, m->runtime);
    tab_text(b, 10, m->combine == PROF_DM_SUM ? "sum" : "max");
    for (int k = 0; k < PROF_DM_PARAM_COUNT; k++) {
        tab_real(b, DEV_COLS + (size_t)k, m->param[k]);
    }
    tab_real(b, DEV_COLS + PROF_DM_PARAM_COUNT, m->interval_low);
    tab_real(b, DEV_COLS + PROF_DM_PARAM_COUNT + 1, m->interval_high);
    tab_uint(b, DEV_COLS + PROF_DM_PARAM_COUNT + 2, m->samples);
    tab_real(b, DEV_COLS + PROF_DM_PARAM_COUNT + 3, m->rms_log_residual);
}

static const char *const res_cols[] = {
    "model", "device", "runtime", "threads", "precision", "batch",
    "measured_ms", "predicted_ms", "cv_predicted_ms", "cv_ratio",
    "roofline_bound_ms", "roofline_ratio", "source",
};
static const enum art_type res_types[] = {
    ART_TEXT, ART_TEXT, ART_TEXT, ART_UINT, ART_TEXT, ART_UINT, ART_REAL,
    ART_REAL, ART_REAL, ART_REAL, ART_REAL, ART_REAL, ART_TEXT,
};

static const char *const cv_cols[] = {
    "device", "runtime", "measurements", "models", "within_10pct",
    "within_25pct", "within_2x", "roofline_within_25pct", "combine",
    "interval_low", "interval_high",
};
static const enum art_type cv_types[] = {
    ART_TEXT, ART_TEXT, ART_UINT, ART_UINT, ART_REAL, ART_REAL, ART_REAL,
    ART_REAL, ART_TEXT, ART_REAL, ART_REAL,
};

/* The terminal's view of cross_validation: its key columns. */
static const char *const cvv_cols[] = {
    "device", "runtime", "measurements", "within_10pct", "within_25pct",
    "within_2x", "roofline_within_25pct",
};
static const enum art_type cvv_types[] = {
    ART_TEXT, ART_TEXT, ART_UINT, ART_REAL, ART_REAL, ART_REAL, ART_REAL,
};

static bool same_group(const struct sample *a, const struct sample *b)
{
    return strcmp(a->device.name, b->device.name) == 0 &&
           strcmp(a->runtime, b->runtime) == 0;
}

/* Every runtime of d fitted across its boards
 * (prof_dm_cross_validate_pooled): *cvall the cross-validated prediction
 * of each sample, *gm[i] the model of sample i's board for the first
 * sample i of each (device, runtime). A CLI_EXIT_ code. */
static int fit_pooled(struct data *d, const struct options *o,
                      double **cvall, struct prof_devmodel **gm)
{
    const size_t n = d->n;
    *cvall = malloc(n * sizeof **cvall);
    *gm = calloc(n, sizeof **gm);
    bool *rdone = calloc(n, sizeof *rdone);
    size_t *list = malloc(n * sizeof *list);
    size_t *group = malloc(n * sizeof *group);
    size_t *gfirst = malloc(n * sizeof *gfirst);
    struct prof_dm_case *cases = malloc(n * sizeof *cases);
    double *pred = malloc(n * sizeof *pred);
    struct prof_devmodel *models = calloc(n, sizeof *models);
    int rc = CLI_EXIT_OK;
    if (!*cvall || !*gm || !rdone || !list || !group || !gfirst || !cases ||
        !pred || !models) {
        cli_error("out of memory (the fit)");
        rc = CLI_EXIT_FAILURE;
    }
    const bool progress = cli_progress_wanted(o->co.quiet);
    for (size_t r = 0; r < n && rc == CLI_EXIT_OK; r++) {
        if (rdone[r]) {
            continue;
        }
        size_t m = 0, ng = 0;
        for (size_t i = r; i < n; i++) {
            if (rdone[i] || strcmp(d->s[i].runtime, d->s[r].runtime) != 0) {
                continue;
            }
            rdone[i] = true;
            size_t g = 0;
            while (g < ng && strcmp(d->s[gfirst[g]].device.name,
                                    d->s[i].device.name) != 0) {
                g++;
            }
            if (g == ng) {
                gfirst[ng++] = i;
            }
            list[m] = i;
            group[m] = g;
            cases[m] = (struct prof_dm_case){
                &d->nets[d->s[i].net].net, d->s[i].threads,
                d->s[i].precision, d->s[i].batch, d->s[i].latency_ms,
                &d->s[i].device};
            m++;
        }
        char what[160];
        snprintf(what, sizeof what, "fitting %s across %zu boards (%zu "
                 "measurements)", d->s[r].runtime, ng, m);
        cli_progress(progress, (unsigned)r, (unsigned)n, what);
        struct prof_diag pd = {0, ""};
        const int st = prof_dm_cross_validate_pooled(
            d->s[r].runtime, cases, group, m, ng, o->prior_sigma, pred,
            models, &pd);
        if (st != PROF_OK) {
            rc = cli_prof_failed(what, st, &pd);
            break;
        }
        for (size_t k = 0; k < m; k++) {
            (*cvall)[list[k]] = pred[k];
        }
        for (size_t g = 0; g < ng; g++) {
            (*gm)[gfirst[g]] = models[g];
        }
    }
    free(rdone);
    free(list);
    free(group);
    free(gfirst);
    free(cases);
    free(pred);
    free(models);
    if (rc != CLI_EXIT_OK) {
        free(*cvall);
        free(*gm);
        *cvall = NULL;
        *gm = NULL;
    }
    return rc;
}

/* Fit, cross-validate and tabulate every (device, runtime) of d. */
static int fit_all(struct data *d, const struct options *o,
                   struct tab *devt, struct tab *rest, struct tab *cvt,
                   struct tab *cvv)
{
    tab_new(cvv, "cross_validation", cvv_cols, cvv_types,
            sizeof cvv_cols / sizeof cvv_cols[0]);
    devices_table(devt);
    tab_new(rest, "fit_residuals", res_cols, res_types,
            sizeof res_cols / sizeof res_cols[0]);
    tab_new(cvt, "cross_validation", cv_cols, cv_types,
            sizeof cv_cols / sizeof cv_cols[0]);
    bool *done = calloc(d->n ? d->n : 1, sizeof *done);
    size_t *idx = malloc((d->n ? d->n : 1) * sizeof *idx);
    struct prof_dm_case *cases = malloc((d->n ? d->n : 1) * sizeof *cases);
    double *cv = malloc((d->n ? d->n : 1) * sizeof *cv);
    int rc = CLI_EXIT_OK;
    if (!done || !idx || !cases || !cv) {
        cli_error("out of memory (the fit)");
        rc = CLI_EXIT_FAILURE;
    }
    const bool progress = cli_progress_wanted(o->co.quiet);
    /* Pooled: each runtime across its boards first (cvall, gm[the first
     * sample of each board]) */
    double *cvall = NULL;
    struct prof_devmodel *gm = NULL;
    if (rc == CLI_EXIT_OK && o->prior_sigma > 0.0) {
        rc = fit_pooled(d, o, &cvall, &gm);
    }
    for (size_t g = 0; g < d->n && rc == CLI_EXIT_OK; g++) {
        if (done[g]) {
            continue;
        }
        size_t n = 0;
        for (size_t i = g; i < d->n; i++) {
            if (!done[i] && same_group(&d->s[g], &d->s[i])) {
                done[i] = true;
                idx[n] = i;
                cases[n] = (struct prof_dm_case){
                    &d->nets[d->s[i].net].net, d->s[i].threads,
                    d->s[i].precision, d->s[i].batch, d->s[i].latency_ms, NULL};
                n++;
            }
        }
        char what[160];
        snprintf(what, sizeof what, "fitting %s, %s (%zu measurements)",
                 d->s[g].device.name, d->s[g].runtime, n);
        cli_progress(progress, (unsigned)g, (unsigned)d->n, what);
        struct prof_devmodel m;
        struct prof_diag pd = {0, ""};
        if (gm) {
            m = gm[g];
            for (size_t k = 0; k < n; k++) {
                cv[k] = cvall[idx[k]];
            }
        } else {
            const int st = prof_dm_cross_validate(&d->s[g].device,
                                                  d->s[g].runtime, cases, n,
                                                  cv, &m, &pd);
            if (st != PROF_OK) {
                rc = cli_prof_failed(what, st, &pd);
                break;
            }
        }
        devices_row(devt, &m);
        size_t models = 0, w10 = 0, w25 = 0, w2 = 0, r25 = 0, ncv = 0;
        for (size_t k = 0; k < n; k++) {
            bool first = true;
            for (size_t j = 0; j < k; j++) {
                if (cases[j].net == cases[k].net) {
                    first = false;
                }
            }
            models += first;
            const struct sample *s = &d->s[idx[k]];
            double fitted = NAN, bound = NAN;
            prof_dm_predict(&m, &cases[k], &fitted, NULL, NULL);
            prof_dm_roofline_bound(&s->device, &cases[k], &bound);
            const double ratio = cv[k] / s->latency_ms;
            const double rb = bound / s->latency_ms;
            if (isfinite(ratio)) {
                ncv++;
                w10 += fabs(ratio - 1.0) <= 0.10;
                w25 += fabs(ratio - 1.0) <= 0.25;
                w2 += ratio >= 0.5 && ratio <= 2.0;
                r25 += fabs(rb - 1.0) <= 0.25;
            }
            tab_row(rest);
            tab_text(rest, 0, d->nets[s->net].key);
            tab_text(rest, 1, s->device.name);
            tab_text(rest, 2, s->runtime);
            tab_uint(rest, 3, s->threads);
            tab_text(rest, 4, memest_precision_name(s->precision));
            tab_uint(rest, 5, s->batch);
            tab_real(rest, 6, s->latency_ms);
            tab_real(rest, 7, fitted);
            tab_real(rest, 8, cv[k]);
            tab_share(rest, 9, ratio);
            tab_real(rest, 10, bound);
            tab_share(rest, 11, rb);
            tab_text(rest, 12, s->source);
        }
        tab_row(cvt);
        tab_text(cvt, 0, d->s[g].device.name);
        tab_text(cvt, 1, d->s[g].runtime);
        tab_uint(cvt, 2, n);
        tab_uint(cvt, 3, models);
        if (ncv > 0) {
            tab_share(cvt, 4, (double)w10 / (double)ncv);
            tab_share(cvt, 5, (double)w25 / (double)ncv);
            tab_share(cvt, 6, (double)w2 / (double)ncv);
            tab_share(cvt, 7, (double)r25 / (double)ncv);
        }
        tab_row(cvv);
        tab_text(cvv, 0, d->s[g].device.name);
        tab_text(cvv, 1, d->s[g].runtime);
        tab_uint(cvv, 2, n);
        if (ncv > 0) {
            tab_share(cvv, 3, (double)w10 / (double)ncv);
            tab_share(cvv, 4, (double)w25 / (double)ncv);
            tab_share(cvv, 5, (double)w2 / (double)ncv);
            tab_share(cvv, 6, (double)r25 / (double)ncv);
        }
        tab_text(cvt, 8, m.combine == PROF_DM_SUM ? "sum" : "max");
        tab_share(cvt, 9, m.interval_low);
        tab_share(cvt, 10, m.interval_high);
    }
    cli_progress(progress, 0, 0, NULL);
    if (rc == CLI_EXIT_OK &&
        (devt->st != ART_OK || rest->st != ART_OK || cvt->st != ART_OK ||
         cvv->st != ART_OK)) {
        cli_error("building the tables: %s", art_strerror(devt->st ? devt->st
                                                     : rest->st ? rest->st
                                                                : cvt->st));
        rc = CLI_EXIT_FAILURE;
    }
    free(cvall);
    free(gm);
    free(done);
    free(idx);
    free(cases);
    free(cv);
    return rc;
}

static int emit_fit(const struct options *o, struct tab *devt,
                    struct tab *rest, struct tab *cvt, struct tab *cvv)
{
    const struct cli_output outs[3] = {
        {.key = "cross_validation", .table = cvt->t, .view = cvv->t},
        {.key = "devices", .table = devt->t},
        {.key = "fit_residuals", .table = rest->t},
    };
    int rc = CLI_EXIT_OK;
    if (o->co.out_dir) {
        rc = cli_write_outputs(o->co.out_dir, outs, 3, NULL);
    }
    if (rc == CLI_EXIT_OK) {
        rc = cli_emit(o->co.format, outs, 1);
    }
    return rc;
}

static int run_fit(int argc, char **argv, const struct options *o,
                   const struct cli_devices *devs)
{
    if (optind >= argc) {
        cli_error("--fit: give one or more measurement files");
        return CLI_EXIT_USAGE;
    }
    struct data d;
    memset(&d, 0, sizeof d);
    int rc = CLI_EXIT_OK;
    for (int i = optind; i < argc && rc == CLI_EXIT_OK; i++) {
        rc = load_measurements(argv[i], o, devs, &d);
    }
    if (rc == CLI_EXIT_OK && d.n == 0) {
        cli_error("--fit: no measurements%s%s", o->runtime ? " of runtime " : "",
                  o->runtime ? o->runtime : "");
        rc = CLI_EXIT_USAGE;
    }
    struct tab devt = {0}, rest = {0}, cvt = {0}, cvv = {0};
    if (rc == CLI_EXIT_OK) {
        rc = fit_all(&d, o, &devt, &rest, &cvt, &cvv);
    }
    if (rc == CLI_EXIT_OK) {
        rc = emit_fit(o, &devt, &rest, &cvt, &cvv);
    }
    art_table_destroy(cvv.t);
    art_table_destroy(devt.t);
    art_table_destroy(rest.t);
    art_table_destroy(cvt.t);
    data_free(&d);
    return rc;
}

/* ---- Timing on this machine --------------------------------------------- */

struct run_ctx {
    prof_exec *ex;
    float *in, *out;
    size_t n_in, n_out;
};

static int run_once(void *p)
{
    struct run_ctx *c = p;
    return prof_exec_run(c->ex, c->in, c->n_in, c->out, c->n_out);
}

/* The host's latency of model: the median of repeats samples of wall
 * time less the calling thread's run-queue delay (PROF_CLOCK_UNQUEUED).
 * What a user sees is wall time; on a machine shared with other work,
 * wall time also counts the slices the other work holds the cores, and
 * varied several times over between runs. The caller's CPU time does not
 * count them, but with more threads it is wrong the other way: the
 * caller runs the first block of every split product and then any block
 * no worker has started (the pool, libkernels/src/matmul.c), and sleeps
 * while it waits for the rest, so its CPU time leaves out its waits for
 * the workers (what two threads cost a user) and grows to the one-thread
 * time when the workers are kept from running. Wall time less the
 * caller's own queueing counts its work and its waits for the workers,
 * not its waits for a core; it still counts a worker's queueing while
 * the caller waits for it. With one thread it is the thread's CPU time.
 * *ms, or a PROF_ status with diag. */
static int time_model(const memest_model *model, unsigned threads,
                      enum memest_precision prec, uint64_t batch,
                      unsigned repeats, double *ms, struct prof_diag *diag)
{
    struct prof_exec_opts eo;
    prof_exec_opts_init(&eo);
    eo.batch = batch;
    eo.threads = threads;
    eo.precision = prec == MEMEST_INT8 ? MEMEST_INT8_DYNAMIC : prec;
    struct run_ctx c = {0};
    int st = prof_exec_create(model, &eo, &c.ex, diag);
    if (st != PROF_OK) {
        return st;
    }
    c.n_in = prof_exec_input_count(c.ex);
    c.n_out = prof_exec_output_count(c.ex);
    c.in = calloc(c.n_in ? c.n_in : 1, sizeof *c.in);
    c.out = malloc((c.n_out ? c.n_out : 1) * sizeof *c.out);
    if (!c.in || !c.out) {
        st = PROF_E_NOMEM;
    } else {
        /* a fixed input: values in [-1, 1) */
        for (size_t i = 0; i < c.n_in; i++) {
            c.in[i] = (float)((i * 2654435761u) % 2000u) / 1000.0f - 1.0f;
        }
        /* one untimed call (first-touch of buffers, the workers' start),
         * then samples of at least 10 ms of CPU */
        struct prof_time_opts to;
        prof_time_opts_init(&to);
        to.warmup = 1;
        to.repeats = repeats;
        to.min_sample_ms = 10.0;
        to.clock = PROF_CLOCK_UNQUEUED;
        struct prof_stats stats;
        st = prof_time(run_once, &c, &to, &stats, NULL);
        if (st == PROF_OK) {
            *ms = stats.median_ms;
        } else if (st == PROF_E_IO && diag) {
            snprintf(diag->message, sizeof diag->message,
                     "the calling thread's run-queue delay "
                     "(/proc/thread-self/schedstat): %s", strerror(errno));
        }
    }
    free(c.in);
    free(c.out);
    prof_exec_destroy(c.ex);
    return st;
}

/* The micro-suite: layers of each class at three shapes (small, mid,
 * large), and two tiny layers that show the fixed per-layer cost. A
 * convolution is timed as it runs inside a network: a chain of four
 * (the model prices every layer of an entry), led by a 1x1 convolution
 * from 8 channels and closed by a global average pool. The executor keeps
 * a chain's tensors channel-blocked, but not the network's input and
 * output; a lone layer reads and writes NCHW, and measured so, 1x1 and 3x3
 * convolutions ran at half the speed they have inside a network (the
 * check's convolutional networks were predicted about 2x slow). */
#define LEAD(c, hw) "input 8x" hw "\nconv2d " c " k=1\n"
#define FOUR(l) l l l l
static const char *const suite[][2] = {
    {"dw-a", LEAD("32", "56x56") FOUR("conv2d 32 k=3 p=1 g=32\n")
                 "globalavgpool\n"},
    {"dw-b", LEAD("128", "28x28") FOUR("conv2d 128 k=3 p=1 g=128\n")
                 "globalavgpool\n"},
    {"dw-c", LEAD("256", "28x28") "conv2d 256 k=3 s=2 p=1 g=256\n"
                 "conv2d 256 k=3 p=1 g=256\nconv2d 256 k=3 p=1 g=256\n"
                 "conv2d 256 k=3 p=1 g=256\nglobalavgpool\n"},
    {"pw-a", LEAD("64", "56x56") FOUR("conv2d 64 k=1\n") "globalavgpool\n"},
    {"pw-b", LEAD("128", "28x28") FOUR("conv2d 128 k=1\n")
                 "globalavgpool\n"},
    {"pw-c", LEAD("256", "14x14") "conv2d 512 k=1\nconv2d 512 k=1\n"
                 "conv2d 512 k=1\nconv2d 512 k=1\nglobalavgpool\n"},
    {"c3-a", LEAD("16", "56x56") FOUR("conv2d 16 k=3 p=1\n")
                 "globalavgpool\n"},
    {"c3-b", LEAD("64", "28x28") FOUR("conv2d 64 k=3 p=1\n")
                 "globalavgpool\n"},
    {"c3-c", LEAD("128", "14x14") FOUR("conv2d 128 k=3 p=1\n")
                 "globalavgpool\n"},
    /* a stem reads the network's input whatever the network */
    {"cx-a", "input 3x112x112\nconv2d 16 k=3 s=2 p=1\nglobalavgpool\n"},
    {"cx-b", LEAD("32", "56x56") "conv2d 32 k=5 p=2\nconv2d 32 k=5 p=2\n"
                 "conv2d 32 k=5 p=2\nglobalavgpool\n"},
    {"cx-c", LEAD("64", "56x56") "conv2d 128 k=3 s=2 p=1\n"
                 "conv2d 128 k=3 s=2 p=1\nconv2d 256 k=3 s=2 p=1\n"
                 "globalavgpool\n"},
    {"fc-a", "input 256\ndense 256\n"},
    {"fc-b", "input 1024\ndense 1000\n"},
    {"fc-c", "input 2048\ndense 2048\n"},
    /* dense layers over rows of tokens, GEMMs where the above are GEMVs,
     * and a recurrent layer (both of the GEMM class) */
    {"fc-d", "input 64x256\ndense 256\n"},
    {"fc-e", "input 16x1024\ndense 1024\n"},
    {"rnn-a", "input 49x10\nlstm 64 seq=yes\n"},
    {"ew-a", LEAD("64", "56x56") "batchnorm act=relu\nconv2d 64 k=1\n"
                 "batchnorm act=relu\nglobalavgpool\n"},
    {"pool-a", "input 64x56x56\nmaxpool k=2\n"},
    {"pool-b", "input 256x14x14\nglobalavgpool\n"},
    {"tiny-a", "input 8x8x8\nconv2d 8 k=3 p=1 g=8\n"},
    {"tiny-b", "input 16x1x1\nconv2d 16 k=1\n"},
    /* eight of tiny-b's layer: with tiny-b, it tells the fixed cost of a
     * run (run_overhead_ms) from that of a layer (overhead_ms), which
     * single-layer runs cannot */
    {"tiny-c", "input 16x1x1\n" FOUR("conv2d 16 k=1\n")
               FOUR("conv2d 16 k=1\n")},
};
#define SUITE_COUNT (sizeof suite / sizeof suite[0])

static int run_measure(const struct options *o)
{
    if (!o->co.out_dir) {
        cli_error("--measure: give --out DIR for the devices file");
        return CLI_EXIT_USAGE;
    }
    struct prof_calibration cal;
    bool cached = false;
    int st = cli_host_calibration(&o->calib, &cal, &cached);
    struct prof_device host;
    if (st != PROF_OK || (st = prof_device_host(&cal, &host)) != PROF_OK) {
        return cli_prof_failed("calibrating the host", st, NULL);
    }
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    unsigned maxt = online > 4 ? 4 : online < 1 ? 1 : (unsigned)online;
    unsigned threads[8];
    size_t nth = 0;
    if (o->nthreads) {
        for (size_t i = 0; i < o->nthreads; i++) {
            threads[nth++] = o->threads[i];
        }
    } else {
        for (unsigned t = 1; t <= maxt; t++) {
            threads[nth++] = t;
        }
    }
    static const enum memest_precision precs[3] = {MEMEST_FP32, MEMEST_FP16,
                                                   MEMEST_INT8};
    static const char *const mcols[] = {"model", "device", "runtime",
                                        "threads", "precision", "batch",
                                        "latency_ms", "source"};
    static const enum art_type mtypes[] = {ART_TEXT, ART_TEXT, ART_TEXT,
                                           ART_UINT, ART_TEXT, ART_UINT,
                                           ART_REAL, ART_TEXT};
    struct tab mt = {0};
    tab_new(&mt, "host_measurements", mcols, mtypes, 8);
    struct data d;
    memset(&d, 0, sizeof d);
    d.cap = SUITE_COUNT * nth * 3;
    d.s = calloc(d.cap, sizeof *d.s);
    d.nets = calloc(SUITE_COUNT, sizeof *d.nets);
    d.capnets = SUITE_COUNT;
    int rc = CLI_EXIT_OK;
    if (!d.s || !d.nets) {
        cli_error("out of memory (the micro-suite)");
        rc = CLI_EXIT_FAILURE;
    }
    const bool progress = cli_progress_wanted(o->co.quiet);
    const unsigned total = (unsigned)(SUITE_COUNT * nth * 3);
    unsigned done = 0;
    for (size_t i = 0; i < SUITE_COUNT && rc == CLI_EXIT_OK; i++) {
        memest_model *m = NULL;
        struct memest_diag md;
        if (memest_model_parse(suite[i][1], &m, &md) != MEMEST_OK ||
            prof_dm_net_from_model(m, &d.nets[d.nnets].net) != PROF_OK) {
            memest_model_destroy(m);
            cli_error("the micro-suite's %s does not build", suite[i][0]);
            rc = CLI_EXIT_FAILURE;
            break;
        }
        snprintf(d.nets[d.nnets].key, sizeof d.nets[0].key, "%s",
                 suite[i][0]);
        snprintf(d.nets[d.nnets].net.name, sizeof d.nets[0].net.name, "%s",
                 suite[i][0]);
        d.nnets++;
        for (size_t t = 0; t < nth && rc == CLI_EXIT_OK; t++) {
            for (int p = 0; p < 3; p++) {
                char what[96];
                snprintf(what, sizeof what, "%s, %u thread%s, %s",
                         suite[i][0], threads[t], threads[t] > 1 ? "s" : "",
                         memest_precision_name(precs[p]));
                cli_progress(progress, done++, total, what);
                double ms = NAN;
                struct prof_diag pd = {0, ""};
                st = time_model(m, threads[t], precs[p], 1, o->repeats, &ms,
                                &pd);
                if (st != PROF_OK) {
                    cli_warn("%s: skipped (%s)", what,
                             pd.message[0] ? pd.message : prof_strerror(st));
                    continue;
                }
                tab_row(&mt);
                tab_text(&mt, 0, suite[i][0]);
                tab_text(&mt, 1, "host");
                tab_text(&mt, 2, "edgefit");
                tab_uint(&mt, 3, threads[t]);
                tab_text(&mt, 4, memest_precision_name(precs[p]));
                tab_uint(&mt, 5, 1);
                tab_real(&mt, 6, ms);
                tab_text(&mt, 7, "edgefit-device --measure on this machine");
                /* The fit takes fp32's rows only: one set of
                 * efficiencies cannot hold edgefit's three precisions
                 * (here its fp16 dense layers ran 4-6x slower than
                 * fp32's, widening their weights each run, its int8 ones
                 * 7x faster), and fitted on all three it priced fp32's
                 * dense layers 1.5-5x slow (docs/device-model.md). fp16
                 * and int8 stay in host_measurements.csv. */
                if (precs[p] != MEMEST_FP32) {
                    continue;
                }
                struct sample *s = &d.s[d.n++];
                s->net = d.nnets - 1;
                s->device = host;
                snprintf(s->device.name, sizeof s->device.name, "host");
                snprintf(s->runtime, sizeof s->runtime, "edgefit");
                s->threads = threads[t];
                s->precision = precs[p];
                s->batch = 1;
                s->latency_ms = ms;
                s->source = strdup("edgefit-device --measure on this machine");
                if (!s->source) {
                    rc = CLI_EXIT_FAILURE;
                }
            }
        }
        memest_model_destroy(m);
    }
    cli_progress(progress, 0, 0, NULL);
    struct tab devt = {0}, rest = {0}, cvt = {0}, cvv = {0};
    if (rc == CLI_EXIT_OK) {
        rc = fit_all(&d, o, &devt, &rest, &cvt, &cvv);
    }
    if (rc == CLI_EXIT_OK) {
        const struct cli_output outs[4] = {
            {.key = "cross_validation", .table = cvt.t, .view = cvv.t},
            {.key = "devices", .table = devt.t},
            {.key = "fit_residuals", .table = rest.t},
            {.key = "host_measurements", .table = mt.t},
        };
        rc = cli_write_outputs(o->co.out_dir, outs, 4, NULL);
        if (rc == CLI_EXIT_OK) {
            rc = cli_emit(o->co.format, outs, 1);
        }
    }
    art_table_destroy(mt.t);
    art_table_destroy(cvv.t);
    art_table_destroy(devt.t);
    art_table_destroy(rest.t);
    art_table_destroy(cvt.t);
    data_free(&d);
    return rc;
}

/* ---- Predict and check ------------------------------------------------ */

static const struct prof_devmodel *find_model(const struct cli_devices *devs,
                                              const char *device,
                                              const char *runtime)
{
    const struct prof_devmodel *m =
        cli_devices_model(devs, device, runtime);
    if (!m) {
        cli_error("--devices %s: no fitted model of device '%s' with "
                  "runtime '%s' (edgefit-device --fit or --measure writes "
                  "one)",
                  devs && devs->path ? devs->path : "(none)", device,
                  runtime);
    }
    return m;
}

static const char *const pred_cols[] = {
    "model", "device", "runtime", "threads", "precision", "batch",
    "measured_ms", "predicted_ms", "predicted_ms_low", "predicted_ms_high",
    "roofline_bound_ms", "prediction_error",
};
static const enum art_type pred_types[] = {
    ART_TEXT, ART_TEXT, ART_TEXT, ART_UINT, ART_TEXT, ART_UINT,
    ART_REAL, ART_REAL, ART_REAL, ART_REAL, ART_REAL, ART_REAL,
};

/* --predict (measure false: one model) and --check-host (measure true:
 * each operand, timed here). */
static int run_predict(int argc, char **argv, const struct options *o,
                       const struct cli_devices *devs, bool measure)
{
    const char *device = measure ? "host" : o->dev.device;
    const char *runtime = o->runtime ? o->runtime : "edgefit";
    if (!device) {
        cli_error("--predict: give --device D");
        return CLI_EXIT_USAGE;
    }
    if (!measure && !o->model) {
        cli_error("--predict: give --model SPEC");
        return CLI_EXIT_USAGE;
    }
    if (measure && optind >= argc) {
        cli_error("--check-host: give one or more models");
        return CLI_EXIT_USAGE;
    }
    const struct prof_devmodel *dm = find_model(devs, device, runtime);
    if (!dm) {
        return CLI_EXIT_USAGE;
    }
    if ((o->precision == MEMEST_FP16 || o->precision == MEMEST_BF16) &&
        !prof_device_has_f16(&dm->device)) {
        /* said even with --quiet: it changes what the number means */
        fprintf(stderr,
                "edgefit-device: %s has no fp16 arithmetic: %s is predicted "
                "as 16-bit storage computed at the fp32 rate (no fp16 "
                "speed-up)\n",
                dm->device.name, memest_precision_name(o->precision));
    }
    /* The host's cache levels (their sizes and measured bandwidths, which
     * the devices file does not keep) from the calibration the fit used */
    struct prof_device host;
    const bool is_host = strcmp(device, "host") == 0;
    if (is_host) {
        struct prof_calibration cal;
        bool cached = false;
        int cst = cli_host_calibration(&o->calib, &cal, &cached);
        if (cst != PROF_OK || (cst = prof_device_host(&cal, &host)) !=
                                  PROF_OK) {
            return cli_prof_failed("calibrating the host", cst, NULL);
        }
    }
    struct tab pt = {0};
    tab_new(&pt, "predictions", pred_cols, pred_types,
            sizeof pred_cols / sizeof pred_cols[0]);
    const int first = measure ? optind : 0;
    const int last = measure ? argc : 1;
    int rc = CLI_EXIT_OK;
    const unsigned one_t = 1;
    const uint64_t one_b = 1;
    const unsigned *ths = o->nthreads ? o->threads : &one_t;
    const size_t nth = o->nthreads ? o->nthreads : 1;
    const uint64_t *bts = o->nbatches ? o->batches : &one_b;
    const size_t nbt = o->nbatches ? o->nbatches : 1;
    const bool progress = cli_progress_wanted(o->co.quiet);
    for (int a = first; a < last && rc == CLI_EXIT_OK; a++) {
        const char *spec = measure ? argv[a] : o->model;
        memest_model *m = NULL;
        rc = cli_model_load(spec, NULL, &m);
        if (rc != CLI_EXIT_OK) {
            break;
        }
        struct prof_dm_net net;
        if (prof_dm_net_from_model(m, &net) != PROF_OK) {
            memest_model_destroy(m);
            cli_error("out of memory (the layers of %s)", spec);
            rc = CLI_EXIT_FAILURE;
            break;
        }
        for (size_t bi = 0; bi < nbt && rc == CLI_EXIT_OK; bi++) {
            for (size_t ti = 0; ti < nth && rc == CLI_EXIT_OK; ti++) {
                struct prof_dm_case c = {&net, ths[ti], o->precision,
                                         bts[bi], 0.0,
                                         is_host ? &host : NULL};
                double ms = NAN, lo = NAN, hi = NAN, bound = NAN;
                double meas = NAN;
                int st = prof_dm_predict(dm, &c, &ms, &lo, &hi);
                if (st == PROF_OK) {
                    st = prof_dm_roofline_bound(&dm->device, &c, &bound);
                }
                if (st != PROF_OK) {
                    rc = cli_prof_failed("predicting", st, NULL);
                    break;
                }
                if (measure) {
                    char what[600];
                    snprintf(what, sizeof what, "timing %s, batch %" PRIu64
                             ", %u thread%s", spec, bts[bi], ths[ti],
                             ths[ti] > 1 ? "s" : "");
                    cli_progress(progress, 0, 1, what);
                    struct prof_diag pd = {0, ""};
                    st = time_model(m, ths[ti], o->precision, bts[bi],
                                    o->repeats, &meas, &pd);
                    if (st != PROF_OK) {
                        rc = cli_prof_failed(what, st, &pd);
                        break;
                    }
                }
                tab_row(&pt);
                tab_text(&pt, 0, spec);
                tab_text(&pt, 1, dm->device.name);
                tab_text(&pt, 2, dm->runtime);
                tab_uint(&pt, 3, ths[ti]);
                tab_text(&pt, 4, memest_precision_name(o->precision));
                tab_uint(&pt, 5, bts[bi]);
                tab_real(&pt, 6, meas);
                tab_real(&pt, 7, ms);
                tab_real(&pt, 8, lo);
                tab_real(&pt, 9, hi);
                tab_real(&pt, 10, bound);
                /* an error only between a prediction and a measurement of
                 * the same machine: the host's */
                tab_real(&pt, 11, measure ? (ms - meas) / meas : NAN);
            }
        }
        cli_progress(progress, 0, 0, NULL);
        prof_dm_net_free(&net);
        memest_model_destroy(m);
    }
    if (rc == CLI_EXIT_OK && pt.st != ART_OK) {
        cli_error("building the table: %s", art_strerror(pt.st));
        rc = CLI_EXIT_FAILURE;
    }
    if (rc == CLI_EXIT_OK) {
        const struct cli_output out = {.key = "predictions", .table = pt.t};
        if (o->co.out_dir) {
            rc = cli_write_outputs(o->co.out_dir, &out, 1, NULL);
        }
        if (rc == CLI_EXIT_OK) {
            rc = cli_emit(o->co.format, &out, 1);
        }
    }
    art_table_destroy(pt.t);
    return rc;
}

/* ---- main ------------------------------------------------------------- */

static bool set_mode(struct options *o, enum mode m, const char *opt)
{
    if (o->mode != MODE_NONE && o->mode != m) {
        cli_error("%s: give one of --fit, --measure, --predict, "
                  "--check-host", opt);
        return false;
    }
    o->mode = m;
    return true;
}

int main(int argc, char **argv)
{
    cli_set_program("edgefit-device");
    struct options o;
    memset(&o, 0, sizeof o);
    o.precision = MEMEST_FP32;
    o.repeats = 5;
    o.prior_sigma = DEFAULT_POOL_SIGMA;
    cli_calib_opts_init(&o.calib);
    static const struct option opts[] = {
        {"fit", no_argument, NULL, OPT_FIT},
        {"measure", no_argument, NULL, OPT_MEASURE},
        {"predict", no_argument, NULL, OPT_PREDICT},
        {"check-host", no_argument, NULL, OPT_CHECK_HOST},
        {"models", required_argument, NULL, OPT_MODELS},
        {"model", required_argument, NULL, OPT_MODEL},
        {"threads", required_argument, NULL, OPT_THREADS},
        {"batches", required_argument, NULL, OPT_BATCHES},
        {"precision", required_argument, NULL, OPT_PRECISION},
        {"repeats", required_argument, NULL, OPT_REPEATS},
        {"pool-sigma", required_argument, NULL, OPT_POOL_SIGMA},
        CLI_DEVICE_OPTIONS,
        CLI_CALIB_OPTIONS,
        CLI_QUIET_OPTION,
        CLI_COMMON_OPTIONS,
        {NULL, 0, NULL, 0},
    };
    int rc = cli_refuse_repeats(argc, argv, opts, NULL);
    if (rc != CLI_EXIT_OK) {
        return rc;
    }
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        char items[8][32];
        size_t n = 0;
        uint64_t v = 0;
        switch (c) {
        case OPT_FIT:
            if (!set_mode(&o, MODE_FIT, "--fit")) {
                return CLI_EXIT_USAGE;
            }
            break;
        case OPT_MEASURE:
            if (!set_mode(&o, MODE_MEASURE, "--measure")) {
                return CLI_EXIT_USAGE;
            }
            break;
        case OPT_PREDICT:
            if (!set_mode(&o, MODE_PREDICT, "--predict")) {
                return CLI_EXIT_USAGE;
            }
            break;
        case OPT_CHECK_HOST:
            if (!set_mode(&o, MODE_CHECK, "--check-host")) {
                return CLI_EXIT_USAGE;
            }
            break;
        case OPT_MODELS:
            o.models_dir = optarg;
            break;
        case OPT_MODEL:
            o.model = optarg;
            break;
        case OPT_THREADS:
            if (!cli_split_list("--threads", optarg, items, 8, &n)) {
                return CLI_EXIT_USAGE;
            }
            for (size_t i = 0; i < n; i++) {
                if (!cli_parse_u64("--threads", items[i], 1, 64, &v)) {
                    return CLI_EXIT_USAGE;
                }
                o.threads[i] = (unsigned)v;
            }
            o.nthreads = n;
            break;
        case OPT_BATCHES:
            if (!cli_split_list("--batches", optarg, items, 8, &n)) {
                return CLI_EXIT_USAGE;
            }
            for (size_t i = 0; i < n; i++) {
                if (!cli_parse_u64("--batches", items[i], 1, 65536,
                                   &o.batches[i])) {
                    return CLI_EXIT_USAGE;
                }
            }
            o.nbatches = n;
            break;
        case OPT_PRECISION:
            if (memest_precision_parse(optarg, &o.precision) != MEMEST_OK ||
                o.precision == MEMEST_FP64) {
                cli_error("--precision: '%s' is not fp32, fp16, bf16 or "
                          "int8", optarg);
                return CLI_EXIT_USAGE;
            }
            if (o.precision == MEMEST_INT8_DYNAMIC) {
                o.precision = MEMEST_INT8;
            }
            break;
        case OPT_POOL_SIGMA:
            if (!cli_parse_double("--pool-sigma", optarg, 0.0, 100.0,
                                  &o.prior_sigma)) {
                return CLI_EXIT_USAGE;
            }
            break;
        case OPT_REPEATS:
            if (!cli_parse_u64("--repeats", optarg, 1, 1000, &v)) {
                return CLI_EXIT_USAGE;
            }
            o.repeats = (unsigned)v;
            break;
        default:
            rc = cli_shared_option(c, &o.calib, &o.dev, &app, argv, &o.co);
            if (rc != CLI_EXIT_OK) {
                return rc;
            }
            break;
        }
    }
    if (o.dev.list) {
        return cli_devices_list_run(&o.dev, o.co.format);
    }
    o.runtime = o.dev.runtime;
    if (o.runtime && !runtime_known(o.runtime)) {
        cli_error("--runtime: '%s' is not one of edgefit, ncnn, "
                  "tflite-xnnpack, onnxruntime, pytorch, armnn",
                  o.runtime);
        return CLI_EXIT_USAGE;
    }
    if (o.mode == MODE_NONE) {
        cli_error("give --fit FILE..., --measure, --predict or --check-host "
                  "(--help)");
        return CLI_EXIT_USAGE;
    }
    if ((o.mode == MODE_MEASURE || o.mode == MODE_PREDICT) &&
        (rc = cli_no_operands(argc, argv)) != CLI_EXIT_OK) {
        return rc;
    }
    if ((rc = cli_out_check(o.co.out_dir)) != CLI_EXIT_OK) {
        return rc;
    }
    struct cli_devices devs;
    memset(&devs, 0, sizeof devs);
    if (o.dev.devices_file && !cli_devices_load(o.dev.devices_file, &devs)) {
        return CLI_EXIT_USAGE;
    }
    const struct cli_devices *dp = o.dev.devices_file ? &devs : NULL;
    switch (o.mode) {
    case MODE_FIT:
        rc = run_fit(argc, argv, &o, dp);
        break;
    case MODE_MEASURE:
        rc = run_measure(&o);
        break;
    case MODE_PREDICT:
        rc = run_predict(argc, argv, &o, dp, false);
        break;
    case MODE_CHECK:
        rc = run_predict(argc, argv, &o, dp, true);
        break;
    case MODE_NONE:
        break;
    }
    cli_devices_free(&devs);
    return rc == CLI_EXIT_OK ? cli_stdout_finish(ART_OK) : rc;
}
