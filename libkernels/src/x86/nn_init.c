/* The x86 rungs of the nn family's dispatch (pools, softmax, bias, scale,
 * SGD): the generic init sets the C entries and calls this, dav1d's way.
 * Built without instruction-set flags: it only stores pointers. */
#include "nn.h"

void kern_nn_dsp_init_x86(struct kern_nn_dsp *dsp, unsigned flags)
{
    if (!(flags & KERN_CPU_AVX2)) {
        return;
    }
    dsp->bias_add = kern_nn_bias_add_avx2;
    dsp->all_finite = kern_nn_all_finite_avx2;
    dsp->scale = kern_nn_scale_avx2;
    dsp->sgd = kern_nn_sgd_avx2;
    dsp->maxpool2d = kern_nn_maxpool2d_avx2;
    dsp->avgpool2d = kern_nn_avgpool2d_avx2;
    /* one block of 8 channels is one AVX2 vector: AVX-512 keeps these */
    dsp->maxpool2d_blk = kern_nn_maxpool2d_blk_avx2;
    dsp->avgpool2d_blk = kern_nn_avgpool2d_blk_avx2;
    dsp->softmax = kern_nn_softmax_avx2;
    dsp->xent = kern_nn_xent_avx2;
    dsp->gap_blk = kern_nn_gap_blk_avx2;
    if (!(flags & KERN_CPU_AVX512)) {
        return;
    }
    dsp->bias_add = kern_nn_bias_add_avx512;
    dsp->all_finite = kern_nn_all_finite_avx512;
    dsp->scale = kern_nn_scale_avx512;
    dsp->sgd = kern_nn_sgd_avx512;
    dsp->maxpool2d = kern_nn_maxpool2d_avx512;
    dsp->avgpool2d = kern_nn_avgpool2d_avx512;
    dsp->softmax = kern_nn_softmax_avx512;
    dsp->xent = kern_nn_xent_avx512;
    dsp->gap_blk = kern_nn_gap_blk_avx512;
}
