/*
 * libartifacts: the tables and documents edgefit writes, written so that a
 * failed run never leaves a half-written file.
 *
 * A table has a name, typed columns and rows. It is written as CSV (through
 * libcsv), as JSON (through jansson: an array of row objects) or as aligned
 * text for a terminal. A document is a JSON object built key by key, which
 * may hold tables. Files are written to a temporary name in the same folder
 * and renamed into place.
 *
 *     art_table *t = NULL;
 *     art_table_create("layers", &t);
 *     art_table_add_column(t, "layer", ART_TEXT);
 *     art_table_add_column(t, "macs", ART_UINT);
 *     size_t r;
 *     art_table_add_row(t, &r);
 *     art_table_set_text(t, r, 0, "dense1");
 *     art_table_set_uint(t, r, 1, 50176);
 *     art_table_save_csv(t, "out/layers.csv", NULL);
 *     art_table_destroy(t);
 *
 * Charts (bar, line, scatter, roofline) are drawn from generic series.
 *
 * libartifacts knows nothing of models: callers fill generic tables.
 */
#ifndef EDGEFIT_ARTIFACTS_H
#define EDGEFIT_ARTIFACTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(ART_BUILDING) && defined(__GNUC__)
#define ART_API __attribute__((visibility("default")))
#else
#define ART_API
#endif

/* ---- Status codes ------------------------------------------------------ */

enum art_status {
    ART_OK = 0,
    ART_E_INVALID,  /* a NULL argument, an unknown column, a type mismatch */
    ART_E_NOMEM,    /* an allocation failed */
    ART_E_IO,       /* a file could not be opened, written or renamed */
    ART_E_PARSE,    /* a CSV file that cannot be read back (see diag) */
    ART_E_RANGE,    /* a row or column index out of range */
    ART_E_OVERFLOW, /* a size that does not fit */
    ART_E_BUSY,     /* another process holds the folder's lock */
};

/* Static text for a status code; "unknown status" for anything else. */
ART_API const char *art_strerror(int status);

/* The bytes asked for by the last allocation of this library that failed
 * on the calling thread (0 when none has failed), for the message of a
 * ART_E_NOMEM from a function that has no diagnostic to name the size in
 * ("out of memory: <what> (<n> bytes)"). It is read, never cleared: after
 * ART_E_NOMEM it is the allocation that failed; otherwise it may be an older
 * failure the library did without. */
ART_API size_t art_nomem_bytes(void);
/* When that allocation failed (CLOCK_MONOTONIC, in ns; 0 when none has):
 * of the records of several libraries, the newest is the failure being
 * reported, the others older ones that were done without. */
ART_API unsigned long long art_nomem_when(void);

/* What went wrong, for the functions that take a diag (which may be NULL):
 * a read names the 1-based line (0 when unknown), a write the path; for
 * ART_E_IO, sys_errno holds the errno of the failed system call (give it
 * to strerror()) and message reads "path: <strerror text>". sys_errno is 0
 * when the failure was not the system's (a malformed file, no memory). */
struct art_diag {
    int line;
    char message[256];
    int sys_errno;
};

/* ---- Atomic files ------------------------------------------------------ */

/* A file being written under a temporary name next to its final path. */
typedef struct art_atomic art_atomic;

/* Open a temporary file in the folder of path for writing (binary). On
 * success *out holds the handle; art_atomic_file() gives its FILE. Finish
 * with exactly one of art_atomic_commit() or art_atomic_abort(). ART_E_IO
 * when the folder is missing or not writable (diag says why). */
ART_API int art_atomic_open(const char *path, art_atomic **out,
                            struct art_diag *diag);
/* The FILE to write to; owned by the handle. */
ART_API FILE *art_atomic_file(art_atomic *a);
/* Flush, sync and rename into place, then sync the folder so the new name
 * survives a crash; frees the handle. On any failure before the rename the
 * temporary file is removed, the destination is untouched and ART_E_IO is
 * returned (diag names the path and the reason). Also fails (and removes)
 * when the stream had a write error. */
ART_API int art_atomic_commit(art_atomic *a, struct art_diag *diag);
/* Close and remove the temporary file; frees the handle. NULL ok. */
ART_API void art_atomic_abort(art_atomic *a);
/* While a temporary file exists, SIGINT and SIGTERM remove it before the
 * process dies of them: the library installs a handler for each when it
 * makes a temporary, unless the program has its own or ignores the signal (then the
 * temporaries of an interrupted run may remain, named path.tmp.XXXXXX). */

