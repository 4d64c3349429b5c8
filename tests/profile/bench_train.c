/* Seconds per training epoch of the trainer, the figure the performance
 * targets are stated in: mlp:784-64-10, batch 32, alpha 0.1, seed 42, on
 * the real Fashion-MNIST training set (60000 images; skipped, exit 77,
 * when the dataset is not installed), fp32 at 1 and 2 threads, fp16 and
 * bf16 at 1. Each configuration trains `epochs` epochs (2 by default)
 * after one untimed epoch, and the median is reported with the test
 * accuracy; the configurations run interleaved, round after round, so a
 * machine whose speed drifts slows them alike. The useful work of a step
 * is 2 x 32 x (2 x 784 x 64 + 3 x 64 x 10) FLOP (the first layer's
 * forward and weight gradient, the second's forward, weight and input
 * gradients), 12.3 GFLOP per epoch; GFLOP/s is quoted against it. The
 * comparison with numpy and PyTorch is scripts/bench-train.sh.
 *
 * usage: bench-profile-train [MODEL [EPOCHS [ROUNDS]]] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "edgefit/memest.h"
#include "edgefit/profile.h"

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

struct config {
    enum memest_precision precision;
    unsigned threads;
    double *seconds;
    size_t n;
    double accuracy;
};

int main(int argc, char **argv)
{
    const char *name = argc > 1 ? argv[1] : "mlp:784-64-10";
    const int epochs = argc > 2 ? atoi(argv[2]) : 2;
    const int rounds = argc > 3 ? atoi(argv[3]) : 2;
    if (epochs < 1 || rounds < 1) {
        fprintf(stderr, "usage: %s [MODEL [EPOCHS [ROUNDS]]]\n", argv[0]);
        return 2;
    }
    memest_model *m = NULL;
    struct memest_diag md;
    if (memest_model_load(name, &m, &md) != MEMEST_OK) {
        fprintf(stderr, "%s: %s\n", name, md.message);
        return 2;
    }
    struct prof_dataset train, test;
    struct prof_diag d;
    int real = prof_dataset_load(NULL, "train", 0, &train, &d) == PROF_OK &&
               prof_dataset_load(NULL, "t10k", 0, &test, &d) == PROF_OK;
    if (!real) {
        fprintf(stderr, "bench-train: no Fashion-MNIST (%s)\n", d.message);
        return 77;
    }
    struct config cfg[] = {
        {MEMEST_FP32, 1, NULL, 0, 0}, {MEMEST_FP32, 2, NULL, 0, 0},
        {MEMEST_FP16, 1, NULL, 0, 0}, {MEMEST_BF16, 1, NULL, 0, 0},
    };
    const size_t nc = sizeof cfg / sizeof cfg[0];
    for (size_t c = 0; c < nc; c++) {
        cfg[c].seconds = calloc((size_t)(epochs * rounds), sizeof(double));
        if (!cfg[c].seconds) {
            return 1;
        }
    }
    for (int r = 0; r < rounds; r++) {
        for (size_t c = 0; c < nc; c++) {
            struct prof_train_opts o;
            prof_train_opts_init(&o);
            o.precision = cfg[c].precision;
            o.threads = cfg[c].threads;
            prof_train *t = NULL;
            if (prof_train_create(m, &o, &t, &d) != PROF_OK) {
                fprintf(stderr, "bench-train: %s\n", d.message);
                return 1;
            }
            struct prof_train_epoch_result res;
            for (int e = 0; e <= epochs; e++) {
                if (prof_train_epoch(t, train.x, train.y, train.count, NULL,
                                     NULL, &res) != PROF_OK) {
                    fprintf(stderr, "bench-train: epoch failed\n");
                    return 1;
                }
                if (e > 0) { /* the first epoch warms the caches up */
                    cfg[c].seconds[cfg[c].n++] = res.seconds;
                }
            }
            prof_train_evaluate(t, test.x, test.y, test.count,
                                &cfg[c].accuracy, NULL);
            prof_train_destroy(t);
        }
    }
    const double gflop = 2.0 * (double)(train.count / 32) * 32.0 *
                         (2.0 * 784 * 64 + 3.0 * 64 * 10) / 1e9;
    printf("model %s, batch 32, %llu samples, %d timed epochs x %d rounds "
           "(after one untimed epoch each)\n",
           name, (unsigned long long)train.count, epochs, rounds);
    printf("%-9s %7s %13s %13s %13s\n", "precision", "threads",
           "epoch_s_median", "ratio_to_fp32_1", "test_accuracy");
    double base = 0;
    for (size_t c = 0; c < nc; c++) {
        qsort(cfg[c].seconds, cfg[c].n, sizeof(double), cmp_double);
        const double med = cfg[c].n % 2
                               ? cfg[c].seconds[cfg[c].n / 2]
                               : 0.5 * (cfg[c].seconds[cfg[c].n / 2 - 1] +
                                        cfg[c].seconds[cfg[c].n / 2]);
        if (c == 0) {
            base = med;
        }
        printf("%-9s %7u %13.4f %13.3f %13.4f\n",
               memest_precision_name(cfg[c].precision), cfg[c].threads, med,
               med / base, cfg[c].accuracy);
        if (c == 0 && strcmp(name, "mlp:784-64-10") == 0) {
            printf("  (fp32, 1 thread: %.1f GFLOP/s of useful work)\n",
                   gflop / med);
        }
        free(cfg[c].seconds);
    }
    prof_dataset_finish(&train);
    prof_dataset_finish(&test);
    memest_model_destroy(m);
    return 0;
}
