/* Private to libprofile: the executor's structure, shared by the files of
 * exec/ (create.c building, plan.c planning, params.c parameters,
 * precision.c 16-bit and int8 conversions, run.c the run loop, profile.c
 * timing, threads.c splits), the operators of exec/ops/ (see ops.h) and
 * the trainer. */
#ifndef EDGEFIT_PROFILE_EXECUTOR_H
#define EDGEFIT_PROFILE_EXECUTOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "edgefit/kernels.h"
#include "edgefit/memest.h"
#include "edgefit/profile.h"

/* One layer as the executor runs it. Element counts include the batch. */
struct exec_op_vtable;

struct exec_op {
    const struct memest_layer *layer; /* owned by the model */
    const struct exec_op_vtable *vt;  /* how its kind runs (exec/ops.h) */
    size_t index;                     /* layer index */
    size_t out_t;                     /* the tensor it writes: inputs + index */
    size_t in_n, out_n;               /* elements (in: of inputs[0]) */
    size_t in_bytes, out_bytes;       /* at the storage precision */
    size_t in_off, out_off;           /* byte offsets in the arena */
    /* geometry of inputs[0] and of the output as channels x h x w (rank 1:
     * features x 1 x 1; rank 2: d0 x d1 x 1) */
    size_t c_in, h_in, w_in, c_out, h_out, w_out, hw_out;
    size_t groups; /* conv2d */
    /* pooling windows: kh x kw, strides, padding per side, the average's
     * divisor (see struct kern_pool2d_shape) */
    size_t kh, kw, sh, sw, pad_t, pad_l, pad_b, pad_r;
    int count_include_pad;
    bool alias; /* a view (memest_kind_is_view): the output is the input's
                   buffer, nothing is computed */
    bool w_input_major; /* the master weights are [in][out] (dense), not
                           the API's [out][in] (see exec_w_slot) */
    struct kern_conv2d_shape cs;   /* conv2d: libkernels' geometry */
    size_t cwork;                  /* conv2d: its kern_conv2d_work_bytes
                                    * (static int8 depthwise: its
                                    * kern_q8_dwconv2d_work_bytes, per
                                    * part) */
    size_t kdim; /* GEMM depth: in (dense) or in_c/groups*kh*kw */
    /* dense: the positions of a sample that share its weights, T of a
     * T x D sequence (1 for a vector); its GEMM has batch * steps rows,
     * and c_in, c_out are the per-position features D and N */
    size_t steps;
    /* 16-bit dense: rows of the input and columns of the weights widened
     * to fp32 at a time (see dense_run_16 in exec/ops/dense.c) */
    size_t tile_m, tile_n;
    size_t ocg;  /* output channels per group (dense: out) */
    /* parameters: float master, and the stored form. A conv2d's weights
     * are [out_c][in_c/g][k][k], as the API gives them; a dense layer's are
     * kept input-major, [in][out], so that its product runs on
     * kern_sgemm's untransposed path without copying B on every call
     * (prof_exec_set_params/get_params translate). A batchnorm's are its
     * per-channel scale and shift, in float at every precision but 16-bit
     * storage. */
    size_t wn, bn;
    float *w, *b;
    uint16_t *w16, *b16;     /* fp16/bf16 */
    float *wpk;              /* fp32 inference, conv2d but depthwise: the
                              * weights packed for libkernels
                              * (kern_conv2d_pack_f32), rebuilt with the
                              * stored form */
    float *dwpk;             /* fp32 inference, a depthwise conv2d on
                              * channel-blocked tensors: its weights
                              * packed (kern_dwconv2d_pack_f32) */
    void *wpack;             /* int8: one packed matrix per group */
    int8_t *wq8;             /* int8 depthwise conv2d: the quantised
                              * weights, [channel][kh * kw], in place of
                              * wpack (see dw_s8 in ops/conv2d.c) */
    size_t wpack_group_bytes;
    /* Static int8 conv2d of one group on a CPU with a vector kp path
     * (kern_q8_kp_native): its weights also in the kp packing
     * (kern_q8_pack_kp), so that one thread runs it on the NCHW planes
     * with no transposes (conv_run_s8s); that GEMM's work area is the acc
     * scratch, which this path leaves unused, and counted there */
    void *wkp;
    float *wscale;           /* int8: one scale per output channel */
    /* Static int8 (MEMEST_INT8), a dense or conv2d layer: the int32 bias
     * (b / (x_scale * wscale[c]), half to even), the packed weights' row
     * sums (kern_q8_packed_row_sums, for the input's zero point), and the
     * fixed-point multiplier and shift of x_scale * wscale[c] / y_scale,
     * one per output channel; qmin and qmax the clamp of its fused
     * activation (relu, relu6, clip) in the output's params. s8_float_act:
     * the fused activation is none of those, so the output stage goes to
     * float, the activation runs there and the result is quantised. */
    int32_t *bias32, *wsum, *mult;
    int *shift;
    /* PROF_INT8_REQUANT_FLOAT: x_scale * wscale[c] / y_scale in float
     * (ONNX Runtime's order), the output stage's scale; else NULL */
    float *fscale;
    int32_t qmin, qmax;
    bool s8_float_act;
    uint64_t stored_bytes;   /* parameters as stored */
    uint64_t scratch_bytes;  /* scratch this operator touches */
    /* pad, ceil-mode pools: a ceil-mode pool's extra rows and columns
     * past pad_b and pad_r (kern_pool2d_ceil_pad; pad_b and pad_r include
     * them); pool_copy: an average with count_include_pad whose windows
     * the extra cuts runs on a zero-padded copy of x (in t32) with
     * count_include_pad 0, which divides by the cells inside input and
     * padding, PyTorch's divisor */
    size_t pool_extra_h, pool_extra_w;
    bool pool_copy;
    /* a layer with working memory (memest_layer.work_elements: an
     * attention's score matrix): its block in the arena, as libmemest's
     * plan places it (work_bytes 0: none) */
    size_t work_off, work_bytes;
};

