#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "devices.h"
#include "table.h"
#include "edgefit/artifacts.h"
#include "alloc_rec.h" /* last: it wraps malloc and co. */

enum dev_col {
    C_NAME, C_BANDWIDTH, C_PEAK, C_POWER, C_MEMORY, C_CORES,
    /* the device model's (edgefit-device): figures, then the fit */
    C_PEAK16, C_PEAK8, C_BW1, C_RUNTIME, C_COMBINE,
    C_PARAM0, C_ILOW = C_PARAM0 + PROF_DM_PARAM_COUNT, C_IHIGH, C_SAMPLES,
    C_RMS, C_COUNT
};

static const char *col_names[C_COUNT] = {
    "name", "bandwidth_gbps", "peak_gmacs", "power_watts", "memory_mb",
    "cores", "peak_gmacs_f16", "peak_gmacs_int8", "bandwidth_1core_gbps",
    "runtime", "combine",
    [C_ILOW] = "interval_low", [C_IHIGH] = "interval_high",
    [C_SAMPLES] = "samples", [C_RMS] = "rms_log_residual",
};

static void fill_param_names(void)
{
    for (int k = 0; k < PROF_DM_PARAM_COUNT; k++) {
        col_names[C_PARAM0 + k] = prof_dm_param_name((enum prof_dm_param)k);
    }
}

/* A fitted model's row (runtime set): checked and stored in out->models.
 * Returns false after the message. */
static bool load_model_row(const char *path, size_t line,
                           const char *const *text, const double *v,
                           const struct prof_device *dev,
                           struct cli_devices *out);

void cli_devices_free(struct cli_devices *d)
{
    if (!d) {
        return;
    }
    free(d->devs);
    free(d->lines);
    free(d->models);
    free(d->model_lines);
    memset(d, 0, sizeof *d);
}

/* A cell as the CSV held it (numbers come back in the shortest form that
 * reads back to the same value), in buf; "" when empty. */
static const char *cell_text(const art_table *t, size_t row, size_t col,
                             char *buf, size_t len)
{
    if (!art_table_is_set(t, row, col)) {
        return "";
    }
    const size_t need = art_table_format_cell(t, row, col, buf, len);
    return need < len ? buf : NULL;
}

/* A finite number in the normal range of a double: NULL and *out set, or
 * what is wrong with text. (strtod says ERANGE for both overflow and
 * underflow; a subnormal or a value rounded to zero is "out of range", not
 * "not finite".) */
static const char *parse_number(const char *text, double *out)
{
    char *end = NULL;
    errno = 0;
    const double v = strtod(text, &end);
    if (end == text || *end != '\0' || isnan(v)) {
        return "is not a number";
    }
    if (isinf(v) && errno != ERANGE) {
        return "is not a finite number";
    }
    if (errno == ERANGE || (v != 0.0 && !isnormal(v))) {
        return fabs(v) > 1.0 ? "is out of range (too large for a double)"
                             : "is out of range (too small: below the "
                               "smallest normal double)";
    }
    *out = v;
    return NULL;
}

/* The ranges a device's figures must fall in: wide enough for anything
 * from a microcontroller (a few kB of RAM, tens of MB/s) to the largest
 * accelerator (HBM at a few TB/s, a million int8 GMAC/s) and for a
 * bandwidth "too high to matter" (1e6 GB/s), narrow enough that a typo
 * (1e308 GB/s, a memory in bytes given as MB) is caught rather than
 * turned into a prediction. 0 stays "unknown" for power and
 * memory. */
struct field_range {
    const char *name;
    const char *unit;
    double lo, hi;
    bool zero_unknown;
};

static const struct field_range ranges[] = {
    {"bandwidth_gbps", "GB/s", 1e-3, 1e6, false},
    {"peak_gmacs", "GMAC/s", 1e-6, 1e7, false},
    {"peak_gmacs_f16", "GMAC/s", 1e-6, 1e7, true},
    {"peak_gmacs_int8", "GMAC/s", 1e-6, 1e7, true},
    {"power_watts", "W", 1e-6, 1e5, true},
    {"memory_mb", "MB", 1e-3, 1e9, true},
};

