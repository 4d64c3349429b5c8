/*
 * Counting: the original module's worked example (784-64-10), a CNN whose
 * every per-layer value is worked out by hand below, window arithmetic for
 * stride, padding and groups, totals, peak inference memory and training
 * memory (plain and mixed precision) against hand-computed formulas.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "edgefit/memest.h"

#define MB 1048576.0

static memest_model *parse_ok(const char *text)
{
    memest_model *m = NULL;
    struct memest_diag d;
    int st = memest_model_parse(text, &m, &d);
    if (st != MEMEST_OK) {
        char buf[600];
        memest_diag_format(&d, buf, sizeof buf);
        fail_msg("parse failed: %s", buf);
    }
    return m;
}

/* ---- The worked example: 784-64-10 at batch 32 ------------------------ */

static void test_worked_example(void **state)
{
    memest_model *m = NULL;
    struct memest_totals t;
    struct memest_layer_estimate rows[3];
    size_t n = 0;
    (void)state;

    assert_int_equal(memest_model_preset("mlp:784-64-10", &m, NULL),
                     MEMEST_OK);
    assert_string_equal(memest_model_name(m), "mlp:784-64-10");
    assert_int_equal(memest_model_layer_count(m), 2);
    /* (784*64 + 64) + (64*10 + 10) = 50,240 + 650 */
    assert_int_equal(memest_model_parameter_count(m), 50890);
    assert_int_equal(memest_model_layer(m, 0)->parameter_count, 50240);
    assert_int_equal(memest_model_layer(m, 1)->parameter_count, 650);
    assert_int_equal(memest_model_layer(m, 0)->act, MEMEST_ACT_RELU);
    assert_int_equal(memest_model_layer(m, 1)->act, MEMEST_ACT_SOFTMAX);
    assert_null(memest_model_layer(m, 2));

    assert_int_equal(memest_estimate_totals(m, 32, MEMEST_FP32, &t),
                     MEMEST_OK);
    /* 32*784 + 32*64 + 32*10 = 25,088 + 2,048 + 320 */
    assert_int_equal(t.activation_elements, 27456);
    assert_int_equal(t.parameter_bytes, 203560);
    assert_int_equal(t.activation_bytes, 109824);
    assert_int_equal(t.total_bytes, 313384);
    assert_true(fabs(t.parameter_mb - 0.194) < 0.0005);
    assert_true(fabs(t.activation_mb - 0.105) < 0.0005);
    assert_true(t.parameter_mb == 203560 / MB);
    assert_true(t.activation_mb == 109824 / MB);
    /* MACs: 32*(784*64 + 64*10) */
    assert_int_equal(t.macs, 32u * (784u * 64u + 640u));

    /* fp16 halves everything, int8 quarters it, fp64 doubles it */
    assert_int_equal(memest_estimate_totals(m, 32, MEMEST_FP16, &t),
                     MEMEST_OK);
    assert_int_equal(t.parameter_bytes, 203560 / 2);
    assert_int_equal(t.activation_bytes, 109824 / 2);
    assert_true(fabs(t.parameter_mb - 0.097) < 0.0005);
    assert_true(fabs(t.activation_mb - 0.052) < 0.0005);
    assert_true(fabs(t.total_mb - 0.15) < 0.001);
    assert_int_equal(memest_estimate_totals(m, 32, MEMEST_BF16, &t),
                     MEMEST_OK);
    assert_int_equal(t.total_bytes, 313384 / 2);
    assert_int_equal(memest_estimate_totals(m, 32, MEMEST_INT8, &t),
                     MEMEST_OK);
    /* int8 stores what an int8 model file does: weights in 1 byte,
     * biases in int32, per output channel a float32 scale and an int8
     * zero point, per tensor (input, dense1, dense2) a scale and zero
     * point: 5 + (50176 + 64*4 + 64*5 + 5) + (640 + 10*4 + 10*5 + 5) */
    assert_int_equal(t.parameter_bytes, 5 + 50757 + 735);
    assert_int_equal(t.parameter_count, 50890); /* PyTorch's, unchanged */
    assert_int_equal(t.activation_bytes, 109824 / 4);
    assert_true(t.parameter_mb == 51497 / MB);
    assert_true(fabs(t.activation_mb - 0.026) < 0.001);
    assert_int_equal(memest_estimate_layers(m, 32, MEMEST_INT8, rows, 3, &n),
                     MEMEST_OK);
    assert_int_equal(rows[0].parameter_bytes, 5);
    assert_int_equal(rows[1].parameter_bytes, 50757);
    assert_int_equal(rows[2].parameter_bytes, 735);
    assert_int_equal(rows[1].parameter_count, 50240);
    /* int8-dynamic is stored alike */
    assert_int_equal(memest_estimate_totals(m, 32, MEMEST_INT8_DYNAMIC, &t),
                     MEMEST_OK);
    assert_int_equal(t.parameter_bytes, 51497);
    assert_int_equal(memest_estimate_totals(m, 32, MEMEST_FP64, &t),
                     MEMEST_OK);
    assert_int_equal(t.total_bytes, 313384 * 2);

    /* the per-layer table: input row, then the two dense layers */
    assert_int_equal(memest_estimate_row_count(m), 3);
    assert_int_equal(memest_estimate_layers(m, 32, MEMEST_FP32, rows, 3, &n),
                     MEMEST_OK);
    assert_int_equal(n, 3);
    assert_string_equal(rows[0].layer, "input");
    assert_int_equal(rows[0].kind, MEMEST_KIND_INPUT);
    assert_string_equal(rows[0].output_shape, "784");
    assert_int_equal(rows[0].output_elements, 25088);
    assert_int_equal(rows[0].activation_bytes, 25088 * 4);
    assert_int_equal(rows[0].parameter_count, 0);
    assert_string_equal(rows[1].layer, "dense1");
    assert_int_equal(rows[1].kind, MEMEST_KIND_DENSE);
    assert_string_equal(rows[1].output_shape, "64");
    assert_int_equal(rows[1].output_elements, 2048);
    assert_int_equal(rows[1].parameter_count, 50240);
    assert_int_equal(rows[1].parameter_bytes, 200960);
    assert_int_equal(rows[1].activation_bytes, 8192);
    assert_int_equal(rows[1].macs, 32 * 784 * 64);
    assert_string_equal(rows[2].layer, "dense2");
    assert_string_equal(rows[2].output_shape, "10");
    assert_int_equal(rows[2].output_elements, 320);
    assert_int_equal(rows[2].parameter_bytes, 2600);
    assert_int_equal(rows[2].macs, 32 * 64 * 10);
    /* a table too small reports the size it needs */
    n = 0;
    assert_int_equal(memest_estimate_layers(m, 32, MEMEST_FP32, rows, 2, &n),
                     MEMEST_E_RANGE);
    assert_int_equal(n, 3);
    assert_int_equal(memest_estimate_layers(m, 0, MEMEST_FP32, rows, 3, &n),
                     MEMEST_E_RANGE);
    assert_int_equal(memest_estimate_totals(m, 0, MEMEST_FP32, &t),
                     MEMEST_E_RANGE);
    assert_int_equal(
        memest_estimate_totals(m, 1, (enum memest_precision)9, &t),
        MEMEST_E_INVALID);
    memest_model_destroy(m);
}

