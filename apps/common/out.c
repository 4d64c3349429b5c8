/* --out: checked before the work, written all or nothing after it. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

/* Print the reason a path cannot be used, naming a symbolic link to a
 * missing target (stat says only ENOENT, which would read as if nothing
 * were there). */
static int refuse(const char *opt, const char *dir, const char *path,
                  int err)
{
    struct stat lsb;
    const bool dangling =
        err == ENOENT && lstat(path, &lsb) == 0 && S_ISLNK(lsb.st_mode);
    if (strcmp(dir, path) == 0) {
        cli_error("%s: %s: %s%s", opt, path, strerror(err),
                  dangling ? " (a symbolic link whose target is missing)"
                           : "");
    } else {
        cli_error("%s: %s: cannot create it: %s: %s%s", opt, dir, path,
                  strerror(err),
                  dangling ? " (a symbolic link whose target is missing)"
                           : "");
    }
    return CLI_EXIT_USAGE;
}

int cli_out_check_as(const char *opt, const char *dir)
{
    if (!dir) {
        return CLI_EXIT_OK;
    }
    struct stat sb;
    if (stat(dir, &sb) == 0) {
        if (!S_ISDIR(sb.st_mode)) {
            return refuse(opt, dir, dir, ENOTDIR);
        }
        /* W_OK for the new files, X_OK to reach them. (root passes both
         * on anything but a read-only file system.) */
        return access(dir, W_OK | X_OK) == 0 ? CLI_EXIT_OK
                                              : refuse(opt, dir, dir, errno);
    }
    if (errno != ENOENT) {
        return refuse(opt, dir, dir, errno); /* ENOTDIR, EACCES, ELOOP... */
    }
    /* Missing: the bundle creates it on commit, so its nearest existing
     * ancestor must be a folder we may create entries in, and nothing on
     * the way may be a link to nowhere. */
    char *p = strdup(dir);
    if (!p) {
        cli_error("out of memory");
        return CLI_EXIT_FAILURE;
    }
    int rc = CLI_EXIT_OK;
    for (;;) {
        struct stat lsb;
        if (lstat(p, &lsb) == 0 && S_ISLNK(lsb.st_mode) &&
            stat(p, &sb) != 0) {
            rc = refuse(opt, dir, p, errno);
            break;
        }
        char *slash = strrchr(p, '/');
        while (slash && slash > p && slash[1] == '\0') {
            *slash = '\0'; /* "a/b/" is "a/b" */
            slash = strrchr(p, '/');
        }
        const char *parent = p;
        if (!slash) {
            parent = ".";
        } else if (slash == p) {
            parent = "/";
        } else {
            *slash = '\0';
        }
        if (stat(parent, &sb) == 0) {
            if (!S_ISDIR(sb.st_mode)) {
                rc = refuse(opt, dir, parent, ENOTDIR);
            } else if (access(parent, W_OK | X_OK) != 0) {
                rc = refuse(opt, dir, parent, errno);
            }
            break;
        }
        if (errno != ENOENT || parent != p) {
            rc = refuse(opt, dir, parent, errno);
            break;
        }
    }
    free(p);
    return rc;
}

int cli_out_check(const char *dir)
{
    return cli_out_check_as("--out", dir);
}

int cli_out_check_file(const char *opt, const char *path)
{
    struct stat sb;
    if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) {
        cli_error("%s: %s: is a folder", opt, path);
        return CLI_EXIT_USAGE;
    }
    /* The file is written next to itself and renamed: its folder is what
     * must be writable, or creatable. */
    char *dir = strdup(path);
    if (!dir) {
        cli_error("out of memory");
        return CLI_EXIT_FAILURE;
    }
    char *slash = strrchr(dir, '/');
    if (!slash) {
        strcpy(dir, ".");
    } else if (slash == dir) {
        dir[1] = '\0';
    } else {
        *slash = '\0';
    }
    const int rc = cli_out_check_as(opt, dir);
    free(dir);
    return rc;
}

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
    cli_error("stdout: %s", st == ART_E_IO ? strerror(err ? err : EIO)
                                           : art_strerror(st));
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
    return CLI_EXIT_OK;
}

int cli_out_write(const char *dir, const struct cli_out_file *files,
                  size_t n)
{
    art_bundle *b = NULL;
    const int rc = cli_out_bundle(dir, files, n, &b);
    return rc == CLI_EXIT_OK ? cli_out_commit(b) : rc;
}
