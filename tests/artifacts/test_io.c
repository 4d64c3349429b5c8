/* Files that fail: all-or-nothing bundles under a write that fails only
 * when the data reaches the disk, the system's reason for each failure,
 * CSV that is UTF-8 or refused, and cells that read back as written. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "edgefit/artifacts.h"

static char tmpdir[] = "/tmp/edgefit-io-XXXXXX";

static void remove_tree(const char *path)
{
    DIR *d = opendir(path);
    if (!d) {
        unlink(path);
        return;
    }
    struct dirent *e;
    while ((e = readdir(d))) {
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
            char *p = art_path_join(path, e->d_name);
            struct stat sb;
            if (lstat(p, &sb) == 0 && S_ISDIR(sb.st_mode)) {
                remove_tree(p);
            } else {
                unlink(p);
            }
            free(p);
        }
    }
    closedir(d);
    rmdir(path);
}

static int setup(void **state)
{
    (void)state;
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    remove_tree(tmpdir);
    return 0;
}

static char *in_tmp(const char *name)
{
    return art_path_join(tmpdir, name);
}

static void write_file(const char *path, const char *text, size_t len)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(text, 1, len, f), len);
    assert_int_equal(fclose(f), 0);
}

static int count_entries(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) {
        return -1;
    }
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    }
    closedir(d);
    return n;
}

/* ---- All or nothing ---------------------------------------------------- */

struct blob {
    size_t len;
    char byte;
};

/* Writes len bytes through stdio: below the stream's buffer size, fwrite
 * only fills the buffer and succeeds; the disk is reached at the flush. */
static int write_blob(const void *obj, FILE *f)
{
    const struct blob *b = obj;
    for (size_t i = 0; i < b->len; i++) {
        if (fputc(b->byte, f) == EOF) {
            return ART_E_IO;
        }
    }
    return ART_OK;
}

/* A file system that runs out of room while the second member is still in
 * its stdio buffer: RLIMIT_FSIZE (which binds root too) makes the flush
 * fail with EFBIG, exactly where a full disk fails with ENOSPC. Before
 * members were synced ahead of the renames, the first one appeared alone. */
static void test_bundle_flush_failure(void **state)
{
    (void)state;
    char *dir = in_tmp("fsize");
    const struct blob small = {100, 'a'}, big = {3000, 'b'};
    art_bundle *b = NULL;
    assert_int_equal(art_bundle_create(dir, &b), ART_OK);
    assert_int_equal(art_bundle_add(b, "first.txt", write_blob, &small),
                     ART_OK);
    assert_int_equal(art_bundle_add(b, "second.txt", write_blob, &big),
                     ART_OK);

    struct rlimit old;
    assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
    void (*old_handler)(int) = signal(SIGXFSZ, SIG_IGN);
    struct rlimit lim = {1024, old.rlim_max};
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
    struct art_diag diag;
    const int st = art_bundle_commit(b, &diag);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
    signal(SIGXFSZ, old_handler);

    assert_int_equal(st, ART_E_IO);
    assert_int_equal(diag.sys_errno, EFBIG);
    char *second = art_path_join(dir, "second.txt");
    char want[600];
    snprintf(want, sizeof want, "%s: %s", second, strerror(EFBIG));
    assert_string_equal(diag.message, want);
    /* Neither member, and no temporary: the folder, new, is not even
     * made (the bundle is built in a sibling and renamed whole). */
    assert_int_equal(count_entries(dir), -1);
    free(second);

    /* The same bundle with room: both, whole. */
    assert_int_equal(art_bundle_create(dir, &b), ART_OK);
    assert_int_equal(art_bundle_add(b, "first.txt", write_blob, &small),
                     ART_OK);
    assert_int_equal(art_bundle_add(b, "second.txt", write_blob, &big),
                     ART_OK);
    assert_int_equal(art_bundle_commit(b, &diag), ART_OK);
    assert_int_equal(count_entries(dir), 2);
    char *p = art_path_join(dir, "second.txt");
    struct stat sb;
    assert_int_equal(stat(p, &sb), 0);
    assert_int_equal(sb.st_size, 3000);
    free(p);
    free(dir);
}

/* A member that writes half of itself, then signals its own process: the
 * signal arrives in the middle of the commit's first phase, the first
 * member's temporary synced, this one's open. */
