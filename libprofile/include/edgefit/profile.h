/*
 * libprofile: measure what a model costs on this machine and say what bounds
 * it on a device.
 *
 * Timing (a monotonic clock, warm-up runs, repeats, robust statistics), host
 * calibration (peak GMAC/s from an FMA loop, memory bandwidth from a
 * STREAM-style triad), the hardware summaries of the original tooling
 * (bandwidth and compute utilisation, roofline knee and bound regime, the
 * precision trade-off table), a device catalogue with roofline predictions,
 * and the measured operator profile of a streaming model.
 *
 *     struct prof_time_opts opts;
 *     struct prof_stats stats;
 *     prof_time_opts_init(&opts);
 *     opts.repeats = 20;
 *     if (prof_time(run_once, &ctx, &opts, &stats) == PROF_OK) {
 *         printf("median %.3f ms (p90 %.3f)\n", stats.median_ms,
 *                stats.p90_ms);
 *     }
 *
 * Units: latency in ms, GB/s = 1e9 B/s, GMAC/s = 1e9 MAC/s (1 MAC = 2 FLOP),
 * KB = 1024 bytes, MB = 1024^2 bytes, MB/s = 1024^2 B/s.
 */
#ifndef EDGEFIT_PROFILE_H
#define EDGEFIT_PROFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "edgefit/memest.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32) && defined(PROF_BUILDING)
#define PROF_API __declspec(dllexport)
#elif defined(PROF_BUILDING) && defined(__GNUC__)
#define PROF_API __attribute__((visibility("default")))
#else
#define PROF_API
#endif

/* ---- Status codes ------------------------------------------------------ */

enum prof_status {
    PROF_OK = 0,
    PROF_E_INVALID,  /* a NULL pointer, an empty list, an unknown name */
    PROF_E_RANGE,    /* a value outside its domain (negative, NaN, zero) */
    PROF_E_NOMEM,    /* an allocation failed */
    PROF_E_OVERFLOW, /* a size that does not fit in 64 bits or size_t */
    PROF_E_PARSE,    /* a device description that cannot be read (diag) */
    PROF_E_IO,       /* a data file that cannot be opened or read */
    PROF_E_CALLBACK, /* a timed callback reported a failure */
    PROF_E_KERNEL,   /* a libkernels call failed */
    PROF_E_MEMEST,   /* a libmemest call failed */
    PROF_E_UNSUPPORTED, /* a model or layer this function does not handle
                           (the diag names it) */
};

/* Static text for a status code; "unknown status" for anything else. */
PROF_API const char *prof_strerror(int status);

/* The bytes asked for by the last allocation of this library that failed
 * on the calling thread (0 when none has failed), for the message of a
 * PROF_E_NOMEM from a function that has no diagnostic to name the size in
 * ("out of memory: <what> (<n> bytes)"). It is read, never cleared: after
 * PROF_E_NOMEM it is the allocation that failed; otherwise it may be an older
 * failure the library did without. */
PROF_API size_t prof_nomem_bytes(void);
/* When that allocation failed (CLOCK_MONOTONIC, in ns; 0 when none has):
 * of the records of several libraries, the newest is the failure being
 * reported, the others older ones that were done without. */
PROF_API unsigned long long prof_nomem_when(void);

/* The library version, e.g. "0.1.0". Static text. */
PROF_API const char *prof_version(void);

/* Where a description failed: 1-based column (0 when unknown), the field
 * and a message a person understands. */
struct prof_diag {
    int column;
    char message[512]; /* room for the trainer's list of the kinds it trains */
};

/* ---- Timing ------------------------------------------------------------ */

/* Nanoseconds of CLOCK_MONOTONIC (arbitrary origin, never goes back). */
PROF_API uint64_t prof_now_ns(void);

/* What prof_time() reads: the monotonic wall clock, or the calling
 * thread's CPU time (CLOCK_THREAD_CPUTIME_ID), to which other work on a
 * shared machine does not add; it counts none of the worker threads' time,
 * and the caller's sleep while it waits for them is not counted either.
 * PROF_CLOCK_UNQUEUED is the wall clock less the time the calling thread
 * was ready to run but waited for a core (the run-queue delay Linux keeps
 * in /proc/thread-self/schedstat): what a user of an idle machine sees,
 * the caller's waits for its worker threads included, without its own
 * waits for a core other work holds. PROF_E_IO where the kernel keeps no
 * schedstat. */
enum prof_clock { PROF_CLOCK_WALL, PROF_CLOCK_THREAD_CPU, PROF_CLOCK_UNQUEUED };

/*
 * How to time a callback. The original collect_metrics() timed
 * benchmark_repeats forward passes and multiplied the latency by
 * latency_multiplier (a crude model of a slower device); both are kept.
 */
struct prof_time_opts {
    unsigned warmup;           /* untimed runs first (default 2) */
    unsigned repeats;          /* benchmark_repeats: timed samples (default
                                  5) */
    double latency_multiplier; /* > 0, scales every sample (default 1.0) */
    double min_sample_ms;      /* >= 0 (default 0: every call timed alone).
                                  When > 0, each sample times as many
                                  back-to-back calls as reach this duration
                                  (found after the warm-up, doubling from 1)
                                  and reports the time per call, so work of
                                  a few hundred nanoseconds is not lost in
                                  the clock's own cost. */
    enum prof_clock clock;     /* default PROF_CLOCK_WALL; min_sample_ms is
                                  read on the same clock */
};

/* Fill the defaults above. */
PROF_API void prof_time_opts_init(struct prof_time_opts *opts);

/*
 * Statistics of a set of samples, in ms, after the latency multiplier.
 * Quantiles interpolate linearly between order statistics (rank
 * q * (count - 1), numpy's default): median = q 0.5, p90 = q 0.9.
 * stddev_ms is the sample standard deviation (n - 1; 0 for one sample),
 * mad_ms the median absolute deviation from the median (unscaled), a spread
 * that a few slow outliers on a busy machine do not inflate.
 */
struct prof_stats {
    size_t count;            /* samples */
    uint64_t calls_per_sample; /* 1 unless min_sample_ms grouped calls */
    double min_ms;
    double median_ms;
    double p90_ms;
    double max_ms;
    double mean_ms;
    double stddev_ms;
    double mad_ms;
    /* prof_time() only (prof_stats_compute leaves them NaN), after the
     * multiplier: the very first call, timed alone (a cold cache, lazy
     * allocation, a first page fault: TFLite's benchmark_model "first
     * inference"), and the mean of the warm-up calls, the first included
     * (its "warmup (avg)"; NaN without warm-up). */
    double first_ms;
    double warmup_mean_ms;
};

/*
 * Statistics of n >= 1 durations in ms (any order; not modified), each
 * multiplied by multiplier (> 0). PROF_E_INVALID for NULL pointers or n 0,
 * PROF_E_RANGE for a negative or non-finite sample or multiplier,
 * PROF_E_NOMEM. This is the arithmetic prof_time() uses, apart from the
 * clock.
 */
PROF_API int prof_stats_compute(const double *samples_ms, size_t n,
                                double multiplier, struct prof_stats *out);

/* A piece of work to time; returns 0 on success, anything else stops the
 * measurement. */
typedef int (*prof_work_fn)(void *ctx);

/*
 * Run fn(ctx) opts->warmup times untimed, then take opts->repeats samples
 * on opts->clock (one call each, or calls_per_sample calls when
 * min_sample_ms > 0, see above), and summarise the time per call (see
 * prof_stats_compute). opts may be NULL for the defaults. PROF_E_INVALID
 * for a NULL fn or out, PROF_E_RANGE for repeats 0, a bad multiplier, a
 * negative or non-finite min_sample_ms or an unknown clock, PROF_E_IO
 * when the clock cannot be read (errno says why),
 * PROF_E_CALLBACK when fn returns non-zero, PROF_E_NOMEM. If samples_ms is
 * not NULL it receives the repeats raw samples, ms per call (before the
 * multiplier).
 */
PROF_API int prof_time(prof_work_fn fn, void *ctx,
                       const struct prof_time_opts *opts,
                       struct prof_stats *out, double *samples_ms);

/* ---- Host calibration -------------------------------------------------- */

/* Peak multiply-accumulate rate of one thread. */
struct prof_peak {
    double gmacs;        /* median over the runs; GFLOP/s = 2 * gmacs
                            (prof_calibrate keeps the best, gmacs_max) */
    double gmacs_min;    /* spread of the runs */
    double gmacs_max;
    const char *path;    /* "avx512", "avx2" or "c" (static text) */
    unsigned runs;
};

/*
 * Peak fp32 GMAC/s of one thread: a loop of independent FMA chains (enough
 * accumulators to hide the FMA latency on two pipes) with the widest
 * instruction set allowed by cpu_flags (a kern_cpu_flags() value; pass
 * kern_cpu_flags() for the best path), each run long enough (>= ~20 ms) for
 * the clock. Median of runs (>= 1). PROF_E_INVALID for NULL, PROF_E_RANGE
 * for runs 0.
 */
PROF_API int prof_measure_peak(unsigned cpu_flags, unsigned runs,
                               struct prof_peak *out);

/* Sustainable memory bandwidth of one thread, STREAM's triad. */
struct prof_triad {
    double gbps;            /* median over the runs, 1e9 B/s
                               (prof_calibrate keeps the best, gbps_max) */
    double gbps_min;
    double gbps_max;
    uint64_t array_bytes;   /* bytes of one of the three arrays */
    uint64_t total_bytes;   /* 3 * array_bytes, counted per pass */
    uint64_t elements;      /* doubles per array */
    unsigned runs;
};

/*
 * The default triad footprint (all three arrays): 2 x the last-level cache
 * (so no cache holds a useful part of the arrays), at least 64 MiB, at most
 * a quarter of the memory available now, rounded down to whole cache lines
 * per array (struct prof_calib_opts.triad_bytes overrides it). Returns
 * the bytes.
 */
PROF_API uint64_t prof_triad_default_bytes(void);

/*
 * Physical memory of this machine in bytes (sysconf); 0 when unknown.
 * Cheap: no calibration runs.
 */
PROF_API uint64_t prof_host_memory_bytes(void);

/*
 * Last-level cache size in bytes (sysconf, then /sys); 0 when unknown.
 * level 1, 2 or 3.
 */
PROF_API uint64_t prof_cache_bytes(int level);

/*
 * a[i] = b[i] + s * c[i] over three arrays of doubles whose sizes add up to
 * total_bytes (0: prof_triad_default_bytes()), timed runs (>= 1) times
 * after one untimed pass that faults the pages in; GB/s counts
 * 3 x 8 bytes per element as STREAM does (the write-allocate read is not
 * counted). PROF_E_RANGE for runs 0 or fewer than 4096 elements per array,
 * PROF_E_NOMEM, PROF_E_OVERFLOW.
 */
PROF_API int prof_measure_triad(uint64_t total_bytes, unsigned runs,
                                struct prof_triad *out);

/*
 * The triad over arrays small enough to stay in a cache: footprint_bytes
 * (all three arrays together, >= 3 x 64 doubles) rounded down to whole
 * 64-byte lines per array, after one untimed pass that brings them in.
 * Each of the runs (>= 1) times as many back-to-back passes as last about
 * a millisecond (found before the timed runs), so even an L1-sized pass of
 * a few hundred nanoseconds is measured well above the clock's cost. GB/s
 * counts 3 x 8 bytes per element and pass, as prof_measure_triad().
 * PROF_E_INVALID for NULL, PROF_E_RANGE for runs 0 or a footprint under
 * 1536 bytes, PROF_E_OVERFLOW, PROF_E_NOMEM.
 */
PROF_API int prof_measure_cache_triad(uint64_t footprint_bytes,
                                      unsigned runs, struct prof_triad *out);

/* One level of the memory hierarchy as the triad saw it. */
struct prof_mem_level {
    unsigned level;          /* 1, 2, 3 for a cache; 0 for main memory */
    uint64_t capacity_bytes; /* the cache's size (0 for main memory:
                                unbounded) */
    struct prof_triad triad; /* triad.gbps is the level's bandwidth */
};

enum { PROF_MEM_LEVELS_MAX = 4 };

/* Both measurements of the host. */
struct prof_calibration {
    /* The fp32 roof: the best of the FMA loop (fma) and of the fp32
     * kernel (kern_sgemm on a 256 x 256 x 256 product, one thread), so the
     * roof is never below what a kernel of this library achieves. path
     * names the winner: "avx512"/"avx2"/"c" for the loop, "sgemm" for the
     * kernel. */
    struct prof_peak peak;
    struct prof_peak fma;      /* the FMA loop alone */
    struct prof_peak sgemm;    /* kern_sgemm 256^3 alone */
    /* 16-bit storage (fp16, bf16): the executor widens the operands to
     * fp32 and calls kern_sgemm; the same product with both operands
     * widened from fp16 first, best of the runs, GMAC/s. */
    struct prof_peak f16;
    /* int8: kern_q8_gemm on a 256 x 256 x 256 product, 1e9 MAC/s. */
    struct prof_peak int8;
    struct prof_triad triad;  /* main memory (the DRAM roofline) */
    double knee_mac_per_byte; /* peak.gmacs / triad.gbps */
    uint64_t l1_bytes, l2_bytes, l3_bytes; /* 0 when unknown */
    uint64_t memory_mb;       /* physical memory, MB */
    /* The bandwidth of each level, smallest first: one entry per cache
     * whose size is known (triad footprint half the cache; for L3 at most
     * 8 x L2, see prof_cache_footprint_bytes()), then main memory (a copy
     * of triad, level 0). level_count >= 1. */
    unsigned level_count;
    struct prof_mem_level levels[PROF_MEM_LEVELS_MAX];
    /* Trials per figure; each figure is the best of its trials (a slower
     * trial measures the neighbours, not the hardware) and triad.gbps_min
     * / gbps_max give the spread. */
    unsigned trials;
    /* Levels re-measured because a larger level was faster than a smaller
     * one, and levels that stayed out of order after the retries (their
     * bandwidth is then raised to the next larger level's, and
     * order_note says so). */
    unsigned order_retries;
    unsigned order_fixed;
    char order_note[160];
};

/* How to calibrate. */
struct prof_calib_opts {
    uint64_t triad_bytes; /* main-memory triad footprint, all three arrays
                             (0: prof_triad_default_bytes()) */
    unsigned trials;      /* trials per level and per peak, best kept
                             (0: 5) */
};

