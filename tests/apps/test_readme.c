/* The documentation (README.md and docs/NAME.md) against the programs and
 * the tree: the README stays a five-minute read (at most 200 lines), every
 * option an app's --help lists is documented in that app's section of the
 * docs, every path of the tree and every relative link they name exists,
 * `meson install` comes before pkg-config, every sample of program output
 * is what the program prints today (samples.h; a sample that differs fails
 * and scripts/make-doc-samples.sh writes it anew), and neither the docs,
 * the --help texts nor any source file speaks of the originals by their
 * file numbers instead of by name.
 * argv: SOURCE_ROOT APP... (each app's section is "### <its file name>").
 * TAP output. */
#include <dirent.h>
#include <regex.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "run.h"
#include "samples.h"

static int test_no, failed;

static void ok(bool cond, const char *what)
{
    printf("%s %d - %s\n", cond ? "ok" : "not ok", ++test_no, what);
    failed += !cond;
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        return NULL;
    }
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    size_t n;
    while ((n = fread(buf + len, 1, cap - len - 1, f)) > 0) {
        len += n;
        if (len + 1 == cap) {
            cap *= 2;
            buf = realloc(buf, cap);
        }
    }
    buf[len] = '\0';
    fclose(f);
    return buf;
}

/* The text of "### name" up to the next heading of level 2 or 3. */
static char *section(const char *readme, const char *name)
{
    char head[128];
    snprintf(head, sizeof head, "\n### %s\n", name);
    const char *s = strstr(readme, head);
    if (!s) {
        return NULL;
    }
    s += strlen(head);
    const char *e = s;
    while ((e = strstr(e, "\n#")) && !(e[2] == '#' && (e[3] == ' ' ||
                                                       (e[3] == '#' &&
                                                        e[4] == ' ')))) {
        e++;
    }
    const size_t n = e ? (size_t)(e - s) : strlen(s);
    char *out = malloc(n + 1);
    memcpy(out, s, n);
    out[n] = '\0';
    return out;
}

/* Is the option word opt ("--batch") in text, not as a prefix of a longer
 * one ("--batch-limit")? */
