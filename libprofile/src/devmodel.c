/* The device model: the roofline with fitted per-class efficiencies, a
 * per-layer overhead and an Amdahl thread curve (profile.h, "Device
 * model"), and its least-squares fit on log time. */
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "edgefit/profile.h"
#include "exec/executor.h"
#include "exec/ops.h"
#include "alloc_rec.h" /* last: it wraps malloc and co. */

static void diag_set(struct prof_diag *diag, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void diag_set(struct prof_diag *diag, const char *fmt, ...)
{
    if (!diag) {
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    diag->column = 0;
    vsnprintf(diag->message, sizeof(diag->message), fmt, ap);
    va_end(ap);
}

static const char *const class_names[PROF_OPC_COUNT] = {
    "depthwise", "pointwise", "conv3x3", "conv_other",
    "gemm",      "elementwise", "pool",  "other",
};

static const char *const param_names[PROF_DM_PARAM_COUNT] = {
    "eff_depthwise",  "eff_pointwise", "eff_conv3x3",
    "eff_conv_other", "eff_gemm",      "eff_bandwidth",
    "overhead_ms",    "parallel_fraction", "int8_speedup",
    "f16_speedup",    "reduction_half", "int8_speedup_conv3x3",
    "run_overhead_ms", "winograd_channels", "eff_pool",
};

const char *prof_op_class_name(enum prof_op_class c)
{
    return (unsigned)c < PROF_OPC_COUNT ? class_names[c] : NULL;
}

const char *prof_dm_param_name(enum prof_dm_param k)
{
    return (unsigned)k < PROF_DM_PARAM_COUNT ? param_names[k] : NULL;
}

static enum prof_op_class conv_class(const struct memest_layer *l)
{
    const uint64_t in_c = l->in_shape.rank == 3 ? l->in_shape.dim[0] : 0;
    const uint64_t out_c = l->out_shape.rank == 3 ? l->out_shape.dim[0] : 0;
    if (l->groups > 1 && l->groups == in_c) {
        return PROF_OPC_DEPTHWISE;
    }
    /* A grouped 1x1 (ShuffleNet) is groups small 1x1 GEMMs: pointwise,
     * with its shorter reduction (in_c / groups) charged by the
     * reduction term, not the class of 7x7 stems and strided convs. */
    if (l->kernel_h == 1 && l->kernel_w == 1) {
        return PROF_OPC_POINTWISE;
    }
    if (l->groups > 1) {
        return PROF_OPC_CONV_OTHER;
    }
    /* ncnn's rule for Winograd (src/layer/arm/convolution_arm.cpp,
     * prefer_winograd): 3x3, stride and dilation 1, at least 8 input or
     * output channels. */
    if (l->kernel_h == 3 && l->kernel_w == 3 && l->stride_h == 1 &&
        l->stride_w == 1 && l->dilation_h <= 1 && l->dilation_w <= 1 &&
        (in_c >= 8 || out_c >= 8)) {
        return PROF_OPC_CONV3X3;
    }
    /* Any other dense convolution of 8 or more input channels (ResNet's
     * stride-2 3x3s) is lowered to one GEMM over its im2col rows, as a 1x1
     * is a GEMM over its input: the pointwise class. Left: the stems of
     * 1 to 7 channels, whose short rows the GEMM's tiles do not fill. */
    if (in_c >= 8) {
        return PROF_OPC_POINTWISE;
    }
    return PROF_OPC_CONV_OTHER;
}

enum prof_op_class prof_op_class_of(const struct memest_layer *l)
{
    switch (l->kind) {
    case MEMEST_KIND_CONV2D:
        return conv_class(l);
    case MEMEST_KIND_CONV_TRANSPOSE:
        return PROF_OPC_CONV_OTHER;
    case MEMEST_KIND_DENSE:
    case MEMEST_KIND_MATMUL:
    case MEMEST_KIND_ATTENTION:
    case MEMEST_KIND_LSTM:
    case MEMEST_KIND_GRU:
        return PROF_OPC_GEMM;
    case MEMEST_KIND_ACTIVATION:
    case MEMEST_KIND_ADD:
    case MEMEST_KIND_SUB:
    case MEMEST_KIND_MUL:
    case MEMEST_KIND_DIV:
    case MEMEST_KIND_BATCHNORM:
    case MEMEST_KIND_LAYERNORM:
    case MEMEST_KIND_POSEMBED:
        return PROF_OPC_ELEMENTWISE;
    case MEMEST_KIND_MAXPOOL:
    case MEMEST_KIND_AVGPOOL:
    case MEMEST_KIND_GLOBALAVGPOOL:
        return PROF_OPC_POOL;
    case MEMEST_KIND_INPUT:
    case MEMEST_KIND_FLATTEN:
    case MEMEST_KIND_CONCAT:
    case MEMEST_KIND_IDENTITY:
    case MEMEST_KIND_DROPOUT:
    case MEMEST_KIND_RESIZE:
    case MEMEST_KIND_PAD:
    case MEMEST_KIND_SHUFFLE:
    case MEMEST_KIND_SLICE:
    case MEMEST_KIND_RESHAPE:
    case MEMEST_KIND_CLSTOKEN:
    case MEMEST_KIND_TRANSPOSE:
        return PROF_OPC_OTHER;
    }
    return PROF_OPC_OTHER;
}

static uint64_t shape_elements(struct memest_shape s)
{
    uint64_t n = s.rank ? 1 : 0;
    for (unsigned k = 0; k < s.rank && k < 3; k++) {
        n *= s.dim[k];
    }
    return n;
}

/* The steps of a recurrent layer (its input's T of T x D), else 1. */
static uint64_t recurrent_steps(const struct memest_layer *l)
{
    if ((l->kind == MEMEST_KIND_LSTM || l->kind == MEMEST_KIND_GRU) &&
        l->in_shape.rank == 2 && l->in_shape.dim[0] > 1) {
        return l->in_shape.dim[0];
    }
    return 1;
}

/* Measured one thread, 8192 floats in L1 (kern_*_f32), ns per element
 * times the host's 134 GMAC/s: silu 0.183 ns (24.6), sigmoid 0.147
 * (19.6), tanh 0.227 (30.5), GELU 0.166 (22.3), softplus 0.304 (40.8);
 * relu 0.033 and hard-swish 0.042, their loads and stores. The softmaxes,
 * erf and ELU go through the same exponentials: their nearest kind's. */
unsigned prof_dm_act_cost(enum memest_act a)
{
    switch (a) {
    case MEMEST_ACT_SILU:
        return 25;
    case MEMEST_ACT_SIGMOID:
    case MEMEST_ACT_ELU:
    case MEMEST_ACT_SOFTMAX:
    case MEMEST_ACT_LOGSOFTMAX:
        return 20;
    case MEMEST_ACT_TANH:
        return 30;
    case MEMEST_ACT_GELU:
    case MEMEST_ACT_GELU_ERF:
    case MEMEST_ACT_ERF:
        return 22;
    case MEMEST_ACT_SOFTPLUS:
        return 40;
    default:
        return 0;
    }
}

int prof_dm_net_from_model(const memest_model *model, struct prof_dm_net *out)
{
    if (!model || !out) {
        return PROF_E_INVALID;
    }
    memset(out, 0, sizeof *out);
    const size_t n = memest_model_layer_count(model);
    const size_t inputs = memest_model_input_count(model);
    /* A recurrent layer over T steps is T dependent steps, each a small
     * GEMV over the input and the state that re-reads the weights and
     * pays a layer's fixed cost: T entries. */
    size_t slots = n;
    for (size_t i = 0; i < n; i++) {
        const uint64_t t = recurrent_steps(memest_model_layer(model, i));
        if (t > 1) {
            if (t - 1 > SIZE_MAX / sizeof *out->layers - slots) {
                return PROF_E_OVERFLOW;
            }
            slots += (size_t)(t - 1);
        }
    }
    out->layers = calloc(slots ? slots : 1, sizeof *out->layers);
    if (!out->layers) {
        return PROF_E_NOMEM;
    }
    snprintf(out->name, sizeof out->name, "%s", memest_model_name(model));
    for (size_t i = 0; i < n; i++) {
        const struct memest_layer *l = memest_model_layer(model, i);
        /* A view moves nothing and the runtimes elide it. */
        if (memest_kind_is_view(l->kind) || l->kind == MEMEST_KIND_RESHAPE) {
            continue;
        }
        struct prof_dm_layer *d = &out->layers[out->count++];
        d->op_class = prof_op_class_of(l);
        d->macs = l->macs_per_sample;
        uint64_t act = l->output_elements;
        for (size_t k = 0; k < l->input_count; k++) {
            act += shape_elements(memest_model_tensor_shape(model,
                                                            l->inputs[k]));
        }
        (void)inputs;
        d->act_elements = act;
        d->param_count = l->parameter_count;
        d->out_elements = l->output_elements;
        /* the executor's own rule: its operator for the kind */
        const struct exec_op_vtable *vt = exec_op_find(l->kind);
        d->threaded = vt && vt->threaded;
        d->split_work = exec_split_work(l);
        if (l->kind == MEMEST_KIND_CONV2D && l->in_shape.rank == 3 &&
            l->out_shape.rank == 3) {
            d->in_channels = l->in_shape.dim[0];
            d->out_channels = l->out_shape.dim[0];
        }
        const uint64_t t = recurrent_steps(l);
        /* a recurrent layer's gates are in its steps' time */
        d->act_work = t > 1 ? 0 : (uint64_t)prof_dm_act_cost(l->act) *
                                      l->output_elements;
        if (t > 1) {
            d->macs /= t;
            d->act_elements /= t;
            /* a step outputs one h (seq=no: the layer's only one) */
            d->out_elements /= l->return_sequence ? t : 1;
            for (uint64_t k = 1; k < t; k++) {
                out->layers[out->count] = *d;
                out->count++;
            }
        }
    }
    return PROF_OK;
}

void prof_dm_net_free(struct prof_dm_net *net)
{
    if (net) {
        free(net->layers);
        memset(net, 0, sizeof *net);
    }
}

/* ---- Prediction ----------------------------------------------------------- */

/* The roofs of dev: one core's fp32 peak and the bandwidths, GMAC/s and
 * GB/s. */
static double core_peak(const struct prof_device *dev)
{
    return dev->peak_gmacs / (double)prof_device_cores(dev);
}

static double bandwidth_at(const struct prof_device *dev, unsigned threads)
{
    if (threads <= 1 && dev->bandwidth_1core_gbps > 0.0) {
        return dev->bandwidth_1core_gbps;
    }
    return dev->bandwidth_gbps;
}

static bool precision_ok(enum memest_precision p)
{
    return p == MEMEST_FP32 || p == MEMEST_FP16 || p == MEMEST_BF16 ||
           p == MEMEST_INT8;
}

static bool case_ok(const struct prof_dm_case *c)
{
    return c && c->net && c->threads >= 1 && c->batch >= 1 &&
           precision_ok(c->precision);
}

/* The bandwidth a layer moving bytes sees, bytes per ms: the smallest
 * cache level that holds them, at its measured bandwidth (a host
 * calibration's levels: between the runs of a small network its weights
 * and activations stay there), else main memory's, dram (already scaled
 * by eff_bandwidth); the catalogue boards have no levels. */
static double layer_bandwidth(const struct prof_device *dev, double bytes,
                              double dram, double eff)
{
    for (unsigned k = 0; k < dev->cache_count; k++) {
        if (bytes <= (double)dev->cache[k].capacity_bytes) {
            return dev->cache[k].bandwidth_gbps * 1e6 * eff;
        }
    }
    return dram;
}

/* The MACs at the batch from which runtime splits a layer among its
 * threads: edgefit's executor splits a conv2d or dense layer of at least
 * PROF_EXEC_THREAD_MIN_MACS (exec_op_threads) and runs every other layer
 * on the caller's thread; for the published runtimes, whose rules are not
 * known here, every layer scales with the thread curve (0). */
static uint64_t split_min_macs(const char *runtime)
{
    return strcmp(runtime, "edgefit") == 0 ? PROF_EXEC_THREAD_MIN_MACS : 0;
}

/* The model's time for a case from physical parameters q; split_min as
 * split_min_macs(). */
static double model_ms(const struct prof_device *dev, const double *q,
                       enum prof_dm_combine combine, uint64_t split_min,
                       const struct prof_dm_case *c)
{
    if (c->device) {
        dev = c->device;
    }
    const unsigned cores = prof_device_cores(dev);
    const double n = (double)(c->threads < cores ? c->threads : cores);
    const double p = q[PROF_DM_PARALLEL];
    const double amdahl_n = (1.0 - p) + p / n;
    /* a layer runs on all the threads from need MACs a sample:
     * macs * batch >= split_min, without the product (split_min 0: every
     * layer does) */
    const uint64_t need =
        split_min / c->batch + (split_min % c->batch != 0);
    const bool int8 = c->precision == MEMEST_INT8;
    double gain = 1.0;
    if (int8) {
        gain = q[PROF_DM_INT8_SPEEDUP];
    } else if ((c->precision == MEMEST_FP16 || c->precision == MEMEST_BF16) &&
               prof_device_has_f16(dev)) {
        /* Without fp16 arithmetic 16-bit storage is widened and computed
         * at the fp32 rate (only its bytes shrink): a speed-up learnt on
         * other boards of the runtime must not reach this one. */
        gain = q[PROF_DM_F16_SPEEDUP] * dev->peak_gmacs_f16 /
               dev->peak_gmacs;
    }
    const double elem_bytes = (double)memest_precision_bytes(c->precision);
    /* GMAC/s and GB/s are MACs and bytes per ns: x 1e6 per ms */
    const double peak = core_peak(dev) * 1e6;
    const double r0 = q[PROF_DM_REDUCTION_HALF];
    const double bw_n = bandwidth_at(dev, c->threads) * 1e6;
    const double bw_1 = bandwidth_at(dev, 1) * 1e6;
    const double eb = q[PROF_DM_EFF_BANDWIDTH];
    /* A dense layer reads its weights once, in order: the access a host
     * calibration's cache bandwidths measure (a streaming read), so from
     * a measured cache level it moves its bytes at no less than the
     * level's figure, where other layers' strided and gathered reads reach
     * eff_bandwidth of it. From main memory (and on the catalogue's
     * boards, which have no levels) it shares eff_bandwidth. */
    const double eg = eb > 1.0 ? eb : 1.0;
    const double batch = (double)c->batch;
    double total = 0.0;
    for (size_t i = 0; i < c->net->count; i++) {
        const struct prof_dm_layer *l = &c->net->layers[i];
        const bool split =
            split_min == 0 || (l->threaded && l->split_work >= need);
        const double amdahl = split ? amdahl_n : 1.0;
        const double bw0 = split ? bw_n : bw_1;
        enum prof_dm_param e = PROF_DM_EFF_DEPTHWISE;
        switch (l->op_class) {
        case PROF_OPC_POINTWISE:
            e = PROF_DM_EFF_POINTWISE;
            break;
        case PROF_OPC_CONV3X3:
            e = PROF_DM_EFF_CONV3X3;
            break;
        case PROF_OPC_CONV_OTHER:
            e = PROF_DM_EFF_CONV_OTHER;
            break;
        case PROF_OPC_GEMM:
            e = PROF_DM_EFF_GEMM;
            break;
        case PROF_OPC_DEPTHWISE:
        case PROF_OPC_POOL:
        case PROF_OPC_ELEMENTWISE:
        case PROF_OPC_OTHER:
            e = PROF_DM_EFF_DEPTHWISE;
            break;
        }
        double g = gain;
        if (int8 && l->op_class == PROF_OPC_CONV3X3) {
            g = q[PROF_DM_INT8_SPEEDUP_3X3];
        }
        /* the reduction length: MACs per output element */
        const double red = l->out_elements
                               ? (double)l->macs / (double)l->out_elements
                               : 0.0;
        double share = red > 0.0 ? red / (red + r0) : 1.0;
        if (l->op_class == PROF_OPC_CONV3X3 && l->in_channels &&
            l->out_channels) {
            share /= 1.0 + q[PROF_DM_WINOGRAD_CHANNELS] *
                               (1.0 / (double)l->in_channels +
                                1.0 / (double)l->out_channels);
        }
        if (dev->simd_lanes > 1 && l->out_channels) {
            /* the output channels in vectors of simd_lanes: the last one
             * partly filled (prof_device.simd_lanes) */
            const double lanes = (double)dev->simd_lanes;
            const double oc = (double)l->out_channels;
            share *= oc / (lanes * ceil(oc / lanes));
        }
        /* the activation in float whatever the precision, at the
         * peak its cost was measured against */
        const double compute = (double)l->macs * batch /
                                   (peak * g * q[e] * share) * amdahl +
                               (double)l->act_work * batch / peak * amdahl;
        const double bytes =
            ((double)l->act_elements * batch + (double)l->param_count) *
            elem_bytes;
        const double el = l->op_class == PROF_OPC_POOL ? q[PROF_DM_EFF_POOL]
                                                       : eb;
        const double memory =
            bytes / layer_bandwidth(dev, bytes, bw0 * el,
                                    l->op_class == PROF_OPC_GEMM ? eg : el);
        const double body = combine == PROF_DM_SUM
                                ? compute + memory
                                : (compute > memory ? compute : memory);
        total += body + q[PROF_DM_OVERHEAD_MS];
    }
    return total + q[PROF_DM_RUN_OVERHEAD_MS];
}

static bool model_ok(const struct prof_devmodel *m)
{
    if (prof_device_validate(&m->device, NULL) != PROF_OK) {
        return false;
    }
    for (int k = 0; k < PROF_DM_PARAM_COUNT; k++) {
        if (!(m->param[k] > 0.0) || !isfinite(m->param[k])) {
            return false;
        }
    }
    return m->param[PROF_DM_PARALLEL] < 1.0 && m->interval_low > 0.0 &&
           m->interval_high >= m->interval_low &&
           isfinite(m->interval_high);
}

int prof_dm_predict(const struct prof_devmodel *m,
                    const struct prof_dm_case *c, double *ms,
                    double *low_ms, double *high_ms)
{
    if (!m || !c || !ms) {
        return PROF_E_INVALID;
    }
    if (!case_ok(c) || !model_ok(m)) {
        return PROF_E_RANGE;
    }
    *ms = model_ms(&m->device, m->param, m->combine,
                   split_min_macs(m->runtime), c);
    if (low_ms) {
        *low_ms = *ms * m->interval_low;
    }
    if (high_ms) {
        *high_ms = *ms * m->interval_high;
    }
    return PROF_OK;
}

int prof_dm_roofline_bound(const struct prof_device *dev,
                           const struct prof_dm_case *c, double *ms)
{
    if (!dev || !c || !ms) {
        return PROF_E_INVALID;
    }
    if (!case_ok(c) || prof_device_validate(dev, NULL) != PROF_OK) {
        return PROF_E_RANGE;
    }
    const double peak = prof_device_peak_threads(dev, c->precision,
                                                 c->threads) * 1e6;
    const double bw = dev->bandwidth_gbps * 1e6;
    const double elem_bytes = (double)memest_precision_bytes(c->precision);
    double total = 0.0;
    for (size_t i = 0; i < c->net->count; i++) {
        const struct prof_dm_layer *l = &c->net->layers[i];
        const double compute = (double)l->macs * (double)c->batch / peak;
        const double memory =
            ((double)l->act_elements * (double)c->batch +
             (double)l->param_count) * elem_bytes / bw;
        total += compute > memory ? compute : memory;
    }
    *ms = total;
    return PROF_OK;
}

/* ---- Parameters in the fit's coordinates ---------------------------------- */

/* The fit works on x = log(q) (logit for the parallel fraction), so that
 * every step keeps the parameters physical. Bounds keep a parameter the
 * data do not reach from running off while the prior is weak. */
static const double x_lo[PROF_DM_PARAM_COUNT] = {
    -9.2, -9.2, -9.2, -9.2, -9.2, -9.2, -16.2, -9.0, -4.6, -4.6, -4.6, -4.6,
    -16.2, -4.6, -9.2};
/* Physical bounds: no operator class runs above the peak (x = 0), but the
 * 3x3 one, whose effective rate may reach 4 (Winograd F(4,3) does a
 * quarter of the multiplies, x = ln 4); the bandwidth share may exceed 1
 * (the catalogue's all-core figures are lower bounds). Uncapped, a fit
 * put GEMM at 10x the peak to cancel its compute term. */
static const double x_hi[PROF_DM_PARAM_COUNT] = {
    0.0, 0.0, 1.62, 0.0, 0.0, 2.3, 2.3, 9.0, 2.8, 2.8, 8.3, 2.8, 2.3, 6.2,
    2.3};
/* The prior's spread, natural log units: weak (a factor e^3 = 20 is one
 * standard deviation, e^1.5 = 4.5 for the precision speed-ups), strong
 * enough to hold a parameter the data do not reach. */
static const double x_sigma[PROF_DM_PARAM_COUNT] = {
    3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 1.5, 1.5, 3.0, 1.5, 3.0, 3.0,
    3.0};

/* Whether the fit of runtime holds parameter k at the prior's centre (or
 * ties it to another, tie()), so that a published runtime's (device,
 * runtime) has ten fitted parameters and edgefit's own thirteen.
 *
 * Held for every runtime: fp16's speed-up at 1, the catalogue's fp16/fp32
 * roof ratio (it moves no prediction on the Pi 3, Pi 4 and Jetson Nano,
 * whose cores lack fp16 arithmetic).
 *
 * Held for the published runtimes, fitted for edgefit's executor, the
 * one calibrated on a micro-suite of layers (--measure):
 * - the cost per run: a published network's run is one of tens of layers
 *   and milliseconds, and with layers of every size the per-layer
 *   overhead already takes what is fixed;
 * - the pool share, tied to the bandwidth share;
 * - GEMM's efficiency at 1, the roof: a dense layer at batch 1 is a GEMV
 *   bound by its weights' bytes, which the memory term charges; fitted
 *   freely, every ncnn board put it at the cap of 1, and the XNNPACK and
 *   PyTorch fits, whose networks have one small classifier, left it at
 *   the prior (edgefit's micro-suite times GEMM-shaped dense layers, rows
 *   of tokens, and a recurrent one, which no published table has);
 * - the reduction length at half efficiency, 8 MACs per output: fitted,
 *   the ncnn boards put it at 0.26-0.28, where it moves no layer but a
 *   3-channel stem, and holding it frees int8's 3x3 speed-up instead,
 *   which the ncnn tables need (their int8 3x3 layers use smaller
 *   Winograd tiles than fp32's: SqueezeNet and ResNet-18 gain least from
 *   int8). Leave-one-model-out within 25%, the ncnn boards: Pi 4 at 1.8
 *   GHz 74% -> 82%, Orin Nano 66% -> 82%, Pi 3B+ 77% -> 83%, Zero 2 W 79%
 *   -> 82%, Pi 5 71% -> 76%, Jetson Nano 84% both, Pi 4 at 1.5 GHz 85% ->
 *   81%; XNNPACK (no 3x3 layers) 95-97% -> 90-91% (docs/device-model.md).
 *
 * Tied for edgefit only: int8's 3x3 speed-up to int8's, as it has no
 * Winograd kernel and its 3x3 layers run as its other convolutions do. */
static bool held_for(const char *runtime, int k)
{
    const bool own = strcmp(runtime, "edgefit") == 0;
    switch (k) {
    case PROF_DM_F16_SPEEDUP:
        return true;
    case PROF_DM_RUN_OVERHEAD_MS:
    case PROF_DM_EFF_POOL:
    case PROF_DM_EFF_GEMM:
    case PROF_DM_REDUCTION_HALF:
        return !own;
    case PROF_DM_INT8_SPEEDUP_3X3:
        return own;
    default:
        return false;
    }
}

/* x with the ties of a fit applied: a held eff_pool (a published
 * runtime's, held_for) is eff_bandwidth's, a held int8 3x3 speed-up
 * (edgefit's) is int8's. */
static void tie(const bool *held, const double *x, double *out)
{
    memcpy(out, x, PROF_DM_PARAM_COUNT * sizeof *out);
    if (held[PROF_DM_EFF_POOL]) {
        out[PROF_DM_EFF_POOL] = x[PROF_DM_EFF_BANDWIDTH];
    }
    if (held[PROF_DM_INT8_SPEEDUP_3X3]) {
        out[PROF_DM_INT8_SPEEDUP_3X3] = x[PROF_DM_INT8_SPEEDUP];
    }
}

/* The prior's residuals weigh as measurements 10% off per standard
 * deviation: a measurement moves a parameter it constrains far more than
 * the prior holds it, while a parameter no measurement reaches (an int8
 * speed-up with only fp32 data) stays where the prior puts it. */
#define PRIOR_WEIGHT 0.1

static void to_x(const double *q, double *x)
{
    for (int k = 0; k < PROF_DM_PARAM_COUNT; k++) {
        x[k] = k == PROF_DM_PARALLEL ? log(q[k] / (1.0 - q[k])) : log(q[k]);
    }
}

static void to_q(const double *x, double *q)
{
    for (int k = 0; k < PROF_DM_PARAM_COUNT; k++) {
        const double v = x[k] < x_lo[k] ? x_lo[k]
                         : x[k] > x_hi[k] ? x_hi[k] : x[k];
        q[k] = k == PROF_DM_PARALLEL ? 1.0 / (1.0 + exp(-v)) : exp(v);
    }
}

void prof_dm_defaults(const struct prof_device *dev, const char *runtime,
                      struct prof_devmodel *out)
{
    memset(out, 0, sizeof *out);
    if (dev) {
        out->device = *dev;
    }
    snprintf(out->runtime, sizeof out->runtime, "%s",
             runtime ? runtime : "edgefit");
    /* Typical of the published runtimes on ARM cores: depthwise far below
     * the roof, 1x1 near half of it, 3x3 near the roof. */
    out->param[PROF_DM_EFF_DEPTHWISE] = 0.15;
    out->param[PROF_DM_EFF_POINTWISE] = 0.5;
    out->param[PROF_DM_EFF_CONV3X3] = 0.6;
    out->param[PROF_DM_EFF_CONV_OTHER] = 0.4;
    out->param[PROF_DM_EFF_GEMM] = 1.0; /* held (held_for) */
    out->param[PROF_DM_EFF_BANDWIDTH] = 0.6;
    out->param[PROF_DM_OVERHEAD_MS] = 0.01;
    out->param[PROF_DM_PARALLEL] = 0.9;
    /* The realised int8 speed-up starts at 0.75 of the roof's ratio (2x
     * fp32 when the device names none). */
    double r8 = 2.0;
    if (dev && dev->peak_gmacs > 0.0 && dev->peak_gmacs_int8 > 0.0) {
        r8 = dev->peak_gmacs_int8 / dev->peak_gmacs;
    }
    out->param[PROF_DM_INT8_SPEEDUP] = r8 * 0.75 > 0.5 ? r8 * 0.75 : 0.5;
    /* fp16's speed-up is the catalogue's roof ratio times this share */
    out->param[PROF_DM_F16_SPEEDUP] = 1.0;
    out->param[PROF_DM_INT8_SPEEDUP_3X3] = out->param[PROF_DM_INT8_SPEEDUP];
    /* a reduction of 8 MACs per output at half the class's efficiency */
    out->param[PROF_DM_REDUCTION_HALF] = 8.0;
    out->param[PROF_DM_RUN_OVERHEAD_MS] = 0.001;
    /* transforms as costly as the multiplies at 8 channels */
    out->param[PROF_DM_WINOGRAD_CHANNELS] = 8.0;
    /* pools move their bytes as the other layers do */
    out->param[PROF_DM_EFF_POOL] = out->param[PROF_DM_EFF_BANDWIDTH];
    out->combine = PROF_DM_MAX;
    out->interval_low = 1.0;
    out->interval_high = 1.0;
}

/* ---- Levenberg-Marquardt ---------------------------------------------------- */

enum { NP = PROF_DM_PARAM_COUNT };

struct fit {
    const struct prof_device *dev;
    const struct prof_dm_case *cases;
    size_t n;
    enum prof_dm_combine combine;
    bool held[NP];  /* held_for() of the runtime fitted */
    uint64_t split_min; /* split_min_macs() of the runtime fitted */
    double x0[NP];  /* the prior's centre */
    double pw[NP];  /* the weight of each prior residual per unit of x */
    double *r;      /* n + NP residuals */
    double *rt;     /* a trial's */
    double *jac;    /* (n + NP) x NP */
};

/* Residuals at x: log(predicted / measured) for each case, then the
 * prior's (x - x0) / sigma. Returns the sum of squares. */
static double residuals(const struct fit *f, const double *x, double *r)
{
    double q[NP], xt[NP];
    tie(f->held, x, xt);
    to_q(xt, q);
    double ss = 0.0;
    for (size_t i = 0; i < f->n; i++) {
        const double t = model_ms(f->dev, q, f->combine, f->split_min,
                                  &f->cases[i]);
        r[i] = log(t / f->cases[i].measured_ms);
        ss += r[i] * r[i];
    }
    for (int k = 0; k < NP; k++) {
        r[f->n + (size_t)k] = f->pw[k] * (x[k] - f->x0[k]);
        ss += r[f->n + (size_t)k] * r[f->n + (size_t)k];
    }
    return ss;
}

/* Solve the NP x NP system a y = b (a symmetric positive definite after
 * the damping) by Gaussian elimination with partial pivoting. */
static bool solve(double a[NP][NP], double *b, double *y)
{
    for (int c = 0; c < NP; c++) {
        int piv = c;
        for (int r = c + 1; r < NP; r++) {
            if (fabs(a[r][c]) > fabs(a[piv][c])) {
                piv = r;
            }
        }
        if (!(fabs(a[piv][c]) > 1e-300)) {
            return false;
        }
        if (piv != c) {
            for (int k = 0; k < NP; k++) {
                const double t = a[c][k];
                a[c][k] = a[piv][k];
                a[piv][k] = t;
            }
            const double t = b[c];
            b[c] = b[piv];
            b[piv] = t;
        }
        for (int r = c + 1; r < NP; r++) {
            const double m = a[r][c] / a[c][c];
            for (int k = c; k < NP; k++) {
                a[r][k] -= m * a[c][k];
            }
            b[r] -= m * b[c];
        }
    }
    for (int c = NP - 1; c >= 0; c--) {
        double s = b[c];
        for (int k = c + 1; k < NP; k++) {
            s -= a[c][k] * y[k];
        }
        y[c] = s / a[c][c];
    }
    return true;
}

static void clamp_x(double *x)
{
    for (int k = 0; k < NP; k++) {
        x[k] = x[k] < x_lo[k] ? x_lo[k] : x[k] > x_hi[k] ? x_hi[k] : x[k];
    }
}

/* Minimise from x (in place); returns the final sum of squares. The
 * Jacobian is by central differences: max() has kinks, and the model is
 * cheap (a sum over layers). */
static double lm(struct fit *f, double *x)
{
    const size_t m = f->n + NP;
    double ss = residuals(f, x, f->r);
    double lambda = 1e-2;
    for (int it = 0; it < 300; it++) {
        double xt[NP];
        for (int k = 0; k < NP; k++) {
            const double h = 1e-5;
            if (f->held[k]) {
                for (size_t i = 0; i < m; i++) {
                    f->jac[i * NP + (size_t)k] = 0.0;
                }
                continue;
            }
            memcpy(xt, x, sizeof xt);
            xt[k] = x[k] + h;
            residuals(f, xt, f->rt);
            for (size_t i = 0; i < m; i++) {
                f->jac[i * NP + (size_t)k] = f->rt[i];
            }
            xt[k] = x[k] - h;
            residuals(f, xt, f->rt);
            for (size_t i = 0; i < m; i++) {
                f->jac[i * NP + (size_t)k] =
                    (f->jac[i * NP + (size_t)k] - f->rt[i]) / (2.0 * h);
            }
        }
        double jtj[NP][NP], jtr[NP];
        for (int a = 0; a < NP; a++) {
            jtr[a] = 0.0;
            for (int b = 0; b < NP; b++) {
                jtj[a][b] = 0.0;
            }
        }
        for (size_t i = 0; i < m; i++) {
            const double *row = &f->jac[i * NP];
            for (int a = 0; a < NP; a++) {
                jtr[a] += row[a] * f->r[i];
                for (int b = 0; b < NP; b++) {
                    jtj[a][b] += row[a] * row[b];
                }
            }
        }
        bool improved = false;
        for (int tries = 0; tries < 12 && !improved; tries++) {
            double a[NP][NP], b[NP], step[NP];
            for (int r = 0; r < NP; r++) {
                for (int c = 0; c < NP; c++) {
                    a[r][c] = jtj[r][c];
                }
                a[r][r] += lambda * (jtj[r][r] + 1e-9);
                b[r] = -jtr[r];
            }
            for (int k = 0; k < NP; k++) {
                if (f->held[k]) {
                    for (int c = 0; c < NP; c++) {
                        a[k][c] = a[c][k] = 0.0;
                    }
                    a[k][k] = 1.0;
                    b[k] = 0.0;
                }
            }
            if (!solve(a, b, step)) {
                lambda *= 10.0;
                continue;
            }
            for (int k = 0; k < NP; k++) {
                xt[k] = x[k] + step[k];
            }
            clamp_x(xt);
            const double st = residuals(f, xt, f->rt);
            if (st < ss) {
                const double gain = ss - st;
                memcpy(x, xt, sizeof xt);
                ss = st;
                memcpy(f->r, f->rt, m * sizeof *f->r);
                lambda = lambda / 3.0 > 1e-9 ? lambda / 3.0 : 1e-9;
                improved = true;
                if (gain < 1e-12 * (1.0 + ss)) {
                    return ss;
                }
            } else {
                lambda *= 4.0;
            }
        }
        if (!improved) {
            break;
        }
    }
    return ss;
}

static int compare_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* numpy's linear-interpolation quantile of sorted v[0..n-1] */
static double quantile(const double *v, size_t n, double q)
{
    const double pos = q * (double)(n - 1);
    const size_t lo = (size_t)floor(pos);
    const size_t hi = lo + 1 < n ? lo + 1 : lo;
    return v[lo] + (v[hi] - v[lo]) * (pos - (double)lo);
}

/* The interval factors from n log(measured / predicted) residuals (sorted
 * in place): the 10th and 90th percentiles, never excluding 1. */
static void set_interval(double *res, size_t n, struct prof_devmodel *m)
{
    if (n == 0) {
        m->interval_low = m->interval_high = 1.0;
        return;
    }
    qsort(res, n, sizeof *res, compare_double);
    const double lo = exp(quantile(res, n, 0.1));
    const double hi = exp(quantile(res, n, 0.9));
    m->interval_low = lo < 1.0 ? lo : 1.0;
    m->interval_high = hi > 1.0 ? hi : 1.0;
}

static int check_cases(const struct prof_device *dev,
                       const struct prof_dm_case *cases, size_t n,
                       struct prof_diag *diag)
{
    if (prof_device_validate(dev, diag) != PROF_OK) {
        return PROF_E_RANGE;
    }
    for (size_t i = 0; i < n; i++) {
        if (!case_ok(&cases[i]) || !(cases[i].measured_ms > 0.0) ||
            !isfinite(cases[i].measured_ms)) {
            diag_set(diag,
                          "measurement %zu: needs a network, threads and "
                          "batch >= 1, precision fp32, fp16, bf16 or int8 "
                          "and a latency > 0",
                          i + 1);
            return PROF_E_RANGE;
        }
        if (cases[i].device &&
            prof_device_validate(cases[i].device, diag) != PROF_OK) {
            return PROF_E_RANGE;
        }
        if (cases[i].net->count == 0) {
            diag_set(diag, "measurement %zu: network '%s' has no "
                                   "layer that does work",
                          i + 1, cases[i].net->name);
            return PROF_E_RANGE;
        }
    }
    return PROF_OK;
}

int prof_dm_fit(const struct prof_device *dev, const char *runtime,
                const struct prof_dm_case *cases, size_t n,
                struct prof_devmodel *out, struct prof_diag *diag)
{
    return prof_dm_fit_prior(dev, runtime, cases, n, NULL, 0.0, out, diag);
}

int prof_dm_fit_prior(const struct prof_device *dev, const char *runtime,
                      const struct prof_dm_case *cases, size_t n,
                      const struct prof_devmodel *prior, double prior_sigma,
                      struct prof_devmodel *out, struct prof_diag *diag)
{
    if (!dev || !runtime || !cases || !out || n == 0) {
        return PROF_E_INVALID;
    }
    if (prior && !(prior_sigma > 0.0 && isfinite(prior_sigma))) {
        return PROF_E_RANGE;
    }
    int st = check_cases(dev, cases, n, diag);
    if (st != PROF_OK) {
        return st;
    }
    const size_t m = n + NP;
    if (m > SIZE_MAX / (NP * sizeof(double))) {
        return PROF_E_OVERFLOW;
    }
    struct fit f = {.dev = dev, .cases = cases, .n = n,
                    .split_min = split_min_macs(runtime)};
    for (int k = 0; k < NP; k++) {
        f.held[k] = held_for(runtime, k);
    }
    f.r = malloc(m * sizeof *f.r);
    f.rt = malloc(m * sizeof *f.rt);
    f.jac = malloc(m * NP * sizeof *f.jac);
    if (!f.r || !f.rt || !f.jac) {
        free(f.r);
        free(f.rt);
        free(f.jac);
        return PROF_E_NOMEM;
    }
    struct prof_devmodel def;
    prof_dm_defaults(dev, runtime, &def);
    if (prior) {
        bool ok = true;
        for (int k = 0; k < NP; k++) {
            ok = ok && prior->param[k] > 0.0 && isfinite(prior->param[k]);
        }
        if (!ok || !(prior->param[PROF_DM_PARALLEL] < 1.0)) {
            free(f.r);
            free(f.rt);
            free(f.jac);
            return PROF_E_RANGE;
        }
        for (int k = 0; k < NP; k++) {
            if (!held_for(runtime, k)) {
                def.param[k] = prior->param[k];
            }
        }
    }
    to_x(def.param, f.x0);
    for (int k = 0; k < NP; k++) {
        f.pw[k] = prior ? 1.0 / prior_sigma : PRIOR_WEIGHT / x_sigma[k];
    }
    double best_x[NP], best_data_ss = INFINITY;
    enum prof_dm_combine best_c = PROF_DM_MAX;
    /* Both combinations, max first: the sum wins only when it fits
     * better. max() has kinks where a layer turns from compute- to
     * memory-bound, and so local minima: three starts each, the prior's
     * centre and every efficiency 3x above and below it. */
    for (int c = 0; c < 6; c++) {
        f.combine = c < 3 ? PROF_DM_MAX : PROF_DM_SUM;
        double x[NP];
        memcpy(x, f.x0, sizeof x);
        const double shift = c % 3 == 0 ? 0.0 : c % 3 == 1 ? log(3.0)
                                                           : -log(3.0);
        for (int k = PROF_DM_EFF_DEPTHWISE; k <= PROF_DM_EFF_GEMM; k++) {
            x[k] += f.held[k] ? 0.0 : shift; /* a held one stays held */
        }
        x[PROF_DM_EFF_POOL] += f.held[PROF_DM_EFF_POOL] ? 0.0 : shift;
        lm(&f, x);
        residuals(&f, x, f.r);
        double data_ss = 0.0;
        for (size_t i = 0; i < n; i++) {
            data_ss += f.r[i] * f.r[i];
        }
        if (data_ss < best_data_ss) {
            best_data_ss = data_ss;
            memcpy(best_x, x, sizeof x);
            best_c = f.combine;
        }
    }
    *out = def;
    double tied[NP];
    tie(f.held, best_x, tied);
    to_q(tied, out->param);
    out->combine = best_c;
    out->samples = n;
    out->rms_log_residual = sqrt(best_data_ss / (double)n);
    /* the fit's own residuals, log(measured / predicted) */
    f.combine = best_c;
    residuals(&f, best_x, f.r);
    for (size_t i = 0; i < n; i++) {
        f.r[i] = -f.r[i];
    }
    set_interval(f.r, n, out);
    free(f.r);
    free(f.rt);
    free(f.jac);
    return PROF_OK;
}

/* The cases of every network but held (NULL: all of them) into train, and
 * held's cases marked done; the count copied. */
static size_t hold_out(const struct prof_dm_case *cases, size_t n,
                       const struct prof_dm_net *held,
                       struct prof_dm_case *train, bool *done)
{
    size_t nt = 0;
    for (size_t k = 0; k < n; k++) {
        if (cases[k].net != held) {
            train[nt++] = cases[k];
        } else {
            done[k] = true;
        }
    }
    return nt;
}

int prof_dm_cross_validate(const struct prof_device *dev,
                           const char *runtime,
                           const struct prof_dm_case *cases, size_t n,
                           double *predicted_ms, struct prof_devmodel *out,
                           struct prof_diag *diag)
{
    if (!dev || !runtime || !cases || !predicted_ms || !out || n == 0) {
        return PROF_E_INVALID;
    }
    int st = check_cases(dev, cases, n, diag);
    if (st != PROF_OK) {
        return st;
    }
    struct prof_dm_case *train = malloc(n * sizeof *train);
    double *res = malloc(n * sizeof *res);
    bool *done = calloc(n, sizeof *done);
    if (!train || !res || !done) {
        free(train);
        free(res);
        free(done);
        return PROF_E_NOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        predicted_ms[i] = NAN;
    }
    size_t nres = 0;
    for (size_t i = 0; i < n && st == PROF_OK; i++) {
        if (done[i]) {
            continue;
        }
        const struct prof_dm_net *held = cases[i].net;
        const size_t nt = hold_out(cases, n, held, train, done);
        if (nt == 0) {
            continue; /* one network: nothing to learn it from */
        }
        struct prof_devmodel fit;
        st = prof_dm_fit(dev, runtime, train, nt, &fit, diag);
        for (size_t k = 0; k < n && st == PROF_OK; k++) {
            if (cases[k].net == held) {
                st = prof_dm_predict(&fit, &cases[k], &predicted_ms[k], NULL,
                                     NULL);
                if (st == PROF_OK) {
                    res[nres++] = log(cases[k].measured_ms / predicted_ms[k]);
                }
            }
        }
    }
    if (st == PROF_OK) {
        st = prof_dm_fit(dev, runtime, cases, n, out, diag);
    }
    if (st == PROF_OK && nres > 0) {
        set_interval(res, nres, out);
    }
    free(train);
    free(res);
    free(done);
    return st;
}

int prof_dm_cross_validate_pooled(const char *runtime,
                                  const struct prof_dm_case *cases,
                                  const size_t *group, size_t n,
                                  size_t ngroups, double prior_sigma,
                                  double *predicted_ms,
                                  struct prof_devmodel *models,
                                  struct prof_diag *diag)
{
    if (!runtime || !cases || !group || !predicted_ms || !models ||
        n == 0 || ngroups == 0) {
        return PROF_E_INVALID;
    }
    for (size_t i = 0; i < n; i++) {
        if (!cases[i].device || group[i] >= ngroups) {
            return PROF_E_RANGE;
        }
    }
    const struct prof_device *first = cases[0].device;
    int st = check_cases(first, cases, n, diag);
    if (st != PROF_OK) {
        return st;
    }
    struct prof_dm_case *train = malloc(n * sizeof *train);
    struct prof_dm_case *own = malloc(n * sizeof *own);
    double *res = malloc(n * sizeof *res);
    bool *done = calloc(n, sizeof *done);
    if (!train || !own || !res || !done) {
        free(train);
        free(own);
        free(res);
        free(done);
        return PROF_E_NOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        predicted_ms[i] = NAN;
    }
    /* held == NULL: the final fits on everything */
    for (size_t i = 0; i <= n && st == PROF_OK; i++) {
        if (i < n && done[i]) {
            continue;
        }
        const struct prof_dm_net *held = i < n ? cases[i].net : NULL;
        const size_t nt = hold_out(cases, n, held, train, done);
        if (nt == 0) {
            continue;
        }
        struct prof_devmodel pooled;
        st = prof_dm_fit(first, runtime, train, nt, &pooled, diag);
        for (size_t g = 0; g < ngroups && st == PROF_OK; g++) {
            size_t no = 0;
            const struct prof_device *dev = NULL;
            bool has_held = false;
            for (size_t k = 0; k < n; k++) {
                if (group[k] != g) {
                    continue;
                }
                dev = dev ? dev : cases[k].device;
                if (cases[k].net != held) {
                    own[no++] = cases[k];
                } else {
                    has_held = true;
                }
            }
            if (no == 0 || (held && !has_held)) {
                continue;
            }
            struct prof_devmodel m;
            st = prof_dm_fit_prior(dev, runtime, own, no, &pooled,
                                   prior_sigma, &m, diag);
            if (st != PROF_OK) {
                break;
            }
            if (!held) {
                models[g] = m;
                continue;
            }
            for (size_t k = 0; k < n && st == PROF_OK; k++) {
                if (group[k] == g && cases[k].net == held) {
                    struct prof_dm_case c = cases[k];
                    c.device = NULL;
                    st = prof_dm_predict(&m, &c, &predicted_ms[k], NULL,
                                         NULL);
                }
            }
        }
    }
    /* each group's interval from its own cross-validated residuals */
    for (size_t g = 0; g < ngroups && st == PROF_OK; g++) {
        size_t nres = 0;
        for (size_t k = 0; k < n; k++) {
            if (group[k] == g && isfinite(predicted_ms[k])) {
                res[nres++] = log(cases[k].measured_ms / predicted_ms[k]);
            }
        }
        if (nres > 0) {
            set_interval(res, nres, &models[g]);
        }
    }
    free(train);
    free(own);
    free(res);
    free(done);
    return st;
}
