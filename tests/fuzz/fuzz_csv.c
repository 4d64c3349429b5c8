/*
 * Fuzz target: CSV reading (libcsv through art_table_load_csv) and, for
 * what it accepts, the write-back. Whatever the bytes, the loader returns a
 * status and never crashes; a table it accepts is written again as CSV and
 * read back to the same shape.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "edgefit/artifacts.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int write_temp(const uint8_t *data, size_t size, char *path)
{
    strcpy(path, "/tmp/edgefit-fuzz-csv-XXXXXX");
    int fd = mkstemp(path);
    if (fd < 0) {
        return -1;
    }
    size_t off = 0;
    while (off < size) {
        ssize_t n = write(fd, data + off, size - off);
        if (n <= 0) {
            close(fd);
            unlink(path);
            return -1;
        }
        off += (size_t)n;
    }
    close(fd);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[64], again[80];
    if (write_temp(data, size, path) != 0) {
        return 0;
    }
    art_table *t = NULL;
    struct art_diag diag;
    if (art_table_load_csv(path, &t, &diag) == ART_OK) {
        snprintf(again, sizeof again, "%s.again", path);
        if (art_table_save_csv(t, again) == ART_OK) {
            art_table *u = NULL;
            if (art_table_load_csv(again, &u, &diag) != ART_OK ||
                art_table_rows(u) != art_table_rows(t) ||
                art_table_cols(u) != art_table_cols(t)) {
                abort(); /* what we write, we must read back */
            }
            art_table_destroy(u);
            unlink(again);
        }
        art_table_destroy(t);
    }
    unlink(path);
    return 0;
}
