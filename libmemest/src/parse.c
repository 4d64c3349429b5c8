/*
 * The model description parser, the presets and shape inference.
 *
 * Parsing is one pass over the text: each line is cut into tokens in place
 * (no copies of the text), checked, and appended to the model, whose shapes
 * and counts are inferred as the layer arrives. Layer names go into a hash
 * set so that duplicate checks stay linear in the number of layers.
 */
#include "internal.h"
#include "utf8.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_FILE_BYTES ((size_t)64 * 1024 * 1024)

struct ctx {
    struct memest_diag *diag;
    const char *source;
    int line;
};

/* A token of a line: a slice of the text and its 1-based column. */
struct tok {
    const char *s;
    size_t n;
    int col;
};

/* What a layer line asked for, before shape inference. */
struct spec {
    enum memest_kind kind;
    enum memest_act act;
    const char *kind_text;
    struct tok name;
    uint64_t units;
    uint64_t k;
    uint64_t s;
    uint64_t p;
    uint64_t g;
    int has_bias;
    int have_units;
    int have_k;
    int have_s;
    int col_kind;
    int col_units;
    int col_k;
    int col_s;
    int col_p;
    int col_g;
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

static int tok_is(const struct tok *t, const char *word)
{
    size_t n = strlen(word);
    return t->n == n && memcmp(t->s, word, n) == 0;
}

/* Print at most 40 bytes of a token so messages stay readable. */
#define TOKFMT "%.*s%s"
#define TOKARG(t) (int)((t)->n > 40 ? 40 : (t)->n), (t)->s, \
    ((t)->n > 40 ? "..." : "")

/* ---- Model storage ------------------------------------------------------ */

static uint64_t hash_name(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603u;
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 1099511628211u;
    }
    return h;
}

/* Index of the layer with this name, or SIZE_MAX. */
static size_t find_name(const struct memest_model *m, const char *s, size_t n)
{
    size_t mask;
    size_t i;

    if (m->slot_cap == 0) {
        return SIZE_MAX;
    }
    mask = m->slot_cap - 1;
    i = (size_t)hash_name(s, n) & mask;
    while (m->slots[i] != 0) {
        const char *name = m->layers[m->slots[i] - 1].name;
        if (strlen(name) == n && memcmp(name, s, n) == 0) {
            return m->slots[i] - 1;
        }
        i = (i + 1) & mask;
    }
    return SIZE_MAX;
}

static void insert_slot(size_t *slots, size_t cap, const char *name,
                        size_t index)
{
    size_t mask = cap - 1;
    size_t i = (size_t)hash_name(name, strlen(name)) & mask;
    while (slots[i] != 0) {
        i = (i + 1) & mask;
    }
    slots[i] = index + 1;
}

/* Make room for one more layer and its name slot. */
static int reserve(struct memest_model *m)
{
    if (m->count == m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 16;
        struct memest_layer *l;
        if (cap > SIZE_MAX / sizeof *l) {
            return MEMEST_E_NOMEM;
        }
        l = realloc(m->layers, cap * sizeof *l);
        if (l == NULL) {
            return MEMEST_E_NOMEM;
        }
        m->layers = l;
        m->cap = cap;
    }
    if ((m->count + 1) * 2 > m->slot_cap) {
        size_t cap = m->slot_cap ? m->slot_cap * 2 : 32;
        size_t *slots = calloc(cap, sizeof *slots);
        if (slots == NULL) {
            return MEMEST_E_NOMEM;
        }
        for (size_t i = 0; i < m->count; i++) {
            insert_slot(slots, cap, m->layers[i].name, i);
        }
        free(m->slots);
        m->slots = slots;
        m->slot_cap = cap;
    }
    return MEMEST_OK;
}

static struct memest_model *model_new(void)
{
    return calloc(1, sizeof(struct memest_model));
}

