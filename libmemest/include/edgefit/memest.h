/*
 * libmemest: memory and compute estimation for small neural networks.
 *
 * A model is a graph of layers in execution order, described in text, one
 * layer per line (see libmemest/README.md for the format), named by a
 * preset ("mlp:784-64-10", "smallcnn", "resnet8"), or read from ONNX. The
 * library infers every layer's shape and counts, with exact 64-bit
 * arithmetic, parameters, activations and MACs for a batch size and a
 * numeric precision; it plans the inference arena over tensor lifetimes;
 * it fits a batch size to a memory budget the way the original
 * hardware-simulation module did, and builds the run plan with the same
 * warnings.
 *
 * Conventions (those of the original modules and of PyTorch):
 *   - parameters: dense in*out + out; conv2d out_c*(in_c/g)*kh*kw + out_c
 *     (no bias term with bias=no unless a batch norm folded into it); a
 *     standalone batch norm 2*C; everything else 0;
 *   - output elements: batch * prod(output shape); conv/pool spatial size
 *     floor((H + pad_top + pad_bottom - kh) / s) + 1;
 *   - MACs: dense batch*in*out; conv2d output_elements*(in_c/g)*kh*kw;
 *     matmul batch*stack*M*K*N (the multiplies); attention batch*(4 T D^2
 *     + 2 T^2 D); everything else 0;
 *   - activation memory: every input plus every layer output, and the
 *     working memory of a layer that has some (an attention's score
 *     matrix of one head, T x T), elements times the precision's bytes;
 *   - MB is 1024 * 1024 bytes.
 *
 * Every size is a uint64_t computed with overflow checks: a model or batch
 * too large to count yields MEMEST_E_OVERFLOW, never a wrapped value.
 *
 * Thread safety: a model is immutable once built (memest_model_set_weights
 * is the one exception, before the model is shared); any number of
 * threads may read it at once. No function keeps global state.
 */
#ifndef EDGEFIT_MEMEST_H
#define EDGEFIT_MEMEST_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32) && defined(MEMEST_BUILDING)
#define MEMEST_API __declspec(dllexport)
#elif defined(MEMEST_BUILDING) && defined(__GNUC__)
#define MEMEST_API __attribute__((visibility("default")))
#else
#define MEMEST_API
#endif

/* ---- Status codes and diagnostics ------------------------------------- */

enum memest_status {
    MEMEST_OK = 0,
    MEMEST_E_PARSE,    /* malformed text: unknown kind or key, bad token */
    MEMEST_E_RANGE,    /* a value outside its domain (zero, negative, NaN) */
    MEMEST_E_OVERFLOW, /* a size that does not fit in 64 bits */
    MEMEST_E_NOMEM,    /* an allocation failed */
    MEMEST_E_IO,       /* a file could not be read */
    MEMEST_E_INVALID,  /* a NULL pointer or an out-of-range enum value */
    MEMEST_E_SHAPE,    /* shapes that do not agree (kernel, groups, dense) */
    MEMEST_E_NOTFOUND, /* the thing asked for is not there (a tensor's quant) */
};

/* Static text for a status code; "unknown status" for anything else. */
MEMEST_API const char *memest_strerror(int status);

/* The bytes asked for by the last allocation of this library that failed
 * on the calling thread (0 when none has failed), for the message of a
 * MEMEST_E_NOMEM from a function that has no diagnostic to name the size in
 * ("out of memory: <what> (<n> bytes)"). It is read, never cleared:
 * after MEMEST_E_NOMEM it is the allocation that failed; otherwise it may
 * be an older failure the library did without. */
MEMEST_API size_t memest_nomem_bytes(void);
/* When that allocation failed (CLOCK_MONOTONIC, in ns; 0 when none has):
 * of the records of several libraries, the newest is the failure being
 * reported, the others older ones that were done without. */
MEMEST_API unsigned long long memest_nomem_when(void);

/* The library's version, e.g. "0.1.0". Static text. */
MEMEST_API const char *memest_version(void);

/*
 * Where and why parsing failed. Parsers fill it when they return an error
 * (and clear it on success) if the caller passes one; it may be NULL.
 * `source` is the file path, the preset name, or "<string>"; `line` and
 * `column` are 1-based and point at the offending token (0 when the error
 * has no place in the text, e.g. a file that cannot be opened). Both
 * strings are always NUL-terminated, truncated if need be.
 */
struct memest_diag {
    int line;
    int column;
    char source[256];
    char message[256];
};

/*
 * Write "source:line:column: message" ("source:line: message" when column
 * is 0, "source: message" when line is 0) into buf, NUL-terminated and truncated to cap bytes. Returns the length
 * the full text would have, like snprintf.
 */
MEMEST_API size_t memest_diag_format(const struct memest_diag *diag,
                                     char *buf, size_t cap);

/* ---- Precisions --------------------------------------------------------- */

enum memest_precision {
    MEMEST_FP64 = 0,
    MEMEST_FP32,
    MEMEST_FP16,
    MEMEST_BF16,
    MEMEST_INT8,         /* static: calibrated scales, integer requant */
    MEMEST_INT8_DYNAMIC, /* per-tensor scales computed at run time */
};

#define MEMEST_PRECISION_COUNT 6

/* Whether p stores int8 tensors (static or dynamic). */
static inline int memest_precision_is_int8(enum memest_precision p)
{
    return p == MEMEST_INT8 || p == MEMEST_INT8_DYNAMIC;
}

/*
 * Parse a precision name, case-insensitively: "fp64"/"float64",
 * "fp32"/"float32", "fp16"/"float16"/"half", "bf16"/"bfloat16", "int8"
 * (static int8, as deployed), "int8-dynamic" (the older scheme: each
 * tensor's scale computed from its values at run time).
 * Returns MEMEST_OK, MEMEST_E_PARSE for any other text, MEMEST_E_INVALID
 * for NULL arguments.
 */
MEMEST_API int memest_precision_parse(const char *text,
                                      enum memest_precision *out);

/* Bytes per element: 8, 4, 2, 2, 1, 1; 0 for a value outside the enum. */
MEMEST_API unsigned memest_precision_bytes(enum memest_precision p);

/* Short name: "fp64", "fp32", "fp16", "bf16", "int8", "int8-dynamic"; NULL outside the
 * enum. Static text. */
MEMEST_API const char *memest_precision_name(enum memest_precision p);

/* The original module's spelling of the precision mode, as used in run
 * plans: "float64", "float32", "float16", "bfloat16", "int8",
 * "int8-dynamic"; NULL outside
 * the enum. Static text. */
MEMEST_API const char *memest_precision_mode_name(enum memest_precision p);

/* ---- Models ------------------------------------------------------------- */

/*
 * The kinds of layer, one line each: X(ID, "name") gives the enumerator
 * MEMEST_KIND_ID, in this order from 0, and memest_kind_name()'s text (the
 * habit of XNNPACK's node-type-defs.h). Append new kinds at the end, never
 * renumber. A consumer may expand the list into its own tables, e.g.
 *
 *     #define NAME(id, name) [MEMEST_KIND_##id] = name,
 *     static const char *const names[] = {MEMEST_KINDS(NAME)};
 *
 * so that a kind added here reaches every table that lists them.
 */
