/*
 * Graph models: the greedy planner against TensorFlow Lite Micro's own
 * planner cases, arenas of branching models checked by brute force and
 * against hand-computed live sets, batch-norm folding (counts and the
 * folded weights, computed here from the formula), several inputs,
 * rectangular windows, and the canonical text's round trip.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "edgefit/memest.h"

static memest_model *parse_ok(const char *text)
{
    memest_model *m = NULL;
    struct memest_diag d;
    int st = memest_model_parse(text, &m, &d);
    if (st != MEMEST_OK) {
        fail_msg("parse: %s at %d:%d", d.message, d.line, d.column);
    }
    return m;
}

/* ---- the bare planner: TensorFlow Lite Micro's greedy planner cases ---- */

static uint64_t plan(const struct memest_buffer_req *r, size_t n,
                     uint64_t *off)
{
    uint64_t arena = 0;
    assert_int_equal(memest_plan_buffers(r, n, 1, off, &arena), MEMEST_OK);
    /* whatever the arena, buffers alive together never overlap */
    for (size_t i = 0; i < n; i++) {
        assert_true(off[i] + r[i].size <= arena);
        for (size_t j = 0; j < i; j++) {
            const int together = r[i].first <= r[j].last &&
                                 r[j].first <= r[i].last;
            const int overlap = off[i] < off[j] + r[j].size &&
                                off[j] < off[i] + r[i].size;
            assert_false(together && overlap);
        }
    }
    return arena;
}

static void test_tflm_cases(void **state)
{
    uint64_t off[8];
    (void)state;
    {
        const struct memest_buffer_req r[] = {{10, 0, 1}, {20, 2, 3}};
        assert_int_equal(plan(r, 2, off), 20);
    }
    {
        const struct memest_buffer_req r[] = {
            {10, 0, 1}, {20, 1, 2}, {30, 2, 3}, {40, 3, 4}, {50, 0, 1}};
        assert_int_equal(plan(r, 5, off), 90);
        /* biggest first: 50 at 0, 40 at 0 (no common step), 30 after 40,
         * 20 after 30 (it meets 50 and 30), 10 between 50's end and 60 */
        assert_int_equal(off[4], 0);
        assert_int_equal(off[3], 0);
        assert_int_equal(off[2], 40);
        assert_int_equal(off[1], 70);
        assert_int_equal(off[0], 50);
    }
    {
        const struct memest_buffer_req r[] = {
            {100, 0, 1}, {50, 2, 3}, {20, 1, 2}};
        assert_int_equal(plan(r, 3, off), 120);
    }
    /* alignment rounds every offset up */
    {
        const struct memest_buffer_req r[] = {{10, 0, 0}, {3, 0, 0}};
        uint64_t arena = 0;
        assert_int_equal(memest_plan_buffers(r, 2, 16, off, &arena),
                         MEMEST_OK);
        assert_int_equal(off[0], 0);
        assert_int_equal(off[1], 16);
        assert_int_equal(arena, 19);
        assert_int_equal(memest_plan_buffers(r, 2, 3, off, &arena),
                         MEMEST_E_INVALID);
    }
    {
        const struct memest_buffer_req bad[] = {{10, 2, 1}};
        uint64_t arena = 0;
        assert_int_equal(memest_plan_buffers(bad, 1, 1, off, &arena),
                         MEMEST_E_INVALID);
        assert_int_equal(memest_plan_buffers(NULL, 0, 1, NULL, &arena),
                         MEMEST_OK);
        assert_int_equal(arena, 0);
    }
}

/* ---- model arenas -------------------------------------------------------- */

/* A residual block: conv1 feeds conv2 and the add, so it lives three
 * steps. Per sample at fp32 (4 bytes): input 1x8x8 = 256 B, conv1 4x8x8 =
 * 1024 B, conv2 4x8x8 = 1024 B, add 1024 B, gap 4x1x1 = 16 B, flatten (a
 * view of gap), dense 2 = 8 B. */
