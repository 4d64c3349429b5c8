/*
 * The model description parser, the presets and shape inference.
 *
 * Parsing is one pass over the text: each line is cut into tokens in place
 * (no copies of the text), checked, and appended to the model, whose shapes
 * and counts are inferred as the layer arrives. Layer names go into a hash
 * set so that duplicate checks stay linear in the number of layers.
 *
 * The parser knows no operator: a line's keyword, keys, inputs, shape
 * inference and automatic name all come from the operator's definition
 * (op.h, src/ops/).
 */
#include "internal.h"
#include "op.h"
#include "utf8.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "alloc_rec.h" /* last: it wraps malloc and co. */


struct ctx {
    struct memest_diag *diag;
    const char *source;
    int line;
};

#if defined(__GNUC__)
__attribute__((format(printf, 5, 6)))
#endif
static int fail(struct ctx *c, int status, int line, int col,
                const char *fmt, ...)
{
    va_list ap;

    if (c->diag == NULL) {
        return status;
    }
    c->diag->line = line;
    c->diag->column = line > 0 ? col : 0;
    va_start(ap, fmt);
    vsnprintf(c->diag->message, sizeof c->diag->message, fmt, ap);
    va_end(ap);
    return status;
}

/* An allocation of `bytes` for `what` failed: the one wording of the
 * library's out-of-memory messages (memest_diag_nomem). */
static int fail_nomem(struct ctx *c, int line, int col, size_t bytes,
                      const char *what)
{
    return fail(c, MEMEST_E_NOMEM, line, col,
                "out of memory: %s (%zu bytes)", what, bytes);
}

static void set_source(struct memest_diag *diag, const char *source)
{
    if (diag == NULL) {
        return;
    }
    memset(diag, 0, sizeof *diag);
    snprintf(diag->source, sizeof diag->source, "%s", source);
}

/* A column `off` bytes right of `col`, saturating rather than wrapping
 * on absurdly long lines. */
static int col_add(int col, size_t off)
{
    if (off > (size_t)(INT32_MAX - col)) {
        return INT32_MAX;
    }
    return col + (int)off;
}

/* Split t at each character of seps into parts, each with its column:
 * the first max are stored in part, *n counts them all (more than max
 * when t has more), so that each caller says what it expected. */
static void split_tok(const struct op_tok *t, const char *seps,
                      struct op_tok *part, size_t max, size_t *n)
{
    size_t start = 0;

    *n = 0;
    for (size_t i = 0; i <= t->n; i++) {
        if (i < t->n && (t->s[i] == '\0' || !strchr(seps, t->s[i]))) {
            continue;
        }
        if (*n < max) {
            part[*n].s = t->s + start;
            part[*n].n = i - start;
            part[*n].col = col_add(t->col, start);
        }
        (*n)++;
        start = i + 1;
    }
}

static int tok_is(const struct op_tok *t, const char *word)
{
    size_t n = strlen(word);
    return t->n == n && memcmp(t->s, word, n) == 0;
}

/* Print at most 40 bytes of a token so messages stay readable. */
#define TOKFMT "%.*s%s"
#define TOKARG(t) (int)((t)->n > 40 ? 40 : (t)->n), (t)->s, \
    ((t)->n > 40 ? "..." : "")

/* ---- Model storage ------------------------------------------------------ */

/*
 * The names the parser has seen: an open-addressing set of tensor ids
 * (slot = id + 1, 0 = free), keyed by the tensor's name. Inputs come
 * before layers, so tensor t is input t or layer t - input_count.
 */
struct names {
    size_t *slots;
    size_t cap;
};

static const char *tensor_name(const struct memest_model *m, size_t t)
{
    return t < m->input_count ? m->inputs[t].name
                              : m->layers[t - m->input_count].name;
}

static int tensor_line(const struct memest_model *m, size_t t)
{
    return t < m->input_count ? m->inputs[t].line
                              : m->layers[t - m->input_count].line;
}

/* The tensor with this name, or SIZE_MAX. */
static size_t find_name(const struct names *nm, const struct memest_model *m,
                        const char *s, size_t n)
{
    size_t mask;
    size_t i;

    if (nm->cap == 0) {
        return SIZE_MAX;
    }
    mask = nm->cap - 1;
    i = (size_t)memest_hash_bytes(s, n) & mask;
    while (nm->slots[i] != 0) {
        const char *name = tensor_name(m, nm->slots[i] - 1);
        if (strlen(name) == n && memcmp(name, s, n) == 0) {
            return nm->slots[i] - 1;
        }
        i = (i + 1) & mask;
    }
    return SIZE_MAX;
}

static void insert_slot(size_t *slots, size_t cap, const char *name,
                        size_t id)
{
    size_t mask = cap - 1;
    size_t i = (size_t)memest_hash_bytes(name, strlen(name)) & mask;
    while (slots[i] != 0) {
        i = (i + 1) & mask;
    }
    slots[i] = id + 1;
}

/* Make room in the set for one more name (tensors = the current count). */
static int names_reserve(struct names *nm, const struct memest_model *m,
                         size_t *bytes)
{
    const size_t tensors = m->input_count + m->count;
    if ((tensors + 1) * 2 > nm->cap) {
        size_t cap = nm->cap ? nm->cap * 2 : 32;
        size_t *slots = calloc(cap, sizeof *slots);
        if (slots == NULL) {
            *bytes = cap * sizeof *slots;
            return MEMEST_E_NOMEM;
        }
        for (size_t t = 0; t < tensors; t++) {
            insert_slot(slots, cap, tensor_name(m, t), t);
        }
        free(nm->slots);
        nm->slots = slots;
        nm->cap = cap;
    }
    return MEMEST_OK;
}

/* Make room for one more layer. */
static int reserve_layer(struct memest_model *m, size_t *bytes)
{
    if (m->count == m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 16;
        struct memest_layer *l;
        struct layer_extra *x;
        if (cap > SIZE_MAX / sizeof *x) {
            *bytes = SIZE_MAX;
            return MEMEST_E_NOMEM;
        }
        l = realloc(m->layers, cap * sizeof *l);
        if (l == NULL) {
            *bytes = cap * sizeof *l;
            return MEMEST_E_NOMEM;
        }
        m->layers = l;
        x = realloc(m->extra, cap * sizeof *x);
        if (x == NULL) {
            *bytes = cap * sizeof *x;
            return MEMEST_E_NOMEM;
        }
        m->extra = x;
        m->cap = cap;
    }
    return MEMEST_OK;
}

static struct memest_model *model_new(void)
{
    return calloc(1, sizeof(struct memest_model));
}

static char *dup_n(const char *s, size_t n)
{
    char *d = malloc(n + 1);
    if (d != NULL) {
        memcpy(d, s, n);
        d[n] = '\0';
    }
    return d;
}

static int set_model_name(struct memest_model *m, const char *s, size_t n)
{
    char *name = dup_n(s, n);
    if (name == NULL) {
        return MEMEST_E_NOMEM;
    }
    free(m->name);
    m->name = name;
    return MEMEST_OK;
}

static int add_input(struct ctx *c, struct memest_model *m, struct names *nm,
                     const struct memest_shape *shape,
                     const struct op_tok *name, int col)
{
    uint64_t e = 1;
    const char *nm_s = name && name->s ? name->s : "input";
    const size_t nm_n = name && name->s ? name->n : 5;
    size_t dup;
    struct model_input in;

    memset(&in, 0, sizeof in);
    for (unsigned i = 0; i < shape->rank; i++) {
        if (mul_ovf(e, shape->dim[i], &e)) {
            return fail(c, MEMEST_E_OVERFLOW, c->line, col,
                        "input has more elements than fit in 64 bits");
        }
    }
    if (e > MEMEST_MAX_ELEMENTS) {
        char text[MEMEST_SHAPE_TEXT_MAX];
        memest_shape_format(shape, text, sizeof text);
        return fail(c, MEMEST_E_RANGE, c->line, col,
                    "input %s has %llu elements per sample (1 to %llu are "
                    "supported, as for an ONNX model)", text,
                    (unsigned long long)e,
                    (unsigned long long)MEMEST_MAX_ELEMENTS);
    }
    dup = find_name(nm, m, nm_s, nm_n);
    if (dup != SIZE_MAX) {
        return fail(c, MEMEST_E_PARSE, c->line,
                    name && name->s ? name->col : col,
                    "duplicate name '%.*s' (first used on line %d); give "
                    "each input its own name=",
                    (int)(nm_n > 60 ? 60 : nm_n), nm_s,
                    tensor_line(m, dup));
    }
    if (m->input_count == m->input_cap) {
        size_t cap = m->input_cap ? m->input_cap * 2 : 4;
        struct model_input *grown = realloc(m->inputs, cap * sizeof *grown);
        if (grown == NULL) {
            return fail_nomem(c, c->line, col, cap * sizeof *grown,
                              "the model's inputs");
        }
        m->inputs = grown;
        m->input_cap = cap;
    }
    size_t bytes = 0;
    if (names_reserve(nm, m, &bytes) != MEMEST_OK) {
        return fail_nomem(c, c->line, col, bytes, "the table of names");
    }
    in.name = dup_n(nm_s, nm_n);
    if (in.name == NULL) {
        return fail_nomem(c, c->line, col, nm_n + 1, "an input's name");
    }
    in.shape = *shape;
    in.elements = e;
    in.line = c->line;
    m->inputs[m->input_count] = in;
    insert_slot(nm->slots, nm->cap, in.name, m->input_count);
    m->input_count++;
    return MEMEST_OK;
}

