/* Depthwise convolution body shared by dwconv_avx2.c and dwconv_avx512.c.
 * The including file defines VL (lanes), V (vector type), V_SET1, V_LOADU,
 * V_STOREU, V_FMA(a, b, c) = a * b + c, V_MAX, V_MIN, V_ZERO, V_LOAD_EVEN(p)
 * (p[0], p[2], ..., p[2 VL - 2]; may read p[0 .. 2 VL - 1]) and DW_FN.
 *
 * Why a padded copy: with the zero padding materialised, every output is
 * the same loop over kh x kw taps with no bounds test, so one vector loop
 * covers the borders too. Each plane is copied band by band (a few padded
 * input rows at a time) into a 32 KiB stack buffer; the copy is one pass
 * over the input, small next to kh * kw passes of multiply-adds.
 *
 * Why flattening: edge networks have narrow planes (DS-CNN's are 5 wide),
 * too narrow to fill a vector row by row. With stride 1, output (oy, ox)
 * reads padded element (oy + ky) * pitch + ox + kx, i.e. output j = oy *
 * pitch + ox reads j + ky * pitch + kx: the band's outputs, laid out with
 * the padded pitch, are one long vector loop, and the columns ox >= out_w
 * (junk) are dropped when the band is copied out. Wide planes and stride 2
 * go row by row straight into y. */
#include <string.h>

#include "dwconv.h"

enum { PBUF = 6144, OBUF = 2048, SLACK = 2 * VL + 64 };

static inline V fuse_v(V v, int act, V six)
{
    if (act == KERN_FUSE_NONE) {
        return v;
    }
    v = V_MAX(V_ZERO, v); /* v second: a NaN sum stays NaN */
    if (act == KERN_FUSE_RELU6) {
        v = V_MIN(six, v);
    }
    return v;
}

static inline float fuse_s(float v, int act)
{
    if (act == KERN_FUSE_NONE) {
        return v;
    }
    v = v < 0.0f ? 0.0f : v;
    if (act == KERN_FUSE_RELU6) {
        v = v > 6.0f ? 6.0f : v;
    }
    return v;
}

/* out[j] = act(b + sum over ky, kx of wc[ky][kx] * in[j * st + ky * pitch
 * + kx]) for j < n; st is 1 or 2. */
static void run(float *out, const float *in, size_t n, size_t st,
                size_t pitch, const float *wc, size_t kh, size_t kw, float b,
                int act)
{
    const V bv = V_SET1(b), six = V_SET1(6.0f);
    size_t j = 0;
    for (; j + 2 * VL <= n; j += 2 * VL) {
        V a0 = bv, a1 = bv;
        for (size_t ky = 0; ky < kh; ky++) {
            const float *r = in + j * st + ky * pitch;
            for (size_t kx = 0; kx < kw; kx++) {
                const V wv = V_SET1(wc[ky * kw + kx]);
                if (st == 1) {
                    a0 = V_FMA(wv, V_LOADU(r + kx), a0);
                    a1 = V_FMA(wv, V_LOADU(r + kx + VL), a1);
                } else {
                    a0 = V_FMA(wv, V_LOAD_EVEN(r + kx), a0);
                    a1 = V_FMA(wv, V_LOAD_EVEN(r + kx + 2 * VL), a1);
                }
            }
        }
        V_STOREU(out + j, fuse_v(a0, act, six));
        V_STOREU(out + j + VL, fuse_v(a1, act, six));
    }
    for (; j + VL <= n; j += VL) {
        V a0 = bv;
        for (size_t ky = 0; ky < kh; ky++) {
            const float *r = in + j * st + ky * pitch;
            for (size_t kx = 0; kx < kw; kx++) {
                const V wv = V_SET1(wc[ky * kw + kx]);
                a0 = V_FMA(wv, st == 1 ? V_LOADU(r + kx)
                                       : V_LOAD_EVEN(r + kx), a0);
            }
        }
        V_STOREU(out + j, fuse_v(a0, act, six));
    }
    for (; j < n; j++) {
        float acc = b;
        for (size_t ky = 0; ky < kh; ky++) {
            const float *r = in + j * st + ky * pitch;
            for (size_t kx = 0; kx < kw; kx++) {
                acc = fmaf(wc[ky * kw + kx], r[kx], acc);
            }
        }
        out[j] = fuse_s(acc, act);
    }
}

