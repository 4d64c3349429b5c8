/*
 * libkernels: exact and fast compute kernels for small neural networks.
 *
 * Every kernel has a portable C reference; SIMD versions (x86: AVX2+FMA,
 * AVX-512, F16C, VNNI; AArch64: NEON, dot product) are chosen once at run
 * time from the CPU's features. The
 * environment variable KERN_CPU_MASK (a number, e.g. 0 or 0x3) clears
 * feature bits so any path, the C one included, can be forced.
 *
 * Buffers belong to the caller. Shapes are row-major. Unless stated
 * otherwise, kernels do not allocate and are safe to call from several
 * threads at once.
 */
#ifndef EDGEFIT_KERNELS_H
#define EDGEFIT_KERNELS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32) && defined(KERN_BUILDING)
#define KERN_API __declspec(dllexport)
#elif defined(KERN_BUILDING) && defined(__GNUC__)
#define KERN_API __attribute__((visibility("default")))
#else
#define KERN_API
#endif

/* ---- Status codes ------------------------------------------------------ */

enum kern_status {
    KERN_OK = 0,
    KERN_E_INVALID,  /* a NULL pointer or a bad flag */
    KERN_E_SHAPE,    /* dimensions that do not agree */
    KERN_E_OVERFLOW, /* a size that does not fit in size_t */
    KERN_E_NOMEM,    /* an allocation failed */
    KERN_E_RANGE,    /* a value outside its domain (e.g. a zero scale) */
};

/* Static text for a status code; "unknown status" for anything else. */
KERN_API const char *kern_strerror(int status);

/* The bytes asked for by the last allocation of this library that failed
 * on the calling thread (0 when none has failed), for the message of a
 * KERN_E_NOMEM from a function that has no diagnostic to name the size
 * in ("out of memory: <what> (<n> bytes)"). It is read, never cleared:
 * after KERN_E_NOMEM it is the allocation that failed; otherwise it may be
 * an older failure the library did without. */
KERN_API size_t kern_nomem_bytes(void);
/* When that allocation failed (CLOCK_MONOTONIC, in ns; 0 when none has):
 * of the records of several libraries, the newest is the failure being
 * reported, the others older ones that were done without. */
KERN_API unsigned long long kern_nomem_when(void);

/* ---- CPU features ------------------------------------------------------ */

enum kern_cpu_flag {
    KERN_CPU_AVX2 = 1u << 0,       /* AVX2 + FMA3 + F16C */
    KERN_CPU_AVX512 = 1u << 1,     /* AVX-512 F, BW, DQ, VL */
    KERN_CPU_AVX512VNNI = 1u << 2, /* AVX-512 VNNI (u8 x s8 dot products) */
    KERN_CPU_AVX512BF16 = 1u << 3, /* AVX-512 BF16 conversions */
    /* ARM (from the kernel's HWCAP words; every one needs NEON). */
    KERN_CPU_NEON = 1u << 4,         /* Advanced SIMD (ASIMD, NEON) */
    KERN_CPU_ARM_FP16 = 1u << 5,     /* FP16 arithmetic (asimdhp) */
    KERN_CPU_ARM_DOTPROD = 1u << 6,  /* SDOT/UDOT (asimddp) */
    KERN_CPU_ARM_I8MM = 1u << 7,     /* int8 matrix multiply (i8mm) */
    KERN_CPU_ARM_BF16 = 1u << 8,     /* BF16 conversions and dot products */
    /* x86 again: AVX-512 VBMI (byte permutes across a register; the
     * int8 depthwise kernel of narrow maps, with VNNI) */
    KERN_CPU_AVX512VBMI = 1u << 9,
};

/* The features of this CPU that the OS enables, with the bits named in
 * KERN_CPU_MASK cleared; 0 in a build without vector paths (-Dsimd=
 * disabled), which runs the C path on every CPU. Read once; later calls
 * return the cached value. */
KERN_API unsigned kern_cpu_flags(void);

/* Name of the widest path a set of flags selects: "c", "avx2", "avx512",
 * "avx512vnni", "neon", "neon-dotprod"... Static text. */
KERN_API const char *kern_cpu_path_name(unsigned flags);

/* The instruction-set paths compiled into this build, widest last:
 * "c" alone when built without SIMD (meson -Dsimd=disabled, or a host
 * with no vector paths), else on x86-64 "c avx2 avx512 avx512vnni
 * avx512bf16", on AArch64 "c neon neon-dotprod" and on 32-bit ARM "c
 * neon" (ARMv7 NEON with VFPv4). Static text; which one runs is
 * kern_cpu_path_name(kern_cpu_flags()). */
KERN_API const char *kern_built_paths(void);

/* ---- q8 ---------------------------------------------------------------- */

/* Symmetric int8 quantisation and an int8 x int8 -> int32 GEMM.
 *
 * Quantisation: q = clamp(round_half_even(x / scale), -127, 127). -128 is
 * never produced, so the range is symmetric and negation is exact. NaN
 * quantises to 0, +inf to 127 and -inf to -127. Dequantisation: x = q *
 * scale. The scale of a tensor is max|x| / 127 (float arithmetic); an
 * all-zero tensor gets scale 1.0, so it quantises to zeros and nothing is
 * ever divided by zero. A scale must be finite and > 0 (else KERN_E_RANGE).
 *
 * Per-channel quantisation treats the data as `channels` rows of
 * `per_channel` contiguous values (a dense weight [out][in] or a conv weight
 * [out_c][in_c/g][k][k]): one scale per output channel. */

/* Scale of a tensor: max|x| / 127, or 1.0 when every value is zero (also
 * when n == 0, and when max|x| / 127 underflows to 0: such a tensor then
 * quantises to zeros). KERN_E_INVALID for NULL, KERN_E_RANGE when the
 * tensor holds inf or NaN. */
KERN_API int kern_q8_scale_f32(const float *x, size_t n, float *scale);

/* Quantise n values with a given scale into dst (n int8). KERN_E_INVALID
 * for NULL, KERN_E_RANGE for a scale that is not finite and > 0. */
KERN_API int kern_q8_quantize_f32(const float *x, size_t n, float scale,
                                  int8_t *dst);

/* Per-tensor: compute the scale with kern_q8_scale_f32, store it in
 * *scale and quantise x into dst. Status as kern_q8_scale_f32. */
KERN_API int kern_q8_quantize_tensor_f32(const float *x, size_t n,
                                         int8_t *dst, float *scale);

/* Per output channel: scales[c] = scale of row c (as kern_q8_scale_f32),
 * dst row c quantised with it. x and dst hold channels * per_channel values,
 * scales holds `channels`. KERN_E_OVERFLOW if the product overflows. */
KERN_API int kern_q8_quantize_channels_f32(const float *x, size_t channels,
                                           size_t per_channel, int8_t *dst,
                                           float *scales);

/* dst[i] = q[i] * scale, one float multiply (rounded to nearest). Any
 * finite scale is accepted; else KERN_E_RANGE. KERN_E_INVALID for NULL. */
KERN_API int kern_q8_dequantize_f32(const int8_t *q, size_t n, float scale,
                                    float *dst);

/* Per channel: dst[c][j] = q[c][j] * scales[c] (scales holds `channels`
 * finite values, else KERN_E_RANGE). */
KERN_API int kern_q8_dequantize_channels_f32(const int8_t *q, size_t channels,
                                             size_t per_channel,
                                             const float *scales, float *dst);

/* Packed weights for kern_q8_gemm. The weight matrix W is N x K int8,
 * row-major with leading dimension ldw >= K: row n holds the K inputs of
 * output channel n (the [out][in] layout of a dense layer; a conv weight
 * [out_c][in_c/g][k][k] is the same with K = in_c/g*k*k). Packing copies it
 * into an opaque, ISA-independent format (columns in blocks of 16, K in
 * groups of 4, values biased by +128 for the unsigned operand of the VNNI
 * instruction) that every path reads. The packed buffer belongs to the
 * caller; it has no alignment requirement and may be copied bytewise. */

/* Bytes kern_q8_pack_weights needs for an N x K matrix; 0 when n or k is
 * 0 or the size overflows size_t. */
KERN_API size_t kern_q8_packed_bytes(size_t n, size_t k);

/* Pack W (N x K, leading dimension ldw) into `packed` of `packed_bytes`
 * bytes. Any int8 value is allowed. KERN_E_INVALID for NULL, KERN_E_SHAPE
 * for n or k == 0 or ldw < k, KERN_E_OVERFLOW when the size overflows,
 * KERN_E_NOMEM when packed_bytes is smaller than
 * kern_q8_packed_bytes(n, k). */
KERN_API int kern_q8_pack_weights(const int8_t *w, size_t n, size_t k,
                                  size_t ldw, void *packed,
                                  size_t packed_bytes);

/* C[M x N] = A[M x K] . W^T, int32, exact (no saturation anywhere): A is
 * int8 row-major (leading dimension lda >= K, any int8 values), W the
 * packed weights of kern_q8_pack_weights, C int32 row-major (ldc >= N):
 * c[i][j] = sum_k a[i][k] * w[j][k]. K <= 131071 keeps every sum inside
 * int32; larger K gives KERN_E_RANGE. The VNNI path multiplies the biased
 * weights (w + 128, unsigned) by a (signed) and starts each row's sums at
 * -128 * sum_k a[i][k]; the result equals the plain sum bit for bit.
 * KERN_E_SHAPE when n or k disagree with the packed matrix, lda < k or
 * ldc < n; KERN_E_INVALID for NULL or a buffer that is not packed weights.
 * m == 0 is a no-op. C must not overlap A or the packed weights. */
KERN_API int kern_q8_gemm(size_t m, size_t n, size_t k, const int8_t *a,
                          size_t lda, const void *packed_w, int32_t *c,
                          size_t ldc);

/* Requantisation of an int32 GEMM result (M x N, leading dimension
 * ld_acc): y[i][j] = (float)acc[i][j] * (a_scale * w_scales[j]) + bias[j],
 * then max(y, 0) when relu is nonzero. The product a_scale * w_scales[j]
 * is rounded to float first, then the multiply and the add are separate
 * float operations (no fused multiply-add), so every path gives the same
 * bits. w_scales holds N per-channel scales; bias (N values) may be NULL.
 * Output row-major with leading dimension ldo >= N. KERN_E_RANGE for a
 * scale that is not finite and > 0. */
KERN_API int kern_q8_requant_f32(size_t m, size_t n, const int32_t *acc,
                                 size_t ld_acc, float a_scale,
                                 const float *w_scales, const float *bias,
                                 int relu, float *y, size_t ldo);

/* The same values written transposed, y[j * ldy + i] (ldy >= M): a
 * convolution's [pixel][channel] GEMM result straight into its NCHW output
 * planes, which then need no transpose of their own. Element for element
 * the same bits as kern_q8_requant_f32. KERN_E_SHAPE for ld_acc < N or
 * ldy < M, else statuses as kern_q8_requant_f32. */
KERN_API int kern_q8_requant_f32_t(size_t m, size_t n, const int32_t *acc,
                                   size_t ld_acc, float a_scale,
                                   const float *w_scales, const float *bias,
                                   int relu, float *y, size_t ldy);

/* The same, then quantised to int8 with the next layer's scale out_scale
 * (kern_q8_quantize_f32 rules: y / out_scale rounded half to even,
 * saturated to [-127, 127]). */
KERN_API int kern_q8_requant_s8(size_t m, size_t n, const int32_t *acc,
                                size_t ld_acc, float a_scale,
                                const float *w_scales, const float *bias,
                                int relu, float out_scale, int8_t *q,
                                size_t ldo);

/* ---- q8 static (integer-only) ------------------------------------------- */

/* Static int8 as deployed by TFLite, ONNX Runtime's quantizer and
 * CMSIS-NN: weights int8 symmetric per output channel, activations int8
 * asymmetric per tensor (real = scale * (q - zero_point)), int32 bias in
 * the scale a_scale * w_scale[c], int32 accumulation, and requantisation
 * with no float at run time: a real multiplier M = a_scale * w_scale[c] /
 * out_scale becomes a Q31 fixed-point multiplier and a power-of-two shift
 * (kern_q8_quantize_multiplier), applied as in TFLite's
 * MultiplyByQuantizedMultiplier (gemmlowp's arithmetic):
 *
 *   x   = acc + bias[c]                     (int32, wraps modulo 2^32)
 *   x   = x * 2^max(shift, 0)               (wraps modulo 2^32, as TFLite)
 *   h   = SaturatingRoundingDoublingHighMul(x, mult)
 *       = floor((x * mult + 2^30) / 2^31)   (64-bit product; INT32_MAX
 *                                            when x = mult = INT32_MIN)
 *   r   = RoundingDivideByPOT(h, max(-shift, 0))
 *                                           (round half away from zero)
 *   q   = clamp(r + zero_point, qmin, qmax)
 *
 * relu is the clamp qmin = zero_point; relu6 also qmax = zero_point +
 * round(6 / out_scale), both inside [-128, 127]. Every path gives the
 * same bits as the C reference. */

/* Declared with the depthwise entry points below. */
struct kern_dwconv2d_shape;

/* TFLite's QuantizeMultiplier: real = mult * 2^(shift - 31) with mult in
 * [2^30, 2^31 - 1] (Q31 of frexp's fraction in [0.5, 1), rounded half
 * away from zero). When the fraction rounds up to 2^31, mult becomes
 * 2^30 and shift grows by one. real = 0 gives mult = 0, shift = 0; a real
 * below 2^-32 (shift < -31) also gives 0, 0, as TFLite does; shift is
 * capped at 30 with mult = 2^31 - 1 for reals of 2^30 and more.
 * KERN_E_INVALID for NULL, KERN_E_RANGE for a negative, inf or NaN real. */
KERN_API int kern_q8_quantize_multiplier(double real, int32_t *mult,
                                         int *shift);

