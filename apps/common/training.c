#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "training.h"
#include "alloc_rec.h" /* last: it wraps malloc and co. */

struct progress {
    bool on;                /* stderr is a terminal and not --quiet */
    uint64_t epoch, epochs;
    uint64_t start_ns, last_ns;
};

static void on_progress(void *ctx, uint64_t step, uint64_t steps,
                        double mean_loss)
{
    struct progress *p = ctx;
    if (!p->on || steps == 0) {
        return;
    }
    const uint64_t now = prof_now_ns();
    /* Ten redraws a second are plenty and cost nothing next to a step. */
    if (step < steps && now - p->last_ns < 100000000u) {
        return;
    }
    p->last_ns = now;
    enum { WIDTH = 24 };
    char bar[WIDTH + 1];
    const size_t filled = (size_t)(step * WIDTH / steps);
    for (size_t i = 0; i < WIDTH; i++) {
        bar[i] = i < filled ? '#' : '.';
    }
    bar[WIDTH] = '\0';
    const double spent = (double)(now - p->start_ns) * 1e-9;
    const double eta = step ? spent * (double)(steps - step) / (double)step
                            : 0.0;
    fprintf(stderr, "\repoch %" PRIu64 "/%" PRIu64 " [%s] %" PRIu64 "/%"
            PRIu64 " loss %.4f ETA %.0fs\033[K", p->epoch, p->epochs, bar,
            step, steps, mean_loss, ceil(eta));
    fflush(stderr);
}

void cli_train_log_free(struct cli_train_log *log)
{
    free(log->epochs);
    free(log->test_accuracy);
    free(log->test_loss);
    memset(log, 0, sizeof *log);
}

int cli_data_failed(int st, const struct prof_diag *d)
{
    cli_prof_failed("--data", st, d);
    return st == PROF_E_NOMEM ? CLI_EXIT_FAILURE : CLI_EXIT_USAGE;
}

static int failed(const char *what, int st)
{
    return cli_prof_failed(what, st, NULL);
}

int cli_train_create(const memest_model *model, const char *what,
                     const struct prof_train_opts *opts, prof_train **t,
                     struct prof_train_memory *mem, struct cli_weights *w)
{
    struct prof_diag d = {0};
    int st = prof_train_create(model, opts, t, &d);
    if (st != PROF_OK) {
        return cli_prof_failed(what, st, &d);
    }
    st = prof_train_memory(*t, mem);
    if (st != PROF_OK) {
        return failed("training memory", st);
    }
    return cli_weights_init(model, w) ? CLI_EXIT_OK : CLI_EXIT_FAILURE;
}

int cli_train_start_from_model(prof_train *t, const memest_model *model,
                               struct cli_weights *w, const char *what)
{
    if (!memest_model_has_weights(model)) {
        return CLI_EXIT_OK;
    }
    cli_weights_from_model(model, w);
    for (size_t i = 0; i < w->layer_count; i++) {
        const struct cli_weights_layer *l = &w->layers[i];
        const int st = prof_train_set_params(t, l->layer, l->weight,
                                             l->weight_count, l->bias,
                                             l->bias_count);
        if (st != PROF_OK) {
            char where[300];
            snprintf(where, sizeof where, "%s: layer %s", what,
                     memest_model_layer(model, l->layer)->name);
            return cli_prof_failed(where, st, NULL);
        }
    }
    return CLI_EXIT_OK;
}

int cli_train_read_weights(const prof_train *t, struct cli_weights *w)
{
    for (size_t i = 0; i < w->layer_count; i++) {
        const struct cli_weights_layer *l = &w->layers[i];
        int st = prof_train_get_params(t, l->layer, l->weight,
                                       l->weight_count, l->bias,
                                       l->bias_count);
        /* a batch norm as PyTorch saves it (weights.h) */
        const size_t C = l->bn_count;
        if (st == PROF_OK && l->bn) {
            st = prof_train_get_batchnorm(t, l->layer, l->bn, l->bn + C,
                                          l->bn + 2 * C, l->bn + 3 * C, C);
        }
        if (st == PROF_OK && l->raw_weight) {
            st = prof_train_get_unfolded_weight(t, l->layer, l->raw_weight,
                                                l->weight_count);
        }
        if (st != PROF_OK) {
            return failed("reading the trained weights", st);
        }
    }
    return CLI_EXIT_OK;
}

