/*
 * ONNX export of a quantised model (memest_model_to_onnx on a model whose
 * every tensor carries a memest_quant): the file is unpacked with ONNX's
 * own schema (protobuf-c, independent of the writer's structs) and checked
 * against values computed here: the int8 weights are the q the weights
 * were made from (w = s[c] * q), the weight scales the model's (or
 * max|w_c| / 127 where it gives none), the int32 biases round_half_even(b
 * / (x_scale * w_scale[c])) with that scale (float quotients, as ONNX
 * Runtime's quantizer computes them), and every tensor is followed
 * by a QuantizeLinear/DequantizeLinear pair with its scale and zero point
 * (uint8 and zero point + 128 for a tensor stored as uint8) whose output
 * is what the next node reads.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "edgefit/memest.h"
#include "onnx.pb-c.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char text[] = "input 2x5x5\n"
                           "conv2d 4 k=3 p=1 act=relu name=c\n"
                           "maxpool k=2 name=p\n"
                           "flatten name=f\n"
                           "dense 3 name=fc\n";

/* conv: 4 x 2 x 3 x 3; dense: 3 x 16 */
static int8_t qc[72];
static float wc[72], wd[48], bc[4], bd[3];
static const float sc[4] = {0.01f, 0.02f, 0.005f, 0.0375f};
static const struct memest_quant tq[5] = {
    {0.03125f, -3, 0},  /* input */
    {0.05f, -128, 1},   /* c: stored as uint8, zero point 0 there */
    {0.05f, -128, 0},   /* p */
    {0.05f, -128, 0},   /* f */
    {0.125f, 7, 0},     /* fc */
};

static memest_model *quantised_model(void)
{
    memest_model *m = NULL;
    struct memest_tensor t[4];
    uint32_t s = 99;
    assert_int_equal(memest_model_parse(text, &m, NULL), 0);
    for (int i = 0; i < 72; i++) {
        s = s * 1664525u + 1013904223u;
        qc[i] = (int8_t)((int)(s >> 24) % 255 - 127);
        wc[i] = sc[i / 18] * (float)qc[i];
    }
    for (int i = 0; i < 48; i++) {
        s = s * 1664525u + 1013904223u;
        wd[i] = (float)((int)(s >> 16) % 2001 - 1000) / 997.0f;
    }
    for (int i = 0; i < 4; i++) {
        bc[i] = 0.3f * (float)i - 0.41f;
    }
    for (int i = 0; i < 3; i++) {
        bd[i] = 0.7f - 0.55f * (float)i;
    }
    t[0] = (struct memest_tensor){"c.weight", 4, {4, 2, 3, 3}, wc};
    t[1] = (struct memest_tensor){"c.bias", 1, {4}, bc};
    t[2] = (struct memest_tensor){"fc.weight", 2, {3, 16}, wd};
    t[3] = (struct memest_tensor){"fc.bias", 1, {3}, bd};
    assert_int_equal(memest_model_set_weights(m, t, 4, NULL), 0);
    assert_int_equal(memest_model_set_weight_scales(m, 0, sc, 4), 0);
    for (size_t k = 0; k < 5; k++) {
        assert_int_equal(memest_model_set_tensor_quant(m, k, &tq[k]), 0);
    }
    assert_true(memest_model_is_quantized(m));
    return m;
}

static const Onnx__TensorProto *init(const Onnx__GraphProto *g,
                                     const char *name)
{
    for (size_t i = 0; i < g->n_initializer; i++) {
        if (strcmp(g->initializer[i]->name, name) == 0) {
            return g->initializer[i];
        }
    }
    fail_msg("no initializer '%s'", name);
    return NULL;
}

/* The node whose output 0 is `out`. */
static const Onnx__NodeProto *maker(const Onnx__GraphProto *g,
                                    const char *out)
{
    for (size_t i = 0; i < g->n_node; i++) {
        if (g->node[i]->n_output > 0 &&
            strcmp(g->node[i]->output[0], out) == 0) {
            return g->node[i];
        }
    }
    fail_msg("no node makes '%s'", out);
    return NULL;
}

/* The one node that reads `in`. */
static const Onnx__NodeProto *reader(const Onnx__GraphProto *g,
                                     const char *in)
{
    const Onnx__NodeProto *r = NULL;
    for (size_t i = 0; i < g->n_node; i++) {
        for (size_t k = 0; k < g->node[i]->n_input; k++) {
            if (strcmp(g->node[i]->input[k], in) == 0) {
                assert_null(r);
                r = g->node[i];
            }
        }
    }
    if (r == NULL) {
        fail_msg("no node reads '%s'", in);
    }
    return r;
}