struct prof_exec {
    const memest_model *model;
    size_t batch;
    enum memest_precision precision;
    enum prof_int8_requant int8_requant; /* static int8's output stage */
    unsigned sbytes; /* storage bytes per element */
    size_t nlayers;
    struct exec_op *ops;
    size_t ninputs;   /* model inputs */
    size_t input_n, output_n; /* elements of input 0 and of the output */

    /* Tensors (see struct memest_layer): t < ninputs is input t, t =
     * ninputs + i the output of layer i. Offsets in the arena (those of
     * memest_plan_arena), elements (batch included) and bytes at the
     * storage precision; int8's per-tensor scale and zero point (real =
     * scale * (q - zero)): fixed when the executor is built at static int8
     * (MEMEST_INT8, from prof_exec_opts.ranges or the model's own
     * quantisation; a view shares its input's), set when the tensor is
     * written at int8-dynamic (zero point 0). */
    size_t ntensors;
    size_t *t_off, *t_n, *t_bytes;
    float *t_scale;
    int32_t *t_zero;
    /* fp32 inference: tensor t is channel-blocked (NCHW8c, see
     * exec_plan_layouts) rather than NCHW; NULL when every tensor is NCHW. A
     * blocked tensor has a multiple of 8 channels, so its size and place in
     * the arena are those of the plan. */
    unsigned char *t_blk;

    unsigned char *arena;
    size_t arena_bytes;
    uint64_t plan_bytes;
    uint64_t peak_inference_bytes, estimate_parameter_bytes;
    uint64_t parameter_bytes, master_bytes, scratch_bytes;
    uint64_t master_unread_bytes; /* of master_bytes, what inference does
                                     not read */

    /* scratch, each sized for its largest user */
    bool lowering;   /* col32 also holds a conv2d's lowered columns (the
                      * trainer's, one sample and group) */
    float *col32;    /* libkernels' conv2d work; the trainer's columns */
    size_t col32_n;  /* floats in col32 */
    int8_t *col8;    /* int8 im2col, whole batch, one group */
    int8_t *wq_stage; /* = col8: int8 weights before packing */
    int32_t *acc;    /* int32 GEMM results */
    float *x32, *y32; /* float input and result of 16-bit/int8 operators */
    float *t32;      /* transposes (int8 conv2d, channel softmax) */
    float *w32, *b32; /* widened 16-bit parameters */

    /* threads: layers of at least thread_min_macs MACs (dense, conv2d)
     * run on `threads` threads, the others on the caller's */
    unsigned threads;
    uint64_t thread_min_macs;
    bool splits; /* some layer runs on `threads` threads (exec_op_threads) */
};

/* Static int8: activations with fixed per-tensor params (MEMEST_INT8), as
 * opposed to int8-dynamic's scales computed per batch. */
static inline bool exec_static_s8(const prof_exec *ex)
{
    return ex->precision == MEMEST_INT8;
}

/* ---- threads (threads.c) ---- */