/* The output stage of a static int8 layer (the formula above). mult and
 * shift hold N values (one per output channel) when per_channel is
 * nonzero, else one value for every channel; shift in [-31, 30]; bias
 * holds N int32 values or is NULL (0). zero_point in [-128, 127] and
 * -128 <= qmin <= qmax <= 127 (else KERN_E_RANGE). */
struct kern_q8_outstage {
    const int32_t *bias;
    const int32_t *mult;
    const int *shift;
    int per_channel;
    int32_t zero_point;
    int32_t qmin, qmax;
    /* NULL: the fixed-point stage above. Else the float stage of ONNX
     * Runtime's MLAS (MlasRequantizeOutput, which its QLinearConv,
     * QGemm and QLinearMatMul run), mult and shift unused (may be NULL):
     *   x = acc + bias[c]                       (int32, wraps)
     *   f = (float)x * scale[c]                 (float, nearest even)
     *   q = rint(clamp(f, qmin - zero_point, qmax - zero_point))
     *       + zero_point                        (half to even)
     * with scale[c] = x_scale * w_scale[c] / y_scale computed in float as
     * ONNX Runtime does; N values or one as per_channel says, each finite
     * and >= 0 (else KERN_E_RANGE). */
    const float *scale;
};

/* q[i][j] = the output stage of acc[i][j] for column j (M x N, acc's
 * leading dimension ld_acc >= N, q's ldq >= N). KERN_E_INVALID for NULL,
 * KERN_E_SHAPE for a leading dimension below N, KERN_E_OVERFLOW when an
 * index overflows, KERN_E_RANGE as struct kern_q8_outstage says. */
KERN_API int kern_q8_requantize_s8(size_t m, size_t n, const int32_t *acc,
                                   size_t ld_acc,
                                   const struct kern_q8_outstage *os,
                                   int8_t *q, size_t ldq);

/* Row sums of packed weights: sums[j] = sum_k w[j][k] for the N rows of a
 * kern_q8_pack_weights buffer (N from the buffer; sums holds N). Computed
 * once, when the weights are packed: kern_q8_gemm_s8 subtracts
 * a_zero * sums[j] to account for the activations' zero point.
 * KERN_E_INVALID for NULL or a buffer that is not packed weights. */
KERN_API int kern_q8_packed_row_sums(const void *packed_w, int32_t *sums);

/* Static int8 GEMM, fused: q[i][j] = output stage of
 *   sum_k (a[i][k] - a_zero) * w[j][k]
 *     = sum_k a[i][k] * w[j][k] - a_zero * w_sums[j]
 * for column j, with the bias of os added before the multiplier. A is
 * M x K int8 (lda >= K) with zero point a_zero in [-128, 127], W the
 * packed weights (N x K), w_sums their kern_q8_packed_row_sums. The int32
 * sums run on kern_q8_gemm's path (VNNI, AVX-512, AVX2 or C) in tiles
 * that stay in cache; nothing passes through float. Statuses as
 * kern_q8_gemm and kern_q8_requantize_s8 (ldq >= N); KERN_E_RANGE also for
 * a_zero out of range. */
KERN_API int kern_q8_gemm_s8(size_t m, size_t n, size_t k, const int8_t *a,
                             size_t lda, int32_t a_zero, const void *packed_w,
                             const int32_t *w_sums,
                             const struct kern_q8_outstage *os, int8_t *q,
                             size_t ldq);

/* kern_q8_gemm_s8 with q written transposed: q[j * ldq + i] (ldq >= M),
 * the same bytes. A convolution lowered as [pixels][K] (M = pixels, N =
 * output channels) then writes its NCHW planes directly, the transpose
 * done on each tile while it is in cache. Statuses as kern_q8_gemm_s8
 * (KERN_E_SHAPE for ldq < M). */
KERN_API int kern_q8_gemm_s8_t(size_t m, size_t n, size_t k,
                               const int8_t *a, size_t lda, int32_t a_zero,
                               const void *packed_w, const int32_t *w_sums,
                               const struct kern_q8_outstage *os, int8_t *q,
                               size_t ldq);

/* The channels-by-pixels form of a static int8 convolution (layout
 * "kp"), which reads NCHW planes and writes them, with no transpose on
 * either side:
 *   y[j * ldy + i] = output stage (channel j) of
 *                    sum_k (x[k * ldx + i] - x_zero) * w[j][k]
 * for the n channels j and p pixels i; x is k rows of p int8 values (a
 * 1 x 1, stride-1, unpadded layer's input planes as they are; any other
 * layer lowered by kern_im2row_s8_kp). The same bytes as kern_q8_gemm_s8_t
 * on the [pixels][K] lowering. wk is kern_q8_pack_kp's packing, made once
 * (kern_q8_kp_bytes(n, k) bytes: the rows padded to groups of 4 and their
 * sums); work holds kern_q8_kp_work_bytes(n, k) bytes. AVX-512 VNNI runs
 * it 64 pixels at a time (kern_q8_kp_native says whether a vector path
 * does), else the C reference; either output stage. Statuses as
 * kern_q8_gemm_s8. */
KERN_API size_t kern_q8_kp_bytes(size_t n, size_t k);
KERN_API size_t kern_q8_kp_work_bytes(size_t n, size_t k);
KERN_API int kern_q8_pack_kp(size_t n, size_t k, const int8_t *w, size_t ldw,
                             void *wk);
KERN_API int kern_q8_kp_native(void);
KERN_API int kern_q8_gemm_kp_s8(size_t n, size_t p, size_t k, const void *wk,
                                const int8_t *x, size_t ldx, int32_t x_zero,
                                const struct kern_q8_outstage *os, int8_t *y,
                                size_t ldy, void *work);

/* Floats into static int8 with a zero point (a model's input, a layer run
 * in float): q[i] = clamp(rint(x[i] / scale) + zero, -128, 127), the
 * division and the addition in float, rint half to even; NaN gives zero.
 * KERN_E_INVALID for NULL, KERN_E_RANGE for a scale not finite and > 0
 * or a zero point outside [-128, 127]. */
KERN_API int kern_q8_quantize_zp_f32(const float *x, size_t n, float scale,
                                     int32_t zero, int8_t *q);

/* Static int8 depthwise convolution, NCHW: for every image b, channel c,
 *   acc = sum over ky, kx of (x[b][c][iy][ix] - x_zero) * w[c][ky][kx]
 * where a tap in the padding reads x_zero (so contributes 0), then the
 * output stage with channel c (os per_channel: N = channels). Shape as
 * kern_dwconv2d_f32 (dilation included); y is [batch][channels][out_h]
 * [out_w] int8. Statuses as kern_dwconv2d_out_hw and
 * kern_q8_requantize_s8; KERN_E_RANGE also for x_zero outside
 * [-128, 127] or kh * kw above 65536 (int32 sums stay exact). */
KERN_API int kern_q8_dwconv2d_s8(const struct kern_dwconv2d_shape *s,
                                 const int8_t *x, int32_t x_zero,
                                 const int8_t *w,
                                 const struct kern_q8_outstage *os,
                                 void *work, int8_t *y);

/* Bytes of scratch kern_q8_dwconv2d_s8 may use for this shape on any path
 * (the vector path's padded planes; the batch does not change it); 0 when
 * the shape is invalid or the size overflows. work: that many bytes, any
 * alignment, or NULL to let the function allocate (and free) them itself
 * (KERN_E_NOMEM when that fails); an executor passes its own, so that
 * nothing is allocated per call. */
KERN_API size_t kern_q8_dwconv2d_work_bytes(
    const struct kern_dwconv2d_shape *s);

/* Element-wise int8 add with rescaling in integer, as TFLite's Add:
 *   a' = (a - a_zero) * 2^left_shift, b' likewise (left_shift 20, TFLite's)
 *   sa = MultiplyByQuantizedMultiplier(a', a_mult, a_shift)  (<= 0 shift)
 *   sb = MultiplyByQuantizedMultiplier(b', b_mult, b_shift)
 *   q  = clamp(MultiplyByQuantizedMultiplier(sa + sb, out_mult, out_shift)
 *              + out_zero, qmin, qmax)
 * with the multipliers of TFLite's PrepareForAdd: twice the larger input
 * scale s2 = 2 * max(a_scale, b_scale), a_mult/shift from a_scale / s2,
 * b_mult/shift from b_scale / s2 and out from s2 / (2^left_shift *
 * out_scale); kern_q8_add_params_init computes them. */
struct kern_q8_add_params {
    int32_t a_zero, b_zero, out_zero;
    int left_shift;
    int32_t a_mult, b_mult, out_mult;
    int a_shift, b_shift, out_shift;
    int32_t qmin, qmax;
};

/* Fills p for scales a_scale, b_scale, out_scale (finite, > 0, else
 * KERN_E_RANGE), zero points in [-128, 127] and the clamp [qmin, qmax]
 * (within [-128, 127], else KERN_E_RANGE); left_shift 20. */
KERN_API int kern_q8_add_params_init(float a_scale, int32_t a_zero,
                                     float b_scale, int32_t b_zero,
                                     float out_scale, int32_t out_zero,
                                     int32_t qmin, int32_t qmax,
                                     struct kern_q8_add_params *p);

/* out[i] = the add of a[i] and b[i] (n values each; out may be a or b).
 * KERN_E_INVALID for NULL, KERN_E_RANGE for parameters out of range
 * (zero points and clamp as above, left_shift in [0, 20], input shifts in
 * [-31, 0], out_shift in [-31, 30]). */
KERN_API int kern_q8_add_s8(size_t n, const int8_t *a, const int8_t *b,
                            const struct kern_q8_add_params *p, int8_t *out);

/* The int8 add of ONNX Runtime on x86 (its QLinearAdd, which a QDQ Add
 * becomes; MLAS's AVX2 kernel), in float:
 *   ra = a_scale / out_scale, rb = b_scale / out_scale      (float)
 *   fixed = out_zero - (ra a_zero + rb b_zero)              (float, each
 *                                            operation rounded, no fma)
 *   f = fma(a, ra, fma(b, rb, fixed))          (two fused multiply-adds)
 *   q = clamp(rint(f), qmin, qmax)                          (half to even)
 * so that a QDQ model run on ONNX Runtime's output stage
 * (struct kern_q8_outstage's scale) follows it step for step. The zero
 * points enter the float sums, so the result depends on the type the file
 * stored: with off 128 (the tensors were uint8 there) every value, zero
 * point and bound is taken plus 128, as ONNX Runtime's uint8 kernel sees
 * them, and the result minus 128; off 0 for int8. */
struct kern_q8_addf_params {
    float ra, rb, fixed;
    int32_t off, qmin, qmax;
};

/* Fills p: scales finite and > 0, zero points and -128 <= qmin <= qmax <=
 * 127 in int8's range, else KERN_E_RANGE; KERN_E_INVALID for NULL. u8
 * nonzero: off 128 (above). */
KERN_API int kern_q8_addf_params_init(float a_scale, int32_t a_zero,
                                      float b_scale, int32_t b_zero,
                                      float out_scale, int32_t out_zero,
                                      int32_t qmin, int32_t qmax, int u8,
                                      struct kern_q8_addf_params *p);

/* out[i] = the float add of a[i] and b[i] (n values; out may be a or b).
 * KERN_E_INVALID for NULL, KERN_E_RANGE for a clamp outside int8's range,
 * off neither 0 nor 128 or ratios and fixed part not finite. */
KERN_API int kern_q8_addf_s8(size_t n, const int8_t *a, const int8_t *b,
                             const struct kern_q8_addf_params *p,
                             int8_t *out);

/* A tensor requantised to other params (concat's inputs, a pool's output
 * when its params differ): with d = (x - x_zero) * 2^left_shift,
 *   y = clamp(out_zero + MultiplyByQuantizedMultiplier(d, mult, shift),
 *             qmin, qmax)
 * (the formula of the static section above, no bias). left_shift keeps
 * the fraction of d * in_scale / out_scale through the high multiply, as
 * TFLite's Add does with its left shift of 20. */
struct kern_q8_rescale {
    int32_t mult;
    int shift;
    int left_shift;
    int32_t out_zero, qmin, qmax;
};

/* Fills r for real values x_real = in_scale (x - x_zero) stored with
 * out_scale and out_zero: left_shift 20, mult and shift
 * (kern_q8_quantize_multiplier) of in_scale / (out_scale 2^20). A ratio
 * in_scale / out_scale above 1024 is taken as 1024: every nonzero
 * difference saturates either way. Scales finite and > 0, out_zero and
 * -128 <= qmin <= qmax <= 127 in int8's range, else KERN_E_RANGE;
 * KERN_E_INVALID for NULL. */
KERN_API int kern_q8_rescale_init(float in_scale, float out_scale,
                                  int32_t out_zero, int32_t qmin,
                                  int32_t qmax, struct kern_q8_rescale *r);

/* y[i] = the rescale of x[i] (n values; y may be x). KERN_E_INVALID for
 * NULL; KERN_E_RANGE for x_zero, out_zero or the clamp outside int8's
 * range, shift outside [-31, 30], or left_shift + max(shift, 0) outside
 * [0, 22] (d must fit in int32 for every int8 difference). */
KERN_API int kern_q8_rescale_s8(size_t n, const int8_t *x, int32_t x_zero,
                                const struct kern_q8_rescale *r, int8_t *y);

/* Declared with the pooling entry points below. */
struct kern_pool2d_shape;

/* int8 max pooling, NCHW, input and output sharing their params (the max
 * of quantised values is the quantised max): any window, stride and
 * padding, padding never wins (as kern_maxpool2d_f32 with its -inf pads).
 * Shape and statuses as kern_maxpool2d_f32; KERN_E_NOMEM when work is
 * NULL and the row buffer of the vector path cannot be allocated. */
KERN_API int kern_q8_maxpool2d_s8(const struct kern_pool2d_shape *s,
                                  const int8_t *x, void *work, int8_t *y);

