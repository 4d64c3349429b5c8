#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "edgefit/artifacts.h"
#include "run.h"

static char *slurp_fd(int fd)
{
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap);
    lseek(fd, 0, SEEK_SET);
    for (;;) {
        if (len + 1 >= cap) {
            cap *= 2;
            buf = realloc(buf, cap);
        }
        ssize_t n = read(fd, buf + len, cap - len - 1);
        if (n <= 0) {
            break;
        }
        len += (size_t)n;
    }
    buf[len] = '\0';
    return buf;
}

static int run_child_in(char *const argv[], long fsize_bytes,
                        const char *stdout_path, const char *stdin_path,
                        unsigned alarm_s, struct run_result *r)
{
    FILE *fo = tmpfile(), *fe = tmpfile();
    if (!fo || !fe) {
        return -1;
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fileno(fo), 1);
        dup2(fileno(fe), 2);
        if (stdout_path) {
            const int fd = open(stdout_path, O_WRONLY);
            if (fd < 0) {
                _exit(125);
            }
            dup2(fd, 1);
        }
        if (stdin_path) {
            const int fd = open(stdin_path, O_RDONLY);
            if (fd < 0) {
                _exit(125);
            }
            dup2(fd, 0);
        }
        if (alarm_s) {
            /* survives execv: a child that blocks dies of SIGALRM */
            alarm(alarm_s);
        }
        if (fsize_bytes > 0) {
            /* /dev/null is not a regular file: the limit spares it. */
            const int null = open("/dev/null", O_WRONLY);
            dup2(null, 1);
            signal(SIGXFSZ, SIG_IGN);
            struct rlimit lim;
            getrlimit(RLIMIT_FSIZE, &lim);
            lim.rlim_cur = (rlim_t)fsize_bytes;
            if (setrlimit(RLIMIT_FSIZE, &lim) != 0) {
                _exit(126);
            }
        }
        execv(argv[0], argv);
        _exit(127);
    }
    int ws = 0;
    waitpid(pid, &ws, 0);
    r->status = WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
    r->out = slurp_fd(fileno(fo));
    r->err = slurp_fd(fileno(fe));
    fclose(fo);
    fclose(fe);
    return r->status;
}

static int run_child(char *const argv[], long fsize_bytes,
                     const char *stdout_path, struct run_result *r)
{
    return run_child_in(argv, fsize_bytes, stdout_path, NULL, 0, r);
}

int run_argv_in(char *const argv[], const char *stdin_path,
                unsigned alarm_s, struct run_result *r)
{
    return run_child_in(argv, 0, NULL, stdin_path, alarm_s, r);
}

int run_argv(char *const argv[], struct run_result *r)
{
    return run_child(argv, 0, NULL, r);
}

int run_argv_fsize(char *const argv[], long fsize_bytes,
                   struct run_result *r)
{
    return run_child(argv, fsize_bytes, NULL, r);
}

int run_argv_stdout(char *const argv[], const char *path,
                    struct run_result *r)
{
    return run_child(argv, 0, path, r);
}

void run_free(struct run_result *r)
{
    free(r->out);
    free(r->err);
    r->out = r->err = NULL;
}

const char *run_rejected(char *const argv[], const char *needle)
{
    static char what[1024];
    struct run_result r;
    run_argv(argv, &r);
    const char *bad = NULL;
    if (r.status != 2 || !strstr(r.err, needle) || r.out[0] != '\0') {
        snprintf(what, sizeof what,
                 "status %d, stdout '%.200s', stderr '%.400s' (want 2, no "
                 "output and '%s')", r.status, r.out, r.err, needle);
        bad = what;
    }
    run_free(&r);
    return bad;
}

int run_count_entries(const char *dir)
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

void run_rmdir(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) {
        return;
    }
    struct dirent *e;
    char path[4096];
    while ((e = readdir(d))) {
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            unlink(path);
        }
    }
    closedir(d);
    rmdir(dir);
}

uint64_t run_lcg(uint64_t *state)
{
    *state = *state * 6364136223846793005u + 1442695040888963407u;
    return *state >> 33;
}

static int put_be32(FILE *f, uint32_t v)
{
    const unsigned char b[4] = {(unsigned char)(v >> 24),
                                (unsigned char)(v >> 16),
                                (unsigned char)(v >> 8), (unsigned char)v};
    return fwrite(b, 1, 4, f) == 4 ? 0 : -1;
}

static int write_idx_file(const char *path, uint32_t magic, unsigned count,
                          unsigned dims, const unsigned char *data,
                          size_t bytes)
{
    FILE *f = fopen(path, "wb");
    if (!f) {
        return -1;
    }
    int rc = put_be32(f, magic) | put_be32(f, count);
    for (unsigned i = 0; i < dims; i++) {
        rc |= put_be32(f, 28);
    }
    if (fwrite(data, 1, bytes, f) != bytes) {
        rc = -1;
    }
    return fclose(f) == 0 ? rc : -1;
}

int run_write_idx(const char *dir, const char *split,
                  const unsigned char *images, const unsigned char *labels,
                  unsigned count)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s-images-idx3-ubyte", dir, split);
    int rc = write_idx_file(path, 0x803, count, 2, images,
                            (size_t)count * 784);
    snprintf(path, sizeof path, "%s/%s-labels-idx1-ubyte", dir, split);
    return rc | write_idx_file(path, 0x801, count, 0, labels, count);
}

