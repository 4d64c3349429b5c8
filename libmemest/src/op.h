/*
 * Private: the operator registry of libmemest. What an operator *is* (its
 * keyword and keys in the text format, how its shape, parameters and MACs
 * follow from its input, PyTorch's layout of its weight, whether its
 * output is its input's buffer, how it is written back as text) lives in
 * one file per operator, src/ops/<op>.c, as one const struct
 * memest_op_def. The parser (parse.c), the writer (model.c), the
 * estimates (estimate.c), the weight loader (weights.c) and the arena
 * planner (arena.c) are drivers that look the definition up by kind with
 * op_def() and never name a kind themselves; a kind without a definition
 * is refused with a message, never handled as another kind.
 *
 * Adding an operator, libmemest's side:
 *
 *   1. a line X(FOO, "foo") at the end of MEMEST_KINDS in
 *      include/edgefit/memest.h (the enumerator and its name);
 *   2. src/ops/foo.c, a copy of src/ops/TEMPLATE.c filled in, defining
 *      `const struct memest_op_def op_foo`;
 *   3. its declaration at the end of this file and its row
 *      `[MEMEST_KIND_FOO] = &op_foo,` in the table of src/op.c;
 *   4. 'src/ops/foo.c' in memest_src of libmemest/meson.build;
 *   5. a new key, if it needs one: an OP_KEY_ bit below, its row in
 *      op_keys[] (op.c), its field in struct op_spec and its case in
 *      parse.c's parse_layer();
 *   6. tests: shapes and counts by hand in tests/memest/test_counts.c,
 *      messages in tests/memest/test_parse.c, a round trip through
 *      memest_model_write().
 *
 * Nothing else in libmemest changes; libprofile and the ONNX importer have
 * registries of their own (DESIGN.md, "Operators").
 */
#ifndef MEMEST_OP_H
#define MEMEST_OP_H

#include "internal.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The keys of a layer line ("k=3"), one bit each; op_keys[] (op.c) holds
 * their words in the order messages list them. */
enum op_key {
    OP_KEY_NAME = 1u << 0,
    OP_KEY_IN = 1u << 1,
    OP_KEY_K = 1u << 2,
    OP_KEY_S = 1u << 3,
    OP_KEY_P = 1u << 4,
    OP_KEY_G = 1u << 5,
    OP_KEY_ACT = 1u << 6,
    OP_KEY_BIAS = 1u << 7,
    OP_KEY_EPS = 1u << 8,
    OP_KEY_COUNT_PAD = 1u << 9,
    /* an activation's parameters (leakyrelu, elu, hardsigmoid, clip):
     * words "alpha" and "min" set the first, "beta" and "max" the second
     * (op_act_keys() says which words an activation takes) */
    OP_KEY_ALPHA = 1u << 10,
    OP_KEY_BETA = 1u << 11,
    /* add, sub, mul, div: a constant operand, right or left (ops/binary.c) */
    OP_KEY_SCALAR = 1u << 12,
    OP_KEY_SCALAR_LEFT = 1u << 13,
    /* convtranspose and resize */
    OP_KEY_D = 1u << 18,       /* d=N or d=HxW: dilations */
    OP_KEY_OUT_PAD = 1u << 19, /* op=N or op=HxW: output_padding */
    OP_KEY_SCALE = 1u << 20,   /* scale=F, scale=FHxFW, scale=N/D: resize */
    OP_KEY_MODE = 1u << 21,    /* mode=nearest[,coord[,rounding]] or
                                * mode=bilinear[,coord]: resize */
    /* pad, ceil-mode pools (d= above serves dilated convolutions too) */
    OP_KEY_CEIL = 1u << 14,
    OP_KEY_VALUE = 1u << 16,
    /* slice's keys (data movement operators) */
    OP_KEY_AXIS = 1u << 22,
    OP_KEY_BEGIN = 1u << 23,
    OP_KEY_END = 1u << 24,
    OP_KEY_SHAPE = 1u << 25, /* reshape's target shape */
    /* attention's operators */
    OP_KEY_PERM = 1u << 26,  /* transpose's perm=1,0 or perm=2,0,1 */
    OP_KEY_HEADS = 1u << 27, /* attention's heads=H */
    /* lstm and gru (ops/lstm.c, ops/gru.c) */
    OP_KEY_DIR = 1u << 15, /* dir=forward|reverse|bidirectional */
    OP_KEY_SEQ = 1u << 17, /* seq=yes|no: every step's output or the last */
    OP_KEY_LBR = 1u << 28, /* lbr=yes|no: a gru's linear_before_reset */
};

