#include <ctype.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "verdict_check.h"

/* Whether some number of j, times scale, rounds to x printed with
 * `decimals` digits after the point (sign ignored: "0.39 points below"
 * prints a difference the file holds with its sign). */
static bool holds(const json_t *j, double x, double scale, int decimals)
{
    if (json_is_number(j)) {
        const double v = fabs(json_number_value(j)) * scale;
        /* half a unit of the last printed digit, and a relative slack
         * for the binary representation of the printed value */
        const double tol = 0.5 * pow(10.0, -decimals) * (1 + 1e-9) +
                           1e-12 * fabs(x);
        return fabs(v - fabs(x)) <= tol;
    }
    if (json_is_object(j)) {
        const char *key;
        json_t *v;
        json_object_foreach((json_t *)j, key, v) {
            if (holds(v, x, scale, decimals)) {
                return true;
            }
        }
    }
    if (json_is_array(j)) {
        for (size_t i = 0; i < json_array_size(j); i++) {
            if (holds(json_array_get(j, i), x, scale, decimals)) {
                return true;
            }
        }
    }
    return false;
}

/* A word that is a number once the punctuation around it is gone
 * ("(0.39", "4096,", "100%"); names with digits (rpi4, int8, fp32's,
 * top-1, mlp:784-64-10) are not. */
static bool number_word(const char *w, size_t n, double *x, int *decimals,
                        bool *percent)
{
    char buf[64];
    while (n > 0 && strchr("(", *w)) {
        w++;
        n--;
    }
    while (n > 0 && strchr(",;:.)", w[n - 1])) {
        n--;
    }
    *percent = n > 0 && w[n - 1] == '%';
    if (*percent) {
        n--;
    }
    if (n == 0 || n >= sizeof buf) {
        return false;
    }
    memcpy(buf, w, n);
    buf[n] = '\0';
    if (!isdigit((unsigned char)buf[0]) &&
        !((buf[0] == '+' || buf[0] == '-') && isdigit((unsigned char)buf[1]))) {
        return false;
    }
    char *end;
    *x = strtod(buf, &end);
    if (*end != '\0') {
        return false;
    }
    const char *dot = strchr(buf, '.');
    const char *e = strpbrk(buf, "eE");
    if (e) {
        /* 1.49e-08: the digits after the point, shifted by the exponent */
        const int exp10 = atoi(e + 1);
        *decimals = (dot ? (int)(e - dot - 1) : 0) - exp10;
    } else if (dot) {
        *decimals = (int)strlen(dot + 1);
    } else {
        /* An integer of two significant digits and trailing zeros
         * ("110", "2300") may be a figure rounded to two significant
         * digits (the device latency, the energy): rounded to its tens
         * or hundreds on the line. */
        const size_t digits = strspn(buf + (buf[0] == '+' || buf[0] == '-'),
                                     "0123456789");
        size_t zeros = 0;
        while (zeros < n && buf[n - 1 - zeros] == '0') {
            zeros++;
        }
        *decimals = digits >= 3 && zeros >= digits - 2 ? -(int)(digits - 2)
                                                       : 0;
    }
    return true;
}

const char *verdict_check(const json_t *summary)
{
    static char why[512];
    const json_t *lines = json_object_get(summary, "verdict");
    if (!json_is_array(lines) || json_array_size(lines) == 0) {
        return "summary.json has no verdict";
    }
    const json_t *fits = json_object_get(summary, "fits");
    for (size_t i = 0; i < json_array_size(lines); i++) {
        const char *line = json_string_value(json_array_get(lines, i));
        if (!line) {
            return "a verdict line is not text";
        }
        if (strncmp(line, "Memory:", 7) == 0) {
            const bool says_no = strstr(line, "DOES NOT FIT") != NULL;
            const bool says_yes = strstr(line, "fits") != NULL ||
                                  strstr(line, "not a constraint") != NULL;
            if (!json_is_boolean(fits) ||
                (says_no && json_is_true(fits)) ||
                (says_yes && !says_no && !json_is_true(fits))) {
                snprintf(why, sizeof why, "'%.200s' against \"fits\": %s",
                         line, json_is_true(fits) ? "true" : "false");
                return why;
            }
        }
        const char *p = line;
        while (*p) {
            p += strspn(p, " ");
            const size_t n = strcspn(p, " ");
            double x;
            int decimals;
            bool percent;
            if (n > 0 && number_word(p, n, &x, &decimals, &percent)) {
                const char *next = p + n + strspn(p + n, " ");
                double scale = 1;
                if (percent || strncmp(next, "point", 5) == 0) {
                    scale = 100;
                } else if (strncmp(next, "mJ", 2) == 0) {
                    scale = 1000;
                }
                if (!holds(summary, x, scale, decimals)) {
                    snprintf(why, sizeof why, "%.*s in '%.300s' is none "
                             "of summary.json's figures", (int)n, p, line);
                    return why;
                }
            }
            p += n;
        }
    }
    return NULL;
}
