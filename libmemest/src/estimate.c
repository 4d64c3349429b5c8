/* Per-layer tables, totals, training memory and the exact MB figure. */
#include "internal.h"
#include "op.h"
#include "wide.h"

#include <stdlib.h>
#include <string.h>
#include "alloc_rec.h" /* last: it wraps malloc and co. */

static int check_args(const memest_model *model, uint64_t batch,
                      enum memest_precision precision)
{
    if (model == NULL || memest_precision_bytes(precision) == 0) {
        return MEMEST_E_INVALID;
    }
    return batch == 0 ? MEMEST_E_RANGE : MEMEST_OK;
}

/* elements * batch * bytes, or MEMEST_E_OVERFLOW. */
static int scaled(uint64_t per_sample, uint64_t batch, uint64_t bytes,
                  uint64_t *elements, uint64_t *out_bytes)
{
    uint64_t e;
    if (mul_ovf(per_sample, batch, &e) || mul_ovf(e, bytes, out_bytes)) {
        return MEMEST_E_OVERFLOW;
    }
    if (elements != NULL) {
        *elements = e;
    }
    return MEMEST_OK;
}

static double to_mb(uint64_t bytes)
{
    /* Division by 2^20 is exact, so this is one rounding of the true
     * quotient, the same as Python's int / int. */
    return (double)bytes / 1048576.0;
}

/* Static int8's quantisation parameters of one activation tensor: a
 * float32 scale and an int8 zero point, as a QDQ file's QuantizeLinear
 * holds them. A view (flatten, identity, dropout) shares its input's. */
#define INT8_TENSOR_QPARAM_BYTES 5u
/* Per output channel of a weight quantised per channel: a float32 scale
 * and an int8 zero point (0: symmetric), as DequantizeLinear's per-axis
 * y_scale and y_zero_point. */
#define INT8_CHANNEL_QPARAM_BYTES 5u
/* A bias in int32 (scale x_scale * w_scale[c], zero point 0). */
#define INT8_BIAS_BYTES 4u

/*
 * The bytes layer L's constants take at precision: parameter_count x the
 * element size, except in int8 (static and dynamic), which stores what
 * ONNX Runtime's and TFLite's int8 models store: a layer quantised per
 * output channel (dense, conv2d: the kinds that absorb a batch norm) its
 * weights in 1 byte each, its biases in int32 (4 bytes each) and a scale
 * and zero point per output channel; any other layer's parameters 1 byte
 * each; and every layer that is not a view the scale and zero point of
 * its output. Counts of parameters are unchanged; only bytes differ.
 */
static int layer_param_bytes(const struct memest_layer *L,
                             enum memest_precision precision, uint64_t *out)
{
    const uint64_t bytes = memest_precision_bytes(precision);
    if (!memest_precision_is_int8(precision)) {
        return mul_ovf(L->parameter_count, bytes, out) ? MEMEST_E_OVERFLOW
                                                       : MEMEST_OK;
    }
    const struct memest_op_def *d = op_def(L->kind);
    uint64_t b = 0, t;
    if (d != NULL && d->absorbs_bn && L->weight_count > 0) {
        if (mul_ovf(L->bias_count, INT8_BIAS_BYTES, &t) ||
            add_ovf(L->weight_count, t, &b) ||
            mul_ovf(L->units, INT8_CHANNEL_QPARAM_BYTES, &t) ||
            add_ovf(b, t, &b)) {
            return MEMEST_E_OVERFLOW;
        }
    } else {
        b = L->parameter_count;
    }
    if (!memest_kind_is_view(L->kind) &&
        add_ovf(b, INT8_TENSOR_QPARAM_BYTES, &b)) {
        return MEMEST_E_OVERFLOW;
    }
    *out = b;
    return MEMEST_OK;
}

/* An input tensor's constants: its quantisation parameters in int8. */
static uint64_t input_param_bytes(enum memest_precision precision)
{
    return memest_precision_is_int8(precision) ? INT8_TENSOR_QPARAM_BYTES
                                               : 0;
}

size_t memest_estimate_row_count(const memest_model *model)
{
    return model ? model->input_count + model->count : 0;
}

