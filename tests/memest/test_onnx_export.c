/*
 * ONNX export (memest_model_to_onnx): every model written is read back by
 * the importer, an independent path through ONNX's own schema, and must
 * give the same layers (dropouts aside: the writer leaves them out),
 * shapes, counts and weights bit for bit. Models: every preset with
 * deterministic weights, the zoo's model.txt twins, every ONNX model the
 * zoo and tests/data/models hold (imported, written, imported again), and
 * tests/data/export/every-kind.txt and every-seq-kind.txt (every kind and
 * activation the writer knows). Then the
 * refusals: a model without weights, a form ONNX cannot hold.
 *
 * Usage: test-memest-onnx-export DATA_DIR (tests/data)
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "edgefit/memest.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *data_dir;

/* ---- Weights ------------------------------------------------------------ */

static uint64_t rng_state;

static float rnd(void)
{
    /* SplitMix64: deterministic, any platform */
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15u);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
    z ^= z >> 31;
    return (float)((double)(z >> 40) / 16777216.0 - 0.5);
}

struct tensors {
    struct memest_tensor t[1024];
    char names[1024][160];
    float *data[1024];
    size_t n;
};

static void add_tensor(struct tensors *ts, const char *layer,
                       const char *suffix, unsigned rank,
                       const uint64_t *dim, int positive)
{
    uint64_t n = 1;
    size_t k = ts->n++;
    assert_true(k < 1024);
    snprintf(ts->names[k], sizeof ts->names[k], "%s.%s", layer, suffix);
    for (unsigned d = 0; d < rank; d++) {
        n *= dim[d];
        ts->t[k].dim[d] = dim[d];
    }
    ts->data[k] = malloc((size_t)n * sizeof(float));
    assert_non_null(ts->data[k]);
    for (uint64_t i = 0; i < n; i++) {
        ts->data[k][i] = positive ? 0.5f + rnd() + 0.5f : rnd();
    }
    ts->t[k].name = ts->names[k];
    ts->t[k].rank = rank;
    ts->t[k].data = ts->data[k];
}

static void add_bn(struct tensors *ts, const char *bn, uint64_t c)
{
    add_tensor(ts, bn, "weight", 1, &c, 0);
    add_tensor(ts, bn, "bias", 1, &c, 0);
    add_tensor(ts, bn, "running_mean", 1, &c, 0);
    add_tensor(ts, bn, "running_var", 1, &c, 1);
}

/* Deterministic weights in PyTorch's names, as a state_dict gives them. */
static void fill_weights(memest_model *m, uint64_t seed)
{
    struct tensors *ts = calloc(1, sizeof *ts);
    struct memest_diag diag;
    assert_non_null(ts);
    rng_state = seed;
    for (size_t i = 0; i < memest_model_layer_count(m); i++) {
        const struct memest_layer *L = memest_model_layer(m, i);
        uint64_t dim[MEMEST_TENSOR_MAX_RANK];
        unsigned rank;
        if (L->parameter_count == 0) {
            continue;
        }
        if (L->kind == MEMEST_KIND_BATCHNORM) {
            add_bn(ts, L->name, L->weight_count);
            continue;
        }
        /* operators with more than a weight and a bias (attention,
         * lstm, gru) list their state_dict tensors */
        struct memest_param_tensor pt[MEMEST_PARAM_TENSORS_MAX];
        const size_t npt = memest_layer_param_tensors(L, pt);
        if (npt > 2 || (npt > 0 && strcmp(pt[0].suffix, ".weight") != 0)) {
            for (size_t k = 0; k < npt; k++) {
                add_tensor(ts, L->name, pt[k].suffix + 1, pt[k].rank,
                           pt[k].dim, 0);
            }
            continue;
        }
        rank = memest_layer_weight_shape(L, dim);
        add_tensor(ts, L->name, "weight", rank, dim, 0);
        if (memest_model_layer_declared_bias(m, i)) {
            add_tensor(ts, L->name, "bias", 1, &L->units, 0);
        }
        if (L->folded_bn != NULL) {
            add_bn(ts, L->folded_bn, L->units);
        }
    }
    if (memest_model_set_weights(m, ts->t, ts->n, &diag) != MEMEST_OK) {
        fail_msg("weights: %s", diag.message);
    }
    for (size_t k = 0; k < ts->n; k++) {
        free(ts->data[k]);
    }
    free(ts);
}

