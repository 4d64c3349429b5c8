/* The nn family with NEON: bias, scale, finiteness, SGD, max and average
 * pooling, softmax and its cross-entropy. Pooling makes the reference's
 * float operations in the reference's order (the window's cells in
 * row-major order, one max step or addition each), four output columns
 * (or, for a single output column, four planes) at a time, so its results
 * are the reference's bits. Softmax evaluates exp as the x86 paths do
 * (same reduction and polynomial; src/x86/nn_softmax_tmpl.h drives the
 * rows), so it has their tolerance. Operations AArch64 has and armv7 NEON
 * lacks go through neon_compat.h, or (double lanes) the helpers below. */
#include <arm_neon.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "neon_compat.h"
#include "nn.h"
#include "pool_geom.h"

/* ---- helpers for what only AArch64 has (the rest: neon_compat.h) ------- */

/* The four lanes of v added to *acc in double, lanes 0 + 2 and 1 + 3 in
 * two accumulators (the order is the path's own; the checker's tolerance
 * covers any order of a double sum). */
#if KN_A64
typedef float64x2_t dacc;
static inline dacc dacc_zero(void) { return vdupq_n_f64(0.0); }
static inline dacc dacc_add4(dacc acc, float32x4_t v)
{
    acc = vaddq_f64(acc, vcvt_f64_f32(vget_low_f32(v)));
    return vaddq_f64(acc, vcvt_high_f64_f32(v));
}
static inline double dacc_sum(dacc acc) { return vaddvq_f64(acc); }
#else
typedef struct {
    double a, b;
} dacc;
static inline dacc dacc_zero(void) { return (dacc){0.0, 0.0}; }
static inline dacc dacc_add4(dacc acc, float32x4_t v)
{
    acc.a += vgetq_lane_f32(v, 0);
    acc.b += vgetq_lane_f32(v, 1);
    acc.a += vgetq_lane_f32(v, 2);
    acc.b += vgetq_lane_f32(v, 3);
    return acc;
}
static inline double dacc_sum(dacc acc) { return acc.a + acc.b; }
#endif

/* ---- bias, finiteness, scale, SGD --------------------------------------- */

void kern_nn_bias_add_neon(float *x, size_t rows, size_t channels,
                           const float *bias)
{
    for (size_t r = 0; r < rows; r++) {
        float *row = x + r * channels;
        size_t c = 0;
        for (; c + 4 <= channels; c += 4) {
            vst1q_f32(row + c,
                      vaddq_f32(vld1q_f32(row + c), vld1q_f32(bias + c)));
        }
        for (; c < channels; c++) {
            row[c] += bias[c];
        }
    }
}

bool kern_nn_all_finite_neon(const float *x, size_t n)
{
    const uint32x4_t expo = vdupq_n_u32(0x7f800000u);
    uint32x4_t bad = vdupq_n_u32(0);
    size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        const uint32x4_t b = vreinterpretq_u32_f32(vld1q_f32(x + i));
        bad = vorrq_u32(bad, vceqq_u32(vandq_u32(b, expo), expo));
    }
    uint32x2_t b2 = vorr_u32(vget_low_u32(bad), vget_high_u32(bad));
    uint32_t any = vget_lane_u32(b2, 0) | vget_lane_u32(b2, 1);
    for (; i < n; i++) {
        uint32_t bits;
        memcpy(&bits, &x[i], 4);
        any |= (bits & 0x7f800000u) == 0x7f800000u;
    }
    return !any;
}

void kern_nn_scale_neon(float *x, size_t n, float s)
{
    const float32x4_t sv = vdupq_n_f32(s);
    size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        vst1q_f32(x + i, vmulq_f32(vld1q_f32(x + i), sv));
    }
    for (; i < n; i++) {
        x[i] *= s;
    }
}

