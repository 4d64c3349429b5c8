/* The trainer: forward and backward passes of a libmemest model on the
 * executor's operators and parameters, an optimiser step, fp32 or mixed
 * precision with dynamic loss scaling. The public contract is in profile.h
 * (section "trainer"); its memory is libmemest's training estimate,
 * checked term by term when it is built. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "edgefit/kernels.h"
#include "edgefit/profile.h"
#include "exec/executor.h"
#include "exec/ops.h"
#include "internal.h"
#include "wide.h"
#include "alloc_rec.h" /* last: it wraps malloc and co. */

/* One layer's training state; tensors include the batch. */
struct tlayer {
    struct exec_op *op;  /* the executor's plan and float parameters */
    void *y;             /* output, op->out_n at the storage precision */
    void *pre;           /* fused gelu: pre-activation, else NULL */
    void *gw, *gb;       /* gradients, storage precision (slices) */
    float *s1w, *s1b;    /* momentum velocity or Adam's m (slices) */
    float *s2w, *s2b;    /* Adam's v (slices) */
    float *bn_stat;      /* batchnorm: the batch's mean and 1/std */
    float *bn_run;       /* batchnorm: running mean and variance */
    /* A conv2d or dense layer with a batch norm folded into it (fbn)
     * trains them apart, as PyTorch does: its weights (before the fold),
     * no bias of its own, then the batch norm, whose beta is the layer's
     * bias, gamma here (gg its gradient, s1g and s2g its state), z the
     * layer's output before it (storage precision). */
    bool fbn;
    float *gamma, *s1g, *s2g;
    void *gg, *z;
    bool loss_softmax;   /* the final softmax, fused with the loss */
};

struct prof_train {
    const memest_model *model;
    struct prof_train_opts opts;
    prof_exec *ex; /* fp32, no arena: the trainer keeps every tensor */
    size_t nl, batch, sample_n, classes;
    enum memest_precision prec;
    bool narrow;   /* 16-bit storage (mixed precision) */
    bool training; /* batch norms on the batch's statistics (an epoch's
                      steps), else on the running ones (evaluation) */
    size_t sb;     /* storage bytes per element */
    struct tlayer *L;

    void *x0;                 /* the input batch, storage precision */
    float *gammas;            /* the folded batch norms' gammas */
    void *grad;               /* every parameter's gradient */
    float *state;             /* optimiser state, 0, 1 or 2 per parameter */
    /* Activation gradients (see plan_grads): tensor t's in gp[t], NULL for
     * the input; those of one reader, the next layer, at the two ends of
     * garena; the others ("held": read by several layers, or by a later
     * one) each in its own slice of ghold for the whole backward pass;
     * gstage receives a held tensor's further shares before they are
     * added. started[t]: a share of t's gradient is in place. */
    unsigned char *garena, *ghold, *gstage;
    size_t garena_bytes;
    size_t nt;                /* tensors: the input, then each layer's */
    void **gp;
    bool *held, *started;
    /* an add's or concat's inputs and their gradients (bookkeeping) */
    const float **xs_in;
    float **gxs;
    bool *gx_add;
    int32_t *labels;
    /* float staging of the 16-bit operators (mixed precision only) */
    float *xs, *dxs, *ys, *dys, *gs;
    float *zs; /* a folded batch norm's input, z, in float */

    struct kern_loss_scaler scaler;
    float grad_scale; /* the loss scale the stored gradients carry */
    struct prof_train_scale_event *events;
    size_t n_events, cap_events;
    uint64_t steps_done;  /* steps run since create (applied or not) */
    uint64_t adam_t;      /* steps applied, Adam's t */
    uint64_t epochs_done;

    struct prof_train_memory mem;
};

/* ---- helpers -------------------------------------------------------------- */

static size_t max_sz(size_t a, size_t b)
{
    return a > b ? a : b;
}

/* Allocate bytes (64-byte aligned, zeroed) and count them in *term: the
 * trainer's memory is the sum of what passes through here and the
 * executor's own (parameters, im2col scratch). */
static void *talloc(size_t bytes, uint64_t *term, int *st)
{
    if (bytes == 0 || *st != PROF_OK) {
        return NULL;
    }
    const size_t rounded = (bytes + 63) & ~(size_t)63;
    void *p = rounded < bytes ? NULL : aligned_alloc(64, rounded);
    if (!p) {
        *st = PROF_E_NOMEM;
        return NULL;
    }
    memset(p, 0, rounded);
    *term += bytes;
    return p;
}

static int kst(int k)
{
    return exec_kern_status(k);
}

/* The tensor t (0 the input, i + 1 the output of layer i) as stored. */
static void *act_ptr(const prof_train *t, size_t i)
{
    return i == 0 ? t->x0 : t->L[i - 1].y;
}

static size_t act_n(const prof_train *t, size_t i)
{
    return i == 0 ? t->ex->input_n : t->L[i - 1].op->out_n;
}

/* The gradient of tensor i (see plan_grads). */
static void *grad_ptr(const prof_train *t, size_t i)
{
    return t->gp[i];
}

/* The tensor layer i reads first (its only one but for add and concat). */
static size_t in_tensor(const prof_train *t, size_t i)
{
    return t->L[i].op->layer->inputs[0];
}

/* A layer of several inputs (add, concat, matmul), run on its inputs'
 * buffers. */
static bool is_join(const struct memest_layer *L)
{
    return L->kind == MEMEST_KIND_ADD || L->kind == MEMEST_KIND_CONCAT ||
           L->kind == MEMEST_KIND_MATMUL;
}

/* ---- building -------------------------------------------------------------- */

PROF_API void prof_train_opts_init(struct prof_train_opts *opts)
{
    if (!opts) {
        return;
    }
    memset(opts, 0, sizeof *opts);
    opts->batch = 32;
    opts->precision = MEMEST_FP32;
    opts->optimizer = MEMEST_OPT_SGD;
    opts->alpha = 0.1;
    opts->momentum = 0.9;
    opts->adam_beta1 = 0.9;
    opts->adam_beta2 = 0.999;
    opts->adam_eps = 1e-8;
    opts->seed = 42;
    opts->threads = 1;
    opts->loss_scale = 1024.0;
}

static int check_opts(const struct prof_train_opts *o, struct prof_diag *diag)
{
    if (memest_optimizer_name(o->optimizer) == NULL) {
        exec_diag_set(diag, "unknown optimizer %d", (int)o->optimizer);
        return PROF_E_INVALID;
    }
    if (o->batch == 0) {
        exec_diag_set(diag, "the batch size must be at least 1");
        return PROF_E_RANGE;
    }
    if (o->precision != MEMEST_FP32 && o->precision != MEMEST_FP16 &&
        o->precision != MEMEST_BF16) {
        const char *n = memest_precision_name(o->precision);
        exec_diag_set(diag, "precision %s is not trained (use fp32, or fp16 "
                      "or bf16 for mixed precision; int8 is the executor's "
                      "post-training quantisation)",
                      n ? n : "(unknown)");
        return PROF_E_RANGE;
    }
    if (!(o->alpha > 0.0) || !isfinite(o->alpha)) {
        exec_diag_set(diag, "the learning rate alpha must be finite and "
                      "positive (got %g)", o->alpha);
        return PROF_E_RANGE;
    }
    if (!(o->momentum >= 0.0 && o->momentum < 1.0)) {
        exec_diag_set(diag, "momentum must be in [0, 1) (got %g)",
                      o->momentum);
        return PROF_E_RANGE;
    }
    if (!(o->adam_beta1 >= 0.0 && o->adam_beta1 < 1.0) ||
        !(o->adam_beta2 >= 0.0 && o->adam_beta2 < 1.0)) {
        exec_diag_set(diag, "Adam's betas must be in [0, 1) (got %g, %g)",
                      o->adam_beta1, o->adam_beta2);
        return PROF_E_RANGE;
    }
    if (!(o->adam_eps > 0.0) || !isfinite(o->adam_eps)) {
        exec_diag_set(diag, "Adam's eps must be finite and positive (got %g)",
                      o->adam_eps);
        return PROF_E_RANGE;
    }
    if (o->precision == MEMEST_FP16 &&
        !(o->loss_scale >= 1.0 && o->loss_scale <= 65536.0)) {
        exec_diag_set(diag, "the loss scale must be in [1, 65536] (got %g)",
                      o->loss_scale);
        return PROF_E_RANGE;
    }
    if (o->threads < 1 || o->threads > KERN_MAX_THREADS) {
        exec_diag_set(diag, "threads must be in [1, %d] (got %u)",
                      KERN_MAX_THREADS, o->threads);
        return PROF_E_RANGE;
    }
    return PROF_OK;
}

