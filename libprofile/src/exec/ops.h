/* Private to libprofile: the executor's operators, one file per kind under
 * exec/ops/, each a const struct exec_op_vtable that the drivers (plan.c,
 * params.c, run.c, precision.c, the trainer) index by enum memest_kind.
 *
 * Adding an operator (libprofile side; its kind, shapes and counts come
 * from libmemest):
 *   1. copy exec/ops/TEMPLATE.c to exec/ops/<kind>.c and fill in what the
 *      kind needs: run_f32 always, the other fields when the defaults
 *      below do not fit;
 *   2. declare its table entry at the end of this header (extern const
 *      struct exec_op_vtable exec_op_<kind>);
 *   3. add one row to exec_op_table in exec/ops/table.c;
 *   4. add the file to prof_src in libprofile/meson.build;
 *   5. tests in tests/profile/ (test_exec.c's double-precision reference;
 *      test_train.c when it has a backward pass).
 * Nothing else: a kind with no row is refused by name when an executor
 * is built (exec_op_find), and by the trainer when it has no backward.
 */
#ifndef EDGEFIT_PROFILE_EXEC_OPS_H
#define EDGEFIT_PROFILE_EXEC_OPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "exec/executor.h"

/* What an operator can read and write in NCHW8c: every input
 * (EXEC_BLK_IN), its output (EXEC_BLK_OUT), and whether they must share
 * one layout (EXEC_BLK_SAME: element-wise layers, and the depthwise
 * kernel, which takes both blocked or both NCHW). */
enum { EXEC_BLK_IN = 1, EXEC_BLK_OUT = 2, EXEC_BLK_SAME = 4 };

/* Scratch needs of one operator, in elements of each of the executor's
 * shared buffers (see struct prof_exec). */
struct exec_scratch {
    size_t col32, col8, acc, x32, y32, t32, w32, b32;
};

/* The float operands of run_f32. x is the first input (an operator of
 * several inputs, add and concat, reads them all from the arena instead);
 * w and b the parameters as floats (the master, or 16-bit ones widened;
 * b NULL: no bias, a conv2d or dense before its folded batch norm in the
 * trainer);
 * wp the packed weights of fp32 inference (op->wpk or op->dwpk) or NULL;
 * y the output. fused: apply the activation fused after the operator
 * (layer->act of a dense, conv2d, batchnorm or add); the trainer runs the
 * operator without it and applies it itself. */
struct exec_f32_args {
    const float *x;
    const float *w, *wp, *b;
    float *y;
    bool fused;
};

/* The trainer's tensors for one layer's backward pass, in float: x, y its
 * forward input and output, pre the pre-activation of a fused gelu (else
 * NULL); g the gradient of the output (an operator with a fused
 * activation overwrites it with that of the pre-activation); gx that of
 * the input (NULL: not wanted, the first layer); gw, gb of the
 * parameters, in the master's layout. loss_softmax: the layer's softmax is
 * fused with the loss, g is already the logits' gradient. */
struct exec_grad_args {
    const float *x, *y, *pre;
    float *g, *gx, *gw, *gb;
    bool loss_softmax;
    /* add and concat: the gradient of each input (input_count entries,
     * NULL: not wanted) in place of gx, and whether it is added to what
     * the buffer holds (the tensor has another reader whose share is
     * already there) rather than written */
    float *const *gxs;
    const bool *gx_add;
    /* batchnorm in training mode: the batch's mean and 1/sqrt(var + eps)
     * per channel (2 x channels floats) that the forward used */
    const float *stat;
    /* g is already the gradient before the fused activation (the trainer
     * took it through a folded batch norm): none is taken */
    bool act_done;
    /* matmul: the forward inputs (input_count of them), as the gradients
     * of both operands read each other */
    const float *const *xs;
};

/* A batch norm in training mode, as PyTorch's nn.BatchNorm2d/1d (ops/
 * batchnorm.c), over `channels` channels of `hw` positions in each of
 * `batch` samples (NCHW): gamma, beta its parameters. A standalone
 * batchnorm's are the trainer's op->w and op->b (not the folded scale and
 * shift inference runs: exec_bn_of); a batch norm folded into a conv2d or
 * dense layer keeps its gamma in the trainer and beta in the layer's bias.
 * run: running mean then running variance (2 x channels floats).
 * exec_bn_train normalises x with the statistics of the batch (over the
 * batch and the positions; the biased variance), writes them to stat
 * (mean, then 1/sqrt(var + eps)) and updates run with momentum 0.1 and the
 * unbiased variance; exec_bn_eval normalises with run; exec_bn_backward
 * takes g to gx (may be g; NULL: not wanted) and the parameters'
 * gradients through the batch statistics. None applies an activation. */
