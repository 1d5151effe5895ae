#!/usr/bin/env python3
"""Fits the float32 polynomials of base/pointwise_math.h's exp2_poly, erf_poly and
gelu_exact_poly and of runtime/kernels/exp_sum_vec.cpp's summed exp terms, and reports their
worst error in float32 ulps (or relative error) against mpmath.

  exp2_poly: 2^r = 1 + r Q(r) on [-1/2, 1/2], Q of degree 4, minimizing the relative error
             (2^0 = 1 exactly, so that integer powers of two are exact).
  erf, |x| < 1:  erf(x) = x q(x^2), q of degree 5, minimizing the relative error of erf.
  erf, |x| >= 1: erf(x) = 1 - 2^P(|x| - 1), P of degree 6 fitted to log2(erfc) on [1, 4],
                 weighted by erfc ln 2, so that the error left in erf is what is minimized.
  gelu (approximate "none"): Phi(-a) = 2^(R(min(a, 4 sqrt 2) - 7/4) - 4) for a = |x|, R of
                 degree 10 fitted to log2 Phi(-a) + 4 on [0, 4 sqrt 2], weighted by
                 1 / sqrt(max(|log2 Phi(-a) + 4|, 2)) (the float rounding of R grows with it),
                 each coefficient rounded to float32 before the lower ones are refitted.
  sin and cos:   sin r = r + r^3 S(r^2) on [0, pi/2 (1 + 2^-9)], S of degree 3, minimizing the
                 relative error, the constant coefficient rounded to float32 first and the
                 higher ones refitted; pi in five parts for Cody and Waite's reduction, the
                 first four with 11 significant bits.
  pow:           log2 m = (2 / ln 2) s + s^3 Q(s^2) with s = (m - 1) / (m + 1), Q of degree 3,
                 and 2^r = 1 + r P(r) on [-1/2, 1/2], P of degree 5, both minimizing the
                 relative error, rounded to float32 from the constant up, each higher coefficient
                 refitted to what the rounded ones leave.
  summed exp terms: e^r = 1 + r S(r) on [-ln2/16, ln2/16], S of degree 2, minimizing the
                 relative error; the eighths 2^(j/8) come from a table.

The fits are Lawson's iteratively reweighted least squares on Chebyshev nodes (converging
toward the minimax polynomial). The check evaluates the printed float32 coefficients as the
kernels do: float32 Horner steps (each multiply-add rounded once, as an FMA), 2^P as
(1 + r Q(r)) times an exact 2^n, and 1 - that rounded once; gelu as gelu_exact_poly computes it.
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


def fit_exp2(degree):
    r = chebyshev_nodes(-0.5, 0.5, 2000)
    return lawson(np.vander(r, degree + 1) * r[:, None], 2.0**r - 1, 2.0**-r)


def fit_exp_eighths(degree):
    r = chebyshev_nodes(-np.log(2) / 16 * 1.001, np.log(2) / 16 * 1.001, 2000)
    return lawson(np.vander(r, degree + 1) * r[:, None], np.exp(r) - 1, np.exp(-r))


def ln2_eighth_parts():
    """ln 2 / 8 as c1 + c2: c1 keeps 12 significant bits, so that n c1 is exact for |n| < 2^11."""
    c = mp.log(2) / 8
    m, e = mp.frexp(c)
    c1 = float(mp.floor(m * 2**12) / 2**12 * mp.mpf(2)**e)
    return f32(c1), f32(float(c - c1))


def exp_sum_term_32(s_coeffs, c1, c2, d):
    """exp(d) as exp_sum_vec.cpp computes it: n = round(d 8/ln 2); r = d - n c1 - n c2 (the
    first product exact, the second step one multiply-add); e^r from S; 2^(n/8) from the table
    and the exponent; the final product rounded once."""
    d64 = np.float64(f32(d))
    n = np.float64(f32(d64 * np.float64(f32(8 / np.log(2))) + 12582912.0)) - 12582912.0
    r = f32(d64 - n * np.float64(c1))
    r = f32(np.float64(r) - n * np.float64(c2))
    p = horner32(list(s_coeffs) + [f32(1)], r)
    return f32(np.float64(p) * np.float64(f32(2.0**((n % 8) / 8))) * 2.0**np.floor(n / 8))


def fit_refined(design, target, weight, degree):
    """Coefficients of `design`'s columns (highest power first) as float32: the constant
    (column `degree`, which carries the most weight) is rounded first and each higher one refitted
    to what the rounded ones leave; and the worst weighted error left."""
    fixed = {}
    for k in range(degree, -1, -1):
        free = [j for j in range(degree + 1) if j not in fixed]
        c = lawson(design[:, free], target, weight, rounds=100)
        fixed[k] = f32(c[free.index(k)])
        target = target - np.float64(fixed[k]) * design[:, k]
    return [fixed[k] for k in range(degree + 1)], float(np.max(np.abs(target * weight)))


def fit_sin(degree, edge):
    """S, highest power first, with float32 coefficients: the constant (-1/6, which carries the
    most weight) is rounded first, and each higher one is refitted to what the rounded ones
    leave."""
    r = chebyshev_nodes(1e-4, edge, 3000)
    target = (np.sin(r) - r) / r**3
    weight = r**3 / np.sin(r)
    return fit_refined(np.vander(r * r, degree + 1), target, weight, degree)[0]


def fit_log2_tail(degree):
    """pow's log2 m = C1 s + s^3 Q(s^2), s = (m - 1) / (m + 1) for m in [sqrt(1/2), sqrt(2)),
    C1 = 2 / ln 2 exactly: Q of `degree` minimizing the relative error of log2 m."""
    edge = (np.sqrt(2) - 1) / (np.sqrt(2) + 1) * 1.001
    s = chebyshev_nodes(1e-4, edge, 3000)
    log2m = np.array([float(mp.log((1 + mp.mpf(v)) / (1 - mp.mpf(v)), 2)) for v in s])
    target = (log2m - 2 / np.log(2) * s) / s**3
    return fit_refined(np.vander(s * s, degree + 1), target, s**3 / log2m, degree)


def fit_exp2_pow(degree):
    """pow's 2^r = 1 + r P(r) on [-1/2, 1/2] (with a margin): P of `degree` minimizing the
    relative error."""
    r = chebyshev_nodes(-0.5 * 1.001, 0.5 * 1.001, 3000)
    return fit_refined(np.vander(r, degree + 1), (2.0**r - 1) / r, r / 2.0**r, degree)


def pi_parts(bits, count):
    """pi as count floats: all but the last rounded to `bits` significant bits, the last to
    float32, each taking what the ones before leave."""
    rest, parts = mp.pi, []
    for i in range(count):
        if i == count - 1:
            v = float(f32(float(rest)))
        else:
            step = mp.mpf(2)**(mp.floor(mp.log(abs(rest), 2)) - bits + 1)
            v = float(mp.nint(rest / step) * step)
        parts.append(f32(v))
        rest -= v
    return parts, rest


def sin_32(s_coeffs, parts, x, cos=False):
    """sin_reduced (or cos_reduced) as the kernels compute it, each multiply-add rounded once."""
    x = np.float64(f32(x))
    inv_pi = np.float64(f32(1 / np.pi))
    k = np.float64(f32(np.float64(f32(x * inv_pi - (0.5 if cos else 0)) + 12582912.0))) - 12582912.0
    m = k + 0.5 if cos else k
    r = f32(x - m * np.float64(parts[0]))
    for p in parts[1:]:
        r = f32(np.float64(r) - m * np.float64(p))
    if cos:
        r = -r  # the kernel computes m pi - x, the same roundings with the sign flipped
    z = f32(np.float64(r) * np.float64(r))
    s = horner32(s_coeffs, z)
    y = f32(np.float64(r) + np.float64(f32(np.float64(r) * np.float64(z))) * np.float64(s))
    return -y if int(k) % 2 else y


def fit_erf_small(degree, edge):
    x = chebyshev_nodes(0, edge, 4000)
    ratio = np.array([float(mp.erf(v) / v) for v in x])
    return lawson(np.vander(x * x, degree + 1), ratio, 1 / ratio)


def fit_erf_large(degree, edge, center):
    a = chebyshev_nodes(edge, 4.0, 4000)
    log2_erfc = np.array([float(mp.log(mp.erfc(v), 2)) for v in a])
    erfc = np.array([float(mp.erfc(v)) for v in a])
    return lawson(np.vander(a - center, degree + 1), log2_erfc, erfc * np.log(2))


def fit_gelu_tail(degree, cap, center, offset):
    """R, highest power first, with float32 coefficients: the highest is fitted and rounded
    first, and each lower one is refitted to what the rounded ones leave."""
    a = chebyshev_nodes(0, cap, 3000)
    target = np.array([float(mp.log(mp.ncdf(-v), 2)) for v in a]) + offset
    weight = 1 / np.sqrt(np.maximum(np.abs(target), 2))
    design = np.vander(a - center, degree + 1)
    fixed = []
    for k in range(degree + 1):
        c = f32(lawson(design[:, k:], target, weight, rounds=100)[0])
        fixed.append(c)
        target = target - np.float64(c) * design[:, k]
    return fixed


def gelu_tail_32(coeffs, u):
    """R(u) as gelu_exact_poly evaluates it (coefficients highest power first): pairs
    c0 + c1 u, ..., then q0 + u^2 ((q1 + q2 u^2) + ((q3 + q4 u^2) + c10 u^4) u^4)."""
    c = [np.float64(v) for v in reversed(coeffs)]
    u = np.float64(u)
    u2 = np.float64(f32(u * u))
    u4 = np.float64(f32(u2 * u2))
    q = [np.float64(f32(c[i] + c[i + 1] * u)) for i in range(0, 10, 2)]
    low = np.float64(f32(q[1] + q[2] * u2))
    high = np.float64(f32(np.float64(f32(q[3] + q[4] * u2)) + c[10] * u4))
    t = np.float64(f32(low + high * u4))
    return f32(q[0] + u2 * t)


def gelu_32(e2, coeffs, x, cap, center, offset):
    """gelu_exact_poly: relu(x) - q (|x| 2^(n - offset)), with 2^(R - offset) = q 2^(n - offset)
    and |x| 2^(n - offset) exact, the last multiply-add rounded once."""
    a = abs(np.float64(x))
    if a > cap:  # the select zeroes |x| 2^(n - offset): x above, -0 below
        return f32(x) if x > 0 else f32(-0.0)
    y = gelu_tail_32(coeffs, f32(min(f32(a), cap) - f32(center)))
    n = np.round(np.float64(y))
    r = f32(np.float64(y) - n)
    q = f32(1 + np.float64(r) * np.float64(horner32(e2, r)))
    return f32(max(np.float64(x), 0.0) - np.float64(q) * (a * 2.0**(n - offset)))


def horner32(coeffs, x):
    r = f32(coeffs[0])
    for c in coeffs[1:]:
        r = f32(np.float64(r) * np.float64(x) + np.float64(c))
    return r


def exp2_32(e2, y):
    """2^y as exp2_poly computes it: (1 + r Q(r)) * 2^n with n = round(y) and r = y - n; the
    product is returned unrounded (float64), since the kernels fuse it into the next operation."""
    n = np.round(np.float64(y))
    r = f32(np.float64(y) - n)
    p = f32(1 + np.float64(r) * np.float64(horner32(e2, r)))
    return np.float64(p) * 2.0**n


def ulps(a, b):
    ia = int(np.float32(a).view(np.int32))
    ib = int(np.float32(b).view(np.int32))
    return abs(ia - ib)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check-points", type=int, default=100000)
    args = ap.parse_args()
    edge, center = 1.0, 1.0
    e2 = [f32(c) for c in fit_exp2(4)]
    small = [f32(c) for c in fit_erf_small(5, edge)]
    large = [f32(c) for c in fit_erf_large(6, edge, center)]
    print("Q (r, highest power first):", ", ".join("%.9g" % c for c in e2))
    print("q (x^2, highest power first):", ", ".join("%.9g" % c for c in small))
    print("P (|x| - 1, highest power first):", ", ".join("%.9g" % c for c in large))

    rng = np.random.default_rng(0)
    rs = np.concatenate([np.linspace(-0.5, 0.5, args.check_points),
                         rng.uniform(-0.5, 0.5, args.check_points)]).astype(np.float32)
    worst_e2 = max((ulps(exp2_32(e2, r), f32(mp.power(2, float(r)))), float(r)) for r in rs)
    print(f"exp2: worst {worst_e2[0]} ulp at r = {worst_e2[1]:.9g}")

    xs = np.concatenate([np.linspace(0, 5, args.check_points),
                         np.abs(rng.standard_normal(args.check_points)) * 2]).astype(np.float32)
    worst = {"small": (0, 0.0), "large": (0, 0.0)}
    for x in xs:
        if x < edge:
            branch, y = "small", f32(horner32(small, f32(x * x)) * x)
        else:
            p = horner32(large, f32(min(x, f32(4)) - f32(center)))
            branch, y = "large", f32(1 - exp2_32(e2, p))
        d = ulps(y, f32(mp.erf(float(x))))
        if d > worst[branch][0]:
            worst[branch] = (d, float(x))
    for branch, (d, at) in worst.items():
        print(f"erf {branch} branch: worst {d} ulp at x = {at:.9g}")

    # gelu (approximate "none"): the clamp is the float32 value the kernel compares with.
    g_cap, g_center, g_offset = f32(4 * np.sqrt(2)), 1.75, 4
    tail = fit_gelu_tail(10, float(g_cap), g_center, g_offset)
    print("R (|x| - 7/4, highest power first):", ", ".join("%.9g" % c for c in tail))
    gx = np.concatenate([np.linspace(-float(g_cap), float(g_cap), args.check_points),
                         rng.standard_normal(args.check_points) * 2]).astype(np.float32)
    ranges = {"x < -3": (0, 0.0), "-3 <= x < -1": (0, 0.0), "-1 <= x < 0": (0, 0.0),
              "x >= 0": (0, 0.0)}
    for x in gx:
        if x < -g_cap:  # Phi(x) < 8e-9 is taken as 0 there, and gelu is -0
            continue
        name = ("x < -3" if x < -3 else "-3 <= x < -1" if x < -1 else "-1 <= x < 0" if x < 0
                else "x >= 0")
        d = ulps(gelu_32(e2, tail, x, g_cap, g_center, g_offset), f32(x * mp.ncdf(float(x))))
        if d > ranges[name][0]:
            ranges[name] = (d, float(x))
    for name, (d, at) in ranges.items():
        print(f"gelu (none), {name}: worst {d} ulp at x = {at:.9g}")

    # sin and cos: S, pi's parts, and the worst error over |x| <= kSinCosReducedLimit.
    s_coeffs = fit_sin(3, np.pi / 2 * (1 + 2.0**-9))
    parts, rest = pi_parts(11, 5)
    print("S (r^2, highest power first):", ", ".join(float(c).hex() for c in s_coeffs))
    print("pi as", " + ".join(float(p).hex() for p in parts), "(%s left)" % mp.nstr(rest, 3))
    sx = np.concatenate([np.linspace(-8192, 8192, args.check_points),
                         rng.standard_normal(args.check_points) * 4]).astype(np.float32)
    for name, ref, is_cos in (("sin", mp.sin, False), ("cos", mp.cos, True)):
        worst_t = max((ulps(sin_32(s_coeffs, parts, x, is_cos), f32(ref(float(x)))), float(x))
                      for x in sx)
        print(f"{name}: worst {worst_t[0]} ulp at x = {worst_t[1]:.9g}")

    # pow (Note [pow in double-float]): the log2 tail Q, 2 / ln 2 as two floats, and 2^r's P.
    q, q_err = fit_log2_tail(3)
    c1 = f32(2 / np.log(2))
    print("pow Q (s^2, highest power first):", ", ".join(float(c).hex() for c in q),
          "(relative error 2^%.1f)" % np.log2(q_err))
    print("pow 2 / ln 2 as", float(c1).hex(), "+", float(f32(2 / np.log(2) - float(c1))).hex())
    p, p_err = fit_exp2_pow(5)
    print("pow P (r, highest power first):", ", ".join(float(c).hex() for c in p),
          "(relative error 2^%.1f)" % np.log2(p_err))

    # Summed exp terms (logsumexp, log_softmax): the table, ln 2 / 8 in two parts and S.
    c1, c2 = ln2_eighth_parts()
    s_coeffs = [f32(c) for c in fit_exp_eighths(2)]
    print("2^(j/8), j = 0..7:", ", ".join("%.9g" % f32(2.0**(j / 8)) for j in range(8)))
    print("8 / ln 2: %.9g; ln 2 / 8 as %.9g + %.9g" % (f32(8 / np.log(2)), c1, c2))
    print("S (r, highest power first):", ", ".join("%.9g" % c for c in s_coeffs))
    # d = x - ref runs from the -87 cutoff to kExpSumMaxShift = 64.
    ds = np.concatenate([np.linspace(-87, 64, args.check_points),
                         -np.abs(rng.standard_normal(args.check_points)) * 10]).astype(np.float32)
    worst_s = max((float(abs(exp_sum_term_32(s_coeffs, c1, c2, d) / mp.exp(float(d)) - 1)),
                   float(d)) for d in ds)
    print(f"summed exp terms: worst relative error {worst_s[0]:.2g} at d = {worst_s[1]:.9g}")


if __name__ == "__main__":
    main()
