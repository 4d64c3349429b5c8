/*
 * ONNX import. Truth comes from outside the importer:
 *   - the layers each fixture of tests/data/onnx must give (kinds,
 *     windows, padding, fused activations, counts derived by hand below);
 *   - PyTorch's outputs for those fixtures (scripts/make-onnx-test-models.py
 *     wrote them beside each model): the imported layers and weights are
 *     run by a plain double-precision forward pass written here, which must
 *     agree within 1e-4 relative; that checks transposed and scaled Gemm
 *     weights, folded batch norm, SAME padding, count_include_pad, the
 *     fused GELU and float16/double initializers;
 *   - the bad fixtures: status, the node named in the message, its line;
 *   - with a second argument, ONNX's own node tests (Debian's
 *     libonnx-testdata): every case listed below must import and match its
 *     reference output the same way, and every other case must be refused
 *     cleanly. The counts are printed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <ctype.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../max_seen.h"
#include "edgefit/memest.h"

static const char *fixtures; /* tests/data/onnx */
static const char *testdata; /* .../libonnx-testdata/data, or NULL */

/* ---- A reference forward pass ------------------------------------------- */

/* alpha, beta: the layer's act_alpha, act_beta, as floats (the ONNX
 * attributes and the kernels' parameters are floats) */
static double act1(enum memest_act a, double alpha, double beta, double v)
{
    const double fa = (double)(float)alpha, fb = (double)(float)beta;
    switch (a) {
    case MEMEST_ACT_RELU:
        return v > 0 ? v : 0;
    case MEMEST_ACT_RELU6:
        return v < 0 ? 0 : v > 6 ? 6 : v;
    case MEMEST_ACT_GELU:
        return 0.5 * v *
               (1.0 + tanh(0.7978845608028654 * (v + 0.044715 * v * v * v)));
    case MEMEST_ACT_GELU_ERF:
        return 0.5 * v * (1.0 + erf(v / sqrt(2.0)));
    case MEMEST_ACT_SIGMOID:
        return 1.0 / (1.0 + exp(-v));
    case MEMEST_ACT_TANH:
        return tanh(v);
    case MEMEST_ACT_ERF:
        return erf(v);
    case MEMEST_ACT_SILU:
        return v / (1.0 + exp(-v));
    case MEMEST_ACT_SOFTPLUS:
        return v > 0 ? v + log1p(exp(-v)) : log1p(exp(v));
    case MEMEST_ACT_HARDSIGMOID:
        return fmin(1.0, fmax(0.0, fa * v + fb));
    case MEMEST_ACT_HARDSWISH:
        return v * fmin(1.0, fmax(0.0, v / 6.0 + 0.5));
    case MEMEST_ACT_LEAKYRELU:
        return v < 0 ? fa * v : v;
    case MEMEST_ACT_ELU:
        return v > 0 ? v : fa * expm1(v);
    case MEMEST_ACT_CLIP:
        return fa > fb ? fb : v < fa ? fa : v > fb ? fb : v;
    default:
        return v;
    }
}

static uint64_t elems(struct memest_shape s)
{
    uint64_t n = 1;
    for (unsigned i = 0; i < s.rank; i++) {
        n *= s.dim[i];
    }
    return n;
}

/* Apply act to y (shape s) in place; softmax over features or over the
 * channels at each pixel. Returns 0, or -1 for a shape it cannot. */
static int apply_act(const struct memest_layer *L, struct memest_shape s,
                     double *y)
{
    const enum memest_act a = L->act;
    if (a != MEMEST_ACT_SOFTMAX && a != MEMEST_ACT_LOGSOFTMAX) {
        for (uint64_t i = 0; i < elems(s); i++) {
            y[i] = act1(a, L->act_alpha, L->act_beta, y[i]);
        }
        return 0;
    }
    /* along L->axis of the sample: outer blocks, the axis, the elements
     * after it (px) */
    uint64_t outer = 1, c = s.dim[L->axis], px = 1;
    for (unsigned d = 0; d < L->axis; d++) {
        outer *= s.dim[d];
    }
    for (unsigned d = L->axis + 1; d < s.rank; d++) {
        px *= s.dim[d];
    }
    for (uint64_t o = 0; o < outer; o++) {
        double *yo = y + o * c * px;
        for (uint64_t p = 0; p < px; p++) {
            double mx = -INFINITY, sum = 0;
            for (uint64_t k = 0; k < c; k++) {
                mx = max_seen(mx, yo[k * px + p]);
            }
            for (uint64_t k = 0; k < c; k++) {
                sum += exp(yo[k * px + p] - mx);
            }
            for (uint64_t k = 0; k < c; k++) {
                double v = yo[k * px + p] - mx;
                yo[k * px + p] = a == MEMEST_ACT_SOFTMAX ? exp(v) / sum
                                                         : v - log(sum);
            }
        }
    }
    return 0;
}

static void window_op(const struct memest_layer *L, const double *x,
                      double *y)
{
    struct memest_shape is = L->in_shape, os = L->out_shape;
    uint64_t C = is.dim[0], H = is.dim[1], W = is.dim[2];
    uint64_t OC = os.dim[0], OH = os.dim[1], OW = os.dim[2];
    uint64_t g = L->kind == MEMEST_KIND_CONV2D ? L->groups : 1;
    uint64_t icg = C / g, ocg = OC / g;

    for (uint64_t oc = 0; oc < OC; oc++) {
        for (uint64_t oh = 0; oh < OH; oh++) {
            for (uint64_t ow = 0; ow < OW; ow++) {
                double acc = L->kind == MEMEST_KIND_MAXPOOL ? -INFINITY : 0;
                uint64_t cells = 0;
                uint64_t padded_cells = 0; /* inside input and padding */
                /* a conv2d's taps are its dilation apart (0: the other
                 * kinds, which are dense) */
                uint64_t dh = L->dilation_h ? L->dilation_h : 1;
                uint64_t dw = L->dilation_w ? L->dilation_w : 1;
                uint64_t c0 = L->kind == MEMEST_KIND_CONV2D ? oc / ocg * icg
                                                            : oc;
                uint64_t nc = L->kind == MEMEST_KIND_CONV2D ? icg : 1;
                for (uint64_t ic = 0; ic < nc; ic++) {
                    for (uint64_t kh = 0; kh < L->kernel_h; kh++) {
                        for (uint64_t kw = 0; kw < L->kernel_w; kw++) {
                            int64_t ih =
                                (int64_t)(oh * L->stride_h + kh * dh) -
                                (int64_t)L->pad_top;
                            int64_t iw =
                                (int64_t)(ow * L->stride_w + kw * dw) -
                                (int64_t)L->pad_left;
                            double v;
                            /* a ceil-mode window may pass the padding */
                            padded_cells +=
                                ih + (int64_t)L->pad_top >= 0 &&
                                ih < (int64_t)(H + L->pad_bottom) &&
                                iw + (int64_t)L->pad_left >= 0 &&
                                iw < (int64_t)(W + L->pad_right);
                            if (ih < 0 || iw < 0 || (uint64_t)ih >= H ||
                                (uint64_t)iw >= W) {
                                continue;
                            }
                            v = x[((c0 + ic) * H + (uint64_t)ih) * W +
                                  (uint64_t)iw];
                            cells++;
                            if (L->kind == MEMEST_KIND_CONV2D) {
                                acc += v * L->weight[((oc * icg + ic) *
                                                          L->kernel_h +
                                                      kh) * L->kernel_w +
                                                     kw];
                            } else if (L->kind == MEMEST_KIND_MAXPOOL) {
                                acc = max_seen(acc, v);
                            } else {
                                acc += v;
                            }
                        }
                    }
                }
                if (L->kind == MEMEST_KIND_CONV2D && L->bias != NULL) {
                    acc += L->bias[oc];
                }
                if (L->kind == MEMEST_KIND_AVGPOOL) {
                    acc /= L->count_include_pad ? (double)padded_cells
                                                : (double)cells;
                }
                y[(oc * OH + oh) * OW + ow] = acc;
            }
        }
    }
}

/* Element e of the output shape os, read from an operand of shape s
 * aligned from the right (numpy's broadcasting of one sample). */
static uint64_t bcast_index(struct memest_shape os, struct memest_shape s,
                            uint64_t e)
{
    uint64_t idx = 0, stride = 1;
    for (unsigned d = os.rank; d-- > 0;) {
        const uint64_t od = os.dim[d];
        const uint64_t c = e % od;
        e /= od;
        if (d + s.rank >= os.rank) {
            const uint64_t sd = s.dim[d + s.rank - os.rank];
            idx += (sd == 1 ? 0 : c) * stride;
            stride *= sd;
        }
    }
    return idx;
}

/* add, sub, mul, div of two inputs or of one and a constant, in double */
static void binary_ref(const memest_model *m, const struct memest_layer *L,
                       double *const *t, double *y)
{
    const struct memest_shape os = L->out_shape;
    const struct memest_shape sa = memest_model_tensor_shape(m, L->inputs[0]);
    for (uint64_t e = 0; e < elems(os); e++) {
        double a, b;
        if (L->scalar_side == MEMEST_SCALAR_NONE) {
            const struct memest_shape sb =
                memest_model_tensor_shape(m, L->inputs[1]);
            a = t[L->inputs[0]][bcast_index(os, sa, e)];
            b = t[L->inputs[1]][bcast_index(os, sb, e)];
        } else if (L->scalar_side == MEMEST_SCALAR_RIGHT) {
            a = t[L->inputs[0]][e];
            b = L->scalar;
        } else {
            a = L->scalar;
            b = t[L->inputs[0]][e];
        }
        y[e] = L->kind == MEMEST_KIND_ADD   ? a + b
               : L->kind == MEMEST_KIND_SUB ? a - b
               : L->kind == MEMEST_KIND_MUL ? a * b
                                            : a / b;
    }
}

/* Run one sample: in[k] is input k's data. The output (the last tensor)
 * is copied to out. Returns 0, or -1 for what this reference lacks. */
