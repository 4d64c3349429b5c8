/* The allocation-failure sweep: runs an app once with nothing failing
 * (through the failalloc shim, which counts the app's own allocations),
 * then once for each chosen N with the Nth allocation failing, and checks
 * every run ended in one of the two honest ways:
 *
 *   exit 1, stderr saying "out of memory: <what> (<n> bytes)", no --out
 *   folder and no temporary left beside it, nothing leaked;
 *   exit 0 with stdout and every --out file equal to the unfailed run's
 *   (the allocation was optional and the app did without it), nothing
 *   leaked.
 *
 * Anything else fails the test: a signal (crash), a run still going after
 * --timeout seconds (hang), another exit code (out of memory told as
 * malformed input), a different answer, a leak.
 *
 * usage: fault-sweep --shim SO [--stride K] [--first N] [--last N]
 *            [--timeout S] [--mask WORD]... [--unordered]
 *            [--require-bytes] [--require-exact] [--also K]
 *            [--show-optional] -- APP ARG...
 * The app gets "--out DIR" appended. --mask WORD: numbers under a CSV
 * column or JSON key containing WORD are not compared (measured times);
 * --unordered compares outputs as sets of lines (rows sorted by a measured
 * time). --require-bytes: an exit 1 must say "out of memory" and, on the
 * same line, how many bytes; --require-exact: exactly the bytes the failed
 * call asked for (where no message may name a whole instead).
 * --also K fails allocation K too in each run of an N > K (K: one the app
 * does without, see --show-optional): a message must not name K's bytes
 * for the later failure.
 * --show-optional prints the call site of each run that did without the
 * failed allocation (exit 0 unchanged).
 * --stride K runs N = first, first+K, ...; the sites covered (distinct
 * failing call sites) are printed at the end. --bands DIR first writes a
 * small labelled image set there (IDX train-* 64 images, t10k-* 32) for
 * the apps that train or evaluate on one. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "run.h"

/* --also K: allocation K fails too in every run that fails a later one */
static unsigned long also_at;

#define MASK_MAX 16
static const char *masks[MASK_MAX];
static int n_masks;

struct run {
    int status; /* exit code, 128 + signal, or -1 for a hang */
    char *out, *err;
    unsigned long count;
    int failed;
    unsigned long long live, leak_seq, leak_size, fail_size, also_size;
    char fail_at[256];
};

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        return NULL;
    }
    size_t cap = 4096, n = 0;
    char *s = malloc(cap);
    size_t got;
    while (s && (got = fread(s + n, 1, cap - n - 1, f)) > 0) {
        n += got;
        if (cap - n < 2) {
            char *t = realloc(s, cap * 2);
            if (!t) {
                free(s);
                s = NULL;
                break;
            }
            s = t;
            cap *= 2;
        }
    }
    fclose(f);
    if (s) {
        s[n] = '\0';
    }
    if (len) {
        *len = n;
    }
    return s;
}

static void rm_rf(const char *path)
{
    struct stat sb;
    if (lstat(path, &sb) != 0) {
        return;
    }
    if (S_ISDIR(sb.st_mode)) {
        DIR *d = opendir(path);
        struct dirent *e;
        while (d && (e = readdir(d))) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) {
                continue;
            }
            char sub[4096];
            snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
            rm_rf(sub);
        }
        if (d) {
            closedir(d);
        }
        rmdir(path);
    } else {
        unlink(path);
    }
}

static int mask_match(const char *name, size_t len)
{
    for (int i = 0; i < n_masks; i++) {
        if (memmem(name, len, masks[i], strlen(masks[i]))) {
            return 1;
        }
    }
    return 0;
}

/* Text with the numbers under masked CSV columns or JSON keys each
 * replaced by one '#' (a measured time changes length from run to run). */
