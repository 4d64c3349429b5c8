/*
 * IDX reading: small image and label files written here, plain and
 * gzipped, read back byte for byte (and as a data set, pixels scaled to
 * [0, 1]); a count limit; truncated files, data after the end, bad magic
 * numbers, zero dimensions, image and label files that disagree, and
 * headers that lie about their size (a 17-byte file claiming 2^31 images)
 * each refused with the reason, before any allocation the file cannot
 * justify; a pipe, which has no size, read to its end.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include "edgefit/profile.h"

static char dir[64];

static void setup_dir(void)
{
    if (dir[0] == '\0') {
        strcpy(dir, "/tmp/prof-idx-XXXXXX");
        assert_non_null(mkdtemp(dir));
    }
}

static char *path_of(const char *name)
{
    static char buf[4][128];
    static int next;
    char *p = buf[next++ % 4];
    snprintf(p, 128, "%s/%s", dir, name);
    return p;
}

static void be32(unsigned char *b, uint32_t v)
{
    b[0] = (unsigned char)(v >> 24);
    b[1] = (unsigned char)(v >> 16);
    b[2] = (unsigned char)(v >> 8);
    b[3] = (unsigned char)v;
}

/* Write an IDX file: magic, dims (ndim of them), then body bytes. */
static void write_idx(const char *path, bool gz, uint32_t magic,
                      const uint32_t *dims, int ndim,
                      const unsigned char *body, size_t body_len)
{
    unsigned char head[16];
    be32(head, magic);
    for (int i = 0; i < ndim; i++) {
        be32(head + 4 + 4 * i, dims[i]);
    }
    const size_t hn = 4 + 4 * (size_t)ndim;
    if (gz) {
        gzFile g = gzopen(path, "wb");
        assert_non_null(g);
        assert_int_equal(gzwrite(g, head, (unsigned)hn), (int)hn);
        if (body_len) {
            assert_int_equal(gzwrite(g, body, (unsigned)body_len),
                             (int)body_len);
        }
        assert_int_equal(gzclose(g), Z_OK);
    } else {
        FILE *f = fopen(path, "wb");
        assert_non_null(f);
        assert_int_equal(fwrite(head, 1, hn, f), hn);
        if (body_len) {
            assert_int_equal(fwrite(body, 1, body_len, f), body_len);
        }
        fclose(f);
    }
}

/* 3 images of 2 x 3 pixels with known bytes, 0 and 255 among them. */
static void pixels(unsigned char *p)
{
    for (int i = 0; i < 18; i++) {
        p[i] = (unsigned char)(i * 15);
    }
    p[17] = 255;
}

static const uint32_t img_dims[3] = {3, 2, 3};
static const unsigned char labels3[3] = {7, 0, 2};

static void write_images(const char *path, bool gz, size_t body_len)
{
    unsigned char p[32] = {0};
    pixels(p);
    write_idx(path, gz, 0x803, img_dims, 3, p, body_len);
}

static void write_labels(const char *path, bool gz, uint32_t count,
                         size_t body_len)
{
    write_idx(path, gz, 0x801, &count, 1, labels3, body_len);
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

static void test_good_files(void **state)
{
    (void)state;
    setup_dir();
    struct prof_diag diag;
    for (int gz = 0; gz < 2; gz++) {
        const char *ip = path_of(gz ? "i.gz" : "i");
        const char *lp = path_of(gz ? "l.gz" : "l");
        write_images(ip, gz, 18);
        write_labels(lp, gz, 3, 3);
        struct prof_idx_images im;
        assert_int_equal(prof_idx_load_images(ip, 0, &im, &diag), PROF_OK);
        check_images(&im, 3);
        prof_idx_images_finish(&im);
        assert_null(im.pixels);
        assert_int_equal(prof_idx_load_images(ip, 2, &im, &diag), PROF_OK);
        check_images(&im, 2);
        prof_idx_images_finish(&im);
        assert_int_equal(prof_idx_load_images(ip, 99, &im, &diag), PROF_OK);
        check_images(&im, 3);
        prof_idx_images_finish(&im);

        struct prof_idx_labels lb;
        assert_int_equal(prof_idx_load_labels(lp, 0, &lb, &diag), PROF_OK);
        assert_int_equal(lb.count, 3);
        assert_memory_equal(lb.labels, labels3, 3);
        prof_idx_labels_finish(&lb);
        assert_null(lb.labels);
        assert_int_equal(prof_idx_load_labels(lp, 1, &lb, &diag), PROF_OK);
        assert_int_equal(lb.count, 1);
        assert_int_equal(lb.labels[0], 7);
        prof_idx_labels_finish(&lb);
        unlink(ip);
        unlink(lp);
    }
    /* no images at all is a valid file */
    const uint32_t none[3] = {0, 28, 28};
    write_idx(path_of("none"), false, 0x803, none, 3, NULL, 0);
    struct prof_idx_images im;
    assert_int_equal(prof_idx_load_images(path_of("none"), 0, &im, &diag),
                     PROF_OK);
    assert_int_equal(im.count, 0);
    prof_idx_images_finish(&im);
    unlink(path_of("none"));
    prof_idx_images_finish(NULL);
    prof_idx_labels_finish(NULL);
}

static void expect(int got, int want, const struct prof_diag *diag,
                   const char *a, const char *b);

/* A pipe has no size: it is read like a stream, to its end. */
static void test_pipe(void **state)
{
    (void)state;
    setup_dir();
    const char *fifo = path_of("fifo");
    assert_int_equal(mkfifo(fifo, 0600), 0);
    for (int body = 18; body >= 17; body--) {
        const pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            unsigned char head[16], p[18];
            be32(head, 0x803);
            for (int i = 0; i < 3; i++) {
                be32(head + 4 + 4 * i, img_dims[i]);
            }
            pixels(p);
            FILE *f = fopen(fifo, "wb");
            const int ok = f && fwrite(head, 1, 16, f) == 16 &&
                           fwrite(p, 1, (size_t)body, f) == (size_t)body;
            _exit(f && fclose(f) == 0 && ok ? 0 : 1);
        }
        struct prof_idx_images im;
        struct prof_diag diag;
        const int st = prof_idx_load_images(fifo, 0, &im, &diag);
        int ws = 0;
        assert_int_equal(waitpid(pid, &ws, 0), pid);
        if (body == 18) {
            assert_int_equal(st, PROF_OK);
            check_images(&im, 3);
            prof_idx_images_finish(&im);
        } else {
            expect(st, PROF_E_PARSE, &diag, "truncated", "2 whole images");
        }
    }
    unlink(fifo);
}