/* Create a folder and its missing parents (mode 0777 before umask).
 * An existing folder is fine; an existing non-folder is ART_E_IO with
 * ENOTDIR in diag, a symbolic link to nothing ART_E_IO with ENOENT. */
ART_API int art_mkdir_p(const char *dir, struct art_diag *diag);

/* Lock output folder dir for this process until art_dir_unlock() or exit:
 * an exclusive flock() on the file ".NAME.lock" beside it (".edgefit.lock"
 * inside "." or ".."), removed when released (and by the SIGINT/SIGTERM
 * handler). art_bundle_commit() takes it for its folder when the process
 * does not hold it already; an app takes it when it starts, so that a
 * second run on the same folder stops at once. ART_E_BUSY when another
 * process holds it (diag says so), ART_E_IO when the lock file cannot be
 * made (diag: why; the folder's parent must exist), ART_E_INVALID when this
 * process holds another folder's lock. One folder per process. A symbolic
 * link and its target, "." and its absolute path, share one lock. The lock
 * is the kernel's and dies with its holder: a lock file left by a run
 * killed by SIGKILL is taken by the next run, which then removes what the
 * killed run left beside the folder (".NAME.tmp.XXXXXX" folders; a
 * ".NAME.old" renamed back when dir is missing, else removed). */
ART_API int art_dir_lock(const char *dir, struct art_diag *diag);
/* Whether a commit can replace folder dir whole: ART_OK when it can (or
 * does not exist yet); ART_E_INVALID, with "DIR (RESOLVED): why" in diag,
 * for the root, the current folder (a shell in it would be left in the
 * removed old one), a mount point and a folder that holds a folder (no
 * bundle writes one, and it cannot be carried into the new folder in one
 * step, as its other files are by hard links); ART_E_IO when it cannot be
 * looked at. For a check before a long run: art_bundle_commit() checks
 * again and refuses the same way. */
ART_API int art_dir_check(const char *dir, struct art_diag *diag);
/* Whether this process holds dir's lock. */
ART_API bool art_dir_locked(const char *dir);
/* Release the lock (nothing when none is held). */
ART_API void art_dir_unlock(void);

/* Join dir and name with one '/' into a new string the caller frees with
 * free(); NULL when out of memory. */
ART_API char *art_path_join(const char *dir, const char *name);

/* ---- Bundles: several files, all or none ------------------------------ */

typedef struct art_table art_table;
typedef struct art_doc art_doc;

/* Writes one file's contents to f; returns an ART_ status. */
typedef int (*art_write_fn)(const void *obj, FILE *f);

/* A set of files in one folder that appear together or not at all: each
 * is written under a temporary name, flushed and synced to the disk, and
 * only when every one is on the disk are they renamed into place; a full
 * disk or a failing writer therefore leaves none of them, and the folder
 * is then replaced whole in one rename (art_bundle_commit()): a kill at
 * any moment leaves the old folder or the new one. */
typedef struct art_bundle art_bundle;

/* Start a bundle in dir; the folder is created on commit, not before, so
 * a bundle that is never committed leaves no trace. */
ART_API int art_bundle_create(const char *dir, art_bundle **out);
/* Add a file called name (no '/') written by write(obj, f). obj must stay
 * valid until commit. */
ART_API int art_bundle_add(art_bundle *b, const char *name,
                           art_write_fn write, const void *obj);
/* Shorthands: a table as CSV, a table as JSON, a document as JSON. */
ART_API int art_bundle_add_csv(art_bundle *b, const char *name,
                               const art_table *t);
ART_API int art_bundle_add_table_json(art_bundle *b, const char *name,
                                      const art_table *t);
ART_API int art_bundle_add_doc(art_bundle *b, const char *name,
                               const art_doc *d);
