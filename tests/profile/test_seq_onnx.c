/* Transformers imported from ONNX, end to end: the fixtures of
 * scripts/make-seq-onnx-fixtures.py (a KWT keyword transformer exported
 * at opset 13, LayerNorm decomposed, and at opset 17, LayerNormalization;
 * a tiny ViT with a hand-written attention, read as one attention layer,
 * and its twin scaling q first, read as its pieces) import into the layers and
 * counts derived by hand below (parameters as PyTorch's numel sum, MACs
 * by README's conventions), the two KWT exports give the same layers and
 * the same weights bit for bit, and the executor reproduces PyTorch's
 * outputs within 1e-4 of the largest output at fp32 (fp16, bf16 and
 * int8-dynamic within stated bounds of fp32, their errors printed).
 *
 * argv[1]: tests/data/onnx. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../max_seen.h"
#include "edgefit/memest.h"
#include "edgefit/profile.h"

static const char *fixtures;

static memest_model *load(const char *name)
{
    char path[1024];
    struct memest_diag d;
    memest_model *m = NULL;
    snprintf(path, sizeof path, "%s/%s/model.onnx", fixtures, name);
    int st = memest_model_load(path, &m, &d);
    if (st == MEMEST_E_INVALID) {
        return NULL; /* a build without ONNX */
    }
    if (st != MEMEST_OK) {
        fail_msg("%s: %s", path, d.message);
    }
    return m;
}

static int kind_is(const struct memest_layer *L, const char *kind)
{
    return strcmp(memest_kind_name(L->kind), kind) == 0;
}

static void shape2(const struct memest_shape *s, uint64_t a, uint64_t b)
{
    assert_int_equal(s->rank, 2);
    assert_int_equal(s->dim[0], a);
    assert_int_equal(s->dim[1], b);
}

static uint64_t total_macs(const memest_model *m)
{
    uint64_t t = 0;
    for (size_t i = 0; i < memest_model_layer_count(m); i++) {
        t += memest_model_layer(m, i)->macs_per_sample;
    }
    return t;
}

static float *load_pb(const char *name, const char *file, size_t *n)
{
    char path[1024];
    struct memest_owned_tensor t;
    struct memest_diag d;
    snprintf(path, sizeof path, "%s/%s/test_data_set_0/%s", fixtures, name,
             file);
    if (memest_tensor_load_pb(path, &t, &d) != MEMEST_OK) {
        fail_msg("%s: %s", path, d.message);
    }
    *n = 1;
    for (unsigned i = 0; i < t.t.rank; i++) {
        *n *= (size_t)t.t.dim[i];
    }
    float *data = t.data;
    t.data = NULL;
    memest_owned_tensor_free(&t);
    return data;
}

/* Run m at precision p on x (batch 2, as exported). */
static float *run(const memest_model *m, enum memest_precision p,
                  const float *x, size_t nx, size_t ny)
{
    struct prof_exec_opts o;
    prof_exec_opts_init(&o);
    o.batch = 2;
    o.precision = p;
    prof_exec *ex = NULL;
    struct prof_diag d;
    if (prof_exec_create(m, &o, &ex, &d) != PROF_OK) {
        fail_msg("%s", d.message);
    }
    float *y = malloc(ny * sizeof *y);
    assert_non_null(y);
    assert_int_equal(prof_exec_run(ex, x, nx, y, ny), PROF_OK);
    prof_exec_destroy(ex);
    return y;
}

/* Largest |a - b| over the largest |b|. */
static double rel_err(const float *a, const float *b, size_t n)
{
    double e = 0, mx = 0;
    for (size_t i = 0; i < n; i++) {
        e = max_seen(e, fabs((double)a[i] - (double)b[i]));
        mx = max_seen(mx, fabs((double)b[i]));
    }
    return mx > 0 ? e / mx : e;
}

