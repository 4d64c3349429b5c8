/* Shared by the edgefit apps: the columns of every table they print or
 * write, and the writing itself. Not installed.
 *
 * A table is described once, as an array of struct cli_column — a name
 * (every name is in the README's glossary, which tests/apps/test_vocabulary
 * checks), a type, a getter and whether the terminal shows it — and that
 * one description builds both the full table (CSV, JSON: every column) and
 * the terminal's view (the columns marked CLI_COL_KEY, reals at four
 * significant digits, at most about 120 characters wide). Columns that
 * come from different sources (the estimates of libmemest, the timings of
 * libprofile) are separate arrays, each with its own context, joined by
 * cli_table_build().
 *
 * Adding a table to a new app:
 *
 *     static bool get_loss(const void *ctx, size_t i, union cli_value *v)
 *     {
 *         const struct epoch *e = ctx;
 *         v->r = e[i].loss;
 *         return isfinite(v->r); // false leaves the cell empty
 *     }
 *     static const struct cli_column epoch_cols[] = {
 *         {"epoch", ART_UINT, get_epoch, CLI_COL_KEY},
 *         {"loss", ART_REAL, get_loss, CLI_COL_KEY},
 *     };
 *     struct cli_column_set set = {epoch_cols, 2, epochs};
 *     art_table *t;
 *     cli_table_build("training_history", &set, 1, nepochs, CLI_COL_ALL,
 *                     &t);
 *
 * and to write outputs: cli_emit() prints the tables on stdout in the
 * chosen --format, cli_write_outputs() writes the files of --out together
 * (all or none). The glossary entry for each new column goes in README.md,
 * section "Glossary". */
#ifndef EDGEFIT_APPS_TABLE_H
#define EDGEFIT_APPS_TABLE_H

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cli.h"
#include "edgefit/artifacts.h"
#include "edgefit/memest.h"

union cli_value {
    int64_t i;     /* ART_INT */
    uint64_t u;    /* ART_UINT */
    double r;      /* ART_REAL */
    const char *s; /* ART_TEXT; copied into the table */
    bool b;        /* ART_BOOL */
};

/* Row i of the column's context into *v; false leaves the cell empty. */
typedef bool (*cli_get_fn)(const void *ctx, size_t i, union cli_value *v);

enum {
    CLI_COL_ALL = 0,   /* CSV and JSON only */
    CLI_COL_KEY = 1,   /* also a terminal view of key columns */
    CLI_COL_BRIEF = 2, /* also the narrowest view (an app that adds many
                          columns of its own shows only these) */
};

struct cli_column {
    const char *name; /* with its unit: _ms, _bytes, _mb, _gmacs, ... */
    enum art_type type;
    cli_get_fn get;
    int show;         /* CLI_COL_ALL, CLI_COL_KEY or CLI_COL_BRIEF */
};

/* A run of columns over one context. */
struct cli_column_set {
    const struct cli_column *cols;
    size_t count;
    const void *ctx;
};

/*
 * Build a table called name of rows rows from the sets' columns, in
 * order. view 0 (CLI_COL_ALL): every column, every digit, for CSV and
 * JSON; view CLI_COL_KEY or CLI_COL_BRIEF: a terminal view of the columns
 * whose show is at least view, reals rounded to four significant digits
 * (for art_table_print). Returns an art_status; on success the caller
 * destroys *out.
 */
int cli_table_build(const char *name, const struct cli_column_set *sets,
                    size_t nsets, size_t rows, int view, art_table **out);

/* v rounded to four significant digits (NaN, infinities and 0 as they
 * are): what a person compares on a terminal, and what a measured figure
 * keeps in bench's tables (more digits would be noise). */
double cli_round4(double v);

/* The terminal's forms of a number: n with thousands separators
 * ("1,234,567"); v scaled to k, M, G, T with three significant digits
 * ("12.3 M", "950", "1.5 G"); bytes in MB (1024^2) with two decimals, or
 * three significant digits below 0.1 MB ("0.48 MB", "0.0123 MB"). Each
 * writes into buf (len bytes) and returns buf. */
