/*
 * transpose perm=...: the per-sample axes permuted, output axis i being
 * input axis perm[i] (the batch stays first), as torch.permute(0, 1 +
 * perm...) and ONNX Transpose with perm[0] = 0. Rank 2 (perm=1,0) or 3
 * (any permutation of 0,1,2). A copy, not a view: the elements move. No
 * parameters, no MACs.
 */
#include "op.h"

#include <string.h>

static int infer(const struct op_infer *x, struct memest_layer *L)
{
    const struct op_spec *sp = x->sp;
    const struct memest_shape *in = x->in[0];
    char a[MEMEST_SHAPE_TEXT_MAX];

    memest_shape_format(in, a, sizeof a);
    if (in->rank != 2 && in->rank != 3) {
        return op_fail(x, MEMEST_E_SHAPE, sp->col_kind,
                       "transpose needs a tensor of 2 or 3 dimensions per "
                       "sample but '%s' is %s", x->in_name[0], a);
    }
    if (sp->nperm != in->rank) {
        return op_fail(x, MEMEST_E_SHAPE, sp->col_perm,
                       "transpose: perm= lists %u axes but '%s' (%s) has "
                       "%u", sp->nperm, x->in_name[0], a, in->rank);
    }
    unsigned seen = 0;
    for (unsigned i = 0; i < in->rank; i++) {
        if (sp->perm[i] >= in->rank || (seen & (1u << sp->perm[i]))) {
            return op_fail(x, MEMEST_E_SHAPE, sp->col_perm,
                           "transpose: perm= must list each axis 0 to %u "
                           "once", in->rank - 1);
        }
        seen |= 1u << sp->perm[i];
    }
    memset(&L->out_shape, 0, sizeof L->out_shape);
    L->out_shape.rank = in->rank;
    for (unsigned i = 0; i < in->rank; i++) {
        L->perm[i] = sp->perm[i];
        L->out_shape.dim[i] = in->dim[sp->perm[i]];
    }
    return MEMEST_OK;
}

static void write_line(struct op_out *o, const struct op_write *w)
{
    const struct memest_layer *L = w->L;
    op_put(o, "transpose perm=%u", L->perm[0]);
    for (unsigned i = 1; i < L->in_shape.rank; i++) {
        op_put(o, ",%u", L->perm[i]);
    }
}

const struct memest_op_def op_transpose = {
    .word = "transpose",
    .prefix = "transpose",
    .keys = OP_KEY_NAME | OP_KEY_IN | OP_KEY_PERM,
    .required = OP_KEY_PERM,
    .example = "transpose perm=1,0",
    .params = OP_PARAMS_NONE,
    .infer = infer,
    .write = write_line,
};