static int64_t attr_i(const Onnx__NodeProto *n, const char *name)
{
    for (size_t i = 0; i < n->n_attribute; i++) {
        if (strcmp(n->attribute[i]->name, name) == 0) {
            return n->attribute[i]->i;
        }
    }
    fail_msg("node '%s' has no attribute %s", n->name, name);
    return 0;
}

/* The Q/DQ pair after tensor `name`: its scale and zero point, and the
 * DequantizeLinear's output, which the next layer reads. */
static const char *check_qdq(const Onnx__GraphProto *g, const char *name,
                             const struct memest_quant *q)
{
    const Onnx__NodeProto *qn = reader(g, name);
    const Onnx__NodeProto *dn;
    const Onnx__TensorProto *s, *z;
    assert_string_equal(qn->op_type, "QuantizeLinear");
    dn = reader(g, qn->output[0]);
    assert_string_equal(dn->op_type, "DequantizeLinear");
    s = init(g, qn->input[1]);
    z = init(g, qn->input[2]);
    assert_int_equal(s->data_type, ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT);
    assert_int_equal(s->n_dims, 0);
    assert_true(s->float_data[0] == q->scale);
    assert_int_equal(z->data_type,
                     q->is_unsigned ? ONNX__TENSOR_PROTO__DATA_TYPE__UINT8
                                    : ONNX__TENSOR_PROTO__DATA_TYPE__INT8);
    assert_int_equal(z->int32_data[0],
                     q->is_unsigned ? q->zero_point + 128 : q->zero_point);
    assert_string_equal(dn->input[1], qn->input[1]);
    assert_string_equal(dn->input[2], qn->input[2]);
    return dn->output[0];
}

static void test_qdq(void **state)
{
    memest_model *m = quantised_model();
    unsigned char *buf = NULL;
    size_t len = 0;
    struct memest_diag diag;
    Onnx__ModelProto *mp;
    const Onnx__GraphProto *g;
    const Onnx__NodeProto *conv, *gemm, *dq;
    const Onnx__TensorProto *t;
    const char *x;
    (void)state;

    if (memest_model_to_onnx(m, &buf, &len, &diag) != MEMEST_OK) {
        fail_msg("export: %s", diag.message);
    }
    mp = onnx__model_proto__unpack(NULL, len, buf);
    assert_non_null(mp);
    g = mp->graph;
    assert_int_equal(mp->ir_version, 7);
    assert_int_equal(mp->opset_import[0]->version, 13);

    /* the input, then the conv reading its DequantizeLinear */
    x = check_qdq(g, "input", &tq[0]);
    conv = reader(g, x);
    assert_string_equal(conv->op_type, "Conv");
    assert_string_equal(conv->name, "c");
    dq = maker(g, conv->input[1]);
    assert_string_equal(dq->op_type, "DequantizeLinear");
    assert_int_equal(attr_i(dq, "axis"), 0);
    t = init(g, dq->input[0]);
    assert_int_equal(t->data_type, ONNX__TENSOR_PROTO__DATA_TYPE__INT8);
    assert_int_equal(t->n_int32_data, 72);
    for (int i = 0; i < 72; i++) {
        assert_int_equal(t->int32_data[i], qc[i]);
    }
    t = init(g, dq->input[1]);
    assert_int_equal(t->n_float_data, 4);
    assert_memory_equal(t->float_data, sc, sizeof sc);
    t = init(g, dq->input[2]);
    for (int i = 0; i < 4; i++) {
        assert_int_equal(t->int32_data[i], 0);
    }
    /* the bias: int32, scale x_scale * w_scale[c] */
    dq = maker(g, conv->input[2]);
    assert_string_equal(dq->op_type, "DequantizeLinear");
    t = init(g, dq->input[0]);
    assert_int_equal(t->data_type, ONNX__TENSOR_PROTO__DATA_TYPE__INT32);
    for (int c = 0; c < 4; c++) {
        const float bs = tq[0].scale * sc[c];
        assert_true(init(g, dq->input[1])->float_data[c] == bs);
        assert_int_equal(t->int32_data[c],
                         (int32_t)nearbyintf(bc[c] / bs));
    }

    /* the relu after the conv, then the conv's tensor's Q/DQ (uint8) */
    {
        const Onnx__NodeProto *relu = reader(g, conv->output[0]);
        assert_string_equal(relu->op_type, "Relu");
        assert_string_equal(relu->output[0], "c");
    }
    x = check_qdq(g, "c", &tq[1]);
    assert_string_equal(reader(g, x)->op_type, "MaxPool");
    x = check_qdq(g, "p", &tq[2]);
    assert_string_equal(reader(g, x)->op_type, "Flatten");
    x = check_qdq(g, "f", &tq[3]);
    gemm = reader(g, x);
    assert_string_equal(gemm->op_type, "Gemm");

    /* the dense layer carries no weight scales: max|w_c| / 127 */
    dq = maker(g, gemm->input[1]);
    t = init(g, dq->input[1]);
    for (int c = 0; c < 3; c++) {
        float mx = 0.0f;
        for (int k = 0; k < 16; k++) {
            mx = fmaxf(mx, fabsf(wd[c * 16 + k]));
        }
        assert_true(t->float_data[c] == mx / 127.0f);
        for (int k = 0; k < 16; k++) {
            const float q = nearbyintf(wd[c * 16 + k] / (mx / 127.0f));
            assert_int_equal(init(g, dq->input[0])->int32_data[c * 16 + k],
                             (int32_t)q);
        }
    }
    x = check_qdq(g, "fc", &tq[4]);
    /* the graph's output is the last DequantizeLinear's */
    assert_int_equal(g->n_output, 1);
    assert_string_equal(g->output[0]->name, x);

    onnx__model_proto__free_unpacked(mp, NULL);
    free(buf);

    /* a model where one tensor has no quantisation is written in float */
    assert_int_equal(memest_model_set_tensor_quant(m, 2, NULL), 0);
    assert_false(memest_model_is_quantized(m));
    assert_int_equal(memest_model_to_onnx(m, &buf, &len, &diag), 0);
    mp = onnx__model_proto__unpack(NULL, len, buf);
    assert_non_null(mp);
    for (size_t i = 0; i < mp->graph->n_node; i++) {
        assert_string_not_equal(mp->graph->node[i]->op_type,
                                "QuantizeLinear");
        assert_string_not_equal(mp->graph->node[i]->op_type,
                                "DequantizeLinear");
    }
    onnx__model_proto__free_unpacked(mp, NULL);
    free(buf);
    memest_model_destroy(m);
}

