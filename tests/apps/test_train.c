/* edgefit-train end to end, on a small learnable data set written here as
 * IDX files (and on a slice of the real Fashion-MNIST when it is
 * installed): the run log's figures against each other and against the
 * original's formulas, the history, the weights file read back by
 * libartifacts, a round trip through --init-weights, the memory plan's
 * warnings, int8 quantisation, fp16 loss scaling, and bad input refused
 * before any work. The program path comes as argv[1]. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "edgefit/artifacts.h"
#include "edgefit/kernels.h"
#include "run.h"

#define FASHION_DIR "/usr/share/datasets/fashion-mnist"
#define TRAIN_COUNT 600
#define TEST_COUNT 200

static const char *train_app;
static char tmpdir[] = "/tmp/edgefit-train-XXXXXX";
static char datadir[600];

#define RUN(r, ...)                                                          \
    do {                                                                     \
        char *argv_[] = {(char *)train_app, __VA_ARGS__, NULL};              \
        run_argv(argv_, (r));                                                \
    } while (0)

/* ---- a data set a small MLP learns in a few epochs --------------------- */

/* Class k is a bright band over rows 2k..2k+3 of a 28x28 image, on dim
 * noise (run_write_bands). Plain (not gzipped) files, which the reader
 * takes when no .gz exists. */
static void write_split(const char *split, unsigned count, uint64_t seed)
{
    assert_int_equal(run_write_bands(datadir, split, count, seed), 0);
}

/* ---- reading what the app wrote --------------------------------------- */

static char *path_in(const char *dir, const char *name)
{
    static char p[4][800];
    static int next;
    char *s = p[next++ & 3];
    snprintf(s, sizeof p[0], "%s/%s", dir, name);
    return s;
}

static char *out_dir(const char *name)
{
    static char p[4][700];
    static int next;
    char *s = p[next++ & 3];
    snprintf(s, sizeof p[0], "%s/%s", tmpdir, name);
    return s;
}

static json_t *load_json(const char *path)
{
    json_error_t err;
    json_t *j = json_load_file(path, 0, &err);
    if (!j) {
        fail_msg("%s: %s", path, err.text);
    }
    return j;
}

static json_t *jget(json_t *obj, const char *a, const char *b)
{
    json_t *v = json_object_get(obj, a);
    if (v && b) {
        v = json_object_get(v, b);
    }
    if (!v) {
        fail_msg("missing key %s%s%s", a, b ? "." : "", b ? b : "");
    }
    return v;
}

static double jreal(json_t *obj, const char *a, const char *b)
{
    json_t *v = jget(obj, a, b);
    assert_true(json_is_number(v));
    return json_number_value(v);
}

static json_int_t jint(json_t *obj, const char *a, const char *b)
{
    json_t *v = jget(obj, a, b);
    assert_true(json_is_integer(v));
    return json_integer_value(v);
}

static const char *jtext(json_t *obj, const char *a, const char *b)
{
    json_t *v = jget(obj, a, b);
    assert_true(json_is_string(v));
    return json_string_value(v);
}

static double cell(const art_table *t, size_t row, const char *col)
{
    const long c = art_table_find_column(t, col);
    assert_true(c >= 0);
    double v = 0.0;
    assert_int_equal(art_table_get_real(t, row, (size_t)c, &v), ART_OK);
    return v;
}

static bool near(double a, double b, double tol)
{
    return fabs(a - b) <= tol;
}

/* ---- the tests --------------------------------------------------------- */

/* The constrained run's figures, checked against each other and the
 * original's formulas, from a run at speed factor 2.5. */
