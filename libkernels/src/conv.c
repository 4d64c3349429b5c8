/* Convolution: the C reference, the lowering functions (im2col, col2im),
 * the backward pass, the GEMM paths' scratch layout, the dispatch and the
 * public wrappers. The reference is the definition written out, one output
 * at a time with the bounds tested per tap; the AVX2 paths are in
 * src/x86/conv_avx2.c and, for the int8 lowering, src/x86/im2col_s8_avx2.c. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conv.h"
#include "nn.h"
#include "alloc_rec.h" /* last: it wraps malloc and co. */

/* The reference, weights read raw ([out_c][K]) or packed ([group][block
 * of KERN_CONV_OCB channels][K][KERN_CONV_OCB]), activations in the
 * layouts il (x) and ol (y); `packed` is a constant in each caller, and
 * so are the dilations dh, dw of an undilated shape (1: the loop of the
 * undilated reference, with no multiply per tap). Output pixels [pa, pb)
 * of each plane; a blocked y gets zeros in the lanes past out_c. */
static inline __attribute__((always_inline)) void
conv_ref(const struct kern_conv2d_shape *s, size_t out_h, size_t out_w,
         int il, int ol, const float *x, const float *w, bool packed,
         const float *bias, int act, size_t dh, size_t dw, float *y,
         size_t pa, size_t pb)
{
    const size_t icg = s->in_c / s->groups, ocg = s->out_c / s->groups;
    const size_t kh = s->kh, kw = s->kw, ih = s->in_h, iw = s->in_w;
    const size_t sh = s->stride_h, sw = s->stride_w;
    const size_t pt = s->pad_top, pl = s->pad_left, K = icg * kh * kw;
    const size_t nb = (ocg + KERN_CONV_OCB - 1) / KERN_CONV_OCB;
    const size_t hw_in = ih * iw, hw_out = out_h * out_w;
    size_t oc_end = s->out_c; /* channels written, padding lanes included */
    if (ol == KERN_LAYOUT_NCHW8C) {
        oc_end = kern_nn_cblocks(s->out_c) * KERN_CBLOCK;
    }
    for (size_t b = 0; b < s->batch; b++) {
        for (size_t oc = s->out_c; oc < oc_end; oc++) {
            for (size_t p = pa; p < pb; p++) {
                y[kern_act_at(ol, s->out_c, hw_out, b, oc, p)] = 0.0f;
            }
        }
        for (size_t oc = 0; oc < s->out_c; oc++) {
            const size_t g = oc / ocg, o = oc % ocg;
            /* weight k of channel oc is wo[k * ks] */
            const float *wo = w + oc * K;
            size_t ks = 1;
            if (packed) {
                wo = w + (g * nb + o / KERN_CONV_OCB) * K * KERN_CONV_OCB +
                     o % KERN_CONV_OCB;
                ks = KERN_CONV_OCB;
            }
            for (size_t p = pa; p < pb; p++) {
                const size_t oy = p / out_w, ox = p % out_w;
                {
                    float acc = bias ? bias[oc] : 0.0f;
                    for (size_t ci = 0; ci < icg; ci++) {
                        const size_t ic = g * icg + ci;
                        for (size_t ky = 0; ky < kh; ky++) {
                            /* Unsigned wrap makes rows above the input
                             * huge, so one comparison rejects both
                             * sides. */
                            const size_t iy = oy * sh + ky * dh - pt;
                            if (iy >= ih) {
                                continue;
                            }
                            for (size_t kx = 0; kx < kw; kx++) {
                                const size_t ix = ox * sw + kx * dw - pl;
                                if (ix >= iw) {
                                    continue;
                                }
                                acc += wo[((ci * kh + ky) * kw + kx) * ks] *
                                       x[kern_act_at(il, s->in_c, hw_in, b,
                                                     ic, iy * iw + ix)];
                            }
                        }
                    }
                    y[kern_act_at(ol, s->out_c, hw_out, b, oc, p)] =
                        kern_fuse1(acc, act);
                }
            }
        }
    }
}

void kern_conv2d_c(const struct kern_conv2d_shape *s, size_t out_h,
                   size_t out_w, const float *x, const float *w,
                   const float *bias, int act, void *work, float *y)
{
    (void)work;
    const size_t dh = kern_nn_dil(s->dilation_h);
    const size_t dw = kern_nn_dil(s->dilation_w);
    if (dh == 1 && dw == 1) {
        conv_ref(s, out_h, out_w, KERN_LAYOUT_NCHW, KERN_LAYOUT_NCHW, x, w,
                 false, bias, act, 1, 1, y, 0, out_h * out_w);
    } else {
        conv_ref(s, out_h, out_w, KERN_LAYOUT_NCHW, KERN_LAYOUT_NCHW, x, w,
                 false, bias, act, dh, dw, y, 0, out_h * out_w);
    }
}

void kern_conv2d_packed_c(const struct kern_conv2d_shape *s, size_t out_h,
                          size_t out_w, int in_layout, int out_layout,
                          const float *x, const float *wpk,
                          const float *bias, int act, void *work, float *y,
                          size_t pa, size_t pb)
{
    (void)work;
    const size_t dh = kern_nn_dil(s->dilation_h);
    const size_t dw = kern_nn_dil(s->dilation_w);
    if (dh == 1 && dw == 1) {
        conv_ref(s, out_h, out_w, in_layout, out_layout, x, wpk, true, bias,
                 act, 1, 1, y, pa, pb);
    } else {
        conv_ref(s, out_h, out_w, in_layout, out_layout, x, wpk, true, bias,
                 act, dh, dw, y, pa, pb);
    }
}

/* ---- scratch layout ------------------------------------------------------ */

static bool mul_ok(size_t a, size_t b, size_t *out)
{
    if (a && b > SIZE_MAX / a) {
        return false;
    }
    *out = a * b;
    return true;
}

