/*
 * ONNX import: the protobuf (its nesting checked before protobuf-c
 * unpacks it), tensors, and the entry point memest_model_load_onnx().
 * onnx_internal.h describes how the importer's files divide the work.
 */
#include "onnx/onnx_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../alloc_rec.h" /* last: it wraps malloc and co. */

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
void cval_free(struct cval *c)
{
    free(c->owned);
    free(c->ints);
    free(c->nb);
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

const char *dtype_name(int t)
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
int decode_tensor(const Onnx__TensorProto *tp, struct cval *out,
                         char *why, size_t cap)
{
    int t = tp->has_data_type ? tp->data_type : 0;
    unsigned esize = dtype_size(t);
    uint64_t count = 1;
    size_t n;
    /* integer and bool tensors keep exact values, for shape arithmetic;
     * uint64 beyond 2^63 is not a shape */
    int is_int = t == ONNX__TENSOR_PROTO__DATA_TYPE__INT64 ||
                 t == ONNX__TENSOR_PROTO__DATA_TYPE__INT32 ||
                 t == ONNX__TENSOR_PROTO__DATA_TYPE__INT16 ||
                 t == ONNX__TENSOR_PROTO__DATA_TYPE__INT8 ||
                 t == ONNX__TENSOR_PROTO__DATA_TYPE__UINT32 ||
                 t == ONNX__TENSOR_PROTO__DATA_TYPE__UINT16 ||
                 t == ONNX__TENSOR_PROTO__DATA_TYPE__UINT8 ||
                 t == ONNX__TENSOR_PROTO__DATA_TYPE__BOOL;

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
        snprintf(why, cap, "cannot be held: out of memory (%zu bytes)",
                 (n ? n : 1) * sizeof(float));
        return MEMEST_E_NOMEM;
    }
    out->dtype = t;
    if (is_int) {
        out->ints = malloc((n ? n : 1) * sizeof(int64_t));
        if (out->ints == NULL) {
            cval_free(out);
            snprintf(why, cap, "cannot be held: out of memory (%zu bytes)",
                     (n ? n : 1) * sizeof(int64_t));
            return MEMEST_E_NOMEM;
        }
    }
    for (size_t i = 0; i < n; i++) {
        if (tp->has_raw_data) {
            const uint8_t *p = tp->raw_data.data + i * esize;
            out->owned[i] = (float)raw_value(t, p);
            if (out->ints != NULL) {
                out->ints[i] = t == ONNX__TENSOR_PROTO__DATA_TYPE__INT64
                                   ? (int64_t)le_bytes(p, 8)
                                   : (int64_t)raw_value(t, p);
            }
        } else {
            out->owned[i] = (float)typed_value(tp, t, i);
            if (out->ints != NULL) {
                out->ints[i] = t == ONNX__TENSOR_PROTO__DATA_TYPE__INT64
                                   ? tp->int64_data[i]
                                   : (int64_t)typed_value(tp, t, i);
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
        return diag_nomem(diag, "the tensor's name",
                          strlen(str(tp->name)) + 1);
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
        free(I->L[i].wscales);
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


static int generic_graph_name(const char *name)
{
    static const char *const generic[] = {"torch_jit", "torch-jit-export",
                                          "main_graph", "tf2onnx", "graph"};
    for (size_t i = 0; i < sizeof generic / sizeof generic[0]; i++) {
        if (strcmp(name, generic[i]) == 0) {
            return 1;
        }
    }
    return 0;
}

/* The model's name, as one token of the text: the graph's, unless it is
 * missing or an exporter's default ("torch_jit"); then the file's base
 * name, or its folder's when the file is called model.onnx (the layout of
 * ONNX's test cases: resnet8/model.onnx is "resnet8"). */
static void model_name_of(const struct imp *I, char *buf, size_t cap)
{
    const char *src = I->g->name && I->g->name[0] &&
                              !generic_graph_name(I->g->name)
                          ? I->g->name
                          : NULL;
    size_t n = 0;
    size_t len;

    if (src == NULL) {
        const char *slash = strrchr(I->path, '/');
        const char *base = slash ? slash + 1 : I->path;
        const char *dot = strrchr(base, '.');
        len = dot && dot != base ? (size_t)(dot - base) : strlen(base);
        src = base;
        if (len == 5 && strncmp(base, "model", 5) == 0 && slash != NULL &&
            slash != I->path) {
            /* the folder: from the slash before it, if any */
            const char *start = slash;
            while (start > I->path && start[-1] != '/') {
                start--;
            }
            if (start < slash) {
                src = start;
                len = (size_t)(slash - start);
            }
        }
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
    I.file_bytes = len;
    I.fold_left = MAX_FOLD_ELEMENTS + len;
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
    /* a pattern test that ran out of memory did not match: the graph it
     * saw is not the model's, so the import fails as the test did */
    if (I.peek_nomem) {
        st = nomem(&I);
        goto done;
    }
    I.translating = 1;
    for (size_t i = 0; i < I.g->n_node; i++) {
        const Onnx__NodeProto *n = I.g->node[i];
        size_t o = n->n_output ? value_of(&I, str(n->output[0])) : SIZE_MAX;
        if (!I.ni[i].live || I.ni[i].skip) {
            continue; /* nothing reads it, or a pattern covers it */
        }
        if (!str_eq(n->domain, "") && !str_eq(n->domain, "ai.onnx") &&
            !quant_domain_ok(str(n->domain), str(n->op_type))) {
            char head[96];
            snprintf(head, sizeof head, "operators of domain '%.40s' are "
                     "not supported; supported: ", n->domain);
            st = onnx_refuse_listing(&I, i, head);
            goto done;
        }
        if (o != SIZE_MAX && I.v[o].kind == V_CONST) {
            /* folded here, in the nodes' order, so that every constant
             * it reads is already known (no recursion) and a Shape's
             * input already has its shape */
            for (size_t k = 0; k < n->n_output; k++) {
                size_t vk = value_of(&I, str(n->output[k]));
                if (vk == SIZE_MAX || I.v[vk].decoded) {
                    continue;
                }
                if ((st = fold_output(&I, i, k, &I.v[vk].c)) != MEMEST_OK) {
                    goto done;
                }
                I.v[vk].decoded = 1;
            }
            continue;
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
    if (I.peek_nomem) {
        st = nomem(&I);
        goto done;
    }
    model_name_of(&I, model_name, sizeof model_name);
    st = build(&I, model_name, out);
    if (st == MEMEST_OK && (st = quant_apply(&I, *out)) != MEMEST_OK) {
        memest_model_destroy(*out);
        *out = NULL;
    }
done:
    imp_free(&I);
    return st;
}
