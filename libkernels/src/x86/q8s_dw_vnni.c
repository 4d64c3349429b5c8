/* Static int8 depthwise convolution with AVX-512 VNNI: stride 1, 64
 * outputs of one channel at a time (stride 2 along the row: dw_rows2).
 *
 * The channel's plane is stored at its padded width pw as unsigned bytes
 * u = x + 128 (x xor 0x80), the border holding x_zero + 128, and the
 * outputs run along the flattened plane: output q = oy pw + ox reads its
 * window from q (the columns ox >= out_w are computed and dropped), so a
 * narrow map fills whole vectors across its rows. vpdpbusd sums four
 * u8 x s8 products per dword: a row of the kernel goes four taps at a
 * time, the weights (w[ky][4g .. 4g + 3], 0 past kw) broadcast, and the
 * activations of output o the four bytes u[o + 4g .. o + 4g + 3]. From
 * two loads D0 = u[q ..], D1 = u[q + 4 ..] taken as dwords, dword d of
 * (D0 >> 8r) | (D1 << (32 - 8r)) holds those of output q + 4d + r, so four
 * vectors carry 64 outputs, output q + 4d + r in dword d of vector r.
 *
 * Then sum_taps u w = sum_taps (x - x_zero) w + (x_zero + 128) wsum, with
 * wsum the sum of all the channel's weights, and a padded tap adds
 * (x_zero + 128) w: each accumulator starts at bias - (x_zero + 128) wsum
 * (modulo 2^32, as the reference's int32 sum), and ends equal to the C
 * reference's sum plus bias exactly. The output stage is the reference's
 * (TFLite's fixed-point one, q8s_mbqm, the high multiply in 64-bit lanes,
 * or ONNX Runtime's float one, q8s_stage512f_of; the fixed one in its
 * bounded form, 13 operations rather than 19, when the bias and the taps
 * keep every sum below 2^(29 - left shift) and the multiplier is >= 0:
 * q8s_stage512_bound), and the four vectors'
 * bytes are put back in order by shifts: byte r of dword d is output q +
 * 4d + r. A multiplier of INT32_MIN (whose doubled square saturates),
 * dilation along the row, strides
 * along the row other than 1 and 2, more than 64 taps and narrow maps of
 * many channels run the AVX2 path. */
#include <immintrin.h>
#include <stdbool.h>
#include <string.h>

#include "q8s.h"
#include "q8s_stage_avx512.h"
#include "transpose_u8.h"
#include "edgefit/kernels.h"

enum { DWV_MAX_TAPS = 64 };

/* dst[i] = src[i] ^ flip for n bytes, by masked vector moves (nothing
 * read or written past the n bytes). */
static inline void copy_row(void *dst, const int8_t *src, size_t n,
                            __m512i flip)
{
    for (size_t i = 0; i < n; i += 64) {
        const __mmask64 m =
            n - i >= 64 ? ~(__mmask64)0 : ((__mmask64)1 << (n - i)) - 1;
        _mm512_mask_storeu_epi8(
            (int8_t *)dst + i, m,
            _mm512_xor_si512(_mm512_maskz_loadu_epi8(m, src + i), flip));
    }
}

/* Stride 2 along the row, any stride down: per output row, 32 outputs at
 * a time straight into y. Output ox reads u[2 ox + 4 g ..]: dword d of D0
 * = u[2 ox0 ..] holds the four bytes of output ox0 + 2d, and dword d of
 * (D0 >> 16) | (D1 << 16), D1 = u[2 ox0 + 4 ..], those of ox0 + 2d + 1;
 * the two results interleave as the bytes of a 16-bit word per dword,
 * which vpmovdw narrows in order. */
