#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

struct art_atomic {
    FILE *f;
    char *tmp_path;
    char *path;
};

ART_API int art_atomic_open(const char *path, art_atomic **out)
{
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
    int fd = mkstemp(a->tmp_path);
    if (fd < 0) {
        goto fail;
    }
    /* mkstemp creates 0600; give the file the usual mode for outputs. */
    mode_t mask = umask(0);
    umask(mask);
    (void)fchmod(fd, 0666 & ~mask);
    a->f = fdopen(fd, "wb");
    if (!a->f) {
        close(fd);
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

static void release(art_atomic *a)
{
    free(a->path);
    free(a->tmp_path);
    free(a);
}

ART_API int art_atomic_commit(art_atomic *a)
{
    if (!a) {
        return ART_E_INVALID;
    }
    int ok = !ferror(a->f);
    ok = fflush(a->f) == 0 && ok;
    ok = ok && fsync(fileno(a->f)) == 0;
    ok = fclose(a->f) == 0 && ok;
    ok = ok && rename(a->tmp_path, a->path) == 0;
    if (!ok) {
        unlink(a->tmp_path);
    }
    release(a);
    return ok ? ART_OK : ART_E_IO;
}

ART_API void art_atomic_abort(art_atomic *a)
{
    if (!a) {
        return;
    }
    fclose(a->f);
    unlink(a->tmp_path);
    release(a);
}

ART_API int art_mkdir_p(const char *dir)
{
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
        if (mkdir(p, 0777) != 0 && errno != EEXIST) {
            st = ART_E_IO;
            break;
        }
        *s = c;
        if (c == '\0') {
            break;
        }
    }
    struct stat sb;
    if (st == ART_OK && (stat(p, &sb) != 0 || !S_ISDIR(sb.st_mode))) {
        st = ART_E_IO;
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

int art_save_with(const char *path, art_write_fn write, const void *obj)
{
    art_atomic *a = NULL;
    int st = art_atomic_open(path, &a);
    if (st != ART_OK) {
        return st;
    }
    st = write(obj, art_atomic_file(a));
    if (st != ART_OK) {
        art_atomic_abort(a);
        return st;
    }
    return art_atomic_commit(a);
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
    default:
        return "unknown status";
    }
}
