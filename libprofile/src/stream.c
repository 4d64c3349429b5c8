/* The stream profile (the original streaming profile, measured): what is
 * the stream's own. Its data (a window of Fashion-MNIST pixels or of a
 * seeded sensor-like signal, whose statistics normalise the batch), its
 * parameters, the model of its four operators, and the figures made from
 * their measurements: the totals, the share of the stream interval, the
 * precision memories and the edge-constraint sentences. The operators
 * themselves run on libprofile's executor, as every other workflow's. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "edgefit/memest.h"
#include "edgefit/profile.h"
#include "internal.h"
#include "alloc_rec.h" /* last: it wraps malloc and co. */

PROF_API void prof_stream_opts_init(struct prof_stream_opts *opts)
{
    if (!opts) {
        return;
    }
    memset(opts, 0, sizeof(*opts));
    opts->feature_count = 64;
    opts->batch = 32;
    opts->hidden = 64;
    opts->outputs = 1;
    opts->stream_interval_ms = 10.0;
    opts->activation = PROF_STREAM_RELU;
    opts->data = PROF_DATA_AUTO;
    opts->data_dir = NULL;
    opts->seed = 42;
    prof_time_opts_init(&opts->timing);
    /* Each operator takes microseconds: many repeats cost little and make
     * the median stable on a busy machine. */
    opts->timing.warmup = 3;
    opts->timing.repeats = 50;
    opts->timing.min_sample_ms = 0.05;
    opts->measure_precisions = true;
    opts->threads = 1;
}

static const char *const op_names[PROF_STREAM_OPERATORS] = {
    "input_normalization",
    "linear_projection",
    "activation",
    "decision_head",
};

/* kern_q8_gemm keeps its int32 sums exact up to K = 131071: longer int8
 * products are not run. */
#define Q8_MAX_K 131071u

/* Uniform in [-1, 1). */
static float next_unit(uint64_t *state)
{
    return (float)((double)(prof_splitmix64(state) >> 11) * 0x1.0p-52 - 1.0);
}

static int checked_mul(size_t a, size_t b, size_t *out)
{
    if (a != 0 && b > SIZE_MAX / a) {
        return -1;
    }
    *out = a * b;
    return 0;
}

/* ---- data -------------------------------------------------------------- */

/* Rows of the window the normalisation statistics come from: the batch or
 * more, so a batch of one still has a meaningful mean and spread. */
static size_t window_rows(size_t batch)
{
    return batch > 256 ? batch : 256;
}

/* A sensor-like stream: each feature a sine of its own period and phase
 * plus noise, a slow drift shared by all. Deterministic in seed. */
static void synthetic(float *win, size_t rows, size_t f, uint64_t seed)
{
    uint64_t st = seed ^ UINT64_C(0x5eed5eed5eed5eed);
    for (size_t j = 0; j < f; j++) {
        const double period = 8.0 + (double)(prof_splitmix64(&st) % 120u);
        const double phase = 6.283185307179586 * (double)next_unit(&st);
        const double gain = 0.5 + (double)(prof_splitmix64(&st) % 1000u) / 500.0;
        for (size_t t = 0; t < rows; t++) {
            const double v = gain * sin(6.283185307179586 * (double)t /
                                            period + phase) +
                             0.1 * (double)next_unit(&st) +
                             0.001 * (double)t;
            win[t * f + j] = (float)v;
        }
    }
}

/* Pixels / 255 of the first rows images; feature j is pixel
 * floor(j * pixels / f), so a few features still span the whole image. */
