/* The x86 rungs of the layer normalisation's dispatch: the generic init
 * sets the C entries and calls this, dav1d's way. Built without
 * instruction-set flags: it only stores pointers. */
#include "norm.h"

void kern_norm_dsp_init_x86(struct kern_norm_dsp *dsp, unsigned flags)
{
    if (!(flags & KERN_CPU_AVX2)) {
        return;
    }
    dsp->layernorm = kern_layernorm_avx2;
    if (!(flags & KERN_CPU_AVX512)) {
        return;
    }
    dsp->layernorm = kern_layernorm_avx512;
}
