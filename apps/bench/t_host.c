/* edgefit-bench: the host the measurements ran on, and TinyTorch's
 * mixed-precision memory table (arithmetic, not measured). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "bench.h"
#include "cli.h"
#include "table.h"
#include "edgefit/kernels.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

int bench_table_host(const struct bench_cfg *cfg, const struct bench_host *h,
                     art_table **out)
{
    static const struct bench_col cols[] = {
        {"kernel_path", ART_TEXT},
        {"peak_path", ART_TEXT},
        {"peak_gmacs", ART_REAL},
        {"peak_gflops", ART_REAL},
        {"triad_gbps", ART_REAL},
        {"triad_mb", ART_REAL},
        {"knee_flop_per_byte", ART_REAL},
        {"threads", ART_UINT},
        {"repeats", ART_UINT},
        {"sample_ms", ART_REAL},
        {"quick", ART_BOOL},
        {"compared_with", ART_TEXT},
    };
    art_table *t = NULL;
    size_t row = 0;
    int st = bench_table_new("bench_host", cols, COUNT(cols), &t);
    if (st == ART_OK) {
        st = art_table_add_row(t, &row);
    }
    if (st == ART_OK) {
        st = bench_set_text(t, row, "kernel_path",
                            kern_cpu_path_name(kern_cpu_flags()));
    }
    if (st == ART_OK && h->measured) {
        st = bench_set_text(t, row, "peak_path", h->peak_path);
    }
    const struct {
        const char *col;
        double v;
    } reals[] = {
        {"peak_gmacs", h->peak_gmacs},
        {"peak_gflops", h->peak_gflops},
        {"triad_gbps", h->triad_gbps},
        {"triad_mb", h->measured ? (double)h->triad_bytes / 1048576.0
                                  : NAN},
        {"knee_flop_per_byte", h->knee_flop_per_byte},
        {"sample_ms", cfg->sample_ms},
    };
    for (size_t i = 0; st == ART_OK && i < COUNT(reals); i++) {
        st = bench_set_real(t, row, reals[i].col, cli_round4(reals[i].v));
    }
    if (st == ART_OK) {
        st = bench_set_uint(t, row, "threads", (uint64_t)cfg->threads);
    }
    if (st == ART_OK) {
        st = bench_set_uint(t, row, "repeats", cfg->repeats);
    }
    if (st == ART_OK) {
        st = art_table_set_bool(t, row,
                                (size_t)art_table_find_column(t, "quick"),
                                cfg->quick);
    }
    if (st == ART_OK) {
        const char *v = bench_compare_versions();
        st = bench_set_text(t, row, "compared_with", *v ? v : "none");
    }
    if (st != ART_OK) {
        art_table_destroy(t);
        t = NULL;
        *out = t;
        return bench_art_failed("host table", st);
    }
    *out = t;
    return CLI_EXIT_OK;
}

/*
 * TinyTorch's analyze_mixed_precision_benefits(), with N parameters and A
 * activation elements, in bytes:
 *   fp32  = 4N (params) + 4A (activations) + 4N (gradients) + 8N (Adam)
 *   mixed = 4N (fp32 master params) + 2A (fp16 activations)
 *           + 2N (fp16 gradients) + 8N (fp32 Adam state)
 *   GB = bytes / 1e9; savings % = (fp32 - mixed) / fp32 * 100.
 * This is memest_training_memory() in fp32 and
 * memest_training_memory_mixed() with MEMEST_OPT_ADAM, which take a model;
 * TinyTorch gives only counts, so the same formula is applied to them here.
 */
int bench_table_mixed_precision(const struct bench_cfg *cfg,
                                const struct bench_host *h, art_table **out)
{
    (void)cfg;
    (void)h;
    static const struct bench_col cols[] = {
        {"model", ART_TEXT},
        {"parameter_count", ART_UINT},
        {"activation_count", ART_UINT},
        {"fp32_bytes", ART_UINT},
        {"mixed_bytes", ART_UINT},
        {"fp32_gb", ART_REAL},
        {"mixed_gb", ART_REAL},
        {"savings_gb", ART_REAL},
        {"savings_pct", ART_REAL},
    };
    static const struct {
        const char *name;
        uint64_t params, activations;
    } models[] = {
        {"Tiny CNN", 50000, 100000},
        {"Small BERT", 10000000, 5000000},
        {"Medium GPT", 100000000, 50000000},
        {"Large Transformer", 1000000000, 500000000},
    };
    art_table *t = NULL;
    int st = bench_table_new("bench_mixed_precision", cols, COUNT(cols), &t);
    for (size_t i = 0; st == ART_OK && i < COUNT(models); i++) {
        const uint64_t n = models[i].params, a = models[i].activations;
        uint64_t p16, a4, a2, n14, fp32, mixed;
        /* 16N + 4A and 14N + 2A, checked for overflow. */
        if (__builtin_mul_overflow(n, 16u, &p16) ||
            __builtin_mul_overflow(a, 4u, &a4) ||
            __builtin_mul_overflow(a, 2u, &a2) ||
            __builtin_mul_overflow(n, 14u, &n14) ||
            __builtin_add_overflow(p16, a4, &fp32) ||
            __builtin_add_overflow(n14, a2, &mixed)) {
            st = ART_E_OVERFLOW;
            break;
        }
        size_t row;
        st = art_table_add_row(t, &row);
        if (st == ART_OK) {
            st = bench_set_text(t, row, "model", models[i].name);
        }
        if (st == ART_OK) {
            st = bench_set_uint(t, row, "parameter_count", n);
        }
        if (st == ART_OK) {
            st = bench_set_uint(t, row, "activation_count", a);
        }
        if (st == ART_OK) {
            st = bench_set_uint(t, row, "fp32_bytes", fp32);
        }
        if (st == ART_OK) {
            st = bench_set_uint(t, row, "mixed_bytes", mixed);
        }
        if (st == ART_OK) {
            st = bench_set_real(t, row, "fp32_gb", (double)fp32 / 1e9);
        }
        if (st == ART_OK) {
            st = bench_set_real(t, row, "mixed_gb", (double)mixed / 1e9);
        }
        if (st == ART_OK) {
            st = bench_set_real(t, row, "savings_gb",
                                (double)(fp32 - mixed) / 1e9);
        }
        if (st == ART_OK) {
            st = bench_set_real(t, row, "savings_pct",
                                (double)(fp32 - mixed) / (double)fp32 *
                                    100.0);
        }
    }
    if (st != ART_OK) {
        art_table_destroy(t);
        *out = NULL;
        return bench_art_failed("mixed-precision table", st);
    }
    *out = t;
    return CLI_EXIT_OK;
}
