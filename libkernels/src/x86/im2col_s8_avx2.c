/* The AVX2 int8 lowering (kern_im2col_s8): col[p][k], P x K bytes, the
 * same bytes as the C reference (kern_im2col_s8_pixel), built without a
 * bounds test per byte and without scratch.
 *
 * A 1 x 1, stride 1, unpadded convolution lowers to a byte transpose of the
 * [C][P] planes into [P][C]: 16 x 16 blocks transposed in registers by four
 * rounds of unpacks. The last block of a row or column overlaps the one
 * before it instead of taking a scalar tail (it writes the same values
 * again).
 *
 * Any other shape is built one (c, ky) run of kw bytes at a time from one
 * load of W = 4, 8 or 16 bytes (the smallest >= kw) and one store of W
 * bytes. Runs are stored in increasing address order, so the W - kw bytes a
 * store writes past its run are overwritten by the next run; only the last
 * pixels, whose overhang would leave col, take the reference loop. The load
 * starts at the window's first column clamped into [0, in_w - W], so it
 * never leaves its input row, and a pshufb control, one per output column,
 * moves each tap to its place and zeroes the taps that fall in the padding;
 * rows that fall in the padding store zeros. Planes narrower than W (and
 * kernels wider than 16) take the reference. */
#include <immintrin.h>
#include <stddef.h>
#include <string.h>

#include "conv.h"
#include "im2col_s8_geom.h"
#include "transpose_u8.h"

/* col[p][c] = xg[c][p] for P pixels and C channels. */
static void lower_transpose(size_t C, size_t P, const int8_t *xg,
                            int8_t *col)
{
    if (P < 16) {
        for (size_t p = 0; p < P; p++) {
            for (size_t c = 0; c < C; c++) {
                col[p * C + c] = xg[c * P + p];
            }
        }
        return;
    }
    for (size_t p0 = 0; p0 < P; p0 += 16) {
        const size_t p = p0 + 16 <= P ? p0 : P - 16;
        for (size_t c0 = 0; c0 < C; c0 += 16) {
            /* C >= 16: the last block overlaps; else one partial block,
             * its missing rows zero and its stores cut to C bytes */
            const size_t c = C < 16 ? 0 : c0 + 16 <= C ? c0 : C - 16;
            const size_t nc = C < 16 ? C : 16;
            __m128i r[16];
            for (size_t i = 0; i < 16; i++) {
                r[i] = i < nc ? _mm_loadu_si128(
                                    (const __m128i *)(xg + (c + i) * P + p))
                              : _mm_setzero_si128();
            }
            transpose16x16_u8(r);
            if (nc == 16) {
                for (size_t i = 0; i < 16; i++) {
                    _mm_storeu_si128((__m128i *)(col + (p + i) * C + c),
                                     r[i]);
                }
            } else {
                for (size_t i = 0; i < 16; i++) {
                    int8_t t[16];
                    _mm_storeu_si128((__m128i *)t, r[i]);
                    memcpy(col + (p + i) * C, t, nc);
                }
            }
        }
    }
}

static inline __m128i load_w(const int8_t *p, int w)
{
    if (w == 4) {
        int32_t v;
        memcpy(&v, p, 4);
        return _mm_cvtsi32_si128(v);
    }
    if (w == 8) {
        return _mm_loadl_epi64((const __m128i *)p);
    }
    return _mm_loadu_si128((const __m128i *)p);
}

static inline void store_w(int8_t *p, __m128i v, int w)
{
    if (w == 4) {
        const int32_t t = _mm_cvtsi128_si32(v);
        memcpy(p, &t, 4);
    } else if (w == 8) {
        _mm_storel_epi64((__m128i *)p, v);
    } else {
        _mm_storeu_si128((__m128i *)p, v);
    }
}

/* Where output column ox's window of kw taps, first column ix0 (< 0 in
 * the left padding), is loaded from and how it is unpacked: the w-byte
 * load starts at column *st (inside [0, in_w - w]); the pshufb control
 * puts load byte t + ix0 - st at tap t and is exactly 0x80 (a zero) for
 * taps in the padding. */
