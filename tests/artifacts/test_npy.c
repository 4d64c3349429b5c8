/*
 * .npy: files written by NumPy itself (scripts/make-npy-fixtures.py, every
 * value a formula of its index recomputed here) read back with their
 * dtypes, shapes and versions 1.0, 2.0 and 3.0; the writer's bytes equal
 * numpy.save's; round trips of every dtype; and every malformed file the
 * reader must refuse, each message naming the file and what is wrong.
 * argv[1]: the fixture folder.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "edgefit/artifacts.h"

static const char *fixtures;
static char tmpdir[] = "/tmp/art-npy-XXXXXX";

static char *fixture(const char *name)
{
    char *p = art_path_join(fixtures, name);
    assert_non_null(p);
    return p;
}

static unsigned char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    const long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc((size_t)n + 1);
    assert_non_null(b);
    assert_int_equal(fread(b, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *len = (size_t)n;
    return b;
}

static art_npy *load_ok(const char *name, enum art_dtype dtype,
                        size_t ndim, const uint64_t *shape)
{
    char *path = fixture(name);
    art_npy *a = NULL;
    struct art_diag d;
    const int st = art_npy_load(path, &a, &d);
    if (st != ART_OK) {
        fail_msg("%s: %s", path, d.message);
    }
    const struct art_tensor *t = art_npy_tensor(a);
    assert_int_equal(t->dtype, dtype);
    assert_int_equal(t->ndim, ndim);
    for (size_t i = 0; i < ndim; i++) {
        assert_int_equal(t->shape[i], shape[i]);
    }
    assert_string_equal(t->name, path);
    free(path);
    return a;
}

static void test_numpy_files(void **state)
{
    (void)state;
    art_npy *a = load_ok("f4.npy", ART_DTYPE_F32, 2, (uint64_t[]){2, 3});
    const float *f = art_npy_tensor(a)->data;
    for (int i = 0; i < 6; i++) {
        assert_true(f[i] == (float)i / 4.0f - 0.5f);
    }
    assert_int_equal(art_npy_version(a), 1);
    art_npy_destroy(a);

    a = load_ok("f8.npy", ART_DTYPE_F64, 1, (uint64_t[]){4});
    const double *g = art_npy_tensor(a)->data;
    for (int i = 0; i < 4; i++) {
        assert_true(g[i] == i * 1.25 - 3.0);
    }
    art_npy_destroy(a);

    /* Half floats as bits: 1.0, -2.0, 0.5, 65504 (the largest). */
    a = load_ok("f2.npy", ART_DTYPE_F16, 2, (uint64_t[]){2, 2});
    const uint16_t *h = art_npy_tensor(a)->data;
    assert_int_equal(h[0], 0x3c00);
    assert_int_equal(h[1], 0xc000);
    assert_int_equal(h[2], 0x3800);
    assert_int_equal(h[3], 0x7bff);
    art_npy_destroy(a);

    a = load_ok("u1.npy", ART_DTYPE_U8, 1, (uint64_t[]){5});
    const uint8_t *u = art_npy_tensor(a)->data;
    assert_int_equal(u[3], 3);
    assert_int_equal(u[4], 250);
    art_npy_destroy(a);

    a = load_ok("i1.npy", ART_DTYPE_I8, 2, (uint64_t[]){2, 1});
    const int8_t *s = art_npy_tensor(a)->data;
    assert_int_equal(s[0], -128);
    assert_int_equal(s[1], 127);
    art_npy_destroy(a);

    a = load_ok("i4.npy", ART_DTYPE_I32, 1, (uint64_t[]){3});
    const int32_t *i4 = art_npy_tensor(a)->data;
    assert_int_equal(i4[0], -7);
    assert_int_equal(i4[2], 2147483647);
    art_npy_destroy(a);

    a = load_ok("i8.npy", ART_DTYPE_I64, 1, (uint64_t[]){2});
    const int64_t *i8 = art_npy_tensor(a)->data;
    assert_true(i8[0] == -1);
    assert_true(i8[1] == (int64_t)1 << 40);
    art_npy_destroy(a);

    /* Big-endian bytes come back in the host's order. */
    a = load_ok("be_f4.npy", ART_DTYPE_F32, 1, (uint64_t[]){3});
    f = art_npy_tensor(a)->data;
    assert_true(f[0] == 1.5f && f[1] == -2.25f && f[2] == 1e-3f);
    art_npy_destroy(a);

    a = load_ok("scalar.npy", ART_DTYPE_F64, 0, NULL);
    assert_true(*(const double *)art_npy_tensor(a)->data ==
                3.141592653589793);
    art_npy_destroy(a);

    a = load_ok("empty.npy", ART_DTYPE_F32, 2, (uint64_t[]){0, 3});
    art_npy_destroy(a);

    a = load_ok("rank4.npy", ART_DTYPE_F32, 4, (uint64_t[]){1, 2, 3, 4});
    f = art_npy_tensor(a)->data;
    for (int i = 0; i < 24; i++) {
        assert_true(f[i] == (float)(i - 12));
    }
    art_npy_destroy(a);

    a = load_ok("v2.npy", ART_DTYPE_F32, 1, (uint64_t[]){3});
    assert_int_equal(art_npy_version(a), 2);
    f = art_npy_tensor(a)->data;
    assert_true(f[0] == 0.5f && f[2] == 2.5f);
    art_npy_destroy(a);

    a = load_ok("v3.npy", ART_DTYPE_F32, 1, (uint64_t[]){2});
    assert_int_equal(art_npy_version(a), 3);
    f = art_npy_tensor(a)->data;
    assert_true(f[0] == 0.0f && f[1] == -1.0f);
    art_npy_destroy(a);
}

