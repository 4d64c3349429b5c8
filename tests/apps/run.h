/* Run an app as a child process and capture what it prints. */
#ifndef EDGEFIT_TESTS_RUN_H
#define EDGEFIT_TESTS_RUN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct run_result {
    int status;   /* exit code, or 128 + signal */
    char *out;    /* stdout, NUL-terminated; release with run_free() */
    char *err;    /* stderr */
};

/* Run argv (argv[0] is the program path; NULL-terminated). */
int run_argv(char *const argv[], struct run_result *r);
void run_free(struct run_result *r);
/* Run argv with files limited to fsize_bytes (RLIMIT_FSIZE, which binds
 * root too; SIGXFSZ ignored, so writes fail with EFBIG as on a full disk)
 * and stdout discarded; r->out is empty. */
int run_argv_fsize(char *const argv[], long fsize_bytes,
                   struct run_result *r);
/* Run argv with stdin read from stdin_path (NULL: inherited) and, when
 * alarm_s is not 0, killed by SIGALRM after alarm_s seconds (status
 * 128 + 14): for a program that might block. */
int run_argv_in(char *const argv[], const char *stdin_path,
                unsigned alarm_s, struct run_result *r);
/* Run argv with stdout going to path (e.g. /dev/full); r->out is empty. */
int run_argv_stdout(char *const argv[], const char *path,
                    struct run_result *r);

/* Run argv and check it was rejected as bad usage: exit status 2,
 * nothing on stdout, and needle in what it printed on stderr. Returns NULL
 * when so, otherwise a description of what happened (static storage). */
const char *run_rejected(char *const argv[], const char *needle);

/* Number of entries (other than . and ..) in a folder; -1 if missing. */
int run_count_entries(const char *dir);
/* Remove a folder and the files in it (one level). */
void run_rmdir(const char *dir);

/* ---- labelled image sets for the apps that read them ---- */

/* A 64-bit linear congruential step; returns the high 31 bits. */
uint64_t run_lcg(uint64_t *state);
/* Write <split>-images-idx3-ubyte (count images of 28 x 28 bytes) and
 * <split>-labels-idx1-ubyte into dir, uncompressed. 0, or -1 on a write
 * failure. */
int run_write_idx(const char *dir, const char *split,
                  const unsigned char *images, const unsigned char *labels,
                  unsigned count);
/* A set a small MLP learns in a few epochs: image i of class (i * 7) % 10,
 * class k a bright band over rows 2k..2k+3 on dim noise from seed. */
int run_write_bands(const char *dir, const char *split, unsigned count,
                    uint64_t seed);

/* Zero weights of mlp:784-64-10 with PyTorch names (dense1.weight, ...)
 * as safetensors at path, for edgefit-sweep --weights: 0 or -1. */
int run_write_zero_mlp(const char *path);

/* ---- numbers as the apps write them ---- */

/* How far a real the apps wrote under name may be from the value v it
 * rounds, by the README's rule (Glossary, "Numbers"), written here
 * independently of the apps: times (_ms, _s, _ns) to the microsecond or
 * three significant digits, whichever is finer; accuracies and agreements
 * to four decimals; whole numbers below 10^5 exactly; any other real to
 * six significant digits. Half the last digit kept, plus 1e-12 of v. */
double run_written_tol(const char *name, double v);

/* got within extra_tol + run_written_tol(name, want) of want; otherwise
 * says so on stderr and returns false. assert_written() asserts it. */
bool run_written_near(double got, double want, const char *name,
                      double extra_tol);
#define assert_written(got, want, name)                                     \
    assert_true(run_written_near((got), (want), (name), 0.0))

/* The first number in text (CSV or JSON, outside quoted strings) that is
 * not whole and has more than max_digits significant digits, copied into
 * bad (len bytes): float noise such as 1.1376585700000001. true when
 * there is none. */
bool run_digits_ok(const char *text, int max_digits, char *bad, size_t len);

#endif