#define MEMEST_KINDS(X)                                                     \
    X(INPUT, "input")            /* only in estimate rows: a model input */ \
    X(DENSE, "dense")                                                       \
    X(CONV2D, "conv2d")                                                     \
    X(MAXPOOL, "maxpool")                                                   \
    X(AVGPOOL, "avgpool")                                                   \
    X(FLATTEN, "flatten")                                                   \
    X(ACTIVATION, "activation")  /* a standalone "relu", "gelu", ... */     \
    X(GLOBALAVGPOOL, "globalavgpool") /* CxHxW to Cx1x1, plane means */     \
    X(ADD, "add")                /* element-wise sum of 2+ shapes, act */   \
    X(CONCAT, "concat")          /* 2+ inputs joined along an axis */       \
    X(BATCHNORM, "batchnorm")    /* standalone per-channel scale, shift */  \
    X(IDENTITY, "identity")      /* output = input */                       \
    X(DROPOUT, "dropout")        /* output = input at inference */      \
    X(SUB, "sub")                /* a - b, numpy broadcasting, act */      \
    X(MUL, "mul")                /* a * b, numpy broadcasting, act */      \
    X(DIV, "div")                /* a / b, numpy broadcasting, act */      \
    X(CONV_TRANSPOSE, "convtranspose") /* transposed 2-D convolution */     \
    X(RESIZE, "resize")          /* nearest or bilinear resize of H, W */ \
    X(PAD, "pad")                /* constant padding of H and W */     \
    X(SHUFFLE, "shuffle")        /* ShuffleNet's channel shuffle, g= */  \
    X(SLICE, "slice")            /* a range along one axis, copied */    \
    X(RESHAPE, "reshape")        /* the same elements, another shape */ \
    X(LAYERNORM, "layernorm")    /* normalise the last axis, gamma, beta */ \
    X(CLSTOKEN, "clstoken")      /* prepend a learned row: T x D to T+1 */ \
    X(POSEMBED, "posembed")      /* add a learned T x D parameter */   \
    X(MATMUL, "matmul")          /* two inputs, batched, broadcasting */ \
    X(TRANSPOSE, "transpose")    /* perm= of the per-sample axes */      \
    X(ATTENTION, "attention")    /* fused multi-head self-attention */ \
    X(LSTM, "lstm")              /* nn.LSTM, one layer: T x D to T x H */ \
    X(GRU, "gru")                /* nn.GRU, one layer: T x D to T x H */

#define MEMEST_KIND_ENUMERATOR_(id, name) MEMEST_KIND_##id,
#define MEMEST_KIND_PLUS_ONE_(id, name) +1

enum memest_kind { MEMEST_KINDS(MEMEST_KIND_ENUMERATOR_) };

/* The number of kinds (a macro, not an enumerator, so that a switch over
 * enum memest_kind lists only real kinds). */
#define MEMEST_KIND_COUNT (0 MEMEST_KINDS(MEMEST_KIND_PLUS_ONE_))

enum memest_act {
    MEMEST_ACT_NONE = 0,
    MEMEST_ACT_RELU,
    MEMEST_ACT_GELU,
    MEMEST_ACT_SIGMOID,
    MEMEST_ACT_TANH,
    MEMEST_ACT_SOFTMAX,    /* along the layer's axis: by default the
                            * features of a vector or of a T x D
                            * sequence, the channels at each pixel of a
                            * CxHxW tensor */
    MEMEST_ACT_RELU6,      /* min(max(x, 0), 6) */
    MEMEST_ACT_LOGSOFTMAX, /* log of softmax, same axis */
    MEMEST_ACT_ERF,        /* the error function */
    MEMEST_ACT_GELU_ERF,   /* GELU's exact form 0.5 x (1 + erf(x / sqrt 2)),
                            * PyTorch's nn.GELU() and ONNX's; MEMEST_ACT_GELU
                            * is the tanh form the original trainer used,
                            * up to 3.5e-4 away from it */
    /* the activations of the mobile and vision networks; the parameters
     * are the layer's act_alpha and act_beta (struct memest_layer) */
    MEMEST_ACT_SILU,        /* x sigmoid(x) */
    MEMEST_ACT_HARDSIGMOID, /* max(0, min(1, alpha x + beta)) */
    MEMEST_ACT_HARDSWISH,   /* x hardsigmoid(x), alpha 1/6, beta 0.5 */
    MEMEST_ACT_LEAKYRELU,   /* x < 0 ? alpha x : x */
    MEMEST_ACT_ELU,         /* x > 0 ? x : alpha (exp(x) - 1) */
    MEMEST_ACT_SOFTPLUS,    /* log(1 + exp(x)) */
    MEMEST_ACT_CLIP,        /* min(max(x, alpha), beta): lo, hi */
};

#define MEMEST_ACT_COUNT 17

/* The kind's name in MEMEST_KINDS: "input", "dense", "conv2d", ...,
 * "dropout"; NULL outside the enum. Static text. */
MEMEST_API const char *memest_kind_name(enum memest_kind kind);

/*
 * 1 when a layer of this kind is a view: its output is its input's buffer,
 * unchanged (flatten, identity, dropout), so that a memory plan or an
 * executor gives the output no storage of its own and keeps the input
 * alive as long as the output is read; 0 for every other kind and for a
 * value outside the enum. memest_plan_arena() follows this rule, and an
 * executor that follows it too has the arena the plan says.
 */
MEMEST_API int memest_kind_is_view(enum memest_kind kind);

/* "none", "relu", "gelu", "sigmoid", "tanh", "softmax", "relu6",
 * "logsoftmax", "erf", "gelu_erf", "silu", "hardsigmoid", "hardswish",
 * "leakyrelu", "elu", "softplus", "clip"; NULL outside the enum. Static
 * text. */
MEMEST_API const char *memest_act_name(enum memest_act act);

/*
 * A tensor shape per sample (without the batch): rank 1 is a feature
 * vector of dim[0] elements; rank 2 a sequence of dim[0] steps of dim[1]
 * features (T x D, ONNX's N x T x D); rank 3 is channels, height, width
 * in dim[0], dim[1], dim[2]. Unused dims are 0.
 */
struct memest_shape {
    unsigned rank;
    uint64_t dim[3];
};

/* Longest text memest_shape_format() writes, NUL included. */
#define MEMEST_SHAPE_TEXT_MAX 64

/*
 * Write the shape as "8x14x14" or "10" into buf (NUL-terminated, truncated
 * to cap). Returns the length the full text would have.
 */
MEMEST_API size_t memest_shape_format(const struct memest_shape *shape,
                                      char *buf, size_t cap);

