/*
 * Fuzz target: QDQ ONNX import (QuantizeLinear/DequantizeLinear pairs and
 * the QLinear operators, libmemest's ops_quant.c), from a corpus of the
 * quantised fixtures. A model it accepts carries, for each tensor that has
 * one, a quantisation int8 can use (scale finite and > 0, zero point in
 * [-128, 127]) and, for a layer with per-channel weight scales, one finite
 * positive scale per output channel (`units`); static int8 then builds from the
 * ranges the file carries and runs once on zeros, as do the other
 * precisions (fuzz_exec.h).
 */
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "edgefit/memest.h"
#include "fuzz_exec.h"
#include "fuzz_temp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_quant(const memest_model *m)
{
    struct memest_quant q;
    for (size_t t = 0; t < memest_model_tensor_count(m); t++) {
        int st = memest_model_tensor_quant(m, t, &q);
        FUZZ_CHECK(st == MEMEST_OK || st == MEMEST_E_NOTFOUND);
        if (st == MEMEST_OK) {
            FUZZ_CHECK(q.scale > 0 && q.scale <= 3.4e38f);
            FUZZ_CHECK(q.zero_point >= -128 && q.zero_point <= 127);
        }
    }
    FUZZ_CHECK(memest_model_tensor_quant(m, memest_model_tensor_count(m),
                                         &q) == MEMEST_E_RANGE);
    for (size_t i = 0; i < memest_model_layer_count(m); i++) {
        size_t n = 0;
        const float *s = memest_model_weight_scales(m, i, &n);
        FUZZ_CHECK((s == NULL) == (n == 0));
        FUZZ_CHECK(n == 0 || n == memest_model_layer(m, i)->units);
        for (size_t c = 0; c < n; c++) {
            FUZZ_CHECK(s[c] > 0 && s[c] <= 3.4e38f);
        }
    }
    if (memest_model_is_quantized(m)) {
        FUZZ_CHECK(fuzz_exec_has_ranges(m));
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[64];
    memest_model *m = NULL;
    struct memest_diag d;

    if (fuzz_write_temp(data, size, "qdq", path) != 0) {
        return 0;
    }
    int st = memest_model_load_onnx(path, NULL, &m, &d);
    unlink(path);
    if (st != MEMEST_OK) {
        FUZZ_CHECK(m == NULL && d.message[0] != '\0');
        return 0;
    }
    check_quant(m);
    fuzz_exec_model(m);
    memest_model_destroy(m);
    return 0;
}