/* The reference's operations, unfused: g + wd w, mu v + g, w - lr g. */
void kern_nn_sgd_neon(float *w, const float *g, float *velocity, size_t n,
                      float lr, float momentum, float weight_decay)
{
    const float32x4_t lrv = vdupq_n_f32(lr), muv = vdupq_n_f32(momentum);
    const float32x4_t wdv = vdupq_n_f32(weight_decay);
    const bool wd = weight_decay != 0.0f, mu = momentum != 0.0f;
    size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        const float32x4_t wi = vld1q_f32(w + i);
        float32x4_t gi = vld1q_f32(g + i);
        if (wd) {
            gi = vaddq_f32(gi, vmulq_f32(wdv, wi));
        }
        if (mu) {
            gi = vaddq_f32(vmulq_f32(muv, vld1q_f32(velocity + i)), gi);
            vst1q_f32(velocity + i, gi);
        }
        vst1q_f32(w + i, vsubq_f32(wi, vmulq_f32(lrv, gi)));
    }
    if (i < n) {
        kern_nn_sgd_c(w + i, g + i, mu ? velocity + i : velocity, n - i, lr,
                      momentum, weight_decay);
    }
}

/* ---- pooling ------------------------------------------------------------ */

/* The reference's max step: v replaces best when larger, or when v is the
 * first NaN. */
static inline float max_step(float best, float v)
{
    const float larger = v > best ? v : best;
    const bool take_nan = (v != v) & (best == best);
    return take_nan ? v : larger;
}

static inline float32x4_t max_step4(float32x4_t best, float32x4_t v)
{
    /* !(best >= v) is v > best or either a NaN; a NaN best stays */
    const uint32x4_t take =
        vbicq_u32(vceqq_f32(best, best), vcgeq_f32(best, v));
    return vbslq_f32(take, v, best);
}

static inline float32x4_t step4(float32x4_t acc, float32x4_t v, bool is_max)
{
    return is_max ? max_step4(acc, v) : vaddq_f32(acc, v);
}

static inline float step1(float acc, float v, bool is_max)
{
    return is_max ? max_step(acc, v) : acc + v;
}

/* dst[i] = step(dst[i], src[i * sw]) for i < n: stride 1 by whole
 * vectors, stride 2 through de-interleaving loads (each reads one value
 * past the last it uses, so they stop where that value would pass `end`,
 * the input's end), others one by one. The max step is idempotent, so a
 * max sweep ends with one vector over its last four outputs (redoing some)
 * instead of a scalar tail; a sum cannot. */
static void sweep(float *dst, const float *src, size_t n, size_t sw,
                  const float *end, bool is_max)
{
    size_t i = 0;
    if (sw == 1) {
        for (; i + 4 <= n; i += 4) {
            vst1q_f32(dst + i,
                      step4(vld1q_f32(dst + i), vld1q_f32(src + i), is_max));
        }
        if (is_max && i < n && n >= 4) {
            i = n - 4;
            vst1q_f32(dst + i,
                      max_step4(vld1q_f32(dst + i), vld1q_f32(src + i)));
            return;
        }
    } else if (sw == 2) {
        const size_t room = (size_t)(end - src); /* values readable */
        size_t vec_n = room >= 8 ? (room - 8) / 2 + 1 : 0; /* i + 1 <= */
        vec_n = vec_n < n ? vec_n : n;
        for (; i + 4 <= vec_n; i += 4) {
            const float32x4x2_t v = vld2q_f32(src + 2 * i);
            vst1q_f32(dst + i, step4(vld1q_f32(dst + i), v.val[0], is_max));
        }
        if (is_max && i < n && vec_n == n && n >= 4) {
            i = n - 4;
            const float32x4x2_t v = vld2q_f32(src + 2 * i);
            vst1q_f32(dst + i, max_step4(vld1q_f32(dst + i), v.val[0]));
            return;
        }
    }
    for (; i < n; i++) {
        dst[i] = step1(dst[i], src[i * sw], is_max);
    }
}

/* One output column per plane (the pool that ends a network): four planes
 * at a time, each lane one plane, the window's cells in row-major order,
 * four columns of the four planes transposed per step. Returns the planes
 * it did. */