/* Write the folder whole, under its lock (art_dir_lock(); taken here when
 * the process does not hold it): every member written and synced in a
 * temporary sibling folder ".NAME.tmp.XXXXXX", then that folder renamed
 * onto dir (new) or exchanged with it (Linux's renameat2 RENAME_EXCHANGE;
 * the old folder's other files are hard-linked in first, so they stay),
 * the parent synced, the old folder removed; frees the bundle. A kill at
 * any moment leaves dir all old or all new; a failed write, flush or sync
 * (a full disk) leaves it as it was, and a new dir is not made at all.
 * A symbolic link is resolved and its target replaced (the link stays);
 * "." and ".." are taken by their absolute paths. A folder that cannot be
 * replaced whole is refused, unchanged (ART_E_INVALID, diag says why; see
 * art_dir_check()). On a file system without the exchange the old folder
 * is first renamed to ".NAME.old" beside it: a SIGKILL between that and
 * the new folder's rename leaves no dir until the next run on it renames
 * the old one back (art_dir_lock() clears what a killed run left). diag
 * (may be NULL)
 * receives "path: reason" for the file or folder that failed (named in
 * dir, not the temporary) and, for ART_E_IO, the errno; ART_E_BUSY when
 * another process holds the lock. */
/* SIGINT or SIGTERM during the commit removes the temporary folder and
 * files (the handler art_atomic_open() installs); the renames run with
 * both held in the calling thread. */
ART_API int art_bundle_commit(art_bundle *b, struct art_diag *diag);
/* Drop the bundle without writing. NULL ok. */
ART_API void art_bundle_destroy(art_bundle *b);

/* ---- Tables ------------------------------------------------------------ */

enum art_type {
    ART_INT = 1, /* int64_t */
    ART_UINT,    /* uint64_t */
    ART_REAL,    /* double */
    ART_TEXT,    /* UTF-8 text, copied into the table */
    ART_BOOL,    /* true/false */
};

/* A new empty table named name (used as the JSON key by documents). */
ART_API int art_table_create(const char *name, art_table **out);
ART_API void art_table_destroy(art_table *t); /* NULL ok */

/* Append a column; column names must be unique and non-empty. Columns can
 * only be added while the table has no rows. */
ART_API int art_table_add_column(art_table *t, const char *name,
                                 enum art_type type);
/* Append a row of empty cells (written as an empty CSV field, JSON null);
 * *row receives its index (may be NULL). */
ART_API int art_table_add_row(art_table *t, size_t *row);

/* Set a cell; the value's type must match the column's (ART_E_INVALID
 * otherwise), except that set_int/set_uint also fill a REAL column. */
ART_API int art_table_set_int(art_table *t, size_t row, size_t col,
                              int64_t v);
ART_API int art_table_set_uint(art_table *t, size_t row, size_t col,
                               uint64_t v);
ART_API int art_table_set_real(art_table *t, size_t row, size_t col,
                               double v);
/* Text must be valid UTF-8 (ART_E_INVALID otherwise). */
ART_API int art_table_set_text(art_table *t, size_t row, size_t col,
                               const char *v);
ART_API int art_table_set_bool(art_table *t, size_t row, size_t col, bool v);

ART_API const char *art_table_name(const art_table *t);
ART_API size_t art_table_rows(const art_table *t);
ART_API size_t art_table_cols(const art_table *t);
ART_API const char *art_table_column_name(const art_table *t, size_t col);
ART_API enum art_type art_table_column_type(const art_table *t, size_t col);
/* Index of the column called name, or -1. */
ART_API long art_table_find_column(const art_table *t, const char *name);
/* True when the cell holds a value. */
ART_API bool art_table_is_set(const art_table *t, size_t row, size_t col);

/* Read a cell. Each returns ART_E_INVALID on a type mismatch, ART_E_RANGE
 * for a bad index and ART_E_INVALID for an empty cell. get_int and get_uint
 * read both integer columns when the value fits (CSV reading infers INT for
 * non-negative integers); get_real converts INT and UINT cells. Text
 * belongs to the table. */
ART_API int art_table_get_int(const art_table *t, size_t row, size_t col,
                              int64_t *v);
ART_API int art_table_get_uint(const art_table *t, size_t row, size_t col,
                               uint64_t *v);
ART_API int art_table_get_real(const art_table *t, size_t row, size_t col,
                               double *v);
ART_API int art_table_get_text(const art_table *t, size_t row, size_t col,
                               const char **v);
ART_API int art_table_get_bool(const art_table *t, size_t row, size_t col,
                               bool *v);

