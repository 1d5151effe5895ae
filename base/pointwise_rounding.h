// Rounding and remainders: trunc, floor, ceil, round (half to even), fmod and remainder. Written in
// the primitives of pointwise_math.h, plus fmod.
#pragma once

#include <cmath>
#include <type_traits>

#include "kiln/base/pointwise_math.h"

namespace kiln::math {

// fmod for integers as the kernel IR's Rem computes it: C's truncated remainder, and 0 for a
// divisor of 0 or -1 (MIN % -1 overflows). Division by zero is the caller's to report.
template <class T>
requires std::is_integral_v<T> T fmod(T a, T b) {
  return b == 0 || b == T(-1) ? T(0) : T(a % b);
}
using std::fmod;

// Note [Rounding by fmod]
// The kernel IR has no rounding primitive, but its Rem is C's fmod on floats in every backend, and
// fmod is exact. So trunc(x) = x - fmod(x, 1) exactly (the difference is the representable
// trunc(x)), and floor, ceil and round follow from trunc with comparisons, all exact: the same
// values as libm's functions, which the float and double overloads call for the eager loops.
// A zero result keeps x's sign (trunc(-0.5) is -0, as libm's); inf and NaN, whose fmod is NaN,
// are returned as they are.
template <class V>
KILN_ALWAYS_INLINE V trunc_(V x) {
  V f = fmod(x, V(1));
  return select(f != f, x, select(abs(x) < V(1), x * V(0), x - f));
}
template <class V>
KILN_ALWAYS_INLINE V floor_(V x) {
  V t = trunc_(x);
  return select(x < t, t - V(1), t);
}
template <class V>
KILN_ALWAYS_INLINE V ceil_(V x) {
  V t = trunc_(x);
  return select(t < x, t + V(1), t);
}
// Half to even, as torch.round and nearbyint under the default rounding mode: away from trunc(x)
// when the fraction is above one half, or exactly one half and trunc(x) is odd (t / 2 is exact).
template <class V>
KILN_ALWAYS_INLINE V round_(V x) {
  V t = trunc_(x);
  V d = abs(x - t);
  V h = t * V(0.5);
  auto away = logical_or(V(0.5) < d, logical_and(d == V(0.5), trunc_(h) != h));
  return select(away, t + select(x < V(0), V(-1), V(1)), t);
}
#define KILN_ROUNDING_FROM_LIBM(name, fn) \
  inline float name(float x) {            \
    return std::fn(x);                    \
  }                                       \
  inline double name(double x) {          \
    return std::fn(x);                    \
  }
KILN_ROUNDING_FROM_LIBM(trunc_, trunc)
KILN_ROUNDING_FROM_LIBM(floor_, floor)
KILN_ROUNDING_FROM_LIBM(ceil_, ceil)
KILN_ROUNDING_FROM_LIBM(round_, nearbyint)
#undef KILN_ROUNDING_FROM_LIBM

// torch.round(x, decimals): x scaled by 10^decimals, rounded and scaled back (for negative
// decimals, divided first), as torch computes it; `scale` is 10^|decimals|.
template <class V>
KILN_ALWAYS_INLINE V round_decimals(V x, V scale, bool negative) {
  return negative ? round_(x / scale) * scale : round_(x * scale) / scale;
}

// torch.fmod: the remainder of truncated division, with the dividend's sign.
template <class V>
KILN_ALWAYS_INLINE V fmod_(V a, V b) {
  return fmod(a, b);
}
// torch.remainder (Python's %): the remainder of floored division, with the divisor's sign, as
// torch computes it from fmod.
template <class V>
KILN_ALWAYS_INLINE V remainder(V a, V b) {
  V m = fmod(a, b);
  auto fix = logical_and(m != V(0), (b < V(0)) != (m < V(0)));
  return select(fix, m + b, m);
}

}  // namespace kiln::math
