/* The trainer against independent truths:
 *   - its gradients against central finite differences of a forward pass
 *     written here in double precision (its own loops for dense, conv2d with
 *     stride, padding and groups, max and average pooling, flatten, relu,
 *     gelu, sigmoid, tanh and softmax cross-entropy), on tiny models that
 *     together use every operator and activation, fused and standalone;
 *     graphs too (residual adds, broadcasting and constant adds, concats
 *     along channels and rows, global average pooling) and batch norms in
 *     training mode, standalone and folded into a conv2d or dense layer,
 *     against a reference over the whole batch; and a check that the
 *     comparison catches a wrong gradient;
 *   - batch norms' running statistics through the trainer against
 *     PyTorch's (tests/data/batchnorm-torch.txt), and evaluation on them
 *     against an executor given the trainer's folded parameters;
 *   - momentum and Adam steps against the same steps computed by hand from
 *     the closed-form gradient of a one-layer softmax model;
 *   - GradScaler's own trace (scale 4, growth 2, backoff 0.25, interval 2:
 *     two finite steps give 8, an overflow 2), and an fp16 overflow through
 *     the trainer: the step is skipped, the weights do not move, the scale
 *     halves and the event is recorded;
 *   - its buffers against libmemest's training estimate, term by term, for
 *     several models, precisions and optimisers, and a hand count;
 *   - determinism (same seed: bit-identical weights; also across thread
 *     counts, which kern_sgemm does not let change a result);
 *   - learning: a separable synthetic problem reaches high accuracy in every
 *     precision and with every optimiser;
 *   - bad options and unsupported models are refused with a message.
 *
 * Finite differences: L(theta +- h) in double with h = 1e-5 have a
 * truncation error of order h^2 |L'''| (about 1e-10 here) and a rounding
 * error of order 1e-16 / h, both far below the float gradients' own error
 * (measured: at most 2e-7 of the largest gradient of a layer). The fp32
 * tolerance is 2e-6 of the largest gradient magnitude of the layer plus
 * 2e-5 of the value (about 34 unit roundoffs: float sums of a few hundred
 * terms and the SIMD activations' few ulp); with 16-bit storage it is 8
 * unit roundoffs of the format (fp16 2^-11, bf16 2^-8) of the largest
 * gradient, as every stored tensor is rounded once more. A wrong label
 * gives errors thousands of times the tolerance. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "edgefit/kernels.h"
#include "edgefit/memest.h"
#include "edgefit/profile.h"
#include "bn_fixture.h"

#define SEED UINT64_C(20261122)
#define PI 3.14159265358979323846

/* ---- the test's own random numbers (xorshift64*) ------------------------- */

static uint64_t rng_state;

static double rnd(void) /* uniform in [0, 1) */
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return (double)((rng_state * UINT64_C(0x2545F4914F6CDD1D)) >> 11) *
           0x1p-53;
}

static memest_model *model(const char *text)
{
    memest_model *m = NULL;
    struct memest_diag d;
    if (memest_model_load(text, &m, &d) != MEMEST_OK) {
        if (memest_model_parse(text, &m, &d) != MEMEST_OK) {
            fail_msg("model: %s", d.message);
        }
    }
    return m;
}

static size_t shape_n(const struct memest_shape *s)
{
    size_t n = 1;
    for (unsigned i = 0; i < s->rank; i++) {
        n *= (size_t)s->dim[i];
    }
    return n;
}

/* ---- the reference forward pass in double --------------------------------- */

struct ref_params {
    size_t n;        /* layers */
    double **w, **b; /* PyTorch layout; NULL for layers without */
    size_t *wn, *bn;
    /* a batch norm folded into a layer: its gamma (gn channels); w holds
     * the weights before the fold, b beta (the layer adds no bias) */
    double **gamma;
    size_t *gn;
};

/* y = gamma (x - mean) / sqrt(var + eps) + beta in place over each
 * channel of the batch's n-element samples (C channels of n / C), with
 * the batch's mean and biased variance: a batch norm in training mode. */
static void ref_batchnorm(double *x, size_t batch, size_t n, size_t C,
                          const double *gamma, const double *beta,
                          double eps)
{
    const size_t hw = n / C;
    for (size_t c = 0; c < C; c++) {
        double mean = 0, var = 0;
        for (size_t b = 0; b < batch; b++) {
            for (size_t k = 0; k < hw; k++) {
                mean += x[b * n + c * hw + k];
            }
        }
        mean /= (double)(batch * hw);
        for (size_t b = 0; b < batch; b++) {
            for (size_t k = 0; k < hw; k++) {
                const double d = x[b * n + c * hw + k] - mean;
                var += d * d;
            }
        }
        var /= (double)(batch * hw);
        const double inv = 1 / sqrt(var + eps);
        for (size_t b = 0; b < batch; b++) {
            for (size_t k = 0; k < hw; k++) {
                double *e = &x[b * n + c * hw + k];
                *e = gamma[c] * (*e - mean) * inv + beta[c];
            }
        }
    }
}

/* alpha, beta: the layer's act_alpha and act_beta (as the kernels take
 * them, floats) */
static double act1(enum memest_act a, double alpha, double beta, double x)
{
    const double fa = (double)(float)alpha, fb = (double)(float)beta;
    switch (a) {
    case MEMEST_ACT_RELU:
        return x > 0 ? x : 0;
    case MEMEST_ACT_GELU:
        return 0.5 * x *
               (1 + tanh(sqrt(2 / PI) * (x + 0.044715 * x * x * x)));
    case MEMEST_ACT_GELU_ERF:
        return 0.5 * x * erfc(-x / sqrt(2.0));
    case MEMEST_ACT_SIGMOID:
        return 1 / (1 + exp(-x));
    case MEMEST_ACT_TANH:
        return tanh(x);
    case MEMEST_ACT_RELU6:
        return x > 0 ? (x < 6 ? x : 6) : 0;
    case MEMEST_ACT_SILU:
        return x / (1 + exp(-x));
    case MEMEST_ACT_SOFTPLUS:
        return x > 0 ? x + log1p(exp(-x)) : log1p(exp(x));
    case MEMEST_ACT_HARDSIGMOID:
        return fmin(1, fmax(0, fa * x + fb));
    case MEMEST_ACT_HARDSWISH:
        return x * fmin(1, fmax(0, x / 6 + 0.5));
    case MEMEST_ACT_LEAKYRELU:
        return x < 0 ? fa * x : x;
    case MEMEST_ACT_ELU:
        return x > 0 ? x : fa * expm1(x);
    case MEMEST_ACT_CLIP:
        return x < fa ? fa : x > fb ? fb : x;
    default:
        return x;
    }
}

/* Log-softmax of one sample along the layer's axis, in place: groups of
 * dim[axis] values `inner` apart. */
static void ref_log_softmax(const struct memest_layer *L, double *z)
{
    size_t outer = 1, inner = 1;
    const size_t n = (size_t)L->out_shape.dim[L->axis];
    for (unsigned d = 0; d < L->out_shape.rank; d++) {
        if (d < L->axis) {
            outer *= (size_t)L->out_shape.dim[d];
        } else if (d > L->axis) {
            inner *= (size_t)L->out_shape.dim[d];
        }
    }
    for (size_t o = 0; o < outer; o++) {
        for (size_t i = 0; i < inner; i++) {
            double *g = z + o * n * inner + i, mx = -INFINITY, se = 0;
            for (size_t k = 0; k < n; k++) {
                mx = g[k * inner] > mx ? g[k * inner] : mx;
            }
            for (size_t k = 0; k < n; k++) {
                se += exp(g[k * inner] - mx);
            }
            for (size_t k = 0; k < n; k++) {
                g[k * inner] -= mx + log(se);
            }
        }
    }
}

/* The input pixel a window element (ky, kx) of output (oy, ox) reads,
 * iy * W + ix, or -1 in the padding. */
static long pixel(size_t oy, size_t ox, long ky, long kx,
                  const struct memest_layer *L, size_t H, size_t W)
{
    const long iy = (long)oy * (long)L->stride_h + ky - (long)L->pad_top;
    const long ix = (long)ox * (long)L->stride_w + kx - (long)L->pad_left;
    if (iy < 0 || ix < 0 || iy >= (long)H || ix >= (long)W) {
        return -1;
    }
    return iy * (long)W + ix;
}

/* An lstm or gru on one sample T x D, in double, written from PyTorch's
 * equations (gates i, f, g, o; r, z, n), independently of the executor's
 * engine: every step's h into y (seq=yes) or the last one of each
 * direction (seq=no). */
static void ref_rnn(const struct memest_layer *L, const double *w,
                    const double *b, const double *x, double *y)
{
    const size_t T = L->in_shape.dim[0], D = L->in_shape.dim[1];
    const size_t H = L->units, gru = L->kind == MEMEST_KIND_GRU;
    const size_t G = gru ? 3 : 4, dirs = L->direction == 2 ? 2 : 1;
    double h[64], c[64], gi[256], gh[256];
    assert_true(H <= 64);
    for (size_t d = 0; d < dirs; d++) {
        const double *wih = w + d * G * H * (D + H), *whh = wih + G * H * D;
        const double *bih = b ? b + d * 2 * G * H : NULL;
        const double *bhh = bih ? bih + G * H : NULL;
        const int rev = d == 1 || L->direction == 1;
        for (size_t j = 0; j < H; j++) {
            h[j] = c[j] = 0;
        }
        for (size_t s = 0; s < T; s++) {
            const size_t t = rev ? T - 1 - s : s;
            for (size_t o = 0; o < G * H; o++) {
                gi[o] = bih ? bih[o] : 0;
                gh[o] = bhh ? bhh[o] : 0;
                for (size_t k = 0; k < D; k++) {
                    gi[o] += wih[o * D + k] * x[t * D + k];
                }
                for (size_t k = 0; k < H && (!gru || L->linear_before_reset ||
                                             o < 2 * H); k++) {
                    gh[o] += whh[o * H + k] * h[k];
                }
            }
            if (!gru) {
                for (size_t j = 0; j < H; j++) {
                    const double ig = 1 / (1 + exp(-gi[j] - gh[j]));
                    const double fg = 1 / (1 + exp(-gi[H + j] - gh[H + j]));
                    const double gg = tanh(gi[2 * H + j] + gh[2 * H + j]);
                    const double og =
                        1 / (1 + exp(-gi[3 * H + j] - gh[3 * H + j]));
                    c[j] = fg * c[j] + ig * gg;
                    h[j] = og * tanh(c[j]);
                }
            } else {
                double r[64], z[64], hn[64];
                for (size_t j = 0; j < H; j++) {
                    r[j] = 1 / (1 + exp(-gi[j] - gh[j]));
                    z[j] = 1 / (1 + exp(-gi[H + j] - gh[H + j]));
                }
                for (size_t j = 0; j < H; j++) {
                    double an;
                    if (L->linear_before_reset) {
                        an = gi[2 * H + j] + r[j] * gh[2 * H + j];
                    } else {
                        an = gi[2 * H + j] + (bhh ? bhh[2 * H + j] : 0);
                        for (size_t k = 0; k < H; k++) {
                            an += whh[(2 * H + j) * H + k] * r[k] * h[k];
                        }
                    }
                    hn[j] = (1 - z[j]) * tanh(an) + z[j] * h[j];
                }
                for (size_t j = 0; j < H; j++) {
                    h[j] = hn[j];
                }
            }
            if (L->return_sequence) {
                for (size_t j = 0; j < H; j++) {
                    y[t * dirs * H + d * H + j] = h[j];
                }
            }
        }
        if (!L->return_sequence) {
            for (size_t j = 0; j < H; j++) {
                y[d * H + j] = h[j];
            }
        }
    }
}

