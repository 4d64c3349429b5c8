/* Recurrent layers: lstm (this file's vtable) and gru (ops/gru.c, which
 * uses the engine here), PyTorch's nn.LSTM / nn.GRU, one layer, batch
 * first (see libmemest's ops/lstm.c and ops/gru.c for the equations).
 *
 * For each direction, the input-to-gates product of every step and every
 * sample is one GEMM, X [N*T x D] . W_ih^T -> gates [N*T x G*H] (with the
 * biases added); then the recurrence runs step by step: the hidden
 * product h [N x H] . W_hh^T added to (lstm) or beside (gru) the step's
 * gates, and the gate nonlinearities (kern_lstm_cell_f32,
 * kern_gru_cell_f32). The weights are the master's API layout ([G*H][D],
 * [G*H][H] per direction, forward first), which kern_sgemm reads
 * transposed without a copy. Every precision runs this float form: the
 * 16-bit and int8 paths are the generic ones (widen or dequantise the
 * input, run, narrow or quantise the output).
 *
 * The trainer's backward pass (BPTT) runs, one sample at a time, the
 * forward again keeping each step's gates and states in the trainer's
 * scratch, then goes back through the steps; the parameters' gradients
 * are whole-sequence GEMMs accumulated over the samples. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "edgefit/kernels.h"
#include "edgefit/profile.h"
#include "exec/ops.h"

/* The geometry of a recurrent layer over a batch. */
struct rnn {
    size_t N, T, D, H, G, GH, dirs;
    bool gru, lbr, seq, bias, reverse;
};

static struct rnn rnn_of(const prof_exec *ex, const struct exec_op *op)
{
    const struct memest_layer *L = op->layer;
    struct rnn r;
    r.N = ex->batch;
    r.T = (size_t)L->in_shape.dim[0];
    r.D = (size_t)L->in_shape.dim[1];
    r.H = (size_t)L->units;
    r.gru = L->kind == MEMEST_KIND_GRU;
    r.G = r.gru ? 3 : 4;
    r.GH = r.G * r.H;
    r.dirs = L->direction == MEMEST_RNN_BIDIRECTIONAL ? 2 : 1;
    r.reverse = L->direction == MEMEST_RNN_REVERSE;
    r.lbr = r.gru && L->linear_before_reset;
    r.seq = L->return_sequence != 0;
    r.bias = L->bias_count != 0;
    return r;
}

/* Direction d runs the steps backwards: the reverse one of a
 * bidirectional layer, or a reverse layer's only one. */
static bool dir_reverse(const struct rnn *r, size_t d)
{
    return d == 1 || r->reverse;
}

/* Floats of the forward's scratch for a batch of r->N: the gates of
 * every step (N*T*G*H), h and c (or a gru's r*h) of one step (2*N*H) and
 * a gru's hidden gates of one step (N*G*H). */
static int rnn_floats(const struct rnn *r, size_t *out)
{
    size_t nt, ntgh, ngh;
    if (exec_mul_sz(r->N, r->T, &nt) != PROF_OK ||
        exec_mul_sz(nt, r->GH, &ntgh) != PROF_OK ||
        exec_mul_sz(r->N, r->GH, &ngh) != PROF_OK ||
        ntgh > SIZE_MAX / 2 - 2 * ngh) {
        return PROF_E_RANGE;
    }
    *out = ntgh + 2 * ngh; /* 2*N*H + N*GH <= 2*N*GH */
    return PROF_OK;
}

/* Floats of the backward's buffers for r->N samples (BPTT below): y's
 * copy (N*T*dirs*H), the forward's scratch (rnn_floats), the cache (act,
 * c, h, rh: N*T*(GH + 3H)), dA and dB (2*N*T*GH), hin (N*T*H), dh, dc,
 * drh (3*N*H). libmemest's train_work of lstm and gru counts the same
 * for one sample. */