/* ---- A CNN worked out by hand ----------------------------------------- */

static const char cnn_text[] =
    "name handcnn\n"
    "input 3x32x32\n"
    "conv2d 16 k=5 s=2 p=2 act=relu\n" /* (32+4-5)/2+1 = 16 */
    "conv2d 32 k=3 p=1 g=4 bias=no\n"  /* 16/4 = 4 in-channels per group */
    "avgpool k=3 s=2\n"                /* (16-3)/2+1 = 7 */
    "maxpool k=2 p=1\n"                /* s=2: (7+2-2)/2+1 = 4 */
    "flatten\n"                        /* 32*4*4 = 512 */
    "dense 100 act=gelu\n"
    "gelu\n"
    "dense 10 bias=no\n"
    "softmax name=probs\n";

struct row {
    const char *layer;
    enum memest_kind kind;
    const char *shape;
    uint64_t out_elems; /* batch 4 */
    uint64_t params;
    uint64_t macs; /* batch 4 */
};

static const struct row cnn_rows[] = {
    {"input", MEMEST_KIND_INPUT, "3x32x32", 4 * 3072, 0, 0},
    /* 16*3*5*5 + 16; MACs 4 * (16*16*16) * 3*25 */
    {"conv1", MEMEST_KIND_CONV2D, "16x16x16", 4 * 4096, 1216, 4 * 307200},
    /* 32*(16/4)*3*3, no bias; MACs 4 * (32*16*16) * 4*9 */
    {"conv2", MEMEST_KIND_CONV2D, "32x16x16", 4 * 8192, 1152, 4 * 294912},
    {"pool1", MEMEST_KIND_AVGPOOL, "32x7x7", 4 * 1568, 0, 0},
    {"pool2", MEMEST_KIND_MAXPOOL, "32x4x4", 4 * 512, 0, 0},
    {"flatten1", MEMEST_KIND_FLATTEN, "512", 4 * 512, 0, 0},
    /* 512*100 + 100; MACs 4*512*100 */
    {"dense1", MEMEST_KIND_DENSE, "100", 4 * 100, 51300, 4 * 51200},
    {"act1", MEMEST_KIND_ACTIVATION, "100", 4 * 100, 0, 0},
    /* 100*10, no bias */
    {"dense2", MEMEST_KIND_DENSE, "10", 4 * 10, 1000, 4 * 1000},
    {"probs", MEMEST_KIND_ACTIVATION, "10", 4 * 10, 0, 0},
};

#define CNN_ROWS (sizeof cnn_rows / sizeof cnn_rows[0])

static void test_cnn_by_hand(void **state)
{
    memest_model *m = parse_ok(cnn_text);
    struct memest_layer_estimate rows[CNN_ROWS];
    struct memest_totals t;
    uint64_t sum_params = 0;
    uint64_t sum_act = 0;
    uint64_t sum_macs = 0;
    size_t n;
    (void)state;

    assert_string_equal(memest_model_name(m), "handcnn");
    assert_int_equal(memest_estimate_layers(m, 4, MEMEST_FP32, rows,
                                            CNN_ROWS, &n),
                     MEMEST_OK);
    assert_int_equal(n, CNN_ROWS);
    for (size_t i = 0; i < CNN_ROWS; i++) {
        const struct row *e = &cnn_rows[i];
        assert_string_equal(rows[i].layer, e->layer);
        assert_int_equal(rows[i].kind, e->kind);
        assert_string_equal(rows[i].output_shape, e->shape);
        assert_int_equal(rows[i].output_elements, e->out_elems);
        assert_int_equal(rows[i].parameter_count, e->params);
        assert_int_equal(rows[i].parameter_bytes, e->params * 4);
        assert_int_equal(rows[i].activation_bytes, e->out_elems * 4);
        assert_int_equal(rows[i].macs, e->macs);
        sum_params += rows[i].parameter_bytes;
        sum_act += rows[i].activation_bytes;
        sum_macs += rows[i].macs;
    }

    /* layer details */
    {
        const struct memest_layer *c2 = memest_model_layer(m, 1);
        assert_int_equal(c2->groups, 4);
        assert_int_equal(c2->has_bias, 0);
        assert_int_equal(c2->weight_count, 1152);
        assert_int_equal(c2->bias_count, 0);
        assert_int_equal(c2->in_shape.rank, 3);
        assert_int_equal(c2->in_shape.dim[0], 16);
        assert_int_equal(c2->kernel_h, 3);
        assert_int_equal(c2->stride_h, 1);
        assert_int_equal(c2->pad_top, 1);
        assert_int_equal(memest_model_layer(m, 3)->stride_h, 2);
        assert_int_equal(memest_model_layer(m, 6)->act, MEMEST_ACT_GELU);
        assert_int_equal(memest_model_layer(m, 8)->act, MEMEST_ACT_SOFTMAX);
    }

    /* totals: 1216 + 1152 + 51300 + 1000 parameters; per sample
     * 3072+4096+8192+1568+512+512+100+100+10+10 = 18172 activations */
    assert_int_equal(memest_estimate_totals(m, 4, MEMEST_FP32, &t),
                     MEMEST_OK);
    assert_int_equal(t.parameter_count, 54668);
    assert_int_equal(t.parameter_bytes, 218672);
    assert_int_equal(t.activation_elements, 4 * 18172);
    assert_int_equal(t.activation_bytes, 290752);
    assert_int_equal(t.total_bytes, 509424);
    assert_int_equal(t.macs, 2617248);
    assert_int_equal(t.parameter_bytes, sum_params);
    assert_int_equal(t.activation_bytes, sum_act);
    assert_int_equal(t.macs, sum_macs);
    assert_true(t.total_mb == 509424 / MB);
    /* peak: the largest input+output pair is conv1 -> conv2,
     * 4096 + 8192 per sample: 4*12288*4 bytes + parameters */
    assert_int_equal(t.peak_inference_bytes, 218672 + 196608);
    assert_true(t.peak_inference_mb == 415280 / MB);

    {
        struct memest_shape in = memest_model_input_shape(m);
        struct memest_shape out = memest_model_output_shape(m);
        assert_int_equal(in.rank, 3);
        assert_int_equal(in.dim[2], 32);
        assert_int_equal(out.rank, 1);
        assert_int_equal(out.dim[0], 10);
    }
    memest_model_destroy(m);
}

static void test_peak_mlp(void **state)
{
    memest_model *m = NULL;
    struct memest_totals t;
    (void)state;

    /* pairs per sample: 100+400, 400+30, 30+5; max 500 */
    assert_int_equal(memest_model_preset("mlp:100-400-30-5", &m, NULL),
                     MEMEST_OK);
    assert_int_equal(memest_estimate_totals(m, 8, MEMEST_FP16, &t),
                     MEMEST_OK);
    /* params 100*400+400 + 400*30+30 + 30*5+5 = 40400 + 12030 + 155 */
    assert_int_equal(t.parameter_count, 52585);
    assert_int_equal(t.peak_inference_bytes, 52585 * 2 + 8 * 500 * 2);
    memest_model_destroy(m);
}

