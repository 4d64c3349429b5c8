/*
 * The real Fashion-MNIST of Debian's dataset-fashion-mnist package, read
 * through prof_dataset_load(): 60000 training and 10000 test images of
 * 28 x 28 pixels in 10 balanced classes (6000 and 1000 per class), the
 * first labels (9 0 0 3 0 and 9 2 1 1 6), the pixel sum of the first image
 * and the mean and standard deviation of the scaled pixels, as numpy
 * computes them from the same files. Skipped when the package is absent.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "edgefit/profile.h"

struct split_facts {
    const char *split;
    uint64_t count, per_class;
    unsigned char first[5];
    long first_image_sum; /* of the bytes of image 0 */
    double mean, std;     /* of bytes / 255 over the split */
};

static const struct split_facts facts[] = {
    {"train", 60000, 6000, {9, 0, 0, 3, 0}, 76247, 0.2860405969887955,
     0.35302424451492237},
    {"t10k", 10000, 1000, {9, 2, 1, 1, 6}, 33456, 0.28684928071228494,
     0.35244415324744005},
};

static void check_split(const struct split_facts *f)
{
    struct prof_dataset d;
    struct prof_diag diag;
    const int st = prof_dataset_load(NULL, f->split, 0, &d, &diag);
    if (st != PROF_OK) {
        fail_msg("%s: %s", f->split, diag.message);
    }
    assert_int_equal(d.count, f->count);
    assert_int_equal(d.rows, 28);
    assert_int_equal(d.cols, 28);
    assert_int_equal(d.classes, 10);
    uint64_t per[10] = {0};
    for (uint64_t i = 0; i < d.count; i++) {
        assert_true(d.y[i] < 10);
        per[d.y[i]]++;
    }
    for (int c = 0; c < 10; c++) {
        assert_int_equal(per[c], f->per_class);
    }
    assert_memory_equal(d.y, f->first, 5);
    double first = 0.0;
    for (int i = 0; i < 784; i++) {
        first += d.x[i] * 255.0;
    }
    assert_true(fabs(first - (double)f->first_image_sum) < 1e-2);
    const uint64_t n = d.count * 784;
    double sum = 0.0, sq = 0.0;
    for (uint64_t i = 0; i < n; i++) {
        assert_true(d.x[i] >= 0.0f && d.x[i] <= 1.0f);
        sum += d.x[i];
    }
    const double mean = sum / (double)n;
    for (uint64_t i = 0; i < n; i++) {
        sq += (d.x[i] - mean) * (d.x[i] - mean);
    }
    assert_true(fabs(mean - f->mean) < 1e-6);
    assert_true(fabs(sqrt(sq / (double)n) - f->std) < 1e-6);
    prof_dataset_finish(&d);

    /* a prefix holds the same first samples */
    assert_int_equal(prof_dataset_load(NULL, f->split, 100, &d, &diag),
                     PROF_OK);
    assert_int_equal(d.count, 100);
    assert_memory_equal(d.y, f->first, 5);
    prof_dataset_finish(&d);
}

static void test_train(void **state)
{
    (void)state;
    check_split(&facts[0]);
}

static void test_t10k(void **state)
{
    (void)state;
    check_split(&facts[1]);
}

int main(void)
{
    if (access(prof_dataset_default_dir(), F_OK) != 0) {
        fprintf(stderr, "skipped: %s is absent (package "
                "dataset-fashion-mnist)\n",
                prof_dataset_default_dir());
        return 77;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_train),
        cmocka_unit_test(test_t10k),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
