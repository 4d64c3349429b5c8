/* The kp layout's GEMM (kern_q8s_gemm_kp_fn) with AVX-512 VNNI: output
 * channels by pixels, so a convolution reads its input planes and writes
 * its output planes with no transpose and no int32 tile in memory.
 *
 * vpdpbusd multiplies unsigned by signed bytes: the activations are the
 * unsigned operand, x + 128 (x xor 0x80), the weights the signed one, so
 *   sum_k (x + 128) w = sum_k x w + 128 rowsum(w)
 * and each accumulator starts at add[j] - 128 rowsum(w) (the sums stored
 * after the packed rows), exact in int32 arithmetic modulo 2^32 as the
 * reference's sum is.
 *
 * Per block of 64 pixels the K rows are interleaved once, four rows at a
 * time, into the work area: two rounds of unpacks within each 128-bit lane
 * give four vectors whose dword i of lane L holds the four rows' bytes of
 * pixel 16 L + 4 v + i (vector v). Every group of 4 output channels then
 * runs over that block from L1: 16 accumulators, 4 broadcasts of a weight
 * quad and 16 vpdpbusd per 4 rows. The output stage is TFLite's (the
 * reference's q8s_mbqm, the high multiply in 64-bit lanes, in its
 * bounded form when add[j] and k bound the sums: q8s_stage512_bound) or,
 * scale not
 * NULL, ONNX Runtime's float one (q8s_stage_avx512.h), and the packs
 * that narrow the four vectors to bytes undo the interleave's order: lane L
 * of the result holds pixels 16 L .. 16 L + 15 in order. A block of 48
 * pixels or fewer (a plane of 36, the tail of one of 144) is one to three
 * vectors of 16 consecutive pixels instead, and 16, 8 or 5 channels a
 * step (channels_short): the four-vector block took 1.14x its time on
 * n 128, p 36, k 128 and 2.4x on n 256, p 9, k 256 (checkkern --bench,
 * three runs each). */
#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include "q8s.h"
#include "q8s_stage_avx512.h"

/* rows [t, t + 4) of a 64-pixel block (n valid pixels, the rest and rows
 * at or past k read as 0) into four vectors of pixel quads; row t starts
 * at x + t * ldx, or at x + roff[t] when roff is not NULL */
static inline __attribute__((always_inline)) void
interleave4(const int8_t *x, size_t ldx, const size_t *roff, size_t t,
            size_t k, __mmask64 m, __m512i *out)
{
    const __m512i flip = _mm512_set1_epi8((char)0x80);
    __m512i r[4];
    for (int i = 0; i < 4; i++) {
        const size_t ti = t + (size_t)i;
        r[i] = ti < k ? _mm512_xor_si512(
                            _mm512_maskz_loadu_epi8(
                                m, x + (roff ? roff[ti] : ti * ldx)),
                            flip)
                      : _mm512_setzero_si512();
    }
    const __m512i a = _mm512_unpacklo_epi8(r[0], r[1]);
    const __m512i b = _mm512_unpackhi_epi8(r[0], r[1]);
    const __m512i c = _mm512_unpacklo_epi8(r[2], r[3]);
    const __m512i d = _mm512_unpackhi_epi8(r[2], r[3]);
    out[0] = _mm512_unpacklo_epi16(a, c);
    out[1] = _mm512_unpackhi_epi16(a, c);
    out[2] = _mm512_unpacklo_epi16(b, d);
    out[3] = _mm512_unpackhi_epi16(b, d);
}

/* A run of a block's pixels that are outputs: lanes [lane, lane + len)
 * of the 64 go to the plane's index dst onward (mask: those lanes). */
struct seg {
    size_t lane, dst;
    __mmask64 mask;
};

/* The runs of block [i0, i0 + np) of virtual pixels v = r * vw + c, the
 * columns c < ow being outputs r * ow + c; at most 64. */
