/* The x86 rungs of the float32 matrix product's dispatch (dav1d's way:
 * the generic init sets the C entries and calls this). Built without
 * instruction-set flags: it only stores pointers. */
#include "matmul.h"

void kern_matmul_dsp_init_x86(struct kern_matmul_dsp *dsp, unsigned flags)
{
    if (!(flags & KERN_CPU_AVX2)) {
        return;
    }
    dsp->sgemm = kern_sgemm_avx2;
    dsp->pick = kern_sgemm_pick_avx2;
    dsp->sgemm_direct = kern_sgemm_direct_avx2;
    dsp->sgemm_packed = kern_sgemm_packed_avx2;
    dsp->sgemv = kern_sgemv_avx2;
    if (!(flags & KERN_CPU_AVX512)) {
        return;
    }
    dsp->sgemm = kern_sgemm_avx512;
    dsp->pick = kern_sgemm_pick_avx512;
    dsp->sgemm_direct = kern_sgemm_direct_avx512;
    dsp->sgemm_packed = kern_sgemm_packed_avx512;
    dsp->sgemv = kern_sgemv_avx512;
}
