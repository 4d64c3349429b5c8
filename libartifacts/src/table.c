#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "utf8.h"
#include "alloc_rec.h" /* last: it wraps malloc and co. */

struct cell {
    bool set;
    union {
        int64_t i;
        uint64_t u;
        double r;
        char *s;
        bool b;
    } v;
};

struct column {
    char *name;
    enum art_type type;
};

struct art_table {
    char *name;
    struct column *cols;
    size_t ncols;
    struct cell *cells; /* rows * ncols, row-major */
    size_t nrows, cap_rows;
    long *lines;      /* cap_rows entries once a line was set, else NULL */
    long header_line; /* 0 unless read from a file */
};

ART_API int art_table_create(const char *name, art_table **out)
{
    if (!out) {
        return ART_E_INVALID;
    }
    *out = NULL;
    if (!name) {
        return ART_E_INVALID;
    }
    art_table *t = calloc(1, sizeof *t);
    if (!t || !(t->name = strdup(name))) {
        free(t);
        return ART_E_NOMEM;
    }
    *out = t;
    return ART_OK;
}

ART_API void art_table_destroy(art_table *t)
{
    if (!t) {
        return;
    }
    for (size_t c = 0; c < t->ncols; c++) {
        if (t->cols[c].type == ART_TEXT) {
            for (size_t r = 0; r < t->nrows; r++) {
                free(t->cells[r * t->ncols + c].v.s);
            }
        }
        free(t->cols[c].name);
    }
    free(t->cols);
    free(t->cells);
    free(t->lines);
    free(t->name);
    free(t);
}

ART_API int art_table_add_column(art_table *t, const char *name,
                                 enum art_type type)
{
    if (!t || !name || !*name || type < ART_INT || type > ART_BOOL ||
        t->nrows > 0 || art_table_find_column(t, name) >= 0) {
        return ART_E_INVALID;
    }
    struct column *cols = realloc(t->cols, (t->ncols + 1) * sizeof *cols);
    if (!cols) {
        return ART_E_NOMEM;
    }
    t->cols = cols;
    char *copy = strdup(name);
    if (!copy) {
        return ART_E_NOMEM;
    }
    t->cols[t->ncols].name = copy;
    t->cols[t->ncols].type = type;
    t->ncols++;
    return ART_OK;
}

ART_API int art_table_add_row(art_table *t, size_t *row)
{
    if (!t || t->ncols == 0) {
        return ART_E_INVALID;
    }
    if (t->nrows == t->cap_rows) {
        size_t cap = t->cap_rows ? t->cap_rows * 2 : 16;
        if (cap < t->cap_rows || cap > SIZE_MAX / t->ncols / sizeof(struct cell)) {
            return ART_E_OVERFLOW;
        }
        struct cell *cells = realloc(t->cells, cap * t->ncols * sizeof *cells);
        if (!cells) {
            return ART_E_NOMEM;
        }
        t->cells = cells;
        if (t->lines) {
            long *lines = realloc(t->lines, cap * sizeof *lines);
            if (!lines) {
                return ART_E_NOMEM;
            }
            t->lines = lines;
        }
        t->cap_rows = cap;
    }
    memset(&t->cells[t->nrows * t->ncols], 0, t->ncols * sizeof(struct cell));
    if (t->lines) {
        t->lines[t->nrows] = 0;
    }
    if (row) {
        *row = t->nrows;
    }
    t->nrows++;
    return ART_OK;
}

int art_table_set_row_line(art_table *t, size_t row, long line)
{
    if (row >= t->nrows) {
        return ART_E_RANGE;
    }
    if (!t->lines) {
        t->lines = calloc(t->cap_rows, sizeof *t->lines);
        if (!t->lines) {
            return ART_E_NOMEM;
        }
    }
    t->lines[row] = line;
    return ART_OK;
}

int art_table_set_header_line(art_table *t, long line)
{
    t->header_line = line;
    return ART_OK;
}

ART_API long art_table_row_line(const art_table *t, size_t row)
{
    return t && t->lines && row < t->nrows ? t->lines[row] : 0;
}

ART_API long art_table_header_line(const art_table *t)
{
    return t ? t->header_line : 0;
}

static struct cell *cell_at(const art_table *t, size_t row, size_t col,
                            int *st)
{
    if (!t) {
        *st = ART_E_INVALID;
        return NULL;
    }
    if (row >= t->nrows || col >= t->ncols) {
        *st = ART_E_RANGE;
        return NULL;
    }
    *st = ART_OK;
    return &t->cells[row * t->ncols + col];
}

ART_API int art_table_set_int(art_table *t, size_t row, size_t col, int64_t v)
{
    int st;
    struct cell *c = cell_at(t, row, col, &st);
    if (!c) {
        return st;
    }
    switch (t->cols[col].type) {
    case ART_INT:
        c->v.i = v;
        break;
    case ART_UINT:
        if (v < 0) {
            return ART_E_INVALID;
        }
        c->v.u = (uint64_t)v;
        break;
    case ART_REAL:
        c->v.r = (double)v;
        break;
    default:
        return ART_E_INVALID;
    }
    c->set = true;
    return ART_OK;
}

