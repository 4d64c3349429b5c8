/* Private: the float32 matrix-product paths, written once over a small
 * vector vocabulary and instantiated per instruction set by
 * matmul_avx2.c and matmul_avx512.c (each compiled with its own flags).
 *
 * The includer defines:
 *   V, VL            vector type and its float lanes
 *   MASK             lane mask type; mask_n(r) selects lanes [0, r), 1..VL
 *   v_zero() v_load(p) v_store(p, x) v_fma(a, b, acc) v_bcast(p)
 *   v_load_m(p, mk) v_store_m(p, mk, x)   masked; no access past the mask
 *   v_add(a, b) v_hsum(x)
 *   FN(name)         appends the instruction-set suffix
 * and may define (x86's AVX forms otherwise):
 *   MM_PREFETCH(p)   a read prefetch into L1
 *   MM_HAVE_TRANSPOSE_8X8  its own transpose_8x8 (below) before including
 *   v_fma_lane(acc, b, a, l)  acc + b * lane l of a; with it the packed
 *                    tile loads VL values of A at once and multiplies by
 *                    lane (PMR must then be a multiple of VL)
 *   PMR, PNV         packed micro-tile: PMR rows x PNV vectors
 *   PACK_A_ROWS      the packed path always packs A from this many rows
 *   PKC, PMC, PNC    packed cache blocks (K depth, rows of A, columns of B);
 *                    a PMR x PKC sliver of A lives in L1, a PKC x PNC panel
 *                    of B in L2
 *   DNV              widest direct tile, in vectors
 *   DMR(nv)          direct tile height for nv vectors (<= DMR_MAX)
 *   DMR_MAX, DKC     tallest direct tile; direct K block
 *   GJV              vectors of C per block in the row-vector GEMV
 *   GB               rows of B per block in the row-vector GEMV
 *   GPF              rows of B the row-vector GEMV prefetches ahead
 *   PATH_DIRECT_MACS products up to this many multiply-adds go direct, as
 *   PATH_DIRECT_N    do those with n <= this
 *   PATH_DIRECT_M    and those with m < this
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "matmul.h"

#define MM_INLINE static inline __attribute__((always_inline))

#ifndef MM_PREFETCH
#define MM_PREFETCH(p) _mm_prefetch((const char *)(p), _MM_HINT_T0)
#endif

static size_t min_sz(size_t x, size_t y)
{
    return x < y ? x : y;
}

/* Splits n into the fewest blocks of at most blk, of near-equal size
 * rounded up to a multiple of 8, so no block is a sliver. */
static size_t even_block(size_t n, size_t blk)
{
    const size_t nb = (n + blk - 1) / blk;
    size_t per = (n + nb - 1) / nb;
    per = (per + 7) & ~(size_t)7;
    return per < blk ? per : blk;
}

/* Copies op(B) = B^T, stored n x k, into k x n contiguous rows. Blocked
 * so both sides stay within a few cache lines. */
/* dst (k x n, row-major) = the n x k matrix b^T. Whole 8 x 8 blocks go
 * through registers (both includers have AVX), so every load and store is
 * a contiguous row; the edges are copied one element at a time. */
