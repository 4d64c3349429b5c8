/* int8 GEMM with AVX-512 VNNI. vpdpbusd multiplies unsigned by signed
 * bytes and adds groups of four products to int32 lanes without
 * saturation (vpdpbusds would saturate). The packed weights are the
 * unsigned operand (w + 128), the activations the signed one, so
 *   sum_k (w + 128) * a = sum_k w * a + 128 * rowsum(a)
 * and each accumulator starts at -128 * rowsum(a): exact in int32 (modular
 * arithmetic, the final value is in range for K <= Q8_MAX_K).
 *
 * Blocking: a micro-tile of MR = 6 rows by up to 64 columns (4 zmm per row,
 * 24 accumulators) runs over a block of K; the 64-column sliver of packed
 * weights for that block is reused by every tile of an MC-row block of A.
 * When C is small enough to stay in L2 the K blocks hold at most KCG_L1
 * groups of four (a 32 KiB sliver that stays in L1); otherwise C would
 * travel to memory once per K block, so the blocks grow to KCG_BIG groups
 * and the sliver streams from L2 instead. Blocks are balanced so no pass is
 * a short remainder. */
#include <immintrin.h>
#include <stdbool.h>
#include <string.h>

#include "q8.h"

enum { MR = 6, NJ = 4, KCG_L1 = 128, KCG_BIG = 512, MC = 96 };

static inline int32_t load_group(const int8_t *p)
{
    int32_t v;
    memcpy(&v, p, 4);
    return v;
}

/* -128 * sum of each row, over the whole K. */
static void row_corr(const int8_t *a, size_t lda, size_t rows, size_t k,
                     int32_t *corr)
{
    const __m512i ones = _mm512_set1_epi8(1);
    for (size_t r = 0; r < rows; r++) {
        const int8_t *p = a + r * lda;
        __m512i acc = _mm512_setzero_si512();
        size_t t = 0;
        for (; t + 64 <= k; t += 64) {
            acc = _mm512_dpbusd_epi32(acc, ones, _mm512_loadu_si512(p + t));
        }
        if (t < k) {
            const __mmask64 m = (__mmask64)-1 >> (64 - (k - t));
            acc = _mm512_dpbusd_epi32(acc, ones,
                                      _mm512_maskz_loadu_epi8(m, p + t));
        }
        corr[r] = -128 * _mm512_reduce_add_epi32(acc);
    }
}

/* Named accumulators, so they live in registers: the guards on r < mr and
 * j < nj fold away in each instantiation. Masked loads and stores are kept
 * out of the tile (GCC 12 then copies every accumulator on each step);
 * partial column blocks go through a small buffer instead. */
#define FOR_J(X, r) X(r, 0) X(r, 1) X(r, 2) X(r, 3)
#define FOR_RJ(X)                                                           \
    FOR_J(X, 0) FOR_J(X, 1) FOR_J(X, 2) FOR_J(X, 3) FOR_J(X, 4) FOR_J(X, 5)
#define FOR_R(X) X(0) X(1) X(2) X(3) X(4) X(5)
#define FOR_JJ(X) X(0) X(1) X(2) X(3)

#define DECL(r, j)                                                          \
    __m512i acc##r##j = _mm512_setzero_si512();                             \
    if (r < mr && j < nj) {                                                 \
        acc##r##j = first ? _mm512_set1_epi32(init[r])                      \
                          : _mm512_loadu_si512(c + r * ldc + 16 * j);       \
    }
#define LOADB(j)                                                            \
    const __m512i b##j = j < nj                                             \
                             ? _mm512_loadu_si512(b + j * bstride + g * 64) \
                             : _mm512_setzero_si512();
#define DP(r, j)                                                            \
    if (j < nj) {                                                           \
        acc##r##j = _mm512_dpbusd_epi32(acc##r##j, b##j, av);               \
    }
#define ROW(r)                                                              \
    if (r < mr) {                                                           \
        const __m512i av =                                                  \
            _mm512_set1_epi32(load_group(a + r * lda + 4 * g));             \
        FOR_J(DP, r)                                                        \
    }
