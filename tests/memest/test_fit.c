/*
 * Batch fitting against a brute-force search over every batch size, for
 * many random models and budgets (fixed seed, printed on failure); the
 * halving variant and estimate_batch_memory_mb; run plans with the three
 * warnings; the slowdown arithmetic.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "edgefit/memest.h"

#define MB 1048576.0
#define SEED UINT64_C(0x5eed2026)

static uint64_t rng_state;

static uint64_t next_u64(void)
{
    /* splitmix64 */
    uint64_t z = (rng_state += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

static uint64_t uniform(uint64_t lo, uint64_t hi)
{
    return lo + next_u64() % (hi - lo + 1);
}

static double unit(void)
{
    return (double)(next_u64() >> 11) / 9007199254740992.0;
}

/* A random model as text, with its parameter and per-sample activation
 * counts worked out here from the counting rules. */
struct ref_model {
    char text[1024];
    uint64_t params;
    uint64_t act; /* input + every layer output, per sample */
};

static void random_mlp(struct ref_model *r)
{
    int n = (int)uniform(2, 6);
    uint64_t prev = uniform(1, 4000);
    size_t len = (size_t)snprintf(r->text, sizeof r->text, "input %" PRIu64
                                  "\n", prev);
    r->params = 0;
    r->act = prev;
    for (int i = 1; i < n; i++) {
        uint64_t w = uniform(1, 4000);
        int bias = (int)uniform(0, 1);
        len += (size_t)snprintf(r->text + len, sizeof r->text - len,
                                "dense %" PRIu64 " bias=%s\n", w,
                                bias ? "yes" : "no");
        r->params += prev * w + (bias ? w : 0);
        r->act += w;
        prev = w;
    }
}

static void random_cnn(struct ref_model *r)
{
    uint64_t c = uniform(1, 4);
    uint64_t h = uniform(8, 40);
    uint64_t w = uniform(8, 40);
    uint64_t g = uniform(1, 2);
    uint64_t oc = g * uniform(1, 8);
    uint64_t k = uniform(1, 5);
    uint64_t s = uniform(1, 3);
    uint64_t p = uniform(0, 2);
    uint64_t oh;
    uint64_t ow;
    uint64_t ph;
    uint64_t pw;
    uint64_t units = uniform(1, 50);
    size_t len;

    c *= g; /* divisible by groups */
    oh = (h + 2 * p - k) / s + 1;
    ow = (w + 2 * p - k) / s + 1;
    ph = oh / 2 ? oh / 2 : 1;
    pw = ow / 2 ? ow / 2 : 1;
    len = (size_t)snprintf(
        r->text, sizeof r->text,
        "input %" PRIu64 "x%" PRIu64 "x%" PRIu64 "\n"
        "conv2d %" PRIu64 " k=%" PRIu64 " s=%" PRIu64 " p=%" PRIu64
        " g=%" PRIu64 " act=relu\n",
        c, h, w, oc, k, s, p, g);
    r->params = oc * (c / g) * k * k + oc;
    r->act = c * h * w + oc * oh * ow;
    if (oh >= 2 && ow >= 2) {
        len += (size_t)snprintf(r->text + len, sizeof r->text - len,
                                "maxpool k=2\n");
        r->act += oc * ph * pw;
    } else {
        ph = oh;
        pw = ow;
    }
    snprintf(r->text + len, sizeof r->text - len,
             "flatten\ndense %" PRIu64 "\n", units);
    r->act += oc * ph * pw + units;
    r->params += oc * ph * pw * units + units;
}

/* The original estimate_total_memory_mb for this model. */
static double ref_mb(const struct ref_model *r, uint64_t batch,
                     unsigned bytes)
{
    return (double)(r->params * bytes) / MB +
           (double)(batch * r->act * bytes) / MB;
}

/* Peak inference memory of batches 0..MAX_BATCH (0 unused), from the
 * totals (whose arena test_counts and test_arena check by hand); the
 * search is what is tested here, against a scan of every batch. */
#define MAX_BATCH 300
static double peak_mb[MAX_BATCH + 1];

static void fill_peaks(const memest_model *m, enum memest_precision prec,
                       const struct ref_model *r)
{
    struct memest_totals t;
    for (uint64_t b = 1; b <= MAX_BATCH; b++) {
        assert_int_equal(memest_estimate_totals(m, b, prec, &t), MEMEST_OK);
        assert_int_equal(t.parameter_count, r->params);
        peak_mb[b] = t.peak_inference_mb;
        /* every buffer scales with the batch: the peak never falls, and
         * stays within the original's sum of all activations */
        if (b > 1 && peak_mb[b] < peak_mb[b - 1]) {
            fail_msg("peak falls from batch %" PRIu64 ":\n%s", b - 1,
                     r->text);
        }
        /* the parameters as stored (int8 adds its scales, zero points
         * and int32 biases to the count's bytes) */
        assert_true(peak_mb[b] <=
                    ref_mb(r, b, memest_precision_bytes(prec)) -
                        (double)(r->params * memest_precision_bytes(prec)) /
                            MB +
                        t.parameter_mb);
    }
}

static uint64_t brute_force(uint64_t requested, uint64_t limit,
                            double budget)
{
    uint64_t capped = requested < limit ? requested : limit;
    uint64_t best = 0;
    if (capped < 1) {
        capped = 1;
    }
    for (uint64_t b = 1; b <= capped; b++) {
        if (peak_mb[b] <= budget) {
            best = b;
        }
    }
    return best;
}

static void test_fit_matches_brute_force(void **state)
{
    int checked = 0;
    (void)state;

    rng_state = SEED;
    for (int iter = 0; iter < 400; iter++) {
        struct ref_model r;
        memest_model *m = NULL;
        struct memest_diag d;
        enum memest_precision prec =
            (enum memest_precision)uniform(0, MEMEST_PRECISION_COUNT - 1);
        unsigned bytes = memest_precision_bytes(prec);
        uint64_t requested = uniform(0, 300);
        uint64_t limit = uniform(0, 200);
        uint64_t top = requested > limit ? requested : limit;
        double budgets[7];

        if (iter % 2) {
            random_cnn(&r);
        } else {
            random_mlp(&r);
        }
        if (memest_model_parse(r.text, &m, &d) != MEMEST_OK) {
            fail_msg("seed 0x%" PRIx64 " iter %d: cannot parse:\n%s\n%s",
                     SEED, iter, r.text, d.message);
        }
        if (memest_model_parameter_count(m) != r.params) {
            fail_msg("seed 0x%" PRIx64 " iter %d: params %" PRIu64
                     " want %" PRIu64 "\n%s",
                     SEED, iter, memest_model_parameter_count(m), r.params,
                     r.text);
        }
        fill_peaks(m, prec, &r);
        (void)bytes;
        budgets[0] = 0.0;
        budgets[1] = 1e12;
        budgets[2] = unit() * 1.2 * peak_mb[top ? top : 1];
        budgets[3] = unit() * peak_mb[1];
        /* exactly on a batch's figure: that batch must fit */
        budgets[4] = peak_mb[uniform(1, MAX_BATCH)];
        budgets[5] = nextafter(budgets[4], 0.0);
        budgets[6] = peak_mb[1];
        for (int j = 0; j < 7; j++) {
            uint64_t got = UINT64_MAX;
            uint64_t want = brute_force(requested, limit, budgets[j]);
            int st = memest_fit_batch(m, requested, budgets[j], prec, limit,
                                      &got);
            if (st != MEMEST_OK || got != want) {
                fail_msg("seed 0x%" PRIx64 " iter %d budget %d (%.17g MB) "
                         "requested %" PRIu64 " limit %" PRIu64 " %s: got "
                         "%" PRIu64 " (status %d), brute force %" PRIu64
                         "\n%s",
                         SEED, iter, j, budgets[j], requested, limit,
                         memest_precision_name(prec), got, st, want, r.text);
            }
            checked++;
        }
        memest_model_destroy(m);
    }
    assert_int_equal(checked, 400 * 7);
}

static void test_fit_edges(void **state)
{
    memest_model *m = NULL;
    uint64_t b = 99;
    double mb;
    (void)state;

    assert_int_equal(memest_model_preset("mlp:784-64-10", &m, NULL),
                     MEMEST_OK);
    /* fits as requested */
    assert_int_equal(memest_fit_batch(m, 32, 1.0, MEMEST_FP16, 64, &b),
                     MEMEST_OK);
    assert_int_equal(b, 32);
    /* capped by the limit */
    assert_int_equal(memest_fit_batch(m, 1000, 1e9, MEMEST_FP32, 128, &b),
                     MEMEST_OK);
    assert_int_equal(b, 128);
    /* Peak inference memory: 203560 bytes of fp32 parameters + an arena
     * of (784 + 64) * 4 = 3392 bytes a sample (the input and the hidden
     * layer, alive together; the output reuses the input's place).
     * 0.25 MB in fp32: (262144 - 203560) / 3392 = 17.27 */
    assert_int_equal(memest_fit_batch(m, 32, 0.25, MEMEST_FP32, 128, &b),
                     MEMEST_OK);
    assert_int_equal(b, 17);
    /* even batch 1 is too big: 0.1 MB < 203560 + 3392 bytes */
    assert_int_equal(memest_fit_batch(m, 32, 0.1, MEMEST_FP32, 128, &b),
                     MEMEST_OK);
    assert_int_equal(b, 0);
    /* the original caps a zero request and a zero limit to 1 */
    assert_int_equal(memest_fit_batch(m, 0, 1.0, MEMEST_FP32, 128, &b),
                     MEMEST_OK);
    assert_int_equal(b, 1);
    assert_int_equal(memest_fit_batch(m, 50, 1.0, MEMEST_FP32, 0, &b),
                     MEMEST_OK);
    assert_int_equal(b, 1);
    /* a huge request and limit: binary search near 2^64 without overflow:
     * the largest b with 203560 + 3392 b <= budget bytes (a batch whose
     * bytes overflow 64 bits does not fit) */
    assert_int_equal(memest_fit_batch(m, UINT64_MAX, 1e6, MEMEST_FP32,
                                      UINT64_MAX, &b),
                     MEMEST_OK);
    assert_int_equal(b, (UINT64_C(1000000) * 1048576 - 203560) / 3392);
    assert_int_equal(memest_measure_mb(m, b, MEMEST_FP32,
                                       MEMEST_MEASURE_PEAK_INFERENCE,
                                       MEMEST_OPT_SGD, &mb),
                     MEMEST_OK);
    assert_true(mb <= 1e6);
    assert_int_equal(memest_measure_mb(m, b + 1, MEMEST_FP32,
                                       MEMEST_MEASURE_PEAK_INFERENCE,
                                       MEMEST_OPT_SGD, &mb),
                     MEMEST_OK);
    assert_true(mb > 1e6);
    /* the original's sum of activations would have allowed fewer: it
     * never decides a fit (0.25 MB: (262144 - 203560) / 3432 = 17.07 is
     * 17 too, 1e6 MB gives a smaller batch) */
    assert_true((UINT64_C(1000000) * 1048576 - 203560) / 3432 < b);
    /* bad budgets */
    assert_int_equal(memest_fit_batch(m, 32, NAN, MEMEST_FP32, 128, &b),
                     MEMEST_E_RANGE);
    assert_int_equal(memest_fit_batch(m, 32, INFINITY, MEMEST_FP32, 128, &b),
                     MEMEST_E_RANGE);
    assert_int_equal(memest_fit_batch(m, 32, -1.0, MEMEST_FP32, 128, &b),
                     MEMEST_E_RANGE);
    assert_int_equal(memest_fit_batch(m, 32, 1.0, (enum memest_precision)8,
                                      128, &b),
                     MEMEST_E_INVALID);
    assert_int_equal(memest_fit_batch(NULL, 32, 1.0, MEMEST_FP32, 128, &b),
                     MEMEST_E_INVALID);
    memest_model_destroy(m);
}

/* ---- The halving variant ---------------------------------------------- */

static uint64_t ref_halving(uint64_t features, uint64_t batch, double budget,
                            uint64_t bpf)
{
    while (batch > 1 &&
           (double)(features * batch * bpf) / MB > budget) {
        batch /= 2;
    }
    return batch;
}

static void test_halving(void **state)
{
    double mb = 0;
    uint64_t b = 0;
    (void)state;

    /* 784 * 32 * 8 = 200704 bytes */
    assert_int_equal(memest_estimate_batch_memory_mb(784, 32, 8, &mb),
                     MEMEST_OK);
    assert_true(mb == 0.19140625);
    assert_int_equal(memest_estimate_batch_memory_mb(784, 32, 4, &mb),
                     MEMEST_OK);
    assert_true(mb == 0.095703125);
    /* beyond 64 bits: (2^64 - 1) * 2^40 * 8 bytes, rounded once */
    assert_int_equal(memest_estimate_batch_memory_mb(
                         UINT64_MAX, UINT64_C(1) << 40, 8, &mb),
                     MEMEST_OK);
    assert_true(mb == 0x1p87);
    assert_int_equal(memest_estimate_batch_memory_mb(UINT64_MAX, UINT64_MAX,
                                                     UINT64_MAX, &mb),
                     MEMEST_E_OVERFLOW);

    /* 784 features, 8 bytes: 0.0059814 MB per sample; 0.36 MB holds 60,
     * but halving from 100 stops at 50 */
    assert_int_equal(memest_auto_adjust_batch_size(784, 100, 0.36, 8, &b),
                     MEMEST_OK);
    assert_int_equal(b, 50);
    /* fits at once */
    assert_int_equal(memest_auto_adjust_batch_size(784, 60, 0.36, 8, &b),
                     MEMEST_OK);
    assert_int_equal(b, 60);
    /* nothing fits: stops at 1 */
    assert_int_equal(memest_auto_adjust_batch_size(784, 100, 0.0, 8, &b),
                     MEMEST_OK);
    assert_int_equal(b, 1);
    /* 127 -> 63 -> 31: 31 * 784 * 8 = 194432 bytes <= 0.19 MB */
    assert_int_equal(memest_auto_adjust_batch_size(784, 127, 0.19, 8, &b),
                     MEMEST_OK);
    assert_int_equal(b, 31);
    assert_int_equal(memest_auto_adjust_batch_size(784, 0, 1.0, 8, &b),
                     MEMEST_E_RANGE);
    assert_int_equal(memest_auto_adjust_batch_size(784, 8, NAN, 8, &b),
                     MEMEST_E_RANGE);
    assert_int_equal(memest_auto_adjust_batch_size(784, 8, -2.0, 8, &b),
                     MEMEST_E_RANGE);

    rng_state = SEED ^ 1;
    for (int i = 0; i < 2000; i++) {
        uint64_t features = uniform(1, 100000);
        uint64_t batch = uniform(1, 5000);
        uint64_t bpf = uniform(1, 8);
        double budget = unit() * (double)(features * batch * bpf) / MB;
        uint64_t want = ref_halving(features, batch, budget, bpf);
        if (memest_auto_adjust_batch_size(features, batch, budget, bpf,
                                          &b) != MEMEST_OK ||
            b != want) {
            fail_msg("seed 0x%" PRIx64 " case %d: features %" PRIu64
                     " batch %" PRIu64 " got %" PRIu64 " want %" PRIu64,
                     SEED ^ 1, i, features, batch, b, want);
        }
    }
}

/* ---- Run plans ---------------------------------------------------------- */

static void test_plan_fits(void **state)
{
    memest_model *m = NULL;
    struct memest_hw_config c;
    struct memest_run_plan p;
    (void)state;

    memest_hw_config_init(&c);
    assert_int_equal(c.enabled, 0);
    assert_true(c.max_memory_mb == 512.0);
    assert_true(c.compute_speed_factor == 1.0);
    assert_int_equal(c.precision, MEMEST_FP32);
    assert_int_equal(c.batch_size_limit, 128);

    /* the original's example: fp16, 1 MB, limit 64, batch 32 */
    assert_int_equal(memest_model_preset("mlp:784-64-10", &m, NULL),
                     MEMEST_OK);
    c.enabled = 1;
    c.max_memory_mb = 1.0;
    c.compute_speed_factor = 2.0;
    c.precision = MEMEST_FP16;
    c.batch_size_limit = 64;
    assert_int_equal(memest_prepare_run(m, 32, &c, &p), MEMEST_OK);
    assert_int_equal(p.enabled, 1);
    assert_int_equal(p.batch_size, 32);
    assert_int_equal(p.precision, MEMEST_FP16);
    assert_string_equal(memest_precision_mode_name(p.precision), "float16");
    /* peak inference: (101780 + 32 * 848 * 2) / 2^20 = 0.148822784...;
     * the original's sum of activations gave (101780 + 54912) / 2^20 */
    assert_true(p.estimated_memory_mb == 0.148823);
    assert_int_equal(p.measure, MEMEST_MEASURE_PEAK_INFERENCE);
    assert_int_equal(p.fits, 1);
    assert_int_equal(p.warning_count, 0);

    /* 0.25 MB in fp32: reduced to 17, (203560 + 17*3392) / 2^20 */
    c.max_memory_mb = 0.25;
    c.precision = MEMEST_FP32;
    c.batch_size_limit = 128;
    assert_int_equal(memest_prepare_run(m, 32, &c, &p), MEMEST_OK);
    assert_int_equal(p.batch_size, 17);
    assert_true(p.estimated_memory_mb == 0.249123);
    assert_int_equal(p.fits, 1);
    assert_int_equal(p.warning_count, 1);
    assert_string_equal(p.warnings[0], "Batch size reduced from 32 to 17 "
                                       "due to memory constraints.");

    /* capped by the limit alone: the original still says so */
    c.max_memory_mb = 512.0;
    assert_int_equal(memest_prepare_run(m, 200, &c, &p), MEMEST_OK);
    assert_int_equal(p.batch_size, 128);
    assert_int_equal(p.warning_count, 1);
    assert_string_equal(p.warnings[0], "Batch size reduced from 200 to 128 "
                                       "due to memory constraints.");

    /* disabled: batch unchanged (even above the limit), no warnings */
    c.enabled = 0;
    c.max_memory_mb = 0.0;
    assert_int_equal(memest_prepare_run(m, 500, &c, &p), MEMEST_OK);
    assert_int_equal(p.enabled, 0);
    assert_int_equal(p.batch_size, 500);
    assert_int_equal(p.warning_count, 0);
    /* (203560 + 500*3392) / 2^20 = 1.81156158... */
    assert_true(p.estimated_memory_mb == 1.811562);
    assert_int_equal(p.fits, 0);
    memest_model_destroy(m);
}

static void test_plan_three_warnings(void **state)
{
    memest_model *m = NULL;
    struct memest_hw_config c;
    struct memest_run_plan p;
    (void)state;

    /* smallcnn in fp16 at batch 1: params 9098*2 = 18196 bytes, an arena
     * of the largest pair alive together, conv1's output and pool1's
     * (6272 + 1568) * 2 = 15680 bytes: 33876 bytes */
    assert_int_equal(memest_model_preset("smallcnn", &m, NULL), MEMEST_OK);
    memest_hw_config_init(&c);
    c.enabled = 1;
    c.max_memory_mb = 0.01;
    c.precision = MEMEST_FP16;
    assert_int_equal(memest_prepare_run(m, 32, &c, &p), MEMEST_OK);
    assert_int_equal(p.enabled, 1);
    assert_int_equal(p.batch_size, 1);
    /* Batch 1 was not chosen to fit: no "reduced" warning follows the
     * first, which says the run proceeds at 1 anyway. */
    assert_int_equal(p.warning_count, 2);
    assert_string_equal(p.warnings[0],
                        "Model cannot run under current memory and "
                        "precision constraints; even batch_size=1 needs "
                        "0.0323 MB of peak inference memory, over "
                        "max_memory_mb; the run proceeds at batch 1.");
    assert_string_equal(p.warnings[1],
                        "Projected peak inference memory (0.0323 MB) "
                        "exceeds limit (0.0100 MB).");
    /* 33876 / 2^20 = 0.032306671142578125 */
    assert_true(p.estimated_memory_mb == 0.032307);
    assert_int_equal(p.fits, 0);

    /* requested 1: the same two */
    assert_int_equal(memest_prepare_run(m, 1, &c, &p), MEMEST_OK);
    assert_int_equal(p.warning_count, 2);
    assert_int_equal(strncmp(p.warnings[1], "Projected peak inference", 24),
                     0);
    memest_model_destroy(m);
}

/* The measures by name, the training measure against the trainer's
 * formula, and a search limit that memory never reaches. */
static void test_measures_and_largest(void **state)
{
    memest_model *m = NULL;
    struct memest_batch_search l;
    struct memest_training t;
    double mb = 0;
    uint64_t b = 0;
    (void)state;

    assert_string_equal(memest_measure_name(MEMEST_MEASURE_PEAK_INFERENCE),
                        "peak_inference");
    assert_string_equal(memest_measure_name(MEMEST_MEASURE_TRAINING),
                        "training");
    assert_null(memest_measure_name((enum memest_measure)7));
    assert_int_equal(memest_model_preset("mlp:784-64-10", &m, NULL),
                     MEMEST_OK);
    /* training at fp16 is mixed precision, at int8 fp32 (quantised after
     * training), as libprofile's trainer allocates */
    assert_int_equal(memest_training_memory_mixed(m, 8, MEMEST_OPT_ADAM, &t),
                     MEMEST_OK);
    assert_int_equal(memest_measure_mb(m, 8, MEMEST_FP16,
                                       MEMEST_MEASURE_TRAINING,
                                       MEMEST_OPT_ADAM, &mb),
                     MEMEST_OK);
    assert_true(mb == t.total_mb);
    assert_int_equal(memest_training_memory(m, 8, MEMEST_FP32,
                                            MEMEST_OPT_SGD, &t),
                     MEMEST_OK);
    assert_int_equal(memest_measure_mb(m, 8, MEMEST_INT8,
                                       MEMEST_MEASURE_TRAINING,
                                       MEMEST_OPT_SGD, &mb),
                     MEMEST_OK);
    assert_true(mb == t.total_mb);
    assert_int_equal(memest_measure_mb(m, 8, MEMEST_FP32,
                                       (enum memest_measure)7,
                                       MEMEST_OPT_SGD, &mb),
                     MEMEST_E_INVALID);
    assert_int_equal(memest_measure_mb(m, 0, MEMEST_FP32,
                                       MEMEST_MEASURE_TRAINING,
                                       MEMEST_OPT_SGD, &mb),
                     MEMEST_E_RANGE);
    /* a plan fitted by training memory: the largest batch whose
     * training memory fits, and one more does not */
    struct memest_hw_config c;
    struct memest_run_plan p;
    memest_hw_config_init(&c);
    c.enabled = 1;
    c.max_memory_mb = 0.6;
    c.measure = MEMEST_MEASURE_TRAINING;
    assert_int_equal(memest_prepare_run(m, 128, &c, &p), MEMEST_OK);
    assert_int_equal(p.measure, MEMEST_MEASURE_TRAINING);
    assert_int_equal(memest_training_memory(m, p.batch_size, MEMEST_FP32,
                                            MEMEST_OPT_SGD, &t),
                     MEMEST_OK);
    assert_true(t.total_mb <= 0.6);
    assert_true(p.estimated_memory_mb == memest_round6(t.total_mb));
    assert_int_equal(memest_training_memory(m, p.batch_size + 1,
                                            MEMEST_FP32, MEMEST_OPT_SGD, &t),
                     MEMEST_OK);
    assert_true(t.total_mb > 0.6);
    assert_int_equal(p.fits, 1);
    assert_non_null(strstr(p.warnings[0], "reduced from 128"));

    /* 4096 MB holds (4096 * 2^20 - 203560) / 3392 batches: a search up to
     * 1000 is capped there and says so */
    assert_int_equal(memest_largest_batch(m, 4096.0, MEMEST_FP32, 1000,
                                          MEMEST_MEASURE_PEAK_INFERENCE,
                                          MEMEST_OPT_SGD, &l),
                     MEMEST_OK);
    assert_int_equal(l.batch, 1000);
    assert_int_equal(l.capped, 1);
    assert_true(l.memory_mb == (203560.0 + 1000 * 3392) / MB);
    assert_true(l.budget_mb == 4096.0);
    /* a search that memory stops */
    assert_int_equal(memest_largest_batch(m, 4096.0, MEMEST_FP32,
                                          UINT64_C(1) << 32,
                                          MEMEST_MEASURE_PEAK_INFERENCE,
                                          MEMEST_OPT_SGD, &l),
                     MEMEST_OK);
    b = (UINT64_C(4096) * 1048576 - 203560) / 3392;
    assert_int_equal(l.batch, b);
    assert_int_equal(l.capped, 0);
    /* none fits */
    assert_int_equal(memest_largest_batch(m, 0.1, MEMEST_FP32, 1000,
                                          MEMEST_MEASURE_PEAK_INFERENCE,
                                          MEMEST_OPT_SGD, &l),
                     MEMEST_OK);
    assert_int_equal(l.batch, 0);
    assert_int_equal(l.capped, 0);
    assert_true(l.memory_mb == (203560.0 + 3392) / MB);
    assert_int_equal(memest_largest_batch(m, 1.0, MEMEST_FP32, 0,
                                          MEMEST_MEASURE_PEAK_INFERENCE,
                                          MEMEST_OPT_SGD, &l),
                     MEMEST_E_RANGE);
    memest_model_destroy(m);
}

static void test_plan_rejects(void **state)
{
    memest_model *m = NULL;
    struct memest_hw_config c;
    struct memest_run_plan p;
    (void)state;

    assert_int_equal(memest_model_preset("mlp:4-2", &m, NULL), MEMEST_OK);
    memest_hw_config_init(&c);
    c.enabled = 1;
    memset(&p, 0x55, sizeof p);
    assert_int_equal(memest_prepare_run(m, 0, &c, &p), MEMEST_E_RANGE);
    assert_int_equal(p.batch_size, 0);
    assert_int_equal(p.warning_count, 0);
    c.max_memory_mb = NAN;
    assert_int_equal(memest_prepare_run(m, 8, &c, &p), MEMEST_E_RANGE);
    c.max_memory_mb = -INFINITY;
    assert_int_equal(memest_prepare_run(m, 8, &c, &p), MEMEST_E_RANGE);
    c.max_memory_mb = -0.5;
    assert_int_equal(memest_prepare_run(m, 8, &c, &p), MEMEST_E_RANGE);
    c.enabled = 0; /* checked when disabled too */
    assert_int_equal(memest_prepare_run(m, 8, &c, &p), MEMEST_E_RANGE);
    memest_hw_config_init(&c);
    c.batch_size_limit = 0;
    assert_int_equal(memest_prepare_run(m, 8, &c, &p), MEMEST_E_RANGE);
    memest_hw_config_init(&c);
    c.compute_speed_factor = NAN;
    assert_int_equal(memest_prepare_run(m, 8, &c, &p), MEMEST_E_RANGE);
    memest_hw_config_init(&c);
    c.precision = (enum memest_precision)11;
    assert_int_equal(memest_prepare_run(m, 8, &c, &p), MEMEST_E_INVALID);
    memest_hw_config_init(&c);
    assert_int_equal(memest_prepare_run(NULL, 8, &c, &p), MEMEST_E_INVALID);
    assert_int_equal(memest_prepare_run(m, 8, NULL, &p), MEMEST_E_INVALID);
    assert_int_equal(memest_prepare_run(m, 8, &c, NULL), MEMEST_E_INVALID);
    memest_hw_config_init(NULL);
    memest_model_destroy(m);
}

static void test_slowdown(void **state)
{
    (void)state;
    /* the original's table for a 10 s run */
    assert_true(memest_compute_slowdown_s(10.0, 1.0) == 0.0);
    assert_true(memest_compute_slowdown_s(10.0, 1.5) == 5.0);
    assert_true(memest_compute_slowdown_s(10.0, 2.0) == 10.0);
    assert_true(memest_compute_slowdown_s(10.0, 3.0) == 20.0);
    assert_true(memest_compute_slowdown_s(10.0, 0.5) == 0.0);
    assert_true(memest_compute_slowdown_s(10.0, NAN) == 0.0);
    assert_true(memest_compute_slowdown_s(0.0, 4.0) == 0.0);
    assert_true(memest_compute_slowdown_s(-1.0, 4.0) == 0.0);
    assert_true(memest_compute_slowdown_s(0.25, 1.25) == 0.0625);
}

/* memest_round6 against what Python's round(x, 6) printed for the same
 * doubles: the binary value decides (0.1234565 is just below the half),
 * exact halves go to even, and the sign of a zero stays. */
static void test_round6(void **state)
{
    (void)state;
    static const struct {
        double x, want;
    } cases[] = {
        {0.1234565, 0.123456},     {2.5e-7, 0.0},
        {1.0000005, 1.000001},     {0.8583333333, 0.858333},
        {123.4567895, 123.456789}, {5e-7, 0.0},
        {3.333333333333333e+19, 3.333333333333333e+19},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        if (memest_round6(cases[i].x) != cases[i].want) {
            fail_msg("round6(%.17g) = %.17g, want %.17g", cases[i].x,
                     memest_round6(cases[i].x), cases[i].want);
        }
    }
    assert_true(signbit(memest_round6(-4e-7)));
    assert_true(isnan(memest_round6(NAN)));
    assert_true(memest_round6(-INFINITY) == -INFINITY);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fit_matches_brute_force),
        cmocka_unit_test(test_fit_edges),
        cmocka_unit_test(test_halving),
        cmocka_unit_test(test_plan_fits),
        cmocka_unit_test(test_plan_three_warnings),
        cmocka_unit_test(test_measures_and_largest),
        cmocka_unit_test(test_plan_rejects),
        cmocka_unit_test(test_slowdown),
        cmocka_unit_test(test_round6),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