/* Layer i on one sample: its inputs `ins` (one per input of the layer)
 * -> nxt, before the activation, with its own loops for every operator;
 * *act receives the activation to apply. A batchnorm is done by
 * ref_loss, over the batch. */
static void ref_layer(const memest_model *m, const struct ref_params *p,
                      size_t i, const double *const *ins, double *nxt,
                      enum memest_act *act_out)
{
    const double *cur = ins[0];
    {
        const struct memest_layer *L = memest_model_layer(m, i);
        const size_t on = shape_n(&L->out_shape);
        const size_t in_n = shape_n(&L->in_shape);
        const size_t C = L->in_shape.dim[0];
        const size_t H = L->in_shape.rank == 3 ? L->in_shape.dim[1] : 1;
        const size_t W = L->in_shape.rank == 3 ? L->in_shape.dim[2] : 1;
        const size_t OC = L->out_shape.dim[0];
        const size_t OH = L->out_shape.rank == 3 ? L->out_shape.dim[1] : 1;
        const size_t OW = L->out_shape.rank == 3 ? L->out_shape.dim[2] : 1;
        const long kh = (long)L->kernel_h, kw = (long)L->kernel_w;
        enum memest_act act = L->act;
        switch (L->kind) {
        case MEMEST_KIND_DENSE: {
            /* a vector, or each step of a T x D sequence (the same W) */
            const size_t steps = L->in_shape.rank == 2 ? C : 1;
            const size_t k = in_n / steps, no = on / steps;
            for (size_t t = 0; t < steps; t++) {
                for (size_t o = 0; o < no; o++) {
                    double acc = p->b[i] && !L->folded_bn ? p->b[i][o] : 0;
                    for (size_t j = 0; j < k; j++) {
                        acc += p->w[i][o * k + j] * cur[t * k + j];
                    }
                    nxt[t * no + o] = acc;
                }
            }
            break;
        }
        case MEMEST_KIND_LAYERNORM: {
            /* rows of D = units: (x - mean) / sqrt(biased var + eps) *
             * gamma + beta */
            const size_t D = (size_t)L->units;
            for (size_t r = 0; r < on / D; r++) {
                const double *xr = cur + r * D;
                double mean = 0, var = 0;
                for (size_t j = 0; j < D; j++) {
                    mean += xr[j];
                }
                mean /= (double)D;
                for (size_t j = 0; j < D; j++) {
                    var += (xr[j] - mean) * (xr[j] - mean);
                }
                const double inv = 1 / sqrt(var / (double)D + L->bn_epsilon);
                for (size_t j = 0; j < D; j++) {
                    nxt[r * D + j] = p->w[i][j] * (xr[j] - mean) * inv +
                                     (p->b[i] ? p->b[i][j] : 0);
                }
            }
            break;
        }
        case MEMEST_KIND_CLSTOKEN:
            memcpy(nxt, p->w[i], p->wn[i] * sizeof *nxt);
            memcpy(nxt + p->wn[i], cur, in_n * sizeof *nxt);
            break;
        case MEMEST_KIND_POSEMBED:
            for (size_t j = 0; j < on; j++) {
                nxt[j] = cur[j] + p->w[i][j];
            }
            break;
        case MEMEST_KIND_CONV2D: {
            const size_t g = L->groups, icg = C / g, ocg = OC / g;
            for (size_t oc = 0; oc < OC; oc++) {
                const size_t grp = oc / ocg;
                for (size_t oy = 0; oy < OH; oy++) {
                    for (size_t ox = 0; ox < OW; ox++) {
                        double acc =
                            p->b[i] && !L->folded_bn ? p->b[i][oc] : 0;
                        for (size_t ci = 0; ci < icg; ci++) {
                            for (long ky = 0; ky < kh; ky++) {
                                for (long kx = 0; kx < kw; kx++) {
                                    const long at =
                                        pixel(oy, ox, ky, kx, L, H, W);
                                    if (at < 0) {
                                        continue;
                                    }
                                    acc += p->w[i][((oc * icg + ci) * kh +
                                                    ky) * kw + kx] *
                                           cur[(grp * icg + ci) * H * W +
                                               (size_t)at];
                                }
                            }
                        }
                        nxt[(oc * OH + oy) * OW + ox] = acc;
                    }
                }
            }
            break;
        }
        case MEMEST_KIND_MAXPOOL:
        case MEMEST_KIND_AVGPOOL: {
            /* kh x kw windows, a stride per axis, padding per side; an
             * average divides by the window or by its cells inside */
            const long sh = (long)L->stride_h, sw = (long)L->stride_w;
            const long pt = (long)L->pad_top, pl = (long)L->pad_left;
            for (size_t c = 0; c < OC; c++) {
                for (size_t oy = 0; oy < OH; oy++) {
                    for (size_t ox = 0; ox < OW; ox++) {
                        double mx = -INFINITY, sum = 0;
                        long real = 0;
                        for (long ky = 0; ky < kh; ky++) {
                            for (long kx = 0; kx < kw; kx++) {
                                const long iy = (long)oy * sh + ky - pt;
                                const long ix = (long)ox * sw + kx - pl;
                                if (iy < 0 || ix < 0 || iy >= (long)H ||
                                    ix >= (long)W) {
                                    continue;
                                }
                                double v =
                                    cur[c * H * W + (size_t)(iy * (long)W + ix)];
                                mx = v > mx ? v : mx;
                                sum += v;
                                real++;
                            }
                        }
                        const double div = L->count_include_pad
                                               ? (double)(kh * kw)
                                               : (double)real;
                        nxt[(c * OH + oy) * OW + ox] =
                            L->kind == MEMEST_KIND_MAXPOOL ? mx : sum / div;
                    }
                }
            }
            act = MEMEST_ACT_NONE;
            break;
        }
        case MEMEST_KIND_FLATTEN:
        case MEMEST_KIND_IDENTITY:
        case MEMEST_KIND_DROPOUT:
        case MEMEST_KIND_RESHAPE:
            memcpy(nxt, cur, on * sizeof *nxt);
            break;
        case MEMEST_KIND_ACTIVATION:
            memcpy(nxt, cur, on * sizeof *nxt);
            break;
        case MEMEST_KIND_SHUFFLE: {
            /* output channel j * g + i is input channel i * (C/g) + j */
            const size_t g = L->groups, cg = C / g;
            for (size_t gi = 0; gi < g; gi++) {
                for (size_t j = 0; j < cg; j++) {
                    memcpy(nxt + (j * g + gi) * H * W,
                           cur + (gi * cg + j) * H * W, H * W * sizeof *nxt);
                }
            }
            break;
        }
        case MEMEST_KIND_SLICE: {
            const size_t b = (size_t)L->slice_begin;
            for (size_t c = 0; c < OC; c++) {
                for (size_t oy = 0; oy < OH; oy++) {
                    for (size_t ox = 0; ox < OW; ox++) {
                        const size_t ic = c + (L->slice_axis == 0 ? b : 0);
                        const size_t iy = oy + (L->slice_axis == 1 ? b : 0);
                        const size_t ix = ox + (L->slice_axis == 2 ? b : 0);
                        nxt[(c * OH + oy) * OW + ox] =
                            cur[(ic * H + iy) * W + ix];
                    }
                }
            }
            break;
        }
        case MEMEST_KIND_ADD: {
            /* numpy's broadcasting: shapes aligned on the right, a
             * dimension of 1 repeated; or a constant */
            const struct memest_shape *os = &L->out_shape;
            for (size_t o = 0; o < on; o++) {
                double acc = L->scalar_side != MEMEST_SCALAR_NONE
                                 ? (double)(float)L->scalar
                                 : 0;
                for (size_t k = 0; k < L->input_count; k++) {
                    const struct memest_shape is =
                        memest_model_tensor_shape(m, L->inputs[k]);
                    size_t rem = o, at = 0, scale = 1;
                    for (unsigned d = os->rank; d-- > 0;) {
                        const size_t od = (size_t)os->dim[d];
                        const size_t pos = rem % od;
                        rem /= od;
                        const unsigned back = os->rank - 1 - d;
                        if (back < is.rank) {
                            const size_t id =
                                (size_t)is.dim[is.rank - 1 - back];
                            at += (id == 1 ? 0 : pos) * scale;
                            scale *= id;
                        }
                    }
                    acc += ins[k][at];
                }
                nxt[o] = acc;
            }
            break;
        }
        case MEMEST_KIND_CONCAT: {
            /* along dim[axis]: for each position of the dimensions
             * before it, each input's block of the rest in turn */
            size_t outer = 1, at = 0;
            for (unsigned d = 0; d < L->concat_axis; d++) {
                outer *= (size_t)L->out_shape.dim[d];
            }
            for (size_t o = 0; o < outer; o++) {
                for (size_t k = 0; k < L->input_count; k++) {
                    const struct memest_shape sh =
                        memest_model_tensor_shape(m, L->inputs[k]);
                    const size_t blk = shape_n(&sh) / outer;
                    for (size_t e = 0; e < blk; e++) {
                        nxt[at++] = ins[k][o * blk + e];
                    }
                }
            }
            break;
        }
        case MEMEST_KIND_LSTM:
        case MEMEST_KIND_GRU:
            ref_rnn(L, p->w[i], p->b[i], cur, nxt);
            break;
        case MEMEST_KIND_GLOBALAVGPOOL:
            for (size_t c = 0; c < C; c++) {
                double sum = 0;
                for (size_t k = 0; k < H * W; k++) {
                    sum += cur[c * H * W + k];
                }
                nxt[c] = sum / (double)(H * W);
            }
            break;
        default:
            fail_msg("layer kind %d", (int)L->kind);
        }
        *act_out = act;
    }
}

/* The mean over the batch of -log softmax(z)[label]: every tensor of the
 * model kept (a graph reads earlier ones), a batchnorm normalising each
 * channel with the batch's mean and biased variance (training mode),
 * gamma and beta being its weight and bias in p. */