static int set_model_name(struct memest_model *m, const char *s, size_t n)
{
    char *name = malloc(n + 1);
    if (name == NULL) {
        return MEMEST_E_NOMEM;
    }
    memcpy(name, s, n);
    name[n] = '\0';
    free(m->name);
    m->name = name;
    return MEMEST_OK;
}

static int set_input(struct ctx *c, struct memest_model *m,
                     const struct memest_shape *shape, int col)
{
    uint64_t e = 1;
    for (unsigned i = 0; i < shape->rank; i++) {
        if (mul_ovf(e, shape->dim[i], &e)) {
            return fail(c, MEMEST_E_OVERFLOW, c->line, col,
                        "input has more elements than fit in 64 bits");
        }
    }
    m->input = *shape;
    m->input_elements = e;
    m->activation_elements = e;
    return MEMEST_OK;
}

/* floor((h + 2p - k) / s) + 1, or an error when the window does not fit. */
static int window_out(struct ctx *c, const struct spec *sp, uint64_t h,
                      const char *axis, const struct memest_shape *in,
                      uint64_t *out)
{
    uint64_t padded;
    char shape_text[MEMEST_SHAPE_TEXT_MAX];

    if (mul_ovf(sp->p, 2, &padded) || add_ovf(padded, h, &padded)) {
        return fail(c, MEMEST_E_OVERFLOW, c->line, sp->col_p,
                    "%s: padding p=%llu overflows 64 bits", sp->kind_text,
                    (unsigned long long)sp->p);
    }
    if (sp->k > padded) {
        memest_shape_format(in, shape_text, sizeof shape_text);
        return fail(c, MEMEST_E_SHAPE, c->line, sp->col_k,
                    "%s: kernel k=%llu is larger than the padded input "
                    "%s %llu (input %s, padding %llu)",
                    sp->kind_text, (unsigned long long)sp->k, axis,
                    (unsigned long long)padded, shape_text,
                    (unsigned long long)sp->p);
    }
    *out = (padded - sp->k) / sp->s + 1;
    return MEMEST_OK;
}

static const char *family_prefix(enum memest_kind kind)
{
    switch (kind) {
    case MEMEST_KIND_DENSE:
        return "dense";
    case MEMEST_KIND_CONV2D:
        return "conv";
    case MEMEST_KIND_MAXPOOL:
    case MEMEST_KIND_AVGPOOL:
        return "pool";
    case MEMEST_KIND_FLATTEN:
        return "flatten";
    default:
        return "act";
    }
}

/* Per-family counters for automatic names. */
struct counters {
    uint64_t n[5];
};

static uint64_t *family_counter(struct counters *k, enum memest_kind kind)
{
    switch (kind) {
    case MEMEST_KIND_DENSE:
        return &k->n[0];
    case MEMEST_KIND_CONV2D:
        return &k->n[1];
    case MEMEST_KIND_MAXPOOL:
    case MEMEST_KIND_AVGPOOL:
        return &k->n[2];
    case MEMEST_KIND_FLATTEN:
        return &k->n[3];
    default:
        return &k->n[4];
    }
}

static int overflow_in(struct ctx *c, const struct spec *sp, const char *what)
{
    return fail(c, MEMEST_E_OVERFLOW, c->line, sp->col_kind,
                "%s: %s does not fit in 64 bits", sp->kind_text, what);
}

/* Infer the layer's shapes and counts and append it to the model. */
static int add_layer(struct ctx *c, struct memest_model *m,
                     struct counters *counters, const struct spec *sp)
{
    struct memest_layer L;
    const struct memest_shape *in =
        m->count ? &m->layers[m->count - 1].out_shape : &m->input;
    uint64_t in_elems =
        m->count ? m->layers[m->count - 1].output_elements : m->input_elements;
    uint64_t *counter = family_counter(counters, sp->kind);
    uint64_t pair;
    char shape_text[MEMEST_SHAPE_TEXT_MAX];
    char autoname[48];
    const char *name;
    size_t name_len;
    size_t dup;
    int st;

