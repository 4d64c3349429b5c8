/* Building an executor and what it answers about itself: the driver that
 * plans each layer through its kind's entry (exec/ops.h), checks
 * libmemest's arena plan, allocates the scratch and the parameters; its
 * destruction and the public queries. The public contract is in profile.h
 * (section "executor"). */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "edgefit/kernels.h"
#include "edgefit/profile.h"
#include "internal.h"
#include "exec/executor.h"
#include "exec/ops.h"
#include "../alloc_rec.h" /* last: it wraps malloc and co. */

static size_t shape_elements(const struct memest_shape *s)
{
    size_t n = 1;
    for (unsigned i = 0; i < s->rank; i++) {
        n *= (size_t)s->dim[i]; /* checked by libmemest when it was built */
    }
    return n;
}

void exec_diag_set(struct prof_diag *diag, const char *fmt, ...)
{
    if (!diag) {
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    diag->column = 0;
    vsnprintf(diag->message, sizeof diag->message, fmt, ap);
    va_end(ap);
}

int exec_diag_memest(struct prof_diag *diag, const char *what, int mst)
{
    if (mst == MEMEST_E_NOMEM) {
        exec_diag_set(diag, "out of memory: %s (%zu bytes)", what,
                      memest_nomem_bytes());
    } else {
        exec_diag_set(diag, "%s: %s", what, memest_strerror(mst));
    }
    return prof_of_memest(mst);
}

int exec_create_args(const memest_model *model, const void *out,
                     struct prof_diag *diag)
{
    if (diag) {
        diag->column = 0;
        diag->message[0] = '\0';
    }
    return model && out ? PROF_OK : PROF_E_INVALID;
}

PROF_API const char *prof_int8_requant_name(enum prof_int8_requant r)
{
    switch (r) {
    case PROF_INT8_REQUANT_FIXED:
        return "fixed";
    case PROF_INT8_REQUANT_FLOAT:
        return "float";
    case PROF_INT8_REQUANT_MODEL:
        return "model";
    }
    return NULL;
}

PROF_API int prof_int8_requant_parse(const char *s,
                                     enum prof_int8_requant *out)
{
    if (!s || !out) {
        return -1;
    }
    if (strcmp(s, "fixed") == 0) {
        *out = PROF_INT8_REQUANT_FIXED;
        return 0;
    }
    if (strcmp(s, "float") == 0) {
        *out = PROF_INT8_REQUANT_FLOAT;
        return 0;
    }
    if (strcmp(s, "model") == 0) {
        *out = PROF_INT8_REQUANT_MODEL;
        return 0;
    }
    return -1;
}

PROF_API enum prof_int8_requant
prof_int8_requant_of(const memest_model *model,
                     const struct prof_exec_opts *opts)
{
    struct prof_exec_opts d;
    if (!opts) {
        prof_exec_opts_init(&d);
        opts = &d;
    }
    if (opts->int8_requant != PROF_INT8_REQUANT_MODEL) {
        return opts->int8_requant;
    }
    /* the params a QDQ file gives were chosen for ONNX's QuantizeLinear
     * (round half to even), the runtime such a file is checked against */
    return !opts->ranges && model && memest_model_is_quantized(model) == 1
               ? PROF_INT8_REQUANT_FLOAT
               : PROF_INT8_REQUANT_FIXED;
}

PROF_API void prof_exec_opts_init(struct prof_exec_opts *opts)
{
    if (!opts) {
        return;
    }
    /* every field, those added later too (ranges: none) */
    memset(opts, 0, sizeof *opts);
    opts->batch = 1;
    opts->precision = MEMEST_FP32;
    opts->seed = 42;
    opts->plan_bytes = 0;
    opts->threads = 1;
    opts->thread_min_macs = PROF_EXEC_THREAD_MIN_MACS;
    opts->channel_blocked = 1;
    /* no calibration: static int8 then needs a QDQ model's own params */
    opts->ranges = NULL;
    /* ONNX Runtime's output stage for a QDQ model's own params, TFLite's
     * integer-only one for edgefit's calibration */
    opts->int8_requant = PROF_INT8_REQUANT_MODEL;
}

void *exec_calloc(size_t n, size_t size)
{
    if (n == 0) {
        return NULL;
    }
    if (size != 0 && n > SIZE_MAX / size) {
        return NULL;
    }
    /* On a cache line, as the arena: calloc's 16-byte alignment varies
     * with where the allocator finds room, and a recurrent layer's 64-byte
     * loads of weights that straddled lines ran 12-26% slower in whichever
     * of two executors got them (the second one made, in the threads
     * table). */
    void *p = exec_alloc_aligned(n * size);
    if (p) {
        memset(p, 0, n * size);
    }
    return p;
}

/* 64-byte alignment keeps the arena's start on a cache line; the odd
 * tensors end at its end, so they are aligned to their element size. */
void *exec_alloc_aligned(size_t bytes)
{
    size_t rounded = (bytes + 63) & ~(size_t)63;
    if (rounded < bytes) {
        return NULL;
    }
    return aligned_alloc(64, rounded == 0 ? 64 : rounded);
}

PROF_API int prof_exec_create(const memest_model *model,
                     const struct prof_exec_opts *opts, prof_exec **out,
                     struct prof_diag *diag)
{
    return exec_create(model, opts, true, out, diag);
}

int exec_create(const memest_model *model, const struct prof_exec_opts *opts,
                bool with_arena, prof_exec **out, struct prof_diag *diag)
{
    struct prof_exec_opts o;
    struct memest_totals totals;
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
        prof_exec_opts_init(&o);
    }
    if (o.batch == 0) {
        exec_diag_set(diag, "the batch size must be at least 1");
        return PROF_E_RANGE;
    }
    if (o.threads < 1 || o.threads > KERN_MAX_THREADS) {
        exec_diag_set(diag, "%u threads: the executor runs on 1 to %d",
                      o.threads, KERN_MAX_THREADS);
        return PROF_E_RANGE;
    }
    if (o.precision != MEMEST_FP32 && o.precision != MEMEST_FP16 &&
        o.precision != MEMEST_BF16 && !memest_precision_is_int8(o.precision)) {
        exec_diag_set(diag, "precision %s is estimated but not executed (use "
                 "fp32, fp16, bf16 or int8)",
                 memest_precision_name(o.precision)
                     ? memest_precision_name(o.precision)
                     : "(unknown)");
        return PROF_E_RANGE;
    }
    if (!prof_int8_requant_name(o.int8_requant)) {
        exec_diag_set(diag, "int8_requant %d: neither fixed (%d), float "
                      "(%d) nor model (%d)", (int)o.int8_requant,
                      (int)PROF_INT8_REQUANT_FIXED,
                      (int)PROF_INT8_REQUANT_FLOAT,
                      (int)PROF_INT8_REQUANT_MODEL);
        return PROF_E_RANGE;
    }
    o.int8_requant = prof_int8_requant_of(model, &o);
    /* Every layer's kind has an operator, checked before libmemest is asked
     * for anything: its own refusal of an unknown kind would not name the
     * layer. */
    for (size_t i = 0; i < memest_model_layer_count(model); i++) {
        const struct memest_layer *L = memest_model_layer(model, i);
        if (!exec_op_find(L->kind)) {
            const char *kn = memest_kind_name(L->kind);
            exec_diag_set(diag, "%s: the executor has no operator for %s "
                          "layers", L->name, kn ? kn : "(unknown)");
            return PROF_E_UNSUPPORTED;
        }
    }
    int mst = memest_estimate_totals(model, o.batch, o.precision, &totals);
    if (mst != MEMEST_OK) {
        return exec_diag_memest(diag, "libmemest's estimate of the model",
                                mst);
    }

    /* An arena larger than the address space (a 32-bit board at a huge
     * batch) is the same failure as one the allocator refuses, said with
     * its size before any tensor's size_t count would overflow. */
    const uint64_t arena_need = totals.peak_inference_bytes -
                                totals.parameter_bytes;
    if (with_arena && arena_need > (uint64_t)SIZE_MAX) {
        exec_diag_set(diag, "out of memory: the activation arena of %llu "
                      "bytes (%.1f MB) for batch %llu at %s is larger than "
                      "this machine's %u-bit address space",
                      (unsigned long long)arena_need,
                      (double)arena_need / 1048576.0,
                      (unsigned long long)o.batch,
                      memest_precision_name(o.precision),
                      (unsigned)(sizeof(size_t) * 8));
        return PROF_E_NOMEM;
    }

    struct prof_exec *ex = calloc(1, sizeof *ex);
    if (!ex) {
        return PROF_E_NOMEM;
    }
    ex->model = model;
    ex->lowering = !with_arena;
    ex->precision = o.precision;
    ex->int8_requant = o.int8_requant;
    ex->threads = o.threads;
    ex->thread_min_macs = o.thread_min_macs;
    ex->sbytes = memest_precision_bytes(o.precision);
    ex->nlayers = memest_model_layer_count(model);
    ex->peak_inference_bytes = totals.peak_inference_bytes;
    ex->estimate_parameter_bytes = totals.parameter_bytes;
    if ((st = exec_u64_sz(o.batch, &ex->batch)) != PROF_OK) {
        goto fail;
    }
    /* Tensors: every model input, then every layer's output. */
    ex->ninputs = memest_model_input_count(model);
    ex->ntensors = memest_model_tensor_count(model);
    ex->t_off = calloc(ex->ntensors, sizeof *ex->t_off);
    ex->t_n = calloc(ex->ntensors, sizeof *ex->t_n);
    ex->t_bytes = calloc(ex->ntensors, sizeof *ex->t_bytes);
    ex->t_scale = calloc(ex->ntensors, sizeof *ex->t_scale);
    ex->t_zero = calloc(ex->ntensors, sizeof *ex->t_zero);
    ex->ops = calloc(ex->nlayers, sizeof *ex->ops);
    if (!ex->t_off || !ex->t_n || !ex->t_bytes || !ex->t_scale ||
        !ex->t_zero || !ex->ops) {
        st = PROF_E_NOMEM;
        goto fail;
    }
    for (size_t t = 0; t < ex->ntensors; t++) {
        struct memest_shape sh = memest_model_tensor_shape(model, t);
        if ((st = exec_mul_sz(ex->batch, shape_elements(&sh), &ex->t_n[t])) !=
                PROF_OK ||
            (st = exec_mul_sz(ex->t_n[t], ex->sbytes, &ex->t_bytes[t])) !=
                PROF_OK) {
            goto fail;
        }
    }
    ex->input_n = ex->t_n[0];
    ex->output_n = ex->t_n[ex->ntensors - 1];
    for (size_t i = 0; i < ex->nlayers; i++) {
        struct exec_op *op = &ex->ops[i];
        op->layer = memest_model_layer(model, i);
        op->index = i;
        op->vt = exec_op_find(op->layer->kind); /* checked above */
        if ((st = exec_plan_layer(ex, op, diag)) != PROF_OK) {
            goto fail;
        }
        if ((st = exec_mul_sz(op->in_n, ex->sbytes, &op->in_bytes)) != PROF_OK ||
            (st = exec_mul_sz(op->out_n, ex->sbytes, &op->out_bytes)) !=
                PROF_OK) {
            goto fail;
        }
    }

    /* Static int8's params, fixed before the weights are stored (their
     * int32 bias and multipliers need them). */
    if ((st = exec_s8_fix_params(ex, &o, diag)) != PROF_OK) {
        goto fail;
    }

    /* The estimate is checked, not assumed. */
    if (!with_arena) {
        goto params; /* the caller keeps the tensors */
    }
    struct memest_arena_plan plan;
    mst = memest_plan_arena(model, o.batch, o.precision, &plan);
    if (mst != MEMEST_OK) {
        st = exec_diag_memest(diag, "libmemest's arena plan", mst);
        goto fail;
    }
    uint64_t need = 0;
    st = exec_place_tensors(ex, &plan, &need, diag);
    const uint64_t plan_arena = plan.arena_bytes;
    memest_arena_plan_free(&plan);
    if (st != PROF_OK) {
        goto fail;
    }
    const uint64_t want = o.plan_bytes ? o.plan_bytes : arena_need;
    ex->plan_bytes = want;
    if (need != want || need != plan_arena) {
        exec_diag_set(diag, "the activations need %llu bytes (the tensors at "
                      "the planned offsets, at %s), but the plan gives %llu",
                      (unsigned long long)need,
                      memest_precision_name(o.precision),
                      (unsigned long long)(need != want ? want : plan_arena));
        st = PROF_E_MEMEST;
        goto fail;
    }
    if ((st = exec_u64_sz(need, &ex->arena_bytes)) != PROF_OK) {
        goto fail;
    }
    ex->arena = exec_alloc_aligned(ex->arena_bytes);
    if (!ex->arena) {
        /* the size and what it is for: at a large batch this is the
         * allocation that fails, and "out of memory" alone says nothing */
        exec_diag_set(diag, "out of memory: the activation arena of %llu "
                      "bytes (%.1f MB) for batch %llu at %s could not be "
                      "allocated", (unsigned long long)need,
                      (double)need / 1048576.0,
                      (unsigned long long)o.batch,
                      memest_precision_name(o.precision));
        st = PROF_E_NOMEM;
        goto fail;
    }
    memset(ex->arena, 0, ex->arena_bytes);

    if (o.precision == MEMEST_FP32 && o.channel_blocked &&
        (st = exec_plan_layouts(ex)) != PROF_OK) {
        goto fail;
    }

params:
    if ((st = exec_alloc_scratch(ex)) != PROF_OK) {
        if (st == PROF_E_NOMEM) {
            exec_diag_set(diag, "out of memory: the scratch buffers of "
                          "%llu bytes (%.1f MB) for batch %llu at %s could "
                          "not be allocated",
                          (unsigned long long)ex->scratch_bytes,
                          (double)ex->scratch_bytes / 1048576.0,
                          (unsigned long long)o.batch,
                          memest_precision_name(o.precision));
        }
        goto fail;
    }
    uint64_t rng = o.seed;
    for (size_t i = 0; i < ex->nlayers; i++) {
        struct exec_op *op = &ex->ops[i];
        if ((st = exec_alloc_params(ex, op)) != PROF_OK) {
            if (st == PROF_E_NOMEM) {
                exec_diag_set(diag, "out of memory: %s: its %llu "
                              "parameters could not be stored",
                              op->layer->name,
                              (unsigned long long)op->layer->parameter_count);
            }
            goto fail;
        }
        ex->parameter_bytes += op->stored_bytes;
        if (op->wn == 0) {
            continue;
        }
        if ((st = exec_init_params(ex, op, &rng)) != PROF_OK) {
            exec_diag_set(diag, "%s: storing the weights: %s",
                     op->layer->name, prof_strerror(st));
            goto fail;
        }
    }
    ex->splits = exec_any_split(ex);
    *out = ex;
    return PROF_OK;
fail:
    prof_exec_destroy(ex);
    return st;
}

