/*
 * sub, mul, div: element-wise a - b, a * b, a / b of two tensors with
 * numpy's broadcasting, then an optional activation (act=); add (add.c)
 * shares the two-input and constant forms. ONNX Sub, Mul and Div; in
 * PyTorch `x - y`, `x * y` (squeeze-excite's gate: C x H x W times
 * C x 1 x 1, in either order), `x / y`.
 *
 * Broadcasting is over the per-sample shapes (the batch is every tensor's
 * first dimension and always matches): the shapes are aligned from the
 * right, a missing dimension counting as 1, and each pair of extents must
 * be equal or one of them 1; the output has the larger of each pair.
 *
 * A layer with scalar=V (x op V) or scalar_left=V (V op x) reads one
 * tensor and a constant: `x * 0.5`, `x / 6`, `1 - x`. The constant is no
 * parameter, as PyTorch counts none for a Python number or a registered
 * buffer: parameter_count stays 0, the value is held in the layer (not in
 * the arena, not in the stored parameters).
 *
 * No parameters; MACs 0 as for every element-wise layer.
 */
#include "op.h"

#include <stdio.h>

static const char *kind_word(const struct op_infer *x)
{
    return x->sp->kind_text;
}

int op_binary_infer(const struct op_infer *x, struct memest_layer *L)
{
    const struct memest_shape *a = x->in[0];

    L->scalar_side = x->sp->scalar_side;
    L->scalar = x->sp->scalar;
    if (x->sp->scalar_side != MEMEST_SCALAR_NONE) {
        /* the parser gives a layer with a constant exactly one input */
        L->out_shape = *a;
        L->in_shape_b = *a;
        return MEMEST_OK;
    }
    if (x->nin != 2) {
        return op_fail(x, MEMEST_E_SHAPE, x->sp->col_in,
                       "%s reads two inputs (or one and scalar=), got %zu",
                       kind_word(x), x->nin);
    }
    {
        const struct memest_shape *b = x->in[1];
        const unsigned rank = a->rank > b->rank ? a->rank : b->rank;
        struct memest_shape out;

        out.rank = rank;
        for (unsigned d = 0; d < 3; d++) {
            out.dim[d] = 0;
        }
        /* aligned from the right: axis d of the output is axis
         * d - (rank - r) of an operand of rank r, or 1 left of it */
        for (unsigned d = 0; d < rank; d++) {
            const uint64_t da = d + a->rank >= rank ? a->dim[d + a->rank - rank]
                                                   : 1;
            const uint64_t db = d + b->rank >= rank ? b->dim[d + b->rank - rank]
                                                   : 1;
            if (da != db && da != 1 && db != 1) {
                char ta[MEMEST_SHAPE_TEXT_MAX];
                char tb[MEMEST_SHAPE_TEXT_MAX];
                memest_shape_format(a, ta, sizeof ta);
                memest_shape_format(b, tb, sizeof tb);
                return op_fail(x, MEMEST_E_SHAPE, x->sp->in[1].col,
                               "%s: input '%s' is %s and '%s' is %s, which "
                               "do not broadcast (aligned from the right, "
                               "each pair of dimensions must be equal or "
                               "one of them 1)",
                               kind_word(x), x->in_name[0], ta,
                               x->in_name[1], tb);
            }
            out.dim[d] = da > db ? da : db;
        }
        L->in_shape_b = *b;
        L->out_shape = out;
    }
    return MEMEST_OK;
}

void op_binary_put_scalar(struct op_out *o, const struct memest_layer *L)
{
    /* %.17g: the double the parser read, exactly */
    switch ((enum memest_scalar_side)L->scalar_side) {
    case MEMEST_SCALAR_NONE:
        break;
    case MEMEST_SCALAR_RIGHT:
        op_put(o, " scalar=%.17g", L->scalar);
        break;
    case MEMEST_SCALAR_LEFT:
        op_put(o, " scalar_left=%.17g", L->scalar);
        break;
    }
}

static void write_line(struct op_out *o, const struct op_write *w)
{
    op_put(o, "%s act=%s", memest_kind_name(w->L->kind),
           memest_act_name(w->L->act));
    op_put_act_params(o, w->L->act, w->L);
    op_binary_put_scalar(o, w->L);
}

#define BINARY_KEYS                                                        \
    (OP_KEY_NAME | OP_KEY_IN | OP_KEY_ACT | OP_KEY_ALPHA | OP_KEY_BETA |   \
     OP_KEY_SCALAR | OP_KEY_SCALAR_LEFT)

const struct memest_op_def op_sub = {
    .word = "sub",
    .prefix = "sub",
    .keys = BINARY_KEYS,
    .example = "sub in=conv2,pool1",
    .multi_input = true,
    .params = OP_PARAMS_NONE,
    .infer = op_binary_infer,
    .write = write_line,
};

const struct memest_op_def op_mul = {
    .word = "mul",
    .prefix = "mul",
    .keys = BINARY_KEYS,
    .example = "mul in=conv2,gate",
    .multi_input = true,
    .params = OP_PARAMS_NONE,
    .infer = op_binary_infer,
    .write = write_line,
};

const struct memest_op_def op_div = {
    .word = "div",
    .prefix = "div",
    .keys = BINARY_KEYS,
    .example = "div in=conv2 scalar=6",
    .multi_input = true,
    .params = OP_PARAMS_NONE,
    .infer = op_binary_infer,
    .write = write_line,
};