/* Defaults: triad_bytes 0, trials 5. NULL is ignored. */
PROF_API void prof_calib_opts_init(struct prof_calib_opts *opts);

/*
 * Measure the host now (nothing cached): the peaks of every precision, one
 * cache triad per known cache level and the main-memory triad, each the
 * best of opts->trials trials (opts NULL: defaults). The levels are
 * checked for order (a smaller level at least as fast as a larger one);
 * a level out of order is measured again up to 3 times. PROF_E_INVALID
 * for NULL out, PROF_E_RANGE for a triad footprint that is too small,
 * else as the measurements.
 */
PROF_API int prof_calibrate(const struct prof_calib_opts *opts,
                            struct prof_calibration *out);

/*
 * Make cal the host's calibration for the rest of the process: later
 * prof_host_calibration() calls (and "host" devices) return it instead of
 * measuring. For an application that calibrated with its own options or
 * read a stored calibration. PROF_E_INVALID for NULL, PROF_E_RANGE for a
 * calibration with a non-positive or non-finite peak or bandwidth.
 */
PROF_API int prof_host_calibration_set(const struct prof_calibration *cal);

/*
 * The triad footprint the calibration uses to measure cache `level` (1, 2
 * or 3) of sizes l1, l2, l3 bytes: half the cache, so the three arrays and
 * whatever else the process touches fit; for L3 at most 8 x l2 (a large
 * shared L3 would otherwise cost as much time as main memory, and the
 * layers that live between L2 and L3 are a few to tens of MiB). 0 when the
 * level's size is unknown (0) or the footprint would not exceed the level
 * below (no distinct level to measure).
 */
PROF_API uint64_t prof_cache_footprint_bytes(int level, uint64_t l1,
                                             uint64_t l2, uint64_t l3);

/*
 * The host's calibration: the one installed with
 * prof_host_calibration_set(), else prof_calibrate() with the defaults,
 * computed once per process (later calls copy the result; thread-safe).
 * PROF_E_INVALID for NULL; a failure is returned again on later calls.
 */
PROF_API int prof_host_calibration(struct prof_calibration *out);

/* ---- Hardware summary (edge_opt's layer-wise analysis and summary) --- */

/* What one layer costs: the three columns summarize_hardware summed. */
struct prof_layer_cost {
    uint64_t parameter_bytes;
    uint64_t activation_bytes;
    uint64_t macs;
};

enum prof_bound {
    PROF_BOUND_MEMORY = 0, /* intensity below the knee */
    PROF_BOUND_COMPUTE,    /* intensity at or above the knee */
};

/* "memory" or "compute". Static text. */
PROF_API const char *prof_bound_name(enum prof_bound bound);

/*
 * summarize_hardware() of the original, then the roofline:
 *   estimated_total_bytes = sum(parameter_bytes) + sum(activation_bytes)
 *   estimated_total_macs  = sum(macs)
 *   latency_s             = max(latency_ms / 1000, 1e-9)
 *   achieved_bandwidth_gbps = total_bytes / latency_s / 1e9
 *   bandwidth_utilization = min(1, achieved / max(configured, 1e-9));
 *                           above_roof when the ratio exceeded 1
 *   achieved_gmacs        = total_macs / latency_s / 1e9
 *   arithmetic_intensity  = total_macs / total_bytes (MAC/byte; 0 when
 *                           both are 0, +inf when only bytes are 0)
 *   roofline_knee         = peak_gmacs / max(configured, 1e-9) (MAC/byte)
 *   bound                 = memory if intensity < knee, else compute
 *   compute_utilization   = see prof_compute_utilization(); above_peak
 *                           when achieved / peak exceeded 1
 *   reading               = prof_utilization_reading(bandwidth_utilization)
 */
struct prof_hw_summary {
    double estimated_total_bytes;
    double estimated_total_macs;
    double latency_ms;
    double achieved_bandwidth_gbps;
    double configured_memory_bandwidth_gbps;
    double bandwidth_utilization;
    double achieved_gmacs;
    double peak_gmacs;
    double arithmetic_intensity;
    double roofline_knee;
    enum prof_bound bound;
    double compute_utilization;
    const char *reading; /* static text */
    bool above_roof;     /* achieved bandwidth above the configured one */
    bool above_peak;     /* achieved GMAC/s above peak_gmacs: the peak
                            is not the machine's (compute_utilization is
                            still at most 1) */
};

/*
 * Summarise n >= 1 layer costs measured at latency_ms on a memory of
 * bandwidth_gbps and a peak of peak_gmacs. edge_opt's clamps apply to
 * latency and bandwidth (0 is allowed); negative or non-finite values are
 * PROF_E_RANGE, as is peak_gmacs <= 0. PROF_E_INVALID for NULL or n 0,
 * PROF_E_OVERFLOW when a sum does not fit in 64 bits.
 */
PROF_API int prof_summarize_hardware(const struct prof_layer_cost *layers,
                                     size_t n, double latency_ms,
                                     double bandwidth_gbps, double peak_gmacs,
                                     struct prof_hw_summary *out);

/*
 * The same for a libmemest model at a batch size and precision (its
 * per-layer estimates, input row included, as the original's table).
 * PROF_E_MEMEST when the estimate fails, else as above.
 */
PROF_API int prof_summarize_model(const memest_model *model, uint64_t batch,
                                  enum memest_precision precision,
                                  double latency_ms, double bandwidth_gbps,
                                  double peak_gmacs,
                                  struct prof_hw_summary *out);

/*
 * The original's reading of bandwidth utilisation: above 0.8
 * "memory-bound", below 0.2 "compute-bound or inefficient", otherwise
 * "balanced" (NaN reads as "balanced"). Static text.
 */
PROF_API const char *prof_utilization_reading(double bandwidth_utilization);

/*
 * compute_utilization of the original streaming profile, defined here as the fraction of the
 * device's peak compute the work achieved:
 *   clamp((macs / max(latency_ms / 1000, 1e-9) / 1e9) / peak_gmacs, 0, 1)
 * (the same latency clamp as summarize_hardware). PROF_E_RANGE for
 * negative or non-finite inputs or peak_gmacs <= 0.
 */
PROF_API int prof_compute_utilization(double macs, double latency_ms,
                                      double peak_gmacs, double *out);

/* ---- Precision trade-off table (edge_opt's hardware module) ----------- */

/* One sweep result, the columns precision_tradeoff_table() read. */
struct prof_sweep_row {
    const char *precision; /* group key, compared as a string */
    double accuracy;
    double latency_ms;
    double memory_mb;
    double energy_proxy_j;
    bool accepted;
};

/* One precision: means over its rows and the fraction accepted. */
struct prof_tradeoff_row {
    const char *precision; /* points into the input rows */
    size_t count;
    double accuracy_mean;
    double latency_ms_mean;
    double memory_mb_mean;
    double energy_proxy_j_mean;
    double accepted_ratio;
};

/*
 * Group n rows by precision and average each group; the groups are sorted
 * by latency_ms_mean ascending, ties by precision name (strcmp), which is
 * what grouping (sorted keys) then a stable sort gives. out needs room for
 * n groups at most (cap); *out_n receives the number of groups. Means are
 * sums in input order divided by the count. PROF_E_INVALID for NULL
 * pointers, n 0 or a NULL/empty precision, PROF_E_RANGE for a non-finite
 * value or cap too small (then *out_n holds the groups needed),
 * PROF_E_NOMEM.
 */
PROF_API int prof_precision_tradeoff(const struct prof_sweep_row *rows,
                                     size_t n, struct prof_tradeoff_row *out,
                                     size_t cap, size_t *out_n);

/* ---- Devices and roofline prediction ----------------------------------- */

#define PROF_DEVICE_NAME_MAX 64
/* The most cores a device may count. */
#define PROF_DEVICE_CORES_MAX 4096

/* A cache with its own bandwidth, for the cache-aware roofline. */
struct prof_cache_level {
    unsigned level;          /* 1, 2 or 3 */
    uint64_t capacity_bytes; /* > 0 */
    double bandwidth_gbps;   /* > 0, 1e9 B/s */
};

enum { PROF_CACHE_LEVELS_MAX = 3 };

struct prof_device {
    char name[PROF_DEVICE_NAME_MAX];
    double bandwidth_gbps; /* main memory bandwidth, 1e9 B/s, > 0 */
    double peak_gmacs;     /* fp32 peak, 1e9 MAC/s, > 0 */
    double power_watts;    /* for the energy proxy, >= 0 (0: unknown) */
    double memory_mb;      /* >= 0 (0: unknown) */
    /* Caches with a known bandwidth, smallest first (capacities strictly
     * increasing). cache_count 0 (every catalogue board, every device
     * given field by field) is the plain roofline on bandwidth_gbps. */
    unsigned cache_count;
    struct prof_cache_level cache[PROF_CACHE_LEVELS_MAX];
    /* Peaks of the other precisions, 1e9 MAC/s (0: unknown, the fp32 peak
     * is used): 16-bit storage (fp16, bf16) and int8. */
    double peak_gmacs_f16;
    double peak_gmacs_int8;
    /* The cores the peaks add up (0 is read as 1): every peak above is the
     * whole device's, cores of them working together. A run on T threads
     * is predicted at min(T, cores) / cores of it (prof_device_peak_threads),
     * so a one-thread run on a four-core board at a quarter of its peak. */
    unsigned cores;
    /* Catalogue figures for the device model (0: unknown). bandwidth_gbps
     * above is what all cores sustain together; bandwidth_1core_gbps what
     * one core sustains alone (a one-thread STREAM triad). power_watts
     * above is the draw with every core loaded; idle_watts at rest. Cache
     * sizes are per core for L1d, per cluster for L2 and L3. */
    double clock_ghz;
    double bandwidth_1core_gbps;
    double idle_watts;
    uint64_t l1d_bytes;
    uint64_t l2_bytes;
    uint64_t l3_bytes;
    /* The fp32 lanes of the vectors edgefit's convolutions fill with
     * output channels on this device (16 with AVX-512, 8 with AVX2; 0:
     * unknown, as on every catalogue board). The device model prices a
     * convolution of C output channels at C / (lanes ceil(C / lanes)) of
     * its class's efficiency: 8 channels fill half of a 16-lane vector. */
    unsigned simd_lanes;
};

/*
 * The peak of dev for work stored in precision p: peak_gmacs_f16 for fp16
 * and bf16, peak_gmacs_int8 for int8, when known (> 0); otherwise, and for
 * fp32 and fp64, peak_gmacs. NULL dev: 0.
 */
PROF_API double prof_device_peak(const struct prof_device *dev,
                                 enum memest_precision p);

/*
 * Whether dev computes in fp16 faster than in fp32: its peak_gmacs_f16
 * above its peak_gmacs (ARMv8.2 FP16 on the catalogue's Cortex-A76 and
 * A78). Cores without fp16 arithmetic (A53, A57, A72, x86 with F16C only)
 * have peak_gmacs_f16 equal to peak_gmacs or unknown: they widen 16-bit
 * storage to fp32 and compute at the fp32 rate. NULL: false.
 */
PROF_API bool prof_device_has_f16(const struct prof_device *dev);

/* The cores dev's peaks count: dev->cores, or 1 when it is 0. NULL: 1. */
PROF_API unsigned prof_device_cores(const struct prof_device *dev);

/*
 * The peak of dev for precision p on `threads` threads (0 is read as 1):
 * prof_device_peak(dev, p) * min(threads, cores) / cores. More threads
 * than cores gain nothing. NULL dev: 0.
 */
PROF_API double prof_device_peak_threads(const struct prof_device *dev,
                                         enum memest_precision p,
                                         unsigned threads);

/* Number of built-in devices (rpi4, jetson-nano, desktop). */
PROF_API size_t prof_device_catalog_count(void);
/* The i-th built-in device, NULL past the end. Static storage. */
PROF_API const struct prof_device *prof_device_catalog(size_t i);
/* Where the i-th built-in device's figures come from, one line of static
 * text per figure separated by '\n' (no final newline); NULL past the
 * end. */
PROF_API const char *prof_device_catalog_source(size_t i);

/*
 * The host as a device: main memory bandwidth and peak from cal (NULL:
 * from prof_host_calibration()), the peaks (calibrated on one thread)
 * times the online cores, which cores counts, one cache level per calibrated cache
 * (cal->levels), memory from the OS, power_watts 0 (unknown: nothing on a
 * general-purpose machine measures it; callers may set it). Clear
 * cache_count for the plain DRAM roofline of the host.
 * PROF_E_RANGE when cal holds a non-positive or non-finite figure.
 */
PROF_API int prof_device_host(const struct prof_calibration *cal,
                              struct prof_device *out);

/* Check a device's fields (PROF_E_RANGE with a message in diag, which may
 * be NULL): a non-empty name, finite bandwidth and peak > 0, finite power
 * and memory >= 0, cores <= PROF_DEVICE_CORES_MAX, at most
 * PROF_CACHE_LEVELS_MAX caches with capacities
 * > 0 strictly increasing and finite bandwidths > 0. */
PROF_API int prof_device_validate(const struct prof_device *dev,
                                  struct prof_diag *diag);

/*
 * A device from its fields, the columns of the catalogue (no caches): name
 * (copied; at most PROF_DEVICE_NAME_MAX - 1 bytes), bandwidth_gbps and
 * peak_gmacs (> 0), power_watts and memory_mb (>= 0, 0 for unknown). On
 * success *out holds the validated device; on error *out is untouched and
 * diag (may be NULL) names the field. PROF_E_INVALID for NULL name or
 * out, PROF_E_RANGE for an empty or long name or a value out of domain.
 */
PROF_API int prof_device_make(const char *name, double bandwidth_gbps,
                              double peak_gmacs, double power_watts,
                              double memory_mb, struct prof_device *out,
                              struct prof_diag *diag);

/*
 * A device given field by field:
 *   name=board,bandwidth_gbps=12.8,peak_gmacs=40,power_watts=5,memory_mb=2048
 * Keys in any order, each at most once; name, bandwidth_gbps and peak_gmacs
 * are required, power_watts and memory_mb default to 0 (unknown), and
 * peak_gmacs_f16 and peak_gmacs_int8 to 0 (the fp32 peak), cores (a
 * whole number, 1 to PROF_DEVICE_CORES_MAX) to 1. Spaces
 * around keys and values are ignored. PROF_E_PARSE with diag (column and
 * message) for an unknown or repeated key, a missing '=', a bad number or a
 * missing required key; PROF_E_RANGE for a value outside its domain.
 */
