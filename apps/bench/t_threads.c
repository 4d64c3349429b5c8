/* edgefit-bench's threads table: every preset's forward pass on one and on
 * two threads (prof_exec, each layer's own threading decision), at batch 1
 * and 8, timed side by side in alternating rounds (medians), with the
 * two-thread output checked bit for bit against the one-thread output:
 * threads must pay, and must not change a result. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "cli.h"
#include "table.h"
#include "edgefit/memest.h"
#include "edgefit/profile.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static const struct bench_col cols[] = {
    {"model", ART_TEXT},
    {"batch", ART_UINT},
    {"one_thread_ms", ART_REAL},
    {"two_threads_ms", ART_REAL},
    {"two_to_one", ART_REAL},
    {"identical", ART_TEXT},
};

struct run_ctx {
    prof_exec *ex;
    const float *x;
    size_t nx;
    float *y;
    size_t ny;
};

static int run_once(void *arg)
{
    struct run_ctx *r = arg;
    return prof_exec_run(r->ex, r->x, r->nx, r->y, r->ny) == PROF_OK ? 0 : 1;
}

static int make_exec(const memest_model *m, uint64_t batch, unsigned threads,
                     prof_exec **ex)
{
    struct prof_exec_opts o;
    prof_exec_opts_init(&o);
    o.batch = batch;
    o.threads = threads;
    struct prof_diag d;
    memset(&d, 0, sizeof d);
    const int st = prof_exec_create(m, &o, ex, &d);
    if (st != PROF_OK) {
        fprintf(stderr, "edgefit-bench: threads table: executor at batch "
                "%llu, %u thread(s): %s (%s)\n", (unsigned long long)batch,
                threads, d.message, prof_strerror(st));
    }
    return st;
}

/* One row: the preset `name` at `batch`; CLI_EXIT_OK or a failure. */
static int threads_row(const struct bench_cfg *cfg, art_table *t,
                       const char *name, uint64_t batch)
{
    memest_model *m = NULL;
    struct memest_diag md;
    if (memest_model_preset(name, &m, &md) != MEMEST_OK) {
        fprintf(stderr, "edgefit-bench: threads table: preset %s: %s\n",
                name, md.message);
        return CLI_EXIT_FAILURE;
    }
    prof_exec *ex1 = NULL, *ex2 = NULL;
    float *x = NULL, *y1 = NULL, *y2 = NULL;
    int rc = CLI_EXIT_FAILURE;
    if (make_exec(m, batch, 1, &ex1) != PROF_OK ||
        make_exec(m, batch, 2, &ex2) != PROF_OK) {
        goto done;
    }
    const size_t nx = prof_exec_input_count(ex1);
    const size_t ny = prof_exec_output_count(ex1);
    x = bench_alloc(nx, sizeof *x);
    y1 = bench_alloc(ny, sizeof *y1);
    y2 = bench_alloc(ny, sizeof *y2);
    if (!x || !y1 || !y2) {
        fprintf(stderr, "edgefit-bench: threads table: out of memory\n");
        goto done;
    }
    struct bench_rng rng;
    bench_rng_seed(&rng, 2024u + batch);
    for (size_t i = 0; i < nx; i++) {
        x[i] = bench_rng_uniform(&rng, -1.0f, 1.0f);
    }
    struct run_ctx r1 = {ex1, x, nx, y1, ny}, r2 = {ex2, x, nx, y2, ny};
    struct bench_case cases[2] = {
        {.name = "1 thread", .fn = run_once, .ctx = &r1},
        {.name = "2 threads", .fn = run_once, .ctx = &r2},
    };
    const int bad = bench_run_cases(cfg, cases, COUNT(cases));
    if (bad != 0) {
        fprintf(stderr, "edgefit-bench: threads table: %s, batch %llu, %s: "
                "the run failed\n", name, (unsigned long long)batch,
                cases[bad - 1].name);
        goto done;
    }
    /* the last timed run of each left its output in y1 and y2 */
    const int same = memcmp(y1, y2, ny * sizeof *y1) == 0;
    size_t row;
    int st = art_table_add_row(t, &row);
    if (st == ART_OK) {
        st = bench_set_text(t, row, "model", name);
    }
    if (st == ART_OK) {
        st = bench_set_uint(t, row, "batch", batch);
    }
    if (st == ART_OK) {
        st = bench_set_real(t, row, "one_thread_ms",
                            cli_round4(cases[0].median_ms));
    }
    if (st == ART_OK) {
        st = bench_set_real(t, row, "two_threads_ms",
                            cli_round4(cases[1].median_ms));
    }
    if (st == ART_OK) {
        st = bench_set_real(t, row, "two_to_one",
                            cli_round4(cases[1].median_ms /
                                       cases[0].median_ms));
    }
    if (st == ART_OK) {
        st = bench_set_text(t, row, "identical", same ? "yes" : "no");
    }
    if (st != ART_OK) {
        rc = bench_art_failed("threads table", st);
        goto done;
    }
    rc = CLI_EXIT_OK;
done:
    free(y2);
    free(y1);
    free(x);
    prof_exec_destroy(ex2);
    prof_exec_destroy(ex1);
    memest_model_destroy(m);
    return rc;
}

int bench_table_threads(const struct bench_cfg *cfg,
                        const struct bench_host *h, art_table **out)
{
    (void)h;
    art_table *t = NULL;
    const int st = bench_table_new("bench_threads", cols, COUNT(cols), &t);
    if (st != ART_OK) {
        *out = NULL;
        return bench_art_failed("threads table", st);
    }
    static const uint64_t batches[] = {1, 8};
    int rc = CLI_EXIT_OK;
    const char *const *names = memest_preset_names();
    for (size_t i = 0; rc == CLI_EXIT_OK && names[i]; i++) {
        /* quick (tests): the two smallest convolutional presets only */
        if (cfg->quick && strcmp(names[i], "resnet8") != 0 &&
            strcmp(names[i], "ds-cnn") != 0) {
            continue;
        }
        for (size_t b = 0; rc == CLI_EXIT_OK && b < COUNT(batches); b++) {
            bench_progress(cfg, "threads %s batch %llu", names[i],
                           (unsigned long long)batches[b]);
            rc = threads_row(cfg, t, names[i], batches[b]);
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
