/* edgefit-bench, private: measurement of interleaved contenders, the host
 * calibration, the reference loops of the bench and the table builders.
 * Nothing here is a library export. */
#ifndef EDGEFIT_APPS_BENCH_H
#define EDGEFIT_APPS_BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "edgefit/artifacts.h"
#include "edgefit/kernels.h"
#include "edgefit/profile.h"

/* ---- Configuration ------------------------------------------------------ */

struct bench_cfg {
    bool quick;         /* small sizes, few repeats (for tests) */
    unsigned repeats;   /* timed rounds per row */
    unsigned warmup;    /* untimed rounds per row */
    int threads;        /* thread count of the multi-thread column */
    double sample_ms;   /* a sample repeats a call until it lasts this long */
    bool progress;      /* progress lines on stderr */
    unsigned step;      /* tables done (the calibration is the first) */
    unsigned steps;     /* of that many, for the progress percentage */
};

/* Print a progress line on stderr when cfg->progress (a terminal). */
void bench_progress(const struct bench_cfg *cfg, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Clear the progress line. */
void bench_progress_done(const struct bench_cfg *cfg);

/* ---- Host calibration ---------------------------------------------------- */

struct bench_host {
    bool measured;             /* false: the figures below are NaN */
    double peak_gmacs;         /* one thread, fp32: the best of the FMA
                                  loop and kern_sgemm, as the layer-wise
                                  summary's host_peak_gmacs (one figure,
                                  prof_device_peak_threads of the host) */
    double peak_gflops;        /* 2 FLOP per MAC: 2 x peak_gmacs */
    double triad_gbps;         /* STREAM triad, one thread, best run */
    double knee_flop_per_byte; /* peak_gflops / triad_gbps */
    uint64_t triad_bytes;      /* footprint of the three triad arrays */
    const char *peak_path;     /* what set the peak: the FMA loop's
                                  instruction set, or "sgemm" */
    struct prof_device dev;    /* the host with its cache levels, for
                                  the roof of the level holding the data */
};

/* An unmeasured host: NaN figures, measured false. */
void bench_host_init(struct bench_host *out);
/* Measure the host once (smaller triad and fewer runs when quick). Returns
 * 0, or non-zero when the calibration failed (out->measured false). */
int bench_host_calibrate(const struct bench_cfg *cfg, struct bench_host *out);

/* ---- Interleaved measurement --------------------------------------------- */

/* One call of the work being timed; 0 on success. */
typedef int (*bench_fn)(void *ctx);

/* A contender. Set name, fn, ctx (and prepare, or NULL); bench_run_cases
 * fills the rest. */
struct bench_case {
    const char *name;
    bench_fn fn;
    void *ctx;
    bench_fn prepare; /* untimed, before every batch of calls (e.g. the
                         thread count of a process-wide setting) */
    uint64_t calls;   /* calls per sample, chosen so a sample lasts
                         cfg->sample_ms */
    double median_ms; /* per call, median over the samples */
    double p90_ms;
    double min_ms;
};

/* Time n contenders side by side: cfg->warmup untimed rounds, then one call
 * each to size the samples, then cfg->repeats rounds in which every
 * contender takes one sample; the order rotates from round to round so
 * that a drift of the clock or of the machine's load hits all alike.
 * Returns 0, or the index + 1 of the contender whose call failed. */
int bench_run_cases(const struct bench_cfg *cfg, struct bench_case *cases,
                    size_t n);

/* Monotonic clock in nanoseconds. */
uint64_t bench_now_ns(void);

/* ---- Buffers and data ------------------------------------------------------ */

/* 64-byte aligned allocation of count elements of size bytes, NULL on
 * overflow or failure; release with free(). */
void *bench_alloc(size_t count, size_t size);

/* A small deterministic generator (xorshift64*), so that every run times
 * the same data. */
struct bench_rng {
    uint64_t s;
};
void bench_rng_seed(struct bench_rng *r, uint64_t seed);
uint64_t bench_rng_next(struct bench_rng *r);
/* Uniform in [lo, hi). */
float bench_rng_uniform(struct bench_rng *r, float lo, float hi);
/* Standard normal (Box-Muller). */
float bench_rng_normal(struct bench_rng *r);

/* ---- Reference loops of the bench (baselines, not library code) ----------- */

/* The naive matrix product, C[m x n] = A[m x k] . B[k x n], row-major, the
 * triple loop in i, p, j order with a float accumulator row. */
void bench_sgemm_naive(size_t m, size_t n, size_t k, const float *a,
                       const float *b, float *c);
/* The naive int8 product c[i][j] = sum_p a[i][p] * w[j][p] in int32 (W is
 * N x K, the layout of a dense layer's weights). */
void bench_s8gemm_naive(size_t m, size_t n, size_t k, const int8_t *a,
                        const int8_t *w, int32_t *c);
/* GELU, tanh form, element by element with libm's tanhf. */
void bench_gelu_tanhf_loop(float *dst, const float *src, size_t n);
/* dst = x + y and dst = x * y, the element-wise operations of TinyTorch's
 * arithmetic-intensity table. */
void bench_add(float *dst, const float *x, const float *y, size_t n);
void bench_mul(float *dst, const float *x, const float *y, size_t n);
/* float to bfloat16, round to nearest even, NaN quietened (scalar). */
void bench_f32_to_bf16_loop(uint16_t *dst, const float *src, size_t n);
void bench_bf16_to_f32_loop(float *dst, const uint16_t *src, size_t n);

/* The F16C loops (vcvtps2ph with round-to-nearest-even, vcvtph2ps), eight
 * values per instruction; available when bench_f16c_available(). */
bool bench_f16c_available(void);
void bench_f32_to_f16_f16c(uint16_t *dst, const float *src, size_t n);
void bench_f16_to_f32_f16c(float *dst, const uint16_t *src, size_t n);

/* ---- Comparison libraries (blas_compare) ---------------------------------- */

/* Bits of bench_compare_available(). */
enum {
    BENCH_LIB_OPENBLAS = 1u << 0,
    BENCH_LIB_LIBXSMM = 1u << 1,
    BENCH_LIB_ONEDNN = 1u << 2,
    BENCH_LIB_XNNPACK = 1u << 3,
};
/* Which libraries this build compares with. */
unsigned bench_compare_available(void);
/* Set every comparison library to one thread; once, before timing. */
void bench_compare_init(void);
void bench_compare_finish(void);
/* A description like "OpenBLAS 0.3.21, libxsmm 1.17, oneDNN 2.6.3". */
const char *bench_compare_versions(void);

/* C = A . B, row-major, m x k times k x n, through each library. Each
 * returns 0 on success. */
int bench_openblas_sgemm(size_t m, size_t n, size_t k, const float *a,
                         const float *b, float *c);
int bench_onednn_sgemm(size_t m, size_t n, size_t k, const float *a,
                       const float *b, float *c);

/* libxsmm: a kernel dispatched (JIT) once per shape, or libxsmm_sgemm when
 * dispatch declines the shape. */
struct bench_xsmm;
int bench_xsmm_prepare(size_t m, size_t n, size_t k, struct bench_xsmm **out);
int bench_xsmm_run(const struct bench_xsmm *x, const float *a, const float *b,
                   float *c);
/* "jit" or "libxsmm_sgemm". Static text. */
const char *bench_xsmm_route(const struct bench_xsmm *x);
void bench_xsmm_free(struct bench_xsmm *x);

/* oneDNN's u8 x s8 -> s32 product: c[i][j] = sum_p a[i][p] * w[j][p] with
 * A (m x k, uint8) and W (n x k, int8) row-major, zero offsets. */
int bench_onednn_u8s8s32(size_t m, size_t n, size_t k, const uint8_t *a,
                         const int8_t *w, int32_t *c);

/* Convolutions through oneDNN and XNNPACK (compare_conv.c): prepare one
 * for shape s (XNNPACK: batch 1) with NCHW input x, PyTorch-layout weights
 * w and bias, the bias and a relu fused; run it (the timed call); read its
 * output back as NCHW. Each returns 0 on success, -1 when the library is
 * not built in or refuses the shape. */
struct bench_onednn_conv;
int bench_onednn_conv_prepare(const struct kern_conv2d_shape *s,
                              const float *x, const float *w,
                              const float *bias,
                              struct bench_onednn_conv **out);
int bench_onednn_conv_run(struct bench_onednn_conv *c);
int bench_onednn_conv_output(struct bench_onednn_conv *c, float *y);
void bench_onednn_conv_free(struct bench_onednn_conv *c);
struct bench_xnn_conv;
int bench_xnn_conv_prepare(const struct kern_conv2d_shape *s, const float *x,
                           const float *w, const float *bias,
                           struct bench_xnn_conv **out);
int bench_xnn_conv_run(struct bench_xnn_conv *c);
int bench_xnn_conv_output(const struct bench_xnn_conv *c, float *y);
void bench_xnn_conv_free(struct bench_xnn_conv *c);

/* ---- Tables ---------------------------------------------------------------- */

/* Each builds one named table; 0 on success, else an exit code of cli.h
 * after printing a message. host may be unmeasured. */
int bench_table_host(const struct bench_cfg *cfg, const struct bench_host *h,
                     art_table **out);
int bench_table_matmul(const struct bench_cfg *cfg,
                       const struct bench_host *h, art_table **out);
int bench_table_gelu(const struct bench_cfg *cfg, const struct bench_host *h,
                     art_table **out);
int bench_table_intensity(const struct bench_cfg *cfg,
                          const struct bench_host *h, art_table **out);
int bench_table_mixed_precision(const struct bench_cfg *cfg,
                                const struct bench_host *h, art_table **out);
int bench_table_conversions(const struct bench_cfg *cfg,
                            const struct bench_host *h, art_table **out);
int bench_table_int8(const struct bench_cfg *cfg, const struct bench_host *h,
                     art_table **out);
int bench_table_conv(const struct bench_cfg *cfg, const struct bench_host *h,
                     art_table **out);
/* The selected kernel path against the C path per family (t_paths.c). */
int bench_table_paths(const struct bench_cfg *cfg, const struct bench_host *h,
                      art_table **out);
/* Every preset on one and two threads, batch 1 and 8 (t_threads.c). */
int bench_table_threads(const struct bench_cfg *cfg,
                        const struct bench_host *h, art_table **out);
/* The child side of that table: `edgefit-bench --c-path-child FAMILY
 * CALLS` (run with KERN_CPU_MASK=0) prints nanoseconds per call. */
int bench_c_path_child(const char *family, const char *calls_text);

/* ---- Table helpers ---------------------------------------------------------- */

/* Columns from a list of {name, type}; returns an art_status. */
struct bench_col {
    const char *name;
    enum art_type type;
};
int bench_table_new(const char *name, const struct bench_col *cols,
                    size_t ncols, art_table **out);
/* Set a REAL cell, leaving it empty when v is NaN (not measured). */
int bench_set_real(art_table *t, size_t row, const char *col, double v);
int bench_set_uint(art_table *t, size_t row, const char *col, uint64_t v);
int bench_set_text(art_table *t, size_t row, const char *col,
                   const char *v);
/* Print "bench: <what>: <status text>" and return CLI_EXIT_FAILURE. */
int bench_art_failed(const char *what, int st);
int bench_kern_failed(const char *what, int st);

#endif
