/*
 * The MLPerf Tiny presets (the text files of libmemest/models) against the
 * reference architectures, worked out by hand below from the benchmark's
 * Keras definitions: every layer's kind, output shape, parameters (batch norms
 * folded: weights + one bias per output channel) and MACs (output elements
 * times (in_c / groups) * kh * kw for a convolution, in * out for a dense
 * layer), the totals, the folding and padding of the convolutions, and the
 * arena of the greedy planner against the live-set lower bound at fp32 and
 * batch 1 (tensor lifetimes and placements traced by hand in the comments).
 *
 * The sequence presets (kwt, lstm-kws) against PyTorch's modules, their
 * parameters and MACs worked out by formula in the comments (nn.Linear over
 * the last axis, nn.LayerNorm, nn.MultiheadAttention, nn.LSTM).
 *
 * And the ONNX exports of the presets by PyTorch (tests/data/models, made
 * by scripts/make-model-fixtures.py; argv[1]) count the same parameters
 * and MACs, with the same input and output shapes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "edgefit/memest.h"

static const char *fixtures; /* argv[1]: tests/data/models */

/* What one layer must be. rank 1: a vector of c; rank 2: a sequence of c
 * steps of h features (T x D); rank 3: c x h x w. */
struct want {
    const char *name;
    enum memest_kind kind;
    uint64_t params;
    uint64_t macs;
    unsigned rank;
    uint64_t c, h, w;
};

#define CONV MEMEST_KIND_CONV2D
#define DENSE MEMEST_KIND_DENSE
#define ADD MEMEST_KIND_ADD

static memest_model *preset(const char *name)
{
    memest_model *m = NULL;
    struct memest_diag d;
    if (memest_model_preset(name, &m, &d) != MEMEST_OK) {
        char buf[600];
        memest_diag_format(&d, buf, sizeof buf);
        fail_msg("preset %s: %s", name, buf);
    }
    return m;
}

/* Compare the model's layers with want[0..n-1] and the sums of the
 * expected values with the totals derived by hand (a check of the
 * per-layer arithmetic itself). */
static void check_layers(const memest_model *m, const struct want *want,
                         size_t n, uint64_t params, uint64_t macs)
{
    uint64_t sum_params = 0, sum_macs = 0;
    for (size_t i = 0; i < n; i++) {
        sum_params += want[i].params;
        sum_macs += want[i].macs;
    }
    assert_int_equal(sum_params, params);
    assert_int_equal(sum_macs, macs);

    assert_int_equal(memest_model_layer_count(m), n);
    for (size_t i = 0; i < n; i++) {
        const struct memest_layer *l = memest_model_layer(m, i);
        const struct want *w = &want[i];
        if (strcmp(l->name, w->name) || l->kind != w->kind ||
            l->parameter_count != w->params ||
            l->macs_per_sample != w->macs || l->out_shape.rank != w->rank ||
            l->out_shape.dim[0] != w->c ||
            (w->rank >= 2 && l->out_shape.dim[1] != w->h) ||
            (w->rank == 3 && (l->out_shape.dim[1] != w->h ||
                              l->out_shape.dim[2] != w->w))) {
            fail_msg("%s layer %zu: got %s %s params %llu macs %llu shape "
                     "%llux%llux%llu, want %s %s params %llu macs %llu "
                     "shape %llux%llux%llu",
                     memest_model_name(m), i, l->name,
                     memest_kind_name(l->kind),
                     (unsigned long long)l->parameter_count,
                     (unsigned long long)l->macs_per_sample,
                     (unsigned long long)l->out_shape.dim[0],
                     (unsigned long long)l->out_shape.dim[1],
                     (unsigned long long)l->out_shape.dim[2], w->name,
                     memest_kind_name(w->kind),
                     (unsigned long long)w->params,
                     (unsigned long long)w->macs,
                     (unsigned long long)w->c, (unsigned long long)w->h,
                     (unsigned long long)w->w);
        }
    }
    assert_int_equal(memest_model_parameter_count(m), params);
    struct memest_totals t;
    assert_int_equal(memest_estimate_totals(m, 1, MEMEST_FP32, &t),
                     MEMEST_OK);
    assert_int_equal(t.parameter_count, params);
    assert_int_equal(t.macs, macs);
    assert_int_equal(t.parameter_bytes, 4 * params);
    /* MACs scale with the batch */
    assert_int_equal(memest_estimate_totals(m, 7, MEMEST_FP32, &t),
                     MEMEST_OK);
    assert_int_equal(t.macs, 7 * macs);
}

