/* The SIMD activations, written once over a small vector vocabulary that
 * act_avx2.c (8 lanes) and act_avx512.c (16 lanes) define before including
 * this file: V (a vector of floats), M (a lane mask), VL (lanes), vset,
 * vadd, vsub, vmul, vfma (a*b + c), vabs, vnegabs (-|a|), vnegabs_min(a, c)
 * (-min(|a|, c), NaN kept), vcopysign, vmax_keepnan(c, a) (max that
 * returns a when a is NaN), vmin_keepnan, vlt, vge, vgt, vgt_or_nan,
 * vsel(m, a, b) (b where m is set, a elsewhere), vand_mask(m, a), vdiv
 * (correctly rounded), vscale2(p, n, t) (p * 2^n, n integral, t = n +
 * 0x1.8p23 from the reduction, subnormal results included) and
 * vscale2_pair (two products with one n), vload, vstore, vload_tail,
 * vstore_tail, and ACT_FN(name) naming the exported function; with
 * ACT_HAVE_FTZ, its own ftz_enter/ftz_leave (below; x86's MXCSR else). *
 * Approximations (coefficients fitted for this file by a weighted minimax
 * fit in long double, fixing them to float one at a time from the lowest
 * and refitting the rest, so rounding them costs little):
 *   exp(r), |r| <= ln2/2: 1 + r + r^2 q(r), q of degree 4 (rel. 3e-9);
 *   tanh(x), |x| < 0.625: x + x^3 q(x^2), q of degree 4 (rel. 4e-9); above,
 *     (1 - e)/(1 + e) with e = exp(-2|x|);
 *   erf(x), |x| < 0.875: x q(x^2), q of degree 5 (rel. 9e-9); above,
 *     erfc(x) = t exp(-x^2 + P(t)), t = 2/(2 + x), P of degree 9 on
 *     [0.875, 10.1] (abs. 7e-10 in the exponent), with x^2 split exactly
 *     into hi + lo by an FMA so large arguments keep their relative
 *     accuracy;
 *   sigmoid and GELU go through e = exp(-|.|) <= 1, which never overflows,
 *     and pick e/(1 + e) or 1/(1 + e) by sign, so tiny results for negative
 *     inputs keep relative accuracy instead of cancelling in 1 + tanh. */

#define LOG2E 0x1.715476p+0f
#define LN2_HI 0x1.62e430p-1f /* ln2 = LN2_HI + LN2_LO */
#define LN2_LO -0x1.05c610p-29f
#define LN2_HI15 0x1.62e4p-1f /* ln2 = LN2_HI15 + LN2_REST */
#define LN2_REST 0x1.7f7d1cp-20f
#define MAGIC 0x1.8p23f
/* 2 sqrt(2/pi), 2 sqrt(2/pi) 0.044715, 6 sqrt(2/pi) 0.044715. */
#define GELU_C1 0x1.988454p+0f
#define GELU_C2 0x1.2444f2p-4f
#define GELU_C3 0x1.b6676cp-3f
/* The same times log2(e): 2 sqrt(2/pi) log2(e), 2 sqrt(2/pi) 0.044715
 * log2(e). */
#define GELU_C1L 0x1.26aec2p+1f
#define GELU_C2L 0x1.a5a7d0p-4f
#define INV_SQRT2 0x1.6a09e6p-1f
#define INV_SQRT_2PI 0x1.988454p-2f

/* exp(y + c) for y + c <= 0 (NaN propagates): c (|c| < 2) is added after
 * the range reduction, so y can carry an exact x^2 term. y is clamped at
 * -104, where exp(-104 + c) already rounds to zero. */
