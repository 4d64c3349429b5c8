/* The documentation's samples of program output (samples.h): one code path
 * produces them (make-doc-samples) and checks them (test-readme). */
#define _XOPEN_SOURCE 700
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "run.h"
#include "samples.h"

#define MARK_BEGIN "<!-- sample"
#define MARK_END "<!-- end sample -->"
#define FENCE_OPEN "```console"
#define FENCE "```"

/* ---- growing strings and lines ------------------------------------------- */

struct buf {
    char *s;
    size_t len, cap;
};

static void buf_add(struct buf *b, const char *s, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (b->len + n + 1 > cap) {
            cap *= 2;
        }
        char *p = realloc(b->s, cap);
        if (!p) {
            abort(); /* a test tool: no partial text is worth keeping */
        }
        b->s = p;
        b->cap = cap;
    }
    memcpy(b->s + b->len, s, n);
    b->len += n;
    b->s[b->len] = '\0';
}

static void buf_str(struct buf *b, const char *s) { buf_add(b, s, strlen(s)); }

static void buf_printf(struct buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void buf_printf(struct buf *b, const char *fmt, ...)
{
    char tmp[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    buf_str(b, tmp);
}

struct lines {
    char **v;
    int n;
};

/* The lines of text, without their newlines and trailing blanks (an
 * editor strips those; they carry nothing). */
static struct lines split_lines(const char *text)
{
    struct lines l = {NULL, 0};
    const char *p = text;
    while (*p) {
        const char *e = strchr(p, '\n');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        size_t k = n;
        while (k > 0 && (p[k - 1] == ' ' || p[k - 1] == '\t' ||
                         p[k - 1] == '\r')) {
            k--;
        }
        l.v = realloc(l.v, (size_t)(l.n + 1) * sizeof *l.v);
        l.v[l.n++] = strndup(p, k);
        p += n + (e != NULL);
    }
    return l;
}

static void lines_free(struct lines *l)
{
    for (int i = 0; i < l->n; i++) {
        free(l->v[i]);
    }
    free(l->v);
    l->v = NULL;
    l->n = 0;
}

/* ---- what may differ ----------------------------------------------------- */

static bool is_alnum(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c >= '0' && c <= '9') || c == '_';
}

static bool is_digit(char c) { return c >= '0' && c <= '9'; }

/* Units after which a number is a measurement of this machine. */
static const char *const time_units[] = {
    "ms", "s", "us", "\xc2\xb5s", "ns", "GB/s", "MB/s", "GMAC/s", "GFLOP/s",
    "GOP/s",
};

/* Length of the number at p ("-1,234.5e-06"), 0 when none starts there. */
static size_t number_len(const char *p)
{
    size_t i = 0;
    if (p[i] == '-' || p[i] == '+') {
        i++;
    }
    if (!is_digit(p[i])) {
        return 0;
    }
    while (is_digit(p[i]) || (p[i] == ',' && is_digit(p[i + 1]))) {
        i++;
    }
    if (p[i] == '.' && is_digit(p[i + 1])) {
        i++;
        while (is_digit(p[i])) {
            i++;
        }
    }
    if ((p[i] == 'e' || p[i] == 'E') &&
        (is_digit(p[i + 1]) ||
         ((p[i + 1] == '-' || p[i + 1] == '+') && is_digit(p[i + 2])))) {
        i += 2;
        while (is_digit(p[i])) {
            i++;
        }
    }
    return i;
}

static bool ends_with(const char *s, size_t n, const char *suffix)
{
    const size_t k = strlen(suffix);
    return n >= k && memcmp(s + n - k, suffix, k) == 0;
}

/* Does the word just before p (spaces between) name a time, `..._ms` or
 * `..._s` ("training_time_s 0.035930")? */
static bool after_time_name(const char *line, const char *p)
{
    const char *e = p;
    while (e > line && e[-1] == ' ') {
        e--;
    }
    if (e == p) {
        return false; /* "x_s0.1" is one word */
    }
    const char *w = e;
    while (w > line && w[-1] != ' ') {
        w--;
    }
    const size_t n = (size_t)(e - w);
    return ends_with(w, n, "_ms") || ends_with(w, n, "_s");
}

/* A number followed by a unit of time or rate, or after the name of a
 * time, becomes "~". */
static void mask_units(const char *line, struct buf *out)
{
    const char *p = line;
    while (*p) {
        const bool starts = p == line || !(is_alnum(p[-1]) || p[-1] == '.');
        const size_t n = starts ? number_len(p) : 0;
        if (n == 0) {
            buf_add(out, p, 1);
            p++;
            continue;
        }
        const char *u = p + n + (p[n] == ' ');
        bool timed = after_time_name(line, p);
        for (size_t k = 0; k < sizeof time_units / sizeof time_units[0]; k++) {
            const size_t ul = strlen(time_units[k]);
            if (strncmp(u, time_units[k], ul) == 0 && !is_alnum(u[ul])) {
                timed = true;
            }
        }
        if (timed) {
            buf_str(out, "~");
        } else {
            buf_add(out, p, n);
        }
        p += n;
    }
}

/* A header line: two or more words, each a lower-case name. */
static bool is_header(const char *line)
{
    int words = 0;
    for (const char *p = line; *p;) {
        while (*p == ' ') {
            p++;
        }
        if (!*p) {
            break;
        }
        if (!(*p >= 'a' && *p <= 'z')) {
            return false;
        }
        while (*p && *p != ' ') {
            if (!((*p >= 'a' && *p <= 'z') || is_digit(*p) || *p == '_')) {
                return false;
            }
            p++;
        }
        words++;
    }
    return words >= 2;
}

static bool in_list(const char *list, const char *word, size_t n)
{
    if (!list) {
        return false;
    }
    for (const char *p = list; *p;) {
        const char *e = strchr(p, ',');
        const size_t k = e ? (size_t)(e - p) : strlen(p);
        if (k == n && memcmp(p, word, n) == 0) {
            return true;
        }
        p += k + (e != NULL);
    }
    return false;
}

#define MAX_SPANS 64

struct spans {
    int n;
    int s[MAX_SPANS], e[MAX_SPANS];
};

/* The columns of a header whose cells are measured. */
static void header_spans(const char *line, const char *vary, struct spans *sp)
{
    sp->n = 0;
    for (const char *p = line; *p;) {
        while (*p == ' ') {
            p++;
        }
        const char *w = p;
        while (*p && *p != ' ') {
            p++;
        }
        const size_t n = (size_t)(p - w);
        if (n && sp->n < MAX_SPANS &&
            (ends_with(w, n, "_ms") || ends_with(w, n, "_s") ||
             in_list(vary, w, n))) {
            sp->s[sp->n] = (int)(w - line);
            sp->e[sp->n] = (int)(p - line);
            sp->n++;
        }
    }
}

/* The row with each cell that overlaps a measured column as "~". */
static void mask_cells(const char *line, const struct spans *sp,
                       struct buf *out)
{
    for (const char *p = line; *p;) {
        if (*p == ' ') {
            buf_add(out, p++, 1);
            continue;
        }
        const char *w = p;
        while (*p && *p != ' ') {
            p++;
        }
        const int s = (int)(w - line), e = (int)(p - line);
        bool measured = false;
        for (int k = 0; k < sp->n; k++) {
            measured |= s < sp->e[k] && sp->s[k] < e;
        }
        if (measured) {
            buf_str(out, "~");
        } else {
            buf_add(out, w, (size_t)(p - w));
        }
    }
}

/* The lines of an output as they are compared. */
static struct lines normalise(const char *text, const char *vary)
{
    struct lines in = split_lines(text);
    struct lines out = {calloc((size_t)in.n + 1, sizeof(char *)), in.n};
    struct spans sp = {0};
    for (int i = 0; i < in.n; i++) {
        const char *line = in.v[i];
        struct buf cells = {0}, units = {0}, done = {0};
        if (!*line) {
            sp.n = 0; /* a blank line ends a table */
        } else if (is_header(line)) {
            header_spans(line, vary, &sp);
        }
        if (sp.n && *line && !is_header(line)) {
            mask_cells(line, &sp, &cells);
        } else {
            buf_str(&cells, line);
        }
        mask_units(cells.s ? cells.s : "", &units);
        for (const char *p = units.s ? units.s : ""; *p; p++) {
            if ((*p == ' ' || *p == '\t') && done.len &&
                done.s[done.len - 1] == ' ') {
                continue;
            }
            buf_add(&done, *p == '\t' ? " " : p, 1);
        }
        out.v[i] = done.s ? done.s : strdup("");
        free(cells.s);
        free(units.s);
    }
    lines_free(&in);
    return out;
}

bool samples_equal(const char *expected, const char *actual, const char *vary,
                   int *line, char **exp_out, char **act_out)
{
    struct lines e = normalise(expected, vary), a = normalise(actual, vary);
    bool same = true;
    const int n = e.n > a.n ? e.n : a.n;
    for (int i = 0; i < n && same; i++) {
        const char *x = i < e.n ? e.v[i] : "(no line)";
        const char *y = i < a.n ? a.v[i] : "(no line)";
        if (strcmp(x, y) != 0) {
            same = false;
            if (line) {
                *line = i + 1;
            }
            if (exp_out) {
                *exp_out = strdup(x);
            }
            if (act_out) {
                *act_out = strdup(y);
            }
        }
    }
    lines_free(&e);
    lines_free(&a);
    return same;
}

/* ---- the scratch folder -------------------------------------------------- */

/* What a sample's command may read of the tree (never a build folder nor
 * an out/ of the user's: a sample's --out writes into the scratch). */
static const char *const tree_entries[] = {
    "README.md", "docs", "tests", "scripts", "apps", "libmemest",
    "libkernels", "libprofile", "libartifacts", "internal", "meson.build",
    "meson_options.txt",
};

static int rm_entry(const char *path, const struct stat *sb, int flag,
                    struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    remove(path); /* a link is removed, never followed (FTW_PHYS) */
    return 0;
}

static void scratch_remove(const char *dir)
{
    nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* The app's NAME from .../edgefit-NAME, or NULL. */
static const char *app_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    return strncmp(base, "edgefit-", 8) == 0 && base[8] ? base + 8 : NULL;
}

static int scratch_make(const char *root, char *const apps[], int napps,
                        char *dir, size_t dir_size)
{
    snprintf(dir, dir_size, "/tmp/edgefit-samples-XXXXXX");
    if (!mkdtemp(dir)) {
        return -1;
    }
    char *aroot = realpath(root, NULL);
    if (!aroot) {
        return -1;
    }
    char path[4096], target[4096];
    for (size_t i = 0; i < sizeof tree_entries / sizeof tree_entries[0]; i++) {
        snprintf(target, sizeof target, "%s/%s", aroot, tree_entries[i]);
        snprintf(path, sizeof path, "%s/%s", dir, tree_entries[i]);
        if (access(target, F_OK) == 0 && symlink(target, path) != 0) {
            free(aroot);
            return -1;
        }
    }
    free(aroot);
    snprintf(path, sizeof path, "%s/.bin", dir);
    mkdir(path, 0755);
    snprintf(path, sizeof path, "%s/build", dir);
    mkdir(path, 0755);
    snprintf(path, sizeof path, "%s/build/apps", dir);
    mkdir(path, 0755);
    for (int i = 0; i < napps; i++) {
        const char *name = app_name(apps[i]);
        char *exe = realpath(apps[i], NULL);
        if (!name || !exe) {
            free(exe);
            return -1;
        }
        snprintf(path, sizeof path, "%s/build/apps/%s", dir, name);
        mkdir(path, 0755);
        snprintf(path, sizeof path, "%s/build/apps/%s/edgefit-%s", dir, name,
                 name);
        const int a = symlink(exe, path);
        snprintf(path, sizeof path, "%s/.bin/edgefit-%s", dir, name);
        const int b = symlink(exe, path);
        free(exe);
        if (a != 0 || b != 0) {
            return -1;
        }
    }
    return 0;
}

/* ---- one sample ---------------------------------------------------------- */

struct marker {
    char cmd[1024];
    char vary[512];
    int head; /* 0: every line */
};

/* Parse "<!-- sample[ head=N][ vary=A,B]: COMMAND -->"; NULL or why not. */
static const char *parse_marker(const char *line, struct marker *m)
{
    memset(m, 0, sizeof *m);
    const char *p = line + strlen(MARK_BEGIN);
    const char *colon = strstr(p, ": ");
    const size_t len = strlen(line);
    if (!colon || len < 4 || strcmp(line + len - 4, " -->") != 0) {
        return "a sample marker is <!-- sample[ head=N][ vary=A,B]: COMMAND -->";
    }
    while (p < colon) {
        while (*p == ' ') {
            p++;
        }
        const char *w = p;
        while (p < colon && *p != ' ') {
            p++;
        }
        const int n = (int)(p - w);
        if (n == 0) {
            continue;
        }
        if (n > 5 && strncmp(w, "head=", 5) == 0) {
            m->head = atoi(w + 5);
            if (m->head <= 0) {
                return "head= takes a number of lines above 0";
            }
        } else if (n > 5 && strncmp(w, "vary=", 5) == 0 &&
                   (size_t)(n - 5) < sizeof m->vary) {
            snprintf(m->vary, sizeof m->vary, "%.*s", n - 5, w + 5);
        } else {
            return "a sample marker takes only head=N and vary=COLUMNS";
        }
    }
    const char *c = colon + 2;
    const size_t n = (size_t)(line + len - 4 - c);
    if (n == 0 || n >= sizeof m->cmd) {
        return "a sample's command is empty or too long";
    }
    memcpy(m->cmd, c, n);
    m->cmd[n] = '\0';
    return NULL;
}

/* Run the marker's command in the scratch folder; the block's lines
 * (without the fences) as the documentation shows them. */
static char *run_sample(const char *scratch, const struct marker *m)
{
    struct buf sh = {0};
    buf_printf(&sh, "PATH='%s/.bin':\"$PATH\"; export PATH; exec </dev/null\n",
               scratch);
    buf_str(&sh, m->cmd);
    char *argv[] = {"/bin/sh", "-c", sh.s, NULL};
    struct run_result r;
    const int here = open(".", O_RDONLY | O_DIRECTORY);
    if (here < 0 || chdir(scratch) != 0) {
        free(sh.s);
        return NULL;
    }
    run_argv(argv, &r);
    if (fchdir(here) != 0) {
        abort(); /* the tool's own folder vanished: nothing sensible left */
    }
    close(here);
    free(sh.s);

    struct buf block = {0};
    buf_printf(&block, "$ %s\n", m->cmd);
    struct lines out = split_lines(r.out);
    for (int i = 0; i < out.n; i++) {
        if (m->head && i == m->head) {
            buf_str(&block, "...\n");
            break;
        }
        buf_str(&block, out.v[i]);
        buf_str(&block, "\n");
    }
    if (r.status != 0) {
        buf_printf(&block, "[exit status %d]\n", r.status);
    }
    lines_free(&out);
    run_free(&r);
    return block.s;
}

/* ---- a file -------------------------------------------------------------- */

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        return NULL;
    }
    struct buf b = {0};
    char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
        buf_add(&b, chunk, n);
    }
    fclose(f);
    return b.s ? b.s : strdup("");
}

