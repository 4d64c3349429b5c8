#include <math.h>
#include <string.h>

#include "nn.h"
#include "pool_geom.h"

/* ---- C references -------------------------------------------------------- */

void kern_nn_bias_add_c(float *x, size_t rows, size_t channels,
                        const float *bias)
{
    for (size_t r = 0; r < rows; r++) {
        float *row = x + r * channels;
        for (size_t c = 0; c < channels; c++) {
            row[c] += bias[c];
        }
    }
}

bool kern_nn_all_finite_c(const float *x, size_t n)
{
    uint32_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t bits;
        memcpy(&bits, &x[i], 4);
        bad |= (bits & 0x7f800000u) == 0x7f800000u;
    }
    return !bad;
}

void kern_nn_scale_c(float *x, size_t n, float s)
{
    for (size_t i = 0; i < n; i++) {
        x[i] *= s;
    }
}

void kern_nn_sgd_c(float *w, const float *g, float *velocity, size_t n,
                   float lr, float momentum, float weight_decay)
{
    for (size_t i = 0; i < n; i++) {
        float gi = g[i];
        if (weight_decay != 0.0f) {
            gi = gi + weight_decay * w[i];
        }
        if (momentum != 0.0f) {
            const float v = momentum * velocity[i] + gi;
            velocity[i] = v;
            gi = v;
        }
        w[i] = w[i] - lr * gi;
    }
}

/* ---- dispatch ------------------------------------------------------------ */

/* The column ranges of every kernel column, computed once per call rather
 * than per output row and input row (each costs two divisions: on a
 * pooling that ends a network, one output column from a 24 x 5 window,
 * they were most of the time). Windows wider than COLS_MAX columns
 * compute them where they are used. */
#define COLS_MAX 64

struct col_ranges {
    bool have;
    size_t lo[COLS_MAX], hi[COLS_MAX];
};

static void col_ranges_init(struct col_ranges *c,
                            const struct kern_pool2d_shape *s, size_t ow)
{
    c->have = s->kw <= COLS_MAX;
    for (size_t kx = 0; c->have && kx < s->kw; kx++) {
        kern_pool_col_range(kx, s->stride_w, s->pad_left, s->in_w, ow,
                            &c->lo[kx], &c->hi[kx]);
    }
}

static void col_ranges_get(const struct col_ranges *c,
                           const struct kern_pool2d_shape *s, size_t ow,
                           size_t kx, size_t *lo, size_t *hi)
{
    if (c->have) {
        *lo = c->lo[kx];
        *hi = c->hi[kx];
    } else {
        kern_pool_col_range(kx, s->stride_w, s->pad_left, s->in_w, ow, lo, hi);
    }
}

/* One step of the max scan in window order: v replaces best when it is
 * larger or the first NaN (starting from -inf, this is the reference's
 * "first maximum wins, the first NaN wins over everything"). */
static inline float max_step(float best, float v)
{
    const float larger = v > best ? v : best; /* keeps a NaN best */
    const bool take_nan = (v != v) & (best == best);
    return take_nan ? v : larger;
}

bool kern_nn_pool_is_k2s2(const struct kern_pool2d_shape *s)
{
    return s->kh == 2 && s->kw == 2 && s->stride_h == 2 &&
           s->stride_w == 2 && s->pad_top == 0 && s->pad_left == 0 &&
           s->pad_bottom == 0 && s->pad_right == 0;
}

float kern_nn_pool_divisor(const struct kern_pool2d_shape *s, size_t rows,
                           size_t cols)
{
    return s->count_include_pad ? (float)(s->kh * s->kw)
                                : (float)(rows * cols);
}

/* Pooling is computed output row by output row: the row is initialised,
 * then each real input row of its windows is swept once per kernel column
 * over the output columns that read a real input (a contiguous range), so
 * the inner loops carry no per-element window arithmetic. Each output sees
 * its window's elements in row-major order, as the definition says. */
void kern_nn_maxpool2d_c(const struct kern_pool2d_shape *s, size_t out_h,
                         size_t out_w, const float *x, float *y)
{
    const size_t ih = s->in_h, iw = s->in_w, kh = s->kh, kw = s->kw;
    const size_t sh = s->stride_h, sw = s->stride_w;
    const size_t pt = s->pad_top, pl = s->pad_left, oh = out_h, ow = out_w;
    const bool k2s2 = kern_nn_pool_is_k2s2(s);
    struct col_ranges cr;
    col_ranges_init(&cr, s, ow);
    for (size_t p = 0; p < s->batch * s->channels; p++) {
        const float *plane = x + p * ih * iw;
        for (size_t oy = 0; oy < oh; oy++) {
            float *yr = y + (p * oh + oy) * ow;
            if (k2s2) {
                /* One pass per window element: each pass is a loop the
                 * compiler vectorises (the fused form it does not). */
                const float *r0 = plane + 2 * oy * iw, *r1 = r0 + iw;
                for (size_t ox = 0; ox < ow; ox++) {
                    yr[ox] = r0[2 * ox];
                }
                for (size_t ox = 0; ox < ow; ox++) {
                    yr[ox] = max_step(yr[ox], r0[2 * ox + 1]);
                }
                for (size_t ox = 0; ox < ow; ox++) {
                    yr[ox] = max_step(yr[ox], r1[2 * ox]);
                }
                for (size_t ox = 0; ox < ow; ox++) {
                    yr[ox] = max_step(yr[ox], r1[2 * ox + 1]);
                }
                continue;
            }
            size_t y0, y1;
            kern_pool_window(oy, sh, pt, kh, ih, &y0, &y1);
            for (size_t ox = 0; ox < ow; ox++) {
                yr[ox] = -INFINITY;
            }
            for (size_t iy = y0; iy < y1; iy++) {
                const float *row = plane + iy * iw;
                for (size_t kx = 0; kx < kw; kx++) {
                    size_t lo, hi;
                    col_ranges_get(&cr, s, ow, kx, &lo, &hi);
                    if (lo == hi) {
                        continue;
                    }
                    /* First input column read (real, since lo is). */
                    const float *src = row + lo * sw + kx - pl;
                    float *dst = yr + lo;
                    const size_t n = hi - lo;
                    if (sw == 1) {
                        for (size_t i = 0; i < n; i++) {
                            dst[i] = max_step(dst[i], src[i]);
                        }
                    } else {
                        for (size_t i = 0; i < n; i++) {
                            dst[i] = max_step(dst[i], src[i * sw]);
                        }
                    }
                }
            }
        }
    }
}

