#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "table.h"
#include "alloc_rec.h" /* last: it wraps malloc and co. */

double cli_round4(double v)
{
    if (!isfinite(v) || v == 0.0) {
        return v;
    }
    char buf[32];
    snprintf(buf, sizeof buf, "%.4g", v);
    return strtod(buf, NULL);
}

const char *cli_format_count(uint64_t n, char *buf, size_t len)
{
    char plain[32];
    snprintf(plain, sizeof plain, "%" PRIu64, n);
    art_group_thousands(plain, buf, len);
    return buf;
}

const char *cli_format_scaled(double v, char *buf, size_t len)
{
    static const char *const unit[] = {"", " k", " M", " G", " T"};
    size_t u = 0;
    double x = v;
    while (fabs(x) >= 999.5 && u + 1 < sizeof unit / sizeof unit[0]) {
        x /= 1000.0;
        u++;
    }
    snprintf(buf, len, "%.3g%s", x, unit[u]);
    return buf;
}

const char *cli_format_mb(uint64_t bytes, char *buf, size_t len)
{
    const double mb = (double)bytes / 1048576.0;
    if (mb == 0.0 || mb >= 0.1) {
        snprintf(buf, len, "%.2f MB", mb);
    } else {
        snprintf(buf, len, "%.3g MB", mb);
    }
    return buf;
}

static int set_cell(art_table *t, size_t row, size_t col, enum art_type type,
                    const union cli_value *v, bool terminal)
{
    switch (type) {
    case ART_INT:
        return art_table_set_int(t, row, col, v->i);
    case ART_UINT:
        return art_table_set_uint(t, row, col, v->u);
    case ART_REAL:
        return art_table_set_real(
            t, row, col,
            terminal ? cli_round4(v->r) : v->r);
    case ART_TEXT:
        return art_table_set_text(t, row, col, v->s ? v->s : "");
    case ART_BOOL:
        return art_table_set_bool(t, row, col, v->b);
    default:
        return ART_E_INVALID;
    }
}

int cli_table_build(const char *name, const struct cli_column_set *sets,
                    size_t nsets, size_t rows, int view, art_table **out)
{
    const bool terminal = view > CLI_COL_ALL;
    art_table *t = NULL;
    int st = art_table_create(name, &t);
    for (size_t s = 0; st == ART_OK && s < nsets; s++) {
        for (size_t c = 0; st == ART_OK && c < sets[s].count; c++) {
            const struct cli_column *col = &sets[s].cols[c];
            if (col->show >= view) {
                st = art_table_add_column(t, col->name, col->type);
            }
        }
    }
    for (size_t i = 0; st == ART_OK && i < rows; i++) {
        size_t row = 0, k = 0;
        st = art_table_add_row(t, &row);
        for (size_t s = 0; st == ART_OK && s < nsets; s++) {
            for (size_t c = 0; st == ART_OK && c < sets[s].count; c++) {
                const struct cli_column *col = &sets[s].cols[c];
                if (col->show < view) {
                    continue;
                }
                union cli_value v = {0};
                if (col->get(sets[s].ctx, i, &v)) {
                    st = set_cell(t, row, k, col->type, &v, terminal);
                }
                k++;
            }
        }
    }
    if (st != ART_OK) {
        art_table_destroy(t);
        t = NULL;
    }
    *out = t;
    return st;
}