/* ---- The round trip ----------------------------------------------------- */

static char tmp_path[256];

static memest_model *export_import(const memest_model *m)
{
    unsigned char *buf = NULL;
    size_t len = 0;
    struct memest_diag diag;
    memest_model *back = NULL;
    FILE *f;
    int st = memest_model_to_onnx(m, &buf, &len, &diag);
    if (st != MEMEST_OK) {
        fail_msg("%s: export: %s", memest_model_name(m), diag.message);
    }
    assert_true(len > 0);
    snprintf(tmp_path, sizeof tmp_path, "test-onnx-export-%ld.onnx",
             (long)getpid());
    f = fopen(tmp_path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(buf, 1, len, f), len);
    assert_int_equal(fclose(f), 0);
    free(buf);
    st = memest_model_load_onnx(tmp_path, NULL, &back, &diag);
    if (st != MEMEST_OK) {
        char text[400];
        memest_diag_format(&diag, text, sizeof text);
        fail_msg("%s: import of the export: %s", memest_model_name(m), text);
    }
    remove(tmp_path);
    return back;
}

static int same_shape(const struct memest_shape *a,
                      const struct memest_shape *b)
{
    if (a->rank != b->rank) {
        return 0;
    }
    for (unsigned d = 0; d < a->rank; d++) {
        if (a->dim[d] != b->dim[d]) {
            return 0;
        }
    }
    return 1;
}

/*
 * What the importer makes of a model: the writer leaves dropouts out, and
 * the importer fuses an activation node into the layer before it when that
 * layer takes one (conv2d, dense, convtranspose, batchnorm, the
 * element-wise kinds), has none (or a relu the next one supersedes) and
 * nothing else reads it, as it does for any ONNX file. `gone[i]`: layer i
 * has no layer of its own after the round trip; `act[i]` and its
 * parameters: the activation layer i carries then; `same[t]`: the tensor
 * whose name tensor t has.
 */
struct canon {
    int gone[1024];
    enum memest_act act[1024];
    double alpha[1024], beta[1024];
    size_t same[1100];
};

static int takes_act(enum memest_kind k)
{
    return k == MEMEST_KIND_CONV2D || k == MEMEST_KIND_DENSE ||
           k == MEMEST_KIND_CONV_TRANSPOSE || k == MEMEST_KIND_BATCHNORM ||
           k == MEMEST_KIND_ADD || k == MEMEST_KIND_SUB ||
           k == MEMEST_KIND_MUL || k == MEMEST_KIND_DIV;
}

static void canonical(const memest_model *m, struct canon *c)
{
    const size_t nin = memest_model_input_count(m);
    const size_t nl = memest_model_layer_count(m);
    unsigned readers[1100];
    assert_true(nl <= 1024 && nin + nl <= 1100);
    memset(readers, 0, sizeof readers);
    for (size_t i = 0; i < nl; i++) {
        const struct memest_layer *L = memest_model_layer(m, i);
        for (size_t k = 0; k < L->input_count; k++) {
            readers[L->inputs[k]]++;
        }
    }
    for (size_t t = 0; t < nin + nl; t++) {
        c->same[t] = t;
    }
    for (size_t i = 0; i < nl; i++) {
        const struct memest_layer *L = memest_model_layer(m, i);
        size_t p;
        c->gone[i] = 0;
        c->act[i] = L->act;
        c->alpha[i] = L->act_alpha;
        c->beta[i] = L->act_beta;
        if (L->kind == MEMEST_KIND_DROPOUT) {
            c->gone[i] = 1;
            c->same[nin + i] = c->same[L->inputs[0]];
            continue;
        }
        if (L->kind != MEMEST_KIND_ACTIVATION) {
            continue;
        }
        p = c->same[L->inputs[0]];
        if (p < nin || c->gone[p - nin] || readers[p] != 1 ||
            !takes_act(memest_model_layer(m, p - nin)->kind)) {
            continue;
        }
        /* a dropout between them counts its own reader */
        if (p != L->inputs[0] && readers[L->inputs[0]] != 1) {
            continue;
        }
        if (c->act[p - nin] == MEMEST_ACT_NONE ||
            (c->act[p - nin] == MEMEST_ACT_RELU &&
             (L->act == MEMEST_ACT_RELU || L->act == MEMEST_ACT_RELU6 ||
              (L->act == MEMEST_ACT_CLIP && L->act_alpha >= 0.0)))) {
            c->gone[i] = 1;
            c->act[p - nin] = L->act;
            c->alpha[p - nin] = L->act_alpha;
            c->beta[p - nin] = L->act_beta;
            c->same[nin + i] = p;
        }
    }
}

