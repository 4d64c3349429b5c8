/* edgefit-bench: TinyTorch's acceleration analyses as reproducible
 * tables: matmul scaling against the naive loop (and OpenBLAS, libxsmm and
 * oneDNN with the blas_compare option), fused against unfused GELU, the
 * arithmetic-intensity table with the host's roofline, the mixed-precision
 * memory table, fp16/bf16 conversions and the int8 GEMM; and the MLPerf
 * Tiny models' convolutions against oneDNN and XNNPACK. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "calib.h"
#include "cli.h"
#include "table.h"
#include "edgefit/kernels.h"

typedef int (*table_fn)(const struct bench_cfg *cfg,
                        const struct bench_host *h, art_table **out);

/* The key columns of each table, for the terminal. */
static const char *const key_host[] = {
    "kernel_path", "peak_path", "peak_gmacs", "peak_gflops", "triad_gbps",
    "triad_mb",
    "knee_flop_per_byte", "threads", "repeats", "quick", NULL,
};
static const char *const key_matmul[] = {
    "shape", "edgefit_latency_ms", "edgefit_gflops", "peak_utilization",
    "naive_gflops", "speedup_vs_naive", "mt_speedup", "best_other",
    "edgefit_to_best", NULL,
};
static const char *const key_gelu[] = {
    "variant", "latency_ms", "ns_per_element", "achieved_bandwidth_gbps",
    "speedup_vs_unfused", "time_vs_copy", NULL,
};
static const char *const key_intensity[] = {
    "operation", "intensity_flop_per_byte", "latency_ms", "achieved_gflops",
    "roof_level", "bound", "roofline_utilization", NULL,
};
static const char *const key_mixed_precision[] = {
    "model", "parameter_count", "activation_count", "fp32_gb", "mixed_gb",
    "savings_gb", "savings_pct", NULL,
};
static const char *const key_conversions[] = {
    "conversion", "implementation", "latency_ms", "achieved_bandwidth_gbps",
    "speedup_vs_f16c", "gbps_vs_copy", NULL,
};
static const char *const key_conv[] = {
    "model", "layer_names", "count", "shape", "edgefit_latency_ms",
    "edgefit_nchw8c_latency_ms", "onednn_latency_ms", "xnnpack_latency_ms",
    "best_other", "edgefit_to_best", NULL,
};
static const char *const key_threads[] = {
    "model", "batch", "one_thread_ms", "two_threads_ms", "two_to_one",
    "identical", NULL,
};
static const char *const key_paths[] = {
    "family", "shape", "kernel_path", "path_latency_ms", "c_latency_ms",
    "speedup_vs_c", NULL,
};
static const char *const key_int8[] = {
    "shape", "edgefit_latency_ms", "edgefit_gops", "edgefit_mismatches",
    "static_gops", "static_to_dynamic", "static_to_fp32",
    "onednn_gops", "edgefit_to_onednn", NULL,
};

static const struct {
    const char *name; /* --table NAME; the file is bench_NAME.csv */
    table_fn build;
    bool measured;    /* needs the host calibration */
    const char *title;
    /* what the terminal shows (CSV and JSON carry every column) */
    const char *const *key_cols;
} tables[] = {
    {"host", bench_table_host, true,
     "host: one-thread peak (the best of the FMA loop and sgemm), STREAM "
     "triad, roofline knee",
     key_host},
    {"matmul", bench_table_matmul, true,
     "matmul scaling, float32, one thread (medians; mt = --threads)",
     key_matmul},
    {"gelu", bench_table_gelu, true,
     "GELU fused against unfused, against a plain copy",
     key_gelu},
    {"intensity", bench_table_intensity, true,
     "arithmetic intensity and the roofline verdict against the roof of "
     "the memory level that holds the data",
     key_intensity},
    {"mixed_precision", bench_table_mixed_precision, false,
     "mixed-precision training memory by TinyTorch's formula, for four "
     "model sizes with Adam: parameters, gradients, optimizer state and "
     "activations, no working buffers (edgefit-memfit gives a model's "
     "own, with the trainer's fp32 staging buffers, which can outweigh "
     "the savings on a small model)",
     key_mixed_precision},
    {"conversions", bench_table_conversions, true,
     "fp16/bf16 conversions, against F16C and a copy",
     key_conversions},
    {"int8", bench_table_int8, true,
     "int8 GEMM (int8 x int8 -> int32), one thread",
     key_int8},
    {"conv", bench_table_conv, false,
     "convolutions of the MLPerf Tiny models, batch 1, one thread, bias "
     "and relu fused (medians; edgefit in NCHW and on NCHW8c where the "
     "channels fill blocks of 8; edgefit_to_best >= 1: edgefit, in the "
     "faster of its two layouts, as fast or faster)",
     key_conv},
    {"paths", bench_table_paths, false,
     "each kernel family on the selected path against its C reference "
     "(KERN_CPU_MASK=0 in a child process), one thread, rounds "
     "alternating (medians)",
     key_paths},
    {"threads", bench_table_threads, false,
     "every preset's forward pass on one and on two threads (the "
     "executor's own threading per layer), batch 1 and 8, rounds "
     "alternating (medians); two_to_one <= 1: two threads pay; identical: "
     "the outputs equal bit for bit",
     key_threads},
};
enum { NTABLES = sizeof tables / sizeof tables[0] };

