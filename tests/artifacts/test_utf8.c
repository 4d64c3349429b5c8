/* The UTF-8 validator libmemest and libartifacts share (internal/utf8.h)
 * against an independent decoder written from the definition: decode the
 * code point arithmetically, then reject overlong forms, surrogates and
 * anything above U+10FFFF. Every string of one to three bytes, every
 * valid four-byte sequence and every four-byte lead with boundary
 * continuation bytes are compared. TAP output. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "utf8.h"

/* Length of the sequence at s[0..n) or 0 when it is not valid. */
static size_t ref_decode(const unsigned char *s, size_t n)
{
    size_t len;
    uint32_t cp;
    if (s[0] < 0x80) {
        return 1;
    } else if ((s[0] & 0xE0) == 0xC0) {
        len = 2;
        cp = s[0] & 0x1Fu;
    } else if ((s[0] & 0xF0) == 0xE0) {
        len = 3;
        cp = s[0] & 0x0Fu;
    } else if ((s[0] & 0xF8) == 0xF0) {
        len = 4;
        cp = s[0] & 0x07u;
    } else {
        return 0;
    }
    if (n < len) {
        return 0;
    }
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80) {
            return 0;
        }
        cp = cp << 6 | (s[i] & 0x3Fu);
    }
    static const uint32_t min_cp[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < min_cp[len] || (cp >= 0xD800 && cp <= 0xDFFF) ||
        cp > 0x10FFFF) {
        return 0;
    }
    return len;
}

/* Offset of the first invalid sequence, n when valid. */
static size_t ref_invalid_at(const unsigned char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        const size_t len = ref_decode(s + i, n - i);
        if (len == 0) {
            return i;
        }
        i += len;
    }
    return n;
}

static int failures;

static void compare(const unsigned char *s, size_t n)
{
    const size_t got = utf8_invalid_at(s, n), want = ref_invalid_at(s, n);
    if (got != want && failures++ < 10) {
        printf("# bytes");
        for (size_t i = 0; i < n; i++) {
            printf(" %02X", s[i]);
        }
        printf(": validator says %zu, reference %zu\n", got, want);
    }
}

/* Encode cp (not checked) the textbook way. */
static size_t encode(uint32_t cp, unsigned char *s)
{
    if (cp < 0x80) {
        s[0] = (unsigned char)cp;
        return 1;
    }
    if (cp < 0x800) {
        s[0] = (unsigned char)(0xC0 | cp >> 6);
        s[1] = (unsigned char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        s[0] = (unsigned char)(0xE0 | cp >> 12);
        s[1] = (unsigned char)(0x80 | (cp >> 6 & 0x3F));
        s[2] = (unsigned char)(0x80 | (cp & 0x3F));
        return 3;
    }
    s[0] = (unsigned char)(0xF0 | cp >> 18);
    s[1] = (unsigned char)(0x80 | (cp >> 12 & 0x3F));
    s[2] = (unsigned char)(0x80 | (cp >> 6 & 0x3F));
    s[3] = (unsigned char)(0x80 | (cp & 0x3F));
    return 4;
}

int main(void)
{
    int test = 0;
    printf("1..4\n");

    unsigned char s[4];
    for (unsigned a = 0; a < 256; a++) {
        s[0] = (unsigned char)a;
        compare(s, 1);
        for (unsigned b = 0; b < 256; b++) {
            s[1] = (unsigned char)b;
            compare(s, 2);
            for (unsigned c = 0; c < 256; c++) {
                s[2] = (unsigned char)c;
                compare(s, 3);
            }
        }
    }
    printf("%s %d - every string of 1 to 3 bytes\n", failures ? "not ok" : "ok",
           ++test);

    int before = failures;
    static const unsigned char edge[] = {0x00, 0x7F, 0x80, 0x8F, 0x90,
                                         0x9F, 0xA0, 0xBF, 0xC0, 0xFF};
    for (unsigned a = 0xF0; a < 256; a++) {
        for (unsigned b = 0; b < 256; b++) {
            for (size_t c = 0; c < sizeof edge; c++) {
                for (size_t d = 0; d < sizeof edge; d++) {
                    const unsigned char q[4] = {(unsigned char)a,
                                                (unsigned char)b, edge[c],
                                                edge[d]};
                    compare(q, 4);
                }
            }
        }
    }
    printf("%s %d - four-byte leads with boundary continuations\n",
           failures > before ? "not ok" : "ok", ++test);

    /* Every scalar value encodes to a sequence the validator accepts;
     * every surrogate encoded the same way is refused. */
    before = failures;
    size_t accepted = 0, refused = 0;
    for (uint32_t cp = 0; cp <= 0x10FFFF; cp++) {
        const size_t n = encode(cp, s);
        const bool surrogate = cp >= 0xD800 && cp <= 0xDFFF;
        const bool ok = utf8_invalid_at(s, n) == n;
        accepted += ok && !surrogate;
        refused += !ok && surrogate;
    }
    const bool all = accepted == 0x110000 - 0x800 && refused == 0x800;
    if (!all) {
        printf("# %zu scalar values accepted, %zu surrogates refused\n",
               accepted, refused);
        failures++;
    }
    printf("%s %d - every scalar value, no surrogate\n",
           all ? "ok" : "not ok", ++test);

    /* Fed byte by byte across a split (as the CSV reader does between two
     * read buffers), the state machine agrees with the one-shot check. */
    before = failures;
    const unsigned char text[] = "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80";
    for (size_t split = 0; split < sizeof text - 1; split++) {
        struct utf8_state st = UTF8_STATE_INIT;
        bool ok = true;
        for (size_t i = 0; i < split; i++) {
            ok = ok && utf8_step(&st, text[i]);
        }
        struct utf8_state copy = st; /* the state is all there is */
        for (size_t i = split; i < sizeof text - 1; i++) {
            ok = ok && utf8_step(&copy, text[i]);
        }
        if (!ok || !utf8_complete(&copy)) {
            printf("# split at %zu refused\n", split);
            failures++;
        }
    }
    printf("%s %d - a valid text split anywhere\n",
           failures > before ? "not ok" : "ok", ++test);
    return failures ? 1 : 0;
}
