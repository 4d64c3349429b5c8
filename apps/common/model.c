#include <stdio.h>

#include "cli.h"
#include "model.h"
#include "weights.h"

int cli_model_load(const char *spec, const char *weights, memest_model **out)
{
    struct memest_diag md;
    const int st = memest_model_load(spec, out, &md);
    if (st != MEMEST_OK) {
        char msg[600];
        memest_diag_format(&md, msg, sizeof msg);
        cli_error("%s", msg);
        return st == MEMEST_E_NOMEM ? CLI_EXIT_FAILURE : CLI_EXIT_USAGE;
    }
    if (weights) {
        const int rc = cli_weights_load("--weights", weights, *out);
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
