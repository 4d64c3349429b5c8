/* syscall() for renameat2 is a Linux extension beyond POSIX 2008. */
#define _DEFAULT_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "alloc_rec.h" /* last: it wraps malloc and co. */

struct entry {
    char *name;
    art_write_fn write;
    const void *obj;
    void (*release)(void *); /* for objects the bundle owns, else NULL */
    void *owned;
    int kind; /* ENTRY_ */
};

enum { ENTRY_OTHER = 0, ENTRY_CSV, ENTRY_DOC };

struct art_bundle {
    char *dir;
    struct entry *entries;
    size_t n, cap;
    art_round_fn round;
};

ART_API int art_bundle_create(const char *dir, art_bundle **out)
{
    if (!out) {
        return ART_E_INVALID;
    }
    *out = NULL;
    if (!dir || !*dir) {
        return ART_E_INVALID;
    }
    art_bundle *b = calloc(1, sizeof *b);
    if (!b || !(b->dir = strdup(dir))) {
        free(b);
        return ART_E_NOMEM;
    }
    *out = b;
    return ART_OK;
}

ART_API void art_bundle_destroy(art_bundle *b)
{
    if (!b) {
        return;
    }
    for (size_t i = 0; i < b->n; i++) {
        free(b->entries[i].name);
        if (b->entries[i].release) {
            b->entries[i].release(b->entries[i].owned);
        }
    }
    free(b->entries);
    free(b->dir);
    free(b);
}

ART_API int art_bundle_add(art_bundle *b, const char *name,
                           art_write_fn write, const void *obj)
{
    if (!b || !name || !*name || strchr(name, '/') || !write) {
        return ART_E_INVALID;
    }
    for (size_t i = 0; i < b->n; i++) {
        if (strcmp(b->entries[i].name, name) == 0) {
            return ART_E_INVALID;
        }
    }
    if (b->n == b->cap) {
        const size_t cap = b->cap ? b->cap * 2 : 4;
        struct entry *e = realloc(b->entries, cap * sizeof *e);
        if (!e) {
            return ART_E_NOMEM;
        }
        b->entries = e;
        b->cap = cap;
    }
    char *copy = strdup(name);
    if (!copy) {
        return ART_E_NOMEM;
    }
    b->entries[b->n++] = (struct entry){copy, write, obj, NULL, NULL,
                                        ENTRY_OTHER};
    return ART_OK;
}

int art_bundle_add_owned(art_bundle *b, const char *name, art_write_fn write,
                         void *obj, void (*release)(void *))
{
    const int st = art_bundle_add(b, name, write, obj);
    if (st == ART_OK) {
        b->entries[b->n - 1].release = release;
        b->entries[b->n - 1].owned = obj;
    }
    return st;
}

static int write_csv(const void *obj, FILE *f)
{
    return art_table_write_csv(obj, f);
}

static int write_table_json(const void *obj, FILE *f)
{
    return art_table_write_json(obj, f);
}

static int write_doc(const void *obj, FILE *f)
{
    return art_doc_write(obj, f);
}

/* An entry of a kind the bundle's rounding applies to. */
static int add_kind(art_bundle *b, const char *name, art_write_fn write,
                    const void *obj, int kind)
{
    const int st = obj ? art_bundle_add(b, name, write, obj) : ART_E_INVALID;
    if (st == ART_OK) {
        b->entries[b->n - 1].kind = kind;
    }
    return st;
}

ART_API void art_bundle_set_rounding(art_bundle *b, art_round_fn round)
{
    if (b) {
        b->round = round;
    }
}

static int write_entry(const art_bundle *b, const struct entry *e, FILE *f)
{
    if (b->round && e->kind == ENTRY_CSV) {
        return art_table_write_csv_with(e->obj, f, b->round);
    }
    if (b->round && e->kind == ENTRY_DOC) {
        return art_doc_write_with(e->obj, f, b->round);
    }
    return e->write(e->obj, f);
}