/* Layers whose output is their input (memest_kind_is_view: flatten,
 * identity, and dropout, whose model carries no rate; the trainer drops
 * nothing, training runs the layer as inference does). */
static bool passes_through(const struct memest_layer *L)
{
    return memest_kind_is_view(L->kind);
}

/* Whether v is a value of the 16-bit format p (infinities are). */
static bool exact16(enum memest_precision p, double v)
{
    const float f = (float)v;
    uint16_t h = 0;
    float back = 0.0f;
    if ((double)f != v) {
        return false;
    }
    if (exec_narrow16(p, &h, &f, 1) != PROF_OK ||
        exec_widen16(p, &back, &h, 1) != PROF_OK) {
        return false;
    }
    return back == f;
}

/* What the trainer has a backward pass for: a model of one input whose
 * layers (a chain, or a graph of residual adds and concats) are of kinds
 * with a backward_f32 (exec/ops.h; every operator but pad, the binary
 * ones, conv_transpose and resize has one) with the activations
 * exec_act_trainable() accepts or
 * the final softmax; every tensor but the output is read. Mixed precision
 * trains chains only. The rest is refused, naming the layer. */
static int check_trainable(const prof_train *t, struct prof_diag *diag)
{
    const size_t ninputs = memest_model_input_count(t->model);
    if (ninputs != 1) {
        exec_diag_set(diag, "the model has %zu inputs; the trainer trains "
                      "models of one input", ninputs);
        return PROF_E_UNSUPPORTED;
    }
    for (size_t i = 0; i < t->nl; i++) {
        const struct exec_op *op = t->L[i].op;
        const struct memest_layer *L = op->layer;
        if (!op->vt->backward_f32) {
            char kinds[384];
            exec_trainable_kinds(kinds, sizeof kinds);
            exec_diag_set(diag, "%s: the trainer has no backward pass for %s "
                          "layers (it trains %s layers)",
                          L->name, memest_kind_name(L->kind), kinds);
            return PROF_E_UNSUPPORTED;
        }
        if (t->narrow && (is_join(L) || L->input_count != 1 ||
                          L->inputs[0] != i)) {
            exec_diag_set(diag, "%s: mixed precision (%s) trains chains "
                          "only, each layer reading the previous one's "
                          "output (a model with %s trains in fp32)",
                          L->name, memest_precision_name(t->prec),
                          is_join(L) ? "adds, concats or matmuls" : "skips");
            return PROF_E_UNSUPPORTED;
        }
        if ((L->kind == MEMEST_KIND_BATCHNORM || L->folded_bn) &&
            t->batch * op->hw_out < 2) {
            exec_diag_set(diag, "%s: a batch norm in training needs more "
                          "than one value per channel (batch %zu x %zu "
                          "positions), as PyTorch's does",
                          L->name, t->batch, op->hw_out);
            return PROF_E_RANGE;
        }
        for (size_t k = 0; k < L->input_count; k++) {
            if (L->inputs[k] > i) { /* libmemest orders layers: never */
                exec_diag_set(diag, "%s: reads a later layer's output",
                              L->name);
                return PROF_E_UNSUPPORTED;
            }
        }
        if (L->act == MEMEST_ACT_CLIP && L->kind != MEMEST_KIND_ACTIVATION &&
            t->prec != MEMEST_FP32 &&
            (!exact16(t->prec, L->act_alpha) ||
             !exact16(t->prec, L->act_beta))) {
            /* a fused clip's derivative is read from its stored output:
             * at a bound the 16-bit format cannot hold, a clipped output
             * rounds to a value inside the range and would pass the
             * gradient on */
            exec_diag_set(diag, "%s: act=clip fused with bounds %g and %g, "
                          "which %s does not hold exactly: the trainer "
                          "cannot tell a clipped output from its stored "
                          "value (write the clip as a layer of its own)",
                          L->name, L->act_alpha, L->act_beta,
                          memest_precision_name(t->prec));
            return PROF_E_UNSUPPORTED;
        }
        if (!exec_act_trainable(L->act, L->act_alpha,
                                L->kind != MEMEST_KIND_ACTIVATION)) {
            exec_diag_set(diag, "%s: the trainer has no backward pass for "
                          "act=%s%s (it trains relu, relu6, gelu, sigmoid, "
                          "tanh, softplus, hardsigmoid, clip, leakyrelu with "
                          "alpha >= 0, elu with alpha > 0, silu, hardswish "
                          "and logsoftmax as layers of their own, and a "
                          "final softmax)", L->name, memest_act_name(L->act),
                          L->kind != MEMEST_KIND_ACTIVATION ? " fused" : "");
            return PROF_E_UNSUPPORTED;
        }
    }
    return PROF_OK;
}

/* Softmax is trained only as the last operation, fused with the loss. */
static int check_layers(prof_train *t, struct prof_diag *diag)
{
    int st = check_trainable(t, diag);
    if (st != PROF_OK) {
        return st;
    }
    for (size_t i = 0; i < t->nl; i++) {
        const struct memest_layer *L = t->L[i].op->layer;
        const bool last = i + 1 == t->nl;
        if (L->act != MEMEST_ACT_SOFTMAX) {
            continue;
        }
        if (!last) {
            exec_diag_set(diag, "%s: softmax is trained only at the end of "
                          "the model, fused with the cross-entropy loss",
                          L->name);
            return PROF_E_RANGE;
        }
        if (L->out_shape.rank != 1) {
            exec_diag_set(diag, "%s: the final softmax must act on a feature "
                          "vector (flatten first)", L->name);
            return PROF_E_RANGE;
        }
        t->L[i].loss_softmax = true;
    }
    const struct tlayer *last = &t->L[t->nl - 1];
    if (!last->loss_softmax) {
        exec_diag_set(diag, "%s: the model must end in softmax (act=softmax "
                      "or a softmax layer) for the cross-entropy loss",
                      last->op->layer->name);
        return PROF_E_RANGE;
    }
    return PROF_OK;
}

/* Compare each term with libmemest's estimate; the first that differs is
 * named. */
static int check_memory(prof_train *t, struct prof_diag *diag)
{
    struct memest_training e;
    int mst = t->narrow ? memest_training_memory_mixed(t->model, t->batch,
                                                       t->opts.optimizer, &e)
                        : memest_training_memory(t->model, t->batch,
                                                 MEMEST_FP32,
                                                 t->opts.optimizer, &e);
    if (mst != MEMEST_OK) {
        return exec_diag_memest(diag, "libmemest's estimate of training "
                                "memory", mst);
    }
    struct prof_train_memory *m = &t->mem;
    m->total_bytes = m->parameter_bytes + m->gradient_bytes +
                     m->optimizer_state_bytes + m->activation_bytes +
                     m->working_bytes;
    m->estimate = e;
    m->estimate_total_bytes = e.total_bytes;
    if (t->opts.estimate_bytes != 0) {
        m->estimate_total_bytes = t->opts.estimate_bytes;
        if (m->total_bytes != t->opts.estimate_bytes) {
            exec_diag_set(diag, "the trainer's buffers take %llu bytes, but "
                          "the estimate to check gives %llu",
                          (unsigned long long)m->total_bytes,
                          (unsigned long long)t->opts.estimate_bytes);
            return PROF_E_MEMEST;
        }
        return PROF_OK;
    }
    const struct {
        const char *name;
        uint64_t have, want;
    } terms[] = {
        {"parameters", m->parameter_bytes, e.parameter_bytes},
        {"gradients", m->gradient_bytes, e.gradient_bytes},
        {"optimizer state", m->optimizer_state_bytes,
         e.optimizer_state_bytes},
        {"activations", m->activation_bytes, e.activation_bytes},
        {"working buffers", m->working_bytes, e.working_bytes},
        {"total", m->total_bytes, e.total_bytes},
    };
    for (size_t i = 0; i < sizeof terms / sizeof terms[0]; i++) {
        if (terms[i].have != terms[i].want) {
            exec_diag_set(diag, "the trainer's %s take %llu bytes, but "
                          "libmemest's training estimate gives %llu",
                          terms[i].name, (unsigned long long)terms[i].have,
                          (unsigned long long)terms[i].want);
            return PROF_E_MEMEST;
        }
    }
    return PROF_OK;
}