static void dw_rows2(const struct kern_dwconv2d_shape *s, size_t oh,
                     size_t ow, const uint8_t *u, size_t pw,
                     const size_t *off, size_t nt, const __m512i *wq,
                     __m512i a0, const struct q8s_stage512 *st, int8_t *yp)
{
    const __m512i low8 = _mm512_set1_epi32(0xff);
    for (size_t oy = 0; oy < oh; oy++) {
        const uint8_t *base = u + oy * s->stride_h * pw;
        int8_t *yr = yp + oy * ow;
        for (size_t ox = 0; ox < ow; ox += 32) {
            __m512i acc0 = a0, acc1 = a0;
            for (size_t k = 0; k < nt; k++) {
                const uint8_t *p = base + 2 * ox + off[k];
                const __m512i d0 = _mm512_loadu_si512(p);
                const __m512i d1 = _mm512_loadu_si512(p + 4);
                const __m512i v1 = _mm512_or_si512(_mm512_srli_epi32(d0, 16),
                                                   _mm512_slli_epi32(d1, 16));
                acc0 = _mm512_dpbusd_epi32(acc0, d0, wq[k]);
                acc1 = _mm512_dpbusd_epi32(acc1, v1, wq[k]);
            }
            /* every value is in [-128, 127]: its low byte is it */
            const __m512i r0 =
                _mm512_and_si512(q8s_stage512_16(st, acc0), low8);
            const __m512i r1 =
                _mm512_and_si512(q8s_stage512_16(st, acc1), low8);
            const __m256i v = _mm512_cvtepi32_epi16(
                _mm512_or_si512(r0, _mm512_slli_epi32(r1, 8)));
            const size_t n = ow - ox < 32 ? ow - ox : 32;
            _mm256_mask_storeu_epi8(
                yr + ox, (__mmask32)(((uint64_t)1 << n) - 1), v);
        }
    }
}

/* ---- narrow maps, 32 channels at a time --------------------------------- */

/* y[j * ldy + i] = x[i * ldx + j] for an m x n byte block, 16 x 16 blocks
 * through SSE registers, the edges by masked loads and stores (so a map
 * of 9 or 36 pixels costs whole-block transposes, not a byte at a
 * time). */
static void transpose_masked(size_t m, size_t n, const int8_t *x, size_t ldx,
                             int8_t *y, size_t ldy)
{
    for (size_t i = 0; i < m; i += 16) {
        const size_t mr = m - i < 16 ? m - i : 16;
        const __mmask16 rmask = (__mmask16)((1u << mr) - 1);
        for (size_t j = 0; j < n; j += 16) {
            const size_t nc = n - j < 16 ? n - j : 16;
            const __mmask16 cmask = (__mmask16)((1u << nc) - 1);
            __m128i r[16];
            for (size_t t = 0; t < 16; t++) {
                r[t] = t < mr ? _mm_maskz_loadu_epi8(
                                    cmask, x + (i + t) * ldx + j)
                              : _mm_setzero_si128();
            }
            transpose16x16_u8(r);
            for (size_t t = 0; t < nc; t++) {
                _mm_mask_storeu_epi8(y + (j + t) * ldy + i, rmask, r[t]);
            }
        }
    }
}

/* Lane L of the "low" sums holds channel 8 (L / 4) + L % 4, of the "high"
 * ones channel 8 (L / 4) + 4 + L % 4: the order vpunpck{l,h}wd leave the
 * 32 channels of two taps in. */
static inline __m512i lanes_lo(void)
{
    return _mm512_setr_epi32(0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18, 19, 24,
                             25, 26, 27);
}

/* A per-channel int32 parameter of channels c0 .. c0 + cb - 1 (cb <= 32)
 * in the lane order of the low (hi 0) or high (hi 1) sums; lanes past cb
 * hold 0. per_channel 0: the one value everywhere. */
static inline __m512i chan_param(const int32_t *v, int per_channel, size_t c0,
                                 size_t cb, int hi)
{
    if (!per_channel) {
        return _mm512_set1_epi32(v[0]);
    }
    const __mmask16 m0 = (__mmask16)(cb >= 16 ? 0xffffu : (1u << cb) - 1);
    const __mmask16 m1 =
        (__mmask16)(cb >= 32 ? 0xffffu : cb > 16 ? (1u << (cb - 16)) - 1 : 0);
    const __m512i a = _mm512_maskz_loadu_epi32(m0, v + c0);
    const __m512i b = _mm512_maskz_loadu_epi32(m1, v + c0 + 16);
    const __m512i idx = _mm512_add_epi32(lanes_lo(),
                                         _mm512_set1_epi32(hi ? 4 : 0));
    return _mm512_permutex2var_epi32(a, idx, b);
}

/* The output stage of 16 lanes, each with its own channel's parameters:
 * the fixed-point one (q8s_mbqm: srdhm in 64-bit lanes, rdbpot by the
 * lane's mask, half mask and sign) or, fl, the float one; then the clamp
 * relative to zp and zp added. As q8s_stage512_16, per lane. */
