#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "edgefit/profile.h"

/*
 * The built-in boards. Peak figures are fp32 multiply-accumulates per second
 * of the CPU cores, because edgefit's kernels run on CPUs; a GPU figure would
 * promise what no edgefit run on the board can reach.
 */
static const struct prof_device catalog[] = {
    {
        .name = "rpi4",
        /* 4.3 GB/s: the figure of the original tooling for the Pi 4's
         * 32-bit LPDDR4-3200 (the nominal bus peak is 12.8 GB/s; 4.3 is
         * closer to what a single core sustains). */
        .bandwidth_gbps = 4.3,
        /* BCM2711: 4 Cortex-A72 cores at 1.5 GHz. A 128-bit NEON FMLA
         * (4 fp32 lanes) issues once per cycle (it occupies both 64-bit FP
         * pipes, Cortex-A72 software optimisation guide), so
         * 4 x 1.5e9 x 4 = 24 GMAC/s (48 GFLOP/s). */
        .peak_gmacs = 24.0,
        /* ARMv8.0: no fp16 arithmetic and no int8 dot product. 16-bit
         * storage is widened to fp32 (the fp32 peak); int8 runs as 16-bit
         * NEON MLA, 8 lanes per cycle: 4 x 1.5e9 x 8 = 48 GMAC/s. */
        .peak_gmacs_f16 = 24.0,
        .peak_gmacs_int8 = 48.0,
        /* Raspberry Pi 4 product brief: 5 V 3 A supply; about 6.4 W is the
         * commonly measured draw with all four cores loaded. */
        .power_watts = 6.4,
        /* The 4 GB model (1, 2, 4 and 8 GB exist). */
        .memory_mb = 4096.0,
        .cores = 4,
    },
    {
        .name = "jetson-nano",
        /* NVIDIA Jetson Nano module data sheet: 4 GB 64-bit LPDDR4 at
         * 1600 MHz, 25.6 GB/s. */
        .bandwidth_gbps = 25.6,
        /* CPU figure: 4 Cortex-A57 cores at 1.43 GHz, one 128-bit FMLA
         * (4 fp32 lanes) per cycle: 4 x 1.43e9 x 4 = 22.9 GMAC/s. The data
         * sheet's 472 GFLOPS is the 128-core Maxwell GPU in fp16 (236 GFLOPS,
         * 118 GMAC/s in fp32), which edgefit's CPU kernels do not use. */
        .peak_gmacs = 22.88,
        /* ARMv8.0 as the Pi's A72: fp32 for 16-bit storage; int8 as 16-bit
         * MLA, 8 lanes: 4 x 1.43e9 x 8 = 45.76 GMAC/s. */
        .peak_gmacs_f16 = 22.88,
        .peak_gmacs_int8 = 45.76,
        /* Data sheet power modes: 10 W (MAXN) and 5 W; the 10 W mode runs
         * all four cores at full clock. */
        .power_watts = 10.0,
        .memory_mb = 4096.0,
        .cores = 4,
    },
    {
        .name = "desktop",
        /* Dual-channel DDR4-3200: 2 x 8 B x 3.2e9 = 51.2 GB/s nominal; the
         * original tooling used 50 GB/s ("desktop DDR4: ~40-60 GB/s"). */
        .bandwidth_gbps = 50.0,
        /* A nominal 8-core AVX2 desktop CPU at 3.5 GHz with two 256-bit FMA
         * units per core (8 fp32 lanes each): 8 x 3.5e9 x 2 x 8 =
         * 448 GMAC/s. A class figure, not one product. */
        .peak_gmacs = 448.0,
        /* 16-bit storage computes in fp32 on AVX2 (F16C widens it). int8:
         * VPMADDUBSW + VPMADDWD, 32 MACs per 256-bit pair, one pair per
         * cycle per core: 8 x 3.5e9 x 32 = 896 GMAC/s. */
        .peak_gmacs_f16 = 448.0,
        .peak_gmacs_int8 = 896.0,
        /* The 65 W TDP class of such mainstream desktop processors. */
        .power_watts = 65.0,
        .memory_mb = 16384.0,
        .cores = 8,
    },
};

