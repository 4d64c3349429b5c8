/* Shared by the apps that save or load a model's parameters: --weights
 * (a safetensors file of PyTorch's state_dict given to the model, which
 * every executor made from it then runs), and the safetensors tensors of a
 * libmemest model in PyTorch's names and layouts (<layer>.weight in the
 * layout libmemest states, memest_layer_weight_shape(): dense [out, in],
 * conv2d [out_c, in_c/groups, kh, kw], ...; <layer>.bias: [out]), backed
 * by float arrays the app fills from or hands to a trainer layer by layer.
 * Not installed. */
#ifndef EDGEFIT_APPS_WEIGHTS_H
#define EDGEFIT_APPS_WEIGHTS_H

#include <stdbool.h>
#include <stddef.h>

#include "edgefit/artifacts.h"
#include "edgefit/memest.h"

/* The parameters of one layer that has any. weight and bias are what an
 * executor runs (prof_exec_set_params: a batch norm folded in); a layer
 * with a batch norm (a batchnorm, or a layer one is folded into) is saved
 * unfolded, as PyTorch's state_dict holds it: bn holds the batch norm's
 * weight (gamma), bias (beta), running_mean and running_var, bn_count
 * floats each, saved as "<bn>.weight" ...; a layer with a folded one
 * saves raw_weight, its weights before the fold, as "<layer>.weight"
 * (and zeros as "<layer>.bias" when it declares one: beta holds it). */
struct cli_weights_layer {
    size_t layer;      /* index for memest_model_layer() */
    float *weight;     /* weight_count floats, inside cli_weights.data */
    size_t weight_count;
    float *bias;       /* bias_count floats, NULL when the layer has none */
    size_t bias_count;
    float *bn;         /* 4 x bn_count floats, NULL without a batch norm */
    size_t bn_count;
    float *raw_weight; /* weight_count floats, NULL unless folded */
};

struct cli_weights {
    struct cli_weights_layer *layers; /* layer_count entries */
    size_t layer_count;
    struct art_tensor *tensors;       /* tensor_count: the saved tensors
                                         (above), F32, pointing into data */
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
 * Give model the weights of a safetensors file (art_safetensors_load:
 * header, offsets and size checked), the --weights FILE of the apps: its
 * tensors are a PyTorch state_dict, named and laid out as
 * memest_model_set_weights() takes them (<layer>.weight, <layer>.bias,
 * <bn>.weight/.bias/.running_mean/.running_var, batch norms folded there).
 * F32, F16 and BF16 are read (16-bit values widened exactly with
 * libkernels' conversions); "<bn>.num_batches_tracked", the batch norm's
 * step counter that PyTorch saves (int64), is skipped. Every tensor the
 * model needs must be there with its exact shape and finite values, and
 * every tensor of the file must be one the model uses. On failure print
 * "prog: opt PATH: tensor 'NAME': reason" (or the reader's message) and
 * return CLI_EXIT_USAGE, or CLI_EXIT_FAILURE when memory ran out; the
 * model is then unchanged. Call it before the model is shared.
 */
int cli_weights_load(const char *opt, const char *path, memest_model *model);

/*
 * Copy the weights model carries (memest_model_has_weights()) into w,
 * laid out by cli_weights_init() for the same model: what a trainer starts
 * from. A model without weights leaves w's folded values as they are.
 * Then cli_weights_unfold().
 */
void cli_weights_from_model(const memest_model *model, struct cli_weights *w);

/*
 * Fill the saved batch norms of w from its folded weight and bias (when
 * no trainer gives them): the batch norm of running mean 0 and variance 1
 * that computes them, the folded weights as a layer's own. PyTorch loads
 * it and computes what the executor does; the statistics a fold absorbed
 * are not recovered.
 */
void cli_weights_unfold(const memest_model *model, struct cli_weights *w);

/*
 * Give model the parameters of w (its saved tensors, PyTorch's names and
 * layouts, batch norms unfolded: what a trainer's cli_train_read_weights()
 * left there), so that what builds its own executors from the model (a
 * calibration of static int8) runs the trained weights. Call it before
 * the model is shared. CLI_EXIT_OK, or a code after "prog: message".
 */
int cli_weights_to_model(const struct cli_weights *w, memest_model *model);

#endif