/* The figures of d in the order of ranges[]. */
static void device_fields(const struct prof_device *d, double v[6])
{
    v[0] = d->bandwidth_gbps;
    v[1] = d->peak_gmacs;
    v[2] = d->peak_gmacs_f16;
    v[3] = d->peak_gmacs_int8;
    v[4] = d->power_watts;
    v[5] = d->memory_mb;
}

/* NULL when every figure of d is in its range, else "bandwidth_gbps
 * 1e+308 is out of range: accepted 0.001 to 100000 GB/s" in buf.
 * skip_speed: the bandwidth and the peak are not asked for (a memory
 * fit) and may be 0. */
static const char *check_ranges(const struct prof_device *d, bool skip_speed,
                                char *buf, size_t cap)
{
    double v[6];
    device_fields(d, v);
    for (size_t i = 0; i < sizeof ranges / sizeof ranges[0]; i++) {
        const struct field_range *r = &ranges[i];
        if ((r->zero_unknown || (skip_speed && i < 2)) && v[i] == 0.0) {
            continue;
        }
        if (!(v[i] >= r->lo && v[i] <= r->hi)) {
            snprintf(buf, cap,
                     "%s %g is out of range: accepted %.15g to %.15g %s%s",
                     r->name, v[i], r->lo, r->hi, r->unit,
                     r->zero_unknown ? " (or 0: unknown)" : "");
            return buf;
        }
    }
    return NULL;
}

