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
 *   (int8, 64 x 256 x 256); and the families whose unit is not a
 *   multiply-add but an element read (a window cell of a pool, a value of
 *   the others), printed as macs_per_run all the same: maxpool (3 x 3,
 *   stride 2, pad 1, 32 channels of 32 x 32), maxpool2 (2 x 2, stride 2),
 *   avgpool (3 x 3, stride 1, pad 1), gavgpool (one 8 x 8 window per plane,
 *   the pool that ends a network, 64 planes), softmax (16 rows of 1000),
 *   layernorm (64 rows of 256), layout (NCHW to NCHW8c, 30 channels of
 *   32 x 32), q8requant (the integer output stage, 64 x 256), q8quant
 *   (16384 values), q8add (16384 values), q8maxpool (int8 3 x 3, stride 2,
 *   pad 1, 32 channels of 32 x 32), q8im2col (the int8 lowering of conv's
 *   3 x 3 shape, per byte written) and q8im2col1 (of a 1 x 1 convolution
 *   of 64 channels of 32 x 32: a byte transpose), dwconv8c (dwconv's
 *   shape on NCHW8c activations and packed weights), dwconv8cdil (the same
 *   with dilation 2 and pad 2), q8dwconv (dwconv's shape in static int8,
 *   per-channel output stage), maxpool8c and avgpool8c (maxpool's and
 *   avgpool's shapes on NCHW8c: 4 whole blocks). The depthwise families count 9 multiply-
 *   adds per output, the padded taps included. */
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
    int32_t *qmult;
    int *qshift;
    struct kern_q8_outstage os;
    struct kern_q8_add_params addp;
    size_t wk_bytes;
};

enum { MM = 128, CC = 16, CH = 32, DC = 64, QM = 64, QN = 256, QK = 256 };
enum { PC = 32, SMR = 16, SMC = 1000, LNR = 64, LNC = 256, LC = 30,
       QE = 16384 };

static const struct kern_pool2d_shape pool_shapes[] = {
    /* maxpool, q8maxpool: 3 x 3 stride 2 pad 1 */
    {.batch = 1, .channels = PC, .in_h = CH, .in_w = CH, .kh = 3, .kw = 3,
     .stride_h = 2, .stride_w = 2, .pad_top = 1, .pad_left = 1,
     .pad_bottom = 1, .pad_right = 1},
    /* maxpool2: 2 x 2 stride 2 */
    {.batch = 1, .channels = PC, .in_h = CH, .in_w = CH, .kh = 2, .kw = 2,
     .stride_h = 2, .stride_w = 2},
    /* avgpool: 3 x 3 stride 1 pad 1, real cells only */
    {.batch = 1, .channels = PC, .in_h = CH, .in_w = CH, .kh = 3, .kw = 3,
     .stride_h = 1, .stride_w = 1, .pad_top = 1, .pad_left = 1,
     .pad_bottom = 1, .pad_right = 1},
    /* gavgpool: one window over each 8 x 8 plane */
    {.batch = 1, .channels = 64, .in_h = 8, .in_w = 8, .kh = 8, .kw = 8,
     .stride_h = 1, .stride_w = 1},
};

/* The pooling families' shape, or NULL. */
static const struct kern_pool2d_shape *pool_shape(const char *fam)
{
    const char *names[] = {"maxpool", "maxpool2", "avgpool", "gavgpool"};
    for (size_t i = 0; i < 4; i++) {
        if (!strcmp(fam, names[i])) {
            return &pool_shapes[i];
        }
    }
    if (!strcmp(fam, "avgpool8c")) {
        return &pool_shapes[2];
    }
    return !strcmp(fam, "q8maxpool") || !strcmp(fam, "maxpool8c")
               ? &pool_shapes[0]
               : NULL;
}

/* Window cells a pooling reads (padding excluded): the family's unit. */
static uint64_t pool_cells(const struct kern_pool2d_shape *s)
{
    size_t oh, ow;
    if (kern_pool2d_out_hw(s, &oh, &ow) != KERN_OK) {
        return 0;
    }
    uint64_t cells = 0;
    for (size_t oy = 0; oy < oh; oy++) {
        for (size_t ky = 0; ky < s->kh; ky++) {
            const size_t iy = oy * s->stride_h + ky;
            if (iy < s->pad_top || iy - s->pad_top >= s->in_h) {
                continue;
            }
            for (size_t ox = 0; ox < ow; ox++) {
                for (size_t kx = 0; kx < s->kw; kx++) {
                    const size_t ix = ox * s->stride_w + kx;
                    cells += ix >= s->pad_left && ix - s->pad_left < s->in_w;
                }
            }
        }
    }
    return cells * s->batch * s->channels;
}

static const struct kern_conv2d_shape conv_shape = {
    .batch = 1, .in_c = CC, .in_h = CH, .in_w = CH, .out_c = CC,
    .kh = 3, .kw = 3, .stride_h = 1, .stride_w = 1,
    .pad_top = 1, .pad_left = 1, .pad_bottom = 1, .pad_right = 1,
    .groups = 1,
};

