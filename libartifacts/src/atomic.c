/* flock() and syscall() are BSD/Linux extensions beyond POSIX 2008;
 * realpath(path, NULL) is POSIX 2008. */
#define _DEFAULT_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "internal.h"
#include "alloc_rec.h" /* last: it wraps malloc and co. */

struct art_atomic {
    FILE *f; /* NULL once closed by art_atomic_finish() */
    char *tmp_path;
    char *path;
    int slot; /* in live_tmp[], or -1 */
};

/* ---- Temporaries removed on SIGINT and SIGTERM ------------------------- */

/* The temporary files that exist now, for the signal handler: a fixed
 * table of lock-free atomic pointers (the handler may run at any moment,
 * in any thread, and may call only async-signal-safe functions: it reads
 * the table and unlink()s). A path is published once complete and
 * withdrawn before it is renamed or freed. Beyond LIVE_MAX open at once
 * (a bundle has a handful), a temporary is not removed on a signal. */
#define LIVE_MAX 64
static _Atomic(const char *) live_tmp[LIVE_MAX];

/* Temporary folders (a bundle being built, or the old folder a bundle
 * replaced): emptied and removed by the handler. */
#define LIVE_DIRS_MAX 8
static _Atomic(const char *) live_dirs[LIVE_DIRS_MAX];
/* The --out lock file this process holds, unlinked by the handler. */
static _Atomic(const char *) live_lock;

/* Remove the entries of folder path and then the folder, with system
 * calls only (opendir() allocates, which a signal handler must not):
 * getdents64 on Linux; elsewhere only an empty folder goes. */
static void remove_tree_signal_safe(const char *path)
{
#ifdef __linux__
    const int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        /* aligned for struct-by-struct reading of the records */
        _Alignas(8) char buf[4096];
        for (;;) {
            const long n = syscall(SYS_getdents64, fd, buf, sizeof buf);
            if (n <= 0) {
                break;
            }
            for (long off = 0; off < n;) {
                /* linux_dirent64: u64 ino, s64 off, u16 reclen, u8 type,
                 * name */
                unsigned short reclen;
                memcpy(&reclen, buf + off + 16, sizeof reclen);
                const char *name = buf + off + 19;
                if (strcmp(name, ".") != 0 && strcmp(name, "..") != 0) {
                    unlinkat(fd, name, 0);
                }
                off += reclen;
            }
        }
        close(fd);
    }
#endif
    rmdir(path);
}

static void on_fatal_signal(int sig)
{
    const int saved = errno;
    for (int i = 0; i < LIVE_MAX; i++) {
        const char *p = atomic_exchange(&live_tmp[i], NULL);
        if (p) {
            unlink(p);
        }
    }
    for (int i = 0; i < LIVE_DIRS_MAX; i++) {
        const char *p = atomic_exchange(&live_dirs[i], NULL);
        if (p) {
            remove_tree_signal_safe(p);
        }
    }
    const char *lock = atomic_exchange(&live_lock, NULL);
    if (lock) {
        unlink(lock);
    }
    /* Then die of the signal as if nothing had caught it: the default
     * action back, and the signal again (it is blocked while this
     * handler runs and delivered when it returns). */
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    sigaction(sig, &dfl, NULL);
    raise(sig);
    errno = saved;
}

/* Catch SIGINT and SIGTERM where nobody else does, each time a
 * temporary is made (a program may have set the default action back, a
 * child of fork() may have): a program with its own handler, or one that
 * ignores the signal (nohup, a background job's SIGINT), keeps its
 * choice. */
static void install_handlers(void)
{
    static const int sigs[] = {SIGINT, SIGTERM};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
        struct sigaction old, sa;
        if (sigaction(sigs[i], NULL, &old) != 0 ||
            (old.sa_flags & SA_SIGINFO) || old.sa_handler != SIG_DFL) {
            continue;
        }
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_fatal_signal;
        sigemptyset(&sa.sa_mask);
        /* both blocked while either runs: one cleanup at a time */
        sigaddset(&sa.sa_mask, SIGINT);
        sigaddset(&sa.sa_mask, SIGTERM);
        sigaction(sigs[i], &sa, NULL);
    }
}

