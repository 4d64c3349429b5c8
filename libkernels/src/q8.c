#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "q8.h"

/* ---- C references -------------------------------------------------------- */

void kern_q8_gemm_c(size_t m, size_t n, size_t k, const int8_t *a,
                    size_t lda, const uint8_t *bp, int32_t *c, size_t ldc)
{
    const size_t kg = q8_groups(k);
    for (size_t i = 0; i < m; i++) {
        const int8_t *ar = a + i * lda;
        for (size_t j = 0; j < n; j++) {
            const uint8_t *col =
                bp + ((j / Q8_NB) * kg * Q8_NB + j % Q8_NB) * Q8_KG;
            int32_t sum = 0;
            for (size_t t = 0; t < k; t++) {
                const int32_t w =
                    (int32_t)col[(t / Q8_KG) * Q8_NB * Q8_KG + t % Q8_KG] - 128;
                sum += (int32_t)ar[t] * w;
            }
            c[i * ldc + j] = sum;
        }
    }
}

uint32_t kern_q8_absmax_c(const float *x, size_t n)
{
    uint32_t best = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t bits;
        memcpy(&bits, &x[i], 4);
        bits &= 0x7fffffffu;
        if (bits > best) {
            best = bits;
        }
    }
    return best;
}

/* Round half to even of a value already clamped to [-127, 127]: the
 * default rounding mode of nearbyintf. NaN maps to 0. */
static int8_t quant1(float v)
{
    if (v != v) {
        return 0;
    }
    if (v > 127.0f) {
        v = 127.0f;
    } else if (v < -127.0f) {
        v = -127.0f;
    }
    return (int8_t)nearbyintf(v);
}

void kern_q8_quant_c(const float *x, size_t n, float scale, int8_t *dst)
{
    for (size_t i = 0; i < n; i++) {
        dst[i] = quant1(x[i] / scale);
    }
}

void kern_q8_dequant_c(const int8_t *q, size_t n, float scale, float *dst)
{
    for (size_t i = 0; i < n; i++) {
        dst[i] = (float)q[i] * scale;
    }
}

static float requant1(int32_t acc, float a_scale, float w_scale,
                      const float *bias, size_t j, int relu)
{
    const float mul = a_scale * w_scale;
    float y = (float)acc * mul;
    if (bias) {
        y = y + bias[j];
    }
    if (relu && !(y > 0.0f)) {
        y = y != y ? y : 0.0f;
    }
    return y;
}

void kern_q8_requant_f32_c(size_t n, const int32_t *acc, float a_scale,
                           const float *w_scales, const float *bias,
                           int relu, float *y)
{
    for (size_t j = 0; j < n; j++) {
        y[j] = requant1(acc[j], a_scale, w_scales[j], bias, j, relu);
    }
}

void kern_q8_requant_f32_t_c(size_t m, size_t n, const int32_t *acc,
                             size_t ld_acc, float a_scale,
                             const float *w_scales, const float *bias,
                             int relu, float *y, size_t ldy)
{
    for (size_t i = 0; i < m; i++) {
        for (size_t j = 0; j < n; j++) {
            y[j * ldy + i] = requant1(acc[i * ld_acc + j], a_scale,
                                      w_scales[j], bias, j, relu);
        }
    }
}

void kern_q8_requant_s8_c(size_t n, const int32_t *acc, float a_scale,
                          const float *w_scales, const float *bias, int relu,
                          float out_scale, int8_t *q)
{
    for (size_t j = 0; j < n; j++) {
        const float y = requant1(acc[j], a_scale, w_scales[j], bias, j, relu);
        q[j] = quant1(y / out_scale);
    }
}

/* ---- dispatch ------------------------------------------------------------ */

