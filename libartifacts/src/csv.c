#include <csv.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "utf8.h"
#include "alloc_rec.h" /* last: it wraps malloc and co. */

/* ---- Writing ----------------------------------------------------------- */

/* libcsv, like most readers, trims spaces and tabs around an unquoted field
 * and splits at commas and line ends; a reader (ours included) drops a
 * byte-order mark at the very start of a file. A field is quoted whenever
 * any of these would change it on the way back. */
static bool needs_quotes(const char *s, bool file_start)
{
    if (!*s) {
        return false;
    }
    const char last = s[strlen(s) - 1];
    if (s[0] == ' ' || s[0] == '\t' || last == ' ' || last == '\t') {
        return true;
    }
    if (file_start && utf8_is_bom((const unsigned char *)s, strlen(s))) {
        return true;
    }
    return strpbrk(s, ",\"\r\n") != NULL;
}

static int put_field(FILE *f, const char *s, bool file_start)
{
    if (needs_quotes(s, file_start)) {
        /* libcsv doubles the embedded quotes and adds the outer ones. */
        return csv_fwrite(f, s, strlen(s)) == 0 ? ART_OK : ART_E_IO;
    }
    return fputs(s, f) >= 0 ? ART_OK : ART_E_IO;
}

int art_table_write_csv_with(const art_table *t, FILE *f,
                             art_round_fn round)
{
    const size_t cols = art_table_cols(t);
    char small[128];
    for (size_t c = 0; c < cols; c++) {
        if ((c && fputc(',', f) == EOF) ||
            put_field(f, art_table_column_name(t, c), c == 0) != ART_OK) {
            return ART_E_IO;
        }
    }
    if (fputc('\n', f) == EOF) {
        return ART_E_IO;
    }
    for (size_t r = 0; r < art_table_rows(t); r++) {
        for (size_t c = 0; c < cols; c++) {
            const char *s = small;
            double v;
            size_t need;
            if (round && art_table_column_type(t, c) == ART_REAL &&
                art_table_get_real(t, r, c, &v) == ART_OK && isfinite(v)) {
                art_format_real(round(art_table_column_name(t, c), v), small,
                                sizeof small);
                need = strlen(small);
            } else {
                need = art_table_format_cell(t, r, c, small, sizeof small);
            }
            if (need >= sizeof small) {
                /* Only text is this long; it is stored as is. */
                (void)art_table_get_text(t, r, c, &s);
            }
            if ((c && fputc(',', f) == EOF) ||
                put_field(f, s, false) != ART_OK) {
                return ART_E_IO;
            }
            /* A lone empty field would make an empty line, which readers
             * skip: quote it so the row survives. */
            if (cols == 1 && !*s && fputs("\"\"", f) < 0) {
                return ART_E_IO;
            }
        }
        if (fputc('\n', f) == EOF) {
            return ART_E_IO;
        }
    }
    return ferror(f) ? ART_E_IO : ART_OK;
}

static int write_csv(const void *obj, FILE *f)
{
    return art_table_write_csv_with(obj, f, NULL);
}

ART_API int art_table_write_csv(const art_table *t, FILE *f)
{
    if (!t || !f) {
        return ART_E_INVALID;
    }
    return write_csv(t, f);
}

ART_API int art_table_write_csv_rounded(const art_table *t, FILE *f,
                                        art_round_fn round)
{
    if (!t || !f || !round) {
        return ART_E_INVALID;
    }
    return art_table_write_csv_with(t, f, round);
}

ART_API int art_table_save_csv(const art_table *t, const char *path,
                               struct art_diag *diag)
{
    art_diag_clear(diag);
    if (!t || !path) {
        return ART_E_INVALID;
    }
    return art_save_with(path, write_csv, t, diag);
}

/* ---- Terminal text ----------------------------------------------------- */

