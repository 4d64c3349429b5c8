#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "model.h"
#include "weights.h"
#include "alloc_rec.h" /* last: it wraps malloc and co. */

static int model_failed(int st, const struct memest_diag *md)
{
    char msg[600];
    memest_diag_format(md, msg, sizeof msg);
    cli_error("%s", msg);
    return st == MEMEST_E_NOMEM ? CLI_EXIT_FAILURE : CLI_EXIT_USAGE;
}

/* "smallcnn, resnet8, ..." into buf. */
static void preset_list(char *buf, size_t cap)
{
    size_t n = 0;
    buf[0] = '\0';
    for (const char *const *p = memest_preset_names(); *p && n < cap; p++) {
        n += (size_t)snprintf(buf + n, cap - n, "%s%s",
                              p == memest_preset_names() ? "" : ", ", *p);
    }
}

/* The largest model read from stdin: the ONNX importer's limit on a file
 * (2 GiB - 1), which is above the text parser's. */
#define STDIN_MODEL_MAX ((size_t)2 * 1024 * 1024 * 1024 - 1)

/* Whether bytes are an ONNX protocol buffer rather than a text model: a
 * text model is UTF-8 text, which never holds a NUL or a control byte
 * other than tab, line feed, form feed and carriage return; a ModelProto
 * opens with field 1 (ir_version, tag 0x08) and holds such bytes all
 * over. */
static bool looks_binary(const unsigned char *b, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (b[i] < 0x20 && b[i] != '\t' && b[i] != '\n' && b[i] != '\f' &&
            b[i] != '\r') {
            return true;
        }
    }
    return false;
}

/* An ONNX model read from stdin: the importer reads files, so the bytes
 * go to a private folder of $TMPDIR as "stdin.onnx" (which also names the
 * model "stdin" when its graph has no name of its own), removed as soon as
 * it is read. */
static int load_onnx_bytes(const unsigned char *b, size_t n,
                           memest_model **out)
{
    const char *tmp = getenv("TMPDIR");
    char dir[4096], path[4200];
    snprintf(dir, sizeof dir, "%s/edgefit-stdin-XXXXXX",
             tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) {
        cli_error("--model -: cannot make a temporary folder in %s: %s",
                  tmp && *tmp ? tmp : "/tmp", strerror(errno));
        return CLI_EXIT_FAILURE;
    }
    snprintf(path, sizeof path, "%s/stdin.onnx", dir);
    FILE *f = fopen(path, "wb");
    bool ok = f && fwrite(b, 1, n, f) == n;
    const int werr = errno;
    if (f && fclose(f) != 0) {
        ok = false;
    }
    int rc = CLI_EXIT_OK;
    if (!ok) {
        cli_error("--model -: cannot write %s: %s", path, strerror(werr));
        rc = CLI_EXIT_FAILURE;
    } else {
        struct memest_diag md;
        const int st = memest_model_load_onnx(path, NULL, out, &md);
        if (st != MEMEST_OK) {
            /* the temporary name means nothing to the user */
            snprintf(md.source, sizeof md.source, "<stdin>");
            rc = model_failed(st, &md);
        }
    }
    unlink(path);
    rmdir(dir);
    return rc;
}

/* stdin once read: an app that loads its model twice (a second
 * executor, a second precision) gets the same bytes again. */
static unsigned char *stdin_bytes;
static size_t stdin_len;

static int load_bytes(const unsigned char *buf, size_t len,
                      memest_model **out)
{
    if (looks_binary(buf, len)) {
        return load_onnx_bytes(buf, len, out);
    }
    struct memest_diag md;
    const int st = memest_model_parse_buffer((const char *)buf, len,
                                             "<stdin>", out, &md);
    return st == MEMEST_OK ? CLI_EXIT_OK : model_failed(st, &md);
}

/* --model -: the whole of stdin, a text model or an ONNX file. */
static int load_stdin(memest_model **out)
{
    if (stdin_bytes) {
        return load_bytes(stdin_bytes, stdin_len, out);
    }
    size_t len = 0, cap = 0;
    unsigned char *buf = NULL;
    for (;;) {
        if (len == cap) {
            if (cap > STDIN_MODEL_MAX) {
                free(buf);
                cli_error("--model -: stdin holds more than 2 GiB, the "
                          "largest model accepted");
                return CLI_EXIT_USAGE;
            }
            cap = cap ? cap * 2 : 65536;
            unsigned char *grown = realloc(buf, cap);
            if (!grown) {
                free(buf);
                cli_error("--model -: out of memory reading stdin (%zu "
                          "bytes asked)", cap);
                return CLI_EXIT_FAILURE;
            }
            buf = grown;
        }
        const size_t got = fread(buf + len, 1, cap - len, stdin);
        len += got;
        if (got == 0) {
            break;
        }
    }
    if (ferror(stdin)) {
        const int err = errno;
        free(buf);
        cli_error("--model -: cannot read stdin: %s", strerror(err));
        return CLI_EXIT_USAGE;
    }
    if (len == 0) {
        free(buf);
        cli_error("--model -: stdin is empty (give a text model or an ONNX "
                  "file on it)");
        return CLI_EXIT_USAGE;
    }
    stdin_bytes = buf;
    stdin_len = len;
    return load_bytes(buf, len, out);
}

