/* The model executor against an independent forward pass written here in
 * double precision (its own loops for dense, conv2d, pooling, activations
 * and softmax), for MLPs and CNNs with stride, padding and groups, in every
 * executed precision; the arena against libmemest's peak plan; parameters
 * round trip; the operator profile's counts against libmemest's table.
 *
 * Tolerances are not constants picked to pass: the reference carries, next
 * to every value r, an error model derived by first-order forward error
 * analysis from the unit roundoff of the precision (fp32 2^-24, fp16
 * 2^-11, bf16 2^-8; int8: half the quantisation step max|x| / 127 of each
 * tensor and of each weight channel) and the depth of each sum. The
 * analysis is the probabilistic one of Higham and Mary (SIAM J. Sci.
 * Comput. 41(5), 2019): rounding errors of a sum of n terms are treated as
 * independent and mean-zero, so they grow like sqrt(n) u sum|w x| instead
 * of the worst case n u sum|w x|, and errors already in the inputs
 * combine in quadrature. Rounding and quantisation errors are modelled as
 * uniform noise (see the error model below); with LAMBDA = 8 standard
 * deviations a Gaussian tail is below 1e-15 per output. The
 * worst-case bound would be rigorous but, for a 784-wide layer, about 30
 * times looser: too loose to catch a wrong fp32 result. The bound is also
 * checked to be small against the outputs (max_relative_bound), so a loose
 * tolerance cannot hide a wrong result either. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../max_seen.h"
#include "edgefit/kernels.h"
#include "edgefit/memest.h"
#include "edgefit/profile.h"

#define SEED UINT64_C(20261122)

/* |a - b| <= tol, with the values in the message. */
#define ASSERT_NEAR(a, b, tol)                                              \
    do {                                                                    \
        const double a_ = (a), b_ = (b), t_ = (tol);                        \
        if (!(fabs(a_ - b_) <= t_)) {                                       \
            fail_msg("%s = %.17g, expected %.17g (tolerance %.3g)", #a, a_, \
                     b_, t_);                                               \
        }                                                                   \
    } while (0)

/* Unit roundoffs: fp32 2^-24, fp16 2^-11 (10 stored mantissa bits), bf16
 * 2^-8 (7 bits). */
#define U32 0x1p-24
#define U16 0x1p-11
#define UBF 0x1p-8
#define LAMBDA 8.0

/* ---- the test's own random numbers (xorshift64*) ------------------------- */

static uint64_t rng_state;

static double rnd(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return (double)((rng_state * UINT64_C(2685821657736338717)) >> 11) *
           0x1p-53;
}

static float rnd_sym(double a)
{
    return (float)((2.0 * rnd() - 1.0) * a);
}

/* ---- models ---------------------------------------------------------------- */

static memest_model *model_of(const char *text)
{
    memest_model *m = NULL;
    struct memest_diag d;
    int st = memest_is_preset_name(text) ? memest_model_preset(text, &m, &d)
                                         : memest_model_parse(text, &m, &d);
    if (st != MEMEST_OK) {
        fail_msg("model: %s at %d:%d", d.message, d.line, d.column);
    }
    return m;
}

static const char *const MODELS[] = {
    /* MLP, every activation after dense, no softmax at the end */
    "input 12\n"
    "dense 16 act=relu\n"
    "dense 9 act=tanh\n"
    "dense 7 act=sigmoid\n"
    "dense 6 act=gelu\n"
    "dense 5\n",
    /* the preset MLP with its softmax output */
    "mlp:20-16-10",
    /* CNN: stride 2 with padding and 2 groups, depthwise (groups = channels)
     * with gelu, max pool, 1x1 conv without bias, average pool with
     * padding, standalone activations, flatten, dense */
    "input 4x9x9\n"
    "conv2d 6 k=3 s=2 p=1 g=2 act=relu\n"
    "conv2d 6 k=3 p=1 g=6 act=gelu\n"
    "maxpool k=2\n"
    "conv2d 4 k=1 bias=no\n"
    "tanh\n"
    "avgpool k=3 s=1 p=1\n"
    "flatten\n"
    "dense 7 act=none\n"
    "sigmoid\n",
    /* channel softmax on a CxHxW tensor, stride 3 without padding,
     * overlapping max pool with padding */
    "input 2x10x10\n"
    "conv2d 5 k=4 s=3 act=none\n"
    "maxpool k=3 s=2 p=1\n"
    "conv2d 3 k=1 act=softmax\n",
    /* padding wider than the kernel: whole rows and columns of zeros */
    "input 2x5x5\n"
    "conv2d 4 k=2 s=2 p=3 g=2 act=tanh\n"
    "avgpool k=2 s=1\n"
    "flatten\n"
    "dense 3\n",
    /* depthwise layers on the direct kernel: relu fused, stride 2 without
     * bias, a 5x5 window, DS-CNN's narrow planes */
    "input 3x11x5\n"
    "conv2d 3 k=3 p=1 g=3 act=relu\n"
    "conv2d 3 k=3 s=2 p=1 g=3 bias=no\n"
    "conv2d 3 k=5 p=2 g=3 act=relu bias=no\n"
    "flatten\n"
    "dense 4\n",
    /* DS-CNN's first layer (10x4, stride 2, padding 5,1,5,2) and its
     * pointwise layers straight on the activation planes; rectangular
     * strides and asymmetric padding on a grouped layer */
    "input 1x21x10\n"
    "conv2d 16 k=10x4 s=2 p=5,1,5,2 act=relu\n"
    "conv2d 16 k=3 p=1 g=16 act=relu\n"
    "conv2d 12 k=1 act=relu\n"
    "conv2d 6 k=2x3 s=1x2 p=0,2,1,0 g=2\n"
    "flatten\n"
    "dense 5\n",
    /* dilated convolutions (dense, grouped and depthwise, rectangular),
     * ceil-mode pools whose last windows are cut, an average counting
     * padding and one not */
    "input 3x13x12\n"
    "conv2d 6 k=3 p=2 d=2 act=tanh\n"
    "conv2d 6 k=3x2 s=2x1 p=1,3,1,3 d=1x3 g=3\n"
    "conv2d 6 k=3 p=2 d=2 g=6 act=relu\n"
    "maxpool k=2 s=2 ceil=yes\n"
    "avgpool k=3 s=2 p=1 ceil=yes count_pad=yes\n"
    "avgpool k=2 s=1 p=1 ceil=yes count_pad=no\n"
    "flatten\n"
    "dense 5\n",
    /* pad layers: a value before a max pool, zeros (values, not padding)
     * before another, asymmetric sides */
    "input 2x7x6\n"
    "conv2d 4 k=3 act=tanh\n"
    "pad p=1,0,2,1 value=-0.25\n"
    "maxpool k=2\n"
    "pad p=0,1,1,0\n"
    "maxpool k=2 s=1\n"
    "flatten\n"
    "dense 3\n",
    /* the default model of edgefit-layerwise */
    "smallcnn",
};
#define N_MODELS (sizeof MODELS / sizeof MODELS[0])

/* Graph models in the text format: every layer kind and activation of
 * graphs, with the reference above reading each layer's inputs. */
static const char *const GRAPH_MODELS[] = {
    /* residual: a batch norm folded into c2, an add with relu, a
     * standalone batch norm with relu, a branch joined by concat, global
     * average pooling, flatten and dropout as views, log-softmax */
    "input 3x8x8\n"
    "conv2d 8 k=3 p=1 act=relu name=c1\n"
    "conv2d 8 k=3 p=1 name=c2\n"
    "batchnorm eps=1e-3\n"
    "add in=bn1,c1 act=relu name=sum\n"
    "batchnorm act=relu\n"
    "conv2d 4 k=1 name=c3\n"
    "concat in=c3,sum\n"
    "globalavgpool\n"
    "flatten\n"
    "dropout\n"
    "dense 5 act=logsoftmax\n",
    /* branching: two pooling branches of one conv (rectangular windows,
     * two strides, padding per side, an average that counts only the
     * cells inside the input), joined; batchnorm on CxHxW, erf, identity,
     * a padded rectangular average, a channel log-softmax */
    "input 2x9x7\n"
    "conv2d 4 k=3 p=1 act=relu6 name=a\n"
    "maxpool k=3x2 s=2x1 p=1,0,1,1 name=mp\n"
    "avgpool k=3 s=2x1 p=1 count_pad=no in=a name=ap\n"
    "concat in=mp,ap\n"
    "batchnorm\n"
    "erf\n"
    "identity\n"
    "avgpool k=2x3 s=1 p=0,1,1,0\n"
    "logsoftmax\n",
    /* two inputs, vectors: an add of three, a concat of vectors, a
     * batchnorm over features, a softmax */
    "input 10 name=x\n"
    "input 6 name=y\n"
    "dense 8 in=x act=tanh name=d1\n"
    "dense 8 in=y act=sigmoid name=d2\n"
    "add in=d1,d2,d1 act=relu6 name=s\n"
    "concat in=s,y\n"
    "batchnorm\n"
    "dense 4 act=softmax\n",
    /* rank 2 (ONNX's 3-D node tests): batchnorm over dim[0], log-softmax
     * over the features (dim[1], the default of T x D), an add reading
     * the model input, ending in a view */
    "input 4x5\n"
    "batchnorm\n"
    "relu6 name=r\n"
    "add in=r,input act=erf\n"
    "logsoftmax\n"
    "dropout\n",
    /* the activations of the mobile networks, fused after a conv, a
     * dense, an add and a folded batch norm, and standalone, with their
     * parameters */
    "input 3x7x6\n"
    "conv2d 8 k=3 p=1 act=hardswish name=c1\n"
    "conv2d 8 k=3 p=1 g=8 act=silu name=c2\n"
    "conv2d 8 k=1 act=leakyrelu alpha=0.1 name=c3\n"
    "add in=c1,c3 act=clip min=-0.5 max=1.25 name=s\n"
    "conv2d 8 k=3 p=1 name=c4\n"
    "batchnorm act=elu alpha=0.7\n"
    "hardsigmoid alpha=0.25 beta=0.4\n"
    "softplus\n"
    "hardswish\n"
    "silu\n"
    "elu\n"
    "leakyrelu alpha=0.02\n"
    "clip min=-inf max=0.9\n"
    "globalavgpool\n"
    "flatten\n"
    "dense 6 act=hardsigmoid\n"
    "dense 4 act=softplus\n",
    /* squeeze-excite and element-wise arithmetic: the gate multiplied in
     * both orders, a broadcast sub and div (the gate first), constants on
     * either side, an add of a constant with relu, equal-shape mul and
     * div */
    "input 8x6x6\n"
    "conv2d 16 k=3 p=1 act=relu name=a\n"
    "globalavgpool name=g\n"
    "conv2d 4 k=1 act=relu name=f1\n"
    "conv2d 16 k=1 act=sigmoid name=f2\n"
    "mul in=a,f2 name=se\n"
    "mul in=f2,se name=se2\n"
    "sub in=se2,g name=d\n"
    "div scalar=6\n"
    "add scalar=1 act=relu\n"
    "sub scalar_left=1 name=om\n"
    "mul in=om,om name=sq\n"
    "add in=sq scalar=1 name=den\n"
    "div in=d,den name=q\n"
    "div in=g,den name=gq\n"
    "add in=gq,q\n"
    "conv2d 8 k=1\n",
    /* vectors: [4] times [1], [1] minus [4] */
    "input 6 name=x\n"
    "dense 4 act=tanh name=d1\n"
    "dense 1 in=x name=d2\n"
    "mul in=d1,d2 name=p\n"
    "sub in=d2,p\n"
    "dense 3\n",
    /* data movement: a channel shuffle, the channel split after it (two
     * slices of one tensor), a concat, slices along w and h, a shuffle in
     * three groups, a slice of a vector's features */
    "input 4x6x5\n"
    "conv2d 8 k=3 p=1 act=relu name=c\n"
    "shuffle g=2 name=sh\n"
    "slice axis=c begin=0 end=3 name=a\n"
    "slice axis=c begin=3 end=8 in=sh name=b\n"
    "conv2d 3 k=1 in=b name=cb\n"
    "concat in=a,cb\n"
    "slice axis=w begin=0 end=4\n"
    "slice axis=h begin=1 end=5\n"
    "reshape shape=12x4x2\n"
    "shuffle g=3\n"
    "globalavgpool\n"
    "flatten\n"
    "slice axis=c begin=1 end=5\n",
    /* concat along h and w of CxHxW, three inputs, and along the second
     * dimension of AxB tensors (YOLO's heads, reshaped then joined) */
    "input 3x4x5\n"
    "conv2d 4 k=3 p=1 act=relu name=a\n"
    "conv2d 4 k=3x1 in=input name=b\n"
    "concat in=a,b,a axis=h name=ch\n"
    "conv2d 4 k=1x3 in=ch name=d\n"
    "concat in=ch,d axis=w name=cw\n"
    "conv2d 6 k=1 name=e\n"
    "reshape shape=6x80 name=r1\n"
    "maxpool k=2 in=e\n"
    "reshape shape=6x20 name=r2\n"
    "concat in=r1,r2 axis=h\n"
    "flatten\n"
    "dense 5\n",
    /* a keyword transformer's per-position layers on 6 steps of 8
     * features: dense over the features, class token, position
     * embedding, layernorm, a residual add, a softmax over the steps, a
     * final dense with its softmax over the features */
    "input 6x8\n"
    "dense 12 act=gelu_erf\n"
    "clstoken\n"
    "posembed name=p\n"
    "layernorm name=ln\n"
    "dense 16 act=gelu_erf\n"
    "dense 12\n"
    "add in=p,dense3 name=r\n"
    "softmax axis=0\n"
    "dense 5 act=softmax\n",
    /* layernorm without beta over both axes (ONNX's axis=0, eps 1e-3), a
     * softmax over the steps, element-wise layers on T x D (a sub, a mul
     * broadcasting the first step 1 x 7 over the five, gelu, dropout,
     * identity), a log-softmax fused over the features; then a layernorm
     * on a vector */
    "input 5x7\n"
    "layernorm axis=0 eps=1e-3 bias=no name=ln\n"
    "softmax axis=0 name=s\n"
    "sub in=s,input\n"
    "slice axis=c end=1 in=input name=row\n"
    "mul in=sub1,row\n"
    "gelu_erf\n"
    "dropout\n"
    "identity\n"
    "dense 3 act=logsoftmax bias=no\n",
    "input 9\n"
    "layernorm\n"
    "dense 4 act=tanh\n",
};
#define N_GRAPH_MODELS (sizeof GRAPH_MODELS / sizeof GRAPH_MODELS[0])

static const enum memest_precision PRECISIONS[] = {
    MEMEST_FP32, MEMEST_FP16, MEMEST_BF16, MEMEST_INT8_DYNAMIC,
};

/* ---- the double-precision reference with its error model ----------------- */

/*
 * Each element's error, executor minus reference, is modelled as
 * delta = a + b: |a| <= d is a bounded evaluation error of the last
 * operator (a kernel's stated ulp error, a rounded bias), b is noise with
 * standard deviation s: rounding and quantisation errors, each uniform
 * over its interval [-h, h] (Widrow's model of quantisation noise:
 * standard deviation h / sqrt(3)), and everything sums accumulated from
 * them. Errors entering a sum count as d + s; sums combine them in
 * quadrature, sqrt(sum w^2 (d + s)^2); the accepted error of an output is
 * d + LAMBDA s + 1e-6.
 */
struct tensor {
    size_t batch, c, h, w; /* rank 1: h = w = 1 */
    double *r;             /* reference values */
    double *d;             /* bounded part of the error */
    double *s;             /* sub-Gaussian scale of the error */
};

static size_t tsize(const struct tensor *t)
{
    return t->batch * t->c * t->h * t->w;
}

static void tensor_alloc(struct tensor *t, size_t batch,
                         const struct memest_shape *sh)
{
    t->batch = batch;
    t->c = (size_t)sh->dim[0];
    t->h = sh->rank >= 2 ? (size_t)sh->dim[1] : 1;
    t->w = sh->rank == 3 ? (size_t)sh->dim[2] : 1;
    t->r = calloc(tsize(t), sizeof(double));
    t->d = calloc(tsize(t), sizeof(double));
    t->s = calloc(tsize(t), sizeof(double));
    assert_non_null(t->r);
    assert_non_null(t->d);
    assert_non_null(t->s);
}

