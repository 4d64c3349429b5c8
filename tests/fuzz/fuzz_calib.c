/*
 * Fuzz target: the int8 calibration file (libprofile quant_calib_file.c,
 * prof_ranges_load) read for a fixed small model (CALIB_MODEL below; the
 * corpus is files written for it). Whatever the bytes: refused with a
 * status and a message naming the file, or one range per tensor of the
 * model, with its tensor's name in order, finite min <= max and the scale
 * and zero point prof_quant_params() gives for them; static int8 then
 * builds from those ranges and runs once on zeros.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "edgefit/memest.h"
#include "edgefit/profile.h"
#include "fuzz_exec.h"
#include "fuzz_temp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Five tensors: input, conv1, pool1, flatten1, dense1. */
static const char CALIB_MODEL[] = "name calib\n"
                                  "input 1x6x6\n"
                                  "conv2d 2 k=3 act=relu\n"
                                  "maxpool k=2\n"
                                  "flatten\n"
                                  "dense 3\n";

static memest_model *model(void)
{
    static memest_model *m;
    if (m == NULL) {
        FUZZ_CHECK(memest_model_parse(CALIB_MODEL, &m, NULL) == MEMEST_OK);
    }
    return m;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[64];
    const memest_model *m = model();
    struct prof_ranges r;
    struct prof_diag d;

    if (fuzz_write_temp(data, size, "calib", path) != 0) {
        return 0;
    }
    d.message[0] = '\0';
    int st = prof_ranges_load(path, m, &r, &d);
    unlink(path);
    if (st != PROF_OK) {
        FUZZ_CHECK(st == PROF_E_PARSE || st == PROF_E_RANGE ||
                   st == PROF_E_IO || st == PROF_E_NOMEM);
        FUZZ_CHECK(r.count == 0 && r.tensors == NULL);
        FUZZ_CHECK(d.message[0] != '\0');
        return 0;
    }
    FUZZ_CHECK(r.count == memest_model_tensor_count(m));
    for (size_t t = 0; t < r.count; t++) {
        const struct prof_tensor_range *e = &r.tensors[t];
        float scale;
        int32_t zp;
        FUZZ_CHECK(e->name != NULL);
        FUZZ_CHECK(isfinite(e->min) && isfinite(e->max) && e->min <= e->max);
        FUZZ_CHECK(prof_quant_params(e->min, e->max, &scale, &zp) == PROF_OK);
        FUZZ_CHECK(scale == e->scale && zp == e->zero_point);
    }
    struct prof_exec_opts o;
    prof_exec *ex = NULL;
    prof_exec_opts_init(&o);
    o.precision = MEMEST_INT8;
    o.ranges = &r;
    st = prof_exec_create(m, &o, &ex, &d);
    FUZZ_CHECK(st == PROF_OK || st == PROF_E_RANGE);
    if (st == PROF_OK) {
        float in[36] = {0};
        float out[3];
        FUZZ_CHECK(prof_exec_input_count(ex) == 36 &&
                   prof_exec_output_count(ex) == 3);
        st = prof_exec_run(ex, in, 36, out, 3);
        FUZZ_CHECK(st == PROF_OK || st == PROF_E_RANGE);
        prof_exec_destroy(ex);
    }
    prof_ranges_finish(&r);
    return 0;
}
