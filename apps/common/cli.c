#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

#include "edgefit/artifacts.h"
#include "edgefit/kernels.h"
#include "edgefit/memest.h"
#include "edgefit/profile.h"

static const char *program = "edgefit";

void cli_set_program(const char *name)
{
    const char *slash = strrchr(name, '/');
    program = slash ? slash + 1 : name;
}

const char *cli_program(void)
{
    return program;
}

#if defined(__GNUC__)
__attribute__((format(printf, 2, 0)))
#endif
static void report(const char *kind, const char *fmt, va_list ap)
{
    fprintf(stderr, "%s: %s", program, kind);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
}

/* Whether an error said the run ran out of memory: the exit code is then
 * 1 (cli_exit()), whatever path carried the failure back. */
static bool nomem_seen;

/* Whether a message already gives a size in bytes: a number followed by
 * " bytes" or "-byte" (tests/faults/sweep.c's --require-bytes reads the
 * same). */
static bool names_bytes(const char *text)
{
    for (const char *p = text; *p; p++) {
        if (p > text && p[-1] >= '0' && p[-1] <= '9' &&
            (strncmp(p, " bytes", 6) == 0 || strncmp(p, "-byte", 5) == 0)) {
            return true;
        }
    }
    return false;
}

void cli_error(const char *fmt, ...)
{
    /* formatted once into a buffer (no allocation) to look for the
     * words; a longer message is still printed whole */
    char text[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    if (strstr(text, "out of memory") || strstr(text, strerror(ENOMEM))) {
        nomem_seen = true;
        /* a message that says so but not how much: the size the
         * allocation wrappers recorded (the text fits: no sentence of
         * ours is near 1000 bytes) */
        const size_t bytes = cli_nomem_bytes();
        if (bytes != 0 && !names_bytes(text) &&
            strlen(text) + 1 < sizeof text) {
            fprintf(stderr, "%s: %s (%zu bytes)\n", program, text, bytes);
            return;
        }
    }
    va_start(ap, fmt);
    report("", fmt, ap);
    va_end(ap);
}

_Thread_local size_t cli_nomem_last;
_Thread_local unsigned long long cli_nomem_time;

size_t cli_nomem_bytes(void)
{
    /* the newest failure of the app's and the libraries' (an older one
     * was done without, and its size is not this failure's) */
    const size_t bytes[5] = {cli_nomem_last, memest_nomem_bytes(),
                             prof_nomem_bytes(), art_nomem_bytes(),
                             kern_nomem_bytes()};
    const unsigned long long when[5] = {cli_nomem_time, memest_nomem_when(),
                                        prof_nomem_when(), art_nomem_when(),
                                        kern_nomem_when()};
    size_t b = 0;
    unsigned long long newest = 0;
    for (int i = 0; i < 5; i++) {
        if (when[i] > newest || (when[i] == newest && bytes[i] > b)) {
            b = bytes[i];
            newest = when[i];
        }
    }
    return b;
}

int cli_nomem(const char *what, size_t bytes)
{
    cli_error("out of memory: %s (%zu bytes)", what, bytes);
    return CLI_EXIT_FAILURE;
}

int cli_exit(int rc)
{
    /* out of memory is a runtime failure, not bad input, even where the
     * failure came back through a path that reports malformed input */
    return nomem_seen && rc == CLI_EXIT_USAGE ? CLI_EXIT_FAILURE : rc;
}

void cli_warn(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    report("warning: ", fmt, ap);
    va_end(ap);
}

bool cli_progress_wanted(bool quiet)
{
    return !quiet && isatty(STDERR_FILENO);
}

void cli_progress(bool on, unsigned done, unsigned total, const char *what)
{
    if (!on) {
        return;
    }
    if (what) {
        const unsigned pct = total ? 100u * (done < total ? done : total) /
                                         total
                                   : 0u;
        fprintf(stderr, "\r\033[K%s: [%3u%%] %s", program, pct, what);
    } else {
        fputs("\r\033[K", stderr);
    }
    fflush(stderr);
}

/* A bound of an accepted range as a person writes it: an integer as an
 * integer (1048576, not 1.04858e+06), other numbers with the digits that
 * tell them apart, and no number at all for an open end ("no upper limit"
 * rather than 18446744073709551615 or inf). */
static void format_bound(char *buf, size_t cap, double v)
{
    if (isinf(v)) {
        snprintf(buf, cap, "%s", v > 0 ? "no upper limit" : "no lower limit");
    } else if (v == floor(v) && fabs(v) < 9007199254740992.0) {
        snprintf(buf, cap, "%.0f", v);
    } else {
        snprintf(buf, cap, "%.15g", v);
    }
}

static void format_u64_bound(char *buf, size_t cap, uint64_t v)
{
    if (v == UINT64_MAX) {
        snprintf(buf, cap, "no upper limit");
    } else {
        snprintf(buf, cap, "%llu", (unsigned long long)v);
    }
}

/* "[1, 4294967295]", "1 or more" when there is no upper end. */
static void format_u64_range(char *buf, size_t cap, uint64_t min,
                             uint64_t max)
{
    char hi[32];
    format_u64_bound(hi, sizeof hi, max);
    if (max == UINT64_MAX) {
        snprintf(buf, cap, "%llu or more, no upper limit",
                 (unsigned long long)min);
    } else {
        snprintf(buf, cap, "[%llu, %s]", (unsigned long long)min, hi);
    }
}

bool cli_parse_u64(const char *opt, const char *text, uint64_t min,
                   uint64_t max, uint64_t *out)
{
    char *end = NULL;
    char range[64];
    errno = 0;
    /* strtoull accepts a sign and wraps "-1"; only plain digits pass. */
    const bool digits = text[0] >= '0' && text[0] <= '9';
    unsigned long long v = digits ? strtoull(text, &end, 10) : 0;
    format_u64_range(range, sizeof range, min, max);
    if (!digits || !end || *end) {
        cli_error("%s: '%s' is not a whole number", opt, text);
        return false;
    }
    if (errno == ERANGE) {
        /* All digits, but more than 64 bits hold: a whole number still,
         * only out of range. */
        cli_error("%s: %s is out of range: accepted %s", opt, text, range);
        return false;
    }
    if (v < min || v > max) {
        cli_error("%s: %llu is out of range: accepted %s", opt, v, range);
        return false;
    }
    *out = v;
    return true;
}

bool cli_parse_double(const char *opt, const char *text, double min,
                      double max, double *out)
{
    char *end = NULL;
    errno = 0;
    double v = strtod(text, &end);
    if (end == text || *end || !isfinite(v)) {
        cli_error("%s: '%s' is not a finite number", opt, text);
        return false;
    }
    if (v < min || v > max) {
        char lo[32], hi[32];
        format_bound(lo, sizeof lo, min);
        format_bound(hi, sizeof hi, max);
        if (isinf(max)) {
            cli_error("%s: %s is out of range: accepted %s or more, %s", opt,
                      text, lo, hi);
        } else if (isinf(min)) {
            cli_error("%s: %s is out of range: accepted up to %s", opt, text,
                      hi);
        } else {
            cli_error("%s: %s is out of range: accepted [%s, %s]", opt, text,
                      lo, hi);
        }
        return false;
    }
    *out = v;
    return true;
}

bool cli_parse_positive(const char *opt, const char *text, double max,
                        double *out)
{
    double v = 0.0;
    if (!cli_parse_double(opt, text, -HUGE_VAL, HUGE_VAL, &v)) {
        return false;
    }
    /* -0.0 compares equal to 0 and is refused with it. */
    if (!(v > 0.0)) {
        cli_error("%s: %s must be above 0", opt, text);
        return false;
    }
    if (v > max) {
        char hi[32];
        format_bound(hi, sizeof hi, max);
        cli_error("%s: %s is above the largest accepted value %s", opt, text,
                  hi);
        return false;
    }
    *out = v;
    return true;
}

bool cli_parse_format(const char *opt, const char *text,
                      enum cli_format *out)
{
    static const char *const names[] = {"table", "csv", "json"};
    for (int i = 0; i < 3; i++) {
        if (strcmp(text, names[i]) == 0) {
            *out = (enum cli_format)i;
            return true;
        }
    }
    cli_error("%s: '%s' is not one of table, csv, json", opt, text);
    return false;
}

int cli_common_option(int c, const struct cli_app *app, char **argv,
                      struct cli_common *co)
{
    switch (c) {
    case CLI_OPT_FORMAT:
        return cli_parse_format("--format", optarg, &co->format)
                   ? CLI_EXIT_OK
                   : CLI_EXIT_USAGE;
    case CLI_OPT_OUT:
        if (!*optarg) {
            cli_error("--out: the folder name is empty");
            return CLI_EXIT_USAGE;
        }
        co->out_dir = optarg;
        return CLI_EXIT_OK;
    case CLI_OPT_WEIGHTS:
        if (!*optarg) {
            cli_error("--weights: the file name is empty");
            return CLI_EXIT_USAGE;
        }
        co->weights = optarg;
        return CLI_EXIT_OK;
    case CLI_OPT_STRICT:
        co->strict = true;
        return CLI_EXIT_OK;
    case CLI_OPT_QUIET:
        co->quiet = true;
        return CLI_EXIT_OK;
    case CLI_OPT_HELP:
    case 'h':
        app->usage(stdout);
        exit(CLI_EXIT_OK);
    case CLI_OPT_VERSION:
        printf("%s %s\n", app->name, app->version);
        if (app->details) {
            app->details(stdout);
        }
        exit(fflush(stdout) == 0 ? CLI_EXIT_OK : CLI_EXIT_FAILURE);
    default:
        /* getopt_long sets optopt for a known option missing its value
         * (and for unknown short ones, which the apps do not have). */
        if (optopt) {
            cli_error("option needs a value or is unknown: %s",
                      argv[optind - 1]);
        } else {
            cli_error("unknown option: %s", argv[optind - 1]);
        }
        fprintf(stderr, "Try '%s --help'.\n", program);
        return CLI_EXIT_USAGE;
    }
}

/* The option of opts that "--name" (name up to '=' or the end, len
 * bytes) selects as getopt_long() would: an exact name, else the only
 * one it abbreviates; NULL when none or several. */
static const struct option *find_long(const struct option *opts,
                                      const char *name, size_t len)
{
    const struct option *hit = NULL;
    for (const struct option *o = opts; o->name; o++) {
        if (strncmp(o->name, name, len) != 0) {
            continue;
        }
        if (strlen(o->name) == len) {
            return o;
        }
        if (hit && (hit->val != o->val || hit->flag != o->flag)) {
            return NULL; /* ambiguous: getopt_long reports it */
        }
        hit = o;
    }
    return hit;
}

static bool is_repeatable(const char *name, const char *const *repeatable)
{
    for (size_t i = 0; repeatable && repeatable[i]; i++) {
        if (strcmp(name, repeatable[i]) == 0) {
            return true;
        }
    }
    return false;
}

int cli_refuse_repeats(int argc, char **argv, const struct option *opts,
                       const char *const *repeatable)
{
    /* The first argument that gave each option, by position in opts. */
    size_t n = 0;
    while (opts[n].name) {
        n++;
    }
    /* The value each option was first given (NULL: not yet; "" for one
     * that takes none), by position in opts. */
    const char *first[256];
    if (n > sizeof first / sizeof first[0]) {
        n = sizeof first / sizeof first[0];
    }
    for (size_t i = 0; i < n; i++) {
        first[i] = NULL;
    }
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--") == 0) {
            break; /* operands follow */
        }
        if (strncmp(a, "--", 2) != 0) {
            continue; /* an operand, or a short option (-h) */
        }
        const char *name = a + 2;
        const char *eq = strchr(name, '=');
        const size_t len = eq ? (size_t)(eq - name) : strlen(name);
        const struct option *o = find_long(opts, name, len);
        if (!o) {
            continue; /* unknown or ambiguous: getopt_long says so */
        }
        const char *value = eq ? eq + 1 : "";
        if (o->has_arg == required_argument && !eq) {
            if (i + 1 >= argc) {
                break; /* missing: getopt_long says so */
            }
            value = argv[++i]; /* its value, whatever it looks like */
        }
        /* aliases (two names, one value) count as one option */
        size_t k = 0;
        while (k < n && !(opts[k].val == o->val && opts[k].flag == o->flag &&
                          opts[k].has_arg == o->has_arg)) {
            k++;
        }
        if (k == n || is_repeatable(opts[k].name, repeatable)) {
            continue;
        }
        if (first[k] && o->has_arg == no_argument) {
            cli_error("--%s given twice: give it once", opts[k].name);
        } else if (first[k]) {
            cli_error("--%s given twice ('%s', then '%s'): give it once",
                      opts[k].name, first[k], value);
        }
        if (first[k]) {
            fprintf(stderr, "Try '%s --help'.\n", program);
            return CLI_EXIT_USAGE;
        }
        first[k] = value;
    }
    return CLI_EXIT_OK;
}

