/* AVX2 convolution: conv_tmpl.h over one __m256 per 8 floats. Compiled
 * with AVX2/FMA flags; called only when the CPU has them. */
#include "conv_v8_avx2.h"

#define CONV_FN(name) name##_avx2

#include "conv_tmpl.h"