static void tensor_copy(struct tensor *dst, const struct tensor *src)
{
    const size_t n = tsize(src);
    memcpy(dst->r, src->r, n * sizeof(double));
    memcpy(dst->d, src->d, n * sizeof(double));
    memcpy(dst->s, src->s, n * sizeof(double));
}

/* Constant padding: the input's elements and errors moved, the value
 * (exact) around them. */
static void ref_pad(const struct memest_layer *L, const struct tensor *x,
                    struct tensor *y)
{
    const size_t pt = (size_t)L->pad_top, pl = (size_t)L->pad_left;
    for (size_t p = 0; p < y->batch * y->c; p++) {
        for (size_t oy = 0; oy < y->h; oy++) {
            for (size_t ox = 0; ox < y->w; ox++) {
                const size_t yi = (p * y->h + oy) * y->w + ox;
                if (oy < pt || oy - pt >= x->h || ox < pl ||
                    ox - pl >= x->w) {
                    y->r[yi] = L->pad_value;
                    y->d[yi] = y->s[yi] = 0.0;
                    continue;
                }
                const size_t xi = (p * x->h + oy - pt) * x->w + ox - pl;
                y->r[yi] = x->r[xi];
                y->d[yi] = x->d[xi];
                y->s[yi] = x->s[xi];
            }
        }
    }
}

static void tensor_free(struct tensor *t)
{
    free(t->r);
    free(t->d);
    free(t->s);
}

/* The accepted error of element i. */
static double tol_of(const struct tensor *t, size_t i)
{
    return t->d[i] + LAMBDA * t->s[i] + 1e-6;
}

/* The error scale element i brings into a sum. */
static double scale_in(const struct tensor *t, size_t i)
{
    return t->d[i] + t->s[i];
}

static double max_abs(const double *v, size_t n)
{
    double m = 0.0;
    for (size_t i = 0; i < n; i++) {
        m = max_seen(m, fabs(v[i]));
    }
    return m;
}

/* Storing a tensor at the precision rounds it: to 16 bits within a
 * relative u (plus half the smallest subnormal step of fp16); int8
 * per-tensor quantisation within half a step, the step being the
 * executor's max|x| / 127, at most max(|r| + tolerance) / 127. fp32
 * stores what it computed. The rounding joins the noise. */
static void propagate_store(struct tensor *t, enum memest_precision p)
{
    const size_t n = tsize(t);
    double step = 0.0;
    if (p == MEMEST_INT8_DYNAMIC) {
        for (size_t i = 0; i < n; i++) {
            step = max_seen(step, (fabs(t->r[i]) + tol_of(t, i)) / 127.0);
        }
    }
    for (size_t i = 0; i < n; i++) {
        const double mag = fabs(t->r[i]) + tol_of(t, i);
        double h = 0.0;
        switch (p) {
        case MEMEST_FP16:
            h = U16 * mag + 0x1p-25;
            break;
        case MEMEST_BF16:
            h = UBF * mag;
            break;
        case MEMEST_INT8_DYNAMIC:
            h = 0.5 * step;
            break;
        default:
            break;
        }
        t->s[i] = sqrt(t->s[i] * t->s[i] + h * h / 3.0);
    }
}

/* How far the executor's stored weights may be from the master w: 16 bits
 * round relatively; int8 per output channel is off by half that channel's
 * step max|w_c| / 127. dw receives one bound per weight (uniform noise of
 * standard deviation dw / sqrt(3) in the sums). */
static void weight_error(enum memest_precision p, const float *w, size_t oc,
                         size_t per, double *dw)
{
    for (size_t c = 0; c < oc; c++) {
        double m = 0.0;
        for (size_t j = 0; j < per; j++) {
            m = max_seen(m, fabs(w[c * per + j]));
        }
        for (size_t j = 0; j < per; j++) {
            const double a = fabs(w[c * per + j]);
            dw[c * per + j] = p == MEMEST_FP16   ? U16 * a + 0x1p-25
                              : p == MEMEST_BF16 ? UBF * a
                              : p == MEMEST_INT8_DYNAMIC ? 0.5 * m / 127.0
                                                 : 0.0;
        }
    }
}

/* A bias stored in 16 bits is rounded; int8 keeps it in float. */
static double bias_error(enum memest_precision p, float b)
{
    return p == MEMEST_FP16   ? U16 * fabs(b) + 0x1p-25
           : p == MEMEST_BF16 ? UBF * fabs(b)
                              : 0.0;
}

/* One output of a dense or conv2d layer: value sum w x + b. The inputs'
 * errors (scale ex) and the weights' (bound dw) enter in quadrature; the
 * float sum of the terms (any order, fused or not) errs like
 * sqrt(terms + 2) u32 (sum |w x| + |b|) (the +2: the bias add and the int8
 * requantisation's product); a rounded bias adds its bound. */
struct dot {
    double val, abs_sum, var;
    size_t terms;
};

static void dot_add(struct dot *dt, double w, double dw, double x, double ex)
{
    const double aw = fabs(w) + dw;
    dt->val += w * x;
    dt->abs_sum += aw * (fabs(x) + LAMBDA * ex);
    dt->var += aw * aw * ex * ex + dw * dw * x * x / 3.0;
    dt->terms++;
}

static void dot_finish(struct dot *dt, double b, double db,
                       struct tensor *y, size_t i)
{
    y->r[i] = dt->val + b;
    y->d[i] = db;
    y->s[i] = sqrt(dt->var) + sqrt((double)(dt->terms + 2)) * U32 *
                                  (dt->abs_sum + fabs(b) + db);
}

/* A dense layer on a vector, or on each of the T steps of a T x D
 * sequence (t->c = T, t->h = D): rows of `in` features either way. */
static void ref_dense(const struct memest_layer *L, const struct tensor *x,
                      struct tensor *y, const float *w, const float *b,
                      enum memest_precision p)
{
    const bool seq = L->in_shape.rank == 2;
    const size_t in = seq ? x->h : x->c * x->h * x->w;
    const size_t out = seq ? y->h : y->c;
    const size_t rows = x->batch * (seq ? x->c : 1);
    double *dw = calloc(in * out, sizeof(double));
    assert_non_null(dw);
    weight_error(p, w, out, in, dw);
    for (size_t n = 0; n < rows; n++) {
        for (size_t o = 0; o < out; o++) {
            struct dot dt = {0};
            for (size_t i = 0; i < in; i++) {
                dot_add(&dt, w[o * in + i], dw[o * in + i], x->r[n * in + i],
                        scale_in(x, n * in + i));
            }
            dot_finish(&dt, b ? b[o] : 0.0, b ? bias_error(p, b[o]) : 0.0,
                       y, n * out + o);
        }
    }
    free(dw);
}

static void ref_conv(const struct memest_layer *L, const struct tensor *x,
                     struct tensor *y, const float *w, const float *b,
                     enum memest_precision p)
{
    const size_t g = (size_t)L->groups, kh = (size_t)L->kernel_h;
    const size_t kw = (size_t)L->kernel_w, sh = (size_t)L->stride_h;
    const size_t sw = (size_t)L->stride_w, pt = (size_t)L->pad_top;
    const size_t pl = (size_t)L->pad_left;
    /* dilated taps are d apart (PyTorch's dilation) */
    const size_t dh = (size_t)L->dilation_h, dwl = (size_t)L->dilation_w;
    const size_t icg = x->c / g, ocg = y->c / g, per = icg * kh * kw;
    double *dw = calloc(y->c * per, sizeof(double));
    assert_non_null(dw);
    weight_error(p, w, y->c, per, dw);
    for (size_t n = 0; n < x->batch; n++) {
        for (size_t oc = 0; oc < y->c; oc++) {
            const size_t grp = oc / ocg;
            for (size_t oy = 0; oy < y->h; oy++) {
                for (size_t ox = 0; ox < y->w; ox++) {
                    struct dot dt = {0};
                    for (size_t ci = 0; ci < icg; ci++) {
                        const size_t c = grp * icg + ci;
                        for (size_t ky = 0; ky < kh; ky++) {
                            for (size_t kx = 0; kx < kw; kx++) {
                                const long iy = (long)(oy * sh + ky * dh) -
                                                (long)pt;
                                const long ix = (long)(ox * sw + kx * dwl) -
                                                (long)pl;
                                if (iy < 0 || ix < 0 || iy >= (long)x->h ||
                                    ix >= (long)x->w) {
                                    continue;
                                }
                                const size_t wi =
                                    oc * per + (ci * kh + ky) * kw + kx;
                                const size_t xi =
                                    ((n * x->c + c) * x->h + (size_t)iy) *
                                        x->w +
                                    (size_t)ix;
                                dot_add(&dt, w[wi], dw[wi], x->r[xi],
                                        scale_in(x, xi));
                            }
                        }
                    }
                    const size_t yi =
                        ((n * y->c + oc) * y->h + oy) * y->w + ox;
                    dot_finish(&dt, b ? b[oc] : 0.0,
                               b ? bias_error(p, b[oc]) : 0.0, y, yi);
                }
            }
        }
    }
    free(dw);
}

/* Max pooling: the result is one of the window's elements, so its error is
 * at most the largest of theirs; no rounding. Average pooling (padding
 * counts as zeros, divisor k*k): the inputs' errors in quadrature over
 * k*k, plus a float sum of k*k terms and a division. */
static void ref_pool(const struct memest_layer *L, const struct tensor *x,
                     struct tensor *y)
{
    const size_t kh = (size_t)L->kernel_h, kw = (size_t)L->kernel_w;
    const size_t sh = (size_t)L->stride_h, sw = (size_t)L->stride_w;
    const long pt = (long)L->pad_top, pl = (long)L->pad_left;
    const int is_max = L->kind == MEMEST_KIND_MAXPOOL;
    for (size_t n = 0; n < x->batch; n++) {
        for (size_t c = 0; c < x->c; c++) {
            for (size_t oy = 0; oy < y->h; oy++) {
                for (size_t ox = 0; ox < y->w; ox++) {
                    double v = is_max ? -INFINITY : 0.0;
                    double dmax = 0.0, smax = 0.0, var = 0.0, a = 0.0;
                    size_t real = 0;
                    size_t padded = 0; /* inside input and padding */
                    for (size_t ky = 0; ky < kh; ky++) {
                        for (size_t kx = 0; kx < kw; kx++) {
                            const long iy = (long)(oy * sh + ky) - pt;
                            const long ix = (long)(ox * sw + kx) - pl;
                            /* a ceil-mode window may pass the padding:
                             * PyTorch's divisor leaves those cells out */
                            padded += iy + pt >= 0 && ix + pl >= 0 &&
                                      iy < (long)(x->h + L->pad_bottom) &&
                                      ix < (long)(x->w + L->pad_right);
                            if (iy < 0 || ix < 0 || iy >= (long)x->h ||
                                ix >= (long)x->w) {
                                continue;
                            }
                            const size_t xi =
                                ((n * x->c + c) * x->h + (size_t)iy) * x->w +
                                (size_t)ix;
                            real++;
                            if (is_max) {
                                v = max_seen(v, x->r[xi]);
                                dmax = max_seen(dmax, x->d[xi]);
                                smax = max_seen(smax, x->s[xi]);
                            } else {
                                const double e = scale_in(x, xi);
                                v += x->r[xi];
                                var += e * e;
                                a += fabs(x->r[xi]) + tol_of(x, xi);
                            }
                        }
                    }
                    const size_t yi = ((n * y->c + c) * y->h + oy) * y->w + ox;
                    if (is_max) {
                        y->r[yi] = v;
                        y->d[yi] = dmax;
                        y->s[yi] = smax;
                    } else {
                        /* PyTorch divides by the whole window, ONNX's
                         * default by the cells inside the input */
                        const double kk = L->count_include_pad
                                              ? (double)padded
                                              : (double)real;
                        y->r[yi] = v / kk;
                        y->d[yi] = 0.0;
                        y->s[yi] = sqrt(var) / kk +
                                   sqrt(kk + 2.0) * U32 * a / kk;
                    }
                }
            }
        }
    }
}

/* Elementwise activations in place. Both parts of the input's error are
 * multiplied by the function's largest slope (relu and tanh 1, sigmoid
 * 1/4, gelu 1.13), and the kernel's own error is added to the bounded
 * part: libkernels states 4 ulp (8 u32 relative) for tanh and sigmoid and
 * a relative 1e-5 for gelu at negative inputs. Softmax, to first order:
 * dp_i = p_i (dz_i - sum_j p_j dz_j), so the scale is at most
 * p_i (e_i + sum_j p_j e_j); a float evaluation adds (cols + 8) u32
 * relative. */
static double gelu_ref(double x)
{
    const double k = sqrt(2.0 / acos(-1.0));
    return 0.5 * x * (1.0 + tanh(k * (x + 0.044715 * x * x * x)));
}

/* n values at stride apart starting at element first; log_sm: the
 * log-softmax, z - max - log sum exp(z - max), whose first-order error
 * dz_i - sum_j p_j dz_j has the scale e_i + sum_j p_j e_j, and which
 * libkernels evaluates in double and rounds once. */
static void softmax_group(struct tensor *t, size_t first, size_t n,
                          size_t stride, bool log_sm)
{
    double m = -INFINITY, sum = 0.0, pe = 0.0;
    for (size_t i = 0; i < n; i++) {
        m = max_seen(m, t->r[first + i * stride]);
    }
    for (size_t i = 0; i < n; i++) {
        sum += exp(t->r[first + i * stride] - m);
    }
    for (size_t i = 0; i < n; i++) {
        const size_t j = first + i * stride;
        pe += exp(t->r[j] - m) / sum * scale_in(t, j);
    }
    for (size_t i = 0; i < n; i++) {
        const size_t j = first + i * stride;
        const double z = t->r[j] - m;
        if (log_sm) {
            t->r[j] = z - log(sum);
            t->s[j] = scale_in(t, j) + pe;
            t->d[j] = 2.0 * U32 * fabs(t->r[j]);
        } else {
            const double pr = exp(z) / sum;
            t->r[j] = pr;
            t->s[j] = pr * (scale_in(t, j) + pe);
            t->d[j] = (double)(n + 8) * U32 * pr;
        }
    }
}

