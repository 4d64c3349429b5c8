/* 64 x 64 -> 128-bit products in portable C, shared by libmemest (sizes
 * beyond 64 bits, rounded once to a double) and libprofile (Lemire's
 * multiply-shift for an unbiased index). Each library compiles its own
 * copy (everything here is static inline); not installed.
 *
 * No __int128: 32-bit targets (armhf) have none, and the answers must be
 * the same bits on every target. */
#ifndef EDGEFIT_INTERNAL_WIDE_H
#define EDGEFIT_INTERNAL_WIDE_H

#include <stdbool.h>
#include <stdint.h>

/* An unsigned 128-bit value, hi * 2^64 + lo. */
struct wide_u128 {
    uint64_t hi, lo;
};

/* a * b exactly, from four 32 x 32-bit products (schoolbook). */
static inline struct wide_u128 wide_mul_64(uint64_t a, uint64_t b)
{
    const uint64_t a0 = a & 0xffffffffu, a1 = a >> 32;
    const uint64_t b0 = b & 0xffffffffu, b1 = b >> 32;
    const uint64_t p00 = a0 * b0, p01 = a0 * b1;
    const uint64_t p10 = a1 * b0, p11 = a1 * b1;
    /* the middle column: at most 3 * (2^32 - 1), no overflow in 64 bits */
    const uint64_t mid = (p00 >> 32) + (p01 & 0xffffffffu) +
                         (p10 & 0xffffffffu);
    struct wide_u128 r;
    r.lo = (mid << 32) | (p00 & 0xffffffffu);
    r.hi = p11 + (p01 >> 32) + (p10 >> 32) + (mid >> 32);
    return r;
}

/* v * b, false when the product does not fit in 128 bits. */
static inline bool wide_mul_128_64(struct wide_u128 v, uint64_t b,
                                   struct wide_u128 *out)
{
    const struct wide_u128 lo = wide_mul_64(v.lo, b);
    const struct wide_u128 hi = wide_mul_64(v.hi, b);
    if (hi.hi != 0 || hi.lo > UINT64_MAX - lo.hi) {
        return false;
    }
    out->lo = lo.lo;
    out->hi = hi.lo + lo.hi;
    return true;
}

/* v as the nearest double (ties to even), rounded once: above 64 bits the
 * value is shifted right into 64 bits with every bit shifted out kept as a
 * sticky lowest bit, which rounds to 53 bits as the full value would, and
 * the shift is put back by an exact power-of-two scaling. */
static inline double wide_to_double(struct wide_u128 v)
{
    if (v.hi == 0) {
        return (double)v.lo;
    }
    unsigned s = 0; /* the shift that brings hi to zero */
    for (uint64_t h = v.hi; h != 0; h >>= 1) {
        s++;
    }
    /* the top 64 bits of v (its highest set bit at bit 63 of top), and
     * whether any bit below them is set */
    uint64_t top;
    if (s == 64) {
        top = v.hi | (v.lo != 0);
    } else {
        const uint64_t out = v.lo & ((UINT64_C(1) << s) - 1);
        top = (v.hi << (64 - s)) | (v.lo >> s) | (out != 0);
    }
    double scale = 1.0;
    for (unsigned i = 0; i < s; i++) {
        scale *= 2.0;
    }
    return (double)top * scale;
}

/* floor(a * b / 2^64): the top half of the product. */
static inline uint64_t wide_mulhi_64(uint64_t a, uint64_t b)
{
    return wide_mul_64(a, b).hi;
}

#endif
