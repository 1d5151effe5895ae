#!/usr/bin/env python3
"""Fits the float32 erf polynomials of runtime/pointwise_math.h (erf_poly) and reports their
worst error in float32 ulps against mpmath's erf.

  |x| < 1:  erf(x) = x q(x^2), q of degree 5, minimizing the relative error of erf.
  |x| >= 1: erf(x) = 1 - exp(P(|x| - 2.5)), P of degree 6 fitted to log(erfc) on [1, 4],
            weighted by erfc so that the error left in erf is what is minimized.

The fits are Lawson's iteratively reweighted least squares on Chebyshev nodes (converging
toward the minimax polynomial). The check evaluates the printed float32 coefficients with
float32 Horner steps (each multiply-add rounded once, as an FMA) and a correctly rounded exp.
Needs numpy and mpmath:  pip install numpy mpmath
"""
import argparse

import mpmath as mp
import numpy as np

mp.mp.dps = 40
f32 = np.float32


def chebyshev_nodes(lo, hi, count):
    k = np.arange(count)
    return (lo + hi) / 2 + (hi - lo) / 2 * np.cos(np.pi * (k + 0.5) / count)


def lawson(design, target, weight, rounds=30):
    """Coefficients (highest power first) minimizing max |weight * (design @ c - target)|."""
    lw = np.ones_like(target)
    for _ in range(rounds):
        s = weight * np.sqrt(lw)
        c, *_ = np.linalg.lstsq(design * s[:, None], target * s, rcond=None)
        err = np.abs((design @ c - target) * weight)
        lw = lw * err
        lw /= lw.sum()
    return c


def fit_small(degree, edge):
    x = chebyshev_nodes(0, edge, 4000)
    ratio = np.array([float(mp.erf(v) / v) for v in x])
    return lawson(np.vander(x * x, degree + 1), ratio, 1 / ratio)


def fit_large(degree, edge, center):
    a = chebyshev_nodes(edge, 4.0, 4000)
    log_erfc = np.array([float(mp.log(mp.erfc(v))) for v in a])
    erfc = np.array([float(mp.erfc(v)) for v in a])
    return lawson(np.vander(a - center, degree + 1), log_erfc, erfc)


def horner32(coeffs, x):
    r = f32(coeffs[0])
    for c in coeffs[1:]:
        r = f32(np.float64(r) * np.float64(x) + np.float64(c))
    return r


def ulps(a, b):
    ia = int(np.float32(a).view(np.int32))
    ib = int(np.float32(b).view(np.int32))
    return abs(ia - ib)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check-points", type=int, default=100000)
    args = ap.parse_args()
    edge, center = 1.0, 2.5
    small = [f32(c) for c in fit_small(5, edge)]
    large = [f32(c) for c in fit_large(6, edge, center)]
    print("q (x^2, highest power first):", ", ".join("%.9g" % c for c in small))
    print("P (|x| - 2.5, highest power first):", ", ".join("%.9g" % c for c in large))

    rng = np.random.default_rng(0)
    xs = np.concatenate([np.linspace(0, 5, args.check_points),
                         np.abs(rng.standard_normal(args.check_points)) * 2]).astype(np.float32)
    worst = {"small": (0, 0.0), "large": (0, 0.0)}
    for x in xs:
        if x < edge:
            branch, y = "small", f32(horner32(small, f32(x * x)) * x)
        else:
            p = horner32(large, f32(min(x, f32(4)) - f32(center)))
            branch, y = "large", f32(f32(1) - f32(np.exp(np.float64(p))))
        d = ulps(y, f32(mp.erf(float(x))))
        if d > worst[branch][0]:
            worst[branch] = (d, float(x))
    for branch, (d, at) in worst.items():
        print(f"{branch} branch: worst {d} ulp at x = {at:.9g}")


if __name__ == "__main__":
    main()