static int write_then_signal(const void *obj, FILE *f)
{
    const int *sig = obj;
    for (int i = 0; i < 5000; i++) {
        fputc('n', f);
    }
    fflush(f);
    kill(getpid(), *sig);
    /* not reached when the signal kills, as it must */
    fputs("after the signal", f);
    return ART_OK;
}

static char *file_text(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        return NULL;
    }
    static char buf[256];
    const size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

/* SIGTERM or SIGINT during a commit: the process dies of the signal, no
 * temporary (name.tmp.XXXXXX) remains, and the folder keeps its old
 * files, whole. (Before: the temporaries stayed.) */
static void test_bundle_signal(void **state)
{
    (void)state;
    static const int sigs[] = {SIGTERM, SIGINT};
    for (size_t k = 0; k < 2; k++) {
        char name[32];
        snprintf(name, sizeof name, "signal%zu", k);
        char *dir = in_tmp(name);
        const struct blob old_a = {10, 'o'}, new_a = {20000, 'N'};
        art_bundle *b = NULL;
        assert_int_equal(art_bundle_create(dir, &b), ART_OK);
        assert_int_equal(art_bundle_add(b, "a.txt", write_blob, &old_a),
                         ART_OK);
        assert_int_equal(art_bundle_add(b, "b.txt", write_blob, &old_a),
                         ART_OK);
        assert_int_equal(art_bundle_commit(b, NULL), ART_OK);

        fflush(NULL);
        const pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            /* the child starts with the default actions, as a program */
            signal(SIGTERM, SIG_DFL);
            signal(SIGINT, SIG_DFL);
            art_bundle *c = NULL;
            if (art_bundle_create(dir, &c) != ART_OK ||
                art_bundle_add(c, "a.txt", write_blob, &new_a) != ART_OK ||
                art_bundle_add(c, "b.txt", write_then_signal, &sigs[k]) !=
                    ART_OK) {
                _exit(3);
            }
            art_bundle_commit(c, NULL);
            _exit(4); /* the signal did not kill */
        }
        int ws = 0;
        assert_int_equal(waitpid(pid, &ws, 0), pid);
        if (!WIFSIGNALED(ws) || WTERMSIG(ws) != sigs[k]) {
            fail_msg("signal %d: the child %s %d", sigs[k],
                     WIFSIGNALED(ws) ? "died of signal" : "exited",
                     WIFSIGNALED(ws) ? WTERMSIG(ws) : WEXITSTATUS(ws));
        }
        DIR *d = opendir(dir);
        assert_non_null(d);
        struct dirent *e;
        while ((e = readdir(d))) {
            if (strstr(e->d_name, ".tmp.")) {
                fail_msg("signal %d left %s", sigs[k], e->d_name);
            }
        }
        closedir(d);
        assert_int_equal(count_entries(dir), 2);
        static const char *const members[] = {"a.txt", "b.txt"};
        for (size_t m = 0; m < 2; m++) {
            char *p = art_path_join(dir, members[m]);
            const char *text = file_text(p);
            assert_non_null(text);
            assert_string_equal(text, "oooooooooo");
            free(p);
        }
        free(dir);
    }
}

static int fail_second(const void *obj, FILE *f)
{
    (void)obj;
    fputs("half a file", f);
    return ART_E_NOMEM;
}

/* A writer that fails after the first member was written and synced:
 * nothing appears, and the message names the member and the status. */
static void test_bundle_writer_failure(void **state)
{
    (void)state;
    char *dir = in_tmp("writer");
    const struct blob small = {10, 'x'};
    art_bundle *b = NULL;
    assert_int_equal(art_bundle_create(dir, &b), ART_OK);
    assert_int_equal(art_bundle_add(b, "one.txt", write_blob, &small),
                     ART_OK);
    assert_int_equal(art_bundle_add(b, "two.txt", fail_second, NULL),
                     ART_OK);
    struct art_diag diag;
    assert_int_equal(art_bundle_commit(b, &diag), ART_E_NOMEM);
    assert_int_equal(diag.sys_errno, 0);
    assert_non_null(strstr(diag.message, "two.txt: out of memory"));
    assert_int_equal(count_entries(dir), -1); /* not made: see above */
    free(dir);
}

/* ---- The system's reason ----------------------------------------------- */

static void expect_io(int st, const struct art_diag *diag, int err,
                      const char *path)
{
    assert_int_equal(st, ART_E_IO);
    assert_int_equal(diag->sys_errno, err);
    char want[700];
    snprintf(want, sizeof want, "%s: %s", path, strerror(err));
    if (strncmp(diag->message, want, strlen(want)) != 0) {
        fail_msg("expected '%s...', got '%s'", want, diag->message);
    }
}

