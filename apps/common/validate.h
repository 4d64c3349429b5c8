/* Shared by edgefit-validate (and its tests): reference data sets, the
 * model they are run on, and the comparison of outputs. Not installed.
 *
 * A test data set is a folder holding input_K and output_K (K = 0, 1, ...
 * without gaps), each either an ONNX TensorProto file (.pb, read with
 * memest_tensor_load_pb) or a NumPy array (.npy, read with art_npy_load),
 * the layout of ONNX's own test_data_set_N folders. Every tensor is held
 * as float32 with its full shape, the batch dimension first. */
#ifndef EDGEFIT_APPS_VALIDATE_H
#define EDGEFIT_APPS_VALIDATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "edgefit/memest.h"
#include "edgefit/profile.h"

#define VALIDATE_MAX_RANK 8
/* Model inputs a run feeds (a map holds this many). */
#define VALIDATE_MAX_INPUTS 64

/* One reference tensor. */
struct validate_ref {
    char *path;  /* the file it came from */
    char *name;  /* the TensorProto's name, else "input_K" / "output_K" */
    unsigned rank;
    uint64_t dim[VALIDATE_MAX_RANK];
    float *data;
    size_t count; /* prod(dim) */
};

struct validate_set {
    char *dir;
    const char *name; /* the folder's last component, inside dir */
    struct validate_ref *inputs;
    size_t n_inputs;
    struct validate_ref *outputs;
    size_t n_outputs;
};

/*
 * The test_data_set_* folders beside a model file, sorted by name. On
 * success *dirs (n entries, each malloc'd, the array too) is released with
 * validate_dirs_free(); none found is *n 0 and true. False after printing
 * "prog: ..." when the folder cannot be read.
 */
bool validate_find_sets(const char *model_path, char ***dirs, size_t *n);
void validate_dirs_free(char **dirs, size_t n);

/* The same for the test_data_set_* folders inside dir; what names dir in
 * the message ("--test-data DIR"). */
bool validate_find_sets_in(const char *dir, const char *what, char ***dirs,
                           size_t *n);

/*
 * Read one tensor file into *r: a .pb TensorProto, else a .npy array (any
 * dtype the reader takes, as float32). Messages and exit codes as
 * validate_set_load(); *r is empty on failure. Release with
 * validate_ref_free().
 */
int validate_ref_load(const char *path, struct validate_ref *r);
void validate_ref_free(struct validate_ref *r);

/*
 * Read every input_K and output_K of dir into *s. On failure print
 * "prog: path: reason" (the system's for I/O, the reader's for a bad
 * file: truncated, not a TensorProto, unsupported dtype, ...) or say
 * which file is missing, and return CLI_EXIT_USAGE (CLI_EXIT_FAILURE when
 * memory runs out); *s is then empty. Release with validate_set_free().
 */
int validate_set_load(const char *dir, struct validate_set *s);
void validate_set_free(struct validate_set *s);

/*
 * Load the model for set s: a .onnx file with the set's inputs given as
 * constants (memest_model_load_onnx: the ONNX node tests pass weights as
 * graph inputs; inputs that feed no weight slot stay model inputs), any
 * other spec with cli_model_load(). Messages and exit codes as
 * cli_model_load(). s may be NULL.
 */
int validate_model_load(const char *spec, const struct validate_set *s,
                        memest_model **out);

/*
 * Which reference tensor feeds each model input: by name when every
 * model input's name is among the set's inputs, else by position when
 * the counts agree. map receives memest_model_input_count() indexes into
 * s->inputs. Then every shape is checked against the model's (the
 * reference's first dimension is the batch; a tensor of exactly the
 * per-sample shape is one sample), every input must hold the same number
 * of samples, the set must have exactly one output (the model has one)
 * holding as many samples. *samples receives the number of samples.
 * A tensor whose file holds the batch elsewhere (an ONNX model's
 * time-major [T, N, D] input, memest_model_input_batch_axis(), and its
 * output) is read as the file says and rearranged here, batch first, as
 * the executor takes it. CLI_EXIT_USAGE after a message naming the file
 * and both shapes; CLI_EXIT_FAILURE without memory.
 */
int validate_match(const memest_model *model, struct validate_set *s,
                   size_t *map, uint64_t *samples);

/* r's data with its axis `axis` (where the file holds the batch) moved
 * first, when r has one axis more than the per-sample shape s (a tensor
 * of exactly s is one sample and stays). CLI_EXIT_FAILURE without memory,
 * after a message. */
int validate_ref_batch_first(struct validate_ref *r, unsigned axis,
                             struct memest_shape s);

/*
 * Run the samples of s (model input k fed from s->inputs[map[k]]) through
 * libprofile's executor at precision p, batch samples at a time (the last
 * batch padded with zeros that are not kept), with the weights the model
 * carries (an ONNX file's, or a text model's --weights), into out: samples
 * x the output's elements. A failure is reported
 * as "prog: DIR at PRECISION: reason" and returns a CLI_EXIT_ code.
 */
int validate_run(const memest_model *model, const struct validate_set *s,
                 const size_t *map, uint64_t samples, uint64_t batch,
                 enum memest_precision p, float *out);
/* validate_run() with static int8's activation ranges (prof_exec_opts.
 * ranges; NULL: the model's own quantisation, a QDQ file's). */
int validate_run_ranges(const memest_model *model,
                        const struct validate_set *s, const size_t *map,
                        uint64_t samples, uint64_t batch,
                        enum memest_precision p,
                        const struct prof_ranges *ranges,
                        enum prof_int8_requant requant, float *out);

/* The comparison of one output at one precision. */
struct validate_metrics {
    uint64_t elements;        /* values compared */
    double max_abs_error;     /* max |got - ref|, in the output's unit */
    double max_abs_reference; /* max |ref| */
    double relative_error;    /* max_abs_error / max_abs_reference */
    double rmse;              /* sqrt(mean((got - ref)^2)) */
    double cosine_similarity; /* got . ref / (|got| |ref|); NaN when a
                                 side is all zeros */
    double top1_agreement;    /* share of samples whose largest output is
                                 one of the reference's largest; NaN
                                 unless the output is a vector of 2+ */
};

/*
 * Compare got with ref: samples rows of features values each. Sums run
 * in double. A reference value that is not finite matches only the same
 * value (NaN matches NaN) and is left out of the sums; any other
 * mismatch of finiteness makes max_abs_error infinite. relative_error is
 * 0 when both maxima are 0 and infinite when only the error is not.
 * top1 says whether the rows are class scores (a vector output).
 */
void validate_compare(const float *got, const float *ref, size_t samples,
                      size_t features, bool top1,
                      struct validate_metrics *m);

/*
 * Whether the model answers with class scores, for which accuracy and
 * top-1 agreement mean something: its output is a vector of 2 or more
 * values (C, or C x 1 x 1) that ends in softmax or log-softmax, or any
 * such vector that is not its input's shape (an autoencoder gives its
 * input back, 640 values of 640 in: no classes). The one rule of every
 * app.
 */
bool validate_is_classifier(const memest_model *model);

/* The verdict: relative_error <= tolerance (NaN fails). */
bool validate_passes(const struct validate_metrics *m, double tolerance);

/* The default tolerance of a precision (relative_error): fp32 1e-4,
 * fp16 1e-2, bf16 5e-2, int8 1e-1. */
double validate_default_tolerance(enum memest_precision p);

#endif