static double ref_loss(const memest_model *m, const struct ref_params *p,
                       const double *x, const uint8_t *y, size_t batch)
{
    const size_t T = p->n + 1;
    double **ten = calloc(T, sizeof *ten);
    size_t *tn = calloc(T, sizeof *tn);
    assert_non_null(ten);
    assert_non_null(tn);
    for (size_t t = 0; t < T; t++) {
        const struct memest_shape sh = memest_model_tensor_shape(m, t);
        tn[t] = shape_n(&sh);
        ten[t] = calloc(batch * tn[t], sizeof **ten);
        assert_non_null(ten[t]);
    }
    memcpy(ten[0], x, batch * tn[0] * sizeof *x);
    double loss = 0;
    for (size_t i = 0; i < p->n; i++) {
        const struct memest_layer *L = memest_model_layer(m, i);
        const size_t on = tn[i + 1];
        double *out = ten[i + 1];
        enum memest_act act = L->act;
        if (L->kind == MEMEST_KIND_BATCHNORM) {
            memcpy(out, ten[L->inputs[0]], batch * on * sizeof *out);
            ref_batchnorm(out, batch, on, (size_t)L->out_shape.dim[0],
                          p->w[i], p->b[i], L->bn_epsilon);
        } else {
            for (size_t b = 0; b < batch; b++) {
                const double *ins[8];
                assert_true(L->input_count <= 8);
                for (size_t k = 0; k < L->input_count; k++) {
                    ins[k] = ten[L->inputs[k]] + b * tn[L->inputs[k]];
                }
                ref_layer(m, p, i, ins, out + b * on, &act);
            }
            if (L->folded_bn) {
                ref_batchnorm(out, batch, on, (size_t)L->out_shape.dim[0],
                              p->gamma[i], p->b[i], L->bn_epsilon);
            }
        }
        for (size_t b = 0; b < batch; b++) {
            double *z = out + b * on;
            if (act == MEMEST_ACT_SOFTMAX) {
                /* the last layer: the loss applies it */
                double mx = -INFINITY, se = 0;
                for (size_t o = 0; o < on; o++) {
                    mx = z[o] > mx ? z[o] : mx;
                }
                for (size_t o = 0; o < on; o++) {
                    se += exp(z[o] - mx);
                }
                loss += log(se) + mx - z[y[b]];
            } else if (act == MEMEST_ACT_LOGSOFTMAX) {
                ref_log_softmax(L, z);
            } else {
                for (size_t o = 0; o < on; o++) {
                    z[o] = act1(act, L->act_alpha, L->act_beta, z[o]);
                }
            }
        }
    }
    for (size_t t = 0; t < T; t++) {
        free(ten[t]);
    }
    free(ten);
    free(tn);
    return loss / (double)batch;
}

static void ref_params_from(struct ref_params *p, const memest_model *m,
                            const prof_train *t)
{
    p->n = memest_model_layer_count(m);
    p->w = calloc(p->n, sizeof *p->w);
    p->b = calloc(p->n, sizeof *p->b);
    p->wn = calloc(p->n, sizeof *p->wn);
    p->bn = calloc(p->n, sizeof *p->bn);
    p->gamma = calloc(p->n, sizeof *p->gamma);
    p->gn = calloc(p->n, sizeof *p->gn);
    for (size_t i = 0; i < p->n; i++) {
        const struct memest_layer *L = memest_model_layer(m, i);
        p->wn[i] = (size_t)L->weight_count;
        p->bn[i] = (size_t)L->bias_count;
        if (!p->wn[i]) {
            continue;
        }
        float *w = malloc(p->wn[i] * sizeof *w);
        float *b = malloc((p->bn[i] + 1) * sizeof *b);
        if (L->kind == MEMEST_KIND_BATCHNORM) {
            /* gamma and beta, what the trainer trains */
            float *rm = malloc(p->wn[i] * sizeof *rm);
            float *rv = malloc(p->wn[i] * sizeof *rv);
            assert_int_equal(prof_train_get_batchnorm(t, i, w, b, rm, rv,
                                                      p->wn[i]),
                             PROF_OK);
            free(rm);
            free(rv);
        } else if (L->folded_bn) {
            /* the weights before the fold, beta, gamma */
            const size_t C = p->bn[i];
            float *g = malloc(C * sizeof *g), *rm = malloc(C * sizeof *rm);
            float *rv = malloc(C * sizeof *rv);
            assert_int_equal(prof_train_get_unfolded_weight(t, i, w,
                                                            p->wn[i]),
                             PROF_OK);
            assert_int_equal(prof_train_get_batchnorm(t, i, g, b, rm, rv, C),
                             PROF_OK);
            p->gn[i] = C;
            p->gamma[i] = malloc(C * sizeof(double));
            for (size_t c = 0; c < C; c++) {
                p->gamma[i][c] = g[c];
            }
            free(g);
            free(rm);
            free(rv);
        } else {
            assert_int_equal(prof_train_get_params(t, i, w, p->wn[i], b,
                                                   p->bn[i]),
                             PROF_OK);
        }
        p->w[i] = malloc(p->wn[i] * sizeof(double));
        p->b[i] = p->bn[i] ? malloc(p->bn[i] * sizeof(double)) : NULL;
        for (size_t j = 0; j < p->wn[i]; j++) {
            p->w[i][j] = w[j];
        }
        for (size_t j = 0; j < p->bn[i]; j++) {
            p->b[i][j] = b[j];
        }
        free(w);
        free(b);
    }
}

static void ref_params_free(struct ref_params *p)
{
    for (size_t i = 0; i < p->n; i++) {
        free(p->w[i]);
        free(p->b[i]);
        free(p->gamma[i]);
    }
    free(p->gamma);
    free(p->gn);
    free(p->w);
    free(p->b);
    free(p->wn);
    free(p->bn);
}

/* ---- gradients against finite differences --------------------------------- */

/* Largest |trainer - reference| / (rel (2e-6 max|ref| + 2e-5 |ref|)) over
 * the layer's parameters: <= 1 passes. */
static double grad_ratio(const float *g, const double *ref, size_t n,
                         double rel)
{
    double mx = 0, worst = 0;
    for (size_t j = 0; j < n; j++) {
        mx = fabs(ref[j]) > mx ? fabs(ref[j]) : mx;
    }
    for (size_t j = 0; j < n; j++) {
        const double tol = rel * (2e-6 * mx + 2e-5 * fabs(ref[j])) + 1e-12;
        const double r = fabs((double)g[j] - ref[j]) / tol;
        worst = r > worst ? r : worst;
    }
    return worst;
}

/* One step of batch 4 on random data; every parameter's gradient against
 * central differences of the double loss. rel widens the tolerance for
 * 16-bit storage. wrong_label != 0 makes the reference use a different
 * label for sample 0, which must be caught (returns the worst ratio). */
static double check_grads(const char *text, enum memest_precision prec,
                          double rel, int wrong_label)
{
    const size_t B = 4;
    memest_model *m = model(text);
    struct prof_train_opts o;
    prof_train_opts_init(&o);
    o.batch = B;
    o.precision = prec;
    o.alpha = 1e-3;
    o.seed = 7;
    prof_train *t = NULL;
    struct prof_diag d;
    if (prof_train_create(m, &o, &t, &d) != PROF_OK) {
        fail_msg("%s: %s", text, d.message);
    }
    const size_t n = prof_train_sample_size(t);
    const struct memest_shape out = memest_model_output_shape(m);
    const size_t classes = (size_t)out.dim[0];
    float *x = malloc(B * n * sizeof *x);
    double *xd = malloc(B * n * sizeof *xd);
    uint8_t y[4];
    rng_state = SEED;
    for (size_t j = 0; j < B * n; j++) {
        x[j] = (float)(2 * rnd() - 1);
        xd[j] = x[j];
    }
    for (size_t b = 0; b < B; b++) {
        y[b] = (uint8_t)(rnd() * (double)classes);
    }
    struct ref_params p;
    ref_params_from(&p, m, t);
    struct prof_train_epoch_result r;
    assert_int_equal(prof_train_epoch(t, x, y, B, NULL, NULL, &r), PROF_OK);
    assert_int_equal(r.steps, 1);
    /* The trainer's loss of that step is the reference loss. */
    const double L0 = ref_loss(m, &p, xd, y, B);
    if (!wrong_label) {
        const double ltol = prec == MEMEST_FP32 ? 1e-5 : 0.05;
        if (!(fabs(r.loss - L0) <= ltol * (1 + fabs(L0)))) {
            fail_msg("%s: loss %.9g, reference %.9g", text, r.loss, L0);
        }
    }
    uint8_t yr[4];
    memcpy(yr, y, sizeof yr);
    if (wrong_label) {
        yr[0] = (uint8_t)((y[0] + 1) % classes);
    }
    const double h = 1e-5;
    double worst = 0;
    size_t checked = 0;
    for (size_t i = 0; i < p.n; i++) {
        if (!p.wn[i]) {
            continue;
        }
        const size_t gn = p.gn[i], tot = p.wn[i] + p.bn[i] + gn;
        float *g = malloc(tot * sizeof *g);
        double *fd = malloc(tot * sizeof *fd);
        assert_int_equal(prof_train_get_grads(t, i, g, p.wn[i], g + p.wn[i],
                                              p.bn[i]),
                         PROF_OK);
        if (gn) {
            float *gb = malloc(gn * sizeof *gb);
            assert_int_equal(prof_train_get_batchnorm_grads(
                                 t, i, g + p.wn[i] + p.bn[i], gb, gn),
                             PROF_OK);
            /* beta's gradient is the layer's bias's */
            assert_memory_equal(gb, g + p.wn[i], gn * sizeof *gb);
            free(gb);
        }
        for (size_t j = 0; j < tot; j++) {
            double *v = j < p.wn[i]                ? &p.w[i][j]
                        : j < p.wn[i] + p.bn[i]    ? &p.b[i][j - p.wn[i]]
                                                   : &p.gamma[i][j - p.wn[i] -
                                                                 p.bn[i]];
            const double keep = *v;
            *v = keep + h;
            const double lp = ref_loss(m, &p, xd, yr, B);
            *v = keep - h;
            const double lm = ref_loss(m, &p, xd, yr, B);
            *v = keep;
            fd[j] = (lp - lm) / (2 * h);
        }
        double rw = grad_ratio(g, fd, p.wn[i], rel);
        double rb = p.bn[i] ? grad_ratio(g + p.wn[i], fd + p.wn[i], p.bn[i],
                                         rel)
                            : 0;
        if (gn) { /* gamma with beta (the bias), on their largest */
            rb = grad_ratio(g + p.wn[i], fd + p.wn[i], p.bn[i] + gn, rel);
        }
        if (!wrong_label && (rw > 1 || rb > 1)) {
            const struct memest_layer *L = memest_model_layer(m, i);
            fail_msg("%s (%s): layer %s gradient off: %.3g x the tolerance "
                     "(weights), %.3g (bias)",
                     text, memest_precision_name(prec), L->name, rw, rb);
        }
        worst = rw > worst ? rw : worst;
        worst = rb > worst ? rb : worst;
        checked += tot;
        free(g);
        free(fd);
    }
    assert_true(checked > 0);
    if (getenv("TRAIN_TEST_VERBOSE")) {
        fprintf(stderr, "%s: worst %.3g (%zu parameters)\n", memest_precision_name(prec), worst, checked);
    }
    ref_params_free(&p);
    free(x);
    free(xd);
    prof_train_destroy(t);
    memest_model_destroy(m);
    return worst;
}

/* Every fused activation after dense, softmax-xent at the end. */
static const char *mlp_fused = "input 6\n"
                               "dense 5 act=relu\n"
                               "dense 5 act=gelu\n"
                               "dense 4 act=sigmoid\n"
                               "dense 4 act=tanh\n"
                               "dense 3 act=softmax\n";