    memset(&L, 0, sizeof L);
    L.kind = sp->kind;
    L.act = sp->act;
    L.in_shape = *in;
    L.groups = 1;
    L.line = c->line;
    (*counter)++;

    switch (sp->kind) {
    case MEMEST_KIND_DENSE:
        if (in->rank != 1) {
            memest_shape_format(in, shape_text, sizeof shape_text);
            return fail(c, MEMEST_E_SHAPE, c->line, sp->col_kind,
                        "dense needs a feature vector but its input is "
                        "%s (CxHxW); add a 'flatten' line before it",
                        shape_text);
        }
        L.units = sp->units;
        L.has_bias = sp->has_bias;
        if (mul_ovf(in->dim[0], sp->units, &L.weight_count)) {
            return overflow_in(c, sp, "the weight count");
        }
        L.bias_count = sp->has_bias ? sp->units : 0;
        L.macs_per_sample = L.weight_count;
        L.out_shape.rank = 1;
        L.out_shape.dim[0] = sp->units;
        break;
    case MEMEST_KIND_CONV2D:
    case MEMEST_KIND_MAXPOOL:
    case MEMEST_KIND_AVGPOOL: {
        uint64_t oh;
        uint64_t ow;
        if (in->rank != 3) {
            memest_shape_format(in, shape_text, sizeof shape_text);
            return fail(c, MEMEST_E_SHAPE, c->line, sp->col_kind,
                        "%s needs a CxHxW input but gets a vector of %s "
                        "features", sp->kind_text, shape_text);
        }
        L.kernel = sp->k;
        L.stride = sp->s;
        L.padding = sp->p;
        st = window_out(c, sp, in->dim[1], "height", in, &oh);
        if (st != MEMEST_OK) {
            return st;
        }
        st = window_out(c, sp, in->dim[2], "width", in, &ow);
        if (st != MEMEST_OK) {
            return st;
        }
        L.out_shape.rank = 3;
        L.out_shape.dim[1] = oh;
        L.out_shape.dim[2] = ow;
        if (sp->kind != MEMEST_KIND_CONV2D) {
            L.out_shape.dim[0] = in->dim[0];
            break;
        }
        {
            uint64_t per_group;
            uint64_t kk;
            uint64_t out_elems;
            L.units = sp->units;
            L.groups = sp->g;
            L.act = sp->act;
            L.has_bias = sp->has_bias;
            L.out_shape.dim[0] = sp->units;
            if (in->dim[0] % sp->g != 0) {
                return fail(c, MEMEST_E_SHAPE, c->line, sp->col_g,
                            "conv2d: input channels %llu are not divisible "
                            "by groups g=%llu",
                            (unsigned long long)in->dim[0],
                            (unsigned long long)sp->g);
            }
            if (sp->units % sp->g != 0) {
                return fail(c, MEMEST_E_SHAPE, c->line, sp->col_g,
                            "conv2d: output channels %llu are not divisible "
                            "by groups g=%llu",
                            (unsigned long long)sp->units,
                            (unsigned long long)sp->g);
            }
            per_group = in->dim[0] / sp->g;
            if (mul_ovf(sp->k, sp->k, &kk) ||
                mul_ovf(kk, per_group, &kk) ||
                mul_ovf(kk, sp->units, &L.weight_count)) {
                return overflow_in(c, sp, "the weight count");
            }
            L.bias_count = sp->has_bias ? sp->units : 0;
            if (mul_ovf(sp->units, oh, &out_elems) ||
                mul_ovf(out_elems, ow, &out_elems)) {
                return overflow_in(c, sp, "the output size");
            }
            /* kk is k*k*(in_c/g): MACs per output element */
            if (mul_ovf(out_elems, kk, &L.macs_per_sample)) {
                return overflow_in(c, sp, "the MAC count");
            }
        }
        break;
    }
    case MEMEST_KIND_FLATTEN: {
        L.out_shape.rank = 1;
        L.out_shape.dim[0] = in_elems;
        break;
    }
    default:
        L.out_shape = *in;
        break;
    }

