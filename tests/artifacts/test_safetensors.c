/*
 * safetensors: tensors of every dtype (a scalar and a zero-sized one among
 * them) and metadata written and read back byte for byte, the file's layout
 * checked against the format with jansson, the bundle member, the writer's
 * refusals, every malformed header the reader must refuse (each message
 * naming the tensor at fault), and a file written by an independent Python
 * implementation from PyTorch's tensors (scripts/make-safetensors-
 * fixture.py), whose values are known by hand.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "edgefit/artifacts.h"

static const char *fixture_path;

static char *temp_dir(void)
{
    char tmpl[] = "/tmp/art-st-XXXXXX";
    char *d = mkdtemp(tmpl);
    assert_non_null(d);
    return strdup(d);
}

static char *join(const char *dir, const char *name)
{
    char *p = art_path_join(dir, name);
    assert_non_null(p);
    return p;
}

static void *read_file(const char *path, size_t *len)
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

static uint64_t le64(const unsigned char *b)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) {
        v = (v << 8) | b[i];
    }
    return v;
}

/* ---- round trip ------------------------------------------------------- */

static const float w_f32[6] = {1.5f, -2.25f, 0.0f, 3.0e38f, -1e-30f, 7.0f};
static const uint16_t w_f16[4] = {0x3c00, 0xc000, 0x7bff, 0x0001};
static const uint16_t w_bf16[2] = {0x3f80, 0xff80};
static const double w_f64 = 2.718281828459045;
static const int8_t w_i8[3] = {-128, 0, 127};
static const int32_t w_i32[4] = {INT32_MIN, -1, 0, INT32_MAX};
static const int64_t w_i64[1] = {INT64_MIN};

static void fill(struct art_tensor *t)
{
    memset(t, 0, 8 * sizeof(*t));
    t[0] = (struct art_tensor){"dense1.weight", ART_DTYPE_F32, 2, {2, 3},
                               w_f32};
    t[1] = (struct art_tensor){"h", ART_DTYPE_F16, 1, {4}, w_f16};
    t[2] = (struct art_tensor){"b", ART_DTYPE_BF16, 2, {1, 2}, w_bf16};
    /* an odd size before wider types: their slots must still be aligned */
    t[3] = (struct art_tensor){"odd", ART_DTYPE_I8, 1, {3}, w_i8};
    t[4] = (struct art_tensor){"scalar", ART_DTYPE_F64, 0, {0}, &w_f64};
    t[5] = (struct art_tensor){"empty", ART_DTYPE_U8, 2, {0, 5}, NULL};
    t[6] = (struct art_tensor){"i32", ART_DTYPE_I32, 2, {2, 2}, w_i32};
    t[7] = (struct art_tensor){"i64", ART_DTYPE_I64, 1, {1}, w_i64};
}

static const size_t expect_bytes[8] = {24, 8, 4, 3, 8, 0, 16, 8};

static void check_loaded(const art_safetensors *st,
                         const struct art_tensor *t, size_t n)
{
    assert_int_equal(art_safetensors_count(st), n);
    for (size_t i = 0; i < n; i++) {
        const struct art_tensor *r = art_safetensors_tensor(st, i);
        assert_non_null(r);
        /* written contiguously in the order given, so read in that order */
        assert_string_equal(r->name, t[i].name);
        assert_ptr_equal(art_safetensors_find(st, t[i].name), r);
        assert_int_equal(r->dtype, t[i].dtype);
        assert_int_equal(r->ndim, t[i].ndim);
        for (size_t d = 0; d < t[i].ndim; d++) {
            assert_int_equal(r->shape[d], t[i].shape[d]);
        }
        assert_non_null(r->data);
        assert_int_equal((uintptr_t)r->data % 16, 0);
        if (expect_bytes[i]) {
            assert_memory_equal(r->data, t[i].data, expect_bytes[i]);
        }
    }
    assert_null(art_safetensors_tensor(st, n));
    assert_null(art_safetensors_find(st, "absent"));
}

