/* Private: static int8 kernels with integer-only requantisation (family
 * q8s). The arithmetic is TFLite's / gemmlowp's, written once here as
 * inline functions that the C reference and the public wrappers share. */
#ifndef EDGEFIT_KERNELS_Q8S_H
#define EDGEFIT_KERNELS_Q8S_H

#include <stddef.h>
#include <stdint.h>

#include "dsp.h"

/* gemmlowp's SaturatingRoundingDoublingHighMul: the high half of 2 a b,
 * rounded. Its nudge (2^30, or 1 - 2^30 for a negative product, with a
 * truncating division) equals floor((a b + 2^30) / 2^31): round half up.
 * The one product that does not fit, INT32_MIN squared, saturates. */
static inline int32_t q8s_srdhm(int32_t a, int32_t b)
{
    if (a == INT32_MIN && b == INT32_MIN) {
        return INT32_MAX;
    }
    const int64_t ab = (int64_t)a * (int64_t)b;
    const int64_t nudge = ab >= 0 ? (1 << 30) : (1 - (1 << 30));
    return (int32_t)((ab + nudge) / ((int64_t)1 << 31));
}

/* gemmlowp's RoundingDivideByPOT: x / 2^e rounded half away from zero,
 * e in [0, 31]. */
static inline int32_t q8s_rdbpot(int32_t x, int e)
{
    const int32_t mask = (int32_t)(((int64_t)1 << e) - 1);
    const int32_t rem = x & mask;
    const int32_t thr = (mask >> 1) + (x < 0);
    return (x >> e) + (rem > thr);
}

/* Two's complement wrap of x * 2^e (e in [0, 30]): TFLite's
 * x * (1 << left_shift) without the undefined behaviour. */
static inline int32_t q8s_shl(int32_t x, int e)
{
    return (int32_t)((uint32_t)x << e);
}

/* TFLite's MultiplyByQuantizedMultiplier. */
static inline int32_t q8s_mbqm(int32_t x, int32_t mult, int shift)
{
    const int ls = shift > 0 ? shift : 0, rs = shift > 0 ? 0 : -shift;
    return q8s_rdbpot(q8s_srdhm(q8s_shl(x, ls), mult), rs);
}

static inline int32_t q8s_wrap_add(int32_t a, int32_t b)
{
    return (int32_t)((uint32_t)a + (uint32_t)b);
}

/* One row of an output stage, N columns: q[j] = clamp(rdbpot(srdhm(
 * shl(acc[j] + add[j], lsh[j]), mult[j]), rsh[j]) + zp, qmin, qmax).
 * Every array holds N values (per-tensor parameters are repeated by the
 * caller); lsh in [0, 30], rsh in [0, 31]. */
typedef void (*kern_q8s_requant_fn)(size_t n, const int32_t *acc,
                                    const int32_t *add, const int32_t *mult,
                                    const int32_t *lsh, const int32_t *rsh,
                                    int32_t zp, int32_t qmin, int32_t qmax,
                                    int8_t *q);
/* The float output stage of ONNX Runtime's MLAS (MlasRequantizeOutput),
 * one row of N columns: q[j] = clamp(rint((float)(acc[j] + add[j]) *
 * scale[j]), qmin - zp, qmax - zp) + zp, the sum wrapping in int32, its
 * conversion to float and the product rounded to nearest even, the clamp
 * in float before the rounding to an integer (so no conversion
 * overflows). scale[j] finite and >= 0. */
typedef void (*kern_q8s_requantf_fn)(size_t n, const int32_t *acc,
                                     const int32_t *add, const float *scale,
                                     int32_t zp, int32_t qmin, int32_t qmax,
                                     int8_t *q);
/* kern_q8s_requantf_fn on an m x n tile (as kern_q8s_requant_tile_fn). */
typedef void (*kern_q8s_requantf_tile_fn)(size_t m, size_t n,
                                          const int32_t *acc, size_t lda,
                                          const int32_t *add,
                                          const float *scale, int32_t zp,
                                          int32_t qmin, int32_t qmax,
                                          int8_t *q, size_t ldq);
/* The output stage of an m x n tile (acc's leading dimension lda, q's
 * ldq, n <= Q8S_TILE_N), every row with the same per-column parameters:
 * m rows of kern_q8s_requant_fn in one call, so that a vector path loads
 * the parameters once per tile rather than once per row. */