/*
 * One layer after shape inference. All counts are per sample and were
 * checked for overflow when the model was built.
 *
 * Tensors: a model with I inputs and L layers has I + L tensors. Tensor t
 * for t < I is input t; tensor I + i is the output of layer i. Layers are
 * in execution order: a layer reads only tensors made before it. Every
 * tensor but the last layer's output is read by at least one layer (the
 * last layer's output is the model's output).
 *
 * `inputs[0..input_count-1]` are the tensor ids the layer reads (one for
 * every kind but add and concat, which read two or more). `in_shape` is
 * the shape of inputs[0].
 *
 * `units` is the output features of a dense layer or the output channels of
 * a conv2d, the normalised width D of a layernorm, the features D of a
 * clstoken or posembed, 0 otherwise. `kernel_h/w`, `stride_h/w` and
 * `pad_*` describe conv2d and pooling windows (output height floor((H +
 * pad_top + pad_bottom - kernel_h) / stride_h) + 1, likewise the width);
 * 0 for other kinds. `groups` is conv2d's (1 elsewhere). `act` is the activation
 * applied after a dense, conv2d or add layer, or the function of a
 * standalone activation layer; MEMEST_ACT_NONE elsewhere. `has_bias` is 1
 * for a dense or conv2d layer with a bias (a folded batch norm gives one),
 * 0 otherwise. `count_include_pad` is 1 when an avgpool divides by the
 * whole window, padding included (PyTorch's default), 0 when it divides by
 * the window's cells inside the input (ONNX's default); 0 for other kinds.
 *
 * `folded_bn` names a batchnorm layer of the description that was folded
 * into this dense or conv2d layer (it read this layer's output and nothing
 * else did), NULL otherwise; `bn_epsilon` is the epsilon of that batch
 * norm or of a standalone batchnorm layer (1e-5 by default), 0 elsewhere.
 * A folded batch norm has no layer, tensor or name of its own; `in=` may
 * still name it, meaning this layer.
 *
 * `weight_count` and `bias_count` split `parameter_count` (a standalone
 * batchnorm has C scales and C shifts); `macs_per_sample` is the layer's
 * MACs for batch 1; `output_elements` is the product of `out_shape`.
 *
 * `weight` and `bias` are the layer's parameters in float32 when the model
 * carries weights (ONNX initializers, memest_model_set_weights()), NULL
 * otherwise: weight_count and bias_count floats in PyTorch's layouts,
 * dense [out][in], conv2d [out_c][in_c/groups][kernel_h][kernel_w], with
 * any folded batch norm already applied; a standalone batchnorm's weight
 * is its per-channel scale gamma / sqrt(var + eps) and its bias the shift
 * beta - mean * scale. `name`, `inputs`, `folded_bn`, `weight` and `bias`
 * are owned by the model. `line` is the line of the description that
 * declared the layer (1 for presets; for ONNX, the node's index + 1).
 */
struct memest_layer {
    enum memest_kind kind;
    enum memest_act act;
    const char *name;
    uint64_t units;
    uint64_t kernel_h, kernel_w;
    uint64_t stride_h, stride_w;
    uint64_t pad_top, pad_left, pad_bottom, pad_right;
    uint64_t groups;
    int has_bias;
    int count_include_pad;
    size_t input_count;
    const size_t *inputs;
    struct memest_shape in_shape;
    struct memest_shape out_shape;
    uint64_t weight_count;
    uint64_t bias_count;
    uint64_t parameter_count;
    uint64_t output_elements;
    uint64_t macs_per_sample;
    const char *folded_bn;
    double bn_epsilon;
    const float *weight;
    const float *bias;
    int line;
    /* The parameters of `act` (activations silu ... clip): leakyrelu's
     * slope alpha (0.01 by default), elu's alpha (1), hardsigmoid's slope
     * alpha and offset beta (0.2 and 0.5, ONNX's defaults), clip's bounds
     * lo in act_alpha and hi in act_beta (-inf and +inf when absent),
     * hardswish's fixed 1/6 and 0.5; 0 for every other activation. */
    double act_alpha;
    double act_beta;
    /* add, sub, mul, div (element-wise binary, numpy broadcasting of the
     * per-sample shapes): in_shape_b is the second input's shape when the
     * layer reads two (in_shape is the first's); a layer that reads one
     * has a constant operand instead, `scalar`, on the side scalar_side
     * says (MEMEST_SCALAR_RIGHT: x op scalar; MEMEST_SCALAR_LEFT: scalar
     * op x). A constant is no parameter (PyTorch counts none): it is held
     * in the layer, not in the arena nor in the stored parameters. */
    struct memest_shape in_shape_b;
    int scalar_side;
    double scalar;
    /* convtranspose and resize (their own block of fields):
     * `dilation_h/w` are a convtranspose's dilations (1 when undilated)
     * and `out_pad_h/w` its output_padding (0 elsewhere; a convtranspose
     * uses units, kernel_*, stride_*, pad_* and groups as conv2d does,
     * its weight in PyTorch's [in_c][out_c/groups][kh][kw]). A resize has
     * `resize_mode` (0 nearest, 1 bilinear), `resize_coord` (0
     * half_pixel, 1 pytorch_half_pixel, 2 align_corners, 3 asymmetric),
     * `resize_nearest` (0 round_prefer_floor, 1 round_prefer_ceil, 2
     * floor, 3 ceil; nearest only), and `scale_h/w`, the factors the
     * coordinates are mapped with (the output is floor(in * scale)), or 0
     * when the output size was given and the factor is out / in. */
    uint64_t dilation_h, dilation_w;
    uint64_t out_pad_h, out_pad_w;
    int resize_mode;
    int resize_coord;
    int resize_nearest;
    double scale_h, scale_w;
    /* pad and ceil-mode pools (with the dilations above, which a conv2d
     * uses too: its taps are dilation_h x dilation_w apart, 1 dense): a
     * maxpool/avgpool with ceil_mode rounds its output size up (PyTorch's
     * rule: the last window starts inside the input or its leading
     * padding); a pad layer fills pad_top..pad_right with pad_value. */
    int ceil_mode;
    double pad_value;
    /* slice (data movement): the per-sample axis (0 the channels of CxHxW
     * or the features of a vector, 1 the rows, 2 the columns) and the
     * range [slice_begin, slice_end) kept along it; shuffle uses groups */
    unsigned slice_axis;
    uint64_t slice_begin, slice_end;
    /* concat: the per-sample axis its inputs are joined along, numbered as
     * slice_axis (0 the channels or features, 1 the rows or the second
     * dimension of an AxB, 2 the columns) */
    unsigned concat_axis;
    /* sequence operators (DESIGN.md "Models": a per-sample rank-2 shape
     * is a sequence of dim[0] steps of dim[1] features, T x D).
     * `axis`: a layernorm normalises the per-sample axes axis..rank-1 (the
     * last, D, unless ONNX says otherwise); a softmax or logsoftmax (a
     * standalone activation layer, or fused after a layer) normalises the
     * per-sample axis `axis`: its features (0 of a vector, 1 of a T x D
     * sequence) or channels (0 of CxHxW) unless the line or ONNX names
     * another; 0 for every other kind. `perm`: a transpose's output axis i
     * is its input's per-sample axis perm[i] (the batch stays first).
     * `heads`: an attention layer's heads (units is its embedding width).
     * An lstm or gru (units = hidden width H): `direction` one of enum
     * memest_rnn_direction, `linear_before_reset` a gru's (1: PyTorch's
     * nn.GRU, ONNX's attribute), `return_sequence` 1 when the output is
     * every step's hidden state, T x (directions * H), 0 when it is the
     * last step's, directions * H. */
    unsigned axis;
    unsigned perm[3];
    uint64_t heads;
    int direction;
    int linear_before_reset;
    int return_sequence;
    /* Elements per sample a layer needs beside its inputs and output
     * while it runs, and only then (an attention layer's score matrix of
     * one head, T x T): the estimates count them as activation memory and
     * memest_plan_arena() gives them a block alive during the layer; 0
     * for most kinds. */
    uint64_t work_elements;
};

/* An lstm's or gru's direction (memest_layer's direction). */
enum memest_rnn_direction {
    MEMEST_RNN_FORWARD = 0,
    MEMEST_RNN_REVERSE = 1,
    MEMEST_RNN_BIDIRECTIONAL = 2,
};

/* Where a binary layer's constant operand stands (memest_layer's
 * scalar_side). */
enum memest_scalar_side {
    MEMEST_SCALAR_NONE = 0,
    MEMEST_SCALAR_RIGHT = 1,
    MEMEST_SCALAR_LEFT = 2,
};

typedef struct memest_model memest_model; /* opaque, immutable once built */

