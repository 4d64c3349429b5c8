/*
 * ONNX import of LSTM and GRU (layers lstm and gru, batch first).
 *
 * ONNX's recurrent operators are time-major (layout 0: X [T, N, D], Y
 * [T, dirs, N, H], Y_h [dirs, N, H]); edgefit's layers read and write a
 * sample's T x D. PyTorch 1.13 exports a batch_first nn.LSTM/nn.GRU as
 *
 *     Transpose(perm 1,0,2) -> LSTM -> Squeeze(axes 1)            (one
 *         direction; bidirectional: Transpose(perm 0,2,1,3) -> Reshape
 *         to [T, N, 2H]) -> the next layer's LSTM, or Transpose(perm
 *         1,0,2) back to [N, T, H] (then, for y[:, -1], a Gather of the
 *         last step, axis 1)
 *
 * and its initial states as slices of a ConstantOfShape of zeros sized
 * by the batch. onnx_rnn_find() (called by analyse()) recognises those
 * exact chains around each LSTM/GRU node and marks their other nodes
 * skipped; the handler checks the values (perms, axes, the gather's
 * index, zero states), makes one layer and gives it the value at the
 * chain's end, held batch first. A time-major value between two
 * recurrent nodes has only recurrent readers, so no other operator ever
 * sees it in the wrong order.
 *
 * Weights: ONNX's W [dirs, G*H, D], R [dirs, G*H, H] and B [dirs,
 * 2*G*H] (Wb then Rb) in its gate order (LSTM i, o, f, c; GRU z, r, h)
 * become PyTorch's weight_ih_l0, weight_hh_l0, bias_ih_l0, bias_hh_l0
 * (and _reverse) in PyTorch's (LSTM i, f, g, o; GRU r, z, n).
 */
#include "onnx/onnx_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../alloc_rec.h" /* last: it wraps malloc and co. */

/* What surrounds one LSTM/GRU node. */
struct rnn_match {
    size_t in_tr;   /* the Transpose(1,0,2) making X, or SIZE_MAX */
    size_t chain[8]; /* the nodes after it, in order */
    /* bidirectional, the last states: the Gathers of steps T-1 and 0,
     * the Slices of the forward and the reverse halves, the Concat */
    size_t last_gather[2], last_slice[2];
    int bi_last;
    /* h_n[-1] of stacked layers: the Concat of their Y_h (its input
     * count), then a Gather of the last */
    size_t yh_concat;
    size_t nchain;
    size_t end;     /* the node whose output 0 the layer makes */
    int from_yh;    /* the chain starts at Y_h (slot 1), not Y */
    int seq;        /* every step (1) or the last (0) */
    int batch_first; /* the end value is [N, T, .] rather than time-major */
    int tm_last;    /* the end is a Gather(axis 0) of the last step of a
                     * time-major Y (y[-1] of a PyTorch time-major LSTM) */
    unsigned out_axis; /* the end value is the graph output, its batch at
                        * this axis of ONNX's shape (0: batch first) */
};

static int is_op(const struct imp *I, size_t node, const char *op)
{
    return node != SIZE_MAX && I->ni[node].live &&
           str_eq(I->g->node[node]->op_type, op);
}

static size_t out_value(struct imp *I, size_t node, size_t slot)
{
    const Onnx__NodeProto *n = I->g->node[node];
    return slot < n->n_output ? value_of(I, str(n->output[slot])) : SIZE_MAX;
}

static size_t only_reader(const struct imp *I, size_t vi)
{
    if (vi == SIZE_MAX || vi == I->output_value || I->v[vi].readers != 1) {
        return SIZE_MAX;
    }
    return I->v[vi].reader;
}

static int perm_is(const struct imp *I, size_t node, const int64_t *want,
                   size_t n)
{
    const Onnx__AttributeProto *p = attr(I->g->node[node], "perm");
    if (p == NULL || p->n_ints != n) {
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        if (p->ints[i] != want[i]) {
            return 0;
        }
    }
    return 1;
}

static int is_rnn(const struct imp *I, size_t node)
{
    return is_op(I, node, "LSTM") || is_op(I, node, "GRU");
}

/* Value vi has no live reader but nodes a pattern covers. */
static int read_only_by_skipped(struct imp *I, size_t vi)
{
    if (vi == SIZE_MAX || I->v[vi].readers == 0) {
        return 1;
    }
    if (vi == I->output_value) {
        return 0;
    }
    for (size_t i = 0; i < I->g->n_node; i++) {
        const Onnx__NodeProto *n = I->g->node[i];
        for (size_t k = 0; I->ni[i].live && !I->ni[i].skip && k < n->n_input;
             k++) {
            if (value_of(I, str(n->input[k])) == vi) {
                return 0;
            }
        }
    }
    return 1;
}

/* Every live reader of value vi is a recurrent node reading it as X. */
static int rnn_readers_only(struct imp *I, size_t vi)
{
    size_t seen = 0;
    if (vi == SIZE_MAX || vi == I->output_value || I->v[vi].readers == 0) {
        return 0;
    }
    for (size_t i = 0; i < I->g->n_node; i++) {
        const Onnx__NodeProto *n = I->g->node[i];
        if (!I->ni[i].live) {
            continue;
        }
        for (size_t k = 0; k < n->n_input; k++) {
            if (value_of(I, str(n->input[k])) != vi) {
                continue;
            }
            if (!is_rnn(I, i) || k != 0) {
                return 0;
            }
            seen++;
        }
    }
    return seen == I->v[vi].readers;
}