/* Per-family counters for automatic names, indexed by the first kind of
 * the family: kinds whose definitions have one prefix share a counter
 * ("pool1", "pool2" over max and avg pools). */
struct counters {
    uint64_t n[MEMEST_KIND_COUNT];
};

static uint64_t *family_counter(struct counters *k, enum memest_kind kind)
{
    const char *prefix = op_def(kind)->prefix;
    for (unsigned f = 0; f < (unsigned)kind; f++) {
        const struct memest_op_def *d = op_def((enum memest_kind)f);
        if (d != NULL && strcmp(d->prefix, prefix) == 0) {
            return &k->n[f];
        }
    }
    return &k->n[kind];
}

/* Resolve the layer's inputs to tensor ids in ids[0..*n-1]. */
static int resolve_inputs(struct ctx *c, const struct memest_model *m,
                          const struct names *nm,
                          const struct memest_op_def *def,
                          const struct op_spec *sp, size_t *ids, size_t *n)
{
    const size_t tensors = m->input_count + m->count;
    /* a binary layer with a constant operand reads one tensor */
    const int multi = def->multi_input && sp->scalar_side == 0;

    if (sp->nin == 0) {
        if (multi) {
            return fail(c, MEMEST_E_PARSE, c->line, sp->col_kind,
                        "%s needs the names of two or more inputs, e.g. "
                        "'%s'", sp->kind_text, def->example);
        }
        if (m->count == 0 && m->input_count > 1) {
            return fail(c, MEMEST_E_PARSE, c->line, sp->col_kind,
                        "the model has %zu inputs: name the one this layer "
                        "reads with in=", m->input_count);
        }
        ids[0] = tensors - 1;
        *n = 1;
        return MEMEST_OK;
    }
    if (multi && sp->nin < 2) {
        return fail(c, MEMEST_E_PARSE, c->line, sp->col_in,
                    "%s needs two or more inputs, got one", sp->kind_text);
    }
    if (!multi && sp->nin > 1) {
        return fail(c, MEMEST_E_PARSE, c->line, sp->col_in,
                    "%s reads one input, got %zu", sp->kind_text, sp->nin);
    }
    for (size_t i = 0; i < sp->nin; i++) {
        const struct op_tok *t = &sp->in[i];
        size_t id = find_name(nm, m, t->s, t->n);
        if (id == SIZE_MAX) {
            return fail(c, MEMEST_E_PARSE, c->line, t->col,
                        "unknown input '" TOKFMT "': no input or earlier "
                        "layer has that name (layers run in the order "
                        "written, so a layer can only read those above it)",
                        TOKARG(t));
        }
        ids[i] = id;
    }
    *n = sp->nin;
    return MEMEST_OK;
}

/* Infer the layer's shapes and counts and append it to the model. */
static int add_layer(struct ctx *c, struct memest_model *m, struct names *nm,
                     struct counters *counters, const struct op_spec *sp)
{
    const struct memest_op_def *def = op_def(sp->kind);
    struct memest_layer L;
    size_t ids[OP_MAX_INPUTS];
    const struct memest_shape *shapes[OP_MAX_INPUTS];
    const char *names[OP_MAX_INPUTS];
    struct op_infer x;
    size_t nids = 0;
    uint64_t *counter;
    char autoname[48];
    const char *name;
    size_t name_len;
    size_t dup;
    int st;

    if (def == NULL || def->infer == NULL) {
        /* the parser makes layers only of kinds it found a keyword for:
         * this is a kind added to MEMEST_KINDS without its operator */
        return fail(c, MEMEST_E_PARSE, c->line, sp->col_kind,
                    "%s: layer kind %d has no operator definition",
                    sp->kind_text, (int)sp->kind);
    }
    st = resolve_inputs(c, m, nm, def, sp, ids, &nids);
    if (st != MEMEST_OK) {
        return st;
    }
    for (size_t i = 0; i < nids; i++) {
        shapes[i] = model_tensor_shape(m, ids[i]);
        names[i] = tensor_name(m, ids[i]);
    }
    memset(&L, 0, sizeof L);
    L.kind = sp->kind;
    L.act = sp->act;
    L.act_alpha = sp->act_alpha;
    L.act_beta = sp->act_beta;
    L.in_shape = *shapes[0];
    L.groups = 1;
    L.line = c->line;
    counter = family_counter(counters, sp->kind);
    (*counter)++;

    x.sp = sp;
    x.nin = nids;
    x.in = shapes;
    x.in_name = names;
    x.diag = c->diag;
    x.line = c->line;
    st = def->infer(&x, &L);
    if (st != MEMEST_OK) {
        return st;
    }
    /* a softmax fused after a layer normalises its output's features
     * (channels of C x H x W); a standalone one set its axis in infer() */
    if ((L.act == MEMEST_ACT_SOFTMAX || L.act == MEMEST_ACT_LOGSOFTMAX) &&
        L.kind != MEMEST_KIND_ACTIVATION) {
        L.axis = op_softmax_default_axis(&L.out_shape);
    }

    L.output_elements = 1;
    for (unsigned i = 0; i < L.out_shape.rank; i++) {
        if (mul_ovf(L.output_elements, L.out_shape.dim[i],
                    &L.output_elements)) {
            return op_overflow(&x, "the output size");
        }
    }
    if (L.output_elements > MEMEST_MAX_ELEMENTS) {
        char text[MEMEST_SHAPE_TEXT_MAX];
        memest_shape_format(&L.out_shape, text, sizeof text);
        return fail(c, MEMEST_E_RANGE, c->line, sp->col_kind,
                    "%s: its output %s has %llu elements per sample (1 to "
                    "%llu are supported, as for an ONNX model)",
                    sp->kind_text, text,
                    (unsigned long long)L.output_elements,
                    (unsigned long long)MEMEST_MAX_ELEMENTS);
    }
    if (add_ovf(L.weight_count, L.bias_count, &L.parameter_count)) {
        return op_overflow(&x, "the parameter count");
    }
    /* as an ONNX initializer would be (internal.h's limits) */
    if (L.weight_count > MEMEST_MAX_ELEMENTS ||
        L.bias_count > MEMEST_MAX_ELEMENTS) {
        return fail(c, MEMEST_E_RANGE, c->line, sp->col_kind,
                    "%s: its weight has %llu elements (1 to %llu are "
                    "supported, as for an ONNX model)",
                    sp->kind_text,
                    (unsigned long long)(L.weight_count > L.bias_count
                                             ? L.weight_count
                                             : L.bias_count),
                    (unsigned long long)MEMEST_MAX_ELEMENTS);
    }

    if (sp->name.s != NULL) {
        name = sp->name.s;
        name_len = sp->name.n;
    } else {
        snprintf(autoname, sizeof autoname, "%s%llu", def->prefix,
                 (unsigned long long)*counter);
        name = autoname;
        name_len = strlen(autoname);
    }
    dup = find_name(nm, m, name, name_len);
    if (dup != SIZE_MAX) {
        if (sp->name.s != NULL) {
            return fail(c, MEMEST_E_PARSE, c->line, sp->name.col,
                        "duplicate layer name '%.*s' (first used on line "
                        "%d)", (int)(name_len > 60 ? 60 : name_len), name,
                        tensor_line(m, dup));
        }
        return fail(c, MEMEST_E_PARSE, c->line, sp->col_kind,
                    "the automatic name '%s' is already used on line %d; "
                    "give this layer a name=", name, tensor_line(m, dup));
    }
    size_t bytes = 0;
    if (reserve_layer(m, &bytes) != MEMEST_OK) {
        return fail_nomem(c, c->line, sp->col_kind, bytes,
                          "the table of layers");
    }
    if (names_reserve(nm, m, &bytes) != MEMEST_OK) {
        return fail_nomem(c, c->line, sp->col_kind, bytes,
                          "the table of names");
    }
    {
        char *copy = dup_n(name, name_len);
        size_t *in_ids = malloc(nids * sizeof *in_ids);
        if (copy == NULL || in_ids == NULL) {
            free(copy);
            free(in_ids);
            return fail_nomem(c, c->line, sp->col_kind,
                              copy == NULL ? name_len + 1
                                           : nids * sizeof *in_ids,
                              copy == NULL ? "a layer's name"
                                           : "a layer's inputs");
        }
        memcpy(in_ids, ids, nids * sizeof *in_ids);
        L.name = copy;
        L.inputs = in_ids;
        L.input_count = nids;
    }
    m->layers[m->count] = L;
    memset(&m->extra[m->count], 0, sizeof m->extra[m->count]);
    m->extra[m->count].declared_bias = L.has_bias;
    insert_slot(nm->slots, nm->cap, L.name, m->input_count + m->count);
    m->count++;
    return MEMEST_OK;
}