static int fashion(float *win, size_t rows, size_t f, const char *dir,
                   struct prof_diag *diag)
{
    char path[4096];
    if (prof_idx_path(path, sizeof(path),
                      dir ? dir : prof_dataset_default_dir(), "train",
                      "images-idx3-ubyte") != 0) {
        snprintf(diag->message, sizeof(diag->message),
                 "data folder name too long");
        return PROF_E_RANGE;
    }
    struct prof_idx_images img;
    int st = prof_idx_load_images(path, rows, &img, diag);
    if (st != PROF_OK) {
        return st;
    }
    const size_t pix = (size_t)(img.rows * img.cols);
    st = PROF_E_RANGE;
    if (f > pix) {
        snprintf(diag->message, sizeof(diag->message),
                 "%.120s: %zu features asked for, but an image has %zu pixels",
                 path, f, pix);
        goto done;
    }
    if (img.count < rows) {
        snprintf(diag->message, sizeof(diag->message),
                 "%.120s: %zu images needed for the statistics window, the "
                 "file holds %" PRIu64, path, rows, img.count);
        goto done;
    }
    for (size_t t = 0; t < rows; t++) {
        for (size_t j = 0; j < f; j++) {
            const size_t p = j * pix / f;
            win[t * f + j] = (float)img.pixels[t * pix + p] / 255.0f;
        }
    }
    st = PROF_OK;
done:
    prof_idx_images_finish(&img);
    return st;
}

/* Per-feature mean and standard deviation over the window (double sums).
 * A constant feature (a border pixel) keeps std 1 so that it normalises to
 * 0 instead of NaN. */
static void feature_stats(const float *win, size_t rows, size_t f,
                          float *mean, float *std)
{
    for (size_t j = 0; j < f; j++) {
        double sum = 0.0;
        for (size_t t = 0; t < rows; t++) {
            sum += win[t * f + j];
        }
        const double m = sum / (double)rows;
        double ss = 0.0;
        for (size_t t = 0; t < rows; t++) {
            const double d = win[t * f + j] - m;
            ss += d * d;
        }
        const double sd = sqrt(ss / (double)rows);
        mean[j] = (float)m;
        std[j] = sd > 1e-6 ? (float)sd : 1.0f;
    }
}

/* ---- the profile ------------------------------------------------------- */

static double kib(uint64_t bytes)
{
    return (double)bytes / 1024.0;
}

static void describe_cache(struct prof_stream_profile *p,
                           const struct prof_calibration *cal,
                           uint64_t fixed_bytes, uint64_t per_sample_bytes)
{
    const uint64_t ws = fixed_bytes + per_sample_bytes * p->batch;
    const uint64_t sizes[3] = {cal->l1_bytes, cal->l2_bytes, cal->l3_bytes};
    int level = 0;
    for (int i = 0; i < 3; i++) {
        if (sizes[i] != 0 && ws <= sizes[i]) {
            level = i + 1;
            break;
        }
    }
    if (level == 0) {
        snprintf(p->cache_sensitivity, sizeof(p->cache_sensitivity),
                 "the working set of %.1f KiB (batch %llu x %llu features, "
                 "%.1f KiB of weights) exceeds every cache level known "
                 "(L3 %.0f KiB): each batch streams from memory, so a "
                 "smaller batch or fp16/int8 storage (%.1f / %.1f KiB) "
                 "shortens it",
                 kib(ws), (unsigned long long)p->batch,
                 (unsigned long long)p->feature_count, kib(fixed_bytes),
                 kib(sizes[2]), kib(ws) / 2.0, kib(ws) / 4.0);
        return;
    }
    const uint64_t cache = sizes[level - 1];
    const uint64_t max_batch =
        cache > fixed_bytes ? (cache - fixed_bytes) / per_sample_bytes : 0;
    const char *lower = "";
    char lower_buf[120] = "";
    if (level > 1 && sizes[level - 2] != 0) {
        snprintf(lower_buf, sizeof(lower_buf), " but not in L%d (%.0f KiB)",
                 level - 1, kib(sizes[level - 2]));
        lower = lower_buf;
    }
    snprintf(p->cache_sensitivity, sizeof(p->cache_sensitivity),
             "the working set of %.1f KiB (batch %llu x %llu features, "
             "%.1f KiB of weights) fits in L%d (%.0f KiB)%s; batches up to "
             "%llu stay in L%d; the weights are %.0f%% of it, %.3f KiB per "
             "sample at this batch, a share that grows as the batch "
             "shrinks",
             kib(ws), (unsigned long long)p->batch,
             (unsigned long long)p->feature_count, kib(fixed_bytes), level,
             kib(cache), lower, (unsigned long long)max_batch, level,
             100.0 * (double)fixed_bytes / (double)ws,
             kib(fixed_bytes) / (double)p->batch);
}