int memest_estimate_layers(const memest_model *model, uint64_t batch,
                           enum memest_precision precision,
                           struct memest_layer_estimate *rows, size_t cap,
                           size_t *count)
{
    uint64_t bytes;
    size_t need;
    int st;

    if (count == NULL || (rows == NULL && cap != 0)) {
        return MEMEST_E_INVALID;
    }
    st = check_args(model, batch, precision);
    if (st != MEMEST_OK) {
        return st;
    }
    need = model->input_count + model->count;
    *count = need;
    if (cap < need) {
        return MEMEST_E_RANGE;
    }
    bytes = memest_precision_bytes(precision);

    for (size_t k = 0; k < model->input_count; k++) {
        struct memest_layer_estimate *r = &rows[k];
        memset(r, 0, sizeof *r);
        r->layer = model->inputs[k].name;
        r->kind = MEMEST_KIND_INPUT;
        memest_shape_format(&model->inputs[k].shape, r->output_shape,
                            sizeof r->output_shape);
        st = scaled(model->inputs[k].elements, batch, bytes,
                    &r->output_elements, &r->activation_bytes);
        if (st != MEMEST_OK) {
            return st;
        }
        r->parameter_bytes = input_param_bytes(precision);
    }
    for (size_t i = 0; i < model->count; i++) {
        const struct memest_layer *L = &model->layers[i];
        struct memest_layer_estimate *r = &rows[model->input_count + i];
        memset(r, 0, sizeof *r);
        r->layer = L->name;
        r->kind = L->kind;
        memest_shape_format(&L->out_shape, r->output_shape,
                            sizeof r->output_shape);
        r->parameter_count = L->parameter_count;
        uint64_t work_bytes;
        if (layer_param_bytes(L, precision, &r->parameter_bytes) ||
            scaled(L->output_elements, batch, bytes, &r->output_elements,
                   &r->activation_bytes) != MEMEST_OK ||
            scaled(L->work_elements, batch, bytes, NULL, &work_bytes) !=
                MEMEST_OK ||
            add_ovf(r->activation_bytes, work_bytes, &r->activation_bytes) ||
            mul_ovf(L->macs_per_sample, batch, &r->macs)) {
            return MEMEST_E_OVERFLOW;
        }
    }
    return MEMEST_OK;
}

int memest_estimate_totals(const memest_model *model, uint64_t batch,
                           enum memest_precision precision,
                           struct memest_totals *out)
{
    struct memest_totals t;
    struct memest_arena_plan plan;
    uint64_t bytes;
    int st;

    if (out == NULL) {
        return MEMEST_E_INVALID;
    }
    st = check_args(model, batch, precision);
    if (st != MEMEST_OK) {
        return st;
    }
    bytes = memest_precision_bytes(precision);
    memset(&t, 0, sizeof t);
    t.batch = batch;
    t.precision = precision;
    t.parameter_count = model->parameter_count;
    if (memest_precision_is_int8(precision)) {
        /* the sum of the rows' (memest_estimate_layers) */
        uint64_t b;
        if (mul_ovf(model->input_count, input_param_bytes(precision),
                    &t.parameter_bytes)) {
            return MEMEST_E_OVERFLOW;
        }
        for (size_t i = 0; i < model->count; i++) {
            if (layer_param_bytes(&model->layers[i], precision, &b) ||
                add_ovf(t.parameter_bytes, b, &t.parameter_bytes)) {
                return MEMEST_E_OVERFLOW;
            }
        }
    } else if (mul_ovf(model->parameter_count, bytes, &t.parameter_bytes)) {
        return MEMEST_E_OVERFLOW;
    }
    if (scaled(model->activation_elements, batch, bytes,
               &t.activation_elements, &t.activation_bytes) != MEMEST_OK ||
        add_ovf(t.parameter_bytes, t.activation_bytes, &t.total_bytes) ||
        mul_ovf(model->macs_per_sample, batch, &t.macs)) {
        return MEMEST_E_OVERFLOW;
    }
    st = memest_plan_arena(model, batch, precision, &plan);
    if (st != MEMEST_OK) {
        return st;
    }
    t.arena_bytes = plan.arena_bytes;
    t.live_lower_bound_bytes = plan.live_lower_bound_bytes;
    memest_arena_plan_free(&plan);
    if (add_ovf(t.parameter_bytes, t.arena_bytes, &t.peak_inference_bytes)) {
        return MEMEST_E_OVERFLOW;
    }
    t.parameter_mb = to_mb(t.parameter_bytes);
    t.activation_mb = to_mb(t.activation_bytes);
    t.total_mb = to_mb(t.total_bytes);
    t.peak_inference_mb = to_mb(t.peak_inference_bytes);
    *out = t;
    return MEMEST_OK;
}

