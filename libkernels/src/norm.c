/* Layer normalisation: the C reference, the backward pass (C only: the
 * trainer's, not a hot path at inference) and the public wrappers. */
#include <math.h>
#include <stdint.h>

#include "nn.h"
#include "norm.h"

void kern_layernorm_row_stats_c(const float *x, size_t cols, float eps,
                                float *mean, float *rstd)
{
    double s = 0.0, v = 0.0;
    for (size_t c = 0; c < cols; c++) {
        s += x[c];
    }
    const double m = s / (double)cols;
    /* the second pass sums squares about the mean: no cancellation for a
     * row far from zero (x = 1000 + noise) */
    for (size_t c = 0; c < cols; c++) {
        const double d = x[c] - m;
        v += d * d;
    }
    *mean = (float)m;
    *rstd = (float)(1.0 / sqrt(v / (double)cols + (double)eps));
}

void kern_layernorm_c(const float *x, size_t rows, size_t cols,
                      const float *gamma, const float *beta, float eps,
                      float *y)
{
    for (size_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols;
        float *yr = y + r * cols;
        float m, rs;
        kern_layernorm_row_stats_c(xr, cols, eps, &m, &rs);
        for (size_t c = 0; c < cols; c++) {
            const float h = (xr[c] - m) * rs;
            yr[c] = fmaf(h, gamma ? gamma[c] : 1.0f, beta ? beta[c] : 0.0f);
        }
    }
}

void kern_norm_dsp_init(struct kern_norm_dsp *dsp, unsigned flags)
{
    dsp->layernorm = kern_layernorm_c;
#if KERN_SIMD && KERN_HAVE_X86
    kern_norm_dsp_init_x86(dsp, flags);
#elif KERN_SIMD && KERN_HAVE_NEON
    kern_norm_dsp_init_arm(dsp, flags);
#else
    (void)flags;
#endif
}

static struct kern_norm_dsp norm_dsp;
static pthread_once_t norm_once = PTHREAD_ONCE_INIT;

static void norm_init(void)
{
    kern_norm_dsp_init(&norm_dsp, kern_cpu_flags());
}

static int check(const float *x, const float *y, size_t rows, size_t cols,
                 float eps)
{
    size_t bytes;
    if (!x || !y) {
        return KERN_E_INVALID;
    }
    if (rows > 0 && cols == 0) {
        return KERN_E_SHAPE;
    }
    if (!(eps >= 0.0f) || isinf(eps)) {
        return KERN_E_RANGE;
    }
    if (!kern_nn_mul4(rows, cols, sizeof(float), 1, &bytes)) {
        return KERN_E_OVERFLOW;
    }
    return KERN_OK;
}

KERN_API int kern_layernorm_f32(const float *x, size_t rows, size_t cols,
                                const float *gamma, const float *beta,
                                float eps, float *y)
{
    const int st = check(x, y, rows, cols, eps);
    if (st != KERN_OK || rows == 0) {
        return st;
    }
    pthread_once(&norm_once, norm_init);
    norm_dsp.layernorm(x, rows, cols, gamma, beta, eps, y);
    return KERN_OK;
}

/* dL/dx of y = xh * gamma + beta, xh = (x - m) * rstd, over a row of n:
 * gx = rstd * (gh - mean(gh) - xh * mean(gh * xh)), gh = g * gamma (the
 * mean's and the variance's own dependence on x give the two means).
 * Sums in double; gx may alias g, so the row's sums come first. */
KERN_API int kern_layernorm_backward_f32(const float *x, const float *g,
                                         size_t rows, size_t cols,
                                         const float *gamma, float eps,
                                         float *gx, float *ggamma,
                                         float *gbeta)
{
    int st = check(x, g, rows, cols, eps);
    if (st != KERN_OK) {
        return st;
    }
    for (size_t c = 0; ggamma && c < cols; c++) {
        ggamma[c] = 0.0f;
    }
    for (size_t c = 0; gbeta && c < cols; c++) {
        gbeta[c] = 0.0f;
    }
    for (size_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols;
        const float *gr = g + r * cols;
        float m, rs;
        double sg = 0.0, sgx = 0.0;
        kern_layernorm_row_stats_c(xr, cols, eps, &m, &rs);
        for (size_t c = 0; c < cols; c++) {
            const double xh = ((double)xr[c] - m) * rs;
            const double gh = (double)gr[c] * (gamma ? gamma[c] : 1.0f);
            sg += gh;
            sgx += gh * xh;
            if (ggamma) {
                ggamma[c] += (float)(gr[c] * xh);
            }
            if (gbeta) {
                gbeta[c] += gr[c];
            }
        }
        if (!gx) {
            continue;
        }
        const double mg = sg / (double)cols, mgx = sgx / (double)cols;
        float *out = gx + r * cols;
        for (size_t c = 0; c < cols; c++) {
            const double xh = ((double)xr[c] - m) * rs;
            const double gh = (double)gr[c] * (gamma ? gamma[c] : 1.0f);
            out[c] = (float)(rs * (gh - mg - xh * mgx));
        }
    }
    return KERN_OK;
}
