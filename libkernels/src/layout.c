/* Conversions between NCHW and channel-blocked NCHW8c activations (layout
 * in kernels.h): the C definitions, the dispatch and the public wrappers.
 * For callers that hold NCHW tensors (tests, benchmarks, a program
 * feeding the blocked kernels); the AVX2 path (src/x86/layout_avx2.c)
 * moves 8 x 8 tiles through registers instead of one value at a time. */
#include <stdint.h>
#include <string.h>

#include "layout.h"
#include "nn.h"

static int check(size_t batch, size_t c, size_t hw, const float *x,
                 const float *y)
{
    if (!x || !y) {
        return KERN_E_INVALID;
    }
    if (batch == 0 || c == 0 || hw == 0) {
        return KERN_E_SHAPE;
    }
    return kern_nn_blocked_fits(batch, c, hw, 1) ? KERN_OK : KERN_E_OVERFLOW;
}

void kern_nchw_to_nchw8c_c(size_t batch, size_t c, size_t hw,
                           const float *x, float *y)
{
    const size_t cb = kern_nn_cblocks(c);
    for (size_t b = 0; b < batch; b++) {
        for (size_t k = 0; k < cb; k++) {
            float *yk = y + (b * cb + k) * hw * KERN_CBLOCK;
            const size_t n = kern_nn_block_lanes(c, k);
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
}

void kern_nchw8c_to_nchw_c(size_t batch, size_t c, size_t hw,
                           const float *x, float *y)
{
    const size_t cb = kern_nn_cblocks(c);
    for (size_t b = 0; b < batch; b++) {
        for (size_t k = 0; k < cb; k++) {
            const float *xk = x + (b * cb + k) * hw * KERN_CBLOCK;
            const size_t n = kern_nn_block_lanes(c, k);
            for (size_t l = 0; l < n; l++) {
                float *yc = y + (b * c + k * KERN_CBLOCK + l) * hw;
                for (size_t p = 0; p < hw; p++) {
                    yc[p] = xk[p * KERN_CBLOCK + l];
                }
            }
        }
    }
}

/* ---- dispatch ------------------------------------------------------------ */

void kern_layout_dsp_init(struct kern_layout_dsp *dsp, unsigned flags)
{
    dsp->to_nchw8c = kern_nchw_to_nchw8c_c;
    dsp->to_nchw = kern_nchw8c_to_nchw_c;
#if KERN_SIMD && KERN_HAVE_X86
    kern_layout_dsp_init_x86(dsp, flags);
#elif KERN_SIMD && KERN_HAVE_NEON
    kern_layout_dsp_init_arm(dsp, flags);
#else
    (void)flags;
#endif
}

static struct kern_layout_dsp layout_dsp;
static pthread_once_t layout_once = PTHREAD_ONCE_INIT;

static void layout_init_once(void)
{
    kern_layout_dsp_init(&layout_dsp, kern_cpu_flags());
}

/* ---- public API ---------------------------------------------------------- */

KERN_API int kern_nchw_to_nchw8c_f32(size_t batch, size_t c, size_t hw,
                                     const float *x, float *y)
{
    const int st = check(batch, c, hw, x, y);
    if (st != KERN_OK) {
        return st;
    }
    pthread_once(&layout_once, layout_init_once);
    layout_dsp.to_nchw8c(batch, c, hw, x, y);
    return KERN_OK;
}

KERN_API int kern_nchw8c_to_nchw_f32(size_t batch, size_t c, size_t hw,
                                     const float *x, float *y)
{
    const int st = check(batch, c, hw, x, y);
    if (st != KERN_OK) {
        return st;
    }
    pthread_once(&layout_once, layout_init_once);
    layout_dsp.to_nchw(batch, c, hw, x, y);
    return KERN_OK;
}
