#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

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

static int run_child(char *const argv[], long fsize_bytes,
                     const char *stdout_path, struct run_result *r)
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
