/* bench-matmul: GFLOP/s of kern_sgemm at the shapes of small networks and
 * at square sizes, against a naive triple loop (kept here, not in the
 * library) and, when built with them, OpenBLAS, libxsmm and oneDNN; all
 * measured side by side in one run, medians of interleaved samples.
 *
 *     bench-matmul [--reps N] [--threads N] [--wall] [--only NAME]
 *                  [--shape MxKxN]...
 *
 * --only NAME times edgefit and NAME alone (e.g. --only naive): with
 * threads, the spinning workers of one library slow the next one down.
 * With one thread the clock is the thread's CPU time, so time slices lost
 * to other processes on a shared machine do not count (--wall to use the
 * wall clock); with more threads it is the wall clock. The comparison
 * libraries run on one thread (oneDNN through OMP_NUM_THREADS=1, which the
 * program sets and re-executes itself with when it is unset).
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "edgefit/kernels.h"

#ifdef HAVE_OPENBLAS
#include <cblas.h>
void openblas_set_num_threads(int n);
#endif
#ifdef HAVE_LIBXSMM
#include <libxsmm.h>
#endif
#ifdef HAVE_DNNL
#include <dnnl.h>
#endif

/* The naive reference: three loops, the inner one along a row of C so a
 * compiler vectorises it for the baseline instruction set. */
static void naive_sgemm(size_t m, size_t n, size_t k, const float *a,
                        const float *b, float *c)
{
    for (size_t i = 0; i < m; i++) {
        float *crow = c + i * n;
        for (size_t j = 0; j < n; j++) {
            crow[j] = 0.0f;
        }
        for (size_t p = 0; p < k; p++) {
            const float aip = a[i * k + p];
            const float *brow = b + p * n;
            for (size_t j = 0; j < n; j++) {
                crow[j] += aip * brow[j];
            }
        }
    }
}

struct problem {
    size_t m, n, k;
    const float *a, *b;
    float *c;
};

typedef int (*impl_fn)(const struct problem *p);

static int run_edgefit(const struct problem *p)
{
    return kern_sgemm(0, p->m, p->n, p->k, p->a, p->k, p->b, p->n, p->c,
                      p->n);
}

static int run_naive(const struct problem *p)
{
    naive_sgemm(p->m, p->n, p->k, p->a, p->b, p->c);
    return 0;
}

#ifdef HAVE_OPENBLAS
static int run_openblas(const struct problem *p)
{
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)p->m,
                (int)p->n, (int)p->k, 1.0f, p->a, (int)p->k, p->b, (int)p->n,
                0.0f, p->c, (int)p->n);
    return 0;
}
#endif

#ifdef HAVE_LIBXSMM
/* libxsmm is column-major: row-major C = A B is column-major C^T = B^T A^T,
 * i.e. the column-major product of B (n x k) and A (k x m). Small shapes
 * take a dispatched (JIT) kernel, the rest libxsmm_sgemm. */
static int run_libxsmm(const struct problem *p)
{
    const libxsmm_blasint m = (libxsmm_blasint)p->n;
    const libxsmm_blasint n = (libxsmm_blasint)p->m;
    const libxsmm_blasint k = (libxsmm_blasint)p->k;
    const float alpha = 1.0f, beta = 0.0f;
    const libxsmm_smmfunction fn =
        libxsmm_smmdispatch(m, n, k, &m, &k, &m, &alpha, &beta, NULL, NULL);
    if (fn) {
        fn(p->b, p->a, p->c);
        return 0;
    }
    libxsmm_sgemm("N", "N", &m, &n, &k, &alpha, p->b, &m, p->a, &k, &beta,
                  p->c, &m);
    return 0;
}
#endif

#ifdef HAVE_DNNL
static int run_dnnl(const struct problem *p)
{
    return dnnl_sgemm('N', 'N', (dnnl_dim_t)p->m, (dnnl_dim_t)p->n,
                      (dnnl_dim_t)p->k, 1.0f, p->a, (dnnl_dim_t)p->k, p->b,
                      (dnnl_dim_t)p->n, 0.0f, p->c, (dnnl_dim_t)p->n) ==
                   dnnl_success
               ? 0
               : 1;
}
#endif

static const struct {
    const char *name;
    impl_fn fn;
} impls[] = {
    {"naive", run_naive},
    {"edgefit", run_edgefit},
#ifdef HAVE_OPENBLAS
    {"openblas", run_openblas},
#endif
#ifdef HAVE_LIBXSMM
    {"libxsmm", run_libxsmm},
#endif
#ifdef HAVE_DNNL
    {"onednn", run_dnnl},
#endif
};
enum { NIMPL = sizeof impls / sizeof impls[0], MAX_REPS = 101 };

