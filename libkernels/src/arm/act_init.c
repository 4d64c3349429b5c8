/* The ARM rungs of the activations' dispatch. Built without
 * instruction-set flags: it only stores pointers. */
#include "act.h"

void kern_act_dsp_init_arm(struct kern_act_dsp *dsp, unsigned flags)
{
    if (!(flags & KERN_CPU_NEON)) {
        return;
    }
    dsp->tanh_f32 = kern_tanh_f32_neon;
    dsp->erf_f32 = kern_erf_f32_neon;
    dsp->sigmoid_f32 = kern_sigmoid_f32_neon;
    dsp->relu_f32 = kern_relu_f32_neon;
    dsp->gelu_f32 = kern_gelu_f32_neon;
    dsp->gelu_erf_f32 = kern_gelu_erf_f32_neon;
    dsp->tanh_backward_f32 = kern_tanh_backward_f32_neon;
    dsp->relu_backward_f32 = kern_relu_backward_f32_neon;
    dsp->gelu_backward_f32 = kern_gelu_backward_f32_neon;
    dsp->gelu_erf_backward_f32 = kern_gelu_erf_backward_f32_neon;
    dsp->silu_f32 = kern_silu_f32_neon;
    dsp->softplus_f32 = kern_softplus_f32_neon;
    dsp->elu_f32 = kern_elu_f32_neon;
    dsp->clip_f32 = kern_clip_f32_neon;
#if defined(__aarch64__)
    /* These four have no exp inside, so their C reference keeps subnormal
     * results (no flush-to-zero window as around the exp-based ones);
     * ARMv7 NEON flushes them whatever FPSCR says, so on 32-bit ARM they
     * stay C. */
    dsp->sigmoid_backward_f32 = kern_sigmoid_backward_f32_neon;
    dsp->hard_swish_f32 = kern_hard_swish_f32_neon;
    dsp->hard_sigmoid_f32 = kern_hard_sigmoid_f32_neon;
    dsp->leaky_relu_f32 = kern_leaky_relu_f32_neon;
#endif
}