/* The K block's default: a 24-channel weight panel slice of kb x 24
 * floats filling half of the level-2 cache (sysconf's figure; 256 KiB
 * when it has none), the other half left to the input planes the tiles
 * read beside it, so that a deep 3 x 3 layer's panel (K up to 4608: 442
 * KB) is not streamed from beyond the level-2 cache for every tile of 4
 * pixels. No smaller: where the whole panel stays in the level-2 cache
 * (1 MiB on the AMD EPYC host it was measured on), the tile runs at the
 * FMA peak unblocked (ResNet-18's 3 x 3 layers at 49-56 GMAC/s), and
 * blocks of 64 to 1024 steps cost 1-7% there (fastest of 31 runs,
 * alternated; the running sums' stores and reloads, the tiles' set-up
 * once per block). At least 256 steps. */
static size_t kblock_default(void)
{
    long l2 = 0;
#ifdef _SC_LEVEL2_CACHE_SIZE
    l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
#endif
    const size_t bytes = l2 > 0 ? (size_t)l2 : 262144;
    const size_t kb = bytes / 2 / (KERN_CONV_NR * sizeof(float)) / 8 * 8;
    return kb < 256 ? 256 : kb;
}

static size_t kblock_value, kblock_forced;
static pthread_once_t kblock_once = PTHREAD_ONCE_INIT;

static void kblock_init(void)
{
    kblock_value = kblock_default();
}

size_t kern_conv_kblock(void)
{
    const size_t f = __atomic_load_n(&kblock_forced, __ATOMIC_RELAXED);
    if (f) {
        return f;
    }
    pthread_once(&kblock_once, kblock_init);
    return kblock_value;
}

void kern_conv_set_kblock(size_t kb)
{
    __atomic_store_n(&kblock_forced, kb, __ATOMIC_RELAXED);
}

bool kern_conv_geom(const struct kern_conv2d_shape *s, size_t oh, size_t ow,
                    struct kern_conv_geom *g)
{
    const size_t icg = s->in_c / s->groups;
    const size_t sh = s->stride_h, sw = s->stride_w;
    memset(g, 0, sizeof *g);
    if (!mul_ok(icg, s->kh * s->kw, &g->k)) {
        return false;
    }
    size_t offs; /* offsets tables: one, two in direct mode */
    g->direct = s->kh == 1 && s->kw == 1 && sh == 1 && sw == 1 &&
                !s->pad_top && !s->pad_left && !s->pad_bottom &&
                !s->pad_right;
    if (g->direct) {
        g->phy = g->phx = 1;
        g->q = s->in_h;
        g->pitch = s->in_w;
        g->plane = oh * ow;
        g->cols = g->plane;
        /* the last block's zero-padded copy */
        if (!mul_ok(g->k, KERN_CONV_NR, &g->buf_floats) ||
            !mul_ok(g->k, 2 * sizeof(ptrdiff_t), &offs)) {
            return false;
        }
    } else {
        /* Padded sizes (each fits: kern_conv2d_out_hw checked them). */
        const size_t hp = s->in_h + s->pad_top + s->pad_bottom;
        const size_t wp = s->in_w + s->pad_left + s->pad_right;
        g->phy = sh < s->kh ? sh : s->kh;
        g->phx = sw < s->kw ? sw : s->kw;
        g->q = (hp + sh - 1) / sh;
        g->pitch = (wp + sw - 1) / sw;
        /* An ungrouped convolution may read a blocked input, whose copy
         * keeps whole blocks of 8 channels (see conv.h); a grouped one
         * reads blocked inputs only when its groups are whole blocks. */
        const size_t icp = s->groups == 1 ? (icg + 7) / 8 * 8 : icg;
        size_t planes, n;
        if (icp < icg || !mul_ok(g->q, g->pitch, &g->plane) ||
            !mul_ok(oh, g->pitch, &g->cols) ||
            !mul_ok(icp, g->phy * g->phx, &planes) ||
            !mul_ok(planes, g->plane, &n) ||
            n > SIZE_MAX - KERN_CONV_NR - s->kw ||
            !mul_ok(g->k, sizeof(ptrdiff_t), &offs)) {
            return false;
        }
        /* The last block reads up to NR - 1 + (kw - 1) / stride_w columns
         * past the last phase plane's end (junk columns only). */
        g->buf_floats = n + KERN_CONV_NR + s->kw;
        /* A deep shape's running sums between K blocks: a tile of up to
         * 12 pixels x 24 channels per 12 pixels of the plane, from a
         * multiple of 8 floats after the copy (+ 8). */
        const size_t kb = kern_conv_kblock();
        if (g->k > kb) {
            g->kb = kb;
            if (oh * ow > SIZE_MAX / KERN_CONV_NR - 12 - 1 ||
                (oh * ow + 12) * KERN_CONV_NR + 8 >
                    SIZE_MAX - g->buf_floats) {
                return false;
            }
            g->acc_floats = (oh * ow + 12) * KERN_CONV_NR;
        }
    }
    if (!g->kb) {
        g->kb = g->k;
    }
    size_t fb;
    const size_t floats =
        g->buf_floats + (g->acc_floats ? g->acc_floats + 8 : 0);
    if (!mul_ok(floats, sizeof(float), &fb) || fb > SIZE_MAX - offs - 64) {
        return false;
    }
    g->bytes = offs + fb + 64;
    return true;
}

/* ---- dispatch ------------------------------------------------------------ */

