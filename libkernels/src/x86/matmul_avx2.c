/* AVX2+FMA float32 matrix product: 6x16 packed micro-tiles, direct tiles
 * up to 6x16 (12x8 for narrow C) for small products, masked N tails.
 * Compiled with AVX2/FMA flags; called only when the CPU has them. */
#include <immintrin.h>

#define V __m256
#define VL 8
#define MASK __m256i

static inline __m256i mask_n(int r)
{
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(r),
                              _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

#include "hsum_avx2.h"

#define v_zero() _mm256_setzero_ps()
#define v_load(p) _mm256_loadu_ps(p)
#define v_store(p, x) _mm256_storeu_ps((p), (x))
#define v_fma(a, b, acc) _mm256_fmadd_ps((a), (b), (acc))
#define v_bcast(p) _mm256_broadcast_ss(p)
#define v_load_m(p, mk) _mm256_maskload_ps((p), (mk))
#define v_store_m(p, mk, x) _mm256_maskstore_ps((p), (mk), (x))
#define v_add(a, b) _mm256_add_ps((a), (b))
#define v_hsum(x) hsum8(x)
#define FN(name) name##_avx2

/* 12 of the 16 registers hold the packed tile; a 6 x 256 sliver of A
 * (6 KiB) stays in L1 while 256 x 16 slivers of a 256 x 1024 panel of B
 * (1 MiB) stream from L2. */
#define PMR 6
#define PNV 2
#define PKC 256
#define PMC 480
#define PNC 1024
#define PACK_A_ROWS 1024
#define DNV 2
#define DMR_MAX 12
#define DMR(nv) ((nv) == 1 ? 12 : 6)
#define DKC 256
#define GJV 4
#define GPF 4
#define GB 64
#define PATH_DIRECT_MACS (128.0 * 128.0 * 128.0)
#define PATH_DIRECT_N 64
#define PATH_DIRECT_M 96

#include "matmul_tmpl.h"