enum { Q8S_TILE_N = 64 };
typedef void (*kern_q8s_requant_tile_fn)(size_t m, size_t n,
                                         const int32_t *acc, size_t lda,
                                         const int32_t *add,
                                         const int32_t *mult,
                                         const int32_t *lsh,
                                         const int32_t *rsh, int32_t zp,
                                         int32_t qmin, int32_t qmax,
                                         int8_t *q, size_t ldq);
/* y[j * ldy + i] = x[i * ldx + j] for an m x n int8 block (the output
 * of a tile written as NCHW planes). */
typedef void (*kern_q8s_transpose_fn)(size_t m, size_t n, const int8_t *x,
                                      size_t ldx, int8_t *y, size_t ldy);
/* kern_q8_quantize_zp_f32 on n values with checked parameters. */
typedef void (*kern_q8s_quant_fn)(const float *x, size_t n, float scale,
                                  int32_t zero, int8_t *q);
/* kern_q8_add_s8 on n values with checked parameters. */
struct kern_q8_add_params;
typedef void (*kern_q8s_add_fn)(size_t n, const int8_t *a, const int8_t *b,
                                const struct kern_q8_add_params *p,
                                int8_t *out);

/* kern_q8_addf_s8 on n values with checked parameters. */
struct kern_q8_addf_params;
typedef void (*kern_q8s_addf_fn)(size_t n, const int8_t *a, const int8_t *b,
                                 const struct kern_q8_addf_params *p,
                                 int8_t *out);

/* kern_q8_rescale_s8 on n values with checked parameters. */
struct kern_q8_rescale;
typedef void (*kern_q8s_rescale_fn)(size_t n, const int8_t *x,
                                    int32_t x_zero,
                                    const struct kern_q8_rescale *r,
                                    int8_t *y);
/* kern_q8_maxpool2d_s8 on a checked shape with output oh x ow; scratch
 * holds q8s_maxpool_scratch(s) bytes (the C reference ignores it). */
struct kern_pool2d_shape;
typedef void (*kern_q8s_maxpool_fn)(const struct kern_pool2d_shape *s,
                                    size_t oh, size_t ow, const int8_t *x,
                                    int8_t *y, int8_t *scratch);

/* sums[p] = the sum of the n int8 values x[p ld .. p ld + n - 1], for
 * planes planes (ld >= n); n <= 2^22, so each sum is exact in int32. The
 * sums of the average pools of one window a plane (global, or the
 * window of whole rows from the top of an unpadded map). Reads nothing
 * past the last plane's n values. */
typedef void (*kern_q8s_plane_sum_fn)(size_t planes, size_t n, size_t ld,
                                      const int8_t *x, int32_t *sums);

/* Whether the vector paths' fixed output stage serves os over n
 * channels: the float stage, or no multiplier INT32_MIN (whose doubled
 * square saturates, the reference's one case those paths leave out). */
static inline int q8s_outstage_no_min(const struct kern_q8_outstage *os,
                                      size_t n)
{
    const size_t cnt = os->per_channel ? n : 1;
    for (size_t c = 0; !os->scale && c < cnt; c++) {
        if (os->mult[c] == INT32_MIN) {
            return 0;
        }
    }
    return 1;
}

/* kern_q8_dwconv2d_s8 on a checked shape with output oh x ow; scratch
 * holds q8s_dwconv_scratch(s) bytes (the C reference ignores it). */
struct kern_dwconv2d_shape;
struct kern_q8_outstage;
typedef void (*kern_q8s_dwconv_fn)(const struct kern_dwconv2d_shape *s,
                                   size_t oh, size_t ow, const int8_t *x,
                                   int32_t x_zero, const int8_t *w,
                                   const struct kern_q8_outstage *os,
                                   int8_t *y, int8_t *scratch);

/* The channels-by-pixels GEMM of a convolution (layout "kp"): for the n
 * output channels j and p pixels i,
 *   acc = sum_k x[k * ldx + i] * w[j][k]
 *   y[j * ldy + i] = the output stage of acc + add[j] (kern_q8s_requant_fn
 *   with column j's mult, lsh, rsh; or, scale not NULL,
 *   kern_q8s_requantf_fn with scale[j], mult, lsh and rsh then unused)
 * x is K rows of p int8 values (a 1 x 1 layer's NCHW input as it is, any
 * other lowered by kern_im2row_s8_kp), so the output is already NCHW.
 * wk is the kp packing (kern_q8_pack_kp): n rows of q8s_kp_k4(k) groups of
 * 4 int8 weights, zero past k, then the n rows' int32 sums. work holds
 * q8s_kp_work(k) bytes (the C reference ignores it). */
