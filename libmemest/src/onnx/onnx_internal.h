/*
 * ONNX import, private to libmemest: what the files of src/onnx/ share.
 *
 * A file is read with the C code protoc-c generated at build time from
 * ONNX's own schema, then translated into the model description that
 * memest_model_parse_buffer() reads: one line per layer, each naming its
 * inputs (in=) and itself (name=). That keeps a single path that builds
 * models: shape inference, validation and batch norm folding live in the
 * parser. The importer's part is to map each node onto a layer, to check
 * what the text cannot say (operator attributes, constant operands, the
 * opset's meaning of an axis), and to hand the initializers to
 * memest_model_set_weights() in PyTorch's names and layouts. Diagnostics of
 * the parser, which speak of lines of the generated text, are mapped back
 * to the ONNX node that made the line.
 *
 * The files, in the order a model goes through them:
 *   read.c      the protobuf (nesting checked before unpacking), tensors,
 *               the entry point memest_model_load_onnx()
 *   values.c    names, diagnostics naming the node, attributes, the values
 *               a node reads (constants and activations)
 *   patterns.c  liveness, which values are constants, and the fused
 *               patterns (PyTorch's GELU, MatMul + bias)
 *   fold*.c     constant folding: every node whose inputs are constants
 *               or shapes (Shape, Gather, Concat, arithmetic on int64...);
 *               fold.c explains how a free batch is carried
 *   ops.c       THE table {op_type, allowed attributes, handler, fold}
 *               and the dispatch; the supported-operator list comes from it
 *   ops_*.c     the handlers that make layers
 *   emit.c      layers, their outputs and weights; the rendered text
 *
 * Adding an operator: a row in ops.c's table (its attributes), a handler
 * (ops_*.c) that reads its operands with get_act()/get_const(), refuses
 * each value it cannot take with node_fail() naming the attribute, and
 * makes its layers with push_layer()/emit_simple(); and/or a fold function
 * (fold*.c) when it can be computed on constants at import time; see
 * TEMPLATE.c.
 */
#ifndef EDGEFIT_MEMEST_ONNX_INTERNAL_H
#define EDGEFIT_MEMEST_ONNX_INTERNAL_H

#include "internal.h"
#include "onnx.pb-c.h"

#include <stdint.h>
#include <string.h>

/* Protocol buffers cannot encode a message over 2 GiB (internal.h). */
#define MAX_FILE_BYTES MEMEST_MAX_ONNX_BYTES
#define PB_LIMIT_TEXT "2 GiB, the limit of protocol buffers"
/* Deeper nesting than any ONNX model has (a graph in an attribute of a
 * node of a graph...); refused before protobuf-c recurses into it. */
#define MAX_NESTING 32
/* The largest per-sample tensor, in elements: the text parser's limit
 * (internal.h). */
#define MAX_ELEMENTS MEMEST_MAX_ELEMENTS
/* The largest tensor constant folding may make (ConstantOfShape, Expand,
 * Range, broadcasting arithmetic): 2^22 elements, 16 MiB of floats and
 * 32 MiB of exact integers, far above any shape, mask or initial state an
 * exporter folds, and under the 64 MiB a file of a few bytes may make the
 * import ask for at once (a ConstantOfShape of 2^24 ints asked 128 MiB).
 * Checked before anything is allocated. */
#define MAX_FOLD_ELEMENTS ((uint64_t)1 << 22)
/* And in all, over the import, MAX_FOLD_ELEMENTS plus one element per
 * byte of the file: a chain of folds (a Transpose of a Transpose...)
 * cannot multiply what the file holds without bound. */
/* How deep get_const() may recurse through constants not yet folded
 * (pattern matching asks before the nodes are folded in order). */
#define MAX_FOLD_DEPTH 64

static inline const char *str(const char *s)
{
    return s ? s : "";
}

static inline int str_eq(const char *a, const char *b)
{
    return strcmp(str(a), b) == 0;
}

/* ---- Tensors (read.c) --------------------------------------------------- */

