/*
 * Benchmark: parse and estimate a generated model of 1,000 layers (and of
 * 10,000, to show the cost grows linearly). Prints medians of repeated
 * runs and the ratio between the two sizes.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "edgefit/memest.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a;
    double y = *(const double *)b;
    return (x > y) - (x < y);
}

/* conv2d/relu pairs that keep 16x32x32, then flatten and a dense head. */
static char *make_model(int layers)
{
    size_t cap = (size_t)layers * 48 + 128;
    char *text = malloc(cap);
    size_t len = 0;
    if (text == NULL) {
        return NULL;
    }
    len += (size_t)snprintf(text, cap, "name generated\ninput 16x32x32\n");
    for (int i = 0; i < layers - 2; i++) {
        len += (size_t)snprintf(text + len, cap - len, "%s\n",
                                i % 2 ? "relu"
                                      : "conv2d 16 k=3 p=1 g=2 act=none");
    }
    snprintf(text + len, cap - len, "flatten\ndense 10 act=softmax\n");
    return text;
}

/* One parse + per-layer table + totals + batch fit + run plan. */
static int run_once(const char *text, struct memest_layer_estimate *rows,
                    size_t cap)
{
    memest_model *m = NULL;
    struct memest_totals t;
    struct memest_hw_config c;
    struct memest_run_plan p;
    size_t n;
    int st = memest_model_parse(text, &m, NULL);
    if (st != MEMEST_OK) {
        return st;
    }
    st = memest_estimate_layers(m, 32, MEMEST_FP16, rows, cap, &n);
    if (st == MEMEST_OK) {
        st = memest_estimate_totals(m, 32, MEMEST_FP16, &t);
    }
    memest_hw_config_init(&c);
    c.enabled = 1;
    c.max_memory_mb = 256.0;
    if (st == MEMEST_OK) {
        st = memest_prepare_run(m, 64, &c, &p);
    }
    memest_model_destroy(m);
    return st;
}

static double median_s(int layers, int reps)
{
    char *text = make_model(layers);
    struct memest_layer_estimate *rows =
        malloc(sizeof *rows * ((size_t)layers + 1));
    double *times = malloc(sizeof *times * (size_t)reps);
    double med;
    if (text == NULL || rows == NULL || times == NULL) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    for (int r = 0; r < reps; r++) {
        double t0 = now_s();
        int st = run_once(text, rows, (size_t)layers + 1);
        times[r] = now_s() - t0;
        if (st != MEMEST_OK) {
            fprintf(stderr, "failed: %s\n", memest_strerror(st));
            exit(1);
        }
    }
    qsort(times, (size_t)reps, sizeof *times, cmp_double);
    med = times[reps / 2];
    free(text);
    free(rows);
    free(times);
    return med;
}

int main(void)
{
    double t1k = median_s(1000, 201);
    double t10k = median_s(10000, 41);
    printf("parse+estimate+plan, 1000 layers: median %.1f us (201 runs)\n",
           t1k * 1e6);
    printf("parse+estimate+plan, 10000 layers: median %.1f us (41 runs)\n",
           t10k * 1e6);
    printf("ratio 10000/1000 layers: %.2f (linear is 10)\n", t10k / t1k);
    return 0;
}
