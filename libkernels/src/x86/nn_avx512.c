/* AVX-512 kernels of the nn family. bias_add, scale and sgd perform the
 * C reference's float operations in the same order (no fused multiply-add),
 * so they match it bit for bit. The convolution vectorises along the output
 * row (16 output columns per vector, up to 64 per pass) and accumulates in
 * the reference's order (input channel, kernel row, kernel column) with
 * fused multiply-adds, so it differs from the reference only by the
 * rounding of the separate multiply. */
#include <immintrin.h>
#include <string.h>

#include "nn.h"

static inline __mmask16 tail_mask(size_t left)
{
    return left >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << left) - 1);
}

void kern_nn_bias_add_avx512(float *x, size_t rows, size_t channels,
                             const float *bias)
{
    if (channels == 1) {
        const __m512 b = _mm512_set1_ps(bias[0]);
        for (size_t i = 0; i < rows; i += 16) {
            const __mmask16 m = tail_mask(rows - i);
            _mm512_mask_storeu_ps(
                x + i, m, _mm512_add_ps(_mm512_maskz_loadu_ps(m, x + i), b));
        }
        return;
    }
    for (size_t r = 0; r < rows; r++) {
        float *row = x + r * channels;
        for (size_t c = 0; c < channels; c += 16) {
            const __mmask16 m = tail_mask(channels - c);
            const __m512 v = _mm512_add_ps(_mm512_maskz_loadu_ps(m, row + c),
                                           _mm512_maskz_loadu_ps(m, bias + c));
            _mm512_mask_storeu_ps(row + c, m, v);
        }
    }
}

bool kern_nn_all_finite_avx512(const float *x, size_t n)
{
    const __m512i e = _mm512_set1_epi32(0x7f800000);
    __mmask16 bad = 0;
    for (size_t i = 0; i < n; i += 16) {
        const __m512i v =
            _mm512_maskz_loadu_epi32(tail_mask(n - i), (const int *)(x + i));
        bad |= _mm512_cmpeq_epi32_mask(_mm512_and_si512(v, e), e);
        if (bad && (i & 4095) == 0) {
            return false;
        }
    }
    return bad == 0;
}

void kern_nn_scale_avx512(float *x, size_t n, float s)
{
    const __m512 sv = _mm512_set1_ps(s);
    for (size_t i = 0; i < n; i += 16) {
        const __mmask16 m = tail_mask(n - i);
        _mm512_mask_storeu_ps(
            x + i, m, _mm512_mul_ps(_mm512_maskz_loadu_ps(m, x + i), sv));
    }
}

void kern_nn_sgd_avx512(float *w, const float *g, float *velocity, size_t n,
                        float lr, float momentum, float weight_decay)
{
    const __m512 lrv = _mm512_set1_ps(lr);
    const __m512 mu = _mm512_set1_ps(momentum);
    const __m512 wd = _mm512_set1_ps(weight_decay);
    for (size_t i = 0; i < n; i += 16) {
        const __mmask16 m = tail_mask(n - i);
        const __m512 wv = _mm512_maskz_loadu_ps(m, w + i);
        __m512 gv = _mm512_maskz_loadu_ps(m, g + i);
        if (weight_decay != 0.0f) {
            gv = _mm512_add_ps(gv, _mm512_mul_ps(wd, wv));
        }
        if (momentum != 0.0f) {
            const __m512 v = _mm512_add_ps(
                _mm512_mul_ps(mu, _mm512_maskz_loadu_ps(m, velocity + i)),
                gv);
            _mm512_mask_storeu_ps(velocity + i, m, v);
            gv = v;
        }
        _mm512_mask_storeu_ps(w + i, m,
                              _mm512_sub_ps(wv, _mm512_mul_ps(lrv, gv)));
    }
}

enum { NV = 4, MAXK = 16 };

/* Address of row[off] for a masked load whose first lanes may lie before
 * the row (off < 0; those lanes are masked off and never read). Computed on
 * integers, since a pointer before the start of an array is undefined. */
static inline const float *at(const float *row, ptrdiff_t off)
{
    return (const float *)((uintptr_t)row + (uintptr_t)off * sizeof *row);
}

/* Lanes l of vector v whose input column ix = (ox0 + 16 v + l) * stride +
 * kx - pad lies in [0, in_w) and whose output column is below out_w. */