/*
 * A constant decoded to float32; an integer or bool tensor also keeps its
 * exact values in `ints`. A value computed from the batch (Shape of an
 * activation when the batch is free) keeps, per element, the batch's
 * coefficient in `nb`: element i is ints[i] + nb[i] * N. nb is NULL when
 * no element depends on the batch.
 */
struct cval {
    unsigned rank;
    uint64_t dim[MEMEST_TENSOR_MAX_RANK];
    uint64_t count;
    const float *f;
    float *owned;   /* f, when decoded here */
    int64_t *ints;  /* exact values of an integer or bool tensor, else NULL */
    int64_t *nb;    /* the batch's coefficient per element, or NULL */
    int dtype;      /* ONNX__TENSOR_PROTO__DATA_TYPE__*, 0 if unknown */
};

void cval_free(struct cval *c);
const char *dtype_name(int t);
int decode_tensor(const Onnx__TensorProto *tp, struct cval *out, char *why,
                  size_t cap);

/* ---- Names (values.c) --------------------------------------------------- */

/* A map from strings (not copied) to indices, open addressing. */
struct strmap {
    const char **keys;
    size_t *vals;
    size_t cap; /* a power of two, or 0 */
    size_t count;
};

size_t strmap_get(const struct strmap *m, const char *key);
int strmap_put(struct strmap *m, const char *key, size_t val);
void strmap_free(struct strmap *m);

/* ---- The importer ------------------------------------------------------- */

enum vkind {
    V_CONST,       /* an initializer, a Constant or folded node's output */
    V_GRAPH_INPUT, /* a graph input (maybe bound by opts->constants) */
    V_ACT,         /* a node's output */
};

struct value {
    const char *name; /* in the unpacked protobuf */
    enum vkind kind;
    size_t producer;  /* node index for V_ACT and folded outputs */
    const Onnx__TensorProto *tp;      /* V_CONST: the data, if a tensor */
    const struct memest_tensor *user; /* a graph input's bound value */
    const Onnx__ValueInfoProto *vi;   /* V_GRAPH_INPUT */
    struct cval c;
    int decoded;
    unsigned readers; /* live nodes reading it, + 1 for the graph output */
    size_t reader;    /* the last live node reading it */
    int live;
    /* As an activation: its ONNX shape (rank 2..4, dim[0] the batch),
     * the text name that refers to it and the layer that makes it
     * (SIZE_MAX for a model input). */
    int shaped;
    unsigned rank;
    uint64_t dim[4];
    const char *ref;
    size_t layer;
    int model_input; /* index + 1 among the model inputs, 0 if none */
    /* A graph input's batch axis in the file: 0, or 1 for ONNX's
     * time-major [T, N, D] read straight by an LSTM/GRU of layout 0
     * (onnx_rnn_find); held batch first all the same (rank, dim) */
    unsigned batch_axis;
    /* Pad: a zero Pad folded into the Conv or AveragePool that reads
     * this value (ops_pad.c) leaves its padding here, top, left, bottom,
     * right, for that node's window (ops_conv.c) to add to its own */
    int has_pad;
    uint64_t pad[4];
    /* A 1-D signal: ONNX's N x C x L, held (and rendered) as
     * N x C x 1 x L so that Conv and the pools over it are 2-D layers
     * with a height of 1 and the data's order is unchanged. ONNX axis 2
     * is then the text's w; rank and dim are the held shape. */
    int sig;
    /* Quantisation (ops_quant.c): `qtype` is 1 for an int8 and 2 for a
     * uint8 tensor (a QuantizeLinear's or QLinear operator's output, held
     * as an alias of the float tensor it stands for) with its params in
     * `q`, 0 for a float tensor. `has_rec` and `rec`: a model input's
     * params, recorded by the QuantizeLinear that reads it. */
    int qtype;
    struct memest_quant q;
    int has_rec;
    struct memest_quant rec;
};

struct out_layer {
    size_t node;
    const char *kind;
    char *name;
    char args[160];
    char *in;
    enum memest_act act;
    int takes_act;
    /* the parameters of act, or of a standalone activation layer's own
     * function (struct memest_layer's act_alpha, act_beta) */
    double act_alpha, act_beta;
    /* the params of the layer's output tensor (ops_quant.c), recorded for
     * ONNX value `quant_value`; per-output-channel weight scales of a
     * QLinear operator (owned) */
    int has_quant;
    struct memest_quant quant;
    size_t quant_value;
    float *wscales;
    size_t nwscales;
};

