/*
 * Without a fuzzing engine: run a fuzz target once over each file named on
 * the command line (a seed corpus), so that meson test replays it.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int replay(const char *path)
{
    FILE *f = fopen(path, "rb");
    unsigned char *buf = NULL;
    size_t len = 0;
    size_t cap = 0;

    if (f == NULL) {
        perror(path);
        return 1;
    }
    for (;;) {
        size_t got;
        if (len == cap) {
            unsigned char *grown;
            cap = cap ? cap * 2 : 4096;
            grown = realloc(buf, cap);
            if (grown == NULL) {
                fprintf(stderr, "%s: out of memory\n", path);
                free(buf);
                fclose(f);
                return 1;
            }
            buf = grown;
        }
        got = fread(buf + len, 1, cap - len, f);
        len += got;
        if (got == 0) {
            break;
        }
    }
    if (ferror(f)) {
        perror(path);
        free(buf);
        fclose(f);
        return 1;
    }
    fclose(f);
    LLVMFuzzerTestOneInput(buf, len);
    free(buf);
    printf("ok %s (%zu bytes)\n", path, len);
    return 0;
}

int main(int argc, char **argv)
{
    int failed = 0;
    if (argc < 2) {
        fprintf(stderr, "usage: %s FILE...\n", argv[0]);
        return 2;
    }
    for (int i = 1; i < argc; i++) {
        failed |= replay(argv[i]);
    }
    return failed;
}