/* The activation gradients' buffers, in elements (the batch included).
 * Tensor t (1..nl: the output of layer t - 1) whose one reader is the
 * next layer, or the output (read by the loss), needs its gradient from
 * that reader's backward step to its producer's, the next step: such
 * tensors take the two ends of one buffer of the largest pair t, t + 1
 * (even t at the start, odd at the end), as the executor lays out a
 * chain's activations. Any other tensor (read by several layers, or by a
 * later one: a residual's input) gathers its gradient over several steps
 * and keeps a slice of its own, and one staging buffer the size of the
 * largest such tensor read more than once receives a share from a layer
 * that overwrites its gradient before it is added. The input needs no
 * gradient. libmemest's training estimate states the same sizes
 * (estimate.c, working()). */
static int plan_grads(prof_train *t, size_t *pair, size_t *hold,
                      size_t *stage, struct prof_diag *diag)
{
    size_t *readers = calloc(t->nt, sizeof *readers);
    size_t *last_reader = calloc(t->nt, sizeof *last_reader);
    if (!readers || !last_reader) {
        free(readers);
        free(last_reader);
        return PROF_E_NOMEM;
    }
    for (size_t i = 0; i < t->nl; i++) {
        const struct memest_layer *L = t->L[i].op->layer;
        for (size_t k = 0; k < L->input_count; k++) {
            readers[L->inputs[k]]++;
            last_reader[L->inputs[k]] = i;
        }
    }
    int st = PROF_OK;
    size_t prev = 0; /* the chain-local size of tensor i (0: none) */
    *pair = *hold = *stage = 0;
    for (size_t i = 0; i < t->nl && st == PROF_OK; i++) {
        const size_t ti = i + 1, n = act_n(t, ti);
        const bool out = ti == t->nl;
        if (!out && readers[ti] == 0) {
            exec_diag_set(diag, "%s: nothing reads the layer's output; the "
                          "trainer trains models of one output",
                          t->L[i].op->layer->name);
            st = PROF_E_UNSUPPORTED;
            break;
        }
        t->held[ti] = !out && !(readers[ti] == 1 && last_reader[ti] == ti);
        const size_t local = t->held[ti] ? 0 : n;
        *pair = max_sz(*pair, prev + local);
        prev = local;
        if (t->held[ti]) {
            *hold += n;
            if (readers[ti] > 1) {
                *stage = max_sz(*stage, n);
            }
        }
    }
    free(readers);
    free(last_reader);
    return st;
}

static int alloc_buffers(prof_train *t, struct prof_diag *diag)
{
    struct prof_train_memory *m = &t->mem;
    const size_t sb = t->sb;
    const unsigned k = memest_optimizer_state_factor(t->opts.optimizer);
    size_t nparams = 0, gmax = 0, ghold = 0, gstage = 0, max_join = 1;
    size_t max_z = 0;
    size_t max_in = 0, max_out = 0, max_params = 0;
    int st = plan_grads(t, &gmax, &ghold, &gstage, diag);
    if (st != PROF_OK) {
        return st;
    }

    size_t ngamma = 0;
    for (size_t i = 0; i < t->nl; i++) {
        const struct exec_op *op = t->L[i].op;
        t->L[i].fbn = op->layer->folded_bn != NULL &&
                      (op->layer->kind == MEMEST_KIND_CONV2D ||
                       op->layer->kind == MEMEST_KIND_DENSE);
        ngamma += t->L[i].fbn ? op->c_out : 0;
        nparams += op->wn + op->bn + (t->L[i].fbn ? op->c_out : 0);
        max_join = max_sz(max_join, op->layer->input_count);
        max_in = max_sz(max_in, op->in_n);
        max_out = max_sz(max_out, op->out_n);
        max_params = max_sz(max_params, op->wn + op->bn +
                                            (t->L[i].fbn ? op->c_out : 0));
        max_z = max_sz(max_z, t->L[i].fbn ? op->out_n : 0);
    }
    /* Sizes were checked for overflow by libmemest (the estimate of the
     * same model and batch fits in 64 bits) and by the executor. */
    m->parameter_bytes = t->ex->master_bytes;
    t->gammas = talloc(ngamma * sizeof(float), &m->parameter_bytes, &st);
    t->x0 = talloc(t->ex->input_n * sb, &m->activation_bytes, &st);
    for (size_t i = 0; i < t->nl; i++) {
        struct tlayer *l = &t->L[i];
        const enum memest_kind kind = l->op->layer->kind;
        l->y = talloc(l->op->out_n * sb, &m->activation_bytes, &st);
        if (kind != MEMEST_KIND_ACTIVATION &&
            exec_act_keeps_pre(l->op->layer->act)) {
            l->pre = talloc(l->op->out_n * sb, &m->working_bytes, &st);
        }
        if (l->fbn) {
            l->z = talloc(l->op->out_n * sb, &m->working_bytes, &st);
        }
        if (kind == MEMEST_KIND_BATCHNORM || l->fbn) {
            /* the batch's statistics and the running ones, in float */
            l->bn_stat = talloc(2 * l->op->c_out * sizeof(float),
                                &m->working_bytes, &st);
            l->bn_run = talloc(2 * l->op->c_out * sizeof(float),
                               &m->working_bytes, &st);
        }
    }
    t->grad = talloc(nparams * sb, &m->gradient_bytes, &st);
    t->state = talloc(nparams * k * sizeof(float),
                      &m->optimizer_state_bytes, &st);
    t->garena_bytes = gmax * sb;
    t->garena = talloc(t->garena_bytes, &m->working_bytes, &st);
    t->ghold = talloc(ghold * sb, &m->working_bytes, &st);
    t->gstage = talloc(gstage * sb, &m->working_bytes, &st);
    t->labels = talloc(t->batch * sizeof(int32_t), &m->working_bytes, &st);
    m->working_bytes += t->ex->scratch_bytes; /* the im2col columns */
    if (t->narrow) {
        t->xs = talloc(max_in * sizeof(float), &m->working_bytes, &st);
        t->dxs = talloc(max_in * sizeof(float), &m->working_bytes, &st);
        t->ys = talloc(max_out * sizeof(float), &m->working_bytes, &st);
        t->dys = talloc(max_out * sizeof(float), &m->working_bytes, &st);
        t->gs = talloc(max_params * sizeof(float), &m->working_bytes, &st);
        t->zs = talloc(max_z * sizeof(float), &m->working_bytes, &st);
    }
    /* bookkeeping, not counted (see prof_train_memory) */
    t->xs_in = calloc(max_join, sizeof *t->xs_in);
    t->gxs = calloc(max_join, sizeof *t->gxs);
    t->gx_add = calloc(max_join, sizeof *t->gx_add);
    if (st == PROF_OK && (!t->xs_in || !t->gxs || !t->gx_add)) {
        st = PROF_E_NOMEM;
    }
    if (st != PROF_OK) {
        return st;
    }
    /* The gradients' places (plan_grads). */
    size_t held_at = 0;
    for (size_t ti = 1; ti < t->nt; ti++) {
        const size_t n = act_n(t, ti);
        if (t->held[ti]) {
            t->gp[ti] = t->ghold + held_at * sb;
            held_at += n;
        } else if (ti % 2 == 0) {
            t->gp[ti] = t->garena;
        } else {
            t->gp[ti] = t->garena + t->garena_bytes - n * sb;
        }
    }
    /* Batch norms start as PyTorch's fresh one (gamma 1, beta 0, running
     * mean 0 and variance 1), or, when the model carries weights (folded),
     * as the batch norm of mean 0 and variance 1 that computes them: a
     * standalone one's gamma scale sqrt(1 + eps) and beta its shift; a
     * folded one's gamma sqrt(1 + eps) on the folded weights, beta the
     * folded bias (the statistics a fold absorbed are not recovered). A
     * folded one without weights keeps the layer's drawn weights; its
     * bias, beta, starts at 0. */
    size_t gat = 0;
    for (size_t i = 0; i < t->nl; i++) {
        struct tlayer *l = &t->L[i];
        struct exec_op *op = l->op;
        const double root = sqrt(1.0 + op->layer->bn_epsilon);
        const bool given = op->layer->weight != NULL;
        if (l->fbn) {
            l->gamma = t->gammas + gat;
            gat += op->c_out;
            for (size_t c = 0; c < op->c_out; c++) {
                l->gamma[c] = given ? (float)root : 1.0f;
                op->b[c] = given ? op->b[c] : 0.0f;
            }
        } else if (op->layer->kind == MEMEST_KIND_BATCHNORM) {
            for (size_t c = 0; c < op->c_out; c++) {
                op->w[c] = given ? (float)((double)op->w[c] * root) : 1.0f;
                op->b[c] = given ? op->b[c] : 0.0f;
            }
        } else {
            continue;
        }
        for (size_t c = 0; c < op->c_out; c++) {
            l->bn_run[c] = 0.0f;
            l->bn_run[op->c_out + c] = 1.0f;
        }
    }
    /* Slices of the gradient and state blocks, layer by layer: weights,
     * biases, a folded batch norm's gammas. */
    size_t off = 0;
    for (size_t i = 0; i < t->nl; i++) {
        struct tlayer *l = &t->L[i];
        const size_t wn = l->op->wn, bn = l->op->bn;
        const size_t gn = l->fbn ? l->op->c_out : 0;
        if (wn == 0) {
            continue;
        }
        l->gw = (unsigned char *)t->grad + off * sb;
        l->gb = (unsigned char *)t->grad + (off + wn) * sb;
        l->gg = gn ? (unsigned char *)t->grad + (off + wn + bn) * sb : NULL;
        if (k >= 1) {
            l->s1w = t->state + off;
            l->s1b = t->state + off + wn;
            l->s1g = gn ? t->state + off + wn + bn : NULL;
        }
        if (k >= 2) {
            l->s2w = t->state + nparams + off;
            l->s2b = t->state + nparams + off + wn;
            l->s2g = gn ? t->state + nparams + off + wn + bn : NULL;
        }
        off += wn + bn + gn;
    }
    return PROF_OK;
}

