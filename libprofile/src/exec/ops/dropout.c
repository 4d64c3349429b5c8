/* dropout: output = input at inference, a view (see view.h). The model
 * carries no rate and the trainer drops nothing: training runs it as
 * inference does. */
#include "exec/ops/view.h"

const struct exec_op_vtable exec_op_dropout = {
    .layout_caps = exec_view_caps,
    .run_f32 = exec_view_run_f32,
    .backward_f32 = exec_view_backward_f32,
};
