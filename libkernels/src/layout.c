/* Conversions between NCHW and channel-blocked NCHW8c activations (layout
 * in kernels.h). Plain copies: an executor converts only where a chain of
 * blocked layers meets a layer that reads NCHW, so these are not on the
 * hot path; the compiler vectorises the inner copies. */
#include <stdint.h>
#include <string.h>

#include "edgefit/kernels.h"

/* Elements of the blocked form, or 0 on overflow (sizes are nonzero). */
static size_t blocked_elems(size_t batch, size_t c, size_t hw)
{
    const size_t cb = (c + KERN_CBLOCK - 1) / KERN_CBLOCK;
    if (c > SIZE_MAX - KERN_CBLOCK || hw > SIZE_MAX / KERN_CBLOCK / cb) {
        return 0;
    }
    const size_t per = cb * hw * KERN_CBLOCK;
    if (batch > SIZE_MAX / sizeof(float) / per) {
        return 0;
    }
    return batch * per;
}

static int check(size_t batch, size_t c, size_t hw, const float *x,
                 const float *y)
{
    if (!x || !y) {
        return KERN_E_INVALID;
    }
    if (batch == 0 || c == 0 || hw == 0) {
        return KERN_E_SHAPE;
    }
    return blocked_elems(batch, c, hw) ? KERN_OK : KERN_E_OVERFLOW;
}

KERN_API int kern_nchw_to_nchw8c_f32(size_t batch, size_t c, size_t hw,
                                     const float *x, float *y)
{
    const int st = check(batch, c, hw, x, y);
    if (st != KERN_OK) {
        return st;
    }
    const size_t cb = (c + KERN_CBLOCK - 1) / KERN_CBLOCK;
    for (size_t b = 0; b < batch; b++) {
        for (size_t k = 0; k < cb; k++) {
            float *yk = y + (b * cb + k) * hw * KERN_CBLOCK;
            const size_t n = c - k * KERN_CBLOCK < KERN_CBLOCK
                                 ? c - k * KERN_CBLOCK
                                 : KERN_CBLOCK;
            if (n < KERN_CBLOCK) {
                memset(yk, 0, hw * KERN_CBLOCK * sizeof *yk);
            }
            for (size_t l = 0; l < n; l++) {
                const float *xc = x + (b * c + k * KERN_CBLOCK + l) * hw;
                for (size_t p = 0; p < hw; p++) {
                    yk[p * KERN_CBLOCK + l] = xc[p];
                }
            }
        }
    }
    return KERN_OK;
}

KERN_API int kern_nchw8c_to_nchw_f32(size_t batch, size_t c, size_t hw,
                                     const float *x, float *y)
{
    const int st = check(batch, c, hw, x, y);
    if (st != KERN_OK) {
        return st;
    }
    const size_t cb = (c + KERN_CBLOCK - 1) / KERN_CBLOCK;
    for (size_t b = 0; b < batch; b++) {
        for (size_t k = 0; k < cb; k++) {
            const float *xk = x + (b * cb + k) * hw * KERN_CBLOCK;
            const size_t n = c - k * KERN_CBLOCK < KERN_CBLOCK
                                 ? c - k * KERN_CBLOCK
                                 : KERN_CBLOCK;
            for (size_t l = 0; l < n; l++) {
                float *yc = y + (b * c + k * KERN_CBLOCK + l) * hw;
                for (size_t p = 0; p < hw; p++) {
                    yc[p] = xk[p * KERN_CBLOCK + l];
                }
            }
        }
    }
    return KERN_OK;
}