static int directions(const Onnx__NodeProto *n)
{
    char buf[32];
    const char *d = attr_str(n, "direction", "forward", buf, sizeof buf);
    return strcmp(d, "bidirectional") == 0 ? 2 : 1;
}

/* torch.cat((y[:, -1, :H], y[:, 0, H:]), 1) on a bidirectional layer's
 * batch-first output vi (the forward direction's last state and the
 * reverse's, its h_n): two Gathers of axis 1, each read by a Slice, both
 * by one Concat. */
static int bi_last(struct imp *I, size_t vi, struct rnn_match *m)
{
    size_t g[2], ng = 0, sl[2], cat = SIZE_MAX;
    if (vi == SIZE_MAX || vi == I->output_value || I->v[vi].readers != 2) {
        return 0;
    }
    for (size_t i = 0; i < I->g->n_node && ng < 2; i++) {
        if (I->ni[i].live && value_of(I, in_name(I->g->node[i], 0)) == vi) {
            g[ng++] = i;
        }
    }
    if (ng != 2) {
        return 0;
    }
    for (size_t k = 0; k < 2; k++) {
        const Onnx__AttributeProto *ax = attr(I->g->node[g[k]], "axis");
        if (!is_op(I, g[k], "Gather") || ax == NULL || ax->i != 1) {
            return 0;
        }
        sl[k] = only_reader(I, out_value(I, g[k], 0));
        if (!is_op(I, sl[k], "Slice")) {
            return 0;
        }
        const size_t c = only_reader(I, out_value(I, sl[k], 0));
        if (!is_op(I, c, "Concat") || (cat != SIZE_MAX && c != cat)) {
            return 0;
        }
        cat = c;
    }
    const Onnx__NodeProto *cn = I->g->node[cat];
    if (cn->n_input != 2) {
        return 0;
    }
    /* the Concat's first input is the forward half */
    if (value_of(I, str(cn->input[0])) != out_value(I, sl[0], 0)) {
        size_t t = g[0];
        g[0] = g[1];
        g[1] = t;
        t = sl[0];
        sl[0] = sl[1];
        sl[1] = t;
    }
    if (value_of(I, str(cn->input[0])) != out_value(I, sl[0], 0) ||
        value_of(I, str(cn->input[1])) != out_value(I, sl[1], 0)) {
        return 0;
    }
    for (size_t k = 0; k < 2; k++) {
        m->last_gather[k] = g[k];
        m->last_slice[k] = sl[k];
        m->chain[m->nchain++] = g[k];
        m->chain[m->nchain++] = sl[k];
    }
    m->chain[m->nchain++] = cat;
    m->end = cat;
    m->seq = 0;
    m->bi_last = 1;
    return 1;
}

/* The structure around recurrent node `node` (no values read: those are
 * the handler's to check). 0 when it is not one of the exported forms. */