/*
 * Parse a model description from a NUL-terminated string. On success *out
 * is a new model the caller releases with memest_model_destroy(); on error
 * *out is NULL and diag (if given) holds source "<string>", the line, the
 * column and a message.
 *
 * Returns MEMEST_OK; MEMEST_E_PARSE for unknown kinds or keys, missing
 * widths, non-numeric values, a duplicate or missing `input`, duplicate
 * names or keys, an empty model; MEMEST_E_RANGE for zero, negative or too
 * large numbers, and for an input or layer output of more than 2147483647
 * elements per sample (the ONNX importer's limit too); MEMEST_E_SHAPE for a kernel larger than the padded input,
 * channels not divisible by groups, dense on a CxHxW input without
 * flatten, layers that need a CxHxW input but get a vector, shapes that
 * disagree at an add or concat, and an output no layer reads (an unknown
 * or later input name is MEMEST_E_PARSE); MEMEST_E_OVERFLOW when a per-sample count does not fit in 64 bits;
 * MEMEST_E_NOMEM; MEMEST_E_INVALID for NULL text or out.
 */
MEMEST_API int memest_model_parse(const char *text, memest_model **out,
                                  struct memest_diag *diag);

/*
 * Like memest_model_parse() for `len` bytes that need not end in NUL (a NUL
 * byte inside them is a parse error). `source` names the text in
 * diagnostics; NULL means "<string>".
 */
MEMEST_API int memest_model_parse_buffer(const char *text, size_t len,
                                         const char *source,
                                         memest_model **out,
                                         struct memest_diag *diag);

/*
 * Build a preset: "mlp:W0-W1-...-Wn" (input W0, dense layers W1..Wn with
 * relu on the hidden ones and softmax on the last; at least two widths),
 * "smallcnn" (1x28x28 input, conv 8 k3 p1 relu, maxpool 2, conv 16 k3 p1
 * relu, maxpool 2, flatten, dense 10 softmax), or one of the models of
 * libmemest/models/ compiled into the library (installed as text under
 * share/edgefit/models): the MLPerf Tiny reference architectures
 * "resnet8", "ds-cnn", "mobilenetv1-0.25" and "fc-autoencoder", and the
 * sequence models "kwt" (a keyword transformer) and "lstm-kws". Errors as
 * for memest_model_parse(), with source = the name, line 1 and the column
 * of the offending character; an unknown name is MEMEST_E_PARSE.
 */
MEMEST_API int memest_model_preset(const char *name, memest_model **out,
                                   struct memest_diag *diag);

/* 1 when `text` names a preset (starts with "mlp:" or is one of the names
 * above), else 0. Says nothing about whether an mlp preset is well
 * formed. */
MEMEST_API int memest_is_preset_name(const char *text);

/* The names of the presets other than "mlp:...", NULL-terminated. Static. */
MEMEST_API const char *const *memest_preset_names(void);

/*
 * Load a model from a preset name or a file path. Preset names take
 * precedence: a file called "smallcnn" is reached as "./smallcnn". A path
 * ending in ".onnx" is read by memest_model_load_onnx() with no options.
 * For a text file, diag->source is the path; MEMEST_E_IO when it cannot be
 * read (message with the system's reason), MEMEST_E_RANGE when it is
 * larger than 64 MiB; otherwise as memest_model_parse().
 */
MEMEST_API int memest_model_load(const char *path_or_preset,
                                 memest_model **out,
                                 struct memest_diag *diag);

/* Release a model. NULL is allowed. */
MEMEST_API void memest_model_destroy(memest_model *model);

/* The model's name: from its `name` line, the preset name, or "model".
 * Owned by the model. */
MEMEST_API const char *memest_model_name(const memest_model *model);

/* Number of layers after the input (at least 1 for a built model). */
MEMEST_API size_t memest_model_layer_count(const memest_model *model);

/* Layer i (0-based, not counting the input), or NULL when i is out of
 * range. Owned by the model. */
MEMEST_API const struct memest_layer *
memest_model_layer(const memest_model *model, size_t i);

/* The per-sample shape of input 0. */
MEMEST_API struct memest_shape
memest_model_input_shape(const memest_model *model);

/* Number of model inputs (at least 1 for a built model). A description
 * has one `input` line per input; the first is input 0. */
MEMEST_API size_t memest_model_input_count(const memest_model *model);

/* Input k's name ("input" for a single unnamed input, else its `name=`
 * or, for ONNX, the graph input's name) and per-sample shape; NULL / a
 * zero shape when k is out of range. Owned by the model. */
MEMEST_API const char *memest_model_input_name(const memest_model *model,
                                               size_t k);
MEMEST_API struct memest_shape
memest_model_input_shape_at(const memest_model *model, size_t k);

/* Tensors (see struct memest_layer): their number, input count + layer
 * count, and tensor t's per-sample shape (zero shape when out of range). */
MEMEST_API size_t memest_model_tensor_count(const memest_model *model);
MEMEST_API struct memest_shape
memest_model_tensor_shape(const memest_model *model, size_t t);

/* 1 when layer i's description gives it a bias of its own (bias=yes, the
 * default, or an ONNX bias input), before any batch norm folded into it
 * gave it one: the "<layer>.bias" memest_model_set_weights() then wants
 * beside the batch norm's tensors. 0 otherwise, or for NULL or i out of
 * range. */
MEMEST_API int memest_model_layer_declared_bias(const memest_model *model,
                                                size_t i);

/* 1 when every layer with parameters carries weights (layer->weight
 * non-NULL), else 0. */
MEMEST_API int memest_model_has_weights(const memest_model *model);

/* The batch size the model's file fixes (an ONNX input whose first
 * dimension is a number), 0 when it leaves the batch free (text models,
 * a symbolic ONNX batch). */
MEMEST_API uint64_t memest_model_fixed_batch(const memest_model *model);

/* Where the batch is in the data the model's file describes: the axis of
 * input k's and of the output's full shapes (with the batch) that counts
 * the samples. 0, batch first, for every text model and most ONNX ones;
 * an ONNX LSTM/GRU of layout 0 reading a graph input straight has it
 * time-major, [T, N, D] (1), and its Y_h [dirs, N, H] (1), Y [T, dirs,
 * N, H] (2) or squeezed Y [T, N, H] (1) as the graph output. The model
 * and the executor hold every tensor batch first (memest_model_input_
 * shape_at() is the per-sample shape either way): a caller feeding such
 * data moves the batch first, and an output back. 0 for NULL or k out
 * of range. */
MEMEST_API unsigned memest_model_input_batch_axis(const memest_model *model,
                                                  size_t k);
MEMEST_API unsigned memest_model_output_batch_axis(const memest_model *model);

/* The per-sample output shape of the last layer. */
MEMEST_API struct memest_shape
memest_model_output_shape(const memest_model *model);

/* Total parameters of the model (batch-independent). */
MEMEST_API uint64_t memest_model_parameter_count(const memest_model *model);

/*
 * Write the model as a canonical description (every option explicit, one
 * layer per line) into buf, NUL-terminated. *len receives the length of the
 * full text without the NUL. MEMEST_E_RANGE when cap is too small (buf then
 * holds a truncated, NUL-terminated prefix when cap > 0); buf NULL with cap
 * 0 asks for the length. Parsing the full text yields an identical model.
 * MEMEST_E_INVALID for a NULL model or len, or buf NULL with cap > 0.
 */
MEMEST_API int memest_model_write(const memest_model *model, char *buf,
                                  size_t cap, size_t *len);

/* ---- Weights ------------------------------------------------------------ */

#define MEMEST_TENSOR_MAX_RANK 8

/* A float32 tensor, row-major, as the caller owns it. */
struct memest_tensor {
    const char *name;
    unsigned rank;
    uint64_t dim[MEMEST_TENSOR_MAX_RANK];
    const float *data; /* prod(dim) floats */
};

