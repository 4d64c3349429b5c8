/* The running maximum of the tests' error and magnitude reductions.
 *
 * max_seen(m, v) is fmax(m, v) for the reductions the tests write: m starts
 * at a number and a NaN v leaves m as it is. It is written as a comparison
 * rather than as fmax() because gcc 12.2 for aarch64 crashes (an internal
 * compiler error in vect_transform_reduction) when it vectorises, at -O3,
 * an fmax() reduction in double of a value widened from float; a
 * comparison is no fmax() reduction, so the tests build at the libraries'
 * optimisation level on every target. Header-only; tests include it as
 * "../max_seen.h". */
#ifndef EDGEFIT_TESTS_MAX_SEEN_H
#define EDGEFIT_TESTS_MAX_SEEN_H

static inline double max_seen(double m, double v)
{
    return v > m ? v : m;
}

#endif