static int rnn_match(struct imp *I, size_t node, struct rnn_match *m)
{
    const Onnx__NodeProto *n = I->g->node[node];
    static const int64_t p102[3] = {1, 0, 2}, p0213[4] = {0, 2, 1, 3};
    const int dirs = directions(n);
    size_t x = value_of(I, in_name(n, 0));
    size_t y = out_value(I, node, 0), yh = out_value(I, node, 1);
    size_t cur, r;

    memset(m, 0, sizeof *m);
    m->in_tr = SIZE_MAX;
    m->end = SIZE_MAX;
    m->seq = 1;
    if (x != SIZE_MAX && I->v[x].kind == V_ACT) {
        size_t p = I->v[x].producer;
        if (is_op(I, p, "Transpose") && perm_is(I, p, p102, 3) &&
            only_reader(I, x) == node) {
            m->in_tr = p;
        }
    }
    if (y != SIZE_MAX && y == I->output_value) {
        /* Y [T, dirs, N, H] itself the graph output (ONNX's node tests):
         * its batch is axis 2 */
        m->end = node;
        m->out_axis = 2;
        return 1;
    }
    if (yh != SIZE_MAX && yh == I->output_value) {
        /* Y_h [dirs, N, H] itself the graph output: the batch is axis 1 */
        m->end = node;
        m->from_yh = 1;
        m->seq = 0;
        m->out_axis = 1;
        return 1;
    }
    if (y != SIZE_MAX && I->v[y].readers > 0) {
        if (dirs == 1) {
            cur = only_reader(I, y);
            if (!is_op(I, cur, "Squeeze")) {
                return 0;
            }
            m->chain[m->nchain++] = cur;
        } else {
            size_t t = only_reader(I, y);
            if (!is_op(I, t, "Transpose") || !perm_is(I, t, p0213, 4)) {
                return 0;
            }
            cur = only_reader(I, out_value(I, t, 0));
            if (!is_op(I, cur, "Reshape")) {
                return 0;
            }
            m->chain[m->nchain++] = t;
            m->chain[m->nchain++] = cur;
        }
        if (rnn_readers_only(I, out_value(I, cur, 0))) {
            m->end = cur; /* time-major, read by the next layer */
            return 1;
        }
        if (out_value(I, cur, 0) == I->output_value) {
            /* time-major [T, N, dirs*H], the graph output */
            m->end = cur;
            m->out_axis = 1;
            return 1;
        }
        r = only_reader(I, out_value(I, cur, 0));
        if (dirs == 1 && is_op(I, r, "Gather")) {
            /* y[-1] of a time-major layer: a Gather of the last step,
             * axis 0 (checked by the handler), [N, H] */
            const Onnx__AttributeProto *ax = attr(I->g->node[r], "axis");
            if (ax == NULL || ax->i == 0) {
                m->chain[m->nchain++] = r;
                m->end = r;
                m->seq = 0;
                m->tm_last = 1;
                m->batch_first = 1;
                return 1;
            }
        }
        if (!is_op(I, r, "Transpose") || !perm_is(I, r, p102, 3)) {
            return 0;
        }
        m->chain[m->nchain++] = r;
        m->end = r;
        m->batch_first = 1;
        cur = r;
        r = only_reader(I, out_value(I, cur, 0));
        if (dirs == 2 && bi_last(I, out_value(I, cur, 0), m)) {
            return 1;
        }
        if (dirs == 1 && is_op(I, r, "Gather")) {
            const Onnx__AttributeProto *ax = attr(I->g->node[r], "axis");
            if (ax != NULL && ax->i == 1) {
                m->chain[m->nchain++] = r;
                m->end = r;
                m->seq = 0;
            }
        }
        return 1;
    }
    if (dirs == 1 && yh != SIZE_MAX && I->v[yh].readers > 0) {
        /* h_n of one direction: Squeeze(axes 0) or Gather(axis 0); of a
         * stack (nn.GRU(num_layers=2)'s h_n[-1]), the Concat of the
         * layers' Y_h, this one last, then the Gather */
        r = only_reader(I, yh);
        if (is_op(I, r, "Concat")) {
            const Onnx__NodeProto *cn = I->g->node[r];
            const size_t g = only_reader(I, out_value(I, r, 0));
            if (cn->n_input < 1 ||
                value_of(I, str(cn->input[cn->n_input - 1])) != yh ||
                !is_op(I, g, "Gather")) {
                return 0;
            }
            m->yh_concat = cn->n_input;
            m->chain[m->nchain++] = r;
            r = g;
        } else if (!is_op(I, r, "Squeeze") && !is_op(I, r, "Gather")) {
            return 0;
        }
        m->chain[m->nchain++] = r;
        m->end = r;
        m->from_yh = 1;
        m->seq = 0;
        m->batch_first = 1;
        return 1;
    }
    return 0;
}

/* A state input made of zeros the way PyTorch exports them: Slice (or
 * nothing) of a ConstantOfShape; the nodes to skip in out (at most 2). */
static int zero_state_chain(struct imp *I, size_t vi, size_t *out,
                            size_t *nout)
{
    size_t p;
    *nout = 0;
    if (vi == SIZE_MAX || I->v[vi].kind != V_CONST) {
        return 0;
    }
    p = I->v[vi].producer;
    if (is_op(I, p, "Slice") && only_reader(I, vi) != SIZE_MAX) {
        out[(*nout)++] = p;
        vi = value_of(I, in_name(I->g->node[p], 0));
        if (vi == SIZE_MAX || I->v[vi].kind != V_CONST) {
            return 0;
        }
        p = I->v[vi].producer;
    }
    if (!is_op(I, p, "ConstantOfShape")) {
        *nout = 0;
        return 0;
    }
    out[(*nout)++] = p;
    return 1;
}

/* The value attribute of a ConstantOfShape is absent or zero. */
static int constant_of_shape_zero(struct imp *I, size_t node)
{
    const Onnx__AttributeProto *a = attr(I->g->node[node], "value");
    struct cval c;
    char why[64];
    int zero = 1;
    if (a == NULL) {
        return 1;
    }
    if (a->t == NULL || decode_tensor(a->t, &c, why, sizeof why) != 0) {
        return 0;
    }
    for (uint64_t i = 0; i < c.count; i++) {
        zero &= c.f[i] == 0.0f;
    }
    cval_free(&c);
    return zero;
}

