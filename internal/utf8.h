/* UTF-8 validation shared by libmemest (model files) and libartifacts (CSV
 * files). Each library compiles its own copy (everything here is static
 * inline), so neither depends on the other; not installed.
 *
 * The rules are those of RFC 3629 / Unicode 15 table 3-7: no overlong
 * forms, no surrogates (U+D800..U+DFFF), nothing above U+10FFFF. Bytes are
 * fed one at a time so that a sequence may straddle two read buffers. */
#ifndef EDGEFIT_INTERNAL_UTF8_H
#define EDGEFIT_INTERNAL_UTF8_H

#include <stdbool.h>
#include <stddef.h>

/* The decoder between two bytes: how many continuation bytes are still
 * expected and the range the next one must fall in (the second byte of a
 * sequence is narrower for E0, ED, F0 and F4; later ones are 80..BF). */
struct utf8_state {
    unsigned need;
    unsigned char lo, hi;
};

#define UTF8_STATE_INIT {0, 0x80, 0xBF}

/* The three bytes of U+FEFF, which some editors put at the start of a
 * file; it is not text and is skipped. */
static inline bool utf8_is_bom(const unsigned char *s, size_t n)
{
    return n >= 3 && s[0] == 0xEF && s[1] == 0xBB && s[2] == 0xBF;
}

/* Feed one byte; false when it cannot continue or start a sequence. The
 * state is then undefined until reset. */
static inline bool utf8_step(struct utf8_state *st, unsigned char b)
{
    if (st->need > 0) {
        if (b < st->lo || b > st->hi) {
            return false;
        }
        st->need--;
        st->lo = 0x80;
        st->hi = 0xBF;
        return true;
    }
    if (b < 0x80) {
        return true;
    }
    st->lo = 0x80;
    st->hi = 0xBF;
    if (b >= 0xC2 && b <= 0xDF) {
        st->need = 1;
    } else if (b >= 0xE0 && b <= 0xEF) {
        st->need = 2;
        if (b == 0xE0) {
            st->lo = 0xA0; /* E0 80..9F would be overlong */
        } else if (b == 0xED) {
            st->hi = 0x9F; /* ED A0..BF are the surrogates */
        }
    } else if (b >= 0xF0 && b <= 0xF4) {
        st->need = 3;
        if (b == 0xF0) {
            st->lo = 0x90; /* F0 80..8F would be overlong */
        } else if (b == 0xF4) {
            st->hi = 0x8F; /* above U+10FFFF */
        }
    } else {
        return false; /* 80..C1 (stray or overlong lead), F5..FF */
    }
    return true;
}

/* True when no sequence is left open (the text may end here). */
static inline bool utf8_complete(const struct utf8_state *st)
{
    return st->need == 0;
}

/* The offset of the first byte of the first invalid sequence in s[0..n),
 * or n when all of it is valid UTF-8 (a sequence cut short by the end is
 * invalid). */
static inline size_t utf8_invalid_at(const unsigned char *s, size_t n)
{
    struct utf8_state st = UTF8_STATE_INIT;
    size_t start = 0;
    for (size_t i = 0; i < n; i++) {
        if (st.need == 0) {
            start = i;
        }
        if (!utf8_step(&st, s[i])) {
            return start;
        }
    }
    return st.need == 0 ? n : start;
}

#endif