#ifndef MM_HAVE_TRANSPOSE_8X8
MM_INLINE void transpose_8x8(float *dst, size_t ldd, const float *src,
                             size_t lds)
{
    __m256 r[8], t[8];
    for (int i = 0; i < 8; i++) {
        r[i] = _mm256_loadu_ps(src + i * lds);
    }
    for (int i = 0; i < 8; i += 2) {
        t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int i = 0; i < 8; i += 4) {
        r[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
        r[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xee);
        r[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
        r[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xee);
    }
    for (int i = 0; i < 4; i++) {
        _mm256_storeu_ps(dst + i * ldd,
                         _mm256_permute2f128_ps(r[i], r[i + 4], 0x20));
        _mm256_storeu_ps(dst + (i + 4) * ldd,
                         _mm256_permute2f128_ps(r[i], r[i + 4], 0x31));
    }
}
#endif

static void transpose_b(float *dst, const float *b, size_t ldb, size_t k,
                        size_t n)
{
    const size_t n8 = n & ~(size_t)7, k8 = k & ~(size_t)7;
    for (size_t j = 0; j < n8; j += 8) {
        for (size_t p = 0; p < k8; p += 8) {
            transpose_8x8(dst + p * n + j, n, b + j * ldb + p, ldb);
        }
        for (size_t p = k8; p < k; p++) {
            for (size_t jj = j; jj < j + 8; jj++) {
                dst[p * n + jj] = b[jj * ldb + p];
            }
        }
    }
    for (size_t p = 0; p < k; p++) {
        for (size_t j = n8; j < n; j++) {
            dst[p * n + j] = b[j * ldb + p];
        }
    }
}

/* ---- direct path -------------------------------------------------------- */

/* One mr x (nv vectors) tile of C over kc steps, A and B read in place.
 * A's element (i, p) is at a + i * lda + p, or a + p * lda + i when ta;
 * B's row p at b + p * ldb. The last vector of each row is masked with mk
 * (all lanes when the tile is full). With load_c the tile is added to C,
 * otherwise C is overwritten without being read. mr, nv and ta are
 * constants at every call, so the loops unroll into registers. */
MM_INLINE void direct_tile(int mr, int nv, int ta, int full, size_t kc,
                           const float *a, size_t lda, const float *b,
                           size_t ldb, float *c, size_t ldc, MASK mk,
                           int load_c)
{
    V acc[DMR_MAX][DNV];
#pragma GCC unroll 16
    for (int i = 0; i < mr; i++) {
#pragma GCC unroll 8
        for (int v = 0; v < nv; v++) {
            acc[i][v] = v_zero();
        }
    }
#pragma GCC unroll 2
    for (size_t p = 0; p < kc; p++) {
        V bv[DNV];
        const float *bp = b + p * ldb;
#pragma GCC unroll 8
        for (int v = 0; v < nv; v++) {
            bv[v] = !full && v == nv - 1 ? v_load_m(bp + v * VL, mk)
                                : v_load(bp + v * VL);
        }
#pragma GCC unroll 16
        for (int i = 0; i < mr; i++) {
            const V av = ta ? v_bcast(a + p * lda + i)
                            : v_bcast(a + i * lda + p);
#pragma GCC unroll 8
            for (int v = 0; v < nv; v++) {
                acc[i][v] = v_fma(av, bv[v], acc[i][v]);
            }
        }
    }
#pragma GCC unroll 16
    for (int i = 0; i < mr; i++) {
        float *cp = c + i * ldc;
#pragma GCC unroll 8
        for (int v = 0; v < nv; v++) {
            V x = acc[i][v];
            if (!full && v == nv - 1) {
                if (load_c) {
                    x = v_add(x, v_load_m(cp + v * VL, mk));
                }
                v_store_m(cp + v * VL, mk, x);
            } else {
                if (load_c) {
                    x = v_add(x, v_load(cp + v * VL));
                }
                v_store(cp + v * VL, x);
            }
        }
    }
}

typedef void (*tile_fn)(size_t kc, const float *a, size_t lda,
                        const float *b, size_t ldb, float *c, size_t ldc,
                        MASK mk, int load_c);

/* ta: bit 0 transposed A, bit 1 the last vector full (no mask). */
#define TILE_DEF(mr, nv, ta)                                                \
    static void tile_##mr##_##nv##_##ta(size_t kc, const float *a,          \
                                        size_t lda, const float *b,         \
                                        size_t ldb, float *c, size_t ldc,   \
                                        MASK mk, int load_c)                \
    {                                                                       \
        direct_tile(mr, nv, (ta) & 1, (ta) >> 1, kc, a, lda, b, ldb, c,     \
                    ldc, mk, load_c);                                       \
    }
#define TILE_REF(mr, nv, ta) tile_##mr##_##nv##_##ta,

/* Every tile height 1..DMR_MAX for each width and A layout; heights above
 * DMR(nv) are never selected but keep the table rectangular. */
#define TILE_ROWS(X, nv, ta)                                                \
    X(1, nv, ta) X(2, nv, ta) X(3, nv, ta) X(4, nv, ta) X(5, nv, ta)        \
    X(6, nv, ta) X(7, nv, ta) X(8, nv, ta) X(9, nv, ta) X(10, nv, ta)       \
    X(11, nv, ta) X(12, nv, ta)

#if DMR_MAX != 12
#error "TILE_ROWS lists 12 heights"
#endif

#if DNV == 2
#define TILE_ALL(X, ta) TILE_ROWS(X, 1, ta) TILE_ROWS(X, 2, ta)
#define TILE_TABLE(ta) {{TILE_ROWS(TILE_REF, 1, ta)}, \
                        {TILE_ROWS(TILE_REF, 2, ta)}}
