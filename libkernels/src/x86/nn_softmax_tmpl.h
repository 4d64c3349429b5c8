/* Softmax and softmax-cross-entropy row drivers, shared by the AVX2 and
 * AVX-512 nn files. The includer defines NN_FN(name) (the ISA suffix) and
 * the static row helpers this code calls:
 *   row_max(x, cols, &nan)   largest value; nan set when a NaN was seen
 *   row_exp(x, cols, mx, y)  y = exp(x - mx) (y may be NULL), returns the
 *                            sum in double
 *   row_scale(y, cols, s)    y *= s
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>

void NN_FN(kern_nn_softmax)(const float *x, size_t rows, size_t cols,
                            float *y)
{
    for (size_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols;
        float *yr = y + r * cols;
        bool nan;
        const float mx = row_max(xr, cols, &nan);
        if (nan || isinf(mx)) {
            for (size_t c = 0; c < cols; c++) {
                yr[c] = NAN;
            }
            continue;
        }
        const double sum = row_exp(xr, cols, mx, yr);
        row_scale(yr, cols, (float)(1.0 / sum));
    }
}

double NN_FN(kern_nn_xent)(const float *logits, const int32_t *labels,
                           size_t batch, size_t classes, float *grad)
{
    const float inv_batch = (float)(1.0 / (double)batch);
    double total = 0.0;
    for (size_t b = 0; b < batch; b++) {
        const float *xr = logits + b * classes;
        const size_t lab = (size_t)labels[b];
        const double xl = (double)xr[lab];
        bool nan;
        const float mx = row_max(xr, classes, &nan);
        float *gr = grad ? grad + b * classes : NULL;
        const double sum = row_exp(xr, classes, mx, gr);
        if (gr) {
            const float inv = (float)(1.0 / sum);
            const float el = gr[lab];
            row_scale(gr, classes, inv * inv_batch);
            gr[lab] = (el * inv - 1.0f) * inv_batch;
        }
        total += (double)mx + log(sum) - xl;
    }
    return total;
}