static int forward(const memest_model *m, const double *const *in,
                   double *out)
{
    size_t I = memest_model_input_count(m);
    size_t T = memest_model_tensor_count(m);
    double **t = calloc(T, sizeof *t);
    int rc = 0;

    assert_non_null(t);
    for (size_t k = 0; k < I; k++) {
        t[k] = (double *)in[k];
    }
    for (size_t i = 0; rc == 0 && i < memest_model_layer_count(m); i++) {
        const struct memest_layer *L = memest_model_layer(m, i);
        struct memest_shape os = L->out_shape;
        uint64_t n = elems(os), ni = elems(L->in_shape);
        const double *x = t[L->inputs[0]];
        double *y = calloc(n, sizeof *y);
        assert_non_null(y);
        t[I + i] = y;
        switch (L->kind) {
        case MEMEST_KIND_DENSE:
            for (uint64_t o = 0; o < n; o++) {
                double acc = L->bias ? L->bias[o] : 0;
                for (uint64_t k = 0; k < ni; k++) {
                    acc += L->weight[o * ni + k] * x[k];
                }
                y[o] = acc;
            }
            break;
        case MEMEST_KIND_CONV2D:
        case MEMEST_KIND_MAXPOOL:
        case MEMEST_KIND_AVGPOOL:
            window_op(L, x, y);
            break;
        case MEMEST_KIND_GLOBALAVGPOOL: {
            uint64_t px = ni / os.dim[0];
            for (uint64_t c = 0; c < os.dim[0]; c++) {
                double s = 0;
                for (uint64_t p = 0; p < px; p++) {
                    s += x[c * px + p];
                }
                y[c] = s / (double)px;
            }
            break;
        }
        case MEMEST_KIND_SUB:
        case MEMEST_KIND_MUL:
        case MEMEST_KIND_DIV:
            binary_ref(m, L, t, y);
            break;
        case MEMEST_KIND_ADD:
            if (L->input_count < 3) {
                binary_ref(m, L, t, y);
                break;
            }
            for (size_t k = 0; k < L->input_count; k++) {
                for (uint64_t e = 0; e < n; e++) {
                    y[e] += t[L->inputs[k]][e];
                }
            }
            break;
        case MEMEST_KIND_CONCAT: {
            /* element e of the output: its index along the axis picks
             * the input, the others stay (a sample of one) */
            const unsigned ax = L->concat_axis;
            uint64_t after = 1;
            for (unsigned d = ax + 1; d < os.rank; d++) {
                after *= os.dim[d];
            }
            for (uint64_t e = 0; e < n; e++) {
                const uint64_t before = e / (after * os.dim[ax]);
                uint64_t j = e / after % os.dim[ax];
                size_t k = 0;
                struct memest_shape s =
                    memest_model_tensor_shape(m, L->inputs[0]);
                while (j >= s.dim[ax]) {
                    j -= s.dim[ax];
                    s = memest_model_tensor_shape(m, L->inputs[++k]);
                }
                y[e] = t[L->inputs[k]][(before * s.dim[ax] + j) * after +
                                       e % after];
            }
            break;
        }
        case MEMEST_KIND_BATCHNORM: {
            uint64_t per = ni / L->in_shape.dim[0];
            for (uint64_t e = 0; e < n; e++) {
                y[e] = x[e] * L->weight[e / per] + L->bias[e / per];
            }
            break;
        }
        case MEMEST_KIND_PAD: {
            uint64_t C = os.dim[0], OH = os.dim[1], OW = os.dim[2];
            uint64_t H = L->in_shape.dim[1], W = L->in_shape.dim[2];
            for (uint64_t e = 0; e < n; e++) {
                uint64_t c = e / (OH * OW), oy = e / OW % OH, ox = e % OW;
                int inside = oy >= L->pad_top && oy - L->pad_top < H &&
                         ox >= L->pad_left && ox - L->pad_left < W;
                y[e] = inside ? x[(c * H + oy - L->pad_top) * W + ox -
                              L->pad_left]
                          : L->pad_value;
            }
            (void)C;
            break;
        }
        case MEMEST_KIND_LAYERNORM: {
            /* over the axes axis..rank-1 of the sample: mean, biased
             * variance, eps inside the root, gamma and beta per element
             * of those axes */
            uint64_t w = 1;
            for (unsigned d = L->axis; d < os.rank; d++) {
                w *= os.dim[d];
            }
            for (uint64_t o = 0; o < n / w; o++) {
                const double *xo = x + o * w;
                double mean = 0, var = 0;
                for (uint64_t k = 0; k < w; k++) {
                    mean += xo[k];
                }
                mean /= (double)w;
                for (uint64_t k = 0; k < w; k++) {
                    var += (xo[k] - mean) * (xo[k] - mean);
                }
                var /= (double)w;
                for (uint64_t k = 0; k < w; k++) {
                    y[o * w + k] =
                        (xo[k] - mean) / sqrt(var + L->bn_epsilon) *
                            L->weight[k] +
                        (L->has_bias ? L->bias[k] : 0.0);
                }
            }
            break;
        }
        case MEMEST_KIND_TRANSPOSE: {
            /* output axis i is input axis perm[i] */
            const struct memest_shape is = L->in_shape;
            uint64_t istride[3] = {1, 1, 1};
            for (unsigned d = is.rank; d-- > 1;) {
                istride[d - 1] = istride[d] * is.dim[d];
            }
            for (uint64_t e = 0; e < n; e++) {
                uint64_t rem = e, src = 0;
                for (unsigned d = os.rank; d-- > 0;) {
                    src += rem % os.dim[d] * istride[L->perm[d]];
                    rem /= os.dim[d];
                }
                y[e] = x[src];
            }
            break;
        }
        case MEMEST_KIND_MATMUL: {
            /* per sample [lead, M, K] . [lead, K, P], a leading extent
             * of 1 (or none) broadcasting */
            const struct memest_shape *sa = &L->in_shape, *sb = &L->in_shape_b;
            const double *b = t[L->inputs[1]];
            const uint64_t M = sa->dim[sa->rank - 2], K = sa->dim[sa->rank - 1],
                           P = sb->dim[sb->rank - 1];
            const uint64_t la = sa->rank == 3 ? sa->dim[0] : 1,
                           lb = sb->rank == 3 ? sb->dim[0] : 1;
            for (uint64_t h = 0; h < n / (M * P); h++) {
                const double *ah = x + (la == 1 ? 0 : h) * M * K;
                const double *bh = b + (lb == 1 ? 0 : h) * K * P;
                for (uint64_t r = 0; r < M; r++) {
                    for (uint64_t c = 0; c < P; c++) {
                        double acc = 0.0;
                        for (uint64_t k = 0; k < K; k++) {
                            acc += ah[r * K + k] * bh[k * P + c];
                        }
                        y[(h * M + r) * P + c] = acc;
                    }
                }
            }
            break;
        }
        case MEMEST_KIND_LSTM:
        case MEMEST_KIND_GRU:
            /* not in this reference: tests/apps/test_rnn_models.c and
             * the validate-* runs check them against PyTorch */
            rc = -1;
            break;
        case MEMEST_KIND_CONV_TRANSPOSE:
        case MEMEST_KIND_RESIZE:
            /* not in this reference: tests/profile/test_upsample.c
             * checks them against PyTorch */
            rc = -1;
            break;
        case MEMEST_KIND_SHUFFLE: {
            /* output channel j * g + i is input channel i * (C/g) + j */
            uint64_t C = os.dim[0], g = L->groups, px = n / C;
            for (uint64_t gi = 0; gi < g; gi++) {
                for (uint64_t j = 0; j < C / g; j++) {
                    memcpy(y + (j * g + gi) * px,
                           x + (gi * (C / g) + j) * px, px * sizeof *y);
                }
            }
            break;
        }
        case MEMEST_KIND_SLICE: {
            /* per sample, element by element: the output's coordinates
             * shifted by begin along the axis */
            uint64_t od[3] = {1, 1, 1}, id[3] = {1, 1, 1};
            for (unsigned d = 0; d < os.rank; d++) {
                od[d] = os.dim[d];
                id[d] = L->in_shape.dim[d];
            }
            for (uint64_t e = 0; e < n; e++) {
                uint64_t c[3] = {e / (od[1] * od[2]), e / od[2] % od[1],
                                 e % od[2]};
                c[L->slice_axis] += L->slice_begin;
                y[e] = x[(c[0] * id[1] + c[1]) * id[2] + c[2]];
            }
            break;
        }
        default: /* flatten, identity, dropout, activation */
            memcpy(y, x, n * sizeof *y);
            break;
        }
        if (apply_act(L, os, y) != 0) {
            rc = -1;
        }
    }
    if (rc == 0) {
        memcpy(out, t[T - 1],
               elems(memest_model_output_shape(m)) * sizeof *out);
    }
    for (size_t k = I; k < T; k++) {
        free(t[k]);
    }
    free(t);
    return rc;
}

/*
 * Load dir/model.onnx with every input_K.pb of dir/test_data_set_0 bound
 * as a constant (weights given as graph inputs), run the reference on
 * each sample and compare with output_0.pb. Returns the status of the
 * load; *max_err receives the largest relative error (-1 when the
 * reference cannot run the model).
 */
static int check_case(const char *dir, double *max_err, char *msg,
                      size_t cap)
{
    char path[1024];
    struct memest_owned_tensor ts[8];
    struct memest_tensor cs[8];
    struct memest_owned_tensor want;
    struct memest_diag d;
    memest_model *m = NULL;
    size_t n = 0;
    int st;

    *max_err = -1;
    for (int k = 0; k < 8; k++) {
        snprintf(path, sizeof path, "%s/test_data_set_0/input_%d.pb", dir,
                 k);
        if (access(path, R_OK) != 0) {
            break;
        }
        if (memest_tensor_load_pb(path, &ts[n], &d) != MEMEST_OK) {
            continue; /* a type the reader refuses (strings): no value */
        }
        cs[n] = ts[n].t;
        n++;
    }
    struct memest_onnx_opts opts = {cs, n};
    snprintf(path, sizeof path, "%s/model.onnx", dir);
    st = memest_model_load_onnx(path, &opts, &m, &d);
    if (st != MEMEST_OK) {
        memest_diag_format(&d, msg, cap);
    }
    snprintf(path, sizeof path, "%s/test_data_set_0/output_0.pb", dir);
    if (st == MEMEST_OK &&
        memest_tensor_load_pb(path, &want, &d) == MEMEST_OK) {
        size_t I = memest_model_input_count(m);
        const double **in = calloc(I, sizeof *in);
        double **own = calloc(I, sizeof *own);
        /* the batch is where the file has it (a Gemm's transposed A
         * [K, N], an LSTM's time-major [T, N, D] and its Y_h): each
         * sample's elements are gathered as the model holds them, batch
         * first */
        const unsigned oax = memest_model_output_batch_axis(m);
        uint64_t batch = want.t.rank > oax ? want.t.dim[oax] : 1;
        uint64_t o_inner = 1;
        for (unsigned a = oax + 1; a < want.t.rank; a++) {
            o_inner *= want.t.dim[a];
        }
        uint64_t on = elems(memest_model_output_shape(m));
        double *out = calloc(on, sizeof *out);
        int ok = in && own && out;
        double worst = 0;

        assert_true(ok);
        /* match each model input to its tensor by name */
        for (size_t k = 0; ok && k < I; k++) {
            const char *nm = memest_model_input_name(m, k);
            uint64_t per = elems(memest_model_input_shape_at(m, k));
            size_t j = 0;
            while (j < n && strcmp(ts[j].t.name, nm) != 0) {
                j++;
            }
            if (j == n && n == I) {
                j = k; /* unnamed tensors (older cases): in order */
            }
            const unsigned ax = memest_model_input_batch_axis(m, k);
            ok = j < n && ts[j].t.rank > ax && ts[j].t.dim[ax] == batch;
            if (ok) {
                uint64_t inner = 1;
                for (unsigned a = ax + 1; a < ts[j].t.rank; a++) {
                    inner *= ts[j].t.dim[a];
                }
                own[k] = calloc(batch * per, sizeof **own);
                assert_non_null(own[k]);
                /* element e of sample s: file index (o, s, i) */
                for (uint64_t s = 0; s < batch; s++) {
                    for (uint64_t e = 0; e < per; e++) {
                        const uint64_t o = e / inner, i = e % inner;
                        own[k][s * per + e] =
                            ts[j].data[(o * batch + s) * inner + i];
                    }
                }
            }
        }
        for (uint64_t b = 0; ok && b < batch; b++) {
            for (size_t k = 0; k < I; k++) {
                in[k] = own[k] +
                        b * elems(memest_model_input_shape_at(m, k));
            }
            if (forward(m, in, out) != 0) {
                ok = 0;
                break;
            }
            for (uint64_t e = 0; e < on; e++) {
                const uint64_t o = e / o_inner, i = e % o_inner;
                double w = want.data[(o * batch + b) * o_inner + i];
                double err = fabs(out[e] - w) / fmax(1.0, fabs(w));
                worst = max_seen(worst, err);
            }
        }
        if (ok) {
            *max_err = worst;
        }
        for (size_t k = 0; k < I; k++) {
            free(own[k]);
        }
        free(own);
        free(in);
        free(out);
        memest_owned_tensor_free(&want);
    }
    memest_model_destroy(m);
    for (size_t k = 0; k < n; k++) {
        memest_owned_tensor_free(&ts[k]);
    }
    return st;
}

