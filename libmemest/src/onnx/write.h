/*
 * ONNX export, private to libmemest: what write.c (the builder and the
 * entry point memest_model_to_onnx()) and write_ops.c (THE table of how
 * each kind and each activation becomes ONNX nodes) share.
 *
 * Every message the writer builds (nodes, tensors, names) is allocated
 * through the writer and released together at the end: protobuf-c packs
 * from plain structs, so nothing here needs a destructor of its own.
 *
 * Adding a kind: a row in write_ops.c's table, a function that writes the
 * layer's nodes from the ONNX names of its inputs to the name of its
 * output, with wr_node()/wr_attr_*() and its constants with wr_init_*();
 * then the round trip in tests/memest/test_onnx_export.c covers it (the
 * importer must read the nodes back as the same layer).
 */
#ifndef EDGEFIT_MEMEST_ONNX_WRITE_H
#define EDGEFIT_MEMEST_ONNX_WRITE_H

#include "internal.h"
#include "onnx.pb-c.h"

#include <stddef.h>
#include <stdint.h>

struct wr {
    const memest_model *m;
    struct memest_diag *diag;
    void **blocks; /* everything allocated, freed at the end */
    size_t nblocks, capblocks;
    Onnx__NodeProto **nodes;
    size_t nn, capn;
    Onnx__TensorProto **inits;
    size_t ni, capi;
    /* the ONNX name a reader of memest tensor t reads (a model input's
     * name, a layer's name; its DequantizeLinear's output when quantised;
     * a dropout's input's) */
    const char **tname;
    int quant; /* write QDQ (memest_model_is_quantized) */
    /* the layer being written, for messages */
    size_t layer;
    /* every name given so far (inputs, layers, then what wr_name makes),
     * open addressing: a made name that a layer or input already has is
     * made unique with a suffix (names may hold any character) */
    const char **names;
    size_t names_cap, names_n;
};

/* ---- The builder (write.c) ---------------------------------------------- */

void *wr_alloc(struct wr *w, size_t size);
/* A new name no other tensor, initializer or node of the file has
 * (printf-like; "~N" appended when the text is taken); NULL when out of
 * memory. */
#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
char *wr_name(struct wr *w, const char *fmt, ...);
/* Record a name the model gives (an input's, a layer's). 0 when out of
 * memory. */
int wr_claim(struct wr *w, const char *name);
/* "layer 'x' (kind): <message>"; returns status */
#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
int wr_fail(struct wr *w, int status, const char *fmt, ...);

/* A node op_type(inputs) -> outputs named `name`; an input "" is an
 * omitted optional one. NULL when out of memory (the status is then
 * MEMEST_E_NOMEM). */
Onnx__NodeProto *wr_node(struct wr *w, const char *op_type, const char *name,
                         size_t nin, const char *const *in, size_t nout,
                         const char *const *out);
int wr_attr_int(struct wr *w, Onnx__NodeProto *n, const char *name,
                int64_t v);
int wr_attr_ints(struct wr *w, Onnx__NodeProto *n, const char *name,
                 size_t count, const int64_t *v);
int wr_attr_float(struct wr *w, Onnx__NodeProto *n, const char *name,
                  float v);
int wr_attr_str(struct wr *w, Onnx__NodeProto *n, const char *name,
                const char *v);

/* Initializers (the data is copied). A rank 0 tensor is a scalar. */
int wr_init_f32(struct wr *w, const char *name, unsigned rank,
                const uint64_t *dim, const float *data);
int wr_init_i64(struct wr *w, const char *name, unsigned rank,
                const uint64_t *dim, const int64_t *data);
/* int8 (type INT8), uint8 (UINT8) or int32 (INT32) values, as ONNX keeps
 * them: in int32_data */
int wr_init_int(struct wr *w, const char *name, int32_t type, unsigned rank,
                const uint64_t *dim, const int32_t *data);
/* A float scalar constant named <layer>/<what>; *out its name. */
int wr_scalar(struct wr *w, const char *what, float v, const char **out);

/* A weight initializer "<layer>.<suffix>" of shape dim: float32, or in QDQ
 * int8 per output channel (axis 0) with a DequantizeLinear whose output
 * is the name given in *out. bias_scale: for a bias in QDQ, the input's
 * scale (the bias is int32 with scale x_scale * w_scale[c]); *out is its
 * name either way. */
int wr_weight(struct wr *w, const struct memest_layer *L, const char *suffix,
              unsigned rank, const uint64_t *dim, const float *data,
              const char **out);
int wr_bias(struct wr *w, const struct memest_layer *L, const float *data,
            const char **out);

/* ---- The table (write_ops.c) -------------------------------------------- */

/* Write layer L from the ONNX names of its inputs to the tensor `out`,
 * its main node named `name`. */
typedef int (*wr_kind_fn)(struct wr *w, const struct memest_layer *L,
                          const char *const *in, const char *out,
                          const char *name);

struct wr_kind {
    wr_kind_fn write;   /* NULL: the kind is refused, named */
    int takes_act;      /* a fused act is written as nodes after it */
    int dropped;        /* written as nothing: readers read its input */
};

const struct wr_kind *wr_kind_of(enum memest_kind kind);

/* Write activation act (with L's act_alpha, act_beta) of x into out, its
 * last node named `name`. MEMEST_E_PARSE, named, for MEMEST_ACT_NONE. */
int wr_act(struct wr *w, const struct memest_layer *L, enum memest_act act,
           const char *x, const char *out, const char *name);

#endif