ART_API int art_table_set_uint(art_table *t, size_t row, size_t col,
                               uint64_t v)
{
    int st;
    struct cell *c = cell_at(t, row, col, &st);
    if (!c) {
        return st;
    }
    switch (t->cols[col].type) {
    case ART_UINT:
        c->v.u = v;
        break;
    case ART_INT:
        if (v > INT64_MAX) {
            return ART_E_INVALID;
        }
        c->v.i = (int64_t)v;
        break;
    case ART_REAL:
        c->v.r = (double)v;
        break;
    default:
        return ART_E_INVALID;
    }
    c->set = true;
    return ART_OK;
}

ART_API int art_table_set_real(art_table *t, size_t row, size_t col, double v)
{
    int st;
    struct cell *c = cell_at(t, row, col, &st);
    if (!c) {
        return st;
    }
    if (t->cols[col].type != ART_REAL) {
        return ART_E_INVALID;
    }
    c->v.r = v;
    c->set = true;
    return ART_OK;
}

ART_API int art_table_set_text(art_table *t, size_t row, size_t col,
                               const char *v)
{
    int st;
    struct cell *c = cell_at(t, row, col, &st);
    if (!c) {
        return st;
    }
    if (t->cols[col].type != ART_TEXT || !v) {
        return ART_E_INVALID;
    }
    /* CSV and JSON are UTF-8: text that is not could be written but
     * never read back (and jansson refuses it). */
    const size_t len = strlen(v);
    if (utf8_invalid_at((const unsigned char *)v, len) != len) {
        return ART_E_INVALID;
    }
    char *copy = strdup(v);
    if (!copy) {
        return ART_E_NOMEM;
    }
    free(c->v.s);
    c->v.s = copy;
    c->set = true;
    return ART_OK;
}

ART_API int art_table_set_bool(art_table *t, size_t row, size_t col, bool v)
{
    int st;
    struct cell *c = cell_at(t, row, col, &st);
    if (!c) {
        return st;
    }
    if (t->cols[col].type != ART_BOOL) {
        return ART_E_INVALID;
    }
    c->v.b = v;
    c->set = true;
    return ART_OK;
}

ART_API const char *art_table_name(const art_table *t)
{
    return t ? t->name : NULL;
}

ART_API size_t art_table_rows(const art_table *t)
{
    return t ? t->nrows : 0;
}

ART_API size_t art_table_cols(const art_table *t)
{
    return t ? t->ncols : 0;
}

ART_API const char *art_table_column_name(const art_table *t, size_t col)
{
    return t && col < t->ncols ? t->cols[col].name : NULL;
}

ART_API enum art_type art_table_column_type(const art_table *t, size_t col)
{
    return t && col < t->ncols ? t->cols[col].type : (enum art_type)0;
}

ART_API long art_table_find_column(const art_table *t, const char *name)
{
    if (!t || !name) {
        return -1;
    }
    for (size_t c = 0; c < t->ncols; c++) {
        if (strcmp(t->cols[c].name, name) == 0) {
            return (long)c;
        }
    }
    return -1;
}

ART_API bool art_table_is_set(const art_table *t, size_t row, size_t col)
{
    int st;
    const struct cell *c = cell_at(t, row, col, &st);
    return c && c->set;
}

static const struct cell *get_cell(const art_table *t, size_t row, size_t col,
                                   enum art_type want, int *st)
{
    const struct cell *c = cell_at(t, row, col, st);
    if (!c) {
        return NULL;
    }
    if (!c->set || t->cols[col].type != want) {
        *st = ART_E_INVALID;
        return NULL;
    }
    return c;
}

ART_API int art_table_get_int(const art_table *t, size_t row, size_t col,
                              int64_t *v)
{
    int st;
    const struct cell *c = cell_at(t, row, col, &st);
    if (!c) {
        return st;
    }
    const enum art_type ty = t->cols[col].type;
    if (!c->set || (ty != ART_INT && ty != ART_UINT) ||
        (ty == ART_UINT && c->v.u > INT64_MAX)) {
        return ART_E_INVALID;
    }
    if (v) {
        *v = ty == ART_INT ? c->v.i : (int64_t)c->v.u;
    }
    return ART_OK;
}

ART_API int art_table_get_uint(const art_table *t, size_t row, size_t col,
                               uint64_t *v)
{
    int st;
    const struct cell *c = cell_at(t, row, col, &st);
    if (!c) {
        return st;
    }
    const enum art_type ty = t->cols[col].type;
    if (!c->set || (ty != ART_INT && ty != ART_UINT) ||
        (ty == ART_INT && c->v.i < 0)) {
        return ART_E_INVALID;
    }
    if (v) {
        *v = ty == ART_UINT ? c->v.u : (uint64_t)c->v.i;
    }
    return ART_OK;
}