static const char *tensor_name(const memest_model *m, size_t t)
{
    const size_t nin = memest_model_input_count(m);
    return t < nin ? memest_model_input_name(m, t)
                   : memest_model_layer(m, t - nin)->name;
}

#define SAME(field)                                                          \
    do {                                                                     \
        if (a->field != b->field) {                                          \
            fail_msg("%s: layer '%s': " #field " %g, read back %g", what,    \
                     a->name, (double)a->field, (double)b->field);           \
        }                                                                    \
    } while (0)

static void compare(const memest_model *ma, const memest_model *mb,
                    const char *what)
{
    size_t j = 0;
    struct canon *c = calloc(1, sizeof *c);
    const size_t nin = memest_model_input_count(ma);
    /* the name of each tensor of ma in mb */
    const char *bname[1100];
    assert_non_null(c);
    canonical(ma, c);
    for (size_t t = 0; t < nin; t++) {
        bname[t] = memest_model_input_name(mb, t);
    }
    assert_int_equal(memest_model_input_count(ma),
                     memest_model_input_count(mb));
    for (size_t k = 0; k < memest_model_input_count(ma); k++) {
        struct memest_shape sa = memest_model_input_shape_at(ma, k);
        struct memest_shape sb = memest_model_input_shape_at(mb, k);
        assert_string_equal(memest_model_input_name(ma, k),
                            memest_model_input_name(mb, k));
        assert_true(same_shape(&sa, &sb));
    }
    for (size_t i = 0; i < memest_model_layer_count(ma); i++) {
        const struct memest_layer *a = memest_model_layer(ma, i);
        const struct memest_layer *b;
        if (c->gone[i]) {
            continue;
        }
        b = memest_model_layer(mb, j++);
        if (b == NULL) {
            fail_msg("%s: layer '%s' is missing after the round trip", what,
                     a->name);
        }
        bname[nin + i] = b->name;
        /* the importer names a standalone pattern (exact GELU's five
         * nodes, x * Sigmoid(x)) after its function, not after a node */
        if (a->kind == MEMEST_KIND_ACTIVATION &&
            (a->act == MEMEST_ACT_GELU_ERF || a->act == MEMEST_ACT_SILU ||
             a->act == MEMEST_ACT_HARDSWISH) &&
            strncmp(b->name, a->act == MEMEST_ACT_GELU_ERF
                                  ? "gelu" : memest_act_name(a->act),
                    a->act == MEMEST_ACT_GELU_ERF
                        ? 4 : strlen(memest_act_name(a->act))) == 0) {
            /* named as the importer names it */
        } else if (strcmp(a->name, b->name) != 0) {
            fail_msg("%s: layer '%s' read back as '%s'", what, a->name,
                     b->name);
        }
        if (a->kind != b->kind || c->act[i] != b->act) {
            fail_msg("%s: layer '%s' %s act=%s read back as %s act=%s", what,
                     a->name, memest_kind_name(a->kind),
                     memest_act_name(c->act[i]), memest_kind_name(b->kind),
                     memest_act_name(b->act));
        }
        SAME(units);
        SAME(kernel_h);
        SAME(kernel_w);
        SAME(stride_h);
        SAME(stride_w);
        SAME(pad_top);
        SAME(pad_left);
        SAME(pad_bottom);
        SAME(pad_right);
        SAME(groups);
        SAME(has_bias);
        SAME(weight_count);
        SAME(bias_count);
        SAME(parameter_count);
        SAME(output_elements);
        SAME(macs_per_sample);
        SAME(input_count);
        SAME(scalar_side);
        SAME(scalar);
        /* the importer says ceil=yes only where rounding up changes
         * the size; elsewhere the windows are the same either way */
        if (a->ceil_mode != b->ceil_mode &&
            (a->kind != MEMEST_KIND_MAXPOOL &&
             a->kind != MEMEST_KIND_AVGPOOL)) {
            SAME(ceil_mode);
        }
        if (a->ceil_mode != b->ceil_mode &&
            ((a->in_shape.dim[1] + a->pad_top + a->pad_bottom -
              a->kernel_h) % a->stride_h != 0 ||
             (a->in_shape.dim[2] + a->pad_left + a->pad_right -
              a->kernel_w) % a->stride_w != 0) &&
            ((a->in_shape.dim[1] + a->pad_top + a->pad_bottom -
              a->kernel_h) / a->stride_h + 1 != a->out_shape.dim[1] ||
             (a->in_shape.dim[2] + a->pad_left + a->pad_right -
              a->kernel_w) / a->stride_w + 1 != a->out_shape.dim[2])) {
            SAME(ceil_mode);
        }
        SAME(pad_value);
        SAME(slice_axis);
        SAME(slice_begin);
        SAME(slice_end);
        SAME(concat_axis);
        SAME(resize_mode);
        SAME(resize_coord);
        SAME(resize_nearest);
        SAME(scale_h);
        SAME(scale_w);
        if (a->kind == MEMEST_KIND_AVGPOOL) {
            SAME(count_include_pad);
        }
        /* the sequence kinds' own fields */
        SAME(axis);
        SAME(perm[0]);
        SAME(perm[1]);
        SAME(perm[2]);
        SAME(heads);
        SAME(direction);
        SAME(linear_before_reset);
        SAME(return_sequence);
        SAME(work_elements);
        if (a->kind == MEMEST_KIND_LAYERNORM &&
            (float)a->bn_epsilon != (float)b->bn_epsilon) {
            fail_msg("%s: layer '%s': epsilon %g, read back %g", what,
                     a->name, a->bn_epsilon, b->bn_epsilon);
        }
        if (a->kind == MEMEST_KIND_CONV2D ||
            a->kind == MEMEST_KIND_CONV_TRANSPOSE) {
            SAME(dilation_h);
            SAME(dilation_w);
            SAME(out_pad_h);
            SAME(out_pad_w);
        }
        /* ONNX's attributes and bounds are float32 */
        if ((float)c->alpha[i] != (float)b->act_alpha ||
            (float)c->beta[i] != (float)b->act_beta) {
            fail_msg("%s: layer '%s': act parameters %g %g, read back %g %g",
                     what, a->name, c->alpha[i], c->beta[i], b->act_alpha,
                     b->act_beta);
        }
        if (!same_shape(&a->in_shape, &b->in_shape) ||
            !same_shape(&a->out_shape, &b->out_shape)) {
            fail_msg("%s: layer '%s': shapes differ", what, a->name);
        }
        for (size_t k = 0; k < a->input_count; k++) {
            const char *na = bname[c->same[a->inputs[k]]];
            const char *nb = tensor_name(mb, b->inputs[k]);
            if (strcmp(na, nb) != 0) {
                fail_msg("%s: layer '%s' input %zu: '%s', read back '%s'",
                         what, a->name, k, na, nb);
            }
        }
        if (a->weight_count) {
            assert_non_null(a->weight);
            assert_non_null(b->weight);
            if (memcmp(a->weight, b->weight,
                       (size_t)a->weight_count * sizeof(float)) != 0) {
                fail_msg("%s: layer '%s': weights differ", what, a->name);
            }
        }
        if (a->bias_count &&
            memcmp(a->bias, b->bias, (size_t)a->bias_count * sizeof(float))) {
            fail_msg("%s: layer '%s': biases differ", what, a->name);
        }
    }
    free(c);
    if (j != memest_model_layer_count(mb)) {
        fail_msg("%s: %zu layers read back for %zu", what,
                 memest_model_layer_count(mb), j);
    }
    assert_true(memest_model_parameter_count(ma) ==
                memest_model_parameter_count(mb));
    {
        struct memest_totals ta, tb;
        assert_int_equal(memest_estimate_totals(ma, 1, MEMEST_FP32, &ta), 0);
        assert_int_equal(memest_estimate_totals(mb, 1, MEMEST_FP32, &tb), 0);
        assert_true(ta.macs == tb.macs);
        assert_true(ta.parameter_count == tb.parameter_count);
    }
}

