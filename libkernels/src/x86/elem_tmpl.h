/* The broadcast arithmetic rows, written once over the vocabulary that
 * elem_avx2.c (8 lanes) and elem_avx512.c (16 lanes) define before
 * including this file: V, VL, vload, vstore, vset, vadd, vsub, vmul,
 * vdiv, vload_tail and vstore_tail (n < VL elements, the rest of the
 * vector never read or written in memory), ELEM_FN(name) naming the
 * exported function, and ELEM_SCALAR_TAIL when the last n % VL elements
 * are better done one at a time than by masked moves. Each output is one IEEE operation, as in the C rows,
 * so every path gives the same bits. The rows are memory-bound: four
 * vectors per iteration are enough to keep the loads in flight. */

/* The last i..n-1 outputs: scalar (the same IEEE operation, element j)
 * or one masked vector. */
#ifdef ELEM_SCALAR_TAIL
#define ELEM_TAIL(scalar, masked)                                            \
    for (size_t j = i; j < n; j++) {                                         \
        scalar;                                                              \
    }
#else
#define ELEM_TAIL(scalar, masked)                                            \
    if (i < n) {                                                             \
        masked;                                                              \
    }
#endif

#define ELEM_ROWS(name, vop, op)                                               \
    void ELEM_FN(name##_vv)(float *y, const float *a, const float *b,        \
                            size_t n)                                        \
    {                                                                        \
        size_t i = 0;                                                        \
        for (; i + 4 * VL <= n; i += 4 * VL) {                               \
            const V r0 = vop(vload(a + i), vload(b + i));                    \
            const V r1 = vop(vload(a + i + VL), vload(b + i + VL));          \
            const V r2 = vop(vload(a + i + 2 * VL), vload(b + i + 2 * VL));  \
            const V r3 = vop(vload(a + i + 3 * VL), vload(b + i + 3 * VL));  \
            vstore(y + i, r0);                                               \
            vstore(y + i + VL, r1);                                          \
            vstore(y + i + 2 * VL, r2);                                      \
            vstore(y + i + 3 * VL, r3);                                      \
        }                                                                    \
        for (; i + VL <= n; i += VL) {                                       \
            vstore(y + i, vop(vload(a + i), vload(b + i)));                  \
        }                                                                    \
        ELEM_TAIL(y[j] = a[j] op b[j],                                       \
                  vstore_tail(y + i,                                         \
                              vop(vload_tail(a + i, n - i),                  \
                                  vload_tail(b + i, n - i)),                 \
                              n - i));                                       \
    }                                                                        \
    void ELEM_FN(name##_vs)(float *y, const float *a, const float *b,        \
                            size_t n)                                        \
    {                                                                        \
        const V s = vset(*b);                                                \
        size_t i = 0;                                                        \
        for (; i + 4 * VL <= n; i += 4 * VL) {                               \
            const V r0 = vop(vload(a + i), s);                               \
            const V r1 = vop(vload(a + i + VL), s);                          \
            const V r2 = vop(vload(a + i + 2 * VL), s);                      \
            const V r3 = vop(vload(a + i + 3 * VL), s);                      \
            vstore(y + i, r0);                                               \
            vstore(y + i + VL, r1);                                          \
            vstore(y + i + 2 * VL, r2);                                      \
            vstore(y + i + 3 * VL, r3);                                      \
        }                                                                    \
        for (; i + VL <= n; i += VL) {                                       \
            vstore(y + i, vop(vload(a + i), s));                             \
        }                                                                    \
        ELEM_TAIL(y[j] = a[j] op *b,                                         \
                  vstore_tail(y + i, vop(vload_tail(a + i, n - i), s),       \
                              n - i));                                       \
    }                                                                        \
    void ELEM_FN(name##_sv)(float *y, const float *a, const float *b,        \
                            size_t n)                                        \
    {                                                                        \
        const V s = vset(*a);                                                \
        size_t i = 0;                                                        \
        for (; i + 4 * VL <= n; i += 4 * VL) {                               \
            const V r0 = vop(s, vload(b + i));                               \
            const V r1 = vop(s, vload(b + i + VL));                          \
            const V r2 = vop(s, vload(b + i + 2 * VL));                      \
            const V r3 = vop(s, vload(b + i + 3 * VL));                      \
            vstore(y + i, r0);                                               \
            vstore(y + i + VL, r1);                                          \
            vstore(y + i + 2 * VL, r2);                                      \
            vstore(y + i + 3 * VL, r3);                                      \
        }                                                                    \
        for (; i + VL <= n; i += VL) {                                       \
            vstore(y + i, vop(s, vload(b + i)));                             \
        }                                                                    \
        ELEM_TAIL(y[j] = *a op b[j],                                         \
                  vstore_tail(y + i, vop(s, vload_tail(b + i, n - i)),       \
                              n - i));                                       \
    }

#define ELEM_INSTANTIATE(name, op) ELEM_ROWS(name, v##name, op)
KERN_ELEM_OPS(ELEM_INSTANTIATE)
#undef ELEM_INSTANTIATE
