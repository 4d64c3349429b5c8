/* edgefit-bench: the convolutions of oneDNN and XNNPACK, for the conv
 * table, each compiled only when the build found the library (Meson option
 * blas_compare). Each library runs in the layout it is fastest in, as a
 * network built on it would keep its activations: oneDNN in the blocked
 * formats its primitive chooses (format_tag any), XNNPACK in NHWC. The
 * caller's NCHW input and PyTorch-layout weights are converted once, out
 * of the timed region, and the output converted back for the check. Both
 * fuse the bias and the relu, as edgefit does. One thread each. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

#if BENCH_HAVE_ONEDNN
#include <oneapi/dnnl/dnnl.h>
#endif
#if BENCH_HAVE_XNNPACK
#include <xnnpack.h>
#endif

/* ---- oneDNN ---------------------------------------------------------------- */

struct bench_onednn_conv {
#if BENCH_HAVE_ONEDNN
    dnnl_engine_t eng;
    dnnl_stream_t strm;
    dnnl_primitive_t conv;
    dnnl_memory_t src, wei, bias, dst;
    dnnl_memory_desc_t user_dst;
#endif
    int unused;
};

#if BENCH_HAVE_ONEDNN
/* Copy between a user memory (plain layout at ptr) and mem, in the
 * direction given, through a reorder primitive. */
static int dnnl_copy(struct bench_onednn_conv *c,
                     const dnnl_memory_desc_t *user, void *ptr,
                     dnnl_memory_t mem, int to_mem)
{
    const dnnl_memory_desc_t *md = NULL;
    dnnl_memory_t um = NULL;
    dnnl_primitive_desc_t rpd = NULL;
    dnnl_primitive_t r = NULL;
    int rc = -1;
    if (dnnl_memory_get_memory_desc(mem, &md) != dnnl_success ||
        dnnl_memory_create(&um, user, c->eng, ptr) != dnnl_success) {
        goto done;
    }
    if ((to_mem ? dnnl_reorder_primitive_desc_create(&rpd, user, c->eng, md,
                                                     c->eng, NULL)
                : dnnl_reorder_primitive_desc_create(&rpd, md, c->eng, user,
                                                     c->eng, NULL)) !=
            dnnl_success ||
        dnnl_primitive_create(&r, rpd) != dnnl_success) {
        goto done;
    }
    dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, to_mem ? um : mem},
                               {DNNL_ARG_TO, to_mem ? mem : um}};
    if (dnnl_primitive_execute(r, c->strm, 2, args) == dnnl_success &&
        dnnl_stream_wait(c->strm) == dnnl_success) {
        rc = 0;
    }
done:
    if (r) {
        dnnl_primitive_destroy(r);
    }
    if (rpd) {
        dnnl_primitive_desc_destroy(rpd);
    }
    if (um) {
        dnnl_memory_destroy(um);
    }
    return rc;
}
#endif