bool cli_devices_load(const char *path, struct cli_devices *out)
{
    memset(out, 0, sizeof *out);
    out->path = path;
    fill_param_names();
    if (!cli_check_regular_file("--devices", path)) {
        return false;
    }
    art_table *t = NULL;
    struct art_diag ad = {0, "", 0};
    int st = art_table_load_csv(path, &t, &ad);
    if (st != ART_OK) {
        if (ad.sys_errno != 0) {
            cli_error("%s", ad.message); /* "path: reason" */
        } else if (ad.line > 0) {
            cli_error("%s:%d: %s", path, ad.line,
                      ad.message[0] ? ad.message : art_strerror(st));
        } else {
            cli_error("%s: %s", path,
                      ad.message[0] ? ad.message : art_strerror(st));
        }
        return false;
    }
    const long head = art_table_header_line(t);
    long cols[C_COUNT];
    for (int c = 0; c < C_COUNT; c++) {
        cols[c] = -1;
    }
    const size_t ncols = art_table_cols(t);
    for (size_t j = 0; j < ncols; j++) {
        const char *name = art_table_column_name(t, j);
        int c = 0;
        while (c < C_COUNT && strcmp(name, col_names[c]) != 0) {
            c++;
        }
        if (c == C_COUNT) {
            cli_error("%s:%ld: unknown column '%s' (expected name, "
                      "bandwidth_gbps, peak_gmacs, power_watts, memory_mb, "
                      "cores, or the device model's columns that "
                      "edgefit-device writes)",
                      path, head, name);
            goto fail;
        }
        cols[c] = (long)j; /* the loader rejects repeated column names */
    }
    for (int c = C_NAME; c <= C_PEAK; c++) {
        if (cols[c] < 0) {
            cli_error("%s:%ld: missing column '%s'", path, head,
                      col_names[c]);
            goto fail;
        }
    }
    const size_t rows = art_table_rows(t);
    if (rows == 0) {
        cli_error("%s:%ld: no devices after the header", path, head);
        goto fail;
    }
    out->devs = calloc(rows, sizeof *out->devs);
    out->lines = calloc(rows, sizeof *out->lines);
    out->models = calloc(rows, sizeof *out->models);
    out->model_lines = calloc(rows, sizeof *out->model_lines);
    if (!out->devs || !out->lines || !out->models || !out->model_lines) {
        cli_error("%s: out of memory", path);
        goto fail;
    }
    for (size_t r = 0; r < rows; r++) {
        /* The line in the file, blank lines counted. */
        const size_t line = (size_t)art_table_row_line(t, r);
        char buf[C_COUNT][128];
        const char *text[C_COUNT];
        for (int c = 0; c < C_COUNT; c++) {
            text[c] = cols[c] < 0 ? ""
                                  : cell_text(t, r, (size_t)cols[c], buf[c],
                                              sizeof buf[c]);
            if (!text[c]) {
                cli_error("%s:%zu: %s: value too long", path, line,
                          col_names[c]);
                goto fail;
            }
        }
        if (text[C_NAME][0] == '\0' || strpbrk(text[C_NAME], "\r\n")) {
            cli_error("%s:%zu: name: a device needs a one-line name", path,
                      line);
            goto fail;
        }
        double v[C_COUNT] = {0};
        const bool model_row = text[C_RUNTIME][0] != '\0';
        for (int c = C_BANDWIDTH; c < C_COUNT; c++) {
            if (c == C_RUNTIME || c == C_COMBINE) {
                continue; /* text */
            }
            if (text[c][0] == '\0' && c >= C_POWER) {
                if (model_row && c >= C_PARAM0) {
                    cli_error("%s:%zu: %s: a fitted model needs every "
                              "parameter", path, line, col_names[c]);
                    goto fail;
                }
                continue; /* unknown; cores: 1 */
            }
            const char *why = parse_number(text[c], &v[c]);
            if (why) {
                cli_error("%s:%zu: %s: '%s' %s", path, line, col_names[c],
                          text[c], why);
                goto fail;
            }
        }
        if (model_row) {
            struct prof_device dev;
            struct prof_diag pd = {0, ""};
            st = prof_device_make(text[C_NAME], v[C_BANDWIDTH], v[C_PEAK],
                                  v[C_POWER], v[C_MEMORY], &dev, &pd);
            if (st != PROF_OK) {
                cli_error("%s:%zu: %s", path, line,
                          pd.message[0] ? pd.message : prof_strerror(st));
                goto fail;
            }
            dev.cores = text[C_CORES][0] ? (unsigned)v[C_CORES] : 1;
            dev.peak_gmacs_f16 = v[C_PEAK16];
            dev.peak_gmacs_int8 = v[C_PEAK8];
            dev.bandwidth_1core_gbps = v[C_BW1];
            if (!load_model_row(path, line, text, v, &dev, out)) {
                goto fail;
            }
            /* a board of the user's own is defined by its model's row */
            bool known = strcmp(dev.name, "host") == 0;
            for (size_t k = 0; k < prof_device_catalog_count(); k++) {
                known |= strcmp(prof_device_catalog(k)->name, dev.name) == 0;
            }
            for (size_t k = 0; k < out->count; k++) {
                known |= strcmp(out->devs[k].name, dev.name) == 0;
            }
            if (!known) {
                out->devs[out->count] = dev;
                out->lines[out->count++] = line;
            }
            continue;
        }
        if (strcmp(text[C_NAME], "host") == 0) {
            cli_error("%s:%zu: name: 'host' is this machine, calibrated at "
                      "run time; choose another name",
                      path, line);
            goto fail;
        }
        /* A file device named like a catalogue one would silently change
         * what --device rpi4 means in one run and not the next: refused,
         * so a name always means one set of figures. */
        for (size_t k = 0; k < prof_device_catalog_count(); k++) {
            if (strcmp(prof_device_catalog(k)->name, text[C_NAME]) == 0) {
                cli_error("%s:%zu: name: '%s' is a built-in device "
                          "(--list-devices shows its figures); give yours "
                          "another name",
                          path, line, text[C_NAME]);
                goto fail;
            }
        }
        for (size_t k = 0; k < out->count; k++) {
            if (strcmp(out->devs[k].name, text[C_NAME]) == 0) {
                cli_error("%s:%zu: name: '%s' already given on line %zu",
                          path, line, text[C_NAME], out->lines[k]);
                goto fail;
            }
        }
        struct prof_diag pd = {0, ""};
        st = prof_device_make(text[C_NAME], v[C_BANDWIDTH], v[C_PEAK],
                              v[C_POWER], v[C_MEMORY], &out->devs[out->count],
                              &pd);
        if (st != PROF_OK) {
            cli_error("%s:%zu: %s", path, line,
                      pd.message[0] ? pd.message : prof_strerror(st));
            goto fail;
        }
        {
            char why[160];
            if (check_ranges(&out->devs[out->count], false, why,
                             sizeof why)) {
                cli_error("%s:%zu: %s", path, line, why);
                goto fail;
            }
        }
        if (text[C_CORES][0] != '\0') {
            if (v[C_CORES] < 1.0 || v[C_CORES] > PROF_DEVICE_CORES_MAX ||
                v[C_CORES] != floor(v[C_CORES])) {
                cli_error("%s:%zu: cores: '%s' is not a whole number from 1 "
                          "to %d", path, line, text[C_CORES],
                          PROF_DEVICE_CORES_MAX);
                goto fail;
            }
            out->devs[out->count].cores = (unsigned)v[C_CORES];
        }
        /* the device model's figures (0: unknown) */
        out->devs[out->count].peak_gmacs_f16 = v[C_PEAK16];
        out->devs[out->count].peak_gmacs_int8 = v[C_PEAK8];
        out->devs[out->count].bandwidth_1core_gbps = v[C_BW1];
        out->lines[out->count++] = line;
    }
    art_table_destroy(t);
    return true;
fail:
    art_table_destroy(t);
    cli_devices_free(out);
    return false;
}