/* Load a fixture, write it again and compare with numpy.save's bytes. */
static void same_bytes(const char *name)
{
    char *src = fixture(name);
    art_npy *a = NULL;
    assert_int_equal(art_npy_load(src, &a, NULL), ART_OK);
    char *dst = art_path_join(tmpdir, name);
    struct art_diag d;
    assert_int_equal(art_npy_save(dst, art_npy_tensor(a), &d), ART_OK);
    size_t n1, n2;
    unsigned char *b1 = read_file(src, &n1);
    unsigned char *b2 = read_file(dst, &n2);
    if (n1 != n2 || memcmp(b1, b2, n1) != 0) {
        fail_msg("%s: %zu bytes written, numpy wrote %zu (or they differ)",
                 name, n2, n1);
    }
    free(b1);
    free(b2);
    unlink(dst);
    free(dst);
    free(src);
    art_npy_destroy(a);
}

static void test_writer_matches_numpy(void **state)
{
    (void)state;
    same_bytes("f4.npy");
    same_bytes("f2.npy");
    same_bytes("f8.npy");
    same_bytes("u1.npy");
    same_bytes("i1.npy");
    same_bytes("i8.npy");
    same_bytes("scalar.npy");
    same_bytes("empty.npy");
    same_bytes("rank4.npy");
}

static void test_round_trip(void **state)
{
    (void)state;
    const int32_t v[6] = {1, -2, 3, -4, 5, INT32_MIN};
    struct art_tensor t = {"x", ART_DTYPE_I32, 3, {1, 3, 2}, v};
    char *path = art_path_join(tmpdir, "rt.npy");
    assert_int_equal(art_npy_save(path, &t, NULL), ART_OK);
    art_npy *a = NULL;
    assert_int_equal(art_npy_load(path, &a, NULL), ART_OK);
    const struct art_tensor *r = art_npy_tensor(a);
    assert_int_equal(r->dtype, ART_DTYPE_I32);
    assert_int_equal(r->ndim, 3);
    assert_memory_equal(r->data, v, sizeof v);
    art_npy_destroy(a);

    /* BF16 has no NumPy dtype: refused, nothing written. */
    unlink(path);
    t.dtype = ART_DTYPE_BF16;
    struct art_diag d;
    assert_int_equal(art_npy_save(path, &t, &d), ART_E_INVALID);
    assert_non_null(strstr(d.message, "BF16"));
    assert_int_equal(access(path, F_OK), -1);
    free(path);
}

