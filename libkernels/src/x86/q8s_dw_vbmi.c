/* Static int8 depthwise convolution of narrow maps with AVX-512 VBMI and
 * VNNI: NCHW in and out, no transposes, no padded copy.
 *
 * A block is 64 consecutive outputs of a channel's plane (or, where those
 * would span too many input rows, whole output rows, at most 64 outputs).
 * It reads a window of at most 64 input rows of at most 127 bytes: the
 * window's rows, contiguous in NCHW, are two registers (T0, T1) of
 * unsigned bytes u = x + 128, and byte 127 of the pair holds the padding
 * value x_zero + 128. One vpermi2b then gathers, for 16 outputs at once,
 * the inputs of four taps of each output into the four bytes of its dword:
 * the index of output o's tap t is its pixel's place in the window, or 127
 * where the tap falls in the padding. vpdpbusd multiplies those four bytes
 * by the four weights of the taps (broadcast: one channel a block) and
 * adds them up, so a 3 x 3 kernel takes three gathers and three dot
 * products per 16 outputs, whatever the stride or dilation.
 *
 * As in q8s_dw_vnni.c, sum u w over the taps = sum (x - x_zero) w + (x_zero
 * + 128) wsum (a padded tap adds (x_zero + 128) w), so each accumulator
 * starts at bias - (x_zero + 128) wsum (q8s_dw_acc0) and ends equal to
 * the C reference's sum plus bias; weights of the slots past the last tap
 * are 0. The output stage is the reference's (q8s_stage512_dw, packed by
 * q8s_stage512_64: fixed or float, the same bytes as kern_q8s_dwconv_c),
 * and the four vectors of a block are laid out so that its packing puts
 * the 64 bytes in output order: dword d of vector s is block slot 16 (d /
 * 4) + 4 s + d % 4.
 *
 * The indices depend on the shape only: they are built once a call (per
 * block, from a few vectors by byte permutes and adds), then every channel
 * reuses them. Maps of up to 36 outputs, blocks less than a quarter
 * live, shapes with wider windows, more than 28 taps or a multiplier of
 * INT32_MIN run kern_q8s_dwconv_vnni.
 *
 * Measured here (AMD EPYC, float stage; int8 time over the NCHW8c fp32
 * depthwise kernel's, kern_q8s_dwconv_vnni's in brackets): 64 x 25 x 5
 * 0.98-1.01 (1.64), 32 x 24 x 24 1.12-1.15 (1.33), 192 x 28 x 28
 * 0.73-0.79 (1.12-1.22), 960 x 7 x 7 1.34-1.38 (1.63). */
#include <immintrin.h>
#include <stdbool.h>
#include <stdint.h>

#include "q8s.h"
#include "q8s_stage_avx512.h"
#include "edgefit/kernels.h"

enum {
    VB_MAX_GROUPS = 7, /* 28 taps: a 5 x 5 kernel */
    VB_FILL = 127,     /* the window's byte that holds the padding */
};

/* The geometry of one call: blocks of len consecutive outputs of a
 * channel's plane (the last one shorter; len 64, or whole output rows
 * where 64 outputs would span too many input rows), each reading the
 * input rows [lo, lo + n / in_w) of its window, and the tap groups. */
struct vb_geom {
    size_t len, nblocks, groups;
};

struct vb_block {
    uint32_t lo, n; /* the window's first byte in the plane, its bytes */
};

