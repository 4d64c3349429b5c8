/* Depthwise convolution: the C reference, the dispatch and the public
 * wrapper. The reference is the definition written out, one output at a
 * time, with the bounds tested per tap; the vector paths in src/x86/ get
 * rid of those tests by padding the input (see dwconv_tmpl.h). */
#include <stdint.h>

#include "conv.h"
#include "dwconv.h"
#include "dwconv_dil_tmpl.h"
#include "nn.h"


/* One output of the definition: the bias, then the taps inside the input
 * in row-major order, no fused multiply-add. x is the channel's input,
 * pixel (iy, ix) at x[(iy * in_w + ix) * xs]; w its filter, tap t at
 * w[t * ws]: 1 and 1 in NCHW, KERN_CBLOCK for both in NCHW8c, so that
 * both references give each value the same bits. dh, dw: the dilations,
 * constants 1 in the undilated callers (no multiply per tap there). */
static inline __attribute__((always_inline)) float
dw_output(const struct kern_dwconv2d_shape *s, size_t oy, size_t ox,
          const float *x, size_t xs, const float *w, size_t ws, float b,
          size_t dh, size_t dw)
{
    const size_t ih = s->in_h, iw = s->in_w, kw = s->kw;
    float acc = b;
    for (size_t ky = 0; ky < s->kh; ky++) {
        /* Unsigned wrap makes rows above the input huge. */
        const size_t iy = oy * s->stride_h + ky * dh - s->pad_top;
        if (iy >= ih) {
            continue;
        }
        for (size_t kx = 0; kx < kw; kx++) {
            const size_t ix = ox * s->stride_w + kx * dw - s->pad_left;
            if (ix >= iw) {
                continue;
            }
            acc += w[(ky * kw + kx) * ws] * x[(iy * iw + ix) * xs];
        }
    }
    return acc;
}

/* dw_output with the undilated case's constants, so that an undilated
 * shape runs the loop it always ran (the branch is the same for every
 * output of a call, so it predicts perfectly). */
static inline __attribute__((always_inline)) float
dw_output_d(const struct kern_dwconv2d_shape *s, size_t oy, size_t ox,
            const float *x, size_t xs, const float *w, size_t ws, float b,
            size_t dh, size_t dw)
{
    if (dh == 1 && dw == 1) {
        return dw_output(s, oy, ox, x, xs, w, ws, b, 1, 1);
    }
    return dw_output(s, oy, ox, x, xs, w, ws, b, dh, dw);
}

void kern_dwconv2d_c(const struct kern_dwconv2d_shape *s, size_t out_h,
                     size_t out_w, const float *x, const float *w,
                     const float *bias, int act, float *y)
{
    const size_t taps = s->kh * s->kw;
    const size_t dh = kern_nn_dil(s->dilation_h);
    const size_t dw = kern_nn_dil(s->dilation_w);
    for (size_t p = 0; p < s->batch * s->channels; p++) {
        const size_t c = p % s->channels;
        const float *xp = x + p * s->in_h * s->in_w;
        float *yp = y + p * out_h * out_w;
        const float b = bias ? bias[c] : 0.0f;
        for (size_t oy = 0; oy < out_h; oy++) {
            for (size_t ox = 0; ox < out_w; ox++) {
                yp[oy * out_w + ox] = kern_fuse1(
                    dw_output_d(s, oy, ox, xp, 1, w + c * taps, 1, b, dh,
                                dw),
                    act);
            }
        }
    }
}

/* The same definition on NCHW8c tensors, output by output, lane by lane:
 * each value has the bits kern_dwconv2d_c gives it; padding lanes are
 * +0. */
