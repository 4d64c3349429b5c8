/*
 * Fuzz target: CSV reading (libcsv through art_table_load_csv) and, for
 * what it accepts, the write-back. Whatever the bytes, the loader returns a
 * status and never crashes; a table it accepts is written again as CSV and
 * read back to the same shape, names and cell texts.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "edgefit/artifacts.h"
#include "fuzz_temp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The cell as CSV text in both tables (the type may change: a REAL column
 * of whole numbers reads back as INT, with the same text). */
static int same_cell(const art_table *t, const art_table *u, size_t r,
                     size_t c)
{
    const size_t nt = art_table_format_cell(t, r, c, NULL, 0);
    const size_t nu = art_table_format_cell(u, r, c, NULL, 0);
    if (nt != nu) {
        return 0;
    }
    char *a = malloc(nt + 1), *b = malloc(nu + 1);
    int same = a && b;
    if (same) {
        art_table_format_cell(t, r, c, a, nt + 1);
        art_table_format_cell(u, r, c, b, nu + 1);
        same = memcmp(a, b, nt) == 0;
    }
    free(a);
    free(b);
    return same;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[64], again[80];
    if (fuzz_write_temp(data, size, "csv", path) != 0) {
        return 0;
    }
    art_table *t = NULL;
    struct art_diag diag;
    if (art_table_load_csv(path, &t, &diag) == ART_OK) {
        snprintf(again, sizeof again, "%s.again", path);
        if (art_table_save_csv(t, again, NULL) == ART_OK) {
            art_table *u = NULL;
            if (art_table_load_csv(again, &u, &diag) != ART_OK ||
                art_table_rows(u) != art_table_rows(t) ||
                art_table_cols(u) != art_table_cols(t)) {
                abort(); /* what we write, we must read back */
            }
            /* ... cell for cell, names included (quotes where a reader
             * would trim or split) */
            for (size_t c = 0; c < art_table_cols(t); c++) {
                if (strcmp(art_table_column_name(t, c),
                           art_table_column_name(u, c)) != 0) {
                    abort();
                }
                for (size_t r = 0; r < art_table_rows(t); r++) {
                    if (!same_cell(t, u, r, c)) {
                        abort();
                    }
                }
            }
            art_table_destroy(u);
            unlink(again);
        }
        art_table_destroy(t);
    }
    unlink(path);
    return 0;
}