/*
 * After the last line: fold each batch norm into the layer it reads when
 * that layer absorbs batch norms (its definition's absorbs_bn: dense,
 * conv2d), nothing else reads it and it has no activation (the
 * batch norm's own act= moves to it), drop the folded layers and renumber
 * the tensors; then check that every tensor but the output has a reader
 * and sum the model's totals.
 */
static int finalize(struct ctx *c, struct memest_model *m)
{
    const size_t I = m->input_count;
    const size_t T = I + m->count;
    size_t *readers = calloc(T, sizeof *readers);
    size_t *rep = malloc(T * sizeof *rep);   /* tensor -> tensor it became */
    size_t *newid = malloc(T * sizeof *newid);
    int st = MEMEST_OK;
    size_t kept = 0;

    if (readers == NULL || rep == NULL || newid == NULL) {
        /* three tables of T entries; the size is one of them */
        st = fail_nomem(c, 0, 0, T * sizeof *rep,
                        "the tensor tables of the folding pass");
        goto out;
    }
    for (size_t t = 0; t < T; t++) {
        rep[t] = t;
    }
    for (size_t i = 0; i < m->count; i++) {
        for (size_t k = 0; k < m->layers[i].input_count; k++) {
            readers[m->layers[i].inputs[k]]++;
        }
    }
    for (size_t i = 0; i < m->count; i++) {
        struct memest_layer *B = &m->layers[i];
        struct memest_layer *P;
        size_t src;
        /* inputs of earlier folds are final: rep only points backwards */
        for (size_t k = 0; k < B->input_count; k++) {
            ((size_t *)B->inputs)[k] = rep[B->inputs[k]];
        }
        if (B->kind != MEMEST_KIND_BATCHNORM) {
            continue;
        }
        src = B->inputs[0];
        if (src < I) {
            continue;
        }
        P = &m->layers[src - I];
        /* a dense over a T x D sequence has its units along D, the batch
         * norm its channels along T: not the same axis, nothing folds */
        if (op_def(P->kind) == NULL || !op_def(P->kind)->absorbs_bn ||
            P->out_shape.rank == 2 ||
            P->act != MEMEST_ACT_NONE || P->folded_bn != NULL ||
            readers[src] != 1) {
            continue;
        }
        P->act = B->act;
        P->axis = B->axis; /* a softmax's, on the same output shape */
        P->act_alpha = B->act_alpha;
        P->act_beta = B->act_beta;
        P->folded_bn = B->name;
        P->bn_epsilon = B->bn_epsilon;
        P->has_bias = 1;
        P->bias_count = P->units;
        P->parameter_count = P->weight_count + P->bias_count;
        B->name = NULL;
        readers[src] = readers[I + i];
        rep[I + i] = src;
        B->kind = MEMEST_KIND_INPUT; /* marks the layer as folded */
    }
    /* renumber: inputs keep their ids, kept layers close up */
    for (size_t t = 0; t < I; t++) {
        newid[t] = t;
    }
    for (size_t i = 0; i < m->count; i++) {
        if (m->layers[i].kind == MEMEST_KIND_INPUT) {
            free((size_t *)m->layers[i].inputs);
            continue;
        }
        newid[I + i] = I + kept;
        if (kept != i) {
            m->layers[kept] = m->layers[i];
            m->extra[kept] = m->extra[i];
        }
        kept++;
    }
    m->count = kept;
    for (size_t i = 0; i < m->count; i++) {
        size_t *ins = (size_t *)m->layers[i].inputs;
        for (size_t k = 0; k < m->layers[i].input_count; k++) {
            ins[k] = newid[ins[k]];
        }
    }
    /* every tensor but the output is read */
    memset(readers, 0, T * sizeof *readers);
    for (size_t i = 0; i < m->count; i++) {
        for (size_t k = 0; k < m->layers[i].input_count; k++) {
            readers[m->layers[i].inputs[k]]++;
        }
    }
    for (size_t t = 0; t + 1 < I + m->count; t++) {
        if (readers[t] == 0) {
            if (t < I) {
                st = fail(c, MEMEST_E_SHAPE, m->inputs[t].line, 1,
                          "input '%s' is read by no layer",
                          m->inputs[t].name);
            } else {
                const struct memest_layer *L = &m->layers[t - I];
                st = fail(c, MEMEST_E_SHAPE, L->line, 1,
                          "the output of '%s' is read by no layer: an "
                          "unused branch (only the last layer's output is "
                          "the model's output)", L->name);
            }
            goto out;
        }
    }
    m->parameter_count = 0;
    m->macs_per_sample = 0;
    m->activation_elements = 0;
    for (size_t t = 0; t < I; t++) {
        if (add_ovf(m->activation_elements, m->inputs[t].elements,
                    &m->activation_elements)) {
            st = fail(c, MEMEST_E_OVERFLOW, m->inputs[t].line, 1,
                      "the model's activation count does not fit in 64 "
                      "bits");
            goto out;
        }
    }
    for (size_t i = 0; i < m->count; i++) {
        const struct memest_layer *L = &m->layers[i];
        const char *what = NULL;
        if (add_ovf(m->parameter_count, L->parameter_count,
                    &m->parameter_count)) {
            what = "parameter count";
        } else if (add_ovf(m->macs_per_sample, L->macs_per_sample,
                           &m->macs_per_sample)) {
            what = "MAC count";
        } else if (add_ovf(m->activation_elements, L->output_elements,
                           &m->activation_elements) ||
                   add_ovf(m->activation_elements, L->work_elements,
                           &m->activation_elements)) {
            /* an attention's score matrix is activation memory too */
            what = "activation count";
        }
        if (what != NULL) {
            st = fail(c, MEMEST_E_OVERFLOW, L->line, 1,
                      "%s: the model's %s does not fit in 64 bits", L->name,
                      what);
            goto out;
        }
        if (m->parameter_count > MEMEST_MAX_PARAMETERS) {
            st = fail(c, MEMEST_E_RANGE, L->line, 1,
                      "%s: the model has %llu parameters up to here (at "
                      "most %llu are supported, what the largest ONNX file "
                      "holds)", L->name,
                      (unsigned long long)m->parameter_count,
                      (unsigned long long)MEMEST_MAX_PARAMETERS);
            goto out;
        }
    }
out:
    free(readers);
    free(rep);
    free(newid);
    return st;
}

/* ---- Tokens and values -------------------------------------------------- */

/*
 * Parse an unsigned decimal. min is the smallest allowed value (0 or 1).
 * `what` names the value in messages.
 */
static int parse_u64(struct ctx *c, const struct op_tok *t, uint64_t min,
                     const char *what, uint64_t *out)
{
    uint64_t v = 0;
    size_t i = 0;

    if (t->n == 0) {
        return fail(c, MEMEST_E_PARSE, c->line, t->col,
                    "missing value for %s", what);
    }
    if (t->s[0] == '-' || t->s[0] == '+') {
        int digits = t->n > 1;
        for (i = 1; i < t->n && digits; i++) {
            digits = t->s[i] >= '0' && t->s[i] <= '9';
        }
        if (digits && t->s[0] == '-') {
            return fail(c, MEMEST_E_RANGE, c->line, t->col,
                        "%s must be %s, got " TOKFMT, what,
                        min ? "positive" : "zero or positive", TOKARG(t));
        }
        return fail(c, MEMEST_E_PARSE, c->line, t->col,
                    "%s: '" TOKFMT "' is not a whole number", what,
                    TOKARG(t));
    }
    for (i = 0; i < t->n; i++) {
        /* A range test, not (unsigned)(ch - '0') > 9: that wraps below '0',
         * which the integer-checked build refuses. */
        const unsigned char ch = (unsigned char)t->s[i];
        if (ch < '0' || ch > '9') {
            return fail(c, MEMEST_E_PARSE, c->line, t->col,
                        "%s: '" TOKFMT "' is not a whole number", what,
                        TOKARG(t));
        }
    }
    for (i = 0; i < t->n; i++) {
        unsigned d = (unsigned)(unsigned char)t->s[i] - '0';
        if (mul_ovf(v, 10, &v) || add_ovf(v, d, &v)) {
            return fail(c, MEMEST_E_RANGE, c->line, t->col,
                        "%s: " TOKFMT " is too large (more than 64 bits "
                        "hold)", what, TOKARG(t));
        }
    }
    if (v < min) {
        return fail(c, MEMEST_E_RANGE, c->line, t->col,
                    "%s must be at least %llu, got " TOKFMT, what,
                    (unsigned long long)min, TOKARG(t));
    }
    *out = v;
    return MEMEST_OK;
}

/* "N", "AxB" or "CxHxW". */
static int parse_shape(struct ctx *c, const struct op_tok *t,
                       struct memest_shape *out)
{
    struct memest_shape sh;
    struct op_tok part[3];
    size_t n;

    memset(&sh, 0, sizeof sh);
    split_tok(t, "xX", part, 3, &n);
    for (size_t k = 0; k < n && k < 3; k++) {
        if (part[k].n == 0) {
            return fail(c, MEMEST_E_PARSE, c->line, part[k].col,
                        "input shape '" TOKFMT "' has an empty "
                        "dimension; write N or CxHxW", TOKARG(t));
        }
        int st = parse_u64(c, &part[k], 1, "input dimension",
                           &sh.dim[sh.rank]);
        if (st != MEMEST_OK) {
            return st;
        }
        sh.rank++;
    }
    if (n > 3) {
        return fail(c, MEMEST_E_PARSE, c->line, t->col,
                    "input shape '" TOKFMT "' has more than three "
                    "dimensions; write N or CxHxW", TOKARG(t));
    }
    *out = sh;
    return MEMEST_OK;
}