PROF_API double prof_device_peak(const struct prof_device *dev,
                                 enum memest_precision p)
{
    if (!dev) {
        return 0.0;
    }
    if ((p == MEMEST_FP16 || p == MEMEST_BF16) && dev->peak_gmacs_f16 > 0.0) {
        return dev->peak_gmacs_f16;
    }
    if (memest_precision_is_int8(p) && dev->peak_gmacs_int8 > 0.0) {
        return dev->peak_gmacs_int8;
    }
    return dev->peak_gmacs;
}

PROF_API unsigned prof_device_cores(const struct prof_device *dev)
{
    return dev && dev->cores > 0 ? dev->cores : 1;
}

PROF_API double prof_device_peak_threads(const struct prof_device *dev,
                                         enum memest_precision p,
                                         unsigned threads)
{
    if (!dev) {
        return 0.0;
    }
    const unsigned cores = prof_device_cores(dev);
    const unsigned t = threads == 0 ? 1 : threads < cores ? threads : cores;
    return prof_device_peak(dev, p) * (double)t / (double)cores;
}

PROF_API int prof_bandwidth_roof(const struct prof_device *dev,
                                 uint64_t bytes, double achieved_gbps,
                                 unsigned *level, double *gbps)
{
    if (!dev || !level || !gbps) {
        return PROF_E_INVALID;
    }
    if (prof_device_validate(dev, NULL) != PROF_OK) {
        return PROF_E_RANGE;
    }
    /* Levels from the largest (main memory, index cache_count) down to
     * L1 (index 0). */
    unsigned i = dev->cache_count;
    for (unsigned k = 0; k < dev->cache_count; k++) {
        if (bytes <= dev->cache[k].capacity_bytes) {
            i = k;
            break;
        }
    }
#define BW(j) ((j) == dev->cache_count ? dev->bandwidth_gbps \
                                       : dev->cache[(j)].bandwidth_gbps)
    while (i > 0 && achieved_gbps > BW(i)) {
        i--;
    }
    *gbps = BW(i);
#undef BW
    *level = i == dev->cache_count ? 0 : dev->cache[i].level;
    return PROF_OK;
}

#define CATALOG_COUNT (sizeof(catalog) / sizeof(catalog[0]))

/* The comments above as text for a person choosing a device; no cache
 * figures, because none of these boards has a published per-level
 * bandwidth this tool could cite, so they keep the plain DRAM roofline. */
static const char *const catalog_source[] = {
    "bandwidth 4.3 GB/s: the original tooling's figure for the Pi 4's "
    "32-bit LPDDR4-3200 (nominal bus peak 12.8 GB/s; 4.3 is nearer what "
    "one core sustains)\n"
    "peak 24 GMAC/s: BCM2711, 4 Cortex-A72 at 1.5 GHz, one 128-bit NEON "
    "FMLA (4 fp32 lanes) per cycle (Cortex-A72 software optimisation "
    "guide)\n"
    "peak fp16/bf16 24 GMAC/s: no fp16 arithmetic on ARMv8.0, widened to "
    "fp32\n"
    "peak int8 48 GMAC/s: 16-bit NEON MLA, 8 lanes per cycle (no int8 dot "
    "product before ARMv8.2)\n"
    "power 6.4 W: commonly measured draw with four cores loaded (product "
    "brief: 5 V 3 A supply)\n"
    "memory 4096 MB: the 4 GB model (1, 2, 4 and 8 GB exist)\n"
    "cores 4: the peaks count all four cores; a run on one thread is "
    "predicted at a quarter of them",
    "bandwidth 25.6 GB/s: Jetson Nano module data sheet, 64-bit LPDDR4 at "
    "1600 MHz\n"
    "peak 22.88 GMAC/s: 4 Cortex-A57 at 1.43 GHz, one 128-bit FMLA per "
    "cycle (the data sheet's 472 GFLOPS is the GPU in fp16, which edgefit's "
    "CPU kernels do not use)\n"
    "peak fp16/bf16 22.88 GMAC/s: widened to fp32 (ARMv8.0)\n"
    "peak int8 45.76 GMAC/s: 16-bit NEON MLA, 8 lanes per cycle\n"
    "power 10 W: data sheet MAXN power mode (all four cores at full "
    "clock)\n"
    "memory 4096 MB: data sheet, 4 GB LPDDR4\n"
    "cores 4: the peaks count all four cores; a run on one thread is "
    "predicted at a quarter of them",
    "bandwidth 50 GB/s: dual-channel DDR4-3200 is 51.2 GB/s nominal; the "
    "original tooling used 50 GB/s\n"
    "peak 448 GMAC/s: a nominal 8-core AVX2 CPU at 3.5 GHz with two "
    "256-bit FMA units per core (a class figure, not one product)\n"
    "peak fp16/bf16 448 GMAC/s: F16C widens to fp32\n"
    "peak int8 896 GMAC/s: VPMADDUBSW + VPMADDWD, 32 MACs per cycle per "
    "core\n"
    "power 65 W: the TDP class of mainstream desktop processors\n"
    "memory 16384 MB: a typical desktop configuration\n"
    "cores 8: the peaks count all eight cores; a run on one thread is "
    "predicted at an eighth of them",
};