static const char RESIDUAL[] =
    "name res\n"
    "input 1x8x8\n"
    "conv2d 4 k=3 p=1 act=relu\n"            /* conv1, step 0 */
    "conv2d 4 k=3 p=1\n"                     /* conv2, step 1 */
    "add in=conv2,conv1 act=relu\n"          /* add1, step 2 */
    "globalavgpool\n"                        /* gap1, step 3 */
    "flatten\n"                              /* flatten1, step 4 */
    "dense 2 act=softmax\n";                 /* dense1, step 5 */

static void check_plan(const memest_model *m, uint64_t batch,
                       enum memest_precision p,
                       const struct memest_arena_plan *pl)
{
    const size_t T = memest_model_tensor_count(m);
    assert_int_equal(pl->tensor_count, T);
    for (size_t t = 0; t < T; t++) {
        struct memest_shape sh = memest_model_tensor_shape(m, t);
        uint64_t e = batch * memest_precision_bytes(p);
        for (unsigned d = 0; d < sh.rank; d++) {
            e *= sh.dim[d];
        }
        assert_int_equal(pl->bytes[t], e);
        assert_true(pl->offset[t] + pl->bytes[t] <= pl->arena_bytes);
        assert_int_equal(pl->offset[t] % memest_precision_bytes(p), 0);
        for (size_t u = 0; u < t; u++) {
            const int together = pl->first[t] <= pl->last[u] &&
                                 pl->first[u] <= pl->last[t];
            const int overlap =
                pl->offset[t] < pl->offset[u] + pl->bytes[u] &&
                pl->offset[u] < pl->offset[t] + pl->bytes[t];
            if (pl->alias[t] == pl->alias[u]) {
                assert_int_equal(pl->offset[t], pl->offset[u]);
                continue;
            }
            assert_false(together && overlap);
        }
    }
    assert_true(pl->live_lower_bound_bytes <= pl->arena_bytes);
}

static void test_residual_arena(void **state)
{
    memest_model *m = parse_ok(RESIDUAL);
    struct memest_arena_plan pl;
    struct memest_totals t;
    (void)state;

    assert_int_equal(memest_model_layer_count(m), 6);
    assert_int_equal(memest_model_tensor_count(m), 7);
    {
        const struct memest_layer *add = memest_model_layer(m, 2);
        assert_int_equal(add->kind, MEMEST_KIND_ADD);
        assert_int_equal(add->act, MEMEST_ACT_RELU);
        assert_int_equal(add->input_count, 2);
        assert_int_equal(add->inputs[0], 2); /* conv2 = tensor 1 + 1 */
        assert_int_equal(add->inputs[1], 1); /* conv1 */
        assert_string_equal(add->name, "add1");
        assert_string_equal(memest_model_layer(m, 3)->name, "gap1");
        assert_int_equal(memest_model_layer(m, 3)->out_shape.dim[0], 4);
        assert_int_equal(memest_model_layer(m, 3)->out_shape.dim[1], 1);
    }
    assert_int_equal(memest_plan_arena(m, 1, MEMEST_FP32, &pl), MEMEST_OK);
    check_plan(m, 1, MEMEST_FP32, &pl);
    /* lifetimes: conv1 (tensor 1) is read by conv2 at step 1 and by the
     * add at step 2; flatten (tensor 5) is a view of gap (tensor 4) */
    assert_int_equal(pl.first[1], 0);
    assert_int_equal(pl.last[1], 2);
    assert_int_equal(pl.alias[5], 4);
    assert_int_equal(pl.last[4], 5);
    /* the live set peaks at step 2: conv1 + conv2 + add = 3072 B; step 1
     * holds conv1 + conv2 = 2048, step 0 input + conv1 = 1280 */
    assert_int_equal(pl.live_lower_bound_bytes, 3072);
    assert_int_equal(pl.arena_bytes, 3072);
    memest_arena_plan_free(&pl);
    assert_null(pl.offset);

    /* totals: peak = parameters + arena; batch 3 in fp16 scales both */
    assert_int_equal(memest_estimate_totals(m, 3, MEMEST_FP16, &t),
                     MEMEST_OK);
    assert_int_equal(t.arena_bytes, 3072 / 4 * 2 * 3);
    assert_int_equal(t.live_lower_bound_bytes, 3072 / 4 * 2 * 3);
    /* parameters: conv1 4*1*9+4 = 40, conv2 4*4*9+4 = 148, dense 4*2+2 =
     * 10 */
    assert_int_equal(t.parameter_count, 198);
    assert_int_equal(t.peak_inference_bytes, 198 * 2 + t.arena_bytes);
    /* activations: 64 + 256*3 + 4 + 4 + 2 elements per sample */
    assert_int_equal(t.activation_elements, 3 * (64 + 768 + 4 + 4 + 2));
    memest_model_destroy(m);
}