/* "N" (both the same) or "HxW", each at least min. */
static int parse_pair(struct ctx *c, const struct op_tok *t, uint64_t min,
                      const char *what, uint64_t *h, uint64_t *w)
{
    const char *x = memchr(t->s, 'x', t->n);
    struct op_tok a = *t;
    struct op_tok b;
    int st;

    if (x == NULL) {
        st = parse_u64(c, t, min, what, h);
        *w = *h;
        return st;
    }
    a.n = (size_t)(x - t->s);
    b.s = x + 1;
    b.n = t->n - a.n - 1;
    b.col = col_add(t->col, a.n + 1);
    st = parse_u64(c, &a, min, what, h);
    if (st == MEMEST_OK) {
        st = parse_u64(c, &b, min, what, w);
    }
    return st;
}

/* p=N, p=HxW (top and bottom H, left and right W) or p=top,left,bottom,
 * right. */
static int parse_pads(struct ctx *c, const struct op_tok *t, struct op_spec *sp)
{
    uint64_t v[4];
    struct op_tok part[4];
    size_t n;

    if (memchr(t->s, ',', t->n) == NULL) {
        int st = parse_pair(c, t, 0, "padding p", &sp->pt, &sp->pl);
        sp->pb = sp->pt;
        sp->pr = sp->pl;
        return st;
    }
    split_tok(t, ",", part, 4, &n);
    for (size_t k = 0; k < n && k < 4; k++) {
        int st = parse_u64(c, &part[k], 0, "padding p", &v[k]);
        if (st != MEMEST_OK) {
            return st;
        }
    }
    if (n > 4) {
        return fail(c, MEMEST_E_PARSE, c->line, t->col,
                    "padding p='" TOKFMT "' has more than four values; "
                    "write p=N, p=HxW or p=top,left,bottom,right",
                    TOKARG(t));
    }
    if (n != 4) {
        return fail(c, MEMEST_E_PARSE, c->line, t->col,
                    "padding p='" TOKFMT "' has %zu values; write p=N, "
                    "p=HxW or p=top,left,bottom,right", TOKARG(t), n);
    }
    sp->pt = v[0];
    sp->pl = v[1];
    sp->pb = v[2];
    sp->pr = v[3];
    return MEMEST_OK;
}

/* in=A[,B...]: names, not checked here. */
static int parse_in(struct ctx *c, const struct op_tok *t, struct op_spec *sp)
{
    struct op_tok part[OP_MAX_INPUTS + 1];
    size_t n;

    split_tok(t, ",", part, OP_MAX_INPUTS + 1, &n);
    sp->nin = 0;
    for (size_t k = 0; k < n && k <= OP_MAX_INPUTS; k++) {
        if (part[k].n == 0) {
            return fail(c, MEMEST_E_PARSE, c->line, part[k].col,
                        "in= has an empty name; write in=A or in=A,B");
        }
        if (k == OP_MAX_INPUTS) {
            return fail(c, MEMEST_E_RANGE, c->line, t->col,
                        "in= names more than %d inputs", OP_MAX_INPUTS);
        }
        sp->in[sp->nin++] = part[k];
    }
    sp->col_in = t->col;
    return MEMEST_OK;
}

/* The number of a key=value (strtod's syntax, "inf" included) into *v,
 * errno as strtod left it; MEMEST_E_PARSE "<key>: '<text>' is not a
 * number<also>" otherwise (NaN too). Callers check the range. */
static int read_number(struct ctx *c, const char *key, const struct op_tok *t,
                       const char *also, double *v)
{
    char buf[64];
    char *end;

    if (t->n == 0 || t->n >= sizeof buf) {
        return fail(c, MEMEST_E_PARSE, c->line, t->col,
                    "%s: '" TOKFMT "' is not a number%s", key, TOKARG(t),
                    also);
    }
    memcpy(buf, t->s, t->n);
    buf[t->n] = '\0';
    errno = 0;
    *v = strtod(buf, &end);
    if (*end != '\0' || end == buf || *v != *v) {
        return fail(c, MEMEST_E_PARSE, c->line, t->col,
                    "%s: '" TOKFMT "' is not a number%s", key, TOKARG(t),
                    also);
    }
    return MEMEST_OK;
}

/* A positive finite decimal such as 1e-5. */
static int parse_eps(struct ctx *c, const struct op_tok *t, double *out)
{
    double v;
    int st = read_number(c, "eps", t, "", &v);

    if (st != MEMEST_OK) {
        return st;
    }
    if (!(v > 0.0) || v > 1.0 || errno == ERANGE) {
        return fail(c, MEMEST_E_RANGE, c->line, t->col,
                    "eps must be in (0, 1], got " TOKFMT, TOKARG(t));
    }
    *out = v;
    return MEMEST_OK;
}

/* A constant operand (scalar=) or a pad's fill value (value=): any finite
 * number strtod reads ("0.5", "-6", "1e-3") within float's range;
 * infinities and NaN are refused, they are no layer's constant. */
static int parse_scalar(struct ctx *c, const struct op_tok *key,
                        const struct op_tok *t, double *out)
{
    double v;
    char word[32];
    int st;

    snprintf(word, sizeof word, TOKFMT, TOKARG(key));
    st = read_number(c, word, t, "", &v);

    if (st != MEMEST_OK) {
        return st;
    }
    if (!isfinite(v) || errno == ERANGE || fabs(v) > FLT_MAX) {
        return fail(c, MEMEST_E_RANGE, c->line, t->col,
                    TOKFMT " must be a finite number within float's range, "
                    "got " TOKFMT, TOKARG(key), TOKARG(t));
    }
    *out = v;
    return MEMEST_OK;
}

/* One factor of scale=: a positive finite decimal ("2", "0.5", rounded
 * to float, the precision ONNX's scales have) into *f, or a ratio "N/D"
 * of whole numbers into *num, *den. */
static int parse_factor(struct ctx *c, const struct op_tok *t, double *f,
                        uint64_t *num, uint64_t *den)
{
    const char *slash = memchr(t->s, '/', t->n);
    double v;
    int st;

    if (slash != NULL) {
        struct op_tok a = *t;
        struct op_tok b;
        a.n = (size_t)(slash - t->s);
        b.s = slash + 1;
        b.n = t->n - a.n - 1;
        b.col = col_add(t->col, a.n + 1);
        st = parse_u64(c, &a, 1, "scale numerator", num);
        if (st == MEMEST_OK) {
            st = parse_u64(c, &b, 1, "scale denominator", den);
        }
        *f = 0.0;
        return st;
    }
    if ((st = read_number(c, "scale", t, " or N/D", &v)) != MEMEST_OK) {
        return st;
    }
    /* float, as the kernels map coordinates; a factor that float cannot
     * hold (or that rounds to 0) is refused */
    v = (double)(float)v;
    if (!(v > 0.0) || !(v <= 1e30) || errno == ERANGE) {
        return fail(c, MEMEST_E_RANGE, c->line, t->col,
                    "scale must be positive and finite, got " TOKFMT,
                    TOKARG(t));
    }
    *f = v;
    *num = *den = 0;
    return MEMEST_OK;
}

/* scale=F (both axes) or scale=FHxFW, each factor a decimal or N/D. */
static int parse_scale(struct ctx *c, const struct op_tok *t,
                       struct op_spec *sp)
{
    const char *x = memchr(t->s, 'x', t->n);
    struct op_tok a = *t;
    struct op_tok b;
    int st;

    if (x == NULL) {
        st = parse_factor(c, t, &sp->scale_h, &sp->rat_num_h,
                          &sp->rat_den_h);
        sp->scale_w = sp->scale_h;
        sp->rat_num_w = sp->rat_num_h;
        sp->rat_den_w = sp->rat_den_h;
        return st;
    }
    a.n = (size_t)(x - t->s);
    b.s = x + 1;
    b.n = t->n - a.n - 1;
    b.col = col_add(t->col, a.n + 1);
    st = parse_factor(c, &a, &sp->scale_h, &sp->rat_num_h, &sp->rat_den_h);
    if (st == MEMEST_OK) {
        st = parse_factor(c, &b, &sp->scale_w, &sp->rat_num_w,
                          &sp->rat_den_w);
    }
    return st;
}

/* The index of the word t among words[0..n-1], -1 when none. */
static int word_index(const struct op_tok *t, const char *const *words,
                      int n)
{
    for (int i = 0; i < n; i++) {
        if (tok_is(t, words[i])) {
            return i;
        }
    }
    return -1;
}

/* mode=nearest[,coord[,rounding]] or mode=bilinear[,coord]; the coordinate
 * transformation defaults to asymmetric for nearest (PyTorch's nearest)
 * and pytorch_half_pixel for bilinear (PyTorch's align_corners=False). */
static int parse_mode(struct ctx *c, const struct op_tok *t,
                      struct op_spec *sp)
{
    struct op_tok part[3];
    size_t n;
    int v;