struct weight {
    char *name;
    size_t layer;
    unsigned rank;
    uint64_t dim[4];
    const float *data;
    float *owned;
};

/* The decomposed LayerNorm (patterns.c's find_layernorm), on the node
 * that stands for it: x, the Div, the Mul of gamma, the Add of epsilon
 * and epsilon's slot in it. */
struct ln_pattern {
    int on;
    size_t x, div, mul, add_eps, eps_slot;
};

/* Softmax and LogSoftmax as ONNX's own function bodies expand them
 * (patterns.c's find_softmax), on the last node: x, the ReduceMax that
 * reads it first, the axis as written, and which of the two. */
struct sm_pattern {
    int on;
    size_t x, first;
    int64_t axis;
    enum memest_act act;
};

/* nn.MultiheadAttention's export (patterns.c's find_mha), on its last
 * Transpose: the first Transpose (reading x), the in-projection MatMul,
 * its bias Add and the bias's slot, the out-projection Gemm, the scaling
 * node, its value and the head width it implies. */
struct mha_pattern {
    int on;
    size_t first, in_mm, in_add, in_bias_slot, gemm, scale;
    double scale_value;
    uint64_t head_dim;
    /* a hand-written attention (find_sdpa): the out-projection is
     * `gemm`, a MatMul by proj.weight^T, and this node its bias Add;
     * `heads` is the head count its Reshape names (0 if not a constant) */
    int written;
    size_t out_bias_slot;
    uint64_t heads;
};

/* A node is skipped when a fused pattern covers it; `gelu_x` is the value
 * the GELU pattern ending at this node reads (SIZE_MAX otherwise),
 * `bias_add` the Add a MatMul's bias comes from. */
struct node_info {
    int live;
    int skip;
    size_t gelu_x;
    size_t gelu_erf;
    /* x * Sigmoid(x) (silu) and x * HardSigmoid(x) with 1/6, 0.5
     * (hardswish): on the Mul, the x it reads and the activation; the
     * Sigmoid or HardSigmoid is skipped */
    size_t swish_x;
    enum memest_act swish_act;
    size_t bias_add;
    /* sequence models (ops_seq.c): the patterns' anchors; cls_expand is
     * the Expand of a class token a Concat reads, or SIZE_MAX */
    struct ln_pattern ln;
    struct sm_pattern sm;
    struct mha_pattern mha;
    size_t cls_expand;
};

struct imp {
    const char *path;
    struct memest_diag *diag;
    const struct memest_onnx_opts *opts;
    Onnx__ModelProto *model;
    Onnx__GraphProto *g;
    int64_t opset;
    struct value *v;
    size_t nv;
    struct strmap vmap;
    struct node_info *ni;
    struct out_layer *L;
    size_t nl;
    size_t capl;
    struct weight *W;
    size_t nw;
    size_t capw;
    struct strmap names; /* text names in use (inputs and layers) */
    char **inputs_text;  /* text names of the model inputs, in order */
    size_t *input_values;
    size_t ninputs;
    uint64_t fixed_batch;
    int batch_seen;
    size_t output_value;
    /* the graph output's batch axis in ONNX's order (memest_model_output_
     * batch_axis): 1 for a time-major LSTM/GRU's Y_h [dirs, N, H] or
     * squeezed Y [T, N, H], 2 for its Y [T, dirs, N, H] */
    unsigned output_batch_axis;
    uint64_t file_bytes;
    uint64_t fold_left; /* elements folding may still make, in all */
    int translating;  /* the nodes are being translated (not analysed) */
    unsigned depth;   /* get_const() recursion, at most MAX_FOLD_DEPTH */
    int peek_nomem;   /* peek_scalar() ran out of memory: fail the import */
};

/* ---- Diagnostics, attributes, values (values.c) ------------------------- */

