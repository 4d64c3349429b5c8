/* Layer normalisation with NEON: on AArch64 the row's sums in double, two
 * lanes at a time in two accumulators, as the C reference and the x86
 * paths sum in double (a row far from zero loses nothing); armv7 NEON has
 * no double lanes and takes the reference's scalar sums. Then the row
 * normalised four floats at a time with one FMA for gamma and beta, the
 * reference's fmaf. Agrees with kern_layernorm_c within the sums' order
 * (in double): bit for bit on armv7. */
#include <arm_neon.h>
#include <math.h>

#include "neon_compat.h"
#include "norm.h"

#if KN_A64
static void row_stats(const float *x, size_t n, float eps, float *mean,
                      float *rstd)
{
    float64x2_t s0 = vdupq_n_f64(0.0), s1 = vdupq_n_f64(0.0);
    size_t c = 0;
    for (; c + 4 <= n; c += 4) {
        const float32x4_t v = vld1q_f32(x + c);
        s0 = vaddq_f64(s0, vcvt_f64_f32(vget_low_f32(v)));
        s1 = vaddq_f64(s1, vcvt_high_f64_f32(v));
    }
    double s = vaddvq_f64(vaddq_f64(s0, s1));
    for (; c < n; c++) {
        s += x[c];
    }
    const double m = s / (double)n;
    const float64x2_t vm = vdupq_n_f64(m);
    s0 = vdupq_n_f64(0.0);
    s1 = vdupq_n_f64(0.0);
    for (c = 0; c + 4 <= n; c += 4) {
        const float32x4_t v = vld1q_f32(x + c);
        const float64x2_t d0 = vsubq_f64(vcvt_f64_f32(vget_low_f32(v)), vm);
        const float64x2_t d1 = vsubq_f64(vcvt_high_f64_f32(v), vm);
        s0 = vfmaq_f64(s0, d0, d0);
        s1 = vfmaq_f64(s1, d1, d1);
    }
    double v = vaddvq_f64(vaddq_f64(s0, s1));
    for (; c < n; c++) {
        const double d = x[c] - m;
        v += d * d;
    }
    *mean = (float)m;
    *rstd = (float)(1.0 / sqrt(v / (double)n + (double)eps));
}
#else
static void row_stats(const float *x, size_t n, float eps, float *mean,
                      float *rstd)
{
    kern_layernorm_row_stats_c(x, n, eps, mean, rstd);
}
#endif

void kern_layernorm_neon(const float *x, size_t rows, size_t cols,
                         const float *gamma, const float *beta, float eps,
                         float *y)
{
    const float32x4_t one = vdupq_n_f32(1.0f), zero = vdupq_n_f32(0.0f);
    for (size_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols;
        float *yr = y + r * cols;
        float m, rs;
        row_stats(xr, cols, eps, &m, &rs);
        const float32x4_t vm = vdupq_n_f32(m), vr = vdupq_n_f32(rs);
        size_t c = 0;
        for (; c + 4 <= cols; c += 4) {
            const float32x4_t h =
                vmulq_f32(vsubq_f32(vld1q_f32(xr + c), vm), vr);
            const float32x4_t g = gamma ? vld1q_f32(gamma + c) : one;
            const float32x4_t b = beta ? vld1q_f32(beta + c) : zero;
            vst1q_f32(yr + c, vfmaq_f32(b, h, g));
        }
        for (; c < cols; c++) {
            const float h = (xr[c] - m) * rs;
            yr[c] = fmaf(h, gamma ? gamma[c] : 1.0f, beta ? beta[c] : 0.0f);
        }
    }
}