static void describe(struct prof_stream_profile *p,
                     const struct prof_calibration *cal,
                     uint64_t fixed_bytes, uint64_t per_sample_bytes)
{
    size_t top = 0;
    unsigned memory_bound = 0;
    const uint64_t stream_ws = fixed_bytes + per_sample_bytes * p->batch;
    struct prof_device roofs;
    const bool have_roofs = prof_device_host(cal, &roofs) == PROF_OK;
    for (size_t i = 0; i < PROF_STREAM_OPERATORS; i++) {
        struct prof_stream_op *op = &p->ops[i];
        /* Each operator is judged against the roof of the level that
         * holds the stream's working set (or the faster one it beat), as
         * the sentence below judges the slowest: the table's bound and the
         * sentence cannot disagree. */
        unsigned lvl = 0;
        double op_roof = p->host_bandwidth_gbps;
        const double op_gbps =
            op->latency_ms > 0.0
                ? (double)op->bytes_moved / op->latency_ms / 1e6
                : 0.0;
        if (!have_roofs || prof_bandwidth_roof(&roofs, stream_ws, op_gbps,
                                               &lvl, &op_roof) != PROF_OK) {
            op_roof = p->host_bandwidth_gbps;
        }
        if (op_roof > 0.0) {
            op->bound = op->intensity_mac_per_byte <
                                p->host_peak_gmacs / op_roof
                            ? PROF_BOUND_MEMORY
                            : PROF_BOUND_COMPUTE;
        }
        if (op->latency_ms > p->ops[top].latency_ms) {
            top = i;
        }
        memory_bound += op->bound == PROF_BOUND_MEMORY;
    }
    const struct prof_stream_op *t = &p->ops[top];
    const double share =
        p->latency_ms > 0.0 ? 100.0 * t->latency_ms / p->latency_ms : 0.0;
    const double achieved_gbps =
        t->latency_ms > 0.0 ? (double)t->bytes_moved / t->latency_ms / 1e6
                            : 0.0;
    const double achieved_gmacs =
        t->latency_ms > 0.0 ? (double)t->macs / t->latency_ms / 1e6 : 0.0;
    /* The roof is the bandwidth of the level that holds the working set
     * (or a faster one when the operator beat it: prof_bandwidth_roof),
     * the knee is the peak over that roof, and the verdict, the knee and
     * both shares are all said against that one roof, so the sentence
     * cannot call an operator compute-bound and memory-bound at once, and
     * no share exceeds 100%. */
    const uint64_t ws = fixed_bytes + per_sample_bytes * p->batch;
    struct prof_device host;
    unsigned level = 0;
    double roof = p->host_bandwidth_gbps;
    if (prof_device_host(cal, &host) != PROF_OK ||
        prof_bandwidth_roof(&host, ws, achieved_gbps, &level, &roof) !=
            PROF_OK) {
        level = 0;
        roof = p->host_bandwidth_gbps;
    }
    static const char *const level_names[] = {"main memory", "L1", "L2",
                                              "L3"};
    const double knee = roof > 0.0 ? p->host_peak_gmacs / roof : 0.0;
    const int mem = t->intensity_mac_per_byte < knee;
    const double peak_share =
        p->host_peak_gmacs > 0.0
            ? fmin(1.0, achieved_gmacs / p->host_peak_gmacs)
            : 0.0;
    const double roof_share = roof > 0.0 ? fmin(1.0, achieved_gbps / roof)
                                         : 0.0;
    snprintf(p->bottleneck, sizeof(p->bottleneck),
             "%s dominates with %.4f ms of %.4f ms (%.0f%%); its working set "
             "of %.1f KiB is served by %s at %.2f GB/s, where the knee is "
             "%.2f MAC/byte: at %.2f MAC/byte it is %s-bound; it achieved "
             "%.2f GMAC/s (%.0f%% of the %.1f GMAC/s peak) and %.2f GB/s "
             "(%.0f%% of the %s roof)",
             t->operator_name, t->latency_ms, p->latency_ms, share,
             (double)ws / 1024.0, level_names[level < 4 ? level : 0], roof,
             knee, t->intensity_mac_per_byte,
             mem ? "memory" : "compute", achieved_gmacs, 100.0 * peak_share,
             p->host_peak_gmacs, achieved_gbps, 100.0 * roof_share,
             level_names[level < 4 ? level : 0]);
    (void)memory_bound;
    const double left = p->stream_interval_ms - p->latency_ms;
    const double rate = p->latency_ms > 0.0 ? 1000.0 / p->latency_ms : 0.0;
    if (left >= 0.0) {
        snprintf(p->headroom, sizeof(p->headroom),
                 "one batch of %llu takes %.4f ms of the %.3f ms interval "
                 "(%.2f%%), leaving %.4f ms; the host keeps up with "
                 "intervals down to %.4f ms (%.0f batches/s, %.0f "
                 "samples/s)",
                 (unsigned long long)p->batch, p->latency_ms,
                 p->stream_interval_ms, 100.0 * p->stream_utilization, left,
                 p->latency_ms, rate, rate * (double)p->batch);
    } else {
        snprintf(p->headroom, sizeof(p->headroom),
                 "one batch of %llu takes %.4f ms, %.4f ms more than the "
                 "%.3f ms interval: the stream falls behind unless the "
                 "batch, the features or the hidden width shrink by a "
                 "factor of %.2f",
                 (unsigned long long)p->batch, p->latency_ms, -left,
                 p->stream_interval_ms,
                 p->latency_ms / p->stream_interval_ms);
    }
    describe_cache(p, cal, fixed_bytes, per_sample_bytes);
}