ART_API int art_table_get_real(const art_table *t, size_t row, size_t col,
                               double *v)
{
    int st;
    const struct cell *c = cell_at(t, row, col, &st);
    if (!c) {
        return st;
    }
    if (!c->set) {
        return ART_E_INVALID;
    }
    double x;
    switch (t->cols[col].type) {
    case ART_REAL:
        x = c->v.r;
        break;
    case ART_INT:
        x = (double)c->v.i;
        break;
    case ART_UINT:
        x = (double)c->v.u;
        break;
    default:
        return ART_E_INVALID;
    }
    if (v) {
        *v = x;
    }
    return ART_OK;
}

ART_API int art_table_get_text(const art_table *t, size_t row, size_t col,
                               const char **v)
{
    int st;
    const struct cell *c = get_cell(t, row, col, ART_TEXT, &st);
    if (c && v) {
        *v = c->v.s;
    }
    return st;
}

ART_API int art_table_get_bool(const art_table *t, size_t row, size_t col,
                               bool *v)
{
    int st;
    const struct cell *c = get_cell(t, row, col, ART_BOOL, &st);
    if (c && v) {
        *v = c->v.b;
    }
    return st;
}

void art_format_real(double v, char *buf, size_t len)
{
    if (isnan(v)) {
        snprintf(buf, len, "nan");
        return;
    }
    if (isinf(v)) {
        snprintf(buf, len, v < 0 ? "-inf" : "inf");
        return;
    }
    /* A whole number below 2^53 (a count, a byte size held as a real) is
     * written in full: "9282560", not the shorter "9.28256e+06" that reads
     * back to the same double but not as the integer a reader expects. */
    if (v == floor(v) && fabs(v) < 0x1p53) {
        snprintf(buf, len, "%.0f", v);
        return;
    }
    /* Otherwise the shortest of 1..17 significant digits that reads back
     * exactly: 0.1 stays "0.1" (not 0.10000000000000001), and every double
     * survives a CSV round trip. */
    char tmp[48]; /* "%.17g" needs at most 24 bytes */
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(tmp, sizeof tmp, "%.*g", prec, v);
        if (strtod(tmp, NULL) == v) {
            break;
        }
    }
    snprintf(buf, len, "%s", tmp);
}

ART_API size_t art_table_format_cell(const art_table *t, size_t row,
                                     size_t col, char *buf, size_t len)
{
    int st;
    const struct cell *c = cell_at(t, row, col, &st);
    char tmp[64];
    const char *s = "";
    if (c && c->set) {
        switch (t->cols[col].type) {
        case ART_INT:
            snprintf(tmp, sizeof tmp, "%" PRId64, c->v.i);
            s = tmp;
            break;
        case ART_UINT:
            snprintf(tmp, sizeof tmp, "%" PRIu64, c->v.u);
            s = tmp;
            break;
        case ART_REAL:
            art_format_real(c->v.r, tmp, sizeof tmp);
            s = tmp;
            break;
        case ART_BOOL:
            s = c->v.b ? "true" : "false";
            break;
        case ART_TEXT:
            s = c->v.s;
            break;
        }
    }
    const size_t need = strlen(s);
    if (buf && len) {
        const size_t n = need < len - 1 ? need : len - 1;
        memcpy(buf, s, n);
        buf[n] = '\0';
    }
    return need;
}

json_t *art_table_to_json(const art_table *t)
{
    json_t *arr = json_array();
    if (!arr) {
        return NULL;
    }
    for (size_t r = 0; r < t->nrows; r++) {
        json_t *obj = json_object();
        if (!obj || json_array_append_new(arr, obj) != 0) {
            goto fail;
        }
        for (size_t c = 0; c < t->ncols; c++) {
            const struct cell *cell = &t->cells[r * t->ncols + c];
            json_t *v = NULL;
            if (!cell->set) {
                v = json_null();
            } else {
                switch (t->cols[c].type) {
                case ART_INT:
                    v = json_integer(cell->v.i);
                    break;
                case ART_UINT:
                    /* JSON integers in jansson are signed 64-bit. */
                    v = cell->v.u <= INT64_MAX
                            ? json_integer((json_int_t)cell->v.u)
                            : json_real((double)cell->v.u);
                    break;
                case ART_REAL:
                    v = isfinite(cell->v.r) ? json_real(cell->v.r)
                                            : json_null();
                    break;
                case ART_TEXT:
                    v = json_string(cell->v.s);
                    break;
                case ART_BOOL:
                    v = json_boolean(cell->v.b);
                    break;
                }
            }
            if (!v || json_object_set_new(obj, t->cols[c].name, v) != 0) {
                goto fail;
            }
        }
    }
    return arr;
fail:
    json_decref(arr);
    return NULL;
}