void kern_nn_avgpool2d_c(const struct kern_pool2d_shape *s, size_t out_h,
                         size_t out_w, const float *x, float *y)
{
    const size_t ih = s->in_h, iw = s->in_w, kh = s->kh, kw = s->kw;
    const size_t sh = s->stride_h, sw = s->stride_w;
    const size_t pt = s->pad_top, pl = s->pad_left, oh = out_h, ow = out_w;
    const bool k2s2 = kern_nn_pool_is_k2s2(s);
    size_t p = 0;
    if (ow == 1 && !k2s2) {
        /* One output column (the pool that closes a network): its
         * window's real cells in the same row-major order as below, four
         * planes at a time, so that four independent sums hide the
         * addition's latency; one chain of 120 dependent additions per
         * plane took 7 us of DS-CNN's forward pass. The planes left over
         * take the loop below. */
        size_t x0, x1;
        kern_pool_window(0, sw, pl, kw, iw, &x0, &x1);
        const size_t hw = ih * iw;
        for (; p + 4 <= s->batch * s->channels; p += 4) {
            for (size_t oy = 0; oy < oh; oy++) {
                size_t y0, y1;
                kern_pool_window(oy, sh, pt, kh, ih, &y0, &y1);
                float s0 = 0.0f, s1 = 0.0f, s2 = 0.0f, s3 = 0.0f;
                for (size_t iy = y0; iy < y1; iy++) {
                    const float *row = x + p * hw + iy * iw;
                    for (size_t ix = x0; ix < x1; ix++) {
                        s0 += row[ix];
                        s1 += row[hw + ix];
                        s2 += row[2 * hw + ix];
                        s3 += row[3 * hw + ix];
                    }
                }
                const float d = kern_nn_pool_divisor(s, y1 - y0, x1 - x0);
                y[p * oh + oy] = s0 / d;
                y[(p + 1) * oh + oy] = s1 / d;
                y[(p + 2) * oh + oy] = s2 / d;
                y[(p + 3) * oh + oy] = s3 / d;
            }
        }
    }
    struct col_ranges cr;
    col_ranges_init(&cr, s, ow);
    for (; p < s->batch * s->channels; p++) {
        const float *plane = x + p * ih * iw;
        for (size_t oy = 0; oy < oh; oy++) {
            float *yr = y + (p * oh + oy) * ow;
            if (k2s2) {
                const float *r0 = plane + 2 * oy * iw, *r1 = r0 + iw;
                for (size_t ox = 0; ox < ow; ox++) {
                    float sum = 0.0f + r0[2 * ox];
                    sum += r0[2 * ox + 1];
                    sum += r1[2 * ox];
                    sum += r1[2 * ox + 1];
                    yr[ox] = sum / 4.0f;
                }
                continue;
            }
            size_t y0, y1;
            kern_pool_window(oy, sh, pt, kh, ih, &y0, &y1);
            if (ow == 1) {
                /* One output column: its window's real cells in the same
                 * row-major order, without the per-column sweeps. */
                size_t x0, x1;
                kern_pool_window(0, sw, pl, kw, iw, &x0, &x1);
                float sum = 0.0f;
                for (size_t iy = y0; iy < y1; iy++) {
                    const float *row = plane + iy * iw;
                    for (size_t ix = x0; ix < x1; ix++) {
                        sum += row[ix];
                    }
                }
                yr[0] = sum / kern_nn_pool_divisor(s, y1 - y0, x1 - x0);
                continue;
            }
            for (size_t ox = 0; ox < ow; ox++) {
                yr[ox] = 0.0f;
            }
            for (size_t iy = y0; iy < y1; iy++) {
                const float *row = plane + iy * iw;
                for (size_t kx = 0; kx < kw; kx++) {
                    size_t lo, hi;
                    col_ranges_get(&cr, s, ow, kx, &lo, &hi);
                    if (lo == hi) {
                        continue;
                    }
                    const float *src = row + lo * sw + kx - pl;
                    float *dst = yr + lo;
                    const size_t n = hi - lo;
                    if (sw == 1) {
                        for (size_t i = 0; i < n; i++) {
                            dst[i] += src[i];
                        }
                    } else {
                        for (size_t i = 0; i < n; i++) {
                            dst[i] += src[i * sw];
                        }
                    }
                }
            }
            for (size_t ox = 0; ox < ow; ox++) {
                size_t x0, x1;
                kern_pool_window(ox, sw, pl, kw, iw, &x0, &x1);
                yr[ox] = yr[ox] / kern_nn_pool_divisor(s, y1 - y0, x1 - x0);
            }
        }
    }
}