/* ---- The fixtures ------------------------------------------------------- */

static memest_model *load_fixture(const char *name)
{
    char path[1024];
    struct memest_diag d;
    memest_model *m = NULL;
    snprintf(path, sizeof path, "%s/%s/model.onnx", fixtures, name);
    int st = memest_model_load(path, &m, &d);
    if (st != MEMEST_OK) {
        char msg[600];
        memest_diag_format(&d, msg, sizeof msg);
        fail_msg("%s: %s", name, msg);
    }
    assert_int_equal(memest_model_has_weights(m),
                     memest_model_parameter_count(m) > 0);
    return m;
}

static const struct memest_layer *layer(const memest_model *m, size_t i,
                                        enum memest_kind kind,
                                        enum memest_act act)
{
    const struct memest_layer *L = memest_model_layer(m, i);
    assert_non_null(L);
    assert_int_equal(L->kind, kind);
    assert_int_equal(L->act, act);
    return L;
}

static void shape_is(struct memest_shape s, uint64_t a, uint64_t b,
                     uint64_t c)
{
    assert_int_equal(s.dim[0], a);
    assert_int_equal(s.dim[1], b);
    assert_int_equal(s.dim[2], c);
}

/* kernel, stride, then padding top, left, bottom, right */
static void window_is(const struct memest_layer *L, uint64_t kh, uint64_t kw,
                      uint64_t sh, uint64_t sw, uint64_t pt, uint64_t pl,
                      uint64_t pb, uint64_t pr)
{
    assert_int_equal(L->kernel_h, kh);
    assert_int_equal(L->kernel_w, kw);
    assert_int_equal(L->stride_h, sh);
    assert_int_equal(L->stride_w, sw);
    assert_int_equal(L->pad_top, pt);
    assert_int_equal(L->pad_left, pl);
    assert_int_equal(L->pad_bottom, pb);
    assert_int_equal(L->pad_right, pr);
}

static void test_fixture_layers(void **state)
{
    memest_model *m;
    const struct memest_layer *L;
    (void)state;

    /* Conv k=3x2 s=2x1 pads (t,l,b,r) = 1,0,2,1 on 3x9x8: H (9+1+2-3)/2+1
     * = 5, W (8+0+1-2)/1+1 = 8; the depthwise conv takes the Relu. */
    m = load_fixture("conv_pads_strides");
    L = layer(m, 0, MEMEST_KIND_CONV2D, MEMEST_ACT_NONE);
    window_is(L, 3, 2, 2, 1, 1, 0, 2, 1);
    shape_is(L->out_shape, 4, 5, 8);
    L = layer(m, 1, MEMEST_KIND_CONV2D, MEMEST_ACT_RELU);
    assert_int_equal(L->groups, 4);
    assert_int_equal(memest_model_layer_count(m), 2);
    /* 4*3*3*2 + 4 and 4*1*3*3 */
    assert_int_equal(memest_model_parameter_count(m), 76 + 36);
    assert_int_equal(memest_model_fixed_batch(m), 0);
    assert_string_equal(memest_model_input_name(m, 0), "x");
    memest_model_destroy(m);

    /* SAME on 7x8 with k=4x3 s=2: out 4x4, total pads 3 (H) and 1 (W);
     * SAME_UPPER puts the odd one at the end, SAME_LOWER at the start */
    m = load_fixture("conv_same_upper");
    L = layer(m, 0, MEMEST_KIND_CONV2D, MEMEST_ACT_NONE);
    window_is(L, 4, 3, 2, 2, 1, 0, 2, 1);
    shape_is(L->out_shape, 3, 4, 4);
    assert_false(L->has_bias);
    memest_model_destroy(m);
    m = load_fixture("conv_same_lower");
    L = layer(m, 0, MEMEST_KIND_CONV2D, MEMEST_ACT_NONE);
    window_is(L, 4, 3, 2, 2, 2, 1, 1, 0);
    shape_is(memest_model_layer(m, 1)->out_shape, 4, 3, 3); /* VALID k=2 */
    memest_model_destroy(m);

    /* Gemm + Relu + Gemm + Softmax: two dense layers with their acts */
    m = load_fixture("gemm_softmax");
    layer(m, 0, MEMEST_KIND_DENSE, MEMEST_ACT_RELU);
    L = layer(m, 1, MEMEST_KIND_DENSE, MEMEST_ACT_SOFTMAX);
    assert_int_equal(L->units, 4);
    assert_int_equal(memest_model_parameter_count(m), 6 * 5 + 5 + 5 * 4 + 4);
    memest_model_destroy(m);

    /* MatMul + Add(bias) + Sigmoid: one dense; the second MatMul has no
     * bias; LogSoftmax (opset 11, axis 1) stays a layer after Tanh */
    m = load_fixture("matmul_add");
    L = layer(m, 0, MEMEST_KIND_DENSE, MEMEST_ACT_SIGMOID);
    assert_true(L->has_bias);
    L = layer(m, 1, MEMEST_KIND_DENSE, MEMEST_ACT_TANH);
    assert_false(L->has_bias);
    layer(m, 2, MEMEST_KIND_ACTIVATION, MEMEST_ACT_LOGSOFTMAX);
    assert_int_equal(memest_model_layer_count(m), 3);
    memest_model_destroy(m);

    /* Conv, BN (folded, eps 1e-3), Relu; a BN after the Relu stays a
     * layer and takes the Clip(0, 6) from Constant nodes as relu6 */
    m = load_fixture("bn_fold");
    L = layer(m, 0, MEMEST_KIND_CONV2D, MEMEST_ACT_RELU);
    assert_non_null(L->folded_bn);
    assert_string_equal(L->folded_bn, "bn");
    assert_true(fabs(L->bn_epsilon - 1e-3) < 1e-9);
    assert_true(L->has_bias);
    L = layer(m, 1, MEMEST_KIND_BATCHNORM, MEMEST_ACT_RELU6);
    layer(m, 2, MEMEST_KIND_GLOBALAVGPOOL, MEMEST_ACT_NONE);
    layer(m, 3, MEMEST_KIND_FLATTEN, MEMEST_ACT_NONE);
    layer(m, 4, MEMEST_KIND_DENSE, MEMEST_ACT_NONE);
    /* conv 4*3*3*3 + 4 (folded bias), bn 4 + 4, dense 3*4 + 3 */
    assert_int_equal(memest_model_parameter_count(m), 112 + 8 + 15);
    memest_model_destroy(m);

    /* MaxPool k3 s2 p1 on 9x9 -> 5x5; AveragePool k2 s1 pads 1,0,0,1
     * count_include_pad=0 -> 5x5; k=3x2 s2 p1 count_include_pad=1 ->
     * 3x3; Reshape [0, -1] -> a flatten of 2*3*3 */
    m = load_fixture("pools");
    L = layer(m, 0, MEMEST_KIND_MAXPOOL, MEMEST_ACT_NONE);
    window_is(L, 3, 3, 2, 2, 1, 1, 1, 1);
    shape_is(L->out_shape, 2, 5, 5);
    L = layer(m, 1, MEMEST_KIND_AVGPOOL, MEMEST_ACT_NONE);
    window_is(L, 2, 2, 1, 1, 1, 0, 0, 1);
    assert_int_equal(L->count_include_pad, 0);
    shape_is(L->out_shape, 2, 5, 5);
    L = layer(m, 2, MEMEST_KIND_AVGPOOL, MEMEST_ACT_NONE);
    window_is(L, 3, 2, 2, 2, 1, 1, 1, 1);
    assert_int_equal(L->count_include_pad, 1);
    shape_is(L->out_shape, 2, 3, 3);
    L = layer(m, 3, MEMEST_KIND_FLATTEN, MEMEST_ACT_NONE);
    assert_int_equal(L->out_shape.dim[0], 18);
    memest_model_destroy(m);

    /* both GELU patterns fuse into the dense layers as the exact (erf)
     * GELU; Erf stays */
    m = load_fixture("gelu");
    layer(m, 0, MEMEST_KIND_DENSE, MEMEST_ACT_GELU_ERF);
    layer(m, 1, MEMEST_KIND_DENSE, MEMEST_ACT_GELU_ERF);
    layer(m, 2, MEMEST_KIND_ACTIVATION, MEMEST_ACT_ERF);
    assert_int_equal(memest_model_layer_count(m), 3);
    memest_model_destroy(m);

    /* conv+bn+relu, conv+bn, add(x) relu, 1x1 conv, dropout, identity,
     * concat, channel softmax */
    m = load_fixture("residual");
    assert_int_equal(memest_model_layer_count(m), 8);
    L = layer(m, 2, MEMEST_KIND_ADD, MEMEST_ACT_RELU);
    assert_int_equal(L->input_count, 2);
    assert_int_equal(L->inputs[1], 0); /* the model input, the skip */
    layer(m, 4, MEMEST_KIND_DROPOUT, MEMEST_ACT_NONE);
    layer(m, 5, MEMEST_KIND_IDENTITY, MEMEST_ACT_NONE);
    L = layer(m, 6, MEMEST_KIND_CONCAT, MEMEST_ACT_NONE);
    shape_is(L->out_shape, 6, 6, 6);
    layer(m, 7, MEMEST_KIND_ACTIVATION, MEMEST_ACT_SOFTMAX);
    memest_model_destroy(m);

    m = load_fixture("typed_fixed_batch");
    assert_int_equal(memest_model_fixed_batch(m), 3);
    memest_model_destroy(m);

    /* torch.onnx.export of one network: folded by PyTorch (eval) or with
     * its BatchNormalization nodes (preserve), the same layers: conv 8*3*9
     * + 8 (the folded bias), depthwise 8*9 + 8, Linear 8*16 + 16 and
     * 16*10 + 10 = 618 parameters */
    for (int k = 0; k < 2; k++) {
        m = load_fixture(k ? "torch_cnn_bn" : "torch_cnn");
        assert_string_equal(memest_model_input_name(m, 0), "input");
        assert_int_equal(memest_model_layer_count(m), 8);
        L = layer(m, 0, MEMEST_KIND_CONV2D, MEMEST_ACT_RELU);
        assert_string_equal(L->name, "/conv1/Conv");
        if (k) {
            assert_string_equal(L->folded_bn, "/bn1/BatchNormalization");
        }
        L = layer(m, 1, MEMEST_KIND_CONV2D, MEMEST_ACT_NONE);
        assert_int_equal(L->groups, 8);
        layer(m, 2, MEMEST_KIND_ADD, MEMEST_ACT_RELU6);
        layer(m, 3, MEMEST_KIND_MAXPOOL, MEMEST_ACT_NONE);
        layer(m, 4, MEMEST_KIND_GLOBALAVGPOOL, MEMEST_ACT_NONE);
        layer(m, 5, MEMEST_KIND_FLATTEN, MEMEST_ACT_NONE);
        layer(m, 6, MEMEST_KIND_DENSE, MEMEST_ACT_GELU_ERF);
        layer(m, 7, MEMEST_KIND_DENSE, MEMEST_ACT_LOGSOFTMAX);
        assert_int_equal(memest_model_parameter_count(m), 618);
        memest_model_destroy(m);
    }

    /* view(size(0), -1): the Shape/Gather/Unsqueeze/Concat shape is a
     * flatten, and the Sigmoid still fuses into the conv (the Shape no
     * longer counts as a reader) */
    m = load_fixture("torch_view");
    assert_int_equal(memest_model_layer_count(m), 3);
    layer(m, 0, MEMEST_KIND_CONV2D, MEMEST_ACT_SIGMOID);
    layer(m, 1, MEMEST_KIND_FLATTEN, MEMEST_ACT_NONE);
    layer(m, 2, MEMEST_KIND_DENSE, MEMEST_ACT_NONE);
    memest_model_destroy(m);

    /* the shape [N, 24] computed by every folded operator (Shape, Slice,
     * Gather, Mul/Add/Sub/Div, Cast, Unsqueeze/Squeeze, Concat, Range,
     * ConstantOfShape, Equal, Where, Expand, Reshape, Identity) flattens
     * the 2x3x4 relu output: any wrong fold gives another shape, which
     * the Reshape refuses. The Gemm's weight (Mul by 2, Transpose) and
     * bias (Add) are folded constants too: 24*5 + 5 parameters. With the
     * batch fixed at 3 the Shape is a plain number. */
    for (int k = 0; k < 2; k++) {
        m = load_fixture(k ? "fold_shapes_fixed_batch" : "fold_shapes");
        assert_int_equal(memest_model_layer_count(m), 3);
        layer(m, 0, MEMEST_KIND_ACTIVATION, MEMEST_ACT_RELU);
        L = layer(m, 1, MEMEST_KIND_FLATTEN, MEMEST_ACT_NONE);
        assert_int_equal(L->out_shape.dim[0], 24);
        assert_string_equal(L->name, "flatten");
        layer(m, 2, MEMEST_KIND_DENSE, MEMEST_ACT_NONE);
        assert_int_equal(memest_model_parameter_count(m), 125);
        assert_int_equal(memest_model_fixed_batch(m), k ? 3 : 0);
        memest_model_destroy(m);
    }

    /* the same shape from the forms of opsets 9 (attributes), 13 (Squeeze
     * with no axes) and 15 (Shape's start): 24*5 + 5 parameters */
    for (int k = 0; k < 3; k++) {
        static const char *const forms[3] = {"fold_opset9", "fold_opset13",
                                             "fold_opset15"};
        m = load_fixture(forms[k]);
        assert_int_equal(memest_model_layer_count(m), 3);
        L = layer(m, 1, MEMEST_KIND_FLATTEN, MEMEST_ACT_NONE);
        assert_int_equal(L->out_shape.dim[0], 24);
        layer(m, 2, MEMEST_KIND_DENSE, MEMEST_ACT_NONE);
        assert_int_equal(memest_model_parameter_count(m), 125);
        memest_model_destroy(m);
    }

    /* torch.onnx.export of y.reshape(y.shape[0], y.shape[1] * y.shape[2]
     * * y.shape[3]): conv 3*2*9 + 3, Linear 75*4 + 4 */
    m = load_fixture("torch_flatten_dyn");
    assert_int_equal(memest_model_layer_count(m), 3);
    layer(m, 0, MEMEST_KIND_CONV2D, MEMEST_ACT_RELU);
    L = layer(m, 1, MEMEST_KIND_FLATTEN, MEMEST_ACT_NONE);
    assert_int_equal(L->out_shape.dim[0], 75);
    layer(m, 2, MEMEST_KIND_DENSE, MEMEST_ACT_NONE);
    assert_int_equal(memest_model_parameter_count(m), 57 + 304);
    memest_model_destroy(m);
}