static void check_outputs(const char *name, const memest_model *m)
{
    size_t nx, ny;
    float *x = load_pb(name, "input_0.pb", &nx);
    float *want = load_pb(name, "output_0.pb", &ny);
    float *y32 = run(m, MEMEST_FP32, x, nx, ny);
    double e = rel_err(y32, want, ny);
    printf("# %-6s fp32 vs PyTorch %.3g", name, e);
    assert_true(e <= 1e-4);
    /* 16-bit storage rounds every stored tensor once (2^-11 fp16, 2^-8
     * bf16, relative), compounded over ~30 layers; int8-dynamic
     * quantises each dense's input per tensor (1/127 of its range); the
     * bounds are a few times what they give (about 1e-3, 8e-3, 4e-2) */
    static const struct {
        enum memest_precision p;
        const char *name;
        double bound;
    } lower[] = {{MEMEST_FP16, "fp16", 5e-3},
                 {MEMEST_BF16, "bf16", 3e-2},
                 {MEMEST_INT8_DYNAMIC, "int8-dynamic", 0.1}};
    for (size_t i = 0; i < 3; i++) {
        float *y = run(m, lower[i].p, x, nx, ny);
        e = rel_err(y, y32, ny);
        printf(", %s vs fp32 %.3g", lower[i].name, e);
        assert_true(e <= lower[i].bound);
        assert_true(e > 0); /* it did run at the lower precision */
        free(y);
    }
    printf("\n");
    free(y32);
    free(x);
    free(want);
}

/*
 * KWT: 98 frames of 40 MFCCs, D = 32, 4 heads, MLP 64, 4 blocks, 12
 * classes; T = 99 tokens with the class token.
 * Parameters: embed 40*32 + 32 = 1312; class token 32; position 99*32 =
 * 3168; per block ln1 64, attention 3*32*32 + 96 + 32*32 + 32 = 4224, ln2
 * 64, fc1 32*64 + 64 = 2112, fc2 64*32 + 32 = 2080 (8544, 4 blocks 34176);
 * norm 64; head 32*12 + 12 = 396. In all 39148 (PyTorch's numel sum,
 * printed by the script).
 * MACs: embed 98*40*32 = 125440; per block attention 4*T*D*D + 2*T*T*D =
 * 405504 + 627264 = 1032768, fc1 and fc2 99*32*64 = 202752 each; head
 * 32*12 = 384. In all 125440 + 4 * 1438272 + 384 = 5878912.
 */
static const char *const KWT_KINDS[36] = {
    "transpose", "dense", "clstoken", "posembed",
    "layernorm", "attention", "add", "layernorm", "dense", "dense", "add",
    "layernorm", "attention", "add", "layernorm", "dense", "dense", "add",
    "layernorm", "attention", "add", "layernorm", "dense", "dense", "add",
    "layernorm", "attention", "add", "layernorm", "dense", "dense", "add",
    "layernorm", "slice", "flatten", "dense"};

static void check_kwt(const memest_model *m)
{
    assert_int_equal(memest_model_layer_count(m), 36);
    for (size_t i = 0; i < 36; i++) {
        const struct memest_layer *L = memest_model_layer(m, i);
        if (!kind_is(L, KWT_KINDS[i])) {
            fail_msg("layer %zu is %s, not %s", i,
                     memest_kind_name(L->kind), KWT_KINDS[i]);
        }
    }
    const struct memest_layer *L = memest_model_layer(m, 0);
    shape2(&L->out_shape, 98, 40);
    L = memest_model_layer(m, 1);
    shape2(&L->out_shape, 98, 32);
    assert_int_equal(L->macs_per_sample, 125440);
    assert_int_equal(L->parameter_count, 1312);
    L = memest_model_layer(m, 2);
    shape2(&L->out_shape, 99, 32);
    assert_int_equal(L->parameter_count, 32);
    L = memest_model_layer(m, 3);
    assert_int_equal(L->parameter_count, 3168);
    L = memest_model_layer(m, 4);
    assert_int_equal(L->parameter_count, 64);
    assert_int_equal(L->axis, 1);
    assert_true(fabs(L->bn_epsilon - 1e-5) < 1e-12);
    L = memest_model_layer(m, 5);
    shape2(&L->out_shape, 99, 32);
    assert_int_equal(L->heads, 4);
    assert_int_equal(L->units, 32);
    assert_int_equal(L->parameter_count, 4224);
    assert_int_equal(L->macs_per_sample, 1032768);
    assert_int_equal(L->work_elements, 99 * 99);
    L = memest_model_layer(m, 8);
    assert_int_equal(L->act, MEMEST_ACT_GELU_ERF);
    assert_int_equal(L->macs_per_sample, 202752);
    L = memest_model_layer(m, 33);
    assert_int_equal(L->out_shape.rank, 2);
    assert_int_equal(L->out_shape.dim[0], 1);
    assert_int_equal(memest_model_output_shape(m).rank, 1);
    assert_int_equal(memest_model_output_shape(m).dim[0], 12);
    assert_int_equal(memest_model_parameter_count(m), 39148);
    assert_int_equal(total_macs(m), 5878912);
}