struct op_key_info {
    const char *word; /* "k" */
    const char *what; /* "kernel size", in "missing kernel size: ..." */
    unsigned bit;
};
extern const struct op_key_info op_keys[];
extern const size_t op_key_count;

/* The most inputs one layer may name (an add or concat of more is not a
 * model anyone writes by hand; ONNX importers split wider ones). */
#define OP_MAX_INPUTS 64

/* A token of a line: a slice of the text and its 1-based column. */
struct op_tok {
    const char *s;
    size_t n;
    int col;
};

/*
 * What a layer line asked for, before shape inference: parse.c fills it
 * from the keys (with the defaults g=1, bias=yes, count_pad=yes, eps=1e-5
 * and no padding) and the operator's infer() reads it. `have_*` say
 * whether a value was written; `col_*` are the columns messages point at
 * (the keyword's when the key was not written).
 */
struct op_spec {
    enum memest_kind kind;
    enum memest_act act;
    const char *kind_text; /* the keyword as written, "relu" for an act */
    struct op_tok name;
    uint64_t units;        /* the positional width */
    uint64_t kh, kw, sh, sw;
    uint64_t pt, pl, pb, pr;
    uint64_t g;
    int has_bias;
    int count_pad;
    double eps;
    struct op_tok in[OP_MAX_INPUTS];
    size_t nin;
    int have_units;
    int have_k;
    int have_s;
    int col_kind;
    int col_units;
    int col_k;
    int col_s;
    int col_p;
    int col_g;
    int col_in;
    /* the activation's parameters (OP_KEY_ALPHA, OP_KEY_BETA): the value,
     * the word written ("alpha" or "min") and its column, 0 if absent */
    double act_alpha, act_beta;
    const char *alpha_word, *beta_word;
    int col_alpha, col_beta;
    /* add, sub, mul, div: scalar= or scalar_left= (MEMEST_SCALAR_*), its
     * value and column */
    int scalar_side;
    double scalar;
    int col_scalar;
    /* convtranspose and resize: d= (1 when not written), op= (0), scale=
     * along each axis as a decimal factor (scale_*, rat_den_* 0) or a
     * ratio N/D (rat_num_*, rat_den_*; scale_* 0), mode= as the
     * memest_layer's resize_* fields (nearest, asymmetric, floor when not
     * written: PyTorch's nearest) */
    uint64_t dh, dw, oph, opw;
    double scale_h, scale_w;
    uint64_t rat_num_h, rat_den_h, rat_num_w, rat_den_w;
    int resize_mode, resize_coord, resize_nearest;
    int have_scale;
    int col_d;
    int col_op;
    int col_scale;
    int col_mode;
    /* pad, ceil-mode pools: ceil=yes, value= (0 by default) */
    int ceil_mode;
    double value;
    /* slice: axis= (0, 1, 2 for c, h, w), begin=, end=; softmax,
     * logsoftmax and layernorm: axis=K, a per-sample axis (have_axis: it
     * was written) */
    unsigned axis;
    int have_axis;
    uint64_t begin, end;
    int col_axis;
    int col_begin;
    int col_end;
    /* reshape: shape= (per sample) */
    struct memest_shape shape;
    int col_shape;
    /* transpose: perm= (nperm axes); attention: heads= */
    unsigned perm[3];
    unsigned nperm;
    int col_perm;
    uint64_t heads;
    int col_heads;
    /* lstm, gru: dir= (enum memest_rnn_direction, forward when not
     * written), seq= (1 when not written), lbr= (1, PyTorch's GRU) */
    int rnn_dir;
    int rnn_seq;
    int rnn_lbr;
};