const char *cli_file_kind(unsigned mode)
{
    return S_ISDIR(mode)    ? "a folder"
           : S_ISFIFO(mode) ? "a FIFO"
           : S_ISSOCK(mode) ? "a socket"
           : S_ISCHR(mode)  ? "a character device"
           : S_ISBLK(mode)  ? "a block device"
           : S_ISREG(mode)  ? "a file"
                            : "not a file";
}

bool cli_check_regular_file(const char *opt, const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        return true; /* the reader says why, with the system's reason */
    }
    if (S_ISREG(st.st_mode)) {
        return true;
    }
    cli_error("%s %s: %s, not a regular file", opt, path,
              cli_file_kind(st.st_mode));
    return false;
}

int cli_no_operands(int argc, char **argv)
{
    if (optind < argc) {
        cli_error("unexpected argument: %s", argv[optind]);
        return CLI_EXIT_USAGE;
    }
    return CLI_EXIT_OK;
}

/* Print why opt DIR cannot be written: at is DIR itself or the ancestor
 * that stops it, err the system's reason. A symbolic link to a missing
 * target is named as such (stat() says only ENOENT, which would read as
 * if nothing were there, yet nothing can be created there either). */
static bool refuse(const char *opt, const char *dir, const char *at, int err)
{
    struct stat lsb;
    const char *why = "";
    if (err == ENOENT && lstat(at, &lsb) == 0 && S_ISLNK(lsb.st_mode)) {
        why = " (a symbolic link whose target is missing)";
    } else if (err == ENOTDIR) {
        why = " (a file, not a folder)";
    }
    if (strcmp(at, dir) == 0) {
        cli_error("%s %s: %s%s", opt, dir, strerror(err), why);
    } else {
        cli_error("%s %s: cannot create it: %s: %s%s", opt, dir, at,
                  strerror(err), why);
    }
    return false;
}