/* Write m as text, parse it back: the same text again, layer by layer the
 * same activations and parameters. */
static void round_trip_acts(const memest_model *m)
{
    size_t len = 0, len2 = 0;
    assert_int_equal(memest_model_write(m, NULL, 0, &len), MEMEST_E_RANGE);
    char *text = malloc(len + 1), *text2 = malloc(len + 1);
    assert_non_null(text);
    assert_non_null(text2);
    assert_int_equal(memest_model_write(m, text, len + 1, &len), MEMEST_OK);
    memest_model *b = NULL;
    struct memest_diag d;
    if (memest_model_parse(text, &b, &d) != MEMEST_OK) {
        fail_msg("%d:%d: %s\n%s", d.line, d.column, d.message, text);
    }
    assert_int_equal(memest_model_layer_count(b), memest_model_layer_count(m));
    for (size_t i = 0; i < memest_model_layer_count(m); i++) {
        const struct memest_layer *p = memest_model_layer(m, i);
        const struct memest_layer *q = memest_model_layer(b, i);
        assert_int_equal(p->kind, q->kind);
        assert_int_equal(p->act, q->act);
        assert_true(p->act_alpha == q->act_alpha);
        assert_true(p->act_beta == q->act_beta);
    }
    assert_int_equal(memest_model_write(b, text2, len + 1, &len2),
                     MEMEST_OK);
    assert_string_equal(text, text2);
    memest_model_destroy(b);
    free(text);
    free(text2);
}

/* PyTorch's export of the mobile activations (scripts/make-onnx-test-
 * models.py, TorchActs): each one fused into the conv, add or Linear
 * before it, and standalone after the max pool; x * HardSigmoid(x) at
 * opset 13 and HardSwish at 14 give the same layers. Parameters: convs
 * 3*8*9+8, 8*9+8, 8*8+8, 8*8*9+8, three 8*8+8, Linear 8*6+6. */
static void test_torch_acts(void **state)
{
    (void)state;
    static const struct {
        enum memest_kind kind;
        enum memest_act act;
        double alpha, beta;
    } want[] = {
        {MEMEST_KIND_CONV2D, MEMEST_ACT_HARDSWISH, 1.0 / 6.0, 0.5},
        {MEMEST_KIND_CONV2D, MEMEST_ACT_SILU, 0, 0},
        {MEMEST_KIND_CONV2D, MEMEST_ACT_LEAKYRELU, (double)0.1f, 0},
        {MEMEST_KIND_ADD, MEMEST_ACT_CLIP, -1.0, 1.0},
        {MEMEST_KIND_CONV2D, MEMEST_ACT_ELU, (double)0.7f, 0},
        {MEMEST_KIND_CONV2D, MEMEST_ACT_SOFTPLUS, 0, 0},
        {MEMEST_KIND_CONV2D, MEMEST_ACT_HARDSIGMOID,
         (double)(1.0f / 6.0f), 0.5},
        {MEMEST_KIND_CONV2D, MEMEST_ACT_CLIP, -0.25, 0.75},
        {MEMEST_KIND_MAXPOOL, MEMEST_ACT_NONE, 0, 0},
        {MEMEST_KIND_ACTIVATION, MEMEST_ACT_SIGMOID, 0, 0},
        {MEMEST_KIND_ACTIVATION, MEMEST_ACT_HARDSWISH, 1.0 / 6.0, 0.5},
        {MEMEST_KIND_ACTIVATION, MEMEST_ACT_SILU, 0, 0},
        {MEMEST_KIND_ACTIVATION, MEMEST_ACT_LEAKYRELU, (double)0.1f, 0},
        {MEMEST_KIND_ACTIVATION, MEMEST_ACT_ELU, (double)0.7f, 0},
        {MEMEST_KIND_ACTIVATION, MEMEST_ACT_SOFTPLUS, 0, 0},
        {MEMEST_KIND_ACTIVATION, MEMEST_ACT_HARDSIGMOID,
         (double)(1.0f / 6.0f), 0.5},
        {MEMEST_KIND_ACTIVATION, MEMEST_ACT_TANH, 0, 0},
        {MEMEST_KIND_ACTIVATION, MEMEST_ACT_ERF, 0, 0},
        {MEMEST_KIND_ACTIVATION, MEMEST_ACT_CLIP, (double)0.1f,
         (double)0.7f},
        {MEMEST_KIND_GLOBALAVGPOOL, MEMEST_ACT_NONE, 0, 0},
        {MEMEST_KIND_FLATTEN, MEMEST_ACT_NONE, 0, 0},
        {MEMEST_KIND_DENSE, MEMEST_ACT_HARDSWISH, 1.0 / 6.0, 0.5},
    };
    const size_t n = sizeof want / sizeof want[0];
    for (int k = 0; k < 2; k++) {
        memest_model *m = load_fixture(k ? "torch_acts14" : "torch_acts");
        assert_int_equal(memest_model_layer_count(m), n);
        for (size_t i = 0; i < n; i++) {
            const struct memest_layer *L =
                layer(m, i, want[i].kind, want[i].act);
            if (L->act_alpha != want[i].alpha ||
                L->act_beta != want[i].beta) {
                fail_msg("layer %zu (%s): alpha %.17g beta %.17g, want "
                         "%.17g %.17g", i, L->name, L->act_alpha,
                         L->act_beta, want[i].alpha, want[i].beta);
            }
            if (L->kind == MEMEST_KIND_ACTIVATION) {
                /* element-wise: no MACs, no parameters */
                assert_int_equal(L->macs_per_sample, 0);
                assert_int_equal(L->parameter_count, 0);
            }
        }
        assert_int_equal(memest_model_parameter_count(m),
                         224 + 80 + 72 + 584 + 3 * 72 + 54);
        round_trip_acts(m);
        memest_model_destroy(m);
    }

    /* x * Sigmoid(relu(x)): the gate is another tensor's, so no silu;
     * whatever reads the Mul (refused today, or a multiply), it is not
     * one activation layer */
    char path[1024];
    struct memest_diag d;
    memest_model *m = NULL;
    snprintf(path, sizeof path, "%s/swish_other_x/model.onnx", fixtures);
    if (memest_model_load(path, &m, &d) == MEMEST_OK) {
        for (size_t i = 0; i < memest_model_layer_count(m); i++) {
            assert_int_not_equal(memest_model_layer(m, i)->act,
                                 MEMEST_ACT_SILU);
        }
        memest_model_destroy(m);
    } else {
        assert_non_null(strstr(d.message, "node 'scale' (Mul)"));
    }
}