#define STORE(r, j)                                                         \
    if (r < mr && j < nj) {                                                 \
        _mm512_storeu_si512(c + r * ldc + 16 * j, acc##r##j);               \
    }

/* One micro-tile: mr rows (<= MR) by nj column blocks of 16 (<= NJ), over
 * ng groups of four k. first: start row r from init[r] (the correction),
 * else continue from c, which holds nj * 16 valid columns. */
static inline __attribute__((always_inline)) void
tile(const int mr, const int nj, const int first, size_t ng, const int8_t *a,
     size_t lda, const uint8_t *b, size_t bstride, int32_t *c, size_t ldc,
     const int32_t *init)
{
    FOR_RJ(DECL)
    for (size_t g = 0; g < ng; g++) {
        FOR_JJ(LOADB)
        FOR_R(ROW)
    }
    FOR_RJ(STORE)
}

typedef void (*tile_fn)(size_t ng, const int8_t *a, size_t lda,
                        const uint8_t *b, size_t bstride, int32_t *c,
                        size_t ldc, const int32_t *init);

#define TILE(R, J)                                                          \
    static void tile_##R##_##J(size_t ng, const int8_t *a, size_t lda,      \
                               const uint8_t *b, size_t bs, int32_t *c,     \
                               size_t ldc, const int32_t *init)             \
    {                                                                       \
        if (init) {                                                         \
            tile(R, J, 1, ng, a, lda, b, bs, c, ldc, init);                 \
        } else {                                                            \
            tile(R, J, 0, ng, a, lda, b, bs, c, ldc, init);                 \
        }                                                                   \
    }
#define TILE_ROW(R) TILE(R, 1) TILE(R, 2) TILE(R, 3) TILE(R, 4)

/* A single row (batch 1) has only nj dependent chains of vpdpbusd, too few
 * to hide its latency: even and odd groups go to two sets of accumulators,
 * added at the end (integer sums, so the result is the same). */
#define DECL1(j)                                                            \
    __m512i e##j = _mm512_setzero_si512(), o##j = e##j;                     \
    if (j < nj) {                                                           \
        e##j = first ? _mm512_set1_epi32(init[0])                           \
                     : _mm512_loadu_si512(c + 16 * j);                      \
    }
#define STEP1(acc, j, gg)                                                   \
    if (j < nj) {                                                           \
        acc##j = _mm512_dpbusd_epi32(                                       \
            acc##j, _mm512_loadu_si512(b + j * bstride + (gg) * 64), av);   \
    }
