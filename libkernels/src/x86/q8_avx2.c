/* AVX2 kernels of the q8 family.
 *
 * GEMM: vpmaddubsw would saturate its int16 pair sums, so it is not used.
 * The biased weights (w + 128, 0..255) are zero-extended to int16 and the
 * activations sign-extended to int16 (once per block of K, into a buffer on
 * the stack); vpmaddwd then forms exact int32 sums of pairs, added with
 * vpaddd. As in the VNNI path every row starts at -128 * rowsum(a). A tile
 * is MR = 2 rows by one block of 16 columns; each accumulator holds 4
 * columns as two partial sums (k pairs 0-1 and 2-3) that vphaddd folds at
 * the end.
 *
 * Element-wise kernels follow the C references operation by operation so
 * their results are bit-identical. */
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "q8.h"
#include "transpose_avx2.h"

enum { MR = 2 };

/* sum of a row of int8: vpsadbw sums (a ^ 0x80) = a + 128 as unsigned. */
static int32_t row_sum(const int8_t *p, size_t k)
{
    const __m256i flip = _mm256_set1_epi8((char)0x80);
    __m256i acc = _mm256_setzero_si256();
    size_t t = 0;
    for (; t + 32 <= k; t += 32) {
        const __m256i v =
            _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)(p + t)),
                             flip);
        acc = _mm256_add_epi64(acc,
                               _mm256_sad_epu8(v, _mm256_setzero_si256()));
    }
    int64_t s = _mm256_extract_epi64(acc, 0) + _mm256_extract_epi64(acc, 1) +
                _mm256_extract_epi64(acc, 2) + _mm256_extract_epi64(acc, 3);
    s -= 128 * (int64_t)t;
    for (; t < k; t++) {
        s += p[t];
    }
    return (int32_t)s;
}

/* Folds the four accumulators of one row (16 columns) into 16 sums in
 * column order. */
static inline void fold(__m256i a0, __m256i a1, __m256i a2, __m256i a3,
                        int32_t *out)
{
    const __m256i lo =
        _mm256_permute4x64_epi64(_mm256_hadd_epi32(a0, a1), 0xd8);
    const __m256i hi =
        _mm256_permute4x64_epi64(_mm256_hadd_epi32(a2, a3), 0xd8);
    _mm256_storeu_si256((__m256i *)out, lo);
    _mm256_storeu_si256((__m256i *)(out + 8), hi);
}

#define LOADB(j)                                                            \
    const __m256i b##j = _mm256_cvtepu8_epi16(                              \
        _mm_loadu_si128((const __m128i *)(b + g * 64 + 16 * j)));
#define DP(r, j)                                                            \
    r##j = _mm256_add_epi32(r##j, _mm256_madd_epi16(b##j, a##r));

/* One tile of mr rows (1 or 2) by 16 columns over ng groups: the rows of A
 * come pre-widened (wx, wy: four int16 per group, 8 bytes), the sums go to
 * out (16 per row). */
static inline __attribute__((always_inline)) void
tile(const int mr, size_t ng, const int16_t *wx, const int16_t *wy,
     const uint8_t *b, int32_t *out)
{
    __m256i x0 = _mm256_setzero_si256(), x1 = x0, x2 = x0, x3 = x0;
    __m256i y0 = x0, y1 = x0, y2 = x0, y3 = x0;
    for (size_t g = 0; g < ng; g++) {
        int64_t q;
        LOADB(0)
        LOADB(1)
        LOADB(2)
        LOADB(3)
        memcpy(&q, wx + 4 * g, 8);
        const __m256i ax = _mm256_set1_epi64x(q);
        DP(x, 0)
        DP(x, 1)
        DP(x, 2)
        DP(x, 3)
        if (mr > 1) {
            memcpy(&q, wy + 4 * g, 8);
            const __m256i ay = _mm256_set1_epi64x(q);
            DP(y, 0)
            DP(y, 1)
            DP(y, 2)
            DP(y, 3)
        }
    }
    fold(x0, x1, x2, x3, out);
    if (mr > 1) {
        fold(y0, y1, y2, y3, out + Q8_NB);
    }
}

enum { KCG = 512 }; /* groups of A widened at a time: 4 KiB per row */

/* N = 1 (a depthwise convolution's group, one output channel): each row's
 * dot product with the one column, 16 taps at a time widened to int16 and
 * summed in pairs by vpmaddwd (exact, as in the tile). The tile would
 * compute 15 padding columns and pay its per-row widening and row sum for
 * K of 9 taps. The column's weights come out of the packed block (unbiased,
 * zero past K) 256 taps at a time; a load that would run past A's last
 * byte goes through a zeroed copy, and bytes read past a row's K meet zero
 * weights. */
