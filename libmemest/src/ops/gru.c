/*
 * gru: one layer of PyTorch's nn.GRU(batch_first=True) on a sequence
 * T x D (ONNX's GRU with layout 0), H hidden units. Gates r, z, n as
 * PyTorch orders them:
 *
 *     r = sigmoid(W_ir x + b_ir + W_hr h + b_hr)    (z alike)
 *     n = tanh(W_in x + b_in + r * (W_hn h + b_hn))        lbr=yes
 *     n = tanh(W_in x + b_in + W_hn (r * h) + b_hn)         lbr=no
 *     h' = (1 - z) * n + z * h
 *
 * from h = 0. lbr=yes (linear_before_reset, the default) is PyTorch's
 * GRU; lbr=no is ONNX's default form. Outputs, parameters (weight_ih
 * [3H, D], weight_hh [3H, H], bias_ih, bias_hh [3H] per direction) and
 * MACs (dirs * T * 3 * (D + H) * H) as lstm's (ops/lstm.c, which holds
 * the shared code).
 */
#include "op.h"

#include <inttypes.h>

static int infer(const struct op_infer *x, struct memest_layer *L)
{
    return op_rnn_infer(x, L, 3);
}

static size_t param_tensors(const struct memest_layer *L,
                            struct memest_param_tensor *out)
{
    return op_rnn_param_tensors(L, 3, out);
}

static unsigned weight_shape(const struct memest_layer *L,
                             uint64_t dim[OP_WEIGHT_MAX_RANK])
{
    dim[0] = L->weight_count;
    return 1;
}

static int train_work(const struct memest_layer *L, uint64_t *preact,
                      uint64_t *columns)
{
    return op_rnn_train_work(L, 3, preact, columns);
}

static void write_line(struct op_out *o, const struct op_write *w)
{
    op_put(o, "gru %" PRIu64, w->L->units);
    op_rnn_put_options(o, w->L);
    op_put(o, " lbr=%s bias=%s", w->L->linear_before_reset ? "yes" : "no",
           w->bias ? "yes" : "no");
}

const struct memest_op_def op_gru = {
    .word = "gru",
    .prefix = "gru",
    .keys = OP_KEY_NAME | OP_KEY_IN | OP_KEY_BIAS | OP_KEY_DIR | OP_KEY_SEQ |
            OP_KEY_LBR,
    .width_what = "gru hidden width",
    .width_noun = "hidden units",
    .example = "gru 64 dir=forward seq=yes lbr=yes",
    .params = OP_PARAMS_TENSORS,
    .infer = infer,
    .weight_shape = weight_shape,
    .param_tensors = param_tensors,
    .train_work = train_work,
    .write = write_line,
};
