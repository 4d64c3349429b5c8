/*
 * ONNX import: names, diagnostics that name the node, attributes, and the
 * values a node reads (constants, decoded or folded on demand, and
 * activations, whose graph inputs become the model's inputs).
 */
#include "onnx/onnx_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../alloc_rec.h" /* last: it wraps malloc and co. */

static size_t strmap_slot(const struct strmap *m, const char *key)
{
    size_t mask = m->cap - 1;
    size_t i = (size_t)memest_hash_bytes(key, strlen(key)) & mask;
    while (m->keys[i] != NULL && strcmp(m->keys[i], key) != 0) {
        i = (i + 1) & mask;
    }
    return i;
}

size_t strmap_get(const struct strmap *m, const char *key)
{
    size_t i;
    if (m->cap == 0) {
        return SIZE_MAX;
    }
    i = strmap_slot(m, key);
    return m->keys[i] ? m->vals[i] : SIZE_MAX;
}

/* Insert or replace. MEMEST_E_NOMEM. */
int strmap_put(struct strmap *m, const char *key, size_t val)
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

void strmap_free(struct strmap *m)
{
    free(m->keys);
    free(m->vals);
    memset(m, 0, sizeof *m);
}

const char *node_name(const Onnx__NodeProto *n)
{
    return n->name && n->name[0] ? n->name : "(unnamed)";
}

/* "node 'name' (Op): tail" into the diag's message, truncated. */
void node_message(struct memest_diag *d, const Onnx__NodeProto *n,
                         const char *tail)
{
    int k = snprintf(d->message, sizeof d->message, "node '%.48s' (%.32s): ",
                     node_name(n), str(n->op_type));
    size_t off = k < 0 ? 0 : (size_t)k; /* at most 95: no truncation */
    size_t len = strnlen(tail, sizeof d->message - off - 1);
    memcpy(d->message + off, tail, len);
    d->message[off + len] = '\0';
}