    L.output_elements = 1;
    for (unsigned i = 0; i < L.out_shape.rank; i++) {
        if (mul_ovf(L.output_elements, L.out_shape.dim[i],
                    &L.output_elements)) {
            return overflow_in(c, sp, "the output size");
        }
    }
    if (add_ovf(L.weight_count, L.bias_count, &L.parameter_count)) {
        return overflow_in(c, sp, "the parameter count");
    }
    if (add_ovf(m->parameter_count, L.parameter_count, &m->parameter_count)) {
        return overflow_in(c, sp, "the model's parameter count");
    }
    if (add_ovf(m->macs_per_sample, L.macs_per_sample,
                &m->macs_per_sample)) {
        return overflow_in(c, sp, "the model's MAC count");
    }
    if (add_ovf(m->activation_elements, L.output_elements,
                &m->activation_elements)) {
        return overflow_in(c, sp, "the model's activation count");
    }
    if (add_ovf(in_elems, L.output_elements, &pair)) {
        return overflow_in(c, sp, "input plus output size");
    }
    if (pair > m->peak_pair_elements) {
        m->peak_pair_elements = pair;
    }

    if (sp->name.s != NULL) {
        name = sp->name.s;
        name_len = sp->name.n;
    } else {
        snprintf(autoname, sizeof autoname, "%s%llu",
                 family_prefix(sp->kind), (unsigned long long)*counter);
        name = autoname;
        name_len = strlen(autoname);
    }
    dup = find_name(m, name, name_len);
    if (dup != SIZE_MAX) {
        if (sp->name.s != NULL) {
            return fail(c, MEMEST_E_PARSE, c->line, sp->name.col,
                        "duplicate layer name '%.*s' (first used on line "
                        "%d)", (int)(name_len > 60 ? 60 : name_len), name,
                        m->layers[dup].line);
        }
        return fail(c, MEMEST_E_PARSE, c->line, sp->col_kind,
                    "the automatic name '%s' is already used on line %d; "
                    "give this layer a name=", name, m->layers[dup].line);
    }
    st = reserve(m);
    if (st != MEMEST_OK) {
        return fail(c, st, c->line, sp->col_kind, "out of memory");
    }
    {
        char *copy = malloc(name_len + 1);
        if (copy == NULL) {
            return fail(c, MEMEST_E_NOMEM, c->line, sp->col_kind,
                        "out of memory");
        }
        memcpy(copy, name, name_len);
        copy[name_len] = '\0';
        L.name = copy;
    }
    m->layers[m->count] = L;
    insert_slot(m->slots, m->slot_cap, L.name, m->count);
    m->count++;
    return MEMEST_OK;
}

/* ---- Tokens and values -------------------------------------------------- */

/*
 * Parse an unsigned decimal. min is the smallest allowed value (0 or 1).
 * `what` names the value in messages.
 */