static char *masked_in_order(const char *text)
{
    const size_t n = strlen(text);
    char *s = malloc(n + 1);
    if (!s) {
        abort();
    }
    size_t o = 0, i = 0;
    static const char num[] = "0123456789+-.eE";
    while (i < n && (text[i] == ' ' || text[i] == '\n')) {
        s[o++] = text[i++];
    }
    if (n_masks > 0 && (text[i] == '{' || text[i] == '[')) {
        /* JSON: remember the last key; one '#' for a number after it */
        const char *key = "";
        size_t key_len = 0;
        while (i < n) {
            if (text[i] == '"') {
                const size_t start = i + 1;
                s[o++] = text[i++];
                while (i < n && text[i] != '"') {
                    if (text[i] == '\\' && i + 1 < n) {
                        s[o++] = text[i++];
                    }
                    s[o++] = text[i++];
                }
                const size_t end = i;
                if (i < n) {
                    s[o++] = text[i++];
                }
                size_t j = i;
                while (j < n && text[j] == ' ') {
                    j++;
                }
                if (j < n && text[j] == ':') {
                    key = text + start;
                    key_len = end - start;
                }
                continue;
            }
            if (((text[i] >= '0' && text[i] <= '9') || text[i] == '-') &&
                mask_match(key, key_len)) {
                while (i < n && strchr(num, text[i])) {
                    i++;
                }
                s[o++] = '#';
                continue;
            }
            s[o++] = text[i++];
        }
        s[o] = '\0';
        return s;
    }
    if (n_masks == 0) {
        memcpy(s + o, text + i, n - i + 1);
        return s;
    }
    /* CSV: the first line names the columns (again after a blank line) */
    char header[64][64];
    int cols = 0, col = 0;
    bool in_header = true;
    while (i <= n) {
        size_t end = i;
        if (text[end] == '"') {
            /* a quoted field (a sentence) may hold commas and newlines;
             * a doubled quote is a quote */
            end++;
            while (end < n && !(text[end] == '"' && text[end + 1] != '"')) {
                end += text[end] == '"' ? 2 : 1;
            }
            end += end < n;
        }
        while (end < n && text[end] != ',' && text[end] != '\n') {
            end++;
        }
        const size_t len = end - i;
        if (in_header) {
            if (cols < 64) {
                const size_t l = len < 63 ? len : 63;
                memcpy(header[cols], text + i, l);
                header[cols][l] = '\0';
                cols++;
            }
        }
        if (!in_header && col < cols && len > 0 &&
            strspn(text + i, num) >= len &&
            mask_match(header[col], strlen(header[col]))) {
            s[o++] = '#';
        } else {
            memcpy(s + o, text + i, len);
            o += len;
        }
        col++;
        if (end >= n) {
            break;
        }
        s[o++] = text[end];
        if (text[end] == '\n') {
            if (end + 1 < n && text[end + 1] == '\n') {
                in_header = true;
                cols = 0;
            } else if (in_header && col == 1 && len == 0) {
                cols = 0; /* the blank line itself: the header follows */
            } else {
                in_header = false;
            }
            col = 0;
        }
        i = end + 1;
    }
    s[o] = '\0';
    return s;
}

/* --unordered: an app whose rows are ordered by a measured quantity
 * (edgefit-sweep's precision trade-off, by mean latency) is compared as
 * the set of its lines, each masked; the line order is measured too. */
static bool unordered;

static int line_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static char *masked(const char *text)
{
    char *s = masked_in_order(text);
    if (!unordered) {
        return s;
    }
    size_t n = 1;
    for (const char *p = s; *p; p++) {
        n += *p == '\n';
    }
    char **lines = malloc(n * sizeof *lines);
    char *out = malloc(strlen(s) + 2);
    if (!lines || !out) {
        abort();
    }
    size_t k = 0;
    for (char *p = s; p; k++) {
        lines[k] = p;
        p = strchr(p, '\n');
        if (p) {
            *p++ = '\0';
        }
    }
    qsort(lines, k, sizeof *lines, line_cmp);
    size_t o = 0;
    for (size_t j = 0; j < k; j++) {
        const size_t l = strlen(lines[j]);
        memcpy(out + o, lines[j], l);
        o += l;
        out[o++] = '\n';
    }
    out[o] = '\0';
    free(lines);
    free(s);
    return out;
}

static volatile sig_atomic_t alarmed;
static void on_alarm(int sig)
{
    (void)sig;
    alarmed = 1;
}