static void test_round_trip(void **state)
{
    (void)state;
    struct art_tensor t[8];
    fill(t);
    char *dir = temp_dir();
    char *path = join(dir, "w.safetensors");
    const char *keys[] = {"format", "note"};
    const char *values[] = {"pt", "caf\xc3\xa9, \"quoted\""};
    struct art_diag diag;
    assert_int_equal(art_safetensors_save(path, t, 8, keys, values, 2,
                                          &diag),
                     ART_OK);

    /* The layout, checked against the format independently. */
    size_t len;
    unsigned char *raw = read_file(path, &len);
    const uint64_t hlen = le64(raw);
    assert_int_equal(hlen % 8, 0);
    assert_int_equal(len, 8 + hlen + 24 + 8 + 4 + 3 + 8 + 0 + 16 + 8);
    assert_int_equal(raw[8], '{');
    json_error_t jerr;
    json_t *h = json_loadb((const char *)raw + 8, hlen, 0, &jerr);
    assert_non_null(h);
    const json_t *e = json_object_get(h, "dense1.weight");
    assert_string_equal(json_string_value(json_object_get(e, "dtype")),
                        "F32");
    const json_t *offs = json_object_get(e, "data_offsets");
    assert_int_equal(json_integer_value(json_array_get(offs, 0)), 0);
    assert_int_equal(json_integer_value(json_array_get(offs, 1)), 24);
    e = json_object_get(h, "scalar");
    assert_int_equal(json_array_size(json_object_get(e, "shape")), 0);
    offs = json_object_get(e, "data_offsets");
    assert_int_equal(json_integer_value(json_array_get(offs, 0)), 39);
    assert_string_equal(json_string_value(json_object_get(
                            json_object_get(h, "__metadata__"), "format")),
                        "pt");
    json_decref(h);
    /* dense1.weight's bytes are right after the header */
    assert_memory_equal(raw + 8 + hlen, w_f32, 24);
    free(raw);

    art_safetensors *st = NULL;
    assert_int_equal(art_safetensors_load(path, &st, &diag), ART_OK);
    check_loaded(st, t, 8);
    const struct art_tensor *s = art_safetensors_find(st, "scalar");
    assert_true(*(const double *)s->data == w_f64);
    assert_int_equal(art_safetensors_meta_count(st), 2);
    assert_string_equal(art_safetensors_meta(st, "format"), "pt");
    assert_string_equal(art_safetensors_meta(st, "note"), values[1]);
    assert_null(art_safetensors_meta(st, "absent"));
    const char *k, *v;
    assert_int_equal(art_safetensors_meta_at(st, 1, &k, &v), ART_OK);
    assert_string_equal(k, "note");
    assert_int_equal(art_safetensors_meta_at(st, 2, &k, &v), ART_E_RANGE);
    art_safetensors_destroy(st);

    /* No tensors and no metadata: "{}" padded, an empty buffer. */
    assert_int_equal(art_safetensors_save(path, NULL, 0, NULL, NULL, 0,
                                          &diag),
                     ART_OK);
    raw = read_file(path, &len);
    assert_int_equal(len, 16);
    assert_memory_equal(raw + 8, "{}      ", 8);
    free(raw);
    assert_int_equal(art_safetensors_load(path, &st, &diag), ART_OK);
    assert_int_equal(art_safetensors_count(st), 0);
    assert_int_equal(art_safetensors_meta_count(st), 0);
    art_safetensors_destroy(st);
    art_safetensors_destroy(NULL);

    unlink(path);
    rmdir(dir);
    free(path);
    free(dir);
}

static void test_bundle(void **state)
{
    (void)state;
    struct art_tensor t[8];
    fill(t);
    char *dir = temp_dir();
    char *out = join(dir, "out");
    art_bundle *b = NULL;
    assert_int_equal(art_bundle_create(out, &b), ART_OK);
    assert_int_equal(art_bundle_add_safetensors(b, "weights.safetensors", t,
                                                8),
                     ART_OK);
    /* the array was copied: the caller's may change */
    t[0].name = "changed";
    assert_int_equal(art_bundle_commit(b, NULL), ART_OK);
    fill(t);
    char *path = join(out, "weights.safetensors");
    art_safetensors *st = NULL;
    struct art_diag diag;
    assert_int_equal(art_safetensors_load(path, &st, &diag), ART_OK);
    check_loaded(st, t, 8);
    art_safetensors_destroy(st);

    /* refused at add time; a dropped bundle frees its copy */
    assert_int_equal(art_bundle_create(out, &b), ART_OK);
    t[1].name = t[0].name;
    assert_int_equal(art_bundle_add_safetensors(b, "w2", t, 8),
                     ART_E_INVALID);
    fill(t);
    assert_int_equal(art_bundle_add_safetensors(b, "w2", t, 8), ART_OK);
    art_bundle_destroy(b);
    assert_int_not_equal(access(path, F_OK), -1);

    unlink(path);
    rmdir(out);
    rmdir(dir);
    free(path);
    free(out);
    free(dir);
}