typedef void (*kern_q8s_gemm_kp_fn)(size_t n, size_t p, size_t k,
                                    const int8_t *wk, const int32_t *add,
                                    const int32_t *mult, const int32_t *lsh,
                                    const int32_t *rsh, const float *scale,
                                    int32_t zp, int32_t qmin, int32_t qmax,
                                    const int8_t *x, size_t ldx, int8_t *y,
                                    size_t ldy, uint8_t *work);

/* The kp GEMM of a convolution read in place (layout "kp", no lowering):
 * row t of the GEMM's x is x + roff[t], so a tap (c, ky, kx) reads a
 * padded (or, for a stride, phase-split) input plane at its offset, and
 * the p pixels v are "virtual": v = r * vw + c with c < vw, of which only
 * the columns c < ow are outputs (the rest read past a row's end and are
 * dropped):
 *   acc = sum_k x[roff[t] + v] * w[j][t]
 *   y[j * ldy + r * ow + c] = the output stage of acc + add[j], c < ow
 * (the stages as kern_q8s_gemm_kp_fn's). ow <= vw; x + roff[t] + v is
 * readable for every t and v < p. gemm_kp is the case roff[t] = t * ldx,
 * vw = ow = p. work holds q8s_kp_work(k) bytes (the C reference ignores
 * it). */
typedef void (*kern_q8s_conv_kp_fn)(size_t n, size_t p, size_t k,
                                    const int8_t *wk, const int32_t *add,
                                    const int32_t *mult, const int32_t *lsh,
                                    const int32_t *rsh, const float *scale,
                                    int32_t zp, int32_t qmin, int32_t qmax,
                                    const int8_t *x, const size_t *roff,
                                    size_t vw, size_t ow, int8_t *y,
                                    size_t ldy, uint8_t *work);

static inline size_t q8s_kp_k4(size_t k)
{
    return k / 4 + (k % 4 != 0);
}

/* The vector path's work: one block of 64 pixels of every group of 4
 * rows, interleaved (256 bytes a group), plus 64 bytes of alignment. */
static inline size_t q8s_kp_work(size_t k)
{
    return q8s_kp_k4(k) * 256 + 64;
}

struct kern_q8s_dsp {
    kern_q8s_gemm_kp_fn gemm_kp;
    kern_q8s_conv_kp_fn conv_kp;
    kern_q8s_requant_fn requant;
    kern_q8s_requant_tile_fn requant_tile;
    kern_q8s_requantf_fn requantf;
    kern_q8s_requantf_tile_fn requantf_tile;
    kern_q8s_transpose_fn transpose;
    kern_q8s_quant_fn quant;
    kern_q8s_add_fn add;
    kern_q8s_addf_fn addf;
    kern_q8s_rescale_fn rescale;
    kern_q8s_maxpool_fn maxpool;
    kern_q8s_dwconv_fn dwconv;
    kern_q8s_plane_sum_fn plane_sum;
};

/* Row width of the depthwise kernels' padded plane: the padded input row
 * and room for whole vectors past the last output (stride 2 reads 32
 * bytes from column 2 ox, 16 outputs at a time); 0 when it overflows. */
static inline size_t q8s_dwconv_row(size_t pad_left, size_t in_w,
                                    size_t pad_right, size_t kw, size_t dw)
{
    const size_t slack = 96;
    if (kw > SIZE_MAX / 4 / (dw ? dw : 1) ||
        in_w > SIZE_MAX / 4 - slack - pad_left - pad_right - kw * dw) {
        return 0;
    }
    return pad_left + in_w + pad_right + kw * dw + slack;
}

/* Bytes of the depthwise kernels' scratch: padded planes of int8 (rows
 * pad_top + in_h + pad_bottom) and the vector path's outputs. 0 when it
 * overflows. */
