/* The numbers the apps write and print (apps/common): cli_round_file, the
 * rule of every real in a file or on stdout, against values worked by
 * hand; the terminal's forms of counts, scaled values and megabytes. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cli.h"
#include "table.h"

static void expect(const char *name, double v, const char *want)
{
    const double got = cli_round_file(name, v);
    if (got != strtod(want, NULL)) {
        fail_msg("%s %.17g: %.17g, want %s", name, v, got, want);
    }
}

static void test_round_times(void **state)
{
    (void)state;
    /* the microsecond keeps more than three digits above 1 ms */
    expect("latency_ms", 1.1376585700000001, "1.138");
    expect("latency_ms", 123.456789, "123.457");
    /* three digits keep more below 0.1 ms */
    expect("latency_ms", 0.000412345, "0.000412");
    expect("latency_ms", 0.0123456, "0.0123");
    /* a name with the unit inside, seconds, nanoseconds */
    expect("latency_ms_mean", 0.0060299133, "0.00603");
    expect("epoch_time_s", 1.23456789, "1.234568");
    expect("elapsed_ns", 1234567.891, "1235000"); /* 1234.568 us */
    expect("elapsed_ns", 12.3456, "12.3");
    /* mb_s is a rate, not seconds: six significant digits */
    expect("estimated_bandwidth_mb_s", 123.456789, "123.457");
    /* a word that only contains "ms" is not the unit */
    expect("msg_ratio", 0.123456789, "0.123457");
}

static void test_round_others(void **state)
{
    (void)state;
    expect("accuracy", 0.873533333, "0.8735");
    expect("test_accuracy", 0.5, "0.5");
    expect("top1_agreement", 2.0 / 3.0, "0.6667");
    /* six significant digits */
    expect("parameter_memory_mb", 101780.0 / 1048576.0, "0.097065");
    expect("prediction_error", -0.30312345678, "-0.303123");
    expect("energy_proxy_j", 2.5e-12 / 3.0, "8.33333e-13");
    /* whole numbers, NaN and infinities as they are */
    expect("estimated_total_bytes", 9282560.0, "9282560");
    expect("x", 18446744073709551616.0, "18446744073709551616");
    assert_true(isnan(cli_round_file("latency_ms", NAN)));
    assert_true(cli_round_file("latency_ms", INFINITY) == INFINITY);
    assert_true(cli_round_file(NULL, 0.1234567) == 0.123457);
    /* rounding a rounded value changes nothing */
    const double once = cli_round_file("latency_ms", 0.0123456);
    assert_true(cli_round_file("latency_ms", once) == once);
}

static void test_terminal_forms(void **state)
{
    (void)state;
    char b[48];
    assert_string_equal(cli_format_count(0, b, sizeof b), "0");
    assert_string_equal(cli_format_count(999, b, sizeof b), "999");
    assert_string_equal(cli_format_count(77706, b, sizeof b), "77,706");
    assert_string_equal(cli_format_count(12501632, b, sizeof b),
                        "12,501,632");
    assert_string_equal(cli_format_count(UINT64_MAX, b, sizeof b),
                        "18,446,744,073,709,551,615");
    assert_string_equal(cli_format_scaled(12501632.0, b, sizeof b),
                        "12.5 M");
    assert_string_equal(cli_format_scaled(580160.0, b, sizeof b), "580 k");
    assert_string_equal(cli_format_scaled(640.0, b, sizeof b), "640");
    assert_string_equal(cli_format_scaled(999.7, b, sizeof b), "1 k");
    assert_string_equal(cli_format_scaled(1.5e9, b, sizeof b), "1.5 G");
    /* 0.484 MB: two decimals; below 0.1 MB three digits */
    assert_string_equal(cli_format_mb(507752, b, sizeof b), "0.48 MB");
    assert_string_equal(cli_format_mb(12345, b, sizeof b), "0.0118 MB");
    assert_string_equal(cli_format_mb(0, b, sizeof b), "0.00 MB");
    assert_string_equal(cli_format_mb(3u << 20, b, sizeof b), "3.00 MB");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_times),
        cmocka_unit_test(test_round_others),
        cmocka_unit_test(test_terminal_forms),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
