/*
 * Fuzz target: .npy reading (art_npy_parse) and, for what it accepts, the
 * write-back. Whatever the bytes, the parser returns a status and a
 * message and never crashes or reads past its buffer; an array it accepts
 * is written again (art_npy_save) and read back to the same dtype, shape
 * and bytes.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "edgefit/artifacts.h"
#include "fuzz_temp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    art_npy *a = NULL;
    struct art_diag diag;
    memset(&diag, 0, sizeof(diag));
    if (art_npy_parse(data, size, "fuzz.npy", &a, &diag) != ART_OK) {
        if (a != NULL || diag.message[0] == '\0') {
            abort(); /* a refusal leaves nothing and says why */
        }
        return 0;
    }
    char path[64];
    if (fuzz_write_temp(NULL, 0, "npy", path) != 0) {
        art_npy_destroy(a);
        return 0;
    }
    const struct art_tensor *t = art_npy_tensor(a);
    if (art_npy_save(path, t, &diag) != ART_OK) {
        abort(); /* what we read, we can write */
    }
    art_npy *back = NULL;
    if (art_npy_load(path, &back, &diag) != ART_OK) {
        abort(); /* what we write, we must read back */
    }
    const struct art_tensor *b = art_npy_tensor(back);
    size_t bytes = art_dtype_size(t->dtype);
    for (size_t d = 0; d < t->ndim; d++) {
        bytes *= (size_t)t->shape[d];
    }
    if (b->dtype != t->dtype || b->ndim != t->ndim ||
        memcmp(b->shape, t->shape, t->ndim * sizeof t->shape[0]) != 0 ||
        memcmp(b->data, t->data, bytes) != 0) {
        abort();
    }
    art_npy_destroy(back);
    art_npy_destroy(a);
    unlink(path);
    return 0;
}
