#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "edgefit/kernels.h"
#include "edgefit/profile.h"
#include "internal.h"

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
}

static const char *const op_names[PROF_STREAM_OPERATORS] = {
    "input_normalization",
    "linear_projection",
    "activation",
    "decision_head",
};

/* Uniform in [-1, 1). */
static float next_unit(uint64_t *state)
{
    return (float)((double)(prof_splitmix64(state) >> 11) * 0x1.0p-52 - 1.0);
}

/* Everything one run needs; sizes in elements. */
struct stream {
    size_t b, f, h, o;
    enum prof_stream_act act;
    /* fp32 */
    float *x, *mean, *std, *xn, *w1, *b1, *hpre, *hact, *w2, *b2, *y;
    float *y_ref; /* the fp32 decision scores */
    /* fp16 storage */
    uint16_t *x16, *mean16, *std16, *xn16, *w1_16, *b1_16, *hpre16, *hact16,
        *w2_16, *b2_16, *y16;
    float *s_in, *s_w, *s_p1, *s_p2, *s_out; /* fp32 scratch */
    /* int8 */
    int8_t *xq, *hq, *w1q, *w2q;
    float *w1_scales, *w2_scales;
    void *w1p, *w2p;
    int32_t *acc1, *acc2;
    float x_scale, h_scale;
    int kernel_status;
};

static int checked_mul(size_t a, size_t b, size_t *out)
{
    if (a != 0 && b > SIZE_MAX / a) {
        return -1;
    }
    *out = a * b;
    return 0;
}

/* ---- fp32 operators ---------------------------------------------------- */

static void normalize(float *dst, const float *x, const float *mean,
                      const float *std, size_t b, size_t f)
{
    for (size_t i = 0; i < b; i++) {
        const float *xi = x + i * f;
        float *di = dst + i * f;
        for (size_t j = 0; j < f; j++) {
            di[j] = (xi[j] - mean[j]) / std[j];
        }
    }
}

static int kcheck(struct stream *s, int st)
{
    if (st != KERN_OK) {
        s->kernel_status = st;
        return -1;
    }
    return 0;
}

static int op_norm(void *ctx)
{
    struct stream *s = ctx;
    normalize(s->xn, s->x, s->mean, s->std, s->b, s->f);
    return 0;
}

/* Dense layer with weights [out][in] (PyTorch's layout): y = x W^T + b. */
static int dense(struct stream *s, const float *x, const float *w,
                 const float *bias, float *y, size_t in, size_t out)
{
    if (kcheck(s, kern_sgemm(KERN_MM_TRANS_B, s->b, out, in, x, in, w, in,
                             y, out)) != 0) {
        return -1;
    }
    return kcheck(s, kern_nn_bias_add_f32(y, s->b, out, bias));
}

static int op_proj(void *ctx)
{
    struct stream *s = ctx;
    return dense(s, s->xn, s->w1, s->b1, s->hpre, s->f, s->h);
}

static int activate(struct stream *s, float *dst, const float *src)
{
    const size_t n = s->b * s->h;
    if (s->act == PROF_STREAM_GELU) {
        return kcheck(s, kern_gelu_f32(dst, src, n));
    }
    return kcheck(s, kern_relu_f32(dst, src, n));
}

static int op_act(void *ctx)
{
    struct stream *s = ctx;
    return activate(s, s->hact, s->hpre);
}

static int op_head(void *ctx)
{
    struct stream *s = ctx;
    if (dense(s, s->hact, s->w2, s->b2, s->y, s->h, s->o) != 0) {
        return -1;
    }
    return kcheck(s, kern_sigmoid_f32(s->y, s->y, s->b * s->o));
}

/* ---- fp16 storage: widen, compute in fp32, narrow ---------------------- */

static int widen(struct stream *s, float *dst, const uint16_t *src, size_t n)
{
    return kcheck(s, kern_f16_to_f32(dst, src, n));
}

static int narrow(struct stream *s, uint16_t *dst, const float *src,
                  size_t n)
{
    return kcheck(s, kern_f32_to_f16(dst, src, n));
}

static int op_norm16(void *ctx)
{
    struct stream *s = ctx;
    const size_t n = s->b * s->f;
    if (widen(s, s->s_in, s->x16, n) || widen(s, s->s_p1, s->mean16, s->f) ||
        widen(s, s->s_p2, s->std16, s->f)) {
        return -1;
    }
    normalize(s->s_out, s->s_in, s->s_p1, s->s_p2, s->b, s->f);
    return narrow(s, s->xn16, s->s_out, n);
}

