/* Behaviour of the public matrix-product API: exact small products worked
 * out by hand, every flag, the batched broadcasting form against loops
 * written here, error statuses and messages, overflow, and threads. Values
 * are small integers so every float result is exact, whatever the
 * summation order of the path the CPU selects. */
#include <pthread.h>
#include <setjmp.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "edgefit/kernels.h"

static void assert_floats(const float *got, const float *want, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (got[i] != want[i]) {
            fail_msg("element %zu: got %.9g, want %.9g", i, got[i],
                     want[i]);
        }
    }
}

/* [1 2 3; 4 5 6] x [7 8; 9 10; 11 12] = [58 64; 139 154]:
 * 1*7 + 2*9 + 3*11 = 58, 1*8 + 2*10 + 3*12 = 64,
 * 4*7 + 5*9 + 6*11 = 139, 4*8 + 5*10 + 6*12 = 154. */
static const float A23[] = {1, 2, 3, 4, 5, 6};
static const float A23T[] = {1, 4, 2, 5, 3, 6};
static const float B32[] = {7, 8, 9, 10, 11, 12};
static const float B32T[] = {7, 9, 11, 8, 10, 12};
static const float C22[] = {58, 64, 139, 154};

static void test_hand_product(void **state)
{
    (void)state;
    float c[4] = {-1, -1, -1, -1};
    assert_int_equal(kern_sgemm(0, 2, 2, 3, A23, 3, B32, 2, c, 2), KERN_OK);
    assert_floats(c, C22, 4);

    /* TinyTorch's example: [1 2; 3 4] x [5 6; 7 8] = [19 22; 43 50]. */
    const float a[] = {1, 2, 3, 4}, b[] = {5, 6, 7, 8};
    const float want[] = {19, 22, 43, 50};
    assert_int_equal(kern_sgemm(0, 2, 2, 2, a, 2, b, 2, c, 2), KERN_OK);
    assert_floats(c, want, 4);
}

static void test_transposes(void **state)
{
    (void)state;
    const float *as[2] = {A23, A23T};
    const float *bs[2] = {B32, B32T};
    for (unsigned f = 0; f < 4; f++) {
        const int ta = (f & KERN_MM_TRANS_A) != 0;
        const int tb = (f & KERN_MM_TRANS_B) != 0;
        float c[4] = {-1, -1, -1, -1};
        assert_int_equal(kern_sgemm(f, 2, 2, 3, as[ta], ta ? 2 : 3, bs[tb],
                                    tb ? 3 : 2, c, 2),
                         KERN_OK);
        assert_floats(c, C22, 4);
    }
}

static void test_accumulate_and_strides(void **state)
{
    (void)state;
    /* A with lda 5 and B with ldb 4: the gaps hold values that must not be
     * read; C with ldc 3: the gap column must not be written. */
    const float a[] = {1, 2, 3, 99, 99, 4, 5, 6, 99, 99};
    const float b[] = {7, 8, 99, 99, 9, 10, 99, 99, 11, 12, 99, 99};
    float c[] = {1, 2, 77, 3, 4, 77};
    const float want[] = {59, 66, 77, 142, 158, 77};
    assert_int_equal(kern_sgemm(KERN_MM_ACCUMULATE, 2, 2, 3, a, 5, b, 4, c,
                                3),
                     KERN_OK);
    assert_floats(c, want, 6);
}