/* "out of memory" alone says nothing: how much the batch asks, by
 * libmemest's training estimate (the trainer's own buffers are checked
 * against it in check_memory()). `beyond` adds why no allocation was
 * tried. False when the estimate itself fails. */
static bool say_training_memory(const memest_model *model,
                                const struct prof_train_opts *o,
                                const char *beyond, struct prof_diag *diag)
{
    struct memest_training tm;
    const int mst =
        o->precision == MEMEST_FP32
            ? memest_training_memory(model, o->batch, MEMEST_FP32,
                                     o->optimizer, &tm)
            : memest_training_memory_mixed(model, o->batch, o->optimizer,
                                           &tm);
    if (mst != MEMEST_OK) {
        return false;
    }
    if (beyond && tm.total_bytes <= (uint64_t)SIZE_MAX) {
        return false;
    }
    exec_diag_set(diag, "out of memory: training at batch %llu needs about "
                  "%llu bytes (%.1f MB, libmemest's training estimate)%s",
                  (unsigned long long)o->batch,
                  (unsigned long long)tm.total_bytes, tm.total_mb,
                  beyond ? beyond : "");
    return true;
}

PROF_API int prof_train_create(const memest_model *model,
                               const struct prof_train_opts *opts,
                               prof_train **out, struct prof_diag *diag)
{
    struct prof_train_opts o;
    int st = exec_create_args(model, out, diag);

    if (out) {
        *out = NULL;
    }
    if (st != PROF_OK) {
        return st;
    }
    if (opts) {
        o = *opts;
    } else {
        prof_train_opts_init(&o);
    }
    if ((st = check_opts(&o, diag)) != PROF_OK) {
        return st;
    }
    /* Larger than the address space (a 32-bit board at a huge batch): the
     * same failure as one the allocator refuses, said before any tensor's
     * size_t count would overflow. */
    if (say_training_memory(model, &o, ", more than this machine's "
                            "address space", diag)) {
        return PROF_E_NOMEM;
    }
    prof_train *t = calloc(1, sizeof *t);
    if (!t) {
        st = PROF_E_NOMEM;
        goto fail;
    }
    t->model = model;
    t->opts = o;
    t->prec = o.precision;
    t->narrow = o.precision != MEMEST_FP32;
    t->sb = memest_precision_bytes(o.precision);

    /* The executor in float without its arena: the layer plan, the
     * parameters as initialised from the seed, the im2col scratch. */
    struct prof_exec_opts eo;
    prof_exec_opts_init(&eo);
    eo.batch = o.batch;
    eo.precision = MEMEST_FP32;
    eo.seed = o.seed;
    if ((st = exec_create(model, &eo, false, &t->ex, diag)) != PROF_OK) {
        goto fail;
    }
    t->nl = t->ex->nlayers;
    t->batch = t->ex->batch;
    t->sample_n = t->ex->input_n / t->batch;
    t->classes = t->ex->output_n / t->batch;
    t->L = calloc(t->nl, sizeof *t->L);
    if (!t->L) {
        st = PROF_E_NOMEM;
        goto fail;
    }
    for (size_t i = 0; i < t->nl; i++) {
        t->L[i].op = &t->ex->ops[i];
    }
    t->nt = t->nl + 1;
    t->gp = calloc(t->nt, sizeof *t->gp);
    t->held = calloc(t->nt, sizeof *t->held);
    t->started = calloc(t->nt, sizeof *t->started);
    if (!t->gp || !t->held || !t->started) {
        st = PROF_E_NOMEM;
        goto fail;
    }
    if ((st = check_layers(t, diag)) != PROF_OK ||
        (st = alloc_buffers(t, diag)) != PROF_OK ||
        (st = check_memory(t, diag)) != PROF_OK) {
        goto fail;
    }
    kern_loss_scaler_init(&t->scaler);
    t->grad_scale = 1.0f;
    if (t->prec == MEMEST_FP16 &&
        kern_loss_scaler_config(&t->scaler, (float)o.loss_scale, 1.0f,
                                65536.0f, 2.0f, 0.5f, 2000) != KERN_OK) {
        st = PROF_E_RANGE;
        goto fail;
    }
    if (kern_set_threads((int)o.threads) != KERN_OK) {
        st = PROF_E_RANGE;
        goto fail;
    }
    *out = t;
    return PROF_OK;
fail:
    prof_train_destroy(t);
    if (st == PROF_E_NOMEM && (!diag || !diag->message[0])) {
        say_training_memory(model, &o, NULL, diag);
    }
    return st;
}

PROF_API void prof_train_destroy(prof_train *t)
{
    if (!t) {
        return;
    }
    if (t->L) {
        for (size_t i = 0; i < t->nl; i++) {
            free(t->L[i].y);
            free(t->L[i].pre);
            free(t->L[i].bn_stat);
            free(t->L[i].bn_run);
            free(t->L[i].z);
        }
    }
    free(t->L);
    free(t->x0);
    free(t->gammas);
    free(t->grad);
    free(t->state);
    free(t->garena);
    free(t->ghold);
    free(t->gstage);
    free(t->gp);
    free(t->held);
    free(t->started);
    free(t->xs_in);
    free(t->gxs);
    free(t->gx_add);
    free(t->labels);
    free(t->xs);
    free(t->dxs);
    free(t->ys);
    free(t->dys);
    free(t->gs);
    free(t->zs);
    free(t->events);
    prof_exec_destroy(t->ex);
    free(t);
}

PROF_API const memest_model *prof_train_model(const prof_train *t)
{
    return t ? t->model : NULL;
}

PROF_API const struct prof_train_opts *prof_train_options(const prof_train *t)
{
    return t ? &t->opts : NULL;
}

PROF_API size_t prof_train_sample_size(const prof_train *t)
{
    return t ? t->sample_n : 0;
}

PROF_API int prof_train_memory(const prof_train *t,
                               struct prof_train_memory *out)
{
    if (!t || !out) {
        return PROF_E_INVALID;
    }
    *out = t->mem;
    return PROF_OK;
}

