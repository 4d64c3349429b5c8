#include <math.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "q8.h"
#include "q8s.h"

#include "edgefit/kernels.h"
#include "pool_geom.h"
#include "alloc_rec.h" /* last: it wraps malloc and co. */

/* Column tile of the fused GEMM and of the requantisation: the int32
 * parameters of one tile live on the stack, and the int32 sums of a
 * Q8S_MB x Q8S_NB tile (12 KiB) stay in L1 between the GEMM and the
 * output stage. Q8S_NB is a multiple of the packed block width and the
 * 64 columns of the VNNI/AVX-512 micro-tile; Q8S_MB a multiple of their 6
 * rows, so no tile but the last runs a partial micro-tile. */
enum { Q8S_NB = Q8S_TILE_N, Q8S_MB = 48 };

/* ---- C references -------------------------------------------------------- */

void kern_q8s_requant_c(size_t n, const int32_t *acc, const int32_t *add,
                        const int32_t *mult, const int32_t *lsh,
                        const int32_t *rsh, int32_t zp, int32_t qmin,
                        int32_t qmax, int8_t *q)
{
    for (size_t j = 0; j < n; j++) {
        const int32_t x = q8s_shl(q8s_wrap_add(acc[j], add[j]), lsh[j]);
        int32_t r = q8s_rdbpot(q8s_srdhm(x, mult[j]), rsh[j]);
        /* r is at most 2^31 - 1 in magnitude; add the zero point in 64
         * bits so a huge r clamps instead of wrapping */
        int64_t v = (int64_t)r + zp;
        v = v < qmin ? qmin : v > qmax ? qmax : v;
        q[j] = (int8_t)v;
    }
}

void kern_q8s_requant_tile_c(size_t m, size_t n, const int32_t *acc,
                             size_t lda, const int32_t *add,
                             const int32_t *mult, const int32_t *lsh,
                             const int32_t *rsh, int32_t zp, int32_t qmin,
                             int32_t qmax, int8_t *q, size_t ldq)
{
    for (size_t i = 0; i < m; i++) {
        kern_q8s_requant_c(n, acc + i * lda, add, mult, lsh, rsh, zp, qmin,
                           qmax, q + i * ldq);
    }
}

void kern_q8s_requantf_c(size_t n, const int32_t *acc, const int32_t *add,
                         const float *scale, int32_t zp, int32_t qmin,
                         int32_t qmax, int8_t *q)
{
    /* the bounds relative to zp are within [-255, 255]: exact in float */
    const float lo = (float)(qmin - zp), hi = (float)(qmax - zp);
    for (size_t j = 0; j < n; j++) {
        float f = (float)q8s_wrap_add(acc[j], add[j]) * scale[j];
        /* clamped before the rounding, as MLAS: the conversion cannot
         * overflow, and a whole-number bound rounds to itself */
        f = f < lo ? lo : f > hi ? hi : f;
        q[j] = (int8_t)((int32_t)rintf(f) + zp);
    }
}

void kern_q8s_requantf_tile_c(size_t m, size_t n, const int32_t *acc,
                              size_t lda, const int32_t *add,
                              const float *scale, int32_t zp, int32_t qmin,
                              int32_t qmax, int8_t *q, size_t ldq)
{
    for (size_t i = 0; i < m; i++) {
        kern_q8s_requantf_c(n, acc + i * lda, add, scale, zp, qmin, qmax,
                            q + i * ldq);
    }
}

void kern_q8s_transpose_c(size_t m, size_t n, const int8_t *x, size_t ldx,
                          int8_t *y, size_t ldy)
{
    for (size_t i = 0; i < m; i++) {
        for (size_t j = 0; j < n; j++) {
            y[j * ldy + i] = x[i * ldx + j];
        }
    }
}

void kern_q8s_quant_c(const float *x, size_t n, float scale, int32_t zero,
                      int8_t *q)
{
    const float z = (float)zero;
    for (size_t i = 0; i < n; i++) {
        const float v = x[i] / scale;
        if (v != v) {
            q[i] = (int8_t)zero;
            continue;
        }
        /* rintf: the default rounding mode, half to even */
        const float f = rintf(v) + z;
        q[i] = f <= -128.0f ? (int8_t)-128
               : f >= 127.0f ? (int8_t)127
                             : (int8_t)f;
    }
}

void kern_q8s_add_c(size_t n, const int8_t *a, const int8_t *b,
                    const struct kern_q8_add_params *p, int8_t *out)
{
    for (size_t i = 0; i < n; i++) {
        /* |a - zero| <= 255, so the shift by at most 20 cannot overflow */
        const int32_t xa = q8s_shl((int32_t)a[i] - p->a_zero, p->left_shift);
        const int32_t xb = q8s_shl((int32_t)b[i] - p->b_zero, p->left_shift);
        const int32_t sa = q8s_mbqm(xa, p->a_mult, p->a_shift);
        const int32_t sb = q8s_mbqm(xb, p->b_mult, p->b_shift);
        const int32_t r = q8s_mbqm(q8s_wrap_add(sa, sb), p->out_mult,
                                   p->out_shift);
        int64_t v = (int64_t)r + p->out_zero;
        v = v < p->qmin ? p->qmin : v > p->qmax ? p->qmax : v;
        out[i] = (int8_t)v;
    }
}

void kern_q8s_addf_c(size_t n, const int8_t *a, const int8_t *b,
                     const struct kern_q8_addf_params *p, int8_t *out)
{
    /* the bounds are whole numbers: clamping before the rounding gives
     * the same integer as after, and the conversion cannot overflow */
    const int32_t o = p->off;
    const float lo = (float)(p->qmin + o), hi = (float)(p->qmax + o);
    for (size_t i = 0; i < n; i++) {
        /* b first, then a, as ONNX Runtime's kernel orders its fmas */
        float f = fmaf((float)(b[i] + o), p->rb, p->fixed);
        f = fmaf((float)(a[i] + o), p->ra, f);
        f = f < lo ? lo : f > hi ? hi : f;
        out[i] = (int8_t)((int32_t)rintf(f) - o);
    }
}

void kern_q8s_rescale_c(size_t n, const int8_t *x, int32_t x_zero,
                        const struct kern_q8_rescale *r, int8_t *y)
{
    for (size_t i = 0; i < n; i++) {
        /* |x - x_zero| <= 255 and the shifts were checked: no overflow */
        const int32_t d = q8s_shl((int32_t)x[i] - x_zero, r->left_shift);
        int64_t v = (int64_t)q8s_mbqm(d, r->mult, r->shift) + r->out_zero;
        v = v < r->qmin ? r->qmin : v > r->qmax ? r->qmax : v;
        y[i] = (int8_t)v;
    }
}

void kern_q8s_maxpool_c(const struct kern_pool2d_shape *s, size_t oh,
                        size_t ow, const int8_t *x, int8_t *y,
                        int8_t *scratch)
{
    (void)scratch;
    const size_t ih = s->in_h, iw = s->in_w;
    for (size_t p = 0; p < s->batch * s->channels; p++) {
        const int8_t *xp = x + p * ih * iw;
        int8_t *yp = y + p * oh * ow;
        for (size_t oy = 0; oy < oh; oy++) {
            size_t y0, y1;
            kern_pool_window(oy, s->stride_h, s->pad_top, s->kh, ih, &y0, &y1);
            for (size_t ox = 0; ox < ow; ox++) {
                size_t x0, x1;
                kern_pool_window(ox, s->stride_w, s->pad_left, s->kw, iw, &x0,
                                 &x1);
                /* the window holds a real cell; -128 is int8's least, so
                 * starting from it changes no maximum */
                int8_t m = INT8_MIN;
                for (size_t iy = y0; iy < y1; iy++) {
                    for (size_t ix = x0; ix < x1; ix++) {
                        const int8_t v = xp[iy * iw + ix];
                        m = v > m ? v : m;
                    }
                }
                yp[oy * ow + ox] = m;
            }
        }
    }
}

void kern_q8s_plane_sum_c(size_t planes, size_t n, size_t ld,
                          const int8_t *x, int32_t *sums)
{
    for (size_t p = 0; p < planes; p++) {
        const int8_t *xp = x + p * ld;
        /* |sum| <= 128 2^22: int32 is exact */
        int32_t sum = 0;
        for (size_t i = 0; i < n; i++) {
            sum += xp[i];
        }
        sums[p] = sum;
    }
}