static size_t block_segs(size_t i0, size_t np, size_t vw, size_t ow,
                         struct seg *sg)
{
    size_t ns = 0, v = i0;
    const size_t e = i0 + np;
    while (v < e) {
        const size_t r = v / vw, c = v % vw;
        if (c >= ow) {
            v += vw - c;
            continue;
        }
        const size_t len = ow - c < e - v ? ow - c : e - v;
        const size_t lane = v - i0;
        const __mmask64 lm =
            len == 64 ? ~(__mmask64)0 : (((__mmask64)1 << len) - 1);
        sg[ns].lane = lane;
        sg[ns].dst = r * ow + c;
        sg[ns].mask = lm << lane;
        ns++;
        v += len;
    }
    return ns;
}

static inline int32_t quad(const int8_t *p)
{
    int32_t v;
    memcpy(&v, p, 4);
    return v;
}

/* Channel c's output stage: the float one, or the fixed one, bounded
 * where add[c] and k bound the sums. */
static inline __attribute__((always_inline)) struct q8s_stage512
stage_of(const int32_t *add, size_t k, const int32_t *mult,
         const int32_t *lsh, const int32_t *rsh, const float *scale, size_t c,
         int32_t zp, int32_t qmin, int32_t qmax)
{
    struct q8s_stage512 s =
        scale ? q8s_stage512f_of(scale[c], zp, qmin, qmax)
              : q8s_stage512_of(mult[c], lsh[c], rsh[c], zp, qmin, qmax);
    if (!scale) {
        /* an output's sum is add[c] plus k products of int8 values, each
         * at most 2^14 in magnitude */
        const int64_t ad = add[c];
        q8s_stage512_bound(&s, mult[c], lsh[c],
                           (ad < 0 ? -ad : ad) + (int64_t)k * 16384);
    }
    return s;
}

/* A block's 64 result bytes, lane i for the block's pixel i, stored
 * (masked) run by run into the plane y: a run's lanes [lane, ..) land at
 * y + dst, the store addressed lane bytes before it with the lanes
 * outside the run masked off (masked lanes are neither read nor
 * written). */
static inline __attribute__((always_inline)) void
store_segs(__m512i q, const struct seg *sg, size_t ns, int8_t *y)
{
    for (size_t i = 0; i < ns; i++) {
        _mm512_mask_storeu_epi8(
            (void *)((uintptr_t)(y + sg[i].dst) - sg[i].lane), sg[i].mask,
            q);
    }
}

/* One channel's four accumulators to bytes, stored into the plane y. */
static inline __attribute__((always_inline)) void
finish(const int32_t *add, size_t k, const int32_t *mult, const int32_t *lsh,
       const int32_t *rsh, const float *scale, size_t c, int32_t zp,
       int32_t qmin, int32_t qmax, __m512i a, __m512i b, __m512i cc,
       __m512i d, const struct seg *sg, size_t ns, int8_t *y)
{
    const struct q8s_stage512 s =
        stage_of(add, k, mult, lsh, rsh, scale, c, zp, qmin, qmax);
    store_segs(q8s_stage512_64(&s, a, b, cc, d), sg, ns, y);
}

/* Named accumulators, so that GCC keeps all 16 in registers (an array of
 * them is copied on every step). */
