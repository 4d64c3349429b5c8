/* Elementwise activations: C references and the public wrappers.
 *
 * The references favour accuracy over speed: tanh, erf and sigmoid use
 * libm in float (glibc's tanhf, erff and expf are within 1-2 ulp), and the
 * two GELU forms and their derivatives are evaluated in double and rounded
 * once, so they are within 1 ulp of the exact value of the formula for
 * every float input. The SIMD paths in x86/act_*.c use their own
 * approximations and are checked against these. */
#include <math.h>
#include <stdint.h>

#include "act.h"

/* sqrt(2/pi) and the cubic coefficient of the tanh form. */
#define GELU_K 0.7978845608028654
#define GELU_A 0.044715
/* 1/sqrt(2) and 1/sqrt(2*pi). */
#define INV_SQRT2 0.70710678118654752
#define INV_SQRT_2PI 0.39894228040143268

void kern_tanh_f32_c(float *dst, const float *src, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        dst[i] = tanhf(src[i]);
    }
}

void kern_erf_f32_c(float *dst, const float *src, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        dst[i] = erff(src[i]);
    }
}

/* e = exp(-|x|) never overflows, and e / (1 + e) keeps the relative
 * accuracy of tiny results for negative x (1 - 1/(1 + e) would not). */
static float sigmoid_ref(float x)
{
    if (x >= 0.0f) {
        return 1.0f / (1.0f + expf(-x));
    }
    const float e = expf(x); /* NaN lands here and propagates */
    return e / (1.0f + e);
}

void kern_sigmoid_f32_c(float *dst, const float *src, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        dst[i] = sigmoid_ref(src[i]);
    }
}

/* relu(-0) = +0; NaN propagates. */
void kern_relu_f32_c(float *dst, const float *src, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const float x = src[i];
        dst[i] = (x > 0.0f || isnan(x)) ? x : 0.0f;
    }
}

/* 0.5 (1 + tanh(u)) = 1 / (1 + exp(-2u)): the sigmoid form has no
 * cancellation for negative x, where GELU tends to -0. */
static float gelu_ref(float xf)
{
    const double x = xf;
    if (isinf(xf)) {
        return xf > 0.0f ? xf : -0.0f;
    }
    const double u = GELU_K * (x + GELU_A * x * x * x);
    return (float)(x / (1.0 + exp(-2.0 * u)));
}

void kern_gelu_f32_c(float *dst, const float *src, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        dst[i] = gelu_ref(src[i]);
    }
}

/* 0.5 (1 + erf(x/sqrt2)) = 0.5 erfc(-x/sqrt2), accurate for x < 0 too. */
static float gelu_erf_ref(float xf)
{
    const double x = xf;
    if (isinf(xf)) {
        return xf > 0.0f ? xf : -0.0f;
    }
    return (float)(0.5 * x * erfc(-x * INV_SQRT2));
}

void kern_gelu_erf_f32_c(float *dst, const float *src, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        dst[i] = gelu_erf_ref(src[i]);
    }
}

/* (1 - y)(1 + y) loses less than 1 - y*y when |y| is near 1. */
void kern_tanh_backward_f32_c(float *gi, const float *go, const float *y,
                              size_t n)
{
    for (size_t i = 0; i < n; i++) {
        gi[i] = go[i] * ((1.0f - y[i]) * (1.0f + y[i]));
    }
}

void kern_sigmoid_backward_f32_c(float *gi, const float *go, const float *y,
                                 size_t n)
{
    for (size_t i = 0; i < n; i++) {
        gi[i] = go[i] * (y[i] * (1.0f - y[i]));
    }
}

void kern_relu_backward_f32_c(float *gi, const float *go, const float *x,
                              size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const float v = x[i];
        gi[i] = v > 0.0f ? go[i] : (isnan(v) ? v : 0.0f);
    }
}

/* d/dx x s(x) with s = sigmoid(2u), u = k (x + a x^3):
 * s + 2 k x s (1 - s) (1 + 3 a x^2). */
static double gelu_grad_ref(float xf)
{
    const double x = xf;
    if (isinf(xf)) {
        return xf > 0.0f ? 1.0 : 0.0;
    }
    const double u = GELU_K * (x + GELU_A * x * x * x);
    const double e = exp(-2.0 * fabs(u));
    const double r = 1.0 / (1.0 + e);
    const double s = u >= 0.0 ? r : e * r;
    const double s1 = u >= 0.0 ? e * r : r; /* 1 - s without cancellation */
    return s + 2.0 * GELU_K * x * s * s1 * (1.0 + 3.0 * GELU_A * x * x);
}