static void test_dataset(void **state)
{
    (void)state;
    setup_dir();
    /* train: gzip images, plain labels (the .gz is absent) */
    write_images(path_of("train-images-idx3-ubyte.gz"), true, 18);
    write_labels(path_of("train-labels-idx1-ubyte"), false, 3, 3);
    struct prof_dataset d;
    struct prof_diag diag;
    assert_int_equal(prof_dataset_load(dir, "train", 0, &d, &diag), PROF_OK);
    assert_int_equal(d.count, 3);
    assert_int_equal(d.rows, 2);
    assert_int_equal(d.cols, 3);
    assert_int_equal(d.classes, 8); /* labels 7, 0, 2 */
    assert_memory_equal(d.y, labels3, 3);
    /* the sample shape of the general data set: one channel of 2 x 3 */
    assert_int_equal(d.rank, 3);
    assert_int_equal(d.shape[0], 1);
    assert_int_equal(d.shape[1], 2);
    assert_int_equal(d.shape[2], 3);
    assert_int_equal(d.sample_count, 6);
    assert_null(d.ref);
    assert_int_equal(d.ref_rank, 0);
    assert_non_null(strstr(d.source, "train-images-idx3-ubyte.gz"));
    char shape_text[16];
    assert_string_equal(prof_dataset_shape_text(&d, shape_text,
                                                sizeof shape_text), "1x2x3");
    unsigned char p[18];
    pixels(p);
    for (int i = 0; i < 18; i++) {
        /* byte / 255, correctly rounded to float: within half an ulp */
        const double want = p[i] / 255.0;
        assert_true(fabs(d.x[i] - want) <= 0.5 * ldexp(1.0, -24));
    }
    assert_true(d.x[0] == 0.0f);
    assert_true(d.x[17] == 1.0f);
    prof_dataset_finish(&d);
    assert_null(d.x);
    prof_dataset_finish(NULL);

    assert_int_equal(prof_dataset_load(dir, "train", 2, &d, &diag), PROF_OK);
    assert_int_equal(d.count, 2);
    assert_int_equal(d.classes, 8);
    prof_dataset_finish(&d);

    /* mismatched counts: 3 images, 2 labels */
    write_labels(path_of("train-labels-idx1-ubyte"), false, 2, 2);
    assert_int_equal(prof_dataset_load(dir, "train", 0, &d, &diag),
                     PROF_E_RANGE);
    assert_null(d.x);
    assert_non_null(strstr(diag.message, "train-labels-idx1-ubyte holds 2 "
                                         "labels"));
    assert_non_null(strstr(diag.message, "train-images-idx3-ubyte.gz holds "
                                         "3 images"));
    /* the headers disagree even when a limit reads 2 of each */
    assert_int_equal(prof_dataset_load(dir, "train", 2, &d, &diag),
                     PROF_E_RANGE);
    assert_non_null(strstr(diag.message, "holds 2 labels"));

    /* a missing split: the file and the system's reason */
    assert_int_equal(prof_dataset_load(dir, "t10k", 0, &d, &diag),
                     PROF_E_IO);
    assert_non_null(strstr(diag.message, "t10k-images-idx3-ubyte.gz"));
    assert_non_null(strstr(diag.message, "No such file or directory"));
    assert_int_equal(prof_dataset_load(dir, "test", 0, &d, &diag),
                     PROF_E_INVALID);
    assert_non_null(strstr(diag.message, "'test'"));
    assert_int_equal(prof_dataset_load(dir, NULL, 0, &d, &diag),
                     PROF_E_INVALID);
    assert_string_equal(prof_dataset_default_dir(), PROF_FASHION_MNIST_DIR);
    unlink(path_of("train-images-idx3-ubyte.gz"));
    unlink(path_of("train-labels-idx1-ubyte"));
}

