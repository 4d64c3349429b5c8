/* AVX-512 kernels of the q8 family (without VNNI).
 *
 * GEMM: as the AVX2 path, with zmm: the biased weights zero-extended and
 * the activations sign-extended to int16 (exact vpmaddwd pair sums, never
 * vpmaddubsw, which saturates), four rows by 16 columns per tile; each row
 * keeps two accumulators of 8 columns x 2 partial sums, folded at the end
 * by an even/odd permute.
 *
 * Element-wise kernels: the same operations in the same order as the C
 * references (true division, round half to even, clamping before rounding,
 * separate multiply and add), so results are bit-identical. */
#include <immintrin.h>
#include <string.h>

#include "q8.h"

static inline __mmask16 tail_mask(size_t left)
{
    return left >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << left) - 1);
}

enum { MR = 4, KCG = 512 };

static int32_t row_sum(const int8_t *p, size_t k)
{
    __m512i acc = _mm512_setzero_si512();
    for (size_t t = 0; t < k; t += 32) {
        const __mmask32 m =
            k - t >= 32 ? (__mmask32)-1 : (__mmask32)((1u << (k - t)) - 1);
        const __m512i v =
            _mm512_cvtepi8_epi16(_mm256_maskz_loadu_epi8(m, p + t));
        acc = _mm512_add_epi32(acc,
                               _mm512_madd_epi16(v, _mm512_set1_epi16(1)));
    }
    return _mm512_reduce_add_epi32(acc);
}

#define LOADB(j)                                                            \
    const __m512i b##j = _mm512_cvtepu8_epi16(                              \
        _mm256_loadu_si256((const __m256i *)(b + g * 64 + 32 * j)));
