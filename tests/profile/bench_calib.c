/* The host's calibration at full size (triad arrays 2 x the last-level
 * cache unless PROF_TRIAD_MIB says otherwise) and the peak of every FMA
 * path this CPU has, as ratios to the C loop. A benchmark, not a test:
 * `meson test --benchmark --suite profile`. */
#include <stdio.h>

#include "edgefit/kernels.h"
#include "edgefit/profile.h"

int main(void)
{
    const unsigned flags = kern_cpu_flags();
    const unsigned levels[3] = {0, KERN_CPU_AVX2,
                                KERN_CPU_AVX2 | KERN_CPU_AVX512};
    double c_rate = 0.0;
    for (int i = 0; i < 3; i++) {
        if ((flags & levels[i]) != levels[i]) {
            continue;
        }
        struct prof_peak p;
        const int st = prof_measure_peak(levels[i], 7, &p);
        if (st != PROF_OK) {
            fprintf(stderr, "peak: %s\n", prof_strerror(st));
            return 1;
        }
        if (i == 0) {
            c_rate = p.gmacs;
        }
        printf("peak %-7s %8.2f GMAC/s (%8.2f GFLOP/s) min %.2f max %.2f, "
               "%.1fx the C loop\n",
               p.path, p.gmacs, 2.0 * p.gmacs, p.gmacs_min, p.gmacs_max,
               c_rate > 0.0 ? p.gmacs / c_rate : 0.0);
    }
    struct prof_calibration cal;
    const int st = prof_host_calibration(&cal);
    if (st != PROF_OK) {
        fprintf(stderr, "calibration: %s\n", prof_strerror(st));
        return 1;
    }
    printf("host peak %.2f GMAC/s (%s), triad %.2f GB/s (min %.2f max "
           "%.2f) over 3 x %.1f MiB, knee %.2f MAC/byte\n",
           cal.peak.gmacs, cal.peak.path, cal.triad.gbps, cal.triad.gbps_min,
           cal.triad.gbps_max, (double)cal.triad.array_bytes / 1048576.0,
           cal.knee_mac_per_byte);
    for (unsigned i = 0; i < cal.level_count; i++) {
        const struct prof_mem_level *l = &cal.levels[i];
        printf("level %s%u triad %8.2f GB/s (min %.2f max %.2f) over "
               "%.1f KiB, %.1fx main memory\n",
               l->level ? "L" : "memory ", l->level, l->triad.gbps,
               l->triad.gbps_min, l->triad.gbps_max,
               (double)l->triad.total_bytes / 1024.0,
               l->triad.gbps / cal.triad.gbps);
    }
    printf("caches L1 %llu KiB, L2 %llu KiB, L3 %llu KiB; memory %llu MB\n",
           (unsigned long long)(cal.l1_bytes >> 10),
           (unsigned long long)(cal.l2_bytes >> 10),
           (unsigned long long)(cal.l3_bytes >> 10),
           (unsigned long long)cal.memory_mb);
    return 0;
}