/* Softmax with expf and a double sum (the accuracy reference). */
void kern_nn_softmax_c(const float *x, size_t rows, size_t cols, float *y)
{
    for (size_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols;
        float *yr = y + r * cols;
        float mx = -INFINITY;
        bool nan = false;
        for (size_t c = 0; c < cols; c++) {
            nan |= isnan(xr[c]);
            mx = xr[c] > mx ? xr[c] : mx;
        }
        if (nan || mx == INFINITY || mx == -INFINITY) {
            for (size_t c = 0; c < cols; c++) {
                yr[c] = NAN;
            }
            continue;
        }
        double sum = 0.0;
        for (size_t c = 0; c < cols; c++) {
            const float e = expf(xr[c] - mx);
            yr[c] = e;
            sum += e;
        }
        /* sum >= 1: the maximum contributes exp(0). */
        const float inv = (float)(1.0 / sum);
        for (size_t c = 0; c < cols; c++) {
            yr[c] *= inv;
        }
    }
}

/* Cross-entropy in double throughout (the accuracy reference). */
double kern_nn_xent_c(const float *logits, const int32_t *labels,
                      size_t batch, size_t classes, float *grad)
{
    double total_loss = 0.0;
    const double inv_batch = 1.0 / (double)batch;
    for (size_t b = 0; b < batch; b++) {
        const float *xr = logits + b * classes;
        float mx = -INFINITY;
        for (size_t c = 0; c < classes; c++) {
            mx = xr[c] > mx ? xr[c] : mx;
        }
        double sum = 0.0;
        for (size_t c = 0; c < classes; c++) {
            sum += exp((double)xr[c] - (double)mx);
        }
        const double lse = (double)mx + log(sum);
        total_loss += lse - (double)xr[labels[b]];
        if (grad) {
            float *gr = grad + b * classes;
            for (size_t c = 0; c < classes; c++) {
                double p = exp((double)xr[c] - lse);
                if (c == (size_t)labels[b]) {
                    p -= 1.0;
                }
                gr[c] = (float)(p * inv_batch);
            }
        }
    }
    return total_loss;
}

void kern_nn_dsp_init(struct kern_nn_dsp *dsp, unsigned flags)
{
    dsp->bias_add = kern_nn_bias_add_c;
    dsp->all_finite = kern_nn_all_finite_c;
    dsp->scale = kern_nn_scale_c;
    dsp->sgd = kern_nn_sgd_c;
    dsp->maxpool2d = kern_nn_maxpool2d_c;
    dsp->avgpool2d = kern_nn_avgpool2d_c;
    dsp->maxpool2d_blk = kern_nn_maxpool2d_blk_c;
    dsp->avgpool2d_blk = kern_nn_avgpool2d_blk_c;
    dsp->softmax = kern_nn_softmax_c;
    dsp->gap_blk = kern_nn_gap_blk_c;
    dsp->xent = kern_nn_xent_c;
#if KERN_SIMD && KERN_HAVE_X86
    kern_nn_dsp_init_x86(dsp, flags);
#elif KERN_SIMD && KERN_HAVE_NEON
    kern_nn_dsp_init_arm(dsp, flags);
#else
    (void)flags;
#endif
}

static struct kern_nn_dsp nn_dsp;
static pthread_once_t nn_once = PTHREAD_ONCE_INIT;

static void nn_init_once(void)
{
    kern_nn_dsp_init(&nn_dsp, kern_cpu_flags());
}

static const struct kern_nn_dsp *dsp_get(void)
{
    pthread_once(&nn_once, nn_init_once);
    return &nn_dsp;
}

/* ---- global average pooling on NCHW8c ------------------------------------ */

void kern_nn_gap_blk_c(const float *xb, size_t hw, float *y8)
{
    double s0[KERN_CBLOCK] = {0}, s1[KERN_CBLOCK] = {0};
    double s2[KERN_CBLOCK] = {0}, s3[KERN_CBLOCK] = {0};
    size_t i = 0;
    for (; i + 4 <= hw; i += 4) {
        const float *v = xb + i * KERN_CBLOCK;
        for (size_t l = 0; l < KERN_CBLOCK; l++) {
            s0[l] += v[l];
            s1[l] += v[KERN_CBLOCK + l];
            s2[l] += v[2 * KERN_CBLOCK + l];
            s3[l] += v[3 * KERN_CBLOCK + l];
        }
    }
    for (; i < hw; i++) {
        const float *v = xb + i * KERN_CBLOCK;
        for (size_t l = 0; l < KERN_CBLOCK; l++) {
            s0[l] += v[l];
        }
    }
    for (size_t l = 0; l < KERN_CBLOCK; l++) {
        y8[l] = (float)(((s0[l] + s1[l]) + (s2[l] + s3[l])) / (double)hw);
    }
}