static void ref_act(enum memest_act act, double alpha, double beta,
                    unsigned axis, struct tensor *t)
{
    /* the kernels take the parameters as floats */
    const double fa = (double)(float)alpha, fb = (double)(float)beta;
    const size_t n = tsize(t);
    if (act == MEMEST_ACT_SOFTMAX || act == MEMEST_ACT_LOGSOFTMAX) {
        /* along the layer's axis of [batch][c][h][w]: groups of n at
         * stride `inner`, `outer` blocks of them */
        const size_t dims[3] = {t->c, t->h, t->w};
        size_t outer = t->batch, inner = 1;
        for (unsigned k = 0; k < 3; k++) {
            if (k < axis) {
                outer *= dims[k];
            } else if (k > axis) {
                inner *= dims[k];
            }
        }
        for (size_t o = 0; o < outer; o++) {
            for (size_t i = 0; i < inner; i++) {
                softmax_group(t, o * dims[axis] * inner + i, dims[axis],
                              inner, act == MEMEST_ACT_LOGSOFTMAX);
            }
        }
        return;
    }
    for (size_t i = 0; i < n; i++) {
        const double x = t->r[i];
        double y = x, slope = 1.0, kerr = 0.0;
        switch (act) {
        case MEMEST_ACT_RELU:
            y = x > 0.0 ? x : 0.0;
            break;
        case MEMEST_ACT_GELU:
            y = gelu_ref(x);
            slope = 1.13;
            kerr = 8.0 * U32 * fabs(y) + 1e-5 * fabs(y);
            break;
        case MEMEST_ACT_GELU_ERF:
            /* the exact form: its slope peaks at 1.13 too; the kernel's
             * error stated as for the tanh form */
            y = 0.5 * x * (1.0 + erf(x / sqrt(2.0)));
            slope = 1.13;
            kerr = 8.0 * U32 * fabs(y) + 1e-5 * fabs(y);
            break;
        case MEMEST_ACT_SIGMOID:
            y = 1.0 / (1.0 + exp(-x));
            slope = 0.25;
            kerr = 8.0 * U32 * fabs(y);
            break;
        case MEMEST_ACT_TANH:
            y = tanh(x);
            kerr = 8.0 * U32 * fabs(y);
            break;
        case MEMEST_ACT_RELU6:
            y = x > 0.0 ? (x < 6.0 ? x : 6.0) : 0.0;
            break;
        case MEMEST_ACT_ERF:
            y = erf(x);
            slope = 1.13; /* 2 / sqrt(pi) */
            kerr = 8.0 * U32 * fabs(y);
            break;
        /* the mobile activations: slope the largest |f'|, kerr the
         * kernels' stated error (kernels.h: silu and softplus 4 ulp, elu
         * 2; the exact ones a rounding per float operation) */
        case MEMEST_ACT_SILU:
            y = x / (1.0 + exp(-x));
            slope = 1.1; /* silu' peaks at 1.0998 */
            kerr = 10.0 * U32 * fabs(y) + 1e-37;
            break;
        case MEMEST_ACT_SOFTPLUS:
            y = x > 0.0 ? x + log1p(exp(-x)) : log1p(exp(x));
            kerr = 10.0 * U32 * fabs(y) + 1e-37;
            break;
        case MEMEST_ACT_ELU:
            y = x > 0.0 ? x : fa * expm1(x);
            slope = fmax(1.0, fabs(fa));
            kerr = 6.0 * U32 * fabs(y) + 1e-37;
            break;
        case MEMEST_ACT_LEAKYRELU:
            y = x < 0.0 ? fa * x : x;
            slope = fmax(1.0, fabs(fa));
            kerr = 2.0 * U32 * fabs(y);
            break;
        case MEMEST_ACT_HARDSIGMOID:
            y = fmin(1.0, fmax(0.0, fa * x + fb));
            slope = fabs(fa);
            kerr = 4.0 * U32 * (fabs(fa * x) + fabs(fb));
            break;
        case MEMEST_ACT_HARDSWISH: {
            const double h = fmin(1.0, fmax(0.0, x * (double)(1.0f / 6.0f) +
                                                     0.5));
            y = x * h;
            slope = 1.5; /* (2x + 3) / 6 at x = 3 */
            kerr = 6.0 * U32 * fabs(x) * (fabs(x) / 6.0 + 0.5);
            break;
        }
        case MEMEST_ACT_CLIP:
            y = x < fa ? fa : x > fb ? fb : x;
            if (fa > fb) {
                y = fb;
            }
            break;
        default:
            break;
        }
        t->r[i] = y;
        t->d[i] = slope * t->d[i] + kerr;
        t->s[i] = slope * t->s[i];
    }
}

/* y = act(x0 + x1 + ...): the inputs' errors add (bounded parts
 * linearly, noise in quadrature), and the float additions err like
 * sqrt(n + 1) u32 times the sum of magnitudes. */
static void ref_add(const struct tensor *const *xs, size_t count,
                    struct tensor *y, const struct memest_layer *L)
{
    for (size_t i = 0; i < tsize(y); i++) {
        double r = 0.0, d = 0.0, var = 0.0, a = 0.0;
        for (size_t j = 0; j < count; j++) {
            r += xs[j]->r[i];
            d += xs[j]->d[i];
            var += xs[j]->s[i] * xs[j]->s[i];
            a += fabs(xs[j]->r[i]) + tol_of(xs[j], i);
        }
        y->r[i] = r;
        y->d[i] = d;
        y->s[i] = sqrt(var) + sqrt((double)count + 1.0) * U32 * a;
    }
    ref_act(L->act, L->act_alpha, L->act_beta, L->axis, y);
}

/* Whether an add runs as a broadcast (ops/binary.c) rather than as a sum
 * of equal shapes. */
static bool same_shapes(const struct memest_shape *a,
                        const struct memest_shape *b)
{
    if (a->rank != b->rank) {
        return false;
    }
    for (unsigned d = 0; d < a->rank; d++) {
        if (a->dim[d] != b->dim[d]) {
            return false;
        }
    }
    return true;
}

static bool binary_broadcasts(const struct memest_layer *L)
{
    return L->scalar_side != MEMEST_SCALAR_NONE ||
           (L->input_count == 2 &&
            (!same_shapes(&L->in_shape, &L->out_shape) ||
             !same_shapes(&L->in_shape_b, &L->out_shape)));
}

/* Operand element (n, c, h, w) of y's grid from x, an extent of 1
 * repeated (numpy's broadcasting; the tests' operands have y's rank). */
static size_t bcast_at(const struct tensor *x, size_t n, size_t c, size_t h,
                       size_t w)
{
    return ((n * x->c + (x->c == 1 ? 0 : c)) * x->h + (x->h == 1 ? 0 : h)) *
               x->w +
           (x->w == 1 ? 0 : w);
}

/* add, sub, mul, div of two operands or of one and the layer's constant,
 * in double: the operands' errors carried to first order through the
 * partial derivatives ga, gb, and the float operation's rounding. */
static void ref_binary(const struct memest_layer *L,
                       const struct tensor *const *xs, struct tensor *y)
{
    const double k = (float)L->scalar;
    for (size_t n = 0; n < y->batch; n++) {
        for (size_t c = 0; c < y->c; c++) {
            for (size_t h = 0; h < y->h; h++) {
                for (size_t w = 0; w < y->w; w++) {
                    const size_t i = ((n * y->c + c) * y->h + h) * y->w + w;
                    double v[2], d[2] = {0, 0}, sd[2] = {0, 0},
                                 tl[2] = {0, 0};
                    size_t x = 0;
                    for (int o = 0; o < 2; o++) {
                        const bool is_k =
                            (L->scalar_side == MEMEST_SCALAR_RIGHT && o == 1) ||
                            (L->scalar_side == MEMEST_SCALAR_LEFT && o == 0);
                        if (is_k) {
                            v[o] = k;
                            continue;
                        }
                        const struct tensor *t = xs[x++];
                        const size_t j = bcast_at(t, n, c, h, w);
                        v[o] = t->r[j];
                        d[o] = t->d[j];
                        sd[o] = t->s[j];
                        tl[o] = tol_of(t, j);
                    }
                    double r, ga, gb;
                    if (L->kind == MEMEST_KIND_ADD) {
                        r = v[0] + v[1], ga = 1, gb = 1;
                    } else if (L->kind == MEMEST_KIND_SUB) {
                        r = v[0] - v[1], ga = 1, gb = -1;
                    } else if (L->kind == MEMEST_KIND_MUL) {
                        r = v[0] * v[1], ga = v[1], gb = v[0];
                    } else {
                        assert_int_equal(L->kind, MEMEST_KIND_DIV);
                        r = v[0] / v[1], ga = 1 / v[1],
                        gb = -v[0] / (v[1] * v[1]);
                    }
                    y->r[i] = r;
                    y->d[i] = fabs(ga) * d[0] + fabs(gb) * d[1];
                    y->s[i] = sqrt(ga * ga * sd[0] * sd[0] +
                                   gb * gb * sd[1] * sd[1]) +
                              2.0 * U32 *
                                  (fabs(r) + fabs(ga) * tl[0] +
                                   fabs(gb) * tl[1]);
                }
            }
        }
    }
    ref_act(L->act, L->act_alpha, L->act_beta, L->axis, y);
}

/* Along axis 0, 1 or 2 (c, h, w; h is the second dimension of a rank-2
 * sample): y[n][c][h][w] is x_j at the coordinates less the extents of
 * x_0 .. x_{j-1} along the axis, x_j the input whose range holds it. */
static void ref_concat(const struct tensor *const *xs, size_t count,
                       unsigned axis, struct tensor *y)
{
    for (size_t n = 0; n < y->batch; n++) {
        for (size_t c = 0; c < y->c; c++) {
            for (size_t h = 0; h < y->h; h++) {
                for (size_t w = 0; w < y->w; w++) {
                    size_t k = axis == 0 ? c : axis == 1 ? h : w;
                    size_t j = 0;
                    for (;; j++) {
                        const struct tensor *x = xs[j];
                        const size_t e = axis == 0   ? x->c
                                         : axis == 1 ? x->h
                                                     : x->w;
                        assert_true(j < count);
                        if (k < e) {
                            break;
                        }
                        k -= e;
                    }
                    const struct tensor *x = xs[j];
                    const size_t xc = axis == 0 ? k : c;
                    const size_t xh = axis == 1 ? k : h;
                    const size_t xw = axis == 2 ? k : w;
                    const size_t from = ((n * x->c + xc) * x->h + xh) * x->w +
                                        xw;
                    const size_t to = ((n * y->c + c) * y->h + h) * y->w + w;
                    y->r[to] = x->r[from];
                    y->d[to] = x->d[from];
                    y->s[to] = x->s[from];
                }
            }
        }
    }
}

/* A standalone batchnorm, x * scale[c] + shift[c] over dim[0]: one term
 * of a dot product with the shift as its bias, then its activation. */
static void ref_batchnorm(const struct memest_layer *L,
                          const struct tensor *x, struct tensor *y,
                          const float *scale, const float *shift,
                          enum memest_precision p)
{
    const size_t hw = x->h * x->w;
    for (size_t n = 0; n < x->batch; n++) {
        for (size_t c = 0; c < x->c; c++) {
            /* int8 keeps the scale and shift in float */
            const double ds = p == MEMEST_INT8_DYNAMIC ? 0.0 : bias_error(p, scale[c]);
            for (size_t i = 0; i < hw; i++) {
                const size_t at = (n * x->c + c) * hw + i;
                struct dot dt = {0};
                dot_add(&dt, scale[c], ds, x->r[at], scale_in(x, at));
                dot_finish(&dt, shift[c],
                           p == MEMEST_INT8_DYNAMIC ? 0.0 : bias_error(p, shift[c]),
                           y, at);
            }
        }
    }
    ref_act(L->act, L->act_alpha, L->act_beta, L->axis, y);
}

/* The mean of each plane: errors in quadrature over hw, a double sum
 * rounded once. */
static void ref_gap(const struct tensor *x, struct tensor *y)
{
    const size_t hw = x->h * x->w;
    for (size_t pl = 0; pl < x->batch * x->c; pl++) {
        double r = 0.0, var = 0.0, a = 0.0;
        for (size_t i = 0; i < hw; i++) {
            const size_t at = pl * hw + i;
            r += x->r[at];
            var += scale_in(x, at) * scale_in(x, at);
            a += fabs(x->r[at]) + tol_of(x, at);
        }
        y->r[pl] = r / (double)hw;
        y->d[pl] = 0.0;
        y->s[pl] = sqrt(var) / (double)hw + 2.0 * U32 * a / (double)hw;
    }
}

/* y[.., j] = x[.., at(j)]: values and errors move unchanged. */
static void move_elem(const struct tensor *x, size_t from, struct tensor *y,
                      size_t to)
{
    y->r[to] = x->r[from];
    y->d[to] = x->d[from];
    y->s[to] = x->s[from];
}

/* ShuffleNet's channel shuffle written from its definition: output
 * channel j * g + i is input channel i * (C / g) + j. */
static void ref_shuffle(const struct memest_layer *L, const struct tensor *x,
                        struct tensor *y)
{
    const size_t g = (size_t)L->groups, cg = x->c / g, hw = x->h * x->w;
    for (size_t n = 0; n < x->batch; n++) {
        for (size_t i = 0; i < g; i++) {
            for (size_t j = 0; j < cg; j++) {
                for (size_t k = 0; k < hw; k++) {
                    move_elem(x, (n * x->c + i * cg + j) * hw + k, y,
                              (n * x->c + j * g + i) * hw + k);
                }
            }
        }
    }
}

/* y[n][c][h][w] = x[n][c + bc][h + bh][w + bw], one offset non-zero. */
static void ref_slice(const struct memest_layer *L, const struct tensor *x,
                      struct tensor *y)
{
    const size_t b = (size_t)L->slice_begin;
    const size_t bc = L->slice_axis == 0 ? b : 0;
    const size_t bh = L->slice_axis == 1 ? b : 0;
    const size_t bw = L->slice_axis == 2 ? b : 0;
    for (size_t n = 0; n < y->batch; n++) {
        for (size_t c = 0; c < y->c; c++) {
            for (size_t h = 0; h < y->h; h++) {
                for (size_t w = 0; w < y->w; w++) {
                    move_elem(x,
                              ((n * x->c + c + bc) * x->h + h + bh) * x->w +
                                  w + bw,
                              y, ((n * y->c + c) * y->h + h) * y->w + w);
                }
            }
        }
    }
}

/* Layer normalisation over rows of D = units (the layer's last axes):
 * y = g (x - m) rstd + beta. To first order the inputs' errors e move y_i
 * by g_i rstd (e_i - mean(e) - xh_i mean(xh e)), bounded by g_i rstd (e_i
 * + mean(e) + |xh_i| mean(|xh| e)) for the bounded parts (the noise's
 * means in quadrature, sqrt(sum s^2) / D); the kernel's float steps ((x - m)
 * rstd, the FMA, m and rstd each rounded once) add 4 u32 (|g| (|xh| +
 * rstd |m|) + |beta|); 16-bit gamma and beta are rounded (bias_error). */
static void ref_layernorm(const struct memest_layer *L,
                          const struct tensor *x, struct tensor *y,
                          const float *g, const float *bt,
                          enum memest_precision p)
{
    const size_t D = (size_t)L->units, rows = tsize(x) / D;
    for (size_t r = 0; r < rows; r++) {
        const size_t o = r * D;
        double m = 0.0, v = 0.0, md = 0.0, ms = 0.0, mxd = 0.0, mxs = 0.0;
        for (size_t i = 0; i < D; i++) {
            m += x->r[o + i];
        }
        m /= (double)D;
        for (size_t i = 0; i < D; i++) {
            v += (x->r[o + i] - m) * (x->r[o + i] - m);
        }
        const double rs = 1.0 / sqrt(v / (double)D + L->bn_epsilon);
        for (size_t i = 0; i < D; i++) {
            const double xh = fabs((x->r[o + i] - m) * rs);
            md += x->d[o + i] / (double)D;
            mxd += xh * x->d[o + i] / (double)D;
            /* noise: independent, so its sums add in quadrature */
            ms += x->s[o + i] * x->s[o + i];
            mxs += xh * xh * x->s[o + i] * x->s[o + i];
        }
        for (size_t i = 0; i < D; i++) {
            const double xh = (x->r[o + i] - m) * rs;
            const double gi = g[i], bi = bt ? bt[i] : 0.0;
            const double ag = fabs(gi) + bias_error(p, g[i]);
            y->r[o + i] = gi * xh + bi;
            y->d[o + i] =
                ag * rs * (x->d[o + i] + md + fabs(xh) * mxd) +
                4.0 * U32 * (ag * (fabs(xh) + rs * fabs(m)) + fabs(bi)) +
                fabs(xh) * bias_error(p, g[i]) +
                (bt ? bias_error(p, bt[i]) : 0.0);
            y->s[o + i] = ag * rs *
                          (x->s[o + i] + sqrt(ms) / (double)D +
                           fabs(xh) * sqrt(mxs) / (double)D);
        }
    }
}

/* The class token: each sample's rows moved one down, the token (exact
 * at fp32 and int8, rounded at 16 bits) in row 0. */
static void ref_clstoken(const struct tensor *x, struct tensor *y,
                         const float *w, enum memest_precision p)
{
    const size_t D = x->h, in = x->c * D;
    for (size_t n = 0; n < x->batch; n++) {
        for (size_t i = 0; i < D; i++) {
            const size_t k = n * (in + D) + i;
            y->r[k] = w[i];
            y->d[k] = bias_error(p, w[i]);
            y->s[k] = 0.0;
        }
        for (size_t i = 0; i < in; i++) {
            move_elem(x, n * in + i, y, n * (in + D) + D + i);
        }
    }
}

/* The position embedding: x + P, one float addition (u32 of the sum) and
 * P's own rounding at 16 bits. */