int cli_table_select(const art_table *t, const char *const *keep,
                     const size_t *rows, size_t nrows, bool terminal,
                     art_table **out)
{
    art_table *v = NULL;
    size_t ncols_all = art_table_cols(t), n = 0;
    size_t *cols = calloc(ncols_all ? ncols_all : 1, sizeof *cols);
    if (!cols) {
        *out = NULL;
        return ART_E_NOMEM; /* the loops below would write through NULL */
    }
    int st = art_table_create(art_table_name(t), &v);
    if (keep) {
        for (size_t k = 0; st == ART_OK && keep[k] && n < ncols_all; k++) {
            const long c = art_table_find_column(t, keep[k]);
            if (c >= 0) {
                cols[n++] = (size_t)c;
            }
        }
    } else {
        for (; n < ncols_all; n++) {
            cols[n] = n;
        }
    }
    for (size_t k = 0; st == ART_OK && k < n; k++) {
        st = art_table_add_column(v, art_table_column_name(t, cols[k]),
                                  art_table_column_type(t, cols[k]));
    }
    const size_t count = rows ? nrows : art_table_rows(t);
    for (size_t i = 0; st == ART_OK && i < count; i++) {
        const size_t r = rows ? rows[i] : i;
        size_t row = 0;
        if (r >= art_table_rows(t)) {
            st = ART_E_RANGE;
            break;
        }
        st = art_table_add_row(v, &row);
        for (size_t k = 0; st == ART_OK && k < n; k++) {
            if (!art_table_is_set(t, r, cols[k])) {
                continue;
            }
            union cli_value x = {0};
            const enum art_type type = art_table_column_type(t, cols[k]);
            switch (type) {
            case ART_INT:
                st = art_table_get_int(t, r, cols[k], &x.i);
                break;
            case ART_UINT:
                st = art_table_get_uint(t, r, cols[k], &x.u);
                break;
            case ART_REAL:
                st = art_table_get_real(t, r, cols[k], &x.r);
                break;
            case ART_TEXT:
                st = art_table_get_text(t, r, cols[k], &x.s);
                break;
            case ART_BOOL:
                st = art_table_get_bool(t, r, cols[k], &x.b);
                break;
            }
            if (st == ART_OK) {
                st = set_cell(v, row, k, type, &x, terminal);
            }
        }
    }
    free(cols);
    if (st != ART_OK) {
        art_table_destroy(v);
        v = NULL;
    }
    *out = v;
    return st;
}

int cli_table_view(const art_table *t, const char *const *keep,
                   art_table **out)
{
    return cli_table_select(t, keep, NULL, 0, true, out);
}

int cli_record_build(const char *name, const struct cli_field *f, size_t n,
                     art_table **out)
{
    art_table *t = NULL;
    size_t row = 0;
    int st = art_table_create(name, &t);
    for (size_t i = 0; st == ART_OK && i < n; i++) {
        st = art_table_add_column(t, f[i].name, f[i].type);
    }
    if (st == ART_OK) {
        st = art_table_add_row(t, &row);
    }
    for (size_t i = 0; st == ART_OK && i < n; i++) {
        if (f[i].set) {
            st = set_cell(t, row, i, f[i].type, &f[i].v, false);
        }
    }
    if (st != ART_OK) {
        art_table_destroy(t);
        t = NULL;
    }
    *out = t;
    return st;
}

/* ---- the estimate columns -------------------------------------------------- */

#define EST(ctx, i) (&((const struct memest_layer_estimate *)(ctx))[(i)])

static bool get_layer(const void *ctx, size_t i, union cli_value *v)
{
    v->s = EST(ctx, i)->layer;
    return true;
}

static bool get_kind(const void *ctx, size_t i, union cli_value *v)
{
    v->s = memest_kind_name(EST(ctx, i)->kind);
    return true;
}

static bool get_shape(const void *ctx, size_t i, union cli_value *v)
{
    v->s = EST(ctx, i)->output_shape;
    return true;
}

static bool get_elements(const void *ctx, size_t i, union cli_value *v)
{
    v->u = EST(ctx, i)->output_elements;
    return true;
}

static bool get_params(const void *ctx, size_t i, union cli_value *v)
{
    v->u = EST(ctx, i)->parameter_count;
    return true;
}

static bool get_param_bytes(const void *ctx, size_t i, union cli_value *v)
{
    v->u = EST(ctx, i)->parameter_bytes;
    return true;
}

static bool get_act_bytes(const void *ctx, size_t i, union cli_value *v)
{
    v->u = EST(ctx, i)->activation_bytes;
    return true;
}

static bool get_macs(const void *ctx, size_t i, union cli_value *v)
{
    v->u = EST(ctx, i)->macs;
    return true;
}