/* The threads operator op runs on: ex->threads for a layer whose kind
 * splits (exec_op_vtable.threaded: dense, conv2d, the pools, add and
 * concat, unless exec_op_vtable.serial says not here) of at least
 * ex->thread_min_macs units of work at the batch (exec_split_work), else
 * 1. */
unsigned exec_op_threads(const prof_exec *ex, const struct exec_op *op);

/* A layer's work per sample as the thread threshold counts it: its MACs;
 * for a pool, which has none, its window reads (output elements times the
 * window's), saturating at UINT64_MAX; for an add or concat its output
 * elements. */
uint64_t exec_split_work(const struct memest_layer *L);

/* At the start of a forward pass that splits a layer: the pool's workers
 * are woken (kern_parallel_wake). One asleep since the last pass (they
 * sleep 0.2 ms after their last piece) takes tens of microseconds to
 * start; woken now, it starts during the layers before the first split
 * one (ResNet-8 at batch 1 on two threads took 1.21-1.27x its one-thread
 * time when each split layer waited for it). */
void exec_wake_threads(const prof_exec *ex);

/* Whether some layer splits: ex->splits, set once the operators are
 * built (the thread count, threshold and batch are fixed by then). */
bool exec_any_split(const prof_exec *ex);

/* One piece of exec_split(): the elements [lo, hi), on the thread
 * numbered `part` (below min(threads, n)), whose scratch block it may use. */
typedef int (*exec_part_fn)(void *ctx, size_t part, size_t lo, size_t hi);

/* Cut [0, n) into contiguous pieces (up to four per thread) and run fn on
 * each on min(threads, n) threads (kern_parallel_pieces), each thread
 * taking the next piece not yet taken; the first failing piece's status. */
int exec_split(size_t n, unsigned threads, exec_part_fn fn, void *ctx);

/* C = A.B (kern_sgemm, no flags) on exec_op_threads(op) threads. */
int exec_sgemm(const prof_exec *ex, const struct exec_op *op, size_t m,
               size_t n, size_t k, const float *a, size_t lda,
               const float *b, size_t ldb, float *c, size_t ldc);

/* kern_q8_gemm with its rows cut among exec_op_threads(op) threads. */
int exec_q8_gemm(const prof_exec *ex, const struct exec_op *op, size_t m,
                 size_t n, size_t k, const int8_t *a, size_t lda,
                 const void *packed, int32_t *c, size_t ldc);

/* kern_q8_gemm_s8 (static int8, fused output stage) with its rows cut
 * among exec_op_threads(op) threads: each row's bytes are the same
 * whatever the cut. */
int exec_q8_gemm_s8(const prof_exec *ex, const struct exec_op *op, size_t m,
                    size_t n, size_t k, const int8_t *a, size_t lda,
                    int32_t a_zero, const void *packed, const int32_t *w_sums,
                    const struct kern_q8_outstage *os, int8_t *q, size_t ldq);

/* ---- building (create.c) ---- */