/* What infer() gets beside the line: the layer's inputs, resolved, and
 * where its messages go. */
struct op_infer {
    const struct op_spec *sp;
    size_t nin;                          /* 1, or 2+ for multi_input */
    const struct memest_shape *const *in; /* nin shapes, in[0] first */
    const char *const *in_name;          /* their tensors' names */
    struct memest_diag *diag;            /* may be NULL */
    int line;
};

/* How an operator's parameters arrive from a state_dict. */
enum op_params {
    OP_PARAMS_NONE,        /* none: parameter_count is 0 */
    OP_PARAMS_WEIGHT_BIAS, /* "<name>.weight" in weight_shape()'s layout
                            * and, with bias=yes, "<name>.bias" [units] */
    OP_PARAMS_BATCHNORM,   /* "<name>.weight/.bias/.running_mean/
                            * .running_var" [C], folded into scale, shift */
    OP_PARAMS_TENSORS,     /* the tensors param_tensors() lists (attention,
                            * lstm, gru), copied where it says */
};

/* The largest rank of a weight (conv2d's [out_c, in_c/g, kh, kw]). */
#define OP_WEIGHT_MAX_RANK 4

/* The text writer's buffer: appends, counting the full length. */
struct op_out {
    char *buf;
    size_t cap;
    size_t len;
};

/* What write() prints: the layer, with the activation and bias its line
 * declares (a layer with a folded batch norm is written without them,
 * the batch norm's own line following it carries them). */
struct op_write {
    const struct memest_layer *L;
    enum memest_act act;
    int bias;
};

struct memest_op_def {
    /* The text format. `word` is the keyword; with `act_keyword` the
     * keywords are the activations' names instead ("relu" is an
     * activation layer with act relu) and `word` is NULL. Automatic names
     * are `prefix` and a counter ("conv1"); kinds with the same prefix
     * share one counter ("pool1", "pool2" over max and avg pools). */
    const char *word;
    bool act_keyword;
    const char *prefix;
    /* The OP_KEY_ bits the line accepts (messages list them), and those
     * it must have ("missing kernel size: ..."). */
    unsigned keys;
    unsigned required;
    /* A positional number after the keyword: what it is ("dense width",
     * in messages about its value), what it counts ("output features", in
     * "missing width: ...") ; NULL when the line takes none. */
    const char *width_what;
    const char *width_noun;
    /* A line to show in messages: "conv2d 8 k=3". */
    const char *example;
    /* Reads two or more inputs (in=A,B,...); otherwise exactly one. */
    bool multi_input;
    /* Its output is its input's buffer, unchanged: the arena gives it no
     * storage (memest_kind_is_view()). */
    bool is_view;
    /* A batch norm that reads only this layer folds into it: the weights
     * of output channel c scale by the norm's scale[c] (weight_shape()'s
     * first dimension is the output channel) and it gains a bias. */
    bool absorbs_bn;
    enum op_params params;
    /*
     * Shape inference: fill L's out_shape, the operator's fields (units,
     * kernel_*, stride_*, pad_*, groups, has_bias, count_include_pad,
     * bn_epsilon), weight_count, bias_count and macs_per_sample from
     * x->sp and the inputs. The driver has set kind, act, in_shape,
     * groups = 1 and line, and afterwards computes output_elements and
     * parameter_count with overflow checks. Returns MEMEST_OK or a status
     * with the message set by op_fail() at the offending column.
     */
    int (*infer)(const struct op_infer *x, struct memest_layer *L);
    /* PyTorch's layout of "<name>.weight" (and of layer->weight): fills
     * dim[0..rank-1] and returns the rank; NULL when the kind has no
     * parameters. The bias is [bias_count]. */
    unsigned (*weight_shape)(const struct memest_layer *L,
                             uint64_t dim[OP_WEIGHT_MAX_RANK]);
    /* The trainer's working buffers beyond the generic ones (see
     * memest_training_memory()): *preact receives the elements per sample
     * it keeps before its fused activation for the backward pass, *columns
     * the floats of its im2col columns for one sample; NULL: none.
     * MEMEST_E_OVERFLOW when they do not fit in 64 bits. */
    /* OP_PARAMS_TENSORS: the state_dict tensors of the layer, their
     * shapes and where each goes in L->weight or L->bias (struct
     * memest_param_tensor); returns their count. NULL for other kinds. */
    size_t (*param_tensors)(const struct memest_layer *L,
                            struct memest_param_tensor *out);
    int (*train_work)(const struct memest_layer *L, uint64_t *preact,
                      uint64_t *columns);
    /* Write the layer's keyword and every option, explicit: "conv2d 8
     * k=3 s=1 p=1 g=1 act=relu bias=yes"; the driver adds in= and name=.
     * Parsing the line must give the layer back. NULL: the keyword alone
     * (an operator without options). */
    void (*write)(struct op_out *o, const struct op_write *w);
};