void kern_q8_dsp_init(struct kern_q8_dsp *dsp, unsigned flags)
{
    dsp->gemm = kern_q8_gemm_c;
    dsp->absmax = kern_q8_absmax_c;
    dsp->quant = kern_q8_quant_c;
    dsp->dequant = kern_q8_dequant_c;
    dsp->requant_f32 = kern_q8_requant_f32_c;
    dsp->requant_f32_t = kern_q8_requant_f32_t_c;
    dsp->requant_s8 = kern_q8_requant_s8_c;
#if KERN_SIMD && KERN_HAVE_X86
    kern_q8_dsp_init_x86(dsp, flags);
#elif KERN_SIMD && KERN_HAVE_NEON
    kern_q8_dsp_init_arm(dsp, flags);
#else
    (void)flags;
#endif
}

static struct kern_q8_dsp q8_dsp;
static pthread_once_t q8_once = PTHREAD_ONCE_INIT;

static void q8_init_once(void)
{
    kern_q8_dsp_init(&q8_dsp, kern_cpu_flags());
}

static const struct kern_q8_dsp *dsp_get(void)
{
    pthread_once(&q8_once, q8_init_once);
    return &q8_dsp;
}

const struct kern_q8_dsp *kern_q8_dsp_get(void)
{
    return dsp_get();
}

/* ---- public API ---------------------------------------------------------- */

static int scale_ok(float scale)
{
    return isfinite(scale) && scale > 0.0f;
}

static int scale_from_bits(uint32_t bits, float *scale)
{
    if (bits >= 0x7f800000u) {
        return KERN_E_RANGE;
    }
    if (bits == 0) {
        *scale = 1.0f;
        return KERN_OK;
    }
    float amax;
    memcpy(&amax, &bits, 4);
    float s = amax / 127.0f;
    /* The smallest subnormals divide to 0; keep the scale positive. */
    if (!(s > 0.0f)) {
        s = 1.0f;
    }
    *scale = s;
    return KERN_OK;
}

KERN_API int kern_q8_scale_f32(const float *x, size_t n, float *scale)
{
    if ((!x && n) || !scale) {
        return KERN_E_INVALID;
    }
    return scale_from_bits(n ? dsp_get()->absmax(x, n) : 0, scale);
}

KERN_API int kern_q8_quantize_f32(const float *x, size_t n, float scale,
                                  int8_t *dst)
{
    if (n && (!x || !dst)) {
        return KERN_E_INVALID;
    }
    if (!scale_ok(scale)) {
        return KERN_E_RANGE;
    }
    if (n) {
        dsp_get()->quant(x, n, scale, dst);
    }
    return KERN_OK;
}

KERN_API int kern_q8_quantize_tensor_f32(const float *x, size_t n,
                                         int8_t *dst, float *scale)
{
    if ((n && (!x || !dst)) || !scale) {
        return KERN_E_INVALID;
    }
    float s;
    int st = kern_q8_scale_f32(x, n, &s);
    if (st != KERN_OK) {
        return st;
    }
    *scale = s;
    return kern_q8_quantize_f32(x, n, s, dst);
}

KERN_API int kern_q8_quantize_channels_f32(const float *x, size_t channels,
                                           size_t per_channel, int8_t *dst,
                                           float *scales)
{
    if (!x || !dst || !scales) {
        return KERN_E_INVALID;
    }
    if (per_channel && channels > SIZE_MAX / per_channel) {
        return KERN_E_OVERFLOW;
    }
    const struct kern_q8_dsp *d = dsp_get();
    /* Scales first, so a non-finite row leaves dst untouched. */
    for (size_t c = 0; c < channels; c++) {
        const float *row = x + c * per_channel;
        int st = scale_from_bits(
            per_channel ? d->absmax(row, per_channel) : 0, &scales[c]);
        if (st != KERN_OK) {
            return st;
        }
    }
    for (size_t c = 0; c < channels && per_channel; c++) {
        d->quant(x + c * per_channel, per_channel, scales[c],
                 dst + c * per_channel);
    }
    return KERN_OK;
}

KERN_API int kern_q8_dequantize_f32(const int8_t *q, size_t n, float scale,
                                    float *dst)
{
    if (n && (!q || !dst)) {
        return KERN_E_INVALID;
    }
    if (!isfinite(scale)) {
        return KERN_E_RANGE;
    }
    if (n) {
        dsp_get()->dequant(q, n, scale, dst);
    }
    return KERN_OK;
}