/* Fill diag (may be NULL): column 0 and the formatted message. */
void exec_diag_set(struct prof_diag *diag, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Fill diag for a libmemest call (`what`, e.g. "libmemest's arena plan")
 * that failed with mst, a function with no diagnostic of its own: out of
 * memory names the bytes libmemest failed to get (memest_nomem_bytes()),
 * anything else its status text. Returns prof_of_memest(mst). */
int exec_diag_memest(struct prof_diag *diag, const char *what, int mst);

/* The common start of a create function: clear diag (may be NULL), check
 * model and the out-pointer. PROF_E_INVALID when either is NULL. */
int exec_create_args(const memest_model *model, const void *out,
                     struct prof_diag *diag);

/* A libkernels status as a libprofile one. Inline, as the conversions
 * below: a 16-bit dense layer converts one weight row piece at a time,
 * thousands of calls a layer, and a call more each cost it 10%. */
static inline int exec_kern_status(int kst)
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

/* calloc that returns NULL for n == 0 (nothing to hold). */
void *exec_calloc(size_t n, size_t size);

/* bytes rounded up to 64 (a cache line), 64-byte aligned; NULL on
 * overflow or when out of memory. Release with free(). */
void *exec_alloc_aligned(size_t bytes);

/* Build an executor; with_arena false skips the activation arena and its
 * check against the plan (the trainer keeps every tensor itself and runs
 * the operators on its own buffers). */
int exec_create(const memest_model *model, const struct prof_exec_opts *opts,
                bool with_arena, prof_exec **out, struct prof_diag *diag);

/* ---- sizes ---- */

static inline int exec_mul_sz(size_t a, size_t b, size_t *out)
{
    return __builtin_mul_overflow(a, b, out) ? PROF_E_OVERFLOW : PROF_OK;
}

static inline int exec_mul3_sz(size_t a, size_t b, size_t c, size_t *out)
{
    size_t t;
    if (exec_mul_sz(a, b, &t) != PROF_OK) {
        return PROF_E_OVERFLOW;
    }
    return exec_mul_sz(t, c, out);
}

static inline int exec_u64_sz(uint64_t v, size_t *out)
{
    if (v > SIZE_MAX) {
        return PROF_E_OVERFLOW;
    }
    *out = (size_t)v;
    return PROF_OK;
}

static inline size_t exec_max_sz(size_t a, size_t b)
{
    return a > b ? a : b;
}

/* ---- planning (plan.c) ---- */

/* Geometry of layer op (op->layer, op->index and op->vt set), its
 * parameter counts, and what its kind's plan checks. */
int exec_plan_layer(prof_exec *ex, struct exec_op *op,
                    struct prof_diag *diag);

/* Choose each tensor's layout (ex->t_blk), fp32 inference only. */
int exec_plan_layouts(prof_exec *ex);

/* Take libmemest's arena plan, check it against the executor's own
 * tensor sizes and lifetimes, and set the offsets; *need receives the
 * arena the placement needs. */
int exec_place_tensors(prof_exec *ex, const struct memest_arena_plan *plan,
                       uint64_t *need, struct prof_diag *diag);

/* Every operator's scratch (its scratch_bytes) and the executor's shared
 * buffers, each sized for its largest user. */
int exec_alloc_scratch(prof_exec *ex);

/* Whether tensor t is channel-blocked. */
static inline bool exec_t_blocked(const prof_exec *ex, size_t t)
{
    return ex->t_blk && ex->t_blk[t];
}

/* ---- parameters (params.c) ---- */

/* Where element i of a layer's weights in the API's order ([out][in] for
 * dense, [out_c][in_c/g][k][k] for conv2d) lives in op->w. */
size_t exec_w_slot(const struct exec_op *op, size_t i);

/* Allocate a layer's master and stored parameters (nothing when it has
 * none); counts master_bytes, master_unread_bytes, op->stored_bytes. */
int exec_alloc_params(prof_exec *ex, struct exec_op *op);

/* Draw a layer's initial parameters from *rng, replace them with the
 * model's own weights when it carries them, and store them. */
int exec_init_params(prof_exec *ex, struct exec_op *op, uint64_t *rng);

/* ---- precision conversion (precision.c) ---- */

/* 16-bit storage of precision p (fp16 or bf16) to float and back, through
 * libkernels' conversions (round to nearest even). */
static inline int exec_widen16(enum memest_precision p, float *dst,
                               const uint16_t *src, size_t n)
{
    return exec_kern_status(p == MEMEST_FP16 ? kern_f16_to_f32(dst, src, n)
                                             : kern_bf16_to_f32(dst, src, n));
}

static inline int exec_narrow16(enum memest_precision p, uint16_t *dst,
                                const float *src, size_t n)
{
    return exec_kern_status(p == MEMEST_FP16 ? kern_f32_to_f16(dst, src, n)
                                             : kern_f32_to_bf16(dst, src, n));
}

/* ---- running (run.c) ---- */

/* Store the caller's floats as the model's inputs (inputs[k] holds
 * ex->t_n[k] floats) at the storage precision. */
int exec_stage_inputs(prof_exec *ex, const float *const *inputs);

/* Run layer i (the tensors it reads must be valid). */
int exec_run_layer(prof_exec *ex, size_t i);

/* Stage the inputs and run every layer. */
int exec_forward(prof_exec *ex, const float *const *inputs);

/* Operator op in float on any buffers (op->out_n floats written to y),
 * with the master parameters, WITHOUT the activation fused after a dense
 * or conv2d layer (a standalone activation layer applies its own): its
 * kind's run_f32. Uses the float im2col scratch. Operators of one input
 * only. */
int exec_linear_f32(prof_exec *ex, const struct exec_op *op, const float *x,
                    float *y);

/* y = act(x) over op->out_n floats (y may equal x). */
int exec_act_f32(const prof_exec *ex, const struct exec_op *op,
                 enum memest_act act, const float *x, float *y);

/* The libkernels shape of a pooling operator at a batch size. */
struct kern_pool2d_shape exec_pool_shape(const struct exec_op *op,
                                         size_t batch);

#endif