ART_API int art_bundle_add_csv(art_bundle *b, const char *name,
                               const art_table *t)
{
    return add_kind(b, name, write_csv, t, ENTRY_CSV);
}

ART_API int art_bundle_add_table_json(art_bundle *b, const char *name,
                                      const art_table *t)
{
    return t ? art_bundle_add(b, name, write_table_json, t) : ART_E_INVALID;
}

ART_API int art_bundle_add_doc(art_bundle *b, const char *name,
                               const art_doc *d)
{
    return add_kind(b, name, write_doc, d, ENTRY_DOC);
}

/* Phase one of a commit: every member written, flushed and synced under a
 * temporary name in folder dir (tmp[i] the handles). Only then can no
 * rename expose one member while another's data is still in a buffer a
 * full disk would refuse. */
static int write_members(const art_bundle *b, const char *dir,
                         art_atomic **tmp, struct art_diag *diag)
{
    int st = ART_OK;
    for (size_t i = 0; st == ART_OK && i < b->n; i++) {
        char *path = art_path_join(dir, b->entries[i].name);
        st = path ? art_atomic_open(path, &tmp[i], diag) : ART_E_NOMEM;
        if (st == ART_OK) {
            errno = 0;
            st = write_entry(b, &b->entries[i], art_atomic_file(tmp[i]));
            if (st == ART_E_IO) {
                art_io_fail(diag, path, errno);
            } else if (st != ART_OK) {
                art_status_fail(diag, path, st);
            }
        }
        if (st == ART_OK) {
            st = art_atomic_finish(tmp[i], diag);
        }
        free(path);
    }
    return st;
}

static void abort_members(const art_bundle *b, art_atomic **tmp)
{
    for (size_t i = 0; tmp && i < b->n; i++) {
        art_atomic_abort(tmp[i]); /* frees; removes what was not renamed */
    }
    free(tmp);
}

/* A message about tmp/NAME names dir/NAME instead: the user asked for
 * dir, and the temporary folder is gone by the time they read it. */
static void diag_names(struct art_diag *diag, const char *tmp,
                       const char *dir)
{
    const size_t tl = strlen(tmp);
    if (!diag || strncmp(diag->message, tmp, tl) != 0) {
        return;
    }
    char rest[sizeof diag->message];
    snprintf(rest, sizeof rest, "%s", diag->message + tl);
    snprintf(diag->message, sizeof diag->message, "%s%s", dir, rest);
}

enum place { PLACE_NEW, PLACE_SWAP };

/* The last name of a path without trailing slashes. */
static const char *base_of(const char *dir)
{
    const char *slash = strrchr(dir, '/');
    return slash ? slash + 1 : dir;
}

/* Why folder dir (resolved: art_dir_resolve()) cannot be replaced whole,
 * into why[len], or "" when it can; *place says how it is replaced, *mode
 * its permissions. ART_E_IO (diag) when it cannot be looked at. Refused:
 * the root, the current folder (the shell that started the run would be
 * left in the old one, removed), a mount point (its own file system: the
 * temporary sibling cannot be renamed onto it) and a folder holding a
 * folder (no run writes one, and it cannot be carried into the new folder
 * in one step as a file is, by a hard link). */