/*
 * count * bytes / 2^20 rounded once, for a count that may exceed 64 bits:
 * count = hi * 2^64 + lo. bytes is a power of two, so scaling by it and by
 * 2^-20 is exact in binary floating point and only the conversion of the
 * count rounds.
 */
static double wide_mb(uint64_t a, uint64_t b, unsigned bytes)
{
    return wide_to_double(wide_mul_64(a, b)) * (double)bytes / 1048576.0;
}

int memest_total_memory_mb(const memest_model *model, uint64_t batch,
                           enum memest_precision precision, double *out_mb)
{
    unsigned bytes;
    int st;

    if (out_mb == NULL) {
        return MEMEST_E_INVALID;
    }
    st = check_args(model, batch, precision);
    if (st != MEMEST_OK) {
        return st;
    }
    bytes = memest_precision_bytes(precision);
    /* As the original: parameter MB + activation MB, each rounded. */
    *out_mb = wide_mb(model->parameter_count, 1, bytes) +
              wide_mb(model->activation_elements, batch, bytes);
    return MEMEST_OK;
}

static uint64_t max_u64(uint64_t a, uint64_t b)
{
    return a > b ? a : b;
}

/*
 * The trainer's working buffers (libprofile's prof_train), a function of
 * the layers only, so that the trainer can check its allocation against
 * it. Per sample, with s bytes of storage per element:
 *   - the activation gradients of the backward pass. A layer's output
 *     whose one reader is the next layer (or the model's output, read by
 *     the loss) needs its gradient from that reader's backward step to its
 *     producer's: such tensors share one buffer, each pair of consecutive
 *     ones at its two ends (the largest such pair; a model input needs no
 *     gradient). Any other output (read by several layers, or by a later
 *     one: a residual's input) gathers its gradient over several steps in
 *     a buffer of its own, and one staging buffer the size of the largest
 *     one read more than once takes a share before it is added. A chain
 *     needs only the first: the largest input + output of a layer, the
 *     first layer's output alone;
 *   - the pre-activations a fused gelu needs for its derivative (every
 *     dense or conv2d layer with act=gelu keeps its output twice);
 * then, independent of the storage:
 *   - the labels of one batch as int32;
 *   - each batch norm's batch mean and 1/std and running mean and
 *     variance (4 floats per channel, whatever the batch), a batchnorm
 *     layer's or one folded into a conv2d or dense layer, which the
 *     trainer trains unfolded: that layer's output before its batch norm
 *     is kept too (per sample, at the storage precision, with the
 *     gradients);
 *   - the float im2col columns of the largest conv2d (one sample, one
 *     group: in_c/groups*k*k x out_h*out_w), shared with the forward pass;
 *   - the float transposed copy of the largest output of a softmax or
 *     log-softmax along an axis that is not the last (the steps of T x D,
 *     the channels of C x H x W), per sample: it runs on that copy;
 * and when the storage is not 4-byte float, the float staging in which the
 * 16-bit operators compute: two tensors the size of the largest layer
 * input and two of the largest layer output (per sample), the largest
 * layer's weight and bias gradients (and a folded batch norm's gamma's),
 * and the largest output of a layer with a folded batch norm (per sample:
 * its input z, in float).
 */
/* The activation gradients' buffers of working(), per sample: the pair
 * buffer, the held tensors' and the staging one, summed in *out. */