/* ---- Window arithmetic: stride, padding, groups ----------------------- */

struct window_case {
    uint64_t h, w, k, s, p;
    uint64_t oh, ow; /* worked out by hand: floor((H+2p-k)/s)+1 */
};

static const struct window_case windows[] = {
    {28, 28, 3, 1, 1, 28, 28}, {28, 28, 2, 2, 0, 14, 14},
    {7, 7, 2, 2, 0, 3, 3},     {7, 7, 3, 2, 1, 4, 4},
    {5, 5, 5, 1, 0, 1, 1},     {1, 1, 3, 1, 1, 1, 1},
    {10, 10, 4, 3, 0, 3, 3},   {6, 6, 1, 4, 0, 2, 2},
    {10, 6, 3, 2, 0, 4, 2},    {3, 3, 5, 1, 1, 1, 1},
    {9, 4, 3, 3, 2, 4, 2},     {224, 224, 7, 2, 3, 112, 112},
};

static void test_windows(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof windows / sizeof windows[0]; i++) {
        const struct window_case *c = &windows[i];
        char text[256];
        memest_model *m;
        const struct memest_layer *L;
        /* the same window as a conv and as both pools */
        const char *kinds[] = {"conv2d 5", "maxpool", "avgpool"};
        for (size_t j = 0; j < 3; j++) {
            snprintf(text, sizeof text,
                     "input 2x%llux%llu\n%s k=%llu s=%llu p=%llu\n",
                     (unsigned long long)c->h, (unsigned long long)c->w,
                     kinds[j], (unsigned long long)c->k,
                     (unsigned long long)c->s, (unsigned long long)c->p);
            m = parse_ok(text);
            L = memest_model_layer(m, 0);
            if (L->out_shape.dim[1] != c->oh || L->out_shape.dim[2] != c->ow) {
                fail_msg("case %zu '%s': got %llux%llu, want %llux%llu", i,
                         kinds[j], (unsigned long long)L->out_shape.dim[1],
                         (unsigned long long)L->out_shape.dim[2],
                         (unsigned long long)c->oh,
                         (unsigned long long)c->ow);
            }
            assert_int_equal(L->out_shape.dim[0], j == 0 ? 5 : 2);
            if (j == 0) {
                /* 5*2*k*k + 5 parameters; MACs per output element 2*k*k */
                assert_int_equal(L->parameter_count, 10 * c->k * c->k + 5);
                assert_int_equal(L->macs_per_sample,
                                 5 * c->oh * c->ow * 2 * c->k * c->k);
            } else {
                assert_int_equal(L->parameter_count, 0);
                assert_int_equal(L->macs_per_sample, 0);
            }
            memest_model_destroy(m);
        }
    }
}

static void test_pool_stride_defaults_to_kernel(void **state)
{
    memest_model *m = parse_ok("input 1x9x9\nmaxpool k=3\navgpool k=2 s=1\n");
    (void)state;
    assert_int_equal(memest_model_layer(m, 0)->stride_h, 3);
    assert_int_equal(memest_model_layer(m, 0)->out_shape.dim[1], 3);
    assert_int_equal(memest_model_layer(m, 1)->out_shape.dim[1], 2);
    memest_model_destroy(m);
}

/* Element-wise binary layers, by hand: numpy's broadcasting over the
 * per-sample shapes (aligned from the right: 1x6 against 4x1x1 gives
 * 4x1x6), no parameters for a constant, MACs 0. A squeeze-excite block
 * of 16 channels on 8x8: conv 3->16 k3 (16*3*9 + 16 = 448 parameters),
 * fc1 16->4 (68), fc2 4->16 (80): 596 parameters in all. */
/* A keyword transformer's per-position layers on a sequence of 49 steps
 * of 10 features, by hand: dense 10->16 over the features is 16*10 + 16 =
 * 176 parameters and 49*10*16 = 7840 MACs, output 49x16; the class token
 * one row of 16 (16 parameters), output 50x16; the position embedding
 * 50*16 = 800; layernorm gamma and beta 2*16 = 32 (bias=no: 16), 0 MACs;
 * gelu, dropout, identity, mul/sub with a 1x16 broadcast and softmax keep
 * 50x16 (800 elements). The fused softmax of a dense on T x D is over the
 * features (axis 1), a standalone one too unless axis= says. */