static const struct memest_layer *find(const memest_model *m,
                                       const char *name)
{
    for (size_t i = 0; i < memest_model_layer_count(m); i++) {
        const struct memest_layer *l = memest_model_layer(m, i);
        if (strcmp(l->name, name) == 0) {
            return l;
        }
    }
    fail_msg("%s has no layer %s", memest_model_name(m), name);
    return NULL;
}

/* A conv2d or dense layer into which the batch norm bn was folded, with
 * Keras' epsilon and the activation that followed the batch norm. */
static void check_folded(const memest_model *m, const char *layer,
                         const char *bn, enum memest_act act)
{
    const struct memest_layer *l = find(m, layer);
    assert_non_null(l->folded_bn);
    assert_string_equal(l->folded_bn, bn);
    assert_true(l->bn_epsilon == 1e-3);
    assert_int_equal(l->has_bias, 1);
    assert_int_equal(l->act, act);
}

static void check_window(const struct memest_layer *l, uint64_t kh,
                         uint64_t kw, uint64_t sh, uint64_t sw, uint64_t top,
                         uint64_t left, uint64_t bottom, uint64_t right)
{
    assert_int_equal(l->kernel_h, kh);
    assert_int_equal(l->kernel_w, kw);
    assert_int_equal(l->stride_h, sh);
    assert_int_equal(l->stride_w, sw);
    assert_int_equal(l->pad_top, top);
    assert_int_equal(l->pad_left, left);
    assert_int_equal(l->pad_bottom, bottom);
    assert_int_equal(l->pad_right, right);
}

static void check_arena(const memest_model *m, uint64_t arena,
                        uint64_t lower_bound)
{
    struct memest_arena_plan plan;
    assert_int_equal(memest_plan_arena(m, 1, MEMEST_FP32, &plan), MEMEST_OK);
    print_message("%s: arena %llu B, live-set lower bound %llu B (fp32, "
                  "batch 1)\n", memest_model_name(m),
                  (unsigned long long)plan.arena_bytes,
                  (unsigned long long)plan.live_lower_bound_bytes);
    assert_int_equal(plan.live_lower_bound_bytes, lower_bound);
    assert_int_equal(plan.arena_bytes, arena);
    memest_arena_plan_free(&plan);
}

/* ---- ResNet-8 ------------------------------------------------------------ */