/* The definition of a kind, NULL when the kind has none (MEMEST_KIND_INPUT,
 * a value outside the enum, or a kind whose file is not written yet). */
const struct memest_op_def *op_def(enum memest_kind kind);

/* ---- Helpers for the operators' files ----------------------------------- */

/* Set the message at x's line and `col` and return status. */
#if defined(__GNUC__)
__attribute__((format(printf, 4, 5)))
#endif
int op_fail(const struct op_infer *x, int status, int col, const char *fmt,
            ...);

/* "<kind>: <what> does not fit in 64 bits" at the keyword. */
int op_overflow(const struct op_infer *x, const char *what);

/* MEMEST_OK when input 0 is CxHxW, else MEMEST_E_SHAPE "<kind> needs a
 * CxHxW input but gets <shape>". */
int op_need_chw(const struct op_infer *x);

/* A windowed layer's kernel, its strides sh x sw (each kind has its own
 * default) and its padding, from the line into L. */
void op_set_window(struct memest_layer *L, const struct op_spec *sp,
                   uint64_t sh, uint64_t sw);

/*
 * A window's output size along one axis: floor((h + before + after - k) /
 * s) + 1. MEMEST_E_SHAPE when the window is larger than the padded input,
 * or, with `pad_below_window` (pools), when a padding is not smaller than
 * the window (a window could then hold only padding).
 */
int op_window_out(const struct op_infer *x, uint64_t h, uint64_t k,
                  uint64_t s, uint64_t before, uint64_t after,
                  const char *axis, bool pad_below_window, uint64_t *out);

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
void op_put(struct op_out *o, const char *fmt, ...);

/* " key=N", or " key=HxW" when h != w. */
void op_put_pair(struct op_out *o, const char *key, uint64_t h, uint64_t w);

/* The shortest of " p=N", " p=HxW" and " p=top,left,bottom,right". */
void op_put_pads(struct op_out *o, const struct memest_layer *L);

/* The words of the parameter keys activation `act` takes: "alpha" (and
 * "beta") for leakyrelu, elu and hardsigmoid, "min" and "max" for clip;
 * NULL for a key it does not take. */
const char *op_act_alpha_word(enum memest_act act);
const char *op_act_beta_word(enum memest_act act);

/* The parameters of `act` when its line gives none: ONNX's defaults
 * (leakyrelu 0.01, elu 1, hardsigmoid 0.2 and 0.5, clip -inf and +inf),
 * hardswish's fixed 1/6 and 0.5, 0 and 0 for the others. */
void op_act_defaults(enum memest_act act, double *alpha, double *beta);