PROF_API int prof_device_parse(const char *spec, struct prof_device *out,
                               struct prof_diag *diag);

/*
 * A device by name: a catalogue name, "host" (calibrated, see
 * prof_device_host) or a key=value description as above.
 * PROF_E_INVALID (with diag) for an unknown name.
 */
PROF_API int prof_device_lookup(const char *name, struct prof_device *out,
                                struct prof_diag *diag);

/*
 * The bandwidth roof for work that moved `bytes` at achieved_gbps on dev:
 * the smallest cache of dev that holds the bytes (main memory when none
 * does), as prof_predict() uses; when the achieved rate is above that roof
 * the data were served by a faster level, and the roof is the smallest
 * (slowest) faster level whose bandwidth reaches the rate, or the fastest
 * level when none does. *level: 1-3 a cache, 0 main memory; *gbps its
 * bandwidth. PROF_E_INVALID for NULL, PROF_E_RANGE for an invalid device.
 */
PROF_API int prof_bandwidth_roof(const struct prof_device *dev,
                                 uint64_t bytes, double achieved_gbps,
                                 unsigned *level, double *gbps);

/* Roofline prediction of one piece of work on a device. */
struct prof_prediction {
    double compute_ms;     /* macs / peak_gmacs */
    double memory_ms;      /* bytes / bandwidth_gbps */
    double predicted_ms;   /* max of the two */
    enum prof_bound bound; /* which term is larger (memory on a tie) */
    double energy_proxy_j; /* power_watts * predicted_ms / 1000; NaN when
                              the device's power is unknown (0) */
    unsigned memory_level; /* the level whose bandwidth was used: 1-3 a
                              cache, 0 main memory */
    double bandwidth_gbps; /* that bandwidth */
    unsigned threads;      /* the threads the work was predicted on */
    double peak_gmacs;     /* the compute roof used: dev->peak_gmacs *
                              min(threads, cores) / cores */
};

/*
 * Predict macs and bytes on one thread of dev: compute_ms = macs / the
 * peak of one of its cores (dev->peak_gmacs / cores), and memory_ms =
 * bytes / the bandwidth of the smallest cache in dev->cache whose capacity
 * holds all the bytes (the working set), or of main memory when none does
 * or the device has no caches. PROF_E_INVALID for NULL, PROF_E_RANGE for
 * an invalid device. */
PROF_API int prof_predict(const struct prof_device *dev, uint64_t macs,
                          uint64_t bytes, struct prof_prediction *out);

/* The same on `threads` threads (0 is read as 1): the compute roof is
 * dev->peak_gmacs * min(threads, cores) / cores; the bandwidth is the
 * device's whatever the threads (the catalogue's figures are what the
 * memory system sustains, and the host's one thread's triad). */
PROF_API int prof_predict_threads(const struct prof_device *dev,
                                  uint64_t macs, uint64_t bytes,
                                  unsigned threads,
                                  struct prof_prediction *out);

/* The work of one layer or operator. */
struct prof_work {
    uint64_t macs;
    uint64_t bytes;
    unsigned threads; /* it runs on (0 is read as 1) */
};

/* A layer's prediction and, when measured, its error. */
struct prof_layer_prediction {
    struct prof_prediction pred;
    double measured_ms;    /* NaN when not measured */
    /* (predicted - measured) / measured; NaN (undefined) when the layer
     * was not measured or either side is zero */
    double relative_error;
};

/* The whole list: sums of the per-layer terms. */
struct prof_prediction_total {
    double predicted_ms;    /* over every layer */
    double measured_ms;     /* over the measured layers; NaN if none */
    /* (predicted - measured) / measured over the sums of the measured
     * layers only; NaN if none was measured or the sum is zero */
    double relative_error;
    double energy_proxy_j;  /* NaN when the power is unknown */
    double mean_abs_relative_error; /* mean of the defined |per-layer
                                       error|s, or NaN */
    size_t compared;        /* layers whose error is defined */
};

/*
 * Predict n >= 1 layers on dev into out[0..n-1] and the total. measured_ms
 * may be NULL; otherwise it holds n measured latencies (finite, >= 0, or
 * NaN for a layer not measured), compared with the predictions: a
 * positive error means the prediction is too slow, a negative one too
 * fast. A layer whose prediction or measurement is zero (no work, or
 * below the clock) has no error, and neither has one not measured; the
 * mean |error| is over the others. PROF_E_INVALID for NULL pointers or
 * n 0, PROF_E_RANGE for a bad device or a negative or infinite
 * measurement.
 */
PROF_API int prof_predict_layers(const struct prof_device *dev,
                                 const struct prof_work *layers, size_t n,
                                 const double *measured_ms,
                                 struct prof_layer_prediction *out,
                                 struct prof_prediction_total *total);

/* ---- Data -------------------------------------------------------------- */

/*
 * IDX files (the format of MNIST and Fashion-MNIST), gzip-compressed or
 * plain: a magic number (two zero bytes, a type byte 0x08 for unsigned
 * bytes, the number of dimensions), one big-endian 32-bit size per
 * dimension, then the data. Images are IDX3 (count x rows x cols), labels
 * IDX1 (count).
 *
 * The readers never trust the header's sizes: a plain file must be exactly
 * as long as its header says (checked against fstat before anything is
 * allocated), and a gzip stream (or a pipe) is read into a buffer that
 * grows with what the stream really holds, so a 17-byte file claiming 2^31 images is
 * refused with the reason, not with an allocation of 1.6 TB. Status codes:
 * PROF_E_IO when the file cannot be opened or read (diag carries the
 * system's reason), PROF_E_PARSE for a file that is not what it claims
 * (bad magic number, truncated, longer than its header, a corrupt gzip
 * stream), PROF_E_RANGE for a zero dimension, PROF_E_OVERFLOW for sizes
 * that do not fit, PROF_E_NOMEM. diag (may be NULL) names the file and
 * what is wrong.
 */

/* Images of an IDX file (gzip or plain): count x rows x cols bytes. */
struct prof_idx_images {
    uint8_t *pixels; /* release with prof_idx_images_finish() */
    uint64_t count, rows, cols;
};

/*
 * Read at most max_count (0: all) images of an IDX3 unsigned-byte file
 * (e.g. train-images-idx3-ubyte.gz). When every image is read, the file
 * must end there; a plain file must always match its header's size. On
 * error *out is zeroed.
 */
PROF_API int prof_idx_load_images(const char *path, uint64_t max_count,
                                  struct prof_idx_images *out,
                                  struct prof_diag *diag);
PROF_API void prof_idx_images_finish(struct prof_idx_images *images);

/* Labels of an IDX1 unsigned-byte file (gzip or plain). */
struct prof_idx_labels {
    uint8_t *labels; /* release with prof_idx_labels_finish() */
    uint64_t count;
};

/* Read at most max_count (0: all) labels, with the checks of
 * prof_idx_load_images(). */
PROF_API int prof_idx_load_labels(const char *path, uint64_t max_count,
                                  struct prof_idx_labels *out,
                                  struct prof_diag *diag);
PROF_API void prof_idx_labels_finish(struct prof_idx_labels *labels);

/* The most axes of one sample of a data set (the batch not counted). */
#define PROF_DATASET_MAX_RANK 8

/*
 * A data set: count samples of one shape (any rank: C x H x W images, a
 * feature vector, C x L signals), each held as float32, sample after
 * sample, with what it is checked against:
 *
 *   labels (y != NULL)      one integer class per sample, 0 to 255: the
 *                           accuracy of a classifier;
 *   reference outputs       the output a reference run gave for each
 *   (ref != NULL)           sample (ONNX's test_data_set_N, PyTorch's
 *                           forward pass): the agreement of a run with it.
 *
 * Either, both or neither may be present. The loaders: prof_dataset_load()
 * for IDX files here; the apps add NumPy folders and ONNX test data sets
 * (apps/common/data.h), filling a set made by prof_dataset_init().
 */
struct prof_dataset {
    float *x;          /* count * sample_count floats; release with
                          prof_dataset_finish() */
    uint8_t *y;        /* count labels, or NULL: unlabelled */
    float *ref;        /* count * ref_count reference outputs, or NULL */
    uint64_t count;    /* samples */
    unsigned rank;     /* the shape of one sample, without the batch */
    uint64_t shape[PROF_DATASET_MAX_RANK];
    uint64_t sample_count; /* prod(shape): floats per sample */
    unsigned ref_rank; /* the shape of one reference output (0: none) */
    uint64_t ref_shape[PROF_DATASET_MAX_RANK];
    uint64_t ref_count; /* prod(ref_shape): floats per reference output */
    uint64_t rows, cols; /* IDX images: shape 1 x rows x cols; else 0 */
    unsigned classes;  /* 1 + the largest label; 0 when unlabelled */
    char *source;      /* what was read (a file or folder), for messages;
                          may be NULL */
};

/*
 * Make an empty data set of count samples of shape[0..rank) (rank 1 to
 * PROF_DATASET_MAX_RANK, every size >= 1): x allocated (zeroed), y
 * allocated when labelled (zeroed, classes left 0 for the caller to set),
 * ref allocated when ref_rank > 0 (ref_shape's sizes >= 1), source copied
 * when not NULL. The caller fills x, y and ref. PROF_E_INVALID for NULL
 * pointers, PROF_E_RANGE for count 0, a rank out of range or a zero size,
 * PROF_E_OVERFLOW when the floats do not fit in memory, PROF_E_NOMEM. On
 * error *out is zeroed and diag (may be NULL) says why. Release with
 * prof_dataset_finish().
 */
PROF_API int prof_dataset_init(struct prof_dataset *out, uint64_t count,
                               unsigned rank, const uint64_t *shape,
                               bool labelled, unsigned ref_rank,
                               const uint64_t *ref_shape, const char *source,
                               struct prof_diag *diag);

/*
 * The shape of one sample as text, "1x28x28" (rank 1: "784"), at most
 * len - 1 bytes (cut short if needed) and a NUL. Returns buf.
 */
PROF_API char *prof_dataset_shape_text(const struct prof_dataset *d,
                                       char *buf, size_t len);

/*
 * Load the split "train" or "t10k" of an IDX data set in dir (NULL: the
 * default, prof_dataset_default_dir()): the files
 * <split>-images-idx3-ubyte.gz and <split>-labels-idx1-ubyte.gz, or the
 * same names without .gz when the compressed one does not exist. At most
 * max_count (0: all) samples. Besides the checks of the IDX readers, the
 * two headers must claim the same number of samples, even when max_count
 * reads fewer (PROF_E_RANGE). An empty set is PROF_E_RANGE.
 * PROF_E_INVALID for NULL split or out, or a split other than train or
 * t10k. On success the set is labelled, of shape 1 x rows x cols (pixels
 * as floats byte / 255, correctly rounded), with no reference outputs,
 * and source names the images' file. On error *out is zeroed and diag
 * (may be NULL) names the file and what is wrong.
 */
PROF_API int prof_dataset_load(const char *dir, const char *split,
                               uint64_t max_count, struct prof_dataset *out,
                               struct prof_diag *diag);
PROF_API void prof_dataset_finish(struct prof_dataset *d); /* NULL ok */

/* Debian's dataset-fashion-mnist folder, PROF_FASHION_MNIST_DIR. Static. */
PROF_API const char *prof_dataset_default_dir(void);

/* ---- executor ---- */