static void test_writer_refuses(void **state)
{
    (void)state;
    struct art_tensor t[8];
    char *dir = temp_dir();
    char *path = join(dir, "w.safetensors");
    struct art_diag diag;

    fill(t);
    t[6].name = "h";
    assert_int_equal(art_safetensors_save(path, t, 8, NULL, NULL, 0, &diag),
                     ART_E_INVALID);
    assert_non_null(strstr(diag.message, "'h' appears twice"));
    fill(t);
    t[2].dtype = (enum art_dtype)99;
    assert_int_equal(art_safetensors_save(path, t, 8, NULL, NULL, 0, &diag),
                     ART_E_INVALID);
    assert_non_null(strstr(diag.message, "'b': unknown dtype"));
    fill(t);
    t[3].ndim = ART_TENSOR_MAX_DIMS + 1;
    assert_int_equal(art_safetensors_save(path, t, 8, NULL, NULL, 0, &diag),
                     ART_E_INVALID);
    assert_non_null(strstr(diag.message, "'odd'"));
    fill(t);
    t[0].data = NULL;
    assert_int_equal(art_safetensors_save(path, t, 8, NULL, NULL, 0, &diag),
                     ART_E_INVALID);
    assert_non_null(strstr(diag.message, "'dense1.weight': NULL data"));
    fill(t);
    t[0].shape[0] = UINT64_C(1) << 62;
    assert_int_equal(art_safetensors_save(path, t, 8, NULL, NULL, 0, &diag),
                     ART_E_OVERFLOW);
    assert_non_null(strstr(diag.message, "'dense1.weight'"));
    fill(t);
    t[4].name = "__metadata__";
    assert_int_equal(art_safetensors_save(path, t, 8, NULL, NULL, 0, &diag),
                     ART_E_INVALID);
    fill(t);
    t[4].name = "bad\xff";
    assert_int_equal(art_safetensors_save(path, t, 8, NULL, NULL, 0, &diag),
                     ART_E_INVALID);
    assert_non_null(strstr(diag.message, "UTF-8"));
    fill(t);
    const char *keys[] = {"a", "a"};
    const char *values[] = {"1", "2"};
    assert_int_equal(art_safetensors_save(path, t, 8, keys, values, 2,
                                          &diag),
                     ART_E_INVALID);
    assert_non_null(strstr(diag.message, "'a' appears twice"));
    /* nothing was written by any refusal */
    assert_int_equal(access(path, F_OK), -1);
    /* a folder that does not exist: the system's reason */
    char *bad = join(dir, "no/such/w.safetensors");
    assert_int_equal(art_safetensors_save(bad, t, 8, NULL, NULL, 0, &diag),
                     ART_E_IO);
    assert_non_null(strstr(diag.message, bad));
    free(bad);
    rmdir(dir);
    free(path);
    free(dir);
}

/* ---- malformed files -------------------------------------------------- */

/* A file of an 8-byte length hlen, then the header text, then data_len
 * bytes of data. */
static void write_raw(const char *path, uint64_t hlen, const char *header,
                      size_t data_len)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    unsigned char b[8];
    for (int i = 0; i < 8; i++) {
        b[i] = (unsigned char)(hlen >> (8 * i));
    }
    assert_int_equal(fwrite(b, 1, 8, f), 8);
    const size_t n = strlen(header);
    assert_int_equal(fwrite(header, 1, n, f), n);
    for (size_t i = 0; i < data_len; i++) {
        fputc((int)(i & 0xff), f);
    }
    fclose(f);
}

struct bad_case {
    const char *what;
    const char *header; /* NULL: a 5-byte file */
    int64_t hlen;       /* -1: strlen(header) */
    size_t data_len;
    const char *expect[2]; /* substrings of the message */
};