/* The text of m, parsed back, must give the same layers. */
static void round_trip(const memest_model *m)
{
    size_t len = 0;
    char *buf;
    memest_model *b = NULL;
    struct memest_diag d;
    assert_int_equal(memest_model_write(m, NULL, 0, &len), MEMEST_E_RANGE);
    buf = malloc(len + 1);
    assert_non_null(buf);
    assert_int_equal(memest_model_write(m, buf, len + 1, &len), MEMEST_OK);
    if (memest_model_parse(buf, &b, &d) != MEMEST_OK) {
        fail_msg("%s at %d:%d in\n%s", d.message, d.line, d.column, buf);
    }
    assert_int_equal(memest_model_layer_count(b), memest_model_layer_count(m));
    for (size_t i = 0; i < memest_model_layer_count(m); i++) {
        const struct memest_layer *x = memest_model_layer(m, i);
        const struct memest_layer *y = memest_model_layer(b, i);
        assert_int_equal(x->kind, y->kind);
        assert_int_equal(x->groups, y->groups);
        assert_int_equal(x->slice_axis, y->slice_axis);
        assert_int_equal(x->slice_begin, y->slice_begin);
        assert_int_equal(x->slice_end, y->slice_end);
        assert_int_equal(x->output_elements, y->output_elements);
        assert_int_equal(x->macs_per_sample, y->macs_per_sample);
    }
    memest_model_destroy(b);
    free(buf);
}

/* Data movement and reductions, counted by hand. */
static void test_move_layers(void **state)
{
    const struct memest_layer *L;
    memest_model *m;
    (void)state;

    /* conv 2->4 1x1 (12 parameters, 4*16*2 MACs), then the three nodes
     * of the shuffle as one layer named after the first */
    m = load_fixture("torch_shuffle");
    assert_int_equal(memest_model_layer_count(m), 2);
    L = layer(m, 1, MEMEST_KIND_SHUFFLE, MEMEST_ACT_NONE);
    assert_int_equal(L->groups, 2);
    assert_string_equal(L->name, "/Reshape");
    shape_is(L->out_shape, 4, 4, 4);
    assert_int_equal(L->macs_per_sample, 0);
    assert_int_equal(memest_model_parameter_count(m), 12);
    round_trip(m);
    memest_model_destroy(m);

    /* conv 3->8 (32), chunk: Slice [0, 4) and [4, 8) of the channels,
     * branch conv 4->4 3x3 (148; 4*20*36 = 2880 MACs), concat, shuffle,
     * Split [3, 5]: two slices of one node, concat */
    m = load_fixture("torch_split");
    assert_int_equal(memest_model_layer_count(m), 9);
    L = layer(m, 1, MEMEST_KIND_SLICE, MEMEST_ACT_NONE);
    assert_int_equal(L->slice_axis, 0);
    assert_int_equal(L->slice_begin, 0);
    assert_int_equal(L->slice_end, 4);
    L = layer(m, 2, MEMEST_KIND_SLICE, MEMEST_ACT_NONE);
    assert_int_equal(L->slice_begin, 4);
    assert_int_equal(L->slice_end, 8);
    L = layer(m, 3, MEMEST_KIND_CONV2D, MEMEST_ACT_RELU);
    assert_int_equal(L->macs_per_sample, 2880);
    layer(m, 4, MEMEST_KIND_CONCAT, MEMEST_ACT_NONE);
    L = layer(m, 5, MEMEST_KIND_SHUFFLE, MEMEST_ACT_NONE);
    assert_int_equal(L->groups, 2);
    L = layer(m, 6, MEMEST_KIND_SLICE, MEMEST_ACT_NONE);
    shape_is(L->out_shape, 3, 5, 4);
    L = layer(m, 7, MEMEST_KIND_SLICE, MEMEST_ACT_NONE);
    assert_int_equal(L->slice_begin, 3);
    assert_int_equal(L->slice_end, 8);
    layer(m, 8, MEMEST_KIND_CONCAT, MEMEST_ACT_NONE);
    assert_int_equal(memest_model_parameter_count(m), 180);
    {
        uint64_t macs = 0;
        for (size_t i = 0; i < memest_model_layer_count(m); i++) {
            macs += memest_model_layer(m, i)->macs_per_sample;
        }
        assert_int_equal(macs, 480 + 2880);
    }
    round_trip(m);
    memest_model_destroy(m);

    /* conv 2->4 (1, 3) p=(0, 2): 4x5x8; [:, :, :, :-2] keeps w [0, 6);
     * [:, :, 1:4] rows [1, 4); narrow(1, 1, 3) channels [1, 4); the
     * Linear's [:, 1:4] features [1, 4) of 5 */
    m = load_fixture("torch_slice_w");
    assert_int_equal(memest_model_layer_count(m), 7);
    L = layer(m, 1, MEMEST_KIND_SLICE, MEMEST_ACT_NONE);
    assert_int_equal(L->slice_axis, 2);
    assert_int_equal(L->slice_end, 6);
    shape_is(L->out_shape, 4, 5, 6);
    L = layer(m, 2, MEMEST_KIND_SLICE, MEMEST_ACT_NONE);
    assert_int_equal(L->slice_axis, 1);
    shape_is(L->out_shape, 4, 3, 6);
    L = layer(m, 3, MEMEST_KIND_SLICE, MEMEST_ACT_NONE);
    assert_int_equal(L->slice_axis, 0);
    shape_is(L->out_shape, 3, 3, 6);
    layer(m, 4, MEMEST_KIND_FLATTEN, MEMEST_ACT_NONE);
    layer(m, 5, MEMEST_KIND_DENSE, MEMEST_ACT_NONE);
    L = layer(m, 6, MEMEST_KIND_SLICE, MEMEST_ACT_NONE);
    assert_int_equal(L->slice_begin, 1);
    assert_int_equal(L->out_shape.rank, 1);
    assert_int_equal(L->out_shape.dim[0], 3);
    assert_int_equal(memest_model_parameter_count(m), 28 + 54 * 5 + 5);
    round_trip(m);
    memest_model_destroy(m);

    /* mean over (2, 3): globalavgpool, flatten; with keepdim: the
     * globalavgpool alone; amax: a max pool of the whole 5x4 plane */
    m = load_fixture("torch_reduce");
    assert_int_equal(memest_model_layer_count(m), 9);
    layer(m, 1, MEMEST_KIND_GLOBALAVGPOOL, MEMEST_ACT_NONE);
    layer(m, 2, MEMEST_KIND_FLATTEN, MEMEST_ACT_NONE);
    layer(m, 3, MEMEST_KIND_GLOBALAVGPOOL, MEMEST_ACT_NONE);
    layer(m, 4, MEMEST_KIND_CONV2D, MEMEST_ACT_NONE);
    L = layer(m, 6, MEMEST_KIND_MAXPOOL, MEMEST_ACT_NONE);
    assert_int_equal(L->kernel_h, 5);
    assert_int_equal(L->kernel_w, 4);
    shape_is(L->out_shape, 6, 1, 1);
    layer(m, 7, MEMEST_KIND_FLATTEN, MEMEST_ACT_NONE);
    L = layer(m, 8, MEMEST_KIND_CONCAT, MEMEST_ACT_NONE);
    assert_int_equal(L->out_shape.dim[0], 16);
    round_trip(m);
    memest_model_destroy(m);

    /* view(n, 2, 8, 4) of 4x4x4 is a reshape (a view); [:, :, None,
     * None] two Unsqueezes (5x1, 5x1x1), squeeze(3).squeeze(2) a reshape
     * and a flatten: conv 1*4*9+4, conv 2*3*9+3, Linear 96*5+5,
     * conv 5*4+4 */
    m = load_fixture("torch_reshape");
    assert_int_equal(memest_model_layer_count(m), 10);
    L = layer(m, 1, MEMEST_KIND_RESHAPE, MEMEST_ACT_NONE);
    shape_is(L->out_shape, 2, 8, 4);
    assert_true(memest_kind_is_view(L->kind));
    L = layer(m, 3, MEMEST_KIND_FLATTEN, MEMEST_ACT_NONE);
    assert_int_equal(L->out_shape.dim[0], 96);
    L = layer(m, 5, MEMEST_KIND_RESHAPE, MEMEST_ACT_NONE);
    assert_int_equal(L->out_shape.rank, 2);
    L = layer(m, 6, MEMEST_KIND_RESHAPE, MEMEST_ACT_NONE);
    shape_is(L->out_shape, 5, 1, 1);
    layer(m, 7, MEMEST_KIND_CONV2D, MEMEST_ACT_NONE);
    layer(m, 8, MEMEST_KIND_RESHAPE, MEMEST_ACT_NONE);
    layer(m, 9, MEMEST_KIND_FLATTEN, MEMEST_ACT_NONE);
    assert_int_equal(memest_model_parameter_count(m),
                     40 + 57 + 485 + 24);
    round_trip(m);
    memest_model_destroy(m);

    /* torch.cat on dim=2 (ONNX axis 2: rows), dim=3 (columns) and, of two
     * N x 3 x (H*W) views, dim=-1 (the second dimension of a 3xK sample):
     * 3x4x5 and 3x2x5 make 3x6x5; with 3x6x3 3x6x8; 3x48 and 3x12 3x60.
     * Convolutions 2*3*9+3, 2*3*3+3, 3*3*3+3 */
    m = load_fixture("torch_cat_hw");
    assert_int_equal(memest_model_layer_count(m), 9);
    L = layer(m, 2, MEMEST_KIND_CONCAT, MEMEST_ACT_NONE);
    assert_int_equal(L->concat_axis, 1);
    shape_is(L->out_shape, 3, 6, 5);
    L = layer(m, 4, MEMEST_KIND_CONCAT, MEMEST_ACT_NONE);
    assert_int_equal(L->concat_axis, 2);
    shape_is(L->out_shape, 3, 6, 8);
    L = layer(m, 8, MEMEST_KIND_CONCAT, MEMEST_ACT_NONE);
    assert_int_equal(L->concat_axis, 1);
    assert_int_equal(L->out_shape.rank, 2);
    assert_int_equal(L->out_shape.dim[0], 3);
    assert_int_equal(L->out_shape.dim[1], 60);
    assert_int_equal(L->macs_per_sample, 0);
    assert_int_equal(memest_model_parameter_count(m), 57 + 21 + 30);
    round_trip(m);
    memest_model_destroy(m);

    /* 1-D signals, N x 4 x 20 held as 4x1x20: Conv1d(4, 6, 3, stride 2,
     * padding 2, dilation 2, groups 2) gives floor((20 + 4 - 5) / 2) + 1
     * = 10 steps, 6*2*3+6 = 42 parameters, 60 outputs * 2*3 taps = 360
     * MACs, ReLU fused; MaxPool1d(2) 5; Conv1d(6, 8, 3, padding 2) 7
     * steps (152 parameters, 56 * 18 = 1008 MACs); the chomp [:, :, :-2]
     * a slice of w [0, 5); AvgPool1d(3, 1, padding 1) exported as a Pad
     * of L that folds into the pool, counting the padding */
    m = load_fixture("torch_conv1d");
    assert_int_equal(memest_model_layer_count(m), 5);
    shape_is(memest_model_input_shape_at(m, 0), 4, 1, 20);
    L = layer(m, 0, MEMEST_KIND_CONV2D, MEMEST_ACT_RELU);
    assert_int_equal(L->kernel_h, 1);
    assert_int_equal(L->kernel_w, 3);
    assert_int_equal(L->stride_h, 1);
    assert_int_equal(L->stride_w, 2);
    assert_int_equal(L->pad_top, 0);
    assert_int_equal(L->pad_left, 2);
    assert_int_equal(L->pad_bottom, 0);
    assert_int_equal(L->pad_right, 2);
    assert_int_equal(L->dilation_h, 1);
    assert_int_equal(L->dilation_w, 2);
    assert_int_equal(L->groups, 2);
    shape_is(L->out_shape, 6, 1, 10);
    assert_int_equal(L->macs_per_sample, 360);
    L = layer(m, 1, MEMEST_KIND_MAXPOOL, MEMEST_ACT_NONE);
    assert_int_equal(L->kernel_h, 1);
    assert_int_equal(L->kernel_w, 2);
    shape_is(L->out_shape, 6, 1, 5);
    L = layer(m, 2, MEMEST_KIND_CONV2D, MEMEST_ACT_NONE);
    shape_is(L->out_shape, 8, 1, 7);
    assert_int_equal(L->macs_per_sample, 1008);
    L = layer(m, 3, MEMEST_KIND_SLICE, MEMEST_ACT_NONE);
    assert_int_equal(L->slice_axis, 2);
    assert_int_equal(L->slice_begin, 0);
    assert_int_equal(L->slice_end, 5);
    shape_is(L->out_shape, 8, 1, 5);
    L = layer(m, 4, MEMEST_KIND_AVGPOOL, MEMEST_ACT_NONE);
    assert_int_equal(L->kernel_w, 3);
    assert_int_equal(L->stride_w, 1);
    assert_int_equal(L->pad_left, 1);
    assert_int_equal(L->pad_right, 1);
    assert_int_equal(L->count_include_pad, 1);
    shape_is(L->out_shape, 8, 1, 5);
    assert_int_equal(memest_model_parameter_count(m), 42 + 152);
    round_trip(m);
    memest_model_destroy(m);
}