static void test_run_log_and_history(void **state)
{
    (void)state;
    char *o = out_dir("run");
    struct run_result r;
    RUN(&r, "--data", datadir, "--model", "mlp:784-32-10", "--epochs", "3",
        "--batch", "16", "--seed", "7", "--speed-factor", "2.5", "--out", o,
        "--format", "json");
    if (r.status != 0) {
        fail_msg("exit %d: %s", r.status, r.err);
    }
    /* stdout's JSON is the file's. */
    FILE *f = fopen(path_in(o, "run_log.json"), "rb");
    assert_non_null(f);
    static char file_text[1 << 16];
    const size_t len = fread(file_text, 1, sizeof file_text - 1, f);
    fclose(f);
    file_text[len] = '\0';
    assert_string_equal(r.out, file_text);
    run_free(&r);
    /* the log, the history, the weights and the training curves */
    assert_int_equal(run_count_entries(o), 4);
    struct stat png;
    assert_int_equal(stat(path_in(o, "training_curves.png"), &png), 0);
    assert_true(png.st_size > 1000);

    json_t *j = load_json(path_in(o, "run_log.json"));
    assert_string_equal(jtext(j, "config", "model"), "mlp:784-32-10");
    assert_int_equal(jint(j, "config", "epochs"), 3);
    assert_true(jreal(j, "config", "alpha") == 0.1);
    assert_int_equal(jint(j, "config", "batch_size"), 16);
    assert_int_equal(jint(j, "config", "seed"), 7);
    assert_string_equal(jtext(j, "config", "optimizer"), "sgd");
    assert_string_equal(jtext(j, "config", "precision"), "fp32");
    assert_true(json_is_false(jget(j, "config", "simulate")));
    assert_true(jreal(j, "config", "compute_speed_factor") == 2.5);
    assert_int_equal(jint(j, "config", "train_samples"), TRAIN_COUNT);
    assert_int_equal(jint(j, "config", "test_samples"), TEST_COUNT);
    /* The simulation is off: the batch as asked, no warnings. */
    assert_true(json_is_false(jget(j, "setup", "enabled")));
    assert_int_equal(jint(j, "setup", "batch_size"), 16);
    /* one name for a precision in every file (it said float32 here) */
    assert_string_equal(jtext(j, "setup", "precision_mode"), "fp32");
    assert_int_equal(json_array_size(jget(j, "setup", "warnings")), 0);

    /* delay = elapsed * (factor - 1); effective = elapsed + delay; each
     * rounded to 6 places, so sums agree within two half-units. */
    const double train_s = jreal(j, "results", "training_time_s");
    const double delay_s = jreal(j, "results", "artificial_delay_s");
    const double eff_s = jreal(j, "results", "effective_time_s");
    assert_true(train_s > 0.0);
    assert_true(near(delay_s, train_s * 1.5, 1.5e-6));
    assert_true(near(eff_s, train_s + delay_s, 1.5e-6));
    assert_true(json_is_false(jget(j, "results", "slept")));
    assert_int_equal(jint(j, "results", "steps_per_epoch"), TRAIN_COUNT / 16);

    /* The history: one row per epoch, the columns in order. */
    f = fopen(path_in(o, "training_history.csv"), "rb");
    assert_non_null(f);
    char header[256] = {0};
    assert_non_null(fgets(header, sizeof header, f));
    fclose(f);
    assert_string_equal(header, "epoch,loss,train_accuracy,test_accuracy,"
                                "epoch_time_s,steps,loss_scale,"
                                "skipped_steps,test_loss\n");
    art_table *h = NULL;
    assert_int_equal(art_table_load_csv(path_in(o, "training_history.csv"),
                                        &h, NULL),
                     ART_OK);
    assert_int_equal(art_table_rows(h), 3);
    double sum_s = 0.0;
    for (size_t e = 0; e < 3; e++) {
        assert_true(cell(h, e, "epoch") == (double)(e + 1));
        assert_true(cell(h, e, "steps") == TRAIN_COUNT / 16);
        assert_true(cell(h, e, "loss_scale") == 1.0);
        assert_true(cell(h, e, "skipped_steps") == 0.0);
        sum_s += cell(h, e, "epoch_time_s");
    }
    /* The training time is the epochs' time, each written to the
     * microsecond (three half-units and the total's); the results are the
     * last epoch's, rounded as the original rounds them (6 places), then
     * as accuracies are written (4 decimals): within a unit of the 4th. */
    assert_true(near(train_s, sum_s, 2e-6));
    assert_true(near(jreal(j, "results", "final_accuracy"),
                     cell(h, 2, "train_accuracy"), 1e-4 + 1e-12));
    assert_true(near(jreal(j, "results", "final_loss"), cell(h, 2, "loss"),
                     5e-7));
    assert_true(jreal(j, "results", "test_accuracy") ==
                cell(h, 2, "test_accuracy"));
    /* It learned: the bands are easy to tell apart. */
    assert_true(cell(h, 2, "loss") < cell(h, 0, "loss"));
    assert_true(jreal(j, "results", "test_accuracy") > 0.9);
    art_table_destroy(h);

    /* The trainer's buffers next to libmemest's estimate: equal term by
     * term, and the total is params + grads + activations for SGD (16 x
     * (784 + 32 + 10) floats of activations, 25,450 parameters). */
    json_t *mem = jget(j, "training_memory", NULL);
    json_t *tm = jget(mem, "trainer", NULL), *em = jget(mem, "estimate", NULL);
    static const char *const terms[] = {
        "parameter_bytes", "gradient_bytes", "optimizer_state_bytes",
        "activation_bytes", "working_bytes", "total_bytes"};
    for (size_t i = 0; i < 6; i++) {
        assert_int_equal(jint(tm, terms[i], NULL), jint(em, terms[i], NULL));
    }
    assert_int_equal(jint(tm, "parameter_bytes", NULL), 25450 * 4);
    assert_int_equal(jint(tm, "activation_bytes", NULL),
                     16 * (784 + 32 + 10) * 4);
    assert_int_equal(jint(tm, "optimizer_state_bytes", NULL), 0);
    json_decref(j);

    /* The weights in PyTorch's names and layouts. */
    art_safetensors *st = NULL;
    assert_int_equal(art_safetensors_load(path_in(o, "weights.safetensors"),
                                          &st, NULL),
                     ART_OK);
    assert_int_equal(art_safetensors_count(st), 4);
    static const struct {
        const char *name;
        size_t ndim;
        uint64_t d0, d1;
    } want[] = {
        {"dense1.weight", 2, 32, 784},
        {"dense1.bias", 1, 32, 0},
        {"dense2.weight", 2, 10, 32},
        {"dense2.bias", 1, 10, 0},
    };
    for (size_t i = 0; i < 4; i++) {
        const struct art_tensor *t = art_safetensors_find(st, want[i].name);
        if (!t) {
            fail_msg("no tensor %s", want[i].name);
        }
        assert_int_equal(t->dtype, ART_DTYPE_F32);
        assert_int_equal(t->ndim, want[i].ndim);
        assert_int_equal(t->shape[0], want[i].d0);
        if (t->ndim == 2) {
            assert_int_equal(t->shape[1], want[i].d1);
        }
    }
    art_safetensors_destroy(st);
    run_rmdir(o);
}

