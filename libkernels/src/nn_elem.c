/* Element-wise network primitives of graph models: the sum of N tensors,
 * a per-channel affine map (a batch norm at inference), global average
 * pooling, relu6 and log-softmax. Each is one pass over memory that the
 * compiler vectorises; sums that span many elements (global average,
 * log-softmax's normaliser) run in double and are rounded once, so these
 * are also the references of their own tests. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "edgefit/kernels.h"
#include "nn.h"

/* act applied to one sum with the bits of the separate pass: relu as
 * kern_relu_f32 and relu6 as kern_nn_relu6_f32 (-0 becomes +0, NaN passes
 * through; kern_fuse1 of the convolutions keeps -0, which a sum of two -0
 * would show). */
static inline float add_act1(float v, int act)
{
    if (act == KERN_FUSE_RELU) {
        return v > 0.0f ? v : (v != v ? v : 0.0f);
    }
    if (act == KERN_FUSE_RELU6) {
        return v > 0.0f ? (v < 6.0f ? v : 6.0f) : (v != v ? v : 0.0f);
    }
    return v;
}

KERN_API int kern_nn_add_act_f32(float *y, const float *const *x,
                                 size_t count, size_t n, int act)
{
    if (act != KERN_FUSE_NONE && act != KERN_FUSE_RELU &&
        act != KERN_FUSE_RELU6) {
        return KERN_E_RANGE;
    }
    if (!y || !x) {
        return KERN_E_INVALID;
    }
    if (count == 0) {
        return KERN_E_SHAPE;
    }
    for (size_t j = 0; j < count; j++) {
        if (!x[j]) {
            return KERN_E_INVALID;
        }
    }
    if (n > SIZE_MAX / sizeof(float)) {
        return KERN_E_OVERFLOW;
    }
    /* kern_nn_add_f32's passes, the activation in the last one: one pass
     * over y fewer, the whole gain of fusing it (ResNet-8's three
     * relu(add) layers from 5.8 to 4.6-4.8 us at batch 1, per layer
     * the fastest of 20 to 30 alternated runs). */
    if (count == 1) {
        const float *a = x[0];
        if (act == KERN_FUSE_NONE) {
            if (y != a) {
                memcpy(y, a, n * sizeof *y);
            }
            return KERN_OK;
        }
        for (size_t i = 0; i < n; i++) {
            y[i] = add_act1(a[i], act);
        }
        return KERN_OK;
    }
    /* Left to right, one float addition per input: y[i] = (x0 + x1) + x2
     * ... The first pass reads x0 and x1 before it writes, so y may be
     * x0; later inputs must not be y (the caller's contract). */
    const float *a = x[0], *b = x[1];
    if (count == 2) {
        /* the case of every residual add, one loop per act so that each
         * is a plain loop the compiler vectorises */
        if (act == KERN_FUSE_RELU) {
            for (size_t i = 0; i < n; i++) {
                y[i] = add_act1(a[i] + b[i], KERN_FUSE_RELU);
            }
        } else if (act == KERN_FUSE_RELU6) {
            for (size_t i = 0; i < n; i++) {
                y[i] = add_act1(a[i] + b[i], KERN_FUSE_RELU6);
            }
        } else {
            for (size_t i = 0; i < n; i++) {
                y[i] = a[i] + b[i];
            }
        }
        return KERN_OK;
    }
    for (size_t i = 0; i < n; i++) {
        y[i] = a[i] + b[i];
    }
    for (size_t j = 2; j + 1 < count; j++) {
        const float *c = x[j];
        for (size_t i = 0; i < n; i++) {
            y[i] += c[i];
        }
    }
    const float *c = x[count - 1];
    for (size_t i = 0; i < n; i++) {
        y[i] = add_act1(y[i] + c[i], act);
    }
    return KERN_OK;
}

KERN_API int kern_nn_add_f32(float *y, const float *const *x, size_t count,
                             size_t n)
{
    return kern_nn_add_act_f32(y, x, count, n, KERN_FUSE_NONE);
}

