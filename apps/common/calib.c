#include <getopt.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include <csv.h>

#include "calib.h"
#include "cli.h"
#include "edgefit/artifacts.h"
#include "edgefit/kernels.h"
#include "edgefit/memest.h"
#include "alloc_rec.h" /* last: it wraps malloc and co. */

/* Bumped when the stored fields change: an old file is then remeasured. */
#define CACHE_VERSION 2

void cli_calib_opts_init(struct cli_calib_opts *o)
{
    prof_calib_opts_init(&o->prof);
    o->recalibrate = false;
}

int cli_calib_option(int c, struct cli_calib_opts *o)
{
    double mib = 0.0;
    switch (c) {
    case CLI_OPT_RECALIBRATE:
        o->recalibrate = true;
        return 1;
    case CLI_OPT_TRIAD_MIB:
        /* At least 1 MiB: a main-memory triad must not fit a cache. */
        if (!cli_parse_double("--triad-mib", optarg, 1.0, 1048576.0, &mib)) {
            return -1;
        }
        o->prof.triad_bytes = (uint64_t)(mib * 1048576.0);
        return 1;
    default:
        return 0;
    }
}

int cli_calib_key(char *buf, size_t len)
{
    char model[256];
    cli_cpu_model(model, sizeof model);
    const int n = snprintf(buf, len, "paths=%s; flags=0x%x; cpu=%s",
                           kern_built_paths(), kern_cpu_flags(), model);
    return n >= 0 && (size_t)n < len ? 0 : -1;
}

int cli_calib_cache_path(const char *key, char **out)
{
    *out = NULL;
    const char *xdg = getenv("XDG_CACHE_HOME");
    const char *home = getenv("HOME");
    const char *base = xdg && xdg[0] == '/' ? xdg
                       : home && home[0] == '/' ? home : NULL;
    if (!base) {
        return 0; /* no cache folder: nothing kept */
    }
    /* One file per key, so that builds with other kernel paths (a
     * -Dsimd=disabled build beside the default one, KERN_CPU_MASK) keep
     * their own figures instead of measuring over each other's. The key
     * itself is stored and compared: the checksum only names the file. */
    char name[32];
    const uLong sum = crc32(0L, (const Bytef *)key, (uInt)strlen(key));
    snprintf(name, sizeof name, "host-%08lx.json", sum & 0xffffffffUL);
    char *cache = base == xdg ? NULL : art_path_join(home, ".cache");
    char *dir = base == xdg ? art_path_join(xdg, "edgefit")
                : cache ? art_path_join(cache, "edgefit") : NULL;
    *out = dir ? art_path_join(dir, name) : NULL;
    free(cache);
    free(dir);
    if (!*out) {
        cli_error("out of memory: the calibration cache's file name "
                  "(%zu bytes)", strlen(base) + 32);
        return -1;
    }
    return 0;
}

void cli_cpu_model(char *buf, size_t len)
{
    snprintf(buf, len, "unknown");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) {
        return;
    }
    /* x86 and 32-bit ARM kernels write "model name"; a 64-bit ARM kernel
     * writes none, only the core's "CPU implementer" and "CPU part" (and a
     * board "Model" line on a Raspberry Pi), which then name the CPU. */
    char line[512], board[160] = "", impl[32] = "", part[32] = "";
    bool named = false;
    while (fgets(line, sizeof line, f)) {
        const char *v = strchr(line, ':');
        if (!v) {
            continue;
        }
        v++;
        while (*v == ' ' || *v == '\t') {
            v++;
        }
        const int vl = (int)strcspn(v, "\n");
        if (strncmp(line, "model name", 10) == 0) {
            snprintf(buf, len, "%.*s", vl, v);
            named = true;
            break;
        }
        if (strncmp(line, "Model", 5) == 0 && !board[0]) {
            snprintf(board, sizeof board, "%.*s", vl, v);
        } else if (strncmp(line, "CPU implementer", 15) == 0 && !impl[0]) {
            snprintf(impl, sizeof impl, "%.*s", vl, v);
        } else if (strncmp(line, "CPU part", 8) == 0 && !part[0]) {
            snprintf(part, sizeof part, "%.*s", vl, v);
        }
    }
    fclose(f);
    if (!named && impl[0] && part[0]) {
        snprintf(buf, len, "%s%sCPU implementer %s, part %s", board,
                 board[0] ? ", " : "", impl, part);
    }
}