static void ref_posembed(const struct tensor *x, struct tensor *y,
                         const float *w, enum memest_precision p)
{
    const size_t in = x->c * x->h;
    for (size_t n = 0; n < x->batch; n++) {
        for (size_t i = 0; i < in; i++) {
            const size_t k = n * in + i;
            y->r[k] = x->r[k] + w[i];
            y->d[k] = x->d[k] + bias_error(p, w[i]) +
                      U32 * (fabs(x->r[k]) + fabs(w[i]) + x->d[k]);
            y->s[k] = x->s[k];
        }
    }
}

/*
 * Run the reference on ex's own master weights and inputs xs (one array
 * per model input); *out receives the final tensor (caller frees). Every
 * tensor the executor stores is rounded to the precision as it is
 * produced, except the aliases (identity, dropout, flatten keep their
 * input's bytes) and a 16-bit concat (which joins the stored values); the
 * executor returns the last operator's float result, so the last layer's
 * output is not stored.
 */
static void reference(const memest_model *m, const prof_exec *ex,
                      const float *const *xs, struct tensor *out)
{
    const enum memest_precision p = prof_exec_precision(ex);
    const size_t batch = (size_t)prof_exec_batch(ex);
    const size_t ninputs = memest_model_input_count(m);
    const size_t nl = memest_model_layer_count(m);
    struct tensor *t = calloc(ninputs + nl, sizeof *t);
    assert_non_null(t);
    for (size_t k = 0; k < ninputs; k++) {
        const struct memest_shape sh = memest_model_input_shape_at(m, k);
        tensor_alloc(&t[k], batch, &sh);
        for (size_t i = 0; i < tsize(&t[k]); i++) {
            t[k].r[i] = xs[k][i];
        }
        propagate_store(&t[k], p);
    }
    for (size_t li = 0; li < nl; li++) {
        const struct memest_layer *L = memest_model_layer(m, li);
        const struct tensor *cur = &t[L->inputs[0]];
        struct tensor *nxt = &t[ninputs + li];
        const struct tensor *ins[8];
        assert_true(L->input_count <= 8);
        for (size_t j = 0; j < L->input_count; j++) {
            ins[j] = &t[L->inputs[j]];
        }
        tensor_alloc(nxt, batch, &L->out_shape);
        float *w = NULL, *b = NULL;
        if (L->weight_count) {
            w = calloc((size_t)L->weight_count, sizeof(float));
            b = calloc((size_t)L->bias_count + 1, sizeof(float));
            assert_int_equal(prof_exec_get_params(ex, li, w,
                                                  (size_t)L->weight_count, b,
                                                  (size_t)L->bias_count),
                             PROF_OK);
        }
        bool stored = true;
        switch (L->kind) {
        case MEMEST_KIND_DENSE:
            ref_dense(L, cur, nxt, w, L->has_bias ? b : NULL, p);
            ref_act(L->act, L->act_alpha, L->act_beta, L->axis, nxt);
            break;
        case MEMEST_KIND_CONV2D:
            ref_conv(L, cur, nxt, w, L->has_bias ? b : NULL, p);
            ref_act(L->act, L->act_alpha, L->act_beta, L->axis, nxt);
            break;
        case MEMEST_KIND_MAXPOOL:
        case MEMEST_KIND_AVGPOOL:
            ref_pool(L, cur, nxt);
            break;
        case MEMEST_KIND_FLATTEN:
        case MEMEST_KIND_IDENTITY:
        case MEMEST_KIND_DROPOUT:
        case MEMEST_KIND_RESHAPE:
            tensor_copy(nxt, cur);
            stored = false;
            break;
        case MEMEST_KIND_ACTIVATION:
            tensor_copy(nxt, cur);
            ref_act(L->act, L->act_alpha, L->act_beta, L->axis, nxt);
            break;
        case MEMEST_KIND_ADD:
            if (binary_broadcasts(L)) {
                ref_binary(L, ins, nxt);
                break;
            }
            ref_add(ins, L->input_count, nxt, L);
            break;
        case MEMEST_KIND_SUB:
        case MEMEST_KIND_MUL:
        case MEMEST_KIND_DIV:
            ref_binary(L, ins, nxt);
            break;
        case MEMEST_KIND_CONCAT:
            ref_concat(ins, L->input_count, L->concat_axis, nxt);
            stored = p == MEMEST_INT8_DYNAMIC;
            break;
        case MEMEST_KIND_BATCHNORM:
            ref_batchnorm(L, cur, nxt, w, b, p);
            break;
        case MEMEST_KIND_GLOBALAVGPOOL:
            ref_gap(cur, nxt);
            break;
        case MEMEST_KIND_PAD:
            ref_pad(L, cur, nxt);
            break;
        case MEMEST_KIND_SHUFFLE:
            ref_shuffle(L, cur, nxt);
            break;
        case MEMEST_KIND_SLICE:
            ref_slice(L, cur, nxt);
            break;
        case MEMEST_KIND_LAYERNORM:
            ref_layernorm(L, cur, nxt, w, L->has_bias ? b : NULL, p);
            break;
        case MEMEST_KIND_CLSTOKEN:
            ref_clstoken(cur, nxt, w, p);
            break;
        case MEMEST_KIND_POSEMBED:
            ref_posembed(cur, nxt, w, p);
            break;
        default:
            fail_msg("unexpected layer kind");
        }
        free(w);
        free(b);
        if (li + 1 < nl && stored) {
            propagate_store(nxt, p);
        }
    }
    *out = t[ninputs + nl - 1];
    for (size_t i = 0; i + 1 < ninputs + nl; i++) {
        tensor_free(&t[i]);
    }
    free(t);
}

/* The largest bound the test accepts relative to the outputs' size, per
 * precision: a tolerance this size still catches a wrong index, a missing
 * bias or a swapped operand, which err by the outputs' own magnitude. int8
 * is the exception where a softmax ends the model: the quantisation noise
 * of a 784-wide layer's inputs alone moves its logits by a few tenths,
 * which may move a probability by as much, so there the bound only has to
 * stay under the outputs' size; the models without softmax hold int8 to
 * about a tenth of the outputs (see EXEC_TEST_VERBOSE=1). */
static double max_relative_bound(enum memest_precision p, int softmax_end)
{
    switch (p) {
    case MEMEST_FP32:
        return 5e-3;
    case MEMEST_FP16:
        return 0.15;
    case MEMEST_BF16:
        return 0.5;
    default:
        return softmax_end ? 1.0 : 0.25;
    }
}

/* Standalone batch norms start as PyTorch's fresh ones (scale about 1,
 * shift 0): give them scales in [0.5, 1.5) and shifts in [-0.5, 0.5) so
 * that both are exercised. */
/* The same for layer norms (gamma in [0.5, 1.5), beta in [-0.5, 0.5))
 * and for the class token and the position embedding, whose fresh values
 * (zeros; +-0.035) would make the token's row almost constant: a layer
 * norm of it divides its storage errors by a standard deviation near
 * zero, and the derived bound says so. */
static void randomise_batchnorms(const memest_model *m, prof_exec *ex)
{
    for (size_t li = 0; li < memest_model_layer_count(m); li++) {
        const struct memest_layer *L = memest_model_layer(m, li);
        if (L->kind == MEMEST_KIND_CLSTOKEN ||
            L->kind == MEMEST_KIND_POSEMBED) {
            const size_t c = (size_t)L->weight_count;
            float *w = malloc(c * sizeof *w);
            assert_non_null(w);
            for (size_t i = 0; i < c; i++) {
                w[i] = rnd_sym(1.0);
            }
            assert_int_equal(prof_exec_set_params(ex, li, w, c, NULL, 0),
                             PROF_OK);
            free(w);
            continue;
        }
        if (L->kind != MEMEST_KIND_BATCHNORM &&
            L->kind != MEMEST_KIND_LAYERNORM) {
            continue;
        }
        const size_t c = (size_t)L->weight_count;
        float *w = malloc(c * sizeof *w), *b = malloc(c * sizeof *b);
        assert_non_null(w);
        assert_non_null(b);
        for (size_t i = 0; i < c; i++) {
            w[i] = 1.0f + rnd_sym(0.5);
            b[i] = rnd_sym(0.5);
        }
        assert_int_equal(prof_exec_set_params(ex, li, w, c, b,
                                              (size_t)L->bias_count),
                         PROF_OK);
        free(w);
        free(b);
    }
}

static void check_reference(const char *text, enum memest_precision p,
                            uint64_t batch, bool tight);

static void check_against_reference(const char *text,
                                    enum memest_precision p, uint64_t batch)
{
    check_reference(text, p, batch, true);
}

/* tight: also require the derived bound to be small against the outputs
 * (see max_relative_bound). */
static void check_reference(const char *text, enum memest_precision p,
                            uint64_t batch, bool tight)
{
    memest_model *m = model_of(text);
    struct prof_exec_opts o;
    prof_exec_opts_init(&o);
    o.batch = batch;
    o.precision = p;
    o.seed = SEED + batch;
    prof_exec *ex = NULL;
    struct prof_diag d;
    int st = prof_exec_create(m, &o, &ex, &d);
    if (st != PROF_OK) {
        fail_msg("%s: create: %s (%s)", text, prof_strerror(st), d.message);
    }
    const size_t ninputs = prof_exec_input_tensors(ex);
    assert_int_equal(ninputs, memest_model_input_count(m));
    assert_true(ninputs <= 4);
    const size_t nout = prof_exec_output_count(ex);
    float *xs[4] = {NULL};
    size_t nin[4] = {0};
    float *y = malloc(nout * sizeof(float));
    assert_non_null(y);
    /* int8-dynamic draws what "int8" drew when it was the per-batch path
     * (the same inputs give it the same errors as before) */
    const enum memest_precision pd =
        p == MEMEST_INT8_DYNAMIC ? MEMEST_INT8 : p;
    rng_state = SEED ^ (batch * 7919u) ^ ((uint64_t)pd << 32);
    const uint64_t seed_used = rng_state;
    for (size_t k = 0; k < ninputs; k++) {
        nin[k] = prof_exec_input_count_at(ex, k);
        xs[k] = malloc(nin[k] * sizeof(float));
        assert_non_null(xs[k]);
        for (size_t i = 0; i < nin[k]; i++) {
            xs[k][i] = rnd_sym(1.0);
        }
    }
    randomise_batchnorms(m, ex);
    if (ninputs == 1) {
        assert_int_equal(prof_exec_run(ex, xs[0], nin[0], y, nout), PROF_OK);
    } else {
        assert_int_equal(prof_exec_run(ex, xs[0], nin[0], y, nout),
                         PROF_E_INVALID);
        assert_int_equal(prof_exec_run_inputs(ex, (const float *const *)xs,
                                              nin, ninputs, y, nout),
                         PROF_OK);
    }

    struct tensor ref;
    reference(m, ex, (const float *const *)xs, &ref);
    assert_int_equal(tsize(&ref), nout);
    const double scale = fmax(max_abs(ref.r, nout), 1e-3);
    double worst = 0.0, worst_tol = 0.0;
    for (size_t i = 0; i < nout; i++) {
        const double tol = tol_of(&ref, i);
        const double err = fabs((double)y[i] - ref.r[i]);
        if (!(err <= tol)) {
            fail_msg("%s %s batch %llu (input seed %llu): output %zu is %.9g, "
                     "reference %.9g, error %.3g > bound %.3g",
                     text, memest_precision_name(p),
                     (unsigned long long)batch,
                     (unsigned long long)seed_used, i, (double)y[i],
                     ref.r[i], err, tol);
        }
        worst = max_seen(worst, err);
        worst_tol = max_seen(worst_tol, tol);
    }
    if (getenv("EXEC_TEST_VERBOSE")) {
        fprintf(stderr, "%-14.14s %s batch %llu: error %.3g, bound %.3g, "
                "outputs %.3g\n", text, memest_precision_name(p),
                (unsigned long long)batch, worst, worst_tol, scale);
    }
    const struct memest_layer *last =
        memest_model_layer(m, memest_model_layer_count(m) - 1);
    if (tight &&
        !(worst_tol <=
          max_relative_bound(p, last->act == MEMEST_ACT_SOFTMAX) * scale)) {
        fail_msg("%s %s: the derived bound %.3g is too loose for outputs of "
                 "size %.3g", text, memest_precision_name(p), worst_tol,
                 scale);
    }
    tensor_free(&ref);
    free(y);
    for (size_t k = 0; k < ninputs; k++) {
        free(xs[k]);
    }
    prof_exec_destroy(ex);
    memest_model_destroy(m);
}

/* prof_exec_opts_init() sets every field a caller may leave alone: a
 * struct on the stack holds garbage, and ranges left so was read as a
 * calibration (a crash under MALLOC_PERTURB_ in edgefit-validate). */
static void test_opts_init(void **state)
{
    (void)state;
    struct prof_exec_opts o;
    memset(&o, 0xA5, sizeof o);
    prof_exec_opts_init(&o);
    assert_null(o.ranges);
    assert_int_equal(o.batch, 1);
    assert_int_equal(o.precision, MEMEST_FP32);
}

static void test_reference_all(void **state)
{
    (void)state;
    for (size_t mi = 0; mi < N_MODELS; mi++) {
        for (size_t pi = 0; pi < 4; pi++) {
            check_against_reference(MODELS[mi], PRECISIONS[pi], 1);
            check_against_reference(MODELS[mi], PRECISIONS[pi], 3);
        }
    }
}

static void test_reference_graphs(void **state)
{
    (void)state;
    for (size_t mi = 0; mi < N_GRAPH_MODELS; mi++) {
        for (size_t pi = 0; pi < 4; pi++) {
            check_against_reference(GRAPH_MODELS[mi], PRECISIONS[pi], 1);
            check_against_reference(GRAPH_MODELS[mi], PRECISIONS[pi], 3);
        }
    }
}

/* The same model at a batch large enough for the GEMM's blocked paths. */
static void test_reference_batch32(void **state)
{
    (void)state;
    for (size_t pi = 0; pi < 4; pi++) {
        check_against_reference("mlp:784-64-10", PRECISIONS[pi], 32);
        check_against_reference("smallcnn", PRECISIONS[pi], 32);
    }
    /* 16-bit dense layers run in tiles of 10 input rows and 32 weight
     * columns at 784 inputs: 70 columns and 7 rows leave ragged tiles. */
    check_against_reference("mlp:784-70-10", MEMEST_FP16, 7);
    check_against_reference("mlp:784-70-10", MEMEST_BF16, 7);
}

/* 16-bit storage must not need more memory than fp32 to run: for
 * mlp:784-64-10 at batch 32 the widened tiles are, in floats, 10 x 784
 * input rows, 784 x 32 weight columns, 64 biases and the 32 x 64 result:
 * 35,040 floats = 140,160 B (widening whole operands took 309,504 B), so
 * arena 54,272 + stored 101,780 + scratch 140,160 = 296,212 B against
 * fp32's 108,544 + 203,560 + 0 = 312,104 B. */
/*
 * int8 depthwise layers take their own path (the float depthwise kernel on
 * the integer values, which sums them exactly); a grouped convolution with
 * two output channels per group takes the lowering and the int8 GEMM.
 * Given the depthwise layer's weights and biases on its even channels and
 * half of them on its odd ones (so that, after relu or none, the output's
 * largest magnitude, and with it the output scale, is the same), the
 * grouped layer must give the depthwise layer's bits on every even
 * channel: the two paths compute the same int32 sums and requantise them
 * with the same arithmetic.
 */
