/* NEON float32 matrix product: 8x12 packed micro-tiles multiplied by lane
 * (two loads of A and three of B feed 24 fmla), direct tiles up to 6x16
 * for small products, tails through a small buffer. The paths are the x86
 * template's, instantiated over 128-bit vectors; fmla is fused, so like
 * the x86 FMA paths they agree with the C reference to the rounding bound
 * checkkern states, not to the bit. */
#include <arm_neon.h>
#include <string.h>

#include "neon_compat.h"

#define V float32x4_t
#define VL 4
/* The lanes in use, 1..4: NEON has no masked access, so the tails go
 * through a buffer and never touch memory past the last lane. */
#define MASK int

static inline int mask_n(int r)
{
    return r;
}

static inline float32x4_t load_m(const float *p, int r)
{
    float t[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    memcpy(t, p, (size_t)r * sizeof *t);
    return vld1q_f32(t);
}

static inline void store_m(float *p, int r, float32x4_t x)
{
    float t[4];
    vst1q_f32(t, x);
    memcpy(p, t, (size_t)r * sizeof *t);
}

/* The lane must be an immediate; the switch folds away once the tile's
 * loops are unrolled (and still compiles when they are not). */
static inline __attribute__((always_inline)) float32x4_t
fma_lane(float32x4_t acc, float32x4_t b, float32x4_t a, int l)
{
    switch (l & 3) {
    case 0:
        return kn_fmaq_laneq_f32(acc, b, a, 0);
    case 1:
        return kn_fmaq_laneq_f32(acc, b, a, 1);
    case 2:
        return kn_fmaq_laneq_f32(acc, b, a, 2);
    case 3:
        return kn_fmaq_laneq_f32(acc, b, a, 3);
    }
    return acc;
}

#define v_zero() vdupq_n_f32(0.0f)
#define v_load(p) vld1q_f32(p)
#define v_store(p, x) vst1q_f32((p), (x))
#define v_fma(a, b, acc) vfmaq_f32((acc), (a), (b))
#define v_fma_lane(acc, b, a, l) fma_lane((acc), (b), (a), (l))
#define v_bcast(p) vld1q_dup_f32(p)
#define v_load_m(p, mk) load_m((p), (mk))
#define v_store_m(p, mk, x) store_m((p), (mk), (x))
#define v_add(a, b) vaddq_f32((a), (b))
#define v_hsum(x) kn_addvq_f32(x)
#define FN(name) name##_neon
#define MM_PREFETCH(p) __builtin_prefetch((const void *)(p), 0, 3)

/* dst (8 x 8 of rows ldd) = the transpose of src (8 x 8 of rows lds), as
 * four 4 x 4 blocks through registers. */
#define MM_HAVE_TRANSPOSE_8X8
static inline __attribute__((always_inline)) void
transpose_8x8(float *dst, size_t ldd, const float *src, size_t lds)
{
    for (int bi = 0; bi < 8; bi += 4) {
        for (int bj = 0; bj < 8; bj += 4) {
            const float *s = src + (size_t)bi * lds + (size_t)bj;
            const float32x4_t r0 = vld1q_f32(s), r1 = vld1q_f32(s + lds);
            const float32x4_t r2 = vld1q_f32(s + 2 * lds);
            const float32x4_t r3 = vld1q_f32(s + 3 * lds);
            const float32x4_t t0 = kn_trn1q_f32(r0, r1);
            const float32x4_t t1 = kn_trn2q_f32(r0, r1);
            const float32x4_t t2 = kn_trn1q_f32(r2, r3);
            const float32x4_t t3 = kn_trn2q_f32(r2, r3);
            float *d = dst + (size_t)bj * ldd + (size_t)bi;
            vst1q_f32(d, kn_combine_lo_f32(t0, t2));
            vst1q_f32(d + ldd, kn_combine_lo_f32(t1, t3));
            vst1q_f32(d + 2 * ldd, kn_combine_hi_f32(t0, t2));
            vst1q_f32(d + 3 * ldd, kn_combine_hi_f32(t1, t3));
        }
    }
}

/* 24 of the 32 registers hold the packed tile, 8 rows of 3 vectors; an
 * 8 x 256 sliver of A (8 KiB) stays in a 32 KiB L1 (Cortex-A53/A57/A72)
 * while 256 x 12 slivers of a 256 x 384 panel of B (384 KiB) stream from
 * an L2 of 512 KiB or more. Not tuned on a board. */
#define PMR 8
#define PNV 3
#define PKC 256
#define PMC 128
#define PNC 384
#define PACK_A_ROWS 1024
/* Direct tiles: at most 24 accumulators. */
#define DNV 4
#define DMR_MAX 12
#define DMR(nv) ((nv) <= 2 ? 12 : (nv) == 3 ? 8 : 6)
#define DKC 256
#define GJV 8
#define GPF 4
#define GB 64
#define PATH_DIRECT_MACS (128.0 * 128.0 * 128.0)
#define PATH_DIRECT_N 64
#define PATH_DIRECT_M 96

#include "../x86/matmul_tmpl.h"
