/* Reading tests/data/batchnorm-torch.txt (scripts/make-batchnorm-fixture.py:
 * PyTorch's batch norm in training mode), shared by test_exec_ops.c and
 * test_train.c. A case is a line "case NAME batch=B channels=C hw=H
 * eps=E" and the lines "KEY v1 v2 ..." after it, up to the next case. */
#ifndef EDGEFIT_TESTS_BN_FIXTURE_H
#define EDGEFIT_TESTS_BN_FIXTURE_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct bn_case {
    size_t batch, channels, hw;
    double eps;
    char *text; /* the case's lines */
};

/* The whole file, or NULL (the message printed). */
static char *bn_fixture_read(void)
{
    const char *root = getenv("EDGEFIT_SOURCE_ROOT");
    char path[4096];
    snprintf(path, sizeof path, "%s/tests/data/batchnorm-torch.txt",
             root ? root : ".");
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "%s: cannot open (EDGEFIT_SOURCE_ROOT?)\n", path);
        return NULL;
    }
    char *buf = NULL;
    size_t len = 0, cap = 0, n;
    char chunk[4096];
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
        if (len + n + 1 > cap) {
            cap = 2 * (len + n + 1);
            char *p = realloc(buf, cap);
            if (!p) {
                free(buf);
                fclose(f);
                return NULL;
            }
            buf = p;
        }
        memcpy(buf + len, chunk, n);
        len += n;
    }
    fclose(f);
    if (buf) {
        buf[len] = '\0';
    }
    return buf;
}

/* Find case `name` in the file's text; false when absent. */
static bool bn_fixture_case(char *file, const char *name, struct bn_case *c)
{
    char head[64];
    snprintf(head, sizeof head, "case %s ", name);
    char *at = strstr(file, head);
    if (!at) {
        return false;
    }
    unsigned long b, ch, hw;
    if (sscanf(at + strlen(head), "batch=%lu channels=%lu hw=%lu eps=%lf", &b,
               &ch, &hw, &c->eps) != 4) {
        return false;
    }
    c->batch = b;
    c->channels = ch;
    c->hw = hw;
    c->text = strchr(at, '\n');
    return c->text != NULL;
}

/* The n values of line KEY of the case into out; false when the line is
 * missing or holds another count. */
static bool bn_fixture_values(const struct bn_case *c, const char *key,
                              float *out, size_t n)
{
    char want[64];
    snprintf(want, sizeof want, "\n%s ", key);
    const char *at = strstr(c->text, want);
    const char *next = strstr(c->text + 1, "\ncase ");
    if (!at || (next && at > next)) {
        return false;
    }
    at += strlen(want);
    for (size_t i = 0; i < n; i++) {
        char *end;
        out[i] = strtof(at, &end);
        if (end == at) {
            return false;
        }
        at = end;
    }
    while (*at == ' ') {
        at++;
    }
    return *at == '\n' || *at == '\0';
}

#endif