#elif DNV == 4
#define TILE_ALL(X, ta) TILE_ROWS(X, 1, ta) TILE_ROWS(X, 2, ta) \
                        TILE_ROWS(X, 3, ta) TILE_ROWS(X, 4, ta)
#define TILE_TABLE(ta) {{TILE_ROWS(TILE_REF, 1, ta)}, \
                        {TILE_ROWS(TILE_REF, 2, ta)}, \
                        {TILE_ROWS(TILE_REF, 3, ta)}, \
                        {TILE_ROWS(TILE_REF, 4, ta)}}
#else
#error "DNV must be 2 or 4"
#endif

TILE_ALL(TILE_DEF, 0)
TILE_ALL(TILE_DEF, 1)
TILE_ALL(TILE_DEF, 2)
TILE_ALL(TILE_DEF, 3)

/* tiles[ta + 2 * full][nv - 1][mr - 1]: full when every lane of the last
 * vector is used, which then needs no masked access. */
static const tile_fn tiles[4][DNV][DMR_MAX] = {TILE_TABLE(0), TILE_TABLE(1),
                                               TILE_TABLE(2), TILE_TABLE(3)};

/* The direct product with op(B) already k x n in rows of ldb. */
static void direct_run(int ta, int acc, size_t m, size_t n, size_t k,
                       const float *a, size_t lda, const float *b,
                       size_t ldb, float *c, size_t ldc)
{
    /* The widest tiles, unless one vector narrower (and so taller) tiles
     * split the rows exactly where the widest do not (16 or 32 rows: 8-row
     * tiles rather than 6-row ones and a short one; measured on wide C). */
    int wide = DNV;
    if (m % DMR(DNV) != 0 && m % DMR(DNV - 1) == 0 &&
        n > (size_t)DNV * VL) {
        wide = DNV - 1;
    }
    const size_t kb = even_block(k, DKC);
    for (size_t pc = 0; pc < k; pc += kb) {
        const size_t kc = min_sz(kb, k - pc);
        const int load_c = acc || pc > 0;
        const float *ap = ta ? a + pc * lda : a + pc;
        const float *bp = b + pc * ldb;
        for (size_t j = 0; j < n; j += (size_t)wide * VL) {
            const size_t w = min_sz(n - j, (size_t)wide * VL);
            const int nv = (int)((w + VL - 1) / VL);
            const MASK mk = mask_n((int)(w - (size_t)(nv - 1) * VL));
            const int full = w == (size_t)nv * VL;
            /* Rows split evenly over the fewest tiles (32 rows as
             * 6,6,5,5,5,5 rather than 6,6,6,6,6,2): a short tile has too
             * few independent sums to keep the FMA units busy. */
            const size_t mr_max = DMR(nv);
            const size_t ntiles = (m + mr_max - 1) / mr_max;
            const size_t base = m / ntiles, extra = m % ntiles;
            size_t i = 0;
            for (size_t t = 0; t < ntiles; t++) {
                const size_t mr = base + (t < extra ? 1 : 0);
                const float *ai = ta ? ap + i : ap + i * lda;
                tiles[ta + 2 * full][nv - 1][mr - 1](
                    kc, ai, lda, bp + j, ldb, c + i * ldc + j, ldc, mk,
                    load_c);
                i += mr;
            }
        }
    }
}

int FN(kern_sgemm_direct)(unsigned flags, size_t m, size_t n, size_t k,
                          const float *a, size_t lda, const float *b,
                          size_t ldb, float *c, size_t ldc)
{
    const int ta = (flags & KERN_MM_TRANS_A) != 0;
    const int acc = (flags & KERN_MM_ACCUMULATE) != 0;
    if (!(flags & KERN_MM_TRANS_B)) {
        direct_run(ta, acc, m, n, k, a, lda, b, ldb, c, ldc);
        return KERN_OK;
    }
    /* The tiles want rows of op(B); copying B^T costs k*n moves against
     * m*n*k multiply-adds. */
    float *bt = kern_mm_scratch_get(k * n);
    if (!bt) {
        return KERN_E_NOMEM;
    }
    transpose_b(bt, b, ldb, k, n);
    direct_run(ta, acc, m, n, k, a, lda, bt, n, c, ldc);
    kern_mm_scratch_put(bt);
    return KERN_OK;
}

/* ---- packed path -------------------------------------------------------- */

enum { PNR = PNV * VL };

/* A panel of B is packed in whole slivers: PNC columns must be whole
 * slivers, or the last one would run past the panel's buffer. */