/* Two branches joined by concat, with a pool and a longer-lived input. */
static void test_branching_arena(void **state)
{
    static const char text[] =
        "input 2x8x8\n"                                  /* 128 el */
        "conv2d 4 k=1 name=a\n"                          /* 256 el, s0 */
        "conv2d 4 k=3 p=1 in=input name=b\n"             /* 256 el, s1 */
        "concat in=a,b,input\n"                          /* 640 el, s2 */
        "maxpool k=2\n"                                  /* 160 el, s3 */
        "flatten\n"
        "dense 3\n";
    memest_model *m = parse_ok(text);
    struct memest_arena_plan pl;
    (void)state;
    assert_int_equal(memest_model_layer(m, 2)->out_shape.dim[0], 10);
    assert_int_equal(memest_plan_arena(m, 2, MEMEST_INT8, &pl), MEMEST_OK);
    check_plan(m, 2, MEMEST_INT8, &pl);
    /* step 2 holds input, a, b and the concat: (128+256+256+640) * 2 */
    assert_int_equal(pl.live_lower_bound_bytes, 1280 * 2);
    assert_true(pl.arena_bytes >= pl.live_lower_bound_bytes);
    memest_arena_plan_free(&pl);
    memest_model_destroy(m);
}

/* The other orders never do worse than the greedy order, and win where it
 * leaves a hole. A chain of five tensors, 40, 20, 10, 40, 10 bytes, each
 * alive with its neighbours, needs at most 60 bytes at one step (20 + 40
 * at step 2 is 50, 40 + 20 at step 0 is 60). Biggest first puts both 40s
 * at 0 (they never meet), 20 at 40, then the first 10 meets 20 and the
 * second 40: it goes at 60, and the arena is 70. In execution order the
 * 20 and 10 share no step and both fit at 40: 60, the bound. */
static void test_best_order(void **state)
{
    const struct memest_buffer_req r[] = {
        {40, 0, 0}, {20, 0, 1}, {10, 1, 2}, {40, 2, 3}, {10, 3, 3}};
    uint64_t off[5], best = 0, greedy = 0, alone = 0;
    (void)state;
    assert_int_equal(memest_plan_buffers(r, 5, 1, off, &alone), MEMEST_OK);
    assert_int_equal(alone, 70);
    assert_int_equal(memest_plan_buffers_best(r, 5, 1, off, &best, &greedy),
                     MEMEST_OK);
    assert_int_equal(greedy, 70);
    assert_int_equal(best, 60);
    for (size_t i = 0; i < 5; i++) {
        for (size_t j = 0; j < i; j++) {
            const int together = r[i].first <= r[j].last &&
                                 r[j].first <= r[i].last;
            assert_false(together && off[i] < off[j] + r[j].size &&
                         off[j] < off[i] + r[i].size);
        }
        assert_true(off[i] + r[i].size <= best);
    }
}

/* The MLPerf Tiny presets plan within their bounds, by brute force. */
static void test_preset_arenas(void **state)
{
    const char *const *names = memest_preset_names();
    (void)state;
    assert_non_null(names);
    for (size_t i = 0; names[i] != NULL; i++) {
        memest_model *m = NULL;
        struct memest_arena_plan pl;
        assert_int_equal(memest_model_preset(names[i], &m, NULL), MEMEST_OK);
        assert_int_equal(memest_plan_arena(m, 1, MEMEST_FP32, &pl),
                         MEMEST_OK);
        check_plan(m, 1, MEMEST_FP32, &pl);
        assert_true(pl.arena_bytes <= pl.greedy_bytes);
        /* on these chains and residual blocks the plan meets the bound */
        assert_int_equal(pl.arena_bytes, pl.live_lower_bound_bytes);
        memest_arena_plan_free(&pl);
        memest_model_destroy(m);
    }
}

