/* The x86 rungs of the convolution family's dispatch (dav1d's way: the
 * generic init sets the C entries and calls this). Built without
 * instruction-set flags: it only stores pointers. */
#include "conv.h"

void kern_conv_dsp_init_x86(struct kern_conv_dsp *dsp, unsigned flags)
{
    if (!(flags & KERN_CPU_AVX2)) {
        return;
    }
    /* AVX-512 machines take the AVX2 path: a 16-lane tile is a few
     * macros away, but it joins the table only once checkkern has run it
     * on AVX-512 hardware. */
    dsp->conv2d = kern_conv2d_avx2;
    dsp->conv2d_packed = kern_conv2d_packed_avx2;
    dsp->im2col_s8 = kern_im2col_s8_avx2;
}