void kern_gelu_backward_f32_c(float *gi, const float *go, const float *x,
                              size_t n)
{
    for (size_t i = 0; i < n; i++) {
        gi[i] = (float)((double)go[i] * gelu_grad_ref(x[i]));
    }
}

/* d/dx x Phi(x) = Phi(x) + x phi(x). */
static double gelu_erf_grad_ref(float xf)
{
    const double x = xf;
    if (isinf(xf)) {
        return xf > 0.0f ? 1.0 : 0.0;
    }
    return 0.5 * erfc(-x * INV_SQRT2) + x * exp(-0.5 * x * x) * INV_SQRT_2PI;
}

void kern_gelu_erf_backward_f32_c(float *gi, const float *go, const float *x,
                                  size_t n)
{
    for (size_t i = 0; i < n; i++) {
        gi[i] = (float)((double)go[i] * gelu_erf_grad_ref(x[i]));
    }
}

void kern_act_dsp_init(struct kern_act_dsp *dsp, unsigned flags)
{
    dsp->tanh_f32 = kern_tanh_f32_c;
    dsp->erf_f32 = kern_erf_f32_c;
    dsp->sigmoid_f32 = kern_sigmoid_f32_c;
    dsp->relu_f32 = kern_relu_f32_c;
    dsp->gelu_f32 = kern_gelu_f32_c;
    dsp->gelu_erf_f32 = kern_gelu_erf_f32_c;
    dsp->tanh_backward_f32 = kern_tanh_backward_f32_c;
    dsp->sigmoid_backward_f32 = kern_sigmoid_backward_f32_c;
    dsp->relu_backward_f32 = kern_relu_backward_f32_c;
    dsp->gelu_backward_f32 = kern_gelu_backward_f32_c;
    dsp->gelu_erf_backward_f32 = kern_gelu_erf_backward_f32_c;
#if KERN_SIMD && KERN_HAVE_X86
    if (!(flags & KERN_CPU_AVX2)) {
        return;
    }
    dsp->tanh_f32 = kern_tanh_f32_avx2;
    dsp->erf_f32 = kern_erf_f32_avx2;
    dsp->sigmoid_f32 = kern_sigmoid_f32_avx2;
    dsp->relu_f32 = kern_relu_f32_avx2;
    dsp->gelu_f32 = kern_gelu_f32_avx2;
    dsp->gelu_erf_f32 = kern_gelu_erf_f32_avx2;
    dsp->tanh_backward_f32 = kern_tanh_backward_f32_avx2;
    dsp->sigmoid_backward_f32 = kern_sigmoid_backward_f32_avx2;
    dsp->relu_backward_f32 = kern_relu_backward_f32_avx2;
    dsp->gelu_backward_f32 = kern_gelu_backward_f32_avx2;
    dsp->gelu_erf_backward_f32 = kern_gelu_erf_backward_f32_avx2;
    if (!(flags & KERN_CPU_AVX512)) {
        return;
    }
    dsp->tanh_f32 = kern_tanh_f32_avx512;
    dsp->erf_f32 = kern_erf_f32_avx512;
    dsp->sigmoid_f32 = kern_sigmoid_f32_avx512;
    dsp->relu_f32 = kern_relu_f32_avx512;
    dsp->gelu_f32 = kern_gelu_f32_avx512;
    dsp->gelu_erf_f32 = kern_gelu_erf_f32_avx512;
    dsp->tanh_backward_f32 = kern_tanh_backward_f32_avx512;
    dsp->sigmoid_backward_f32 = kern_sigmoid_backward_f32_avx512;
    dsp->relu_backward_f32 = kern_relu_backward_f32_avx512;
    dsp->gelu_backward_f32 = kern_gelu_backward_f32_avx512;
    dsp->gelu_erf_backward_f32 = kern_gelu_erf_backward_f32_avx512;
#else
    (void)flags;
#endif
}

/* ---- Public wrappers ---------------------------------------------------- */

