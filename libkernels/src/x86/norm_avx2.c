/* Layer normalisation, AVX2: the row's sums in double, four lanes at a
 * time (two accumulators), as the C reference sums in double, so that a
 * row far from zero loses nothing; then the row normalised eight floats at
 * a time with one FMA for gamma and beta. Agrees with kern_layernorm_c
 * within the sums' order (in double) and one rounding of the FMA. */
#include <immintrin.h>
#include <math.h>

#include "norm.h"

static inline double hsum4d(__m256d v)
{
    __m128d s = _mm_add_pd(_mm256_castpd256_pd128(v),
                           _mm256_extractf128_pd(v, 1));
    s = _mm_add_sd(s, _mm_unpackhi_pd(s, s));
    return _mm_cvtsd_f64(s);
}

static void row_stats(const float *x, size_t n, float eps, float *mean,
                      float *rstd)
{
    __m256d s0 = _mm256_setzero_pd(), s1 = _mm256_setzero_pd();
    size_t c = 0;
    for (; c + 8 <= n; c += 8) {
        const __m256 v = _mm256_loadu_ps(x + c);
        s0 = _mm256_add_pd(s0, _mm256_cvtps_pd(_mm256_castps256_ps128(v)));
        s1 = _mm256_add_pd(s1, _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)));
    }
    double s = hsum4d(_mm256_add_pd(s0, s1));
    for (; c < n; c++) {
        s += x[c];
    }
    const double m = s / (double)n;
    const __m256d vm = _mm256_set1_pd(m);
    s0 = _mm256_setzero_pd();
    s1 = _mm256_setzero_pd();
    for (c = 0; c + 8 <= n; c += 8) {
        const __m256 v = _mm256_loadu_ps(x + c);
        const __m256d d0 = _mm256_sub_pd(
            _mm256_cvtps_pd(_mm256_castps256_ps128(v)), vm);
        const __m256d d1 = _mm256_sub_pd(
            _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)), vm);
        s0 = _mm256_fmadd_pd(d0, d0, s0);
        s1 = _mm256_fmadd_pd(d1, d1, s1);
    }
    double v = hsum4d(_mm256_add_pd(s0, s1));
    for (; c < n; c++) {
        const double d = x[c] - m;
        v += d * d;
    }
    *mean = (float)m;
    *rstd = (float)(1.0 / sqrt(v / (double)n + (double)eps));
}

void kern_layernorm_avx2(const float *x, size_t rows, size_t cols,
                         const float *gamma, const float *beta, float eps,
                         float *y)
{
    const __m256 one = _mm256_set1_ps(1.0f), zero = _mm256_setzero_ps();
    for (size_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols;
        float *yr = y + r * cols;
        float m, rs;
        row_stats(xr, cols, eps, &m, &rs);
        const __m256 vm = _mm256_set1_ps(m), vr = _mm256_set1_ps(rs);
        size_t c = 0;
        for (; c + 8 <= cols; c += 8) {
            const __m256 h =
                _mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(xr + c), vm), vr);
            const __m256 g = gamma ? _mm256_loadu_ps(gamma + c) : one;
            const __m256 b = beta ? _mm256_loadu_ps(beta + c) : zero;
            _mm256_storeu_ps(yr + c, _mm256_fmadd_ps(h, g, b));
        }
        for (; c < cols; c++) {
            const float h = (xr[c] - m) * rs;
            yr[c] = fmaf(h, gamma ? gamma[c] : 1.0f, beta ? beta[c] : 0.0f);
        }
    }
}
