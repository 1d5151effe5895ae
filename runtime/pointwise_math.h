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
using std::log;
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
  T result = 1;
  while (e) {
    if (e & 1) result = static_cast<T>(result * base);
    e = static_cast<T>(e >> 1);
    base = static_cast<T>(base * base);
  }
  return result;
}

// 2^n for an integer-valued n in [-126, 127], built from the exponent bits.
inline float exp2i(float n) {
  return std::bit_cast<float>((static_cast<int32_t>(n) + 127) << 23);
}
// x rounded to the nearest integer (ties to even) for |x| < 2^22, in plain float arithmetic:
// adding 1.5 * 2^23 leaves no fraction bits. (SSE2 has no vector round instruction.)
inline float round_int(float x) {
  return (x + 12582912.0f) - 12582912.0f;
}

// Note [Vectorized exp and tanh]
// libm's expf/tanhf/erff are scalar calls, so loops over them run at a few percent of the
// memory bandwidth. For float, exp, tanh and erf are the polynomials below, written in V arithmetic
// and the primitives select/exp2i/round_int, which the compiler vectorizes. Their accuracy (a few
// float32 ulp) is checked against double libm over a wide sweep in
// tests/runtime/pointwise_accuracy_test.cpp. double keeps libm.

// exp with float accuracy (Cephes expf): x = n ln2 + r with |r| <= ln2/2, exp(r) by a degree-7
// polynomial, times 2^n applied in two halves so that results down to the denormals and up to
// inf come out right. NaN propagates.
template <class V>
KILN_ALWAYS_INLINE V exp_poly(V x) {
  V xc = select(V(-104) < x, x, V(-104));  // NaN becomes -104 here and is restored at the end
  xc = select(xc < V(89), xc, V(89));
  V n = round_int(xc * V(1.44269504088896341));
  V r = xc - n * V(0.693359375) - n * V(-2.12194440e-4);
  V p = V(1.9875691500e-4);
  p = p * r + V(1.3981999507e-3);
  p = p * r + V(8.3334519073e-3);
  p = p * r + V(4.1665795894e-2);
  p = p * r + V(1.6666665459e-1);
  p = p * r + V(5.0000001201e-1);
  p = p * (r * r) + r + V(1);
  V n1 = round_int(n * V(0.5));
  return select(x != x, x, p * exp2i(n1) * exp2i(n - n1));
}

KILN_ALWAYS_INLINE float exp(float x) {
  return exp_poly(x);
}
inline double exp(double x) {
  return std::exp(x);
}
template <class T>
requires std::is_integral_v<T>
double exp(T x) {
  return std::exp(static_cast<double>(x));
}

// tanh with float accuracy: the odd Taylor series up to x^21 for |x| < 0.625 (truncation below
// 1e-8 relative), 1 - 2 / (exp(2|x|) + 1) with x's sign above (no cancellation there).
template <class V>
KILN_ALWAYS_INLINE V tanh_poly(V x) {
  V a = select(x < V(0), -x, x);
  V e = exp(V(2) * a);
  V big = V(1) - V(2) / (e + V(1));
  V z = x * x;
  V q = V(9.691537956929451e-05);
  q = q * z + V(-2.3912911424355248e-04);
  q = q * z + V(5.90027440945586e-04);
  q = q * z + V(-1.4558343870513183e-03);
  q = q * z + V(3.592128036572481e-03);
  q = q * z + V(-8.863235529902197e-03);
  q = q * z + V(2.1869488536155203e-02);
  q = q * z + V(-5.396825396825397e-02);
  q = q * z + V(1.3333333333333333e-01);
  q = q * z + V(-3.333333333333333e-01);
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

// erf with float accuracy: Cephes' odd polynomial for |x| < 1 (relative error 1e-9), and
// Abramowitz & Stegun 7.1.26, 1 - t P(t) exp(-x^2) with t = 1 / (1 + p |x|), above (absolute
// error 1.5e-7, where erf >= 0.84), with x's sign. NaN propagates.
template <class V>
KILN_ALWAYS_INLINE V erf_poly(V x) {
  V a = select(x < V(0), -x, x);
  V z = x * x;
  V q = V(7.853861353153693e-5);
  q = q * z + V(-8.010193625184903e-4);
  q = q * z + V(5.188327685732524e-3);
  q = q * z + V(-2.685381193529856e-2);
  q = q * z + V(1.128358514861418e-1);
  q = q * z + V(-3.761262582423300e-1);
  q = q * z + V(1.128379165726710);
  V small = q * x;
  V t = V(1) / (V(1) + V(0.3275911) * a);
  V p = V(1.061405429);
  p = p * t + V(-1.453152027);
  p = p * t + V(1.421413741);
  p = p * t + V(-0.284496736);
  p = p * t + V(0.254829592);
  V big = V(1) - t * p * exp(-z);
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
// gelu(approximate="tanh"): 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
template <class V>
KILN_ALWAYS_INLINE V gelu_tanh(V x) {
  V inner = V(0.79788456080286535588) * (x + V(0.044715) * x * x * x);
  return V(0.5) * x * (V(1) + tanh(inner));
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
