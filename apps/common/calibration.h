/* Shared by the apps that run static int8 (edgefit-layerwise, -sweep,
 * -report, -validate, -train, -quantize): where the activation ranges of
 * static int8 come from. Not installed. (Not to be confused with calib.h,
 * the host calibration, which measures the machine.)
 *
 * The options, parsed here and only here:
 *   --calibration-data PATH     samples to calibrate on: an IDX folder
 *                               (train-images-idx3-ubyte[.gz], else
 *                               t10k-*), a NumPy folder (train_inputs.npy,
 *                               else test_inputs.npy, with their labels) or
 *                               ONNX test data (one test_data_set_N folder
 *                               or a folder of several), read by data.h;
 *   --calibration-samples N     the first N samples (default 512; 0: all);
 *   --calibration-method M      minmax (default), percentile[:P] (P in
 *                               (50, 100], default 99.99) or entropy;
 *   --calibration-file FILE     read the ranges of a calibration file
 *                               (prof_ranges_save's JSON) instead of
 *                               calibrating; with --calibration-data,
 *                               --calibration-samples or
 *                               --calibration-method it is refused (the
 *                               file fixes all three);
 *   --int8-requant fixed|float  static int8's output stage
 *                               (prof_exec_opts.int8_requant): fixed
 *                               (default), TFLite's fixed-point multiplier
 *                               and shift; float, ONNX Runtime's.
 */
#ifndef EDGEFIT_APPS_CALIBRATION_H
#define EDGEFIT_APPS_CALIBRATION_H

#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "edgefit/memest.h"
#include "edgefit/profile.h"

enum {
    CLI_OPT_CALIBRATION_DATA = 1300,
    CLI_OPT_CALIBRATION_SAMPLES,
    CLI_OPT_CALIBRATION_METHOD,
    CLI_OPT_CALIBRATION_FILE,
    CLI_OPT_INT8_REQUANT,
};

#define CLI_CALIBRATION_OPTIONS                                             \
    {"calibration-data", required_argument, NULL, CLI_OPT_CALIBRATION_DATA}, \
    {"calibration-samples", required_argument, NULL,                        \
     CLI_OPT_CALIBRATION_SAMPLES},                                          \
    {"calibration-method", required_argument, NULL,                         \
     CLI_OPT_CALIBRATION_METHOD},                                           \
    {"calibration-file", required_argument, NULL, CLI_OPT_CALIBRATION_FILE}, \
    {"int8-requant", required_argument, NULL, CLI_OPT_INT8_REQUANT}

#define CLI_CALIBRATION_HELP                                                \
    "  --calibration-data PATH  samples whose fp32 activation ranges fix\n" \
    "                           static int8's scales: an IDX or NumPy\n"    \
    "                           folder (its training split) or ONNX\n"      \
    "                           test_data_set_* folders\n"                  \
    "  --calibration-samples N  calibrate on the first N samples (default\n" \
    "                           512; 0: all)\n"                             \
    "  --calibration-method M   minmax (default), percentile[:P] (default\n" \
    "                           P 99.99) or entropy\n"                      \
    "  --calibration-file FILE  read the ranges of a calibration file\n"    \
    "                           (edgefit-quantize writes one) instead of\n" \
    "                           calibrating\n"                             \
    "  --int8-requant fixed|float|model  static int8's output stage:\n"   \
    "                           fixed (TFLite's fixed-point multiplier\n"  \
    "                           and shift, integer only), float (ONNX\n"   \
    "                           Runtime's: the scale in float, rounded\n"  \
    "                           half to even, its outputs step for step)\n" \
    "                           or model (default: float for a QDQ\n"      \
    "                           model's own params, else fixed)\n"

struct calibration_opts {
    const char *data;      /* --calibration-data, NULL when not given */
    const char *file;      /* --calibration-file, NULL when not given */
    uint64_t samples;      /* --calibration-samples (default 512; 0 all) */
    enum prof_range_method method; /* --calibration-method */
    double percentile;     /* the percentile method's P (default 99.99) */
    uint64_t seed;         /* the executor's initial weights for a model
                              that carries none (default 42, as
                              prof_exec_opts; an app with --seed sets it) */
    bool samples_given;    /* the user gave --calibration-samples */
    bool method_given;     /* the user gave --calibration-method */
    enum prof_int8_requant requant; /* --int8-requant (default fixed) */
};

/* Defaults: no data, no file, 512 samples, min-max. */
void calibration_opts_init(struct calibration_opts *o);

/* Handle a value of getopt_long (arg: optarg): 1 when c was a calibration
 * option and is stored, 0 when it is not one, -1 after printing
 * "prog: --calibration-...: ..." for a bad value. */
int calibration_option(int c, const char *arg, struct calibration_opts *o);

/* After the options: refuse what cannot go together (--calibration-file
 * with --calibration-data, -samples or -method), naming both. CLI_EXIT_OK
 * or CLI_EXIT_USAGE after the message. */
int calibration_check(const struct calibration_opts *o);

/* Whether the user said where ranges come from (data or file). */
bool calibration_given(const struct calibration_opts *o);

/* The method as a phrase for the source sentence: "min-max",
 * "99.99th-percentile", "entropy (KL)". */
const char *calibration_method_text(enum prof_range_method m,
                                    double percentile, char *buf,
                                    size_t len);

/*
 * The ranges static int8 runs m with, and a sentence saying where they came
 * from (at most source_len - 1 bytes and a NUL; source may be NULL):
 *   a QDQ model (memest_model_is_quantized), neither option given: no
 *                        ranges (*out zeroed, count 0): the executor reads
 *                        the scales and zero points the model carries
 *                        itself (prof_exec_opts.ranges NULL, which
 *                        calibration_exec_ranges gives): "the model's own
 *                        quantisation (...)";
 *   --calibration-file   prof_ranges_load(): "ranges read from FILE
 *                        (min-max over 512 samples)";
 *   --calibration-data   the first o->samples samples read from it,
 *                        checked against the model, then
 *                        prof_ranges_calibrate(): "min-max ranges of the
 *                        first 512 samples, read from FILE";
 *   neither              the same on fallback (NULL: refused, saying that
 *                        static int8 needs --calibration-data or
 *                        --calibration-file), described as fallback_what
 *                        ("training samples"): "min-max ranges of the
 *                        first 512 of 60000 training samples, read from
 *                        FILE" (", read from" only when the set names
 *                        its source).
 * Returns CLI_EXIT_OK with *out to release by prof_ranges_finish(), or
 * CLI_EXIT_USAGE (bad data, file or model, after a message naming the
 * option and the file) or CLI_EXIT_FAILURE (memory, the executor) with
 * *out zeroed.
 */
int calibration_ranges(const memest_model *m, const struct calibration_opts *o,
                       const struct prof_dataset *fallback,
                       const char *fallback_what, struct prof_ranges *out,
                       char *source, size_t source_len);

/* What prof_exec_opts.ranges takes for ranges calibration_ranges made: r,
 * or NULL when it holds none (a QDQ model's own params). */
const struct prof_ranges *calibration_exec_ranges(const struct prof_ranges *r);

#endif
