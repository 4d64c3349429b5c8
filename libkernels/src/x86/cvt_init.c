/* The x86 rungs of the conversions' dispatch (dav1d's way: the generic
 * init sets the C entries and calls this). Built without instruction-set
 * flags: it only stores pointers. */
#include "cvt.h"

void kern_cvt_dsp_init_x86(struct kern_cvt_dsp *dsp, unsigned flags)
{
    if (!(flags & KERN_CPU_AVX2)) {
        return;
    }
    dsp->f32_to_f16 = kern_f32_to_f16_avx2;
    dsp->f16_to_f32 = kern_f16_to_f32_avx2;
    dsp->f32_to_bf16 = kern_f32_to_bf16_avx2;
    dsp->bf16_to_f32 = kern_bf16_to_f32_avx2;
    if (!(flags & KERN_CPU_AVX512)) {
        return;
    }
    dsp->f32_to_f16 = kern_f32_to_f16_avx512;
    dsp->f16_to_f32 = kern_f16_to_f32_avx512;
    dsp->f32_to_bf16 = kern_f32_to_bf16_avx512;
    dsp->bf16_to_f32 = kern_bf16_to_f32_avx512;
    if (!(flags & KERN_CPU_AVX512BF16)) {
        return;
    }
    dsp->f32_to_bf16 = kern_f32_to_bf16_avx512bf16;
}