PROF_API void prof_exec_destroy(prof_exec *ex)
{
    if (!ex) {
        return;
    }
    for (size_t i = 0; ex->ops && i < ex->nlayers; i++) {
        struct exec_op *op = &ex->ops[i];
        free(op->w);
        free(op->b);
        free(op->w16);
        free(op->b16);
        free(op->wpack);
        free(op->wkp);
        free(op->wscale);
        free(op->wpk);
        free(op->dwpk);
        free(op->wq8);
        free(op->bias32);
        free(op->wsum);
        free(op->mult);
        free(op->shift);
        free(op->fscale);
    }
    free(ex->ops);
    free(ex->t_off);
    free(ex->t_n);
    free(ex->t_bytes);
    free(ex->t_scale);
    free(ex->t_zero);
    free(ex->t_blk);
    free(ex->arena);
    free(ex->col32);
    free(ex->col8);
    free(ex->acc);
    free(ex->x32);
    free(ex->y32);
    free(ex->t32);
    free(ex->w32);
    free(ex->b32);
    free(ex);
}

PROF_API const memest_model *prof_exec_model(const prof_exec *ex)
{
    return ex ? ex->model : NULL;
}

PROF_API uint64_t prof_exec_batch(const prof_exec *ex)
{
    return ex ? (uint64_t)ex->batch : 0;
}

