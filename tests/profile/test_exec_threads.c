/* The executor on several threads computes exactly what it computes on
 * one: every split (samples of a convolution, rows or columns of a
 * product, channels of a single sample's depthwise convolution, rows of an
 * int8 product) hands each thread whole output elements, so the outputs
 * at 2 and 3 threads must equal the one-thread outputs bit for bit, in
 * every precision, for batches that do not divide evenly. The one-thread
 * results themselves are checked against a double-precision reference by
 * test_exec.c. Also: a batch on one thread against its samples run one
 * at a time (fp32, bit for bit), which layers the work threshold sends to the
 * threads, and the thread count's range. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "edgefit/memest.h"
#include "edgefit/profile.h"

static memest_model *model_of(const char *text)
{
    memest_model *m = NULL;
    struct memest_diag d;
    const int st = memest_is_preset_name(text)
                       ? memest_model_preset(text, &m, &d)
                       : memest_model_parse(text, &m, &d);
    if (st != MEMEST_OK) {
        fail_msg("model: %s at %d:%d", d.message, d.line, d.column);
    }
    return m;
}

static const char *const MODELS[] = {
    /* grouped and strided conv, depthwise with and without relu, 1x1,
     * pooling, dense */
    "input 4x13x11\n"
    "conv2d 8 k=3 s=2 p=1 g=2 act=relu\n"
    "conv2d 8 k=3 p=1 g=8 act=relu\n"
    "conv2d 8 k=3 p=1 g=8 act=gelu\n"
    "conv2d 12 k=1\n"
    "maxpool k=2\n"
    "flatten\n"
    "dense 37 act=relu\n"
    "dense 10 act=softmax\n",
    "smallcnn",
    /* pools on channel-blocked tensors: a 3 x 3 max pool between
     * convolutions (blocked in and out) and a closing average pool
     * (blocked in, NCHW out), split by samples or, at batch 1, by whole
     * blocks of 8 channels (2 and 3 blocks here); an NCHW average pool
     * of 12 channels, split by channels */
    "input 5x12x12\n"
    "conv2d 16 k=3 p=1 act=relu\n"
    "maxpool k=3 s=2 p=1\n"
    "conv2d 24 k=1\n"
    "avgpool k=6\n"
    "conv2d 12 k=1\n"
    "avgpool k=1\n"
    "flatten\n"
    "dense 5\n",
    /* a dense layer's output pass (bias and gelu) split by rows: 9 rows
     * of 1900, at least 16384 elements */
    "input 9x31\n"
    "dense 1900 act=gelu\n"
    "dense 5 act=tanh\n",
    /* adds and a concat on channel-blocked tensors: an add of three
     * with a fused relu and one with a gelu after, over 6400 elements a
     * sample (two runs of 4096 at batch 1, samples at larger batches), a
     * concat of two (by samples; on one thread at batch 1) */
    "input 8x20x20\n"
    "conv2d 16 k=3 p=1 act=relu name=c1\n"
    "conv2d 16 k=1 name=c2\n"
    "add in=c1,c2,c1 act=relu name=s\n"
    "conv2d 16 k=1 name=c3\n"
    "add in=s,c3 act=gelu name=g\n"
    "concat in=g,c1\n"
    "conv2d 8 k=1\n"
    "globalavgpool\n"
    "flatten\n"
    "dense 3\n",
    /* a wide dense layer: its product is split by columns at batch 1 and
     * by rows at larger batches */
    "input 300\n"
    "dense 257 act=gelu\n"
    "dense 129 act=tanh\n",
    /* pointwise layers with more output channels than input pixels: the
     * convolution runs its samples as GEMM columns, chunk by chunk of the
     * weights */
    "input 16x3x3\n"
    "conv2d 24 k=1 act=relu\n"
    "conv2d 40 k=1\n"
    "conv2d 64 k=1 s=2 act=relu6\n",
    /* grouped convolutions whose groups are whole channel blocks (a
     * RegNet block: groups of 16 on blocked tensors), split by groups at
     * batch 1, and one whose groups are not (NCHW) */
    "input 32x10x9\n"
    "conv2d 48 k=1 act=relu\n"
    "conv2d 48 k=3 s=2 p=1 g=3 act=relu\n"
    "conv2d 48 k=3 p=1 g=3\n"
    "conv2d 36 k=3 p=1 g=12 act=relu\n"
    "conv2d 40 k=1\n",
    /* single samples split by output pixels (rows of the plane, cut
     * inside rows), not channels: fewer channel units than threads, or
     * weights smaller than the input; padded 3 x 3, 1 x 1 in place,
     * strided ones of each */
    "input 16x24x23\n"
    "conv2d 40 k=3 p=1 act=relu\n"
    "conv2d 16 k=1\n"
    "conv2d 24 k=3 s=2 p=1 act=relu6\n"
    "conv2d 16 k=1 s=2\n",
};

