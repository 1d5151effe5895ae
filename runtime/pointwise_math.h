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
using std::abs;
using std::cos;
using std::expm1;
using std::log1p;
using std::pow;
using std::sin;
using std::sqrt;
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

// Note [Vectorized exp and tanh]
// libm's expf/tanhf/erff/logf are scalar calls, so loops over them run at a few percent of the
// memory bandwidth. For float, exp, log, tanh and erf are the polynomials below, written in V
// arithmetic and the primitives select/abs/exp2i/round_int, which the compiler vectorizes. Their
// accuracy (a few float32 ulp) is checked against double libm over a wide sweep in
// tests/runtime/pointwise_accuracy_test.cpp. double keeps libm.

// exp with float accuracy: x = n ln2 + r with |r| <= ln2/2 (Cephes' two-constant reduction) and
// exp(r) = p = 1 + r + r^2 q(r), q of degree 4 fitted to minimize the relative error on
// [-ln2/2, ln2/2] (3e-9, against a float ulp of 6e-8), so that exp(x) = p * 2^n. This part computes
// p and n, for |x| <= 104 (n in [-150, 150]); the callers apply 2^n for the range of x they allow.
template <class V>
struct ExpParts {
  V p;
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
  return {p * (r * r) + r + V(1), n};
}

// exp for x in [-87, 88] (n in [-126, 127], normal results) with no range handling, for callers
// that bound x themselves: one scaling by 2^n.
template <class V>
KILN_ALWAYS_INLINE V exp_poly_normal(V x) {
  auto [p, n] = exp_poly_reduce(x);
  return p * exp2i(n);
}

// exp for every x. The input is clamped to [-104, 89], where n lies in [-150, 128]: below -104
// exp rounds to 0 and above 89 it overflows, and the clamped input gives the same results. 2^n is
// applied as two exact factors, 2^(n - 64) * 2^64 for n >= 0 and 2^(n + 64) * 2^-64 for n < 0:
// p * 2^(n -+ 64) is a normal float times a power of two (exact), and the last multiply rounds
// once, into the denormals or to inf, as a correctly rounded scaling does. NaN fails both clamp
// comparisons and propagates through the arithmetic.
template <class V>
KILN_ALWAYS_INLINE V exp_poly(V x) {
  V xc = select(x < V(-104), V(-104), x);
  xc = select(V(89) < xc, V(89), xc);
  auto [p, n] = exp_poly_reduce(xc);
  auto neg = n < V(0);
  return p * exp2i(n - select(neg, V(-64), V(64))) * select(neg, V(0x1p-64), V(0x1p64));
}

KILN_ALWAYS_INLINE float exp(float x) {
  return exp_poly(x);
}

// exp(x) for the terms of a sum whose largest term is exp(0) = 1, as in log-sum-exp and the
// log-softmax normalizer (x = element - max <= 0). x is clamped at -87, where exp is still a
// normal float, so one scaling suffices: what the clamp changes, under 2e-38 a term, is far
// below the sum's rounding. NaN fails the comparison and propagates. Not for values that are
// stored (softmax's outputs must be exactly 0 where exp underflows).
template <class V>
KILN_ALWAYS_INLINE V exp_sum_term(V x) {
  return exp_poly_normal(select(x < V(-87), V(-87), x));
}
KILN_ALWAYS_INLINE float exp_sum_term(float x) {
  return exp_sum_term<float>(x);
}
inline double exp_sum_term(double x) {
  return std::exp(x);
}
inline double exp(double x) {
  return std::exp(x);
}
template <class T>
requires std::is_integral_v<T>
double exp(T x) {
  return std::exp(static_cast<double>(x));
}

// x = m 2^e with m in [0.5, 1), for a positive normal float x, from its bits: the mantissa
// bits given the exponent of 0.5, and the exponent field less 126.
template <class V>
struct MantissaExponent {
  V m;
  V e;
};
inline MantissaExponent<float> mantissa_exponent(float x) {
  uint32_t b = std::bit_cast<uint32_t>(x);
  return {std::bit_cast<float>((b & 0x007fffffu) | 0x3f000000u),
          static_cast<float>(static_cast<int32_t>(b >> 23) - 126)};
}

// log with float accuracy (Cephes' logf): x = m 2^e with m in [sqrt(1/2), sqrt(2)), f = m - 1,
// log(1 + f) = f - f^2/2 + f^3 P(f), P of degree 8, and e ln2 added in two parts. Subnormal x is
// scaled by 2^23 first; zero, negative, infinite and NaN inputs get libm's results by selects.
template <class V>
KILN_ALWAYS_INLINE V log_poly(V x) {
  auto tiny = x < V(1.17549435e-38);
  V xs = select(tiny, x * V(8388608.0), x);
  auto [mant, exponent] = mantissa_exponent(xs);
  V e = exponent - select(tiny, V(23), V(0));
  auto low = mant < V(0.707106781186547524);
  e = select(low, e - V(1), e);
  V f = select(low, mant + mant - V(1), mant - V(1));
  V z = f * f;
  V p = V(7.0376836292e-2);
  p = p * f + V(-1.1514610310e-1);
  p = p * f + V(1.1676998740e-1);
  p = p * f + V(-1.2420140846e-1);
  p = p * f + V(1.4249322787e-1);
  p = p * f + V(-1.6668057665e-1);
  p = p * f + V(2.0000714765e-1);
  p = p * f + V(-2.4999993993e-1);
  p = p * f + V(3.3333331174e-1);
  V y = f * z * p + V(-2.12194440e-4) * e - V(0.5) * z;
  V r = f + y + V(0.693359375) * e;
  r = select(x == V(0), V(-INFINITY), r);
  r = select(x < V(0), V(NAN), r);
  r = select(x == V(INFINITY), x, r);
  return select(x != x, x, r);
}