/* ---- batch norm ------------------------------------------------------- */

static void test_batchnorm_folding(void **state)
{
    (void)state;
    /* folded: conv without bias + batchnorm = conv with bias, no layer */
    memest_model *m = parse_ok("input 3x8x8\n"
                               "conv2d 4 k=3 bias=no\n"
                               "batchnorm act=relu eps=0.001 name=bn1\n"
                               "conv2d 2 k=1 in=bn1\n");
    const struct memest_layer *c1 = memest_model_layer(m, 0);
    assert_int_equal(memest_model_layer_count(m), 2);
    assert_string_equal(c1->folded_bn, "bn1");
    assert_true(c1->bn_epsilon == 0.001);
    assert_int_equal(c1->act, MEMEST_ACT_RELU);
    assert_int_equal(c1->has_bias, 1);
    assert_int_equal(c1->bias_count, 4);
    assert_int_equal(c1->parameter_count, 4 * 3 * 9 + 4);
    /* in=bn1 reads the folded conv */
    assert_int_equal(memest_model_layer(m, 1)->inputs[0], 1);
    assert_int_equal(memest_model_parameter_count(m), 112 + 10);
    memest_model_destroy(m);

    /* not folded: the conv has an activation, or another reader */
    m = parse_ok("input 3x8x8\nconv2d 4 k=3 act=relu\nbatchnorm\n");
    assert_int_equal(memest_model_layer_count(m), 2);
    assert_int_equal(memest_model_layer(m, 1)->kind, MEMEST_KIND_BATCHNORM);
    assert_int_equal(memest_model_layer(m, 1)->parameter_count, 8);
    assert_true(memest_model_layer(m, 1)->bn_epsilon == 1e-5);
    memest_model_destroy(m);
    m = parse_ok("input 3x8x8\nconv2d 4 k=3 p=1 name=c\nbatchnorm\n"
                 "add in=bn1,c\n");
    assert_int_equal(memest_model_layer_count(m), 3);
    assert_null(memest_model_layer(m, 0)->folded_bn);
    memest_model_destroy(m);
    /* a second batch norm after a folded one stands alone */
    m = parse_ok("input 5\ndense 3\nbatchnorm\nbatchnorm\n");
    assert_int_equal(memest_model_layer_count(m), 2);
    assert_string_equal(memest_model_layer(m, 0)->folded_bn, "bn1");
    assert_string_equal(memest_model_layer(m, 1)->name, "bn2");
    memest_model_destroy(m);
}

/* Folded weights against the formula, by hand: one conv channel pair. */
/*
 * The weight layouts libmemest states (memest_layer_weight_shape()),
 * against PyTorch's by hand: nn.Linear(in, out).weight is [out, in],
 * nn.Conv2d(in_c, out_c, (kh, kw), groups=g).weight is [out_c, in_c/g, kh,
 * kw], nn.BatchNorm2d(C).weight is [C]; layers without parameters have
 * none. Tensors of exactly those shapes are what set_weights takes.
 */