static size_t pool_one_col(const struct kern_pool2d_shape *s, size_t oh,
                           const float *x, float *y, bool is_max)
{
    const size_t ih = s->in_h, iw = s->in_w, hw = ih * iw;
    const size_t planes = s->batch * s->channels;
    size_t x0, x1;
    kern_pool_window(0, s->stride_w, s->pad_left, s->kw, iw, &x0, &x1);
    size_t p = 0;
    for (; p + 4 <= planes; p += 4) {
        for (size_t oy = 0; oy < oh; oy++) {
            size_t y0, y1;
            kern_pool_window(oy, s->stride_h, s->pad_top, s->kh, ih, &y0, &y1);
            float32x4_t acc = vdupq_n_f32(is_max ? -INFINITY : 0.0f);
            for (size_t iy = y0; iy < y1; iy++) {
                const float *r0 = x + p * hw + iy * iw;
                const float *r1 = r0 + hw, *r2 = r1 + hw, *r3 = r2 + hw;
                size_t ix = x0;
                for (; ix + 4 <= x1; ix += 4) {
                    float32x4_t t[4] = {vld1q_f32(r0 + ix), vld1q_f32(r1 + ix),
                                        vld1q_f32(r2 + ix), vld1q_f32(r3 + ix)};
                    kn_transpose4_f32(t);
                    for (int k = 0; k < 4; k++) {
                        acc = step4(acc, t[k], is_max);
                    }
                }
                for (; ix < x1; ix++) {
                    float32x4_t v = vdupq_n_f32(r0[ix]);
                    v = vsetq_lane_f32(r1[ix], v, 1);
                    v = vsetq_lane_f32(r2[ix], v, 2);
                    v = vsetq_lane_f32(r3[ix], v, 3);
                    acc = step4(acc, v, is_max);
                }
            }
            float out[4];
            vst1q_f32(out, acc);
            const float d =
                is_max ? 1.0f : kern_nn_pool_divisor(s, y1 - y0, x1 - x0);
            for (int j = 0; j < 4; j++) {
                y[(p + (size_t)j) * oh + oy] = is_max ? out[j] : out[j] / d;
            }
        }
    }
    return p;
}

/* The 2 x 2, stride 2 window: de-interleaved rows, four columns a step. */
static void pool_k2s2_row(const float *r0, const float *r1, size_t ow,
                          float *yr, bool is_max)
{
    size_t ox = 0;
    /* each load reads 8 values from 2 ox: the last whole vector ends at
     * 2 ow <= in_w */
    for (; ox + 4 <= ow; ox += 4) {
        const float32x4x2_t a = vld2q_f32(r0 + 2 * ox);
        const float32x4x2_t b = vld2q_f32(r1 + 2 * ox);
        float32x4_t v;
        if (is_max) {
            v = max_step4(a.val[0], a.val[1]);
            v = max_step4(v, b.val[0]);
            v = max_step4(v, b.val[1]);
        } else {
            v = vaddq_f32(vdupq_n_f32(0.0f), a.val[0]);
            v = vaddq_f32(v, a.val[1]);
            v = vaddq_f32(v, b.val[0]);
            v = vaddq_f32(v, b.val[1]);
            /* x / 4 and x * 0.25 are the same correctly rounded value */
            v = vmulq_f32(v, vdupq_n_f32(0.25f));
        }
        vst1q_f32(yr + ox, v);
    }
    for (; ox < ow; ox++) {
        if (is_max) {
            float m = max_step(r0[2 * ox], r0[2 * ox + 1]);
            m = max_step(m, r1[2 * ox]);
            yr[ox] = max_step(m, r1[2 * ox + 1]);
        } else {
            float sum = 0.0f + r0[2 * ox];
            sum += r0[2 * ox + 1];
            sum += r1[2 * ox];
            sum += r1[2 * ox + 1];
            yr[ox] = sum / 4.0f;
        }
    }
}

enum { COLS_MAX = 64 };

