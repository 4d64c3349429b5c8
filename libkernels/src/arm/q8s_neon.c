/* The static int8 family (q8s) with NEON: the integer output stage
 * (requant), its float form (requantf), quantisation, the int8 add and
 * rescale, and the int8 max pool. Every result is the C reference's, bit
 * for bit:
 *   - gemmlowp's SaturatingRoundingDoublingHighMul is sqrdmulh itself
 *     (floor((2ab + 2^31) / 2^32), INT32_MIN squared saturating);
 *   - RoundingDivideByPOT is srshl by -e after adding -1 to negative
 *     values (srshl rounds half up, the reference half away from zero),
 *     gemmlowp's own NEON fix-up; the saturating add keeps INT32_MIN, whose
 *     remainder is 0 anyway;
 *   - rintf is the 1.5 * 2^23 addition (round to nearest even) on values
 *     already clamped to a few hundred;
 *   - the max pool takes the same window maximum, order being irrelevant
 *     to an integer maximum.
 * Tails go through the C reference. The depthwise convolution sums exact
 * int32 products (its own comment says why they are the reference's);
 * the transpose keeps its C path. The int8 lowering of the static int8
 * convolution (kern_im2col_s8, a conv family entry) is im2col_s8_neon.c. */
#include <arm_neon.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "conv.h"
#include "neon_compat.h"
#include "pool_geom.h"
#include "q8s.h"

#include "edgefit/kernels.h"

/* ---- helpers ------------------------------------------------------------ */

/* RoundingDivideByPOT by per-lane exponents e in [0, 31], given as -e. */
static inline int32x4_t rdbpot4(int32x4_t x, int32x4_t neg_e)
{
    const int32x4_t fixup = vshrq_n_s32(vandq_s32(x, neg_e), 31);
    return vrshlq_s32(vqaddq_s32(x, fixup), neg_e);
}

/* MultiplyByQuantizedMultiplier with one multiplier and shift. */
static inline int32x4_t mbqm4(int32x4_t x, int32_t mult, int shift)
{
    const int ls = shift > 0 ? shift : 0, rs = shift > 0 ? 0 : -shift;
    x = vshlq_s32(x, vdupq_n_s32(ls));
    return rdbpot4(vqrdmulhq_s32(x, vdupq_n_s32(mult)), vdupq_n_s32(-rs));
}

/* r + zp clamped to [qmin, qmax] (qmin, qmax within int8; the saturating
 * add clamps as the reference's 64-bit sum does). */
static inline int32x4_t clamp_zp(int32x4_t r, int32_t zp, int32_t qmin,
                                 int32_t qmax)
{
    const int32x4_t v = vqaddq_s32(r, vdupq_n_s32(zp));
    return vminq_s32(vmaxq_s32(v, vdupq_n_s32(qmin)), vdupq_n_s32(qmax));
}

/* Eight int32 within int8's range to eight int8. */
static inline int8x8_t narrow8(int32x4_t a, int32x4_t b)
{
    return vmovn_s16(vcombine_s16(vmovn_s32(a), vmovn_s32(b)));
}

/* Sixteen int8 less a zero point, as four int32 vectors. */
static inline void widen16(int8x16_t v, int32_t zero, int32x4_t out[4])
{
    const int16x8_t lo = vmovl_s8(vget_low_s8(v));
    const int16x8_t hi = vmovl_s8(vget_high_s8(v));
    const int32x4_t z = vdupq_n_s32(zero);
    out[0] = vsubq_s32(vmovl_s16(vget_low_s16(lo)), z);
    out[1] = vsubq_s32(vmovl_s16(vget_high_s16(lo)), z);
    out[2] = vsubq_s32(vmovl_s16(vget_low_s16(hi)), z);
    out[3] = vsubq_s32(vmovl_s16(vget_high_s16(hi)), z);
}

