/* int8 GEMM for ARMv8.0 NEON (Cortex-A53/A57/A72 have no sdot): smull and
 * smull2 multiply 16 byte pairs into 16-bit products (|w a| <= 2^14, so
 * none overflows), sadalp adds neighbouring pairs into 32-bit sums; each
 * column ends as two partial sums that one addp joins. */
#include "q8.h"
#include "neon_compat.h"

#define Q8_MR 2
#define Q8_ACC 8
#define Q8_FN(name) name##_neon

/* b[q] holds columns 4q..4q+3, 4 bytes each; av the row's 4 bytes 4
 * times. acc[2q] gets columns 4q, 4q+1 (two partial sums each), acc[2q+1]
 * columns 4q+2, 4q+3. */
#define q8_step(acc, b, av)                                                 \
    do {                                                                    \
        for (int q_ = 0; q_ < 4; q_++) {                                    \
            const int16x8_t lo_ =                                           \
                vmull_s8(vget_low_s8((b)[q_]), vget_low_s8(av));            \
            const int16x8_t hi_ = kn_mull_high_s8((b)[q_], (av));             \
            (acc)[2 * q_] = vpadalq_s16((acc)[2 * q_], lo_);                \
            (acc)[2 * q_ + 1] = vpadalq_s16((acc)[2 * q_ + 1], hi_);        \
        }                                                                   \
    } while (0)

#define q8_finish(acc, out)                                                 \
    do {                                                                    \
        for (int q_ = 0; q_ < 4; q_++) {                                    \
            vst1q_s32((out) + 4 * q_,                                       \
                      kn_paddq_s32((acc)[2 * q_], (acc)[2 * q_ + 1]));        \
        }                                                                   \
    } while (0)

#include "q8_gemm_tmpl.h"