void kern_dwconv2d_blk_c(const struct kern_dwconv2d_shape *s, size_t out_h,
                         size_t out_w, size_t b0, size_t b1, const float *x,
                         const float *packed, const float *bias, int act,
                         float *y)
{
    enum { L = KERN_CBLOCK };
    const size_t taps = s->kh * s->kw;
    const size_t dh = kern_nn_dil(s->dilation_h);
    const size_t dw = kern_nn_dil(s->dilation_w);
    const size_t nb = kern_nn_cblocks(s->channels);
    for (size_t b = 0; b < s->batch; b++) {
        for (size_t j = b0; j < b1; j++) {
            const float *xp = x + (b * nb + j) * s->in_h * s->in_w * L;
            const float *wj = packed + j * taps * L;
            float *yp = y + (b * nb + j) * out_h * out_w * L;
            for (size_t o = 0; o < out_h * out_w; o++) {
                for (size_t l = 0; l < L; l++) {
                    const size_t c = j * L + l;
                    yp[o * L + l] =
                        c < s->channels
                            ? kern_fuse1(dw_output_d(s, o / out_w,
                                                     o % out_w, xp + l, L,
                                                     wj + l, L,
                                                     bias ? bias[c] : 0.0f,
                                                     dh, dw),
                                         act)
                            : 0.0f;
                }
            }
        }
    }
}

void kern_dwconv2d_dil_c(const struct kern_dwconv2d_shape *s, size_t out_h,
                         size_t out_w, const float *x, const float *w,
                         const float *bias, int act, float *y)
{
    dwconv2d_dilated(s, out_h, out_w, x, w, bias, act, y);
}

static bool dw_dilated(const struct kern_dwconv2d_shape *s)
{
    return kern_nn_dil(s->dilation_h) > 1 || kern_nn_dil(s->dilation_w) > 1;
}

void kern_dwconv_dsp_init(struct kern_dwconv_dsp *dsp, unsigned flags)
{
    dsp->dwconv2d = kern_dwconv2d_c;
    dsp->dwconv2d_blk = kern_dwconv2d_blk_c;
    dsp->dwconv2d_dil = kern_dwconv2d_dil_c;
    dsp->dwconv2d_blk_dil = kern_dwconv2d_blk_c;
#if KERN_SIMD && KERN_HAVE_X86
    kern_dwconv_dsp_init_x86(dsp, flags);
#elif KERN_SIMD && KERN_HAVE_NEON
    kern_dwconv_dsp_init_arm(dsp, flags);
#else
    (void)flags;
#endif
}

static struct kern_dwconv_dsp dw_dsp;
static pthread_once_t dw_once = PTHREAD_ONCE_INIT;

static void dw_init_once(void)
{
    kern_dwconv_dsp_init(&dw_dsp, kern_cpu_flags());
}

KERN_API int kern_dwconv2d_out_hw(const struct kern_dwconv2d_shape *s,
                                  size_t *out_h, size_t *out_w)
{
    if (!s || !out_h || !out_w) {
        return KERN_E_INVALID;
    }
    if (!s->batch || !s->channels) {
        return KERN_E_SHAPE;
    }
    size_t oh, ow, n;
    int st = kern_nn_out_dim(s->in_h, kern_nn_dilated_k(s->kh, s->dilation_h),
                             s->stride_h, s->pad_top, s->pad_bottom, &oh);
    if (st == KERN_OK) {
        st = kern_nn_out_dim(s->in_w,
                             kern_nn_dilated_k(s->kw, s->dilation_w),
                             s->stride_w, s->pad_left, s->pad_right, &ow);
    }
    if (st != KERN_OK) {
        return st;
    }
    if (!kern_nn_mul4(s->batch, s->channels, s->in_h, s->in_w, &n) ||
        !kern_nn_mul4(s->batch, s->channels, oh, ow, &n) ||
        !kern_nn_mul4(s->channels, s->kh, s->kw, 1, &n) ||
        n > SIZE_MAX / sizeof(float)) {
        return KERN_E_OVERFLOW;
    }
    *out_h = oh;
    *out_w = ow;
    return KERN_OK;
}

KERN_API int kern_dwconv2d_f32(const struct kern_dwconv2d_shape *s,
                               const float *x, const float *w,
                               const float *bias, int act, float *y)
{
    if (!s || !x || !w || !y) {
        return KERN_E_INVALID;
    }
    size_t oh, ow;
    const int st = kern_dwconv2d_out_hw(s, &oh, &ow);
    if (st != KERN_OK) {
        return st;
    }
    if (act != KERN_FUSE_NONE && act != KERN_FUSE_RELU &&
        act != KERN_FUSE_RELU6) {
        return KERN_E_RANGE;
    }
    pthread_once(&dw_once, dw_init_once);
    if (dw_dilated(s)) {
        dw_dsp.dwconv2d_dil(s, oh, ow, x, w, bias, act, y);
        return KERN_OK;
    }
    dw_dsp.dwconv2d(s, oh, ow, x, w, bias, act, y);
    return KERN_OK;
}