/* The static names a prof_peak.path can take. */
static const char *path_name(const char *s)
{
    static const char *const names[] = {"avx512", "avx2", "c", "sgemm",
                                        "f16+sgemm", "q8_gemm"};
    for (size_t i = 0; s && i < sizeof names / sizeof names[0]; i++) {
        if (strcmp(s, names[i]) == 0) {
            return names[i];
        }
    }
    return NULL;
}

static json_t *peak_json(const struct prof_peak *p)
{
    return json_pack("{s:f, s:f, s:f, s:s, s:I}", "gmacs", p->gmacs,
                     "gmacs_min", p->gmacs_min, "gmacs_max", p->gmacs_max,
                     "path", p->path ? p->path : "", "runs",
                     (json_int_t)p->runs);
}

static bool peak_from(json_t *j, struct prof_peak *p)
{
    const char *path = NULL;
    json_int_t runs = 0;
    if (json_unpack(j, "{s:F, s:F, s:F, s:s, s:I}", "gmacs", &p->gmacs,
                    "gmacs_min", &p->gmacs_min, "gmacs_max", &p->gmacs_max,
                    "path", &path, "runs", &runs) != 0) {
        return false;
    }
    p->path = path_name(path);
    p->runs = (unsigned)runs;
    return p->path && p->gmacs > 0.0 && isfinite(p->gmacs);
}

static json_t *cal_json(const struct prof_calibration *c, const char *key,
                        const char *model, const struct cli_calib_opts *o)
{
    json_t *levels = json_array();
    for (unsigned i = 0; levels && i < c->level_count; i++) {
        const struct prof_mem_level *l = &c->levels[i];
        json_array_append_new(levels, json_pack(
            "{s:I, s:I, s:f, s:f, s:f, s:I, s:I, s:I, s:I}",
            "level", (json_int_t)l->level,
            "capacity_bytes", (json_int_t)l->capacity_bytes,
            "gbps", l->triad.gbps, "gbps_min", l->triad.gbps_min,
            "gbps_max", l->triad.gbps_max,
            "array_bytes", (json_int_t)l->triad.array_bytes,
            "total_bytes", (json_int_t)l->triad.total_bytes,
            "elements", (json_int_t)l->triad.elements,
            "runs", (json_int_t)l->triad.runs));
    }
    return json_pack(
        "{s:i, s:s, s:s, s:I, s:s, s:s, s:I, s:I, s:o, s:o, s:o, s:o, s:o, "
        "s:I, s:I, s:I, s:I, s:o, s:I, s:I, s:s}",
        "version", CACHE_VERSION, "key", key, "cpu_model", model,
        "cpu_flags", (json_int_t)kern_cpu_flags(), "kernel_path",
        kern_cpu_path_name(kern_cpu_flags()), "kernel_paths_built",
        kern_built_paths(), "triad_request_bytes",
        (json_int_t)o->prof.triad_bytes, "trials", (json_int_t)o->prof.trials,
        "peak", peak_json(&c->peak), "fma", peak_json(&c->fma), "sgemm",
        peak_json(&c->sgemm), "f16", peak_json(&c->f16), "int8",
        peak_json(&c->int8), "l1_bytes", (json_int_t)c->l1_bytes, "l2_bytes",
        (json_int_t)c->l2_bytes, "l3_bytes", (json_int_t)c->l3_bytes,
        "memory_mb", (json_int_t)c->memory_mb, "levels", levels,
        "order_retries", (json_int_t)c->order_retries, "order_fixed",
        (json_int_t)c->order_fixed, "order_note", c->order_note);
}