void kern_q8s_gemm_kp_c(size_t n, size_t p, size_t k, const int8_t *wk,
                        const int32_t *add, const int32_t *mult,
                        const int32_t *lsh, const int32_t *rsh,
                        const float *scale, int32_t zp, int32_t qmin,
                        int32_t qmax, const int8_t *x, size_t ldx, int8_t *y,
                        size_t ldy, uint8_t *work)
{
    (void)work;
    const size_t kk = 4 * q8s_kp_k4(k);
    for (size_t j = 0; j < n; j++) {
        const int8_t *w = wk + j * kk;
        for (size_t i = 0; i < p; i++) {
            /* |x w| <= 2^14 and k <= Q8_MAX_K: no int32 overflow */
            int32_t acc = 0;
            for (size_t t = 0; t < k; t++) {
                acc += (int32_t)x[t * ldx + i] * (int32_t)w[t];
            }
            if (scale) {
                kern_q8s_requantf_c(1, &acc, add + j, scale + j, zp, qmin,
                                    qmax, y + j * ldy + i);
            } else {
                kern_q8s_requant_c(1, &acc, add + j, mult + j, lsh + j,
                                   rsh + j, zp, qmin, qmax, y + j * ldy + i);
            }
        }
    }
}

void kern_q8s_conv_kp_c(size_t n, size_t p, size_t k, const int8_t *wk,
                        const int32_t *add, const int32_t *mult,
                        const int32_t *lsh, const int32_t *rsh,
                        const float *scale, int32_t zp, int32_t qmin,
                        int32_t qmax, const int8_t *x, const size_t *roff,
                        size_t vw, size_t ow, int8_t *y, size_t ldy,
                        uint8_t *work)
{
    (void)work;
    const size_t kk = 4 * q8s_kp_k4(k);
    for (size_t j = 0; j < n; j++) {
        const int8_t *w = wk + j * kk;
        for (size_t v = 0; v < p; v++) {
            const size_t r = v / vw, c = v % vw;
            if (c >= ow) {
                continue;
            }
            int32_t acc = 0;
            for (size_t t = 0; t < k; t++) {
                acc += (int32_t)x[roff[t] + v] * (int32_t)w[t];
            }
            int8_t *o = y + j * ldy + r * ow + c;
            if (scale) {
                kern_q8s_requantf_c(1, &acc, add + j, scale + j, zp, qmin,
                                    qmax, o);
            } else {
                kern_q8s_requant_c(1, &acc, add + j, mult + j, lsh + j,
                                   rsh + j, zp, qmin, qmax, o);
            }
        }
    }
}

/* ---- dispatch ------------------------------------------------------------ */

void kern_q8s_dsp_init(struct kern_q8s_dsp *dsp, unsigned flags)
{
    dsp->gemm_kp = kern_q8s_gemm_kp_c;
    dsp->conv_kp = kern_q8s_conv_kp_c;
    dsp->requant = kern_q8s_requant_c;
    dsp->requant_tile = kern_q8s_requant_tile_c;
    dsp->requantf = kern_q8s_requantf_c;
    dsp->requantf_tile = kern_q8s_requantf_tile_c;
    dsp->transpose = kern_q8s_transpose_c;
    dsp->quant = kern_q8s_quant_c;
    dsp->add = kern_q8s_add_c;
    dsp->addf = kern_q8s_addf_c;
    dsp->rescale = kern_q8s_rescale_c;
    dsp->maxpool = kern_q8s_maxpool_c;
    dsp->dwconv = kern_q8s_dwconv_c;
    dsp->plane_sum = kern_q8s_plane_sum_c;
#if KERN_SIMD && KERN_HAVE_X86
    kern_q8s_dsp_init_x86(dsp, flags);
#elif KERN_SIMD && KERN_HAVE_NEON
    kern_q8s_dsp_init_arm(dsp, flags);
#else
    (void)flags;
#endif
}

static struct kern_q8s_dsp q8s_dsp;
static pthread_once_t q8s_once = PTHREAD_ONCE_INIT;

static void q8s_init_once(void)
{
    kern_q8s_dsp_init(&q8s_dsp, kern_cpu_flags());
}

static const struct kern_q8s_dsp *dsp_get(void)
{
    pthread_once(&q8s_once, q8s_init_once);
    return &q8s_dsp;
}

/* ---- public API ---------------------------------------------------------- */

KERN_API int kern_q8_quantize_multiplier(double real, int32_t *mult,
                                         int *shift)
{
    if (!mult || !shift) {
        return KERN_E_INVALID;
    }
    if (!isfinite(real) || real < 0.0) {
        return KERN_E_RANGE;
    }
    if (real == 0.0) {
        *mult = 0;
        *shift = 0;
        return KERN_OK;
    }
    int e;
    const double frac = frexp(real, &e); /* real = frac 2^e, frac in [.5, 1) */
    /* round() is half away from zero, as TFLite's TfLiteRound */
    int64_t qf = (int64_t)round(frac * (double)(1LL << 31));
    if (qf == (1LL << 31)) {
        /* the fraction rounded up to 1.0: 2^31 does not fit in int32 */
        qf /= 2;
        e++;
    }
    if (e < -31) {
        /* below 2^-32 every int32 input maps to 0 (TFLite: "flush") */
        qf = 0;
        e = 0;
    }
    if (e > 30) {
        /* TFLite caps the shift: larger multipliers saturate */
        e = 30;
        qf = (1LL << 31) - 1;
    }
    *mult = (int32_t)qf;
    *shift = e;
    return KERN_OK;
}

static int range_s8(int32_t v)
{
    return v >= -128 && v <= 127;
}

static int outstage_check(const struct kern_q8_outstage *os, size_t n)
{
    if (!os->scale && (!os->mult || !os->shift)) {
        return KERN_E_INVALID;
    }
    if (!range_s8(os->zero_point) || !range_s8(os->qmin) ||
        !range_s8(os->qmax) || os->qmin > os->qmax) {
        return KERN_E_RANGE;
    }
    const size_t cnt = os->per_channel ? n : 1;
    if (os->scale) {
        for (size_t j = 0; j < cnt; j++) {
            if (!isfinite(os->scale[j]) || !(os->scale[j] >= 0.0f)) {
                return KERN_E_RANGE;
            }
        }
        return KERN_OK;
    }
    for (size_t j = 0; j < cnt; j++) {
        if (os->shift[j] < -31 || os->shift[j] > 30) {
            return KERN_E_RANGE;
        }
    }
    return KERN_OK;
}

/* The parameters of columns [j0, j0 + nc) of an output stage, expanded to
 * one value per column; add[] = bias - a_zero * w_sums (w_sums may be
 * NULL: no zero point correction). The float stage fills scale[] and
 * leaves mult, lsh and rsh unset. */
struct tile_params {
    int32_t add[Q8S_NB], mult[Q8S_NB], lsh[Q8S_NB], rsh[Q8S_NB];
    float scale[Q8S_NB];
};

/* m rows of a tile through the stage os selects. */
static void tile_requant(const struct kern_q8s_dsp *d,
                         const struct kern_q8_outstage *os,
                         const struct tile_params *t, size_t m, size_t nc,
                         const int32_t *acc, size_t lda, int8_t *q,
                         size_t ldq)
{
    if (os->scale) {
        d->requantf_tile(m, nc, acc, lda, t->add, t->scale, os->zero_point,
                         os->qmin, os->qmax, q, ldq);
    } else {
        d->requant_tile(m, nc, acc, lda, t->add, t->mult, t->lsh, t->rsh,
                        os->zero_point, os->qmin, os->qmax, q, ldq);
    }
}

static void tile_params_fill(struct tile_params *t,
                             const struct kern_q8_outstage *os, size_t j0,
                             size_t nc, int32_t a_zero, const int32_t *w_sums)
{
    for (size_t j = 0; j < nc; j++) {
        const size_t c = os->per_channel ? j0 + j : 0;
        if (os->scale) {
            t->scale[j] = os->scale[c];
        } else {
            const int s = os->shift[c];
            t->mult[j] = os->mult[c];
            t->lsh[j] = s > 0 ? s : 0;
            t->rsh[j] = s > 0 ? 0 : -s;
        }
        int32_t add = os->bias ? os->bias[j0 + j] : 0;
        if (w_sums) {
            /* |a_zero * w_sum| <= 128 * 128 * K < 2^31 for the row sums of
             * K <= Q8_MAX_K; other sums a caller passes wrap like the
             * bias, in 64 bits first so that nothing overflows */
            add = q8s_wrap_add(
                add, (int32_t)(uint32_t)(uint64_t)(-(int64_t)a_zero *
                                                   w_sums[j0 + j]));
        }
        t->add[j] = add;
    }
}

