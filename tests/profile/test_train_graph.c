/* The trainer on residual and batch-normalised networks: a ResNet-8-style
 * model (conv-bn-relu, residual adds with projection shortcuts, global
 * average pooling, a dense softmax) and a DS-CNN-style one (depthwise
 * separable conv-bn-relu blocks, global average pooling, a dense
 * softmax), the text models of tests/data, on 640 images of the real
 * Fashion-MNIST (1x28x28, 10 classes): over three epochs of Adam the
 * training loss falls by a third and the accuracy on 500 test images
 * (evaluated on the batch norms' running statistics) is at least 0.4,
 * four times chance; the DS-CNN (a chain) in fp16 mixed precision too.
 * Measured: losses 1.51 -> 0.52 and 2.09 -> 1.12 (fp16 2.09 -> 1.12), test
 * accuracies 0.73 and 0.58 (fp16 0.61). Skipped (exit 77) when the dataset
 * is absent. Under EDGEFIT_EMULATED=1 (valgrind, qemu: 20-50 times slower)
 * the same three models and checks on fewer images (TRAIN_EMULATED,
 * TEST_EMULATED) in batches of 8, so that the optimiser still takes about
 * as many steps (24 an epoch, 20 in batches of 32 on 640 images).
 * TAP output. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "edgefit/memest.h"
#include "edgefit/profile.h"

static int fails, n_test;

static void check(int ok, const char *what, double got, double want)
{
    printf("%s %d - %s (%.4f, bound %.4f)\n", ok ? "ok" : "not ok",
           ++n_test, what, got, want);
    fails += !ok;
}

static void train(const char *file, const char *name,
                  enum memest_precision prec, uint64_t batch, const struct prof_dataset *tr,
                  const struct prof_dataset *te)
{
    const char *root = getenv("EDGEFIT_SOURCE_ROOT");
    char path[4096];
    snprintf(path, sizeof path, "%s/tests/data/%s", root ? root : ".", file);
    memest_model *m = NULL;
    struct memest_diag md;
    if (memest_model_load(path, &m, &md) != MEMEST_OK) {
        printf("Bail out! %s: %s\n", path, md.message);
        exit(1);
    }
    struct prof_train_opts o;
    prof_train_opts_init(&o);
    o.optimizer = MEMEST_OPT_ADAM;
    o.alpha = 0.005;
    o.precision = prec;
    o.batch = batch;
    prof_train *t = NULL;
    struct prof_diag d;
    if (prof_train_create(m, &o, &t, &d) != PROF_OK) {
        printf("Bail out! %s: %s\n", name, d.message);
        exit(1);
    }
    double first = NAN, last = NAN;
    for (int e = 0; e < 3; e++) {
        struct prof_train_epoch_result r;
        if (prof_train_epoch(t, tr->x, tr->y, tr->count, NULL, NULL, &r) !=
            PROF_OK) {
            printf("Bail out! %s: epoch %d failed\n", name, e + 1);
            exit(1);
        }
        printf("# %s epoch %d: loss %.4f, training accuracy %.4f\n", name,
               e + 1, r.loss, r.train_accuracy);
        first = e == 0 ? r.loss : first;
        last = r.loss;
    }
    double acc = 0.0, loss = 0.0;
    if (prof_train_evaluate(t, te->x, te->y, te->count, &acc, &loss) !=
        PROF_OK) {
        printf("Bail out! %s: evaluation failed\n", name);
        exit(1);
    }
    char what[128];
    snprintf(what, sizeof what, "%s: the loss falls by a third", name);
    check(last <= first * 2.0 / 3.0, what, last, first * 2.0 / 3.0);
    snprintf(what, sizeof what, "%s: test accuracy >= 0.4 (chance 0.1)",
             name);
    check(acc >= 0.4, what, acc, 0.4);
    prof_train_destroy(t);
    memest_model_destroy(m);
}

enum { TRAIN_EMULATED = 192, TEST_EMULATED = 200, BATCH_EMULATED = 8 };

int main(void)
{
    const char *em = getenv("EDGEFIT_EMULATED");
    int emulated = em && em[0] == '1';
    struct prof_dataset tr, te;
    struct prof_diag d;
    if (prof_dataset_load(NULL, "train", emulated ? TRAIN_EMULATED : 640, &tr,
                          &d) != PROF_OK ||
        prof_dataset_load(NULL, "t10k", emulated ? TEST_EMULATED : 500, &te,
                          &d) != PROF_OK) {
        printf("1..0 # SKIP no Fashion-MNIST: %s\n", d.message);
        return 77;
    }
    uint64_t batch = emulated ? BATCH_EMULATED : 32;
    printf("1..6\n");
    if (emulated)
        printf("# EDGEFIT_EMULATED=1: %d training and %d test images, batches of %d\n",
               TRAIN_EMULATED, TEST_EMULATED, BATCH_EMULATED);
    train("resnet8-fashion.txt", "resnet8-fashion", MEMEST_FP32, batch, &tr, &te);
    train("ds-cnn-fashion.txt", "ds-cnn-fashion", MEMEST_FP32, batch, &tr, &te);
    /* a chain: mixed precision trains it too */
    train("ds-cnn-fashion.txt", "ds-cnn-fashion fp16", MEMEST_FP16, batch, &tr,
          &te);
    prof_dataset_finish(&tr);
    prof_dataset_finish(&te);
    return fails ? 1 : 0;
}
