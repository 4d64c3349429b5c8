/* The AArch64 rungs of the NCHW <-> NCHW8c conversions' dispatch. Built
 * without instruction-set flags: it only stores pointers. */
#include "layout.h"

void kern_layout_dsp_init_arm(struct kern_layout_dsp *dsp, unsigned flags)
{
    if (!(flags & KERN_CPU_NEON)) {
        return;
    }
    dsp->to_nchw8c = kern_nchw_to_nchw8c_neon;
    dsp->to_nchw = kern_nchw8c_to_nchw_neon;
}
