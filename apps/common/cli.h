/* Shared by the edgefit apps: strict option values and the exit codes of
 * the design (0 success, 1 runtime failure, 2 bad usage or input, 3 a
 * constraint that --strict asked for cannot be met). Not installed.
 *
 * The rest of apps/common, for every app (a new one included):
 *   table.h    the columns of a table as one list of {name, type, getter}
 *              (and one-row records of {name, type, value}), the terminal's
 *              key-column view, and the writing of outputs: stdout in
 *              --format table|csv|json (CSV one table only), --out as one
 *              bundle plus a JSON of everything. Every column name must be
 *              in README.md's Glossary (tests/apps/test_vocabulary.c).
 *   calib.h    the host calibration, cached in
 *              $XDG_CACHE_HOME/edgefit/host.json; --recalibrate,
 *              --triad-mib; --version's details.
 *   devices.h  --device, --devices, --list-devices.
 */
#ifndef EDGEFIT_APPS_CLI_H
#define EDGEFIT_APPS_CLI_H

#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "edgefit/artifacts.h"

enum {
    CLI_EXIT_OK = 0,
    CLI_EXIT_FAILURE = 1,
    CLI_EXIT_USAGE = 2,
    CLI_EXIT_CONSTRAINT = 3,
};

enum cli_format {
    CLI_FORMAT_TABLE = 0,
    CLI_FORMAT_CSV,
    CLI_FORMAT_JSON,
};

/* The program name used as the prefix of diagnostics. */
void cli_set_program(const char *name);
const char *cli_program(void);

/* Print "prog: message" to stderr. */
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Print "prog: out of memory: what (bytes bytes)" and return
 * CLI_EXIT_FAILURE: what an app says when an allocation fails. */
int cli_nomem(const char *what, size_t bytes);
/* The bytes of the allocation behind an out-of-memory failure: the
 * largest request the app (alloc_rec.h) or a library (memest_, prof_,
 * art_, kern_nomem_bytes()) has failed to get on this thread; 0 when none. A
 * failure ends the run, so it is the one being reported unless an
 * optional allocation that was done without failed earlier. cli_error()
 * adds "(N bytes)" to an "out of memory" message that names no size. */
size_t cli_nomem_bytes(void);
/* main's exit code from rc: CLI_EXIT_USAGE becomes CLI_EXIT_FAILURE once
 * an error has said "out of memory" (an allocation failure that reached
 * the user through a path meant for bad input is still no bad input). */
int cli_exit(int rc);

/* Print "prog: warning: message" to stderr. Warnings always reach stderr,
 * whatever --format and --quiet say; an app that writes JSON also puts
 * them in its document. */
void cli_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Progress of a long run: one line on stderr, "prog: [ 42%] what",
 * overwritten by the next, only when on (callers pass !quiet &&
 * isatty(stderr): cli_progress_wanted()). done of total steps; what NULL
 * clears the line. */
bool cli_progress_wanted(bool quiet);
void cli_progress(bool on, unsigned done, unsigned total, const char *what);

/* Parse a whole decimal integer in [min, max] given to option opt. On
 * failure print "prog: --opt: '<text>' is not ..." and return false. */
bool cli_parse_u64(const char *opt, const char *text, uint64_t min,
                   uint64_t max, uint64_t *out);
/* Parse a finite number in [min, max]. */
bool cli_parse_double(const char *opt, const char *text, double min,
                      double max, double *out);
/* Parse a finite number in (0, max]: zero and negative zero are refused
 * ("must be above 0"), for budgets and powers where 0 means nothing. */
bool cli_parse_positive(const char *opt, const char *text, double max,
                        double *out);
/* Split a comma list ("fp32,int8", "1,8,32") into at most cap items of
 * at most 31 bytes each. On failure print "prog: opt: ..." (an empty
 * item, one too long, too many) and return false. */
bool cli_split_list(const char *opt, const char *text, char (*items)[32],
                    size_t cap, size_t *n);
/* Parse table|csv|json. */
bool cli_parse_format(const char *opt, const char *text,
                      enum cli_format *out);

/* The options every app shares, and how getopt_long reports them: put
 * CLI_COMMON_OPTIONS at the end of the app's option table (before the
 * terminating zero entry) and pass every value getopt_long returns that the
 * app does not know to cli_common_option(). */
enum {
    CLI_OPT_FORMAT = 1000,
    CLI_OPT_OUT,
    CLI_OPT_STRICT,
    CLI_OPT_QUIET,
    CLI_OPT_HELP,
    CLI_OPT_VERSION,
    CLI_OPT_WEIGHTS,
};

#define CLI_COMMON_OPTIONS                                                  \
    {"format", required_argument, NULL, CLI_OPT_FORMAT},                    \
    {"out", required_argument, NULL, CLI_OPT_OUT},                          \
    {"help", no_argument, NULL, CLI_OPT_HELP},                              \
    {"version", no_argument, NULL, CLI_OPT_VERSION}
/* For the apps that have them. */
#define CLI_STRICT_OPTION {"strict", no_argument, NULL, CLI_OPT_STRICT}
#define CLI_QUIET_OPTION {"quiet", no_argument, NULL, CLI_OPT_QUIET}
/* --weights FILE: for the apps that take a model (cli_model_load()). */
#define CLI_WEIGHTS_OPTION                                                  \
    {"weights", required_argument, NULL, CLI_OPT_WEIGHTS}

struct cli_common {
    enum cli_format format; /* --format, default table */
    const char *out_dir;    /* --out DIR, NULL when not given */
    bool strict;            /* --strict */
    bool quiet;             /* --quiet */
    const char *weights;    /* --weights FILE, NULL when not given */
};

