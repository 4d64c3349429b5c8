/* Broadcast element-wise arithmetic (numpy's rules, up to rank 4) and the
 * per-channel scale of a channel-blocked tensor: the C rows, the driver
 * that reduces any broadcast to rows, and the public functions.
 *
 * The driver: both operands are aligned to the output's rank from the
 * right, each gets element strides (0 along a dimension it broadcasts),
 * dimensions of size 1 are dropped, and neighbouring dimensions along
 * which both operands advance as one contiguous run (or both stay put)
 * are merged. What is left is at most four loops whose innermost is a
 * row of one of the three kinds of elem.h: equal shapes become one row of
 * every element, a scalar operand one VS or SV row, and squeeze-excite's
 * N x C x H x W times N x C x 1 x 1 one VS row per plane (N * C rows of
 * H * W). Each output is one IEEE operation on every path, so the SIMD
 * rows give the C rows' bits and the result does not depend on how the
 * loops were merged. */
#include <stdint.h>
#include <string.h>

#include "edgefit/kernels.h"
#include "elem.h"
#include "nn.h"

#define ELEM_C_ROWS(name, op)                                               \
    static void name##_vv_c(float *y, const float *a, const float *b,      \
                            size_t n)                                      \
    {                                                                      \
        for (size_t i = 0; i < n; i++) {                                   \
            y[i] = a[i] op b[i];                                           \
        }                                                                  \
    }                                                                      \
    static void name##_vs_c(float *y, const float *a, const float *b,      \
                            size_t n)                                      \
    {                                                                      \
        const float s = *b;                                                \
        for (size_t i = 0; i < n; i++) {                                   \
            y[i] = a[i] op s;                                              \
        }                                                                  \
    }                                                                      \
    static void name##_sv_c(float *y, const float *a, const float *b,      \
                            size_t n)                                      \
    {                                                                      \
        const float s = *a;                                                \
        for (size_t i = 0; i < n; i++) {                                   \
            y[i] = s op b[i];                                              \
        }                                                                  \
    }
KERN_ELEM_OPS(ELEM_C_ROWS)
#undef ELEM_C_ROWS

static void scale_nchw8c_c(float *y, const float *x, const float *s,
                           size_t hw, size_t lanes)
{
    for (size_t i = 0; i < hw; i++) {
        for (size_t l = 0; l < KERN_CBLOCK; l++) {
            y[i * KERN_CBLOCK + l] =
                l < lanes ? x[i * KERN_CBLOCK + l] * s[l] : 0.0f;
        }
    }
}

void kern_elem_dsp_init(struct kern_elem_dsp *dsp, unsigned flags)
{
    size_t k = 0;
#define ELEM_SET(name, op)                                                  \
    dsp->row[k][KERN_ELEM_VV] = name##_vv_c;                               \
    dsp->row[k][KERN_ELEM_VS] = name##_vs_c;                               \
    dsp->row[k][KERN_ELEM_SV] = name##_sv_c;                               \
    k++;
    KERN_ELEM_OPS(ELEM_SET)
#undef ELEM_SET
    dsp->scale_nchw8c = scale_nchw8c_c;
#if KERN_SIMD && KERN_HAVE_X86
    kern_elem_dsp_init_x86(dsp, flags);
#elif KERN_SIMD && KERN_HAVE_NEON
    kern_elem_dsp_init_arm(dsp, flags);
#else
    (void)flags;
#endif
}

/* ---- Shapes ------------------------------------------------------------ */

/* Elements of a shape, or false on a zero dimension or size_t overflow
 * of its bytes (*zero tells which). */
static bool shape_elems(const size_t *shape, size_t ndim, size_t *elems,
                        bool *zero)
{
    size_t e = 1;
    *zero = false;
    for (size_t k = 0; k < ndim; k++) {
        if (shape[k] == 0) {
            *zero = true;
            return false;
        }
        if (e > SIZE_MAX / sizeof(float) / shape[k]) {
            return false;
        }
        e *= shape[k];
    }
    *elems = e;
    return true;
}