/*
 * The model executor runs a libmemest model for real, layer by layer in the
 * model's execution order, on libkernels, at a batch size and a precision:
 *   - fp32: every tensor and parameter in float;
 *   - fp16, bf16: weights, biases and activations stored in 16 bits
 *     (rounded to nearest even by kern_f32_to_f16/kern_f32_to_bf16); each
 *     operator widens its inputs and parameters to float, computes in
 *     float and rounds its result back to 16 bits (concat joins the 16-bit
 *     values as they are);
 *   - int8: weights quantised symmetrically per output channel, bias kept
 *     in float, activations quantised per tensor (scale max|x| / 127,
 *     computed from each tensor when it is produced); dense and conv2d
 *     multiply int8 by int8 into int32 (kern_q8_gemm), requantise to float
 *     (kern_q8_requant_f32), apply the activation in float (so a final
 *     softmax runs in fp32) and quantise the result for the next layer.
 *     Every other operator computes in float on dequantised values and
 *     quantises its result with a scale of its own: pooling, activations,
 *     global average pooling, batchnorm (its scale and shift stay float),
 *     add (each input dequantised with its own scale) and concat (each
 *     block likewise). Identity, dropout and flatten keep the bytes and
 *     the scale.
 * fp64 is estimated by libmemest but not executed (PROF_E_RANGE).
 *
 * Operators: dense (y = x W^T + b, then its activation), conv2d
 * (kh x kw kernels, a stride per axis, padding per side, groups, depthwise
 * included, the bias and a relu or relu6 fused into its output pass: at
 * fp32 kern_conv2d_packed_f32 on weights packed at creation, depthwise
 * layers and 16-bit storage kern_conv2d_f32; for int8 kern_im2col_s8, then
 * one GEMM per group over the whole batch, but depthwise layers run the
 * float depthwise kernel on the int8 values, which sums them exactly, and
 * requantise per channel), max and average pooling (kern_maxpool2d_f32 and
 * kern_avgpool2d_f32: kh x kw windows, a stride per axis, padding per
 * side, average dividing by the whole window or by its cells inside the
 * input as the layer's count_include_pad says; a pool with a 1 x 1
 * output reads a blocked input with kern_maxpool2d_nchw8c_f32 and
 * kern_avgpool2d_nchw8c_f32), global average pooling
 * (kern_nn_global_avgpool_f32, or its _nchw8c_ form), add of two or more
 * tensors then its activation (kern_nn_add_f32; a relu or relu6 in the
 * last addition's pass, kern_nn_add_act_f32), concat along dim[0] (the
 * channels of CxHxW, the features of vectors), standalone batchnorm
 * (per-channel x * scale + shift over dim[0] of a rank 1, 2 or 3 tensor,
 * kern_nn_channel_affine_f32), flatten, identity and dropout (aliases:
 * the output is the input's buffer, nothing is copied), and the
 * activations relu, relu6, gelu (tanh form), sigmoid, tanh, erf, softmax
 * and log-softmax. Softmax and log-softmax normalise each sample's feature
 * vector; on a rank-3 (rank-2) tensor they run over dim[0], the channels,
 * at every position (PyTorch's dim=1).
 *
 * Parameter layout, as PyTorch stores it: dense weight [out][in], conv2d
 * weight [out_c][in_c/groups][k][k], bias [out] or [out_c]; a batchnorm's
 * "weight" is its per-channel scale, its "bias" its shift (as struct
 * memest_layer gives them, the running statistics folded in).
 *
 * Memory. Activations live in ONE arena of exactly the size libmemest plans
 * for inference (memest_plan_arena: peak_inference_bytes -
 * parameter_bytes). Every tensor (the model inputs, then each layer's
 * output) sits at the offset of that plan; identity, dropout and flatten
 * share their input's buffer. The executor does not take the plan on
 * trust: from the layers' inputs it derives when each tensor is written
 * and last read, and checks that each planned buffer has the size it
 * computes, that aliases share their owner's offset, and that no two
 * buffers alive at a common step overlap; the arena it needs is the
 * highest end of a buffer, and it refuses to run (PROF_E_MEMEST, with a
 * message in diag) unless that equals the plan: the estimate is checked,
 * not assumed. Apart from the arena, and not counted in it:
 *   - the stored parameters (float, 16-bit, or packed int8 with one float
 *     scale per output channel and a float bias; a batchnorm's in float);
 *   - a float master copy of the parameters as initialised or supplied
 *     (what prof_exec_get_params returns, and what int8 and 16-bit storage
 *     are derived from);
 *   - scratch: im2col columns (float, or int8 for int8), the float buffers
 *     in which 16-bit and int8 operators compute, int32 GEMM accumulators,
 *     and the transposes of int8 conv2d and of channel softmax. Each is
 *     sized for the largest operator that uses it and shared by all.
 * prof_exec_memory() reports each part.
 *
 * Initial weights: a deterministic function of the seed. One SplitMix64
 * stream (state += 0x9E3779B97F4A7C15, then the xor-shift-multiply finaliser
 * with 0xBF58476D1CE4E5B9 and 0x94D049BB133111EB) is drawn layer by layer,
 * weights then bias; u = (z >> 40) * 2^-24 is uniform in [0, 1). Weights
 * are uniform in [-a, a): He, a = sqrt(6 / fan_in), for a layer followed by
 * relu, Glorot, a = sqrt(6 / (fan_in + fan_out)), otherwise; biases are
 * uniform in [-1/sqrt(fan_in), 1/sqrt(fan_in)) (PyTorch's default), where
 * fan_in = in (dense) or in_c/groups*k*k, fan_out = out or out_c/groups*k*k.
 * A batchnorm starts as PyTorch's fresh one folded (scale 1 / sqrt(1 +
 * eps), shift 0) and draws nothing. A model that carries weights
 * (memest_layer weight and bias, from ONNX initializers or
 * memest_model_set_weights) runs them: its layers' master parameters are
 * the model's, while the stream is still drawn, so that the values of
 * layers without weights do not depend on the others.
 *
 * An executor is not thread-safe: one thread at a time may use it. The
 * model must outlive it.
 */
typedef struct prof_exec prof_exec;

struct prof_ranges;

/* The output stage of static int8's integer layers (conv2d, depthwise,
 * dense): FIXED, the fixed-point multiplier and shift of x_scale
 * w_scale[c] / y_scale (in double), rounded half away from zero, as
 * TFLite, CMSIS-NN and gemmlowp requantise (integer-only, what a device
 * without a float unit runs); FLOAT, ONNX Runtime's (MLAS's
 * MlasRequantizeOutput behind QLinearConv, QGemm, QLinearMatMul): the
 * scale product x_scale w_scale[c] / y_scale in float, the sum times it
 * in float, rounded half to even, so that a QDQ model's outputs follow
 * ONNX Runtime's step for step. Both are libkernels' struct
 * kern_q8_outstage. MODEL, the default: the stage of the runtime the
 * params were made for. A QDQ or QLinear model run on the params it
 * carries (prof_exec_opts.ranges NULL, memest_model_is_quantized) gets
 * FLOAT, since ONNX defines QuantizeLinear with round half to even and
 * ONNX Runtime is the reference for such a file; ranges edgefit
 * calibrated (ranges not NULL) get FIXED. */
enum prof_int8_requant {
    PROF_INT8_REQUANT_FIXED = 0,
    PROF_INT8_REQUANT_FLOAT = 1,
    PROF_INT8_REQUANT_MODEL = 2,
};

/* "fixed", "float" or "model"; NULL for any other value. */
PROF_API const char *prof_int8_requant_name(enum prof_int8_requant r);

/* Parses "fixed", "float" or "model" into *out: 0, else -1 (out
 * unchanged). */
PROF_API int prof_int8_requant_parse(const char *s,
                                     enum prof_int8_requant *out);

struct prof_exec_opts {
    uint64_t batch;                  /* >= 1 (default 1) */
    enum memest_precision precision; /* fp32, fp16, bf16, int8 (static,
                                        needs `ranges`), int8-dynamic
                                        (default fp32) */
    uint64_t seed;                   /* initial weights (default 42) */
    /* The activation arena to check against, in bytes. 0 (the default)
     * takes libmemest's plan; any other value is checked instead, so a
     * wrong plan can be tried (it fails with PROF_E_MEMEST). */
    uint64_t plan_bytes;
    /* Threads, 1 to 64 (default 1). A dense or conv2d layer of at least
     * thread_min_macs MACs at the batch (default
     * PROF_EXEC_THREAD_MIN_MACS) is split among them: a convolution by
     * samples (a single sample: its products by rows or columns, or a
     * depthwise one by channels), a dense layer by rows or columns of its
     * product, an int8 product by rows. So is a pool of as many window
     * reads (by samples, or a single sample's channels), and at fp32 an
     * add of same-shaped inputs (by samples, or runs of elements) or a
     * concat at a batch of several (by samples) of as many output
     * elements, so that each thread keeps the samples it wrote. Every
     * other operator, and smaller layers, whose work would not pay for
     * waking the threads, run on the caller's. Each thread computes whole output elements exactly as one
     * thread would, so results do not depend on the thread count (bit for
     * bit). The workers are libkernels' (kern_parallel). */
    unsigned threads;
    uint64_t thread_min_macs;
    /* Channel-blocked activations (default 1): at fp32, a tensor that only
     * convolutions (and element-wise layers between them) write and read,
     * with a multiple of 8 channels, is kept in libkernels' NCHW8c layout,
     * so that a chain of depthwise and pointwise layers runs without
     * transposes; a pooling with a 1 x 1 output (the pool that closes a
     * network, or a global average) reads such a tensor blocked too, and
     * writes NCHW. The model's inputs and output, and every tensor another
     * kind of layer reads, stay NCHW. 0 keeps every tensor NCHW. Results
     * are the same bits either way. */
    int channel_blocked;
    /* Static int8 (precision int8): the activation ranges to quantise
     * with, one per tensor of the model (prof_ranges_calibrate() or
     * prof_ranges_load()); not owned, read while the executor is built.
     * NULL: the ranges the model carries (a QDQ ONNX file), else the
     * executor refuses static int8 (PROF_E_RANGE, saying why). The count
     * and every tensor's name must be the model's (else PROF_E_RANGE:
     * ranges of another model). A view (flatten, reshape, identity,
     * dropout) shares its input's bytes and so its params. Unused at
     * other precisions. */
    const struct prof_ranges *ranges;
    /* Static int8: how a conv2d's or dense layer's int32 sums become its
     * int8 output (default PROF_INT8_REQUANT_MODEL: FLOAT for a QDQ
     * model's own params, else FIXED). Unused at other precisions. */
    enum prof_int8_requant int8_requant;
};

/* The default work threshold of prof_exec_opts.thread_min_macs: 2^17
 * MACs, about 4 us of a layer on one core at 35 GMAC/s; below it a second
 * thread saves little beside posting the work to a worker (which spins
 * for 0.2 ms after its last piece, then sleeps: kern_parallel) and
 * waiting for it. At 2^20, the threshold while a caller slept until its
 * workers were done, MobileNetV1-0.25 and DS-CNN at batch 1 took the same
 * time on two threads as on one; at 2^17 0.71x and 0.79x of it, and
 * smaller at batch 8 too (edgefit-bench --table threads, alternated):
 * edgefit-bench's threads table times whole models on 1 and 2 threads. */
#define PROF_EXEC_THREAD_MIN_MACS UINT64_C(131072)

/* Fill the defaults above. NULL is ignored. */
PROF_API void prof_exec_opts_init(struct prof_exec_opts *opts);

/* The output stage an executor of model built with opts runs at static
 * int8: opts->int8_requant, PROF_INT8_REQUANT_MODEL resolved (FLOAT when
 * opts->ranges is NULL and the model carries its own quantisation, else
 * FIXED). NULL opts: the defaults; NULL model: FIXED for MODEL. */
PROF_API enum prof_int8_requant
prof_int8_requant_of(const memest_model *model,
                     const struct prof_exec_opts *opts);

/*
 * Build an executor for model (opts NULL: defaults). Allocates the arena,
 * the parameters (seeded) and the scratch. On success *out is a new
 * executor released with prof_exec_destroy(); on error *out is NULL and
 * diag (may be NULL) says why. PROF_E_INVALID for NULL model or out;
 * PROF_E_RANGE for batch 0, threads outside 1..64, fp64 or a bad
 * precision, or a layer the kernels do not run (pool padding over half the
 * window, an int8 GEMM longer than the kernel allows); PROF_E_MEMEST when libmemest cannot
 * estimate the model or when the arena the layout needs differs from the
 * plan; PROF_E_OVERFLOW when a buffer does not fit in size_t;
 * PROF_E_NOMEM; PROF_E_KERNEL when packing int8 weights fails.
 */
PROF_API int prof_exec_create(const memest_model *model,
                              const struct prof_exec_opts *opts,
                              prof_exec **out, struct prof_diag *diag);

/* Release an executor. NULL is allowed. */
PROF_API void prof_exec_destroy(prof_exec *ex);

/* The model, batch and precision the executor runs. */
PROF_API const memest_model *prof_exec_model(const prof_exec *ex);
PROF_API uint64_t prof_exec_batch(const prof_exec *ex);
PROF_API enum memest_precision prof_exec_precision(const prof_exec *ex);

/* Floats prof_exec_run() reads (batch * input elements; of input 0 for a
 * model with several) and writes (batch * output elements); 0 for NULL. */
PROF_API size_t prof_exec_input_count(const prof_exec *ex);
PROF_API size_t prof_exec_output_count(const prof_exec *ex);

/* The model's inputs (memest_model_input_count) and the floats of input k
 * (batch * its elements), as prof_exec_run_inputs() takes them; 0 for
 * NULL or k out of range. */
PROF_API size_t prof_exec_input_tensors(const prof_exec *ex);
PROF_API size_t prof_exec_input_count_at(const prof_exec *ex, size_t k);

/* Memory of an executor, in bytes (see the overview above). */
struct prof_exec_memory {
    uint64_t arena_bytes;     /* activations: what the layout needs */
    uint64_t plan_bytes;      /* what it was checked against (equal) */
    uint64_t peak_inference_bytes; /* libmemest's, parameters included */
    uint64_t estimate_parameter_bytes; /* libmemest's parameter bytes */
    uint64_t parameter_bytes; /* the stored parameters, as executed (fp32:
                                 convolutions' weights packed in whole
                                 blocks of 16 output channels) */
    uint64_t master_bytes;    /* the float master copy */
    uint64_t master_unread_bytes; /* of it, what inference does not read:
                                     all below fp32; at fp32 the weights of
                                     the convolutions it runs packed */
    uint64_t scratch_bytes;   /* all scratch buffers together */
};

/* Fill *out. PROF_E_INVALID for NULL. */
PROF_API int prof_exec_memory(const prof_exec *ex,
                              struct prof_exec_memory *out);

/*
 * Where operator i (0 = staging the inputs, i = 1..layers = layer i - 1)
 * reads and writes in the arena, and what it moves. Offsets and sizes are
 * in bytes at the storage precision. input_offset is the offset of the
 * layer's FIRST input (inputs[0]); input_bytes counts all the tensors it
 * reads (an add or a concat reads two or more). The input operator reads
 * the caller's floats, so its input_offset is 0, its input_bytes are
 * batch * input elements * 4 summed over the model's inputs, and its
 * output_offset is input 0's. Identity, dropout and flatten alias their
 * input: same offsets, nothing moved.
 */
struct prof_exec_op_info {
    const char *layer;         /* "input" or the layer name (model-owned) */
    enum memest_kind kind;     /* MEMEST_KIND_INPUT for operator 0 */
    uint64_t input_offset, input_bytes;
    uint64_t output_offset, output_bytes;
    uint64_t macs;             /* libmemest's count at the batch */
    uint64_t parameter_bytes;  /* libmemest's: count * storage bytes */
    uint64_t bytes_moved;      /* parameter + input + output bytes: what
                                  the operator reads and writes (0 for
                                  the aliases, which move nothing) */
    uint64_t scratch_bytes;    /* scratch this operator touches */
    unsigned threads;          /* threads it runs on (prof_exec_opts) */
    int output_layout;         /* its output's layout, a libkernels
                                  kern_layout: 0 NCHW, 1 NCHW8c inside a
                                  chain of convolutions
                                  (prof_exec_opts.channel_blocked) */
};

/* Number of operators: layers + 1 (the input staging). 0 for NULL. */
PROF_API size_t prof_exec_op_count(const prof_exec *ex);

/* Operator i's placement and costs. PROF_E_INVALID for NULL or i out of
 * range. */
PROF_API int prof_exec_op_info(const prof_exec *ex, size_t i,
                               struct prof_exec_op_info *out);

/*
 * Replace the parameters of layer `layer` (0-based, as
 * memest_model_layer()) with float arrays in the layout above: weights
 * holds weight_count values, bias bias_count (NULL and 0 for a layer
 * without bias). The master copy takes them as given and the stored form
 * (16-bit, or int8 with new per-channel scales) is derived again.
 * PROF_E_INVALID for NULL ex or weights, a layer out of range or without
 * parameters; PROF_E_RANGE when a count differs from the layer's
 * (memest_layer weight_count, bias_count) or a value is not finite.
 */