/* rintf of values with |v| < 2^22: the addition rounds to nearest even. */
static inline float32x4_t round_even(float32x4_t v)
{
    const float32x4_t magic = vdupq_n_f32(0x1.8p23f);
    return vsubq_f32(vaddq_f32(v, magic), magic);
}

/* The reference's f < lo ? lo : f > hi ? hi : f. */
static inline float32x4_t clamp_f(float32x4_t f, float32x4_t lo,
                                  float32x4_t hi)
{
    f = vbslq_f32(vcgtq_f32(f, hi), hi, f);
    return vbslq_f32(vcltq_f32(f, lo), lo, f);
}

/* ---- output stages ------------------------------------------------------ */

static inline int32x4_t requant4(const int32_t *acc, const int32_t *add,
                                 const int32_t *mult, const int32_t *lsh,
                                 const int32_t *rsh, int32_t zp,
                                 int32_t qmin, int32_t qmax)
{
    int32x4_t x = vaddq_s32(vld1q_s32(acc), vld1q_s32(add));
    x = vshlq_s32(x, vld1q_s32(lsh));
    const int32x4_t h = vqrdmulhq_s32(x, vld1q_s32(mult));
    return clamp_zp(rdbpot4(h, vnegq_s32(vld1q_s32(rsh))), zp, qmin, qmax);
}

void kern_q8s_requant_neon(size_t n, const int32_t *acc, const int32_t *add,
                           const int32_t *mult, const int32_t *lsh,
                           const int32_t *rsh, int32_t zp, int32_t qmin,
                           int32_t qmax, int8_t *q)
{
    size_t j = 0;
    for (; j + 8 <= n; j += 8) {
        const int32x4_t a = requant4(acc + j, add + j, mult + j, lsh + j,
                                     rsh + j, zp, qmin, qmax);
        const int32x4_t b = requant4(acc + j + 4, add + j + 4, mult + j + 4,
                                     lsh + j + 4, rsh + j + 4, zp, qmin, qmax);
        vst1_s8(q + j, narrow8(a, b));
    }
    if (j < n) {
        kern_q8s_requant_c(n - j, acc + j, add + j, mult + j, lsh + j,
                           rsh + j, zp, qmin, qmax, q + j);
    }
}

void kern_q8s_requant_tile_neon(size_t m, size_t n, const int32_t *acc,
                                size_t lda, const int32_t *add,
                                const int32_t *mult, const int32_t *lsh,
                                const int32_t *rsh, int32_t zp, int32_t qmin,
                                int32_t qmax, int8_t *q, size_t ldq)
{
    for (size_t i = 0; i < m; i++) {
        kern_q8s_requant_neon(n, acc + i * lda, add, mult, lsh, rsh, zp, qmin,
                              qmax, q + i * ldq);
    }
}

static inline int32x4_t requantf4(const int32_t *acc, const int32_t *add,
                                  const float *scale, float32x4_t lo,
                                  float32x4_t hi, int32x4_t zp)
{
    const int32x4_t x = vaddq_s32(vld1q_s32(acc), vld1q_s32(add));
    float32x4_t f = vmulq_f32(vcvtq_f32_s32(x), vld1q_f32(scale));
    f = clamp_f(f, lo, hi);
    return vaddq_s32(vcvtq_s32_f32(round_even(f)), zp);
}

void kern_q8s_requantf_neon(size_t n, const int32_t *acc,
                            const int32_t *add, const float *scale,
                            int32_t zp, int32_t qmin, int32_t qmax,
                            int8_t *q)
{
    const float32x4_t lo = vdupq_n_f32((float)(qmin - zp));
    const float32x4_t hi = vdupq_n_f32((float)(qmax - zp));
    const int32x4_t z = vdupq_n_s32(zp);
    size_t j = 0;
    for (; j + 8 <= n; j += 8) {
        const int32x4_t a = requantf4(acc + j, add + j, scale + j, lo, hi, z);
        const int32x4_t b =
            requantf4(acc + j + 4, add + j + 4, scale + j + 4, lo, hi, z);
        vst1_s8(q + j, narrow8(a, b));
    }
    if (j < n) {
        kern_q8s_requantf_c(n - j, acc + j, add + j, scale + j, zp, qmin,
                            qmax, q + j);
    }
}

