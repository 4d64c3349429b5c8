/* AVX-512 convolution: conv_tmpl.h's 8-float tiles (as conv_avx2.c) and,
 * for a 1 x 1 stride-1 unpadded convolution from and to NCHW8c tensors
 * (the pointwise layers of MobileNets), a tile of 16-float vectors. A
 * vector holds two channel blocks of one pixel; a tile is 2 vectors x 12
 * pixels (24 accumulators of the 32 registers), and each step over K
 * costs 12 broadcasts of an input and two weight vectors, each joined
 * from two packed blocks' 8 weights, for 24 multiply-adds: twice the
 * 8-float tile's channels per instruction, which is what a core that
 * multiplies 16 floats at once at full rate gives. Every output lane
 * starts from the same bias and adds its K products in the same order,
 * one fused multiply-add each, as the 8-float tiles: the bits are theirs
 * (checkkern compares both with the C reference). Compiled with AVX-512
 * flags; called only when the CPU has them. */
#include "conv_v8_avx2.h"

enum { WIDE_PIX = 12, WIDE_NZ = 2 };
_Static_assert(WIDE_NZ * 16 == KERN_CONV_SPLIT_V16,
               "kern_conv2d_split_channels names this tile's width");

/* The fused activation, as act8 of conv_tmpl.h (v second: NaN stays). */
static inline __m512 wide_act(__m512 v, int act)
{
    if (act == KERN_FUSE_NONE) {
        return v;
    }
    v = _mm512_max_ps(_mm512_setzero_ps(), v);
    if (act == KERN_FUSE_RELU6) {
        v = _mm512_min_ps(_mm512_set1_ps(6.0f), v);
    }
    return v;
}

/* Step k of a tile: blocks 2 j and 2 j + 1 of the packed weights (K x 8
 * floats each, from wp) joined into vector j, times pixel r's input
 * x[ps r] (consecutive pixels of a plane, d NULL: ps 8 on blocked planes,
 * 1 on a channel's own) or x[d[r]]. */
static inline __attribute__((always_inline)) void
wide_step(const int nz, const int R, __m512 *a, const float *wp,
              size_t K, size_t k, const float *x, const ptrdiff_t *d,
              const int ps)
{
    __m512 w[WIDE_NZ];
#pragma GCC unroll 2
    for (int j = 0; j < nz; j++) {
        const float *lo = wp + ((size_t)(2 * j) * K + k) * 8;
        w[j] = _mm512_insertf32x8(_mm512_castps256_ps512(_mm256_loadu_ps(lo)),
                                  _mm256_loadu_ps(lo + K * 8), 1);
    }
#pragma GCC unroll 12
    for (int r = 0; r < R; r++) {
        const __m512 xb =
            _mm512_set1_ps(d ? x[d[r]] : x[ps * (ptrdiff_t)r]);
#pragma GCC unroll 2
        for (int j = 0; j < nz; j++) {
            a[r * nz + j] = _mm512_fmadd_ps(w[j], xb, a[r * nz + j]);
        }
    }
}

/* A tile's accumulators start from the bias blocks (every pixel r of
 * R, every 16-lane vector j of nz). */
static inline __attribute__((always_inline)) void
wide_start(const int nz, const int R, __m512 *a, const __m512 *bz)
{
#pragma GCC unroll 12
    for (int r = 0; r < R; r++) {
#pragma GCC unroll 2
        for (int j = 0; j < nz; j++) {
            a[r * nz + j] = bz[j];
        }
    }
}

/* A tile's end: the activation, and each vector's two 8-channel blocks
 * stored at output pixel p0 + r of their blocked planes. */
static inline __attribute__((always_inline)) void
wide_finish(const int nz, const int R, const __m512 *a, int act, float *y,
            size_t plane, size_t p0)
{
#pragma GCC unroll 12
    for (int r = 0; r < R; r++) {
#pragma GCC unroll 2
        for (int j = 0; j < nz; j++) {
            const __m512 o = wide_act(a[r * nz + j], act);
            float *d = y + ((size_t)(2 * j) * plane + p0 + (size_t)r) * 8;
            _mm256_storeu_ps(d, _mm512_castps512_ps256(o));
            _mm256_storeu_ps(d + plane * 8, _mm512_extractf32x8_ps(o, 1));
        }
    }
}