static int live_add(const char *tmp_path)
{
    install_handlers();
    for (int i = 0; i < LIVE_MAX; i++) {
        const char *expected = NULL;
        if (atomic_compare_exchange_strong(&live_tmp[i], &expected,
                                           tmp_path)) {
            return i;
        }
    }
    return -1;
}

int art_live_dir_add(const char *path)
{
    install_handlers();
    for (int i = 0; i < LIVE_DIRS_MAX; i++) {
        const char *expected = NULL;
        if (atomic_compare_exchange_strong(&live_dirs[i], &expected, path)) {
            return i;
        }
    }
    return -1;
}

void art_live_dir_remove(int slot)
{
    if (slot >= 0) {
        atomic_store(&live_dirs[slot], NULL);
    }
}

void art_remove_tree(const char *path)
{
    remove_tree_signal_safe(path);
}

/* ---- The --out lock ---------------------------------------------------- */

/* One folder locked per process (an app has one --out): its path, the
 * lock file's path and descriptor. */
static char *lock_dir;
static char *lock_path;
static int lock_fd = -1;

/* The lock file of dir: ".NAME.lock" beside it, or ".edgefit.lock" inside
 * a folder named "." or ".." or "/" (which has no sibling to write). */
static char *lock_path_of(const char *dir)
{
    const char *slash = strrchr(dir, '/');
    const char *base = slash ? slash + 1 : dir;
    if (strcmp(base, ".") == 0 || strcmp(base, "..") == 0 || !*base) {
        return art_path_join(dir, ".edgefit.lock");
    }
    const size_t plen = (size_t)(base - dir), blen = strlen(base);
    char *p = malloc(plen + blen + sizeof "..lock");
    if (p) {
        memcpy(p, dir, plen);
        p[plen] = '.';
        memcpy(p + plen + 1, base, blen);
        memcpy(p + plen + 1 + blen, ".lock", sizeof ".lock");
    }
    return p;
}

static void unlock_at_exit(void)
{
    art_dir_unlock();
}

/* The length of dir without its trailing slashes ("out/" is "out"; "/"
 * stays). */
static size_t trimmed_len(const char *dir)
{
    size_t n = strlen(dir);
    while (n > 1 && dir[n - 1] == '/') {
        n--;
    }
    return n;
}

static bool same_dir(const char *a, const char *b)
{
    const size_t n = trimmed_len(a);
    return n == trimmed_len(b) && strncmp(a, b, n) == 0;
}

char *art_dir_resolve(const char *dir)
{
    char *copy = strndup(dir, trimmed_len(dir));
    if (!copy) {
        return NULL;
    }
    const char *slash = strrchr(copy, '/');
    const char *base = slash ? slash + 1 : copy;
    struct stat lsb;
    if (strcmp(base, ".") == 0 || strcmp(base, "..") == 0 || !*base ||
        (lstat(copy, &lsb) == 0 && S_ISLNK(lsb.st_mode))) {
        char *real = realpath(copy, NULL);
        if (real || errno == ENOMEM) {
            free(copy);
            return real;
        }
        /* a link to nothing stays as given: the commit says why it
         * cannot write there */
    }
    return copy;
}

int art_dir_split(const char *dir, char **parent, const char **base)
{
    const char *slash = strrchr(dir, '/');
    *base = slash ? slash + 1 : dir;
    *parent = !slash ? strdup(".")
                     : slash == dir ? strdup("/")
                                    : strndup(dir, (size_t)(slash - dir));
    return *parent ? ART_OK : ART_E_NOMEM;
}