bool cli_check_out_dir(const char *opt, const char *dir)
{
    /* on the stack: a check that could run out of memory would have to
     * tell that apart from a bad folder */
    char p[PATH_MAX];
    if (strlen(dir) >= sizeof p) {
        return refuse(opt, dir, dir, ENAMETOOLONG);
    }
    strcpy(p, dir);
    /* From dir up to the nearest existing path: that one must be a folder
     * we may create entries in, and nothing on the way may be a link to
     * nowhere. Nothing is created. */
    bool ok = true;
    for (;;) {
        struct stat st, lst;
        if (stat(p, &st) == 0) {
            if (!S_ISDIR(st.st_mode)) {
                ok = refuse(opt, dir, p, ENOTDIR);
            } else if (access(p, W_OK | X_OK) != 0) {
                /* (root passes on anything but a read-only mount) */
                ok = refuse(opt, dir, p, errno);
            }
            break;
        }
        const int err = errno;
        if (err != ENOENT || (lstat(p, &lst) == 0 && S_ISLNK(lst.st_mode)) ||
            strcmp(p, ".") == 0 || strcmp(p, "/") == 0) {
            ok = refuse(opt, dir, p, err); /* ENOTDIR, EACCES, ELOOP... */
            break;
        }
        /* Drop trailing slashes, then the last component. */
        size_t n = strlen(p);
        while (n > 1 && p[n - 1] == '/') {
            p[--n] = '\0';
        }
        char *slash = strrchr(p, '/');
        if (!slash) {
            strcpy(p, ".");
        } else if (slash == p) {
            p[1] = '\0';
        } else {
            *slash = '\0';
        }
    }
    return ok;
}

