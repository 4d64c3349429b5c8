/* edgefit-bench: the convolution table. Every distinct convolution of the
 * three MLPerf Tiny models that have them (the fourth, the autoencoder, is
 * dense), as libmemest's presets declare them, at batch 1 on one thread:
 * edgefit's convolution in its two activation layouts, side by side with
 * oneDNN and XNNPACK in their own layouts (their weights and activations
 * reordered outside the timed region), each checked against edgefit's
 * NCHW output; then one row per model with the sum over its convolutions
 * (each shape's median times its count).
 *
 * edgefit runs as its executor does: bias and relu fused, its scratch
 * given, weights packed once by kern_conv2d_pack_f32 outside the timed
 * region; depthwise layers take kern_conv2d_f32's direct kernel. Once in
 * NCHW, once with kern_conv2d_packed_layout_f32 on NCHW8c wherever a
 * side's channel count is a multiple of 8 (the executor keeps chains of
 * such layers blocked; a 3-channel image stays NCHW), depthwise layers
 * with kern_dwconv2d_nchw8c_f32 on their filters packed by
 * kern_dwconv2d_pack_f32, its output required to be the NCHW run's bits.
 * edgefit_to_best takes the faster of the two, the layout the executor
 * would pick. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "cli.h"
#include "table.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

struct conv_case {
    const char *model;
    const char *layers; /* the presets' layer names */
    unsigned count;
    struct kern_conv2d_shape s; /* batch 1 */
};

/* {batch, in_c, in_h, in_w, out_c, kh, kw, stride_h, stride_w, pad_top,
 *  pad_left, pad_bottom, pad_right, groups}; stride-2 layers pad as
 * TensorFlow's "same" does (the extra row and column at the bottom and
 * right), as the reference models were trained. */
#define SH(ic, h, w, oc, kh, kw, st, pt, pl, pb, pr, g)                      \
    {1, ic, h, w, oc, kh, kw, st, st, pt, pl, pb, pr, g, 1, 1}