void kern_conv_dsp_init(struct kern_conv_dsp *dsp, unsigned flags)
{
    dsp->conv2d = kern_conv2d_c;
    dsp->conv2d_packed = kern_conv2d_packed_c;
    dsp->im2col_s8 = kern_im2col_s8_c;
#if KERN_SIMD && KERN_HAVE_X86
    kern_conv_dsp_init_x86(dsp, flags);
#elif KERN_SIMD && KERN_HAVE_NEON
    kern_conv_dsp_init_arm(dsp, flags);
#else
    (void)flags;
#endif
}

static struct kern_conv_dsp conv_dsp;
static pthread_once_t conv_once = PTHREAD_ONCE_INIT;

static void conv_init_once(void)
{
    kern_conv_dsp_init(&conv_dsp, kern_cpu_flags());
}

/* ---- public API ---------------------------------------------------------- */

KERN_API int kern_conv2d_out_hw(const struct kern_conv2d_shape *s,
                                size_t *out_h, size_t *out_w)
{
    if (!s || !out_h || !out_w) {
        return KERN_E_INVALID;
    }
    if (!s->batch || !s->in_c || !s->out_c || !s->groups ||
        s->in_c % s->groups || s->out_c % s->groups) {
        return KERN_E_SHAPE;
    }
    size_t oh, ow, n;
    int st = kern_nn_out_dim(s->in_h, kern_nn_dilated_k(s->kh, s->dilation_h),
                             s->stride_h, s->pad_top, s->pad_bottom, &oh);
    if (st == KERN_OK) {
        st = kern_nn_out_dim(s->in_w,
                             kern_nn_dilated_k(s->kw, s->dilation_w),
                             s->stride_w, s->pad_left, s->pad_right, &ow);
    }
    if (st != KERN_OK) {
        return st;
    }
    if (!kern_nn_mul4(s->batch, s->in_c, s->in_h, s->in_w, &n) ||
        n > SIZE_MAX / sizeof(float) ||
        !kern_nn_mul4(s->batch, s->out_c, oh, ow, &n) ||
        n > SIZE_MAX / sizeof(float) ||
        !kern_nn_mul4(s->out_c, s->in_c / s->groups, s->kh, s->kw, &n) ||
        n > SIZE_MAX / sizeof(float) ||
        !kern_nn_mul4(s->in_c / s->groups, s->kh, s->kw, oh, &n) ||
        !kern_nn_mul4(n, ow, sizeof(float), 1, &n)) {
        return KERN_E_OVERFLOW;
    }
    *out_h = oh;
    *out_w = ow;
    return KERN_OK;
}

KERN_API struct kern_dwconv2d_shape
kern_conv2d_dw_shape(const struct kern_conv2d_shape *s)
{
    return (struct kern_dwconv2d_shape){
        .batch = s->batch, .channels = s->in_c, .in_h = s->in_h,
        .in_w = s->in_w, .kh = s->kh, .kw = s->kw, .stride_h = s->stride_h,
        .stride_w = s->stride_w, .pad_top = s->pad_top,
        .pad_left = s->pad_left, .pad_bottom = s->pad_bottom,
        .pad_right = s->pad_right, .dilation_h = s->dilation_h,
        .dilation_w = s->dilation_w,
    };
}

static bool is_depthwise(const struct kern_conv2d_shape *s)
{
    return s->groups == s->in_c && s->out_c == s->in_c;
}

static bool is_dilated(const struct kern_conv2d_shape *s)
{
    return kern_nn_dil(s->dilation_h) > 1 || kern_nn_dil(s->dilation_w) > 1;
}

/* ---- dilated convolutions ------------------------------------------------ */

/* A dilated convolution is lowered by the im2col gather, which steps by
 * the dilation, into col [K][band of output rows] and multiplied by
 * kern_sgemm: the tuned tiles above assume that a row (ic, ky, kx) is a
 * run of a stride-phase plane, which a dilation larger than the stride
 * breaks, and dilated layers are rare enough (a TCN, a DeepLab head) that
 * the GEMM's speed serves them. The band keeps the scratch near
 * DILATED_COL_FLOATS (1 MiB) whatever the plane, so that a memory plan
 * pays little for it, yet gives the GEMM at least one output row of
 * columns. Scratch: col, then one block of KERN_CONV_OCB output rows of
 * the band for the packed weights (a block's rows land in y through the
 * layout). */
enum { DILATED_COL_FLOATS = 1 << 18 };

static size_t dilated_band(size_t K, size_t oh, size_t ow)
{
    /* K * ow fits: kern_conv2d_out_hw checked K * oh * ow */
    const size_t rows = DILATED_COL_FLOATS / (K * ow);
    return rows < 1 ? 1 : rows > oh ? oh : rows;
}

static bool dilated_floats(const struct kern_conv2d_shape *s, size_t oh,
                           size_t ow, size_t *n)
{
    const size_t K = s->in_c / s->groups * s->kh * s->kw;
    const size_t band = dilated_band(K, oh, ow);
    size_t col, blk;
    if (!kern_nn_mul4(K, band, ow, 1, &col) ||
        !kern_nn_mul4(KERN_CONV_OCB, band, ow, 1, &blk) ||
        col > SIZE_MAX - blk ||
        col + blk > (SIZE_MAX - 64) / sizeof(float)) {
        return false;
    }
    *n = col + blk;
    return true;
}

KERN_API size_t kern_conv2d_work_bytes(const struct kern_conv2d_shape *s)
{
    size_t oh, ow, n;
    struct kern_conv_geom g;
    if (kern_conv2d_out_hw(s, &oh, &ow) != KERN_OK || is_depthwise(s)) {
        return 0;
    }
    if (is_dilated(s)) {
        return dilated_floats(s, oh, ow, &n) ? n * sizeof(float) : 0;
    }
    if (!kern_conv_geom(s, oh, ow, &g)) {
        return 0;
    }
    return g.bytes;
}

static void im2col_core(const struct kern_conv2d_shape *s, size_t oy0,
                        size_t oy1, size_t ow, int layout, const float *x,
                        size_t b, size_t g, float *col);