static void test_fixture_outputs(void **state)
{
    static const char *const names[] = {
        "conv_pads_strides", "conv_same_upper", "conv_same_lower",
        "gemm_softmax", "matmul_add", "bn_fold", "pools", "gelu",
        "residual", "typed_fixed_batch", "torch_cnn", "torch_cnn_bn",
        "torch_view", "fold_shapes", "fold_shapes_fixed_batch",
        "fold_opset9", "fold_opset13", "fold_opset15", "torch_flatten_dyn",
        "torch_acts", "torch_acts14", "torch_se", "binary_broadcast",
        "torch_pad_pool",
        "torch_shuffle", "torch_split", "torch_slice_w", "torch_reduce",
        "torch_reshape", "torch_cat_hw",
        "torch_conv1d",
        /* Mean and InvStdDev named, read by nothing */
        "layernorm_stats_unused"};
    (void)state;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char dir[1024];
        char msg[600] = "";
        double err;
        snprintf(dir, sizeof dir, "%s/%s", fixtures, names[i]);
        int st = check_case(dir, &err, msg, sizeof msg);
        if (st != MEMEST_OK) {
            fail_msg("%s: %s", names[i], msg);
        }
        printf("# %-20s max relative error vs PyTorch %.3g\n", names[i],
               err);
        assert_true(err >= 0 && err <= 1e-4);
        /* data movement changes no value: only the convolutions round */
        if (strncmp(names[i], "torch_s", 7) == 0 ||
            strncmp(names[i], "torch_re", 8) == 0 ||
            strcmp(names[i], "torch_cat_hw") == 0) {
            assert_true(err <= 1e-5);
        }
    }
}

struct bad_case {
    const char *file;
    int status;
    int line; /* the node's index + 1, 0 for the file */
    const char *fragments[3];
};

static void test_bad(void **state)
{
    static const struct bad_case cases[] = {
        {"truncated", MEMEST_E_PARSE, 0,
         {"malformed or truncated protocol buffer"}},
        {"missing_initializer", MEMEST_E_PARSE, 1,
         {"node 'conv1' (Conv)", "missing initializer 'conv.weight'"}},
        {"add_shape_mismatch", MEMEST_E_SHAPE, 3,
         {"node 'sum' (Add)", "shape mismatch", "Nx4"}},
        /* an LSTM reading the graph input time-major (its Y the graph
         * output): not the form PyTorch exports around a batch_first
         * layer; the batch would be the steps */
        {"unsupported_lstm", MEMEST_E_PARSE, 1,
         {"node 'lstm1' (LSTM)", "dimension 0 of the graph input 'x' is "
          "symbolic", "time-major [T, N, D]"}},
        /* LSTM and GRU: what PyTorch's layers do not compute, by name
         * (scripts/make-rnn-fixtures.py) */
        {"lstm_clip", MEMEST_E_PARSE, 2,
         {"node 'rnn1' (LSTM)", "attribute 'clip' is not supported"}},
        {"lstm_input_forget", MEMEST_E_PARSE, 2,
         {"node 'rnn1' (LSTM)", "attribute 'input_forget' = 1"}},
        {"lstm_activations", MEMEST_E_PARSE, 2,
         {"node 'rnn1' (LSTM)", "'activations' entry 1 'Relu'",
          "Sigmoid, Tanh, Tanh"}},
        {"gru_activation_alpha", MEMEST_E_PARSE, 2,
         {"node 'rnn1' (GRU)", "attribute 'activation_alpha'"}},
        /* layout 1 (batch-first) whose Y goes on through the Squeeze
         * and Transpose of the time-major form: its readers would see
         * the directions' axis */
        {"lstm_layout1", MEMEST_E_PARSE, 2,
         {"node 'rnn1' (LSTM)", "with layout 1, supported is Y or Y_h",
          "as the graph output"}},
        {"gru_sequence_lens", MEMEST_E_PARSE, 2,
         {"node 'rnn1' (GRU)", "input 'sequence_lens' is not supported"}},
        {"lstm_initial_h", MEMEST_E_PARSE, 2,
         {"node 'rnn1' (LSTM)", "initial_h 'h0' is not a constant of "
          "zeros"}},
        {"absurd_dims", MEMEST_E_RANGE, 1,
         {"node 'huge_relu' (Relu)", "1099511627776"}},
        {"dilations", MEMEST_E_PARSE, 1,
         {"node 'dilated_pool' (MaxPool)", "dilations 2x2",
          "not supported in pooling"}},
        /* Pad: modes other than constant, crops, other axes */
        {"pad_reflect", MEMEST_E_PARSE, 1,
         {"node 'pad_reflect' (Pad)", "mode 'reflect' is not supported"}},
        {"pad_negative", MEMEST_E_PARSE, 1,
         {"node 'pad_constant' (Pad)", "negative pads (a crop)"}},
        {"pad_channels", MEMEST_E_PARSE, 1,
         {"node 'pad_constant' (Pad)", "batch or channel axis"}},
        {"clip_nan", MEMEST_E_RANGE, 1,
         {"node 'clamp' (Clip)", "NaN bound"}},
        {"softmax_batch_axis", MEMEST_E_PARSE, 1,
         {"node 'sm_batch' (Softmax)", "axis 0"}},
        /* 2^20 x 2^20 x 3 x 3 floats claimed over 36 bytes: refused
         * before any allocation */
        {"absurd_initializer", MEMEST_E_RANGE, 1,
         {"node 'big_conv' (Conv)", "'big.w' holds 36 bytes",
          "9895604649984 elements"}},
        /* folding: 2^40 elements refused before allocating; N / 2 is not
         * a whole number for every batch; an attribute no fold reads */
        {"fold_absurd_constantofshape", MEMEST_E_RANGE, 1,
         {"node 'huge' (ConstantOfShape)", "1099511627776 elements",
          "at most 4194304"}},
        {"fold_budget", MEMEST_E_RANGE, 3,
         {"node 'big2' (ConstantOfShape)", "2097152 more elements",
          "may fold in all"}},
        {"fold_batch_div", MEMEST_E_PARSE, 3,
         {"node 'half_batch' (Div)", "integer Div of N and 2",
          "need not divide it"}},
        {"fold_unknown_attribute", MEMEST_E_PARSE, 2,
         {"node 'gather_bd' (Gather)", "attribute 'batch_dims' is not "
          "supported", "only: axis"}},
        /* an integer data input, by name */
        {"int64_input", MEMEST_E_PARSE, 1,
         {"node 'r' (Relu)", "graph input 'tokens' holds int64"}},
        /* operators read only folded or fused, each with its reason */
        {"transpose_batch", MEMEST_E_PARSE, 1,
         {"node 'tr_batch' (Transpose)", "attribute 'perm' moves the "
          "batch"}},
        /* element-wise binary: a constant of several values, shapes
         * that do not broadcast, opset 6's broadcast attribute */
        {"binary_const_tensor", MEMEST_E_PARSE, 1,
         {"node 'per_channel' (Mul)", "'k' [3, 1, 1] holds different "
          "values", "only a constant of one value"}},
        {"binary_no_broadcast", MEMEST_E_SHAPE, 4,
         {"node 'ratio' (Div)", "shape mismatch", "do not broadcast"}},
        {"binary_legacy_broadcast", MEMEST_E_PARSE, 1,
         {"node 'legacy' (Mul)", "attribute 'broadcast'", "not supported"}},
        {"int_mul_computed", MEMEST_E_PARSE, 1,
         {"node 'times3' (Mul)", "integer arithmetic on a computed tensor"}},
        /* a 5-D view that is not ShuffleNet's channel shuffle (its
         * transpose swaps H and W): the folded shape, named */
        {"torch_reshape_5d", MEMEST_E_PARSE, 28,
         {"node '/Reshape' (Reshape)", "the shape [N, 2, 2, 4, 4] is not "
          "supported", "only as ShuffleNet's channel shuffle"}},
        /* x.mean(1): a reduction over the channels */
        {"torch_mean_channels", MEMEST_E_PARSE, 2,
         {"node '/ReduceMean' (ReduceMean)", "attribute 'axes' [1] is not "
          "supported", "only a reduction over H and W"}},
        /* operand lists of eight (as long as a constant list may be):
         * read into buffers that hold them (they overflowed a stack
         * buffer of four), then refused for what they say */
        {"slice_eight_axes", MEMEST_E_PARSE, 1,
         {"node 's8' (Slice)", "axis 0 is the batch", NULL}},
        {"split_eight_parts", MEMEST_E_PARSE, 1,
         {"node 'p8' (Split)", "'split' has 8 sizes for 4 outputs", NULL}},
        /* sequence models (scripts/make-seq-onnx-fixtures.py) */
        {"layernorm_stash", MEMEST_E_PARSE, 1,
         {"node 'ln_stash' (LayerNormalization)",
          "attribute 'stash_type' 2 is not supported", NULL}},
        /* the statistics read by another node: no layer's output (and
         * ONNX's own test_layer_normalization_* cases make them graph
         * outputs 2 and 3, refused as a second graph output) */
        {"layernorm_mean_read", MEMEST_E_PARSE, 1,
         {"node 'ln_mean_read' (LayerNormalization)",
          "its output 1 (Mean or InvStdDev) is read", NULL}},
        {"layernorm_axis0", MEMEST_E_PARSE, 1,
         {"node 'ln_axis0' (LayerNormalization)",
          "attribute 'axis' 0 normalises over the batch", NULL}},
        /* Pow 3: not LayerNorm's pattern, its first piece refused */
        {"layernorm_pow3", MEMEST_E_PARSE, 1,
         {"node 'ln_mean' (ReduceMean)", "has rank 3", NULL}},
        {"softmax11_axis1", MEMEST_E_PARSE, 1,
         {"node 'sm_flat' (Softmax)", "axis 1 of a rank 3 input (opset 11)",
          "flattened"}},
        {"matmul_4d_const", MEMEST_E_SHAPE, 1,
         {"node 'mm_4d' (MatMul)", "has rank 4",
          "a Linear over the last axis"}},
        /* an attention mask: not the exported form read as one layer */
        {"mha_masked", MEMEST_E_PARSE, 1,
         {"node '/attn/Transpose' (Transpose)", "moves the batch",
          "nn.MultiheadAttention is read only as exported without masks"}},
        /* conv1d(x).transpose(1, 2): a signal's axes moved */
        {"torch_conv1d_transpose", MEMEST_E_PARSE, 2,
         {"node '/Transpose' (Transpose)", "it reads a 1-D signal",
          "supported on one are Conv"}},
    };
    (void)state;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char path[1024];
        char text[600];
        struct memest_diag d;
        memest_model *m = (memest_model *)1;
        snprintf(path, sizeof path, "%s/bad/%s.onnx", fixtures,
                 cases[i].file);
        int st = memest_model_load(path, &m, &d);
        memest_diag_format(&d, text, sizeof text);
        printf("# %s\n", text);
        assert_int_equal(st, cases[i].status);
        assert_null(m);
        assert_int_equal(d.line, cases[i].line);
        assert_string_equal(d.source, path);
        for (size_t k = 0; k < 3 && cases[i].fragments[k]; k++) {
            if (strstr(d.message, cases[i].fragments[k]) == NULL) {
                fail_msg("%s: '%s' lacks '%s'", cases[i].file, d.message,
                         cases[i].fragments[k]);
            }
        }
    }
}