KERN_API int kern_nn_global_avgpool_nchw8c_f32(const float *x, size_t batch,
                                               size_t channels, size_t hw,
                                               float *y)
{
    if (!x || !y) {
        return KERN_E_INVALID;
    }
    if (!batch || !channels || !hw) {
        return KERN_E_SHAPE;
    }
    const size_t nb = kern_nn_cblocks(channels);
    if (!kern_nn_blocked_fits(batch, channels, hw, 1)) {
        return KERN_E_OVERFLOW;
    }
    const kern_nn_gap_blk_fn fn = dsp_get()->gap_blk;
    for (size_t b = 0; b < batch; b++) {
        for (size_t blk = 0; blk < nb; blk++) {
            /* each lane is one channel's plane, with the bits
             * kern_nn_global_avgpool_f32 gives its NCHW form */
            float m[KERN_CBLOCK];
            fn(x + (b * nb + blk) * hw * KERN_CBLOCK, hw, m);
            float *yb = y + b * channels + blk * KERN_CBLOCK;
            const size_t lanes = kern_nn_block_lanes(channels, blk);
            for (size_t l = 0; l < lanes; l++) {
                yb[l] = m[l];
            }
        }
    }
    return KERN_OK;
}

/* ---- helpers ------------------------------------------------------------- */

bool kern_nn_blocked_fits(size_t batch, size_t c, size_t h, size_t w)
{
    size_t n;
    return kern_nn_mul4(batch, kern_nn_cblocks(c), h, w, &n) &&
           n <= SIZE_MAX / sizeof(float) / KERN_CBLOCK;
}

bool kern_nn_mul4(size_t a, size_t b, size_t c, size_t d, size_t *out)
{
    size_t r = a;
    const size_t f[3] = {b, c, d};
    for (int i = 0; i < 3; i++) {
        if (f[i] && r > SIZE_MAX / f[i]) {
            return false;
        }
        r *= f[i];
    }
    *out = r;
    return true;
}

int kern_nn_out_dim(size_t in, size_t k, size_t stride, size_t lo,
                    size_t hi, size_t *out)
{
    if (!in || !k || !stride) {
        return KERN_E_SHAPE;
    }
    if (lo > SIZE_MAX - in || hi > SIZE_MAX - in - lo) {
        return KERN_E_OVERFLOW;
    }
    const size_t padded = in + lo + hi;
    if (k > padded) {
        return KERN_E_SHAPE;
    }
    *out = (padded - k) / stride + 1;
    return KERN_OK;
}

/* ---- public API ---------------------------------------------------------- */

KERN_API int kern_nn_bias_add_f32(float *x, size_t rows, size_t channels,
                                  const float *bias)
{
    if (!x || !bias) {
        return KERN_E_INVALID;
    }
    size_t total;
    if (!kern_nn_mul4(rows, channels, 1, 1, &total)) {
        return KERN_E_OVERFLOW;
    }
    if (rows && channels) {
        dsp_get()->bias_add(x, rows, channels, bias);
    }
    return KERN_OK;
}

KERN_API int kern_nn_bias_grad_f32(const float *dy, size_t rows,
                                   size_t channels, float *grad_bias)
{
    if (!dy || !grad_bias) {
        return KERN_E_INVALID;
    }
    size_t total;
    if (!kern_nn_mul4(rows, channels, 1, 1, &total)) {
        return KERN_E_OVERFLOW;
    }
    for (size_t c = 0; c < channels; c++) {
        double sum = 0.0;
        for (size_t r = 0; r < rows; r++) {
            sum += dy[r * channels + c];
        }
        grad_bias[c] = (float)sum;
    }
    return KERN_OK;
}

KERN_API int kern_nn_bias_add_nchw_f32(float *x, size_t batch,
                                       size_t channels, size_t hw,
                                       const float *bias)
{
    if (!x || !bias) {
        return KERN_E_INVALID;
    }
    size_t total;
    if (!kern_nn_mul4(batch, channels, hw, 1, &total)) {
        return KERN_E_OVERFLOW;
    }
    if (!total) {
        return KERN_OK;
    }
    const struct kern_nn_dsp *d = dsp_get();
    /* Each plane is one row of hw values with the same bias: reuse the row
     * kernel with a one-channel bias. */
    for (size_t b = 0; b < batch; b++) {
        for (size_t c = 0; c < channels; c++) {
            d->bias_add(x + (b * channels + c) * hw, hw, 1, &bias[c]);
        }
    }
    return KERN_OK;
}

KERN_API int kern_nn_softmax_f32(const float *x, size_t rows, size_t cols,
                                 float *y)
{
    if (!x || !y) {
        return KERN_E_INVALID;
    }
    size_t total;
    if (!kern_nn_mul4(rows, cols, 1, 1, &total)) {
        return KERN_E_OVERFLOW;
    }
    if (total) {
        dsp_get()->softmax(x, rows, cols, y);
    }
    return KERN_OK;
}

KERN_API int kern_nn_softmax_xent_f32(const float *logits,
                                      const int32_t *labels, size_t batch,
                                      size_t classes, float *loss,
                                      float *grad)
{
    if (!logits || !labels || !loss) {
        return KERN_E_INVALID;
    }
    if (!batch || !classes) {
        return KERN_E_SHAPE;
    }
    size_t total;
    if (!kern_nn_mul4(batch, classes, 1, 1, &total)) {
        return KERN_E_OVERFLOW;
    }
    for (size_t b = 0; b < batch; b++) {
        if (labels[b] < 0 || (size_t)labels[b] >= classes) {
            return KERN_E_RANGE;
        }
    }
    const double total_loss =
        dsp_get()->xent(logits, labels, batch, classes, grad);
    *loss = (float)(total_loss * (1.0 / (double)batch));
    return KERN_OK;
}

