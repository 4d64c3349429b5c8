/* What the apps print: stdout finished with the system's reason for a
 * failure, --out written all or nothing. */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* The --out folder being written, and the one written in full: a
 * failure of stdout after it is a warning, since the results are all
 * there (the folder is the run's product; stdout a view of it). */
static const char *pending_dir;
static const char *committed_dir;

int cli_stdout_finish(int st)
{
    /* A writer that failed left the errno of its write; the flush below
     * meets the same error again and says it afresh. */
    int err = st == ART_E_IO ? errno : 0;
    if (st == ART_OK || st == ART_E_IO) {
        errno = 0;
        if (fflush(stdout) != 0 || ferror(stdout)) {
            st = ART_E_IO;
            err = errno ? errno : err;
        }
    }
    if (st == ART_OK) {
        return CLI_EXIT_OK;
    }
    const char *why = st == ART_E_IO ? strerror(err ? err : EIO)
                                     : art_strerror(st);
    if (committed_dir && st == ART_E_NOMEM) {
        /* the view of the results could not be made: a failure of the
         * run (exit 1), though the folder holds them all */
        cli_error("out of memory: printing the results (they are complete "
                  "in %s)", committed_dir);
        return CLI_EXIT_FAILURE;
    }
    if (committed_dir) {
        /* once: an app that finishes stdout twice meets the same error */
        static bool warned;
        if (!warned) {
            cli_warn("stdout: %s (the results are complete in %s)", why,
                     committed_dir);
        }
        warned = true;
        return CLI_EXIT_OK;
    }
    cli_error("stdout: %s", why);
    return CLI_EXIT_FAILURE;
}

/* v to sig significant digits, through its decimal form so that the
 * double is the one nearest that short decimal (art_format_real then
 * writes it in those digits). */
static double round_sig(double v, int sig)
{
    char buf[40];
    snprintf(buf, sizeof buf, "%.*g", sig, v);
    return strtod(buf, NULL);
}

/* v to a multiple of quantum (a power of ten), the same way. */
static double round_quantum(double v, double quantum)
{
    const int decimals = (int)lround(-log10(quantum));
    char buf[400];
    if (decimals <= 0) {
        return nearbyint(v / quantum) * quantum;
    }
    snprintf(buf, sizeof buf, "%.*f", decimals, v);
    return strtod(buf, NULL);
}

/* A microsecond in the time unit the name carries as one of its
 * '_'-separated words (latency_ms, latency_ms_mean, elapsed_s), or 0 for
 * none; "mb_s" is a rate (MB per second), not a time. */
static double microsecond_in(const char *name)
{
    static const struct {
        const char *word;
        double us;
    } units[] = {{"ms", 1e-3}, {"s", 1e-6}, {"us", 1.0}, {"ns", 1e3}};
    const char *prev = "", *p = name;
    size_t prev_len = 0;
    while (*p) {
        const size_t len = strcspn(p, "_");
        for (size_t u = 0; u < sizeof units / sizeof units[0]; u++) {
            const bool rate = prev_len == 2 && prev[1] == 'b';
            if (len == strlen(units[u].word) &&
                strncmp(p, units[u].word, len) == 0 && !rate && p != name) {
                return units[u].us;
            }
        }
        prev = p;
        prev_len = len;
        p += len;
        p += *p == '_';
    }
    return 0.0;
}

double cli_round_file(const char *name, double v)
{
    if (!isfinite(v) || v == floor(v)) {
        return v;
    }
    name = name ? name : "";
    /* A fitted device model's per-layer overhead is a parameter that
     * --devices reads back, not a measured time: kept to 6 digits like the
     * model's other parameters, so that a prediction from the written file
     * is the fit's own. */
    if (strcmp(name, "overhead_ms") == 0) {
        return round_sig(v, 6);
    }
    /* A time: a microsecond is below what the clock resolves for one
     * call, and three digits are what its spread leaves meaning; the finer
     * of the two keeps a 0.4 us operator (0.000412 ms) and a 123.457 ms
     * forward pass. */
    const double us = microsecond_in(name);
    if (us > 0.0) {
        const double q = round_quantum(v, us), s = round_sig(v, 3);
        /* the finer: the one closer to v */
        return fabs(q - v) <= fabs(s - v) ? q : s;
    }
    /* an accuracy on a test set of at most some 10^4 samples: a fourth
     * decimal is a sample in 10^4 */
    if (strstr(name, "accuracy") || strstr(name, "agreement")) {
        return round_quantum(v, 1e-4);
    }
    return round_sig(v, 6);
}

int cli_out_lock(const char *dir)
{
    struct art_diag diag = {0, "", 0};
    /* A folder that cannot be replaced whole is refused before the run's
     * work, not after it (the commit would refuse it then). */
    int st = art_dir_check(dir, &diag);
    if (st == ART_E_INVALID) {
        cli_error("--out %s; this run stops and writes nothing",
                  diag.message);
        return CLI_EXIT_USAGE;
    }
    if (st == ART_E_NOMEM) {
        cli_error("out of memory: checking --out %s", dir);
        return CLI_EXIT_FAILURE;
    }
    /* ART_E_IO: a folder that cannot be looked at yet; the commit says
     * why it cannot write it */
    st = art_dir_lock(dir, &diag);
    switch (st) {
    case ART_OK:
        return CLI_EXIT_OK;
    case ART_E_BUSY:
        cli_error("--out %s; this run stops and writes nothing",
                  diag.message);
        return CLI_EXIT_FAILURE;
    case ART_E_NOMEM:
        cli_error("out of memory: the lock file's name for --out %s "
                  "(%zu bytes)",
                  dir, 2 * strlen(dir) + 16);
        return CLI_EXIT_FAILURE;
    case ART_E_IO:
        /* No lock file where the parent does not exist yet or cannot be
         * written: the commit makes the parent and locks then, or says
         * why it cannot write. */
        return CLI_EXIT_OK;
    }
    cli_error("--out %s: %s", dir, art_strerror(st));
    return CLI_EXIT_FAILURE;
}

int cli_out_bundle(const char *dir, const struct cli_out_file *files,
                   size_t n, art_bundle **out)
{
    art_bundle *b = NULL;
    int st = art_bundle_create(dir, &b);
    art_bundle_set_rounding(b, cli_round_file);
    for (size_t i = 0; st == ART_OK && i < n; i++) {
        if (files[i].csv) {
            st = art_bundle_add_csv(b, files[i].name, files[i].csv);
        } else if (files[i].chart) {
            st = art_bundle_add_chart(b, files[i].name, files[i].chart);
        } else if (files[i].figure) {
            st = art_bundle_add_figure(b, files[i].name, files[i].figure);
        } else {
            st = art_bundle_add_doc(b, files[i].name, files[i].doc);
        }
    }
    if (st != ART_OK) {
        art_bundle_destroy(b);
        *out = NULL;
        cli_error("--out %s: %s", dir, art_strerror(st));
        return CLI_EXIT_FAILURE;
    }
    *out = b;
    pending_dir = dir;
    return CLI_EXIT_OK;
}

int cli_out_commit(art_bundle *b)
{
    struct art_diag diag = {0, "", 0};
    const int st = art_bundle_commit(b, &diag);
    if (st != ART_OK) {
        cli_error("%s", diag.message[0] ? diag.message : art_strerror(st));
        return CLI_EXIT_FAILURE;
    }
    committed_dir = pending_dir;
    return CLI_EXIT_OK;
}

int cli_out_write(const char *dir, const struct cli_out_file *files,
                  size_t n)
{
    art_bundle *b = NULL;
    const int rc = cli_out_bundle(dir, files, n, &b);
    return rc == CLI_EXIT_OK ? cli_out_commit(b) : rc;
}