/* ---- forward ---------------------------------------------------------------- */

/* The batch norm folded into layer l. */
static struct exec_bn fbn_of(const prof_train *t, const struct tlayer *l)
{
    const struct exec_op *op = l->op;
    return (struct exec_bn){t->batch,         op->c_out,
                            op->hw_out,       op->layer->bn_epsilon,
                            l->gamma,         op->b};
}

/* Layer i in float before its fused activation: the executor's operator
 * on x, but an add or concat on its inputs' buffers (fp32 only) and a
 * batch norm in training mode or on its running statistics. */
static int linear_f32(prof_train *t, size_t i, const float *x, float *y)
{
    const struct tlayer *l = &t->L[i];
    const struct exec_op *op = l->op;
    const struct memest_layer *L = op->layer;
    if (is_join(L)) {
        for (size_t k = 0; k < L->input_count; k++) {
            t->xs_in[k] = act_ptr(t, L->inputs[k]);
        }
        return L->kind == MEMEST_KIND_ADD
                   ? exec_add_train_f32(t->ex, op, t->xs_in, y)
               : L->kind == MEMEST_KIND_MATMUL
                   ? exec_matmul_train_f32(t->ex, op, t->xs_in, y)
                   : exec_concat_train_f32(t->ex, op, t->xs_in, y);
    }
    if (L->kind == MEMEST_KIND_BATCHNORM) {
        const struct exec_bn bn = exec_bn_of(t->ex, op);
        return t->training ? exec_bn_train(&bn, x, y, l->bn_stat, l->bn_run)
                           : exec_bn_eval(&bn, x, y, l->bn_run);
    }
    if (l->fbn) {
        /* the layer without bias into z (with 16-bit storage, in float,
         * then stored for the backward pass), then its batch norm */
        float *z = t->narrow ? t->zs : l->z;
        const struct exec_f32_args a = {x, op->w, NULL, NULL, z, false};
        const struct exec_bn bn = fbn_of(t, l);
        int st = op->vt->run_f32(t->ex, op, &a);
        if (st == PROF_OK && t->narrow) {
            st = exec_narrow16(t->prec, l->z, z, op->out_n);
        }
        if (st != PROF_OK) {
            return st;
        }
        return t->training ? exec_bn_train(&bn, z, y, l->bn_stat, l->bn_run)
                           : exec_bn_eval(&bn, z, y, l->bn_run);
    }
    return exec_linear_f32(t->ex, op, x, y);
}

/* Layer i in float: x in, y out (op->out_n floats), pre the pre-activation
 * of a fused gelu (may equal NULL otherwise). The loss softmax is left to
 * the loss: its layer outputs logits. */
static int forward_f32(prof_train *t, size_t i, const float *x, float *y,
                       float *pre)
{
    const struct tlayer *l = &t->L[i];
    const struct exec_op *op = l->op;
    const struct memest_layer *L = op->layer;
    int st;
    if (L->kind == MEMEST_KIND_ACTIVATION && l->loss_softmax) {
        memcpy(y, x, op->out_n * sizeof(float));
        return PROF_OK;
    }
    /* an activation layer's act is its function, which the operator
     * applies; any other layer's is fused after it */
    if (L->kind == MEMEST_KIND_ACTIVATION || l->loss_softmax ||
        L->act == MEMEST_ACT_NONE) {
        return linear_f32(t, i, x, y);
    }
    if (exec_act_keeps_pre(L->act)) {
        if ((st = linear_f32(t, i, x, pre)) != PROF_OK) {
            return st;
        }
        return exec_act_f32(t->ex, op, L->act, pre, y);
    }
    if ((st = linear_f32(t, i, x, y)) != PROF_OK) {
        return st;
    }
    return exec_act_f32(t->ex, op, L->act, y, y);
}

/* Layer i with 16-bit storage: widen, compute in float, round back. */
static int forward_16(prof_train *t, size_t i)
{
    const struct tlayer *l = &t->L[i];
    const struct exec_op *op = l->op;
    const uint16_t *x = act_ptr(t, in_tensor(t, i));
    int st;
    if (passes_through(op->layer) ||
        (op->layer->kind == MEMEST_KIND_ACTIVATION && l->loss_softmax)) {
        memcpy(l->y, x, op->out_n * sizeof(uint16_t));
        return PROF_OK;
    }
    if ((st = exec_widen16(t->prec, t->xs, x, op->in_n)) != PROF_OK) {
        return st;
    }
    /* A fused gelu's pre-activation goes through dys, free until the
     * backward pass. */
    if ((st = forward_f32(t, i, t->xs, t->ys, t->dys)) != PROF_OK) {
        return st;
    }
    if (l->pre && (st = exec_narrow16(t->prec, l->pre, t->dys,
                                      op->out_n)) != PROF_OK) {
        return st;
    }
    return exec_narrow16(t->prec, l->y, t->ys, op->out_n);
}

static int forward(prof_train *t)
{
    int st = PROF_OK;
    for (size_t i = 0; st == PROF_OK && i < t->nl; i++) {
        if (t->narrow) {
            st = forward_16(t, i);
        } else {
            st = forward_f32(t, i, act_ptr(t, in_tensor(t, i)), t->L[i].y,
                             t->L[i].pre);
        }
    }
    return st;
}

/* The logits of the batch in float: the last tensor itself, or widened
 * into ys. */
static int logits_f32(prof_train *t, const float **out)
{
    const struct tlayer *last = &t->L[t->nl - 1];
    if (!t->narrow) {
        *out = last->y;
        return PROF_OK;
    }
    *out = t->ys;
    return exec_widen16(t->prec, t->ys, last->y, last->op->out_n);
}

static size_t count_correct(const prof_train *t, const float *logits,
                            size_t rows)
{
    size_t correct = 0;
    for (size_t r = 0; r < rows; r++) {
        const float *z = logits + r * t->classes;
        size_t best = 0;
        for (size_t c = 1; c < t->classes; c++) {
            if (z[c] > z[best]) {
                best = c;
            }
        }
        correct += best == (size_t)t->labels[r];
    }
    return correct;
}

/* ---- backward ---------------------------------------------------------------- */

/* Layer i backward in float through its kind's backward_f32: g the
 * gradient of its output (overwritten with that of the pre-activation),
 * gx that of its input (NULL for the first layer), gw and gb of its
 * parameters; x, y, pre its forward tensors (pre only for a fused gelu).
 * check_trainable refused every kind without one. */
static int backward_f32(prof_train *t, size_t i, const float *x,
                        const float *y, const float *pre, float *g, float *gx,
                        float *gw, float *gb)
{
    const struct tlayer *l = &t->L[i];
    if (l->fbn) {
        /* the activation, the batch norm (dbeta into the bias's place),
         * then the layer, without bias, on z's gradient (in place) */
        const struct exec_grad_args act = {
            .y = y, .pre = pre, .g = g, .loss_softmax = l->loss_softmax};
        const struct exec_bn bn = fbn_of(t, l);
        /* 16-bit: z widened into zs, gamma's gradient after the
         * layer's in the float staging (backward_16 stores them) */
        const float *z = t->narrow ? t->zs : l->z;
        float *gg = t->narrow ? gb + l->op->bn : l->gg;
        int st = exec_fused_act_backward(l->op, &act);
        if (st == PROF_OK) {
            st = exec_bn_backward(&bn, z, g, l->bn_stat, g, gg, gb);
        }
        if (st != PROF_OK) {
            return st;
        }
        const struct exec_grad_args a = {
            .x = x, .g = g, .gx = gx, .gw = gw, .act_done = true};
        return l->op->vt->backward_f32(t->ex, l->op, &a);
    }
    const struct exec_grad_args a = {.x = x,
                                     .y = y,
                                     .pre = pre,
                                     .g = g,
                                     .gx = gx,
                                     .gw = gw,
                                     .gb = gb,
                                     .loss_softmax = l->loss_softmax,
                                     .stat = l->bn_stat};
    return l->op->vt->backward_f32(t->ex, l->op, &a);
}

/* Layer j backward in fp32 on the graph: the gradient of its output is
 * whole (every reader, later in the model, has run); each input's share
 * is written when it is the first, else added: an add or concat adds it
 * itself, any other layer writes it into the staging buffer, which is
 * then added. */
