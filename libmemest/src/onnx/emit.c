/*
 * ONNX import: the layers the handlers make, their outputs and weights,
 * and the description text rendered from them, which
 * memest_model_parse_buffer() builds (its diagnostics, about lines of the
 * text, are mapped back to the node that made the line).
 */
#include "onnx/onnx_internal.h"
#include "op.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../alloc_rec.h" /* last: it wraps malloc and co. */

int push_layer(struct imp *I, size_t node, const char *kind,
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
int layer_inputs(struct imp *I, size_t l, const size_t *vals,
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
int set_output(struct imp *I, size_t node, size_t slot, size_t l,
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
    /* a signal stays one through the layers that keep its shape's
     * height of 1 (Conv, the pools, element-wise); translate_node() lets
     * only such operators read one */
    v->sig = 0;
    for (size_t i = 0; rank == 4 && dim[2] == 1 && i < n->n_input; i++) {
        size_t xi = value_of(I, str(n->input[i]));
        v->sig |= xi != SIZE_MAX && I->v[xi].sig;
    }
    v->shaped = 1;
    v->rank = rank;
    memcpy(v->dim, dim, sizeof v->dim);
    v->layer = l;
    v->ref = I->L[l].name;
    return MEMEST_OK;
}

int push_weight(struct imp *I, size_t l, const char *suffix,
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
static int try_fuse(struct imp *I, size_t x, enum memest_act act,
                    double alpha, double beta)
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
        (act == MEMEST_ACT_RELU || act == MEMEST_ACT_RELU6 ||
         (act == MEMEST_ACT_CLIP && alpha >= 0.0))) {
        L->act = act;
        L->act_alpha = alpha;
        L->act_beta = beta;
        return 1;
    }
    if (L->act != MEMEST_ACT_NONE) {
        return 0;
    }
    L->act = act;
    L->act_alpha = alpha;
    L->act_beta = beta;
    return 1;
}

/* An activation node: fused into its producer, or a layer of its own. */
int emit_act(struct imp *I, size_t node, size_t x,
                    enum memest_act act, const char *want_name)
{
    double alpha, beta;
    op_act_defaults(act, &alpha, &beta);
    return emit_act_params(I, node, x, act, alpha, beta, want_name);
}

int emit_act_params(struct imp *I, size_t node, size_t x,
                    enum memest_act act, double alpha, double beta,
                    const char *want_name)
{
    const char *kind = memest_act_name(act);
    const struct value *v = &I->v[x];
    size_t l = 0;
    int st;

    if (try_fuse(I, x, act, alpha, beta)) {
        return set_output(I, node, 0, v->layer, v->rank, v->dim);
    }
    st = push_layer(I, node, kind, want_name, kind, &l);
    if (st == MEMEST_OK) {
        struct out_layer *L = &I->L[l];
        struct op_out o = {L->args, sizeof L->args, 0};
        struct memest_layer p;
        memset(&p, 0, sizeof p);
        p.act_alpha = alpha;
        p.act_beta = beta;
        /* " alpha=V": the leading space of op_put_act_params() is the
         * render's separator */
        op_put_act_params(&o, act, &p);
        if (o.len > 0) {
            memmove(L->args, L->args + 1, strlen(L->args + 1) + 1);
        }
        st = layer_inputs(I, l, &x, 1);
    }
    if (st == MEMEST_OK) {
        st = set_output(I, node, 0, l, v->rank, v->dim);
    }
    return st;
}

/* A layer of `kind` with one input and the output shape given. */
int emit_simple(struct imp *I, size_t node, const char *kind,
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
int emit_flat(struct imp *I, size_t node, size_t x)
{
    uint64_t dim[4] = {I->v[x].dim[0], per_sample(&I->v[x]), 0, 0};
    if (I->v[x].rank == 2) {
        return emit_simple(I, node, "identity", "identity", x, 2, dim);
    }
    return emit_simple(I, node, "flatten", "flatten", x, 2, dim);
}

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
        char params[96] = "";
        if (L->act != MEMEST_ACT_NONE) {
            struct op_out o = {params, sizeof params, 0};
            struct memest_layer p;
            memset(&p, 0, sizeof p);
            p.act_alpha = L->act_alpha;
            p.act_beta = L->act_beta;
            op_put_act_params(&o, L->act, &p);
        }
        st = buf_printf(b, "%s%s%s name=%s in=%s%s%s%s\n", L->kind,
                        L->args[0] ? " " : "", L->args, L->name, L->in,
                        L->act != MEMEST_ACT_NONE ? " act=" : "",
                        L->act != MEMEST_ACT_NONE ? memest_act_name(L->act)
                                                  : "",
                        params);
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

int build(struct imp *I, const char *model_name, memest_model **out)
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
    for (size_t k = 0; k < I->ninputs; k++) {
        model_set_batch_axes(m, k, I->v[I->input_values[k]].batch_axis,
                             I->output_batch_axis);
    }
    *out = m;
    m = NULL;
done:
    memest_model_destroy(m);
    free(ts);
    free(line_node);
    free(b.s);
    return st;
}
