/* The x86 rungs of the activations' dispatch (dav1d's way: the generic
 * init sets the C entries and calls this). Built without instruction-set
 * flags: it only stores pointers. */
#include "act.h"

void kern_act_dsp_init_x86(struct kern_act_dsp *dsp, unsigned flags)
{
    if (!(flags & KERN_CPU_AVX2)) {
        return;
    }
    dsp->tanh_f32 = kern_tanh_f32_avx2;
    dsp->erf_f32 = kern_erf_f32_avx2;
    dsp->sigmoid_f32 = kern_sigmoid_f32_avx2;
    dsp->relu_f32 = kern_relu_f32_avx2;
    dsp->gelu_f32 = kern_gelu_f32_avx2;
    dsp->gelu_erf_f32 = kern_gelu_erf_f32_avx2;
    dsp->tanh_backward_f32 = kern_tanh_backward_f32_avx2;
    dsp->sigmoid_backward_f32 = kern_sigmoid_backward_f32_avx2;
    dsp->relu_backward_f32 = kern_relu_backward_f32_avx2;
    dsp->gelu_backward_f32 = kern_gelu_backward_f32_avx2;
    dsp->gelu_erf_backward_f32 = kern_gelu_erf_backward_f32_avx2;
    dsp->silu_f32 = kern_silu_f32_avx2;
    dsp->hard_swish_f32 = kern_hard_swish_f32_avx2;
    dsp->softplus_f32 = kern_softplus_f32_avx2;
    dsp->hard_sigmoid_f32 = kern_hard_sigmoid_f32_avx2;
    dsp->leaky_relu_f32 = kern_leaky_relu_f32_avx2;
    dsp->elu_f32 = kern_elu_f32_avx2;
    dsp->clip_f32 = kern_clip_f32_avx2;
    if (!(flags & KERN_CPU_AVX512)) {
        return;
    }
    dsp->tanh_f32 = kern_tanh_f32_avx512;
    dsp->erf_f32 = kern_erf_f32_avx512;
    dsp->sigmoid_f32 = kern_sigmoid_f32_avx512;
    dsp->relu_f32 = kern_relu_f32_avx512;
    dsp->gelu_f32 = kern_gelu_f32_avx512;
    dsp->gelu_erf_f32 = kern_gelu_erf_f32_avx512;
    dsp->tanh_backward_f32 = kern_tanh_backward_f32_avx512;
    dsp->sigmoid_backward_f32 = kern_sigmoid_backward_f32_avx512;
    dsp->relu_backward_f32 = kern_relu_backward_f32_avx512;
    dsp->gelu_backward_f32 = kern_gelu_backward_f32_avx512;
    dsp->gelu_erf_backward_f32 = kern_gelu_erf_backward_f32_avx512;
    dsp->silu_f32 = kern_silu_f32_avx512;
    dsp->hard_swish_f32 = kern_hard_swish_f32_avx512;
    dsp->softplus_f32 = kern_softplus_f32_avx512;
    dsp->hard_sigmoid_f32 = kern_hard_sigmoid_f32_avx512;
    dsp->leaky_relu_f32 = kern_leaky_relu_f32_avx512;
    dsp->elu_f32 = kern_elu_f32_avx512;
    dsp->clip_f32 = kern_clip_f32_avx512;
}