static int backward_graph(prof_train *t, size_t j)
{
    const struct tlayer *l = &t->L[j];
    const struct memest_layer *L = l->op->layer;
    float *g = grad_ptr(t, j + 1);
    if (is_join(L)) {
        for (size_t k = 0; k < L->input_count; k++) {
            const size_t s = L->inputs[k];
            t->xs_in[k] = act_ptr(t, s);
            t->gxs[k] = s > 0 ? grad_ptr(t, s) : NULL;
            t->gx_add[k] = s > 0 && t->started[s];
            t->started[s] = true;
        }
        const struct exec_grad_args a = {.y = l->y,
                                         .pre = l->pre,
                                         .g = g,
                                         .loss_softmax = l->loss_softmax,
                                         .gxs = t->gxs,
                                         .gx_add = t->gx_add,
                                         .xs = (const float *const *)t->xs_in};
        return l->op->vt->backward_f32(t->ex, l->op, &a);
    }
    const size_t s = L->inputs[0];
    const bool add = s > 0 && t->started[s];
    float *gx = s == 0 ? NULL : add ? (float *)t->gstage : grad_ptr(t, s);
    t->started[s] = true;
    int st = backward_f32(t, j, act_ptr(t, s), l->y, l->pre, g, gx, l->gw,
                          l->gb);
    if (st == PROF_OK && add) {
        const float *pair[2] = {grad_ptr(t, s), gx};
        st = kst(kern_nn_add_f32(grad_ptr(t, s), pair, 2, act_n(t, s)));
    }
    return st;
}

/* Which forward tensors layer i's backward reads. */
static unsigned backward_reads(const struct tlayer *l)
{
    const struct exec_op_vtable *vt = l->op->vt;
    return vt->backward_reads ? vt->backward_reads(l->op, l->loss_softmax)
                              : 0u;
}

static int backward_16(prof_train *t, size_t i)
{
    const struct tlayer *l = &t->L[i];
    const struct exec_op *op = l->op;
    const enum memest_precision p = t->prec;
    const bool has_gx = i > 0;
    int st;
    if (passes_through(op->layer) ||
        (op->layer->kind == MEMEST_KIND_ACTIVATION && l->loss_softmax)) {
        if (has_gx) {
            memcpy(grad_ptr(t, i), grad_ptr(t, i + 1),
                   op->in_n * sizeof(uint16_t));
        }
        return PROF_OK;
    }
    if (!has_gx && op->wn == 0) {
        return PROF_OK;
    }
    if ((st = exec_widen16(p, t->dys, grad_ptr(t, i + 1), op->out_n)) !=
            PROF_OK ||
        ((backward_reads(l) & EXEC_READS_X) &&
         (st = exec_widen16(p, t->xs, act_ptr(t, in_tensor(t, i)),
                            op->in_n)) != PROF_OK) ||
        ((backward_reads(l) & EXEC_READS_Y) &&
         (st = exec_widen16(p, t->ys, l->y, op->out_n)) != PROF_OK) ||
        (l->pre &&
         (st = exec_widen16(p, t->ys, l->pre, op->out_n)) != PROF_OK) ||
        (l->fbn &&
         (st = exec_widen16(p, t->zs, l->z, op->out_n)) != PROF_OK)) {
        return st;
    }
    st = backward_f32(t, i, t->xs, t->ys, t->ys, t->dys,
                      has_gx ? t->dxs : NULL, t->gs, t->gs + op->wn);
    if (st == PROF_OK && has_gx) {
        st = exec_narrow16(p, grad_ptr(t, i), t->dxs, op->in_n);
    }
    if (st == PROF_OK && op->wn) {
        st = exec_narrow16(p, l->gw, t->gs, op->wn);
        if (st == PROF_OK && op->bn) {
            st = exec_narrow16(p, l->gb, t->gs + op->wn, op->bn);
        }
        if (st == PROF_OK && l->fbn) {
            st = exec_narrow16(p, l->gg, t->gs + op->wn + op->bn, op->c_out);
        }
    }
    return st;
}

static int backward(prof_train *t)
{
    memset(t->started, 0, t->nt * sizeof *t->started);
    for (size_t j = t->nl; j-- > 0;) {
        int st;
        if (t->narrow) {
            st = backward_16(t, j); /* chains only (check_trainable) */
        } else {
            st = backward_graph(t, j);
        }
        if (st != PROF_OK) {
            return st;
        }
    }
    return PROF_OK;
}

/* ---- the optimiser --------------------------------------------------------- */

static int update(prof_train *t, float *w, const float *g, float *s1,
                  float *s2, size_t n)
{
    const struct prof_train_opts *o = &t->opts;
    switch (o->optimizer) {
    case MEMEST_OPT_SGD:
        return kst(kern_nn_sgd_f32(w, g, NULL, n, (float)o->alpha, 0.0f,
                                   0.0f));
    case MEMEST_OPT_MOMENTUM:
        return kst(kern_nn_sgd_f32(w, g, s1, n, (float)o->alpha,
                                   (float)o->momentum, 0.0f));
    case MEMEST_OPT_ADAM:
        return kst(kern_nn_adam_f32(w, g, s1, s2, n, o->alpha, o->adam_beta1,
                                    o->adam_beta2, o->adam_eps, t->adam_t));
    default:
        return PROF_E_INVALID;
    }
}

/* Layer l's gradients in float: the fp32 ones in place, the 16-bit ones
 * widened into gs and unscaled (fp16). */
static int layer_grads(prof_train *t, const struct tlayer *l, float **gw,
                       float **gb, float **gg)
{
    const size_t wn = l->op->wn, bn = l->op->bn;
    const size_t gn = l->fbn ? l->op->c_out : 0;
    if (!t->narrow) {
        *gw = l->gw;
        *gb = l->gb;
        *gg = l->fbn ? l->gg : NULL;
        return PROF_OK;
    }
    int st = exec_widen16(t->prec, t->gs, l->gw, wn);
    if (st == PROF_OK) {
        st = exec_widen16(t->prec, t->gs + wn, l->gb, bn);
    }
    if (st == PROF_OK && gn) {
        st = exec_widen16(t->prec, t->gs + wn + bn, l->gg, gn);
    }
    if (st == PROF_OK && t->prec == MEMEST_FP16) {
        st = kst(kern_scale_f32(t->gs, wn + bn + gn, 1.0f / t->grad_scale));
    }
    *gw = t->gs;
    *gb = t->gs + wn;
    *gg = gn ? t->gs + wn + bn : NULL;
    return st;
}

static bool grads_finite(prof_train *t, int *st)
{
    for (size_t i = 0; i < t->nl; i++) {
        const struct tlayer *l = &t->L[i];
        float *gw, *gb, *gg;
        if (l->op->wn == 0) {
            continue;
        }
        if ((*st = layer_grads(t, l, &gw, &gb, &gg)) != PROF_OK) {
            return false;
        }
        if (!kern_all_finite_f32(gw, l->op->wn) ||
            !kern_all_finite_f32(gb, l->op->bn) ||
            (gg && !kern_all_finite_f32(gg, l->op->c_out))) {
            return false;
        }
    }
    return true;
}

static int push_event(prof_train *t, bool skipped)
{
    if (t->n_events == t->cap_events) {
        const size_t cap = t->cap_events ? 2 * t->cap_events : 16;
        void *p = realloc(t->events, cap * sizeof *t->events);
        if (!p) {
            return PROF_E_NOMEM;
        }
        t->events = p;
        t->cap_events = cap;
    }
    t->events[t->n_events++] = (struct prof_train_scale_event){
        .step = t->steps_done, .scale = t->scaler.scale, .skipped = skipped};
    return PROF_OK;
}

/* After backward: decide (fp16: the loss scaler) and apply the step.
 * *applied says whether the weights moved. */