bool cli_check_out_file(const char *opt, const char *path)
{
    struct stat st;
    if (!*path) {
        cli_error("%s: the file name is empty", opt);
        return false;
    }
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        cli_error("%s %s: is a folder", opt, path);
        return false;
    }
    char dir[PATH_MAX];
    if (strlen(path) >= sizeof dir) {
        return refuse(opt, path, path, ENAMETOOLONG);
    }
    strcpy(dir, path);
    char *slash = strrchr(dir, '/');
    if (!slash) {
        strcpy(dir, ".");
    } else if (slash == dir) {
        dir[1] = '\0';
    } else {
        *slash = '\0';
    }
    return cli_check_out_dir(opt, dir);
}

int cli_out_check(const char *dir)
{
    if (!dir) {
        return CLI_EXIT_OK;
    }
    if (!cli_check_out_dir("--out", dir)) {
        return CLI_EXIT_USAGE;
    }
    /* held until exit: a second run on the same folder stops at once */
    return cli_out_lock(dir);
}

void cli_print_wrapped(FILE *f, const char *text, int indent, int width)
{
    int col = fprintf(f, "%*s", indent, "");
    bool line_empty = true;
    const char *p = text;
    while (*p) {
        while (*p == ' ') {
            p++;
        }
        const int len = (int)strcspn(p, " ");
        if (len == 0) {
            break;
        }
        if (!line_empty && col + 1 + len > width) {
            col = fprintf(f, "\n%*s", indent + 2, "") - 1;
            line_empty = true;
        }
        if (!line_empty) {
            fputc(' ', f);
            col++;
        }
        fwrite(p, 1, (size_t)len, f);
        col += len;
        line_empty = false;
        p += len;
    }
    fputc('\n', f);
}

bool cli_split_list(const char *opt, const char *text, char (*items)[32],
                       size_t cap, size_t *n)
{
    *n = 0;
    const char *p = text;
    for (;;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len == 0 || len >= 32) {
            cli_error("%s: '%s' is not a comma-separated list", opt, text);
            return false;
        }
        if (*n == cap) {
            cli_error("%s: at most %zu values", opt, cap);
            return false;
        }
        memcpy(items[*n], p, len);
        items[(*n)++][len] = '\0';
        if (!end) {
            return true;
        }
        p = end + 1;
    }
}