/* Bytes of scratch kern_q8_maxpool2d_s8 may use for this shape on any
 * path (two padded rows); 0 when the shape is invalid or the size
 * overflows. work as kern_q8_dwconv2d_s8's. */
KERN_API size_t kern_q8_maxpool2d_work_bytes(
    const struct kern_pool2d_shape *s);

/* int8 average pooling, NCHW, with integer requantisation: for each
 * window, acc = sum of (q - x_zero) over its cells inside the input (a
 * padded cell stands for a real 0, so adds 0), count = the divisor
 * count_include_pad selects, and
 *   out = clamp(out_zero + round(acc * M / count), qmin, qmax)
 * where M = mult 2^(shift - 31) is the fixed-point multiplier of x_scale /
 * out_scale (kern_q8_quantize_multiplier) and the division by count is
 * exact, in 64-bit integers, rounded half away from zero (so that with
 * equal params the result is TFLite's integer average pool). A ratio
 * below 2^-10 gives out_zero clamped (|acc / count| <= 255 then rounds to
 * 0). Shape and statuses as kern_avgpool2d_f32; KERN_E_RANGE also for
 * scales not finite and > 0, zero points or the clamp outside int8's
 * range, or a window of more than 2^22 cells. */
KERN_API int kern_q8_avgpool2d_s8(const struct kern_pool2d_shape *s,
                                  const int8_t *x, int32_t x_zero,
                                  float x_scale, int32_t out_zero,
                                  float out_scale, int32_t qmin,
                                  int32_t qmax, int8_t *y);

/* Global average pooling, x [batch][channels][hw] to y [batch][channels]:
 * kern_q8_avgpool2d_s8 with one window of hw cells per channel.
 * KERN_E_SHAPE for a zero size, KERN_E_OVERFLOW when batch * channels *
 * hw overflows, else statuses as kern_q8_avgpool2d_s8 (hw <= 2^22). */
KERN_API int kern_q8_global_avgpool_s8(size_t batch, size_t channels,
                                       size_t hw, const int8_t *x,
                                       int32_t x_zero, float x_scale,
                                       int32_t out_zero, float out_scale,
                                       int32_t qmin, int32_t qmax,
                                       int8_t *y);

/* ---- nn ---------------------------------------------------------------- */

/* Network primitives in float32. Tensors are dense and row-major; images
 * are NCHW (batch, channels, height, width). Every function returns a
 * kern_status: KERN_E_INVALID for a NULL pointer, KERN_E_SHAPE for a zero
 * or inconsistent dimension, KERN_E_OVERFLOW when an element count does not
 * fit in size_t, KERN_E_RANGE for an argument outside its domain. */

/* x[r][c] += bias[c] for rows x channels (a dense layer's output). */
KERN_API int kern_nn_bias_add_f32(float *x, size_t rows, size_t channels,
                                  const float *bias);

/* Gradient of a dense layer's bias: grad_bias[c] = sum over r of
 * dy[r][c] for rows x channels (OVERWRITTEN; summed in double, then rounded
 * once). */
KERN_API int kern_nn_bias_grad_f32(const float *dy, size_t rows,
                                   size_t channels, float *grad_bias);

/* One step of an LSTM cell (PyTorch's nn.LSTM gate order i, f, g, o), on
 * the h hidden units of one sample: gates holds the 4h pre-activations
 * (W_ih x + W_hh h + both biases) and is OVERWRITTEN with the activations
 * sigmoid(i), sigmoid(f), tanh(g), sigmoid(o); then c = f*c + i*g and
 * hout = o*tanh(c) (c updated in place). Returns KERN_OK; KERN_E_INVALID
 * for a NULL pointer with h > 0; KERN_E_OVERFLOW when 4h does not fit. */
KERN_API int kern_lstm_cell_f32(size_t h, float *gates, float *c,
                                float *hout);

/* One step of a GRU cell with linear_before_reset (PyTorch's nn.GRU, gate
 * order r, z, n) on one sample's h units: gi the 3h input products (W_ih x
 * + b_ih), gh the hidden products W_hh h (3h, without bias), bhh b_hh (3h;
 * NULL: none). r = sigmoid(gi_r + gh_r + b_hr), z likewise, n =
 * tanh(gi_n + r * (gh_n + b_hn)), hout = (1 - z) * n + z * hout (in
 * place); gi is OVERWRITTEN with r, z, n. Returns as kern_lstm_cell_f32. */
KERN_API int kern_gru_cell_f32(size_t h, float *gi, const float *gh,
                               const float *bhh, float *hout);

/* x[b][c][i] += bias[c] for NCHW with hw = height * width. */
KERN_API int kern_nn_bias_add_nchw_f32(float *x, size_t batch,
                                       size_t channels, size_t hw,
                                       const float *bias);

/* Softmax over each of `rows` rows of `cols` values: y = exp(x - max) /
 * sum(exp(x - max)); finite for any finite input (e.g. {1000, 1001}). A
 * row holding NaN or +inf, or only -inf, gives NaN in that row. y may equal
 * x (in place). Accuracy: within 6e-7 relative of the exact softmax of the
 * float differences x - max (sums in double); the AVX2/AVX-512 paths flush
 * results below FLT_MIN (about 1.2e-38) to 0. */
KERN_API int kern_nn_softmax_f32(const float *x, size_t rows, size_t cols,
                                 float *y);

/* Log-softmax over each of `rows` rows of `cols` values: y = (x - max) -
 * log(sum(exp(x - max))), evaluated in double and rounded once (within
 * 1 ulp of the exact value plus 2^-24 * |log sum| absolute); y may equal
 * x. Rows holding NaN or +inf, or only -inf, give NaN, as
 * kern_nn_softmax_f32. */
KERN_API int kern_nn_log_softmax_f32(const float *x, size_t rows,
                                     size_t cols, float *y);

/*
 * Layer normalisation of each of `rows` rows of `cols` values, as
 * PyTorch's nn.LayerNorm over the last axis: y = (x - mean) / sqrt(var +
 * eps) * gamma[c] + beta[c], var the biased variance of the row (divided
 * by cols) and eps inside the root. gamma NULL: 1; beta NULL: 0. y may
 * equal x. The mean and variance are summed in double (two passes, so a
 * row far from zero loses nothing to cancellation) and the row is then
 * normalised in float: within about 4 ulp of (x - mean) * rstd * gamma +
 * beta, each rounded once. A row holding NaN or inf gives NaN.
 * KERN_E_INVALID for NULL x or y, KERN_E_SHAPE for cols 0 with rows > 0,
 * KERN_E_RANGE for eps < 0 or not finite, KERN_E_OVERFLOW.
 */
KERN_API int kern_layernorm_f32(const float *x, size_t rows, size_t cols,
                                const float *gamma, const float *beta,
                                float eps, float *y);

/*
 * The gradients of kern_layernorm_f32 from the output's gradient g (rows x
 * cols): gx (NULL: not wanted; may equal g) = rstd * (gh - mean(gh) - xh *
 * mean(gh * xh)) with xh the normalised input and gh = g * gamma (gamma
 * NULL: 1); ggamma[c] = sum over rows of g * xh and gbeta[c] = sum of g
 * (each NULL: not wanted; written, not added to). The row statistics are
 * recomputed from x as the forward pass computes them. Statuses as
 * kern_layernorm_f32.
 */
KERN_API int kern_layernorm_backward_f32(const float *x, const float *g,
                                         size_t rows, size_t cols,
                                         const float *gamma, float eps,
                                         float *gx, float *ggamma,
                                         float *gbeta);

/* The element-wise sum of count >= 1 tensors of n floats, left to right
 * in float: y[i] = (x[0][i] + x[1][i]) + x[2][i] ... y may be x[0]; it
 * must not overlap any other input. KERN_E_SHAPE for count 0. */
KERN_API int kern_nn_add_f32(float *y, const float *const *x, size_t count,
                             size_t n);

/* kern_nn_add_f32 with an activation applied to each sum in the same
 * pass: act is a kern_fused_act (defined below; else KERN_E_RANGE), and
 * y has the bits of kern_nn_add_f32 followed by kern_relu_f32
 * (KERN_FUSE_RELU) or kern_nn_relu6_f32 (KERN_FUSE_RELU6): -0 becomes +0,
 * NaN passes through. Arguments and status as kern_nn_add_f32. */
KERN_API int kern_nn_add_act_f32(float *y, const float *const *x,
                                 size_t count, size_t n, int act);

/* A per-channel affine map over NCHW (hw = height * width; 1 for a
 * [batch][channels] tensor): y[b][c][i] = x[b][c][i] * scale[c] +
 * shift[c], a batch norm at inference. y may equal x. */
KERN_API int kern_nn_channel_affine_f32(const float *x, size_t batch,
                                        size_t channels, size_t hw,
                                        const float *scale,
                                        const float *shift, float *y);

/* Global average pooling: y[p] = the mean of the hw values of plane p of
 * x ([planes][hw], planes = batch * channels), summed in double and
 * rounded once. KERN_E_SHAPE for hw 0. */
KERN_API int kern_nn_global_avgpool_f32(const float *x, size_t planes,
                                        size_t hw, float *y);

/* Global average pooling of a channel-blocked (NCHW8c, see below) x,
 * [batch][ceil(channels / 8)][hw][8]: y [batch][channels] (the NCHW
 * output [batch][channels][1][1], which is also its NCHW8c form when
 * channels is a multiple of 8) gets each channel's mean with the bits of
 * kern_nn_global_avgpool_f32 on the NCHW form of x. Padding lanes are
 * ignored. KERN_E_SHAPE for a zero size, KERN_E_OVERFLOW when the blocked
 * size overflows. */
KERN_API int kern_nn_global_avgpool_nchw8c_f32(const float *x, size_t batch,
                                               size_t channels, size_t hw,
                                               float *y);

/* relu6: min(max(x, 0), 6) over n floats; relu6(-0) = +0, NaN propagates.
 * Exact. dst may equal src. */
KERN_API int kern_nn_relu6_f32(float *dst, const float *src, size_t n);

/* Backward of relu6 from its forward OUTPUT y (0 < y < 6 exactly where
 * 0 < x < 6, so y serves where the input was not kept): grad_in =
 * grad_out where 0 < y < 6, else 0 (the derivative at the kinks taken as
 * 0); a NaN y gives NaN. grad_in may equal grad_out. Exact. */
KERN_API int kern_nn_relu6_backward_f32(float *grad_in,
                                        const float *grad_out, const float *y,
                                        size_t n);

/* Softmax cross-entropy for a batch of logits [batch][classes] and integer
 * labels in [0, classes) (else KERN_E_RANGE). *loss = mean over the batch
 * of -log softmax(x)[label], computed as logsumexp(x) - x[label] in a
 * stable way (double accumulation). grad (may be NULL, may not alias
 * logits) receives (softmax(x) - onehot(label)) / batch, [batch][classes].
 * Accuracy against double arithmetic: loss within 1e-6 (1 + |loss|); grad
 * within 3e-7 / batch plus a relative 2^-24 (|x - max| + 8) (the vector
 * paths round x - max to float). */
KERN_API int kern_nn_softmax_xent_f32(const float *logits,
                                      const int32_t *labels, size_t batch,
                                      size_t classes, float *loss,
                                      float *grad);

/* ---- conv --------------------------------------------------------------- */

/* Channel-blocked activations (NCHW8c). Besides NCHW, the convolutions
 * can read and write activations with channels blocked by
 * KERN_CBLOCK (8): x [batch][ceil(c / 8)][h][w][8], channel ch of pixel
 * (y, x) at [b][ch / 8][y][x][ch % 8]. One vector of eight floats then
 * holds one pixel of eight channels, which is what a depthwise or a
 * channel-vector convolution computes, so that a chain of them needs no
 * transposes between its layers (oneDNN's nChw8c). When c is a multiple
 * of 8 the tensor has exactly the size of its NCHW form; otherwise the
 * last block's lanes past c are padding and hold zeros.
 *
 * kern_nchw_to_nchw8c_f32 converts x ([batch][c][hw], hw = h * w pixels)
 * into y ([batch][ceil(c / 8)][hw][8], padding lanes zeroed);
 * kern_nchw8c_to_nchw_f32 converts back, ignoring the padding lanes. Both
 * copy values exactly. KERN_E_INVALID for NULL, KERN_E_SHAPE for a zero
 * size, KERN_E_OVERFLOW when the blocked size overflows; y must not
 * overlap x. */
enum { KERN_CBLOCK = 8 }; /* channels per block of an NCHW8c tensor */
enum kern_layout {
    KERN_LAYOUT_NCHW = 0,   /* [batch][c][h][w] */
    KERN_LAYOUT_NCHW8C = 1, /* [batch][ceil(c / 8)][h][w][8] */
};
KERN_API int kern_nchw_to_nchw8c_f32(size_t batch, size_t c, size_t hw,
                                     const float *x, float *y);
KERN_API int kern_nchw8c_to_nchw_f32(size_t batch, size_t c, size_t hw,
                                     const float *x, float *y);

/* 2-D convolution (cross-correlation, as in PyTorch and ONNX), float32.
 *
 * Layout: NCHW throughout, the public layout of every convolution here:
 * x [batch][in_c][in_h][in_w], w [out_c][in_c/groups][kh][kw] (PyTorch's),
 * y [batch][out_c][out_h][out_w]. Rectangular kernels kh x kw, a stride per
 * axis, zero padding given per side (asymmetric padding, as ONNX "pads" or
 * TensorFlow "SAME" produce), a dilation per axis, groups that divide both
 * channel counts (groups == in_c == out_c is depthwise). Tap (ky, kx)
 * reads input row oy * stride_h + ky * dilation_h - pad_top. Output size:
 * out_h = (in_h + pad_top + pad_bottom - dilation_h * (kh - 1) - 1) /
 * stride_h + 1 (floor), out_w alike with pad_left, pad_right, kw,
 * dilation_w and stride_w.
 *
 * A dilation of 0 means 1, so that a shape filled field by field or by
 * a designated initialiser that leaves them out is today's undilated
 * convolution. Undilated shapes take the paths described at
 * kern_conv2d_f32 unchanged; dilated ones (either dilation > 1) are
 * lowered by kern_im2col_f32 into the scratch and multiplied by
 * kern_sgemm (depthwise ones run kern_dwconv2d_f32's dilated loop). */
