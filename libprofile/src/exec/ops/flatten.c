/* flatten: C x H x W to one vector of the same elements, a view of an
 * NCHW input (see view.h). It has no layout caps: a blocked tensor's
 * element order is not the vector's, so its input stays NCHW. */
#include "exec/ops/view.h"

const struct exec_op_vtable exec_op_flatten = {
    .run_f32 = exec_view_run_f32,
    .backward_f32 = exec_view_backward_f32,
};
