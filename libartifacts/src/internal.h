/* Private to libartifacts. */
#ifndef EDGEFIT_ARTIFACTS_INTERNAL_H
#define EDGEFIT_ARTIFACTS_INTERNAL_H

#include <jansson.h>

#include "edgefit/artifacts.h"

/* Write obj with write() into path atomically. */
int art_save_with(const char *path, art_write_fn write, const void *obj);

/* art_bundle_add() for an object the bundle owns: release(obj) runs when
 * the bundle is committed or destroyed (not when the add fails). */
int art_bundle_add_owned(art_bundle *b, const char *name, art_write_fn write,
                         void *obj, void (*release)(void *));

/* The table as a jansson array of row objects (new reference), or NULL. */
json_t *art_table_to_json(const art_table *t);

/* Shortest "%.*g" form of v that strtod reads back to v. */
void art_format_real(double v, char *buf, size_t len);

#endif