static int run_once(char *const argv[], const char *shim, unsigned long n,
                    const char *work, unsigned timeout, struct run *r)
{
    char out_path[4096], err_path[4096], rep_path[4096];
    snprintf(out_path, sizeof out_path, "%s/stdout", work);
    snprintf(err_path, sizeof err_path, "%s/stderr", work);
    snprintf(rep_path, sizeof rep_path, "%s/report", work);
    unlink(rep_path);
    memset(r, 0, sizeof *r);
    const pid_t pid = fork();
    if (pid < 0) {
        return -1;
    }
    if (pid == 0) {
        char num[32];
        snprintf(num, sizeof num, "%lu", n);
        setenv("LD_PRELOAD", shim, 1);
        setenv("FAILALLOC_FAIL", num, 1);
        if (also_at != 0 && n > also_at) {
            snprintf(num, sizeof num, "%lu", also_at);
            setenv("FAILALLOC_ALSO", num, 1);
        }
        setenv("FAILALLOC_REPORT", rep_path, 1);
        const int o = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        const int e = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        const int in = open("/dev/null", O_RDONLY);
        if (o < 0 || e < 0 || in < 0) {
            _exit(126);
        }
        dup2(in, 0);
        dup2(o, 1);
        dup2(e, 2);
        execv(argv[0], argv);
        _exit(127);
    }
    alarmed = 0;
    struct sigaction sa = {0};
    sa.sa_handler = on_alarm;
    sigaction(SIGALRM, &sa, NULL);
    alarm(timeout);
    int ws;
    while (waitpid(pid, &ws, 0) < 0) {
        if (errno == EINTR && alarmed) {
            kill(pid, SIGKILL);
        }
    }
    alarm(0);
    if (alarmed) {
        r->status = -1;
    } else {
        r->status = WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
    }
    r->out = slurp(out_path, NULL);
    r->err = slurp(err_path, NULL);
    char *rep = slurp(rep_path, NULL);
    r->count = 0;
    r->fail_at[0] = '\0';
    r->fail_size = r->also_size = 0;
    if (rep) {
        sscanf(rep,
               "count %lu failed %d live %llu leak_seq %llu leak_size %llu "
               "fail_at %255s fail_size %llu also_size %llu",
               &r->count, &r->failed, &r->live, &r->leak_seq, &r->leak_size,
               r->fail_at, &r->fail_size, &r->also_size);
        free(rep);
    } else {
        r->count = (unsigned long)-1; /* no report: exit bypassed atexit */
    }
    return 0;
}

/* Files of dir (one level), sorted, as "name\0masked contents" joined. */
static char *dir_digest(const char *dir)
{
    struct dirent **list = NULL;
    const int k = scandir(dir, &list, NULL, alphasort);
    if (k < 0) {
        return NULL;
    }
    size_t cap = 1, len = 0;
    char *all = calloc(1, 1);
    for (int i = 0; i < k; i++) {
        if (list[i]->d_name[0] != '.') {
            char path[4096];
            snprintf(path, sizeof path, "%s/%s", dir, list[i]->d_name);
            size_t flen = 0;
            char *raw = slurp(path, &flen);
            /* binary files (PNG) by length, or by name alone when
             * numbers are masked: they may draw those numbers */
            char *body = raw && strlen(raw) == flen ? masked(raw) : NULL;
            char head[512];
            snprintf(head, sizeof head, "== %s (%zu bytes)\n",
                     list[i]->d_name,
                     body || n_masks > 0 ? (size_t)0 : flen);
            const size_t add = strlen(head) + (body ? strlen(body) : 0);
            char *t = realloc(all, cap + len + add + 1);
            if (!t) {
                abort();
            }
            all = t;
            cap += add + 1;
            strcpy(all + len, head);
            len += strlen(head);
            if (body) {
                strcpy(all + len, body);
                len += strlen(body);
            }
            free(body);
            free(raw);
        }
        free(list[i]);
    }
    free(list);
    return all;
}

static char *dir_digest(const char *dir);

/* The first line where a folder's digest leaves the unfailed run's, both
 * sides, so that a report says what changed. */
static void first_difference(const char *d, const char *base, char *out,
                             size_t cap)
{
    if (!d) {
        snprintf(out, cap, "the folder cannot be read");
        return;
    }
    size_t i = 0, line = 0;
    while (d[i] && d[i] == base[i]) {
        if (d[i] == '\n') {
            line = i + 1;
        }
        i++;
    }
    /* from 60 characters before the difference, to the end of its line */
    const size_t from = i - line > 60 ? i - 60 : line;
    const int a = (int)strcspn(d + from, "\n");
    const int b = (int)strcspn(base + from, "\n");
    snprintf(out, cap, "got \"%.*s\", unfailed \"%.*s\"", a > 200 ? 200 : a,
             d + from, b > 200 ? 200 : b, base + from);
}

