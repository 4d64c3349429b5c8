/* Shared by edgefit-train and edgefit-report: the charts of a training
 * run. training_curves.png: loss and accuracy per epoch, train and test,
 * side by side; loss_scale.png (fp16): the loss scale over the steps on a
 * log axis, the skipped steps marked. Not installed. */
#ifndef EDGEFIT_APPS_TRAIN_CHARTS_H
#define EDGEFIT_APPS_TRAIN_CHARTS_H

#include <stdbool.h>
#include <stddef.h>

#include "edgefit/artifacts.h"
#include "edgefit/profile.h"

struct train_charts {
    struct art_figure curves;
    struct art_chart panels[2];
    struct art_series loss[2], acc[2];
    double *epoch, *train_loss, *train_acc;
    bool has_scale;             /* fp16: a loss-scale chart */
    struct art_chart scale;
    struct art_series scale_series[2];
    double *sx, *sy, *kx, *ky;  /* the trajectory, the skipped steps */
    char scale_title[96];
};

/*
 * Charts of n >= 1 epochs: epochs[i] as prof_train_epoch() returned them,
 * test_accuracy[i] and test_loss[i] (either may be NULL) measured after
 * epoch i. With events (fp16's prof_train_scale_events(), may be 0) and
 * initial_scale > 0, also the loss-scale chart. On failure print
 * "prog: message" and return false. Release with train_charts_free().
 */
bool train_charts_init(const struct prof_train_epoch_result *epochs,
                       size_t n, const double *test_accuracy,
                       const double *test_loss,
                       const struct prof_train_scale_event *events,
                       size_t n_events, double initial_scale,
                       struct train_charts *c);
void train_charts_free(struct train_charts *c);

#endif
