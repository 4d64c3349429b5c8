/* HTML fragments: escaping and tables against hand-written markup. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "edgefit/artifacts.h"

static char *capture(int (*fn)(FILE *, const void *), const void *arg)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    assert_int_equal(fn(f, arg), ART_OK);
    fclose(f);
    return buf;
}

static int text_fn(FILE *f, const void *arg)
{
    return art_html_write_text(f, arg);
}

static int table_fn(FILE *f, const void *arg)
{
    return art_table_write_html(arg, f, 3);
}

static void test_escape(void **state)
{
    (void)state;
    char *s = capture(text_fn, "a<b & \"c\" 'd'>\xc2\xb5");
    assert_string_equal(s, "a&lt;b &amp; &quot;c&quot; &#39;d&#39;&gt;"
                           "\xc2\xb5");
    free(s);
}

static void test_table(void **state)
{
    (void)state;
    art_table *t = NULL;
    assert_int_equal(art_table_create("t", &t), ART_OK);
    assert_int_equal(art_table_add_column(t, "name<x>", ART_TEXT), ART_OK);
    assert_int_equal(art_table_add_column(t, "ms", ART_REAL), ART_OK);
    assert_int_equal(art_table_add_column(t, "n", ART_UINT), ART_OK);
    size_t r;
    assert_int_equal(art_table_add_row(t, &r), ART_OK);
    assert_int_equal(art_table_set_text(t, r, 0, "a&b"), ART_OK);
    assert_int_equal(art_table_set_real(t, r, 1, 0.123456), ART_OK);
    assert_int_equal(art_table_set_uint(t, r, 2, 7), ART_OK);
    assert_int_equal(art_table_add_row(t, &r), ART_OK); /* empty cells */
    char *s = capture(table_fn, t);
    assert_string_equal(s,
        "<table>\n<thead><tr><th>name&lt;x&gt;</th><th>ms</th><th>n</th>"
        "</tr></thead>\n<tbody>\n"
        "<tr><td>a&amp;b</td><td class=\"num\">0.123</td>"
        "<td class=\"num\">7</td></tr>\n"
        "<tr><td></td><td class=\"num\"></td><td class=\"num\"></td></tr>\n"
        "</tbody>\n</table>\n");
    free(s);
    art_table_destroy(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_escape),
        cmocka_unit_test(test_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