/* Format one cell as it appears in CSV: integers in decimal, reals in the
 * shortest form that reads back to the same double ("nan", "inf", "-inf"
 * for the others), booleans as true/false, empty cells as "". Writes at most
 * len bytes including the NUL; returns the length it needed, like
 * snprintf. */
ART_API size_t art_table_format_cell(const art_table *t, size_t row,
                                     size_t col, char *buf, size_t len);

/* CSV: a header line of column names, then one line per row, "\n" line
 * ends, fields quoted only when they would not read back otherwise: a
 * comma, quote, CR or LF inside, a leading or trailing space or tab (which
 * readers trim), a byte-order mark at the start of the file. */
ART_API int art_table_write_csv(const art_table *t, FILE *f);
/* The save functions write path atomically (art_atomic_open()); diag (may
 * be NULL) receives "path: reason" and the errno as for bundles. */
ART_API int art_table_save_csv(const art_table *t, const char *path,
                               struct art_diag *diag);

/* What a writer keeps of the real v found under name (a table's column, a
 * document's key; the elements of an array have the array's key): a
 * rounding to the digits that mean something for that quantity. Called
 * only for finite values. */
typedef double (*art_round_fn)(const char *name, double v);

/* art_table_write_csv with every finite real written as round(column
 * name, value). ART_E_INVALID for a NULL argument. */
ART_API int art_table_write_csv_rounded(const art_table *t, FILE *f,
                                        art_round_fn round);

/* Write the CSV tables and the documents of b (art_bundle_add_csv,
 * art_bundle_add_doc; added before or after) with round, as
 * art_table_write_csv_rounded and art_doc_write_rounded do. NULL: every
 * real exactly (the default). */
ART_API void art_bundle_set_rounding(art_bundle *b, art_round_fn round);

/* JSON: an array of objects, one per row, keys in column order. */
ART_API int art_table_write_json(const art_table *t, FILE *f);
ART_API int art_table_save_json(const art_table *t, const char *path,
                                struct art_diag *diag);

/* Aligned text for a terminal: text left-aligned, numbers right-aligned,
 * reals with the given number of decimals (shortest form when < 0). */
ART_API int art_table_print(const art_table *t, FILE *f, int decimals);

/* As art_table_print(t, f, -1), with the whole part of every number of
 * four digits or more grouped by thousands with commas ("1,234,567",
 * "-12,345.6"; "1.5e+06" as it is): for people, as torchinfo prints. Files
 * keep plain numbers. */
ART_API int art_table_print_grouped(const art_table *t, FILE *f);

/* Group the whole part of the number in s (as art_table_print_grouped)
 * into buf of len bytes (truncated, always terminated); text that is not
 * a number is copied as it is. Returns the length it needs. */
ART_API size_t art_group_thousands(const char *s, char *buf, size_t len);

/* Read a CSV file written by any tool: the first line names the columns.
 * Each column's type is inferred from its values (BOOL if every non-empty
 * value is true/false, INT or UINT if every one is an integer, REAL if
 * every one is a number, TEXT otherwise); empty fields stay empty. Rows
 * must have as many fields as the header. The file must be UTF-8 without
 * NUL bytes (a leading byte-order mark is skipped); blank lines are
 * skipped. ART_E_PARSE with diag naming the line (and the column, in the
 * message, of a bad byte); ART_E_IO when the file cannot be read. */
ART_API int art_table_load_csv(const char *path, art_table **out,
                               struct art_diag *diag);

/* For a table read by art_table_load_csv(): the 1-based line of the file
 * where a row (or the header) began, counting blank lines; 0 for rows
 * added otherwise. */
ART_API long art_table_row_line(const art_table *t, size_t row);
ART_API long art_table_header_line(const art_table *t);

/* ---- JSON documents ---------------------------------------------------- */

/* A JSON object built key by key (type art_doc, declared above); setting
 * an existing key replaces it. */

ART_API int art_doc_create(art_doc **out);
ART_API void art_doc_destroy(art_doc *d); /* NULL ok */

ART_API int art_doc_set_int(art_doc *d, const char *key, int64_t v);
ART_API int art_doc_set_uint(art_doc *d, const char *key, uint64_t v);
/* Non-finite reals are written as null (JSON has no NaN). */
ART_API int art_doc_set_real(art_doc *d, const char *key, double v);
ART_API int art_doc_set_text(art_doc *d, const char *key, const char *v);
ART_API int art_doc_set_bool(art_doc *d, const char *key, bool v);
/* An array of n strings. */
ART_API int art_doc_set_texts(art_doc *d, const char *key,
                              const char *const *v, size_t n);
