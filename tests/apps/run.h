/* Run an app as a child process and capture what it prints. */
#ifndef EDGEFIT_TESTS_RUN_H
#define EDGEFIT_TESTS_RUN_H

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

#endif
