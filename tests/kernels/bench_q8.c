/* bench-q8: the int8 GEMM (s8 activations x packed s8 weights -> s32) in
 * GOP/s (2 * M * N * K operations per product), medians of interleaved
 * runs, one thread. With -Dblas_compare=true it also times oneDNN side
 * by side in the same run, two ways: its matmul primitive (u8 x s8 -> s32)
 * with the weights reordered once into the layout it prefers, like our
 * packed weights ("oneDNN mm"), and its GEMM function dnnl_gemm_u8s8s32
 * ("oneDNN gemm", which repacks on every call). "pack+gemm" is ours with
 * the weights packed on every call. Run with OMP_NUM_THREADS=1 so oneDNN
 * uses one thread, as we do.
 *
 * usage: bench-q8 [--reps N] [MxKxN ...] */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "edgefit/kernels.h"

#ifdef HAVE_DNNL
#include <oneapi/dnnl/dnnl.h>
#endif

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

enum { MAX_REPS = 201 };

struct shape {
    size_t m, k, n;
};

#ifdef HAVE_DNNL
/* oneDNN's matmul primitive with prepacked weights. */
struct dnnl_mm {
    dnnl_engine_t eng;
    dnnl_stream_t stream;
    dnnl_primitive_t prim;
    dnnl_memory_t src, wei, dst;
};

static int dnnl_mm_init(struct dnnl_mm *d, size_t m, size_t k, size_t n,
                        uint8_t *a, int8_t *w, int32_t *c)
{
    const dnnl_dims_t sd = {(dnnl_dim_t)m, (dnnl_dim_t)k};
    const dnnl_dims_t wd = {(dnnl_dim_t)k, (dnnl_dim_t)n};
    const dnnl_dims_t dd = {(dnnl_dim_t)m, (dnnl_dim_t)n};
    dnnl_memory_desc_t smd, wany, wuser, dmd;
    dnnl_matmul_desc_t md;
    dnnl_primitive_desc_t pd = NULL, rpd = NULL;
    dnnl_primitive_t reorder = NULL;
    dnnl_memory_t wsrc = NULL;
    memset(d, 0, sizeof *d);
    /* W is N x K row-major: the K x N weights in "ba" order. */
    if (dnnl_engine_create(&d->eng, dnnl_cpu, 0) != dnnl_success ||
        dnnl_stream_create(&d->stream, d->eng,
                           dnnl_stream_default_flags) != dnnl_success ||
        dnnl_memory_desc_init_by_tag(&smd, 2, sd, dnnl_u8, dnnl_ab) ||
        dnnl_memory_desc_init_by_tag(&wany, 2, wd, dnnl_s8,
                                     dnnl_format_tag_any) ||
        dnnl_memory_desc_init_by_tag(&wuser, 2, wd, dnnl_s8, dnnl_ba) ||
        dnnl_memory_desc_init_by_tag(&dmd, 2, dd, dnnl_s32, dnnl_ab) ||
        dnnl_matmul_desc_init(&md, &smd, &wany, NULL, &dmd) ||
        dnnl_primitive_desc_create(&pd, &md, NULL, d->eng, NULL) ||
        dnnl_primitive_create(&d->prim, pd)) {
        return 1;
    }
    const dnnl_memory_desc_t *wq =
        dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
    if (dnnl_memory_create(&d->src, &smd, d->eng, a) ||
        dnnl_memory_create(&d->dst, &dmd, d->eng, c) ||
        dnnl_memory_create(&wsrc, &wuser, d->eng, w) ||
        dnnl_memory_create(&d->wei, wq, d->eng, DNNL_MEMORY_ALLOCATE) ||
        dnnl_reorder_primitive_desc_create(&rpd, &wuser, d->eng, wq, d->eng,
                                           NULL) ||
        dnnl_primitive_create(&reorder, rpd)) {
        return 1;
    }
    const dnnl_exec_arg_t rargs[2] = {{DNNL_ARG_FROM, wsrc},
                                      {DNNL_ARG_TO, d->wei}};
    const int bad = dnnl_primitive_execute(reorder, d->stream, 2, rargs) ||
                    dnnl_stream_wait(d->stream);
    dnnl_primitive_destroy(reorder);
    dnnl_primitive_desc_destroy(rpd);
    dnnl_primitive_desc_destroy(pd);
    dnnl_memory_destroy(wsrc);
    return bad;
}

static void dnnl_mm_run(struct dnnl_mm *d)
{
    const dnnl_exec_arg_t args[3] = {{DNNL_ARG_SRC, d->src},
                                     {DNNL_ARG_WEIGHTS, d->wei},
                                     {DNNL_ARG_DST, d->dst}};
    dnnl_primitive_execute(d->prim, d->stream, 3, args);
    dnnl_stream_wait(d->stream);
}

static void dnnl_mm_free(struct dnnl_mm *d)
{
    dnnl_primitive_destroy(d->prim);
    dnnl_memory_destroy(d->src);
    dnnl_memory_destroy(d->wei);
    dnnl_memory_destroy(d->dst);
    dnnl_stream_destroy(d->stream);
    dnnl_engine_destroy(d->eng);
}
#endif

