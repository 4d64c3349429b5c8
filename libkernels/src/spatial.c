/* Data movement: constant padding, transposes by a permutation and the
 * resizing of images (kernels.h, "spatial"). Plain C on every path: each
 * is a copy whose cost is memory traffic, and the loops are laid out so
 * that the inner one is contiguous on at least one side (memcpy runs,
 * 8 x 8 tiles, per-axis index tables computed once per call). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "nn.h"
#include "alloc_rec.h" /* last: it wraps malloc and co. */

/* Elements of a shape, or false on overflow. */
static bool count(const size_t *shape, size_t ndim, size_t *n)
{
    size_t r = 1;
    for (size_t i = 0; i < ndim; i++) {
        if (!kern_nn_mul4(r, shape[i], 1, 1, &r)) {
            return false;
        }
    }
    *n = r;
    return r <= SIZE_MAX / sizeof(float);
}

static int check_shape(const size_t *shape, size_t ndim)
{
    if (ndim < 1 || ndim > KERN_TENSOR_MAX_RANK) {
        return KERN_E_SHAPE;
    }
    for (size_t i = 0; i < ndim; i++) {
        if (!shape[i]) {
            return KERN_E_SHAPE;
        }
    }
    return KERN_OK;
}

/* ---- pad ----------------------------------------------------------------- */

static void fill(float *y, size_t n, float v)
{
    for (size_t i = 0; i < n; i++) {
        y[i] = v;
    }
}

/* Axis `a` of x (in elements xin[a] per index) into y (yin[a]). */
static void pad_axis(size_t a, size_t ndim, const size_t *shape,
                     const size_t *pb, const size_t *pe, const size_t *xin,
                     const size_t *yin, float v, const float *x, float *y)
{
    fill(y, pb[a] * yin[a], v);
    y += pb[a] * yin[a];
    if (a + 1 == ndim) {
        memcpy(y, x, shape[a] * sizeof *x);
        y += shape[a];
    } else {
        for (size_t i = 0; i < shape[a]; i++) {
            pad_axis(a + 1, ndim, shape, pb, pe, xin, yin, v, x + i * xin[a],
                     y + i * yin[a]);
        }
        y += shape[a] * yin[a];
    }
    fill(y, pe[a] * yin[a], v);
}

KERN_API int kern_pad_f32(const size_t *shape, size_t ndim,
                          const size_t *pads_begin, const size_t *pads_end,
                          float value, const float *x, float *y)
{
    if (!shape || !pads_begin || !pads_end || !x || !y) {
        return KERN_E_INVALID;
    }
    int st = check_shape(shape, ndim);
    if (st != KERN_OK) {
        return st;
    }
    size_t ys[KERN_TENSOR_MAX_RANK], xin[KERN_TENSOR_MAX_RANK];
    size_t yin[KERN_TENSOR_MAX_RANK], n;
    for (size_t i = 0; i < ndim; i++) {
        if (pads_begin[i] > SIZE_MAX - shape[i] ||
            pads_end[i] > SIZE_MAX - shape[i] - pads_begin[i]) {
            return KERN_E_OVERFLOW;
        }
        ys[i] = shape[i] + pads_begin[i] + pads_end[i];
    }
    if (!count(ys, ndim, &n)) {
        return KERN_E_OVERFLOW;
    }
    xin[ndim - 1] = yin[ndim - 1] = 1;
    for (size_t i = ndim - 1; i > 0; i--) {
        xin[i - 1] = xin[i] * shape[i];
        yin[i - 1] = yin[i] * ys[i];
    }
    pad_axis(0, ndim, shape, pads_begin, pads_end, xin, yin, value, x, y);
    return KERN_OK;
}

/* ---- transpose ----------------------------------------------------------- */

/* Batches of rows x cols matrices, each written transposed, in 8 x 8
 * tiles so that both the reads and the writes stay within a few cache
 * lines per tile. */
static void transpose2d(size_t batch, size_t rows, size_t cols,
                        const float *x, float *y)
{
    enum { T = 8 };
    for (size_t b = 0; b < batch; b++) {
        const float *xb = x + b * rows * cols;
        float *yb = y + b * rows * cols;
        for (size_t i0 = 0; i0 < rows; i0 += T) {
            const size_t i1 = i0 + T < rows ? i0 + T : rows;
            for (size_t j0 = 0; j0 < cols; j0 += T) {
                const size_t j1 = j0 + T < cols ? j0 + T : cols;
                for (size_t j = j0; j < j1; j++) {
                    for (size_t i = i0; i < i1; i++) {
                        yb[j * rows + i] = xb[i * cols + j];
                    }
                }
            }
        }
    }
}

