/*
 * Fuzz target: the devices CSV of --devices (apps/common/devices.c,
 * cli_devices_load). Whatever the bytes: refused with a message on stderr,
 * or a list of devices each with a name, finite figures in the ranges the
 * reader promises, a line in the file, and found again by its name
 * (cli_device_resolve).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "devices.h"
#include "fuzz_temp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)                                                          \
    do {                                                                     \
        if (!(cond)) {                                                       \
            abort();                                                         \
        }                                                                    \
    } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[64];
    struct cli_devices ds;

    if (fuzz_write_temp(data, size, "devices", path) != 0) {
        return 0;
    }
    if (cli_devices_load(path, &ds)) {
        CHECK(ds.count >= 1 && ds.devs != NULL && ds.lines != NULL);
        for (size_t i = 0; i < ds.count; i++) {
            const struct prof_device *d = &ds.devs[i];
            struct prof_device again;
            CHECK(d->name[0] != '\0');
            CHECK(isfinite(d->bandwidth_gbps) && d->bandwidth_gbps >= 0.001 &&
                  d->bandwidth_gbps <= 1e6);
            CHECK(isfinite(d->power_watts) && d->power_watts >= 0 &&
                  d->power_watts <= 1e5);
            CHECK(ds.lines[i] >= 2 && (i == 0 || ds.lines[i] > ds.lines[i - 1]));
            CHECK(cli_device_resolve(d->name, &ds, &again));
            CHECK(strcmp(again.name, d->name) == 0);
            CHECK(again.bandwidth_gbps == d->bandwidth_gbps);
        }
        cli_devices_free(&ds);
    }
    unlink(path);
    return 0;
}