static void pool_neon(const struct kern_pool2d_shape *s, size_t oh,
                      size_t ow, const float *x, float *y, bool is_max)
{
    const size_t ih = s->in_h, iw = s->in_w, kw = s->kw, sw = s->stride_w;
    const bool k2s2 = kern_nn_pool_is_k2s2(s);
    if (!k2s2 && kw > COLS_MAX) {
        /* windows this wide are not a vector path's business */
        if (is_max) {
            kern_nn_maxpool2d_c(s, oh, ow, x, y);
        } else {
            kern_nn_avgpool2d_c(s, oh, ow, x, y);
        }
        return;
    }
    size_t p = 0;
    if (ow == 1 && !k2s2) {
        p = pool_one_col(s, oh, x, y, is_max);
    }
    size_t lo[COLS_MAX], hi[COLS_MAX];
    for (size_t kx = 0; !k2s2 && kx < kw; kx++) {
        kern_pool_col_range(kx, sw, s->pad_left, iw, ow, &lo[kx], &hi[kx]);
    }
    const float32x4_t init = vdupq_n_f32(is_max ? -INFINITY : 0.0f);
    const float *end = x + s->batch * s->channels * ih * iw;
    /* the output columns whose windows lie wholly inside the row: their
     * divisor has kw columns */
    size_t in_lo = (s->pad_left + sw - 1) / sw, in_hi = 0;
    if (iw >= kw) {
        in_hi = (iw - kw + s->pad_left) / sw + 1;
        in_hi = in_hi < ow ? in_hi : ow;
    }
    in_lo = in_lo < in_hi ? in_lo : in_hi;
    for (; p < s->batch * s->channels; p++) {
        const float *plane = x + p * ih * iw;
        for (size_t oy = 0; oy < oh; oy++) {
            float *yr = y + (p * oh + oy) * ow;
            if (k2s2) {
                const float *r0 = plane + 2 * oy * iw;
                pool_k2s2_row(r0, r0 + iw, ow, yr, is_max);
                continue;
            }
            size_t y0, y1;
            kern_pool_window(oy, s->stride_h, s->pad_top, s->kh, ih, &y0, &y1);
            size_t ox = 0;
            for (; ox + 4 <= ow; ox += 4) {
                vst1q_f32(yr + ox, init);
            }
            for (; ox < ow; ox++) {
                yr[ox] = is_max ? -INFINITY : 0.0f;
            }
            for (size_t iy = y0; iy < y1; iy++) {
                const float *row = plane + iy * iw;
                for (size_t kx = 0; kx < kw; kx++) {
                    if (lo[kx] == hi[kx]) {
                        continue;
                    }
                    sweep(yr + lo[kx], row + lo[kx] * sw + kx - s->pad_left,
                          hi[kx] - lo[kx], sw, end, is_max);
                }
            }
            if (is_max) {
                continue;
            }
            if (s->count_include_pad) {
                const float d = (float)(s->kh * kw);
                for (ox = 0; ox + 4 <= ow; ox += 4) {
                    vst1q_f32(yr + ox,
                              kn_divq_f32(vld1q_f32(yr + ox), vdupq_n_f32(d)));
                }
                for (; ox < ow; ox++) {
                    yr[ox] = yr[ox] / d;
                }
                continue;
            }
            const float d = kern_nn_pool_divisor(s, y1 - y0, kw);
            for (ox = 0; ox < ow; ox++) {
                if (ox == in_lo) {
                    /* the inner columns: one divisor, four at a time */
                    for (; ox + 4 <= in_hi; ox += 4) {
                        vst1q_f32(yr + ox, kn_divq_f32(vld1q_f32(yr + ox),
                                                       vdupq_n_f32(d)));
                    }
                    for (; ox < in_hi; ox++) {
                        yr[ox] = yr[ox] / d;
                    }
                    if (ox == ow) {
                        break;
                    }
                }
                size_t x0, x1;
                kern_pool_window(ox, sw, s->pad_left, kw, iw, &x0, &x1);
                yr[ox] = yr[ox] / kern_nn_pool_divisor(s, y1 - y0, x1 - x0);
            }
        }
    }
}

void kern_nn_maxpool2d_neon(const struct kern_pool2d_shape *s, size_t out_h,
                            size_t out_w, const float *x, float *y)
{
    pool_neon(s, out_h, out_w, x, y, true);
}