KERN_API int kern_nn_channel_affine_f32(const float *x, size_t batch,
                                        size_t channels, size_t hw,
                                        const float *scale,
                                        const float *shift, float *y)
{
    if (!x || !scale || !shift || !y) {
        return KERN_E_INVALID;
    }
    size_t total;
    if (!kern_nn_mul4(batch, channels, hw, sizeof(float), &total)) {
        return KERN_E_OVERFLOW;
    }
    if (hw == 1) {
        /* Feature vectors (a batchnorm over features, the stream's
         * normalisation): one contiguous row per sample, which the
         * compiler vectorises; per channel it was one multiply-add per
         * loop, 30 times slower than relu on the same 32 x 64 floats.
         * The arithmetic per element is the same. */
        for (size_t b = 0; b < batch; b++) {
            const float *xp = x + b * channels;
            float *yp = y + b * channels;
            for (size_t c = 0; c < channels; c++) {
                yp[c] = xp[c] * scale[c] + shift[c];
            }
        }
        return KERN_OK;
    }
    for (size_t b = 0; b < batch; b++) {
        for (size_t c = 0; c < channels; c++) {
            const float s = scale[c], t = shift[c];
            const float *xp = x + (b * channels + c) * hw;
            float *yp = y + (b * channels + c) * hw;
            for (size_t i = 0; i < hw; i++) {
                yp[i] = xp[i] * s + t;
            }
        }
    }
    return KERN_OK;
}

KERN_API int kern_nn_global_avgpool_f32(const float *x, size_t planes,
                                        size_t hw, float *y)
{
    if (!x || !y) {
        return KERN_E_INVALID;
    }
    if (!hw) {
        return KERN_E_SHAPE;
    }
    size_t total;
    if (!kern_nn_mul4(planes, hw, sizeof(float), 1, &total)) {
        return KERN_E_OVERFLOW;
    }
    for (size_t p = 0; p < planes; p++) {
        const float *xp = x + p * hw;
        /* Four partial sums: a double chain of one addition per element
         * is latency-bound, and four keep the error far below float's. */
        double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
        size_t i = 0;
        for (; i + 4 <= hw; i += 4) {
            s0 += xp[i];
            s1 += xp[i + 1];
            s2 += xp[i + 2];
            s3 += xp[i + 3];
        }
        for (; i < hw; i++) {
            s0 += xp[i];
        }
        y[p] = (float)(((s0 + s1) + (s2 + s3)) / (double)hw);
    }
    return KERN_OK;
}

KERN_API int kern_nn_relu6_f32(float *dst, const float *src, size_t n)
{
    if (n == 0) {
        return KERN_OK;
    }
    if (!dst || !src) {
        return KERN_E_INVALID;
    }
    if (n > SIZE_MAX / sizeof(float)) {
        return KERN_E_OVERFLOW;
    }
    for (size_t i = 0; i < n; i++) {
        const float v = src[i];
        /* Written so that NaN fails both comparisons and passes through,
         * and -0 becomes +0 as relu's does. */
        dst[i] = v > 0.0f ? (v < 6.0f ? v : 6.0f) : (v != v ? v : 0.0f);
    }
    return KERN_OK;
}

KERN_API int kern_nn_relu6_backward_f32(float *grad_in,
                                        const float *grad_out, const float *y,
                                        size_t n)
{
    if (n == 0) {
        return KERN_OK;
    }
    if (!grad_in || !grad_out || !y) {
        return KERN_E_INVALID;
    }
    if (n > SIZE_MAX / sizeof(float)) {
        return KERN_E_OVERFLOW;
    }
    for (size_t i = 0; i < n; i++) {
        const float v = y[i];
        /* 0 < y < 6 exactly where 0 < x < 6; a NaN y fails both tests and
         * is passed on as NaN */
        grad_in[i] = v > 0.0f && v < 6.0f ? grad_out[i]
                     : v != v              ? v
                                           : 0.0f;
    }
    return KERN_OK;
}

KERN_API int kern_nn_log_softmax_f32(const float *x, size_t rows,
                                     size_t cols, float *y)
{
    if (!x || !y) {
        return KERN_E_INVALID;
    }
    size_t total;
    if (!kern_nn_mul4(rows, cols, sizeof(float), 1, &total)) {
        return KERN_E_OVERFLOW;
    }
    for (size_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols;
        float *yr = y + r * cols;
        float mx = -INFINITY;
        int bad = 0;
        for (size_t c = 0; c < cols; c++) {
            const float v = xr[c];
            bad |= v != v || v == INFINITY;
            mx = v > mx ? v : mx;
        }
        if (bad || mx == -INFINITY) {
            /* As kern_nn_softmax_f32: no finite answer for the row. */
            for (size_t c = 0; c < cols; c++) {
                yr[c] = NAN;
            }
            continue;
        }
        double sum = 0.0;
        for (size_t c = 0; c < cols; c++) {
            sum += exp((double)xr[c] - (double)mx);
        }
        /* log softmax = (x - max) - log(sum exp(x - max)), in double:
         * the difference of two nearly equal terms of a dominant class
         * keeps its digits. */
        const double lse = log(sum);
        for (size_t c = 0; c < cols; c++) {
            yr[c] = (float)(((double)xr[c] - (double)mx) - lse);
        }
    }
    return KERN_OK;
}
