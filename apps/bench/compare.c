/* edgefit-bench: the libraries the matmul and int8 tables compare with
 * (the conv table's are in compare_conv.c),
 * each compiled only when the build found it (Meson option blas_compare).
 * Every one is held to a single thread, as edgefit's single-thread
 * columns are. All are row-major calls of C = A . B. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

#if BENCH_HAVE_OPENBLAS
#include <cblas.h>
#endif
#if BENCH_HAVE_LIBXSMM
#include <libxsmm.h>
#endif
#if BENCH_HAVE_ONEDNN
#include <oneapi/dnnl/dnnl.h>
#endif
#if BENCH_HAVE_OPENMP
#include <omp.h>
#endif

unsigned bench_compare_available(void)
{
    unsigned have = 0;
#if BENCH_HAVE_OPENBLAS
    have |= BENCH_LIB_OPENBLAS;
#endif
#if BENCH_HAVE_LIBXSMM
    have |= BENCH_LIB_LIBXSMM;
#endif
#if BENCH_HAVE_ONEDNN
    have |= BENCH_LIB_ONEDNN;
#endif
#if BENCH_HAVE_XNNPACK
    have |= BENCH_LIB_XNNPACK;
#endif
    return have;
}

void bench_compare_init(void)
{
#if BENCH_HAVE_OPENBLAS
    openblas_set_num_threads(1);
#endif
#if BENCH_HAVE_LIBXSMM
    libxsmm_init();
#endif
#if BENCH_HAVE_OPENMP
    /* oneDNN's Debian build threads with OpenMP; libgomp reads
     * OMP_NUM_THREADS when it is loaded, before main, so the count is set
     * through the API instead. */
    omp_set_num_threads(1);
#endif
}

void bench_compare_finish(void)
{
#if BENCH_HAVE_LIBXSMM
    libxsmm_finalize();
#endif
}

const char *bench_compare_versions(void)
{
    static char text[256];
    size_t len = 0;
    text[0] = '\0';
#if BENCH_HAVE_OPENBLAS
    {
        /* "OpenBLAS 0.3.21 DYNAMIC_ARCH ...": keep the first two words. */
        const char *cfg = openblas_get_config();
        int words = 0, i = 0;
        while (cfg[i] && !(cfg[i] == ' ' && ++words == 2)) {
            i++;
        }
        len += (size_t)snprintf(text + len, sizeof text - len, "%.*s", i,
                                cfg);
    }
#endif
#if BENCH_HAVE_LIBXSMM
    len += (size_t)snprintf(text + len, sizeof text - len, "%slibxsmm %s",
                            len ? ", " : "", LIBXSMM_CONFIG_VERSION);
#endif
#if BENCH_HAVE_ONEDNN
    {
        const dnnl_version_t *v = dnnl_version();
        len += (size_t)snprintf(text + len, sizeof text - len,
                                "%soneDNN %d.%d.%d", len ? ", " : "",
                                v->major, v->minor, v->patch);
    }
#endif
#if BENCH_HAVE_XNNPACK
    /* XNNPACK has no version call; Debian versions it by its git date. */
    len += (size_t)snprintf(text + len, sizeof text - len, "%sXNNPACK",
                            len ? ", " : "");
#endif
    (void)len;
    return text;
}

#if BENCH_HAVE_OPENBLAS || BENCH_HAVE_LIBXSMM || BENCH_HAVE_ONEDNN
/* The BLAS interfaces take int dimensions. */
static int dims_fit(size_t m, size_t n, size_t k)
{
    return m <= INT_MAX && n <= INT_MAX && k <= INT_MAX;
}
#endif

int bench_openblas_sgemm(size_t m, size_t n, size_t k, const float *a,
                         const float *b, float *c)
{
#if BENCH_HAVE_OPENBLAS
    if (!dims_fit(m, n, k)) {
        return -1;
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (blasint)m,
                (blasint)n, (blasint)k, 1.0f, a, (blasint)k, b, (blasint)n,
                0.0f, c, (blasint)n);
    return 0;
#else
    (void)m, (void)n, (void)k, (void)a, (void)b, (void)c;
    return -1;
#endif
}

