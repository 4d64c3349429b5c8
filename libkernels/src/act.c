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
#include <string.h>

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

/* x sigmoid(x) = x / (1 + exp(-x)) in double, rounded once: within
 * 1 ulp of the exact value. The limit at -inf is -0 (x e^x -> 0), which
 * -inf / inf would make NaN. */
static float silu_ref(float x)
{
    if (x == -INFINITY) {
        return -0.0f;
    }
    return (float)((double)x / (1.0 + exp(-(double)x)));
}

void kern_silu_f32_c(float *dst, const float *src, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        dst[i] = silu_ref(src[i]);
    }
}

/* max(x, 0) + log1p(exp(-|x|)) in double: exp never overflows, and for
 * x < 0 the result is log1p of a small number, which keeps its relative
 * accuracy where log(1 + exp(x)) would round 1 + exp(x) to 1. fmax would
 * drop a NaN, hence the test. */
static float softplus_ref(float x)
{
    if (isnan(x)) {
        return x;
    }
    const double xd = x;
    return (float)(fmax(xd, 0.0) + log1p(exp(-fabs(xd))));
}

void kern_softplus_f32_c(float *dst, const float *src, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        dst[i] = softplus_ref(src[i]);
    }
}

/* The exact activations below are written as the SIMD paths compute them,
 * one float operation per statement (so that no compiler contracts a
 * multiply and an add into a fused one) and with comparisons whose
 * outcome on NaN and on -0 the min/max instructions reproduce: every path
 * gives these bits. */

/* c ? a : b through the bits: both operands are computed and the loop is
 * a blend that the compiler vectorises; written with ?: on floats, the
 * compiler keeps a branch around the product (it may not evaluate a float
 * operation the source does not), which mispredicts on random signs and
 * makes the loop some 40 times slower. */
static inline float select_bits(int c, float a, float b)
{
    uint32_t ua, ub;
    memcpy(&ua, &a, sizeof ua);
    memcpy(&ub, &b, sizeof ub);
    const uint32_t m = 0u - (uint32_t)(c != 0);
    const uint32_t r = (ua & m) | (ub & ~m);
    float f;
    memcpy(&f, &r, sizeof f);
    return f;
}

/* a x + b (two roundings) clamped to [0, 1]; NaN passes through, -0 stays
 * -0. */
static inline float hard_sigmoid1(float x, float a, float b)
{
    const float ax = x * a;
    float t = ax + b;
    t = t > 1.0f ? 1.0f : t;
    return t < 0.0f ? 0.0f : t;
}

void kern_hard_sigmoid_f32_c(float *dst, const float *src, size_t n,
                             float a, float b)
{
    for (size_t i = 0; i < n; i++) {
        dst[i] = hard_sigmoid1(src[i], a, b);
    }
}

void kern_hard_swish_f32_c(float *dst, const float *src, size_t n)
{
    /* In blocks through a buffer: in one loop, the compiler turns x * 1
     * and x * 0 into branches that mispredict on random inputs (50 times
     * slower) instead of vectorising. */
    float h[256];
    for (size_t i0 = 0; i0 < n; i0 += 256) {
        const size_t m = n - i0 < 256 ? n - i0 : 256;
        kern_hard_sigmoid_f32_c(h, src + i0, m, KERN_HARD_SWISH_ALPHA,
                                KERN_HARD_SWISH_BETA);
        for (size_t i = 0; i < m; i++) {
            dst[i0 + i] = src[i0 + i] * h[i];
        }
    }
}

void kern_leaky_relu_f32_c(float *dst, const float *src, size_t n, float a,
                           float b)
{
    (void)b;
    for (size_t i = 0; i < n; i++) {
        const float x = src[i];
        dst[i] = select_bits(x < 0.0f, x * a, x);
    }
}

/* x for x > 0, else alpha expm1(x) in double rounded once (expm1, not
 * exp - 1, keeps the relative accuracy near 0). */
void kern_elu_f32_c(float *dst, const float *src, size_t n, float a, float b)
{
    (void)b;
    for (size_t i = 0; i < n; i++) {
        const float x = src[i];
        dst[i] = x > 0.0f ? x : (float)((double)a * expm1((double)x));
    }
}

void kern_clip_f32_c(float *dst, const float *src, size_t n, float lo,
                     float hi)
{
    for (size_t i = 0; i < n; i++) {
        const float x = src[i];
        const float t = x < lo ? lo : x;
        dst[i] = t > hi ? hi : t;
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
    dsp->silu_f32 = kern_silu_f32_c;
    dsp->hard_swish_f32 = kern_hard_swish_f32_c;
    dsp->softplus_f32 = kern_softplus_f32_c;
    dsp->hard_sigmoid_f32 = kern_hard_sigmoid_f32_c;
    dsp->leaky_relu_f32 = kern_leaky_relu_f32_c;
    dsp->elu_f32 = kern_elu_f32_c;
    dsp->clip_f32 = kern_clip_f32_c;
#if KERN_SIMD && KERN_HAVE_X86
    kern_act_dsp_init_x86(dsp, flags);
#elif KERN_SIMD && KERN_HAVE_NEON
    kern_act_dsp_init_arm(dsp, flags);
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

ACT_WRAPPER(silu_f32)
ACT_WRAPPER(hard_swish_f32)
ACT_WRAPPER(softplus_f32)

KERN_API int kern_hard_sigmoid_f32(float *dst, const float *src, size_t n,
                                   float alpha, float beta)
{
    const int st = check1(dst, src, n);
    if (st != KERN_OK) {
        return st;
    }
    if (!isfinite(alpha) || !isfinite(beta)) {
        return KERN_E_RANGE;
    }
    if (n > 0) {
        table()->hard_sigmoid_f32(dst, src, n, alpha, beta);
    }
    return KERN_OK;
}

KERN_API int kern_leaky_relu_f32(float *dst, const float *src, size_t n,
                                 float alpha)
{
    const int st = check1(dst, src, n);
    if (st != KERN_OK) {
        return st;
    }
    if (!isfinite(alpha)) {
        return KERN_E_RANGE;
    }
    if (n > 0) {
        table()->leaky_relu_f32(dst, src, n, alpha, 0.0f);
    }
    return KERN_OK;
}

KERN_API int kern_elu_f32(float *dst, const float *src, size_t n,
                          float alpha)
{
    const int st = check1(dst, src, n);
    if (st != KERN_OK) {
        return st;
    }
    if (!isfinite(alpha)) {
        return KERN_E_RANGE;
    }
    if (n > 0) {
        table()->elu_f32(dst, src, n, alpha, 0.0f);
    }
    return KERN_OK;
}

KERN_API int kern_clip_f32(float *dst, const float *src, size_t n, float lo,
                           float hi)
{
    const int st = check1(dst, src, n);
    if (st != KERN_OK) {
        return st;
    }
    if (isnan(lo) || isnan(hi)) {
        return KERN_E_RANGE;
    }
    if (n > 0) {
        table()->clip_f32(dst, src, n, lo, hi);
    }
    return KERN_OK;
}

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