KERN_API int kern_pool2d_out_hw(const struct kern_pool2d_shape *s,
                                size_t *out_h, size_t *out_w)
{
    if (!s || !out_h || !out_w) {
        return KERN_E_INVALID;
    }
    if (!s->batch || !s->channels) {
        return KERN_E_SHAPE;
    }
    size_t oh, ow, n;
    int st = kern_nn_out_dim(s->in_h, s->kh, s->stride_h, s->pad_top,
                             s->pad_bottom, &oh);
    if (st == KERN_OK) {
        st = kern_nn_out_dim(s->in_w, s->kw, s->stride_w, s->pad_left,
                             s->pad_right, &ow);
    }
    if (st != KERN_OK) {
        return st;
    }
    /* A side padded by a whole window would give windows with no real
     * element (nothing to take the maximum of, nothing to divide by). */
    if (s->pad_top >= s->kh || s->pad_bottom >= s->kh ||
        s->pad_left >= s->kw || s->pad_right >= s->kw) {
        return KERN_E_RANGE;
    }
    if (!kern_nn_mul4(s->batch, s->channels, s->in_h, s->in_w, &n) ||
        !kern_nn_mul4(s->batch, s->channels, oh, ow, &n) ||
        !kern_nn_mul4(s->kh, s->kw, 1, 1, &n)) {
        return KERN_E_OVERFLOW;
    }
    *out_h = oh;
    *out_w = ow;
    return KERN_OK;
}

KERN_API int kern_pool2d_ceil_pad(size_t in, size_t k, size_t stride,
                                  size_t pad_lo, size_t pad_hi, size_t *out,
                                  size_t *extra_hi)
{
    if (!out || !extra_hi) {
        return KERN_E_INVALID;
    }
    size_t floor_out;
    const int st = kern_nn_out_dim(in, k, stride, pad_lo, pad_hi, &floor_out);
    if (st != KERN_OK) {
        return st;
    }
    /* padded >= k and fits (kern_nn_out_dim checked both) */
    const size_t span = in + pad_lo + pad_hi - k;
    size_t o = span / stride + (span % stride != 0) + 1;
    if ((o - 1) * stride >= in + pad_lo) {
        o--; /* the last window would start in the trailing padding */
    }
    /* (o - 1) * stride < in + pad_lo <= padded fits; k may not */
    if (k > SIZE_MAX - (o - 1) * stride) {
        return KERN_E_OVERFLOW;
    }
    const size_t end = (o - 1) * stride + k; /* of the padded input */
    *extra_hi = end > in + pad_lo + pad_hi ? end - (in + pad_lo + pad_hi)
                                           : 0;
    *out = o;
    return KERN_OK;
}

/* Index in the plane of the maximum of one window (first wins; the first
 * NaN wins over everything). */
static size_t window_argmax(const float *plane, size_t iw, size_t y0,
                            size_t y1, size_t x0, size_t x1)
{
    size_t best_i = y0 * iw + x0;
    float best = plane[best_i];
    /* Selected without branches: which element wins is data-dependent
     * and unpredictable, and a mispredicted branch per element made this
     * the slowest part of a small CNN's training step. */
    for (size_t iy = y0; iy < y1; iy++) {
        for (size_t ix = x0; ix < x1; ix++) {
            const float v = plane[iy * iw + ix];
            const int take = (best == best) & ((v > best) | (v != v));
            best = take ? v : best;
            best_i = take ? iy * iw + ix : best_i;
        }
    }
    return best_i;
}

/* Checks the arguments and the shape, then runs a pooling path; a
 * blocked (NCHW8c) input and output may overflow where their NCHW forms
 * do not. */
static int pool_forward(kern_nn_pool2d_fn fn,
                        const struct kern_pool2d_shape *s, const float *x,
                        float *y, bool blocked)
{
    if (!s || !x || !y) {
        return KERN_E_INVALID;
    }
    size_t oh, ow;
    int st = kern_pool2d_out_hw(s, &oh, &ow);
    if (st != KERN_OK) {
        return st;
    }
    if (blocked &&
        (!kern_nn_blocked_fits(s->batch, s->channels, s->in_h, s->in_w) ||
         !kern_nn_blocked_fits(s->batch, s->channels, oh, ow))) {
        return KERN_E_OVERFLOW;
    }
    fn(s, oh, ow, x, y);
    return KERN_OK;
}

KERN_API int kern_maxpool2d_f32(const struct kern_pool2d_shape *s,
                                const float *x, float *y)
{
    return pool_forward(dsp_get()->maxpool2d, s, x, y, false);
}