static inline V exp_neg2(V y, V c)
{
    y = vmax_keepnan(vset(-104.0f), y);
    const V s = vadd(y, c);
    const V t = vfma(s, vset(LOG2E), vset(MAGIC));
    const V n = vsub(t, vset(MAGIC));
    /* ln2 = LN2_HI15 + LN2_REST with LN2_HI15 of 15 bits, so n LN2_HI15 is
     * exact and, for |y| >= 32, so is y - n LN2_HI15 (an integer multiple
     * of y's ulp below 2): c is then added to an exact value and rounded
     * once near r's final size, instead of after y - n ln2 (of size |c|). */
    V r = vfma(n, vset(-LN2_HI15), y);
    r = vadd(r, c);
    r = vfma(n, vset(-LN2_REST), r);
    V q = vfma(vset(0x1.6a5234p-10f), r, vset(0x1.12396cp-7f));
    q = vfma(q, r, vset(0x1.5558aap-5f));
    q = vfma(q, r, vset(0x1.555492p-3f));
    q = vfma(q, r, vset(0x1.fffffcp-2f));
    const V p = vadd(vfma(vmul(r, r), q, r), vset(1.0f));
    return vscale2(p, n, t);
}

/* exp(y) for y <= 0, subnormal results included; exp(-104) is below half
 * the smallest subnormal, so clamping there gives exactly 0 below it. */
/* exp(y) - 1 = 2^n (1 + pm1) - 1 for y <= 0 (clamped at -104): returns
 * pm1 = exp(r) - 1 = r + r^2 q(r), |r| <= ln2/2, with n and t for
 * vscale2. */
static inline V expm1_parts(V y, V *n, V *t)
{
    const V s = vmax_keepnan(vset(-104.0f), y);
    *t = vfma(s, vset(LOG2E), vset(MAGIC));
    *n = vsub(*t, vset(MAGIC));
    V r = vfma(*n, vset(-LN2_HI), s);
    r = vfma(*n, vset(-LN2_LO), r);
    V q = vfma(vset(0x1.6a5234p-10f), r, vset(0x1.12396cp-7f));
    q = vfma(q, r, vset(0x1.5558aap-5f));
    q = vfma(q, r, vset(0x1.555492p-3f));
    q = vfma(q, r, vset(0x1.fffffcp-2f));
    return vfma(vmul(r, r), q, r);
}

static inline V exp_neg(V y)
{
    V n, t;
    const V p = vadd(expm1_parts(y, &n, &t), vset(1.0f));
    return vscale2(p, n, t);
}

/* exp(y) - 1 for y <= 0 as 2^n pm1 + (2^n - 1): both terms are exact
 * scalings (2^n - 1 is exact for n >= -24 and rounds once below), so the
 * only rounding error beyond pm1's is the final addition, and there is no
 * cancellation of exp(y) against 1 near y = 0 (where n = 0 and the result
 * is pm1 itself). */
static inline V expm1_neg(V y)
{
    V n, t;
    const V pm1 = expm1_parts(y, &n, &t);
    V s, sp;
    vscale2_pair(vset(1.0f), pm1, n, t, &s, &sp);
    return vadd(sp, vsub(s, vset(1.0f)));
}

/* 2^s for -160 <= s <= 0 (the caller clamps), for the fused GELU, as
 * p 2^n: s = n + f with n = round(s) and f = s - n exact, p = 2^f =
 * 1 + f q(f) with q of degree 4 on [-1/2, 1/2] (rel. 9e-8). t is what
 * vscale2 needs besides n. */
static inline V exp2_parts(V s, V *n, V *t)
{
#ifdef ACT_HAVE_REDUCE
    const V f = vreduce(s);
    *n = vsub(s, f);
    *t = *n;
#else
    *t = vadd(s, vset(MAGIC));
    *n = vsub(*t, vset(MAGIC));
    const V f = vsub(s, *n);
#endif
    V q = vfma(vset(0x1.5bda58p-10f), f, vset(0x1.3ce8aep-7f));
    q = vfma(q, f, vset(0x1.c6b6d8p-5f));
    q = vfma(q, f, vset(0x1.ebf9c2p-3f));
    q = vfma(q, f, vset(0x1.62e42ap-1f));
    return vfma(q, f, vset(1.0f));
}

static inline V tanh_v(V x)
{
    const V ax = vabs(x);
    const V x2 = vmul(x, x);
    V q = vfma(vset(-0x1.750ce4p-8f), x2, vset(0x1.51f8cep-6f));
    q = vfma(q, x2, vset(-0x1.b835a4p-5f));
    q = vfma(q, x2, vset(0x1.1106f6p-3f));
    q = vfma(q, x2, vset(-0x1.555532p-2f));
    /* On |x| so that tanh(-0) = -0 after the final copysign. */
    const V small = vfma(vmul(ax, x2), q, ax);
    const V e = exp_neg(vmul(vset(-2.0f), ax));
    const V big = vdiv(vsub(vset(1.0f), e), vadd(vset(1.0f), e));
    return vcopysign(vsel(vlt(ax, vset(0.625f)), big, small), x);
}