/* The table's rows as an array of objects (copied now). */
ART_API int art_doc_set_table(art_doc *d, const char *key,
                              const art_table *t);
/* A nested object (copied now; sub is still the caller's). */
ART_API int art_doc_set_doc(art_doc *d, const char *key, const art_doc *sub);

/* Indented JSON, keys in insertion order, a final newline. Reals are
 * written with 17 significant digits, so they read back exactly. */
ART_API int art_doc_write(const art_doc *d, FILE *f);
/* art_doc_write with every finite real written as round(its key, value);
 * ART_E_INVALID for a NULL argument. */
ART_API int art_doc_write_rounded(const art_doc *d, FILE *f,
                                  art_round_fn round);
ART_API int art_doc_save(const art_doc *d, const char *path,
                         struct art_diag *diag);

/* ---- HTML ------------------------------------------------------------- */

/* Write text with &, <, >, " and ' escaped for HTML. */
ART_API int art_html_write_text(FILE *f, const char *text);
/* The table as an HTML <table>: a header row of column names, then one
 * row per table row; every cell escaped, numeric cells with class "num"
 * (for right alignment), reals to `digits` significant digits (digits <=
 * 0: the CSV form), empty cells empty. */
ART_API int art_table_write_html(const art_table *t, FILE *f, int digits);

/* ---- Charts ------------------------------------------------------------ */

/*
 * Charts are drawn with cairo (antialiased, DejaVu Sans) and written as PNG
 * through libpng: by default 7 x 5 inches at 180 DPI (1260 x 900 px), with
 * a pHYs chunk saying so and tEXt chunks Title (the chart's title) and
 * Software ("edgefit <version>"). Axes get round ticks (1-2-5 steps on
 * linear axes, decades on log axes), the caller's unit-bearing labels, and
 * a legend above the plot when more than one series is named. Labels never
 * leave the image: long category names are rotated, then shortened with an
 * ellipsis in the middle only when even rotated they would take more than
 * a third of the height.
 *
 *     const char *layers[] = {"input", "dense1", "dense2"};
 *     const double mb[] = {0.10, 0.01, 0.002};
 *     struct art_series s = {.name = "batch 32", .n = 3, .y = mb};
 *     struct art_chart c = {.kind = ART_CHART_BAR,
 *         .title = "Layer-wise Activation Memory", .x_label = "Layer",
 *         .y_label = "Activation Memory (MB)", .categories = layers,
 *         .n_categories = 3, .series = &s, .n_series = 1};
 *     art_chart_save(&c, "out/layerwise_activation_memory.png", NULL);
 */

enum art_chart_kind {
    /* One bar per category and series (grouped side by side), from zero;
     * series[i].y holds n_categories values >= 0, x is not used. */
    ART_CHART_BAR = 1,
    /* Series of (x, y) points joined in order (or as drawn by style). */
    ART_CHART_LINE,
    /* Series of (x, y) points, unjoined, each labelled when labels given. */
    ART_CHART_SCATTER,
    /* Log-log roofline: the roofs (bandwidth slope up to the knee, then the
     * compute ceiling) and labelled points. Both axes are log. */
    ART_CHART_ROOFLINE,
};

enum art_scale {
    ART_SCALE_LINEAR = 0,
    ART_SCALE_LOG, /* values <= 0 are left out */
};

enum art_style {
    ART_STYLE_DEFAULT = 0, /* bars for BAR, lines for LINE, points else */
    ART_STYLE_LINE,        /* straight segments with a marker per point */
    ART_STYLE_STEP,        /* held at each y until the next x, ending at
                              the last point (no marker) */
    ART_STYLE_POINTS,      /* markers only */
};

enum art_marker {
    ART_MARKER_CIRCLE = 0,
    ART_MARKER_SQUARE,
    ART_MARKER_TRIANGLE,
    ART_MARKER_CROSS,  /* an x: drawn as strokes */
    ART_MARKER_DIAMOND,
};

/* One named series. Points whose x or y is not finite (or not > 0 on a log
 * axis) are left out; a line breaks there. */