static int parse_u64(struct ctx *c, const struct tok *t, uint64_t min,
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
        unsigned d = (unsigned)(unsigned char)t->s[i] - '0';
        if (d > 9) {
            return fail(c, MEMEST_E_PARSE, c->line, t->col,
                        "%s: '" TOKFMT "' is not a whole number", what,
                        TOKARG(t));
        }
    }
    for (i = 0; i < t->n; i++) {
        unsigned d = (unsigned)(unsigned char)t->s[i] - '0';
        if (mul_ovf(v, 10, &v) || add_ovf(v, d, &v)) {
            return fail(c, MEMEST_E_RANGE, c->line, t->col,
                        "%s: " TOKFMT " is too large (the limit is "
                        "18446744073709551615)", what, TOKARG(t));
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

/* "N" or "CxHxW". */
static int parse_shape(struct ctx *c, const struct tok *t,
                       struct memest_shape *out)
{
    struct memest_shape sh;
    size_t start = 0;

    memset(&sh, 0, sizeof sh);
    for (size_t i = 0; i <= t->n; i++) {
        if (i < t->n && t->s[i] != 'x' && t->s[i] != 'X') {
            continue;
        }
        if (sh.rank == 3) {
            return fail(c, MEMEST_E_PARSE, c->line, t->col,
                        "input shape '" TOKFMT "' has more than three "
                        "dimensions; write N or CxHxW", TOKARG(t));
        }
        {
            struct tok part = {t->s + start, i - start,
                               col_add(t->col, start)};
            int st;
            if (part.n == 0) {
                return fail(c, MEMEST_E_PARSE, c->line, part.col,
                            "input shape '" TOKFMT "' has an empty "
                            "dimension; write N or CxHxW", TOKARG(t));
            }
            st = parse_u64(c, &part, 1, "input dimension",
                           &sh.dim[sh.rank]);
            if (st != MEMEST_OK) {
                return st;
            }
        }
        sh.rank++;
        start = i + 1;
    }
    if (sh.rank == 2) {
        return fail(c, MEMEST_E_PARSE, c->line, t->col,
                    "input shape '" TOKFMT "' has two dimensions; write N "
                    "for a feature vector or CxHxW for an image",
                    TOKARG(t));
    }
    *out = sh;
    return MEMEST_OK;
}

static int parse_act(const struct tok *t, enum memest_act *out)
{
    static const char *const names[] = {"none", "relu", "gelu",
                                        "sigmoid", "tanh", "softmax"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (tok_is(t, names[i])) {
            *out = (enum memest_act)i;
            return 1;
        }
    }
    return 0;
}

struct kind_info {
    const char *word;
    enum memest_kind kind;
    enum memest_act act;
    int positional; /* takes a width */
    const char *keys;  /* allowed keys, for the message */
};

static const struct kind_info kinds[] = {
    {"dense", MEMEST_KIND_DENSE, MEMEST_ACT_NONE, 1, "name, act, bias"},
    {"conv2d", MEMEST_KIND_CONV2D, MEMEST_ACT_NONE, 1,
     "name, k, s, p, g, act, bias"},
    {"maxpool", MEMEST_KIND_MAXPOOL, MEMEST_ACT_NONE, 0, "name, k, s, p"},
    {"avgpool", MEMEST_KIND_AVGPOOL, MEMEST_ACT_NONE, 0, "name, k, s, p"},
    {"flatten", MEMEST_KIND_FLATTEN, MEMEST_ACT_NONE, 0, "name"},
    {"relu", MEMEST_KIND_ACTIVATION, MEMEST_ACT_RELU, 0, "name"},
    {"gelu", MEMEST_KIND_ACTIVATION, MEMEST_ACT_GELU, 0, "name"},
    {"sigmoid", MEMEST_KIND_ACTIVATION, MEMEST_ACT_SIGMOID, 0, "name"},
    {"tanh", MEMEST_KIND_ACTIVATION, MEMEST_ACT_TANH, 0, "name"},
    {"softmax", MEMEST_KIND_ACTIVATION, MEMEST_ACT_SOFTMAX, 0, "name"},
};

static int key_allowed(enum memest_kind kind, const struct tok *key)
{
    if (tok_is(key, "name")) {
        return 1;
    }
    if (kind == MEMEST_KIND_DENSE || kind == MEMEST_KIND_CONV2D) {
        if (tok_is(key, "act") || tok_is(key, "bias")) {
            return 1;
        }
    }
    if (kind == MEMEST_KIND_CONV2D || kind == MEMEST_KIND_MAXPOOL ||
        kind == MEMEST_KIND_AVGPOOL) {
        if (tok_is(key, "k") || tok_is(key, "s") || tok_is(key, "p")) {
            return 1;
        }
    }
    return kind == MEMEST_KIND_CONV2D && tok_is(key, "g");
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

static int next_tok(struct line_iter *it, struct tok *t)
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
    struct counters counters;
    int name_line;
    int input_line;
};

static int parse_layer(struct parser *P, const struct kind_info *ki,
                       const struct tok *kw, struct line_iter *it)
{
    struct ctx *c = &P->c;
    struct spec sp;
    struct tok t;
    unsigned seen = 0; /* bit per key, for duplicates */
    int st;

    memset(&sp, 0, sizeof sp);
    sp.kind = ki->kind;
    sp.act = ki->act;
    sp.kind_text = ki->word;
    sp.col_kind = kw->col;
    sp.g = 1;
    sp.has_bias = 1;

    if (P->input_line == 0) {
        return fail(c, MEMEST_E_PARSE, c->line, kw->col,
                    "missing input: an 'input N' or 'input CxHxW' line "
                    "must come before the first layer");
    }
    while (next_tok(it, &t)) {
        const char *eq = memchr(t.s, '=', t.n);
        struct tok key;
        struct tok val;
        unsigned bit;

        if (eq == NULL) {
            if (ki->positional && !sp.have_units) {
                st = parse_u64(c, &t, 1,
                               ki->kind == MEMEST_KIND_DENSE
                                   ? "dense width"
                                   : "conv2d output channels",
                               &sp.units);
                if (st != MEMEST_OK) {
                    return st;
                }
                sp.have_units = 1;
                sp.col_units = t.col;
                continue;
            }
            return fail(c, MEMEST_E_PARSE, c->line, t.col,
                        "unexpected '" TOKFMT "' in a %s line; options are "
                        "key=value (%s)", TOKARG(&t), ki->word, ki->keys);
        }
        key.s = t.s;
        key.n = (size_t)(eq - t.s);
        key.col = t.col;
        val.s = eq + 1;
        val.n = t.n - key.n - 1;
        val.col = col_add(t.col, key.n + 1);
        if (!key_allowed(ki->kind, &key)) {
            return fail(c, MEMEST_E_PARSE, c->line, key.col,
                        "unknown key '" TOKFMT "' for %s (expected %s)",
                        TOKARG(&key), ki->word, ki->keys);
        }
        bit = tok_is(&key, "name")   ? 1u
              : tok_is(&key, "act")  ? 2u
              : tok_is(&key, "bias") ? 4u
              : tok_is(&key, "k")    ? 8u
              : tok_is(&key, "s")    ? 16u
              : tok_is(&key, "p")    ? 32u
                                     : 64u;
        if (seen & bit) {
            return fail(c, MEMEST_E_PARSE, c->line, key.col,
                        "duplicate key '" TOKFMT "'", TOKARG(&key));
        }
        seen |= bit;
        switch (bit) {
        case 1u:
            if (val.n == 0) {
                return fail(c, MEMEST_E_PARSE, c->line, val.col,
                            "missing value for name");
            }
            if (tok_is(&val, "input")) {
                return fail(c, MEMEST_E_PARSE, c->line, val.col,
                            "the name 'input' is reserved for the model "
                            "input");
            }
            sp.name = val;
            break;
        case 2u:
            if (!parse_act(&val, &sp.act)) {
                return fail(c, MEMEST_E_PARSE, c->line, val.col,
                            "unknown activation '" TOKFMT "' (expected "
                            "none, relu, gelu, sigmoid, tanh or softmax)",
                            TOKARG(&val));
            }
            break;
        case 4u:
            if (tok_is(&val, "yes")) {
                sp.has_bias = 1;
            } else if (tok_is(&val, "no")) {
                sp.has_bias = 0;
            } else {
                return fail(c, MEMEST_E_PARSE, c->line, val.col,
                            "bias must be yes or no, got '" TOKFMT "'",
                            TOKARG(&val));
            }
            break;
        case 8u:
            st = parse_u64(c, &val, 1, "kernel size k", &sp.k);
            sp.have_k = 1;
            sp.col_k = val.col;
            break;
        case 16u:
            st = parse_u64(c, &val, 1, "stride s", &sp.s);
            sp.have_s = 1;
            sp.col_s = val.col;
            break;
        case 32u:
            st = parse_u64(c, &val, 0, "padding p", &sp.p);
            sp.col_p = val.col;
            break;
        default:
            st = parse_u64(c, &val, 1, "groups g", &sp.g);
            sp.col_g = val.col;
            break;
        }
        if (bit >= 8u && st != MEMEST_OK) {
            return st;
        }
    }
    if (ki->positional && !sp.have_units) {
        return fail(c, MEMEST_E_PARSE, c->line, kw->col,
                    "missing width: %s needs the number of %s first, e.g. "
                    "'%s'", ki->word,
                    ki->kind == MEMEST_KIND_DENSE ? "output features"
                                                  : "output channels",
                    ki->kind == MEMEST_KIND_DENSE ? "dense 10"
                                                  : "conv2d 8 k=3");
    }
    if ((ki->kind == MEMEST_KIND_CONV2D || ki->kind == MEMEST_KIND_MAXPOOL ||
         ki->kind == MEMEST_KIND_AVGPOOL) && !sp.have_k) {
        return fail(c, MEMEST_E_PARSE, c->line, kw->col,
                    "missing kernel size: %s needs k=, e.g. '%s'", ki->word,
                    ki->kind == MEMEST_KIND_CONV2D ? "conv2d 8 k=3"
                                                   : "maxpool k=2");
    }
    if (!sp.have_s) {
        /* conv stride defaults to 1, pooling stride to the kernel size */
        sp.s = ki->kind == MEMEST_KIND_CONV2D ? 1 : sp.k;
        sp.col_s = kw->col;
    }
    if (sp.col_p == 0) {
        sp.col_p = kw->col;
    }
    if (sp.col_g == 0) {
        sp.col_g = sp.col_units ? sp.col_units : kw->col;
    }
    return add_layer(c, P->m, &P->counters, &sp);
}

static int parse_line(struct parser *P, const char *s, size_t n)
{
    struct ctx *c = &P->c;
    struct line_iter it = {s, n, 0};
    struct tok kw;
    struct tok t;
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
            return fail(c, st, c->line, kw.col, "out of memory");
        }
        P->name_line = c->line;
    } else if (tok_is(&kw, "input")) {
        struct memest_shape sh;
        if (P->input_line != 0) {
            return fail(c, MEMEST_E_PARSE, c->line, kw.col,
                        "duplicate 'input' line (first on line %d)",
                        P->input_line);
        }
        if (!next_tok(&it, &t)) {
            return fail(c, MEMEST_E_PARSE, c->line, kw.col,
                        "missing input shape: write 'input N' or "
                        "'input CxHxW'");
        }
        st = parse_shape(c, &t, &sh);
        if (st != MEMEST_OK) {
            return st;
        }
        st = set_input(c, P->m, &sh, t.col);
        if (st != MEMEST_OK) {
            return st;
        }
        P->input_line = c->line;
    } else {
        const struct kind_info *ki = NULL;
        for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
            if (tok_is(&kw, kinds[i].word)) {
                ki = &kinds[i];
                break;
            }
        }
        if (ki == NULL) {
            return fail(c, MEMEST_E_PARSE, c->line, kw.col,
                        "unknown layer kind '" TOKFMT "' (expected input, "
                        "name, dense, conv2d, maxpool, avgpool, flatten, "
                        "relu, gelu, sigmoid, tanh or softmax)",
                        TOKARG(&kw));
        }
        return parse_layer(P, ki, &kw, &it);
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
    if (P->input_line == 0) {
        return fail(&P->c, MEMEST_E_PARSE, 1, 1,
                    "empty model: no 'input' line and no layers");
    }
    if (P->m->count == 0) {
        return fail(&P->c, MEMEST_E_PARSE, P->input_line, 1,
                    "empty model: no layers after 'input'");
    }
    return MEMEST_OK;
}