static double max_abs_diff(const float *a, const float *b, size_t n)
{
    double m = 0.0;
    for (size_t i = 0; i < n; i++) {
        const double d = fabs((double)a[i] - (double)b[i]);
        m = d > m || isnan(d) ? d : m;
    }
    return m;
}

/* The streaming model as a libmemest model: the four operators are its
 * layers, by name. The normalisation is a standalone batchnorm over the
 * features (scale 1 / std, shift -mean / std), the projection a dense
 * layer, the activation a layer of its own, the head a dense layer with a
 * fused sigmoid. */
static int stream_model(uint64_t f, uint64_t h, uint64_t o,
                        enum prof_stream_act act, memest_model **out,
                        struct prof_diag *diag)
{
    char text[512];
    snprintf(text, sizeof text,
             "name stream\n"
             "input %" PRIu64 "\n"
             "batchnorm name=%s\n"
             "dense %" PRIu64 " name=%s\n"
             "%s name=%s\n"
             "dense %" PRIu64 " act=sigmoid name=%s\n",
             f, op_names[0], h, op_names[1],
             act == PROF_STREAM_GELU ? "gelu" : "relu", op_names[2], o,
             op_names[3]);
    struct memest_diag md;
    const int st = memest_model_parse(text, out, &md);
    if (st == MEMEST_OK) {
        return PROF_OK;
    }
    if (diag) {
        snprintf(diag->message, sizeof diag->message,
                 "the stream's model: %.200s", md.message);
    }
    return prof_of_memest(st);
}

/* The parameters every precision runs: normalisation from the window's
 * statistics; dense weights and biases uniform in +-1/sqrt(fan_in),
 * PyTorch's default for a dense layer, in its [out][in] layout. */
struct stream_params {
    float *scale, *shift, *w1, *b1, *w2, *b2;
};

static void params_free(struct stream_params *q)
{
    free(q->scale);
    free(q->shift);
    free(q->w1);
    free(q->b1);
    free(q->w2);
    free(q->b2);
}

