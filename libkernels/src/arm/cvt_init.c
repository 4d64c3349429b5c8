/* The AArch64 rungs of the conversions' dispatch. Built without
 * instruction-set flags: it only stores pointers. */
#include "cvt.h"

void kern_cvt_dsp_init_arm(struct kern_cvt_dsp *dsp, unsigned flags)
{
    if (!(flags & KERN_CPU_NEON)) {
        return;
    }
    dsp->f32_to_f16 = kern_f32_to_f16_neon;
    dsp->f16_to_f32 = kern_f16_to_f32_neon;
    dsp->f32_to_bf16 = kern_f32_to_bf16_neon;
    dsp->bf16_to_f32 = kern_bf16_to_f32_neon;
}
