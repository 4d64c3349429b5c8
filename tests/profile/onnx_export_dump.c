/*
 * onnx-export-dump [--qdq] MODEL OUTDIR [BATCH]: write MODEL (a preset, a text
 * description or an ONNX file) as OUTDIR/model.onnx with
 * memest_model_to_onnx(), and beside it what edgefit's executor computes
 * at fp32 on deterministic inputs: input_K.bin (float32, little endian),
 * output.bin and meta.json (names and shapes, batch first), for
 * scripts/check-onnx-export-ort.js to compare with ONNX Runtime's outputs
 * on the same file. A model without weights (a preset, a text file) gets
 * deterministic ones, uniform in +-1/sqrt(fan in), in PyTorch's names (a
 * batch norm folded into a layer: gamma 1, beta 0, mean 0, variance 1).
 * With --qdq the model is first calibrated (min-max, prof_ranges_calibrate,
 * on 32 samples like the inputs) and given those quantisations
 * (memest_model_set_tensor_quant), so that the file is written as QDQ;
 * output.bin stays edgefit's fp32 output, which the QDQ file approximates,
 * and output_int8.bin is edgefit's static int8 output on the model's
 * params, with the output tensor's scale in meta.json.
 * Not a test: a tool of that script.
 */
#include "edgefit/memest.h"
#include "edgefit/profile.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng = 2026;

static float rnd(void)
{
    uint64_t z = (rng += 0x9E3779B97F4A7C15u);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
    z ^= z >> 31;
    return (float)((double)(z >> 40) / 16777216.0 * 2.0 - 1.0);
}

#define MAXT 4096

static struct memest_tensor ts[MAXT];
static char names[MAXT][200];
static size_t nt;

static int add(const char *layer, const char *sfx, unsigned rank,
               const uint64_t *dim, double scale, double fill)
{
    uint64_t n = 1;
    float *d;
    if (nt == MAXT) {
        return 0;
    }
    for (unsigned k = 0; k < rank; k++) {
        n *= dim[k];
        ts[nt].dim[k] = dim[k];
    }
    d = malloc((size_t)n * sizeof *d);
    if (d == NULL) {
        return 0;
    }
    for (uint64_t i = 0; i < n; i++) {
        d[i] = scale > 0 ? (float)(scale * rnd()) : (float)fill;
    }
    snprintf(names[nt], sizeof names[nt], "%s.%s", layer, sfx);
    ts[nt].name = names[nt];
    ts[nt].rank = rank;
    ts[nt].data = d;
    nt++;
    return 1;
}

static int give_weights(memest_model *m)
{
    struct memest_diag diag;
    int ok = 1;
    for (size_t i = 0; ok && i < memest_model_layer_count(m); i++) {
        const struct memest_layer *L = memest_model_layer(m, i);
        uint64_t dim[MEMEST_TENSOR_MAX_RANK];
        unsigned rank;
        const char *bn = L->kind == MEMEST_KIND_BATCHNORM ? L->name
                                                          : L->folded_bn;
        uint64_t c = L->kind == MEMEST_KIND_BATCHNORM ? L->weight_count
                                                      : L->units;
        if (L->parameter_count == 0) {
            continue;
        }
        /* operators with more than a weight and a bias (attention, lstm,
         * gru) list their state_dict tensors: each a matrix scaled by its
         * fan-in, a vector (a bias) by 0.1 */
        struct memest_param_tensor pt[MEMEST_PARAM_TENSORS_MAX];
        const size_t npt = memest_layer_param_tensors(L, pt);
        if (npt > 2 || (npt > 0 && strcmp(pt[0].suffix, ".weight") != 0)) {
            for (size_t k = 0; ok && k < npt; k++) {
                const double fan = pt[k].rank > 1 ? (double)pt[k].dim[1] : 0;
                ok = add(L->name, pt[k].suffix + 1, pt[k].rank, pt[k].dim,
                         fan > 0 ? 1.0 / sqrt(fan) : 0.1, 0);
            }
            continue;
        }
        if (L->kind != MEMEST_KIND_BATCHNORM) {
            /* a class token's or position embedding's table has no
             * units: scale 1 */
            double fan = L->units ? (double)L->weight_count /
                                        (double)L->units
                                  : 1.0;
            rank = memest_layer_weight_shape(L, dim);
            ok = add(L->name, "weight", rank, dim, 1.0 / sqrt(fan), 0);
            if (ok && memest_model_layer_declared_bias(m, i)) {
                ok = add(L->name, "bias", 1, &L->units, 0.1, 0);
            }
        }
        if (ok && bn != NULL) {
            ok = add(bn, "weight", 1, &c, 0, 1.0) &&
                 add(bn, "bias", 1, &c, 0.1, 0) &&
                 add(bn, "running_mean", 1, &c, 0, 0.0) &&
                 add(bn, "running_var", 1, &c, 0, 1.0);
        }
    }
    if (!ok) {
        fprintf(stderr, "onnx-export-dump: too many tensors or no memory\n");
        return 0;
    }
    if (memest_model_set_weights(m, ts, nt, &diag) != MEMEST_OK) {
        fprintf(stderr, "onnx-export-dump: weights: %s\n", diag.message);
        return 0;
    }
    for (size_t k = 0; k < nt; k++) {
        free((void *)ts[k].data);
    }
    return 1;
}

