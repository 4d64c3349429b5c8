/* Tables: CSV and JSON writing checked against hand-written text and by
 * reading the files back (libcsv through art_table_load_csv, jansson). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <dirent.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "edgefit/artifacts.h"

static char tmpdir[] = "/tmp/edgefit-art-XXXXXX";

static int setup(void **state)
{
    (void)state;
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    DIR *d = opendir(tmpdir);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (e->d_name[0] != '.') {
            char *p = art_path_join(tmpdir, e->d_name);
            unlink(p);
            rmdir(p);
            free(p);
        }
    }
    if (d) {
        closedir(d);
    }
    rmdir(tmpdir);
    return 0;
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        return NULL;
    }
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

static size_t count_entries(const char *dir)
{
    size_t n = 0;
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        n += e->d_name[0] != '.';
    }
    if (d) {
        closedir(d);
    }
    return n;
}

static art_table *sample(void)
{
    art_table *t = NULL;
    assert_int_equal(art_table_create("sample", &t), ART_OK);
    assert_int_equal(art_table_add_column(t, "layer", ART_TEXT), ART_OK);
    assert_int_equal(art_table_add_column(t, "macs", ART_UINT), ART_OK);
    assert_int_equal(art_table_add_column(t, "delta", ART_INT), ART_OK);
    assert_int_equal(art_table_add_column(t, "mb", ART_REAL), ART_OK);
    assert_int_equal(art_table_add_column(t, "ok", ART_BOOL), ART_OK);
    size_t r;
    assert_int_equal(art_table_add_row(t, &r), ART_OK);
    assert_int_equal(r, 0);
    art_table_set_text(t, 0, 0, "dense1");
    art_table_set_uint(t, 0, 1, UINT64_MAX);
    art_table_set_int(t, 0, 2, INT64_MIN);
    art_table_set_real(t, 0, 3, 0.1);
    art_table_set_bool(t, 0, 4, true);
    assert_int_equal(art_table_add_row(t, &r), ART_OK);
    art_table_set_text(t, 1, 0, "a,b \"quoted\"\nline");
    art_table_set_uint(t, 1, 1, 0);
    art_table_set_int(t, 1, 2, -7);
    art_table_set_real(t, 1, 3, 1.0 / 3.0);
    art_table_set_bool(t, 1, 4, false);
    assert_int_equal(art_table_add_row(t, &r), ART_OK);
    art_table_set_text(t, 2, 0, " padded");
    /* macs left empty on purpose */
    art_table_set_int(t, 2, 2, 42);
    art_table_set_real(t, 2, 3, 203560.0 / 1048576.0);
    return t;
}

static void test_csv_text(void **state)
{
    (void)state;
    art_table *t = sample();
    char *path = art_path_join(tmpdir, "sample.csv");
    assert_int_equal(art_table_save_csv(t, path, NULL), ART_OK);
    const char *want =
        "layer,macs,delta,mb,ok\n"
        "dense1,18446744073709551615,-9223372036854775808,0.1,true\n"
        "\"a,b \"\"quoted\"\"\nline\",0,-7,0.3333333333333333,false\n"
        "\" padded\",,42,0.19412994384765625,\n";
    assert_string_equal(slurp(path), want);
    free(path);
    art_table_destroy(t);
}