/* What a run killed by SIGKILL (which no handler sees) left beside dir,
 * cleared by the next run once it holds the lock, so that no other run
 * can be using it: temporary folders ".NAME.tmp.XXXXXX" (a bundle being
 * built, or an old folder not yet removed), and ".NAME.old", the old
 * folder set aside on a file system without an exchange: renamed back
 * when the kill came before the new folder took its name, else removed. */
static void clear_killed(const char *dir)
{
    char *parent;
    const char *base;
    if (art_dir_split(dir, &parent, &base) != ART_OK || !*base) {
        free(parent);
        return;
    }
    const size_t blen = strlen(base);
    char *aside = malloc(strlen(parent) + blen + sizeof "/..old");
    if (aside) {
        sprintf(aside, "%s/.%s.old", parent, base);
        struct stat sb;
        if (lstat(aside, &sb) == 0 && S_ISDIR(sb.st_mode)) {
            if (lstat(dir, &sb) != 0 && errno == ENOENT) {
                (void)rename(aside, dir);
            } else {
                remove_tree_signal_safe(aside);
            }
        }
        free(aside);
    }
    DIR *d = opendir(parent);
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        const char *n = e->d_name;
        struct stat sb;
        if (n[0] == '.' && strncmp(n + 1, base, blen) == 0 &&
            strncmp(n + 1 + blen, ".tmp.", 5) == 0 &&
            strlen(n + 1 + blen + 5) == 6 &&
            fstatat(dirfd(d), n, &sb, AT_SYMLINK_NOFOLLOW) == 0 &&
            S_ISDIR(sb.st_mode)) {
            char *path = art_path_join(parent, n);
            if (path) {
                remove_tree_signal_safe(path);
            }
            free(path);
        }
    }
    if (d) {
        closedir(d);
    }
    free(parent);
}

static int dir_lock(const char *dir, struct art_diag *diag)
{
    art_diag_clear(diag);
    if (!dir || !*dir) {
        return ART_E_INVALID;
    }
    /* the folder a commit replaces: a link and its target, "." and its
     * absolute path, share one lock */
    char *copy = art_dir_resolve(dir);
    if (lock_dir) {
        /* held already: by this process, for this folder or another */
        const bool same = copy && same_dir(lock_dir, copy);
        free(copy);
        return same ? ART_OK : ART_E_INVALID;
    }
    char *path = copy ? lock_path_of(copy) : NULL;
    if (!path || !copy) {
        free(path);
        free(copy);
        return ART_E_NOMEM;
    }
    /* A lock file is removed by its holder when done; one opened just
     * before that removal locks a file nobody else will see, so the lock
     * counts only while the path still names the locked file. The lock is
     * the kernel's (flock), released when its holder dies however it
     * dies: a file left by a killed run is taken by the next. */
    for (int attempt = 0; attempt < 100; attempt++) {
        const int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
        if (fd < 0) {
            const int err = errno;
            free(copy);
            free(path);
            return art_io_fail(diag, dir, err);
        }
        if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
            const int err = errno;
            close(fd);
            free(copy);
            if (err == EWOULDBLOCK) {
                if (diag) {
                    snprintf(diag->message, sizeof diag->message,
                             "%s: another run is writing it (its lock %s "
                             "is held)",
                             dir, path);
                }
                free(path);
                return ART_E_BUSY;
            }
            free(path);
            return art_io_fail(diag, dir, err);
        }
        struct stat held, named;
        if (fstat(fd, &held) == 0 && stat(path, &named) == 0 &&
            held.st_dev == named.st_dev && held.st_ino == named.st_ino) {
            lock_fd = fd;
            lock_path = path;
            lock_dir = copy;
            install_handlers();
            atomic_store(&live_lock, lock_path);
            static bool registered;
            if (!registered) {
                registered = atexit(unlock_at_exit) == 0;
            }
            clear_killed(lock_dir);
            return ART_OK;
        }
        close(fd);
    }
    free(copy);
    free(path);
    return art_io_fail(diag, dir, EAGAIN);
}

