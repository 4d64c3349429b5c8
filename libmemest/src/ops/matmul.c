/*
 * matmul: the per-sample matrix product A [.., M, K] times B [.., K, N]
 * -> [.., M, N], as torch.matmul and ONNX MatMul on operands of rank 3 or
 * 4 (the batch first): attention's Q.K^T and A.V written out. Each operand
 * is rank 2 (one matrix) or rank 3 (a stack of matrices, e.g. heads x T x
 * d); the leading dimension broadcasts numpy-style (missing or 1 against
 * any extent). No parameters; MACs the multiplies, prod(leading) * M * K *
 * N per sample.
 */
#include "op.h"

#include <string.h>

static int bad_rank(const struct op_infer *x, size_t k)
{
    char a[MEMEST_SHAPE_TEXT_MAX];
    memest_shape_format(x->in[k], a, sizeof a);
    return op_fail(x, MEMEST_E_SHAPE, x->sp->in[k].col,
                   "matmul: input '%s' is %s; each operand needs 2 (M x K) "
                   "or 3 (stack x M x K) dimensions per sample",
                   x->in_name[k], a);
}

static int infer(const struct op_infer *x, struct memest_layer *L)
{
    if (x->nin != 2) {
        return op_fail(x, MEMEST_E_SHAPE, x->sp->col_in,
                       "matmul reads two inputs (in=A,B), got %zu", x->nin);
    }
    const struct memest_shape *a = x->in[0];
    const struct memest_shape *b = x->in[1];
    for (size_t k = 0; k < 2; k++) {
        if (x->in[k]->rank != 2 && x->in[k]->rank != 3) {
            return bad_rank(x, k);
        }
    }
    const uint64_t m = a->dim[a->rank - 2], ka = a->dim[a->rank - 1];
    const uint64_t kb = b->dim[b->rank - 2], n = b->dim[b->rank - 1];
    const uint64_t sa = a->rank == 3 ? a->dim[0] : 1;
    const uint64_t sb = b->rank == 3 ? b->dim[0] : 1;
    char ta[MEMEST_SHAPE_TEXT_MAX];
    char tb[MEMEST_SHAPE_TEXT_MAX];
    memest_shape_format(a, ta, sizeof ta);
    memest_shape_format(b, tb, sizeof tb);
    if (ka != kb) {
        return op_fail(x, MEMEST_E_SHAPE, x->sp->in[1].col,
                       "matmul: '%s' is %s and '%s' is %s; the last "
                       "dimension of the first (%llu) must equal the "
                       "second-to-last of the second (%llu)",
                       x->in_name[0], ta, x->in_name[1], tb,
                       (unsigned long long)ka, (unsigned long long)kb);
    }
    if (sa != sb && sa != 1 && sb != 1) {
        return op_fail(x, MEMEST_E_SHAPE, x->sp->in[1].col,
                       "matmul: '%s' is %s and '%s' is %s; their leading "
                       "dimensions (%llu and %llu) do not broadcast (equal, "
                       "or one of them 1 or missing)",
                       x->in_name[0], ta, x->in_name[1], tb,
                       (unsigned long long)sa, (unsigned long long)sb);
    }
    const uint64_t s = sa > sb ? sa : sb;
    uint64_t macs;
    if (mul_ovf(s, m, &macs) || mul_ovf(macs, ka, &macs) ||
        mul_ovf(macs, n, &macs)) {
        return op_overflow(x, "the MAC count");
    }
    L->in_shape_b = *b;
    L->macs_per_sample = macs;
    memset(&L->out_shape, 0, sizeof L->out_shape);
    if (a->rank == 3 || b->rank == 3) {
        L->out_shape.rank = 3;
        L->out_shape.dim[0] = s;
        L->out_shape.dim[1] = m;
        L->out_shape.dim[2] = n;
    } else {
        L->out_shape.rank = 2;
        L->out_shape.dim[0] = m;
        L->out_shape.dim[1] = n;
    }
    return MEMEST_OK;
}

const struct memest_op_def op_matmul = {
    .word = "matmul",
    .prefix = "matmul",
    .keys = OP_KEY_NAME | OP_KEY_IN,
    .example = "matmul in=q,kt",
    .multi_input = true,
    .params = OP_PARAMS_NONE,
    .infer = infer,
};