void onnx_rnn_find(struct imp *I)
{
    for (size_t i = 0; i < I->g->n_node; i++) {
        struct rnn_match m;
        const Onnx__NodeProto *n = I->g->node[i];
        if (!is_rnn(I, i) || I->ni[i].skip) {
            continue;
        }
        {
            /* X a graph input read by this layout-0 node alone (Shapes
             * aside): ONNX's time-major [T, N, D], whose batch is axis
             * 1; the input is held batch first and the apps feeding it
             * move the batch (memest_model_input_batch_axis) */
            const Onnx__AttributeProto *lay = attr(n, "layout");
            const size_t xv = value_of(I, in_name(n, 0));
            if ((lay == NULL || lay->i == 0) && xv != SIZE_MAX &&
                I->v[xv].kind == V_GRAPH_INPUT &&
                I->v[xv].readers == 1 && !I->v[xv].shaped) {
                I->v[xv].batch_axis = 1;
            }
        }
        if (!rnn_match(I, i, &m)) {
            continue;
        }
        if (m.in_tr != SIZE_MAX) {
            I->ni[m.in_tr].skip = 1;
        }
        for (size_t k = 0; k < m.nchain; k++) {
            if (m.chain[k] != m.end) {
                I->ni[m.chain[k]].skip = 1;
            }
        }
        /* the end node's output is set by the recurrent node's handler */
        if (m.end != SIZE_MAX && m.end != i) {
            I->ni[m.end].skip = 1;
        }
        /* zero initial states: the ConstantOfShape of a free batch
         * cannot be folded, nor need it be */
        for (size_t slot = 5; slot <= 6 && slot < n->n_input; slot++) {
            size_t z[2], nz = 0;
            size_t vi = value_of(I, in_name(n, slot));
            if (zero_state_chain(I, vi, z, &nz)) {
                for (size_t k = 0; k < nz; k++) {
                    I->ni[z[k]].skip = 1;
                }
            }
        }
    }
}

/* The node's initial state input `slot` is absent or zeros. */
static int check_state(struct imp *I, size_t node, size_t slot,
                       const char *what)
{
    const Onnx__NodeProto *n = I->g->node[node];
    const char *nm = in_name(n, slot);
    size_t vi = value_of(I, nm);
    size_t z[2], nz;
    const struct cval *c;
    if (nm[0] == '\0') {
        return MEMEST_OK;
    }
    if (zero_state_chain(I, vi, z, &nz)) {
        if (constant_of_shape_zero(I, z[nz - 1])) {
            return MEMEST_OK;
        }
    } else if (vi != SIZE_MAX && is_constant(&I->v[vi]) &&
               get_const(I, node, slot, what, &c) == MEMEST_OK) {
        int zero = 1;
        for (uint64_t i = 0; i < c->count; i++) {
            zero &= c->f[i] == 0.0f;
        }
        if (zero) {
            return MEMEST_OK;
        }
    }
    return node_fail(I, node, MEMEST_E_PARSE,
                     "input %s '%.60s' is not a constant of zeros; "
                     "supported is a zero initial state (what PyTorch "
                     "exports when no h0 is given)", what, nm);
}

/* PyTorch's gate k comes from ONNX's gate map[k]. */
static const size_t lstm_from_onnx[4] = {0, 2, 3, 1}; /* i,f,g,o <- i,o,f,c */
static const size_t gru_from_onnx[3] = {1, 0, 2};     /* r,z,n <- z,r,h */

/* rows x cols blocks of G gates of one direction, reordered into a new
 * buffer (the caller's push_weight owns it). */
static float *reorder(const float *src, size_t G, size_t H, size_t cols,
                      const size_t *map)
{
    float *dst = malloc(G * H * cols * sizeof *dst);
    if (dst == NULL) {
        return NULL;
    }
    for (size_t k = 0; k < G; k++) {
        memcpy(dst + k * H * cols, src + map[k] * H * cols,
               H * cols * sizeof *dst);
    }
    return dst;
}

/* Check the scalar constant of slot `slot` of node `node` equals one of
 * a, b; *got the value. */
static int index_is(struct imp *I, size_t node, size_t slot, int64_t a,
                    int64_t b, int64_t *got)
{
    const struct cval *c;
    int st = get_const(I, node, slot, "indices", &c);
    if (st != MEMEST_OK) {
        return st;
    }
    if (c->count != 1 || c->rank > 1) {
        return node_fail(I, node, MEMEST_E_PARSE,
                         "indices must be one number here (a step of a "
                         "recurrent layer's output)");
    }
    *got = c->ints ? c->ints[0] : (int64_t)c->f[0];
    return *got == a || *got == b ? MEMEST_OK : MEMEST_E_PARSE;
}

/* Squeeze node `node` removes exactly axis `axis`. */
static int squeeze_axis_is(struct imp *I, size_t node, int64_t axis)
{
    int64_t axes[4];
    size_t na = 0;
    const struct cval *c;
    int st;
    if (I->g->node[node]->n_input >= 2) {
        st = get_const(I, node, 1, "axes", &c);
        if (st != MEMEST_OK) {
            return st;
        }
        na = c->count < 4 ? (size_t)c->count : 4;
        for (size_t i = 0; i < na; i++) {
            axes[i] = c->ints ? c->ints[i] : (int64_t)c->f[i];
        }
    } else if ((st = attr_ints(I, node, "axes", 0, axes, &na)) !=
               MEMEST_OK) {
        return st;
    }
    if (na != 1 || axes[0] != axis) {
        return node_fail(I, node, MEMEST_E_PARSE,
                         "a Squeeze after a recurrent node must remove "
                         "axis %lld alone (the directions' axis)",
                         (long long)axis);
    }
    return MEMEST_OK;
}

/* Slice node `node` keeps [begin, end) of axis 1 (ends past the width
 * are the width, as ONNX clamps them; steps of 1). */
