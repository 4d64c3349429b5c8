/* Private: convolution (family conv). */
#ifndef EDGEFIT_KERNELS_CONV_H
#define EDGEFIT_KERNELS_CONV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "dsp.h"
#include "nn.h"

/* Forward of kern_conv2d_f32 (not depthwise) for a validated shape, its
 * output size, a valid kern_fused_act and `work` of at least
 * kern_conv2d_work_bytes(s) bytes (the C path ignores it). */
typedef void (*kern_conv2d_fn)(const struct kern_conv2d_shape *s,
                               size_t out_h, size_t out_w, const float *x,
                               const float *w, const float *bias, int act,
                               void *work, float *y);

/* Forward of kern_conv2d_packed_layout_f32 (not depthwise) for a
 * validated shape, valid layouts (blocked ones with groups whose channels
 * are whole blocks of 8, in and out), its
 * output size, a valid kern_fused_act and `work` of at least
 * kern_conv2d_work_bytes(s) bytes (the C path ignores it); output pixels
 * [p_lo, p_hi) of each plane (p_lo < p_hi <= out_h * out_w), nothing
 * written at other pixels. */
typedef void (*kern_conv2d_packed_fn)(const struct kern_conv2d_shape *s,
                                      size_t out_h, size_t out_w,
                                      int in_layout, int out_layout,
                                      const float *x, const float *wpk,
                                      const float *bias, int act,
                                      void *work, float *y, size_t p_lo,
                                      size_t p_hi);

/* Index of channel c, pixel p (of hw) of sample b in a tensor of ch
 * channels laid out as `layout` (kern_layout). */
static inline size_t kern_act_at(int layout, size_t ch, size_t hw,
                                 size_t b, size_t c, size_t p)
{
    if (layout == KERN_LAYOUT_NCHW) {
        return (b * ch + c) * hw + p;
    }
    const size_t cb = kern_nn_cblocks(ch);
    return ((b * cb + c / KERN_CBLOCK) * hw + p) * KERN_CBLOCK +
           c % KERN_CBLOCK;
}

/* The int8 lowering (kern_im2col_s8) of one sample's group of planes xg
 * (in_c/groups planes of in_h x in_w) for a validated shape with output
 * size out_h x out_w: col[p][k], P x K bytes, nothing written past them. */
typedef void (*kern_im2col_s8_fn)(const struct kern_conv2d_shape *s,
                                  size_t out_h, size_t out_w,
                                  const int8_t *xg, int8_t *col);

struct kern_conv_dsp {
    kern_conv2d_fn conv2d;
    /* w packed by kern_conv2d_pack_f32, activations in either layout */
    kern_conv2d_packed_fn conv2d_packed;
    kern_im2col_s8_fn im2col_s8;
};

void kern_conv_dsp_init(struct kern_conv_dsp *dsp, unsigned flags);

/* A kern_fused_act applied to one sum (the convolution and depthwise
 * references, the scalar ends of the vector paths). A NaN sum stays NaN
 * (comparisons with it are false); the vector paths keep it too by
 * passing the sum as max/min's second operand. */
static inline float kern_fuse1(float v, int act)
{
    if (act == KERN_FUSE_NONE) {
        return v;
    }
    v = v < 0.0f ? 0.0f : v;
    if (act == KERN_FUSE_RELU6) {
        v = v > 6.0f ? 6.0f : v;
    }
    return v;
}

void kern_conv2d_c(const struct kern_conv2d_shape *s, size_t out_h,
                   size_t out_w, const float *x, const float *w,
                   const float *bias, int act, void *work, float *y);
void kern_conv2d_packed_c(const struct kern_conv2d_shape *s, size_t out_h,
                          size_t out_w, int in_layout, int out_layout,
                          const float *x, const float *wpk,
                          const float *bias, int act, void *work, float *y, size_t p_lo,
                          size_t p_hi);

/* One pixel (oy, ox) of the int8 lowering: its K bytes into r. Along kx
 * the input is contiguous, so each (c, ky) is one copy of up to kw bytes
 * (kx in [k0, k1) reads inside the row). The reference's loop body, and
 * the vector path's for the pixels it cannot overrun. */