struct kern_conv2d_shape {
    size_t batch;
    size_t in_c, in_h, in_w;
    size_t out_c;
    size_t kh, kw;
    size_t stride_h, stride_w;
    size_t pad_top, pad_left, pad_bottom, pad_right;
    size_t groups;
    size_t dilation_h, dilation_w; /* 0 or 1: undilated */
};

/* The activation fused into a convolution's output pass. */
enum kern_fused_act {
    KERN_FUSE_NONE = 0,  /* y = sum */
    KERN_FUSE_RELU = 1,  /* y = max(sum, 0) */
    KERN_FUSE_RELU6 = 2, /* y = min(max(sum, 0), 6) */
};

/* Output height and width of a convolution; KERN_E_INVALID for NULL,
 * KERN_E_SHAPE when the shape is invalid (zero sizes or strides, groups not
 * dividing the channels, a kernel larger than the padded input),
 * KERN_E_OVERFLOW when an element count or byte size overflows. */
KERN_API int kern_conv2d_out_hw(const struct kern_conv2d_shape *s,
                                size_t *out_h, size_t *out_w);

/* Bytes of scratch kern_conv2d_f32 may use for this shape on any path
 * (a zero-padded copy of one sample's group of input planes, the channels
 * of an ungrouped shape rounded up to a multiple of 8 for a blocked input,
 * a table of K = in_c/groups * kh * kw offsets and, when K is deeper than
 * one K block of the tile (sized from this host's level-2 cache), running
 * sums of up to (out_h * out_w + 12) x 24 floats); 0 when it needs none
 * or the shape is invalid. */
KERN_API size_t kern_conv2d_work_bytes(const struct kern_conv2d_shape *s);

/* Forward: y[b][oc][oy][ox] = act(bias[oc] + sum over ic in oc's group,
 * ky, kx of w[oc][ic - g*in_c/groups][ky][kx] *
 * x[b][ic][oy*stride_h+ky*dh-pad_top][ox*stride_w+kx*dw-pad_left]) (zero
 * outside the input; dh, dw the dilations, 1 unless given). bias: out_c
 * values or NULL (0); act: a kern_fused_act (else
 * KERN_E_RANGE); y must not overlap x or w. work: kern_conv2d_work_bytes(s)
 * bytes, any alignment, or NULL to let the function allocate (and free) it
 * itself (KERN_E_NOMEM when that fails); an executor passes its own so that
 * nothing is allocated per call.
 *
 * Paths. Depthwise convolutions run kern_dwconv2d_f32. The others are a
 * matrix product per group, Y[oc][pixel] = W[oc][K] . X[K][pixel], with K
 * = (ic, ky, kx), computed on the AVX2 path without an im2col matrix: a
 * 1 x 1, stride 1, unpadded convolution reads the activation planes
 * themselves as the GEMM's right operand; any other one first copies the
 * group's input planes once, zero-padded and split by stride phase (the
 * (ry, rx) = (row mod stride_h, column mod stride_w) sub-planes), so that
 * every (ic, ky, kx) row of X is a contiguous run of one sub-plane at a
 * fixed offset: the packing is one pass over the input, amortised over
 * every output channel. A 4 x 24 register tile (output channels x pixels)
 * starts from the bias and gets the activation before its one store. The C
 * path is the definition, one output at a time.
 *
 * A 1 x 1 convolution on a plane of fewer than 24 pixels (MobileNet's last
 * layers) would leave most of the tile's lanes idle: there the AVX2 path
 * transposes the plane (P x K floats in the scratch) and takes dot
 * products along K, 4 output channels x 3 pixels at a time.
 *
 * Accuracy: the C path and the AVX2 tile start from the bias and add the K
 * terms in (ic, ky, kx) order (the tile with fused multiply-adds, each
 * product rounded once less); the dot products add 8 interleaved partial
 * sums, then the bias. Either way results agree with the exact value to
 * within about (K + 1) * FLT_EPSILON * (|bias| + sum of |w * x|). */
KERN_API int kern_conv2d_f32(const struct kern_conv2d_shape *s,
                             const float *x, const float *w,
                             const float *bias, int act, void *work,
                             float *y);

/* Weights packed once for many calls (an executor packs at load time). The
 * packed form, the same on every path: per group g, blocks of
 * KERN_CONV_PACK_BLOCK (8) output channels, each [K][8] floats with
 * element [k][l] = w[g*ocg + 8*blk + l][k] (K = in_c/groups * kh * kw, k =
 * (ic * kh + ky) * kw + kx), zero for channels past the group's last.
 * kern_conv2d_packed_bytes gives its size (0 for a depthwise or invalid
 * shape, or when the size overflows); kern_conv2d_pack_f32 fills it from
 * PyTorch's [out_c][in_c/groups][kh][kw] (KERN_E_SHAPE for a depthwise
 * shape, which has its own kernel).
 *
 * kern_conv2d_packed_f32 computes exactly what kern_conv2d_f32 does, with
 * the same scratch (kern_conv2d_work_bytes) and the same results bit for
 * bit but for the 1 x 1 small-plane dot products (same bound). Its AVX2
 * path puts output channels in the lanes, 24 at a time (three aligned
 * loads per K step), and broadcasts the input of 4 output pixels (16
 * channels x 6 pixels, 8 x 12, where fewer are left), so that planes of
 * any size fill the vectors and no junk columns are computed; the tile is
 * transposed on its way to the NCHW output. Shallow convolutions (K < 64)
 * on planes of 128 pixels or more take the pixel-wide tile on the packed
 * weights. Output channels [8 j, out_c) of an ungrouped convolution can be
 * run on their own, one sample at a time (batch 1): a shape with out_c
 * reduced, weights from block j, bias and y advanced to channel 8 j;
 * every output is the same sum in the same order however the channels
 * are split. Groups [g0, g1) of a grouped one run alike: groups, in_c and
 * out_c reduced to theirs, the packed weights from group g0's first
 * block (each group has ceil(out_c / groups / 8) blocks), x, bias and y
 * advanced to its first channels. kern_conv2d_packed_layout_f32 below reads and writes the
 * blocked layout too. */
enum { KERN_CONV_PACK_BLOCK = 8 }; /* output channels per packed block */

/* How many output channels a part should have when a caller splits a
 * packed convolution's channels as above (among threads): the channels of
 * the widest tile the selected path runs, a multiple of
 * KERN_CONV_PACK_BLOCK (8 on the C path, 24 for the 8-float vector tile's
 * three blocks, 32 where AVX-512's 16-lane tile runs). Parts of fewer
 * channels give the same bits but run narrower tiles, each reading the
 * whole input again. */
KERN_API size_t kern_conv2d_split_channels(void);
KERN_API size_t kern_conv2d_packed_bytes(const struct kern_conv2d_shape *s);
KERN_API int kern_conv2d_pack_f32(const struct kern_conv2d_shape *s,
                                  const float *w, float *packed);
KERN_API int kern_conv2d_packed_f32(const struct kern_conv2d_shape *s,
                                    const float *x, const float *packed,
                                    const float *bias, int act, void *work,
                                    float *y);

/* kern_conv2d_packed_f32 on activations in either layout: x is read in
 * in_layout and y written in out_layout, each a kern_layout (else
 * KERN_E_RANGE): [batch][in_c][in_h][in_w] or [batch][ceil(in_c / 8)]
 * [in_h][in_w][8] for x, alike for y with out_c. The packed weights, the
 * scratch (kern_conv2d_work_bytes) and the other arguments are those of
 * kern_conv2d_packed_f32; with both layouts KERN_LAYOUT_NCHW it is that
 * function. A blocked layout needs groups == 1 or groups whose channels
 * are whole blocks of 8, in_c / groups and out_c / groups both multiples
 * of 8 (else KERN_E_SHAPE), and
 * KERN_E_OVERFLOW when a blocked tensor's size overflows. Channel counts
 * need not be multiples of 8: the padding lanes of a blocked x are never
 * read, those of a blocked y are written with zeros.
 *
 * Results: on one instruction-set path, the same bits as
 * kern_conv2d_packed_f32 on the tensors converted to and from NCHW
 * (kern_nchw_to_nchw8c_f32, kern_nchw8c_to_nchw_f32): each output is the
 * same sum in the same order (the bias, then the K terms in (ic, ky, kx)
 * order, with fused multiply-adds on the AVX2 path), whatever the
 * layouts. A blocked output spares the AVX2 channel-vector tile its
 * transposes (a vector of 8 channels of one pixel is stored as it is),
 * and a blocked input is copied into phase planes that stay blocked (a
 * vector of 8 channels per pixel, no transposes; the tile broadcasts
 * from them) or, for an unpadded 1 x 1 convolution of any stride,
 * broadcast in place. On a blocked layout the shallow, wide convolutions that the
 * NCHW call gives to the pixel-wide tile take the channel-vector tile.
 * On AVX-512 machines a convolution from and to blocked tensors (1 x 1
 * read in place, or phase planes whose weight panel needs no K blocks)
 * takes a 16-lane tile, two blocks of 8 channels of one pixel per vector:
 * the same sums in the same order, so the same bits.
 *
 * Splitting the output channels (one sample at a time, batch == 1):
 * channels [8 j, out_c) run on their own with out_c reduced to out_c - 8
 * j, the weights from block j (packed + 8 j * K floats, K = in_c * kh *
 * kw), bias + 8 j, the same x, and y + 8 j * out_h * out_w floats, in
 * either output layout (channel 8 j starts there in both). The results
 * are the bits of the whole call. With batch > 1 the per-sample stride
 * of y would shrink with out_c: run each sample on its own (x and y
 * advanced by a sample of their layout). */
KERN_API int kern_conv2d_packed_layout_f32(const struct kern_conv2d_shape *s,
                                           int in_layout, int out_layout,
                                           const float *x,
                                           const float *packed,
                                           const float *bias, int act,
                                           void *work, float *y);

/* kern_conv2d_packed_layout_f32 for output pixels [p_lo, p_hi) of every
 * plane (pixel oy * out_w + ox; every channel, every sample), the other
 * pixels of y untouched: callers split one sample's convolution among
 * threads by rows when it has too few channels to split by those, each
 * part with its own `work`. Each pixel gets the bits the whole call gives
 * it. KERN_E_RANGE when p_lo > p_hi or p_hi > out_h * out_w; KERN_E_SHAPE
 * for a dilated shape unless the range is the whole plane; else as
 * kern_conv2d_packed_layout_f32. */
KERN_API int kern_conv2d_packed_pixels_f32(const struct kern_conv2d_shape *s,
                                           int in_layout, int out_layout,
                                           size_t p_lo, size_t p_hi,
                                           const float *x,
                                           const float *packed,
                                           const float *bias, int act,
                                           void *work, float *y);

/* Backward of kern_conv2d_f32 without activation, for dy
 * ([batch][out_c][out_h][out_w]): grad_x ([batch][in_c][in_h][in_w]),
 * grad_w (same shape as w) and grad_bias (out_c) are OVERWRITTEN with the
 * gradients (sums over the batch). Any of the three outputs may be NULL to
 * skip it; grad_x needs w, grad_w needs x (the other may then be NULL).
 * The C definition on every path (a training loop that wants speed lowers
 * through kern_im2col_f32 and kern_sgemm instead). */
KERN_API int kern_conv2d_backward_f32(const struct kern_conv2d_shape *s,
                                      const float *x, const float *w,
                                      const float *dy, float *grad_x,
                                      float *grad_w, float *grad_bias);

/* Convolution lowering for callers that run their own GEMM (training, the
 * int8 path). K = in_c/groups * kh * kw rows, indexed (ic * kh + ky) * kw
 * + kx with ic counted inside group g; P = out_h * out_w pixels, indexed
 * oy * out_w + ox. Each works on sample b (< batch) and group g (< groups)
 * of the NCHW tensor x; KERN_E_INVALID for NULL, KERN_E_SHAPE for an
 * invalid shape or b, g out of range, KERN_E_OVERFLOW. */

/* col[k][p] = x[b][g*in_c/groups + ic][oy*stride_h+ky*dh-pad_top]
 * [ox*stride_w+kx*dw-pad_left] (dh, dw the dilations, 1 unless given),
 * zero outside the input: col is K x P,
 * row-major, the right operand of W[ocg][K] . col giving the group's
 * output planes. */
KERN_API int kern_im2col_f32(const struct kern_conv2d_shape *s,
                             const float *x, size_t b, size_t g,
                             float *col);

/* The adjoint of kern_im2col_f32: x[b][g*in_c/groups + ic][iy][ix] +=
 * col[k][p] for every (k, p) that kern_im2col_f32 reads from (iy, ix);
 * entries that read padding give nothing back. x is not cleared, only
 * sample b's channels of group g are written. */
KERN_API int kern_col2im_f32(const struct kern_conv2d_shape *s,
                             const float *col, size_t b, size_t g,
                             float *x);

/* The int8 lowering, pixel-major: col[p][k] (P x K, row-major: the left
 * operand of kern_q8_gemm against the packed [ocg][K] weights), same
 * values as kern_im2col_f32 for int8 x; padding is 0 (the zero point of
 * symmetric quantisation). Writes exactly P x K bytes and needs no
 * scratch; the AVX2 path (1 x 1 stride-1 unpadded: a byte transpose;
 * otherwise kh x kw cells or kw-byte runs placed by byte shuffles) gives
 * the same bytes as the C loop. */
KERN_API int kern_im2col_s8(const struct kern_conv2d_shape *s,
                            const int8_t *x, size_t b, size_t g,
                            int8_t *col);

