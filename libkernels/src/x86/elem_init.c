/* The x86 rungs of the elem family's dispatch (dav1d's way: the generic
 * init sets the C entries and calls this, so a new instruction set
 * touches only this folder). Built without instruction-set flags: it only
 * stores pointers. */
#include "elem.h"

void kern_elem_dsp_init_x86(struct kern_elem_dsp *dsp, unsigned flags)
{
    if (!(flags & KERN_CPU_AVX2)) {
        return;
    }
    size_t k = 0;
#define ELEM_SET(name, op)                                                  \
    dsp->row[k][KERN_ELEM_VV] = kern_elem_##name##_vv_avx2;                \
    dsp->row[k][KERN_ELEM_VS] = kern_elem_##name##_vs_avx2;                \
    dsp->row[k][KERN_ELEM_SV] = kern_elem_##name##_sv_avx2;                \
    k++;
    KERN_ELEM_OPS(ELEM_SET)
#undef ELEM_SET
    dsp->scale_nchw8c = kern_elem_scale_nchw8c_avx2;
    if (!(flags & KERN_CPU_AVX512)) {
        return;
    }
    k = 0;
#define ELEM_SET(name, op)                                                  \
    dsp->row[k][KERN_ELEM_VV] = kern_elem_##name##_vv_avx512;              \
    dsp->row[k][KERN_ELEM_VS] = kern_elem_##name##_vs_avx512;              \
    dsp->row[k][KERN_ELEM_SV] = kern_elem_##name##_sv_avx512;              \
    k++;
    KERN_ELEM_OPS(ELEM_SET)
#undef ELEM_SET
    dsp->scale_nchw8c = kern_elem_scale_nchw8c_avx512;
}