static const struct kern_conv2d_shape pw_shape = {
    .batch = 1, .in_c = DC, .in_h = CH, .in_w = CH, .out_c = DC,
    .kh = 1, .kw = 1, .stride_h = 1, .stride_w = 1, .groups = 1,
};

static const struct kern_dwconv2d_shape dw_shape = {
    .batch = 1, .channels = DC, .in_h = CH, .in_w = CH,
    .kh = 3, .kw = 3, .stride_h = 1, .stride_w = 1,
    .pad_top = 1, .pad_left = 1, .pad_bottom = 1, .pad_right = 1,
};

static const struct kern_dwconv2d_shape dw_dil_shape = {
    .batch = 1, .channels = DC, .in_h = CH, .in_w = CH,
    .kh = 3, .kw = 3, .stride_h = 1, .stride_w = 1,
    .pad_top = 2, .pad_left = 2, .pad_bottom = 2, .pad_right = 2,
    .dilation_h = 2, .dilation_w = 2,
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
    if (!strcmp(fam, "q8dwconv")) {
        w->qa = malloc(DC * CH * CH);
        w->qw = malloc(DC * 9);
        w->qc = malloc(DC * CH * CH);
        w->qmult = malloc(DC * sizeof *w->qmult);
        w->qshift = malloc(DC * sizeof *w->qshift);
        w->wk_bytes = kern_q8_dwconv2d_work_bytes(&dw_shape);
        w->wk = malloc(w->wk_bytes ? w->wk_bytes : 1);
        if (!w->qa || !w->qw || !w->qc || !w->qmult || !w->qshift ||
            !w->wk) {
            return 0;
        }
        fill_s8(w->qa, DC * CH * CH, &s);
        fill_s8(w->qw, DC * 9, &s);
        for (size_t j = 0; j < DC; j++) {
            if (kern_q8_quantize_multiplier(0.002 + 1e-5 * (double)j,
                                            &w->qmult[j], &w->qshift[j]) !=
                KERN_OK) {
                return 0;
            }
        }
        w->os = (struct kern_q8_outstage){
            .mult = w->qmult, .shift = w->qshift, .per_channel = 1,
            .zero_point = 4, .qmin = -128, .qmax = 127};
        return (uint64_t)DC * 9 * CH * CH;
    }
    if (!strcmp(fam, "dwconv8c") || !strcmp(fam, "dwconv8cdil")) {
        w->a = malloc(DC * CH * CH * sizeof *w->a);
        w->b = malloc(DC * 9 * sizeof *w->b);
        w->c = malloc(DC * CH * CH * sizeof *w->c);
        w->packed = malloc(kern_dwconv2d_packed_bytes(&dw_shape));
        if (!w->a || !w->b || !w->c || !w->packed) {
            return 0;
        }
        fill(w->a, DC * CH * CH, &s); /* 64 channels: no padding lanes */
        fill(w->b, DC * 9, &s);
        if (kern_dwconv2d_pack_f32(&dw_shape, w->b, w->packed) != KERN_OK) {
            return 0;
        }
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
    const struct kern_pool2d_shape *ps = pool_shape(fam);
    if (ps) {
        const size_t n = ps->batch * ps->channels * ps->in_h * ps->in_w;
        w->a = malloc(n * sizeof *w->a);
        w->c = malloc(n * sizeof *w->c);
        w->qa = malloc(n);
        w->qw = malloc(n);
        w->wk_bytes = kern_q8_maxpool2d_work_bytes(ps);
        w->wk = malloc(w->wk_bytes ? w->wk_bytes : 1);
        if (!w->a || !w->c || !w->qa || !w->qw || !w->wk) {
            return 0;
        }
        fill(w->a, n, &s);
        fill_s8(w->qa, n, &s);
        return pool_cells(ps);
    }
    if (!strcmp(fam, "softmax") || !strcmp(fam, "layernorm") ||
        !strcmp(fam, "layout")) {
        const size_t n = !strcmp(fam, "softmax")     ? SMR * SMC
                         : !strcmp(fam, "layernorm") ? LNR * LNC
                                                     : LC * CH * CH;
        w->a = malloc(n * sizeof *w->a);
        /* the layout's output rounds the channels up to 32 */
        w->c = malloc((n + 2 * CH * CH) * sizeof *w->c);
        if (!w->a || !w->c) {
            return 0;
        }
        fill(w->a, n, &s);
        return n;
    }
    if (!strcmp(fam, "q8requant")) {
        w->qc = malloc(QM * QN * sizeof *w->qc);
        w->qa = malloc(QM * QN);
        w->qmult = malloc(QN * sizeof *w->qmult);
        w->qshift = malloc(QN * sizeof *w->qshift);
        if (!w->qc || !w->qa || !w->qmult || !w->qshift) {
            return 0;
        }
        for (size_t i = 0; i < QM * QN; i++) {
            s = s * 1664525u + 1013904223u;
            w->qc[i] = (int32_t)(s >> 12) - (1 << 19);
        }
        for (size_t j = 0; j < QN; j++) {
            if (kern_q8_quantize_multiplier(0.0007 + 1e-6 * (double)j,
                                            &w->qmult[j], &w->qshift[j]) !=
                KERN_OK) {
                return 0;
            }
        }
        w->os = (struct kern_q8_outstage){
            .mult = w->qmult, .shift = w->qshift, .per_channel = 1,
            .zero_point = -3, .qmin = -128, .qmax = 127};
        return (uint64_t)QM * QN;
    }
    if (!strcmp(fam, "q8im2col") || !strcmp(fam, "q8im2col1")) {
        const bool one = !strcmp(fam, "q8im2col1");
        const size_t c = one ? DC : CC, k = one ? 1 : 9;
        w->qa = malloc(c * CH * CH);
        w->qw = malloc(c * k * CH * CH);
        if (!w->qa || !w->qw) {
            return 0;
        }
        fill_s8(w->qa, c * CH * CH, &s);
        return (uint64_t)c * k * CH * CH;
    }
    if (!strcmp(fam, "q8quant") || !strcmp(fam, "q8add")) {
        w->a = malloc(QE * sizeof *w->a);
        w->qa = malloc(QE);
        w->qw = malloc(QE);
        w->qc = malloc(QE);
        if (!w->a || !w->qa || !w->qw || !w->qc) {
            return 0;
        }
        fill(w->a, QE, &s);
        fill_s8(w->qa, QE, &s);
        fill_s8(w->qw, QE, &s);
        if (kern_q8_add_params_init(0.02f, 3, 0.03f, -5, 0.04f, 1, -128, 127,
                                    &w->addp) != KERN_OK) {
            return 0;
        }
        return QE;
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
    if (!strcmp(fam, "dwconv8c") || !strcmp(fam, "dwconv8cdil")) {
        return kern_dwconv2d_nchw8c_f32(strcmp(fam, "dwconv8c")
                                            ? &dw_dil_shape
                                            : &dw_shape,
                                        w->a, w->packed, NULL,
                                        KERN_FUSE_NONE, w->c);
    }
    if (!strcmp(fam, "q8dwconv")) {
        return kern_q8_dwconv2d_s8(&dw_shape, w->qa, -3, w->qw, &w->os,
                                   w->wk, (int8_t *)w->qc);
    }
    const struct kern_pool2d_shape *ps = pool_shape(fam);
    if (!strcmp(fam, "q8maxpool")) {
        return kern_q8_maxpool2d_s8(ps, w->qa, w->wk, w->qw);
    }
    if (ps && strstr(fam, "8c")) {
        return strstr(fam, "max") ? kern_maxpool2d_blocked_f32(ps, w->a, w->c)
                                  : kern_avgpool2d_blocked_f32(ps, w->a, w->c);
    }
    if (ps) {
        return strstr(fam, "max") ? kern_maxpool2d_f32(ps, w->a, w->c)
                                  : kern_avgpool2d_f32(ps, w->a, w->c);
    }
    if (!strcmp(fam, "softmax")) {
        return kern_nn_softmax_f32(w->a, SMR, SMC, w->c);
    }
    if (!strcmp(fam, "layernorm")) {
        return kern_layernorm_f32(w->a, LNR, LNC, NULL, NULL, 1e-5f, w->c);
    }
    if (!strcmp(fam, "layout")) {
        return kern_nchw_to_nchw8c_f32(1, LC, CH * CH, w->a, w->c);
    }
    if (!strcmp(fam, "q8requant")) {
        return kern_q8_requantize_s8(QM, QN, w->qc, QN, &w->os, w->qa, QN);
    }
    if (!strcmp(fam, "q8im2col") || !strcmp(fam, "q8im2col1")) {
        return kern_im2col_s8(strcmp(fam, "q8im2col") ? &pw_shape
                                                      : &conv_shape,
                              w->qa, 0, 0, w->qw);
    }
    if (!strcmp(fam, "q8quant")) {
        return kern_q8_quantize_zp_f32(w->a, QE, 0.01f, 2, w->qa);
    }
    if (!strcmp(fam, "q8add")) {
        return kern_q8_add_s8(QE, w->qa, w->qw, &w->addp, (int8_t *)w->qc);
    }
    return kern_q8_gemm(QM, QN, QK, w->qa, QK, w->packed, w->qc, QN);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: kernrun FAMILY REPS [--time] (FAMILY: "
                        "sgemm conv dwconv q8gemm maxpool maxpool2 avgpool "
                        "gavgpool softmax layernorm layout q8requant "
                        "q8quant q8add q8maxpool q8im2col q8im2col1 "
                        "dwconv8c dwconv8cdil q8dwconv maxpool8c "
                        "avgpool8c)\n");
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
    free(w.qmult);
    free(w.qshift);
    return 0;
}