_Static_assert(sizeof(catalog_source) / sizeof(catalog_source[0]) ==
                   CATALOG_COUNT,
               "one source text per catalogue device");

PROF_API const char *prof_device_catalog_source(size_t i)
{
    return i < CATALOG_COUNT ? catalog_source[i] : NULL;
}

PROF_API size_t prof_device_catalog_count(void)
{
    return CATALOG_COUNT;
}

PROF_API const struct prof_device *prof_device_catalog(size_t i)
{
    return i < CATALOG_COUNT ? &catalog[i] : NULL;
}

static void diag_set(struct prof_diag *diag, int column, const char *fmt,
                     ...) __attribute__((format(printf, 3, 4)));

static void diag_set(struct prof_diag *diag, int column, const char *fmt,
                     ...)
{
    if (!diag) {
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    diag->column = column;
    vsnprintf(diag->message, sizeof(diag->message), fmt, ap);
    va_end(ap);
}

PROF_API int prof_device_validate(const struct prof_device *dev,
                                  struct prof_diag *diag)
{
    if (!dev) {
        return PROF_E_INVALID;
    }
    if (dev->name[0] == '\0' ||
        memchr(dev->name, '\0', sizeof(dev->name)) == NULL) {
        diag_set(diag, 0, "device name is empty or too long");
        return PROF_E_RANGE;
    }
    if (!isfinite(dev->bandwidth_gbps) || dev->bandwidth_gbps <= 0.0) {
        diag_set(diag, 0, "%s: bandwidth_gbps must be a number > 0",
                 dev->name);
        return PROF_E_RANGE;
    }
    if (!isfinite(dev->peak_gmacs) || dev->peak_gmacs <= 0.0) {
        diag_set(diag, 0, "%s: peak_gmacs must be a number > 0", dev->name);
        return PROF_E_RANGE;
    }
    if (!isfinite(dev->peak_gmacs_f16) || dev->peak_gmacs_f16 < 0.0 ||
        !isfinite(dev->peak_gmacs_int8) || dev->peak_gmacs_int8 < 0.0) {
        diag_set(diag, 0, "%s: peak_gmacs_f16 and peak_gmacs_int8 must be "
                 "numbers >= 0 (0: the fp32 peak)", dev->name);
        return PROF_E_RANGE;
    }
    if (!isfinite(dev->power_watts) || dev->power_watts < 0.0) {
        diag_set(diag, 0, "%s: power_watts must be a number >= 0",
                 dev->name);
        return PROF_E_RANGE;
    }
    if (!isfinite(dev->memory_mb) || dev->memory_mb < 0.0) {
        diag_set(diag, 0, "%s: memory_mb must be a number >= 0", dev->name);
        return PROF_E_RANGE;
    }
    if (dev->cores > PROF_DEVICE_CORES_MAX) {
        diag_set(diag, 0, "%s: cores must be 1 to %d", dev->name,
                 PROF_DEVICE_CORES_MAX);
        return PROF_E_RANGE;
    }
    if (dev->cache_count > PROF_CACHE_LEVELS_MAX) {
        diag_set(diag, 0, "%s: at most %d cache levels", dev->name,
                 (int)PROF_CACHE_LEVELS_MAX);
        return PROF_E_RANGE;
    }
    for (unsigned i = 0; i < dev->cache_count; i++) {
        const struct prof_cache_level *c = &dev->cache[i];
        if (c->capacity_bytes == 0 ||
            (i > 0 && c->capacity_bytes <= dev->cache[i - 1].capacity_bytes)) {
            diag_set(diag, 0,
                     "%s: cache capacities must be > 0 and increasing",
                     dev->name);
            return PROF_E_RANGE;
        }
        if (!isfinite(c->bandwidth_gbps) || c->bandwidth_gbps <= 0.0) {
            diag_set(diag, 0, "%s: cache bandwidth must be a number > 0",
                     dev->name);
            return PROF_E_RANGE;
        }
    }
    return PROF_OK;
}

PROF_API int prof_device_make(const char *name, double bandwidth_gbps,
                              double peak_gmacs, double power_watts,
                              double memory_mb, struct prof_device *out,
                              struct prof_diag *diag)
{
    if (!name || !out) {
        return PROF_E_INVALID;
    }
    const size_t len = strlen(name);
    if (len == 0 || len >= PROF_DEVICE_NAME_MAX) {
        diag_set(diag, 0, "device name must have 1 to %d characters",
                 PROF_DEVICE_NAME_MAX - 1);
        return PROF_E_RANGE;
    }
    struct prof_device d;
    memset(&d, 0, sizeof d);
    memcpy(d.name, name, len + 1);
    d.bandwidth_gbps = bandwidth_gbps;
    d.peak_gmacs = peak_gmacs;
    d.power_watts = power_watts;
    d.memory_mb = memory_mb;
    const int st = prof_device_validate(&d, diag);
    if (st == PROF_OK) {
        *out = d;
    }
    return st;
}

PROF_API int prof_device_host(const struct prof_calibration *cal,
                              struct prof_device *out)
{
    struct prof_calibration local;
    if (!out) {
        return PROF_E_INVALID;
    }
    if (!cal) {
        const int st = prof_host_calibration(&local);
        if (st != PROF_OK) {
            return st;
        }
        cal = &local;
    }
    memset(out, 0, sizeof(*out));
    snprintf(out->name, sizeof(out->name), "host");
    out->bandwidth_gbps = cal->triad.gbps;
    /* The calibration measures one thread; the device's peaks count every
     * online core, as the catalogue's do, so that a one-thread prediction
     * is the calibrated figure and T threads get T of them. */
    const long online = sysconf(_SC_NPROCESSORS_ONLN);
    out->cores = online < 1 ? 1
                 : online > PROF_DEVICE_CORES_MAX ? PROF_DEVICE_CORES_MAX
                                                  : (unsigned)online;
    out->peak_gmacs = cal->peak.gmacs * out->cores;
    out->peak_gmacs_f16 = cal->f16.gmacs * out->cores;
    out->peak_gmacs_int8 = cal->int8.gmacs * out->cores;
    out->power_watts = 0.0;
    out->memory_mb = (double)cal->memory_mb;
    const unsigned nl = cal->level_count < PROF_MEM_LEVELS_MAX
                            ? cal->level_count
                            : PROF_MEM_LEVELS_MAX;
    for (unsigned i = 0; i < nl; i++) {
        const struct prof_mem_level *l = &cal->levels[i];
        if (l->level == 0 || out->cache_count == PROF_CACHE_LEVELS_MAX) {
            continue;
        }
        struct prof_cache_level *c = &out->cache[out->cache_count++];
        c->level = l->level;
        c->capacity_bytes = l->capacity_bytes;
        c->bandwidth_gbps = l->triad.gbps;
    }
    return prof_device_validate(out, NULL);
}

enum field {
    F_NAME, F_BANDWIDTH, F_PEAK, F_POWER, F_MEMORY, F_PEAK16, F_PEAK8,
    F_CORES, F_COUNT
};

static const char *const field_names[F_COUNT] = {
    "name", "bandwidth_gbps", "peak_gmacs", "power_watts", "memory_mb",
    "peak_gmacs_f16", "peak_gmacs_int8", "cores",
};

PROF_API int prof_device_parse(const char *spec, struct prof_device *out,
                               struct prof_diag *diag)
{
    if (!spec || !out) {
        return PROF_E_INVALID;
    }
    struct prof_device d;
    memset(&d, 0, sizeof(d));
    int seen[F_COUNT] = {0};
    const char *p = spec;
    for (;;) {
        while (*p == ' ' || *p == '\t') {
            p++;
        }
        const char *key = p;
        while (*p && *p != '=' && *p != ',') {
            p++;
        }
        const char *key_end = p;
        while (key_end > key && (key_end[-1] == ' ' || key_end[-1] == '\t')) {
            key_end--;
        }
        const int key_col = (int)(key - spec) + 1;
        const size_t key_len = (size_t)(key_end - key);
        if (*p != '=') {
            if (key_len == 0) {
                diag_set(diag, key_col, "expected key=value");
            } else {
                diag_set(diag, key_col, "'%.*s' has no '=value'",
                         (int)key_len, key);
            }
            return PROF_E_PARSE;
        }
        int f = 0;
        while (f < F_COUNT && (strlen(field_names[f]) != key_len ||
                               strncmp(field_names[f], key, key_len) != 0)) {
            f++;
        }
        if (f == F_COUNT) {
            diag_set(diag, key_col,
                     "unknown key '%.*s' (expected name, bandwidth_gbps, "
                     "peak_gmacs, power_watts, memory_mb, peak_gmacs_f16, "
                     "peak_gmacs_int8 or cores)",
                     (int)key_len, key);
            return PROF_E_PARSE;
        }
        if (seen[f]) {
            diag_set(diag, key_col, "key '%s' given twice", field_names[f]);
            return PROF_E_PARSE;
        }
        seen[f] = 1;
        p++; /* '=' */
        while (*p == ' ' || *p == '\t') {
            p++;
        }
        const char *val = p;
        while (*p && *p != ',') {
            p++;
        }
        const char *val_end = p;
        while (val_end > val && (val_end[-1] == ' ' || val_end[-1] == '\t')) {
            val_end--;
        }
        const int val_col = (int)(val - spec) + 1;
        const size_t val_len = (size_t)(val_end - val);
        if (val_len == 0) {
            diag_set(diag, val_col, "'%s' has an empty value",
                     field_names[f]);
            return PROF_E_PARSE;
        }
        if (f == F_NAME) {
            if (val_len >= sizeof(d.name)) {
                diag_set(diag, val_col, "name is longer than %d characters",
                         (int)sizeof(d.name) - 1);
                return PROF_E_PARSE;
            }
            memcpy(d.name, val, val_len);
            d.name[val_len] = '\0';
        } else {
            char num[64];
            if (val_len >= sizeof(num)) {
                diag_set(diag, val_col, "'%s': '%.*s' is not a number",
                         field_names[f], (int)val_len, val);
                return PROF_E_PARSE;
            }
            memcpy(num, val, val_len);
            num[val_len] = '\0';
            char *end = NULL;
            errno = 0;
            const double v = strtod(num, &end);
            if (end == num || *end != '\0' || errno == ERANGE ||
                !isfinite(v)) {
                diag_set(diag, val_col, "'%s': '%s' is not a finite number",
                         field_names[f], num);
                return PROF_E_PARSE;
            }
            if (f == F_CORES) {
                if (v < 1.0 || v > PROF_DEVICE_CORES_MAX || v != floor(v)) {
                    diag_set(diag, val_col, "'cores': '%s' is not a whole "
                             "number from 1 to %d", num,
                             PROF_DEVICE_CORES_MAX);
                    return PROF_E_RANGE;
                }
                d.cores = (unsigned)v;
                goto next;
            }
            double *slot = f == F_BANDWIDTH ? &d.bandwidth_gbps
                           : f == F_PEAK    ? &d.peak_gmacs
                           : f == F_POWER   ? &d.power_watts
                           : f == F_PEAK16  ? &d.peak_gmacs_f16
                           : f == F_PEAK8   ? &d.peak_gmacs_int8
                                            : &d.memory_mb;
            *slot = v;
        }
    next:
        if (*p == '\0') {
            break;
        }
        p++; /* ',' */
    }
    for (int f = F_NAME; f <= F_PEAK; f++) {
        if (!seen[f]) {
            diag_set(diag, (int)strlen(spec) + 1, "missing key '%s'",
                     field_names[f]);
            return PROF_E_PARSE;
        }
    }
    const int st = prof_device_validate(&d, diag);
    if (st != PROF_OK) {
        return st;
    }
    *out = d;
    return PROF_OK;
}

PROF_API int prof_device_lookup(const char *name, struct prof_device *out,
                                struct prof_diag *diag)
{
    if (!name || !out) {
        return PROF_E_INVALID;
    }
    for (size_t i = 0; i < CATALOG_COUNT; i++) {
        if (strcmp(name, catalog[i].name) == 0) {
            *out = catalog[i];
            return PROF_OK;
        }
    }
    if (strcmp(name, "host") == 0) {
        return prof_device_host(NULL, out);
    }
    if (strchr(name, '=')) {
        return prof_device_parse(name, out, diag);
    }
    diag_set(diag, 1,
             "unknown device '%s' (expected rpi4, jetson-nano, desktop, host "
             "or name=...,bandwidth_gbps=...,peak_gmacs=...)",
             name);
    return PROF_E_INVALID;
}

PROF_API int prof_predict(const struct prof_device *dev, uint64_t macs,
                          uint64_t bytes, struct prof_prediction *out)
{
    return prof_predict_threads(dev, macs, bytes, 1, out);
}

PROF_API int prof_predict_threads(const struct prof_device *dev,
                                  uint64_t macs, uint64_t bytes,
                                  unsigned threads,
                                  struct prof_prediction *out)
{
    if (!dev || !out) {
        return PROF_E_INVALID;
    }
    if (prof_device_validate(dev, NULL) != PROF_OK) {
        return PROF_E_RANGE;
    }
    /* The working set is what the work moves: the smallest cache that
     * holds all of it serves it (the operator is run repeatedly on the
     * same tensors, as in a steady stream of inferences). */
    out->memory_level = 0;
    out->bandwidth_gbps = dev->bandwidth_gbps;
    for (unsigned i = 0; i < dev->cache_count; i++) {
        if (bytes <= dev->cache[i].capacity_bytes) {
            out->memory_level = dev->cache[i].level;
            out->bandwidth_gbps = dev->cache[i].bandwidth_gbps;
            break;
        }
    }
    /* GMAC/s = MAC/ns and GB/s = B/ns: divide by 1e6 for ms. */
    out->threads = threads == 0 ? 1 : threads;
    out->peak_gmacs = prof_device_peak_threads(dev, MEMEST_FP32, threads);
    out->compute_ms = (double)macs / out->peak_gmacs / 1e6;
    out->memory_ms = (double)bytes / out->bandwidth_gbps / 1e6;
    out->bound = out->compute_ms > out->memory_ms ? PROF_BOUND_COMPUTE
                                                  : PROF_BOUND_MEMORY;
    out->predicted_ms = fmax(out->compute_ms, out->memory_ms);
    /* Zero watts means nobody said: no energy rather than 0 J. */
    out->energy_proxy_j = dev->power_watts > 0.0
                              ? dev->power_watts * out->predicted_ms / 1000.0
                              : NAN;
    return PROF_OK;
}

PROF_API int prof_predict_layers(const struct prof_device *dev,
                                 const struct prof_work *layers, size_t n,
                                 const double *measured_ms,
                                 struct prof_layer_prediction *out,
                                 struct prof_prediction_total *total)
{
    if (!dev || !layers || !out || !total || n == 0) {
        return PROF_E_INVALID;
    }
    if (prof_device_validate(dev, NULL) != PROF_OK) {
        return PROF_E_RANGE;
    }
    if (measured_ms) {
        for (size_t i = 0; i < n; i++) {
            const double m = measured_ms[i];
            if (!isnan(m) && (!isfinite(m) || m < 0.0)) {
                return PROF_E_RANGE;
            }
        }
    }
    struct prof_prediction_total t = {0};
    double measured = 0.0, predicted_measured = 0.0, abs_err = 0.0;
    size_t n_measured = 0;
    for (size_t i = 0; i < n; i++) {
        const int st = prof_predict_threads(dev, layers[i].macs,
                                            layers[i].bytes,
                                            layers[i].threads, &out[i].pred);
        if (st != PROF_OK) {
            return st;
        }
        const double p = out[i].pred.predicted_ms;
        t.predicted_ms += p;
        t.energy_proxy_j += out[i].pred.energy_proxy_j;
        const double m = measured_ms ? measured_ms[i] : NAN;
        out[i].measured_ms = m;
        out[i].relative_error = NAN;
        if (isnan(m)) {
            continue;
        }
        measured += m;
        predicted_measured += p;
        n_measured++;
        /* A ratio to or of nothing says nothing: zero work predicts 0 ms,
         * and a median under the clock's resolution reads 0 ms. */
        if (p > 0.0 && m > 0.0) {
            out[i].relative_error = (p - m) / m;
            abs_err += fabs(out[i].relative_error);
            t.compared++;
        }
    }
    t.measured_ms = n_measured ? measured : NAN;
    t.relative_error = n_measured && measured > 0.0
                           ? (predicted_measured - measured) / measured
                           : NAN;
    t.mean_abs_relative_error =
        t.compared ? abs_err / (double)t.compared : NAN;
    *total = t;
    return PROF_OK;
}
