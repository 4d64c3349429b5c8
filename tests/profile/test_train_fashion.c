/* The trainer on the real Fashion-MNIST with the original's defaults
 * (mlp:784-64-10, 5 epochs, alpha 0.1, batch 32, seed 42, plain SGD): the
 * test accuracy the original numpy MLP reaches (>= 0.85), fp16 and bf16
 * mixed precision within half a point of fp32, and the trained weights
 * quantised through the executor's int8 path within one point. Skipped
 * (exit 77) when the dataset is not installed. Slow suite: about 15
 * epochs of 60000 images. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "edgefit/memest.h"
#include "edgefit/profile.h"

static int fails;

static void check(int ok, const char *what, double got, double want)
{
    printf("%s %s: %.4f (want %.4f)\n", ok ? "ok" : "not ok", what, got,
           want);
    fails += !ok;
}

static double train(const memest_model *m, enum memest_precision p,
                    const struct prof_dataset *tr,
                    const struct prof_dataset *te, prof_train **keep)
{
    struct prof_train_opts o;
    prof_train_opts_init(&o);
    o.precision = p;
    prof_train *t = NULL;
    struct prof_diag d;
    if (prof_train_create(m, &o, &t, &d) != PROF_OK) {
        fprintf(stderr, "create: %s\n", d.message);
        exit(1);
    }
    for (int e = 0; e < 5; e++) {
        struct prof_train_epoch_result r;
        if (prof_train_epoch(t, tr->x, tr->y, tr->count, NULL, NULL, &r) !=
            PROF_OK) {
            fprintf(stderr, "epoch %d failed\n", e + 1);
            exit(1);
        }
        printf("# %s epoch %d loss %.4f train accuracy %.4f %.2f s\n",
               memest_precision_name(p), e + 1, r.loss, r.train_accuracy,
               r.seconds);
    }
    double acc = 0;
    if (prof_train_evaluate(t, te->x, te->y, te->count, &acc, NULL) !=
        PROF_OK) {
        exit(1);
    }
    if (keep) {
        *keep = t;
    } else {
        prof_train_destroy(t);
    }
    return acc;
}

/* The trained weights through the executor at int8, on the test set. */
static double int8_accuracy(const memest_model *m, const prof_train *t,
                            const struct prof_dataset *te)
{
    struct prof_exec_opts eo;
    prof_exec_opts_init(&eo);
    eo.batch = 100;
    eo.precision = MEMEST_INT8_DYNAMIC;
    prof_exec *ex = NULL;
    if (prof_exec_create(m, &eo, &ex, NULL) != PROF_OK) {
        exit(1);
    }
    for (size_t i = 0; i < memest_model_layer_count(m); i++) {
        const struct memest_layer *L = memest_model_layer(m, i);
        const size_t wn = (size_t)L->weight_count, bn = (size_t)L->bias_count;
        if (!wn) {
            continue;
        }
        float *w = malloc((wn + bn) * sizeof *w);
        if (!w || prof_train_get_params(t, i, w, wn, w + wn, bn) != PROF_OK ||
            prof_exec_set_params(ex, i, w, wn, w + wn, bn) != PROF_OK) {
            exit(1);
        }
        free(w);
    }
    const size_t in = prof_exec_input_count(ex), out = prof_exec_output_count(ex);
    float *y = malloc(out * sizeof *y);
    size_t correct = 0;
    for (uint64_t first = 0; first + 100 <= te->count; first += 100) {
        if (prof_exec_run(ex, te->x + first * 784, in, y, out) != PROF_OK) {
            exit(1);
        }
        for (size_t r = 0; r < 100; r++) {
            size_t best = 0;
            for (size_t c = 1; c < 10; c++) {
                best = y[r * 10 + c] > y[r * 10 + best] ? c : best;
            }
            correct += best == te->y[first + r];
        }
    }
    free(y);
    prof_exec_destroy(ex);
    return (double)correct / (double)te->count;
}

int main(void)
{
    struct prof_dataset tr, te;
    struct prof_diag d;
    if (prof_dataset_load(NULL, "train", 0, &tr, &d) != PROF_OK ||
        prof_dataset_load(NULL, "t10k", 0, &te, &d) != PROF_OK) {
        printf("1..0 # SKIP no Fashion-MNIST: %s\n", d.message);
        return 77;
    }
    memest_model *m = NULL;
    if (memest_model_preset("mlp:784-64-10", &m, NULL) != MEMEST_OK) {
        return 1;
    }
    printf("1..4\n");
    prof_train *t32 = NULL;
    const double a32 = train(m, MEMEST_FP32, &tr, &te, &t32);
    check(a32 >= 0.85, "fp32 test accuracy >= 0.85", a32, 0.85);
    const double a16 = train(m, MEMEST_FP16, &tr, &te, NULL);
    check(fabs(a16 - a32) <= 0.005, "fp16 within 0.5 points of fp32", a16,
          a32);
    const double abf = train(m, MEMEST_BF16, &tr, &te, NULL);
    check(fabs(abf - a32) <= 0.005, "bf16 within 0.5 points of fp32", abf,
          a32);
    const double a8 = int8_accuracy(m, t32, &te);
    check(fabs(a8 - a32) <= 0.01, "int8 (quantised fp32 weights) within 1 "
          "point", a8, a32);
    prof_train_destroy(t32);
    memest_model_destroy(m);
    prof_dataset_finish(&tr);
    prof_dataset_finish(&te);
    return fails ? 1 : 0;
}