static inline void kern_im2col_s8_pixel(const struct kern_conv2d_shape *s,
                                        const int8_t *xg, size_t oy,
                                        size_t ox, int8_t *r)
{
    const size_t cg = s->in_c / s->groups, kh = s->kh, kw = s->kw;
    const size_t ih = s->in_h, iw = s->in_w, pl = s->pad_left;
    const size_t x0 = ox * s->stride_w; /* padded column of kx = 0 */
    const size_t k0 = x0 < pl ? pl - x0 : 0;
    size_t k1 = iw + pl > x0 ? iw + pl - x0 : 0;
    k1 = k1 < kw ? k1 : kw;
    for (size_t c = 0; c < cg; c++) {
        for (size_t ky = 0; ky < kh; ky++, r += kw) {
            /* unsigned wrap: rows above the input fail the test too */
            const size_t iy = oy * s->stride_h + ky - s->pad_top;
            if (iy >= ih || k0 >= k1) {
                memset(r, 0, kw);
                continue;
            }
            for (size_t kx = 0; kx < k0; kx++) {
                r[kx] = 0;
            }
            /* x0 + k0 >= pl by construction of k0 */
            const int8_t *xr = xg + (c * ih + iy) * iw + (x0 + k0 - pl);
            for (size_t kx = k0; kx < k1; kx++) {
                r[kx] = xr[kx - k0];
            }
            for (size_t kx = k1; kx < kw; kx++) {
                r[kx] = 0;
            }
        }
    }
}

void kern_im2col_s8_c(const struct kern_conv2d_shape *s, size_t out_h,
                      size_t out_w, const int8_t *xg, int8_t *col);

/* The layout of the GEMM paths' scratch for a valid shape (see
 * kern_conv2d_f32). K = in_c/groups * kh * kw. A convolution is `direct`
 * when it is 1 x 1, stride 1 and unpadded: the GEMM reads the input planes
 * themselves (pitch = in_w, plane = in_h * in_w) and the scratch holds only
 * a zero-padded copy of the last, partial pixel block ([K][KERN_CONV_NR])
 * and its offsets. Otherwise the group's input planes are copied
 * zero-padded and split into phy x phx stride phases, each a q x pitch
 * plane: padded element (r, c) of input plane ic lands in phase plane
 * (ic * phy + r % stride_h) * phx + c % stride_w at (r / stride_h, c /
 * stride_w). Output pixel (oy, ox) is then GEMM column j = oy * pitch + ox
 * and row (ic, ky, kx) reads phase plane (ic, ky % stride_h, kx %
 * stride_w) at j + (ky / stride_h) * pitch + kx / stride_w; columns ox >=
 * out_w are computed and dropped. A blocked (NCHW8c) input keeps its
 * blocks in the copy: [ic / 8][phy][phx][q][pitch][8], element (r, c) of
 * channel ic at lane ic % 8 of pixel (r / stride_h) * pitch + c /
 * stride_w of phase plane (ic / 8, r % stride_h, c % stride_w), so that
 * the copy is whole vectors of 8 channels and a row (ic, ky, kx) of
 * output pixel j reads 8 j floats from its start; buf_floats counts the
 * channels of an ungrouped convolution rounded up to a block for it. */
enum { KERN_CONV_NR = 24, KERN_CONV_MR = 4 };

/* Packed weights (kern_conv2d_pack_f32): per group, blocks of
 * KERN_CONV_OCB output channels, each [K][KERN_CONV_OCB] floats, zero past
 * the group's last channel. */
enum { KERN_CONV_OCB = KERN_CONV_PACK_BLOCK };

/* Output channels of the widest tile of each packed path (what
 * kern_conv2d_split_channels says): the C path one block, the 8-float
 * channel-vector tile of conv_tmpl.h three (CT_NV), AVX-512's 16-lane tile
 * two vectors of two blocks (WIDE_NZ in conv_avx512.c). */