struct art_series {
    const char *name;           /* legend text; NULL: not in the legend */
    size_t n;                   /* points (BAR: must equal n_categories) */
    const double *x;            /* n values (unused by BAR) */
    const double *y;            /* n values */
    const char *const *labels;  /* n point labels or NULL (NULL entries
                                   are unlabelled); BAR: shown above bars
                                   instead of the value */
    enum art_style style;
    enum art_marker marker;
    bool hollow;                /* open markers (e.g. "rejected") */
    bool dashed;                /* dashed line */
    int color;                  /* 0: the series' own (palette colour of
                                   its index); k > 0: palette colour k-1 */
    const double *y_err;        /* LINE and SCATTER: n half-widths drawn
                                   as error bars y +- y_err (a standard
                                   error), inside the axis range; NULL or
                                   a non-finite entry: no bar */
};

/* A roof: attainable y = min(ceiling, slope * x); its knee is at
 * x = ceiling / slope. The first roof is drawn solid, the others dashed. */
struct art_roof {
    const char *name;  /* e.g. "rpi4: 4 GB/s, 13.5 GMAC/s" (legend) */
    double slope;      /* > 0, finite (e.g. GB/s for GMAC/s over MAC/B) */
    double ceiling;    /* > 0, finite */
};

struct art_chart {
    enum art_chart_kind kind;
    const char *title;     /* required; also the PNG Title */
    const char *x_label;   /* with its unit, e.g. "Epoch" or "Latency (ms)" */
    const char *y_label;
    enum art_scale x_scale; /* LINE and SCATTER (ROOFLINE: always log) */
    enum art_scale y_scale; /* LINE, SCATTER and BAR (ROOFLINE: log) */
    const char *const *categories; /* BAR: n_categories names */
    size_t n_categories;
    const struct art_series *series;
    size_t n_series;       /* >= 1 (ROOFLINE: may be 0) */
    const struct art_roof *roofs; /* ROOFLINE: n_roofs >= 1 */
    size_t n_roofs;
    bool value_labels;     /* BAR: print each bar's value above it */
    unsigned width_px;     /* 0: 1260 */
    unsigned height_px;    /* 0: 900 */
};

/* Where the chart maps data, in pixels of the image (y grows downwards):
 * the plot rectangle and the axis ranges (the data values at its edges;
 * for a log axis the values themselves, not their logarithms). BAR: x_lo
 * and x_hi are 0 and n_categories, category i spans [i, i + 1). */
struct art_chart_layout {
    unsigned width_px, height_px;
    double plot_x, plot_y, plot_w, plot_h;
    double x_lo, x_hi, y_lo, y_hi;
};

/* The resolution every chart is written at, in dots per inch. */
#define ART_CHART_DPI 180

/* Check a chart spec and compute its layout (text is measured with the
 * chart font). ART_E_INVALID for NULL pointers, an unknown kind, a missing
 * title, no series, a BAR series whose n differs from n_categories;
 * ART_E_RANGE for a negative or non-finite bar, a bad roof, a size below
 * 200 x 150 or above 8000 x 8000 px, or nothing to plot. */
ART_API int art_chart_layout(const struct art_chart *c,
                             struct art_chart_layout *out);

/* Colour i of the palette the series use (wraps around), as 0-255 RGB. */
ART_API void art_chart_color(int i, unsigned char rgb[3]);

/* The round tick values of an axis from lo to hi: multiples of a 1, 2 or 5
 * times a power of ten step giving 4 to 10 ticks (linear), or the powers
 * of ten within [lo, hi] (log). Writes at most cap values to out and
 * returns how many there are. */
ART_API size_t art_chart_ticks(double lo, double hi, enum art_scale scale,
                               double *out, size_t cap);

/* Draw the chart and write it to f as PNG. Statuses as art_chart_layout(),
 * ART_E_NOMEM, ART_E_IO when drawing or writing fails. */
ART_API int art_chart_write_png(const struct art_chart *c, FILE *f);
/* The same into path, atomically; diag (may be NULL) receives the
 * system's reason of an I/O failure, as for bundles. */
ART_API int art_chart_save(const struct art_chart *c, const char *path,
                           struct art_diag *diag);
/* A chart as a bundle member; c and everything it points to must stay
 * valid until commit. The spec is checked now (art_chart_layout). */
ART_API int art_bundle_add_chart(art_bundle *b, const char *name,
                                 const struct art_chart *c);