static void test_sequence(void **state)
{
    memest_model *m = parse_ok(
        "input 49x10\n"
        "dense 16 act=gelu_erf\n"     /* 0 */
        "clstoken\n"                  /* 1 */
        "posembed name=p\n"           /* 2 */
        "layernorm\n"                 /* 3 */
        "layernorm bias=no axis=0\n"  /* 4 */
        "gelu\n"                      /* 5 */
        "dropout\nidentity\n"          /* 6, 7 */
        "slice axis=c end=1 in=p name=row\n" /* 8: 1x16 */
        "mul in=identity1,row\n"      /* 9 */
        "sub in=row,mul1\n"           /* 10 */
        "softmax axis=0\n"            /* 11 */
        "dense 4 act=softmax bias=no\n" /* 12 */
        "logsoftmax\n");              /* 13 */
    struct memest_totals t;
    static const struct {
        uint64_t d0, d1, params, macs;
        unsigned axis;
    } want[] = {
        {49, 16, 176, 7840, 0}, {50, 16, 16, 0, 0},   {50, 16, 800, 0, 0},
        {50, 16, 32, 0, 1},     {50, 16, 800, 0, 0},  {50, 16, 0, 0, 0},
        {50, 16, 0, 0, 0},      {50, 16, 0, 0, 0},    {1, 16, 0, 0, 0},
        {50, 16, 0, 0, 0},      {50, 16, 0, 0, 0},    {50, 16, 0, 0, 0},
        {50, 4, 64, 3200, 1},   {50, 4, 0, 0, 1},
    };
    (void)state;
    assert_int_equal(memest_model_layer_count(m), 14);
    for (size_t i = 0; i < 14; i++) {
        const struct memest_layer *L = memest_model_layer(m, i);
        assert_int_equal(L->out_shape.rank, 2);
        assert_int_equal(L->out_shape.dim[0], want[i].d0);
        assert_int_equal(L->out_shape.dim[1], want[i].d1);
        assert_int_equal(L->parameter_count, want[i].params);
        assert_int_equal(L->macs_per_sample, want[i].macs);
        assert_int_equal(L->axis, want[i].axis);
    }
    /* layernorm: units D, gamma and beta [D], eps 1e-5 by default; over
     * both axes (axis=0) D is 50*16 */
    {
        const struct memest_layer *ln = memest_model_layer(m, 3);
        struct memest_param_tensor pt[MEMEST_PARAM_TENSORS_MAX];
        assert_int_equal(ln->units, 16);
        assert_int_equal(ln->weight_count, 16);
        assert_int_equal(ln->bias_count, 16);
        assert_true(ln->bn_epsilon == 1e-5);
        assert_int_equal(memest_model_layer(m, 4)->units, 800);
        assert_int_equal(memest_layer_param_tensors(ln, pt), 2);
        assert_string_equal(pt[0].suffix, ".weight");
        assert_int_equal(pt[0].rank, 1);
        assert_int_equal(pt[0].dim[0], 16);
        /* PyTorch's cls_token [1, 1, D] and pos_embedding [1, T, D] */
        assert_int_equal(
            memest_layer_param_tensors(memest_model_layer(m, 1), pt), 1);
        assert_int_equal(pt[0].rank, 3);
        assert_int_equal(pt[0].dim[0], 1);
        assert_int_equal(pt[0].dim[1], 1);
        assert_int_equal(pt[0].dim[2], 16);
        assert_int_equal(
            memest_layer_param_tensors(memest_model_layer(m, 2), pt), 1);
        assert_int_equal(pt[0].dim[1], 50);
        assert_int_equal(pt[0].dim[2], 16);
        /* nn.Linear's [out, in]: in is the features D, not T x D */
        assert_int_equal(
            memest_layer_param_tensors(memest_model_layer(m, 0), pt), 2);
        assert_int_equal(pt[0].dim[0], 16);
        assert_int_equal(pt[0].dim[1], 10);
    }
    /* totals: 176+16+800+32+800+64 = 1888 parameters, 7840+3200 MACs */
    assert_int_equal(memest_estimate_totals(m, 1, MEMEST_FP32, &t),
                     MEMEST_OK);
    assert_int_equal(t.parameter_count, 1888);
    assert_int_equal(t.macs, 11040);
    /* the input 490, the dense 784, ten outputs of 50x16 (the views
     * dropout and identity count as outputs, as flatten does), the row
     * 16, the last two 50x4 */
    assert_int_equal(t.activation_elements,
                     490 + 784 + 800 * 10 + 16 + 200 * 2);
    memest_model_destroy(m);
    /* a batch norm after a dense on T x D stays a layer: its channels are
     * the steps, the dense's outputs the features */
    m = parse_ok("input 6x4\ndense 3\nbatchnorm\n");
    assert_int_equal(memest_model_layer_count(m), 2);
    assert_int_equal(memest_model_layer(m, 1)->parameter_count, 12);
    memest_model_destroy(m);
}

static void test_binary(void **state)
{
    memest_model *m = parse_ok(
        "input 3x8x8\n"
        "conv2d 16 k=3 p=1 act=relu name=a\n"
        "globalavgpool name=g\n"
        "conv2d 4 k=1 act=relu\n"
        "conv2d 16 k=1 act=sigmoid name=gate\n"
        "mul in=gate,a name=se\n"
        "div scalar=6\n"
        "sub scalar_left=1 name=om\n");
    (void)state;
    const struct memest_layer *se = memest_model_layer(m, 4);
    assert_int_equal(se->kind, MEMEST_KIND_MUL);
    assert_int_equal(se->out_shape.rank, 3);
    assert_int_equal(se->out_shape.dim[0], 16);
    assert_int_equal(se->out_shape.dim[1], 8);
    assert_int_equal(se->out_shape.dim[2], 8);
    assert_int_equal(se->in_shape.dim[1], 1); /* the gate first */
    assert_int_equal(se->in_shape_b.dim[1], 8);
    assert_int_equal(se->output_elements, 1024);
    assert_int_equal(se->parameter_count, 0);
    assert_int_equal(se->macs_per_sample, 0);
    const struct memest_layer *d = memest_model_layer(m, 5);
    assert_int_equal(d->kind, MEMEST_KIND_DIV);
    assert_int_equal(d->scalar_side, MEMEST_SCALAR_RIGHT);
    assert_true(d->scalar == 6.0);
    assert_int_equal(d->parameter_count, 0);
    assert_int_equal(d->input_count, 1);
    assert_int_equal(d->output_elements, 1024);
    assert_int_equal(memest_model_layer(m, 6)->scalar_side,
                     MEMEST_SCALAR_LEFT);
    assert_int_equal(memest_model_parameter_count(m), 448 + 68 + 80);
    {
        uint64_t macs = 0;
        for (size_t i = 0; i < memest_model_layer_count(m); i++) {
            macs += memest_model_layer(m, i)->macs_per_sample;
        }
        assert_int_equal(macs, 16 * 64 * 3 * 9 + 4 * 16 + 16 * 4);
    }
    memest_model_destroy(m);

    /* ranks aligned from the right: [16] * [1] is [16]; a dense's [8]
     * against 4x8x8 lines up with W and gives 4x8x8. Parameters: 17 +
     * 136 + 68 */
    m = parse_ok("input 16x8x8\n"
                 "globalavgpool name=g\n"
                 "flatten name=f\n"
                 "dense 1 name=one\n"
                 "mul in=f,one name=v\n"
                 "dense 8 in=v name=dv\n"
                 "conv2d 4 k=1 in=input name=c\n"
                 "add in=c,dv\n");
    const struct memest_layer *v = memest_model_layer(m, 3);
    assert_int_equal(v->out_shape.rank, 1);
    assert_int_equal(v->out_shape.dim[0], 16);
    const struct memest_layer *last = memest_model_layer(m, 6);
    assert_int_equal(last->out_shape.rank, 3);
    assert_int_equal(last->out_shape.dim[0], 4);
    assert_int_equal(last->out_shape.dim[1], 8);
    assert_int_equal(last->out_shape.dim[2], 8);
    assert_int_equal(last->output_elements, 256);
    assert_int_equal(memest_model_parameter_count(m), 17 + 136 + 68);
    memest_model_destroy(m);
}

/* Attention's operators by hand: a keyword-spotting block of T = 10
 * steps, D = 8 features, 2 heads. */
