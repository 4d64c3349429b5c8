/* A 2-D convolution through libkernels: fp32 inference on weights packed
 * once (kern_conv2d_pack_f32, or kern_dwconv2d_pack_f32 for a depthwise
 * convolution on channel-blocked tensors), split among threads by samples
 * or output channels; 16-bit storage by the generic widening; int8 as
 * im2col and a packed int8 GEMM per group, or a depthwise convolution on
 * the integer values (dw_s8; static int8: conv_run_s8s, integer only); the
 * trainer's backward by im2col and two
 * GEMMs per sample and group. */
#include <stdlib.h>
#include <string.h>

#include "edgefit/kernels.h"
#include "edgefit/profile.h"
#include "exec/ops.h"
#include "../../alloc_rec.h" /* last: it wraps malloc and co. */

static int conv_plan(prof_exec *ex, struct exec_op *op,
                     struct prof_diag *diag)
{
    const struct memest_layer *L = op->layer;
    int st;
    op->groups = (size_t)L->groups;
    op->ocg = op->c_out / op->groups;
    /* The geometry every conv2d path runs from (libkernels'). */
    op->cs = (struct kern_conv2d_shape){
        .batch = ex->batch, .in_c = op->c_in, .in_h = op->h_in,
        .in_w = op->w_in, .out_c = op->c_out,
        .kh = (size_t)L->kernel_h, .kw = (size_t)L->kernel_w,
        .stride_h = (size_t)L->stride_h, .stride_w = (size_t)L->stride_w,
        .pad_top = (size_t)L->pad_top, .pad_left = (size_t)L->pad_left,
        .pad_bottom = (size_t)L->pad_bottom,
        .pad_right = (size_t)L->pad_right, .groups = op->groups,
        .dilation_h = (size_t)L->dilation_h,
        .dilation_w = (size_t)L->dilation_w,
    };
    if ((st = exec_mul3_sz(op->c_in / op->groups, op->cs.kh, op->cs.kw,
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
    return PROF_OK;
}

static bool conv_is_depthwise(const struct exec_op *op)
{
    return op->groups == op->c_in && op->c_out == op->c_in;
}

/* An int8 depthwise conv2d that runs libkernels' float depthwise kernel on
 * its integer values (dw_s8): every product of two int8 values is at most
 * 127 * 128 in magnitude, so sums of up to 1024 taps stay below 2^24, where
 * float holds every integer, and the float sum is the int32 one. */
static bool conv_dw_s8(const prof_exec *ex, const struct exec_op *op)
{
    return ex->precision == MEMEST_INT8_DYNAMIC && conv_is_depthwise(op) &&
           op->kdim <= 1024;
}

/* A static int8 depthwise conv2d that runs libkernels' integer depthwise
 * kernel (kern_q8_dwconv2d_s8, up to 65536 taps): its activation must be
 * a clamp (none, relu, relu6, clip), since the kernel writes int8; any
 * other runs as a grouped GEMM with a float output stage. */
static bool conv_dw_s8s(const prof_exec *ex, const struct exec_op *op)
{
    const enum memest_act act = op->layer->act;
    return exec_static_s8(ex) && conv_is_depthwise(op) &&
           op->kdim <= 65536 &&
           (act == MEMEST_ACT_NONE || act == MEMEST_ACT_RELU ||
            act == MEMEST_ACT_RELU6 || act == MEMEST_ACT_CLIP);
}

/* How many threads share a conv2d: its samples when the batch has several,
 * else the output channels of one sample when they are independent of each
 * other's input (an ungrouped or a depthwise convolution); 1 when the layer
 * stays on one thread. Each part has its own block of kernel scratch. */
static size_t conv_parts(const prof_exec *ex, const struct exec_op *op);

/* The units a single sample's output channels are split in: one channel of
 * a depthwise convolution (a block of KERN_CBLOCK on blocked tensors,
 * which its kernel computes a block at a time), four of an ungrouped one
 * on raw weights (libkernels' pixel-wide tile is four output channels
 * tall), or on packed weights the widest tile's channels of the selected
 * path (kern_conv2d_split_channels: 32 with AVX-512), so that every part
 * computes its channels with the tiles one thread would. Every tile gives
 * the same sums, so the unit changes only the speed: parts of one
 * 8-channel block ran ResNet-18's 3 x 3 layers on two threads slower than
 * on one, each part an 8-float tile that read the whole input again. */
static size_t conv_channel_unit(const struct exec_op *op)
{
    if (conv_is_depthwise(op)) {
        return op->dwpk ? KERN_CBLOCK : 1;
    }
    return op->wpk ? kern_conv2d_split_channels() : 4;
}

/* Output pixels per unit of a row split: whole tiles of every packed path
 * (12 and 4 pixels, 6, 24 GEMM columns), so that no part runs a partial
 * tile but the plane's last. */
enum { CONV_PIXEL_UNIT = 48 };

/* Whether a single sample's ungrouped, undilated conv on packed weights
 * is split by output pixels (kern_conv2d_packed_pixels_f32) instead of
 * channels: when it has fewer channel units than threads (ResNet-8's 16-
 * and 32-channel layers, MobileNet v2's narrow 1 x 1s, one unit of 32
 * each with AVX-512), which would leave a thread idle; or when its
 * weights are smaller than its input and its plane has a few units per
 * thread. A part of a channel split reads the whole input and packs all
 * of its padded copy; a part of a pixel split reads all the weights and
 * packs the rows it reads (with ResNet-18's stem and 56 x 56 layers
 * and MobileNet v2's wide early planes so split, two threads took 1-4%
 * and 5-7% less time on those networks, alternated runs). */
static bool conv_by_pixels(const prof_exec *ex, const struct exec_op *op)
{
    const struct kern_conv2d_shape *cs = &op->cs;
    /* only fp32 runs the packed weights: the 16-bit paths hand conv_f32
     * the widened master (its raw path computes every pixel, so each
     * part would redo the whole layer) */
    if (ex->precision != MEMEST_FP32 || ex->batch > 1 || !op->wpk ||
        op->groups != 1 ||
        conv_is_depthwise(op) || cs->dilation_h > 1 || cs->dilation_w > 1 ||
        op->hw_out < 2 * CONV_PIXEL_UNIT) {
        return false;
    }
    const size_t u = conv_channel_unit(op);
    const size_t t = exec_op_threads(ex, op);
    return (op->c_out + u - 1) / u < t ||
           (op->wn < op->in_n && op->hw_out >= 2 * t * CONV_PIXEL_UNIT);
}

/* What conv_f32 splits: samples, or channel units or pixel units of one
 * sample, or the groups of a grouped (not depthwise) one. */
static size_t conv_split_count(const prof_exec *ex,
                               const struct exec_op *op)
{
    if (ex->batch > 1) {
        return ex->batch;
    }
    if (conv_by_pixels(ex, op)) {
        return (op->hw_out + CONV_PIXEL_UNIT - 1) / CONV_PIXEL_UNIT;
    }
    if (op->groups == 1 || conv_is_depthwise(op)) {
        const size_t u = conv_channel_unit(op);
        return (op->c_out + u - 1) / u;
    }
    return op->groups;
}

static size_t conv_parts(const prof_exec *ex, const struct exec_op *op)
{
    const size_t t = exec_op_threads(ex, op);
    const size_t n = conv_split_count(ex, op);
    return t < n ? t : n;
}


/* A 1 x 1, stride-1, unpadded layer: the kp GEMM reads its input planes
 * as they are. */
static bool conv_kp_plain(const struct exec_op *op)
{
    const struct kern_conv2d_shape *cs = &op->cs;
    return cs->kh == 1 && cs->kw == 1 && cs->stride_h == 1 &&
           cs->stride_w == 1 && !cs->pad_top && !cs->pad_left &&
           !cs->pad_bottom && !cs->pad_right;
}

/* A layer kern_q8_conv_kp_s8 takes, and whose padded phase planes are
 * fewer bytes than the [K][pixels] rows of the lowering (a 1 x 1 layer of
 * stride 2 reads a quarter of its input: its rows are the smaller). */
static bool conv_kp_inplace(const struct exec_op *op)
{
    const size_t cb = kern_q8_conv_kp_work_bytes(&op->cs);
    const size_t rb = kern_q8_kp_work_bytes(op->c_out, op->kdim);
    return cb && rb && !conv_kp_plain(op) &&
           op->kdim <= (SIZE_MAX - rb) / op->hw_out &&
           cb < rb + op->kdim * op->hw_out;
}

/* Static int8, one group, a vector kp path on this CPU, and a 1 x 1
 * layer or an output of more than 64 pixels: the weights are packed for
 * kern_q8_gemm_kp_s8 too (conv_run_s8s), which takes either output stage.
 * A 1 x 1 layer's kp GEMM writes its output planes directly and fills a
 * short block well (q8s_kp_vnni.c), where the [pixels][K] GEMM pays an
 * int32 tile and a transpose: ResNet-8's 64-pixel shortcut 1.5 us against
 * 2.3, MobileNetV1-0.25's 36-pixel layers 0.75-0.87 of the time, its
 * 9-pixel ones the same. On a single block of a 3 x 3 layer the other
 * measured faster (ResNet-8's 8 x 8 stride-2 layer 5.6 us against 8.1:
 * the virtual pixels of its phase planes fill the block badly). */
static bool conv_kp(const prof_exec *ex, const struct exec_op *op)
{
    const bool one = op->cs.kh == 1 && op->cs.kw == 1;
    return exec_static_s8(ex) && op->groups == 1 &&
           (one || op->hw_out > 64) && kern_q8_kp_native();
}

static int conv_scratch(const prof_exec *ex, struct exec_op *op,
                        struct exec_scratch *n)
{
    const enum memest_precision p = ex->precision;
    const int narrow = p == MEMEST_FP16 || p == MEMEST_BF16;
    int st;
    if (conv_dw_s8s(ex, op)) {
        /* the quantised weights are staged in col8 (exec_alloc_scratch
         * sizes it) when the executor is built; at run time it is the
         * kernel's work, one block of kern_q8_dwconv2d_work_bytes per
         * part of dws_part's split (by samples: at most batch parts) */
        const struct kern_dwconv2d_shape ds = kern_conv2d_dw_shape(&op->cs);
        const size_t t = exec_op_threads(ex, op);
        size_t work;
        op->cwork = kern_q8_dwconv2d_work_bytes(&ds);
        if ((st = exec_mul_sz(op->cwork, t < ex->batch ? t : ex->batch,
                              &work)) != PROF_OK) {
            return st;
        }
        n->col8 = work > op->wn ? work : op->wn;
    } else if (conv_dw_s8(ex, op)) {
        /* dw_s8: the input and the weights as float integers, the
         * per-channel scales and shifts; its quantised weights are
         * staged in col8 */
        n->x32 = op->in_n;
        n->w32 = op->wn;
        n->b32 = 2 * op->c_out;
        n->col8 = op->wn;
    } else if (memest_precision_is_int8(p)) {
        /* Whole batch: [batch * out_h * out_w][kdim] int8 columns, one
         * group at a time, and [..][ocg] int32; the requantisation
         * writes the float result straight into its NCHW planes (static
         * int8's integer stage writes int8 [..][ocg] into acc, then its
         * planes). */
        if ((st = exec_mul3_sz(ex->batch, op->hw_out, op->kdim, &n->col8)) !=
                PROF_OK ||
            (st = exec_mul3_sz(ex->batch, op->hw_out, op->ocg, &n->acc)) !=
                PROF_OK) {
            return st;
        }
        if (conv_kp(ex, op)) {
            /* the kp kernel writes its output planes itself and borrows
             * acc, which it leaves unused, as its work (one thread) */
            const size_t wb = kern_q8_kp_work_bytes(op->c_out, op->kdim);
            if (!wb) {
                return PROF_E_OVERFLOW;
            }
            n->acc = exec_max_sz(n->acc, wb / 4 + 1);
            /* a layer the in-place form takes (kern_q8_conv_kp_s8: its
             * padded phase planes instead of the K x pixels rows) */
            if (conv_kp_inplace(op)) {
                n->acc = exec_max_sz(
                    n->acc, kern_q8_conv_kp_work_bytes(&op->cs) / 4 + 1);
            }
        }
    } else {
        /* libkernels' convolution scratch, one block per thread
         * (conv_f32). The trainer lowers one sample and group into
         * [kdim][out_h * out_w] floats instead, which libmemest's
         * training estimate counts, and lends them to the forward
         * pass. */
        op->cwork = kern_conv2d_work_bytes(&op->cs);
        if ((st = exec_mul_sz((op->cwork + 3) / 4, conv_parts(ex, op),
                         &n->col32)) != PROF_OK) {
            return st;
        }
        if (ex->lowering &&
            (st = exec_mul_sz(op->kdim, op->hw_out, &n->col32)) != PROF_OK) {
            return st;
        }
        if (narrow) {
            n->x32 = op->in_n;
            n->w32 = op->wn;
            n->b32 = op->bn;
        }
    }
    return PROF_OK;
}

static unsigned conv_caps(const struct exec_op *op)
{
    const bool cin = op->c_in % KERN_CBLOCK == 0;
    const bool cout = op->c_out % KERN_CBLOCK == 0;
    if (!exec_blk_possible(op)) {
        return 0;
    }
    if (conv_is_depthwise(op)) {
        return cin ? EXEC_BLK_IN | EXEC_BLK_OUT | EXEC_BLK_SAME : 0u;
    }
    if (op->groups == 1) {
        return (cin ? EXEC_BLK_IN : 0u) | (cout ? EXEC_BLK_OUT : 0u);
    }
    /* grouped: the packed kernel takes blocked layouts when every group's
     * channels, in and out, are whole blocks (RegNet's groups of 16) */
    return (op->c_in / op->groups) % KERN_CBLOCK == 0 &&
                   op->ocg % KERN_CBLOCK == 0
               ? EXEC_BLK_IN | EXEC_BLK_OUT
               : 0u;
}

/* A depthwise conv2d that runs on blocked tensors (both or neither). */
static bool conv_dw_blocked(const prof_exec *ex, const struct exec_op *op)
{
    return conv_is_depthwise(op) && exec_t_blocked(ex, op->out_t);
}

static void conv_init(struct exec_op *op, uint64_t *rng)
{
    exec_init_uniform(op, (double)op->kdim,
                      (double)(op->ocg * op->cs.kh * op->cs.kw), rng);
}

static int conv_alloc_stored(prof_exec *ex, struct exec_op *op)
{
    if (memest_precision_is_int8(ex->precision)) {
        if (!conv_dw_s8(ex, op) && !conv_dw_s8s(ex, op)) {
            const int st = exec_q8_alloc_gemm(ex, op);
            if (st != PROF_OK || !conv_kp(ex, op)) {
                return st;
            }
            const size_t kb = kern_q8_kp_bytes(op->c_out, op->kdim);
            if (!kb) {
                return PROF_E_OVERFLOW;
            }
            op->wkp = malloc(kb);
            if (!op->wkp) {
                return PROF_E_NOMEM;
            }
            /* the kp packing is stored beside the [pixels][K] one, which
             * the float output stage and several threads still run */
            op->stored_bytes += kb;
            return PROF_OK;
        }
        ex->master_unread_bytes +=
            (uint64_t)(op->wn + op->bn) * sizeof(float);
        op->wq8 = malloc(op->wn);
        op->wscale = exec_calloc(op->c_out, sizeof(float));
        if (!op->wq8 || !op->wscale) {
            return PROF_E_NOMEM;
        }
        uint64_t stage = 0;
        const int st = exec_s8_alloc_stage(ex, op, false, &stage);
        if (st != PROF_OK) {
            return st;
        }
        /* int8 weights, a scale per channel, and the float bias
         * (dynamic) or the output stage (static) */
        op->stored_bytes = (uint64_t)op->wn +
                           (uint64_t)op->c_out * sizeof(float) +
                           (exec_static_s8(ex)
                                ? stage
                                : (uint64_t)op->bn * sizeof(float));
        return PROF_OK;
    }
    /* Inference runs a convolution on its weights packed once here (and
     * again whenever they are set), not on the [out][in] master: the
     * packed form, padded to whole blocks of output channels, is what it
     * stores. The trainer (no arena) updates the master in place and runs
     * it unpacked. */
    const size_t pb = !ex->lowering ? kern_conv2d_packed_bytes(&op->cs) : 0;
    const struct kern_dwconv2d_shape ds = kern_conv2d_dw_shape(&op->cs);
    const size_t dpb =
        conv_dw_blocked(ex, op) ? kern_dwconv2d_packed_bytes(&ds) : 0;
    if (pb || dpb) {
        float **pk = pb ? &op->wpk : &op->dwpk;
        *pk = exec_alloc_aligned(pb ? pb : dpb);
        if (!*pk) {
            return PROF_E_NOMEM;
        }
        op->stored_bytes =
            (uint64_t)(pb ? pb : dpb) + (uint64_t)op->bn * sizeof(float);
        ex->master_unread_bytes += (uint64_t)op->wn * sizeof(float);
    }
    return PROF_OK;
}

static int conv_store(prof_exec *ex, struct exec_op *op)
{
    if (memest_precision_is_int8(ex->precision)) {
        return exec_q8_store_gemm(ex, op, op->w);
    }
    int kst = KERN_OK;
    if (op->wpk) {
        kst = kern_conv2d_pack_f32(&op->cs, op->w, op->wpk);
    } else if (op->dwpk) {
        const struct kern_dwconv2d_shape ds = kern_conv2d_dw_shape(&op->cs);
        kst = kern_dwconv2d_pack_f32(&ds, op->w, op->dwpk);
    }
    return exec_kern_status(kst);
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
 * sample (conv_channel_unit) or its pixel units (conv_by_pixels), through
 * libkernels' convolution on scratch block `part`: each output is
 * computed exactly as on one thread. */
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
    const bool split = j->ex->batch == 1 && conv_parts(j->ex, op) > 1;
    size_t p_lo = 0, p_hi = op->hw_out;
    if (split && conv_by_pixels(j->ex, op)) {
        p_lo = lo * CONV_PIXEL_UNIT;
        p_hi = hi * CONV_PIXEL_UNIT < p_hi ? hi * CONV_PIXEL_UNIT : p_hi;
    } else if (j->ex->batch > 1) {
        cs.batch = hi - lo;
        x += lo * op->c_in * hw_in;
        y += lo * op->c_out * op->hw_out;
    } else if (split && op->groups > 1 && !conv_is_depthwise(op)) {
        /* groups [lo, hi) of a grouped conv: their input and output
         * channels (whole blocks on blocked tensors, conv_caps), their
         * raw weights [og][kdim] each, or their packed blocks
         * (ceil(og / 8) of [kdim][8] each) */
        const size_t cg = op->c_in / op->groups, og = op->ocg;
        const size_t nb = (og + KERN_CONV_PACK_BLOCK - 1) /
                          KERN_CONV_PACK_BLOCK;
        cs.groups = hi - lo;
        cs.in_c = cs.groups * cg;
        cs.out_c = cs.groups * og;
        x += lo * cg * hw_in;
        y += lo * og * op->hw_out;
        w += lo * og * op->kdim;
        wp = wp ? wp + lo * nb * op->kdim * KERN_CONV_PACK_BLOCK : NULL;
        b = b ? b + lo * og : NULL;
    } else if (split) {
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
        const int lin = exec_t_blocked(j->ex, op->layer->inputs[0])
                            ? KERN_LAYOUT_NCHW8C
                            : KERN_LAYOUT_NCHW;
        const int lout = exec_t_blocked(j->ex, op->out_t) ? KERN_LAYOUT_NCHW8C
                                                     : KERN_LAYOUT_NCHW;
        return exec_kern_status(kern_conv2d_packed_pixels_f32(
            &cs, lin, lout, p_lo, p_hi, x, wp, b, j->fuse, work, y));
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

/* Fused: a relu or relu6 in the convolution's output pass, any other
 * activation as a pass of its own. */
static int conv_run_f32(prof_exec *ex, const struct exec_op *op,
                        const struct exec_f32_args *a)
{
    const int fuse = a->fused ? exec_fuse_of(op->layer->act) : -1;
    if (fuse >= 0) {
        return conv_f32(ex, op, a->x, a->w, a->wp, a->b, fuse, a->y);
    }
    const int st = conv_f32(ex, op, a->x, a->w, a->wp, a->b, KERN_FUSE_NONE,
                            a->y);
    return exec_then_act(ex, op, a, st);
}

/* An int8 depthwise conv2d (conv_dw_s8): the input's and the weights'
 * integer values widened to float (exactly), libkernels' depthwise kernel
 * on them without bias, which sums the products exactly, then per channel
 * y = sum * (input scale * weight scale) + bias: the float arithmetic of
 * kern_q8_requant_f32 on the same int32 sums, so the result is the
 * lowering-and-GEMM path's, without a lowering and a one-column GEMM per
 * channel. */
static int dw_s8(prof_exec *ex, const struct exec_op *op)
{
    const int8_t *x = (const int8_t *)(ex->arena + op->in_off);
    const float sx = exec_input_scale(ex, op);
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
        const int st = exec_apply_act(ex, op, op->layer->act, ex->y32, ex->y32);
        if (st != PROF_OK) {
            return st;
        }
    }
    return exec_quantize_out(ex, op);
}

static int conv_run_s8(prof_exec *ex, const struct exec_op *op)
{
    if (op->wq8) {
        return dw_s8(ex, op);
    }
    const int8_t *x = (const int8_t *)(ex->arena + op->in_off);
    const enum memest_act act = op->layer->act;
    const size_t M = ex->batch * op->hw_out;
    const float sx = exec_input_scale(ex, op);
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
        int st = exec_apply_act(ex, op, act, ex->y32, ex->y32);
        if (st != PROF_OK) {
            return st;
        }
    }
    return exec_quantize_out(ex, op);
}

/* Static int8, depthwise (conv_dw_s8s): libkernels' integer kernel with
 * the input's zero point and the output stage, split by samples. */
struct dws_job {
    const prof_exec *ex;
    const struct exec_op *op;
    struct kern_q8_outstage os;
};

static int dws_part(void *arg, size_t part, size_t lo, size_t hi)
{
    const struct dws_job *j = arg;
    const struct exec_op *op = j->op;
    struct kern_dwconv2d_shape ds = kern_conv2d_dw_shape(&op->cs);
    ds.batch = hi - lo;
    const int8_t *x = (const int8_t *)(j->ex->arena + op->in_off) +
                      lo * op->c_in * op->h_in * op->w_in;
    int8_t *y = (int8_t *)(j->ex->arena + op->out_off) +
                lo * op->c_out * op->hw_out;
    /* part < min(threads, batch): its own block of col8 (conv_scratch) */
    return exec_kern_status(kern_q8_dwconv2d_s8(
        &ds, x, exec_input_zero(j->ex, op), op->wq8, &j->os,
        j->ex->col8 + part * op->cwork, y));
}

/* Group g's int8 result [batch * out_h * out_w][ocg] (q) into its NCHW
 * output planes. */
static void conv_s8_planes(const prof_exec *ex, const struct exec_op *op,
                           size_t g, const int8_t *q, int8_t *y)
{
    const size_t hw = op->hw_out, ocg = op->ocg;
    for (size_t b = 0; b < ex->batch; b++) {
        const int8_t *qb = q + b * hw * ocg;
        int8_t *yb = y + (b * op->c_out + g * ocg) * hw;
        for (size_t j = 0; j < ocg; j++) {
            for (size_t p = 0; p < hw; p++) {
                yb[j * hw + p] = qb[p * ocg + j];
            }
        }
    }
}

/* Static int8: per group, the input lowered with its zero point in the
 * padding (kern_im2col_s8_zp, a byte transpose for 1 x 1 stride-1
 * unpadded layers) and the packed GEMM with the integer output stage
 * fused (a relu, relu6 or clip as the clamp), then into the NCHW planes (a
 * 1 x 1 output of one group is written in place). Any other activation:
 * the int32 sums to float, the activation in float, quantised with the
 * output's params. */
static int conv_run_s8s(prof_exec *ex, const struct exec_op *op)
{
    if (op->wq8) {
        struct dws_job j = {ex, op, exec_s8_outstage(ex, op, 0)};
        return exec_split(ex->batch, exec_op_threads(ex, op), dws_part, &j);
    }
    const int8_t *x = (const int8_t *)(ex->arena + op->in_off);
    int8_t *y = (int8_t *)(ex->arena + op->out_off);
    const int32_t zx = exec_input_zero(ex, op);
    const bool to_float = op->s8_float_act || exec_s8_final_float(ex, op);
    const size_t M = ex->batch * op->hw_out;
    int kst = KERN_OK;
    if (op->wkp && !to_float && exec_op_threads(ex, op) == 1) {
        /* channels by pixels: a 1 x 1, stride-1, unpadded layer reads its
         * input planes as they are; any other undilated one reads padded
         * phase planes of its input in place (kern_q8_conv_kp_s8), else
         * it is lowered into [K][pixels] rows (col8 holds K * pixels per
         * image) */
        const struct kern_conv2d_shape *cs = &op->cs;
        const bool plain = conv_kp_plain(op);
        const struct kern_q8_outstage os = exec_s8_outstage(ex, op, 0);
        if (conv_kp_inplace(op)) {
            for (size_t b = 0; kst == KERN_OK && b < ex->batch; b++) {
                kst = kern_q8_conv_kp_s8(cs, op->wkp, x, b, zx, &os, y,
                                         ex->acc);
            }
            return exec_kern_status(kst);
        }
        for (size_t b = 0; kst == KERN_OK && b < ex->batch; b++) {
            const int8_t *rows = x + b * op->c_in * op->h_in * op->w_in;
            if (!plain) {
                kst = kern_im2row_s8_kp(cs, x, b, 0, zx, ex->col8);
                rows = ex->col8;
            }
            if (kst == KERN_OK) {
                kst = kern_q8_gemm_kp_s8(op->c_out, op->hw_out, op->kdim,
                                         op->wkp, rows, op->hw_out, zx, &os,
                                         y + b * op->c_out * op->hw_out,
                                         op->hw_out, ex->acc);
            }
        }
        return exec_kern_status(kst);
    }
    for (size_t g = 0; g < op->groups; g++) {
        for (size_t b = 0; kst == KERN_OK && b < ex->batch; b++) {
            kst = kern_im2col_s8_zp(&op->cs, x, b, g, zx,
                                    ex->col8 + b * op->hw_out * op->kdim);
        }
        if (kst != KERN_OK) {
            return exec_kern_status(kst);
        }
        const void *pk =
            (const unsigned char *)op->wpack + g * op->wpack_group_bytes;
        int st;
        if (!to_float && exec_op_threads(ex, op) == 1) {
            const struct kern_q8_outstage os =
                exec_s8_outstage(ex, op, g * op->ocg);
            for (size_t b = 0; b < ex->batch; b++) {
                kst = kern_q8_gemm_s8_t(op->hw_out, op->ocg, op->kdim,
                    ex->col8 + b * op->hw_out * op->kdim, op->kdim, zx, pk,
                    op->wsum + g * op->ocg, &os,
                    y + (b * op->c_out + g * op->ocg) * op->hw_out,
                    op->hw_out);
                if (kst != KERN_OK) {
                    return exec_kern_status(kst);
                }
            }
            continue;
        }
        if (!to_float) {
            const bool direct = op->groups == 1 && op->hw_out == 1;
            int8_t *q = direct ? y : (int8_t *)ex->acc;
            const struct kern_q8_outstage os =
                exec_s8_outstage(ex, op, g * op->ocg);
            st = exec_q8_gemm_s8(ex, op, M, op->ocg, op->kdim, ex->col8,
                                 op->kdim, zx, pk, op->wsum + g * op->ocg,
                                 &os, q, op->ocg);
            if (st == PROF_OK && !direct) {
                conv_s8_planes(ex, op, g, q, y);
            }
            if (st != PROF_OK) {
                return st;
            }
            continue;
        }
        st = exec_q8_gemm(ex, op, M, op->ocg, op->kdim, ex->col8, op->kdim,
                          pk, ex->acc, op->ocg);
        if (st != PROF_OK) {
            return st;
        }
        exec_s8_acc_fix(ex, op, ex->acc, M, op->ocg, op->ocg, g * op->ocg);
        for (size_t b = 0; kst == KERN_OK && b < ex->batch; b++) {
            kst = kern_q8_requant_f32_t(
                op->hw_out, op->ocg, ex->acc + b * op->hw_out * op->ocg,
                op->ocg, exec_input_scale(ex, op), op->wscale + g * op->ocg,
                NULL, 0, ex->y32 + (b * op->c_out + g * op->ocg) * op->hw_out,
                op->hw_out);
        }
        if (kst != KERN_OK) {
            return exec_kern_status(kst);
        }
    }
    if (!to_float) {
        return PROF_OK;
    }
    const int st = exec_apply_act(ex, op, op->layer->act, ex->y32, ex->y32);
    return st == PROF_OK ? exec_quantize_out(ex, op) : st;
}

/* Sum of n floats: eight float lanes the compiler can keep in one vector
 * register (a plain double sum is a chain of dependent scalar adds), then
 * the lanes and the tail in double. */
static double row_sum(const float *d, size_t n)
{
    float acc[8] = {0};
    size_t j = 0;
    for (; j + 8 <= n; j += 8) {
        for (size_t l = 0; l < 8; l++) {
            acc[l] += d[j + l];
        }
    }
    double s = 0.0;
    for (size_t l = 0; l < 8; l++) {
        s += acc[l];
    }
    for (; j < n; j++) {
        s += d[j];
    }
    return s;
}

/* dZ = g after the fused activation; per sample and group the input's
 * columns (im2col, into the float scratch the trainer lends), dW (+)=
 * dZ . col^T, and when the input's gradient is wanted dcol = W^T . dZ
 * summed back into it (col2im); db = the planes' sums. */
static int conv_backward(prof_exec *ex, const struct exec_op *op,
                         const struct exec_grad_args *a)
{
    int st = exec_fused_act_backward(op, a);
    if (st != PROF_OK) {
        return st;
    }
    const float *x = a->x, *dz = a->g;
    /* gb NULL: a folded batch norm's beta takes the bias's place */
    float *gw = a->gw, *gb = op->bn ? a->gb : NULL, *gx = a->gx;
    const size_t batch = ex->batch;
    const size_t hw = op->hw_out, kd = op->kdim;
    float *col = ex->col32;
    int k = KERN_OK;
    if (gx) {
        memset(gx, 0, op->in_n * sizeof(float));
    }
    for (size_t s = 0; k == KERN_OK && s < batch; s++) {
        for (size_t g = 0; k == KERN_OK && g < op->groups; g++) {
            const float *dzg = dz + (s * op->c_out + g * op->ocg) * hw;
            k = kern_im2col_f32(&op->cs, x, s, g, col);
            if (k != KERN_OK) {
                break;
            }
            /* dW_g (+)= dZ_g [ocg x hw] . col^T [hw x kdim] */
            k = kern_sgemm(KERN_MM_TRANS_B | (s ? KERN_MM_ACCUMULATE : 0u),
                           op->ocg, kd, hw, dzg, hw, col, hw,
                           gw + g * op->ocg * kd, kd);
            if (k != KERN_OK || !gx) {
                continue;
            }
            /* dcol = W_g^T [kdim x ocg] . dZ_g [ocg x hw], back into x */
            k = kern_sgemm(KERN_MM_TRANS_A, kd, hw, op->ocg,
                           op->w + g * op->ocg * kd, kd, dzg, hw, col, hw);
            if (k == KERN_OK) {
                k = kern_col2im_f32(&op->cs, col, s, g, gx);
            }
        }
    }
    if (k != KERN_OK) {
        return exec_kern_status(k);
    }
    if (gb) {
        for (size_t c = 0; c < op->c_out; c++) {
            double sum = 0.0;
            for (size_t s = 0; s < batch; s++) {
                sum += row_sum(dz + (s * op->c_out + c) * hw, hw);
            }
            gb[c] = (float)sum;
        }
    }
    return PROF_OK;
}

static unsigned conv_reads(const struct exec_op *op, bool loss_softmax)
{
    const enum memest_act act = op->layer->act;
    return EXEC_READS_X |
           (!loss_softmax && act != MEMEST_ACT_NONE && !exec_act_keeps_pre(act)
                ? EXEC_READS_Y
                : 0u);
}

const struct exec_op_vtable exec_op_conv2d = {
    .threaded = true,
    .plan = conv_plan,
    .scratch = conv_scratch,
    .layout_caps = conv_caps,
    .init_params = conv_init,
    .alloc_stored = conv_alloc_stored,
    .store = conv_store,
    .run_f32 = conv_run_f32,
    .run_s8 = conv_run_s8,
    .run_s8s = conv_run_s8s,
    .backward_f32 = conv_backward,
    .backward_reads = conv_reads,
};
