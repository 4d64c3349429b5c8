/* AVX2 conversions between NCHW and NCHW8c: 8 pixels of a block's 8
 * channels are one 8 x 8 tile, loaded as 8 vectors of one layout,
 * transposed in registers and stored as 8 vectors of the other; the
 * pixels past the last multiple of 8 go one value at a time as in the
 * definition (src/layout.c). Values are moved, never computed, so the
 * results are those of the C path bit for bit. */
#include <immintrin.h>

#include "layout.h"
#include "transpose_avx2.h"

void kern_nchw_to_nchw8c_avx2(size_t batch, size_t c, size_t hw,
                              const float *x, float *y)
{
    const size_t cb = (c + 7) / 8;
    for (size_t b = 0; b < batch; b++) {
        for (size_t k = 0; k < cb; k++) {
            float *yk = y + (b * cb + k) * hw * 8;
            const size_t n = c - k * 8 < 8 ? c - k * 8 : 8;
            const float *xk = x + (b * c + k * 8) * hw;
            size_t p = 0;
            for (; p + 8 <= hw; p += 8) {
                __m256 t[8];
                for (size_t l = 0; l < 8; l++) {
                    /* missing channels: the zero padding lanes */
                    t[l] = l < n ? _mm256_loadu_ps(xk + l * hw + p)
                                 : _mm256_setzero_ps();
                }
                transpose8(t);
                for (size_t i = 0; i < 8; i++) {
                    _mm256_storeu_ps(yk + (p + i) * 8, t[i]);
                }
            }
            for (; p < hw; p++) {
                for (size_t l = 0; l < 8; l++) {
                    yk[p * 8 + l] = l < n ? xk[l * hw + p] : 0.0f;
                }
            }
        }
    }
}

void kern_nchw8c_to_nchw_avx2(size_t batch, size_t c, size_t hw,
                              const float *x, float *y)
{
    const size_t cb = (c + 7) / 8;
    for (size_t b = 0; b < batch; b++) {
        for (size_t k = 0; k < cb; k++) {
            const float *xk = x + (b * cb + k) * hw * 8;
            const size_t n = c - k * 8 < 8 ? c - k * 8 : 8;
            float *yk = y + (b * c + k * 8) * hw;
            size_t p = 0;
            for (; p + 8 <= hw; p += 8) {
                __m256 t[8];
                for (size_t i = 0; i < 8; i++) {
                    t[i] = _mm256_loadu_ps(xk + (p + i) * 8);
                }
                transpose8(t);
                for (size_t l = 0; l < n; l++) {
                    _mm256_storeu_ps(yk + l * hw + p, t[l]);
                }
            }
            for (; p < hw; p++) {
                for (size_t l = 0; l < n; l++) {
                    yk[l * hw + p] = xk[p * 8 + l];
                }
            }
        }
    }
}