static int params_make(struct stream_params *q, const float *mean,
                       const float *std, size_t f, size_t h, size_t o,
                       uint64_t seed)
{
    size_t fh, ho;
    if (checked_mul(f, h, &fh) || checked_mul(h, o, &ho)) {
        return PROF_E_OVERFLOW;
    }
    q->scale = malloc(f * sizeof(float));
    q->shift = malloc(f * sizeof(float));
    q->w1 = malloc(fh * sizeof(float));
    q->b1 = malloc(h * sizeof(float));
    q->w2 = malloc(ho * sizeof(float));
    q->b2 = malloc(o * sizeof(float));
    if (!q->scale || !q->shift || !q->w1 || !q->b1 || !q->w2 || !q->b2) {
        return PROF_E_NOMEM;
    }
    for (size_t j = 0; j < f; j++) {
        q->scale[j] = 1.0f / std[j];
        q->shift[j] = -mean[j] / std[j];
    }
    uint64_t st = seed;
    const float a1 = 1.0f / sqrtf((float)f);
    const float a2 = 1.0f / sqrtf((float)h);
    for (size_t i = 0; i < fh; i++) {
        q->w1[i] = a1 * next_unit(&st);
    }
    for (size_t i = 0; i < h; i++) {
        q->b1[i] = a1 * next_unit(&st);
    }
    for (size_t i = 0; i < ho; i++) {
        q->w2[i] = a2 * next_unit(&st);
    }
    for (size_t i = 0; i < o; i++) {
        q->b2[i] = a2 * next_unit(&st);
    }
    return PROF_OK;
}

/* One precision: an executor with the stream's parameters, one pass for
 * the scores (y), then the executor's profile (forward passes, then each
 * operator alone). *mem receives the executor's memory. */
static int run_precision(const memest_model *m,
                         const struct prof_stream_opts *opts,
                         enum memest_precision prec,
                         const struct stream_params *q, const float *x,
                         size_t nx, float *y, size_t ny,
                         struct prof_exec_profile *prof,
                         struct prof_exec_memory *mem,
                         struct prof_diag *diag)
{
    const size_t f = (size_t)opts->feature_count, h = (size_t)opts->hidden,
                 o = (size_t)opts->outputs;
    struct prof_exec_opts eo;
    prof_exec_opts_init(&eo);
    eo.batch = opts->batch;
    eo.precision = prec;
    eo.seed = opts->seed;
    eo.threads = opts->threads ? opts->threads : 1;
    prof_exec *ex = NULL;
    int st = prof_exec_create(m, &eo, &ex, diag);
    if (st == PROF_OK) {
        st = prof_exec_set_params(ex, 0, q->scale, f, q->shift, f);
    }
    if (st == PROF_OK) {
        st = prof_exec_set_params(ex, 1, q->w1, f * h, q->b1, h);
    }
    if (st == PROF_OK) {
        st = prof_exec_set_params(ex, 3, q->w2, h * o, q->b2, o);
    }
    if (st == PROF_OK) {
        st = prof_exec_run(ex, x, nx, y, ny);
    }
    if (st == PROF_OK) {
        st = prof_exec_profile(ex, x, nx, &opts->timing, prof);
    }
    if (st == PROF_OK) {
        st = prof_exec_memory(ex, mem);
    }
    prof_exec_destroy(ex);
    return st;
}

PROF_API void prof_stream_exec_view(const struct prof_stream_profile *p,
                                    struct prof_exec_profile *out)
{
    if (!out) {
        return;
    }
    memset(out, 0, sizeof *out);
    if (!p) {
        return;
    }
    out->count = PROF_STREAM_OPERATORS + 1;
    out->ops = (struct prof_exec_op_row *)p->exec_ops;
    out->forward_ms = p->forward_ms;
    out->precision = MEMEST_FP32;
    double sum = 0.0;
    for (size_t i = 0; i < out->count; i++) {
        sum += p->exec_ops[i].latency_ms;
    }
    out->operator_sum_ms = sum;
    out->framing_ms = p->forward_ms - sum;
}

PROF_API int prof_stream_profile(const struct prof_stream_opts *opts,
                                 const struct prof_calibration *cal,
                                 struct prof_stream_profile *out,
                                 struct prof_diag *diag)
{
    if (!opts || !out) {
        return PROF_E_INVALID;
    }
    if (opts->feature_count == 0 || opts->batch == 0 || opts->hidden == 0 ||
        opts->outputs == 0 || !isfinite(opts->stream_interval_ms) ||
        opts->stream_interval_ms <= 0.0 || opts->timing.repeats == 0 ||
        opts->threads > 64 ||
        (opts->activation != PROF_STREAM_RELU &&
         opts->activation != PROF_STREAM_GELU) ||
        (opts->data != PROF_DATA_AUTO && opts->data != PROF_DATA_SYNTHETIC &&
         opts->data != PROF_DATA_FASHION_MNIST)) {
        return PROF_E_RANGE;
    }
    /* 2^28 elements per dimension keeps every product below in 64 bits
     * and the per-tensor byte counts in double exactly. */
    const uint64_t lim = UINT64_C(1) << 28;
    if (opts->feature_count > lim || opts->batch > lim ||
        opts->hidden > lim || opts->outputs > lim) {
        return PROF_E_OVERFLOW;
    }
    struct prof_calibration local;
    if (!cal) {
        const int st = prof_host_calibration(&local);
        if (st != PROF_OK) {
            return st;
        }
        cal = &local;
    }

