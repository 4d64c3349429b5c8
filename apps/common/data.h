/* Shared by the apps that run a model on the user's data (edgefit-sweep,
 * edgefit-train, edgefit-report): reading it into a struct prof_dataset
 * (libprofile) and checking it against the model before any work. Not
 * installed.
 *
 * --data DIR holds labelled samples, in one of two layouts:
 *
 *   IDX (MNIST, Fashion-MNIST)  train-images-idx3-ubyte[.gz] with
 *                               train-labels-idx1-ubyte[.gz], and t10k-*
 *                               alike: images of any rows x cols, one
 *                               channel, pixels / 255;
 *   NumPy                       train_inputs.npy with train_labels.npy,
 *                               and test_inputs.npy with test_labels.npy:
 *                               inputs [N, ...] float32 (float16, bfloat16
 *                               and float64 are converted), taken as they
 *                               are (no scaling); labels [N] of an integer
 *                               type, 0 to 255.
 *
 * --test-data DIR holds reference outputs instead of labels: ONNX's
 * test_data_set_N layout (input_0 and output_0, each .pb TensorProto or
 * .npy, the first dimension the samples), either one such folder or a
 * folder holding several test_data_set_* (a model's folder), whose samples
 * are joined in the order of their numbers. */
#ifndef EDGEFIT_APPS_DATA_H
#define EDGEFIT_APPS_DATA_H

#include <stdbool.h>
#include <stdint.h>

#include "edgefit/memest.h"
#include "edgefit/profile.h"

/* The NumPy layout's file names, "<split>_inputs.npy" and
 * "<split>_labels.npy" with split "train" or "test". */
#define DATA_NPY_INPUTS "_inputs.npy"
#define DATA_NPY_LABELS "_labels.npy"

enum data_split { DATA_TRAIN, DATA_TEST };

/*
 * Read one split of --data DIR (NULL: Fashion-MNIST's default folder,
 * prof_dataset_default_dir()), at most max_count samples (0: all): the
 * NumPy files when DIR holds <split>_inputs.npy, else the IDX files. On
 * failure print "prog: --data DIR: reason" (naming the file) and return
 * CLI_EXIT_USAGE (CLI_EXIT_FAILURE when memory runs out); *out is then
 * zeroed. Release with prof_dataset_finish().
 */
int data_load(const char *dir, enum data_split split, uint64_t max_count,
              struct prof_dataset *out);
/* Whether DIR (NULL: the default folder) holds the split's inputs
 * (<split>_inputs.npy, or the IDX images, compressed or not). */
bool data_has_split(const char *dir, enum data_split split);

/* data_load() for another option than --data (--calibration-data): the
 * messages name opt. */
int data_load_as(const char *opt, const char *dir, enum data_split split,
                 uint64_t max_count, struct prof_dataset *out);

/*
 * Read the samples of a folder named by opt, whatever its layout: its
 * `prefer` split when it holds one (calibration prefers the training
 * split, a measure the test split); else ONNX test data (input_0 or
 * test_data_set_* folders) when it holds some; else its other split. At
 * most max_count samples (0: all). *what names them for a sentence
 * ("training samples", "test samples", "samples"). Errors as data_load(),
 * with opt in the message; a folder with none of these is refused naming
 * every layout looked for.
 */
int data_load_folder(const char *opt, const char *dir,
                     enum data_split prefer, uint64_t max_count,
                     struct prof_dataset *out, const char **what);

/*
 * Read --test-data DIR: one test_data_set_N folder, or every
 * test_data_set_* folder DIR holds, joined. Exactly one input and one
 * output (the sweep feeds one input; edgefit-validate runs the others). At
 * most max_count samples (0: all). The set has reference outputs and no
 * labels. With a model whose file holds the batch elsewhere
 * (memest_model_input_batch_axis, an ONNX LSTM's time-major [T, N, D]),
 * the tensors are read as the file says and moved batch first; model may
 * be NULL (batch first). Errors as data_load().
 */
int data_load_reference(const char *dir, uint64_t max_count,
                        const memest_model *model, struct prof_dataset *out);
/* data_load_reference() whose messages name opt, not --test-data. */
int data_load_reference_as(const char *opt, const char *dir,
                           uint64_t max_count, const memest_model *model,
                           struct prof_dataset *out);

/*
 * Check model against d before any work, with opt the option that named
 * the data ("--data", "--test-data") for the message:
 *  - the model has one input, and the data's sample shape is the model's
 *    input shape up to axes of size 1 (1 x 28 x 28 feeds 28 x 28), or the
 *    model reads a vector of as many values (an MLP on images);
 *  - labels: the model is a classifier (validate_is_classifier) with at least
 *    d->classes outputs;
 *  - reference outputs: their shape is the model's output shape up to
 *    axes of size 1.
 * On a mismatch print one message naming both shapes ("--data DIR: the
 * model mlp:1000-10 reads 1000 values per sample; the data has 1x28x28
 * (FILE)") and return CLI_EXIT_USAGE; else CLI_EXIT_OK.
 */
int data_check(const memest_model *model, const struct prof_dataset *d,
               const char *opt);

/* data_check() without a message: true when model fits d. */
bool data_fits(const memest_model *model, const struct prof_dataset *d);

/*
 * When the model reads a sequence (an input T x D) and d's samples have
 * another shape of as many values (IDX images 1 x 28 x 28 read by a model
 * of input 28x28), write the sentence that says how they are fed into
 * buf: "images 1x28x28 fed as the model's input 28x28, a sequence of 28
 * steps of 28 features (row r of an image is step r; the same 784 values
 * in the same order)". Otherwise (the same shape, or an input that is not
 * a sequence) buf is "". Returns buf.
 */
const char *data_feed_note(const memest_model *model,
                           const struct prof_dataset *d, char *buf,
                           size_t len);

/* The standard error of an accuracy p measured on n samples,
 * sqrt(p (1 - p) / n): differences below it are noise. NaN for n 0 or p
 * outside [0, 1]. */
double data_accuracy_stderr(double p, uint64_t n);

#endif
