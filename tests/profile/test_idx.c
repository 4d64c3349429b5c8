/*
 * IDX reading: a small image file written here, plain and gzipped, reads
 * back byte for byte; a count limit; a bad magic number, a short file and a
 * missing file each get their status.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "edgefit/profile.h"

/* 3 images of 2 x 3 pixels */
static const unsigned char header[16] = {0, 0, 8, 3, 0, 0, 0, 3,
                                         0, 0, 0, 2, 0, 0, 0, 3};

static void pixels(unsigned char *p)
{
    for (int i = 0; i < 18; i++) {
        p[i] = (unsigned char)(i * 13 + 1);
    }
}

static void write_plain(const char *path, const unsigned char *head,
                        size_t body)
{
    unsigned char p[18];
    pixels(p);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(head, 1, 16, f), 16);
    assert_int_equal(fwrite(p, 1, body, f), body);
    fclose(f);
}

static void check_images(const struct prof_idx_images *im, uint64_t count)
{
    unsigned char p[18];
    pixels(p);
    assert_int_equal(im->count, count);
    assert_int_equal(im->rows, 2);
    assert_int_equal(im->cols, 3);
    assert_memory_equal(im->pixels, p, (size_t)count * 6);
}

static void test_plain_and_gzip(void **state)
{
    (void)state;
    char plain[] = "/tmp/prof-idx-XXXXXX";
    int fd = mkstemp(plain);
    assert_true(fd >= 0);
    close(fd);
    write_plain(plain, header, 18);
    struct prof_idx_images im;
    assert_int_equal(prof_idx_load_images(plain, 0, &im, NULL), PROF_OK);
    check_images(&im, 3);
    prof_idx_images_finish(&im);
    assert_null(im.pixels);
    assert_int_equal(prof_idx_load_images(plain, 2, &im, NULL), PROF_OK);
    check_images(&im, 2);
    prof_idx_images_finish(&im);

    char gz[] = "/tmp/prof-idx-gz-XXXXXX";
    fd = mkstemp(gz);
    assert_true(fd >= 0);
    close(fd);
    unsigned char p[18];
    pixels(p);
    gzFile g = gzopen(gz, "wb");
    assert_non_null(g);
    assert_int_equal(gzwrite(g, header, 16), 16);
    assert_int_equal(gzwrite(g, p, 18), 18);
    gzclose(g);
    assert_int_equal(prof_idx_load_images(gz, 0, &im, NULL), PROF_OK);
    check_images(&im, 3);
    prof_idx_images_finish(&im);
    unlink(gz);
    unlink(plain);
}

static void test_errors(void **state)
{
    (void)state;
    char path[] = "/tmp/prof-idx-bad-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    struct prof_idx_images im;
    unsigned char bad[16];
    memcpy(bad, header, 16);
    bad[2] = 0x0d; /* float data, not unsigned bytes */
    write_plain(path, bad, 18);
    assert_int_equal(prof_idx_load_images(path, 0, &im, NULL), PROF_E_PARSE);
    assert_null(im.pixels);
    write_plain(path, header, 17); /* one byte short */
    assert_int_equal(prof_idx_load_images(path, 0, &im, NULL), PROF_E_PARSE);
    /* a plain file must match its header even when a prefix is asked for */
    assert_int_equal(prof_idx_load_images(path, 2, &im, NULL), PROF_E_PARSE);
    unlink(path);
    assert_int_equal(prof_idx_load_images(path, 0, &im, NULL), PROF_E_IO);
    assert_int_equal(prof_idx_load_images(NULL, 0, &im, NULL), PROF_E_INVALID);
    prof_idx_images_finish(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plain_and_gzip),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
