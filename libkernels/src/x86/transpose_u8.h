/* Private: a 16 x 16 byte transpose in SSE registers, shared by the int8
 * lowering (im2col_s8_avx2.c) and the transposed int8 output stage
 * (q8s_avx2.c). */
#ifndef EDGEFIT_KERNELS_TRANSPOSE_U8_H
#define EDGEFIT_KERNELS_TRANSPOSE_U8_H

#include <immintrin.h>

/* r[i] byte j becomes r[j] byte i, for 16 rows of 16 bytes. */
static inline void transpose16x16_u8(__m128i r[16])
{
    __m128i a[16], q4[4][4];
    for (int i = 0; i < 8; i++) {
        /* rows 2i, 2i+1: columns 0-7 in a[i], 8-15 in a[8 + i] */
        a[i] = _mm_unpacklo_epi8(r[2 * i], r[2 * i + 1]);
        a[8 + i] = _mm_unpackhi_epi8(r[2 * i], r[2 * i + 1]);
    }
    for (int h = 0; h < 16; h += 8) {
        for (int j = 0; j < 4; j++) {
            /* rows 4j..4j+3 of columns h..h+3 (quarter h / 4), then of
             * columns h+4..h+7 */
            q4[h / 4][j] = _mm_unpacklo_epi16(a[h + 2 * j], a[h + 2 * j + 1]);
            q4[h / 4 + 1][j] =
                _mm_unpackhi_epi16(a[h + 2 * j], a[h + 2 * j + 1]);
        }
    }
    for (int q = 0; q < 4; q++) {
        for (int m = 0; m < 2; m++) {
            /* rows 8m..8m+7: columns 4q, 4q+1 (lo), 4q+2, 4q+3 (hi) */
            a[(2 * q) * 2 + m] =
                _mm_unpacklo_epi32(q4[q][2 * m], q4[q][2 * m + 1]);
            a[(2 * q + 1) * 2 + m] =
                _mm_unpackhi_epi32(q4[q][2 * m], q4[q][2 * m + 1]);
        }
    }
    for (int pp = 0; pp < 8; pp++) {
        /* column pair pp: rows 0-7 in a[2pp], 8-15 in a[2pp + 1] */
        r[2 * pp] = _mm_unpacklo_epi64(a[2 * pp], a[2 * pp + 1]);
        r[2 * pp + 1] = _mm_unpackhi_epi64(a[2 * pp], a[2 * pp + 1]);
    }
}

#endif