static void test_attention_ops(void **state)
{
    (void)state;
    memest_model *m = parse_ok("input 10x8\n"
                               "attention heads=2 name=att\n"
                               "transpose perm=1,0 name=t\n"
                               "matmul in=att,t name=gram\n"
                               "reshape shape=2x5x10 name=r\n"
                               "matmul in=r,att name=bc\n"
                               "transpose perm=2,0,1 name=p3\n"
                               "reshape shape=2x8x5 name=r3\n"
                               "matmul in=att,r3 name=bc2\n");
    const struct memest_layer *att = memest_model_layer(m, 0);
    assert_int_equal(att->units, 8);
    assert_int_equal(att->heads, 2);
    /* 4 D^2 weights and 4 D biases, as nn.MultiheadAttention(8, 2) */
    assert_int_equal(att->weight_count, 256);
    assert_int_equal(att->bias_count, 32);
    assert_int_equal(att->parameter_count, 288);
    /* 4 T D^2 + 2 T^2 D = 2560 + 1600 */
    assert_int_equal(att->macs_per_sample, 4160);
    assert_int_equal(att->work_elements, 100);
    assert_int_equal(att->out_shape.rank, 2);
    assert_int_equal(att->out_shape.dim[0], 10);
    assert_int_equal(att->out_shape.dim[1], 8);
    const struct memest_layer *t = memest_model_layer(m, 1);
    assert_int_equal(t->out_shape.dim[0], 8);
    assert_int_equal(t->out_shape.dim[1], 10);
    assert_int_equal(t->macs_per_sample, 0);
    assert_int_equal(t->work_elements, 0);
    /* 10x8 . 8x10: 10 * 8 * 10 multiplies */
    const struct memest_layer *g = memest_model_layer(m, 2);
    assert_int_equal(g->out_shape.rank, 2);
    assert_int_equal(g->out_shape.dim[0], 10);
    assert_int_equal(g->out_shape.dim[1], 10);
    assert_int_equal(g->macs_per_sample, 800);
    assert_int_equal(g->parameter_count, 0);
    /* a stack times a matrix: [2,5,10] . [10,8] = 2x5x8, 2 * 5 * 10 * 8 */
    const struct memest_layer *bc = memest_model_layer(m, 4);
    assert_int_equal(bc->out_shape.rank, 3);
    assert_int_equal(bc->out_shape.dim[0], 2);
    assert_int_equal(bc->out_shape.dim[1], 5);
    assert_int_equal(bc->out_shape.dim[2], 8);
    assert_int_equal(bc->macs_per_sample, 800);
    const struct memest_layer *p3 = memest_model_layer(m, 5);
    assert_int_equal(p3->out_shape.dim[0], 8);
    assert_int_equal(p3->out_shape.dim[1], 2);
    assert_int_equal(p3->out_shape.dim[2], 5);
    /* a matrix times a stack: [10,8] . [2,8,5] = 2x10x5 */
    const struct memest_layer *bc2 = memest_model_layer(m, 7);
    assert_int_equal(bc2->out_shape.dim[0], 2);
    assert_int_equal(bc2->out_shape.dim[1], 10);
    assert_int_equal(bc2->out_shape.dim[2], 5);
    assert_int_equal(bc2->macs_per_sample, 800);
    assert_int_equal(memest_model_parameter_count(m), 288);
    /* activation memory: the input, every output and the score block */
    {
        struct memest_totals tot;
        struct memest_layer_estimate rows[9];
        size_t n = 0;
        assert_int_equal(memest_estimate_totals(m, 2, MEMEST_FP16, &tot),
                         MEMEST_OK);
        assert_int_equal(tot.activation_bytes,
                         2 * 2 * (80 + 80 + 100 + 80 + 100 + 100 + 80 + 80 +
                                  80 + 100));
        assert_int_equal(tot.macs, 2 * (4160 + 800 + 800 + 800));
        assert_int_equal(memest_estimate_layers(m, 2, MEMEST_FP16, rows, 9,
                                                &n),
                         MEMEST_OK);
        assert_int_equal(rows[1].activation_bytes, 2 * 2 * (80 + 100));
        assert_int_equal(rows[1].output_elements, 2 * 80);
    }
    memest_model_destroy(m);
    m = parse_ok("input 6x12\nattention heads=3 bias=no\n");
    assert_int_equal(memest_model_layer(m, 0)->parameter_count, 576);
    assert_int_equal(memest_model_layer(m, 0)->macs_per_sample,
                     4 * 6 * 144 + 2 * 36 * 12);
    memest_model_destroy(m);
}

/* Dilated convolutions and ceil-mode pools, by hand. */
static void test_dilation_ceil(void **state)
{
    /* conv d=2 k=3 spans 5 cells: (13 + 4 - 5) + 1 = 13, (12 + 4 - 5) + 1 =
     * 12; MACs 6*13*12 outputs * 3*3*3 taps, as undilated; parameters
     * 6*3*9 + 6. conv k=3x2 s=2x1 d=1x3 g=3 spans 3x4: (13 - 3) / 2 + 1 =
     * 6, 12 - 4 + 1 = 9; MACs 6*6*9 * 2*3*2. maxpool k=2 s=2 ceil on 6x9:
     * floor 3x4, ceil 3x5 (the last window starts at 8 < 9, inside).
     * avgpool k=3 s=2 p=1 ceil on 3x5: padded 5x7, floor 2x3, ceil 2x3
     * ((5 - 3) % 2 = 0, (7 - 3) % 2 = 0: nothing to add). avgpool k=2
     * s=2 p=1 ceil on 2x3: padded 4x5, floor 2x2; ceil would add a
     * column ((5 - 2) % 2 = 1) but its window would start at 2 * 2 = 4 >=
     * 3 + 1, in the trailing padding, which PyTorch's rule drops: 2x2.
     * maxpool k=2 s=2 p=0 ceil on 5x5 (by the last input): 3x3. */
    memest_model *m = parse_ok(
        "input 3x13x12\nconv2d 6 k=3 p=2 d=2\n"
        "conv2d 6 k=3x2 s=2x1 d=1x3 g=3\nmaxpool k=2 s=2 ceil=yes\n"
        "avgpool k=3 s=2 p=1 ceil=yes\navgpool k=2 s=2 p=1 ceil=yes\n");
    const struct memest_layer *L;
    (void)state;
    L = memest_model_layer(m, 0);
    assert_int_equal(L->out_shape.dim[1], 13);
    assert_int_equal(L->out_shape.dim[2], 12);
    assert_int_equal(L->macs_per_sample, 6 * 13 * 12 * 27);
    assert_int_equal(L->parameter_count, 6 * 27 + 6);
    assert_int_equal(L->dilation_h, 2);
    L = memest_model_layer(m, 1);
    assert_int_equal(L->out_shape.dim[1], 6);
    assert_int_equal(L->out_shape.dim[2], 9);
    assert_int_equal(L->macs_per_sample, 6 * 6 * 9 * 12);
    assert_int_equal(L->parameter_count, 6 * 2 * 6 + 6);
    L = memest_model_layer(m, 2);
    assert_int_equal(L->out_shape.dim[1], 3);
    assert_int_equal(L->out_shape.dim[2], 5);
    assert_int_equal(L->ceil_mode, 1);
    L = memest_model_layer(m, 3);
    assert_int_equal(L->out_shape.dim[1], 2);
    assert_int_equal(L->out_shape.dim[2], 3);
    L = memest_model_layer(m, 4);
    assert_int_equal(L->out_shape.dim[1], 2);
    assert_int_equal(L->out_shape.dim[2], 2);
    memest_model_destroy(m);
    m = parse_ok("input 1x5x5\nmaxpool k=2 s=2 ceil=yes\n");
    assert_int_equal(memest_model_layer(m, 0)->out_shape.dim[1], 3);
    memest_model_destroy(m);
    /* pad p=1,0,2,3 on 3x5x4: 3x(5+1+2)x(4+0+3), no parameters, no MACs */
    m = parse_ok("input 3x5x4\npad p=1,0,2,3 value=2.5\n");
    L = memest_model_layer(m, 0);
    assert_int_equal(L->out_shape.dim[0], 3);
    assert_int_equal(L->out_shape.dim[1], 8);
    assert_int_equal(L->out_shape.dim[2], 7);
    assert_int_equal(L->output_elements, 3 * 8 * 7);
    assert_int_equal(L->parameter_count, 0);
    assert_int_equal(L->macs_per_sample, 0);
    assert_true(L->pad_value == 2.5);
    memest_model_destroy(m);
}

