/* The dilated depthwise loop (dwconv_dil_tmpl.h) compiled in the NEON
 * library: the compiler vectorises its row sweeps 4 lanes wide. The same
 * source and no contraction give the bits of kern_dwconv2d_c. */
#include "dwconv.h"
#include "dwconv_dil_tmpl.h"

void kern_dwconv2d_dil_neon(const struct kern_dwconv2d_shape *s,
                            size_t out_h, size_t out_w, const float *x,
                            const float *w, const float *bias, int act,
                            float *y)
{
    dwconv2d_dilated(s, out_h, out_w, x, w, bias, act, y);
}
