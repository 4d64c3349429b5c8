/*
 * The ONNX functions of a build without the `onnx` option: each says so
 * and returns MEMEST_E_INVALID, so that callers need no #ifdef.
 */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int no_onnx(const char *path, struct memest_diag *diag)
{
    if (diag != NULL) {
        memset(diag, 0, sizeof *diag);
        snprintf(diag->source, sizeof diag->source, "%s",
                 path ? path : "<onnx>");
        snprintf(diag->message, sizeof diag->message,
                 "this build of libmemest reads no ONNX files (it was "
                 "configured with -Donnx=disabled or without protobuf-c)");
    }
    return MEMEST_E_INVALID;
}

int memest_onnx_available(void)
{
    return 0;
}

int memest_model_load_onnx(const char *path,
                           const struct memest_onnx_opts *opts,
                           memest_model **out, struct memest_diag *diag)
{
    (void)opts;
    if (out != NULL) {
        *out = NULL;
    }
    return no_onnx(path, diag);
}

int memest_tensor_load_pb(const char *path, struct memest_owned_tensor *out,
                          struct memest_diag *diag)
{
    if (out != NULL) {
        memset(out, 0, sizeof *out);
    }
    return no_onnx(path, diag);
}

int memest_model_to_onnx(const memest_model *model, unsigned char **out,
                         size_t *len, struct memest_diag *diag)
{
    (void)model;
    if (out != NULL) {
        *out = NULL;
    }
    if (len != NULL) {
        *len = 0;
    }
    return no_onnx(NULL, diag);
}