/* Standalone activation layers, and a standalone softmax at the end. */
static const char *mlp_standalone = "input 5\n"
                                    "dense 6\n"
                                    "relu\n"
                                    "dense 5\n"
                                    "gelu\n"
                                    "dense 5 bias=no\n"
                                    "sigmoid\n"
                                    "dense 4\n"
                                    "tanh\n"
                                    "dense 3\n"
                                    "softmax\n";
/* conv2d with stride, padding and groups; max and average pooling (with
 * stride 1 overlap, padding); flatten. */
static const char *cnn_a = "input 4x7x7\n"
                           "conv2d 6 k=3 s=2 p=1 g=2 act=tanh\n"
                           "maxpool k=2 s=1\n"
                           "conv2d 4 k=2 p=1 act=gelu\n"
                           "avgpool k=3 s=2 p=1\n"
                           "flatten\n"
                           "dense 3 act=softmax\n";
/* relu and sigmoid after conv2d, a depthwise conv2d without bias, an
 * overlapping max pool with padding. */
static const char *cnn_b = "input 2x6x6\n"
                           "conv2d 4 k=3 act=relu\n"
                           "conv2d 4 k=3 g=4 p=1 bias=no act=sigmoid\n"
                           "maxpool k=3 s=2 p=1\n"
                           "flatten\n"
                           "dense 4\n"
                           "tanh\n"
                           "dense 3 act=softmax\n";

/* Rectangular pooling windows with two strides, padding on some sides
 * only, an average counting only the cells inside the input. */
static const char *cnn_c = "input 2x7x6\n"
                           "conv2d 3 k=3 p=1 act=tanh\n"
                           "avgpool k=3x2 s=2x1 p=1,0,1,1 count_pad=no\n"
                           "maxpool k=2x3 s=1x2 p=0,1,1,1\n"
                           "flatten\n"
                           "dense 3 act=softmax\n";

/* Rectangular convolutions with a stride per axis and padding on some
 * sides only (DS-CNN's first layer, shrunk), grouped too: the trainer
 * lowers them through libkernels' im2col and col2im. */
static const char *cnn_d = "input 2x11x6\n"
                           "conv2d 4 k=5x2 s=2x1 p=2,0,2,1 act=tanh\n"
                           "conv2d 4 k=1x3 s=1x2 p=0,1,0,1 g=2 act=relu\n"
                           "flatten\n"
                           "dense 3 act=softmax\n";

/* relu6 fused after conv2d and standing alone, identity and dropout
 * (identities: the model has no dropout rate and the trainer drops
 * nothing). relu6's derivative is taken from its stored output, 0 < y <
 * 6: in bf16 an output within 2^-8 relative below 6 rounds to 6 and loses
 * its gradient (as in PyTorch, whose derivative reads the bf16 input),
 * where the double reference keeps it. With relu6 on the dense layer too,
 * that layer's bf16 gradients came out 2.6 times the tolerance, which
 * this rounding explains (relu there passes), so it has relu. */
static const char *cnn_e = "input 2x6x5\n"
                           "conv2d 4 k=3 p=1 act=relu6\n"
                           "dropout\n"
                           "maxpool k=2\n"
                           "identity\n"
                           "flatten\n"
                           "dense 6 act=relu\n"
                           "dense 5\n"
                           "relu6\n"
                           "dense 3 act=softmax\n";

/* The mobile activations: hardsigmoid, softplus, leakyrelu, elu and clip
 * fused (their derivatives from the stored output; the fused clip's
 * bounds are values of fp16 and bf16), silu, hardswish and clip
 * standalone (from the input), each parameter away from its default. */
static const char *cnn_f = "input 2x6x5\n"
                           "conv2d 4 k=3 p=1 act=hardsigmoid alpha=0.3 "
                           "beta=0.45\n"
                           "silu\n"
                           "conv2d 4 k=3 p=1 act=leakyrelu alpha=0.2\n"
                           "hardswish\n"
                           "conv2d 4 k=1 act=elu alpha=0.8\n"
                           "flatten\n"
                           "dense 8 act=softplus\n"
                           "dense 6 act=clip min=-0.25 max=0.875\n"
                           "leakyrelu alpha=0.05\n"
                           "clip min=-0.3 max=0.3\n"
                           "dense 3 act=softmax\n";

/* Data movement: a channel shuffle (its gradient moves back by the
 * inverse permutation, so a swapped direction shows with three groups of
 * two) and slices along c, w, h and a vector's features (the gradient
 * outside the kept range is 0). */
static const char *cnn_g = "input 2x5x4\n"
                           "conv2d 6 k=3 p=1 act=tanh\n"
                           "shuffle g=3\n"
                           "slice axis=c begin=1 end=5\n"
                           "slice axis=w begin=0 end=3\n"
                           "slice axis=h begin=1 end=4\n"
                           "reshape shape=3x12\n"
                           "flatten\n"
                           "slice axis=c begin=2 end=30\n"
                           "dense 3 act=softmax\n";

/* Graphs: a residual block (c0 read by c1 and the add: its gradient
 * gathers two shares, one through the staging buffer) ending in global
 * average pooling, with a batch norm of its own over channels; */
static const char *graph_res = "input 2x5x5\n"
                               "conv2d 4 k=3 p=1 act=relu name=c0\n"
                               "conv2d 4 k=3 p=1 act=tanh name=c1\n"
                               "batchnorm act=relu name=bn1\n"
                               "add in=c0,bn1 act=relu name=res\n"
                               "globalavgpool\n"
                               "flatten\n"
                               "dense 3 act=softmax\n";
/* a concat of two branches on feature vectors, a batch norm over the
 * features read by two layers, an add of three inputs one of which is
 * read twice; */
static const char *graph_cat = "input 6\n"
                               "dense 5 act=relu name=a\n"
                               "dense 4 act=sigmoid name=b\n"
                               "batchnorm name=nb\n"
                               "concat in=a,nb name=cat\n"
                               "dense 4 act=tanh name=d\n"
                               "add in=d,nb,nb name=sum\n"
                               "dense 3 act=softmax\n";
/* a concat along the rows of two feature maps, a batch norm with a fused
 * elu, global average pooling of a strided conv. */
static const char *graph_rows = "input 2x4x4\n"
                                "conv2d 3 k=3 p=1 act=relu name=c0\n"
                                "conv2d 3 k=3 p=1 act=relu name=c1\n"
                                "batchnorm act=elu name=bc\n"
                                "concat in=c0,bc axis=h name=rows\n"
                                "conv2d 2 k=3 s=2 name=c2\n"
                                "globalavgpool\n"
                                "flatten\n"
                                "dense 3 act=softmax\n";
/* Batch norms folded into the layer they read (a conv2d or dense without
 * activation, read by nothing else), which the trainer trains apart: a
 * residual block of conv-bn(-relu), a depthwise conv-bn-gelu (its
 * pre-activation kept), and a dense-bn whose softmax is the loss's. The
 * add's act is tanh: with relu, one of its inputs 5e-6 from 0 puts a
 * kink within the finite difference's step. */
static const char *graph_fold = "input 2x5x5\n"
                                "conv2d 4 k=3 p=1 bias=no name=c0\n"
                                "batchnorm act=relu name=b0\n"
                                "conv2d 4 k=3 p=1 bias=no name=c1\n"
                                "batchnorm name=b1\n"
                                "add in=b0,b1 act=tanh name=res\n"
                                "conv2d 4 k=3 g=4 p=1 name=dw\n"
                                "batchnorm act=gelu eps=1e-3 name=bdw\n"
                                "globalavgpool\n"
                                "flatten\n"
                                "dense 3 name=fc\n"
                                "batchnorm act=softmax name=bfc\n";

/* A DS-CNN-like chain of batch norms folded into convs (a depthwise one
 * with gelu), which mixed precision trains too. */
static const char *chain_fold = "input 2x5x5\n"
                                "conv2d 3 k=3 p=1 bias=no name=c0\n"
                                "batchnorm act=relu name=b0\n"
                                "conv2d 3 k=3 g=3 p=1 name=dw\n"
                                "batchnorm act=gelu name=bdw\n"
                                "conv2d 4 k=1 bias=no name=pw\n"
                                "batchnorm act=tanh name=bpw\n"
                                "globalavgpool\n"
                                "flatten\n"
                                "dense 3 act=softmax\n";

/* Adds that broadcast: a feature map and its channels' means (either
 * order: the smaller operand's gradient sums over the positions), and a
 * constant. */
static const char *graph_bcast = "input 2x4x4\n"
                                 "conv2d 4 k=3 p=1 act=tanh name=c\n"
                                 "globalavgpool name=g\n"
                                 "add in=c,g act=sigmoid name=s1\n"
                                 "add in=g,s1 name=s2\n"
                                 "add in=s2 scalar=0.5 act=tanh name=s3\n"
                                 "flatten\n"
                                 "dense 3 act=softmax\n";

/* A chain with a standalone batch norm and global average pooling, which
 * mixed precision trains too. */
static const char *chain_bn = "input 2x5x5\n"
                              "conv2d 3 k=3 act=relu\n"
                              "batchnorm act=tanh name=nb\n"
                              "globalavgpool\n"
                              "flatten\n"
                              "dense 3 act=softmax\n";

/* A keyword transformer's per-position layers on 5 steps of 6 features:
 * dense over the features, class token, position embedding, layernorm
 * (with and without beta, over the features and over both axes), a
 * log-softmax over the steps, a residual add; and layernorm on a vector.
 * The gradients of gamma, beta, the token and the embedding against
 * finite differences; the layers' input gradients reach the first dense's
 * weights through them. */
static const char *const seq_a =
    "input 5x6\n"
    "dense 8 act=tanh\n"
    "clstoken\n"
    "posembed name=p\n"
    "layernorm name=ln\n"
    "dense 8 act=relu\n"
    "add in=p,dense2\n"
    "logsoftmax axis=0\n"
    "layernorm bias=no axis=0 eps=1e-3\n"
    "dense 4 act=sigmoid\n"
    "flatten\n"
    "dense 3 act=softmax\n";
/* the same as a chain, for mixed precision (which trains chains only) */
static const char *const seq_c =
    "input 5x6\n"
    "dense 8 act=tanh\n"
    "clstoken\n"
    "posembed\n"
    "layernorm\n"
    "dense 8 act=relu\n"
    "logsoftmax axis=0\n"
    "layernorm bias=no axis=0 eps=1e-3\n"
    "dense 4 act=sigmoid\n"
    "flatten\n"
    "dense 3 act=softmax\n";
static const char *const seq_b =
    "input 7\n"
    "layernorm\n"
    "dense 5 act=tanh\n"
    "layernorm bias=no\n"
    "dense 3 act=softmax\n";

/* The erf form of GELU (nn.GELU(), the keyword transformers' MLP), fused
 * after a dense over T x D (the trainer keeps its pre-activation), and
 * standalone after a conv2d. */
