/* The README against the programs and the tree: every option an app's
 * --help lists is documented in that app's README section, every path of
 * the tree the README names exists, `meson install` comes before
 * pkg-config, and neither the README, the --help texts nor any source file
 * speaks of the originals by their file numbers instead of by name.
 * argv: SOURCE_ROOT MEMFIT LAYERWISE STREAM BENCH [APP...]. TAP output. */
#include <dirent.h>
#include <regex.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "run.h"

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

static void check_options(const char *readme, const char *exe,
                          const char *name)
{
    char *argv[] = {(char *)exe, "--help", NULL};
    struct run_result r;
    run_argv(argv, &r);
    char *sec = section(readme, name);
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
            printf("# %s: %s is not in the README's '### %s' section\n",
                   exe, opt, name);
            missing++;
        }
    }
    regfree(&re);
    char what[200];
    snprintf(what, sizeof what, "%s: every option --help names is in its "
             "README section", name);
    ok(r.status == 0 && seen > 5 && missing == 0, what);

    regcomp(&re, "seeds? 00[0-9]", REG_EXTENDED | REG_ICASE);
    snprintf(what, sizeof what, "%s: --help names no original by number",
             name);
    ok(regexec(&re, r.out, 0, NULL, 0) != 0, what);
    regfree(&re);
    free(sec);
    run_free(&r);
}

/* Every token of the README that starts like a path of the tree exists. */
static void check_paths(const char *root, const char *readme)
{
    regex_t re;
    regcomp(&re,
            "(^|[^A-Za-z0-9_./-])((scripts|tests|apps|internal|lib[a-z]+|"
            "\\.ci)/[A-Za-z0-9_./<>*-]*)",
            REG_EXTENDED | REG_NEWLINE);
    regmatch_t m[3];
    int missing = 0, seen = 0;
    for (const char *p = readme; regexec(&re, p, 3, m, 0) == 0;
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
            printf("# the README names %s, which is not in the tree\n", rel);
            missing++;
        }
    }
    regfree(&re);
    ok(seen > 5 && missing == 0, "every path the README names exists");
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

int main(int argc, char **argv)
{
    if (argc < 6) {
        fprintf(stderr, "usage: %s ROOT MEMFIT LAYERWISE STREAM BENCH "
                "[APP...]\n", argv[0]);
        return 2;
    }
    const char *root = argv[1];
    char path[600];
    snprintf(path, sizeof path, "%s/README.md", root);
    char *readme = slurp(path);
    if (!readme) {
        printf("Bail out! cannot read %s\n", path);
        return 1;
    }
    /* Two checks per app; the apps after the first four are named by
     * their program file (edgefit-train). */
    printf("1..%d\n", 12 + 2 * (argc - 6));
    static const char *const names[] = {"edgefit-memfit", "edgefit-layerwise",
                                        "edgefit-stream", "edgefit-bench"};
    for (int i = 0; i < argc - 2; i++) {
        const char *slash = strrchr(argv[2 + i], '/');
        check_options(readme, argv[2 + i],
                      i < 4 ? names[i] : slash ? slash + 1 : argv[2 + i]);
    }
    check_paths(root, readme);

    const char *install = strstr(readme, "meson install");
    const char *pc = strstr(readme, "pkg-config --");
    ok(install && pc && install < pc, "meson install comes before pkg-config");

    regex_t re;
    regcomp(&re, "seeds? 00[0-9]|DESIGN", REG_EXTENDED | REG_ICASE);
    ok(regexec(&re, readme, 0, NULL, 0) != 0,
       "the README names no original by number and no DESIGN file");
    regfree(&re);

    regcomp(&re, "seeds? 00[0-9]", REG_EXTENDED | REG_ICASE);
    int bad = 0;
    static const char *const dirs[] = {"libmemest", "libkernels",
                                       "libprofile", "libartifacts",
                                       "apps", "tests", "internal",
                                       "scripts"};
    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", root, dirs[i]);
        bad += scan_sources(path, &re);
    }
    regfree(&re);
    ok(bad == 0, "no header, comment or test names an original by number");
    free(readme);
    return failed ? 1 : 0;
}