static inline size_t q8s_dwconv_scratch(const struct kern_dwconv2d_shape *s)
{
    const size_t row = q8s_dwconv_row(s->pad_left, s->in_w, s->pad_right,
                                      s->kw, s->dilation_w);
    if (!row || s->in_h > SIZE_MAX / 4 - s->pad_top - s->pad_bottom) {
        return 0;
    }
    const size_t rows = s->pad_top + s->in_h + s->pad_bottom;
    /* the row layout needs rows * row; the stride-1 ones a plane of rows
     * * (its padded width) plus 64 values, int8 or int16, and the outputs
     * on that width plus 16 bytes: three times the first, plus 256,
     * covers them */
    if (rows > (SIZE_MAX - 256) / 3 / row) {
        return 0;
    }
    /* the channel-blocked paths of narrow maps: 16 (AVX2) or 32 (AVX-512
     * VNNI) channels of the padded plane (pw = pad_left + in_w +
     * pad_right <= row) as int16, and 16 or 32 bytes per input or output
     * pixel for the transposes: at most 96 bytes a padded pixel, plus 64 */
    const size_t pw = s->pad_left + s->in_w + s->pad_right;
    if (rows > (SIZE_MAX - 64) / 96 / pw) {
        return 0;
    }
    const size_t rowwise = 3 * rows * row + 256, blocked = 96 * rows * pw + 64;
    return rowwise > blocked ? rowwise : blocked;
}

/* The depthwise vector paths' window: off[t] = the offset of tap t
 * (ky * kw + kx) from the window's first pixel, for rows of `row` pixels
 * and `bytes` bytes a pixel, dilation applied; off[taps] = off[0], so that
 * an odd last tap pairs with a tap of weight 0. off holds kh * kw + 1. */
static inline void q8s_dw_tap_offsets(const struct kern_dwconv2d_shape *s,
                                      size_t row, size_t bytes, size_t *off)
{
    const size_t dh = s->dilation_h ? s->dilation_h : 1;
    const size_t dw = s->dilation_w ? s->dilation_w : 1;
    for (size_t ky = 0; ky < s->kh; ky++) {
        for (size_t kx = 0; kx < s->kw; kx++) {
            off[ky * s->kw + kx] = bytes * (ky * dh * row + kx * dw);
        }
    }
    off[s->kh * s->kw] = off[0];
}

/* Bytes of the max pool's scratch: two padded rows with room for whole
 * vectors past their ends (0 when the sizes overflow). */
static inline size_t q8s_maxpool_scratch(size_t pad_left, size_t in_w,
                                         size_t pad_right, size_t kw)
{
    const size_t slack = 128;
    if (in_w > (SIZE_MAX / 4 - slack - pad_left - pad_right - kw)) {
        return 0;
    }
    return 2 * (pad_left + in_w + pad_right + kw + slack);
}

void kern_q8s_dsp_init(struct kern_q8s_dsp *dsp, unsigned flags);
/* The rungs of each architecture (src/<arch>/q8s_init.c), called by
 * kern_q8s_dsp_init after it has set the C entries. */
void kern_q8s_dsp_init_x86(struct kern_q8s_dsp *dsp, unsigned flags);
void kern_q8s_dsp_init_arm(struct kern_q8s_dsp *dsp, unsigned flags);

void kern_q8s_requant_c(size_t n, const int32_t *acc, const int32_t *add,
                        const int32_t *mult, const int32_t *lsh,
                        const int32_t *rsh, int32_t zp, int32_t qmin,
                        int32_t qmax, int8_t *q);
void kern_q8s_requant_tile_c(size_t m, size_t n, const int32_t *acc,
                             size_t lda, const int32_t *add,
                             const int32_t *mult, const int32_t *lsh,
                             const int32_t *rsh, int32_t zp, int32_t qmin,
                             int32_t qmax, int8_t *q, size_t ldq);
void kern_q8s_requantf_c(size_t n, const int32_t *acc, const int32_t *add,
                         const float *scale, int32_t zp, int32_t qmin,
                         int32_t qmax, int8_t *q);
void kern_q8s_requantf_tile_c(size_t m, size_t n, const int32_t *acc,
                              size_t lda, const int32_t *add,
                              const float *scale, int32_t zp, int32_t qmin,
                              int32_t qmax, int8_t *q, size_t ldq);
void kern_q8s_transpose_c(size_t m, size_t n, const int8_t *x, size_t ldx,
                          int8_t *y, size_t ldy);
void kern_q8s_quant_c(const float *x, size_t n, float scale, int32_t zero,
                      int8_t *q);
void kern_q8s_add_c(size_t n, const int8_t *a, const int8_t *b,
                    const struct kern_q8_add_params *p, int8_t *out);
void kern_q8s_addf_c(size_t n, const int8_t *a, const int8_t *b,
                     const struct kern_q8_addf_params *p, int8_t *out);