struct options {
    struct bench_cfg cfg;
    struct cli_common co;
    bool only[NTABLES];
    bool any_only;
    bool repeats_set;
};

static void usage(FILE *f)
{
    fprintf(f,
        "usage: edgefit-bench [options]\n"
        "\n"
        "Time edgefit's kernels the way TinyTorch's acceleration module\n"
        "analyses acceleration, and print one table per analysis (medians\n"
        "of interleaved repeats).\n"
        "\n"
        "  --table NAME    run one table (repeatable): host, matmul, gelu,\n"
        "                  intensity, mixed_precision, conversions, int8,\n"
        "                  conv, paths, threads\n"
        "  --quick         small sizes and few repeats (a smoke run)\n"
        "  --repeats N     timed rounds per row (default 7, quick 3)\n"
        "  --threads N     threads of the matmul mt column (default 2;\n"
        "                  1 leaves it out)\n"
        "  --format F      table|csv|json on stdout (default table); csv\n"
        "                  prints one table: give one --table, or --out\n"
        "  --out DIR       also write bench_NAME.csv for each table and\n"
        "                  bench.json with all of them\n"
        "                  (replaced whole: a kill or a full disk leaves the old folder\n"
        "                  or the new one; '.', a mount point and a folder holding a\n"
        "                  folder are refused)\n"
        "  --quiet         no progress on stderr\n"
        "  -h, --help, --version   this text; the version, the kernel paths\n"
        "                           built and selected, the dependencies\n"
        "\n"
        "Exit status: 0 success, 1 runtime failure, 2 bad usage.\n");
}

static int find_table(const char *name)
{
    for (int i = 0; i < NTABLES; i++) {
        if (strcmp(tables[i].name, name) == 0) {
            return i;
        }
    }
    return -1;
}