static void test_kwt(void **state)
{
    (void)state;
    memest_model *m13 = load("kwt13");
    memest_model *m17 = load("kwt17");
    if (m13 == NULL || m17 == NULL) {
        skip();
    }
    check_kwt(m13);
    check_kwt(m17);
    /* one network, two exports: every layer's weights and biases equal
     * (the decomposed LayerNorm's gamma and beta found where
     * LayerNormalization names them; the attention's in_proj_weight
     * transposed back from the MatMul's constant in both) */
    for (size_t i = 0; i < 36; i++) {
        const struct memest_layer *a = memest_model_layer(m13, i);
        const struct memest_layer *b = memest_model_layer(m17, i);
        assert_int_equal(a->weight_count, b->weight_count);
        assert_int_equal(a->bias_count, b->bias_count);
        if (a->weight_count > 0) {
            assert_memory_equal(a->weight, b->weight,
                                a->weight_count * sizeof *a->weight);
        }
        if (a->bias_count > 0) {
            assert_memory_equal(a->bias, b->bias,
                                a->bias_count * sizeof *a->bias);
        }
    }
    check_outputs("kwt13", m13);
    check_outputs("kwt17", m17);
    memest_model_destroy(m13);
    memest_model_destroy(m17);
}

/*
 * ViT on 3x32x32: Conv 4x4 stride 4 to 32 x 8 x 8, 64 tokens + the class
 * token (T = 65), D = 32, 4 heads of 8, MLP 64, 2 blocks, 10 classes.
 * Parameters: conv 3*4*4*32 + 32 = 1568; class token 32; position 65*32 =
 * 2080; per block ln1 64, qkv 32*96 + 96 = 3168, proj 32*32 + 32 = 1056,
 * ln2 64, fc1 2112, fc2 2080 (8544, 2 blocks 17088); norm 64; head 32*10 +
 * 10 = 330. In all 21162.
 * MACs: conv 32*8*8 outputs * 3*4*4 = 98304; per block qkv 65*32*96 =
 * 199680, Q K^T 4 heads * 65*8*65 = 135200, A V 4 * 65*65*8 = 135200,
 * proj 65*32*32 = 66560 (the attention layer's 4*T*D*D + 2*T*T*D =
 * 266240 + 270400 = 536640), fc1 and fc2 65*32*64 = 133120 each (802880);
 * head 320. In all 98304 + 2 * 802880 + 320 = 1704384.
 * `vit` scales Q K^T (timm's form): read as one attention layer per
 * block; `vit_qscale`, the same weights, scales q first: its pieces are
 * layers (matmul, transpose, softmax over the keys of H x T x T).
 */
static const char *const VIT_HEAD[5] = {"conv2d", "reshape", "transpose",
                                        "clstoken", "posembed"};
static const char *const VIT_TAIL[4] = {"layernorm", "slice", "flatten",
                                        "dense"};
static const char *const VIT_FUSED[7] = {"layernorm", "attention", "add",
                                         "layernorm", "dense", "dense",
                                         "add"};
static const char *const VIT_PIECES[23] = {
    "layernorm", "dense", "slice", "slice", "slice", "reshape",
    "transpose", "reshape", "reshape", "transpose", "mul", "transpose",
    "matmul", "activation", "matmul", "transpose", "reshape", "dense",
    "add", "layernorm", "dense", "dense", "add"};