static bool load_model_row(const char *path, size_t line,
                           const char *const *text, const double *v,
                           const struct prof_device *dev,
                           struct cli_devices *out)
{
    struct prof_devmodel *m = &out->models[out->model_count];
    prof_dm_defaults(dev, text[C_RUNTIME], m);
    if (strlen(text[C_RUNTIME]) >= sizeof m->runtime) {
        cli_error("%s:%zu: runtime: '%s' is too long", path, line,
                  text[C_RUNTIME]);
        return false;
    }
    if (strcmp(text[C_COMBINE], "max") == 0) {
        m->combine = PROF_DM_MAX;
    } else if (strcmp(text[C_COMBINE], "sum") == 0) {
        m->combine = PROF_DM_SUM;
    } else {
        cli_error("%s:%zu: combine: '%s' is not max or sum", path, line,
                  text[C_COMBINE]);
        return false;
    }
    for (int k = 0; k < PROF_DM_PARAM_COUNT; k++) {
        const double x = v[C_PARAM0 + k];
        if (!(x > 0.0) || (k == PROF_DM_PARALLEL && !(x < 1.0))) {
            cli_error("%s:%zu: %s: %g is outside its domain (above 0%s)",
                      path, line, col_names[C_PARAM0 + k], x,
                      k == PROF_DM_PARALLEL ? ", below 1" : "");
            return false;
        }
        m->param[k] = x;
    }
    m->interval_low = text[C_ILOW][0] ? v[C_ILOW] : 1.0;
    m->interval_high = text[C_IHIGH][0] ? v[C_IHIGH] : 1.0;
    if (!(m->interval_low > 0.0 && m->interval_low <= 1.0 &&
          m->interval_high >= 1.0)) {
        cli_error("%s:%zu: interval_low must be in (0, 1] and "
                  "interval_high at least 1", path, line);
        return false;
    }
    m->samples = (size_t)v[C_SAMPLES];
    m->rms_log_residual = v[C_RMS];
    /* A model of a built-in device holds for the figures it was fitted
     * on: the catalogue's (to the 6 digits edgefit-device writes), or it
     * is stale. */
    for (size_t k = 0; k < prof_device_catalog_count(); k++) {
        const struct prof_device *c = prof_device_catalog(k);
        if (strcmp(c->name, dev->name) == 0 &&
            (fabs(c->peak_gmacs - dev->peak_gmacs) >
                 1e-5 * c->peak_gmacs ||
             fabs(c->bandwidth_gbps - dev->bandwidth_gbps) >
                 1e-5 * c->bandwidth_gbps)) {
            cli_error("%s:%zu: '%s' was fitted on figures (%g GB/s, %g "
                      "GMAC/s) that are not the built-in device's (%g, "
                      "%g): fit it again (edgefit-device --fit)",
                      path, line, dev->name, dev->bandwidth_gbps,
                      dev->peak_gmacs, c->bandwidth_gbps, c->peak_gmacs);
            return false;
        }
    }
    for (size_t k = 0; k < out->model_count; k++) {
        if (strcmp(out->models[k].device.name, dev->name) == 0 &&
            strcmp(out->models[k].runtime, text[C_RUNTIME]) == 0) {
            cli_error("%s:%zu: '%s' with runtime '%s' already given on "
                      "line %zu", path, line, dev->name, text[C_RUNTIME],
                      out->model_lines[k]);
            return false;
        }
    }
    out->model_lines[out->model_count++] = line;
    return true;
}