static const struct conv_case cases_full[] = {
    {"resnet8", "conv1", 1, SH(3, 32, 32, 16, 3, 3, 1, 1, 1, 1, 1, 1)},
    {"resnet8", "s1_conv1,s1_conv2", 2,
     SH(16, 32, 32, 16, 3, 3, 1, 1, 1, 1, 1, 1)},
    {"resnet8", "s2_conv1", 1, SH(16, 32, 32, 32, 3, 3, 2, 0, 0, 1, 1, 1)},
    {"resnet8", "s2_conv2", 1, SH(32, 16, 16, 32, 3, 3, 1, 1, 1, 1, 1, 1)},
    {"resnet8", "s2_short", 1, SH(16, 32, 32, 32, 1, 1, 2, 0, 0, 0, 0, 1)},
    {"resnet8", "s3_conv1", 1, SH(32, 16, 16, 64, 3, 3, 2, 0, 0, 1, 1, 1)},
    {"resnet8", "s3_conv2", 1, SH(64, 8, 8, 64, 3, 3, 1, 1, 1, 1, 1, 1)},
    {"resnet8", "s3_short", 1, SH(32, 16, 16, 64, 1, 1, 2, 0, 0, 0, 0, 1)},
    {"ds-cnn", "conv1", 1, SH(1, 49, 10, 64, 10, 4, 2, 4, 1, 5, 1, 1)},
    {"ds-cnn", "dw1..dw4", 4, SH(64, 25, 5, 64, 3, 3, 1, 1, 1, 1, 1, 64)},
    {"ds-cnn", "pw1..pw4", 4, SH(64, 25, 5, 64, 1, 1, 1, 0, 0, 0, 0, 1)},
    {"mobilenetv1-0.25", "conv1", 1,
     SH(3, 96, 96, 8, 3, 3, 2, 0, 0, 1, 1, 1)},
    {"mobilenetv1-0.25", "dw1", 1, SH(8, 48, 48, 8, 3, 3, 1, 1, 1, 1, 1, 8)},
    {"mobilenetv1-0.25", "pw1", 1, SH(8, 48, 48, 16, 1, 1, 1, 0, 0, 0, 0, 1)},
    {"mobilenetv1-0.25", "dw2", 1,
     SH(16, 48, 48, 16, 3, 3, 2, 0, 0, 1, 1, 16)},
    {"mobilenetv1-0.25", "pw2", 1,
     SH(16, 24, 24, 32, 1, 1, 1, 0, 0, 0, 0, 1)},
    {"mobilenetv1-0.25", "dw3", 1,
     SH(32, 24, 24, 32, 3, 3, 1, 1, 1, 1, 1, 32)},
    {"mobilenetv1-0.25", "pw3", 1,
     SH(32, 24, 24, 32, 1, 1, 1, 0, 0, 0, 0, 1)},
    {"mobilenetv1-0.25", "dw4", 1,
     SH(32, 24, 24, 32, 3, 3, 2, 0, 0, 1, 1, 32)},
    {"mobilenetv1-0.25", "pw4", 1,
     SH(32, 12, 12, 64, 1, 1, 1, 0, 0, 0, 0, 1)},
    {"mobilenetv1-0.25", "dw5", 1,
     SH(64, 12, 12, 64, 3, 3, 1, 1, 1, 1, 1, 64)},
    {"mobilenetv1-0.25", "pw5", 1,
     SH(64, 12, 12, 64, 1, 1, 1, 0, 0, 0, 0, 1)},
    {"mobilenetv1-0.25", "dw6", 1,
     SH(64, 12, 12, 64, 3, 3, 2, 0, 0, 1, 1, 64)},
    {"mobilenetv1-0.25", "pw6", 1,
     SH(64, 6, 6, 128, 1, 1, 1, 0, 0, 0, 0, 1)},
    {"mobilenetv1-0.25", "dw7..dw11", 5,
     SH(128, 6, 6, 128, 3, 3, 1, 1, 1, 1, 1, 128)},
    {"mobilenetv1-0.25", "pw7..pw11", 5,
     SH(128, 6, 6, 128, 1, 1, 1, 0, 0, 0, 0, 1)},
    {"mobilenetv1-0.25", "dw12", 1,
     SH(128, 6, 6, 128, 3, 3, 2, 0, 0, 1, 1, 128)},
    {"mobilenetv1-0.25", "pw12", 1,
     SH(128, 3, 3, 256, 1, 1, 1, 0, 0, 0, 0, 1)},
    {"mobilenetv1-0.25", "dw13", 1,
     SH(256, 3, 3, 256, 3, 3, 1, 1, 1, 1, 1, 256)},
    {"mobilenetv1-0.25", "pw13", 1,
     SH(256, 3, 3, 256, 1, 1, 1, 0, 0, 0, 0, 1)},
};
static const struct conv_case cases_quick[] = {
    {"resnet8", "s1_conv1,s1_conv2", 2,
     SH(16, 32, 32, 16, 3, 3, 1, 1, 1, 1, 1, 1)},
    {"ds-cnn", "conv1", 1, SH(1, 49, 10, 64, 10, 4, 2, 4, 1, 5, 1, 1)},
    {"ds-cnn", "dw1..dw4", 4, SH(64, 25, 5, 64, 3, 3, 1, 1, 1, 1, 1, 64)},
    {"ds-cnn", "pw1..pw4", 4, SH(64, 25, 5, 64, 1, 1, 1, 0, 0, 0, 0, 1)},
};
#undef SH

enum { LIB_EDGEFIT, LIB_EDGEFIT_NCHW8C, LIB_ONEDNN, LIB_XNNPACK, NLIB };
static const char *const lib_name[NLIB] = {"edgefit", "edgefit_nchw8c",
                                           "onednn", "xnnpack"};

struct conv_ctx {
    const struct kern_conv2d_shape *s;
    const float *x, *w, *b;
    const float *wp; /* packed weights, NULL for depthwise */
    /* depthwise: the shape and filters of kern_dwconv2d_nchw8c_f32 */
    struct kern_dwconv2d_shape ds;
    const float *dwp;
    void *work;
    float *y;
    /* the blocked run: its layouts, x in in_layout, its own y */
    int in_layout, out_layout;
    const float *xl;
    float *yl;
    struct bench_onednn_conv *dnnl;
    struct bench_xnn_conv *xnn;
};

static int run_edgefit(void *p)
{
    struct conv_ctx *c = p;
    if (c->wp) {
        return kern_conv2d_packed_f32(c->s, c->x, c->wp, c->b,
                                      KERN_FUSE_RELU, c->work,
                                      c->y) != KERN_OK;
    }
    return kern_conv2d_f32(c->s, c->x, c->w, c->b, KERN_FUSE_RELU, c->work,
                           c->y) != KERN_OK;
}