/* A header of 100 MB (the reference reader's limit) in a file that holds
 * it: refused from its length alone, before it is read. The file is
 * sparse: the header's bytes are a hole that reads as zeros, which would
 * fail as JSON only after 100 MB were read and parsed. */
static void test_header_cap(void **state)
{
    (void)state;
    char path[] = "/tmp/edgefit-test-st-cap-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    const uint64_t hlen = 100000000;
    unsigned char len8[8];
    for (int i = 0; i < 8; i++) {
        len8[i] = (unsigned char)(hlen >> (8 * i));
    }
    assert_int_equal(write(fd, len8, 8), 8);
    assert_int_equal(ftruncate(fd, (off_t)(8 + hlen)), 0);
    close(fd);
    art_safetensors *st = NULL;
    struct art_diag d;
    assert_int_equal(art_safetensors_load(path, &st, &d), ART_E_PARSE);
    unlink(path);
    assert_null(st);
    assert_non_null(strstr(d.message, "a header of 100000000 bytes"));
    assert_non_null(strstr(d.message, "16 MiB"));
}

static void test_malformed(void **state)
{
    (void)state;
    static const struct bad_case cases[] = {
        {"truncated length", NULL, 0, 0, {"truncated", "8-byte"}},
        {"length beyond file", "{}", 1000, 8,
         {"header length 1000", "past the end"}},
        {"too short for an object", "{", -1, 0, {"cannot hold", NULL}},
        {"bad JSON", "{\"w\": {\"dtype\": \"F32\",", -1, 0,
         {"header JSON", NULL}},
        {"not an object", "[1, 2]", -1, 0, {"not a JSON object", NULL}},
        {"trailing text", "{} x", -1, 0, {"header JSON", NULL}},
        {"unknown dtype",
         "{\"w\": {\"dtype\": \"F8\", \"shape\": [2], "
         "\"data_offsets\": [0, 2]}}", -1, 2,
         {"tensor 'w'", "unknown dtype 'F8'"}},
        {"dtype not a string",
         "{\"w\": {\"dtype\": 4, \"shape\": [1], \"data_offsets\": [0, 4]}}",
         -1, 4, {"tensor 'w'", "dtype is not a string"}},
        {"missing shape", "{\"w\": {\"dtype\": \"F32\", \"data_offsets\": "
         "[0, 4]}}", -1, 4, {"tensor 'w'", "no shape"}},
        {"shape/size mismatch",
         "{\"a\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": "
         "[0, 4]}, \"w\": {\"dtype\": \"F32\", \"shape\": [2, 2], "
         "\"data_offsets\": [4, 16]}}", -1, 16,
         {"tensor 'w'", "16 bytes but data_offsets [4, 16] hold 12"}},
        {"negative dimension",
         "{\"w\": {\"dtype\": \"U8\", \"shape\": [-1], \"data_offsets\": "
         "[0, 0]}}", -1, 0, {"tensor 'w'", "shape[0]"}},
        {"fractional dimension",
         "{\"w\": {\"dtype\": \"U8\", \"shape\": [1.5], \"data_offsets\": "
         "[0, 0]}}", -1, 0, {"tensor 'w'", "shape[0]"}},
        {"shape overflow",
         "{\"w\": {\"dtype\": \"F64\", \"shape\": [4611686018427387904, 8], "
         "\"data_offsets\": [0, 8]}}", -1, 8,
         {"tensor 'w'", "does not fit in 64 bits"}},
        {"too many dimensions",
         "{\"w\": {\"dtype\": \"U8\", \"shape\": [1,1,1,1,1,1,1,1,1], "
         "\"data_offsets\": [0, 1]}}", -1, 1,
         {"tensor 'w'", "9 dimensions"}},
        {"offsets overlapping",
         "{\"a\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": "
         "[0, 8]}, \"b\": {\"dtype\": \"F32\", \"shape\": [2], "
         "\"data_offsets\": [4, 12]}}", -1, 12,
         {"tensor 'b'", "overlaps tensor 'a'"}},
        {"gap",
         "{\"a\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": "
         "[0, 4]}, \"b\": {\"dtype\": \"F32\", \"shape\": [1], "
         "\"data_offsets\": [8, 12]}}", -1, 12,
         {"gap of 4 bytes before tensor 'b'", "after tensor 'a'"}},
        {"gap at the start",
         "{\"a\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": "
         "[4, 8]}}", -1, 8, {"gap of 4 bytes before tensor 'a'", "start"}},
        {"out of range",
         "{\"a\": {\"dtype\": \"F32\", \"shape\": [4], \"data_offsets\": "
         "[0, 16]}}", -1, 8,
         {"tensor 'a'", "run past the end of the 8-byte data buffer"}},
        {"offsets reversed",
         "{\"a\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": "
         "[8, 4]}}", -1, 8, {"tensor 'a'", "end before they begin"}},
        {"offsets not a pair",
         "{\"a\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": "
         "[0]}}", -1, 4, {"tensor 'a'", "[begin, end]"}},
        {"trailing bytes",
         "{\"a\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": "
         "[0, 4]}}", -1, 8,
         {"4 trailing bytes", "after the last tensor 'a'"}},
        {"data and no tensor", "{}", -1, 8, {"8 trailing bytes", NULL}},
        {"duplicate name",
         "{\"a\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": "
         "[0, 4]}, \"a\": {\"dtype\": \"F32\", \"shape\": [1], "
         "\"data_offsets\": [4, 8]}}", -1, 8,
         {"duplicate name \"a\"", NULL}},
        {"non-object entry", "{\"a\": 5}", -1, 0,
         {"tensor 'a'", "not an object"}},
        {"unknown field",
         "{\"a\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": "
         "[0, 4], \"scale\": 2}}", -1, 4,
         {"tensor 'a'", "unknown field 'scale'"}},
        {"empty name",
         "{\"\": {\"dtype\": \"U8\", \"shape\": [0], \"data_offsets\": "
         "[0, 0]}}", -1, 0, {"empty name", NULL}},
        {"metadata not strings", "{\"__metadata__\": {\"epoch\": 3}}", -1,
         0, {"__metadata__", "'epoch' is not a string"}},
        {"metadata not an object", "{\"__metadata__\": []}", -1, 0,
         {"__metadata__ is not an object", NULL}},
    };
    char *dir = temp_dir();
    char *path = join(dir, "bad.safetensors");
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const struct bad_case *c = &cases[i];
        if (!c->header) {
            FILE *f = fopen(path, "wb");
            assert_non_null(f);
            assert_int_equal(fwrite("\x10\0\0\0\0", 1, 5, f), 5);
            fclose(f);
        } else {
            write_raw(path, c->hlen < 0 ? strlen(c->header)
                                        : (uint64_t)c->hlen,
                      c->header, c->data_len);
        }
        art_safetensors *st = (art_safetensors *)&st; /* poisoned */
        struct art_diag diag;
        memset(&diag, 0, sizeof(diag));
        const int rc = art_safetensors_load(path, &st, &diag);
        if (rc != ART_E_PARSE) {
            fail_msg("%s: status %d (%s)", c->what, rc, diag.message);
        }
        assert_null(st);
        for (int k = 0; k < 2 && c->expect[k]; k++) {
            if (!strstr(diag.message, c->expect[k])) {
                fail_msg("%s: '%s' not in '%s'", c->what, c->expect[k],
                         diag.message);
            }
        }
        /* every message names the file */
        assert_non_null(strstr(diag.message, path));
    }
    unlink(path);
    art_safetensors *st = NULL;
    struct art_diag diag;
    assert_int_equal(art_safetensors_load(path, &st, &diag), ART_E_IO);
    assert_non_null(strstr(diag.message, "No such file or directory"));
    assert_int_equal(art_safetensors_load(dir, &st, &diag), ART_E_IO);
    assert_int_equal(art_safetensors_load(NULL, &st, NULL), ART_E_INVALID);
    rmdir(dir);
    free(path);
    free(dir);
}