KERN_API int kern_q8_requantize_s8(size_t m, size_t n, const int32_t *acc,
                                   size_t ld_acc,
                                   const struct kern_q8_outstage *os,
                                   int8_t *q, size_t ldq)
{
    if (!os || (m && n && (!acc || !q))) {
        return KERN_E_INVALID;
    }
    if (ld_acc < n || ldq < n) {
        return KERN_E_SHAPE;
    }
    if (m && ((m - 1) > (SIZE_MAX - n) / (ld_acc ? ld_acc : 1) ||
              (m - 1) > (SIZE_MAX - n) / (ldq ? ldq : 1))) {
        return KERN_E_OVERFLOW;
    }
    int st = outstage_check(os, n);
    if (st != KERN_OK) {
        return st;
    }
    const struct kern_q8s_dsp *d = dsp_get();
    struct tile_params t;
    for (size_t j0 = 0; j0 < n && m; j0 += Q8S_NB) {
        const size_t nc = n - j0 < Q8S_NB ? n - j0 : Q8S_NB;
        tile_params_fill(&t, os, j0, nc, 0, NULL);
        tile_requant(d, os, &t, m, nc, acc + j0, ld_acc, q + j0, ldq);
    }
    return KERN_OK;
}

static int packed_hdr(const void *packed_w, struct q8_packed_hdr *hdr)
{
    memcpy(hdr, packed_w, sizeof *hdr);
    return hdr->magic == Q8_MAGIC ? KERN_OK : KERN_E_INVALID;
}

KERN_API int kern_q8_packed_row_sums(const void *packed_w, int32_t *sums)
{
    struct q8_packed_hdr hdr;
    if (!packed_w || !sums || packed_hdr(packed_w, &hdr) != KERN_OK) {
        return KERN_E_INVALID;
    }
    const size_t n = (size_t)hdr.n, k = (size_t)hdr.k;
    const size_t kg = q8_groups(k);
    const uint8_t *bp = (const uint8_t *)packed_w + Q8_HDR_BYTES;
    for (size_t j = 0; j < n; j++) {
        const uint8_t *col =
            bp + ((j / Q8_NB) * kg * Q8_NB + j % Q8_NB) * Q8_KG;
        int64_t s = 0;
        for (size_t t = 0; t < k; t++) {
            s += (int32_t)col[(t / Q8_KG) * Q8_NB * Q8_KG + t % Q8_KG] - 128;
        }
        /* |s| <= 128 K: fits for any K the GEMM accepts; larger K is
         * refused there, so saturating here loses nothing */
        sums[j] = s > INT32_MAX ? INT32_MAX : s < INT32_MIN ? INT32_MIN
                                                            : (int32_t)s;
    }
    return KERN_OK;
}

/* kern_q8_gemm_s8 (trans 0) and kern_q8_gemm_s8_t (trans 1). */
static int gemm_s8(size_t m, size_t n, size_t k, const int8_t *a, size_t lda,
                   int32_t a_zero, const void *packed_w,
                   const int32_t *w_sums, const struct kern_q8_outstage *os,
                   int8_t *q, size_t ldq, int trans)
{
    struct q8_packed_hdr hdr;
    if (!packed_w || !w_sums || !os || (m && (!a || !q))) {
        return KERN_E_INVALID;
    }
    if (packed_hdr(packed_w, &hdr) != KERN_OK) {
        return KERN_E_INVALID;
    }
    if (hdr.n != n || hdr.k != k || !n || !k || lda < k ||
        ldq < (trans ? m : n)) {
        return KERN_E_SHAPE;
    }
    if (k > Q8_MAX_K || !range_s8(a_zero)) {
        return KERN_E_RANGE;
    }
    if ((m - (m > 0)) > SIZE_MAX / (lda > ldq ? lda : ldq) ||
        (trans && (n - 1) > (SIZE_MAX - m) / ldq)) {
        return KERN_E_OVERFLOW;
    }
    int st = outstage_check(os, n);
    if (st != KERN_OK || !m) {
        return st;
    }
    const kern_q8_gemm_fn gemm = kern_q8_dsp_get()->gemm;
    const struct kern_q8s_dsp *d = dsp_get();
    const uint8_t *bp = (const uint8_t *)packed_w + Q8_HDR_BYTES;
    const size_t kg = q8_groups(k);
    int32_t tile[Q8S_MB * Q8S_NB];
    int8_t qt[Q8S_MB * Q8S_NB];
    struct tile_params t;
    /* Columns outside: a tile's parameters are filled once and the weights
     * of Q8S_NB columns (K x 64 bytes) stay in L2 over every row tile. */
    for (size_t j0 = 0; j0 < n; j0 += Q8S_NB) {
        const size_t nc = n - j0 < Q8S_NB ? n - j0 : Q8S_NB;
        tile_params_fill(&t, os, j0, nc, a_zero, w_sums);
        /* j0 is a multiple of Q8_NB: the columns start a packed block */
        const uint8_t *bj = bp + (j0 / Q8_NB) * kg * Q8_NB * Q8_KG;
        for (size_t i0 = 0; i0 < m; i0 += Q8S_MB) {
            const size_t mc = m - i0 < Q8S_MB ? m - i0 : Q8S_MB;
            gemm(mc, nc, k, a + i0 * lda, lda, bj, tile, Q8S_NB);
            if (!trans) {
                tile_requant(d, os, &t, mc, nc, tile, Q8S_NB,
                             q + i0 * ldq + j0, ldq);
                continue;
            }
            /* the tile's bytes, then transposed into the planes */
            tile_requant(d, os, &t, mc, nc, tile, Q8S_NB, qt, Q8S_NB);
            d->transpose(mc, nc, qt, Q8S_NB, q + j0 * ldq + i0, ldq);
        }
    }
    return KERN_OK;
}

KERN_API int kern_q8_gemm_s8(size_t m, size_t n, size_t k, const int8_t *a,
                             size_t lda, int32_t a_zero, const void *packed_w,
                             const int32_t *w_sums,
                             const struct kern_q8_outstage *os, int8_t *q,
                             size_t ldq)
{
    return gemm_s8(m, n, k, a, lda, a_zero, packed_w, w_sums, os, q, ldq, 0);
}

KERN_API int kern_q8_gemm_s8_t(size_t m, size_t n, size_t k,
                               const int8_t *a, size_t lda, int32_t a_zero,
                               const void *packed_w, const int32_t *w_sums,
                               const struct kern_q8_outstage *os, int8_t *q,
                               size_t ldq)
{
    return gemm_s8(m, n, k, a, lda, a_zero, packed_w, w_sums, os, q, ldq, 1);
}

/* The taps of one output along an axis that land inside the input: tap t
 * reads padded position r0 + t d, inside when pad <= r0 + t d < pad + in.
 * Found once per output, so the tap loops carry no test (the taps in the
 * padding read the zero point and would add 0). */
static size_t tap_begin(size_t r0, size_t d, size_t pad)
{
    return r0 >= pad ? 0 : (pad - r0 + d - 1) / d;
}

static size_t tap_end(size_t r0, size_t d, size_t k, size_t pad, size_t in)
{
    if (r0 >= pad + in) {
        return 0;
    }
    const size_t e = (pad + in - r0 + d - 1) / d;
    return e < k ? e : k;
}

/* The output stage of one channel, expanded to Q8S_NB columns: the
 * depthwise kernels requantise a run of outputs of one channel at once. */
static void chan_params(struct tile_params *t,
                        const struct kern_q8_outstage *os, size_t c)
{
    tile_params_fill(t, os, c, 1, 0, NULL);
    for (size_t j = 1; j < Q8S_NB; j++) {
        t->add[j] = t->add[0];
        t->mult[j] = t->mult[0];
        t->lsh[j] = t->lsh[0];
        t->rsh[j] = t->rsh[0];
        t->scale[j] = t->scale[0];
    }
}