void kern_q8s_requantf_tile_neon(size_t m, size_t n, const int32_t *acc,
                                 size_t lda, const int32_t *add,
                                 const float *scale, int32_t zp,
                                 int32_t qmin, int32_t qmax, int8_t *q,
                                 size_t ldq)
{
    for (size_t i = 0; i < m; i++) {
        kern_q8s_requantf_neon(n, acc + i * lda, add, scale, zp, qmin, qmax,
                               q + i * ldq);
    }
}

/* ---- quantisation ------------------------------------------------------- */

/* The reference: v = x / scale; NaN gives the zero point; else rintf(v)
 * + zero clamped to [-128, 127]. v is clamped to +-1000 first (so the
 * rounding trick holds): every value beyond clamps the same way. */
static inline int32x4_t quant4(const float *x, float32x4_t scale,
                               float32x4_t z, int32x4_t zi)
{
    const float32x4_t v = kn_divq_f32(vld1q_f32(x), scale);
    const uint32x4_t ok = vceqq_f32(v, v);
    const float32x4_t big = vdupq_n_f32(1000.0f);
    const float32x4_t r =
        vminq_f32(vmaxq_f32(v, vnegq_f32(big)), big); /* NaN: masked below */
    float32x4_t f = vaddq_f32(round_even(r), z);
    f = vminq_f32(vmaxq_f32(f, vdupq_n_f32(-128.0f)), vdupq_n_f32(127.0f));
    return vbslq_s32(ok, vcvtq_s32_f32(f), zi);
}

void kern_q8s_quant_neon(const float *x, size_t n, float scale,
                         int32_t zero, int8_t *q)
{
    const float32x4_t sv = vdupq_n_f32(scale), z = vdupq_n_f32((float)zero);
    const int32x4_t zi = vdupq_n_s32(zero);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const int32x4_t a = quant4(x + i, sv, z, zi);
        const int32x4_t b = quant4(x + i + 4, sv, z, zi);
        vst1_s8(q + i, narrow8(a, b));
    }
    if (i < n) {
        kern_q8s_quant_c(x + i, n - i, scale, zero, q + i);
    }
}

/* ---- add and rescale ---------------------------------------------------- */

void kern_q8s_add_neon(size_t n, const int8_t *a, const int8_t *b,
                       const struct kern_q8_add_params *p, int8_t *out)
{
    const int32x4_t ls = vdupq_n_s32(p->left_shift);
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        int32x4_t xa[4], xb[4], r[4];
        widen16(vld1q_s8(a + i), p->a_zero, xa);
        widen16(vld1q_s8(b + i), p->b_zero, xb);
        for (int k = 0; k < 4; k++) {
            /* |a - zero| <= 255: the shift by at most 20 cannot overflow */
            const int32x4_t sa = mbqm4(vshlq_s32(xa[k], ls), p->a_mult,
                                       p->a_shift);
            const int32x4_t sb = mbqm4(vshlq_s32(xb[k], ls), p->b_mult,
                                       p->b_shift);
            r[k] = clamp_zp(mbqm4(vaddq_s32(sa, sb), p->out_mult,
                                  p->out_shift),
                            p->out_zero, p->qmin, p->qmax);
        }
        vst1q_s8(out + i, vcombine_s8(narrow8(r[0], r[1]),
                                      narrow8(r[2], r[3])));
    }
    if (i < n) {
        kern_q8s_add_c(n - i, a + i, b + i, p, out + i);
    }
}