static int bench(const struct shape *s, int reps)
{
    const size_t m = s->m, k = s->k, n = s->n;
    int8_t *a = malloc(m * k), *w = malloc(n * k);
    uint8_t *au = malloc(m * k);
    int32_t *c = malloc(m * n * sizeof *c);
    const size_t pb = kern_q8_packed_bytes(n, k);
    void *packed = malloc(pb);
    if (!a || !w || !au || !c || !packed) {
        fprintf(stderr, "bench-q8: out of memory\n");
        return 1;
    }
    uint32_t r = 7;
    for (size_t i = 0; i < m * k; i++) {
        r = r * 1664525u + 1013904223u;
        a[i] = (int8_t)((r >> 24) % 255 - 127);
        au[i] = (uint8_t)(a[i] + 128);
    }
    for (size_t i = 0; i < n * k; i++) {
        r = r * 1664525u + 1013904223u;
        w[i] = (int8_t)((r >> 24) % 255 - 127);
    }
    if (kern_q8_pack_weights(w, n, k, k, packed, pb) != KERN_OK) {
        return 1;
    }
    const double ops = 2.0 * (double)m * (double)n * (double)k;
    /* Repeat small products so each sample lasts about 0.2 ms. */
    const int inner = ops < 4e7 ? (int)(4e7 / ops) + 1 : 1;
    double t_ours[MAX_REPS], t_pack[MAX_REPS];
#ifdef HAVE_DNNL
    double t_dnnl[MAX_REPS], t_mm[MAX_REPS];
    const int32_t co = 0;
    struct dnnl_mm mm;
    if (dnnl_mm_init(&mm, m, k, n, au, w, c)) {
        fprintf(stderr, "bench-q8: oneDNN matmul set-up failed\n");
        return 1;
    }
#endif
    for (int rep = -2; rep < reps; rep++) {
        double t0 = now_ns();
        for (int i = 0; i < inner; i++) {
            kern_q8_gemm(m, n, k, a, k, packed, c, n);
        }
        const double ours = (now_ns() - t0) / inner;
        t0 = now_ns();
        for (int i = 0; i < inner; i++) {
            kern_q8_pack_weights(w, n, k, k, packed, pb);
            kern_q8_gemm(m, n, k, a, k, packed, c, n);
        }
        const double pack = (now_ns() - t0) / inner;
#ifdef HAVE_DNNL
        t0 = now_ns();
        for (int i = 0; i < inner; i++) {
            dnnl_gemm_u8s8s32('N', 'T', 'F', (dnnl_dim_t)m, (dnnl_dim_t)n,
                              (dnnl_dim_t)k, 1.0f, au, (dnnl_dim_t)k, 0, w,
                              (dnnl_dim_t)k, 0, 0.0f, c, (dnnl_dim_t)n, &co);
        }
        const double dn = (now_ns() - t0) / inner;
        t0 = now_ns();
        for (int i = 0; i < inner; i++) {
            dnnl_mm_run(&mm);
        }
        const double dm = (now_ns() - t0) / inner;
#endif
        if (rep >= 0) {
            t_ours[rep] = ours;
            t_pack[rep] = pack;
#ifdef HAVE_DNNL
            t_dnnl[rep] = dn;
            t_mm[rep] = dm;
#endif
        }
    }
    const double mo = median(t_ours, reps), mp = median(t_pack, reps);
    printf("%5zux%5zux%5zu  %8.1f  %8.1f", m, k, n, ops / mo, ops / mp);
#ifdef HAVE_DNNL
    const double md = median(t_dnnl, reps), mm_t = median(t_mm, reps);
    printf("  %10.1f  %11.1f  %8.2f", ops / mm_t, ops / md, mm_t / mo);
    dnnl_mm_free(&mm);
#endif
    printf("\n");
    free(a);
    free(au);
    free(w);
    free(c);
    free(packed);
    return 0;
}

int main(int argc, char **argv)
{
    struct shape shapes[32] = {
        {32, 784, 64}, {256, 784, 64}, {16, 1024, 256}, {1, 784, 64},
        {32, 64, 10}, {256, 256, 256}, {512, 512, 512}, {1024, 1024, 1024},
        {2048, 2048, 2048},
    };
    int nshapes = 9, reps = 21, custom = 0;
    for (int i = 1; i < argc; i++) {
        struct shape s;
        if (!strcmp(argv[i], "--reps") && i + 1 < argc) {
            reps = atoi(argv[++i]);
            if (reps < 1 || reps > MAX_REPS) {
                fprintf(stderr, "bench-q8: --reps must be 1..%d\n",
                        MAX_REPS);
                return 2;
            }
        } else if (sscanf(argv[i], "%zux%zux%zu", &s.m, &s.k, &s.n) == 3 &&
                   s.m && s.k && s.n && custom < 32) {
            shapes[custom++] = s;
        } else {
            fprintf(stderr, "usage: bench-q8 [--reps N] [MxKxN ...]\n");
            return 2;
        }
    }
    if (custom) {
        nshapes = custom;
    }
    printf("int8 GEMM, GOP/s, medians of %d interleaved runs, path %s\n",
           reps, kern_cpu_path_name(kern_cpu_flags()));
    printf("%17s  %8s  %8s", "M x K x N", "edgefit", "pack+gemm");
#ifdef HAVE_DNNL
    printf("  %10s  %11s  %8s", "oneDNN mm", "oneDNN gemm", "ours/mm");
#endif
    printf("\n");
    for (int i = 0; i < nshapes; i++) {
        if (bench(&shapes[i], reps)) {
            return 1;
        }
    }
    return 0;
}
