/* The AVX2 int8 lowering (kern_im2col_s8): im2col_s8_tmpl.h's body (its
 * comment says how it works) over SSE byte vectors, pshufb its lookup. */
#include <immintrin.h>
#include <stddef.h>
#include <string.h>

#include "conv.h"
#include "transpose_u8.h"

typedef __m128i i8x16;

static inline i8x16 v_zero(void)
{
    return _mm_setzero_si128();
}

static inline i8x16 v_load16(const int8_t *p)
{
    return _mm_loadu_si128((const __m128i *)p);
}

static inline void v_store16(int8_t *p, i8x16 v)
{
    _mm_storeu_si128((__m128i *)p, v);
}

static inline i8x16 v_tbl(i8x16 v, i8x16 ctl)
{
    return _mm_shuffle_epi8(v, ctl);
}

static inline i8x16 v_add8(i8x16 a, i8x16 b)
{
    return _mm_add_epi8(a, b);
}

static inline i8x16 v_rows4(int32_t r0, int32_t r1, int32_t r2, int32_t r3)
{
    return _mm_setr_epi32(r0, r1, r2, r3);
}

static inline void v_transpose16(i8x16 r[16])
{
    transpose16x16_u8(r);
}

static inline __m128i load_w(const int8_t *p, int w)
{
    if (w == 4) {
        int32_t v;
        memcpy(&v, p, 4);
        return _mm_cvtsi32_si128(v);
    }
    if (w == 8) {
        return _mm_loadl_epi64((const __m128i *)p);
    }
    return _mm_loadu_si128((const __m128i *)p);
}

static inline void store_w(int8_t *p, __m128i v, int w)
{
    if (w == 4) {
        const int32_t t = _mm_cvtsi128_si32(v);
        memcpy(p, &t, 4);
    } else if (w == 8) {
        _mm_storel_epi64((__m128i *)p, v);
    } else {
        _mm_storeu_si128((__m128i *)p, v);
    }
}

/* Where output column ox's window of kw taps, first column ix0 (< 0 in
 * the left padding), is loaded from and how it is unpacked: the w-byte
 * load starts at column *st (inside [0, in_w - w]); the pshufb control
 * puts load byte t + ix0 - st at tap t and is exactly 0x80 (a zero) for
 * taps in the padding. */
static inline __m128i window_ctl(ptrdiff_t ix0, ptrdiff_t iw, int w,
                                 ptrdiff_t *st)
{
    const __m128i iota =
        _mm_setr_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    ptrdiff_t s = ix0 < 0 ? 0 : ix0;
    s = s < iw - w ? s : iw - w;
    *st = s;
    /* tap t is valid for t in [lo, hi), both in [0, 16], so every byte
     * lane compare below is exact */
    const ptrdiff_t lo = ix0 < 0 ? (-ix0 < 16 ? -ix0 : 16) : 0;
    ptrdiff_t hi = iw - ix0;
    hi = hi < 0 ? 0 : hi < 16 ? hi : 16;
    const __m128i valid = _mm_and_si128(
        _mm_cmpgt_epi8(iota, _mm_set1_epi8((char)(lo - 1))),
        _mm_cmpgt_epi8(_mm_set1_epi8((char)hi), iota));
    return _mm_blendv_epi8(_mm_set1_epi8((char)0x80),
                           _mm_add_epi8(iota, _mm_set1_epi8((char)(ix0 - s))),
                           valid);
}

#define IM2COL_FN(name) name##_avx2
#include "../im2col_s8_tmpl.h"
