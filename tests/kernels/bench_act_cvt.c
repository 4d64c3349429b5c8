/* Benchmark of the activations and conversions on every path this CPU
 * has, one thread, against a plain copy of the same data (memcpy):
 *   GELU (fused tanh form, erf form, TinyTorch's unfused version) and the
 *   other activations on 4 Mi floats, in ns per element; the vision-zoo
 *   activations (silu, hard_swish, ...) also as speed-ups over C;
 *   float <-> fp16/bf16 on 16 Mi floats, in GB/s counting bytes read and
 *   written (6 per element), next to the copy's GB/s (8 per element).
 * Medians of --reps runs (default 21) after a warm-up run.
 *
 * usage: bench-act-cvt [--reps N] [--n-act N] [--n-cvt N] */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "act.h"
#include "cvt.h"
#include "edgefit/kernels.h"

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

enum op {
    OP_COPY, OP_GELU, OP_GELU_ERF, OP_GELU_UNFUSED, OP_TANH, OP_ERF,
    OP_SIGMOID, OP_RELU, OP_GELU_BWD, OP_F2H, OP_H2F, OP_F2B, OP_B2F,
    OP_SILU, OP_HARD_SWISH, OP_HARD_SIGMOID, OP_SOFTPLUS, OP_ELU, OP_LEAKY,
    OP_CLIP,
};

struct ctx {
    const struct kern_act_dsp *act;
    const struct kern_cvt_dsp *cvt;
    size_t n;
    float *x, *y, *scratch;
    uint16_t *h;
};

static void run_op(const struct ctx *c, enum op op)
{
    switch (op) {
    case OP_COPY:
        memcpy(c->y, c->x, c->n * sizeof *c->x);
        break;
    case OP_GELU:
        c->act->gelu_f32(c->y, c->x, c->n);
        break;
    case OP_GELU_ERF:
        c->act->gelu_erf_f32(c->y, c->x, c->n);
        break;
    case OP_GELU_UNFUSED:
        /* Through the public API, which dispatches its tanh pass. */
        kern_gelu_unfused_f32(c->y, c->x, c->n, c->scratch);
        break;
    case OP_TANH:
        c->act->tanh_f32(c->y, c->x, c->n);
        break;
    case OP_ERF:
        c->act->erf_f32(c->y, c->x, c->n);
        break;
    case OP_SIGMOID:
        c->act->sigmoid_f32(c->y, c->x, c->n);
        break;
    case OP_RELU:
        c->act->relu_f32(c->y, c->x, c->n);
        break;
    case OP_GELU_BWD:
        c->act->gelu_backward_f32(c->y, c->scratch, c->x, c->n);
        break;
    case OP_SILU:
        c->act->silu_f32(c->y, c->x, c->n);
        break;
    case OP_HARD_SWISH:
        c->act->hard_swish_f32(c->y, c->x, c->n);
        break;
    case OP_HARD_SIGMOID:
        c->act->hard_sigmoid_f32(c->y, c->x, c->n, KERN_HARD_SWISH_ALPHA,
                                 KERN_HARD_SWISH_BETA);
        break;
    case OP_SOFTPLUS:
        c->act->softplus_f32(c->y, c->x, c->n);
        break;
    case OP_ELU:
        c->act->elu_f32(c->y, c->x, c->n, 1.0f, 0.0f);
        break;
    case OP_LEAKY:
        c->act->leaky_relu_f32(c->y, c->x, c->n, 0.01f, 0.0f);
        break;
    case OP_CLIP:
        c->act->clip_f32(c->y, c->x, c->n, 0.0f, 6.0f);
        break;
    case OP_F2H:
        c->cvt->f32_to_f16(c->h, c->x, c->n);
        break;
    case OP_H2F:
        c->cvt->f16_to_f32(c->y, c->h, c->n);
        break;
    case OP_F2B:
        c->cvt->f32_to_bf16(c->h, c->x, c->n);
        break;
    case OP_B2F:
        c->cvt->bf16_to_f32(c->y, c->h, c->n);
        break;
    }
}

/* Median time of op, and the median over runs of op's time divided by a
 * copy timed right before it: on a shared, busy machine the paired ratio
 * is steadier than either time. */