ART_API size_t art_group_thousands(const char *s, char *buf, size_t len)
{
    /* a number: optional sign, digits, then a fraction or an exponent */
    size_t lead = s[0] == '-' || s[0] == '+';
    size_t digits = strspn(s + lead, "0123456789");
    const char *rest = s + lead + digits;
    const bool number = digits > 0 &&
                        (*rest == '\0' || *rest == '.' || *rest == 'e' ||
                         *rest == 'E') &&
                        strspn(rest, "0123456789.eE+-") == strlen(rest);
    if (!number || digits < 4 || strchr(rest, 'e') || strchr(rest, 'E')) {
        if (buf && len) {
            snprintf(buf, len, "%s", s);
        }
        return strlen(s);
    }
    size_t k = 0;
    char out[128];
    for (size_t i = 0; i < lead && k < sizeof out - 1; i++) {
        out[k++] = s[i];
    }
    for (size_t i = 0; i < digits && k < sizeof out - 1; i++) {
        if (i > 0 && (digits - i) % 3 == 0 && k < sizeof out - 1) {
            out[k++] = ',';
        }
        out[k++] = s[lead + i];
    }
    out[k] = '\0';
    const int n = snprintf(buf, buf ? len : 0, "%s%s", out, rest);
    return n < 0 ? 0 : (size_t)n;
}

static void format_for_print(const art_table *t, size_t r, size_t c,
                             int decimals, bool grouped, char *buf,
                             size_t len)
{
    double v;
    if (decimals >= 0 && art_table_column_type(t, c) == ART_REAL &&
        art_table_get_real(t, r, c, &v) == ART_OK) {
        snprintf(buf, len, "%.*f", decimals, v);
        return;
    }
    art_table_format_cell(t, r, c, buf, len);
    const enum art_type type = art_table_column_type(t, c);
    if (grouped && (type == ART_INT || type == ART_UINT || type == ART_REAL)) {
        char plain[128];
        snprintf(plain, sizeof plain, "%s", buf);
        art_group_thousands(plain, buf, len);
    }
}

static int print_table(const art_table *t, FILE *f, int decimals,
                       bool grouped);

ART_API int art_table_print(const art_table *t, FILE *f, int decimals)
{
    return print_table(t, f, decimals, false);
}

ART_API int art_table_print_grouped(const art_table *t, FILE *f)
{
    return print_table(t, f, -1, true);
}

static int print_table(const art_table *t, FILE *f, int decimals,
                       bool grouped)
{
    if (!t || !f) {
        return ART_E_INVALID;
    }
    const size_t cols = art_table_cols(t), rows = art_table_rows(t);
    size_t *width = calloc(cols ? cols : 1, sizeof *width);
    if (!width) {
        return ART_E_NOMEM;
    }
    char buf[256];
    for (size_t c = 0; c < cols; c++) {
        width[c] = strlen(art_table_column_name(t, c));
        for (size_t r = 0; r < rows; r++) {
            format_for_print(t, r, c, decimals, grouped, buf, sizeof buf);
            const size_t w = strlen(buf);
            width[c] = w > width[c] ? w : width[c];
        }
    }
    for (size_t c = 0; c < cols; c++) {
        const bool left = art_table_column_type(t, c) == ART_TEXT;
        fprintf(f, "%s%*s", c ? "  " : "", left ? -(int)width[c] : (int)width[c],
                art_table_column_name(t, c));
    }
    fputc('\n', f);
    for (size_t r = 0; r < rows; r++) {
        for (size_t c = 0; c < cols; c++) {
            const bool left = art_table_column_type(t, c) == ART_TEXT;
            format_for_print(t, r, c, decimals, grouped, buf, sizeof buf);
            fprintf(f, "%s%*s", c ? "  " : "",
                    left ? -(int)width[c] : (int)width[c], buf);
        }
        fputc('\n', f);
    }
    free(width);
    return ferror(f) ? ART_E_IO : ART_OK;
}

/* ---- Reading ----------------------------------------------------------- */

struct reader {
    char **fields; /* all fields, row-major, header first */
    size_t nfields, cap;
    size_t row_len; /* fields in the current record */
    size_t header_len;
    size_t records;
    long *rec_lines; /* line where each record began, header first */
    size_t cap_lines;
    long line;      /* physical line of the bytes being parsed, 1-based */
    long col;       /* bytes already seen on that line */
    long rec_start; /* line of the current record's first byte, or 0 */
    int after_cr;   /* the last byte was a '\r': a '\n' now ends no line */
    struct utf8_state utf8;
    long seq_col;           /* column where the open UTF-8 sequence began */
    unsigned char seq_byte; /* and its first byte */
    int st;
    struct art_diag *diag;
};