static float *run(const memest_model *m, uint64_t batch,
                  enum memest_precision p, unsigned threads,
                  uint64_t min_macs, const float *x, size_t *n_out,
                  prof_exec **keep)
{
    struct prof_exec_opts o;
    prof_exec_opts_init(&o);
    o.batch = batch;
    o.precision = p;
    o.threads = threads;
    o.thread_min_macs = min_macs;
    prof_exec *ex = NULL;
    struct prof_diag d;
    const int st = prof_exec_create(m, &o, &ex, &d);
    if (st != PROF_OK) {
        fail_msg("create: %s: %s", prof_strerror(st), d.message);
    }
    *n_out = prof_exec_output_count(ex);
    float *y = malloc(*n_out * sizeof *y);
    assert_non_null(y);
    memset(y, 0xff, *n_out * sizeof *y);
    assert_int_equal(prof_exec_run(ex, x, prof_exec_input_count(ex), y,
                                   *n_out),
                     PROF_OK);
    if (keep) {
        *keep = ex;
    } else {
        prof_exec_destroy(ex);
    }
    return y;
}

static void test_identical(void **state)
{
    (void)state;
    const enum memest_precision precs[] = {MEMEST_FP32, MEMEST_FP16,
                                           MEMEST_BF16, MEMEST_INT8_DYNAMIC};
    const uint64_t batches[] = {1, 2, 5};
    for (size_t mi = 0; mi < sizeof MODELS / sizeof MODELS[0]; mi++) {
        memest_model *m = model_of(MODELS[mi]);
        for (size_t bi = 0; bi < 3; bi++) {
            /* the input: same for every run of this model and batch */
            struct prof_exec_opts o;
            prof_exec_opts_init(&o);
            o.batch = batches[bi];
            prof_exec *probe = NULL;
            assert_int_equal(prof_exec_create(m, &o, &probe, NULL), PROF_OK);
            const size_t nin = prof_exec_input_count(probe);
            prof_exec_destroy(probe);
            float *x = malloc(nin * sizeof *x);
            assert_non_null(x);
            uint32_t r = 12345u + (uint32_t)(mi * 7 + bi);
            for (size_t i = 0; i < nin; i++) {
                r = r * 1664525u + 1013904223u;
                x[i] = (float)(r >> 8) / 16777216.0f;
            }
            for (size_t pi = 0; pi < 4; pi++) {
                size_t n1, nt;
                float *y1 = run(m, batches[bi], precs[pi], 1, 1, x, &n1,
                                NULL);
                for (unsigned t = 2; t <= 3; t++) {
                    prof_exec *ex = NULL;
                    /* threshold 1: every layer that can split does */
                    float *yt = run(m, batches[bi], precs[pi], t, 1, x, &nt,
                                    &ex);
                    assert_int_equal(n1, nt);
                    if (memcmp(y1, yt, n1 * sizeof *y1) != 0) {
                        fail_msg("model %zu batch %llu %s: %u threads differ "
                                 "from 1", mi,
                                 (unsigned long long)batches[bi],
                                 memest_precision_name(precs[pi]), t);
                    }
                    /* every dense, conv2d and pooling layer reports the
                     * threads; an add at fp32, a concat at fp32 and a
                     * batch of several */
                    const bool fp32 = precs[pi] == MEMEST_FP32;
                    for (size_t i = 0; i < prof_exec_op_count(ex); i++) {
                        struct prof_exec_op_info info;
                        assert_int_equal(prof_exec_op_info(ex, i, &info),
                                         PROF_OK);
                        const int split =
                            info.kind == MEMEST_KIND_DENSE ||
                            info.kind == MEMEST_KIND_CONV2D ||
                            info.kind == MEMEST_KIND_MAXPOOL ||
                            info.kind == MEMEST_KIND_AVGPOOL ||
                            (info.kind == MEMEST_KIND_ADD && fp32) ||
                            (info.kind == MEMEST_KIND_CONCAT && fp32 &&
                             batches[bi] > 1);
                        assert_int_equal(info.threads, split ? t : 1);
                    }
                    prof_exec_destroy(ex);
                    free(yt);
                }
                free(y1);
            }
            free(x);
        }
        memest_model_destroy(m);
    }
}

/* A batch in float on one thread equals its samples run one at a time
 * bit for bit: however a layer orders its work across samples (a 1 x 1
 * convolution runs them as GEMM columns), no sum changes. */
