/* Where static int8's activation ranges come from: the calibration options
 * and calibration_ranges() (calibration.h). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calibration.h"
#include "cli.h"
#include "data.h"
#include "model.h"

void calibration_opts_init(struct calibration_opts *o)
{
    struct prof_ranges_opts d;
    prof_ranges_opts_init(&d);
    memset(o, 0, sizeof *o);
    o->samples = d.samples;
    o->method = d.method;
    o->percentile = d.percentile;
    o->seed = d.seed;
    o->requant = PROF_INT8_REQUANT_MODEL;
}

/* minmax | percentile[:P] | entropy */
static bool parse_method(const char *arg, struct calibration_opts *o)
{
    static const char opt[] = "--calibration-method";
    const char *colon = strchr(arg, ':');
    char name[32];
    const size_t n = colon ? (size_t)(colon - arg) : strlen(arg);
    if (n >= sizeof name) {
        cli_error("%s: '%s' is not a method (minmax, percentile[:P] or "
                  "entropy)", opt, arg);
        return false;
    }
    memcpy(name, arg, n);
    name[n] = '\0';
    enum prof_range_method m;
    if (prof_range_method_parse(name, &m) != PROF_OK) {
        cli_error("%s: '%s' is not a method (minmax, percentile[:P] or "
                  "entropy)", opt, arg);
        return false;
    }
    double p = o->percentile;
    if (colon) {
        if (m != PROF_RANGE_PERCENTILE) {
            cli_error("%s: '%s': only percentile takes a value (%s has "
                      "none)", opt, arg, name);
            return false;
        }
        if (!cli_parse_double(opt, colon + 1, 0.0, 100.0, &p)) {
            return false;
        }
        /* Half the elements or fewer would clip the typical value itself:
         * libprofile takes (50, 100]. */
        if (!(p > 50.0)) {
            cli_error("%s: percentile %s must be above 50 (at most 100)",
                      opt, colon + 1);
            return false;
        }
    }
    o->method = m;
    o->percentile = p;
    return true;
}

int calibration_option(int c, const char *arg, struct calibration_opts *o)
{
    switch (c) {
    case CLI_OPT_CALIBRATION_DATA:
        o->data = arg;
        return 1;
    case CLI_OPT_CALIBRATION_FILE:
        if (!cli_check_regular_file("--calibration-file", arg)) {
            return -1;
        }
        o->file = arg;
        return 1;
    case CLI_OPT_CALIBRATION_SAMPLES:
        if (!cli_parse_u64("--calibration-samples", arg, 0, UINT32_MAX,
                           &o->samples)) {
            return -1;
        }
        o->samples_given = true;
        return 1;
    case CLI_OPT_CALIBRATION_METHOD:
        if (!parse_method(arg, o)) {
            return -1;
        }
        o->method_given = true;
        return 1;
    case CLI_OPT_INT8_REQUANT:
        if (prof_int8_requant_parse(arg, &o->requant) != 0) {
            cli_error("--int8-requant: '%s' is neither fixed, float nor "
                      "model", arg);
            return -1;
        }
        return 1;
    }
    return 0;
}

int calibration_check(const struct calibration_opts *o)
{
    if (!o->file) {
        return CLI_EXIT_OK;
    }
    const char *other = o->data            ? "--calibration-data"
                        : o->samples_given ? "--calibration-samples"
                        : o->method_given  ? "--calibration-method"
                                           : NULL;
    if (other) {
        cli_error("--calibration-file %s and %s: ambiguous; the file holds "
                  "ranges already made (its samples and method), so give "
                  "one or the other", o->file, other);
        return CLI_EXIT_USAGE;
    }
    return CLI_EXIT_OK;
}

bool calibration_given(const struct calibration_opts *o)
{
    return o->data || o->file;
}

const char *calibration_method_text(enum prof_range_method m,
                                    double percentile, char *buf,
                                    size_t len)
{
    switch (m) {
    case PROF_RANGE_MINMAX:
        snprintf(buf, len, "min-max");
        return buf;
    case PROF_RANGE_PERCENTILE:
        snprintf(buf, len, "%gth-percentile", percentile);
        return buf;
    case PROF_RANGE_ENTROPY:
        snprintf(buf, len, "entropy (KL)");
        return buf;
    }
    snprintf(buf, len, "unknown");
    return buf;
}

/* "the first 512 of 60000 training samples" / "all 100 test samples".
 * A set read with at most want samples that holds want may have had more:
 * "the first want" is true either way. */