static void test_int8_depthwise_paths_agree(void **state)
{
    (void)state;
    static const char *const heads[] = {
        "k=3 p=1 g=8 act=relu",
        "k=3 s=2 p=0,0,1,1 g=8",
        "k=5x3 s=2x1 p=2,1,1,0 g=8 act=relu",
    };
    rng_state = SEED ^ 0x8d;
    for (size_t hi = 0; hi < sizeof heads / sizeof heads[0]; hi++) {
        for (size_t batch = 1; batch <= 3; batch += 2) {
            char text[2][160], line[96];
            for (int v = 0; v < 2; v++) {
                snprintf(line, sizeof line, "conv2d %d %s\n", v ? 16 : 8,
                         heads[hi]);
                snprintf(text[v], sizeof text[v], "input 8x9x7\n%s", line);
            }
            memest_model *m[2] = {model_of(text[0]), model_of(text[1])};
            const struct memest_layer *L = memest_model_layer(m[0], 0);
            const size_t taps = (size_t)(L->kernel_h * L->kernel_w);
            float w[2][16 * 25], b[2][16];
            for (size_t c = 0; c < 8; c++) {
                for (size_t t = 0; t < taps; t++) {
                    const float v = rnd_sym(1.0);
                    w[0][c * taps + t] = v;
                    w[1][2 * c * taps + t] = v;
                    w[1][(2 * c + 1) * taps + t] = 0.5f * v;
                }
                b[0][c] = rnd_sym(0.1);
                b[1][2 * c] = b[0][c];
                b[1][2 * c + 1] = 0.5f * b[0][c];
            }
            prof_exec *ex[2];
            float *y[2];
            size_t ny[2];
            const size_t nx = batch * 8 * 9 * 7;
            float *x = malloc(nx * sizeof *x);
            assert_non_null(x);
            for (size_t i = 0; i < nx; i++) {
                x[i] = rnd_sym(1.0);
            }
            for (int v = 0; v < 2; v++) {
                struct prof_exec_opts o;
                prof_exec_opts_init(&o);
                o.batch = batch;
                o.precision = MEMEST_INT8_DYNAMIC;
                assert_int_equal(prof_exec_create(m[v], &o, &ex[v], NULL),
                                 PROF_OK);
                const size_t oc = v ? 16 : 8;
                assert_int_equal(prof_exec_set_params(ex[v], 0, w[v],
                                                      oc * taps, b[v], oc),
                                 PROF_OK);
                ny[v] = prof_exec_output_count(ex[v]);
                y[v] = malloc(ny[v] * sizeof *y[v]);
                assert_non_null(y[v]);
                assert_int_equal(prof_exec_run(ex[v], x, nx, y[v], ny[v]),
                                 PROF_OK);
            }
            assert_int_equal(ny[1], 2 * ny[0]);
            const size_t hw = ny[0] / (batch * 8);
            for (size_t n = 0; n < batch; n++) {
                for (size_t c = 0; c < 8; c++) {
                    const float *a = y[0] + (n * 8 + c) * hw;
                    const float *g = y[1] + (n * 16 + 2 * c) * hw;
                    if (memcmp(a, g, hw * sizeof *a) != 0) {
                        fail_msg("conv2d %s, batch %zu, channel %zu: the "
                                 "depthwise path differs from the grouped "
                                 "one", heads[hi], batch, c);
                    }
                }
            }
            for (int v = 0; v < 2; v++) {
                prof_exec_destroy(ex[v]);
                memest_model_destroy(m[v]);
                free(y[v]);
            }
            free(x);
        }
    }
}

static void test_16bit_memory(void **state)
{
    (void)state;
    memest_model *m = model_of("mlp:784-64-10");
    uint64_t working[2] = {0, 0};
    const enum memest_precision p[2] = {MEMEST_FP32, MEMEST_FP16};
    for (int i = 0; i < 2; i++) {
        struct prof_exec_opts o;
        prof_exec_opts_init(&o);
        o.batch = 32;
        o.precision = p[i];
        prof_exec *ex = NULL;
        assert_int_equal(prof_exec_create(m, &o, &ex, NULL), PROF_OK);
        struct prof_exec_memory mem;
        assert_int_equal(prof_exec_memory(ex, &mem), PROF_OK);
        working[i] = mem.arena_bytes + mem.parameter_bytes +
                     mem.scratch_bytes;
        if (p[i] == MEMEST_FP16) {
            assert_int_equal(mem.arena_bytes, 54272);
            assert_int_equal(mem.parameter_bytes, 101780);
            assert_int_equal(mem.scratch_bytes, 140160);
        }
        prof_exec_destroy(ex);
    }
    assert_int_equal(working[0], 312104);
    assert_int_equal(working[1], 296212);
    assert_true(working[1] < working[0]);
    memest_model_destroy(m);
}

/* A wrong executor must fail the comparison: perturb one weight after the
 * reference has read the masters and see the check catch it. */
static void test_reference_detects_error(void **state)
{
    (void)state;
    memest_model *m = model_of(MODELS[2]);
    struct prof_exec_opts o;
    prof_exec_opts_init(&o);
    o.batch = 2;
    prof_exec *ex = NULL;
    assert_int_equal(prof_exec_create(m, &o, &ex, NULL), PROF_OK);
    const size_t nin = prof_exec_input_count(ex);
    const size_t nout = prof_exec_output_count(ex);
    float *x = malloc(nin * sizeof(float));
    float *y = malloc(nout * sizeof(float));
    rng_state = SEED;
    for (size_t i = 0; i < nin; i++) {
        x[i] = rnd_sym(1.0);
    }
    struct tensor ref;
    const float *xs[1] = {x};
    reference(m, ex, xs, &ref);
    /* The last dense layer's first bias, moved by 0.5. */
    const struct memest_layer *L = memest_model_layer(m, 7);
    assert_int_equal(L->kind, MEMEST_KIND_DENSE);
    float *w = calloc((size_t)L->weight_count, sizeof(float));
    float *b = calloc((size_t)L->bias_count, sizeof(float));
    assert_int_equal(prof_exec_get_params(ex, 7, w, (size_t)L->weight_count,
                                          b, (size_t)L->bias_count),
                     PROF_OK);
    b[0] += 0.5f;
    assert_int_equal(prof_exec_set_params(ex, 7, w, (size_t)L->weight_count,
                                          b, (size_t)L->bias_count),
                     PROF_OK);
    assert_int_equal(prof_exec_run(ex, x, nin, y, nout), PROF_OK);
    const double err = fabs((double)y[0] - ref.r[0]);
    assert_true(err > tol_of(&ref, 0));
    tensor_free(&ref);
    free(b);
    free(w);
    free(y);
    free(x);
    prof_exec_destroy(ex);
    memest_model_destroy(m);
}

/* ---- the arena is the plan -------------------------------------------------- */

static void check_arena(const char *text, enum memest_precision p,
                        uint64_t batch)
{
    memest_model *m = model_of(text);
    struct memest_totals t;
    assert_int_equal(memest_estimate_totals(m, batch, p, &t), MEMEST_OK);
    struct prof_exec_opts o;
    prof_exec_opts_init(&o);
    o.batch = batch;
    o.precision = p;
    prof_exec *ex = NULL;
    assert_int_equal(prof_exec_create(m, &o, &ex, NULL), PROF_OK);
    struct prof_exec_memory mem;
    assert_int_equal(prof_exec_memory(ex, &mem), PROF_OK);
    assert_true(mem.arena_bytes ==
                t.peak_inference_bytes - t.parameter_bytes);
    assert_true(mem.plan_bytes == mem.arena_bytes);
    assert_true(mem.peak_inference_bytes == t.peak_inference_bytes);
    assert_true(mem.estimate_parameter_bytes == t.parameter_bytes);
    assert_true(mem.master_bytes == t.parameter_count * 4);
    /* fp32 runs every convolution but depthwise on weights packed in
     * blocks of KERN_CONV_PACK_BLOCK output channels per group: counted
     * here from the layers, zeros included; a depthwise one on blocked
     * activations (8k channels, so no zeros) on its own packed form */
    uint64_t pad = 0, packed_w = 0;
    for (size_t i = 0; i < memest_model_layer_count(m); i++) {
        const struct memest_layer *L = memest_model_layer(m, i);
        const uint64_t in_c = L->in_shape.dim[0];
        const uint64_t out_c = L->units, g = L->groups;
        if (L->kind != MEMEST_KIND_CONV2D) {
            continue;
        }
        if (g == in_c && out_c == in_c) {
            struct prof_exec_op_info info;
            assert_int_equal(prof_exec_op_info(ex, i + 1, &info), PROF_OK);
            if (info.output_layout == 1) {
                assert_true(in_c % 8 == 0);
                packed_w += L->weight_count * 4;
            }
            continue;
        }
        const uint64_t ocg = out_c / g, k = in_c / g * L->kernel_h *
                                             L->kernel_w;
        const uint64_t blk = KERN_CONV_PACK_BLOCK;
        pad += g * ((ocg + blk - 1) / blk * blk - ocg) * k * 4;
        packed_w += L->weight_count * 4;
    }
    if (p == MEMEST_FP32) {
        assert_true(mem.parameter_bytes == t.parameter_bytes + pad);
        assert_true(mem.master_unread_bytes == packed_w);
    } else if (p != MEMEST_INT8_DYNAMIC) {
        assert_true(mem.parameter_bytes == t.parameter_bytes);
        assert_true(mem.master_unread_bytes == mem.master_bytes);
    }

    /* Every layer reads and writes inside the arena, without overlap
     * (flatten is a view of its input: the same bytes), and its output is
     * where the next layer reads. */
    const size_t n = prof_exec_op_count(ex);
    assert_int_equal(n, memest_model_layer_count(m) + 1);
    uint64_t largest_pair = 0, prev_out_off = 0, prev_out_bytes = 0;
    struct prof_exec_op_info staged;
    assert_int_equal(prof_exec_op_info(ex, 0, &staged), PROF_OK);
    prev_out_off = staged.output_offset;
    prev_out_bytes = staged.output_bytes;
    for (size_t i = 1; i < n; i++) {
        struct prof_exec_op_info in;
        assert_int_equal(prof_exec_op_info(ex, i, &in), PROF_OK);
        assert_true(in.input_offset + in.input_bytes <= mem.arena_bytes);
        assert_true(in.output_offset + in.output_bytes <= mem.arena_bytes);
        if (in.kind == MEMEST_KIND_FLATTEN) {
            assert_true(in.input_offset == in.output_offset);
        } else {
            assert_true(in.input_offset + in.input_bytes <=
                            in.output_offset ||
                        in.output_offset + in.output_bytes <=
                            in.input_offset);
            if (in.input_bytes + in.output_bytes > largest_pair) {
                largest_pair = in.input_bytes + in.output_bytes;
            }
        }
        assert_true(in.input_offset == prev_out_off);
        assert_true(in.input_bytes == prev_out_bytes);
        prev_out_off = in.output_offset;
        prev_out_bytes = in.output_bytes;
        /* element size alignment of each tensor */
        const unsigned sb = memest_precision_bytes(p);
        assert_int_equal(in.output_offset % sb, 0);
    }
    /* the pairs are alive together, so no plan is smaller; on these
     * chains the greedy plan meets that bound */
    assert_true(largest_pair == mem.arena_bytes);
    assert_true(t.live_lower_bound_bytes == mem.arena_bytes);
    prof_exec_destroy(ex);
    memest_model_destroy(m);
}

static void test_arena_equals_plan(void **state)
{
    (void)state;
    for (size_t mi = 0; mi < N_MODELS; mi++) {
        for (size_t pi = 0; pi < 4; pi++) {
            check_arena(MODELS[mi], PRECISIONS[pi], 1);
            check_arena(MODELS[mi], PRECISIONS[pi], 7);
        }
    }
    check_arena("mlp:784-64-10", MEMEST_FP32, 32);
    check_arena("mlp:4-100", MEMEST_FP16, 5); /* the last pair is the peak */
    /* recurrent layers: their step buffers are scratch, not arena */
    for (size_t pi = 0; pi < 4; pi++) {
        check_arena("input 9x5\nlstm 8 dir=bidirectional\n"
                    "gru 6 seq=no lbr=no\ndense 3\n", PRECISIONS[pi], 1);
        check_arena("input 9x5\ngru 8 dir=reverse\nlstm 6 seq=no\n"
                    "dense 3 act=softmax\n", PRECISIONS[pi], 7);
    }
}

/*
 * A graph's arena: the executor's offsets are the plan's, and the plan is
 * checked here from the layers' inputs on its own terms. Each tensor lives
 * from the step that writes it (inputs: 0, layer i: i) to the last step
 * that reads it, an alias (identity, dropout, flatten, reshape) extends
 * its input's life; no two buffers alive at one step overlap; the arena is the
 * highest end, equals libmemest's totals, is at least the live-set lower
 * bound and at most what the bare greedy planner (memest_plan_buffers)
 * gives for the lifetimes derived here.
 */
static void check_model_arena(memest_model *m, const char *text,
                              enum memest_precision p, uint64_t batch)
{
    struct prof_exec_opts o;
    prof_exec_opts_init(&o);
    o.batch = batch;
    o.precision = p;
    prof_exec *ex = NULL;
    struct prof_diag d;
    if (prof_exec_create(m, &o, &ex, &d) != PROF_OK) {
        fail_msg("%s: %s", text, d.message);
    }
    struct prof_exec_memory mem;
    assert_int_equal(prof_exec_memory(ex, &mem), PROF_OK);
    struct memest_totals tot;
    assert_int_equal(memest_estimate_totals(m, batch, p, &tot), MEMEST_OK);
    struct memest_arena_plan plan;
    assert_int_equal(memest_plan_arena(m, batch, p, &plan), MEMEST_OK);
    assert_true(mem.arena_bytes == plan.arena_bytes);
    assert_true(mem.arena_bytes == tot.arena_bytes);
    assert_true(mem.plan_bytes == mem.arena_bytes);
    assert_true(mem.arena_bytes >= plan.live_lower_bound_bytes);

    const size_t I = memest_model_input_count(m);
    const size_t L = memest_model_layer_count(m);
    const size_t T = I + L;
    assert_int_equal(plan.tensor_count, T);
    size_t *root = calloc(T, sizeof *root), *first = calloc(T, sizeof *first);
    size_t *last = calloc(T, sizeof *last);
    uint64_t *bytes = calloc(T, sizeof *bytes);
    assert_true(root && first && last && bytes);
    for (size_t t = 0; t < T; t++) {
        const struct memest_shape sh = memest_model_tensor_shape(m, t);
        uint64_t e = batch * memest_precision_bytes(p);
        for (unsigned r = 0; r < sh.rank; r++) {
            e *= sh.dim[r];
        }
        bytes[t] = e;
        root[t] = t;
    }
    for (size_t i = 0; i < L; i++) {
        const struct memest_layer *ly = memest_model_layer(m, i);
        const size_t t = I + i;
        first[t] = last[t] = i;
        if (memest_kind_is_view(ly->kind)) {
            root[t] = root[ly->inputs[0]];
        }
        for (size_t j = 0; j < ly->input_count; j++) {
            last[ly->inputs[j]] = i;
        }
        /* operator i + 1 reads inputs[0] and writes tensor t where the
         * plan put them */
        struct prof_exec_op_info in;
        assert_int_equal(prof_exec_op_info(ex, i + 1, &in), PROF_OK);
        assert_true(in.input_offset == plan.offset[ly->inputs[0]]);
        assert_true(in.output_offset == plan.offset[t]);
        assert_true(in.output_bytes == bytes[t]);
        uint64_t read = 0;
        for (size_t j = 0; j < ly->input_count; j++) {
            read += bytes[ly->inputs[j]];
        }
        assert_true(in.input_bytes == read);
    }
    last[T - 1] = L - 1;
    for (size_t t = 0; t < T; t++) {
        if (root[t] != t) {
            assert_true(plan.offset[t] == plan.offset[root[t]]);
            if (last[t] > last[root[t]]) {
                last[root[t]] = last[t];
            }
        }
    }
    uint64_t end = 0;
    /* a layer's working block (an attention's score matrix of one head)
     * is alive during its own step: clear of every tensor alive then */
    for (size_t i = 0; i < L; i++) {
        const uint64_t wb = plan.work_bytes[i], wo = plan.work_offset[i];
        if (wb == 0) {
            continue;
        }
        end = wo + wb > end ? wo + wb : end;
        for (size_t t = 0; t < T; t++) {
            if (root[t] == t && first[t] <= i && i <= last[t]) {
                assert_true(wo + wb <= plan.offset[t] ||
                            plan.offset[t] + bytes[t] <= wo);
            }
        }
    }
    for (size_t a = 0; a < T; a++) {
        assert_true(plan.bytes[a] == bytes[a]);
        assert_int_equal(plan.offset[a] % memest_precision_bytes(p), 0);
        end = plan.offset[a] + bytes[a] > end ? plan.offset[a] + bytes[a]
                                              : end;
        for (size_t b = a + 1; b < T; b++) {
            if (root[a] != a || root[b] != b || first[b] > last[a] ||
                first[a] > last[b]) {
                continue;
            }
            assert_true(plan.offset[a] + bytes[a] <= plan.offset[b] ||
                        plan.offset[b] + bytes[b] <= plan.offset[a]);
        }
    }
    assert_true(end == mem.arena_bytes);