static void say(samples_report_fn report, void *ctx, bool ok,
                const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void say(samples_report_fn report, void *ctx, bool ok,
                const char *fmt, ...)
{
    char msg[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    report(ctx, ok, msg);
}

/* Why a check run under EDGEFIT_EMULATED=1 (CI's qemu stage, another
 * instruction set than the docs' samples were made on) leaves the sample
 * out, or NULL: the apps that train or sweep a model over the data
 * (edgefit-train, edgefit-report, edgefit-sweep) cost minutes of emulated
 * CPU each (the README's first run alone trains five epochs on
 * Fashion-MNIST), and edgefit-validate's errors against reference outputs
 * (--test-data) are float sums in the kernel path's order, whose last
 * digits are the docs' machine's (x86-64): MobileNetV3-small's fp32
 * maximum error is 1.304e-08 with NEON, 1.49e-08 with AVX-512. The native
 * suite checks them; a rewrite runs them all. */
static const char *emulated_skip(const char *cmd, bool write)
{
    const char *e = getenv("EDGEFIT_EMULATED");
    if (write || !e || strcmp(e, "1") != 0) {
        return NULL;
    }
    if (strstr(cmd, "edgefit-train") || strstr(cmd, "edgefit-report") ||
        strstr(cmd, "edgefit-sweep")) {
        return "trains or sweeps over the data";
    }
    if (strstr(cmd, "edgefit-validate") && strstr(cmd, "--test-data")) {
        return "errors in the kernel path's order of sums";
    }
    return NULL;
}

int samples_file(const char *root, const char *rel, char *const apps[],
                 int napps, bool write, samples_report_fn report, void *ctx)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", root, rel);
    char *text = slurp(path);
    if (!text) {
        say(report, ctx, false, "%s: cannot read it (%s)", rel,
            strerror(errno));
        return -1;
    }
    /* Split keeping the text exactly: the lines are rewritten as read. */
    struct lines l = {NULL, 0};
    for (const char *p = text; *p;) {
        const char *e = strchr(p, '\n');
        const size_t n = e ? (size_t)(e - p) : strlen(p);
        l.v = realloc(l.v, (size_t)(l.n + 1) * sizeof *l.v);
        l.v[l.n++] = strndup(p, n);
        p += n + (e != NULL);
    }
    char scratch[64] = "";
    struct buf out = {0};
    int count = 0, status = 0;
    for (int i = 0; i < l.n && status == 0; i++) {
        buf_str(&out, l.v[i]);
        buf_str(&out, "\n");
        if (strncmp(l.v[i], MARK_BEGIN, strlen(MARK_BEGIN)) != 0) {
            continue;
        }
        const int at = i + 1;
        struct marker m;
        const char *why = parse_marker(l.v[i], &m);
        int end = i + 1;
        while (end < l.n && strcmp(l.v[end], MARK_END) != 0 &&
               strncmp(l.v[end], MARK_BEGIN, strlen(MARK_BEGIN)) != 0) {
            end++;
        }
        if (!why && (end == l.n || strcmp(l.v[end], MARK_END) != 0)) {
            why = "no " MARK_END " after it";
        }
        if (why) {
            say(report, ctx, false, "%s:%d: %s", rel, at, why);
            status = -1;
            break;
        }
        const char *skip = emulated_skip(m.cmd, write);
        if (skip) {
            count++;
            say(report, ctx, true, "%s:%d: `%s` # SKIP EDGEFIT_EMULATED=1: "
                "%s", rel, at, m.cmd, skip);
            i = end - 1;
            continue;
        }
        if (!scratch[0] &&
            scratch_make(root, apps, napps, scratch, sizeof scratch) != 0) {
            say(report, ctx, false, "%s: cannot make a scratch folder (%s)",
                rel, strerror(errno));
            status = -1;
            break;
        }
        char *block = run_sample(scratch, &m);
        count++;
        if (!block) {
            say(report, ctx, false, "%s:%d: cannot run `%s`", rel, at, m.cmd);
            status = -1;
            break;
        }
        if (strstr(block, "\n" FENCE)) {
            say(report, ctx, false, "%s:%d: `%s` printed a line of ```, "
                "which would end the block", rel, at, m.cmd);
            free(block);
            status = -1;
            break;
        }
        /* The text between the fences: "$ COMMAND", then the output. */
        struct buf old = {0};
        const bool fenced = end - i >= 3 &&
                            strcmp(l.v[i + 1], FENCE_OPEN) == 0 &&
                            strcmp(l.v[end - 1], FENCE) == 0;
        for (int k = i + 2; fenced && k < end - 1; k++) {
            buf_str(&old, l.v[k]);
            buf_str(&old, "\n");
        }
        if (write) {
            /* A block that differs only in what may differ (a time) is
             * kept as it is, so that the docs change only when an app's
             * output does. */
            const bool same = fenced && old.s &&
                              samples_equal(old.s, block, m.vary, NULL, NULL,
                                            NULL);
            buf_str(&out, FENCE_OPEN "\n");
            buf_str(&out, same ? old.s : block);
            buf_str(&out, FENCE "\n");
            say(report, ctx, true, "%s:%d: %s `%s`", rel, at,
                same ? "kept" : "wrote", m.cmd);
        } else {
            int line = 0;
            char *x = NULL, *y = NULL;
            if (!fenced) {
                say(report, ctx, false, "%s:%d: `%s`: no " FENCE_OPEN
                    " block before " MARK_END " (run "
                    "scripts/make-doc-samples.sh)", rel, at, m.cmd);
            } else if (!samples_equal(old.s ? old.s : "", block, m.vary,
                                      &line, &x, &y)) {
                say(report, ctx, false, "%s:%d: `%s` prints another text "
                    "than the sample (run scripts/make-doc-samples.sh): "
                    "line %d of the block\n#   documented: %s\n#   printed:    "
                    "%s", rel, at, m.cmd, line, x, y);
            } else {
                say(report, ctx, true, "%s:%d: `%s` prints the sample", rel,
                    at, m.cmd);
            }
            free(x);
            free(y);
        }
        free(old.s);
        free(block);
        /* Go on at the end marker, which is kept: the old block between
         * the markers is dropped (written anew above). */
        i = end - 1;
    }
    if (scratch[0]) {
        scratch_remove(scratch);
    }
    if (write && status == 0) {
        /* The text must come back byte for byte but for the blocks. */
        if (text[0] && text[strlen(text) - 1] != '\n' && out.len) {
            out.s[--out.len] = '\0';
        }
        char tmp[4200];
        snprintf(tmp, sizeof tmp, "%s.samples-tmp", path);
        bool failed = false;
        if (!out.s || strcmp(out.s, text) != 0) { /* else left alone */
            FILE *f = fopen(tmp, "wb");
            failed = !f;
            if (f) {
                failed = fwrite(out.s ? out.s : "", 1, out.len, f) != out.len;
                failed |= fclose(f) != 0;
            }
            failed = failed || rename(tmp, path) != 0;
        }
        if (failed) {
            say(report, ctx, false, "%s: cannot write it (%s)", rel,
                strerror(errno));
            remove(tmp);
            status = -1;
        }
    }
    lines_free(&l);
    free(out.s);
    free(text);
    return status ? -1 : count;
}

/* ---- the documentation's files ------------------------------------------- */

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int samples_docs(const char *root, char ***files)
{
    int n = 0;
    char **v = malloc(sizeof *v);
    v[n++] = strdup("README.md");
    char path[4096];
    snprintf(path, sizeof path, "%s/docs", root);
    DIR *d = opendir(path);
    for (struct dirent *e; d && (e = readdir(d));) {
        const size_t k = strlen(e->d_name);
        if (e->d_name[0] != '.' && k > 3 &&
            strcmp(e->d_name + k - 3, ".md") == 0) {
            v = realloc(v, (size_t)(n + 1) * sizeof *v);
            char rel[600];
            snprintf(rel, sizeof rel, "docs/%s", e->d_name);
            v[n++] = strdup(rel);
        }
    }
    if (d) {
        closedir(d);
    }
    qsort(v + 1, (size_t)(n - 1), sizeof *v, by_name);
    *files = v;
    return n;
}

void samples_docs_free(char **files, int n)
{
    for (int i = 0; i < n; i++) {
        free(files[i]);
    }
    free(files);
}