PROF_API enum memest_precision prof_exec_precision(const prof_exec *ex)
{
    return ex ? ex->precision : MEMEST_FP32;
}

PROF_API size_t prof_exec_input_count(const prof_exec *ex)
{
    return ex ? ex->input_n : 0;
}

PROF_API size_t prof_exec_output_count(const prof_exec *ex)
{
    return ex ? ex->output_n : 0;
}

PROF_API size_t prof_exec_input_tensors(const prof_exec *ex)
{
    return ex ? ex->ninputs : 0;
}

PROF_API size_t prof_exec_input_count_at(const prof_exec *ex, size_t k)
{
    return ex && k < ex->ninputs ? ex->t_n[k] : 0;
}

PROF_API int prof_exec_memory(const prof_exec *ex,
                              struct prof_exec_memory *out)
{
    if (!ex || !out) {
        return PROF_E_INVALID;
    }
    out->arena_bytes = ex->arena_bytes;
    out->plan_bytes = ex->plan_bytes;
    out->peak_inference_bytes = ex->peak_inference_bytes;
    out->estimate_parameter_bytes = ex->estimate_parameter_bytes;
    out->parameter_bytes = ex->parameter_bytes;
    out->master_bytes = ex->master_bytes;
    out->master_unread_bytes = ex->master_unread_bytes;
    out->scratch_bytes = ex->scratch_bytes;
    return PROF_OK;
}

