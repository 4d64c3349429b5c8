/* A worker's failed allocation keeps its size: one matrix product on four
 * threads (libkernels' pool), run by fault-sweep with each of its
 * allocations failing in turn (the scratch buffers the parts take, most on
 * workers). A failure must end in exit 1 with "out of memory" naming
 * exactly the bytes the failed call asked for (fault-sweep
 * --require-exact), which kern_nomem_bytes() gives the caller only when
 * the worker's record is carried back to it; without a failure, the
 * product checked against a plain loop and written to --out DIR.
 *
 * usage: nomem-threads --out DIR */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "edgefit/kernels.h"

enum { M = 192, N = 160, K = 320, THREADS = 4 };

int main(int argc, char **argv)
{
    if (argc != 3 || strcmp(argv[1], "--out") != 0) {
        fprintf(stderr, "usage: nomem-threads --out DIR\n");
        return 2;
    }
    /* M*N*K = 9.8M multiply-adds: above the 8M at which products thread */
    static float a[M * K], b[K * N], c[M * N];
    for (size_t i = 0; i < (size_t)M * K; i++) {
        a[i] = (float)((i * 7) % 13) - 6.0f;
    }
    for (size_t i = 0; i < (size_t)K * N; i++) {
        b[i] = (float)((i * 5) % 11) - 5.0f;
    }
    const int st =
        kern_sgemm_threads(THREADS, 0, M, N, K, a, K, b, N, c, N);
    if (st == KERN_E_NOMEM) {
        fprintf(stderr, "nomem-threads: out of memory: the product's scratch "
                        "(%zu bytes)\n",
                kern_nomem_bytes());
        return 1;
    }
    if (st != KERN_OK) {
        fprintf(stderr, "nomem-threads: kern_sgemm_threads: status %d\n", st);
        return 2;
    }
    /* small integers: every sum is exact in float, in any order */
    for (size_t i = 0; i < M; i++) {
        for (size_t j = 0; j < N; j++) {
            double want = 0.0;
            for (size_t p = 0; p < K; p++) {
                want += (double)a[i * K + p] * (double)b[p * N + j];
            }
            if ((double)c[i * N + j] != want) {
                fprintf(stderr, "nomem-threads: c[%zu][%zu] = %g, want %g\n",
                        i, j, (double)c[i * N + j], want);
                return 2;
            }
        }
    }
    if (mkdir(argv[2], 0777) != 0) {
        fprintf(stderr, "nomem-threads: %s: %s\n", argv[2], strerror(errno));
        return 2;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/sum.txt", argv[2]);
    FILE *f = fopen(path, "w");
    double sum = 0.0;
    for (size_t i = 0; i < (size_t)M * N; i++) {
        sum += c[i];
    }
    if (!f || fprintf(f, "%.0f\n", sum) < 0 || fclose(f) != 0) {
        fprintf(stderr, "nomem-threads: %s: %s\n", path, strerror(errno));
        return 2;
    }
    printf("%.0f\n", sum);
    return 0;
}