static json_t *run_json(const char *why, char *const argv[])
{
    struct run_result r;
    run_argv(argv, &r);
    if (r.status != 0) {
        fail_msg("%s: exit %d: %s", why, r.status, r.err);
    }
    json_error_t err;
    json_t *j = json_loads(r.out, 0, &err);
    if (!j) {
        fail_msg("%s: not JSON (%s)", why, err.text);
    }
    run_free(&r);
    return j;
}

static unsigned char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    *len = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc(*len ? *len : 1);
    assert_non_null(b);
    assert_int_equal(fread(b, 1, *len, f), *len);
    fclose(f);
    return b;
}

/* The tensors of the F32 file w narrowed to dtype (F16 or BF16) by
 * libkernels: --init-weights widens them exactly, so the weights a 0-epoch
 * run saves in out are the 16-bit values. */
static void check_widened(const char *w, enum art_dtype dtype,
                          const char *out)
{
    const bool f16 = dtype == ART_DTYPE_F16;
    art_safetensors *st = NULL;
    assert_int_equal(art_safetensors_load(w, &st, NULL), ART_OK);
    const size_t n = art_safetensors_count(st);
    struct art_tensor half[4];
    uint16_t *bits[4] = {NULL};
    assert_int_equal(n, 4);
    for (size_t i = 0; i < n; i++) {
        half[i] = *art_safetensors_tensor(st, i);
        size_t count = 1;
        for (size_t d = 0; d < half[i].ndim; d++) {
            count *= (size_t)half[i].shape[d];
        }
        bits[i] = malloc(count * 2);
        float *tmp = malloc(count * 4);
        assert_non_null(bits[i]);
        assert_non_null(tmp);
        memcpy(tmp, half[i].data, count * 4);
        assert_int_equal(f16 ? kern_f32_to_f16(bits[i], tmp, count)
                             : kern_f32_to_bf16(bits[i], tmp, count),
                         KERN_OK);
        free(tmp);
        half[i].dtype = dtype;
        half[i].data = bits[i];
    }
    char w16[800];
    snprintf(w16, sizeof w16, "%s/half.safetensors", tmpdir);
    assert_int_equal(art_safetensors_save(w16, half, n, NULL, NULL, 0, NULL),
                     ART_OK);
    char *h[] = {(char *)train_app, "--data", datadir, "--model",
                 "mlp:784-16-10", "--epochs", "0", "--batch", "20",
                 "--init-weights", w16, "--out", (char *)out, "--format",
                 "json", NULL};
    json_t *j = run_json(f16 ? "from F16" : "from BF16", h);
    json_decref(j);
    art_safetensors *back = NULL;
    assert_int_equal(art_safetensors_load(path_in(out, "weights.safetensors"),
                                          &back, NULL),
                     ART_OK);
    for (size_t i = 0; i < n; i++) {
        const struct art_tensor *bt = art_safetensors_find(back, half[i].name);
        assert_non_null(bt);
        assert_int_equal(bt->dtype, ART_DTYPE_F32);
        size_t count = 1;
        for (size_t d = 0; d < bt->ndim; d++) {
            count *= (size_t)bt->shape[d];
        }
        for (size_t k = 0; k < count; k++) {
            float got;
            memcpy(&got, (const unsigned char *)bt->data + 4 * k, 4);
            const float want = f16 ? kern_f16_to_f32_1(bits[i][k])
                                   : kern_bf16_to_f32_1(bits[i][k]);
            if (got != want) {
                fail_msg("%s %s[%zu] = %g, want %g", art_dtype_name(dtype),
                         bt->name, k, got, want);
            }
        }
        free(bits[i]);
    }
    art_safetensors_destroy(back);
    art_safetensors_destroy(st);
    unlink(w16);
}

/* Saved weights loaded back give the same test accuracy (0 epochs:
 * nothing trained, only evaluated) and are saved again bit for bit; the
 * same weights in F16 and in BF16 are widened exactly. */
static void test_init_weights_round_trip(void **state)
{
    (void)state;
    char *a = out_dir("first"), *b = out_dir("again"), *c = out_dir("half");
    char *t = (char *)train_app;
    char *first[] = {t, "--data", datadir, "--model", "mlp:784-16-10",
                     "--epochs", "2", "--batch", "20", "--out", a,
                     "--format", "json", NULL};
    json_t *j1 = run_json("training", first);
    char w1[800];
    snprintf(w1, sizeof w1, "%s", path_in(a, "weights.safetensors"));
    char *again[] = {t, "--data", datadir, "--model", "mlp:784-16-10",
                     "--epochs", "0", "--batch", "20", "--init-weights", w1,
                     "--out", b, "--format", "json", NULL};
    json_t *j2 = run_json("evaluating", again);
    assert_true(jreal(j1, "results", "test_accuracy") ==
                jreal(j2, "results", "test_accuracy"));
    assert_true(jreal(j2, "results", "training_time_s") == 0.0);
    assert_int_equal(json_array_size(jget(j2, "history", NULL)), 0);
    size_t n1 = 0, n2 = 0;
    unsigned char *f1 = slurp(w1, &n1);
    unsigned char *f2 = slurp(path_in(b, "weights.safetensors"), &n2);
    assert_int_equal(n1, n2);
    assert_memory_equal(f1, f2, n1);
    free(f1);
    free(f2);
    json_decref(j1);
    json_decref(j2);

    check_widened(w1, ART_DTYPE_F16, c);
    check_widened(w1, ART_DTYPE_BF16, c);
    run_rmdir(a);
    run_rmdir(b);
    run_rmdir(c);
}