static void round_trip(memest_model *m, const char *what)
{
    memest_model *back = export_import(m);
    compare(m, back, what);
    memest_model_destroy(back);
}

static void test_presets(void **state)
{
    const char *const *names = memest_preset_names();
    static const char *const mlps[] = {"mlp:784-64-10", "mlp:20-7-5-3"};
    (void)state;
    for (size_t i = 0; names[i] != NULL; i++) {
        memest_model *m = NULL;
        assert_int_equal(memest_model_preset(names[i], &m, NULL), 0);
        fill_weights(m, 1000 + i);
        round_trip(m, names[i]);
        memest_model_destroy(m);
    }
    for (size_t i = 0; i < sizeof mlps / sizeof mlps[0]; i++) {
        memest_model *m = NULL;
        assert_int_equal(memest_model_preset(mlps[i], &m, NULL), 0);
        fill_weights(m, 7 + i);
        round_trip(m, mlps[i]);
        memest_model_destroy(m);
    }
}

/* The zoo's ONNX models (and tests/data/models') imported, written and
 * imported again; their model.txt twins with weights of our own. */
static void test_zoo(void **state)
{
    static const char *const zoo[] = {
        "zoo/resnet8", "zoo/ds-cnn", "zoo/mobilenetv1-0.25",
        "zoo/fc-autoencoder", "zoo/mobilenetv3-small", "zoo/efficientnet-b0",
        "zoo/unet-tiny", "zoo/conv-autoencoder", "zoo/googlenet-quarter",
        "zoo/lenet5", "zoo/densenet-reduced", "zoo/mnasnet0.5",
        "zoo/shufflenetv2-x0.5", "zoo/yolo-tiny", "zoo/tcn",
    };
    size_t onnx_done = 0, txt_done = 0;
    (void)state;
    for (size_t i = 0; i < sizeof zoo / sizeof zoo[0]; i++) {
        char path[512];
        memest_model *m = NULL;
        struct memest_diag diag;
        snprintf(path, sizeof path, "%s/%s/model.onnx", data_dir, zoo[i]);
        if (access(path, R_OK) == 0) {
            if (memest_model_load_onnx(path, NULL, &m, &diag) != MEMEST_OK) {
                fail_msg("%s: %s", path, diag.message);
            }
            round_trip(m, path);
            memest_model_destroy(m);
            onnx_done++;
        }
        snprintf(path, sizeof path, "%s/%s/model.txt", data_dir, zoo[i]);
        if (access(path, R_OK) == 0) {
            m = NULL;
            if (memest_model_load(path, &m, &diag) != MEMEST_OK) {
                fail_msg("%s: %s", path, diag.message);
            }
            fill_weights(m, 99 + i);
            round_trip(m, path);
            memest_model_destroy(m);
            txt_done++;
        }
    }
    /* the zoo holds these; a test that found none would prove nothing */
    assert_true(onnx_done >= 10);
    assert_true(txt_done >= 6);
}