static void test_vectors(void **state)
{
    (void)state;
    /* Row vector x matrix: [1 2 3] x B32 = [58 64]. */
    float r[2] = {0, 0};
    const float rwant[] = {58, 64};
    for (unsigned f = 0; f < 8; f += 2) {
        const int tb = (f & KERN_MM_TRANS_B) != 0;
        r[0] = r[1] = (f & KERN_MM_ACCUMULATE) ? 0.0f : -5.0f;
        assert_int_equal(kern_sgemm(f, 1, 2, 3, A23, 3, tb ? B32T : B32,
                                    tb ? 3 : 2, r, 2),
                         KERN_OK);
        assert_floats(r, rwant, 2);
    }
    /* Matrix x column vector: A23 x [7 9 11]^T = [58 139]; C's rows are
     * ldc = 2 apart and its second column must stay as it was. */
    const float col[] = {7, 9, 11};
    for (unsigned f = 0; f < 2; f++) {
        float c[4] = {-5, 42, -5, 42};
        const float want[] = {58, 42, 139, 42};
        assert_int_equal(kern_sgemm(f, 2, 1, 3, f ? A23T : A23, f ? 2 : 3,
                                    col, 1, c, 2),
                         KERN_OK);
        assert_floats(c, want, 4);
    }
    /* A 1x1 product. */
    const float x = 3.0f, y = -4.0f;
    float z = 100.0f;
    assert_int_equal(kern_sgemm(0, 1, 1, 1, &x, 1, &y, 1, &z, 1), KERN_OK);
    assert_true(z == -12.0f);
}

/* A product large enough for the packed path and for threads, checked
 * against a loop here (integers, so exact). */
static void fill_ints(float *p, size_t n, uint32_t seed)
{
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        p[i] = (float)((int)(seed >> 28) - 8);
    }
}

static void test_large_exact(void **state)
{
    (void)state;
    const size_t m = 301, n = 203, k = 517; /* odd tails everywhere */
    float *a = malloc(m * k * sizeof *a), *b = malloc(k * n * sizeof *b);
    float *c = malloc(m * n * sizeof *c), *w = malloc(m * n * sizeof *w);
    assert_non_null(a);
    assert_non_null(b);
    assert_non_null(c);
    assert_non_null(w);
    fill_ints(a, m * k, 1);
    fill_ints(b, k * n, 2);
    for (size_t i = 0; i < m; i++) {
        for (size_t j = 0; j < n; j++) {
            double s = 0;
            for (size_t p = 0; p < k; p++) {
                s += (double)a[i * k + p] * b[p * n + j];
            }
            w[i * n + j] = (float)s; /* |s| <= 517 * 64: exact in float */
        }
    }
    assert_int_equal(kern_sgemm(0, m, n, k, a, k, b, n, c, n), KERN_OK);
    assert_floats(c, w, m * n);
    free(a);
    free(b);
    free(c);
    free(w);
}

static void test_empty_and_k0(void **state)
{
    (void)state;
    float c[4] = {5, 5, 5, 5};
    const float zeros[4] = {0, 0, 0, 0}, fives[4] = {5, 5, 5, 5};
    /* m or n zero: nothing to do, NULL allowed. */
    assert_int_equal(kern_sgemm(0, 0, 2, 3, NULL, 3, B32, 2, NULL, 2),
                     KERN_OK);
    assert_int_equal(kern_sgemm(0, 2, 0, 3, A23, 3, NULL, 0, NULL, 0),
                     KERN_OK);
    /* k zero: C = 0, or unchanged when accumulating. */
    assert_int_equal(kern_sgemm(KERN_MM_ACCUMULATE, 2, 2, 0, NULL, 0, NULL,
                                2, c, 2),
                     KERN_OK);
    assert_floats(c, fives, 4);
    assert_int_equal(kern_sgemm(0, 2, 2, 0, NULL, 0, NULL, 2, c, 2), KERN_OK);
    assert_floats(c, zeros, 4);
}