static bool is_depthwise(const struct kern_conv2d_shape *s)
{
    return s->groups == s->in_c && s->out_c == s->in_c && s->groups > 1;
}

/* Whether edgefit has a kernel on NCHW8c activations for this shape: the
 * packed convolution (groups 1), the depthwise kernel's blocked form
 * where the executor would keep the layer blocked (channels a multiple of
 * 8). */
static bool nchw8c_runs(const struct kern_conv2d_shape *s)
{
    return s->groups == 1 || (is_depthwise(s) && s->in_c % 8 == 0);
}

static int run_edgefit_nchw8c(void *p)
{
    struct conv_ctx *c = p;
    if (c->dwp) {
        return kern_dwconv2d_nchw8c_f32(&c->ds, c->xl, c->dwp, c->b,
                                        KERN_FUSE_RELU, c->yl) != KERN_OK;
    }
    return kern_conv2d_packed_layout_f32(c->s, c->in_layout, c->out_layout,
                                         c->xl, c->wp, c->b, KERN_FUSE_RELU,
                                         c->work, c->yl) != KERN_OK;
}

static int run_onednn(void *p)
{
    return bench_onednn_conv_run(((struct conv_ctx *)p)->dnnl);
}

static int run_xnnpack(void *p)
{
    return bench_xnn_conv_run(((struct conv_ctx *)p)->xnn);
}

static const struct bench_col base_cols[] = {
    {"model", ART_TEXT},
    {"layer_names", ART_TEXT},
    {"count", ART_UINT},
    {"shape", ART_TEXT},
    {"macs", ART_UINT},
    {"edgefit_latency_ms", ART_REAL},
    {"edgefit_gflops", ART_REAL},
    {"edgefit_nchw8c_latency_ms", ART_REAL},
};
static const struct bench_col dnnl_cols[] = {
    {"onednn_latency_ms", ART_REAL},
    {"onednn_max_abs_diff", ART_REAL},
};
static const struct bench_col xnn_cols[] = {
    {"xnnpack_latency_ms", ART_REAL},
    {"xnnpack_max_abs_diff", ART_REAL},
};
static const struct bench_col best_cols[] = {
    {"best_other", ART_TEXT},
    {"edgefit_to_best", ART_REAL},
};

static int add_cols(art_table *t, const struct bench_col *cols, size_t n)
{
    int st = ART_OK;
    for (size_t i = 0; st == ART_OK && i < n; i++) {
        st = art_table_add_column(t, cols[i].name, cols[i].type);
    }
    return st;
}

static double max_abs_diff(const float *a, const float *b, size_t n)
{
    double m = 0.0;
    for (size_t i = 0; i < n; i++) {
        const double d = fabs((double)a[i] - (double)b[i]);
        m = d > m || d != d ? d : m;
    }
    return m;
}

/* One result row: medians per library (NaN: not run), edgefit's faster
 * layout (NaN: none run), the MACs. */
struct conv_result {
    double ms[NLIB];
    double diff[NLIB];
    double edgefit_best_ms;
    uint64_t macs;
};