#define EVEN1(j) STEP1(e, j, g)
#define ODD1(j) STEP1(o, j, g + 1)
#define STORE1(j)                                                           \
    if (j < nj) {                                                           \
        _mm512_storeu_si512(c + 16 * j, _mm512_add_epi32(e##j, o##j));      \
    }

static inline __attribute__((always_inline)) void
tile1(const int nj, const int first, size_t ng, const int8_t *a,
      const uint8_t *b, size_t bstride, int32_t *c, const int32_t *init)
{
    FOR_JJ(DECL1)
    size_t g = 0;
    for (; g + 2 <= ng; g += 2) {
        {
            const __m512i av = _mm512_set1_epi32(load_group(a + 4 * g));
            FOR_JJ(EVEN1)
        }
        {
            const __m512i av = _mm512_set1_epi32(load_group(a + 4 * g + 4));
            FOR_JJ(ODD1)
        }
    }
    if (g < ng) {
        const __m512i av = _mm512_set1_epi32(load_group(a + 4 * g));
        FOR_JJ(EVEN1)
    }
    FOR_JJ(STORE1)
}

#define TILE1(J)                                                            \
    static void tile_1_##J(size_t ng, const int8_t *a, size_t lda,          \
                           const uint8_t *b, size_t bs, int32_t *c,         \
                           size_t ldc, const int32_t *init)                 \
    {                                                                       \
        (void)lda;                                                          \
        (void)ldc;                                                          \
        if (init) {                                                         \
            tile1(J, 1, ng, a, b, bs, c, init);                             \
        } else {                                                            \
            tile1(J, 0, ng, a, b, bs, c, init);                             \
        }                                                                   \
    }
TILE1(1)
TILE1(2)
TILE1(3)
TILE1(4)
TILE_ROW(2)
TILE_ROW(3)
TILE_ROW(4)
TILE_ROW(5)
TILE_ROW(6)

static const tile_fn tiles[MR][NJ] = {
    {tile_1_1, tile_1_2, tile_1_3, tile_1_4},
    {tile_2_1, tile_2_2, tile_2_3, tile_2_4},
    {tile_3_1, tile_3_2, tile_3_3, tile_3_4},
    {tile_4_1, tile_4_2, tile_4_3, tile_4_4},
    {tile_5_1, tile_5_2, tile_5_3, tile_5_4},
    {tile_6_1, tile_6_2, tile_6_3, tile_6_4},
};

/* Runs one tile; when its columns end inside a block (ncols < nj * 16),
 * through a buffer of full blocks so the tile never touches c past ncols. */
static void run_tile(size_t mr, size_t nj, size_t ncols, size_t ng,
                     const int8_t *a, size_t lda, const uint8_t *b,
                     size_t bstride, int32_t *c, size_t ldc,
                     const int32_t *init)
{
    const tile_fn fn = tiles[mr - 1][nj - 1];
    if (ncols == nj * Q8_NB) {
        fn(ng, a, lda, b, bstride, c, ldc, init);
        return;
    }
    int32_t buf[MR * NJ * Q8_NB];
    const size_t ldb = NJ * Q8_NB;
    if (!init) {
        for (size_t r = 0; r < mr; r++) {
            memcpy(buf + r * ldb, c + r * ldc, ncols * sizeof *c);
        }
    }
    fn(ng, a, lda, b, bstride, buf, ldb, init);
    for (size_t r = 0; r < mr; r++) {
        memcpy(c + r * ldc, buf + r * ldb, ncols * sizeof *c);
    }
}

void kern_q8_gemm_vnni(size_t m, size_t n, size_t k, const int8_t *a,
                       size_t lda, const uint8_t *bp, int32_t *c, size_t ldc)
{
    const size_t kg = q8_groups(k);
    const size_t kfull = k / Q8_KG; /* groups with four real k */
    const size_t tail = k % Q8_KG;
    const size_t nb = q8_blocks(n);
    const size_t bstride = kg * Q8_NB * Q8_KG; /* bytes per column block */
    int32_t corr[MC];
    /* The last partial group of A, zero-padded, four bytes per row. */
    int8_t atail[MR * Q8_KG];
    /* K blocks; with K < 4 one pass over zero groups stores the
     * corrections. */
    const size_t kcg_max =
        m * n * sizeof *c <= (size_t)512 * 1024 ? KCG_L1 : KCG_BIG;
    const size_t passes = (kfull + kcg_max - 1) / kcg_max;
    const size_t kcg = passes ? (kfull + passes - 1) / passes : 1;
    for (size_t g0 = 0; g0 < kfull || g0 == 0; g0 += kcg) {
        const size_t ng = kfull - g0 < kcg ? kfull - g0 : kcg;
        const bool first = g0 == 0;
        for (size_t m0 = 0; m0 < m; m0 += MC) {
            const size_t mc = m - m0 < MC ? m - m0 : MC;
            const int8_t *ab = a + m0 * lda + 4 * g0;
            if (first) {
                row_corr(a + m0 * lda, lda, mc, k, corr);
            }
            for (size_t jb = 0; jb < nb; jb += NJ) {
                const size_t nj = nb - jb < NJ ? nb - jb : NJ;
                const size_t ncols = (jb + nj == nb) ? n - jb * Q8_NB
                                                     : nj * Q8_NB;
                const uint8_t *bb = bp + jb * bstride + g0 * 64;
                for (size_t i = 0; i < mc; i += MR) {
                    const size_t mr = mc - i < MR ? mc - i : MR;
                    run_tile(mr, nj, ncols, ng, ab + i * lda, lda, bb,
                             bstride, c + (m0 + i) * ldc + jb * Q8_NB, ldc,
                             first ? corr + i : NULL);
                }
            }
        }
    }
    if (!tail) {
        return;
    }
    /* The group holding K's last 1-3 values, added onto c. */
    for (size_t i = 0; i < m; i += MR) {
        const size_t mr = m - i < MR ? m - i : MR;
        memset(atail, 0, sizeof atail);
        for (size_t r = 0; r < mr; r++) {
            memcpy(atail + r * Q8_KG, a + (i + r) * lda + 4 * kfull, tail);
        }
        for (size_t jb = 0; jb < nb; jb += NJ) {
            const size_t nj = nb - jb < NJ ? nb - jb : NJ;
            const size_t ncols = (jb + nj == nb) ? n - jb * Q8_NB
                                                 : nj * Q8_NB;
            run_tile(mr, nj, ncols, 1, atail, Q8_KG,
                     bp + jb * bstride + kfull * 64, bstride,
                     c + i * ldc + jb * Q8_NB, ldc, NULL);
        }
    }
}