    split_tok(t, ",", part, 3, &n);
    if (n > 3) {
        return fail(c, MEMEST_E_PARSE, c->line, t->col,
                    "mode='" TOKFMT "' has more than three parts; write "
                    "mode=nearest,COORD,ROUNDING or mode=bilinear,COORD",
                    TOKARG(t));
    }
    v = word_index(&part[0], op_resize_modes, 2);
    if (v < 0) {
        return fail(c, MEMEST_E_PARSE, c->line, part[0].col,
                    "unknown resize mode '" TOKFMT "' (expected nearest or "
                    "bilinear)", TOKARG(&part[0]));
    }
    sp->resize_mode = v;
    sp->resize_coord = v == 0 ? 3 : 1;
    sp->resize_nearest = 2;
    if (n >= 2) {
        v = word_index(&part[1], op_resize_coords, 4);
        if (v < 0) {
            return fail(c, MEMEST_E_PARSE, c->line, part[1].col,
                        "unknown coordinate transformation '" TOKFMT "' "
                        "(expected half_pixel, pytorch_half_pixel, "
                        "align_corners or asymmetric)", TOKARG(&part[1]));
        }
        sp->resize_coord = v;
    }
    if (n == 3) {
        if (sp->resize_mode != 0) {
            return fail(c, MEMEST_E_PARSE, c->line, part[2].col,
                        "a rounding ('" TOKFMT "') is only for mode=nearest",
                        TOKARG(&part[2]));
        }
        v = word_index(&part[2], op_resize_nearests, 4);
        if (v < 0) {
            return fail(c, MEMEST_E_PARSE, c->line, part[2].col,
                        "unknown nearest rounding '" TOKFMT "' (expected "
                        "round_prefer_floor, round_prefer_ceil, floor or "
                        "ceil)", TOKARG(&part[2]));
        }
        sp->resize_nearest = v;
    }
    return MEMEST_OK;
}

static int parse_act(const struct op_tok *t, enum memest_act *out)
{
    for (size_t i = 0; i < MEMEST_ACT_COUNT; i++) {
        if (tok_is(t, memest_act_name((enum memest_act)i))) {
            *out = (enum memest_act)i;
            return 1;
        }
    }
    return 0;
}

/* The row of op_keys[] whose word `key` is (key_of() found one). */
static size_t key_index(const struct op_tok *key)
{
    for (size_t i = 0; i < op_key_count; i++) {
        if (tok_is(key, op_keys[i].word)) {
            return i;
        }
    }
    return 0;
}

/* An activation parameter: a number, finite but for clip's bounds, which
 * may be -inf or inf (an absent bound); never NaN. */
static int parse_act_param(struct ctx *c, const struct op_tok *key,
                           const struct op_tok *t, double *out)
{
    double v;
    char word[32];
    int st;

    snprintf(word, sizeof word, TOKFMT, TOKARG(key));
    st = read_number(c, word, t, "", &v);

    if (st != MEMEST_OK) {
        return st;
    }
    if (errno == ERANGE && isfinite(v)) {
        errno = 0; /* an underflow to 0 or a subnormal is a value */
    }
    if (errno == ERANGE) {
        return fail(c, MEMEST_E_RANGE, c->line, t->col,
                    TOKFMT ": '" TOKFMT "' is out of range", TOKARG(key),
                    TOKARG(t));
    }
    *out = v;
    return MEMEST_OK;
}

/* The activation's parameter keys against the activation the line ended
 * up with (act= may come after alpha=): each written key must be one the
 * activation takes, under its word ("min" for clip, "alpha" elsewhere);
 * an unwritten one takes its default. Only clip's bounds may be
 * infinite. */
static int check_act_params(struct ctx *c, struct op_spec *sp)
{
    const char *aw = op_act_alpha_word(sp->act);
    const char *bw = op_act_beta_word(sp->act);
    const char *name = memest_act_name(sp->act);
    double da, db;

    op_act_defaults(sp->act, &da, &db);
    if (sp->alpha_word != NULL &&
        (aw == NULL || strcmp(aw, sp->alpha_word) != 0)) {
        return fail(c, MEMEST_E_PARSE, c->line, sp->col_alpha,
                    "%s= is not a parameter of %s (leakyrelu and elu take "
                    "alpha=, hardsigmoid alpha= and beta=, clip min= and "
                    "max=)", sp->alpha_word, name);
    }
    if (sp->beta_word != NULL &&
        (bw == NULL || strcmp(bw, sp->beta_word) != 0)) {
        return fail(c, MEMEST_E_PARSE, c->line, sp->col_beta,
                    "%s= is not a parameter of %s (leakyrelu and elu take "
                    "alpha=, hardsigmoid alpha= and beta=, clip min= and "
                    "max=)", sp->beta_word, name);
    }
    if (sp->alpha_word == NULL) {
        sp->act_alpha = da;
    }
    if (sp->beta_word == NULL) {
        sp->act_beta = db;
    }
    if (sp->act != MEMEST_ACT_CLIP &&
        (!isfinite(sp->act_alpha) || !isfinite(sp->act_beta))) {
        return fail(c, MEMEST_E_RANGE, c->line,
                    isfinite(sp->act_alpha) ? sp->col_beta : sp->col_alpha,
                    "%s: alpha and beta must be finite", name);
    }
    /* the kernels take float parameters: a finite double beyond float's
     * range would become infinite there */
    if (sp->act != MEMEST_ACT_CLIP &&
        (fabs(sp->act_alpha) > FLT_MAX || fabs(sp->act_beta) > FLT_MAX)) {
        return fail(c, MEMEST_E_RANGE, c->line,
                    fabs(sp->act_alpha) > FLT_MAX ? sp->col_alpha
                                                  : sp->col_beta,
                    "%s: alpha and beta must be within float's range", name);
    }
    return MEMEST_OK;
}

/* The OP_KEY_ bit of a key, 0 for a word that is no key. */
static unsigned key_of(const struct op_tok *key)
{
    for (size_t i = 0; i < op_key_count; i++) {
        if (tok_is(key, op_keys[i].word)) {
            return op_keys[i].bit;
        }
    }
    return 0;
}

/* "name, in, k, s, p": the keys of `bits` in op_keys' order. */
static void keys_text(unsigned bits, char *buf, size_t cap)
{
    size_t len = 0;

    buf[0] = '\0';
    for (size_t i = 0; i < op_key_count && len < cap; i++) {
        if (bits & op_keys[i].bit) {
            int n = snprintf(buf + len, cap - len, "%s%s", len ? ", " : "",
                             op_keys[i].word);
            len += n > 0 ? (size_t)n : 0;
        }
    }
}

/* The kind whose keyword `kw` is; *act is the activation an activation
 * keyword names. 0 when no operator has that keyword. */
static int kind_of(const struct op_tok *kw, enum memest_kind *kind,
                   enum memest_act *act)
{
    for (unsigned k = 0; k < MEMEST_KIND_COUNT; k++) {
        const struct memest_op_def *def = op_def((enum memest_kind)k);
        if (def == NULL) {
            continue;
        }
        *act = MEMEST_ACT_NONE;
        if (def->act_keyword ? parse_act(kw, act) && *act != MEMEST_ACT_NONE
                             : tok_is(kw, def->word)) {
            *kind = (enum memest_kind)k;
            return 1;
        }
    }
    return 0;
}

/* "input, name, dense, conv2d, ... or an activation's name (...)": every
 * keyword. */
static void keywords_text(char *buf, size_t cap)
{
    const char *words[MEMEST_KIND_COUNT + MEMEST_ACT_COUNT + 2];
    size_t n = 0;
    size_t len = 0;

    words[n++] = "input";
    words[n++] = "name";
    for (unsigned k = 0; k < MEMEST_KIND_COUNT; k++) {
        const struct memest_op_def *def = op_def((enum memest_kind)k);
        if (def != NULL && !def->act_keyword) {
            words[n++] = def->word;
        }
    }
    for (unsigned k = 0; k < MEMEST_KIND_COUNT; k++) {
        const struct memest_op_def *def = op_def((enum memest_kind)k);
        if (def == NULL || !def->act_keyword) {
            continue;
        }
        /* the activations are too many to list in a message beside the
         * kinds: act='s message lists them */
        words[n++] = "an activation's name (relu, silu, ...: the values of "
                     "act=)";
        break;
    }
    buf[0] = '\0';
    for (size_t i = 0; i < n && len < cap; i++) {
        int w = snprintf(buf + len, cap - len, "%s%s",
                         i == 0 ? "" : i + 1 == n ? " or " : ", ", words[i]);
        len += w > 0 ? (size_t)w : 0;
    }
}

static int parse_yes_no(struct ctx *c, const struct op_tok *key,
                        const struct op_tok *val, int *out)
{
    if (tok_is(val, "yes")) {
        *out = 1;
    } else if (tok_is(val, "no")) {
        *out = 0;
    } else {
        return fail(c, MEMEST_E_PARSE, c->line, val->col,
                    TOKFMT " must be yes or no, got '" TOKFMT "'",
                    TOKARG(key), TOKARG(val));
    }
    return MEMEST_OK;
}

/* Split a line (without its newline) into tokens, comments removed. */
struct line_iter {
    const char *s;
    size_t n;
    size_t pos;
};

