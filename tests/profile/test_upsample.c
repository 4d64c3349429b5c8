/* The upsampling operators, convtranspose and resize, end to end: the
 * text format (shapes, PyTorch's parameter counts and the multiplies-done
 * MACs by hand, refusals at the column, the round trip through
 * memest_model_write), the ONNX fixtures of scripts/make-upsample-fixtures.py
 * (layers and counts by hand; the executor at fp32 against PyTorch's
 * outputs within 1e-5, at fp16, bf16 and int8 against fp32 within stated
 * bounds; the arena the plan), the importer's refusals naming node and
 * attribute, and the trainer's refusal by name.
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

static memest_model *parse(const char *text)
{
    memest_model *m = NULL;
    struct memest_diag d;
    if (memest_model_parse(text, &m, &d) != MEMEST_OK) {
        fail_msg("%s: %s at %d:%d", text, d.message, d.line, d.column);
    }
    return m;
}

static void shape_is(const struct memest_shape *s, uint64_t c, uint64_t h,
                     uint64_t w)
{
    assert_int_equal(s->rank, 3);
    assert_int_equal(s->dim[0], c);
    assert_int_equal(s->dim[1], h);
    assert_int_equal(s->dim[2], w);
}

static const char *const TEXT =
    "input 4x5x6\n"
    "convtranspose 6 k=3 s=2 p=1 op=1 g=2 d=2 act=relu name=ct\n"
    "convtranspose 3 k=2x3 s=2x1 p=0,1,0,1 bias=no name=ct2\n"
    "resize scale=2 mode=bilinear,align_corners name=rb\n"
    "resize scale=7/5x1.5 name=rn\n"
    "resize scale=0.5 mode=nearest,half_pixel,round_prefer_ceil name=rd\n";

static void test_text_counts(void **state)
{
    (void)state;
    memest_model *m = parse(TEXT);
    const struct memest_layer *L = memest_model_layer(m, 0);
    uint64_t dim[MEMEST_TENSOR_MAX_RANK];

    /* (5-1)*2 - 1 - 1 + 2*(3-1) + 1 + 1 = 12, (6-1)*2 - 2 + 4 + 2 = 14;
     * weight [4][6/2][3][3] = 108 and 6 biases; MACs: each of the 4*5*6
     * input elements times 3*3*3 */
    assert_int_equal(L->kind, MEMEST_KIND_CONV_TRANSPOSE);
    shape_is(&L->out_shape, 6, 12, 14);
    assert_int_equal(L->parameter_count, 114);
    assert_int_equal(L->weight_count, 108);
    assert_int_equal(L->macs_per_sample, 120 * 27);
    assert_int_equal(L->act, MEMEST_ACT_RELU);
    assert_int_equal(memest_layer_weight_shape(L, dim), 4);
    assert_int_equal(dim[0], 4);
    assert_int_equal(dim[1], 3);
    assert_int_equal(dim[2], 3);
    assert_int_equal(dim[3], 3);
    /* (12-1)*2 + 1 + 1 = 24, (14-1)*1 - 2 + 2 + 1 = 14; weight
     * [6][3][2][3], no bias; MACs 6*12*14 * 3*2*3 */
    L = memest_model_layer(m, 1);
    shape_is(&L->out_shape, 3, 24, 14);
    assert_int_equal(L->parameter_count, 108);
    assert_int_equal(L->bias_count, 0);
    assert_int_equal(L->macs_per_sample, 1008 * 18);
    /* resizes: 48 x 28; floor(48 * 7/5) = 67, 28 * 1.5 = 42; half of 67
     * is 33 */
    L = memest_model_layer(m, 2);
    assert_int_equal(L->kind, MEMEST_KIND_RESIZE);
    shape_is(&L->out_shape, 3, 48, 28);
    assert_int_equal(L->parameter_count, 0);
    assert_int_equal(L->macs_per_sample, 0);
    assert_int_equal(L->resize_mode, 1);
    assert_int_equal(L->resize_coord, 2);
    L = memest_model_layer(m, 3);
    shape_is(&L->out_shape, 3, 67, 42);
    assert_true(L->scale_h == 0.0 && L->scale_w == 1.5);
    assert_int_equal(L->resize_mode, 0);
    assert_int_equal(L->resize_coord, 3);
    assert_int_equal(L->resize_nearest, 2);
    L = memest_model_layer(m, 4);
    shape_is(&L->out_shape, 3, 33, 21);
    assert_int_equal(L->resize_coord, 0);
    assert_int_equal(L->resize_nearest, 1);
    assert_int_equal(memest_model_parameter_count(m), 222);
    memest_model_destroy(m);

    /* a batch norm after a convtranspose stays a layer (2 * 6 folded
     * parameters): the weight's rows are input channels */
    m = parse("input 4x5x6\nconvtranspose 6 k=2 s=2\nbatchnorm\n");
    assert_int_equal(memest_model_layer_count(m), 2);
    assert_int_equal(memest_model_layer(m, 1)->kind, MEMEST_KIND_BATCHNORM);
    assert_int_equal(memest_model_parameter_count(m), 4 * 6 * 4 + 6 + 12);
    memest_model_destroy(m);
}