static void test_resnet8(void **state)
{
    (void)state;
    memest_model *m = preset("resnet8");
    /* 3x32x32 in; stacks at 32x32 (16 channels), 16x16 (32), 8x8 (64). */
    const struct want want[] = {
        /* conv 3x3, 3 -> 16 at 32x32 */
        {"conv1", CONV, 16 * 3 * 3 * 3 + 16, (16 * 32 * 32) * (3 * 3 * 3),
         3, 16, 32, 32},
        {"s1_conv1", CONV, 16 * 16 * 3 * 3 + 16,
         (16 * 32 * 32) * (16 * 3 * 3), 3, 16, 32, 32},
        {"s1_conv2", CONV, 16 * 16 * 3 * 3 + 16,
         (16 * 32 * 32) * (16 * 3 * 3), 3, 16, 32, 32},
        {"s1_add", ADD, 0, 0, 3, 16, 32, 32},
        /* stride 2: ceil(32 / 2) = 16 */
        {"s2_conv1", CONV, 32 * 16 * 3 * 3 + 32,
         (32 * 16 * 16) * (16 * 3 * 3), 3, 32, 16, 16},
        {"s2_conv2", CONV, 32 * 32 * 3 * 3 + 32,
         (32 * 16 * 16) * (32 * 3 * 3), 3, 32, 16, 16},
        /* the 1x1 shortcut has its own bias (no batch norm) */
        {"s2_short", CONV, 32 * 16 * 1 * 1 + 32, (32 * 16 * 16) * 16, 3, 32,
         16, 16},
        {"s2_add", ADD, 0, 0, 3, 32, 16, 16},
        {"s3_conv1", CONV, 64 * 32 * 3 * 3 + 64,
         (64 * 8 * 8) * (32 * 3 * 3), 3, 64, 8, 8},
        {"s3_conv2", CONV, 64 * 64 * 3 * 3 + 64,
         (64 * 8 * 8) * (64 * 3 * 3), 3, 64, 8, 8},
        {"s3_short", CONV, 64 * 32 * 1 * 1 + 64, (64 * 8 * 8) * 32, 3, 64, 8,
         8},
        {"s3_add", ADD, 0, 0, 3, 64, 8, 8},
        {"pool", MEMEST_KIND_AVGPOOL, 0, 0, 3, 64, 1, 1},
        {"flatten", MEMEST_KIND_FLATTEN, 0, 0, 1, 64, 0, 0},
        {"fc", DENSE, 64 * 10 + 10, 64 * 10, 1, 10, 0, 0},
    };
    /* 448 + 2,320 + 2,320 + 4,640 + 9,248 + 544 + 18,496 + 36,928 + 2,112
     * + 650; Keras' summary says 78,666 with the 4 x 240 batch-norm
     * values, 78,666 - 960 = 77,706. MACs: 442,368 + 2 x 2,359,296 +
     * 1,179,648 + 2,359,296 + 131,072 + 1,179,648 + 2,359,296 + 131,072 +
     * 640 (the 12.5 M of the benchmark's figures). */
    check_layers(m, want, sizeof want / sizeof want[0], 77706, 12501632);

    check_folded(m, "conv1", "bn1", MEMEST_ACT_RELU);
    check_folded(m, "s1_conv1", "s1_bn1", MEMEST_ACT_RELU);
    check_folded(m, "s1_conv2", "s1_bn2", MEMEST_ACT_NONE);
    check_folded(m, "s3_conv2", "s3_bn2", MEMEST_ACT_NONE);
    assert_null(find(m, "s2_short")->folded_bn);
    assert_int_equal(find(m, "s2_add")->act, MEMEST_ACT_RELU);
    assert_int_equal(find(m, "fc")->act, MEMEST_ACT_SOFTMAX);
    /* Keras 'same' at stride 2 on 32: one row and column of padding,
     * both at the bottom and right */
    check_window(find(m, "s2_conv1"), 3, 3, 2, 2, 0, 0, 1, 1);
    check_window(find(m, "s1_conv1"), 3, 3, 1, 1, 1, 1, 1, 1);
    check_window(find(m, "s3_short"), 1, 1, 2, 2, 0, 0, 0, 0);

    /* The residual wiring: tensor 0 is the input, tensor 1 + i layer i. */
    const struct memest_layer *add = find(m, "s1_add");
    assert_int_equal(add->input_count, 2);
    assert_int_equal(add->inputs[0], 1 + 0); /* conv1 (bn1 folded) */
    assert_int_equal(add->inputs[1], 1 + 2); /* s1_conv2 */
    const struct memest_layer *short2 = find(m, "s2_short");
    assert_int_equal(short2->inputs[0], 1 + 3); /* s1_add */

    /*
     * Lifetimes (elements, steps): input 3,072 [0,0]; conv1 16,384 [0,3]
     * (read by s1_add at step 3); s1_conv1 16,384 [1,2]; s1_conv2 16,384
     * [2,3]; s1_add 16,384 [3,6] (read by s2_short at 6); the 32- and
     * 64-channel stacks are smaller. At step 2, conv1 + s1_conv1 +
     * s1_conv2 = 49,152 elements are alive: the lower bound, 196,608 B.
     * Greedy by size (ties by index): conv1 at 0, s1_conv1 at 16,384,
     * s1_conv2 at 32,768 (alive with both at step 2), s1_add at 16,384
     * (alive with conv1 and s1_conv2 at step 3, not with s1_conv1); every
     * smaller tensor fits below 49,152: the arena meets the bound.
     */
    check_arena(m, 4 * 49152, 4 * 49152);
    memest_model_destroy(m);
}

/* ---- DS-CNN -------------------------------------------------------------- */