static void test_weight_shapes(void **state)
{
    memest_model *m = parse_ok("input 6x7x9\n"
                               "conv2d 4 k=3x5 g=2 name=c\n"
                               "maxpool k=2 name=p\n"
                               "batchnorm act=relu name=bn\n"
                               "flatten name=f\n"
                               "dense 3 bias=no name=fc\n");
    static const struct {
        const char *name;
        unsigned rank;
        uint64_t dim[4];
    } want[] = {
        {"c", 4, {4, 3, 3, 5}},
        {"p", 0, {0}},
        {"bn", 1, {4}},
        {"f", 0, {0}},
        /* conv 4x5x5 (7-3+1, 9-5+1), pool 4x2x2: 16 features */
        {"fc", 2, {3, 16}},
    };
    float data[4 * 3 * 3 * 5];
    const float ones[4] = {1, 1, 1, 1};
    const float zeros[4] = {0, 0, 0, 0};
    struct memest_tensor t[8];
    size_t nt = 0;
    struct memest_diag d;
    (void)state;

    assert_int_equal(memest_model_layer_count(m), 5);
    for (size_t i = 0; i < sizeof data / sizeof data[0]; i++) {
        data[i] = (float)i;
    }
    for (size_t i = 0; i < 5; i++) {
        const struct memest_layer *L = memest_model_layer(m, i);
        uint64_t dim[MEMEST_TENSOR_MAX_RANK] = {0};
        uint64_t elems = 1;
        const unsigned rank = memest_layer_weight_shape(L, dim);
        assert_string_equal(L->name, want[i].name);
        assert_int_equal(rank, want[i].rank);
        for (unsigned k = 0; k < rank; k++) {
            assert_int_equal(dim[k], want[i].dim[k]);
            elems *= dim[k];
        }
        /* the layout covers the weight exactly */
        assert_int_equal(rank ? elems : 0, L->weight_count);
    }
    assert_int_equal(memest_layer_weight_shape(NULL, NULL), 0);
    {
        uint64_t dim[MEMEST_TENSOR_MAX_RANK];
        assert_int_equal(memest_layer_weight_shape(NULL, dim), 0);
    }
    t[nt++] = (struct memest_tensor){"c.weight", 4, {4, 3, 3, 5}, data};
    t[nt++] = (struct memest_tensor){"c.bias", 1, {4}, zeros};
    t[nt++] = (struct memest_tensor){"bn.weight", 1, {4}, ones};
    t[nt++] = (struct memest_tensor){"bn.bias", 1, {4}, zeros};
    t[nt++] = (struct memest_tensor){"bn.running_mean", 1, {4}, zeros};
    t[nt++] = (struct memest_tensor){"bn.running_var", 1, {4}, ones};
    t[nt++] = (struct memest_tensor){"fc.weight", 2, {3, 16}, data};
    assert_int_equal(memest_model_set_weights(m, t, nt, &d), MEMEST_OK);
    /* the grouped conv's weight with in_c instead of in_c/g is refused
     * by name, giving both shapes */
    t[0].dim[1] = 6;
    assert_int_equal(memest_model_set_weights(m, t, nt, &d),
                     MEMEST_E_SHAPE);
    assert_non_null(strstr(d.message, "'c.weight'"));
    assert_non_null(strstr(d.message, "[4, 6, 3, 5]"));
    assert_non_null(strstr(d.message, "[4, 3, 3, 5]"));
    memest_model_destroy(m);
}

/* The arena follows memest_kind_is_view(): a view's output has its
 * input's offset and no request of its own; every other layer's output is
 * its own tensor. */
static void test_views_alias(void **state)
{
    memest_model *m = parse_ok("input 2x4x4\n"
                               "identity\n"
                               "conv2d 2 k=1\n"
                               "dropout\n"
                               "relu\n"
                               "flatten\n"
                               "dense 3\n");
    struct memest_arena_plan p;
    const size_t I = memest_model_input_count(m);
    (void)state;

    assert_int_equal(memest_plan_arena(m, 2, MEMEST_FP32, &p), MEMEST_OK);
    for (size_t i = 0; i < memest_model_layer_count(m); i++) {
        const struct memest_layer *L = memest_model_layer(m, i);
        const size_t t = I + i;
        if (memest_kind_is_view(L->kind)) {
            assert_int_equal(p.alias[t], p.alias[L->inputs[0]]);
            assert_int_equal(p.offset[t], p.offset[L->inputs[0]]);
        } else {
            assert_int_equal(p.alias[t], t);
        }
    }
    /* by hand: identity -> input, dropout -> conv1, flatten -> act1 */
    assert_int_equal(p.alias[1], 0);
    assert_int_equal(p.alias[3], 2);
    assert_int_equal(p.alias[5], 4);
    memest_arena_plan_free(&p);
    memest_model_destroy(m);
}

