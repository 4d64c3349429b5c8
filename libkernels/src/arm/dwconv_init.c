/* The AArch64 rungs of the depthwise family's dispatch: NCHW, dilated,
 * NCHW8c and dilated NCHW8c shapes have NEON paths. Built without
 * instruction-set flags: it only stores pointers. */
#include "dwconv.h"

void kern_dwconv_dsp_init_arm(struct kern_dwconv_dsp *dsp, unsigned flags)
{
    if (!(flags & KERN_CPU_NEON)) {
        return;
    }
    dsp->dwconv2d = kern_dwconv2d_neon;
    dsp->dwconv2d_dil = kern_dwconv2d_dil_neon;
    dsp->dwconv2d_blk = kern_dwconv2d_blk_neon;
    dsp->dwconv2d_blk_dil = kern_dwconv2d_blk_dil_neon;
}