/* The dilated path for a validated, dilated, non-depthwise shape: raw
 * weights ([out_c][K], `packed` false, NCHW layouts) or packed ones
 * (kern_conv2d_pack_f32, either layout). work: dilated_floats floats or
 * NULL (then allocated here). The sums are kern_sgemm's, then the bias
 * is added and the activation applied. */
static int conv_dilated(const struct kern_conv2d_shape *s, size_t oh,
                        size_t ow, int il, int ol, const float *x,
                        const float *w, bool packed, const float *bias,
                        int act, void *work, float *y)
{
    size_t n;
    if (!dilated_floats(s, oh, ow, &n)) {
        return KERN_E_OVERFLOW;
    }
    float *own = NULL;
    if (!work) {
        own = malloc(n * sizeof(float));
        if (!own) {
            return KERN_E_NOMEM;
        }
        work = own;
    }
    const size_t icg = s->in_c / s->groups, ocg = s->out_c / s->groups;
    const size_t K = icg * s->kh * s->kw, P = oh * ow;
    const size_t nb = (ocg + KERN_CONV_OCB - 1) / KERN_CONV_OCB;
    const size_t band = dilated_band(K, oh, ow);
    float *col = work, *blk = col + K * band * ow;
    int st = KERN_OK;
    for (size_t b = 0; b < s->batch && st == KERN_OK; b++) {
        for (size_t g = 0; g < s->groups && st == KERN_OK; g++) {
            for (size_t oy0 = 0; oy0 < oh && st == KERN_OK; oy0 += band) {
                const size_t oy1 = oy0 + band < oh ? oy0 + band : oh;
                const size_t cols = (oy1 - oy0) * ow, p0 = oy0 * ow;
                im2col_core(s, oy0, oy1, ow, il, x, b, g, col);
                if (!packed) {
                    /* NCHW: the band of the group's output planes is C
                     * itself (rows P apart). */
                    float *yg = y + (b * s->out_c + g * ocg) * P + p0;
                    st = kern_sgemm(0, ocg, cols, K, w + g * ocg * K, K,
                                    col, cols, yg, P);
                    for (size_t o = 0; st == KERN_OK && o < ocg; o++) {
                        const float bo = bias ? bias[g * ocg + o] : 0.0f;
                        float *r = yg + o * P;
                        for (size_t p = 0; p < cols; p++) {
                            r[p] = kern_fuse1(r[p] + bo, act);
                        }
                    }
                    continue;
                }
                for (size_t j = 0; j < nb && st == KERN_OK; j++) {
                    const size_t o0 = j * KERN_CONV_OCB;
                    const size_t lanes = ocg - o0 < KERN_CONV_OCB
                                             ? ocg - o0
                                             : KERN_CONV_OCB;
                    /* block j is [K][8]: its transpose is the left
                     * operand */
                    st = kern_sgemm(KERN_MM_TRANS_A, lanes, cols, K,
                                    w + (g * nb + j) * K * KERN_CONV_OCB,
                                    KERN_CONV_OCB, col, cols, blk, cols);
                    for (size_t l = 0; st == KERN_OK && l < lanes; l++) {
                        const size_t oc = g * ocg + o0 + l;
                        const float bo = bias ? bias[oc] : 0.0f;
                        for (size_t p = 0; p < cols; p++) {
                            y[kern_act_at(ol, s->out_c, P, b, oc, p0 + p)] =
                                kern_fuse1(blk[l * cols + p] + bo, act);
                        }
                    }
                }
            }
        }
        if (ol == KERN_LAYOUT_NCHW8C) {
            const size_t oc_end = kern_nn_cblocks(s->out_c) * KERN_CBLOCK;
            for (size_t oc = s->out_c; oc < oc_end; oc++) {
                for (size_t p = 0; p < P; p++) {
                    y[kern_act_at(ol, s->out_c, P, b, oc, p)] = 0.0f;
                }
            }
        }
    }
    free(own);
    return st;
}

/* Point *work at scratch for a GEMM path: the caller's, or *own, newly
 * allocated (the caller frees it), when the caller gave none. False when
 * the shape has no scratch layout (then the reference runs: it needs
 * none) or the allocation fails (*st = KERN_E_NOMEM). */
static bool gemm_scratch(const struct kern_conv2d_shape *s, size_t oh,
                         size_t ow, void **work, void **own, int *st)
{
    struct kern_conv_geom g;
    *own = NULL;
    *st = KERN_OK;
    if (!kern_conv_geom(s, oh, ow, &g)) {
        return false;
    }
    if (!*work) {
        *own = malloc(g.bytes);
        if (!*own) {
            *st = KERN_E_NOMEM;
            return false;
        }
        *work = *own;
    }
    return true;
}

/* Run fn, the raw-weight GEMM path, with `work` or scratch of its own. */
static int gemm_path(kern_conv2d_fn fn, const struct kern_conv2d_shape *s,
                     size_t oh, size_t ow, const float *x, const float *w,
                     const float *bias, int act, void *work, float *y)
{
    void *own;
    int st;
    if (fn == kern_conv2d_c) {
        kern_conv2d_c(s, oh, ow, x, w, bias, act, NULL, y);
        return KERN_OK;
    }
    if (!gemm_scratch(s, oh, ow, &work, &own, &st)) {
        if (st == KERN_OK) {
            kern_conv2d_c(s, oh, ow, x, w, bias, act, NULL, y);
        }
        return st;
    }
    fn(s, oh, ow, x, w, bias, act, work, y);
    free(own);
    return KERN_OK;
}