struct exec_bn {
    size_t batch, channels, hw;
    double eps;
    const float *gamma, *beta;
};
struct exec_bn exec_bn_of(const prof_exec *ex, const struct exec_op *op);
int exec_bn_train(const struct exec_bn *bn, const float *x, float *y,
                  float *stat, float *run);
int exec_bn_eval(const struct exec_bn *bn, const float *x, float *y,
                 const float *run);
int exec_bn_backward(const struct exec_bn *bn, const float *x,
                     const float *g, const float *stat, float *gx,
                     float *ggamma, float *gbeta);
/* PyTorch's BatchNorm momentum: run = (1 - m) run + m batch. */
#define EXEC_BN_MOMENTUM 0.1

/* The trainer's forward of an add (inputs of one shape, or two that
 * broadcast, or one and a constant) and of a concat, from the inputs'
 * float buffers xs (input_count of them) into y; without the add's act. */
int exec_add_train_f32(const prof_exec *ex, const struct exec_op *op,
                       const float *const *xs, float *y);
int exec_concat_train_f32(const prof_exec *ex, const struct exec_op *op,
                          const float *const *xs, float *y);

/* What a backward pass reads of the forward tensors (backward_reads). */
enum { EXEC_READS_X = 1, EXEC_READS_Y = 2 };

struct exec_op_vtable {
    /* Runs on several threads when large (exec_op_threads). */
    bool threaded;
    /* A threaded operator that runs on one thread at this precision after
     * all (a path of it that does not split). NULL: it always splits. */
    bool (*serial)(const prof_exec *ex, const struct exec_op *op);
    /* Geometry beyond the common one plan.c sets (shapes as c x h x w,
     * element counts, parameter counts wn and bn when init_params is
     * set): kdim, groups, kernel shapes; a message in diag when libkernels
     * cannot run the layer. NULL: nothing more. */
    int (*plan)(prof_exec *ex, struct exec_op *op, struct prof_diag *diag);
    /* The scratch it needs at ex->precision, added to the float result
     * (y32) every 16-bit and int8 operator has and the transposed copy of
     * a softmax over channels (t32). NULL: nothing more. */
    int (*scratch)(const prof_exec *ex, struct exec_op *op,
                   struct exec_scratch *need);
    /* The EXEC_BLK_ flags of fp32 inference. NULL: NCHW only. */
    unsigned (*layout_caps)(const struct exec_op *op);
    /* Draw the initial parameters (op->wn weights in op->w, op->bn biases
     * in op->b) from *rng. NULL: the kind has no parameters. */
    void (*init_params)(struct exec_op *op, uint64_t *rng);
    /* fp32 and int8: allocate the form the kernels read (packed, int8)
     * and set op->stored_bytes and what of the master goes unread; leave
     * stored_bytes 0 when the float master is what runs. NULL: it is. */
    int (*alloc_stored)(prof_exec *ex, struct exec_op *op);
    /* fp32 and int8: derive that form from the master (when built and
     * after every prof_exec_set_params). NULL: nothing to derive. */
    int (*store)(prof_exec *ex, struct exec_op *op);
    /* The operator in float (see struct exec_f32_args). Required. */
    int (*run_f32)(prof_exec *ex, const struct exec_op *op,
                   const struct exec_f32_args *a);
    /* 16-bit storage on the arena. NULL: exec_run_16_generic, which widens
     * the input and parameters, runs run_f32 and narrows the result. */
    int (*run_16)(prof_exec *ex, const struct exec_op *op);
    /* int8-dynamic on the arena. NULL: exec_run_s8_generic, which
     * dequantises the input, runs run_f32 on the float parameters and
     * quantises with the result's own scale. */
    int (*run_s8)(prof_exec *ex, const struct exec_op *op);
    /* Static int8 on the arena: int8 in and out with the tensors' fixed
     * params (ex->t_scale, t_zero), in integer where the kind can. NULL:
     * exec_run_s8_generic, which dequantises the input with its params,
     * runs run_f32 and quantises with the output's (round half to even);
     * an operator of several inputs must have one. */
    int (*run_s8s)(prof_exec *ex, const struct exec_op *op);
    /* The trainer's backward pass in float. NULL: the trainer refuses a
     * model with the layer, naming it and its kind. */
    int (*backward_f32)(prof_exec *ex, const struct exec_op *op,
                        const struct exec_grad_args *a);
    /* EXEC_READS_ flags: what backward_f32 reads of x and y, so that
     * mixed precision widens only those. NULL: neither. */
    unsigned (*backward_reads)(const struct exec_op *op, bool loss_softmax);
};