/* Several charts side by side in one image (e.g. loss and accuracy), each
 * panel a chart laid out in its share of the width, text a little smaller
 * than a chart alone; the panels' own sizes are not used. */
struct art_figure {
    const char *title;              /* the PNG Title */
    const struct art_chart *panels; /* 1 to 8 */
    size_t n_panels;
    unsigned width_px, height_px;   /* 0: 1260 x 900 */
};
/* As the chart calls; ART_E_RANGE also when a panel would be narrower
 * than 200 px. */
ART_API int art_figure_write_png(const struct art_figure *fig, FILE *f);
ART_API int art_figure_save(const struct art_figure *fig, const char *path,
                            struct art_diag *diag);
ART_API int art_bundle_add_figure(art_bundle *b, const char *name,
                                  const struct art_figure *fig);

/* ---- Tensors as safetensors ------------------------------------------- */

/*
 * The safetensors format (PyTorch's and Hugging Face's weight files): an
 * 8-byte little-endian header length N, N bytes of JSON header padded with
 * spaces to a multiple of 8,
 *
 *     {"dense1.weight": {"dtype": "F32", "shape": [64, 784],
 *                        "data_offsets": [0, 200704]}, ...,
 *      "__metadata__": {"key": "value"}}
 *
 * then the byte buffer: each tensor row-major, little-endian, at its
 * offsets relative to the buffer's start. libartifacts knows nothing of
 * models: names and layouts are the caller's (edgefit uses PyTorch's,
 * "<layer>.weight" and "<layer>.bias").
 */
enum art_dtype {
    ART_DTYPE_F32 = 0,
    ART_DTYPE_F16,
    ART_DTYPE_BF16,
    ART_DTYPE_F64,
    ART_DTYPE_I8,
    ART_DTYPE_U8,
    ART_DTYPE_I32,
    ART_DTYPE_I64,
};

/* Bytes per element; 0 outside the enum. */
ART_API size_t art_dtype_size(enum art_dtype dtype);
/* The format's name ("F32", "F16", "BF16", "F64", "I8", "U8", "I32",
 * "I64"); NULL outside the enum. Static text. */
ART_API const char *art_dtype_name(enum art_dtype dtype);

#define ART_TENSOR_MAX_DIMS 8

struct art_tensor {
    const char *name;
    enum art_dtype dtype;
    size_t ndim;                         /* 0 for a scalar */
    uint64_t shape[ART_TENSOR_MAX_DIMS];
    const void *data; /* row-major, little-endian,
                         prod(shape) * art_dtype_size(dtype) bytes */
};

/*
 * Write n tensors as one safetensors file, atomically (a temporary file
 * renamed into place), with their data in the order given, contiguous.
 * meta_keys/meta_values (n_meta pairs, may be 0) become the "__metadata__"
 * string map. ART_E_INVALID (diag names the tensor) for a NULL or empty
 * name, a duplicate name, the reserved name "__metadata__", an unknown
 * dtype, more than ART_TENSOR_MAX_DIMS dimensions, NULL data with a
 * non-zero size; ART_E_OVERFLOW for sizes that do not fit; ART_E_IO,
 * ART_E_NOMEM. diag may be NULL.
 */
ART_API int art_safetensors_save(const char *path,
                                 const struct art_tensor *tensors, size_t n,
                                 const char *const *meta_keys,
                                 const char *const *meta_values,
                                 size_t n_meta, struct art_diag *diag);
/* The same file as a member of a bundle, so weights appear with the other
 * outputs, all or none. The tensor array is copied now; the names and data
 * it points to must stay valid until commit. */
ART_API int art_bundle_add_safetensors(art_bundle *b, const char *name,
                                       const struct art_tensor *tensors,
                                       size_t n);

/* A safetensors file read into memory. */
typedef struct art_safetensors art_safetensors;

/*
 * Read and check a whole file: the header length against the file size
 * and a 16 MiB cap (both before the header is read), the header's JSON (through jansson), each entry an object with a known
 * dtype, a shape of at most ART_TENSOR_MAX_DIMS non-negative integers
 * whose product times the dtype's size equals end - begin (overflow
 * checked), offsets in range; the tensors, sorted by offset, must cover
 * the buffer contiguously without overlap or gap, and the file must end
 * with the buffer. Duplicate names are refused. ART_E_IO (with the
 * system's reason), ART_E_PARSE for a malformed file, ART_E_NOMEM. On error
 * *out is NULL and diag (may be NULL) names the tensor at fault (or the
 * header part) and what is wrong.
 */
