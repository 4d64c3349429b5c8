/* edgefit-bench: the selected kernel path against the C path, family by
 * family, so that a user on a board (NEON) or a PC (AVX2, AVX-512) sees
 * what the vector paths give there. A process picks its path once, so the
 * C figure comes from a child: this program again, with KERN_CPU_MASK=0
 * and --c-path-child FAMILY CALLS, which times the same workload and
 * prints nanoseconds per call. Rounds alternate between this process and a
 * child, so a drift of the machine's load hits both alike. */
#include <errno.h>
#include <math.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"
#include "cli.h"
#include "table.h"
#include "edgefit/kernels.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

extern char **environ;

enum { MM = 128, CC = 16, CH = 32, DC = 64, QM = 64, QN = 256, QK = 256,
       VN = 1 << 16, SMR = 16, SMC = 1000, LNR = 64, LNC = 256 };

/* The pools: a 3 x 3, stride 2 max pool and the average over each 8 x 8
 * plane that ends a network. */
static const struct kern_pool2d_shape maxpool_shape = {
    .batch = 1, .channels = 32, .in_h = CH, .in_w = CH, .kh = 3, .kw = 3,
    .stride_h = 2, .stride_w = 2, .pad_top = 1, .pad_left = 1,
    .pad_bottom = 1, .pad_right = 1,
};
static const struct kern_pool2d_shape gavg_shape = {
    .batch = 1, .channels = DC, .in_h = 8, .in_w = 8, .kh = 8, .kw = 8,
    .stride_h = 1, .stride_w = 1,
};

static const struct kern_conv2d_shape conv_shape = {
    .batch = 1, .in_c = CC, .in_h = CH, .in_w = CH, .out_c = CC,
    .kh = 3, .kw = 3, .stride_h = 1, .stride_w = 1,
    .pad_top = 1, .pad_left = 1, .pad_bottom = 1, .pad_right = 1,
    .groups = 1,
};

static const struct kern_dwconv2d_shape dw_shape = {
    .batch = 1, .channels = DC, .in_h = CH, .in_w = CH,
    .kh = 3, .kw = 3, .stride_h = 1, .stride_w = 1,
    .pad_top = 1, .pad_left = 1, .pad_bottom = 1, .pad_right = 1,
};

static const struct {
    const char *family;
    const char *shape;
} families[] = {
    {"sgemm", "128x128x128"},
    {"conv", "16x32x32>16 k3x3 s1 p1:1:1:1"},
    {"dwconv", "64x32x32>64 k3x3 s1 p1:1:1:1 dw"},
    {"int8_gemm", "64x256x256"},
    {"gelu", "65536"},
    {"f32_to_f16", "65536"},
    {"maxpool", "32x32x32 k3x3 s2 p1:1:1:1"},
    {"avgpool", "64x8x8 k8x8 s1"},
    {"softmax", "16x1000"},
    {"layernorm", "64x256"},
    {"int8_requant", "64x256"},
    {"int8_dwconv", "64x32x32>64 k3x3 s1 p1:1:1:1 dw"},
};

struct work {
    int fam;
    float *a, *b, *c;
    void *wk;
    int8_t *qa;
    int32_t *qc;
    void *packed;
    uint16_t *h;
    int32_t *mult;
    int *shift;
};

static void work_free(struct work *w)
{
    free(w->a);
    free(w->b);
    free(w->c);
    free(w->wk);
    free(w->qa);
    free(w->qc);
    free(w->packed);
    free(w->h);
    free(w->mult);
    free(w->shift);
    *w = (struct work){0};
}

/* Operands of family f, filled with fixed data; false when out of memory
 * or the weights cannot be packed. */
