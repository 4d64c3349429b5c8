/* The operator table: one const entry per kind the executor runs, indexed
 * by enum memest_kind (zstd's ZSTD_selectBlockCompressor shape). A kind
 * with no row (MEMEST_KIND_INPUT, or one libmemest has and the executor
 * not yet) is NULL here and refused by name where it would run. */
#include <stdio.h>
#include <string.h>

#include "exec/ops.h"

static const struct exec_op_vtable *const exec_op_table[MEMEST_KIND_COUNT] = {
    [MEMEST_KIND_DENSE] = &exec_op_dense,
    [MEMEST_KIND_CONV2D] = &exec_op_conv2d,
    [MEMEST_KIND_MAXPOOL] = &exec_op_maxpool,
    [MEMEST_KIND_AVGPOOL] = &exec_op_avgpool,
    [MEMEST_KIND_FLATTEN] = &exec_op_flatten,
    [MEMEST_KIND_ACTIVATION] = &exec_op_activation,
    [MEMEST_KIND_GLOBALAVGPOOL] = &exec_op_globalavgpool,
    [MEMEST_KIND_ADD] = &exec_op_add,
    [MEMEST_KIND_CONCAT] = &exec_op_concat,
    [MEMEST_KIND_BATCHNORM] = &exec_op_batchnorm,
    [MEMEST_KIND_IDENTITY] = &exec_op_identity,
    [MEMEST_KIND_DROPOUT] = &exec_op_dropout,
    [MEMEST_KIND_SUB] = &exec_op_sub,
    [MEMEST_KIND_MUL] = &exec_op_mul,
    [MEMEST_KIND_DIV] = &exec_op_div,
    [MEMEST_KIND_CONV_TRANSPOSE] = &exec_op_conv_transpose,
    [MEMEST_KIND_RESIZE] = &exec_op_resize,
    [MEMEST_KIND_PAD] = &exec_op_pad,
    [MEMEST_KIND_SHUFFLE] = &exec_op_shuffle,
    [MEMEST_KIND_SLICE] = &exec_op_slice,
    [MEMEST_KIND_RESHAPE] = &exec_op_reshape,
    [MEMEST_KIND_LAYERNORM] = &exec_op_layernorm,
    [MEMEST_KIND_CLSTOKEN] = &exec_op_clstoken,
    [MEMEST_KIND_POSEMBED] = &exec_op_posembed,
    [MEMEST_KIND_MATMUL] = &exec_op_matmul,
    [MEMEST_KIND_TRANSPOSE] = &exec_op_transpose,
    [MEMEST_KIND_ATTENTION] = &exec_op_attention,
    [MEMEST_KIND_LSTM] = &exec_op_lstm,
    [MEMEST_KIND_GRU] = &exec_op_gru,
};

const struct exec_op_vtable *exec_op_find(enum memest_kind kind)
{
    if ((unsigned)kind >= MEMEST_KIND_COUNT) {
        return NULL;
    }
    const struct exec_op_vtable *vt = exec_op_table[kind];
    /* an entry that cannot run in float is no entry */
    return vt && vt->run_f32 ? vt : NULL;
}

void exec_trainable_kinds(char *buf, size_t len)
{
    size_t n = 0, total = 0;
    for (unsigned k = 0; k < MEMEST_KIND_COUNT; k++) {
        const struct exec_op_vtable *vt = exec_op_find((enum memest_kind)k);
        total += vt && vt->backward_f32;
    }
    if (len == 0) {
        return;
    }
    buf[0] = '\0';
    for (unsigned k = 0; k < MEMEST_KIND_COUNT; k++) {
        const struct exec_op_vtable *vt = exec_op_find((enum memest_kind)k);
        const char *name = memest_kind_name((enum memest_kind)k);
        if (!vt || !vt->backward_f32 || !name) {
            continue;
        }
        const size_t used = strlen(buf);
        const char *sep = n == 0 ? "" : n + 1 == total ? " and " : ", ";
        snprintf(buf + used, len - used, "%s%s", sep, name);
        n++;
    }
}