static const char *const chain_gelu_erf =
    "input 4x6\n"
    "dense 8 act=gelu_erf\n"
    "layernorm\n"
    "dense 5 act=gelu_erf\n"
    "flatten\n"
    "dense 3 act=softmax\n";
static const char *const cnn_gelu_erf =
    "input 2x5x5\n"
    "conv2d 4 k=3 p=1 act=gelu_erf\n"
    "conv2d 3 k=3\n"
    "gelu_erf\n"
    "flatten\n"
    "dense 3 act=softmax\n";

static void test_grads_gelu_erf(void **state)
{
    (void)state;
    check_grads(chain_gelu_erf, MEMEST_FP32, 1, 0);
    check_grads(cnn_gelu_erf, MEMEST_FP32, 1, 0);
    check_grads(chain_gelu_erf, MEMEST_FP16, 2000, 0);
    check_grads(chain_gelu_erf, MEMEST_BF16, 15000, 0);
    assert_true(check_grads(chain_gelu_erf, MEMEST_FP32, 1, 1) > 10);
}

static void test_grads_sequence(void **state)
{
    (void)state;
    check_grads(seq_a, MEMEST_FP32, 1, 0);
    check_grads(seq_b, MEMEST_FP32, 1, 0);
    check_grads(seq_c, MEMEST_FP32, 1, 0);
    check_grads(seq_c, MEMEST_FP16, 2000, 0);
    check_grads(seq_c, MEMEST_BF16, 15000, 0);
    /* the check catches a wrong gradient */
    assert_true(check_grads(seq_a, MEMEST_FP32, 1, 1) > 10);
}

static void test_grads_graph(void **state)
{
    (void)state;
    check_grads(graph_res, MEMEST_FP32, 1, 0);
    /* a batch norm over 4 values (the batch) cancels: its input's
     * gradient, n g - sum g - xhat sum(g xhat), is a difference of terms
     * up to n times larger than itself, so the layer before it carries
     * a few times the float error of a chain (measured: 1.2 x the chain
     * tolerance on one bias) */
    check_grads(graph_cat, MEMEST_FP32, 4, 0);
    check_grads(graph_rows, MEMEST_FP32, 1, 0);
    /* bfc normalises over the batch of 4: the cancellation above */
    check_grads(graph_fold, MEMEST_FP32, 4, 0);
    check_grads(chain_bn, MEMEST_FP32, 1, 0);
    check_grads(graph_bcast, MEMEST_FP32, 1, 0);
    check_grads(chain_bn, MEMEST_FP16, 2000, 0);
    check_grads(chain_bn, MEMEST_BF16, 15000, 0);
    check_grads(chain_fold, MEMEST_FP32, 1, 0);
    check_grads(chain_fold, MEMEST_FP16, 2000, 0);
    check_grads(chain_fold, MEMEST_BF16, 15000, 0);
    /* and the comparison catches a wrong loss on them */
    assert_true(check_grads(graph_res, MEMEST_FP32, 1, 1) > 10);
}

/* Recurrent layers (BPTT): every parameter of each against finite
 * differences; the first layer's gradients pass through the second's
 * input gradient, so that one is checked too. Forward, reverse and both
 * directions, every step's output and the last one, a gru with and
 * without linear_before_reset, with and without biases. */
static const char *rnn_a = "input 5x3\n"
                           "lstm 4 name=l0\n"
                           "gru 3 dir=bidirectional seq=no lbr=no\n"
                           "dense 3 act=softmax\n";
static const char *rnn_b = "input 4x3\n"
                           "gru 4 dir=reverse lbr=yes\n"
                           "lstm 3 dir=bidirectional bias=no\n"
                           "gru 3 dir=forward seq=no lbr=no bias=no\n"
                           "dense 3 act=softmax\n";
static const char *rnn_c = "input 4x2\n"
                           "lstm 3 dir=reverse seq=no\n"
                           "dense 3 act=softmax\n";

static void test_grads_rnn(void **state)
{
    (void)state;
    check_grads(rnn_a, MEMEST_FP32, 1, 0);
    check_grads(rnn_b, MEMEST_FP32, 1, 0);
    check_grads(rnn_c, MEMEST_FP32, 1, 0);
    assert_true(check_grads(rnn_a, MEMEST_FP32, 1, 1) > 10);
}

/* The running statistics through the trainer against PyTorch's
 * (tests/data/batchnorm-torch.txt): a batch norm on the model's input,
 * one step on x (an epoch of one batch: the shuffle does not change a
 * batch's statistics), one on x2. Then evaluation runs on the running
 * statistics: its loss is that of an executor given the trainer's folded
 * parameters. */
static void test_batchnorm_running(void **state)
{
    (void)state;
    char *file = bn_fixture_read();
    assert_non_null(file);
    const char *names[] = {"bn2d", "bn1d"};
    const char *texts[] = {"input 3x2x3\nbatchnorm name=bn\nflatten\n"
                           "dense 2 act=softmax\n",
                           "input 4\nbatchnorm eps=1e-3 name=bn\n"
                           "dense 2 act=softmax\n"};
    for (size_t k = 0; k < 2; k++) {
        struct bn_case c;
        assert_true(bn_fixture_case(file, names[k], &c));
        const size_t C = c.channels, n = c.batch * C * c.hw;
        float *x = malloc(n * sizeof *x), *x2 = malloc(n * sizeof *x2);
        float run[8], ref[8], w[4], b[4], out[2 * 5];
        assert_true(bn_fixture_values(&c, "x", x, n));
        assert_true(bn_fixture_values(&c, "x2", x2, n));
        uint8_t y[5] = {0, 1, 1, 0, 1};
        memest_model *m = model(texts[k]);
        struct prof_train_opts o;
        prof_train_opts_init(&o);
        o.batch = c.batch;
        prof_train *t = NULL;
        assert_int_equal(prof_train_create(m, &o, &t, NULL), PROF_OK);
        /* a fresh batch norm: gamma 1, beta 0, mean 0, variance 1 */
        assert_int_equal(prof_train_get_batchnorm(t, 0, w, b, run, run + C,
                                                  C),
                         PROF_OK);
        for (size_t i = 0; i < C; i++) {
            assert_true(w[i] == 1.0f && b[i] == 0.0f && run[i] == 0.0f &&
                        run[C + i] == 1.0f);
        }
        struct prof_train_epoch_result r;
        const char *step[2] = {"run1", "run2"};
        for (int e = 0; e < 2; e++) {
            char key[32];
            assert_int_equal(prof_train_epoch(t, e ? x2 : x, y, c.batch, NULL,
                                              NULL, &r),
                             PROF_OK);
            assert_int_equal(prof_train_get_batchnorm(t, 0, w, b, run,
                                                      run + C, C),
                             PROF_OK);
            snprintf(key, sizeof key, "%s_mean", step[e]);
            assert_true(bn_fixture_values(&c, key, ref, C));
            snprintf(key, sizeof key, "%s_var", step[e]);
            assert_true(bn_fixture_values(&c, key, ref + C, C));
            for (size_t i = 0; i < 2 * C; i++) {
                if (!(fabs(run[i] - ref[i]) <= 4e-6 * (1 + fabs(ref[i])))) {
                    fail_msg("%s %s[%zu]: %.9g, PyTorch %.9g", names[k],
                             step[e], i, (double)run[i], (double)ref[i]);
                }
            }
        }
        /* evaluation: the executor on the folded parameters */
        double loss;
        assert_int_equal(prof_train_evaluate(t, x, y, c.batch, NULL, &loss),
                         PROF_OK);
        struct prof_exec_opts eo;
        prof_exec_opts_init(&eo);
        eo.batch = c.batch;
        prof_exec *ex = NULL;
        assert_int_equal(prof_exec_create(m, &eo, &ex, NULL), PROF_OK);
        for (size_t l = 0; l < memest_model_layer_count(m); l++) {
            const struct memest_layer *L = memest_model_layer(m, l);
            const size_t wn = (size_t)L->weight_count,
                         bn = (size_t)L->bias_count;
            if (!wn) {
                continue;
            }
            float *pw = malloc((wn + bn) * sizeof *pw);
            assert_int_equal(prof_train_get_params(t, l, pw, wn, pw + wn, bn),
                             PROF_OK);
            assert_int_equal(prof_exec_set_params(ex, l, pw, wn, pw + wn, bn),
                             PROF_OK);
            free(pw);
        }
        assert_int_equal(prof_exec_run(ex, x, n, out, 2 * c.batch), PROF_OK);
        double want = 0;
        for (size_t s = 0; s < c.batch; s++) {
            /* the executor's softmax probabilities */
            want -= log(out[2 * s + y[s]]);
        }
        want /= (double)c.batch;
        if (!(fabs(loss - want) <= 1e-5 * (1 + fabs(want)))) {
            fail_msg("%s: evaluation loss %.9g, executor %.9g", names[k],
                     loss, want);
        }
        prof_exec_destroy(ex);
        prof_train_destroy(t);
        memest_model_destroy(m);
        free(x);
        free(x2);
    }
    free(file);
}

static void test_grads_fp32(void **state)
{
    (void)state;
    check_grads(mlp_fused, MEMEST_FP32, 1, 0);
    check_grads(mlp_standalone, MEMEST_FP32, 1, 0);
    check_grads(cnn_a, MEMEST_FP32, 1, 0);
    check_grads(cnn_b, MEMEST_FP32, 1, 0);
    check_grads(cnn_c, MEMEST_FP32, 1, 0);
    check_grads(cnn_d, MEMEST_FP32, 1, 0);
    check_grads(cnn_e, MEMEST_FP32, 1, 0);
    check_grads(cnn_f, MEMEST_FP32, 1, 0);
    check_grads(cnn_g, MEMEST_FP32, 1, 0);
}

/* 16-bit storage: the same gradients within 8 unit roundoffs of the
 * format, 4e-3 (fp16) and 3e-2 (bf16) of the largest gradient. */
static void test_grads_mixed(void **state)
{
    (void)state;
    const char *models[] = {mlp_fused, mlp_standalone, cnn_a, cnn_b,
                            cnn_c,     cnn_d,          cnn_e, cnn_f,
                            cnn_g};
    for (size_t i = 0; i < sizeof models / sizeof models[0]; i++) {
        check_grads(models[i], MEMEST_FP16, 2000, 0);
        check_grads(models[i], MEMEST_BF16, 15000, 0);
    }
}

/* The comparison catches a gradient of the wrong loss. */
static void test_grads_detect_error(void **state)
{
    (void)state;
    assert_true(check_grads(mlp_fused, MEMEST_FP32, 1, 1) > 10);
    assert_true(check_grads(cnn_a, MEMEST_FP32, 1, 1) > 10);
}

/* ---- optimisers against hand-computed steps ------------------------------- */

/* "input 2, dense 2 act=softmax", one sample x = (1, 2), label 0. With
 * z = W x + b, p = softmax(z), the gradient is dz = p - e0, dW = dz x^T,
 * db = dz: computed here in double, then the optimiser's formulas. */
