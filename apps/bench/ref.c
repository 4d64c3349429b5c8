/* edgefit-bench: the baselines the tables compare with. They are plain
 * loops on purpose, the code a person writes first. */
#include <math.h>
#include <string.h>

#include "bench.h"

void bench_sgemm_naive(size_t m, size_t n, size_t k, const float *a,
                       const float *b, float *c)
{
    /* i, p, j order: the inner loop runs along rows of B and C, the order
     * a compiler can vectorise, so the baseline is the honest naive loop
     * rather than the column-striding i, j, p one. */
    for (size_t i = 0; i < m; i++) {
        float *ci = c + i * n;
        for (size_t j = 0; j < n; j++) {
            ci[j] = 0.0f;
        }
        for (size_t p = 0; p < k; p++) {
            const float aip = a[i * k + p];
            const float *bp = b + p * n;
            for (size_t j = 0; j < n; j++) {
                ci[j] += aip * bp[j];
            }
        }
    }
}

void bench_s8gemm_naive(size_t m, size_t n, size_t k, const int8_t *a,
                        const int8_t *w, int32_t *c)
{
    for (size_t i = 0; i < m; i++) {
        for (size_t j = 0; j < n; j++) {
            int32_t s = 0;
            for (size_t p = 0; p < k; p++) {
                s += (int32_t)a[i * k + p] * (int32_t)w[j * k + p];
            }
            c[i * n + j] = s;
        }
    }
}

void bench_gelu_tanhf_loop(float *dst, const float *src, size_t n)
{
    const float k = 0.7978845608028654f; /* sqrt(2 / pi) */
    for (size_t i = 0; i < n; i++) {
        float x = src[i];
        dst[i] = 0.5f * x * (1.0f + tanhf(k * (x + 0.044715f * x * x * x)));
    }
}

void bench_add(float *dst, const float *x, const float *y, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        dst[i] = x[i] + y[i];
    }
}

void bench_mul(float *dst, const float *x, const float *y, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        dst[i] = x[i] * y[i];
    }
}

void bench_f32_to_bf16_loop(uint16_t *dst, const float *src, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, &src[i], sizeof u);
        if ((u & 0x7fffffffu) > 0x7f800000u) {
            /* NaN: keep the sign and the top payload bits, set the quiet
             * bit so that truncation cannot turn it into infinity. */
            dst[i] = (uint16_t)((u >> 16) | 0x0040u);
        } else {
            /* Round to nearest, ties to even; a carry into the exponent
             * is the correct rounding, up to infinity. */
            uint32_t lsb = (u >> 16) & 1u;
            dst[i] = (uint16_t)((u + 0x7fffu + lsb) >> 16);
        }
    }
}

void bench_bf16_to_f32_loop(float *dst, const uint16_t *src, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        uint32_t u = (uint32_t)src[i] << 16;
        memcpy(&dst[i], &u, sizeof u);
    }
}

#if !BENCH_HAVE_F16C
bool bench_f16c_available(void)
{
    return false;
}

void bench_f32_to_f16_f16c(uint16_t *dst, const float *src, size_t n)
{
    (void)dst;
    (void)src;
    (void)n;
}

void bench_f16_to_f32_f16c(float *dst, const uint16_t *src, size_t n)
{
    (void)dst;
    (void)src;
    (void)n;
}
#endif