static void test_ds_cnn(void **state)
{
    (void)state;
    memest_model *m = preset("ds-cnn");
    /* 1x49x10 in; conv 10x4 stride 2, 'same': ceil(49/2) x ceil(10/2) =
     * 25x5, 64 channels, kept by the four separable blocks. */
    const uint64_t hw = 25 * 5;
    struct want want[14] = {
        {"conv1", CONV, 64 * 1 * 10 * 4 + 64, (64 * hw) * (1 * 10 * 4), 3,
         64, 25, 5},
        {"drop1", MEMEST_KIND_DROPOUT, 0, 0, 3, 64, 25, 5},
    };
    static char names[8][8];
    for (int b = 0; b < 4; b++) {
        struct want *dw = &want[2 + 2 * b], *pw = &want[3 + 2 * b];
        snprintf(names[2 * b], sizeof names[0], "dw%d", b + 1);
        snprintf(names[2 * b + 1], sizeof names[0], "pw%d", b + 1);
        /* depthwise 3x3: one 3x3 filter per channel (groups 64) */
        *dw = (struct want){names[2 * b], CONV, 64 * 1 * 3 * 3 + 64,
                            (64 * hw) * (1 * 3 * 3), 3, 64, 25, 5};
        /* pointwise 1x1, 64 -> 64 */
        *pw = (struct want){names[2 * b + 1], CONV, 64 * 64 * 1 * 1 + 64,
                            (64 * hw) * (64 * 1 * 1), 3, 64, 25, 5};
    }
    want[10] = (struct want){"drop2", MEMEST_KIND_DROPOUT, 0, 0, 3, 64, 25,
                             5};
    /* the reference's 24x5 window at stride 24x5: floor((25 - 24) / 24) + 1
     * = 1 row, 1 column */
    want[11] = (struct want){"pool", MEMEST_KIND_AVGPOOL, 0, 0, 3, 64, 1, 1};
    want[12] = (struct want){"flatten", MEMEST_KIND_FLATTEN, 0, 0, 1, 64, 0,
                             0};
    want[13] = (struct want){"fc", DENSE, 64 * 12 + 12, 64 * 12, 1, 12, 0,
                             0};
    /* 2,624 + 4 x (640 + 4,160) + 780 = 22,604; MACs 320,000 + 4 x
     * (72,000 + 512,000) + 768 = 2,656,768 */
    check_layers(m, want, 14, 22604, 2656768);

    const struct memest_layer *c1 = find(m, "conv1");
    /* 'same': 9 rows of padding (4 top, 5 bottom), 2 columns (1, 1) */
    check_window(c1, 10, 4, 2, 2, 4, 1, 5, 1);
    check_folded(m, "conv1", "bn1", MEMEST_ACT_RELU);
    check_folded(m, "dw3", "dw3_bn", MEMEST_ACT_RELU);
    check_folded(m, "pw4", "pw4_bn", MEMEST_ACT_RELU);
    assert_int_equal(find(m, "dw1")->groups, 64);
    assert_int_equal(find(m, "pw1")->groups, 1);
    check_window(find(m, "pool"), 24, 5, 24, 5, 0, 0, 0, 0);

    /*
     * Lifetimes: input 490 [0,0]; conv1 8,000 [0,2] (drop1 at step 1 is
     * its buffer, read by dw1 at step 2); each block output 8,000 alive
     * from its step to the next; pw4 [9,11] through drop2; pool 64
     * [11,13] through flatten; fc 12. The most alive at once is two
     * 8,000-element maps (step 2: conv1 and dw1): 16,000 elements,
     * 64,000 B. Greedy: the maps alternate between 0 and 8,000; the input
     * goes at 8,000 beside conv1, pool at 8,000 beside pw4: the arena
     * meets the bound.
     */
    check_arena(m, 4 * 16000, 4 * 16000);
    memest_model_destroy(m);
}

/* ---- MobileNetV1 0.25 ---------------------------------------------------- */