/* The same lowering for asymmetric int8 activations: padded taps hold the
 * input's zero point x_zero (in [-128, 127], else KERN_E_RANGE), so that
 * kern_q8_gemm_s8 with a_zero = x_zero sees them as real zeros. x_zero 0
 * or an unpadded shape is kern_im2col_s8 (its fast paths); otherwise a C
 * loop a tap at a time. Statuses as kern_im2col_s8. */
KERN_API int kern_im2col_s8_zp(const struct kern_conv2d_shape *s,
                               const int8_t *x, size_t b, size_t g,
                               int32_t x_zero, int8_t *col);

/* Image b, group g of a convolution lowered as rows: rows[t][i] for the
 * group's K = in_c / groups * kh * kw taps t = (c, ky, kx) and the out_h *
 * out_w output pixels i, x_zero in the padded taps (kern_q8_gemm_kp_s8's
 * x). Statuses as kern_im2col_s8_zp. */
KERN_API int kern_im2row_s8_kp(const struct kern_conv2d_shape *s,
                               const int8_t *x, size_t b, size_t g,
                               int32_t x_zero, int8_t *rows);

/* A static int8 convolution (groups 1, undilated, any stride and padding)
 * in the kp form read in place: no [K][pixels] lowering. Image b's input
 * planes are copied once into padded planes (x_zero in the padding),
 * split into stride_h x stride_w phases, and every tap (c, ky, kx) of the
 * GEMM reads one of them at its offset; the output planes of image b
 * (y + b * out_c * out_h * out_w) get the same bytes as
 * kern_im2row_s8_kp then kern_q8_gemm_kp_s8. wk is kern_q8_pack_kp's
 * packing of the out_c x (in_c kh kw) weights; work holds
 * kern_q8_conv_kp_work_bytes(s) bytes (0: the shape is not one this
 * takes, or its sizes overflow). Statuses as kern_q8_gemm_kp_s8. */
KERN_API size_t kern_q8_conv_kp_work_bytes(const struct kern_conv2d_shape *s);
KERN_API int kern_q8_conv_kp_s8(const struct kern_conv2d_shape *s,
                                const void *wk, const int8_t *x, size_t b,
                                int32_t x_zero,
                                const struct kern_q8_outstage *os, int8_t *y,
                                void *work);

/* A direct depthwise 2-D convolution (groups == channels: each channel is
 * convolved with its own kh x kw filter), NCHW, with the bias and an
 * activation applied in the same pass over the output. Rectangular kernels,
 * a stride per axis, and zero padding given per side (asymmetric padding,
 * as ONNX "pads" or TensorFlow "SAME" produce). Output size: out_h = (in_h
 * + pad_top + pad_bottom - kh) / stride_h + 1 (floor), out_w alike with
 * pad_left, pad_right, kw and stride_w. */
struct kern_dwconv2d_shape {
    size_t batch, channels, in_h, in_w;
    size_t kh, kw, stride_h, stride_w;
    size_t pad_top, pad_left, pad_bottom, pad_right;
    /* Dilation per axis, 0 meaning 1 as in kern_conv2d_shape: tap (ky,
     * kx) reads row oy * stride_h + ky * dilation_h - pad_top. Dilated
     * shapes run a C loop over output rows (vectorised by the compiler
     * along the row when stride_w is 1) on every path, and the blocked
     * entry points their C reference. */
    size_t dilation_h, dilation_w;
};

/* The depthwise form of a conv2d shape whose groups equal its channels
 * (channels = in_c, the same geometry): what kern_conv2d_f32 passes to
 * kern_dwconv2d_f32, and what a caller holding conv2d shapes needs for
 * the depthwise entry points below. Copies fields only; s must not be
 * NULL. */
KERN_API struct kern_dwconv2d_shape
kern_conv2d_dw_shape(const struct kern_conv2d_shape *s);

/* Output height and width of a depthwise convolution; KERN_E_INVALID for
 * NULL, KERN_E_SHAPE for a zero size or stride or a kernel larger than the
 * padded input, KERN_E_OVERFLOW when a size overflows. */
KERN_API int kern_dwconv2d_out_hw(const struct kern_dwconv2d_shape *s,
                                  size_t *out_h, size_t *out_w);

/* Forward: y[b][c][oy][ox] = act(bias[c] + sum over ky, kx of
 * w[c][ky][kx] *
 * x[b][c][oy*stride_h+ky*dh-pad_top][ox*stride_w+kx*dw-pad_left]) (zero
 * outside the input; dh, dw the dilations, 1 unless given). x:
 * [batch][channels][in_h][in_w]; w:
 * [channels][kh][kw]; bias: channels values or NULL (0); act: a
 * kern_fused_act (else KERN_E_RANGE); y: [batch][channels][out_h][out_w],
 * which must not overlap x or w. No allocation: the AVX2 path (also taken
 * on AVX-512 machines) runs eight planes at a time, interleaved one plane
 * per lane into a zero-padded 24 KiB stack buffer band by band, any
 * stride, eight outputs at a time along a band's flattened output
 * positions, when an output row and the padded rows it reads fit (kh *
 * padded width <= 768, kh * in_w <= 1024, out_w <= 1024, kh * kw <= 64);
 * wider planes go a plane at a time, copied band by band into a
 * zero-padded 32 KiB stack buffer so that the inner loops carry no bounds
 * tests (column stride 1 and 2, any row stride; other column strides, and
 * planes too wide for one padded row band, run a scalar loop). The sum
 * starts from the bias and adds the taps in row-major order on every
 * path; the C path skips the taps outside the input, the AVX2 path takes
 * every tap with a fused multiply-add (w * +0 outside). Results agree
 * with the exact value to within about (kh * kw + 1) * FLT_EPSILON *
 * (|bias| + sum of |w * x|). */
KERN_API int kern_dwconv2d_f32(const struct kern_dwconv2d_shape *s,
                               const float *x, const float *w,
                               const float *bias, int act, float *y);

/* The depthwise convolution on channel-blocked (NCHW8c) activations, so
 * that a chain of convolutions needs no conversion between its layers.
 *
 * Filters are packed once (an executor does it at load):
 * kern_dwconv2d_packed_bytes gives the bytes of the packed form, 0 for
 * NULL or a shape kern_dwconv2d_out_hw refuses or whose blocked tensors
 * overflow; kern_dwconv2d_pack_f32 turns w [channels][kh][kw] into packed
 * [ceil(channels / 8)][kh][kw][8] (channel c's tap (ky, kx) at
 * [c / 8][ky][kx][c % 8]; the lanes past channels are zeros).
 * KERN_E_INVALID for NULL, the status of kern_dwconv2d_out_hw for a bad
 * shape, KERN_E_OVERFLOW when the blocked sizes overflow.
 *
 * kern_dwconv2d_nchw8c_f32 computes the values kern_dwconv2d_f32 defines,
 * with x [batch][ceil(channels / 8)][in_h][in_w][8] and y
 * [batch][ceil(channels / 8)][out_h][out_w][8] (the layout above), packed
 * from kern_dwconv2d_pack_f32 for the same shape, bias `channels` floats
 * or NULL (0), act a kern_fused_act. The padding lanes of x are ignored
 * (they may hold anything); those of y are written +0. y must not overlap
 * x or packed. No allocation, no scratch: the AVX2 path reads x in place
 * (one vector per pixel: eight channels), so it needs no transposes.
 *
 * Bits: every output has exactly the bits kern_dwconv2d_f32 gives the
 * same channel on the NCHW form of the same tensors on the same
 * instruction-set path: the sum starts from the bias and adds the taps in
 * row-major order, on the C path without fused multiply-adds and skipping
 * the taps outside the input, on the AVX2 path (taken on AVX-512 machines
 * too) with fused multiply-adds over every tap, those outside the input
 * adding w * +0. The error bound is that of kern_dwconv2d_f32.
 *
 * kern_dwconv2d_nchw8c_blocks_f32 computes only the channel blocks
 * [block0, block1) (channels 8 block0 .. 8 block1 - 1) of every sample:
 * x, packed, bias and y are the whole tensors as above, and nothing of y
 * outside those blocks is read or written, so that threads given disjoint
 * block ranges may run on the same y at once (an executor splits a layer
 * by blocks). kern_dwconv2d_nchw8c_f32 is the range [0, ceil(channels /
 * 8)). Statuses: KERN_E_INVALID for a NULL s, x, packed or y, those of
 * kern_dwconv2d_out_hw for a bad shape, KERN_E_OVERFLOW when a blocked
 * size overflows, KERN_E_RANGE for an act that is not a kern_fused_act or
 * a block range that is empty or past ceil(channels / 8). */
KERN_API size_t kern_dwconv2d_packed_bytes(
    const struct kern_dwconv2d_shape *s);
KERN_API int kern_dwconv2d_pack_f32(const struct kern_dwconv2d_shape *s,
                                    const float *w, float *packed);
KERN_API int kern_dwconv2d_nchw8c_f32(const struct kern_dwconv2d_shape *s,
                                      const float *x, const float *packed,
                                      const float *bias, int act, float *y);
KERN_API int kern_dwconv2d_nchw8c_blocks_f32(
    const struct kern_dwconv2d_shape *s, size_t block0, size_t block1,
    const float *x, const float *packed, const float *bias, int act,
    float *y);

/* Transposed 2-D convolution (ONNX ConvTranspose, PyTorch
 * ConvTranspose2d; a 1-D one is in_h = kh = 1), float32, NCHW: the adjoint
 * of a convolution, each input pixel scattering its value times the
 * kernel into the output. x [batch][in_c][in_h][in_w]; w
 * [in_c][out_c/groups][kh][kw] (PyTorch's layout: input channel first);
 * y [batch][out_c][out_h][out_w] with
 *     out_h = (in_h - 1) * stride_h - pad_top - pad_bottom
 *             + dilation_h * (kh - 1) + out_pad_h + 1,
 * out_w alike. Input pixel (iy, ix) of channel ic, tap (ky, kx) and output
 * channel oc of ic's group add x * w[ic][oc - g*out_c/groups][ky][kx] to
 * y[oc][iy * stride_h + ky * dilation_h - pad_top][ix * stride_w + kx *
 * dilation_w - pad_left] when that lies inside y; padding crops the full
 * output, out_pad_h / out_pad_w (ONNX output_padding) add rows and columns
 * at the bottom and right that only the bias (and taps reaching them)
 * fill. Dilations 0 mean 1. out_pad must be smaller than the stride or the
 * dilation of its axis (PyTorch's rule; else KERN_E_RANGE). */
struct kern_conv_transpose2d_shape {
    size_t batch;
    size_t in_c, in_h, in_w;
    size_t out_c;
    size_t kh, kw;
    size_t stride_h, stride_w;
    size_t pad_top, pad_left, pad_bottom, pad_right;
    size_t out_pad_h, out_pad_w;
    size_t groups;
    size_t dilation_h, dilation_w; /* 0 or 1: undilated */
};

/* Output size. KERN_E_INVALID for NULL; KERN_E_SHAPE for a zero size or
 * stride, groups not dividing both channel counts, or padding that crops
 * the whole output; KERN_E_RANGE for an out_pad not below its stride or
 * dilation; KERN_E_OVERFLOW when a size overflows. */
KERN_API int kern_conv_transpose2d_out_hw(
    const struct kern_conv_transpose2d_shape *s, size_t *out_h,
    size_t *out_w);

/* Scratch of kern_conv_transpose2d_f32: one sample's group of columns,
 * (out_c/groups * kh * kw) x (in_h * in_w) floats; 0 for an invalid shape
 * or one whose size overflows. */
KERN_API size_t kern_conv_transpose2d_work_bytes(
    const struct kern_conv_transpose2d_shape *s);

/* Forward: y = bias[oc] (or 0 when bias is NULL) plus the scatter
 * described above. Computed per sample and group as a matrix product,
 * col[(o, ky, kx)][pixel] = sum over ic of w[ic][o][ky][kx] *
 * x[ic][pixel] (kern_sgemm, every SIMD path it has), then a col2im pass
 * that adds each row of col into the output rows it reaches (C, a row
 * run at a time; the compiler vectorises it along the row for stride 1).
 * work: kern_conv_transpose2d_work_bytes(s) bytes, or NULL to let the
 * function allocate it (KERN_E_NOMEM when that fails). y must not overlap
 * x or w. Accuracy: within about (in_c/groups * kh * kw + 1) *
 * FLT_EPSILON * (|bias| + sum of |w * x|) of the exact value per output.
 * Statuses: those of kern_conv_transpose2d_out_hw, KERN_E_INVALID for a
 * NULL x, w or y, KERN_E_NOMEM. */
KERN_API int kern_conv_transpose2d_f32(
    const struct kern_conv_transpose2d_shape *s, const float *x,
    const float *w, const float *bias, void *work, float *y);

/* 2-D pooling over NCHW with a kh x kw window, a stride per axis and zero
 * padding per side (asymmetric padding, as ONNX "pads" and TensorFlow's
 * "SAME" give): out_h = (in_h + pad_top + pad_bottom - kh) / stride_h + 1
 * (floor, PyTorch's ceil_mode=False), out_w alike with pad_left, pad_right
 * and kw. Every pad must be smaller than the window along its axis, so
 * that every window holds at least one real element (PyTorch's own rule,
 * pad <= k / 2, is stricter; ONNX allows more); else KERN_E_RANGE.
 * count_include_pad is average pooling's divisor: nonzero divides every
 * window by kh * kw (PyTorch's default), 0 by the number of its cells that
 * lie inside the input (ONNX's default); max pooling ignores it. */
struct kern_pool2d_shape {
    size_t batch, channels, in_h, in_w;
    size_t kh, kw, stride_h, stride_w;
    size_t pad_top, pad_left, pad_bottom, pad_right;
    int count_include_pad;
};

/* Output height and width of a pooling; status as kern_conv2d_out_hw, plus
 * KERN_E_RANGE for a pad not smaller than its window side. */
KERN_API int kern_pool2d_out_hw(const struct kern_pool2d_shape *s,
                                size_t *out_h, size_t *out_w);