static int slice_is(struct imp *I, size_t node, uint64_t begin, uint64_t end)
{
    const struct cval *c[4] = {NULL, NULL, NULL, NULL};
    int64_t v[4] = {0, 0, 1, 1};
    const Onnx__NodeProto *n = I->g->node[node];
    static const char *const role[4] = {"starts", "ends", "axes", "steps"};
    for (size_t k = 0; k < 4; k++) {
        if (k + 1 >= n->n_input || in_name(n, k + 1)[0] == '\0') {
            if (k < 2) {
                return node_fail(I, node, MEMEST_E_PARSE,
                                 "the %s are missing", role[k]);
            }
            continue;
        }
        int st = get_const(I, node, k + 1, role[k], &c[k]);
        if (st != MEMEST_OK) {
            return st;
        }
        if (c[k]->count != 1 || c[k]->ints == NULL) {
            return node_fail(I, node, MEMEST_E_PARSE,
                             "the %s must be one integer here", role[k]);
        }
        v[k] = c[k]->ints[0];
    }
    if (c[2] == NULL) {
        return node_fail(I, node, MEMEST_E_PARSE,
                         "the axes are missing (axis 1 is expected)");
    }
    const int64_t e = v[1] > (int64_t)end ? (int64_t)end : v[1];
    if ((v[2] != 1 && v[2] != -1) || v[3] != 1 || v[0] != (int64_t)begin ||
        e != (int64_t)end) {
        return node_fail(I, node, MEMEST_E_PARSE,
                         "after a bidirectional layer's last step, a Slice "
                         "must keep features [%llu, %llu) of axis 1",
                         (unsigned long long)begin, (unsigned long long)end);
    }
    return MEMEST_OK;
}

/* The values of bi_last()'s nodes: steps T-1 (or -1) and 0, halves
 * [0, H) and [H, 2H), a Concat of axis 1. */
static int check_bi_last(struct imp *I, const struct rnn_match *m,
                         uint64_t T, uint64_t H)
{
    int64_t got = 0;
    int st = index_is(I, m->last_gather[0], 1, -1, (int64_t)T - 1, &got);
    if (st == MEMEST_E_PARSE) {
        return node_fail(I, m->last_gather[0], MEMEST_E_PARSE,
                         "the forward direction's state must be the last "
                         "step (-1 or T-1), not %lld", (long long)got);
    }
    if (st == MEMEST_OK) {
        st = index_is(I, m->last_gather[1], 1, 0, -(int64_t)T, &got);
        if (st == MEMEST_E_PARSE) {
            return node_fail(I, m->last_gather[1], MEMEST_E_PARSE,
                             "the reverse direction's state must be step "
                             "0, not %lld", (long long)got);
        }
    }
    if (st == MEMEST_OK) {
        st = slice_is(I, m->last_slice[0], 0, H);
    }
    if (st == MEMEST_OK) {
        st = slice_is(I, m->last_slice[1], H, 2 * H);
    }
    if (st == MEMEST_OK) {
        const Onnx__AttributeProto *a = attr(I->g->node[m->end], "axis");
        if (a == NULL || (a->i != 1 && a->i != -1)) {
            return node_fail(I, m->end, MEMEST_E_PARSE,
                             "the Concat of a bidirectional layer's last "
                             "states must join axis 1");
        }
    }
    return st;
}

