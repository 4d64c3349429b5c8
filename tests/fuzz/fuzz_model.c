/*
 * Fuzz target for the model parser. Any input must either be rejected with
 * a status and a located, non-empty message, or give a model whose
 * estimates are consistent: per-layer columns sum to the totals, the
 * canonical text parses back to the same text, and the fitted batch is
 * the largest that fits.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "edgefit/memest.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)                                                          \
    do {                                                                     \
        if (!(cond)) {                                                       \
            abort();                                                         \
        }                                                                    \
    } while (0)

static void check_estimates(const memest_model *m, uint64_t batch,
                            enum memest_precision prec)
{
    size_t n = memest_estimate_row_count(m);
    struct memest_layer_estimate *rows = malloc(n * sizeof *rows);
    struct memest_totals t;
    uint64_t params = 0;
    uint64_t act = 0;
    uint64_t macs = 0;
    size_t got = 0;
    int st_rows;
    int st_tot;

    CHECK(rows != NULL);
    st_rows = memest_estimate_layers(m, batch, prec, rows, n, &got);
    st_tot = memest_estimate_totals(m, batch, prec, &t);
    CHECK(got == n);
    if (st_tot == MEMEST_OK) {
        /* totals fit in 64 bits, so every row does too */
        CHECK(st_rows == MEMEST_OK);
        for (size_t i = 0; i < n; i++) {
            CHECK(strlen(rows[i].output_shape) > 0);
            params += rows[i].parameter_bytes;
            act += rows[i].activation_bytes;
            macs += rows[i].macs;
        }
        CHECK(params == t.parameter_bytes);
        CHECK(act == t.activation_bytes);
        CHECK(macs == t.macs);
        CHECK(t.peak_inference_bytes <= t.total_bytes);
        CHECK(t.peak_inference_bytes >= t.parameter_bytes);
    } else {
        CHECK(st_tot == MEMEST_E_OVERFLOW);
    }
    free(rows);
}

/* The arena plan: tensors alive at a common step never share bytes
 * (views share their root's), every tensor fits, and the arena is between
 * the live-set lower bound and the sum of all buffers. */
static void check_plan(const memest_model *m, uint64_t batch,
                       enum memest_precision prec)
{
    struct memest_arena_plan p;
    uint64_t sum = 0;
    int st = memest_plan_arena(m, batch, prec, &p);
    if (st != MEMEST_OK) {
        CHECK(st == MEMEST_E_OVERFLOW);
        return;
    }
    CHECK(p.tensor_count == memest_model_tensor_count(m));
    for (size_t t = 0; t < p.tensor_count; t++) {
        CHECK(p.first[t] <= p.last[t]);
        CHECK(p.offset[t] + p.bytes[t] <= p.arena_bytes);
        if (p.alias[t] == t) {
            sum += p.bytes[t];
        } else {
            CHECK(p.alias[t] < t && p.offset[t] == p.offset[p.alias[t]]);
        }
        /* quadratic: only on models a fuzzer makes quickly */
        for (size_t u = 0; u < t && p.tensor_count < 512; u++) {
            if (p.alias[t] == p.alias[u]) {
                continue;
            }
            CHECK(!(p.first[t] <= p.last[u] && p.first[u] <= p.last[t] &&
                    p.offset[t] < p.offset[u] + p.bytes[u] &&
                    p.offset[u] < p.offset[t] + p.bytes[t]));
        }
    }
    CHECK(p.live_lower_bound_bytes <= p.arena_bytes);
    CHECK(p.arena_bytes <= sum);
    memest_arena_plan_free(&p);
}

static void check_round_trip(const memest_model *m)
{
    size_t len = 0;
    size_t len2 = 0;
    char *a;
    char *b;
    memest_model *again = NULL;

    CHECK(memest_model_write(m, NULL, 0, &len) == MEMEST_E_RANGE);
    a = malloc(len + 1);
    b = malloc(len + 1);
    CHECK(a != NULL && b != NULL);
    CHECK(memest_model_write(m, a, len + 1, &len2) == MEMEST_OK);
    CHECK(len2 == len && strlen(a) == len);
    CHECK(memest_model_parse(a, &again, NULL) == MEMEST_OK);
    CHECK(memest_model_layer_count(again) == memest_model_layer_count(m));
    CHECK(memest_model_parameter_count(again) ==
          memest_model_parameter_count(m));
    CHECK(memest_model_write(again, b, len + 1, &len2) == MEMEST_OK);
    CHECK(strcmp(a, b) == 0);
    memest_model_destroy(again);
    free(a);
    free(b);
}

static void check_fit(const memest_model *m, double budget)
{
    uint64_t b = 0;
    double mb;
    CHECK(memest_fit_batch(m, 64, budget, MEMEST_FP16, 64, &b) == MEMEST_OK);
    CHECK(b <= 64);
    /* fitted by peak inference memory; a batch too large to count does
     * not fit */
    if (b > 0) {
        CHECK(memest_measure_mb(m, b, MEMEST_FP16,
                                MEMEST_MEASURE_PEAK_INFERENCE, MEMEST_OPT_SGD,
                                &mb) == MEMEST_OK);
        CHECK(mb <= budget);
    }
    if (b < 64) {
        const int st = memest_measure_mb(m, b + 1, MEMEST_FP16,
                                         MEMEST_MEASURE_PEAK_INFERENCE,
                                         MEMEST_OPT_SGD, &mb);
        CHECK(st == MEMEST_E_OVERFLOW || (st == MEMEST_OK && mb > budget));
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    memest_model *m = NULL;
    struct memest_diag d;
    struct memest_hw_config cfg;
    struct memest_run_plan plan;
    int st = memest_model_parse_buffer(data ? (const char *)data : "", size,
                                       "fuzz", &m, &d);

    if (st != MEMEST_OK) {
        CHECK(m == NULL);
        CHECK(st == MEMEST_E_PARSE || st == MEMEST_E_RANGE ||
              st == MEMEST_E_SHAPE || st == MEMEST_E_OVERFLOW ||
              st == MEMEST_E_NOMEM);
        CHECK(memchr(d.message, '\0', sizeof d.message) != NULL);
        CHECK(d.message[0] != '\0');
        CHECK(st == MEMEST_E_NOMEM || (d.line >= 1 && d.column >= 1));
        CHECK(strcmp(d.source, "fuzz") == 0);
        return 0;
    }
    CHECK(memest_model_layer_count(m) >= 1);
    for (size_t i = 0; i < memest_model_layer_count(m); i++) {
        const struct memest_layer *L = memest_model_layer(m, i);
        CHECK(L->name != NULL && L->name[0] != '\0');
        CHECK(L->parameter_count == L->weight_count + L->bias_count);
    }
    check_estimates(m, 1, MEMEST_FP32);
    check_estimates(m, 7, MEMEST_INT8);
    check_estimates(m, UINT64_C(1) << 40, MEMEST_FP64);
    check_plan(m, 1, MEMEST_FP32);
    check_plan(m, 3, MEMEST_FP16);
    check_round_trip(m);
    check_fit(m, 1.0);
    check_fit(m, 0.001);
    memest_hw_config_init(&cfg);
    cfg.enabled = 1;
    cfg.max_memory_mb = 0.5;
    CHECK(memest_prepare_run(m, 100, &cfg, &plan) == MEMEST_OK);
    CHECK(plan.batch_size >= 1 && plan.batch_size <= 100);
    CHECK(plan.warning_count <= MEMEST_PLAN_MAX_WARNINGS);
    memest_model_destroy(m);
    return 0;
}