/* Before opening spec as a file: it must name a regular file (opening a
 * FIFO for reading blocks until someone writes to it; a folder or a device
 * is no model either), and a bare word that is no file is most likely a
 * misspelt preset. stat() does not open, so it never blocks. */
static int check_model_path(const char *spec)
{
    struct stat st;
    if (stat(spec, &st) != 0) {
        const int err = errno;
        if (err == ENOENT && !strchr(spec, '/') && !strchr(spec, '.')) {
            char names[256];
            preset_list(names, sizeof names);
            cli_error("--model %s: unknown preset, and no file of that name "
                      "(the presets: mlp:W0-W1-...-Wn, %s; a file: a text "
                      "model or a .onnx path)", spec, names);
        } else {
            cli_error("--model %s: %s", spec, strerror(err));
        }
        return CLI_EXIT_USAGE;
    }
    if (!S_ISREG(st.st_mode)) {
        cli_error("--model %s: %s, not a regular file (to read a model from "
                  "a pipe, give --model - and pipe it to stdin)", spec,
                  cli_file_kind(st.st_mode));
        return CLI_EXIT_USAGE;
    }
    return CLI_EXIT_OK;
}

int cli_model_check_spec(const char *spec)
{
    if (!*spec) {
        char names[256];
        preset_list(names, sizeof names);
        cli_error("--model: the name is empty (give a preset: "
                  "mlp:W0-W1-...-Wn, %s; a text model or .onnx file; or - "
                  "for stdin)", names);
        return CLI_EXIT_USAGE;
    }
    if (strcmp(spec, "-") == 0 || memest_is_preset_name(spec)) {
        return CLI_EXIT_OK;
    }
    return check_model_path(spec);
}

int cli_model_load(const char *spec, const char *weights, memest_model **out)
{
    *out = NULL;
    int rc = cli_model_check_spec(spec);
    if (rc != CLI_EXIT_OK) {
        return rc;
    }
    if (strcmp(spec, "-") == 0) {
        rc = load_stdin(out);
    } else {
        struct memest_diag md;
        const int st = memest_model_load(spec, out, &md);
        rc = st == MEMEST_OK ? CLI_EXIT_OK : model_failed(st, &md);
    }
    if (rc != CLI_EXIT_OK) {
        return rc;
    }
    if (weights) {
        rc = cli_weights_load("--weights", weights, *out);
        if (rc != CLI_EXIT_OK) {
            memest_model_destroy(*out);
            *out = NULL;
            return rc;
        }
    }
    return CLI_EXIT_OK;
}

int cli_prof_failed(const char *what, int st, const struct prof_diag *d)
{
    if (d && d->message[0]) {
        cli_error("%s: %s", what, d->message);
    } else {
        cli_error("%s: %s", what, prof_strerror(st));
    }
    return st == PROF_E_NOMEM || st == PROF_E_KERNEL ||
                   st == PROF_E_CALLBACK || st == PROF_E_IO
               ? CLI_EXIT_FAILURE
               : CLI_EXIT_USAGE;
}

bool cli_parse_precisions(const char *opt, const char *text,
                          enum memest_precision *out, size_t cap,
                          size_t *n)
{
    char items[MEMEST_PRECISION_COUNT + 1][32];
    size_t count;
    if (cap > MEMEST_PRECISION_COUNT) {
        cap = MEMEST_PRECISION_COUNT;
    }
    if (!cli_split_list(opt, text, items, cap, &count)) {
        return false;
    }
    for (size_t i = 0; i < count; i++) {
        enum memest_precision p;
        if (memest_precision_parse(items[i], &p) != MEMEST_OK ||
            p == MEMEST_FP64) {
            cli_error("%s: '%s' is not one of fp32, fp16, bf16, int8",
                      opt, items[i]);
            return false;
        }
        for (size_t k = 0; k < i; k++) {
            if (out[k] == p) {
                cli_error("%s: %s given twice", opt, items[i]);
                return false;
            }
        }
        out[i] = p;
    }
    *n = count;
    return true;
}

int cli_model_batch(const memest_model *model, const char *spec,
                    bool have_batch, uint64_t batch, const char *verb,
                    uint64_t *out)
{
    const uint64_t fixed = memest_model_fixed_batch(model);
    if (have_batch && fixed && batch != fixed) {
        cli_error("--batch %" PRIu64 ": %s fixes the batch at %" PRIu64
                  " (leave --batch out to %s at %" PRIu64 ")",
                  batch, spec, fixed, verb, fixed);
        return CLI_EXIT_USAGE;
    }
    *out = !have_batch && fixed ? fixed : batch;
    return CLI_EXIT_OK;
}