const struct prof_devmodel *cli_devices_model(const struct cli_devices *d,
                                              const char *device,
                                              const char *runtime)
{
    for (size_t i = 0; d && i < d->model_count; i++) {
        if (strcmp(d->models[i].device.name, device) == 0 &&
            strcmp(d->models[i].runtime, runtime) == 0) {
            return &d->models[i];
        }
    }
    return NULL;
}

const struct prof_devmodel *cli_devices_pick(const struct cli_devices *d,
                                             const char *device,
                                             const char *runtime)
{
    for (size_t i = 0; d && i < d->model_count; i++) {
        if (strcmp(d->models[i].device.name, device) == 0 &&
            (!runtime || strcmp(d->models[i].runtime, runtime) == 0)) {
            return &d->models[i];
        }
    }
    return NULL;
}

void cli_device_column(const char *device, const char *suffix, char *buf,
                       size_t cap)
{
    size_t k = 0;
    for (const char *p = device; *p && k + 1 < cap; p++) {
        const unsigned char c = (unsigned char)*p;
        buf[k++] = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')
                       ? (char)c
                   : (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a')
                                            : '_';
    }
    buf[k] = '\0';
    snprintf(buf + k, cap - k, "_predicted_ms%s", suffix);
}

bool cli_device_resolve(const char *name, const struct cli_devices *d,
                        struct prof_device *out)
{
    for (size_t i = 0; d && i < d->count; i++) {
        if (strcmp(d->devs[i].name, name) == 0) {
            *out = d->devs[i];
            return true;
        }
    }
    struct prof_diag diag = {0, ""};
    const int st = prof_device_lookup(name, out, &diag);
    if (st != PROF_OK) {
        if (diag.message[0]) {
            cli_error("--device: %s%s%s", diag.message,
                      d ? "; or a device of " : "", d ? d->path : "");
        } else {
            cli_error("--device: '%s': %s", name, prof_strerror(st));
        }
        return false;
    }
    char why[160];
    if (check_ranges(out, false, why, sizeof why)) {
        cli_error("--device %s: %s", out->name, why);
        return false;
    }
    return true;
}

/* Whether the key=value list spec has key (spaces around keys allowed, as
 * prof_device_parse() reads them). */
static bool spec_has_key(const char *spec, const char *key)
{
    const size_t klen = strlen(key);
    const char *p = spec;
    for (;;) {
        while (*p == ' ' || *p == '\t') {
            p++;
        }
        const char *k = p;
        while (*p && *p != '=' && *p != ',') {
            p++;
        }
        const char *e = p;
        while (e > k && (e[-1] == ' ' || e[-1] == '\t')) {
            e--;
        }
        if ((size_t)(e - k) == klen && strncmp(k, key, klen) == 0) {
            return true;
        }
        p = strchr(p, ',');
        if (!p) {
            return false;
        }
        p++;
    }
}

bool cli_device_resolve_memory(const char *name, const struct cli_devices *d,
                               struct prof_device *out)
{
    const bool inline_spec = strchr(name, '=') != NULL;
    const bool has_bw = inline_spec && spec_has_key(name, "bandwidth_gbps");
    const bool has_peak = inline_spec && spec_has_key(name, "peak_gmacs");
    if (!inline_spec || (has_bw && has_peak)) {
        return cli_device_resolve(name, d, out);
    }
    /* A memory fit reads only the memory: the speed figures the parser
     * requires are given placeholders after the user's text (so that
     * the columns of its messages stay the user's), then cleared. */
    const size_t n = strlen(name);
    char *spec = malloc(n + 64);
    if (!spec) {
        cli_error("--device: out of memory");
        return false;
    }
    snprintf(spec, n + 64, "%s%s%s", name,
             has_bw ? "" : ",bandwidth_gbps=1", has_peak ? "" : ",peak_gmacs=1");
    struct prof_diag diag = {0, ""};
    const int st = prof_device_parse(spec, out, &diag);
    free(spec);
    if (st != PROF_OK) {
        cli_error("--device: %s", diag.message[0] ? diag.message
                                                  : prof_strerror(st));
        return false;
    }
    if (!has_bw) {
        out->bandwidth_gbps = 0.0;
    }
    if (!has_peak) {
        out->peak_gmacs = 0.0;
    }
    char why[160];
    if (check_ranges(out, true, why, sizeof why)) {
        cli_error("--device %s: %s", out->name, why);
        return false;
    }
    return true;
}

static void print_indented(FILE *f, const char *text)
{
    const char *p = text;
    while (*p) {
        const char *nl = strchr(p, '\n');
        const size_t len = nl ? (size_t)(nl - p) : strlen(p);
        fprintf(f, "    %.*s\n", (int)len, p);
        p += len + (nl ? 1 : 0);
    }
}

static void print_device(FILE *f, const struct prof_device *d)
{
    fprintf(f, "%s: bandwidth %g GB/s", d->name, d->bandwidth_gbps);
    if (d->bandwidth_1core_gbps > 0.0) {
        fprintf(f, " (one core %g)", d->bandwidth_1core_gbps);
    }
    fprintf(f, ", peak %g GMAC/s", d->peak_gmacs);
    if (d->peak_gmacs_f16 > 0.0 || d->peak_gmacs_int8 > 0.0) {
        fprintf(f, " (16-bit %g, int8 %g)",
                prof_device_peak(d, MEMEST_FP16),
                prof_device_peak(d, MEMEST_INT8));
    }
    fputs(", ", f);
    if (d->power_watts > 0.0) {
        fprintf(f, "power %g W", d->power_watts);
    } else {
        fprintf(f, "power unknown");
    }
    if (d->idle_watts > 0.0) {
        fprintf(f, " (idle %g W)", d->idle_watts);
    }
    fputs(", ", f);
    if (d->memory_mb > 0.0) {
        fprintf(f, "memory %g MB, ", d->memory_mb);
    } else {
        fprintf(f, "memory unknown, ");
    }
    fprintf(f, "%u core%s", prof_device_cores(d),
            prof_device_cores(d) == 1 ? "" : "s");
    if (d->clock_ghz > 0.0) {
        fprintf(f, " at %g GHz", d->clock_ghz);
    }
    /* cache sizes in KiB, the unit the sources state them in; a level
     * the device lacks (or whose size is unknown) is left out */
    const char *lvl[3] = {"L1d", "L2", "L3"};
    const uint64_t sz[3] = {d->l1d_bytes, d->l2_bytes, d->l3_bytes};
    for (int k = 0; k < 3; k++) {
        if (sz[k] > 0) {
            fprintf(f, ", %s %g KiB", lvl[k], (double)sz[k] / 1024.0);
        }
    }
    fputc('\n', f);
}

void cli_devices_list(FILE *f, const struct cli_devices *d)
{
    for (size_t i = 0; i < prof_device_catalog_count(); i++) {
        print_device(f, prof_device_catalog(i));
        print_indented(f, prof_device_catalog_source(i));
    }
    fprintf(f, "host: this machine, calibrated at run time\n");
    print_indented(f, "peak: the best of an FMA loop on the widest "
                      "instruction set and kern_sgemm; 16-bit and int8 "
                      "peaks from their kernels\n"
                      "bandwidth: STREAM triads sized for L1, L2, L3 and "
                      "main memory (cache-aware roofline)\n"
                      "power unknown (give --power-watts)");
    for (size_t i = 0; d && i < d->count; i++) {
        print_device(f, &d->devs[i]);
        fprintf(f, "    source: %s:%zu\n", d->path, d->lines[i]);
    }
}

/* ---- --list-devices --format json ----------------------------------------- */

struct dev_row {
    const struct prof_device *dev; /* NULL for "host": measured, no figures */
    char source[4096];
};

#define ROW(ctx, i) (&((const struct dev_row *)(ctx))[(i)])

static bool real_or_empty(double x, union cli_value *v)
{
    v->r = x;
    return x > 0.0;
}

static bool get_name(const void *ctx, size_t i, union cli_value *v)
{
    v->s = ROW(ctx, i)->dev ? ROW(ctx, i)->dev->name : "host";
    return true;
}

static bool get_bw(const void *ctx, size_t i, union cli_value *v)
{
    const struct prof_device *d = ROW(ctx, i)->dev;
    return d && real_or_empty(d->bandwidth_gbps, v);
}

static bool get_peak(const void *ctx, size_t i, union cli_value *v)
{
    const struct prof_device *d = ROW(ctx, i)->dev;
    return d && real_or_empty(d->peak_gmacs, v);
}

static bool get_peak16(const void *ctx, size_t i, union cli_value *v)
{
    const struct prof_device *d = ROW(ctx, i)->dev;
    return d && real_or_empty(prof_device_peak(d, MEMEST_FP16), v);
}

static bool get_peak8(const void *ctx, size_t i, union cli_value *v)
{
    const struct prof_device *d = ROW(ctx, i)->dev;
    return d && real_or_empty(prof_device_peak(d, MEMEST_INT8), v);
}

static bool get_bw1(const void *ctx, size_t i, union cli_value *v)
{
    const struct prof_device *d = ROW(ctx, i)->dev;
    return d && real_or_empty(d->bandwidth_1core_gbps, v);
}

static bool get_clock(const void *ctx, size_t i, union cli_value *v)
{
    const struct prof_device *d = ROW(ctx, i)->dev;
    return d && real_or_empty(d->clock_ghz, v);
}

static bool get_idle(const void *ctx, size_t i, union cli_value *v)
{
    const struct prof_device *d = ROW(ctx, i)->dev;
    return d && real_or_empty(d->idle_watts, v);
}

/* a cache size, empty when unknown (0) */
static bool cache_or_empty(uint64_t bytes, union cli_value *v)
{
    v->u = bytes;
    return bytes > 0;
}

static bool get_l1d(const void *ctx, size_t i, union cli_value *v)
{
    const struct prof_device *d = ROW(ctx, i)->dev;
    return d && cache_or_empty(d->l1d_bytes, v);
}

static bool get_l2(const void *ctx, size_t i, union cli_value *v)
{
    const struct prof_device *d = ROW(ctx, i)->dev;
    return d && cache_or_empty(d->l2_bytes, v);
}

static bool get_l3(const void *ctx, size_t i, union cli_value *v)
{
    const struct prof_device *d = ROW(ctx, i)->dev;
    return d && cache_or_empty(d->l3_bytes, v);
}

static bool get_power(const void *ctx, size_t i, union cli_value *v)
{
    const struct prof_device *d = ROW(ctx, i)->dev;
    return d && real_or_empty(d->power_watts, v);
}

static bool get_memory(const void *ctx, size_t i, union cli_value *v)
{
    const struct prof_device *d = ROW(ctx, i)->dev;
    return d && real_or_empty(d->memory_mb, v);
}

static bool get_cores(const void *ctx, size_t i, union cli_value *v)
{
    const struct prof_device *d = ROW(ctx, i)->dev;
    v->u = prof_device_cores(d);
    return d != NULL;
}

static bool get_source(const void *ctx, size_t i, union cli_value *v)
{
    v->s = ROW(ctx, i)->source;
    return true;
}

static const struct cli_column device_cols[] = {
    {"name", ART_TEXT, get_name, CLI_COL_BRIEF},
    {"bandwidth_gbps", ART_REAL, get_bw, CLI_COL_BRIEF},
    {"peak_gmacs", ART_REAL, get_peak, CLI_COL_BRIEF},
    {"peak_gmacs_f16", ART_REAL, get_peak16, CLI_COL_BRIEF},
    {"peak_gmacs_int8", ART_REAL, get_peak8, CLI_COL_BRIEF},
    {"power_watts", ART_REAL, get_power, CLI_COL_BRIEF},
    {"memory_mb", ART_REAL, get_memory, CLI_COL_BRIEF},
    {"cores", ART_UINT, get_cores, CLI_COL_BRIEF},
    {"clock_ghz", ART_REAL, get_clock, CLI_COL_ALL},
    {"bandwidth_1core_gbps", ART_REAL, get_bw1, CLI_COL_ALL},
    {"idle_watts", ART_REAL, get_idle, CLI_COL_ALL},
    {"l1d_bytes", ART_UINT, get_l1d, CLI_COL_ALL},
    {"l2_bytes", ART_UINT, get_l2, CLI_COL_ALL},
    {"l3_bytes", ART_UINT, get_l3, CLI_COL_ALL},
    {"source", ART_TEXT, get_source, CLI_COL_ALL},
};

int cli_devices_print(enum cli_format format, const struct cli_devices *d)
{
    if (format == CLI_FORMAT_TABLE) {
        cli_devices_list(stdout, d);
        return cli_stdout_finish(ART_OK);
    }
    const size_t ncat = prof_device_catalog_count();
    const size_t n = ncat + 1 + (d ? d->count : 0);
    struct dev_row *rows = calloc(n, sizeof *rows);
    if (!rows) {
        cli_error("out of memory: the device list's rows");
        return CLI_EXIT_FAILURE;
    }
    for (size_t i = 0; i < ncat; i++) {
        rows[i].dev = prof_device_catalog(i);
        /* one line per figure becomes "; " in a cell */
        const char *src = prof_device_catalog_source(i);
        size_t k = 0;
        for (; *src && k + 3 < sizeof rows[i].source; src++) {
            if (*src == '\n') {
                rows[i].source[k++] = ';';
                rows[i].source[k++] = ' ';
            } else {
                rows[i].source[k++] = *src;
            }
        }
        rows[i].source[k] = '\0';
    }
    snprintf(rows[ncat].source, sizeof rows[ncat].source,
             "this machine, calibrated at run time");
    for (size_t i = 0; d && i < d->count; i++) {
        rows[ncat + 1 + i].dev = &d->devs[i];
        snprintf(rows[ncat + 1 + i].source, sizeof rows[0].source,
                 "%s:%zu", d->path, d->lines[i]);
    }
    const struct cli_column_set set = {
        device_cols, sizeof device_cols / sizeof device_cols[0], rows};
    art_table *t = NULL;
    int rc = CLI_EXIT_FAILURE;
    if (cli_table_build("devices", &set, 1, n, CLI_COL_ALL, &t) == ART_OK) {
        const struct cli_output out = {.key = "devices", .table = t};
        rc = cli_emit(format, &out, 1);
    } else {
        cli_error("listing the devices: out of memory");
    }
    art_table_destroy(t);
    free(rows);
    return rc;
}

int cli_device_option(int c, struct cli_device_opts *d)
{
    switch (c) {
    case CLI_OPT_DEVICE:
        d->device = optarg;
        return 1;
    case CLI_OPT_DEVICES:
        if (!*optarg) {
            cli_error("--devices: the file name is empty");
            return -1;
        }
        d->devices_file = optarg;
        return 1;
    case CLI_OPT_LIST_DEVICES:
        d->list = true;
        return 1;
    case CLI_OPT_RUNTIME:
        if (!*optarg) {
            cli_error("--runtime: the name is empty");
            return -1;
        }
        d->runtime = optarg;
        return 1;
    default:
        return 0;
    }
}

int cli_devices_list_run(const struct cli_device_opts *dev,
                         enum cli_format format)
{
    struct cli_devices devs;
    memset(&devs, 0, sizeof devs);
    if (dev->devices_file && !cli_devices_load(dev->devices_file, &devs)) {
        return CLI_EXIT_USAGE;
    }
    const int rc = cli_devices_print(format,
                                     dev->devices_file ? &devs : NULL);
    cli_devices_free(&devs);
    return rc;
}