/* The lock file is made and registered for the signal handler (live_lock)
 * with SIGINT and SIGTERM held: one arriving between the two left the
 * file beside --out (a signal test caught it 4 ms into a run). */
ART_API int art_dir_lock(const char *dir, struct art_diag *diag)
{
    sigset_t held;
    art_signals_hold(true, &held);
    const int st = dir_lock(dir, diag);
    art_signals_hold(false, &held);
    return st;
}

ART_API bool art_dir_locked(const char *dir)
{
    if (!lock_dir || !dir) {
        return false;
    }
    char *copy = art_dir_resolve(dir);
    const bool same = copy && same_dir(lock_dir, copy);
    free(copy);
    return same;
}

ART_API void art_dir_unlock(void)
{
    if (!lock_dir) {
        return;
    }
    /* withdrawn from the handler and removed with the signals held: one
     * between the two would leave the file */
    sigset_t held;
    art_signals_hold(true, &held);
    atomic_store(&live_lock, NULL);
    /* removed while still held: a waiter that opened it finds the path
     * gone (or another file) and starts again */
    unlink(lock_path);
    art_signals_hold(false, &held);
    close(lock_fd);
    lock_fd = -1;
    free(lock_path);
    free(lock_dir);
    lock_path = NULL;
    lock_dir = NULL;
}

static void live_remove(art_atomic *a)
{
    if (a->slot >= 0) {
        atomic_store(&live_tmp[a->slot], NULL);
        a->slot = -1;
    }
}

void art_diag_clear(struct art_diag *diag)
{
    if (diag) {
        diag->line = 0;
        diag->message[0] = '\0';
        diag->sys_errno = 0;
    }
}

int art_io_fail(struct art_diag *diag, const char *path, int err)
{
    if (err == 0) {
        err = EIO; /* a stream error without an errno: say so plainly */
    }
    if (diag) {
        diag->line = 0;
        diag->sys_errno = err;
        snprintf(diag->message, sizeof diag->message, "%s: %s", path,
                 strerror(err));
    }
    return ART_E_IO;
}

int art_status_fail(struct art_diag *diag, const char *path, int st)
{
    if (diag) {
        diag->line = 0;
        diag->sys_errno = 0;
        if (st == ART_E_NOMEM) {
            /* the size alloc_rec.h recorded: what failed is a few calls
             * down (a path's copy, a parent's name) */
            snprintf(diag->message, sizeof diag->message,
                     "%s: out of memory (%zu bytes)", path, art_nomem_last);
        } else {
            snprintf(diag->message, sizeof diag->message, "%s: %s", path,
                     art_strerror(st));
        }
    }
    return st;
}

ART_API int art_atomic_open(const char *path, art_atomic **out,
                            struct art_diag *diag)
{
    art_diag_clear(diag);
    if (!out) {
        return ART_E_INVALID;
    }
    *out = NULL;
    if (!path || !*path) {
        return ART_E_INVALID;
    }
    art_atomic *a = calloc(1, sizeof *a);
    if (!a) {
        return ART_E_NOMEM;
    }
    const size_t len = strlen(path);
    static const char suffix[] = ".tmp.XXXXXX";
    a->path = strdup(path);
    a->tmp_path = malloc(len + sizeof suffix);
    if (!a->path || !a->tmp_path) {
        free(a->path);
        free(a->tmp_path);
        free(a);
        return ART_E_NOMEM;
    }
    memcpy(a->tmp_path, path, len);
    memcpy(a->tmp_path + len, suffix, sizeof suffix);
    /* The temporary lives in the destination's folder so that rename() is
     * atomic: it never crosses a file system. */
    a->slot = -1;
    /* held while the file is made and registered: a signal between the
     * two would leave it */
    sigset_t held;
    art_signals_hold(true, &held);
    int fd = mkstemp(a->tmp_path);
    const int mk_err = errno;
    if (fd >= 0) {
        a->slot = live_add(a->tmp_path);
    }
    art_signals_hold(false, &held);
    errno = mk_err;
    if (fd < 0) {
        /* The user asked for path, not for the temporary: name path. */
        art_io_fail(diag, path, errno);
        goto fail;
    }
    /* mkstemp creates 0600; give the file the usual mode for outputs. */
    mode_t mask = umask(0);
    umask(mask);
    (void)fchmod(fd, 0666 & ~mask);
    a->f = fdopen(fd, "wb");
    if (!a->f) {
        art_io_fail(diag, path, errno);
        close(fd);
        live_remove(a);
        unlink(a->tmp_path);
        goto fail;
    }
    *out = a;
    return ART_OK;
fail:
    free(a->path);
    free(a->tmp_path);
    free(a);
    return ART_E_IO;
}