_Static_assert(PNC % PNR == 0, "PNC must be a multiple of PNV * VL");
_Static_assert(PMC % PMR == 0, "PMC must be a multiple of PMR");

/* Packs rows [0, mc) x columns [0, kc) of op(A) into slivers of PMR rows:
 * sliver s holds, for each p, the PMR values of column p (zero past mc). */
static void pack_a(float *dst, int ta, const float *a, size_t lda,
                   size_t mc, size_t kc)
{
    for (size_t i0 = 0; i0 < mc; i0 += PMR) {
        const size_t rows = min_sz(PMR, mc - i0);
        float *d = dst + i0 * kc;
        if (ta) {
            /* Column p of op(A) is row p of the stored A: contiguous. */
            for (size_t p = 0; p < kc; p++) {
                const float *src = a + p * lda + i0;
                size_t i = 0;
                for (; i < rows; i++) {
                    d[p * PMR + i] = src[i];
                }
                for (; i < PMR; i++) {
                    d[p * PMR + i] = 0.0f;
                }
            }
            continue;
        }
        if (rows == PMR) {
            /* All PMR rows advance together: their cache misses overlap
             * and the stores run in order. */
            const float *src = a + i0 * lda;
            for (size_t p = 0; p < kc; p++) {
#pragma GCC unroll 32
                for (size_t i = 0; i < PMR; i++) {
                    d[p * PMR + i] = src[i * lda + p];
                }
            }
            continue;
        }
        for (size_t p = 0; p < kc; p++) {
            for (size_t i = 0; i < PMR; i++) {
                d[p * PMR + i] = i < rows ? a[(i0 + i) * lda + p] : 0.0f;
            }
        }
    }
}

/* Packs rows [0, kc) x columns [0, nc) of op(B) into slivers of PNR
 * columns: sliver s holds, for each p, PNR values of row p (zero past
 * nc). */
static void pack_b(float *dst, int tb, const float *b, size_t ldb,
                   size_t kc, size_t nc)
{
    if (tb) {
        for (size_t j0 = 0; j0 < nc; j0 += PNR) {
            const size_t cols = min_sz(PNR, nc - j0);
            float *d = dst + j0 * kc;
            for (size_t j = 0; j < PNR; j++) {
                if (j < cols) {
                    const float *src = b + (j0 + j) * ldb;
                    for (size_t p = 0; p < kc; p++) {
                        d[p * PNR + j] = src[p];
                    }
                } else {
                    for (size_t p = 0; p < kc; p++) {
                        d[p * PNR + j] = 0.0f;
                    }
                }
            }
        }
        return;
    }
    /* Sixteen rows at a time, sliver by sliver: B is read a few whole
     * rows at a time, and the stores of a sliver stay in a few cache
     * lines (writing every sliver for each row would hit one L1 set, the
     * slivers being kc * PNR floats apart). */
    const size_t full = nc / PNR * PNR;
    for (size_t p0 = 0; p0 < kc; p0 += 16) {
        const size_t p1 = min_sz(kc, p0 + 16);
        for (size_t j0 = 0; j0 < full; j0 += PNR) {
            float *d = dst + j0 * kc;
            for (size_t p = p0; p < p1; p++) {
                const float *src = b + p * ldb + j0;
#pragma GCC unroll 8
                for (int v = 0; v < PNV; v++) {
                    v_store(d + p * PNR + v * VL, v_load(src + v * VL));
                }
            }
        }
        if (full < nc) {
            float *d = dst + full * kc;
            for (size_t p = p0; p < p1; p++) {
                const float *src = b + p * ldb;
                for (size_t j = 0; j < PNR; j++) {
                    d[p * PNR + j] = full + j < nc ? src[full + j] : 0.0f;
                }
            }
        }
    }
}

/* The register-blocked micro-kernel: a PMR x PNR tile over kc steps from
 * packed slivers; stores rows [0, mr) and columns [0, nr) of it. */