static void test_mobilenet(void **state)
{
    (void)state;
    memest_model *m = preset("mobilenetv1-0.25");
    /* (in channels, out channels, stride, output size) of the 13
     * separable blocks; the stem takes 96x96 to 48x48 with 8 channels. */
    static const struct {
        uint64_t cin, cout, stride, size;
    } blocks[13] = {
        {8, 16, 1, 48},    {16, 32, 2, 24},   {32, 32, 1, 24},
        {32, 64, 2, 12},   {64, 64, 1, 12},   {64, 128, 2, 6},
        {128, 128, 1, 6},  {128, 128, 1, 6},  {128, 128, 1, 6},
        {128, 128, 1, 6},  {128, 128, 1, 6},  {128, 256, 2, 3},
        {256, 256, 1, 3},
    };
    struct want want[30];
    static char names[26][8];
    want[0] = (struct want){"conv1", CONV, 8 * 3 * 3 * 3 + 8,
                            (8 * 48 * 48) * (3 * 3 * 3), 3, 8, 48, 48};
    for (int b = 0; b < 13; b++) {
        const uint64_t ci = blocks[b].cin, co = blocks[b].cout;
        const uint64_t s = blocks[b].size;
        snprintf(names[2 * b], sizeof names[0], "dw%d", b + 1);
        snprintf(names[2 * b + 1], sizeof names[0], "pw%d", b + 1);
        /* depthwise 3x3 (groups = channels) at the block's stride */
        want[1 + 2 * b] = (struct want){names[2 * b], CONV,
                                        ci * 1 * 3 * 3 + ci,
                                        (ci * s * s) * (1 * 3 * 3), 3, ci, s,
                                        s};
        /* pointwise 1x1 */
        want[2 + 2 * b] = (struct want){names[2 * b + 1], CONV,
                                        co * ci * 1 * 1 + co,
                                        (co * s * s) * (ci * 1 * 1), 3, co,
                                        s, s};
    }
    want[27] = (struct want){"pool", MEMEST_KIND_AVGPOOL, 0, 0, 3, 256, 1,
                             1};
    want[28] = (struct want){"flatten", MEMEST_KIND_FLATTEN, 0, 0, 1, 256,
                             0, 0};
    want[29] = (struct want){"fc", DENSE, 256 * 2 + 2, 256 * 2, 1, 2, 0, 0};
    /*
     * Parameters: 224 (stem) + 80 + 144 + 160 + 544 + 320 + 1,056 + 320 +
     * 2,112 + 640 + 4,160 + 640 + 8,320 + 5 x (1,280 + 16,512) + 1,280 +
     * 33,024 + 2,560 + 65,792 + 514 = 210,850 (Keras: 221,794 with the
     * 4 x 2,736 batch-norm values). MACs: 497,664 + 165,888 + 294,912 +
     * 82,944 + 294,912 + 165,888 + 589,824 + 41,472 + 294,912 + 82,944 +
     * 589,824 + 20,736 + 294,912 + 5 x (41,472 + 589,824) + 10,368 +
     * 294,912 + 20,736 + 589,824 + 512 = 7,489,664 (7.5 M).
     */
    check_layers(m, want, 30, 210850, 7489664);

    check_window(find(m, "conv1"), 3, 3, 2, 2, 0, 0, 1, 1);
    check_window(find(m, "dw2"), 3, 3, 2, 2, 0, 0, 1, 1);
    check_window(find(m, "dw13"), 3, 3, 1, 1, 1, 1, 1, 1);
    assert_int_equal(find(m, "dw7")->groups, 128);
    check_folded(m, "dw12", "dw12_bn", MEMEST_ACT_RELU);
    check_folded(m, "pw13", "pw13_bn", MEMEST_ACT_RELU);

    /*
     * Lifetimes (elements): input 27,648 [0,0]; conv1 18,432 [0,1]; dw1
     * 18,432 [1,2]; pw1 36,864 [2,3]; dw2 9,216 [3,4]; then every map is
     * at most 18,432. The most alive at once is at step 2, dw1 + pw1 =
     * 55,296 elements, 221,184 B. Greedy by size: pw1 at 0; the input at
     * 0 (it dies before pw1 is born); conv1 at 27,648 (alive with the
     * input at step 0); dw1, alive with conv1 at step 1 and with pw1 at
     * step 2, fits neither below 27,648 nor between them: at 46,080, to
     * 64,512. The smaller maps all fit below that: the greedy arena is
     * 64,512 elements, 258,048 B, 1.17x the bound. The plan also tries
     * execution order, where conv1 goes to 27,648 and dw1 back to 0 once
     * the input has died, so every pair fits in the bound: 221,184 B.
     */
    check_arena(m, 4 * 55296, 4 * 55296);
    {
        struct memest_arena_plan plan;
        assert_int_equal(memest_plan_arena(m, 1, MEMEST_FP32, &plan),
                         MEMEST_OK);
        assert_int_equal(plan.greedy_bytes, 4 * 64512);
        memest_arena_plan_free(&plan);
    }
    memest_model_destroy(m);
}

/* ---- FC autoencoder ------------------------------------------------------ */

static void test_fc_autoencoder(void **state)
{
    (void)state;
    memest_model *m = preset("fc-autoencoder");
    static const uint64_t widths[11] = {640, 128, 128, 128, 128, 8,
                                        128, 128, 128, 128, 640};
    struct want want[10];
    static char names[10][8];
    uint64_t params = 0;
    for (int i = 0; i < 10; i++) {
        const uint64_t in = widths[i], out = widths[i + 1];
        snprintf(names[i], sizeof names[0], "fc%d", i + 1);
        /* in * out weights + out biases (folded batch norm or, for fc10,
         * its own) */
        want[i] = (struct want){names[i], DENSE, in * out + out, in * out, 1,
                                out, 0, 0};
        params += in * out + out;
    }
    /* 82,048 + 3 x 16,512 + 1,032 + 1,152 + 3 x 16,512 + 82,560 = 265,864
     * (Keras: 269,992 with the 4 x 1,032 batch-norm values); MACs 81,920 +
     * 3 x 16,384 + 1,024 + 1,024 + 3 x 16,384 + 81,920 = 264,192 */
    assert_int_equal(params, 265864);
    check_layers(m, want, 10, 265864, 264192);
    for (int i = 1; i <= 9; i++) {
        char bn[8];
        snprintf(bn, sizeof bn, "bn%d", i);
        check_folded(m, names[i - 1], bn, MEMEST_ACT_RELU);
    }
    assert_int_equal(find(m, "fc10")->act, MEMEST_ACT_NONE);
    assert_null(find(m, "fc10")->folded_bn);
    assert_int_equal(memest_model_output_shape(m).dim[0], 640);

    /* A chain: at most one layer's input and output alive at once, 640 +
     * 128 at the ends: 768 elements, 3,072 B; the input and fc10's output
     * share offset 0 (never alive together) and the 128-wide maps take
     * turns beside them. */
    check_arena(m, 4 * 768, 4 * 768);
    memest_model_destroy(m);
}

