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
 * The built-in boards, each figure with its source in catalog_source
 * below (one line per figure, printed by --list-devices). Peaks are the
 * CPU cores' multiply-accumulates per second, because edgefit's kernels
 * run on CPUs; a GPU figure would promise what no edgefit run on the
 * board can reach. A peak is cores x clock x SIMD lanes x FMA issued per
 * cycle. fp16 arithmetic and int8 dot products (SDOT) count only on
 * ARMv8.2 cores that have them (Cortex-A76, A78); on A53, A57 and A72
 * 16-bit storage is widened and computed at the fp32 peak, and int8 runs
 * as 16-bit multiply-accumulates (SMLAL/MLA, 8 lanes of 128 bits).
 * bandwidth_1core_gbps is one core's sustained traffic (bytes read plus
 * written per second, STREAM's counting) from a published tinymembench
 * run; bandwidth_gbps, what all cores sustain together, is that same
 * figure where no all-core STREAM run was found (a lower bound).
 */
static const struct prof_device catalog[] = {
    {
        .name = "rpi3bplus",
        .bandwidth_gbps = 2.426,
        .peak_gmacs = 22.4,      /* 4 x 1.4 GHz x 4 lanes x 1 */
        .peak_gmacs_f16 = 22.4,  /* widened to fp32 (ARMv8.0) */
        .peak_gmacs_int8 = 44.8, /* 4 x 1.4 GHz x 8 lanes (SMLAL) */
        .power_watts = 5.1,
        .memory_mb = 1024.0,
        .cores = 4,
        .clock_ghz = 1.4,
        .bandwidth_1core_gbps = 2.426,
        .idle_watts = 1.9,
        .l1d_bytes = 32 * 1024,
        .l2_bytes = 512 * 1024,
        .l3_bytes = 0,
    },
    {
        .name = "rpizero2w",
        .bandwidth_gbps = 2.5604,
        .peak_gmacs = 16.0,      /* 4 x 1.0 GHz x 4 lanes x 1 */
        .peak_gmacs_f16 = 16.0,
        .peak_gmacs_int8 = 32.0, /* 4 x 1.0 GHz x 8 lanes */
        .power_watts = 0.0,      /* no loaded measurement found */
        .memory_mb = 512.0,
        .cores = 4,
        .clock_ghz = 1.0,
        .bandwidth_1core_gbps = 2.5604,
        .idle_watts = 0.6,
        .l1d_bytes = 32 * 1024,
        .l2_bytes = 512 * 1024,
        .l3_bytes = 0,
    },
    {
        .name = "rpi4",
        .bandwidth_gbps = 5.127,
        .peak_gmacs = 24.0,      /* 4 x 1.5 GHz x 4 lanes x 1 */
        .peak_gmacs_f16 = 24.0,
        .peak_gmacs_int8 = 48.0, /* 4 x 1.5 GHz x 8 lanes */
        .power_watts = 6.4,
        .memory_mb = 4096.0,
        .cores = 4,
        .clock_ghz = 1.5,
        .bandwidth_1core_gbps = 5.127,
        .idle_watts = 0.0,
        .l1d_bytes = 32 * 1024,
        .l2_bytes = 1024 * 1024,
        .l3_bytes = 0,
    },
    {
        .name = "rpi4-1.8",
        .bandwidth_gbps = 4.8412,
        .peak_gmacs = 28.8,      /* 4 x 1.8 GHz x 4 lanes x 1 */
        .peak_gmacs_f16 = 28.8,
        .peak_gmacs_int8 = 57.6, /* 4 x 1.8 GHz x 8 lanes */
        .power_watts = 0.0,      /* no measurement at 1.8 GHz found */
        .memory_mb = 4096.0,
        .cores = 4,
        .clock_ghz = 1.8,
        .bandwidth_1core_gbps = 4.8412,
        .idle_watts = 0.0,
        .l1d_bytes = 32 * 1024,
        .l2_bytes = 1024 * 1024,
        .l3_bytes = 0,
    },
    {
        .name = "rpi5",
        .bandwidth_gbps = 10.68,
        .peak_gmacs = 76.8,       /* 4 x 2.4 GHz x 4 lanes x 2 pipes */
        .peak_gmacs_f16 = 153.6,  /* 4 x 2.4 GHz x 8 lanes x 2 */
        .peak_gmacs_int8 = 307.2, /* 4 x 2.4 GHz x 16 (SDOT) x 2 */
        .power_watts = 7.9,
        .memory_mb = 8192.0,
        .cores = 4,
        .clock_ghz = 2.4,
        .bandwidth_1core_gbps = 10.68,
        .idle_watts = 0.0,
        .l1d_bytes = 64 * 1024,
        .l2_bytes = 4 * 512 * 1024,
        .l3_bytes = 2 * 1024 * 1024,
    },
    {
        .name = "jetson-nano",
        .bandwidth_gbps = 7.553,
        .peak_gmacs = 22.88,      /* 4 x 1.43 GHz x 4 lanes x 1 */
        .peak_gmacs_f16 = 22.88,
        .peak_gmacs_int8 = 45.76, /* 4 x 1.43 GHz x 8 lanes */
        .power_watts = 10.0,
        .memory_mb = 4096.0,
        .cores = 4,
        .clock_ghz = 1.43,
        .bandwidth_1core_gbps = 7.553,
        .idle_watts = 0.0,
        .l1d_bytes = 32 * 1024,
        .l2_bytes = 2 * 1024 * 1024,
        .l3_bytes = 0,
    },
    {
        .name = "jetson-orin-nano",
        .bandwidth_gbps = 13.4526,
        .peak_gmacs = 72.0,       /* 6 x 1.5 GHz x 4 lanes x 2 pipes */
        .peak_gmacs_f16 = 144.0,  /* 6 x 1.5 GHz x 8 lanes x 2 */
        .peak_gmacs_int8 = 288.0, /* 6 x 1.5 GHz x 16 (SDOT) x 2 */
        .power_watts = 15.0,
        .memory_mb = 8192.0,
        .cores = 6,
        .clock_ghz = 1.5,
        .bandwidth_1core_gbps = 13.4526,
        .idle_watts = 0.0,
        .l1d_bytes = 64 * 1024,
        .l2_bytes = 6 * 256 * 1024,
        .l3_bytes = 2 * 1024 * 1024,
    },
    {
        .name = "desktop",
        .bandwidth_gbps = 50.0,
        .peak_gmacs = 448.0,     /* 8 x 3.5 GHz x 8 lanes x 2 FMA units */
        .peak_gmacs_f16 = 448.0, /* F16C widens to fp32 */
        .peak_gmacs_int8 = 896.0,
        .power_watts = 65.0,
        .memory_mb = 16384.0,
        .cores = 8,
        .clock_ghz = 3.5,
        .bandwidth_1core_gbps = 0.0,
        .idle_watts = 0.0,
        .l1d_bytes = 0,
        .l2_bytes = 0,
        .l3_bytes = 0,
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

PROF_API bool prof_device_has_f16(const struct prof_device *dev)
{
    return dev && dev->peak_gmacs_f16 > dev->peak_gmacs;
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

/* The source of every figure above, one line per figure, for a person
 * choosing a device (--list-devices). tinymembench's "C copy" counts the
 * bytes copied; twice that is the traffic STREAM's Copy counts. No cache
 * bandwidths: none of these boards has a published per-level figure this
 * tool could cite, so they keep the plain DRAM roofline (cache_count 0);
 * the cache sizes are for the device model. */
#define SBC "sbc-bench (github.com/ThomasKaiser/sbc-bench) results/"
#define A53_NOTE                                                            \
    "ARM publishes no optimisation guide for the Cortex-A53; this assumes " \
    "one 128-bit NEON instruction issued per cycle, an upper bound"
static const char *const catalog_source[] = {
    /* rpi3bplus */
    "cores 4: Raspberry Pi 3 Model B+ product brief, BCM2837B0, 4 x "
    "Cortex-A53\n"
    "clock 1.4 GHz: product brief\n"
    "peak 22.4 GMAC/s: 4 cores x 1.4 GHz x 4 fp32 lanes x 1 FMLA per "
    "cycle (" A53_NOTE ")\n"
    "peak fp16 22.4 GMAC/s: no fp16 arithmetic on ARMv8.0; 16-bit storage "
    "is widened and computed at the fp32 peak\n"
    "peak int8 44.8 GMAC/s: no int8 dot product on ARMv8.0; 16-bit SMLAL, "
    "8 lanes: 4 x 1.4 GHz x 8\n"
    "l1d 32 KiB per core, l2 512 KiB shared, no l3: Linux "
    "arch/arm64/boot/dts/broadcom/bcm2837.dtsi cache properties\n"
    "bandwidth 2.426 GB/s all cores: no all-core STREAM run found; the "
    "one-core figure, a lower bound\n"
    "bandwidth 1 core 2.426 GB/s: 2 x 1213.0 MB/s tinymembench C copy, " SBC
    "1iI5.txt (Pi 3 B+, 32-bit Raspbian Stretch, 2018-07-29)\n"
    "idle power 1.9 W, power 5.1 W at 400% CPU load: pidramble.com "
    "power consumption benchmarks (Pi 3 B+, headless, stress --cpu 4)\n"
    "memory 1024 MB: product brief (1 GB LPDDR2)",
    /* rpizero2w */
    "cores 4: Raspberry Pi Zero 2 W product brief, RP3A0 (BCM2710A1), 4 x "
    "Cortex-A53\n"
    "clock 1.0 GHz: product brief\n"
    "peak 16 GMAC/s: 4 cores x 1.0 GHz x 4 fp32 lanes x 1 FMLA per cycle "
    "(" A53_NOTE ")\n"
    "peak fp16 16 GMAC/s: widened to fp32 (ARMv8.0)\n"
    "peak int8 32 GMAC/s: 16-bit SMLAL, 8 lanes: 4 x 1.0 GHz x 8\n"
    "l1d 32 KiB per core, l2 512 KiB shared, no l3: the BCM2837's cores "
    "(Linux bcm2837.dtsi)\n"
    "bandwidth 2.5604 GB/s all cores: no all-core STREAM run found; the "
    "one-core figure, a lower bound\n"
    "bandwidth 1 core 2.5604 GB/s: 2 x 1280.2 MB/s tinymembench C copy, " SBC
    "3E85.txt (Pi Zero 2 at 1000 MHz, 2021-11-05)\n"
    "idle power 0.6 W: cnx-software.com 2021-12-09, 'A deep dive into "
    "Raspberry Pi Zero 2 W's power consumption' (120 mA at 5 V, Bullseye)\n"
    "power unknown: no loaded measurement found (give --power-watts)\n"
    "memory 512 MB: product brief",
    /* rpi4 */
    "cores 4: Raspberry Pi 4 Model B product brief, BCM2711, 4 x "
    "Cortex-A72\n"
    "clock 1.5 GHz: the launch clock (boards since 2020 run 1.8 GHz: "
    "rpi4-1.8)\n"
    "peak 24 GMAC/s: 4 cores x 1.5 GHz x 4 fp32 lanes x 1 FMLA per cycle "
    "(Cortex-A72 software optimisation guide: ASIMD FP multiply-accumulate, "
    "Q-form, throughput 1)\n"
    "peak fp16 24 GMAC/s: no fp16 arithmetic on ARMv8.0, widened to fp32\n"
    "peak int8 48 GMAC/s: no int8 dot product before ARMv8.2; 16-bit "
    "SMLAL/MLA, 8 lanes, throughput 1: 4 x 1.5 GHz x 8\n"
    "l1d 32 KiB per core, l2 1 MiB shared, no l3: Linux bcm2711.dtsi cache "
    "properties\n"
    "bandwidth 5.127 GB/s all cores: no all-core STREAM run found; the "
    "one-core figure, a lower bound (the former 4.3 GB/s had no source)\n"
    "bandwidth 1 core 5.127 GB/s: 2 x 2563.5 MB/s tinymembench C copy, " SBC
    "3EgS.txt (Pi 4 at 1500 MHz, 2021-11-07); a one-thread STREAM on a Pi "
    "4 gave Copy 5527.3, Triad 4844.1 MB/s (sci-pi.org.uk/bench/stream.html)\n"
    "idle power unknown; power 6.4 W: commonly measured draw with four "
    "cores loaded (no single published run; product brief: 5 V 3 A "
    "supply)\n"
    "memory 4096 MB: the 4 GB model (1, 2, 4 and 8 GB exist)",
    /* rpi4-1.8 */
    "cores 4: Raspberry Pi 4 Model B, BCM2711 (C0 stepping), 4 x "
    "Cortex-A72\n"
    "clock 1.8 GHz: Raspberry Pi firmware default for boards since 2020 "
    "(and the Pi 400); ncnn's Pi 4 table states 1.8GHz x 4\n"
    "peak 28.8 GMAC/s: 4 cores x 1.8 GHz x 4 fp32 lanes x 1 FMLA per cycle "
    "(Cortex-A72 software optimisation guide)\n"
    "peak fp16 28.8 GMAC/s: widened to fp32 (ARMv8.0)\n"
    "peak int8 57.6 GMAC/s: 16-bit SMLAL/MLA, 8 lanes: 4 x 1.8 GHz x 8\n"
    "l1d 32 KiB per core, l2 1 MiB shared, no l3: Linux bcm2711.dtsi\n"
    "bandwidth 4.8412 GB/s all cores: no all-core STREAM run found; the "
    "one-core figure, a lower bound\n"
    "bandwidth 1 core 4.8412 GB/s: 2 x 2420.6 MB/s tinymembench C copy, " SBC
    "3Gia.txt (Pi 4 at 1800 MHz, 2021-11-27); memory-bound, so no faster "
    "than at 1.5 GHz\n"
    "idle power unknown, power unknown: no measurement at 1.8 GHz found "
    "(give --power-watts)\n"
    "memory 4096 MB: the 4 GB model",
    /* rpi5 */
    "cores 4: Raspberry Pi 5 product brief, BCM2712, 4 x Cortex-A76\n"
    "clock 2.4 GHz: product brief\n"
    "peak 76.8 GMAC/s: 4 cores x 2.4 GHz x 4 fp32 lanes x 2 FMLA per cycle "
    "(Cortex-A76 software optimisation guide: two ASIMD pipes V0/V1, FMLA "
    "Q-form throughput 2)\n"
    "peak fp16 153.6 GMAC/s: ARMv8.2 FP16 arithmetic, 8 lanes x 2 pipes: 4 "
    "x 2.4 GHz x 16\n"
    "peak int8 307.2 GMAC/s: ARMv8.2 SDOT, 16 int8 MACs per Q-form "
    "instruction, throughput 2: 4 x 2.4 GHz x 32\n"
    "l1d 64 KiB per core, l2 2 MiB (512 KiB private to each core), l3 2 "
    "MiB shared: Linux bcm2712.dtsi (citing the Raspberry Pi processors "
    "documentation)\n"
    "bandwidth 10.68 GB/s all cores: no all-core STREAM run found; the "
    "one-core figure, a lower bound\n"
    "bandwidth 1 core 10.68 GB/s: 2 x 5340.0 MB/s tinymembench C copy, " SBC
    "Au3jaA.txt (Pi 5 at 2400 MHz, 2024-01-27)\n"
    "idle power unknown; power 7.9 W: running Geekbench, as quoted in "
    "github.com/geerlingguy/sbc-reviews/issues/21 (2023-10-18; the idle "
    "1.8 W reported there was called too low, so none is stated)\n"
    "memory 8192 MB: the 8 GB model (2, 4, 8 and 16 GB exist)",
    /* jetson-nano */
    "cores 4: NVIDIA Jetson Nano module data sheet, 4 x Cortex-A57\n"
    "clock 1.43 GHz: data sheet (MAXN mode; sbc-bench shows 1479 MHz)\n"
    "peak 22.88 GMAC/s: 4 cores x 1.43 GHz x 4 fp32 lanes x 1 FMLA per "
    "cycle (Cortex-A57 software optimisation guide); the data sheet's 472 "
    "GFLOPS is the GPU in fp16, which edgefit's CPU kernels do not use\n"
    "peak fp16 22.88 GMAC/s: widened to fp32 (ARMv8.0)\n"
    "peak int8 45.76 GMAC/s: 16-bit SMLAL/MLA, 8 lanes: 4 x 1.43 GHz x 8\n"
    "l1d 32 KiB per core, l2 2 MiB shared, no l3: lscpu in " SBC "4rLX.txt "
    "(128 KiB of L1d over 4 cores, 2 MiB of L2)\n"
    "bandwidth 7.553 GB/s all cores: no all-core STREAM run found; the "
    "one-core figure, a lower bound (the data sheet's 25.6 GB/s is the "
    "LPDDR4 bus peak, no core reaches it)\n"
    "bandwidth 1 core 7.553 GB/s: 2 x 3776.5 MB/s tinymembench C copy, " SBC
    "4rLX.txt (Jetson Nano developer kit, 2023-03-25)\n"
    "idle power unknown; power 10 W: data sheet MAXN power mode (all four "
    "cores at full clock)\n"
    "memory 4096 MB: data sheet, 4 GB LPDDR4",
    /* jetson-orin-nano */
    "cores 6: NVIDIA Jetson Orin Nano 8GB data sheet, 6 x Cortex-A78AE\n"
    "clock 1.5 GHz: data sheet (sbc-bench shows 1510 MHz; the 2024 "
    "'Super' mode runs 1.7 GHz)\n"
    "peak 72 GMAC/s: 6 cores x 1.5 GHz x 4 fp32 lanes x 2 FMLA per cycle "
    "(Cortex-A78 software optimisation guide: two ASIMD pipes)\n"
    "peak fp16 144 GMAC/s: ARMv8.2 FP16 arithmetic: 6 x 1.5 GHz x 16\n"
    "peak int8 288 GMAC/s: ARMv8.2 SDOT, throughput 2: 6 x 1.5 GHz x 32\n"
    "l1d 64 KiB per core, l2 1.5 MiB (256 KiB per core), l3 2 MiB: lscpu "
    "in " SBC "4vy7.txt (384 KiB of L1d over 6 cores)\n"
    "bandwidth 13.4526 GB/s all cores: no all-core STREAM run found; the "
    "one-core figure, a lower bound\n"
    "bandwidth 1 core 13.4526 GB/s: 2 x 6726.3 MB/s tinymembench C copy, "
    SBC "4vy7.txt (Orin Nano developer kit, 2023-05-09)\n"
    "idle power unknown; power 15 W: the module's upper power mode (7 W "
    "and 15 W; the later 'Super' mode is 25 W)\n"
    "memory 8192 MB: data sheet, 8 GB LPDDR5",
    /* desktop */
    "cores 8: a nominal 8-core AVX2 desktop CPU (a class figure, not one "
    "product)\n"
    "clock 3.5 GHz: the class's all-core clock\n"
    "peak 448 GMAC/s: 8 cores x 3.5 GHz x 8 fp32 lanes x 2 256-bit FMA "
    "units\n"
    "peak fp16 448 GMAC/s: F16C widens to fp32\n"
    "peak int8 896 GMAC/s: VPMADDUBSW + VPMADDWD, 32 MACs per cycle per "
    "core\n"
    "l1d, l2 and l3 unknown: they vary across the class\n"
    "bandwidth 50 GB/s all cores: dual-channel DDR4-3200 is 51.2 GB/s "
    "nominal; the original tooling used 50 GB/s\n"
    "bandwidth 1 core unknown: varies across the class\n"
    "idle power unknown; power 65 W: the TDP class of mainstream desktop "
    "processors\n"
    "memory 16384 MB: a typical desktop configuration",
};
#undef SBC
#undef A53_NOTE

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
    /* the vector width of the path the peak was measured on */
    const char *path = cal->peak.path ? cal->peak.path : "";
    out->simd_lanes = strcmp(path, "avx512") == 0 ? 16
                      : strcmp(path, "avx2") == 0 ? 8
                                                  : 0;
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