/* n sums of one channel through the C reference of the stage os
 * selects. */
static void row_requant_c(const struct kern_q8_outstage *os,
                          const struct tile_params *t, size_t n,
                          const int32_t *acc, int8_t *q)
{
    if (os->scale) {
        kern_q8s_requantf_c(n, acc, t->add, t->scale, os->zero_point,
                            os->qmin, os->qmax, q);
    } else {
        kern_q8s_requant_c(n, acc, t->add, t->mult, t->lsh, t->rsh,
                           os->zero_point, os->qmin, os->qmax, q);
    }
}

void kern_q8s_dwconv_c(const struct kern_dwconv2d_shape *s, size_t oh,
                       size_t ow, const int8_t *x, int32_t x_zero,
                       const int8_t *w, const struct kern_q8_outstage *os,
                       int8_t *y, int8_t *scratch)
{
    (void)scratch;
    const size_t ch = s->channels;
    const size_t ip = s->in_h * s->in_w, op = oh * ow;
    const size_t dh = s->dilation_h ? s->dilation_h : 1;
    const size_t dw = s->dilation_w ? s->dilation_w : 1;
    const size_t taps = s->kh * s->kw;
    int32_t accrow[Q8S_NB];
    int8_t qrow[Q8S_NB];
    struct tile_params t;
    for (size_t b = 0; b < s->batch; b++) {
        for (size_t c = 0; c < ch; c++) {
            const int8_t *xp = x + (b * ch + c) * ip;
            const int8_t *wc = w + c * taps;
            int8_t *yp = y + (b * ch + c) * op;
            /* a padded tap reads x_zero, so (x - x_zero) w adds 0: the
             * taps outside the input are skipped */
            chan_params(&t, os, c);
            size_t filled = 0;
            for (size_t oy = 0; oy < oh; oy++) {
                for (size_t ox = 0; ox < ow; ox++) {
                    int32_t acc = 0;
                    const size_t ky1 = tap_end(oy * s->stride_h, dh, s->kh,
                                               s->pad_top, s->in_h);
                    const size_t kx0 = tap_begin(ox * s->stride_w, dw,
                                                 s->pad_left);
                    const size_t kx1 = tap_end(ox * s->stride_w, dw, s->kw,
                                               s->pad_left, s->in_w);
                    for (size_t ky = tap_begin(oy * s->stride_h, dh,
                                               s->pad_top);
                         ky < ky1; ky++) {
                        const int8_t *xr =
                            xp + (oy * s->stride_h + ky * dh - s->pad_top) *
                                     s->in_w;
                        const int8_t *wr = wc + ky * s->kw;
                        const size_t rx = ox * s->stride_w;
                        for (size_t kx = kx0; kx < kx1; kx++) {
                            acc += ((int32_t)xr[rx + kx * dw - s->pad_left] -
                                    x_zero) * (int32_t)wr[kx];
                        }
                    }
                    accrow[filled++] = acc;
                    if (filled == Q8S_NB) {
                        const size_t at = oy * ow + ox + 1 - filled;
                        row_requant_c(os, &t, filled, accrow, qrow);
                        memcpy(yp + at, qrow, filled);
                        filled = 0;
                    }
                }
            }
            if (filled) {
                row_requant_c(os, &t, filled, accrow, qrow);
                memcpy(yp + op - filled, qrow, filled);
            }
        }
    }
}

/* The caller's work area may start at any address; the vector paths store
 * int16 and int32 lanes in it, so it is used from its first 64-byte
 * boundary, and the work bytes the caller is told include that slack. */
#define Q8S_WORK_ALIGN 64u

static size_t q8s_work_with_slack(size_t bytes)
{
    return bytes && bytes <= SIZE_MAX - (Q8S_WORK_ALIGN - 1)
               ? bytes + (Q8S_WORK_ALIGN - 1)
               : 0;
}

static int8_t *q8s_work_aligned(void *work)
{
    const uintptr_t u = (uintptr_t)work;
    const uintptr_t a = (u + (Q8S_WORK_ALIGN - 1)) &
                        ~(uintptr_t)(Q8S_WORK_ALIGN - 1);
    return (int8_t *)work + (a - u);
}

KERN_API size_t kern_q8_dwconv2d_work_bytes(
    const struct kern_dwconv2d_shape *s)
{
    size_t oh, ow;
    if (!s || kern_dwconv2d_out_hw(s, &oh, &ow) != KERN_OK) {
        return 0;
    }
    return q8s_work_with_slack(q8s_dwconv_scratch(s));
}

KERN_API int kern_q8_dwconv2d_s8(const struct kern_dwconv2d_shape *s,
                                 const int8_t *x, int32_t x_zero,
                                 const int8_t *w,
                                 const struct kern_q8_outstage *os,
                                 void *work, int8_t *y)
{
    if (!s || !x || !w || !os || !y) {
        return KERN_E_INVALID;
    }
    size_t oh, ow;
    int st = kern_dwconv2d_out_hw(s, &oh, &ow);
    if (st != KERN_OK) {
        return st;
    }
    const size_t ch = s->channels;
    if (!s->batch || !ch) {
        return KERN_E_SHAPE;
    }
    if (s->kh > 65536 / s->kw || !range_s8(x_zero)) {
        return KERN_E_RANGE;
    }
    /* sizes of x and y: batch * channels * plane must fit */
    const size_t ip = s->in_h * s->in_w, op = oh * ow;
    if (s->in_h > SIZE_MAX / s->in_w || ch > SIZE_MAX / s->batch ||
        ip > SIZE_MAX / (s->batch * ch) || op > SIZE_MAX / (s->batch * ch)) {
        return KERN_E_OVERFLOW;
    }
    st = outstage_check(os, ch);
    if (st != KERN_OK) {
        return st;
    }
    const struct kern_q8s_dsp *d = dsp_get();
    int8_t *scratch = NULL, *own = NULL;
    if (d->dwconv != kern_q8s_dwconv_c) {
        const size_t bytes = q8s_work_with_slack(q8s_dwconv_scratch(s));
        if (!bytes) {
            return KERN_E_OVERFLOW;
        }
        if (!work) {
            work = own = malloc(bytes);
            if (!work) {
                return KERN_E_NOMEM;
            }
        }
        scratch = q8s_work_aligned(work);
    }
    d->dwconv(s, oh, ow, x, x_zero, w, os, y, scratch);
    free(own);
    return KERN_OK;
}

static int add_check(const struct kern_q8_add_params *p)
{
    if (!range_s8(p->a_zero) || !range_s8(p->b_zero) ||
        !range_s8(p->out_zero) || !range_s8(p->qmin) || !range_s8(p->qmax) ||
        p->qmin > p->qmax || p->left_shift < 0 || p->left_shift > 20 ||
        p->a_shift < -31 || p->a_shift > 0 || p->b_shift < -31 ||
        p->b_shift > 0 || p->out_shift < -31 || p->out_shift > 30) {
        return KERN_E_RANGE;
    }
    return KERN_OK;
}

/* An add's three scales: finite and above zero. */
static bool add_scales_ok(float a_scale, float b_scale, float out_scale)
{
    const float sc[3] = {a_scale, b_scale, out_scale};
    for (int i = 0; i < 3; i++) {
        if (!isfinite(sc[i]) || !(sc[i] > 0.0f)) {
            return false;
        }
    }
    return true;
}

KERN_API int kern_q8_add_params_init(float a_scale, int32_t a_zero,
                                     float b_scale, int32_t b_zero,
                                     float out_scale, int32_t out_zero,
                                     int32_t qmin, int32_t qmax,
                                     struct kern_q8_add_params *p)
{
    if (!p) {
        return KERN_E_INVALID;
    }
    if (!add_scales_ok(a_scale, b_scale, out_scale)) {
        return KERN_E_RANGE;
    }
    struct kern_q8_add_params r = {0};
    r.a_zero = a_zero;
    r.b_zero = b_zero;
    r.out_zero = out_zero;
    r.qmin = qmin;
    r.qmax = qmax;
    r.left_shift = 20;
    /* TFLite's PrepareForAdd, in double as TFLite does */
    const double twice_max =
        2.0 * (a_scale > b_scale ? (double)a_scale : (double)b_scale);
    int st = kern_q8_quantize_multiplier((double)a_scale / twice_max,
                                         &r.a_mult, &r.a_shift);
    if (st == KERN_OK) {
        st = kern_q8_quantize_multiplier((double)b_scale / twice_max,
                                         &r.b_mult, &r.b_shift);
    }
    if (st == KERN_OK) {
        st = kern_q8_quantize_multiplier(
            twice_max / ((double)(1 << r.left_shift) * (double)out_scale),
            &r.out_mult, &r.out_shift);
    }
    if (st == KERN_OK) {
        st = add_check(&r);
    }
    if (st == KERN_OK) {
        *p = r;
    }
    return st;
}

