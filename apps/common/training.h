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
#include "model.h"
#include "weights.h"

/* The same for data that cannot be read (prof_dataset_load): bad input
 * (2) unless memory ran out. */
int cli_data_failed(int st, const struct prof_diag *d);

/*
 * A trainer for model with opts (what names the model in messages), its
 * real memory next to libmemest's estimate, and the model's parameter
 * tensors laid out (zeroed) in w. Returns a CLI_EXIT_ code after printing
 * why; release t with prof_train_destroy() and w with cli_weights_free()
 * whatever happened.
 */
int cli_train_create(const memest_model *model, const char *what,
                     const struct prof_train_opts *opts, prof_train **t,
                     struct prof_train_memory *mem, struct cli_weights *w);

/*
 * Start t from the weights model carries (memest_model_has_weights(): an
 * ONNX model's, or those cli_weights_load() gave it), if it has any: copy
 * them into w (laid out by cli_train_create()) and into the trainer. what
 * names them in messages ("--init-weights FILE"). A CLI_EXIT_ code.
 */
int cli_train_start_from_model(prof_train *t, const memest_model *model,
                               struct cli_weights *w, const char *what);

/* Copy the trainer's current parameters into w (PyTorch's layouts). */
int cli_train_read_weights(const prof_train *t, struct cli_weights *w);

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