/* ---- a file from PyTorch's tensors, written by another implementation -- */

static uint16_t u16(const void *p, size_t i)
{
    uint16_t v;
    memcpy(&v, (const unsigned char *)p + 2 * i, 2);
    return v;
}

static void test_fixture(void **state)
{
    (void)state;
    art_safetensors *st = NULL;
    struct art_diag diag;
    assert_int_equal(art_safetensors_load(fixture_path, &st, &diag), ART_OK);
    /* file order: the reference layout, largest element size first, then
     * by name */
    static const char *order[] = {"counts", "pi", "dense1.bias",
                                  "dense1.weight", "empty", "ints",
                                  "brain", "half", "bytes", "signed"};
    assert_int_equal(art_safetensors_count(st), 10);
    for (size_t i = 0; i < 10; i++) {
        assert_string_equal(art_safetensors_tensor(st, i)->name, order[i]);
    }
    const struct art_tensor *t = art_safetensors_find(st, "dense1.weight");
    assert_int_equal(t->dtype, ART_DTYPE_F32);
    assert_int_equal(t->ndim, 2);
    assert_int_equal(t->shape[0], 3);
    assert_int_equal(t->shape[1], 4);
    const float *w = t->data;
    for (int i = 0; i < 12; i++) {
        assert_true(w[i] == (float)i / 8.0f - 0.5f);
    }
    t = art_safetensors_find(st, "dense1.bias");
    const float *bias = t->data;
    assert_true(bias[0] == 0.25f && bias[1] == -1.5f && bias[2] == 3.0f);
    t = art_safetensors_find(st, "half");
    assert_int_equal(t->dtype, ART_DTYPE_F16);
    assert_int_equal(u16(t->data, 0), 0x3c00);
    assert_int_equal(u16(t->data, 1), 0xc000);
    assert_int_equal(u16(t->data, 2), 0x3800);
    assert_int_equal(u16(t->data, 3), 0x7bff);
    t = art_safetensors_find(st, "brain");
    assert_int_equal(t->dtype, ART_DTYPE_BF16);
    assert_int_equal(u16(t->data, 0), 0x3f80);
    assert_int_equal(u16(t->data, 1), 0xbf00);
    assert_int_equal(u16(t->data, 2), 0x4049);
    t = art_safetensors_find(st, "counts");
    assert_int_equal(t->dtype, ART_DTYPE_I64);
    const int64_t *c = t->data;
    assert_true(c[0] == -1 && c[1] == (INT64_C(1) << 40));
    t = art_safetensors_find(st, "pi");
    assert_int_equal(t->dtype, ART_DTYPE_F64);
    assert_int_equal(t->ndim, 0);
    assert_true(*(const double *)t->data == 3.141592653589793);
    t = art_safetensors_find(st, "bytes");
    assert_int_equal(t->dtype, ART_DTYPE_U8);
    assert_memory_equal(t->data, "\x00\x01\x02\x03\xfa", 5);
    t = art_safetensors_find(st, "signed");
    assert_int_equal(t->dtype, ART_DTYPE_I8);
    assert_int_equal(t->shape[0], 2);
    assert_int_equal(t->shape[1], 1);
    assert_int_equal(((const int8_t *)t->data)[0], -128);
    assert_int_equal(((const int8_t *)t->data)[1], 127);
    t = art_safetensors_find(st, "ints");
    const int32_t *in = t->data;
    assert_true(in[0] == -7 && in[1] == 0 && in[2] == INT32_MAX);
    t = art_safetensors_find(st, "empty");
    assert_int_equal(t->ndim, 2);
    assert_int_equal(t->shape[0], 0);
    assert_int_equal(t->shape[1], 3);
    assert_int_equal(art_safetensors_meta_count(st), 2);
    assert_string_equal(art_safetensors_meta(st, "format"), "pt");
    assert_string_equal(art_safetensors_meta(st, "source"),
                        "make-safetensors-fixture.py");
    art_safetensors_destroy(st);
}

static void test_dtypes(void **state)
{
    (void)state;
    static const char *names[] = {"F32", "F16", "BF16", "F64",
                                  "I8",  "U8",  "I32",  "I64"};
    static const size_t sizes[] = {4, 2, 2, 8, 1, 1, 4, 8};
    for (int i = 0; i < 8; i++) {
        assert_string_equal(art_dtype_name((enum art_dtype)i), names[i]);
        assert_int_equal(art_dtype_size((enum art_dtype)i), sizes[i]);
    }
    assert_null(art_dtype_name((enum art_dtype)8));
    assert_int_equal(art_dtype_size((enum art_dtype)-1), 0);
}

int main(int argc, char **argv)
{
    fixture_path = argc > 1 ? argv[1] : "tests/artifacts/data/"
                                        "fixture.safetensors";
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dtypes),
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_bundle),
        cmocka_unit_test(test_writer_refuses),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_header_cap),
        cmocka_unit_test(test_fixture),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
