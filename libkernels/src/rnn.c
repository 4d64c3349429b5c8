/* The gate nonlinearities of one step of a recurrent cell (LSTM, GRU),
 * for one sample: what is left of a step once its matrix products have
 * run (libprofile's exec/ops/lstm.c runs those as GEMMs). Plain C the
 * compiler vectorises apart from expf and tanhf; the references of their
 * own tests (tests/kernels check them against double). */
#include <math.h>
#include <stdint.h>

#include "edgefit/kernels.h"

static inline float sigm(float v)
{
    return 1.0f / (1.0f + expf(-v));
}

KERN_API int kern_lstm_cell_f32(size_t h, float *gates, float *c,
                                float *hout)
{
    if (h == 0) {
        return KERN_OK;
    }
    if (!gates || !c || !hout) {
        return KERN_E_INVALID;
    }
    if (h > SIZE_MAX / 4 / sizeof(float)) {
        return KERN_E_OVERFLOW;
    }
    float *gi = gates, *gf = gates + h, *gg = gates + 2 * h,
          *go = gates + 3 * h;
    for (size_t j = 0; j < h; j++) {
        const float i = sigm(gi[j]), f = sigm(gf[j]), g = tanhf(gg[j]),
                    o = sigm(go[j]);
        gi[j] = i;
        gf[j] = f;
        gg[j] = g;
        go[j] = o;
        c[j] = f * c[j] + i * g;
        hout[j] = o * tanhf(c[j]);
    }
    return KERN_OK;
}

KERN_API int kern_gru_cell_f32(size_t h, float *gi, const float *gh,
                               const float *bhh, float *hout)
{
    if (h == 0) {
        return KERN_OK;
    }
    if (!gi || !gh || !hout) {
        return KERN_E_INVALID;
    }
    if (h > SIZE_MAX / 3 / sizeof(float)) {
        return KERN_E_OVERFLOW;
    }
    for (size_t j = 0; j < h; j++) {
        const float br = bhh ? bhh[j] : 0.0f, bz = bhh ? bhh[h + j] : 0.0f,
                    bn = bhh ? bhh[2 * h + j] : 0.0f;
        const float r = sigm(gi[j] + gh[j] + br);
        const float z = sigm(gi[h + j] + gh[h + j] + bz);
        const float n = tanhf(gi[2 * h + j] + r * (gh[2 * h + j] + bn));
        gi[j] = r;
        gi[h + j] = z;
        gi[2 * h + j] = n;
        hout[j] = (1.0f - z) * n + z * hout[j];
    }
    return KERN_OK;
}