static void test_groups(void **state)
{
    memest_model *m;
    const struct memest_layer *L;
    (void)state;

    /* depthwise: 8 groups of 1 channel: 8*1*9 + 8 */
    m = parse_ok("input 8x10x10\nconv2d 8 k=3 g=8\n");
    L = memest_model_layer(m, 0);
    assert_int_equal(L->parameter_count, 80);
    assert_int_equal(L->macs_per_sample, 8 * 8 * 8 * 9);
    memest_model_destroy(m);

    /* 4 in, 6 out, 2 groups: 6*(4/2)*9 + 6 = 114 */
    m = parse_ok("input 4x5x5\nconv2d 6 k=3 g=2 p=1\n");
    L = memest_model_layer(m, 0);
    assert_int_equal(L->parameter_count, 114);
    assert_int_equal(L->macs_per_sample, 6 * 5 * 5 * 2 * 9);
    memest_model_destroy(m);

    /* 1x1 grouped, no bias: 12*(6/3)*1 */
    m = parse_ok("input 6x3x3\nconv2d 12 k=1 g=3 bias=no\n");
    L = memest_model_layer(m, 0);
    assert_int_equal(L->parameter_count, 24);
    assert_int_equal(L->weight_count, 24);
    memest_model_destroy(m);
}

/* ---- Training memory -------------------------------------------------- */

static void test_training(void **state)
{
    memest_model *m = parse_ok(cnn_text);
    struct memest_training t;
    /* N = 54668 parameters, A = 4*18172 = 72688 activation elements */
    const uint64_t N = 54668;
    const uint64_t A = 72688;
    (void)state;

    assert_int_equal(
        memest_training_memory(m, 4, MEMEST_FP32, MEMEST_OPT_SGD, &t),
        MEMEST_OK);
    assert_int_equal(t.parameter_bytes, 4 * N);
    assert_int_equal(t.gradient_bytes, 4 * N);
    assert_int_equal(t.optimizer_state_bytes, 0);
    assert_int_equal(t.activation_bytes, 4 * A);
    /* Working buffers per sample: activation gradients 12288 (conv2's
     * input 4096 + output 8192, the largest pair) + gelu pre-activations
     * 100 (dense 100 act=gelu), at 4 bytes x batch 4; labels 4 x 4; conv1's
     * columns 3*5*5 x 16*16 = 19200 floats (conv2: 4*3*3 x 256 = 9216). */
    const uint64_t W32 = 4 * 4 * (12288 + 100) + 4 * 4 + 4 * 19200;
    assert_int_equal(t.working_bytes, W32);
    assert_int_equal(t.working_bytes, 275024);
    assert_int_equal(t.total_bytes, 728096 + W32);
    assert_int_equal(
        memest_training_memory(m, 4, MEMEST_FP32, MEMEST_OPT_MOMENTUM, &t),
        MEMEST_OK);
    assert_int_equal(t.optimizer_state_bytes, 4 * N);
    assert_int_equal(t.total_bytes, 946768 + W32);
    assert_int_equal(
        memest_training_memory(m, 4, MEMEST_FP32, MEMEST_OPT_ADAM, &t),
        MEMEST_OK);
    /* the original table's fp32 column: 4N + 4N + 8N + 4A */
    assert_int_equal(t.optimizer_state_bytes, 8 * N);
    assert_int_equal(t.total_bytes, 16 * N + 4 * A + W32);
    assert_int_equal(t.total_bytes - t.working_bytes, 1165440);
    assert_true(t.total_mb == (1165440 + W32) / MB);
    assert_int_equal(
        memest_training_memory(m, 4, MEMEST_INT8, MEMEST_OPT_ADAM, &t),
        MEMEST_OK);
    /* Other storage adds float staging: 2 x (largest input 8192 + largest
     * output 8192) per sample x batch 4, and the largest layer's 51300
     * parameter gradients (dense 100: 512*100 + 100). */
    const uint64_t STAGE = 4 * 4 * 2 * (8192 + 8192) + 4 * 51300;
    assert_int_equal(t.working_bytes,
                     1 * 4 * (12288 + 100) + 16 + 4 * 19200 + STAGE);
    assert_int_equal(t.total_bytes, 4 * N + A + t.working_bytes);

    /* mixed precision (the FP16 column): 4N + 2N + 8N + 2A */
    assert_int_equal(memest_training_memory_mixed(m, 4, MEMEST_OPT_ADAM, &t),
                     MEMEST_OK);
    assert_int_equal(t.parameter_bytes, 4 * N);
    assert_int_equal(t.gradient_bytes, 2 * N);
    assert_int_equal(t.optimizer_state_bytes, 8 * N);
    assert_int_equal(t.activation_bytes, 2 * A);
    const uint64_t W16 = 2 * 4 * (12288 + 100) + 16 + 4 * 19200 + STAGE;
    assert_int_equal(t.working_bytes, W16);
    assert_int_equal(t.total_bytes, 910728 + W16);
    assert_int_equal(memest_training_memory_mixed(m, 4, MEMEST_OPT_SGD, &t),
                     MEMEST_OK);
    assert_int_equal(t.total_bytes, 473384 + W16);
    assert_int_equal(
        memest_training_memory_mixed(m, 4, MEMEST_OPT_MOMENTUM, &t),
        MEMEST_OK);
    assert_int_equal(t.total_bytes, 4 * N + 2 * N + 4 * N + 2 * A + W16);

    assert_int_equal(
        memest_training_memory(m, 0, MEMEST_FP32, MEMEST_OPT_SGD, &t),
        MEMEST_E_RANGE);
    assert_int_equal(memest_training_memory(m, 1, MEMEST_FP32,
                                            (enum memest_optimizer)7, &t),
                     MEMEST_E_INVALID);
    memest_model_destroy(m);

    /* the worked example under Adam: 16N + 4A vs 14N + 2A */
    assert_int_equal(memest_model_preset("mlp:784-64-10", &m, NULL),
                     MEMEST_OK);
    assert_int_equal(
        memest_training_memory(m, 32, MEMEST_FP32, MEMEST_OPT_ADAM, &t),
        MEMEST_OK);
    /* working: gradients of dense2's 64 + 10 per sample, 32 labels */
    assert_int_equal(t.working_bytes, 4 * 32 * 74 + 4 * 32);
    assert_int_equal(t.total_bytes, 16 * 50890 + 4 * 27456 + 9600);
    assert_int_equal(memest_training_memory_mixed(m, 32, MEMEST_OPT_ADAM, &t),
                     MEMEST_OK);
    /* + staging: 2 x (784 + 64) floats per sample, dense1's 50240 */
    assert_int_equal(t.working_bytes,
                     2 * 32 * 74 + 4 * 32 + 4 * 32 * 2 * 848 + 4 * 50240);
    assert_int_equal(t.total_bytes,
                     14 * 50890 + 2 * 27456 + t.working_bytes);
    memest_model_destroy(m);
}