static void expect(int got, int want, const struct prof_diag *diag,
                   const char *a, const char *b)
{
    if (got != want) {
        fail_msg("status %d, expected %d (%s)", got, want, diag->message);
    }
    if (a && !strstr(diag->message, a)) {
        fail_msg("'%s' not in '%s'", a, diag->message);
    }
    if (b && !strstr(diag->message, b)) {
        fail_msg("'%s' not in '%s'", b, diag->message);
    }
}

static void test_bad_files(void **state)
{
    (void)state;
    setup_dir();
    struct prof_idx_images im;
    struct prof_idx_labels lb;
    struct prof_diag diag;
    for (int gz = 0; gz < 2; gz++) {
        const char *ip = path_of(gz ? "bad.gz" : "bad");
        /* one byte short */
        write_images(ip, gz, 17);
        expect(prof_idx_load_images(ip, 0, &im, &diag), PROF_E_PARSE, &diag,
               ip, "truncated");
        assert_null(im.pixels);
        assert_non_null(strstr(diag.message, "claims 3 images"));
        /* a prefix: a plain file must still match its size; a gzip
         * stream is read only as far as asked */
        assert_int_equal(prof_idx_load_images(ip, 2, &im, &diag),
                         gz ? PROF_OK : PROF_E_PARSE);
        prof_idx_images_finish(&im);
        /* one byte after the data */
        write_images(ip, gz, 19);
        expect(prof_idx_load_images(ip, 0, &im, &diag), PROF_E_PARSE, &diag,
               ip, "after the 3 images");
        /* labels: truncated and too long */
        write_labels(ip, gz, 3, 2);
        expect(prof_idx_load_labels(ip, 0, &lb, &diag), PROF_E_PARSE, &diag,
               ip, "truncated");
        assert_null(lb.labels);
        /* a header cut short */
        const uint32_t d1[1] = {3};
        write_idx(ip, gz, 0x803, d1, 1, NULL, 0);
        expect(prof_idx_load_images(ip, 0, &im, &diag), PROF_E_PARSE, &diag,
               ip, "16-byte header");
        /* a label file where images are expected, and the reverse */
        write_labels(ip, gz, 3, 3);
        expect(prof_idx_load_images(ip, 0, &im, &diag), PROF_E_PARSE, &diag,
               "1 dimension(s), not images", "0x00000801");
        write_images(ip, gz, 18);
        expect(prof_idx_load_labels(ip, 0, &lb, &diag), PROF_E_PARSE, &diag,
               "3 dimension(s), not labels", "0x00000803");
        /* float data, not unsigned bytes */
        write_idx(ip, gz, 0x0d03, img_dims, 3, labels3, 3);
        expect(prof_idx_load_images(ip, 0, &im, &diag), PROF_E_PARSE, &diag,
               "0x0d", "not unsigned bytes");
        /* not IDX at all */
        write_idx(ip, gz, 0x504b0304, img_dims, 3, labels3, 3);
        expect(prof_idx_load_images(ip, 0, &im, &diag), PROF_E_PARSE, &diag,
               "not an IDX file", "0x504b0304");
        /* a zero dimension */
        const uint32_t zero[3] = {3, 0, 28};
        write_idx(ip, gz, 0x803, zero, 3, NULL, 0);
        expect(prof_idx_load_images(ip, 0, &im, &diag), PROF_E_RANGE, &diag,
               ip, "0x28");
        unlink(ip);
    }
    /* a corrupt gzip stream: zlib's reason */
    const char *cp = path_of("corrupt.gz");
    write_images(cp, true, 18);
    FILE *f = fopen(cp, "r+b");
    assert_non_null(f);
    fseek(f, 12, SEEK_SET);
    fputs("\xff\xff\xff\xff\xff\xff", f);
    fclose(f);
    expect(prof_idx_load_images(cp, 0, &im, &diag), PROF_E_PARSE, &diag, cp,
           "gzip");
    unlink(cp);
    /* I/O: a missing file and a folder, with the system's reason */
    expect(prof_idx_load_images(path_of("missing"), 0, &im, &diag),
           PROF_E_IO, &diag, "missing", "No such file or directory");
    expect(prof_idx_load_labels(dir, 0, &lb, &diag), PROF_E_IO, &diag, dir,
           "Is a directory");
    assert_int_equal(prof_idx_load_images(NULL, 0, &im, NULL),
                     PROF_E_INVALID);
    assert_int_equal(prof_idx_load_labels(NULL, 0, &lb, NULL),
                     PROF_E_INVALID);
}