static int dense16(struct stream *s, const uint16_t *x, const uint16_t *w,
                   const uint16_t *bias, uint16_t *y, size_t in, size_t out)
{
    if (widen(s, s->s_in, x, s->b * in) || widen(s, s->s_w, w, in * out) ||
        widen(s, s->s_p1, bias, out)) {
        return -1;
    }
    if (dense(s, s->s_in, s->s_w, s->s_p1, s->s_out, in, out) != 0) {
        return -1;
    }
    return narrow(s, y, s->s_out, s->b * out);
}

static int op_proj16(void *ctx)
{
    struct stream *s = ctx;
    return dense16(s, s->xn16, s->w1_16, s->b1_16, s->hpre16, s->f, s->h);
}

static int op_act16(void *ctx)
{
    struct stream *s = ctx;
    const size_t n = s->b * s->h;
    if (widen(s, s->s_in, s->hpre16, n) || activate(s, s->s_out, s->s_in)) {
        return -1;
    }
    return narrow(s, s->hact16, s->s_out, n);
}

static int op_head16(void *ctx)
{
    struct stream *s = ctx;
    const size_t n = s->b * s->o;
    if (widen(s, s->s_in, s->hact16, s->b * s->h) ||
        widen(s, s->s_w, s->w2_16, s->h * s->o) ||
        widen(s, s->s_p1, s->b2_16, s->o)) {
        return -1;
    }
    if (dense(s, s->s_in, s->s_w, s->s_p1, s->s_out, s->h, s->o) != 0 ||
        kcheck(s, kern_sigmoid_f32(s->s_out, s->s_out, n)) != 0) {
        return -1;
    }
    return narrow(s, s->y16, s->s_out, n);
}

#define Q8_MAX_K 131071u

/* ---- int8: per-channel weights, per-tensor activations, int32 sums ---- */

static int op_norm8(void *ctx)
{
    struct stream *s = ctx;
    normalize(s->s_out, s->x, s->mean, s->std, s->b, s->f);
    return kcheck(s, kern_q8_quantize_f32(s->s_out, s->b * s->f, s->x_scale,
                                          s->xq));
}

static int op_proj8(void *ctx)
{
    struct stream *s = ctx;
    if (kcheck(s, kern_q8_gemm(s->b, s->h, s->f, s->xq, s->f, s->w1p,
                               s->acc1, s->h)) != 0) {
        return -1;
    }
    return kcheck(s, kern_q8_requant_f32(s->b, s->h, s->acc1, s->h,
                                         s->x_scale, s->w1_scales, s->b1, 0,
                                         s->hpre, s->h));
}

static int op_act8(void *ctx)
{
    struct stream *s = ctx;
    if (activate(s, s->s_out, s->hpre) != 0) {
        return -1;
    }
    return kcheck(s, kern_q8_quantize_f32(s->s_out, s->b * s->h, s->h_scale,
                                          s->hq));
}

static int op_head8(void *ctx)
{
    struct stream *s = ctx;
    if (kcheck(s, kern_q8_gemm(s->b, s->o, s->h, s->hq, s->h, s->w2p,
                               s->acc2, s->o)) != 0 ||
        kcheck(s, kern_q8_requant_f32(s->b, s->o, s->acc2, s->o, s->h_scale,
                                      s->w2_scales, s->b2, 0, s->y,
                                      s->o)) != 0) {
        return -1;
    }
    return kcheck(s, kern_sigmoid_f32(s->y, s->y, s->b * s->o));
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

/* ---- set-up ------------------------------------------------------------ */

static void stream_free(struct stream *s)
{
    void *all[] = {
        s->x, s->mean, s->std, s->xn, s->w1, s->b1, s->hpre, s->hact, s->w2,
        s->b2, s->y, s->x16, s->mean16, s->std16, s->xn16, s->w1_16,
        s->b1_16, s->hpre16, s->hact16, s->w2_16, s->b2_16, s->y16, s->s_in,
        s->s_w, s->s_p1, s->s_p2, s->s_out, s->xq, s->hq, s->w1q, s->w2q,
        s->w1_scales, s->w2_scales, s->w1p, s->w2p, s->acc1, s->acc2,
        s->y_ref,
    };
    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
        free(all[i]);
    }
}