KERN_API int kern_q8_add_s8(size_t n, const int8_t *a, const int8_t *b,
                            const struct kern_q8_add_params *p, int8_t *out)
{
    if (!p || (n && (!a || !b || !out))) {
        return KERN_E_INVALID;
    }
    int st = add_check(p);
    if (st == KERN_OK && n) {
        dsp_get()->add(n, a, b, p, out);
    }
    return st;
}

KERN_API int kern_q8_addf_params_init(float a_scale, int32_t a_zero,
                                      float b_scale, int32_t b_zero,
                                      float out_scale, int32_t out_zero,
                                      int32_t qmin, int32_t qmax, int u8,
                                      struct kern_q8_addf_params *p)
{
    if (!p) {
        return KERN_E_INVALID;
    }
    if (!add_scales_ok(a_scale, b_scale, out_scale)) {
        return KERN_E_RANGE;
    }
    if (!range_s8(a_zero) || !range_s8(b_zero) || !range_s8(out_zero) ||
        !range_s8(qmin) || !range_s8(qmax) || qmin > qmax) {
        return KERN_E_RANGE;
    }
    struct kern_q8_addf_params r;
    r.off = u8 ? 128 : 0;
    r.ra = a_scale / out_scale;
    r.rb = b_scale / out_scale;
    /* separate roundings (the build has no contraction) */
    const float za = r.ra * (float)(a_zero + r.off);
    const float zb = r.rb * (float)(b_zero + r.off);
    r.fixed = (float)(out_zero + r.off) - (za + zb);
    r.qmin = qmin;
    r.qmax = qmax;
    if (!isfinite(r.ra) || !isfinite(r.rb) || !isfinite(r.fixed)) {
        return KERN_E_RANGE;
    }
    *p = r;
    return KERN_OK;
}

KERN_API int kern_q8_addf_s8(size_t n, const int8_t *a, const int8_t *b,
                             const struct kern_q8_addf_params *p, int8_t *out)
{
    if (!p || (n && (!a || !b || !out))) {
        return KERN_E_INVALID;
    }
    if (!range_s8(p->qmin) || !range_s8(p->qmax) || p->qmin > p->qmax ||
        (p->off != 0 && p->off != 128) || !isfinite(p->ra) || !isfinite(p->rb) || !isfinite(p->fixed)) {
        return KERN_E_RANGE;
    }
    if (n) {
        dsp_get()->addf(n, a, b, p, out);
    }
    return KERN_OK;
}

/* ---- rescale and pools --------------------------------------------------- */

static int rescale_check(const struct kern_q8_rescale *r)
{
    if (!range_s8(r->out_zero) || !range_s8(r->qmin) || !range_s8(r->qmax) ||
        r->qmin > r->qmax || r->shift < -31 || r->shift > 30 ||
        r->left_shift < 0 ||
        r->left_shift + (r->shift > 0 ? r->shift : 0) > 22) {
        return KERN_E_RANGE;
    }
    return KERN_OK;
}

static int scale_ok(float s)
{
    return isfinite(s) && s > 0.0f;
}

KERN_API int kern_q8_rescale_init(float in_scale, float out_scale,
                                  int32_t out_zero, int32_t qmin,
                                  int32_t qmax, struct kern_q8_rescale *r)
{
    if (!r) {
        return KERN_E_INVALID;
    }
    if (!scale_ok(in_scale) || !scale_ok(out_scale)) {
        return KERN_E_RANGE;
    }
    struct kern_q8_rescale t = {0};
    t.left_shift = 20;
    t.out_zero = out_zero;
    t.qmin = qmin;
    t.qmax = qmax;
    double real = (double)in_scale / (double)out_scale;
    /* above 1024 every nonzero difference lands beyond 255 and saturates
     * as it would with the true ratio; capped, d 2^max(shift, 0) stays
     * within int32 */
    if (real > 1024.0) {
        real = 1024.0;
    }
    int st = kern_q8_quantize_multiplier(real / (double)(1 << t.left_shift),
                                         &t.mult, &t.shift);
    if (st == KERN_OK) {
        st = rescale_check(&t);
    }
    if (st == KERN_OK) {
        *r = t;
    }
    return st;
}

KERN_API int kern_q8_rescale_s8(size_t n, const int8_t *x, int32_t x_zero,
                                const struct kern_q8_rescale *r, int8_t *y)
{
    if (!r || (n && (!x || !y))) {
        return KERN_E_INVALID;
    }
    if (!range_s8(x_zero)) {
        return KERN_E_RANGE;
    }
    int st = rescale_check(r);
    if (st == KERN_OK && n) {
        dsp_get()->rescale(n, x, x_zero, r, y);
    }
    return st;
}

KERN_API size_t kern_q8_maxpool2d_work_bytes(
    const struct kern_pool2d_shape *s)
{
    size_t oh, ow;
    if (!s || kern_pool2d_out_hw(s, &oh, &ow) != KERN_OK) {
        return 0;
    }
    return q8s_work_with_slack(
        q8s_maxpool_scratch(s->pad_left, s->in_w, s->pad_right, s->kw));
}

KERN_API int kern_q8_maxpool2d_s8(const struct kern_pool2d_shape *s,
                                  const int8_t *x, void *work, int8_t *y)
{
    if (!s || !x || !y) {
        return KERN_E_INVALID;
    }
    size_t oh, ow;
    int st = kern_pool2d_out_hw(s, &oh, &ow);
    if (st != KERN_OK) {
        return st;
    }
    const struct kern_q8s_dsp *d = dsp_get();
    int8_t *scratch = NULL, *own = NULL;
    if (d->maxpool != kern_q8s_maxpool_c) {
        const size_t bytes = q8s_work_with_slack(
            q8s_maxpool_scratch(s->pad_left, s->in_w, s->pad_right, s->kw));
        if (!bytes) {
            return KERN_E_OVERFLOW;
        }
        if (!work) {
            work = own = malloc(bytes);
            if (!work) {
                return KERN_E_NOMEM;
            }
        }
        scratch = q8s_work_aligned(work);
    }
    d->maxpool(s, oh, ow, x, y, scratch);
    free(own);
    return KERN_OK;
}

/* The average pools' requantisation: out = clamp(out_zero + round(acc
 * mult / (count 2^rs))), one exact 64-bit division rounded half away from
 * zero. zero: the ratio is below 2^-10, so every output is out_zero. */
struct avg_rq {
    int64_t mult;
    int rs;
    int zero;
    int32_t out_zero, qmin, qmax;
};

enum { Q8S_AVG_MAX_COUNT = 1 << 22 };

static int avg_rq_init(float x_scale, int32_t x_zero, float out_scale,
                       int32_t out_zero, int32_t qmin, int32_t qmax,
                       struct avg_rq *q)
{
    if (!scale_ok(x_scale) || !scale_ok(out_scale) || !range_s8(x_zero) ||
        !range_s8(out_zero) || !range_s8(qmin) || !range_s8(qmax) ||
        qmin > qmax) {
        return KERN_E_RANGE;
    }
    int32_t m;
    int e;
    int st = kern_q8_quantize_multiplier((double)x_scale / (double)out_scale,
                                         &m, &e);
    if (st != KERN_OK) {
        return st;
    }
    q->out_zero = out_zero;
    q->qmin = qmin;
    q->qmax = qmax;
    /* the ratio is m 2^(e - 31); below 2^-10 (e <= -10), |acc / count| <=
     * 255 gives less than 1/4: 0. Else rs = 31 - e <= 40, and count <=
     * 2^22 keeps count 2^rs <= 2^62; |acc| <= 255 2^22 keeps acc m below
     * 2^61. */
    q->zero = m == 0 || e <= -10;
    q->mult = m;
    q->rs = q->zero ? 0 : 31 - e;
    return KERN_OK;
}

