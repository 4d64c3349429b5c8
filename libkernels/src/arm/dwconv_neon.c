/* NEON depthwise convolution: 4 lanes; see dwconv_tmpl.h (the x86 paths'
 * body, which names no instruction set). Each tap is a multiply and an
 * add, not a fused fmla: the template adds the taps in the C reference's
 * order, so the results are the C reference's bits, and so are those of
 * the NCHW8c entry (C on ARM), which must agree with this one bit for
 * bit. On 32-bit ARM, whose NEON flushes subnormals whatever FPSCR says,
 * that holds unless a product or partial sum is subnormal (below 2^-126),
 * where this path writes zero. */
#include <arm_neon.h>
#include <math.h>
#include <string.h>

#include "dwconv.h"
#include "neon_compat.h"

#define VL 4
#define V float32x4_t
#define V_ZERO vdupq_n_f32(0.0f)
#define V_SET1 vdupq_n_f32
#define V_LOADU vld1q_f32
#define V_STOREU vst1q_f32
#define V_FMA(a, b, c) vaddq_f32(vmulq_f32((a), (b)), (c))
/* the same for the template's scalar loop (fma_planes), so that every
 * output of this path is rounded alike (the NCHW8c path relies on it) */
#define DW_SCALAR_FMA(a, b, c) ((a) * (b) + (c))
/* maxps/minps's rule, which the template's max(0, v) relies on: the
 * second operand unless the first is strictly greater (smaller), so a NaN
 * v survives and the zeros' signs come out as on x86. */
#define V_MAX(a, b) vbslq_f32(vcgtq_f32((a), (b)), (a), (b))
#define V_MIN(a, b) vbslq_f32(vcltq_f32((a), (b)), (a), (b))
#define V_LOAD_EVEN(p) (vld2q_f32(p).val[0])
#define V_LOAD_PART(s, n) load_part((s), (n))
#define V_COPY_PART(d, s, n) memcpy((d), (s), (n) * sizeof(float))
#define DW_FN kern_dwconv2d_neon

/* s[0..n) then zeros, n < 4, reading no more. */
static inline float32x4_t load_part(const float *s, size_t n)
{
    float t[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    memcpy(t, s, n * sizeof *t);
    return vld1q_f32(t);
}

#define V_TRANSPOSE kn_transpose4_f32

#include "../x86/dwconv_tmpl.h"