static void vit_kinds(const memest_model *m, const char *const *block,
                      size_t per)
{
    const size_t n = 5 + 2 * per + 4;
    assert_int_equal(memest_model_layer_count(m), n);
    for (size_t i = 0; i < n; i++) {
        const char *want = i < 5             ? VIT_HEAD[i]
                           : i < 5 + 2 * per ? block[(i - 5) % per]
                                             : VIT_TAIL[i - 5 - 2 * per];
        const struct memest_layer *L = memest_model_layer(m, i);
        if (!kind_is(L, want)) {
            fail_msg("layer %zu is %s, not %s", i,
                     memest_kind_name(L->kind), want);
        }
    }
    const struct memest_layer *L = memest_model_layer(m, 2);
    shape2(&L->out_shape, 64, 32);
    assert_int_equal(L->perm[0], 1);
    assert_int_equal(L->perm[1], 0);
    assert_int_equal(memest_model_parameter_count(m), 21162);
    assert_int_equal(total_macs(m), 1704384);
    assert_int_equal(memest_model_output_shape(m).dim[0], 10);
}

static void shape3(const struct memest_shape *s, uint64_t a, uint64_t b,
                   uint64_t c)
{
    assert_int_equal(s->rank, 3);
    assert_int_equal(s->dim[0], a);
    assert_int_equal(s->dim[1], b);
    assert_int_equal(s->dim[2], c);
}

static void test_vit(void **state)
{
    (void)state;
    memest_model *m = load("vit");
    memest_model *q = load("vit_qscale");
    if (m == NULL || q == NULL) {
        skip();
    }
    vit_kinds(m, VIT_FUSED, 7);
    vit_kinds(q, VIT_PIECES, 23);
    const struct memest_layer *A = memest_model_layer(m, 5 + 1);
    shape2(&A->out_shape, 65, 32);
    assert_int_equal(A->heads, 4);
    assert_int_equal(A->macs_per_sample, 536640);
    assert_int_equal(A->work_elements, 65 * 65);
    /* the pieces: q as heads 65 x 4 x 8 -> 4 x 65 x 8, k as 4 x 8 x 65,
     * the scores 4 x 65 x 65 */
    const struct memest_layer *L = memest_model_layer(q, 5 + 6);
    shape3(&L->out_shape, 4, 65, 8);
    assert_int_equal(L->perm[0], 1);
    assert_int_equal(L->perm[1], 0);
    assert_int_equal(L->perm[2], 2);
    shape3(&memest_model_layer(q, 5 + 11)->out_shape, 4, 8, 65);
    L = memest_model_layer(q, 5 + 12);
    shape3(&L->out_shape, 4, 65, 65);
    assert_int_equal(L->macs_per_sample, 135200);
    L = memest_model_layer(q, 5 + 13);
    assert_int_equal(L->act, MEMEST_ACT_SOFTMAX);
    assert_int_equal(L->axis, 2);
    assert_int_equal(memest_model_layer(q, 5 + 14)->macs_per_sample, 135200);
    /* the fused layer's weights are the pieces' qkv and proj Linears,
     * nn.Linear's layout both (in_proj_weight [96, 32], then
     * out_proj.weight [32, 32]; in_proj_bias, then out_proj.bias) */
    const struct memest_layer *qkv = memest_model_layer(q, 5 + 1);
    const struct memest_layer *proj = memest_model_layer(q, 5 + 17);
    assert_int_equal(A->weight_count, 96 * 32 + 32 * 32);
    assert_memory_equal(A->weight, qkv->weight, 96 * 32 * sizeof(float));
    assert_memory_equal(A->weight + 96 * 32, proj->weight,
                        32 * 32 * sizeof(float));
    assert_memory_equal(A->bias, qkv->bias, 96 * sizeof(float));
    assert_memory_equal(A->bias + 96, proj->bias, 32 * sizeof(float));
    check_outputs("vit", m);
    check_outputs("vit_qscale", q);
    memest_model_destroy(m);
    memest_model_destroy(q);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kwt),
        cmocka_unit_test(test_vit),
    };
    if (argc < 2) {
        fprintf(stderr, "usage: %s tests/data/onnx\n", argv[0]);
        return 2;
    }
    fixtures = argv[1];
    return cmocka_run_group_tests(tests, NULL, NULL);
}
