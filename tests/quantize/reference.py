"""The entropy calibration in numpy, as ONNX Runtime's calibrate.py
(HistogramCollector.get_entropy_threshold) and TensorRT compute it, on a
`cgc calibrate` histogram (equal bins over [lo, hi]):

  - the histogram is folded onto |x|: each bin's count goes to the bin of
    |its centre| among as many bins over [0, max(|lo|, |hi|)]; the first
    of them (values at zero, which the zero point holds exactly: after a
    Relu, half the values) is left out, else its spike decides the
    threshold;
  - for each threshold of i bins (from `levels` up), p is bins [0, i) with
    the mass beyond added to bin i - 1; q merges bins [0, i) into `levels`
    chunks (the last takes the remainder) and spreads each chunk's mass
    evenly over its bins where p is nonzero; both are smoothed as
    calibrate.py's smooth_distribution does (eps = 1e-4);
  - the threshold is the i of the least KL(p || q) (scipy.stats.entropy,
    here in numpy), t = i * max|x| / bins, and the range [max(lo, -t),
    min(hi, t)]; `levels` is 256 for a tensor without negative values and
    128 for one with.
"""
import numpy as np


def smooth(p, eps=1e-4):
    zeros = p == 0
    n_zeros = int(zeros.sum())
    n_nonzeros = p.size - n_zeros
    if n_nonzeros == 0:
        return None
    return p + eps * zeros - (eps * n_zeros / n_nonzeros) * ~zeros


def kl(p, q):
    p = p / p.sum()
    q = q / q.sum()
    keep = p > 0
    return float(np.sum(p[keep] * np.log(p[keep] / q[keep])))


def entropy_range(lo, hi, histogram):
    hist = np.asarray(histogram, np.float64)
    bins = hist.size
    if hi <= lo:
        return lo, hi
    amax = max(abs(lo), abs(hi))
    centres = np.abs(lo + (np.arange(bins) + 0.5) * (hi - lo) / bins)
    index = np.minimum((centres / amax * bins).astype(np.int64), bins - 1)
    folded = np.bincount(index, weights=hist, minlength=bins)
    folded[0] = 0  # values at zero: the zero point holds them exactly
    levels = 256 if lo >= 0 else 128
    best, best_kl = bins, np.inf
    for i in range(levels, bins + 1):
        p = folded[:i].copy()
        p[-1] += folded[i:].sum()
        nonzero = p != 0
        q = np.zeros(i)
        merged = i // levels
        for c in range(levels):
            start = c * merged
            end = i if c == levels - 1 else start + merged
            n = nonzero[start:end].sum()
            if n:
                q[start:end] = np.where(nonzero[start:end], folded[start:end].sum() / n, 0)
        ps, qs = smooth(p), smooth(q)
        d = np.inf if ps is None or qs is None else kl(ps, qs)
        if d < best_kl:
            best, best_kl = i, d
    t = best * amax / bins
    return max(lo, -t), min(hi, t)