static int rnn_backward_floats(const struct rnn *r, size_t *out)
{
    size_t fl, nt, big, rest;
    if (rnn_floats(r, &fl) != PROF_OK ||
        exec_mul_sz(r->N, r->T, &nt) != PROF_OK ||
        exec_mul_sz(nt, 5 * r->GH + (r->dirs + 4) * r->H, &big) != PROF_OK ||
        exec_mul_sz(r->N, 3 * r->H, &rest) != PROF_OK ||
        big > SIZE_MAX - fl - rest) {
        return PROF_E_RANGE;
    }
    /* nt*(GH + dirs*H) + nt*(GH + 3H) + 2*nt*GH + nt*H = nt*(4GH +
     * (dirs + 4)H); rnn_floats holds nt*GH + 2*N*GH */
    *out = big - nt * r->GH + fl + rest;
    return PROF_OK;
}

/* Inference runs one sample at a time, so that its scratch (in col32,
 * T*G*H + 2*G*H floats) does not grow with the batch; the trainer's
 * executor sizes col32 for the backward pass of one sample, the float
 * columns libmemest's train_work of lstm and gru counts. */
int exec_rnn_scratch(const prof_exec *ex, struct exec_op *op,
                     struct exec_scratch *need)
{
    struct rnn r = rnn_of(ex, op);
    r.N = 1;
    int st = ex->lowering ? rnn_backward_floats(&r, &need->col32)
                          : rnn_floats(&r, &need->col32);
    if (st != PROF_OK) {
        return st;
    }
    if (ex->precision == MEMEST_FP16 || ex->precision == MEMEST_BF16) {
        need->w32 = op->wn;
        need->b32 = op->bn;
    }
    return exec_scratch_float_input(ex, op, need);
}

/* PyTorch's initialisation of nn.LSTM and nn.GRU: every parameter
 * uniform in [-1/sqrt(H), 1/sqrt(H)) (exec_init_uniform's Glorot bound
 * sqrt(6 / (H + 5H)) is that, and its bias bound 1/sqrt(H)). */
void exec_rnn_init(struct exec_op *op, uint64_t *rng)
{
    const double H = (double)op->layer->units;
    exec_init_uniform(op, H, 5.0 * H, rng);
}

static inline float sigm(float v)
{
    return 1.0f / (1.0f + expf(-v));
}

/* What the trainer keeps of one direction's forward, rows n*T + t: the
 * activated gates (lstm i, f, g, o; gru r, z, n), the cell c after the
 * step (lstm) or the n gate's hidden product (gru lbr=yes: W_hn h +
 * b_hn), h after the step, and a gru's r*h (lbr=no). */
struct rnn_cache {
    float *act; /* N*T*GH */
    float *c;   /* N*T*H */
    float *h;   /* N*T*H */
    float *rh;  /* N*T*H */
};

/* One direction d of the layer on x (N x T x D) into y. s: scratch of
 * rnn_floats' size. cache: NULL at inference. */