/* ---- the table (ops/table.c) ---- */

/* The entry of kind, or NULL when the executor has none (then the kind is
 * refused by name, never run as another). */
const struct exec_op_vtable *exec_op_find(enum memest_kind kind);


/* The kinds the trainer has a backward pass for, as "a, b and c", in buf
 * (always terminated). */
void exec_trainable_kinds(char *buf, size_t len);

/* ---- helpers the operators share ---- */

/* The kern_fused_act that applies act in a convolution's or an add's
 * output pass, or -1 when act runs as a pass of its own. */
int exec_fuse_of(enum memest_act act);

/* A softmax's or log-softmax's output as [outer][n][inner] around its
 * axis (L->axis), outer including the batch (ops/activation.c). */
void exec_softmax_geometry(const struct memest_layer *L, size_t batch,
                           size_t *outer, size_t *n, size_t *inner);

/* Whether the trainer keeps a fused act's pre-activation for its
 * backward pass (the two gelus, whose derivative needs x); every other
 * fused activation's derivative is read from its output y. libmemest's
 * train_work counts the same buffers. */
static inline bool exec_act_keeps_pre(enum memest_act act)
{
    return act == MEMEST_ACT_GELU || act == MEMEST_ACT_GELU_ERF;
}

/* y = act(x) over op->out_n floats; y may equal x (ops/activation.c). */
int exec_apply_act(const prof_exec *ex, const struct exec_op *op,
                   enum memest_act act, const float *x, float *y);

/* An element-wise act (not softmax or log-softmax, PROF_E_INVALID) on n
 * values x into y (may equal x), with op's layer's parameters. */
int exec_apply_act_n(const struct exec_op *op, enum memest_act act,
                     const float *x, float *y, size_t n);

/* After a run_f32 that computed st: the fused activation in place on
 * a->y when a->fused and the layer has one. */
static inline int exec_then_act(const prof_exec *ex, const struct exec_op *op,
                                const struct exec_f32_args *a, int st)
{
    if (st != PROF_OK || !a->fused || op->layer->act == MEMEST_ACT_NONE) {
        return st;
    }
    return exec_apply_act(ex, op, op->layer->act, a->y, a->y);
}

/* d/dx of an activation on g (n values) into gin (may equal g): from the
 * forward input x (relu, gelu, silu, hardswish) or output y (sigmoid,
 * tanh, relu6, softplus, hardsigmoid, leakyrelu, elu, clip), as
 * libkernels defines (ops/activation.c); L's act_alpha and act_beta are
 * the parameters. */
int exec_act_backward(const struct memest_layer *L, enum memest_act act,
                      float *gin, const float *g, const float *x,
                      const float *y, size_t n);

/* Whether the trainer can take act's derivative: fused after a dense or
 * conv2d (only its output kept) or as a standalone layer (its input kept
 * too); leakyrelu needs alpha >= 0 and elu alpha > 0 to tell the side
 * from the output. */
bool exec_act_trainable(enum memest_act act, double alpha, bool fused);

/* The backward of the activation fused after a dense or conv2d layer, in
 * place on a->g (nothing for the loss softmax or no activation). */
int exec_fused_act_backward(const struct exec_op *op,
                            const struct exec_grad_args *a);

/* An activation that works on each element alone, in any layout. */
static inline bool exec_act_elementwise(enum memest_act act)
{
    return act != MEMEST_ACT_SOFTMAX && act != MEMEST_ACT_LOGSOFTMAX;
}

/* An operator whose blocked form is possible at all: a C x H x W output
 * and an activation of single elements. */
static inline bool exec_blk_possible(const struct exec_op *op)
{
    return op->layer->out_shape.rank == 3 &&
           exec_act_elementwise(op->layer->act);
}

/* Scratch of an operator that computes from its input in float at 16-bit
 * and int8 storage: the input widened or dequantised into x32. */
int exec_scratch_float_input(const prof_exec *ex, struct exec_op *op,
                             struct exec_scratch *need);

/* Uniform initial weights in [-a, a), a = sqrt(6 / fan_in) before a relu
 * (He) else sqrt(6 / (fan_in + fan_out)) (Glorot), and biases in
 * [-1/sqrt(fan_in), 1/sqrt(fan_in)), drawn in that order (params.c). */