/* ---- KWT (keyword transformer) ------------------------------------------- */

#define LN MEMEST_KIND_LAYERNORM

static void test_kwt(void **state)
{
    (void)state;
    memest_model *m = preset("kwt");
    /*
     * 98x40 in (T = 98 frames, 40 MFCCs). PyTorch's counts by formula, D =
     * 64, T' = 99 tokens with the class token, MLP 256:
     *   embed nn.Linear(40, 64): 40*64 + 64 = 2,624 params, 98*40*64 =
     *     250,880 MACs (a Linear over the last axis: T*D*N);
     *   cls_token [1, 1, 64]: 64; pos_embedding [1, 99, 64]: 6,336;
     *   per block: nn.LayerNorm(64) 2*64 = 128 (0 MACs);
     *     nn.MultiheadAttention(64, 1): in_proj 3*64*64 + 3*64 = 12,480,
     *     out_proj 64*64 + 64 = 4,160, 16,640 params; MACs 4*T'*D*D =
     *     1,622,016 (Q, K, V and output projections) + 2*T'*T'*D =
     *     1,254,528 (Q.K^T and A.V): 2,876,544;
     *     nn.LayerNorm(64) 128; nn.Linear(64, 256) 16,640 params,
     *     99*64*256 = 1,622,016 MACs; nn.Linear(256, 64) 16,448 params,
     *     1,622,016 MACs; the residual adds 0:
     *     49,984 params and 6,120,576 MACs per block;
     *   head: nn.LayerNorm(64) 128, nn.Linear(64, 12) 780 params, 768
     *     MACs.
     * 2,624 + 64 + 6,336 + 4 x 49,984 + 128 + 780 = 209,868 parameters
     * (sum(p.numel()) of the PyTorch module gives the same); 250,880 +
     * 4 x 6,120,576 + 768 = 24,733,952 MACs.
     */
    struct want want[35] = {
        {"embed", DENSE, 40 * 64 + 64, 98 * 40 * 64, 2, 98, 64, 0},
        {"cls", MEMEST_KIND_CLSTOKEN, 64, 0, 2, 99, 64, 0},
        {"pos", MEMEST_KIND_POSEMBED, 99 * 64, 0, 2, 99, 64, 0},
    };
    static char names[4][7][10];
    static const char *const part[7] = {"ln1", "attn", "add1", "ln2",
                                        "fc1", "fc2", "add2"};
    for (int b = 0; b < 4; b++) {
        for (int k = 0; k < 7; k++) {
            snprintf(names[b][k], sizeof names[b][k], "b%d_%s", b + 1,
                     part[k]);
        }
        struct want *w = &want[3 + 7 * b];
        w[0] = (struct want){names[b][0], LN, 2 * 64, 0, 2, 99, 64, 0};
        w[1] = (struct want){names[b][1], MEMEST_KIND_ATTENTION,
                             3 * 64 * 64 + 3 * 64 + 64 * 64 + 64,
                             4 * 99 * 64 * 64 + 2 * 99 * 99 * 64, 2, 99, 64,
                             0};
        w[2] = (struct want){names[b][2], ADD, 0, 0, 2, 99, 64, 0};
        w[3] = (struct want){names[b][3], LN, 2 * 64, 0, 2, 99, 64, 0};
        w[4] = (struct want){names[b][4], DENSE, 64 * 256 + 256,
                             99 * 64 * 256, 2, 99, 256, 0};
        w[5] = (struct want){names[b][5], DENSE, 256 * 64 + 64,
                             99 * 256 * 64, 2, 99, 64, 0};
        w[6] = (struct want){names[b][6], ADD, 0, 0, 2, 99, 64, 0};
    }
    want[31] = (struct want){"cls_out", MEMEST_KIND_SLICE, 0, 0, 2, 1, 64, 0};
    want[32] = (struct want){"flatten", MEMEST_KIND_FLATTEN, 0, 0, 1, 64, 0,
                             0};
    want[33] = (struct want){"head_ln", LN, 2 * 64, 0, 1, 64, 0, 0};
    want[34] = (struct want){"head", DENSE, 64 * 12 + 12, 64 * 12, 1, 12, 0,
                             0};
    check_layers(m, want, 35, 209868, 24733952);

    const struct memest_layer *attn = find(m, "b2_attn");
    assert_int_equal(attn->heads, 1);
    assert_int_equal(attn->units, 64);
    /* one head's score matrix, T' x T', beside its input and output */
    assert_int_equal(attn->work_elements, 99 * 99);
    /*
     * Lifetimes at fp32, batch 1 (elements): input 3,920, embed 6,272,
     * then 99x64 = 6,336 per token map and 99x256 = 25,344 for fc1. In a
     * block the residual stream (pos or the previous add2) stays alive
     * until add1, add1 until add2. At b1_fc2: add1, fc1 and fc2 are alive,
     * 6,336 + 25,344 + 6,336 = 38,016; at b1_fc1: add1, ln2, fc1, the
     * same. At the attention: the stream, ln1, the output and the score
     * matrix, 6,336 x 3 + 9,801 = 28,809, below. No step holds more:
     * 38,016 elements, 152,064 B, which the plan meets.
     */
    check_arena(m, 4 * 38016, 4 * 38016);
    assert_int_equal(find(m, "b1_fc1")->act, MEMEST_ACT_GELU_ERF);
    assert_int_equal(find(m, "head")->act, MEMEST_ACT_SOFTMAX);
    assert_int_equal(memest_model_output_shape(m).dim[0], 12);
    memest_model_destroy(m);
}

