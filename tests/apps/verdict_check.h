/* The verdict of edgefit-report against the figures of its summary.json:
 * every number a verdict line prints is one of the file's numbers, as
 * rounded on the line (a number followed by "points" or "%" is a fraction
 * times 100, by "mJ" joules times 1000), and a Memory line that says
 * "DOES NOT FIT" or "fits" / "not a constraint" agrees with the file's
 * "fits". An integer of two significant digits and trailing zeros ("110")
 * counts as rounded to two significant digits, as the report prints its
 * device latencies and energies. Shared by test_vocabulary and
 * test_report. */
#ifndef EDGEFIT_TESTS_VERDICT_CHECK_H
#define EDGEFIT_TESTS_VERDICT_CHECK_H

#include <jansson.h>
#include <stddef.h>

/* NULL when the verdict of summary (the whole summary.json) agrees with
 * its figures, else a static description of the first disagreement. */
const char *verdict_check(const json_t *summary);

#endif
