/* kernrun: runs one kernel family's fixed workload a given number of times
 * through the public API, on whichever path the CPU and KERN_CPU_MASK
 * select, and prints the multiply-adds of one run. It is the program that
 * scripts/insn-per-mac.sh counts instructions of under qemu (a run with 0
 * repetitions gives the start-up cost to subtract), and a quick timer on a
 * board (--time).
 *
 * usage: kernrun FAMILY REPS [--time]
 *   FAMILY: sgemm (128 x 128 x 128), conv (3 x 3, 16 -> 16 channels,
 *   32 x 32, pad 1), dwconv (3 x 3, 64 channels, 32 x 32, pad 1), q8gemm
 *   (int8, 64 x 256 x 256). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "edgefit/kernels.h"

struct work {
    float *a, *b, *c, *wk;
    int8_t *qa, *qw;
    int32_t *qc;
    void *packed;
    size_t wk_bytes;
};

enum { MM = 128, CC = 16, CH = 32, DC = 64, QM = 64, QN = 256, QK = 256 };

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

static void fill(float *p, size_t n, uint32_t *s)
{
    for (size_t i = 0; i < n; i++) {
        *s = *s * 1664525u + 1013904223u;
        p[i] = (float)(*s >> 8) / 16777216.0f - 0.5f;
    }
}

static void fill_s8(int8_t *p, size_t n, uint32_t *s)
{
    for (size_t i = 0; i < n; i++) {
        *s = *s * 1664525u + 1013904223u;
        p[i] = (int8_t)((int)(*s >> 24) - 128);
    }
}

/* Allocates and fills the family's operands; returns its MACs per run, 0
 * on failure. */
static uint64_t setup(const char *fam, struct work *w)
{
    uint32_t s = 12345u;
    if (!strcmp(fam, "sgemm")) {
        w->a = malloc(MM * MM * sizeof *w->a);
        w->b = malloc(MM * MM * sizeof *w->b);
        w->c = malloc(MM * MM * sizeof *w->c);
        if (!w->a || !w->b || !w->c) {
            return 0;
        }
        fill(w->a, MM * MM, &s);
        fill(w->b, MM * MM, &s);
        return (uint64_t)MM * MM * MM;
    }
    if (!strcmp(fam, "conv")) {
        w->a = malloc(CC * CH * CH * sizeof *w->a);
        w->b = malloc(CC * CC * 9 * sizeof *w->b);
        w->c = malloc(CC * CH * CH * sizeof *w->c);
        w->wk_bytes = kern_conv2d_work_bytes(&conv_shape);
        w->wk = malloc(w->wk_bytes ? w->wk_bytes : 1);
        if (!w->a || !w->b || !w->c || !w->wk) {
            return 0;
        }
        fill(w->a, CC * CH * CH, &s);
        fill(w->b, CC * CC * 9, &s);
        return (uint64_t)CC * CC * 9 * CH * CH;
    }
    if (!strcmp(fam, "dwconv")) {
        w->a = malloc(DC * CH * CH * sizeof *w->a);
        w->b = malloc(DC * 9 * sizeof *w->b);
        w->c = malloc(DC * CH * CH * sizeof *w->c);
        if (!w->a || !w->b || !w->c) {
            return 0;
        }
        fill(w->a, DC * CH * CH, &s);
        fill(w->b, DC * 9, &s);
        return (uint64_t)DC * 9 * CH * CH;
    }
    if (!strcmp(fam, "q8gemm")) {
        const size_t pb = kern_q8_packed_bytes(QN, QK);
        w->qa = malloc(QM * QK);
        w->qw = malloc(QN * QK);
        w->qc = malloc(QM * QN * sizeof *w->qc);
        w->packed = malloc(pb);
        if (!w->qa || !w->qw || !w->qc || !w->packed) {
            return 0;
        }
        fill_s8(w->qa, QM * QK, &s);
        fill_s8(w->qw, QN * QK, &s);
        if (kern_q8_pack_weights(w->qw, QN, QK, QK, w->packed, pb) !=
            KERN_OK) {
            return 0;
        }
        return (uint64_t)QM * QN * QK;
    }
    return 0;
}

static int run(const char *fam, struct work *w)
{
    if (!strcmp(fam, "sgemm")) {
        return kern_sgemm(0, MM, MM, MM, w->a, MM, w->b, MM, w->c, MM);
    }
    if (!strcmp(fam, "conv")) {
        return kern_conv2d_f32(&conv_shape, w->a, w->b, NULL,
                               KERN_FUSE_NONE, w->wk, w->c);
    }
    if (!strcmp(fam, "dwconv")) {
        return kern_dwconv2d_f32(&dw_shape, w->a, w->b, NULL,
                                 KERN_FUSE_NONE, w->c);
    }
    return kern_q8_gemm(QM, QN, QK, w->qa, QK, w->packed, w->qc, QN);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: kernrun sgemm|conv|dwconv|q8gemm REPS "
                        "[--time]\n");
        return 2;
    }
    struct work w = {0};
    const uint64_t macs = setup(argv[1], &w);
    if (!macs) {
        fprintf(stderr, "kernrun: unknown family '%s' or out of memory\n",
                argv[1]);
        return 2;
    }
    const long reps = strtol(argv[2], NULL, 10);
    const int timed = argc > 3 && !strcmp(argv[3], "--time");
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (long r = 0; r < reps; r++) {
        const int st = run(argv[1], &w);
        if (st != KERN_OK) {
            fprintf(stderr, "kernrun: %s failed: %s\n", argv[1],
                    kern_strerror(st));
            return 1;
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    printf("family %s path %s macs_per_run %" PRIu64, argv[1],
           kern_cpu_path_name(kern_cpu_flags()), macs);
    if (timed && reps > 0) {
        const double ns = (double)(t1.tv_sec - t0.tv_sec) * 1e9 +
                          (double)(t1.tv_nsec - t0.tv_nsec);
        printf(" ns_per_run %.0f", ns / (double)reps);
    }
    printf("\n");
    free(w.a);
    free(w.b);
    free(w.c);
    free(w.wk);
    free(w.qa);
    free(w.qw);
    free(w.qc);
    free(w.packed);
    return 0;
}
