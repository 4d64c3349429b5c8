/*
 * ONNX import.
 *
 * The file is read with the C code protoc-c generated at build time from
 * ONNX's own schema, then translated into the model description that
 * memest_model_parse_buffer() reads: one line per layer, each naming its
 * inputs (in=) and itself (name=). That keeps a single path that builds
 * models: shape inference, validation and batch norm folding live in the
 * parser. This file's part is to map each node onto a layer, to check what
 * the text cannot say (operator attributes, constant operands, the opset's
 * meaning of an axis), and to hand the initializers to
 * memest_model_set_weights() in PyTorch's names and layouts. Diagnostics of
 * the parser, which speak of lines of the generated text, are mapped back
 * to the ONNX node that made the line.
 */
#include "internal.h"
#include "onnx.pb-c.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Protocol buffers cannot encode a message over 2 GiB. */
#define MAX_FILE_BYTES ((size_t)2 * 1024 * 1024 * 1024 - 1)
#define PB_LIMIT_TEXT "2 GiB, the limit of protocol buffers"
/* Deeper nesting than any ONNX model has (a graph in an attribute of a
 * node of a graph...); refused before protobuf-c recurses into it. */
#define MAX_NESTING 32
/* The largest per-sample tensor, in elements, an imported model may have:
 * the indices of ONNX runtimes are 32-bit, and anything larger is not a
 * model for a small device. Checked before anything is allocated. */
#define MAX_ELEMENTS ((uint64_t)INT32_MAX)

/* The operators read, for messages (which hold 255 bytes: kept short;
 * Div and Mul, read only as PyTorch's GELU, have a message of their
 * own). */
static const char supported_ops[] =
    "Add AveragePool BatchNormalization Clip Concat Constant Conv Dropout "
    "Erf Flatten Gemm GlobalAveragePool Identity LogSoftmax MatMul MaxPool "
    "Relu Reshape Sigmoid Softmax Tanh Transpose";

static const char *str(const char *s)
{
    return s ? s : "";
}

static int str_eq(const char *a, const char *b)
{
    return strcmp(str(a), b) == 0;
}

/* ---- Reading files ------------------------------------------------------ */

static void diag_start(struct memest_diag *diag, const char *source)
{
    if (diag == NULL) {
        return;
    }
    memset(diag, 0, sizeof *diag);
    snprintf(diag->source, sizeof diag->source, "%s", source);
}

/* ---- Protobuf wire checks ----------------------------------------------- */

static int read_varint(const uint8_t *p, size_t len, size_t *pos,
                       uint64_t *out)
{
    uint64_t v = 0;
    for (unsigned shift = 0; shift < 64; shift += 7) {
        uint8_t b;
        if (*pos >= len) {
            return -1;
        }
        b = p[(*pos)++];
        v |= (uint64_t)(b & 0x7f) << shift;
        if ((b & 0x80) == 0) {
            *out = v;
            return 0;
        }
    }
    return -1;
}

/*
 * protobuf-c unpacks nested messages recursively with no depth limit, so a
 * crafted file of nested subgraphs could exhaust the stack. Walk the wire
 * format with the schema's descriptors first, descending only into fields
 * the schema says are messages, and refuse nesting deeper than
 * MAX_NESTING. Malformed bytes are left for the unpacker to reject.
 * Returns 0, or -1 when the nesting is too deep.
 */
static int check_nesting(const uint8_t *p, size_t len,
                         const ProtobufCMessageDescriptor *d, int depth)
{
    size_t pos = 0;

    if (depth > MAX_NESTING) {
        return -1;
    }
    while (pos < len) {
        uint64_t key;
        uint64_t n;
        const ProtobufCFieldDescriptor *f;

        if (read_varint(p, len, &pos, &key) != 0) {
            return 0;
        }
        switch (key & 7) {
        case 0:
            if (read_varint(p, len, &pos, &n) != 0) {
                return 0;
            }
            break;
        case 1:
            if (len - pos < 8) {
                return 0;
            }
            pos += 8;
            break;
        case 5:
            if (len - pos < 4) {
                return 0;
            }
            pos += 4;
            break;
        case 2:
            if (read_varint(p, len, &pos, &n) != 0 || n > len - pos) {
                return 0;
            }
            f = key >> 3 <= UINT32_MAX
                    ? protobuf_c_message_descriptor_get_field(
                          d, (unsigned)(key >> 3))
                    : NULL;
            if (f != NULL && f->type == PROTOBUF_C_TYPE_MESSAGE &&
                check_nesting(p + pos, (size_t)n, f->descriptor,
                              depth + 1) != 0) {
                return -1;
            }
            pos += (size_t)n;
            break;
        default:
            return 0; /* groups or garbage: the unpacker refuses them */
        }
    }
    return 0;
}

/* ---- Tensors ------------------------------------------------------------ */

/* A constant decoded to float32 (integer tensors also keep exact values). */
struct cval {
    unsigned rank;
    uint64_t dim[MEMEST_TENSOR_MAX_RANK];
    uint64_t count;
    const float *f;
    float *owned;   /* f, when decoded here */
    int64_t *ints;  /* exact values of an INT32/INT64 tensor, else NULL */
};

static void cval_free(struct cval *c)
{
    free(c->owned);
    free(c->ints);
    memset(c, 0, sizeof *c);
}

static float half_to_float(uint16_t h)
{
    uint32_t sign = (uint32_t)(h >> 15) << 31;
    uint32_t exp = (h >> 10) & 0x1f;
    uint32_t man = h & 0x3ff;
    uint32_t bits;
    float f;

    if (exp == 0x1f) {
        bits = sign | 0x7f800000u | (man << 13);
    } else if (exp != 0) {
        bits = sign | ((exp + 112) << 23) | (man << 13);
    } else if (man == 0) {
        bits = sign;
    } else {
        /* subnormal half: exact as a float, man * 2^-24 */
        float v = (float)man * 0x1p-24f;
        return sign ? -v : v;
    }
    memcpy(&f, &bits, sizeof f);
    return f;
}