static int step(prof_train *t, bool loss_finite, bool *applied)
{
    int st = PROF_OK;
    *applied = false;
    if (t->prec == MEMEST_FP16) {
        const float before = t->scaler.scale;
        const bool finite = loss_finite && grads_finite(t, &st);
        if (st != PROF_OK) {
            return st;
        }
        const bool apply = kern_loss_scaler_update(&t->scaler, finite);
        if ((!apply || t->scaler.scale != before) &&
            (st = push_event(t, !apply)) != PROF_OK) {
            return st;
        }
        if (!apply) {
            return PROF_OK;
        }
    } else if (!loss_finite) {
        return PROF_E_RANGE; /* diverged: no scaler to recover */
    }
    t->adam_t++;
    for (size_t i = 0; i < t->nl; i++) {
        const struct tlayer *l = &t->L[i];
        struct exec_op *op = l->op;
        float *gw, *gb, *gg;
        if (op->wn == 0) {
            continue;
        }
        if ((st = layer_grads(t, l, &gw, &gb, &gg)) != PROF_OK ||
            (st = update(t, op->w, gw, l->s1w, l->s2w, op->wn)) != PROF_OK ||
            (st = update(t, op->b, gb, l->s1b, l->s2b, op->bn)) != PROF_OK) {
            return st;
        }
        /* a folded batch norm's gamma */
        if (gg && (st = update(t, l->gamma, gg, l->s1g, l->s2g,
                               op->c_out)) != PROF_OK) {
            return st;
        }
    }
    *applied = true;
    return PROF_OK;
}

/* ---- batches ------------------------------------------------------------------ */

/* Copy rows idx[0..rows) of x into the input tensor (narrowed with 16-bit
 * storage) and their labels; rows past `rows` up to the batch are zero. */
static int gather(prof_train *t, const float *x, const uint8_t *y,
                  const uint32_t *idx, size_t first, size_t rows)
{
    const size_t n = t->sample_n;
    for (size_t r = 0; r < rows; r++) {
        const size_t s = idx ? idx[first + r] : first + r;
        const float *src = x + s * n;
        if (y[s] >= t->classes) {
            return PROF_E_RANGE;
        }
        t->labels[r] = y[s];
        if (t->narrow) {
            int st = exec_narrow16(t->prec, (uint16_t *)t->x0 + r * n, src, n);
            if (st != PROF_OK) {
                return st;
            }
        } else {
            memcpy((float *)t->x0 + r * n, src, n * sizeof(float));
        }
    }
    if (rows < t->batch) {
        memset((unsigned char *)t->x0 + rows * n * t->sb, 0,
               (t->batch - rows) * n * t->sb);
        for (size_t r = rows; r < t->batch; r++) {
            t->labels[r] = 0;
        }
    }
    return PROF_OK;
}

/* Ask for rows [r0, r1) of the next batch while this one computes: in a
 * shuffled order the rows are scattered over the whole data set, so
 * without it the gather waits on main memory at every row (measured: 10%
 * of an fp32 epoch of mlp:784-64-10). The step asks for a quarter of the
 * rows at each of four points, so that the requests overlap its products:
 * a whole batch in one burst fills the core's miss buffers and stalls
 * (measured: 6% of the epoch). */
static void prefetch_rows(const prof_train *t, const float *x,
                          const uint32_t *idx, size_t first, size_t part)
{
    if (!idx) {
        return;
    }
    const size_t bytes = t->sample_n * sizeof(float);
    const size_t r0 = t->batch * part / 4, r1 = t->batch * (part + 1) / 4;
    for (size_t r = r0; r < r1; r++) {
        const char *row = (const char *)(x + (size_t)idx[first + r] *
                                                 t->sample_n);
        for (size_t off = 0; off < bytes; off += 64) {
            __builtin_prefetch(row + off, 0, 2);
        }
    }
}

/* Loss and the gradient of the logits (times the loss scale for fp16),
 * stored at the storage precision as the last tensor's gradient. */
static int loss_grad(prof_train *t, const float *logits, float *loss)
{
    const size_t n = t->batch * t->classes;
    float *g = t->narrow ? t->dys : grad_ptr(t, t->nl);
    int k = kern_nn_softmax_xent_f32(logits, t->labels, t->batch, t->classes,
                                     loss, g);
    if (k != KERN_OK) {
        return kst(k);
    }
    if (!t->narrow) {
        return PROF_OK;
    }
    if (t->prec == MEMEST_FP16) {
        t->grad_scale = t->scaler.scale;
        if ((k = kern_scale_f32(g, n, t->grad_scale)) != KERN_OK) {
            return kst(k);
        }
    }
    return exec_narrow16(t->prec, grad_ptr(t, t->nl), g, n);
}

PROF_API int prof_train_epoch(prof_train *t, const float *x, const uint8_t *y,
                              uint64_t count, prof_train_progress_fn progress,
                              void *ctx, struct prof_train_epoch_result *out)
{
    if (!t || !x || !y || !out) {
        return PROF_E_INVALID;
    }
    memset(out, 0, sizeof *out);
    if (count < t->batch || count > UINT32_MAX) {
        return PROF_E_RANGE;
    }
    const uint64_t t0 = prof_now_ns();
    const uint64_t epoch = ++t->epochs_done;
    uint32_t *perm = malloc((size_t)count * sizeof *perm);
    if (!perm) {
        return PROF_E_NOMEM;
    }
    /* Fisher-Yates, the one SplitMix64 seeded from the seed and the epoch;
     * j = floor(r * (i + 1) / 2^64) (Lemire's multiply-shift) takes the
     * top bits, where a modulo would take the bottom ones. */
    uint64_t rng = t->opts.seed ^ (epoch * UINT64_C(0xD1B54A32D192ED03));
    for (uint64_t i = 0; i < count; i++) {
        perm[i] = (uint32_t)i;
    }
    for (uint64_t i = count - 1; i > 0; i--) {
        const uint64_t j = wide_mulhi_64(prof_splitmix64(&rng), i + 1);
        const uint32_t tmp = perm[i];
        perm[i] = perm[j];
        perm[j] = tmp;
    }

    const uint64_t steps = count / t->batch;
    t->training = true;
    double loss_sum = 0.0;
    uint64_t applied_steps = 0, correct = 0, run = 0;
    int st = PROF_OK;
    for (uint64_t s = 0; s < steps; s++) {
        const float *logits;
        float loss;
        bool applied;
        t->steps_done++;
        if ((st = gather(t, x, y, perm, (size_t)(s * t->batch), t->batch)) !=
            PROF_OK) {
            break;
        }
        const uint32_t *next = s + 1 < steps ? perm : NULL;
        const size_t nf = (size_t)((s + 1) * t->batch);
        prefetch_rows(t, x, next, nf, 0);
        if ((st = forward(t)) != PROF_OK ||
            (st = logits_f32(t, &logits)) != PROF_OK) {
            break;
        }
        prefetch_rows(t, x, next, nf, 1);
        const size_t ok = count_correct(t, logits, t->batch);
        if ((st = loss_grad(t, logits, &loss)) != PROF_OK ||
            (st = backward(t)) != PROF_OK) {
            break;
        }
        prefetch_rows(t, x, next, nf, 2);
        if ((st = step(t, isfinite(loss), &applied)) != PROF_OK) {
            break;
        }
        prefetch_rows(t, x, next, nf, 3);
        run++;
        if (applied) {
            applied_steps++;
            loss_sum += loss;
            correct += ok;
        }
        if (progress) {
            progress(ctx, s + 1, steps,
                     applied_steps ? loss_sum / (double)applied_steps : NAN);
        }
    }
    free(perm);
    t->training = false;
    out->epoch = epoch;
    out->steps = run; /* = steps unless a step failed */
    out->skipped_steps = run - applied_steps;
    out->loss = applied_steps ? loss_sum / (double)applied_steps : NAN;
    out->train_accuracy =
        applied_steps ? (double)correct / (double)(applied_steps * t->batch)
                      : 0.0;
    out->loss_scale = t->prec == MEMEST_FP16 ? t->scaler.scale : 1.0;
    out->seconds = (double)(prof_now_ns() - t0) * 1e-9;
    return st;
}