static int rnn_handler(struct imp *I, size_t node, int gru)
{
    const Onnx__NodeProto *n = I->g->node[node];
    const char *op = gru ? "GRU" : "LSTM";
    const size_t G = gru ? 3 : 4;
    const size_t *map = gru ? gru_from_onnx : lstm_from_onnx;
    struct rnn_match m;
    const struct cval *W, *R, *B = NULL;
    char dbuf[32];
    const char *dir;
    int64_t hidden = 0, layout = 0, lbr = 0;
    size_t x = 0, l = 0, out_slot = 0;
    int dirs, st;

    if (attr(n, "clip") != NULL) {
        return node_fail(I, node, MEMEST_E_PARSE,
                         "attribute 'clip' is not supported (the cell "
                         "state is not clipped by PyTorch's %s)", op);
    }
    if (attr(n, "input_forget") != NULL) {
        const Onnx__AttributeProto *a = attr(n, "input_forget");
        if (a->i != 0) {
            return node_fail(I, node, MEMEST_E_PARSE,
                             "attribute 'input_forget' = %lld is not "
                             "supported (only 0: separate input and forget "
                             "gates)", (long long)a->i);
        }
    }
    if (attr(n, "activation_alpha") != NULL ||
        attr(n, "activation_beta") != NULL) {
        return node_fail(I, node, MEMEST_E_PARSE,
                         "attribute '%s' is not supported (only the default "
                         "activations, without parameters)",
                         attr(n, "activation_alpha") ? "activation_alpha"
                                                     : "activation_beta");
    }
    {
        const Onnx__AttributeProto *a = attr(n, "activations");
        static const char *const want_lstm[3] = {"Sigmoid", "Tanh", "Tanh"};
        static const char *const want_gru[2] = {"Sigmoid", "Tanh"};
        const char *const *want = gru ? want_gru : want_lstm;
        const size_t per = gru ? 2 : 3;
        for (size_t i = 0; a != NULL && i < a->n_strings; i++) {
            const ProtobufCBinaryData *s = &a->strings[i];
            const char *w = want[i % per];
            if (s->len != strlen(w) || memcmp(s->data, w, s->len) != 0) {
                return node_fail(I, node, MEMEST_E_PARSE,
                                 "attribute 'activations' entry %zu '%.*s' "
                                 "is not supported (only the defaults: %s)",
                                 i, (int)(s->len < 32 ? s->len : 32),
                                 (const char *)s->data,
                                 gru ? "Sigmoid, Tanh"
                                     : "Sigmoid, Tanh, Tanh");
            }
        }
    }
    if ((st = attr_int(I, node, "hidden_size", 0, &hidden)) ||
        (st = attr_int(I, node, "layout", 0, &layout)) ||
        (gru && (st = attr_int(I, node, "linear_before_reset", 0, &lbr)))) {
        return st;
    }
    if (layout != 0 && layout != 1) {
        return node_fail(I, node, MEMEST_E_PARSE,
                         "attribute 'layout' = %lld is not supported (0, "
                         "time-major, with the Transpose PyTorch exports "
                         "for batch_first; or 1, batch-first)",
                         (long long)layout);
    }
    dir = attr_str(n, "direction", "forward", dbuf, sizeof dbuf);
    if (strcmp(dir, "forward") != 0 && strcmp(dir, "reverse") != 0 &&
        strcmp(dir, "bidirectional") != 0) {
        return node_fail(I, node, MEMEST_E_PARSE,
                         "attribute 'direction' = '%s' is not supported "
                         "(forward, reverse or bidirectional)", dir);
    }
    dirs = strcmp(dir, "bidirectional") == 0 ? 2 : 1;
    if (n->n_input > 4 && in_name(n, 4)[0] != '\0') {
        return node_fail(I, node, MEMEST_E_PARSE,
                         "input 'sequence_lens' is not supported (every "
                         "sequence runs all T steps)");
    }
    if (!gru && n->n_input > 7 && in_name(n, 7)[0] != '\0') {
        return node_fail(I, node, MEMEST_E_PARSE,
                         "input 'P' (peepholes) is not supported");
    }
    if ((st = check_state(I, node, 5, "initial_h")) ||
        (!gru && (st = check_state(I, node, 6, "initial_c")))) {
        return st;
    }
    if (!gru && n->n_output > 2 && out_value(I, node, 2) != SIZE_MAX &&
        I->v[out_value(I, node, 2)].readers > 0) {
        return node_fail(I, node, MEMEST_E_PARSE,
                         "output 'Y_c' is read; supported are Y and Y_h "
                         "(the cell state is not a layer's output)");
    }
    if (layout == 1) {
        /* batch-first: X [N, T, D] is the layer's input as it is; Y [N, T,
         * dirs, H] and Y_h [N, dirs, H] hold each sample's T x dirs*H and
         * dirs*H as the layer's output does (forward first), but with the
         * directions' axis apart, which a reader would see: one of them,
         * as the graph output */
        const size_t y = out_value(I, node, 0), yh = out_value(I, node, 1);
        const int y_read = y != SIZE_MAX && I->v[y].readers > 0;
        const int yh_read = yh != SIZE_MAX && I->v[yh].readers > 0;
        const size_t v = y_read ? y : yh;
        if (y_read == yh_read || v != I->output_value) {
            return node_fail(I, node, MEMEST_E_PARSE,
                             "with layout 1, supported is Y or Y_h (one of "
                             "them) as the graph output, each sample's "
                             "steps (or last states) with the directions "
                             "side by side");
        }
        memset(&m, 0, sizeof m);
        m.end = node;
        m.seq = y_read;
        out_slot = y_read ? 0 : 1;
        st = get_act(I, node, 0, &x);
    } else {
        const size_t xv = value_of(I, in_name(n, 0));
        const int x_graph = xv != SIZE_MAX && I->v[xv].kind == V_GRAPH_INPUT;
        if (x_graph && I->v[xv].batch_axis != 1) {
            /* its first axis, the steps, would be taken for the batch */
            return node_fail(I, node, MEMEST_E_PARSE,
                             "input X is the graph input '%.60s' in layout 0 "
                             "(time-major, [T, N, D]) and other nodes read "
                             "it too; supported is a time-major input read "
                             "by one LSTM/GRU alone", I->v[xv].name);
        }
        if (!rnn_match(I, node, &m)) {
            return node_fail(I, node, MEMEST_E_PARSE,
                             "its output is read in a form not supported: Y "
                             "through the Squeeze (bidirectional: Transpose "
                             "0,2,1,3 and Reshape) PyTorch exports, then the next "
                             "LSTM/GRU or a Transpose 1,0,2 (and a Gather of the "
                             "last step), or Y_h of one direction through a "
                             "Squeeze or Gather of axis 0");
        }
        if (m.end == node) {
            out_slot = m.from_yh ? 1 : 0; /* Y or Y_h, the graph output */
        }
        if (m.from_yh && out_value(I, node, 0) != SIZE_MAX &&
            I->v[out_value(I, node, 0)].readers > 0) {
            return node_fail(I, node, MEMEST_E_PARSE,
                             "both Y and Y_h are read; supported is one of them");
        }
        if (!m.from_yh && !read_only_by_skipped(I, out_value(I, node, 1))) {
            return node_fail(I, node, MEMEST_E_PARSE,
                             "both Y and Y_h are read; supported is one of them "
                             "(or Y_h into the h_n[-1] of a later layer)");
        }
        /* X: a time-major graph input (held batch first), through the
         * Transpose, or a previous layer's time-major output */
        if (x_graph) {
            st = get_act(I, node, 0, &x);
        } else if (m.in_tr != SIZE_MAX) {
            static const int64_t p102[3] = {1, 0, 2};
            if (!perm_is(I, m.in_tr, p102, 3)) {
                return node_fail(I, m.in_tr, MEMEST_E_PARSE, "unexpected perm");
            }
            st = get_act(I, m.in_tr, 0, &x);
        } else {
            const size_t p = xv != SIZE_MAX ? I->v[xv].producer : SIZE_MAX;
            if (xv == SIZE_MAX || I->v[xv].kind != V_ACT || p == SIZE_MAX ||
                !I->ni[p].skip) {
                return node_fail(I, node, MEMEST_E_PARSE,
                                 "input X must be time-major: a graph input, "
                                 "the Transpose(perm 1,0,2) PyTorch exports "
                                 "for batch_first, or a previous LSTM/GRU's "
                                 "output");
            }
            st = get_act(I, node, 0, &x);
        }
    }
    if (st != MEMEST_OK) {
        return st;
    }
    if (I->v[x].rank != 3) {
        return node_fail(I, node, MEMEST_E_PARSE,
                         "its input '%.60s' has rank %u; supported is a "
                         "sequence N x T x D", I->v[x].name, I->v[x].rank);
    }
    const uint64_t N = I->v[x].dim[0], T = I->v[x].dim[1],
                   D = I->v[x].dim[2];
    if ((st = get_const(I, node, 1, "weight W", &W)) ||
        (st = get_const(I, node, 2, "recurrence weight R", &R)) ||
        (n->n_input > 3 && in_name(n, 3)[0] != '\0' &&
         (st = get_const(I, node, 3, "bias B", &B)))) {
        return st;
    }
    const uint64_t H = W->rank == 3 ? W->dim[1] / G : 0;
    if (W->rank != 3 || W->dim[0] != (uint64_t)dirs || W->dim[1] % G != 0 ||
        W->dim[2] != D || H == 0 || (hidden != 0 && (uint64_t)hidden != H)) {
        return node_fail(I, node, MEMEST_E_SHAPE,
                         "W must be [%d, %zu*hidden_size, %llu] (hidden_size "
                         "%lld)", dirs, G, (unsigned long long)D,
                         (long long)hidden);
    }
    if (R->rank != 3 || R->dim[0] != (uint64_t)dirs || R->dim[1] != G * H ||
        R->dim[2] != H) {
        return node_fail(I, node, MEMEST_E_SHAPE,
                         "R must be [%d, %llu, %llu]", dirs,
                         (unsigned long long)(G * H),
                         (unsigned long long)H);
    }
    if (B != NULL && (B->rank != 2 || B->dim[0] != (uint64_t)dirs ||
                      B->dim[1] != 2 * G * H)) {
        return node_fail(I, node, MEMEST_E_SHAPE, "B must be [%d, %llu]",
                         dirs, (unsigned long long)(2 * G * H));
    }
    if (m.bi_last && (st = check_bi_last(I, &m, T, H)) != MEMEST_OK) {
        return st;
    }
    /* the chain's values */
    for (size_t k = 0; k < m.nchain && !m.bi_last; k++) {
        const size_t c = m.chain[k];
        if (is_op(I, c, "Squeeze") &&
            (st = squeeze_axis_is(I, c, m.from_yh ? 0 : 1)) != MEMEST_OK) {
            return st;
        }
        if (is_op(I, c, "Reshape")) {
            const struct cval *s;
            if ((st = get_const(I, c, 1, "shape", &s)) != MEMEST_OK) {
                return st;
            }
            const int64_t last = s->ints ? s->ints[s->count - 1] : 0;
            if (s->count != 3 ||
                (last != -1 && (uint64_t)last != 2 * H)) {
                return node_fail(I, c, MEMEST_E_PARSE,
                                 "a Reshape after a bidirectional %s must "
                                 "merge the directions into [T, N, %llu]",
                                 op, (unsigned long long)(2 * H));
            }
        }
        if (is_op(I, c, "Concat")) {
            const Onnx__AttributeProto *a = attr(I->g->node[c], "axis");
            if (a == NULL || a->i != 0) {
                return node_fail(I, c, MEMEST_E_PARSE,
                                 "a Concat of recurrent layers' Y_h must "
                                 "join axis 0 (their h_n)");
            }
        }
        if (is_op(I, c, "Gather")) {
            int64_t got = 0;
            const int64_t ax = m.from_yh || m.tm_last ? 0 : 1;
            const Onnx__AttributeProto *a = attr(I->g->node[c], "axis");
            /* Y_h: h_n[0] or h_n[-1] of one layer; of a stack, its last */
            const int64_t want_a = m.from_yh && !m.yh_concat ? 0 : -1;
            const int64_t want_b =
                !m.from_yh ? (int64_t)T - 1
                : m.yh_concat ? (int64_t)m.yh_concat - 1 : -1;
            if ((a == NULL ? 0 : a->i) != ax) {
                return node_fail(I, c, MEMEST_E_PARSE,
                                 "a Gather of a recurrent layer's output "
                                 "must take axis %lld", (long long)ax);
            }
            if (!m.from_yh && strcmp(dir, "reverse") == 0) {
                /* its last step is the reverse pass's first, not the
                 * final state the layer's seq=no gives */
                return node_fail(I, c, MEMEST_E_PARSE,
                                 "a Gather of the last step of a reverse %s "
                                 "is not supported (its final state is step "
                                 "0: read Y_h)", op);
            }
            st = index_is(I, c, 1, want_a, want_b, &got);
            if (st == MEMEST_E_PARSE && I->diag) {
                return node_fail(I, c, MEMEST_E_PARSE,
                                 "index %lld of a %s's output: only the "
                                 "last step (%s) is supported",
                                 (long long)got, op,
                                 m.from_yh ? "h_n[0] or h_n[-1]" : "-1 or T-1");
            }
            if (st != MEMEST_OK) {
                return st;
            }
        }
    }
    if ((st = push_layer(I, node, gru ? "gru" : "lstm", n->name,
                         gru ? "gru" : "lstm", &l)) != MEMEST_OK) {
        return st;
    }
    snprintf(I->L[l].args, sizeof I->L[l].args, "%llu dir=%s seq=%s%s%s",
             (unsigned long long)H, dir, m.seq ? "yes" : "no",
             gru ? (lbr ? " lbr=yes" : " lbr=no") : "",
             B ? "" : " bias=no");
    if ((st = layer_inputs(I, l, &x, 1)) != MEMEST_OK) {
        return st;
    }
    for (int d = 0; d < dirs; d++) {
        static const char *const sfx[2][4] = {
            {"weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0"},
            {"weight_ih_l0_reverse", "weight_hh_l0_reverse",
             "bias_ih_l0_reverse", "bias_hh_l0_reverse"}};
        const int k = dirs == 2 ? d : 0;
        const uint64_t wd[2] = {G * H, D}, rd[2] = {G * H, H}, bd[1] = {G * H};
        float *wi = reorder(W->f + (size_t)d * G * H * D, G, H, D, map);
        float *wh = reorder(R->f + (size_t)d * G * H * H, G, H, H, map);
        if (wi == NULL || wh == NULL) {
            free(wi);
            free(wh);
            return nomem(I);
        }
        if ((st = push_weight(I, l, sfx[k][0], 2, wd, wi, wi)) ||
            (st = push_weight(I, l, sfx[k][1], 2, rd, wh, wh))) {
            if (st != MEMEST_OK) {
                return st;
            }
        }
        if (B != NULL) {
            const float *b = B->f + (size_t)d * 2 * G * H;
            float *bi = reorder(b, G, H, 1, map);
            float *bh = reorder(b + G * H, G, H, 1, map);
            if (bi == NULL || bh == NULL) {
                free(bi);
                free(bh);
                return nomem(I);
            }
            if ((st = push_weight(I, l, sfx[k][2], 1, bd, bi, bi)) ||
                (st = push_weight(I, l, sfx[k][3], 1, bd, bh, bh))) {
                return st;
            }
        }
    }
    {
        const uint64_t w = (uint64_t)dirs * H;
        /* set_output() copies four dimensions */
        const uint64_t seq_dim[4] = {N, T, w, 0}, last_dim[4] = {N, w, 0, 0};
        st = m.seq ? set_output(I, m.end, out_slot, l, 3, seq_dim)
                   : set_output(I, m.end, out_slot, l, 2, last_dim);
        if (st == MEMEST_OK && m.out_axis != 0) {
            I->output_batch_axis = m.out_axis;
        }
        if (st != MEMEST_OK || m.end != node) {
            return st;
        }
        /* the node's own Y or Y_h the graph output (layout 1; layout 0
         * with the batch moved first: [T, dirs, N, H] is held N x T x
         * dirs x H, [dirs, N, H] N x dirs x H): it keeps its directions'
         * axis, [N, T, dirs, H] or [N, dirs, H], a reshape (a view) of
         * the layer's */
        {
            const size_t v = out_value(I, node, out_slot);
            const uint64_t y4[4] = {N, T, (uint64_t)dirs, H},
                           yh3[4] = {N, (uint64_t)dirs, H, 0};
            size_t r = 0;
            if ((st = push_layer(I, node, "reshape", n->name, "reshape",
                                 &r))) {
                return st;
            }
            if (m.seq) {
                snprintf(I->L[r].args, sizeof I->L[r].args,
                         "shape=%llux%dx%llu", (unsigned long long)T, dirs,
                         (unsigned long long)H);
            } else {
                snprintf(I->L[r].args, sizeof I->L[r].args, "shape=%dx%llu",
                         dirs, (unsigned long long)H);
            }
            if ((st = layer_inputs(I, r, &v, 1))) {
                return st;
            }
            return m.seq ? set_output(I, node, out_slot, r, 4, y4)
                         : set_output(I, node, out_slot, r, 3, yh3);
        }
    }
}

int onnx_lstm(struct imp *I, size_t node)
{
    return rnn_handler(I, node, 0);
}

int onnx_gru(struct imp *I, size_t node)
{
    return rnn_handler(I, node, 1);
}
