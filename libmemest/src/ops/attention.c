/*
 * attention heads=H bias=yes|no: fused multi-head self-attention, PyTorch's
 * nn.MultiheadAttention(D, H, batch_first=True) called as attn(x, x, x)
 * on a sequence x of T steps of D features (T x D per sample), output T x
 * D. Per head h of width d = D / H: Q = x Wq^T + bq, K, V likewise (the
 * rows of in_proj_weight), scores Q_h K_h^T / sqrt(d), a softmax over the
 * keys, A_h = P V_h; the heads' A concatenated and projected by
 * out_proj. Parameters as PyTorch counts them: 4 D^2 weights, 4 D biases
 * with bias=yes (nn.MultiheadAttention's bias covers both projections).
 * MACs: 4 T D^2 for the four projections and 2 T^2 D for Q.K^T and A.V
 * over all heads. Working memory: one head's T x T score matrix
 * (work_elements), alive only while the layer runs: the layer computes
 * the heads one after the other.
 */
#include "op.h"

#include <string.h>

static int infer(const struct op_infer *x, struct memest_layer *L)
{
    const struct op_spec *sp = x->sp;
    const struct memest_shape *in = x->in[0];
    char a[MEMEST_SHAPE_TEXT_MAX];

    if (in->rank != 2) {
        memest_shape_format(in, a, sizeof a);
        return op_fail(x, MEMEST_E_SHAPE, sp->col_kind,
                       "attention needs a sequence T x D (steps x features) "
                       "but '%s' is %s", x->in_name[0], a);
    }
    const uint64_t T = in->dim[0], D = in->dim[1];
    if (D % sp->heads != 0) {
        return op_fail(x, MEMEST_E_SHAPE, sp->col_heads,
                       "attention: %llu features do not split into "
                       "heads=%llu equal heads",
                       (unsigned long long)D, (unsigned long long)sp->heads);
    }
    uint64_t dd, w, proj, sc, macs, tt;
    if (mul_ovf(D, D, &dd) || mul_ovf(dd, 4, &w) || mul_ovf(w, T, &proj) ||
        mul_ovf(T, T, &tt) || mul_ovf(tt, D, &sc) || mul_ovf(sc, 2, &sc) ||
        add_ovf(proj, sc, &macs)) {
        return op_overflow(x, "the MAC count");
    }
    L->units = D;
    L->heads = sp->heads;
    L->has_bias = sp->has_bias;
    L->weight_count = w;
    L->bias_count = sp->has_bias ? 4 * D : 0; /* 4 D <= 4 D^2: no overflow */
    L->macs_per_sample = macs;
    L->work_elements = tt;
    L->out_shape = *in;
    return MEMEST_OK;
}

/* The concatenation of the weights as one matrix: in_proj_weight's 3 D
 * rows, then out_proj.weight's D rows, each of D. */
static unsigned weight_shape(const struct memest_layer *L,
                             uint64_t dim[OP_WEIGHT_MAX_RANK])
{
    dim[0] = 4 * L->units;
    dim[1] = L->units;
    return 2;
}

/* nn.MultiheadAttention's state_dict order. */
static size_t param_tensors(const struct memest_layer *L,
                            struct memest_param_tensor *out)
{
    const uint64_t D = L->units;
    memset(out, 0, 4 * sizeof *out);
    out[0].suffix = ".in_proj_weight";
    out[0].rank = 2;
    out[0].dim[0] = 3 * D;
    out[0].dim[1] = D;
    out[1].suffix = ".out_proj.weight";
    out[1].rank = 2;
    out[1].dim[0] = D;
    out[1].dim[1] = D;
    out[1].offset = 3 * D * D;
    if (L->bias_count == 0) {
        return 2;
    }
    out[2].suffix = ".in_proj_bias";
    out[2].rank = 1;
    out[2].dim[0] = 3 * D;
    out[2].in_bias = 1;
    out[3].suffix = ".out_proj.bias";
    out[3].rank = 1;
    out[3].dim[0] = D;
    out[3].in_bias = 1;
    out[3].offset = 3 * D;
    return 4;
}

/* The trainer runs the layer one sample at a time on a float scratch:
 * forward, the projections Q, K, V and the heads' context (4 T D) and one
 * head's scores (T T), where inference keeps the scores in the arena;
 * backward, those again with their gradients (8 T D) and one head's
 * probabilities and their gradient (2 T T), the larger. */
static int train_work(const struct memest_layer *L, uint64_t *preact,
                      uint64_t *columns)
{
    const uint64_t T = L->in_shape.dim[0], D = L->units;
    uint64_t td, c, tt;
    *preact = 0;
    if (mul_ovf(T, D, &td) || mul_ovf(td, 8, &c) ||
        mul_ovf(L->work_elements, 2, &tt) || add_ovf(c, tt, columns)) {
        return MEMEST_E_OVERFLOW;
    }
    return MEMEST_OK;
}

static void write_line(struct op_out *o, const struct op_write *w)
{
    op_put(o, "attention heads=%llu bias=%s",
           (unsigned long long)w->L->heads, w->bias ? "yes" : "no");
}

const struct memest_op_def op_attention = {
    .word = "attention",
    .prefix = "attn",
    .keys = OP_KEY_NAME | OP_KEY_IN | OP_KEY_HEADS | OP_KEY_BIAS,
    .required = OP_KEY_HEADS,
    .example = "attention heads=4",
    .params = OP_PARAMS_TENSORS,
    .infer = infer,
    .weight_shape = weight_shape,
    .param_tensors = param_tensors,
    .train_work = train_work,
    .write = write_line,
};