const char *cli_format_count(uint64_t n, char *buf, size_t len);
const char *cli_format_scaled(double v, char *buf, size_t len);
const char *cli_format_mb(uint64_t bytes, char *buf, size_t len);

/*
 * A terminal view of t: the columns named in keep (NULL-terminated; names
 * t does not have are skipped), in that order, reals rounded to four
 * significant digits, for a table built elsewhere. Returns an art_status;
 * on success the caller destroys *out.
 */
int cli_table_view(const art_table *t, const char *const *keep,
                   art_table **out);

/*
 * A copy of t with the columns named in keep (NULL: all of them, in
 * order) and the rows rows[0..nrows) in that order (rows NULL: all of
 * them), reals rounded to four significant digits when terminal. An
 * art_status (ART_E_RANGE for a row t does not have); on success the
 * caller destroys *out.
 */
int cli_table_select(const art_table *t, const char *const *keep,
                     const size_t *rows, size_t nrows, bool terminal,
                     art_table **out);

/* One row of named values (a summary): {name, type, value}, built into a
 * one-row table with cli_record_build(). set false leaves the cell empty
 * (CLI_REAL() does that for a NaN). */
struct cli_field {
    const char *name;
    enum art_type type;
    union cli_value v;
    bool set;
};

#define CLI_UINT(n, x) {(n), ART_UINT, {.u = (x)}, true}
#define CLI_TEXT(n, x) {(n), ART_TEXT, {.s = (x)}, true}
#define CLI_BOOL(n, x) {(n), ART_BOOL, {.b = (x)}, true}
#define CLI_REAL(n, x) {(n), ART_REAL, {.r = (x)}, isfinite(x)}

/* A table called name of one row holding the n fields, in order. Returns
 * an art_status; on success the caller destroys *out. */
int cli_record_build(const char *name, const struct cli_field *f, size_t n,
                     art_table **out);

/* The columns of layerwise_breakdown.csv that come from libmemest's
 * estimates, in the order of the design: layer, kind, output_shape,
 * output_elements, parameter_count, parameter_bytes, activation_bytes,
 * macs (layer, kind, output_shape, parameter_count and macs brief, the
 * others key). Context: an array of struct memest_layer_estimate. */
extern const struct cli_column cli_breakdown_columns[];
extern const size_t cli_breakdown_column_count;

/* What an app prints or writes: a table, or a JSON document. */
struct cli_output {
    const char *key;        /* JSON key on stdout and in the JSON file */
    const char *file;       /* file name under --out (NULL: KEY.csv for a
                               table, KEY.json for a document) */
    const art_table *table; /* one of table, doc, chart, figure */
    const art_doc *doc;
    const struct art_chart *chart;   /* a PNG under --out only (file
                                        needed), never on stdout or in the
                                        JSON of all */
    const struct art_figure *figure; /* the same, several panels */
    const art_table *view;  /* the terminal's view of table (may be NULL:
                               the whole table) */
    bool json_only;         /* cli_write_outputs: only under its key in the
                               JSON of all, no file of its own (a record
                               beside the tables, as the totals) */
};

/*
 * Print outputs on stdout in format: table: each view (or table) with
 * art_table_print_grouped (thousands separated), a blank line between them (docs are left to the app's
 * own summary); csv: exactly one table — more than one is refused
 * (CLI_EXIT_USAGE, "give one table or --out") so that tables are never
 * glued into one stream; json: one object with a key per output. Returns
 * a CLI_EXIT_ code after reporting a failure.
 */
int cli_emit(enum cli_format format, const struct cli_output *outs,
             size_t n);

/*
 * Write every output into dir as one libartifacts bundle (all files or
 * none): each output as its file (KEY.csv, KEY.json), and, when
 * json_name is not NULL, one JSON file of that name holding every output
 * under its key, so each app writes JSON as well as CSV. Returns a
 * CLI_EXIT_ code after reporting a failure.
 */
int cli_write_outputs(const char *dir, const struct cli_output *outs,
                      size_t n, const char *json_name);

#endif