static void test_errors(void **state)
{
    (void)state;
    float c[4];
    assert_int_equal(kern_sgemm(8, 2, 2, 3, A23, 3, B32, 2, c, 2),
                     KERN_E_INVALID);
    assert_int_equal(kern_sgemm(0, 2, 2, 3, NULL, 3, B32, 2, c, 2),
                     KERN_E_INVALID);
    assert_int_equal(kern_sgemm(0, 2, 2, 3, A23, 3, NULL, 2, c, 2),
                     KERN_E_INVALID);
    assert_int_equal(kern_sgemm(0, 2, 2, 3, A23, 3, B32, 2, NULL, 2),
                     KERN_E_INVALID);
    /* Leading dimensions shorter than a row. */
    assert_int_equal(kern_sgemm(0, 2, 2, 3, A23, 2, B32, 2, c, 2),
                     KERN_E_SHAPE);
    assert_int_equal(kern_sgemm(0, 2, 2, 3, A23, 3, B32, 1, c, 2),
                     KERN_E_SHAPE);
    assert_int_equal(kern_sgemm(0, 2, 2, 3, A23, 3, B32, 2, c, 1),
                     KERN_E_SHAPE);
    assert_int_equal(kern_sgemm(KERN_MM_TRANS_A, 2, 2, 3, A23T, 1, B32, 2, c,
                                2),
                     KERN_E_SHAPE);
    /* Extents that do not fit: checked before anything is read. */
    const size_t huge = SIZE_MAX / 2;
    assert_int_equal(kern_sgemm(0, huge, 2, 3, A23, 3, B32, 2, c, 2),
                     KERN_E_OVERFLOW);
    assert_int_equal(kern_sgemm(0, 2, 2, 3, A23, huge, B32, 2, c, 2),
                     KERN_E_OVERFLOW);
    assert_int_equal(kern_sgemm(0, 2, 2, SIZE_MAX / 8, A23, SIZE_MAX / 8,
                                B32, 2, c, 2),
                     KERN_E_OVERFLOW);
    assert_string_equal(kern_strerror(KERN_E_SHAPE), "shapes do not agree");
}

/* ---- batched ---------------------------------------------------------- */

static void test_nd_broadcast(void **state)
{
    (void)state;
    /* 2x1x3x4 . 5x4x2 -> 2x5x3x2 */
    const size_t as[] = {2, 1, 3, 4}, bs[] = {5, 4, 2};
    float a[2 * 3 * 4], b[5 * 4 * 2], c[2 * 5 * 3 * 2], w[2 * 5 * 3 * 2];
    fill_ints(a, 24, 3);
    fill_ints(b, 40, 4);
    size_t cs[4] = {0}, cnd = 0, ce = 0;
    char msg[128] = "x";
    assert_int_equal(kern_matmul_nd_shape(0, as, 4, bs, 3, cs, &cnd, &ce,
                                          msg, sizeof msg),
                     KERN_OK);
    assert_string_equal(msg, "");
    assert_int_equal(cnd, 4);
    assert_int_equal(ce, 60);
    assert_int_equal(cs[0], 2);
    assert_int_equal(cs[1], 5);
    assert_int_equal(cs[2], 3);
    assert_int_equal(cs[3], 2);
    for (size_t x = 0; x < 2; x++) {
        for (size_t y = 0; y < 5; y++) {
            const float *am = a + x * 12; /* A's dimension 1 broadcasts */
            const float *bm = b + y * 8;  /* B has no dimension 0 */
            for (size_t i = 0; i < 3; i++) {
                for (size_t j = 0; j < 2; j++) {
                    float s = 0;
                    for (size_t p = 0; p < 4; p++) {
                        s += am[i * 4 + p] * bm[p * 2 + j];
                    }
                    w[((x * 5 + y) * 3 + i) * 2 + j] = s;
                }
            }
        }
    }
    memset(c, 0xff, sizeof c);
    assert_int_equal(kern_matmul_nd(0, a, as, 4, b, bs, 3, c, msg, sizeof msg),
                     KERN_OK);
    assert_floats(c, w, 60);

    /* The same with both operands stored transposed, and accumulating. */
    float at[24], bt[40];
    for (size_t x = 0; x < 2; x++) {
        for (size_t i = 0; i < 3; i++) {
            for (size_t p = 0; p < 4; p++) {
                at[x * 12 + p * 3 + i] = a[x * 12 + i * 4 + p];
            }
        }
    }
    for (size_t y = 0; y < 5; y++) {
        for (size_t p = 0; p < 4; p++) {
            for (size_t j = 0; j < 2; j++) {
                bt[y * 8 + j * 4 + p] = b[y * 8 + p * 2 + j];
            }
        }
    }
    const size_t ats[] = {2, 1, 4, 3}, bts[] = {5, 2, 4};
    for (size_t i = 0; i < 60; i++) {
        c[i] = 1.0f;
        w[i] += 1.0f;
    }
    assert_int_equal(kern_matmul_nd(KERN_MM_TRANS_A | KERN_MM_TRANS_B |
                                        KERN_MM_ACCUMULATE,
                                    at, ats, 4, bt, bts, 3, c, msg,
                                    sizeof msg),
                     KERN_OK);
    assert_floats(c, w, 60);

    /* Plain 2-D through the batched form. */
    const size_t a2[] = {2, 3}, b2[] = {3, 2};
    float c2[4];
    assert_int_equal(kern_matmul_nd(0, A23, a2, 2, B32, b2, 2, c2, NULL, 0),
                     KERN_OK);
    assert_floats(c2, C22, 4);
}