static int alloc_all(struct stream *s)
{
    size_t bf, bh, bo, fh, ho;
    if (checked_mul(s->b, s->f, &bf) || checked_mul(s->b, s->h, &bh) ||
        checked_mul(s->b, s->o, &bo) || checked_mul(s->f, s->h, &fh) ||
        checked_mul(s->h, s->o, &ho)) {
        return PROF_E_OVERFLOW;
    }
    size_t big = bf;
    const size_t cand[] = {bh, bo, fh, ho, s->f, s->h};
    for (size_t i = 0; i < sizeof(cand) / sizeof(cand[0]); i++) {
        big = cand[i] > big ? cand[i] : big;
    }
    if (big > SIZE_MAX / sizeof(float) / 4u) {
        return PROF_E_OVERFLOW;
    }
#define F32(n) calloc((n), sizeof(float))
#define U16(n) calloc((n), sizeof(uint16_t))
    s->x = F32(bf);
    s->mean = F32(s->f);
    s->std = F32(s->f);
    s->xn = F32(bf);
    s->w1 = F32(fh);
    s->b1 = F32(s->h);
    s->hpre = F32(bh);
    s->hact = F32(bh);
    s->w2 = F32(ho);
    s->b2 = F32(s->o);
    s->y = F32(bo);
    s->y_ref = F32(bo);
    s->x16 = U16(bf);
    s->mean16 = U16(s->f);
    s->std16 = U16(s->f);
    s->xn16 = U16(bf);
    s->w1_16 = U16(fh);
    s->b1_16 = U16(s->h);
    s->hpre16 = U16(bh);
    s->hact16 = U16(bh);
    s->w2_16 = U16(ho);
    s->b2_16 = U16(s->o);
    s->y16 = U16(bo);
    s->s_in = F32(big);
    s->s_w = F32(big);
    s->s_p1 = F32(big);
    s->s_p2 = F32(big);
    s->s_out = F32(big);
    s->xq = calloc(bf, 1);
    s->hq = calloc(bh, 1);
    s->w1q = calloc(fh, 1);
    s->w2q = calloc(ho, 1);
    s->w1_scales = F32(s->h);
    s->w2_scales = F32(s->o);
    s->acc1 = calloc(bh, sizeof(int32_t));
    s->acc2 = calloc(bo, sizeof(int32_t));
#undef F32
#undef U16
    const size_t p1 = kern_q8_packed_bytes(s->h, s->f);
    const size_t p2 = kern_q8_packed_bytes(s->o, s->h);
    if (p1 == 0 || p2 == 0) {
        return PROF_E_OVERFLOW;
    }
    s->w1p = malloc(p1);
    s->w2p = malloc(p2);
    if (!s->x || !s->mean || !s->std || !s->xn || !s->w1 || !s->b1 ||
        !s->hpre || !s->hact || !s->w2 || !s->b2 || !s->y || !s->y_ref ||
        !s->x16 ||
        !s->mean16 || !s->std16 || !s->xn16 || !s->w1_16 || !s->b1_16 ||
        !s->hpre16 || !s->hact16 || !s->w2_16 || !s->b2_16 || !s->y16 ||
        !s->s_in || !s->s_w || !s->s_p1 || !s->s_p2 || !s->s_out ||
        !s->xq || !s->hq || !s->w1q || !s->w2q || !s->w1_scales ||
        !s->w2_scales || !s->acc1 || !s->acc2 || !s->w1p || !s->w2p) {
        return PROF_E_NOMEM;
    }
    return PROF_OK;
}

/* Weights uniform in +-1/sqrt(fan_in), PyTorch's default for a dense
 * layer; the fp16 and int8 copies are made from these. */