    const size_t B = (size_t)opts->batch, F = (size_t)opts->feature_count,
                 H = (size_t)opts->hidden, O = (size_t)opts->outputs;
    struct prof_stream_profile p;
    memset(&p, 0, sizeof(p));
    struct stream_params q;
    memset(&q, 0, sizeof q);
    memest_model *m = NULL;
    struct prof_exec_profile prof32, prof16, prof8;
    memset(&prof32, 0, sizeof prof32);
    memset(&prof16, 0, sizeof prof16);
    memset(&prof8, 0, sizeof prof8);
    float *win = NULL, *mean = NULL, *sd = NULL, *y32 = NULL, *yq = NULL;
    size_t win_n, bo;
    const size_t rows = window_rows(B);
    int st = PROF_E_OVERFLOW;
    if (checked_mul(rows, F, &win_n) || win_n > SIZE_MAX / sizeof(float) ||
        checked_mul(B, O, &bo)) {
        goto done;
    }
    st = PROF_E_NOMEM;
    win = malloc(win_n * sizeof(float));
    mean = malloc(F * sizeof(float));
    sd = malloc(F * sizeof(float));
    y32 = malloc(bo * sizeof(float));
    yq = malloc(bo * sizeof(float));
    if (!win || !mean || !sd || !y32 || !yq) {
        goto done;
    }
    p.data_source = "synthetic";
    if (opts->data == PROF_DATA_FASHION_MNIST ||
        opts->data == PROF_DATA_AUTO) {
        /* Auto falls back to the synthetic stream quietly, so the reason
         * goes to the caller only when Fashion-MNIST was asked for. */
        struct prof_diag why;
        memset(&why, 0, sizeof(why));
        st = fashion(win, rows, F, opts->data_dir, &why);
        if (st == PROF_OK) {
            p.data_source = "fashion-mnist";
        } else if (opts->data == PROF_DATA_FASHION_MNIST) {
            if (diag) {
                *diag = why;
            }
            goto done;
        }
    }
    if (strcmp(p.data_source, "synthetic") == 0) {
        synthetic(win, rows, F, opts->seed);
    }
    feature_stats(win, rows, F, mean, sd);
    /* The batch is the newest rows of the window. */
    const float *x = win + (rows - B) * F;
    const size_t nx = B * F;
    if ((st = params_make(&q, mean, sd, F, H, O, opts->seed)) != PROF_OK ||
        (st = stream_model(F, H, O, opts->activation, &m, diag)) !=
            PROF_OK) {
        goto done;
    }

    /* fp32, then fp16 storage and int8-dynamic (per-batch scales: the
     * stream has no calibration) through the same executor. */
    struct prof_exec_memory mem32, memq;
    st = run_precision(m, opts, MEMEST_FP32, &q, x, nx, y32, bo, &prof32,
                       &mem32, diag);
    if (st != PROF_OK) {
        goto done;
    }
    p.first_score = y32[0];
    /* kern_q8_gemm keeps its int32 sums exact up to K = 131071. */
    const bool int8_ok = F <= Q8_MAX_K && H <= Q8_MAX_K;
    p.fp16_max_abs_diff = NAN;
    p.int8_max_abs_diff = NAN;
    if (opts->measure_precisions) {
        st = run_precision(m, opts, MEMEST_FP16, &q, x, nx, yq, bo, &prof16,
                           &memq, diag);
        if (st != PROF_OK) {
            goto done;
        }
        p.fp16_max_abs_diff = max_abs_diff(yq, y32, bo);
        if (int8_ok) {
            st = run_precision(m, opts, MEMEST_INT8_DYNAMIC, &q, x, nx, yq, bo,
                               &prof8, &memq, diag);
            if (st != PROF_OK) {
                goto done;
            }
            p.int8_max_abs_diff = max_abs_diff(yq, y32, bo);
        }
    }

