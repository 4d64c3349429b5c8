/* The x86 rungs of the convolution family's dispatch (dav1d's way: the
 * generic init sets the C entries and calls this). Built without
 * instruction-set flags: it only stores pointers. */
#include "conv.h"

void kern_conv_dsp_init_x86(struct kern_conv_dsp *dsp, unsigned flags)
{
    if (!(flags & KERN_CPU_AVX2)) {
        return;
    }
    dsp->conv2d = kern_conv2d_avx2;
    dsp->conv2d_packed = kern_conv2d_packed_avx2;
    dsp->im2col_s8 = kern_im2col_s8_avx2;
    if (!(flags & KERN_CPU_AVX512)) {
        return;
    }
    /* the AVX2 tiles compiled for AVX-512, with a 16-lane tile for 1 x 1
     * convolutions between blocked tensors (conv_avx512.c) */
    dsp->conv2d = kern_conv2d_avx512;
    dsp->conv2d_packed = kern_conv2d_packed_avx512;
}
