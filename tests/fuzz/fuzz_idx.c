/*
 * Fuzz target: IDX reading (prof_idx_load_images and prof_idx_load_labels,
 * gzip or plain, whatever the bytes say). The readers return a status and
 * a message and never crash; what they accept is exactly as long as its
 * header says, and a reader never asks for memory the input cannot
 * justify (run under a small -rss_limit_mb to see it).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "edgefit/profile.h"
#include "fuzz_temp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[64];
    if (fuzz_write_temp(data, size, "idx", path) != 0) {
        return 0;
    }
    struct prof_diag diag;
    memset(&diag, 0, sizeof(diag));
    struct prof_idx_images im;
    if (prof_idx_load_images(path, 0, &im, &diag) == PROF_OK) {
        /* a plain file holds its header and exactly the data it claims */
        const int plain = size >= 2 && !(data[0] == 0x1f && data[1] == 0x8b);
        if (plain && size != 16 + im.count * im.rows * im.cols) {
            abort();
        }
        prof_idx_images_finish(&im);
    } else if (im.pixels != NULL || diag.message[0] == '\0') {
        abort();
    }
    memset(&diag, 0, sizeof(diag));
    struct prof_idx_labels lb;
    if (prof_idx_load_labels(path, 3, &lb, &diag) == PROF_OK) {
        if (lb.count > 3) {
            abort();
        }
        prof_idx_labels_finish(&lb);
    } else if (lb.labels != NULL || diag.message[0] == '\0') {
        abort();
    }
    unlink(path);
    return 0;
}