PROF_API int prof_train_evaluate(prof_train *t, const float *x,
                                 const uint8_t *y, uint64_t count,
                                 double *accuracy, double *loss)
{
    if (!t || !x || !y || count == 0) {
        return PROF_E_INVALID;
    }
    double loss_sum = 0.0;
    uint64_t correct = 0;
    t->training = false; /* batch norms on their running statistics */
    for (uint64_t first = 0; first < count; first += t->batch) {
        const size_t rows = (size_t)(count - first < t->batch ? count - first
                                                              : t->batch);
        const float *logits;
        float l;
        int st = gather(t, x, y, NULL, (size_t)first, rows);
        if (st == PROF_OK) {
            st = forward(t);
        }
        if (st == PROF_OK) {
            st = logits_f32(t, &logits);
        }
        if (st != PROF_OK) {
            return st;
        }
        correct += count_correct(t, logits, rows);
        /* the mean over the real rows only; the gradient is not needed */
        st = kst(kern_nn_softmax_xent_f32(logits, t->labels, rows, t->classes,
                                          &l, NULL));
        if (st != PROF_OK) {
            return st;
        }
        loss_sum += (double)l * (double)rows;
    }
    if (accuracy) {
        *accuracy = (double)correct / (double)count;
    }
    if (loss) {
        *loss = loss_sum / (double)count;
    }
    return PROF_OK;
}

PROF_API size_t prof_train_scale_events(
    const prof_train *t, const struct prof_train_scale_event **events)
{
    if (events) {
        *events = t ? t->events : NULL;
    }
    return t ? t->n_events : 0;
}

/* The layer of a batch norm, standalone or folded into it, or NULL. */
static const struct tlayer *bn_layer(const prof_train *t, size_t layer)
{
    if (!t || layer >= t->nl) {
        return NULL;
    }
    const struct tlayer *l = &t->L[layer];
    return l->fbn || l->op->layer->kind == MEMEST_KIND_BATCHNORM ? l : NULL;
}

/* Its gamma (beta is the layer's bias). */
static float *bn_gamma(const struct tlayer *l)
{
    return l->fbn ? l->gamma : l->op->w;
}

PROF_API int prof_train_get_params(const prof_train *t, size_t layer,
                                   float *weight, size_t n_weight, float *bias,
                                   size_t n_bias)
{
    if (!t) {
        return PROF_E_INVALID;
    }
    const struct tlayer *l = bn_layer(t, layer);
    int st = prof_exec_get_params(t->ex, layer, weight, n_weight, bias,
                                  n_bias);
    if (!l || st != PROF_OK) {
        return st;
    }
    /* folded as libmemest folds PyTorch's tensors: scale = gamma /
     * sqrt(var + eps); a standalone batch norm's weight is the scale and
     * its bias beta - mean scale; a layer's weights of channel c scale by
     * scale[c] and its bias (none before the fold) becomes beta - mean
     * scale */
    const struct exec_op *op = l->op;
    const size_t C = op->c_out, per = n_weight / C;
    const float *gamma = bn_gamma(l);
    for (size_t c = 0; c < C; c++) {
        const double scale = gamma[c] / sqrt((double)l->bn_run[C + c] +
                                             op->layer->bn_epsilon);
        if (l->fbn) {
            for (size_t k = 0; k < per; k++) {
                weight[c * per + k] = (float)(weight[c * per + k] * scale);
            }
        } else {
            weight[c] = (float)scale;
        }
        if (bias) {
            bias[c] = (float)(op->b[c] - l->bn_run[c] * scale);
        }
    }
    return PROF_OK;
}

PROF_API int prof_train_get_unfolded_weight(const prof_train *t,
                                            size_t layer, float *weight,
                                            size_t n_weight)
{
    if (!t || !weight || layer >= t->nl) {
        return PROF_E_INVALID;
    }
    const struct exec_op *op = t->L[layer].op;
    if (!t->L[layer].fbn) {
        return PROF_E_INVALID;
    }
    if (n_weight != op->wn) {
        return PROF_E_RANGE;
    }
    for (size_t i = 0; i < n_weight; i++) {
        weight[i] = op->w[exec_w_slot(op, i)];
    }
    return PROF_OK;
}

PROF_API int prof_train_get_batchnorm(const prof_train *t, size_t layer,
                                      float *weight, float *bias,
                                      float *running_mean,
                                      float *running_var, size_t n)
{
    const struct tlayer *l = bn_layer(t, layer);
    if (!l || !weight || !bias || !running_mean || !running_var) {
        return PROF_E_INVALID;
    }
    const size_t C = l->op->c_out;
    if (n != C) {
        return PROF_E_RANGE;
    }
    memcpy(weight, bn_gamma(l), C * sizeof(float));
    memcpy(bias, l->op->b, C * sizeof(float));
    memcpy(running_mean, l->bn_run, C * sizeof(float));
    memcpy(running_var, l->bn_run + C, C * sizeof(float));
    return PROF_OK;
}

PROF_API int prof_train_set_batchnorm(prof_train *t, size_t layer,
                                      const float *weight, const float *bias,
                                      const float *running_mean,
                                      const float *running_var, size_t n)
{
    const struct tlayer *l = bn_layer(t, layer);
    if (!l || !weight || !bias || !running_mean || !running_var) {
        return PROF_E_INVALID;
    }
    const size_t C = l->op->c_out;
    if (n != C) {
        return PROF_E_RANGE;
    }
    for (size_t c = 0; c < C; c++) {
        if (!isfinite(weight[c]) || !isfinite(bias[c]) ||
            !isfinite(running_mean[c]) || !(running_var[c] >= 0.0f) ||
            !isfinite(running_var[c])) {
            return PROF_E_RANGE;
        }
    }
    memcpy(bn_gamma(l), weight, C * sizeof(float));
    memcpy(l->op->b, bias, C * sizeof(float));
    memcpy(l->bn_run, running_mean, C * sizeof(float));
    memcpy(l->bn_run + C, running_var, C * sizeof(float));
    return PROF_OK;
}

PROF_API int prof_train_get_batchnorm_grads(prof_train *t, size_t layer,
                                            float *weight, float *bias,
                                            size_t n)
{
    const struct tlayer *l = bn_layer(t, layer);
    if (!l || !weight || !bias) {
        return PROF_E_INVALID;
    }
    const size_t C = l->op->c_out;
    if (n != C) {
        return PROF_E_RANGE;
    }
    float *gw, *gb, *gg;
    int st = layer_grads(t, l, &gw, &gb, &gg);
    if (st != PROF_OK) {
        return st;
    }
    memcpy(weight, l->fbn ? gg : gw, C * sizeof(float));
    memcpy(bias, gb, C * sizeof(float));
    return PROF_OK;
}

PROF_API int prof_train_get_grads(prof_train *t, size_t layer,
                                  float *weight, size_t n_weight, float *bias,
                                  size_t n_bias)
{
    if (!t || !weight || layer >= t->nl || t->L[layer].op->wn == 0) {
        return PROF_E_INVALID;
    }
    const struct tlayer *l = &t->L[layer];
    const struct exec_op *op = l->op;
    if (n_weight != op->wn || n_bias != op->bn) {
        return PROF_E_RANGE;
    }
    float *gw, *gb, *gg;
    int st = layer_grads(t, l, &gw, &gb, &gg);
    if (st != PROF_OK) {
        return st;
    }
    for (size_t i = 0; i < n_weight; i++) {
        weight[i] = gw[exec_w_slot(op, i)];
    }
    if (bias && n_bias) {
        memcpy(bias, gb, n_bias * sizeof(float));
    }
    return PROF_OK;
}

PROF_API int prof_train_set_params(prof_train *t, size_t layer,
                                   const float *weight, size_t n_weight,
                                   const float *bias, size_t n_bias)
{
    if (!t) {
        return PROF_E_INVALID;
    }
    const struct tlayer *l = bn_layer(t, layer);
    int st = prof_exec_set_params(t->ex, layer, weight, n_weight, bias,
                                  n_bias);
    if (!l || st != PROF_OK) {
        return st;
    }
    /* folded values: the batch norm of running mean 0 and variance 1 that
     * gives them (as the trainer starts from a model's weights): a
     * standalone one's gamma is scale sqrt(1 + eps), a folded one's
     * gamma sqrt(1 + eps) on the folded weights; beta the bias */
    const struct exec_op *op = l->op;
    const double root = sqrt(1.0 + op->layer->bn_epsilon);
    for (size_t c = 0; c < op->c_out; c++) {
        if (l->fbn) {
            l->gamma[c] = (float)root;
        } else {
            op->w[c] = (float)((double)op->w[c] * root);
        }
        l->bn_run[c] = 0.0f;
        l->bn_run[op->c_out + c] = 1.0f;
    }
    return PROF_OK;
}
