/* The ARM rungs of the elem family's dispatch. Built without
 * instruction-set flags: it only stores pointers. AArch64 only: the C
 * reference defines every bit of these, subnormal results included, and
 * ARMv7 NEON flushes subnormals to zero whatever FPSCR says (its only
 * bit-exact operation here, division, is four VFP divisions there anyway),
 * so on 32-bit ARM the family stays C. */
#include "elem.h"

void kern_elem_dsp_init_arm(struct kern_elem_dsp *dsp, unsigned flags)
{
#if defined(__aarch64__)
    if (!(flags & KERN_CPU_NEON)) {
        return;
    }
    size_t k = 0;
#define ELEM_SET(name, op)                                                  \
    dsp->row[k][KERN_ELEM_VV] = kern_elem_##name##_vv_neon;                \
    dsp->row[k][KERN_ELEM_VS] = kern_elem_##name##_vs_neon;                \
    dsp->row[k][KERN_ELEM_SV] = kern_elem_##name##_sv_neon;                \
    k++;
    KERN_ELEM_OPS(ELEM_SET)
#undef ELEM_SET
    dsp->scale_nchw8c = kern_elem_scale_nchw8c_neon;
#else
    (void)dsp;
    (void)flags;
#endif
}