/* m 0.5 erfc(a) for 0.875 <= a <= 10.1 given a2h + a2l = a^2 exactly (the
 * callers clamp a at 10.1, past which erfc is below every subnormal). */
static inline V half_erfc_big(V a, V a2h, V a2l, V m)
{
    const V t = vdiv(vset(2.0f), vadd(vset(2.0f), a));
    V p = vfma(vset(0x1.c7af26p-3f), t, vset(-0x1.135912p+0f));
    p = vfma(p, t, vset(0x1.00dfd4p+1f));
    p = vfma(p, t, vset(-0x1.b746b2p+0f));
    p = vfma(p, t, vset(0x1.578d7ap-1f));
    p = vfma(p, t, vset(-0x1.679560p-2f));
    p = vfma(p, t, vset(0x1.1e2dcep-3f));
    p = vfma(p, t, vset(0x1.784078p-2f));
    p = vfma(p, t, vset(0x1.002610p+0f));
    p = vfma(p, t, vset(-0x1.43f9e0p+0f));
    const V e = exp_neg2(vsub(vset(0.0f), a2h), vsub(p, a2l));
    /* m 0.5 t first: with FTZ, only a product below FLT_MIN flushes. */
    return vmul(vmul(m, vmul(vset(0.5f), t)), e);
}

/* erf(a) / a for |a| < 0.875, as a polynomial in a^2. */
static inline V erf_small_q(V a2)
{
    V q = vfma(vset(-0x1.453b02p-11f), a2, vset(0x1.49ca14p-8f));
    q = vfma(q, a2, vset(-0x1.b6f38ep-6f));
    q = vfma(q, a2, vset(0x1.ce211ep-4f));
    q = vfma(q, a2, vset(-0x1.81270cp-2f));
    return vfma(q, a2, vset(0x1.20dd74p+0f));
}

static inline V erf_v(V x)
{
    const V ax = vmin_keepnan(vset(10.1f), vabs(x));
    const V a2h = vmul(ax, ax);
    const V a2l = vfma(ax, ax, vsub(vset(0.0f), a2h));
    const V small = vmul(ax, erf_small_q(a2h));
    const V big =
        vsub(vset(1.0f), half_erfc_big(ax, a2h, a2l, vset(2.0f)));
    return vcopysign(vsel(vlt(ax, vset(0.875f)), big, small), x);
}

static inline V sigmoid_v(V x)
{
    const V e = exp_neg(vnegabs(x));
    const V num = vsel(vge(x, vset(0.0f)), e, vset(1.0f));
    return vdiv(num, vadd(vset(1.0f), e));
}

/* x sigmoid(x): x / (1 + e) for x >= 0 and x e / (1 + e) for x < 0, e =
 * exp(-|x|). As in gelu_v, x e is scaled from x p, so that it does not
 * flush with e (e is subnormal from x = -87.3, x e only from x = -92).
 * Below x = -104, where expm1_parts clamps its argument, x e would be x
 * e^-104 (a subnormal, and -inf * 0 = NaN at -inf) instead of x e^x,
 * which is below 2^-142: the result there is -0 by selection, not by
 * relying on FTZ to flush it (valgrind, for one, ignores MXCSR's FTZ). */
static inline V silu_v(V x)
{
    V n, t;
    const V p = vadd(expm1_parts(vnegabs(x), &n, &t), vset(1.0f));
    V e, xe;
    vscale2_pair(p, vmul(x, p), n, t, &e, &xe);
    const V num = vsel(vlt(x, vset(0.0f)), x, xe);
    const V res = vdiv(num, vadd(vset(1.0f), e));
    return vsel(vlt(x, vset(-104.0f)), res, vset(-0.0f));
}

/* log(1 + e) for 0 <= e <= 1 as 2 atanh(s), s = e / (2 + e) <= 1/3:
 * 2 s (1 + s^2/3 + s^4/5 + ... + s^14/15), the Taylor series cut where
 * the next term, s^16/17 <= 2.3e-9 relative, is far below float's 6e-8.
 * Small e keeps its relative accuracy (the result is 2 s (1 + ...)). */