KERN_API int kern_q8_dequantize_channels_f32(const int8_t *q, size_t channels,
                                             size_t per_channel,
                                             const float *scales, float *dst)
{
    if (!q || !scales || !dst) {
        return KERN_E_INVALID;
    }
    if (per_channel && channels > SIZE_MAX / per_channel) {
        return KERN_E_OVERFLOW;
    }
    for (size_t c = 0; c < channels; c++) {
        if (!isfinite(scales[c])) {
            return KERN_E_RANGE;
        }
    }
    const struct kern_q8_dsp *d = dsp_get();
    for (size_t c = 0; c < channels && per_channel; c++) {
        d->dequant(q + c * per_channel, per_channel, scales[c],
                   dst + c * per_channel);
    }
    return KERN_OK;
}

static int packed_size(size_t n, size_t k, size_t *bytes)
{
    const size_t kg = q8_groups(k);
    const size_t nb = q8_blocks(n);
    const size_t blk = (size_t)Q8_NB * Q8_KG;
    if (kg > (SIZE_MAX - Q8_HDR_BYTES) / blk / nb) {
        return KERN_E_OVERFLOW;
    }
    *bytes = Q8_HDR_BYTES + nb * kg * blk;
    return KERN_OK;
}

KERN_API size_t kern_q8_packed_bytes(size_t n, size_t k)
{
    size_t bytes;
    if (!n || !k || n > SIZE_MAX - Q8_NB || k > SIZE_MAX - Q8_KG ||
        packed_size(n, k, &bytes) != KERN_OK) {
        return 0;
    }
    return bytes;
}

KERN_API int kern_q8_pack_weights(const int8_t *w, size_t n, size_t k,
                                  size_t ldw, void *packed,
                                  size_t packed_bytes)
{
    if (!w || !packed) {
        return KERN_E_INVALID;
    }
    if (!n || !k || ldw < k) {
        return KERN_E_SHAPE;
    }
    const size_t need = kern_q8_packed_bytes(n, k);
    if (!need || (n - 1) > SIZE_MAX / ldw) {
        return KERN_E_OVERFLOW;
    }
    if (packed_bytes < need) {
        return KERN_E_NOMEM;
    }
    unsigned char *out = packed;
    const struct q8_packed_hdr hdr = {Q8_MAGIC, 0, (uint64_t)n, (uint64_t)k};
    memset(out, 0, Q8_HDR_BYTES);
    memcpy(out, &hdr, sizeof hdr);
    unsigned char *data = out + Q8_HDR_BYTES;
    const size_t kg = q8_groups(k);
    memset(data, 0, need - Q8_HDR_BYTES);
    /* Row j's groups of four land 64 bytes apart; the +128 bias is an
     * exclusive or of the sign bit. */
    for (size_t j = 0; j < n; j++) {
        unsigned char *col = data + ((j / Q8_NB) * kg * Q8_NB + j % Q8_NB) *
                                        Q8_KG;
        const unsigned char *src = (const unsigned char *)(w + j * ldw);
        size_t t = 0;
        for (; t + Q8_KG <= k; t += Q8_KG) {
            unsigned char *dst = col + t * Q8_NB;
            dst[0] = src[t] ^ 0x80u;
            dst[1] = src[t + 1] ^ 0x80u;
            dst[2] = src[t + 2] ^ 0x80u;
            dst[3] = src[t + 3] ^ 0x80u;
        }
        for (; t < k; t++) {
            col[(t / Q8_KG) * Q8_NB * Q8_KG + t % Q8_KG] = src[t] ^ 0x80u;
        }
    }
    return KERN_OK;
}