static float bf16_to_float(uint16_t h)
{
    uint32_t bits = (uint32_t)h << 16;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

static uint64_t le_bytes(const uint8_t *p, unsigned n)
{
    uint64_t v = 0;
    for (unsigned i = 0; i < n; i++) {
        v |= (uint64_t)p[i] << (8 * i);
    }
    return v;
}

static const char *dtype_name(int t)
{
    static const char *const names[] = {
        "undefined", "float", "uint8", "int8", "uint16", "int16", "int32",
        "int64", "string", "bool", "float16", "double", "uint32", "uint64",
        "complex64", "complex128", "bfloat16"};
    if (t >= 0 && (size_t)t < sizeof names / sizeof names[0]) {
        return names[t];
    }
    return "unknown";
}

/* Bytes per element in raw_data; 0 for types this reader does not take. */
static unsigned dtype_size(int t)
{
    switch (t) {
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT8:
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT8:
    case ONNX__TENSOR_PROTO__DATA_TYPE__BOOL:
        return 1;
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT16:
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT16:
    case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16:
    case ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16:
        return 2;
    case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT:
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT32:
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT32:
        return 4;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT64:
    case ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE:
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT64:
        return 8;
    default:
        return 0;
    }
}

/* One element from raw little-endian bytes, as a double (exact for every
 * type but 64-bit integers beyond 2^53). */
static double raw_value(int t, const uint8_t *p)
{
    uint64_t u;
    double d;
    float f;

    switch (t) {
    case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT:
        u = le_bytes(p, 4);
        {
            uint32_t b = (uint32_t)u;
            memcpy(&f, &b, sizeof f);
        }
        return f;
    case ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE:
        u = le_bytes(p, 8);
        memcpy(&d, &u, sizeof d);
        return d;
    case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16:
        return half_to_float((uint16_t)le_bytes(p, 2));
    case ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16:
        return bf16_to_float((uint16_t)le_bytes(p, 2));
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT8:
    case ONNX__TENSOR_PROTO__DATA_TYPE__BOOL:
        return p[0];
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT8:
        return (int8_t)p[0];
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT16:
        return (uint16_t)le_bytes(p, 2);
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT16:
        return (int16_t)(uint16_t)le_bytes(p, 2);
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT32:
        return (int32_t)(uint32_t)le_bytes(p, 4);
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT32:
        return (uint32_t)le_bytes(p, 4);
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT64:
        return (double)(int64_t)le_bytes(p, 8);
    default:
        return (double)le_bytes(p, 8);
    }
}

/* One element of the typed fields, as a double. */
static double typed_value(const Onnx__TensorProto *tp, int t, size_t i)
{
    switch (t) {
    case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT:
        return tp->float_data[i];
    case ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE:
        return tp->double_data[i];
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT64:
        return (double)tp->int64_data[i];
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT32:
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT64:
        return (double)tp->uint64_data[i];
    case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16:
        return half_to_float((uint16_t)tp->int32_data[i]);
    case ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16:
        return bf16_to_float((uint16_t)tp->int32_data[i]);
    default: /* the small integer types and bool live in int32_data */
        return tp->int32_data[i];
    }
}

/* How many elements the typed field of type t holds. */
static size_t typed_count(const Onnx__TensorProto *tp, int t)
{
    switch (t) {
    case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT:
        return tp->n_float_data;
    case ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE:
        return tp->n_double_data;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT64:
        return tp->n_int64_data;
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT32:
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT64:
        return tp->n_uint64_data;
    default:
        return tp->n_int32_data;
    }
}

/*
 * Decode a TensorProto into float32 (and exact integers for INT32/INT64).
 * The element count is checked against the bytes the file holds before
 * anything is allocated, so absurd dimensions cannot ask for memory the
 * file does not back. On error, `why` (cap bytes) says why.
 */
static int decode_tensor(const Onnx__TensorProto *tp, struct cval *out,
                         char *why, size_t cap)
{
    int t = tp->has_data_type ? tp->data_type : 0;
    unsigned esize = dtype_size(t);
    uint64_t count = 1;
    size_t n;

    memset(out, 0, sizeof *out);
    if (tp->n_dims > MEMEST_TENSOR_MAX_RANK) {
        snprintf(why, cap, "has rank %zu (at most %d is supported)",
                 tp->n_dims, MEMEST_TENSOR_MAX_RANK);
        return MEMEST_E_RANGE;
    }
    for (size_t i = 0; i < tp->n_dims; i++) {
        if (tp->dims[i] < 0) {
            snprintf(why, cap, "has a negative dimension (%lld)",
                     (long long)tp->dims[i]);
            return MEMEST_E_RANGE;
        }
        out->dim[i] = (uint64_t)tp->dims[i];
        if (mul_ovf(count, out->dim[i], &count)) {
            snprintf(why, cap, "has more elements than 64 bits count");
            return MEMEST_E_OVERFLOW;
        }
    }
    out->rank = (unsigned)tp->n_dims;
    if (tp->has_data_location &&
        tp->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL) {
        snprintf(why, cap, "keeps its data in an external file, which is "
                 "not supported");
        return MEMEST_E_PARSE;
    }
    if (tp->segment != NULL) {
        snprintf(why, cap, "is segmented, which is not supported");
        return MEMEST_E_PARSE;
    }
    if (esize == 0) {
        snprintf(why, cap, "has element type %s (%d), which is not "
                 "supported", dtype_name(t), t);
        return MEMEST_E_PARSE;
    }
    if (tp->has_raw_data) {
        uint64_t need;
        if (mul_ovf(count, esize, &need) || need != tp->raw_data.len) {
            snprintf(why, cap, "holds %zu bytes of data where its shape "
                     "needs %llu elements of %u bytes", tp->raw_data.len,
                     (unsigned long long)count, esize);
            return count > MAX_ELEMENTS ? MEMEST_E_RANGE : MEMEST_E_SHAPE;
        }
    } else if ((uint64_t)typed_count(tp, t) != count) {
        snprintf(why, cap, "holds %zu values where its shape needs %llu",
                 typed_count(tp, t), (unsigned long long)count);
        return count > MAX_ELEMENTS ? MEMEST_E_RANGE : MEMEST_E_SHAPE;
    }
    /* the data is in memory, so count * esize fits in a size_t */
    n = (size_t)count;
    out->count = count;
    out->owned = malloc((n ? n : 1) * sizeof(float));
    if (out->owned == NULL) {
        snprintf(why, cap, "does not fit in memory");
        return MEMEST_E_NOMEM;
    }
    if (t == ONNX__TENSOR_PROTO__DATA_TYPE__INT64 ||
        t == ONNX__TENSOR_PROTO__DATA_TYPE__INT32) {
        out->ints = malloc((n ? n : 1) * sizeof(int64_t));
        if (out->ints == NULL) {
            cval_free(out);
            snprintf(why, cap, "does not fit in memory");
            return MEMEST_E_NOMEM;
        }
    }
    for (size_t i = 0; i < n; i++) {
        if (tp->has_raw_data) {
            const uint8_t *p = tp->raw_data.data + i * esize;
            out->owned[i] = (float)raw_value(t, p);
            if (out->ints != NULL) {
                out->ints[i] = esize == 8 ? (int64_t)le_bytes(p, 8)
                                          : (int32_t)(uint32_t)le_bytes(p, 4);
            }
        } else {
            out->owned[i] = (float)typed_value(tp, t, i);
            if (out->ints != NULL) {
                out->ints[i] = t == ONNX__TENSOR_PROTO__DATA_TYPE__INT64
                                   ? tp->int64_data[i]
                                   : tp->int32_data[i];
            }
        }
    }
    out->f = out->owned;
    return MEMEST_OK;
}

int memest_onnx_available(void)
{
    return 1;
}

int memest_tensor_load_pb(const char *path, struct memest_owned_tensor *out,
                          struct memest_diag *diag)
{
    uint8_t *buf = NULL;
    size_t len = 0;
    Onnx__TensorProto *tp = NULL;
    struct cval c;
    char why[160];
    int st;

    if (out != NULL) {
        memset(out, 0, sizeof *out);
    }
    diag_start(diag, path ? path : "<tensor>");
    if (path == NULL || out == NULL) {
        return diag_fail(diag, MEMEST_E_INVALID,
                         "no tensor path or no place for the result");
    }
    st = read_whole_file(path, "tensor file", MAX_FILE_BYTES, PB_LIMIT_TEXT,
                         (char **)&buf, &len, diag);
    if (st != MEMEST_OK) {
        return st;
    }
    if (check_nesting(buf, len, &onnx__tensor_proto__descriptor, 0) != 0) {
        free(buf);
        return diag_fail(diag, MEMEST_E_PARSE,
                         "not an ONNX TensorProto: messages nested deeper "
                         "than %d levels", MAX_NESTING);
    }
    tp = onnx__tensor_proto__unpack(NULL, len, buf);
    free(buf);
    if (tp == NULL) {
        return diag_fail(diag, MEMEST_E_PARSE,
                         "not an ONNX TensorProto (malformed or truncated "
                         "protocol buffer)");
    }
    st = decode_tensor(tp, &c, why, sizeof why);
    if (st != MEMEST_OK) {
        diag_fail(diag, st, "tensor '%.60s' %s", str(tp->name), why);
        onnx__tensor_proto__free_unpacked(tp, NULL);
        return st;
    }
    out->name = strdup(str(tp->name));
    if (out->name == NULL) {
        cval_free(&c);
        onnx__tensor_proto__free_unpacked(tp, NULL);
        return diag_fail(diag, MEMEST_E_NOMEM, "out of memory");
    }
    out->data = c.owned;
    c.owned = NULL;
    out->t.name = out->name;
    out->t.rank = c.rank;
    memcpy(out->t.dim, c.dim, sizeof c.dim);
    out->t.data = out->data;
    cval_free(&c);
    onnx__tensor_proto__free_unpacked(tp, NULL);
    return MEMEST_OK;
}

/* ---- Names -------------------------------------------------------------- */

/* A map from strings (not copied) to indices, open addressing. */
struct strmap {
    const char **keys;
    size_t *vals;
    size_t cap; /* a power of two, or 0 */
    size_t count;
};

static size_t strmap_slot(const struct strmap *m, const char *key)
{
    size_t mask = m->cap - 1;
    size_t i = (size_t)memest_hash_bytes(key, strlen(key)) & mask;
    while (m->keys[i] != NULL && strcmp(m->keys[i], key) != 0) {
        i = (i + 1) & mask;
    }
    return i;
}

static size_t strmap_get(const struct strmap *m, const char *key)
{
    size_t i;
    if (m->cap == 0) {
        return SIZE_MAX;
    }
    i = strmap_slot(m, key);
    return m->keys[i] ? m->vals[i] : SIZE_MAX;
}

/* Insert or replace. MEMEST_E_NOMEM. */
static int strmap_put(struct strmap *m, const char *key, size_t val)
{
    size_t i;
    if ((m->count + 1) * 2 > m->cap) {
        struct strmap g = {NULL, NULL, m->cap ? m->cap * 2 : 64, 0};
        g.keys = calloc(g.cap, sizeof *g.keys);
        g.vals = calloc(g.cap, sizeof *g.vals);
        if (g.keys == NULL || g.vals == NULL) {
            free(g.keys);
            free(g.vals);
            return MEMEST_E_NOMEM;
        }
        for (size_t k = 0; k < m->cap; k++) {
            if (m->keys[k] != NULL) {
                size_t j = strmap_slot(&g, m->keys[k]);
                g.keys[j] = m->keys[k];
                g.vals[j] = m->vals[k];
                g.count++;
            }
        }
        free(m->keys);
        free(m->vals);
        *m = g;
    }
    i = strmap_slot(m, key);
    if (m->keys[i] == NULL) {
        m->keys[i] = key;
        m->count++;
    }
    m->vals[i] = val;
    return MEMEST_OK;
}

static void strmap_free(struct strmap *m)
{
    free(m->keys);
    free(m->vals);
    memset(m, 0, sizeof *m);
}

/* ---- The importer ------------------------------------------------------- */

enum vkind {
    V_CONST,       /* an initializer, a Constant node's output */
    V_GRAPH_INPUT, /* a graph input (maybe bound by opts->constants) */
    V_ACT,         /* a node's output */
};

struct value {
    const char *name; /* in the unpacked protobuf */
    enum vkind kind;
    size_t producer;  /* node index for V_ACT and Constant outputs */
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
};

struct out_layer {
    size_t node;
    const char *kind;
    char *name;
    char args[160];
    char *in;
    enum memest_act act;
    int takes_act;
};

struct weight {
    char *name;
    size_t layer;
    unsigned rank;
    uint64_t dim[4];
    const float *data;
    float *owned;
};

/* A node is skipped when a fused pattern covers it; `gelu_x` is the value
 * the GELU pattern ending at this node reads (SIZE_MAX otherwise),
 * `bias_add` the Add a MatMul's bias comes from. */
struct node_info {
    int live;
    int skip;
    size_t gelu_x;
    size_t gelu_erf;
    size_t bias_add;
    size_t shape_concat; /* a Reshape's shape [N, K] built from Shape */
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
};

static const char *node_name(const Onnx__NodeProto *n)
{
    return n->name && n->name[0] ? n->name : "(unnamed)";
}

/* "node 'name' (Op): tail" into the diag's message, truncated. */
static void node_message(struct memest_diag *d, const Onnx__NodeProto *n,
                         const char *tail)
{
    int k = snprintf(d->message, sizeof d->message, "node '%.48s' (%.32s): ",
                     node_name(n), str(n->op_type));
    size_t off = k < 0 ? 0 : (size_t)k; /* at most 95: no truncation */
    size_t len = strnlen(tail, sizeof d->message - off - 1);
    memcpy(d->message + off, tail, len);
    d->message[off + len] = '\0';
}

#if defined(__GNUC__)
__attribute__((format(printf, 4, 5)))
#endif
static int node_fail(struct imp *I, size_t node, int status,
                     const char *fmt, ...)
{
    const Onnx__NodeProto *n = I->g->node[node];
    char tail[256];
    va_list ap;

    if (I->diag == NULL) {
        return status;
    }
    va_start(ap, fmt);
    vsnprintf(tail, sizeof tail, fmt, ap);
    va_end(ap);
    I->diag->line = node < INT32_MAX ? (int)node + 1 : INT32_MAX;
    I->diag->column = 0;
    node_message(I->diag, n, tail);
    return status;
}

static int nomem(struct imp *I)
{
    return diag_fail(I->diag, MEMEST_E_NOMEM, "out of memory");
}

/* A name the text format can carry: printable ASCII but for ',', '='
 * and '#' (each becomes '_'), at most 64 bytes, unique among the names
 * used so far; "input" is a layer name only for an input (`is_input`).
 * ONNX's names ("input.1", "onnx::Conv_0", "/conv1/Conv") pass
 * unchanged. */
static int unique_name(struct imp *I, const char *want, const char *fallback,
                       int is_input, char **out)
{
    char base[72];
    char cand[96];
    size_t n = 0;

    for (const char *s = want; s && *s && n < 64; s++) {
        unsigned char ch = (unsigned char)*s;
        int ok = ch > ' ' && ch < 0x7f && ch != ',' && ch != '=' &&
                 ch != '#';
        base[n++] = ok ? (char)ch : '_';
    }
    base[n] = '\0';
    if (n == 0) {
        snprintf(base, sizeof base, "%.60s", fallback);
    }
    snprintf(cand, sizeof cand, "%s", base);
    for (unsigned k = 2; (!is_input && strcmp(cand, "input") == 0) ||
                         strmap_get(&I->names, cand) != SIZE_MAX;
         k++) {
        snprintf(cand, sizeof cand, "%s_%u", base, k);
    }
    *out = strdup(cand);
    if (*out == NULL) {
        return nomem(I);
    }
    if (strmap_put(&I->names, *out, 0) != MEMEST_OK) {
        free(*out);
        *out = NULL;
        return nomem(I);
    }
    return MEMEST_OK;
}

/* ---- Attributes --------------------------------------------------------- */

static const Onnx__AttributeProto *attr(const Onnx__NodeProto *n,
                                        const char *name)
{
    for (size_t i = 0; i < n->n_attribute; i++) {
        if (str_eq(n->attribute[i]->name, name)) {
            return n->attribute[i];
        }
    }
    return NULL;
}

/* Refuse attributes outside `allowed` (space-separated). */
static int check_attrs(struct imp *I, size_t node, const char *allowed)
{
    const Onnx__NodeProto *n = I->g->node[node];
    for (size_t i = 0; i < n->n_attribute; i++) {
        const char *a = str(n->attribute[i]->name);
        size_t len = strlen(a);
        int found = 0;
        /* compare with each space-separated word of the list */
        for (const char *w = allowed; !found && *w != '\0';) {
            size_t wl = strcspn(w, " ");
            found = len > 0 && wl == len && memcmp(w, a, len) == 0;
            w += wl;
            while (*w == ' ') {
                w++;
            }
        }
        if (!found) {
            return node_fail(I, node, MEMEST_E_PARSE,
                             "attribute '%.40s' is not supported (this "
                             "importer reads %s%s)", a,
                             allowed[0] ? "only: " : "none here",
                             allowed);
        }
    }
    return MEMEST_OK;
}

static int attr_int(struct imp *I, size_t node, const char *name,
                    int64_t def, int64_t *out)
{
    const Onnx__AttributeProto *a = attr(I->g->node[node], name);
    *out = def;
    if (a == NULL) {
        return MEMEST_OK;
    }
    if (a->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT) {
        return node_fail(I, node, MEMEST_E_PARSE,
                         "attribute '%s' is not an integer", name);
    }
    *out = a->i;
    return MEMEST_OK;
}

static int attr_float(struct imp *I, size_t node, const char *name,
                      double def, double *out)
{
    const Onnx__AttributeProto *a = attr(I->g->node[node], name);
    *out = def;
    if (a == NULL) {
        return MEMEST_OK;
    }
    if (a->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT) {
        return node_fail(I, node, MEMEST_E_PARSE,
                         "attribute '%s' is not a float", name);
    }
    *out = a->f;
    return MEMEST_OK;
}

/* A list of `want` integers (0: any length up to 4) into out; *n its
 * length, 0 when absent. */
static int attr_ints(struct imp *I, size_t node, const char *name,
                     size_t want, int64_t *out, size_t *n)
{
    const Onnx__AttributeProto *a = attr(I->g->node[node], name);
    *n = 0;
    if (a == NULL) {
        return MEMEST_OK;
    }
    if (a->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS ||
        (want != 0 && a->n_ints != want) || a->n_ints > 4) {
        return node_fail(I, node, MEMEST_E_PARSE,
                         "attribute '%s' must be a list of %zu integers",
                         name, want ? want : (size_t)4);
    }
    for (size_t i = 0; i < a->n_ints; i++) {
        out[i] = a->ints[i];
    }
    *n = a->n_ints;
    return MEMEST_OK;
}

/* The string attribute, or def; never NULL. */
static const char *attr_str(const Onnx__NodeProto *n, const char *name,
                            const char *def, char *buf, size_t cap)
{
    const Onnx__AttributeProto *a = attr(n, name);
    size_t len;
    if (a == NULL || !a->has_s) {
        return def;
    }
    len = a->s.len < cap - 1 ? a->s.len : cap - 1;
    memcpy(buf, a->s.data, len);
    buf[len] = '\0';
    return buf;
}

/* ---- Values ------------------------------------------------------------- */

static const char *in_name(const Onnx__NodeProto *n, size_t slot)
{
    return slot < n->n_input ? str(n->input[slot]) : "";
}

static size_t value_of(struct imp *I, const char *name)
{
    return name[0] ? strmap_get(&I->vmap, name) : SIZE_MAX;
}

static int is_constant(const struct value *v)
{
    return v->kind == V_CONST ||
           (v->kind == V_GRAPH_INPUT && v->user != NULL);
}

/* Decode the Constant node attribute that holds the value. */
static int constant_node_value(struct imp *I, size_t node, struct cval *c)
{
    const Onnx__NodeProto *n = I->g->node[node];
    const Onnx__AttributeProto *a;
    char why[160];
    int st;

    memset(c, 0, sizeof *c);
    if (n->n_attribute != 1) {
        return node_fail(I, node, MEMEST_E_PARSE,
                         "a Constant needs exactly one value attribute");
    }
    a = n->attribute[0];
    if (str_eq(a->name, "value") && a->t != NULL) {
        st = decode_tensor(a->t, c, why, sizeof why);
        if (st != MEMEST_OK) {
            return node_fail(I, node, st, "its value %s", why);
        }
        return MEMEST_OK;
    }
    if (str_eq(a->name, "value_float") || str_eq(a->name, "value_int")) {
        c->owned = malloc(sizeof(float));
        if (c->owned == NULL) {
            return nomem(I);
        }
        c->count = 1;
        c->owned[0] = str_eq(a->name, "value_float") ? a->f : (float)a->i;
        if (str_eq(a->name, "value_int")) {
            c->ints = malloc(sizeof(int64_t));
            if (c->ints == NULL) {
                cval_free(c);
                return nomem(I);
            }
            c->ints[0] = a->i;
        }
        c->f = c->owned;
        return MEMEST_OK;
    }
    if (str_eq(a->name, "value_floats") || str_eq(a->name, "value_ints")) {
        int ints = str_eq(a->name, "value_ints");
        size_t cnt = ints ? a->n_ints : a->n_floats;
        c->owned = malloc((cnt ? cnt : 1) * sizeof(float));
        c->ints = ints ? malloc((cnt ? cnt : 1) * sizeof(int64_t)) : NULL;
        if (c->owned == NULL || (ints && c->ints == NULL)) {
            cval_free(c);
            return nomem(I);
        }
        for (size_t i = 0; i < cnt; i++) {
            c->owned[i] = ints ? (float)a->ints[i] : a->floats[i];
            if (ints) {
                c->ints[i] = a->ints[i];
            }
        }
        c->rank = 1;
        c->dim[0] = cnt;
        c->count = cnt;
        c->f = c->owned;
        return MEMEST_OK;
    }
    return node_fail(I, node, MEMEST_E_PARSE,
                     "a Constant given by '%.40s' is not supported (value, "
                     "value_float(s) and value_int(s) are)", str(a->name));
}

static int get_const(struct imp *I, size_t node, size_t slot,
                     const char *role, const struct cval **out);

/* A Transpose of a constant (PyTorch's older exports transpose a Linear's
 * weight in the graph): folded here into a new constant. */
static int transpose_value(struct imp *I, size_t node, struct cval *c)
{
    const Onnx__AttributeProto *a = NULL;
    const struct cval *x;
    uint64_t stride[MEMEST_TENSOR_MAX_RANK];
    size_t perm[MEMEST_TENSOR_MAX_RANK];
    int st;

    memset(c, 0, sizeof *c);
    if ((st = get_const(I, node, 0, "input", &x))) {
        return st;
    }
    for (size_t i = 0; i < I->g->node[node]->n_attribute; i++) {
        if (str_eq(I->g->node[node]->attribute[i]->name, "perm")) {
            a = I->g->node[node]->attribute[i];
        } else {
            return node_fail(I, node, MEMEST_E_PARSE,
                             "attribute '%.40s' is not supported",
                             str(I->g->node[node]->attribute[i]->name));
        }
    }
    for (unsigned d = 0; d < x->rank; d++) {
        perm[d] = x->rank - 1 - d; /* the default reverses the axes */
    }
    if (a != NULL) {
        unsigned seen = 0;
        if (a->n_ints != x->rank) {
            return node_fail(I, node, MEMEST_E_SHAPE,
                             "perm has %zu axes for a rank %u tensor",
                             a->n_ints, x->rank);
        }
        for (unsigned d = 0; d < x->rank; d++) {
            if (a->ints[d] < 0 || a->ints[d] >= (int64_t)x->rank ||
                (seen & (1u << a->ints[d]))) {
                return node_fail(I, node, MEMEST_E_PARSE,
                                 "perm is not a permutation of the axes");
            }
            seen |= 1u << a->ints[d];
            perm[d] = (size_t)a->ints[d];
        }
    }
    c->owned = malloc((x->count ? (size_t)x->count : 1) * sizeof(float));
    if (c->owned == NULL) {
        return nomem(I);
    }
    c->rank = x->rank;
    c->count = x->count;
    for (unsigned d = x->rank; d-- > 0;) {
        stride[d] = d + 1 == x->rank ? 1 : stride[d + 1] * x->dim[d + 1];
    }
    for (unsigned d = 0; d < x->rank; d++) {
        c->dim[d] = x->dim[perm[d]];
    }
    for (uint64_t i = 0; i < x->count; i++) {
        /* i indexes the output; walk its coordinates back to the input */
        uint64_t rest = i;
        uint64_t src = 0;
        for (unsigned d = x->rank; d-- > 0;) {
            uint64_t coord = rest % c->dim[d];
            rest /= c->dim[d];
            src += coord * stride[perm[d]];
        }
        c->owned[i] = x->f[src];
    }
    c->f = c->owned;
    return MEMEST_OK;
}

/* An Identity of a constant (PyTorch exports one per initializer that
 * two names share): the same values. */
static int identity_value(struct imp *I, size_t node, struct cval *c)
{
    const struct cval *x;
    int st = get_const(I, node, 0, "input", &x);

    memset(c, 0, sizeof *c);
    if (st != MEMEST_OK) {
        return st;
    }
    *c = *x;
    c->owned = NULL; /* the data stays the source's */
    c->ints = NULL;
    if (x->ints != NULL) {
        c->ints = malloc((x->count ? (size_t)x->count : 1) * sizeof *c->ints);
        if (c->ints == NULL) {
            return nomem(I);
        }
        memcpy(c->ints, x->ints, (size_t)x->count * sizeof *c->ints);
    }
    return MEMEST_OK;
}

/* The value of a node that makes a constant: Constant, or a Transpose or
 * Identity of a constant, folded. */
static int node_const_value(struct imp *I, size_t node, struct cval *c)
{
    if (str_eq(I->g->node[node]->op_type, "Transpose")) {
        return transpose_value(I, node, c);
    }
    if (str_eq(I->g->node[node]->op_type, "Identity")) {
        return identity_value(I, node, c);
    }
    return constant_node_value(I, node, c);
}

/*
 * The constant operand in `slot` of `node`: an initializer, a Constant
 * node's output or a graph input bound by opts->constants. A missing
 * operand, a graph input with no value and a computed tensor are errors
 * that name the operand.
 */
static int get_const(struct imp *I, size_t node, size_t slot,
                     const char *role, const struct cval **out)
{
    const char *nm = in_name(I->g->node[node], slot);
    size_t vi = value_of(I, nm);
    struct value *v;

    *out = NULL;
    if (nm[0] == '\0') {
        return node_fail(I, node, MEMEST_E_PARSE, "the %s is missing", role);
    }
    if (vi == SIZE_MAX) {
        return node_fail(I, node, MEMEST_E_PARSE,
                         "missing initializer '%.60s' (the %s)", nm, role);
    }
    v = &I->v[vi];
    if (v->kind == V_GRAPH_INPUT && v->user == NULL) {
        return node_fail(I, node, MEMEST_E_PARSE,
                         "the %s '%.60s' is a graph input with no value; "
                         "it must be an initializer", role, nm);
    }
    if (v->kind == V_ACT) {
        return node_fail(I, node, MEMEST_E_PARSE,
                         "the %s '%.60s' is computed by the graph; only a "
                         "constant is supported there", role, nm);
    }
    if (!v->decoded) {
        char why[160];
        int st;
        if (v->user != NULL) {
            const struct memest_tensor *t = v->user;
            memset(&v->c, 0, sizeof v->c);
            if (t->rank > MEMEST_TENSOR_MAX_RANK) {
                return node_fail(I, node, MEMEST_E_INVALID,
                                 "the constant '%.60s' given for the %s "
                                 "has rank %u", nm, role, t->rank);
            }
            v->c.rank = t->rank;
            v->c.count = 1;
            for (unsigned d = 0; d < t->rank; d++) {
                v->c.dim[d] = t->dim[d];
                if (mul_ovf(v->c.count, t->dim[d], &v->c.count)) {
                    return node_fail(I, node, MEMEST_E_OVERFLOW,
                                     "the constant '%.60s' is too large",
                                     nm);
                }
            }
            if (t->data == NULL && v->c.count > 0) {
                return node_fail(I, node, MEMEST_E_INVALID,
                                 "the constant '%.60s' given for the %s "
                                 "has no data", nm, role);
            }
            v->c.f = t->data;
        } else if (v->tp != NULL) {
            st = decode_tensor(v->tp, &v->c, why, sizeof why);
            if (st != MEMEST_OK) {
                return node_fail(I, node, st, "the %s '%.60s' %s", role, nm,
                                 why);
            }
        } else {
            st = node_const_value(I, v->producer, &v->c);
            if (st != MEMEST_OK) {
                return st;
            }
        }
        v->decoded = 1;
    }
    *out = &v->c;
    return MEMEST_OK;
}

/* A scalar constant (one element, any rank), or an error. */
static int get_scalar(struct imp *I, size_t node, size_t slot,
                      const char *role, double *out)
{
    const struct cval *c;
    int st = get_const(I, node, slot, role, &c);
    if (st != MEMEST_OK) {
        return st;
    }
    if (c->count != 1) {
        return node_fail(I, node, MEMEST_E_SHAPE,
                         "the %s must be a single value, it has %llu", role,
                         (unsigned long long)c->count);
    }
    *out = c->f[0];
    return MEMEST_OK;
}

/* The value in `slot` as a scalar constant if it is one (no errors):
 * 1 and *out set, else 0. For pattern matching. */
static int peek_scalar(struct imp *I, const Onnx__NodeProto *n, size_t slot,
                       double *out)
{
    size_t vi = value_of(I, in_name(n, slot));
    struct value *v;
    char why[160];

    if (vi == SIZE_MAX || !is_constant(&I->v[vi])) {
        return 0;
    }
    v = &I->v[vi];
    if (!v->decoded) {
        if (v->user != NULL) {
            if (v->user->data == NULL ||
                v->user->rank > MEMEST_TENSOR_MAX_RANK) {
                return 0;
            }
            uint64_t cnt = 1;
            for (unsigned d = 0; d < v->user->rank; d++) {
                if (mul_ovf(cnt, v->user->dim[d], &cnt)) {
                    return 0;
                }
            }
            if (cnt != 1) {
                return 0;
            }
            *out = v->user->data[0];
            return 1;
        }
        if (v->tp == NULL) {
            struct cval c;
            struct memest_diag *keep = I->diag;
            int st;
            I->diag = NULL;
            st = node_const_value(I, v->producer, &c);
            I->diag = keep;
            if (st != MEMEST_OK) {
                return 0;
            }
            v->c = c;
        } else if (decode_tensor(v->tp, &v->c, why, sizeof why) !=
                   MEMEST_OK) {
            return 0;
        }
        v->decoded = 1;
    }
    if (v->c.count != 1) {
        return 0;
    }
    *out = v->c.f[0];
    return 1;
}

static uint64_t per_sample(const struct value *v)
{
    uint64_t n = 1;
    for (unsigned d = 1; d < v->rank; d++) {
        n *= v->dim[d]; /* bounded by MAX_ELEMENTS when the shape was set */
    }
    return n;
}

/* Give a graph input its shape and make it a model input. */
static int make_model_input(struct imp *I, size_t node, size_t vi)
{
    struct value *v = &I->v[vi];
    const Onnx__TypeProto *ty = v->vi ? v->vi->type : NULL;
    const Onnx__TensorShapeProto *sh;
    uint64_t elems = 1;
    int et;
    char **grown_text;
    size_t *grown_vals;
    int st;

    if (ty == NULL ||
        ty->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE ||
        ty->tensor_type == NULL || ty->tensor_type->shape == NULL) {
        return node_fail(I, node, MEMEST_E_PARSE,
                         "the graph input '%.60s' has no tensor shape",
                         v->name);
    }
    et = ty->tensor_type->has_elem_type ? ty->tensor_type->elem_type : 0;
    if (et != ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT &&
        et != ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE &&
        et != ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16 &&
        et != ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16) {
        return node_fail(I, node, MEMEST_E_PARSE,
                         "the graph input '%.60s' holds %s; only floating "
                         "point inputs are supported", v->name,
                         dtype_name(et));
    }
    sh = ty->tensor_type->shape;
    if (sh->n_dim < 2 || sh->n_dim > 4) {
        return node_fail(I, node, MEMEST_E_PARSE,
                         "the graph input '%.60s' has rank %zu; supported "
                         "are a batch of vectors (2), of matrices (3) or of "
                         "CxHxW images (4)", v->name, sh->n_dim);
    }
    v->rank = (unsigned)sh->n_dim;
    for (unsigned d = 0; d < v->rank; d++) {
        const Onnx__TensorShapeProto__Dimension *dm = sh->dim[d];
        int has = dm->value_case ==
                  ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
        if (d == 0) {
            /* a named or zero batch is free; a number fixes it */
            uint64_t b = has && dm->dim_value > 0 ? (uint64_t)dm->dim_value
                                                  : 0;
            if (has && dm->dim_value < 0) {
                return node_fail(I, node, MEMEST_E_RANGE,
                                 "the graph input '%.60s' has a negative "
                                 "batch dimension", v->name);
            }
            if (I->batch_seen && b != I->fixed_batch) {
                return node_fail(I, node, MEMEST_E_SHAPE,
                                 "the graph input '%.60s' has batch %llu "
                                 "where an earlier input has %llu", v->name,
                                 (unsigned long long)b,
                                 (unsigned long long)I->fixed_batch);
            }
            I->fixed_batch = b;
            I->batch_seen = 1;
            v->dim[0] = b;
            continue;
        }
        if (!has) {
            return node_fail(I, node, MEMEST_E_PARSE,
                             "dimension %u of the graph input '%.60s' is "
                             "symbolic; only the batch may be", d, v->name);
        }
        if (dm->dim_value <= 0 || (uint64_t)dm->dim_value > MAX_ELEMENTS ||
            mul_ovf(elems, (uint64_t)dm->dim_value, &elems) ||
            elems > MAX_ELEMENTS) {
            return node_fail(I, node, MEMEST_E_RANGE,
                             "the graph input '%.60s' has dimension %u = "
                             "%lld; a sample may have 1 to %llu elements",
                             v->name, d, (long long)dm->dim_value,
                             (unsigned long long)MAX_ELEMENTS);
        }
        v->dim[d] = (uint64_t)dm->dim_value;
    }
    v->shaped = 1;
    v->layer = SIZE_MAX;
    st = unique_name(I, v->name, "x", 1, (char **)&v->ref);
    if (st != MEMEST_OK) {
        return st;
    }
    grown_text = realloc(I->inputs_text,
                         (I->ninputs + 1) * sizeof *I->inputs_text);
    if (grown_text == NULL) {
        return nomem(I);
    }
    I->inputs_text = grown_text;
    grown_vals = realloc(I->input_values,
                         (I->ninputs + 1) * sizeof *I->input_values);
    if (grown_vals == NULL) {
        return nomem(I);
    }
    I->input_values = grown_vals;
    I->inputs_text[I->ninputs] = (char *)v->ref;
    I->input_values[I->ninputs] = vi;
    I->ninputs++;
    v->model_input = (int)I->ninputs;
    return MEMEST_OK;
}

/* The activation in `slot`: a node's output or a graph input, which
 * becomes a model input. */
static int get_act(struct imp *I, size_t node, size_t slot, size_t *out)
{
    const char *nm = in_name(I->g->node[node], slot);
    size_t vi = value_of(I, nm);
    struct value *v;

    if (nm[0] == '\0') {
        return node_fail(I, node, MEMEST_E_PARSE, "input %zu is missing",
                         slot);
    }
    if (vi == SIZE_MAX) {
        return node_fail(I, node, MEMEST_E_PARSE,
                         "input '%.60s' is neither a graph input, an "
                         "initializer nor an earlier node's output", nm);
    }
    v = &I->v[vi];
    if (v->kind == V_CONST) {
        return node_fail(I, node, MEMEST_E_PARSE,
                         "input '%.60s' is a constant where this importer "
                         "supports only a computed tensor", nm);
    }
    if (v->kind == V_GRAPH_INPUT && !v->shaped) {
        int st = make_model_input(I, node, vi);
        if (st != MEMEST_OK) {
            return st;
        }
    }
    if (!v->shaped) {
        return node_fail(I, node, MEMEST_E_PARSE,
                         "input '%.60s' is read before the node that makes "
                         "it (the nodes are not in topological order)", nm);
    }
    *out = vi;
    return MEMEST_OK;
}

/* ---- Emitting layers ---------------------------------------------------- */

static int push_layer(struct imp *I, size_t node, const char *kind,
                      const char *want_name, const char *fallback,
                      size_t *out)
{
    struct out_layer *L;
    int st;

    if (I->nl == I->capl) {
        size_t cap = I->capl ? I->capl * 2 : 16;
        struct out_layer *g = realloc(I->L, cap * sizeof *g);
        if (g == NULL) {
            return nomem(I);
        }
        I->L = g;
        I->capl = cap;
    }
    L = &I->L[I->nl];
    memset(L, 0, sizeof *L);
    L->node = node;
    L->kind = kind;
    st = unique_name(I, want_name, fallback, 0, &L->name);
    if (st != MEMEST_OK) {
        return st;
    }
    *out = I->nl++;
    return MEMEST_OK;
}

/* Set layer l's inputs to the given values. */
static int layer_inputs(struct imp *I, size_t l, const size_t *vals,
                        size_t n)
{
    size_t len = 1;
    char *s;
    for (size_t i = 0; i < n; i++) {
        len += strlen(I->v[vals[i]].ref) + 1;
    }
    s = malloc(len);
    if (s == NULL) {
        return nomem(I);
    }
    s[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        if (i > 0) {
            strcat(s, ",");
        }
        strcat(s, I->v[vals[i]].ref);
    }
    I->L[l].in = s;
    return MEMEST_OK;
}

/* Output `slot` of `node` is made by layer l with this ONNX shape. */
static int set_output(struct imp *I, size_t node, size_t slot, size_t l,
                      unsigned rank, const uint64_t *dim)
{
    const Onnx__NodeProto *n = I->g->node[node];
    size_t vi = slot < n->n_output ? value_of(I, str(n->output[slot]))
                                   : SIZE_MAX;
    struct value *v;
    uint64_t elems = 1;

    if (vi == SIZE_MAX) {
        return node_fail(I, node, MEMEST_E_PARSE, "the node has no output");
    }
    for (unsigned d = 1; d < rank; d++) {
        if (dim[d] == 0 || mul_ovf(elems, dim[d], &elems) ||
            elems > MAX_ELEMENTS) {
            return node_fail(I, node, MEMEST_E_RANGE,
                             "its output would have %s elements per sample "
                             "(1 to %llu are supported)",
                             dim[d] == 0 ? "0" : "too many",
                             (unsigned long long)MAX_ELEMENTS);
        }
    }
    v = &I->v[vi];
    v->shaped = 1;
    v->rank = rank;
    memcpy(v->dim, dim, sizeof v->dim);
    v->layer = l;
    v->ref = I->L[l].name;
    return MEMEST_OK;
}

static int push_weight(struct imp *I, size_t l, const char *suffix,
                       unsigned rank, const uint64_t *dim,
                       const float *data, float *owned)
{
    struct weight *w;
    size_t len = strlen(I->L[l].name) + strlen(suffix) + 2;

    if (I->nw == I->capw) {
        size_t cap = I->capw ? I->capw * 2 : 16;
        struct weight *g = realloc(I->W, cap * sizeof *g);
        if (g == NULL) {
            free(owned);
            return nomem(I);
        }
        I->W = g;
        I->capw = cap;
    }
    w = &I->W[I->nw];
    memset(w, 0, sizeof *w);
    w->name = malloc(len);
    if (w->name == NULL) {
        free(owned);
        return nomem(I);
    }
    snprintf(w->name, len, "%s.%s", I->L[l].name, suffix);
    w->layer = l;
    w->rank = rank;
    for (unsigned d = 0; d < rank; d++) {
        w->dim[d] = dim[d];
    }
    w->data = data;
    w->owned = owned;
    I->nw++;
    return MEMEST_OK;
}

/* Fuse activation `act` into the layer making value x when that layer
 * takes one, has none yet (or a relu that act makes redundant), and x
 * has no other reader. 1 when fused. */
static int try_fuse(struct imp *I, size_t x, enum memest_act act)
{
    struct value *v = &I->v[x];
    struct out_layer *L;
    if (v->layer == SIZE_MAX || v->readers != 1 || x == I->output_value) {
        return 0;
    }
    L = &I->L[v->layer];
    if (!L->takes_act) {
        return 0;
    }
    /* relu then relu or relu6 is the second alone (PyTorch exports
     * F.relu6 as Relu followed by Clip(0, 6)) */
    if (L->act == MEMEST_ACT_RELU &&
        (act == MEMEST_ACT_RELU || act == MEMEST_ACT_RELU6)) {
        L->act = act;
        return 1;
    }
    if (L->act != MEMEST_ACT_NONE) {
        return 0;
    }
    L->act = act;
    return 1;
}

/* An activation node: fused into its producer, or a layer of its own. */
static int emit_act(struct imp *I, size_t node, size_t x,
                    enum memest_act act, const char *want_name)
{
    static const char *const kinds[MEMEST_ACT_COUNT] = {
        NULL, "relu", "gelu", "sigmoid", "tanh", "softmax", "relu6",
        "logsoftmax", "erf"};
    const struct value *v = &I->v[x];
    size_t l = 0;
    int st;

    if (try_fuse(I, x, act)) {
        return set_output(I, node, 0, v->layer, v->rank, v->dim);
    }
    st = push_layer(I, node, kinds[act], want_name, kinds[act], &l);
    if (st == MEMEST_OK) {
        st = layer_inputs(I, l, &x, 1);
    }
    if (st == MEMEST_OK) {
        st = set_output(I, node, 0, l, v->rank, v->dim);
    }
    return st;
}

/* ---- Windows (Conv and pooling) ----------------------------------------- */

struct window {
    uint64_t kh, kw, sh, sw;
    uint64_t pt, pl, pb, pr;
    uint64_t oh, ow;
};

static int out_size(uint64_t in, uint64_t p0, uint64_t p1, uint64_t k,
                    uint64_t s, int ceil_mode, uint64_t *out)
{
    uint64_t span;
    if (add_ovf(in, p0, &span) || add_ovf(span, p1, &span) || span < k) {
        return -1;
    }
    *out = (span - k) / s + 1;
    if (ceil_mode && (span - k) % s != 0) {
        (*out)++;
    }
    return 0;
}

/* Read kernel_shape (or the given kernel), strides, pads, auto_pad,
 * dilations (1 only) and ceil_mode (only where it changes nothing). */
static int read_window(struct imp *I, size_t node, const struct value *x,
                       const uint64_t *kernel, struct window *w)
{
    const Onnx__NodeProto *n = I->g->node[node];
    int64_t ks[4], st[4], pads[4], dil[4];
    size_t nks, nst, npads, ndil;
    int64_t ceil_mode = 0;
    char apbuf[32];
    const char *ap = attr_str(n, "auto_pad", "NOTSET", apbuf, sizeof apbuf);
    uint64_t ih = x->dim[2], iw = x->dim[3];
    uint64_t fh, fw;
    int s;

    if ((s = attr_ints(I, node, "kernel_shape", 2, ks, &nks)) ||
        (s = attr_ints(I, node, "strides", 2, st, &nst)) ||
        (s = attr_ints(I, node, "pads", 4, pads, &npads)) ||
        (s = attr_ints(I, node, "dilations", 2, dil, &ndil))) {
        return s;
    }
    if (attr(n, "ceil_mode") != NULL &&
        (s = attr_int(I, node, "ceil_mode", 0, &ceil_mode))) {
        return s;
    }
    if (ndil == 2 && (dil[0] != 1 || dil[1] != 1)) {
        return node_fail(I, node, MEMEST_E_PARSE,
                         "dilations %lldx%lld are not supported (only 1)",
                         (long long)dil[0], (long long)dil[1]);
    }
    if (kernel != NULL) {
        if (nks == 2 && ((uint64_t)ks[0] != kernel[0] ||
                         (uint64_t)ks[1] != kernel[1])) {
            return node_fail(I, node, MEMEST_E_SHAPE,
                             "kernel_shape %lldx%lld disagrees with the "
                             "weights' %llux%llu", (long long)ks[0],
                             (long long)ks[1], (unsigned long long)kernel[0],
                             (unsigned long long)kernel[1]);
        }
        w->kh = kernel[0];
        w->kw = kernel[1];
    } else {
        if (nks != 2) {
            return node_fail(I, node, MEMEST_E_PARSE,
                             "kernel_shape (2 values) is required");
        }
        if (ks[0] <= 0 || ks[1] <= 0) {
            return node_fail(I, node, MEMEST_E_RANGE,
                             "kernel_shape must be positive");
        }
        w->kh = (uint64_t)ks[0];
        w->kw = (uint64_t)ks[1];
    }
    w->sh = w->sw = 1;
    if (nst == 2) {
        if (st[0] <= 0 || st[1] <= 0) {
            return node_fail(I, node, MEMEST_E_RANGE,
                             "strides must be positive");
        }
        w->sh = (uint64_t)st[0];
        w->sw = (uint64_t)st[1];
    }
    w->pt = w->pl = w->pb = w->pr = 0;
    if (strcmp(ap, "NOTSET") == 0) {
        if (npads == 4) {
            for (int i = 0; i < 4; i++) {
                if (pads[i] < 0 || (uint64_t)pads[i] > MAX_ELEMENTS) {
                    return node_fail(I, node, MEMEST_E_RANGE,
                                     "pads must be 0 to %llu",
                                     (unsigned long long)MAX_ELEMENTS);
                }
            }
            /* ONNX orders pads as begins then ends: top, left, bottom,
             * right, which is the text format's p=t,l,b,r */
            w->pt = (uint64_t)pads[0];
            w->pl = (uint64_t)pads[1];
            w->pb = (uint64_t)pads[2];
            w->pr = (uint64_t)pads[3];
        }
    } else if (strcmp(ap, "SAME_UPPER") == 0 ||
               strcmp(ap, "SAME_LOWER") == 0) {
        /* output ceil(in / stride); the padding that needs, split with the
         * odd cell at the end (UPPER) or at the start (LOWER) */
        uint64_t oh = (ih + w->sh - 1) / w->sh;
        uint64_t ow = (iw + w->sw - 1) / w->sw;
        uint64_t need_h = (oh - 1) * w->sh + w->kh;
        uint64_t need_w = (ow - 1) * w->sw + w->kw;
        uint64_t th = need_h > ih ? need_h - ih : 0;
        uint64_t tw = need_w > iw ? need_w - iw : 0;
        int lower = strcmp(ap, "SAME_LOWER") == 0;
        w->pt = lower ? th - th / 2 : th / 2;
        w->pb = th - w->pt;
        w->pl = lower ? tw - tw / 2 : tw / 2;
        w->pr = tw - w->pl;
    } else if (strcmp(ap, "VALID") != 0) {
        return node_fail(I, node, MEMEST_E_PARSE,
                         "auto_pad '%s' is not one of NOTSET, SAME_UPPER, "
                         "SAME_LOWER, VALID", ap);
    }
    if (out_size(ih, w->pt, w->pb, w->kh, w->sh, 0, &w->oh) != 0 ||
        out_size(iw, w->pl, w->pr, w->kw, w->sw, 0, &w->ow) != 0) {
        return node_fail(I, node, MEMEST_E_SHAPE,
                         "the %llux%llu window does not fit the padded "
                         "%llux%llu input", (unsigned long long)w->kh,
                         (unsigned long long)w->kw, (unsigned long long)ih,
                         (unsigned long long)iw);
    }
    if (ceil_mode) {
        /* rounding the output size up is supported only when it gives
         * the same size as rounding down */
        out_size(ih, w->pt, w->pb, w->kh, w->sh, 1, &fh);
        out_size(iw, w->pl, w->pr, w->kw, w->sw, 1, &fw);
        if (fh != w->oh || fw != w->ow) {
            return node_fail(I, node, MEMEST_E_PARSE,
                             "ceil_mode=1 changes the output size here "
                             "(%llux%llu instead of %llux%llu), which is "
                             "not supported", (unsigned long long)fh,
                             (unsigned long long)fw,
                             (unsigned long long)w->oh,
                             (unsigned long long)w->ow);
        }
    }
    return MEMEST_OK;
}

static void window_args(const struct window *w, char *buf, size_t cap)
{
    snprintf(buf, cap, "k=%llux%llu s=%llux%llu p=%llu,%llu,%llu,%llu",
             (unsigned long long)w->kh, (unsigned long long)w->kw,
             (unsigned long long)w->sh, (unsigned long long)w->sw,
             (unsigned long long)w->pt, (unsigned long long)w->pl,
             (unsigned long long)w->pb, (unsigned long long)w->pr);
}

static int need_rank(struct imp *I, size_t node, const struct value *x,
                     unsigned rank, const char *what)
{
    if (x->rank != rank) {
        return node_fail(I, node, MEMEST_E_PARSE,
                         "its input '%.60s' has rank %u; supported is %s",
                         x->name, x->rank, what);
    }
    return MEMEST_OK;
}

/* ---- Operators ---------------------------------------------------------- */

static int op_conv(struct imp *I, size_t node)
{
    const Onnx__NodeProto *n = I->g->node[node];
    const struct cval *W;
    const struct cval *B = NULL;
    struct window w;
    int64_t group;
    size_t x = 0;
    size_t l = 0;
    uint64_t dim[4];
    char win[120];
    int st;

    if ((st = check_attrs(I, node, "auto_pad dilations group kernel_shape "
                                   "pads strides")) ||
        (st = get_act(I, node, 0, &x)) ||
        (st = need_rank(I, node, &I->v[x], 4, "NxCxHxW (2-D convolution)")) ||
        (st = get_const(I, node, 1, "weight", &W)) ||
        (st = attr_int(I, node, "group", 1, &group))) {
        return st;
    }
    if (in_name(n, 2)[0] != '\0' &&
        (st = get_const(I, node, 2, "bias", &B))) {
        return st;
    }
    if (W->rank != 4) {
        return node_fail(I, node, MEMEST_E_SHAPE,
                         "the weight has rank %u; a 2-D convolution needs "
                         "4 (out, in/group, kh, kw)", W->rank);
    }
    if (group < 1 || (uint64_t)group > I->v[x].dim[1] ||
        I->v[x].dim[1] % (uint64_t)group != 0 ||
        W->dim[1] * (uint64_t)group != I->v[x].dim[1] ||
        W->dim[0] % (uint64_t)group != 0) {
        return node_fail(I, node, MEMEST_E_SHAPE,
                         "weight %llux%llux%llux%llu with group %lld does "
                         "not fit %llu input channels",
                         (unsigned long long)W->dim[0],
                         (unsigned long long)W->dim[1],
                         (unsigned long long)W->dim[2],
                         (unsigned long long)W->dim[3], (long long)group,
                         (unsigned long long)I->v[x].dim[1]);
    }
    if (B != NULL && (B->count != W->dim[0] || B->rank != 1)) {
        return node_fail(I, node, MEMEST_E_SHAPE,
                         "the bias has %llu values for %llu output channels",
                         (unsigned long long)B->count,
                         (unsigned long long)W->dim[0]);
    }
    if ((st = read_window(I, node, &I->v[x], &W->dim[2], &w))) {
        return st;
    }
    if ((st = push_layer(I, node, "conv2d", n->name, "conv", &l))) {
        return st;
    }
    I->L[l].takes_act = 1;
    window_args(&w, win, sizeof win);
    snprintf(I->L[l].args, sizeof I->L[l].args, "%llu %s g=%lld bias=%s",
             (unsigned long long)W->dim[0], win, (long long)group,
             B ? "yes" : "no");
    dim[0] = I->v[x].dim[0];
    dim[1] = W->dim[0];
    dim[2] = w.oh;
    dim[3] = w.ow;
    if ((st = layer_inputs(I, l, &x, 1)) ||
        (st = push_weight(I, l, "weight", 4, W->dim, W->f, NULL)) ||
        (B && (st = push_weight(I, l, "bias", 1, W->dim, B->f, NULL)))) {
        return st;
    }
    return set_output(I, node, 0, l, 4, dim);
}

/* A bias of m values from a constant broadcast to [m] (scalar, [m],
 * [1, m]), times beta, into a new array. */
static int broadcast_bias(struct imp *I, size_t node, const struct cval *C,
                          uint64_t m, double beta, float **out)
{
    int ok = C->count == 1 ||
             (C->count == m && (C->rank == 1 ||
                                (C->rank == 2 && C->dim[0] == 1)));
    float *b;
    *out = NULL;
    if (!ok) {
        return node_fail(I, node, MEMEST_E_PARSE,
                         "a bias of %llu values (rank %u) is not supported: "
                         "only one value per output (%llu) or a scalar",
                         (unsigned long long)C->count, C->rank,
                         (unsigned long long)m);
    }
    b = malloc((size_t)m * sizeof *b);
    if (b == NULL) {
        return nomem(I);
    }
    for (uint64_t i = 0; i < m; i++) {
        b[i] = (float)(beta * C->f[C->count == 1 ? 0 : i]);
    }
    *out = b;
    return MEMEST_OK;
}

/* A dense layer y = x W^T + b from a weight given as [k][m] (transposed)
 * or [m][k], scaled by alpha. */
static int emit_dense(struct imp *I, size_t node, size_t x,
                      const struct cval *Bm, int b_is_km, double alpha,
                      const float *bias, float *bias_owned)
{
    const Onnx__NodeProto *n = I->g->node[node];
    uint64_t k = b_is_km ? Bm->dim[0] : Bm->dim[1];
    uint64_t m = b_is_km ? Bm->dim[1] : Bm->dim[0];
    uint64_t wdim[2] = {m, k};
    uint64_t bdim[1] = {m};
    uint64_t odim[4] = {I->v[x].dim[0], m, 0, 0};
    float *w = NULL;
    size_t l = 0;
    int st;

    if (k != I->v[x].dim[1]) {
        free(bias_owned);
        return node_fail(I, node, MEMEST_E_SHAPE,
                         "the weight expects %llu input features, the "
                         "input '%.60s' has %llu", (unsigned long long)k,
                         I->v[x].name, (unsigned long long)I->v[x].dim[1]);
    }
    if (b_is_km || alpha != 1.0) {
        w = malloc((size_t)(m * k) * sizeof *w);
        if (w == NULL) {
            free(bias_owned);
            return nomem(I);
        }
        for (uint64_t i = 0; i < m; i++) {
            for (uint64_t j = 0; j < k; j++) {
                float v = b_is_km ? Bm->f[j * m + i] : Bm->f[i * k + j];
                w[i * k + j] = (float)(alpha * v);
            }
        }
    }
    st = push_layer(I, node, "dense", n->name, "dense", &l);
    if (st != MEMEST_OK) {
        free(w);
        free(bias_owned);
        return st;
    }
    I->L[l].takes_act = 1;
    snprintf(I->L[l].args, sizeof I->L[l].args, "%llu bias=%s",
             (unsigned long long)m, bias ? "yes" : "no");
    st = push_weight(I, l, "weight", 2, wdim, w ? w : Bm->f, w);
    if (st != MEMEST_OK) {
        free(bias_owned);
        return st;
    }
    if (bias != NULL &&
        (st = push_weight(I, l, "bias", 1, bdim, bias, bias_owned))) {
        return st;
    }
    if ((st = layer_inputs(I, l, &x, 1))) {
        return st;
    }
    return set_output(I, node, 0, l, 2, odim);
}

static int op_gemm(struct imp *I, size_t node)
{
    const Onnx__NodeProto *n = I->g->node[node];
    const struct cval *B;
    const struct cval *C = NULL;
    double alpha, beta;
    int64_t ta, tb;
    float *bias = NULL;
    size_t x = 0;
    int st;

    /* broadcast (before opset 7) only allowed C to broadcast, which the
     * bias check below handles */
    if ((st = check_attrs(I, node, "alpha beta broadcast transA transB")) ||
        (st = attr_float(I, node, "alpha", 1.0, &alpha)) ||
        (st = attr_float(I, node, "beta", 1.0, &beta)) ||
        (st = attr_int(I, node, "transA", 0, &ta)) ||
        (st = attr_int(I, node, "transB", 0, &tb))) {
        return st;
    }
    if (ta != 0) {
        return node_fail(I, node, MEMEST_E_PARSE,
                         "transA=1 is not supported: the batch must be the "
                         "first dimension of A");
    }
    if ((st = get_act(I, node, 0, &x)) ||
        (st = need_rank(I, node, &I->v[x], 2, "NxK (a batch of vectors)")) ||
        (st = get_const(I, node, 1, "weight B", &B))) {
        return st;
    }
    if (B->rank != 2) {
        return node_fail(I, node, MEMEST_E_SHAPE,
                         "the weight B has rank %u, not 2", B->rank);
    }
    if (in_name(n, 2)[0] != '\0') {
        if ((st = get_const(I, node, 2, "bias C", &C)) ||
            (st = broadcast_bias(I, node, C, tb ? B->dim[0] : B->dim[1],
                                 beta, &bias))) {
            return st;
        }
    }
    return emit_dense(I, node, x, B, tb == 0, alpha, bias, bias);
}

static int op_matmul(struct imp *I, size_t node)
{
    const struct cval *B;
    const struct cval *C = NULL;
    float *bias = NULL;
    size_t x = 0;
    int st;

    if ((st = check_attrs(I, node, "")) ||
        (st = get_act(I, node, 0, &x)) ||
        (st = need_rank(I, node, &I->v[x], 2, "NxK (a batch of vectors)")) ||
        (st = get_const(I, node, 1, "weight", &B))) {
        return st;
    }
    if (B->rank != 2) {
        return node_fail(I, node, MEMEST_E_SHAPE,
                         "the constant operand has rank %u, not 2", B->rank);
    }
    if (I->ni[node].bias_add != SIZE_MAX) {
        size_t a = I->ni[node].bias_add;
        const Onnx__NodeProto *an = I->g->node[a];
        size_t slot = str_eq(an->input[0], str(I->g->node[node]->output[0]))
                          ? 1 : 0;
        if ((st = get_const(I, a, slot, "bias", &C)) ||
            (st = broadcast_bias(I, a, C, B->dim[1], 1.0, &bias))) {
            return st;
        }
    }
    st = emit_dense(I, node, x, B, 1, 1.0, bias, bias);
    if (st == MEMEST_OK && I->ni[node].bias_add != SIZE_MAX) {
        /* the Add's output is the dense layer's */
        const struct value *y = &I->v[value_of(
            I, str(I->g->node[node]->output[0]))];
        st = set_output(I, I->ni[node].bias_add, 0, y->layer, y->rank,
                        y->dim);
    }
    return st;
}

static int op_batchnorm(struct imp *I, size_t node)
{
    static const char *const roles[4] = {"scale", "bias B", "mean",
                                         "variance"};
    static const char *const names[4] = {"weight", "bias", "running_mean",
                                         "running_var"};
    const Onnx__NodeProto *n = I->g->node[node];
    const struct cval *p[4];
    double eps;
    int64_t training;
    int64_t spatial;
    size_t x = 0;
    size_t l = 0;
    int st;

    /* is_test (before opset 7) and momentum matter only for training;
     * spatial=0 (before opset 9) means statistics per element */
    if ((st = check_attrs(I, node, "epsilon is_test momentum spatial "
                                   "training_mode")) ||
        (st = attr_int(I, node, "spatial", 1, &spatial)) ||
        (st = attr_float(I, node, "epsilon", 1e-5, &eps)) ||
        (st = attr_int(I, node, "training_mode", 0, &training))) {
        return st;
    }
    if (training != 0) {
        return node_fail(I, node, MEMEST_E_PARSE,
                         "training_mode=1 is not supported (inference "
                         "only)");
    }
    if (spatial != 1) {
        return node_fail(I, node, MEMEST_E_PARSE,
                         "spatial=0 (statistics per element) is not "
                         "supported");
    }
    for (size_t o = 1; o < n->n_output; o++) {
        if (str(n->output[o])[0] != '\0' &&
            I->v[value_of(I, n->output[o])].readers > 0) {
            return node_fail(I, node, MEMEST_E_PARSE,
                             "its running statistics outputs are read; "
                             "only inference is supported");
        }
    }
    if ((st = get_act(I, node, 0, &x))) {
        return st;
    }
    if (I->v[x].rank < 2) {
        return node_fail(I, node, MEMEST_E_SHAPE, "its input has no channel "
                         "dimension");
    }
    for (size_t i = 0; i < 4; i++) {
        if ((st = get_const(I, node, i + 1, roles[i], &p[i]))) {
            return st;
        }
        if (p[i]->count != I->v[x].dim[1] || p[i]->rank != 1) {
            return node_fail(I, node, MEMEST_E_SHAPE,
                             "the %s has %llu values for %llu channels",
                             roles[i], (unsigned long long)p[i]->count,
                             (unsigned long long)I->v[x].dim[1]);
        }
    }
    if (!(eps >= 0.0) || !isfinite(eps)) {
        return node_fail(I, node, MEMEST_E_RANGE,
                         "epsilon must be finite and not negative");
    }
    if ((st = push_layer(I, node, "batchnorm", n->name, "bn", &l))) {
        return st;
    }
    I->L[l].takes_act = 1;
    /* the float attribute, printed exactly */
    snprintf(I->L[l].args, sizeof I->L[l].args, "eps=%.17g", eps);
    for (size_t i = 0; i < 4; i++) {
        if ((st = push_weight(I, l, names[i], 1, p[i]->dim, p[i]->f,
                              NULL))) {
            return st;
        }
    }
    if ((st = layer_inputs(I, l, &x, 1))) {
        return st;
    }
    return set_output(I, node, 0, l, I->v[x].rank, I->v[x].dim);
}

static int op_pool(struct imp *I, size_t node, int is_max)
{
    const Onnx__NodeProto *n = I->g->node[node];
    struct window w;
    int64_t cip = 0;
    int64_t order = 0;
    uint64_t dim[4];
    char win[120];
    size_t x = 0;
    size_t l = 0;
    int st;

    if (is_max) {
        st = check_attrs(I, node, "auto_pad ceil_mode dilations "
                                  "kernel_shape pads storage_order "
                                  "strides");
        if (st == MEMEST_OK) {
            st = attr_int(I, node, "storage_order", 0, &order);
        }
        if (st == MEMEST_OK && n->n_output > 1 &&
            str(n->output[1])[0] != '\0' &&
            I->v[value_of(I, n->output[1])].readers > 0) {
            return node_fail(I, node, MEMEST_E_PARSE,
                             "its Indices output is read, which is not "
                             "supported");
        }
    } else {
        st = check_attrs(I, node, "auto_pad ceil_mode count_include_pad "
                                  "dilations kernel_shape pads strides");
        if (st == MEMEST_OK) {
            st = attr_int(I, node, "count_include_pad", 0, &cip);
        }
    }
    if (st || (st = get_act(I, node, 0, &x)) ||
        (st = need_rank(I, node, &I->v[x], 4, "NxCxHxW (2-D pooling)")) ||
        (st = read_window(I, node, &I->v[x], NULL, &w))) {
        return st;
    }
    (void)order; /* only the Indices output depends on it */
    if ((st = push_layer(I, node, is_max ? "maxpool" : "avgpool", n->name,
                         "pool", &l))) {
        return st;
    }
    window_args(&w, win, sizeof win);
    if (is_max) {
        snprintf(I->L[l].args, sizeof I->L[l].args, "%s", win);
    } else {
        snprintf(I->L[l].args, sizeof I->L[l].args, "%s count_pad=%s", win,
                 cip ? "yes" : "no");
    }
    dim[0] = I->v[x].dim[0];
    dim[1] = I->v[x].dim[1];
    dim[2] = w.oh;
    dim[3] = w.ow;
    if ((st = layer_inputs(I, l, &x, 1))) {
        return st;
    }
    return set_output(I, node, 0, l, 4, dim);
}

/* A layer of `kind` with one input and the output shape given. */
static int emit_simple(struct imp *I, size_t node, const char *kind,
                       const char *fallback, size_t x, unsigned rank,
                       const uint64_t *dim)
{
    size_t l = 0;
    int st = push_layer(I, node, kind, I->g->node[node]->name, fallback, &l);
    if (st == MEMEST_OK) {
        st = layer_inputs(I, l, &x, 1);
    }
    if (st == MEMEST_OK) {
        st = set_output(I, node, 0, l, rank, dim);
    }
    return st;
}

/* Flatten to [N, prod]: a flatten layer from CxHxW or a matrix, an
 * identity from a vector. */
static int emit_flat(struct imp *I, size_t node, size_t x)
{
    uint64_t dim[4] = {I->v[x].dim[0], per_sample(&I->v[x]), 0, 0};
    if (I->v[x].rank == 2) {
        return emit_simple(I, node, "identity", "identity", x, 2, dim);
    }
    return emit_simple(I, node, "flatten", "flatten", x, 2, dim);
}

static int op_flatten(struct imp *I, size_t node)
{
    int64_t axis;
    size_t x = 0;
    int st;
    if ((st = check_attrs(I, node, "axis")) ||
        (st = attr_int(I, node, "axis", 1, &axis)) ||
        (st = get_act(I, node, 0, &x))) {
        return st;
    }
    if (axis < 0) {
        axis += I->v[x].rank;
    }
    if (axis != 1) {
        return node_fail(I, node, MEMEST_E_PARSE,
                         "axis %lld is not supported: only 1 (keep the "
                         "batch, flatten each sample)", (long long)axis);
    }
    return emit_flat(I, node, x);
}

static int op_reshape(struct imp *I, size_t node)
{
    const struct cval *s;
    int64_t allowzero;
    size_t x = 0;
    uint64_t k;
    int st;

    if ((st = check_attrs(I, node, "allowzero")) ||
        (st = attr_int(I, node, "allowzero", 0, &allowzero)) ||
        (st = get_act(I, node, 0, &x))) {
        return st;
    }
    s = NULL;
    if (I->ni[node].shape_concat == SIZE_MAX &&
        (st = get_const(I, node, 1, "shape", &s))) {
        return st;
    }
    k = per_sample(&I->v[x]);
    if (s == NULL) {
        /* [batch of some tensor, -1 or K]: the shape built by
         * find_shape_reshape()'s pattern; its constant is checked here */
        const struct cval *tail;
        if ((st = get_const(I, I->ni[node].shape_concat, 1,
                            "shape's second part", &tail))) {
            return st;
        }
        if (tail->ints != NULL && tail->count == 1 &&
            (tail->ints[0] == -1 ||
             (tail->ints[0] > 0 && (uint64_t)tail->ints[0] == k))) {
            return emit_flat(I, node, x);
        }
    } else if (s->ints != NULL && s->count == 2 && s->rank == 1) {
        /* [N, K], [N, -1], [0, K], [0, -1], [-1, K] with N the batch */
        int64_t a = s->ints[0], b = s->ints[1];
        int batch_ok = (a == 0 && !allowzero) ||
                       (a > 0 && (uint64_t)a == I->v[x].dim[0]) ||
                       (a == -1 && b > 0 && (uint64_t)b == k);
        int k_ok = b == -1 ? a != -1 : (b > 0 && (uint64_t)b == k);
        if (batch_ok && k_ok) {
            return emit_flat(I, node, x);
        }
    }
    return node_fail(I, node, MEMEST_E_PARSE,
                     "only a reshape of each sample to a flat vector (a "
                     "constant shape [N, %llu] or [N, -1]) is supported",
                     (unsigned long long)k);
}

/* Softmax and LogSoftmax: only axes whose meaning is the layer's. */
static int op_softmax(struct imp *I, size_t node, enum memest_act act)
{
    const Onnx__NodeProto *n = I->g->node[node];
    int64_t axis;
    size_t x = 0;
    int ok;
    int st;

    if ((st = check_attrs(I, node, "axis")) ||
        (st = attr_int(I, node, "axis", I->opset >= 13 ? -1 : 1, &axis)) ||
        (st = get_act(I, node, 0, &x))) {
        return st;
    }
    const struct value *v = &I->v[x];
    if (axis < -(int64_t)v->rank || axis >= (int64_t)v->rank) {
        return node_fail(I, node, MEMEST_E_RANGE,
                         "axis %lld is outside the rank %u input",
                         (long long)axis, v->rank);
    }
    if (axis < 0) {
        axis += v->rank;
    }
    if (v->rank == 2) {
        ok = axis == 1;
    } else if (v->rank == 4) {
        /* before opset 13 the input is flattened from the axis on, so
         * axis 1 means all of CxHxW: the channels only when H = W = 1 */
        ok = axis == 1 &&
             (I->opset >= 13 || (v->dim[2] == 1 && v->dim[3] == 1));
    } else {
        ok = 0;
    }
    if (!ok) {
        return node_fail(I, node, MEMEST_E_PARSE,
                         "axis %lld of a rank %u input (opset %lld) is not "
                         "supported: only the features of a vector or the "
                         "channels of CxHxW", (long long)axis, v->rank,
                         (long long)I->opset);
    }
    return emit_act(I, node, x, act, n->name);
}

static int op_clip(struct imp *I, size_t node)
{
    const Onnx__NodeProto *n = I->g->node[node];
    double lo = -INFINITY, hi = INFINITY;
    size_t x = 0;
    int st;

    if ((st = check_attrs(I, node, I->opset < 11 ? "max min" : "")) ||
        (st = get_act(I, node, 0, &x))) {
        return st;
    }
    if (I->opset < 11) {
        /* before opset 11 the bounds were attributes */
        if ((st = attr_float(I, node, "min", -INFINITY, &lo)) ||
            (st = attr_float(I, node, "max", INFINITY, &hi))) {
            return st;
        }
    }
    if (in_name(n, 1)[0] && (st = get_scalar(I, node, 1, "min", &lo))) {
        return st;
    }
    if (in_name(n, 2)[0] && (st = get_scalar(I, node, 2, "max", &hi))) {
        return st;
    }
    if (lo == 0.0 && hi == 6.0) {
        return emit_act(I, node, x, MEMEST_ACT_RELU6, n->name);
    }
    if (lo == 0.0 && hi == INFINITY) {
        return emit_act(I, node, x, MEMEST_ACT_RELU, n->name);
    }
    return node_fail(I, node, MEMEST_E_PARSE,
                     "Clip to [%g, %g] is not supported: only [0, 6] (relu6) "
                     "and [0, inf) (relu)", lo, hi);
}

static int same_shape(const struct value *a, const struct value *b)
{
    if (a->rank != b->rank) {
        return 0;
    }
    for (unsigned d = 1; d < a->rank; d++) {
        if (a->dim[d] != b->dim[d]) {
            return 0;
        }
    }
    return 1;
}

static void shape_text(const struct value *v, char *buf, size_t cap)
{
    size_t off = (size_t)snprintf(buf, cap, "N");
    for (unsigned d = 1; d < v->rank && off < cap; d++) {
        off += (size_t)snprintf(buf + off, cap - off, "x%llu",
                                (unsigned long long)v->dim[d]);
    }
}

static int op_add(struct imp *I, size_t node)
{
    const Onnx__NodeProto *n = I->g->node[node];
    size_t xs[2];
    size_t l = 0;
    int st;

    /* broadcast and axis (before opset 7) only allowed broadcasting,
     * which is refused below anyway */
    if ((st = check_attrs(I, node, "axis broadcast"))) {
        return st;
    }
    for (size_t i = 0; i < 2; i++) {
        size_t vi = value_of(I, in_name(n, i));
        if (vi != SIZE_MAX && is_constant(&I->v[vi]) &&
            I->v[vi].kind == V_CONST) {
            return node_fail(I, node, MEMEST_E_PARSE,
                             "adding the constant '%.60s' is supported only "
                             "as the bias right after a MatMul; Add takes "
                             "two computed tensors of one shape",
                             in_name(n, i));
        }
        if ((st = get_act(I, node, i, &xs[i]))) {
            return st;
        }
    }
    if (!same_shape(&I->v[xs[0]], &I->v[xs[1]])) {
        char a[64], b[64];
        shape_text(&I->v[xs[0]], a, sizeof a);
        shape_text(&I->v[xs[1]], b, sizeof b);
        return node_fail(I, node, MEMEST_E_SHAPE,
                         "shape mismatch: '%.40s' is %s, '%.40s' is %s (no "
                         "broadcasting)", I->v[xs[0]].name, a,
                         I->v[xs[1]].name, b);
    }
    if ((st = push_layer(I, node, "add", n->name, "add", &l))) {
        return st;
    }
    I->L[l].takes_act = 1;
    if ((st = layer_inputs(I, l, xs, 2))) {
        return st;
    }
    return set_output(I, node, 0, l, I->v[xs[0]].rank, I->v[xs[0]].dim);
}

static int op_concat(struct imp *I, size_t node)
{
    const Onnx__NodeProto *n = I->g->node[node];
    size_t *xs;
    uint64_t dim[4];
    int64_t axis;
    size_t l = 0;
    int st;

    if ((st = check_attrs(I, node, "axis")) ||
        (st = attr_int(I, node, "axis", I->opset < 4 ? 1 : INT64_MIN,
                       &axis))) {
        return st;
    }
    if (n->n_input < 1 || axis == INT64_MIN) {
        return node_fail(I, node, MEMEST_E_PARSE,
                         "a Concat needs inputs and an axis");
    }
    xs = malloc(n->n_input * sizeof *xs);
    if (xs == NULL) {
        return nomem(I);
    }
    for (size_t i = 0; i < n->n_input; i++) {
        if ((st = get_act(I, node, i, &xs[i]))) {
            goto done;
        }
    }
    memcpy(dim, I->v[xs[0]].dim, sizeof dim);
    if (axis < 0) {
        axis += I->v[xs[0]].rank;
    }
    if (axis != 1) {
        st = node_fail(I, node, MEMEST_E_PARSE,
                       "axis %lld is not supported: only 1 (channels or "
                       "features)", (long long)axis);
        goto done;
    }
    dim[1] = 0;
    for (size_t i = 0; i < n->n_input; i++) {
        const struct value *a = &I->v[xs[0]];
        const struct value *b = &I->v[xs[i]];
        int ok = a->rank == b->rank;
        for (unsigned d = 2; ok && d < a->rank; d++) {
            ok = a->dim[d] == b->dim[d];
        }
        if (!ok) {
            char sa[64], sb[64];
            shape_text(a, sa, sizeof sa);
            shape_text(b, sb, sizeof sb);
            st = node_fail(I, node, MEMEST_E_SHAPE,
                           "shape mismatch: '%.40s' is %s, '%.40s' is %s",
                           a->name, sa, b->name, sb);
            goto done;
        }
        dim[1] += b->dim[1]; /* each at most MAX_ELEMENTS: no overflow */
    }
    if (n->n_input == 1) {
        st = emit_simple(I, node, "identity", "identity", xs[0],
                         I->v[xs[0]].rank, dim);
        goto done;
    }
    if ((st = push_layer(I, node, "concat", n->name, "concat", &l)) ||
        (st = layer_inputs(I, l, xs, n->n_input))) {
        goto done;
    }
    st = set_output(I, node, 0, l, I->v[xs[0]].rank, dim);
done:
    free(xs);
    return st;
}

static int op_dropout(struct imp *I, size_t node)
{
    const Onnx__NodeProto *n = I->g->node[node];
    size_t x = 0;
    int st;

    int64_t is_test;
    if ((st = check_attrs(I, node, "is_test ratio seed")) ||
        (st = attr_int(I, node, "is_test", I->opset < 7 ? 0 : 1,
                       &is_test))) {
        return st;
    }
    if (is_test == 0) {
        /* before opset 7 a Dropout dropped unless is_test=1 */
        return node_fail(I, node, MEMEST_E_PARSE,
                         "is_test=0 drops at random; only inference (an "
                         "identity) is supported");
    }
    if (n->n_output > 1 && str(n->output[1])[0] != '\0' &&
        I->v[value_of(I, n->output[1])].readers > 0) {
        return node_fail(I, node, MEMEST_E_PARSE,
                         "its mask output is read, which is not supported");
    }
    if (in_name(n, 2)[0] != '\0') {
        double training = 0.0;
        if ((st = get_scalar(I, node, 2, "training_mode", &training))) {
            return st;
        }
        if (training != 0.0) {
            return node_fail(I, node, MEMEST_E_PARSE,
                             "training_mode is true; only inference (an "
                             "identity) is supported");
        }
    }
    if ((st = get_act(I, node, 0, &x))) {
        return st;
    }
    return emit_simple(I, node, "dropout", "dropout", x, I->v[x].rank,
                       I->v[x].dim);
}

static int op_gap(struct imp *I, size_t node)
{
    uint64_t dim[4];
    size_t x = 0;
    int st;
    if ((st = check_attrs(I, node, "")) || (st = get_act(I, node, 0, &x)) ||
        (st = need_rank(I, node, &I->v[x], 4, "NxCxHxW"))) {
        return st;
    }
    dim[0] = I->v[x].dim[0];
    dim[1] = I->v[x].dim[1];
    dim[2] = dim[3] = 1;
    return emit_simple(I, node, "globalavgpool", "gap", x, 4, dim);
}

/* An element-wise activation node (Relu, Sigmoid, Tanh, Erf). */
static int op_unary(struct imp *I, size_t node, enum memest_act act)
{
    size_t x = 0;
    int st;
    if ((st = check_attrs(I, node, "")) || (st = get_act(I, node, 0, &x))) {
        return st;
    }
    return emit_act(I, node, x, act, I->g->node[node]->name);
}

static int op_gelu(struct imp *I, size_t node)
{
    const size_t x = I->ni[node].gelu_x;
    const Onnx__NodeProto *erf = I->g->node[I->ni[node].gelu_erf];
    /* the pattern reads x from the node that starts it, already checked
     * to be a computed tensor or a graph input */
    size_t vi = x;
    int st = MEMEST_OK;
    if (!I->v[vi].shaped) {
        if (I->v[vi].kind != V_GRAPH_INPUT) {
            return node_fail(I, node, MEMEST_E_PARSE,
                             "the GELU input '%.60s' is not computed "
                             "before it", I->v[vi].name);
        }
        st = make_model_input(I, node, vi);
    }
    if (st == MEMEST_OK) {
        /* PyTorch names the nodes of the pattern after their operators
         * (Div_3, Erf_4, ...), none of which names the whole: "gelu" */
        (void)erf;
        st = emit_act(I, node, vi, MEMEST_ACT_GELU, "gelu");
    }
    return st;
}

static int translate_node(struct imp *I, size_t node)
{
    const Onnx__NodeProto *n = I->g->node[node];
    const char *op = str(n->op_type);

    if (I->ni[node].gelu_x != SIZE_MAX) {
        return op_gelu(I, node);
    }
    if (strcmp(op, "Conv") == 0) {
        return op_conv(I, node);
    }
    if (strcmp(op, "Gemm") == 0) {
        return op_gemm(I, node);
    }
    if (strcmp(op, "MatMul") == 0) {
        return op_matmul(I, node);
    }
    if (strcmp(op, "BatchNormalization") == 0) {
        return op_batchnorm(I, node);
    }
    if (strcmp(op, "Relu") == 0) {
        return op_unary(I, node, MEMEST_ACT_RELU);
    }
    if (strcmp(op, "Sigmoid") == 0) {
        return op_unary(I, node, MEMEST_ACT_SIGMOID);
    }
    if (strcmp(op, "Tanh") == 0) {
        return op_unary(I, node, MEMEST_ACT_TANH);
    }
    if (strcmp(op, "Erf") == 0) {
        return op_unary(I, node, MEMEST_ACT_ERF);
    }
    if (strcmp(op, "Clip") == 0) {
        return op_clip(I, node);
    }
    if (strcmp(op, "Softmax") == 0) {
        return op_softmax(I, node, MEMEST_ACT_SOFTMAX);
    }
    if (strcmp(op, "LogSoftmax") == 0) {
        return op_softmax(I, node, MEMEST_ACT_LOGSOFTMAX);
    }
    if (strcmp(op, "MaxPool") == 0) {
        return op_pool(I, node, 1);
    }
    if (strcmp(op, "AveragePool") == 0) {
        return op_pool(I, node, 0);
    }
    if (strcmp(op, "GlobalAveragePool") == 0) {
        return op_gap(I, node);
    }
    if (strcmp(op, "Flatten") == 0) {
        return op_flatten(I, node);
    }
    if (strcmp(op, "Reshape") == 0) {
        return op_reshape(I, node);
    }
    if (strcmp(op, "Add") == 0) {
        return op_add(I, node);
    }
    if (strcmp(op, "Concat") == 0) {
        return op_concat(I, node);
    }
    if (strcmp(op, "Dropout") == 0) {
        return op_dropout(I, node);
    }
    if (strcmp(op, "Identity") == 0) {
        size_t x;
        int st;
        if ((st = check_attrs(I, node, "")) ||
            (st = get_act(I, node, 0, &x))) {
            return st;
        }
        return emit_simple(I, node, "identity", "identity", x, I->v[x].rank,
                           I->v[x].dim);
    }
    if (strcmp(op, "Mul") == 0 || strcmp(op, "Div") == 0) {
        return node_fail(I, node, MEMEST_E_PARSE,
                         "%s is supported only inside the GELU pattern "
                         "x * 0.5 * (1 + erf(x / sqrt(2)))", op);
    }
    return node_fail(I, node, MEMEST_E_PARSE,
                     "unsupported operator; supported: %s", supported_ops);
}

/* ---- Graph analysis ----------------------------------------------------- */

/* The node making value vi, SIZE_MAX if none. */
static size_t producer(const struct imp *I, size_t vi)
{
    return vi != SIZE_MAX && I->v[vi].kind == V_ACT ? I->v[vi].producer
                                                    : SIZE_MAX;
}

static int op_is(const struct imp *I, size_t node, const char *op)
{
    return node != SIZE_MAX && str_eq(I->g->node[node]->op_type, op) &&
           I->ni[node].live && !I->ni[node].skip &&
           I->ni[node].gelu_x == SIZE_MAX;
}

/* The only reader of value vi, or SIZE_MAX. */
static size_t sole_reader(const struct imp *I, size_t vi)
{
    if (vi == SIZE_MAX) {
        return SIZE_MAX; /* an output with no name */
    }
    return I->v[vi].readers == 1 && vi != I->output_value ? I->v[vi].reader
                                                         : SIZE_MAX;
}

static size_t out0(struct imp *I, size_t node)
{
    const Onnx__NodeProto *n = I->g->node[node];
    return n->n_output >= 1 ? value_of(I, str(n->output[0])) : SIZE_MAX;
}

/* For a binary node with one scalar constant operand close to c: the
 * other operand's value, else SIZE_MAX. */
static size_t binary_with(struct imp *I, size_t node, double c, int either)
{
    const Onnx__NodeProto *n = I->g->node[node];
    double s;
    if (n->n_input != 2) {
        return SIZE_MAX;
    }
    for (size_t k = 0; k < (either ? 2u : 1u); k++) {
        size_t cslot = 1 - k;
        if (peek_scalar(I, n, cslot, &s) && fabs(s - c) <= 1e-4 * fabs(c)) {
            return value_of(I, in_name(n, k));
        }
    }
    return SIZE_MAX;
}

/*
 * Find PyTorch's exported GELU, x * 0.5 * (1 + erf(x / sqrt(2))):
 * Div(x, sqrt2) or Mul(x, 1/sqrt2) -> Erf -> Add(., 1) -> Mul(x, .) ->
 * Mul(., 0.5), or with the half taken first: Mul(x, 0.5) -> Mul(., Add).
 * Every intermediate has one reader. The last node then stands for the
 * whole pattern (gelu_x), the others are skipped, and x loses the reader
 * the pattern counted twice.
 */
static void find_gelu(struct imp *I)
{
    for (size_t e = 0; e < I->g->n_node; e++) {
        size_t d, x, a, m, fin, h = SIZE_MAX, ev, av, mv, other;
        if (!op_is(I, e, "Erf") || I->g->node[e]->n_input != 1) {
            continue;
        }
        d = producer(I, value_of(I, in_name(I->g->node[e], 0)));
        if (d == SIZE_MAX || sole_reader(I, out0(I, d)) != e) {
            continue;
        }
        if (op_is(I, d, "Div")) {
            x = binary_with(I, d, 1.4142135623730951, 0);
        } else if (op_is(I, d, "Mul")) {
            x = binary_with(I, d, 0.70710678118654752, 1);
        } else {
            continue;
        }
        ev = out0(I, e);
        if (x == SIZE_MAX || ev == SIZE_MAX) {
            continue;
        }
        a = sole_reader(I, ev);
        if (!op_is(I, a, "Add") || binary_with(I, a, 1.0, 1) != ev) {
            continue;
        }
        av = out0(I, a);
        m = av != SIZE_MAX ? sole_reader(I, av) : SIZE_MAX;
        if (!op_is(I, m, "Mul") || I->g->node[m]->n_input != 2) {
            continue;
        }
        other = value_of(I, in_name(I->g->node[m], 0)) == av
                    ? value_of(I, in_name(I->g->node[m], 1))
                    : value_of(I, in_name(I->g->node[m], 0));
        mv = out0(I, m);
        if (other == x && mv != SIZE_MAX) {
            fin = sole_reader(I, mv);
            if (!op_is(I, fin, "Mul") || binary_with(I, fin, 0.5, 1) != mv) {
                continue;
            }
        } else {
            h = producer(I, other);
            if (!op_is(I, h, "Mul") || binary_with(I, h, 0.5, 1) != x ||
                sole_reader(I, other) != m) {
                continue;
            }
            fin = m;
        }
        I->ni[d].skip = 1;
        I->ni[e].skip = 1;
        I->ni[a].skip = 1;
        if (fin != m) {
            I->ni[m].skip = 1;
        } else {
            I->ni[h].skip = 1;
        }
        I->ni[fin].gelu_x = x;
        I->ni[fin].gelu_erf = e;
        I->v[x].readers--; /* read by d and by m or h: one gelu now */
    }
}

/* The scalar constant integer in `slot` of node n equals want. */
static int const_int_is(struct imp *I, const Onnx__NodeProto *n, size_t slot,
                        int64_t want)
{
    size_t vi = value_of(I, in_name(n, slot));
    double v;
    return vi != SIZE_MAX && I->v[vi].kind == V_CONST &&
           peek_scalar(I, n, slot, &v) && v == (double)want;
}

/*
 * PyTorch's x.view(x.size(0), -1) with a free batch exports the shape as
 * Concat(Unsqueeze(Gather(Shape(t), 0), [0]), [-1]): the batch of a
 * tensor (all share it) and a constant. Such a Reshape is a flatten; the
 * nodes that build the shape are skipped, and t loses the Shape reader.
 */
static void find_shape_reshape(struct imp *I)
{
    for (size_t r = 0; r < I->g->n_node; r++) {
        const Onnx__NodeProto *rn = I->g->node[r];
        size_t c, u, ga, sh, sv;
        const Onnx__NodeProto *un;
        const Onnx__NodeProto *gn;
        int64_t axis = 0;
        const Onnx__AttributeProto *a;

        if (!op_is(I, r, "Reshape") || rn->n_input != 2) {
            continue;
        }
        c = producer(I, value_of(I, in_name(rn, 1)));
        if (!op_is(I, c, "Concat") || I->g->node[c]->n_input != 2 ||
            sole_reader(I, out0(I, c)) != r) {
            continue;
        }
        a = attr(I->g->node[c], "axis");
        if (a == NULL || a->i != 0) {
            continue;
        }
        u = producer(I, value_of(I, in_name(I->g->node[c], 0)));
        if (!op_is(I, u, "Unsqueeze") || sole_reader(I, out0(I, u)) != c) {
            continue;
        }
        un = I->g->node[u];
        /* axes [0]: an input from opset 13, an attribute before */
        a = attr(un, "axes");
        if (!(un->n_input == 2 && const_int_is(I, un, 1, 0)) &&
            !(un->n_input == 1 && a != NULL && a->n_ints == 1 &&
              a->ints[0] == 0)) {
            continue;
        }
        ga = producer(I, value_of(I, in_name(un, 0)));
        if (!op_is(I, ga, "Gather") || sole_reader(I, out0(I, ga)) != u) {
            continue;
        }
        gn = I->g->node[ga];
        a = attr(gn, "axis");
        axis = a ? a->i : 0;
        if (gn->n_input != 2 || axis != 0 || !const_int_is(I, gn, 1, 0)) {
            continue;
        }
        sh = producer(I, value_of(I, in_name(gn, 0)));
        if (!op_is(I, sh, "Shape") || I->g->node[sh]->n_attribute != 0 ||
            sole_reader(I, out0(I, sh)) != ga) {
            continue;
        }
        sv = value_of(I, in_name(I->g->node[sh], 0));
        if (sv == SIZE_MAX || I->v[sv].kind == V_CONST) {
            continue;
        }
        I->ni[c].skip = 1;
        I->ni[u].skip = 1;
        I->ni[ga].skip = 1;
        I->ni[sh].skip = 1;
        I->ni[r].shape_concat = c;
        I->v[sv].readers--;
    }
}

/* A MatMul whose only reader adds a constant: the bias of one dense. */
static void find_matmul_bias(struct imp *I)
{
    for (size_t mm = 0; mm < I->g->n_node; mm++) {
        size_t yv, a, b;
        const Onnx__NodeProto *an;
        if (!op_is(I, mm, "MatMul") || (yv = out0(I, mm)) == SIZE_MAX) {
            continue;
        }
        a = sole_reader(I, yv);
        if (!op_is(I, a, "Add") || I->g->node[a]->n_input != 2) {
            continue;
        }
        an = I->g->node[a];
        b = value_of(I, in_name(an, value_of(I, in_name(an, 0)) == yv));
        if (b == SIZE_MAX || !is_constant(&I->v[b])) {
            continue;
        }
        I->ni[mm].bias_add = a;
        I->ni[a].skip = 1;
    }
}

static int register_value(struct imp *I, const char *name, enum vkind kind,
                          size_t *out)
{
    size_t vi = strmap_get(&I->vmap, name);
    struct value *v;
    if (vi != SIZE_MAX) {
        *out = vi;
        return MEMEST_OK;
    }
    v = &I->v[I->nv];
    memset(v, 0, sizeof *v);
    v->name = name;
    v->kind = kind;
    v->producer = SIZE_MAX;
    v->reader = SIZE_MAX;
    v->layer = SIZE_MAX;
    if (strmap_put(&I->vmap, name, I->nv) != MEMEST_OK) {
        return nomem(I);
    }
    *out = I->nv++;
    return MEMEST_OK;
}

static int analyse(struct imp *I)
{
    Onnx__GraphProto *g = I->g;
    size_t total = g->n_initializer + g->n_input;
    const struct memest_onnx_opts *o = I->opts;
    int st;

    for (size_t i = 0; i < g->n_node; i++) {
        if (total > SIZE_MAX - g->node[i]->n_output) {
            return nomem(I);
        }
        total += g->node[i]->n_output;
    }
    I->v = calloc(total ? total : 1, sizeof *I->v);
    I->ni = calloc(g->n_node ? g->n_node : 1, sizeof *I->ni);
    if (I->v == NULL || I->ni == NULL) {
        return nomem(I);
    }
    for (size_t i = 0; i < g->n_initializer; i++) {
        size_t vi;
        if ((st = register_value(I, str(g->initializer[i]->name), V_CONST,
                                 &vi))) {
            return st;
        }
        I->v[vi].tp = g->initializer[i];
    }
    for (size_t i = 0; i < g->n_input; i++) {
        size_t vi;
        const char *nm = str(g->input[i]->name);
        if ((st = register_value(I, nm, V_GRAPH_INPUT, &vi))) {
            return st;
        }
        I->v[vi].vi = g->input[i];
        for (size_t k = 0; o != NULL && k < o->constant_count; k++) {
            if (o->constants[k].name != NULL &&
                strcmp(o->constants[k].name, nm) == 0) {
                /* a bound value overrides an initializer's default */
                I->v[vi].kind = V_GRAPH_INPUT;
                I->v[vi].user = &o->constants[k];
            }
        }
    }
    for (size_t i = 0; i < g->n_node; i++) {
        const Onnx__NodeProto *n = g->node[i];
        int constant = str_eq(n->op_type, "Constant");
        if ((str_eq(n->op_type, "Transpose") ||
             str_eq(n->op_type, "Identity")) &&
            n->n_input == 1) {
            /* folded only from a constant of the file: a graph input
             * bound by opts->constants may still be read as data */
            size_t src = value_of(I, str(n->input[0]));
            constant = src != SIZE_MAX && I->v[src].kind == V_CONST;
        }
        I->ni[i].gelu_x = SIZE_MAX;
        I->ni[i].gelu_erf = SIZE_MAX;
        I->ni[i].bias_add = SIZE_MAX;
        I->ni[i].shape_concat = SIZE_MAX;
        for (size_t k = 0; k < n->n_output; k++) {
            size_t vi;
            const char *nm = str(n->output[k]);
            if (nm[0] == '\0') {
                continue;
            }
            if (strmap_get(&I->vmap, nm) != SIZE_MAX) {
                I->output_value = SIZE_MAX;
                return node_fail(I, i, MEMEST_E_PARSE,
                                 "its output '%.60s' is already defined "
                                 "(by a graph input, an initializer or an "
                                 "earlier node)", nm);
            }
            if ((st = register_value(I, nm, constant ? V_CONST : V_ACT,
                                     &vi))) {
                return st;
            }
            I->v[vi].producer = i;
        }
    }
    if (g->n_output != 1) {
        return diag_fail(I->diag, MEMEST_E_PARSE,
                         "the graph has %zu outputs; one is supported",
                         g->n_output);
    }
    I->output_value = value_of(I, str(g->output[0]->name));
    if (I->output_value == SIZE_MAX ||
        I->v[I->output_value].kind == V_CONST) {
        return diag_fail(I->diag, MEMEST_E_PARSE,
                         "the graph output '%.60s' is not computed by any "
                         "node", str(g->output[0]->name));
    }
    /* liveness, backwards from the output; readers of live nodes */
    I->v[I->output_value].live = 1;
    I->v[I->output_value].readers = 1;
    for (size_t i = g->n_node; i-- > 0;) {
        const Onnx__NodeProto *n = g->node[i];
        for (size_t k = 0; k < n->n_output; k++) {
            size_t vi = value_of(I, str(n->output[k]));
            I->ni[i].live |= vi != SIZE_MAX && I->v[vi].live;
        }
        if (!I->ni[i].live) {
            continue;
        }
        for (size_t k = 0; k < n->n_input; k++) {
            size_t vi = value_of(I, str(n->input[k]));
            if (vi == SIZE_MAX) {
                continue; /* optional or missing: the operator says */
            }
            I->v[vi].live = 1;
            I->v[vi].readers++;
            I->v[vi].reader = i;
        }
    }
    find_gelu(I);
    find_shape_reshape(I);
    find_matmul_bias(I);
    return MEMEST_OK;
}

/* ---- Text, parse, weights ----------------------------------------------- */

struct buf {
    char *s;
    size_t len;
    size_t cap;
};

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static int buf_printf(struct buf *b, const char *fmt, ...)
{
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(b->s ? b->s + b->len : NULL, b->s ? b->cap - b->len : 0,
                  fmt, ap);
    va_end(ap);
    if (n < 0) {
        return MEMEST_E_NOMEM;
    }
    if (b->s == NULL || (size_t)n >= b->cap - b->len) {
        size_t cap = b->cap ? b->cap : 4096;
        char *g;
        while ((size_t)n >= cap - b->len) {
            cap *= 2;
        }
        g = realloc(b->s, cap);
        if (g == NULL) {
            return MEMEST_E_NOMEM;
        }
        b->s = g;
        b->cap = cap;
        va_start(ap, fmt);
        vsnprintf(b->s + b->len, b->cap - b->len, fmt, ap);
        va_end(ap);
    }
    b->len += (size_t)n;
    return MEMEST_OK;
}

static void shape_of_input(const struct value *v, char *buf, size_t cap)
{
    size_t off = 0;
    for (unsigned d = 1; d < v->rank && off < cap; d++) {
        off += (size_t)snprintf(buf + off, cap - off, "%s%llu",
                                d > 1 ? "x" : "",
                                (unsigned long long)v->dim[d]);
    }
}

/* The description text; line_node[k] is the node of line k + 1
 * (SIZE_MAX for the name and input lines). */
static int render(struct imp *I, const char *model_name, struct buf *b,
                  size_t **line_node, size_t *nlines)
{
    size_t lines = 1 + I->ninputs + I->nl;
    size_t *ln = malloc(lines * sizeof *ln);
    size_t k = 0;
    int st;

    if (ln == NULL) {
        return nomem(I);
    }
    st = buf_printf(b, "name %s\n", model_name);
    ln[k++] = SIZE_MAX;
    for (size_t i = 0; st == MEMEST_OK && i < I->ninputs; i++) {
        char sh[MEMEST_SHAPE_TEXT_MAX];
        shape_of_input(&I->v[I->input_values[i]], sh, sizeof sh);
        st = buf_printf(b, "input %s name=%s\n", sh, I->inputs_text[i]);
        ln[k++] = SIZE_MAX;
    }
    for (size_t i = 0; st == MEMEST_OK && i < I->nl; i++) {
        const struct out_layer *L = &I->L[i];
        st = buf_printf(b, "%s%s%s name=%s in=%s%s%s\n", L->kind,
                        L->args[0] ? " " : "", L->args, L->name, L->in,
                        L->act != MEMEST_ACT_NONE ? " act=" : "",
                        L->act != MEMEST_ACT_NONE ? memest_act_name(L->act)
                                                  : "");
        ln[k++] = L->node;
    }
    if (st != MEMEST_OK) {
        free(ln);
        return nomem(I);
    }
    *line_node = ln;
    *nlines = lines;
    return MEMEST_OK;
}

/* Rewrite a parser diag about the generated text so that it names the
 * node: "node 'n' (Op): <message>", line = node index + 1. */
static void map_diag(struct imp *I, size_t node)
{
    char msg[sizeof I->diag->message];
    const Onnx__NodeProto *n;
    if (I->diag == NULL) {
        return;
    }
    memcpy(msg, I->diag->message, sizeof msg);
    snprintf(I->diag->source, sizeof I->diag->source, "%s", I->path);
    if (node == SIZE_MAX) {
        I->diag->line = 0;
        I->diag->column = 0;
        return;
    }
    n = I->g->node[node];
    I->diag->line = node < INT32_MAX ? (int)node + 1 : INT32_MAX;
    I->diag->column = 0;
    node_message(I->diag, n, msg);
}

static int build(struct imp *I, const char *model_name, memest_model **out)
{
    struct buf b = {NULL, 0, 0};
    size_t *line_node = NULL;
    size_t nlines = 0;
    struct memest_tensor *ts = NULL;
    memest_model *m = NULL;
    int st;

    st = render(I, model_name, &b, &line_node, &nlines);
    if (st != MEMEST_OK) {
        goto done;
    }
    st = memest_model_parse_buffer(b.s, b.len, I->path, &m, I->diag);
    if (st != MEMEST_OK) {
        size_t node = SIZE_MAX;
        if (I->diag != NULL && I->diag->line >= 1 &&
            (size_t)I->diag->line <= nlines) {
            node = line_node[I->diag->line - 1];
        }
        map_diag(I, node);
        goto done;
    }
    ts = calloc(I->nw ? I->nw : 1, sizeof *ts);
    if (ts == NULL) {
        st = nomem(I);
        goto done;
    }
    for (size_t i = 0; i < I->nw; i++) {
        ts[i].name = I->W[i].name;
        ts[i].rank = I->W[i].rank;
        for (unsigned d = 0; d < I->W[i].rank; d++) {
            ts[i].dim[d] = I->W[i].dim[d];
        }
        ts[i].data = I->W[i].data;
    }
    st = memest_model_set_weights(m, ts, I->nw, I->diag);
    if (st != MEMEST_OK) {
        /* name the node whose tensor the message mentions */
        size_t node = SIZE_MAX;
        for (size_t i = 0; I->diag != NULL && i < I->nw; i++) {
            if (strstr(I->diag->message, I->W[i].name) != NULL) {
                node = I->L[I->W[i].layer].node;
            }
        }
        map_diag(I, node);
        goto done;
    }
    model_set_fixed_batch(m, I->fixed_batch);
    *out = m;
    m = NULL;
done:
    memest_model_destroy(m);
    free(ts);
    free(line_node);
    free(b.s);
    return st;
}

static void imp_free(struct imp *I)
{
    for (size_t i = 0; i < I->nv; i++) {
        cval_free(&I->v[i].c);
    }
    for (size_t i = 0; i < I->ninputs; i++) {
        free(I->inputs_text[i]);
    }
    for (size_t i = 0; i < I->nl; i++) {
        free(I->L[i].name);
        free(I->L[i].in);
    }
    for (size_t i = 0; i < I->nw; i++) {
        free(I->W[i].name);
        free(I->W[i].owned);
    }
    free(I->v);
    free(I->ni);
    free(I->L);
    free(I->W);
    free(I->inputs_text);
    free(I->input_values);
    strmap_free(&I->vmap);
    strmap_free(&I->names);
    if (I->model != NULL) {
        onnx__model_proto__free_unpacked(I->model, NULL);
    }
}

/* The model's name: the graph's, else the file's base name, as one
 * token of the text. */
static void model_name_of(const struct imp *I, char *buf, size_t cap)
{
    const char *src = I->g->name && I->g->name[0] ? I->g->name : NULL;
    const char *slash = strrchr(I->path, '/');
    size_t n = 0;
    size_t len;

    if (src == NULL) {
        const char *base = slash ? slash + 1 : I->path;
        const char *dot = strrchr(base, '.');
        src = base;
        len = dot && dot != base ? (size_t)(dot - base) : strlen(base);
    } else {
        len = strlen(src);
    }
    for (size_t i = 0; i < len && n + 1 < cap; i++) {
        unsigned char ch = (unsigned char)src[i];
        buf[n++] = ch > ' ' && ch < 0x7f && ch != '#' ? (char)ch : '_';
    }
    if (n == 0) {
        n = (size_t)snprintf(buf, cap, "model");
    }
    buf[n] = '\0';
}

int memest_model_load_onnx(const char *path,
                           const struct memest_onnx_opts *opts,
                           memest_model **out, struct memest_diag *diag)
{
    struct imp I;
    uint8_t *data = NULL;
    size_t len = 0;
    char model_name[96];
    int st;

    if (out != NULL) {
        *out = NULL;
    }
    diag_start(diag, path ? path : "<onnx>");
    if (path == NULL || out == NULL) {
        return diag_fail(diag, MEMEST_E_INVALID,
                         "no model path or no place for the result");
    }
    memset(&I, 0, sizeof I);
    I.path = path;
    I.diag = diag;
    I.opts = opts;
    st = read_whole_file(path, "model file", MAX_FILE_BYTES, PB_LIMIT_TEXT,
                         (char **)&data, &len, diag);
    if (st != MEMEST_OK) {
        return st;
    }
    if (check_nesting(data, len, &onnx__model_proto__descriptor, 0) != 0) {
        free(data);
        return diag_fail(diag, MEMEST_E_PARSE,
                         "not an ONNX model: messages nested deeper than %d "
                         "levels", MAX_NESTING);
    }
    I.model = onnx__model_proto__unpack(NULL, len, data);
    free(data);
    if (I.model == NULL) {
        return diag_fail(diag, MEMEST_E_PARSE,
                         "not an ONNX model (malformed or truncated protocol "
                         "buffer)");
    }
    I.g = I.model->graph;
    if (I.g == NULL) {
        st = diag_fail(diag, MEMEST_E_PARSE, "the ONNX model has no graph");
        goto done;
    }
    I.opset = -1;
    for (size_t i = 0; i < I.model->n_opset_import; i++) {
        const Onnx__OperatorSetIdProto *o = I.model->opset_import[i];
        if (str_eq(o->domain, "") || str_eq(o->domain, "ai.onnx")) {
            I.opset = o->has_version ? o->version : 1;
        }
    }
    if (I.opset < 0) {
        st = diag_fail(diag, MEMEST_E_PARSE,
                       "the model imports no opset of the default domain "
                       "(ai.onnx)");
        goto done;
    }
    if (I.opset < 1 || I.opset > 17) {
        st = diag_fail(diag, MEMEST_E_PARSE,
                       "opset %lld of the default domain is not supported "
                       "(1 to 17 are, for the operators' forms listed in "
                       "libmemest/README.md)", (long long)I.opset);
        goto done;
    }
    if ((st = analyse(&I)) != MEMEST_OK) {
        goto done;
    }
    for (size_t i = 0; i < I.g->n_node; i++) {
        const Onnx__NodeProto *n = I.g->node[i];
        size_t o = n->n_output ? value_of(&I, str(n->output[0])) : SIZE_MAX;
        if (!I.ni[i].live || I.ni[i].skip ||
            (o != SIZE_MAX && I.v[o].kind == V_CONST)) {
            continue; /* folded, or a constant used where it is read */
        }
        if (!str_eq(n->domain, "") && !str_eq(n->domain, "ai.onnx")) {
            st = node_fail(&I, i, MEMEST_E_PARSE,
                           "operators of domain '%.40s' are not supported; "
                           "supported: %s", n->domain, supported_ops);
            goto done;
        }
        if ((st = translate_node(&I, i)) != MEMEST_OK) {
            goto done;
        }
    }
    if (I.nl == 0 || I.v[I.output_value].layer != I.nl - 1) {
        st = diag_fail(diag, MEMEST_E_PARSE,
                       "the graph output '%.60s' is %s",
                       I.v[I.output_value].name,
                       I.nl == 0 ? "not computed by any supported node"
                                : "not made by the last node");
        goto done;
    }
    model_name_of(&I, model_name, sizeof model_name);
    st = build(&I, model_name, out);
done:
    imp_free(&I);
    return st;
}
