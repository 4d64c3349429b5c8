/* AVX2 kernels of the nn family; see nn_avx512.c for the approach (same
 * operations, 8 lanes per vector, masks as integer vectors). */
#include <immintrin.h>
#include <string.h>

#include "nn.h"

/* All-ones in the first `left` (<= 8) lanes. */
static inline __m256i lane_mask_n(size_t left)
{
    const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const int n = left >= 8 ? 8 : (int)left;
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), lanes);
}

void kern_nn_bias_add_avx2(float *x, size_t rows, size_t channels,
                           const float *bias)
{
    if (channels == 1) {
        const __m256 b = _mm256_set1_ps(bias[0]);
        size_t i = 0;
        for (; i + 8 <= rows; i += 8) {
            _mm256_storeu_ps(x + i, _mm256_add_ps(_mm256_loadu_ps(x + i), b));
        }
        for (; i < rows; i++) {
            x[i] += bias[0];
        }
        return;
    }
    for (size_t r = 0; r < rows; r++) {
        float *row = x + r * channels;
        size_t c = 0;
        for (; c + 8 <= channels; c += 8) {
            _mm256_storeu_ps(row + c, _mm256_add_ps(_mm256_loadu_ps(row + c),
                                                    _mm256_loadu_ps(bias + c)));
        }
        for (; c < channels; c++) {
            row[c] += bias[c];
        }
    }
}

bool kern_nn_all_finite_avx2(const float *x, size_t n)
{
    const __m256i e = _mm256_set1_epi32(0x7f800000);
    __m256i bad = _mm256_setzero_si256();
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256i v = _mm256_loadu_si256((const __m256i *)(x + i));
        bad = _mm256_or_si256(bad,
                              _mm256_cmpeq_epi32(_mm256_and_si256(v, e), e));
    }
    bool ok = _mm256_testz_si256(bad, bad);
    for (; i < n; i++) {
        uint32_t bits;
        memcpy(&bits, &x[i], 4);
        ok &= (bits & 0x7f800000u) != 0x7f800000u;
    }
    return ok;
}

void kern_nn_scale_avx2(float *x, size_t n, float s)
{
    const __m256 sv = _mm256_set1_ps(s);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        _mm256_storeu_ps(x + i, _mm256_mul_ps(_mm256_loadu_ps(x + i), sv));
    }
    for (; i < n; i++) {
        x[i] *= s;
    }
}

void kern_nn_sgd_avx2(float *w, const float *g, float *velocity, size_t n,
                      float lr, float momentum, float weight_decay)
{
    const __m256 lrv = _mm256_set1_ps(lr);
    const __m256 mu = _mm256_set1_ps(momentum);
    const __m256 wd = _mm256_set1_ps(weight_decay);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 wv = _mm256_loadu_ps(w + i);
        __m256 gv = _mm256_loadu_ps(g + i);
        if (weight_decay != 0.0f) {
            gv = _mm256_add_ps(gv, _mm256_mul_ps(wd, wv));
        }
        if (momentum != 0.0f) {
            const __m256 v = _mm256_add_ps(
                _mm256_mul_ps(mu, _mm256_loadu_ps(velocity + i)), gv);
            _mm256_storeu_ps(velocity + i, v);
            gv = v;
        }
        _mm256_storeu_ps(w + i, _mm256_sub_ps(wv, _mm256_mul_ps(lrv, gv)));
    }
    if (i < n) {
        kern_nn_sgd_c(w + i, g + i, momentum != 0.0f ? velocity + i : NULL,
                      n - i, lr, momentum, weight_decay);
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

static __m256i lane_mask(size_t ox0, size_t v, size_t stride, size_t kx,
                         size_t pad, size_t in_w, size_t out_w)
{
    int32_t m[8];
    for (unsigned l = 0; l < 8; l++) {
        const size_t ox = ox0 + 8 * v + l;
        const size_t ix = ox * stride + kx - pad; /* wraps when negative */
        m[l] = ox < out_w && ix < in_w ? -1 : 0;
    }
    return _mm256_loadu_si256((const __m256i *)m);
}

void kern_nn_conv2d_avx2(const struct kern_conv2d_shape *s, size_t out_h,
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
    __m256i masks[MAXK][NV];
    const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    for (size_t ox0 = 0; ox0 < out_w; ox0 += 8 * NV) {
        const size_t nv = (out_w - ox0 + 7) / 8 < NV ? (out_w - ox0 + 7) / 8
                                                    : NV;
        __m256i idx[NV];
        __m256i store[NV];
        for (size_t v = 0; v < NV; v++) {
            for (size_t kx = 0; kx < k; kx++) {
                masks[kx][v] = lane_mask(ox0, v, st, kx, pad, iw, out_w);
            }
            idx[v] = _mm256_mullo_epi32(
                _mm256_add_epi32(lanes,
                                 _mm256_set1_epi32((int)(ox0 + 8 * v))),
                _mm256_set1_epi32((int)st));
            store[v] = lane_mask_n(out_w > ox0 + 8 * v ? out_w - ox0 - 8 * v
                                                       : 0);
        }
        for (size_t b = 0; b < s->batch; b++) {
            for (size_t oc = 0; oc < s->out_c; oc++) {
                const size_t g = oc / ocg;
                const float *wo = w + oc * icg * k * k;
                float *yo = y + (b * s->out_c + oc) * out_h * out_w;
                const __m256 b0 = _mm256_set1_ps(bias ? bias[oc] : 0.0f);
                for (size_t oy = 0; oy < out_h; oy++) {
                    __m256 acc[NV] = {b0, b0, b0, b0};
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
                                const __m256 wv = _mm256_set1_ps(wr[kx]);
                                const ptrdiff_t off =
                                    (ptrdiff_t)(ox0 * st + kx) -
                                    (ptrdiff_t)pad;
                                for (size_t v = 0; v < nv; v++) {
                                    __m256 xv;
                                    if (st == 1) {
                                        xv = _mm256_maskload_ps(
                                            at(row, off + 8 * (ptrdiff_t)v),
                                            masks[kx][v]);
                                    } else {
                                        const __m256i ii = _mm256_add_epi32(
                                            idx[v],
                                            _mm256_set1_epi32((int)kx -
                                                              (int)pad));
                                        xv = _mm256_mask_i32gather_ps(
                                            _mm256_setzero_ps(), row, ii,
                                            _mm256_castsi256_ps(
                                                masks[kx][v]),
                                            4);
                                    }
                                    acc[v] = _mm256_fmadd_ps(wv, xv, acc[v]);
                                }
                            }
                        }
                    }
                    for (size_t v = 0; v < nv; v++) {
                        _mm256_maskstore_ps(yo + oy * out_w + ox0 + 8 * v,
                                            store[v], acc[v]);
                    }
                }
            }
        }
    }
}