static int8_t avg_rq_apply(const struct avg_rq *q, int64_t acc, int64_t count)
{
    int64_t r = 0;
    if (!q->zero) {
        const int64_t v = acc * q->mult;
        const int64_t den = count << q->rs;
        r = v / den; /* truncated toward zero */
        const int64_t rem = v % den;
        const int64_t arem = rem < 0 ? -rem : rem;
        if (arem >= den - arem) { /* |rem| >= den / 2: half away from 0 */
            r += v < 0 ? -1 : 1;
        }
    }
    int64_t o = r + q->out_zero;
    o = o < q->qmin ? q->qmin : o > q->qmax ? q->qmax : o;
    return (int8_t)o;
}

/* The averages of planes planes of one window each, the first n values
 * of every ld: their sums by the table's plane_sum, 64 planes at a time,
 * then avg_rq_apply with the count n (windows shorter than 32 values, a
 * plane at a time in C). */
static void window_avg(size_t planes, size_t n, size_t ld, const int8_t *x,
                       int32_t x_zero, const struct avg_rq *q, int8_t *y)
{
    if (n < 32) {
        /* windows shorter than a vector (MobileNetV2's 3 x 3 over 1280
         * channels): the sum and the division plane by plane measured
         * faster than the table's sums and the divisions after */
        for (size_t p = 0; p < planes; p++) {
            const int8_t *xp = x + p * ld;
            int32_t sum = 0;
            for (size_t i = 0; i < n; i++) {
                sum += xp[i];
            }
            const int64_t acc = (int64_t)sum - (int64_t)x_zero * (int64_t)n;
            y[p] = avg_rq_apply(q, acc, (int64_t)n);
        }
        return;
    }
    const struct kern_q8s_dsp *d = dsp_get();
    int32_t sums[64];
    for (size_t p0 = 0; p0 < planes; p0 += 64) {
        const size_t np = planes - p0 < 64 ? planes - p0 : 64;
        d->plane_sum(np, n, ld, x + p0 * ld, sums);
        for (size_t p = 0; p < np; p++) {
            const int64_t acc =
                (int64_t)sums[p] - (int64_t)x_zero * (int64_t)n;
            y[p0 + p] = avg_rq_apply(q, acc, (int64_t)n);
        }
    }
}

KERN_API int kern_q8_avgpool2d_s8(const struct kern_pool2d_shape *s,
                                  const int8_t *x, int32_t x_zero,
                                  float x_scale, int32_t out_zero,
                                  float out_scale, int32_t qmin,
                                  int32_t qmax, int8_t *y)
{
    if (!s || !x || !y) {
        return KERN_E_INVALID;
    }
    size_t oh, ow;
    int st = kern_pool2d_out_hw(s, &oh, &ow);
    if (st != KERN_OK) {
        return st;
    }
    struct avg_rq q;
    st = avg_rq_init(x_scale, x_zero, out_scale, out_zero, qmin, qmax, &q);
    if (st != KERN_OK) {
        return st;
    }
    if (s->kh * s->kw > Q8S_AVG_MAX_COUNT) { /* the product was checked */
        return KERN_E_RANGE;
    }
    const size_t ih = s->in_h, iw = s->in_w;
    if (oh == 1 && ow == 1 && s->kh <= ih && s->kw == iw && !s->pad_top &&
        !s->pad_left && !s->pad_bottom && !s->pad_right) {
        /* one window a plane over whole rows from the top of an unpadded
         * map (ResNet-8's, DS-CNN's 24 x 5 of 25 x 5 and MobileNet's
         * last pools): kh iw values in a row, every count kh iw */
        window_avg(s->batch * s->channels, s->kh * iw, ih * iw, x, x_zero,
                   &q, y);
        return KERN_OK;
    }
    for (size_t p = 0; p < s->batch * s->channels; p++) {
        const int8_t *xp = x + p * ih * iw;
        int8_t *yp = y + p * oh * ow;
        for (size_t oy = 0; oy < oh; oy++) {
            size_t y0, y1;
            kern_pool_window(oy, s->stride_h, s->pad_top, s->kh, ih, &y0, &y1);
            for (size_t ox = 0; ox < ow; ox++) {
                size_t x0, x1;
                kern_pool_window(ox, s->stride_w, s->pad_left, s->kw, iw, &x0,
                                 &x1);
                int64_t acc = 0;
                for (size_t iy = y0; iy < y1; iy++) {
                    for (size_t ix = x0; ix < x1; ix++) {
                        acc += (int32_t)xp[iy * iw + ix] - x_zero;
                    }
                }
                const size_t count = s->count_include_pad
                                         ? s->kh * s->kw
                                         : (y1 - y0) * (x1 - x0);
                yp[oy * ow + ox] = avg_rq_apply(&q, acc, (int64_t)count);
            }
        }
    }
    return KERN_OK;
}

KERN_API int kern_q8_global_avgpool_s8(size_t batch, size_t channels,
                                       size_t hw, const int8_t *x,
                                       int32_t x_zero, float x_scale,
                                       int32_t out_zero, float out_scale,
                                       int32_t qmin, int32_t qmax,
                                       int8_t *y)
{
    if (!x || !y) {
        return KERN_E_INVALID;
    }
    if (!batch || !channels || !hw) {
        return KERN_E_SHAPE;
    }
    if (channels > SIZE_MAX / batch || hw > SIZE_MAX / (batch * channels)) {
        return KERN_E_OVERFLOW;
    }
    struct avg_rq q;
    int st = avg_rq_init(x_scale, x_zero, out_scale, out_zero, qmin, qmax, &q);
    if (st != KERN_OK) {
        return st;
    }
    if (hw > Q8S_AVG_MAX_COUNT) {
        return KERN_E_RANGE;
    }
    window_avg(batch * channels, hw, hw, x, x_zero, &q, y);
    return KERN_OK;
}

KERN_API int kern_q8_quantize_zp_f32(const float *x, size_t n, float scale,
                                     int32_t zero, int8_t *q)
{
    if (n && (!x || !q)) {
        return KERN_E_INVALID;
    }
    if (!scale_ok(scale) || !range_s8(zero)) {
        return KERN_E_RANGE;
    }
    if (n) {
        dsp_get()->quant(x, n, scale, zero, q);
    }
    return KERN_OK;
}

/* ---- the kp layout: channels by pixels ---------------------------------- */

KERN_API size_t kern_q8_kp_bytes(size_t n, size_t k)
{
    if (!n || !k || k > Q8_MAX_K ||
        n > SIZE_MAX / (4 * q8s_kp_k4(k) + sizeof(int32_t))) {
        return 0;
    }
    return n * (4 * q8s_kp_k4(k) + sizeof(int32_t));
}

KERN_API int kern_q8_pack_kp(size_t n, size_t k, const int8_t *w, size_t ldw,
                             void *wk)
{
    if (!w || !wk) {
        return KERN_E_INVALID;
    }
    if (!kern_q8_kp_bytes(n, k) || ldw < k) {
        return KERN_E_SHAPE;
    }
    if ((n - 1) > (SIZE_MAX - k) / ldw) {
        return KERN_E_OVERFLOW;
    }
    const size_t kk = 4 * q8s_kp_k4(k);
    int8_t *d = wk;
    /* the sums follow the n rows of kk bytes: 4-byte aligned offset */
    unsigned char *sums = (unsigned char *)wk + n * kk;
    for (size_t j = 0; j < n; j++) {
        int32_t s = 0;
        for (size_t t = 0; t < kk; t++) {
            const int8_t v = t < k ? w[j * ldw + t] : 0;
            d[j * kk + t] = v;
            s += v;
        }
        memcpy(sums + j * sizeof s, &s, sizeof s);
    }
    return KERN_OK;
}

KERN_API size_t kern_q8_kp_work_bytes(size_t n, size_t k)
{
    if (!kern_q8_kp_bytes(n, k) || n > (SIZE_MAX / 2) / 16) {
        return 0;
    }
    return 16 * n + q8s_kp_work(k);
}

KERN_API int kern_q8_kp_native(void)
{
    return dsp_get()->gemm_kp != kern_q8s_gemm_kp_c;
}

/* The kp kernels' parameters, one per channel, at the start of a work
 * area (16 n bytes): the zero point's correction folded into the bias as
 * tile_params_fill does, so the sums are the packed GEMM's bit for bit;
 * the float stage's scales in the multipliers' place. */