const char *node_name(const Onnx__NodeProto *n);
void node_message(struct memest_diag *d, const Onnx__NodeProto *n,
                  const char *tail);
#if defined(__GNUC__)
__attribute__((format(printf, 4, 5)))
#endif
int node_fail(struct imp *I, size_t node, int status, const char *fmt, ...);
int nomem(struct imp *I);
int unique_name(struct imp *I, const char *want, const char *fallback,
                int is_input, char **out);

const Onnx__AttributeProto *attr(const Onnx__NodeProto *n, const char *name);
int check_attrs(struct imp *I, size_t node, const char *allowed);
int attr_int(struct imp *I, size_t node, const char *name, int64_t def,
             int64_t *out);
int attr_float(struct imp *I, size_t node, const char *name, double def,
               double *out);
int attr_ints(struct imp *I, size_t node, const char *name, size_t want,
              int64_t *out, size_t *n);
const char *attr_str(const Onnx__NodeProto *n, const char *name,
                     const char *def, char *buf, size_t cap);

const char *in_name(const Onnx__NodeProto *n, size_t slot);
size_t value_of(struct imp *I, const char *name);
int is_constant(const struct value *v);
int get_const(struct imp *I, size_t node, size_t slot, const char *role,
              const struct cval **out);
int get_scalar(struct imp *I, size_t node, size_t slot, const char *role,
               double *out);
int peek_scalar(struct imp *I, const Onnx__NodeProto *n, size_t slot,
                double *out);
uint64_t per_sample(const struct value *v);
int make_model_input(struct imp *I, size_t node, size_t vi);
int get_act(struct imp *I, size_t node, size_t slot, size_t *out);
int need_rank(struct imp *I, size_t node, const struct value *x,
              unsigned rank, const char *what);

/* ---- Graph analysis (patterns.c) ---------------------------------------- */

int analyse(struct imp *I);

/* ---- Constant folding (fold.c) ------------------------------------------ */

/* v + c * N for a message: "24", "N", "2N", "-N+3". */
void onnx_term_text(int64_t v, int64_t c, char *buf, size_t cap);

/* The value of output `out` of a node analyse() found to make a constant
 * (its row in the table has a fold function and its inputs are
 * constants, or it is a Shape); errors name the node. */
int fold_output(struct imp *I, size_t node, size_t out, struct cval *c);

/* ---- The operator table (ops.c) ----------------------------------------- */

typedef int (*onnx_handler_fn)(struct imp *I, size_t node);
typedef int (*onnx_fold_fn)(struct imp *I, size_t node, struct cval *c);

/*
 * One row per ONNX operator the importer reads. `attrs` lists the
 * attributes it accepts (space-separated; any other is refused, named).
 * `handler` makes layers from a node of computed tensors; NULL: the
 * operator is read only when folded. `fold` computes the output of a node
 * whose inputs are all constants; NULL: never folded. `reads_shape_only`:
 * the operator reads only its input's shape (Shape), so it folds whatever
 * the input is, and does not count as a reader of the data.
 */
struct onnx_op {
    const char *op_type;
    const char *attrs;
    onnx_handler_fn handler;
    onnx_fold_fn fold;
    int reads_shape_only;
};

const struct onnx_op *onnx_op_find(const char *op_type);
/* The supported operators, space-separated, in the table's (alphabetical)
 * order, into buf (truncated to cap). */
void onnx_supported_ops(char *buf, size_t cap);
/* Refuse the node with `head` followed by the supported operators, cut
 * at a word with " ..." where the diag's message would end. */
int onnx_refuse_listing(struct imp *I, size_t node, const char *head);
int translate_node(struct imp *I, size_t node);

