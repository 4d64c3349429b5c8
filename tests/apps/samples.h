/* Samples of the apps' output in the documentation, produced and checked
 * by one piece of code so that a sample cannot go stale.
 *
 * In a Markdown file a sample is
 *
 *     <!-- sample: COMMAND -->
 *     ```console
 *     $ COMMAND
 *     what COMMAND printed on stdout
 *     ```
 *     <!-- end sample -->
 *
 * with optional words before the colon: `head=N` keeps the first N lines
 * of the output and writes "..." for the rest, `vary=COL[,COL...]` names
 * further columns whose cells are measured (see below). COMMAND runs under
 * /bin/sh in a scratch folder that links the tree's sources (README.md,
 * docs, tests, scripts, apps, the libraries), where `edgefit-NAME` and
 * `./build/apps/NAME/edgefit-NAME` are the apps given; stdin is /dev/null,
 * stderr is shown only when COMMAND redirects it (`2>&1`), and a status
 * other than 0 is shown as a last line "[exit status N]". The samples of
 * one file run in order in one folder, so a sample may read what an
 * earlier one wrote.
 *
 * What may differ between the text and a new run (everything else must be
 * equal):
 *   - a number followed by a unit of time or of a rate (ms, s, us, ns,
 *     GB/s, MB/s, GMAC/s, GFLOP/s, GOP/s), or following a name that ends
 *     in `_ms` or `_s` ("training_time_s 0.0359"): measured on the
 *     machine;
 *   - the cells of a table column whose name ends in `_ms` or `_s`, or is
 *     named by `vary=`: under a header line of lower-case names, a cell
 *     belongs to the column whose name it overlaps;
 *   - the number of spaces in a run of spaces (a masked number of another
 *     width moves the columns after it).
 *
 * Under EDGEFIT_EMULATED=1 (CI's qemu stage) a check leaves out (as TAP
 * skips) the samples of edgefit-train, edgefit-report and edgefit-sweep,
 * minutes of emulated CPU each, and edgefit-validate's against reference
 * outputs, whose error digits follow the kernel path; the native suite
 * runs them. */
#ifndef EDGEFIT_TESTS_SAMPLES_H
#define EDGEFIT_TESTS_SAMPLES_H

#include <stdbool.h>

/* Called once per sample (ok, and what: "README.md:23: ..." with the
 * first difference when not ok) and once per problem of the file. */
typedef void (*samples_report_fn)(void *ctx, bool ok, const char *what);

/* Check (write false) or rewrite (write true) the samples of root/rel,
 * running the apps (paths of the built edgefit-NAME programs). Returns the
 * number of samples, or -1 when the file cannot be read, a marker is
 * malformed or the file cannot be written (reported). */
int samples_file(const char *root, const char *rel, char *const apps[],
                 int napps, bool write, samples_report_fn report, void *ctx);

/* Whether two outputs are equal but for the parts above that may differ;
 * vary is the comma-separated list of `vary=` (may be NULL or ""). When
 * not, *line is the first differing line (1-based) and exp_out/act_out
 * (when not NULL) receive those lines normalised, malloc'ed. */
bool samples_equal(const char *expected, const char *actual, const char *vary,
                   int *line, char **exp_out, char **act_out);

/* The documentation: "README.md", then "docs/NAME.md" for each Markdown
 * file of docs/ in name order. Returns the count (at least 1); release the
 * list with samples_docs_free(). */
int samples_docs(const char *root, char ***files);
void samples_docs_free(char **files, int n);

#endif
