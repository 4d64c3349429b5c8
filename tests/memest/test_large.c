/*
 * Import and planning stay fast on large models (assertions on behaviour,
 * not time; a quadratic step would make this test time out):
 *  - ONNX import of N unnamed nodes of one type names them as unique_name
 *    promises: the fallback, then fallback_2, fallback_3, ... in order,
 *    all distinct (N = 100,000: the O(N^2) probing took minutes);
 *  - the arena plan of a chain of N layers of one size needs exactly two
 *    buffers, the live-set lower bound, with every tensor placed apart
 *    from its neighbours (N = 100,000);
 *  - memest_plan_buffers on N buffers of random lifetimes gives the same
 *    offsets as the quadratic greedy placement written out here (the
 *    definition: each buffer, largest first, at the lowest offset, 0 or
 *    an aligned end of a conflict, that overlaps no conflict).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "edgefit/memest.h"
#include "onnx.pb-c.h"

enum { N = 100000 };

/* "input 8" and n standalone relus, as text. */
static char *relu_chain(size_t n)
{
    const size_t cap = 32 + n * 6;
    char *s = malloc(cap);
    size_t len;
    assert_non_null(s);
    len = (size_t)snprintf(s, cap, "name big\ninput 8\n");
    for (size_t i = 0; i < n; i++) {
        memcpy(s + len, "relu\n", 5);
        len += 5;
    }
    s[len] = '\0';
    return s;
}

static void test_unnamed_nodes(void **state)
{
    char *text = relu_chain(N);
    memest_model *m = NULL;
    memest_model *back = NULL;
    unsigned char *buf = NULL;
    size_t len = 0;
    struct memest_diag d;
    Onnx__ModelProto *mp;
    char path[] = "/tmp/edgefit-test-large-XXXXXX";
    int fd;
    (void)state;

    assert_int_equal(memest_model_parse(text, &m, &d), MEMEST_OK);
    if (memest_model_to_onnx(m, &buf, &len, &d) != MEMEST_OK) {
        fail_msg("export: %s", d.message);
    }
    /* the nodes lose their names */
    mp = onnx__model_proto__unpack(NULL, len, buf);
    assert_non_null(mp);
    assert_int_equal(mp->graph->n_node, N);
    for (size_t i = 0; i < mp->graph->n_node; i++) {
        mp->graph->node[i]->name[0] = '\0';
    }
    free(buf);
    len = onnx__model_proto__get_packed_size(mp);
    buf = malloc(len);
    assert_non_null(buf);
    assert_int_equal(onnx__model_proto__pack(mp, buf), len);
    onnx__model_proto__free_unpacked(mp, NULL);
    fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, buf, len), (ssize_t)len);
    close(fd);
    free(buf);

    if (memest_model_load_onnx(path, NULL, &back, &d) != MEMEST_OK) {
        unlink(path);
        fail_msg("import: %s", d.message);
    }
    unlink(path);
    assert_int_equal(memest_model_layer_count(back), N);
    /* the first is the fallback itself; then its suffixes in order */
    const char *base = memest_model_layer(back, 0)->name;
    char want[96];
    assert_true(base[0] != '\0');
    for (size_t i = 1; i < N; i++) {
        snprintf(want, sizeof want, "%s_%zu", base, i + 1);
        assert_string_equal(memest_model_layer(back, i)->name, want);
    }
    memest_model_destroy(back);
    memest_model_destroy(m);
    free(text);
}

static void test_chain_plan(void **state)
{
    char *text = relu_chain(N);
    memest_model *m = NULL;
    struct memest_arena_plan p;
    (void)state;

    assert_int_equal(memest_model_parse(text, &m, NULL), MEMEST_OK);
    assert_int_equal(memest_plan_arena(m, 1, MEMEST_FP32, &p), MEMEST_OK);
    assert_int_equal(p.tensor_count, N + 1);
    /* two buffers of 8 floats: each layer reads one and writes the other */
    assert_int_equal(p.arena_bytes, p.live_lower_bound_bytes);
    assert_int_equal(p.arena_bytes, 2 * p.bytes[0]);
    for (size_t t = 1; t < p.tensor_count; t++) {
        assert_true(p.offset[t] != p.offset[t - 1]);
    }
    memest_arena_plan_free(&p);
    memest_model_destroy(m);
    free(text);
}

/* The definition, in O(n^2) per buffer. */
static void greedy(const struct memest_buffer_req *r, size_t n,
                   uint64_t align, uint64_t *off)
{
    size_t *ord = malloc(n * sizeof *ord);
    char *placed = calloc(n, 1);
    assert_true(ord != NULL && placed != NULL);
    for (size_t i = 0; i < n; i++) {
        ord[i] = i;
    }
    /* largest first, ties by index (stable) */
    for (size_t i = 1; i < n; i++) {
        size_t x = ord[i], j = i;
        while (j > 0 && r[ord[j - 1]].size < r[x].size) {
            ord[j] = ord[j - 1];
            j--;
        }
        ord[j] = x;
    }
    for (size_t k = 0; k < n; k++) {
        const size_t i = ord[k];
        uint64_t best = UINT64_MAX;
        for (size_t c = 0; c <= n; c++) {
            uint64_t o = 0;
            int clash = 0;
            if (c < n) {
                if (!placed[c] || r[c].first > r[i].last ||
                    r[i].first > r[c].last) {
                    continue;
                }
                o = (off[c] + r[c].size + align - 1) & ~(align - 1);
            }
            for (size_t q = 0; q < n && !clash; q++) {
                clash = placed[q] && r[q].first <= r[i].last &&
                        r[i].first <= r[q].last && o < off[q] + r[q].size &&
                        off[q] < o + r[i].size;
            }
            if (!clash && o < best) {
                best = o;
            }
        }
        off[i] = best;
        placed[i] = 1;
    }
    free(ord);
    free(placed);
}

static void test_buffers_match_greedy(void **state)
{
    enum { B = 600 };
    struct memest_buffer_req r[B];
    uint64_t got[B], want[B], arena = 0;
    uint64_t x = 12345;
    (void)state;

    for (int round = 0; round < 4; round++) {
        for (size_t i = 0; i < B; i++) {
            x = x * 6364136223846793005u + 1442695040888963407u;
            r[i].first = (x >> 33) % 400;
            r[i].last = r[i].first + (x >> 20) % (round == 3 ? 300 : 12);
            /* a few sizes, so that ties in the order matter */
            r[i].size = ((x >> 45) % 7) * 48 + (round == 1 ? 0 : 16);
        }
        greedy(r, B, 64, want);
        assert_int_equal(memest_plan_buffers(r, B, 64, got, &arena),
                         MEMEST_OK);
        for (size_t i = 0; i < B; i++) {
            assert_int_equal(got[i], want[i]);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unnamed_nodes),
        cmocka_unit_test(test_chain_plan),
        cmocka_unit_test(test_buffers_match_greedy),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