enum {
    KERN_CONV_SPLIT_C = KERN_CONV_OCB,
    KERN_CONV_SPLIT_V8 = 3 * KERN_CONV_OCB,
    KERN_CONV_SPLIT_V16 = 4 * KERN_CONV_OCB,
};

struct kern_conv_geom {
    int direct;
    size_t k;           /* GEMM depth */
    size_t phy, phx;    /* stride phases kept (min(stride, kernel)) */
    size_t q, pitch;    /* rows and columns of a phase plane */
    size_t plane;       /* q * pitch */
    size_t buf_floats;  /* the padded copy, with its tail slack */
    size_t cols;        /* GEMM columns: out_h * pitch */
    size_t kb;          /* K block of the packed tile (kern_conv_kblock);
                         * k when the depth is not blocked */
    size_t acc_floats;  /* the running sums between K blocks, after the
                         * padded copy: (pixels + 12) x 24, or 0 */
    size_t bytes;       /* the whole scratch, alignment slack included */
};

/* The depth of a K block of the packed channel-vector tile on padded
 * (not 1 x 1) shapes: the tile's 24-channel weight panel slice, kb x 24
 * floats, is sized to stay in the level-2 cache while every pixel tile
 * of the plane reads it (see kblock_default in conv.c); a multiple of 8. */
size_t kern_conv_kblock(void);

/* Tests only: blocks of kb steps from now on (0: the default again). A
 * scratch sized before the change may be too small after it. */
void kern_conv_set_kblock(size_t kb);

/* Fill g for a valid shape with output size oh x ow; false when a size
 * overflows (the shape then gets no scratch and runs the C path). */
bool kern_conv_geom(const struct kern_conv2d_shape *s, size_t oh, size_t ow,
                    struct kern_conv_geom *g);

/* The rungs of each architecture (src/<arch>/conv_init.c), called by
 * kern_conv_dsp_init after it has set the C entries. */
void kern_conv_dsp_init_x86(struct kern_conv_dsp *dsp, unsigned flags);
void kern_conv_dsp_init_arm(struct kern_conv_dsp *dsp, unsigned flags);

#if KERN_SIMD && KERN_HAVE_X86
void kern_conv2d_avx2(const struct kern_conv2d_shape *s, size_t out_h,
                      size_t out_w, const float *x, const float *w,
                      const float *bias, int act, void *work, float *y);
void kern_conv2d_packed_avx2(const struct kern_conv2d_shape *s, size_t out_h,
                             size_t out_w, int in_layout, int out_layout,
                             const float *x, const float *wpk,
                             const float *bias, int act, void *work,
                             float *y, size_t p_lo,
                          size_t p_hi);
void kern_im2col_s8_avx2(const struct kern_conv2d_shape *s, size_t out_h,
                         size_t out_w, const int8_t *xg, int8_t *col);
void kern_conv2d_avx512(const struct kern_conv2d_shape *s, size_t out_h,
                        size_t out_w, const float *x, const float *w,
                        const float *bias, int act, void *work, float *y);
void kern_conv2d_packed_avx512(const struct kern_conv2d_shape *s,
                               size_t out_h, size_t out_w, int in_layout,
                               int out_layout, const float *x,
                               const float *wpk, const float *bias, int act,
                               void *work, float *y, size_t p_lo,
                          size_t p_hi);
#endif

#if KERN_SIMD && KERN_HAVE_NEON
void kern_conv2d_neon(const struct kern_conv2d_shape *s, size_t out_h,
                      size_t out_w, const float *x, const float *w,
                      const float *bias, int act, void *work, float *y);
void kern_conv2d_packed_neon(const struct kern_conv2d_shape *s, size_t out_h,
                             size_t out_w, int in_layout, int out_layout,
                             const float *x, const float *wpk,
                             const float *bias, int act, void *work,
                             float *y, size_t p_lo,
                          size_t p_hi);
void kern_im2col_s8_neon(const struct kern_conv2d_shape *s, size_t out_h,
                         size_t out_w, const int8_t *xg, int8_t *col);
#endif

#endif
