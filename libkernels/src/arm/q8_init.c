/* The AArch64 rungs of the int8 family's dispatch: the GEMM has NEON
 * paths; quantisation and requantisation stay C. Built without
 * instruction-set flags: it only stores pointers. */
#include "q8.h"

void kern_q8_dsp_init_arm(struct kern_q8_dsp *dsp, unsigned flags)
{
    if (!(flags & KERN_CPU_NEON)) {
        return;
    }
    dsp->gemm = kern_q8_gemm_neon;
#if KERN_HAVE_NEON_DOTPROD
    if (!(flags & KERN_CPU_ARM_DOTPROD)) {
        return;
    }
    dsp->gemm = kern_q8_gemm_dotprod;
#endif
}