void kern_q8s_rescale_c(size_t n, const int8_t *x, int32_t x_zero,
                        const struct kern_q8_rescale *r, int8_t *y);
void kern_q8s_dwconv_c(const struct kern_dwconv2d_shape *s, size_t oh,
                       size_t ow, const int8_t *x, int32_t x_zero,
                       const int8_t *w, const struct kern_q8_outstage *os,
                       int8_t *y, int8_t *scratch);
void kern_q8s_maxpool_c(const struct kern_pool2d_shape *s, size_t oh,
                        size_t ow, const int8_t *x, int8_t *y,
                        int8_t *scratch);
void kern_q8s_plane_sum_c(size_t planes, size_t n, size_t ld,
                          const int8_t *x, int32_t *sums);
void kern_q8s_gemm_kp_c(size_t n, size_t p, size_t k, const int8_t *wk,
                        const int32_t *add, const int32_t *mult,
                        const int32_t *lsh, const int32_t *rsh, const float *scale,
                        int32_t zp,
                        int32_t qmin, int32_t qmax, const int8_t *x,
                        size_t ldx, int8_t *y, size_t ldy, uint8_t *work);

void kern_q8s_conv_kp_c(size_t n, size_t p, size_t k, const int8_t *wk,
                        const int32_t *add, const int32_t *mult,
                        const int32_t *lsh, const int32_t *rsh,
                        const float *scale, int32_t zp, int32_t qmin,
                        int32_t qmax, const int8_t *x, const size_t *roff,
                        size_t vw, size_t ow, int8_t *y, size_t ldy,
                        uint8_t *work);

#if KERN_SIMD && KERN_HAVE_X86
void kern_q8s_conv_kp_vnni(size_t n, size_t p, size_t k, const int8_t *wk,
                           const int32_t *add, const int32_t *mult,
                           const int32_t *lsh, const int32_t *rsh,
                           const float *scale, int32_t zp, int32_t qmin,
                           int32_t qmax, const int8_t *x, const size_t *roff,
                           size_t vw, size_t ow, int8_t *y, size_t ldy,
                           uint8_t *work);
void kern_q8s_gemm_kp_vnni(size_t n, size_t p, size_t k, const int8_t *wk,
                           const int32_t *add, const int32_t *mult,
                           const int32_t *lsh, const int32_t *rsh, const float *scale,
                        int32_t zp,
                           int32_t qmin, int32_t qmax, const int8_t *x,
                           size_t ldx, int8_t *y, size_t ldy, uint8_t *work);
void kern_q8s_requant_avx2(size_t n, const int32_t *acc, const int32_t *add,
                           const int32_t *mult, const int32_t *lsh,
                           const int32_t *rsh, int32_t zp, int32_t qmin,
                           int32_t qmax, int8_t *q);
void kern_q8s_requant_tile_avx2(size_t m, size_t n, const int32_t *acc,
                                size_t lda, const int32_t *add,
                                const int32_t *mult, const int32_t *lsh,
                                const int32_t *rsh, int32_t zp, int32_t qmin,
                                int32_t qmax, int8_t *q, size_t ldq);
void kern_q8s_requantf_avx2(size_t n, const int32_t *acc,
                            const int32_t *add, const float *scale,
                            int32_t zp, int32_t qmin, int32_t qmax,
                            int8_t *q);
void kern_q8s_requantf_tile_avx2(size_t m, size_t n, const int32_t *acc,
                                 size_t lda, const int32_t *add,
                                 const float *scale, int32_t zp,
                                 int32_t qmin, int32_t qmax, int8_t *q,
                                 size_t ldq);
void kern_q8s_transpose_avx2(size_t m, size_t n, const int8_t *x,
                             size_t ldx, int8_t *y, size_t ldy);
void kern_q8s_quant_avx2(const float *x, size_t n, float scale,
                         int32_t zero, int8_t *q);
void kern_q8s_add_avx2(size_t n, const int8_t *a, const int8_t *b,
                       const struct kern_q8_add_params *p, int8_t *out);
void kern_q8s_addf_avx2(size_t n, const int8_t *a, const int8_t *b,
                        const struct kern_q8_addf_params *p, int8_t *out);
void kern_q8s_rescale_avx2(size_t n, const int8_t *x, int32_t x_zero,
                           const struct kern_q8_rescale *r, int8_t *y);