/* ---- Overflow ----------------------------------------------------------- */

static void test_batch_overflow(void **state)
{
    memest_model *m = NULL;
    struct memest_totals t;
    struct memest_layer_estimate rows[3];
    struct memest_training tr;
    size_t n;
    double mb = 0;
    (void)state;

    assert_int_equal(memest_model_preset("mlp:784-64-10", &m, NULL),
                     MEMEST_OK);
    /* 858 elements per sample * 2^60 samples does not fit in 64 bits */
    assert_int_equal(
        memest_estimate_totals(m, UINT64_C(1) << 60, MEMEST_FP32, &t),
        MEMEST_E_OVERFLOW);
    assert_int_equal(memest_estimate_layers(m, UINT64_C(1) << 60,
                                            MEMEST_FP32, rows, 3, &n),
                     MEMEST_E_OVERFLOW);
    assert_int_equal(memest_training_memory(m, UINT64_C(1) << 60,
                                            MEMEST_FP32, MEMEST_OPT_SGD, &tr),
                     MEMEST_E_OVERFLOW);
    /* ... but the MB figure used for fitting is computed wide */
    assert_int_equal(
        memest_total_memory_mb(m, UINT64_C(1) << 60, MEMEST_FP32, &mb),
        MEMEST_OK);
    assert_true(mb == 50890.0 * 4 / MB + 858.0 * 4 * 0x1p60 / MB);
    /* MACs are the largest per-sample count: 784*64 + 64*10 = 50816 */
    assert_int_equal(memest_estimate_totals(m, UINT64_MAX / 50816,
                                            MEMEST_FP32, &t),
                     MEMEST_OK);
    assert_int_equal(t.macs, (UINT64_MAX / 50816) * 50816);
    assert_int_equal(memest_estimate_totals(m, UINT64_MAX / 50816 + 1,
                                            MEMEST_FP32, &t),
                     MEMEST_E_OVERFLOW);
    memest_model_destroy(m);
}

/* concat along each axis of a sample, by hand: 2x4x6 with 2x3x6 along h
 * is 2x7x6 (84), with 2x4x5 along w 2x4x11 (88); YOLO's heads, 27x(H*W)
 * reshaped and joined along their second dimension: 27x16 and 27x64 make
 * 27x80 (2160). No parameters, no MACs. */
static void test_concat_axes(void **state)
{
    memest_model *m = parse_ok("input 2x4x6\n"
                               "maxpool k=1 name=a\n"
                               "slice axis=h begin=1 end=4 in=input name=b\n"
                               "concat in=a,b axis=h name=ch\n"
                               "slice axis=w begin=1 end=6 in=input name=c\n"
                               "concat in=a,c axis=w name=cw\n"
                               "slice axis=h end=4 in=ch name=chs\n"
                               "slice axis=w end=6 in=cw name=cws\n"
                               "concat in=chs,cws name=cc\n");
    (void)state;
    const struct memest_layer *ch = memest_model_layer(m, 2);
    assert_int_equal(ch->kind, MEMEST_KIND_CONCAT);
    assert_int_equal(ch->concat_axis, 1);
    assert_int_equal(ch->out_shape.rank, 3);
    assert_int_equal(ch->out_shape.dim[0], 2);
    assert_int_equal(ch->out_shape.dim[1], 7);
    assert_int_equal(ch->out_shape.dim[2], 6);
    assert_int_equal(ch->output_elements, 84);
    assert_int_equal(ch->parameter_count, 0);
    assert_int_equal(ch->macs_per_sample, 0);
    const struct memest_layer *cw = memest_model_layer(m, 4);
    assert_int_equal(cw->concat_axis, 2);
    assert_int_equal(cw->out_shape.dim[0], 2);
    assert_int_equal(cw->out_shape.dim[1], 4);
    assert_int_equal(cw->out_shape.dim[2], 11);
    assert_int_equal(cw->output_elements, 88);
    const struct memest_layer *cc = memest_model_layer(m, 7);
    assert_int_equal(cc->concat_axis, 0);
    assert_int_equal(cc->out_shape.dim[0], 4);
    assert_int_equal(cc->out_shape.dim[1], 4);
    assert_int_equal(cc->out_shape.dim[2], 6);
    assert_int_equal(cc->output_elements, 96);
    memest_model_destroy(m);

    m = parse_ok("input 27x4x4\n"
                 "reshape shape=27x16 name=r1\n"
                 "conv2d 27 k=1 in=input\n"
                 "resize scale=2 mode=nearest\n"
                 "reshape shape=27x64 name=r2\n"
                 "concat in=r1,r2 axis=h\n");
    const struct memest_layer *y = memest_model_layer(m, 4);
    assert_int_equal(y->out_shape.rank, 2);
    assert_int_equal(y->out_shape.dim[0], 27);
    assert_int_equal(y->out_shape.dim[1], 80);
    assert_int_equal(y->output_elements, 2160);
    assert_int_equal(y->macs_per_sample, 0);
    memest_model_destroy(m);
}

/* lstm and gru counted by hand: PyTorch's parameters (nn.LSTM(5, 4):
 * 4*4*5 + 4*4*4 + 2*16 = 176; bidirectional twice that), MACs T * G *
 * (D + H) * H per direction, output T x dirs*H or dirs*H; and the
 * state_dict tensors with their offsets in the concatenation. */
