/* The AArch64 rungs of the float32 matrix product's dispatch. Built
 * without instruction-set flags: it only stores pointers. */
#include "matmul.h"

void kern_matmul_dsp_init_arm(struct kern_matmul_dsp *dsp, unsigned flags)
{
    if (!(flags & KERN_CPU_NEON)) {
        return;
    }
    dsp->sgemm = kern_sgemm_neon;
    dsp->pick = kern_sgemm_pick_neon;
    dsp->sgemm_direct = kern_sgemm_direct_neon;
    dsp->sgemm_packed = kern_sgemm_packed_neon;
    dsp->sgemv = kern_sgemv_neon;
}
