/* --out under faults: a run killed by SIGINT, SIGTERM or SIGKILL at a
 * random moment, two runs on one folder at once, and a disk that fills at
 * any byte each leave the folder all old or all new, never a mix, and
 * (but for SIGKILL) nothing beside it.
 *
 * usage: test-out LAYERWISE MEMFIT
 * Old and new are runs of two different models (mlp:784-64-10 and
 * smallcnn): every file of one differs from the other's, so a mix shows as
 * some files equal to the old run's and some not. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "run.h"

static int failures;
#define CHECK(cond, ...)                                                     \
    do {                                                                    \
        if (!(cond)) {                                                      \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);            \
            fprintf(stderr, __VA_ARGS__);                                   \
            fputc('\n', stderr);                                            \
            failures++;                                                     \
        }                                                                   \
    } while (0)

/* ---- a folder's files ---- */

#define FILES_MAX 32
struct snap {
    int n;
    char name[FILES_MAX][256];
    char *data[FILES_MAX];
    size_t len[FILES_MAX];
};

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        return NULL;
    }
    size_t cap = 1 << 16, n = 0, got;
    char *s = malloc(cap);
    while (s && (got = fread(s + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            char *t = realloc(s, cap *= 2);
            if (!t) {
                free(s);
                s = NULL;
            }
            s = t;
        }
    }
    fclose(f);
    *len = n;
    return s;
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
    return strcmp((*a)->d_name, (*b)->d_name);
}

/* The files of dir, sorted by name; n -1 when dir is missing. */
static void snap_take(const char *dir, struct snap *s)
{
    memset(s, 0, sizeof *s);
    struct dirent **list;
    const int k = scandir(dir, &list, NULL, by_name);
    if (k < 0) {
        s->n = -1;
        return;
    }
    for (int i = 0; i < k; i++) {
        if (list[i]->d_name[0] != '.' && s->n < FILES_MAX) {
            char path[4096];
            snprintf(path, sizeof path, "%s/%s", dir, list[i]->d_name);
            snprintf(s->name[s->n], sizeof s->name[0], "%s",
                     list[i]->d_name);
            s->data[s->n] = slurp(path, &s->len[s->n]);
            s->n++;
        }
        free(list[i]);
    }
    free(list);
}

static void snap_free(struct snap *s)
{
    for (int i = 0; i < s->n; i++) {
        free(s->data[i]);
    }
    memset(s, 0, sizeof *s);
}

static bool same_names(const struct snap *a, const struct snap *b)
{
    if (a->n != b->n) {
        return false;
    }
    for (int i = 0; i < a->n; i++) {
        if (strcmp(a->name[i], b->name[i]) != 0) {
            return false;
        }
    }
    return true;
}

static bool same_file(const struct snap *a, int i, const struct snap *b,
                      int j)
{
    return a->data[i] && b->data[j] && a->len[i] == b->len[j] &&
           memcmp(a->data[i], b->data[j], a->len[i]) == 0;
}

static bool equal(const struct snap *a, const struct snap *b)
{
    if (!same_names(a, b)) {
        return false;
    }
    for (int i = 0; i < a->n; i++) {
        if (!same_file(a, i, b, i)) {
            return false;
        }
    }
    return true;
}

enum state { OLD, NEW, MIX };

/* now is old exactly, or has new's names with no file of old's (new's
 * contents may differ run to run: measured times) */
static enum state judge(const struct snap *now, const struct snap *old,
                        const struct snap *new_names)
{
    if (equal(now, old)) {
        return OLD;
    }
    if (!same_names(now, new_names)) {
        return MIX;
    }
    for (int i = 0; i < now->n; i++) {
        for (int j = 0; j < old->n; j++) {
            if (strcmp(now->name[i], old->name[j]) == 0 &&
                same_file(now, i, old, j)) {
                return MIX;
            }
        }
        if (now->len[i] == 0) {
            return MIX; /* a member cut short */
        }
    }
    return NEW;
}

/* Entries of the work folder other than "out": temporaries left. */
static int leftovers(const char *work, char *first, size_t len)
{
    DIR *d = opendir(work);
    struct dirent *e;
    int n = 0;
    while (d && (e = readdir(d))) {
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") &&
            strcmp(e->d_name, "out")) {
            if (n++ == 0) {
                snprintf(first, len, "%s", e->d_name);
            }
        }
    }
    if (d) {
        closedir(d);
    }
    return n;
}