void exec_init_uniform(struct exec_op *op, double fan_in, double fan_out,
                       uint64_t *rng);

/* int8 weights as one packed GEMM matrix per group (dense, conv2d):
 * allocate them and the per-channel scales (exec_q8_alloc_gemm), and
 * quantise rows ([out][kdim], one output channel a row) per channel into
 * the staging scratch and pack each group (exec_q8_store_gemm). */
int exec_q8_alloc_gemm(prof_exec *ex, struct exec_op *op);
int exec_q8_store_gemm(prof_exec *ex, struct exec_op *op, const float *rows);
/* Static int8: allocate op's output stage (int32 bias, multipliers,
 * shifts; row sums when `sums`, a GEMM's) and give its bytes; nothing at
 * other precisions. */
int exec_s8_alloc_stage(prof_exec *ex, struct exec_op *op, bool sums,
                        uint64_t *bytes);

/* Static int8's float output stage of an int32 GEMM result (m rows of n
 * columns from column c0 of op, leading dimension ld), in place: acc +=
 * bias32[c] - x_zero * wsum[c] (modulo 2^32, as the integer stage), so
 * that kern_q8_requant_f32 (scale x_scale * wscale[c], no bias) gives the
 * real values the integer stage would requantise. */
void exec_s8_acc_fix(const prof_exec *ex, const struct exec_op *op,
                     int32_t *acc, size_t m, size_t n, size_t ld, size_t c0);

/* The generic 16-bit and int8 paths (precision.c). */
int exec_run_16_generic(prof_exec *ex, const struct exec_op *op);
int exec_run_s8_generic(prof_exec *ex, const struct exec_op *op);

/* 16-bit and int8 helpers (precision.c): widen or narrow at ex's
 * precision; quantise the float result y32 per tensor into op's output;
 * the scale of op's first input; tensor t of the arena in float, into buf
 * (16-bit, int8) or where it lies (fp32), *st its status. */
static inline int exec_widen(const prof_exec *ex, float *dst,
                             const uint16_t *src, size_t n)
{
    return exec_widen16(ex->precision, dst, src, n);
}
static inline int exec_narrow(const prof_exec *ex, uint16_t *dst,
                              const float *src, size_t n)
{
    return exec_narrow16(ex->precision, dst, src, n);
}
int exec_quantize_out(prof_exec *ex, const struct exec_op *op);
float exec_input_scale(const prof_exec *ex, const struct exec_op *op);
int32_t exec_input_zero(const prof_exec *ex, const struct exec_op *op);

/* Static int8 (precision.c). q = clamp(round_half_even(x / scale) + zero,
 * -128, 127) (ONNX's QuantizeLinear; NaN gives the zero point), and x =
 * (q - zero) * scale, one float multiply (with zero 0 the bits of
 * kern_q8_dequantize_f32). */
int exec_s8_quantize(const float *x, size_t n, float scale, int32_t zero,
                     int8_t *q);
void exec_s8_dequantize(const int8_t *q, size_t n, float scale, int32_t zero,
                        float *x);
/* The clamp [*qmin, *qmax] of act in int8 params (scale, zero), as TFLite's
 * CalculateActivationRangeQuantized: relu from the zero point, relu6 to
 * zero + round(6 / scale), clip(lo, hi) likewise (round half away from
 * zero), within [-128, 127]; false when act is not a clamp (none is: the
 * whole range). */
bool exec_s8_clamp(enum memest_act act, double lo, double hi, float scale,
                   int32_t zero, int32_t *qmin, int32_t *qmax);
/* A dense or conv2d layer's output stage (op->bias32, mult, shift, qmin,
 * qmax, s8_float_act) from op->wscale, the float bias and the input's and
 * output's params; run after the weights are quantised. */
int exec_s8_outstage_prep(prof_exec *ex, struct exec_op *op);
/* The output stage of op for columns from c0 (a group's). */
struct kern_q8_outstage exec_s8_outstage(const prof_exec *ex,
                                         const struct exec_op *op,
                                         size_t c0);
/* Static int8: op is the model's last layer and ends in a softmax or
 * log-softmax, which runs in float on the dequantised logits; its float
 * result (y32) is the model's output and is not quantised. */
bool exec_s8_final_float(const prof_exec *ex, const struct exec_op *op);
/* Static int8: the fixed params of every tensor, from opts->ranges or the
 * model's own quantisation (create.c calls it once the layers are
 * planned). */