/* Written and read back by the importer: the same layers, every
 * tensor's quantisation, the weight scales, and the weights as the file
 * holds them (scale * q: the conv's bit for bit the model's, made so). */
static void test_qdq_round_trip(void **state)
{
    memest_model *m = quantised_model();
    memest_model *back = NULL;
    unsigned char *buf = NULL;
    size_t len = 0, n = 0;
    struct memest_diag diag;
    const float *ws;
    const struct memest_layer *fc;
    char path[64];
    FILE *f;
    (void)state;

    assert_int_equal(memest_model_to_onnx(m, &buf, &len, &diag), 0);
    snprintf(path, sizeof path, "test-qdq-export-%ld.onnx", (long)getpid());
    f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(buf, 1, len, f), len);
    assert_int_equal(fclose(f), 0);
    free(buf);
    if (memest_model_load_onnx(path, NULL, &back, &diag) != MEMEST_OK) {
        fail_msg("import of the QDQ export: %s", diag.message);
    }
    remove(path);
    assert_int_equal(memest_model_layer_count(back), 4);
    assert_true(memest_model_is_quantized(back));
    for (size_t t = 0; t < 5; t++) {
        struct memest_quant q;
        assert_int_equal(memest_model_tensor_quant(back, t, &q), 0);
        assert_true(q.scale == tq[t].scale);
        assert_int_equal(q.zero_point, tq[t].zero_point);
        assert_int_equal(q.is_unsigned, tq[t].is_unsigned);
    }
    for (size_t i = 0; i < 4; i++) {
        assert_int_equal(memest_model_layer(back, i)->kind,
                         memest_model_layer(m, i)->kind);
        assert_int_equal(memest_model_layer(back, i)->act,
                         memest_model_layer(m, i)->act);
    }
    ws = memest_model_weight_scales(back, 0, &n);
    assert_non_null(ws);
    assert_int_equal(n, 4);
    assert_memory_equal(ws, sc, sizeof sc);
    assert_memory_equal(memest_model_layer(back, 0)->weight, wc, sizeof wc);
    ws = memest_model_weight_scales(back, 3, &n);
    assert_non_null(ws);
    assert_int_equal(n, 3);
    fc = memest_model_layer(back, 3);
    for (int c = 0; c < 3; c++) {
        float mx = 0.0f;
        for (int k = 0; k < 16; k++) {
            mx = fmaxf(mx, fabsf(wd[c * 16 + k]));
        }
        assert_true(ws[c] == mx / 127.0f);
        for (int k = 0; k < 16; k++) {
            const float q = nearbyintf(wd[c * 16 + k] / ws[c]);
            assert_true(fc->weight[c * 16 + k] == ws[c] * q);
        }
    }
    memest_model_destroy(back);
    memest_model_destroy(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_qdq),
        cmocka_unit_test(test_qdq_round_trip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