static bool has_option(const char *text, const char *opt)
{
    const size_t n = strlen(opt);
    for (const char *p = text; (p = strstr(p, opt)); p += n) {
        const char c = p[n];
        if (!(c == '-' || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'))) {
            return true;
        }
    }
    return false;
}

/* The documentation's files, read once. */
static char **doc_names, **doc_texts;
static int ndocs;

static void check_options(const char *exe, const char *name)
{
    char *argv[] = {(char *)exe, "--help", NULL};
    struct run_result r;
    run_argv(argv, &r);
    char *sec = NULL;
    for (int i = 0; i < ndocs && !sec; i++) {
        sec = section(doc_texts[i], name);
    }
    int missing = 0, seen = 0;
    regex_t re;
    regcomp(&re, "--[a-z][a-z0-9-]*", REG_EXTENDED);
    regmatch_t m;
    for (const char *p = r.out; regexec(&re, p, 1, &m, 0) == 0;
         p += m.rm_eo) {
        char opt[64];
        const int len = (int)(m.rm_eo - m.rm_so);
        snprintf(opt, sizeof opt, "%.*s", len, p + m.rm_so);
        seen++;
        if (!sec || !has_option(sec, opt)) {
            printf("# %s: %s is not in the docs' '### %s' section\n",
                   exe, opt, name);
            missing++;
        }
    }
    regfree(&re);
    char what[200];
    snprintf(what, sizeof what, "%s: every option --help names is in its "
             "section of the docs", name);
    ok(r.status == 0 && seen > 5 && missing == 0, what);

    regcomp(&re, "seeds? 00[0-9]", REG_EXTENDED | REG_ICASE);
    snprintf(what, sizeof what, "%s: --help names no original by number",
             name);
    ok(regexec(&re, r.out, 0, NULL, 0) != 0, what);
    regfree(&re);
    free(sec);
    run_free(&r);
}

/* Every token of the docs that starts like a path of the tree exists, and
 * so does the target of every relative Markdown link (from the file's own
 * folder). */
static void check_paths(const char *root)
{
    regex_t re;
    regcomp(&re,
            "(^|[^A-Za-z0-9_./-])((scripts|tests|apps|internal|docs|"
            "lib[a-z]+|\\.ci)/[A-Za-z0-9_./<>*-]*)",
            REG_EXTENDED | REG_NEWLINE);
    regmatch_t m[3];
    int missing = 0, seen = 0, links = 0, broken = 0;
    for (int i = 0; i < ndocs; i++) {
        for (const char *p = doc_texts[i]; regexec(&re, p, 3, m, 0) == 0;
             p += m[0].rm_eo) {
            char rel[256];
            int len = (int)(m[2].rm_eo - m[2].rm_so);
            snprintf(rel, sizeof rel, "%.*s", len, p + m[2].rm_so);
            /* A sentence's full stop is not part of the path. */
            while (len > 0 && rel[len - 1] == '.') {
                rel[--len] = '\0';
            }
            if (strpbrk(rel, "<>*")) {
                continue; /* a pattern such as apps/<workflow>/main.c */
            }
            char path[600];
            snprintf(path, sizeof path, "%s/%s", root, rel);
            struct stat sb;
            seen++;
            if (stat(path, &sb) != 0) {
                printf("# %s names %s, which is not in the tree\n",
                       doc_names[i], rel);
                missing++;
            }
        }
        const char *slash = strrchr(doc_names[i], '/');
        const int dir = slash ? (int)(slash - doc_names[i]) : 0;
        for (const char *p = doc_texts[i]; (p = strstr(p, "](")); p += 2) {
            const char *t = p + 2, *e = strpbrk(t, ")# \n");
            if (!e || strncmp(t, "http://", 7) == 0 ||
                strncmp(t, "https://", 8) == 0 || *t == '#') {
                continue;
            }
            char path[1200];
            snprintf(path, sizeof path, "%s/%.*s%s%.*s", root, dir,
                     doc_names[i], dir ? "/" : "", (int)(e - t), t);
            struct stat sb;
            links++;
            if (stat(path, &sb) != 0) {
                printf("# %s links to %.*s, which is not in the tree\n",
                       doc_names[i], (int)(e - t), t);
                broken++;
            }
        }
    }
    regfree(&re);
    ok(seen > 5 && missing == 0, "every path the docs name exists");
    ok(links > 5 && broken == 0, "every relative link of the docs leads "
       "to a file of the tree");
}

/* Files under dir (recursively) that name an original by number. */
static int scan_sources(const char *dir, const regex_t *re)
{
    DIR *d = opendir(dir);
    if (!d) {
        return 0;
    }
    int bad = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') {
            continue;
        }
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        struct stat sb;
        if (lstat(path, &sb) != 0) {
            continue;
        }
        if (S_ISDIR(sb.st_mode)) {
            if (strncmp(e->d_name, "corpus", 6) != 0) {
                bad += scan_sources(path, re);
            }
            continue;
        }
        const char *ext = strrchr(e->d_name, '.');
        if (!S_ISREG(sb.st_mode) || !ext ||
            (strcmp(ext, ".c") && strcmp(ext, ".h") && strcmp(ext, ".md") &&
             strcmp(ext, ".build") && strcmp(ext, ".sh") &&
             strcmp(ext, ".in"))) {
            continue;
        }
        char *text = slurp(path);
        if (text && regexec(re, text, 0, NULL, 0) == 0) {
            printf("# %s names an original by number\n", path);
            bad++;
        }
        free(text);
    }
    closedir(d);
    return bad;
}

static void sample_report(void *ctx, bool cond, const char *what)
{
    (void)ctx;
    ok(cond, what);
}

/* The comparison of samples itself: what may differ is masked, nothing
 * else. */
