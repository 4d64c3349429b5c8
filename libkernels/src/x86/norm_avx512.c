/* Layer normalisation, AVX-512: norm_avx2.c's scheme (sums in double,
 * eight lanes; the row normalised sixteen floats at a time, the tail
 * masked). */
#include <immintrin.h>
#include <math.h>

#include "norm.h"

static void row_stats(const float *x, size_t n, float eps, float *mean,
                      float *rstd)
{
    __m512d s0 = _mm512_setzero_pd(), s1 = _mm512_setzero_pd();
    size_t c = 0;
    for (; c + 16 <= n; c += 16) {
        const __m512 v = _mm512_loadu_ps(x + c);
        s0 = _mm512_add_pd(s0, _mm512_cvtps_pd(_mm512_castps512_ps256(v)));
        s1 = _mm512_add_pd(
            s1, _mm512_cvtps_pd(_mm256_castpd_ps(
                    _mm512_extractf64x4_pd(_mm512_castps_pd(v), 1))));
    }
    double s = _mm512_reduce_add_pd(_mm512_add_pd(s0, s1));
    for (; c < n; c++) {
        s += x[c];
    }
    const double m = s / (double)n;
    const __m512d vm = _mm512_set1_pd(m);
    s0 = _mm512_setzero_pd();
    s1 = _mm512_setzero_pd();
    for (c = 0; c + 16 <= n; c += 16) {
        const __m512 v = _mm512_loadu_ps(x + c);
        const __m512d d0 =
            _mm512_sub_pd(_mm512_cvtps_pd(_mm512_castps512_ps256(v)), vm);
        const __m512d d1 = _mm512_sub_pd(
            _mm512_cvtps_pd(_mm256_castpd_ps(
                _mm512_extractf64x4_pd(_mm512_castps_pd(v), 1))),
            vm);
        s0 = _mm512_fmadd_pd(d0, d0, s0);
        s1 = _mm512_fmadd_pd(d1, d1, s1);
    }
    double v = _mm512_reduce_add_pd(_mm512_add_pd(s0, s1));
    for (; c < n; c++) {
        const double d = x[c] - m;
        v += d * d;
    }
    *mean = (float)m;
    *rstd = (float)(1.0 / sqrt(v / (double)n + (double)eps));
}

void kern_layernorm_avx512(const float *x, size_t rows, size_t cols,
                           const float *gamma, const float *beta, float eps,
                           float *y)
{
    const __m512 one = _mm512_set1_ps(1.0f), zero = _mm512_setzero_ps();
    for (size_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols;
        float *yr = y + r * cols;
        float m, rs;
        row_stats(xr, cols, eps, &m, &rs);
        const __m512 vm = _mm512_set1_ps(m), vr = _mm512_set1_ps(rs);
        for (size_t c = 0; c < cols; c += 16) {
            const size_t left = cols - c;
            const __mmask16 k =
                left >= 16 ? (__mmask16)0xffff
                           : (__mmask16)((1u << left) - 1u);
            const __m512 h = _mm512_mul_ps(
                _mm512_sub_ps(_mm512_maskz_loadu_ps(k, xr + c), vm), vr);
            const __m512 g = gamma ? _mm512_maskz_loadu_ps(k, gamma + c) : one;
            const __m512 b = beta ? _mm512_maskz_loadu_ps(k, beta + c) : zero;
            _mm512_mask_storeu_ps(yr + c, k, _mm512_fmadd_ps(h, g, b));
        }
    }
}