static void packed_tile(size_t kc, const float *ap, const float *bp,
                        float *c, size_t ldc, size_t mr, size_t nr,
                        int load_c)
{
    V acc[PMR][PNV];
#pragma GCC unroll 32
    for (int i = 0; i < PMR; i++) {
        /* C is needed only after the loop; start fetching it now. */
        MM_PREFETCH(c + i * ldc);
        MM_PREFETCH(c + i * ldc + PNR - 1);
#pragma GCC unroll 8
        for (int v = 0; v < PNV; v++) {
            acc[i][v] = v_zero();
        }
    }
#pragma GCC unroll 2
    for (size_t p = 0; p < kc; p++) {
        V bv[PNV];
#pragma GCC unroll 8
        for (int v = 0; v < PNV; v++) {
            bv[v] = v_load(bp + p * PNR + v * VL);
        }
#ifdef v_fma_lane
        V av[PMR / VL];
#pragma GCC unroll 8
        for (int q = 0; q < PMR / VL; q++) {
            av[q] = v_load(ap + p * PMR + q * VL);
        }
#pragma GCC unroll 32
        for (int i = 0; i < PMR; i++) {
#pragma GCC unroll 8
            for (int v = 0; v < PNV; v++) {
                acc[i][v] = v_fma_lane(acc[i][v], bv[v], av[i / VL], i % VL);
            }
        }
#else
#pragma GCC unroll 32
        for (int i = 0; i < PMR; i++) {
            const V av = v_bcast(ap + p * PMR + i);
#pragma GCC unroll 8
            for (int v = 0; v < PNV; v++) {
                acc[i][v] = v_fma(av, bv[v], acc[i][v]);
            }
        }
#endif
    }
    if (mr == PMR && nr == PNR) {
#pragma GCC unroll 32
        for (int i = 0; i < PMR; i++) {
            float *cp = c + i * ldc;
#pragma GCC unroll 8
            for (int v = 0; v < PNV; v++) {
                V x = acc[i][v];
                if (load_c) {
                    x = v_add(x, v_load(cp + v * VL));
                }
                v_store(cp + v * VL, x);
            }
        }
        return;
    }
#pragma GCC unroll 32
    for (int i = 0; i < PMR; i++) {
        if ((size_t)i >= mr) {
            break;
        }
        float *cp = c + i * ldc;
#pragma GCC unroll 8
        for (int v = 0; v < PNV; v++) {
            const size_t j = (size_t)v * VL;
            if (j >= nr) {
                break;
            }
            const MASK mk = mask_n((int)min_sz(VL, nr - j));
            V x = acc[i][v];
            if (load_c) {
                x = v_add(x, v_load_m(cp + j, mk));
            }
            v_store_m(cp + j, mk, x);
        }
    }
}

int FN(kern_sgemm_packed)(unsigned flags, size_t m, size_t n, size_t k,
                          const float *a, size_t lda, const float *b,
                          size_t ldb, float *c, size_t ldc)
{
    const int ta = (flags & KERN_MM_TRANS_A) != 0;
    const int tb = (flags & KERN_MM_TRANS_B) != 0;
    const int acc = (flags & KERN_MM_ACCUMULATE) != 0;
    const size_t kb = even_block(k, PKC);
    const size_t nb = min_sz(PNC, (n + PNR - 1) / PNR * PNR);
    /* A is packed when its rows would crowd a few L1 sets (a leading
     * dimension of a multiple of 4 KiB puts the PMR rows of a sliver on
     * the same sets as each other), when transposed (a sliver's column is
     * then a partial cache line), or when it is tall enough that packing
     * costs nothing. Otherwise the tiles read it in place. */
    const int pack = ta || m >= PACK_A_ROWS || lda % 1024 == 0;
    const size_t mb = pack ? min_sz(PMC, (m + PMR - 1) / PMR * PMR) : 0;
    /* One buffer: the A block, then the B panel (both multiples of 16
     * floats, so the panel stays 64-byte aligned). */
    float *apack = kern_mm_scratch_get(mb * kb + kb * nb);
    if (!apack) {
        return KERN_E_NOMEM;
    }
    float *bpack = apack + mb * kb;
    for (size_t jc = 0; jc < n; jc += PNC) {
        const size_t nc = min_sz(PNC, n - jc);
        for (size_t pc = 0; pc < k; pc += kb) {
            const size_t kc = min_sz(kb, k - pc);
            const int load_c = acc || pc > 0;
            pack_b(bpack, tb, tb ? b + jc * ldb + pc : b + pc * ldb + jc,
                   ldb, kc, nc);
            for (size_t ic = 0; pack && ic < m; ic += PMC) {
                const size_t mc = min_sz(PMC, m - ic);
                pack_a(apack, ta, ta ? a + pc * lda + ic : a + ic * lda + pc,
                       lda, mc, kc);
                /* An A sliver (PMR x kc) stays in L1 while the B slivers
                 * stream from the packed panel in L2, and C is walked
                 * along its rows. */
                for (size_t ir = 0; ir < mc; ir += PMR) {
                    const size_t mr = min_sz(PMR, mc - ir);
                    for (size_t jr = 0; jr < nc; jr += PNR) {
                        const size_t nr = min_sz(PNR, nc - jr);
                        packed_tile(kc, apack + ir * kc, bpack + jr * kc,
                                    c + (ic + ir) * ldc + jc + jr, ldc, mr,
                                    nr, load_c);
                    }
                }
            }
            /* Or A is read in place by the direct tiles (PMR rows of kc
             * floats stay in L1 across a sweep of the panel), which saves
             * packing it; B's slivers are PNR floats apart. */
            for (size_t ir = 0; !pack && ir < m; ir += PMR) {
                const size_t mr = min_sz(PMR, m - ir);
                const float *ai = ta ? a + pc * lda + ir : a + ir * lda + pc;
                for (size_t jr = 0; jr < nc; jr += PNR) {
                    const size_t nr = min_sz(PNR, nc - jr);
                    const int nv = (int)((nr + VL - 1) / VL);
                    const MASK mk = mask_n((int)(nr - (size_t)(nv - 1) * VL));
                    const int full = nr == (size_t)nv * VL;
                    tiles[ta + 2 * full][nv - 1][mr - 1](
                        kc, ai, lda, bpack + jr * kc, PNR,
                        c + ir * ldc + jc + jr, ldc, mk, load_c);
                }
            }
        }
    }
    kern_mm_scratch_put(apack);
    return KERN_OK;
}