static bool work_init(int f, struct work *w)
{
    *w = (struct work){.fam = f};
    struct bench_rng r;
    bench_rng_seed(&r, 23);
    size_t na = 0, nb = 0, nc = 0;
    switch (f) {
    case 0:
        na = nb = nc = (size_t)MM * MM;
        break;
    case 1:
        na = nc = (size_t)CC * CH * CH;
        nb = (size_t)CC * CC * 9;
        w->wk = bench_alloc(kern_conv2d_work_bytes(&conv_shape) + 1, 1);
        if (!w->wk) {
            return false;
        }
        break;
    case 2:
        na = nc = (size_t)DC * CH * CH;
        nb = (size_t)DC * 9;
        break;
    case 3: {
        const size_t pb = kern_q8_packed_bytes(QN, QK);
        int8_t *wq = bench_alloc((size_t)QN * QK, 1);
        w->qa = bench_alloc((size_t)QM * QK, 1);
        w->qc = bench_alloc((size_t)QM * QN, sizeof *w->qc);
        w->packed = bench_alloc(pb, 1);
        bool ok = wq && w->qa && w->qc && w->packed;
        for (size_t i = 0; ok && i < (size_t)QN * QK; i++) {
            wq[i] = (int8_t)(bench_rng_next(&r) % 255u) - 127;
        }
        for (size_t i = 0; ok && i < (size_t)QM * QK; i++) {
            w->qa[i] = (int8_t)(bench_rng_next(&r) % 255u) - 127;
        }
        ok = ok && kern_q8_pack_weights(wq, QN, QK, QK, w->packed, pb) ==
                       KERN_OK;
        free(wq);
        return ok;
    }
    case 4:
        na = nc = VN;
        break;
    case 5:
        na = VN;
        w->h = bench_alloc(VN, sizeof *w->h);
        if (!w->h) {
            return false;
        }
        break;
    case 6:
        na = nc = (size_t)32 * CH * CH;
        break;
    case 7:
        na = nc = (size_t)DC * 8 * 8;
        break;
    case 8:
        na = nc = (size_t)SMR * SMC;
        break;
    case 9:
        na = nc = (size_t)LNR * LNC;
        break;
    case 10: {
        /* the integer output stage of a layer: int32 sums to int8, one
         * multiplier and shift per channel */
        w->qc = bench_alloc((size_t)QM * QN, sizeof *w->qc);
        w->qa = bench_alloc((size_t)QM * QN, 1);
        w->mult = bench_alloc(QN, sizeof *w->mult);
        w->shift = bench_alloc(QN, sizeof *w->shift);
        bool ok = w->qc && w->qa && w->mult && w->shift;
        for (size_t i = 0; ok && i < (size_t)QM * QN; i++) {
            w->qc[i] = (int32_t)(bench_rng_next(&r) % 2000001u) - 1000000;
        }
        for (size_t j = 0; ok && j < QN; j++) {
            ok = kern_q8_quantize_multiplier(0.0001 * (1.0 + (double)j / QN),
                                             &w->mult[j], &w->shift[j]) ==
                 KERN_OK;
        }
        return ok;
    }
    case 11: {
        /* a static int8 depthwise layer: dwconv's shape, one multiplier
         * and shift per channel */
        w->qa = bench_alloc((size_t)DC * CH * CH, 2);
        w->packed = bench_alloc((size_t)DC * 9, 1);
        w->mult = bench_alloc(DC, sizeof *w->mult);
        w->shift = bench_alloc(DC, sizeof *w->shift);
        w->wk = bench_alloc(kern_q8_dwconv2d_work_bytes(&dw_shape) + 1, 1);
        bool ok = w->qa && w->packed && w->mult && w->shift && w->wk;
        int8_t *wq = w->packed;
        for (size_t i = 0; ok && i < (size_t)DC * CH * CH; i++) {
            w->qa[i] = (int8_t)(bench_rng_next(&r) % 256u) - 128;
        }
        for (size_t i = 0; ok && i < (size_t)DC * 9; i++) {
            wq[i] = (int8_t)(bench_rng_next(&r) % 255u) - 127;
        }
        for (size_t j = 0; ok && j < DC; j++) {
            ok = kern_q8_quantize_multiplier(0.002 * (1.0 + (double)j / DC),
                                             &w->mult[j], &w->shift[j]) ==
                 KERN_OK;
        }
        return ok;
    }
    }
    w->a = bench_alloc(na, sizeof *w->a);
    w->b = nb ? bench_alloc(nb, sizeof *w->b) : NULL;
    w->c = nc ? bench_alloc(nc, sizeof *w->c) : NULL;
    if (!w->a || (nb && !w->b) || (nc && !w->c)) {
        return false;
    }
    for (size_t i = 0; i < na; i++) {
        w->a[i] = bench_rng_uniform(&r, -3.0f, 3.0f);
    }
    for (size_t i = 0; i < nb; i++) {
        w->b[i] = bench_rng_uniform(&r, -0.5f, 0.5f);
    }
    return true;
}

