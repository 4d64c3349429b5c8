/* Shared by edgefit-layerwise and edgefit-stream: the devices a user
 * describes in a CSV file (--devices FILE), the lookup of --device among
 * them and the catalogue, and the --list-devices text. Not installed. */
#ifndef EDGEFIT_APPS_DEVICES_H
#define EDGEFIT_APPS_DEVICES_H

#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "cli.h"
#include "edgefit/profile.h"

/* The device options, for the option table of the apps that have them:
 * --device D, --devices FILE, --list-devices. */
enum {
    CLI_OPT_DEVICE = 1100,
    CLI_OPT_DEVICES,
    CLI_OPT_LIST_DEVICES,
    CLI_OPT_RUNTIME,
};

#define CLI_DEVICE_OPTIONS                                                  \
    {"device", required_argument, NULL, CLI_OPT_DEVICE},                    \
    {"devices", required_argument, NULL, CLI_OPT_DEVICES},                  \
    {"list-devices", no_argument, NULL, CLI_OPT_LIST_DEVICES},              \
    {"runtime", required_argument, NULL, CLI_OPT_RUNTIME}

struct cli_device_opts {
    const char *device;       /* --device, or the app's default */
    const char *devices_file; /* --devices, NULL when not given */
    bool list;                /* --list-devices */
    const char *runtime;      /* --runtime: the fitted model of --device
                                 to use (NULL: the file's first for it) */
};

/* Handle a value of getopt_long (optarg holds its argument). Returns 1 when
 * c was a device option and is stored, 0 when c is not one, -1 after
 * reporting a bad value. */
int cli_device_option(int c, struct cli_device_opts *d);

/* Devices read from a file; each remembers the line it came from. */
struct cli_devices {
    const char *path;           /* the file (the caller's string) */
    struct prof_device *devs;   /* count entries */
    size_t *lines;              /* 1-based line of each */
    size_t count;
    /* Fitted device models (rows with a runtime, edgefit-device --fit):
     * each with the figures it was fitted on and its line. */
    struct prof_devmodel *models;
    size_t *model_lines;
    size_t model_count;
};

/*
 * Read a device CSV with the catalogue's columns: a header naming name,
 * bandwidth_gbps and peak_gmacs (required) and optionally power_watts and
 * memory_mb (an empty cell or a missing column: 0, unknown), in any order,
 * then one device per line, built by prof_device_make(). On error print
 * "prog: FILE:LINE: message" (the header's line for a header error) and
 * return false with *out empty; unknown or repeated columns, a file without devices, a cell
 * that is not a finite number, a value out of its domain, a name given
 * twice, the reserved name "host" and the name of a built-in device
 * (refused rather than overridden, so that a name always means the same
 * figures) are errors. Lines are the file's own, blank lines counted; a
 * file that is not UTF-8 is refused at its first bad byte. Release with
 * cli_devices_free().
 */
bool cli_devices_load(const char *path, struct cli_devices *out);
void cli_devices_free(struct cli_devices *d);

/*
 * The device model columns (edgefit-device writes them; a file without
 * them reads as before): cores, peak_gmacs_f16, peak_gmacs_int8,
 * bandwidth_1core_gbps, runtime, combine (max or sum), the thirteen parameters
 * of prof_dm_param_name(), interval_low, interval_high, samples and
 * rms_log_residual. A row with a runtime is a fitted model of the device
 * it names on the figures of its row: a built-in name (its figures must
 * be the catalogue's, else the model was fitted on others and is
 * refused), "host" (the figures of the machine it was measured on), or
 * another name, which it also defines when no plain row does. One model
 * per (name, runtime).
 */
const struct prof_devmodel *cli_devices_model(const struct cli_devices *d,
                                              const char *device,
                                              const char *runtime);

/*
 * The device called name: first among the file's devices (d may be NULL),
 * then prof_device_lookup() (catalogue, "host", key=value). Every figure
 * must be in a sane range (bandwidth_gbps 0.001 to 1e6, the peaks 1e-6 to
 * 1e7 GMAC/s, power_watts up to 1e5, memory_mb up to 1e9; a file's
 * devices are held to the same when loaded). On error print
 * "prog: --device: message" and return false.
 */
bool cli_device_resolve(const char *name, const struct cli_devices *d,
                        struct prof_device *out);

/* As cli_device_resolve(), for a fit to the device's memory: a device
 * given field by field needs only name= and memory_mb= (bandwidth_gbps and
 * peak_gmacs, when not given, are 0 in *out: unknown). */
bool cli_device_resolve_memory(const char *name, const struct cli_devices *d,
                               struct prof_device *out);

/* The fitted model of device for the run: the one of runtime, or when
 * runtime is NULL the first the file gives for device; NULL when the
 * file has none (d may be NULL). */
const struct prof_devmodel *cli_devices_pick(const struct cli_devices *d,
                                             const char *device,
                                             const char *runtime);

/* The column name of a device's prediction: NAME_predicted_ms with the
 * name in [a-z0-9_] ('-', '.' and any other character written '_'),
 * then suffix ("", "_low", "_high"), in buf. */
void cli_device_column(const char *device, const char *suffix, char *buf,
                       size_t cap);

/* Print the catalogue with the source of each figure, "host", and the
 * file's devices when d is not NULL. */
void cli_devices_list(FILE *f, const struct cli_devices *d);

/* --list-devices in the --format asked for: the text above, or the table
 * "devices" (name, bandwidth_gbps, peak_gmacs, peak_gmacs_f16,
 * peak_gmacs_int8, power_watts, memory_mb, source; host's figures empty:
 * measured at run time) as CSV or JSON on stdout. Returns a CLI_EXIT_
 * code. */
int cli_devices_print(enum cli_format format, const struct cli_devices *d);

/* --list-devices on its own: read the --devices file when one was given,
 * print with cli_devices_print() and release it. Returns a CLI_EXIT_
 * code (CLI_EXIT_USAGE when the file cannot be read). */
int cli_devices_list_run(const struct cli_device_opts *dev,
                         enum cli_format format);

#endif