static void test_every_kind(void **state)
{
    memest_model *m = NULL;
    struct memest_diag diag;
    char path[512];
    (void)state;
    snprintf(path, sizeof path, "%s/export/every-kind.txt", data_dir);
    if (memest_model_load(path, &m, &diag) != MEMEST_OK) {
        char text[400];
        memest_diag_format(&diag, text, sizeof text);
        fail_msg("%s", text);
    }
    fill_weights(m, 5);
    round_trip(m, "every-kind");
    memest_model_destroy(m);
    /* the sequence kinds: layernorm, dense over T x D, clstoken,
     * posembed, attention, transpose, matmul, softmax along an axis, lstm
     * and gru in every direction and output form */
    snprintf(path, sizeof path, "%s/export/every-seq-kind.txt", data_dir);
    m = NULL;
    if (memest_model_load(path, &m, &diag) != MEMEST_OK) {
        char text[400];
        memest_diag_format(&diag, text, sizeof text);
        fail_msg("%s", text);
    }
    fill_weights(m, 6);
    round_trip(m, "every-seq-kind");
    memest_model_destroy(m);
    /* the last state of one direction (Y_h), forward and reverse */
    static const char *const lasts[] = {
        "input 5x4\ngru 3 dir=forward seq=no name=g\n",
        "input 5x4\nlstm 3 dir=reverse seq=no name=l\n",
        "input 5x4\ngru 3 dir=bidirectional seq=no lbr=no name=g\n",
    };
    for (size_t i = 0; i < sizeof lasts / sizeof lasts[0]; i++) {
        m = NULL;
        assert_int_equal(memest_model_parse(lasts[i], &m, NULL), MEMEST_OK);
        fill_weights(m, 7 + i);
        round_trip(m, lasts[i]);
        memest_model_destroy(m);
    }
}