struct kp_params {
    int32_t *add, *mult, *lsh, *rsh;
    const float *scale;
    bool odd_mult; /* a multiplier INT32_MIN: the C reference's case */
};

static void kp_params_fill(size_t n, size_t k, const void *wk, int32_t x_zero,
                           const struct kern_q8_outstage *os, void *work,
                           struct kp_params *kp)
{
    const size_t kk = 4 * q8s_kp_k4(k);
    int32_t *add = work, *mult = add + n, *lsh = mult + n, *rsh = lsh + n;
    float *scale = os->scale ? (float *)(void *)mult : NULL;
    const unsigned char *sums = (const unsigned char *)wk + n * kk;
    bool odd_mult = false;
    for (size_t j = 0; j < n; j++) {
        const size_t c = os->per_channel ? j : 0;
        if (scale) {
            scale[j] = os->scale[c];
        } else {
            const int s = os->shift[c];
            mult[j] = os->mult[c];
            lsh[j] = s > 0 ? s : 0;
            rsh[j] = s > 0 ? 0 : -s;
            /* the vector path's high multiply has no saturating case */
            odd_mult |= mult[j] == INT32_MIN;
        }
        int32_t ws;
        memcpy(&ws, sums + j * sizeof ws, sizeof ws);
        add[j] = q8s_wrap_add(os->bias ? os->bias[j] : 0,
                              (int32_t)(uint32_t)(uint64_t)(-(int64_t)x_zero *
                                                            ws));
    }
    kp->add = add, kp->mult = mult, kp->lsh = lsh, kp->rsh = rsh;
    kp->scale = scale;
    kp->odd_mult = odd_mult;
}

KERN_API int kern_q8_gemm_kp_s8(size_t n, size_t p, size_t k, const void *wk,
                                const int8_t *x, size_t ldx, int32_t x_zero,
                                const struct kern_q8_outstage *os, int8_t *y,
                                size_t ldy, void *work)
{
    if (!wk || !os || !work || (p && (!x || !y))) {
        return KERN_E_INVALID;
    }
    if (!kern_q8_kp_bytes(n, k) || ldx < p || ldy < p) {
        return KERN_E_SHAPE;
    }
    if (!range_s8(x_zero)) {
        return KERN_E_RANGE;
    }
    if ((k - 1) > (SIZE_MAX - p) / (ldx ? ldx : 1) ||
        (n - 1) > (SIZE_MAX - p) / (ldy ? ldy : 1)) {
        return KERN_E_OVERFLOW;
    }
    int st = outstage_check(os, n);
    if (st != KERN_OK || !p) {
        return st;
    }
    struct kp_params kp;
    kp_params_fill(n, k, wk, x_zero, os, work, &kp);
    const bool odd_mult = kp.odd_mult;
    int32_t *add = kp.add, *mult = kp.mult, *lsh = kp.lsh, *rsh = kp.rsh;
    const float *scale = kp.scale;
    const struct kern_q8s_dsp *d = dsp_get();
    const kern_q8s_gemm_kp_fn f = odd_mult ? kern_q8s_gemm_kp_c : d->gemm_kp;
    f(n, p, k, wk, add, mult, lsh, rsh, scale, os->zero_point, os->qmin,
      os->qmax, x, ldx, y, ldy, (uint8_t *)(rsh + n));
    return KERN_OK;
}

/* ---- the kp convolution read in place ----------------------------------- */

/* The geometry of kern_q8_conv_kp_s8: the padded input split into sh x
 * sw phase planes of h2 x w2 bytes per channel (phase (py, px) holds the
 * padded input's rows r * sh + py and columns c * sw + px, so a stride
 * becomes stride 1 within a phase), the virtual pixels p = (oh - 1) * w2
 * + ow, and the work area's parts. */
struct kp_geom {
    size_t oh, ow, sh, sw, h2, w2, plane, planes, p, k;
    size_t roff_at, planes_at, kwork_at, bytes;
};

static int kp_geom_of(const struct kern_conv2d_shape *s, size_t n,
                      struct kp_geom *g)
{
    int st = kern_conv2d_out_hw(s, &g->oh, &g->ow);
    if (st != KERN_OK) {
        return st;
    }
    if (s->groups != 1 || s->dilation_h > 1 || s->dilation_w > 1 ||
        s->out_c != n) {
        return KERN_E_SHAPE;
    }
    g->sh = s->stride_h, g->sw = s->stride_w;
    /* kern_conv2d_out_hw checked that the padded sizes and kh * kw * in_c
     * do not overflow */
    const size_t ph = s->pad_top + s->in_h + s->pad_bottom;
    const size_t pw = s->pad_left + s->in_w + s->pad_right;
    g->h2 = ph / g->sh + (ph % g->sh != 0);
    g->w2 = pw / g->sw + (pw % g->sw != 0);
    g->k = s->in_c * s->kh * s->kw;
    if (!kern_q8_kp_bytes(n, g->k)) {
        return KERN_E_SHAPE;
    }
    if (g->h2 > SIZE_MAX / 4 / g->w2) {
        return KERN_E_OVERFLOW;
    }
    g->plane = g->h2 * g->w2;
    if (s->in_c > SIZE_MAX / 4 / g->sh / g->sw ||
        s->in_c * g->sh * g->sw > SIZE_MAX / 4 / g->plane ||
        g->oh - 1 > (SIZE_MAX / 4) / g->w2) {
        return KERN_E_OVERFLOW;
    }
    g->planes = s->in_c * g->sh * g->sw * g->plane;
    g->p = (g->oh - 1) * g->w2 + g->ow;
    /* params (16 n), offsets (8 k), planes, the kernel's work */
    const size_t kwork = q8s_kp_work(g->k);
    g->roff_at = 16 * n;
    g->planes_at = g->roff_at + g->k * sizeof(size_t);
    g->kwork_at = g->planes_at + g->planes + 64;
    if (g->kwork_at > SIZE_MAX / 2 - kwork) {
        return KERN_E_OVERFLOW;
    }
    g->bytes = g->kwork_at + kwork;
    return KERN_OK;
}

KERN_API size_t kern_q8_conv_kp_work_bytes(const struct kern_conv2d_shape *s)
{
    struct kp_geom g;
    if (!s || kp_geom_of(s, s->out_c, &g) != KERN_OK) {
        return 0;
    }
    return g.bytes;
}

/* o[i] = x[i] for i < n, 16 bytes at a time (fixed-size copies the
 * compiler inlines: a phase row is a few dozen bytes, where a call to
 * memcpy costs more than the copy). */
static inline void kp_copy_row(int8_t *o, const int8_t *x, size_t n)
{
    for (; n >= 16; n -= 16, o += 16, x += 16) {
        memcpy(o, x, 16);
    }
    if (n >= 8) {
        memcpy(o, x, 8);
        n -= 8, o += 8, x += 8;
    }
    for (size_t i = 0; i < n; i++) {
        o[i] = x[i];
    }
}

/* Channel c's phase planes of image x (in_c planes of in_h x in_w) with
 * x_zero where the padding is: each plane filled with x_zero in one
 * memset, then the input's columns of each row that reads inside the
 * input copied over it. */
static void kp_phases(const struct kern_conv2d_shape *s,
                      const struct kp_geom *g, const int8_t *xc, int8_t zp,
                      int8_t *d)
{
    const size_t ih = s->in_h, iw = s->in_w;
    for (size_t py = 0; py < g->sh; py++) {
        for (size_t px = 0; px < g->sw; px++, d += g->plane) {
            memset(d, zp, g->h2 * g->w2);
            /* columns [lo, hi) of a phase row read inside the input */
            size_t lo = 0, hi = g->w2;
            while (lo < g->w2 && lo * g->sw + px < s->pad_left) {
                lo++;
            }
            while (hi > lo && (hi - 1) * g->sw + px >= s->pad_left + iw) {
                hi--;
            }
            if (lo >= hi) {
                continue;
            }
            const size_t x0 = lo * g->sw + px - s->pad_left;
            for (size_t r = 0; r < g->h2; r++) {
                const size_t yy = r * g->sh + py;
                if (yy < s->pad_top || yy - s->pad_top >= ih) {
                    continue;
                }
                int8_t *o = d + r * g->w2 + lo;
                const int8_t *xr = xc + (yy - s->pad_top) * iw;
                if (g->sw == 1) {
                    kp_copy_row(o, xr + x0, hi - lo);
                } else if (g->sw == 2) {
                    /* a constant stride, which the compiler vectorises */
                    for (size_t c = 0; c < hi - lo; c++) {
                        o[c] = xr[x0 + 2 * c];
                    }
                } else {
                    for (size_t c = 0; c < hi - lo; c++) {
                        o[c] = xr[x0 + g->sw * c];
                    }
                }
            }
        }
    }
}