/*
 * PyTorch's shape of a layer's "<layer>.weight", the layout of
 * layer->weight: [out, in] for dense, [out_c, in_c/groups, kernel_h,
 * kernel_w] for conv2d, [C] for a standalone batchnorm (gamma in a
 * state_dict, the folded scale in layer->weight). Fills dim[0..rank-1] and
 * returns the rank, 0 for a layer without parameters or a NULL argument.
 * The bias, when the layer has one, is [bias_count]. The one statement of
 * the layouts: memest_model_set_weights() checks tensors against it.
 */
MEMEST_API unsigned
memest_layer_weight_shape(const struct memest_layer *layer,
                          uint64_t dim[MEMEST_TENSOR_MAX_RANK]);

/*
 * One tensor of a layer's state_dict: "<layer><suffix>" of shape
 * dim[0..rank-1], stored in layer->weight (in_bias 0) or layer->bias
 * (in_bias 1) from element `offset` on, row-major. Operators with more
 * than a weight and a bias (attention: ".in_proj_weight",
 * ".out_proj.weight", ...; lstm and gru: ".weight_ih_l0", ...) list their
 * tensors this way; for every other operator it is ".weight" (as
 * memest_layer_weight_shape() gives it) and ".bias" when it has one.
 */
#define MEMEST_PARAM_TENSORS_MAX 8
struct memest_param_tensor {
    const char *suffix; /* static text: ".weight", ".weight_ih_l0", ... */
    unsigned rank;
    uint64_t dim[MEMEST_TENSOR_MAX_RANK];
    int in_bias;
    uint64_t offset;
};

/*
 * The state_dict tensors of a layer, in the order a state_dict lists them:
 * fills out[0..n-1] and returns n (at most MEMEST_PARAM_TENSORS_MAX), 0
 * for a layer without parameters, a NULL argument, or a batch norm
 * (standalone or folded: memest_model_set_weights() reads its four
 * tensors and stores the folded scale and shift). Together the tensors
 * cover layer->weight and layer->bias exactly once.
 */
MEMEST_API size_t
memest_layer_param_tensors(const struct memest_layer *layer,
                           struct memest_param_tensor out[MEMEST_PARAM_TENSORS_MAX]);

/*
 * Give a model its weights from tensors named and laid out as PyTorch's
 * state_dict does: "<layer>.weight" ([out, in] for dense, [out_c,
 * in_c/groups, kernel_h, kernel_w] for conv2d) and "<layer>.bias"; a batch
 * norm (folded or standalone) by "<bn>.weight", "<bn>.bias",
 * "<bn>.running_mean", "<bn>.running_var" ([C] each), which are folded
 * here with the layer's epsilon. "<bn>.num_batches_tracked" is ignored.
 * The data is copied. Replaces weights the model had.
 *
 * Call it before the model is shared: it is the one function that changes
 * a built model. On error the model is unchanged and diag names the
 * tensor: MEMEST_E_PARSE for a tensor the model has no use for, or one it
 * needs that is missing; MEMEST_E_SHAPE for a tensor of the wrong shape
 * (the message gives both); MEMEST_E_RANGE for a non-finite value or a
 * negative running variance; MEMEST_E_NOMEM; MEMEST_E_INVALID for NULL
 * model, or tensors NULL with count > 0.
 */
MEMEST_API int memest_model_set_weights(memest_model *model,
                                        const struct memest_tensor *tensors,
                                        size_t count,
                                        struct memest_diag *diag);

/* ---- Quantisation a model carries -------------------------------------- */

/*
 * The int8 parameters of one tensor: real = scale * (q - zero_point).
 * `zero_point` is in int8's domain [-128, 127]; a tensor the file stored
 * as uint8 keeps the same real values with zero point (its uint8 zero
 * point - 128) and is_unsigned 1 (q_u8 = q_s8 + 128).
 */
struct memest_quant {
    float scale;        /* > 0, finite */
    int32_t zero_point; /* [-128, 127] */
    int is_unsigned;    /* the file stored the tensor as uint8 */
};

/*
 * Give tensor t (memest_model_tensor_count order: inputs, then layer
 * outputs) its quantisation; a NULL q clears it. MEMEST_E_RANGE for a
 * scale that is not finite and > 0 or a zero point outside [-128, 127],
 * and for t out of range; MEMEST_E_INVALID for a NULL model.
 */
MEMEST_API int memest_model_set_tensor_quant(memest_model *model, size_t t,
                                             const struct memest_quant *q);
/* MEMEST_OK and *out when tensor t carries a quantisation;
 * MEMEST_E_NOTFOUND when it carries none; MEMEST_E_RANGE for t out of
 * range; MEMEST_E_INVALID for NULL model or out. */
MEMEST_API int memest_model_tensor_quant(const memest_model *model, size_t t,
                                         struct memest_quant *out);
/*
 * A conv2d's or dense layer's per-output-channel weight scales (symmetric
 * int8, zero point 0: w = scales[c] * q), n = the layer's output channels
 * (`units`). Copied; NULL scales with n 0 clears. MEMEST_E_RANGE for a
 * layer index out of range or a scale not finite and > 0; MEMEST_E_SHAPE
 * when n is not the layer's output channels; MEMEST_E_INVALID for a NULL
 * model, a layer of another kind, or NULL scales with n > 0;
 * MEMEST_E_NOMEM.
 */
MEMEST_API int memest_model_set_weight_scales(memest_model *model,
                                              size_t layer,
                                              const float *scales, size_t n);
/* The scales set above (owned by the model), *n their count; NULL and
 * *n = 0 when the layer carries none (n may be NULL). */
MEMEST_API const float *memest_model_weight_scales(const memest_model *model,
                                                   size_t layer, size_t *n);
/* 1 when every tensor carries a quantisation (a QDQ model imported
 * whole), else 0 (also for NULL or a model without tensors). */
MEMEST_API int memest_model_is_quantized(const memest_model *model);

/* ---- ONNX --------------------------------------------------------------- */

/* 1 when this build reads ONNX files (the Meson option `onnx`), else 0;
 * without it the functions below return MEMEST_E_INVALID with a diag
 * saying so. */
MEMEST_API int memest_onnx_available(void);

/*
 * Options of memest_model_load_onnx(). `constants[0..constant_count-1]`
 * give values to graph inputs that are not initializers (ONNX's node
 * tests pass a convolution's weights as inputs): a graph input so named is
 * treated as an initializer. Zeroed options mean none.
 */
struct memest_onnx_opts {
    const struct memest_tensor *constants;
    size_t constant_count;
};

/*
 * Read an ONNX model (opsets 1 to 17, each operator in its form of the
 * opset) and its weights: the supported operators map onto layers (see
 * libmemest/README.md); the model carries the initializers as weights
 * (memest_model_has_weights() is 1 when it has parameters). Graph inputs
 * read as data are the model's inputs, under their names; the batch a
 * numeric first dimension fixes is memest_model_fixed_batch(). Layer
 * names are the nodes' names made unique and safe for the text format
 * (or derived from the op type when a node has none); diag->source is the
 * path, diag->line the node's index + 1, and the message starts with the
 * node's name and op type. MEMEST_E_IO when the file cannot be read (the
 * system's reason), MEMEST_E_PARSE for a malformed protobuf, a missing
 * initializer or an unsupported operator or attribute (the message lists
 * the supported operators), MEMEST_E_SHAPE for shapes that disagree,
 * MEMEST_E_RANGE for absurd dimensions, MEMEST_E_OVERFLOW, MEMEST_E_NOMEM.
 * opts may be NULL.
 */