KERN_API int kern_maxpool2d_backward_f32(const struct kern_pool2d_shape *s,
                                         const float *x, const float *dy,
                                         float *grad_x)
{
    if (!s || !x || !dy || !grad_x) {
        return KERN_E_INVALID;
    }
    size_t oh, ow;
    int st = kern_pool2d_out_hw(s, &oh, &ow);
    if (st != KERN_OK) {
        return st;
    }
    const size_t ih = s->in_h, iw = s->in_w;
    memset(grad_x, 0, s->batch * s->channels * ih * iw * sizeof *grad_x);
    if (kern_nn_pool_is_k2s2(s)) {
        /* The common 2x2 window, every window inside the input: the four
         * candidates in window order, the same selection unrolled. */
        for (size_t p = 0; p < s->batch * s->channels; p++) {
            const float *plane = x + p * ih * iw;
            const float *dyo = dy + p * oh * ow;
            float *gx = grad_x + p * ih * iw;
            for (size_t oy = 0; oy < oh; oy++) {
                for (size_t ox = 0; ox < ow; ox++) {
                    const size_t i0 = 2 * oy * iw + 2 * ox;
                    const size_t cand[4] = {i0, i0 + 1, i0 + iw, i0 + iw + 1};
                    size_t bi = i0;
                    float best = plane[i0];
                    for (size_t c = 1; c < 4; c++) {
                        const float v = plane[cand[c]];
                        /* masks, not branches: compilers turn a ternary
                         * on floats into a jump */
                        const size_t take =
                            (size_t)((best == best) & ((v > best) | (v != v)));
                        const size_t mask = (size_t)0 - take;
                        bi = (cand[c] & mask) | (bi & ~mask);
                        best = plane[bi];
                    }
                    gx[bi] += dyo[oy * ow + ox];
                }
            }
        }
        return KERN_OK;
    }
    for (size_t p = 0; p < s->batch * s->channels; p++) {
        const float *plane = x + p * ih * iw;
        const float *dyo = dy + p * oh * ow;
        float *gx = grad_x + p * ih * iw;
        for (size_t oy = 0; oy < oh; oy++) {
            size_t y0, y1;
            kern_pool_window(oy, s->stride_h, s->pad_top, s->kh, ih, &y0, &y1);
            for (size_t ox = 0; ox < ow; ox++) {
                size_t x0, x1;
                kern_pool_window(ox, s->stride_w, s->pad_left, s->kw, iw, &x0,
                                 &x1);
                gx[window_argmax(plane, iw, y0, y1, x0, x1)] +=
                    dyo[oy * ow + ox];
            }
        }
    }
    return KERN_OK;
}

KERN_API int kern_avgpool2d_f32(const struct kern_pool2d_shape *s,
                                const float *x, float *y)
{
    return pool_forward(dsp_get()->avgpool2d, s, x, y, false);
}

/* ---- pools that close a network, on NCHW8c input ------------------------- */

/* Checks a blocked pooling: its shape, a 1 x 1 output, and the size of the
 * blocked input (ceil(c / 8) * 8 channels, which may overflow where c does
 * not). */
static int pool_nchw8c_check(const struct kern_pool2d_shape *s,
                             const float *x, const float *y)
{
    if (!s || !x || !y) {
        return KERN_E_INVALID;
    }
    size_t oh, ow;
    int st = kern_pool2d_out_hw(s, &oh, &ow);
    if (st != KERN_OK) {
        return st;
    }
    if (oh != 1 || ow != 1) {
        return KERN_E_SHAPE;
    }
    return kern_nn_blocked_fits(s->batch, s->channels, s->in_h, s->in_w)
               ? KERN_OK
               : KERN_E_OVERFLOW;
}

/* The window [y0, y1) x [x0, x1) of nblk consecutive blocks (planes of
 * `plane` floats, width iw), pooled per lane into acc[k] for block k: the
 * cells in row-major order, one max_step or addition each, as
 * kern_nn_maxpool2d_c and kern_nn_avgpool2d_c do for a channel's plane.
 * The blocks' chains are interleaved, so that a long window is not one
 * chain of dependent additions (DS-CNN's 25 x 5 average pool: 125 a
 * block; eight blocks at a time ran 2.8x faster than one, four 1.45x);
 * each lane's operations and their order are the same whatever nblk, so
 * are its bits. The lane loops are what the compiler vectorises; nblk is
 * a constant in every caller. */
enum { POOL_NB = 8 };
static inline __attribute__((always_inline)) void
pool_blks_window(const float *xb, size_t plane, size_t iw, size_t y0,
                 size_t y1, size_t x0, size_t x1, bool is_max, size_t nblk,
                 float acc[][KERN_CBLOCK])
{
    for (size_t k = 0; k < nblk; k++) {
        for (size_t l = 0; l < KERN_CBLOCK; l++) {
            acc[k][l] = is_max ? -INFINITY : 0.0f;
        }
    }
    for (size_t iy = y0; iy < y1; iy++) {
        for (size_t ix = x0; ix < x1; ix++) {
            const float *v = xb + (iy * iw + ix) * KERN_CBLOCK;
            for (size_t k = 0; k < nblk; k++) {
                const float *vk = v + k * plane;
                if (is_max) {
                    for (size_t l = 0; l < KERN_CBLOCK; l++) {
                        acc[k][l] = max_step(acc[k][l], vk[l]);
                    }
                } else {
                    for (size_t l = 0; l < KERN_CBLOCK; l++) {
                        acc[k][l] += vk[l];
                    }
                }
            }
        }
    }
}

/* One block's window (pool_blks_window of one block). */
static void pool_blk_window(const float *xb, size_t iw, size_t y0, size_t y1,
                            size_t x0, size_t x1, bool is_max,
                            float acc[KERN_CBLOCK])
{
    pool_blks_window(xb, 0, iw, y0, y1, x0, x1, is_max, 1,
                     (float(*)[KERN_CBLOCK])acc);
}

/* The one window of a 1 x 1 output, eight channels (one block) at a time:
 * each lane is one channel's plane, and it sees the window's real cells in
 * the row-major order of kern_nn_maxpool2d_c and kern_nn_avgpool2d_c (and
 * of their vector forms, which run that reference for a one-column
 * output), one float operation per cell, so every channel gets the bits
 * of the NCHW kernel; POOL_NB blocks at a time where there are that many
 * (pool_blks_window). */
