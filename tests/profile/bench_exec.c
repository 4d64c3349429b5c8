/* What the executor's framing costs, in fp32: for each model and batch, one
 * forward pass through the executor (prof_exec_run), the sum of its
 * operators each timed alone (prof_exec_profile), and the sum of the bare
 * libkernels calls those operators make, timed alone on buffers of the same
 * shapes (kern_sgemm, bias add and activation for dense and for each
 * sample and group of a conv2d, the pooling kernels, a memcpy for the input
 * staging and flatten). The executor's own work (im2col, dispatch, moving
 * between operators) is the difference. Medians; a benchmark, not a test.
 *
 *   bench-profile-exec [repeats]     (default 30) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "edgefit/kernels.h"
#include "edgefit/memest.h"
#include "edgefit/profile.h"

/* The bare kernels of one layer, on private buffers. */
struct bare {
    const struct memest_layer *L;
    size_t batch;
    float *x, *w, *b, *y, *col;
    size_t in_n, out_n;
};

static size_t elems(const struct memest_shape *s)
{
    size_t n = 1;
    for (unsigned i = 0; i < s->rank; i++) {
        n *= (size_t)s->dim[i];
    }
    return n;
}

static int act(const struct bare *k, float *y, size_t rows, size_t cols)
{
    const size_t n = k->out_n;
    switch (k->L->act) {
    case MEMEST_ACT_RELU:
        return kern_relu_f32(y, y, n);
    case MEMEST_ACT_GELU:
        return kern_gelu_f32(y, y, n);
    case MEMEST_ACT_SIGMOID:
        return kern_sigmoid_f32(y, y, n);
    case MEMEST_ACT_TANH:
        return kern_tanh_f32(y, y, n);
    case MEMEST_ACT_SOFTMAX:
        return kern_nn_softmax_f32(y, rows, cols, y);
    default:
        return KERN_OK;
    }
}

static int run_bare(void *ctx)
{
    const struct bare *k = ctx;
    const struct memest_layer *L = k->L;
    int st = KERN_OK;
    switch (L->kind) {
    case MEMEST_KIND_INPUT:
    case MEMEST_KIND_FLATTEN:
        memcpy(k->y, k->x, k->out_n * sizeof(float));
        return 0;
    case MEMEST_KIND_DENSE: {
        const size_t in = (size_t)L->in_shape.dim[0];
        const size_t out = (size_t)L->units;
        st = kern_sgemm(KERN_MM_TRANS_B, k->batch, out, in, k->x, in, k->w,
                        in, k->y, out);
        if (st == KERN_OK && L->has_bias) {
            st = kern_nn_bias_add_f32(k->y, k->batch, out, k->b);
        }
        if (st == KERN_OK) {
            st = act(k, k->y, k->batch, out);
        }
        return st != KERN_OK;
    }
    case MEMEST_KIND_CONV2D: {
        const size_t g = (size_t)L->groups, oc = (size_t)L->units;
        const size_t ocg = oc / g;
        const size_t kdim = (size_t)(L->in_shape.dim[0] / L->groups) *
                            (size_t)(L->kernel_h * L->kernel_w);
        const size_t hw = (size_t)(L->out_shape.dim[1] * L->out_shape.dim[2]);
        for (size_t s = 0; st == KERN_OK && s < k->batch; s++) {
            for (size_t j = 0; st == KERN_OK && j < g; j++) {
                st = kern_sgemm(0, ocg, hw, kdim, k->w + j * ocg * kdim, kdim,
                                k->col, hw, k->y + (s * oc + j * ocg) * hw,
                                hw);
            }
        }
        if (st == KERN_OK && L->has_bias) {
            st = kern_nn_bias_add_nchw_f32(k->y, k->batch, oc, hw, k->b);
        }
        if (st == KERN_OK && L->act != MEMEST_ACT_SOFTMAX) {
            st = act(k, k->y, 0, 0);
        }
        return st != KERN_OK;
    }
    case MEMEST_KIND_MAXPOOL:
    case MEMEST_KIND_AVGPOOL: {
        struct kern_pool2d_shape ps = {
            .batch = k->batch, .channels = (size_t)L->in_shape.dim[0],
            .in_h = (size_t)L->in_shape.dim[1],
            .in_w = (size_t)L->in_shape.dim[2], .kh = (size_t)L->kernel_h,
            .kw = (size_t)L->kernel_w, .stride_h = (size_t)L->stride_h,
            .stride_w = (size_t)L->stride_w, .pad_top = (size_t)L->pad_top,
            .pad_left = (size_t)L->pad_left,
            .pad_bottom = (size_t)L->pad_bottom,
            .pad_right = (size_t)L->pad_right,
            .count_include_pad = L->count_include_pad,
        };
        st = L->kind == MEMEST_KIND_MAXPOOL ? kern_maxpool2d_f32(&ps, k->x, k->y)
                                            : kern_avgpool2d_f32(&ps, k->x, k->y);
        return st != KERN_OK;
    }
    case MEMEST_KIND_ACTIVATION:
        memcpy(k->y, k->x, k->out_n * sizeof(float));
        return act(k, k->y, k->batch, k->out_n / k->batch) != KERN_OK;
    default:
        return 1;
    }
}

