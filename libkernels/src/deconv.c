/* Transposed convolution: the scatter reference, the GEMM path and the
 * public wrappers. The GEMM form is the standard one (Caffe's and
 * PyTorch's CPU "col2im" deconvolution): for a sample and group, the
 * columns col = W^T . X ((o, ky, kx) rows, one per input pixel) hold every
 * product the scatter adds, so one kern_sgemm does all the multiplies and
 * a col2im pass only adds rows into the output. The sub-pixel split (one
 * small convolution per stride phase) would skip the zeros of a strided
 * output too, but needs the weights rearranged per phase; the GEMM form
 * does the same multiplies (input pixels x out_c/g x kh x kw, no zeros)
 * with weights read in place. */
#include <stdlib.h>
#include <string.h>

#include "deconv.h"
#include "nn.h"
#include "alloc_rec.h" /* last: it wraps malloc and co. */

void kern_conv_transpose2d_c(const struct kern_conv_transpose2d_shape *s,
                             size_t out_h, size_t out_w, const float *x,
                             const float *w, const float *bias, float *y)
{
    const size_t icg = s->in_c / s->groups, ocg = s->out_c / s->groups;
    const size_t kh = s->kh, kw = s->kw, ih = s->in_h, iw = s->in_w;
    const size_t dh = kern_nn_dil(s->dilation_h);
    const size_t dw = kern_nn_dil(s->dilation_w);
    const size_t hw_out = out_h * out_w;
    for (size_t b = 0; b < s->batch; b++) {
        for (size_t oc = 0; oc < s->out_c; oc++) {
            float *yo = y + (b * s->out_c + oc) * hw_out;
            const float v = bias ? bias[oc] : 0.0f;
            for (size_t p = 0; p < hw_out; p++) {
                yo[p] = v;
            }
        }
        for (size_t ic = 0; ic < s->in_c; ic++) {
            const size_t g = ic / icg;
            const float *xc = x + (b * s->in_c + ic) * ih * iw;
            for (size_t iy = 0; iy < ih; iy++) {
                for (size_t ix = 0; ix < iw; ix++) {
                    const float xv = xc[iy * iw + ix];
                    for (size_t o = 0; o < ocg; o++) {
                        const float *wo = w + (ic * ocg + o) * kh * kw;
                        float *yo =
                            y + (b * s->out_c + g * ocg + o) * hw_out;
                        for (size_t ky = 0; ky < kh; ky++) {
                            /* unsigned wrap: rows above the output fail
                             * the test too */
                            const size_t oy =
                                iy * s->stride_h + ky * dh - s->pad_top;
                            if (oy >= out_h) {
                                continue;
                            }
                            for (size_t kx = 0; kx < kw; kx++) {
                                const size_t ox =
                                    ix * s->stride_w + kx * dw - s->pad_left;
                                if (ox < out_w) {
                                    yo[oy * out_w + ox] +=
                                        xv * wo[ky * kw + kx];
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

/* The columns are computed for a band of input rows at a time, so that
 * the scratch stays near BAND_FLOATS (1 MiB) whatever the plane (a memory
 * plan pays for it), while the GEMM still gets at least one input row of
 * columns. */
enum { BAND_FLOATS = 1 << 18 };

static size_t band_rows(size_t M, size_t ih, size_t iw)
{
    /* M * iw fits: kern_conv_transpose2d_out_hw checked M * ih * iw */
    const size_t rows = BAND_FLOATS / (M * iw);
    return rows < 1 ? 1 : rows > ih ? ih : rows;
}

/* The input columns ix whose output column ix * sw + off - pl lies in
 * [0, ow): [*lo, *hi), possibly empty. */
static void in_cols(size_t off, size_t sw, size_t pl, size_t iw, size_t ow,
                    size_t *lo, size_t *hi)
{
    size_t a = off < pl ? (pl - off + sw - 1) / sw : 0;
    size_t b = ow + pl > off ? (ow - 1 + pl - off) / sw + 1 : 0;
    b = b < iw ? b : iw;
    *lo = a < b ? a : b;
    *hi = b;
}

/* Adds the columns of input rows [iy0, iy1) (col [ocg * kh * kw][n], n
 * = (iy1 - iy0) * in_w) into the group's output planes yg: the row of
 * (o, ky, kx) lands on output row iy * stride_h + ky * dilation_h -
 * pad_top, a run of the columns whose output column is inside. */
static void col2im_band(const struct kern_conv_transpose2d_shape *s,
                        size_t out_h, size_t out_w, const float *col,
                        size_t n, size_t iy0, size_t iy1, float *yg)
{
    const size_t ocg = s->out_c / s->groups, kh = s->kh, kw = s->kw;
    const size_t iw = s->in_w, sh = s->stride_h, sw = s->stride_w;
    const size_t dh = kern_nn_dil(s->dilation_h);
    const size_t dw = kern_nn_dil(s->dilation_w);
    for (size_t o = 0; o < ocg; o++) {
        float *yo = yg + o * out_h * out_w;
        for (size_t kx = 0; kx < kw; kx++) {
            size_t lo, hi;
            in_cols(kx * dw, sw, s->pad_left, iw, out_w, &lo, &hi);
            if (lo == hi) {
                continue;
            }
            const size_t run = hi - lo;
            for (size_t ky = 0; ky < kh; ky++) {
                const float *row = col + ((o * kh + ky) * kw + kx) * n;
                for (size_t iy = iy0; iy < iy1; iy++) {
                    const size_t oy = iy * sh + ky * dh - s->pad_top;
                    if (oy >= out_h) {
                        continue;
                    }
                    /* lo * sw + kx * dw >= pad_left by lo */
                    float *d = yo + oy * out_w +
                               (lo * sw + kx * dw - s->pad_left);
                    const float *r = row + (iy - iy0) * iw + lo;
                    if (sw == 1) {
                        for (size_t j = 0; j < run; j++) {
                            d[j] += r[j];
                        }
                    } else {
                        for (size_t j = 0; j < run; j++) {
                            d[j * sw] += r[j];
                        }
                    }
                }
            }
        }
    }
}

int kern_conv_transpose2d_gemm(const struct kern_conv_transpose2d_shape *s,
                               size_t out_h, size_t out_w, const float *x,
                               const float *w, const float *bias,
                               void *work, float *y)
{
    const size_t icg = s->in_c / s->groups, ocg = s->out_c / s->groups;
    const size_t ih = s->in_h, iw = s->in_w;
    const size_t M = ocg * s->kh * s->kw, P = ih * iw;
    const size_t hw_out = out_h * out_w;
    const size_t band = band_rows(M, ih, iw);
    float *col = work;
    for (size_t b = 0; b < s->batch; b++) {
        for (size_t oc = 0; oc < s->out_c; oc++) {
            float *yo = y + (b * s->out_c + oc) * hw_out;
            const float v = bias ? bias[oc] : 0.0f;
            for (size_t p = 0; p < hw_out; p++) {
                yo[p] = v;
            }
        }
        for (size_t g = 0; g < s->groups; g++) {
            for (size_t iy0 = 0; iy0 < ih; iy0 += band) {
                const size_t iy1 = iy0 + band < ih ? iy0 + band : ih;
                const size_t n = (iy1 - iy0) * iw;
                /* col [M][n] = W_g^T . X_g (the band's columns), W_g stored
                 * [icg][M] */
                const int st = kern_sgemm(
                    KERN_MM_TRANS_A, M, n, icg, w + g * icg * M, M,
                    x + (b * s->in_c + g * icg) * P + iy0 * iw, P, col, n);
                if (st != KERN_OK) {
                    return st;
                }
                col2im_band(s, out_h, out_w, col, n, iy0, iy1,
                            y + (b * s->out_c + g * ocg) * hw_out);
            }
        }
    }
    return KERN_OK;
}

/* ---- public API ---------------------------------------------------------- */

/* One axis: (in - 1) * s - lo - hi + d * (k - 1) + op + 1. */
static int out_dim(size_t in, size_t k, size_t stride, size_t dil,
                   size_t lo, size_t hi, size_t op, size_t *out)
{
    if (!in || !k || !stride) {
        return KERN_E_SHAPE;
    }
    dil = kern_nn_dil(dil);
    if (op >= stride && op >= dil) {
        return KERN_E_RANGE;
    }
    size_t full, span;
    if (!kern_nn_mul4(in - 1, stride, 1, 1, &full) ||
        !kern_nn_mul4(k - 1, dil, 1, 1, &span) || span > SIZE_MAX - full ||
        full + span > SIZE_MAX - op - 1) {
        return KERN_E_OVERFLOW;
    }
    full += span + op + 1;
    if (lo >= full || hi >= full - lo) {
        return KERN_E_SHAPE;
    }
    *out = full - lo - hi;
    return KERN_OK;
}

KERN_API int kern_conv_transpose2d_out_hw(
    const struct kern_conv_transpose2d_shape *s, size_t *out_h,
    size_t *out_w)
{
    if (!s || !out_h || !out_w) {
        return KERN_E_INVALID;
    }
    if (!s->batch || !s->in_c || !s->out_c || !s->groups ||
        s->in_c % s->groups || s->out_c % s->groups) {
        return KERN_E_SHAPE;
    }
    size_t oh, ow, n;
    int st = out_dim(s->in_h, s->kh, s->stride_h, s->dilation_h, s->pad_top,
                     s->pad_bottom, s->out_pad_h, &oh);
    if (st == KERN_OK) {
        st = out_dim(s->in_w, s->kw, s->stride_w, s->dilation_w,
                     s->pad_left, s->pad_right, s->out_pad_w, &ow);
    }
    if (st != KERN_OK) {
        return st;
    }
    if (!kern_nn_mul4(s->batch, s->in_c, s->in_h, s->in_w, &n) ||
        n > SIZE_MAX / sizeof(float) ||
        !kern_nn_mul4(s->batch, s->out_c, oh, ow, &n) ||
        n > SIZE_MAX / sizeof(float) ||
        !kern_nn_mul4(s->in_c, s->out_c / s->groups, s->kh, s->kw, &n) ||
        n > SIZE_MAX / sizeof(float) ||
        !kern_nn_mul4(s->out_c / s->groups, s->kh, s->kw, s->in_h, &n) ||
        !kern_nn_mul4(n, s->in_w, sizeof(float), 1, &n)) {
        return KERN_E_OVERFLOW;
    }
    *out_h = oh;
    *out_w = ow;
    return KERN_OK;
}

KERN_API size_t kern_conv_transpose2d_work_bytes(
    const struct kern_conv_transpose2d_shape *s)
{
    size_t oh, ow;
    if (kern_conv_transpose2d_out_hw(s, &oh, &ow) != KERN_OK) {
        return 0;
    }
    /* fits: checked by kern_conv_transpose2d_out_hw */
    const size_t M = s->out_c / s->groups * s->kh * s->kw;
    return M * band_rows(M, s->in_h, s->in_w) * s->in_w * sizeof(float);
}

KERN_API int kern_conv_transpose2d_f32(
    const struct kern_conv_transpose2d_shape *s, const float *x,
    const float *w, const float *bias, void *work, float *y)
{
    if (!s || !x || !w || !y) {
        return KERN_E_INVALID;
    }
    size_t oh, ow;
    int st = kern_conv_transpose2d_out_hw(s, &oh, &ow);
    if (st != KERN_OK) {
        return st;
    }
    void *own = NULL;
    if (!work) {
        own = malloc(kern_conv_transpose2d_work_bytes(s));
        if (!own) {
            return KERN_E_NOMEM;
        }
        work = own;
    }
    st = kern_conv_transpose2d_gemm(s, oh, ow, x, w, bias, work, y);
    free(own);
    return st;
}