static int placement(const char *dir, const char *parent, const char *base,
                     int *place, mode_t *mode, char *why, size_t len,
                     struct art_diag *diag)
{
    why[0] = '\0';
    *place = PLACE_SWAP;
    struct stat sb, pb, cwd;
    if (!*base) {
        snprintf(why, len, "the root folder cannot be replaced whole");
        return ART_OK;
    }
    if (lstat(dir, &sb) != 0) {
        if (errno == ENOENT) {
            *place = PLACE_NEW;
            return ART_OK;
        }
        return art_io_fail(diag, dir, errno);
    }
    if (!S_ISDIR(sb.st_mode)) {
        /* a link to nothing, a file: art_mkdir_p() says which */
        return art_mkdir_p(dir, diag) == ART_OK
                   ? art_io_fail(diag, dir, ENOTDIR)
                   : ART_E_IO;
    }
    *mode = sb.st_mode & 07777;
    if (stat(".", &cwd) == 0 && cwd.st_dev == sb.st_dev &&
        cwd.st_ino == sb.st_ino) {
        snprintf(why, len,
                 "it is the current folder, which cannot be replaced whole "
                 "(the shell would be left in the old one); name a folder "
                 "inside it or beside it");
        return ART_OK;
    }
    if (stat(parent, &pb) != 0) {
        return art_io_fail(diag, parent, errno);
    }
    if (pb.st_dev != sb.st_dev) {
        snprintf(why, len,
                 "it is a mount point, which cannot be replaced whole; name "
                 "a folder inside it");
        return ART_OK;
    }
    DIR *d = opendir(dir);
    if (!d) {
        return art_io_fail(diag, dir, errno);
    }
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) {
            continue;
        }
        struct stat eb;
        if (fstatat(dirfd(d), e->d_name, &eb, AT_SYMLINK_NOFOLLOW) == 0 &&
            S_ISDIR(eb.st_mode)) {
            snprintf(why, len,
                     "it holds the folder '%.200s', which no edgefit run "
                     "writes and which cannot be carried into the new folder "
                     "in one step; move it out or choose another folder",
                     e->d_name);
            break;
        }
    }
    closedir(d);
    return ART_OK;
}

/* The refusal of placement() as diag's message: the folder as given
 * (trailing slashes dropped), its resolved path when that differs, and
 * why. */
static int refuse(struct art_diag *diag, const char *given, const char *dir,
                  const char *why)
{
    if (diag) {
        size_t n = strlen(given);
        while (n > 1 && given[n - 1] == '/') {
            n--;
        }
        const bool same = strncmp(given, dir, n) == 0 && !dir[n];
        diag->line = 0;
        diag->sys_errno = 0;
        snprintf(diag->message, sizeof diag->message, "%.*s%s%s%s: %s",
                 (int)(n < 300 ? n : 300), given, same ? "" : " (",
                 same ? "" : dir, same ? "" : ")", why);
    }
    return ART_E_INVALID;
}

ART_API int art_dir_check(const char *dir, struct art_diag *diag)
{
    art_diag_clear(diag);
    if (!dir || !*dir) {
        return ART_E_INVALID;
    }
    char *real = art_dir_resolve(dir);
    char *parent = NULL;
    const char *base;
    int st = real ? art_dir_split(real, &parent, &base) : ART_E_NOMEM;
    int place;
    mode_t mode;
    char why[400];
    if (st == ART_OK) {
        st = placement(real, parent, base, &place, &mode, why, sizeof why,
                       diag);
    }
    if (st == ART_OK && why[0]) {
        st = refuse(diag, dir, real, why);
    }
    free(parent);
    free(real);
    return st;
}

static bool is_member(const art_bundle *b, const char *name)
{
    for (size_t i = 0; i < b->n; i++) {
        if (strcmp(b->entries[i].name, name) == 0) {
            return true;
        }
    }
    return false;
}

/* The old folder's other files (not members of the bundle) linked into
 * the new one, so that replacing the folder keeps them as a commit in
 * place would. */
static int link_others(const art_bundle *b, const char *dir, const char *tmp,
                       struct art_diag *diag)
{
    DIR *d = opendir(dir);
    if (!d) {
        return art_io_fail(diag, dir, errno);
    }
    int st = ART_OK;
    struct dirent *e;
    while (st == ART_OK && (e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0 ||
            is_member(b, e->d_name)) {
            continue;
        }
        char *from = art_path_join(dir, e->d_name);
        char *to = art_path_join(tmp, e->d_name);
        if (!from || !to) {
            st = ART_E_NOMEM;
        } else if (link(from, to) != 0) {
            st = art_io_fail(diag, from, errno);
        }
        free(from);
        free(to);
    }
    closedir(d);
    return st;
}

#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1)
#endif

/* Swap the names of two folders of one file system in one step: Linux's
 * renameat2(RENAME_EXCHANGE). -1 with errno (EINVAL or ENOSYS where the
 * file system or the system cannot). */