static int grad_buffers(const memest_model *model, uint64_t *out)
{
    const size_t I = model->input_count, T = I + model->count;
    size_t *readers = calloc(T ? T : 1, sizeof *readers);
    size_t *last = calloc(T ? T : 1, sizeof *last);
    uint64_t pair = 0, hold = 0, stage = 0, prev = 0;
    int st = MEMEST_OK;

    if (readers == NULL || last == NULL) {
        free(readers);
        free(last);
        return MEMEST_E_NOMEM;
    }
    for (size_t i = 0; i < model->count; i++) {
        const struct memest_layer *L = &model->layers[i];
        for (size_t k = 0; k < L->input_count; k++) {
            readers[L->inputs[k]]++;
            last[L->inputs[k]] = i;
        }
    }
    for (size_t i = 0; i < model->count && st == MEMEST_OK; i++) {
        const size_t t = I + i;
        const uint64_t n = model->layers[i].output_elements;
        const int held = t + 1 != T && !(readers[t] == 1 && last[t] == i + 1);
        const uint64_t local = held ? 0 : n;
        uint64_t both;
        if (add_ovf(prev, local, &both) ||
            (held && add_ovf(hold, n, &hold))) {
            st = MEMEST_E_OVERFLOW;
        }
        pair = max_u64(pair, both);
        prev = local;
        if (held && readers[t] > 1) {
            stage = max_u64(stage, n);
        }
    }
    free(readers);
    free(last);
    if (st == MEMEST_OK &&
        (add_ovf(pair, hold, out) || add_ovf(*out, stage, out))) {
        st = MEMEST_E_OVERFLOW;
    }
    return st;
}

static int working(const memest_model *model, uint64_t batch, uint64_t s,
                   uint64_t *out)
{
    uint64_t grad = 0, pre = 0, col = 0, max_in = 0, max_out = 0;
    uint64_t max_params = 0, bn = 0, max_z = 0, t, sum, tsm = 0;
    int st = grad_buffers(model, &grad);

    if (st != MEMEST_OK) {
        return st;
    }
    for (size_t i = 0; i < model->count; i++) {
        const struct memest_layer *L = &model->layers[i];
        const struct memest_op_def *def = op_def(L->kind);
        const uint64_t in = shape_elements(&L->in_shape);
        if (def == NULL) {
            return MEMEST_E_INVALID;
        }
        if (L->kind == MEMEST_KIND_BATCHNORM &&
            add_ovf(bn, L->weight_count, &bn)) {
            return MEMEST_E_OVERFLOW;
        }
        if (L->folded_bn != NULL &&
            (add_ovf(bn, L->units, &bn) ||
             add_ovf(pre, L->output_elements, &pre) ||
             add_ovf(L->parameter_count, L->units, &t))) {
            return MEMEST_E_OVERFLOW;
        }
        if (L->folded_bn != NULL) {
            /* 16-bit staging: its gamma's gradient, its input z */
            max_params = max_u64(max_params, t);
            max_z = max_u64(max_z, L->output_elements);
        }
        if ((L->act == MEMEST_ACT_SOFTMAX ||
             L->act == MEMEST_ACT_LOGSOFTMAX) &&
            L->axis + 1 < L->out_shape.rank) {
            uint64_t inner = 1;
            for (unsigned d = L->axis + 1; d < L->out_shape.rank; d++) {
                inner *= L->out_shape.dim[d]; /* within the output's */
            }
            if (inner > 1) {
                tsm = max_u64(tsm, L->output_elements);
            }
        }
        max_in = max_u64(max_in, in);
        max_out = max_u64(max_out, L->output_elements);
        max_params = max_u64(max_params, L->parameter_count);
        /* the operator's own buffers: a fused gelu's pre-activations
         * (dense, conv2d), im2col columns (conv2d) */
        if (def->train_work != NULL) {
            uint64_t preact = 0, columns = 0;
            if (def->train_work(L, &preact, &columns) != MEMEST_OK ||
                add_ovf(pre, preact, &pre)) {
                return MEMEST_E_OVERFLOW;
            }
            col = max_u64(col, columns);
        }
    }
    /* per-sample terms at the storage precision, then the rest */
    if (add_ovf(grad, pre, &t) || scaled(t, batch, s, NULL, &sum) !=
            MEMEST_OK ||
        scaled(1, batch, 4, NULL, &t) != MEMEST_OK || add_ovf(sum, t, &sum) ||
        mul_ovf(col, 4, &t) || add_ovf(sum, t, &sum) ||
        scaled(tsm, batch, 4, NULL, &t) != MEMEST_OK ||
        add_ovf(sum, t, &sum) ||
        mul_ovf(bn, 16, &t) || add_ovf(sum, t, &sum)) {
        return MEMEST_E_OVERFLOW;
    }
    if (s != 4) {
        if (add_ovf(max_in, max_out, &t) || mul_ovf(t, 2, &t) ||
            scaled(t, batch, 4, NULL, &t) != MEMEST_OK ||
            add_ovf(sum, t, &sum) || mul_ovf(max_params, 4, &t) ||
            add_ovf(sum, t, &sum) ||
            scaled(max_z, batch, 4, NULL, &t) != MEMEST_OK ||
            add_ovf(sum, t, &sum)) {
            return MEMEST_E_OVERFLOW;
        }
    }
    *out = sum;
    return MEMEST_OK;
}