static void clear_leftovers(const char *work)
{
    DIR *d = opendir(work);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (e->d_name[0] == '.' && strcmp(e->d_name, ".") &&
            strcmp(e->d_name, "..")) {
            char path[4096];
            snprintf(path, sizeof path, "%s/%s", work, e->d_name);
            run_rmdir(path);
            unlink(path);
        }
    }
    if (d) {
        closedir(d);
    }
}

/* ---- running ---- */

static pid_t spawn(char *const argv[], const char *err_path)
{
    const pid_t pid = fork();
    if (pid == 0) {
        const int null = open("/dev/null", O_RDWR);
        const int err = err_path
                            ? open(err_path, O_WRONLY | O_CREAT | O_TRUNC,
                                   0644)
                            : null;
        dup2(null, 0);
        dup2(null, 1);
        dup2(err, 2);
        execv(argv[0], argv);
        _exit(127);
    }
    return pid;
}

static int wait_status(pid_t pid)
{
    int ws;
    while (waitpid(pid, &ws, 0) < 0 && errno == EINTR) {
    }
    return WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static int run_quiet(char *const argv[])
{
    return wait_status(spawn(argv, NULL));
}

/* ---- the tests ---- */

/* Signals at random moments of a run that replaces an old folder. */
static void test_signals(const char *layerwise, const char *work)
{
    char out[4096], ref[4096];
    snprintf(out, sizeof out, "%s/out", work);
    snprintf(ref, sizeof ref, "%s/ref", work);
    char *old_run[] = {(char *)layerwise, "--model", "mlp:784-64-10",
                       "--repeats", "1", "--warmup", "0", "--min-sample-ms",
                       "0", "--quiet", "--out", out, NULL};
    char *new_run[] = {(char *)layerwise, "--model", "smallcnn", "--batch",
                       "4", "--repeats", "1", "--warmup", "0",
                       "--min-sample-ms", "0", "--quiet", "--out", out, NULL};
    char *ref_run[] = {(char *)layerwise, "--model", "smallcnn", "--batch",
                       "4", "--repeats", "1", "--warmup", "0",
                       "--min-sample-ms", "0", "--quiet", "--out", ref, NULL};
    CHECK(run_quiet(ref_run) == 0, "the reference run failed");
    struct snap new_names, old, now;
    snap_take(ref, &new_names);
    run_rmdir(ref);
    CHECK(new_names.n > 2, "the new run wrote %d files", new_names.n);
    CHECK(run_quiet(old_run) == 0, "the old run failed");
    snap_take(out, &old);
    /* how long a run lasts, to spread the signals over it */
    const double t0 = now_s();
    CHECK(run_quiet(new_run) == 0, "an unkilled run failed");
    const double span = now_s() - t0;
    run_rmdir(out);
    CHECK(run_quiet(old_run) == 0, "the old run failed");
    snap_free(&old);
    snap_take(out, &old);

    static const int sigs[] = {SIGINT, SIGTERM, SIGINT, SIGTERM, SIGKILL};
    int olds = 0, news = 0, mixes = 0, finished = 0, killed_left = 0;
    uint64_t rng = 12345;
    const int runs = 60;
    for (int i = 0; i < runs; i++) {
        const int sig = sigs[i % 5];
        const double at = span * 1.2 * (double)(run_lcg(&rng) % 10000) / 1e4;
        const pid_t pid = spawn(new_run, NULL);
        struct timespec d = {(time_t)at, (long)((at - (time_t)at) * 1e9)};
        nanosleep(&d, NULL);
        kill(pid, sig);
        const int st = wait_status(pid);
        finished += st == 0;
        snap_take(out, &now);
        const enum state s = judge(&now, &old, &new_names);
        char first[256] = "";
        const int left = leftovers(work, first, sizeof first);
        if (sig != SIGKILL) {
            CHECK(left == 0,
                  "signal %d at %.3f s left %d entries beside --out (%s)",
                  sig, at, left, first);
        } else {
            killed_left += left > 0;
            clear_leftovers(work);
        }
        CHECK(s != MIX, "signal %d at %.3f s (of %.3f) left a mix in --out",
              sig, at, span);
        olds += s == OLD;
        news += s == NEW;
        mixes += s == MIX;
        snap_free(&now);
        if (s != OLD) {
            /* back to the old folder for the next kill */
            run_rmdir(out);
            CHECK(run_quiet(old_run) == 0, "the old run failed");
            snap_free(&old);
            snap_take(out, &old);
        }
    }
    printf("signals: %d runs over %.3f s: %d left the old folder, %d the "
           "new, %d a mix; %d finished first; %d SIGKILLs left a "
           "temporary\n",
           runs, span, olds, news, mixes, finished, killed_left);
    CHECK(olds > 0 && news > 0,
          "the kills did not cover both sides of the commit");
    snap_free(&old);
    snap_free(&new_names);
    run_rmdir(out);
}

/* Two runs on one folder at once; then one against a held lock. */
static void test_concurrent(const char *memfit, const char *work)
{
    char out[4096], ra[4096], rb[4096], ea[4096], eb[4096];
    snprintf(out, sizeof out, "%s/out", work);
    snprintf(ra, sizeof ra, "%s/ref-a", work);
    snprintf(rb, sizeof rb, "%s/ref-b", work);
    snprintf(ea, sizeof ea, "%s/.err-a", work);
    snprintf(eb, sizeof eb, "%s/.err-b", work);
    char *a[] = {(char *)memfit, "--model", "mlp:784-64-10", "--out", out,
                 NULL};
    char *b[] = {(char *)memfit, "--model", "smallcnn", "--out", out, NULL};
    char *a_ref[] = {(char *)memfit, "--model", "mlp:784-64-10", "--out", ra,
                     NULL};
    char *b_ref[] = {(char *)memfit, "--model", "smallcnn", "--out", rb,
                     NULL};
    CHECK(run_quiet(a_ref) == 0 && run_quiet(b_ref) == 0,
          "the reference runs failed");
    struct snap sa, sb, now;
    snap_take(ra, &sa);
    snap_take(rb, &sb);
    run_rmdir(ra);
    run_rmdir(rb);
    int losers = 0;
    for (int i = 0; i < 30; i++) {
        const pid_t pa = spawn(a, ea), pb = spawn(b, eb);
        const int st_a = wait_status(pa), st_b = wait_status(pb);
        size_t la, lb;
        char *err_a = slurp(ea, &la), *err_b = slurp(eb, &lb);
        snap_take(out, &now);
        CHECK(st_a == 0 || st_b == 0, "neither run finished (%d, %d)",
              st_a, st_b);
        CHECK(equal(&now, &sa) || equal(&now, &sb),
              "two runs left --out equal to neither run's files");
        if (st_a != 0) {
            losers++;
            CHECK(st_a == 1 && err_a &&
                      memmem(err_a, la, "another run is writing it", 25),
                  "the loser ended %d: %.*s", st_a, (int)la, err_a);
            CHECK(equal(&now, &sb), "the winner's files are not in --out");
        }
        if (st_b != 0) {
            losers++;
            CHECK(st_b == 1 && err_b &&
                      memmem(err_b, lb, "another run is writing it", 25),
                  "the loser ended %d: %.*s", st_b, (int)lb, err_b);
            CHECK(equal(&now, &sa), "the winner's files are not in --out");
        }
        free(err_a);
        free(err_b);
        snap_free(&now);
        char first[256] = "";
        unlink(ea);
        unlink(eb);
        CHECK(leftovers(work, first, sizeof first) == 0,
              "two runs left %s beside --out", first);
    }
    printf("concurrent: 30 pairs, %d runs refused as the loser\n", losers);

    /* the lock held by another process: the run says so, writes nothing */
    char lock[4096];
    snprintf(lock, sizeof lock, "%s/.out.lock", work);
    const int fd = open(lock, O_RDWR | O_CREAT, 0644);
    CHECK(fd >= 0 && flock(fd, LOCK_EX) == 0, "cannot hold the lock");
    struct snap before;
    snap_take(out, &before);
    struct run_result r;
    run_argv(a, &r);
    CHECK(r.status == 1 && strstr(r.err, "another run is writing it") &&
              strstr(r.err, "writes nothing"),
          "a run against a held lock ended %d: %s", r.status, r.err);
    snap_take(out, &now);
    CHECK(equal(&now, &before), "a refused run changed --out");
    snap_free(&now);
    snap_free(&before);
    run_free(&r);
    close(fd);
    unlink(lock);
    snap_free(&sa);
    snap_free(&sb);
    run_rmdir(out);
}

/* A disk full at any byte: the old folder stays as it was. */
static void test_full_disk(const char *memfit, const char *work)
{
    char out[4096];
    snprintf(out, sizeof out, "%s/out", work);
    char *a[] = {(char *)memfit, "--model", "mlp:784-64-10", "--out", out,
                 NULL};
    char *b[] = {(char *)memfit, "--model", "smallcnn", "--out", out, NULL};
    CHECK(run_quiet(a) == 0, "the old run failed");
    struct snap old, now;
    snap_take(out, &old);
    size_t biggest = 0;
    for (int i = 0; i < old.n; i++) {
        biggest = old.len[i] > biggest ? old.len[i] : biggest;
    }
    int refused = 0;
    for (long limit = 1; limit < (long)biggest * 3; limit += 7) {
        struct run_result r;
        run_argv_fsize(b, limit, &r);
        snap_take(out, &now);
        if (r.status != 0) {
            refused++;
            CHECK(r.status == 1, "a full disk at %ld bytes ended %d: %s",
                  limit, r.status, r.err);
            CHECK(equal(&now, &old),
                  "a full disk at %ld bytes changed the old --out", limit);
        }
        char first[256] = "";
        CHECK(leftovers(work, first, sizeof first) == 0,
              "a full disk at %ld bytes left %s", limit, first);
        run_free(&r);
        snap_free(&now);
        if (r.status == 0) {
            break; /* the limit holds every file now */
        }
    }
    printf("full disk: %d limits refused with the old folder intact\n",
           refused);
    CHECK(refused > 10, "too few limits refused: %d", refused);
    snap_free(&old);
    run_rmdir(out);
}

/* The folder replaced whole keeps what else the user had in it; a
 * trailing slash names the same folder; a folder with a subfolder (not
 * replaceable whole) is written file by file and keeps it too. */
static void test_keep_others(const char *memfit, const char *work)
{
    char out[4096], slash[4100], notes[4200], sub[4200], subfile[4300];
    snprintf(out, sizeof out, "%s/out", work);
    snprintf(slash, sizeof slash, "%s/", out);
    snprintf(notes, sizeof notes, "%s/notes.txt", out);
    snprintf(sub, sizeof sub, "%s/sub", out);
    snprintf(subfile, sizeof subfile, "%s/sub/kept.txt", out);
    char *a[] = {(char *)memfit, "--model", "mlp:784-64-10", "--out", slash,
                 NULL};
    char *b[] = {(char *)memfit, "--model", "smallcnn", "--out", out, NULL};
    CHECK(run_quiet(a) == 0, "a run on OUT/ failed");
    FILE *f = fopen(notes, "w");
    CHECK(f && fputs("mine\n", f) >= 0 && fclose(f) == 0,
          "cannot write %s", notes);
    struct stat before;
    CHECK(stat(out, &before) == 0, "no folder");
    CHECK(run_quiet(b) == 0, "the second run failed");
    size_t len = 0;
    char *text = slurp(notes, &len);
    CHECK(text && len == 5 && memcmp(text, "mine\n", 5) == 0,
          "the user's file in --out was lost");
    free(text);
    struct stat after;
    CHECK(stat(out, &after) == 0 && after.st_ino != before.st_ino,
          "the folder was not replaced whole");
    /* a subfolder: in place, kept */
    CHECK(mkdir(sub, 0777) == 0, "cannot make %s", sub);
    f = fopen(subfile, "w");
    CHECK(f && fclose(f) == 0, "cannot write %s", subfile);
    CHECK(run_quiet(a) == 0, "a run on a folder with a subfolder failed");
    CHECK(access(subfile, F_OK) == 0 && access(notes, F_OK) == 0,
          "a folder with a subfolder lost files");
    char first[256] = "";
    CHECK(leftovers(work, first, sizeof first) == 0, "%s left", first);
    unlink(subfile);
    rmdir(sub);
    run_rmdir(out);
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: test-out LAYERWISE MEMFIT\n");
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    char work[] = "/tmp/edgefit-test-out.XXXXXX";
    if (!mkdtemp(work)) {
        perror("mkdtemp");
        return 1;
    }
    /* the calibration cache (layerwise makes one) apart from --out's
     * folder, which must hold nothing but --out */
    char xdg[] = "/tmp/edgefit-test-out-xdg.XXXXXX";
    if (!mkdtemp(xdg)) {
        perror("mkdtemp");
        return 1;
    }
    setenv("XDG_CACHE_HOME", xdg, 1);
    test_keep_others(argv[2], work);
    test_concurrent(argv[2], work);
    test_full_disk(argv[2], work);
    test_signals(argv[1], work);
    char cache[4200];
    snprintf(cache, sizeof cache, "%s/edgefit", xdg);
    run_rmdir(cache);
    rmdir(xdg);
    clear_leftovers(work);
    rmdir(work);
    if (failures) {
        fprintf(stderr, "%d checks failed\n", failures);
        return 1;
    }
    return 0;
}
