/*
 * Fuzz target, end to end from ONNX: bytes, ONNX import, then libprofile's
 * executor (plan, the file's weights, arena) and one forward pass on zero
 * input at fp32, fp16, bf16, int8-dynamic and, when the file carries every
 * tensor's quantisation (QDQ), static int8 (fuzz_exec.h). Whatever the
 * bytes: a refusal naming the file, or a run that ends in a documented
 * status; never a crash or a read out of bounds.
 */
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "edgefit/memest.h"
#include "fuzz_exec.h"
#include "fuzz_temp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[64];
    memest_model *m = NULL;
    struct memest_diag d;

    if (fuzz_write_temp(data, size, "onnx-exec", path) != 0) {
        return 0;
    }
    int st = memest_model_load_onnx(path, NULL, &m, &d);
    unlink(path);
    if (st != MEMEST_OK) {
        FUZZ_CHECK(m == NULL && d.message[0] != '\0');
        FUZZ_CHECK(strcmp(d.source, path) == 0);
        return 0;
    }
    fuzz_exec_model(m);
    memest_model_destroy(m);
    return 0;
}
