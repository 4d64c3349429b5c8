/* Shared by the apps that save or load a model's parameters: the
 * safetensors tensors of a libmemest model in PyTorch's names and layouts
 * (<layer>.weight: dense [out, in], conv2d [out_c, in_c/groups, k, k];
 * <layer>.bias: [out]), backed by float arrays the app fills from or hands
 * to an executor or trainer layer by layer. Not installed. */
#ifndef EDGEFIT_APPS_WEIGHTS_H
#define EDGEFIT_APPS_WEIGHTS_H

#include <stdbool.h>
#include <stddef.h>

#include "edgefit/artifacts.h"
#include "edgefit/memest.h"

/* The parameters of one layer that has any (dense, conv2d). */
struct cli_weights_layer {
    size_t layer;      /* index for memest_model_layer() */
    float *weight;     /* weight_count floats, inside cli_weights.data */
    size_t weight_count;
    float *bias;       /* bias_count floats, NULL when the layer has none */
    size_t bias_count;
};

struct cli_weights {
    struct cli_weights_layer *layers; /* layer_count entries */
    size_t layer_count;
    struct art_tensor *tensors;       /* tensor_count: weight[, bias] per
                                         layer, F32, pointing into data */
    size_t tensor_count;
    char *names;                      /* storage of the tensor names */
    float *data;                      /* every parameter, zeroed */
};

/*
 * Lay out the tensors of model's parameters with zeroed data. On failure
 * print "prog: message" and return false with *w empty. Release with
 * cli_weights_free() (also after a failure).
 */
bool cli_weights_init(const memest_model *model, struct cli_weights *w);
void cli_weights_free(struct cli_weights *w);

/*
 * Read a safetensors file (art_safetensors_load: header, offsets and size
 * checked) into w, laid out by cli_weights_init() for model. Every tensor
 * of the model must be present with its exact shape, in F32, F16 or BF16
 * (16-bit values are widened exactly with libkernels' conversions), with
 * finite values; a tensor the model does not have is an error too. On
 * failure print "prog: opt PATH: tensor 'NAME': reason" and return false;
 * w's data is then unspecified.
 */
bool cli_weights_read(const char *opt, const char *path,
                      const memest_model *model, struct cli_weights *w);

#endif