struct dw_lanes {
    __m512i add, m, modd, lsh, rsh, mask, half;
    __m512 fs;
    /* the bounded form (q8s_stage512_bounded_r16, per lane; dw_all_bounded
     * says when it holds): the left shifts plus one, the even and odd
     * products' nudges and the rounding correction */
    __m512i lsh1, nud_ev, nud_od, sub1;
};

static inline __attribute__((always_inline)) __m512i
dw_lanes_stage(const struct dw_lanes *p, __m512i acc, int fl, int bounded,
               __m512i lo, __m512i hi, __m512 flo, __m512 fhi, __m512i zp)
{
    const __m512i x0 = _mm512_add_epi32(acc, p->add);
    if (fl) {
        __m512 f = _mm512_mul_ps(_mm512_cvtepi32_ps(x0), p->fs);
        f = _mm512_min_ps(_mm512_max_ps(f, flo), fhi);
        return _mm512_add_epi32(_mm512_cvtps_epi32(f), zp);
    }
    __m512i r;
    if (bounded) {
        const __m512i x1 = _mm512_sllv_epi32(x0, p->lsh1);
        r = _mm512_srav_epi32(q8s_bounded512_h(x0, x1, p->m, p->modd,
                                               p->nud_ev, p->nud_od, p->sub1),
                              p->rsh);
    } else {
        const __m512i h =
            q8s_srdhm512(_mm512_sllv_epi32(x0, p->lsh), p->m, p->modd);
        r = q8s_rdbpot512_round(h, _mm512_srav_epi32(h, p->rsh), p->mask,
                                p->half);
    }
    r = _mm512_min_epi32(_mm512_max_epi32(r, lo), hi);
    return _mm512_add_epi32(r, zp);
}

/* Whether the fixed stage's bounded form (q8s_stage512_bounded_r16) holds
 * for every channel: multipliers >= 0 and each sum, the bias plus at most
 * taps products of |x - x_zero| <= 255 and |w| <= 128, below 2^(29 -
 * lsh). One pass of reductions over the channels, not one per block. */
static int dw_all_bounded(const struct kern_q8_outstage *os, size_t ch,
                          size_t taps)
{
    const size_t np = os->per_channel ? ch : 1;
    int32_t min_mult = INT32_MAX, max_shift = INT32_MIN;
    for (size_t c = 0; c < np; c++) {
        min_mult = os->mult[c] < min_mult ? os->mult[c] : min_mult;
        max_shift = os->shift[c] > max_shift ? os->shift[c] : max_shift;
    }
    int64_t max_bias = 0;
    for (size_t c = 0; os->bias && c < ch; c++) {
        const int64_t b = os->bias[c];
        max_bias = (b < 0 ? -b : b) > max_bias ? (b < 0 ? -b : b) : max_bias;
    }
    const int32_t lsh = max_shift > 0 ? max_shift : 0;
    return min_mult >= 0 && lsh <= 28 &&
           max_bias + (int64_t)taps * 255 * 128 < ((int64_t)1 << (29 - lsh));
}

static struct dw_lanes dw_lanes_of(const struct kern_q8_outstage *os,
                                   size_t c0, size_t cb, int hi, int bounded)
{
    struct dw_lanes p;
    p.add = os->bias ? chan_param(os->bias, 1, c0, cb, hi)
                     : _mm512_setzero_si512();
    p.m = p.modd = p.lsh = p.rsh = p.mask = p.half = _mm512_setzero_si512();
    p.lsh1 = p.nud_ev = p.nud_od = p.sub1 = _mm512_setzero_si512();
    p.fs = _mm512_setzero_ps();
    if (os->scale) {
        /* the scales' bits through the integer permutes */
        p.fs = _mm512_castsi512_ps(chan_param(
            (const int32_t *)(const void *)os->scale, os->per_channel, c0,
            cb, hi));
        return p;
    }
    const __m512i sh = chan_param((const int32_t *)(const void *)os->shift,
                                  os->per_channel, c0, cb, hi);
    const __m512i zero = _mm512_setzero_si512(), one = _mm512_set1_epi32(1);
    p.m = chan_param(os->mult, os->per_channel, c0, cb, hi);
    p.modd = _mm512_srli_epi64(p.m, 32);
    p.lsh = _mm512_max_epi32(sh, zero);
    p.rsh = _mm512_max_epi32(_mm512_sub_epi32(zero, sh), zero);
    p.mask = _mm512_sub_epi32(_mm512_sllv_epi32(one, p.rsh), one);
    p.half = _mm512_srli_epi32(p.mask, 1);
    if (!bounded) {
        return p;
    }
    const __m512i hv = _mm512_add_epi32(p.half, _mm512_min_epi32(p.rsh, one));
    const __m512i n31 = _mm512_set1_epi64((int64_t)1 << 31);
    p.lsh1 = _mm512_add_epi32(p.lsh, one);
    p.nud_ev = _mm512_add_epi64(_mm512_slli_epi64(hv, 32), n31);
    p.nud_od = _mm512_add_epi64(
        _mm512_and_si512(hv, _mm512_set1_epi64((int64_t)0xffffffff00000000)),
        n31);
    p.sub1 = _mm512_min_epi32(p.rsh, one);
    return p;
}