/* Max pooling: padding never wins (it acts as -inf); among equal maxima
 * the first in row-major window order wins; NaN propagates. */
KERN_API int kern_maxpool2d_f32(const struct kern_pool2d_shape *s,
                                const float *x, float *y);

/* Backward of max pooling: grad_x (OVERWRITTEN, [batch][channels][in_h]
 * [in_w]) receives each dy at the position of its window's maximum (the one
 * kern_maxpool2d_f32 picks, recomputed from x); overlapping windows add. */
KERN_API int kern_maxpool2d_backward_f32(const struct kern_pool2d_shape *s,
                                         const float *x, const float *dy,
                                         float *grad_x);

/* Average pooling: every window sums its real elements in row-major order
 * from +0 and divides the sum by the divisor count_include_pad selects
 * (padding counts as zeros in the sum either way). */
KERN_API int kern_avgpool2d_f32(const struct kern_pool2d_shape *s,
                                const float *x, float *y);

/* Backward of average pooling: grad_x (OVERWRITTEN) gets dy / divisor at
 * each real element of each window. */
KERN_API int kern_avgpool2d_backward_f32(const struct kern_pool2d_shape *s,
                                         const float *dy, float *grad_x);

/* The pooling that closes a network, on a channel-blocked input: x is
 * NCHW8c, [batch][ceil(channels / 8)][in_h][in_w][8] (padding lanes
 * ignored), and the shape must give a 1 x 1 output (a window that covers
 * the input, as ResNet-8's, DS-CNN's and MobileNet's last pools), else
 * KERN_E_SHAPE. y is [batch][channels]: the NCHW output
 * [batch][channels][1][1], which is also its NCHW8c form when channels is
 * a multiple of 8, so the pool is where a blocked chain ends without a
 * transpose. Each channel gets the bits kern_maxpool2d_f32 and
 * kern_avgpool2d_f32 give on the NCHW form of x. Only 1 x 1 outputs: a
 * pooling inside a blocked chain is kern_maxpool2d_blocked_f32. Status
 * as kern_maxpool2d_f32, plus KERN_E_OVERFLOW when the blocked size
 * overflows. */
KERN_API int kern_maxpool2d_nchw8c_f32(const struct kern_pool2d_shape *s,
                                       const float *x, float *y);
KERN_API int kern_avgpool2d_nchw8c_f32(const struct kern_pool2d_shape *s,
                                       const float *x, float *y);

/* Pooling inside a channel-blocked chain: x is NCHW8c, [batch][ceil(
 * channels / 8)][in_h][in_w][8], and y the NCHW8c output [batch][ceil(
 * channels / 8)][out_h][out_w][8], any shape kern_maxpool2d_f32 and
 * kern_avgpool2d_f32 take. Each real channel gets the bits those give on
 * the NCHW form of x; a last block's padding lanes are pooled like the
 * others and carry no channel. Status as kern_maxpool2d_f32, plus
 * KERN_E_OVERFLOW when a blocked size overflows. */
KERN_API int kern_maxpool2d_blocked_f32(const struct kern_pool2d_shape *s,
                                        const float *x, float *y);
KERN_API int kern_avgpool2d_blocked_f32(const struct kern_pool2d_shape *s,
                                        const float *x, float *y);

/* Pooling with ceil_mode (PyTorch's and ONNX's): out = ceil((in + pad_lo
 * + pad_hi - k) / stride) + 1, less one when the last window would start
 * past the input and its leading padding ((out - 1) * stride >= in +
 * pad_lo, PyTorch's rule, which ONNX Runtime follows). kern_pool2d_shape
 * computes floor sizes; this gives *out and the padding *extra_hi to add
 * to pad_hi (pad_bottom or pad_right) so that its floor size is *out. The
 * sum pad_hi + *extra_hi stays below k (the last window starts inside the
 * input or the leading padding), as kern_pool2d_out_hw requires.
 *
 * With that padding, max pooling and average pooling with
 * count_include_pad 0 are exactly ceil_mode's. Average pooling with
 * count_include_pad nonzero divides by kh * kw, while PyTorch and ONNX
 * Runtime divide a window reaching into the extra rows by its cells
 * inside the padded input only: when *extra_hi > 0 on either axis, pad
 * the input explicitly (kern_pad_f32, zeros) and pool that with pads 0
 * (plus the extra) and count_include_pad 0, which is that divisor (what
 * PyTorch's exporter writes anyway: a Pad before AveragePool).
 * KERN_E_INVALID for NULL, KERN_E_SHAPE for a zero size or stride or a
 * window larger than the padded input, KERN_E_OVERFLOW. */
KERN_API int kern_pool2d_ceil_pad(size_t in, size_t k, size_t stride,
                                  size_t pad_lo, size_t pad_hi, size_t *out,
                                  size_t *extra_hi);

/* ---- spatial ----------------------------------------------------------- */
/*
 * Data movement on float32 tensors of rank 1 to KERN_TENSOR_MAX_RANK,
 * dense and row-major (shape[0] outermost): constant padding, a transpose
 * by a permutation, and resizing of NCHW images. Values are copied
 * exactly (resize's linear mode excepted). Statuses: KERN_E_INVALID for a
 * NULL pointer, KERN_E_SHAPE for a rank outside [1, KERN_TENSOR_MAX_RANK]
 * or a zero dimension, KERN_E_RANGE for an argument outside its domain,
 * KERN_E_OVERFLOW when an element count does not fit in size_t. y must not
 * overlap x.
 */
enum { KERN_TENSOR_MAX_RANK = 6 };

/* Constant padding (ONNX Pad, mode constant; PyTorch F.pad): y has
 * shape[i] + pads_begin[i] + pads_end[i] along axis i, x copied at offset
 * pads_begin, every other element `value`. An NCHW image padded per side
 * is rank 4 with begin {0, 0, top, left} and end {0, 0, bottom, right}.
 * Pads are not negative (a crop is a slice). */
KERN_API int kern_pad_f32(const size_t *shape, size_t ndim,
                          const size_t *pads_begin, const size_t *pads_end,
                          float value, const float *x, float *y);

/* Transpose (ONNX Transpose, numpy.transpose): y's axis i is x's axis
 * perm[i] (perm a permutation of 0 .. ndim - 1, else KERN_E_RANGE), so
 * y's shape is shape[perm[i]]. Axes of size 1 are dropped and axes that
 * stay adjacent and in order are merged first, so that ShuffleNet's
 * channel shuffle, [N][g][C/g][H][W] with perm {0, 2, 1, 3, 4}, is a
 * copy of whole H x W planes, and a permutation that swaps only the last
 * two (merged) axes is a batch of 2-D transposes done in cache tiles of
 * 8 x 8 (both C: the first is memcpy, the second a loop the compiler
 * vectorises); other permutations walk y in order reading x by strides. */
KERN_API int kern_transpose_f32(const size_t *shape, size_t ndim,
                                const size_t *perm, const float *x,
                                float *y);

/* Resize of NCHW images (ONNX Resize and Upsample, PyTorch interpolate):
 * `planes` = batch * channels planes of in_h x in_w to out_h x out_w.
 * Each output coordinate is mapped to the input (ONNX's
 * coordinate_transformation_mode), with scale = scale_h (or, when it is
 * 0, out_h / in_h), alike for w, in float arithmetic as ONNX Runtime:
 *   half_pixel          (o + 0.5) / scale - 0.5
 *   pytorch_half_pixel  the same, but 0 when the output length is 1
 *   align_corners       o * (in - 1) / (out - 1), 0 when out is 1
 *   asymmetric          o / scale
 * Nearest takes the input index the nearest_mode gives (round half
 * down, round half up, floor, ceil), clamped to [0, in - 1]; PyTorch's
 * nearest exports as asymmetric with floor. Linear clamps the coordinate
 * to [0, in - 1] and blends its two neighbours per axis (PyTorch's
 * bilinear, ONNX's linear): y = wy0 (wx0 a + wx1 b) + wy1 (wx0 c + wx1
 * d), each weight in [0, 1], within 2^-22 times the largest |x| of the
 * exact blend; each input row is blended along x once for the output
 * rows that read it. Nearest copies an output row that reads the same
 * input row as the one above it. kern_resize_f32 allocates the per-axis
 * index and weight tables and two blended rows (out_h + out_w entries
 * and 2 * out_w floats; KERN_E_NOMEM if that fails);
 * kern_resize_work_f32 takes them from the caller. KERN_E_RANGE
 * for an unknown mode or a scale that is not finite and > 0. */
enum kern_resize_mode {
    KERN_RESIZE_NEAREST = 0,
    KERN_RESIZE_LINEAR = 1,
};
enum kern_resize_coord {
    KERN_RESIZE_HALF_PIXEL = 0,
    KERN_RESIZE_PYTORCH_HALF_PIXEL = 1,
    KERN_RESIZE_ALIGN_CORNERS = 2,
    KERN_RESIZE_ASYMMETRIC = 3,
};
enum kern_resize_nearest {
    KERN_NEAREST_ROUND_PREFER_FLOOR = 0,
    KERN_NEAREST_ROUND_PREFER_CEIL = 1,
    KERN_NEAREST_FLOOR = 2,
    KERN_NEAREST_CEIL = 3,
};
struct kern_resize_shape {
    size_t planes, in_h, in_w, out_h, out_w;
    float scale_h, scale_w; /* 0: out / in */
    int mode;               /* kern_resize_mode */
    int coord;              /* kern_resize_coord */
    int nearest;            /* kern_resize_nearest (nearest mode only) */
};
KERN_API int kern_resize_f32(const struct kern_resize_shape *s,
                             const float *x, float *y);
/* The same with the tables and rows in the caller's work, at least
 * kern_resize_work_bytes(s) bytes aligned as a size_t (no allocation: an
 * executor lends its scratch). kern_resize_work_bytes() is 0 for a shape
 * kern_resize_f32 would refuse. */
KERN_API size_t kern_resize_work_bytes(const struct kern_resize_shape *s);
KERN_API int kern_resize_work_f32(const struct kern_resize_shape *s,
                                  const float *x, void *work, float *y);

/* One SGD step over n parameters: g' = g + weight_decay * w; with momentum
 * mu != 0: v = mu * v + g', w -= lr * v; with mu == 0: w -= lr * g' and
 * velocity may be NULL. Each operation is a separate float multiply or add
 * in that order. KERN_E_RANGE when lr, momentum or weight_decay is not
 * finite. */
KERN_API int kern_nn_sgd_f32(float *w, const float *g, float *velocity,
                             size_t n, float lr, float momentum,
                             float weight_decay);

/* One Adam step (Kingma and Ba, with PyTorch's bias correction) over n
 * parameters, step = 1 for the first:
 *     m = beta1 * m + (1 - beta1) * g
 *     v = beta2 * v + (1 - beta2) * g * g
 *     w -= (lr / (1 - beta1^step)) * (m / (sqrt(v) / sqrt(1 - beta2^step)
 *                                          + eps))
 * in float; 1 - beta, the step size and the bias corrections are computed
 * in double from the arguments and rounded to float once (PyTorch's way).
 * m and v (n floats each) start at zero and belong to the caller.
 * KERN_E_INVALID for NULL with n > 0; KERN_E_RANGE when lr is not finite,
 * a beta is outside [0, 1), eps is not finite and > 0, or step is 0. */
KERN_API int kern_nn_adam_f32(float *w, const float *g, float *m, float *v,
                              size_t n, double lr, double beta1, double beta2,
                              double eps, uint64_t step);

/* True when all n values are finite (no inf, no NaN); true for n == 0 and
 * false for x == NULL with n > 0. */
KERN_API bool kern_all_finite_f32(const float *x, size_t n);

/* x[i] *= s over n values (gradient unscaling: s = 1 / loss scale).
 * KERN_E_INVALID for NULL with n > 0. */
KERN_API int kern_scale_f32(float *x, size_t n, float s);

/* The dynamic loss scaler of mixed-precision training. Each step: compute
 * the loss times `scale`, backpropagate, unscale the gradients
 * (kern_scale_f32 with 1 / scale), check them (kern_all_finite_f32) and call
 * kern_loss_scaler_update, which says whether to apply the step:
 * - finite: good_steps += 1; when it reaches growth_interval, scale =
 *   min(max_scale, scale * growth_factor) and good_steps = 0; apply.
 * - inf/NaN: scale = max(min_scale, scale * backoff_factor), good_steps = 0,
 *   skipped_steps += 1; skip the step.
 * Fields may be read at any time; set them through kern_loss_scaler_config.
 */
struct kern_loss_scaler {
    float scale;             /* current loss scale */
    float min_scale;         /* lower bound, default 1 */
    float max_scale;         /* upper bound, default 65536 */
    float growth_factor;     /* default 2 */
    float backoff_factor;    /* default 0.5 */
    uint32_t growth_interval; /* finite steps before growth, default 2000 */
    uint32_t good_steps;      /* consecutive finite steps since a change */
    uint64_t skipped_steps;   /* steps skipped so far */
};

/* Defaults of TinyTorch's MixedPrecisionTrainer: scale 1024, bounds [1, 65536], x2 after 2000
 * consecutive finite steps, x0.5 on inf/NaN. */
KERN_API void kern_loss_scaler_init(struct kern_loss_scaler *s);

/* Every parameter: needs 0 < min_scale <= init_scale <= max_scale (all
 * finite), growth_factor >= 1, 0 < backoff_factor <= 1 and
 * growth_interval >= 1; else KERN_E_RANGE and *s untouched. */
KERN_API int kern_loss_scaler_config(struct kern_loss_scaler *s,
                                     float init_scale, float min_scale,
                                     float max_scale, float growth_factor,
                                     float backoff_factor,
                                     uint32_t growth_interval);

/* One step's verdict; returns true when the step should be applied. */
KERN_API bool kern_loss_scaler_update(struct kern_loss_scaler *s,
                                      bool grads_finite);