/* The parameters the trainer trains: the model's, and one gamma per
 * channel of each batch norm folded into a layer (the fold had absorbed
 * it into the weights; training keeps it apart). */
static int trained_parameters(const memest_model *model, uint64_t *out)
{
    uint64_t n = model->parameter_count;
    for (size_t i = 0; i < model->count; i++) {
        const struct memest_layer *L = &model->layers[i];
        if (L->folded_bn != NULL && add_ovf(n, L->units, &n)) {
            return MEMEST_E_OVERFLOW;
        }
    }
    *out = n;
    return MEMEST_OK;
}

static int training(const memest_model *model, uint64_t batch,
                    uint64_t param_bytes, uint64_t grad_bytes,
                    uint64_t state_bytes, uint64_t act_bytes,
                    enum memest_optimizer opt, struct memest_training *out)
{
    struct memest_training t;
    uint64_t n = 0;
    uint64_t state_factor = memest_optimizer_state_factor(opt);
    int st;

    memset(&t, 0, sizeof t);
    /* MEMEST_E_OVERFLOW, or MEMEST_E_INVALID for a layer of a kind
     * without an operator definition */
    st = trained_parameters(model, &n);
    if (st != MEMEST_OK) {
        return st;
    }
    st = working(model, batch, act_bytes, &t.working_bytes);
    if (st != MEMEST_OK) {
        return st;
    }
    /* the trainer keeps every input and layer output, not an attention's
     * score block (its backward pass recomputes the scores): the
     * activation count without the layers' working elements, which it
     * includes and so exceeds */
    uint64_t kept = model->activation_elements;
    for (size_t i = 0; i < model->count; i++) {
        kept -= model->layers[i].work_elements;
    }
    if (mul_ovf(n, param_bytes, &t.parameter_bytes) ||
        mul_ovf(n, grad_bytes, &t.gradient_bytes) ||
        mul_ovf(n, state_bytes, &t.optimizer_state_bytes) ||
        mul_ovf(t.optimizer_state_bytes, state_factor,
                &t.optimizer_state_bytes) ||
        scaled(kept, batch, act_bytes, NULL, &t.activation_bytes) !=
            MEMEST_OK ||
        add_ovf(t.parameter_bytes, t.gradient_bytes, &t.total_bytes) ||
        add_ovf(t.total_bytes, t.optimizer_state_bytes, &t.total_bytes) ||
        add_ovf(t.total_bytes, t.activation_bytes, &t.total_bytes) ||
        add_ovf(t.total_bytes, t.working_bytes, &t.total_bytes)) {
        return MEMEST_E_OVERFLOW;
    }
    t.total_mb = to_mb(t.total_bytes);
    *out = t;
    return MEMEST_OK;
}

static int check_opt(enum memest_optimizer opt)
{
    return memest_optimizer_name(opt) != NULL;
}

int memest_training_memory(const memest_model *model, uint64_t batch,
                           enum memest_precision precision,
                           enum memest_optimizer opt,
                           struct memest_training *out)
{
    uint64_t b;
    int st;

    if (out == NULL || !check_opt(opt)) {
        return MEMEST_E_INVALID;
    }
    st = check_args(model, batch, precision);
    if (st != MEMEST_OK) {
        return st;
    }
    b = memest_precision_bytes(precision);
    return training(model, batch, b, b, b, b, opt, out);
}

int memest_training_memory_mixed(const memest_model *model, uint64_t batch,
                                 enum memest_optimizer opt,
                                 struct memest_training *out)
{
    int st;

    if (out == NULL || !check_opt(opt)) {
        return MEMEST_E_INVALID;
    }
    st = check_args(model, batch, MEMEST_FP32);
    if (st != MEMEST_OK) {
        return st;
    }
    /* fp32 master weights and optimizer state; fp16 gradients and
     * activations (the mixed-precision memory table of the original). */
    return training(model, batch, 4, 2, 4, 2, opt, out);
}
