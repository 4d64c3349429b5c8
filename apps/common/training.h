/* Shared by edgefit-train and edgefit-report: the epochs of a training run
 * with a test evaluation after each, a progress bar on a terminal, and the
 * history table (training_history.csv). Not installed. */
#ifndef EDGEFIT_APPS_TRAINING_H
#define EDGEFIT_APPS_TRAINING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "edgefit/artifacts.h"
#include "edgefit/profile.h"

/* What the epochs gave; arrays of `epochs` entries, `done` of them set. */
struct cli_train_log {
    struct prof_train_epoch_result *epochs;
    double *test_accuracy; /* after each epoch */
    double *test_loss;
    size_t done;
    uint64_t skipped_steps;
    double elapsed_s;      /* the epochs alone, evaluations left out */
};

/*
 * Train epochs epochs of t on train, evaluating on test after each. With
 * progress, a bar (step, loss, ETA) and one line per epoch on stderr. On
 * failure print "prog: message" and return a CLI_EXIT_ code; log keeps
 * the epochs done. Release with cli_train_log_free().
 */
int cli_train_epochs(prof_train *t, const struct prof_dataset *train,
                     const struct prof_dataset *test, uint64_t epochs,
                     bool progress, struct cli_train_log *log);
void cli_train_log_free(struct cli_train_log *log);

/* training_history.csv: epoch, loss, train_accuracy, test_accuracy,
 * epoch_time_s, steps, loss_scale, skipped_steps, test_loss. NULL when
 * out of memory. */
art_table *cli_train_history(const struct cli_train_log *log);

#endif
