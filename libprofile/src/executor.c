/* The model executor: a libmemest model run layer by layer on libkernels,
 * every activation in one arena of exactly the planned size. The public
 * contract is in profile.h (section "executor"); executor.h shares the
 * private structure with the profiling code. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "edgefit/kernels.h"
#include "edgefit/profile.h"
#include "executor.h"
#include "internal.h"

/* ---- sizes --------------------------------------------------------------- */

static int mul_sz(size_t a, size_t b, size_t *out)
{
    return __builtin_mul_overflow(a, b, out) ? PROF_E_OVERFLOW : PROF_OK;
}

static int mul3_sz(size_t a, size_t b, size_t c, size_t *out)
{
    size_t t;
    if (mul_sz(a, b, &t) != PROF_OK) {
        return PROF_E_OVERFLOW;
    }
    return mul_sz(t, c, out);
}

static int u64_sz(uint64_t v, size_t *out)
{
    if (v > SIZE_MAX) {
        return PROF_E_OVERFLOW;
    }
    *out = (size_t)v;
    return PROF_OK;
}

static size_t shape_elements(const struct memest_shape *s)
{
    size_t n = 1;
    for (unsigned i = 0; i < s->rank; i++) {
        n *= (size_t)s->dim[i]; /* checked by libmemest when it was built */
    }
    return n;
}

