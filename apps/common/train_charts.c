#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "train_charts.h"
#include "alloc_rec.h" /* last: it wraps malloc and co. */

void train_charts_free(struct train_charts *c)
{
    free(c->epoch);
    free(c->train_loss);
    free(c->train_acc);
    free(c->sx);
    free(c->sy);
    free(c->kx);
    free(c->ky);
    memset(c, 0, sizeof *c);
}

bool train_charts_init(const struct prof_train_epoch_result *epochs,
                       size_t n, const double *test_accuracy,
                       const double *test_loss,
                       const struct prof_train_scale_event *events,
                       size_t n_events, double initial_scale,
                       struct train_charts *c)
{
    memset(c, 0, sizeof *c);
    if (n == 0) {
        cli_error("no epoch to draw");
        return false;
    }
    c->epoch = calloc(n, sizeof *c->epoch);
    c->train_loss = calloc(n, sizeof *c->train_loss);
    c->train_acc = calloc(n, sizeof *c->train_acc);
    if (!c->epoch || !c->train_loss || !c->train_acc) {
        goto nomem;
    }
    uint64_t total_steps = 0;
    for (size_t i = 0; i < n; i++) {
        c->epoch[i] = (double)epochs[i].epoch;
        c->train_loss[i] = epochs[i].loss;
        c->train_acc[i] = epochs[i].train_accuracy;
        total_steps += epochs[i].steps;
    }
    /* Train figures are means over the epoch as it trained; test ones are
     * measured after it, so they sit at the same epoch number. */
    c->loss[0] = (struct art_series){.name = "train (mean over the epoch)",
                                     .n = n, .x = c->epoch,
                                     .y = c->train_loss};
    c->acc[0] = (struct art_series){.name = "train (as it trained)", .n = n,
                                    .x = c->epoch, .y = c->train_acc};
    size_t nl = 1, na = 1;
    if (test_loss) {
        c->loss[nl++] = (struct art_series){
            .name = "test (after the epoch)", .n = n, .x = c->epoch,
            .y = test_loss, .dashed = true, .marker = ART_MARKER_SQUARE};
    }
    if (test_accuracy) {
        c->acc[na++] = (struct art_series){
            .name = "test (after the epoch)", .n = n, .x = c->epoch,
            .y = test_accuracy, .dashed = true, .marker = ART_MARKER_SQUARE};
    }
    c->panels[0] = (struct art_chart){
        .kind = ART_CHART_LINE, .title = "Loss per epoch",
        .x_label = "Epoch", .y_label = "Loss (cross-entropy, nats)",
        .series = c->loss, .n_series = nl};
    c->panels[1] = (struct art_chart){
        .kind = ART_CHART_LINE, .title = "Accuracy per epoch",
        .x_label = "Epoch", .y_label = "Accuracy (fraction correct)",
        .series = c->acc, .n_series = na};
    c->curves = (struct art_figure){.title = "Training curves",
                                    .panels = c->panels, .n_panels = 2};

    if (initial_scale > 0) {
        /* the trajectory: the initial scale at step 0, each event's new
         * scale from its step on, held to the last step */
        c->sx = calloc(n_events + 2, sizeof *c->sx);
        c->sy = calloc(n_events + 2, sizeof *c->sy);
        c->kx = calloc(n_events + 1, sizeof *c->kx);
        c->ky = calloc(n_events + 1, sizeof *c->ky);
        if (!c->sx || !c->sy || !c->kx || !c->ky) {
            goto nomem;
        }
        size_t ns = 0, nk = 0;
        double scale = initial_scale;
        c->sx[ns] = 0;
        c->sy[ns++] = scale;
        for (size_t i = 0; i < n_events; i++) {
            if (events[i].skipped) {
                /* marked at the scale whose gradients overflowed */
                c->kx[nk] = (double)events[i].step;
                c->ky[nk++] = scale;
            }
            scale = events[i].scale;
            c->sx[ns] = (double)events[i].step;
            c->sy[ns++] = scale;
        }
        c->sx[ns] = (double)total_steps;
        c->sy[ns++] = scale;
        c->scale_series[0] = (struct art_series){
            .name = "loss scale", .n = ns, .x = c->sx, .y = c->sy,
            .style = ART_STYLE_STEP};
        c->scale_series[1] = (struct art_series){
            .name = "skipped step (inf/NaN gradient)", .n = nk, .x = c->kx,
            .y = c->ky, .style = ART_STYLE_POINTS,
            .marker = ART_MARKER_CROSS, .color = 4};
        snprintf(c->scale_title, sizeof c->scale_title,
                 "fp16 loss scale over training: %zu skipped step%s", nk,
                 nk == 1 ? "" : "s");
        c->scale = (struct art_chart){
            .kind = ART_CHART_LINE, .title = c->scale_title,
            .x_label = "Training step (batches)",
            .y_label = "Loss scale (log)", .y_scale = ART_SCALE_LOG,
            .series = c->scale_series, .n_series = nk ? 2 : 1};
        c->has_scale = true;
    }
    return true;
nomem:
    cli_error("out of memory: the training charts");
    train_charts_free(c);
    return false;
}