/* ---- matmul ------------------------------------------------------------ */

/* Flags of kern_sgemm and kern_matmul_nd (OR them together). */
enum kern_mm_flag {
    /* op(A) = A^T: A is stored k x m (row-major) instead of m x k. */
    KERN_MM_TRANS_A = 1u << 0,
    /* op(B) = B^T: B is stored n x k instead of k x n. */
    KERN_MM_TRANS_B = 1u << 1,
    /* C += op(A)·op(B) instead of C = op(A)·op(B) (e.g. gradient sums). */
    KERN_MM_ACCUMULATE = 1u << 2,
};

/* The most threads kern_set_threads accepts. */
#define KERN_MAX_THREADS 64

/* Single-precision matrix product, row-major:
 *
 *     C = op(A)·op(B)     or, with KERN_MM_ACCUMULATE,   C += op(A)·op(B)
 *
 * where op(A) is m x k, op(B) is k x n and C is m x n. Each matrix is read
 * with a leading dimension, the distance in elements between the starts of
 * two consecutive stored rows: A is stored m x k with lda >= k, or k x m
 * with lda >= m under KERN_MM_TRANS_A; B is stored k x n with ldb >= n, or
 * n x k with ldb >= k under KERN_MM_TRANS_B; C has ldc >= n. Without
 * KERN_MM_ACCUMULATE the prior contents of C are never read (NaN there does
 * not leak); k == 0 then sets C to zero. C must not overlap A or B.
 *
 * Results agree with the exact product to within about
 * k * FLT_EPSILON * max|a| * max|b| per element (summation order and fused
 * multiply-adds differ between instruction-set paths). Large products use
 * up to kern_get_threads() threads; the result does not depend on the
 * thread count.
 *
 * Pointers may be NULL only for a matrix with no elements. Returns KERN_OK;
 * KERN_E_INVALID for an unknown flag or a NULL matrix that has elements;
 * KERN_E_SHAPE when a leading dimension is smaller than its row;
 * KERN_E_OVERFLOW when a matrix's extent in bytes does not fit in size_t;
 * KERN_E_NOMEM when packing buffers cannot be allocated (C is then
 * unspecified). Thread-safe. */
KERN_API int kern_sgemm(unsigned flags, size_t m, size_t n, size_t k,
                        const float *a, size_t lda, const float *b,
                        size_t ldb, float *c, size_t ldc);

/* The shape of the batched product of kern_matmul_nd, with numpy.matmul
 * semantics for tensors of at least 2 dimensions: the last two dimensions
 * of A (m x k, or k x m under KERN_MM_TRANS_A) and of B (k x n, or n x k
 * under KERN_MM_TRANS_B) are matrices; the leading (batch) dimensions are
 * aligned from the right and broadcast (equal, or one of them is 1; a
 * missing dimension counts as 1). The result has max(a_ndim, b_ndim)
 * dimensions: the broadcast batch dimensions, then m, n.
 *
 * c_shape receives max(a_ndim, b_ndim) entries (the caller's array must
 * have room for them), *c_ndim their count, *c_elems (may be NULL) the
 * number of elements of C. On failure msg (may be NULL; msg_len bytes,
 * always NUL-terminated when msg_len > 0) receives a description such as
 * "inner dimensions differ: A is 3x4 (k=4), B is 5x6 (k=5)"; on success it
 * receives an empty string.
 *
 * Returns KERN_OK; KERN_E_INVALID for NULL shapes or outputs, or an unknown
 * flag; KERN_E_SHAPE for fewer than 2 dimensions, inner dimensions that
 * differ or batch dimensions that do not broadcast; KERN_E_OVERFLOW when
 * an element count or byte size of A, B or C does not fit in size_t. */
KERN_API int kern_matmul_nd_shape(unsigned flags, const size_t *a_shape,
                                  size_t a_ndim, const size_t *b_shape,
                                  size_t b_ndim, size_t *c_shape,
                                  size_t *c_ndim, size_t *c_elems,
                                  char *msg, size_t msg_len);

/* Batched product C[..] = op(A[..])·op(B[..]) (or += with
 * KERN_MM_ACCUMULATE) over dense row-major tensors, batch dimensions
 * broadcast as described at kern_matmul_nd_shape, which gives C's shape.
 * a and b hold the product of their shapes' elements, c holds *c_elems of
 * kern_matmul_nd_shape (NULL pointers are allowed only for empty tensors).
 * msg as for kern_matmul_nd_shape. Returns the status codes of
 * kern_matmul_nd_shape and of kern_sgemm. */
KERN_API int kern_matmul_nd(unsigned flags, const float *a,
                            const size_t *a_shape, size_t a_ndim,
                            const float *b, const size_t *b_shape,
                            size_t b_ndim, float *c, char *msg,
                            size_t msg_len);

/* Sets the number of threads large matrix products may use (process-wide;
 * default 1). Products under about eight million multiply-adds always run
 * on the calling thread; larger ones are split among up to n threads: the
 * caller's and up to n - 1 workers the library starts on first use, keeps
 * asleep between products and joins when it is unloaded. While one
 * caller's product uses the workers, other callers compute their own
 * blocks (same results). Returns KERN_OK, or KERN_E_RANGE unless
 * 1 <= n <= KERN_MAX_THREADS. Thread-safe. */
KERN_API int kern_set_threads(int n);

/* The thread count set by kern_set_threads (1 by default). */
KERN_API int kern_get_threads(void);

/* kern_sgemm on up to `threads` threads whatever the product's size (the
 * caller has judged that it pays; kern_sgemm itself keeps products under
 * its threshold on one thread) and whatever kern_set_threads says. The
 * product is split as kern_sgemm splits it, so the result equals the
 * one-thread product bit for bit. KERN_E_RANGE unless
 * 1 <= threads <= KERN_MAX_THREADS; otherwise kern_sgemm's statuses.
 * Thread-safe. */
KERN_API int kern_sgemm_threads(int threads, unsigned flags, size_t m,
                                size_t n, size_t k, const float *a,
                                size_t lda, const float *b, size_t ldb,
                                float *c, size_t ldc);

/* One part of a kern_parallel() call. */
typedef void (*kern_task_fn)(void *ctx, size_t part);

/* Calls fn(ctx, part) once for every part in [0, parts), concurrently:
 * part 0 on the calling thread, the others on the workers of
 * kern_set_threads' pool (started on first use). When another caller holds
 * the workers, every part runs on the calling thread, one after the other,
 * so fn must not wait for another part. Returns when all parts are done:
 * KERN_OK; KERN_E_INVALID for a NULL fn; KERN_E_RANGE unless
 * 1 <= parts <= KERN_MAX_THREADS. Thread-safe. */
KERN_API int kern_parallel(size_t parts, kern_task_fn fn, void *ctx);

/* One piece of a kern_parallel_pieces() call, run on the thread numbered
 * slot (0 the caller's, below the call's thread count): per-thread
 * scratch is indexed by slot, never by piece. */
typedef void (*kern_piece_fn)(void *ctx, size_t piece, unsigned slot);

/* Calls fn(ctx, piece, slot) once for every piece in [0, parts) on up to
 * `threads` threads (the caller's and threads - 1 workers of the pool),
 * piece 0 on the calling thread; each thread takes the next piece not yet
 * taken, so cutting a layer into more pieces than threads lets the others
 * go on when the scheduler holds one back. Once no piece is left to take,
 * the caller spins (up to 0.2 ms) for the pieces still running before it
 * sleeps. When another caller holds the workers, every piece runs on the
 * calling thread in order (slot 0).
 * Returns when all pieces are done: KERN_OK; KERN_E_INVALID for a NULL
 * fn; KERN_E_RANGE unless 1 <= threads <= KERN_MAX_THREADS and
 * 1 <= parts <= UINT32_MAX.
 * Thread-safe. */
KERN_API int kern_parallel_pieces(int threads, size_t parts,
                                  kern_piece_fn fn, void *ctx);

/* Wakes the pool's workers for `threads` threads (starting them if need
 * be) without giving them work: a worker spins a short while (0.2 ms)
 * after its last piece and then sleeps, and one woken from sleep takes
 * tens of microseconds to run (more in a virtual machine). A caller that
 * will split work soon (an executor at the start of a forward pass whose
 * first split layer comes later) calls this first, so that the wake-up
 * overlaps its own work. KERN_OK, nothing for threads 1; KERN_E_RANGE
 * unless 1 <= threads <= KERN_MAX_THREADS. Thread-safe. */
KERN_API int kern_parallel_wake(int threads);

/* ---- act --------------------------------------------------------------- */
/*
 * Elementwise activations over n floats, forward and backward.
 *
 * Forward functions write dst[i] = f(src[i]); dst may equal src (in place),
 * other overlaps are not allowed. Backward functions write
 * grad_in[i] = grad_out[i] * f'(...), where the derivative is taken from the
 * forward input x (relu, gelu) or from the forward output y (tanh, sigmoid),
 * as each declaration says; grad_in may equal grad_out or that array.
 *
 * Every function returns KERN_OK; KERN_E_INVALID when a pointer is NULL
 * (with n > 0); KERN_E_OVERFLOW when n * sizeof(float) does not fit in
 * size_t. n == 0 does nothing and accepts NULL pointers. NaN inputs give NaN
 * outputs (relu included); results are finite for every finite input.
 *
 * The C path (forced with KERN_CPU_MASK=0) uses libm and double precision;
 * the AVX2 and AVX-512 paths use their own polynomial approximations with
 * range reduction. Their errors against a double-precision evaluation of
 * each formula are bounded by the KERN_ACT_* figures below, which
 * tests/kernels/test_act.c checks on every path. Limits: tanh(+-inf) =
 * +-1, erf(+-inf) = +-1, sigmoid(-inf) = 0, sigmoid(+inf) = 1,
 * gelu(+inf) = +inf, gelu(-inf) = -0 (or +0).
 */

/* Error bounds in units in the last place (ulp) of the float result, met
 * by every path (tested over a dense sweep of [-10, 10] plus ranges out to
 * the limits). For the tanh-form GELU at x < 0 the result decays like
 * exp(-2|u|) with u = sqrt(2/pi) (x + 0.044715 x^3), and the SIMD paths
 * round u to float before the exponential, which costs |2u| 2^-24 of
 * relative error: there the bound grows with |u| and reads
 * KERN_ACT_MAX_ULP_GELU + KERN_ACT_GELU_ULP_PER_U * |2u| ulp (266 ulp at
 * x = -10, where gelu(x) is -7e-37; the most measured over every float in
 * [-12, 0] is 156 ulp, about 1.9e-5 relative, and 2.46 per unit of |2u|).
 * The erf form splits x^2 exactly and needs no such term (measured: 7 ulp
 * over every float in [-14.3, 0]). */
#define KERN_ACT_MAX_ULP_TANH 4
#define KERN_ACT_MAX_ULP_ERF 4
#define KERN_ACT_MAX_ULP_SIGMOID 4
#define KERN_ACT_MAX_ULP_GELU 4       /* tanh form: all x >= 0 */
#define KERN_ACT_GELU_ULP_PER_U 3     /* tanh form, x < 0: per unit of |2u| */
#define KERN_ACT_MAX_ULP_GELU_ERF 8   /* erf form: all x */
/* The ulp bounds hold for results of magnitude >= KERN_ACT_FLUSH_BELOW.
 * Below it the SIMD paths of tanh, erf, sigmoid, both GELUs and the GELU
 * derivatives may return +-0 (they run with the FPU's flush-to-zero and
 * denormals-are-zero modes, set and restored around each call, because a
 * subnormal operand costs x86 cores a ~20x slowdown of the whole vector):
 * the absolute error there stays below KERN_ACT_FLUSH_BELOW, and subnormal
 * inputs count as zero. The C path, relu and the relu, tanh and sigmoid
 * backward functions never flush. */
#define KERN_ACT_FLUSH_BELOW 0x1p-125f

/* tanh(x). */
KERN_API int kern_tanh_f32(float *dst, const float *src, size_t n);
/* erf(x). */
KERN_API int kern_erf_f32(float *dst, const float *src, size_t n);
/* 1 / (1 + exp(-x)). */
KERN_API int kern_sigmoid_f32(float *dst, const float *src, size_t n);
/* max(x, 0); relu(-0) = +0. Exact. */
KERN_API int kern_relu_f32(float *dst, const float *src, size_t n);

/* GELU, tanh form, fused (one pass, no temporaries):
 * 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))). */
KERN_API int kern_gelu_f32(float *dst, const float *src, size_t n);
/* GELU, erf form: 0.5 x (1 + erf(x / sqrt(2))) = x Phi(x). */
KERN_API int kern_gelu_erf_f32(float *dst, const float *src, size_t n);
/* TinyTorch's deliberately unfused GELU (tanh form), kept for comparison:
 * each numpy temporary (x^3, 0.044715 x^3, x + ..., sqrt(2/pi) * ...,
 * tanh, 1 + ..., x * ..., 0.5 * ...) is one full pass over memory.
 * scratch: caller-owned, n floats, overlapping neither dst nor src
 * (KERN_E_INVALID if it equals either); dst may equal src. Because it
 * evaluates 1 + tanh, its error for x < 0 is absolute (about 2^-24 |x|),
 * not relative like kern_gelu_f32's. */
KERN_API int kern_gelu_unfused_f32(float *dst, const float *src, size_t n,
                                   float *scratch);

