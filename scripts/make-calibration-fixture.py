#!/usr/bin/python3
"""Write tests/data/calibration/ranges.txt: values of a known distribution
and, computed here with numpy, what the activation-range methods of
libprofile (prof_ranges_calibrate, see profile.h) must find on them.

The file is byte-reproducible: a fixed generator state, float32 values
written with 9 significant digits (which read back exactly).

    percentile P BIN VALUE   BIN: the first of 2048 bins of |x| over
                             [0, max|x|] where the cumulative share reaches
                             P %; VALUE: numpy.percentile(|x|, P), the exact
                             order statistic, which must lie in that bin
    entropy BINS             the number of bins (128..2048) whose threshold
                             the KL method keeps, by the reference below
    values N                 then N values, one per line

The entropy reference restates the algorithm of TensorRT's and MXNet's
entropy calibrator (ONNX Runtime's quantizer has the same) with numpy; it is
a reference for the test, not the product.
"""
import sys
import numpy as np

BINS = 2048
LEVELS = 128
EPS = 1e-4


def bins_of(x):
    a = np.abs(x.astype(np.float32)).astype(np.float64)
    m = a.max()
    b = np.floor(a * float(BINS) / m)
    return np.minimum(b, BINS - 1).astype(np.int64), m


def smooth(p):
    zeros = p == 0
    nz = zeros.sum()
    nn = p.size - nz
    if nn == 0:
        return None
    eps1 = EPS * nz / nn
    out = np.where(zeros, EPS, p - eps1)
    if not (out > 0).all():
        return None
    return out


def kl(p, q):
    p = p / p.sum()
    q = q / q.sum()
    return float(np.sum(p * np.log(p / q)))


def entropy_bins(hist):
    best, best_i = np.inf, BINS
    for i in range(LEVELS, BINS + 1):
        sliced = hist[:i].astype(np.float64)
        p = sliced.copy()
        p[i - 1] += hist[i:].sum()
        nonzero = sliced != 0
        merged = i // LEVELS
        q = np.zeros(i)
        for g in range(LEVELS):
            lo = g * merged
            hi = i if g == LEVELS - 1 else lo + merged
            n = nonzero[lo:hi].sum()
            if n:
                q[lo:hi] = np.where(nonzero[lo:hi], sliced[lo:hi].sum() / n, 0)
        q[p == 0] = 0
        ps, qs = smooth(p), smooth(q)
        if ps is None or qs is None:
            continue
        d = kl(ps, qs)
        if d < best:
            best, best_i = d, i
    return best_i


def main(out):
    rng = np.random.default_rng(20261127)
    # A bell of activations with a long tail on one side and a few far
    # outliers: min-max is set by the outliers, the other two cut them.
    x = np.concatenate([
        rng.normal(0.0, 1.0, 3900),
        rng.exponential(2.0, 180),
        np.array([-25.0, 31.0, 40.0, -18.5]),
        rng.normal(0.0, 0.05, 12),
    ]).astype(np.float32)
    rng.shuffle(x)
    b, m = bins_of(x)
    hist = np.bincount(b, minlength=BINS)
    pct = 99.9
    cdf = np.cumsum(hist) / hist.sum()
    pbin = int(np.searchsorted(cdf, pct / 100.0))
    value = float(np.percentile(np.abs(x).astype(np.float64), pct))
    ebins = entropy_bins(hist)
    with open(out, "w") as f:
        f.write("percentile %r %d %.17g\n" % (pct, pbin, value))
        f.write("entropy %d\n" % ebins)
        f.write("values %d\n" % x.size)
        for v in x:
            f.write("%.9g\n" % v)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1
         else "tests/data/calibration/ranges.txt")