static int rnn_direction(const struct rnn *r, size_t d, const float *x,
                         const float *w, const float *b, float *y, float *s,
                         const struct rnn_cache *cache)
{
    const size_t N = r->N, T = r->T, D = r->D, H = r->H, GH = r->GH;
    const size_t yw = r->dirs * H; /* output features per step */
    const float *wih = w + d * GH * (D + H);
    const float *whh = wih + GH * D;
    const float *bih = r->bias && b ? b + d * 2 * GH : NULL;
    const float *bhh = bih ? bih + GH : NULL;
    float *gates = s;              /* N*T*GH, row n*T + t */
    float *h = gates + N * T * GH; /* N*H */
    float *c = h + N * H;          /* N*H: lstm's c, gru's r*h */
    float *gh = c + N * H;         /* N*GH: gru's hidden products */
    const bool rev = dir_reverse(r, d);
    int k = kern_sgemm(KERN_MM_TRANS_B, N * T, GH, D, x, D, wih, D, gates,
                       GH);
    if (k != KERN_OK) {
        return exec_kern_status(k);
    }
    if (bih) {
        /* lstm: both biases on the gates; gru: b_ih here, b_hh with the
         * hidden product (whose n part r scales under lbr=yes) */
        for (size_t i = 0; i < N * T; i++) {
            float *g = gates + i * GH;
            if (r->gru) {
                for (size_t j = 0; j < GH; j++) {
                    g[j] += bih[j];
                }
            } else {
                for (size_t j = 0; j < GH; j++) {
                    g[j] += bih[j] + bhh[j];
                }
            }
        }
    }
    memset(h, 0, N * H * sizeof *h);
    memset(c, 0, N * H * sizeof *c);
    for (size_t step = 0; step < T; step++) {
        const size_t t = rev ? T - 1 - step : step;
        float *gt = gates + t * GH; /* sample n's row: gt + n*T*GH */
        if (!r->gru) {
            if (step > 0) {
                k = kern_sgemm(KERN_MM_TRANS_B | KERN_MM_ACCUMULATE, N, GH,
                               H, h, H, whh, H, gt, T * GH);
                if (k != KERN_OK) {
                    return exec_kern_status(k);
                }
            }
            for (size_t n = 0; n < N; n++) {
                k = kern_lstm_cell_f32(H, gt + n * T * GH, c + n * H,
                                       h + n * H);
                if (k != KERN_OK) {
                    return exec_kern_status(k);
                }
            }
        } else if (r->lbr) {
            /* gh = h . W_hh^T (0 at the first step), b_hh in the cell */
            if (step > 0) {
                k = kern_sgemm(KERN_MM_TRANS_B, N, GH, H, h, H, whh, H, gh,
                               GH);
            } else {
                memset(gh, 0, N * GH * sizeof *gh);
            }
            for (size_t n = 0; k == KERN_OK && n < N; n++) {
                k = kern_gru_cell_f32(H, gt + n * T * GH, gh + n * GH, bhh,
                                      h + n * H);
            }
            if (k != KERN_OK) {
                return exec_kern_status(k);
            }
        } else {
            /* lbr=no: r and z from h's product; then the n gate's product
             * of r*h */
            if (step > 0) {
                k = kern_sgemm(KERN_MM_TRANS_B, N, 2 * H, H, h, H, whh, H,
                               gh, GH);
            } else {
                memset(gh, 0, N * GH * sizeof *gh);
            }
            for (size_t n = 0; k == KERN_OK && n < N; n++) {
                float *g = gt + n * T * GH, *q = gh + n * GH;
                for (size_t j = 0; j < 2 * H; j++) {
                    g[j] = sigm(g[j] + q[j] + (bhh ? bhh[j] : 0.0f));
                    q[j] = g[j]; /* only r and z are read from here on */
                }
                for (size_t j = 0; j < H; j++) {
                    c[n * H + j] = g[j] * h[n * H + j];
                }
            }
            if (k == KERN_OK && step > 0) {
                k = kern_sgemm(KERN_MM_TRANS_B, N, H, H, c, H, whh + 2 * H * H,
                               H, gh + 2 * H, GH);
            } else if (k == KERN_OK) {
                for (size_t n = 0; n < N; n++) {
                    memset(gh + n * GH + 2 * H, 0, H * sizeof *gh);
                }
            }
            if (k != KERN_OK) {
                return exec_kern_status(k);
            }
            for (size_t n = 0; n < N; n++) {
                float *g = gt + n * T * GH, *hn = h + n * H;
                const float *q = gh + n * GH;
                for (size_t j = 0; j < H; j++) {
                    const float z = g[H + j];
                    const float nn = tanhf(g[2 * H + j] + q[2 * H + j] +
                                           (bhh ? bhh[2 * H + j] : 0.0f));
                    g[2 * H + j] = nn;
                    hn[j] = (1.0f - z) * nn + z * hn[j];
                }
            }
        }
        if (cache) {
            for (size_t n = 0; n < N; n++) {
                const size_t row = n * T + t;
                memcpy(cache->act + row * GH, gt + n * T * GH,
                       GH * sizeof(float));
                memcpy(cache->h + row * H, h + n * H, H * sizeof(float));
                if (!r->gru) {
                    memcpy(cache->c + row * H, c + n * H, H * sizeof(float));
                } else if (r->lbr) {
                    /* the n gate's hidden product, b_hn included */
                    for (size_t j = 0; j < H; j++) {
                        cache->c[row * H + j] =
                            gh[n * GH + 2 * H + j] +
                            (bhh ? bhh[2 * H + j] : 0.0f);
                    }
                } else {
                    memcpy(cache->rh + row * H, c + n * H, H * sizeof(float));
                }
            }
        }
        if (r->seq) {
            for (size_t n = 0; n < N; n++) {
                memcpy(y + (n * T + t) * yw + d * H, h + n * H,
                       H * sizeof(float));
            }
        }
    }
    if (!r->seq) {
        for (size_t n = 0; n < N; n++) {
            memcpy(y + n * yw + d * H, h + n * H, H * sizeof(float));
        }
    }
    return PROF_OK;
}