static void test_csv_round_trip(void **state)
{
    (void)state;
    art_table *t = NULL;
    assert_int_equal(art_table_create("reals", &t), ART_OK);
    assert_int_equal(art_table_add_column(t, "x", ART_REAL), ART_OK);
    assert_int_equal(art_table_add_column(t, "name", ART_TEXT), ART_OK);
    const double vals[] = {0.1, 1.0 / 3.0, 1e-300, 5e-324, 1.7976931348623157e308,
                           9007199254740993.0, -0.0, 123456.789, 2.5e-7, 1e22};
    const size_t n = sizeof vals / sizeof vals[0];
    for (size_t i = 0; i < n; i++) {
        size_t r;
        assert_int_equal(art_table_add_row(t, &r), ART_OK);
        art_table_set_real(t, r, 0, vals[i]);
        art_table_set_text(t, r, 1, i % 2 ? "plain" : "with, comma");
    }
    char *path = art_path_join(tmpdir, "reals.csv");
    assert_int_equal(art_table_save_csv(t, path, NULL), ART_OK);
    art_table *back = NULL;
    struct art_diag diag;
    assert_int_equal(art_table_load_csv(path, &back, &diag), ART_OK);
    assert_int_equal(art_table_rows(back), n);
    assert_int_equal(art_table_column_type(back, 0), ART_REAL);
    assert_int_equal(art_table_column_type(back, 1), ART_TEXT);
    for (size_t i = 0; i < n; i++) {
        double v;
        const char *s;
        assert_int_equal(art_table_get_real(back, i, 0, &v), ART_OK);
        assert_memory_equal(&v, &vals[i], sizeof v); /* bit-exact, -0 too */
        assert_int_equal(art_table_get_text(back, i, 1, &s), ART_OK);
        assert_string_equal(s, i % 2 ? "plain" : "with, comma");
    }
    /* The sample table's types are inferred back the same way. */
    art_table *s1 = sample();
    assert_int_equal(art_table_save_csv(s1, path, NULL), ART_OK);
    art_table *s2 = NULL;
    assert_int_equal(art_table_load_csv(path, &s2, NULL), ART_OK);
    for (size_t c = 0; c < art_table_cols(s1); c++) {
        assert_int_equal(art_table_column_type(s2, c),
                         c == 2 ? ART_INT : art_table_column_type(s1, c));
        for (size_t r = 0; r < art_table_rows(s1); r++) {
            char a[128], b[128];
            art_table_format_cell(s1, r, c, a, sizeof a);
            art_table_format_cell(s2, r, c, b, sizeof b);
            assert_string_equal(a, b);
        }
    }
    assert_false(art_table_is_set(s2, 2, 1));
    art_table_destroy(s1);
    art_table_destroy(s2);
    art_table_destroy(back);
    art_table_destroy(t);
    free(path);
}

static void test_json(void **state)
{
    (void)state;
    art_table *t = sample();
    art_doc *d = NULL, *sub = NULL;
    assert_int_equal(art_doc_create(&d), ART_OK);
    assert_int_equal(art_doc_create(&sub), ART_OK);
    assert_int_equal(art_doc_set_bool(d, "enabled", true), ART_OK);
    assert_int_equal(art_doc_set_int(d, "batch_size", 32), ART_OK);
    assert_int_equal(art_doc_set_real(d, "mb", 0.149536), ART_OK);
    assert_int_equal(art_doc_set_real(d, "bad", NAN), ART_OK);
    const char *warnings[] = {"first", "second \"quoted\""};
    assert_int_equal(art_doc_set_texts(d, "warnings", warnings, 2), ART_OK);
    assert_int_equal(art_doc_set_text(sub, "inner", "x"), ART_OK);
    assert_int_equal(art_doc_set_doc(d, "sub", sub), ART_OK);
    assert_int_equal(art_doc_set_table(d, "layers", t), ART_OK);
    assert_int_equal(art_doc_set_int(d, "batch_size", 16), ART_OK); /* replace */
    char *path = art_path_join(tmpdir, "doc.json");
    assert_int_equal(art_doc_save(d, path, NULL), ART_OK);

    json_error_t err;
    json_t *j = json_load_file(path, 0, &err);
    assert_non_null(j);
    assert_true(json_is_true(json_object_get(j, "enabled")));
    assert_int_equal(json_integer_value(json_object_get(j, "batch_size")), 16);
    assert_true(json_real_value(json_object_get(j, "mb")) == 0.149536);
    assert_true(json_is_null(json_object_get(j, "bad")));
    json_t *w = json_object_get(j, "warnings");
    assert_int_equal(json_array_size(w), 2);
    assert_string_equal(json_string_value(json_array_get(w, 1)),
                        "second \"quoted\"");
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(j, "sub"), "inner")),
        "x");
    json_t *layers = json_object_get(j, "layers");
    assert_int_equal(json_array_size(layers), 3);
    json_t *row1 = json_array_get(layers, 1);
    assert_string_equal(json_string_value(json_object_get(row1, "layer")),
                        "a,b \"quoted\"\nline");
    assert_true(json_real_value(json_object_get(row1, "mb")) == 1.0 / 3.0);
    assert_int_equal(json_integer_value(json_object_get(row1, "delta")), -7);
    assert_true(json_is_false(json_object_get(row1, "ok")));
    assert_true(json_is_null(json_object_get(json_array_get(layers, 2), "macs")));
    /* Keys keep their insertion order. */
    const char *first_key = json_object_iter_key(json_object_iter(j));
    assert_string_equal(first_key, "enabled");
    json_decref(j);

    /* The table alone is the same array. */
    assert_int_equal(art_table_save_json(t, path, NULL), ART_OK);
    j = json_load_file(path, 0, &err);
    assert_true(json_is_array(j));
    assert_int_equal(json_array_size(j), 3);
    json_decref(j);
    free(path);
    art_doc_destroy(sub);
    art_doc_destroy(d);
    art_table_destroy(t);
}