static inline __attribute__((always_inline)) void
pool_nchw8c(const struct kern_pool2d_shape *s, const float *x, float *y,
            bool is_max)
{
    const size_t c = s->channels, iw = s->in_w;
    const size_t nb = kern_nn_cblocks(c);
    const size_t plane = s->in_h * iw * KERN_CBLOCK;
    size_t y0, y1, x0, x1;
    kern_pool_window(0, s->stride_h, s->pad_top, s->kh, s->in_h, &y0, &y1);
    kern_pool_window(0, s->stride_w, s->pad_left, s->kw, iw, &x0, &x1);
    const float d = kern_nn_pool_divisor(s, y1 - y0, x1 - x0);
    for (size_t b = 0; b < s->batch; b++) {
        for (size_t blk = 0; blk < nb;) {
            const float *xb = x + (b * nb + blk) * plane;
            float acc[POOL_NB][KERN_CBLOCK];
            const size_t n = nb - blk >= POOL_NB ? POOL_NB : 1;
            if (n == POOL_NB) {
                pool_blks_window(xb, plane, iw, y0, y1, x0, x1, is_max,
                                 POOL_NB, acc);
            } else {
                pool_blks_window(xb, plane, iw, y0, y1, x0, x1, is_max, 1,
                                 acc);
            }
            /* the lanes of real channels; a last block's padding lanes
             * have no output */
            for (size_t k = 0; k < n; k++, blk++) {
                float *yb = y + b * c + blk * KERN_CBLOCK;
                for (size_t l = 0; l < kern_nn_block_lanes(c, blk); l++) {
                    yb[l] = is_max ? acc[k][l] : acc[k][l] / d;
                }
            }
        }
    }
}

KERN_API int kern_maxpool2d_nchw8c_f32(const struct kern_pool2d_shape *s,
                                       const float *x, float *y)
{
    int st = pool_nchw8c_check(s, x, y);
    if (st == KERN_OK) {
        pool_nchw8c(s, x, y, true);
    }
    return st;
}

KERN_API int kern_avgpool2d_nchw8c_f32(const struct kern_pool2d_shape *s,
                                       const float *x, float *y)
{
    int st = pool_nchw8c_check(s, x, y);
    if (st == KERN_OK) {
        pool_nchw8c(s, x, y, false);
    }
    return st;
}

/* ---- pools on NCHW8c, any output size ----------------------------------- */

/* The reference: each lane of each output cell pools its window's real
 * cells (pool_blk_window); padding lanes are pooled like the others (their
 * values are whatever the producer left, never read as real channels). */
static void pool_blk_c(const struct kern_pool2d_shape *s, size_t oh,
                       size_t ow, const float *x, float *y, bool is_max)
{
    const size_t ih = s->in_h, iw = s->in_w, nb = kern_nn_cblocks(s->channels);
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
                float acc[KERN_CBLOCK];
                pool_blk_window(xp, iw, y0, y1, x0, x1, is_max, acc);
                const float d = kern_nn_pool_divisor(s, y1 - y0, x1 - x0);
                float *o = yp + (oy * ow + ox) * KERN_CBLOCK;
                for (size_t l = 0; l < KERN_CBLOCK; l++) {
                    o[l] = is_max ? acc[l] : acc[l] / d;
                }
            }
        }
    }
}

void kern_nn_maxpool2d_blk_c(const struct kern_pool2d_shape *s, size_t out_h,
                             size_t out_w, const float *x, float *y)
{
    pool_blk_c(s, out_h, out_w, x, y, true);
}

void kern_nn_avgpool2d_blk_c(const struct kern_pool2d_shape *s, size_t out_h,
                             size_t out_w, const float *x, float *y)
{
    pool_blk_c(s, out_h, out_w, x, y, false);
}

KERN_API int kern_maxpool2d_blocked_f32(const struct kern_pool2d_shape *s,
                                        const float *x, float *y)
{
    return pool_forward(dsp_get()->maxpool2d_blk, s, x, y, true);
}

KERN_API int kern_avgpool2d_blocked_f32(const struct kern_pool2d_shape *s,
                                        const float *x, float *y)
{
    return pool_forward(dsp_get()->avgpool2d_blk, s, x, y, true);
}

KERN_API int kern_avgpool2d_backward_f32(const struct kern_pool2d_shape *s,
                                         const float *dy, float *grad_x)
{
    if (!s || !dy || !grad_x) {
        return KERN_E_INVALID;
    }
    size_t oh, ow;
    int st = kern_pool2d_out_hw(s, &oh, &ow);
    if (st != KERN_OK) {
        return st;
    }
    const size_t ih = s->in_h, iw = s->in_w;
    memset(grad_x, 0, s->batch * s->channels * ih * iw * sizeof *grad_x);
    for (size_t p = 0; p < s->batch * s->channels; p++) {
        const float *dyo = dy + p * oh * ow;
        float *gx = grad_x + p * ih * iw;
        for (size_t oy = 0; oy < oh; oy++) {
            size_t y0, y1;
            kern_pool_window(oy, s->stride_h, s->pad_top, s->kh, ih, &y0, &y1);
            for (size_t ox = 0; ox < ow; ox++) {
                size_t x0, x1;
                kern_pool_window(ox, s->stride_w, s->pad_left, s->kw, iw, &x0,
                                 &x1);
                const float d = dyo[oy * ow + ox] /
                                kern_nn_pool_divisor(s, y1 - y0, x1 - x0);
                for (size_t iy = y0; iy < y1; iy++) {
                    for (size_t ix = x0; ix < x1; ix++) {
                        gx[iy * iw + ix] += d;
                    }
                }
            }
        }
    }
    return KERN_OK;
}