/* ---- LSTM keyword spotter ------------------------------------------------- */

static void test_lstm_kws(void **state)
{
    (void)state;
    memest_model *m = preset("lstm-kws");
    /*
     * 49x10 in. PyTorch's nn.LSTM(D, H) has weight_ih [4H, D], weight_hh
     * [4H, H], bias_ih and bias_hh [4H]: 4H(D + H) + 8H parameters; per
     * step 4H(D + H) multiplies (the four gates' input and recurrent
     * products), T steps per sample.
     *   lstm1 (10 -> 64, the whole sequence): 256*74 + 512 = 19,456;
     *     49 x 256 x 74 = 928,256 MACs; output 49x64;
     *   lstm2 (64 -> 64, the last hidden state): 256*128 + 512 = 33,280;
     *     49 x 256 x 128 = 1,605,632 MACs; output 64;
     *   fc nn.Linear(64, 12): 780, 768 MACs.
     * 53,516 parameters, 2,534,656 MACs.
     */
    const struct want want[3] = {
        {"lstm1", MEMEST_KIND_LSTM, 4 * 64 * (10 + 64) + 8 * 64,
         49 * 4 * 64 * (10 + 64), 2, 49, 64, 0},
        {"lstm2", MEMEST_KIND_LSTM, 4 * 64 * (64 + 64) + 8 * 64,
         49 * 4 * 64 * (64 + 64), 1, 64, 0, 0},
        {"fc", DENSE, 64 * 12 + 12, 64 * 12, 1, 12, 0, 0},
    };
    check_layers(m, want, 3, 53516, 2534656);
    assert_int_equal(find(m, "lstm1")->return_sequence, 1);
    assert_int_equal(find(m, "lstm2")->return_sequence, 0);
    assert_int_equal(find(m, "lstm1")->direction, MEMEST_RNN_FORWARD);
    /* A chain: the input (490) and lstm1's sequence (3,136) are alive
     * together, then lstm1's and lstm2's (64): 3,626 elements at most,
     * 14,504 B at fp32, which the plan meets. */
    check_arena(m, 4 * 3626, 4 * 3626);
    memest_model_destroy(m);
}

/* ---- Every preset: listed, written, parsed back -------------------------- */

static const char *const names4[] = {"resnet8", "ds-cnn", "mobilenetv1-0.25",
                                     "fc-autoencoder", "kwt", "lstm-kws"};