enum { GEMV_KC = 256 };

static void gemv1(size_t m, size_t k, const int8_t *a, size_t lda,
                  const uint8_t *bp, int32_t *c, size_t ldc)
{
    const size_t end = (m - 1) * lda + k; /* bytes of A from a */
    int16_t w[GEMV_KC];
    for (size_t t0 = 0; t0 < k; t0 += GEMV_KC) {
        const size_t kc = k - t0 < GEMV_KC ? k - t0 : GEMV_KC;
        const size_t kv = (kc + 15) / 16 * 16; /* the taps the loads see */
        for (size_t t = 0; t < kv; t++) {
            const size_t kk = t0 + t; /* group kk / 4, column 0, lane kk % 4 */
            w[t] = (int16_t)(t < kc ? (int)bp[kk / 4 * Q8_NB * Q8_KG + kk % 4]
                                          - 128
                                    : 0);
        }
        for (size_t i = 0; i < m; i++) {
            const size_t row = i * lda + t0;
            __m256i acc = _mm256_setzero_si256();
            for (size_t t = 0; t < kc; t += 16) {
                __m128i v;
                if (row + t + 16 <= end) {
                    v = _mm_loadu_si128((const __m128i *)(a + row + t));
                } else {
                    int8_t tmp[16] = {0};
                    memcpy(tmp, a + row + t, end - (row + t));
                    v = _mm_loadu_si128((const __m128i *)tmp);
                }
                acc = _mm256_add_epi32(
                    acc, _mm256_madd_epi16(
                             _mm256_cvtepi8_epi16(v),
                             _mm256_loadu_si256((const __m256i *)(w + t))));
            }
            __m128i s = _mm_add_epi32(_mm256_castsi256_si128(acc),
                                      _mm256_extracti128_si256(acc, 1));
            s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
            s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
            const int32_t sum = _mm_cvtsi128_si32(s);
            c[i * ldc] = t0 == 0 ? sum : c[i * ldc] + sum;
        }
    }
}