static int is_space(char ch)
{
    return ch == ' ' || ch == '\t' || ch == '\r' || ch == '\v' ||
           ch == '\f';
}

static int next_tok(struct line_iter *it, struct op_tok *t)
{
    while (it->pos < it->n && is_space(it->s[it->pos])) {
        it->pos++;
    }
    if (it->pos >= it->n || it->s[it->pos] == '#') {
        return 0;
    }
    t->s = it->s + it->pos;
    t->col = col_add(1, it->pos);
    while (it->pos < it->n && !is_space(it->s[it->pos]) &&
           it->s[it->pos] != '#') {
        it->pos++;
    }
    t->n = (size_t)(it->s + it->pos - t->s);
    return 1;
}

/* ---- Lines -------------------------------------------------------------- */

struct parser {
    struct ctx c;
    struct memest_model *m;
    struct names names;
    struct counters counters;
    int name_line;
};

static int parse_name_value(struct ctx *c, const struct op_tok *val)
{
    if (val->n == 0) {
        return fail(c, MEMEST_E_PARSE, c->line, val->col,
                    "missing value for name");
    }
    if (memchr(val->s, ',', val->n) != NULL ||
        memchr(val->s, '=', val->n) != NULL) {
        return fail(c, MEMEST_E_PARSE, c->line, val->col,
                    "name '" TOKFMT "' contains ',' or '=', which in= "
                    "could not name", TOKARG(val));
    }
    return MEMEST_OK;
}

/* perm=1,0 or perm=2,0,1: up to three axis numbers, each 0 to 2 (the
 * operator checks that they permute its input's axes). */
static int parse_perm(struct ctx *c, const struct op_tok *val,
                      struct op_spec *sp)
{
    size_t i = 0;
    sp->nperm = 0;
    while (i < val->n) {
        if (sp->nperm == 3 || val->s[i] < '0' || val->s[i] > '2' ||
            (i + 1 < val->n && val->s[i + 1] != ',') ||
            (i + 1 == val->n - 1)) {
            return fail(c, MEMEST_E_PARSE, c->line, val->col,
                        "perm must list 2 or 3 axes 0, 1 or 2 separated by "
                        "commas, e.g. perm=1,0, got '" TOKFMT "'",
                        TOKARG(val));
        }
        sp->perm[sp->nperm++] = (unsigned)(val->s[i] - '0');
        i += 2;
    }
    if (sp->nperm < 2) {
        return fail(c, MEMEST_E_PARSE, c->line, val->col,
                    "perm must list 2 or 3 axes 0, 1 or 2 separated by "
                    "commas, e.g. perm=1,0, got '" TOKFMT "'", TOKARG(val));
    }
    return MEMEST_OK;
}

static int parse_layer(struct parser *P, enum memest_kind kind,
                       enum memest_act act, const struct op_tok *kw,
                       struct line_iter *it)
{
    struct ctx *c = &P->c;
    const struct memest_op_def *def = op_def(kind);
    struct op_spec sp;
    struct op_tok t;
    unsigned seen = 0; /* bit per key, for duplicates */
    const unsigned allowed = def->keys;
    char keys[160];
    int st;

    keys_text(allowed, keys, sizeof keys);
    memset(&sp, 0, sizeof sp);
    sp.kind = kind;
    sp.act = act;
    sp.kind_text = def->act_keyword ? memest_act_name(act) : def->word;
    sp.col_kind = kw->col;
    sp.g = 1;
    sp.has_bias = 1;
    sp.count_pad = 1;
    sp.eps = 1e-5;
    sp.dh = sp.dw = 1;
    /* PyTorch's nearest: asymmetric coordinates, rounded down */
    sp.resize_mode = 0;
    sp.resize_coord = 3;
    sp.resize_nearest = 2;
    /* lstm, gru: PyTorch's (every step's output; a GRU's reset gate
     * applied after the hidden product) */
    sp.rnn_seq = 1;
    sp.rnn_lbr = 1;

    if (P->m->input_count == 0) {
        return fail(c, MEMEST_E_PARSE, c->line, kw->col,
                    "missing input: an 'input N' or 'input CxHxW' line "
                    "must come before the first layer");
    }
    while (next_tok(it, &t)) {
        const char *eq = memchr(t.s, '=', t.n);
        struct op_tok key;
        struct op_tok val;
        unsigned bit;

        if (eq == NULL) {
            if (def->width_what != NULL && !sp.have_units) {
                st = parse_u64(c, &t, 1, def->width_what, &sp.units);
                if (st != MEMEST_OK) {
                    return st;
                }
                sp.have_units = 1;
                sp.col_units = t.col;
                continue;
            }
            return fail(c, MEMEST_E_PARSE, c->line, t.col,
                        "unexpected '" TOKFMT "' in a %s line; options are "
                        "key=value (%s)", TOKARG(&t), sp.kind_text, keys);
        }
        key.s = t.s;
        key.n = (size_t)(eq - t.s);
        key.col = t.col;
        val.s = eq + 1;
        val.n = t.n - key.n - 1;
        val.col = col_add(t.col, key.n + 1);
        bit = key_of(&key);
        if ((bit & allowed) == 0) {
            return fail(c, MEMEST_E_PARSE, c->line, key.col,
                        "unknown key '" TOKFMT "' for %s (expected %s)",
                        TOKARG(&key), sp.kind_text, keys);
        }
        if (seen & bit) {
            return fail(c, MEMEST_E_PARSE, c->line, key.col,
                        "duplicate key '" TOKFMT "'", TOKARG(&key));
        }
        seen |= bit;
        /* one case per key and no default: a key added to enum op_key
         * without its parser is a compiler warning (-Wswitch) */
        st = MEMEST_OK;
        switch ((enum op_key)bit) {
        case OP_KEY_NAME:
            st = parse_name_value(c, &val);
            if (st == MEMEST_OK && tok_is(&val, "input")) {
                st = fail(c, MEMEST_E_PARSE, c->line, val.col,
                          "the name 'input' is reserved for the model "
                          "input");
            }
            sp.name = val;
            break;
        case OP_KEY_ACT:
            if (!parse_act(&val, &sp.act)) {
                st = fail(c, MEMEST_E_PARSE, c->line, val.col,
                          "unknown activation '" TOKFMT "' (expected "
                          "none, relu, relu6, gelu, gelu_erf, sigmoid, tanh, "
                          "softmax, logsoftmax, erf, silu, hardsigmoid, "
                          "hardswish, leakyrelu, elu, softplus or clip)",
                          TOKARG(&val));
            }
            break;
        case OP_KEY_BIAS:
            st = parse_yes_no(c, &key, &val, &sp.has_bias);
            break;
        case OP_KEY_COUNT_PAD:
            st = parse_yes_no(c, &key, &val, &sp.count_pad);
            break;
        case OP_KEY_K:
            st = parse_pair(c, &val, 1, "kernel size k", &sp.kh, &sp.kw);
            sp.have_k = 1;
            sp.col_k = val.col;
            break;
        case OP_KEY_S:
            st = parse_pair(c, &val, 1, "stride s", &sp.sh, &sp.sw);
            sp.have_s = 1;
            sp.col_s = val.col;
            break;
        case OP_KEY_P:
            st = parse_pads(c, &val, &sp);
            sp.col_p = val.col;
            break;
        case OP_KEY_G:
            st = parse_u64(c, &val, 1, "groups g", &sp.g);
            sp.col_g = val.col;
            break;
        case OP_KEY_IN:
            st = parse_in(c, &val, &sp);
            break;
        case OP_KEY_EPS:
            st = parse_eps(c, &val, &sp.eps);
            break;
        case OP_KEY_ALPHA:
            st = parse_act_param(c, &key, &val, &sp.act_alpha);
            sp.alpha_word = op_keys[key_index(&key)].word;
            sp.col_alpha = key.col;
            break;
        case OP_KEY_BETA:
            st = parse_act_param(c, &key, &val, &sp.act_beta);
            sp.beta_word = op_keys[key_index(&key)].word;
            sp.col_beta = key.col;
            break;
        case OP_KEY_SCALAR:
        case OP_KEY_SCALAR_LEFT:
            if (sp.scalar_side != MEMEST_SCALAR_NONE) {
                st = fail(c, MEMEST_E_PARSE, c->line, key.col,
                          "scalar= and scalar_left= exclude each other: a "
                          "layer has one constant operand");
                break;
            }
            st = parse_scalar(c, &key, &val, &sp.scalar);
            sp.scalar_side = bit == OP_KEY_SCALAR ? MEMEST_SCALAR_RIGHT
                                                  : MEMEST_SCALAR_LEFT;
            sp.col_scalar = val.col;
            break;
        case OP_KEY_CEIL:
            st = parse_yes_no(c, &key, &val, &sp.ceil_mode);
            break;
        case OP_KEY_D:
            st = parse_pair(c, &val, 1, "dilation d", &sp.dh, &sp.dw);
            sp.col_d = val.col;
            break;
        case OP_KEY_OUT_PAD:
            st = parse_pair(c, &val, 0, "output padding op", &sp.oph,
                            &sp.opw);
            sp.col_op = val.col;
            break;
        case OP_KEY_SCALE:
            st = parse_scale(c, &val, &sp);
            sp.have_scale = 1;
            sp.col_scale = val.col;
            break;
        case OP_KEY_MODE:
            st = parse_mode(c, &val, &sp);
            sp.col_mode = val.col;
            break;
        case OP_KEY_VALUE:
            st = parse_scalar(c, &key, &val, &sp.value);
            break;
        case OP_KEY_AXIS:
            if (tok_is(&val, "c")) {
                sp.axis = 0;
            } else if (tok_is(&val, "h")) {
                sp.axis = 1;
            } else if (tok_is(&val, "w")) {
                sp.axis = 2;
            } else if (val.n == 1 && val.s[0] >= '0' && val.s[0] <= '2') {
                /* a per-sample axis by number (softmax, layernorm): 0,
                 * 1, 2 are the axes c, h, w name */
                sp.axis = (unsigned)(val.s[0] - '0');
            } else {
                st = fail(c, MEMEST_E_PARSE, c->line, val.col,
                          "axis must be c, h or w, or 0, 1 or 2 (a "
                          "per-sample axis), got '" TOKFMT "'",
                          TOKARG(&val));
            }
            sp.have_axis = 1;
            sp.col_axis = val.col;
            break;
        case OP_KEY_BEGIN:
            st = parse_u64(c, &val, 0, "begin", &sp.begin);
            sp.col_begin = val.col;
            break;
        case OP_KEY_END:
            st = parse_u64(c, &val, 1, "end", &sp.end);
            sp.col_end = val.col;
            break;
        case OP_KEY_SHAPE:
            st = parse_shape(c, &val, &sp.shape);
            sp.col_shape = val.col;
            break;
        case OP_KEY_PERM:
            st = parse_perm(c, &val, &sp);
            sp.col_perm = val.col;
            break;
        case OP_KEY_HEADS:
            st = parse_u64(c, &val, 1, "heads", &sp.heads);
            sp.col_heads = val.col;
            break;
        case OP_KEY_DIR:
            if (tok_is(&val, "forward")) {
                sp.rnn_dir = MEMEST_RNN_FORWARD;
            } else if (tok_is(&val, "reverse")) {
                sp.rnn_dir = MEMEST_RNN_REVERSE;
            } else if (tok_is(&val, "bidirectional")) {
                sp.rnn_dir = MEMEST_RNN_BIDIRECTIONAL;
            } else {
                st = fail(c, MEMEST_E_PARSE, c->line, val.col,
                          "dir must be forward, reverse or bidirectional, "
                          "got '" TOKFMT "'", TOKARG(&val));
            }
            break;
        case OP_KEY_SEQ:
            st = parse_yes_no(c, &key, &val, &sp.rnn_seq);
            break;
        case OP_KEY_LBR:
            st = parse_yes_no(c, &key, &val, &sp.rnn_lbr);
            break;
        }
        if (st != MEMEST_OK) {
            return st;
        }
    }
    if (def->width_what != NULL && !sp.have_units) {
        return fail(c, MEMEST_E_PARSE, c->line, kw->col,
                    "missing width: %s needs the number of %s first, e.g. "
                    "'%s'", sp.kind_text, def->width_noun, def->example);
    }
    for (size_t i = 0; i < op_key_count; i++) {
        if ((def->required & op_keys[i].bit) && !(seen & op_keys[i].bit)) {
            return fail(c, MEMEST_E_PARSE, c->line, kw->col,
                        "missing %s: %s needs %s=, e.g. '%s'",
                        op_keys[i].what, sp.kind_text, op_keys[i].word,
                        def->example);
        }
    }
    st = check_act_params(c, &sp);
    if (st != MEMEST_OK) {
        return st;
    }
    /* the stride's default is the operator's (infer() sees have_s) */
    if (!sp.have_s) {
        sp.col_s = kw->col;
    }
    if (sp.col_p == 0) {
        sp.col_p = kw->col;
    }
    if (sp.col_d == 0) {
        sp.col_d = kw->col;
    }
    if (sp.col_g == 0) {
        sp.col_g = sp.col_units ? sp.col_units : kw->col;
    }
    if (sp.col_d == 0) {
        sp.col_d = kw->col;
    }
    if (sp.col_op == 0) {
        sp.col_op = kw->col;
    }
    if (sp.col_mode == 0) {
        sp.col_mode = kw->col;
    }
    if (sp.col_axis == 0) {
        sp.col_axis = kw->col;
    }
    if (sp.col_begin == 0) {
        sp.col_begin = kw->col;
    }
    if (sp.col_end == 0) {
        sp.col_end = kw->col;
    }
    if (sp.col_heads == 0) {
        sp.col_heads = kw->col;
    }
    return add_layer(c, P->m, &P->names, &P->counters, &sp);
}