static __mmask16 lane_mask(size_t ox0, size_t v, size_t stride, size_t kx,
                           size_t pad, size_t in_w, size_t out_w)
{
    __mmask16 m = 0;
    for (unsigned l = 0; l < 16; l++) {
        const size_t ox = ox0 + 16 * v + l;
        const size_t ix = ox * stride + kx - pad; /* wraps when negative */
        if (ox < out_w && ix < in_w) {
            m |= (__mmask16)(1u << l);
        }
    }
    return m;
}

void kern_nn_conv2d_avx512(const struct kern_conv2d_shape *s, size_t out_h,
                           size_t out_w, const float *x, const float *w,
                           const float *bias, float *y)
{
    const size_t k = s->k, st = s->stride, pad = s->pad;
    if (k > MAXK || out_w > (size_t)INT32_MAX / 2 / st ||
        s->in_w > (size_t)INT32_MAX / 2) {
        kern_nn_conv2d_c(s, out_h, out_w, x, w, bias, y);
        return;
    }
    const size_t icg = s->in_c / s->groups, ocg = s->out_c / s->groups;
    const size_t ih = s->in_h, iw = s->in_w;
    __mmask16 masks[MAXK][NV];
    const __m512i lanes = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9,
                                            10, 11, 12, 13, 14, 15);
    for (size_t ox0 = 0; ox0 < out_w; ox0 += 16 * NV) {
        const size_t nv = (out_w - ox0 + 15) / 16 < NV
                              ? (out_w - ox0 + 15) / 16
                              : NV;
        __m512i idx[NV];
        for (size_t v = 0; v < NV; v++) {
            for (size_t kx = 0; kx < k; kx++) {
                masks[kx][v] = v < nv ? lane_mask(ox0, v, st, kx, pad, iw,
                                                  out_w)
                                      : 0;
            }
            /* Input column offsets of the lanes for kx = pad (added to a
             * row pointer shifted by kx - pad). */
            idx[v] = _mm512_mullo_epi32(
                _mm512_add_epi32(lanes, _mm512_set1_epi32((int)(ox0 +
                                                                16 * v))),
                _mm512_set1_epi32((int)st));
        }
        for (size_t b = 0; b < s->batch; b++) {
            for (size_t oc = 0; oc < s->out_c; oc++) {
                const size_t g = oc / ocg;
                const float *wo = w + oc * icg * k * k;
                float *yo = y + (b * s->out_c + oc) * out_h * out_w;
                const __m512 b0 = _mm512_set1_ps(bias ? bias[oc] : 0.0f);
                for (size_t oy = 0; oy < out_h; oy++) {
                    __m512 acc[NV] = {b0, b0, b0, b0};
                    for (size_t ci = 0; ci < icg; ci++) {
                        const float *xc =
                            x + (b * s->in_c + g * icg + ci) * ih * iw;
                        for (size_t ky = 0; ky < k; ky++) {
                            const size_t iy = oy * st + ky - pad;
                            if (iy >= ih) {
                                continue;
                            }
                            const float *row = xc + iy * iw;
                            const float *wr = wo + (ci * k + ky) * k;
                            for (size_t kx = 0; kx < k; kx++) {
                                const __m512 wv = _mm512_set1_ps(wr[kx]);
                                /* Offset of lane 0's input column; may be
                                 * negative, those lanes are masked off. */
                                const ptrdiff_t off =
                                    (ptrdiff_t)(ox0 * st + kx) -
                                    (ptrdiff_t)pad;
                                for (size_t v = 0; v < nv; v++) {
                                    const __mmask16 m = masks[kx][v];
                                    __m512 xv;
                                    if (st == 1) {
                                        xv = _mm512_maskz_loadu_ps(
                                            m,
                                            at(row, off + 16 * (ptrdiff_t)v));
                                    } else {
                                        const __m512i ii = _mm512_add_epi32(
                                            idx[v],
                                            _mm512_set1_epi32((int)kx -
                                                              (int)pad));
                                        xv = _mm512_mask_i32gather_ps(
                                            _mm512_setzero_ps(), m, ii, row,
                                            4);
                                    }
                                    acc[v] = _mm512_fmadd_ps(wv, xv, acc[v]);
                                }
                            }
                        }
                    }
                    for (size_t v = 0; v < nv; v++) {
                        _mm512_mask_storeu_ps(yo + oy * out_w + ox0 + 16 * v,
                                              tail_mask(out_w - ox0 - 16 * v),
                                              acc[v]);
                    }
                }
            }
        }
    }
}
