/* The AArch64 rungs of the static int8 family's (q8s) dispatch. Built
 * without instruction-set flags: it only stores pointers. */
#include "q8s.h"

void kern_q8s_dsp_init_arm(struct kern_q8s_dsp *dsp, unsigned flags)
{
    if (!(flags & KERN_CPU_NEON)) {
        return;
    }
    dsp->requant = kern_q8s_requant_neon;
    dsp->requant_tile = kern_q8s_requant_tile_neon;
    dsp->requantf = kern_q8s_requantf_neon;
    dsp->requantf_tile = kern_q8s_requantf_tile_neon;
    dsp->quant = kern_q8s_quant_neon;
    dsp->add = kern_q8s_add_neon;
    dsp->rescale = kern_q8s_rescale_neon;
    dsp->maxpool = kern_q8s_maxpool_neon;
    dsp->dwconv = kern_q8s_dwconv_neon;
}
