/* gru: PyTorch's nn.GRU, one layer (lbr=yes), or ONNX's GRU without
 * linear_before_reset (lbr=no). It runs the recurrent engine of
 * ops/lstm.c, which tells the two kinds apart by the layer's kind: one
 * GEMM for the input products of every step, then per step the hidden
 * product and kern_gru_cell_f32 (lbr=no: the r and z gates first, then
 * the n gate's product of r*h). */
#include "exec/ops.h"

const struct exec_op_vtable exec_op_gru = {
    .scratch = exec_rnn_scratch,
    .init_params = exec_rnn_init,
    .run_f32 = exec_rnn_run_f32,
    .backward_f32 = exec_rnn_backward,
    .backward_reads = exec_rnn_reads,
};