static void hand_grads(const double w[4], const double b[2], double gw[4],
                       double gb[2])
{
    const double x[2] = {1, 2};
    double z[2], p[2];
    for (int o = 0; o < 2; o++) {
        z[o] = b[o] + w[o * 2] * x[0] + w[o * 2 + 1] * x[1];
    }
    const double mx = z[0] > z[1] ? z[0] : z[1];
    const double s = exp(z[0] - mx) + exp(z[1] - mx);
    p[0] = exp(z[0] - mx) / s;
    p[1] = exp(z[1] - mx) / s;
    const double dz[2] = {p[0] - 1, p[1]};
    for (int o = 0; o < 2; o++) {
        gb[o] = dz[o];
        gw[o * 2] = dz[o] * x[0];
        gw[o * 2 + 1] = dz[o] * x[1];
    }
}

static void run_optimizer(enum memest_optimizer opt)
{
    memest_model *m = model("input 2\ndense 2 act=softmax\n");
    struct prof_train_opts o;
    prof_train_opts_init(&o);
    o.batch = 1;
    o.optimizer = opt;
    o.alpha = 0.1;
    o.momentum = 0.9;
    prof_train *t = NULL;
    assert_int_equal(prof_train_create(m, &o, &t, NULL), PROF_OK);
    const float w0[4] = {0.5f, -0.25f, 0.125f, 0.75f}, b0[2] = {0.1f, -0.2f};
    assert_int_equal(prof_train_set_params(t, 0, w0, 4, b0, 2), PROF_OK);
    double w[6] = {0.5, -0.25, 0.125, 0.75, 0.1, -0.2}; /* w then b */
    double s1[6] = {0}, s2[6] = {0};
    const float x[2] = {1, 2};
    const uint8_t y = 0;
    for (int step = 1; step <= 3; step++) {
        double g[6];
        hand_grads(w, w + 4, g, g + 4);
        for (int j = 0; j < 6; j++) {
            if (opt == MEMEST_OPT_MOMENTUM) {
                s1[j] = 0.9 * s1[j] + g[j];
                w[j] -= 0.1 * s1[j];
            } else {
                s1[j] = 0.9 * s1[j] + 0.1 * g[j];
                s2[j] = 0.999 * s2[j] + 0.001 * g[j] * g[j];
                const double mh = s1[j] / (1 - pow(0.9, step));
                const double vh = s2[j] / (1 - pow(0.999, step));
                w[j] -= 0.1 * mh / (sqrt(vh) + 1e-8);
            }
        }
        struct prof_train_epoch_result r;
        assert_int_equal(prof_train_epoch(t, x, &y, 1, NULL, NULL, &r),
                         PROF_OK);
        float wt[4], bt[2];
        assert_int_equal(prof_train_get_params(t, 0, wt, 4, bt, 2), PROF_OK);
        for (int j = 0; j < 6; j++) {
            const double got = j < 4 ? wt[j] : bt[j - 4];
            if (!(fabs(got - w[j]) <= 2e-6)) {
                fail_msg("%s step %d parameter %d: %.9g, by hand %.9g",
                         memest_optimizer_name(opt), step, j, got, w[j]);
            }
        }
    }
    prof_train_destroy(t);
    memest_model_destroy(m);
}

static void test_momentum_by_hand(void **state)
{
    (void)state;
    run_optimizer(MEMEST_OPT_MOMENTUM);
}

static void test_adam_by_hand(void **state)
{
    (void)state;
    run_optimizer(MEMEST_OPT_ADAM);
}

/* ---- loss scaling ------------------------------------------------------------ */

/* PyTorch's GradScaler test trace (test_grad_scaling_update_scale): scale
 * 4, growth 2, backoff 0.25, interval 2: two finite steps grow it to 8 (the
 * second completes the interval), an overflow backs it off to 2 and skips
 * the step. */
static void test_grad_scaler_trace(void **state)
{
    (void)state;
    struct kern_loss_scaler s;
    kern_loss_scaler_init(&s);
    assert_int_equal(kern_loss_scaler_config(&s, 4.0f, 1.0f, 65536.0f, 2.0f,
                                             0.25f, 2),
                     KERN_OK);
    assert_true(kern_loss_scaler_update(&s, true));
    assert_true(s.scale == 4.0f && s.good_steps == 1);
    assert_true(kern_loss_scaler_update(&s, true));
    assert_true(s.scale == 8.0f && s.good_steps == 0);
    assert_false(kern_loss_scaler_update(&s, false));
    assert_true(s.scale == 2.0f && s.good_steps == 0);
    assert_int_equal(s.skipped_steps, 1);
}

/* Through the trainer: inputs of 4000 and the loss scaled by 65536 make
 * the fp16 weight gradients overflow (|dW| reaches about 4000 x 65536 / 2),
 * so the first steps are skipped with the weights unchanged and the scale
 * halved each time, until the gradients fit and a step applies. */
static void test_fp16_overflow_skips(void **state)
{
    (void)state;
    memest_model *m = model("input 3\ndense 2 act=softmax\n");
    struct prof_train_opts o;
    prof_train_opts_init(&o);
    o.batch = 2;
    o.precision = MEMEST_FP16;
    o.loss_scale = 65536;
    prof_train *t = NULL;
    assert_int_equal(prof_train_create(m, &o, &t, NULL), PROF_OK);
    const float x[6] = {4000, -4000, 4000, -4000, 4000, 4000};
    const uint8_t y[2] = {0, 1};
    float w0[6], b0[2], w1[6], b1[2];
    assert_int_equal(prof_train_get_params(t, 0, w0, 6, b0, 2), PROF_OK);
    struct prof_train_epoch_result r;
    assert_int_equal(prof_train_epoch(t, x, y, 2, NULL, NULL, &r), PROF_OK);
    assert_int_equal(r.skipped_steps, 1);
    assert_true(r.loss_scale == 32768.0);
    assert_int_equal(prof_train_get_params(t, 0, w1, 6, b1, 2), PROF_OK);
    assert_memory_equal(w0, w1, sizeof w0);
    assert_memory_equal(b0, b1, sizeof b0);
    const struct prof_train_scale_event *ev;
    assert_int_equal(prof_train_scale_events(t, &ev), 1);
    assert_true(ev[0].step == 1 && ev[0].skipped && ev[0].scale == 32768.0);
    /* keep going until a step applies: each skip halves the scale */
    uint64_t skipped = 1;
    int applied = 0;
    for (int e = 0; e < 20 && !applied; e++) {
        assert_int_equal(prof_train_epoch(t, x, y, 2, NULL, NULL, &r),
                         PROF_OK);
        skipped += r.skipped_steps;
        applied = r.skipped_steps == 0;
    }
    assert_true(applied);
    assert_true(skipped >= 2);
    const size_t n = prof_train_scale_events(t, &ev);
    assert_int_equal(n, skipped);
    for (size_t i = 0; i < n; i++) {
        assert_true(ev[i].skipped);
        assert_int_equal(ev[i].step, i + 1);
        assert_true(ev[i].scale == 65536.0 / pow(2, (double)(i + 1)));
    }
    assert_int_equal(prof_train_get_params(t, 0, w1, 6, b1, 2), PROF_OK);
    assert_true(memcmp(w0, w1, sizeof w0) != 0);
    prof_train_destroy(t);
    memest_model_destroy(m);
}

/* ---- memory ------------------------------------------------------------------ */

/* Attention's operators: a chain (mixed precision trains it) and a
 * graph with a residual add and a matmul of two tensors. */
static const char *chain_attn = "input 6x8\n"
                                "attention heads=2\n"
                                "transpose perm=1,0\n"
                                "flatten\n"
                                "dense 3 act=softmax\n";
static const char *graph_attn = "input 6x8\n"
                                "attention heads=2 name=a\n"
                                "add in=input,a name=r\n"
                                "transpose perm=1,0 name=t\n"
                                "matmul in=t,r\n"
                                "flatten\n"
                                "dense 3 act=softmax\n";

static void test_memory_equals_estimate(void **state)
{
    (void)state;
    const char *models[] = {"mlp:784-64-10", "smallcnn", mlp_fused,
                            mlp_standalone, cnn_a, cnn_b, cnn_c, cnn_d,
                            cnn_e, chain_bn, chain_fold, chain_attn,
                            chain_gelu_erf, cnn_gelu_erf, rnn_a, rnn_b,
                            rnn_c};
    const enum memest_precision precs[] = {MEMEST_FP32, MEMEST_FP16,
                                           MEMEST_BF16};
    const enum memest_optimizer opts[] = {MEMEST_OPT_SGD, MEMEST_OPT_MOMENTUM,
                                          MEMEST_OPT_ADAM};
    const uint64_t batches[] = {1, 32};
    for (size_t i = 0; i < sizeof models / sizeof models[0]; i++) {
        memest_model *m = model(models[i]);
        for (size_t p = 0; p < 3; p++) {
            for (size_t k = 0; k < 3; k++) {
                for (size_t b = 0; b < 2; b++) {
                    struct prof_train_opts o;
                    prof_train_opts_init(&o);
                    o.precision = precs[p];
                    o.optimizer = opts[k];
                    o.batch = batches[b];
                    prof_train *t = NULL;
                    struct prof_diag d;
                    if (prof_train_create(m, &o, &t, &d) != PROF_OK) {
                        fail_msg("%s: %s", models[i], d.message);
                    }
                    struct prof_train_memory mem;
                    struct memest_training e;
                    assert_int_equal(prof_train_memory(t, &mem), PROF_OK);
                    assert_int_equal(
                        precs[p] == MEMEST_FP32
                            ? memest_training_memory(m, batches[b],
                                                     MEMEST_FP32, opts[k], &e)
                            : memest_training_memory_mixed(m, batches[b],
                                                           opts[k], &e),
                        MEMEST_OK);
                    assert_int_equal(mem.parameter_bytes, e.parameter_bytes);
                    assert_int_equal(mem.gradient_bytes, e.gradient_bytes);
                    assert_int_equal(mem.optimizer_state_bytes,
                                     e.optimizer_state_bytes);
                    assert_int_equal(mem.activation_bytes,
                                     e.activation_bytes);
                    assert_int_equal(mem.working_bytes, e.working_bytes);
                    assert_int_equal(mem.total_bytes, e.total_bytes);
                    assert_int_equal(mem.estimate_total_bytes, e.total_bytes);
                    prof_train_destroy(t);
                }
            }
        }
        memest_model_destroy(m);
    }
    /* Graphs (fp32: mixed precision trains chains only), batch 2 and 32:
     * the held gradients, the staging buffer and the batch norms'
     * statistics are libmemest's too. */
    const char *graphs[] = {graph_res, graph_cat,  graph_rows,
                            graph_fold, "resnet8", "ds-cnn", graph_attn};
    for (size_t i = 0; i < sizeof graphs / sizeof graphs[0]; i++) {
        memest_model *g = model(graphs[i]);
        for (size_t k = 0; k < 3; k++) {
            for (uint64_t b = 2; b <= 32; b += 30) {
                struct prof_train_opts o;
                prof_train_opts_init(&o);
                o.optimizer = opts[k];
                o.batch = b;
                prof_train *t = NULL;
                struct prof_diag d;
                if (prof_train_create(g, &o, &t, &d) != PROF_OK) {
                    fail_msg("%s: %s", graphs[i], d.message);
                }
                struct prof_train_memory mem;
                struct memest_training e;
                assert_int_equal(prof_train_memory(t, &mem), PROF_OK);
                assert_int_equal(memest_training_memory(g, b, MEMEST_FP32,
                                                        opts[k], &e),
                                 MEMEST_OK);
                assert_int_equal(mem.working_bytes, e.working_bytes);
                assert_int_equal(mem.total_bytes, e.total_bytes);
                prof_train_destroy(t);
            }
        }
        memest_model_destroy(g);
    }
    /* By hand, graph_res at batch 2: tensors c0, c1, bn1, res of 100
     * elements, gap and flatten of 4, the logits 3. c0 is read by c1 and
     * the add: held (100) and read twice (staging 100); the others' one
     * reader is the next layer: the largest consecutive pair is bn1 and
     * res (200). 400 floats x 2 samples, the labels 4 x 2, c1's columns
     * (4 x 3 x 3 rows, 25 columns) 4 x 900, bn1's statistics 4 x 4 x 4. */
    {
        memest_model *g = model(graph_res);
        struct prof_train_opts o;
        prof_train_opts_init(&o);
        o.batch = 2;
        prof_train *t = NULL;
        assert_int_equal(prof_train_create(g, &o, &t, NULL), PROF_OK);
        struct prof_train_memory mem;
        assert_int_equal(prof_train_memory(t, &mem), PROF_OK);
        assert_int_equal(mem.working_bytes, 4 * 2 * 400 + 4 * 2 + 4 * 900 +
                                                4 * 4 * 4);
        prof_train_destroy(t);
        memest_model_destroy(g);
    }
    /* By hand, mlp:784-64-10 at batch 32, fp32, momentum: parameters and
     * gradients 4 x 50890, velocity 4 x 50890, activations 4 x 32 x
     * (784 + 64 + 10); working: gradients of dense2's input and output
     * 4 x 32 x (64 + 10), labels 4 x 32. */
    memest_model *m = model("mlp:784-64-10");
    struct prof_train_opts o;
    prof_train_opts_init(&o);
    o.optimizer = MEMEST_OPT_MOMENTUM;
    prof_train *t = NULL;
    assert_int_equal(prof_train_create(m, &o, &t, NULL), PROF_OK);
    struct prof_train_memory mem;
    assert_int_equal(prof_train_memory(t, &mem), PROF_OK);
    assert_int_equal(mem.parameter_bytes, 203560);
    assert_int_equal(mem.gradient_bytes, 203560);
    assert_int_equal(mem.optimizer_state_bytes, 203560);
    assert_int_equal(mem.activation_bytes, 4 * 32 * 858);
    assert_int_equal(mem.working_bytes, 4 * 32 * 74 + 4 * 32);
    assert_int_equal(mem.total_bytes, 3 * 203560 + 4 * 32 * 858 + 9600);
    prof_train_destroy(t);
    /* A wrong estimate is refused, a right one passes. */
    struct prof_diag d;
    o.estimate_bytes = mem.total_bytes + 4;
    assert_int_equal(prof_train_create(m, &o, &t, &d), PROF_E_MEMEST);
    assert_null(t);
    assert_non_null(strstr(d.message, "the estimate to check gives"));
    o.estimate_bytes = mem.total_bytes;
    assert_int_equal(prof_train_create(m, &o, &t, &d), PROF_OK);
    prof_train_destroy(t);
    memest_model_destroy(m);
}

