/*
 * The scalar geometry of the static int8 lowering (im2col) that its vector
 * paths share (AVX2, NEON): which kernel rows of an output row's window lie
 * inside the input, and one cell row's 4-byte load. One copy, so the paths
 * cannot drift from each other.
 */
#ifndef EDGEFIT_KERN_IM2COL_S8_GEOM_H
#define EDGEFIT_KERN_IM2COL_S8_GEOM_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "conv.h"

/* Output row oy's window: its first input row *iy0 (< 0 in the top
 * padding) and the kernel rows [*ky0, *ky1) that lie inside the input. */
static inline void window_rows(const struct kern_conv2d_shape *s, size_t oy,
                               ptrdiff_t *iy0, ptrdiff_t *ky0, ptrdiff_t *ky1)
{
    const ptrdiff_t kh = (ptrdiff_t)s->kh;
    const ptrdiff_t y0 = (ptrdiff_t)(oy * s->stride_h) - (ptrdiff_t)s->pad_top;
    ptrdiff_t a = y0 < 0 ? -y0 : 0, b = (ptrdiff_t)s->in_h - y0;
    a = a < kh ? a : kh;
    b = b < kh ? b : kh;
    *iy0 = y0;
    *ky0 = a;
    *ky1 = b > a ? b : a;
}

/* Input row ky's 4-byte load of a cell, 0 for a row in the padding. */
static inline int32_t cell_row(const int8_t *xc, ptrdiff_t iy0, ptrdiff_t ky,
                               ptrdiff_t ky0, ptrdiff_t ky1, ptrdiff_t iw)
{
    int32_t v = 0;
    if (ky >= ky0 && ky < ky1) {
        memcpy(&v, xc + (iy0 + ky) * iw, 4);
    }
    return v;
}

#endif