ART_API int art_safetensors_load(const char *path, art_safetensors **out,
                                 struct art_diag *diag);
/* Tensors in file order (of their offsets); pointers stay valid until
 * destroy. */
ART_API size_t art_safetensors_count(const art_safetensors *st);
ART_API const struct art_tensor *
art_safetensors_tensor(const art_safetensors *st, size_t i); /* NULL past
                                                                 the end */
ART_API const struct art_tensor *
art_safetensors_find(const art_safetensors *st, const char *name); /* NULL
                                                          if absent */
/* The "__metadata__" map: its size, and the value of key (NULL if
 * absent). */
ART_API size_t art_safetensors_meta_count(const art_safetensors *st);
ART_API const char *art_safetensors_meta(const art_safetensors *st,
                                         const char *key);
/* The i-th pair of the map, in the file's order; ART_E_RANGE past the
 * end. The strings belong to st. */
ART_API int art_safetensors_meta_at(const art_safetensors *st, size_t i,
                                    const char **key, const char **value);
ART_API void art_safetensors_destroy(art_safetensors *st); /* NULL ok */

/* ---- Arrays as NumPy .npy files ---------------------------------------- */

/*
 * NumPy's .npy format (numpy.save, numpy.lib.format): the magic
 * "\x93NUMPY", a version byte pair (1.0, 2.0 or 3.0), the header length
 * (2 bytes little-endian in 1.0, 4 bytes in 2.0 and 3.0), a Python dict
 * literal {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }
 * padded with spaces and a newline, then the array's bytes in C order.
 * The dtypes read are those art_tensor holds: '<f2' F16, '<f4' F32, '<f8'
 * F64, '|i1' I8, '|u1' U8, '<i4' I32, '<i8' I64 ('>' big-endian variants
 * are swapped on reading, '=' is the host's order).
 */
typedef struct art_npy art_npy;

/*
 * Read and check a whole .npy file. Refused, with diag naming the path and
 * what is wrong: a missing magic, an unknown version, a header length past
 * the end of the file, a header that is not the dict above (unknown or
 * repeated keys, a structured or unsupported dtype, fortran_order True),
 * more than ART_TENSOR_MAX_DIMS dimensions, a shape whose size does not
 * fit in 64 bits (ART_E_OVERFLOW), and data shorter ("truncated") or
 * longer (trailing bytes) than the shape and dtype make. ART_E_IO with
 * the system's reason (diag->sys_errno) when the file cannot be read,
 * ART_E_PARSE for a malformed file, ART_E_NOMEM. On success *out is
 * released with art_npy_destroy(); on error it is NULL.
 */
ART_API int art_npy_load(const char *path, art_npy **out,
                         struct art_diag *diag);
/* The same for len bytes in memory; source names them in messages (NULL:
 * "<buffer>"). The data is copied. */
ART_API int art_npy_parse(const void *buf, size_t len, const char *source,
                          art_npy **out, struct art_diag *diag);
/* The array: name is the path (or source) it was read from, data is
 * host-order and aligned for its dtype. Valid until destroy; NULL for a
 * NULL array. */
ART_API const struct art_tensor *art_npy_tensor(const art_npy *a);
/* The file's major format version: 1, 2 or 3 (0 for NULL). */
ART_API unsigned art_npy_version(const art_npy *a);
ART_API void art_npy_destroy(art_npy *a); /* NULL ok */

/*
 * Write t as a .npy file, atomically, exactly as numpy.save writes it
 * (version 1.0, the header padded so that the data starts at a multiple
 * of 64 bytes). t->name is not stored. ART_E_INVALID for BF16 (NumPy has
 * no such type), an unknown dtype, more than ART_TENSOR_MAX_DIMS
 * dimensions or NULL data with a non-zero size; ART_E_OVERFLOW; ART_E_IO
 * with the system's reason.
 */
ART_API int art_npy_save(const char *path, const struct art_tensor *t,
                         struct art_diag *diag);

#ifdef __cplusplus
}
#endif

#endif /* EDGEFIT_ARTIFACTS_H */