static void describe(char *buf, size_t len, uint64_t want, uint64_t have,
                     const char *what)
{
    if (want == 0 || want > have) {
        snprintf(buf, len, "all %" PRIu64 " %s", have, what);
    } else if (want < have) {
        snprintf(buf, len, "the first %" PRIu64 " of %" PRIu64 " %s", want,
                 have, what);
    } else {
        snprintf(buf, len, "the first %" PRIu64 " %s", want, what);
    }
}

const struct prof_ranges *calibration_exec_ranges(const struct prof_ranges *r)
{
    return r && r->count ? r : NULL;
}

static int ranges_of(const memest_model *m, const struct calibration_opts *o,
                     const struct prof_dataset *fallback,
                     const char *fallback_what, struct prof_ranges *out,
                     char *source, size_t source_len)
{
    memset(out, 0, sizeof *out);
    char dummy[1];
    if (!source || source_len == 0) {
        source = dummy;
        source_len = sizeof dummy;
    }
    source[0] = '\0';
    int rc = calibration_check(o);
    if (rc != CLI_EXIT_OK) {
        return rc;
    }
    char method[64];
    struct prof_diag pd = {0};
    if (!calibration_given(o) && memest_model_is_quantized(m) == 1) {
        /* no ranges: the executor reads the params the model carries
         * itself (prof_exec_opts.ranges NULL) */
        snprintf(source, source_len, "the model's own quantisation (the "
                 "scales and zero points of its QuantizeLinear nodes)");
        return CLI_EXIT_OK;
    }
    if (o->file) {
        const int st = prof_ranges_load(o->file, m, out, &pd);
        if (st != PROF_OK) {
            return cli_prof_failed("--calibration-file", st, &pd);
        }
        snprintf(source, source_len, "ranges read from %s (%s over %" PRIu64
                 " samples)", o->file,
                 calibration_method_text(out->method, out->percentile, method,
                                         sizeof method),
                 out->samples);
        return CLI_EXIT_OK;
    }
    struct prof_dataset own = {0};
    const struct prof_dataset *d = fallback;
    const char *what = fallback_what ? fallback_what : "samples";
    const char *opt = "the calibration samples";
    if (o->data) {
        rc = data_load_folder("--calibration-data", o->data, DATA_TRAIN,
                              o->samples, &own, &what);
        if (rc != CLI_EXIT_OK) {
            return rc;
        }
        d = &own;
        opt = "--calibration-data";
    } else if (!fallback) {
        cli_error("static int8 needs activation ranges: give "
                  "--calibration-data PATH (samples to calibrate on) or "
                  "--calibration-file FILE (ranges calibrated before), or "
                  "run int8-dynamic");
        return CLI_EXIT_USAGE;
    }
    struct prof_ranges_opts ro;
    prof_ranges_opts_init(&ro);
    ro.method = o->method;
    ro.percentile = o->percentile;
    ro.samples = o->samples;
    ro.seed = o->seed;
    int st = prof_dataset_check_input(m, d, &pd);
    if (st == PROF_OK) {
        st = prof_ranges_calibrate(m, d, &ro, out, &pd);
    }
    if (st != PROF_OK) {
        rc = cli_prof_failed(opt, st, &pd);
        prof_dataset_finish(&own);
        return rc;
    }
    char which[160];
    describe(which, sizeof which, o->samples, d->count, what);
    const char *from = d->source ? d->source : o->data;
    snprintf(source, source_len, "%s ranges of %s%s%s%s",
             calibration_method_text(o->method, o->percentile, method,
                                     sizeof method),
             which, from ? ", read from " : "", from ? from : "", "");
    prof_dataset_finish(&own);
    return CLI_EXIT_OK;
}

int calibration_ranges(const memest_model *m, const struct calibration_opts *o,
                       const struct prof_dataset *fallback,
                       const char *fallback_what, struct prof_ranges *out,
                       char *source, size_t source_len)
{
    const int rc = ranges_of(m, o, fallback, fallback_what, out, source,
                             source_len);
    /* ONNX Runtime's output stage, asked or the model's own (a QDQ file
     * run on its params): say so wherever the sentence goes (the
     * int8_calibration column, the apps' summaries) */
    const bool own = !calibration_given(o) && memest_model_is_quantized(m) == 1;
    if (rc == CLI_EXIT_OK && source && source_len &&
        (o->requant == PROF_INT8_REQUANT_FLOAT ||
         (o->requant == PROF_INT8_REQUANT_MODEL && own))) {
        const size_t used = strlen(source);
        snprintf(source + used, source_len - used, "; requantised as ONNX "
                 "Runtime does (--int8-requant %s)",
                 prof_int8_requant_name(o->requant));
    }
    return rc;
}