/* The weights of taps t0 and t0 + 1 (0 past taps) of the 32 channels from
 * c0 (none past ch), as int16 pairs in the lanes of the low or high sums:
 * one dword gather per channel at the weights' byte e = min(t0, taps - 4)
 * of the channel (taps >= 4, so it stays within the channel's weights),
 * the two bytes sign-extended from their places t0 - e and t0 + 1 - e. */
static inline __m512i dw_wpair(const int8_t *w, size_t taps, size_t c0,
                               size_t ch, size_t t0, int hi)
{
    const size_t e = t0 < taps - 4 ? t0 : taps - 4;
    const __m512i c = _mm512_add_epi32(
        _mm512_add_epi32(lanes_lo(), _mm512_set1_epi32(hi ? 4 : 0)),
        _mm512_set1_epi32((int)c0));
    const __mmask16 live =
        _mm512_cmplt_epi32_mask(c, _mm512_set1_epi32((int)ch));
    const __m512i idx = _mm512_add_epi32(
        _mm512_mullo_epi32(c, _mm512_set1_epi32((int)taps)),
        _mm512_set1_epi32((int)e));
    const __m512i g = _mm512_mask_i32gather_epi32(_mm512_setzero_si512(),
                                                  live, idx, w, 1);
    const int s0 = (int)(t0 - e);
    const __m512i b0 = _mm512_srai_epi32(
        _mm512_sll_epi32(g, _mm_cvtsi32_si128(24 - 8 * s0)), 24);
    __m512i b1 = _mm512_setzero_si512();
    if (t0 + 1 < taps) {
        b1 = _mm512_srai_epi32(
            _mm512_sll_epi32(g, _mm_cvtsi32_si128(16 - 8 * s0)), 24);
    }
    return _mm512_or_si512(_mm512_and_si512(b0, _mm512_set1_epi32(0xffff)),
                           _mm512_slli_epi32(b1, 16));
}

/* dw_chan32's output pixels of one image and block, from the padded
 * int16 plane d into tb (32 bytes a pixel); bounded: the output stage's
 * bounded form (a constant in each call, so the branch leaves the loop). */
static inline __attribute__((always_inline)) void
chan32_pixels(const struct kern_dwconv2d_shape *s, size_t oh, size_t ow,
              size_t pw, const int16_t *d, const size_t *off, size_t npair,
              const __m512i *wlo, const __m512i *whi,
              const struct dw_lanes *plo, const struct dw_lanes *phi, int fl,
              int bounded, __m512i lo, __m512i hi, __m512 flo, __m512 fhi,
              __m512i vzp, int8_t *tb)
{
    for (size_t oy = 0; oy < oh; oy++) {
        for (size_t ox = 0; ox < ow; ox++) {
            const int16_t *base =
                d + 32 * (oy * s->stride_h * pw + ox * s->stride_w);
            __m512i al = _mm512_setzero_si512();
            __m512i ah = _mm512_setzero_si512();
            for (size_t p = 0; p < npair; p++) {
                const __m512i xa = _mm512_loadu_si512(
                    base + off[2 * p]);
                const __m512i xb = _mm512_loadu_si512(
                    base + off[2 * p + 1]);
                al = _mm512_dpwssd_epi32(
                    al, _mm512_unpacklo_epi16(xa, xb), wlo[p]);
                ah = _mm512_dpwssd_epi32(
                    ah, _mm512_unpackhi_epi16(xa, xb), whi[p]);
            }
            const __m512i rl =
                dw_lanes_stage(plo, al, fl, bounded, lo, hi, flo, fhi, vzp);
            const __m512i rh =
                dw_lanes_stage(phi, ah, fl, bounded, lo, hi, flo, fhi, vzp);
            /* in [-128, 127]: vpmovwb's truncation is exact */
            _mm256_storeu_si256(
                (__m256i *)(void *)(tb + 32 * (oy * ow + ox)),
                _mm512_cvtepi16_epi8(_mm512_packs_epi32(rl, rh)));
        }
    }
}