void kern_q8s_rescale_neon(size_t n, const int8_t *x, int32_t x_zero,
                           const struct kern_q8_rescale *r, int8_t *y)
{
    const int32x4_t ls = vdupq_n_s32(r->left_shift);
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        int32x4_t d[4], v[4];
        widen16(vld1q_s8(x + i), x_zero, d);
        for (int k = 0; k < 4; k++) {
            v[k] = clamp_zp(mbqm4(vshlq_s32(d[k], ls), r->mult, r->shift),
                            r->out_zero, r->qmin, r->qmax);
        }
        vst1q_s8(y + i, vcombine_s8(narrow8(v[0], v[1]),
                                    narrow8(v[2], v[3])));
    }
    if (i < n) {
        kern_q8s_rescale_c(n - i, x + i, x_zero, r, y + i);
    }
}

/* ---- depthwise convolution ---------------------------------------------- */

/* One channel's output stage on four sums: the integer stage (requant4's
 * steps with the channel's parameters broadcast) or the float one
 * (requantf4's). */
struct dwq_stage {
    int fl;
    int32x4_t add, mult, lsh, nrsh, zpv;
    float32x4_t scale, lo, hi;
    int32_t zp, qmin, qmax;
};

static inline int32x4_t dwq_requant4(int32x4_t acc, const struct dwq_stage *st)
{
    const int32x4_t x = vaddq_s32(acc, st->add);
    if (st->fl) {
        float32x4_t f = vmulq_f32(vcvtq_f32_s32(x), st->scale);
        f = clamp_f(f, st->lo, st->hi);
        return vaddq_s32(vcvtq_s32_f32(round_even(f)), st->zpv);
    }
    const int32x4_t h = vqrdmulhq_s32(vshlq_s32(x, st->lsh), st->mult);
    return clamp_zp(rdbpot4(h, st->nrsh), st->zp, st->qmin, st->qmax);
}

/* Eight outputs of one channel, ox0 .. ox0 + 7 of the output row whose
 * windows start at row r of the padded plane (rw int16 a row): each tap
 * is one load of eight (x - x_zero) (stride 2: the even lanes of a
 * de-interleaving load) and two widening multiply-adds by the tap's
 * weight. kh, kw and sw are constants in the common shapes (the calls
 * below), so that the tap loops unroll and the weights stay in
 * registers. */
static inline __attribute__((always_inline)) int8x8_t
dwq_block8(const int16_t *r, size_t rw, const int8_t *wc, size_t kh,
           size_t kw, size_t sw, size_t dh, size_t dw,
           const struct dwq_stage *st)
{
    int32x4_t a0 = vdupq_n_s32(0), a1 = vdupq_n_s32(0);
    for (size_t ky = 0; ky < kh; ky++) {
        const int16_t *rk = r + ky * dh * rw;
        for (size_t kx = 0; kx < kw; kx++) {
            const int16_t *p = rk + kx * dw;
            const int16x8_t v = sw == 1 ? vld1q_s16(p) : vld2q_s16(p).val[0];
            const int16_t wt = wc[ky * kw + kx];
            a0 = vmlal_n_s16(a0, vget_low_s16(v), wt);
            a1 = vmlal_n_s16(a1, vget_high_s16(v), wt);
        }
    }
    return narrow8(dwq_requant4(a0, st), dwq_requant4(a1, st));
}

static inline __attribute__((always_inline)) void
dwq_channel(const int16_t *d, size_t rw, size_t oh, size_t ow, size_t sh,
            const int8_t *wc, size_t kh, size_t kw, size_t sw, size_t dh,
            size_t dw, const struct dwq_stage *st, int8_t *yp)
{
    for (size_t oy = 0; oy < oh; oy++) {
        const int16_t *base = d + oy * sh * rw;
        int8_t *yr = yp + oy * ow;
        size_t ox = 0;
        for (; ox + 8 <= ow; ox += 8) {
            vst1_s8(yr + ox, dwq_block8(base + ox * sw, rw, wc, kh, kw, sw,
                                        dh, dw, st));
        }
        if (ox < ow) {
            /* the lanes past the row's last output read further along
             * the row, its zeroed slack at most, and are dropped */
            int8_t tail[8];
            vst1_s8(tail, dwq_block8(base + ox * sw, rw, wc, kh, kw, sw, dh,
                                     dw, st));
            memcpy(yr + ox, tail, ow - ox);
        }
    }
}