static void test_misuse(void **state)
{
    (void)state;
    art_table *t = NULL;
    assert_int_equal(art_table_create("t", &t), ART_OK);
    assert_int_equal(art_table_add_row(t, NULL), ART_E_INVALID); /* no columns */
    assert_int_equal(art_table_add_column(t, "a", ART_INT), ART_OK);
    assert_int_equal(art_table_add_column(t, "a", ART_REAL), ART_E_INVALID);
    assert_int_equal(art_table_add_column(t, "", ART_REAL), ART_E_INVALID);
    assert_int_equal(art_table_add_row(t, NULL), ART_OK);
    assert_int_equal(art_table_add_column(t, "late", ART_INT), ART_E_INVALID);
    assert_int_equal(art_table_set_text(t, 0, 0, "x"), ART_E_INVALID);
    assert_int_equal(art_table_set_int(t, 1, 0, 1), ART_E_RANGE);
    assert_int_equal(art_table_set_int(t, 0, 1, 1), ART_E_RANGE);
    int64_t v;
    assert_int_equal(art_table_get_int(t, 0, 0, &v), ART_E_INVALID); /* empty */
    assert_int_equal(art_table_set_int(t, 0, 0, -3), ART_OK);
    assert_int_equal(art_table_get_int(t, 0, 0, &v), ART_OK);
    assert_int_equal(v, -3);
    uint64_t u;
    assert_int_equal(art_table_get_uint(t, 0, 0, &u), ART_E_INVALID);
    assert_int_equal(art_table_set_int(t, 0, 0, 5), ART_OK);
    assert_int_equal(art_table_get_uint(t, 0, 0, &u), ART_OK);
    assert_int_equal(u, 5);
    double d;
    assert_int_equal(art_table_get_real(t, 0, 0, &d), ART_OK);
    assert_true(d == 5.0);
    assert_int_equal(art_table_find_column(t, "a"), 0);
    assert_int_equal(art_table_find_column(t, "zz"), -1);
    art_table_destroy(t);
    art_table_destroy(NULL);
    art_doc_destroy(NULL);
    assert_string_equal(art_strerror(ART_E_IO), "input/output error");
    assert_string_equal(art_strerror(999), "unknown status");
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void test_load_errors(void **state)
{
    (void)state;
    char *path = art_path_join(tmpdir, "bad.csv");
    art_table *t = NULL;
    struct art_diag diag;

    write_file(path, "a,b\n1,2\n3\n");
    assert_int_equal(art_table_load_csv(path, &t, &diag), ART_E_PARSE);
    assert_null(t);
    assert_int_equal(diag.line, 3);
    assert_non_null(strstr(diag.message, "1 fields where the header has 2"));

    write_file(path, "a,b\n1,\"unterminated\n");
    assert_int_equal(art_table_load_csv(path, &t, &diag), ART_E_PARSE);

    write_file(path, "");
    assert_int_equal(art_table_load_csv(path, &t, &diag), ART_E_PARSE);
    assert_non_null(strstr(diag.message, "empty"));

    write_file(path, "a,a\n1,2\n");
    assert_int_equal(art_table_load_csv(path, &t, &diag), ART_E_PARSE);
    assert_non_null(strstr(diag.message, "repeated"));

    static const char nul_row[] = "a,b\n1,x\0y\n";
    FILE *nf = fopen(path, "wb");
    assert_non_null(nf);
    fwrite(nul_row, 1, sizeof nul_row - 1, nf);
    fclose(nf);
    assert_int_equal(art_table_load_csv(path, &t, &diag), ART_E_PARSE);
    assert_int_equal(diag.line, 2);
    assert_non_null(strstr(diag.message, "NUL"));

    char *missing = art_path_join(tmpdir, "missing.csv");
    assert_int_equal(art_table_load_csv(missing, &t, &diag), ART_E_IO);
    free(missing);

    /* A one-column table with an empty cell keeps its row. */
    art_table *one = NULL;
    assert_int_equal(art_table_create("one", &one), ART_OK);
    assert_int_equal(art_table_add_column(one, "x", ART_TEXT), ART_OK);
    assert_int_equal(art_table_add_row(one, NULL), ART_OK);
    assert_int_equal(art_table_add_row(one, NULL), ART_OK);
    assert_int_equal(art_table_set_text(one, 1, 0, "v"), ART_OK);
    assert_int_equal(art_table_save_csv(one, path, NULL), ART_OK);
    art_table_destroy(one);
    assert_int_equal(art_table_load_csv(path, &t, &diag), ART_OK);
    assert_int_equal(art_table_rows(t), 2);
    art_table_destroy(t);

    /* Mixed columns fall back to wider types. */
    write_file(path, "i,r,t,b\n1,1,x,true\n-2,2.5,3,false\n,,,\n");
    assert_int_equal(art_table_load_csv(path, &t, &diag), ART_OK);
    assert_int_equal(art_table_column_type(t, 0), ART_INT);
    assert_int_equal(art_table_column_type(t, 1), ART_REAL);
    assert_int_equal(art_table_column_type(t, 2), ART_TEXT);
    assert_int_equal(art_table_column_type(t, 3), ART_BOOL);
    assert_int_equal(art_table_rows(t), 3);
    assert_false(art_table_is_set(t, 2, 0));
    art_table_destroy(t);
    free(path);
}

static void test_atomic(void **state)
{
    (void)state;
    const size_t before = count_entries(tmpdir);
    char *path = art_path_join(tmpdir, "atomic.txt");

    /* Abort leaves nothing behind. */
    art_atomic *a = NULL;
    assert_int_equal(art_atomic_open(path, &a, NULL), ART_OK);
    fputs("partial", art_atomic_file(a));
    art_atomic_abort(a);
    assert_int_equal(count_entries(tmpdir), before);
    assert_int_equal(access(path, F_OK), -1);

    /* Commit replaces an existing file in one step. */
    write_file(path, "old contents\n");
    assert_int_equal(art_atomic_open(path, &a, NULL), ART_OK);
    fputs("new\n", art_atomic_file(a));
    assert_string_equal(slurp(path), "old contents\n"); /* untouched so far */
    assert_int_equal(art_atomic_commit(a, NULL), ART_OK);
    assert_string_equal(slurp(path), "new\n");
    assert_int_equal(count_entries(tmpdir), before + 1);

    /* A folder that does not exist: an error and no file anywhere. */
    char *nodir = art_path_join(tmpdir, "no/such/dir/x.csv");
    art_table *t = sample();
    assert_int_equal(art_table_save_csv(t, nodir, NULL), ART_E_IO);
    assert_int_equal(count_entries(tmpdir), before + 1);

    /* A write that fails half-way (text that is not UTF-8 in JSON) keeps
     * the old file and leaves no temporary. */
    art_doc *d = NULL;
    assert_int_equal(art_doc_create(&d), ART_OK);
    assert_int_equal(art_doc_set_text(d, "bad", "\xff\xfe"), ART_E_INVALID);
    art_doc_destroy(d);

    free(nodir);
    art_table_destroy(t);
    unlink(path);
    free(path);
}

static void test_mkdir_and_join(void **state)
{
    (void)state;
    char *deep = art_path_join(tmpdir, "m/n/o");
    assert_int_equal(art_mkdir_p(deep, NULL), ART_OK);
    assert_int_equal(art_mkdir_p(deep, NULL), ART_OK); /* exists: fine */
    struct stat sb;
    assert_int_equal(stat(deep, &sb), 0);
    assert_true(S_ISDIR(sb.st_mode));
    char *file = art_path_join(deep, "f");
    write_file(file, "x");
    assert_int_equal(art_mkdir_p(file, NULL), ART_E_IO); /* a file, not a folder */
    unlink(file);
    free(file);
    rmdir(deep);
    char *mid = art_path_join(tmpdir, "m/n");
    rmdir(mid);
    free(mid);
    mid = art_path_join(tmpdir, "m");
    rmdir(mid);
    free(mid);
    free(deep);

    char *j = art_path_join("out///", "a.csv");
    assert_string_equal(j, "out/a.csv");
    free(j);
    j = art_path_join("/", "a");
    assert_string_equal(j, "/a");
    free(j);
}

static void test_print(void **state)
{
    (void)state;
    art_table *t = NULL;
    assert_int_equal(art_table_create("p", &t), ART_OK);
    art_table_add_column(t, "name", ART_TEXT);
    art_table_add_column(t, "value", ART_REAL);
    art_table_add_row(t, NULL);
    art_table_set_text(t, 0, 0, "a");
    art_table_set_real(t, 0, 1, 3.14159);
    art_table_add_row(t, NULL);
    art_table_set_text(t, 1, 0, "longer");
    art_table_set_real(t, 1, 1, 10);
    char buf[256] = {0};
    FILE *f = fmemopen(buf, sizeof buf, "w");
    assert_int_equal(art_table_print(t, f, 2), ART_OK);
    fclose(f);
    assert_string_equal(buf, "name    value\n"
                             "a        3.14\n"
                             "longer  10.00\n");
    art_table_destroy(t);
}

static void test_group_thousands(void **state)
{
    (void)state;
    char b[32];
    const char *cases[][2] = {
        {"1234567", "1,234,567"}, {"123", "123"}, {"1234", "1,234"},
        {"-12345.678", "-12,345.678"}, {"999999", "999,999"},
        {"1.5e+06", "1.5e+06"}, {"0.000123", "0.000123"},
        {"nan", "nan"}, {"rpi4", "rpi4"}, {"1234x", "1234x"},
        {"18446744073709551615", "18,446,744,073,709,551,615"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const size_t need = art_group_thousands(cases[i][0], b, sizeof b);
        assert_string_equal(b, cases[i][1]);
        assert_int_equal(need, strlen(cases[i][1]));
    }
    /* truncated, terminated, the length it needs */
    assert_int_equal(art_group_thousands("1234567", b, 4), 9);
    assert_string_equal(b, "1,2");

    art_table *t = NULL;
    assert_int_equal(art_table_create("g", &t), ART_OK);
    art_table_add_column(t, "name", ART_TEXT);
    art_table_add_column(t, "parameter_count", ART_UINT);
    art_table_add_column(t, "mb", ART_REAL);
    art_table_add_row(t, NULL);
    art_table_set_text(t, 0, 0, "conv1");
    art_table_set_uint(t, 0, 1, 78666);
    art_table_set_real(t, 0, 2, 1234.5);
    char buf[256] = {0};
    FILE *f = fmemopen(buf, sizeof buf, "w");
    assert_int_equal(art_table_print_grouped(t, f), ART_OK);
    fclose(f);
    assert_string_equal(buf, "name   parameter_count       mb\n"
                             "conv1           78,666  1,234.5\n");
    /* the CSV keeps plain numbers */
    memset(buf, 0, sizeof buf);
    f = fmemopen(buf, sizeof buf, "w");
    assert_int_equal(art_table_write_csv(t, f), ART_OK);
    fclose(f);
    assert_non_null(strstr(buf, "conv1,78666,1234.5"));
    art_table_destroy(t);
}

static int fail_after_half(const void *obj, FILE *f)
{
    (void)obj;
    fputs("half", f);
    return ART_E_IO;
}

/* A rounding for the tests: names ending in _ms to three decimals, the
 * others to six significant digits; it counts the calls per name. */
static int round_calls_ms, round_calls_other;

static double round_by_name(const char *name, double v)
{
    char buf[64];
    const size_t n = strlen(name);
    if (n >= 3 && strcmp(name + n - 3, "_ms") == 0) {
        round_calls_ms++;
        snprintf(buf, sizeof buf, "%.3f", v);
    } else {
        round_calls_other++;
        snprintf(buf, sizeof buf, "%.6g", v);
    }
    return strtod(buf, NULL);
}

static void test_rounded_writers(void **state)
{
    (void)state;
    art_table *t = NULL;
    assert_int_equal(art_table_create("r", &t), ART_OK);
    art_table_add_column(t, "t_ms", ART_REAL);
    art_table_add_column(t, "n", ART_UINT);
    art_table_add_column(t, "ratio", ART_REAL);
    art_table_add_row(t, NULL);
    art_table_set_real(t, 0, 0, 1.1376585700000001);
    art_table_set_uint(t, 0, 1, 9282560);
    art_table_set_real(t, 0, 2, 0.1 + 0.2);
    art_table_add_row(t, NULL); /* empty cells stay empty */
    art_table_set_real(t, 1, 0, NAN);
    char buf[512] = {0};
    FILE *f = fmemopen(buf, sizeof buf, "w");
    assert_int_equal(art_table_write_csv_rounded(t, f, round_by_name),
                     ART_OK);
    fclose(f);
    assert_string_equal(buf, "t_ms,n,ratio\n1.138,9282560,0.3\nnan,,\n");
    /* the plain writer keeps every digit */
    memset(buf, 0, sizeof buf);
    f = fmemopen(buf, sizeof buf, "w");
    assert_int_equal(art_table_write_csv(t, f), ART_OK);
    fclose(f);
    assert_non_null(strstr(buf, "1.1376585700000001,9282560,"
                                "0.30000000000000004"));
    assert_int_equal(art_table_write_csv_rounded(t, NULL, round_by_name),
                     ART_E_INVALID);
    assert_int_equal(art_table_write_csv_rounded(t, stdout, NULL),
                     ART_E_INVALID);

    /* a document: members, a nested document, a table's rows (their
     * column names), an array of numbers (its member's name) */
    art_doc *sub = NULL, *d = NULL;
    assert_int_equal(art_doc_create(&sub), ART_OK);
    assert_int_equal(art_doc_set_real(sub, "wait_ms", 2.0000004), ART_OK);
    assert_int_equal(art_doc_create(&d), ART_OK);
    assert_int_equal(art_doc_set_real(d, "ratio", 0.1 + 0.2), ART_OK);
    assert_int_equal(art_doc_set_doc(d, "sub", sub), ART_OK);
    assert_int_equal(art_doc_set_table(d, "rows", t), ART_OK);
    round_calls_ms = round_calls_other = 0;
    memset(buf, 0, sizeof buf);
    f = fmemopen(buf, sizeof buf, "w");
    assert_int_equal(art_doc_write_rounded(d, f, round_by_name), ART_OK);
    fclose(f);
    assert_non_null(strstr(buf, "\"ratio\": 0.3,"));
    assert_non_null(strstr(buf, "\"wait_ms\": 2.0\n")); /* still a real */
    assert_non_null(strstr(buf, "\"t_ms\": 1.138,"));
    assert_null(strstr(buf, "0000"));
    /* wait_ms and the row's t_ms by the time rule; the two ratios by the
     * other (a NaN cell is null, never rounded) */
    assert_int_equal(round_calls_ms, 2);
    assert_int_equal(round_calls_other, 2);

    /* a bundle rounds its CSV tables and documents */
    char *dir = art_path_join(tmpdir, "rounded");
    art_bundle *b = NULL;
    assert_int_equal(art_bundle_create(dir, &b), ART_OK);
    art_bundle_set_rounding(b, round_by_name);
    assert_int_equal(art_bundle_add_csv(b, "t.csv", t), ART_OK);
    assert_int_equal(art_bundle_add_doc(b, "d.json", d), ART_OK);
    struct art_diag diag;
    assert_int_equal(art_bundle_commit(b, &diag), ART_OK);
    char *p = art_path_join(dir, "t.csv");
    assert_string_equal(slurp(p), "t_ms,n,ratio\n1.138,9282560,0.3\nnan,,\n");
    unlink(p);
    free(p);
    p = art_path_join(dir, "d.json");
    assert_non_null(strstr(slurp(p), "\"t_ms\": 1.138,"));
    unlink(p);
    free(p);
    rmdir(dir);
    free(dir);
    art_doc_destroy(d);
    art_doc_destroy(sub);
    art_table_destroy(t);
}

static void test_bundle(void **state)
{
    (void)state;
    art_table *t = sample();
    art_doc *d = NULL;
    assert_int_equal(art_doc_create(&d), ART_OK);
    assert_int_equal(art_doc_set_int(d, "n", 3), ART_OK);
    char *dir = art_path_join(tmpdir, "bundle/deep");

    /* A bundle whose last file fails leaves no file and no folder
     * contents; the first two were written but never renamed. */
    art_bundle *b = NULL;
    assert_int_equal(art_bundle_create(dir, &b), ART_OK);
    assert_int_equal(art_bundle_add_csv(b, "a.csv", t), ART_OK);
    assert_int_equal(art_bundle_add_doc(b, "b.json", d), ART_OK);
    assert_int_equal(art_bundle_add(b, "c.bin", fail_after_half, NULL),
                     ART_OK);
    assert_int_equal(art_bundle_add_csv(b, "a.csv", t), ART_E_INVALID);
    assert_int_equal(art_bundle_add_csv(b, "x/y.csv", t), ART_E_INVALID);
    struct art_diag diag;
    assert_int_equal(art_bundle_commit(b, &diag), ART_E_IO);
    /* The writer's own failure: the path, and a reason even without an
     * errno. */
    char *bad = art_path_join(dir, "c.bin: ");
    assert_non_null(strstr(diag.message, bad));
    free(bad);
    assert_int_equal(count_entries(dir), 0);

    /* The same without the failing file: both appear. */
    assert_int_equal(art_bundle_create(dir, &b), ART_OK);
    assert_int_equal(art_bundle_add_csv(b, "a.csv", t), ART_OK);
    assert_int_equal(art_bundle_add_table_json(b, "a.json", t), ART_OK);
    assert_int_equal(art_bundle_add_doc(b, "b.json", d), ART_OK);
    assert_int_equal(art_bundle_commit(b, &diag), ART_OK);
    assert_int_equal(count_entries(dir), 3);
    char *p = art_path_join(dir, "b.json");
    assert_string_equal(slurp(p), "{\n  \"n\": 3\n}\n");
    free(p);

    /* Dropped without commit: nothing is created at all. */
    char *never = art_path_join(tmpdir, "never");
    assert_int_equal(art_bundle_create(never, &b), ART_OK);
    assert_int_equal(art_bundle_add_csv(b, "a.csv", t), ART_OK);
    art_bundle_destroy(b);
    assert_int_equal(count_entries(never), 0);
    free(never);

    const char *names[] = {"a.csv", "a.json", "b.json"};
    for (size_t i = 0; i < 3; i++) {
        char *f = art_path_join(dir, names[i]);
        unlink(f);
        free(f);
    }
    rmdir(dir);
    char *mid = art_path_join(tmpdir, "bundle");
    rmdir(mid);
    free(mid);
    free(dir);
    art_doc_destroy(d);
    art_table_destroy(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_csv_text),
        cmocka_unit_test(test_csv_round_trip),
        cmocka_unit_test(test_json),
        cmocka_unit_test(test_misuse),
        cmocka_unit_test(test_load_errors),
        cmocka_unit_test(test_atomic),
        cmocka_unit_test(test_mkdir_and_join),
        cmocka_unit_test(test_print),
        cmocka_unit_test(test_group_thousands),
        cmocka_unit_test(test_rounded_writers),
        cmocka_unit_test(test_bundle),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
