/* The executor on 1 and on N threads, side by side: whole forward passes
 * (prof_exec_run) of each model, batch and precision, timed in alternating
 * rounds so that a busy machine slows both alike; the medians and their
 * ratio. Layers under the work threshold stay on one thread (their count
 * is printed). A benchmark, not a test.
 *
 *   bench-profile-exec-threads [threads] [rounds]   (default 2 and 7) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "edgefit/memest.h"
#include "edgefit/profile.h"

struct run {
    prof_exec *ex;
    const float *x;
    float *y;
};

static int forward(void *ctx)
{
    struct run *r = ctx;
    return prof_exec_run(r->ex, r->x, prof_exec_input_count(r->ex), r->y,
                         prof_exec_output_count(r->ex));
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int bench(const char *spec, uint64_t batch, enum memest_precision p,
                 unsigned threads, unsigned rounds)
{
    memest_model *m = NULL;
    struct memest_diag md;
    const int mst = memest_is_preset_name(spec)
                        ? memest_model_preset(spec, &m, &md)
                        : memest_model_parse(spec, &m, &md);
    if (mst != MEMEST_OK) {
        fprintf(stderr, "model: %s\n", md.message);
        return 1;
    }
    prof_exec *ex[2] = {NULL, NULL};
    for (int i = 0; i < 2; i++) {
        struct prof_exec_opts o;
        prof_exec_opts_init(&o);
        o.batch = batch;
        o.precision = p;
        o.threads = i == 0 ? 1 : threads;
        if (prof_exec_create(m, &o, &ex[i], NULL) != PROF_OK) {
            fprintf(stderr, "cannot build the executor\n");
            return 1;
        }
    }
    const size_t nin = prof_exec_input_count(ex[0]);
    const size_t nout = prof_exec_output_count(ex[0]);
    float *x = malloc(nin * sizeof *x), *y = malloc(nout * sizeof *y);
    if (!x || !y) {
        return 1;
    }
    for (size_t i = 0; i < nin; i++) {
        x[i] = (float)(i % 255) / 255.0f;
    }
    size_t split = 0, layers = prof_exec_op_count(ex[1]) - 1;
    for (size_t i = 1; i <= layers; i++) {
        struct prof_exec_op_info info;
        prof_exec_op_info(ex[1], i, &info);
        split += info.threads > 1;
    }
    struct prof_time_opts to;
    prof_time_opts_init(&to);
    to.warmup = 3;
    to.repeats = 9;
    to.min_sample_ms = 2.0;
    double med[2][64];
    if (rounds > 64) {
        rounds = 64;
    }
    for (unsigned r = 0; r < rounds; r++) {
        for (int i = 0; i < 2; i++) {
            struct run run = {ex[i], x, y};
            struct prof_stats st;
            if (prof_time(forward, &run, &to, &st, NULL) != PROF_OK) {
                return 1;
            }
            med[i][r] = st.median_ms;
        }
    }
    qsort(med[0], rounds, sizeof(double), cmp_double);
    qsort(med[1], rounds, sizeof(double), cmp_double);
    const double t1 = med[0][rounds / 2], tn = med[1][rounds / 2];
    printf("%-14s %5llu %-5s %9.4f %9.4f %7.2f   %zu of %zu\n",
           memest_model_name(m), (unsigned long long)batch,
           memest_precision_name(p), t1, tn, t1 / tn, split, layers);
    free(x);
    free(y);
    prof_exec_destroy(ex[0]);
    prof_exec_destroy(ex[1]);
    memest_model_destroy(m);
    return 0;
}

int main(int argc, char **argv)
{
    const unsigned threads =
        argc > 1 ? (unsigned)strtoul(argv[1], NULL, 10) : 2;
    const unsigned rounds =
        argc > 2 ? (unsigned)strtoul(argv[2], NULL, 10) : 7;
    if (threads < 2 || threads > 64 || rounds < 1) {
        fprintf(stderr, "usage: %s [threads 2..64] [rounds >= 1]\n",
                argv[0]);
        return 2;
    }
    printf("forward pass, median of %u rounds (each the median of 9 "
           "samples); ratio = 1 thread / %u threads\n",
           rounds, threads);
    printf("%-14s %5s %-5s %9s %9s %7s   %s\n", "model", "batch", "prec",
           "t1_ms", "tN_ms", "ratio", "layers split");
    static const char dense[] = "name dense-1024\n"
                                "input 1024\n"
                                "dense 1024 act=relu\n";
    static const char conv[] = "name conv-64\n"
                               "input 32x32x32\n"
                               "conv2d 64 k=3 p=1 act=relu\n";
    const struct {
        const char *spec;
        uint64_t batch;
        enum memest_precision p;
    } cases[] = {
        {"smallcnn", 1, MEMEST_FP32},  {"smallcnn", 32, MEMEST_FP32},
        {"smallcnn", 32, MEMEST_INT8_DYNAMIC}, {dense, 1, MEMEST_FP32},
        {dense, 32, MEMEST_FP32},      {dense, 32, MEMEST_FP16},
        {dense, 32, MEMEST_INT8_DYNAMIC},      {conv, 1, MEMEST_FP32},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        if (bench(cases[i].spec, cases[i].batch, cases[i].p, threads,
                  rounds) != 0) {
            return 1;
        }
    }
    return 0;
}