/* A .npy image: preamble of version major, the header text padded with
 * spaces and a newline to a multiple of 64, then data_len bytes of 0x11. */
static unsigned char *make(unsigned major, const char *dict, size_t data_len,
                           size_t *len)
{
    const size_t pre = major == 1 ? 10 : 12;
    const size_t total = (pre + strlen(dict) + 1 + 63) / 64 * 64;
    const size_t hlen = total - pre;
    unsigned char *b = malloc(total + data_len + 1);
    assert_non_null(b);
    memcpy(b, "\x93NUMPY", 6);
    b[6] = (unsigned char)major;
    b[7] = 0;
    b[8] = (unsigned char)hlen;
    b[9] = (unsigned char)(hlen >> 8);
    if (major > 1) {
        b[10] = b[11] = 0;
    }
    memset(b + pre, ' ', hlen);
    memcpy(b + pre, dict, strlen(dict));
    b[total - 1] = '\n';
    memset(b + total, 0x11, data_len);
    *len = total + data_len;
    return b;
}

static void refused(const unsigned char *b, size_t len, int want,
                    const char *needle)
{
    art_npy *a = (art_npy *)1;
    struct art_diag d;
    const int st = art_npy_parse(b, len, "bad.npy", &a, &d);
    assert_null(a);
    if (st != want || !strstr(d.message, needle) ||
        strncmp(d.message, "bad.npy: ", 9) != 0) {
        fail_msg("status %d (want %d), message '%s' (want '%s')", st, want,
                 d.message, needle);
    }
}

static void refused_dict(const char *dict, size_t data_len, int want,
                         const char *needle)
{
    size_t len;
    unsigned char *b = make(1, dict, data_len, &len);
    refused(b, len, want, needle);
    free(b);
}

#define F4 "'descr': '<f4', 'fortran_order': False, "

static void test_malformed(void **state)
{
    (void)state;
    size_t len;
    unsigned char *b = make(1, "{" F4 "'shape': (2, 3), }", 24, &len);
    art_npy *a = NULL;
    assert_int_equal(art_npy_parse(b, len, "good.npy", &a, NULL), ART_OK);
    art_npy_destroy(a);
    /* one byte short of the data, one byte too many */
    refused(b, len - 1, ART_E_PARSE, "truncated: the shape and dtype make "
            "24 bytes of data, the file holds 23");
    b = realloc(b, len + 1);
    refused(b, len + 1, ART_E_PARSE, "1 trailing bytes");
    /* the header length runs past the end */
    refused(b, 70, ART_E_PARSE, "header length 118 runs past the end");
    refused(b, 9, ART_E_PARSE, "truncated");
    b[0] = 'x';
    refused(b, len, ART_E_PARSE, "not a .npy file");
    b[0] = 0x93;
    b[6] = 4;
    refused(b, len, ART_E_PARSE, "version 4.0 is not supported");
    b[6] = 1;
    b[20] = '\0';
    refused(b, len, ART_E_PARSE, "NUL byte");
    free(b);

    refused_dict("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }",
                 24, ART_E_PARSE, "fortran_order is True");
    refused_dict("{'descr': '|b1', 'fortran_order': False, 'shape': (2,), }",
                 2, ART_E_PARSE, "dtype '|b1' is not supported");
    refused_dict("{'descr': '|f4', 'fortran_order': False, 'shape': (2,), }",
                 8, ART_E_PARSE, "dtype '|f4'");
    refused_dict("{'descr': [('a', '<f4')], 'fortran_order': False, "
                 "'shape': (2,), }", 8, ART_E_PARSE, "structured");
    refused_dict("{" F4 "'shape': (4294967296, 4294967296, 2), }", 0,
                 ART_E_OVERFLOW, "does not fit in 64 bits");
    refused_dict("{" F4 "'shape': (99999999999999999999,), }", 0,
                 ART_E_OVERFLOW, "shape[0] does not fit");
    refused_dict("{" F4 "'shape': (1, 1, 1, 1, 1, 1, 1, 1, 1), }", 4,
                 ART_E_PARSE, "more than 8 dimensions");
    refused_dict("{" F4 "'shape': (3), }", 12, ART_E_PARSE,
                 "(N,) is");
    refused_dict("{" F4 "'shape': (-3,), }", 12, ART_E_PARSE,
                 "shape[0] is not a non-negative integer");
    refused_dict("{" F4 "'shape': [3], }", 12, ART_E_PARSE,
                 "shape is not a tuple");
    refused_dict("{" F4 "'shape': (3,), 'extra': 1}", 12, ART_E_PARSE,
                 "unknown key 'extra'");
    refused_dict("{" F4 "}", 4, ART_E_PARSE, "no 'shape' key");
    refused_dict("{" F4 "'shape': (3,), 'shape': (3,)}", 12, ART_E_PARSE,
                 "'shape' appears twice");
    refused_dict("{" F4 "'shape': (3,)} x", 12, ART_E_PARSE,
                 "text after the dict");
    refused_dict("[1, 2]", 0, ART_E_PARSE, "not a Python dict");

    /* Version 2: the 4-byte length, the same checks. */
    b = make(2, "{" F4 "'shape': (2,), }", 8, &len);
    assert_int_equal(art_npy_parse(b, len, "v2.npy", &a, NULL), ART_OK);
    assert_int_equal(art_npy_version(a), 2);
    art_npy_destroy(a);
    b[11] = 1; /* 16 MiB more header than the file holds */
    refused(b, len, ART_E_PARSE, "runs past the end");
    free(b);
}

