/* The executor's parameters: the float master every layer with parameters
 * keeps, its stored form at the run's precision (16-bit copies here; what
 * fp32 and int8 kernels read, packed or quantised, through the kind's
 * alloc_stored and store), the initial draws, and the public get and set.
 * The int8 GEMM form shared by dense and conv2d is here too. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "edgefit/kernels.h"
#include "edgefit/profile.h"
#include "exec/executor.h"
#include "exec/ops.h"
#include "internal.h"
#include "../alloc_rec.h" /* last: it wraps malloc and co. */

/* Uniform in [-a, a): 24 random bits make u exact in float. */
static float uniform(uint64_t *state, double a)
{
    const double u = (double)(prof_splitmix64(state) >> 40) * 0x1p-24;
    return (float)((2.0 * u - 1.0) * a);
}

/* Where element i of a layer's weights, in the API's order
 * ([out][in] for dense), lives in op->w. */
size_t exec_w_slot(const struct exec_op *op, size_t i)
{
    if (!op->w_input_major) {
        return i;
    }
    return (i % op->kdim) * op->c_out + i / op->kdim;
}

void exec_init_uniform(struct exec_op *op, double fan_in, double fan_out,
                       uint64_t *rng)
{
    const double a = op->layer->act == MEMEST_ACT_RELU
                         ? sqrt(6.0 / fan_in)
                         : sqrt(6.0 / (fan_in + fan_out));
    for (size_t i = 0; i < op->wn; i++) {
        op->w[exec_w_slot(op, i)] = uniform(rng, a);
    }
    const double ab = 1.0 / sqrt(fan_in);
    for (size_t i = 0; i < op->bn; i++) {
        op->b[i] = uniform(rng, ab);
    }
}

/* The model's own weights, when it carries them, replace the drawn ones
 * (which were still drawn, so that every other layer's draws stay those
 * of the seed). A layer with weights but no bias array has zero bias. */
static void model_params(struct exec_op *op)
{
    const struct memest_layer *L = op->layer;
    if (!L->weight) {
        return;
    }
    for (size_t i = 0; i < op->wn; i++) {
        op->w[exec_w_slot(op, i)] = L->weight[i];
    }
    for (size_t i = 0; i < op->bn; i++) {
        op->b[i] = L->bias ? L->bias[i] : 0.0f;
    }
}

/* Derive the stored form of a layer's parameters from its master copy. */
static int store_params(prof_exec *ex, struct exec_op *op)
{
    int kst = KERN_OK;
    switch (ex->precision) {
    case MEMEST_FP32:
    case MEMEST_INT8:
    case MEMEST_INT8_DYNAMIC:
        return op->vt->store ? op->vt->store(ex, op) : PROF_OK;
    case MEMEST_FP16:
        kst = kern_f32_to_f16(op->w16, op->w, op->wn);
        if (kst == KERN_OK) {
            kst = kern_f32_to_f16(op->b16, op->b, op->bn);
        }
        break;
    case MEMEST_BF16:
        kst = kern_f32_to_bf16(op->w16, op->w, op->wn);
        if (kst == KERN_OK) {
            kst = kern_f32_to_bf16(op->b16, op->b, op->bn);
        }
        break;
    default:
        break;
    }
    return exec_kern_status(kst);
}

int exec_init_params(prof_exec *ex, struct exec_op *op, uint64_t *rng)
{
    op->vt->init_params(op, rng);
    model_params(op);
    return store_params(ex, op);
}

/* Static int8 of a model that carries its weights' scales (a QDQ file):
 * the weights quantised with them, round(w / scale[c]) (half to even,
 * saturated to int8), which gives back the file's int8 values, as the
 * model stores w = scale[c] * q. False when the layer carries none (then
 * max|w_c| / 127 per channel); when true, *kst is the quantisation's
 * libkernels status. */
static bool model_weight_scales(const prof_exec *ex, struct exec_op *op,
                                const float *rows, int8_t *q, int *kst)
{
    size_t n = 0;
    const float *s =
        exec_static_s8(ex)
            ? memest_model_weight_scales(ex->model, op->index, &n)
            : NULL;
    if (!s || n != op->c_out) {
        return false;
    }
    for (size_t c = 0; c < n; c++) {
        op->wscale[c] = s[c];
        /* the model checked its scales finite and > 0 when it recorded
         * them, so libkernels cannot refuse one */
        *kst = kern_q8_quantize_zp_f32(rows + c * op->kdim, op->kdim, s[c], 0,
                                       q + c * op->kdim);
        if (*kst != KERN_OK) {
            break;
        }
    }
    return true;
}