static void test_weights(void **state)
{
    memest_model *m = parse_ok("input 1x3x3\n"
                               "conv2d 2 k=1 bias=yes name=c\n"
                               "batchnorm eps=0.25 name=bn\n"
                               "flatten\n"
                               "dense 2 name=fc\n"
                               "batchnorm name=bn2 eps=1\n");
    const float cw[2] = {2.0f, -1.0f}, cb[2] = {0.5f, 1.0f};
    const float g[2] = {3.0f, 1.0f}, be[2] = {0.25f, -2.0f};
    const float mu[2] = {1.5f, 0.0f}, var[2] = {0.75f, 3.75f};
    float fw[2 * 18], fb[2];
    const float g2[2] = {1, 2}, b2[2] = {0, 1}, m2[2] = {0, 2}, v2[2] = {3, 0};
    const float bad_var[2] = {1, -1};
    const float nbt[1] = {7};
    struct memest_tensor t[] = {
        {"c.weight", 4, {2, 1, 1, 1}, cw},
        {"c.bias", 1, {2}, cb},
        {"bn.weight", 1, {2}, g},
        {"bn.bias", 1, {2}, be},
        {"bn.running_mean", 1, {2}, mu},
        {"bn.running_var", 1, {2}, var},
        {"bn.num_batches_tracked", 0, {0}, nbt},
        {"fc.weight", 2, {2, 18}, fw},
        {"fc.bias", 1, {2}, fb},
        {"bn2.weight", 1, {2}, g2},
        {"bn2.bias", 1, {2}, b2},
        {"bn2.running_mean", 1, {2}, m2},
        {"bn2.running_var", 1, {2}, v2},
    };
    const size_t n = sizeof t / sizeof t[0];
    struct memest_diag d;
    (void)state;

    for (size_t i = 0; i < 36; i++) {
        fw[i] = (float)i / 8.0f;
    }
    fb[0] = 1.0f;
    fb[1] = -1.0f;
    assert_int_equal(memest_model_has_weights(m), 0);
    assert_int_equal(memest_model_set_weights(m, t, n, &d), MEMEST_OK);
    assert_int_equal(memest_model_has_weights(m), 1);
    {
        const struct memest_layer *c = memest_model_layer(m, 0);
        /* scale = g / sqrt(var + eps): 3 / 1 = 3 and 1 / 2 = 0.5;
         * w' = w * scale; b' = (b - mean) * scale + beta */
        assert_true(c->weight[0] == 6.0f);
        assert_true(c->weight[1] == -0.5f);
        assert_true(c->bias[0] == (0.5f - 1.5f) * 3.0f + 0.25f);
        assert_true(c->bias[1] == 1.0f * 0.5f - 2.0f);
    }
    {
        /* bn2 follows a dense layer without activation: folded too */
        const struct memest_layer *fc = memest_model_layer(m, 2);
        assert_int_equal(memest_model_layer_count(m), 3);
        assert_string_equal(fc->folded_bn, "bn2");
        /* scale 1/2 and 2/1 */
        assert_true(fc->weight[0] == 0.0f);
        assert_true(fc->weight[18 + 3] == fw[18 + 3] * 2.0f);
        assert_true(fc->bias[0] == (1.0f - 0.0f) * 0.5f + 0.0f);
        assert_true(fc->bias[1] == (-1.0f - 2.0f) * 2.0f + 1.0f);
    }
    /* the data was copied */
    fw[0] = 100.0f;
    assert_true(memest_model_layer(m, 2)->weight[0] == 0.0f);

    /* errors leave the model as it was and name the tensor */
    t[5].data = bad_var;
    assert_int_equal(memest_model_set_weights(m, t, n, &d), MEMEST_E_RANGE);
    assert_non_null(strstr(d.message, "bn.running_var"));
    t[5].data = var;
    t[7].dim[1] = 17;
    assert_int_equal(memest_model_set_weights(m, t, n, &d), MEMEST_E_SHAPE);
    assert_non_null(strstr(d.message, "'fc.weight' has shape [2, 17]"));
    assert_non_null(strstr(d.message, "[2, 18]"));
    t[7].dim[1] = 18;
    assert_int_equal(memest_model_set_weights(m, t, n - 1, &d),
                     MEMEST_E_PARSE);
    assert_non_null(strstr(d.message, "'bn2.running_var' is missing"));
    t[1].name = "c.biass";
    assert_int_equal(memest_model_set_weights(m, t, n, &d), MEMEST_E_PARSE);
    assert_non_null(strstr(d.message, "c.bias"));
    t[1].name = "c.bias";
    {
        struct memest_tensor extra[14];
        memcpy(extra, t, sizeof t);
        extra[13] = (struct memest_tensor){"head.weight", 1, {2}, fb};
        assert_int_equal(memest_model_set_weights(m, extra, 14, &d),
                         MEMEST_E_PARSE);
        assert_non_null(strstr(d.message, "'head.weight' matches no layer"));
    }
    {
        const float inf[2] = {INFINITY, 0};
        t[8].data = inf;
        assert_int_equal(memest_model_set_weights(m, t, n, &d),
                         MEMEST_E_RANGE);
        t[8].data = fb;
    }
    assert_true(memest_model_layer(m, 0)->weight[0] == 6.0f);
    assert_int_equal(memest_model_set_weights(NULL, t, n, &d),
                     MEMEST_E_INVALID);
    memest_model_destroy(m);
}