static struct kern_act_dsp act_dsp;
static pthread_once_t act_once = PTHREAD_ONCE_INIT;

static void act_init(void)
{
    kern_act_dsp_init(&act_dsp, kern_cpu_flags());
}

static const struct kern_act_dsp *table(void)
{
    pthread_once(&act_once, act_init);
    return &act_dsp;
}

static int check1(const float *a, const float *b, size_t n)
{
    if (n == 0) {
        return KERN_OK;
    }
    if (n > SIZE_MAX / sizeof(float)) {
        return KERN_E_OVERFLOW;
    }
    if (!a || !b) {
        return KERN_E_INVALID;
    }
    return KERN_OK;
}

static int check2(const float *a, const float *b, const float *c, size_t n)
{
    int st = check1(a, b, n);
    if (st == KERN_OK && n > 0 && !c) {
        st = KERN_E_INVALID;
    }
    return st;
}

#define ACT_WRAPPER(name)                                                    \
    KERN_API int kern_##name(float *dst, const float *src, size_t n)         \
    {                                                                        \
        const int st = check1(dst, src, n);                                  \
        if (st != KERN_OK || n == 0) {                                       \
            return st;                                                       \
        }                                                                    \
        table()->name(dst, src, n);                                          \
        return KERN_OK;                                                      \
    }

#define ACT_BWD_WRAPPER(name)                                                \
    KERN_API int kern_##name(float *grad_in, const float *grad_out,          \
                             const float *v, size_t n)                       \
    {                                                                        \
        const int st = check2(grad_in, grad_out, v, n);                      \
        if (st != KERN_OK || n == 0) {                                       \
            return st;                                                       \
        }                                                                    \
        table()->name(grad_in, grad_out, v, n);                              \
        return KERN_OK;                                                      \
    }

ACT_WRAPPER(tanh_f32)
ACT_WRAPPER(erf_f32)
ACT_WRAPPER(sigmoid_f32)
ACT_WRAPPER(relu_f32)
ACT_WRAPPER(gelu_f32)
ACT_WRAPPER(gelu_erf_f32)
ACT_BWD_WRAPPER(tanh_backward_f32)
ACT_BWD_WRAPPER(sigmoid_backward_f32)
ACT_BWD_WRAPPER(relu_backward_f32)
ACT_BWD_WRAPPER(gelu_backward_f32)
ACT_BWD_WRAPPER(gelu_erf_backward_f32)

/* TinyTorch's deliberately unfused GELU: every numpy temporary becomes one
 * full pass over memory (read, write), in TinyTorch's order. The passes run
 * in place in one scratch array, which keeps the traffic of TinyTorch's
 * version (one read and one write of n floats per step) without needing
 * seven buffers. The loops are plain C that the compiler vectorises, like
 * numpy's ufunc loops; tanh uses the dispatched kernel. */
KERN_API int kern_gelu_unfused_f32(float *dst, const float *src, size_t n,
                                   float *scratch)
{
    const int st = check2(dst, src, scratch, n);
    if (st != KERN_OK || n == 0) {
        return st;
    }
    if (scratch == src || scratch == dst) {
        return KERN_E_INVALID;
    }
    const float k = (float)GELU_K;
    const float a = (float)GELU_A;
    float *t = scratch;
    for (size_t i = 0; i < n; i++) { /* temp1 = x**3 */
        t[i] = src[i] * src[i] * src[i];
    }
    for (size_t i = 0; i < n; i++) { /* temp2 = 0.044715 * temp1 */
        t[i] = a * t[i];
    }
    for (size_t i = 0; i < n; i++) { /* temp3 = x + temp2 */
        t[i] = src[i] + t[i];
    }
    for (size_t i = 0; i < n; i++) { /* temp4 = sqrt(2/pi) * temp3 */
        t[i] = k * t[i];
    }
    table()->tanh_f32(t, t, n); /* temp5 = tanh(temp4) */
    for (size_t i = 0; i < n; i++) { /* temp6 = 1 + temp5 */
        t[i] = 1.0f + t[i];
    }
    for (size_t i = 0; i < n; i++) { /* temp7 = x * temp6 */
        dst[i] = src[i] * t[i];
    }
    for (size_t i = 0; i < n; i++) { /* result = 0.5 * temp7 */
        dst[i] = 0.5f * dst[i];
    }
    return KERN_OK;
}