static void test_rnn(void **state)
{
    (void)state;
    memest_model *m = NULL;
    assert_int_equal(memest_model_parse("input 7x5\n"
                                        "lstm 4 name=a\n"
                                        "gru 3 dir=bidirectional seq=no "
                                        "lbr=no name=b\n"
                                        "gru 2 dir=reverse seq=yes "
                                        "bias=no in=a name=c\n"
                                        "flatten in=c name=f\n"
                                        "concat in=b,f\n",
                                        &m, NULL),
                     MEMEST_OK);
    const struct memest_layer *a = memest_model_layer(m, 0);
    const struct memest_layer *b = memest_model_layer(m, 1);
    const struct memest_layer *c = memest_model_layer(m, 2);
    assert_int_equal(a->parameter_count, 176);
    assert_int_equal(a->macs_per_sample, 7 * 4 * (5 + 4) * 4);
    assert_int_equal(a->out_shape.rank, 2);
    assert_int_equal(a->out_shape.dim[0], 7);
    assert_int_equal(a->out_shape.dim[1], 4);
    /* gru(4 -> 3) both ways: 2 * (9*4 + 9*3 + 2*9) = 162 */
    assert_int_equal(b->parameter_count, 162);
    assert_int_equal(b->macs_per_sample, 2 * 7 * 3 * (4 + 3) * 3);
    assert_int_equal(b->out_shape.rank, 1);
    assert_int_equal(b->out_shape.dim[0], 6);
    assert_int_equal(b->linear_before_reset, 0);
    assert_int_equal(b->direction, MEMEST_RNN_BIDIRECTIONAL);
    assert_int_equal(c->parameter_count, 6 * 4 + 6 * 2);
    assert_int_equal(c->linear_before_reset, 1);
    assert_int_equal(c->return_sequence, 1);
    struct memest_param_tensor pt[MEMEST_PARAM_TENSORS_MAX];
    assert_int_equal(memest_layer_param_tensors(b, pt), 8);
    assert_string_equal(pt[0].suffix, ".weight_ih_l0");
    assert_int_equal(pt[1].offset, 9 * 4);
    assert_string_equal(pt[4].suffix, ".weight_ih_l0_reverse");
    assert_int_equal(pt[4].offset, 9 * 4 + 9 * 3);
    assert_int_equal(pt[5].offset, 2 * 9 * 4 + 9 * 3);
    assert_string_equal(pt[7].suffix, ".bias_hh_l0_reverse");
    assert_int_equal(pt[7].in_bias, 1);
    assert_int_equal(pt[7].offset, 27);
    assert_int_equal(memest_layer_param_tensors(c, pt), 2);
    assert_int_equal(pt[1].dim[0], 6);
    assert_int_equal(pt[1].dim[1], 2);
    memest_model_destroy(m);
}

static void test_names(void **state)
{
    (void)state;
    assert_string_equal(memest_kind_name(MEMEST_KIND_CONV2D), "conv2d");
    assert_string_equal(memest_kind_name(MEMEST_KIND_INPUT), "input");
    assert_null(memest_kind_name((enum memest_kind)42));
    {
        /* every kind, in the order and with the values of the enum as it
         * was written out before MEMEST_KINDS generated it, and the view
         * rule (output = the input's buffer) by hand */
        static const struct {
            enum memest_kind kind;
            int value;
            const char *name;
            int view;
        } kinds[] = {
            {MEMEST_KIND_INPUT, 0, "input", 0},
            {MEMEST_KIND_DENSE, 1, "dense", 0},
            {MEMEST_KIND_CONV2D, 2, "conv2d", 0},
            {MEMEST_KIND_MAXPOOL, 3, "maxpool", 0},
            {MEMEST_KIND_AVGPOOL, 4, "avgpool", 0},
            {MEMEST_KIND_FLATTEN, 5, "flatten", 1},
            {MEMEST_KIND_ACTIVATION, 6, "activation", 0},
            {MEMEST_KIND_GLOBALAVGPOOL, 7, "globalavgpool", 0},
            {MEMEST_KIND_ADD, 8, "add", 0},
            {MEMEST_KIND_CONCAT, 9, "concat", 0},
            {MEMEST_KIND_BATCHNORM, 10, "batchnorm", 0},
            {MEMEST_KIND_IDENTITY, 11, "identity", 1},
            {MEMEST_KIND_DROPOUT, 12, "dropout", 1},
            {MEMEST_KIND_SUB, 13, "sub", 0},
            {MEMEST_KIND_MUL, 14, "mul", 0},
            {MEMEST_KIND_DIV, 15, "div", 0},
            {MEMEST_KIND_CONV_TRANSPOSE, 16, "convtranspose", 0},
            {MEMEST_KIND_RESIZE, 17, "resize", 0},
            {MEMEST_KIND_PAD, 18, "pad", 0},
            {MEMEST_KIND_SHUFFLE, 19, "shuffle", 0},
            {MEMEST_KIND_SLICE, 20, "slice", 0},
            {MEMEST_KIND_RESHAPE, 21, "reshape", 1},
            {MEMEST_KIND_LAYERNORM, 22, "layernorm", 0},
            {MEMEST_KIND_CLSTOKEN, 23, "clstoken", 0},
            {MEMEST_KIND_POSEMBED, 24, "posembed", 0},
            {MEMEST_KIND_MATMUL, 25, "matmul", 0},
            {MEMEST_KIND_TRANSPOSE, 26, "transpose", 0},
            {MEMEST_KIND_ATTENTION, 27, "attention", 0},
            {MEMEST_KIND_LSTM, 28, "lstm", 0},
            {MEMEST_KIND_GRU, 29, "gru", 0},
        };
        const size_t n = sizeof kinds / sizeof kinds[0];
        assert_int_equal(MEMEST_KIND_COUNT, n);
        for (size_t i = 0; i < n; i++) {
            assert_int_equal((int)kinds[i].kind, kinds[i].value);
            assert_string_equal(memest_kind_name(kinds[i].kind),
                                kinds[i].name);
            assert_int_equal(memest_kind_is_view(kinds[i].kind),
                             kinds[i].view);
        }
        assert_null(memest_kind_name((enum memest_kind)MEMEST_KIND_COUNT));
        assert_int_equal(
            memest_kind_is_view((enum memest_kind)MEMEST_KIND_COUNT), 0);
        assert_int_equal(memest_kind_is_view((enum memest_kind)-1), 0);
    }
    assert_string_equal(memest_act_name(MEMEST_ACT_TANH), "tanh");
    assert_null(memest_act_name((enum memest_act)42));
    /* the mobile activations, appended in this order */
    {
        static const char *const names[] = {"silu", "hardsigmoid",
                                            "hardswish", "leakyrelu", "elu",
                                            "softplus", "clip"};
        for (int k = 0; k < 7; k++) {
            assert_string_equal(
                memest_act_name((enum memest_act)(MEMEST_ACT_SILU + k)),
                names[k]);
        }
        assert_int_equal(MEMEST_ACT_CLIP + 1, MEMEST_ACT_COUNT);
        assert_null(memest_act_name((enum memest_act)MEMEST_ACT_COUNT));
    }
    {
        struct memest_shape s = {3, {8, 14, 14}};
        char buf[MEMEST_SHAPE_TEXT_MAX];
        assert_int_equal(memest_shape_format(&s, buf, sizeof buf), 7);
        assert_string_equal(buf, "8x14x14");
        assert_int_equal(memest_shape_format(&s, buf, 4), 7);
        assert_string_equal(buf, "8x1");
        s.rank = 1;
        s.dim[0] = UINT64_MAX;
        memest_shape_format(&s, buf, sizeof buf);
        assert_string_equal(buf, "18446744073709551615");
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_worked_example),
        cmocka_unit_test(test_cnn_by_hand),
        cmocka_unit_test(test_peak_mlp),
        cmocka_unit_test(test_windows),
        cmocka_unit_test(test_pool_stride_defaults_to_kernel),
        cmocka_unit_test(test_dilation_ceil),
        cmocka_unit_test(test_groups),
        cmocka_unit_test(test_binary),
        cmocka_unit_test(test_training),
        cmocka_unit_test(test_batch_overflow),
        cmocka_unit_test(test_sequence),
        cmocka_unit_test(test_concat_axes),
        cmocka_unit_test(test_attention_ops),
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_rnn),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