static int parse_args(int argc, char **argv, struct options *o)
{
    enum { O_TABLE = 256, O_QUICK, O_REPEATS, O_THREADS };
    static const struct option longopts[] = {
        {"table", required_argument, NULL, O_TABLE},
        {"quick", no_argument, NULL, O_QUICK},
        {"repeats", required_argument, NULL, O_REPEATS},
        {"threads", required_argument, NULL, O_THREADS},
        CLI_COMMON_OPTIONS,
        CLI_QUIET_OPTION,
        {NULL, 0, NULL, 0},
    };
    static const struct cli_app app = {"edgefit-bench", EDGEFIT_VERSION,
                                       usage,
                                       cli_version_details};
    *o = (struct options){
        .cfg = {.repeats = 7, .warmup = 1, .threads = 2, .sample_ms = 20.0},
    };
    uint64_t v;
    int c, t, rc = CLI_EXIT_OK;
    opterr = 0;
    static const char *const repeatable[] = {"table", NULL};
    if (cli_refuse_repeats(argc, argv, longopts, repeatable) != CLI_EXIT_OK) {
        return CLI_EXIT_USAGE;
    }
    while (rc == CLI_EXIT_OK &&
           (c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (c) {
        case O_TABLE:
            t = find_table(optarg);
            if (t < 0) {
                cli_error("--table: '%s' is not one of host, matmul, gelu, "
                          "intensity, mixed_precision, conversions, int8, "
                          "conv, paths, threads",
                          optarg);
                rc = CLI_EXIT_USAGE;
                break;
            }
            o->only[t] = true;
            o->any_only = true;
            break;
        case O_QUICK:
            o->cfg.quick = true;
            break;
        case O_REPEATS:
            if (!cli_parse_u64("--repeats", optarg, 1, 1000, &v)) {
                rc = CLI_EXIT_USAGE;
                break;
            }
            o->cfg.repeats = (unsigned)v;
            o->repeats_set = true;
            break;
        case O_THREADS:
            if (!cli_parse_u64("--threads", optarg, 1, KERN_MAX_THREADS,
                               &v)) {
                rc = CLI_EXIT_USAGE;
                break;
            }
            o->cfg.threads = (int)v;
            break;
        default:
            rc = cli_common_option(c, &app, argv, &o->co);
            break;
        }
    }
    if (rc == CLI_EXIT_OK) {
        rc = cli_no_operands(argc, argv);
    }
    if (rc != CLI_EXIT_OK) {
        return rc;
    }
    if (o->cfg.quick) {
        if (!o->repeats_set) {
            o->cfg.repeats = 3;
        }
        o->cfg.sample_ms = 1.0;
    }
    o->cfg.progress = !o->co.quiet && isatty(STDERR_FILENO);
    /* CSV on stdout holds one table: several are never glued into one
     * stream. Said now, before any timing. */
    int selected = 0;
    for (int i = 0; i < NTABLES; i++) {
        selected += !o->any_only || o->only[i];
    }
    if (o->co.format == CLI_FORMAT_CSV && selected > 1 && !o->co.out_dir) {
        cli_error("--format csv prints one table and %d are selected: give "
                  "one --table, or --out DIR for one file per table",
                  selected);
        return CLI_EXIT_USAGE;
    }
    return CLI_EXIT_OK;
}

static int print_stdout(const struct options *o, art_table *const *built)
{
    struct cli_output outs[NTABLES];
    size_t n = 0;
    for (int i = 0; i < NTABLES; i++) {
        if (built[i]) {
            outs[n++] = (struct cli_output){.key = art_table_name(built[i]),
                                            .table = built[i]};
        }
    }
    if (o->co.format == CLI_FORMAT_CSV && n > 1) {
        /* Several tables in CSV go to --out, one file each (checked at
         * parse time): nothing is glued on stdout. */
        return CLI_EXIT_OK;
    }
    if (o->co.format != CLI_FORMAT_TABLE) {
        return cli_emit(o->co.format, outs, n);
    }
    int st = ART_OK;
    bool first = true;
    for (int i = 0; st == ART_OK && i < NTABLES; i++) {
        if (!built[i]) {
            continue;
        }
        printf("%s%s: %s\n", first ? "" : "\n", art_table_name(built[i]),
               tables[i].title);
        art_table *view = NULL;
        st = cli_table_view(built[i], tables[i].key_cols, &view);
        if (st == ART_OK) {
            st = art_table_print_grouped(view, stdout);
        }
        art_table_destroy(view);
        first = false;
    }
    return cli_stdout_finish(st);
}

/* The CSVs and bench.json appear together or not at all. */
static int write_outputs(const char *dir, art_table *const *built)
{
    struct cli_output outs[NTABLES];
    size_t n = 0;
    for (int i = 0; i < NTABLES; i++) {
        if (built[i]) {
            outs[n++] = (struct cli_output){.key = art_table_name(built[i]),
                                            .table = built[i]};
        }
    }
    return cli_write_outputs(dir, outs, n, "bench.json");
}

int main(int argc, char **argv)
{
    cli_set_program("edgefit-bench");
    /* The C-path side of the paths table: this program again, run by it
     * with KERN_CPU_MASK=0 (t_paths.c); not for users. */
    if (argc == 4 && strcmp(argv[1], "--c-path-child") == 0) {
        return bench_c_path_child(argv[2], argv[3]);
    }
    struct options o;
    int rc = parse_args(argc, argv, &o);
    if (rc == CLI_EXIT_OK) {
        rc = cli_out_check(o.co.out_dir);
    }
    if (rc != CLI_EXIT_OK) {
        return cli_exit(rc);
    }
    bool run[NTABLES];
    bool need_host = false;
    for (int i = 0; i < NTABLES; i++) {
        run[i] = !o.any_only || o.only[i];
        need_host = need_host || (run[i] && tables[i].measured);
    }
    bench_compare_init();
    struct bench_host host;
    bench_host_init(&host);
    o.cfg.steps = need_host ? 1 : 0;
    for (int i = 0; i < NTABLES; i++) {
        o.cfg.steps += run[i];
    }
    if (need_host) {
        bench_progress(&o.cfg, "calibrating the host (peaks, triads)");
        if (bench_host_calibrate(&o.cfg, &host) != 0) {
            rc = CLI_EXIT_FAILURE;
        }
        bench_progress_done(&o.cfg);
        o.cfg.step++;
    }
    art_table *built[NTABLES] = {0};
    for (int i = 0; rc == CLI_EXIT_OK && i < NTABLES; i++) {
        if (run[i]) {
            rc = tables[i].build(&o.cfg, &host, &built[i]);
            o.cfg.step++;
        }
    }
    if (rc == CLI_EXIT_OK && o.co.out_dir) {
        rc = write_outputs(o.co.out_dir, built);
    }
    if (rc == CLI_EXIT_OK) {
        rc = print_stdout(&o, built);
    }
    for (int i = 0; i < NTABLES; i++) {
        art_table_destroy(built[i]);
    }
    bench_compare_finish();
    return cli_exit(rc);
}