KERN_API int kern_transpose_f32(const size_t *shape, size_t ndim,
                                const size_t *perm, const float *x,
                                float *y)
{
    if (!shape || !perm || !x || !y) {
        return KERN_E_INVALID;
    }
    int st = check_shape(shape, ndim);
    if (st != KERN_OK) {
        return st;
    }
    bool seen[KERN_TENSOR_MAX_RANK] = {false};
    for (size_t i = 0; i < ndim; i++) {
        if (perm[i] >= ndim || seen[perm[i]]) {
            return KERN_E_RANGE;
        }
        seen[perm[i]] = true;
    }
    size_t n;
    if (!count(shape, ndim, &n)) {
        return KERN_E_OVERFLOW;
    }
    /* Drop axes of size 1 (renumbering x's axes), then merge runs of y's
     * axes that are consecutive axes of x: the same copy, fewer axes. */
    size_t newidx[KERN_TENSOR_MAX_RANK], q[KERN_TENSOR_MAX_RANK], r = 0;
    for (size_t i = 0, k = 0; i < ndim; i++) {
        newidx[i] = shape[i] > 1 ? k++ : SIZE_MAX;
    }
    for (size_t i = 0; i < ndim; i++) {
        if (newidx[perm[i]] != SIZE_MAX) {
            q[r++] = newidx[perm[i]];
        }
    }
    size_t kd[KERN_TENSOR_MAX_RANK]; /* kept sizes, x order */
    for (size_t i = 0, k = 0; i < ndim; i++) {
        if (shape[i] > 1) {
            kd[k++] = shape[i];
        }
    }
    size_t run_first[KERN_TENSOR_MAX_RANK], run_size[KERN_TENSOR_MAX_RANK];
    size_t R = 0;
    for (size_t i = 0; i < r; i++) {
        if (i > 0 && q[i] == q[i - 1] + 1) {
            run_size[R - 1] *= kd[q[i]];
        } else {
            run_first[R] = q[i];
            run_size[R++] = kd[q[i]];
        }
    }
    /* D: merged sizes in x order; P: y's merged axis i is x's P[i] */
    size_t D[KERN_TENSOR_MAX_RANK], P[KERN_TENSOR_MAX_RANK];
    for (size_t i = 0; i < R; i++) {
        size_t rank = 0;
        for (size_t j = 0; j < R; j++) {
            rank += run_first[j] < run_first[i];
        }
        P[i] = rank;
        D[rank] = run_size[i];
    }
    if (R <= 1) {
        memcpy(y, x, n * sizeof *x);
        return KERN_OK;
    }
    size_t xs[KERN_TENSOR_MAX_RANK]; /* x's strides, merged axes */
    xs[R - 1] = 1;
    for (size_t i = R - 1; i > 0; i--) {
        xs[i - 1] = xs[i] * D[i];
    }
    bool lead = true; /* P[i] == i for i < R - 2 */
    for (size_t i = 0; i + 2 < R; i++) {
        lead = lead && P[i] == i;
    }
    if (lead && P[R - 2] == R - 1 && P[R - 1] == R - 2) {
        transpose2d(n / (D[R - 2] * D[R - 1]), D[R - 2], D[R - 1], x, y);
        return KERN_OK;
    }
    /* Walk y in order; with x's last axis last, whole rows at a time. */
    const bool rows = P[R - 1] == R - 1;
    const size_t inner = D[P[R - 1]], step = xs[P[R - 1]];
    const size_t outer_axes = R - 1;
    size_t idx[KERN_TENSOR_MAX_RANK] = {0};
    const float *xp = x;
    for (size_t done = 0; done < n; done += inner) {
        if (rows) {
            memcpy(y + done, xp, inner * sizeof *x);
        } else {
            for (size_t j = 0; j < inner; j++) {
                y[done + j] = xp[j * step];
            }
        }
        /* next index over y's outer axes, last fastest */
        for (size_t a = outer_axes; a-- > 0;) {
            xp += xs[P[a]];
            if (++idx[a] < D[P[a]]) {
                break;
            }
            xp -= idx[a] * xs[P[a]];
            idx[a] = 0;
        }
    }
    return KERN_OK;
}

