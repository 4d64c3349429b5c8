#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "table.h"

/* Four significant digits: what a person compares on a terminal; the
 * CSV and JSON keep every digit. */
static double round_sig4(double v)
{
    if (!isfinite(v) || v == 0.0) {
        return v;
    }
    char buf[32];
    snprintf(buf, sizeof buf, "%.4g", v);
    return strtod(buf, NULL);
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
        return art_table_set_real(t, row, col,
                                  terminal ? round_sig4(v->r) : v->r);
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
                st = art_table_print(t, stdout, -1);
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
                st = art_table_write_csv(outs[i].table, stdout);
            }
        }
        break;
    }
    case CLI_FORMAT_JSON: {
        art_doc *d = NULL;
        st = doc_of(outs, n, &d);
        if (st == ART_OK) {
            st = art_doc_write(d, stdout);
        }
        art_doc_destroy(d);
        break;
    }
    }
    /* the flush meets a full disk or a closed pipe and says why */
    return cli_stdout_finish(st);
}

int cli_write_outputs(const char *dir, const struct cli_output *outs,
                      size_t n, const char *json_name)
{
    art_bundle *b = NULL;
    art_doc *all = NULL;
    char failed[128] = "";
    int st = art_bundle_create(dir, &b);
    for (size_t i = 0; st == ART_OK && i < n; i++) {
        char name[128];
        if (outs[i].file) {
            snprintf(name, sizeof name, "%s", outs[i].file);
        } else {
            snprintf(name, sizeof name, "%s.%s", outs[i].key,
                     outs[i].table ? "csv" : "json");
        }
        if (outs[i].table) {
            st = art_bundle_add_csv(b, name, outs[i].table);
        } else if (outs[i].doc) {
            st = art_bundle_add_doc(b, name, outs[i].doc);
        } else if (outs[i].chart) {
            st = art_bundle_add_chart(b, name, outs[i].chart);
        } else if (outs[i].figure) {
            st = art_bundle_add_figure(b, name, outs[i].figure);
        }
    }
    if (st == ART_OK && json_name) {
        st = doc_of(outs, n, &all);
        if (st == ART_OK) {
            st = art_bundle_add_doc(b, json_name, all);
        }
    }
    if (st == ART_OK) {
        struct art_diag cd = {0, "", 0};
        st = art_bundle_commit(b, &cd);
        b = NULL;
        snprintf(failed, sizeof failed, "%s", cd.message);
    }
    art_bundle_destroy(b);
    art_doc_destroy(all);
    if (st != ART_OK) {
        cli_error("--out %s: %s%s%s", dir, failed, *failed ? ": " : "",
                  art_strerror(st));
        return CLI_EXIT_FAILURE;
    }
    return CLI_EXIT_OK;
}