MEMEST_API int memest_model_load_onnx(const char *path,
                                      const struct memest_onnx_opts *opts,
                                      memest_model **out,
                                      struct memest_diag *diag);

/*
 * A tensor read from a file, owning its name and data. Free with
 * memest_owned_tensor_free().
 */
struct memest_owned_tensor {
    struct memest_tensor t; /* t.name and t.data point into the fields below */
    char *name;
    float *data;
};

/*
 * Read one ONNX TensorProto file (the input_K.pb / output_K.pb of ONNX's
 * test_data_set folders): float, double, float16, bfloat16 and integer
 * types are converted to float32. Errors as memest_model_load_onnx().
 */
MEMEST_API int memest_tensor_load_pb(const char *path,
                                     struct memest_owned_tensor *out,
                                     struct memest_diag *diag);

/* Release what a loader filled; NULL is allowed. */
MEMEST_API void memest_owned_tensor_free(struct memest_owned_tensor *t);

/*
 * Serialise a model as an ONNX ModelProto (opset 13, IR version 7) into a
 * malloc'd buffer: *out (release with free()) of *len bytes. Each layer
 * becomes the nodes of its kind (libmemest/README.md, "ONNX export"),
 * named after the layer; its output tensor is named after the layer too,
 * the model's inputs after the model's inputs; the batch is the file's
 * fixed batch (memest_model_fixed_batch()) or the symbol "N". A fused
 * activation is a node of its own after its layer; a dropout is left out
 * (its readers read its input). The model must carry weights
 * (memest_model_has_weights()) when it has parameters. When the model
 * carries quantisation (memest_model_is_quantized()), it is written as
 * ONNX Runtime's quantize_static writes QDQ models: int8 weights per output
 * channel (axis 0) and int32 biases, each with a DequantizeLinear, and a
 * QuantizeLinear/DequantizeLinear pair after the model input and after
 * every layer's output; else in float32. Re-importing the file with
 * memest_model_load_onnx() gives the same layers, shapes, counts and
 * weights bit for bit.
 *
 * MEMEST_E_PARSE (diag names the layer and its kind) for a layer the
 * writer cannot express in ONNX; MEMEST_E_INVALID for NULL arguments, a
 * model without weights, or a build without ONNX; MEMEST_E_RANGE for a
 * model over protocol buffers' 2 GiB; MEMEST_E_NOMEM.
 */
MEMEST_API int memest_model_to_onnx(const memest_model *model,
                                    unsigned char **out, size_t *len,
                                    struct memest_diag *diag);

/* ---- Memory plans ------------------------------------------------------- */

/*
 * A buffer to place: `size` bytes alive from step `first` to step `last`
 * inclusive (first <= last).
 */
struct memest_buffer_req {
    uint64_t size;
    size_t first;
    size_t last;
};

/*
 * TensorFlow Lite Micro's greedy-by-size planner: buffers in decreasing
 * size (ties by index), each at the lowest offset where it overlaps no
 * already placed buffer alive at a common step. offsets[i] receives buffer
 * i's offset and *arena_bytes the arena's size (the highest end).
 * `alignment` (a power of two, 1 for none) rounds every offset up.
 * MEMEST_E_INVALID for NULL pointers with count > 0, first > last or a bad
 * alignment; MEMEST_E_OVERFLOW; MEMEST_E_NOMEM.
 */
MEMEST_API int memest_plan_buffers(const struct memest_buffer_req *reqs,
                                   size_t count, uint64_t alignment,
                                   uint64_t *offsets, uint64_t *arena_bytes);

/*
 * The same placement tried in four orders: sizes decreasing (the plan
 * above), execution order, longest-lived first and biggest size x lifetime
 * first; offsets and *arena_bytes are those of the smallest arena (the
 * first order among equals), so the plan is never above the greedy
 * planner's, whose arena *greedy_bytes receives (may be NULL). Errors as
 * memest_plan_buffers().
 */
MEMEST_API int memest_plan_buffers_best(const struct memest_buffer_req *reqs,
                                        size_t count, uint64_t alignment,
                                        uint64_t *offsets,
                                        uint64_t *arena_bytes,
                                        uint64_t *greedy_bytes);

/*
 * The inference arena of a model at a batch and precision. Tensors (see
 * struct memest_layer) live from the step that writes them (inputs: step
 * 0; layer i: step i) to the last step that reads them (the model's output:
 * the last step). Identity, dropout and flatten write nothing: their
 * output is their input's buffer, whose life extends to cover theirs.
 * `offset[t]` and `bytes[t]` place tensor t (bytes = batch * elements *
 * precision bytes; offsets are multiples of the precision's bytes, with
 * no further alignment); `arena_bytes` is the plan's size, the best of
 * memest_plan_buffers_best() and so never above `greedy_bytes`, the arena
 * of TensorFlow Lite Micro's greedy-by-size order alone;
 * `live_lower_bound_bytes` is the most bytes alive
 * at one step, which no plan can beat. The arrays hold tensor_count
 * entries and are owned by the plan. A layer with working memory
 * (memest_layer's work_elements: an attention's score matrix) has a block
 * of work_bytes[i] = batch * work_elements * precision bytes at
 * work_offset[i], alive during its step alone (layer_count entries; 0 and
 * 0 for a layer without one); the blocks count in arena_bytes and
 * live_lower_bound_bytes like the tensors.
 */
struct memest_arena_plan {
    uint64_t batch;
    enum memest_precision precision;
    size_t tensor_count;
    uint64_t *offset;
    uint64_t *bytes;
    size_t *first;      /* step that writes it */
    size_t *last;       /* last step that reads it */
    size_t *alias;      /* the tensor whose buffer it uses (itself if none) */
    uint64_t arena_bytes;
    uint64_t greedy_bytes;
    uint64_t live_lower_bound_bytes;
    size_t layer_count;
    uint64_t *work_offset; /* layer i's working block, see above */
    uint64_t *work_bytes;
};

/* Plan the arena. MEMEST_E_RANGE for batch 0, MEMEST_E_OVERFLOW,
 * MEMEST_E_NOMEM, MEMEST_E_INVALID. Free with memest_arena_plan_free(). */
MEMEST_API int memest_plan_arena(const memest_model *model, uint64_t batch,
                                 enum memest_precision precision,
                                 struct memest_arena_plan *out);

MEMEST_API void memest_arena_plan_free(struct memest_arena_plan *plan);

/* ---- Estimates ---------------------------------------------------------- */

/*
 * One row of the per-layer table, the columns of layerwise_breakdown.csv.
 * Rows 0 to input count - 1 are the model inputs (kind MEMEST_KIND_INPUT,
 * layer = the input's name): no parameters or MACs, and their
 * activation_bytes are the inputs', so that each column summed over all
 * rows equals the totals.
 */
struct memest_layer_estimate {
    const char *layer;                        /* owned by the model */
    enum memest_kind kind;
    char output_shape[MEMEST_SHAPE_TEXT_MAX]; /* "8x14x14" or "10" */
    uint64_t output_elements;  /* batch * prod(output shape) */
    uint64_t parameter_count;
    uint64_t parameter_bytes;  /* parameter_count * precision bytes */
    uint64_t activation_bytes; /* output_elements * precision bytes, plus
                                * batch * work_elements * precision bytes
                                * (an attention's score matrix) */
    uint64_t macs;
};

/* Number of rows memest_estimate_layers() fills: inputs + layers. */
MEMEST_API size_t memest_estimate_row_count(const memest_model *model);