/* The cached calibration when the file's key is this build's and this
 * machine's (cli_calib_key()) and its options are o's. */
static bool cache_read(const char *path, const char *key,
                       const struct cli_calib_opts *o,
                       struct prof_calibration *out)
{
    json_t *j = json_load_file(path, 0, NULL);
    if (!j) {
        return false;
    }
    struct prof_calibration c;
    memset(&c, 0, sizeof c);
    int version = 0;
    const char *k = NULL, *note = NULL;
    json_int_t flags = -1, req = -1, trials = -1, l1, l2, l3, mem, retries,
               fixed;
    json_t *peak, *fma, *sgemm, *f16, *int8, *levels;
    bool ok = json_unpack(
        j, "{s:i, s:s, s:I, s:I, s:I, s:o, s:o, s:o, s:o, s:o, s:I, s:I, "
           "s:I, s:I, s:o, s:I, s:I, s:s}",
        "version", &version, "key", &k, "cpu_flags", &flags,
        "triad_request_bytes", &req, "trials", &trials, "peak", &peak,
        "fma", &fma, "sgemm", &sgemm, "f16", &f16, "int8", &int8,
        "l1_bytes", &l1, "l2_bytes", &l2, "l3_bytes", &l3, "memory_mb",
        &mem, "levels", &levels, "order_retries", &retries, "order_fixed",
        &fixed, "order_note", &note) == 0;
    ok = ok && version == CACHE_VERSION && strcmp(k, key) == 0 &&
         flags == (json_int_t)kern_cpu_flags() &&
         req == (json_int_t)o->prof.triad_bytes &&
         trials == (json_int_t)o->prof.trials;
    ok = ok && peak_from(peak, &c.peak) && peak_from(fma, &c.fma) &&
         peak_from(sgemm, &c.sgemm) && peak_from(f16, &c.f16) &&
         peak_from(int8, &c.int8);
    const size_t n = ok ? json_array_size(levels) : 0;
    ok = ok && n >= 1 && n <= PROF_MEM_LEVELS_MAX;
    for (size_t i = 0; ok && i < n; i++) {
        struct prof_mem_level *l = &c.levels[i];
        json_int_t lv, cap, ab, tb, el, runs;
        ok = json_unpack(json_array_get(levels, i),
                         "{s:I, s:I, s:F, s:F, s:F, s:I, s:I, s:I, s:I}",
                         "level", &lv, "capacity_bytes", &cap, "gbps",
                         &l->triad.gbps, "gbps_min", &l->triad.gbps_min,
                         "gbps_max", &l->triad.gbps_max, "array_bytes", &ab,
                         "total_bytes", &tb, "elements", &el, "runs",
                         &runs) == 0 &&
             lv >= 0 && lv <= 3 && cap >= 0 && ab >= 0 && tb >= 0 &&
             el >= 0 && runs >= 0 && l->triad.gbps > 0.0 &&
             isfinite(l->triad.gbps);
        if (ok) {
            l->level = (unsigned)lv;
            l->capacity_bytes = (uint64_t)cap;
            l->triad.array_bytes = (uint64_t)ab;
            l->triad.total_bytes = (uint64_t)tb;
            l->triad.elements = (uint64_t)el;
            l->triad.runs = (unsigned)runs;
        }
    }
    /* Main memory last, as prof_calibrate() leaves it. */
    ok = ok && c.levels[n - 1].level == 0;
    if (ok) {
        c.level_count = (unsigned)n;
        c.triad = c.levels[n - 1].triad;
        c.knee_mac_per_byte = c.peak.gmacs / c.triad.gbps;
        c.l1_bytes = (uint64_t)l1;
        c.l2_bytes = (uint64_t)l2;
        c.l3_bytes = (uint64_t)l3;
        c.memory_mb = (uint64_t)mem;
        c.trials = (unsigned)trials;
        c.order_retries = (unsigned)retries;
        c.order_fixed = (unsigned)fixed;
        snprintf(c.order_note, sizeof c.order_note, "%s", note);
        *out = c;
    }
    json_decref(j);
    return ok;
}