PROF_API size_t prof_exec_op_count(const prof_exec *ex)
{
    return ex ? ex->nlayers + 1 : 0;
}

PROF_API int prof_exec_op_info(const prof_exec *ex, size_t i,
                      struct prof_exec_op_info *out)
{
    if (!ex || !out || i > ex->nlayers) {
        return PROF_E_INVALID;
    }
    memset(out, 0, sizeof *out);
    if (i == 0) {
        /* the caller's floats of every input, stored at their offsets */
        out->layer = "input";
        out->kind = MEMEST_KIND_INPUT;
        out->input_offset = 0;
        out->output_offset = ex->t_off[0];
        for (size_t k = 0; k < ex->ninputs; k++) {
            out->input_bytes += (uint64_t)ex->t_n[k] * sizeof(float);
            out->output_bytes += ex->t_bytes[k];
        }
        out->bytes_moved = out->input_bytes + out->output_bytes;
        out->threads = 1;
        return PROF_OK;
    }
    const struct exec_op *op = &ex->ops[i - 1];
    const struct memest_layer *L = op->layer;
    out->layer = L->name;
    out->kind = L->kind;
    out->input_offset = op->in_off;
    for (size_t j = 0; j < L->input_count; j++) {
        out->input_bytes += ex->t_bytes[L->inputs[j]];
    }
    out->output_offset = op->out_off;
    out->output_bytes = op->out_bytes;
    /* The counts libmemest reports, at this batch and storage precision;
     * they were checked for overflow by memest_estimate_totals(). */
    out->macs = L->macs_per_sample * (uint64_t)ex->batch;
    out->parameter_bytes = L->parameter_count * ex->sbytes;
    /* An alias (identity, dropout, flatten) reads and writes nothing. */
    out->bytes_moved =
        op->alias ? 0
                  : out->parameter_bytes + out->input_bytes +
                        out->output_bytes;
    out->scratch_bytes = op->scratch_bytes;
    out->threads = exec_op_threads(ex, op);
    out->output_layout = exec_t_blocked(ex, op->out_t) ? KERN_LAYOUT_NCHW8C
                                                  : KERN_LAYOUT_NCHW;
    return PROF_OK;
}

