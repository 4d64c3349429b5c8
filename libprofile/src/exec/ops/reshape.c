/* reshape: the sample's elements in the same order under another shape,
 * a view of an NCHW input (see view.h); no layout caps, as flatten: a
 * blocked tensor's element order is not the new shape's. */
#include "exec/ops/view.h"

const struct exec_op_vtable exec_op_reshape = {
    .run_f32 = exec_view_run_f32,
    .backward_f32 = exec_view_backward_f32,
};