static int set_row(art_table *t, const char *model, const char *layers,
                   unsigned count, const char *shape,
                   const struct conv_result *r)
{
    size_t row;
    int st = art_table_add_row(t, &row);
    if (st == ART_OK) {
        st = bench_set_text(t, row, "model", model);
    }
    if (st == ART_OK) {
        st = bench_set_text(t, row, "layer_names", layers);
    }
    if (st == ART_OK) {
        st = bench_set_uint(t, row, "count", count);
    }
    if (st == ART_OK) {
        st = bench_set_text(t, row, "shape", shape);
    }
    if (st == ART_OK) {
        st = bench_set_uint(t, row, "macs", r->macs);
    }
    if (st == ART_OK) {
        st = bench_set_real(t, row, "edgefit_latency_ms",
                            cli_round4(r->ms[LIB_EDGEFIT]));
    }
    if (st == ART_OK) {
        st = bench_set_real(t, row, "edgefit_gflops",
                            cli_round4(2.0 * (double)r->macs /
                                       (r->ms[LIB_EDGEFIT] * 1e6)));
    }
    if (st == ART_OK) {
        st = bench_set_real(t, row, "edgefit_nchw8c_latency_ms",
                            cli_round4(r->ms[LIB_EDGEFIT_NCHW8C]));
    }
    const char *best = NULL;
    double best_ms = INFINITY;
    for (int l = LIB_ONEDNN; st == ART_OK && l < NLIB; l++) {
        char col[64];
        snprintf(col, sizeof col, "%s_latency_ms", lib_name[l]);
        if (art_table_find_column(t, col) < 0) {
            continue;
        }
        st = bench_set_real(t, row, col, cli_round4(r->ms[l]));
        snprintf(col, sizeof col, "%s_max_abs_diff", lib_name[l]);
        if (st == ART_OK) {
            st = bench_set_real(t, row, col, r->diff[l]);
        }
        if (r->ms[l] < best_ms) {
            best_ms = r->ms[l];
            best = lib_name[l];
        }
    }
    if (st == ART_OK && best && art_table_find_column(t, "best_other") >= 0) {
        st = bench_set_text(t, row, "best_other", best);
        if (st == ART_OK) {
            st = bench_set_real(t, row, "edgefit_to_best",
                                cli_round4(best_ms / r->edgefit_best_ms));
        }
    }
    return st;
}

static void shape_text(const struct kern_conv2d_shape *s, char *buf,
                       size_t len)
{
    snprintf(buf, len, "%zux%zux%zu>%zu k%zux%zu s%zu p%zu:%zu:%zu:%zu%s",
             s->in_c, s->in_h, s->in_w, s->out_c, s->kh, s->kw, s->stride_h,
             s->pad_top, s->pad_left, s->pad_bottom, s->pad_right,
             s->groups == 1 ? "" : s->groups == s->in_c ? " dw" : " g");
}