static clockid_t bench_clock = CLOCK_MONOTONIC;

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(bench_clock, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* Implementations to time: all, or edgefit and the one named by --only. */
static const char *only;

static bool selected(size_t i)
{
    return !only || !strcmp(impls[i].name, "edgefit") ||
           !strcmp(impls[i].name, only);
}

static int cmp_double(const void *x, const void *y)
{
    const double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

static uint32_t rng = 12345u;

static float randf(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 17;
    rng ^= rng << 5;
    return (float)(rng >> 8) / 8388608.0f - 1.0f;
}

/* Median GFLOP/s of each implementation; samples of all implementations
 * are interleaved so they see the same machine load. */
static void bench_shape(size_t m, size_t k, size_t n, int reps)
{
    float *a = malloc(m * k * sizeof *a);
    float *b = malloc(k * n * sizeof *b);
    float *c = malloc(m * n * sizeof *c);
    if (!a || !b || !c) {
        fprintf(stderr, "bench-matmul: out of memory\n");
        exit(1);
    }
    for (size_t i = 0; i < m * k; i++) {
        a[i] = randf();
    }
    for (size_t i = 0; i < k * n; i++) {
        b[i] = randf();
    }
    const struct problem p = {m, n, k, a, b, c};
    const double flops = 2.0 * (double)m * (double)n * (double)k;
    /* Each sample repeats the product for about 10 ms at 100 GFLOP/s, so
     * threads and caches reach their steady state (the naive loop runs a
     * quarter as many). */
    int inner = (int)(1e9 / flops) + 1;
    static double t[NIMPL][MAX_REPS];
    for (size_t i = 0; i < NIMPL; i++) {
        if (selected(i)) {
            impls[i].fn(&p); /* warm caches, JIT and thread pools */
        }
    }
    for (int r = 0; r < reps; r++) {
        for (size_t i = 0; i < NIMPL; i++) {
            if (!selected(i)) {
                t[i][r] = 0.0;
                continue;
            }
            const int times = strcmp(impls[i].name, "naive") ? inner
                              : (inner + 3) / 4;
            const double t0 = now_ns();
            for (int q = 0; q < times; q++) {
                impls[i].fn(&p);
            }
            t[i][r] = flops * times / (now_ns() - t0);
        }
    }
    printf("%5zux%-5zux%5zu", m, k, n);
    double best_other = 0.0, ours = 0.0;
    for (size_t i = 0; i < NIMPL; i++) {
        qsort(t[i], (size_t)reps, sizeof(double), cmp_double);
        const double med = t[i][reps / 2];
        printf(" %9.1f", med);
        if (!strcmp(impls[i].name, "edgefit")) {
            ours = med;
        } else if (strcmp(impls[i].name, "naive") != 0 && med > best_other) {
            best_other = med;
        }
    }
    if (best_other > 0.0) {
        printf("   x%.2f", ours / best_other);
    }
    printf("\n");
    fflush(stdout);
    free(a);
    free(b);
    free(c);
}

int main(int argc, char **argv)
{
    static const size_t defaults[][3] = {
        {32, 784, 64},   {256, 784, 64},  {16, 1024, 256}, {32, 64, 10},
        {1, 784, 64},    {1, 512, 512},   {256, 256, 256}, {512, 512, 512},
        {1024, 1024, 1024}, {2048, 2048, 2048},
    };
    size_t shapes[32][3];
    size_t nshapes = 0;
    int reps = 21, threads = 1, wall = 0;
    const char *omp = getenv("OMP_NUM_THREADS");
    if (!omp || strcmp(omp, "1") != 0) {
        /* OpenMP reads its thread count when it loads: set it, restart. */
        if (setenv("OMP_NUM_THREADS", "1", 1) == 0) {
            execv("/proc/self/exe", argv);
        }
        fprintf(stderr, "bench-matmul: could not set OMP_NUM_THREADS=1\n");
    }
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--reps") && i + 1 < argc) {
            reps = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--threads") && i + 1 < argc) {
            threads = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--wall")) {
            wall = 1;
        } else if (!strcmp(argv[i], "--only") && i + 1 < argc) {
            only = argv[++i];
        } else if (!strcmp(argv[i], "--shape") && i + 1 < argc &&
                   nshapes < 32) {
            if (sscanf(argv[++i], "%zux%zux%zu", &shapes[nshapes][0],
                       &shapes[nshapes][1], &shapes[nshapes][2]) != 3) {
                fprintf(stderr, "bench-matmul: bad shape '%s'\n", argv[i]);
                return 2;
            }
            nshapes++;
        } else {
            fprintf(stderr, "usage: bench-matmul [--reps N] [--threads N] "
                            "[--wall] [--only NAME] [--shape MxKxN]...\n");
            return 2;
        }
    }
    if (reps < 1 || reps > MAX_REPS || kern_set_threads(threads) != KERN_OK) {
        fprintf(stderr, "bench-matmul: --reps 1..%d, --threads 1..%d\n",
                MAX_REPS, KERN_MAX_THREADS);
        return 2;
    }
    if (threads == 1 && !wall) {
        bench_clock = CLOCK_THREAD_CPUTIME_ID;
    }
    if (nshapes == 0) {
        memcpy(shapes, defaults, sizeof defaults);
        nshapes = sizeof defaults / sizeof defaults[0];
    }
#ifdef HAVE_OPENBLAS
    openblas_set_num_threads(threads);
#endif
#ifdef HAVE_LIBXSMM
    libxsmm_init();
#endif
    printf("GFLOP/s, median of %d (%s clock); edgefit path %s, "
           "%d thread(s)\n",
           reps, bench_clock == CLOCK_MONOTONIC ? "wall" : "thread CPU",
           kern_cpu_path_name(kern_cpu_flags()), threads);
    printf("%-17s", "M x K x N");
    for (size_t i = 0; i < NIMPL; i++) {
        printf(" %9s", impls[i].name);
    }
    printf("   edgefit/best\n");
    for (size_t s = 0; s < nshapes; s++) {
        bench_shape(shapes[s][0], shapes[s][1], shapes[s][2], reps);
    }
#ifdef HAVE_LIBXSMM
    libxsmm_finalize();
#endif
    return 0;
}