    /* the bare greedy planner on the buffers derived here */
    struct memest_buffer_req *reqs = calloc(T + L, sizeof *reqs);
    size_t *owner = calloc(T + L, sizeof *owner);
    uint64_t *offs = calloc(T + L, sizeof *offs);
    assert_true(reqs && owner && offs);
    size_t nreq = 0;
    for (size_t t = 0; t < T; t++) {
        if (root[t] == t) {
            reqs[nreq] = (struct memest_buffer_req){bytes[t], first[t],
                                                    last[t]};
            owner[nreq++] = t;
        }
    }
    for (size_t i = 0; i < L; i++) {
        if (plan.work_bytes[i] != 0) {
            reqs[nreq] = (struct memest_buffer_req){plan.work_bytes[i], i,
                                                    i};
            owner[nreq++] = T + i;
        }
    }
    uint64_t greedy = 0;
    assert_int_equal(memest_plan_buffers(reqs, nreq,
                                         memest_precision_bytes(p), offs,
                                         &greedy),
                     MEMEST_OK);
    assert_true(mem.arena_bytes <= greedy);
    if (getenv("EXEC_TEST_VERBOSE")) {
        fprintf(stderr, "%-14.14s %s batch %llu: arena %llu, greedy %llu, "
                "live lower bound %llu\n", text, memest_precision_name(p),
                (unsigned long long)batch,
                (unsigned long long)mem.arena_bytes,
                (unsigned long long)greedy,
                (unsigned long long)plan.live_lower_bound_bytes);
    }
    free(reqs);
    free(owner);
    free(offs);
    free(root);
    free(first);
    free(last);
    free(bytes);
    memest_arena_plan_free(&plan);
    prof_exec_destroy(ex);
}

static void check_graph_arena(const char *text, enum memest_precision p,
                              uint64_t batch)
{
    memest_model *m = model_of(text);
    check_model_arena(m, text, p, batch);
    memest_model_destroy(m);
}

/* The networks of tests/data/zoo that edgefit supports (supported.txt),
 * as PyTorch exported them: the same checks of the arena against the plan
 * and the greedy planner, at fp32 and int8, batch 1 and 3. Skipped
 * without ONNX support or without the source tree's path. */
static void test_zoo_arena(void **state)
{
    (void)state;
    const char *root = getenv("EDGEFIT_SOURCE_ROOT");
    if (!root || !memest_onnx_available()) {
        skip();
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/tests/data/zoo/supported.txt", root);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char line[256];
    size_t models = 0;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\r\n")] = '\0';
        if (line[0] == '\0' || line[0] == '#') {
            continue;
        }
        /* the zoo's own exports, or the MLPerf Tiny fixtures the
         * manifest points at in tests/data/models */
        snprintf(path, sizeof path, "%s/tests/data/zoo/%s/model.onnx", root,
                 line);
        FILE *probe = fopen(path, "rb");
        if (probe) {
            fclose(probe);
        } else {
            snprintf(path, sizeof path, "%s/tests/data/models/%s/model.onnx",
                     root, line);
        }
        memest_model *m = NULL;
        struct memest_diag d;
        if (memest_model_load(path, &m, &d) != MEMEST_OK) {
            fail_msg("%s: %s", path, d.message);
        }
        check_model_arena(m, line, MEMEST_FP32, 1);
        check_model_arena(m, line, MEMEST_FP32, 3);
        check_model_arena(m, line, MEMEST_INT8_DYNAMIC, 1);
        memest_model_destroy(m);
        models++;
    }
    fclose(f);
    assert_true(models >= 10);
}

/* The sequence fixtures (keyword transformers at opsets 13 and 17, the
 * tiny ViT, the LSTM and GRU keyword spotters, the bidirectional GRU and
 * the LSTM read through h_n, from scripts/make-seq-onnx-fixtures.py and
 * make-rnn-fixtures.py): the arena is the executor's buffers and never
 * above the greedy-by-size plan TensorFlow Lite Micro's planner makes of
 * the same buffers (memest_plan_buffers, held to TFLite Micro's own cases
 * in tests/memest/test_graph.c), at fp32, fp16, bf16 and int8-dynamic,
 * batch 1 and 3 (static int8 needs ranges: the validate-* runs of
 * tests/apps calibrate and plan it). EXEC_TEST_VERBOSE=1 prints the
 * figures. */
static void test_seq_arena(void **state)
{
    (void)state;
    const char *root = getenv("EDGEFIT_SOURCE_ROOT");
    if (!root || !memest_onnx_available()) {
        skip();
    }
    static const char *const names[] = {"kwt13", "kwt17", "vit",
                                        "torch_lstm_kws", "torch_gru_kws",
                                        "torch_bigru", "torch_lstm_hn",
                                        "torch_lstm_tm", "torch_gru_tm"};
    const enum memest_precision precs[4] = {MEMEST_FP32, MEMEST_FP16,
                                            MEMEST_BF16, MEMEST_INT8_DYNAMIC};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/tests/data/onnx/%s/model.onnx", root,
                 names[i]);
        memest_model *m = NULL;
        struct memest_diag d;
        if (memest_model_load(path, &m, &d) != MEMEST_OK) {
            fail_msg("%s: %s", path, d.message);
        }
        for (size_t p = 0; p < 4; p++) {
            check_model_arena(m, names[i], precs[p], 1);
            check_model_arena(m, names[i], precs[p], 3);
        }
        memest_model_destroy(m);
    }
}

static void test_graph_arena(void **state)
{
    (void)state;
    for (size_t mi = 0; mi < N_GRAPH_MODELS; mi++) {
        for (size_t pi = 0; pi < 4; pi++) {
            check_graph_arena(GRAPH_MODELS[mi], PRECISIONS[pi], 1);
            check_graph_arena(GRAPH_MODELS[mi], PRECISIONS[pi], 5);
        }
    }
    /* the chains too, now that they share the planner */
    for (size_t mi = 0; mi < N_MODELS; mi++) {
        check_graph_arena(MODELS[mi], MEMEST_FP32, 3);
        check_graph_arena(MODELS[mi], MEMEST_INT8_DYNAMIC, 2);
    }
}

/* The number of layers of a model given by its text or preset name. */
static size_t layer_count_of(const char *text)
{
    memest_model *m = model_of(text);
    const size_t n = memest_model_layer_count(m);
    memest_model_destroy(m);
    return n;
}

/* The kind of the first layer of text the double-precision reference
 * above has no formula for (attention, matmul, transpose, lstm, gru:
 * their own tests hold them to double references and to PyTorch), or
 * MEMEST_KIND_INPUT when it has one for every layer. */
static enum memest_kind reference_lacks(const char *text)
{
    memest_model *m = model_of(text);
    enum memest_kind k = MEMEST_KIND_INPUT;
    for (size_t i = 0; i < memest_model_layer_count(m); i++) {
        const enum memest_kind lk = memest_model_layer(m, i)->kind;
        if (lk == MEMEST_KIND_ATTENTION || lk == MEMEST_KIND_MATMUL ||
            lk == MEMEST_KIND_TRANSPOSE || lk == MEMEST_KIND_LSTM ||
            lk == MEMEST_KIND_GRU) {
            k = lk;
            break;
        }
    }
    memest_model_destroy(m);
    return k;
}

/* The presets compiled into libmemest (smallcnn and the MLPerf Tiny
 * models ResNet-8, DS-CNN, MobileNetV1 0.25 and the FC autoencoder): the
 * arena is the plan and at most the greedy planner's, and the forward
 * pass matches the double-precision reference in fp32 and fp16. */
static void check_preset(const char *name)
{
    const enum memest_precision arena_precs[3] = {MEMEST_FP32, MEMEST_FP16,
                                                  MEMEST_INT8_DYNAMIC};
    for (size_t pi = 0; pi < 3; pi++) {
        check_graph_arena(name, arena_precs[pi], 1);
        check_graph_arena(name, arena_precs[pi], 3);
    }
    /* the sequence presets (kwt, lstm-kws): the arena above, the forward
     * pass in their kinds' own tests and edgefit-validate's against
     * PyTorch */
    const enum memest_kind lacking = reference_lacks(name);
    if (lacking != MEMEST_KIND_INPUT) {
        print_message("%s: arena checked; no reference forward pass for %s "
                      "layers here\n", name, memest_kind_name(lacking));
        return;
    }
    /* The first-order bound grows with depth: through MobileNetV1's 30
     * layers it reaches 0.035 on outputs of 0.66 in fp32 (measured error
     * 4e-8), over max_relative_bound, and 10 in fp16, which says nothing
     * about probabilities. So a model that deep is held to its fp32 bound
     * without asking it to be tight; the others are checked tightly in
     * fp32 and fp16. */
    if (layer_count_of(name) > 20) {
        check_reference(name, MEMEST_FP32, 1, false);
        return;
    }
    check_reference(name, MEMEST_FP32, 1, true);
    check_reference(name, MEMEST_FP16, 2, true);
}

static void test_presets(void **state)
{
    (void)state;
    const char *const *names = memest_preset_names();
    size_t n = 0;
    for (; names[n]; n++) {
        check_preset(names[n]);
    }
    /* smallcnn and the four MLPerf Tiny models at least */
    assert_true(n >= 5);
    static const char *const tiny[] = {"resnet8", "ds-cnn",
                                       "mobilenetv1-0.25", "fc-autoencoder"};
    for (size_t i = 0; i < 4; i++) {
        assert_true(memest_is_preset_name(tiny[i]));
    }
    if (getenv("EXEC_TEST_PRESET_FILE")) {
        /* another model's text, e.g. a preset's file */
        FILE *f = fopen(getenv("EXEC_TEST_PRESET_FILE"), "rb");
        assert_non_null(f);
        static char text[1 << 16];
        const size_t len = fread(text, 1, sizeof text - 1, f);
        fclose(f);
        text[len] = '\0';
        check_preset(text);
    }
}

/* Weights a model carries (memest_model_set_weights, PyTorch's names):
 * the executor's masters are those, batch norms folded, and its output is
 * the one computed by hand from them. */
static void test_model_weights(void **state)
{
    (void)state;
    memest_model *m = model_of("input 3\n"
                               "dense 2 name=fc\n"
                               "batchnorm eps=0.25 name=bn\n"
                               "relu\n"
                               "batchnorm eps=0.5 name=bn2\n");
    /* bn folds into fc (a dense with act=none that only it reads); bn2
     * follows an activation and stays a layer */
    assert_int_equal(memest_model_layer_count(m), 3);
    const float fw[6] = {0.5f, -1.0f, 2.0f, 1.5f, 0.25f, -0.75f};
    const float fb[2] = {0.1f, -0.2f};
    const float g[2] = {2.0f, 0.5f}, be[2] = {0.3f, -0.1f};
    const float mu[2] = {1.0f, -2.0f}, var[2] = {0.75f, 3.75f};
    const float g2[2] = {1.5f, -1.0f}, be2[2] = {0.0f, 0.5f};
    const float mu2[2] = {0.5f, 0.25f}, var2[2] = {3.5f, 0.5f};
    const struct memest_tensor ts[] = {
        {"fc.weight", 2, {2, 3}, fw},
        {"fc.bias", 1, {2}, fb},
        {"bn.weight", 1, {2}, g},
        {"bn.bias", 1, {2}, be},
        {"bn.running_mean", 1, {2}, mu},
        {"bn.running_var", 1, {2}, var},
        {"bn2.weight", 1, {2}, g2},
        {"bn2.bias", 1, {2}, be2},
        {"bn2.running_mean", 1, {2}, mu2},
        {"bn2.running_var", 1, {2}, var2},
    };
    struct memest_diag md;
    assert_int_equal(memest_model_set_weights(m, ts, 10, &md), MEMEST_OK);
    for (size_t pi = 0; pi < 4; pi++) {
        struct prof_exec_opts o;
        prof_exec_opts_init(&o);
        o.batch = 2;
        o.precision = PRECISIONS[pi];
        prof_exec *ex = NULL;
        assert_int_equal(prof_exec_create(m, &o, &ex, NULL), PROF_OK);
        /* the masters: the folded dense and bn2's scale and shift */
        float w[6], b[2];
        assert_int_equal(prof_exec_get_params(ex, 0, w, 6, b, 2), PROF_OK);
        double sc[2], sh[2];
        for (size_t c = 0; c < 2; c++) {
            sc[c] = g[c] / sqrt(var[c] + 0.25);
            for (size_t i = 0; i < 3; i++) {
                ASSERT_NEAR(w[c * 3 + i], fw[c * 3 + i] * sc[c],
                            4 * U32 * fabs(fw[c * 3 + i] * sc[c]));
            }
            ASSERT_NEAR(b[c], (fb[c] - mu[c]) * sc[c] + be[c], 1e-6);
        }
        assert_int_equal(prof_exec_get_params(ex, 2, w, 2, b, 2), PROF_OK);
        for (size_t c = 0; c < 2; c++) {
            sh[c] = g2[c] / sqrt(var2[c] + 0.5);
            ASSERT_NEAR(w[c], sh[c], 4 * U32 * fabs(sh[c]));
            ASSERT_NEAR(b[c], be2[c] - mu2[c] * sh[c], 1e-6);
        }
        /* the output by hand, in double */
        const float x[6] = {1.0f, 0.5f, -0.5f, -1.0f, 2.0f, 0.25f};
        float y[4];
        assert_int_equal(prof_exec_run(ex, x, 6, y, 4), PROF_OK);
        for (size_t n = 0; n < 2; n++) {
            for (size_t c = 0; c < 2; c++) {
                double z = fb[c];
                for (size_t i = 0; i < 3; i++) {
                    z += fw[c * 3 + i] * x[n * 3 + i];
                }
                z = (z - mu[c]) * sc[c] + be[c];
                z = z > 0.0 ? z : 0.0;
                z = (z - mu2[c]) * sh[c] + be2[c];
                /* int8 quantises the input and two tensors to max / 127:
                 * a few steps of 3 / 127 through these weights */
                const double tol = PRECISIONS[pi] == MEMEST_FP32   ? 1e-5
                                   : PRECISIONS[pi] == MEMEST_FP16 ? 2e-2
                                   : PRECISIONS[pi] == MEMEST_BF16 ? 1e-1
                                                                   : 2e-1;
                ASSERT_NEAR(y[n * 2 + c], z, tol);
            }
        }
        prof_exec_destroy(ex);
    }
    memest_model_destroy(m);
}

/* A plan that is not what the layout needs fails cleanly, either way. */
static void test_wrong_plan_fails(void **state)
{
    (void)state;
    memest_model *m = model_of("smallcnn");
    struct memest_totals t;
    assert_int_equal(memest_estimate_totals(m, 4, MEMEST_FP32, &t),
                     MEMEST_OK);
    const uint64_t need = t.peak_inference_bytes - t.parameter_bytes;
    /* smallcnn at batch 4 in fp32: the largest pair is pool1, which reads
     * 8x28x28 and writes 8x14x14: (6272 + 1568) * 4 samples * 4 bytes. */
    assert_true(need == (6272u + 1568u) * 4u * 4u);
    const uint64_t wrong[] = {need - 1, need + 1, need / 2};
    for (size_t i = 0; i < 3; i++) {
        struct prof_exec_opts o;
        prof_exec_opts_init(&o);
        o.batch = 4;
        o.plan_bytes = wrong[i];
        prof_exec *ex = (prof_exec *)&o; /* must be reset to NULL */
        struct prof_diag d;
        assert_int_equal(prof_exec_create(m, &o, &ex, &d), PROF_E_MEMEST);
        assert_null(ex);
        assert_non_null(strstr(d.message, "plan"));
    }
    struct prof_exec_opts o;
    prof_exec_opts_init(&o);
    o.batch = 4;
    o.plan_bytes = need;
    prof_exec *ex = NULL;
    assert_int_equal(prof_exec_create(m, &o, &ex, NULL), PROF_OK);
    prof_exec_destroy(ex);
    memest_model_destroy(m);
}