PROF_API int prof_exec_set_params(prof_exec *ex, size_t layer,
                                  const float *weights, size_t weight_count,
                                  const float *bias, size_t bias_count);

/*
 * Copy layer `layer`'s master parameters out (exactly what was set or
 * initialised): weights needs weight_count floats, bias bias_count (may be
 * NULL to skip it). Errors as prof_exec_set_params().
 */
PROF_API int prof_exec_get_params(const prof_exec *ex, size_t layer,
                                  float *weights, size_t weight_count,
                                  float *bias, size_t bias_count);

/*
 * One forward pass: input holds prof_exec_input_count() floats (NCHW or
 * [batch][features], the batch first: data whose file holds it elsewhere,
 * memest_model_input_batch_axis() != 0 as an ONNX LSTM's time-major
 * [T, N, D], is moved batch first by the caller, and the output, batch
 * first too, back to memest_model_output_batch_axis() if it wants the
 * file's order), output receives prof_exec_output_count() floats: the
 * last operator's float result before it is stored at the storage
 * precision (int8-dynamic with a final softmax: the fp32 softmax). Static
 * int8 quantises the input with the input tensor's params (round half to
 * even, saturated to [-128, 127]) and returns the output tensor
 * dequantised ((q - zero point) * scale); a final softmax or log-softmax
 * runs in float on the dequantised logits, and its float result is the
 * output. The arena also holds every tensor at the storage precision, as
 * planned.
 * PROF_E_INVALID for NULL or wrong counts; PROF_E_RANGE for an input that
 * int8 cannot quantise (inf or NaN) or a result that overflows it;
 * PROF_E_KERNEL when a kernel fails.
 */
PROF_API int prof_exec_run(prof_exec *ex, const float *input, size_t n_in,
                           float *output, size_t n_out);

/*
 * prof_exec_run() for a model with any number of inputs: inputs[k] holds
 * n_in[k] == prof_exec_input_count_at(ex, k) floats of model input k, for
 * k < count == prof_exec_input_tensors(ex). prof_exec_run() is this with
 * one input, and refuses (PROF_E_INVALID) a model that has several.
 * Statuses as prof_exec_run().
 */
PROF_API int prof_exec_run_inputs(prof_exec *ex, const float *const *inputs,
                                  const size_t *n_in, size_t count,
                                  float *output, size_t n_out);

/* A tensor the executor has just written (see prof_exec_run_observed). */
struct prof_exec_tensor {
    size_t tensor;      /* 0..inputs-1: model input k; inputs + i: the
                           output of layer i (struct memest_layer) */
    const char *name;   /* the input's or the layer's name (model-owned) */
    const float *data;  /* count floats, valid only during the call */
    size_t count;       /* elements, the batch included */
    uint64_t batch;     /* samples: data holds count / batch per sample,
                           sample after sample */
    int layout;         /* 0 NCHW; 1 libkernels' NCHW8c (channel-blocked,
                           prof_exec_opts.channel_blocked): the same
                           values of each sample in another order */
};

/* Called for each tensor in execution order; non-zero stops the run. */
typedef int (*prof_exec_observe_fn)(void *ctx,
                                    const struct prof_exec_tensor *t);

/*
 * One forward pass as prof_exec_run_inputs() (the same staging and layer
 * loop), calling fn(ctx, tensor) after the inputs are staged (once per
 * model input) and after each layer has run (once per layer, views
 * included: they show their input's buffer), while the tensor is still in
 * the arena; a later layer may reuse its buffer. For calibration and
 * per-layer comparisons. fp32 shows the arena's floats; int8 (static or
 * dynamic) each tensor dequantised, (q - zero point) * scale, what its
 * int8 values represent (a final softmax's float result as it is), so
 * that per-layer error against fp32 can be measured; 16-bit storage is
 * refused (PROF_E_RANGE). PROF_E_INVALID for
 * NULL or wrong counts, PROF_E_CALLBACK when fn returns non-zero, else as
 * prof_exec_run().
 */
PROF_API int prof_exec_run_observed(prof_exec *ex,
                                    const float *const *inputs,
                                    const size_t *n_in, size_t count,
                                    prof_exec_observe_fn fn, void *ctx);

/* One operator of the profile: what it moves and how long it takes. */
struct prof_exec_op_row {
    struct prof_exec_op_info info;
    struct prof_stats stats; /* the operator timed alone */
    double latency_ms;       /* stats.median_ms */
    double achieved_gbps;    /* bytes_moved / latency, 1e9 B/s */
    double achieved_gmacs;   /* macs / latency, 1e9 MAC/s */
    double memory_kb;        /* (bytes_moved + scratch_bytes) / 1024: what
                                the operator holds while it runs */
};

/* The operator profile of one input. */
struct prof_exec_profile {
    size_t count;                 /* operators: layers + 1 */
    struct prof_exec_op_row *ops; /* release with prof_exec_profile_finish */
    struct prof_stats forward;    /* whole forward passes (prof_exec_run) */
    double forward_ms;            /* forward.median_ms */
    double operator_sum_ms;       /* sum of the operators' medians */
    /* forward_ms - operator_sum_ms: what running the chain costs beyond
     * its operators run alone (calls, cache state between operators) */
    double framing_ms;
    /* The executor's precision: predictions use the device's peak for it
     * (prof_device_peak). */
    enum memest_precision precision;
};

/*
 * Profile the executor on input (prof_exec_input_count() floats; a model
 * with one input, else PROF_E_INVALID) with the timing harness: first
 * whole forward passes with prof_time(opts), then each operator in
 * execution order, timed alone the same way on its real inputs (the
 * tensors earlier operators left in the arena), so every timed run
 * computes the same thing. Latencies include opts->latency_multiplier. opts NULL: defaults.
 * Statuses as prof_exec_run() and prof_time(); PROF_E_NOMEM. On success
 * release *out with prof_exec_profile_finish().
 */
PROF_API int prof_exec_profile(prof_exec *ex, const float *input,
                               size_t n_in, const struct prof_time_opts *opts,
                               struct prof_exec_profile *out);

/* Release a profile's rows. NULL is allowed. */
PROF_API void prof_exec_profile_finish(struct prof_exec_profile *p);

/*
 * Predict every operator of a profile on dev (roofline, prof_predict_layers
 * with each operator's macs and bytes_moved) and compare with its measured
 * latency; out needs p->count entries. Row 0, the staging of the caller's
 * input, is not a layer of the model: it gets no prediction (zero work),
 * no measurement (NaN) and no error, and stays out of the totals. A layer
 * whose median is 0 (below the clock) or that does no work has no error.
 * With the host device from its own calibration this says how far a
 * prediction can be trusted. Statuses as prof_predict_layers().
 */
PROF_API int prof_exec_predict(const struct prof_exec_profile *p,
                               const struct prof_device *dev,
                               struct prof_layer_prediction *out,
                               struct prof_prediction_total *total);

/* The roofline predictions of one profile that the profile apps report:
 * on the host from its calibration, cache-aware and on main memory alone,
 * and on a device. */
struct prof_exec_predictions {
    size_t count; /* rows of each array: the profile's operators */
    /* the host (prof_device_host), the same without its caches (the plain
     * DRAM roofline), and the device asked for (the host when none was) */
    struct prof_device host, host_dram, device;
    struct prof_layer_prediction *host_pred, *dram_pred, *device_pred;
    struct prof_prediction_total host_total, dram_total, device_total;
};

/*
 * Predict every operator of p (prof_exec_predict) on the host from cal,
 * on the same host without its caches, and on device (NULL: the host).
 * power_watts > 0 replaces the power of all three (the host's is unknown,
 * 0, otherwise). On success release *out with
 * prof_exec_predictions_finish(); on error *out is cleared.
 * PROF_E_INVALID for NULL p, cal or out; PROF_E_RANGE for a calibration
 * prof_device_host refuses, a bad device or a negative or non-finite
 * power; PROF_E_NOMEM.
 */
PROF_API int prof_exec_predict_all(const struct prof_exec_profile *p,
                                   const struct prof_calibration *cal,
                                   const struct prof_device *device,
                                   double power_watts,
                                   struct prof_exec_predictions *out);

/* Release the arrays of prof_exec_predict_all(). NULL is allowed. */
PROF_API void prof_exec_predictions_finish(struct prof_exec_predictions *p);

/* ---- Activation ranges (calibration for static int8) ------------------- */

/*
 * Static int8 fixes each activation's quantisation once, from the ranges
 * the fp32 model shows on sample data (not to be confused with the host
 * calibration above, which measures the machine). prof_ranges_calibrate()
 * runs the model through the executor (prof_exec_run_observed, fp32) on
 * calibration samples and records, per tensor (every model input, then
 * every layer's output, in the model's tensor order), its observed minimum
 * and maximum and the range a method chooses:
 *
 *   minmax      the observed [min, max] (TFLite's default);
 *   percentile  symmetric, on |x| (ONNX Runtime's quantizer with
 *               symmetric=True): a histogram of PROF_RANGES_BINS equal bins
 *               of |x| over [0, max|x|]; t is the upper edge of the first
 *               bin at which the cumulative count reaches percentile % of
 *               the elements; range [max(min, -t), min(max, t)];
 *   entropy     the same |x| histogram; for every candidate of i bins,
 *               i = PROF_RANGES_LEVELS .. PROF_RANGES_BINS, the reference
 *               distribution P is the first i bins with the count of all
 *               later bins added to bin i - 1, Q is the first i bins merged
 *               into PROF_RANGES_LEVELS groups (i / LEVELS bins each, the
 *               last group taking the remainder) whose counts are spread
 *               evenly over the group's non-empty bins; both are smoothed
 *               (MXNet's _smooth_distribution, eps 1e-4: empty bins get
 *               eps, non-empty ones give it back) and normalised, and the
 *               i with the smallest KL(P || Q) wins (the smallest i on a
 *               tie); t = i * bin width (TensorRT's entropy calibrator,
 *               MXNet's and ONNX Runtime's); range as for percentile.
 *
 * A layer that keeps its input's scale (a max pool, a view: flatten,
 * reshape, identity, dropout; a pad with 0, a slice, a channel shuffle, a
 * nearest resize; none with an activation) gets its input's chosen range,
 * scale and zero point (its observed_min and observed_max stay its own),
 * as TFLite and ONNX Runtime's quantizer share one scale across such
 * layers: static int8 then runs them on the int8 values as they are.
 *
 * Determinism: the executor runs one sample at a time (batch 1), because
 * libkernels' fp32 product takes another path for a single row than for
 * many, and a dense layer's last bits would then depend on the batch a
 * sample ran in; at batch 1 every tensor's values are a function of its
 * sample alone (and not of the thread count, see prof_exec_opts). min and
 * max are exact in any order, and the histograms are integer counts into
 * bins whose edges come from a first pass over all samples (max|x|), so
 * the second pass fills them with the same counts in any order: the same
 * samples give the same bits whatever their order, the threads, or the
 * batch a caller runs the model at afterwards.
 */
enum prof_range_method {
    PROF_RANGE_MINMAX = 0,
    PROF_RANGE_PERCENTILE,
    PROF_RANGE_ENTROPY,
};

#define PROF_RANGES_BINS 2048   /* histogram bins over [0, max|x|] */
#define PROF_RANGES_LEVELS 128  /* quantised levels of |x| (int8's half) */
#define PROF_RANGES_DEFAULT_SAMPLES 512

/* "minmax", "percentile", "entropy"; NULL for an unknown method. */
PROF_API const char *prof_range_method_name(enum prof_range_method m);

/* The method named text (the names above). PROF_E_INVALID for NULL or an
 * unknown name. */
PROF_API int prof_range_method_parse(const char *text,
                                     enum prof_range_method *out);

struct prof_ranges_opts {
    enum prof_range_method method; /* default minmax */
    double percentile;  /* (50, 100] for percentile (default 99.99) */
    uint64_t samples;   /* the first samples of the set to use (default
                           PROF_RANGES_DEFAULT_SAMPLES; 0: all; a set with
                           fewer: all of it) */
    uint64_t seed;      /* the executor's initial weights for a model
                           that carries none (default 42, as
                           prof_exec_opts) */
    unsigned threads;   /* executor threads, 1 to 64 (default 1) */
};

/* Fill the defaults above. NULL is ignored. */
PROF_API void prof_ranges_opts_init(struct prof_ranges_opts *opts);

/* One tensor's range and its int8 quantisation (prof_quant_params). */
struct prof_tensor_range {
    char *name;          /* input or layer name (owned by the set) */
    float observed_min, observed_max; /* over every element seen */
    float min, max;      /* the range the method chose */
    float scale;         /* prof_quant_params(min, max) */
    int32_t zero_point;
};

/* A calibration: what it was made from and one range per tensor. */
struct prof_ranges {
    char *model;         /* memest_model_name() at calibration */
    enum prof_range_method method;
    double percentile;   /* the percentile method's; else 0 */
    uint64_t samples;    /* samples it ran on */
    size_t count;        /* tensors: memest_model_tensor_count() */
    struct prof_tensor_range *tensors; /* release with prof_ranges_finish */
};

/*
 * int8 asymmetric quantisation of [min, max] as ONNX Runtime's quantizer
 * computes it (compute_scale_zp, qmin -128, qmax 127), which TFLite's
 * converter matches up to its zero-point nudge: the range is first widened
 * to hold 0 (rmin = min(min, 0), rmax = max(max, 0)) so that 0 is exact;
 * scale = (rmax - rmin) / 255 in float, or 1 when rmax == rmin (a tensor
 * that is always 0); zero_point = qmin - rmin / scale (float), rounded
 * half to even (numpy's round), clamped to [-128, 127]. Then
 * q = clamp(round(x / scale) + zero_point, -128, 127) and
 * x ~ (q - zero_point) * scale. PROF_E_INVALID for NULL outputs,
 * PROF_E_RANGE for a bound that is not finite or min > max.
 */
PROF_API int prof_quant_params(float min, float max, float *scale,
                               int32_t *zero_point);

/*
 * Calibrate model on data (see above; opts NULL: defaults). The model must
 * have one input, fed by the data's samples: the same shape up to axes of
 * size 1, or a vector input of as many values (prof_dataset_check_input).
 * The model's own weights are used when it carries them. On success *out
 * holds one range per tensor; release with prof_ranges_finish(). On error
 * *out is zeroed and diag (may be NULL) says why. PROF_E_INVALID for NULL
 * arguments; PROF_E_RANGE for a bad option, a data set of the wrong shape
 * (the message names both shapes and the data's source), a non-finite
 * value in a tensor (named); PROF_E_UNSUPPORTED for a model of several
 * inputs; the executor's statuses; PROF_E_NOMEM.
 */