void kern_q8_gemm_avx2(size_t m, size_t n, size_t k, const int8_t *a,
                       size_t lda, const uint8_t *bp, int32_t *c, size_t ldc)
{
    if (n == 1) {
        gemv1(m, k, a, lda, bp, c, ldc);
        return;
    }
    const size_t kg = q8_groups(k);
    const size_t nb = q8_blocks(n);
    const size_t bstride = kg * Q8_NB * Q8_KG;
    int16_t wide[MR][KCG * Q8_KG];
    int32_t out[MR * Q8_NB];
    for (size_t i = 0; i < m; i += MR) {
        const size_t mr = m - i < MR ? m - i : MR;
        int32_t start[MR] = {0, 0};
        for (size_t r = 0; r < mr; r++) {
            start[r] = -128 * row_sum(a + (i + r) * lda, k);
        }
        for (size_t g0 = 0; g0 < kg; g0 += KCG) {
            const size_t ng = kg - g0 < KCG ? kg - g0 : KCG;
            /* Widen this K block of the rows; past K the values are 0. */
            const size_t t0 = 4 * g0;
            const size_t tn = k - t0 < 4 * ng ? k - t0 : 4 * ng;
            for (size_t r = 0; r < mr; r++) {
                const int8_t *src = a + (i + r) * lda + t0;
                size_t t = 0;
                for (; t + 16 <= tn; t += 16) {
                    const __m256i v = _mm256_cvtepi8_epi16(
                        _mm_loadu_si128((const __m128i *)(src + t)));
                    _mm256_storeu_si256((__m256i *)(wide[r] + t), v);
                }
                for (; t < tn; t++) {
                    wide[r][t] = src[t];
                }
                for (; t < 4 * ng; t++) {
                    wide[r][t] = 0;
                }
            }
            for (size_t jb = 0; jb < nb; jb++) {
                const size_t cols = n - jb * Q8_NB < Q8_NB ? n - jb * Q8_NB
                                                           : Q8_NB;
                const uint8_t *b = bp + jb * bstride + g0 * Q8_NB * Q8_KG;
                if (mr == MR) {
                    tile(2, ng, wide[0], wide[1], b, out);
                } else {
                    tile(1, ng, wide[0], wide[0], b, out);
                }
                for (size_t r = 0; r < mr; r++) {
                    int32_t *cr = c + (i + r) * ldc + jb * Q8_NB;
                    const int32_t *o = out + r * Q8_NB;
                    /* Wrapping adds: the partial sums of the biased
                     * weights may leave int32 before the correction. */
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

uint32_t kern_q8_absmax_avx2(const float *x, size_t n)
{
    const __m256i abs = _mm256_set1_epi32(0x7fffffff);
    __m256i best = _mm256_setzero_si256();
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256i v = _mm256_loadu_si256((const __m256i *)(x + i));
        best = _mm256_max_epu32(best, _mm256_and_si256(v, abs));
    }
    uint32_t lanes[8];
    _mm256_storeu_si256((__m256i *)lanes, best);
    uint32_t r = 0;
    for (int l = 0; l < 8; l++) {
        r = lanes[l] > r ? lanes[l] : r;
    }
    for (; i < n; i++) {
        uint32_t bits;
        memcpy(&bits, &x[i], 4);
        bits &= 0x7fffffffu;
        r = bits > r ? bits : r;
    }
    return r;
}

static int8_t quant1(float v)
{
    if (v != v) {
        return 0;
    }
    if (v > 127.0f) {
        v = 127.0f;
    } else if (v < -127.0f) {
        v = -127.0f;
    }
    return (int8_t)nearbyintf(v);
}

/* 8 values already divided by the scale to 8 int8 in the low 64 bits. */
static inline __m128i quant8(__m256 v)
{
    const __m256 ord = _mm256_cmp_ps(v, v, _CMP_ORD_Q);
    v = _mm256_min_ps(_mm256_max_ps(v, _mm256_set1_ps(-127.0f)),
                      _mm256_set1_ps(127.0f));
    v = _mm256_round_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    v = _mm256_and_ps(v, ord);
    const __m256i i = _mm256_cvtps_epi32(v);
    const __m128i w = _mm_packs_epi32(_mm256_castsi256_si128(i),
                                      _mm256_extracti128_si256(i, 1));
    return _mm_packs_epi16(w, w);
}

void kern_q8_quant_avx2(const float *x, size_t n, float scale, int8_t *dst)
{
    const __m256 s = _mm256_set1_ps(scale);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 v = _mm256_div_ps(_mm256_loadu_ps(x + i), s);
        _mm_storel_epi64((__m128i *)(dst + i), quant8(v));
    }
    for (; i < n; i++) {
        dst[i] = quant1(x[i] / scale);
    }
}

void kern_q8_dequant_avx2(const int8_t *q, size_t n, float scale,
                          float *dst)
{
    const __m256 s = _mm256_set1_ps(scale);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m128i b = _mm_loadl_epi64((const __m128i *)(q + i));
        const __m256 v = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(b));
        _mm256_storeu_ps(dst + i, _mm256_mul_ps(v, s));
    }
    for (; i < n; i++) {
        dst[i] = (float)q[i] * scale;
    }
}

static float requant1(int32_t acc, float a_scale, float w_scale,
                      const float *bias, size_t j, int relu)
{
    const float mul = a_scale * w_scale;
    float y = (float)acc * mul;
    if (bias) {
        y = y + bias[j];
    }
    if (relu && !(y > 0.0f)) {
        y = y != y ? y : 0.0f;
    }
    return y;
}

static inline __m256 requant8(const int32_t *acc, __m256 as, const float *ws,
                              const float *bias, size_t j, int relu)
{
    const __m256 mul = _mm256_mul_ps(as, _mm256_loadu_ps(ws + j));
    const __m256i a = _mm256_loadu_si256((const __m256i *)(acc + j));
    __m256 y = _mm256_mul_ps(_mm256_cvtepi32_ps(a), mul);
    if (bias) {
        y = _mm256_add_ps(y, _mm256_loadu_ps(bias + j));
    }
    if (relu) {
        const __m256 keep =
            _mm256_or_ps(_mm256_cmp_ps(y, _mm256_setzero_ps(), _CMP_GT_OQ),
                         _mm256_cmp_ps(y, y, _CMP_UNORD_Q));
        y = _mm256_and_ps(y, keep);
    }
    return y;
}

void kern_q8_requant_f32_avx2(size_t n, const int32_t *acc, float a_scale,
                              const float *w_scales, const float *bias,
                              int relu, float *y)
{
    const __m256 as = _mm256_set1_ps(a_scale);
    size_t j = 0;
    for (; j + 8 <= n; j += 8) {
        _mm256_storeu_ps(y + j, requant8(acc, as, w_scales, bias, j, relu));
    }
    for (; j < n; j++) {
        y[j] = requant1(acc[j], a_scale, w_scales[j], bias, j, relu);
    }
}

/* 8 x 8 tiles: eight rows requantised as in kern_q8_requant_f32_avx2, the
 * tile transposed in registers and stored as eight runs of 8 floats along
 * the output rows; the last tile of a row or column overlaps the one
 * before it (and stores the same bits again). Fewer than 8 columns run a
 * column at a time, fewer than 8 rows the C loop. Every element takes the
 * reference's operations: the scale product rounded to float, a multiply,
 * an add. */
void kern_q8_requant_f32_t_avx2(size_t m, size_t n, const int32_t *acc,
                                size_t ld_acc, float a_scale,
                                const float *w_scales, const float *bias,
                                int relu, float *y, size_t ldy)
{
    const __m256 as = _mm256_set1_ps(a_scale);
    if (n < 8) {
        /* Narrow results (a depthwise convolution's one channel per group):
         * each output row is 8 rows of one column at a time, the column's
         * scale and bias broadcast. */
        const __m256 zero = _mm256_setzero_ps();
        for (size_t j = 0; j < n; j++) {
            const __m256 mul = _mm256_set1_ps(a_scale * w_scales[j]);
            const __m256 bj = _mm256_set1_ps(bias ? bias[j] : 0.0f);
            size_t i = 0;
            for (; i + 8 <= m; i += 8) {
                const int32_t *a = acc + i * ld_acc + j;
                const __m256i v =
                    ld_acc == 1
                        ? _mm256_loadu_si256((const __m256i *)a)
                        : _mm256_setr_epi32(a[0], a[ld_acc], a[2 * ld_acc],
                                            a[3 * ld_acc], a[4 * ld_acc],
                                            a[5 * ld_acc], a[6 * ld_acc],
                                            a[7 * ld_acc]);
                __m256 r = _mm256_mul_ps(_mm256_cvtepi32_ps(v), mul);
                if (bias) {
                    r = _mm256_add_ps(r, bj);
                }
                if (relu) {
                    const __m256 keep =
                        _mm256_or_ps(_mm256_cmp_ps(r, zero, _CMP_GT_OQ),
                                     _mm256_cmp_ps(r, r, _CMP_UNORD_Q));
                    r = _mm256_and_ps(r, keep);
                }
                _mm256_storeu_ps(y + j * ldy + i, r);
            }
            for (; i < m; i++) {
                y[j * ldy + i] = requant1(acc[i * ld_acc + j], a_scale,
                                          w_scales[j], bias, j, relu);
            }
        }
        return;
    }
    if (m < 8) {
        for (size_t i = 0; i < m; i++) {
            for (size_t j = 0; j < n; j++) {
                y[j * ldy + i] = requant1(acc[i * ld_acc + j], a_scale,
                                          w_scales[j], bias, j, relu);
            }
        }
        return;
    }
    for (size_t i0 = 0; i0 < m; i0 += 8) {
        const size_t i = i0 + 8 <= m ? i0 : m - 8;
        for (size_t j0 = 0; j0 < n; j0 += 8) {
            const size_t j = j0 + 8 <= n ? j0 : n - 8;
            __m256 r[8];
            for (size_t k = 0; k < 8; k++) {
                r[k] = requant8(acc + (i + k) * ld_acc, as, w_scales, bias, j,
                                relu);
            }
            transpose8(r);
            for (size_t k = 0; k < 8; k++) {
                _mm256_storeu_ps(y + (j + k) * ldy + i, r[k]);
            }
        }
    }
}

void kern_q8_requant_s8_avx2(size_t n, const int32_t *acc, float a_scale,
                             const float *w_scales, const float *bias,
                             int relu, float out_scale, int8_t *q)
{
    const __m256 as = _mm256_set1_ps(a_scale);
    const __m256 os = _mm256_set1_ps(out_scale);
    size_t j = 0;
    for (; j + 8 <= n; j += 8) {
        const __m256 v = requant8(acc, as, w_scales, bias, j, relu);
        _mm_storel_epi64((__m128i *)(q + j), quant8(_mm256_div_ps(v, os)));
    }
    for (; j < n; j++) {
        const float v = requant1(acc[j], a_scale, w_scales[j], bias, j, relu);
        q[j] = quant1(v / out_scale);
    }
}