int cli_train_epochs(prof_train *t, const struct prof_dataset *train,
                     const struct prof_dataset *test, uint64_t epochs,
                     bool progress, struct cli_train_log *log)
{
    memset(log, 0, sizeof *log);
    if (epochs == 0) {
        return CLI_EXIT_OK;
    }
    log->epochs = calloc((size_t)epochs, sizeof *log->epochs);
    log->test_accuracy = calloc((size_t)epochs, sizeof(double));
    log->test_loss = calloc((size_t)epochs, sizeof(double));
    if (!log->epochs || !log->test_accuracy || !log->test_loss) {
        cli_error("out of memory: the training log");
        return CLI_EXIT_FAILURE;
    }
    struct progress p = {.on = progress, .epochs = epochs};
    for (uint64_t e = 0; e < epochs; e++) {
        struct prof_train_epoch_result *er = &log->epochs[e];
        p.epoch = e + 1;
        p.start_ns = p.last_ns = prof_now_ns();
        int st = prof_train_epoch(t, train->x, train->y, train->count,
                                  on_progress, &p, er);
        if (st != PROF_OK) {
            if (p.on) {
                fputc('\n', stderr);
            }
            /* The data were checked against the model, so a range error
             * here is a loss or gradient that is no longer finite. */
            if (st == PROF_E_RANGE) {
                cli_error("training epoch %" PRIu64 ": the loss or a "
                          "gradient is not finite: training diverged (a "
                          "smaller --alpha may help)", e + 1);
                return CLI_EXIT_FAILURE;
            }
            char what[64];
            snprintf(what, sizeof what, "training epoch %" PRIu64, e + 1);
            return failed(what, st);
        }
        log->elapsed_s += er->seconds;
        st = prof_train_evaluate(t, test->x, test->y, test->count,
                                 &log->test_accuracy[e], &log->test_loss[e]);
        if (st != PROF_OK) {
            return failed("evaluating on the test set", st);
        }
        log->skipped_steps += er->skipped_steps;
        log->done = (size_t)e + 1;
        if (p.on) {
            fprintf(stderr, "\repoch %" PRIu64 "/%" PRIu64 ": loss %.4f, "
                    "train accuracy %.4f, test accuracy %.4f, %.2f s\033[K\n",
                    e + 1, epochs, er->loss, er->train_accuracy,
                    log->test_accuracy[e], er->seconds);
        }
    }
    return CLI_EXIT_OK;
}

art_table *cli_train_history(const struct cli_train_log *log)
{
    static const struct {
        const char *name;
        enum art_type type;
    } cols[] = {
        {"epoch", ART_UINT},          {"loss", ART_REAL},
        {"train_accuracy", ART_REAL}, {"test_accuracy", ART_REAL},
        {"epoch_time_s", ART_REAL},   {"steps", ART_UINT},
        {"loss_scale", ART_REAL},     {"skipped_steps", ART_UINT},
        {"test_loss", ART_REAL},
    };
    art_table *t = NULL;
    int st = art_table_create("history", &t);
    for (size_t i = 0; st == ART_OK && i < sizeof cols / sizeof cols[0];
         i++) {
        st = art_table_add_column(t, cols[i].name, cols[i].type);
    }
    for (size_t e = 0; st == ART_OK && e < log->done; e++) {
        const struct prof_train_epoch_result *er = &log->epochs[e];
        size_t row = 0;
        st = art_table_add_row(t, &row);
        if (st == ART_OK) {
            st = art_table_set_uint(t, row, 0, er->epoch);
        }
        const double v[] = {er->loss, er->train_accuracy,
                            log->test_accuracy[e], er->seconds};
        for (size_t c = 0; st == ART_OK && c < 4; c++) {
            st = art_table_set_real(t, row, 1 + c, v[c]);
        }
        if (st == ART_OK) {
            st = art_table_set_uint(t, row, 5, er->steps);
        }
        if (st == ART_OK) {
            st = art_table_set_real(t, row, 6, er->loss_scale);
        }
        if (st == ART_OK) {
            st = art_table_set_uint(t, row, 7, er->skipped_steps);
        }
        if (st == ART_OK) {
            st = art_table_set_real(t, row, 8, log->test_loss[e]);
        }
    }
    if (st != ART_OK) {
        art_table_destroy(t);
        return NULL;
    }
    return t;
}