KERN_API int kern_binary_shape(const size_t *a_shape, size_t a_ndim,
                               const size_t *b_shape, size_t b_ndim,
                               size_t *y_shape, size_t *y_ndim,
                               size_t *y_elems)
{
    if ((a_ndim && !a_shape) || (b_ndim && !b_shape) || !y_shape ||
        !y_ndim) {
        return KERN_E_INVALID;
    }
    if (a_ndim > KERN_BINARY_MAX_NDIM || b_ndim > KERN_BINARY_MAX_NDIM) {
        return KERN_E_SHAPE;
    }
    size_t ea, eb;
    bool zero;
    if (!shape_elems(a_shape, a_ndim, &ea, &zero)) {
        return zero ? KERN_E_SHAPE : KERN_E_OVERFLOW;
    }
    if (!shape_elems(b_shape, b_ndim, &eb, &zero)) {
        return zero ? KERN_E_SHAPE : KERN_E_OVERFLOW;
    }
    const size_t nd = a_ndim > b_ndim ? a_ndim : b_ndim;
    size_t out[KERN_BINARY_MAX_NDIM];
    for (size_t k = 0; k < nd; k++) {
        /* aligned from the right; a missing dimension is 1 */
        const size_t da = k + a_ndim >= nd ? a_shape[k + a_ndim - nd] : 1;
        const size_t db = k + b_ndim >= nd ? b_shape[k + b_ndim - nd] : 1;
        if (da != db && da != 1 && db != 1) {
            return KERN_E_SHAPE;
        }
        out[k] = da > db ? da : db;
    }
    size_t ey;
    if (!shape_elems(out, nd, &ey, &zero)) {
        return KERN_E_OVERFLOW;
    }
    memcpy(y_shape, out, nd * sizeof *out);
    *y_ndim = nd;
    if (y_elems) {
        *y_elems = ey;
    }
    return KERN_OK;
}

/* ---- The driver ---------------------------------------------------------- */

struct loop_dim {
    size_t n;      /* output extent */
    size_t sa, sb; /* element strides of a and b (0: broadcast) */
};

/* Contiguous strides of a shape aligned right to nd dimensions, 0 where
 * the operand has extent 1 (it broadcasts or the output is 1 there). */
static void operand_strides(const size_t *shape, size_t ndim, size_t nd,
                            size_t *stride)
{
    size_t s = 1;
    for (size_t k = nd; k-- > 0;) {
        const size_t d = k + ndim >= nd ? shape[k + ndim - nd] : 1;
        stride[k] = d == 1 ? 0 : s;
        s *= d;
    }
}

