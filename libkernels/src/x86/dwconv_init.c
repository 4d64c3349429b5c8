/* The x86 rungs of the depthwise family's dispatch (dav1d's way: the
 * generic init sets the C entries and calls this). Built without
 * instruction-set flags: it only stores pointers. */
#include "dwconv.h"

void kern_dwconv_dsp_init_x86(struct kern_dwconv_dsp *dsp, unsigned flags)
{
    if (!(flags & KERN_CPU_AVX2)) {
        return;
    }
    /* AVX-512 machines take the AVX2 path too: a 16-lane variant of
     * dwconv_tmpl.h is a few macros away, but it joins the table only
     * once checkkern has run it on AVX-512 hardware. */
    dsp->dwconv2d = kern_dwconv2d_avx2;
    dsp->dwconv2d_blk = kern_dwconv2d_blk_avx2;
    dsp->dwconv2d_dil = kern_dwconv2d_dil_avx2;
}
