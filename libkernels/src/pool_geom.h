/*
 * The geometry every pooling kernel shares (fp32 and static int8, C and
 * each instruction set): which input rows or columns a window covers, and
 * which output columns a kernel column reads a real input for. One copy, so
 * that the vector paths cannot drift from the references they must equal.
 */
#ifndef EDGEFIT_KERN_POOL_GEOM_H
#define EDGEFIT_KERN_POOL_GEOM_H

#include <stddef.h>

/* The real input rows (or columns) [*lo, *hi) of the window starting at
 * o * stride - pad (padding excluded); kern_pool2d_out_hw guarantees at
 * least one when pad < k. */
static inline void kern_pool_window(size_t o, size_t stride, size_t pad,
                                    size_t k, size_t in, size_t *lo,
                                    size_t *hi)
{
    const size_t start = o * stride; /* in padded coordinates */
    *lo = start < pad ? 0 : start - pad;
    const size_t end = start + k; /* exclusive, padded */
    *hi = end - pad > in ? in : end - pad;
}

/* Output columns [*lo, *hi) whose input column ox * stride + kx - pad lies
 * in [0, in_w): the columns that kernel column kx reads. */
static inline void kern_pool_col_range(size_t kx, size_t stride, size_t pad,
                                       size_t in_w, size_t out_w, size_t *lo,
                                       size_t *hi)
{
    size_t l = kx < pad ? (pad - kx + stride - 1) / stride : 0;
    size_t h = kx > in_w - 1 + pad ? 0 : (in_w - 1 + pad - kx) / stride + 1;
    h = h < out_w ? h : out_w;
    *lo = l < h ? l : h;
    *hi = h;
}

#endif