static void test_text_round_trip(void **state)
{
    (void)state;
    memest_model *m = parse(TEXT);
    char buf[4096];
    size_t len = 0;
    assert_int_equal(memest_model_write(m, buf, sizeof buf, &len), MEMEST_OK);
    memest_model *b = parse(buf);
    assert_int_equal(memest_model_layer_count(b), memest_model_layer_count(m));
    for (size_t i = 0; i < memest_model_layer_count(m); i++) {
        const struct memest_layer *x = memest_model_layer(m, i);
        const struct memest_layer *y = memest_model_layer(b, i);
        assert_int_equal(x->kind, y->kind);
        assert_int_equal(x->act, y->act);
        assert_string_equal(x->name, y->name);
        assert_memory_equal(&x->out_shape, &y->out_shape,
                            sizeof x->out_shape);
        assert_int_equal(x->kernel_h, y->kernel_h);
        assert_int_equal(x->kernel_w, y->kernel_w);
        assert_int_equal(x->stride_h, y->stride_h);
        assert_int_equal(x->stride_w, y->stride_w);
        assert_int_equal(x->pad_top, y->pad_top);
        assert_int_equal(x->pad_left, y->pad_left);
        assert_int_equal(x->pad_bottom, y->pad_bottom);
        assert_int_equal(x->pad_right, y->pad_right);
        assert_int_equal(x->groups, y->groups);
        assert_int_equal(x->has_bias, y->has_bias);
        assert_int_equal(x->dilation_h, y->dilation_h);
        assert_int_equal(x->dilation_w, y->dilation_w);
        assert_int_equal(x->out_pad_h, y->out_pad_h);
        assert_int_equal(x->out_pad_w, y->out_pad_w);
        assert_int_equal(x->resize_mode, y->resize_mode);
        assert_int_equal(x->resize_coord, y->resize_coord);
        assert_int_equal(x->resize_nearest, y->resize_nearest);
        assert_true(x->scale_h == y->scale_h && x->scale_w == y->scale_w);
        assert_int_equal(x->parameter_count, y->parameter_count);
        assert_int_equal(x->macs_per_sample, y->macs_per_sample);
    }
    memest_model_destroy(b);
    memest_model_destroy(m);
}

static void refused(const char *line, int status, int col,
                    const char *fragment)
{
    char text[256];
    memest_model *m = NULL;
    struct memest_diag d;
    snprintf(text, sizeof text, "input 2x4x4\n%s\n", line);
    assert_int_equal(memest_model_parse(text, &m, &d), status);
    assert_null(m);
    assert_int_equal(d.line, 2);
    assert_int_equal(d.column, col);
    if (strstr(d.message, fragment) == NULL) {
        fail_msg("'%s': '%s' lacks '%s'", line, d.message, fragment);
    }
}

static void test_text_refusals(void **state)
{
    (void)state;
    refused("convtranspose 4 k=3 s=2 op=2", MEMEST_E_RANGE, 28,
            "output padding op=2 along the height must be smaller than the "
            "stride (2) or the dilation (1)");
    refused("convtranspose 4 k=2 p=3", MEMEST_E_SHAPE, 23,
            "crops the whole height");
    refused("convtranspose 3 k=2 g=2", MEMEST_E_SHAPE, 23,
            "output channels 3 are not divisible by groups g=2");
    refused("convtranspose 4 k=2 d=0", MEMEST_E_RANGE, 23,
            "dilation d must be at least 1");
    refused("convtranspose 4", MEMEST_E_PARSE, 1, "missing kernel size");
    refused("resize mode=nearest", MEMEST_E_PARSE, 1, "missing scale");
    refused("resize scale=0", MEMEST_E_RANGE, 14, "scale must be positive");
    refused("resize scale=0.1", MEMEST_E_SHAPE, 14,
            "the scale makes the height 0");
    refused("resize scale=2 mode=cubic", MEMEST_E_PARSE, 21,
            "unknown resize mode 'cubic'");
    refused("resize scale=2 mode=bilinear,corners", MEMEST_E_PARSE, 30,
            "unknown coordinate transformation 'corners'");
    refused("resize scale=2 mode=bilinear,half_pixel,floor", MEMEST_E_PARSE,
            41, "only for mode=nearest");
    refused("resize scale=2/0", MEMEST_E_RANGE, 16,
            "scale denominator must be at least 1");
    refused("resize scale=2 k=3", MEMEST_E_PARSE, 16, "unknown key 'k'");
}