int exec_rnn_run_f32(prof_exec *ex, const struct exec_op *op,
                     const struct exec_f32_args *a)
{
    struct rnn r = rnn_of(ex, op);
    const size_t N = r.N;
    const size_t xn = r.T * r.D, yn = op->out_n / (N ? N : 1);
    int st = PROF_OK;
    r.N = 1;
    for (size_t n = 0; st == PROF_OK && n < N; n++) {
        for (size_t d = 0; st == PROF_OK && d < r.dirs; d++) {
            st = rnn_direction(&r, d, a->x + n * xn, a->w, a->b,
                               a->y + n * yn, ex->col32, NULL);
        }
    }
    return st;
}

/*
 * BPTT of one direction: the forward again with a cache, then the steps
 * backwards. dA (N*T*GH, rows n*T + t) receives the gradient of the
 * gates' pre-activations of the input product (W_ih x + b_ih) and dB that
 * of the hidden product's (W_hh h + b_hh; the same but for a gru's n gate
 * under lbr=yes, scaled by r); hin (N*T*H) the hidden product's input of
 * each step (h before it; a gru lbr=no's n gate reads cache->rh instead).
 */
static int rnn_backward_dir(const struct rnn *r, size_t d,
                            const struct exec_op *op,
                            const struct exec_grad_args *a, float *s,
                            const struct rnn_cache *cache, float *dA,
                            float *dB, float *hin, float *dh, float *dc,
                            float *drh)
{
    const size_t N = r->N, T = r->T, D = r->D, H = r->H, GH = r->GH;
    const size_t yw = r->dirs * H;
    const float *wih = op->w + d * GH * (D + H);
    const float *whh = wih + GH * D;
    float *gwih = a->gw + d * GH * (D + H);
    float *gwhh = gwih + GH * D;
    const bool rev = dir_reverse(r, d);
    /* the forward output goes to a scratch copy of y's size: only the
     * cache is read */
    int st = rnn_direction(r, d, a->x, op->w, op->b, s + 0, s + N * T * yw,
                           cache);
    if (st != PROF_OK) {
        return st;
    }
    memset(dh, 0, N * H * sizeof *dh);
    memset(dc, 0, N * H * sizeof *dc);
    for (size_t step = T; step-- > 0;) {
        const size_t t = rev ? T - 1 - step : step;
        const size_t tp = rev ? t + 1 : t - 1; /* the step before */
        for (size_t n = 0; n < N; n++) {
            const size_t row = n * T + t;
            float *dhn = dh + n * H;
            const float *hp = step > 0 ? cache->h + (n * T + tp) * H : NULL;
            /* the output's gradient joins the one from the step after */
            if (r->seq) {
                const float *g = a->g + row * yw + d * H;
                for (size_t j = 0; j < H; j++) {
                    dhn[j] += g[j];
                }
            } else if (step == T - 1) {
                const float *g = a->g + n * yw + d * H;
                for (size_t j = 0; j < H; j++) {
                    dhn[j] += g[j];
                }
            }
            for (size_t j = 0; j < H; j++) {
                hin[row * H + j] = hp ? hp[j] : 0.0f;
            }
            const float *ac = cache->act + row * GH;
            float *da = dA + row * GH, *db = dB + row * GH;
            if (!r->gru) {
                const float *cp = step > 0 ? cache->c + (n * T + tp) * H
                                           : NULL;
                float *dcn = dc + n * H;
                for (size_t j = 0; j < H; j++) {
                    const float i = ac[j], f = ac[H + j], g = ac[2 * H + j],
                                o = ac[3 * H + j];
                    const float tc = tanhf(cache->c[row * H + j]);
                    const float dct =
                        dcn[j] + dhn[j] * o * (1.0f - tc * tc);
                    const float cprev = cp ? cp[j] : 0.0f;
                    da[j] = dct * g * i * (1.0f - i);
                    da[H + j] = dct * cprev * f * (1.0f - f);
                    da[2 * H + j] = dct * i * (1.0f - g * g);
                    da[3 * H + j] = dhn[j] * tc * o * (1.0f - o);
                    dcn[j] = dct * f;
                    dhn[j] = 0.0f; /* rebuilt below from W_hh */
                }
                memcpy(db, da, GH * sizeof *db);
            } else {
                for (size_t j = 0; j < H; j++) {
                    const float rr = ac[j], z = ac[H + j], nn = ac[2 * H + j];
                    const float hpj = hp ? hp[j] : 0.0f;
                    const float dn = dhn[j] * (1.0f - z);
                    const float dan = dn * (1.0f - nn * nn);
                    const float dz = dhn[j] * (hpj - nn);
                    da[H + j] = dz * z * (1.0f - z);
                    da[2 * H + j] = dan;
                    db[H + j] = da[H + j];
                    if (r->lbr) {
                        const float ghn = cache->c[row * H + j];
                        da[j] = dan * ghn * rr * (1.0f - rr);
                        db[2 * H + j] = dan * rr;
                    } else {
                        db[2 * H + j] = dan;
                    }
                    db[j] = da[j]; /* lbr=no: fixed below */
                    dhn[j] *= z;   /* h' = ... + z h */
                }
            }
        }
        if (r->gru && !r->lbr) {
            /* d(r*h) = dan . W_hn; then r's gradient and h's share */
            int k = kern_sgemm(0, N, H, H, dB + t * GH + 2 * H, T * GH,
                               whh + 2 * H * H, H, drh, H);
            if (k != KERN_OK) {
                return exec_kern_status(k);
            }
            for (size_t n = 0; n < N; n++) {
                const size_t row = n * T + t;
                const float *ac = cache->act + row * GH;
                for (size_t j = 0; j < H; j++) {
                    const float rr = ac[j];
                    const float hpj = hin[row * H + j];
                    const float dr = drh[n * H + j] * hpj;
                    dA[row * GH + j] = dr * rr * (1.0f - rr);
                    dB[row * GH + j] = dA[row * GH + j];
                    dh[n * H + j] += drh[n * H + j] * rr;
                }
            }
        }
        if (step > 0) {
            /* h's gradient through the hidden product: dB_t . W_hh (lbr=no:
             * the r and z parts; the n part went through r*h above) */
            const size_t gk = r->gru && !r->lbr ? 2 * H : GH;
            int k = kern_sgemm(KERN_MM_ACCUMULATE, N, H, gk, dB + t * GH,
                               T * GH, whh, H, dh, H);
            if (k != KERN_OK) {
                return exec_kern_status(k);
            }
        }
    }
    /* the parameters' gradients over the whole sequence, added to the
     * other samples' (exec_rnn_backward zeroes them first) */
    const unsigned acc = KERN_MM_TRANS_A | KERN_MM_ACCUMULATE;
    int k = kern_sgemm(acc, GH, D, N * T, dA, GH, a->x, D, gwih, D);
    if (k == KERN_OK && r->gru && !r->lbr) {
        k = kern_sgemm(acc, 2 * H, H, N * T, dB, GH, hin, H, gwhh, H);
        if (k == KERN_OK) {
            k = kern_sgemm(acc, H, H, N * T, dB + 2 * H, GH, cache->rh, H,
                           gwhh + 2 * H * H, H);
        }
    } else if (k == KERN_OK) {
        k = kern_sgemm(acc, GH, H, N * T, dB, GH, hin, H, gwhh, H);
    }
    if (k == KERN_OK && r->bias && a->gb) {
        float *gbih = a->gb + d * 2 * GH, *gbhh = gbih + GH;
        for (size_t row = 0; row < N * T; row++) {
            for (size_t j = 0; j < GH; j++) {
                gbih[j] += dA[row * GH + j];
                gbhh[j] += dB[row * GH + j];
            }
        }
    }
    if (k == KERN_OK && a->gx) {
        k = kern_sgemm(d == 0 ? 0u : KERN_MM_ACCUMULATE, N * T, D, GH, dA,
                       GH, wih, D, a->gx, D);
    }
    return exec_kern_status(k);
}