ART_API FILE *art_atomic_file(art_atomic *a)
{
    return a ? a->f : NULL;
}

const char *art_atomic_path(const art_atomic *a)
{
    return a->path;
}

static void release(art_atomic *a)
{
    free(a->path);
    free(a->tmp_path);
    free(a);
}

int art_atomic_finish(art_atomic *a, struct art_diag *diag)
{
    /* A write error seen by the writer sets the stream's error flag; its
     * errno is long gone, so take the flush's when there is one. */
    const bool had_error = ferror(a->f) != 0;
    errno = 0;
    int err = 0;
    if (fflush(a->f) != 0 || had_error) {
        err = errno ? errno : EIO;
    } else if (fsync(fileno(a->f)) != 0) {
        err = errno;
    }
    /* fclose() reports what a lazy file system (NFS) kept for the close. */
    if (fclose(a->f) != 0 && err == 0) {
        err = errno ? errno : EIO;
    }
    a->f = NULL;
    if (err != 0) {
        return art_io_fail(diag, a->path, err);
    }
    return ART_OK;
}

int art_atomic_rename(art_atomic *a, struct art_diag *diag)
{
    if (rename(a->tmp_path, a->path) != 0) {
        return art_io_fail(diag, a->path, errno);
    }
    /* Withdrawn after the rename: a signal in between finds no file
     * under the temporary name, and its unlink() fails harmlessly. */
    live_remove(a);
    /* Renamed: nothing is left for art_atomic_abort() to remove. */
    a->tmp_path[0] = '\0';
    return ART_OK;
}

void art_signals_hold(bool hold, void *saved)
{
    sigset_t *old = saved;
    if (hold) {
        sigset_t set;
        sigemptyset(&set);
        sigaddset(&set, SIGINT);
        sigaddset(&set, SIGTERM);
        pthread_sigmask(SIG_BLOCK, &set, old);
    } else {
        pthread_sigmask(SIG_SETMASK, old, NULL);
    }
}

int art_sync_dir(const char *dir, struct art_diag *diag)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
        return art_io_fail(diag, dir, errno);
    }
    int err = 0;
    /* Some file systems cannot sync a folder (EINVAL): nothing to do. */
    if (fsync(fd) != 0 && errno != EINVAL) {
        err = errno;
    }
    close(fd);
    return err ? art_io_fail(diag, dir, err) : ART_OK;
}

/* The folder of path ("." for a bare name), or NULL without memory. */
static char *dir_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash) {
        return strdup(".");
    }
    if (slash == path) {
        return strdup("/");
    }
    return strndup(path, (size_t)(slash - path));
}

ART_API int art_atomic_commit(art_atomic *a, struct art_diag *diag)
{
    art_diag_clear(diag);
    if (!a) {
        return ART_E_INVALID;
    }
    int st = art_atomic_finish(a, diag);
    if (st == ART_OK) {
        st = art_atomic_rename(a, diag);
    }
    if (st == ART_OK) {
        char *dir = dir_of(a->path);
        st = dir ? art_sync_dir(dir, diag) : ART_E_NOMEM;
        free(dir);
    }
    art_atomic_abort(a);
    return st;
}

