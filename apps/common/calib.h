/* Shared by the apps that predict on the host (edgefit-layerwise,
 * edgefit-stream, edgefit-bench): the host calibration, kept between runs
 * in a cache file so that every run of every app on one machine uses the
 * same figures. Not installed.
 *
 * The cache is $XDG_CACHE_HOME/edgefit/host-XXXXXXXX.json (~/.cache/edgefit/
 * ... when XDG_CACHE_HOME is unset or not absolute, as the XDG base
 * directory specification says), one file per key (cli_calib_key(): the
 * build's kernel paths, the selected instruction-set flags and the CPU
 * model; XXXXXXXX is the key's CRC-32). An entry is used only when its
 * stored key is this run's, so a build without the SIMD paths, or a run
 * with KERN_CPU_MASK lowering the flags, never reads a SIMD run's
 * figures, and only with the same triad footprint and the same number of
 * trials; otherwise, or with
 * --recalibrate, the host is measured again and the file replaced
 * (atomically). A cache that cannot be read or written is not an error:
 * the run calibrates and says so on stderr. */
#ifndef EDGEFIT_APPS_CALIB_H
#define EDGEFIT_APPS_CALIB_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "cli.h"
#include "devices.h"
#include "edgefit/profile.h"

/* The calibration options, for the option tables of the apps:
 * --recalibrate, --triad-mib X. */
enum {
    CLI_OPT_RECALIBRATE = 1200,
    CLI_OPT_TRIAD_MIB,
};

#define CLI_CALIB_OPTIONS                                                   \
    {"recalibrate", no_argument, NULL, CLI_OPT_RECALIBRATE},                \
    {"triad-mib", required_argument, NULL, CLI_OPT_TRIAD_MIB}

#define CLI_CALIB_HELP                                                      \
    "  --triad-mib X            footprint of the main-memory triad in MiB\n" \
    "                           (all three arrays; default 2 x the last-\n"  \
    "                           level cache, at least 64)\n"                 \
    "  --recalibrate            measure the host again instead of reading\n" \
    "                           the calibration cache\n"

struct cli_calib_opts {
    struct prof_calib_opts prof; /* triad footprint, trials */
    bool recalibrate;            /* --recalibrate */
};

/* Defaults: prof_calib_opts_init(), no recalibration. */
void cli_calib_opts_init(struct cli_calib_opts *o);

/* Handle a value of getopt_long: 1 when c was a calibration option and is
 * stored, 0 when it is not one, -1 after reporting a bad value. */
int cli_calib_option(int c, struct cli_calib_opts *o);

/* The options every measuring app shares, for the default: branch of its
 * getopt_long loop: the calibration's (calib may be NULL), --device,
 * --devices and --list-devices (dev may be NULL), then the common ones.
 * Returns CLI_EXIT_OK to go on, or the exit code to return: CLI_EXIT_USAGE
 * after a bad value, or what cli_common_option() decided. */
int cli_shared_option(int c, struct cli_calib_opts *calib,
                      struct cli_device_opts *dev, const struct cli_app *app,
                      char **argv, struct cli_common *co);

/* The calibration cache's key into buf: "paths=<kern_built_paths()>;
 * flags=0x<kern_cpu_flags()>; cpu=<cli_cpu_model()>". 0, or -1 when it
 * does not fit len (CLI_CALIB_KEY_MAX always fits). */
#define CLI_CALIB_KEY_MAX 512
int cli_calib_key(char *buf, size_t len);

/* Key's cache file's path into *out (caller frees): 0, with *out NULL
 * when no cache folder is known (neither an absolute XDG_CACHE_HOME nor
 * HOME); -1, said on stderr, when there is no memory for the name. */
int cli_calib_cache_path(const char *key, char **out);

/*
 * The host's calibration: from the cache when it matches (see above),
 * else measured with o and stored (the app shows the progress). Installs
 * it with prof_host_calibration_set() so that "host" devices use it.
 * *from_cache says which. Returns a PROF_ status of the measurement.
 */
int cli_host_calibration(const struct cli_calib_opts *o,
                         struct prof_calibration *out, bool *from_cache);

/* For --version (struct cli_app.details): the edgefit libraries'
 * versions, the kernel paths built and the one selected on this CPU, and
 * the versions of jansson, libcsv and zlib. */
void cli_version_details(FILE *f);

/* The CPU's model name, as /proc/cpuinfo says it ("unknown" elsewhere;
 * on 64-bit ARM, which names no model, the board's "Model" and the core's
 * implementer and part numbers), into buf (NUL-terminated, cut to len). */
void cli_cpu_model(char *buf, size_t len);

#endif
