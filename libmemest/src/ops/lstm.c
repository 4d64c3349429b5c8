/*
 * lstm: one layer of PyTorch's nn.LSTM(batch_first=True) on a sequence
 * T x D (ONNX's LSTM with layout 0 after its Transpose): H hidden units
 * (the width), forward, reverse or both directions. Gates i, f, g, o as
 * PyTorch orders them:
 *
 *     i = sigmoid(W_ii x + b_ii + W_hi h + b_hi)    (f, o alike)
 *     g = tanh(W_ig x + b_ig + W_hg h + b_hg)
 *     c' = f * c + i * g,   h' = o * tanh(c')
 *
 * from h = c = 0. Output T x (dirs * H) with seq=yes (every step's h, the
 * forward direction's first, as PyTorch's output), dirs * H with seq=no
 * (the forward direction's h at step T-1, then the reverse's at step 0:
 * torch.cat((h_n[0], h_n[1]), 1)).
 *
 * Parameters as PyTorch's state_dict, per direction: weight_ih [4H, D],
 * weight_hh [4H, H], bias_ih [4H], bias_hh [4H] (both biases, as PyTorch
 * counts them, though only their sum matters). MACs: the weights'
 * multiplies, dirs * T * 4 * (D + H) * H; the gates' element-wise work
 * counts none, as activations do elsewhere.
 *
 * The shape inference, tensors and line of gru (ops/gru.c, 3 gates) are
 * the same with its gate count; they live here.
 */
#include "op.h"

#include <inttypes.h>

static const char *const dir_words[3] = {"forward", "reverse",
                                         "bidirectional"};

int op_rnn_infer(const struct op_infer *x, struct memest_layer *L,
                 uint64_t gates)
{
    const struct op_spec *sp = x->sp;
    const struct memest_shape *in = x->in[0];
    const char *kind = memest_kind_name(sp->kind);
    char text[MEMEST_SHAPE_TEXT_MAX];
    uint64_t dirs, gh, per_dir_w, d_plus_h, macs, out;

    if (in->rank != 2) {
        memest_shape_format(in, text, sizeof text);
        return op_fail(x, MEMEST_E_SHAPE, sp->col_kind,
                       "%s needs a sequence T x D (steps x features) but "
                       "its input is %s; e.g. 'input 49x10'",
                       kind, text);
    }
    const uint64_t T = in->dim[0], D = in->dim[1], H = sp->units;
    L->units = H;
    L->direction = sp->rnn_dir;
    L->return_sequence = sp->rnn_seq;
    L->linear_before_reset = sp->kind == MEMEST_KIND_GRU ? sp->rnn_lbr : 0;
    L->has_bias = sp->has_bias;
    dirs = sp->rnn_dir == MEMEST_RNN_BIDIRECTIONAL ? 2 : 1;
    if (mul_ovf(gates, H, &gh) || add_ovf(D, H, &d_plus_h) ||
        mul_ovf(gh, d_plus_h, &per_dir_w) ||
        mul_ovf(per_dir_w, dirs, &L->weight_count)) {
        return op_overflow(x, "the weight count");
    }
    L->bias_count = 0;
    if (sp->has_bias && mul_ovf(gh, 2 * dirs, &L->bias_count)) {
        return op_overflow(x, "the bias count");
    }
    if (mul_ovf(L->weight_count, T, &macs)) {
        return op_overflow(x, "the MACs");
    }
    L->macs_per_sample = macs;
    if (mul_ovf(H, dirs, &out)) {
        return op_overflow(x, "the output width");
    }
    if (sp->rnn_seq) {
        L->out_shape.rank = 2;
        L->out_shape.dim[0] = T;
        L->out_shape.dim[1] = out;
    } else {
        L->out_shape.rank = 1;
        L->out_shape.dim[0] = out;
    }
    return MEMEST_OK;
}

size_t op_rnn_param_tensors(const struct memest_layer *L, uint64_t gates,
                            struct memest_param_tensor *out)
{
    static const char *const w_ih[2] = {".weight_ih_l0",
                                        ".weight_ih_l0_reverse"};
    static const char *const w_hh[2] = {".weight_hh_l0",
                                        ".weight_hh_l0_reverse"};
    static const char *const b_ih[2] = {".bias_ih_l0", ".bias_ih_l0_reverse"};
    static const char *const b_hh[2] = {".bias_hh_l0", ".bias_hh_l0_reverse"};
    const uint64_t H = L->units, D = L->in_shape.dim[1], gh = gates * H;
    const int dirs = L->direction == MEMEST_RNN_BIDIRECTIONAL ? 2 : 1;
    size_t n = 0;

