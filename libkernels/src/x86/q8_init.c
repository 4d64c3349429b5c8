/* The x86 rungs of the int8 family's dispatch (dav1d's way: the generic
 * init sets the C entries and calls this). Built without instruction-set
 * flags: it only stores pointers. */
#include "q8.h"

void kern_q8_dsp_init_x86(struct kern_q8_dsp *dsp, unsigned flags)
{
    if (!(flags & KERN_CPU_AVX2)) {
        return;
    }
    dsp->gemm = kern_q8_gemm_avx2;
    dsp->absmax = kern_q8_absmax_avx2;
    dsp->quant = kern_q8_quant_avx2;
    dsp->dequant = kern_q8_dequant_avx2;
    dsp->requant_f32 = kern_q8_requant_f32_avx2;
    /* AVX-512 machines keep this one: its 8 x 8 tile is the transpose */
    dsp->requant_f32_t = kern_q8_requant_f32_t_avx2;
    dsp->requant_s8 = kern_q8_requant_s8_avx2;
    if (!(flags & KERN_CPU_AVX512)) {
        return;
    }
    dsp->gemm = kern_q8_gemm_avx512;
    dsp->absmax = kern_q8_absmax_avx512;
    dsp->quant = kern_q8_quant_avx512;
    dsp->dequant = kern_q8_dequant_avx512;
    dsp->requant_f32 = kern_q8_requant_f32_avx512;
    dsp->requant_s8 = kern_q8_requant_s8_avx512;
    if (!(flags & KERN_CPU_AVX512VNNI)) {
        return;
    }
    dsp->gemm = kern_q8_gemm_vnni;
}