/* ---- matrix-vector paths ------------------------------------------------ */

/* out[j * os] (j < len) = sum_p s[p * ss] * y[p * ldy + j], added to out
 * when acc. Rows of y are swept in blocks of GB so a block of out stays in
 * registers while consecutive rows stream in order; GB depends on nothing
 * but the instruction set, so neither does the order of the sums. */

MM_INLINE void axpy_cols(int nv, int tail, size_t k, const float *s,
                         size_t ss, const float *y, size_t ldy, float *out,
                         MASK mk, int load_out)
{
    /* Even and odd rows of y go to separate accumulators, so even a
     * one-vector block keeps two FMA chains in flight; every block width
     * sums in the same order, so a split of C cannot change a result. */
    V even[GJV], odd[GJV];
#pragma GCC unroll 16
    for (int v = 0; v < nv; v++) {
        odd[v] = v_zero();
        if (!load_out) {
            even[v] = v_zero();
        } else if (tail && v == nv - 1) {
            even[v] = v_load_m(out + v * VL, mk);
        } else {
            even[v] = v_load(out + v * VL);
        }
    }
    size_t p = 0;
    for (; p + 2 <= k; p += 2) {
        const V s0 = v_bcast(s + p * ss), s1 = v_bcast(s + (p + 1) * ss);
        const float *y0 = y + p * ldy, *y1 = y0 + ldy;
        /* The rows GPF ahead, as integers: they may lie past y. */
        const uintptr_t ahead = (uintptr_t)y0 + GPF * ldy * sizeof(float);
#pragma GCC unroll 16
        for (int v = 0; v < nv; v++) {
            if (GPF) {
                MM_PREFETCH(ahead + (size_t)v * VL * 4);
                MM_PREFETCH(ahead + (ldy + (size_t)v * VL) * 4);
            }
            const V x0 = tail && v == nv - 1
                             ? v_load_m(y0 + v * VL, mk)
                             : v_load(y0 + v * VL);
            const V x1 = tail && v == nv - 1
                             ? v_load_m(y1 + v * VL, mk)
                             : v_load(y1 + v * VL);
            even[v] = v_fma(s0, x0, even[v]);
            odd[v] = v_fma(s1, x1, odd[v]);
        }
    }
    if (p < k) {
        const V s0 = v_bcast(s + p * ss);
        const float *y0 = y + p * ldy;
#pragma GCC unroll 16
        for (int v = 0; v < nv; v++) {
            const V x0 = tail && v == nv - 1
                             ? v_load_m(y0 + v * VL, mk)
                             : v_load(y0 + v * VL);
            even[v] = v_fma(s0, x0, even[v]);
        }
    }
#pragma GCC unroll 16
    for (int v = 0; v < nv; v++) {
        const V x = v_add(even[v], odd[v]);
        if (tail && v == nv - 1) {
            v_store_m(out + v * VL, mk, x);
        } else {
            v_store(out + v * VL, x);
        }
    }
}

typedef void (*axpy_fn)(size_t k, const float *s, size_t ss, const float *y,
                        size_t ldy, float *out, MASK mk, int load_out);