    /* the order of PyTorch's state_dict: weight_ih, weight_hh, bias_ih,
     * bias_hh of a direction, then the reverse's */
    for (int d = 0; d < dirs; d++) {
        const uint64_t w0 = (uint64_t)d * gh * (D + H);
        const uint64_t b0 = (uint64_t)d * 2 * gh;
        struct memest_param_tensor *t = &out[n++];
        *t = (struct memest_param_tensor){w_ih[d], 2, {gh, D}, 0, w0};
        t = &out[n++];
        *t = (struct memest_param_tensor){w_hh[d], 2, {gh, H}, 0,
                                          w0 + gh * D};
        if (L->bias_count == 0) {
            continue;
        }
        t = &out[n++];
        *t = (struct memest_param_tensor){b_ih[d], 1, {gh}, 1, b0};
        t = &out[n++];
        *t = (struct memest_param_tensor){b_hh[d], 1, {gh}, 1, b0 + gh};
    }
    return n;
}

int op_rnn_train_work(const struct memest_layer *L, uint64_t gates,
                      uint64_t *preact, uint64_t *columns)
{
    /* the backward pass of one sample (the larger): per step 5 G H (the
     * gates, their cache, two gradients, y's copy's share) and (dirs + 4)
     * H (y's copy, c, h, r*h, h's input), then 2 G H + 3 H of state */
    const uint64_t H = L->units, T = L->in_shape.dim[0];
    const uint64_t dirs = L->direction == MEMEST_RNN_BIDIRECTIONAL ? 2 : 1;
    uint64_t gh, per, t1, t2;
    *preact = 0;
    if (mul_ovf(gates, H, &gh) || mul_ovf(gh, 5, &t1) ||
        mul_ovf(H, dirs + 4, &t2) || add_ovf(t1, t2, &per) ||
        mul_ovf(per, T, &per) || add_ovf(per, 2 * gh, &per) ||
        add_ovf(per, 3 * H, columns)) {
        return MEMEST_E_OVERFLOW;
    }
    return MEMEST_OK;
}

void op_rnn_put_options(struct op_out *o, const struct memest_layer *L)
{
    const int d = L->direction >= 0 && L->direction <= 2 ? L->direction : 0;
    op_put(o, " dir=%s seq=%s", dir_words[d],
           L->return_sequence ? "yes" : "no");
}

static int infer(const struct op_infer *x, struct memest_layer *L)
{
    return op_rnn_infer(x, L, 4);
}

static size_t param_tensors(const struct memest_layer *L,
                            struct memest_param_tensor *out)
{
    return op_rnn_param_tensors(L, 4, out);
}

/* The concatenation of the tensors, flat (param_tensors() says where
 * each one lies). */
static unsigned weight_shape(const struct memest_layer *L,
                             uint64_t dim[OP_WEIGHT_MAX_RANK])
{
    dim[0] = L->weight_count;
    return 1;
}

static int train_work(const struct memest_layer *L, uint64_t *preact,
                      uint64_t *columns)
{
    return op_rnn_train_work(L, 4, preact, columns);
}

static void write_line(struct op_out *o, const struct op_write *w)
{
    op_put(o, "lstm %" PRIu64, w->L->units);
    op_rnn_put_options(o, w->L);
    op_put(o, " bias=%s", w->bias ? "yes" : "no");
}

const struct memest_op_def op_lstm = {
    .word = "lstm",
    .prefix = "lstm",
    .keys = OP_KEY_NAME | OP_KEY_IN | OP_KEY_BIAS | OP_KEY_DIR | OP_KEY_SEQ,
    .width_what = "lstm hidden width",
    .width_noun = "hidden units",
    .example = "lstm 64 dir=forward seq=yes",
    .params = OP_PARAMS_TENSORS,
    .infer = infer,
    .weight_shape = weight_shape,
    .param_tensors = param_tensors,
    .train_work = train_work,
    .write = write_line,
};