static int init_weights(struct stream *s, uint64_t seed)
{
    uint64_t st = seed;
    const float a1 = 1.0f / sqrtf((float)s->f);
    const float a2 = 1.0f / sqrtf((float)s->h);
    for (size_t i = 0; i < s->f * s->h; i++) {
        s->w1[i] = a1 * next_unit(&st);
    }
    for (size_t i = 0; i < s->h; i++) {
        s->b1[i] = a1 * next_unit(&st);
    }
    for (size_t i = 0; i < s->h * s->o; i++) {
        s->w2[i] = a2 * next_unit(&st);
    }
    for (size_t i = 0; i < s->o; i++) {
        s->b2[i] = a2 * next_unit(&st);
    }
    if (narrow(s, s->w1_16, s->w1, s->f * s->h) ||
        narrow(s, s->b1_16, s->b1, s->h) ||
        narrow(s, s->w2_16, s->w2, s->h * s->o) ||
        narrow(s, s->b2_16, s->b2, s->o) ||
        kcheck(s, kern_q8_quantize_channels_f32(s->w1, s->h, s->f, s->w1q,
                                                s->w1_scales)) ||
        kcheck(s, kern_q8_quantize_channels_f32(s->w2, s->o, s->h, s->w2q,
                                                s->w2_scales)) ||
        kcheck(s, kern_q8_pack_weights(s->w1q, s->h, s->f, s->f, s->w1p,
                                       kern_q8_packed_bytes(s->h, s->f))) ||
        kcheck(s, kern_q8_pack_weights(s->w2q, s->o, s->h, s->h, s->w2p,
                                       kern_q8_packed_bytes(s->o, s->h)))) {
        return PROF_E_KERNEL;
    }
    return PROF_OK;
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

static int time_ops(struct stream *s, prof_work_fn const fns[4],
                    const struct prof_time_opts *timing,
                    struct prof_stats stats[4])
{
    for (int i = 0; i < PROF_STREAM_OPERATORS; i++) {
        const int st = prof_time(fns[i], s, timing, &stats[i], NULL);
        if (st != PROF_OK) {
            return s->kernel_status != KERN_OK ? PROF_E_KERNEL : st;
        }
    }
    return PROF_OK;
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

    struct stream s;
    memset(&s, 0, sizeof(s));
    s.b = (size_t)opts->batch;
    s.f = (size_t)opts->feature_count;
    s.h = (size_t)opts->hidden;
    s.o = (size_t)opts->outputs;
    s.act = opts->activation;
    struct prof_stream_profile p;
    memset(&p, 0, sizeof(p));
    float *win = NULL;
    int st = alloc_all(&s);
    if (st != PROF_OK) {
        goto done;
    }
    const size_t rows = window_rows(s.b);
    size_t win_n;
    if (checked_mul(rows, s.f, &win_n) ||
        win_n > SIZE_MAX / sizeof(float)) {
        st = PROF_E_OVERFLOW;
        goto done;
    }
    win = malloc(win_n * sizeof(float));
    if (!win) {
        st = PROF_E_NOMEM;
        goto done;
    }
    p.data_source = "synthetic";
    if (opts->data == PROF_DATA_FASHION_MNIST ||
        opts->data == PROF_DATA_AUTO) {
        /* Auto falls back to the synthetic stream quietly, so the reason
         * goes to the caller only when Fashion-MNIST was asked for. */
        struct prof_diag why;
        memset(&why, 0, sizeof(why));
        st = fashion(win, rows, s.f, opts->data_dir, &why);
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
        synthetic(win, rows, s.f, opts->seed);
    }
    st = PROF_E_KERNEL;
    feature_stats(win, rows, s.f, s.mean, s.std);
    /* The batch is the newest rows of the window. */
    memcpy(s.x, win + (rows - s.b) * s.f, s.b * s.f * sizeof(float));
    if (init_weights(&s, opts->seed) != PROF_OK ||
        narrow(&s, s.x16, s.x, s.b * s.f) ||
        narrow(&s, s.mean16, s.mean, s.f) ||
        narrow(&s, s.std16, s.std, s.f)) {
        goto done;
    }

    /* One clean pass: the results, and the int8 activation scales
     * calibrated on them (static quantisation). */
    if (op_norm(&s) || op_proj(&s) || op_act(&s) || op_head(&s) ||
        kcheck(&s, kern_q8_scale_f32(s.xn, s.b * s.f, &s.x_scale)) ||
        kcheck(&s, kern_q8_scale_f32(s.hact, s.b * s.h, &s.h_scale))) {
        goto done;
    }
    p.first_score = s.y[0];

    static prof_work_fn const fp32_ops[4] = {op_norm, op_proj, op_act,
                                             op_head};
    static prof_work_fn const fp16_ops[4] = {op_norm16, op_proj16, op_act16,
                                             op_head16};
    static prof_work_fn const int8_ops[4] = {op_norm8, op_proj8, op_act8,
                                             op_head8};
    struct prof_stats st32[4], st16[4], st8[4];
    st = time_ops(&s, fp32_ops, &opts->timing, st32);
    if (st != PROF_OK) {
        goto done;
    }
    memcpy(s.y_ref, s.y, s.b * s.o * sizeof(float));
    /* kern_q8_gemm keeps its int32 sums exact up to K = 131071. */
    const bool int8_ok = s.f <= Q8_MAX_K && s.h <= Q8_MAX_K;
    p.fp16_max_abs_diff = NAN;
    p.int8_max_abs_diff = NAN;
    if (opts->measure_precisions) {
        st = time_ops(&s, fp16_ops, &opts->timing, st16);
        if (st != PROF_OK) {
            goto done;
        }
        if (widen(&s, s.s_out, s.y16, s.b * s.o) != 0) {
            st = PROF_E_KERNEL;
            goto done;
        }
        p.fp16_max_abs_diff = max_abs_diff(s.s_out, s.y_ref, s.b * s.o);
        if (int8_ok) {
            st = time_ops(&s, int8_ops, &opts->timing, st8);
            if (st != PROF_OK) {
                goto done;
            }
            p.int8_max_abs_diff = max_abs_diff(s.y, s.y_ref, s.b * s.o);
        }
    }

    const uint64_t B = opts->batch, F = opts->feature_count,
                   H = opts->hidden, O = opts->outputs;
    /* fp32 elements each operator touches (distinct buffers) and moves
     * (reads + writes). The decision head's sigmoid reads and writes its
     * output once more. */
    const uint64_t mem_el[4] = {
        2 * B * F + 2 * F,
        B * F + F * H + H + B * H,
        2 * B * H,
        B * H + H * O + O + B * O,
    };
    const uint64_t moved_el[4] = {
        2 * B * F + 2 * F,
        B * F + F * H + H + B * H,
        2 * B * H,
        B * H + H * O + O + B * O + 2 * B * O,
    };
    const uint64_t macs[4] = {B * F, B * F * H, B * H, B * H * O + B * O};
    uint64_t mem_total_el = 0;
    p.fp16_latency_ms = opts->measure_precisions ? 0.0 : NAN;
    p.int8_latency_ms = opts->measure_precisions && int8_ok ? 0.0 : NAN;
    p.host_peak_gmacs = cal->peak.gmacs;
    p.host_bandwidth_gbps = cal->triad.gbps;
    p.host_knee_mac_per_byte = cal->knee_mac_per_byte;
    for (int i = 0; i < PROF_STREAM_OPERATORS; i++) {
        struct prof_stream_op *op = &p.ops[i];
        op->operator_name = op_names[i];
        op->stats = st32[i];
        op->latency_ms = st32[i].median_ms;
        op->memory_kb = kib(4 * mem_el[i]);
        op->bytes_moved = 4 * moved_el[i];
        op->macs = macs[i];
        op->intensity_mac_per_byte =
            (double)op->macs / (double)op->bytes_moved;
        op->bound = op->intensity_mac_per_byte < cal->knee_mac_per_byte
                        ? PROF_BOUND_MEMORY
                        : PROF_BOUND_COMPUTE;
        op->fp16_latency_ms =
            opts->measure_precisions ? st16[i].median_ms : NAN;
        op->int8_latency_ms =
            opts->measure_precisions && int8_ok ? st8[i].median_ms : NAN;
        p.latency_ms += op->latency_ms;
        p.memory_kb += op->memory_kb;
        p.bytes_moved += op->bytes_moved;
        p.fp16_latency_ms += op->fp16_latency_ms;
        p.int8_latency_ms += op->int8_latency_ms;
        mem_total_el += mem_el[i];
    }
    p.feature_count = F;
    p.batch = B;
    p.hidden = H;
    p.outputs = O;
    p.stream_interval_ms = opts->stream_interval_ms;
    p.activation = opts->activation == PROF_STREAM_GELU ? "gelu" : "relu";
    const double latency_s = fmax(p.latency_ms / 1000.0, 1e-9);
    p.estimated_bandwidth_mb_s =
        (double)p.bytes_moved / latency_s / (1024.0 * 1024.0);
    p.stream_utilization = fmin(1.0, p.latency_ms / p.stream_interval_ms);
    p.fp32_latency_ms = p.latency_ms;
    p.fp32_memory_kb = kib(4 * mem_total_el);
    p.fp16_memory_kb = kib(2 * mem_total_el);
    p.int8_memory_kb = kib(mem_total_el);
    /* Working set: every distinct fp32 buffer of one batch. */
    const uint64_t fixed = 4 * (2 * F + F * H + H + H * O + O);
    const uint64_t per_sample = 4 * (2 * F + 2 * H + O);
    describe(&p, cal, fixed, per_sample);
    *out = p;
    st = PROF_OK;
done:
    free(win);
    stream_free(&s);
    return st;
}