/* ---- parameters -------------------------------------------------------------- */

static void test_params_round_trip(void **state)
{
    (void)state;
    for (size_t pi = 0; pi < 4; pi++) {
        memest_model *m = model_of(MODELS[2]);
        struct prof_exec_opts o;
        prof_exec_opts_init(&o);
        o.precision = PRECISIONS[pi];
        prof_exec *ex = NULL;
        assert_int_equal(prof_exec_create(m, &o, &ex, NULL), PROF_OK);
        rng_state = SEED + pi;
        for (size_t li = 0; li < memest_model_layer_count(m); li++) {
            const struct memest_layer *L = memest_model_layer(m, li);
            const size_t wn = (size_t)L->weight_count;
            const size_t bn = (size_t)L->bias_count;
            float tmp = 0.0f;
            if (wn == 0) {
                assert_int_equal(prof_exec_set_params(ex, li, &tmp, 0,
                                                      NULL, 0),
                                 PROF_E_INVALID);
                continue;
            }
            float *w = malloc(wn * sizeof(float));
            float *b = malloc((bn + 1) * sizeof(float));
            float *w2 = malloc(wn * sizeof(float));
            float *b2 = malloc((bn + 1) * sizeof(float));
            for (size_t i = 0; i < wn; i++) {
                w[i] = rnd_sym(3.0);
            }
            for (size_t i = 0; i < bn; i++) {
                b[i] = rnd_sym(3.0);
            }
            assert_int_equal(prof_exec_set_params(ex, li, w, wn, b, bn),
                             PROF_OK);
            assert_int_equal(prof_exec_get_params(ex, li, w2, wn, b2, bn),
                             PROF_OK);
            assert_memory_equal(w, w2, wn * sizeof(float));
            if (bn) {
                assert_memory_equal(b, b2, bn * sizeof(float));
            }
            /* wrong counts, non-finite values */
            assert_int_equal(prof_exec_set_params(ex, li, w, wn - 1, b, bn),
                             PROF_E_RANGE);
            assert_int_equal(prof_exec_get_params(ex, li, w2, wn, b2,
                                                  bn + 1),
                             PROF_E_RANGE);
            w[wn / 2] = NAN;
            assert_int_equal(prof_exec_set_params(ex, li, w, wn, b, bn),
                             PROF_E_RANGE);
            free(b2);
            free(w2);
            free(b);
            free(w);
        }
        assert_int_equal(prof_exec_get_params(ex, 99, NULL, 0, NULL, 0),
                         PROF_E_INVALID);
        prof_exec_destroy(ex);
        memest_model_destroy(m);
    }
}

/* Seeded initialisation: deterministic, seed-dependent, and inside the He
 * (relu layers) or Glorot bounds and PyTorch's bias bound. */
static void test_seeded_init(void **state)
{
    (void)state;
    memest_model *m = model_of("smallcnn");
    prof_exec *a = NULL, *b = NULL, *c = NULL;
    struct prof_exec_opts o;
    prof_exec_opts_init(&o);
    o.seed = 7;
    assert_int_equal(prof_exec_create(m, &o, &a, NULL), PROF_OK);
    o.precision = MEMEST_INT8_DYNAMIC; /* the masters do not depend on precision */
    assert_int_equal(prof_exec_create(m, &o, &b, NULL), PROF_OK);
    o.seed = 8;
    assert_int_equal(prof_exec_create(m, &o, &c, NULL), PROF_OK);
    for (size_t li = 0; li < memest_model_layer_count(m); li++) {
        const struct memest_layer *L = memest_model_layer(m, li);
        const size_t wn = (size_t)L->weight_count;
        const size_t bn = (size_t)L->bias_count;
        if (!wn) {
            continue;
        }
        float *wa = malloc(wn * 4), *wb = malloc(wn * 4), *wc = malloc(wn * 4);
        float *ba = malloc(bn * 4), *bb = malloc(bn * 4), *bc = malloc(bn * 4);
        assert_int_equal(prof_exec_get_params(a, li, wa, wn, ba, bn), PROF_OK);
        assert_int_equal(prof_exec_get_params(b, li, wb, wn, bb, bn), PROF_OK);
        assert_int_equal(prof_exec_get_params(c, li, wc, wn, bc, bn), PROF_OK);
        assert_memory_equal(wa, wb, wn * 4);
        assert_memory_equal(ba, bb, bn * 4);
        assert_true(memcmp(wa, wc, wn * 4) != 0);
        double fan_in, fan_out;
        if (L->kind == MEMEST_KIND_DENSE) {
            fan_in = (double)L->in_shape.dim[0];
            fan_out = (double)L->units;
        } else {
            const double kk = (double)(L->kernel_h * L->kernel_w);
            fan_in = (double)(L->in_shape.dim[0] / L->groups) * kk;
            fan_out = (double)(L->units / L->groups) * kk;
        }
        const double bound = L->act == MEMEST_ACT_RELU
                                 ? sqrt(6.0 / fan_in)
                                 : sqrt(6.0 / (fan_in + fan_out));
        double mx = 0.0, mean = 0.0;
        for (size_t i = 0; i < wn; i++) {
            assert_true(fabs(wa[i]) <= bound);
            mx = max_seen(mx, fabs(wa[i]));
            mean += wa[i];
        }
        /* uniform: the largest of many draws comes near the bound */
        assert_true(mx > 0.8 * bound);
        assert_true(fabs(mean / (double)wn) < 0.2 * bound);
        for (size_t i = 0; i < bn; i++) {
            assert_true(fabs(ba[i]) <= 1.0 / sqrt(fan_in));
        }
        free(wa);
        free(wb);
        free(wc);
        free(ba);
        free(bb);
        free(bc);
    }
    prof_exec_destroy(a);
    prof_exec_destroy(b);
    prof_exec_destroy(c);
    memest_model_destroy(m);
}

/* ---- the operator profile ----------------------------------------------- */

/* A graph's profile: one row per layer, each moving its parameters, ALL
 * the tensors it reads and its output (nothing for the views). A model
 * with two inputs is refused by the one-input profile. */
static void test_profile_graph(void **state)
{
    (void)state;
    memest_model *m = model_of(GRAPH_MODELS[0]);
    struct prof_exec_opts o;
    prof_exec_opts_init(&o);
    o.batch = 2;
    prof_exec *ex = NULL;
    assert_int_equal(prof_exec_create(m, &o, &ex, NULL), PROF_OK);
    const size_t nin = prof_exec_input_count(ex);
    float *x = malloc(nin * sizeof(float));
    assert_non_null(x);
    rng_state = SEED;
    for (size_t i = 0; i < nin; i++) {
        x[i] = rnd_sym(1.0);
    }
    struct prof_time_opts to;
    prof_time_opts_init(&to);
    to.warmup = 1;
    to.repeats = 2;
    struct prof_exec_profile prof;
    assert_int_equal(prof_exec_profile(ex, x, nin, &to, &prof), PROF_OK);
    assert_int_equal(prof.count, memest_model_layer_count(m) + 1);
    for (size_t i = 1; i < prof.count; i++) {
        const struct memest_layer *L = memest_model_layer(m, i - 1);
        const struct prof_exec_op_info *in = &prof.ops[i].info;
        uint64_t read = 0;
        for (size_t j = 0; j < L->input_count; j++) {
            const struct memest_shape sh =
                memest_model_tensor_shape(m, L->inputs[j]);
            uint64_t e = o.batch * 4;
            for (unsigned r = 0; r < sh.rank; r++) {
                e *= sh.dim[r];
            }
            read += e;
        }
        assert_true(in->input_bytes == read);
        const bool view = L->kind == MEMEST_KIND_FLATTEN ||
                          L->kind == MEMEST_KIND_DROPOUT ||
                          L->kind == MEMEST_KIND_IDENTITY;
        assert_true(in->bytes_moved ==
                    (view ? 0
                          : L->parameter_count * 4 + read +
                                in->output_bytes));
    }
    prof_exec_profile_finish(&prof);
    prof_exec_destroy(ex);
    memest_model_destroy(m);

    m = model_of(GRAPH_MODELS[2]);
    assert_int_equal(prof_exec_create(m, NULL, &ex, NULL), PROF_OK);
    assert_int_equal(prof_exec_input_tensors(ex), 2);
    assert_int_equal(prof_exec_profile(ex, x, prof_exec_input_count(ex), &to,
                                       &prof),
                     PROF_E_INVALID);
    prof_exec_destroy(ex);
    memest_model_destroy(m);
    free(x);
}

static void test_profile_rows(void **state)
{
    (void)state;
    for (size_t pi = 0; pi < 4; pi++) {
        const enum memest_precision p = PRECISIONS[pi];
        const uint64_t batch = 3;
        memest_model *m = model_of(MODELS[2]);
        struct prof_exec_opts o;
        prof_exec_opts_init(&o);
        o.batch = batch;
        o.precision = p;
        prof_exec *ex = NULL;
        assert_int_equal(prof_exec_create(m, &o, &ex, NULL), PROF_OK);
        const size_t nin = prof_exec_input_count(ex);
        float *x = malloc(nin * sizeof(float));
        rng_state = SEED;
        for (size_t i = 0; i < nin; i++) {
            x[i] = rnd_sym(1.0);
        }
        struct prof_time_opts to;
        prof_time_opts_init(&to);
        to.warmup = 1;
        to.repeats = 3;
        to.latency_multiplier = 2.0;
        struct prof_exec_profile prof;
        assert_int_equal(prof_exec_profile(ex, x, nin, &to, &prof), PROF_OK);

        const size_t nrows = memest_estimate_row_count(m);
        struct memest_layer_estimate *rows = calloc(nrows, sizeof *rows);
        size_t got = 0;
        assert_int_equal(memest_estimate_layers(m, batch, p, rows, nrows,
                                                &got),
                         MEMEST_OK);
        assert_int_equal(prof.count, nrows);
        const unsigned sb = memest_precision_bytes(p);
        double sum = 0.0;
        for (size_t i = 0; i < nrows; i++) {
            const struct prof_exec_op_row *r = &prof.ops[i];
            assert_string_equal(r->info.layer, rows[i].layer);
            assert_int_equal(r->info.kind, rows[i].kind);
            assert_true(r->info.macs == rows[i].macs);
            if (memest_precision_is_int8(p)) {
                /* the estimate counts a deployed int8 file's scales, zero
                 * points and int32 biases besides the weights */
                assert_true(r->info.parameter_bytes <=
                            rows[i].parameter_bytes);
            } else {
                assert_true(r->info.parameter_bytes ==
                            rows[i].parameter_bytes);
            }
            assert_true(r->info.output_bytes == rows[i].activation_bytes);
            if (i == 0) {
                /* staging reads the caller's floats */
                assert_true(r->info.input_bytes ==
                            rows[0].output_elements * 4);
                assert_true(r->info.bytes_moved ==
                            rows[0].output_elements * (4 + sb));
            } else {
                assert_true(r->info.input_bytes ==
                            rows[i - 1].activation_bytes);
                /* flatten is a view of its input: it moves nothing */
                assert_true(r->info.bytes_moved ==
                            (r->info.kind == MEMEST_KIND_FLATTEN
                                 ? 0
                                 : r->info.parameter_bytes +
                                       rows[i - 1].activation_bytes +
                                       rows[i].activation_bytes));
            }
            assert_int_equal(r->stats.count, 3);
            assert_true(r->latency_ms == r->stats.median_ms);
            assert_true(r->latency_ms >= 0.0);
            const double s = fmax(r->latency_ms / 1000.0, 1e-9);
            ASSERT_NEAR(r->achieved_gbps,
                                (double)r->info.bytes_moved / s / 1e9,
                                1e-9 * r->achieved_gbps + 1e-12);
            ASSERT_NEAR(r->achieved_gmacs,
                                (double)r->info.macs / s / 1e9,
                                1e-9 * r->achieved_gmacs + 1e-12);
            ASSERT_NEAR(r->memory_kb,
                                (double)(r->info.bytes_moved +
                                         r->info.scratch_bytes) / 1024.0,
                                1e-12);
            sum += r->latency_ms;
        }
        ASSERT_NEAR(prof.operator_sum_ms, sum, 1e-12);
        assert_true(prof.forward_ms == prof.forward.median_ms);
        ASSERT_NEAR(prof.framing_ms, prof.forward_ms - sum, 1e-12);

        /* Predictions on a device made up for the test: every row is the
         * roofline of its own counts. */
        struct prof_device dev = {
            .bandwidth_gbps = 2.0, .peak_gmacs = 3.0, .power_watts = 4.0,
        };
        strcpy(dev.name, "board");
        struct prof_layer_prediction *pred = calloc(nrows, sizeof *pred);
        struct prof_prediction_total tot;
        assert_int_equal(prof_exec_predict(&prof, &dev, pred, &tot), PROF_OK);
        double psum = 0.0;
        double msum = 0.0;
        size_t compared = 0;
        /* Row 0 stages the input: not a layer, so no prediction, no
         * measurement and no error. */
        assert_int_equal(prof.ops[0].info.kind, MEMEST_KIND_INPUT);
        assert_true(pred[0].pred.predicted_ms == 0.0);
        assert_true(isnan(pred[0].measured_ms));
        assert_true(isnan(pred[0].relative_error));
        for (size_t i = 1; i < nrows; i++) {
            const struct prof_exec_op_row *r = &prof.ops[i];
            const double c_ms = (double)r->info.macs / 3e9 * 1e3;
            const double m_ms = (double)r->info.bytes_moved / 2e9 * 1e3;
            ASSERT_NEAR(pred[i].pred.predicted_ms, fmax(c_ms, m_ms),
                                1e-12 * fmax(c_ms, m_ms) + 1e-15);
            assert_true(pred[i].measured_ms == r->latency_ms);
            /* an error only where both sides are positive */
            if (r->latency_ms > 0.0 && pred[i].pred.predicted_ms > 0.0) {
                ASSERT_NEAR(pred[i].relative_error,
                            (pred[i].pred.predicted_ms - r->latency_ms) /
                                r->latency_ms,
                            1e-12 * fabs(pred[i].relative_error) + 1e-15);
                compared++;
            } else {
                assert_true(isnan(pred[i].relative_error));
            }
            psum += pred[i].pred.predicted_ms;
            msum += r->latency_ms;
        }
        ASSERT_NEAR(tot.predicted_ms, psum, 1e-12 * psum);
        ASSERT_NEAR(tot.measured_ms, msum, 1e-12 * msum);
        assert_int_equal(tot.compared, compared);
        free(pred);
        free(rows);
        prof_exec_profile_finish(&prof);
        prof_exec_profile_finish(NULL);
        free(x);
        prof_exec_destroy(ex);
        memest_model_destroy(m);
    }
}

/* ---- bad input ------------------------------------------------------------ */