/* The checks kern_conv2d_f32 and kern_conv2d_packed_f32 share. */
static int conv_args(const struct kern_conv2d_shape *s, const float *x,
                     const float *w, int act, const float *y, size_t *oh,
                     size_t *ow)
{
    if (!s || !x || !w || !y) {
        return KERN_E_INVALID;
    }
    const int st = kern_conv2d_out_hw(s, oh, ow);
    if (st != KERN_OK) {
        return st;
    }
    if (act != KERN_FUSE_NONE && act != KERN_FUSE_RELU &&
        act != KERN_FUSE_RELU6) {
        return KERN_E_RANGE;
    }
    return KERN_OK;
}

KERN_API int kern_conv2d_f32(const struct kern_conv2d_shape *s,
                             const float *x, const float *w,
                             const float *bias, int act, void *work,
                             float *y)
{
    size_t oh, ow;
    const int st = conv_args(s, x, w, act, y, &oh, &ow);
    if (st != KERN_OK) {
        return st;
    }
    if (is_depthwise(s)) {
        const struct kern_dwconv2d_shape ds = kern_conv2d_dw_shape(s);
        return kern_dwconv2d_f32(&ds, x, w, bias, act, y);
    }
    if (is_dilated(s)) {
        return conv_dilated(s, oh, ow, KERN_LAYOUT_NCHW, KERN_LAYOUT_NCHW, x,
                            w, false, bias, act, work, y);
    }
    pthread_once(&conv_once, conv_init_once);
    return gemm_path(conv_dsp.conv2d, s, oh, ow, x, w, bias, act, work, y);
}

KERN_API size_t kern_conv2d_packed_bytes(const struct kern_conv2d_shape *s)
{
    size_t oh, ow, n;
    if (kern_conv2d_out_hw(s, &oh, &ow) != KERN_OK || is_depthwise(s)) {
        return 0;
    }
    const size_t ocg = s->out_c / s->groups;
    const size_t nb = (ocg + KERN_CONV_OCB - 1) / KERN_CONV_OCB;
    /* K = in_c/groups * kh * kw floats fit (kern_conv2d_out_hw) */
    const size_t K = s->in_c / s->groups * s->kh * s->kw;
    if (!kern_nn_mul4(s->groups, nb, K, KERN_CONV_OCB, &n) ||
        n > SIZE_MAX / sizeof(float)) {
        return 0;
    }
    return n * sizeof(float);
}

KERN_API int kern_conv2d_pack_f32(const struct kern_conv2d_shape *s,
                                  const float *w, float *packed)
{
    if (!s || !w || !packed) {
        return KERN_E_INVALID;
    }
    size_t oh, ow;
    const int st = kern_conv2d_out_hw(s, &oh, &ow);
    if (st != KERN_OK) {
        return st;
    }
    if (is_depthwise(s)) {
        return KERN_E_SHAPE;
    }
    if (!kern_conv2d_packed_bytes(s)) {
        return KERN_E_OVERFLOW;
    }
    const size_t ocg = s->out_c / s->groups;
    const size_t nb = (ocg + KERN_CONV_OCB - 1) / KERN_CONV_OCB;
    const size_t K = s->in_c / s->groups * s->kh * s->kw;
    for (size_t g = 0; g < s->groups; g++) {
        for (size_t ob = 0; ob < nb; ob++) {
            float *d = packed + (g * nb + ob) * K * KERN_CONV_OCB;
            for (size_t l = 0; l < KERN_CONV_OCB; l++) {
                const size_t o = ob * KERN_CONV_OCB + l;
                const float *src = w + (g * ocg + o) * K;
                for (size_t k = 0; k < K; k++) {
                    d[k * KERN_CONV_OCB + l] = o < ocg ? src[k] : 0.0f;
                }
            }
        }
    }
    return KERN_OK;
}

KERN_API int kern_conv2d_packed_pixels_f32(const struct kern_conv2d_shape *s,
                                           int in_layout, int out_layout,
                                           size_t p_lo, size_t p_hi,
                                           const float *x,
                                           const float *packed,
                                           const float *bias, int act,
                                           void *work, float *y)
{
    size_t oh, ow;
    int st = conv_args(s, x, packed, act, y, &oh, &ow);
    if (st != KERN_OK) {
        return st;
    }
    /* oh * ow was checked for overflow by conv_args */
    const bool whole = p_lo == 0 && p_hi == oh * ow;
    if (p_lo > p_hi || p_hi > oh * ow) {
        return KERN_E_RANGE;
    }
    if ((in_layout != KERN_LAYOUT_NCHW && in_layout != KERN_LAYOUT_NCHW8C) ||
        (out_layout != KERN_LAYOUT_NCHW &&
         out_layout != KERN_LAYOUT_NCHW8C)) {
        return KERN_E_RANGE;
    }
    if (is_depthwise(s)) {
        return KERN_E_SHAPE;
    }
    const bool blocked = in_layout == KERN_LAYOUT_NCHW8C ||
                         out_layout == KERN_LAYOUT_NCHW8C;
    /* grouped on blocked tensors: every group's channels whole blocks */
    if (blocked && s->groups != 1 &&
        ((s->in_c / s->groups) % KERN_CBLOCK != 0 ||
         (s->out_c / s->groups) % KERN_CBLOCK != 0)) {
        return KERN_E_SHAPE;
    }
    if (!kern_nn_blocked_fits(s->batch, s->in_c, s->in_h, s->in_w) ||
        !kern_nn_blocked_fits(s->batch, s->out_c, oh, ow)) {
        return KERN_E_OVERFLOW;
    }
    if (is_dilated(s)) {
        if (!whole) {
            return KERN_E_SHAPE;
        }
        return conv_dilated(s, oh, ow, in_layout, out_layout, x, packed,
                            true, bias, act, work, y);
    }
    if (p_lo == p_hi) {
        return KERN_OK;
    }
    pthread_once(&conv_once, conv_init_once);
    const kern_conv2d_packed_fn fn = conv_dsp.conv2d_packed;
    void *own = NULL;
    if (fn != kern_conv2d_packed_c &&
        !gemm_scratch(s, oh, ow, &work, &own, &st)) {
        if (st != KERN_OK) {
            return st;
        }
        kern_conv2d_packed_c(s, oh, ow, in_layout, out_layout, x, packed,
                             bias, act, NULL, y, p_lo, p_hi);
        return KERN_OK;
    }
    fn(s, oh, ow, in_layout, out_layout, x, packed, bias, act, work, y, p_lo,
       p_hi);
    free(own);
    return KERN_OK;
}