static bool vb_geom_of(const struct kern_dwconv2d_shape *s, size_t oh,
                       size_t ow, struct vb_geom *g)
{
    const size_t dh = s->dilation_h ? s->dilation_h : 1;
    const size_t dw = s->dilation_w ? s->dilation_w : 1;
    const size_t taps = s->kh * s->kw;
    if (!oh || !ow || ow > 64 || taps > 4 * VB_MAX_GROUPS || s->in_w > 127 ||
        s->kh > 64 || s->stride_h > 64 || s->stride_w > 64 || dh > 64 ||
        dw > 64 || oh > SIZE_MAX / 64 / ow) {
        return false;
    }
    /* a block costs about the same whatever its live outputs: on maps of
     * up to 36 outputs (6 x 6) one channel a block is no faster than
     * kern_q8s_dwconv_vnni's 32 channels a pixel (measured: 128 x 6 x 6
     * equal, 5 x 5 1.3x and 4 x 4 1.75x its time, 7 x 7 0.84x) */
    if (oh * ow <= 36) {
        return false;
    }
    /* every index lane below stays a byte: a slot's row in its window
     * plus its tap's, and its column plus its tap's, under 128 */
    if ((ow - 1) * s->stride_w + (s->kw - 1) * dw > 120 ||
        s->pad_left > 120 || s->pad_top > 60) {
        return false;
    }
    /* the window of a block whose outputs span `rows` output rows */
#define VB_FITS(rows)                                                      \
    (((rows) - 1) * s->stride_h + (s->kh - 1) * dh + 1 <= 64 &&             \
     (((rows) - 1) * s->stride_h + (s->kh - 1) * dh + 1) * s->in_w <= VB_FILL)
    /* 64 consecutive outputs span at most this many output rows */
    const size_t span = (63 + ow - 1) / ow + 1;
    size_t len = 0;
    if (VB_FITS(span < oh ? span : oh)) {
        len = 64;
    } else {
        for (size_t r = 64 / ow; r >= 1 && !len; r--) {
            len = VB_FITS(r) ? r * ow : 0;
        }
    }
#undef VB_FITS
    if (!len) {
        return false;
    }
    g->len = len;
    g->nblocks = (oh * ow + len - 1) / len;
    /* a block costs the same whatever its live slots: under a quarter of
     * them live (a stride-2 map of 14 columns from 28: one row, 14 of
     * 64), kern_q8s_dwconv_vnni is faster (192 x 28 x 28 at stride 2: this
     * path 1.3x its time; 576 x 14 x 14, 21 of 64 live, 0.95x) */
    if (g->nblocks * 64 > 4 * oh * ow) {
        return false;
    }
    g->groups = (taps + 3) / 4;
    return true;
}

