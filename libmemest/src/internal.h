/* Private: the model structure shared by the parser and the estimators. */
#ifndef MEMEST_INTERNAL_H
#define MEMEST_INTERNAL_H

#include "edgefit/memest.h"

#include <stddef.h>
#include <stdint.h>

/* ---- Limits: one set for every reader, text and ONNX ------------------
 * Each is checked before anything is allocated for what it bounds, so a
 * file that claims more is refused in time and memory proportional to
 * its own size. */

/* The largest per-sample tensor, in elements, any model may have, read
 * from text or from ONNX (one limit for both): the indices of ONNX
 * runtimes and of the kernels are 32-bit, and anything larger is not a
 * model for a small device. A layer's weight tensor is held to it too. */
#define MEMEST_MAX_ELEMENTS ((uint64_t)INT32_MAX)

/* Protocol buffers cannot encode a message over 2 GiB: the largest ONNX
 * file, and so the most bytes of initializers a model can carry. */
#define MEMEST_MAX_ONNX_BYTES ((size_t)2 * 1024 * 1024 * 1024 - 1)

/* The most parameters a model may have: as many as the largest ONNX file
 * holds at one byte each (int8 initializers). A text model declares its
 * sizes without holding the values, and is held to what its ONNX twin
 * could be. */
#define MEMEST_MAX_PARAMETERS ((uint64_t)MEMEST_MAX_ONNX_BYTES)

/* The largest text model file read (a model of a few thousand layers is
 * under 1 MiB). */
#define MEMEST_MAX_TEXT_BYTES ((size_t)64 * 1024 * 1024)

/* A model input: its name (owned), per-sample shape and elements. */
struct model_input {
    char *name;
    struct memest_shape shape;
    uint64_t elements;
    int line;
    int has_quant; /* quant below is set (memest_model_set_tensor_quant) */
    struct memest_quant quant;
    unsigned batch_axis; /* memest_model_input_batch_axis() */
};

/* What the model keeps about a layer beyond struct memest_layer. */
struct layer_extra {
    int declared_bias; /* bias=yes in the description (before any fold) */
    float *weight;     /* owned copies behind layer->weight and ->bias */
    float *bias;
    int has_quant;          /* the layer's output tensor's quantisation */
    struct memest_quant quant;
    float *weight_scales;   /* owned; per output channel, or NULL */
    size_t weight_scale_count;
};

struct memest_model {
    char *name;
    struct model_input *inputs;
    size_t input_count;
    size_t input_cap;
    /* layers[i].name, .inputs and .folded_bn are owned (malloc) */
    struct memest_layer *layers;
    struct layer_extra *extra;
    size_t count;
    size_t cap;
    uint64_t parameter_count;
    uint64_t macs_per_sample;
    /* every input + every layer output, per sample */
    uint64_t activation_elements;
    /* the batch an ONNX file fixes, 0 when free */
    uint64_t fixed_batch;
    unsigned output_batch_axis; /* memest_model_output_batch_axis() */
};

static inline int mul_ovf(uint64_t a, uint64_t b, uint64_t *out)
{
    return __builtin_mul_overflow(a, b, out);
}

static inline int add_ovf(uint64_t a, uint64_t b, uint64_t *out)
{
    return __builtin_add_overflow(a, b, out);
}

/* Set diag's message (line and column 0, the source kept) and return
 * status; diag may be NULL. */
#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
int diag_fail(struct memest_diag *diag, int status, const char *fmt, ...);

/* diag_fail(diag, MEMEST_E_NOMEM, "out of memory: <what> (<bytes> bytes)"):
 * every out-of-memory diagnostic of the library reads so. */
int diag_nomem(struct memest_diag *diag, const char *what, size_t bytes);

/*
 * Read the whole file at path into *out (malloc, not NUL-terminated),
 * *out_len bytes. `what` names the file in messages ("model file"); a
 * file longer than max_bytes is MEMEST_E_RANGE ("the <what> is larger
 * than <limit_text>"); MEMEST_E_IO with the system's reason, MEMEST_E_NOMEM.
 */
int read_whole_file(const char *path, const char *what, size_t max_bytes,
                    const char *limit_text, char **out, size_t *out_len,
                    struct memest_diag *diag);

/* FNV-1a over n bytes: the hash of the name tables. Its multiply wraps
 * by design; clang's unsigned-integer-overflow check (the test build of
 * scripts/ci-faults.sh --integer) is told so here, and only here. */
#if defined(__clang__)
__attribute__((no_sanitize("unsigned-integer-overflow")))
#endif
static inline uint64_t memest_hash_bytes(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603u;
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 1099511628211u;
    }
    return h;
}


/* Elements of a shape (checked for overflow when the model was built). */
static inline uint64_t shape_elements(const struct memest_shape *sh)
{
    uint64_t n = 1;
    for (unsigned i = 0; i < sh->rank; i++) {
        n *= sh->dim[i];
    }
    return n;
}

/* The shape of tensor t (an input or a layer output); NULL when out of
 * range. */
const struct memest_shape *model_tensor_shape(const struct memest_model *m,
                                              size_t t);

/* Record the batch an imported file fixes (0 = free). */
void model_set_fixed_batch(struct memest_model *m, uint64_t batch);
/* The batch axes of the data an ONNX file describes (input k's, the
 * output's); k out of range is ignored. */
void model_set_batch_axes(struct memest_model *m, size_t k, unsigned in_axis,
                          unsigned out_axis);

/* The preset texts compiled from the .txt files of libmemest/models
 * (generated by models/embed.py). */
struct preset_text {
    const char *name;
    const char *text;
    size_t len;
};
extern const struct preset_text memest_preset_texts[];
extern const size_t memest_preset_text_count;
extern const char *const memest_preset_name_list[]; /* NULL-terminated */

#endif