void kern_nn_avgpool2d_neon(const struct kern_pool2d_shape *s, size_t out_h,
                            size_t out_w, const float *x, float *y)
{
    pool_neon(s, out_h, out_w, x, y, false);
}

/* ---- pooling on NCHW8c -------------------------------------------------- */

/* One block of 8 channels is two vectors (lanes 0-3 and 4-7), two
 * independent chains. Each output cell takes its window's real cells in the
 * reference's row-major order, one max step (compare and select, which
 * copies bits, so a NaN keeps its payload) or one addition each, from -inf
 * or +0, then divides by the reference's divisor: the bits of pool_blk_c in
 * nn.c (on ARMv7 where no subnormal is compared or summed: neon_compat.h,
 * as for the NCHW paths above). The row-major order
 * is kept rather than a separable max because the step is cheap next to
 * the loads here and the sum must keep it anyway. */
static void pool_blk_neon(const struct kern_pool2d_shape *s, size_t oh,
                          size_t ow, const float *x, float *y, bool is_max)
{
    const size_t ih = s->in_h, iw = s->in_w, nb = kern_nn_cblocks(s->channels);
    const float32x4_t init = vdupq_n_f32(is_max ? -INFINITY : 0.0f);
    for (size_t pb = 0; pb < s->batch * nb; pb++) {
        const float *xp = x + pb * ih * iw * KERN_CBLOCK;
        float *yp = y + pb * oh * ow * KERN_CBLOCK;
        for (size_t oy = 0; oy < oh; oy++) {
            size_t y0, y1;
            kern_pool_window(oy, s->stride_h, s->pad_top, s->kh, ih, &y0, &y1);
            for (size_t ox = 0; ox < ow; ox++) {
                size_t x0, x1;
                kern_pool_window(ox, s->stride_w, s->pad_left, s->kw, iw, &x0,
                                 &x1);
                float32x4_t a0 = init, a1 = init;
                for (size_t iy = y0; iy < y1; iy++) {
                    const float *r = xp + (iy * iw + x0) * KERN_CBLOCK;
                    const float *e = r + (x1 - x0) * KERN_CBLOCK;
                    for (; r < e; r += KERN_CBLOCK) {
                        a0 = step4(a0, vld1q_f32(r), is_max);
                        a1 = step4(a1, vld1q_f32(r + 4), is_max);
                    }
                }
                float *o = yp + (oy * ow + ox) * KERN_CBLOCK;
                if (!is_max) {
                    const float32x4_t d = vdupq_n_f32(
                        kern_nn_pool_divisor(s, y1 - y0, x1 - x0));
                    a0 = kn_divq_f32(a0, d);
                    a1 = kn_divq_f32(a1, d);
                }
                vst1q_f32(o, a0);
                vst1q_f32(o + 4, a1);
            }
        }
    }
}

void kern_nn_maxpool2d_blk_neon(const struct kern_pool2d_shape *s,
                                size_t out_h, size_t out_w, const float *x,
                                float *y)
{
    pool_blk_neon(s, out_h, out_w, x, y, true);
}

void kern_nn_avgpool2d_blk_neon(const struct kern_pool2d_shape *s,
                                size_t out_h, size_t out_w, const float *x,
                                float *y)
{
    pool_blk_neon(s, out_h, out_w, x, y, false);
}

/* ---- softmax ------------------------------------------------------------ */

/* exp(x) as exp8 of nn_avx2.c: the same clamp, reduction and polynomial,
 * 2^n built in the exponent field, lanes below -87.3365 flushed to +0.
 * n is rounded to nearest even by the 1.5 * 2^23 addition (|x log2 e| <
 * 128), which also gives its integer in the low bits. */
