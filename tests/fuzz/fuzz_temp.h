/* Shared by the fuzz targets whose readers take a path: the input bytes in
 * a new temporary file. Header-only, so a target still builds from its one
 * .c file with clang and libFuzzer (see the README). */
#ifndef EDGEFIT_FUZZ_TEMP_H
#define EDGEFIT_FUZZ_TEMP_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* Write size bytes of data to a new file /tmp/edgefit-fuzz-TAG-XXXXXX; its
 * name goes to path (at least 64 bytes, TAG at most 16 characters). 0 on
 * success; -1 with nothing left behind on failure. The caller unlinks. */
static inline int fuzz_write_temp(const uint8_t *data, size_t size,
                                  const char *tag, char *path)
{
    snprintf(path, 64, "/tmp/edgefit-fuzz-%.16s-XXXXXX", tag);
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

#endif