PROF_API int prof_ranges_calibrate(const memest_model *model,
                                   const struct prof_dataset *data,
                                   const struct prof_ranges_opts *opts,
                                   struct prof_ranges *out,
                                   struct prof_diag *diag);

/*
 * Whether two shapes are the same once their axes of size 1 are dropped:
 * then they hold the same elements in the same order (1 x 28 x 28 and
 * 28 x 28; a 1-D signal's C x L and a model's C x 1 x L). The one rule
 * by which data, reference outputs and models are matched.
 */
PROF_API bool prof_shapes_match(const uint64_t *a, unsigned na,
                                const uint64_t *b, unsigned nb);

/*
 * Whether data feeds model: one input, and the data's sample shape is the
 * model's input shape up to axes of size 1 (1 x 28 x 28 feeds 28 x 28),
 * or the model reads a vector of as many values (an MLP on images).
 * PROF_OK, or PROF_E_RANGE (PROF_E_UNSUPPORTED for several inputs) with a
 * message naming the model, both shapes and the data's source in diag.
 * PROF_E_INVALID for NULL.
 */
PROF_API int prof_dataset_check_input(const memest_model *model,
                                      const struct prof_dataset *data,
                                      struct prof_diag *diag);

/*
 * Write r to path as JSON (the calibration file):
 *   {"format": "edgefit-calibration", "version": 1, "model": NAME,
 *    "method": "minmax"|"percentile"|"entropy", "percentile": P,
 *    "samples": N, "tensors": [{"name", "min", "max", "scale",
 *    "zero_point", "observed_min", "observed_max"}, ...]}
 * with every float written in 9 significant digits, which give back the
 * same float exactly (the percentile, a double, is kept to 9 digits too).
 * Atomic: the
 * file is written beside path under a temporary name, flushed to disk and
 * renamed over path, so a reader sees the old file or the whole new one.
 * PROF_E_INVALID for NULL, PROF_E_IO (diag names the file and the system's
 * reason), PROF_E_NOMEM.
 */
PROF_API int prof_ranges_save(const struct prof_ranges *r, const char *path,
                              struct prof_diag *diag);

/*
 * Read a calibration file written by prof_ranges_save() for model: it
 * must name as many tensors as the model has, with the model's tensor
 * names in its order, and each entry must hold finite min <= max and the
 * scale and zero point prof_quant_params() gives for them (a file edited
 * by hand cannot disagree with itself). On success release *out with
 * prof_ranges_finish(); on error *out is zeroed and diag names the file
 * and, for a mismatch, the tensor. PROF_E_INVALID for NULL, PROF_E_IO,
 * PROF_E_PARSE (not JSON, or a field missing or of the wrong type),
 * PROF_E_RANGE (a tensor name, count or value that does not match),
 * PROF_E_NOMEM.
 */
PROF_API int prof_ranges_load(const char *path, const memest_model *model,
                              struct prof_ranges *out,
                              struct prof_diag *diag);

/* Release what a calibration holds and zero it. NULL is allowed. */
PROF_API void prof_ranges_finish(struct prof_ranges *r);

/*
 * The calibration file's JSON (as prof_ranges_save() writes it) on an open
 * stream, for a caller that writes it its own way (a bundle of files
 * committed together). PROF_E_INVALID for NULL, PROF_E_NOMEM, PROF_E_IO
 * when the stream fails.
 */
PROF_API int prof_ranges_write(const struct prof_ranges *r, FILE *f);

/* ---- Per-layer quantisation error (static int8 against fp32) ---------- */

/*
 * What static int8 loses, tensor by tensor: the model runs at fp32 and at
 * static int8 (MEMEST_INT8 with the given ranges) on the same samples,
 * each through prof_exec_run_observed() at batch 1 with every tensor in
 * NCHW (at int8 the observer sees each tensor dequantised, what its int8
 * values represent), and every element x of the fp32 tensor is compared
 * with its int8 counterpart y, over all elements of all samples:
 *
 *   sqnr_db        10 log10(sum x^2 / sum (x - y)^2): the signal to
 *                  quantisation noise ratio, in dB. +inf when the int8
 *                  tensor equals the fp32 one (sum (x - y)^2 == 0, a zero
 *                  tensor included); -inf when the fp32 tensor is all zero
 *                  and the int8 one is not;
 *   max_abs_error  max |x - y|.
 *
 * The sums run in double, sample after sample, element after element: the
 * same samples give the same bits whatever the threads. For a classifier
 * (an output of at least 2 values per sample) the output's top-1 (the
 * first largest value) at int8 is compared with fp32's on every sample,
 * and, on a labelled set, with the label.
 */
struct prof_quant_error_opts {
    uint64_t samples;   /* the first samples of the set (default
                           PROF_RANGES_DEFAULT_SAMPLES; 0: all) */
    uint64_t seed;      /* the executors' initial weights for a model that
                           carries none (default 42) */
    unsigned threads;   /* executor threads, 1 to 64 (default 1) */
    enum prof_int8_requant int8_requant; /* the int8 run's output stage
                                            (default fixed) */
};

/* Fill the defaults above. NULL is ignored. */
PROF_API void prof_quant_error_opts_init(struct prof_quant_error_opts *o);

/* One tensor: a model input or a layer's output. */
struct prof_tensor_error {
    size_t tensor;          /* memest_model_tensor_count() order */
    const char *name;       /* the input's or the layer's (model-owned) */
    enum memest_kind kind;  /* MEMEST_KIND_INPUT for a model input */
    uint64_t elements;      /* compared, over all samples */
    double signal_sum_sq;   /* sum x^2 (fp32) */
    double error_sum_sq;    /* sum (x - y)^2 */
    double sqnr_db;         /* see above; +inf or -inf as said */
    double max_abs_error;   /* max |x - y| */
    float scale;            /* the int8 quantisation it ran with */
    int32_t zero_point;
};

struct prof_quant_error {
    uint64_t samples;       /* compared */
    size_t count;           /* tensors: memest_model_tensor_count() */
    struct prof_tensor_error *tensors; /* release with
                                          prof_quant_error_finish() */
    bool classifier;        /* the output has >= 2 values per sample */
    uint64_t top1_agree;    /* samples whose int8 top-1 is fp32's */
    double top1_agreement;  /* top1_agree / samples; NaN when not a
                               classifier */
    bool labelled;          /* a classifier on labelled data */
    double fp32_accuracy, int8_accuracy; /* on the labels; NaN when not
                                            labelled */
};

/*
 * Measure model's per-tensor int8 error on data (see above; opts NULL:
 * defaults) with ranges (one per tensor, prof_ranges_calibrate() or
 * prof_ranges_load(); NULL: the quantisation the model carries). The
 * data feeds the model as prof_dataset_check_input() says. On success
 * release *out with prof_quant_error_finish(); on error *out is zeroed
 * and diag (may be NULL) says why. PROF_E_INVALID for NULL model, data or
 * out; PROF_E_RANGE for a bad option, ranges of another tensor count, a
 * data set of the wrong shape, a value that is not finite (the tensor
 * named); PROF_E_UNSUPPORTED for a model of several inputs; the
 * executors' statuses (static int8 without ranges: PROF_E_RANGE);
 * PROF_E_NOMEM; PROF_E_OVERFLOW.
 */
PROF_API int prof_quant_error(const memest_model *model,
                              const struct prof_dataset *data,
                              const struct prof_ranges *ranges,
                              const struct prof_quant_error_opts *opts,
                              struct prof_quant_error *out,
                              struct prof_diag *diag);

/* Release a measure's rows and zero it. NULL is allowed. */
PROF_API void prof_quant_error_finish(struct prof_quant_error *e);

/* ---- Stream profile (the original streaming profile) ------------------ */

enum prof_stream_act {
    PROF_STREAM_RELU = 0,
    PROF_STREAM_GELU, /* tanh form */
};

enum prof_stream_data {
    PROF_DATA_AUTO = 0,      /* Fashion-MNIST if readable and features
                                <= 784, else synthetic */
    PROF_DATA_SYNTHETIC,     /* deterministic sensor-like stream from seed */
    PROF_DATA_FASHION_MNIST, /* pixels / 255 of the first images */
};

#define PROF_FASHION_MNIST_DIR "/usr/share/datasets/fashion-mnist"

struct prof_stream_opts {
    uint64_t feature_count;    /* features per sample (default 64) */
    uint64_t batch;            /* samples per stream step (default 32) */
    uint64_t hidden;           /* linear_projection width (default 64) */
    uint64_t outputs;          /* decision_head outputs (default 1) */
    double stream_interval_ms; /* time between batches (default 10) */
    enum prof_stream_act activation; /* default relu */
    enum prof_stream_data data;      /* default auto */
    const char *data_dir;      /* NULL: PROF_FASHION_MNIST_DIR */
    uint64_t seed;             /* weights and synthetic data (default 42) */
    struct prof_time_opts timing; /* default warm-up 3, repeats 50,
                                     min_sample_ms 0.05 */
    bool measure_precisions;   /* also time fp16 storage and int8 (true) */
    unsigned threads;          /* executor threads, 1 to 64 (default 1;
                                  0 is read as 1): prof_exec_opts */
};

/* Fill the defaults above. */
PROF_API void prof_stream_opts_init(struct prof_stream_opts *opts);

enum { PROF_STREAM_OPERATORS = 4 };

/* One measured operator. */
struct prof_stream_op {
    const char *operator_name; /* static text */
    struct prof_stats stats;   /* fp32 timing */
    double latency_ms;         /* stats.median_ms */
    double memory_kb;          /* fp32 bytes of its inputs, parameters and
                                  outputs (an in-place buffer once) / 1024 */
    uint64_t bytes_moved;      /* fp32 bytes read + written */
    uint64_t macs;             /* libmemest's count: the dense layers'
                                  multiply-adds; 0 for the normalisation
                                  and the activation */
    unsigned threads;          /* threads it ran on (prof_exec_opts) */
    double intensity_mac_per_byte;
    /* against the knee of the roof of the memory level that holds the
     * stream's working set (or the faster one the operator beat;
     * prof_bandwidth_roof), the roof the bottleneck sentence uses too */
    enum prof_bound bound;
    double fp16_latency_ms;    /* median with fp16 storage, NaN if not run */
    double int8_latency_ms;    /* median with int8 weights, NaN if not run
                                  (also when features or hidden exceed
                                  131071, the exact int32 limit of
                                  kern_q8_gemm) */
};

#define PROF_SENTENCE_MAX 512

struct prof_stream_profile {
    uint64_t feature_count, batch, hidden, outputs;
    double stream_interval_ms;
    const char *activation;  /* "relu" or "gelu" */
    const char *data_source; /* "fashion-mnist" or "synthetic" */
    struct prof_stream_op ops[PROF_STREAM_OPERATORS];
    /* totals: sums over the operators */
    double latency_ms;
    double memory_kb;
    uint64_t bytes_moved;
    double estimated_bandwidth_mb_s; /* bytes_moved / latency, MB/s */
    double stream_utilization;       /* min(1, latency / interval) */
    /* latency / interval, not capped: above 1 a batch takes this many
     * intervals and the stream falls behind (the utilisation, capped at
     * 1, cannot say by how much) */
    double latency_over_interval;
    /* precision trade-offs: the same tensors at 4, 2 and 1 bytes */
    double fp32_memory_kb, fp16_memory_kb, int8_memory_kb;
    double fp32_latency_ms, fp16_latency_ms, int8_latency_ms; /* NaN if not
                                                                 measured */
    /* the host the bounds are judged against */
    double host_peak_gmacs, host_bandwidth_gbps, host_knee_mac_per_byte;
    /* edge constraints, generated from the numbers above */
    char bottleneck[PROF_SENTENCE_MAX];
    char headroom[PROF_SENTENCE_MAX];
    char cache_sensitivity[PROF_SENTENCE_MAX];
    /* the decision head's first output for the first sample, a check that
       the operators ran on the data */
    double first_score;
    /* what lower precision changes in the results: the largest
       |output - fp32 output| over all batch x outputs decision scores
       (sigmoid, in [0, 1]); NaN if not measured */
    double fp16_max_abs_diff;
    double int8_max_abs_diff;
    /* The fp32 run as the executor profiled it: row 0 stages the input
     * (not an operator of the stream), rows 1-4 are the four operators
     * (prof_stream_exec_view), and its whole forward passes. */
    struct prof_exec_op_row exec_ops[PROF_STREAM_OPERATORS + 1];
    double forward_ms;
    unsigned threads;
};

/*
 * The streaming model run for real on a batch of data: a libmemest model
 * whose four layers are the operators, input_normalization (a standalone
 * batchnorm over the features, scale 1 / std and shift -mean / std, the
 * statistics from a window of max(batch, 256) samples whose newest rows
 * are the batch; a constant feature keeps std 1), linear_projection
 * (dense feature_count -> hidden), activation (relu or gelu) and
 * decision_head (dense hidden -> outputs with sigmoid), dense weights and
 * biases uniform in +-1/sqrt(fan_in) from the seed, run by the executor
 * (prof_exec_*) at fp32 and, with measure_precisions, at fp16 storage and
 * int8, each operator timed alone (prof_exec_profile: median over the
 * repeats). The stream's own figures are computed here: the totals, the
 * share of the interval, the precision memories and the edge-constraint
 * sentences, whose working set is the executor's stored parameters and
 * activation arena. cal gives the host knee (NULL:
 * prof_host_calibration()). PROF_E_RANGE for a zero size, a bad interval
 * or more than 64 threads, PROF_E_OVERFLOW for sizes that do not fit,
 * PROF_E_NOMEM, PROF_E_KERNEL, or the executor's statuses (with diag).
 * When Fashion-MNIST was asked for and cannot be used, the IDX reader's
 * status (PROF_E_IO, PROF_E_PARSE, ...) or PROF_E_RANGE (more features
 * than pixels, fewer images than the window), with diag (may be NULL)
 * naming the file and what is wrong.
 */
PROF_API int prof_stream_profile(const struct prof_stream_opts *opts,
                                 const struct prof_calibration *cal,
                                 struct prof_stream_profile *out,
                                 struct prof_diag *diag);