static void test_files_refused(void **state)
{
    (void)state;
    art_npy *a = NULL;
    struct art_diag d;
    char *fort = fixture("fortran.npy");
    assert_int_equal(art_npy_load(fort, &a, &d), ART_E_PARSE);
    assert_non_null(strstr(d.message, fort));
    assert_non_null(strstr(d.message, "fortran_order is True"));
    free(fort);
    char *bool_ = fixture("bool.npy");
    assert_int_equal(art_npy_load(bool_, &a, &d), ART_E_PARSE);
    assert_non_null(strstr(d.message, "'|b1'"));
    free(bool_);

    /* The system's reason for a file that cannot be read. */
    char *missing = art_path_join(tmpdir, "missing.npy");
    assert_int_equal(art_npy_load(missing, &a, &d), ART_E_IO);
    assert_int_equal(d.sys_errno, ENOENT);
    assert_non_null(strstr(d.message, missing));
    assert_non_null(strstr(d.message, strerror(ENOENT)));
    free(missing);
    assert_int_equal(art_npy_load(tmpdir, &a, &d), ART_E_IO);
    assert_non_null(strstr(d.message, strerror(EISDIR)));
    assert_null(a);

    /* A truncated numpy file, cut in its data. */
    size_t len;
    char *src = fixture("rank4.npy");
    unsigned char *b = read_file(src, &len);
    char *cut = art_path_join(tmpdir, "cut.npy");
    FILE *f = fopen(cut, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(b, 1, len - 5, f), len - 5);
    fclose(f);
    assert_int_equal(art_npy_load(cut, &a, &d), ART_E_PARSE);
    assert_non_null(strstr(d.message, "truncated"));
    assert_non_null(strstr(d.message, "96 bytes of data, the file holds 91"));
    unlink(cut);
    free(cut);
    free(src);
    free(b);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s FIXTURE_DIR\n", argv[0]);
        return 2;
    }
    fixtures = argv[1];
    if (!mkdtemp(tmpdir)) {
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_numpy_files),
        cmocka_unit_test(test_writer_matches_numpy),
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_files_refused),
    };
    const int rc = cmocka_run_group_tests(tests, NULL, NULL);
    rmdir(tmpdir);
    return rc;
}