/* One sample at a time (as the forward), on the trainer's scratch that
 * exec_rnn_scratch sized for it: the buffers do not grow with the
 * batch, and the trainer's memory is libmemest's estimate. */
int exec_rnn_backward(prof_exec *ex, const struct exec_op *op,
                      const struct exec_grad_args *a)
{
    struct rnn r = rnn_of(ex, op);
    const size_t batch = r.N;
    r.N = 1;
    const size_t T = r.T, H = r.H, GH = r.GH, nt = T;
    const size_t xn = T * r.D, gn = r.seq ? T * r.dirs * H : r.dirs * H;
    size_t total;
    if (rnn_backward_floats(&r, &total) != PROF_OK) {
        return PROF_E_RANGE;
    }
    (void)total; /* within ex->col32: exec_rnn_scratch asked for it */
    float *s = ex->col32;
    const size_t big = nt * (GH + r.dirs * H);
    size_t fl = 0;
    (void)rnn_floats(&r, &fl);
    float *p = s + big + fl;
    struct rnn_cache cache = {p, p + nt * GH, p + nt * (GH + H),
                              p + nt * (GH + 2 * H)};
    p += nt * (GH + 3 * H);
    float *dA = p, *dB = p + nt * GH, *hin = p + 2 * nt * GH;
    p = hin + nt * H;
    float *dh = p, *dc = p + H, *drh = p + 2 * H;
    int st = PROF_OK;
    if (a->gw) {
        memset(a->gw, 0, op->wn * sizeof *a->gw);
    }
    if (a->gb && op->bn) {
        memset(a->gb, 0, op->bn * sizeof *a->gb);
    }
    for (size_t n = 0; st == PROF_OK && n < batch; n++) {
        struct exec_grad_args one = *a;
        one.x = a->x + n * xn;
        one.g = a->g + n * gn;
        one.gx = a->gx ? a->gx + n * xn : NULL;
        memset(dA, 0, 2 * nt * GH * sizeof *dA);
        for (size_t d = 0; st == PROF_OK && d < r.dirs; d++) {
            st = rnn_backward_dir(&r, d, op, &one, s, &cache, dA, dB, hin,
                                  dh, dc, drh);
        }
    }
    return st;
}

unsigned exec_rnn_reads(const struct exec_op *op, bool loss_softmax)
{
    (void)op;
    (void)loss_softmax;
    return EXEC_READS_X;
}

const struct exec_op_vtable exec_op_lstm = {
    .scratch = exec_rnn_scratch,
    .init_params = exec_rnn_init,
    .run_f32 = exec_rnn_run_f32,
    .backward_f32 = exec_rnn_backward,
    .backward_reads = exec_rnn_reads,
};