static void test_nd_errors(void **state)
{
    (void)state;
    size_t cs[8], cnd = 0;
    char msg[128];
    const size_t v4[] = {4}, m34[] = {3, 4}, m56[] = {5, 6};
    assert_int_equal(kern_matmul_nd_shape(0, v4, 1, m34, 2, cs, &cnd, NULL,
                                          msg, sizeof msg),
                     KERN_E_SHAPE);
    assert_string_equal(msg, "A has 1 dimension; matmul needs at least 2");
    assert_int_equal(kern_matmul_nd_shape(0, m34, 2, NULL, 0, cs, &cnd,
                                          NULL, msg, sizeof msg),
                     KERN_E_SHAPE);
    assert_string_equal(msg, "B has 0 dimensions; matmul needs at least 2");
    assert_int_equal(kern_matmul_nd_shape(0, m34, 2, m56, 2, cs, &cnd, NULL,
                                          msg, sizeof msg),
                     KERN_E_SHAPE);
    assert_string_equal(
        msg, "inner dimensions differ: A is 3x4 (k=4), B is 5x6 (k=5)");
    assert_int_equal(kern_matmul_nd_shape(KERN_MM_TRANS_A, m34, 2, m56, 2,
                                          cs, &cnd, NULL, msg, sizeof msg),
                     KERN_E_SHAPE);
    assert_string_equal(msg, "inner dimensions differ: A is 3x4 transposed "
                             "(k=3), B is 5x6 (k=5)");
    /* The batched call reports the same, and leaves C alone. */
    float a[12] = {0}, b[30] = {0}, c[1] = {7};
    assert_int_equal(kern_matmul_nd(0, a, m34, 2, b, m56, 2, c, msg,
                                    sizeof msg),
                     KERN_E_SHAPE);
    assert_true(strstr(msg, "inner dimensions differ") != NULL);
    assert_true(c[0] == 7.0f);

    const size_t b234[] = {2, 3, 4}, b354[] = {3, 5, 4};
    assert_int_equal(kern_matmul_nd_shape(KERN_MM_TRANS_B, b234, 3, b354, 3,
                                          cs, &cnd, NULL, msg, sizeof msg),
                     KERN_E_SHAPE);
    assert_string_equal(msg, "batch dimensions do not broadcast: A dimension "
                             "0 is 2, B dimension 0 is 3");
    /* A short buffer still gets a terminated prefix. */
    char tiny[8];
    assert_int_equal(kern_matmul_nd_shape(0, m34, 2, m56, 2, cs, &cnd, NULL,
                                          tiny, sizeof tiny),
                     KERN_E_SHAPE);
    assert_string_equal(tiny, "inner d");
    assert_int_equal(kern_matmul_nd_shape(0, m34, 2, m56, 2, cs, &cnd, NULL,
                                          NULL, 0),
                     KERN_E_SHAPE);
    /* Bad flags, NULL outputs. */
    const size_t m43[] = {4, 3};
    assert_int_equal(kern_matmul_nd_shape(16, m34, 2, m43, 2, cs, &cnd, NULL,
                                          msg, sizeof msg),
                     KERN_E_INVALID);
    assert_int_equal(kern_matmul_nd_shape(0, m34, 2, m43, 2, NULL, &cnd,
                                          NULL, msg, sizeof msg),
                     KERN_E_INVALID);
    /* Sizes that overflow: the element count of C, of A, and bytes. */
    const size_t big[] = {SIZE_MAX / 2, 3, 4}, big2[] = {4, 4, 3};
    assert_int_equal(kern_matmul_nd_shape(0, big, 3, big2, 3, cs, &cnd,
                                          NULL, msg, sizeof msg),
                     KERN_E_SHAPE); /* SIZE_MAX / 2 against 4 */
    const size_t one_big[] = {SIZE_MAX / 4, 1, 4};
    const size_t b1[] = {1, 4, 3};
    assert_int_equal(kern_matmul_nd_shape(0, one_big, 3, b1, 3, cs, &cnd,
                                          NULL, msg, sizeof msg),
                     KERN_E_OVERFLOW);
    assert_true(strstr(msg, "does not fit") != NULL);
    const size_t bytes_big[] = {SIZE_MAX / 16, 2, 2};
    assert_int_equal(kern_matmul_nd_shape(0, bytes_big, 3, m43 /* 4x3 */,
                                          2, cs, &cnd, NULL, msg, sizeof msg),
                     KERN_E_SHAPE);
    const size_t m22[] = {2, 2};
    assert_int_equal(kern_matmul_nd_shape(0, bytes_big, 3, m22, 2, cs, &cnd,
                                          NULL, msg, sizeof msg),
                     KERN_E_OVERFLOW);
}

