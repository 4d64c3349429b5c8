/* The x86 rungs of the NCHW <-> NCHW8c conversions' dispatch: the generic
 * init sets the C entries and calls this, dav1d's way. Built without
 * instruction-set flags: it only stores pointers. */
#include "layout.h"

void kern_layout_dsp_init_x86(struct kern_layout_dsp *dsp, unsigned flags)
{
    if (!(flags & KERN_CPU_AVX2)) {
        return;
    }
    dsp->to_nchw8c = kern_nchw_to_nchw8c_avx2;
    dsp->to_nchw = kern_nchw8c_to_nchw_avx2;
}