/* Pixels p0 .. p0 + R of 16 nz channels: the input's blocks step floats
 * apart from x (pixel p at x + 8 p), the output's plane * 8 apart from y
 * (pixel p at y + 8 p); bz the biases, a vector per 16 channels. */
static inline __attribute__((always_inline)) void
wide_tile(const int nz, const int R, size_t K, const float *wp,
          const float *x, size_t step, const __m512 *bz, int act, float *y,
          size_t plane, size_t p0)
{
    __m512 a[WIDE_NZ * WIDE_PIX];
    wide_start(nz, R, a, bz);
    const float *xb = x + p0 * 8;
    size_t k = 0;
    for (; k + 8 <= K; k += 8, xb += step) {
#pragma GCC unroll 8
        for (size_t l = 0; l < 8; l++) {
            wide_step(nz, R, a, wp, K, k + l, xb + l, NULL, 8);
        }
    }
    for (size_t l = 0; k < K; k++, l++) {
        wide_step(nz, R, a, wp, K, k, xb + l, NULL, 8);
    }
    wide_finish(nz, R, a, act, y, plane, p0);
}

/* Pixels [pa, pb) of a plane: tiles of 12, then of 4, then single
 * pixels. */
static inline __attribute__((always_inline)) void
wide_plane(const int nz, size_t K, const float *wp, const float *x,
           size_t step, const __m512 *bz, int act, float *y, size_t plane,
           size_t pa, size_t pb)
{
    size_t p0 = pa;
    for (; p0 + WIDE_PIX <= pb; p0 += WIDE_PIX) {
        wide_tile(nz, WIDE_PIX, K, wp, x, step, bz, act, y, plane, p0);
    }
    for (; p0 + 4 <= pb; p0 += 4) {
        wide_tile(nz, 4, K, wp, x, step, bz, act, y, plane, p0);
    }
    for (; p0 < pb; p0++) {
        wide_tile(nz, 1, K, wp, x, step, bz, act, y, plane, p0);
    }
}

/* The next 32 (or 16) of `left` output channels, whole blocks, of a
 * 1 x 1 convolution from and to blocked tensors (conv_tmpl.h's
 * CONV_WIDE_DIRECT); 0 when fewer than 16 are left (the 8-float tiles
 * take them). */
static size_t wide_direct(size_t K, const float *wp, const float *x,
                          size_t step, const float *bias, int act,
                          size_t left, float *y, size_t plane, size_t pa,
                          size_t pb)
{
    const int nz = left >= 32 ? 2 : left >= 16 ? 1 : 0;
    __m512 bz[WIDE_NZ];
    for (int j = 0; j < nz; j++) {
        bz[j] = bias ? _mm512_loadu_ps(bias + 16 * j) : _mm512_setzero_ps();
    }
    if (nz == 2) {
        wide_plane(2, K, wp, x, step, bz, act, y, plane, pa, pb);
    } else if (nz == 1) {
        wide_plane(1, K, wp, x, step, bz, act, y, plane, pa, pb);
    }
    return (size_t)nz * 16;
}


/* Output pixels p0 .. p0 + R, the first's input at px (its step k at
 * px[off[k]]), the others' ps r floats further (one output row, d NULL)
 * or d[r] further. */
static inline __attribute__((always_inline)) void
wide_tile_off(const int nz, const int R, const int ps, size_t K,
              const float *wp, const float *px, const ptrdiff_t *d,
              const ptrdiff_t *off, const __m512 *bz, int act, float *y,
              size_t plane, size_t p0)
{
    __m512 a[WIDE_NZ * WIDE_PIX];
    wide_start(nz, R, a, bz);
    for (size_t k = 0; k < K; k++) {
        wide_step(nz, R, a, wp, K, k, px + off[k], d, ps);
    }
    wide_finish(nz, R, a, act, y, plane, p0);
}

