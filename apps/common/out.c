/* What the apps print: stdout finished with the system's reason for a
 * failure, --out written all or nothing. */
#include <errno.h>
#include <stdbool.h>
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

int cli_out_bundle(const char *dir, const struct cli_out_file *files,
                   size_t n, art_bundle **out)
{
    art_bundle *b = NULL;
    int st = art_bundle_create(dir, &b);
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