void exec_diag_set(struct prof_diag *diag, const char *fmt, ...)
{
    if (!diag) {
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    diag->column = 0;
    vsnprintf(diag->message, sizeof diag->message, fmt, ap);
    va_end(ap);
}

int exec_create_args(const memest_model *model, const void *out,
                     struct prof_diag *diag)
{
    if (diag) {
        diag->column = 0;
        diag->message[0] = '\0';
    }
    return model && out ? PROF_OK : PROF_E_INVALID;
}

int exec_kern_status(int kst)
{
    switch (kst) {
    case KERN_OK:
        return PROF_OK;
    case KERN_E_RANGE:
        return PROF_E_RANGE;
    case KERN_E_NOMEM:
        return PROF_E_NOMEM;
    case KERN_E_OVERFLOW:
        return PROF_E_OVERFLOW;
    default:
        return PROF_E_KERNEL;
    }
}

/* ---- initial weights ----------------------------------------------------- */

/* Uniform in [-a, a): 24 random bits make u exact in float. */
static float uniform(uint64_t *state, double a)
{
    const double u = (double)(prof_splitmix64(state) >> 40) * 0x1p-24;
    return (float)((2.0 * u - 1.0) * a);
}

/* Where element i of a layer's weights, in the API's order
 * ([out][in] for dense), lives in op->w. */
size_t exec_w_slot(const struct exec_op *op, size_t i)
{
    if (op->layer->kind != MEMEST_KIND_DENSE) {
        return i;
    }
    return (i % op->kdim) * op->c_out + i / op->kdim;
}

static void init_params(struct exec_op *op, uint64_t *state)
{
    const struct memest_layer *L = op->layer;
    if (L->kind == MEMEST_KIND_BATCHNORM) {
        /* PyTorch's fresh batch norm (weight 1, bias 0, running mean 0,
         * variance 1) folded: no draws, so the other layers' values do not
         * depend on where batch norms sit. */
        const float scale = (float)(1.0 / sqrt(1.0 + L->bn_epsilon));
        for (size_t i = 0; i < op->wn; i++) {
            op->w[i] = scale;
        }
        for (size_t i = 0; i < op->bn; i++) {
            op->b[i] = 0.0f;
        }
        return;
    }
    double fan_in, fan_out;
    if (L->kind == MEMEST_KIND_DENSE) {
        fan_in = (double)op->kdim;
        fan_out = (double)L->units;
    } else {
        fan_in = (double)op->kdim;
        fan_out = (double)(op->ocg * op->cs.kh * op->cs.kw);
    }
    const double a = L->act == MEMEST_ACT_RELU
                         ? sqrt(6.0 / fan_in)
                         : sqrt(6.0 / (fan_in + fan_out));
    for (size_t i = 0; i < op->wn; i++) {
        op->w[exec_w_slot(op, i)] = uniform(state, a);
    }
    const double ab = 1.0 / sqrt(fan_in);
    for (size_t i = 0; i < op->bn; i++) {
        op->b[i] = uniform(state, ab);
    }
}

/* The model's own weights, when it carries them, replace the drawn ones
 * (which were still drawn, so that every other layer's draws stay those
 * of the seed). A layer with weights but no bias array has zero bias. */
static void model_params(struct exec_op *op)
{
    const struct memest_layer *L = op->layer;
    if (!L->weight) {
        return;
    }
    for (size_t i = 0; i < op->wn; i++) {
        op->w[exec_w_slot(op, i)] = L->weight[i];
    }
    for (size_t i = 0; i < op->bn; i++) {
        op->b[i] = L->bias ? L->bias[i] : 0.0f;
    }
}

static bool conv_dw_s8(const struct prof_exec *ex, const struct exec_op *op);

/* Derive the stored form of a layer's parameters from its master copy. */
static int store_params(struct prof_exec *ex, struct exec_op *op)
{
    int kst = KERN_OK;
    switch (ex->precision) {
    case MEMEST_FP32:
        if (op->wpk) {
            kst = kern_conv2d_pack_f32(&op->cs, op->w, op->wpk);
        } else if (op->dwpk) {
            const struct kern_dwconv2d_shape ds =
                kern_conv2d_dw_shape(&op->cs);
            kst = kern_dwconv2d_pack_f32(&ds, op->w, op->dwpk);
        }
        break;
    case MEMEST_FP16:
        kst = kern_f32_to_f16(op->w16, op->w, op->wn);
        if (kst == KERN_OK) {
            kst = kern_f32_to_f16(op->b16, op->b, op->bn);
        }
        break;
    case MEMEST_BF16:
        kst = kern_f32_to_bf16(op->w16, op->w, op->wn);
        if (kst == KERN_OK) {
            kst = kern_f32_to_bf16(op->b16, op->b, op->bn);
        }
        break;
    case MEMEST_INT8: {
        if (op->layer->kind == MEMEST_KIND_BATCHNORM) {
            break; /* used in float */
        }
        /* Quantise all output channels at once (one scale each), then pack
         * each group's rows as its own N x K matrix. The int8 rows are
         * staged in the im2col scratch, which is at least as large. */
        int8_t *q = ex->wq_stage;
        /* Channels are rows of [out][in]: a dense layer's input-major
         * master is turned back for this (once per weight update). */
        float *rows = op->w;
        if (op->layer->kind == MEMEST_KIND_DENSE) {
            rows = malloc(op->wn * sizeof *rows);
            if (!rows) {
                return PROF_E_NOMEM;
            }
            for (size_t i = 0; i < op->wn; i++) {
                rows[i] = op->w[exec_w_slot(op, i)];
            }
        }
        kst = kern_q8_quantize_channels_f32(rows, op->c_out, op->kdim, q,
                                            op->wscale);
        if (rows != op->w) {
            free(rows);
        }
        if (kst == KERN_OK && op->wq8) {
            memcpy(op->wq8, q, op->wn);
            break;
        }
        for (size_t g = 0; kst == KERN_OK && g < op->groups; g++) {
            kst = kern_q8_pack_weights(q + g * op->ocg * op->kdim, op->ocg,
                                       op->kdim, op->kdim,
                                       (unsigned char *)op->wpack +
                                           g * op->wpack_group_bytes,
                                       op->wpack_group_bytes);
        }
        break;
    }
    default:
        break;
    }
    return exec_kern_status(kst);
}

/* ---- building ------------------------------------------------------------ */

PROF_API void prof_exec_opts_init(struct prof_exec_opts *opts)
{
    if (!opts) {
        return;
    }
    opts->batch = 1;
    opts->precision = MEMEST_FP32;
    opts->seed = 42;
    opts->plan_bytes = 0;
    opts->threads = 1;
    opts->thread_min_macs = PROF_EXEC_THREAD_MIN_MACS;
    opts->channel_blocked = 1;
}

static void *xcalloc(size_t n, size_t size)
{
    if (n == 0) {
        return NULL;
    }
    return calloc(n, size);
}

/* 64-byte alignment keeps the arena's start on a cache line; the odd
 * tensors end at its end, so they are aligned to their element size. */
static void *alloc_aligned(size_t bytes)
{
    size_t rounded = (bytes + 63) & ~(size_t)63;
    if (rounded < bytes) {
        return NULL;
    }
    return aligned_alloc(64, rounded == 0 ? 64 : rounded);
}

/* A per-sample shape as channels x h x w: rank 1 is features x 1 x 1,
 * rank 2 d0 x d1 x 1 (the element-wise layers' "over dim[0]"). */
static void shape_chw(const struct memest_shape *s, size_t *c, size_t *h,
                      size_t *w)
{
    *c = (size_t)s->dim[0];
    *h = s->rank >= 2 ? (size_t)s->dim[1] : 1;
    *w = s->rank >= 3 ? (size_t)s->dim[2] : 1;
}

/* Geometry of one layer, parameters, and what its kernels need. */
static int plan_layer(struct prof_exec *ex, struct exec_op *op,
                      struct prof_diag *diag)
{
    const struct memest_layer *L = op->layer;
    const size_t B = ex->batch;
    int st;

    op->groups = 1;
    op->out_t = ex->ninputs + op->index;
    shape_chw(&L->in_shape, &op->c_in, &op->h_in, &op->w_in);
    shape_chw(&L->out_shape, &op->c_out, &op->h_out, &op->w_out);
    if ((st = mul_sz(B, shape_elements(&L->in_shape), &op->in_n)) != PROF_OK ||
        (st = mul_sz(B, shape_elements(&L->out_shape), &op->out_n)) !=
            PROF_OK) {
        return st;
    }
    op->hw_out = op->h_out * op->w_out;
    op->alias = L->kind == MEMEST_KIND_FLATTEN ||
                L->kind == MEMEST_KIND_IDENTITY ||
                L->kind == MEMEST_KIND_DROPOUT;

    switch (L->kind) {
    case MEMEST_KIND_DENSE:
        op->kdim = op->c_in;
        op->ocg = op->c_out;
        break;
    case MEMEST_KIND_CONV2D: {
        op->groups = (size_t)L->groups;
        op->ocg = op->c_out / op->groups;
        /* The geometry every conv2d path runs from (libkernels'). */
        op->cs = (struct kern_conv2d_shape){
            .batch = B, .in_c = op->c_in, .in_h = op->h_in,
            .in_w = op->w_in, .out_c = op->c_out,
            .kh = (size_t)L->kernel_h, .kw = (size_t)L->kernel_w,
            .stride_h = (size_t)L->stride_h, .stride_w = (size_t)L->stride_w,
            .pad_top = (size_t)L->pad_top, .pad_left = (size_t)L->pad_left,
            .pad_bottom = (size_t)L->pad_bottom,
            .pad_right = (size_t)L->pad_right, .groups = op->groups,
        };
        if ((st = mul3_sz(op->c_in / op->groups, op->cs.kh, op->cs.kw,
                          &op->kdim)) != PROF_OK) {
            return st;
        }
        size_t oh, ow;
        int kst = kern_conv2d_out_hw(&op->cs, &oh, &ow);
        if (kst != KERN_OK || oh != op->h_out || ow != op->w_out) {
            exec_diag_set(diag, "%s: the convolution kernels disagree with the "
                     "model's shape", L->name);
            return PROF_E_RANGE;
        }
        break;
    }
    case MEMEST_KIND_MAXPOOL:
    case MEMEST_KIND_AVGPOOL: {
        op->kh = (size_t)L->kernel_h;
        op->kw = (size_t)L->kernel_w;
        op->sh = (size_t)L->stride_h;
        op->sw = (size_t)L->stride_w;
        op->pad_t = (size_t)L->pad_top;
        op->pad_l = (size_t)L->pad_left;
        op->pad_b = (size_t)L->pad_bottom;
        op->pad_r = (size_t)L->pad_right;
        op->count_include_pad =
            L->kind == MEMEST_KIND_AVGPOOL ? L->count_include_pad : 1;
        struct kern_pool2d_shape ps = exec_pool_shape(op, B);
        size_t oh, ow;
        int kst = kern_pool2d_out_hw(&ps, &oh, &ow);
        if (kst == KERN_E_RANGE) {
            exec_diag_set(diag, "%s: padding %zu,%zu,%zu,%zu (top, left, "
                          "bottom, right) reaches a whole %zux%zu window, "
                          "which leaves windows with no input", L->name,
                          op->pad_t, op->pad_l, op->pad_b, op->pad_r,
                          op->kh, op->kw);
            return PROF_E_RANGE;
        }
        if (kst != KERN_OK || oh != op->h_out || ow != op->w_out) {
            exec_diag_set(diag, "%s: the pooling kernels disagree with the "
                     "model's shape", L->name);
            return PROF_E_RANGE;
        }
        break;
    }
    default:
        break;
    }

    if (L->kind == MEMEST_KIND_DENSE || L->kind == MEMEST_KIND_CONV2D ||
        L->kind == MEMEST_KIND_BATCHNORM) {
        if ((st = u64_sz(L->weight_count, &op->wn)) != PROF_OK ||
            (st = u64_sz(L->bias_count, &op->bn)) != PROF_OK) {
            return st;
        }
        if (L->kind == MEMEST_KIND_BATCHNORM &&
            (op->wn != op->c_out || op->bn != op->c_out)) {
            exec_diag_set(diag, "%s: a batchnorm needs one scale and one "
                          "shift per channel (%zu), the model gives %zu and "
                          "%zu", L->name, op->c_out, op->wn, op->bn);
            return PROF_E_RANGE;
        }
        if (ex->precision == MEMEST_INT8 && op->kdim > 131071) {
            exec_diag_set(diag, "%s: %zu inputs per output are more than the int8 "
                     "GEMM sums exactly (131071)", L->name, op->kdim);
            return PROF_E_RANGE;
        }
    }
    return PROF_OK;
}

/* Scratch needs of one operator, in elements of each buffer. */
struct scratch_need {
    size_t col32, col8, acc, x32, y32, t32, w32, b32;
};

/* Tiles of about 8192 floats (32 KiB) of input rows and 32768 (128 KiB)
 * of weight columns: small beside what 16-bit storage saves on a layer
 * whose operands are large, and wide enough (32 columns and more of a
 * 784-input layer) that kern_sgemm keeps its speed and the inputs are not
 * widened more than a few times (mlp:784-256-256-10 at batch 32: 0.29-0.44
 * ms for the operators against 0.29-0.39 widening whole operands, runs
 * side by side on a busy two-core machine). Weight columns in multiples of
 * 16 (whole vectors of every SIMD path) unless the layer has fewer. */
#define DENSE16_TILE_FLOATS 8192u

static void dense_tiles(const struct prof_exec *ex, struct exec_op *op)
{
    const size_t k = op->kdim ? op->kdim : 1;
    size_t nb = 4u * DENSE16_TILE_FLOATS / k / 16u * 16u;
    if (nb < 16u) {
        nb = 16u;
    }
    op->tile_n = nb < op->c_out ? nb : op->c_out;
    size_t mb = DENSE16_TILE_FLOATS / k;
    if (mb < 1u) {
        mb = 1u;
    }
    op->tile_m = mb < ex->batch ? mb : ex->batch;
}

static bool conv_is_depthwise(const struct exec_op *op)
{
    return op->groups == op->c_in && op->c_out == op->c_in;
}

/* An int8 depthwise conv2d that runs libkernels' float depthwise kernel on
 * its integer values (dw_s8): every product of two int8 values is at most
 * 127 * 128 in magnitude, so sums of up to 1024 taps stay below 2^24, where
 * float holds every integer, and the float sum is the int32 one. */
static bool conv_dw_s8(const struct prof_exec *ex, const struct exec_op *op)
{
    return ex->precision == MEMEST_INT8 &&
           op->layer->kind == MEMEST_KIND_CONV2D && conv_is_depthwise(op) &&
           op->kdim <= 1024;
}

/* How many threads share a conv2d: its samples when the batch has several,
 * else the output channels of one sample when they are independent of each
 * other's input (an ungrouped or a depthwise convolution); 1 when the layer
 * stays on one thread. Each part has its own block of kernel scratch. */
static size_t conv_parts(const struct prof_exec *ex, const struct exec_op *op);

/* The units a single sample's output channels are split in: one channel of
 * a depthwise convolution (a block of KERN_CBLOCK on blocked tensors,
 * which its kernel computes a block at a time), four of an ungrouped one
 * on raw weights (libkernels' pixel-wide tile is four output channels
 * tall), or a block of packed weights (KERN_CONV_PACK_BLOCK channels), so
 * that every part computes its channels with the same tiles, and sums, as
 * one thread would. */
static size_t conv_channel_unit(const struct exec_op *op)
{
    if (conv_is_depthwise(op)) {
        return op->dwpk ? KERN_CBLOCK : 1;
    }
    return op->wpk ? KERN_CONV_PACK_BLOCK : 4;
}

/* What conv_f32 splits: samples, or channel units of one sample; 1 when
 * the layer cannot be split. */
static size_t conv_split_count(const struct prof_exec *ex,
                               const struct exec_op *op)
{
    if (ex->batch > 1) {
        return ex->batch;
    }
    if (op->groups == 1 || conv_is_depthwise(op)) {
        const size_t u = conv_channel_unit(op);
        return (op->c_out + u - 1) / u;
    }
    return 1;
}

static size_t conv_parts(const struct prof_exec *ex, const struct exec_op *op)
{
    const size_t t = exec_op_threads(ex, op);
    const size_t n = conv_split_count(ex, op);
    return t < n ? t : n;
}

/* A softmax or log-softmax over the channels of a rank-2 or rank-3
 * tensor, which runs on a transposed copy. */
static bool channel_softmax(const struct memest_layer *L)
{
    return (L->act == MEMEST_ACT_SOFTMAX || L->act == MEMEST_ACT_LOGSOFTMAX) &&
           L->out_shape.rank >= 2;
}

static int layer_scratch(const struct prof_exec *ex, struct exec_op *op,
                         struct scratch_need *n)
{
    const struct memest_layer *L = op->layer;
    const enum memest_precision p = ex->precision;
    const int narrow = p == MEMEST_FP16 || p == MEMEST_BF16;
    int st;
    memset(n, 0, sizeof *n);

    if (p != MEMEST_FP32) {
        n->y32 = op->out_n; /* every operator computes its result in float */
    }
    if (channel_softmax(L)) {
        n->t32 = op->out_n;
    }
    switch (L->kind) {
    case MEMEST_KIND_DENSE:
        if (narrow) {
            /* Tiles of the input rows and weight columns, not the whole
             * operands: widening all of a 784 x 64 layer's weights and a
             * batch of inputs took 309,504 B of scratch, more than fp32's
             * whole arena, for a precision meant to need less memory. */
            dense_tiles(ex, op);
            n->x32 = op->tile_m * op->kdim;
            n->w32 = op->kdim * op->tile_n;
            n->b32 = op->bn;
        } else if (p == MEMEST_INT8) {
            n->acc = op->out_n;
        }
        break;
    case MEMEST_KIND_CONV2D:
        if (conv_dw_s8(ex, op)) {
            /* dw_s8: the input and the weights as float integers, the
             * per-channel scales and shifts; its quantised weights are
             * staged in col8 */
            n->x32 = op->in_n;
            n->w32 = op->wn;
            n->b32 = 2 * op->c_out;
            n->col8 = op->wn;
        } else if (p == MEMEST_INT8) {
            /* Whole batch: [batch * out_h * out_w][kdim] int8 columns, one
             * group at a time, and [..][ocg] int32; the requantisation
             * writes the float result straight into its NCHW planes. */
            if ((st = mul3_sz(ex->batch, op->hw_out, op->kdim, &n->col8)) !=
                    PROF_OK ||
                (st = mul3_sz(ex->batch, op->hw_out, op->ocg, &n->acc)) !=
                    PROF_OK) {
                return st;
            }
        } else {
            /* libkernels' convolution scratch, one block per thread
             * (conv_f32). The trainer lowers one sample and group into
             * [kdim][out_h * out_w] floats instead, which libmemest's
             * training estimate counts, and lends them to the forward
             * pass. */
            op->cwork = kern_conv2d_work_bytes(&op->cs);
            if ((st = mul_sz((op->cwork + 3) / 4, conv_parts(ex, op),
                             &n->col32)) != PROF_OK) {
                return st;
            }
            if (ex->lowering &&
                (st = mul_sz(op->kdim, op->hw_out, &n->col32)) != PROF_OK) {
                return st;
            }
            if (narrow) {
                n->x32 = op->in_n;
                n->w32 = op->wn;
                n->b32 = op->bn;
            }
        }
        break;
    case MEMEST_KIND_BATCHNORM:
        /* its widened parameters, then its input in float as below */
        if (narrow) {
            n->w32 = op->wn;
            n->b32 = op->bn;
        }
        /* fall through */
    case MEMEST_KIND_MAXPOOL:
    case MEMEST_KIND_AVGPOOL:
    case MEMEST_KIND_ACTIVATION:
    case MEMEST_KIND_GLOBALAVGPOOL:
        if (p != MEMEST_FP32) {
            n->x32 = op->in_n;
        }
        break;
    case MEMEST_KIND_ADD:
        /* 16-bit and int8: the sum builds in y32, each further input is
         * widened into x32 (all inputs have the output's size) */
        if (p != MEMEST_FP32) {
            n->x32 = op->out_n;
        }
        break;
    default:
        break; /* concat places blocks; the aliases compute nothing */
    }
    return PROF_OK;
}

static size_t max_sz(size_t a, size_t b)
{
    return a > b ? a : b;
}

static uint64_t need_bytes(const struct scratch_need *n)
{
    return (uint64_t)n->col32 * 4 + (uint64_t)n->col8 +
           (uint64_t)n->acc * 4 + (uint64_t)n->x32 * 4 +
           (uint64_t)n->y32 * 4 + (uint64_t)n->t32 * 4 +
           (uint64_t)n->w32 * 4 + (uint64_t)n->b32 * 4;
}

/* ---- channel-blocked activations ----------------------------------------- */

/* What an operator can read and write in NCHW8c: every input (BLK_IN),
 * its output (BLK_OUT), and whether they must share one layout
 * (BLK_SAME: element-wise layers, and the depthwise kernel, which takes
 * both blocked or both NCHW). */
enum { BLK_IN = 1, BLK_OUT = 2, BLK_SAME = 4 };

/* An activation that works on each element alone, in any layout. */
static bool act_elementwise(enum memest_act act)
{
    return act != MEMEST_ACT_SOFTMAX && act != MEMEST_ACT_LOGSOFTMAX;
}

/* A pooling whose output is one value per channel (a window that covers
 * its input, or a global average): the pool that closes a network. */
static bool pool_closes(const struct exec_op *op)
{
    const enum memest_kind kind = op->layer->kind;
    return kind == MEMEST_KIND_GLOBALAVGPOOL ||
           ((kind == MEMEST_KIND_MAXPOOL || kind == MEMEST_KIND_AVGPOOL) &&
            op->layer->out_shape.rank == 3 && op->hw_out == 1);
}

static unsigned blk_caps(const struct exec_op *op)
{
    const struct memest_layer *L = op->layer;
    const bool cin = op->c_in % KERN_CBLOCK == 0;
    const bool cout = op->c_out % KERN_CBLOCK == 0;
    if (pool_closes(op)) {
        /* reads blocked input; its output, [C][1][1] per sample, is the
         * same memory in either layout but is held NCHW, so that what
         * follows (flatten, dense) needs nothing */
        return cin ? BLK_IN : 0u;
    }
    if (L->out_shape.rank != 3 || !act_elementwise(L->act)) {
        return 0;
    }
    switch (L->kind) {
    case MEMEST_KIND_IDENTITY:
    case MEMEST_KIND_DROPOUT:
        /* views: the output is the input's buffer, in its layout */
        return cout ? BLK_IN | BLK_OUT | BLK_SAME : 0;
    case MEMEST_KIND_CONV2D:
        if (conv_is_depthwise(op)) {
            return cin ? BLK_IN | BLK_OUT | BLK_SAME : 0;
        }
        /* the packed kernel's layouts need one group */
        return op->groups == 1 ? (cin ? BLK_IN : 0u) | (cout ? BLK_OUT : 0u)
                               : 0u;
    case MEMEST_KIND_ADD:
    case MEMEST_KIND_ACTIVATION:
        return cout ? BLK_IN | BLK_OUT | BLK_SAME : 0;
    default:
        return 0;
    }
}

static size_t uf_find(size_t *parent, size_t t)
{
    while (parent[t] != t) {
        parent[t] = parent[parent[t]];
        t = parent[t];
    }
    return t;
}

/* Choose each tensor's layout (ex->t_blk). A tensor is blocked unless it
 * is a model input or the output, or some layer that writes or reads it
 * cannot do so blocked; a layer whose tensors must share a layout joins
 * them in one set, which is blocked only if none of its members is held
 * to NCHW. Nothing is converted between layers: a convolution that feeds
 * a pooling simply writes NCHW. */
static int plan_layouts(struct prof_exec *ex)
{
    const size_t n = ex->ntensors;
    size_t *parent = malloc(n * sizeof *parent);
    unsigned char *nchw = calloc(n, 1);
    ex->t_blk = calloc(n, 1);
    if (!parent || !nchw || !ex->t_blk) {
        free(parent);
        free(nchw);
        return PROF_E_NOMEM;
    }
    for (size_t t = 0; t < n; t++) {
        parent[t] = t;
        nchw[t] = t < ex->ninputs || t == n - 1;
    }
    for (size_t i = 0; i < ex->nlayers; i++) {
        const struct exec_op *op = &ex->ops[i];
        const struct memest_layer *L = op->layer;
        const unsigned caps = blk_caps(op);
        if (!(caps & BLK_OUT)) {
            nchw[op->out_t] = 1;
        }
        for (size_t j = 0; j < L->input_count; j++) {
            const size_t t = L->inputs[j];
            if (!(caps & BLK_IN)) {
                nchw[t] = 1;
            }
            if (caps & BLK_SAME) {
                parent[uf_find(parent, t)] = uf_find(parent, op->out_t);
            }
        }
    }
    for (size_t t = 0; t < n; t++) {
        if (nchw[t]) {
            nchw[uf_find(parent, t)] = 1;
        }
    }
    for (size_t t = 0; t < n; t++) {
        ex->t_blk[t] = !nchw[uf_find(parent, t)];
    }
    free(parent);
    free(nchw);
    return PROF_OK;
}

/* Whether tensor t is channel-blocked. */
static bool t_blocked(const prof_exec *ex, size_t t)
{
    return ex->t_blk && ex->t_blk[t];
}

/* A depthwise conv2d that runs on blocked tensors (both or neither). */
static bool conv_dw_blocked(const prof_exec *ex, const struct exec_op *op)
{
    return op->layer->kind == MEMEST_KIND_CONV2D && conv_is_depthwise(op) &&
           t_blocked(ex, op->out_t);
}


static int alloc_params(struct prof_exec *ex, struct exec_op *op)
{
    const enum memest_precision p = ex->precision;
    if (op->wn == 0) {
        return PROF_OK;
    }
    op->w = xcalloc(op->wn, sizeof(float));
    op->b = xcalloc(op->bn, sizeof(float));
    if (!op->w || (op->bn && !op->b)) {
        return PROF_E_NOMEM;
    }
    ex->master_bytes += (uint64_t)(op->wn + op->bn) * sizeof(float);
    switch (p) {
    case MEMEST_FP32: {
        /* Inference runs a convolution on its weights packed once here
         * (and again whenever they are set), not on the [out][in] master:
         * the packed form, padded to whole blocks of output channels, is
         * what it stores. The trainer (no arena) updates the master in
         * place and runs it unpacked. */
        const size_t pb = op->layer->kind == MEMEST_KIND_CONV2D &&
                                  !ex->lowering
                              ? kern_conv2d_packed_bytes(&op->cs)
                              : 0;
        const struct kern_dwconv2d_shape ds =
            kern_conv2d_dw_shape(&op->cs);
        const size_t dpb = conv_dw_blocked(ex, op)
                               ? kern_dwconv2d_packed_bytes(&ds)
                               : 0;
        if (pb || dpb) {
            float **pk = pb ? &op->wpk : &op->dwpk;
            *pk = alloc_aligned(pb ? pb : dpb);
            if (!*pk) {
                return PROF_E_NOMEM;
            }
            op->stored_bytes =
                (uint64_t)(pb ? pb : dpb) + (uint64_t)op->bn * sizeof(float);
            ex->master_unread_bytes += (uint64_t)op->wn * sizeof(float);
        } else {
            op->stored_bytes = (uint64_t)(op->wn + op->bn) * sizeof(float);
        }
        break;
    }
    case MEMEST_FP16:
    case MEMEST_BF16:
        ex->master_unread_bytes +=
            (uint64_t)(op->wn + op->bn) * sizeof(float);
        op->w16 = xcalloc(op->wn, sizeof(uint16_t));
        op->b16 = xcalloc(op->bn, sizeof(uint16_t));
        if (!op->w16 || (op->bn && !op->b16)) {
            return PROF_E_NOMEM;
        }
        op->stored_bytes = (uint64_t)(op->wn + op->bn) * sizeof(uint16_t);
        break;
    case MEMEST_INT8: {
        if (op->layer->kind == MEMEST_KIND_BATCHNORM) {
            /* int8 computes a batch norm in float: no packed form */
            op->stored_bytes = (uint64_t)(op->wn + op->bn) * sizeof(float);
            break;
        }
        ex->master_unread_bytes +=
            (uint64_t)(op->wn + op->bn) * sizeof(float);
        if (conv_dw_s8(ex, op)) {
            op->wq8 = malloc(op->wn);
            op->wscale = xcalloc(op->c_out, sizeof(float));
            if (!op->wq8 || !op->wscale) {
                return PROF_E_NOMEM;
            }
            op->stored_bytes = (uint64_t)op->wn +
                               (uint64_t)op->c_out * sizeof(float) +
                               (uint64_t)op->bn * sizeof(float);
            break;
        }
        op->wpack_group_bytes = kern_q8_packed_bytes(op->ocg, op->kdim);
        size_t total;
        if (op->wpack_group_bytes == 0 ||
            mul_sz(op->wpack_group_bytes, op->groups, &total) != PROF_OK) {
            return PROF_E_OVERFLOW;
        }
        op->wpack = malloc(total);
        op->wscale = xcalloc(op->c_out, sizeof(float));
        if (!op->wpack || !op->wscale) {
            return PROF_E_NOMEM;
        }
        /* packed weights, one scale per channel, the float bias */
        op->stored_bytes = (uint64_t)total +
                           (uint64_t)op->c_out * sizeof(float) +
                           (uint64_t)op->bn * sizeof(float);
        break;
    }
    default:
        break;
    }
    return PROF_OK;
}

/*
 * Tensor lifetimes as the executor runs the model: input t is written at
 * step 0, layer i's output at step i, and a tensor lives until the last
 * step that reads it (the model's output until the last step). An alias
 * (identity, dropout, flatten) is its input's buffer: root[t] names the
 * tensor that owns t's buffer, and the owner lives as long as any tensor
 * that shares it. Roots precede their aliases, so one pass in tensor
 * order carries each life to its owner.
 */
static void tensor_lifetimes(const struct prof_exec *ex, size_t *root,
                             size_t *first, size_t *last)
{
    for (size_t t = 0; t < ex->ninputs; t++) {
        root[t] = t;
        first[t] = last[t] = 0;
    }
    for (size_t i = 0; i < ex->nlayers; i++) {
        const struct exec_op *op = &ex->ops[i];
        const struct memest_layer *L = op->layer;
        root[op->out_t] = op->alias ? root[L->inputs[0]] : op->out_t;
        first[op->out_t] = last[op->out_t] = i;
        for (size_t j = 0; j < L->input_count; j++) {
            last[L->inputs[j]] = i;
        }
    }
    last[ex->ntensors - 1] = ex->nlayers - 1;
    for (size_t t = 0; t < ex->ntensors; t++) {
        if (root[t] != t && last[t] > last[root[t]]) {
            last[root[t]] = last[t];
        }
    }
}

/*
 * Take the offsets of libmemest's arena plan and check them, not assume
 * them: each tensor has the size the executor computes, aliases share
 * their owner's offset, offsets are multiples of the element size, and no
 * two buffers alive at a common step (by the executor's own lifetimes)
 * overlap. *need receives the arena this placement needs, the highest end
 * of a buffer. PROF_E_MEMEST, with a message naming the tensors, when the
 * plan breaks a rule.
 */
static int place_tensors(struct prof_exec *ex,
                         const struct memest_arena_plan *plan, uint64_t *need,
                         struct prof_diag *diag)
{
    const size_t T = ex->ntensors;
    size_t *root = calloc(T, sizeof *root);
    size_t *first = calloc(T, sizeof *first);
    size_t *last = calloc(T, sizeof *last);
    int st = PROF_OK;
    if (!root || !first || !last) {
        st = PROF_E_NOMEM;
        goto done;
    }
    if (plan->tensor_count != T) {
        exec_diag_set(diag, "the arena plan places %zu tensors, the model "
                      "has %zu", plan->tensor_count, T);
        st = PROF_E_MEMEST;
        goto done;
    }
    tensor_lifetimes(ex, root, first, last);
    uint64_t end = 0;
    for (size_t t = 0; t < T; t++) {
        const uint64_t off = plan->offset[t];
        if (plan->bytes[t] != ex->t_bytes[t] || off % ex->sbytes != 0 ||
            (root[t] != t && off != plan->offset[root[t]]) ||
            off > UINT64_MAX - ex->t_bytes[t]) {
            exec_diag_set(diag, "the arena plan puts tensor %zu (%llu bytes) "
                          "at offset %llu; the executor needs %zu bytes at "
                          "a multiple of %u%s", t,
                          (unsigned long long)plan->bytes[t],
                          (unsigned long long)off, ex->t_bytes[t],
                          ex->sbytes,
                          root[t] != t ? ", sharing its input's buffer" : "");
            st = PROF_E_MEMEST;
            goto done;
        }
        if (off + ex->t_bytes[t] > end) {
            end = off + ex->t_bytes[t];
        }
    }
    for (size_t a = 0; a < T; a++) {
        for (size_t b = a + 1; b < T && root[a] == a; b++) {
            if (root[b] != b || first[b] > last[a] || first[a] > last[b]) {
                continue;
            }
            const uint64_t a0 = plan->offset[a], b0 = plan->offset[b];
            if (a0 < b0 + ex->t_bytes[b] && b0 < a0 + ex->t_bytes[a]) {
                exec_diag_set(diag, "the arena plan overlaps tensors %zu and "
                              "%zu, both alive at step %zu", a, b,
                              first[a] > first[b] ? first[a] : first[b]);
                st = PROF_E_MEMEST;
                goto done;
            }
        }
    }
    for (size_t t = 0; t < T; t++) {
        if ((st = u64_sz(plan->offset[t], &ex->t_off[t])) != PROF_OK) {
            goto done;
        }
    }
    for (size_t i = 0; i < ex->nlayers; i++) {
        struct exec_op *op = &ex->ops[i];
        op->in_off = ex->t_off[op->layer->inputs[0]];
        op->out_off = ex->t_off[op->out_t];
    }
    *need = end;
done:
    free(root);
    free(first);
    free(last);
    return st;
}

static int alloc_scratch(struct prof_exec *ex)
{
    struct scratch_need tot = {0};
    for (size_t i = 0; i < ex->nlayers; i++) {
        struct scratch_need n;
        int st = layer_scratch(ex, &ex->ops[i], &n);
        if (st != PROF_OK) {
            return st;
        }
        ex->ops[i].scratch_bytes = need_bytes(&n);
        tot.col32 = max_sz(tot.col32, n.col32);
        tot.col8 = max_sz(tot.col8, n.col8);
        tot.acc = max_sz(tot.acc, n.acc);
        tot.x32 = max_sz(tot.x32, n.x32);
        tot.y32 = max_sz(tot.y32, n.y32);
        tot.t32 = max_sz(tot.t32, n.t32);
        tot.w32 = max_sz(tot.w32, n.w32);
        tot.b32 = max_sz(tot.b32, n.b32);
    }
    /* int8 weights are quantised into the column scratch before packing. */
    if (ex->precision == MEMEST_INT8) {
        for (size_t i = 0; i < ex->nlayers; i++) {
            tot.col8 = max_sz(tot.col8, ex->ops[i].wn);
        }
    }
    ex->col32 = xcalloc(tot.col32, sizeof(float));
    ex->col32_n = tot.col32;
    ex->col8 = xcalloc(tot.col8, 1);
    ex->acc = xcalloc(tot.acc, sizeof(int32_t));
    ex->x32 = xcalloc(tot.x32, sizeof(float));
    ex->y32 = xcalloc(tot.y32, sizeof(float));
    ex->t32 = xcalloc(tot.t32, sizeof(float));
    ex->w32 = xcalloc(tot.w32, sizeof(float));
    ex->b32 = xcalloc(tot.b32, sizeof(float));
    if ((tot.col32 && !ex->col32) || (tot.col8 && !ex->col8) ||
        (tot.acc && !ex->acc) || (tot.x32 && !ex->x32) ||
        (tot.y32 && !ex->y32) || (tot.t32 && !ex->t32) ||
        (tot.w32 && !ex->w32) || (tot.b32 && !ex->b32)) {
        return PROF_E_NOMEM;
    }
    ex->wq_stage = ex->col8;
    ex->scratch_bytes = need_bytes(&tot);
    return PROF_OK;
}

PROF_API int prof_exec_create(const memest_model *model,
                     const struct prof_exec_opts *opts, prof_exec **out,
                     struct prof_diag *diag)
{
    return exec_create(model, opts, true, out, diag);
}

int exec_create(const memest_model *model, const struct prof_exec_opts *opts,
                bool with_arena, prof_exec **out, struct prof_diag *diag)
{
    struct prof_exec_opts o;
    struct memest_totals totals;
    int st = exec_create_args(model, out, diag);

    if (out) {
        *out = NULL;
    }
    if (st != PROF_OK) {
        return st;
    }
    if (opts) {
        o = *opts;
    } else {
        prof_exec_opts_init(&o);
    }
    if (o.batch == 0) {
        exec_diag_set(diag, "the batch size must be at least 1");
        return PROF_E_RANGE;
    }
    if (o.threads < 1 || o.threads > KERN_MAX_THREADS) {
        exec_diag_set(diag, "%u threads: the executor runs on 1 to %d",
                      o.threads, KERN_MAX_THREADS);
        return PROF_E_RANGE;
    }
    if (o.precision != MEMEST_FP32 && o.precision != MEMEST_FP16 &&
        o.precision != MEMEST_BF16 && o.precision != MEMEST_INT8) {
        exec_diag_set(diag, "precision %s is estimated but not executed (use "
                 "fp32, fp16, bf16 or int8)",
                 memest_precision_name(o.precision)
                     ? memest_precision_name(o.precision)
                     : "(unknown)");
        return PROF_E_RANGE;
    }
    int mst = memest_estimate_totals(model, o.batch, o.precision, &totals);
    if (mst != MEMEST_OK) {
        exec_diag_set(diag, "libmemest: %s", memest_strerror(mst));
        return mst == MEMEST_E_OVERFLOW ? PROF_E_OVERFLOW : PROF_E_MEMEST;
    }

    struct prof_exec *ex = calloc(1, sizeof *ex);
    if (!ex) {
        return PROF_E_NOMEM;
    }
    ex->model = model;
    ex->lowering = !with_arena;
    ex->precision = o.precision;
    ex->threads = o.threads;
    ex->thread_min_macs = o.thread_min_macs;
    ex->sbytes = memest_precision_bytes(o.precision);
    ex->nlayers = memest_model_layer_count(model);
    ex->peak_inference_bytes = totals.peak_inference_bytes;
    ex->estimate_parameter_bytes = totals.parameter_bytes;
    if ((st = u64_sz(o.batch, &ex->batch)) != PROF_OK) {
        goto fail;
    }
    /* Tensors: every model input, then every layer's output. */
    ex->ninputs = memest_model_input_count(model);
    ex->ntensors = memest_model_tensor_count(model);
    ex->t_off = calloc(ex->ntensors, sizeof *ex->t_off);
    ex->t_n = calloc(ex->ntensors, sizeof *ex->t_n);
    ex->t_bytes = calloc(ex->ntensors, sizeof *ex->t_bytes);
    ex->t_scale = calloc(ex->ntensors, sizeof *ex->t_scale);
    ex->ops = calloc(ex->nlayers, sizeof *ex->ops);
    if (!ex->t_off || !ex->t_n || !ex->t_bytes || !ex->t_scale || !ex->ops) {
        st = PROF_E_NOMEM;
        goto fail;
    }
    for (size_t t = 0; t < ex->ntensors; t++) {
        struct memest_shape sh = memest_model_tensor_shape(model, t);
        if ((st = mul_sz(ex->batch, shape_elements(&sh), &ex->t_n[t])) !=
                PROF_OK ||
            (st = mul_sz(ex->t_n[t], ex->sbytes, &ex->t_bytes[t])) !=
                PROF_OK) {
            goto fail;
        }
    }
    ex->input_n = ex->t_n[0];
    ex->output_n = ex->t_n[ex->ntensors - 1];
    for (size_t i = 0; i < ex->nlayers; i++) {
        struct exec_op *op = &ex->ops[i];
        op->layer = memest_model_layer(model, i);
        op->index = i;
        if ((st = plan_layer(ex, op, diag)) != PROF_OK) {
            goto fail;
        }
        if ((st = mul_sz(op->in_n, ex->sbytes, &op->in_bytes)) != PROF_OK ||
            (st = mul_sz(op->out_n, ex->sbytes, &op->out_bytes)) !=
                PROF_OK) {
            goto fail;
        }
    }

    /* The estimate is checked, not assumed. */
    if (!with_arena) {
        goto params; /* the caller keeps the tensors */
    }
    struct memest_arena_plan plan;
    mst = memest_plan_arena(model, o.batch, o.precision, &plan);
    if (mst != MEMEST_OK) {
        exec_diag_set(diag, "libmemest's arena plan: %s",
                      memest_strerror(mst));
        st = mst == MEMEST_E_OVERFLOW ? PROF_E_OVERFLOW : PROF_E_MEMEST;
        goto fail;
    }
    uint64_t need = 0;
    st = place_tensors(ex, &plan, &need, diag);
    const uint64_t plan_arena = plan.arena_bytes;
    memest_arena_plan_free(&plan);
    if (st != PROF_OK) {
        goto fail;
    }
    uint64_t want = o.plan_bytes;
    if (want == 0) {
        want = totals.peak_inference_bytes - totals.parameter_bytes;
    }
    ex->plan_bytes = want;
    if (need != want || need != plan_arena) {
        exec_diag_set(diag, "the activations need %llu bytes (the tensors at "
                      "the planned offsets, at %s), but the plan gives %llu",
                      (unsigned long long)need,
                      memest_precision_name(o.precision),
                      (unsigned long long)(need != want ? want : plan_arena));
        st = PROF_E_MEMEST;
        goto fail;
    }
    if ((st = u64_sz(need, &ex->arena_bytes)) != PROF_OK) {
        goto fail;
    }
    ex->arena = alloc_aligned(ex->arena_bytes);
    if (!ex->arena) {
        st = PROF_E_NOMEM;
        goto fail;
    }
    memset(ex->arena, 0, ex->arena_bytes);

    if (o.precision == MEMEST_FP32 && o.channel_blocked &&
        (st = plan_layouts(ex)) != PROF_OK) {
        goto fail;
    }

params:
    if ((st = alloc_scratch(ex)) != PROF_OK) {
        goto fail;
    }
    uint64_t rng = o.seed;
    for (size_t i = 0; i < ex->nlayers; i++) {
        struct exec_op *op = &ex->ops[i];
        if ((st = alloc_params(ex, op)) != PROF_OK) {
            goto fail;
        }
        ex->parameter_bytes += op->stored_bytes;
        if (op->wn == 0) {
            continue;
        }
        init_params(op, &rng);
        model_params(op);
        if ((st = store_params(ex, op)) != PROF_OK) {
            exec_diag_set(diag, "%s: storing the weights: %s",
                     op->layer->name, prof_strerror(st));
            goto fail;
        }
    }
    *out = ex;
    return PROF_OK;
fail:
    prof_exec_destroy(ex);
    return st;
}

PROF_API void prof_exec_destroy(prof_exec *ex)
{
    if (!ex) {
        return;
    }
    for (size_t i = 0; ex->ops && i < ex->nlayers; i++) {
        struct exec_op *op = &ex->ops[i];
        free(op->w);
        free(op->b);
        free(op->w16);
        free(op->b16);
        free(op->wpack);
        free(op->wscale);
        free(op->wpk);
        free(op->dwpk);
        free(op->wq8);
    }
    free(ex->ops);
    free(ex->t_off);
    free(ex->t_n);
    free(ex->t_bytes);
    free(ex->t_scale);
    free(ex->t_blk);
    free(ex->arena);
    free(ex->col32);
    free(ex->col8);
    free(ex->acc);
    free(ex->x32);
    free(ex->y32);
    free(ex->t32);
    free(ex->w32);
    free(ex->b32);
    free(ex);
}

PROF_API const memest_model *prof_exec_model(const prof_exec *ex)
{
    return ex ? ex->model : NULL;
}

PROF_API uint64_t prof_exec_batch(const prof_exec *ex)
{
    return ex ? (uint64_t)ex->batch : 0;
}

PROF_API enum memest_precision prof_exec_precision(const prof_exec *ex)
{
    return ex ? ex->precision : MEMEST_FP32;
}

PROF_API size_t prof_exec_input_count(const prof_exec *ex)
{
    return ex ? ex->input_n : 0;
}

PROF_API size_t prof_exec_output_count(const prof_exec *ex)
{
    return ex ? ex->output_n : 0;
}

PROF_API size_t prof_exec_input_tensors(const prof_exec *ex)
{
    return ex ? ex->ninputs : 0;
}

PROF_API size_t prof_exec_input_count_at(const prof_exec *ex, size_t k)
{
    return ex && k < ex->ninputs ? ex->t_n[k] : 0;
}

PROF_API int prof_exec_memory(const prof_exec *ex,
                              struct prof_exec_memory *out)
{
    if (!ex || !out) {
        return PROF_E_INVALID;
    }
    out->arena_bytes = ex->arena_bytes;
    out->plan_bytes = ex->plan_bytes;
    out->peak_inference_bytes = ex->peak_inference_bytes;
    out->estimate_parameter_bytes = ex->estimate_parameter_bytes;
    out->parameter_bytes = ex->parameter_bytes;
    out->master_bytes = ex->master_bytes;
    out->master_unread_bytes = ex->master_unread_bytes;
    out->scratch_bytes = ex->scratch_bytes;
    return PROF_OK;
}

PROF_API size_t prof_exec_op_count(const prof_exec *ex)
{
    return ex ? ex->nlayers + 1 : 0;
}

PROF_API int prof_exec_op_info(const prof_exec *ex, size_t i,
                      struct prof_exec_op_info *out)
{
    if (!ex || !out || i > ex->nlayers) {
        return PROF_E_INVALID;
    }
    memset(out, 0, sizeof *out);
    if (i == 0) {
        /* the caller's floats of every input, stored at their offsets */
        out->layer = "input";
        out->kind = MEMEST_KIND_INPUT;
        out->input_offset = 0;
        out->output_offset = ex->t_off[0];
        for (size_t k = 0; k < ex->ninputs; k++) {
            out->input_bytes += (uint64_t)ex->t_n[k] * sizeof(float);
            out->output_bytes += ex->t_bytes[k];
        }
        out->bytes_moved = out->input_bytes + out->output_bytes;
        out->threads = 1;
        return PROF_OK;
    }
    const struct exec_op *op = &ex->ops[i - 1];
    const struct memest_layer *L = op->layer;
    out->layer = L->name;
    out->kind = L->kind;
    out->input_offset = op->in_off;
    for (size_t j = 0; j < L->input_count; j++) {
        out->input_bytes += ex->t_bytes[L->inputs[j]];
    }
    out->output_offset = op->out_off;
    out->output_bytes = op->out_bytes;
    /* The counts libmemest reports, at this batch and storage precision;
     * they were checked for overflow by memest_estimate_totals(). */
    out->macs = L->macs_per_sample * (uint64_t)ex->batch;
    out->parameter_bytes = L->parameter_count * ex->sbytes;
    /* An alias (identity, dropout, flatten) reads and writes nothing. */
    out->bytes_moved =
        op->alias ? 0
                  : out->parameter_bytes + out->input_bytes +
                        out->output_bytes;
    out->scratch_bytes = op->scratch_bytes;
    out->threads = exec_op_threads(ex, op);
    out->output_layout = t_blocked(ex, op->out_t) ? KERN_LAYOUT_NCHW8C
                                                  : KERN_LAYOUT_NCHW;
    return PROF_OK;
}

/* ---- parameters ---------------------------------------------------------- */

static int param_layer(const prof_exec *ex, size_t layer,
                       size_t weight_count, size_t bias_count,
                       struct exec_op **op)
{
    if (layer >= ex->nlayers || ex->ops[layer].wn == 0) {
        return PROF_E_INVALID;
    }
    *op = &ex->ops[layer];
    if (weight_count != (*op)->wn || bias_count != (*op)->bn) {
        return PROF_E_RANGE;
    }
    return PROF_OK;
}

PROF_API int prof_exec_set_params(prof_exec *ex, size_t layer,
                                  const float *weights, size_t weight_count,
                                  const float *bias, size_t bias_count)
{
    struct exec_op *op;
    if (!ex || !weights || (bias_count > 0 && !bias)) {
        return PROF_E_INVALID;
    }
    int st = param_layer(ex, layer, weight_count, bias_count, &op);
    if (st != PROF_OK) {
        return st;
    }
    for (size_t i = 0; i < weight_count; i++) {
        if (!isfinite(weights[i])) {
            return PROF_E_RANGE;
        }
    }
    for (size_t i = 0; i < bias_count; i++) {
        if (!isfinite(bias[i])) {
            return PROF_E_RANGE;
        }
    }
    for (size_t i = 0; i < weight_count; i++) {
        op->w[exec_w_slot(op, i)] = weights[i];
    }
    if (bias_count) {
        memcpy(op->b, bias, bias_count * sizeof(float));
    }
    return store_params(ex, op);
}

PROF_API int prof_exec_get_params(const prof_exec *ex, size_t layer,
                                  float *weights, size_t weight_count,
                                  float *bias, size_t bias_count)
{
    struct exec_op *op;
    if (!ex || !weights) {
        return PROF_E_INVALID;
    }
    int st = param_layer(ex, layer, weight_count, bias_count, &op);
    if (st != PROF_OK) {
        return st;
    }
    for (size_t i = 0; i < weight_count; i++) {
        weights[i] = op->w[exec_w_slot(op, i)];
    }
    if (bias && bias_count) {
        memcpy(bias, op->b, bias_count * sizeof(float));
    }
    return PROF_OK;
}

/* ---- float operators ----------------------------------------------------- */

static int dense_f32(const prof_exec *ex, const struct exec_op *op,
                     const float *x, const float *w, const float *b, float *y)
{
    int st = exec_sgemm(ex, op, ex->batch, op->c_out, op->kdim, x, op->kdim,
                        w, op->c_out, y, op->c_out);
    if (st == PROF_OK && op->bn) {
        st = exec_kern_status(kern_nn_bias_add_f32(y, ex->batch, op->c_out,
                                                   b));
    }
    return st;
}

/* The kern_fused_act that applies act in a convolution's or an add's
 * output pass, or -1 when act runs as a pass of its own. */
static int conv_fuse(enum memest_act act)
{
    switch (act) {
    case MEMEST_ACT_NONE:
        return KERN_FUSE_NONE;
    case MEMEST_ACT_RELU:
        return KERN_FUSE_RELU;
    case MEMEST_ACT_RELU6:
        return KERN_FUSE_RELU6;
    default:
        return -1;
    }
}

struct conv_job {
    const prof_exec *ex;
    const struct exec_op *op;
    const float *x, *w, *b;
    const float *wp; /* the packed weights (op->wpk, or op->dwpk for a
                        depthwise conv on blocked tensors), or NULL for w */
    int fuse;
    float *y;
    size_t slot; /* floats of scratch per part */
};

/* Samples [lo, hi) of the batch, or channel units [lo, hi) of a single
 * sample (conv_channel_unit), through libkernels' convolution on scratch
 * block `part`: each output is computed exactly as on one thread. */
static int conv_part(void *arg, size_t part, size_t lo, size_t hi)
{
    const struct conv_job *j = arg;
    const struct exec_op *op = j->op;
    const size_t hw_in = op->h_in * op->w_in;
    struct kern_conv2d_shape cs = op->cs;
    const float *x = j->x, *w = j->w, *b = j->op->bn ? j->b : NULL;
    const float *wp = j->wp;
    float *y = j->y;
    if (wp && wp == op->dwpk) {
        /* a depthwise conv on blocked tensors: its samples, or the
         * channel blocks [lo, hi) of the whole single sample */
        struct kern_dwconv2d_shape ds = kern_conv2d_dw_shape(&cs);
        size_t b0 = 0, b1 = (op->c_out + KERN_CBLOCK - 1) / KERN_CBLOCK;
        if (j->ex->batch > 1) {
            ds.batch = hi - lo;
            x += lo * op->c_in * hw_in;
            y += lo * op->c_out * op->hw_out;
        } else if (conv_parts(j->ex, op) > 1) {
            b0 = lo;
            b1 = hi;
        }
        return exec_kern_status(kern_dwconv2d_nchw8c_blocks_f32(
            &ds, b0, b1, x, wp, b, j->fuse, y));
    }
    if (j->ex->batch > 1) {
        cs.batch = hi - lo;
        x += lo * op->c_in * hw_in;
        y += lo * op->c_out * op->hw_out;
    } else if (conv_parts(j->ex, op) > 1) {
        /* channel units [lo, hi) of an ungrouped or depthwise conv */
        const size_t u = conv_channel_unit(op);
        lo *= u;
        hi = hi * u < op->c_out ? hi * u : op->c_out;
        cs.out_c = hi - lo;
        w += lo * op->kdim; /* [out_c][in_c/groups * kh * kw] */
        wp = wp ? wp + lo * op->kdim : NULL; /* block lo / unit, [K][unit] */
        b = b ? b + lo : NULL;
        y += lo * op->hw_out;
        if (conv_is_depthwise(op)) { /* the channels' own planes */
            cs.in_c = hi - lo;
            cs.groups = hi - lo;
            x += lo * hw_in;
        }
    }
    void *work = j->slot && kern_conv2d_work_bytes(&cs) <=
                                j->slot * sizeof(float)
                     ? j->ex->col32 + part * j->slot
                     : NULL;
    if (wp) {
        const int lin = t_blocked(j->ex, op->layer->inputs[0])
                            ? KERN_LAYOUT_NCHW8C
                            : KERN_LAYOUT_NCHW;
        const int lout = t_blocked(j->ex, op->out_t) ? KERN_LAYOUT_NCHW8C
                                                     : KERN_LAYOUT_NCHW;
        return exec_kern_status(kern_conv2d_packed_layout_f32(
            &cs, lin, lout, x, wp, b, j->fuse, work, y));
    }
    return exec_kern_status(kern_conv2d_f32(&cs, x, w, b, j->fuse, work, y));
}

/* A conv2d in float through libkernels (NCHW; depthwise ones run its
 * direct depthwise kernel, the others its GEMM paths), the bias and `fuse`
 * (a kern_fused_act) in the output pass, the float scratch as its work,
 * on the layer's threads (conv_parts). The trainer's scratch is sized for
 * its lowered columns; a layer whose kernel scratch is larger still (1 x 1
 * on planes of fewer than about 28 pixels) lets libkernels allocate it for
 * the call. */
static int conv_f32(const prof_exec *ex, const struct exec_op *op,
                    const float *x, const float *w, const float *wp,
                    const float *b, int fuse, float *y)
{
    const size_t parts = conv_parts(ex, op);
    struct conv_job j = {ex, op, x, w, b, wp, fuse, y, ex->col32_n / parts};
    return exec_split(conv_split_count(ex, op), (unsigned)parts, conv_part,
                      &j);
}

struct kern_pool2d_shape exec_pool_shape(const struct exec_op *op,
                                         size_t batch)
{
    return (struct kern_pool2d_shape){
        .batch = batch, .channels = op->c_in, .in_h = op->h_in,
        .in_w = op->w_in, .kh = op->kh, .kw = op->kw, .stride_h = op->sh,
        .stride_w = op->sw, .pad_top = op->pad_t, .pad_left = op->pad_l,
        .pad_bottom = op->pad_b, .pad_right = op->pad_r,
        .count_include_pad = op->count_include_pad,
    };
}

static int pool_f32(const prof_exec *ex, const struct exec_op *op,
                    const float *x, float *y)
{
    struct kern_pool2d_shape ps = exec_pool_shape(op, ex->batch);
    const bool max = op->layer->kind == MEMEST_KIND_MAXPOOL;
    int kst;
    if (t_blocked(ex, op->layer->inputs[0])) {
        /* a closing pool (blk_caps): its 1 x 1 output is NCHW */
        kst = max ? kern_maxpool2d_nchw8c_f32(&ps, x, y)
                  : kern_avgpool2d_nchw8c_f32(&ps, x, y);
    } else {
        kst = max ? kern_maxpool2d_f32(&ps, x, y)
                  : kern_avgpool2d_f32(&ps, x, y);
    }
    return exec_kern_status(kst);
}

/* Softmax or log-softmax over the channels at every position of a
 * [batch][C][positions] tensor (rank 3, or rank 2 over dim[0]): transpose
 * to [batch * positions][C], normalise the rows, transpose back. */
static int softmax_channels(const prof_exec *ex, const struct exec_op *op,
                            bool log_sm, const float *x, float *y)
{
    const size_t C = op->c_out, HW = op->hw_out;
    for (size_t b = 0; b < ex->batch; b++) {
        for (size_t c = 0; c < C; c++) {
            const float *src = x + (b * C + c) * HW;
            for (size_t i = 0; i < HW; i++) {
                ex->t32[(b * HW + i) * C + c] = src[i];
            }
        }
    }
    int kst = log_sm
                  ? kern_nn_log_softmax_f32(ex->t32, ex->batch * HW, C,
                                            ex->t32)
                  : kern_nn_softmax_f32(ex->t32, ex->batch * HW, C, ex->t32);
    if (kst != KERN_OK) {
        return exec_kern_status(kst);
    }
    for (size_t b = 0; b < ex->batch; b++) {
        for (size_t c = 0; c < C; c++) {
            float *dst = y + (b * C + c) * HW;
            for (size_t i = 0; i < HW; i++) {
                dst[i] = ex->t32[(b * HW + i) * C + c];
            }
        }
    }
    return PROF_OK;
}

/* y = act(x) over the operator's output size; y may equal x. */
static int apply_act(const prof_exec *ex, const struct exec_op *op,
                     enum memest_act act, const float *x, float *y)
{
    const size_t n = op->out_n;
    const bool channels = op->layer->out_shape.rank >= 2;
    int kst = KERN_OK;
    switch (act) {
    case MEMEST_ACT_NONE:
        if (x != y) {
            memcpy(y, x, n * sizeof(float));
        }
        break;
    case MEMEST_ACT_RELU:
        kst = kern_relu_f32(y, x, n);
        break;
    case MEMEST_ACT_GELU:
        kst = kern_gelu_f32(y, x, n);
        break;
    case MEMEST_ACT_GELU_ERF:
        kst = kern_gelu_erf_f32(y, x, n);
        break;
    case MEMEST_ACT_SIGMOID:
        kst = kern_sigmoid_f32(y, x, n);
        break;
    case MEMEST_ACT_TANH:
        kst = kern_tanh_f32(y, x, n);
        break;
    case MEMEST_ACT_RELU6:
        kst = kern_nn_relu6_f32(y, x, n);
        break;
    case MEMEST_ACT_ERF:
        kst = kern_erf_f32(y, x, n);
        break;
    case MEMEST_ACT_SOFTMAX:
    case MEMEST_ACT_LOGSOFTMAX: {
        const bool log_sm = act == MEMEST_ACT_LOGSOFTMAX;
        if (channels) {
            return softmax_channels(ex, op, log_sm, x, y);
        }
        kst = log_sm ? kern_nn_log_softmax_f32(x, ex->batch, op->c_out, y)
                     : kern_nn_softmax_f32(x, ex->batch, op->c_out, y);
        break;
    }
    default:
        return PROF_E_INVALID;
    }
    return exec_kern_status(kst);
}

/* The layer in float without the activation fused after a dense or
 * conv2d layer: x, parameters and y are float arrays (a batchnorm's w and
 * b are its scale and shift). Layers of one input only. */
static int linear_f32(const prof_exec *ex, const struct exec_op *op,
                      const float *x, const float *w, const float *wp,
                      const float *b, float *y)
{
    const struct memest_layer *L = op->layer;
    switch (L->kind) {
    case MEMEST_KIND_DENSE:
        return dense_f32(ex, op, x, w, b, y);
    case MEMEST_KIND_CONV2D:
        return conv_f32(ex, op, x, w, wp, b, KERN_FUSE_NONE, y);
    case MEMEST_KIND_MAXPOOL:
    case MEMEST_KIND_AVGPOOL:
        return pool_f32(ex, op, x, y);
    case MEMEST_KIND_FLATTEN:
    case MEMEST_KIND_IDENTITY:
    case MEMEST_KIND_DROPOUT:
        if (x != y) {
            memcpy(y, x, op->out_n * sizeof(float));
        }
        return PROF_OK;
    case MEMEST_KIND_ACTIVATION:
        return apply_act(ex, op, L->act, x, y);
    case MEMEST_KIND_BATCHNORM:
        return exec_kern_status(kern_nn_channel_affine_f32(
            x, ex->batch, op->c_out, op->hw_out, w, b, y));
    case MEMEST_KIND_GLOBALAVGPOOL:
        if (t_blocked(ex, op->layer->inputs[0])) {
            return exec_kern_status(kern_nn_global_avgpool_nchw8c_f32(
                x, ex->batch, op->c_in, op->h_in * op->w_in, y));
        }
        return exec_kern_status(kern_nn_global_avgpool_f32(
            x, ex->batch * op->c_in, op->h_in * op->w_in, y));
    default:
        return PROF_E_INVALID;
    }
}

int exec_linear_f32(const prof_exec *ex, const struct exec_op *op,
                    const float *x, float *y)
{
    return linear_f32(ex, op, x, op->w, NULL, op->b, y);
}

int exec_act_f32(const prof_exec *ex, const struct exec_op *op,
                 enum memest_act act, const float *x, float *y)
{
    return apply_act(ex, op, act, x, y);
}

/* The layer in float: x, parameters and y are float arrays; wp, when not
 * NULL, is a convolution's w packed (op->wpk or op->dwpk). */
static int layer_f32(const prof_exec *ex, const struct exec_op *op,
                     const float *x, const float *w, const float *wp,
                     const float *b, float *y)
{
    const enum memest_kind kind = op->layer->kind;
    if (kind == MEMEST_KIND_CONV2D && conv_fuse(op->layer->act) >= 0) {
        return conv_f32(ex, op, x, w, wp, b, conv_fuse(op->layer->act), y);
    }
    int st = linear_f32(ex, op, x, w, wp, b, y);
    /* the activation after a dense, conv2d or standalone batchnorm (a
     * standalone activation layer has applied its own) */
    if (st != PROF_OK || kind == MEMEST_KIND_ACTIVATION ||
        op->layer->act == MEMEST_ACT_NONE) {
        return st;
    }
    return apply_act(ex, op, op->layer->act, y, y);
}

/* An add's input as float: input j (tensor t) loaded into buf, or read
 * where it lies (fp32); the floats to add. */
typedef const float *(*add_load_fn)(prof_exec *ex, size_t t, float *buf,
                                    int *st);

/* y = act(x0 + x1 + ...) over the operator's output size (all of an add's
 * inputs have it), left to right in float, at every precision: each input
 * comes from `load` (x0 into y, the others into xbuf). A relu or relu6
 * runs in the last addition's pass (the bits of a pass of its own, one
 * pass over y fewer: ResNet-8's residual adds); any other activation runs
 * after. */
static int add_float(prof_exec *ex, const struct exec_op *op,
                     add_load_fn load, float *xbuf, float *y)
{
    const struct memest_layer *L = op->layer;
    const int fuse = conv_fuse(L->act);
    int st = PROF_OK;
    const float *sum = load(ex, L->inputs[0], y, &st);
    for (size_t j = 1; st == PROF_OK && j < L->input_count; j++) {
        const float *x = load(ex, L->inputs[j], xbuf, &st);
        if (st != PROF_OK) {
            break;
        }
        const float *pair[2] = {sum, x};
        const int act = j + 1 == L->input_count && fuse >= 0
                            ? fuse
                            : KERN_FUSE_NONE;
        st = exec_kern_status(
            kern_nn_add_act_f32(y, pair, 2, op->out_n, act));
        sum = y;
    }
    if (st == PROF_OK && fuse < 0) {
        st = apply_act(ex, op, L->act, y, y);
    }
    return st;
}

/* fp32: the inputs are read in the arena. */
static const float *load_f32(prof_exec *ex, size_t t, float *buf, int *st)
{
    (void)buf;
    (void)st;
    return (const float *)(ex->arena + ex->t_off[t]);
}

/* A concat along dim[0] (the channels of C x H x W, the features of a
 * vector): each sample of the output is the inputs' samples one after the
 * other. `block` moves n elements of tensor t, from element `from` of t to
 * element `to` of the output, in whatever form it works on. */
typedef int (*concat_block_fn)(prof_exec *ex, const struct exec_op *op,
                               size_t t, size_t from, size_t to, size_t n);

static int concat_blocks(prof_exec *ex, const struct exec_op *op,
                         concat_block_fn block)
{
    const struct memest_layer *L = op->layer;
    const size_t out_sample = op->out_n / ex->batch;
    int st = PROF_OK;
    for (size_t b = 0; st == PROF_OK && b < ex->batch; b++) {
        size_t at = b * out_sample;
        for (size_t j = 0; st == PROF_OK && j < L->input_count; j++) {
            const size_t t = L->inputs[j];
            const size_t sample = ex->t_n[t] / ex->batch;
            st = block(ex, op, t, b * sample, at, sample);
            at += sample;
        }
    }
    return st;
}

/* fp32 and 16-bit: joining copies the stored bits. */
static int copy_block(prof_exec *ex, const struct exec_op *op, size_t t,
                      size_t from, size_t to, size_t n)
{
    memcpy(ex->arena + op->out_off + to * ex->sbytes,
           ex->arena + ex->t_off[t] + from * ex->sbytes, n * ex->sbytes);
    return PROF_OK;
}

/* ---- 16-bit storage ------------------------------------------------------ */

int exec_widen16(enum memest_precision p, float *dst, const uint16_t *src,
                 size_t n)
{
    return exec_kern_status(p == MEMEST_FP16 ? kern_f16_to_f32(dst, src, n)
                                             : kern_bf16_to_f32(dst, src, n));
}

int exec_narrow16(enum memest_precision p, uint16_t *dst, const float *src,
                  size_t n)
{
    return exec_kern_status(p == MEMEST_FP16 ? kern_f32_to_f16(dst, src, n)
                                             : kern_f32_to_bf16(dst, src, n));
}

static int widen(const prof_exec *ex, float *dst, const uint16_t *src,
                 size_t n)
{
    return exec_widen16(ex->precision, dst, src, n);
}

static int narrow(const prof_exec *ex, uint16_t *dst, const float *src,
                  size_t n)
{
    return exec_narrow16(ex->precision, dst, src, n);
}

/*
 * A dense layer stored in 16 bits, computed in fp32 tile by tile: for each
 * block of tile_n weight columns (widened once), each block of tile_m input
 * rows is widened and multiplied into the fp32 result y32, whose every
 * element still sums over all K inputs in one product, as in the untiled
 * layer. Then the bias and the activation on the whole result.
 */
static int dense_16(prof_exec *ex, const struct exec_op *op,
                    const uint16_t *x)
{
    const size_t m = ex->batch, k = op->kdim, n = op->c_out;
    int st = PROF_OK;
    for (size_t j0 = 0; st == PROF_OK && j0 < n; j0 += op->tile_n) {
        const size_t nb = n - j0 < op->tile_n ? n - j0 : op->tile_n;
        /* weights are input-major, [k][n]: one row piece per input */
        for (size_t kk = 0; st == PROF_OK && kk < k; kk++) {
            st = widen(ex, ex->w32 + kk * nb, op->w16 + kk * n + j0, nb);
        }
        for (size_t i0 = 0; st == PROF_OK && i0 < m; i0 += op->tile_m) {
            const size_t mb = m - i0 < op->tile_m ? m - i0 : op->tile_m;
            st = widen(ex, ex->x32, x + i0 * k, mb * k);
            if (st == PROF_OK) {
                st = exec_sgemm(ex, op, mb, nb, k, ex->x32, k, ex->w32, nb,
                                ex->y32 + i0 * n + j0, n);
            }
        }
    }
    if (st == PROF_OK && op->bn) {
        st = widen(ex, ex->b32, op->b16, op->bn);
        if (st == PROF_OK) {
            st = exec_kern_status(
                kern_nn_bias_add_f32(ex->y32, m, n, ex->b32));
        }
    }
    if (st == PROF_OK) {
        st = apply_act(ex, op, op->layer->act, ex->y32, ex->y32);
    }
    return st;
}

/* An add stored in 16 bits: the sum in float in y32 (each further input
 * widened into x32), then its activation. */
/* 16-bit storage: an input widened into buf. */
static const float *load_16(prof_exec *ex, size_t t, float *buf, int *st)
{
    *st = widen(ex, buf, (const uint16_t *)(ex->arena + ex->t_off[t]),
                ex->t_n[t]);
    return buf;
}

static int layer_16(prof_exec *ex, struct exec_op *op)
{
    const uint16_t *x = (const uint16_t *)(ex->arena + op->in_off);
    uint16_t *y = (uint16_t *)(ex->arena + op->out_off);
    const enum memest_kind kind = op->layer->kind;
    const bool last = op->index + 1 == ex->nlayers;
    int st;
    if (op->alias || kind == MEMEST_KIND_CONCAT) {
        /* Nothing to compute (a concat joins the bits); the last layer's
         * float result is what prof_exec_run returns. */
        if (kind == MEMEST_KIND_CONCAT &&
            (st = concat_blocks(ex, op, copy_block)) != PROF_OK) {
            return st;
        }
        return last ? widen(ex, ex->y32, y, op->out_n) : PROF_OK;
    }
    if (kind == MEMEST_KIND_ADD) {
        st = add_float(ex, op, load_16, ex->x32, ex->y32);
        return st == PROF_OK ? narrow(ex, y, ex->y32, op->out_n) : st;
    }
    if (kind == MEMEST_KIND_DENSE) {
        if ((st = dense_16(ex, op, x)) != PROF_OK) {
            return st;
        }
        return narrow(ex, y, ex->y32, op->out_n);
    }
    if ((st = widen(ex, ex->x32, x, op->in_n)) != PROF_OK) {
        return st;
    }
    if (op->wn) {
        if ((st = widen(ex, ex->w32, op->w16, op->wn)) != PROF_OK ||
            (st = widen(ex, ex->b32, op->b16, op->bn)) != PROF_OK) {
            return st;
        }
    }
    st = layer_f32(ex, op, ex->x32, ex->w32, NULL, ex->b32, ex->y32);
    if (st != PROF_OK) {
        return st;
    }
    return narrow(ex, y, ex->y32, op->out_n);
}

/* ---- int8 ---------------------------------------------------------------- */

/* Quantise the float result y32 per tensor into the layer's output. */
static int quantize_out(prof_exec *ex, struct exec_op *op)
{
    int8_t *y = (int8_t *)(ex->arena + op->out_off);
    return exec_kern_status(kern_q8_quantize_tensor_f32(
        ex->y32, op->out_n, y, &ex->t_scale[op->out_t]));
}

static float input_scale(const prof_exec *ex, const struct exec_op *op)
{
    return ex->t_scale[op->layer->inputs[0]];
}

/* Tensor t of the arena dequantised into dst (t_n[t] floats). */
static int dequantize(const prof_exec *ex, size_t t, float *dst)
{
    return exec_kern_status(kern_q8_dequantize_f32(
        (const int8_t *)(ex->arena + ex->t_off[t]), ex->t_n[t],
        ex->t_scale[t], dst));
}

/* int8 add and concat compute in float: their inputs carry scales of
 * their own, so they are dequantised, added or joined in y32, and the
 * result quantised again with its own scale. */
static const float *load_s8(prof_exec *ex, size_t t, float *buf, int *st)
{
    *st = dequantize(ex, t, buf);
    return buf;
}

static int add_s8(prof_exec *ex, struct exec_op *op)
{
    const int st = add_float(ex, op, load_s8, ex->x32, ex->y32);
    return st == PROF_OK ? quantize_out(ex, op) : st;
}

/* int8: each block dequantised with its input's scale into y32. */
static int dequantize_block(prof_exec *ex, const struct exec_op *op,
                            size_t t, size_t from, size_t to, size_t n)
{
    (void)op;
    return exec_kern_status(kern_q8_dequantize_f32(
        (const int8_t *)(ex->arena + ex->t_off[t]) + from, n, ex->t_scale[t],
        ex->y32 + to));
}

static int concat_s8(prof_exec *ex, struct exec_op *op)
{
    int st = concat_blocks(ex, op, dequantize_block);
    return st == PROF_OK ? quantize_out(ex, op) : st;
}

static int dense_s8(prof_exec *ex, struct exec_op *op)
{
    const int8_t *x = (const int8_t *)(ex->arena + op->in_off);
    const enum memest_act act = op->layer->act;
    int st = exec_q8_gemm(ex, op, ex->batch, op->c_out, op->kdim, x,
                          op->kdim, op->wpack, ex->acc, op->c_out);
    if (st != PROF_OK) {
        return st;
    }
    const int kst = kern_q8_requant_f32(ex->batch, op->c_out, ex->acc,
                                        op->c_out, input_scale(ex, op),
                                        op->wscale, op->bn ? op->b : NULL,
                                        act == MEMEST_ACT_RELU, ex->y32,
                                        op->c_out);
    if (kst != KERN_OK) {
        return exec_kern_status(kst);
    }
    if (act != MEMEST_ACT_RELU) {
        st = apply_act(ex, op, act, ex->y32, ex->y32);
        if (st != PROF_OK) {
            return st;
        }
    }
    return quantize_out(ex, op);
}

/* An int8 depthwise conv2d (conv_dw_s8): the input's and the weights'
 * integer values widened to float (exactly), libkernels' depthwise kernel
 * on them without bias, which sums the products exactly, then per channel
 * y = sum * (input scale * weight scale) + bias: the float arithmetic of
 * kern_q8_requant_f32 on the same int32 sums, so the result is the
 * lowering-and-GEMM path's, without a lowering and a one-column GEMM per
 * channel. */
static int dw_s8(prof_exec *ex, struct exec_op *op)
{
    const int8_t *x = (const int8_t *)(ex->arena + op->in_off);
    const float sx = input_scale(ex, op);
    const size_t C = op->c_out;
    int kst = kern_q8_dequantize_f32(x, op->in_n, 1.0f, ex->x32);
    if (kst == KERN_OK) {
        kst = kern_q8_dequantize_f32(op->wq8, op->wn, 1.0f, ex->w32);
    }
    if (kst == KERN_OK) {
        /* a depthwise shape: libkernels runs its direct kernel, which
         * needs no scratch */
        kst = kern_conv2d_f32(&op->cs, ex->x32, ex->w32, NULL,
                              KERN_FUSE_NONE, NULL, ex->y32);
    }
    float *scale = ex->b32, *shift = ex->b32 + C;
    for (size_t c = 0; c < C; c++) {
        scale[c] = sx * op->wscale[c];
        shift[c] = op->bn ? op->b[c] : 0.0f;
    }
    if (kst == KERN_OK) {
        kst = kern_nn_channel_affine_f32(ex->y32, ex->batch, C, op->hw_out,
                                         scale, shift, ex->y32);
    }
    if (kst != KERN_OK) {
        return exec_kern_status(kst);
    }
    if (op->layer->act != MEMEST_ACT_NONE) {
        const int st = apply_act(ex, op, op->layer->act, ex->y32, ex->y32);
        if (st != PROF_OK) {
            return st;
        }
    }
    return quantize_out(ex, op);
}

static int conv_s8(prof_exec *ex, struct exec_op *op)
{
    if (op->wq8) {
        return dw_s8(ex, op);
    }
    const int8_t *x = (const int8_t *)(ex->arena + op->in_off);
    const enum memest_act act = op->layer->act;
    const size_t M = ex->batch * op->hw_out;
    const float sx = input_scale(ex, op);
    int kst = KERN_OK;
    for (size_t g = 0; kst == KERN_OK && g < op->groups; g++) {
        /* [batch * out_h * out_w][kdim]: one sample's rows after another */
        for (size_t b = 0; kst == KERN_OK && b < ex->batch; b++) {
            kst = kern_im2col_s8(&op->cs, x, b, g,
                                 ex->col8 + b * op->hw_out * op->kdim);
        }
        if (kst != KERN_OK) {
            break;
        }
        const int st = exec_q8_gemm(ex, op, M, op->ocg, op->kdim, ex->col8,
                                    op->kdim,
                                    (const unsigned char *)op->wpack +
                                        g * op->wpack_group_bytes,
                                    ex->acc, op->ocg);
        if (st != PROF_OK) {
            return st;
        }
        /* Each sample's rows [b * out_h * out_w ..) of this group's
         * columns, transposed into its NCHW output planes. */
        for (size_t b = 0; kst == KERN_OK && b < ex->batch; b++) {
            kst = kern_q8_requant_f32_t(
                op->hw_out, op->ocg, ex->acc + b * op->hw_out * op->ocg,
                op->ocg, sx, op->wscale + g * op->ocg,
                op->bn ? op->b + g * op->ocg : NULL, act == MEMEST_ACT_RELU,
                ex->y32 + (b * op->c_out + g * op->ocg) * op->hw_out,
                op->hw_out);
        }
    }
    if (kst != KERN_OK) {
        return exec_kern_status(kst);
    }
    if (act != MEMEST_ACT_RELU) {
        int st = apply_act(ex, op, act, ex->y32, ex->y32);
        if (st != PROF_OK) {
            return st;
        }
    }
    return quantize_out(ex, op);
}

static int layer_s8(prof_exec *ex, struct exec_op *op)
{
    const int8_t *x = (const int8_t *)(ex->arena + op->in_off);
    int st;
    if (op->alias) {
        /* the same bytes: the same scale */
        ex->t_scale[op->out_t] = input_scale(ex, op);
        if (op->index + 1 == ex->nlayers) {
            return exec_kern_status(kern_q8_dequantize_f32(
                x, op->out_n, ex->t_scale[op->out_t], ex->y32));
        }
        return PROF_OK;
    }
    switch (op->layer->kind) {
    case MEMEST_KIND_DENSE:
        return dense_s8(ex, op);
    case MEMEST_KIND_CONV2D:
        return conv_s8(ex, op);
    case MEMEST_KIND_ADD:
        return add_s8(ex, op);
    case MEMEST_KIND_CONCAT:
        return concat_s8(ex, op);
    default:
        break;
    }
    /* pooling, activations, batchnorm (float scale and shift), global
     * average: dequantise, compute in float, quantise */
    st = exec_kern_status(
        kern_q8_dequantize_f32(x, op->in_n, input_scale(ex, op), ex->x32));
    if (st == PROF_OK) {
        st = layer_f32(ex, op, ex->x32, op->w, NULL, op->b, ex->y32);
    }
    if (st == PROF_OK) {
        st = quantize_out(ex, op);
    }
    return st;
}

/* ---- running ------------------------------------------------------------- */

int exec_stage_inputs(prof_exec *ex, const float *const *inputs)
{
    int st = PROF_OK;
    for (size_t k = 0; st == PROF_OK && k < ex->ninputs; k++) {
        unsigned char *dst = ex->arena + ex->t_off[k];
        const size_t n = ex->t_n[k];
        switch (ex->precision) {
        case MEMEST_FP32:
            memcpy(dst, inputs[k], n * sizeof(float));
            break;
        case MEMEST_FP16:
        case MEMEST_BF16:
            st = narrow(ex, (uint16_t *)dst, inputs[k], n);
            break;
        case MEMEST_INT8:
            st = exec_kern_status(kern_q8_quantize_tensor_f32(
                inputs[k], n, (int8_t *)dst, &ex->t_scale[k]));
            break;
        default:
            st = PROF_E_INVALID;
            break;
        }
    }
    return st;
}

int exec_run_layer(prof_exec *ex, size_t i)
{
    struct exec_op *op = &ex->ops[i];
    switch (ex->precision) {
    case MEMEST_FP32: {
        const float *x = (const float *)(ex->arena + op->in_off);
        float *y = (float *)(ex->arena + op->out_off);
        if (op->alias) {
            return PROF_OK; /* the output is the input's buffer */
        }
        if (op->layer->kind == MEMEST_KIND_ADD) {
            return add_float(ex, op, load_f32, NULL, y);
        }
        if (op->layer->kind == MEMEST_KIND_CONCAT) {
            return concat_blocks(ex, op, copy_block);
        }
        return layer_f32(ex, op, x, op->w, op->wpk ? op->wpk : op->dwpk,
                         op->b, y);
    }
    case MEMEST_FP16:
    case MEMEST_BF16:
        return layer_16(ex, op);
    case MEMEST_INT8:
        return layer_s8(ex, op);
    default:
        return PROF_E_INVALID;
    }
}

int exec_forward(prof_exec *ex, const float *const *inputs)
{
    int st = exec_stage_inputs(ex, inputs);
    for (size_t i = 0; st == PROF_OK && i < ex->nlayers; i++) {
        st = exec_run_layer(ex, i);
    }
    return st;
}

PROF_API int prof_exec_run_inputs(prof_exec *ex, const float *const *inputs,
                                  const size_t *n_in, size_t count,
                                  float *output, size_t n_out)
{
    if (!ex || !inputs || !n_in || !output || count != ex->ninputs ||
        n_out != ex->output_n) {
        return PROF_E_INVALID;
    }
    for (size_t k = 0; k < count; k++) {
        if (!inputs[k] || n_in[k] != ex->t_n[k]) {
            return PROF_E_INVALID;
        }
    }
    int st = exec_forward(ex, inputs);
    if (st != PROF_OK) {
        return st;
    }
    const float *result =
        ex->precision == MEMEST_FP32
            ? (const float *)(ex->arena + ex->t_off[ex->ntensors - 1])
            : ex->y32;
    memcpy(output, result, n_out * sizeof(float));
    return PROF_OK;
}

PROF_API int prof_exec_run(prof_exec *ex, const float *input, size_t n_in,
                           float *output, size_t n_out)
{
    if (!ex || ex->ninputs != 1) {
        return PROF_E_INVALID;
    }
    return prof_exec_run_inputs(ex, &input, &n_in, 1, output, n_out);
}
