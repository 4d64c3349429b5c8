/*
 * Fuzz target, end to end from the text format: bytes, the model parser,
 * then libprofile's executor (plan, parameters, arena) and one forward pass
 * on zero input at fp32, fp16, bf16 and int8-dynamic (fuzz_exec.h). A text
 * model carries no activation ranges, so static int8 is not run here (see
 * fuzz_qdq.c). Whatever the bytes: a refusal with a status, or a run that
 * ends in a documented status; never a crash, a read out of bounds or an
 * allocation the model's estimate does not justify.
 */
#include <stdint.h>
#include <string.h>

#include "edgefit/memest.h"
#include "fuzz_exec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    memest_model *m = NULL;
    struct memest_diag d;
    int st = memest_model_parse_buffer(data ? (const char *)data : "", size,
                                       "fuzz", &m, &d);
    if (st != MEMEST_OK) {
        FUZZ_CHECK(m == NULL && d.message[0] != '\0');
        return 0;
    }
    fuzz_exec_model(m);
    memest_model_destroy(m);
    return 0;
}