static void test_reasons(void **state)
{
    (void)state;
    char *file = in_tmp("a-file");
    write_file(file, "x", 1);
    struct art_diag diag;

    /* A file where a folder should be. */
    expect_io(art_mkdir_p(file, &diag), &diag, ENOTDIR, file);
    char *below = art_path_join(file, "sub");
    expect_io(art_mkdir_p(below, &diag), &diag, ENOTDIR, below);
    art_bundle *b = NULL;
    const struct blob small = {10, 'x'};
    assert_int_equal(art_bundle_create(below, &b), ART_OK);
    assert_int_equal(art_bundle_add(b, "x.txt", write_blob, &small), ART_OK);
    expect_io(art_bundle_commit(b, &diag), &diag, ENOTDIR, below);

    /* A symbolic link to nothing: ENOENT, said to be a link. */
    char *link = in_tmp("dangling");
    char *target = in_tmp("nowhere");
    assert_int_equal(symlink(target, link), 0);
    expect_io(art_mkdir_p(link, &diag), &diag, ENOENT, link);
    assert_non_null(strstr(diag.message, "symbolic link"));

    /* A missing folder for a single file: the file's path is named. */
    char *lost = in_tmp("no/such/x.csv");
    art_atomic *a = NULL;
    expect_io(art_atomic_open(lost, &a, &diag), &diag, ENOENT, lost);
    assert_null(a);

    /* A single file below a file: the path and ENOTDIR. */
    art_table *one = NULL;
    assert_int_equal(art_table_create("t", &one), ART_OK);
    assert_int_equal(art_table_add_column(one, "c", ART_UINT), ART_OK);
    char *inside = art_path_join(file, "x.csv");
    expect_io(art_table_save_csv(one, inside, &diag), &diag, ENOTDIR,
              inside);
    free(inside);
    art_table_destroy(one);

    /* Reading: a file that is not there, a folder. */
    art_table *t = NULL;
    expect_io(art_table_load_csv(lost, &t, &diag), &diag, ENOENT, lost);
    expect_io(art_table_load_csv(tmpdir, &t, &diag), &diag, EISDIR, tmpdir);

    /* Success clears what a failure left. */
    char *good = in_tmp("good.txt");
    assert_int_equal(art_atomic_open(good, &a, &diag), ART_OK);
    fputs("ok\n", art_atomic_file(a));
    assert_int_equal(art_atomic_commit(a, &diag), ART_OK);
    assert_int_equal(diag.sys_errno, 0);
    assert_string_equal(diag.message, "");

    free(good);
    free(lost);
    free(target);
    free(link);
    free(below);
    free(file);
}

/* ---- UTF-8 or refused -------------------------------------------------- */