static inline float32x4_t exp4(float32x4_t x)
{
    const uint32x4_t tiny = vcltq_f32(x, vdupq_n_f32(-87.33654f));
    x = vminq_f32(vdupq_n_f32(88.0f), vmaxq_f32(vdupq_n_f32(-88.0f), x));
    const float32x4_t magic = vdupq_n_f32(0x1.8p23f);
    const float32x4_t t =
        vaddq_f32(vmulq_f32(x, vdupq_n_f32(1.44269504f)), magic);
    const float32x4_t n = vsubq_f32(t, magic);
    float32x4_t r = vfmsq_f32(x, n, vdupq_n_f32(0.693145751953125f));
    r = vfmsq_f32(r, n, vdupq_n_f32(1.42860677e-6f));
    float32x4_t p = vdupq_n_f32(1.0f / 5040.0f);
    p = vfmaq_f32(vdupq_n_f32(1.0f / 720.0f), p, r);
    p = vfmaq_f32(vdupq_n_f32(1.0f / 120.0f), p, r);
    p = vfmaq_f32(vdupq_n_f32(1.0f / 24.0f), p, r);
    p = vfmaq_f32(vdupq_n_f32(1.0f / 6.0f), p, r);
    p = vfmaq_f32(vdupq_n_f32(0.5f), p, r);
    p = vfmaq_f32(vdupq_n_f32(1.0f), p, r);
    p = vfmaq_f32(vdupq_n_f32(1.0f), p, r);
    const int32x4_t ni = vsubq_s32(vreinterpretq_s32_f32(t),
                                   vreinterpretq_s32_f32(magic));
    const int32x4_t e = vshlq_n_s32(vaddq_s32(ni, vdupq_n_s32(127)), 23);
    const float32x4_t v = vmulq_f32(p, vreinterpretq_f32_s32(e));
    return vreinterpretq_f32_u32(
        vbicq_u32(vreinterpretq_u32_f32(v), tiny));
}

/* A tail of rest < 4 values in a vector, the other lanes `fill`. */
static inline float32x4_t load_tail(const float *p, size_t rest, float fill)
{
    float buf[4] = {fill, fill, fill, fill};
    memcpy(buf, p, rest * sizeof *buf);
    return vld1q_f32(buf);
}

static float row_max(const float *xr, size_t cols, bool *nan)
{
    float32x4_t mx = vdupq_n_f32(-INFINITY);
    uint32x4_t un = vdupq_n_u32(0);
    size_t c = 0;
    for (; c < cols; c += 4) {
        const float32x4_t v = c + 4 <= cols
                                  ? vld1q_f32(xr + c)
                                  : load_tail(xr + c, cols - c, -INFINITY);
        un = vorrq_u32(un, vmvnq_u32(vceqq_f32(v, v)));
        mx = vmaxq_f32(mx, v);
    }
    const uint32x2_t u2 = vorr_u32(vget_low_u32(un), vget_high_u32(un));
    *nan = (vget_lane_u32(u2, 0) | vget_lane_u32(u2, 1)) != 0;
    return kn_maxvq_f32(mx);
}

/* y[c] = exp(x[c] - mx) (y may be x, or NULL: not stored); returns the
 * sum in double. */
static double row_exp(const float *xr, size_t cols, float mx, float *yr)
{
    const float32x4_t mv = vdupq_n_f32(mx);
    dacc acc = dacc_zero();
    size_t c = 0;
    for (; c + 4 <= cols; c += 4) {
        const float32x4_t e = exp4(vsubq_f32(vld1q_f32(xr + c), mv));
        if (yr) {
            vst1q_f32(yr + c, e);
        }
        acc = dacc_add4(acc, e);
    }
    if (c < cols) {
        const size_t rest = cols - c;
        float buf[4];
        /* the padding lanes hold -inf: exp gives +0 to the sum */
        vst1q_f32(buf, exp4(vsubq_f32(load_tail(xr + c, rest, -INFINITY),
                                      mv)));
        if (yr) {
            memcpy(yr + c, buf, rest * sizeof *buf);
        }
        acc = dacc_add4(acc, vld1q_f32(buf));
    }
    return dacc_sum(acc);
}

static void row_scale(float *yr, size_t cols, float s)
{
    kern_nn_scale_neon(yr, cols, s);
}

#define NN_FN(name) name##_neon
#include "../x86/nn_softmax_tmpl.h"
