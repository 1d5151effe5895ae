// Note [Pointwise math is written once]
// Each pointwise op's scalar math is one template over a value type V. The eager CPU kernels
// instantiate it with float/double/int types; the LLVM and CUDA code generators instantiate
// the same template with their expression types, which provide the primitives below (exp,
// log, tanh, select, ...) as overloads found by argument-dependent lookup. Write new math only
// in terms of V's arithmetic and these primitives, so that every backend computes the same
// function.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>
#include <type_traits>

// Every function here is forced inline: a kernel loop vectorizes only when the whole math of an
// element is inlined into it, and the polynomial primitives exceed GCC's default limits.
#define KILN_ALWAYS_INLINE [[gnu::always_inline]] inline
// The same for a lambda, written after its parameter list.
#define KILN_ALWAYS_INLINE_LAMBDA __attribute__((always_inline))

namespace kiln::math {

// ---- primitives for built-in arithmetic types ----
template <class T>
requires std::is_arithmetic_v<T> T select(bool c, T a, T b) {
  return c ? a : b;
}
// float select as a bitwise blend: the same value as `c ? a : b`, but GCC (with the default
// -ftrapping-math) turns a ternary next to float->int conversions into branches, which stops
// the loop vectorizer; the blend never branches.
inline float select(bool c, float a, float b) {
  uint32_t m = 0u - static_cast<uint32_t>(c);
  return std::bit_cast<float>((std::bit_cast<uint32_t>(a) & m) | (std::bit_cast<uint32_t>(b) & ~m));
}
// Note [Clamps and signs by bits]
// The float32 erf and tanh loops are compute bound on the number of vector operations, and a
// clamp written as a select costs a compare and a blend. For a non-negative value,
// min_nonnegative clamps with one integer min, and copysign moves a sign with bit operations
// where a select on x < 0 costs a compare, a negation and a blend. With them erf and tanh are
// 13-18% faster in cache with AVX-512 (AMD Zen 5) and 5-8% with AVX2. (Blending on a sign bit
// with integer shifts instead of a compare is a further 3% with AVX-512 but 5-8% slower with
// AVX2, which has no three-input logic operation.) Every backend gives them the same values.
// min(a, c) for a float a and a positive c with their sign bits clear (abs gives such an a),
// compared as bit patterns: those order as the values do. A NaN a has bits above +inf's and gives
// c, so a caller must route NaN through another branch.
inline float min_nonnegative(float a, float c) {
  uint32_t ab = std::bit_cast<uint32_t>(a), cb = std::bit_cast<uint32_t>(c);
  return std::bit_cast<float>(ab < cb ? ab : cb);
}
using std::abs;
using std::copysign;
using std::sqrt;
// a * b + c rounded once. The double-float steps of pow_poly need the exact product that only a
// fused multiply-add gives (with -ffp-contract=fast a multiply feeding an add may or may not be
// fused; this one always is). Without FMA hardware it is libm's, correct but not vectorized.
inline float fma(float a, float b, float c) {
  return std::fma(a, b, c);
}
// 2^n for an integer-valued n in [-126, 127], built from the exponent bits: n + (1.5 * 2^23 +
// 127) is exact and holds n + 127 in its low mantissa bits, which the shift moves into the
// exponent field (the bits above them shift out). One add and one shift, no float->int convert.
inline float exp2i(float n) {
  return std::bit_cast<float>(std::bit_cast<uint32_t>(n + 12583039.0f) << 23);
}
// x rounded to the nearest integer (ties to even) for |x| < 2^22, in plain float arithmetic:
// adding 1.5 * 2^23 leaves no fraction bits. (SSE2 has no vector round instruction.)
inline float round_int(float x) {
  return (x + 12582912.0f) - 12582912.0f;
}
// y with its sign flipped where the integer-valued k (|k| < 2^22) is odd: k + 1.5 * 2^23 holds k
// in its low mantissa bits (two's complement for a negative k), and its lowest bit, shifted to
// the sign, is XORed into y.
inline float negate_if_odd(float y, float k) {
  uint32_t kb = std::bit_cast<uint32_t>(k + 12582912.0f);
  return std::bit_cast<float>(std::bit_cast<uint32_t>(y) ^ (kb << 31));
}

// The float64 overload of a float function (libm, as the eager kernels call it) and the integer
// one (torch promotes integers to float; computed in double).
#define KILN_DOUBLE_FROM_LIBM(name)           \
  inline double name(double x) {              \
    return std::name(x);                      \
  }                                           \
  template <class T>                          \
  requires std::is_integral_v<T>              \
  double name(T x) {                          \
    return std::name(static_cast<double>(x)); \
  }

// Note [Vectorized exp and tanh]
// libm's expf/tanhf/erff/logf are scalar calls, so loops over them run at a few percent of the
// memory bandwidth. For float, exp, expm1, exp2, log, log1p, tanh, erf, gelu, sin, cos (and pow,
// in pointwise_pow.h) are the polynomials below, written in V arithmetic and the primitives
// select/abs/copysign/ min_nonnegative/exp2i/round_int/negate_if_odd/centred_mantissa_exponent/fma,
// which the compiler vectorizes. Their accuracy (a few float32 ulp) is checked against double libm
// over a wide sweep in tests/runtime/pointwise_accuracy_test.cpp. double keeps libm.

// exp with float accuracy: x = n ln2 + r with |r| <= ln2/2 (Cephes' two-constant reduction) and
// exp(r) = p = 1 + r + r^2 q(r), q of degree 4 fitted to minimize the relative error on
// [-ln2/2, ln2/2] (3e-9, against a float ulp of 6e-8), so that exp(x) = p * 2^n. This part computes
// p - 1 = r + r^2 q(r) (rounded once, so that expm1 keeps its relative accuracy near 0) and n, for
// |x| <= 104 (n in [-150, 150]); the callers apply 2^n for the range of x they allow.
template <class V>
struct ExpParts {
  V pm1;
  V n;
};
template <class V>
KILN_ALWAYS_INLINE ExpParts<V> exp_poly_reduce(V x) {
  V n = round_int(x * V(1.44269504088896341));
  V r = x - n * V(0.693359375) - n * V(-2.12194440e-4);
  V p = V(1.3814613e-3);
  p = p * r + V(8.3687098e-3);
  p = p * r + V(4.1668387e-2);
  p = p * r + V(1.6666521e-1);
  p = p * r + V(4.9999993e-1);
  return {p * (r * r) + r, n};
}

// p * 2^n for a normal p near 1 and an integer-valued n in [-151, 129], rounded once as a correctly
// rounded scaling is, into the denormals or to inf: 2^n is applied as two exact factors,
// 2^(n - 64) * 2^64 for n >= 0 and 2^(n + 64) * 2^-64 for n < 0. p * 2^(n -+ 64) is a normal float
// times a power of two (exact), and the last multiply rounds.
template <class V>
KILN_ALWAYS_INLINE V scale_by_exp2i(V p, V n) {
  auto neg = n < V(0);
  return p * exp2i(n - select(neg, V(-64), V(64))) * select(neg, V(0x1p-64), V(0x1p64));
}

// exp for every x. The input is clamped to [-104, 89], where n lies in [-150, 128]: below -104
// exp rounds to 0 and above 89 it overflows, and the clamped input gives the same results.
// scale_by_exp2i applies 2^n. NaN fails both clamp comparisons and propagates through the
// arithmetic.
template <class V>
KILN_ALWAYS_INLINE V exp_poly(V x) {
  V xc = select(x < V(-104), V(-104), x);
  xc = select(V(89) < xc, V(89), xc);
  auto [pm1, n] = exp_poly_reduce(xc);
  return scale_by_exp2i(pm1 + V(1), n);
}

// expm1 with float accuracy, from exp's reduction: e^x - 1 = 2^n (p - 1) + (2^n - 1), one
// multiply-add, written as 2 (s (p - 1) + (s - 1/2)) with s = 2^(n - 1) so that n = 128 (x up to
// 89, where e^x still fits below x = 88.72) needs no 2^128. s - 1/2 is exact for -24 <= n <= 24;
// beyond, it rounds, which costs at most an ulp (1 ulp of libm at worst over every binade). x is
// clamped to [-25, 89] (e^-25 is under half an ulp of 1); NaN fails both comparisons and
// propagates. Below |x| = 2^-25, expm1(x) rounds to x, which is returned as it is: that keeps -0,
// and the last bits of denormals that s (p - 1) would round away.
template <class V>
KILN_ALWAYS_INLINE V expm1_poly(V x) {
  V xc = select(x < V(-25), V(-25), x);
  xc = select(V(89) < xc, V(89), xc);
  auto [pm1, n] = exp_poly_reduce(xc);
  V s = exp2i(n - V(1));
  return select(abs(x) < V(0x1p-25), x, (s * pm1 + (s - V(0.5))) * V(2));
}

KILN_ALWAYS_INLINE float exp(float x) {
  return exp_poly(x);
}
KILN_ALWAYS_INLINE float expm1(float x) {
  return expm1_poly(x);
}
KILN_DOUBLE_FROM_LIBM(expm1)

// 2^y = 2^r 2^n with n = round(y) and r = y - n (exact) in [-1/2, 1/2], 2^r = 1 + r Q(r), Q of
// degree 4 fitted to minimize the relative error (1.1e-7 with the coefficients rounded to float,
// 2 float ulp at worst with the roundings) by scripts/fit_math_coefficients.py; integer powers of
// two are exact. For arguments already in base 2 (a fitted log2, or an exponent folded with log2
// e), this skips exp's reduction of x by n ln 2, five multiply-adds: that keeps erf, tanh and the
// gelus near the memory bandwidth on two cores. This part computes 2^r.
template <class V>
KILN_ALWAYS_INLINE V exp2_poly_fraction(V r) {
  V q = V(1.32647145e-3);
  q = q * r + V(9.67151392e-3);
  q = q * r + V(5.55073395e-2);
  q = q * r + V(2.40222424e-1);
  q = q * r + V(6.93147004e-1);
  return q * r + V(1);
}

// 2^y for y in [-126, 127], which callers ensure (n = round(y) must be a normal exponent): one
// scaling by 2^n.
template <class V>
KILN_ALWAYS_INLINE V exp2_poly_normal(V y) {
  V n = round_int(y);
  return exp2_poly_fraction(y - n) * exp2i(n);
}

// 2^y for every y: clamped to [-151, 129], where 2^y already rounds to 0 or overflows, and
// scaled as exp_poly is. NaN fails both clamp comparisons and propagates.
template <class V>
KILN_ALWAYS_INLINE V exp2_poly(V y) {
  V yc = select(y < V(-151), V(-151), y);
  yc = select(V(129) < yc, V(129), yc);
  V n = round_int(yc);
  return scale_by_exp2i(exp2_poly_fraction(yc - n), n);
}

KILN_ALWAYS_INLINE float exp2(float y) {
  return exp2_poly(y);
}
KILN_DOUBLE_FROM_LIBM(exp2)

KILN_DOUBLE_FROM_LIBM(exp)

// x = m 2^e with m in [sqrt(1/2), sqrt(2)), for a positive normal float x, by integer arithmetic
// on its bits: subtracting the bits of sqrt(1/2) rounded to float (0x3f3504f3) borrows from the
// exponent field exactly when x's mantissa bits are below those of sqrt(2), so the difference
// shifted right by 23 (arithmetic) is e, and subtracting e from the exponent field leaves m. No
// compare and blend has to choose between m and 2m: log is 19% faster in cache (AVX-512) than
// with them, with the same results.
template <class V>
struct MantissaExponent {
  V m;
  V e;
};
inline MantissaExponent<float> centred_mantissa_exponent(float x) {
  uint32_t b = std::bit_cast<uint32_t>(x);
  int32_t e = static_cast<int32_t>(b - 0x3f3504f3u) >> 23;
  return {std::bit_cast<float>(b - (static_cast<uint32_t>(e) << 23)), static_cast<float>(e)};
}

// log(m 2^e) with float accuracy (Cephes' logf) for m = 1 + f in [sqrt(1/2), sqrt(2)):
// log(1 + f) = f - f^2/2 + f^3 P(f), P of degree 8, and e ln2 added in two parts.
template <class V>
KILN_ALWAYS_INLINE V log_of_parts(V f, V e) {
  // P by pairs combined in powers of f^2, four operations deep where Horner's rule is eight (Note
  // [gelu as one branch] on latency): 17% faster in cache.
  V z = f * f;
  V z2 = z * z;
  V q0 = V(3.3333331174e-1) + V(-2.4999993993e-1) * f;
  V q1 = V(2.0000714765e-1) + V(-1.6668057665e-1) * f;
  V q2 = V(1.4249322787e-1) + V(-1.2420140846e-1) * f;
  V q3 = V(1.1676998740e-1) + V(-1.1514610310e-1) * f;
  V p = q0 + z * ((q1 + q2 * z) + (q3 + V(7.0376836292e-2) * z) * z2);
  V y = f * z * p + V(-2.12194440e-4) * e - V(0.5) * z;
  return f + y + V(0.693359375) * e;
}

// log's value r for a positive finite x, with libm's at the special inputs: inf -> inf, +-0 ->
// -inf, x < 0 or NaN -> NaN. Three selects, two of them after r (the third depends on x alone): a
// fourth that passed a NaN x through unchanged cost log 6% in cache with AVX-512.
template <class V>
KILN_ALWAYS_INLINE V log_special_inputs(V x, V r) {
  V special = select(x == V(0), V(-INFINITY), V(NAN));
  return select(V(0) < x, select(x < V(INFINITY), r, x), special);
}

// centred_mantissa_exponent for every positive finite x: a subnormal x is scaled by 2^23 first.
template <class V>
KILN_ALWAYS_INLINE MantissaExponent<V> positive_mantissa_exponent(V x) {
  auto tiny = x < V(1.17549435e-38);
  V xs = select(tiny, x * V(8388608.0), x);
  auto [m, exponent] = centred_mantissa_exponent(xs);
  return {m, exponent - select(tiny, V(23), V(0))};
}

// log with float accuracy for every x.
template <class V>
KILN_ALWAYS_INLINE V log_poly(V x) {
  auto [m, e] = positive_mantissa_exponent(x);
  return log_special_inputs(x, log_of_parts(m - V(1), e));
}

KILN_ALWAYS_INLINE float log(float x) {
  return log_poly(x);
}
KILN_DOUBLE_FROM_LIBM(log)

// log1p with float accuracy and no division (1 ulp by integer distance over every float, 1.4 as a
// real ratio): u = 1 + x rounded, c = x - (u - 1) its rounding error (exact for u < 2^24; above,
// u - 1 rounds too, and c is within an ulp of x of the error, under 0.01 ulp of the result), so
// that 1 + x = u + c = 2^e (m + c 2^-e) with u = m 2^e as log splits it, and log1p(x) = e ln 2 +
// log(1 + f) with f = (m - 1) + c 2^-e. c 2^-e is exact (c is a multiple of a power of two at
// least 2^-25, nonzero only for e >= -1), so the sum rounds once, contracted or not, and every
// backend gets the same f. For e <= 0 the sum is exact (f = x for e = 0); for e >= 1 its rounding
// of half an ulp of f is up to 0.7 ulp of the result (x just above sqrt(2) - 1, where f is near
// -0.29 and the result 0.35). (The correction c / u added after the log, with 1 / m as a
// polynomial, was 10% slower in cache with AVX-512; the quotient log(u) x / (u - 1) before it,
// with a division, slower still.) For x >= -1, u is 0 or at least 2^-24, never subnormal. 2^-e is
// clamped at 2^-126 (u near the float maximum, where c is 0). log1p(x) has x's sign, which
// copysign gives the result where it rounds to 0 (-0 stays -0); u's special values give log's:
// -1 -> -inf, x < -1 -> NaN, inf -> inf.
template <class V>
KILN_ALWAYS_INLINE V log1p_poly(V x) {
  V u = V(1) + x;
  V d = u - V(1);
  auto [m, e] = centred_mantissa_exponent(u);
  V scale = exp2i(select(e < V(127), V(0) - e, V(-126)));
  V f = (m - V(1)) + (x - d) * scale;
  return log_special_inputs(u, copysign(log_of_parts(f, e), x));
}
KILN_ALWAYS_INLINE float log1p(float x) {
  return log1p_poly(x);
}
KILN_DOUBLE_FROM_LIBM(log1p)

// tanh with float accuracy: x (1 + x^2 q(x^2)) for |x| < 0.625, q of degree 4 fitted to minimize
// the relative error there (4.4e-9), 1 - 2 / (e + 1) with e = exp(2|x|) above (no cancellation
// there), and x's sign put on either (so tanh(-0) is -0). e is exp2_poly_normal(2 log2(e) |x|):
// rounding the folded product costs at most half an ulp of its exponent, and 1 - 2 / (e + 1)
// damps e's relative error by 2e / (e + 1)^2 <= 0.35. The product is clamped to 2 log2(e) 10
// (|x| = 10, where that formula already rounds to 1), so exp2 needs no range handling. A NaN x
// gets the clamp's value there (Note [Clamps and signs by bits]) but fails the branch
// comparison, and the small branch propagates it. The clamp comes after the multiply so that the
// product is rounded before the adds that use it: a multiply feeding two adds is fused into both by
// GCC and into neither by LLVM (Note [LLVM agrees with the interpreter]).
template <class V>
KILN_ALWAYS_INLINE V tanh_poly(V x) {
  V a = abs(x);
  V y = V(2.8853900817779268147) * a;
  V e = exp2_poly_normal(min_nonnegative(y, V(28.853900817779268147)));
  V big = V(1) - V(2) / (e + V(1));
  V z = x * x;
  V q = V(-5.70499618e-03);
  q = q * z + V(2.06390955e-02);
  q = q * z + V(-5.37397191e-02);
  q = q * z + V(1.33314416e-01);
  q = q * z + V(-3.33332807e-01);
  V small = x + x * z * q;
  return copysign(select(V(0.625) <= a, big, small), x);
}

KILN_ALWAYS_INLINE float tanh(float x) {
  return tanh_poly(x);
}
KILN_DOUBLE_FROM_LIBM(tanh)

// erf with float accuracy, both branches computed and one selected per lane:
// - |x| < 1: x q(x^2), q of degree 5 fitted to minimize the relative error of erf there;
// - |x| >= 1: 1 - 2^P(|x| - 1) with x's sign, P of degree 6 fitted to log2(erfc) on [1, 4]
//   and weighted by erfc ln 2 (the error it leaves in erf is 4.5e-9 with the coefficients
//   rounded to float, against a float ulp of 6e-8; centred at 1, where erfc is largest, so that
//   the rounding of the constant term costs least).
//   2^P is exp2_poly_normal, whose relative error erfc <= 0.16 scales down to a fraction of an
//   ulp of erf.
// |x| is clamped to 4, where erf already rounds to 1 in float, so P stays in [-26, -2.6] and
// needs no range handling. A NaN x gets the clamp's value there (Note [Clamps and signs by
// bits]) but fails the branch comparison, and the small branch propagates it. The coefficients come
// from scripts/fit_math_coefficients.py. There is no division: the earlier erfc form (1 / (1 +
// p|x|), Abramowitz & Stegun 7.1.26) kept erf compute bound at 0.55 of the copy bandwidth on AVX2,
// and fitting log2 rather than log saves exp's range reduction.
template <class V>
KILN_ALWAYS_INLINE V erf_poly(V x) {
  V a = abs(x);
  V z = x * x;
  V q = V(-5.6317565e-4);
  q = q * z + V(4.91764396e-3);
  q = q * z + V(-2.67114043e-2);
  q = q * z + V(1.12801842e-1);
  q = q * z + V(-3.76123279e-1);
  q = q * z + V(1.12837911);
  V small = q * x;
  V u = min_nonnegative(a, V(4)) - V(1);
  V p = V(2.67731783e-4);
  p = p * u + V(-2.63461471e-3);
  p = p * u + V(1.42695634e-2);
  p = p * u + V(-5.98728508e-2);
  p = p * u + V(-1.2163626);
  p = p * u + V(-3.80722427);
  p = p * u + V(-2.66841674);
  V big = V(1) - exp2_poly_normal(p);
  return select(V(1) <= a, copysign(big, x), small);
}

KILN_ALWAYS_INLINE float erf(float x) {
  return erf_poly(x);
}
KILN_DOUBLE_FROM_LIBM(erf)

// Note [sin and cos by one polynomial]
// sin and cos with float accuracy (2 ulp over every float, with or without FMA contraction), by
// one odd polynomial: x = k pi + r with an integer k and |r| <= pi/2, sin x = (-1)^k sin r, and
// for cos x = (k + 1/2) pi - r, cos x = (-1)^k sin r. sin r = r + r^3 S(r^2), S of degree 3
// fitted to minimize the relative error on [0, pi/2 (1 + 2^-9)] (6e-9, the float rounding of k's
// estimate can put r slightly past pi/2) by scripts/fit_math_coefficients.py.
// - The reduction is Cody and Waite's: pi = P1 + ... + P5, where P1..P4 have at most 11
//   significant bits and P5 is the next float, so that pi is carried to 77 bits (x as close to a
//   multiple of pi as a float can be still leaves r its relative accuracy). For |x| <=
//   kSinCosReducedLimit, 2k (or 2k + 1 for cos) has at most 13 bits, so each product k P1..k P4
//   is exact whether or not it is fused into the subtraction, and the backends agree bit for bit.
// - Beyond the limit (and for inf and NaN) sin and cos are libm's: an exact reduction there
//   needs 2/pi to some 190 bits (Payne and Hanek). The scalar functions below branch on the
//   limit; the eager contiguous loop checks each block of inputs once and runs the polynomial
//   alone over blocks within it (Note [Reduced-range float loops]), a compiled LLVM loop runs it
//   over its whole range and again with the branch only when needed (Note [Reduced-range LLVM
//   loops]), and CUDA branches as the scalar functions do.
inline constexpr float kSinCosReducedLimit = 8192.0f;

// sin r for |r| <= pi/2 (1 + 2^-9). A denormal r is kept (r^3 S rounds away); r = -0 gives +0,
// since r^3 S is +0 there and -0 + +0 is +0 (sin_reduced selects x for a zero x).
template <class V>
KILN_ALWAYS_INLINE V sin_half_pi_poly(V r) {
  V z = r * r;
  V s = V(0x1.5dbe1p-19);
  s = s * z + V(-0x1.9f7056p-13);
  s = s * z + V(0x1.110ed8p-7);
  s = s * z + V(-0x1.55554cp-3);
  return r + r * z * s;
}

// sin x for |x| <= kSinCosReducedLimit. NaN propagates; a zero x is returned as it is, to keep
// sin(-0) = -0 (r is zero only there).
template <class V>
KILN_ALWAYS_INLINE V sin_reduced(V x) {
  V k = round_int(x * V(0.318309886183790671538));
  V r = x - k * V(0x1.92p+1);
  r = r - k * V(0x1.fb4p-11);
  r = r - k * V(0x1.444p-23);
  r = r - k * V(0x1.68cp-38);
  r = r - k * V(0x1.1a6264p-53);
  return select(x == V(0), x, negate_if_odd(sin_half_pi_poly(r), k));
}

// cos x for |x| <= kSinCosReducedLimit: k = round(x / pi - 1/2), m = k + 1/2 (exact), and
// r = m pi - x, the reduction of sin_reduced with the sign of r flipped.
template <class V>
KILN_ALWAYS_INLINE V cos_reduced(V x) {
  V k = round_int(x * V(0.318309886183790671538) - V(0.5));
  V m = k + V(0.5);
  V r = m * V(0x1.92p+1) - x;
  r = r + m * V(0x1.fb4p-11);
  r = r + m * V(0x1.444p-23);
  r = r + m * V(0x1.68cp-38);
  r = r + m * V(0x1.1a6264p-53);
  return negate_if_odd(sin_half_pi_poly(r), k);
}

inline float sin(float x) {
  return std::fabs(x) <= kSinCosReducedLimit ? sin_reduced(x) : std::sin(x);
}
inline float cos(float x) {
  return std::fabs(x) <= kSinCosReducedLimit ? cos_reduced(x) : std::cos(x);
}
KILN_DOUBLE_FROM_LIBM(sin)
KILN_DOUBLE_FROM_LIBM(cos)
#undef KILN_DOUBLE_FROM_LIBM

// |x| beyond which gelu is x or -0 (Note [gelu as one branch]); the tests use it too.
inline constexpr float kGeluTailCap = 5.65685424949238019520f;  // 4 sqrt 2

// Note [gelu as one branch]
// gelu(x) = x Phi(x) (approximate="none") with float accuracy and no select between branches:
// with a = |x| and t = Phi(-a), gelu is -a t for x < 0 and x - x t for x >= 0, that is
// relu(x) - a t, and t is one function of a for both signs. t = 2^(R(a) - 4), R of degree 10
// fitted to log2 Phi(-a) + 4 on [0, 4 sqrt 2] by scripts/fit_math_coefficients.py. With the
// multiply-adds contracted (as the library builds it), within 11 ulp down to x = -3 and 34 below
// (where Phi is tiny, and 0.5 x (1 + erf) loses it all to cancellation); 43 below without.
// - Speed: in cache these loops are bound by the latency of each element's chain of dependent
//   operations more than by their count (with the same operations, Horner's rule for R ran 20%
//   slower than the form below, and a compare and blend for the clamp 15% slower than the integer
//   min). R is evaluated from pairs c_i + c_(i+1) u combined in powers of u^2, five operations
//   deep where Horner's rule is ten; only the first pair and the last multiply-add carry R's
//   magnitude, so the rounding stays near Horner's. gelu is 25% faster in cache than the
//   two-branch form (1/2 + x r(x^2) and 2^R on either side of |x| = 1) it replaced.
// - R is log2 Phi + 4 so that the sums near x = -3, where the error peaked, are small; the 4
//   comes back exactly in a 2^(n - 4). |x| is clamped to 4 sqrt 2, where 1 - t rounds to 1, and
//   beyond it a 2^(n - 4) is taken as 0: gelu is x above and -0 below (Phi < 8e-9) and at -inf,
//   its limit (0.5 x (1 + erf) gives NaN there). A NaN x makes a 2^(n - 4) NaN.
// - a 2^(n - 4) is exact for |x| >= 2^-125 (below, the result is within an ulp of a denormal),
//   and its product with 2^(r - n) and the subtraction from relu(x) are one multiply-add.
template <class V>
KILN_ALWAYS_INLINE V gelu_exact_poly(V x) {
  V a = abs(x);
  V u = min_nonnegative(a, V(kGeluTailCap)) - V(1.75);
  V u2 = u * u;
  V u4 = u2 * u2;
  V q0 = V(-0.64172405) + V(-3.10720181) * u;
  V q1 = V(-0.627263427) + V(-0.0168714803) * u;
  V q2 = V(0.0028477856) + V(-0.000416770403) * u;
  V q3 = V(4.46533086e-05) + V(-3.14148309e-07) * u;
  V q4 = V(-1.23888992e-06) + V(2.55899238e-07) * u;
  V high = (q3 + q4 * u2) + V(-1.81130915e-08) * u4;
  V r = q0 + u2 * ((q1 + q2 * u2) + high * u4);
  V n = round_int(r);
  V scaled = select(V(kGeluTailCap) < a, V(0), a * exp2i(n - V(4)));
  return select(x < V(0), V(-0.0), x) - exp2_poly_fraction(r - n) * scaled;
}

KILN_ALWAYS_INLINE float gelu_exact(float x) {
  return gelu_exact_poly(x);
}
// In double, erfc of -x / sqrt 2 keeps the negative tail's relative accuracy; below -40 the
// product underflows to -0, which is also the value at -inf (as in float).
inline double gelu_exact(double x) {
  return x < -40.0 ? -0.0 : x * (std::erfc(x * -0.70710678118654752440) * 0.5);
}
template <class T>
requires std::is_integral_v<T>
double gelu_exact(T x) {
  return gelu_exact(static_cast<double>(x));
}

// ---- op math ----
template <class V>
KILN_ALWAYS_INLINE V add(V a, V b, V alpha) {
  return a + alpha * b;
}
template <class V>
KILN_ALWAYS_INLINE V sub(V a, V b, V alpha) {
  return a - alpha * b;
}
template <class V>
KILN_ALWAYS_INLINE V mul(V a, V b) {
  return a * b;
}
template <class V>
KILN_ALWAYS_INLINE V div(V a, V b) {
  return a / b;
}
template <class V>
KILN_ALWAYS_INLINE V neg(V x) {
  return -x;
}
template <class V>
KILN_ALWAYS_INLINE V exp_(V x) {
  return exp(x);
}
template <class V>
KILN_ALWAYS_INLINE V log_(V x) {
  return log(x);
}
template <class V>
KILN_ALWAYS_INLINE V tanh_(V x) {
  return tanh(x);
}
template <class V>
KILN_ALWAYS_INLINE V sigmoid(V x) {
  return V(1) / (V(1) + exp(-x));
}
// NaN propagates: (NaN < 0) is false, so NaN selects x.
template <class V>
KILN_ALWAYS_INLINE V relu(V x) {
  return select(x < V(0), V(0), x);
}

template <class V>
KILN_ALWAYS_INLINE V log1p_(V x) {
  return log1p(x);
}
template <class V>
KILN_ALWAYS_INLINE V expm1_(V x) {
  return expm1(x);
}
template <class V>
KILN_ALWAYS_INLINE V sqrt_(V x) {
  return sqrt(x);
}
template <class V>
KILN_ALWAYS_INLINE V rsqrt(V x) {
  return V(1) / sqrt(x);
}
template <class V>
KILN_ALWAYS_INLINE V abs_(V x) {
  return abs(x);
}
// As torch: sign(NaN) is 0, since both comparisons are false.
template <class V>
KILN_ALWAYS_INLINE V sign(V x) {
  return select(V(0) < x, V(1), V(0)) - select(x < V(0), V(1), V(0));
}
template <class V>
KILN_ALWAYS_INLINE V sin_(V x) {
  return sin(x);
}
template <class V>
KILN_ALWAYS_INLINE V cos_(V x) {
  return cos(x);
}
template <class V>
KILN_ALWAYS_INLINE V erf_(V x) {
  return erf(x);
}
// gelu(approximate="none"): x Phi(x) with the exact normal CDF (Note [gelu as one branch]).
template <class V>
KILN_ALWAYS_INLINE V gelu_erf(V x) {
  return gelu_exact(x);
}
// gelu(approximate="tanh"): 0.5 x (1 + tanh(u)) with u = sqrt(2/pi) (x + 0.044715 x^3), computed
// as x / (1 + exp(-2u)), since (1 + tanh(u)) / 2 = sigmoid(2u). That is one exp and one division
// where tanh costs an exp, a division and a polynomial, and it keeps its relative accuracy in the
// negative tail, where 1 + tanh(u) cancels. exp(-2u) is exp2 of -2u log2(e), evaluated as
// x (c1 + c3 x^2) with log2(e) folded into the constants: that rounding is an error of a few ulp
// of |2u| in the exponent, as the float rounding of u itself already is, and it saves exp's
// reduction. For x -> -inf, exp2 overflows to inf and the quotient is -0, as 0.5 x (1 + -1) is;
// NaN propagates through the arithmetic.
template <class V>
KILN_ALWAYS_INLINE V gelu_tanh(V x) {
  V y = x * (V(-2.3022081981443248891) + V(-0.10294323958002348742) * (x * x));
  return x / (V(1) + exp2(y));
}
// gelu's derivative times the incoming gradient g in one pass, as torch's gelu_backward: the
// autograd formula written with Tensor ops took ten passes over memory. "none": Phi(x) + x phi(x);
// "tanh": the derivative of the function the forward approximates, 0.5 x (1 + tanh(u)) with
// u = sqrt(2/pi) (x + 0.044715 x^3), that is 0.5 (1 + t) + 0.5 x (1 - t^2) u'.
template <class V>
KILN_ALWAYS_INLINE V gelu_erf_backward(V g, V x) {
  V cdf = V(0.5) + V(0.5) * erf(x * V(0.70710678118654752440));
  V pdf = exp(x * x * V(-0.5)) * V(0.39894228040143267794);
  return g * (cdf + x * pdf);
}
template <class V>
KILN_ALWAYS_INLINE V gelu_tanh_backward(V g, V x) {
  V x2 = x * x;
  V t = tanh(x * (V(1) + V(0.044715) * x2) * V(0.79788456080286535588));
  V left = V(0.5) + V(0.5) * t;
  V right = x * (V(1) - t * t) * (V(1) + V(0.134145) * x2) * V(0.39894228040143267794);
  return g * (left + right);
}
template <class V>
KILN_ALWAYS_INLINE V silu(V x) {
  return x / (V(1) + exp(-x));
}
// clamp: NaN in x propagates (both comparisons are false); with min > max every element is max.
template <class V>
KILN_ALWAYS_INLINE V clamp_min(V x, V lo) {
  return select(x < lo, lo, x);
}
template <class V>
KILN_ALWAYS_INLINE V clamp_max(V x, V hi) {
  return select(hi < x, hi, x);
}
template <class V>
KILN_ALWAYS_INLINE V clamp(V x, V lo, V hi) {
  return clamp_max(clamp_min(x, lo), hi);
}
template <class C, class V>
KILN_ALWAYS_INLINE V where(C cond, V a, V b) {
  return select(cond, a, b);
}
// NaN propagates from either side: a NaN `a` is picked by a != a; a NaN `b` by the failed
// comparison.
template <class V>
KILN_ALWAYS_INLINE V maximum(V a, V b) {
  return select(a != a, a, select(b < a, a, b));
}
template <class V>
KILN_ALWAYS_INLINE V minimum(V a, V b) {
  return select(a != a, a, select(a < b, a, b));
}
// Comparisons: computed in the promoted type; the result is V's boolean type.
template <class V>
KILN_ALWAYS_INLINE auto eq(V a, V b) {
  return a == b;
}
template <class V>
KILN_ALWAYS_INLINE auto ne(V a, V b) {
  return a != b;
}
template <class V>
KILN_ALWAYS_INLINE auto lt(V a, V b) {
  return a < b;
}
template <class V>
KILN_ALWAYS_INLINE auto le(V a, V b) {
  return a <= b;
}
template <class V>
KILN_ALWAYS_INLINE auto gt(V a, V b) {
  return b < a;
}
template <class V>
KILN_ALWAYS_INLINE auto ge(V a, V b) {
  return b <= a;
}
// Logical ops on operands already converted to V's boolean type (nonzero is true).
template <class B>
KILN_ALWAYS_INLINE B logical_and(B a, B b) {
  return select(a, b, a);
}
template <class B>
KILN_ALWAYS_INLINE B logical_or(B a, B b) {
  return select(a, a, b);
}
template <class B>
KILN_ALWAYS_INLINE B logical_not(B a) {
  return select(a, B(false), B(true));
}
template <class M, class V>
KILN_ALWAYS_INLINE V masked_fill(V x, M mask, V value) {
  return select(mask, value, x);
}

}  // namespace kiln::math

// pow (float pow_poly, integer pow, the op math pow_ and the constant exponents) lives in its own
// header, which needs the primitives above.
#include "kiln/base/pointwise_pow.h"  // IWYU pragma: export