KERN_API int kern_nn_sgd_f32(float *w, const float *g, float *velocity,
                             size_t n, float lr, float momentum,
                             float weight_decay)
{
    if (n && (!w || !g || (momentum != 0.0f && !velocity))) {
        return KERN_E_INVALID;
    }
    if (!isfinite(lr) || !isfinite(momentum) || !isfinite(weight_decay)) {
        return KERN_E_RANGE;
    }
    if (n) {
        dsp_get()->sgd(w, g, velocity, n, lr, momentum, weight_decay);
    }
    return KERN_OK;
}

/* Adam is applied once per step to each parameter tensor, a few tens of
 * thousands of values in the models this library serves: a plain loop the
 * compiler vectorises is enough, and one path keeps its rounding the same
 * on every machine. The step constants are computed in double and rounded
 * once, as PyTorch does in Python floats (hence the double arguments:
 * 1 - 0.999 in float would already be off by 1.3e-5). */
KERN_API int kern_nn_adam_f32(float *w, const float *g, float *m, float *v,
                              size_t n, double lr, double beta1, double beta2,
                              double eps, uint64_t step)
{
    if (n && (!w || !g || !m || !v)) {
        return KERN_E_INVALID;
    }
    if (!isfinite(lr) || !(beta1 >= 0.0 && beta1 < 1.0) ||
        !(beta2 >= 0.0 && beta2 < 1.0) || !(eps > 0.0) || !isfinite(eps) ||
        step == 0) {
        return KERN_E_RANGE;
    }
    const double bc1 = 1.0 - pow(beta1, (double)step);
    const double bc2 = 1.0 - pow(beta2, (double)step);
    const float step_size = (float)(lr / bc1);
    const float sqrt_bc2 = (float)sqrt(bc2);
    const float b1 = (float)beta1, b2 = (float)beta2, e = (float)eps;
    const float a1 = (float)(1.0 - beta1), a2 = (float)(1.0 - beta2);
    for (size_t i = 0; i < n; i++) {
        const float gi = g[i];
        const float mi = b1 * m[i] + a1 * gi;
        const float vi = b2 * v[i] + a2 * gi * gi;
        m[i] = mi;
        v[i] = vi;
        const float denom = sqrtf(vi) / sqrt_bc2 + e;
        w[i] -= step_size * (mi / denom);
    }
    return KERN_OK;
}

KERN_API bool kern_all_finite_f32(const float *x, size_t n)
{
    if (!n) {
        return true;
    }
    if (!x) {
        return false;
    }
    return dsp_get()->all_finite(x, n);
}

KERN_API int kern_scale_f32(float *x, size_t n, float s)
{
    if (n && !x) {
        return KERN_E_INVALID;
    }
    if (n) {
        dsp_get()->scale(x, n, s);
    }
    return KERN_OK;
}

KERN_API void kern_loss_scaler_init(struct kern_loss_scaler *s)
{
    if (!s) {
        return;
    }
    s->scale = 1024.0f;
    s->min_scale = 1.0f;
    s->max_scale = 65536.0f;
    s->growth_factor = 2.0f;
    s->backoff_factor = 0.5f;
    s->growth_interval = 2000;
    s->good_steps = 0;
    s->skipped_steps = 0;
}

KERN_API int kern_loss_scaler_config(struct kern_loss_scaler *s,
                                     float init_scale, float min_scale,
                                     float max_scale, float growth_factor,
                                     float backoff_factor,
                                     uint32_t growth_interval)
{
    if (!s) {
        return KERN_E_INVALID;
    }
    if (!isfinite(init_scale) || !isfinite(min_scale) ||
        !isfinite(max_scale) || !isfinite(growth_factor) ||
        !(min_scale > 0.0f) || !(min_scale <= init_scale) ||
        !(init_scale <= max_scale) || !(growth_factor >= 1.0f) ||
        !(backoff_factor > 0.0f) || !(backoff_factor <= 1.0f) ||
        growth_interval < 1) {
        return KERN_E_RANGE;
    }
    s->scale = init_scale;
    s->min_scale = min_scale;
    s->max_scale = max_scale;
    s->growth_factor = growth_factor;
    s->backoff_factor = backoff_factor;
    s->growth_interval = growth_interval;
    s->good_steps = 0;
    s->skipped_steps = 0;
    return KERN_OK;
}

KERN_API bool kern_loss_scaler_update(struct kern_loss_scaler *s,
                                      bool grads_finite)
{
    if (!s) {
        return false;
    }
    if (!grads_finite) {
        const float down = s->scale * s->backoff_factor;
        s->scale = down > s->min_scale ? down : s->min_scale;
        s->good_steps = 0;
        s->skipped_steps++;
        return false;
    }
    s->good_steps++;
    if (s->good_steps >= s->growth_interval) {
        const float up = s->scale * s->growth_factor;
        s->scale = up < s->max_scale ? up : s->max_scale;
        s->good_steps = 0;
    }
    return true;
}