/* ---- threads ------------------------------------------------------------ */

static void test_threads(void **state)
{
    (void)state;
    assert_int_equal(kern_get_threads(), 1);
    assert_int_equal(kern_set_threads(0), KERN_E_RANGE);
    assert_int_equal(kern_set_threads(KERN_MAX_THREADS + 1), KERN_E_RANGE);
    assert_int_equal(kern_get_threads(), 1);

    /* Tall, wide and transposed products above the threading threshold;
     * random reals, so equality means the same arithmetic per element. */
    const size_t shapes[][3] = {{700, 130, 211}, {90, 1500, 131},
                                {257, 255, 253}};
    for (size_t s = 0; s < 3; s++) {
        const size_t m = shapes[s][0], n = shapes[s][1], k = shapes[s][2];
        float *a = malloc(m * k * sizeof *a), *b = malloc(k * n * sizeof *b);
        float *c1 = malloc(m * n * sizeof *c1);
        float *c2 = malloc(m * n * sizeof *c2);
        assert_non_null(a);
        assert_non_null(b);
        assert_non_null(c1);
        assert_non_null(c2);
        uint32_t x = 99;
        for (size_t i = 0; i < m * k; i++) {
            x = x * 1664525u + 1013904223u;
            a[i] = (float)(x >> 8) / 16777216.0f - 0.5f;
        }
        for (size_t i = 0; i < k * n; i++) {
            x = x * 1664525u + 1013904223u;
            b[i] = (float)(x >> 8) / 16777216.0f - 0.5f;
        }
        for (unsigned f = 0; f < 8; f++) {
            const size_t lda = (f & KERN_MM_TRANS_A) ? m : k;
            const size_t ldb = (f & KERN_MM_TRANS_B) ? k : n;
            for (size_t i = 0; i < m * n; i++) {
                c1[i] = c2[i] = (float)(i % 7);
            }
            assert_int_equal(kern_set_threads(1), KERN_OK);
            assert_int_equal(kern_sgemm(f, m, n, k, a, lda, b, ldb, c1, n),
                             KERN_OK);
            for (int t = 2; t <= 3; t++) {
                for (size_t i = 0; i < m * n; i++) {
                    c2[i] = (float)(i % 7);
                }
                assert_int_equal(kern_set_threads(t), KERN_OK);
                assert_int_equal(kern_get_threads(), t);
                assert_int_equal(
                    kern_sgemm(f, m, n, k, a, lda, b, ldb, c2, n), KERN_OK);
                if (memcmp(c1, c2, m * n * sizeof *c1) != 0) {
                    fail_msg("%zux%zux%zu flags %u: %d threads differ from 1",
                             m, k, n, f, t);
                }
            }
        }
        assert_int_equal(kern_set_threads(1), KERN_OK);
        free(a);
        free(b);
        free(c1);
        free(c2);
    }
}