/* A residual model with batch norms, folded (c1 and c2: a conv2d without
 * activation, read by nothing else) and standalone (bn3, after the add):
 * the trainer trains them in training mode, and the weights file holds
 * them as PyTorch's state_dict does: each conv's weights before the fold
 * (c2's declared bias as zeros, c1 declares none), each batch norm's
 * weight, bias, running_mean and running_var of [8]. Read back with
 * --init-weights (libmemest folds them as PyTorch's eval() computes),
 * they evaluate as the trainer did on its running statistics. */
static void test_batchnorm_weights(void **state)
{
    (void)state;
    char *a = out_dir("bn-first"), *b = out_dir("bn-again");
    char model[800];
    snprintf(model, sizeof model, "%s/residual-bn.model", tmpdir);
    FILE *f = fopen(model, "w");
    assert_non_null(f);
    fputs("input 1x28x28\n"
          "conv2d 8 k=3 s=2 p=1 bias=no name=c1\n"
          "batchnorm act=relu name=bn1\n"
          "conv2d 8 k=3 p=1 name=c2\n"
          "batchnorm name=bn2\n"
          "add in=bn1,bn2 act=relu name=res\n"
          "batchnorm name=bn3\n"
          "globalavgpool\n"
          "flatten\n"
          "dense 10 act=softmax name=fc\n",
          f);
    assert_int_equal(fclose(f), 0);
    char *t = (char *)train_app;
    char *first[] = {t, "--data", datadir, "--model", model, "--epochs", "2",
                     "--batch", "20", "--out", a, "--format", "json", NULL};
    json_t *j1 = run_json("training", first);
    char w1[800];
    snprintf(w1, sizeof w1, "%s", path_in(a, "weights.safetensors"));
    art_safetensors *st = NULL;
    assert_int_equal(art_safetensors_load(w1, &st, NULL), ART_OK);
    const char *names[] = {"c1.weight", "c2.weight", "c2.bias", "fc.weight",
                           "fc.bias"};
    for (size_t i = 0; i < 5; i++) {
        if (!art_safetensors_find(st, names[i])) {
            fail_msg("%s: no tensor %s", w1, names[i]);
        }
    }
    assert_null(art_safetensors_find(st, "c1.bias"));
    assert_int_equal(art_safetensors_find(st, "c1.weight")->ndim, 4);
    const float *zero = art_safetensors_find(st, "c2.bias")->data;
    for (size_t c = 0; c < 8; c++) {
        assert_true(zero[c] == 0.0f);
    }
    const char *bns[] = {"bn1", "bn2", "bn3"};
    const char *parts[] = {"weight", "bias", "running_mean", "running_var"};
    for (size_t i = 0; i < 3; i++) {
        for (size_t k = 0; k < 4; k++) {
            char n[64];
            snprintf(n, sizeof n, "%s.%s", bns[i], parts[k]);
            const struct art_tensor *x = art_safetensors_find(st, n);
            if (!x || x->ndim != 1 || x->shape[0] != 8) {
                fail_msg("%s: %s missing or not [8]", w1, n);
            }
            /* the statistics moved from a fresh module's 0 and 1 */
            const float *v = x->data;
            if (k >= 2) {
                bool moved = false;
                for (size_t c = 0; c < 8; c++) {
                    moved |= v[c] != (k == 2 ? 0.0f : 1.0f);
                }
                assert_true(moved);
            }
        }
    }
    assert_int_equal(art_safetensors_count(st), 5 + 12);
    art_safetensors_destroy(st);
    char *again[] = {t, "--data", datadir, "--model", model, "--epochs", "0",
                     "--batch", "20", "--init-weights", w1, "--out", b,
                     "--format", "json", NULL};
    json_t *j2 = run_json("evaluating", again);
    assert_true(jreal(j1, "results", "test_accuracy") ==
                jreal(j2, "results", "test_accuracy"));
    assert_true(near(jreal(j1, "results", "test_loss"),
                     jreal(j2, "results", "test_loss"), 1e-5));
    json_decref(j1);
    json_decref(j2);
    run_rmdir(a);
    run_rmdir(b);
}