KERN_API int kern_q8_gemm(size_t m, size_t n, size_t k, const int8_t *a,
                          size_t lda, const void *packed_w, int32_t *c,
                          size_t ldc)
{
    if (!packed_w || (m && (!a || !c))) {
        return KERN_E_INVALID;
    }
    struct q8_packed_hdr hdr;
    memcpy(&hdr, packed_w, sizeof hdr);
    if (hdr.magic != Q8_MAGIC) {
        return KERN_E_INVALID;
    }
    if (hdr.n != n || hdr.k != k || !n || !k || lda < k || ldc < n) {
        return KERN_E_SHAPE;
    }
    if (k > Q8_MAX_K) {
        return KERN_E_RANGE;
    }
    if ((m - (m > 0)) > SIZE_MAX / (lda > ldc ? lda : ldc)) {
        return KERN_E_OVERFLOW;
    }
    if (m) {
        dsp_get()->gemm(m, n, k, a, lda,
                        (const uint8_t *)packed_w + Q8_HDR_BYTES, c, ldc);
    }
    return KERN_OK;
}

/* The arguments of a requantisation; the output holds M rows of pitch ldo
 * >= N, or with `transposed` N rows of pitch ldo >= M. */
static int requant_check(size_t m, size_t n, const int32_t *acc,
                         size_t ld_acc, float a_scale, const float *w_scales,
                         const void *y, size_t ldo, bool transposed)
{
    const size_t rows = transposed ? n : m, cols = transposed ? m : n;
    if (m && n && (!acc || !w_scales || !y)) {
        return KERN_E_INVALID;
    }
    if (ld_acc < n || ldo < cols) {
        return KERN_E_SHAPE;
    }
    /* the last elements' indices, (rows - 1) * pitch + cols - 1 */
    if ((m && (m - 1) > (SIZE_MAX - n) / (ld_acc ? ld_acc : 1)) ||
        (rows && (rows - 1) > (SIZE_MAX - cols) / (ldo ? ldo : 1))) {
        return KERN_E_OVERFLOW;
    }
    if (!scale_ok(a_scale)) {
        return KERN_E_RANGE;
    }
    for (size_t j = 0; m && j < n; j++) {
        if (!scale_ok(w_scales[j])) {
            return KERN_E_RANGE;
        }
    }
    return KERN_OK;
}

KERN_API int kern_q8_requant_f32(size_t m, size_t n, const int32_t *acc,
                                 size_t ld_acc, float a_scale,
                                 const float *w_scales, const float *bias,
                                 int relu, float *y, size_t ldo)
{
    int st = requant_check(m, n, acc, ld_acc, a_scale, w_scales, y, ldo,
                           false);
    if (st != KERN_OK) {
        return st;
    }
    const struct kern_q8_dsp *d = dsp_get();
    for (size_t i = 0; i < m && n; i++) {
        d->requant_f32(n, acc + i * ld_acc, a_scale, w_scales, bias, relu,
                       y + i * ldo);
    }
    return KERN_OK;
}

KERN_API int kern_q8_requant_f32_t(size_t m, size_t n, const int32_t *acc,
                                   size_t ld_acc, float a_scale,
                                   const float *w_scales, const float *bias,
                                   int relu, float *y, size_t ldy)
{
    int st = requant_check(m, n, acc, ld_acc, a_scale, w_scales, y, ldy,
                           true);
    if (st != KERN_OK) {
        return st;
    }
    if (m && n) {
        dsp_get()->requant_f32_t(m, n, acc, ld_acc, a_scale, w_scales, bias,
                                 relu, y, ldy);
    }
    return KERN_OK;
}

KERN_API int kern_q8_requant_s8(size_t m, size_t n, const int32_t *acc,
                                size_t ld_acc, float a_scale,
                                const float *w_scales, const float *bias,
                                int relu, float out_scale, int8_t *q,
                                size_t ldo)
{
    int st = requant_check(m, n, acc, ld_acc, a_scale, w_scales, q, ldo,
                           false);
    if (st != KERN_OK) {
        return st;
    }
    if (!scale_ok(out_scale)) {
        return KERN_E_RANGE;
    }
    const struct kern_q8_dsp *d = dsp_get();
    for (size_t i = 0; i < m && n; i++) {
        d->requant_s8(n, acc + i * ld_acc, a_scale, w_scales, bias, relu,
                      out_scale, q + i * ldo);
    }
    return KERN_OK;
}