/* What an app needs to answer --help and --version. */
struct cli_app {
    const char *name;       /* "edgefit-memfit" */
    const char *version;    /* "0.1.0" */
    void (*usage)(FILE *f); /* prints the --help text */
    /* prints what --version adds after "name version" (the libraries,
     * kernel paths and dependencies: cli_version_details()), or NULL */
    void (*details)(FILE *f);
};

/* Handle one value from getopt_long (opterr must be 0; optstring "h", so
 * that -h is --help) that the app did not: a common option, or an unknown
 * option / missing value, which it reports. --help and --version print
 * and exit(0). Returns CLI_EXIT_OK
 * when handled, CLI_EXIT_USAGE after reporting a bad option. */
int cli_common_option(int c, const struct cli_app *app, char **argv,
                      struct cli_common *co);

/*
 * Check, before any long work, that an output folder can be written (every
 * app calls it for --out): the folder itself when it exists, otherwise the
 * nearest existing folder above it, where it would be created, with no
 * symbolic link to a missing target on the way. On failure print
 * "prog: opt DIR: reason" with the system's strerror text ("Not a
 * directory", "Permission denied", "No such file or directory (a symbolic
 * link whose target is missing)"), naming the ancestor when it is the one
 * at fault, and return false. Nothing is created.
 */
bool cli_check_out_dir(const char *opt, const char *dir);
/* The same for an output file written under a temporary name in its
 * folder and renamed into place: its folder must be writable (or
 * creatable) and path must not be a folder. */
bool cli_check_out_file(const char *opt, const char *path);
/* cli_check_out_dir() for --out as an exit code: CLI_EXIT_OK when dir is
 * NULL or usable, else CLI_EXIT_USAGE (after the message). */
int cli_out_check(const char *dir);
/* Lock --out DIR for the rest of the run (art_dir_lock()): CLI_EXIT_OK, or
 * CLI_EXIT_FAILURE after saying that another run holds it (or no memory).
 * cli_out_check() calls it once the folder is fine. */
int cli_out_lock(const char *dir);

/* Print text on f wrapped at width columns on spaces: the first line
 * after indent, the next ones after indent and two more spaces. A word
 * longer than the line stands alone on its line. */
void cli_print_wrapped(FILE *f, const char *text, int indent, int width);

/* Before getopt_long(): refuse an option given twice ("--model a --model
 * b" would silently keep b), naming it and both arguments, with
 * CLI_EXIT_USAGE after the message; CLI_EXIT_OK otherwise. opts is the
 * app's table (abbreviations and --name=value read as getopt_long()
 * reads them); repeatable, NULL-terminated or NULL, names the options
 * meant to be given several times (--test-data, --table). */
int cli_refuse_repeats(int argc, char **argv, const struct option *opts,
                       const char *const *repeatable);

/* Before opening an input file: refuse one that exists but is not a
 * regular file ("prog: opt PATH: a FIFO, not a regular file"), since
 * opening a FIFO for reading blocks until a writer comes, and a folder or
 * a device is no input either. stat() opens nothing. A path that does not
 * exist passes: its reader reports the system's reason. */
bool cli_check_regular_file(const char *opt, const char *path);

/* What a file of this st_mode is, for a message: "a folder", "a FIFO",
 * "a socket", "a character device", "a block device", "a file". */
const char *cli_file_kind(unsigned mode);

/* After the options: operands are not accepted. Returns CLI_EXIT_OK or
 * CLI_EXIT_USAGE after naming the first one. */
int cli_no_operands(int argc, char **argv);


/* Finish what an app printed on stdout: st is the status of the printing
 * (an ART_ code). Flushes stdout; on failure prints "prog: stdout: reason"
 * (the system's, e.g. "No space left on device", for a write error) and
 * returns CLI_EXIT_FAILURE, else CLI_EXIT_OK. When the --out folder was
 * written in full before (cli_out_commit()), a failure is only a warning
 * ("prog: warning: stdout: reason (the results are complete in DIR)") and
 * the run succeeds: every app writes its folder first, then stdout. */
int cli_stdout_finish(int st);

/* One file of --out: a table written as CSV, a document as JSON or a
 * chart as PNG (exactly one is set). */
struct cli_out_file {
    const char *name;
    const art_table *csv;            /* one of csv, doc, chart, figure */
    const art_doc *doc;
    const struct art_chart *chart;   /* a PNG */
    const struct art_figure *figure; /* a PNG of several panels */
};

/*
 * v as a file keeps the quantity called name: the digits that mean
 * something and no float noise (1.13765857, not 1.1376585700000001).
 * Times (a word ms, s, us or ns in the name: latency_ms,
 * latency_ms_mean; not mb_s, a rate) to the microsecond or to three
 * significant digits, whichever keeps more; accuracies and agreements (a name
 * containing "accuracy" or "agreement") to four decimals; whole numbers
 * as they are (counts, byte sizes held as reals); any other real to six
 * significant digits. NaN and infinities as they are. cli_out_bundle (every
 * file of --out) and cli_emit (stdout) write every real so.
 */
double cli_round_file(const char *name, double v);

/* Write the n files into dir as one bundle: all appear or none. On failure
 * prints "prog: path: reason" (the system's strerror text for an I/O
 * failure) and returns CLI_EXIT_FAILURE. */
int cli_out_write(const char *dir, const struct cli_out_file *files,
                  size_t n);
/* The two halves of cli_out_write(), for an app that adds members of
 * other kinds (art_bundle_add_*) in between: cli_out_bundle() starts the
 * bundle with the n files (*out NULL and CLI_EXIT_FAILURE after a
 * message on failure); cli_out_commit() writes it (consumed). */
int cli_out_bundle(const char *dir, const struct cli_out_file *files,
                   size_t n, art_bundle **out);
int cli_out_commit(art_bundle *b);

#endif