/* Nodes nothing reads are dropped, even an unsupported one. */
static void test_dead_code(void **state)
{
    char path[1024];
    struct memest_diag d;
    memest_model *m = NULL;
    (void)state;
    snprintf(path, sizeof path, "%s/misc/dead_branch.onnx", fixtures);
    assert_int_equal(memest_model_load_onnx(path, NULL, &m, &d), MEMEST_OK);
    assert_int_equal(memest_model_layer_count(m), 1);
    layer(m, 0, MEMEST_KIND_ACTIVATION, MEMEST_ACT_RELU);
    assert_string_equal(memest_model_layer(m, 0)->name, "kept_relu");
    memest_model_destroy(m);
}

/* opts->constants: a graph input feeding a weight becomes one, a graph
 * input read as data stays a model input (ONNX's node tests give both as
 * input_K.pb). */
static void test_constants(void **state)
{
    static const char *const inputs[] = {"x", "W"};
    char path[1024];
    struct memest_owned_tensor ts[2];
    struct memest_tensor cs[2];
    struct memest_diag d;
    memest_model *m = NULL;
    (void)state;
    if (testdata == NULL) {
        skip();
    }
    for (int k = 0; k < 2; k++) {
        snprintf(path, sizeof path,
                 "%s/node/test_conv_with_strides_padding/test_data_set_0/"
                 "input_%d.pb", testdata, k);
        assert_int_equal(memest_tensor_load_pb(path, &ts[k], &d), MEMEST_OK);
        assert_string_equal(ts[k].t.name, inputs[k]);
        cs[k] = ts[k].t;
    }
    snprintf(path, sizeof path,
             "%s/node/test_conv_with_strides_padding/model.onnx", testdata);
    /* without W's value the weight is missing, named */
    assert_int_equal(memest_model_load_onnx(path, NULL, &m, &d),
                     MEMEST_E_PARSE);
    assert_non_null(strstr(d.message, "'W' is a graph input with no value"));
    struct memest_onnx_opts opts = {cs, 2};
    assert_int_equal(memest_model_load_onnx(path, &opts, &m, &d), MEMEST_OK);
    assert_int_equal(memest_model_input_count(m), 1);
    assert_string_equal(memest_model_input_name(m, 0), "x");
    assert_int_equal(memest_model_fixed_batch(m), 1); /* x is 1x1x7x5 */
    assert_true(memest_model_has_weights(m));
    /* W is 1x1x3x3: the layer's weights are the bound values */
    const struct memest_layer *L = memest_model_layer(m, 0);
    assert_int_equal(L->weight_count, 9);
    assert_memory_equal(L->weight, ts[1].data, 9 * sizeof(float));
    memest_model_destroy(m);
    memest_owned_tensor_free(&ts[0]);
    memest_owned_tensor_free(&ts[1]);
}

static void test_io_errors(void **state)
{
    struct memest_diag d;
    memest_model *m = NULL;
    struct memest_owned_tensor t;
    char path[1024];
    (void)state;

    assert_int_equal(memest_model_load_onnx("/nonexistent/x.onnx", NULL, &m,
                                            &d),
                     MEMEST_E_IO);
    assert_non_null(strstr(d.message, "No such file or directory"));
    assert_int_equal(memest_tensor_load_pb("/nonexistent/x.pb", &t, &d),
                     MEMEST_E_IO);
    assert_null(t.data);
    /* a model file is not a TensorProto of floats, nor the reverse */
    snprintf(path, sizeof path, "%s/bad/truncated.onnx", fixtures);
    assert_int_equal(memest_tensor_load_pb(path, &t, &d), MEMEST_E_PARSE);
    assert_int_equal(memest_model_load_onnx(NULL, NULL, &m, &d),
                     MEMEST_E_INVALID);
    memest_owned_tensor_free(NULL);
}

static void test_tensor_pb(void **state)
{
    char path[1024];
    struct memest_owned_tensor t;
    struct memest_diag d;
    (void)state;
    /* the gemm fixture's output: a batch of 2 rows of 4 softmax values */
    snprintf(path, sizeof path,
             "%s/gemm_softmax/test_data_set_0/output_0.pb", fixtures);
    assert_int_equal(memest_tensor_load_pb(path, &t, &d), MEMEST_OK);
    assert_int_equal(t.t.rank, 2);
    assert_int_equal(t.t.dim[0], 2);
    assert_int_equal(t.t.dim[1], 4);
    for (int r = 0; r < 2; r++) {
        double s = 0;
        for (int k = 0; k < 4; k++) {
            assert_true(t.data[r * 4 + k] > 0);
            s += t.data[r * 4 + k];
        }
        assert_true(fabs(s - 1.0) < 1e-6);
    }
    assert_ptr_equal(t.t.data, t.data);
    assert_ptr_equal(t.t.name, t.name);
    memest_owned_tensor_free(&t);
    assert_null(t.data);
}

/* ---- The operator table ------------------------------------------------- */

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    char *buf;
    long len;
    if (f == NULL) {
        return NULL;
    }
    fseek(f, 0, SEEK_END);
    len = ftell(f);
    fseek(f, 0, SEEK_SET);
    buf = calloc((size_t)len + 1, 1);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, (size_t)len, f), (size_t)len);
    fclose(f);
    return buf;
}

/* word occurs in text with no letter or digit on either side */
static int has_word(const char *text, const char *word)
{
    size_t n = strlen(word);
    for (const char *p = strstr(text, word); p; p = strstr(p + 1, word)) {
        int before = p > text && (isalnum((unsigned char)p[-1]));
        int after = isalnum((unsigned char)p[n]);
        if (!before && !after) {
            return 1;
        }
    }
    return 0;
}

/*
 * The importer's table (libmemest/src/onnx/ops.c, read as text) against
 * what users see: the rows are in strcmp order (the lookup is a binary
 * search), libmemest/README.md's ONNX section names every operator, and
 * the list in the message refusing an unknown operator is the rows' in
 * order, cut at a word.
 */
static void test_operator_table(void **state)
{
    char path[1024];
    char names[64][32];
    char joined[2048] = "";
    size_t n = 0;
    char *src, *readme, *p, *end;
    struct memest_diag d;
    memest_model *m = NULL;
    (void)state;

    snprintf(path, sizeof path, "%s/../../../libmemest/src/onnx/ops.c",
             fixtures);
    src = slurp(path);
    assert_non_null(src);
    p = strstr(src, "static const struct onnx_op ops[] = {");
    assert_non_null(p);
    end = strstr(p, "\n};");
    assert_non_null(end);
    for (p = strstr(p, "\n    {\""); p && p < end;
         p = strstr(p + 1, "\n    {\"")) {
        char *q = p + 7;
        size_t len = strcspn(q, "\"");
        assert_true(n < 64 && len < 32);
        memcpy(names[n], q, len);
        names[n][len] = '\0';
        if (n > 0 && strcmp(names[n - 1], names[n]) >= 0) {
            fail_msg("ops.c: '%s' comes before '%s'", names[n - 1],
                     names[n]);
        }
        strcat(joined, n ? " " : "");
        strcat(joined, names[n]);
        n++;
    }
    assert_true(n >= 30);

    snprintf(path, sizeof path, "%s/../../../libmemest/README.md", fixtures);
    readme = slurp(path);
    assert_non_null(readme);
    p = strstr(readme, "\n## ONNX models");
    assert_non_null(p);
    end = strstr(p + 1, "\n## ");
    if (end != NULL) {
        *end = '\0';
    }
    for (size_t i = 0; i < n; i++) {
        if (!has_word(p, names[i])) {
            fail_msg("libmemest/README.md's ONNX section lacks %s", names[i]);
        }
    }

    snprintf(path, sizeof path, "%s/bad/unsupported_rnn.onnx", fixtures);
    assert_int_equal(memest_model_load(path, &m, &d), MEMEST_E_PARSE);
    p = strstr(d.message, "supported: ");
    assert_non_null(p);
    p += strlen("supported: ");
    end = strstr(p, " ...");
    assert_non_null(end); /* the whole list does not fit */
    *end = '\0';
    assert_true(strlen(p) > 100);
    assert_memory_equal(p, joined, strlen(p));
    assert_true(joined[strlen(p)] == ' ');
    printf("# %zu operators: %s\n", n, joined);
    free(readme);
    free(src);
}

