/* float <-> fp16/bf16: C references (integer bit manipulation only, so the
 * result does not depend on the FPU rounding mode) and public wrappers. */
#include <stdint.h>

#include "cvt.h"

void kern_f32_to_f16_c(uint16_t *dst, const float *src, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        dst[i] = kern_f32_to_f16_1(src[i]);
    }
}

void kern_f16_to_f32_c(float *dst, const uint16_t *src, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        dst[i] = kern_f16_to_f32_1(src[i]);
    }
}

void kern_f32_to_bf16_c(uint16_t *dst, const float *src, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        dst[i] = kern_f32_to_bf16_1(src[i]);
    }
}

void kern_bf16_to_f32_c(float *dst, const uint16_t *src, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        dst[i] = kern_bf16_to_f32_1(src[i]);
    }
}

void kern_cvt_dsp_init(struct kern_cvt_dsp *dsp, unsigned flags)
{
    dsp->f32_to_f16 = kern_f32_to_f16_c;
    dsp->f16_to_f32 = kern_f16_to_f32_c;
    dsp->f32_to_bf16 = kern_f32_to_bf16_c;
    dsp->bf16_to_f32 = kern_bf16_to_f32_c;
#if KERN_SIMD && KERN_HAVE_X86
    kern_cvt_dsp_init_x86(dsp, flags);
#elif KERN_SIMD && KERN_HAVE_NEON
    kern_cvt_dsp_init_arm(dsp, flags);
#else
    (void)flags;
#endif
}

static struct kern_cvt_dsp cvt_dsp;
static pthread_once_t cvt_once = PTHREAD_ONCE_INIT;

static void cvt_init(void)
{
    kern_cvt_dsp_init(&cvt_dsp, kern_cpu_flags());
}

static int check(const void *dst, const void *src, size_t n)
{
    if (n == 0) {
        return KERN_OK;
    }
    if (n > SIZE_MAX / sizeof(float)) {
        return KERN_E_OVERFLOW;
    }
    if (!dst || !src) {
        return KERN_E_INVALID;
    }
    pthread_once(&cvt_once, cvt_init);
    return KERN_OK;
}

KERN_API int kern_f32_to_f16(uint16_t *dst, const float *src, size_t n)
{
    const int st = check(dst, src, n);
    if (st == KERN_OK && n > 0) {
        cvt_dsp.f32_to_f16(dst, src, n);
    }
    return st;
}

KERN_API int kern_f16_to_f32(float *dst, const uint16_t *src, size_t n)
{
    const int st = check(dst, src, n);
    if (st == KERN_OK && n > 0) {
        cvt_dsp.f16_to_f32(dst, src, n);
    }
    return st;
}

KERN_API int kern_f32_to_bf16(uint16_t *dst, const float *src, size_t n)
{
    const int st = check(dst, src, n);
    if (st == KERN_OK && n > 0) {
        cvt_dsp.f32_to_bf16(dst, src, n);
    }
    return st;
}

KERN_API int kern_bf16_to_f32(float *dst, const uint16_t *src, size_t n)
{
    const int st = check(dst, src, n);
    if (st == KERN_OK && n > 0) {
        cvt_dsp.bf16_to_f32(dst, src, n);
    }
    return st;
}