/* kern_sgemm_threads splits products far below kern_sgemm's threshold
 * (the executor decides per layer); the result must still be the
 * one-thread product bit for bit, for ragged shapes and every flag. */
static void test_sgemm_threads(void **state)
{
    (void)state;
    const size_t shapes[][3] = {{1, 1, 1}, {5, 3, 7}, {49, 33, 17},
                                {3, 200, 9}, {130, 70, 65}};
    assert_int_equal(kern_sgemm_threads(0, 0, 1, 1, 1, NULL, 1, NULL, 1,
                                        NULL, 1), KERN_E_RANGE);
    assert_int_equal(kern_sgemm_threads(KERN_MAX_THREADS + 1, 0, 1, 1, 1,
                                        NULL, 1, NULL, 1, NULL, 1),
                     KERN_E_RANGE);
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        const size_t m = shapes[s][0], n = shapes[s][1], k = shapes[s][2];
        float *a = malloc(m * k * sizeof *a), *b = malloc(k * n * sizeof *b);
        float *c1 = malloc(m * n * sizeof *c1);
        float *c2 = malloc(m * n * sizeof *c2);
        assert_non_null(a);
        assert_non_null(b);
        assert_non_null(c1);
        assert_non_null(c2);
        uint32_t x = 7 + (uint32_t)s;
        for (size_t i = 0; i < m * k; i++) {
            x = x * 1664525u + 1013904223u;
            a[i] = (float)(x >> 8) / 16777216.0f - 0.5f;
        }
        for (size_t i = 0; i < k * n; i++) {
            x = x * 1664525u + 1013904223u;
            b[i] = (float)(x >> 8) / 16777216.0f - 0.5f;
        }
        for (unsigned f = 0; f < 8; f++) {
            const size_t lda = (f & KERN_MM_TRANS_A) ? m : k;
            const size_t ldb = (f & KERN_MM_TRANS_B) ? k : n;
            for (size_t i = 0; i < m * n; i++) {
                c1[i] = c2[i] = (float)(i % 5);
            }
            assert_int_equal(kern_sgemm(f, m, n, k, a, lda, b, ldb, c1, n),
                             KERN_OK);
            for (int t = 2; t <= 4; t++) {
                for (size_t i = 0; i < m * n; i++) {
                    c2[i] = (float)(i % 5);
                }
                assert_int_equal(kern_sgemm_threads(t, f, m, n, k, a, lda, b,
                                                    ldb, c2, n),
                                 KERN_OK);
                if (memcmp(c1, c2, m * n * sizeof *c1) != 0) {
                    fail_msg("%zux%zux%zu flags %u: %d threads differ from 1",
                             m, k, n, f, t);
                }
            }
        }
        free(a);
        free(b);
        free(c1);
        free(c2);
    }
}

/* kern_parallel: every part runs exactly once, part 0 on the caller, and
 * bad arguments are refused. */
struct par_ctx {
    atomic_int runs[KERN_MAX_THREADS];
    pthread_t who[KERN_MAX_THREADS];
};

static void par_task(void *ctx, size_t part)
{
    struct par_ctx *p = ctx;
    atomic_fetch_add(&p->runs[part], 1);
    p->who[part] = pthread_self();
}

static void noop_task(void *ctx, size_t part)
{
    (void)ctx;
    (void)part;
}

static void test_parallel(void **state)
{
    (void)state;
    assert_int_equal(kern_parallel(1, NULL, NULL), KERN_E_INVALID);
    assert_int_equal(kern_parallel(0, noop_task, NULL), KERN_E_RANGE);
    assert_int_equal(kern_parallel(KERN_MAX_THREADS + 1, noop_task, NULL),
                     KERN_E_RANGE);
    const size_t counts[] = {1, 2, 3, 7, KERN_MAX_THREADS};
    for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
        struct par_ctx p;
        memset(&p, 0, sizeof p);
        for (size_t i = 0; i < KERN_MAX_THREADS; i++) {
            atomic_init(&p.runs[i], 0);
        }
        assert_int_equal(kern_parallel(counts[c], par_task, &p), KERN_OK);
        for (size_t i = 0; i < KERN_MAX_THREADS; i++) {
            assert_int_equal(atomic_load(&p.runs[i]), i < counts[c] ? 1 : 0);
        }
        /* part 0 is the caller's (the others go to whichever thread,
         * the caller included, takes them first) */
        assert_true(pthread_equal(p.who[0], pthread_self()));
    }
}