int bench_onednn_conv_prepare(const struct kern_conv2d_shape *s,
                              const float *x, const float *w,
                              const float *bias,
                              struct bench_onednn_conv **out)
{
    *out = NULL;
#if BENCH_HAVE_ONEDNN
    size_t oh, ow;
    if (kern_conv2d_out_hw(s, &oh, &ow) != KERN_OK) {
        return -1;
    }
    struct bench_onednn_conv *c = calloc(1, sizeof *c);
    if (!c) {
        return -1;
    }
    const dnnl_dim_t N = (dnnl_dim_t)s->batch, IC = (dnnl_dim_t)s->in_c;
    const dnnl_dim_t OC = (dnnl_dim_t)s->out_c, G = (dnnl_dim_t)s->groups;
    const dnnl_dim_t KH = (dnnl_dim_t)s->kh, KW = (dnnl_dim_t)s->kw;
    dnnl_dims_t src_d = {N, IC, (dnnl_dim_t)s->in_h, (dnnl_dim_t)s->in_w};
    dnnl_dims_t dst_d = {N, OC, (dnnl_dim_t)oh, (dnnl_dim_t)ow};
    dnnl_dims_t w4 = {OC, IC, KH, KW};
    dnnl_dims_t w5 = {G, OC / G, IC / G, KH, KW};
    dnnl_dims_t b_d = {OC};
    dnnl_dims_t strides = {(dnnl_dim_t)s->stride_h, (dnnl_dim_t)s->stride_w};
    dnnl_dims_t pad_l = {(dnnl_dim_t)s->pad_top, (dnnl_dim_t)s->pad_left};
    dnnl_dims_t pad_r = {(dnnl_dim_t)s->pad_bottom,
                         (dnnl_dim_t)s->pad_right};
    dnnl_memory_desc_t src_any, wei_any, b_md, dst_any, u_src, u_wei;
    dnnl_convolution_desc_t cd;
    dnnl_primitive_attr_t attr = NULL;
    dnnl_post_ops_t po = NULL;
    dnnl_primitive_desc_t pd = NULL;
    int rc = -1;
    const int grouped = s->groups > 1;
    if (dnnl_engine_create(&c->eng, dnnl_cpu, 0) != dnnl_success ||
        dnnl_stream_create(&c->strm, c->eng, dnnl_stream_default_flags) !=
            dnnl_success ||
        dnnl_memory_desc_init_by_tag(&src_any, 4, src_d, dnnl_f32,
                                     dnnl_format_tag_any) != dnnl_success ||
        dnnl_memory_desc_init_by_tag(&wei_any, grouped ? 5 : 4,
                                     grouped ? w5 : w4, dnnl_f32,
                                     dnnl_format_tag_any) != dnnl_success ||
        dnnl_memory_desc_init_by_tag(&b_md, 1, b_d, dnnl_f32, dnnl_x) !=
            dnnl_success ||
        dnnl_memory_desc_init_by_tag(&dst_any, 4, dst_d, dnnl_f32,
                                     dnnl_format_tag_any) != dnnl_success ||
        dnnl_memory_desc_init_by_tag(&u_src, 4, src_d, dnnl_f32,
                                     dnnl_nchw) != dnnl_success ||
        dnnl_memory_desc_init_by_tag(&u_wei, grouped ? 5 : 4,
                                     grouped ? w5 : w4, dnnl_f32,
                                     grouped ? dnnl_goihw : dnnl_oihw) !=
            dnnl_success ||
        dnnl_memory_desc_init_by_tag(&c->user_dst, 4, dst_d, dnnl_f32,
                                     dnnl_nchw) != dnnl_success) {
        goto done;
    }
    if (dnnl_convolution_forward_desc_init(
            &cd, dnnl_forward_inference, dnnl_convolution_direct, &src_any,
            &wei_any, &b_md, &dst_any, strides, pad_l, pad_r) !=
            dnnl_success ||
        dnnl_primitive_attr_create(&attr) != dnnl_success ||
        dnnl_post_ops_create(&po) != dnnl_success ||
        dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_relu, 0.0f,
                                     0.0f) != dnnl_success ||
        dnnl_primitive_attr_set_post_ops(attr, po) != dnnl_success ||
        dnnl_primitive_desc_create(&pd, &cd, attr, c->eng, NULL) !=
            dnnl_success ||
        dnnl_primitive_create(&c->conv, pd) != dnnl_success) {
        goto done;
    }
    if (dnnl_memory_create(&c->src,
                           dnnl_primitive_desc_query_md(pd, dnnl_query_src_md,
                                                        0),
                           c->eng, DNNL_MEMORY_ALLOCATE) != dnnl_success ||
        dnnl_memory_create(&c->wei,
                           dnnl_primitive_desc_query_md(
                               pd, dnnl_query_weights_md, 0),
                           c->eng, DNNL_MEMORY_ALLOCATE) != dnnl_success ||
        dnnl_memory_create(&c->dst,
                           dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md,
                                                        0),
                           c->eng, DNNL_MEMORY_ALLOCATE) != dnnl_success ||
        dnnl_memory_create(&c->bias, &b_md, c->eng, (void *)bias) !=
            dnnl_success) {
        goto done;
    }
    if (dnnl_copy(c, &u_src, (void *)x, c->src, 1) != 0 ||
        dnnl_copy(c, &u_wei, (void *)w, c->wei, 1) != 0) {
        goto done;
    }
    rc = 0;
done:
    if (pd) {
        dnnl_primitive_desc_destroy(pd);
    }
    if (po) {
        dnnl_post_ops_destroy(po);
    }
    if (attr) {
        dnnl_primitive_attr_destroy(attr);
    }
    if (rc != 0) {
        bench_onednn_conv_free(c);
        return -1;
    }
    *out = c;
    return 0;
#else
    (void)s, (void)x, (void)w, (void)bias;
    return -1;
#endif
}

int bench_onednn_conv_run(struct bench_onednn_conv *c)
{
#if BENCH_HAVE_ONEDNN
    dnnl_exec_arg_t args[4] = {{DNNL_ARG_SRC, c->src},
                               {DNNL_ARG_WEIGHTS, c->wei},
                               {DNNL_ARG_BIAS, c->bias},
                               {DNNL_ARG_DST, c->dst}};
    return dnnl_primitive_execute(c->conv, c->strm, 4, args) ==
                       dnnl_success &&
                   dnnl_stream_wait(c->strm) == dnnl_success
               ? 0
               : -1;
#else
    (void)c;
    return -1;
#endif
}

int bench_onednn_conv_output(struct bench_onednn_conv *c, float *y)
{
#if BENCH_HAVE_ONEDNN
    return dnnl_copy(c, &c->user_dst, y, c->dst, 0);
#else
    (void)c, (void)y;
    return -1;
#endif
}