/* A view of p's fp32 run as an executor profile (for prof_exec_predict and
 * prof_exec_predict_all): out->ops points into p (not to be released with
 * prof_exec_profile_finish), out->count is 5. NULL p: *out cleared. */
PROF_API void prof_stream_exec_view(const struct prof_stream_profile *p,
                                    struct prof_exec_profile *out);

/* ---- trainer ---- */

/*
 * The trainer trains a libmemest model on labelled samples with the
 * executor's operators, parameter layout and initialisation (see
 * "executor" above: seeded, or the model's own weights when it carries
 * them, so that a trained or imported model is fine-tuned): forward and
 * backward for a model of one input (a chain, or a graph: a tensor read
 * by several layers gathers their gradients) of dense, conv2d (any
 * stride, padding and groups), max and average pooling (any window,
 * strides and padding, either average divisor), global average pooling,
 * batch norms (standalone or folded into a conv2d or dense layer, trained
 * in training mode: see "batch norms" below), add (a residual: each
 * input receives the output's gradient, summed over the dimensions it
 * broadcasts along; or a constant added), concat (the
 * gradient split along its axis), flatten, identity, dropout (an
 * identity: the model carries no rate and the trainer drops nothing),
 * shuffle, slice, reshape and the activations relu, relu6, gelu (tanh
 * form), sigmoid, tanh, softplus, hardsigmoid, clip, leakyrelu (alpha >=
 * 0) and elu (alpha > 0), fused after a layer or standing alone, silu and
 * hardswish standing alone. Mixed precision trains chains of them
 * (each layer reading the previous one's output). The rest is refused (see
 * prof_train_create). The last layer must end in softmax on
 * a feature vector: softmax and the cross-entropy loss are computed
 * together (kern_nn_softmax_xent_f32), so the last layer's stored output
 * is its logits. Softmax anywhere else is refused (PROF_E_RANGE).
 *
 * Precision:
 *   - fp32: everything in float;
 *   - fp16, bf16 (mixed precision): float master weights used by every
 *     product, float optimiser state; every activation kept for backward,
 *     every activation gradient and every weight gradient stored in 16 bits
 *     (rounded to nearest even by kern_f32_to_f16/kern_f32_to_bf16); each
 *     operator widens its 16-bit inputs, computes in float and rounds its
 *     results back. fp16 scales the loss dynamically (kern_loss_scaler:
 *     initial opts.loss_scale, bounds [1, 65536], x2 after 2000
 *     consecutive finite steps, x0.5 and the step skipped when a gradient
 *     is inf or NaN); bf16 has float's range and needs no scaling.
 *   - int8 and fp64 are not trained (PROF_E_RANGE); int8 is the executor's
 *     post-training quantisation of trained weights.
 *
 * Optimisers (alpha = learning rate; g the mean gradient over the batch):
 *   - sgd: w -= alpha * g;
 *   - momentum: v = momentum * v + g, w -= alpha * v (kern_nn_sgd_f32);
 *   - adam: m = b1 m + (1 - b1) g, v = b2 v + (1 - b2) g^2,
 *     w -= alpha * (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps)
 *     (kern_nn_adam_f32), t the number of applied steps.
 *
 * Memory, checked: the trainer's buffers are counted term by term and must
 * equal libmemest's training estimate (memest_training_memory for fp32,
 * memest_training_memory_mixed for fp16/bf16) for the same model, batch
 * and optimiser, or prof_train_create refuses to run (PROF_E_MEMEST with a
 * message), as the executor checks its arena against the inference plan.
 * See struct memest_training for the terms.
 *
 * Determinism: an epoch's order is a seeded shuffle (Fisher-Yates driven
 * by the executor's SplitMix64, seeded from opts.seed and the epoch
 * number); with the same model, options and data, two trainers produce
 * bit-identical weights, losses and scale events. kern_sgemm's results do
 * not depend on its thread count, and the trainer does no other threading,
 * so the thread count does not change the results either.
 *
 * A trainer is not thread-safe: one thread at a time may use it. The model
 * must outlive it.
 */
typedef struct prof_train prof_train;

struct prof_train_opts {
    uint64_t batch;                  /* >= 1 (default 32) */
    enum memest_precision precision; /* fp32 (default), fp16 or bf16 =
                                        mixed precision */
    enum memest_optimizer optimizer; /* default MEMEST_OPT_SGD */
    double alpha;                    /* learning rate, finite > 0 (0.1) */
    double momentum;                 /* [0, 1) (0.9), momentum optimiser */
    double adam_beta1, adam_beta2;   /* [0, 1) (0.9, 0.999) */
    double adam_eps;                 /* finite > 0 (1e-8) */
    uint64_t seed;                   /* initial weights (the executor's
                                        initialisation) and shuffles (42) */
    unsigned threads;                /* 1 (default) to KERN_MAX_THREADS:
                                        kern_set_threads() for the large
                                        products (process-wide setting) */
    double loss_scale;               /* fp16 initial loss scale, in
                                        [1, 65536] (1024); others ignore it */
    /* The training memory to check against, in bytes. 0 (the default)
     * takes libmemest's estimate and checks every term; any other value is
     * checked against the total instead, so that a wrong estimate can be
     * tried (it fails with PROF_E_MEMEST), as prof_exec_opts.plan_bytes. */
    uint64_t estimate_bytes;
};

/* Fill the defaults above. NULL is ignored. */
PROF_API void prof_train_opts_init(struct prof_train_opts *opts);

/*
 * Build a trainer for model (opts NULL: defaults): the executor's plan and
 * seeded parameters, the gradients, optimiser state, activations and
 * working buffers, all allocated here and never during training. On
 * success *out is a new trainer released with prof_train_destroy(); on
 * error *out is NULL and diag (may be NULL) says why. PROF_E_INVALID for
 * NULL model or out, an unknown optimiser; PROF_E_RANGE for batch 0, a
 * precision that is not trained, a bad learning rate, momentum, Adam
 * parameter, loss scale or thread count, a model whose last layer does not
 * end in softmax on a feature vector or with softmax elsewhere (the message
 * names the layer) or a batchnorm with one value per channel at the
 * batch; PROF_E_UNSUPPORTED for a model the trainer has no backward pass
 * for: several inputs or outputs, a kind without one (sub, mul, div,
 * resize, ...), act erf or
 * logsoftmax, or with fp16 or bf16 anything but a chain of layers each
 * reading the previous one (adds, concats and skips train in fp32) (the
 * message names the layer); PROF_E_MEMEST when libmemest cannot estimate the model
 * or the buffers differ from its estimate; PROF_E_OVERFLOW; PROF_E_NOMEM.
 */
PROF_API int prof_train_create(const memest_model *model,
                               const struct prof_train_opts *opts,
                               prof_train **out, struct prof_diag *diag);

/* Release a trainer. NULL is allowed. */
PROF_API void prof_train_destroy(prof_train *t);

/* The model and options the trainer runs with (NULL for NULL). */
PROF_API const memest_model *prof_train_model(const prof_train *t);
PROF_API const struct prof_train_opts *prof_train_options(const prof_train *t);

/* Floats of one sample (the model's input elements); 0 for NULL. */
PROF_API size_t prof_train_sample_size(const prof_train *t);

/*
 * The trainer's real buffers by term, in bytes, next to libmemest's
 * estimate for the same model, batch, optimiser and precision; equal by
 * construction and checked at create (see struct memest_training):
 *   parameter_bytes: float master weights and biases (4 per parameter);
 *   gradient_bytes: one gradient per parameter at the storage precision;
 *   optimizer_state_bytes: float momentum velocity, or Adam's two moments;
 *   activation_bytes: the input batch and every layer output at the
 *     storage precision (logits for the last layer);
 *   working_bytes: what the backward pass and the 16-bit operators work
 *     in (activation gradients: two ends of one buffer for a chain, a
 *     buffer of its own for a tensor read by several layers or a later
 *     one, and a staging buffer for the shares of the former;
 *     pre-activations of fused gelu, im2col columns, float staging,
 *     labels, and each batchnorm's batch and running statistics, 4 floats
 *     per channel);
 *   total_bytes: their sum.
 * Not counted: the caller's data set, one shuffled index per sample
 * (4 bytes, allocated by each epoch), the loss-scale event log, per-layer
 * bookkeeping, and the packing buffers kern_sgemm keeps for large
 * products.
 */
struct prof_train_memory {
    uint64_t parameter_bytes, gradient_bytes, optimizer_state_bytes,
        activation_bytes, total_bytes; /* what the trainer allocated */
    uint64_t estimate_total_bytes;     /* libmemest's training estimate */
    uint64_t working_bytes;            /* part of total_bytes, see above */
    struct memest_training estimate;   /* libmemest's terms */
};

/* Fill *out. PROF_E_INVALID for NULL. */
PROF_API int prof_train_memory(const prof_train *t,
                               struct prof_train_memory *out);

/* Progress of one epoch: step of steps done, the running mean loss. */
typedef void (*prof_train_progress_fn)(void *ctx, uint64_t step,
                                       uint64_t steps, double mean_loss);

struct prof_train_epoch_result {
    uint64_t epoch;        /* 1-based */
    double loss;           /* mean training loss over the applied steps
                              (NaN when every step was skipped) */
    double train_accuracy; /* over the samples of the applied steps, with
                              the weights as they were when each batch
                              ran forward */
    double seconds;        /* wall time of the epoch */
    uint64_t steps, skipped_steps;
    double loss_scale;     /* at the end of the epoch (fp16), else 1 */
};

/*
 * One epoch over count samples: x holds count * prof_train_sample_size()
 * floats (NCHW or [count][features]), y count labels in [0, classes).
 * The order is reshuffled with the seed and the epoch number; the last
 * partial batch is dropped (steps = count / batch, at least 1 needed).
 * progress (may be NULL) is called after every step. out is filled even
 * on failure (the steps done so far). PROF_E_INVALID for NULL t, x, y or
 * out; PROF_E_RANGE when count < batch or count > 2^32 - 1, a label is out
 * of range, or the loss is not finite in fp32 or bf16 (training diverged;
 * the weights are left as they were before that step; fp16 skips such a
 * step instead); PROF_E_NOMEM (the shuffled order); PROF_E_KERNEL.
 */
PROF_API int prof_train_epoch(prof_train *t, const float *x, const uint8_t *y,
                              uint64_t count, prof_train_progress_fn progress,
                              void *ctx, struct prof_train_epoch_result *out);

/*
 * Accuracy (fraction of argmax(logits) == label) and mean cross-entropy
 * loss of the current weights on count >= 1 labelled samples (forward
 * only, in the trainer's precision and batch; a last partial batch is
 * padded and its padding ignored). Either output may be NULL.
 * PROF_E_INVALID for NULL t, x or y or count 0; PROF_E_RANGE for a label
 * out of range.
 */
PROF_API int prof_train_evaluate(prof_train *t, const float *x,
                                 const uint8_t *y, uint64_t count,
                                 double *accuracy, double *loss);

/* The loss-scale trajectory of fp16 training: one event per scale change or
 * skipped step (step is the 1-based step count since create; scale the
 * scale after the event). */
struct prof_train_scale_event {
    uint64_t step;
    double scale;
    bool skipped;
};

/* Number of events so far; *events (may be NULL) points at them, owned by
 * the trainer and valid until the next epoch or destroy. 0 for NULL t. */
PROF_API size_t prof_train_scale_events(
    const prof_train *t, const struct prof_train_scale_event **events);

/*
 * Copy out or replace layer `layer`'s float master parameters in the
 * executor's (PyTorch's) layout, with the counts and statuses of
 * prof_exec_get_params/prof_exec_set_params. Setting them does not reset
 * the optimiser state. For a batchnorm, or a layer a batch norm is folded
 * into, these give and take the folded parameters an executor runs
 * (batch norms train unfolded, below): get folds the running statistics
 * in, set puts the batch norm of running mean 0 and variance 1 that
 * computes them.
 */
PROF_API int prof_train_get_params(const prof_train *t, size_t layer,
                                   float *weight, size_t n_weight, float *bias,
                                   size_t n_bias);
PROF_API int prof_train_set_params(prof_train *t, size_t layer,
                                   const float *weight, size_t n_weight,
                                   const float *bias, size_t n_bias);

/*
 * Batch norms. The trainer trains each as PyTorch's nn.BatchNorm2d/1d in
 * training mode: during prof_train_epoch it normalises with the batch's
 * statistics (over the batch and the positions of each channel, the
 * biased variance) and updates running ones with momentum 0.1 and the
 * unbiased variance; prof_train_evaluate uses the running ones. A
 * batchnorm layer trains gamma and beta; a conv2d or dense layer with a
 * batch norm folded into it (struct memest_layer folded_bn) trains its
 * weights as they are before the fold and no bias (beta takes its place,
 * the layer's bias is the batch norm's), then the batch norm: gamma is one
 * more parameter per channel, in the trainer's parameters, gradients and
 * optimiser state, as libmemest's training estimate counts it. Each
 * starts as PyTorch's fresh one (gamma 1, beta 0, mean 0, variance 1) or,
 * when the model carries weights (folded), as the batch norm of mean 0
 * and variance 1 that computes them.
 *
 * prof_train_get_batchnorm and _set_batchnorm give and take PyTorch's
 * state_dict of the batch norm of layer `layer` (the batchnorm layer, or
 * the layer it is folded into), n = its channels: weight (gamma), bias
 * (beta), running_mean, running_var, n floats each.
 * prof_train_get_unfolded_weight gives a layer's weights before its
 * folded batch norm (PyTorch's conv or linear weight; its bias, when the
 * model declares one, is 0: beta holds it), n_weight as
 * prof_train_get_params. prof_train_get_batchnorm_grads gives the
 * gradients of gamma and beta of the last step. PROF_E_INVALID for NULL
 * arguments or a layer without a batch norm (a folded one, for
 * _unfolded_weight), PROF_E_RANGE for a wrong n or (set) a value that is
 * not finite or a negative variance.
 */
PROF_API int prof_train_get_batchnorm(const prof_train *t, size_t layer,
                                      float *weight, float *bias,
                                      float *running_mean,
                                      float *running_var, size_t n);
PROF_API int prof_train_set_batchnorm(prof_train *t, size_t layer,
                                      const float *weight, const float *bias,
                                      const float *running_mean,
                                      const float *running_var, size_t n);
