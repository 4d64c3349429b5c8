/* Private to exec/ops: what the three views (identity, dropout, flatten)
 * share. A view's output is its input's buffer: the arena, the run loop
 * and the trainer skip it (memest_kind_is_view); these run it only where the
 * trainer keeps input and output apart. */
#ifndef EDGEFIT_PROFILE_EXEC_OPS_VIEW_H
#define EDGEFIT_PROFILE_EXEC_OPS_VIEW_H

#include "exec/ops.h"

/* y = x (a copy when they differ). */
int exec_view_run_f32(prof_exec *ex, const struct exec_op *op,
                      const struct exec_f32_args *a);

/* gx = g. */
int exec_view_backward_f32(prof_exec *ex, const struct exec_op *op,
                           const struct exec_grad_args *a);

/* In NCHW8c when its tensors are blocked, as the input is. */
unsigned exec_view_caps(const struct exec_op *op);

#endif