/*
 * Fill the per-layer table for a batch size (>= 1) and a precision into
 * rows[0..count-1] (caller's storage). *count receives the number of rows
 * needed even on MEMEST_E_RANGE (cap too small). MEMEST_E_RANGE for
 * batch 0, MEMEST_E_OVERFLOW when a value does not fit in 64 bits,
 * MEMEST_E_INVALID for NULL pointers or a bad precision.
 */
MEMEST_API int memest_estimate_layers(const memest_model *model,
                                      uint64_t batch,
                                      enum memest_precision precision,
                                      struct memest_layer_estimate *rows,
                                      size_t cap, size_t *count);

/*
 * Whole-model totals for a batch and precision. Byte counts are exact; the
 * *_mb fields are the byte counts divided by 1024 * 1024.
 *
 * peak_inference_bytes = parameter bytes + arena_bytes, the arena of
 * memest_plan_arena(); live_lower_bound_bytes is that plan's lower bound.
 */
struct memest_totals {
    uint64_t batch;
    enum memest_precision precision;
    uint64_t parameter_count;
    uint64_t parameter_bytes;
    uint64_t activation_elements; /* input + every layer output */
    uint64_t activation_bytes;
    uint64_t total_bytes;         /* parameter + activation bytes */
    uint64_t macs;
    uint64_t arena_bytes;
    uint64_t live_lower_bound_bytes;
    uint64_t peak_inference_bytes;
    double parameter_mb;
    double activation_mb;
    double total_mb;
    double peak_inference_mb;
};

/* Compute the totals. MEMEST_E_RANGE for batch 0, MEMEST_E_OVERFLOW,
 * MEMEST_E_INVALID for NULL pointers or a bad precision. */
MEMEST_API int memest_estimate_totals(const memest_model *model,
                                      uint64_t batch,
                                      enum memest_precision precision,
                                      struct memest_totals *out);

/*
 * Total memory in MB exactly as the original estimate_total_memory_mb():
 * parameter bytes / 1024^2 + activation bytes / 1024^2, each quotient
 * rounded to double once. Never overflows (exact wide arithmetic), so it
 * also serves batches whose byte counts exceed 64 bits. Being the
 * original's formula (elements x bytes per element), int8 counts every
 * parameter as 1 byte here; memest_estimate_totals, the plan and memfit
 * count an int8 model's int32 biases and per-channel scales and zero
 * points as well. MEMEST_E_RANGE for batch 0, MEMEST_E_INVALID for NULL
 * pointers or a bad precision.
 */
MEMEST_API int memest_total_memory_mb(const memest_model *model,
                                      uint64_t batch,
                                      enum memest_precision precision,
                                      double *out_mb);

/* ---- Training memory ---------------------------------------------------- */

enum memest_optimizer {
    MEMEST_OPT_SGD = 0, /* no state */
    MEMEST_OPT_MOMENTUM, /* one buffer per parameter */
    MEMEST_OPT_ADAM,     /* two buffers per parameter */
};

/* Parse "sgd", "momentum" or "adam" (case-insensitive). MEMEST_E_PARSE for
 * any other text, MEMEST_E_INVALID for NULL arguments. */
MEMEST_API int memest_optimizer_parse(const char *text,
                                      enum memest_optimizer *out);

/* "sgd", "momentum", "adam"; NULL outside the enum. Static text. */
MEMEST_API const char *memest_optimizer_name(enum memest_optimizer opt);

/* State buffers per parameter: 0, 1, 2; 0 outside the enum. */
MEMEST_API unsigned memest_optimizer_state_factor(enum memest_optimizer opt);

/*
 * Training memory, in bytes: parameters + gradients + optimizer state +
 * all activations kept for backward (the input and every layer output) +
 * the working buffers of a trainer (libprofile's prof_train allocates
 * exactly this and checks it). With b bytes of storage per element and B
 * the batch, working_bytes is:
 *   - b * B * (the largest input + output elements of a layer, the first
 *     layer counting its output only): the activation gradients of the
 *     backward pass, one at each end of one buffer;
 *   - b * B * (the outputs of every dense or conv2d layer with act=gelu):
 *     the pre-activations gelu's derivative needs;
 *   - 4 * B: the batch's labels as int32;
 *   - 4 * (in_c/groups * k * k * out_h * out_w) of the largest conv2d:
 *     the float im2col columns of one sample and group;
 *   - when b != 4, the float staging of operators that store in another
 *     precision: 4 * B * 2 * (largest layer input + largest layer output)
 *     and 4 * (the largest layer's parameter count) for its gradients.
 */
struct memest_training {
    uint64_t parameter_bytes;
    uint64_t gradient_bytes;
    uint64_t optimizer_state_bytes;
    uint64_t activation_bytes;
    uint64_t working_bytes; /* the trainer's working buffers (see below) */
    uint64_t total_bytes;
    double total_mb;
};

/*
 * Training memory with everything stored in one precision: with N
 * parameters (the model's, and one more per channel of each batch norm
 * folded into a conv2d or dense layer, which training keeps apart: its
 * gamma), A activation elements, b bytes per element and s state
 * buffers per parameter: params N*b, gradients N*b, state s*N*b,
 * activations A*b, working buffers as above. MEMEST_E_RANGE for batch 0,
 * MEMEST_E_OVERFLOW, MEMEST_E_INVALID.
 */
MEMEST_API int memest_training_memory(const memest_model *model,
                                      uint64_t batch,
                                      enum memest_precision precision,
                                      enum memest_optimizer opt,
                                      struct memest_training *out);

/*
 * Mixed-precision training memory (fp32 master weights, fp16 gradients and
 * activations, fp32 optimizer state): params 4N, gradients 2N, state 4sN,
 * activations 2A, working buffers as above with b = 2. With Adam the first
 * four terms are the original table's 4N + 2N + 8N + 2A. Errors as
 * memest_training_memory().
 */
MEMEST_API int memest_training_memory_mixed(const memest_model *model,
                                            uint64_t batch,
                                            enum memest_optimizer opt,
                                            struct memest_training *out);

/* ---- Batch fitting ------------------------------------------------------ */

/*
 * The memory a batch is fitted by. Every sentence about fitting (a plan, a
 * "fits", a budget exceeded) speaks of one of these; the original's
 * memest_total_memory_mb() (parameters + the sum of all activations, none
 * reused) is an estimate of its own and never decides a fit.
 */
enum memest_measure {
    /* parameters + the planned activation arena (memest_estimate_totals'
     * peak_inference_bytes): what an executor holds to run inference */
    MEMEST_MEASURE_PEAK_INFERENCE = 0,
    /* what libprofile's trainer allocates (memest_training_memory_mixed()
     * at fp16 and bf16, memest_training_memory() at fp32 and fp64, and at
     * fp32 for int8, which is quantised after an fp32 training) */
    MEMEST_MEASURE_TRAINING,
};

/* "peak_inference", "training"; NULL outside the enum. Static text. */
MEMEST_API const char *memest_measure_name(enum memest_measure measure);

/*
 * The memory in MB (bytes / 1024^2) of `model` at `batch` and `precision`
 * under `measure` (`opt` counts only for MEMEST_MEASURE_TRAINING).
 * MEMEST_E_RANGE for batch 0, MEMEST_E_OVERFLOW when the bytes do not fit
 * in 64 bits, MEMEST_E_INVALID for NULL pointers, a bad precision, measure
 * or optimizer.
 */
MEMEST_API int memest_measure_mb(const memest_model *model, uint64_t batch,
                                 enum memest_precision precision,
                                 enum memest_measure measure,
                                 enum memest_optimizer opt, double *out_mb);

/*
 * The original adjust_batch_size_to_memory(), on peak inference memory
 * (memest_fit_batch_measure() with MEMEST_MEASURE_PEAK_INFERENCE).
 */