int exec_s8_fix_params(prof_exec *ex, const struct prof_exec_opts *opts,
                       struct prof_diag *diag);
typedef const float *(*exec_load_fn)(prof_exec *ex, size_t t, float *buf,
                                     int *st);
const float *exec_load_f32(prof_exec *ex, size_t t, float *buf, int *st);
const float *exec_load_16(prof_exec *ex, size_t t, float *buf, int *st);
const float *exec_load_s8(prof_exec *ex, size_t t, float *buf, int *st);

/* ---- the entries (one file each under exec/ops/) ---- */

extern const struct exec_op_vtable exec_op_dense;
extern const struct exec_op_vtable exec_op_conv2d;
extern const struct exec_op_vtable exec_op_maxpool;
extern const struct exec_op_vtable exec_op_avgpool;
extern const struct exec_op_vtable exec_op_flatten;
extern const struct exec_op_vtable exec_op_activation;
extern const struct exec_op_vtable exec_op_globalavgpool;
extern const struct exec_op_vtable exec_op_add;
extern const struct exec_op_vtable exec_op_concat;
extern const struct exec_op_vtable exec_op_batchnorm;
extern const struct exec_op_vtable exec_op_identity;
extern const struct exec_op_vtable exec_op_dropout;
extern const struct exec_op_vtable exec_op_sub;
extern const struct exec_op_vtable exec_op_mul;
extern const struct exec_op_vtable exec_op_div;

/* add, sub, mul, div with broadcasting or a constant operand
 * (ops/binary.c; add.c hands these forms of an add over): whether the
 * layer broadcasts or has a constant; its layouts, scratch; y = act(a op
 * b) in float with each operand from `load` (into abuf, bbuf); the 16-bit
 * and int8 runs. */
bool exec_binary_broadcasts(const struct memest_layer *L);
unsigned exec_binary_caps(const struct exec_op *op);
int exec_binary_scratch(const prof_exec *ex, struct exec_op *op,
                        struct exec_scratch *n);
int exec_binary_float(prof_exec *ex, const struct exec_op *op,
                      exec_load_fn load, float *abuf, float *bbuf, float *y,
                      bool fused);
int exec_binary_run_16(prof_exec *ex, const struct exec_op *op);
/* The trainer's: y = a op b (b unused with a constant) from float
 * buffers, without the act; and the gradient of operand k of an add
 * (d(a + b)/dk = 1) from the output's g: summed over the dimensions k
 * broadcasts along, written into gx (k's elements) or added to it. */
int exec_binary_train_f32(const prof_exec *ex, const struct exec_op *op,
                          const float *a, const float *b, float *y);
int exec_binary_reduce_grad(const prof_exec *ex, const struct exec_op *op,
                            size_t k, const float *g, float *gx, bool add);
int exec_binary_run_s8(prof_exec *ex, const struct exec_op *op);
extern const struct exec_op_vtable exec_op_conv_transpose;
extern const struct exec_op_vtable exec_op_resize;
extern const struct exec_op_vtable exec_op_pad;
extern const struct exec_op_vtable exec_op_shuffle;
extern const struct exec_op_vtable exec_op_slice;
extern const struct exec_op_vtable exec_op_reshape;
extern const struct exec_op_vtable exec_op_layernorm;
extern const struct exec_op_vtable exec_op_clstoken;
extern const struct exec_op_vtable exec_op_posembed;
extern const struct exec_op_vtable exec_op_matmul;
extern const struct exec_op_vtable exec_op_transpose;
extern const struct exec_op_vtable exec_op_attention;

/* The trainer's forward of a matmul from its operands' float buffers. */
int exec_matmul_train_f32(const prof_exec *ex, const struct exec_op *op,
                          const float *const *xs, float *y);
extern const struct exec_op_vtable exec_op_lstm;
extern const struct exec_op_vtable exec_op_gru;

/* lstm and gru (ops/lstm.c, the recurrent engine both kinds run): their
 * scratch, initial parameters, forward in float, backward (BPTT) and
 * what it reads. */
int exec_rnn_scratch(const prof_exec *ex, struct exec_op *op,
                     struct exec_scratch *need);
void exec_rnn_init(struct exec_op *op, uint64_t *rng);
int exec_rnn_run_f32(prof_exec *ex, const struct exec_op *op,
                     const struct exec_f32_args *a);
int exec_rnn_backward(prof_exec *ex, const struct exec_op *op,
                      const struct exec_grad_args *a);
unsigned exec_rnn_reads(const struct exec_op *op, bool loss_softmax);

#endif