ART_API void art_atomic_abort(art_atomic *a)
{
    if (!a) {
        return;
    }
    if (a->f) {
        fclose(a->f);
    }
    live_remove(a);
    if (a->tmp_path[0]) {
        unlink(a->tmp_path);
    }
    release(a);
}

ART_API int art_mkdir_p(const char *dir, struct art_diag *diag)
{
    art_diag_clear(diag);
    if (!dir || !*dir) {
        return ART_E_INVALID;
    }
    char *p = strdup(dir);
    if (!p) {
        return ART_E_NOMEM;
    }
    int st = ART_OK;
    for (char *s = p + 1;; s++) {
        const char c = *s;
        if (c != '/' && c != '\0') {
            continue;
        }
        *s = '\0';
        /* EEXIST is fine here whatever exists: the check below says
         * whether the whole path ended up a folder. */
        if (mkdir(p, 0777) != 0 && errno != EEXIST) {
            st = art_io_fail(diag, p, errno);
            break;
        }
        *s = c;
        if (c == '\0') {
            break;
        }
    }
    struct stat sb;
    if (st == ART_OK && stat(p, &sb) != 0) {
        const int err = errno;
        struct stat lsb;
        st = art_io_fail(diag, p, err);
        if (diag && err == ENOENT && lstat(p, &lsb) == 0 &&
            S_ISLNK(lsb.st_mode)) {
            snprintf(diag->message, sizeof diag->message,
                     "%s: %s (a symbolic link whose target is missing)", p,
                     strerror(err));
        }
    } else if (st == ART_OK && !S_ISDIR(sb.st_mode)) {
        st = art_io_fail(diag, p, ENOTDIR);
    }
    free(p);
    return st;
}

ART_API char *art_path_join(const char *dir, const char *name)
{
    if (!dir || !name) {
        return NULL;
    }
    size_t dl = strlen(dir);
    while (dl > 1 && dir[dl - 1] == '/') {
        dl--;
    }
    const size_t nl = strlen(name);
    char *s = malloc(dl + nl + 2);
    if (!s) {
        return NULL;
    }
    memcpy(s, dir, dl);
    /* "/" keeps its one slash; "" joins to the name alone. */
    const size_t sep = dl > 0 && dir[dl - 1] != '/';
    if (sep) {
        s[dl] = '/';
    }
    memcpy(s + dl + sep, name, nl + 1);
    return s;
}

int art_save_with(const char *path, art_write_fn write, const void *obj,
                  struct art_diag *diag)
{
    art_atomic *a = NULL;
    int st = art_atomic_open(path, &a, diag);
    if (st != ART_OK) {
        return st;
    }
    errno = 0;
    st = write(obj, art_atomic_file(a));
    if (st != ART_OK) {
        if (st == ART_E_IO) {
            art_io_fail(diag, path, errno);
        } else {
            art_status_fail(diag, path, st);
        }
        art_atomic_abort(a);
        return st;
    }
    return art_atomic_commit(a, diag);
}

ART_API const char *art_strerror(int status)
{
    switch (status) {
    case ART_OK:
        return "success";
    case ART_E_INVALID:
        return "invalid argument";
    case ART_E_NOMEM:
        return "out of memory";
    case ART_E_IO:
        return "input/output error";
    case ART_E_PARSE:
        return "malformed input";
    case ART_E_RANGE:
        return "index out of range";
    case ART_E_OVERFLOW:
        return "size overflows";
    case ART_E_BUSY:
        return "another run is writing it";
    default:
        return "unknown status";
    }
}

/* alloc_rec.h's record of the last failed request on this thread */
ALLOC_REC_DEFINE(ART_API, art)