KILN_ALWAYS_INLINE float log(float x) {
  return log_poly(x);
}
inline double log(double x) {
  return std::log(x);
}
template <class T>
requires std::is_integral_v<T>
double log(T x) {
  return std::log(static_cast<double>(x));
}

// tanh with float accuracy: x (1 + x^2 q(x^2)) for |x| < 0.625, q of degree 4 fitted to minimize
// the relative error there (4.4e-9), 1 - 2 / (exp(2|x|) + 1) with x's sign above (no cancellation
// there). |x| is clamped to 10 for the exp, where that formula already rounds to 1, so exp needs no
// range handling; NaN fails the clamp comparison and propagates.
template <class V>
KILN_ALWAYS_INLINE V tanh_poly(V x) {
  V a = abs(x);
  V ac = select(V(10) < a, V(10), a);
  V e = exp_poly_normal(V(2) * ac);
  V big = V(1) - V(2) / (e + V(1));
  V z = x * x;
  V q = V(-5.70499618e-03);
  q = q * z + V(2.06390955e-02);
  q = q * z + V(-5.37397191e-02);
  q = q * z + V(1.33314416e-01);
  q = q * z + V(-3.33332807e-01);
  V small = x + x * z * q;
  return select(a < V(0.625), small, select(x < V(0), -big, big));
}

KILN_ALWAYS_INLINE float tanh(float x) {
  return tanh_poly(x);
}
inline double tanh(double x) {
  return std::tanh(x);
}
template <class T>
requires std::is_integral_v<T>
double tanh(T x) {
  return std::tanh(static_cast<double>(x));
}

// erf with float accuracy, both branches computed and one selected per lane:
// - |x| < 1: x q(x^2), q of degree 5 fitted to minimize the relative error of erf there;
// - |x| >= 1: 1 - exp(P(|x| - 2.5)) with x's sign, P of degree 6 fitted to log(erfc) on [1, 4]
//   and weighted by erfc (the error it leaves in erf is 1e-9, against a float ulp of 6e-8).
// |x| is clamped to 4, where erf already rounds to 1 in float, so exp's argument stays in
// [-18, -1.8] and needs no range handling; NaN fails the clamp comparison and propagates. The
// coefficients come from scripts/fit_erf_coefficients.py. There is no division: the earlier
// erfc form (1 / (1 + p|x|), Abramowitz & Stegun 7.1.26) kept erf compute bound at 0.55 of the
// copy bandwidth on AVX2.
template <class V>
KILN_ALWAYS_INLINE V erf_poly(V x) {
  V a = abs(x);
  V ac = select(V(4) < a, V(4), a);
  V z = x * x;
  V q = V(-5.6317565e-4);
  q = q * z + V(4.91764396e-3);
  q = q * z + V(-2.67114043e-2);
  q = q * z + V(1.12801842e-1);
  q = q * z + V(-3.76123279e-1);
  q = q * z + V(1.12837911);
  V small = q * x;
  V u = ac - V(2.5);
  V p = V(1.85577519e-4);
  p = p * u + V(-1.55977978e-4);
  p = p * u + V(2.45783129e-3);
  p = p * u + V(-1.07177217e-2);
  p = p * u + V(-9.43885326e-1);
  p = p * u + V(-5.35269403);
  p = p * u + V(-7.80681801);
  V big = V(1) - exp_poly_normal(p);
  return select(a < V(1), small, select(x < V(0), -big, big));
}

KILN_ALWAYS_INLINE float erf(float x) {
  return erf_poly(x);
}
inline double erf(double x) {
  return std::erf(x);
}
template <class T>
requires std::is_integral_v<T>
double erf(T x) {
  return std::erf(static_cast<double>(x));
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
KILN_ALWAYS_INLINE V pow_(V a, V b) {
  return pow(a, b);
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
// gelu(approximate="none"): x * Phi(x) with the exact normal CDF.
template <class V>
KILN_ALWAYS_INLINE V gelu_erf(V x) {
  return V(0.5) * x * (V(1) + erf(x * V(0.70710678118654752440)));
}
// gelu(approximate="tanh"): 0.5 x (1 + tanh(u)) with u = sqrt(2/pi) (x + 0.044715 x^3), computed
// as x / (1 + exp(-2u)), since (1 + tanh(u)) / 2 = sigmoid(2u). That is one exp and one division
// where tanh costs an exp, a division and a polynomial (gelu ran at 0.48 of the copy bandwidth
// through tanh, compute bound), and it keeps its relative accuracy in the negative tail, where
// 1 + tanh(u) cancels. For x -> -inf, exp overflows to inf and the quotient is -0, as 0.5 x (1 +
// -1) is; NaN propagates through the arithmetic. -2u is evaluated as x (c1 + c3 x^2), two
// operations fewer than the textbook nesting.
template <class V>
KILN_ALWAYS_INLINE V gelu_tanh(V x) {
  V minus_2u = x * (V(-1.5957691216057307118) + V(-0.07135481627260025) * (x * x));
  return x / (V(1) + exp(minus_2u));
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
