/* Shared by the edgefit apps: strict option values and the exit codes of
 * the design (0 success, 1 runtime failure, 2 bad usage or input, 3 a
 * constraint that --strict asked for cannot be met). Not installed. */
#ifndef EDGEFIT_APPS_CLI_H
#define EDGEFIT_APPS_CLI_H

#include <stdbool.h>
#include <stdint.h>

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

/* Parse a whole decimal integer in [min, max] given to option opt. On
 * failure print "prog: --opt: '<text>' is not ..." and return false. */
bool cli_parse_u64(const char *opt, const char *text, uint64_t min,
                   uint64_t max, uint64_t *out);
/* Parse a finite number in [min, max]. */
bool cli_parse_double(const char *opt, const char *text, double min,
                      double max, double *out);
/* Parse table|csv|json. */
bool cli_parse_format(const char *opt, const char *text,
                      enum cli_format *out);

#endif
