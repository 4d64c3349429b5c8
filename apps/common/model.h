/* Shared by the apps that load a model and run it through libprofile: the
 * model given by --model (and its --weights) and the messages of failed
 * libprofile calls. Not installed. */
#ifndef EDGEFIT_APPS_MODEL_H
#define EDGEFIT_APPS_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "edgefit/memest.h"
#include "edgefit/profile.h"

/* Load --model SPEC (a preset, a file, or "-": a text model or an ONNX
 * file read from stdin, once, whatever the number of calls) into *out.
 * A SPEC that is no preset must name a regular file (a FIFO, a folder or
 * a device is refused before anything opens it); a bare word that is
 * neither is reported as an unknown preset with the list of presets.
 * When weights is
 * not NULL, give it the weights of that safetensors file (--weights FILE,
 * cli_weights_load()): every executor made from the model then runs them.
 * On failure print "prog: source:line:column: message" (or the weights'
 * message) and return CLI_EXIT_USAGE (bad input) or CLI_EXIT_FAILURE (out
 * of memory), *out NULL. */
int cli_model_load(const char *spec, const char *weights, memest_model **out);

/* The batch a run of the model uses: a file that fixes its batch runs at
 * it (another batch would not be the model the file describes), unless
 * --batch was given (have_batch), which must then equal it; otherwise
 * batch. verb says what the app does at that batch ("run", "plan") in
 * the refusal. CLI_EXIT_OK with *out set, or CLI_EXIT_USAGE after the
 * message naming both batches. */
int cli_model_batch(const memest_model *model, const char *spec,
                    bool have_batch, uint64_t batch, const char *verb,
                    uint64_t *out);

/* The checks cli_model_load() makes before it opens anything, for an app
 * that reads the file its own way: an empty SPEC, a bare word that is no
 * preset and no file, a path that does not exist (the system's reason) or
 * is not a regular file. CLI_EXIT_OK or CLI_EXIT_USAGE after a message. */
int cli_model_check_spec(const char *spec);

/* Report a failed libprofile call as "prog: what: message", the message
 * being diag's when it has one (d may be NULL), else prof_strerror(st).
 * Returns the exit code: CLI_EXIT_FAILURE for what the run itself failed
 * at (memory, a kernel, I/O, a callback), CLI_EXIT_USAGE otherwise. */
int cli_prof_failed(const char *what, int st, const struct prof_diag *d);

/* Parse a list of executed precisions, "fp32,int8" (each of fp32, fp16,
 * bf16, int8 or their long names, at most once, at most cap of them) into
 * out[0..*n-1]. On failure print "prog: opt: ..." and return false. */
bool cli_parse_precisions(const char *opt, const char *text,
                          enum memest_precision *out, size_t cap,
                          size_t *n);

#endif