static int conv_row(const struct bench_cfg *cfg, art_table *t,
                    const struct conv_case *cc, struct conv_result *r)
{
    const struct kern_conv2d_shape *s = &cc->s;
    const unsigned libs = bench_compare_available();
    size_t oh, ow;
    int st = kern_conv2d_out_hw(s, &oh, &ow);
    if (st != KERN_OK) {
        return bench_kern_failed("conv shape", st);
    }
    const size_t K = s->in_c / s->groups * s->kh * s->kw;
    const size_t nx = s->in_c * s->in_h * s->in_w, nw = s->out_c * K;
    const size_t ny = s->out_c * oh * ow;
    const size_t wb = kern_conv2d_work_bytes(s);
    const size_t pb = kern_conv2d_packed_bytes(s);
    float *x = bench_alloc(nx, sizeof(float));
    float *w = bench_alloc(nw, sizeof(float));
    float *wp = pb ? bench_alloc(pb / sizeof(float), sizeof(float)) : NULL;
    float *b = bench_alloc(s->out_c, sizeof(float));
    float *y = bench_alloc(ny, sizeof(float));
    float *yo = bench_alloc(ny, sizeof(float));
    void *work = wb ? bench_alloc(wb, 1) : NULL;
    /* the blocked run's tensors: at most 7 padding channels per side */
    const bool blk = nchw8c_runs(s);
    const size_t nxl = (s->in_c + 7) / 8 * 8 * s->in_h * s->in_w;
    const size_t nyl = (s->out_c + 7) / 8 * 8 * oh * ow;
    float *xl = blk ? bench_alloc(nxl, sizeof(float)) : NULL;
    float *yl = blk ? bench_alloc(nyl, sizeof(float)) : NULL;
    const struct kern_dwconv2d_shape ds = kern_conv2d_dw_shape(s);
    const size_t dpb = blk && is_depthwise(s) ? kern_dwconv2d_packed_bytes(&ds)
                                              : 0;
    float *dwp = dpb ? bench_alloc(dpb / sizeof(float), sizeof(float)) : NULL;
    struct conv_ctx ctx = {.s = s, .work = work};
    int rc = CLI_EXIT_FAILURE;
    if (!x || !w || !b || !y || !yo || (wb && !work) || (pb && !wp) ||
        (blk && (!xl || !yl)) || (dpb && !dwp)) {
        bench_kern_failed("conv", KERN_E_NOMEM);
        goto done;
    }
    struct bench_rng rng;
    bench_rng_seed(&rng, 0xc0 + nx * 7 + nw);
    const float ws = 1.0f / sqrtf((float)K);
    for (size_t i = 0; i < nx; i++) {
        x[i] = bench_rng_uniform(&rng, -1.0f, 1.0f);
    }
    for (size_t i = 0; i < nw; i++) {
        w[i] = bench_rng_uniform(&rng, -ws, ws);
    }
    for (size_t i = 0; i < s->out_c; i++) {
        b[i] = bench_rng_uniform(&rng, -0.1f, 0.1f);
    }
    if (wp && (st = kern_conv2d_pack_f32(s, w, wp)) != KERN_OK) {
        bench_kern_failed("conv pack", st);
        goto done;
    }
    if (dwp && (st = kern_dwconv2d_pack_f32(&ds, w, dwp)) != KERN_OK) {
        bench_kern_failed("depthwise pack", st);
        goto done;
    }
    ctx.ds = ds;
    ctx.dwp = dwp;
    ctx.x = x;
    ctx.w = w;
    ctx.wp = wp;
    ctx.b = b;
    ctx.y = y;
    struct bench_case cases[NLIB];
    int lib_of[NLIB];
    size_t n = 0;
    cases[n] = (struct bench_case){.name = "edgefit", .fn = run_edgefit,
                                   .ctx = &ctx};
    lib_of[n++] = LIB_EDGEFIT;
    if (blk) {
        /* blocked on the sides whose channels fill blocks of 8 */
        ctx.in_layout = s->in_c % 8 ? KERN_LAYOUT_NCHW : KERN_LAYOUT_NCHW8C;
        ctx.out_layout = s->out_c % 8 ? KERN_LAYOUT_NCHW : KERN_LAYOUT_NCHW8C;
        ctx.xl = x;
        if (ctx.in_layout == KERN_LAYOUT_NCHW8C &&
            (st = kern_nchw_to_nchw8c_f32(1, s->in_c, s->in_h * s->in_w, x,
                                          xl)) != KERN_OK) {
            bench_kern_failed("conv layout", st);
            goto done;
        }
        if (ctx.in_layout == KERN_LAYOUT_NCHW8C) {
            ctx.xl = xl;
        }
        ctx.yl = yl;
        cases[n] = (struct bench_case){.name = "edgefit_nchw8c",
                                       .fn = run_edgefit_nchw8c,
                                       .ctx = &ctx};
        lib_of[n++] = LIB_EDGEFIT_NCHW8C;
    }
    if ((libs & BENCH_LIB_ONEDNN) &&
        bench_onednn_conv_prepare(s, x, w, b, &ctx.dnnl) == 0) {
        cases[n] = (struct bench_case){.name = "onednn", .fn = run_onednn,
                                       .ctx = &ctx};
        lib_of[n++] = LIB_ONEDNN;
    }
    if ((libs & BENCH_LIB_XNNPACK) &&
        bench_xnn_conv_prepare(s, x, w, b, &ctx.xnn) == 0) {
        cases[n] = (struct bench_case){.name = "xnnpack", .fn = run_xnnpack,
                                       .ctx = &ctx};
        lib_of[n++] = LIB_XNNPACK;
    }
    int bad = bench_run_cases(cfg, cases, n);
    if (bad) {
        cli_error("conv %s %s: %s failed", cc->model, cc->layers,
                  cases[bad - 1].name);
        goto done;
    }
    for (int l = 0; l < NLIB; l++) {
        r->ms[l] = NAN;
        r->diff[l] = NAN;
    }
    for (size_t i = 0; i < n; i++) {
        r->ms[lib_of[i]] = cases[i].median_ms;
    }
    /* the blocked run computes the NCHW run's bits (the kernel's
     * contract); a difference is a bug, not a figure */
    if (blk) {
        const float *yc = yl;
        if (ctx.out_layout == KERN_LAYOUT_NCHW8C) {
            st = kern_nchw8c_to_nchw_f32(1, s->out_c, oh * ow, yl, yo);
            if (st != KERN_OK) {
                bench_kern_failed("conv layout", st);
                goto done;
            }
            yc = yo;
        }
        if (memcmp(yc, y, ny * sizeof *y) != 0) {
            cli_error("conv %s %s: the NCHW8c run differs from the NCHW "
                      "one", cc->model, cc->layers);
            goto done;
        }
    }
    r->edgefit_best_ms = r->ms[LIB_EDGEFIT];
    if (r->ms[LIB_EDGEFIT_NCHW8C] < r->edgefit_best_ms) {
        r->edgefit_best_ms = r->ms[LIB_EDGEFIT_NCHW8C];
    }
    if (ctx.dnnl && bench_onednn_conv_output(ctx.dnnl, yo) == 0) {
        r->diff[LIB_ONEDNN] = max_abs_diff(y, yo, ny);
    }
    if (ctx.xnn && bench_xnn_conv_output(ctx.xnn, yo) == 0) {
        r->diff[LIB_XNNPACK] = max_abs_diff(y, yo, ny);
    }
    r->macs = (uint64_t)ny * K;
    char shape[96];
    shape_text(s, shape, sizeof shape);
    st = set_row(t, cc->model, cc->layers, cc->count, shape, r);
    if (st != ART_OK) {
        bench_art_failed("conv table", st);
        goto done;
    }
    rc = CLI_EXIT_OK;
done:
    bench_onednn_conv_free(ctx.dnnl);
    bench_xnn_conv_free(ctx.xnn);
    free(work);
    free(yl);
    free(dwp);
    free(xl);
    free(yo);
    free(y);
    free(b);
    free(w);
    free(wp);
    free(x);
    return rc;
}