#define ACC_INIT(r)                                                         \
    const int32_t c0_##r = (int32_t)((uint32_t)add[j##r] -                  \
                                     ((uint32_t)wsum[j##r] << 7));          \
    __m512i a##r##0 = _mm512_set1_epi32(c0_##r), a##r##1 = a##r##0,          \
            a##r##2 = a##r##0, a##r##3 = a##r##0;                           \
    /* four distinct values: GCC otherwise copies the accumulators       \
     * around the loop (30 register moves per 16 vpdpbusd) */             \
    __asm__("" : "+v"(a##r##0), "+v"(a##r##1), "+v"(a##r##2),               \
            "+v"(a##r##3));                                                 \
    const int8_t *w##r = wk + j##r * 4 * k4;
#define ACC_STEP(r)                                                         \
    {                                                                       \
        const __m512i wb = _mm512_set1_epi32(quad(w##r + 4 * q));           \
        a##r##0 = _mm512_dpbusd_epi32(a##r##0, x0, wb);                     \
        a##r##1 = _mm512_dpbusd_epi32(a##r##1, x1, wb);                     \
        a##r##2 = _mm512_dpbusd_epi32(a##r##2, x2, wb);                     \
        a##r##3 = _mm512_dpbusd_epi32(a##r##3, x3, wb);                     \
    }

/* Channels j .. j + 3 over the interleaved block xi (k4 groups); rows past
 * n - 1 repeat the last channel and only the first nr are stored. */
static void channels4(size_t j, size_t nr, size_t n, size_t k, size_t k4,
                      const int8_t *wk, const int32_t *wsum,
                      const int32_t *add, const int32_t *mult,
                      const int32_t *lsh, const int32_t *rsh,
                      const float *scale, int32_t zp, int32_t qmin,
                      int32_t qmax, const __m512i *xi,
                      const struct seg *sg, size_t ns, int8_t *y, size_t ldy)
{
    const size_t j0 = j, j1 = j + 1 < n ? j + 1 : n - 1,
                 j2 = j + 2 < n ? j + 2 : n - 1,
                 j3 = j + 3 < n ? j + 3 : n - 1;
    ACC_INIT(0)
    ACC_INIT(1)
    ACC_INIT(2)
    ACC_INIT(3)
    for (size_t q = 0; q < k4; q++) {
        const __m512i x0 = _mm512_load_si512(xi + 4 * q);
        const __m512i x1 = _mm512_load_si512(xi + 4 * q + 1);
        const __m512i x2 = _mm512_load_si512(xi + 4 * q + 2);
        const __m512i x3 = _mm512_load_si512(xi + 4 * q + 3);
        ACC_STEP(0)
        ACC_STEP(1)
        ACC_STEP(2)
        ACC_STEP(3)
    }
    __asm__("" : "+v"(a00), "+v"(a01), "+v"(a02), "+v"(a03));
    finish(add, k, mult, lsh, rsh, scale, j0, zp, qmin, qmax, a00, a01,
           a02, a03, sg, ns, y + j0 * ldy);
    if (nr > 1) {
        finish(add, k, mult, lsh, rsh, scale, j1, zp, qmin, qmax, a10, a11,
               a12, a13, sg, ns, y + j1 * ldy);
    }
    if (nr > 2) {
        finish(add, k, mult, lsh, rsh, scale, j2, zp, qmin, qmax, a20, a21,
               a22, a23, sg, ns, y + j2 * ldy);
    }
    if (nr > 3) {
        finish(add, k, mult, lsh, rsh, scale, j3, zp, qmin, qmax, a30, a31,
               a32, a33, sg, ns, y + j3 * ldy);
    }
}

/* A short block (np <= 48 pixels, the last of a plane of 9, 36 or 144)
 * would leave most of the 64 lanes idle: there it is nv = ceil(np / 16)
 * vectors of 16 consecutive pixels, dword i of vector v holding rows
 * [t, t + 4) of pixel 16 v + i (pixels past np, and rows at or past k,
 * read as 0). interleave4's vector w holds pixels 16 L + 4 w .. in lane
 * L, so vector v is lane v of its four vectors: a 4 x 4 transpose of
 * 128-bit lanes. */
static inline __attribute__((always_inline)) void
interleave4_short(const int8_t *x, size_t ldx, const size_t *roff, size_t t,
                  size_t k, size_t np, size_t nv, __m512i *out)
{
    __m512i q[4];
    interleave4(x, ldx, roff, t, k, ((__mmask64)1 << np) - 1, q);
    /* [q0 L0, q0 L1, q1 L0, q1 L1], [q0 L2, q0 L3, q1 L2, q1 L3], and
     * the same of q2 and q3; then lanes 0 and 2, or 1 and 3, of a pair */
    const __m512i a0 = _mm512_shuffle_i32x4(q[0], q[1], 0x44);
    const __m512i a1 = _mm512_shuffle_i32x4(q[0], q[1], 0xee);
    const __m512i b0 = _mm512_shuffle_i32x4(q[2], q[3], 0x44);
    const __m512i b1 = _mm512_shuffle_i32x4(q[2], q[3], 0xee);
    out[0] = _mm512_shuffle_i32x4(a0, b0, 0x88);
    if (nv > 1) {
        out[1] = _mm512_shuffle_i32x4(a0, b0, 0xdd);
    }
    if (nv > 2) {
        out[2] = _mm512_shuffle_i32x4(a1, b1, 0x88);
    }
}

/* NR channels from j (rows past n - 1 repeat the last, only the first nr
 * stored) over a short block of NV vectors (interleave4_short, NV
 * vectors a group of 4 rows): NR x NV <= 16 accumulators. The results
 * in pixel order: one vector by vpmovdb; two or three by q8s_stage512_64,
 * whose dword 4 L + v holds dword L of vector v (pixels 16 v + 4 L ..),
 * then one dword permute that puts it at dword 4 v + L. */
static inline __attribute__((always_inline)) void
channels_short(size_t j, size_t nr, size_t n, size_t k, size_t k4,
               const int8_t *wk, const int32_t *wsum, const int32_t *add,
               const int32_t *mult, const int32_t *lsh, const int32_t *rsh,
               const float *scale, int32_t zp, int32_t qmin, int32_t qmax,
               const __m512i *xi, const struct seg *sg, size_t ns, int8_t *y,
               size_t ldy, const size_t NR, const size_t NV)
{
    __m512i acc[16];
    const int8_t *wr[16];
#pragma GCC unroll 16
    for (size_t r = 0; r < NR; r++) {
        const size_t jr = j + r < n ? j + r : n - 1;
        const int32_t c0 =
            (int32_t)((uint32_t)add[jr] - ((uint32_t)wsum[jr] << 7));
#pragma GCC unroll 4
        for (size_t v = 0; v < NV; v++) {
            acc[r * NV + v] = _mm512_set1_epi32(c0);
        }
        wr[r] = wk + jr * 4 * k4;
    }
    /* distinct values to GCC, which otherwise copies the accumulators
     * that start equal around the loop (as in channels4) */
#pragma GCC unroll 16
    for (size_t i = 0; i < NR * NV; i++) {
        __asm__("" : "+v"(acc[i]));
    }
    for (size_t q = 0; q < k4; q++) {
        __m512i xv[4];
#pragma GCC unroll 4
        for (size_t v = 0; v < NV; v++) {
            xv[v] = _mm512_load_si512(xi + NV * q + v);
        }
#pragma GCC unroll 16
        for (size_t r = 0; r < NR; r++) {
            const __m512i wb = _mm512_set1_epi32(quad(wr[r] + 4 * q));
#pragma GCC unroll 4
            for (size_t v = 0; v < NV; v++) {
                acc[r * NV + v] =
                    _mm512_dpbusd_epi32(acc[r * NV + v], xv[v], wb);
            }
        }
    }
    const __m512i back = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6,
                                           10, 14, 3, 7, 11, 15);
    const __m512i z = _mm512_setzero_si512();
#pragma GCC unroll 16
    for (size_t r = 0; r < NR; r++) {
        if (r >= nr) {
            break;
        }
        const size_t c = j + r;
        const struct q8s_stage512 st =
            stage_of(add, k, mult, lsh, rsh, scale, c, zp, qmin, qmax);
        __m512i qv;
        if (NV == 1) {
            /* in [qmin, qmax]: vpmovdb's truncation is exact */
            qv = _mm512_zextsi128_si512(
                _mm512_cvtepi32_epi8(q8s_stage512_16(&st, acc[r])));
        } else {
            qv = _mm512_permutexvar_epi32(
                back, q8s_stage512_64(&st, acc[r * NV],
                                      acc[r * NV + 1],
                                      NV > 2 ? acc[r * NV + 2] : z, z));
        }
        store_segs(qv, sg, ns, y + c * ldy);
    }
}

/* The blocks of 64 (virtual) pixels: the K rows interleaved once per
 * block, then every group of 4 channels over them. */
static inline __attribute__((always_inline)) void
kp_run(size_t n, size_t p, size_t k, const int8_t *wk, const int32_t *add,
       const int32_t *mult, const int32_t *lsh, const int32_t *rsh,
       const float *scale, int32_t zp, int32_t qmin, int32_t qmax,
       const int8_t *x, size_t ldx, const size_t *roff, size_t vw, size_t ow,
       int8_t *y, size_t ldy, uint8_t *work)
{
    const size_t k4 = q8s_kp_k4(k);
    const int32_t *wsum = (const int32_t *)(const void *)(wk + n * 4 * k4);
    __m512i *xi =
        (__m512i *)(void *)(work + ((64 - ((uintptr_t)work & 63)) & 63));
    struct seg sg[64];
    for (size_t i0 = 0; i0 < p; i0 += 64) {
        const size_t np = p - i0 < 64 ? p - i0 : 64;
        const __mmask64 m = np == 64 ? ~(__mmask64)0
                                     : (((__mmask64)1 << np) - 1);
        size_t ns = 1;
        if (roff) {
            ns = block_segs(i0, np, vw, ow, sg);
            if (!ns) {
                continue;
            }
        } else {
            sg[0].lane = 0;
            sg[0].dst = i0;
            sg[0].mask = m;
        }
        if (np <= 48) {
            const size_t nv = (np + 15) / 16;
            for (size_t q = 0; q < k4; q++) {
                interleave4_short(x + i0, ldx, roff, 4 * q, k, np, nv,
                                  xi + nv * q);
            }
            /* 16, 8 or 5 channels a step: 16 or 15 accumulators */
            const size_t nr = nv == 1 ? 16 : nv == 2 ? 8 : 5;
            for (size_t j = 0; j < n; j += nr) {
                const size_t left = n - j < nr ? n - j : nr;
                if (nv == 1) {
                    channels_short(j, left, n, k, k4, wk, wsum, add, mult,
                                   lsh, rsh, scale, zp, qmin, qmax, xi, sg,
                                   ns, y, ldy, 16, 1);
                } else if (nv == 2) {
                    channels_short(j, left, n, k, k4, wk, wsum, add, mult,
                                   lsh, rsh, scale, zp, qmin, qmax, xi, sg,
                                   ns, y, ldy, 8, 2);
                } else {
                    channels_short(j, left, n, k, k4, wk, wsum, add, mult,
                                   lsh, rsh, scale, zp, qmin, qmax, xi, sg,
                                   ns, y, ldy, 5, 3);
                }
            }
            continue;
        }
        for (size_t q = 0; q < k4; q++) {
            interleave4(x + i0, ldx, roff, 4 * q, k, m, xi + 4 * q);
        }
        for (size_t j = 0; j < n; j += 4) {
            channels4(j, n - j < 4 ? n - j : 4, n, k, k4, wk, wsum, add, mult,
                      lsh, rsh, scale, zp, qmin, qmax, xi, sg, ns, y, ldy);
        }
    }
}

void kern_q8s_gemm_kp_vnni(size_t n, size_t p, size_t k, const int8_t *wk,
                           const int32_t *add, const int32_t *mult,
                           const int32_t *lsh, const int32_t *rsh,
                           const float *scale, int32_t zp, int32_t qmin,
                           int32_t qmax, const int8_t *x, size_t ldx,
                           int8_t *y, size_t ldy, uint8_t *work)
{
    kp_run(n, p, k, wk, add, mult, lsh, rsh, scale, zp, qmin, qmax, x, ldx,
           NULL, p, p, y, ldy, work);
}

void kern_q8s_conv_kp_vnni(size_t n, size_t p, size_t k, const int8_t *wk,
                           const int32_t *add, const int32_t *mult,
                           const int32_t *lsh, const int32_t *rsh,
                           const float *scale, int32_t zp, int32_t qmin,
                           int32_t qmax, const int8_t *x, const size_t *roff,
                           size_t vw, size_t ow, int8_t *y, size_t ldy,
                           uint8_t *work)
{
    kp_run(n, p, k, wk, add, mult, lsh, rsh, scale, zp, qmin, qmax, x, 0,
           roff, vw, ow, y, ldy, work);
}