static float *filled(size_t n, float v)
{
    float *p = malloc((n ? n : 1) * sizeof(float));
    if (!p) {
        perror("malloc");
        exit(1);
    }
    for (size_t i = 0; i < n; i++) {
        p[i] = v * (float)((i % 13) + 1) / 13.0f;
    }
    return p;
}

static void bench(const char *spec, uint64_t batch,
                  const struct prof_time_opts *to)
{
    memest_model *m = NULL;
    prof_exec *ex = NULL;
    if (memest_model_preset(spec, &m, NULL) != MEMEST_OK) {
        fprintf(stderr, "%s: not a preset\n", spec);
        exit(1);
    }
    struct prof_exec_opts eo;
    prof_exec_opts_init(&eo);
    eo.batch = batch;
    if (prof_exec_create(m, &eo, &ex, NULL) != PROF_OK) {
        fprintf(stderr, "%s: executor failed\n", spec);
        exit(1);
    }
    const size_t nin = prof_exec_input_count(ex);
    float *x = filled(nin, 1.0f);
    struct prof_exec_profile p;
    if (prof_exec_profile(ex, x, nin, to, &p) != PROF_OK) {
        fprintf(stderr, "%s: profile failed\n", spec);
        exit(1);
    }

    /* The bare kernels: operator 0 stages the input, then the layers. */
    double bare_sum = 0.0;
    const size_t nl = memest_model_layer_count(m);
    for (size_t i = 0; i <= nl; i++) {
        struct memest_layer input = {.kind = MEMEST_KIND_INPUT};
        struct bare k = {.batch = (size_t)batch};
        if (i == 0) {
            input.in_shape = input.out_shape = memest_model_input_shape(m);
            k.L = &input;
        } else {
            k.L = memest_model_layer(m, i - 1);
        }
        k.in_n = (size_t)batch * elems(&k.L->in_shape);
        k.out_n = (size_t)batch * elems(&k.L->out_shape);
        k.x = filled(k.in_n, 0.5f);
        k.y = filled(k.out_n, 0.0f);
        k.w = filled((size_t)k.L->weight_count, 0.01f);
        k.b = filled((size_t)k.L->bias_count, 0.1f);
        size_t col_n = 0;
        if (k.L->kind == MEMEST_KIND_CONV2D) {
            col_n = (size_t)(k.L->in_shape.dim[0] / k.L->groups *
                             k.L->kernel_h * k.L->kernel_w *
                             k.L->out_shape.dim[1] * k.L->out_shape.dim[2]);
        }
        k.col = filled(col_n, 0.5f);
        struct prof_stats st;
        if (prof_time(run_bare, &k, to, &st, NULL) != PROF_OK) {
            fprintf(stderr, "%s: bare kernels of layer %zu failed\n", spec,
                    i);
            exit(1);
        }
        printf("  %-9s operator %9.4f ms   bare kernels %9.4f ms\n",
               p.ops[i].info.layer, p.ops[i].latency_ms, st.median_ms);
        bare_sum += st.median_ms;
        free(k.x);
        free(k.y);
        free(k.w);
        free(k.b);
        free(k.col);
    }
    printf("%s batch %llu: forward %.4f ms, operators alone %.4f ms "
           "(x%.3f), bare kernels %.4f ms (forward / kernels = %.3f)\n\n",
           spec, (unsigned long long)batch, p.forward_ms, p.operator_sum_ms,
           p.forward_ms / p.operator_sum_ms, bare_sum,
           p.forward_ms / bare_sum);
    prof_exec_profile_finish(&p);
    free(x);
    prof_exec_destroy(ex);
    memest_model_destroy(m);
}

int main(int argc, char **argv)
{
    struct prof_time_opts to;
    prof_time_opts_init(&to);
    to.warmup = 5;
    to.repeats = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 10) : 30;
    to.min_sample_ms = 0.05;
    if (to.repeats == 0) {
        fprintf(stderr, "usage: %s [repeats >= 1]\n", argv[0]);
        return 2;
    }
    const char *models[] = {"smallcnn", "mlp:784-64-10"};
    const uint64_t batches[] = {1, 32};
    for (size_t i = 0; i < 2; i++) {
        for (size_t j = 0; j < 2; j++) {
            bench(models[i], batches[j], &to);
        }
    }
    return 0;
}
