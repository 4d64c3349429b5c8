/*
 * Fuzz target: ONNX import (memest_model_load_onnx) and TensorProto
 * reading (memest_tensor_load_pb) of the same bytes. Whatever they are,
 * each returns a status with a message naming the file and never crashes,
 * recurses without bound or asks for memory the file cannot justify; a
 * model it accepts carries weights for every layer that has parameters,
 * names every layer, and its canonical text parses back to the same
 * parameter count; a tensor it accepts holds prod(dims) finite-or-not
 * floats that can all be read.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "edgefit/memest.h"
#include "fuzz_temp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)                                                          \
    do {                                                                     \
        if (!(cond)) {                                                       \
            abort();                                                         \
        }                                                                    \
    } while (0)

static void check_refusal(int st, const struct memest_diag *d,
                          const char *path)
{
    CHECK(st == MEMEST_E_PARSE || st == MEMEST_E_SHAPE ||
          st == MEMEST_E_RANGE || st == MEMEST_E_OVERFLOW ||
          st == MEMEST_E_NOMEM);
    CHECK(memchr(d->message, '\0', sizeof d->message) != NULL);
    CHECK(d->message[0] != '\0');
    CHECK(strcmp(d->source, path) == 0);
}

static void check_model(memest_model *m)
{
    size_t len = 0;
    size_t len2 = 0;
    char *text;
    memest_model *again = NULL;
    struct memest_totals t;

    CHECK(memest_model_layer_count(m) >= 1);
    CHECK(memest_model_input_count(m) >= 1);
    CHECK(memest_model_has_weights(m) ||
          memest_model_parameter_count(m) == 0);
    for (size_t i = 0; i < memest_model_layer_count(m); i++) {
        const struct memest_layer *L = memest_model_layer(m, i);
        CHECK(L->name != NULL && L->name[0] != '\0');
        if (L->weight_count > 0) {
            /* every weight is there to read */
            volatile float sink = L->weight[0] + L->weight[L->weight_count - 1];
            (void)sink;
        }
    }
    CHECK(memest_estimate_totals(m, 2, MEMEST_FP32, &t) == MEMEST_OK ||
          memest_estimate_totals(m, 2, MEMEST_FP32, &t) ==
              MEMEST_E_OVERFLOW);
    CHECK(memest_model_write(m, NULL, 0, &len) == MEMEST_E_RANGE);
    text = malloc(len + 1);
    CHECK(text != NULL);
    CHECK(memest_model_write(m, text, len + 1, &len2) == MEMEST_OK);
    CHECK(memest_model_parse(text, &again, NULL) == MEMEST_OK);
    CHECK(memest_model_parameter_count(again) ==
          memest_model_parameter_count(m));
    memest_model_destroy(again);
    free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[64];
    memest_model *m = NULL;
    struct memest_owned_tensor t;
    struct memest_diag d;
    int st;

    if (fuzz_write_temp(data, size, "onnx", path) != 0) {
        return 0;
    }
    st = memest_model_load_onnx(path, NULL, &m, &d);
    if (st != MEMEST_OK) {
        CHECK(m == NULL);
        check_refusal(st, &d, path);
    } else {
        check_model(m);
        memest_model_destroy(m);
    }
    st = memest_tensor_load_pb(path, &t, &d);
    if (st != MEMEST_OK) {
        CHECK(t.data == NULL && t.name == NULL);
        check_refusal(st, &d, path);
    } else {
        uint64_t n = 1;
        volatile float sink = 0;
        CHECK(t.t.rank <= MEMEST_TENSOR_MAX_RANK);
        for (unsigned k = 0; k < t.t.rank; k++) {
            n *= t.t.dim[k];
        }
        for (uint64_t i = 0; i < n; i++) {
            sink += t.data[i];
        }
        (void)sink;
        memest_owned_tensor_free(&t);
    }
    unlink(path);
    return 0;
}