/* Bytes 0..63 */
static inline __m512i vb_iota(void)
{
    return _mm512_set_epi8(63, 62, 61, 60, 59, 58, 57, 56, 55, 54, 53, 52,
                           51, 50, 49, 48, 47, 46, 45, 44, 43, 42, 41, 40, 39,
                           38, 37, 36, 35, 34, 33, 32, 31, 30, 29, 28, 27, 26,
                           25, 24, 23, 22, 21, 20, 19, 18, 17, 16, 15, 14, 13,
                           12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
}

/* The index vectors of every block: idx[(b * 4 + s) * groups + g] for
 * block b, vector s, tap group g. Byte j of vector (s, g) is block slot
 * 16 (j / 16) + 4 s + (j / 4) % 4 (output len b + slot of the plane) and
 * tap 4 g + j % 4; slots from len on are dead. blk[b]: block b's
 * window. */
static void vb_indices(const struct kern_dwconv2d_shape *s, size_t oh,
                       size_t ow, const struct vb_geom *g, __m512i *idx,
                       struct vb_block *blk)
{
    const size_t dh = s->dilation_h ? s->dilation_h : 1;
    const size_t dw = s->dilation_w ? s->dilation_w : 1;
    const size_t taps = s->kh * s->kw, iw = s->in_w, op = oh * ow;
    /* per tap: ky dh and kx dw; the product table y in_w */
    uint8_t ky[64], kx[64], mul[64], ry[64], ox[64];
    for (size_t t = 0; t < 64; t++) {
        ky[t] = (uint8_t)(t < taps ? (t / s->kw) * dh : 0);
        kx[t] = (uint8_t)(t < taps ? (t % s->kw) * dw : 0);
        mul[t] = (uint8_t)(t * iw);
    }
    const __m512i kyv = _mm512_loadu_si512(ky), kxv = _mm512_loadu_si512(kx);
    const __m512i mulv = _mm512_loadu_si512(mul);
    const __m512i j = vb_iota();
    const __m512i iwv = _mm512_set1_epi8((char)iw);
    const __m512i fill = _mm512_set1_epi8((char)VB_FILL);
    const __m512i ntaps = _mm512_set1_epi8((char)taps);
    /* the slot pattern 16 (j / 16) + (j / 4) % 4, and j % 4 */
    const __m512i slot0 = _mm512_add_epi8(
        _mm512_and_si512(j, _mm512_set1_epi8(0x30)),
        _mm512_and_si512(_mm512_srli_epi16(j, 2), _mm512_set1_epi8(3)));
    const __m512i t0 = _mm512_and_si512(j, _mm512_set1_epi8(3));
    size_t oy = 0, col = 0; /* of the block's first output */
    for (size_t b = 0; b < g->nblocks; b++) {
        const size_t oy0 = oy;
        /* per slot: its output row from the block's first, times the
         * stride, and its first input column, ox sw - pad_left; slots
         * past the plane are never stored (any index serves them) */
        for (size_t k = 0; k < 64; k++) {
            const bool live = k < g->len && g->len * b + k < op;
            ry[k] = (uint8_t)(live ? (oy - oy0) * s->stride_h : 0);
            ox[k] = (uint8_t)(col * s->stride_w - s->pad_left);
            if (live && ++col == ow) {
                col = 0;
                oy++;
            }
        }
        const size_t oy1 = col ? oy : oy - 1; /* the block's last row */
        /* the window: input rows [lo, hi) of the unclipped [top, top +
         * wr); a lane's row relative to lo is ry + ky + (top - lo) */
        const ptrdiff_t top =
            (ptrdiff_t)(oy0 * s->stride_h) - (ptrdiff_t)s->pad_top;
        const ptrdiff_t wr = (ptrdiff_t)((oy1 - oy0) * s->stride_h +
                                         (s->kh - 1) * dh + 1);
        const ptrdiff_t lo = top < 0 ? 0 : top;
        ptrdiff_t hi = top + wr;
        if (hi > (ptrdiff_t)s->in_h) {
            hi = (ptrdiff_t)s->in_h;
        }
        const size_t nrows = hi > lo ? (size_t)(hi - lo) : 0;
        blk[b].lo = (uint32_t)((size_t)lo * iw);
        blk[b].n = (uint32_t)(nrows * iw); /* <= 127 (vb_geom_of) */
        const __m512i ryv = _mm512_loadu_si512(ry);
        const __m512i oxv = _mm512_loadu_si512(ox);
        const __m512i delta = _mm512_set1_epi8((char)(top - lo));
        const __m512i rows = _mm512_set1_epi8((char)nrows);
        for (size_t sv = 0; sv < 4; sv++) {
            const __m512i slot =
                _mm512_add_epi8(slot0, _mm512_set1_epi8((char)(4 * sv)));
            const __m512i rys = _mm512_permutexvar_epi8(slot, ryv);
            const __m512i oxs = _mm512_permutexvar_epi8(slot, oxv);
            for (size_t gi = 0; gi < g->groups; gi++) {
                const __m512i t =
                    _mm512_add_epi8(t0, _mm512_set1_epi8((char)(4 * gi)));
                const __m512i y = _mm512_add_epi8(
                    _mm512_add_epi8(rys, _mm512_permutexvar_epi8(t, kyv)),
                    delta);
                const __m512i x =
                    _mm512_add_epi8(oxs, _mm512_permutexvar_epi8(t, kxv));
                const __mmask64 ok = _mm512_cmplt_epu8_mask(y, rows) &
                                     _mm512_cmplt_epu8_mask(x, iwv) &
                                     _mm512_cmplt_epu8_mask(t, ntaps);
                /* y < rows <= 64: the product table's index */
                const __m512i at =
                    _mm512_add_epi8(_mm512_permutexvar_epi8(y, mulv), x);
                idx[(b * 4 + sv) * g->groups + gi] =
                    _mm512_mask_mov_epi8(fill, ok, at);
            }
        }
    }
}

/* One channel plane: every block's 64 slots, stored up to the plane's
 * last output. */
static inline __attribute__((always_inline)) void
vb_plane(size_t op, const struct vb_geom *g, const __m512i *idx,
         const struct vb_block *blk, const int8_t *xp, const __m512i *wq,
         __m512i a0, const struct q8s_stage512 *st, __m512i fillv,
         int8_t *yp, size_t ng)
{
    const __m512i flip = _mm512_set1_epi8((char)0x80);
    for (size_t b = 0; b < g->nblocks; b++) {
        const size_t n = blk[b].n; /* <= 127 */
        const int8_t *src = xp + blk[b].lo;
        const __mmask64 m0 =
            n >= 64 ? ~(__mmask64)0 : ((__mmask64)1 << n) - 1;
        const __mmask64 m1 = n > 64 ? ((__mmask64)1 << (n - 64)) - 1 : 0;
        const __m512i t0 =
            _mm512_xor_si512(_mm512_maskz_loadu_epi8(m0, src), flip);
        const __m512i t1 = _mm512_mask_mov_epi8(
            _mm512_xor_si512(_mm512_maskz_loadu_epi8(m1, src + 64), flip),
            (__mmask64)1 << 63, fillv);
        const __m512i *ib = idx + b * 4 * ng;
        __m512i acc[4];
        for (size_t sv = 0; sv < 4; sv++) {
            __m512i a = a0;
            for (size_t gi = 0; gi < ng; gi++) {
                a = _mm512_dpbusd_epi32(
                    a, _mm512_permutex2var_epi8(t0, ib[sv * ng + gi], t1),
                    wq[gi]);
            }
            acc[sv] = a;
        }
        const __m512i q = q8s_stage512_64(st, acc[0], acc[1], acc[2], acc[3]);
        const size_t o0 = g->len * b;
        const size_t cnt = op - o0 < g->len ? op - o0 : g->len;
        const __mmask64 sm =
            cnt >= 64 ? ~(__mmask64)0 : ((__mmask64)1 << cnt) - 1;
        _mm512_mask_storeu_epi8(yp + o0, sm, q);
    }
}

void kern_q8s_dwconv_vbmi(const struct kern_dwconv2d_shape *s, size_t oh,
                          size_t ow, const int8_t *x, int32_t x_zero,
                          const int8_t *w, const struct kern_q8_outstage *os,
                          int8_t *y, int8_t *scratch)
{
    struct vb_geom g;
    const bool ok = (os->scale || (os->mult && os->shift)) &&
                    q8s_outstage_no_min(os, s->channels) &&
                    vb_geom_of(s, oh, ow, &g) &&
                    g.nblocks * (4 * g.groups * 64 +
                                 sizeof(struct vb_block)) +
                            64 <=
                        q8s_dwconv_scratch(s);
    if (!ok) {
        kern_q8s_dwconv_vnni(s, oh, ow, x, x_zero, w, os, y, scratch);
        return;
    }
    __m512i *idx = (__m512i *)(void *)(((uintptr_t)scratch + 63) &
                                       ~(uintptr_t)63);
    struct vb_block *blk = (struct vb_block *)(void *)(idx + g.nblocks * 4 *
                                                             g.groups);
    vb_indices(s, oh, ow, &g, idx, blk);
    const size_t ch = s->channels, taps = s->kh * s->kw, ng = g.groups;
    const size_t ip = s->in_h * s->in_w, op = oh * ow;
    const __m512i fillv = _mm512_set1_epi8((char)(uint8_t)(x_zero + 128));
    const __mmask64 wm = ((__mmask64)1 << taps) - 1; /* taps <= 28 */
    const __m512i ones = _mm512_set1_epi8(1);
    for (size_t c = 0; c < ch; c++) {
        /* the channel's taps in order: dword gi holds taps 4 gi .. 4 gi +
         * 3, 0 past the last */
        const __m512i wv = _mm512_maskz_loadu_epi8(wm, w + c * taps);
        __m512i wq[VB_MAX_GROUPS];
        for (size_t gi = 0; gi < ng; gi++) {
            wq[gi] = _mm512_permutexvar_epi32(
                _mm512_set1_epi32((int)gi), wv);
        }
        /* wsum: the dwords' byte sums (1 x w by vpdpbusd), then across */
        const int32_t wsum = _mm512_reduce_add_epi32(
            _mm512_dpbusd_epi32(_mm512_setzero_si512(), ones, wv));
        const struct q8s_stage512 st = q8s_stage512_dw(os, c, taps);
        const __m512i a0 = q8s_dw_acc0(os, c, x_zero, wsum);
        for (size_t b = 0; b < s->batch; b++) {
            const int8_t *xp = x + (b * ch + c) * ip;
            int8_t *yp = y + (b * ch + c) * op;
            if (ng == 3) {
                vb_plane(op, &g, idx, blk, xp, wq, a0, &st, fillv, yp, 3);
            } else {
                vb_plane(op, &g, idx, blk, xp, wq, a0, &st, fillv, yp, ng);
            }
        }
    }
}