static inline __m128i window_ctl(ptrdiff_t ix0, ptrdiff_t iw, int w,
                                 ptrdiff_t *st)
{
    const __m128i iota =
        _mm_setr_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    ptrdiff_t s = ix0 < 0 ? 0 : ix0;
    s = s < iw - w ? s : iw - w;
    *st = s;
    /* tap t is valid for t in [lo, hi), both in [0, 16], so every byte
     * lane compare below is exact */
    const ptrdiff_t lo = ix0 < 0 ? (-ix0 < 16 ? -ix0 : 16) : 0;
    ptrdiff_t hi = iw - ix0;
    hi = hi < 0 ? 0 : hi < 16 ? hi : 16;
    const __m128i valid = _mm_and_si128(
        _mm_cmpgt_epi8(iota, _mm_set1_epi8((char)(lo - 1))),
        _mm_cmpgt_epi8(_mm_set1_epi8((char)hi), iota));
    return _mm_blendv_epi8(_mm_set1_epi8((char)0x80),
                           _mm_add_epi8(iota, _mm_set1_epi8((char)(ix0 - s))),
                           valid);
}

/* The run-at-a-time lowering for loads and stores of w bytes (a constant
 * in each caller); needs kw <= w <= in_w. */
static inline __attribute__((always_inline)) void
lower_runs(const struct kern_conv2d_shape *s, size_t oh, size_t ow,
           const int8_t *xg, int8_t *col, int w)
{
    const size_t cg = s->in_c / s->groups, kh = s->kh, kw = s->kw;
    const ptrdiff_t iw = (ptrdiff_t)s->in_w;
    const size_t K = cg * kh * kw, P = oh * ow, hw_in = s->in_h * s->in_w;
    const __m128i z = _mm_setzero_si128();
    for (size_t oy = 0; oy < oh; oy++) {
        ptrdiff_t iy0, ky0, ky1;
        window_rows(s, oy, &iy0, &ky0, &ky1);
        for (size_t ox = 0; ox < ow; ox++) {
            const size_t at = (oy * ow + ox) * K;
            int8_t *r = col + at;
            if (at + K + ((size_t)w - kw) > P * K) {
                /* its last store would leave col */
                kern_im2col_s8_pixel(s, xg, oy, ox, r);
                continue;
            }
            const ptrdiff_t ix0 =
                (ptrdiff_t)(ox * s->stride_w) - (ptrdiff_t)s->pad_left;
            ptrdiff_t st;
            const __m128i ctl = window_ctl(ix0, iw, w, &st);
            for (size_t c = 0; c < cg; c++) {
                int8_t *rc = r + c * kh * kw;
                const int8_t *xc = xg + c * hw_in + st;
                ptrdiff_t ky = 0;
                for (; ky < ky0; ky++) {
                    store_w(rc + ky * kw, z, w);
                }
                for (; ky < ky1; ky++) {
                    const __m128i v = load_w(xc + (iy0 + ky) * iw, w);
                    store_w(rc + ky * kw, _mm_shuffle_epi8(v, ctl), w);
                }
                for (; ky < (ptrdiff_t)kh; ky++) {
                    store_w(rc + ky * kw, z, w);
                }
            }
        }
    }
}

/* Output column ox's cell control (the window control spread over the
 * cell's kh lanes) and its load column *st. */
static inline __m128i cell_ctl(const struct kern_conv2d_shape *s, size_t ox,
                               __m128i vtap, __m128i vlane, ptrdiff_t *st)
{
    const ptrdiff_t ix0 =
        (ptrdiff_t)(ox * s->stride_w) - (ptrdiff_t)s->pad_left;
    return _mm_add_epi8(
        _mm_shuffle_epi8(window_ctl(ix0, (ptrdiff_t)s->in_w, 4, st), vtap),
        vlane);
}

enum { CELL_CTLS = 64 };

/* kh, kw <= 4: the kh x kw taps of one (pixel, c) cell, at most 16 bytes,
 * gathered from kh 4-byte loads (one 32-bit lane each) and placed by one
 * pshufb, then one 16-byte store: a third of the run-at-a-time path's
 * stores for a 3 x 3 kernel. The store's overhang, 16 - kh * kw bytes, is
 * overwritten by the next cell as above. Needs in_w >= 4. */
