#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

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

ART_API int art_bundle_commit(art_bundle *b, struct art_diag *diag)
{
    art_diag_clear(diag);
    if (!b) {
        return ART_E_INVALID;
    }
    art_atomic **tmp = calloc(b->n ? b->n : 1, sizeof *tmp);
    int st = tmp ? art_mkdir_p(b->dir, diag) : ART_E_NOMEM;
    /* Phase one: every file written, flushed and synced under its
     * temporary name. Only then can no rename expose one member while
     * another's data is still in a buffer a full disk would refuse. */
    for (size_t i = 0; st == ART_OK && i < b->n; i++) {
        char *path = art_path_join(b->dir, b->entries[i].name);
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
    /* Phase two: rename them all, SIGINT and SIGTERM held meanwhile. */
    sigset_t held;
    art_signals_hold(true, &held);
    for (size_t i = 0; st == ART_OK && i < b->n; i++) {
        st = art_atomic_rename(tmp[i], diag);
    }
    art_signals_hold(false, &held);
    /* Phase three: the new names themselves reach the disk. */
    if (st == ART_OK && b->n > 0) {
        st = art_sync_dir(b->dir, diag);
    }
    for (size_t i = 0; tmp && i < b->n; i++) {
        art_atomic_abort(tmp[i]); /* frees; removes what was not renamed */
    }
    free(tmp);
    art_bundle_destroy(b);
    return st;
}