/* Depthwise int8 convolution, eight outputs of a row at a time. Each
 * channel is written into a plane of int16 (x - x_zero) whose border is
 * 0, so a tap in the padding adds 0 * w as the C reference's skipped
 * taps add nothing, and the tap loops carry no test. |x - x_zero| <= 255
 * and |w| <= 128, so each product is exact in int32, and so is the sum
 * (|acc| <= 255 * 128 * 65536 taps < 2^31, the reference's own int32
 * sum): the output stage then gives the reference's bits (requant4's and
 * requantf4's steps). A row of the plane is the padded width plus 16
 * values of zeros, where the last block's lanes past the row read (at
 * most 8 stride-2 loads of 16 values from the last window's start).
 * Strides along the row above 2 run the C reference. The scratch is
 * q8s_dwconv_scratch(s) bytes, 64-byte aligned: 2 rows (pw + 16) bytes
 * fit in its 3 rows (pw + kw dw + 96) bytes. */
void kern_q8s_dwconv_neon(const struct kern_dwconv2d_shape *s, size_t oh,
                          size_t ow, const int8_t *x, int32_t x_zero,
                          const int8_t *w, const struct kern_q8_outstage *os,
                          int8_t *y, int8_t *scratch)
{
    const size_t sw = s->stride_w, sh = s->stride_h;
    if (sw > 2) {
        kern_q8s_dwconv_c(s, oh, ow, x, x_zero, w, os, y, scratch);
        return;
    }
    const size_t dh = s->dilation_h ? s->dilation_h : 1;
    const size_t dw = s->dilation_w ? s->dilation_w : 1;
    const size_t ih = s->in_h, iw = s->in_w, ch = s->channels;
    const size_t kh = s->kh, kw = s->kw, taps = kh * kw;
    const size_t rw = s->pad_left + iw + s->pad_right + 16;
    const size_t rows = s->pad_top + ih + s->pad_bottom;
    int16_t *d = (int16_t *)(void *)scratch;
    /* the border stays 0 for every channel: only the interior is
     * rewritten per channel */
    memset(d, 0, rows * rw * sizeof *d);
    const int16x8_t zp16 = vdupq_n_s16((int16_t)x_zero);
    struct dwq_stage st;
    memset(&st, 0, sizeof st);
    st.fl = os->scale != NULL;
    st.zp = os->zero_point;
    st.qmin = os->qmin;
    st.qmax = os->qmax;
    st.zpv = vdupq_n_s32(os->zero_point);
    st.lo = vdupq_n_f32((float)(os->qmin - os->zero_point));
    st.hi = vdupq_n_f32((float)(os->qmax - os->zero_point));
    for (size_t b = 0; b < s->batch; b++) {
        for (size_t c = 0; c < ch; c++) {
            const int8_t *xp = x + (b * ch + c) * ih * iw;
            int8_t *yp = y + (b * ch + c) * oh * ow;
            for (size_t iy = 0; iy < ih; iy++) {
                int16_t *dr = d + (s->pad_top + iy) * rw + s->pad_left;
                const int8_t *xr = xp + iy * iw;
                size_t i = 0;
                for (; i + 8 <= iw; i += 8) {
                    vst1q_s16(dr + i,
                              vsubq_s16(vmovl_s8(vld1_s8(xr + i)), zp16));
                }
                for (; i < iw; i++) {
                    dr[i] = (int16_t)(xr[i] - x_zero);
                }
            }
            /* the channel's parameters, as tile_params_fill reads them */
            const size_t pc = os->per_channel ? c : 0;
            st.add = vdupq_n_s32(os->bias ? os->bias[c] : 0);
            if (st.fl) {
                st.scale = vdupq_n_f32(os->scale[pc]);
            } else {
                const int sft = os->shift[pc];
                st.mult = vdupq_n_s32(os->mult[pc]);
                st.lsh = vdupq_n_s32(sft > 0 ? sft : 0);
                st.nrsh = vdupq_n_s32(sft > 0 ? 0 : sft);
            }
            const int8_t *wc = w + c * taps;
            if (kh == 3 && kw == 3 && dh == 1 && dw == 1) {
                if (sw == 1) {
                    dwq_channel(d, rw, oh, ow, sh, wc, 3, 3, 1, 1, 1, &st,
                                yp);
                } else {
                    dwq_channel(d, rw, oh, ow, sh, wc, 3, 3, 2, 1, 1, &st,
                                yp);
                }
            } else if (sw == 1) {
                dwq_channel(d, rw, oh, ow, sh, wc, kh, kw, 1, dh, dw, &st,
                            yp);
            } else {
                dwq_channel(d, rw, oh, ow, sh, wc, kh, kw, 2, dh, dw, &st,
                            yp);
            }
        }
    }
}