static inline V log1p_unit(V e)
{
    const V s = vdiv(e, vadd(vset(2.0f), e));
    const V z = vmul(s, s);
    V q = vfma(vset(1.0f / 15.0f), z, vset(1.0f / 13.0f));
    q = vfma(q, z, vset(1.0f / 11.0f));
    q = vfma(q, z, vset(1.0f / 9.0f));
    q = vfma(q, z, vset(1.0f / 7.0f));
    q = vfma(q, z, vset(1.0f / 5.0f));
    q = vfma(q, z, vset(1.0f / 3.0f));
    const V s2 = vadd(s, s);
    return vfma(vmul(s2, z), q, s2);
}

/* max(x, 0) + log1p(exp(-|x|)); NaN stays NaN through the max. */
static inline V softplus_v(V x)
{
    const V e = exp_neg(vnegabs(x));
    return vadd(vmax_keepnan(vset(0.0f), x), log1p_unit(e));
}

/* The exact activations, operation for operation as act.c's C references
 * (one rounding per operation, no fused multiply-add): maxps/minps return
 * their second operand on NaN and on equal operands, which is how the C
 * comparisons treat NaN and -0. */
static inline V hard_sigmoid_v(V x, V a, V b)
{
    const V t = vadd(vmul(x, a), b);
    return vmax_keepnan(vset(0.0f), vmin_keepnan(vset(1.0f), t));
}

static inline V hard_swish_v(V x)
{
    return vmul(x, hard_sigmoid_v(x, vset(KERN_HARD_SWISH_ALPHA),
                                  vset(KERN_HARD_SWISH_BETA)));
}

static inline V leaky_relu_v(V x, V a, V b)
{
    (void)b;
    return vsel(vlt(x, vset(0.0f)), x, vmul(x, a));
}

/* x > 0 ? x : a expm1(x); expm1's argument is min(x, 0), NaN kept. */
static inline V elu_v(V x, V a, V b)
{
    (void)b;
    const V em1 = expm1_neg(vmin_keepnan(vset(0.0f), x));
    return vsel(vgt(x, vset(0.0f)), vmul(a, em1), x);
}

static inline V clip_v(V x, V lo, V hi)
{
    return vmin_keepnan(hi, vmax_keepnan(lo, x));
}

static inline V relu_v(V x)
{
    return vand_mask(vgt_or_nan(x, vset(0.0f)), x);
}

/* x sigmoid(2u), 2u = x (C1 + C2 x^2): x / (1 + e) for x >= 0 and
 * x e / (1 + e) for x < 0, with e = exp(-|2u|) = 2^-|w|, w = 2u log2(e)
 * (log2(e) folded into the constants). About 20 vector operations per
 * vector, the budget that keeps GELU near memory speed. */
static inline V gelu_v(V x)
{
    /* Below -20, GELU is far under FLT_MIN: clamping there makes x e of
     * x = -inf -0 rather than -inf * 0 = NaN. The exponent is clamped at
     * -160, not -152: then |x| 2^-160 <= 20 2^-160 rounds to 0 whether or
     * not FTZ is on (20 2^-152 would be the subnormal -2^-148 without it,
     * as under valgrind, which ignores MXCSR's FTZ). */
    x = vmax_keepnan(vset(-20.0f), x);
    const V x2 = vmul(x, x);
    const V w = vmul(x, vfma(vset(GELU_C2L), x2, vset(GELU_C1L)));
    V n, t;
    const V p = exp2_parts(vnegabs_min(w, 160.0f), &n, &t);
    /* x e is scaled from x p, not formed from e: e underflows (and is
     * flushed) from x = -10.35, x e only from x = -10.4. */
    V e, xe;
    vscale2_pair(p, vmul(x, p), n, t, &e, &xe);
    const V num = vsel(vlt(x, vset(0.0f)), x, xe);
    return vdiv(num, vadd(vset(1.0f), e));
}

/* m Phi(x) for the erf form, |x| <= 14.28 (callers clamp), with
 * x^2 = x2h + x2l exactly. */
