/* The AArch64 rungs of the convolution family's dispatch: the float
 * convolution (raw and packed weights, NCHW and NCHW8c) and the int8
 * lowering (in q8s_neon.c, with the static int8 path) have NEON paths.
 * Built without instruction-set flags: it only stores pointers. */
#include "conv.h"

void kern_conv_dsp_init_arm(struct kern_conv_dsp *dsp, unsigned flags)
{
    if (!(flags & KERN_CPU_NEON)) {
        return;
    }
    dsp->conv2d = kern_conv2d_neon;
    dsp->conv2d_packed = kern_conv2d_packed_neon;
    dsp->im2col_s8 = kern_im2col_s8_neon;
}