int exec_q8_store_gemm(prof_exec *ex, struct exec_op *op, const float *rows)
{
    /* Quantise all output channels at once (one scale each), then pack
     * each group's rows as its own N x K matrix. The int8 rows are staged
     * in the im2col scratch, which is at least as large. */
    int8_t *q = ex->wq_stage;
    int kst = KERN_OK;
    if (!model_weight_scales(ex, op, rows, q, &kst)) {
        kst = kern_q8_quantize_channels_f32(rows, op->c_out, op->kdim, q,
                                            op->wscale);
    }
    if (kst == KERN_OK && op->wq8) {
        memcpy(op->wq8, q, op->wn);
        return exec_s8_outstage_prep(ex, op);
    }
    for (size_t g = 0; kst == KERN_OK && g < op->groups; g++) {
        void *pk = (unsigned char *)op->wpack + g * op->wpack_group_bytes;
        kst = kern_q8_pack_weights(q + g * op->ocg * op->kdim, op->ocg,
                                   op->kdim, op->kdim, pk,
                                   op->wpack_group_bytes);
        /* static int8: the rows' sums, for the input's zero point */
        if (kst == KERN_OK && op->wsum) {
            kst = kern_q8_packed_row_sums(pk, op->wsum + g * op->ocg);
        }
    }
    if (kst == KERN_OK && op->wkp) {
        kst = kern_q8_pack_kp(op->c_out, op->kdim, q, op->kdim, op->wkp);
    }
    if (kst != KERN_OK) {
        return exec_kern_status(kst);
    }
    return exec_s8_outstage_prep(ex, op);
}

int exec_s8_alloc_stage(prof_exec *ex, struct exec_op *op, bool sums,
                        uint64_t *bytes)
{
    *bytes = 0;
    if (!exec_static_s8(ex)) {
        return PROF_OK;
    }
    const size_t C = op->c_out;
    op->bias32 = exec_calloc(C, sizeof *op->bias32);
    op->mult = exec_calloc(C, sizeof *op->mult);
    op->shift = exec_calloc(C, sizeof *op->shift);
    op->wsum = sums ? exec_calloc(C, sizeof *op->wsum) : NULL;
    const bool fl = ex->int8_requant == PROF_INT8_REQUANT_FLOAT;
    op->fscale = fl ? exec_calloc(C, sizeof *op->fscale) : NULL;
    if (!op->bias32 || !op->mult || !op->shift || (sums && !op->wsum) ||
        (fl && !op->fscale)) {
        return PROF_E_NOMEM;
    }
    /* int32 bias, multiplier, shift (and row sums, the float scales) per
     * output channel */
    *bytes = (uint64_t)C * (sizeof *op->bias32 + sizeof *op->mult +
                            sizeof *op->shift +
                            (sums ? sizeof *op->wsum : 0u) +
                            (fl ? sizeof *op->fscale : 0u));
    return PROF_OK;
}

int exec_q8_alloc_gemm(prof_exec *ex, struct exec_op *op)
{
    ex->master_unread_bytes += (uint64_t)(op->wn + op->bn) * sizeof(float);
    op->wpack_group_bytes = kern_q8_packed_bytes(op->ocg, op->kdim);
    size_t total;
    if (op->wpack_group_bytes == 0 ||
        exec_mul_sz(op->wpack_group_bytes, op->groups, &total) != PROF_OK) {
        return PROF_E_OVERFLOW;
    }
    op->wpack = malloc(total);
    op->wscale = exec_calloc(op->c_out, sizeof(float));
    if (!op->wpack || !op->wscale) {
        return PROF_E_NOMEM;
    }
    uint64_t stage = 0;
    const int st = exec_s8_alloc_stage(ex, op, true, &stage);
    if (st != PROF_OK) {
        return st;
    }
    /* packed weights, one scale per channel, and the float bias
     * (int8-dynamic) or static int8's output stage (int32 bias,
     * multipliers, shifts, row sums) */
    op->stored_bytes = (uint64_t)total +
                       (uint64_t)op->c_out * sizeof(float) +
                       (exec_static_s8(ex) ? stage
                                           : (uint64_t)op->bn * sizeof(float));
    return PROF_OK;
}