/* kern_parallel_pieces: every piece runs exactly once, piece 0 on the
 * caller (slot 0), every slot below the thread count, and no two threads
 * hold one slot at once (per-thread scratch is indexed by slot). */
enum { PIECES_MAX = 1000 };

struct pieces_ctx {
    atomic_int runs[PIECES_MAX];
    unsigned slot_of[PIECES_MAX];
    pthread_t who0;
    atomic_int in_slot[KERN_MAX_THREADS];
    atomic_int clash;
};

static void pieces_task(void *ctx, size_t piece, unsigned slot)
{
    struct pieces_ctx *p = ctx;
    if (atomic_fetch_add(&p->in_slot[slot], 1) != 0) {
        atomic_store(&p->clash, 1);
    }
    atomic_fetch_add(&p->runs[piece], 1);
    p->slot_of[piece] = slot;
    if (piece == 0) {
        p->who0 = pthread_self();
    }
    /* a little work, so that the workers join in */
    volatile double x = 0.0;
    for (int i = 0; i < 2000; i++) {
        x = x + (double)i;
    }
    atomic_fetch_sub(&p->in_slot[slot], 1);
}

static void test_parallel_pieces(void **state)
{
    (void)state;
    assert_int_equal(kern_parallel_pieces(2, 1, NULL, NULL), KERN_E_INVALID);
    assert_int_equal(kern_parallel_pieces(0, 1, pieces_task, NULL),
                     KERN_E_RANGE);
    assert_int_equal(kern_parallel_pieces(KERN_MAX_THREADS + 1, 1,
                                          pieces_task, NULL),
                     KERN_E_RANGE);
    assert_int_equal(kern_parallel_pieces(2, 0, pieces_task, NULL),
                     KERN_E_RANGE);
#if SIZE_MAX > UINT32_MAX
    assert_int_equal(kern_parallel_pieces(2, (size_t)UINT32_MAX + 1,
                                          pieces_task, NULL),
                     KERN_E_RANGE);
#endif
    const int threads[] = {1, 2, 3, 4, 2, 8};
    const size_t pieces[] = {5, 1, 2, 17, PIECES_MAX, 300};
    static struct pieces_ctx p;
    for (size_t c = 0; c < sizeof threads / sizeof threads[0]; c++) {
        memset(&p, 0, sizeof p);
        assert_int_equal(kern_parallel_pieces(threads[c], pieces[c],
                                              pieces_task, &p),
                         KERN_OK);
        for (size_t i = 0; i < PIECES_MAX; i++) {
            assert_int_equal(atomic_load(&p.runs[i]), i < pieces[c] ? 1 : 0);
            if (i < pieces[c]) {
                assert_true(p.slot_of[i] < (unsigned)threads[c]);
            }
        }
        assert_int_equal(p.slot_of[0], 0);
        assert_true(pthread_equal(p.who0, pthread_self()));
        assert_int_equal(atomic_load(&p.clash), 0);
    }
}

/* kern_parallel_wake: its range; woken workers, with no work, go back to
 * waiting and join the next call's pieces as before: every piece once,
 * whether the wake came just before the call, while they still spun, or
 * after they had slept (2 ms, past their 0.2 ms of spinning). */