static int exchange(const char *a, const char *b)
{
#if defined(__linux__) && defined(SYS_renameat2)
    return (int)syscall(SYS_renameat2, AT_FDCWD, a, AT_FDCWD, b,
                        RENAME_EXCHANGE);
#else
    (void)a;
    (void)b;
    errno = ENOSYS;
    return -1;
#endif
}

/* The swap where the file system has no exchange: the old folder renamed
 * to ".NAME.old" beside it, the new one renamed onto dir, the old one
 * removed (by the caller, as tmp names it then). A SIGKILL between the two
 * renames leaves no dir but ".NAME.old", which the next run renames back
 * when it takes the lock (art_dir_lock()); SIGINT and SIGTERM are held. */
static int set_aside(const char *dir, const char *parent, const char *base,
                     char *tmp, struct art_diag *diag)
{
    const size_t len = strlen(parent) + strlen(base) + sizeof "/..old";
    char *aside = malloc(len);
    if (!aside) {
        return art_status_fail(diag, dir, ART_E_NOMEM);
    }
    snprintf(aside, len, "%s/.%s.old", parent, base);
    int st = ART_OK;
    if (rename(dir, aside) != 0) {
        st = art_io_fail(diag, dir, errno);
    } else if (rename(tmp, dir) != 0) {
        st = art_io_fail(diag, dir, errno);
        (void)rename(aside, dir); /* the old one back */
    } else {
        /* the old folder where the caller removes what tmp names */
        (void)rename(aside, tmp);
    }
    free(aside);
    return st;
}

/* The whole folder replaced: the bundle written into a temporary sibling
 * folder ".NAME.tmp.XXXXXX", synced, then renamed onto dir (new) or
 * exchanged with it (swap) in one rename, and the old folder removed. A
 * kill at any moment leaves dir all old or all new; a full disk leaves it
 * as it was. Where the exchange is refused (a file system without it),
 * set_aside(). */
static int commit_whole(const art_bundle *b, const char *dir,
                        const char *parent, const char *base, int place,
                        mode_t mode, struct art_diag *diag)
{
    const size_t plen = strlen(parent), blen = strlen(base);
    char *tmp = malloc(plen + blen + sizeof "/..tmp.XXXXXX");
    art_atomic **files = calloc(b->n ? b->n : 1, sizeof *files);
    if (!tmp || !files) {
        free(tmp);
        free(files);
        return art_status_fail(diag, dir, ART_E_NOMEM);
    }
    snprintf(tmp, plen + blen + sizeof "/..tmp.XXXXXX", "%s/.%s.tmp.XXXXXX",
             parent, base);
    int st = art_mkdir_p(parent, diag);
    if (st == ART_E_IO) {
        st = art_mkdir_p(dir, diag); /* as above: named as asked */
    }
    int slot = -1;
    if (st == ART_OK) {
        /* held while the folder is made and registered: a signal between
         * the two would leave it */
        sigset_t held;
        art_signals_hold(true, &held);
        if (!mkdtemp(tmp)) {
            st = art_io_fail(diag, dir, errno);
            tmp[0] = '\0';
        } else {
            slot = art_live_dir_add(tmp);
        }
        art_signals_hold(false, &held);
    }
    if (st == ART_OK) {
        if (place == PLACE_NEW) {
            const mode_t mask = umask(0);
            umask(mask);
            mode = 0777 & ~mask;
        }
        /* mkdtemp makes 0700; the folder keeps the mode it had */
        if (chmod(tmp, mode) != 0) {
            st = art_io_fail(diag, dir, errno);
        }
    }
    if (st == ART_OK) {
        st = write_members(b, tmp, files, diag);
    }
    for (size_t i = 0; st == ART_OK && i < b->n; i++) {
        st = art_atomic_rename(files[i], diag);
    }
    if (st == ART_OK && place == PLACE_SWAP) {
        st = link_others(b, dir, tmp, diag);
    }
    if (st == ART_OK) {
        st = art_sync_dir(tmp, diag);
    }
    if (st == ART_OK) {
        sigset_t held;
        art_signals_hold(true, &held);
        if (place == PLACE_NEW) {
            if (rename(tmp, dir) != 0) {
                st = art_io_fail(diag, dir, errno);
            } else {
                tmp[0] = '\0'; /* nothing left to remove */
            }
        } else if (exchange(tmp, dir) != 0) {
            const int err = errno;
            if (err == EINVAL || err == ENOSYS || err == ENOTSUP) {
                st = set_aside(dir, parent, base, tmp, diag);
            } else {
                st = art_io_fail(diag, dir, err);
            }
            if (err == EBUSY && diag) {
                /* a bind mount on the same file system: placement() saw
                 * no mount point */
                snprintf(diag->message, sizeof diag->message,
                         "%s: %s (a mount point cannot be replaced whole)",
                         dir, strerror(err));
            }
        }
        /* the new name reaches the disk */
        if (st == ART_OK) {
            st = art_sync_dir(parent, diag);
        }
        /* tmp now holds the old folder (or what is left of the new one) */
        if (tmp[0]) {
            art_remove_tree(tmp);
        }
        art_live_dir_remove(slot);
        art_signals_hold(false, &held);
    } else if (tmp[0]) {
        abort_members(b, files);
        files = NULL;
        diag_names(diag, tmp, dir);
        art_remove_tree(tmp);
        art_live_dir_remove(slot);
    }
    if (files) {
        abort_members(b, files);
    }
    free(tmp);
    return st;
}