void bench_onednn_conv_free(struct bench_onednn_conv *c)
{
    if (!c) {
        return;
    }
#if BENCH_HAVE_ONEDNN
    if (c->conv) {
        dnnl_primitive_destroy(c->conv);
    }
    dnnl_memory_t mems[4] = {c->src, c->wei, c->bias, c->dst};
    for (int i = 0; i < 4; i++) {
        if (mems[i]) {
            dnnl_memory_destroy(mems[i]);
        }
    }
    if (c->strm) {
        dnnl_stream_destroy(c->strm);
    }
    if (c->eng) {
        dnnl_engine_destroy(c->eng);
    }
#endif
    free(c);
}

/* ---- XNNPACK ---------------------------------------------------------------- */

struct bench_xnn_conv {
#if BENCH_HAVE_XNNPACK
    xnn_operator_t op;
#endif
    float *x, *y; /* NHWC */
    size_t c, h, w, oc, oh, ow;
};

int bench_xnn_conv_prepare(const struct kern_conv2d_shape *s, const float *x,
                           const float *w, const float *bias,
                           struct bench_xnn_conv **out)
{
    *out = NULL;
#if BENCH_HAVE_XNNPACK
    static int initialised;
    if (!initialised) {
        if (xnn_initialize(NULL) != xnn_status_success) {
            return -1;
        }
        initialised = 1;
    }
    size_t oh, ow;
    if (s->batch != 1 || kern_conv2d_out_hw(s, &oh, &ow) != KERN_OK) {
        return -1;
    }
    struct bench_xnn_conv *c = calloc(1, sizeof *c);
    if (!c) {
        return -1;
    }
    c->c = s->in_c;
    c->h = s->in_h;
    c->w = s->in_w;
    c->oc = s->out_c;
    c->oh = oh;
    c->ow = ow;
    const size_t icg = s->in_c / s->groups, ocg = s->out_c / s->groups;
    const size_t khw = s->kh * s->kw;
    c->x = bench_alloc(s->in_c * s->in_h * s->in_w, sizeof(float));
    c->y = bench_alloc(s->out_c * oh * ow, sizeof(float));
    float *wx = bench_alloc(s->out_c * icg * khw, sizeof(float));
    int rc = -1;
    if (!c->x || !c->y || !wx) {
        goto done;
    }
    for (size_t ch = 0; ch < c->c; ch++) {
        for (size_t p = 0; p < c->h * c->w; p++) {
            c->x[p * c->c + ch] = x[ch * c->h * c->w + p];
        }
    }
    /* PyTorch's [oc][icg][kh][kw] to XNNPACK's [g][ocg][kh][kw][icg]
     * (oc = g * ocg + o already runs in that order). */
    for (size_t o = 0; o < s->out_c; o++) {
        for (size_t i = 0; i < icg; i++) {
            for (size_t k = 0; k < khw; k++) {
                wx[(o * khw + k) * icg + i] = w[(o * icg + i) * khw + k];
            }
        }
    }
    if (xnn_create_convolution2d_nhwc_f32(
            (uint32_t)s->pad_top, (uint32_t)s->pad_right,
            (uint32_t)s->pad_bottom, (uint32_t)s->pad_left, (uint32_t)s->kh,
            (uint32_t)s->kw, (uint32_t)s->stride_h, (uint32_t)s->stride_w, 1,
            1, (uint32_t)s->groups, icg, ocg, s->in_c, s->out_c, wx, bias,
            0.0f, INFINITY, 0, &c->op) != xnn_status_success ||
        xnn_setup_convolution2d_nhwc_f32(c->op, 1, s->in_h, s->in_w, c->x,
                                         c->y, NULL) != xnn_status_success) {
        goto done;
    }
    rc = 0;
done:
    free(wx);
    if (rc != 0) {
        bench_xnn_conv_free(c);
        return -1;
    }
    *out = c;
    return 0;
#else
    (void)s, (void)x, (void)w, (void)bias;
    return -1;
#endif
}

int bench_xnn_conv_run(struct bench_xnn_conv *c)
{
#if BENCH_HAVE_XNNPACK
    return xnn_run_operator(c->op, NULL) == xnn_status_success ? 0 : -1;
#else
    (void)c;
    return -1;
#endif
}

int bench_xnn_conv_output(const struct bench_xnn_conv *c, float *y)
{
    for (size_t ch = 0; ch < c->oc; ch++) {
        for (size_t p = 0; p < c->oh * c->ow; p++) {
            y[ch * c->oh * c->ow + p] = c->y[p * c->oc + ch];
        }
    }
    return 0;
}

void bench_xnn_conv_free(struct bench_xnn_conv *c)
{
    if (!c) {
        return;
    }
#if BENCH_HAVE_XNNPACK
    if (c->op) {
        xnn_delete_operator(c->op);
    }
#endif
    free(c->x);
    free(c->y);
    free(c);
}