/* ---- ONNX's own test cases ---------------------------------------------- */

/* The cases that must import and match their reference output: the
 * supported operators' node tests and the PyTorch-converted models. The
 * list may only grow. */
static const char *const must_pass[] = {
    "node/test_add", "node/test_averagepool_2d_default",
    "node/test_averagepool_2d_pads",
    "node/test_averagepool_2d_pads_count_include_pad",
    "node/test_averagepool_2d_precomputed_pads",
    "node/test_averagepool_2d_precomputed_pads_count_include_pad",
    "node/test_averagepool_2d_precomputed_same_upper",
    "node/test_averagepool_2d_precomputed_strides",
    "node/test_averagepool_2d_same_lower",
    "node/test_averagepool_2d_same_upper", "node/test_averagepool_2d_strides",
    "node/test_basic_conv_with_padding", "node/test_basic_conv_without_padding",
    "node/test_batchnorm_epsilon", "node/test_batchnorm_example",
    "node/test_clip_default_min", "node/test_concat_2d_axis_1",
    "node/test_concat_2d_axis_negative_1", "node/test_concat_3d_axis_1",
    "node/test_concat_3d_axis_2", "node/test_concat_3d_axis_negative_1",
    "node/test_concat_3d_axis_negative_2", "node/test_conv_with_autopad_same",
    "node/test_conv_with_strides_and_asymmetric_padding",
    "node/test_conv_with_strides_no_padding",
    "node/test_conv_with_strides_padding", "node/test_dropout_default",
    "node/test_dropout_default_ratio", "node/test_erf",
    "node/test_flatten_axis1", "node/test_flatten_default_axis",
    "node/test_flatten_negative_axis3", "node/test_gemm_alpha",
    "node/test_gemm_beta", "node/test_gemm_default_no_bias",
    "node/test_gemm_default_scalar_bias",
    "node/test_gemm_default_single_elem_vector_bias",
    "node/test_gemm_default_vector_bias", "node/test_gemm_default_zero_bias",
    "node/test_gemm_transposeB", "node/test_globalaveragepool",
    /* A a graph input [K, N] read transposed: its batch is axis 1 */
    "node/test_gemm_transposeA", "node/test_gemm_all_attributes",
    "node/test_globalaveragepool_precomputed", "node/test_identity",
    "node/test_logsoftmax_axis_1", "node/test_logsoftmax_axis_2",
    "node/test_logsoftmax_default_axis", "node/test_logsoftmax_negative_axis",
    "node/test_logsoftmax_example_1", "node/test_logsoftmax_large_number",
    "node/test_matmul_2d", "node/test_matmul_3d", "node/test_matmul_4d",
    "node/test_maxpool_2d_default",
    "node/test_maxpool_2d_pads", "node/test_maxpool_2d_precomputed_pads",
    "node/test_maxpool_2d_precomputed_same_upper",
    "node/test_maxpool_2d_precomputed_strides",
    "node/test_maxpool_2d_same_lower", "node/test_maxpool_2d_same_upper",
    "node/test_maxpool_2d_strides", "node/test_relu", "node/test_sigmoid",
    "node/test_softmax_axis_1", "node/test_softmax_axis_2",
    "node/test_softmax_default_axis", "node/test_softmax_negative_axis",
    "node/test_softmax_example", "node/test_softmax_large_number",
    "node/test_transpose_all_permutations_0",
    "node/test_transpose_all_permutations_1",
    "node/test_tanh",
    /* the expanded forms, ReduceMax .. Div (Log, Sub): one layer each */
    "node/test_softmax_axis_1_expanded",
    "node/test_softmax_axis_2_expanded",
    "node/test_softmax_default_axis_expanded",
    "node/test_softmax_negative_axis_expanded",
    "node/test_softmax_large_number_expanded",
    "node/test_softmax_example_expanded",
    "node/test_logsoftmax_axis_1_expanded",
    "node/test_logsoftmax_axis_2_expanded",
    "node/test_logsoftmax_default_axis_expanded",
    "node/test_logsoftmax_negative_axis_expanded",
    "node/test_logsoftmax_large_number_expanded",
    "node/test_logsoftmax_example_1_expanded",
    "pytorch-converted/test_AvgPool2d",
    "pytorch-converted/test_AvgPool2d_stride",
    "pytorch-converted/test_BatchNorm1d_3d_input_eval",
    "pytorch-converted/test_BatchNorm2d_eval",
    "pytorch-converted/test_BatchNorm2d_momentum_eval",
    "pytorch-converted/test_Conv2d", "pytorch-converted/test_Conv2d_depthwise",
    "pytorch-converted/test_Conv2d_depthwise_padded",
    "pytorch-converted/test_Conv2d_dilated",
    "pytorch-converted/test_ConstantPad2d",
    "pytorch-converted/test_ZeroPad2d",
    "pytorch-converted/test_Conv2d_depthwise_strided",
    "pytorch-converted/test_Conv2d_depthwise_with_multiplier",
    "pytorch-converted/test_Conv2d_groups",
    "pytorch-converted/test_Conv2d_groups_thnn",
    "pytorch-converted/test_Conv2d_no_bias",
    "pytorch-converted/test_Conv2d_padding",
    "pytorch-converted/test_Conv2d_strided", "pytorch-converted/test_Linear",
    "pytorch-converted/test_Linear_no_bias",
    "pytorch-converted/test_LogSoftmax", "pytorch-converted/test_MaxPool2d",
    "pytorch-converted/test_ReLU", "pytorch-converted/test_Sigmoid",
    "pytorch-converted/test_Softmax", "pytorch-converted/test_Tanh",
    "pytorch-converted/test_log_softmax_dim3",
    "pytorch-converted/test_log_softmax_lastdim",
    "pytorch-converted/test_softmax_functional_dim3",
    "pytorch-converted/test_softmax_lastdim",
    "pytorch-operator/test_operator_concat2",
    "pytorch-operator/test_operator_conv",
    "pytorch-operator/test_operator_flatten",
    "simple/test_single_relu_model",
};

static int listed(const char *rel)
{
    for (size_t i = 0; i < sizeof must_pass / sizeof must_pass[0]; i++) {
        if (strcmp(must_pass[i], rel) == 0) {
            return 1;
        }
    }
    return 0;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void test_onnx_testdata(void **state)
{
    static const char *const areas[] = {"node", "pytorch-converted",
                                        "pytorch-operator", "simple"};
    size_t seen = 0, imported = 0, matched = 0, refused = 0, listed_ok = 0;
    (void)state;
    if (testdata == NULL) {
        skip();
    }
    for (size_t a = 0; a < sizeof areas / sizeof areas[0]; a++) {
        char dir[1024];
        char **names = NULL;
        size_t n = 0;
        struct dirent *e;
        DIR *dp;
        snprintf(dir, sizeof dir, "%s/%s", testdata, areas[a]);
        dp = opendir(dir);
        if (dp == NULL) {
            fail_msg("cannot open %s", dir);
        }
        while ((e = readdir(dp)) != NULL) {
            if (strncmp(e->d_name, "test_", 5) == 0) {
                names = realloc(names, (n + 1) * sizeof *names);
                assert_non_null(names);
                names[n++] = strdup(e->d_name);
            }
        }
        closedir(dp);
        qsort(names, n, sizeof *names, by_name);
        for (size_t i = 0; i < n; i++) {
            char rel[512], path[1024], msg[600] = "";
            double err;
            snprintf(rel, sizeof rel, "%s/%s", areas[a], names[i]);
            snprintf(path, sizeof path, "%s/%s", testdata, rel);
            int st = check_case(path, &err, msg, sizeof msg);
            seen++;
            if (st == MEMEST_OK) {
                imported++;
                matched += err >= 0 && err <= 1e-4;
                if (getenv("ONNX_TESTDATA_LIST")) {
                    printf("# %s %g\n", rel, err);
                }
            } else {
                /* refused cleanly: a known status and a message */
                assert_true(st == MEMEST_E_PARSE || st == MEMEST_E_SHAPE ||
                            st == MEMEST_E_RANGE);
                assert_true(strlen(msg) > strlen(path) + 2);
                refused++;
            }
            if (listed(rel)) {
                if (st != MEMEST_OK || !(err >= 0 && err <= 1e-4)) {
                    fail_msg("%s: %s (max relative error %g)", rel,
                             st == MEMEST_OK ? "output differs" : msg, err);
                }
                listed_ok++;
            }
            free(names[i]);
        }
        free(names);
    }
    printf("# ONNX test cases: %zu seen, %zu imported, %zu match their "
           "reference output within 1e-4, %zu refused\n",
           seen, imported, matched, refused);
    assert_int_equal(listed_ok, sizeof must_pass / sizeof must_pass[0]);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fixture_layers),
        cmocka_unit_test(test_fixture_outputs),
        cmocka_unit_test(test_torch_acts),
        cmocka_unit_test(test_move_layers),
        cmocka_unit_test(test_bad),
        cmocka_unit_test(test_dead_code),
        cmocka_unit_test(test_constants),
        cmocka_unit_test(test_io_errors),
        cmocka_unit_test(test_tensor_pb),
        cmocka_unit_test(test_operator_table),
        cmocka_unit_test(test_onnx_testdata),
    };
    if (argc < 2) {
        fprintf(stderr, "usage: %s FIXTURES_DIR [ONNX_TESTDATA_DIR]\n",
                argv[0]);
        return 2;
    }
    fixtures = argv[1];
    testdata = argc > 2 ? argv[2] : NULL;
    if (!memest_onnx_available()) {
        /* a build without the option: the functions say so */
        struct memest_diag d;
        memest_model *m = NULL;
        int st = memest_model_load_onnx("x.onnx", NULL, &m, &d);
        printf("# no ONNX support in this build: %s\n", d.message);
        return st == MEMEST_E_INVALID && m == NULL ? 0 : 1;
    }
    return cmocka_run_group_tests(tests, NULL, NULL);
}