#define AXPY_DEF(nv)                                                        \
    static void axpy_##nv(size_t k, const float *s, size_t ss,              \
                          const float *y, size_t ldy, float *out, MASK mk,  \
                          int load_out)                                     \
    {                                                                       \
        axpy_cols(nv, 1, k, s, ss, y, ldy, out, mk, load_out);              \
    }                                                                       \
    static void axpy_full_##nv(size_t k, const float *s, size_t ss,         \
                               const float *y, size_t ldy, float *out,      \
                               MASK mk, int load_out)                       \
    {                                                                       \
        axpy_cols(nv, 0, k, s, ss, y, ldy, out, mk, load_out);              \
    }
#define AXPY_REF(nv) {axpy_##nv, axpy_full_##nv},

/* axpys[nv - 1][full]: full when every lane of the last vector is used,
 * which then needs no masked access (a masked load costs more, most of
 * all across two cache lines). */
#if GJV == 4
AXPY_DEF(1) AXPY_DEF(2) AXPY_DEF(3) AXPY_DEF(4)
static const axpy_fn axpys[GJV][2] = {AXPY_REF(1) AXPY_REF(2) AXPY_REF(3)
                                      AXPY_REF(4)};
#elif GJV == 8
AXPY_DEF(1) AXPY_DEF(2) AXPY_DEF(3) AXPY_DEF(4)
AXPY_DEF(5) AXPY_DEF(6) AXPY_DEF(7) AXPY_DEF(8)
static const axpy_fn axpys[GJV][2] = {AXPY_REF(1) AXPY_REF(2) AXPY_REF(3)
                                      AXPY_REF(4) AXPY_REF(5) AXPY_REF(6)
                                      AXPY_REF(7) AXPY_REF(8)};
#else
#error "GJV must be 4 or 8"
#endif

/* The row-vector form into contiguous out. */
static void gemv_axpy(int acc, size_t len, size_t k, const float *s,
                      size_t ss, const float *y, size_t ldy, float *out)
{
    for (size_t p0 = 0; p0 < k; p0 += GB) {
        const size_t pb = min_sz(GB, k - p0);
        const int load_out = acc || p0 > 0;
        for (size_t j = 0; j < len; j += GJV * VL) {
            const size_t w = min_sz(len - j, GJV * VL);
            const int nv = (int)((w + VL - 1) / VL);
            const MASK mk = mask_n((int)(w - (size_t)(nv - 1) * VL));
            axpys[nv - 1][w == (size_t)nv * VL](pb, s + p0 * ss, ss,
                                                y + p0 * ldy + j, ldy,
                                                out + j, mk, load_out);
        }
    }
}

/* out[r * os] (r < rows) = dot(x + r * ldx, y) over k, added when acc;
 * y contiguous. Four rows at a time, two accumulators each. */
static void gemv_dot(int acc, size_t rows, size_t k, const float *x,
                     size_t ldx, const float *y, float *out, size_t os)
{
    size_t r = 0;
    for (; r + 4 <= rows; r += 4) {
        const float *x0 = x + r * ldx, *x1 = x0 + ldx;
        const float *x2 = x1 + ldx, *x3 = x2 + ldx;
        V s0 = v_zero(), s1 = v_zero(), s2 = v_zero(), s3 = v_zero();
        V t0 = v_zero(), t1 = v_zero(), t2 = v_zero(), t3 = v_zero();
        size_t p = 0;
        for (; p + 2 * VL <= k; p += 2 * VL) {
            const V ya = v_load(y + p), yb = v_load(y + p + VL);
            s0 = v_fma(v_load(x0 + p), ya, s0);
            s1 = v_fma(v_load(x1 + p), ya, s1);
            s2 = v_fma(v_load(x2 + p), ya, s2);
            s3 = v_fma(v_load(x3 + p), ya, s3);
            t0 = v_fma(v_load(x0 + p + VL), yb, t0);
            t1 = v_fma(v_load(x1 + p + VL), yb, t1);
            t2 = v_fma(v_load(x2 + p + VL), yb, t2);
            t3 = v_fma(v_load(x3 + p + VL), yb, t3);
        }
        for (; p < k; p += VL) {
            const MASK mk = mask_n((int)min_sz(VL, k - p));
            const V ya = v_load_m(y + p, mk);
            s0 = v_fma(v_load_m(x0 + p, mk), ya, s0);
            s1 = v_fma(v_load_m(x1 + p, mk), ya, s1);
            s2 = v_fma(v_load_m(x2 + p, mk), ya, s2);
            s3 = v_fma(v_load_m(x3 + p, mk), ya, s3);
        }
        const float d[4] = {v_hsum(v_add(s0, t0)), v_hsum(v_add(s1, t1)),
                            v_hsum(v_add(s2, t2)), v_hsum(v_add(s3, t3))};
        for (int q = 0; q < 4; q++) {
            float *o = out + (r + (size_t)q) * os;
            *o = acc ? *o + d[q] : d[q];
        }
    }
    for (; r < rows; r++) {
        const float *x0 = x + r * ldx;
        V s0 = v_zero(), t0 = v_zero();
        size_t p = 0;
        for (; p + 2 * VL <= k; p += 2 * VL) {
            s0 = v_fma(v_load(x0 + p), v_load(y + p), s0);
            t0 = v_fma(v_load(x0 + p + VL), v_load(y + p + VL), t0);
        }
        for (; p < k; p += VL) {
            const MASK mk = mask_n((int)min_sz(VL, k - p));
            s0 = v_fma(v_load_m(x0 + p, mk), v_load_m(y + p, mk), s0);
        }
        const float d = v_hsum(v_add(s0, t0));
        float *o = out + r * os;
        *o = acc ? *o + d : d;
    }
}