/* ---- learning and determinism ----------------------------------------------- */

/* Three Gaussian blobs in 8 dimensions, centres 3 apart, unit spread. */
static void blobs(float *x, uint8_t *y, size_t n, uint64_t seed)
{
    rng_state = seed;
    for (size_t i = 0; i < n; i++) {
        const unsigned c = (unsigned)(rnd() * 3);
        y[i] = (uint8_t)c;
        for (size_t j = 0; j < 8; j++) {
            /* Box-Muller */
            const double u1 = rnd() + 1e-12, u2 = rnd();
            const double g = sqrt(-2 * log(u1)) * cos(2 * PI * u2);
            x[i * 8 + j] = (float)((j % 3 == c ? 3.0 : 0.0) + g);
        }
    }
}

static prof_train *train_blobs(enum memest_precision p,
                               enum memest_optimizer opt, unsigned threads,
                               const memest_model *m, double *test_acc)
{
    enum { N = 2048, NT = 512 };
    static float x[N * 8], xt[NT * 8];
    static uint8_t y[N], yt[NT];
    blobs(x, y, N, 1);
    blobs(xt, yt, NT, 2);
    struct prof_train_opts o;
    prof_train_opts_init(&o);
    o.precision = p;
    o.optimizer = opt;
    o.threads = threads;
    o.alpha = opt == MEMEST_OPT_ADAM ? 0.01 : 0.05;
    prof_train *t = NULL;
    assert_int_equal(prof_train_create(m, &o, &t, NULL), PROF_OK);
    for (int e = 0; e < 3; e++) {
        struct prof_train_epoch_result r;
        assert_int_equal(prof_train_epoch(t, x, y, N, NULL, NULL, &r),
                         PROF_OK);
        assert_int_equal(r.steps, N / 32);
        assert_true(isfinite(r.loss));
    }
    double loss;
    assert_int_equal(prof_train_evaluate(t, xt, yt, NT, test_acc, &loss),
                     PROF_OK);
    return t;
}

static void test_learns_blobs(void **state)
{
    (void)state;
    memest_model *m = model("input 8\ndense 16 act=relu\ndense 3 "
                            "act=softmax\n");
    const enum memest_precision precs[] = {MEMEST_FP32, MEMEST_FP16,
                                           MEMEST_BF16};
    const enum memest_optimizer opts[] = {MEMEST_OPT_SGD, MEMEST_OPT_MOMENTUM,
                                          MEMEST_OPT_ADAM};
    for (size_t p = 0; p < 3; p++) {
        for (size_t k = 0; k < 3; k++) {
            double acc;
            prof_train *t = train_blobs(precs[p], opts[k], 1, m, &acc);
            /* The Bayes rate of these blobs is about 0.98. */
            if (!(acc >= 0.93)) {
                fail_msg("%s %s: test accuracy %.3f",
                         memest_precision_name(precs[p]),
                         memest_optimizer_name(opts[k]), acc);
            }
            prof_train_destroy(t);
        }
    }
    memest_model_destroy(m);
}

static void params_equal(prof_train *a, prof_train *b, size_t layers)
{
    for (size_t i = 0; i < layers; i++) {
        const struct memest_layer *L =
            memest_model_layer(prof_train_model(a), i);
        if (!L->weight_count) {
            continue;
        }
        const size_t wn = (size_t)L->weight_count, bn = (size_t)L->bias_count;
        float *wa = malloc((wn + bn) * sizeof *wa);
        float *wb = malloc((wn + bn) * sizeof *wb);
        assert_int_equal(prof_train_get_params(a, i, wa, wn, wa + wn, bn),
                         PROF_OK);
        assert_int_equal(prof_train_get_params(b, i, wb, wn, wb + wn, bn),
                         PROF_OK);
        assert_memory_equal(wa, wb, (wn + bn) * sizeof *wa);
        free(wa);
        free(wb);
    }
}

static void test_determinism(void **state)
{
    (void)state;
    memest_model *m = model("input 8\ndense 16 act=gelu\ndense 3 "
                            "act=softmax\n");
    const enum memest_precision precs[] = {MEMEST_FP32, MEMEST_FP16};
    for (size_t p = 0; p < 2; p++) {
        double a1, a2, a3;
        prof_train *t1 = train_blobs(precs[p], MEMEST_OPT_ADAM, 1, m, &a1);
        prof_train *t2 = train_blobs(precs[p], MEMEST_OPT_ADAM, 1, m, &a2);
        prof_train *t3 = train_blobs(precs[p], MEMEST_OPT_ADAM, 2, m, &a3);
        params_equal(t1, t2, 2);
        params_equal(t1, t3, 2);
        assert_true(a1 == a2 && a1 == a3);
        prof_train_destroy(t1);
        prof_train_destroy(t2);
        prof_train_destroy(t3);
    }
    kern_set_threads(1);
    /* A different seed gives different weights (the seed is used). */
    struct prof_train_opts o;
    prof_train_opts_init(&o);
    prof_train *a = NULL, *b = NULL;
    assert_int_equal(prof_train_create(m, &o, &a, NULL), PROF_OK);
    o.seed = 43;
    assert_int_equal(prof_train_create(m, &o, &b, NULL), PROF_OK);
    float wa[128], wb[128];
    assert_int_equal(prof_train_get_params(a, 0, wa, 128, NULL, 16), PROF_OK);
    assert_int_equal(prof_train_get_params(b, 0, wb, 128, NULL, 16), PROF_OK);
    assert_true(memcmp(wa, wb, sizeof wa) != 0);
    prof_train_destroy(a);
    prof_train_destroy(b);
    memest_model_destroy(m);
}

/* The initial weights are the executor's for the same seed. */
static void test_executor_init(void **state)
{
    (void)state;
    memest_model *m = model("smallcnn");
    struct prof_train_opts o;
    prof_train_opts_init(&o);
    o.seed = 5;
    prof_train *t = NULL;
    assert_int_equal(prof_train_create(m, &o, &t, NULL), PROF_OK);
    struct prof_exec_opts eo;
    prof_exec_opts_init(&eo);
    eo.seed = 5;
    prof_exec *ex = NULL;
    assert_int_equal(prof_exec_create(m, &eo, &ex, NULL), PROF_OK);
    for (size_t i = 0; i < memest_model_layer_count(m); i++) {
        const struct memest_layer *L = memest_model_layer(m, i);
        if (!L->weight_count) {
            continue;
        }
        const size_t wn = (size_t)L->weight_count, bn = (size_t)L->bias_count;
        float *a = malloc((wn + bn) * sizeof *a), *b = malloc((wn + bn) * 4);
        assert_int_equal(prof_train_get_params(t, i, a, wn, a + wn, bn),
                         PROF_OK);
        assert_int_equal(prof_exec_get_params(ex, i, b, wn, b + wn, bn),
                         PROF_OK);
        assert_memory_equal(a, b, (wn + bn) * sizeof *a);
        free(a);
        free(b);
    }
    prof_exec_destroy(ex);
    prof_train_destroy(t);
    memest_model_destroy(m);
}