const struct cli_column cli_breakdown_columns[] = {
    {"layer", ART_TEXT, get_layer, CLI_COL_BRIEF},
    {"kind", ART_TEXT, get_kind, CLI_COL_BRIEF},
    {"output_shape", ART_TEXT, get_shape, CLI_COL_BRIEF},
    {"output_elements", ART_UINT, get_elements, CLI_COL_KEY},
    {"parameter_count", ART_UINT, get_params, CLI_COL_BRIEF},
    {"parameter_bytes", ART_UINT, get_param_bytes, CLI_COL_KEY},
    {"activation_bytes", ART_UINT, get_act_bytes, CLI_COL_KEY},
    {"macs", ART_UINT, get_macs, CLI_COL_BRIEF},
};
const size_t cli_breakdown_column_count =
    sizeof cli_breakdown_columns / sizeof cli_breakdown_columns[0];

/* ---- output ---------------------------------------------------------------- */

static int doc_of(const struct cli_output *outs, size_t n, art_doc **out)
{
    art_doc *d = NULL;
    int st = art_doc_create(&d);
    for (size_t i = 0; st == ART_OK && i < n; i++) {
        if (outs[i].table) {
            st = art_doc_set_table(d, outs[i].key, outs[i].table);
        } else if (outs[i].doc) {
            st = art_doc_set_doc(d, outs[i].key, outs[i].doc);
        }
    }
    if (st != ART_OK) {
        art_doc_destroy(d);
        d = NULL;
    }
    *out = d;
    return st;
}

int cli_emit(enum cli_format format, const struct cli_output *outs,
             size_t n)
{
    int st = ART_OK;
    size_t ntables = 0;
    for (size_t i = 0; i < n; i++) {
        ntables += outs[i].table != NULL;
    }
    switch (format) {
    case CLI_FORMAT_TABLE: {
        bool first = true;
        for (size_t i = 0; st == ART_OK && i < n; i++) {
            const art_table *t = outs[i].view ? outs[i].view : outs[i].table;
            if (!t) {
                continue;
            }
            if (!first && fputc('\n', stdout) == EOF) {
                st = ART_E_IO;
            }
            if (st == ART_OK) {
                st = art_table_print_grouped(t, stdout);
            }
            first = false;
        }
        break;
    }
    case CLI_FORMAT_CSV: {
        if (ntables != 1) {
            cli_error("--format csv prints one table and this run has %zu: "
                      "choose one, or give --out DIR for one file per "
                      "table", ntables);
            return CLI_EXIT_USAGE;
        }
        for (size_t i = 0; st == ART_OK && i < n; i++) {
            if (outs[i].table) {
                st = art_table_write_csv_rounded(outs[i].table, stdout,
                                                 cli_round_file);
            }
        }
        break;
    }
    case CLI_FORMAT_JSON: {
        art_doc *d = NULL;
        st = doc_of(outs, n, &d);
        if (st == ART_OK) {
            st = art_doc_write_rounded(d, stdout, cli_round_file);
        }
        art_doc_destroy(d);
        break;
    }
    }
    return cli_stdout_finish(st);
}

int cli_write_outputs(const char *dir, const struct cli_output *outs,
                      size_t n, const char *json_name)
{
    struct cli_out_file *files = calloc(n + 1, sizeof *files);
    char (*names)[128] = calloc(n, sizeof *names);
    art_doc *all = NULL;
    int rc = CLI_EXIT_FAILURE;
    if (!files || !names) {
        cli_error("--out %s: %s", dir, art_strerror(ART_E_NOMEM));
        goto done;
    }
    size_t nfiles = 0;
    for (size_t i = 0; i < n; i++) {
        if (outs[i].json_only) {
            continue;
        }
        if (outs[i].file) {
            snprintf(names[i], sizeof names[i], "%s", outs[i].file);
        } else {
            snprintf(names[i], sizeof names[i], "%s.%s", outs[i].key,
                     outs[i].table ? "csv" : "json");
        }
        files[nfiles++] = (struct cli_out_file){
            .name = names[i], .csv = outs[i].table,
            .doc = outs[i].table ? NULL : outs[i].doc,
            .chart = outs[i].chart, .figure = outs[i].figure};
    }
    if (json_name) {
        const int st = doc_of(outs, n, &all);
        if (st != ART_OK) {
            cli_error("--out %s: %s", dir, art_strerror(st));
            goto done;
        }
        files[nfiles++] = (struct cli_out_file){.name = json_name, .doc = all};
    }
    rc = cli_out_write(dir, files, nfiles);
done:
    art_doc_destroy(all);
    free(names);
    free(files);
    return rc;
}
