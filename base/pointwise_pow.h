// x ** y: torch's integer pow, the float32 pow_poly (Note [pow in double-float]) written once for
// every backend as the rest of base/pointwise_math.h (Note [Pointwise math is written once]),
// and the op math pow_ with its constant exponents. Include pointwise_math.h, which includes this
// at its end (either include order works: each header is #pragma once, and this one includes the
// other first).
#pragma once

#include <cmath>
#include <type_traits>

#include "kiln/base/pointwise_math.h"

namespace kiln::math {

// Integer powers stay integers (torch's int ** int): exponentiation by squaring. A negative
// exponent gives 0 except for bases 1 and -1, as torch computes it.
template <class T>
requires(std::is_integral_v<T> && !std::is_same_v<T, bool>) T pow(T base, T e) {
  if (e < 0) {
    if (base == 1) return 1;
    if (base == -1) return (e & 1) ? T(-1) : T(1);
    return 0;
  }
  // Products wrap on overflow as torch's do; unsigned arithmetic makes that well defined.
  using U = std::make_unsigned_t<T>;
  U result = 1, b = static_cast<U>(base);
  while (e) {
    if (e & 1) result = static_cast<U>(result * b);
    e = static_cast<T>(e >> 1);
    b = static_cast<U>(b * b);
  }
  return static_cast<T>(result);
}

// Note [pow in double-float]
// x ** y for float32 as 2^(y log2 |x|), vectorized (libm's powf is a scalar call, at a tenth of
// the memory bandwidth), within 2 ulp of the exact value (1.5 measured), with C99's (and torch's)
// special cases.
// - Precision. An error d in t = y log2|x| is a relative error d ln 2 in 2^t, and t reaches 150
//   before 2^t leaves the floats, so t needs an absolute accuracy near 2^-26, that is log2|x| a
//   relative one near 2^-33: beyond float. log2|x| and t are therefore double-floats, unevaluated
//   sums hi + lo of two floats, built with fma (products exact as hi + lo) and Fast2Sum (a sum
//   exact as hi + lo when |a| >= |b|). Those steps are explicit fma calls, never a * b + c, and
//   a rounded product that is subtracted is product_rounded: contraction fuses a multiply into
//   an add differently in GCC, LLVM (Note [LLVM agrees with the interpreter]) and CUDA's
//   compiler, and an exact product where the rounded one was meant counts its error twice.
// - log2. |x| = m 2^e with m in [sqrt(1/2), sqrt(2)) and log2 m = C1 s + s^3 Q(s^2) with
//   s = (m - 1) / (m + 1), |s| < 0.172, C1 = 2 / ln 2 (as two floats) and Q of degree 3 fitted to
//   a relative error of 2^-36 by scripts/fit_math_coefficients.py (log2_tail). s is a
//   double-float (the rounding of m + 1 and of the quotient both recovered by fma), and so is
//   s^3; Q itself, carrying under a hundredth of the value, is float. Measured, log2|x| is
//   within 2^-30.5 relative (t within 2^-23.3 at |t| = 150, a few tenths of an ulp).
// - 2^t. n = round(y hi) and 2^t = 2^n 2^r with r = (y hi - n) + y lo, |r| <= 1/2 + 2^-16:
//   2^r = 1 + r P(r), P of degree 5 (relative error 2^-28, exp2_pow in the script), evaluated by
//   pairs (Note [gelu as one branch] on latency).
// - Special cases, as C99's pow, mostly by the limits themselves: log2|x| is taken as -inf for
//   x = 0, inf for inf and NaN for NaN, and 2^(y log2|x|) saturates to 0 or inf (as it does for
//   every |y| >= 2^31 but at x = +-1, where log2|x| is exactly 0 and the result 1). On top: a
//   sign bit set in x gives x ** y the sign -1 for an odd integer y and NaN for a non-integer y
//   (but at -0 and -inf, whose limits are 0 or inf), and three selects give 1 where y log2|x| is
//   0 times inf or NaN: y = 0 (even for NaN), x = 1 (any y) and x = -1 with y = +-inf. y is an
//   odd integer when |y| / 2 is half an integer (round_nonnegative).
// Over random x in every binade with |t| up to 150, x near 1 and m near its split point, the
// worst case is 1.5 ulp (tests/runtime/pointwise_accuracy_test.cpp).

// a * b rounded once, as an fma with 0: a product that contraction can never replace by the exact
// one. A double-float step that subtracts a rounded product needs that value (Note [pow in
// double-float]), and CUDA's compiler fuses even a multiply with several uses.
template <class V>
KILN_ALWAYS_INLINE V product_rounded(V a, V b) {
  return fma(a, b, V(0));
}

// A float value carried as the unevaluated sum hi + lo, |lo| <= ulp(hi).
template <class V>
struct DoubleFloat {
  V hi;
  V lo;
};

// log2 x for a positive finite x (subnormals included) as a double-float (Note [pow in
// double-float]).
template <class V>
KILN_ALWAYS_INLINE DoubleFloat<V> log2_double_float(V x) {
  auto [m, e] = positive_mantissa_exponent(x);
  // s = (m - 1) / (m + 1) = sh + sl: m - 1 is exact, m + 1 = b + b_lo (b rounded, b_lo exact),
  // and the remainder (m - 1) - sh (b + b_lo) comes from two fma.
  V g = m - V(1);
  V b = m + V(1);
  V b_lo = m - (b - V(1));
  // One division: sh = g (1 / b) is within about 1.5 ulp of g / b, and sl recovers the rest (the
  // remainder fma is then exact or within 2^-48 of g, far below what sl needs).
  V inverse = V(1) / b;
  V sh = g * inverse;
  V sl = fma(-sh, b_lo, fma(-sh, b, g)) * inverse;
  // s^3 = c + ce to well below float's rounding: sh^2 = z + ze exactly, sh z = c + (exact error),
  // and sl's share 3 sh^2 sl.
  V z = sh * sh;
  V ze = fma(sh, sh, -z);
  V c = sh * z;
  V ce = fma(sh, ze, fma(V(3) * z, sl, fma(sh, z, -c)));
  V q = (V(0x1.ec709ep-1) + V(0x1.2776e2p-1) * z) +
        (z * z) * (V(0x1.a5cec8p-2) + V(0x1.58b28cp-2) * z);
  // log2 m = C1h sh + c q + (the small terms), with C1h sh = p + pe exactly and p + c q = p2 +
  // (its rounding error, from a second fma).
  V p = product_rounded(V(0x1.715476p+1), sh);
  V pe = fma(V(0x1.715476p+1), sh, -p);
  V p2 = fma(c, q, p);
  // The small terms summed as a tree, off the chain that p2 ends (a shorter chain helps where
  // pow is bound by latency, as on the AMD machine it was tuned on).
  V small = (fma(c, q, p - p2) + fma(ce, q, pe)) +
            fma(V(0x1.715476p+1), sl, product_rounded(V(0x1.4ae0cp-25), sh));
  // e + p2 by Fast2Sum (|e| >= 1 > |p2|, or e = 0).
  V hi = e + p2;
  return {hi, ((e - hi) + p2) + small};
}

// 2^(y l) for a float y and a double-float l (Note [pow in double-float]), within 2^-27 before
// the last rounding: n = round(y l.hi), r = (y l.hi - n) + y l.lo with the first product exact in
// an fma, so that no rounded product is ever subtracted. y l.hi beyond [-152, 130] gives 0 or
// inf without the polynomial.
template <class V>
KILN_ALWAYS_INLINE V exp2_of_product(V y, DoubleFloat<V> l) {
  V t = y * l.hi;
  // round_int holds only for |t| < 2^22; beyond, n is wrong but the selects below discard it.
  V n = round_int(t);
  V r = fma(y, l.lo, fma(y, l.hi, -n));
  V r2 = r * r;
  V p = (V(0x1.62e43p-1) + V(0x1.ebfbdcp-3) * r) +
        r2 * ((V(0x1.c6af7ap-5) + V(0x1.3b2ddap-7) * r) +
              r2 * (V(0x1.5f0976p-10) + V(0x1.4172b8p-13) * r));
  // (1 + r p) 2^n as scale_by_exp2i applies it, with the first factor of 2^n folded into the
  // multiply-add (one step shorter; the same value, the factor being exact).
  auto neg = n < V(0);
  V first = exp2i(n - select(neg, V(-64), V(64)));
  V scaled = fma(p, r * first, first) * select(neg, V(0x1p-64), V(0x1p64));
  return select(t < V(-152), V(0), select(V(130) < t, V(INFINITY), scaled));
}

// v rounded to an integer (ties to even) for 0 <= v <= 2^23: adding 2^23 leaves no fraction
// bits. Above 2^23 the sum rounds to a multiple of 2 or more, and the result is an integer within
// a few units of v (v itself once v is far above 2^23).
template <class V>
KILN_ALWAYS_INLINE V round_nonnegative(V v) {
  return (v + V(0x1p23)) - V(0x1p23);
}

template <class V>
KILN_ALWAYS_INLINE V pow_poly(V x, V y) {
  V a = abs(x);
  V ay = abs(y);
  // y's class: odd integer where |y| / 2 is half an integer from its rounding, and non-integer
  // where |y| - round(|y|) is in (0, 1) (for an integer |y| above 2^23 the difference is 0 or at
  // least 1; for +-inf and NaN it is NaN, so neither).
  V h = ay * V(0.5);
  V odd_sign = select(abs(h - round_nonnegative(h)) == V(0.5), V(-1), V(1));
  V fraction = abs(ay - round_nonnegative(ay));
  auto non_integer = V(0) < fraction * (V(1) - fraction);
  // log2|x| as the limits C99's special cases follow: -inf for x = 0, inf for inf, NaN for NaN.
  // 2^(y log2|x|) then saturates to 0 or inf where y or log2|x| is infinite, as every |y| >= 2^31
  // does for x != +-1, where log2|x| = 0 exactly gives 1.
  auto l = log2_double_float(a);
  V limit = select(a == V(0), V(-INFINITY), a * V(INFINITY));
  l.hi = select(a < V(INFINITY), select(V(0) < a, l.hi, limit), limit);
  V magnitude = exp2_of_product(y, l);
  // x with its sign bit set (-0 too) takes the sign of x ** y for an odd integer y, and gives NaN
  // for a non-integer y but at -0 and -inf (0 or inf, C99's limits); a NaN stays NaN.
  V negative =
      select(non_integer, select(a < V(INFINITY), select(V(0) < a, V(NAN), V(1)), V(1)), odd_sign);
  V signed_magnitude = magnitude * select(copysign(V(1), x) < V(0), negative, V(1));
  // 1 where y log2|x| is 0 times inf or NaN but C99 gives 1: y = 0 (any x), x = 1 (any y) and
  // x = -1 with y = +-inf.
  return select(y == V(0), V(1),
                select(x == V(1), V(1),
                       select(x == V(-1), select(ay == V(INFINITY), V(1), signed_magnitude),
                              signed_magnitude)));
}

KILN_ALWAYS_INLINE float pow(float x, float y) {
  return pow_poly(x, y);
}
inline double pow(double x, double y) {
  return std::pow(x, y);
}

template <class V>
KILN_ALWAYS_INLINE V pow_(V a, V b) {
  return pow(a, b);
}
// Note [pow by a constant exponent]
// torch's CPU kernel (pow_tensor_scalar_optimized_kernel) computes float32 and float64 x ** e
// for e = 2, 3 and -2 with multiplies, 0.5 and -0.5 with (r)sqrt and -1 with a division, deciding
// on the exponent as a double: scalar libm pow runs at a few percent of the memory bandwidth, and
// these are the common exponents. Kiln does the same, for the same dtypes (16-bit floats keep pow,
// as in torch's CPU kernel), in the eager kernel and the compiled expression alike. The results
// are pow's within an ulp or two (x * x, sqrt and 1 / x round once, the others twice), except
// that sqrt(-0) is -0 and sqrt(-inf) NaN where pow gives +0 and +inf, and that 1 / (x * x) is 0
// or inf where x * x overflows or underflows: as in torch.
enum class PowByConstant { None, Square, Cube, InverseSquare, Sqrt, InverseSqrt, Reciprocal };
inline PowByConstant pow_by_constant(double e) {
  if (e == 2) return PowByConstant::Square;
  if (e == 3) return PowByConstant::Cube;
  if (e == -2) return PowByConstant::InverseSquare;
  if (e == 0.5) return PowByConstant::Sqrt;
  if (e == -0.5) return PowByConstant::InverseSqrt;
  if (e == -1) return PowByConstant::Reciprocal;
  return PowByConstant::None;
}
template <PowByConstant K, class V>
KILN_ALWAYS_INLINE V pow_constant(V x) {
  static_assert(K != PowByConstant::None);
  if constexpr (K == PowByConstant::Square) return x * x;
  if constexpr (K == PowByConstant::Cube) return x * x * x;
  if constexpr (K == PowByConstant::InverseSquare) return V(1) / (x * x);
  if constexpr (K == PowByConstant::Sqrt) return sqrt(x);
  if constexpr (K == PowByConstant::InverseSqrt) return V(1) / sqrt(x);
  if constexpr (K == PowByConstant::Reciprocal) return V(1) / x;
}
// Calls f.template operator()<K>() with e's kind K and returns true, or returns false for an
// exponent pow computes.
template <PowByConstant... Ks, class F>
bool visit_pow_kinds(PowByConstant k, F& f) {
  return ((k == Ks && (f.template operator()<Ks>(), true)) || ...);
}
template <class F>
bool visit_pow_by_constant(double e, F&& f) {
  using enum PowByConstant;
  return visit_pow_kinds<Square, Cube, InverseSquare, Sqrt, InverseSqrt, Reciprocal>(
      pow_by_constant(e), f);
}

}  // namespace kiln::math