    uint64_t mem_total_bytes = 0;
    p.fp16_latency_ms = opts->measure_precisions ? 0.0 : NAN;
    p.int8_latency_ms = opts->measure_precisions && int8_ok ? 0.0 : NAN;
    p.host_peak_gmacs = cal->peak.gmacs;
    p.host_bandwidth_gbps = cal->triad.gbps;
    p.host_knee_mac_per_byte = cal->knee_mac_per_byte;
    p.forward_ms = prof32.forward_ms;
    p.threads = opts->threads ? opts->threads : 1;
    memcpy(p.exec_ops, prof32.ops, sizeof p.exec_ops);
    /* the layer names belong to the model, released below: the rows take
     * the same names from static storage */
    for (int i = 0; i < PROF_STREAM_OPERATORS; i++) {
        p.exec_ops[i + 1].info.layer = op_names[i];
    }
    for (int i = 0; i < PROF_STREAM_OPERATORS; i++) {
        /* row 0 of the executor's profile stages the input */
        const struct prof_exec_op_row *r = &prof32.ops[i + 1];
        struct prof_stream_op *op = &p.ops[i];
        op->operator_name = op_names[i];
        op->stats = r->stats;
        op->latency_ms = r->latency_ms;
        op->memory_kb = r->memory_kb;
        op->bytes_moved = r->info.bytes_moved;
        op->macs = r->info.macs;
        op->threads = r->info.threads;
        op->intensity_mac_per_byte =
            (double)op->macs / (double)op->bytes_moved;
        op->bound = op->intensity_mac_per_byte < cal->knee_mac_per_byte
                        ? PROF_BOUND_MEMORY
                        : PROF_BOUND_COMPUTE;
        op->fp16_latency_ms =
            opts->measure_precisions ? prof16.ops[i + 1].latency_ms : NAN;
        op->int8_latency_ms = opts->measure_precisions && int8_ok
                                  ? prof8.ops[i + 1].latency_ms
                                  : NAN;
        p.latency_ms += op->latency_ms;
        p.memory_kb += op->memory_kb;
        p.bytes_moved += op->bytes_moved;
        p.fp16_latency_ms += op->fp16_latency_ms;
        p.int8_latency_ms += op->int8_latency_ms;
        /* the tensors and parameters it touches, stored in fp32 */
        mem_total_bytes += r->info.bytes_moved;
    }
    p.feature_count = opts->feature_count;
    p.batch = opts->batch;
    p.hidden = opts->hidden;
    p.outputs = opts->outputs;
    p.stream_interval_ms = opts->stream_interval_ms;
    p.activation = opts->activation == PROF_STREAM_GELU ? "gelu" : "relu";
    const double latency_s = fmax(p.latency_ms / 1000.0, 1e-9);
    p.estimated_bandwidth_mb_s =
        (double)p.bytes_moved / latency_s / (1024.0 * 1024.0);
    p.latency_over_interval = p.latency_ms / p.stream_interval_ms;
    p.stream_utilization = fmin(1.0, p.latency_over_interval);
    p.fp32_latency_ms = p.latency_ms;
    /* the original's trade-off: the same elements at 4, 2 and 1 bytes */
    p.fp32_memory_kb = kib(mem_total_bytes);
    p.fp16_memory_kb = kib(mem_total_bytes / 2);
    p.int8_memory_kb = kib(mem_total_bytes / 4);
    /* Working set: the executor's stored parameters and its activation
     * arena, which grows with the batch. */
    const uint64_t per_sample =
        (mem32.arena_bytes + (uint64_t)B - 1) / (uint64_t)B;
    describe(&p, cal, mem32.parameter_bytes, per_sample);
    *out = p;
    st = PROF_OK;
done:
    prof_exec_profile_finish(&prof32);
    prof_exec_profile_finish(&prof16);
    prof_exec_profile_finish(&prof8);
    memest_model_destroy(m);
    params_free(&q);
    free(win);
    free(mean);
    free(sd);
    free(y32);
    free(yq);
    return st;
}