int bench_table_conv(const struct bench_cfg *cfg, const struct bench_host *h,
                     art_table **out)
{
    (void)h;
    const unsigned libs = bench_compare_available();
    art_table *t = NULL;
    int st = bench_table_new("bench_conv", base_cols, COUNT(base_cols), &t);
    if (st == ART_OK && (libs & BENCH_LIB_ONEDNN)) {
        st = add_cols(t, dnnl_cols, COUNT(dnnl_cols));
    }
    if (st == ART_OK && (libs & BENCH_LIB_XNNPACK)) {
        st = add_cols(t, xnn_cols, COUNT(xnn_cols));
    }
    if (st == ART_OK && (libs & (BENCH_LIB_ONEDNN | BENCH_LIB_XNNPACK))) {
        st = add_cols(t, best_cols, COUNT(best_cols));
    }
    if (st != ART_OK) {
        art_table_destroy(t);
        *out = NULL;
        return bench_art_failed("conv table", st);
    }
    const struct conv_case *cc = cfg->quick ? cases_quick : cases_full;
    const size_t n = cfg->quick ? COUNT(cases_quick) : COUNT(cases_full);
    int rc = CLI_EXIT_OK;
    /* Per model: the sum of count x median of each library. */
    struct conv_result total = {0};
    unsigned layers = 0;
    for (size_t i = 0; rc == CLI_EXIT_OK && i < n; i++) {
        bench_progress(cfg, "conv %s %s", cc[i].model, cc[i].layers);
        struct conv_result r;
        rc = conv_row(cfg, t, &cc[i], &r);
        if (rc != CLI_EXIT_OK) {
            break;
        }
        /* layers without a blocked run count at their NCHW time in the
         * blocked total, as the executor would run them */
        if (isnan(r.ms[LIB_EDGEFIT_NCHW8C])) {
            r.ms[LIB_EDGEFIT_NCHW8C] = r.ms[LIB_EDGEFIT];
        }
        total.edgefit_best_ms += cc[i].count * r.edgefit_best_ms;
        for (int l = 0; l < NLIB; l++) {
            total.ms[l] += cc[i].count * r.ms[l];
            /* the worst difference; NaN (not run) wins */
            if (r.diff[l] > total.diff[l] || isnan(r.diff[l])) {
                total.diff[l] = r.diff[l];
            }
        }
        total.macs += cc[i].count * r.macs;
        layers += cc[i].count;
        if (i + 1 == n || strcmp(cc[i + 1].model, cc[i].model) != 0) {
            st = set_row(t, cc[i].model, "all", layers, "total", &total);
            if (st != ART_OK) {
                rc = bench_art_failed("conv table", st);
            }
            memset(&total, 0, sizeof total);
            layers = 0;
        }
    }
    bench_progress_done(cfg);
    if (rc != CLI_EXIT_OK) {
        art_table_destroy(t);
        t = NULL;
    }
    *out = t;
    return rc;
}