static int work_call(void *ctx)
{
    struct work *w = ctx;
    switch (w->fam) {
    case 0:
        return kern_sgemm(0, MM, MM, MM, w->a, MM, w->b, MM, w->c, MM);
    case 1:
        return kern_conv2d_f32(&conv_shape, w->a, w->b, NULL,
                               KERN_FUSE_NONE, w->wk, w->c);
    case 2:
        return kern_dwconv2d_f32(&dw_shape, w->a, w->b, NULL,
                                 KERN_FUSE_NONE, w->c);
    case 3:
        return kern_q8_gemm(QM, QN, QK, w->qa, QK, w->packed, w->qc, QN);
    case 4:
        return kern_gelu_f32(w->c, w->a, VN);
    case 5:
        return kern_f32_to_f16(w->h, w->a, VN);
    case 6:
        return kern_maxpool2d_f32(&maxpool_shape, w->a, w->c);
    case 7:
        return kern_avgpool2d_f32(&gavg_shape, w->a, w->c);
    case 8:
        return kern_nn_softmax_f32(w->a, SMR, SMC, w->c);
    case 9:
        return kern_layernorm_f32(w->a, LNR, LNC, NULL, NULL, 1e-5f, w->c);
    case 10: {
        const struct kern_q8_outstage os = {
            .mult = w->mult, .shift = w->shift, .per_channel = 1,
            .zero_point = -3, .qmin = -128, .qmax = 127};
        return kern_q8_requantize_s8(QM, QN, w->qc, QN, &os, w->qa, QN);
    }
    case 11: {
        /* the input's first half, the output its second */
        const struct kern_q8_outstage os = {
            .mult = w->mult, .shift = w->shift, .per_channel = 1,
            .zero_point = 2, .qmin = -128, .qmax = 127};
        return kern_q8_dwconv2d_s8(&dw_shape, w->qa, -5, w->packed, &os,
                                   w->wk, w->qa + (size_t)DC * CH * CH);
    }
    }
    return KERN_E_INVALID;
}

/* Nanoseconds per call over `calls` calls, NAN when a call fails. */
static double time_calls(struct work *w, uint64_t calls)
{
    const uint64_t t0 = bench_now_ns();
    for (uint64_t i = 0; i < calls; i++) {
        if (work_call(w) != KERN_OK) {
            return NAN;
        }
    }
    return (double)(bench_now_ns() - t0) / (double)calls;
}

int bench_c_path_child(const char *family, const char *calls_text)
{
    int f = -1;
    for (size_t i = 0; i < COUNT(families); i++) {
        if (strcmp(families[i].family, family) == 0) {
            f = (int)i;
        }
    }
    char *end = NULL;
    const unsigned long long calls = strtoull(calls_text, &end, 10);
    if (f < 0 || !end || *end || calls == 0 || calls > 1000000000ull) {
        fprintf(stderr, "edgefit-bench: --c-path-child: bad family '%s' "
                        "or call count '%s'\n", family, calls_text);
        return CLI_EXIT_USAGE;
    }
    struct work w;
    if (!work_init(f, &w)) {
        work_free(&w);
        fprintf(stderr, "edgefit-bench: out of memory for the %s "
                        "operands\n", family);
        return CLI_EXIT_FAILURE;
    }
    double ns = time_calls(&w, 1); /* warm-up: first-call costs */
    if (!isnan(ns)) {
        ns = time_calls(&w, calls);
    }
    work_free(&w);
    if (isnan(ns)) {
        fprintf(stderr, "edgefit-bench: %s failed\n", family);
        return CLI_EXIT_FAILURE;
    }
    printf("%.1f\n", ns);
    return CLI_EXIT_OK;
}

