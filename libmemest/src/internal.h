/* Private: the model structure shared by the parser and the estimators. */
#ifndef MEMEST_INTERNAL_H
#define MEMEST_INTERNAL_H

#include "edgefit/memest.h"

#include <stddef.h>
#include <stdint.h>

struct memest_model {
    char *name;
    struct memest_shape input;
    uint64_t input_elements;
    struct memest_layer *layers; /* layers[i].name is owned (malloc) */
    size_t count;
    size_t cap;
    uint64_t parameter_count;
    uint64_t macs_per_sample;
    /* input + every layer output, per sample */
    uint64_t activation_elements;
    /* max over layers of input + output elements, per sample */
    uint64_t peak_pair_elements;
    /* open-addressing set of layer names: slot holds index + 1, 0 = free */
    size_t *slots;
    size_t slot_cap;
};

static inline int mul_ovf(uint64_t a, uint64_t b, uint64_t *out)
{
    return __builtin_mul_overflow(a, b, out);
}

static inline int add_ovf(uint64_t a, uint64_t b, uint64_t *out)
{
    return __builtin_add_overflow(a, b, out);
}

/* FNV-1a over n bytes: the hash of the name tables. */
static inline uint64_t memest_hash_bytes(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603u;
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 1099511628211u;
    }
    return h;
}

/*
 * What an imported file says beyond the description text: the batch size
 * it fixes (0 = free) and the original names of the model's inputs
 * (count of them, copied; the text could only carry names made safe for
 * it). For the ONNX importer. MEMEST_E_NOMEM, MEMEST_E_INVALID when count
 * is not the model's input count.
 */
int memest_model_set_import(memest_model *m, uint64_t fixed_batch,
                            const char *const *input_names, size_t count);

#endif