static bool dir_equal_base(const char *dir, const char *base)
{
    char *d = dir_digest(dir);
    const bool same = d && strcmp(d, base) == 0;
    free(d);
    return same;
}

static const char *first_line(const char *s, char *buf, size_t len)
{
    if (!s) {
        return "(none)";
    }
    snprintf(buf, len, "%.*s", (int)strcspn(s, "\n"), s);
    return buf;
}

/* "out of memory", then (with --require-bytes) on the same line a number
 * of bytes: "N bytes" (the library and app helpers' "out of memory: what
 * (N bytes)", older wordings such as "the arena of N bytes") or "N-byte". */
static bool require_bytes, require_exact, show_optional;
static bool oom_message(const char *err)
{
    const char *p = err ? strstr(err, "out of memory") : NULL;
    if (!p || !require_bytes) {
        return p != NULL;
    }
    const size_t line = strcspn(p, "\n");
    for (size_t i = 1; i < line; i++) {
        if (p[i - 1] >= '0' && p[i - 1] <= '9' &&
            (strncmp(p + i, " bytes", 6) == 0 ||
             strncmp(p + i, "-byte", 5) == 0)) {
            return true;
        }
    }
    return false;
}

/* Whether the out-of-memory line names `bytes` exactly ("N bytes" with
 * N the failed call's request): counted, not required, since a message
 * may rightly name the whole it was building ("the activation arena of
 * N bytes") rather than the one block that failed. */
static bool names_request(const char *err, unsigned long long bytes)
{
    const char *p = err ? strstr(err, "out of memory") : NULL;
    if (!p) {
        return false;
    }
    const size_t line = strcspn(p, "\n");
    for (size_t i = 0; i < line; i++) {
        if (p[i] >= '0' && p[i] <= '9' && (i == 0 || p[i - 1] < '0' ||
                                           p[i - 1] > '9')) {
            char *end;
            const unsigned long long v = strtoull(p + i, &end, 10);
            if (v == bytes && (size_t)(end - p) < line &&
                strncmp(end, " bytes", 6) == 0) {
                return true;
            }
        }
    }
    return false;
}

/* Whether three more runs without a failure each give the unfailed run's
 * stdout and --out (under the masks): when one does not, the app's output
 * varies by itself and a failed run's difference proves nothing. */
static bool base_reproduces(char *const app[], const char *shim,
                            const char *work, const char *out_dir,
                            unsigned timeout, const char *base_out,
                            const char *base_dir)
{
    for (int k = 0; k < 3; k++) {
        struct run again;
        rm_rf(out_dir);
        run_once(app, shim, 0, work, timeout * 4, &again);
        char *o = masked(again.out ? again.out : "");
        char *d = dir_digest(out_dir);
        const bool same = again.status == 0 && strcmp(o, base_out) == 0 &&
                          d && strcmp(d, base_dir) == 0;
        free(o);
        free(d);
        free(again.out);
        free(again.err);
        if (!same) {
            return false;
        }
    }
    return true;
}