int node_fail(struct imp *I, size_t node, int status,
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

int nomem(struct imp *I)
{
    /* the size alloc_rec.h recorded: the nomem() callers are many and
     * the allocation is often a few calls down (a name map's insert) */
    return diag_fail(I->diag, MEMEST_E_NOMEM,
                     "out of memory while importing the ONNX graph (%zu "
                     "bytes)",
                     memest_nomem_last);
}

/* A name the text format can carry: printable ASCII but for ',', '='
 * and '#' (each becomes '_'), at most 64 bytes, unique among the names
 * used so far; "input" is a layer name only for an input (`is_input`).
 * ONNX's names ("input.1", "onnx::Conv_0", "/conv1/Conv") pass
 * unchanged. */
int unique_name(struct imp *I, const char *want, const char *fallback,
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
    /* A name in use maps to the next suffix worth trying after it: every
     * base_k below it is taken (names are never released), so that n
     * nodes of one base (unnamed Convs all falling back to "Conv") are
     * named in O(n), not O(n^2) probes. */
    const size_t next = strmap_get(&I->names, base);
    snprintf(cand, sizeof cand, "%s", base);
    if (next != SIZE_MAX || (!is_input && strcmp(base, "input") == 0)) {
        size_t k = next != SIZE_MAX && next > 2 ? next : 2;
        for (;; k++) {
            snprintf(cand, sizeof cand, "%s_%zu", base, k);
            if (strmap_get(&I->names, cand) == SIZE_MAX) {
                break;
            }
        }
        /* an update of the existing key: base need not outlive the map */
        if (next != SIZE_MAX &&
            strmap_put(&I->names, base, k + 1) != MEMEST_OK) {
            return nomem(I);
        }
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

const Onnx__AttributeProto *attr(const Onnx__NodeProto *n,
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
int check_attrs(struct imp *I, size_t node, const char *allowed)
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

int attr_int(struct imp *I, size_t node, const char *name,
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

int attr_float(struct imp *I, size_t node, const char *name,
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
int attr_ints(struct imp *I, size_t node, const char *name,
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
const char *attr_str(const Onnx__NodeProto *n, const char *name,
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

const char *in_name(const Onnx__NodeProto *n, size_t slot)
{
    return slot < n->n_input ? str(n->input[slot]) : "";
}

size_t value_of(struct imp *I, const char *name)
{
    return name[0] ? strmap_get(&I->vmap, name) : SIZE_MAX;
}

int is_constant(const struct value *v)
{
    return v->kind == V_CONST ||
           (v->kind == V_GRAPH_INPUT && v->user != NULL);
}

/* Decode or fold the constant value vi, read by `node` as its `role`. */
static int decode_value(struct imp *I, size_t node, size_t vi,
                        const char *role)
{
    struct value *v = &I->v[vi];
    const char *nm = v->name;
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
        /* a folded node not reached yet (pattern matching asks during
         * the analysis); its own inputs may not be folded either */
        const Onnx__NodeProto *pn = I->g->node[v->producer];
        size_t k = 0;
        while (k < pn->n_output && !str_eq(pn->output[k], v->name)) {
            k++;
        }
        if (I->depth >= MAX_FOLD_DEPTH) {
            return node_fail(I, node, MEMEST_E_PARSE,
                             "the %s '%.60s' is folded from a chain of "
                             "more than %d constants", role, nm,
                             MAX_FOLD_DEPTH);
        }
        I->depth++;
        st = fold_output(I, v->producer, k, &v->c);
        I->depth--;
        if (st != MEMEST_OK) {
            return st;
        }
    }
    v->decoded = 1;
    return MEMEST_OK;
}

/*
 * The constant operand in `slot` of `node`: an initializer, a Constant
 * node's output or a graph input bound by opts->constants. A missing
 * operand, a graph input with no value and a computed tensor are errors
 * that name the operand.
 */
int get_const(struct imp *I, size_t node, size_t slot,
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
        int st = decode_value(I, node, vi, role);
        if (st != MEMEST_OK) {
            return st;
        }
    }
    *out = &v->c;
    return MEMEST_OK;
}

/* A scalar constant (one element, any rank), or an error. */
int get_scalar(struct imp *I, size_t node, size_t slot,
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
int peek_scalar(struct imp *I, const Onnx__NodeProto *n, size_t slot,
                       double *out)
{
    size_t vi = value_of(I, in_name(n, slot));
    struct value *v;

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
        struct memest_diag *keep = I->diag;
        int st;
        if (v->tp == NULL && v->producer == SIZE_MAX) {
            return 0;
        }
        /* quietly: a pattern that does not match is no error */
        I->diag = NULL;
        st = decode_value(I, v->tp ? 0 : v->producer, vi, "operand");
        I->diag = keep;
        if (st == MEMEST_E_NOMEM) {
            I->peek_nomem = 1; /* not "no match": the import stops */
        }
        if (st != MEMEST_OK) {
            return 0;
        }
    }
    if (v->c.count != 1) {
        return 0;
    }
    *out = v->c.f[0];
    return 1;
}

uint64_t per_sample(const struct value *v)
{
    uint64_t n = 1;
    for (unsigned d = 1; d < v->rank; d++) {
        n *= v->dim[d]; /* bounded by MAX_ELEMENTS when the shape was set */
    }
    return n;
}

/* Give a graph input its shape and make it a model input. */
int make_model_input(struct imp *I, size_t node, size_t vi)
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
    if (v->batch_axis != 0 && sh->n_dim != v->batch_axis + 2 &&
        sh->n_dim != v->batch_axis + 1) {
        /* [T, N, D] of an LSTM, [K, N] of a Gemm's transposed A */
        return node_fail(I, node, MEMEST_E_PARSE,
                         "the graph input '%.60s' has rank %zu; with its "
                         "batch on axis %u it must be [T, N, D] (an "
                         "LSTM/GRU's time-major X) or [K, N] (a Gemm's "
                         "transposed A)", v->name, sh->n_dim, v->batch_axis);
    }
    v->rank = (unsigned)sh->n_dim;
    for (unsigned d = 0; d < v->rank; d++) {
        const Onnx__TensorShapeProto__Dimension *dm = sh->dim[d];
        int has = dm->value_case ==
                  ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
        /* held batch first: a time-major [T, N, D] (batch_axis 1) is held
         * as N x T x D, the file's axis d at held axis `at` */
        const unsigned at = d == v->batch_axis ? 0
                            : d < v->batch_axis ? d + 1 : d;
        if (d == v->batch_axis) {
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
                             "symbolic; only the batch may be (dimension "
                             "%u%s)", d, v->name, v->batch_axis,
                             v->batch_axis == 0 ? ""
                             : ": the input is read with its batch second, "
                               "an LSTM/GRU's time-major [T, N, D] or a "
                               "Gemm's transposed A [K, N]");
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
        v->dim[at] = (uint64_t)dm->dim_value;
    }
    if (v->rank == 3 && (str_eq(I->g->node[node]->op_type, "Conv") ||
                         str_eq(I->g->node[node]->op_type, "MaxPool") ||
                         str_eq(I->g->node[node]->op_type, "AveragePool"))) {
        /* N x C x L read by a 1-D convolution or pool: a signal, held as
         * N x C x 1 x L (struct value's sig) */
        v->dim[3] = v->dim[2];
        v->dim[2] = 1;
        v->rank = 4;
        v->sig = 1;
    }
    v->shaped = 1;
    v->layer = SIZE_MAX;
    /* the lists grown first: the name unique_name() makes is theirs to
     * own, and nothing else would free it if they could not take it */
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
    st = unique_name(I, v->name, "x", 1, (char **)&v->ref);
    if (st != MEMEST_OK) {
        I->input_values = grown_vals;
        return st;
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
int get_act(struct imp *I, size_t node, size_t slot, size_t *out)
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
int need_rank(struct imp *I, size_t node, const struct value *x,
                     unsigned rank, const char *what)
{
    if (x->rank != rank) {
        return node_fail(I, node, MEMEST_E_PARSE,
                         "its input '%.60s' has rank %u; supported is %s",
                         x->name, x->rank, what);
    }
    return MEMEST_OK;
}