/* Padded rows [r0, r0 + rows) of plane xp into buf with the given pitch
 * (padded column c holds input column c - pl), then SLACK zeros. */
static void pad_band(float *buf, const float *xp, size_t ih, size_t iw,
                     size_t pt, size_t pl, size_t r0, size_t rows,
                     size_t pitch)
{
    for (size_t r = 0; r < rows; r++) {
        float *d = buf + r * pitch;
        const size_t iy = r0 + r - pt; /* wraps above the input */
        if (iy >= ih || pl >= pitch) {
            memset(d, 0, pitch * sizeof *d);
            continue;
        }
        const size_t n = iw < pitch - pl ? iw : pitch - pl;
        memset(d, 0, pl * sizeof *d);
        memcpy(d + pl, xp + iy * iw, n * sizeof *d);
        memset(d + pl + n, 0, (pitch - pl - n) * sizeof *d);
    }
    memset(buf + rows * pitch, 0, SLACK * sizeof *buf);
}

void DW_FN(const struct kern_dwconv2d_shape *s, size_t out_h, size_t out_w,
           const float *x, const float *w, const float *bias, int act,
           float *y)
{
    const size_t kh = s->kh, kw = s->kw, st = s->stride;
    /* Padded columns read: up to (out_w - 1) * st + kw - 1. */
    const size_t pitch = (out_w - 1) * st + kw;
    if ((st != 1 && st != 2) || pitch > PBUF ||
        kh > (PBUF - SLACK) / pitch) {
        kern_dwconv2d_c(s, out_h, out_w, x, w, bias, act, y);
        return;
    }
    const int flat = st == 1 && out_w < 2 * VL;
    /* Output rows per band: its padded rows ((nb - 1) st + kh) fit in
     * PBUF, and in flat mode its nb * pitch outputs fit in OBUF. */
    size_t nb = ((PBUF - SLACK) / pitch - kh) / st + 1;
    if (flat && nb > OBUF / pitch) {
        nb = OBUF / pitch;
    }
    if (!nb) {
        kern_dwconv2d_c(s, out_h, out_w, x, w, bias, act, y);
        return;
    }
    float buf[PBUF], obuf[OBUF];
    const size_t ih = s->in_h, iw = s->in_w;
    for (size_t p = 0; p < s->batch * s->channels; p++) {
        const size_t c = p % s->channels;
        const float *xp = x + p * ih * iw;
        const float *wc = w + c * kh * kw;
        float *yp = y + p * out_h * out_w;
        const float b = bias ? bias[c] : 0.0f;
        for (size_t oy0 = 0; oy0 < out_h; oy0 += nb) {
            const size_t rows = out_h - oy0 < nb ? out_h - oy0 : nb;
            pad_band(buf, xp, ih, iw, s->pad_top, s->pad_left, oy0 * st,
                     (rows - 1) * st + kh, pitch);
            if (flat) {
                run(obuf, buf, (rows - 1) * pitch + out_w, 1, pitch, wc, kh,
                    kw, b, act);
                for (size_t r = 0; r < rows; r++) {
                    memcpy(yp + (oy0 + r) * out_w, obuf + r * pitch,
                           out_w * sizeof *yp);
                }
                continue;
            }
            for (size_t r = 0; r < rows; r++) {
                run(yp + (oy0 + r) * out_w, buf + r * st * pitch, out_w, st,
                    pitch, wc, kh, kw, b, act);
            }
        }
    }
}