static int parse_input_line(struct parser *P, const struct op_tok *kw,
                            struct line_iter *it)
{
    struct ctx *c = &P->c;
    struct memest_shape sh;
    struct op_tok t;
    struct op_tok shape_tok;
    struct op_tok name = {NULL, 0, 0};
    int st;

    if (P->m->count != 0) {
        return fail(c, MEMEST_E_PARSE, c->line, kw->col,
                    "'input' after the first layer: declare every input "
                    "before the layers");
    }
    if (!next_tok(it, &shape_tok)) {
        return fail(c, MEMEST_E_PARSE, c->line, kw->col,
                    "missing input shape: write 'input N' or "
                    "'input CxHxW'");
    }
    st = parse_shape(c, &shape_tok, &sh);
    if (st != MEMEST_OK) {
        return st;
    }
    while (next_tok(it, &t)) {
        if (t.n > 5 && memcmp(t.s, "name=", 5) == 0 && name.s == NULL) {
            name.s = t.s + 5;
            name.n = t.n - 5;
            name.col = col_add(t.col, 5);
            st = parse_name_value(c, &name);
            if (st != MEMEST_OK) {
                return st;
            }
            continue;
        }
        return fail(c, MEMEST_E_PARSE, c->line, t.col,
                    "unexpected '" TOKFMT "' in an input line (expected "
                    "name=)", TOKARG(&t));
    }
    if (P->m->input_count == 1 && name.s == NULL) {
        return fail(c, MEMEST_E_PARSE, c->line, kw->col,
                    "duplicate 'input' line (first on line %d); a model "
                    "with several inputs names each one with name=",
                    P->m->inputs[0].line);
    }
    return add_input(c, P->m, &P->names, &sh, &name, shape_tok.col);
}

static int parse_line(struct parser *P, const char *s, size_t n)
{
    struct ctx *c = &P->c;
    struct line_iter it = {s, n, 0};
    struct op_tok kw;
    struct op_tok t;
    int st;

    if (!next_tok(&it, &kw)) {
        return MEMEST_OK;
    }
    if (tok_is(&kw, "name")) {
        if (P->name_line != 0) {
            return fail(c, MEMEST_E_PARSE, c->line, kw.col,
                        "duplicate 'name' line (first on line %d)",
                        P->name_line);
        }
        if (!next_tok(&it, &t)) {
            return fail(c, MEMEST_E_PARSE, c->line, kw.col,
                        "missing model name after 'name'");
        }
        st = set_model_name(P->m, t.s, t.n);
        if (st != MEMEST_OK) {
            return fail_nomem(c, c->line, kw.col, t.n + 1,
                              "the model's name");
        }
        P->name_line = c->line;
    } else if (tok_is(&kw, "input")) {
        return parse_input_line(P, &kw, &it);
    } else {
        enum memest_kind kind;
        enum memest_act act;
        if (!kind_of(&kw, &kind, &act)) {
            char words[256];
            keywords_text(words, sizeof words);
            return fail(c, MEMEST_E_PARSE, c->line, kw.col,
                        "unknown layer kind '" TOKFMT "' (expected %s)",
                        TOKARG(&kw), words);
        }
        return parse_layer(P, kind, act, &kw, &it);
    }
    if (next_tok(&it, &t)) {
        return fail(c, MEMEST_E_PARSE, c->line, t.col,
                    "unexpected '" TOKFMT "' after '" TOKFMT "'",
                    TOKARG(&t), TOKARG(&kw));
    }
    return MEMEST_OK;
}

static int parse_text(struct parser *P, const char *text, size_t len)
{
    size_t pos = 0;
    int st;

    P->c.line = 0;
    /* A byte-order mark is an editor's signature, not text: columns on
     * line 1 count from after it, as the editor shows them. */
    if (utf8_is_bom((const unsigned char *)text, len)) {
        pos = 3;
    }
    while (pos < len) {
        const char *nl = memchr(text + pos, '\n', len - pos);
        size_t end = nl ? (size_t)(nl - text) : len;
        const char *nul = memchr(text + pos, '\0', end - pos);
        if (P->c.line < INT32_MAX) {
            P->c.line++;
        }
        if (nul != NULL) {
            return fail(&P->c, MEMEST_E_PARSE, P->c.line,
                        col_add(1, (size_t)(nul - (text + pos))),
                        "unexpected NUL byte");
        }
        /* Names end up in CSV and JSON, which must be UTF-8: a Latin-1
         * name would make a file other tools cannot read. */
        const unsigned char *u = (const unsigned char *)text + pos;
        const size_t bad = utf8_invalid_at(u, end - pos);
        if (bad < end - pos) {
            return fail(&P->c, MEMEST_E_PARSE, P->c.line, col_add(1, bad),
                        "invalid UTF-8 (byte 0x%02X); the model file must "
                        "be UTF-8 text", u[bad]);
        }
        st = parse_line(P, text + pos, end - pos);
        if (st != MEMEST_OK) {
            return st;
        }
        pos = end + 1;
    }
    if (P->m->input_count == 0) {
        return fail(&P->c, MEMEST_E_PARSE, 1, 1,
                    "empty model: no 'input' line and no layers");
    }
    if (P->m->count == 0) {
        return fail(&P->c, MEMEST_E_PARSE, P->m->inputs[0].line, 1,
                    "empty model: no layers after 'input'");
    }
    return finalize(&P->c, P->m);
}