KERN_API int kern_conv2d_packed_layout_f32(const struct kern_conv2d_shape *s,
                                           int in_layout, int out_layout,
                                           const float *x,
                                           const float *packed,
                                           const float *bias, int act,
                                           void *work, float *y)
{
    size_t oh, ow;
    const int st = kern_conv2d_out_hw(s, &oh, &ow);
    if (st != KERN_OK) {
        return st;
    }
    return kern_conv2d_packed_pixels_f32(s, in_layout, out_layout, 0, oh * ow,
                                         x, packed, bias, act, work, y);
}

KERN_API size_t kern_conv2d_split_channels(void)
{
    pthread_once(&conv_once, conv_init_once);
    if (conv_dsp.conv2d_packed == kern_conv2d_packed_c) {
        return KERN_CONV_SPLIT_C;
    }
#if KERN_SIMD && KERN_HAVE_X86
    if (conv_dsp.conv2d_packed == kern_conv2d_packed_avx512) {
        return KERN_CONV_SPLIT_V16;
    }
#endif
    return KERN_CONV_SPLIT_V8;
}

KERN_API int kern_conv2d_packed_f32(const struct kern_conv2d_shape *s,
                                    const float *x, const float *packed,
                                    const float *bias, int act, void *work,
                                    float *y)
{
    return kern_conv2d_packed_layout_f32(s, KERN_LAYOUT_NCHW,
                                         KERN_LAYOUT_NCHW, x, packed, bias,
                                         act, work, y);
}

/* ---- lowering ------------------------------------------------------------ */

/* The output columns ox whose input column ox * sw + kx * dw - pl lies
 * inside [0, in_w): [*lo, *hi), possibly empty. */
static void valid_cols(const struct kern_conv2d_shape *s, size_t ow,
                       size_t kx, size_t *lo, size_t *hi)
{
    const size_t sw = s->stride_w, pl = s->pad_left;
    kx *= kern_nn_dil(s->dilation_w); /* < in_w + pads: no overflow */
    size_t a = kx < pl ? (pl - kx + sw - 1) / sw : 0;
    size_t b = 0;
    if (s->in_w + pl > kx) {
        b = (s->in_w - 1 + pl - kx) / sw + 1;
    }
    b = b < ow ? b : ow;
    *lo = a < b ? a : b;
    *hi = b;
}

/* Checks shared by the lowering functions. */
static int lower_args(const struct kern_conv2d_shape *s, const void *a,
                      const void *b, size_t bi, size_t gi, size_t *oh,
                      size_t *ow)
{
    if (!s || !a || !b) {
        return KERN_E_INVALID;
    }
    const int st = kern_conv2d_out_hw(s, oh, ow);
    if (st != KERN_OK) {
        return st;
    }
    return bi < s->batch && gi < s->groups ? KERN_OK : KERN_E_SHAPE;
}

/* Rows are built a run at a time, the padding zeroed apart, so that no
 * element pays for a bounds test; rows are short (the output width), and
 * plain loops, which the compiler vectorises, cost less than calls to
 * memset and memcpy. */
KERN_API int kern_im2col_f32(const struct kern_conv2d_shape *s,
                             const float *x, size_t b, size_t g, float *col)
{
    size_t oh, ow;
    const int st = lower_args(s, x, col, b, g, &oh, &ow);
    if (st != KERN_OK) {
        return st;
    }
    im2col_core(s, 0, oh, ow, KERN_LAYOUT_NCHW, x, b, g, col);
    return KERN_OK;
}

/* kern_im2col_f32 for a validated shape, output rows [oy0, oy1) only
 * (col is then K x (oy1 - oy0) * ow), from x in either layout (in a
 * blocked x a group's channels are whole blocks): a pixel of channel c is `ps` floats after the
 * previous one, 1 in NCHW and KERN_CBLOCK in NCHW8c. */
static void im2col_core(const struct kern_conv2d_shape *s, size_t oy0,
                        size_t oy1, size_t ow, int layout, const float *x,
                        size_t b, size_t g, float *col)
{
    const size_t cg = s->in_c / s->groups, kh = s->kh, kw = s->kw;
    const size_t sh = s->stride_h, sw = s->stride_w, ih = s->in_h;
    const size_t iw = s->in_w, hw_in = ih * iw;
    const size_t hw_out = (oy1 - oy0) * ow;
    const size_t dh = kern_nn_dil(s->dilation_h);
    const size_t dw = kern_nn_dil(s->dilation_w);
    const size_t ps = layout == KERN_LAYOUT_NCHW8C ? KERN_CBLOCK : 1;
    for (size_t kx = 0; kx < kw; kx++) {
        size_t lo, hi;
        valid_cols(s, ow, kx, &lo, &hi);
        for (size_t c = 0; c < cg; c++) {
            for (size_t ky = 0; ky < kh; ky++) {
                float *row = col + ((c * kh + ky) * kw + kx) * hw_out;
                const float *xc =
                    x + kern_act_at(layout, s->in_c, hw_in, b, g * cg + c, 0);
                for (size_t oy = oy0; oy < oy1; oy++) {
                    const size_t iy = oy * sh + ky * dh - s->pad_top;
                    float *r = row + (oy - oy0) * ow;
                    if (iy >= ih || lo == hi) {
                        for (size_t ox = 0; ox < ow; ox++) {
                            r[ox] = 0.0f;
                        }
                        continue;
                    }
                    for (size_t ox = 0; ox < lo; ox++) {
                        r[ox] = 0.0f;
                    }
                    for (size_t ox = hi; ox < ow; ox++) {
                        r[ox] = 0.0f;
                    }
                    /* lo * sw + kx * dw >= pad_left by construction of
                     * lo */
                    const float *xr =
                        xc + (iy * iw + (lo * sw + kx * dw - s->pad_left)) *
                                 ps;
                    float *rl = r + lo;
                    const size_t n = hi - lo, step = sw * ps;
                    if (step == 1) {
                        for (size_t j = 0; j < n; j++) {
                            rl[j] = xr[j];
                        }
                    } else {
                        for (size_t j = 0; j < n; j++) {
                            rl[j] = xr[j * step];
                        }
                    }
                }
            }
        }
    }
}