/* A model that carries weights starts training from them, exactly. */
static void test_model_weights_start(void **state)
{
    (void)state;
    memest_model *m = model("input 3\ndense 4 act=relu name=h\n"
                            "dense 2 act=softmax name=out\n");
    float hw[12], hb[4], ow[8], ob[2];
    for (int i = 0; i < 12; i++) {
        hw[i] = (float)(i - 6) * 0.125f;
    }
    for (int i = 0; i < 8; i++) {
        ow[i] = (float)(3 - i) * 0.25f;
    }
    for (int i = 0; i < 4; i++) {
        hb[i] = 0.5f * (float)i;
    }
    ob[0] = -1.0f;
    ob[1] = 1.0f;
    const struct memest_tensor ts[] = {
        {"h.weight", 2, {4, 3}, hw}, {"h.bias", 1, {4}, hb},
        {"out.weight", 2, {2, 4}, ow}, {"out.bias", 1, {2}, ob},
    };
    assert_int_equal(memest_model_set_weights(m, ts, 4, NULL), MEMEST_OK);
    prof_train *t = NULL;
    assert_int_equal(prof_train_create(m, NULL, &t, NULL), PROF_OK);
    float w[12], b[4];
    assert_int_equal(prof_train_get_params(t, 0, w, 12, b, 4), PROF_OK);
    assert_memory_equal(w, hw, sizeof hw);
    assert_memory_equal(b, hb, sizeof hb);
    assert_int_equal(prof_train_get_params(t, 1, w, 8, b, 2), PROF_OK);
    assert_memory_equal(w, ow, sizeof ow);
    assert_memory_equal(b, ob, sizeof ob);
    prof_train_destroy(t);
    memest_model_destroy(m);
}

/* ---- bad input ---------------------------------------------------------------- */

static void expect_refused(const char *text, void (*edit)(struct prof_train_opts *),
                           int status, const char *needle)
{
    memest_model *m = model(text);
    struct prof_train_opts o;
    prof_train_opts_init(&o);
    if (edit) {
        edit(&o);
    }
    prof_train *t = (prof_train *)&o;
    struct prof_diag d;
    assert_int_equal(prof_train_create(m, &o, &t, &d), status);
    assert_null(t);
    if (!strstr(d.message, needle)) {
        fail_msg("message \"%s\" lacks \"%s\"", d.message, needle);
    }
    memest_model_destroy(m);
}

static void o_batch0(struct prof_train_opts *o) { o->batch = 0; }
static void o_batch1(struct prof_train_opts *o) { o->batch = 1; }
static void o_int8(struct prof_train_opts *o) { o->precision = MEMEST_INT8; }
static void o_alpha(struct prof_train_opts *o) { o->alpha = NAN; }
static void o_mom(struct prof_train_opts *o) { o->momentum = 1.0; }
static void o_beta(struct prof_train_opts *o) { o->adam_beta2 = -0.1; }
static void o_eps(struct prof_train_opts *o) { o->adam_eps = 0; }
static void o_threads(struct prof_train_opts *o) { o->threads = 0; }
static void o_fp16(struct prof_train_opts *o) { o->precision = MEMEST_FP16; }
static void o_opt(struct prof_train_opts *o)
{
    o->optimizer = (enum memest_optimizer)9;
}
static void o_scale(struct prof_train_opts *o)
{
    o->precision = MEMEST_FP16;
    o->loss_scale = 1e6;
}

static void test_bad_input(void **state)
{
    (void)state;
    const char *mlp = "mlp:4-3-2";
    expect_refused(mlp, o_batch0, PROF_E_RANGE, "batch");
    expect_refused(mlp, o_int8, PROF_E_RANGE, "int8");
    expect_refused(mlp, o_alpha, PROF_E_RANGE, "alpha");
    expect_refused(mlp, o_mom, PROF_E_RANGE, "momentum");
    expect_refused(mlp, o_beta, PROF_E_RANGE, "betas");
    expect_refused(mlp, o_eps, PROF_E_RANGE, "eps");
    expect_refused(mlp, o_threads, PROF_E_RANGE, "threads");
    expect_refused(mlp, o_opt, PROF_E_INVALID, "optimizer");
    expect_refused(mlp, o_scale, PROF_E_RANGE, "loss scale");
    expect_refused("input 4\ndense 3 act=softmax\ndense 2 act=softmax\n",
                   NULL, PROF_E_RANGE, "dense1: softmax");
    expect_refused("input 4\ndense 3 act=relu\ndense 2\n", NULL,
                   PROF_E_RANGE, "dense2: the model must end in softmax");
    expect_refused("input 1x4x4\nconv2d 2 k=3 act=softmax\n", NULL,
                   PROF_E_RANGE, "feature vector");
    /* graph models train in fp32; mixed precision refuses them, naming
     * the layer */
    expect_refused("input 4\ndense 4 act=relu name=a\ndense 4 name=b\n"
                   "add in=a,b name=res\ndense 2 act=softmax\n",
                   o_fp16, PROF_E_UNSUPPORTED, "res: mixed precision (fp16) "
                   "trains chains only");
    expect_refused("input 4\ndense 4 act=relu name=a\ndense 4 name=b\n"
                   "concat in=a,b name=cat\ndense 2 act=softmax\n",
                   o_fp16, PROF_E_UNSUPPORTED, "cat: mixed precision (fp16) "
                   "trains chains only");
    /* the list of what the trainer trains is built from the operators'
     * table: every kind with a backward pass, in the kinds' order */
    expect_refused("input 8x4x4\nconv2d 8 k=1 name=c\nglobalavgpool\n"
                   "mul in=c,gap1 name=se\nflatten\ndense 2 act=softmax\n",
                   NULL, PROF_E_UNSUPPORTED, "se: the trainer has no "
                   "backward pass for mul layers (it trains dense, conv2d, "
                   "maxpool, avgpool, flatten, activation, globalavgpool, "
                   "add, concat, batchnorm, identity, dropout, shuffle, "
                   "slice, reshape, layernorm, clstoken, posembed, "
                   "matmul, transpose, attention, lstm and gru layers)");
    /* one value per channel: no batch statistics (PyTorch refuses too) */
    expect_refused("input 4\ndense 3 act=relu\nbatchnorm name=nb\n"
                   "dense 2 act=softmax\n",
                   o_batch1, PROF_E_RANGE, "nb: a batch norm in training "
                   "needs more than one value per channel");
    /* element-wise arithmetic, with a constant (one input, a chain) or
     * squeeze-excite's broadcast: named */
    expect_refused("input 4\ndense 4 act=relu\nmul scalar=0.5 name=half\n"
                   "dense 2 act=softmax\n",
                   NULL, PROF_E_UNSUPPORTED, "half: the trainer has no "
                   "backward pass for mul");
    expect_refused("input 4\ndense 4 act=relu\ndiv scalar_left=1 name=inv\n"
                   "dense 2 act=softmax\n",
                   NULL, PROF_E_UNSUPPORTED, "inv: the trainer has no "
                   "backward pass for div");
    expect_refused("input 4\ndense 4 act=relu\nsub scalar=1 name=s\n"
                   "dense 2 act=softmax\n",
                   NULL, PROF_E_UNSUPPORTED, "s: the trainer has no "
                   "backward pass for sub");
    expect_refused("input 4 name=a\ninput 3 name=b\nconcat in=a,b\n"
                   "dense 2 act=softmax\n",
                   NULL, PROF_E_UNSUPPORTED, "2 inputs");
    expect_refused("input 4\ndense 3 act=erf name=d\n"
                   "dense 2 act=softmax\n",
                   NULL, PROF_E_UNSUPPORTED, "d: the trainer has no "
                   "backward pass for act=erf");
    /* silu and hardswish fused: their derivative needs the input the
     * trainer does not keep; leakyrelu with a negative slope and elu
     * with alpha <= 0 cannot tell the side of 0 from the output */
    expect_refused("input 4\ndense 3 act=silu name=d\n"
                   "dense 2 act=softmax\n",
                   NULL, PROF_E_UNSUPPORTED, "d: the trainer has no "
                   "backward pass for act=silu fused");
    expect_refused("input 1x4x4\nconv2d 2 k=3 act=hardswish name=c\n"
                   "flatten\ndense 2 act=softmax\n",
                   NULL, PROF_E_UNSUPPORTED, "c: the trainer has no "
                   "backward pass for act=hardswish fused");
    expect_refused("input 4\ndense 3\nleakyrelu alpha=-0.5 name=lr\n"
                   "dense 2 act=softmax\n",
                   NULL, PROF_E_UNSUPPORTED, "lr: the trainer has no "
                   "backward pass for act=leakyrelu");
    expect_refused("input 4\ndense 3 act=clip min=-0.3 max=1 name=cl\n"
                   "dense 2 act=softmax\n",
                   o_fp16, PROF_E_UNSUPPORTED, "cl: act=clip fused with "
                   "bounds -0.3 and 1, which fp16 does not hold");
    expect_refused("input 4\ndense 3 act=elu alpha=0 name=e\n"
                   "dense 2 act=softmax\n",
                   NULL, PROF_E_UNSUPPORTED, "e: the trainer has no "
                   "backward pass for act=elu fused");
    expect_refused("input 4\ndense 3 act=logsoftmax name=d\n"
                   "dense 2 act=softmax\n",
                   NULL, PROF_E_UNSUPPORTED, "d: the trainer has no "
                   "backward pass for act=logsoftmax fused");


    memest_model *m = model(mlp);
    prof_train *t = NULL;
    assert_int_equal(prof_train_create(NULL, NULL, &t, NULL), PROF_E_INVALID);
    assert_int_equal(prof_train_create(m, NULL, NULL, NULL), PROF_E_INVALID);
    assert_int_equal(prof_train_create(m, NULL, &t, NULL), PROF_OK);
    float x[4 * 40] = {0};
    uint8_t y[40] = {0};
    struct prof_train_epoch_result r;
    /* fewer samples than a batch (32) */
    assert_int_equal(prof_train_epoch(t, x, y, 31, NULL, NULL, &r),
                     PROF_E_RANGE);
    y[3] = 2; /* classes are 0 and 1 */
    assert_int_equal(prof_train_epoch(t, x, y, 40, NULL, NULL, &r),
                     PROF_E_RANGE);
    assert_int_equal(prof_train_evaluate(t, x, y, 40, NULL, NULL),
                     PROF_E_RANGE);
    assert_int_equal(prof_train_evaluate(t, x, y, 0, NULL, NULL),
                     PROF_E_INVALID);
    float w[12];
    assert_int_equal(prof_train_get_params(t, 0, w, 11, NULL, 3),
                     PROF_E_RANGE);
    assert_int_equal(prof_train_get_grads(t, 0, w, 12, NULL, 3), PROF_OK);
    for (int i = 0; i < 12; i++) {
        assert_true(w[i] == 0.0f); /* no step yet */
    }
    prof_train_destroy(t);
    prof_train_destroy(NULL);
    memest_model_destroy(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_grads_graph),
        cmocka_unit_test(test_grads_sequence),
        cmocka_unit_test(test_grads_gelu_erf),
        cmocka_unit_test(test_grads_rnn),
        cmocka_unit_test(test_batchnorm_running),
        cmocka_unit_test(test_grads_fp32),
        cmocka_unit_test(test_grads_mixed),
        cmocka_unit_test(test_grads_detect_error),
        cmocka_unit_test(test_momentum_by_hand),
        cmocka_unit_test(test_adam_by_hand),
        cmocka_unit_test(test_grad_scaler_trace),
        cmocka_unit_test(test_fp16_overflow_skips),
        cmocka_unit_test(test_memory_equals_estimate),
        cmocka_unit_test(test_learns_blobs),
        cmocka_unit_test(test_determinism),
        cmocka_unit_test(test_executor_init),
        cmocka_unit_test(test_model_weights_start),
        cmocka_unit_test(test_bad_input),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
