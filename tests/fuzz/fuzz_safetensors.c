/*
 * Fuzz target: safetensors reading (art_safetensors_load) and, for what it
 * accepts, the write-back. Whatever the bytes, the loader returns a status
 * and a message and never crashes or reads past its buffers; a file it
 * accepts is written again and read back to the same tensors, byte for
 * byte.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "edgefit/artifacts.h"
#include "fuzz_temp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static size_t bytes_of(const struct art_tensor *t)
{
    size_t n = art_dtype_size(t->dtype);
    for (size_t d = 0; d < t->ndim; d++) {
        n *= (size_t)t->shape[d];
    }
    return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[64], again[80];
    if (fuzz_write_temp(data, size, "st", path) != 0) {
        return 0;
    }
    art_safetensors *st = NULL;
    struct art_diag diag;
    memset(&diag, 0, sizeof(diag));
    if (art_safetensors_load(path, &st, &diag) != ART_OK) {
        if (st != NULL || diag.message[0] == '\0') {
            abort(); /* a refusal leaves nothing and says why */
        }
        unlink(path);
        return 0;
    }
    const size_t n = art_safetensors_count(st);
    struct art_tensor *ts = calloc(n ? n : 1, sizeof *ts);
    const size_t nm = art_safetensors_meta_count(st);
    const char **keys = calloc(nm ? nm : 1, sizeof *keys);
    const char **values = calloc(nm ? nm : 1, sizeof *values);
    if (!ts || !keys || !values) {
        abort();
    }
    for (size_t i = 0; i < n; i++) {
        ts[i] = *art_safetensors_tensor(st, i);
    }
    for (size_t i = 0; i < nm; i++) {
        if (art_safetensors_meta_at(st, i, &keys[i], &values[i]) != ART_OK) {
            abort();
        }
    }
    snprintf(again, sizeof again, "%s.again", path);
    if (art_safetensors_save(again, ts, n, keys, values, nm, &diag) !=
        ART_OK) {
        abort(); /* what we read, we can write */
    }
    art_safetensors *back = NULL;
    if (art_safetensors_load(again, &back, &diag) != ART_OK ||
        art_safetensors_count(back) != n ||
        art_safetensors_meta_count(back) != nm) {
        abort(); /* what we write, we must read back */
    }
    for (size_t i = 0; i < n; i++) {
        const struct art_tensor *a = art_safetensors_tensor(st, i);
        const struct art_tensor *b = art_safetensors_find(back, a->name);
        if (!b || b->dtype != a->dtype || b->ndim != a->ndim ||
            memcmp(b->shape, a->shape, a->ndim * sizeof a->shape[0]) != 0 ||
            memcmp(b->data, a->data, bytes_of(a)) != 0) {
            abort();
        }
    }
    art_safetensors_destroy(back);
    art_safetensors_destroy(st);
    free(ts);
    free(keys);
    free(values);
    unlink(again);
    unlink(path);
    return 0;
}
