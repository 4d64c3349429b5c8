/* The gate nonlinearities of one step of a recurrent cell (LSTM, GRU),
 * for one sample: what is left of a step once its matrix products have
 * run (libprofile's exec/ops/lstm.c runs those as GEMMs). tests/kernels
 * checks them against double on every path the host has. */
#include <stdint.h>

#include "edgefit/kernels.h"

/* The nonlinearities run on whole gate vectors through the dispatched
 * activation kernels (kern_sigmoid_f32, kern_tanh_f32: AVX2 or AVX-512
 * where the host has them, glibc's expf and tanhf on the C path); the
 * combinations are plain loops the compiler vectorises. A step of a
 * 64-unit LSTM is 320 transcendental values: in scalar libm they took
 * longer than the step's 16384-MAC hidden product. */
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
    int st = kern_sigmoid_f32(gi, gi, 2 * h); /* i and f */
    if (st == KERN_OK) {
        st = kern_tanh_f32(gg, gg, h);
    }
    if (st == KERN_OK) {
        st = kern_sigmoid_f32(go, go, h);
    }
    if (st != KERN_OK) {
        return st;
    }
    for (size_t j = 0; j < h; j++) {
        c[j] = gf[j] * c[j] + gi[j] * gg[j];
    }
    st = kern_tanh_f32(hout, c, h);
    for (size_t j = 0; st == KERN_OK && j < h; j++) {
        hout[j] *= go[j];
    }
    return st;
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
    float *r = gi, *z = gi + h, *n = gi + 2 * h;
    for (size_t j = 0; j < 2 * h; j++) {
        gi[j] += gh[j] + (bhh ? bhh[j] : 0.0f);
    }
    int st = kern_sigmoid_f32(gi, gi, 2 * h); /* r and z */
    if (st != KERN_OK) {
        return st;
    }
    for (size_t j = 0; j < h; j++) {
        n[j] += r[j] * (gh[2 * h + j] + (bhh ? bhh[2 * h + j] : 0.0f));
    }
    if ((st = kern_tanh_f32(n, n, h)) != KERN_OK) {
        return st;
    }
    for (size_t j = 0; j < h; j++) {
        hout[j] = (1.0f - z[j]) * n[j] + z[j] * hout[j];
    }
    return KERN_OK;
}