#define DP(r)                                                               \
    if (r < mr) {                                                           \
        int64_t q;                                                          \
        memcpy(&q, w##r + 4 * g, 8);                                        \
        const __m512i av = _mm512_set1_epi64(q);                            \
        lo##r = _mm512_add_epi32(lo##r, _mm512_madd_epi16(b0, av));         \
        hi##r = _mm512_add_epi32(hi##r, _mm512_madd_epi16(b1, av));         \
    }
#define FOLD(r)                                                             \
    if (r < mr) {                                                           \
        _mm512_storeu_si512(                                                \
            out + r * Q8_NB,                                                \
            _mm512_add_epi32(_mm512_permutex2var_epi32(lo##r, even, hi##r), \
                             _mm512_permutex2var_epi32(lo##r, odd, hi##r)));\
    }

/* One tile of mr rows (<= 4) by 16 columns over ng groups, A pre-widened
 * (four int16 per group), sums into out (16 per row). */
static inline __attribute__((always_inline)) void
tile(const int mr, size_t ng, const int16_t *w0, const int16_t *w1,
     const int16_t *w2, const int16_t *w3, const uint8_t *b, int32_t *out)
{
    __m512i lo0 = _mm512_setzero_si512(), hi0 = lo0, lo1 = lo0, hi1 = lo0;
    __m512i lo2 = lo0, hi2 = lo0, lo3 = lo0, hi3 = lo0;
    for (size_t g = 0; g < ng; g++) {
        LOADB(0)
        LOADB(1)
        DP(0)
        DP(1)
        DP(2)
        DP(3)
    }
    const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16,
                                           18, 20, 22, 24, 26, 28, 30);
    const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
    FOLD(0)
    FOLD(1)
    FOLD(2)
    FOLD(3)
}

#define TILE(R)                                                             \
    static void tile_##R(size_t ng, int16_t (*w)[KCG * Q8_KG],              \
                         const uint8_t *b, int32_t *out)                    \
    {                                                                       \
        tile(R, ng, w[0], w[1], w[2], w[3], b, out);                        \
    }
TILE(1)
TILE(2)
TILE(3)
TILE(4)

void kern_q8_gemm_avx512(size_t m, size_t n, size_t k, const int8_t *a,
                         size_t lda, const uint8_t *bp, int32_t *c,
                         size_t ldc)
{
    const size_t kg = q8_groups(k);
    const size_t nb = q8_blocks(n);
    const size_t bstride = kg * Q8_NB * Q8_KG;
    int16_t wide[MR][KCG * Q8_KG];
    int32_t out[MR * Q8_NB];
    void (*const tiles[MR])(size_t, int16_t(*)[KCG * Q8_KG], const uint8_t *,
                            int32_t *) = {tile_1, tile_2, tile_3, tile_4};
    for (size_t i = 0; i < m; i += MR) {
        const size_t mr = m - i < MR ? m - i : MR;
        int32_t start[MR] = {0, 0, 0, 0};
        for (size_t r = 0; r < mr; r++) {
            start[r] = -128 * row_sum(a + (i + r) * lda, k);
        }
        for (size_t g0 = 0; g0 < kg; g0 += KCG) {
            const size_t ng = kg - g0 < KCG ? kg - g0 : KCG;
            /* Widen this K block of the rows; past K the values are 0. */
            const size_t t0 = 4 * g0;
            const size_t tn = k - t0 < 4 * ng ? k - t0 : 4 * ng;
            for (size_t r = 0; r < MR; r++) {
                const int8_t *src = a + (i + (r < mr ? r : 0)) * lda + t0;
                for (size_t t = 0; t < 4 * ng; t += 32) {
                    const size_t left = t < tn ? tn - t : 0;
                    if (!left) {
                        _mm512_storeu_si512(wide[r] + t,
                                            _mm512_setzero_si512());
                        continue;
                    }
                    const __mmask32 msk =
                        left >= 32 ? (__mmask32)-1
                                   : (__mmask32)((1u << left) - 1);
                    _mm512_storeu_si512(
                        wide[r] + t,
                        _mm512_cvtepi8_epi16(
                            _mm256_maskz_loadu_epi8(msk, src + t)));
                }
            }
            for (size_t jb = 0; jb < nb; jb++) {
                const size_t cols = n - jb * Q8_NB < Q8_NB ? n - jb * Q8_NB
                                                           : Q8_NB;
                tiles[mr - 1](ng, wide, bp + jb * bstride + g0 * 64, out);
                for (size_t r = 0; r < mr; r++) {
                    int32_t *cr = c + (i + r) * ldc + jb * Q8_NB;
                    const int32_t *o = out + r * Q8_NB;
                    /* Wrapping adds, as in the AVX2 path. */
                    for (size_t j = 0; j < cols; j++) {
                        const uint32_t base =
                            g0 == 0 ? (uint32_t)start[r] : (uint32_t)cr[j];
                        cr[j] = (int32_t)(base + (uint32_t)o[j]);
                    }
                }
            }
        }
    }
}

uint32_t kern_q8_absmax_avx512(const float *x, size_t n)
{
    const __m512i abs = _mm512_set1_epi32(0x7fffffff);
    __m512i best = _mm512_setzero_si512();
    for (size_t i = 0; i < n; i += 16) {
        const __m512i v =
            _mm512_maskz_loadu_epi32(tail_mask(n - i), (const int *)(x + i));
        best = _mm512_max_epu32(best, _mm512_and_si512(v, abs));
    }
    return (uint32_t)_mm512_reduce_max_epu32(best);
}

/* Quantise 16 values already divided by the scale. */
static inline __m512i quant16(__m512 v)
{
    const __mmask16 ord = _mm512_cmp_ps_mask(v, v, _CMP_ORD_Q);
    v = _mm512_min_ps(_mm512_max_ps(v, _mm512_set1_ps(-127.0f)),
                      _mm512_set1_ps(127.0f));
    v = _mm512_roundscale_ps(v, _MM_FROUND_TO_NEAREST_INT |
                                    _MM_FROUND_NO_EXC);
    return _mm512_maskz_cvtps_epi32(ord, v);
}

void kern_q8_quant_avx512(const float *x, size_t n, float scale, int8_t *dst)
{
    const __m512 s = _mm512_set1_ps(scale);
    for (size_t i = 0; i < n; i += 16) {
        const __mmask16 m = tail_mask(n - i);
        const __m512 v = _mm512_div_ps(_mm512_maskz_loadu_ps(m, x + i), s);
        _mm512_mask_cvtsepi32_storeu_epi8(dst + i, m, quant16(v));
    }
}

void kern_q8_dequant_avx512(const int8_t *q, size_t n, float scale,
                            float *dst)
{
    const __m512 s = _mm512_set1_ps(scale);
    for (size_t i = 0; i < n; i += 16) {
        const __mmask16 m = tail_mask(n - i);
        const __m128i b = _mm_maskz_loadu_epi8(m, q + i);
        const __m512 v = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(b));
        _mm512_mask_storeu_ps(dst + i, m, _mm512_mul_ps(v, s));
    }
}

/* y = (float)acc * (a_scale * w_scale) + bias, relu keeping NaN. */
static inline __m512 requant16(__mmask16 m, const int32_t *acc, __m512 as,
                               const float *ws, const float *bias, int relu)
{
    const __m512 mul = _mm512_mul_ps(as, _mm512_maskz_loadu_ps(m, ws));
    const __m512i a = _mm512_maskz_loadu_epi32(m, acc);
    __m512 y = _mm512_mul_ps(_mm512_cvtepi32_ps(a), mul);
    if (bias) {
        y = _mm512_add_ps(y, _mm512_maskz_loadu_ps(m, bias));
    }
    if (relu) {
        const __mmask16 keep =
            _mm512_cmp_ps_mask(y, _mm512_setzero_ps(), _CMP_GT_OQ) |
            _mm512_cmp_ps_mask(y, y, _CMP_UNORD_Q);
        y = _mm512_maskz_mov_ps(keep, y);
    }
    return y;
}

void kern_q8_requant_f32_avx512(size_t n, const int32_t *acc, float a_scale,
                                const float *w_scales, const float *bias,
                                int relu, float *y)
{
    const __m512 as = _mm512_set1_ps(a_scale);
    for (size_t j = 0; j < n; j += 16) {
        const __mmask16 m = tail_mask(n - j);
        const __m512 v = requant16(m, acc + j, as, w_scales + j,
                                   bias ? bias + j : NULL, relu);
        _mm512_mask_storeu_ps(y + j, m, v);
    }
}

void kern_q8_requant_s8_avx512(size_t n, const int32_t *acc, float a_scale,
                               const float *w_scales, const float *bias,
                               int relu, float out_scale, int8_t *q)
{
    const __m512 as = _mm512_set1_ps(a_scale);
    const __m512 os = _mm512_set1_ps(out_scale);
    for (size_t j = 0; j < n; j += 16) {
        const __mmask16 m = tail_mask(n - j);
        const __m512 v = requant16(m, acc + j, as, w_scales + j,
                                   bias ? bias + j : NULL, relu);
        _mm512_mask_cvtsepi32_storeu_epi8(q + j, m,
                                          quant16(_mm512_div_ps(v, os)));
    }
}