/* Layer names that are the names the writer would make for other tensors
 * (a fused activation's input, a weight, a QDQ pair's): the file still
 * has one tensor per name and reads back the same. */
static void test_name_clashes(void **state)
{
    static const char text[] =
        "input 4 name=x\n"
        "dense 3 act=relu name=fc\n"
        "identity name=fc/preact\n"
        "identity name=fc.weight\n"
        "identity name=fc.bias\n"
        "mul scalar=2 name=fc.weight/scalar\n"
        "identity name=x_scale\n";
    memest_model *m = NULL;
    struct memest_diag diag;
    (void)state;
    if (memest_model_parse(text, &m, &diag) != MEMEST_OK) {
        fail_msg("%s", diag.message);
    }
    fill_weights(m, 11);
    round_trip(m, "name clashes");
    memest_model_destroy(m);
}

static void expect_refusal(const char *text, int status, const char *says)
{
    memest_model *m = NULL;
    unsigned char *buf = (unsigned char *)"";
    size_t len = 1;
    struct memest_diag diag;
    assert_int_equal(memest_model_parse(text, &m, NULL), 0);
    if (memest_model_parameter_count(m) > 0 && strstr(says, "weights") == NULL) {
        fill_weights(m, 3);
    }
    assert_int_equal(memest_model_to_onnx(m, &buf, &len, &diag), status);
    assert_null(buf);
    assert_int_equal(len, 0);
    if (strstr(diag.message, says) == NULL) {
        fail_msg("message '%s' does not say '%s'", diag.message, says);
    }
    memest_model_destroy(m);
}

static void test_refusals(void **state)
{
    (void)state;
    /* no weights: nothing to write */
    expect_refusal("input 4\ndense 3\n", MEMEST_E_INVALID,
                   "15 parameters but carries no weights");
    /* a constant ONNX's float tensors cannot hold */
    expect_refusal("input 4\nmul scalar=0.1 name=tenth\n", MEMEST_E_PARSE,
                   "layer 'tenth' (mul): the constant 0.10000000000000001 "
                   "is not a float32");
    expect_refusal("input 1x4x4\npad p=1 value=0.3 name=pd\n",
                   MEMEST_E_PARSE, "layer 'pd' (pad): the value");
    /* a resize to a size, not by a factor */
    expect_refusal("input 1x4x4\nresize scale=7/4 name=rs\n", MEMEST_E_PARSE,
                   "layer 'rs' (resize): only a resize by float32 scale "
                   "factors");
    /* NULL arguments */
    {
        unsigned char *buf = NULL;
        size_t len = 0;
        assert_int_equal(memest_model_to_onnx(NULL, &buf, &len, NULL),
                         MEMEST_E_INVALID);
    }
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_presets),
        cmocka_unit_test(test_zoo),
        cmocka_unit_test(test_every_kind),
        cmocka_unit_test(test_name_clashes),
        cmocka_unit_test(test_refusals),
    };
    if (argc < 2) {
        fprintf(stderr, "usage: %s DATA_DIR\n", argv[0]);
        return 2;
    }
    data_dir = argv[1];
    if (!memest_onnx_available()) {
        unsigned char *buf = NULL;
        size_t len = 0;
        memest_model *m = NULL;
        struct memest_diag diag;
        assert_int_equal(memest_model_parse("input 4\nrelu\n", &m, NULL), 0);
        return memest_model_to_onnx(m, &buf, &len, &diag) == MEMEST_E_INVALID
                   ? (memest_model_destroy(m), 0)
                   : 1;
    }
    return cmocka_run_group_tests(tests, NULL, NULL);
}