int exec_alloc_params(prof_exec *ex, struct exec_op *op)
{
    const enum memest_precision p = ex->precision;
    int st;
    if (op->wn == 0) {
        return PROF_OK;
    }
    op->w = exec_calloc(op->wn, sizeof(float));
    op->b = exec_calloc(op->bn, sizeof(float));
    if (!op->w || (op->bn && !op->b)) {
        return PROF_E_NOMEM;
    }
    ex->master_bytes += (uint64_t)(op->wn + op->bn) * sizeof(float);
    switch (p) {
    case MEMEST_FP32:
    case MEMEST_INT8:
    case MEMEST_INT8_DYNAMIC:
        /* the kind's packed or quantised form, or the master itself (an
         * fp32 dense layer, the trainer's convolutions, a batch norm,
         * which int8 computes in float) */
        op->stored_bytes = 0;
        if (op->vt->alloc_stored &&
            (st = op->vt->alloc_stored(ex, op)) != PROF_OK) {
            return st;
        }
        if (op->stored_bytes == 0) {
            op->stored_bytes = (uint64_t)(op->wn + op->bn) * sizeof(float);
        }
        break;
    case MEMEST_FP16:
    case MEMEST_BF16:
        ex->master_unread_bytes +=
            (uint64_t)(op->wn + op->bn) * sizeof(float);
        op->w16 = exec_calloc(op->wn, sizeof(uint16_t));
        op->b16 = exec_calloc(op->bn, sizeof(uint16_t));
        if (!op->w16 || (op->bn && !op->b16)) {
            return PROF_E_NOMEM;
        }
        op->stored_bytes = (uint64_t)(op->wn + op->bn) * sizeof(uint16_t);
        break;
    default:
        break;
    }
    return PROF_OK;
}

/* ---- the public get and set ---------------------------------------------- */

static int param_layer(const prof_exec *ex, size_t layer,
                       size_t weight_count, size_t bias_count,
                       struct exec_op **op)
{
    if (layer >= ex->nlayers || ex->ops[layer].wn == 0) {
        return PROF_E_INVALID;
    }
    *op = &ex->ops[layer];
    if (weight_count != (*op)->wn || bias_count != (*op)->bn) {
        return PROF_E_RANGE;
    }
    return PROF_OK;
}

PROF_API int prof_exec_set_params(prof_exec *ex, size_t layer,
                                  const float *weights, size_t weight_count,
                                  const float *bias, size_t bias_count)
{
    struct exec_op *op;
    if (!ex || !weights || (bias_count > 0 && !bias)) {
        return PROF_E_INVALID;
    }
    int st = param_layer(ex, layer, weight_count, bias_count, &op);
    if (st != PROF_OK) {
        return st;
    }
    for (size_t i = 0; i < weight_count; i++) {
        if (!isfinite(weights[i])) {
            return PROF_E_RANGE;
        }
    }
    for (size_t i = 0; i < bias_count; i++) {
        if (!isfinite(bias[i])) {
            return PROF_E_RANGE;
        }
    }
    for (size_t i = 0; i < weight_count; i++) {
        op->w[exec_w_slot(op, i)] = weights[i];
    }
    if (bias_count) {
        memcpy(op->b, bias, bias_count * sizeof(float));
    }
    return store_params(ex, op);
}

PROF_API int prof_exec_get_params(const prof_exec *ex, size_t layer,
                                  float *weights, size_t weight_count,
                                  float *bias, size_t bias_count)
{
    struct exec_op *op;
    if (!ex || !weights) {
        return PROF_E_INVALID;
    }
    int st = param_layer(ex, layer, weight_count, bias_count, &op);
    if (st != PROF_OK) {
        return st;
    }
    for (size_t i = 0; i < weight_count; i++) {
        weights[i] = op->w[exec_w_slot(op, i)];
    }
    if (bias && bias_count) {
        memcpy(bias, op->b, bias_count * sizeof(float));
    }
    return PROF_OK;
}

