/* The roofline chart of edgefit-layerwise and edgefit-report: every
 * point predicted on the device lies on one of the roofs drawn. A device
 * with caches predicts a layer whose bytes fit a cache against that
 * cache's bandwidth; the chart once drew only the main-memory roof, and
 * the host's points sat far above it. Truth: the roofline itself,
 * min(peak, intensity x bandwidth) of the level prof_predict chose. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "edgefit/profile.h"
#include "layerwise.h"

/* Is y at intensity x on one of the chart's roofs? */
static bool on_a_roof(const struct art_chart *c, double x, double y)
{
    for (size_t i = 0; i < c->n_roofs; i++) {
        const double roof = fmin(c->roofs[i].ceiling,
                                 x * c->roofs[i].slope);
        if (fabs(y - roof) <= 1e-9 * roof) {
            return true;
        }
    }
    return false;
}

static void check(int device_is_host)
{
    /* 10 GB/s main memory, an L2 of 1 MiB at 100 GB/s, 100 GMAC/s */
    struct prof_device dev = {.bandwidth_gbps = 10, .peak_gmacs = 100,
                              .cache_count = 1};
    strcpy(dev.name, "cached");
    dev.cache[0] = (struct prof_cache_level){2, 1u << 20, 100};
    /* input staging, a layer whose 0.5 MB fit the L2 (intensity 2: the
     * L2 roof gives 100, main memory 20 GMAC/s), one of 100 MB */
    struct prof_exec_op_row ops[3];
    memset(ops, 0, sizeof ops);
    ops[0].info = (struct prof_exec_op_info){.layer = "input",
                                             .kind = MEMEST_KIND_INPUT};
    ops[1].info = (struct prof_exec_op_info){
        .layer = "small", .kind = MEMEST_KIND_DENSE, .macs = 1000000,
        .bytes_moved = 500000};
    ops[2].info = (struct prof_exec_op_info){
        .layer = "large", .kind = MEMEST_KIND_DENSE, .macs = 200000000,
        .bytes_moved = 100000000};
    struct prof_layer_prediction pred[3];
    memset(pred, 0, sizeof pred);
    for (size_t i = 1; i < 3; i++) {
        ops[i].achieved_gmacs = 1;
        assert_int_equal(prof_predict(&dev, ops[i].info.macs,
                                      ops[i].info.bytes_moved,
                                      &pred[i].pred),
                         PROF_OK);
    }
    assert_int_equal(pred[1].pred.memory_level, 2);
    assert_int_equal(pred[2].pred.memory_level, 0);

    struct memest_layer_estimate rows[3];
    memset(rows, 0, sizeof rows);
    struct layerwise r;
    memset(&r, 0, sizeof r);
    r.rows = rows; /* the bar charts' rows: not under test */
    r.nrows = 3;
    r.prof.count = 3;
    r.prof.ops = ops;
    r.pred = pred;
    r.device = dev;
    r.host_dram = dev;
    r.host_dram.cache_count = 0;
    r.device_is_host = device_is_host;
    struct layerwise_opts o;
    memset(&o, 0, sizeof o);
    o.precision = MEMEST_FP32;

    struct layerwise_charts c;
    assert_true(layerwise_charts_init(&o, &r, &c));
    assert_int_equal(c.roofline.series[1].n, 2);
    for (size_t k = 0; k < 2; k++) {
        const double x = c.x[k], y = c.dev_y[k];
        if (!on_a_roof(&c.roofline, x, y)) {
            fail_msg("%s: predicted %.6g GMAC/s at %.3g MAC/B is on none "
                     "of the %zu roofs drawn", c.point_names[k], y, x,
                     c.roofline.n_roofs);
        }
    }
    /* the small layer: 1e6 MAC / (0.5 MB / 100 GB/s) = 200 > peak 100 */
    assert_true(fabs(c.dev_y[0] - 100.0) < 1e-9);
    /* the large one: intensity 2 on main memory, 20 GMAC/s */
    assert_true(fabs(c.dev_y[1] - 20.0) < 1e-9);
    layerwise_charts_free(&c);
}

static void test_device_with_caches(void **state)
{
    (void)state;
    check(0);
}

static void test_host(void **state)
{
    (void)state;
    check(1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_device_with_caches),
        cmocka_unit_test(test_host),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
