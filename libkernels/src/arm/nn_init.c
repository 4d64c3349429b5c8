/* The AArch64 rungs of the nn family's dispatch (pools, softmax, bias,
 * scale, SGD). Built without instruction-set flags: it only stores
 * pointers. */
#include "nn.h"

void kern_nn_dsp_init_arm(struct kern_nn_dsp *dsp, unsigned flags)
{
    if (!(flags & KERN_CPU_NEON)) {
        return;
    }
    dsp->bias_add = kern_nn_bias_add_neon;
    dsp->all_finite = kern_nn_all_finite_neon;
    dsp->scale = kern_nn_scale_neon;
    dsp->sgd = kern_nn_sgd_neon;
    dsp->maxpool2d = kern_nn_maxpool2d_neon;
    dsp->avgpool2d = kern_nn_avgpool2d_neon;
    dsp->maxpool2d_blk = kern_nn_maxpool2d_blk_neon;
    dsp->avgpool2d_blk = kern_nn_avgpool2d_blk_neon;
    dsp->softmax = kern_nn_softmax_neon;
    dsp->xent = kern_nn_xent_neon;
}
