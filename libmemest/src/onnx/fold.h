/*
 * ONNX import, private to the fold*.c files: the helpers that make and
 * fill folded tensors (fold.c).
 */
#ifndef EDGEFIT_MEMEST_ONNX_FOLD_H
#define EDGEFIT_MEMEST_ONNX_FOLD_H

#include "onnx/onnx_internal.h"

int is_int_type(int t);
int is_float_type(int t);
/* Whether element i (or any element) of c depends on the batch. */
int has_batch(const struct cval *c, uint64_t i);
int any_batch(const struct cval *c);
/* An element as an integer: exact when the tensor holds integers. */
int64_t int_at(const struct cval *c, uint64_t i);
/* A new tensor in o: floats always, exact integers when `ints`, batch
 * terms when `nb`; more than `limit` elements is refused before
 * allocating (MAX_FOLD_ELEMENTS where folding can grow a tensor). */
int fold_new(struct imp *I, size_t node, struct cval *o, unsigned rank,
         const uint64_t *dim, int ints, int nb, int dtype, uint64_t limit);
/* A new tensor of x's kind (integers, batch terms, type). */
int fold_new_like(struct imp *I, size_t node, struct cval *o,
              const struct cval *x, unsigned rank, const uint64_t *dim,
              uint64_t limit);
/* o[j] = x[i], with its exact value and batch term. */
void fold_move(struct cval *o, uint64_t j, const struct cval *x, uint64_t i);
/* o[j] = v + c * N, an integer. */
void fold_set_int(struct cval *o, uint64_t j, int64_t v, int64_t c);
/* A list of at most MEMEST_TENSOR_MAX_RANK integers, no batch term, from
 * the constant operand in `slot`. */
int int_list(struct imp *I, size_t node, size_t slot, const char *role,
             int64_t *out, size_t *n);
/* Slice's operands, each at most MEMEST_TENSOR_MAX_RANK long (what
 * int_list may write); na and nt are SIZE_MAX when absent. */
struct slice_args {
    int64_t starts[MEMEST_TENSOR_MAX_RANK], ends[MEMEST_TENSOR_MAX_RANK];
    int64_t axes[MEMEST_TENSOR_MAX_RANK], steps[MEMEST_TENSOR_MAX_RANK];
    size_t ns, ne, na, nt;
};
/* Slice's starts, ends, axes and steps: attributes before opset 10,
 * constant inputs from it. */
int slice_args(struct imp *I, size_t node, struct slice_args *a);
/* Squeeze's and Unsqueeze's axes (attribute before opset 13, input
 * from 13); *n = SIZE_MAX when absent. */
int axes_of(struct imp *I, size_t node, int64_t *axes, size_t *n);
/* Axis a (negative from the end) of rank r, checked. */
int norm_axis(struct imp *I, size_t node, int64_t a, unsigned r,
              const char *what, unsigned *out);
/* Row-major strides of dim. */
void strides_of(unsigned rank, const uint64_t *dim, uint64_t *st);

#endif