/* " alpha=V beta=V" or " min=V max=V": the parameter keys of `act` with
 * L's values (%.17g, so that they survive the round trip); nothing for an
 * activation without parameters. */
void op_put_act_params(struct op_out *o, enum memest_act act,
                       const struct memest_layer *L);

/* ---- The operators (src/ops/) ------------------------------------------- */

extern const struct memest_op_def op_dense;
extern const struct memest_op_def op_conv2d;
extern const struct memest_op_def op_maxpool;
extern const struct memest_op_def op_avgpool;
extern const struct memest_op_def op_flatten;
extern const struct memest_op_def op_activation;
extern const struct memest_op_def op_globalavgpool;
extern const struct memest_op_def op_add;
extern const struct memest_op_def op_concat;
extern const struct memest_op_def op_batchnorm;
extern const struct memest_op_def op_identity;
extern const struct memest_op_def op_dropout;
extern const struct memest_op_def op_sub;
extern const struct memest_op_def op_mul;
extern const struct memest_op_def op_div;

/* add, sub, mul, div (ops/binary.c): shape inference of two inputs with
 * numpy broadcasting, or of one with a constant operand; and the text of
 * the constant (" scalar=V", " scalar_left=V", or nothing). */
int op_binary_infer(const struct op_infer *x, struct memest_layer *L);
void op_binary_put_scalar(struct op_out *o, const struct memest_layer *L);
extern const struct memest_op_def op_conv_transpose;
extern const struct memest_op_def op_resize;

/* The words of a resize's modes, coordinate transformations and nearest
 * roundings, indexed by the memest_layer's resize_* values (resize.c). */
extern const char *const op_resize_modes[2];
extern const char *const op_resize_coords[4];
extern const char *const op_resize_nearests[4];
extern const struct memest_op_def op_pad;
extern const struct memest_op_def op_shuffle;
extern const struct memest_op_def op_slice;
extern const struct memest_op_def op_reshape;
extern const struct memest_op_def op_layernorm;
extern const struct memest_op_def op_clstoken;
extern const struct memest_op_def op_posembed;

/* MEMEST_OK when input 0 is a sequence T x D (rank 2), else MEMEST_E_SHAPE
 * "<kind> needs a sequence T x D ..." (clstoken, posembed). */
int op_need_seq(const struct op_infer *x);

/* The axis a softmax or log-softmax normalises when its line names none:
 * a vector's features (0), a T x D sequence's features (1), the channels
 * of C x H x W (0). */
static inline unsigned op_softmax_default_axis(const struct memest_shape *s)
{
    return s->rank == 2 ? 1u : 0u;
}
extern const struct memest_op_def op_matmul;
extern const struct memest_op_def op_transpose;
extern const struct memest_op_def op_attention;
extern const struct memest_op_def op_lstm;
extern const struct memest_op_def op_gru;

/* lstm and gru (ops/lstm.c): shape inference of a recurrent layer of
 * `gates` gates (4 for an lstm, 3 for a gru), its state_dict tensors and
 * the options of its line (" dir=... seq=...", without lbr). */
int op_rnn_infer(const struct op_infer *x, struct memest_layer *L,
                 uint64_t gates);
size_t op_rnn_param_tensors(const struct memest_layer *L, uint64_t gates,
                            struct memest_param_tensor *out);
void op_rnn_put_options(struct op_out *o, const struct memest_layer *L);
extern const struct memest_op_def op_matmul;
extern const struct memest_op_def op_transpose;
extern const struct memest_op_def op_attention;
/* The trainer's per-sample floats of the step buffers, as im2col
 * columns: its backward pass of one sample (the gates, their cache and
 * gradients of every step, y's copy, a step's state), T*(5*G*H +
 * (dirs + 4)*H) + 2*G*H + 3*H, more than the forward's T*G*H + 2*G*H. */
int op_rnn_train_work(const struct memest_layer *L, uint64_t gates,
                      uint64_t *preact, uint64_t *columns);

#endif
