/* identity: output = input, a view (see view.h). */
#include "exec/ops/view.h"

const struct exec_op_vtable exec_op_identity = {
    .layout_caps = exec_view_caps,
    .run_f32 = exec_view_run_f32,
    .backward_f32 = exec_view_backward_f32,
};
