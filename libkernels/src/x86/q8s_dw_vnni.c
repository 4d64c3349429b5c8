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
 * or ONNX Runtime's float one, q8s_stage512f_of), and the four vectors'
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
#include "edgefit/kernels.h"

/* The output stage of one channel over 16 lanes (q8s_stage_avx512.h), from
 * the reference's one signed shift: left when positive, right otherwise. */
static inline struct q8s_stage512 dstage_of(int32_t mult, int shift,
                                            int32_t zp, int32_t qmin,
                                            int32_t qmax)
{
    return q8s_stage512_of(mult, shift > 0 ? shift : 0,
                           shift > 0 ? 0 : -shift, zp, qmin, qmax);
}

enum { DWV_MAX_TAPS = 64 };

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
    bool ok = (ow >= 16 || s->channels < 8) && (flat || sw == 2) && dw == 1 &&
              taps <= DWV_MAX_TAPS && (os->scale || (os->mult && os->shift)) &&
              oh && ow;
    /* the fixed stage's high multiply has no saturating case */
    for (size_t c = 0; ok && !os->scale &&
                       c < (os->per_channel ? s->channels : 1);
         c++) {
        ok = os->mult[c] != INT32_MIN;
    }
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
                uint8_t *dr = u + (s->pad_top + iy) * pw + s->pad_left;
                const int8_t *xr = xp + iy * iw;
                for (size_t i = 0; i < iw; i += 64) {
                    const __mmask64 m = iw - i >= 64
                                            ? ~(__mmask64)0
                                            : ((__mmask64)1 << (iw - i)) - 1;
                    _mm512_mask_storeu_epi8(
                        dr + i, m,
                        _mm512_xor_si512(_mm512_maskz_loadu_epi8(m, xr + i),
                                         flip));
                }
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
            const size_t pc = os->per_channel ? c : 0;
            const struct q8s_stage512 st =
                os->scale ? q8s_stage512f_of(os->scale[pc], os->zero_point,
                                             os->qmin, os->qmax)
                          : dstage_of(os->mult[pc], os->shift[pc],
                                      os->zero_point, os->qmin, os->qmax);
            /* bias - (x_zero + 128) wsum, wrapping as the int32 sums do */
            const uint32_t init =
                (uint32_t)(os->bias ? os->bias[c] : 0) -
                (uint32_t)((x_zero + 128) * wsum);
            const __m512i a0 = _mm512_set1_epi32((int32_t)init);
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
            for (size_t oy = 0; oy < oh; oy++) {
                memcpy(yp + oy * ow, vout + oy * pw, ow);
            }
        }
    }
}