/* ---- resize -------------------------------------------------------------- */

/* The input coordinate of output index o along an axis (ONNX's
 * coordinate_transformation_mode, float arithmetic as ONNX Runtime). */
static float src_coord(int coord, size_t o, size_t in, size_t out,
                       float scale)
{
    switch ((enum kern_resize_coord)coord) {
    case KERN_RESIZE_HALF_PIXEL:
        return ((float)o + 0.5f) / scale - 0.5f;
    case KERN_RESIZE_PYTORCH_HALF_PIXEL:
        return out > 1 ? ((float)o + 0.5f) / scale - 0.5f : 0.0f;
    case KERN_RESIZE_ALIGN_CORNERS:
        return out == 1 ? 0.0f
                        : (float)o * (float)(in - 1) / (float)(out - 1);
    case KERN_RESIZE_ASYMMETRIC:
        return (float)o / scale;
    }
    return 0.0f; /* unreachable: the mode is checked first */
}

static size_t nearest_index(int mode, float c, size_t in)
{
    float r = c;
    switch ((enum kern_resize_nearest)mode) {
    case KERN_NEAREST_ROUND_PREFER_FLOOR:
        r = c == floorf(c) + 0.5f ? floorf(c) : roundf(c);
        break;
    case KERN_NEAREST_ROUND_PREFER_CEIL:
        r = c == floorf(c) + 0.5f ? ceilf(c) : roundf(c);
        break;
    case KERN_NEAREST_FLOOR:
        r = floorf(c);
        break;
    case KERN_NEAREST_CEIL:
        r = ceilf(c);
        break;
    }
    if (!(r > 0.0f)) {
        return 0;
    }
    return r >= (float)(in - 1) ? in - 1 : (size_t)r;
}

/* One axis of a linear resize: neighbours i0, i1 and weights w0, w1. */
struct lin {
    size_t i0, i1;
    float w0, w1;
};

static void linear_tap(float c, size_t in, struct lin *t)
{
    if (!(c > 0.0f)) {
        c = 0.0f;
    }
    if (c > (float)(in - 1)) {
        c = (float)(in - 1);
    }
    t->i0 = (size_t)c;
    t->i1 = t->i0 + 1 < in ? t->i0 + 1 : t->i0;
    t->w1 = c - (float)t->i0;
    t->w0 = 1.0f - t->w1;
}

/* One input row blended along x: h[ox] = w0 * r[i0] + w1 * r[i1]. */
static void hblend(const float *r, const struct lin *tx, size_t ow,
                   float *h)
{
    for (size_t ox = 0; ox < ow; ox++) {
        h[ox] = tx[ox].w0 * r[tx[ox].i0] + tx[ox].w1 * r[tx[ox].i1];
    }
}

static float axis_scale(float given, size_t in, size_t out)
{
    return given != 0.0f ? given : (float)out / (float)in;
}

/* The checks every resize entry makes, and the bytes of its tables and
 * rows in *bytes. */
static int resize_check(const struct kern_resize_shape *s, size_t *bytes)
{
    if (!s->planes || !s->in_h || !s->in_w || !s->out_h || !s->out_w) {
        return KERN_E_SHAPE;
    }
    if ((s->mode != KERN_RESIZE_NEAREST && s->mode != KERN_RESIZE_LINEAR) ||
        s->coord < KERN_RESIZE_HALF_PIXEL ||
        s->coord > KERN_RESIZE_ASYMMETRIC ||
        s->nearest < KERN_NEAREST_ROUND_PREFER_FLOOR ||
        s->nearest > KERN_NEAREST_CEIL || !isfinite(s->scale_h) ||
        !isfinite(s->scale_w) || s->scale_h < 0.0f || s->scale_w < 0.0f) {
        return KERN_E_RANGE;
    }
    size_t n;
    if (!kern_nn_mul4(s->planes, s->in_h, s->in_w, sizeof(float), &n) ||
        !kern_nn_mul4(s->planes, s->out_h, s->out_w, sizeof(float), &n) ||
        s->out_h > SIZE_MAX - s->out_w ||
        !kern_nn_mul4(s->out_h + s->out_w, sizeof(struct lin), 1, 1, &n) ||
        !kern_nn_mul4(s->out_w, 2 * sizeof(float), 1, 1, &n) ||
        n > SIZE_MAX - (s->out_h + s->out_w) * sizeof(struct lin)) {
        return KERN_E_OVERFLOW;
    }
    /* the tables, then two rows blended along x (linear mode) */
    *bytes = (s->out_h + s->out_w) * sizeof(struct lin) +
             2 * s->out_w * sizeof(float);
    return KERN_OK;
}