/* One sample of the C path: a child on `calls` calls; NAN on failure. */
static double c_sample(int f, uint64_t calls)
{
    int fd[2];
    if (pipe(fd) != 0) {
        return NAN;
    }
    char calls_text[32];
    snprintf(calls_text, sizeof calls_text, "%llu",
             (unsigned long long)calls);
    char *argv[] = {"edgefit-bench", "--c-path-child",
                    (char *)families[f].family, calls_text, NULL};
    /* The environment with KERN_CPU_MASK=0 in place of any other mask. */
    size_t n = 0;
    while (environ[n]) {
        n++;
    }
    char **env = calloc(n + 2, sizeof *env);
    if (!env) {
        close(fd[0]);
        close(fd[1]);
        return NAN;
    }
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (strncmp(environ[i], "KERN_CPU_MASK=", 14) != 0) {
            env[k++] = environ[i];
        }
    }
    env[k++] = "KERN_CPU_MASK=0";
    env[k] = NULL;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fd[1], STDOUT_FILENO);
    posix_spawn_file_actions_addclose(&fa, fd[0]);
    /* The program's own path, read rather than exec'd as /proc/self/exe:
     * under qemu-user that link names the emulator, whose readlink the
     * emulator answers with the program. */
    char self[4096];
    const ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    self[len > 0 ? len : 0] = '\0';
    pid_t pid;
    const int st = len > 0 ? posix_spawn(&pid, self, &fa, NULL, argv, env)
                           : ENOENT;
    posix_spawn_file_actions_destroy(&fa);
    free(env);
    close(fd[1]);
    double ns = NAN;
    if (st == 0) {
        char buf[64] = {0};
        size_t got = 0;
        ssize_t r;
        while (got < sizeof buf - 1 &&
               ((r = read(fd[0], buf + got, sizeof buf - 1 - got)) > 0 ||
                (r < 0 && errno == EINTR))) {
            got += r > 0 ? (size_t)r : 0;
        }
        int status = 0;
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
        }
        if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
            ns = strtod(buf, NULL);
        }
    }
    close(fd[0]);
    return ns;
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, unsigned n)
{
    qsort(v, n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

int bench_table_paths(const struct bench_cfg *cfg,
                      const struct bench_host *h, art_table **out)
{
    (void)h;
    static const struct bench_col cols[] = {
        {"family", ART_TEXT},     {"shape", ART_TEXT},
        {"kernel_path", ART_TEXT}, {"path_latency_ms", ART_REAL},
        {"c_latency_ms", ART_REAL}, {"speedup_vs_c", ART_REAL},
    };
    art_table *t = NULL;
    int st = bench_table_new("bench_paths", cols, COUNT(cols), &t);
    const char *path = kern_cpu_path_name(kern_cpu_flags());
    for (size_t f = 0; st == ART_OK && f < COUNT(families); f++) {
        bench_progress(cfg, "paths: %s, %s against c", families[f].family,
                       path);
        struct work w;
        if (!work_init((int)f, &w)) {
            work_free(&w);
            art_table_destroy(t);
            *out = NULL;
            return bench_kern_failed(families[f].family, KERN_E_NOMEM);
        }
        /* Calls per sample: as many as last sample_ms on the vector path
         * (the C path's sample is then longer, by the speedup). */
        double one = time_calls(&w, 1);
        one = isnan(one) ? one : time_calls(&w, 1);
        if (isnan(one)) {
            work_free(&w);
            art_table_destroy(t);
            *out = NULL;
            return bench_kern_failed(families[f].family, KERN_E_INVALID);
        }
        uint64_t calls = (uint64_t)(cfg->sample_ms * 1e6 / (one + 1.0));
        calls = calls < 1 ? 1 : calls > 100000 ? 100000 : calls;
        double pv[1000], cv[1000];
        const unsigned rounds = cfg->repeats < 1000 ? cfg->repeats : 1000;
        bool ok = true;
        for (unsigned r = 0; ok && r < rounds; r++) {
            pv[r] = time_calls(&w, calls);
            cv[r] = c_sample((int)f, calls);
            ok = !isnan(pv[r]) && !isnan(cv[r]);
        }
        work_free(&w);
        if (!ok) {
            cli_error("bench paths: the %s sample on the C path (a child "
                      "run with KERN_CPU_MASK=0) failed",
                      families[f].family);
            art_table_destroy(t);
            *out = NULL;
            return CLI_EXIT_FAILURE;
        }
        const double p_ms = median(pv, rounds) / 1e6;
        const double c_ms = median(cv, rounds) / 1e6;
        size_t row = 0;
        st = art_table_add_row(t, &row);
        if (st == ART_OK) {
            st = bench_set_text(t, row, "family", families[f].family);
        }
        if (st == ART_OK) {
            st = bench_set_text(t, row, "shape", families[f].shape);
        }
        if (st == ART_OK) {
            st = bench_set_text(t, row, "kernel_path", path);
        }
        if (st == ART_OK) {
            st = bench_set_real(t, row, "path_latency_ms", cli_round4(p_ms));
        }
        if (st == ART_OK) {
            st = bench_set_real(t, row, "c_latency_ms", cli_round4(c_ms));
        }
        if (st == ART_OK) {
            st = bench_set_real(t, row, "speedup_vs_c",
                                cli_round4(c_ms / p_ms));
        }
    }
    bench_progress_done(cfg);
    if (st != ART_OK) {
        art_table_destroy(t);
        *out = NULL;
        return bench_art_failed("paths table", st);
    }
    *out = t;
    return CLI_EXIT_OK;
}