int run_write_bands(const char *dir, const char *split, unsigned count,
                    uint64_t seed)
{
    unsigned char *img = malloc((size_t)count * 784);
    unsigned char *lab = malloc(count ? count : 1);
    int rc = -1;
    if (img && lab) {
        for (unsigned i = 0; i < count; i++) {
            const unsigned k = (i * 7) % 10;
            lab[i] = (unsigned char)k;
            for (unsigned p = 0; p < 784; p++) {
                const unsigned row = p / 28;
                const unsigned noise = (unsigned)(run_lcg(&seed) % 60);
                img[(size_t)i * 784 + p] =
                    (unsigned char)(row >= 2 * k && row < 2 * k + 4
                                        ? 180 + noise
                                        : noise);
            }
        }
        rc = run_write_idx(dir, split, img, lab, count);
    }
    free(img);
    free(lab);
    return rc;
}

int run_write_zero_mlp(const char *path)
{
    static float w1[64 * 784], b1[64], w2[10 * 64], b2[10];
    const struct art_tensor t[] = {
        {"dense1.weight", ART_DTYPE_F32, 2, {64, 784}, w1},
        {"dense1.bias", ART_DTYPE_F32, 1, {64}, b1},
        {"dense2.weight", ART_DTYPE_F32, 2, {10, 64}, w2},
        {"dense2.bias", ART_DTYPE_F32, 1, {10}, b2},
    };
    return art_safetensors_save(path, t, 4, NULL, NULL, 0, NULL) == ART_OK
               ? 0
               : -1;
}

/* ---- numbers as the apps write them ---- */

/* Whether name has the word w among its '_'-separated words, not first
 * and not after "mb", "gb" or "kb" (mb_s is a rate). */
static bool has_unit(const char *name, const char *w)
{
    char copy[256];
    snprintf(copy, sizeof copy, "%s", name);
    char *save = NULL, *prev = NULL;
    bool first = true;
    for (char *t = strtok_r(copy, "_", &save); t;
         t = strtok_r(NULL, "_", &save)) {
        if (!first && strcmp(t, w) == 0 &&
            !(prev && strlen(prev) == 2 && prev[1] == 'b')) {
            return true;
        }
        first = false;
        prev = t;
    }
    return false;
}

/* Half a unit of the sig-th significant digit of v. */
static double half_digit(double v, int sig)
{
    return 0.5 * pow(10.0, floor(log10(fabs(v))) - (sig - 1));
}

double run_written_tol(const char *name, double v)
{
    const double slack = 1e-12 * fabs(v);
    /* A whole number as written may be a rounded real (a latency ratio of
     * 12345.96 is written 12346, one of 1255593 is written 1255590), so it
     * carries the rounding of any real. That stays below one for a whole
     * number under 10^5, so a count that is off by one is still caught. */
    if (!isfinite(v) || v == 0.0) {
        return slack;
    }
    double us = 0.0;
    if (has_unit(name, "ms")) {
        us = 1e-3;
    } else if (has_unit(name, "s")) {
        us = 1e-6;
    } else if (has_unit(name, "us")) {
        us = 1.0;
    } else if (has_unit(name, "ns")) {
        us = 1e3;
    }
    if (us > 0.0) {
        return fmin(0.5 * us, half_digit(v, 3)) + slack;
    }
    if (strstr(name, "accuracy") || strstr(name, "agreement")) {
        return 0.5e-4 + slack;
    }
    return half_digit(v, 6) + slack;
}

bool run_written_near(double got, double want, const char *name,
                      double extra_tol)
{
    const double tol = extra_tol + run_written_tol(name, want);
    if (fabs(got - want) <= tol) {
        return true;
    }
    fprintf(stderr, "%s = %.17g, expected %.17g within %.3g (as written)\n",
            name, got, want, tol);
    return false;
}

bool run_digits_ok(const char *text, int max_digits, char *bad, size_t len)
{
    const char *p = text;
    while (*p) {
        if (*p == '"') { /* a string: its digits are text */
            for (p++; *p && *p != '"'; p++) {
                if (*p == '\\' && p[1]) {
                    p++;
                }
            }
            p += *p == '"';
            continue;
        }
        const bool starts = isdigit((unsigned char)*p) ||
                            (*p == '-' && isdigit((unsigned char)p[1]));
        const bool inside_word = p > text && (isalnum((unsigned char)p[-1]) ||
                                              p[-1] == '_' || p[-1] == '.');
        if (!starts || inside_word) {
            p++;
            continue;
        }
        /* the token: sign, digits, fraction, exponent */
        const char *q = p + (*p == '-');
        int digits = 0, lead = 1;
        bool real = false;
        for (; isdigit((unsigned char)*q) || *q == '.'; q++) {
            if (*q == '.') {
                real = true;
                continue;
            }
            if (*q != '0') {
                lead = 0;
            }
            digits += !lead;
        }
        if (*q == 'e' || *q == 'E') {
            real = true;
            q++;
            q += *q == '+' || *q == '-';
            while (isdigit((unsigned char)*q)) {
                q++;
            }
        }
        /* a word that merely starts with digits (16x32x32) is text */
        const bool word = isalpha((unsigned char)*q) || *q == '_';
        if (real && !word) {
            /* trailing zeros of a fraction say nothing; "1.0" is whole */
            const char *dot = memchr(p, '.', (size_t)(q - p));
            const char *exp = NULL;
            for (const char *c = p; c < q; c++) {
                if (*c == 'e' || *c == 'E') {
                    exp = c;
                }
            }
            const char *m_end = exp ? exp : q;
            int trailing = 0;
            if (dot) {
                for (const char *c = m_end - 1; c > dot && *c == '0'; c--) {
                    trailing++;
                }
            }
            if (digits - trailing > max_digits) {
                snprintf(bad, len, "%.*s", (int)(q - p), p);
                return false;
            }
        }
        p = q > p ? q : p + 1;
    }
    return true;
}