static void read_fail(struct reader *rd, long line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void read_fail(struct reader *rd, long line, const char *fmt, ...)
{
    rd->st = ART_E_PARSE;
    if (rd->diag) {
        va_list ap;
        va_start(ap, fmt);
        rd->diag->line = line > INT32_MAX ? INT32_MAX : (int)line;
        vsnprintf(rd->diag->message, sizeof rd->diag->message, fmt, ap);
        va_end(ap);
    }
}

static void on_field(void *s, size_t len, void *data)
{
    struct reader *rd = data;
    if (rd->st != ART_OK) {
        return;
    }
    if (rd->nfields == rd->cap) {
        size_t cap = rd->cap ? rd->cap * 2 : 64;
        char **p = realloc(rd->fields, cap * sizeof *p);
        if (!p) {
            rd->st = ART_E_NOMEM;
            return;
        }
        rd->fields = p;
        rd->cap = cap;
    }
    char *copy = malloc(len + 1);
    if (!copy) {
        rd->st = ART_E_NOMEM;
        return;
    }
    memcpy(copy, s ? s : "", len);
    copy[len] = '\0';
    rd->fields[rd->nfields++] = copy;
    rd->row_len++;
}

static void on_record(int c, void *data)
{
    struct reader *rd = data;
    (void)c;
    const long start = rd->rec_start ? rd->rec_start : rd->line;
    rd->rec_start = 0;
    if (rd->st != ART_OK) {
        return;
    }
    if (rd->records == rd->cap_lines) {
        const size_t cap = rd->cap_lines ? rd->cap_lines * 2 : 64;
        long *p = realloc(rd->rec_lines, cap * sizeof *p);
        if (!p) {
            rd->st = ART_E_NOMEM;
            return;
        }
        rd->rec_lines = p;
        rd->cap_lines = cap;
    }
    rd->rec_lines[rd->records] = start;
    if (rd->records == 0) {
        rd->header_len = rd->row_len;
    } else if (rd->row_len != rd->header_len) {
        read_fail(rd, start, "%zu fields where the header has %zu",
                  rd->row_len, rd->header_len);
    }
    rd->records++;
    rd->row_len = 0;
}

/* libcsv's failure as a person reads it, at the line being fed and the
 * column of the byte it stopped at. In strict mode its one parse error
 * ("error parsing data while strict checking enabled") means a quote
 * where none may be: after a quoted field's closing quote, or inside a
 * field that does not start with one. */
static void parse_fail(struct reader *rd, struct csv_parser *p, long col)
{
    if (csv_error(p) == CSV_EPARSE && p->quoted) {
        read_fail(rd, rd->line,
                  "column %ld: a quoted field goes on after its closing "
                  "quote (a quote inside a quoted field is written \"\")",
                  col);
    } else if (csv_error(p) == CSV_EPARSE) {
        read_fail(rd, rd->line,
                  "column %ld: a quote inside a field that does not start "
                  "with one (quote the whole field and write the quote as "
                  "\"\")", col);
    } else {
        read_fail(rd, rd->line, "%s", csv_strerror(csv_error(p)));
    }
}

/* Check n raw bytes (UTF-8, no NUL) and hand them to libcsv a line at a
 * time. libcsv does not say where a record began, and it skips blank
 * lines, so the reader counts lines itself: a record begins on the first
 * line after the previous record that holds more than blanks, and feeding
 * line by line makes on_record() run before the next line is counted. */
static void feed(struct reader *rd, struct csv_parser *p, const char *buf,
                 size_t n)
{
    size_t from = 0;
    for (size_t i = 0; i < n && rd->st == ART_OK; i++) {
        const unsigned char b = (unsigned char)buf[i];
        rd->col++;
        if (rd->utf8.need == 0) {
            rd->seq_col = rd->col;
            rd->seq_byte = b;
        }
        if (b == '\0') {
            read_fail(rd, rd->line, "column %ld: a NUL byte", rd->col);
            return;
        }
        if (!utf8_step(&rd->utf8, b)) {
            read_fail(rd, rd->line,
                      "column %ld: invalid UTF-8 (byte 0x%02X); the file "
                      "must be UTF-8 text",
                      rd->seq_col, rd->seq_byte);
            return;
        }
        if (rd->rec_start == 0 && b != ' ' && b != '\t' && b != '\r' &&
            b != '\n') {
            rd->rec_start = rd->line;
        }
        if (b != '\n' && b != '\r') {
            rd->after_cr = 0;
            continue;
        }
        const size_t len = i + 1 - from;
        const size_t done = csv_parse(p, buf + from, len, on_field,
                                      on_record, rd);
        if (done != len) {
            parse_fail(rd, p, rd->col - (long)len + (long)done + 1);
            return;
        }
        from = i + 1;
        /* A line ends at "\n", "\r\n" or a lone "\r" (libcsv ends a
         * record at each), so that every record has its own line. */
        if (b == '\r' || !rd->after_cr) {
            rd->line++;
        }
        rd->col = 0;
        rd->after_cr = b == '\r';
        continue;
    }
    const size_t len = n - from;
    if (rd->st == ART_OK && len > 0) {
        const size_t done = csv_parse(p, buf + from, len, on_field,
                                      on_record, rd);
        if (done != len) {
            parse_fail(rd, p, rd->col - (long)len + (long)done + 1);
        }
    }
}

static bool parse_bool(const char *s, bool *v)
{
    if (!strcmp(s, "true") || !strcmp(s, "True")) {
        *v = true;
        return true;
    }
    if (!strcmp(s, "false") || !strcmp(s, "False")) {
        *v = false;
        return true;
    }
    return false;
}

static bool parse_i64(const char *s, int64_t *v)
{
    char *end;
    errno = 0;
    long long x = strtoll(s, &end, 10);
    /* "-0" is the real -0.0 as written back (an integer has no sign of
     * zero): reading it as the integer 0 would not round-trip. */
    if (errno || end == s || *end || strpbrk(s, ".eE") ||
        (x == 0 && strchr(s, '-'))) {
        return false;
    }
    *v = x;
    return true;
}

static bool parse_u64(const char *s, uint64_t *v)
{
    char *end;
    if (*s == '-' || *s == '+') {
        return false;
    }
    errno = 0;
    unsigned long long x = strtoull(s, &end, 10);
    if (errno || end == s || *end) {
        return false;
    }
    *v = x;
    return true;
}

static bool parse_real(const char *s, double *v)
{
    char *end;
    errno = 0;
    double x = strtod(s, &end);
    /* Text out of a double's range (1e999, 1e-400) stays text rather than
     * becoming inf or 0, so a reader can say what it was; a subnormal
     * keeps its value and is a number. */
    if (end == s || *end || (errno == ERANGE && (isinf(x) || x == 0.0))) {
        return false;
    }
    *v = x;
    return true;
}

static enum art_type infer(char **col, size_t stride, size_t n)
{
    bool all_bool = true, all_int = true, all_uint = true, all_real = true;
    size_t filled = 0;
    for (size_t i = 0; i < n; i++) {
        const char *s = col[i * stride];
        if (!*s) {
            continue;
        }
        filled++;
        bool b;
        int64_t x;
        uint64_t u;
        double d;
        all_bool = all_bool && parse_bool(s, &b);
        all_int = all_int && parse_i64(s, &x);
        all_uint = all_uint && parse_u64(s, &u);
        all_real = all_real && parse_real(s, &d);
    }
    if (!filled) {
        return ART_TEXT;
    }
    if (all_bool) {
        return ART_BOOL;
    }
    if (all_int) {
        return ART_INT;
    }
    if (all_uint) {
        return ART_UINT;
    }
    return all_real ? ART_REAL : ART_TEXT;
}

static int set_from_text(art_table *t, size_t r, size_t c, const char *s)
{
    if (!*s) {
        return ART_OK;
    }
    switch (art_table_column_type(t, c)) {
    case ART_BOOL: {
        bool b = false;
        parse_bool(s, &b);
        return art_table_set_bool(t, r, c, b);
    }
    case ART_INT: {
        int64_t x = 0;
        parse_i64(s, &x);
        return art_table_set_int(t, r, c, x);
    }
    case ART_UINT: {
        uint64_t u = 0;
        parse_u64(s, &u);
        return art_table_set_uint(t, r, c, u);
    }
    case ART_REAL: {
        double d = 0;
        parse_real(s, &d);
        return art_table_set_real(t, r, c, d);
    }
    default:
        return art_table_set_text(t, r, c, s);
    }
}

static const char *base_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

ART_API int art_table_load_csv(const char *path, art_table **out,
                               struct art_diag *diag)
{
    if (!out) {
        return ART_E_INVALID;
    }
    *out = NULL;
    art_diag_clear(diag);
    if (!path) {
        return ART_E_INVALID;
    }
    FILE *f = fopen(path, "rb");
    if (!f) {
        return art_io_fail(diag, path, errno);
    }
    struct csv_parser p;
    struct reader rd = {.st = ART_OK, .diag = diag, .line = 1,
                        .utf8 = UTF8_STATE_INIT};
    art_table *t = NULL;
    int st = ART_OK;
    if (csv_init(&p, CSV_STRICT | CSV_STRICT_FINI | CSV_APPEND_NULL) != 0) {
        fclose(f);
        return ART_E_NOMEM;
    }
    char buf[8192];
    size_t n;
    bool first = true;
    while (rd.st == ART_OK && (n = fread(buf, 1, sizeof buf, f)) > 0) {
        /* A byte-order mark is an editor's signature, not a header
         * cell. (fread fills the buffer unless the file ends first.) */
        const size_t skip =
            first && utf8_is_bom((const unsigned char *)buf, n) ? 3 : 0;
        first = false;
        feed(&rd, &p, buf + skip, n - skip);
    }
    if (ferror(f)) {
        rd.st = art_io_fail(diag, path, errno);
    }
    if (rd.st == ART_OK && !utf8_complete(&rd.utf8)) {
        read_fail(&rd, rd.line,
                  "column %ld: invalid UTF-8 (byte 0x%02X); the file "
                  "ends inside its sequence",
                  rd.seq_col, rd.seq_byte);
    }
    if (rd.st == ART_OK && csv_fini(&p, on_field, on_record, &rd) != 0) {
        if (csv_error(&p) == CSV_EPARSE) {
            /* the file ended inside a quoted field: every line after its
             * opening quote became part of it, so the place to look is
             * where that record began, not the end of the file */
            read_fail(&rd, rd.rec_start ? rd.rec_start : rd.line,
                      "a quoted field opened in this record is never "
                      "closed (the file ends inside it; a quote inside a "
                      "quoted field is written \"\")");
        } else {
            read_fail(&rd, rd.line, "%s", csv_strerror(csv_error(&p)));
        }
    }
    csv_free(&p);
    fclose(f);
    st = rd.st;
    if (st == ART_OK && rd.records == 0) {
        read_fail(&rd, 1, "empty file: no header line");
        st = rd.st;
    }
    if (st != ART_OK) {
        goto done;
    }
    const size_t cols = rd.header_len, rows = rd.records - 1;
    if ((st = art_table_create(base_name(path), &t)) != ART_OK) {
        goto done;
    }
    for (size_t c = 0; c < cols; c++) {
        const enum art_type ty = infer(rd.fields + cols + c, cols, rows);
        st = art_table_add_column(t, rd.fields[c], ty);
        if (st == ART_E_INVALID) {
            read_fail(&rd, rd.rec_lines[0],
                      "column %zu: empty or repeated name '%s'", c + 1,
                      rd.fields[c]);
            st = rd.st;
        }
        if (st != ART_OK) {
            goto done;
        }
    }
    for (size_t r = 0; r < rows && st == ART_OK; r++) {
        st = art_table_add_row(t, NULL);
        if (st == ART_OK) {
            st = art_table_set_row_line(t, r, rd.rec_lines[r + 1]);
        }
        for (size_t c = 0; c < cols && st == ART_OK; c++) {
            st = set_from_text(t, r, c, rd.fields[(r + 1) * cols + c]);
        }
    }
done:
    for (size_t i = 0; i < rd.nfields; i++) {
        free(rd.fields[i]);
    }
    free(rd.fields);
    if (st == ART_OK) {
        st = art_table_set_header_line(t, rd.rec_lines[0]);
    }
    free(rd.rec_lines);
    if (st != ART_OK) {
        art_table_destroy(t);
        return st;
    }
    *out = t;
    return ART_OK;
}