/* ---- max pool ----------------------------------------------------------- */

/* dst[i] = max(dst[i], src[i * sw]), i < n: stride 1 sixteen at a time,
 * stride 2 through de-interleaving loads (which read one byte past the
 * last used, so they stop a vector early), others one by one. */
static void sweep_s8(int8_t *dst, const int8_t *src, size_t n, size_t sw)
{
    size_t i = 0;
    if (sw == 1) {
        for (; i + 16 <= n; i += 16) {
            vst1q_s8(dst + i, vmaxq_s8(vld1q_s8(dst + i), vld1q_s8(src + i)));
        }
    } else if (sw == 2) {
        for (; i + 17 <= n; i += 16) {
            const int8x16x2_t v = vld2q_s8(src + 2 * i);
            vst1q_s8(dst + i, vmaxq_s8(vld1q_s8(dst + i), v.val[0]));
        }
    }
    for (; i < n; i++) {
        const int8_t v = src[i * sw];
        dst[i] = v > dst[i] ? v : dst[i];
    }
}

enum { COLS_MAX = 64 };

/* Output row by output row: filled with -128 (int8's least, which changes
 * no maximum: every window holds a real cell), then each real input row
 * of its windows swept once per kernel column over the output columns
 * that read a real input. The scratch is not needed. */
void kern_q8s_maxpool_neon(const struct kern_pool2d_shape *s, size_t oh,
                           size_t ow, const int8_t *x, int8_t *y,
                           int8_t *scratch)
{
    const size_t ih = s->in_h, iw = s->in_w, kw = s->kw, sw = s->stride_w;
    if (kw > COLS_MAX) {
        kern_q8s_maxpool_c(s, oh, ow, x, y, scratch);
        return;
    }
    size_t lo[COLS_MAX], hi[COLS_MAX];
    for (size_t kx = 0; kx < kw; kx++) {
        kern_pool_col_range(kx, sw, s->pad_left, iw, ow, &lo[kx], &hi[kx]);
    }
    for (size_t p = 0; p < s->batch * s->channels; p++) {
        const int8_t *xp = x + p * ih * iw;
        for (size_t oy = 0; oy < oh; oy++) {
            int8_t *yr = y + (p * oh + oy) * ow;
            size_t y0, y1;
            kern_pool_window(oy, s->stride_h, s->pad_top, s->kh, ih, &y0, &y1);
            size_t ox = 0;
            for (; ox + 16 <= ow; ox += 16) {
                vst1q_s8(yr + ox, vdupq_n_s8(INT8_MIN));
            }
            for (; ox < ow; ox++) {
                yr[ox] = INT8_MIN;
            }
            for (size_t iy = y0; iy < y1; iy++) {
                const int8_t *row = xp + iy * iw;
                for (size_t kx = 0; kx < kw; kx++) {
                    if (lo[kx] < hi[kx]) {
                        sweep_s8(yr + lo[kx],
                                 row + lo[kx] * sw + kx - s->pad_left,
                                 hi[kx] - lo[kx], sw);
                    }
                }
            }
        }
    }
}