/* The original's plan under a tight budget, on training memory (what the
 * trainer allocates): fp32 784-64-10 with SGD needs parameters and
 * gradients, 2 * 203,560 B, and per sample 858 * 4 B of activations,
 * 74 * 4 B of activation gradients and a 4 B label: 407,120 + 3,732 b
 * bytes <= 0.45 MB = 471,859 B, so b = 17 (470,564 B, 0.448765 MB); the
 * text compares the plan and the allocation with the budget, both within.
 * At 0.1 MB not even batch 1 fits: two warnings, and the run still
 * trains. (The old plan counted parameters + activations only and said
 * "within 0.25 MB" while the trainer allocated 0.449 MB.) */
static void test_tight_budget(void **state)
{
    (void)state;
    struct run_result r;
    RUN(&r, "--data", datadir, "--max-memory-mb", "0.45", "--simulate",
        "--epochs", "1");
    if (r.status != 0) {
        fail_msg("exit %d: %s", r.status, r.err);
    }
    assert_non_null(strstr(r.out, "0.448765 MB of training memory (fp32) "
                                  "within 0.4500 MB"));
    assert_non_null(strstr(r.out, "training memory   0.448765 MB = 470564 B "
                                  "allocated"));
    assert_non_null(strstr(r.out, "within the budget"));
    run_free(&r);
    RUN(&r, "--data", datadir, "--max-memory-mb", "0.45", "--simulate",
        "--epochs", "1", "--format", "json");
    if (r.status != 0) {
        fail_msg("exit %d: %s", r.status, r.err);
    }
    json_error_t err;
    json_t *j = json_loads(r.out, 0, &err);
    assert_non_null(j);
    assert_true(json_is_true(jget(j, "setup", "enabled")));
    assert_int_equal(jint(j, "setup", "batch_size"), 17);
    assert_string_equal(jtext(j, "setup", "precision_mode"), "fp32");
    assert_true(jreal(j, "setup", "estimated_memory_mb") == 0.448765);
    assert_string_equal(jtext(j, "setup", "memory_measure"), "training");
    assert_true(json_is_true(jget(j, "setup", "fits")));
    json_t *w = jget(j, "setup", "warnings");
    assert_int_equal(json_array_size(w), 1);
    static const char reduced[] =
        "Batch size reduced from 32 to 17 due to memory constraints.";
    assert_string_equal(json_string_value(json_array_get(w, 0)), reduced);
    assert_non_null(strstr(r.err, reduced));
    assert_int_equal(jint(j, "results", "steps_per_epoch"), TRAIN_COUNT / 17);
    assert_int_equal(json_array_size(jget(j, "history", NULL)), 1);
    json_decref(j);
    run_free(&r);

    RUN(&r, "--data", datadir, "--max-memory-mb", "0.1", "--epochs", "1",
        "--train-limit", "100", "--format", "json");
    if (r.status != 0) {
        fail_msg("exit %d: %s", r.status, r.err);
    }
    j = json_loads(r.out, 0, &err);
    assert_non_null(j);
    assert_int_equal(jint(j, "setup", "batch_size"), 1);
    w = jget(j, "setup", "warnings");
    /* 407,120 + 3,732 B = 0.391819 MB */
    assert_int_equal(json_array_size(w), 2);
    assert_string_equal(json_string_value(json_array_get(w, 1)),
                        "Projected training memory (0.3918 MB) exceeds "
                        "limit (0.1000 MB).");
    assert_non_null(strstr(r.err, "even batch_size=1 needs 0.3918 MB of "
                                  "training memory"));
    assert_null(strstr(r.err, "reduced"));
    assert_true(json_is_false(jget(j, "setup", "fits")));
    assert_int_equal(jint(j, "results", "steps_per_epoch"), 100);
    assert_true(jreal(j, "results", "final_loss") > 0.0);
    json_decref(j);
    run_free(&r);
}

/* int8: the trained weights quantised by the executor; both accuracies
 * reported, close to each other and the fp32 one to the trainer's. */
static void test_int8(void **state)
{
    (void)state;
    char *t = (char *)train_app;
    char *argv[] = {t, "--data", datadir, "--model", "mlp:784-32-10",
                    "--epochs", "2", "--precision", "int8", "--format",
                    "json", NULL};
    json_t *j = run_json("int8", argv);
    assert_string_equal(jtext(j, "config", "precision"), "int8");
    assert_string_equal(jtext(j, "config", "training_precision"), "fp32");
    assert_string_equal(jtext(j, "setup", "precision_mode"), "int8");
    const double fp32 = jreal(j, "results", "fp32_test_accuracy");
    const double int8 = jreal(j, "results", "int8_test_accuracy");
    assert_true(near(fp32, jreal(j, "results", "test_accuracy"), 0.01));
    assert_true(near(int8, fp32, 0.03));
    assert_true(int8 > 0.85);
    json_decref(j);
}

/* fp16 mixed precision at the largest initial scale and batch 1, where a
 * confidently wrong sample's logit gradient, (p - y) x 65536, overflows
 * fp16: steps are skipped, and the trajectory follows the original's rule
 * (x0.5 on each skipped step, x2 after a run of finite ones); the history,
 * the events and the results agree on the skipped steps and the scale. */