/* The activations of the mobile and vision networks (ONNX Sigmoid, Tanh
 * and Erf are kern_sigmoid_f32, kern_tanh_f32 and kern_erf_f32 above).
 * Arguments, aliasing (dst may equal src, no other overlap) and statuses
 * as the activations above; a parameter outside its domain gives
 * KERN_E_RANGE, also with n == 0. NaN inputs give NaN outputs; finite
 * inputs give finite outputs unless alpha * x overflows (leaky_relu and
 * elu with |alpha| > 1 near FLT_MAX).
 *
 * Exact functions: hard_sigmoid, hard_swish, leaky_relu and clip are
 * computed one float operation at a time as written (a product and a sum
 * are two roundings, never one fused multiply-add), so every path gives
 * the same bits; they keep subnormals and never flush.
 *
 * Approximated functions: silu, softplus and elu, with the error bounds
 * below against the exact function (the C path evaluates each in double
 * and rounds once), tested on every path over every 61st float in
 * [-10, 10] and out to +-110, and at +-inf, NaN and the largest floats
 * (measured there: silu and softplus 3 ulp, elu 1 ulp).
 * Like the others they may flush results below KERN_ACT_FLUSH_BELOW to
 * +-0 on the SIMD paths. Limits: silu(-inf) = -0, silu(+inf) = +inf;
 * softplus(-inf) = 0, softplus(+inf) = +inf; elu(-inf) = -alpha. */
#define KERN_ACT_MAX_ULP_SILU 4
#define KERN_ACT_MAX_ULP_SOFTPLUS 4
#define KERN_ACT_MAX_ULP_ELU 2

/* hard_swish's fixed parameters (ONNX HardSwish, PyTorch's nn.Hardswish
 * and nn.Hardsigmoid): alpha 1/6 rounded to float, beta 0.5. */
#define KERN_HARD_SWISH_ALPHA (1.0f / 6.0f)
#define KERN_HARD_SWISH_BETA 0.5f

/* x sigmoid(x) = x / (1 + exp(-x)) (SiLU, "swish"). */
KERN_API int kern_silu_f32(float *dst, const float *src, size_t n);
/* log(1 + exp(x)), evaluated as max(x, 0) + log1p(exp(-|x|)): no
 * overflow for large x (the result is x there) and full relative accuracy
 * for large negative x (the result is about exp(x) there). */
KERN_API int kern_softplus_f32(float *dst, const float *src, size_t n);
/* ONNX HardSigmoid: max(0, min(1, alpha * x + beta)), the product and the
 * sum rounded separately; -0 stays -0 (ONNX's defaults are alpha 0.2,
 * beta 0.5; PyTorch's nn.Hardsigmoid is alpha KERN_HARD_SWISH_ALPHA, beta
 * 0.5). alpha and beta must be finite (else KERN_E_RANGE). Exact. */
KERN_API int kern_hard_sigmoid_f32(float *dst, const float *src, size_t n,
                                   float alpha, float beta);
/* ONNX HardSwish: x * hard_sigmoid(x) with KERN_HARD_SWISH_ALPHA and
 * KERN_HARD_SWISH_BETA, the bits of kern_hard_sigmoid_f32 times x.
 * PyTorch's nn.Hardswish computes x * relu6(x + 3) / 6, which rounds
 * differently: the two differ by the rounding of three float operations
 * (tested against PyTorch's formula in double). */
KERN_API int kern_hard_swish_f32(float *dst, const float *src, size_t n);
/* x < 0 ? alpha * x : x (ONNX LeakyRelu, default alpha 0.01); alpha must
 * be finite (else KERN_E_RANGE); any sign is allowed. Exact. */
KERN_API int kern_leaky_relu_f32(float *dst, const float *src, size_t n,
                                 float alpha);
/* x > 0 ? x : alpha * (exp(x) - 1) (ONNX Elu, default alpha 1), with
 * exp(x) - 1 computed without cancellation near 0; alpha must be finite
 * (else KERN_E_RANGE). Within KERN_ACT_MAX_ULP_ELU of the exact value. */
KERN_API int kern_elu_f32(float *dst, const float *src, size_t n,
                          float alpha);
/* min(max(x, lo), hi) (ONNX Clip; an absent bound is -INFINITY or
 * INFINITY). Any range: when lo > hi every output is hi, as numpy.clip
 * and ONNX give (a NaN x stays NaN). -0 is not raised to a bound of +0.
 * NaN bounds give
 * KERN_E_RANGE. Exact. */
KERN_API int kern_clip_f32(float *dst, const float *src, size_t n, float lo,
                           float hi);

/* grad_in = grad_out * (1 - y^2), from the forward output y = tanh(x). */
KERN_API int kern_tanh_backward_f32(float *grad_in, const float *grad_out,
                                    const float *y, size_t n);
/* grad_in = grad_out * y (1 - y), from the forward output y = sigmoid(x). */
KERN_API int kern_sigmoid_backward_f32(float *grad_in, const float *grad_out,
                                       const float *y, size_t n);
/* grad_in = x > 0 ? grad_out : 0, from the forward input x (the derivative
 * at 0 is taken as 0); NaN x gives NaN. */
KERN_API int kern_relu_backward_f32(float *grad_in, const float *grad_out,
                                    const float *x, size_t n);
/* grad_in = grad_out * gelu'(x), tanh form, from the forward input x:
 * gelu'(x) = s + 2 k x s (1 - s)(1 + 3 a x^2), s = sigmoid(2u). */
KERN_API int kern_gelu_backward_f32(float *grad_in, const float *grad_out,
                                    const float *x, size_t n);
/* grad_in = grad_out * (Phi(x) + x phi(x)), erf form, from the forward
 * input x (phi the standard normal density). */
KERN_API int kern_gelu_erf_backward_f32(float *grad_in,
                                        const float *grad_out,
                                        const float *x, size_t n);

/* ---- elem -------------------------------------------------------------- */
/*
 * Element-wise arithmetic with numpy's broadcasting (ONNX Add, Sub, Mul,
 * Div): shapes of rank 0 (a scalar) to KERN_BINARY_MAX_NDIM are aligned
 * from the right, a missing dimension counting as 1, and each pair of
 * extents must be equal or one of them 1; the output has the larger rank
 * and the larger extent of each pair (an operand of extent 1 is repeated,
 * as with a stride of 0). Tensors are dense and row-major.
 *
 * Every output is one IEEE float operation of the two operand elements
 * (a + b, a - b, a * b, a / b, rounded to nearest), so results are exact
 * in that sense and every path gives the same bits: division by zero
 * gives +-inf or NaN, NaN propagates, no flushing.
 *
 * Paths: equal shapes run as one row over every element, a scalar operand
 * (or one whose extents are all 1) as one row against a value held in a
 * register, and a per-channel operand such as squeeze-excite's
 * N x C x 1 x 1 gate against N x C x H x W as one such row per plane;
 * other broadcasts as rows along their innermost run (AVX2 and AVX-512
 * rows, chosen at run time).
 */
enum kern_binary_op {
    KERN_BINARY_ADD = 0, /* a + b */
    KERN_BINARY_SUB = 1, /* a - b */
    KERN_BINARY_MUL = 2, /* a * b */
    KERN_BINARY_DIV = 3, /* a / b */
};
#define KERN_BINARY_MAX_NDIM 4

/* The broadcast shape of a (a_ndim extents) and b: y_shape receives
 * max(a_ndim, b_ndim) extents (room for KERN_BINARY_MAX_NDIM suffices),
 * *y_ndim their count, *y_elems (may be NULL) their product. A shape
 * pointer may be NULL when its rank is 0. KERN_E_INVALID for a NULL
 * pointer otherwise; KERN_E_SHAPE for a rank above KERN_BINARY_MAX_NDIM,
 * a zero extent or extents that do not broadcast; KERN_E_OVERFLOW when a
 * tensor's bytes do not fit in size_t. */
KERN_API int kern_binary_shape(const size_t *a_shape, size_t a_ndim,
                               const size_t *b_shape, size_t b_ndim,
                               size_t *y_shape, size_t *y_ndim,
                               size_t *y_elems);

/* y = a op b with broadcasting; op is a kern_binary_op (else
 * KERN_E_RANGE); y holds the elements of kern_binary_shape's output.
 * Aliasing: y may be the same array as a or as b when that operand has
 * the output's shape (in place: the residual add, x * gate into x); no
 * other overlap (in particular not with a broadcast operand). Statuses
 * as kern_binary_shape, plus KERN_E_INVALID for a NULL a, b or y. */
KERN_API int kern_binary_f32(int op, const float *a, const size_t *a_shape,
                             size_t a_ndim, const float *b,
                             const size_t *b_shape, size_t b_ndim, float *y);

/* Squeeze-excite's per-channel scale on a channel-blocked tensor (NCHW8c,
 * see KERN_CBLOCK): x and y are [batch][ceil(channels / 8)][hw][8], scale
 * is [batch][channels] (the N x C x 1 x 1 gate), and y[b][c][i] =
 * x[b][c][i] * scale[b][c], one float multiply: the bits kern_binary_f32
 * gives on the NCHW form. The padding lanes of x are ignored (they may
 * hold anything) and those of y are written +0. y may equal x; no other
 * overlap. KERN_E_INVALID for NULL, KERN_E_SHAPE for a zero size,
 * KERN_E_OVERFLOW when the blocked size overflows. */
KERN_API int kern_channel_scale_nchw8c_f32(const float *x, size_t batch,
                                           size_t channels, size_t hw,
                                           const float *scale, float *y);

/* ---- cvt --------------------------------------------------------------- */
/*
 * Conversions between float and the 16-bit formats IEEE binary16 (fp16,
 * "half") and bfloat16 (bf16), stored as uint16_t bit patterns.
 *
 * Narrowing rounds to nearest, ties to even, whatever the FPU rounding mode:
 * fp16 keeps subnormals (down to 2^-24) and overflows to +-inf (anything of
 * magnitude >= 65520 rounds to inf); bf16 has float's exponent range, so
 * only values that round above its largest finite value overflow. A NaN
 * stays NaN with its sign, quietened (top mantissa bit set), keeping the top
 * payload bits that fit. Widening is exact: bf16 to float is a 16-bit shift
 * (NaN payloads included); fp16 to float quietens a signalling NaN, as the
 * F16C instruction does, and keeps its payload.
 * Every path gives identical bits (tested over all 2^32 floats).
 *
 * Array functions return KERN_OK; KERN_E_INVALID when a pointer is NULL
 * (with n > 0); KERN_E_OVERFLOW when n * sizeof(float) does not fit in
 * size_t. n == 0 does nothing. dst and src must not overlap.
 */
KERN_API int kern_f32_to_f16(uint16_t *dst, const float *src, size_t n);
KERN_API int kern_f16_to_f32(float *dst, const uint16_t *src, size_t n);
KERN_API int kern_f32_to_bf16(uint16_t *dst, const float *src, size_t n);
KERN_API int kern_bf16_to_f32(float *dst, const uint16_t *src, size_t n);

/* Scalar helpers with the same results as the array functions, portable C
 * (integer arithmetic only), inline so other libraries can use them in
 * their own loops. */
static inline uint32_t kern_cvt_f32_bits_(float f)
{
    union {
        float f;
        uint32_t u;
    } v;
    v.f = f;
    return v.u;
}

static inline float kern_cvt_bits_f32_(uint32_t u)
{
    union {
        float f;
        uint32_t u;
    } v;
    v.u = u;
    return v.f;
}

static inline uint16_t kern_f32_to_f16_1(float f)
{
    const uint32_t x = kern_cvt_f32_bits_(f);
    const uint32_t sign = (x >> 16) & 0x8000u;
    const uint32_t ax = x & 0x7fffffffu;
    if (ax > 0x7f800000u) { /* NaN: quiet, keep sign and top payload */
        return (uint16_t)(sign | 0x7e00u | ((ax >> 13) & 0x3ffu));
    }
    if (ax >= 0x477ff000u) { /* >= 65520 (incl. inf): overflow to inf */
        return (uint16_t)(sign | 0x7c00u);
    }
    if (ax < 0x38800000u) { /* below 2^-14: fp16 subnormal or zero */
        if (ax < 0x33000000u) { /* <= 2^-25 rounds to zero (tie to even) */
            return (uint16_t)sign;
        }
        const uint32_t e = ax >> 23;             /* 102 .. 112 */
        const uint32_t m = (ax & 0x7fffffu) | 0x800000u;
        const uint32_t shift = 126u - e;         /* 14 .. 24 */
        uint32_t h = m >> shift;
        const uint32_t rem = m & ((1u << shift) - 1u);
        const uint32_t half = 1u << (shift - 1u);
        if (rem > half || (rem == half && (h & 1u))) {
            h++;
        }
        return (uint16_t)(sign | h);
    }
    /* Normal: rebias (127 -> 15) and round the 13 dropped bits; a carry
     * into the exponent is the correct result (up to inf at 65520). */
    const uint32_t r = ax - 0x38000000u;
    const uint32_t h = (r + 0x0fffu + ((r >> 13) & 1u)) >> 13;
    return (uint16_t)(sign | h);
}

static inline float kern_f16_to_f32_1(uint16_t h)
{
    const uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    const uint32_t e = (h >> 10) & 0x1fu;
    uint32_t m = h & 0x3ffu;
    if (e == 0x1fu) { /* inf, or NaN (quietened) */
        return kern_cvt_bits_f32_(sign | 0x7f800000u |
                                  (m ? (0x400000u | (m << 13)) : 0u));
    }
    if (e != 0) {
        return kern_cvt_bits_f32_(sign | ((e + 112u) << 23) | (m << 13));
    }
    if (m == 0) {
        return kern_cvt_bits_f32_(sign);
    }
    /* Subnormal: normalise m * 2^-24. */
    uint32_t ef = 113;
    while (!(m & 0x400u)) {
        m <<= 1;
        ef--;
    }
    return kern_cvt_bits_f32_(sign | (ef << 23) | ((m & 0x3ffu) << 13));
}

static inline uint16_t kern_f32_to_bf16_1(float f)
{
    const uint32_t x = kern_cvt_f32_bits_(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) { /* NaN */
        return (uint16_t)((x >> 16) | 0x0040u);
    }
    return (uint16_t)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

static inline float kern_bf16_to_f32_1(uint16_t b)
{
    return kern_cvt_bits_f32_((uint32_t)b << 16);
}

#ifdef __cplusplus
}
#endif

#endif /* EDGEFIT_KERNELS_H */