static void test_parallel_wake(void **state)
{
    (void)state;
    assert_int_equal(kern_parallel_wake(0), KERN_E_RANGE);
    assert_int_equal(kern_parallel_wake(KERN_MAX_THREADS + 1), KERN_E_RANGE);
    assert_int_equal(kern_parallel_wake(1), KERN_OK);
    static struct pieces_ctx p;
    const struct timespec nap = {0, 2000000};
    for (int r = 0; r < 12; r++) {
        const int threads = 2 + r % 3;
        assert_int_equal(kern_parallel_wake(threads), KERN_OK);
        if (r % 2) {
            assert_int_equal(kern_parallel_wake(threads), KERN_OK);
            nanosleep(&nap, NULL);
        }
        memset(&p, 0, sizeof p);
        assert_int_equal(kern_parallel_pieces(threads, 40, pieces_task, &p),
                         KERN_OK);
        for (size_t i = 0; i < PIECES_MAX; i++) {
            assert_int_equal(atomic_load(&p.runs[i]), i < 40 ? 1 : 0);
        }
        assert_int_equal(atomic_load(&p.clash), 0);
        if (r % 3 == 2) {
            nanosleep(&nap, NULL);
        }
    }
}

/* Several callers at once, each asking for threads: one gets the
 * library's workers, the others compute their blocks alone; every result
 * must equal the one-thread product. */
struct caller {
    const float *a, *b, *want;
    float *c;
    size_t m, n, k;
    int same;
};

static void *caller_main(void *arg)
{
    struct caller *x = arg;
    for (int r = 0; r < 3; r++) {
        memset(x->c, 0xff, x->m * x->n * sizeof *x->c);
        x->same = kern_sgemm(0, x->m, x->n, x->k, x->a, x->k, x->b, x->n,
                             x->c, x->n) == KERN_OK &&
                  memcmp(x->c, x->want, x->m * x->n * sizeof *x->c) == 0;
        if (!x->same) {
            break;
        }
    }
    return NULL;
}

static void test_concurrent_callers(void **state)
{
    (void)state;
    enum { CALLERS = 3 };
    const size_t m = 320, n = 200, k = 300;
    float *a = malloc(m * k * sizeof *a), *b = malloc(k * n * sizeof *b);
    float *want = malloc(m * n * sizeof *want);
    float *cs = malloc(CALLERS * m * n * sizeof *cs);
    assert_non_null(a);
    assert_non_null(b);
    assert_non_null(want);
    assert_non_null(cs);
    uint32_t x = 7;
    for (size_t i = 0; i < m * k; i++) {
        x = x * 1664525u + 1013904223u;
        a[i] = (float)(x >> 8) / 16777216.0f - 0.5f;
    }
    for (size_t i = 0; i < k * n; i++) {
        x = x * 1664525u + 1013904223u;
        b[i] = (float)(x >> 8) / 16777216.0f - 0.5f;
    }
    assert_int_equal(kern_set_threads(1), KERN_OK);
    assert_int_equal(kern_sgemm(0, m, n, k, a, k, b, n, want, n), KERN_OK);
    assert_int_equal(kern_set_threads(2), KERN_OK);
    struct caller callers[CALLERS];
    pthread_t tids[CALLERS];
    for (int t = 0; t < CALLERS; t++) {
        callers[t] = (struct caller){a, b, want, cs + (size_t)t * m * n,
                                     m, n, k, 0};
        assert_int_equal(pthread_create(&tids[t], NULL, caller_main,
                                        &callers[t]),
                         0);
    }
    for (int t = 0; t < CALLERS; t++) {
        pthread_join(tids[t], NULL);
        assert_true(callers[t].same);
    }
    assert_int_equal(kern_set_threads(1), KERN_OK);
    free(a);
    free(b);
    free(want);
    free(cs);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hand_product),
        cmocka_unit_test(test_transposes),
        cmocka_unit_test(test_accumulate_and_strides),
        cmocka_unit_test(test_vectors),
        cmocka_unit_test(test_large_exact),
        cmocka_unit_test(test_empty_and_k0),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_nd_broadcast),
        cmocka_unit_test(test_nd_errors),
        cmocka_unit_test(test_threads),
        cmocka_unit_test(test_sgemm_threads),
        cmocka_unit_test(test_parallel),
        cmocka_unit_test(test_parallel_pieces),
        cmocka_unit_test(test_parallel_wake),
        cmocka_unit_test(test_concurrent_callers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