KERN_API int kern_col2im_f32(const struct kern_conv2d_shape *s,
                             const float *col, size_t b, size_t g, float *x)
{
    size_t oh, ow;
    const int st = lower_args(s, col, x, b, g, &oh, &ow);
    if (st != KERN_OK) {
        return st;
    }
    const size_t cg = s->in_c / s->groups, kh = s->kh, kw = s->kw;
    const size_t sh = s->stride_h, sw = s->stride_w, ih = s->in_h;
    const size_t iw = s->in_w, hw_in = ih * iw, hw_out = oh * ow;
    const size_t dh = kern_nn_dil(s->dilation_h);
    const size_t dw = kern_nn_dil(s->dilation_w);
    float *xg = x + (b * s->in_c + g * cg) * hw_in;
    for (size_t kx = 0; kx < kw; kx++) {
        size_t lo, hi;
        valid_cols(s, ow, kx, &lo, &hi);
        if (lo == hi) {
            continue;
        }
        for (size_t c = 0; c < cg; c++) {
            for (size_t ky = 0; ky < kh; ky++) {
                const float *row = col + ((c * kh + ky) * kw + kx) * hw_out;
                for (size_t oy = 0; oy < oh; oy++) {
                    const size_t iy = oy * sh + ky * dh - s->pad_top;
                    if (iy >= ih) {
                        continue;
                    }
                    float *xr = xg + c * hw_in + iy * iw +
                                (lo * sw + kx * dw - s->pad_left);
                    const float *rl = row + oy * ow + lo;
                    const size_t n = hi - lo;
                    for (size_t j = 0; j < n; j++) {
                        xr[j * sw] += rl[j];
                    }
                }
            }
        }
    }
    return KERN_OK;
}

/* The definition, a pixel at a time (kern_im2col_s8_pixel). */
void kern_im2col_s8_c(const struct kern_conv2d_shape *s, size_t out_h,
                      size_t out_w, const int8_t *xg, int8_t *col)
{
    const size_t K = s->in_c / s->groups * s->kh * s->kw;
    for (size_t oy = 0; oy < out_h; oy++) {
        for (size_t ox = 0; ox < out_w; ox++) {
            kern_im2col_s8_pixel(s, xg, oy, ox,
                                 col + (oy * out_w + ox) * K);
        }
    }
}

/* The int8 lowering of a dilated shape: the definition, a tap at a time
 * (the kw-byte runs of kern_im2col_s8_pixel are contiguous only without
 * dilation); padded taps get `pad` (the input's zero point). */
static void im2col_s8_dilated(const struct kern_conv2d_shape *s,
                              size_t out_h, size_t out_w, const int8_t *xg,
                              int8_t pad, int8_t *col)
{
    const size_t cg = s->in_c / s->groups, kh = s->kh, kw = s->kw;
    const size_t ih = s->in_h, iw = s->in_w;
    const size_t dh = kern_nn_dil(s->dilation_h);
    const size_t dw = kern_nn_dil(s->dilation_w);
    for (size_t oy = 0; oy < out_h; oy++) {
        for (size_t ox = 0; ox < out_w; ox++) {
            int8_t *r = col + (oy * out_w + ox) * cg * kh * kw;
            for (size_t c = 0; c < cg; c++) {
                for (size_t ky = 0; ky < kh; ky++) {
                    const size_t iy = oy * s->stride_h + ky * dh - s->pad_top;
                    for (size_t kx = 0; kx < kw; kx++, r++) {
                        const size_t ix =
                            ox * s->stride_w + kx * dw - s->pad_left;
                        *r = iy < ih && ix < iw ? xg[(c * ih + iy) * iw + ix]
                                                : pad;
                    }
                }
            }
        }
    }
}

KERN_API int kern_im2col_s8(const struct kern_conv2d_shape *s,
                            const int8_t *x, size_t b, size_t g, int8_t *col)
{
    size_t oh, ow;
    const int st = lower_args(s, x, col, b, g, &oh, &ow);
    if (st != KERN_OK) {
        return st;
    }
    const size_t cg = s->in_c / s->groups, hw_in = s->in_h * s->in_w;
    const int8_t *xg = x + (b * s->in_c + g * cg) * hw_in;
    if (is_dilated(s)) {
        im2col_s8_dilated(s, oh, ow, xg, 0, col);
        return KERN_OK;
    }
    pthread_once(&conv_once, conv_init_once);
    conv_dsp.im2col_s8(s, oh, ow, xg, col);
    return KERN_OK;
}