/* handlers (ops_conv.c, ops_dense.c, ops_misc.c) */
int onnx_conv(struct imp *I, size_t node);
int onnx_maxpool(struct imp *I, size_t node);
int onnx_avgpool(struct imp *I, size_t node);
int onnx_gemm(struct imp *I, size_t node);
int onnx_matmul(struct imp *I, size_t node);
int onnx_batchnorm(struct imp *I, size_t node);
int onnx_flatten(struct imp *I, size_t node);
int onnx_reshape(struct imp *I, size_t node);
int onnx_softmax(struct imp *I, size_t node);
int onnx_logsoftmax(struct imp *I, size_t node);
int onnx_softmax_pattern(struct imp *I, size_t node);
int onnx_clip(struct imp *I, size_t node);
int onnx_concat(struct imp *I, size_t node);
int onnx_dropout(struct imp *I, size_t node);
int onnx_gap(struct imp *I, size_t node);
/* ops_move.c: data movement and reductions */
int onnx_reducemean(struct imp *I, size_t node);
int onnx_reducemax(struct imp *I, size_t node);
int onnx_slice(struct imp *I, size_t node);
int onnx_gather(struct imp *I, size_t node);
int onnx_split(struct imp *I, size_t node);
int onnx_squeeze(struct imp *I, size_t node);
int onnx_unsqueeze(struct imp *I, size_t node);
/* A Reshape to 3 or 4 dims, the batch first: a view (reshape layer). */
int onnx_reshape_view(struct imp *I, size_t node, size_t x,
                      const struct cval *shape, int64_t allowzero);
/* A Reshape to 5 dims: ShuffleNet's channel shuffle when the nodes after
 * it are find_shuffle_tail()'s, else a refusal naming the shape. */
int onnx_reshape_5d(struct imp *I, size_t node, size_t x,
                    const struct cval *shape);
/* patterns.c: the Transpose and the last Reshape of a channel shuffle
 * that starts at `reshape`, or SIZE_MAX */
size_t find_shuffle_tail(struct imp *I, size_t reshape, size_t *transpose);
int onnx_relu(struct imp *I, size_t node);
int onnx_sigmoid(struct imp *I, size_t node);
int onnx_tanh(struct imp *I, size_t node);
int onnx_erf(struct imp *I, size_t node);
int onnx_identity(struct imp *I, size_t node);
int onnx_gelu(struct imp *I, size_t node);
int onnx_swish(struct imp *I, size_t node);
int onnx_hardsigmoid(struct imp *I, size_t node);
int onnx_hardswish(struct imp *I, size_t node);
int onnx_leakyrelu(struct imp *I, size_t node);
int onnx_elu(struct imp *I, size_t node);
int onnx_softplus(struct imp *I, size_t node);
int onnx_elementwise_refused(struct imp *I, size_t node);
/* Add, Sub, Mul, Div (ops_binary.c) */
int onnx_binary(struct imp *I, size_t node);
int onnx_reciprocal(struct imp *I, size_t node);
/* ops_rnn.c: LSTM and GRU, and the Transpose/Squeeze/Reshape/Gather
 * chains PyTorch exports around them (marked skipped by onnx_rnn_find,
 * which analyse() calls) */
int onnx_lstm(struct imp *I, size_t node);
int onnx_gru(struct imp *I, size_t node);
void onnx_rnn_find(struct imp *I);
int onnx_conv_transpose(struct imp *I, size_t node);
int onnx_resize(struct imp *I, size_t node);
int onnx_upsample(struct imp *I, size_t node);
int onnx_pad(struct imp *I, size_t node);
/* ops_quant.c: QuantizeLinear, DequantizeLinear and the QLinear
 * operators; the check of a node reading an int8 tensor; the params
 * given to the built model */
int onnx_quantize(struct imp *I, size_t node);
int onnx_dequantize(struct imp *I, size_t node);
int onnx_qlinearconv(struct imp *I, size_t node);
int onnx_qlinearmatmul(struct imp *I, size_t node);
int onnx_qlinearadd(struct imp *I, size_t node);
int fold_quantize(struct imp *I, size_t node, struct cval *c);
int fold_dequantize(struct imp *I, size_t node, struct cval *c);
/* Before a handler: refuse a node that reads an int8 tensor unless it
 * is a quantisation operator or one that keeps its input's params
 * (*keeps = 1: call quant_keep() after the handler). */
int quant_check_reader(struct imp *I, size_t node, int *keeps);
int quant_keep(struct imp *I, size_t node);
/* Whether a node of this domain and op_type is read (com.microsoft's
 * QLinearAdd besides the default domain). */