/* Calibrate m on 32 samples uniform in [-1, 1) and set every tensor's
 * quantisation from the ranges. */
static int quantise(memest_model *m)
{
    struct prof_dataset data;
    struct prof_ranges r;
    struct prof_diag pd;
    struct memest_shape sh = memest_model_input_shape(m);
    uint64_t per = 1;
    uint32_t s = 4242;
    int ok = 1;

    memset(&data, 0, sizeof data);
    data.rank = sh.rank;
    for (unsigned d = 0; d < sh.rank; d++) {
        data.shape[d] = sh.dim[d];
        per *= sh.dim[d];
    }
    data.count = 32;
    data.sample_count = per;
    data.x = malloc((size_t)(per * data.count) * sizeof(float));
    if (data.x == NULL) {
        return 0;
    }
    for (uint64_t i = 0; i < per * data.count; i++) {
        s = s * 1664525u + 1013904223u;
        data.x[i] = (float)((double)(s >> 8) / 16777216.0 * 2.0 - 1.0);
    }
    if (prof_ranges_calibrate(m, &data, NULL, &r, &pd) != PROF_OK) {
        fprintf(stderr, "onnx-export-dump: calibration: %s\n", pd.message);
        free(data.x);
        return 0;
    }
    free(data.x);
    for (size_t t = 0; ok && t < r.count; t++) {
        struct memest_quant q = {r.tensors[t].scale, r.tensors[t].zero_point,
                                 0};
        ok = memest_model_set_tensor_quant(m, t, &q) == MEMEST_OK;
    }
    prof_ranges_finish(&r);
    if (!ok || !memest_model_is_quantized(m)) {
        fprintf(stderr, "onnx-export-dump: the quantisation was refused\n");
        return 0;
    }
    return 1;
}

static int write_file(const char *dir, const char *name, const void *p,
                      size_t n)
{
    char path[1024];
    FILE *f;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    f = fopen(path, "wb");
    if (f == NULL || fwrite(p, 1, n, f) != n || fclose(f) != 0) {
        fprintf(stderr, "onnx-export-dump: cannot write %s\n", path);
        return 0;
    }
    return 1;
}

static void shape_json(FILE *f, uint64_t batch, struct memest_shape sh)
{
    fprintf(f, "[%llu", (unsigned long long)batch);
    for (unsigned d = 0; d < sh.rank; d++) {
        fprintf(f, ", %llu", (unsigned long long)sh.dim[d]);
    }
    fprintf(f, "]");
}