/* Finish a parse: default name, result or cleanup. */
static int finish(struct parser *P, int st, const char *default_name,
                  memest_model **out)
{
    if (st == MEMEST_OK && P->m->name == NULL) {
        st = set_model_name(P->m, default_name, strlen(default_name));
        if (st != MEMEST_OK) {
            fail(&P->c, st, 0, 0, "out of memory");
        }
    }
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
        return fail(&P->c, MEMEST_E_NOMEM, 0, 0, "out of memory");
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

static const char smallcnn_text[] =
    "name smallcnn\n"
    "input 1x28x28\n"
    "conv2d 8 k=3 s=1 p=1 act=relu\n"
    "maxpool k=2\n"
    "conv2d 16 k=3 p=1 act=relu\n"
    "maxpool k=2\n"
    "flatten\n"
    "dense 10 act=softmax\n";

int memest_is_preset_name(const char *text)
{
    if (text == NULL) {
        return 0;
    }
    return strncmp(text, "mlp:", 4) == 0 || strcmp(text, "smallcnn") == 0;
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
        struct tok t;
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
            st = set_input(c, P->m, &sh, t.col);
            P->input_line = 1;
        } else {
            struct spec sp;
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
            st = add_layer(c, P->m, &P->counters, &sp);
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
    return MEMEST_OK;
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
    if (strcmp(name, "smallcnn") == 0) {
        return parse_named(smallcnn_text, sizeof smallcnn_text - 1,
                           "smallcnn", "smallcnn", out, diag);
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
                  "smallcnn)", name);
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
    FILE *f;
    char *text = NULL;
    size_t len = 0;
    size_t cap = 0;
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
    set_source(diag, path_or_preset);
    f = fopen(path_or_preset, "rb");
    if (f == NULL) {
        if (diag != NULL) {
            snprintf(diag->message, sizeof diag->message,
                     "cannot open the model file: %s", strerror(errno));
        }
        return MEMEST_E_IO;
    }
    for (;;) {
        size_t got;
        if (len == cap) {
            char *grown;
            if (cap > MAX_FILE_BYTES) {
                st = MEMEST_E_RANGE;
                if (diag != NULL) {
                    snprintf(diag->message, sizeof diag->message,
                             "the model file is larger than 64 MiB");
                }
                goto fail_read;
            }
            cap = cap ? cap * 2 : 4096;
            grown = realloc(text, cap);
            if (grown == NULL) {
                st = MEMEST_E_NOMEM;
                if (diag != NULL) {
                    snprintf(diag->message, sizeof diag->message,
                             "out of memory reading the model file");
                }
                goto fail_read;
            }
            text = grown;
        }
        got = fread(text + len, 1, cap - len, f);
        len += got;
        if (got == 0) {
            break;
        }
    }
    if (ferror(f)) {
        st = MEMEST_E_IO;
        if (diag != NULL) {
            snprintf(diag->message, sizeof diag->message,
                     "error reading the model file: %s", strerror(errno));
        }
        goto fail_read;
    }
    if (len > MAX_FILE_BYTES) {
        st = MEMEST_E_RANGE;
        if (diag != NULL) {
            snprintf(diag->message, sizeof diag->message,
                     "the model file is larger than 64 MiB");
        }
        goto fail_read;
    }
    fclose(f);
    base_name(path_or_preset, default_name, sizeof default_name);
    st = parse_named(text ? text : "", len, path_or_preset, default_name,
                     out, diag);
    free(text);
    return st;

fail_read:
    fclose(f);
    free(text);
    return st;
}