/* Output pixels [pa, pb), in tiles of 12 (within a row, or across rows
 * with each pixel's offset), then of 4 and 1; pixel (oy, ox) at
 * x[(oy * pitch + ox) * ps]. */
static inline __attribute__((always_inline)) void
wide_rows(const int nz, const int ps, size_t K, const float *wp,
          const float *x, const ptrdiff_t *off, size_t pitch, size_t out_w,
          const __m512 *bz, int act, float *y, size_t plane, size_t pa,
          size_t pb)
{
    size_t oy = pa / out_w, ox = pa % out_w, p0 = pa;
    ptrdiff_t d[WIDE_PIX];
    for (; p0 + WIDE_PIX <= pb; p0 += WIDE_PIX) {
        const float *px = x + (oy * pitch + ox) * ps;
        if (ox + WIDE_PIX <= out_w) {
            wide_tile_off(nz, WIDE_PIX, ps, K, wp, px, NULL, off, bz, act,
                          y, plane, p0);
            ox += WIDE_PIX;
        } else {
            for (int r = 0; r < WIDE_PIX; r++) {
                d[r] = (ptrdiff_t)((oy * pitch + ox) * ps) -
                       (px - x);
                if (++ox == out_w) {
                    ox = 0;
                    oy++;
                }
            }
            wide_tile_off(nz, WIDE_PIX, ps, K, wp, px, d, off, bz, act, y,
                          plane, p0);
        }
        if (ox == out_w) {
            ox = 0;
            oy++;
        }
    }
    for (; p0 < pb;) {
        const int R = pb - p0 >= 4 ? 4 : 1;
        const float *px = x + (oy * pitch + ox) * ps;
        for (int r = 0; r < R; r++) {
            d[r] = (ptrdiff_t)((oy * pitch + ox) * ps) - (px - x);
            if (++ox == out_w) {
                ox = 0;
                oy++;
            }
        }
        if (R == 4) {
            wide_tile_off(nz, 4, ps, K, wp, px, d, off, bz, act, y, plane,
                          p0);
        } else {
            wide_tile_off(nz, 1, ps, K, wp, px, NULL, off, bz, act, y, plane,
                          p0);
        }
        p0 += (size_t)R;
    }
}

/* conv_tmpl.h's CONV_WIDE_PLANE: as wide_direct, on phase planes,
 * blocked ones (ps 8) or a channel's own (ps 1: the 3-channel stems), or
 * on a blocked input read in place at stride 2 (ps 16: the 1 x 1
 * stride-2 downsamples); 0 for other pixel strides. */
static size_t wide_plane_off(size_t ps, size_t K, const float *wp,
                             const float *x, const ptrdiff_t *off,
                             size_t pitch, size_t out_w, const float *bias,
                             int act, size_t left, float *y, size_t plane,
                             size_t pa, size_t pb)
{
    const int nz = left >= 32 ? 2 : left >= 16 ? 1 : 0;
    if (ps != 1 && ps != 8 && ps != 16) {
        return 0;
    }
    __m512 bz[WIDE_NZ];
    for (int j = 0; j < nz; j++) {
        bz[j] = bias ? _mm512_loadu_ps(bias + 16 * j) : _mm512_setzero_ps();
    }
#define WIDE_ROWS_PS(n, s)                                                   \
    if (nz == (n) && ps == (s)) {                                            \
        wide_rows(n, s, K, wp, x, off, pitch, out_w, bz, act, y, plane, pa,  \
                  pb);                                                       \
    }
    WIDE_ROWS_PS(2, 8)
    WIDE_ROWS_PS(2, 1)
    WIDE_ROWS_PS(2, 16)
    WIDE_ROWS_PS(1, 8)
    WIDE_ROWS_PS(1, 1)
    WIDE_ROWS_PS(1, 16)
#undef WIDE_ROWS_PS
    return (size_t)nz * 16;
}

#define CONV_WIDE_DIRECT wide_direct
#define CONV_WIDE_PLANE wide_plane_off
#define CONV_FN(name) name##_avx512

#include "conv_tmpl.h"