int main(int argc, char **argv)
{
    memest_model *m = NULL;
    struct memest_diag diag;
    struct prof_exec_opts o;
    struct prof_diag pd;
    prof_exec *ex = NULL;
    unsigned char *buf = NULL;
    size_t len = 0, count, nout;
    float **in;
    size_t *n_in;
    float *out;
    uint64_t batch;
    uint32_t s = 777;
    char path[1024];
    FILE *f;
    int qdq = argc > 1 && strcmp(argv[1], "--qdq") == 0;

    argv += qdq;
    argc -= qdq;
    batch = argc > 3 ? strtoull(argv[3], NULL, 10) : 2;
    if (argc < 3 || batch == 0) {
        fprintf(stderr,
                "usage: onnx-export-dump [--qdq] MODEL OUTDIR [BATCH]\n");
        return 2;
    }
    if (memest_model_load(argv[1], &m, &diag) != MEMEST_OK) {
        fprintf(stderr, "onnx-export-dump: %s: %s\n", argv[1], diag.message);
        return 1;
    }
    if (memest_model_fixed_batch(m) != 0) {
        batch = memest_model_fixed_batch(m);
    }
    if (!memest_model_has_weights(m) && !give_weights(m)) {
        return 1;
    }
    if (qdq && !quantise(m)) {
        return 1;
    }
    if (memest_model_to_onnx(m, &buf, &len, &diag) != MEMEST_OK) {
        fprintf(stderr, "onnx-export-dump: %s\n", diag.message);
        return 1;
    }
    if (!write_file(argv[2], "model.onnx", buf, len)) {
        return 1;
    }
    free(buf);
    prof_exec_opts_init(&o);
    o.batch = batch;
    if (prof_exec_create(m, &o, &ex, &pd) != PROF_OK) {
        fprintf(stderr, "onnx-export-dump: executor: %s\n", pd.message);
        return 1;
    }
    count = prof_exec_input_tensors(ex);
    in = calloc(count, sizeof *in);
    n_in = calloc(count, sizeof *n_in);
    nout = prof_exec_output_count(ex);
    out = malloc(nout * sizeof *out);
    if (in == NULL || n_in == NULL || out == NULL) {
        return 1;
    }
    for (size_t k = 0; k < count; k++) {
        char name[32];
        n_in[k] = prof_exec_input_count_at(ex, k);
        in[k] = malloc(n_in[k] * sizeof(float));
        if (in[k] == NULL) {
            return 1;
        }
        for (size_t i = 0; i < n_in[k]; i++) {
            s = s * 1664525u + 1013904223u;
            in[k][i] = (float)((double)(s >> 8) / 16777216.0 * 2.0 - 1.0);
        }
        snprintf(name, sizeof name, "input_%zu.bin", k);
        if (!write_file(argv[2], name, in[k], n_in[k] * sizeof(float))) {
            return 1;
        }
    }
    if (prof_exec_run_inputs(ex, (const float *const *)in, n_in, count, out,
                             nout) != PROF_OK ||
        !write_file(argv[2], "output.bin", out, nout * sizeof(float))) {
        fprintf(stderr, "onnx-export-dump: the run failed\n");
        return 1;
    }
    if (qdq) {
        struct prof_exec_opts o8 = o;
        prof_exec *e8 = NULL;
        o8.precision = MEMEST_INT8;
        if (prof_exec_create(m, &o8, &e8, &pd) != PROF_OK ||
            prof_exec_run_inputs(e8, (const float *const *)in, n_in, count,
                                 out, nout) != PROF_OK ||
            !write_file(argv[2], "output_int8.bin", out,
                        nout * sizeof(float))) {
            fprintf(stderr, "onnx-export-dump: the int8 run failed: %s\n",
                    pd.message);
            return 1;
        }
        prof_exec_destroy(e8);
    }
    snprintf(path, sizeof path, "%s/meta.json", argv[2]);
    if ((f = fopen(path, "w")) == NULL) {
        return 1;
    }
    fprintf(f, "{\"model\": \"%s\", \"inputs\": [", memest_model_name(m));
    for (size_t k = 0; k < count; k++) {
        fprintf(f, "%s{\"name\": \"%s\", \"shape\": ", k ? ", " : "",
                memest_model_input_name(m, k));
        shape_json(f, batch, memest_model_input_shape_at(m, k));
        fprintf(f, "}");
    }
    fprintf(f, "], \"output_shape\": ");
    shape_json(f, batch, memest_model_output_shape(m));
    if (qdq) {
        struct memest_quant q;
        memest_model_tensor_quant(m, memest_model_tensor_count(m) - 1, &q);
        fprintf(f, ", \"output_scale\": %.9g", (double)q.scale);
    }
    fprintf(f, "}\n");
    fclose(f);
    for (size_t k = 0; k < count; k++) {
        free(in[k]);
    }
    free(in);
    free(n_in);
    free(out);
    prof_exec_destroy(ex);
    memest_model_destroy(m);
    return 0;
}