static inline V phi_v(V x, V x2h, V x2l, V m)
{
    const V z = vmul(x, vset(INV_SQRT2));
    const V az = vabs(z);
    /* z^2 = x^2 / 2 exactly; z itself is only used where its rounding
     * does not matter (the polynomial variable t). */
    const V h = half_erfc_big(az, vmul(vset(0.5f), x2h),
                              vmul(vset(0.5f), x2l), m);
    const V big = vsel(vlt(x, vset(0.0f)), vsub(m, h), h);
    const V half_m = vmul(vset(0.5f), m);
    const V small = vfma(vmul(half_m, z), erf_small_q(vmul(z, z)), half_m);
    return vsel(vlt(az, vset(0.875f)), big, small);
}

/* |x| clamped to 14.28 (|z| <= 10.1) where Phi is 0 or 1 in float. */
static inline V clamp_phi_arg(V x)
{
    return vmax_keepnan(vset(-14.28f), vmin_keepnan(vset(14.28f), x));
}

static inline V gelu_erf_v(V x)
{
    const V xc = clamp_phi_arg(x);
    const V x2h = vmul(xc, xc);
    const V x2l = vfma(xc, xc, vsub(vset(0.0f), x2h));
    const V res = phi_v(xc, x2h, x2l, xc);
    /* Past |x| = 14.2, Phi is 0 or 1 in float: gelu is -0 or x. */
    const V lim = vsel(vlt(x, vset(0.0f)), x, vset(-0.0f));
    return vsel(vgt(vabs(x), vset(14.2f)), res, lim);
}

static inline V gelu_grad_v(V x)
{
    const V x2 = vmul(x, x);
    const V v = vmul(x, vfma(vset(GELU_C2), x2, vset(GELU_C1)));
    const V e = exp_neg(vnegabs(v));
    const V r = vdiv(vset(1.0f), vadd(vset(1.0f), e));
    const V er = vmul(e, r);
    const M pos = vge(x, vset(0.0f));
    const V s = vsel(pos, er, r);
    const V s1 = vsel(pos, r, er);
    const V w = vfma(vset(GELU_C3), x2, vset(GELU_C1));
    const V g = vfma(s, vmul(vmul(x, s1), w), s);
    /* Past |x| = 20 the derivative is 1 or 0 to float precision; inf * 0
     * would be NaN there. */
    const V lim = vsel(pos, vset(0.0f), vset(1.0f));
    return vsel(vgt(vabs(x), vset(20.0f)), g, lim);
}

static inline V gelu_erf_grad_v(V x)
{
    x = clamp_phi_arg(x);
    const V x2h = vmul(x, x);
    const V x2l = vfma(x, x, vsub(vset(0.0f), x2h));
    const V ph = phi_v(x, x2h, x2l, vset(1.0f));
    const V dens = exp_neg2(vmul(vset(-0.5f), x2h), vmul(vset(-0.5f), x2l));
    const V g = vfma(vmul(x, vset(INV_SQRT_2PI)), dens, ph);
    const V lim = vsel(vge(x, vset(0.0f)), vset(0.0f), vset(1.0f));
    return vsel(vgt(vabs(x), vset(14.2f)), g, lim);
}

static inline V tanh_bwd_v(V go, V y)
{
    return vmul(go, vmul(vsub(vset(1.0f), y), vadd(vset(1.0f), y)));
}

static inline V sigmoid_bwd_v(V go, V y)
{
    return vmul(go, vmul(y, vsub(vset(1.0f), y)));
}

static inline V relu_bwd_v(V go, V x)
{
    const V nanx = vand_mask(vgt_or_nan(x, vset(0.0f)), x);
    return vsel(vgt(x, vset(0.0f)), nanx, go);
}

static inline V gelu_bwd_v(V go, V x)
{
    return vmul(go, gelu_grad_v(x));
}

static inline V gelu_erf_bwd_v(V go, V x)
{
    return vmul(go, gelu_erf_grad_v(x));
}

/* Functions that go through exp run with MXCSR.FTZ and DAZ set (and the
 * caller's MXCSR restored): without them every vector holding a lane whose
 * exp or result is subnormal (GELU below x = -10.4, sigmoid below -87)
 * takes microcode assists costing ~20x the whole vector. Results below
 * FLT_MIN in magnitude become zero and subnormal inputs read as zero, an
 * absolute error below 2^-126. The exact functions (relu, the backward of
 * relu, tanh and sigmoid) leave MXCSR alone. */