/* A header claiming 2^31 images of 28 x 28 (1.68 TB) with one pixel
 * behind it: 17 bytes plain. */
static void write_liar(const char *path, bool gz, uint32_t count)
{
    const uint32_t dims[3] = {count, 28, 28};
    const unsigned char one = 1;
    write_idx(path, gz, 0x803, dims, 3, &one, 1);
}

/* Run the reader in a child whose address space is capped 64 MB above
 * what it uses now: an allocation sized from the header alone fails
 * there (PROF_E_NOMEM), a reader that checks first refuses with
 * PROF_E_PARSE. AddressSanitizer reserves terabytes of shadow memory, so
 * under it the cap cannot be set and only the status is checked. */
static int load_capped(const char *path, bool labels)
{
#if defined(__SANITIZE_ADDRESS__)
    const bool cap = false;
#else
    const bool cap = true;
#endif
    const pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        if (cap) {
            long pages = 0;
            FILE *f = fopen("/proc/self/statm", "r");
            if (!f || fscanf(f, "%ld", &pages) != 1) {
                _exit(100);
            }
            fclose(f);
            const rlim_t now = (rlim_t)pages * (rlim_t)sysconf(_SC_PAGESIZE);
            const struct rlimit r = {now + (64u << 20), now + (64u << 20)};
            if (setrlimit(RLIMIT_AS, &r) != 0) {
                _exit(101);
            }
        }
        int st;
        if (labels) {
            struct prof_idx_labels lb;
            st = prof_idx_load_labels(path, 0, &lb, NULL);
            prof_idx_labels_finish(&lb);
        } else {
            struct prof_idx_images im;
            st = prof_idx_load_images(path, 0, &im, NULL);
            prof_idx_images_finish(&im);
        }
        _exit(st);
    }
    int ws = 0;
    assert_int_equal(waitpid(pid, &ws, 0), pid);
    assert_true(WIFEXITED(ws));
    return WEXITSTATUS(ws);
}

static void test_lying_header(void **state)
{
    (void)state;
    setup_dir();
    struct prof_idx_images im;
    struct prof_idx_labels lb;
    struct prof_diag diag;
    for (int gz = 0; gz < 2; gz++) {
        const char *p = path_of(gz ? "liar.gz" : "liar");
        write_liar(p, gz, UINT32_C(1) << 31);
        expect(prof_idx_load_images(p, 0, &im, &diag), PROF_E_PARSE, &diag,
               p, "claims 2147483648 images");
        assert_null(im.pixels);
        assert_non_null(strstr(diag.message, "1683627180032 bytes"));
        assert_int_equal(load_capped(p, false), PROF_E_PARSE);
        /* 200,000 images (157 MB): a size malloc would grant, and
         * must not be asked for */
        write_liar(p, gz, 200000);
        assert_int_equal(load_capped(p, false), PROF_E_PARSE);
        /* 2^32 - 1 labels in a tiny file */
        uint32_t n = UINT32_MAX;
        write_idx(p, gz, 0x801, &n, 1, labels3, 3);
        expect(prof_idx_load_labels(p, 0, &lb, &diag), PROF_E_PARSE, &diag,
               "claims 4294967295 labels", "3 whole labels");
        assert_int_equal(load_capped(p, true), PROF_E_PARSE);
        unlink(p);
    }
    /* the data set passes the reason on */
    write_liar(path_of("train-images-idx3-ubyte.gz"), true,
               UINT32_C(1) << 31);
    write_labels(path_of("train-labels-idx1-ubyte.gz"), true, 3, 3);
    struct prof_dataset d;
    expect(prof_dataset_load(dir, "train", 0, &d, &diag), PROF_E_PARSE,
           &diag, "train-images-idx3-ubyte.gz", "truncated");
    assert_null(d.x);
    unlink(path_of("train-images-idx3-ubyte.gz"));
    unlink(path_of("train-labels-idx1-ubyte.gz"));
}

static int teardown(void **state)
{
    (void)state;
    if (dir[0]) {
        rmdir(dir);
    }
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_good_files),
        cmocka_unit_test(test_pipe),
        cmocka_unit_test(test_dataset),
        cmocka_unit_test(test_bad_files),
        cmocka_unit_test(test_lying_header),
    };
    return cmocka_run_group_tests(tests, NULL, teardown);
}
