/* Write (or with --check, check) every sample of program output in
 * README.md and docs/NAME.md: each sample's command is run with the apps
 * given and its output replaces the block (samples.h says how a sample is
 * written and what may differ). scripts/make-doc-samples.sh builds the
 * apps and runs this.
 *
 * Usage: make-doc-samples [--check] SOURCE_ROOT APP... */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "samples.h"

static int bad;

static void report(void *ctx, bool ok, const char *what)
{
    (void)ctx;
    fprintf(ok ? stdout : stderr, "%s%s\n", ok ? "" : "error: ", what);
    bad += !ok;
}

int main(int argc, char **argv)
{
    int first = 1;
    bool write = true;
    if (argc > 1 && strcmp(argv[1], "--check") == 0) {
        write = false;
        first = 2;
    }
    if (argc - first < 2) {
        fprintf(stderr, "usage: %s [--check] SOURCE_ROOT APP...\n", argv[0]);
        return 2;
    }
    const char *root = argv[first];
    char **files;
    const int n = samples_docs(root, &files);
    int samples = 0;
    for (int i = 0; i < n; i++) {
        const int k = samples_file(root, files[i], argv + first + 1,
                                   argc - first - 1, write, report, NULL);
        samples += k > 0 ? k : 0;
    }
    samples_docs_free(files, n);
    printf("%d samples in %d files, %d problems\n", samples, n, bad);
    return bad ? 1 : 0;
}