/* ---- windows, inputs, round trip ------------------------------------ */

static void test_rectangular(void **state)
{
    /* DS-CNN's first layer: 1x49x10, 64 filters 10x4, stride 2, padding
     * top 4 left 1 bottom 5 right 2: out h = (49+9-10)/2+1 = 25, out w =
     * (10+3-4)/2+1 = 5; weights 64*1*10*4 = 2560 (+64 bias); MACs 64*25*5
     * * 40 = 320000 */
    memest_model *m = parse_ok("input 1x49x10\n"
                               "conv2d 64 k=10x4 s=2 p=4,1,5,2\n"
                               "avgpool k=25x5 count_pad=no\n");
    const struct memest_layer *c = memest_model_layer(m, 0);
    (void)state;
    assert_int_equal(c->kernel_h, 10);
    assert_int_equal(c->kernel_w, 4);
    assert_int_equal(c->stride_h, 2);
    assert_int_equal(c->stride_w, 2);
    assert_int_equal(c->pad_top, 4);
    assert_int_equal(c->pad_left, 1);
    assert_int_equal(c->pad_bottom, 5);
    assert_int_equal(c->pad_right, 2);
    assert_int_equal(c->out_shape.dim[1], 25);
    assert_int_equal(c->out_shape.dim[2], 5);
    assert_int_equal(c->parameter_count, 2560 + 64);
    assert_int_equal(c->macs_per_sample, 320000);
    assert_int_equal(memest_model_layer(m, 1)->count_include_pad, 0);
    assert_int_equal(memest_model_layer(m, 1)->out_shape.dim[1], 1);
    memest_model_destroy(m);
    /* p=HxW: top and bottom H, left and right W */
    m = parse_ok("input 1x5x5\nmaxpool k=3 s=1x2 p=1x2\n");
    c = memest_model_layer(m, 0);
    assert_int_equal(c->pad_top, 1);
    assert_int_equal(c->pad_bottom, 1);
    assert_int_equal(c->pad_left, 2);
    assert_int_equal(c->out_shape.dim[1], 5);
    assert_int_equal(c->out_shape.dim[2], 4); /* (5+4-3)/2+1 */
    memest_model_destroy(m);
}

static void test_inputs(void **state)
{
    memest_model *m = parse_ok("input 4x5 name=x\n"
                               "input 4x5 name=y\n"
                               "add in=x,y act=relu6\n"
                               "logsoftmax\n");
    struct memest_layer_estimate rows[4];
    size_t n = 0;
    (void)state;
    assert_int_equal(memest_model_input_count(m), 2);
    assert_string_equal(memest_model_input_name(m, 1), "y");
    assert_int_equal(memest_model_input_shape_at(m, 1).rank, 2);
    assert_null(memest_model_input_name(m, 2));
    assert_int_equal(memest_model_layer(m, 0)->inputs[1], 1);
    assert_int_equal(memest_model_layer(m, 1)->act, MEMEST_ACT_LOGSOFTMAX);
    assert_int_equal(memest_estimate_row_count(m), 4);
    assert_int_equal(memest_estimate_layers(m, 2, MEMEST_FP32, rows, 4, &n),
                     MEMEST_OK);
    assert_string_equal(rows[0].layer, "x");
    assert_string_equal(rows[1].layer, "y");
    assert_int_equal(rows[1].kind, MEMEST_KIND_INPUT);
    assert_int_equal(rows[1].activation_bytes, 2 * 20 * 4);
    assert_string_equal(rows[2].output_shape, "4x5");
    memest_model_destroy(m);
}