static void test_fp16(void **state)
{
    (void)state;
    char *t = (char *)train_app;
    char *argv[] = {t, "--data", datadir, "--model", "mlp:784-32-10",
                    "--epochs", "2", "--batch", "1", "--train-limit", "200",
                    "--precision", "fp16", "--loss-scale", "65536",
                    "--format", "json", NULL};
    json_t *j = run_json("fp16", argv);
    assert_true(jreal(j, "config", "loss_scale") == 65536.0);
    json_t *ev = jget(j, "loss_scale_events", NULL);
    json_t *hist = jget(j, "history", NULL);
    size_t skipped_events = 0;
    double scale = 65536.0;
    uint64_t last_step = 0;
    for (size_t i = 0; i < json_array_size(ev); i++) {
        json_t *e = json_array_get(ev, i);
        const bool skipped = json_is_true(json_object_get(e, "skipped"));
        const double next = json_number_value(json_object_get(e, "loss_scale"));
        const uint64_t step =
            (uint64_t)json_integer_value(json_object_get(e, "step"));
        assert_true(step > last_step);
        last_step = step;
        /* bounded to [1, 65536]: a skip at 1 or growth at 65536 stays */
        const double want = skipped ? fmax(scale * 0.5, 1.0)
                                    : fmin(scale * 2.0, 65536.0);
        if (next != want) {
            fail_msg("event %zu at step %llu: scale %g after %g (%s)", i,
                     (unsigned long long)step, next, scale,
                     skipped ? "skipped" : "grown");
        }
        scale = next;
        skipped_events += skipped;
    }
    assert_true(skipped_events >= 1);
    json_int_t skipped_rows = 0;
    for (size_t i = 0; i < json_array_size(hist); i++) {
        skipped_rows += json_integer_value(
            json_object_get(json_array_get(hist, i), "skipped_steps"));
    }
    assert_int_equal(skipped_rows, (json_int_t)skipped_events);
    assert_int_equal(jint(j, "results", "skipped_steps"), skipped_rows);
    json_t *last = json_array_get(hist, json_array_size(hist) - 1);
    const double final_scale = jreal(j, "results", "final_loss_scale");
    assert_true(final_scale == scale);
    assert_true(json_number_value(json_object_get(last, "loss_scale")) ==
                final_scale);
    assert_true(jreal(j, "results", "test_accuracy") > 0.9);
    json_decref(j);
}

/* --save-weights with a path of its own: written (its folders created)
 * without --out, alone in its folder. */
static void test_save_weights_path(void **state)
{
    (void)state;
    char deep[700], file[800];
    snprintf(deep, sizeof deep, "%s/deep/er", tmpdir);
    snprintf(file, sizeof file, "%s/w.safetensors", deep);
    struct run_result r;
    RUN(&r, "--data", datadir, "--model", "mlp:784-16-10", "--epochs", "1",
        "--save-weights", file, "--format", "csv");
    if (r.status != 0) {
        fail_msg("exit %d: %s", r.status, r.err);
    }
    run_free(&r);
    assert_int_equal(run_count_entries(deep), 1);
    art_safetensors *st = NULL;
    assert_int_equal(art_safetensors_load(file, &st, NULL), ART_OK);
    assert_int_equal(art_safetensors_count(st), 4);
    assert_non_null(art_safetensors_find(st, "dense2.bias"));
    art_safetensors_destroy(st);
    run_rmdir(deep);
    snprintf(deep, sizeof deep, "%s/deep", tmpdir);
    rmdir(deep);
}

/* The same seed gives the same weights, bit for bit, on one thread or
 * two (the trainer's promise, through the app). */