static void test_batch_as_samples(void **state)
{
    (void)state;
    enum { B = 5 };
    /* convolutions only (a dense layer's product at batch 1 is a GEMV,
     * whose sums are ordered otherwise than the batch's GEMM) */
    static const char *const CONVS[] = {
        "input 4x13x11\n"
        "conv2d 8 k=3 s=2 p=1 g=2 act=relu\n"
        "conv2d 8 k=3 p=1 g=8 act=relu\n"
        "conv2d 12 k=1\n"
        "conv2d 32 k=1 act=relu\n",
        "input 16x3x3\n"
        "conv2d 24 k=1 act=relu\n"
        "conv2d 40 k=1\n"
        "conv2d 64 k=1 s=2 act=relu6\n",
    };
    for (size_t mi = 0; mi < sizeof CONVS / sizeof CONVS[0]; mi++) {
        memest_model *m = model_of(CONVS[mi]);
        struct prof_exec_opts o;
        prof_exec_opts_init(&o);
        o.batch = B;
        prof_exec *probe = NULL;
        assert_int_equal(prof_exec_create(m, &o, &probe, NULL), PROF_OK);
        const size_t nin = prof_exec_input_count(probe);
        prof_exec_destroy(probe);
        float *x = malloc(nin * sizeof *x);
        assert_non_null(x);
        uint32_t r = 777u + (uint32_t)mi;
        for (size_t i = 0; i < nin; i++) {
            r = r * 1664525u + 1013904223u;
            x[i] = (float)(r >> 8) / 8388608.0f - 1.0f;
        }
        size_t nb, n1;
        float *yb = run(m, B, MEMEST_FP32, 1, 1, x, &nb, NULL);
        for (size_t b = 0; b < B; b++) {
            float *y1 = run(m, 1, MEMEST_FP32, 1, 1, x + b * (nin / B), &n1,
                            NULL);
            assert_int_equal(n1 * B, nb);
            if (memcmp(y1, yb + b * n1, n1 * sizeof *y1) != 0) {
                fail_msg("model %zu: sample %zu alone differs from the "
                         "batch of %d", mi, b, B);
            }
            free(y1);
        }
        free(yb);
        free(x);
        memest_model_destroy(m);
    }
}

/* The default threshold keeps small layers on one thread: smallcnn at
 * batch 1 has one layer of 2^17 MACs or more (its second convolution,
 * 226k; the first has 56k, the dense layer 8k, the pools 6k and 3k window
 * reads); at batch 32 its two convolutions (1.8 and 7.2 million MACs),
 * its dense layer (251k) and its first pool (201k window reads) are
 * split, its second pool (100k) is not. */
static void test_threshold(void **state)
{
    (void)state;
    memest_model *m = model_of("smallcnn");
    const uint64_t batches[] = {1, 32};
    for (size_t bi = 0; bi < 2; bi++) {
        struct prof_exec_opts o;
        prof_exec_opts_init(&o);
        assert_int_equal(o.threads, 1);
        assert_true(o.thread_min_macs == PROF_EXEC_THREAD_MIN_MACS);
        o.batch = batches[bi];
        o.threads = 2;
        prof_exec *ex = NULL;
        assert_int_equal(prof_exec_create(m, &o, &ex, NULL), PROF_OK);
        /* operators 1.. are conv1, pool1, conv2, pool2, flatten, dense */
        const unsigned want[2][7] = {{1, 1, 1, 2, 1, 1, 1},
                                     {1, 2, 2, 2, 1, 1, 2}};
        assert_int_equal(prof_exec_op_count(ex), 7);
        for (size_t i = 1; i < prof_exec_op_count(ex); i++) {
            struct prof_exec_op_info info;
            assert_int_equal(prof_exec_op_info(ex, i, &info), PROF_OK);
            assert_int_equal(info.threads, want[bi][i]);
        }
        prof_exec_destroy(ex);
    }
    memest_model_destroy(m);
}

static void test_range(void **state)
{
    (void)state;
    memest_model *m = model_of("mlp:8-4");
    struct prof_exec_opts o;
    prof_exec_opts_init(&o);
    prof_exec *ex = NULL;
    struct prof_diag d;
    o.threads = 0;
    assert_int_equal(prof_exec_create(m, &o, &ex, &d), PROF_E_RANGE);
    assert_null(ex);
    assert_non_null(strstr(d.message, "threads"));
    o.threads = 65;
    assert_int_equal(prof_exec_create(m, &o, &ex, &d), PROF_E_RANGE);
    o.threads = 64;
    assert_int_equal(prof_exec_create(m, &o, &ex, &d), PROF_OK);
    prof_exec_destroy(ex);
    memest_model_destroy(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_identical),
        cmocka_unit_test(test_batch_as_samples),
        cmocka_unit_test(test_threshold),
        cmocka_unit_test(test_range),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