static void test_csv_utf8(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        size_t len;
        int line;
        const char *what; /* in the message; NULL: accepted */
    } cases[] = {
#define T(s) s, sizeof s - 1
        {T("name,v\ncaf\xe9,1\n"), 2, "column 4: invalid UTF-8 (byte 0xE9)"},
        /* overlong "/" (2 and 3 bytes) and NUL (C0 80) */
        {T("name,v\na\xc0\xaf,1\n"), 2, "column 2: invalid UTF-8 (byte 0xC0)"},
        {T("name,v\nab\xe0\x80\xaf,1\n"), 2,
         "column 3: invalid UTF-8 (byte 0xE0)"},
        {T("name,v\n\xc0\x80,1\n"), 2, "column 1: invalid UTF-8 (byte 0xC0)"},
        /* a surrogate, U+D800 */
        {T("name,v\nx,\xed\xa0\x80\n"), 2,
         "column 3: invalid UTF-8 (byte 0xED)"},
        /* above U+10FFFF */
        {T("name,v\nx,\xf4\x90\x80\x80\n"), 2,
         "column 3: invalid UTF-8 (byte 0xF4)"},
        /* truncated: before a comma, before a newline, at the end */
        {T("name,v\n\xe2\x82,1\n"), 2, "column 1: invalid UTF-8 (byte 0xE2)"},
        {T("name,v\nx,\xe2\x82\n"), 2, "column 3: invalid UTF-8 (byte 0xE2)"},
        {T("name,v\nx,1\n\n\"y\",\xf0\x9f\x98"), 4,
         "column 5: invalid UTF-8 (byte 0xF0); the file ends inside its "
         "sequence"},
        /* a stray continuation byte, inside quotes */
        {T("name,v\n\"a\x80\",1\n"), 2, "column 3: invalid UTF-8 (byte 0x80)"},
        {T("name,v\nx,a\0b\n"), 2, "column 4: a NUL byte"},
        /* a BOM anywhere but the start is not skipped: it is a character */
        {T("name,v\n\xef\xbb\xbfx,1\n"), 0, NULL},
        /* the largest code point, a 4-byte emoji, a 3-byte euro */
        {T("name,v\n\xf4\x8f\xbf\xbf,\xf0\x9f\x98\x80\xe2\x82\xac\n"), 0, NULL},
#undef T
    };
    char *path = in_tmp("utf8.csv");
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        write_file(path, cases[i].text, cases[i].len);
        art_table *t = NULL;
        struct art_diag diag;
        const int st = art_table_load_csv(path, &t, &diag);
        if (!cases[i].what) {
            if (st != ART_OK) {
                fail_msg("case %zu: refused: %d: %s", i, diag.line,
                         diag.message);
            }
            art_table_destroy(t);
            continue;
        }
        if (st != ART_E_PARSE || diag.line != cases[i].line ||
            !strstr(diag.message, cases[i].what)) {
            fail_msg("case %zu: status %d, line %d, '%s'", i, st, diag.line,
                     diag.message);
        }
        assert_null(t);
    }
    free(path);

    /* Text that is not UTF-8 never enters a table. */
    art_table *t = NULL;
    assert_int_equal(art_table_create("t", &t), ART_OK);
    assert_int_equal(art_table_add_column(t, "s", ART_TEXT), ART_OK);
    assert_int_equal(art_table_add_row(t, NULL), ART_OK);
    assert_int_equal(art_table_set_text(t, 0, 0, "caf\xe9"), ART_E_INVALID);
    assert_int_equal(art_table_set_text(t, 0, 0, "\xed\xa0\x80"),
                     ART_E_INVALID);
    assert_int_equal(art_table_set_text(t, 0, 0, "caf\xc3\xa9"), ART_OK);
    art_table_destroy(t);
}

/* A leading BOM is skipped (not a character of the first column name),
 * and the lines a table remembers are the file's, blank lines counted. */
static void test_csv_bom_and_lines(void **state)
{
    (void)state;
    char *path = in_tmp("bom.csv");
    static const char text[] = "\xef\xbb\xbf\n"
                               "name,v\n"
                               "\n"
                               "a,1\n"
                               "  \t\n"
                               "\"multi\n"
                               "line\",2\n"
                               "c,3";
    write_file(path, text, sizeof text - 1);
    art_table *t = NULL;
    struct art_diag diag;
    assert_int_equal(art_table_load_csv(path, &t, &diag), ART_OK);
    assert_string_equal(art_table_column_name(t, 0), "name");
    assert_int_equal(art_table_rows(t), 3);
    assert_int_equal(art_table_header_line(t), 2);
    assert_int_equal(art_table_row_line(t, 0), 4);
    assert_int_equal(art_table_row_line(t, 1), 6);
    assert_int_equal(art_table_row_line(t, 2), 8);
    assert_int_equal(art_table_row_line(t, 3), 0); /* no such row */
    art_table_destroy(t);

    /* An error on a row after blank lines names that row's line. */
    static const char bad[] = "name,v\n\n\na,1\n\nb\n";
    write_file(path, bad, sizeof bad - 1);
    assert_int_equal(art_table_load_csv(path, &t, &diag), ART_E_PARSE);
    assert_int_equal(diag.line, 6);
    assert_non_null(strstr(diag.message, "1 fields where the header has 2"));
    free(path);
}

/* libcsv's one strict-mode error, "error parsing data while strict
 * checking enabled", said in words at the line and column of the quote
 * at fault; a quoted field never closed is named at the line it opened
 * (before: the raw text, at the end of the file). */
static void test_csv_quote_errors(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        int line;
        const char *fragment;
    } cases[] = {
        {"a,b\n1,2\n\n3,\"4\"x\n", 4,
         "column 6: a quoted field goes on after its closing quote"},
        {"a,b\n1,ab\"c\n", 2,
         "column 5: a quote inside a field that does not start with one"},
        {"a,b\n1,2\n3,\"4\n5,6\n7,8\n", 3,
         "a quoted field opened in this record is never closed"},
        {"a,b\n1,\"x\ny\"z\n", 3, "column 3: a quoted field goes on"},
    };
    char *path = in_tmp("quote.csv");
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        write_file(path, cases[i].text, strlen(cases[i].text));
        art_table *t = NULL;
        struct art_diag diag;
        assert_int_equal(art_table_load_csv(path, &t, &diag), ART_E_PARSE);
        if (diag.line != cases[i].line ||
            !strstr(diag.message, cases[i].fragment)) {
            fail_msg("case %zu: line %d '%s'; want line %d '%s'", i,
                     diag.line, diag.message, cases[i].line,
                     cases[i].fragment);
        }
        assert_null(strstr(diag.message, "strict checking"));
    }
    free(path);
}