/* Narrow maps (out_w < 16), 32 channels at a time, AVX-512 VNNI: as the
 * AVX2 path's dw_chan16 (q8s_avx2.c) with twice the channels a vector.
 * Per image and block of 32 channels, the block is transposed to
 * channel-last (32 bytes a pixel) and widened into a padded plane of
 * int16 (x - x_zero; the border 0, as the C reference's skipped taps).
 * An output pixel is 32 channels' sums in two vectors: the taps go two at
 * a time, the two taps' vectors interleaved by vpunpck{l,h}wd and summed
 * with the weights interleaved alike by vpdpwssd (each product fits
 * int16 x int16, the pair's sum and the sum over taps are exact in int32:
 * |acc| <= 255 128 taps < 2^31, so the sums are the C reference's). The
 * low sums hold channels 8k..8k+3 of each 128-bit lane k, the high ones
 * 8k+4..8k+7: the output stage takes its per-channel parameters permuted
 * into that order (dw_lanes_of: the same bits as the reference), and
 * vpackssdw of the two puts the 32 results back in channel order. The
 * weights are gathered once per block, the border zeroed once per call;
 * the 32 bytes of each output pixel are transposed back to NCHW planes.
 * Any stride and dilation (the window is a set of pixel offsets); kernels
 * of 4 to 64 taps. Lanes past the last channel compute on stale data and
 * are not stored. */
static void dw_chan32(const struct kern_dwconv2d_shape *s, size_t oh,
                      size_t ow, const int8_t *x, int32_t x_zero,
                      const int8_t *w, const struct kern_q8_outstage *os,
                      int8_t *y, int8_t *scratch)
{
    const size_t ih = s->in_h, iw = s->in_w, ch = s->channels;
    const size_t taps = s->kh * s->kw;
    const int fl = os->scale != NULL;
    const size_t ip = ih * iw, op = oh * ow;
    const size_t pw = s->pad_left + iw + s->pad_right;
    const size_t rows = s->pad_top + ih + s->pad_bottom;
    /* q8s_dwconv_scratch: 64 bytes a padded pixel for the int16 plane,
     * then 32 a pixel shared by the input's and the output's transposes
     * (ip and op are both at most rows * pw) */
    int16_t *d = (int16_t *)(void *)scratch;
    int8_t *tb = scratch + 64 * rows * pw;
    memset(d, 0, 64 * rows * pw);
    memset(tb, 0, 32 * (ip > op ? ip : op));
    const size_t npair = (taps + 1) / 2;
    size_t off[DWV_MAX_TAPS + 1];
    q8s_dw_tap_offsets(s, pw, 32, off);
    const __m512i zp16 = _mm512_set1_epi16((short)x_zero);
    const __m512i vzp = _mm512_set1_epi32(os->zero_point);
    const __m512i lo = _mm512_set1_epi32(os->qmin - os->zero_point);
    const __m512i hi = _mm512_set1_epi32(os->qmax - os->zero_point);
    const __m512 flo = _mm512_set1_ps((float)(os->qmin - os->zero_point));
    const __m512 fhi = _mm512_set1_ps((float)(os->qmax - os->zero_point));
    __m512i wlo[DWV_MAX_TAPS / 2], whi[DWV_MAX_TAPS / 2];
    const int bounded = !fl && dw_all_bounded(os, ch, taps);
    for (size_t c0 = 0; c0 < ch; c0 += 32) {
        const size_t cb = ch - c0 < 32 ? ch - c0 : 32;
        for (size_t p = 0; p < npair; p++) {
            wlo[p] = dw_wpair(w, taps, c0, ch, 2 * p, 0);
            whi[p] = dw_wpair(w, taps, c0, ch, 2 * p, 1);
        }
        const struct dw_lanes plo = dw_lanes_of(os, c0, cb, 0, bounded);
        const struct dw_lanes phi = dw_lanes_of(os, c0, cb, 1, bounded);
        for (size_t b = 0; b < s->batch; b++) {
            /* tb[i][j] = x[b][c0 + j][i], then the padded int16 plane */
            transpose_masked(cb, ip, x + (b * ch + c0) * ip, ip, tb, 32);
            for (size_t iy = 0; iy < ih; iy++) {
                int16_t *dr = d + 32 * ((s->pad_top + iy) * pw + s->pad_left);
                const int8_t *tr = tb + 32 * iy * iw;
                for (size_t i = 0; i < iw; i++) {
                    _mm512_storeu_si512(
                        dr + 32 * i,
                        _mm512_sub_epi16(
                            _mm512_cvtepi8_epi16(_mm256_loadu_si256(
                                (const __m256i *)(const void *)(tr +
                                                                32 * i))),
                            zp16));
                }
            }
            if (fl) {
                chan32_pixels(s, oh, ow, pw, d, off, npair, wlo, whi, &plo,
                              &phi, 1, 0, lo, hi, flo, fhi, vzp, tb);
            } else if (bounded) {
                chan32_pixels(s, oh, ow, pw, d, off, npair, wlo, whi, &plo,
                              &phi, 0, 1, lo, hi, flo, fhi, vzp, tb);
            } else {
                chan32_pixels(s, oh, ow, pw, d, off, npair, wlo, whi, &plo,
                              &phi, 0, 0, lo, hi, flo, fhi, vzp, tb);
            }
            transpose_masked(op, cb, tb, 32, y + (b * ch + c0) * op, op);
        }
    }
}