KERN_API int kern_q8_conv_kp_s8(const struct kern_conv2d_shape *s,
                                const void *wk, const int8_t *x, size_t b,
                                int32_t x_zero,
                                const struct kern_q8_outstage *os, int8_t *y,
                                void *work)
{
    if (!s || !wk || !x || !os || !y || !work) {
        return KERN_E_INVALID;
    }
    struct kp_geom g;
    int st = kp_geom_of(s, s->out_c, &g);
    if (st != KERN_OK) {
        return st;
    }
    if (b >= s->batch) {
        return KERN_E_SHAPE;
    }
    if (!range_s8(x_zero)) {
        return KERN_E_RANGE;
    }
    const size_t n = s->out_c;
    if ((st = outstage_check(os, n)) != KERN_OK) {
        return st;
    }
    struct kp_params kp;
    kp_params_fill(n, g.k, wk, x_zero, os, work, &kp);
    size_t *roff = (size_t *)(void *)((unsigned char *)work + g.roff_at);
    int8_t *planes = (int8_t *)work + g.planes_at;
    const size_t ihw = s->in_h * s->in_w;
    const int8_t *xb = x + b * s->in_c * ihw;
    size_t t = 0;
    for (size_t c = 0; c < s->in_c; c++) {
        kp_phases(s, &g, xb + c * ihw, (int8_t)x_zero,
                  planes + c * g.sh * g.sw * g.plane);
        for (size_t ky = 0; ky < s->kh; ky++) {
            for (size_t kx = 0; kx < s->kw; kx++, t++) {
                const size_t ph = (c * g.sh + ky % g.sh) * g.sw + kx % g.sw;
                roff[t] = ph * g.plane + (ky / g.sh) * g.w2 + kx / g.sw;
            }
        }
    }
    const struct kern_q8s_dsp *d = dsp_get();
    const kern_q8s_conv_kp_fn f = kp.odd_mult ? kern_q8s_conv_kp_c
                                              : d->conv_kp;
    f(n, g.p, g.k, wk, kp.add, kp.mult, kp.lsh, kp.rsh, kp.scale,
      os->zero_point, os->qmin, os->qmax, planes, roff, g.w2, g.ow,
      y + b * n * g.oh * g.ow, g.oh * g.ow, (uint8_t *)work + g.kwork_at);
    return KERN_OK;
}

/* A stride-1 tap row whose output is as wide as the input (ow == iw):
 * output row oy reads input row oy + ky - pad_top at column ox + off -
 * pad_left, so the rows inside the input are one contiguous copy (from the
 * first valid tap to the last), the padded rows one fill each, and the
 * columns outside [lo, hi) of each copied row set to the zero point after.
 * false (nothing written) when the offset is not that simple. */
static bool plane_rows(const struct kern_conv2d_shape *s, int8_t *r,
                       const int8_t *xc, size_t oh, size_t kyd, size_t off,
                       size_t lo, size_t hi, int8_t zp)
{
    const size_t ow = s->in_w, ih = s->in_h;
    /* output rows [y0, y1) read input rows inside [0, ih) */
    size_t y0 = 0, y1 = oh;
    while (y0 < oh && y0 + kyd < s->pad_top) {
        y0++;
    }
    while (y1 > y0 && y1 - 1 + kyd >= s->pad_top + ih) {
        y1--;
    }
    if (y0 == y1 || lo >= hi) {
        return false;
    }
    if (y0) {
        memset(r, zp, y0 * ow);
    }
    const size_t a = y0 * ow + lo, e = (y1 - 1) * ow + hi;
    /* output index i reads input index i + shift, shift = (kyd - pad_top)
     * * ow + off - pad_left, which is >= -a (the first valid tap) */
    const ptrdiff_t shift =
        ((ptrdiff_t)kyd - (ptrdiff_t)s->pad_top) * (ptrdiff_t)ow +
        (ptrdiff_t)off - (ptrdiff_t)s->pad_left;
    memcpy(r + a, xc + ((ptrdiff_t)a + shift), e - a);
    for (size_t oy = y0; oy < y1; oy++) {
        int8_t *o = r + oy * ow;
        for (size_t ox = 0; ox < lo; ox++) {
            o[ox] = zp;
        }
        for (size_t ox = hi; ox < ow; ox++) {
            o[ox] = zp;
        }
    }
    if (y1 < oh) {
        memset(r + y1 * ow, zp, (oh - y1) * ow);
    }
    return true;
}

/* rows[t][i] for t = (c, ky, kx) and output pixel i = oy * ow + ox: the
 * input at (c, oy * sh + ky * dh - pt, ox * sw + kx * dw - pl), x_zero in
 * the padding. A stride-1 row is one copy between two fills. */
KERN_API int kern_im2row_s8_kp(const struct kern_conv2d_shape *s,
                               const int8_t *x, size_t b, size_t g,
                               int32_t x_zero, int8_t *rows)
{
    if (!s || !x || !rows) {
        return KERN_E_INVALID;
    }
    if (!range_s8(x_zero)) {
        return KERN_E_RANGE;
    }
    size_t oh, ow;
    const int st = kern_conv2d_out_hw(s, &oh, &ow);
    if (st != KERN_OK) {
        return st;
    }
    if (b >= s->batch || g >= s->groups) {
        return KERN_E_SHAPE;
    }
    const size_t cg = s->in_c / s->groups, ih = s->in_h, iw = s->in_w;
    const size_t dh = s->dilation_h ? s->dilation_h : 1;
    const size_t dw = s->dilation_w ? s->dilation_w : 1;
    const size_t P = oh * ow;
    const int8_t *xg = x + (b * s->in_c + g * cg) * ih * iw;
    const int8_t zp = (int8_t)x_zero;
    int8_t *r = rows;
    for (size_t c = 0; c < cg; c++) {
        for (size_t ky = 0; ky < s->kh; ky++) {
            for (size_t kx = 0; kx < s->kw; kx++, r += P) {
                /* output columns [lo, hi) read inside the input */
                const size_t off = kx * dw;
                size_t lo = 0, hi = ow;
                while (lo < ow && lo * s->stride_w + off < s->pad_left) {
                    lo++;
                }
                while (hi > lo &&
                       (hi - 1) * s->stride_w + off >= s->pad_left + iw) {
                    hi--;
                }
                if (s->stride_h == 1 && s->stride_w == 1 && ow == iw &&
                    plane_rows(s, r, xg + c * ih * iw, oh, ky * dh, off, lo,
                               hi, zp)) {
                    continue;
                }
                for (size_t oy = 0; oy < oh; oy++) {
                    int8_t *o = r + oy * ow;
                    const size_t yy = oy * s->stride_h + ky * dh;
                    if (yy < s->pad_top || yy - s->pad_top >= ih) {
                        memset(o, zp, ow);
                        continue;
                    }
                    const int8_t *xr = xg + (c * ih + yy - s->pad_top) * iw;
                    /* the few padded columns a byte at a time: a call to
                     * memset costs more than they do */
                    for (size_t ox = 0; ox < lo; ox++) {
                        o[ox] = zp;
                    }
                    if (s->stride_w == 1) {
                        memcpy(o + lo, xr + lo + off - s->pad_left, hi - lo);
                    } else if (s->stride_w == 2) {
                        /* a constant stride the compiler vectorises */
                        const int8_t *xs = xr + off - s->pad_left;
                        for (size_t ox = lo; ox < hi; ox++) {
                            o[ox] = xs[2 * ox];
                        }
                    } else {
                        for (size_t ox = lo; ox < hi; ox++) {
                            o[ox] = xr[ox * s->stride_w + off - s->pad_left];
                        }
                    }
                    for (size_t ox = hi; ox < ow; ox++) {
                        o[ox] = zp;
                    }
                }
            }
        }
    }
    return KERN_OK;
}