KERN_API size_t kern_resize_work_bytes(const struct kern_resize_shape *s)
{
    size_t bytes = 0;
    return s && resize_check(s, &bytes) == KERN_OK ? bytes : 0;
}

KERN_API int kern_resize_f32(const struct kern_resize_shape *s,
                             const float *x, float *y)
{
    size_t bytes = 0;
    if (!s || !x || !y) {
        return KERN_E_INVALID;
    }
    int st = resize_check(s, &bytes);
    if (st != KERN_OK) {
        return st;
    }
    void *work = malloc(bytes);
    if (!work) {
        return KERN_E_NOMEM;
    }
    st = kern_resize_work_f32(s, x, work, y);
    free(work);
    return st;
}

KERN_API int kern_resize_work_f32(const struct kern_resize_shape *s,
                                  const float *x, void *work, float *y)
{
    size_t bytes = 0;
    if (!s || !x || !y || !work) {
        return KERN_E_INVALID;
    }
    int st = resize_check(s, &bytes);
    if (st != KERN_OK) {
        return st;
    }
    const float sh = axis_scale(s->scale_h, s->in_h, s->out_h);
    const float sw = axis_scale(s->scale_w, s->in_w, s->out_w);
    struct lin *t = work;
    float *h0 = (float *)(t + s->out_h + s->out_w), *h1 = h0 + s->out_w;
    struct lin *ty = t, *tx = t + s->out_h;
    const bool nearest = s->mode == KERN_RESIZE_NEAREST;
    for (size_t o = 0; o < s->out_h + s->out_w; o++) {
        const bool row = o < s->out_h;
        const size_t oo = row ? o : o - s->out_h;
        const size_t in = row ? s->in_h : s->in_w;
        const float c = src_coord(s->coord, oo, in, row ? s->out_h : s->out_w,
                                  row ? sh : sw);
        if (nearest) {
            t[o].i0 = t[o].i1 = nearest_index(s->nearest, c, in);
            t[o].w0 = 1.0f;
            t[o].w1 = 0.0f;
        } else {
            linear_tap(c, in, &t[o]);
        }
    }
    const size_t iw = s->in_w, ow = s->out_w;
    for (size_t p = 0; p < s->planes; p++) {
        const float *xp = x + p * s->in_h * iw;
        float *yp = y + p * s->out_h * ow;
        size_t have0 = SIZE_MAX, have1 = SIZE_MAX; /* rows in h0, h1 */
        for (size_t oy = 0; oy < s->out_h; oy++) {
            float *yr = yp + oy * ow;
            if (nearest) {
                if (oy > 0 && ty[oy].i0 == ty[oy - 1].i0) {
                    /* an upscale repeats rows: copy the one just made */
                    memcpy(yr, yr - ow, ow * sizeof *yr);
                    continue;
                }
                const float *r0 = xp + ty[oy].i0 * iw;
                for (size_t ox = 0; ox < ow; ox++) {
                    yr[ox] = r0[tx[ox].i0];
                }
                continue;
            }
            /* Separable: y = wy0 * h0 + wy1 * h1 with h the input rows
             * blended along x (the same operations as blending the four
             * neighbours at once), each row blended once for all the
             * output rows that read it. */
            const size_t i0 = ty[oy].i0, i1 = ty[oy].i1;
            if (have0 != i0 && have1 == i0) {
                float *tmp = h0;
                h0 = h1;
                h1 = tmp;
                have1 = have0;
                have0 = i0;
            }
            if (have0 != i0) {
                hblend(xp + i0 * iw, tx, ow, h0);
                have0 = i0;
            }
            if (have1 != i1) {
                hblend(xp + i1 * iw, tx, ow, h1);
                have1 = i1;
            }
            const float wy0 = ty[oy].w0, wy1 = ty[oy].w1;
            for (size_t ox = 0; ox < ow; ox++) {
                yr[ox] = wy0 * h0[ox] + wy1 * h1[ox];
            }
        }
    }
    return KERN_OK;
}