KERN_API int kern_im2col_s8_zp(const struct kern_conv2d_shape *s,
                               const int8_t *x, size_t b, size_t g,
                               int32_t x_zero, int8_t *col)
{
    if (x_zero < -128 || x_zero > 127) {
        return KERN_E_RANGE;
    }
    /* without padding (or with a zero point of 0) the value of a padded
     * tap never shows: the fast lowering gives the same bytes */
    if (x_zero == 0 || !s ||
        !(s->pad_top | s->pad_left | s->pad_bottom | s->pad_right)) {
        return kern_im2col_s8(s, x, b, g, col);
    }
    size_t oh, ow;
    const int st = lower_args(s, x, col, b, g, &oh, &ow);
    if (st != KERN_OK) {
        return st;
    }
    const size_t cg = s->in_c / s->groups, hw_in = s->in_h * s->in_w;
    const int8_t *xg = x + (b * s->in_c + g * cg) * hw_in;
    if (is_dilated(s)) {
        im2col_s8_dilated(s, oh, ow, xg, (int8_t)x_zero, col);
        return KERN_OK;
    }
    /* Undilated: the fast lowering, which writes 0 in the padded taps,
     * then those taps set to the zero point. Only the outputs whose window
     * crosses the border have any: whole rows near the top and bottom, a
     * few columns at each side of the others (a fix-up along the border
     * against a byte at a time for every tap). */
    pthread_once(&conv_once, conv_init_once);
    conv_dsp.im2col_s8(s, oh, ow, xg, col);
    const size_t kh = s->kh, kw = s->kw, K = cg * kh * kw;
    const int8_t zp = (int8_t)x_zero;
    /* outputs [ox_lo, ox_hi) have every column tap inside the input */
    size_t ox_lo = 0, ox_hi = 0;
    while (ox_lo < ow && ox_lo * s->stride_w < s->pad_left) {
        ox_lo++;
    }
    ox_hi = ox_lo;
    while (ox_hi < ow &&
           ox_hi * s->stride_w + kw <= s->pad_left + s->in_w) {
        ox_hi++;
    }
    for (size_t oy = 0; oy < oh; oy++) {
        const size_t y0 = oy * s->stride_h; /* in padded rows */
        const bool rows_in =
            y0 >= s->pad_top && y0 + kh <= s->pad_top + s->in_h;
        for (size_t ox = 0; ox < ow; ox++) {
            if (rows_in && ox >= ox_lo && ox < ox_hi) {
                ox = ox_hi - 1; /* the interior: nothing to fix */
                continue;
            }
            int8_t *r = col + (oy * ow + ox) * K;
            const size_t x0 = ox * s->stride_w;
            for (size_t ky = 0; ky < kh; ky++) {
                const bool row_out = y0 + ky < s->pad_top ||
                                     y0 + ky >= s->pad_top + s->in_h;
                for (size_t kx = 0; kx < kw; kx++) {
                    if (row_out || x0 + kx < s->pad_left ||
                        x0 + kx >= s->pad_left + s->in_w) {
                        for (size_t c = 0; c < cg; c++) {
                            r[(c * kh + ky) * kw + kx] = zp;
                        }
                    }
                }
            }
        }
    }
    return KERN_OK;
}

/* ---- backward ------------------------------------------------------------ */

KERN_API int kern_conv2d_backward_f32(const struct kern_conv2d_shape *s,
                                      const float *x, const float *w,
                                      const float *dy, float *grad_x,
                                      float *grad_w, float *grad_bias)
{
    if (!s || !dy || (grad_x && !w) || (grad_w && !x)) {
        return KERN_E_INVALID;
    }
    size_t oh, ow;
    const int st = kern_conv2d_out_hw(s, &oh, &ow);
    if (st != KERN_OK) {
        return st;
    }
    const size_t icg = s->in_c / s->groups, ocg = s->out_c / s->groups;
    const size_t kh = s->kh, kw = s->kw, ih = s->in_h, iw = s->in_w;
    const size_t sh = s->stride_h, sw = s->stride_w;
    const size_t dh = kern_nn_dil(s->dilation_h);
    const size_t dw = kern_nn_dil(s->dilation_w);
    if (grad_x) {
        memset(grad_x, 0, s->batch * s->in_c * ih * iw * sizeof *grad_x);
    }
    if (grad_w) {
        memset(grad_w, 0, s->out_c * icg * kh * kw * sizeof *grad_w);
    }
    if (grad_bias) {
        memset(grad_bias, 0, s->out_c * sizeof *grad_bias);
    }
    for (size_t b = 0; b < s->batch; b++) {
        for (size_t oc = 0; oc < s->out_c; oc++) {
            const size_t g = oc / ocg;
            const float *dyo = dy + (b * s->out_c + oc) * oh * ow;
            if (grad_bias) {
                double sum = 0.0;
                for (size_t i = 0; i < oh * ow; i++) {
                    sum += dyo[i];
                }
                grad_bias[oc] += (float)sum;
            }
            for (size_t ci = 0; ci < icg; ci++) {
                const size_t plane = (b * s->in_c + g * icg + ci) * ih * iw;
                const size_t wbase = (oc * icg + ci) * kh * kw;
                for (size_t oy = 0; oy < oh; oy++) {
                    for (size_t ky = 0; ky < kh; ky++) {
                        const size_t iy = oy * sh + ky * dh - s->pad_top;
                        if (iy >= ih) {
                            continue;
                        }
                        for (size_t ox = 0; ox < ow; ox++) {
                            const float d = dyo[oy * ow + ox];
                            for (size_t kx = 0; kx < kw; kx++) {
                                const size_t ix =
                                    ox * sw + kx * dw - s->pad_left;
                                if (ix >= iw) {
                                    continue;
                                }
                                const size_t xi = plane + iy * iw + ix;
                                const size_t wi = wbase + ky * kw + kx;
                                if (grad_x) {
                                    grad_x[xi] += w[wi] * d;
                                }
                                if (grad_w) {
                                    grad_w[wi] += x[xi] * d;
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    return KERN_OK;
}
