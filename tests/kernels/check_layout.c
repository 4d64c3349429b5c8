/* Checks of the NCHW <-> NCHW8c conversions: every path against the C
 * definition, bit for bit (they move values and compute nothing), on
 * random sizes: channel counts that fill their last block of 8 and that
 * leave it partial, pixel counts with and without a tail past the last 8,
 * batch 1 to 3. Outputs are poisoned beforehand (an unwritten value
 * fails) and a guard after each must stay untouched. */
#include <stdlib.h>
#include <string.h>

#include "checkkern.h"
#include "layout.h"

enum { GUARD = 64 };

static void check_one(const struct kern_layout_dsp *isa, int t)
{
    const size_t batch = (size_t)ck_randi(1, 3);
    const size_t c = (size_t)(t % 4 == 0 ? 8 * ck_randi(1, 6)
                                         : ck_randi(1, 45));
    const size_t hw = (size_t)(t % 3 == 0 ? 8 * ck_randi(1, 40)
                                          : ck_randi(1, 300));
    const size_t n = batch * c * hw;
    const size_t nb = batch * (c + 7) / 8 * 8 * hw;
    float *x = malloc(n * sizeof *x);
    float *b0 = malloc((nb + GUARD) * sizeof *b0);
    float *b1 = malloc((nb + GUARD) * sizeof *b1);
    float *x0 = malloc((n + GUARD) * sizeof *x0);
    float *x1 = malloc((n + GUARD) * sizeof *x1);
    float guard[GUARD];
    if (!x || !b0 || !b1 || !x0 || !x1) {
        ck_fail("out of memory");
        goto done;
    }
    ck_fill_f32(x, n, -1.0f, 1.0f);
    ck_fill_f32(guard, GUARD, -1.0f, 1.0f);
    ck_poison(b0, nb * sizeof *b0);
    ck_poison(b1, nb * sizeof *b1);
    ck_poison(x0, n * sizeof *x0);
    ck_poison(x1, n * sizeof *x1);
    memcpy(b1 + nb, guard, sizeof guard);
    memcpy(x1 + n, guard, sizeof guard);
    kern_nchw_to_nchw8c_c(batch, c, hw, x, b0);
    isa->to_nchw8c(batch, c, hw, x, b1);
    if (memcmp(b0, b1, nb * sizeof *b0) != 0) {
        ck_fail("to NCHW8c: b%zu c%zu hw%zu: other bits than the C path",
                batch, c, hw);
    }
    kern_nchw8c_to_nchw_c(batch, c, hw, b0, x0);
    isa->to_nchw(batch, c, hw, b0, x1);
    if (memcmp(x0, x1, n * sizeof *x0) != 0 ||
        memcmp(x0, x, n * sizeof *x0) != 0) {
        ck_fail("to NCHW: b%zu c%zu hw%zu: other bits than the C path or "
                "the original", batch, c, hw);
    }
    if (memcmp(b1 + nb, guard, sizeof guard) != 0 ||
        memcmp(x1 + n, guard, sizeof guard) != 0) {
        ck_fail("b%zu c%zu hw%zu: wrote past the output", batch, c, hw);
    }
done:
    free(x);
    free(b0);
    free(b1);
    free(x0);
    free(x1);
}

void check_layout(unsigned flags);

void check_layout(unsigned flags)
{
    struct kern_layout_dsp isa;
    kern_layout_dsp_init(&isa, flags);
    if (!ck_func2((const void *)isa.to_nchw8c, (const void *)isa.to_nchw,
                  "nchw8c")) {
        return;
    }
    for (int t = 0; t < 300; t++) {
        check_one(&isa, t);
    }
    ck_report();
}