static void test_listed_and_round_trip(void **state)
{
    (void)state;
    const char *const *list = memest_preset_names();
    for (size_t k = 0; k < sizeof names4 / sizeof names4[0]; k++) {
        size_t i = 0;
        while (list[i] && strcmp(list[i], names4[k])) {
            i++;
        }
        assert_non_null(list[i]);
        assert_true(memest_is_preset_name(names4[k]));

        /* memest_model_load() finds it too, and its canonical text parses
         * back to the same counts */
        memest_model *m = NULL, *back = NULL;
        assert_int_equal(memest_model_load(names4[k], &m, NULL), MEMEST_OK);
        assert_string_equal(memest_model_name(m), names4[k]);
        assert_int_equal(memest_model_has_weights(m), 0);
        size_t len = 0;
        /* buf NULL, cap 0: the length only (MEMEST_E_RANGE, no room) */
        memest_model_write(m, NULL, 0, &len);
        assert_true(len > 0);
        char *text = test_malloc(len + 1);
        assert_int_equal(memest_model_write(m, text, len + 1, &len),
                         MEMEST_OK);
        assert_int_equal(memest_model_parse(text, &back, NULL), MEMEST_OK);
        assert_int_equal(memest_model_layer_count(back),
                         memest_model_layer_count(m));
        assert_int_equal(memest_model_parameter_count(back),
                         memest_model_parameter_count(m));
        struct memest_totals ta, tb;
        assert_int_equal(memest_estimate_totals(m, 1, MEMEST_FP32, &ta),
                         MEMEST_OK);
        assert_int_equal(memest_estimate_totals(back, 1, MEMEST_FP32, &tb),
                         MEMEST_OK);
        assert_int_equal(tb.macs, ta.macs);
        assert_int_equal(tb.arena_bytes, ta.arena_bytes);
        test_free(text);
        memest_model_destroy(back);
        memest_model_destroy(m);
    }
}

/* The ONNX export of each preset made by PyTorch must count the same.
 * Needs the ONNX importer (the Meson option onnx). */
static void test_onnx_fixtures_count_the_same(void **state)
{
    (void)state;
    if (!memest_onnx_available()) {
        print_message("built without ONNX import: the fixtures are not "
                      "read\n");
        skip();
    }
    for (size_t k = 0; k < 4; k++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/%s/model.onnx", fixtures,
                 names4[k]);
        memest_model *text = preset(names4[k]);
        memest_model *onnx = NULL;
        struct memest_diag d;
        if (memest_model_load_onnx(path, NULL, &onnx, &d) != MEMEST_OK) {
            char buf[600];
            memest_diag_format(&d, buf, sizeof buf);
            fail_msg("%s", buf);
        }
        struct memest_totals a, b;
        assert_int_equal(memest_estimate_totals(text, 1, MEMEST_FP32, &a),
                         MEMEST_OK);
        assert_int_equal(memest_estimate_totals(onnx, 1, MEMEST_FP32, &b),
                         MEMEST_OK);
        print_message("%s: text %llu parameters %llu MACs, ONNX %llu "
                      "parameters %llu MACs\n", names4[k],
                      (unsigned long long)a.parameter_count,
                      (unsigned long long)a.macs,
                      (unsigned long long)b.parameter_count,
                      (unsigned long long)b.macs);
        assert_int_equal(b.parameter_count, a.parameter_count);
        assert_int_equal(b.macs, a.macs);
        struct memest_shape so = memest_model_output_shape(onnx);
        struct memest_shape st = memest_model_output_shape(text);
        assert_int_equal(so.rank, st.rank);
        assert_int_equal(so.dim[0], st.dim[0]);
        struct memest_shape io = memest_model_input_shape(onnx);
        struct memest_shape it = memest_model_input_shape(text);
        assert_int_equal(io.rank, it.rank);
        for (unsigned r = 0; r < it.rank; r++) {
            assert_int_equal(io.dim[r], it.dim[r]);
        }
        assert_int_equal(memest_model_has_weights(onnx), 1);
        assert_int_equal(memest_model_fixed_batch(onnx), 0); /* symbolic */
        memest_model_destroy(onnx);
        memest_model_destroy(text);
    }
}

int main(int argc, char **argv)
{
    fixtures = argc > 1 ? argv[1] : "tests/data/models";
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_resnet8),
        cmocka_unit_test(test_ds_cnn),
        cmocka_unit_test(test_mobilenet),
        cmocka_unit_test(test_fc_autoencoder),
        cmocka_unit_test(test_kwt),
        cmocka_unit_test(test_lstm_kws),
        cmocka_unit_test(test_listed_and_round_trip),
        cmocka_unit_test(test_onnx_fixtures_count_the_same),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