static double time_op(const struct ctx *c, enum op op, int reps,
                      double *ratio)
{
    double *t = malloc(2 * (size_t)reps * sizeof *t);
    if (!t) {
        return 0.0;
    }
    double *q = t + reps;
    run_op(c, op);
    for (int r = 0; r < reps; r++) {
        const double t0 = now_ns();
        run_op(c, OP_COPY);
        const double t1 = now_ns();
        run_op(c, op);
        const double t2 = now_ns();
        t[r] = t2 - t1;
        q[r] = (t2 - t1) / (t1 - t0);
    }
    const double m = median(t, reps);
    if (ratio) {
        *ratio = median(q, reps);
    }
    free(t);
    return m;
}

static void *alloc64(size_t bytes)
{
    void *p = aligned_alloc(64, (bytes + 63) / 64 * 64);
    if (p) {
        memset(p, 0, bytes); /* fault the pages in before timing */
    }
    return p;
}

int main(int argc, char **argv)
{
    int reps = 21;
    size_t n_act = (size_t)4 << 20, n_cvt = (size_t)16 << 20;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--reps") && i + 1 < argc) {
            reps = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--n-act") && i + 1 < argc) {
            n_act = (size_t)strtoull(argv[++i], NULL, 0);
        } else if (!strcmp(argv[i], "--n-cvt") && i + 1 < argc) {
            n_cvt = (size_t)strtoull(argv[++i], NULL, 0);
        } else {
            fprintf(stderr, "usage: bench-act-cvt [--reps N] [--n-act N] "
                            "[--n-cvt N]\n");
            return 2;
        }
    }
    if (reps < 1 || n_act < 1 || n_cvt < 1 || n_act > ((size_t)1 << 30) ||
        n_cvt > ((size_t)1 << 30)) {
        fprintf(stderr, "bench-act-cvt: sizes must be in [1, 2^30], reps "
                        ">= 1\n");
        return 2;
    }
    const size_t nmax = n_act > n_cvt ? n_act : n_cvt;
    struct ctx c = {0};
    c.x = alloc64(nmax * sizeof *c.x);
    c.y = alloc64(nmax * sizeof *c.y);
    c.scratch = alloc64(nmax * sizeof *c.scratch);
    c.h = alloc64(nmax * sizeof *c.h);
    if (!c.x || !c.y || !c.scratch || !c.h) {
        fprintf(stderr, "bench-act-cvt: out of memory\n");
        return 1;
    }
    uint32_t s = 12345;
    for (size_t i = 0; i < nmax; i++) {
        s = s * 1664525u + 1013904223u;
        c.x[i] = ((float)(s >> 8) / 16777216.0f - 0.5f) * 12.0f;
        c.scratch[i] = 1.0f;
    }
    kern_f32_to_f16(c.h, c.x, nmax);

    static const struct {
        const char *name;
        unsigned flags;
    } levels[] = {
        {"c", 0},
        {"avx2", KERN_CPU_AVX2},
        {"avx512", KERN_CPU_AVX2 | KERN_CPU_AVX512},
        {"avx512bf16", KERN_CPU_AVX2 | KERN_CPU_AVX512 | KERN_CPU_AVX512BF16},
    };
    const unsigned host = kern_cpu_flags();
    printf("bench-act-cvt: one thread, medians of %d runs; cpu path %s\n",
           reps, kern_cpu_path_name(host));

    c.n = n_act;
    const double copy_act = time_op(&c, OP_COPY, reps, NULL) / (double)n_act;
    printf("\nactivations, %zu floats: ns/element (x copy: median ratio to a "
           "memcpy timed alongside; alone it takes %.3f ns/element)\n",
           n_act, copy_act);
    printf("%-8s %16s %16s %16s %16s %16s %16s %16s\n", "path", "gelu",
           "gelu_erf", "gelu_unfused", "tanh", "sigmoid", "erf",
           "gelu_backward");
    static const enum op act_ops[] = {OP_GELU, OP_GELU_ERF, OP_GELU_UNFUSED,
                                      OP_TANH, OP_SIGMOID, OP_ERF,
                                      OP_GELU_BWD};
    for (size_t l = 0; l < sizeof levels / sizeof levels[0]; l++) {
        if ((levels[l].flags & host) != levels[l].flags) {
            continue;
        }
        if (levels[l].flags & KERN_CPU_AVX512BF16) {
            continue; /* a conversion-only level */
        }
        struct kern_act_dsp act;
        kern_act_dsp_init(&act, levels[l].flags);
        c.act = &act;
        printf("%-8s", levels[l].name);
        for (size_t k = 0; k < sizeof act_ops / sizeof act_ops[0]; k++) {
            if (act_ops[k] == OP_GELU_UNFUSED &&
                levels[l].flags != (host & (KERN_CPU_AVX2 | KERN_CPU_AVX512))) {
                printf(" %16s", "-"); /* the public API: host path only */
                continue;
            }
            double ratio = 0.0;
            const double t =
                time_op(&c, act_ops[k], reps, &ratio) / (double)n_act;
            printf(" %7.3f (x%5.2f)", t, ratio);
        }
        printf("\n");
    }

    /* The vision-zoo activations: ns/element and, beside it, the C
     * path's time over this path's (the speed-up over the reference). */
    printf("\nvision-zoo activations, %zu floats: ns/element (x C: the C "
           "path's median time over this path's)\n", n_act);
    printf("%-8s %16s %16s %16s %16s %16s %16s %16s\n", "path", "silu",
           "hard_swish", "hard_sigmoid", "softplus", "elu", "leaky_relu",
           "clip");
    static const enum op zoo_ops[] = {OP_SILU, OP_HARD_SWISH,
                                      OP_HARD_SIGMOID, OP_SOFTPLUS, OP_ELU,
                                      OP_LEAKY, OP_CLIP};
    enum { NZOO = sizeof zoo_ops / sizeof zoo_ops[0] };
    double c_time[NZOO] = {0};
    for (size_t l = 0; l < sizeof levels / sizeof levels[0]; l++) {
        if ((levels[l].flags & host) != levels[l].flags ||
            (levels[l].flags & KERN_CPU_AVX512BF16)) {
            continue;
        }
        struct kern_act_dsp act;
        kern_act_dsp_init(&act, levels[l].flags);
        c.act = &act;
        printf("%-8s", levels[l].name);
        for (size_t k = 0; k < NZOO; k++) {
            const double t = time_op(&c, zoo_ops[k], reps, NULL);
            if (levels[l].flags == 0) {
                c_time[k] = t;
            }
            printf(" %7.3f (x%5.1f)", t / (double)n_act,
                   t > 0 ? c_time[k] / t : 0.0);
        }
        printf("\n");
    }

    c.n = n_cvt;
    const double copy_cvt = time_op(&c, OP_COPY, reps, NULL);
    const double copy_gbs = 8.0 * (double)n_cvt / copy_cvt;
    printf("\nconversions, %zu elements: GB/s counting bytes read + "
           "written (memcpy of the floats: %.1f GB/s); in brackets the\n"
           "median ratio of GB/s to a memcpy of the floats timed alongside\n",
           n_cvt, copy_gbs);
    printf("%-10s %18s %18s %18s %18s\n", "path", "f32->f16", "f16->f32",
           "f32->bf16", "bf16->f32");
    static const enum op cvt_ops[] = {OP_F2H, OP_H2F, OP_F2B, OP_B2F};
    for (size_t l = 0; l < sizeof levels / sizeof levels[0]; l++) {
        if ((levels[l].flags & host) != levels[l].flags) {
            continue;
        }
        struct kern_cvt_dsp cvt;
        kern_cvt_dsp_init(&cvt, levels[l].flags);
        c.cvt = &cvt;
        printf("%-10s", levels[l].name);
        for (size_t k = 0; k < 4; k++) {
            double ratio = 0.0;
            const double t = time_op(&c, cvt_ops[k], reps, &ratio);
            /* GB/s ratio: (6 n / t) / (8 n / t_copy). */
            printf(" %10.1f (x%4.2f)", 6.0 * (double)n_cvt / t,
                   6.0 / 8.0 / ratio);
        }
        printf("\n");
    }
    free(c.x);
    free(c.y);
    free(c.scratch);
    free(c.h);
    return 0;
}