void kern_q8s_dwconv_vnni(const struct kern_dwconv2d_shape *s, size_t oh,
                          size_t ow, const int8_t *x, int32_t x_zero,
                          const int8_t *w, const struct kern_q8_outstage *os,
                          int8_t *y, int8_t *scratch)
{
    const size_t dh = s->dilation_h ? s->dilation_h : 1;
    const size_t dw = s->dilation_w ? s->dilation_w : 1;
    const size_t kh = s->kh, kw = s->kw, taps = kh * kw;
    /* narrow maps of 8 channels or more: the AVX2 path's 16 channels at a
     * time measured faster (DS-CNN's 25 x 5, MobileNet's 6 x 6, 3 x 3) */
    const size_t sw = s->stride_w;
    const bool flat = sw == 1 && s->stride_h == 1;
    const bool stage_ok = (os->scale || (os->mult && os->shift)) &&
                          q8s_outstage_no_min(os, s->channels);
    const bool ok = (ow >= 16 || s->channels < 8) && (flat || sw == 2) &&
                    dw == 1 && taps <= DWV_MAX_TAPS && stage_ok && oh && ow;
    const size_t ih = s->in_h, iw = s->in_w, ch = s->channels;
    const size_t pw = s->pad_left + iw + s->pad_right;
    const size_t rows = s->pad_top + ih + s->pad_bottom;
    const size_t ng = (kw + 3) / 4; /* groups of 4 taps along a row */
    /* flat: reads reach 4 ng + 67 bytes past the plane (the last vector
     * of outputs, from its last row and group); the outputs on the padded
     * width, whole vectors, follow. Stride 2: a row's last block of 32
     * outputs reads from 2 ox + 4 g up to 68 bytes on, at most kw + 4 ng
     * + 64 past the row's end (2 (ow - 1) + kw <= pw) */
    const size_t plane = rows * pw + 4 * ng + 192;
    const size_t nq = flat ? (oh - 1) * pw + ow : 0;
    const size_t nq64 = (nq + 63) / 64 * 64;
    /* narrow maps of 8 channels or more: 32 channels at a time
     * (dw_chan32), kernels of 4 taps or more (the weights' gather reads 4
     * bytes of a channel) */
    if (ow < 16 && s->channels >= 8 && taps >= 4 && taps <= DWV_MAX_TAPS &&
        oh && stage_ok) {
        dw_chan32(s, oh, ow, x, x_zero, w, os, y, scratch);
        return;
    }
    if (!ok || plane + nq64 > q8s_dwconv_scratch(s)) {
        kern_q8s_dwconv_avx2(s, oh, ow, x, x_zero, w, os, y, scratch);
        return;
    }
    uint8_t *u = (uint8_t *)scratch;
    int8_t *vout = scratch + plane;
    /* the border keeps x_zero + 128 for every channel */
    memset(u, (int)(uint8_t)(x_zero + 128), plane);
    size_t off[DWV_MAX_TAPS];
    size_t nt = 0;
    for (size_t ky = 0; ky < kh; ky++) {
        for (size_t g = 0; g < ng; g++) {
            off[nt++] = ky * dh * pw + 4 * g;
        }
    }
    const __m512i flip = _mm512_set1_epi8((char)0x80);
    const __m512i low8 = _mm512_set1_epi32(0xff);
    __m512i wq[DWV_MAX_TAPS];
    for (size_t b = 0; b < s->batch; b++) {
        for (size_t c = 0; c < ch; c++) {
            const int8_t *xp = x + (b * ch + c) * ih * iw;
            int8_t *yp = y + (b * ch + c) * oh * ow;
            for (size_t iy = 0; iy < ih; iy++) {
                copy_row(u + (s->pad_top + iy) * pw + s->pad_left,
                         xp + iy * iw, iw, flip);
            }
            const int8_t *wc = w + c * taps;
            int32_t wsum = 0;
            size_t t = 0;
            for (size_t ky = 0; ky < kh; ky++) {
                for (size_t g = 0; g < ng; g++, t++) {
                    uint32_t quad = 0;
                    for (size_t i = 0; i < 4 && 4 * g + i < kw; i++) {
                        const int8_t v = wc[ky * kw + 4 * g + i];
                        quad |= (uint32_t)(uint8_t)v << (8 * i);
                        wsum += v;
                    }
                    wq[t] = _mm512_set1_epi32((int32_t)quad);
                }
            }
            const struct q8s_stage512 st = q8s_stage512_dw(os, c, taps);
            const __m512i a0 = q8s_dw_acc0(os, c, x_zero, wsum);
            if (!flat) {
                dw_rows2(s, oh, ow, u, pw, off, nt, wq, a0, &st, yp);
                continue;
            }
            for (size_t q = 0; q < nq; q += 64) {
                __m512i acc0 = a0, acc1 = a0, acc2 = a0, acc3 = a0;
                for (size_t k = 0; k < nt; k++) {
                    const uint8_t *p = u + q + off[k];
                    const __m512i d0 = _mm512_loadu_si512(p);
                    const __m512i d1 = _mm512_loadu_si512(p + 4);
                    const __m512i v1 = _mm512_or_si512(
                        _mm512_srli_epi32(d0, 8), _mm512_slli_epi32(d1, 24));
                    const __m512i v2 = _mm512_or_si512(
                        _mm512_srli_epi32(d0, 16), _mm512_slli_epi32(d1, 16));
                    const __m512i v3 = _mm512_or_si512(
                        _mm512_srli_epi32(d0, 24), _mm512_slli_epi32(d1, 8));
                    acc0 = _mm512_dpbusd_epi32(acc0, d0, wq[k]);
                    acc1 = _mm512_dpbusd_epi32(acc1, v1, wq[k]);
                    acc2 = _mm512_dpbusd_epi32(acc2, v2, wq[k]);
                    acc3 = _mm512_dpbusd_epi32(acc3, v3, wq[k]);
                }
                /* every value is in [-128, 127]: its low byte is it */
                const __m512i r0 =
                    _mm512_and_si512(q8s_stage512_16(&st, acc0), low8);
                const __m512i r1 =
                    _mm512_and_si512(q8s_stage512_16(&st, acc1), low8);
                const __m512i r2 =
                    _mm512_and_si512(q8s_stage512_16(&st, acc2), low8);
                const __m512i r3 = q8s_stage512_16(&st, acc3);
                const __m512i v = _mm512_or_si512(
                    _mm512_or_si512(r0, _mm512_slli_epi32(r1, 8)),
                    _mm512_or_si512(_mm512_slli_epi32(r2, 16),
                                    _mm512_slli_epi32(r3, 24)));
                _mm512_storeu_si512(vout + q, v);
            }
            if (pw == ow) {
                memcpy(yp, vout, oh * ow);
                continue;
            }
            /* a call to memcpy per row of a few dozen bytes was a quarter
             * of a 28 x 28 layer */
            for (size_t oy = 0; oy < oh; oy++) {
                copy_row(yp + oy * ow, vout + oy * pw, ow,
                         _mm512_setzero_si512());
            }
        }
    }
}