static void test_bad_input(void **state)
{
    (void)state;
    memest_model *m = model_of("mlp:6-4-3");
    struct prof_exec_opts o;
    prof_exec *ex = NULL;
    struct prof_diag d;

    assert_int_equal(prof_exec_create(NULL, NULL, &ex, NULL), PROF_E_INVALID);
    assert_int_equal(prof_exec_create(m, NULL, NULL, NULL), PROF_E_INVALID);
    prof_exec_opts_init(&o);
    o.batch = 0;
    assert_int_equal(prof_exec_create(m, &o, &ex, &d), PROF_E_RANGE);
    assert_null(ex);
    prof_exec_opts_init(&o);
    o.precision = MEMEST_FP64;
    assert_int_equal(prof_exec_create(m, &o, &ex, &d), PROF_E_RANGE);
    assert_non_null(strstr(d.message, "fp64"));
    o.precision = (enum memest_precision)17;
    assert_int_equal(prof_exec_create(m, &o, &ex, &d), PROF_E_RANGE);

    /* Padding over half the window (ONNX allows it, PyTorch does not):
     * every window still holds an input, and the pooling kernels run it.
     * A whole window of padding is refused by libmemest already. */
    memest_model *pm = model_of("input 1x6x6\nmaxpool k=3 p=2\n");
    assert_int_equal(prof_exec_create(pm, NULL, &ex, &d), PROF_OK);
    prof_exec_destroy(ex);
    ex = NULL;
    memest_model_destroy(pm);

    /* A batch whose sizes overflow. */
    prof_exec_opts_init(&o);
    o.batch = UINT64_MAX / 2;
    assert_int_not_equal(prof_exec_create(m, &o, &ex, &d), PROF_OK);
    assert_null(ex);

    /* Wrong counts at run time; int8 cannot quantise NaN. */
    prof_exec_opts_init(&o);
    o.batch = 2;
    o.precision = MEMEST_INT8_DYNAMIC;
    assert_int_equal(prof_exec_create(m, &o, &ex, NULL), PROF_OK);
    float x[12] = {0}, y[6];
    assert_int_equal(prof_exec_run(ex, x, 11, y, 6), PROF_E_INVALID);
    assert_int_equal(prof_exec_run(ex, x, 12, y, 5), PROF_E_INVALID);
    assert_int_equal(prof_exec_run(ex, NULL, 12, y, 6), PROF_E_INVALID);
    assert_int_equal(prof_exec_run(ex, x, 12, y, 6), PROF_OK);
    x[3] = NAN;
    assert_int_equal(prof_exec_run(ex, x, 12, y, 6), PROF_E_RANGE);
    struct prof_exec_op_info info;
    assert_int_equal(prof_exec_op_info(ex, 3, &info), PROF_E_INVALID);
    assert_int_equal(prof_exec_memory(NULL, NULL), PROF_E_INVALID);
    prof_exec_destroy(ex);
    prof_exec_destroy(NULL);
    memest_model_destroy(m);
}

/* An all-zero input: int8 gives scale 1 and zeros, softmax is uniform. */
static void test_zero_input(void **state)
{
    (void)state;
    memest_model *m = model_of("input 3\ndense 4 bias=no act=relu\n"
                               "dense 5 bias=no act=softmax\n");
    for (size_t pi = 0; pi < 4; pi++) {
        struct prof_exec_opts o;
        prof_exec_opts_init(&o);
        o.precision = PRECISIONS[pi];
        prof_exec *ex = NULL;
        assert_int_equal(prof_exec_create(m, &o, &ex, NULL), PROF_OK);
        float x[3] = {0}, y[5];
        assert_int_equal(prof_exec_run(ex, x, 3, y, 5), PROF_OK);
        for (size_t i = 0; i < 5; i++) {
            assert_true(y[i] == 0.2f);
        }
        prof_exec_destroy(ex);
    }
    memest_model_destroy(m);
}

/* ---- channel-blocked activations ---------------------------------------- */

/* Run text at fp32 with channel_blocked on and off (threads 1 or 2, every
 * layer split when 2) on the same weights and input; the outputs must be
 * the same bits. Returns the executor with blocking on, for its layouts. */
static prof_exec *run_both_layouts(const char *text, uint64_t batch,
                                   unsigned threads)
{
    memest_model *m = model_of(text);
    prof_exec *ex[2];
    float *y[2];
    size_t ny = 0, nx = 0;
    float *x = NULL;
    for (int v = 0; v < 2; v++) {
        struct prof_exec_opts o;
        prof_exec_opts_init(&o);
        o.batch = batch;
        o.seed = SEED ^ batch;
        o.threads = threads;
        o.thread_min_macs = 0;
        o.channel_blocked = v == 0;
        struct prof_diag d;
        if (prof_exec_create(m, &o, &ex[v], &d) != PROF_OK) {
            fail_msg("%s: %s", text, d.message);
        }
        if (!x) {
            nx = prof_exec_input_count_at(ex[v], 0);
            x = malloc(nx * sizeof *x);
            assert_non_null(x);
            rng_state = SEED ^ 0xb10c ^ batch;
            for (size_t i = 0; i < nx; i++) {
                x[i] = rnd_sym(1.0);
            }
        }
        ny = prof_exec_output_count(ex[v]);
        y[v] = malloc(ny * sizeof *y[v]);
        assert_non_null(y[v]);
        assert_int_equal(prof_exec_run(ex[v], x, nx, y[v], ny), PROF_OK);
    }
    if (memcmp(y[0], y[1], ny * sizeof *y[0]) != 0) {
        fail_msg("%s, batch %llu, %u threads: blocked activations change "
                 "the output", text, (unsigned long long)batch, threads);
    }
    /* with blocking off, every tensor is NCHW */
    for (size_t i = 0; i < prof_exec_op_count(ex[1]); i++) {
        struct prof_exec_op_info info;
        assert_int_equal(prof_exec_op_info(ex[1], i, &info), PROF_OK);
        assert_int_equal(info.output_layout, 0);
    }
    prof_exec_destroy(ex[1]);
    free(y[0]);
    free(y[1]);
    free(x);
    /* the model outlives the executor: it is freed with it below */
    return ex[0];
}

/* The layouts the executor chose, one letter per layer ('b' blocked, 'n'
 * NCHW), against the expected string. */
static void check_layouts(prof_exec *ex, const char *want)
{
    char got[64];
    const size_t n = prof_exec_op_count(ex) - 1;
    assert_true(n < sizeof got);
    for (size_t i = 0; i < n; i++) {
        struct prof_exec_op_info info;
        assert_int_equal(prof_exec_op_info(ex, i + 1, &info), PROF_OK);
        got[i] = info.output_layout == 1 ? 'b' : 'n';
    }
    got[n] = '\0';
    assert_string_equal(got, want);
}

/* Which tensors are blocked, worked out by hand from the rule (a tensor
 * is blocked when every layer that writes or reads it can, with 8k
 * channels; element-wise layers and depthwise ones keep one layout), and
 * blocked runs giving the same bits as NCHW ones on these models and the
 * presets, at batch 1 and 3, on 1 and 2 threads. */
static void test_channel_blocked(void **state)
{
    (void)state;
    static const struct {
        const char *text, *layouts;
    } cases[] = {
        /* a: 16 channels read by the depthwise b: blocked, as b's output
         * read by the pointwise c; d has 12 channels; e is depthwise on
         * them; f feeds a grouped convolution whose groups are whole
         * blocks (8 channels), which reads blocked; g's output is read by
         * flatten; the dense output is the model's */
        {"input 8x12x12\n"
         "conv2d 16 k=3 p=1 act=relu\n"
         "conv2d 16 k=3 p=1 g=16 act=relu6\n"
         "conv2d 24 k=1 act=relu\n"
         "conv2d 12 k=1\n"
         "conv2d 12 k=3 s=2 p=1 g=12\n"
         "conv2d 16 k=1\n"
         "conv2d 16 k=3 g=2 act=relu\n"
         "flatten\n"
         "dense 5\n",
         "bbbnnbnnn"},
        /* RegNet-style: grouped 3 x 3 convolutions of groups of 8 and 16
         * channels, at strides 1 and 2, in a residual block, stay
         * blocked up to the global average; a group of 4 channels (h)
         * reads and writes NCHW, and so do its neighbours' tensors */
        {"input 8x12x12\n"
         "conv2d 32 k=1 act=relu name=a\n"
         "conv2d 32 k=3 p=1 g=2 act=relu\n"
         "conv2d 32 k=1 name=c\n"
         "add in=a,c act=relu\n"
         "conv2d 64 k=3 s=2 p=1 g=4 act=relu\n"
         "conv2d 16 k=3 p=1 g=2\n"
         "globalavgpool\n"
         "flatten\n"
         "dense 4\n",
         "bbbbbbnnn"},
        {"input 8x9x9\n"
         "conv2d 16 k=3 p=1 act=relu\n"
         "conv2d 16 k=3 p=1 g=4 act=relu name=h\n"
         "conv2d 16 k=3 s=2 p=1 g=2\n"
         "globalavgpool\n"
         "flatten\n"
         "dense 4\n",
         "nnbnnn"},
        /* a sum whose output a max pool reads, and that pool's output
         * flatten, holds all it joins to NCHW (the pool keeps one layout):
         * b and s (its inputs), c (s is c's activation, element-wise), and
         * a (the depthwise b's input) */
        {"input 8x10x10\n"
         "conv2d 16 k=3 p=1 name=a\n"
         "conv2d 16 k=3 p=1 g=16 name=b\n"
         "conv2d 16 k=1 act=relu name=c\n"
         "sigmoid name=s\n"
         "add in=b,s act=relu name=e\n"
         "maxpool k=2\n"
         "flatten\n"
         "dense 4\n",
         "nnnnnnnn"},
        /* the same sum read by a convolution: everything up to the
         * global average is blocked (a tanh fused as a pass of its own,
         * too), the last convolution as well, since the global average
         * reads blocked input; its [8][1][1] output is NCHW */
        {"input 8x10x10\n"
         "conv2d 16 k=3 p=1 name=a\n"
         "conv2d 16 k=3 p=1 g=16 name=b\n"
         "conv2d 16 k=1 act=tanh name=c\n"
         "sigmoid name=s\n"
         "add in=b,s act=relu name=e\n"
         "conv2d 8 k=3 s=2 p=1 act=relu6\n"
         "globalavgpool\n"
         "flatten\n"
         "dense 4\n",
         "bbbbbbnnn"},
        /* a max pool with a 1 x 1 output reads blocked input too, also
         * when its window misses the input's last row and column (k=4
         * s=2 on 5 x 5); a relu6 add before it (fused into the add's
         * pass) joins a and b */
        {"input 8x5x5\n"
         "conv2d 16 k=3 p=1 name=a\n"
         "conv2d 16 k=1 act=relu6 name=b\n"
         "add in=a,b act=relu6\n"
         "maxpool k=4 s=2\n"
         "flatten\n"
         "dense 3\n",
         "bbbnnn"},
        /* squeeze-excite: the gate f2 (16 x 1 x 1, the same bytes in
         * both layouts, so it ties no layouts together) multiplies a
         * blocked a in both orders through the blocked channel scale,
         * then a constant and equal shapes run element-wise on the
         * blocked form; a sub broadcasting g over the planes has only an
         * NCHW kernel and holds its input sc to NCHW, and with it c2 (the
         * big operand of the mul that makes sc); the conv after the sub
         * writes blocked again for the global average */
        {"input 8x6x6\n"
         "conv2d 16 k=3 p=1 act=relu name=a\n"
         "globalavgpool name=g\n"
         "conv2d 4 k=1 act=relu name=f1\n"
         "conv2d 16 k=1 act=sigmoid name=f2\n"
         "mul in=a,f2 name=se\n"
         "mul in=f2,se name=se2\n"
         "mul scalar=0.5 name=h\n"
         "add in=h,se2 name=s2\n"
         "conv2d 16 k=3 p=1 name=c2\n"
         "mul in=c2,f2 name=sc\n"
         "sub in=sc,g\n"
         "conv2d 8 k=1\n"
         "globalavgpool\n"
         "flatten\n"
         "dense 3\n",
         "bnnbbbbbnnnbnnn"},
        /* SqueezeNet's shape: ceil-mode max pools (with extra padding:
         * 12 -> 6, 6 -> 3), a fire module's two expands joined by a
         * concat, an average pool inside the network: everything up to
         * the global average stays blocked */
        {"input 8x24x24\n"
         "conv2d 16 k=3 s=2 p=1 act=relu\n"
         "maxpool k=3 s=2 ceil=yes name=p1\n"
         "conv2d 8 k=1 act=relu name=sq\n"
         "conv2d 16 k=1 act=relu in=sq name=e1\n"
         "conv2d 16 k=3 p=1 act=relu in=sq name=e3\n"
         "concat in=e1,e3\n"
         "maxpool k=3 s=2 ceil=yes\n"
         "conv2d 16 k=1 act=relu\n"
         "avgpool k=2 s=1 p=1 count_pad=no\n"
         "conv2d 8 k=1\n"
         "globalavgpool\n"
         "flatten\n"
         "dense 3\n",
         "bbbbbbbbbbnnn"},
        /* ResNet's stem: the max pool between the 7 x 7 convolution and
         * the first block, whose sum reads it, is blocked */
        {"input 8x20x20\n"
         "conv2d 16 k=7 s=2 p=3 act=relu\n"
         "maxpool k=3 s=2 p=1 name=p\n"
         "conv2d 16 k=3 p=1 act=relu\n"
         "conv2d 16 k=3 p=1 name=b\n"
         "add in=b,p act=relu\n"
         "conv2d 8 k=1\n"
         "globalavgpool\n"
         "flatten\n"
         "dense 3\n",
         "bbbbbbnnn"},
        /* a concat of 12 channels (not whole blocks) is NCHW, and with it
         * the 16 it joins them to */
        {"input 8x6x6\n"
         "conv2d 16 k=3 p=1 name=a\n"
         "conv2d 12 k=1 name=t\n"
         "concat in=a,t\n"
         "conv2d 8 k=1\n"
         "globalavgpool\n"
         "flatten\n"
         "dense 3\n",
         "nnnbnnn"},
        /* 12 channels: the global average's input cannot be blocked */
        {"input 8x6x6\n"
         "conv2d 16 k=3 p=1\n"
         "conv2d 12 k=1 act=relu\n"
         "globalavgpool\n"
         "flatten\n"
         "dense 3\n",
         "bnnnn"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        for (uint64_t batch = 1; batch <= 3; batch += 2) {
            for (unsigned th = 1; th <= 2; th++) {
                prof_exec *ex = run_both_layouts(cases[i].text, batch, th);
                check_layouts(ex, cases[i].layouts);
                memest_model *m = (memest_model *)prof_exec_model(ex);
                prof_exec_destroy(ex);
                memest_model_destroy(m);
            }
        }
    }
    /* the presets: every convolution, add and dropout writes blocked,
     * since each closing pool (ResNet-8's k=8 on 64 x 8 x 8, DS-CNN's
     * 24 x 5 window on 64 x 25 x 5, MobileNet's k=3 on 256 x 3 x 3) has a
     * 1 x 1 output and reads blocked input; the pool, flatten and dense
     * write NCHW (DS-CNN's dropouts are views of conv1's and pw4's
     * outputs; ResNet-8's last stage, s3_conv2 and s3_short joined through
     * s3_add, is now blocked as a whole) */
    static const struct {
        const char *name, *layouts;
    } presets[] = {
        {"resnet8", "bbbbbbbbbbbbnnn"},
        {"ds-cnn", "bbbbbbbbbbbnnn"},
        {"mobilenetv1-0.25", "bbbbbbbbbbbbbbbbbbbbbbbbbbbnnn"},
    };
    for (size_t i = 0; i < 3; i++) {
        for (uint64_t batch = 1; batch <= 3; batch += 2) {
            prof_exec *ex = run_both_layouts(presets[i].name, batch, 2);
            check_layouts(ex, presets[i].layouts);
            memest_model *m = (memest_model *)prof_exec_model(ex);
            prof_exec_destroy(ex);
            memest_model_destroy(m);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_opts_init),
        cmocka_unit_test(test_reference_all),
        cmocka_unit_test(test_reference_graphs),
        cmocka_unit_test(test_reference_batch32),
        cmocka_unit_test(test_16bit_memory),
        cmocka_unit_test(test_int8_depthwise_paths_agree),
        cmocka_unit_test(test_reference_detects_error),
        cmocka_unit_test(test_arena_equals_plan),
        cmocka_unit_test(test_graph_arena),
        cmocka_unit_test(test_zoo_arena),
        cmocka_unit_test(test_seq_arena),
        cmocka_unit_test(test_model_weights),
        cmocka_unit_test(test_presets),
        cmocka_unit_test(test_wrong_plan_fails),
        cmocka_unit_test(test_params_round_trip),
        cmocka_unit_test(test_seeded_init),
        cmocka_unit_test(test_profile_rows),
        cmocka_unit_test(test_profile_graph),
        cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_zero_input),
        cmocka_unit_test(test_channel_blocked),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
