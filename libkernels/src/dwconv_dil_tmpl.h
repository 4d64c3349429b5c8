/* Private: the dilated depthwise loop, one source for every path. The C
 * path compiles it as it is; src/x86/dwconv_dil_avx2.c compiles it with
 * AVX2 enabled, so that the compiler's vectorisation of the row sweeps
 * uses 8 lanes. ISO C (-std=c11) contracts no multiply-add, so both give
 * the bits of kern_dwconv2d_c. */
#ifndef EDGEFIT_KERNELS_DWCONV_DIL_TMPL_H
#define EDGEFIT_KERNELS_DWCONV_DIL_TMPL_H

#include <stdbool.h>
#include <stddef.h>

#include "conv.h"
#include "nn.h"

/* A dilated depthwise convolution, an output row at a time: the row
 * starts from the bias, then each tap adds w * x over the output columns
 * whose input column is real (a contiguous range, computed per tap), so
 * the inner loop has no bounds test and the compiler vectorises it when
 * the column stride is 1. Every output still adds its taps in row-major
 * order from the bias, skipping those outside the input: the bits of
 * kern_dwconv2d_c (no fused multiply-add: ISO C contracts nothing). The
 * hand-written vector paths assume adjacent taps; dilated shapes are rare
 * enough (dilated TCNs, segmentation heads) for this loop, compiled once
 * per instruction set, to serve them. */
/* The output columns ox with 0 <= ox * sw + off - pl < iw: [*lo, *hi),
 * empty when *lo >= *hi. */
static inline void dil_cols(size_t off, size_t sw, size_t pl, size_t iw,
                            size_t out_w, size_t *lo, size_t *hi)
{
    *lo = off < pl ? (pl - off + sw - 1) / sw : 0;
    const size_t h = iw + pl > off ? (iw - 1 + pl - off) / sw + 1 : 0;
    *hi = h < out_w ? h : out_w;
}

static inline __attribute__((always_inline)) void
dwconv2d_dilated(const struct kern_dwconv2d_shape *s, size_t out_h,
                 size_t out_w, const float *x, const float *w,
                 const float *bias, int act, float *y)
{
    const size_t ih = s->in_h, iw = s->in_w, kh = s->kh, kw = s->kw;
    const size_t sh = s->stride_h, sw = s->stride_w;
    const size_t dh = kern_nn_dil(s->dilation_h);
    const size_t dw = kern_nn_dil(s->dilation_w);
    const size_t pt = s->pad_top, pl = s->pad_left;
    /* The output columns [lo, hi) whose input column ox * sw + kx * dw -
     * pl is real, once per call for kernels up to DIL_COLS wide (two
     * divisions per tap and row were most of the time on small planes). */
    enum { DIL_COLS = 32 };
    size_t clo[DIL_COLS], chi[DIL_COLS];
    const bool have = kw <= DIL_COLS;
    for (size_t kx = 0; have && kx < kw; kx++) {
        dil_cols(kx * dw, sw, pl, iw, out_w, &clo[kx], &chi[kx]);
    }
    for (size_t p = 0; p < s->batch * s->channels; p++) {
        const size_t c = p % s->channels;
        const float *xp = x + p * ih * iw, *wc = w + c * kh * kw;
        const float b = bias ? bias[c] : 0.0f;
        for (size_t oy = 0; oy < out_h; oy++) {
            float *yr = y + (p * out_h + oy) * out_w;
            for (size_t ox = 0; ox < out_w; ox++) {
                yr[ox] = b;
            }
            for (size_t ky = 0; ky < kh; ky++) {
                const size_t iy = oy * sh + ky * dh - pt;
                if (iy >= ih) {
                    continue;
                }
                for (size_t kx = 0; kx < kw; kx++) {
                    const size_t off = kx * dw;
                    size_t lo, hi;
                    if (have) {
                        lo = clo[kx];
                        hi = chi[kx];
                    } else {
                        dil_cols(off, sw, pl, iw, out_w, &lo, &hi);
                    }
                    if (lo >= hi) {
                        continue;
                    }
                    const float wt = wc[ky * kw + kx];
                    /* y and x never overlap (checked by the caller's
                     * contract), which lets the loop vectorise without
                     * an aliasing test */
                    const float *restrict xr =
                        xp + iy * iw + (lo * sw + off - pl);
                    float *restrict d = yr + lo;
                    const size_t n = hi - lo;
                    if (sw == 1) {
                        for (size_t i = 0; i < n; i++) {
                            d[i] += wt * xr[i];
                        }
                    } else {
                        for (size_t i = 0; i < n; i++) {
                            d[i] += wt * xr[i * sw];
                        }
                    }
                }
            }
            for (size_t ox = 0; ox < out_w; ox++) {
                yr[ox] = kern_fuse1(yr[ox], act);
            }
        }
    }
}

#endif
