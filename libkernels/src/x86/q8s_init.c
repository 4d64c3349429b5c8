/* The x86 rungs of the static int8 family's (q8s) dispatch: the generic
 * init sets the C entries and calls this, dav1d's way. Built without
 * instruction-set flags: it only stores pointers. */
#include "q8s.h"

void kern_q8s_dsp_init_x86(struct kern_q8s_dsp *dsp, unsigned flags)
{
    if (!(flags & KERN_CPU_AVX2)) {
        return;
    }
    /* the output stages stay AVX2: a small share of a layer's time */
    dsp->requant = kern_q8s_requant_avx2;
    dsp->requant_tile = kern_q8s_requant_tile_avx2;
    dsp->requantf = kern_q8s_requantf_avx2;
    dsp->requantf_tile = kern_q8s_requantf_tile_avx2;
    dsp->transpose = kern_q8s_transpose_avx2;
    dsp->quant = kern_q8s_quant_avx2;
    dsp->add = kern_q8s_add_avx2;
    dsp->addf = kern_q8s_addf_avx2;
    dsp->rescale = kern_q8s_rescale_avx2;
    dsp->maxpool = kern_q8s_maxpool_avx2;
    dsp->plane_sum = kern_q8s_plane_sum_avx2;
    dsp->dwconv = kern_q8s_dwconv_avx2;
    if (flags & KERN_CPU_AVX512) {
        /* the add's three fixed-point multiplies a value: 16 lanes */
        dsp->add = kern_q8s_add_avx512;
        dsp->addf = kern_q8s_addf_avx512;
        /* the division's throughput bound the quantisation of the input */
        dsp->quant = kern_q8s_quant_avx512;
    }
    if ((flags & KERN_CPU_AVX512) && (flags & KERN_CPU_AVX512VNNI)) {
        dsp->gemm_kp = kern_q8s_gemm_kp_vnni;
        dsp->conv_kp = kern_q8s_conv_kp_vnni;
        dsp->dwconv = kern_q8s_dwconv_vnni;
        if (flags & KERN_CPU_AVX512VBMI) {
            dsp->dwconv = kern_q8s_dwconv_vbmi;
        }
    }
}