/* Finish a parse: default name, result or cleanup. */
static int finish(struct parser *P, int st, const char *default_name,
                  memest_model **out)
{
    if (st == MEMEST_OK && P->m->name == NULL) {
        st = set_model_name(P->m, default_name, strlen(default_name));
        if (st != MEMEST_OK) {
            fail_nomem(&P->c, 0, 0, strlen(default_name) + 1,
                       "the model's name");
        }
    }
    free(P->names.slots);
    P->names.slots = NULL;
    if (st != MEMEST_OK) {
        memest_model_destroy(P->m);
        return st;
    }
    if (P->c.diag != NULL) {
        P->c.diag->line = 0;
        P->c.diag->column = 0;
        P->c.diag->message[0] = '\0';
    }
    *out = P->m;
    return MEMEST_OK;
}

static int start(struct parser *P, struct memest_diag *diag,
                 const char *source)
{
    memset(P, 0, sizeof *P);
    set_source(diag, source);
    P->c.diag = diag;
    P->c.source = source;
    P->m = model_new();
    if (P->m == NULL) {
        return fail_nomem(&P->c, 0, 0, sizeof *P->m, "the model");
    }
    return MEMEST_OK;
}

static int parse_named(const char *text, size_t len, const char *source,
                       const char *default_name, memest_model **out,
                       struct memest_diag *diag)
{
    struct parser P;
    int st;

    if (out != NULL) {
        *out = NULL;
    }
    if (text == NULL || out == NULL) {
        set_source(diag, source ? source : "<string>");
        if (diag != NULL) {
            snprintf(diag->message, sizeof diag->message,
                     "no text or no place for the result");
        }
        return MEMEST_E_INVALID;
    }
    st = start(&P, diag, source ? source : "<string>");
    if (st != MEMEST_OK) {
        return st;
    }
    st = parse_text(&P, text, len);
    return finish(&P, st, default_name, out);
}

int memest_model_parse_buffer(const char *text, size_t len,
                              const char *source, memest_model **out,
                              struct memest_diag *diag)
{
    return parse_named(text, len, source, "model", out, diag);
}

int memest_model_parse(const char *text, memest_model **out,
                       struct memest_diag *diag)
{
    return parse_named(text, text ? strlen(text) : 0, NULL, "model", out,
                       diag);
}

/* ---- Presets ------------------------------------------------------------ */

/* A preset compiled from libmemest/models/, or NULL. */
static const struct preset_text *find_preset(const char *name)
{
    for (size_t i = 0; i < memest_preset_text_count; i++) {
        if (strcmp(memest_preset_texts[i].name, name) == 0) {
            return &memest_preset_texts[i];
        }
    }
    return NULL;
}

const char *const *memest_preset_names(void)
{
    return memest_preset_name_list;
}

int memest_is_preset_name(const char *text)
{
    if (text == NULL) {
        return 0;
    }
    return strncmp(text, "mlp:", 4) == 0 || find_preset(text) != NULL;
}

static int build_mlp(struct parser *P, const char *name)
{
    struct ctx *c = &P->c;
    size_t len = strlen(name);
    size_t pos = 4;
    int nwidths = 0;

    c->line = 1;
    while (1) {
        size_t end = pos;
        struct op_tok t;
        uint64_t w;
        int st;
        while (end < len && name[end] != '-') {
            end++;
        }
        t.s = name + pos;
        t.n = end - pos;
        t.col = col_add(1, pos);
        if (t.n == 0) {
            return fail(c, MEMEST_E_PARSE, 1, t.col,
                        "missing width in '%.60s': write widths like "
                        "mlp:784-64-10", name);
        }
        st = parse_u64(c, &t, 1, "mlp width", &w);
        if (st != MEMEST_OK) {
            return st;
        }
        if (nwidths == 0) {
            struct memest_shape sh = {1, {w, 0, 0}};
            st = add_input(c, P->m, &P->names, &sh, NULL, t.col);
        } else {
            struct op_spec sp;
            memset(&sp, 0, sizeof sp);
            sp.kind = MEMEST_KIND_DENSE;
            sp.kind_text = "dense";
            sp.units = w;
            sp.have_units = 1;
            sp.has_bias = 1;
            sp.g = 1;
            sp.col_kind = t.col;
            sp.col_units = t.col;
            /* relu on hidden layers, softmax on the output */
            sp.act = end == len ? MEMEST_ACT_SOFTMAX : MEMEST_ACT_RELU;
            st = add_layer(c, P->m, &P->names, &P->counters, &sp);
        }
        if (st != MEMEST_OK) {
            return st;
        }
        nwidths++;
        if (end == len) {
            break;
        }
        pos = end + 1;
    }
    if (nwidths < 2) {
        return fail(c, MEMEST_E_PARSE, 1, 1,
                    "empty model: the mlp preset needs at least two widths "
                    "(input and output), e.g. mlp:784-10");
    }
    return finalize(c, P->m);
}

int memest_model_preset(const char *name, memest_model **out,
                        struct memest_diag *diag)
{
    struct parser P;
    int st;

    if (out != NULL) {
        *out = NULL;
    }
    if (name == NULL || out == NULL) {
        set_source(diag, "<preset>");
        if (diag != NULL) {
            snprintf(diag->message, sizeof diag->message,
                     "no preset name or no place for the result");
        }
        return MEMEST_E_INVALID;
    }
    {
        const struct preset_text *p = find_preset(name);
        if (p != NULL) {
            return parse_named(p->text, p->len, p->name, p->name, out, diag);
        }
    }
    st = start(&P, diag, name);
    if (st != MEMEST_OK) {
        return st;
    }
    if (strncmp(name, "mlp:", 4) == 0) {
        st = build_mlp(&P, name);
    } else {
        st = fail(&P.c, MEMEST_E_PARSE, 1, 1,
                  "unknown preset '%.60s' (expected mlp:W0-W1-...-Wn or "
                  "one of the models of libmemest/models, such as "
                  "smallcnn or resnet8)", name);
    }
    return finish(&P, st, name, out);
}

/* ---- Files -------------------------------------------------------------- */

static void base_name(const char *path, char *buf, size_t cap)
{
    const char *slash = strrchr(path, '/');
    const char *b = slash ? slash + 1 : path;
    const char *dot = strrchr(b, '.');
    size_t n = dot && dot != b ? (size_t)(dot - b) : strlen(b);
    if (n == 0) {
        b = "model";
        n = 5;
    }
    if (n >= cap) {
        n = cap - 1;
    }
    memcpy(buf, b, n);
    buf[n] = '\0';
    /* the name must stay one token when the model is written back */
    for (size_t i = 0; i < n; i++) {
        if (is_space(buf[i]) || buf[i] == '#') {
            buf[i] = '_';
        }
    }
    /* and be UTF-8 like the text (a Latin-1 file name, or a name cut in
     * the middle of a character): each byte of a bad sequence becomes '_' */
    for (size_t i = 0; i < n;) {
        const size_t bad = utf8_invalid_at((unsigned char *)buf + i, n - i);
        if (bad == n - i) {
            break;
        }
        buf[i + bad] = '_';
        i += bad + 1;
    }
}

int memest_model_load(const char *path_or_preset, memest_model **out,
                      struct memest_diag *diag)
{
    char *text = NULL;
    size_t len = 0;
    char default_name[128];
    int st;

    if (out != NULL) {
        *out = NULL;
    }
    if (path_or_preset == NULL || out == NULL) {
        set_source(diag, "<model>");
        if (diag != NULL) {
            snprintf(diag->message, sizeof diag->message,
                     "no model path or no place for the result");
        }
        return MEMEST_E_INVALID;
    }
    if (memest_is_preset_name(path_or_preset)) {
        return memest_model_preset(path_or_preset, out, diag);
    }
    len = strlen(path_or_preset);
    if (len > 5 && strcmp(path_or_preset + len - 5, ".onnx") == 0) {
        return memest_model_load_onnx(path_or_preset, NULL, out, diag);
    }
    set_source(diag, path_or_preset);
    st = read_whole_file(path_or_preset, "model file", MEMEST_MAX_TEXT_BYTES,
                         "64 MiB", &text, &len, diag);
    if (st != MEMEST_OK) {
        return st;
    }
    base_name(path_or_preset, default_name, sizeof default_name);
    st = parse_named(text ? text : "", len, path_or_preset, default_name,
                     out, diag);
    free(text);
    return st;
}