static void test_threads_identical(void **state)
{
    (void)state;
    char *a = out_dir("one"), *b = out_dir("two");
    struct run_result r;
    RUN(&r, "--data", datadir, "--model", "mlp:784-64-10", "--epochs", "1",
        "--threads", "1", "--out", a, "--format", "csv");
    assert_int_equal(r.status, 0);
    run_free(&r);
    RUN(&r, "--data", datadir, "--model", "mlp:784-64-10", "--epochs", "1",
        "--threads", "2", "--out", b, "--format", "csv");
    assert_int_equal(r.status, 0);
    run_free(&r);
    size_t n1 = 0, n2 = 0;
    unsigned char *f1 = slurp(path_in(a, "weights.safetensors"), &n1);
    unsigned char *f2 = slurp(path_in(b, "weights.safetensors"), &n2);
    assert_int_equal(n1, n2);
    assert_memory_equal(f1, f2, n1);
    free(f1);
    free(f2);
    run_rmdir(a);
    run_rmdir(b);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* --sleep waits for the delay for real: the process lasts at least the
 * effective time. CSV on stdout is the history. */
static void test_sleep_and_csv(void **state)
{
    (void)state;
    struct run_result r;
    const double t0 = now_s();
    RUN(&r, "--data", datadir, "--model", "mlp:784-16-10", "--epochs", "1",
        "--speed-factor", "4", "--sleep", "--format", "csv", "--quiet");
    const double wall = now_s() - t0;
    assert_int_equal(r.status, 0);
    assert_int_equal(strncmp(r.out, "epoch,loss,", 11), 0);
    /* one header line and one row */
    const char *nl = strchr(r.out, '\n');
    assert_non_null(nl);
    nl = strchr(nl + 1, '\n');
    assert_non_null(nl);
    assert_string_equal(nl + 1, "");
    double epoch_s = 0.0;
    const char *row = strchr(r.out, '\n') + 1;
    /* epoch,loss,train_accuracy,test_accuracy,epoch_time_s,... */
    assert_int_equal(sscanf(row, "%*[^,],%*[^,],%*[^,],%*[^,],%lf", &epoch_s),
                     1);
    assert_true(wall >= 4.0 * epoch_s - 1e-3);
    run_free(&r);
}

/* A slice of the real data, when installed. */
static void test_fashion_mnist_slice(void **state)
{
    (void)state;
    struct stat sb;
    if (stat(FASHION_DIR, &sb) != 0) {
        skip();
    }
    char *t = (char *)train_app;
    char *argv[] = {t, "--train-limit", "3000", "--test-limit", "1000",
                    "--epochs", "2", "--format", "json", NULL};
    json_t *j = run_json("fashion-mnist", argv);
    assert_int_equal(jint(j, "config", "train_samples"), 3000);
    assert_int_equal(jint(j, "config", "test_samples"), 1000);
    /* 784-64-10 reaches about 0.75 after 2 x 3000 images; chance is 0.1 */
    assert_true(jreal(j, "results", "test_accuracy") > 0.65);
    json_decref(j);
}

static void expect_rejected(const char *why, char *const argv[],
                            const char *needle)
{
    const char *bad = run_rejected(argv, needle);
    if (bad) {
        fail_msg("%s: %s", why, bad);
    }
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void test_rejected_input(void **state)
{
    (void)state;
    char o[700], nosoftmax[700], file[700], under[700], wrongshape[700],
        extra[700], baddata[700], folder[700];
    snprintf(o, sizeof o, "%s/rejected", tmpdir);
    snprintf(nosoftmax, sizeof nosoftmax, "%s/plain.model", tmpdir);
    snprintf(file, sizeof file, "%s/a-file", tmpdir);
    snprintf(under, sizeof under, "%s/a-file/out", tmpdir);
    snprintf(wrongshape, sizeof wrongshape, "%s/wrong.safetensors", tmpdir);
    snprintf(extra, sizeof extra, "%s/extra.safetensors", tmpdir);
    snprintf(baddata, sizeof baddata, "%s/no-such-data", tmpdir);
    snprintf(folder, sizeof folder, "%s/a-folder", tmpdir);
    write_text(nosoftmax, "input 784\ndense 10\n");
    write_text(file, "not a folder\n");
    assert_int_equal(mkdir(folder, 0755), 0);

    /* Weights of the right names with one wrong shape, and weights with a
     * tensor the model does not have. */
    static float zeros[784 * 16];
    struct art_tensor ts[5] = {
        {"dense1.weight", ART_DTYPE_F32, 2, {16, 784}, zeros},
        {"dense1.bias", ART_DTYPE_F32, 1, {16}, zeros},
        {"dense2.weight", ART_DTYPE_F32, 2, {16, 10}, zeros},
        {"dense2.bias", ART_DTYPE_F32, 1, {10}, zeros},
        {"dense3.bias", ART_DTYPE_F32, 1, {10}, zeros},
    };
    assert_int_equal(art_safetensors_save(wrongshape, ts, 4, NULL, NULL, 0,
                                          NULL),
                     ART_OK);
    /* every tensor of mlp:784-16-10, and one more */
    ts[2].shape[0] = 10;
    ts[2].shape[1] = 16;
    assert_int_equal(art_safetensors_save(extra, ts, 5, NULL, NULL, 0, NULL),
                     ART_OK);

    char *m = (char *)train_app, *d = datadir;
    struct {
        const char *why;
        char *argv[12];
        const char *needle;
    } cases[] = {
        {"negative epochs", {m, "--epochs", "-1", "--out", o, NULL},
         "--epochs"},
        {"text epochs", {m, "--epochs", "five", "--out", o, NULL},
         "--epochs"},
        {"zero alpha", {m, "--alpha", "0", "--out", o, NULL}, "--alpha"},
        {"nan alpha", {m, "--alpha", "nan", "--out", o, NULL}, "--alpha"},
        {"zero batch", {m, "--batch", "0", "--out", o, NULL}, "--batch"},
        {"negative seed", {m, "--seed", "-1", "--out", o, NULL}, "--seed"},
        {"optimizer", {m, "--optimizer", "rmsprop", "--out", o, NULL},
         "--optimizer"},
        {"fp64", {m, "--precision", "fp64", "--out", o, NULL},
         "--precision"},
        {"precision", {m, "--precision", "fp8", "--out", o, NULL}, "fp8"},
        {"negative budget", {m, "--max-memory-mb", "-1", "--out", o, NULL},
         "--max-memory-mb"},
        {"zero limit", {m, "--batch-limit", "0", "--out", o, NULL},
         "--batch-limit"},
        {"zero speed", {m, "--speed-factor", "0", "--out", o, NULL},
         "--speed-factor"},
        {"inf speed", {m, "--speed-factor", "inf", "--out", o, NULL},
         "--speed-factor"},
        {"small loss scale", {m, "--loss-scale", "0.5", "--out", o, NULL},
         "--loss-scale"},
        {"large loss scale", {m, "--loss-scale", "1e6", "--out", o, NULL},
         "--loss-scale"},
        {"zero threads", {m, "--threads", "0", "--out", o, NULL},
         "--threads"},
        {"many threads", {m, "--threads", "100000", "--out", o, NULL},
         "--threads"},
        {"zero train limit", {m, "--train-limit", "0", "--out", o, NULL},
         "--train-limit"},
        {"test limit", {m, "--test-limit", "x", "--out", o, NULL},
         "--test-limit"},
        {"format", {m, "--format", "xml", "--out", o, NULL}, "--format"},
        {"unknown option", {m, "--frobnicate", "--out", o, NULL},
         "--frobnicate"},
        {"missing value", {m, "--out", o, "--epochs", NULL}, "--epochs"},
        {"stray argument", {m, "extra", "--out", o, NULL}, "extra"},
        {"bad preset", {m, "--model", "mlp:784-0-10", "--out", o, NULL},
         "mlp:784-0-10"},
        {"no softmax", {m, "--model", nosoftmax, "--data", d, "--out", o,
         NULL}, "dense1"},
        {"batch over limit", {m, "--train-limit", "10", "--batch", "32",
         "--data", d, "--out", o, NULL}, "--batch"},
        {"out is a file", {m, "--data", d, "--out", file, NULL},
         "a-file: Not a directory"},
        {"out under a file", {m, "--data", d, "--out", under, NULL},
         "--out"},
        {"weights to a folder", {m, "--data", d, "--save-weights", folder,
         NULL}, "is a folder"},
        {"weights over an output", {m, "--data", d, "--out", o,
         "--save-weights", "run_log.json", NULL}, "--save-weights"},
        {"missing init weights", {m, "--data", d, "--model", "mlp:784-16-10",
         "--init-weights", "/nonexistent/w.safetensors", "--out", o, NULL},
         "/nonexistent/w.safetensors"},
        {"init weights shape", {m, "--data", d, "--model", "mlp:784-16-10",
         "--init-weights", wrongshape, "--out", o, NULL}, "dense2.weight"},
        {"init weights extra", {m, "--data", d, "--model", "mlp:784-16-10",
         "--init-weights", extra, "--out", o, NULL}, "dense3.bias"},
        {"init weights other model", {m, "--data", d, "--model",
         "mlp:784-32-10", "--init-weights", extra, "--out", o, NULL},
         "--init-weights"},
        {"missing data", {m, "--data", baddata, "--out", o, NULL},
         "no-such-data"},
        {"data of other size", {m, "--data", d, "--model", "mlp:100-10",
         "--out", o, NULL}, "reads 100 values per sample; the data has 1x28x28"},
        {"too few classes", {m, "--data", d, "--model", "mlp:784-16-4",
         "--out", o, NULL}, "4 outputs"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        expect_rejected(cases[i].why, cases[i].argv, cases[i].needle);
        /* No output folder, let alone a file. */
        assert_int_equal(run_count_entries(o), -1);
    }
    assert_int_equal(run_count_entries(folder), 0);
    rmdir(folder);
    unlink(nosoftmax);
    unlink(file);
    unlink(wrongshape);
    unlink(extra);
}

static void test_help_version(void **state)
{
    (void)state;
    struct run_result r;
    RUN(&r, "--help");
    assert_int_equal(r.status, 0);
    static const char *const opts[] = {
        "--model", "--epochs", "--alpha", "--batch", "--seed", "--optimizer",
        "--precision", "--simulate", "--max-memory-mb", "--batch-limit",
        "--speed-factor", "--sleep", "--loss-scale", "--threads", "--data",
        "--train-limit", "--test-limit", "--init-weights", "--save-weights",
        "--out", "--format", "--quiet"};
    for (size_t i = 0; i < sizeof opts / sizeof opts[0]; i++) {
        if (!strstr(r.out, opts[i])) {
            fail_msg("--help does not mention %s", opts[i]);
        }
    }
    run_free(&r);
    RUN(&r, "-h");
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "usage: edgefit-train"));
    run_free(&r);
    RUN(&r, "--version");
    assert_int_equal(r.status, 0);
    assert_int_equal(strncmp(r.out, "edgefit-train ", 14), 0);
    run_free(&r);
}

static int setup(void **state)
{
    (void)state;
    if (!mkdtemp(tmpdir)) {
        return -1;
    }
    snprintf(datadir, sizeof datadir, "%s/data", tmpdir);
    if (mkdir(datadir, 0755) != 0) {
        return -1;
    }
    write_split("train", TRAIN_COUNT, 1);
    write_split("t10k", TEST_COUNT, 2);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    run_rmdir(datadir);
    rmdir(tmpdir);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: test-train PATH-TO-edgefit-train\n");
        return 2;
    }
    train_app = argv[1];
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_run_log_and_history),
        cmocka_unit_test(test_init_weights_round_trip),
        cmocka_unit_test(test_batchnorm_weights),
        cmocka_unit_test(test_tight_budget),
        cmocka_unit_test(test_int8),
        cmocka_unit_test(test_fp16),
        cmocka_unit_test(test_save_weights_path),
        cmocka_unit_test(test_threads_identical),
        cmocka_unit_test(test_sleep_and_csv),
        cmocka_unit_test(test_fashion_mnist_slice),
        cmocka_unit_test(test_rejected_input),
        cmocka_unit_test(test_help_version),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
