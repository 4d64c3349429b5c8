/* int8 GEMM with the ARMv8.2 dot product (Cortex-A55/A76/A78): one sdot
 * adds, for 4 columns, the products of 4 weight bytes with the row's 4
 * bytes into each column's 32-bit sum. Built with +dotprod; called only
 * when the CPU has it. */
#include "q8.h"

#define Q8_MR 4
#define Q8_ACC 4
#define Q8_FN(name) name##_dotprod

#define q8_step(acc, b, av)                                                 \
    do {                                                                    \
        for (int q_ = 0; q_ < 4; q_++) {                                    \
            (acc)[q_] = vdotq_s32((acc)[q_], (b)[q_], (av));                \
        }                                                                   \
    } while (0)

#define q8_finish(acc, out)                                                 \
    do {                                                                    \
        for (int q_ = 0; q_ < 4; q_++) {                                    \
            vst1q_s32((out) + 4 * q_, (acc)[q_]);                           \
        }                                                                   \
    } while (0)

#include "q8_gemm_tmpl.h"