/* ---- Cells that read back ---------------------------------------------- */

static void test_csv_round_trip_cells(void **state)
{
    (void)state;
    /* Every one of these came back changed (trimmed, split, or the file
     * refused) when cells were quoted only for commas, quotes, line ends
     * and spaces. */
    static const char *const cells[] = {
        "\t", " ", "  ", "\ta", "a\t", " a ", "\t a \t", "x\ty",
        "q\"uote", "\"", "new\nline", "cr\rhere", "com,ma", "", "plain",
        "\357\273\277bom" /* a UTF-8 byte-order mark, then "bom" */, "caf\xc3\xa9",
    };
    const size_t n = sizeof cells / sizeof cells[0];
    char *path = in_tmp("cells.csv");
    /* Each cell as a header (one tab alone made an unreadable file) and
     * as a value, in a two-column table so that "" stays a cell. */
    for (size_t i = 0; i < n; i++) {
        if (!*cells[i]) {
            continue; /* a column needs a name */
        }
        art_table *t = NULL;
        assert_int_equal(art_table_create("t", &t), ART_OK);
        assert_int_equal(art_table_add_column(t, cells[i], ART_TEXT), ART_OK);
        assert_int_equal(art_table_add_column(t, "other", ART_TEXT), ART_OK);
        for (size_t j = 0; j < n; j++) {
            size_t r;
            assert_int_equal(art_table_add_row(t, &r), ART_OK);
            if (*cells[j]) {
                assert_int_equal(art_table_set_text(t, r, 0, cells[j]),
                                 ART_OK);
            }
            assert_int_equal(art_table_set_text(t, r, 1, "z"), ART_OK);
        }
        assert_int_equal(art_table_save_csv(t, path, NULL), ART_OK);
        art_table *back = NULL;
        struct art_diag diag;
        if (art_table_load_csv(path, &back, &diag) != ART_OK) {
            fail_msg("header %zu: not read back: %d: %s", i, diag.line,
                     diag.message);
        }
        assert_string_equal(art_table_column_name(back, 0), cells[i]);
        assert_int_equal(art_table_rows(back), n);
        for (size_t j = 0; j < n; j++) {
            char buf[64];
            art_table_format_cell(back, j, 0, buf, sizeof buf);
            if (strcmp(buf, cells[j]) != 0) {
                fail_msg("header %zu, cell %zu: wrote '%s', read '%s'", i, j,
                         cells[j], buf);
            }
        }
        art_table_destroy(back);
        art_table_destroy(t);
    }
    free(path);

    /* The exact bytes: only the cells that need quotes get them. */
    art_table *t = NULL;
    assert_int_equal(art_table_create("t", &t), ART_OK);
    assert_int_equal(art_table_add_column(t, "\t", ART_TEXT), ART_OK);
    assert_int_equal(art_table_add_column(t, "b", ART_TEXT), ART_OK);
    assert_int_equal(art_table_add_row(t, NULL), ART_OK);
    assert_int_equal(art_table_set_text(t, 0, 0, "x\ty"), ART_OK);
    assert_int_equal(art_table_set_text(t, 0, 1, "y\t"), ART_OK);
    char buf[128] = {0};
    FILE *f = fmemopen(buf, sizeof buf, "w");
    assert_int_equal(art_table_write_csv(t, f), ART_OK);
    fclose(f);
    assert_string_equal(buf, "\"\t\",b\nx\ty,\"y\t\"\n");
    art_table_destroy(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bundle_flush_failure),
        cmocka_unit_test(test_bundle_writer_failure),
        cmocka_unit_test(test_bundle_signal),
        cmocka_unit_test(test_reasons),
        cmocka_unit_test(test_csv_utf8),
        cmocka_unit_test(test_csv_bom_and_lines),
        cmocka_unit_test(test_csv_quote_errors),
        cmocka_unit_test(test_csv_round_trip_cells),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
