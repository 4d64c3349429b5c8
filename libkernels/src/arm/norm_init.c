/* The AArch64 rungs of the layer normalisation's dispatch. Built without
 * instruction-set flags: it only stores pointers. */
#include "norm.h"

void kern_norm_dsp_init_arm(struct kern_norm_dsp *dsp, unsigned flags)
{
    if (!(flags & KERN_CPU_NEON)) {
        return;
    }
    dsp->layernorm = kern_layernorm_neon;
}
