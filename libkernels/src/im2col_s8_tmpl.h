/*
 * The vector int8 lowering (kern_im2col_s8): col[p][k], P x K bytes, the
 * same bytes as the C reference (kern_im2col_s8_pixel), built without a
 * bounds test per byte and without scratch; one body for the AVX2 and the
 * NEON path (dav1d's way, as conv_tmpl.h).
 *
 * A 1 x 1, stride 1, unpadded convolution lowers to a byte transpose of the
 * [C][P] planes into [P][C]: 16 x 16 blocks transposed in registers. The
 * last block of a row or column overlaps the one before it instead of
 * taking a scalar tail (it writes the same values again).
 *
 * Kernels up to 4 x 4 are gathered a (pixel, channel) cell at a time: the
 * kh x kw taps, at most 16 bytes, from kh 4-byte loads (one 32-bit lane
 * each) placed by one table lookup, then one 16-byte store, a third of
 * the run-at-a-time path's stores for a 3 x 3 kernel.
 *
 * Any other shape is built one (c, ky) run of kw bytes at a time from one
 * load of W = 4, 8 or 16 bytes (the smallest >= kw) and one store of W
 * bytes. Runs (and cells) are stored in increasing address order, so the
 * bytes a store writes past its run are overwritten by the next one; only
 * the last pixels, whose overhang would leave col, take the reference
 * loop. The load starts at the window's first column clamped into
 * [0, in_w - W], so it never leaves its input row, and a lookup control,
 * one per output column, moves each tap to its place and zeroes the taps
 * that fall in the padding; rows that fall in the padding store zeros.
 * Planes narrower than W (and kernels wider than 16) take the reference.
 *
 * The includer defines, before including this:
 *   i8x16                         a vector of 16 bytes
 *   v_zero(), v_load16(p), v_store16(p, v)
 *   v_tbl(v, ctl)                 byte ctl[i] of v, 0 for a control of 0x80
 *                                 or more (pshufb; tbl gives 0 from 16 up)
 *   v_add8(a, b)                  bytewise a + b (wrapping)
 *   v_rows4(r0, r1, r2, r3)       four int32 as the vector's lanes
 *   v_transpose16(r)              r[i] byte j to r[j] byte i, 16 x 16
 *   load_w(p, w), store_w(p, v, w)   w = 4, 8 or 16 bytes
 *   window_ctl(ix0, iw, w, &st)   output column ix0's load column st and
 *                                 its lookup control (0x80 for padding)
 *   IM2COL_FN(name)               appends the instruction-set suffix
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "conv.h"
#include "im2col_s8_geom.h"

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
            i8x16 r[16];
            for (size_t i = 0; i < 16; i++) {
                r[i] = i < nc ? v_load16(xg + (c + i) * P + p) : v_zero();
            }
            v_transpose16(r);
            if (nc == 16) {
                for (size_t i = 0; i < 16; i++) {
                    v_store16(col + (p + i) * C + c, r[i]);
                }
            } else {
                for (size_t i = 0; i < 16; i++) {
                    int8_t t[16];
                    v_store16(t, r[i]);
                    memcpy(col + (p + i) * C, t, nc);
                }
            }
        }
    }
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
    const i8x16 z = v_zero();
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
            const i8x16 ctl = window_ctl(ix0, iw, w, &st);
            for (size_t c = 0; c < cg; c++) {
                int8_t *rc = r + c * kh * kw;
                const int8_t *xc = xg + c * hw_in + st;
                ptrdiff_t ky = 0;
                for (; ky < ky0; ky++) {
                    store_w(rc + ky * kw, z, w);
                }
                for (; ky < ky1; ky++) {
                    const i8x16 v = load_w(xc + (iy0 + ky) * iw, w);
                    store_w(rc + ky * kw, v_tbl(v, ctl), w);
                }
                for (; ky < (ptrdiff_t)kh; ky++) {
                    store_w(rc + ky * kw, z, w);
                }
            }
        }
    }
}

/* Output column ox's cell control (the window control spread over the
 * cell's kh lanes; an invalid tap's 0x80 plus 4 ky stays at least 0x80
 * as a byte, which both lookups read as a zero) and its load column
 * *st. */
static inline i8x16 cell_ctl(const struct kern_conv2d_shape *s, size_t ox,
                             i8x16 vtap, i8x16 vlane, ptrdiff_t *st)
{
    const ptrdiff_t ix0 =
        (ptrdiff_t)(ox * s->stride_w) - (ptrdiff_t)s->pad_left;
    return v_add8(v_tbl(window_ctl(ix0, (ptrdiff_t)s->in_w, 4, st), vtap),
                  vlane);
}

enum { CELL_CTLS = 64 };

/* kh, kw <= 4: a (pixel, c) cell at a time (above). The store's
 * overhang, 16 - kh * kw bytes, is overwritten by the next cell. Needs
 * in_w >= 4. */
static void lower_cells(const struct kern_conv2d_shape *s, size_t oh,
                        size_t ow, const int8_t *xg, int8_t *col)
{
    const size_t cg = s->in_c / s->groups, kh = s->kh, kw = s->kw;
    const ptrdiff_t iw = (ptrdiff_t)s->in_w;
    const size_t cell = kh * kw, K = cg * cell, P = oh * ow;
    const size_t hw_in = s->in_h * s->in_w;
    /* cell byte o = ky * kw + t takes tap t of lane ky: the window control
     * spread by `tap`, plus 4 * ky from `lane` */
    int8_t tap[16], lane[16];
    for (size_t o = 0; o < 16; o++) {
        tap[o] = (int8_t)(o < cell ? o % kw : 0);
        lane[o] = (int8_t)(o < cell ? 4 * (o / kw) : 0);
    }
    const i8x16 vtap = v_load16(tap), vlane = v_load16(lane);
    /* The controls depend on the column only: for planes up to CELL_CTLS
     * wide they are made once per call, not once per pixel (a depthwise
     * layer calls once per channel, with one cell per pixel). */
    i8x16 ctls[CELL_CTLS];
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
            i8x16 ctl;
            if (ow <= CELL_CTLS) {
                st = sts[ox];
                ctl = ctls[ox];
            } else {
                ctl = cell_ctl(s, ox, vtap, vlane, &st);
            }
            for (size_t c = 0; c < cg; c++) {
                const int8_t *xc = xg + c * hw_in + st;
                const i8x16 v = v_rows4(cell_row(xc, iy0, 0, ky0, ky1, iw),
                                        cell_row(xc, iy0, 1, ky0, ky1, iw),
                                        cell_row(xc, iy0, 2, ky0, ky1, iw),
                                        cell_row(xc, iy0, 3, ky0, ky1, iw));
                v_store16(r + c * cell, v_tbl(v, ctl));
            }
        }
    }
}

void IM2COL_FN(kern_im2col_s8)(const struct kern_conv2d_shape *s,
                               size_t out_h, size_t out_w, const int8_t *xg,
                               int8_t *col)
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