#ifndef ACT_HAVE_FTZ
static inline unsigned ftz_enter(void)
{
    const unsigned csr = _mm_getcsr();
    _mm_setcsr(csr | 0x8040u); /* FTZ (bit 15) | DAZ (bit 6) */
    return csr;
}

static inline void ftz_leave(unsigned csr)
{
    _mm_setcsr(csr);
}
#endif

#define ACT_UNARY(name, op, ftz)                                             \
    void ACT_FN(name)(float *dst, const float *src, size_t n)                \
    {                                                                        \
        const unsigned csr = ftz ? ftz_enter() : 0;                          \
        size_t i = 0;                                                        \
        for (; i + VL <= n; i += VL) {                                       \
            vstore(dst + i, op(vload(src + i)));                             \
        }                                                                    \
        if (i < n) {                                                         \
            vstore_tail(dst + i, op(vload_tail(src + i, n - i)), n - i);     \
        }                                                                    \
        if (ftz) {                                                           \
            ftz_leave(csr);                                                  \
        }                                                                    \
    }

#define ACT_PARAM(name, op, ftz)                                             \
    void ACT_FN(name)(float *dst, const float *src, size_t n, float a,       \
                      float b)                                               \
    {                                                                        \
        const unsigned csr = ftz ? ftz_enter() : 0;                          \
        const V va = vset(a), vb = vset(b);                                  \
        size_t i = 0;                                                        \
        for (; i + VL <= n; i += VL) {                                       \
            vstore(dst + i, op(vload(src + i), va, vb));                     \
        }                                                                    \
        if (i < n) {                                                         \
            vstore_tail(dst + i, op(vload_tail(src + i, n - i), va, vb),     \
                        n - i);                                              \
        }                                                                    \
        if (ftz) {                                                           \
            ftz_leave(csr);                                                  \
        }                                                                    \
    }

#define ACT_BINARY(name, op, ftz)                                            \
    void ACT_FN(name)(float *gi, const float *go, const float *v, size_t n)  \
    {                                                                        \
        const unsigned csr = ftz ? ftz_enter() : 0;                          \
        size_t i = 0;                                                        \
        for (; i + VL <= n; i += VL) {                                       \
            vstore(gi + i, op(vload(go + i), vload(v + i)));                 \
        }                                                                    \
        if (i < n) {                                                         \
            const size_t rest = n - i;                                       \
            vstore_tail(gi + i,                                              \
                        op(vload_tail(go + i, rest), vload_tail(v + i, rest)), \
                        rest);                                               \
        }                                                                    \
        if (ftz) {                                                           \
            ftz_leave(csr);                                                  \
        }                                                                    \
    }

ACT_UNARY(tanh_f32, tanh_v, 1)
ACT_UNARY(erf_f32, erf_v, 1)
ACT_UNARY(sigmoid_f32, sigmoid_v, 1)
ACT_UNARY(relu_f32, relu_v, 0)
ACT_UNARY(gelu_f32, gelu_v, 1)
ACT_UNARY(gelu_erf_f32, gelu_erf_v, 1)
ACT_BINARY(tanh_backward_f32, tanh_bwd_v, 0)
ACT_BINARY(sigmoid_backward_f32, sigmoid_bwd_v, 0)
ACT_BINARY(relu_backward_f32, relu_bwd_v, 0)
ACT_BINARY(gelu_backward_f32, gelu_bwd_v, 1)
ACT_BINARY(gelu_erf_backward_f32, gelu_erf_bwd_v, 1)
ACT_UNARY(silu_f32, silu_v, 1)
ACT_UNARY(hard_swish_f32, hard_swish_v, 0)
ACT_UNARY(softplus_f32, softplus_v, 1)
ACT_PARAM(hard_sigmoid_f32, hard_sigmoid_v, 0)
ACT_PARAM(leaky_relu_f32, leaky_relu_v, 0)
ACT_PARAM(elu_f32, elu_v, 1)
ACT_PARAM(clip_f32, clip_v, 0)