ART_API int art_bundle_commit(art_bundle *b, struct art_diag *diag)
{
    art_diag_clear(diag);
    if (!b) {
        return ART_E_INVALID;
    }
    /* the folder replaced (a link's target, "."'s absolute path), its
     * parent and its last name */
    char *dir = art_dir_resolve(b->dir);
    const char *base = "";
    if (dir && (strcmp(base_of(dir), ".") == 0 ||
                strcmp(base_of(dir), "..") == 0)) {
        /* "new/." resolves once "new" exists */
        if (art_mkdir_p(dir, NULL) == ART_OK) {
            free(dir);
            dir = art_dir_resolve(b->dir);
        }
    }
    char *parent = NULL;
    int st = dir ? art_dir_split(dir, &parent, &base) : ART_E_NOMEM;
    if (st != ART_OK) {
        art_status_fail(diag, b->dir, st);
        free(dir);
        art_bundle_destroy(b);
        return st;
    }
    /* The lock, unless this process holds it already (an app takes it
     * when it starts): a parent folder made first, since the lock file
     * lives in it. */
    bool took = false;
    if (!art_dir_locked(dir)) {
        st = art_mkdir_p(parent, diag);
        if (st == ART_E_IO) {
            /* said of the folder asked for (a file on its path, say),
             * which cannot be made either; never after no memory, when
             * this second try could make the folder */
            st = art_mkdir_p(dir, diag);
        }
        if (st == ART_OK) {
            st = art_dir_lock(dir, diag);
            took = st == ART_OK;
            if (st == ART_E_INVALID) {
                /* the process holds another folder's lock (one per
                 * process): this folder is written unlocked */
                art_diag_clear(diag);
                st = ART_OK;
            }
        }
    }
    mode_t mode = 0777;
    if (st == ART_OK) {
        /* checked again here, as the folder is now: what the app's check
         * at its start allowed may have changed since */
        int place;
        char why[400];
        st = placement(dir, parent, base, &place, &mode, why, sizeof why,
                       diag);
        if (st == ART_OK && why[0]) {
            st = refuse(diag, b->dir, dir, why);
        } else if (st == ART_OK) {
            st = commit_whole(b, dir, parent, base, place, mode, diag);
        }
    }
    if (took) {
        art_dir_unlock();
    }
    if (st != ART_OK && diag && !diag->message[0]) {
        art_status_fail(diag, dir, st); /* "out: out of memory" */
    }
    free(parent);
    free(dir);
    art_bundle_destroy(b);
    return st;
}