PROF_API int prof_train_get_unfolded_weight(const prof_train *t,
                                            size_t layer, float *weight,
                                            size_t n_weight);
PROF_API int prof_train_get_batchnorm_grads(prof_train *t, size_t layer,
                                            float *weight, float *bias,
                                            size_t n);

/*
 * The gradients of the mean loss of the last step (prof_train_epoch's last
 * batch) with respect to layer `layer`'s parameters, as floats in the same
 * layout: with mixed precision the stored 16-bit gradients widened and,
 * for fp16, divided by the loss scale they were computed at. All zero
 * before the first step (a batchnorm's: of gamma and beta; a layer with a
 * folded batch norm: of its unfolded weights, and of beta for its bias).
 * Counts and
 * statuses as prof_train_get_params();
 * t is not const because the 16-bit gradients are widened in its staging.
 */
PROF_API int prof_train_get_grads(prof_train *t, size_t layer, float *weight,
                                  size_t n_weight, float *bias,
                                  size_t n_bias);

/* ---- Device model: a roofline with fitted efficiencies ------------------ */

/*
 * The roofline (prof_predict) is a lower bound: runtimes realise a share
 * of the peak that depends on the operator (a depthwise convolution a
 * tenth, a dense 3x3 convolution run with Winograd more than the MAC
 * count allows), pay a fixed cost per layer, and gain less from threads
 * than the cores promise. The device model keeps the roofline's shape and
 * fits those factors, ten per (device, runtime), to measured latencies:
 *
 *   per layer  compute_ms = MACs / (core peak x eff[class] x gain[prec])
 *                           x ((1 - p) + p / min(threads, cores))
 *              memory_ms  = bytes / (bandwidth(threads) x eff_bandwidth)
 *              time_ms    = max(compute_ms, memory_ms) (or their sum,
 *                           combine) + overhead_ms
 *   model      sum over the layers that are not views
 *
 * where the core peak is the device's fp32 peak / cores, bandwidth(1) the
 * one-core figure (bandwidth_1core_gbps, else the all-core one) and
 * bandwidth(T > 1) the all-core one, bytes are the layer's inputs,
 * output and parameters at the precision's width, and p is the fitted
 * parallel fraction (Amdahl's). eff_conv3x3 is an effective rate: a
 * Winograd convolution does fewer multiplies than its MACs, so it may
 * exceed 1. Element-wise layers, pooling and every other kind share the
 * depthwise efficiency (both are streaming work without reuse); their
 * time is mostly memory time.
 */
enum prof_op_class {
    PROF_OPC_DEPTHWISE = 0, /* conv2d with groups == input channels > 1 */
    PROF_OPC_POINTWISE,     /* 1x1 conv2d; any other dense conv2d of 8+
                             * input channels that is not CONV3X3 (one
                             * GEMM over its im2col rows) */
    PROF_OPC_CONV3X3,       /* 3x3 stride-1 dense conv2d of 8+ input or
                             * output channels (ncnn's Winograd rule) */
    PROF_OPC_CONV_OTHER,    /* stems of < 8 input channels, grouped
                             * (not depthwise) conv2d, convtranspose */
    PROF_OPC_GEMM,          /* dense, matmul, attention, lstm, gru */
    PROF_OPC_ELEMENTWISE,   /* activation, add, mul, batchnorm, ... */
    PROF_OPC_POOL,          /* maxpool, avgpool, globalavgpool */
    PROF_OPC_OTHER,         /* data movement: concat, pad, resize, ... */
};
#define PROF_OPC_COUNT 8

/* "depthwise", "pointwise", "conv3x3", "conv_other", "gemm",
 * "elementwise", "pool", "other"; NULL outside the enum. */
PROF_API const char *prof_op_class_name(enum prof_op_class c);

/* The class of a layer from its kind and shape. */
PROF_API enum prof_op_class prof_op_class_of(const struct memest_layer *l);

/* The fitted parameters, in this order (prof_devmodel.param). */
enum prof_dm_param {
    PROF_DM_EFF_DEPTHWISE = 0, /* share of the core peak, > 0 */
    PROF_DM_EFF_POINTWISE,
    PROF_DM_EFF_CONV3X3,       /* effective: may exceed 1 (Winograd) */
    PROF_DM_EFF_CONV_OTHER,
    PROF_DM_EFF_GEMM,
    PROF_DM_EFF_BANDWIDTH,     /* share of the bandwidth, > 0 */
    PROF_DM_OVERHEAD_MS,       /* per layer, > 0 */
    PROF_DM_PARALLEL,          /* Amdahl's parallel fraction, 0 < p < 1 */
    PROF_DM_INT8_SPEEDUP,      /* int8 compute speed / fp32's, > 0 */
    PROF_DM_F16_SPEEDUP,       /* fp16/bf16 compute speed / fp32's as a
                                * share of the device's roof ratio
                                * (peak_gmacs_f16 / peak_gmacs), > 0;
                                * used only where the device has fp16
                                * arithmetic (prof_device_has_f16) */
    /* MACs per output element (the reduction length, in_c / groups x
     * kh x kw for a convolution) at which a layer reaches half its
     * class's efficiency: a short reduction does not amortise loading and
     * storing its outputs (a 3-channel stem, a grouped 1x1). */
    PROF_DM_REDUCTION_HALF,
    /* int8 compute speed / fp32's for 3x3 stride-1 convolutions, > 0:
     * runtimes' fp32 Winograd tiles are larger than their int8 ones. The
     * fit holds it, and eff_gemm, at prof_dm_defaults()' values. */
    PROF_DM_INT8_SPEEDUP_3X3,
    /* A fixed cost per run, whatever its layers, ms, > 0: the executor's
     * setup of a run (binding inputs and outputs, its arena). Fitted for
     * runtime "edgefit" only, where single-layer runs calibrate the model
     * and would otherwise charge it to every layer; held at
     * prof_dm_defaults()' 1 us for the published runtimes, whose
     * benchmarks time networks of tens of milliseconds. */
    PROF_DM_RUN_OVERHEAD_MS,
    /* Channels at which a Winograd 3x3 convolution's transforms cost as
     * much as its multiplies, > 0: a tile's input transform is paid per
     * input channel and its output transform per output channel, its
     * multiplies per pair of them, so a conv3x3 layer's efficiency is its
     * class's / (1 + w / in_c + w / out_c). */
    PROF_DM_WINOGRAD_CHANNELS,
    /* Pooling layers' (max, average, global average) share of the core
     * peak, > 0: a window's compare or add per MAC. Fitted for runtime
     * "edgefit" only, whose micro-suite times pools alone; for the
     * published runtimes, whose networks' pools are a sliver of their
     * time, it is tied to eff_depthwise (the price pools had before). */
    PROF_DM_EFF_POOL,
};
#define PROF_DM_PARAM_COUNT 15

/* "eff_depthwise", ..., "f16_speedup": the devices CSV's column names.
 * NULL outside the enum. */
PROF_API const char *prof_dm_param_name(enum prof_dm_param k);

enum prof_dm_combine { PROF_DM_MAX = 0, PROF_DM_SUM = 1 };

#define PROF_DM_RUNTIME_MAX 32

/* A fitted model of one runtime on one device. */
struct prof_devmodel {
    struct prof_device device;          /* the roofs it scales */
    char runtime[PROF_DM_RUNTIME_MAX];  /* "edgefit", "ncnn", ... */
    double param[PROF_DM_PARAM_COUNT];  /* physical values (see above) */
    enum prof_dm_combine combine;
    /* The interval: a prediction t is given as [t x interval_low,
     * t x interval_high], the 10th and 90th percentiles of measured /
     * predicted in leave-one-model-out cross-validation (or of the fit's
     * own residuals when it saw one model); 1 and 1 when unknown. */
    double interval_low, interval_high;
    size_t samples;          /* measurements it was fitted on */
    double rms_log_residual; /* of the fit, natural log units */
};

/* One layer as the model sees it, per sample. */
struct prof_dm_layer {
    enum prof_op_class op_class;
    uint64_t macs;             /* per sample */
    uint64_t act_elements;     /* inputs + output elements per sample */
    uint64_t param_count;      /* read once per run, whatever the batch */
    uint64_t out_elements;     /* output elements per sample */
    uint64_t in_channels;      /* a convolution's, else 0 */
    uint64_t out_channels;     /* a convolution's, else 0 */
    /* A layer whose operator edgefit's executor splits among threads
     * when it has PROF_EXEC_THREAD_MIN_MACS units of work (split_work) at
     * the batch (conv2d, dense and the pools; runtime edgefit's model runs
     * the others on one thread). */
    bool threaded;
    /* Work per sample as that threshold counts it: the MACs, or a pool's
     * window reads (output elements times the window's). */
    uint64_t split_work;
    /* The layer's activation (fused or its own) as MAC-equivalents per
     * sample at the fp32 peak: output elements times the activation's
     * cost (prof_dm_act_cost); 0 for none and for the ones that cost no
     * more than their bytes (relu, relu6, clip, the hard ones). */
    uint64_t act_work;
};

/* An activation's time per element in MACs at the fp32 peak, measured on
 * edgefit's AVX-512 kernels (silu 25, sigmoid 20, tanh 30, GELU 22,
 * softplus 40; the others their nearest kind's); 0 for the ones bound by
 * their bytes. */
PROF_API unsigned prof_dm_act_cost(enum memest_act a);

/* A network: its layers that do work (views are left out). */
struct prof_dm_net {
    char name[128];
    size_t count;
    struct prof_dm_layer *layers;
};

/* The layers of model (libmemest's counts). PROF_E_INVALID for NULL,
 * PROF_E_NOMEM. Release with prof_dm_net_free(). */
PROF_API int prof_dm_net_from_model(const memest_model *model,
                                    struct prof_dm_net *out);
PROF_API void prof_dm_net_free(struct prof_dm_net *net); /* NULL ok */

/* A measurement of a network (or, to predict, the conditions only). */
struct prof_dm_case {
    const struct prof_dm_net *net;
    unsigned threads;                /* >= 1 */
    enum memest_precision precision; /* fp32, fp16, bf16, int8 */
    uint64_t batch;                  /* >= 1 */
    double measured_ms;              /* > 0 (unused to predict) */
    /* The device measured (a fit across devices, prof_dm_fit_prior);
     * NULL: the fit's or the model's device. */
    const struct prof_device *device;
};

/* The parameters a fit starts from and is pulled towards (a weak prior,
 * so that a parameter the data do not constrain, an int8 speed-up with
 * only fp32 data, stays at a plausible value), for dev. */
PROF_API void prof_dm_defaults(const struct prof_device *dev,
                               const char *runtime,
                               struct prof_devmodel *out);

/* Predict one case: *ms, and when not NULL the interval. PROF_E_INVALID
 * for NULL, PROF_E_RANGE for threads or batch 0, a bad precision or an
 * invalid model. */
PROF_API int prof_dm_predict(const struct prof_devmodel *m,
                             const struct prof_dm_case *c, double *ms,
                             double *low_ms, double *high_ms);

/* The plain roofline of a case on dev, a lower bound: per layer the
 * larger of its MACs at the precision's peak on min(threads, cores)
 * cores and its bytes at the all-core bandwidth, summed. */
PROF_API int prof_dm_roofline_bound(const struct prof_device *dev,
                                    const struct prof_dm_case *c,
                                    double *ms);

/*
 * Fit a model of runtime on dev to n >= 1 measurements: least squares on
 * log(predicted / measured) by Levenberg-Marquardt over the parameters in
 * log space (logit for the parallel fraction), with the weak prior of
 * prof_dm_defaults() (one pseudo-measurement per parameter); both
 * combinations are fitted and the one with the smaller residual kept.
 * Deterministic. interval_low/high come from the fit's own residuals
 * (prof_dm_cross_validate() gives honest ones). PROF_E_INVALID for NULL
 * or n 0, PROF_E_RANGE for a bad case (diag says which), PROF_E_NOMEM.
 */
PROF_API int prof_dm_fit(const struct prof_device *dev, const char *runtime,
                         const struct prof_dm_case *cases, size_t n,
                         struct prof_devmodel *out, struct prof_diag *diag);

/*
 * prof_dm_fit() pulled towards prior's parameters (NULL: the defaults'
 * weak prior) with a spread of prior_sigma (natural log units, > 0) per
 * parameter, each prior residual weighing as one measurement: a board
 * with few measurements leans on what the runtime does on other boards.
 * A case whose device is set is predicted on it (a fit across boards).
 */
PROF_API int prof_dm_fit_prior(const struct prof_device *dev,
                               const char *runtime,
                               const struct prof_dm_case *cases, size_t n,
                               const struct prof_devmodel *prior,
                               double prior_sigma, struct prof_devmodel *out,
                               struct prof_diag *diag);

/*
 * Leave-one-network-out cross-validation of one runtime on several boards
 * at once. cases[i] (its device set) belongs to group[i] < ngroups, one
 * group per board. For each distinct net: fit the runtime across every
 * board without that net (the pooled fit), then each board's model on
 * its own cases without the net, pulled towards the pooled fit
 * (prior_sigma, as prof_dm_fit_prior), and predict the net's cases
 * (predicted_ms[i], NaN when a board has no other net). Then fit every
 * group on all its cases the same way into models[g] (device: the
 * group's first case's), with the interval from its cross-validated
 * residuals. The held-out net never reaches any fit that predicts it.
 */
PROF_API int prof_dm_cross_validate_pooled(const char *runtime,
                                           const struct prof_dm_case *cases,
                                           const size_t *group, size_t n,
                                           size_t ngroups, double prior_sigma,
                                           double *predicted_ms,
                                           struct prof_devmodel *models,
                                           struct prof_diag *diag);

/*
 * Leave-one-network-out cross-validation: for each distinct net among
 * cases, fit on the cases of the other nets and predict its cases into
 * predicted_ms[i] (NaN when no other net is left). Then fit on all and
 * set out's interval from the cross-validated residuals. Statuses as
 * prof_dm_fit().
 */
PROF_API int prof_dm_cross_validate(const struct prof_device *dev,
                                    const char *runtime,
                                    const struct prof_dm_case *cases,
                                    size_t n, double *predicted_ms,
                                    struct prof_devmodel *out,
                                    struct prof_diag *diag);

#ifdef __cplusplus
}
#endif

#endif /* EDGEFIT_PROFILE_H */