static int dump_json(const void *obj, FILE *f)
{
    const size_t flags = JSON_INDENT(2) | JSON_REAL_PRECISION(17);
    return json_dumpf((json_t *)obj, f, flags) == 0 && fputc('\n', f) != EOF
               ? ART_OK
               : ART_E_IO;
}

static void cache_write(const char *path, const char *key,
                        const char *model, const struct cli_calib_opts *o,
                        const struct prof_calibration *c)
{
    json_t *j = cal_json(c, key, model, o);
    char *dir = strdup(path);
    char *slash = dir ? strrchr(dir, '/') : NULL;
    struct art_diag diag = {0, "", 0};
    int st = j && slash ? ART_OK : ART_E_NOMEM;
    if (st == ART_OK) {
        *slash = '\0';
        st = art_mkdir_p(dir, &diag);
    }
    art_atomic *a = NULL;
    if (st == ART_OK) {
        st = art_atomic_open(path, &a, &diag);
    }
    if (st == ART_OK) {
        st = dump_json(j, art_atomic_file(a));
        if (st == ART_OK) {
            st = art_atomic_commit(a, &diag);
        } else {
            art_atomic_abort(a);
        }
    }
    /* Not an error: the run has its calibration; the next one measures
     * again. The reason is the system's when there is one. */
    if (st != ART_OK) {
        cli_warn("calibration cache not written: %s",
                 diag.message[0] ? diag.message : art_strerror(st));
    }
    free(dir);
    json_decref(j);
}

int cli_host_calibration(const struct cli_calib_opts *o,
                         struct prof_calibration *out, bool *from_cache)
{
    char model[256], key[CLI_CALIB_KEY_MAX];
    cli_cpu_model(model, sizeof model);
    /* A key too long to store is no key: measure, and keep no file. */
    const bool keyed = cli_calib_key(key, sizeof key) == 0;
    struct cli_calib_opts eff = *o;
    if (eff.prof.trials == 0) {
        eff.prof.trials = 5;
    }
    char *path = NULL;
    *from_cache = false;
    if (keyed && cli_calib_cache_path(key, &path) != 0) {
        /* a cache there is, but no memory for its name: calibrating
         * afresh instead would change the answer */
        return PROF_E_NOMEM;
    }
    if (path && !eff.recalibrate && cache_read(path, key, &eff, out)) {
        *from_cache = true;
    } else {
        const int st = prof_calibrate(&eff.prof, out);
        if (st != PROF_OK) {
            free(path);
            return st;
        }
        if (path) {
            cache_write(path, key, model, &eff, out);
        }
    }
    free(path);
    if (!*from_cache && out->order_fixed) {
        cli_warn("calibration: %s", out->order_note);
    }
    return prof_host_calibration_set(out);
}

void cli_version_details(FILE *f)
{
    fprintf(f, "libraries: edgefit-memest %s, edgefit-profile %s\n",
            memest_version(), prof_version());
    fprintf(f, "kernel paths: built %s; selected %s on this CPU "
               "(KERN_CPU_MASK can lower it)\n",
            kern_built_paths(), kern_cpu_path_name(kern_cpu_flags()));
    fprintf(f, "dependencies: jansson %s, libcsv %d.%d.%d, zlib %s\n",
            jansson_version_str(), CSV_MAJOR, CSV_MINOR, CSV_RELEASE,
            zlibVersion());
}

int cli_shared_option(int c, struct cli_calib_opts *calib,
                      struct cli_device_opts *dev, const struct cli_app *app,
                      char **argv, struct cli_common *co)
{
    int v = calib ? cli_calib_option(c, calib) : 0;
    if (v == 0 && dev) {
        v = cli_device_option(c, dev);
    }
    if (v != 0) {
        return v < 0 ? CLI_EXIT_USAGE : CLI_EXIT_OK;
    }
    return cli_common_option(c, app, argv, co);
}