/* Blocks of channels of the shape, or 0 when the blocked tensors (input,
 * output, packed filters) overflow; the shape is valid (out_hw OK). */
static size_t blocked_count(const struct kern_dwconv2d_shape *s, size_t oh,
                            size_t ow)
{
    const size_t c = s->channels;
    if (!kern_nn_blocked_fits(s->batch, c, s->in_h, s->in_w) ||
        !kern_nn_blocked_fits(s->batch, c, oh, ow) ||
        !kern_nn_blocked_fits(1, c, s->kh, s->kw)) {
        return 0;
    }
    return kern_nn_cblocks(c);
}

KERN_API size_t kern_dwconv2d_packed_bytes(const struct kern_dwconv2d_shape *s)
{
    size_t oh, ow;
    if (kern_dwconv2d_out_hw(s, &oh, &ow) != KERN_OK) {
        return 0;
    }
    const size_t nb = blocked_count(s, oh, ow);
    return nb * s->kh * s->kw * KERN_CBLOCK * sizeof(float);
}

KERN_API int kern_dwconv2d_pack_f32(const struct kern_dwconv2d_shape *s,
                                    const float *w, float *packed)
{
    if (!s || !w || !packed) {
        return KERN_E_INVALID;
    }
    size_t oh, ow;
    const int st = kern_dwconv2d_out_hw(s, &oh, &ow);
    if (st != KERN_OK) {
        return st;
    }
    const size_t nb = blocked_count(s, oh, ow), taps = s->kh * s->kw;
    if (!nb) {
        return KERN_E_OVERFLOW;
    }
    for (size_t j = 0; j < nb; j++) {
        for (size_t t = 0; t < taps; t++) {
            float *d = packed + (j * taps + t) * KERN_CBLOCK;
            for (size_t l = 0; l < KERN_CBLOCK; l++) {
                const size_t c = j * KERN_CBLOCK + l;
                d[l] = c < s->channels ? w[c * taps + t] : 0.0f;
            }
        }
    }
    return KERN_OK;
}

KERN_API int kern_dwconv2d_nchw8c_blocks_f32(
    const struct kern_dwconv2d_shape *s, size_t block0, size_t block1,
    const float *x, const float *packed, const float *bias, int act,
    float *y)
{
    if (!s || !x || !packed || !y) {
        return KERN_E_INVALID;
    }
    size_t oh, ow;
    const int st = kern_dwconv2d_out_hw(s, &oh, &ow);
    if (st != KERN_OK) {
        return st;
    }
    const size_t nb = blocked_count(s, oh, ow);
    if (!nb) {
        return KERN_E_OVERFLOW;
    }
    if (act != KERN_FUSE_NONE && act != KERN_FUSE_RELU &&
        act != KERN_FUSE_RELU6) {
        return KERN_E_RANGE;
    }
    if (block0 >= block1 || block1 > nb) {
        return KERN_E_RANGE;
    }
    pthread_once(&dw_once, dw_init_once);
    /* the blocked vector paths assume adjacent taps: dilated shapes have
     * their own entry (the reference where no path is written) */
    (dw_dilated(s) ? dw_dsp.dwconv2d_blk_dil : dw_dsp.dwconv2d_blk)(
        s, oh, ow, block0, block1, x, packed, bias, act, y);
    return KERN_OK;
}

KERN_API int kern_dwconv2d_nchw8c_f32(const struct kern_dwconv2d_shape *s,
                                      const float *x, const float *packed,
                                      const float *bias, int act, float *y)
{
    if (!s) {
        return KERN_E_INVALID;
    }
    const size_t nb = s->channels / KERN_CBLOCK +
                      (s->channels % KERN_CBLOCK != 0);
    /* channels == 0: the range [0, 0) is refused after the shape, which
     * reports KERN_E_SHAPE first */
    return kern_dwconv2d_nchw8c_blocks_f32(s, 0, nb ? nb : 1, x, packed,
                                           bias, act, y);
}