int bench_onednn_sgemm(size_t m, size_t n, size_t k, const float *a,
                       const float *b, float *c)
{
#if BENCH_HAVE_ONEDNN
    if (!dims_fit(m, n, k)) {
        return -1;
    }
    dnnl_status_t st = dnnl_sgemm('N', 'N', (dnnl_dim_t)m, (dnnl_dim_t)n,
                                  (dnnl_dim_t)k, 1.0f, a, (dnnl_dim_t)k, b,
                                  (dnnl_dim_t)n, 0.0f, c, (dnnl_dim_t)n);
    return st == dnnl_success ? 0 : -1;
#else
    (void)m, (void)n, (void)k, (void)a, (void)b, (void)c;
    return -1;
#endif
}

int bench_onednn_u8s8s32(size_t m, size_t n, size_t k, const uint8_t *a,
                         const int8_t *w, int32_t *c)
{
#if BENCH_HAVE_ONEDNN
    if (!dims_fit(m, n, k)) {
        return -1;
    }
    const int32_t co = 0;
    /* W is stored n x k, so op(B) = W^T: transb 'T' with ldb = k. */
    dnnl_status_t st = dnnl_gemm_u8s8s32(
        'N', 'T', 'F', (dnnl_dim_t)m, (dnnl_dim_t)n, (dnnl_dim_t)k, 1.0f, a,
        (dnnl_dim_t)k, 0, w, (dnnl_dim_t)k, 0, 0.0f, c, (dnnl_dim_t)n, &co);
    return st == dnnl_success ? 0 : -1;
#else
    (void)m, (void)n, (void)k, (void)a, (void)w, (void)c;
    return -1;
#endif
}

struct bench_xsmm {
    int m, n, k;
#if BENCH_HAVE_LIBXSMM
    libxsmm_smmfunction kernel; /* NULL: libxsmm_sgemm */
#endif
};

int bench_xsmm_prepare(size_t m, size_t n, size_t k, struct bench_xsmm **out)
{
    *out = NULL;
#if BENCH_HAVE_LIBXSMM
    if (!dims_fit(m, n, k)) {
        return -1;
    }
    struct bench_xsmm *x = calloc(1, sizeof *x);
    if (!x) {
        return -1;
    }
    x->m = (int)m;
    x->n = (int)n;
    x->k = (int)k;
    /* libxsmm is column-major: row-major C = A . B is column-major
     * C^T = B^T . A^T, i.e. an (n x k) . (k x m) product with B first. */
    const libxsmm_blasint lda = x->n, ldb = x->k, ldc = x->n;
    const float alpha = 1.0f, beta = 0.0f;
    x->kernel = libxsmm_smmdispatch(x->n, x->m, x->k, &lda, &ldb, &ldc,
                                    &alpha, &beta, NULL, NULL);
    *out = x;
    return 0;
#else
    (void)m, (void)n, (void)k;
    return -1;
#endif
}

int bench_xsmm_run(const struct bench_xsmm *x, const float *a, const float *b,
                   float *c)
{
#if BENCH_HAVE_LIBXSMM
    if (x->kernel) {
        x->kernel(b, a, c);
        return 0;
    }
    const libxsmm_blasint m = x->n, n = x->m, k = x->k;
    const float alpha = 1.0f, beta = 0.0f;
    libxsmm_sgemm("N", "N", &m, &n, &k, &alpha, b, &m, a, &k, &beta, c, &m);
    return 0;
#else
    (void)x, (void)a, (void)b, (void)c;
    return -1;
#endif
}

const char *bench_xsmm_route(const struct bench_xsmm *x)
{
#if BENCH_HAVE_LIBXSMM
    return x->kernel ? "jit" : "libxsmm_sgemm";
#else
    (void)x;
    return "";
#endif
}

void bench_xsmm_free(struct bench_xsmm *x)
{
    free(x);
}