int FN(kern_sgemv)(unsigned flags, size_t m, size_t n, size_t k,
                   const float *a, size_t lda, const float *b, size_t ldb,
                   float *c, size_t ldc)
{
    const int ta = (flags & KERN_MM_TRANS_A) != 0;
    const int tb = (flags & KERN_MM_TRANS_B) != 0;
    const int acc = (flags & KERN_MM_ACCUMULATE) != 0;
    /* The vector operand, its stride, and which form applies. */
    const float *vec, *mat;
    size_t vs, ldm, len, os;
    int dot;
    if (m == 1) {
        vec = a;
        vs = ta ? lda : 1;
        mat = b;
        ldm = ldb;
        len = n;
        os = 1;
        dot = tb; /* rows of the stored B are columns of op(B) */
    } else {
        vec = b;
        vs = tb ? 1 : ldb;
        mat = a;
        ldm = lda;
        len = m;
        os = ldc;
        dot = !ta; /* rows of the stored A are rows of op(A) */
    }
    if (dot) {
        if (vs == 1) {
            gemv_dot(acc, len, k, mat, ldm, vec, c, os);
            return KERN_OK;
        }
        float *tmp = kern_mm_scratch_get(k);
        if (!tmp) {
            return KERN_E_NOMEM;
        }
        for (size_t p = 0; p < k; p++) {
            tmp[p] = vec[p * vs];
        }
        gemv_dot(acc, len, k, mat, ldm, tmp, c, os);
        kern_mm_scratch_put(tmp);
        return KERN_OK;
    }
    if (os == 1) {
        gemv_axpy(acc, len, k, vec, vs, mat, ldm, c);
        return KERN_OK;
    }
    float *tmp = kern_mm_scratch_get(len);
    if (!tmp) {
        return KERN_E_NOMEM;
    }
    gemv_axpy(0, len, k, vec, vs, mat, ldm, tmp);
    for (size_t i = 0; i < len; i++) {
        c[i * os] = acc ? c[i * os] + tmp[i] : tmp[i];
    }
    kern_mm_scratch_put(tmp);
    return KERN_OK;
}

/* ---- the chooser -------------------------------------------------------- */

/* The path for a shape. Threads call the path chosen for the whole product
 * on each block, so the result does not depend on how C is split. */
kern_sgemm_fn FN(kern_sgemm_pick)(size_t m, size_t n, size_t k)
{
    if (m == 1 || n == 1) {
        return FN(kern_sgemv);
    }
    /* Packing pays when B is wide enough to need its own L1 slivers and
     * enough rows of A reuse the packed panel (measured crossovers). */
    if ((double)m * (double)n * (double)k <= PATH_DIRECT_MACS ||
        n <= PATH_DIRECT_N || m < PATH_DIRECT_M) {
        return FN(kern_sgemm_direct);
    }
    return FN(kern_sgemm_packed);
}

int FN(kern_sgemm)(unsigned flags, size_t m, size_t n, size_t k,
                   const float *a, size_t lda, const float *b, size_t ldb,
                   float *c, size_t ldc)
{
    return FN(kern_sgemm_pick)(m, n, k)(flags, m, n, k, a, lda, b, ldb, c,
                                        ldc);
}