static void roundtrip(const char *text)
{
    memest_model *a = parse_ok(text);
    memest_model *b;
    size_t len = 0;
    char *buf;
    assert_int_equal(memest_model_write(a, NULL, 0, &len), MEMEST_E_RANGE);
    buf = malloc(len + 1);
    assert_non_null(buf);
    assert_int_equal(memest_model_write(a, buf, len + 1, &len), MEMEST_OK);
    b = parse_ok(buf);
    assert_int_equal(memest_model_layer_count(a), memest_model_layer_count(b));
    assert_int_equal(memest_model_input_count(a), memest_model_input_count(b));
    for (size_t i = 0; i < memest_model_layer_count(a); i++) {
        const struct memest_layer *x = memest_model_layer(a, i);
        const struct memest_layer *y = memest_model_layer(b, i);
        assert_int_equal(x->kind, y->kind);
        assert_int_equal(x->act, y->act);
        assert_string_equal(x->name, y->name);
        assert_int_equal(x->input_count, y->input_count);
        for (size_t k = 0; k < x->input_count; k++) {
            assert_int_equal(x->inputs[k], y->inputs[k]);
        }
        assert_int_equal(x->kernel_w, y->kernel_w);
        assert_int_equal(x->stride_w, y->stride_w);
        assert_int_equal(x->pad_right, y->pad_right);
        assert_int_equal(x->pad_bottom, y->pad_bottom);
        assert_int_equal(x->count_include_pad, y->count_include_pad);
        assert_int_equal(x->has_bias, y->has_bias);
        assert_int_equal(x->parameter_count, y->parameter_count);
        assert_true(x->bn_epsilon == y->bn_epsilon);
        if (x->folded_bn || y->folded_bn) {
            assert_string_equal(x->folded_bn, y->folded_bn);
        }
    }
    {
        /* and the text is a fixed point */
        size_t len2 = 0;
        char *buf2 = malloc(len + 1);
        assert_int_equal(memest_model_write(b, buf2, len + 1, &len2),
                         MEMEST_OK);
        assert_string_equal(buf, buf2);
        free(buf2);
    }
    free(buf);
    memest_model_destroy(a);
    memest_model_destroy(b);
}

static void test_roundtrip(void **state)
{
    const char *const *names = memest_preset_names();
    (void)state;
    roundtrip(RESIDUAL);
    roundtrip("input 3x8x8\nconv2d 4 k=3 bias=no\nbatchnorm act=relu "
              "eps=0.001\nconv2d 4 k=3x1 s=2x1 p=0,1,2,0\nbatchnorm\n"
              "avgpool k=2 count_pad=no\ndropout\nidentity\nerf\n");
    roundtrip("input 4x5 name=x\ninput 4x5 name=y\nadd in=x,y\n"
              "concat in=add1,x,add1\nrelu6\n");
    for (size_t i = 0; names[i] != NULL; i++) {
        memest_model *m = NULL;
        size_t len = 0;
        char *buf;
        assert_int_equal(memest_model_preset(names[i], &m, NULL), MEMEST_OK);
        assert_int_equal(memest_model_write(m, NULL, 0, &len),
                         MEMEST_E_RANGE);
        buf = malloc(len + 1);
        assert_int_equal(memest_model_write(m, buf, len + 1, &len),
                         MEMEST_OK);
        roundtrip(buf);
        free(buf);
        memest_model_destroy(m);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tflm_cases),
        cmocka_unit_test(test_residual_arena),
        cmocka_unit_test(test_branching_arena),
        cmocka_unit_test(test_best_order),
        cmocka_unit_test(test_preset_arenas),
        cmocka_unit_test(test_batchnorm_folding),
        cmocka_unit_test(test_weights),
        cmocka_unit_test(test_weight_shapes),
        cmocka_unit_test(test_views_alias),
        cmocka_unit_test(test_rectangular),
        cmocka_unit_test(test_inputs),
        cmocka_unit_test(test_roundtrip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
