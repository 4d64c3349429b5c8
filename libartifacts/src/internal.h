/* Private to libartifacts. */
#ifndef EDGEFIT_ARTIFACTS_INTERNAL_H
#define EDGEFIT_ARTIFACTS_INTERNAL_H

#include <jansson.h>
#include <stdbool.h>

#include "edgefit/artifacts.h"

/* Empty a diag (NULL ok). */
void art_diag_clear(struct art_diag *diag);
/* Fill diag with "path: strerror(err)" and err (EIO when err is 0);
 * returns ART_E_IO. */
int art_io_fail(struct art_diag *diag, const char *path, int err);
/* Fill diag with "path: art_strerror(st)" for a failure that is not the
 * system's; returns st. */
int art_status_fail(struct art_diag *diag, const char *path, int st);

/* The steps of art_atomic_commit(), for bundles that must finish every
 * member before renaming any. finish flushes, syncs and closes (the handle
 * stays for rename or abort); rename puts the file in place (abort then
 * only frees); sync_dir makes the folder's new names durable. */
int art_atomic_finish(art_atomic *a, struct art_diag *diag);
int art_atomic_rename(art_atomic *a, struct art_diag *diag);
int art_sync_dir(const char *dir, struct art_diag *diag);
const char *art_atomic_path(const art_atomic *a);
/* Hold SIGINT and SIGTERM in the calling thread (hold true, the previous
 * mask into saved, a sigset_t) or give them back (hold false, from
 * saved): around a bundle's renames, so that a signal lands before them
 * (the old files intact, the temporaries removed by the handler) or after
 * them (the new ones all in place), never among them. */
void art_signals_hold(bool hold, void *saved);
/* A temporary folder the SIGINT/SIGTERM handler empties and removes:
 * path must stay valid until art_live_dir_remove(slot); -1 when the table
 * is full (then a signal leaves it). */
int art_live_dir_add(const char *path);
void art_live_dir_remove(int slot);
/* The folder a commit of dir replaces (a new string; NULL without
 * memory): trailing slashes dropped, and a last name that is ".", ".." or
 * a symbolic link resolved to its absolute target, which is the folder
 * swapped (the link stays and names the new folder). */
char *art_dir_resolve(const char *dir);
/* dir's parent (a new string; "." for a bare name, "/" under the root)
 * and its last name (in dir); ART_E_NOMEM. */
int art_dir_split(const char *dir, char **parent, const char **base);
/* Remove folder path and the files in it (one level). */
void art_remove_tree(const char *path);

/* The line a row (or the header) of a table read from a file began on. */
int art_table_set_row_line(art_table *t, size_t row, long line);
int art_table_set_header_line(art_table *t, long line);

/* Write obj with write() into path atomically; diag as for bundles. */
int art_save_with(const char *path, art_write_fn write, const void *obj,
                  struct art_diag *diag);

/* art_bundle_add() for an object the bundle owns: release(obj) runs when
 * the bundle is committed or destroyed (not when the add fails). */
/* The writers with an optional rounding (NULL: every real exactly). */
int art_table_write_csv_with(const art_table *t, FILE *f, art_round_fn round);
int art_doc_write_with(const art_doc *d, FILE *f, art_round_fn round);

int art_bundle_add_owned(art_bundle *b, const char *name, art_write_fn write,
                         void *obj, void (*release)(void *));

/* The table as a jansson array of row objects (new reference), or NULL. */
json_t *art_table_to_json(const art_table *t);

/* Shortest "%.*g" form of v that strtod reads back to v. */
void art_format_real(double v, char *buf, size_t len);

#endif