static void lower_cells(const struct kern_conv2d_shape *s, size_t oh,
                        size_t ow, const int8_t *xg, int8_t *col)
{
    const size_t cg = s->in_c / s->groups, kh = s->kh, kw = s->kw;
    const ptrdiff_t iw = (ptrdiff_t)s->in_w;
    const size_t cell = kh * kw, K = cg * cell, P = oh * ow;
    const size_t hw_in = s->in_h * s->in_w;
    /* cell byte o = ky * kw + t takes tap t of lane ky: the window control
     * spread by `tap`, plus 4 * ky from `lane` (an invalid tap's 0x80 stays
     * >= 0x80) */
    int8_t tap[16], lane[16];
    for (size_t o = 0; o < 16; o++) {
        tap[o] = (int8_t)(o < cell ? o % kw : 0);
        lane[o] = (int8_t)(o < cell ? 4 * (o / kw) : 0);
    }
    const __m128i vtap = _mm_loadu_si128((const __m128i *)tap);
    const __m128i vlane = _mm_loadu_si128((const __m128i *)lane);
    /* The controls depend on the column only: for planes up to CELL_CTLS
     * wide they are made once per call, not once per pixel (a depthwise
     * layer calls once per channel, with one cell per pixel). */
    __m128i ctls[CELL_CTLS];
    ptrdiff_t sts[CELL_CTLS];
    for (size_t ox = 0; ow <= CELL_CTLS && ox < ow; ox++) {
        ctls[ox] = cell_ctl(s, ox, vtap, vlane, &sts[ox]);
    }
    for (size_t oy = 0; oy < oh; oy++) {
        ptrdiff_t iy0, ky0, ky1;
        window_rows(s, oy, &iy0, &ky0, &ky1);
        for (size_t ox = 0; ox < ow; ox++) {
            const size_t at = (oy * ow + ox) * K;
            int8_t *r = col + at;
            if (at + K + (16 - cell) > P * K) {
                kern_im2col_s8_pixel(s, xg, oy, ox, r);
                continue;
            }
            ptrdiff_t st;
            __m128i ctl;
            if (ow <= CELL_CTLS) {
                st = sts[ox];
                ctl = ctls[ox];
            } else {
                ctl = cell_ctl(s, ox, vtap, vlane, &st);
            }
            for (size_t c = 0; c < cg; c++) {
                const int8_t *xc = xg + c * hw_in + st;
                const __m128i v = _mm_setr_epi32(
                    cell_row(xc, iy0, 0, ky0, ky1, iw),
                    cell_row(xc, iy0, 1, ky0, ky1, iw),
                    cell_row(xc, iy0, 2, ky0, ky1, iw),
                    cell_row(xc, iy0, 3, ky0, ky1, iw));
                _mm_storeu_si128((__m128i *)(r + c * cell),
                                 _mm_shuffle_epi8(v, ctl));
            }
        }
    }
}

void kern_im2col_s8_avx2(const struct kern_conv2d_shape *s, size_t out_h,
                         size_t out_w, const int8_t *xg, int8_t *col)
{
    const size_t kw = s->kw;
    if (s->kh == 1 && kw == 1 && s->stride_h == 1 && s->stride_w == 1 &&
        !s->pad_top && !s->pad_left && !s->pad_bottom && !s->pad_right) {
        lower_transpose(s->in_c / s->groups, out_h * out_w, xg, col);
    } else if (kw <= 4 && s->kh <= 4 && s->in_w >= 4) {
        lower_cells(s, out_h, out_w, xg, col);
    } else if (kw <= 4 && s->in_w >= 4) {
        lower_runs(s, out_h, out_w, xg, col, 4);
    } else if (kw <= 8 && s->in_w >= 8) {
        lower_runs(s, out_h, out_w, xg, col, 8);
    } else if (kw <= 16 && s->in_w >= 16) {
        lower_runs(s, out_h, out_w, xg, col, 16);
    } else {
        kern_im2col_s8_c(s, out_h, out_w, xg, col);
    }
}
