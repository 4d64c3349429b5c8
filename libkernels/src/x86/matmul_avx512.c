/* AVX-512 float32 matrix product: 6x64 packed micro-tiles, direct tiles
 * up to 6x64 for small products, masked N tails. Compiled with AVX-512
 * F/BW/DQ/VL flags; called only when the CPU has them. */
#include <immintrin.h>

#define V __m512
#define VL 16
#define MASK __mmask16

static inline __mmask16 mask_n(int r)
{
    return (__mmask16)((1u << r) - 1u);
}

#define v_zero() _mm512_setzero_ps()
#define v_load(p) _mm512_loadu_ps(p)
#define v_store(p, x) _mm512_storeu_ps((p), (x))
#define v_fma(a, b, acc) _mm512_fmadd_ps((a), (b), (acc))
#define v_bcast(p) _mm512_set1_ps(*(p))
#define v_load_m(p, mk) _mm512_maskz_loadu_ps((mk), (p))
#define v_store_m(p, mk, x) _mm512_mask_storeu_ps((p), (mk), (x))
#define v_add(a, b) _mm512_add_ps((a), (b))
#define v_hsum(x) _mm512_reduce_add_ps(x)
#define FN(name) name##_avx512

/* 24 of the 32 registers hold the packed tile, 6 rows of 4 vectors: each
 * K step loads 4 vectors of B and broadcasts 6 of A for 24 multiply-adds
 * (12 x 2 vectors took 14 loads; 6x4 measured 256^3 167 -> 175, 512^3
 * 166 -> 172, 1024^3 156 -> 165 GFLOP/s, 8x3 in between). A 6 x 256
 * sliver of A (6 KiB) stays in the 48 KiB L1 while 256 x 64 slivers of a
 * 256 x 1024 panel of B (1 MiB) stream from the 2 MiB L2 (measured best of
 * KC 128 to 384 and NC 768 to 4096 on square and edge shapes). */
#define PMR 6
#define PNV 4
#define PKC 256
#define PMC 528
#define PNC 1024
#define PACK_A_ROWS 1024
/* Direct tiles: 24 accumulators at 2 to 4 vectors, 12 at one. */
#define DNV 4
#define DMR_MAX 12
#define DMR(nv) ((nv) <= 2 ? 12 : (nv) == 3 ? 8 : 6)
#define DKC 128
/* Row-vector GEMV: out stays in registers over 1024 rows of B (a block
 * boundary stalls on the store and reload of out), rows prefetched 8
 * ahead (measured 1x784x64 65 -> 71 GFLOP/s against 4 ahead and 64-row
 * blocks; 16 or 32 ahead no better, and worse for 2 KiB rows). */
#define GJV 8
#define GPF 8
#define GB 1024
#define PATH_DIRECT_MACS (128.0 * 128.0 * 128.0)
#define PATH_DIRECT_N 64
#define PATH_DIRECT_M 96

#include "matmul_tmpl.h"
