/* HTML fragments: escaped text and tables, for static report pages. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

ART_API int art_html_write_text(FILE *f, const char *text)
{
    if (!f || !text) {
        return ART_E_INVALID;
    }
    for (const char *p = text; *p; p++) {
        switch (*p) {
        case '&':
            fputs("&amp;", f);
            break;
        case '<':
            fputs("&lt;", f);
            break;
        case '>':
            fputs("&gt;", f);
            break;
        case '"':
            fputs("&quot;", f);
            break;
        case '\'':
            fputs("&#39;", f);
            break;
        default:
            fputc(*p, f);
            break;
        }
    }
    return ferror(f) ? ART_E_IO : ART_OK;
}

ART_API int art_table_write_html(const art_table *t, FILE *f, int digits)
{
    if (!t || !f) {
        return ART_E_INVALID;
    }
    const size_t nc = art_table_cols(t), nr = art_table_rows(t);
    fputs("<table>\n<thead><tr>", f);
    for (size_t c = 0; c < nc; c++) {
        fputs("<th>", f);
        art_html_write_text(f, art_table_column_name(t, c));
        fputs("</th>", f);
    }
    fputs("</tr></thead>\n<tbody>\n", f);
    char buf[512];
    for (size_t r = 0; r < nr; r++) {
        fputs("<tr>", f);
        for (size_t c = 0; c < nc; c++) {
            const enum art_type type = art_table_column_type(t, c);
            const bool num = type == ART_INT || type == ART_UINT ||
                             type == ART_REAL;
            fputs(num ? "<td class=\"num\">" : "<td>", f);
            double v;
            if (type == ART_REAL && digits > 0 && art_table_is_set(t, r, c) &&
                art_table_get_real(t, r, c, &v) == ART_OK && isfinite(v)) {
                snprintf(buf, sizeof buf, "%.*g", digits, v);
            } else {
                art_table_format_cell(t, r, c, buf, sizeof buf);
            }
            art_html_write_text(f, buf);
            fputs("</td>", f);
        }
        fputs("</tr>\n", f);
    }
    fputs("</tbody>\n</table>\n", f);
    return ferror(f) ? ART_E_IO : ART_OK;
}