void kern_q8s_dwconv_avx2(const struct kern_dwconv2d_shape *s, size_t oh,
                          size_t ow, const int8_t *x, int32_t x_zero,
                          const int8_t *w, const struct kern_q8_outstage *os,
                          int8_t *y, int8_t *scratch);
/* AVX-512 (q8s_avx512.c): the adds, 16 lanes a step */
void kern_q8s_add_avx512(size_t n, const int8_t *a, const int8_t *b,
                         const struct kern_q8_add_params *p, int8_t *out);
void kern_q8s_addf_avx512(size_t n, const int8_t *a, const int8_t *b,
                          const struct kern_q8_addf_params *p, int8_t *out);
/* AVX-512: the input quantisation by a multiply, the division only near
 * half-integers (q8s_avx512.c) */
void kern_q8s_quant_avx512(const float *x, size_t n, float scale,
                           int32_t zero, int8_t *q);
/* AVX-512 VNNI (q8s_dw_vnni.c): stride 1, and stride 2 along the row;
 * any other shape, the float stage and narrow maps of many channels run
 * kern_q8s_dwconv_avx2 */
void kern_q8s_dwconv_vnni(const struct kern_dwconv2d_shape *s, size_t oh,
                          size_t ow, const int8_t *x, int32_t x_zero,
                          const int8_t *w, const struct kern_q8_outstage *os,
                          int8_t *y, int8_t *scratch);
/* AVX-512 VBMI and VNNI (q8s_dw_vbmi.c): maps of more than 36 outputs
 * whose blocks of 64 outputs (or of whole output rows) read at most 127
 * input bytes and are a quarter live or more, up to 28 taps, any stride
 * and dilation, gathered by byte permutes from NCHW; any other shape runs
 * kern_q8s_dwconv_vnni */
void kern_q8s_dwconv_vbmi(const struct kern_dwconv2d_shape *s, size_t oh,
                          size_t ow, const int8_t *x, int32_t x_zero,
                          const int8_t *w, const struct kern_q8_outstage *os,
                          int8_t *y, int8_t *scratch);
void kern_q8s_maxpool_avx2(const struct kern_pool2d_shape *s, size_t oh,
                           size_t ow, const int8_t *x, int8_t *y,
                           int8_t *scratch);
void kern_q8s_plane_sum_avx2(size_t planes, size_t n, size_t ld,
                             const int8_t *x, int32_t *sums);
#endif

#if KERN_SIMD && KERN_HAVE_NEON
void kern_q8s_requant_neon(size_t n, const int32_t *acc, const int32_t *add,
                           const int32_t *mult, const int32_t *lsh,
                           const int32_t *rsh, int32_t zp, int32_t qmin,
                           int32_t qmax, int8_t *q);
void kern_q8s_requant_tile_neon(size_t m, size_t n, const int32_t *acc,
                                size_t lda, const int32_t *add,
                                const int32_t *mult, const int32_t *lsh,
                                const int32_t *rsh, int32_t zp, int32_t qmin,
                                int32_t qmax, int8_t *q, size_t ldq);
void kern_q8s_requantf_neon(size_t n, const int32_t *acc,
                            const int32_t *add, const float *scale,
                            int32_t zp, int32_t qmin, int32_t qmax,
                            int8_t *q);
void kern_q8s_requantf_tile_neon(size_t m, size_t n, const int32_t *acc,
                                 size_t lda, const int32_t *add,
                                 const float *scale, int32_t zp,
                                 int32_t qmin, int32_t qmax, int8_t *q,
                                 size_t ldq);
void kern_q8s_quant_neon(const float *x, size_t n, float scale,
                         int32_t zero, int8_t *q);
void kern_q8s_add_neon(size_t n, const int8_t *a, const int8_t *b,
                       const struct kern_q8_add_params *p, int8_t *out);
void kern_q8s_rescale_neon(size_t n, const int8_t *x, int32_t x_zero,
                           const struct kern_q8_rescale *r, int8_t *y);
void kern_q8s_maxpool_neon(const struct kern_pool2d_shape *s, size_t oh,
                           size_t ow, const int8_t *x, int8_t *y,
                           int8_t *scratch);
void kern_q8s_dwconv_neon(const struct kern_dwconv2d_shape *s, size_t oh,
                          size_t ow, const int8_t *x, int32_t x_zero,
                          const int8_t *w, const struct kern_q8_outstage *os,
                          int8_t *y, int8_t *scratch);
#endif

#endif