/* ---- the ONNX fixtures ----------------------------------------------- */

static int load_fixture(const char *name, memest_model **m)
{
    char path[1024];
    struct memest_diag d;
    snprintf(path, sizeof path, "%s/%s/model.onnx", fixtures, name);
    int st = memest_model_load(path, m, &d);
    if (st == MEMEST_E_INVALID) {
        return st; /* a build without ONNX */
    }
    if (st != MEMEST_OK) {
        fail_msg("%s: %s", path, d.message);
    }
    return st;
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

/* Run m at precision p on x (batch 2): the output, and the arena checked
 * against libmemest's plan. */
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
    struct prof_exec_memory mem;
    assert_int_equal(prof_exec_memory(ex, &mem), PROF_OK);
    struct memest_arena_plan plan;
    assert_int_equal(memest_plan_arena(m, 2, p, &plan), MEMEST_OK);
    assert_true(mem.arena_bytes == plan.arena_bytes);
    assert_true(mem.plan_bytes == mem.arena_bytes);
    memest_arena_plan_free(&plan);
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

static void check_outputs(const char *name)
{
    memest_model *m = NULL;
    if (load_fixture(name, &m) == MEMEST_E_INVALID) {
        skip();
    }
    size_t nx, ny;
    float *x = load_pb(name, "input_0.pb", &nx);
    float *want = load_pb(name, "output_0.pb", &ny);
    float *y32 = run(m, MEMEST_FP32, x, nx, ny);
    double e = rel_err(y32, want, ny);
    printf("# %-22s fp32 vs PyTorch %.3g", name, e);
    assert_true(e <= 1e-5);
    /* 16-bit storage rounds the input, every weight and every output
     * once (2^-11 for fp16, 2^-8 for bf16, relative), which two layers
     * compound to a few times that; int8 quantises per tensor (1/127 of
     * the range at each stored tensor) */
    static const struct {
        enum memest_precision p;
        const char *name;
        double bound;
    } lower[] = {{MEMEST_FP16, "fp16", 2e-3},
                 {MEMEST_BF16, "bf16", 1.5e-2},
                 {MEMEST_INT8_DYNAMIC, "int8-dynamic", 3e-2}};
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
    memest_model_destroy(m);
}

static void test_onnx_deconv(void **state)
{
    (void)state;
    memest_model *m = NULL;
    if (load_fixture("deconv", &m) == MEMEST_E_INVALID) {
        skip();
    }
    /* the layers of the text test above, from PyTorch: the relu fused */
    assert_int_equal(memest_model_layer_count(m), 2);
    const struct memest_layer *L = memest_model_layer(m, 0);
    assert_int_equal(L->kind, MEMEST_KIND_CONV_TRANSPOSE);
    assert_int_equal(L->act, MEMEST_ACT_RELU);
    shape_is(&L->out_shape, 6, 12, 14);
    assert_int_equal(L->groups, 2);
    assert_int_equal(L->dilation_h, 2);
    assert_int_equal(L->out_pad_w, 1);
    L = memest_model_layer(m, 1);
    shape_is(&L->out_shape, 3, 24, 14);
    assert_int_equal(L->has_bias, 0);
    assert_int_equal(memest_model_parameter_count(m), 222);
    assert_int_equal(memest_model_layer(m, 0)->macs_per_sample +
                         memest_model_layer(m, 1)->macs_per_sample,
                     3240 + 18144);
    memest_model_destroy(m);
    check_outputs("deconv");
}

static void test_onnx_resize(void **state)
{
    (void)state;
    memest_model *m = NULL;
    if (load_fixture("interpolate", &m) == MEMEST_E_INVALID) {
        skip();
    }
    /* 3x5x4: scale (1.5, 2) nearest 7x8, size (7, 9) bilinear, size
     * (10, 4) nearest; the sizes come from folded Shape/Slice/Concat */
    assert_int_equal(memest_model_layer_count(m), 3);
    const struct memest_layer *L = memest_model_layer(m, 0);
    shape_is(&L->out_shape, 3, 7, 8);
    assert_true(L->scale_h == 1.5 && L->scale_w == 2.0);
    assert_int_equal(L->resize_nearest, 2);
    L = memest_model_layer(m, 1);
    shape_is(&L->out_shape, 3, 7, 9);
    assert_true(L->scale_h == 0.0 && L->scale_w == 0.0);
    assert_int_equal(L->resize_mode, 1);
    assert_int_equal(L->resize_coord, 0);
    shape_is(&memest_model_layer(m, 2)->out_shape, 3, 10, 4);
    assert_int_equal(memest_model_parameter_count(m), 0);
    memest_model_destroy(m);

    static const char *const names[] = {
        "upsample_nearest", "upsample_bilinear", "upsample_bilinear_ac",
        "interpolate", "upsample_opset9"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        check_outputs(names[i]);
    }
}

static void test_onnx_refusals(void **state)
{
    (void)state;
    static const struct {
        const char *file;
        int status;
        const char *fragment;
    } cases[] = {
        {"resize_cubic", MEMEST_E_PARSE,
         "node 'up_cubic' (Resize): mode 'cubic' is not supported"},
        {"resize_scale_c", MEMEST_E_PARSE,
         "node 'up_c' (Resize): scales 1 on N and 2 on C are not supported"},
        {"resize_tf_crop", MEMEST_E_PARSE,
         "node 'up_crop' (Resize): coordinate_transformation_mode "
         "'tf_crop_and_resize' is not supported"},
        {"deconv_output_shape", MEMEST_E_PARSE,
         "node 'up_shape' (ConvTranspose): attribute 'output_shape' is not "
         "supported"},
        {"deconv_output_padding", MEMEST_E_RANGE,
         "node 'up_op' (ConvTranspose): attribute 'output_padding' 2 must "
         "be smaller than the stride or the dilation"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char path[1024];
        memest_model *m = NULL;
        struct memest_diag d;
        snprintf(path, sizeof path, "%s/bad/%s.onnx", fixtures,
                 cases[i].file);
        int st = memest_model_load(path, &m, &d);
        if (st == MEMEST_E_INVALID) {
            skip();
        }
        assert_int_equal(st, cases[i].status);
        assert_null(m);
        assert_int_equal(d.line, 1);
        if (strstr(d.message, cases[i].fragment) == NULL) {
            fail_msg("%s: '%s' lacks '%s'", cases[i].file, d.message,
                     cases[i].fragment);
        }
    }
}

/* The trainer has no backward for either kind and says which layer. */
static void test_trainer_refuses(void **state)
{
    (void)state;
    static const char *const texts[] = {
        "input 2x4x4\nconvtranspose 2 k=2 s=2 name=up\nflatten\n"
        "dense 3 act=softmax\n",
        "input 2x4x4\nresize scale=2 name=big\nflatten\n"
        "dense 3 act=softmax\n"};
    static const char *const names[] = {
        "up: the trainer has no backward pass for convtranspose",
        "big: the trainer has no backward pass for resize"};
    for (size_t i = 0; i < 2; i++) {
        memest_model *m = parse(texts[i]);
        struct prof_train_opts o;
        prof_train_opts_init(&o);
        prof_train *t = NULL;
        struct prof_diag d;
        assert_int_equal(prof_train_create(m, &o, &t, &d),
                         PROF_E_UNSUPPORTED);
        assert_null(t);
        if (strstr(d.message, names[i]) == NULL) {
            fail_msg("'%s' lacks %s", d.message, names[i]);
        }
        memest_model_destroy(m);
    }
}

int main(int argc, char **argv)
{
    fixtures = argc > 1 ? argv[1] : "tests/data/onnx";
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_text_counts),
        cmocka_unit_test(test_text_round_trip),
        cmocka_unit_test(test_text_refusals),
        cmocka_unit_test(test_onnx_deconv),
        cmocka_unit_test(test_onnx_resize),
        cmocka_unit_test(test_onnx_refusals),
        cmocka_unit_test(test_trainer_refuses),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