int quant_domain_ok(const char *domain, const char *op_type);
/* Give the built model the params recorded while translating. */
int quant_apply(struct imp *I, memest_model *m);
/* ops_conv.c: a conv2d layer reading x with weight W and bias B (may be
 * NULL), their data W->f and B->f; w_owned and b_owned (may be NULL) are
 * handed to the layer's weights, and freed on error */
int conv_emit(struct imp *I, size_t node, size_t x, const struct cval *W,
              const struct cval *B, float *w_owned, float *b_owned);
/* ops_binary.c: an element-wise layer of two computed tensors xs */
int emit_two(struct imp *I, size_t node, const char *kind, const size_t *xs);
/* ops_dense.c */
int emit_dense(struct imp *I, size_t node, size_t x, const struct cval *Bm,
               int b_is_km, double alpha, const float *bias,
               float *bias_owned);

/* ops_seq.c: sequence models */
int onnx_layernorm(struct imp *I, size_t node);
int onnx_layernorm_pattern(struct imp *I, size_t node);
int onnx_transpose(struct imp *I, size_t node);
int onnx_matmul_two(struct imp *I, size_t node);
int onnx_clstoken(struct imp *I, size_t node);
int onnx_try_posembed(struct imp *I, size_t node, size_t cslot, int *st);
int onnx_mha(struct imp *I, size_t node);

/* folds (fold.c, fold_index.c, fold_arith.c) */
int fold_constant(struct imp *I, size_t node, struct cval *c);
int fold_identity(struct imp *I, size_t node, struct cval *c);
int fold_transpose(struct imp *I, size_t node, struct cval *c);
int fold_shape(struct imp *I, size_t node, struct cval *c);
int fold_gather(struct imp *I, size_t node, struct cval *c);
int fold_unsqueeze(struct imp *I, size_t node, struct cval *c);
int fold_squeeze(struct imp *I, size_t node, struct cval *c);
int fold_concat(struct imp *I, size_t node, struct cval *c);
int fold_slice(struct imp *I, size_t node, struct cval *c);
int fold_cast(struct imp *I, size_t node, struct cval *c);
int fold_constant_of_shape(struct imp *I, size_t node, struct cval *c);
int fold_equal(struct imp *I, size_t node, struct cval *c);
int fold_where(struct imp *I, size_t node, struct cval *c);
int fold_expand(struct imp *I, size_t node, struct cval *c);
int fold_range(struct imp *I, size_t node, struct cval *c);
int fold_add(struct imp *I, size_t node, struct cval *c);
int fold_sub(struct imp *I, size_t node, struct cval *c);
int fold_mul(struct imp *I, size_t node, struct cval *c);
int fold_div(struct imp *I, size_t node, struct cval *c);
int fold_reshape(struct imp *I, size_t node, struct cval *c);

/* ---- Layers and the text (emit.c) --------------------------------------- */

int push_layer(struct imp *I, size_t node, const char *kind,
               const char *want_name, const char *fallback, size_t *out);
int layer_inputs(struct imp *I, size_t l, const size_t *vals, size_t n);
int set_output(struct imp *I, size_t node, size_t slot, size_t l,
               unsigned rank, const uint64_t *dim);
int push_weight(struct imp *I, size_t l, const char *suffix, unsigned rank,
                const uint64_t *dim, const float *data, float *owned);
int emit_act(struct imp *I, size_t node, size_t x, enum memest_act act,
             const char *want_name);
/* emit_act() with the activation's parameters (leakyrelu's and elu's
 * alpha, hardsigmoid's alpha and beta, clip's bounds); emit_act() gives
 * the text format's defaults. */
int emit_act_params(struct imp *I, size_t node, size_t x,
                    enum memest_act act, double alpha, double beta,
                    const char *want_name);
int emit_simple(struct imp *I, size_t node, const char *kind,
                const char *fallback, size_t x, unsigned rank,
                const uint64_t *dim);
int emit_flat(struct imp *I, size_t node, size_t x);
/* Render the layers as text, parse it and give it the weights. */
int build(struct imp *I, const char *model_name, memest_model **out);

#endif