int kern_elem_binary_run(const struct kern_elem_dsp *dsp, int op,
                         const float *a, const size_t *a_shape,
                         size_t a_ndim, const float *b,
                         const size_t *b_shape, size_t b_ndim, float *y)
{
    if (op < KERN_BINARY_ADD || op > KERN_BINARY_DIV) {
        return KERN_E_RANGE;
    }
    if (!a || !b || !y) {
        return KERN_E_INVALID;
    }
    size_t ys[KERN_BINARY_MAX_NDIM], nd, elems;
    const int st = kern_binary_shape(a_shape, a_ndim, b_shape, b_ndim, ys,
                                     &nd, &elems);
    if (st != KERN_OK) {
        return st;
    }
    size_t sa[KERN_BINARY_MAX_NDIM], sb[KERN_BINARY_MAX_NDIM];
    operand_strides(a_shape, a_ndim, nd, sa);
    operand_strides(b_shape, b_ndim, nd, sb);
    /* Drop extents of 1, merge runs that are contiguous for both. */
    struct loop_dim dims[KERN_BINARY_MAX_NDIM];
    size_t nl = 0;
    for (size_t k = 0; k < nd; k++) {
        if (ys[k] == 1) {
            continue;
        }
        if (nl > 0 && dims[nl - 1].sa == sa[k] * ys[k] &&
            dims[nl - 1].sb == sb[k] * ys[k]) {
            dims[nl - 1].n *= ys[k];
            dims[nl - 1].sa = sa[k];
            dims[nl - 1].sb = sb[k];
            continue;
        }
        dims[nl].n = ys[k];
        dims[nl].sa = sa[k];
        dims[nl].sb = sb[k];
        nl++;
    }
    if (nl == 0) { /* one element */
        dims[0].n = 1;
        dims[0].sa = dims[0].sb = 1;
        nl = 1;
    }
    /* The innermost loop is the row: at least one operand advances
     * along it (an extent > 1 comes from an operand that has it). */
    const struct loop_dim in = dims[nl - 1];
    const enum kern_elem_kind kind = in.sa && in.sb ? KERN_ELEM_VV
                                     : in.sa        ? KERN_ELEM_VS
                                                    : KERN_ELEM_SV;
    const kern_elem_row_fn row = dsp->row[op][kind];
    const size_t rows = elems / in.n;
    /* The outer loops as an odometer over at most three digits. */
    size_t idx[KERN_BINARY_MAX_NDIM] = {0};
    size_t oa = 0, ob = 0;
    for (size_t r = 0; r < rows; r++) {
        row(y + r * in.n, a + oa, b + ob, in.n);
        for (size_t k = nl - 1; k-- > 0;) {
            idx[k]++;
            oa += dims[k].sa;
            ob += dims[k].sb;
            if (idx[k] < dims[k].n) {
                break;
            }
            oa -= dims[k].sa * dims[k].n;
            ob -= dims[k].sb * dims[k].n;
            idx[k] = 0;
        }
    }
    return KERN_OK;
}

int kern_elem_scale_nchw8c_run(const struct kern_elem_dsp *dsp,
                               const float *x, size_t batch,
                               size_t channels, size_t hw,
                               const float *scale, float *y)
{
    if (!x || !scale || !y) {
        return KERN_E_INVALID;
    }
    if (!batch || !channels || !hw) {
        return KERN_E_SHAPE;
    }
    if (!kern_nn_blocked_fits(batch, channels, hw, 1)) {
        return KERN_E_OVERFLOW;
    }
    const size_t nb = kern_nn_cblocks(channels);
    for (size_t bi = 0; bi < batch; bi++) {
        for (size_t blk = 0; blk < nb; blk++) {
            const size_t off = (bi * nb + blk) * hw * KERN_CBLOCK;
            dsp->scale_nchw8c(y + off, x + off,
                              scale + bi * channels + blk * KERN_CBLOCK, hw,
                              kern_nn_block_lanes(channels, blk));
        }
    }
    return KERN_OK;
}

/* ---- Public functions ---------------------------------------------------- */

static struct kern_elem_dsp elem_dsp;
static pthread_once_t elem_once = PTHREAD_ONCE_INIT;

static void elem_init_once(void)
{
    kern_elem_dsp_init(&elem_dsp, kern_cpu_flags());
}

KERN_API int kern_binary_f32(int op, const float *a, const size_t *a_shape,
                             size_t a_ndim, const float *b,
                             const size_t *b_shape, size_t b_ndim, float *y)
{
    pthread_once(&elem_once, elem_init_once);
    return kern_elem_binary_run(&elem_dsp, op, a, a_shape, a_ndim, b,
                                b_shape, b_ndim, y);
}

KERN_API int kern_channel_scale_nchw8c_f32(const float *x, size_t batch,
                                           size_t channels, size_t hw,
                                           const float *scale, float *y)
{
    pthread_once(&elem_once, elem_init_once);
    return kern_elem_scale_nchw8c_run(&elem_dsp, x, batch, channels, hw,
                                      scale, y);
}