MEMEST_API int memest_fit_batch(const memest_model *model,
                                uint64_t requested_batch,
                                double max_memory_mb,
                                enum memest_precision precision,
                                uint64_t batch_limit, uint64_t *out_batch);

/*
 * The original adjust_batch_size_to_memory() on the memory of `measure`
 * (memest_measure_mb()): cap the requested batch to [1, batch_limit] (a
 * limit of 0 caps to 1, as the original does); if the capped batch's
 * memory is <= max_memory_mb, return it; otherwise binary-search the
 * largest batch in [1, capped] that fits; *out_batch = 0 when even batch 1
 * does not fit. A batch whose bytes do not fit in 64 bits does not fit.
 * MEMEST_E_RANGE for a NaN, infinite or negative budget, MEMEST_E_INVALID
 * for NULL pointers, a bad precision, measure or optimizer.
 */
MEMEST_API int memest_fit_batch_measure(const memest_model *model,
                                        uint64_t requested_batch,
                                        double max_memory_mb,
                                        enum memest_precision precision,
                                        uint64_t batch_limit,
                                        enum memest_measure measure,
                                        enum memest_optimizer opt,
                                        uint64_t *out_batch);

/*
 * The largest batch in [1, search_limit] whose memory under `measure`
 * fits max_memory_mb. A search limit is not a size memory allows: when
 * the limit itself fits, `capped` says so (memory is not the constraint
 * there), and a caller must not present `batch` as the largest that fits.
 */
struct memest_batch_search {
    uint64_t batch;        /* the largest fitting batch; 0 when none */
    int capped;            /* 1: batch == search_limit and it fits */
    double memory_mb;      /* the memory at `batch` (at 1 when none fits) */
    double budget_mb;      /* max_memory_mb, as given */
    enum memest_measure measure;
};

/* Fill *out. Errors as memest_fit_batch_measure(); MEMEST_E_RANGE also for
 * a search limit of 0. */
MEMEST_API int memest_largest_batch(const memest_model *model,
                                    double max_memory_mb,
                                    enum memest_precision precision,
                                    uint64_t search_limit,
                                    enum memest_measure measure,
                                    enum memest_optimizer opt,
                                    struct memest_batch_search *out);

/*
 * The original estimate_batch_memory_mb(features, batch,
 * bytes_per_feature=8): features * batch * bytes_per_feature / 1024^2,
 * computed exactly and rounded once. Pass 8 for the original default.
 * MEMEST_E_INVALID for a NULL out.
 */
MEMEST_API int memest_estimate_batch_memory_mb(uint64_t features,
                                               uint64_t batch,
                                               uint64_t bytes_per_feature,
                                               double *out_mb);

/*
 * The halving variant auto_adjust_batch_size(features, batch, max_mb,
 * bytes_per_feature=8): start from `batch`; while it is above 1 and its
 * memory_mb (memest_estimate_batch_memory_mb()) exceeds max_memory_mb,
 * halve it rounding down. The result is the first size in the sequence
 * batch, batch/2, batch/4, ..., 1 that fits, or 1 when none does (the
 * caller compares memory at 1 against the budget to tell). It is not the
 * largest fitting size: 100 with room for 60 gives 50.
 * MEMEST_E_RANGE for batch 0 or a NaN, infinite or negative budget;
 * MEMEST_E_INVALID for a NULL out.
 */
MEMEST_API int memest_auto_adjust_batch_size(uint64_t features,
                                             uint64_t batch,
                                             double max_memory_mb,
                                             uint64_t bytes_per_feature,
                                             uint64_t *out_batch);

/* ---- Hardware simulation and run plans --------------------------------- */

/*
 * The original HardwareSimulationConfig. Defaults (memest_hw_config_init):
 * enabled 0, max_memory_mb 512.0, compute_speed_factor 1.0, precision
 * MEMEST_FP32, batch_size_limit 128; and the memory the plan is fitted
 * by: MEMEST_MEASURE_PEAK_INFERENCE (optimizer MEMEST_OPT_SGD, used by
 * MEMEST_MEASURE_TRAINING only).
 */
struct memest_hw_config {
    int enabled;
    double max_memory_mb;
    double compute_speed_factor; /* 1.0 = host speed, 2.0 = twice slower */
    enum memest_precision precision;
    uint64_t batch_size_limit;
    enum memest_measure measure;
    enum memest_optimizer optimizer;
};

/* Fill `config` with the defaults above. NULL is ignored. */
MEMEST_API void memest_hw_config_init(struct memest_hw_config *config);

#define MEMEST_PLAN_MAX_WARNINGS 3
#define MEMEST_WARNING_TEXT_MAX 256

/*
 * The original prepare_hardware_constrained_run() result. `precision` is
 * the config's (memest_precision_mode_name() gives the original
 * spelling); `estimated_memory_mb` is the memory the plan is fitted by
 * (the config's `measure`, memest_measure_mb()) at the planned batch,
 * rounded to 6 decimals as Python's round(x, 6); `measure` says which.
 * `warnings[0..warning_count-1]` hold, in this order and when they apply
 * (M is memest_measure_name() with '_' read as ' ', "peak inference"):
 *   "Model cannot run under current memory and precision constraints;
 *    even batch_size=1 needs X MB of M memory, over max_memory_mb; the
 *    run proceeds at batch 1." (one line; then no "reduced" warning: the
 *    batch was not reduced to fit)
 *   "Projected M memory (%.4f MB) exceeds limit (%.4f MB)."
 *   "Batch size reduced from R to B due to memory constraints." (also
 *    when batch_size_limit reduced it, as the original says)
 * When the config is disabled, batch_size is the requested one, there are
 * no warnings, and estimated_memory_mb is still the (rounded) memory at
 * that batch for information; the original omitted it.
 */
struct memest_run_plan {
    int enabled;
    uint64_t batch_size;
    enum memest_precision precision;
    double estimated_memory_mb;
    size_t warning_count;
    char warnings[MEMEST_PLAN_MAX_WARNINGS][MEMEST_WARNING_TEXT_MAX];
    enum memest_measure measure;
    int fits;                    /* enabled and the memory at batch_size
                                    (unrounded) <= max_memory_mb */
};

/*
 * Plan a run of `model` at `requested_batch` under `config`.
 * MEMEST_E_RANGE for requested_batch 0, a NaN, infinite or negative
 * max_memory_mb, a NaN, infinite or negative compute_speed_factor, or
 * batch_size_limit 0 (checked even when disabled); MEMEST_E_INVALID for
 * NULL pointers or a bad precision. On error *plan is zeroed.
 */
MEMEST_API int memest_prepare_run(const memest_model *model,
                                  uint64_t requested_batch,
                                  const struct memest_hw_config *config,
                                  struct memest_run_plan *plan);

/*
 * The original apply_compute_slowdown() without the sleep: the extra
 * seconds a host run of elapsed_s takes on hardware `factor` times slower,
 * elapsed_s * (factor - 1) when factor > 1, else 0 (also 0 for a NaN
 * factor and for elapsed_s that is not positive). Sleeping is the
 * caller's choice.
 */
MEMEST_API double memest_compute_slowdown_s(double elapsed_s, double factor);

/*
 * Python's round(x, 6), with which the original reported memory, times,
 * accuracies and losses: the correctly rounded 6-decimal value (halves of
 * the exact binary value go to even), read back as a double. Non-finite
 * values are returned as they are.
 */
MEMEST_API double memest_round6(double x);

#ifdef __cplusplus
}
#endif

#endif /* EDGEFIT_MEMEST_H */