static void check_comparison(void)
{
    bool all = true;
    /* A measured time in prose, a time column, a vary= column. */
    all &= samples_equal("  Training: 5 epochs in 1.76 s, accuracy 0.8563\n",
                         "  Training: 5 epochs in 12.5 s, accuracy 0.8563\n",
                         NULL, NULL, NULL, NULL);
    all &= samples_equal("layer   macs  latency_ms  bound\n"
                         "dense1  50176      0.0123  memory\n",
                         "layer   macs  latency_ms  bound\n"
                         "dense1  50176     0.11234  memory\n",
                         NULL, NULL, NULL, NULL);
    all &= samples_equal("layer  gmacs  bound\n"
                         "fc       1.5  memory\n",
                         "layer  gmacs  bound\n"
                         "fc      2.25  compute\n",
                         "gmacs,bound", NULL, NULL, NULL);
    all &= samples_equal("  training_time_s   0.035930; x 2\n",
                         "  training_time_s   0.041200; x 2\n",
                         NULL, NULL, NULL, NULL);
    /* An accuracy, a count, a word, a missing or extra line differ. */
    int line = 0;
    all &= !samples_equal("accuracy 0.8563\n", "accuracy 0.8564\n", NULL,
                          &line, NULL, NULL) && line == 1;
    all &= !samples_equal("layer   macs  latency_ms\ndense1  50176  0.1\n",
                          "layer   macs  latency_ms\ndense1  50177  0.1\n",
                          NULL, &line, NULL, NULL) && line == 2;
    all &= !samples_equal("fits rpi4\n", "exceeds rpi4\n", NULL, NULL,
                          NULL, NULL);
    all &= !samples_equal("a\nb\n", "a\n", NULL, NULL, NULL, NULL);
    all &= !samples_equal("a\n", "a\nb\n", NULL, NULL, NULL, NULL);
    /* 5 steps is no time; 128 MB is no rate. */
    all &= !samples_equal("5 steps\n", "6 steps\n", NULL, NULL, NULL, NULL);
    all &= !samples_equal("128 MB\n", "64 MB\n", NULL, NULL, NULL, NULL);
    ok(all, "samples: a measured time may differ, any other number or "
       "word may not");
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s ROOT APP...\n", argv[0]);
        return 2;
    }
    const char *root = argv[1];
    char path[600];
    ndocs = samples_docs(root, &doc_names);
    doc_texts = calloc((size_t)ndocs, sizeof *doc_texts);
    for (int i = 0; i < ndocs; i++) {
        snprintf(path, sizeof path, "%s/%s", root, doc_names[i]);
        doc_texts[i] = slurp(path);
        if (!doc_texts[i]) {
            printf("Bail out! cannot read %s\n", path);
            return 1;
        }
    }
    const char *readme = doc_texts[0];
    int lines = 0;
    for (const char *p = readme; (p = strchr(p, '\n')); p++) {
        lines++;
    }
    printf("# README.md: %d lines; docs/: %d files\n", lines, ndocs - 1);
    ok(lines <= 200, "the README is at most 200 lines");
    ok(ndocs > 5, "the reference is in docs/");

    const int apps = argc - 2;
    for (int i = 0; i < apps; i++) {
        const char *slash = strrchr(argv[2 + i], '/');
        check_options(argv[2 + i], slash ? slash + 1 : argv[2 + i]);
    }
    check_paths(root);

    /* The file that shows pkg-config shows meson install above it. */
    int shown = 0, ordered = 0;
    for (int i = 0; i < ndocs; i++) {
        const char *install = strstr(doc_texts[i], "meson install");
        const char *pc = strstr(doc_texts[i], "pkg-config --");
        if (pc) {
            shown++;
            ordered += install && install < pc;
        }
    }
    ok(shown > 0 && ordered == shown, "meson install comes before pkg-config");

    regex_t re;
    regcomp(&re, "seeds? 00[0-9]|DESIGN", REG_EXTENDED | REG_ICASE);
    int named = 0;
    for (int i = 0; i < ndocs; i++) {
        if (regexec(&re, doc_texts[i], 0, NULL, 0) == 0) {
            printf("# %s names an original by number or a DESIGN file\n",
                   doc_names[i]);
            named++;
        }
    }
    ok(named == 0, "the docs name no original by number and no DESIGN file");
    regfree(&re);

    regcomp(&re, "seeds? 00[0-9]", REG_EXTENDED | REG_ICASE);
    int bad = 0;
    static const char *const dirs[] = {"libmemest", "libkernels",
                                       "libprofile", "libartifacts",
                                       "apps", "tests", "internal",
                                       "scripts", "docs"};
    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", root, dirs[i]);
        bad += scan_sources(path, &re);
    }
    regfree(&re);
    ok(bad == 0, "no header, comment or test names an original by number");

    /* The samples last: they run the apps, the longest part. */
    check_comparison();
    int samples = 0;
    for (int i = 0; i < ndocs; i++) {
        const int k = samples_file(root, doc_names[i], argv + 2, apps, false,
                                   sample_report, NULL);
        samples += k > 0 ? k : 0;
    }
    ok(samples > 5 && strstr(readme, "<!-- sample"),
       "the docs show samples of the apps' output, the README at least one");

    for (int i = 0; i < ndocs; i++) {
        free(doc_texts[i]);
    }
    free(doc_texts);
    samples_docs_free(doc_names, ndocs);
    printf("1..%d\n", test_no);
    return failed ? 1 : 0;
}