int main(int argc, char **argv)
{
    const char *shim = NULL;
    unsigned long stride = 1, first = 1, last = 0;
    unsigned timeout = 60;
    int i = 1;
    for (; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0) {
            i++;
            break;
        }
        if (strcmp(argv[i], "--require-bytes") == 0) {
            require_bytes = true;
            continue;
        }
        if (strcmp(argv[i], "--require-exact") == 0) {
            require_bytes = require_exact = true;
            continue;
        }
        if (strcmp(argv[i], "--show-optional") == 0) {
            show_optional = true;
            continue;
        }
        if (strcmp(argv[i], "--unordered") == 0) {
            unordered = true;
            continue;
        }
        if (i + 1 >= argc) {
            break;
        }
        if (strcmp(argv[i], "--shim") == 0) {
            shim = argv[++i];
        } else if (strcmp(argv[i], "--stride") == 0) {
            stride = strtoul(argv[++i], NULL, 10);
        } else if (strcmp(argv[i], "--also") == 0) {
            also_at = strtoul(argv[++i], NULL, 10);
        } else if (strcmp(argv[i], "--first") == 0) {
            first = strtoul(argv[++i], NULL, 10);
        } else if (strcmp(argv[i], "--last") == 0) {
            last = strtoul(argv[++i], NULL, 10);
        } else if (strcmp(argv[i], "--timeout") == 0) {
            timeout = (unsigned)strtoul(argv[++i], NULL, 10);
        } else if (strcmp(argv[i], "--bands") == 0) {
            const char *dir = argv[++i];
            mkdir(dir, 0777);
            if (run_write_bands(dir, "train", 64, 1) != 0 ||
                run_write_bands(dir, "t10k", 32, 2) != 0) {
                fprintf(stderr, "fault-sweep: cannot write %s\n", dir);
                return 1;
            }
        } else if (strcmp(argv[i], "--mask") == 0 && n_masks < MASK_MAX) {
            masks[n_masks++] = argv[++i];
        } else {
            fprintf(stderr, "fault-sweep: unknown option %s\n", argv[i]);
            return 2;
        }
    }
    if (!shim || i >= argc || stride == 0 || first == 0) {
        fprintf(stderr, "usage: fault-sweep --shim SO [--stride K] "
                        "[--first N] [--last N] [--timeout S] "
                        "[--mask WORD]... -- APP ARG...\n");
        return 2;
    }
    const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    char work[2048];
    snprintf(work, sizeof work, "%s/fault-sweep.XXXXXX", tmp);
    if (!mkdtemp(work)) {
        perror("mkdtemp");
        return 1;
    }
    char out_dir[4096];
    snprintf(out_dir, sizeof out_dir, "%s/out", work);
    const int nargs = argc - i;
    char **app = calloc((size_t)nargs + 3, sizeof *app);
    for (int k = 0; k < nargs; k++) {
        app[k] = argv[i + k];
    }
    app[nargs] = "--out";
    app[nargs + 1] = out_dir;

    const char *name = strrchr(app[0], '/') ? strrchr(app[0], '/') + 1
                                            : app[0];
    struct run base;
    run_once(app, shim, 0, work, timeout * 4, &base);
    char line[512];
    if (base.status != 0 || base.count == (unsigned long)-1) {
        fprintf(stderr, "%s: the run without a failure ended %d: %s\n", name,
                base.status, first_line(base.err, line, sizeof line));
        return 1;
    }
    if (base.live != 0) {
        fprintf(stderr,
                "%s: the run without a failure leaks %llu blocks (the "
                "first: allocation %llu, %llu bytes)\n",
                name, base.live, base.leak_seq, base.leak_size);
        return 1;
    }
    char *base_out = masked(base.out ? base.out : "");
    char *base_dir = dir_digest(out_dir);
    if (!base_dir) {
        fprintf(stderr, "%s: the run without a failure wrote no --out\n",
                name);
        return 1;
    }
    const unsigned long total = base.count;
    if (also_at != 0) {
        /* K must be a failure the app does without, or the check of the
         * later runs would hold vacuously */
        struct run k;
        rm_rf(out_dir);
        run_once(app, shim, also_at, work, timeout, &k);
        const bool done_without = k.status == 0 && k.failed;
        free(k.out);
        free(k.err);
        if (!done_without) {
            fprintf(stderr,
                    "%s: --also %lu: the run failing allocation %lu alone "
                    "ended %d, not 0 (choose one --show-optional lists)\n",
                    name, also_at, also_at, k.status);
            return 1;
        }
    }
    if (last == 0 || last > total) {
        last = total;
    }
    printf("%s: %lu allocations counted; failing N = %lu..%lu step %lu\n",
           name, total, first, last, stride);
    fflush(stdout);

    unsigned long runs = 0, bad = 0, clean_exit = 0, optional = 0, missed = 0,
                  varying = 0, exact = 0;
    char (*sites)[256] = calloc(last / stride + 2, sizeof *sites);
    size_t n_sites = 0;
    for (unsigned long n = first; n <= last; n += stride) {
        rm_rf(out_dir);
        struct run r;
        run_once(app, shim, n, work, timeout, &r);
        runs++;
        const char *why = NULL;
        char detail[1024] = "";
        if (r.status == -1) {
            why = "hang";
        } else if (r.status >= 128) {
            snprintf(detail, sizeof detail, "signal %d", r.status - 128);
            why = "crash";
        } else if (r.count == (unsigned long)-1) {
            why = "no report (the exit bypassed exit handlers)";
        } else if (!r.failed) {
            missed++; /* fewer allocations this time: nothing failed */
        } else if (r.live != 0) {
            snprintf(detail, sizeof detail,
                     "%llu blocks (the first: allocation %llu, %llu bytes)",
                     r.live, r.leak_seq, r.leak_size);
            why = "leak";
        } else if (r.status == 1) {
            struct stat sb;
            if (!oom_message(r.err)) {
                why = require_bytes
                          ? "exit 1 without \"out of memory\" and N bytes"
                          : "exit 1 without \"out of memory\"";
            } else if (r.also_size != 0 && r.also_size != r.fail_size &&
                       names_request(r.err, r.also_size)) {
                snprintf(detail, sizeof detail,
                         "the failure done without asked for %llu, this "
                         "one for %llu",
                         r.also_size, r.fail_size);
                why = "exit 1 naming the bytes of an earlier failure";
            } else if (require_exact && !names_request(r.err, r.fail_size)) {
                snprintf(detail, sizeof detail, "the call asked for %llu",
                         r.fail_size);
                why = "exit 1 naming other bytes than the failed call's";
            } else if (lstat(out_dir, &sb) == 0 &&
                       !dir_equal_base(out_dir, base_dir)) {
                /* a folder there must be the whole of the unfailed
                 * run's (written before the failure, e.g. in printing) */
                why = "partial --out";
            } else {
                clean_exit++;
                exact += names_request(r.err, r.fail_size);
            }
        } else if (r.status == 0) {
            char *o = masked(r.out ? r.out : "");
            char *d = dir_digest(out_dir);
            if (strcmp(o, base_out) != 0) {
                why = "exit 0, stdout differs from the unfailed run's";
            } else if (!d || strcmp(d, base_dir) != 0) {
                why = "exit 0, --out differs from the unfailed run's";
                first_difference(d, base_dir, detail, sizeof detail);
            } else {
                optional++;
                if (show_optional) {
                    printf("%s: N=%lu at %s: exit 0 unchanged\n", name, n,
                           r.fail_at);
                }
            }
            if (why && !base_reproduces(app, shim, work, out_dir, timeout,
                                        base_out, base_dir)) {
                /* what differs is what differs between runs without a
                 * failure too (an order set by measured times): the
                 * comparison cannot judge this run */
                why = NULL;
                varying++;
            }
            free(o);
            free(d);
        } else {
            snprintf(detail, sizeof detail, "exit %d", r.status);
            why = "wrong exit code";
        }
        /* No temporary beside --out: the work folder holds only the
         * sweep's own files. */
        if (!why) {
            DIR *d = opendir(work);
            struct dirent *e;
            while (d && (e = readdir(d))) {
                if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") &&
                    strcmp(e->d_name, "stdout") &&
                    strcmp(e->d_name, "stderr") &&
                    strcmp(e->d_name, "report") && strcmp(e->d_name, "out")) {
                    snprintf(detail, sizeof detail, "%s", e->d_name);
                    why = "temporary left beside --out";
                }
            }
            if (d) {
                closedir(d);
            }
        }
        if (r.failed) {
            size_t s = 0;
            while (s < n_sites && strcmp(sites[s], r.fail_at) != 0) {
                s++;
            }
            if (s == n_sites) {
                snprintf(sites[n_sites++], 256, "%s", r.fail_at);
            }
        }
        if (why) {
            bad++;
            fprintf(stderr, "%s: N=%lu at %s: %s%s%s; stderr: %s\n", name, n,
                    r.fail_at, why, detail[0] ? ": " : "", detail,
                    first_line(r.err, line, sizeof line));
            fflush(stderr);
        }
        free(r.out);
        free(r.err);
    }
    printf("%s: %lu runs, %zu distinct call sites failed; %lu exit 1 out of "
           "memory (%lu naming exactly the bytes the failed call asked "
           "for), %lu exit 0 unchanged, %lu exit 0 where runs without a "
           "failure vary too, %lu reached no failure, %lu bad\n",
           name, runs, n_sites, clean_exit, exact, optional, varying, missed,
           bad);
    rm_rf(work);
    free(sites);
    free(base_out);
    free(base_dir);
    free(base.out);
    free(base.err);
    free(app);
    return bad ? 1 : 0;
}
