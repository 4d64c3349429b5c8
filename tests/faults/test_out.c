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

/* A file of the user's in --out (kept by every run, whatever the kill):
 * left out of snapshots and checked on its own. NULL for none. */
static const char *kept_name;

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
        if (list[i]->d_name[0] != '.' && s->n < FILES_MAX &&
            !(kept_name && strcmp(list[i]->d_name, kept_name) == 0)) {
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
        fprintf(stderr, "  (%d files, not the new run's %d names)\n",
                now->n, new_names->n);
        return MIX;
    }
    for (int i = 0; i < now->n; i++) {
        for (int j = 0; j < old->n; j++) {
            if (strcmp(now->name[i], old->name[j]) == 0 &&
                same_file(now, i, old, j)) {
                fprintf(stderr, "  (%s is the old run's)\n", now->name[i]);
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
            strcmp(e->d_name, "out") && strcmp(e->d_name, "link")) {
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

/* The folder children run in (NULL: this one's). */
static const char *child_cwd;

static pid_t spawn(char *const argv[], const char *err_path)
{
    const pid_t pid = fork();
    if (pid == 0) {
        if (child_cwd && chdir(child_cwd) != 0) {
            _exit(126);
        }
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

/* The user's file in --out unchanged (when there is one). */
static bool kept_intact(const char *out)
{
    if (!kept_name) {
        return true;
    }
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", out, kept_name);
    size_t len = 0;
    char *text = slurp(path, &len);
    const bool ok = text && len == 5 && memcmp(text, "mine\n", 5) == 0;
    free(text);
    return ok;
}

/* Signals at random moments of a run that replaces an old folder: out is
 * the folder looked at, arg what --out names (out, or a link to it).
 * After a SIGKILL (no handler runs) the next run must succeed and leave
 * nothing beside the folder, whatever the killed one left. */
static void test_signals(const char *layerwise, const char *work,
                         const char *label, const char *arg, int runs)
{
    char out[4096], ref[4096];
    snprintf(out, sizeof out, "%s/out", work);
    snprintf(ref, sizeof ref, "%s/ref", work);
    char *old_run[] = {(char *)layerwise, "--model", "mlp:784-64-10",
                       "--repeats", "1", "--warmup", "0", "--min-sample-ms",
                       "0", "--quiet", "--out", (char *)arg, NULL};
    char *new_run[] = {(char *)layerwise, "--model", "smallcnn", "--batch",
                       "4", "--repeats", "1", "--warmup", "0",
                       "--min-sample-ms", "0", "--quiet", "--out",
                       (char *)arg, NULL};
    char *ref_run[] = {(char *)layerwise, "--model", "smallcnn", "--batch",
                       "4", "--repeats", "1", "--warmup", "0",
                       "--min-sample-ms", "0", "--quiet", "--out", ref, NULL};
    CHECK(run_quiet(ref_run) == 0, "the reference run failed");
    struct snap new_names, old, now;
    snap_take(ref, &new_names);
    run_rmdir(ref);
    CHECK(new_names.n > 2, "the new run wrote %d files", new_names.n);
    CHECK(run_quiet(old_run) == 0, "%s: the old run failed", label);
    snap_take(out, &old);
    /* how long a run lasts, to spread the signals over it */
    const double t0 = now_s();
    CHECK(run_quiet(new_run) == 0, "%s: an unkilled run failed", label);
    const double span = now_s() - t0;
    CHECK(run_quiet(old_run) == 0, "%s: the old run failed", label);
    snap_free(&old);
    snap_take(out, &old);

    static const int sigs[] = {SIGINT, SIGKILL, SIGTERM, SIGKILL};
    int olds = 0, news = 0, mixes = 0, finished = 0, killed_left = 0;
    uint64_t rng = 12345;
    /* One unkilled run's time is only a guide on a loaded machine: while
     * the kills have not yet fallen on both sides of the commit, up to
     * twice as many more runs spread them over three times as long. */
    int i = 0;
    for (; i < runs || ((olds == 0 || news == 0) && i < 3 * runs); i++) {
        const int sig = sigs[i % 4];
        const double at = span * (i < runs ? 1.2 : 3.6) *
                          (double)(run_lcg(&rng) % 10000) / 1e4;
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
                  "%s: signal %d at %.3f s left %d entries beside --out (%s)",
                  label, sig, at, left, first);
        }
        CHECK(s != MIX,
              "%s: signal %d at %.3f s (of %.3f) left a mix in --out", label,
              sig, at, span);
        CHECK(kept_intact(out), "%s: signal %d at %.3f s lost the user's file",
              label, sig, at);
        olds += s == OLD;
        news += s == NEW;
        mixes += s == MIX;
        snap_free(&now);
        if (sig == SIGKILL) {
            /* the next run: not blocked by the dead run's lock file, and
             * it clears the dead run's temporaries */
            killed_left += left > 0;
            CHECK(run_quiet(old_run) == 0,
                  "%s: the run after a SIGKILL at %.3f s failed (it had "
                  "left %s)", label, at, left ? first : "nothing");
            const int after = leftovers(work, first, sizeof first);
            CHECK(after == 0,
                  "%s: the run after a SIGKILL at %.3f s left %s beside "
                  "--out", label, at, first);
            snap_free(&old);
            snap_take(out, &old);
        } else if (s != OLD) {
            /* back to the old folder for the next kill */
            CHECK(run_quiet(old_run) == 0, "%s: the old run failed", label);
            snap_free(&old);
            snap_take(out, &old);
        }
    }
    printf("signals (%s): %d runs over %.3f s: %d left the old folder, %d "
           "the new, %d a mix; %d finished first; %d SIGKILLs left "
           "something beside it, cleared by the next run\n",
           label, i, span, olds, news, mixes, finished, killed_left);
    CHECK(olds > 0 && news > 0,
          "%s: the kills did not cover both sides of the commit", label);
    snap_free(&old);
    snap_free(&new_names);
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

/* A disk full at any byte: the old folder stays as it was (out the
 * folder, arg what --out names). */
static void test_full_disk(const char *memfit, const char *work,
                           const char *label, const char *arg)
{
    char out[4096];
    snprintf(out, sizeof out, "%s/out", work);
    char *a[] = {(char *)memfit, "--model", "mlp:784-64-10", "--out",
                 (char *)arg, NULL};
    char *b[] = {(char *)memfit, "--model", "smallcnn", "--out", (char *)arg,
                 NULL};
    CHECK(run_quiet(a) == 0, "%s: the old run failed", label);
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
            CHECK(r.status == 1, "%s: a full disk at %ld bytes ended %d: %s",
                  label, limit, r.status, r.err);
            CHECK(equal(&now, &old) && kept_intact(out),
                  "%s: a full disk at %ld bytes changed the old --out",
                  label, limit);
        }
        char first[256] = "";
        CHECK(leftovers(work, first, sizeof first) == 0,
              "%s: a full disk at %ld bytes left %s", label, limit, first);
        run_free(&r);
        snap_free(&now);
        if (r.status == 0) {
            break; /* the limit holds every file now */
        }
    }
    printf("full disk (%s): %d limits refused with the old folder intact\n",
           label, refused);
    CHECK(refused > 10, "%s: too few limits refused: %d", label, refused);
    /* the runs' files go (the folder, and a file of the user's, stay) */
    snap_take(out, &now);
    for (int i = 0; i < now.n; i++) {
        char path[4400];
        snprintf(path, sizeof path, "%s/%s", out, now.name[i]);
        unlink(path);
    }
    snap_free(&now);
    snap_free(&old);
}

/* The folder replaced whole keeps what else the user had in it; a
 * trailing slash names the same folder. */
static void test_keep_others(const char *memfit, const char *work)
{
    char out[4096], slash[4100], notes[4200];
    snprintf(out, sizeof out, "%s/out", work);
    snprintf(slash, sizeof slash, "%s/", out);
    snprintf(notes, sizeof notes, "%s/notes.txt", out);
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
    char first[256] = "";
    CHECK(leftovers(work, first, sizeof first) == 0, "%s left", first);
    run_rmdir(out);
}

/* A run on a folder that cannot be replaced whole stops before its work
 * with exit 2, names the folder and the reason, and changes nothing. */
static void expect_refused(const char *label, char *const argv[],
                           const char *folder, const char *why)
{
    struct snap before, now;
    snap_take(folder, &before);
    const pid_t pid = spawn(argv, "/tmp/edgefit-test-out.err");
    const int st = wait_status(pid);
    size_t len = 0;
    char *err = slurp("/tmp/edgefit-test-out.err", &len);
    unlink("/tmp/edgefit-test-out.err");
    CHECK(st == 2 && err && memmem(err, len, why, strlen(why)) &&
              memmem(err, len, "writes nothing", 14),
          "%s: ended %d: %.*s", label, st, (int)len, err ? err : "");
    snap_take(folder, &now);
    CHECK(equal(&now, &before), "%s: the folder changed", label);
    snap_free(&now);
    snap_free(&before);
    free(err);
}

static void test_refused(const char *memfit, const char *work)
{
    char out[4096], sub[4200], mnt[4200];
    snprintf(out, sizeof out, "%s/out", work);
    snprintf(sub, sizeof sub, "%s/out/sub", work);
    snprintf(mnt, sizeof mnt, "%s/out/mnt", work);
    char *a[] = {(char *)memfit, "--model", "mlp:784-64-10", "--out", out,
                 NULL};
    char *dot[] = {(char *)memfit, "--model", "smallcnn", "--out", ".", NULL};
    char *up[] = {(char *)memfit, "--model", "smallcnn", "--out", "../out",
                  NULL};
    char *at_mnt[] = {(char *)memfit, "--model", "smallcnn", "--out", mnt,
                      NULL};
    CHECK(run_quiet(a) == 0, "the old run failed");
    /* ".", and the same folder by another name, run from inside it */
    child_cwd = out;
    expect_refused("--out .", dot, out, "it is the current folder");
    expect_refused("--out ../out", up, out, "it is the current folder");
    child_cwd = NULL;
    /* a folder the user made in it */
    CHECK(mkdir(sub, 0777) == 0, "cannot make %s", sub);
    expect_refused("a subfolder", a, out, "it holds the folder 'sub'");
    CHECK(access(sub, F_OK) == 0, "the subfolder went");
    rmdir(sub);
    /* a mount point (root only: elsewhere there is none to make) */
    CHECK(mkdir(mnt, 0777) == 0, "cannot make %s", mnt);
    char cmd[4400];
    snprintf(cmd, sizeof cmd, "mount -t tmpfs -o size=1m none %s 2>/dev/null",
             mnt);
    if (geteuid() == 0 && system(cmd) == 0) {
        expect_refused("a mount point", at_mnt, mnt, "it is a mount point");
        snprintf(cmd, sizeof cmd, "umount %s", mnt);
        CHECK(system(cmd) == 0, "cannot unmount %s", mnt);
        printf("refused: '.', ../out from inside it, a folder holding a "
               "folder, a mount point\n");
    } else {
        printf("refused: '.', ../out from inside it, a folder holding a "
               "folder (no mount point: not root)\n");
    }
    rmdir(mnt);
    char first[256] = "";
    CHECK(leftovers(work, first, sizeof first) == 0, "%s left", first);
    run_rmdir(out);
}

/* A SIGKILL between the two renames of a file system without the
 * exchange leaves no --out but .out.old: the next run puts it back when
 * it takes the lock (here a run then refused by a full disk, which must
 * leave the old folder), or removes it when the new folder is in place. */
static void test_set_aside(const char *memfit, const char *work)
{
    char out[4096], aside[4200];
    snprintf(out, sizeof out, "%s/out", work);
    snprintf(aside, sizeof aside, "%s/.out.old", work);
    char *a[] = {(char *)memfit, "--model", "mlp:784-64-10", "--out", out,
                 NULL};
    char *b[] = {(char *)memfit, "--model", "smallcnn", "--out", out, NULL};
    CHECK(run_quiet(a) == 0, "the old run failed");
    struct snap old, now;
    snap_take(out, &old);
    CHECK(rename(out, aside) == 0, "cannot set %s aside", out);
    struct run_result r;
    run_argv_fsize(b, 1, &r);
    snap_take(out, &now);
    CHECK(r.status == 1 && equal(&now, &old),
          "a run after a kill between the renames ended %d (%s) without the "
          "old folder back", r.status, r.err);
    run_free(&r);
    snap_free(&now);
    /* the kill after the second rename: the new folder stays */
    CHECK(run_quiet(b) == 0, "the new run failed");
    snap_free(&old);
    snap_take(out, &old);
    CHECK(mkdir(aside, 0777) == 0, "cannot make %s", aside);
    CHECK(run_quiet(b) == 0, "a run beside a left .out.old failed");
    char first[256] = "";
    CHECK(leftovers(work, first, sizeof first) == 0,
          "a run beside a left .out.old left %s", first);
    snap_free(&old);
    run_rmdir(out);
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: test-out LAYERWISE MEMFIT\n");
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    /* absolute: some runs start in another folder */
    char *apps[2] = {realpath(argv[1], NULL), realpath(argv[2], NULL)};
    if (!apps[0] || !apps[1]) {
        perror("realpath");
        return 1;
    }
    argv[1] = apps[0];
    argv[2] = apps[1];
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
    char out[4096], link[4096];
    snprintf(out, sizeof out, "%s/out", work);
    snprintf(link, sizeof link, "%s/link", work);
    test_keep_others(argv[2], work);
    test_refused(argv[2], work);
    test_set_aside(argv[2], work);
    test_concurrent(argv[2], work);
    test_full_disk(argv[2], work, "out", out);
    test_signals(argv[1], work, "out", out, 40);
    run_rmdir(out);
    /* --out a symbolic link: its target is swapped whole, the link stays */
    CHECK(mkdir(out, 0777) == 0 && symlink("out", link) == 0,
          "cannot make %s", link);
    test_full_disk(argv[2], work, "a link", link);
    test_signals(argv[1], work, "a link", link, 20);
    struct stat lsb;
    CHECK(lstat(link, &lsb) == 0 && S_ISLNK(lsb.st_mode),
          "the link is no longer a link");
    unlink(link);
    run_rmdir(out);
    /* a file of the user's in the folder: kept by hard links */
    char notes[4200];
    snprintf(notes, sizeof notes, "%s/notes.txt", out);
    FILE *f = mkdir(out, 0777) == 0 ? fopen(notes, "w") : NULL;
    CHECK(f && fputs("mine\n", f) >= 0 && fclose(f) == 0, "cannot write %s",
          notes);
    kept_name = "notes.txt";
    test_full_disk(argv[2], work, "a user's file", out);
    test_signals(argv[1], work, "a user's file", out, 20);
    kept_name = NULL;
    run_rmdir(out);
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
