/* Private: the int8 GEMM c = a . w^T on the packed weights (q8.h), over
 * NEON, instantiated by q8_neon.c (ARMv8.0: smull and sadalp) and
 * q8_dotprod.c (ARMv8.2 sdot). Integer sums are exact in any order, so
 * both give the C reference's bits.
 *
 * The packed bytes are w + 128; xor 0x80 turns them back into the signed
 * w, so no correction term is needed (x86 keeps them unsigned for
 * vpdpbusd).
 *
 * The includer defines:
 *   Q8_MR            rows of A per tile
 *   Q8_ACC           int32x4 accumulators per row for 16 columns
 *   q8_step(acc, b, av)  adds, for one group of 4 k, the products of the
 *                    4 weight vectors b[4] (signed) with av (the row's 4
 *                    bytes repeated) into acc[Q8_ACC]
 *   q8_finish(acc, out)  writes the 16 column sums of acc into out[16]
 *   Q8_FN(name)      appends the path suffix
 */
#include <arm_neon.h>
#include <string.h>

#include "q8.h"

#define Q8_INLINE static inline __attribute__((always_inline))

/* The 4 bytes of group g of a row, repeated into 16; past k zeros. */
Q8_INLINE int8x16_t q8_group(const int8_t *row, size_t g, size_t k)
{
    uint32_t w = 0;
    const size_t t0 = g * Q8_KG;
    if (t0 + Q8_KG <= k) {
        memcpy(&w, row + t0, Q8_KG); /* one 32-bit load */
    } else {
        memcpy(&w, row + t0, k - t0); /* the last, partial group */
    }
    return vreinterpretq_s8_u32(vdupq_n_u32(w));
}

/* mr rows (a constant at every call) by one block of 16 columns. */
Q8_INLINE void q8_tile(int mr, size_t kg, size_t k, const int8_t *a,
                       size_t lda, const uint8_t *blk, int32_t *c,
                       size_t ldc, size_t nc)
{
    int32x4_t acc[Q8_MR][Q8_ACC];
#pragma GCC unroll 8
    for (int r = 0; r < mr; r++) {
#pragma GCC unroll 8
        for (int q = 0; q < Q8_ACC; q++) {
            acc[r][q] = vdupq_n_s32(0);
        }
    }
    const uint8x16_t bias = vdupq_n_u8(0x80);
    for (size_t g = 0; g < kg; g++) {
        const uint8_t *bg = blk + g * Q8_NB * Q8_KG;
        int8x16_t b[4];
#pragma GCC unroll 4
        for (int q = 0; q < 4; q++) {
            b[q] = vreinterpretq_s8_u8(veorq_u8(vld1q_u8(bg + q * 16), bias));
        }
#pragma GCC unroll 8
        for (int r = 0; r < mr; r++) {
            const int8x16_t av = q8_group(a + (size_t)r * lda, g, k);
            q8_step(acc[r], b, av);
        }
    }
#pragma GCC unroll 8
    for (int r = 0; r < mr; r++) {
        int32_t *cr = c + (size_t)r * ldc;
        if (nc == Q8_NB) {
            q8_finish(acc[r], cr);
        } else {
            int32_t out[Q8_NB];
            q8_finish(acc[r], out);
            memcpy(cr, out, nc * sizeof *out);
        }
    }
}

#define Q8_TILE_DEF(mr)                                                     \
    static void q8_tile_##mr(size_t kg, size_t k, const int8_t *a,          \
                             size_t lda, const uint8_t *blk, int32_t *c,    \
                             size_t ldc, size_t nc)                         \
    {                                                                       \
        q8_tile(mr, kg, k, a, lda, blk, c, ldc, nc);                        \
    }

typedef void (*q8_tile_fn)(size_t kg, size_t k, const int8_t *a,
                           size_t lda, const uint8_t *blk, int32_t *c,
                           size_t ldc, size_t nc);

Q8_TILE_DEF(1)
Q8_TILE_DEF(2)
#if Q8_MR == 4
Q8_TILE_DEF(3)
Q8_TILE_DEF(4)
static const q8_tile_fn q8_tiles[Q8_MR] = {q8_tile_1, q8_tile_2, q8_tile_3,
                                           q8_tile_4};
#elif Q8_MR == 2
static const q8_tile_fn q8_tiles[Q8_MR] = {q8_tile_1, q8_tile_2};
#else
#error "Q8_MR must be 2 or 4"
#endif

void Q8_FN(kern_q8_gemm)(size_t m, size_t n, size_t k, const int8_t *a,
                         size_t lda, const uint8_t *bp, int32_t *c,
                         size_t ldc)
{
    const size_t kg = q8_groups(k);
    const size_t nb = q8_blocks(n);
    /* Rows outside, blocks inside: Q8_MR rows of A (a few KiB) stay in L1
     * while the packed weights stream through. */
    for (size_t i = 0; i < m; i += Q8_MR) {
        const size_t mr = m - i < Q8_MR ? m - i : Q8_MR;
        for (size_t b = 0; b < nb; b++) {
            const size_t j0 = b * Q8_NB;
            const size_t nc = n - j0 < Q8_NB ? n - j0 : Q8_NB;
            q8_tiles[mr - 1](kg, k, a + i * lda, lda,
                             bp + b * kg * Q8_NB * Q8_KG, c + i * ldc + j0,
                             ldc, nc);
        }
    }
}
