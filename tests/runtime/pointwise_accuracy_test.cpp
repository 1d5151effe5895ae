// Accuracy of the float32 polynomial exp, log, tanh and erf (Note [Vectorized exp and tanh]) and of
// the ops built on them, against double libm rounded to float, measured in float32 ulps over a wide
// sweep of inputs (dense near 0, every binade out to the overflow and underflow limits).
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <iostream>
#include <limits>

#include "float_accuracy.h"
#include "kiln/base/pointwise_math.h"
#include "kiln/kiln.h"
#include "kiln/runtime/kernels/pointwise_loops.h"
#include "test_util.h"

namespace {

using kiln::Tensor;

using kiln_test::ulp_distance;

std::vector<float> sweep(float limit) {
  return kiln_test::accuracy_sweep(limit);
}

struct Worst {
  int64_t ulps = 0;
  float at = 0;
};

// Max ulp error of op(x) against ref(double x) rounded to float, over results whose magnitude
// is at least `min_result` (below it, an absolute bound `abs_tol` applies instead).
Worst measure(Tensor (*op)(const Tensor&), double (*ref)(double), const std::vector<float>& xs,
              double min_result, double abs_tol) {
  Tensor x = kiln::from_vector(xs, {static_cast<int64_t>(xs.size())});
  std::vector<float> y = op(x).to_vector<float>();
  Worst w;
  for (size_t i = 0; i < xs.size(); ++i) {
    double r = ref(static_cast<double>(xs[i]));
    auto expect = static_cast<float>(r);
    if (!std::isnan(r) && std::fabs(r) < min_result) {
      EXPECT_LE(std::fabs(y[i] - r), abs_tol) << "x = " << xs[i];
      continue;
    }
    int64_t d = ulp_distance(y[i], expect);
    if (d > w.ulps) w = {d, xs[i]};
  }
  return w;
}

TEST(PointwiseAccuracy, ExpFloat32) {
  Worst w =
      measure([](const Tensor& t) { return kiln::exp(t); }, [](double x) { return std::exp(x); },
              sweep(110.0f), static_cast<double>(std::numeric_limits<float>::min()), 2e-45);
  EXPECT_LE(w.ulps, 2) << "worst at x = " << w.at;
  std::cout << "exp: max " << w.ulps << " ulp (at x = " << w.at << ")\n";
}

TEST(PointwiseAccuracy, LogFloat32) {
  // Every 997th positive float (subnormals, every binade, inf), plus zeros, negatives and NaN.
  std::vector<float> xs;
  for (uint64_t b = 1; b <= 0x7f800000u; b += 997)
    xs.push_back(std::bit_cast<float>(static_cast<uint32_t>(b)));
  for (float x : {0.0f, -0.0f, -1.0f, -std::numeric_limits<float>::infinity(),
                  std::numeric_limits<float>::infinity(), std::nanf("")})
    xs.push_back(x);
  Worst w = measure([](const Tensor& t) { return kiln::log(t); },
                    [](double x) { return std::log(x); }, xs, 0, 0);
  EXPECT_LE(w.ulps, 2) << "worst at x = " << w.at;
  std::cout << "log: max " << w.ulps << " ulp (at x = " << w.at << ")\n";
}

TEST(PointwiseAccuracy, TanhFloat32) {
  Worst w = measure([](const Tensor& t) { return kiln::tanh(t); },
                    [](double x) { return std::tanh(x); }, sweep(50.0f), 0, 0);
  EXPECT_LE(w.ulps, 3) << "worst at x = " << w.at;
  std::cout << "tanh: max " << w.ulps << " ulp (at x = " << w.at << ")\n";
}

TEST(PointwiseAccuracy, ErfFloat32) {
  Worst w = measure([](const Tensor& t) { return kiln::erf(t); },
                    [](double x) { return std::erf(x); }, sweep(10.0f), 0, 0);
  EXPECT_LE(w.ulps, 4) << "worst at x = " << w.at;
  std::cout << "erf: max " << w.ulps << " ulp (at x = " << w.at << ")\n";
}

// log1p and expm1 (log1p_poly and expm1_poly): over the sweep, every 997th positive float
// (every binade up to inf, where expm1 overflows above 88.72 and log1p keeps growing) and every
// 997th float of (-1, 0), denormals included.
TEST(PointwiseAccuracy, Log1pExpm1Float32) {
  std::vector<float> xs = sweep(100.0f);
  for (uint32_t b = 1; b <= 0x7f800000u; b += 997)
    xs.push_back(std::bit_cast<float>(b));
  for (uint32_t b = 1; b < 0x3f800000u; b += 997)
    xs.push_back(-std::bit_cast<float>(b));
  xs.push_back(-1.0f);
  Worst l = measure([](const Tensor& t) { return kiln::log1p(t); },
                    [](double x) { return std::log1p(x); }, xs, 0, 0);
  Worst e = measure([](const Tensor& t) { return kiln::expm1(t); },
                    [](double x) { return std::expm1(x); }, xs, 0, 0);
  EXPECT_LE(l.ulps, 2) << "log1p worst at x = " << l.at;
  EXPECT_LE(e.ulps, 2) << "expm1 worst at x = " << e.at;
  std::cout << "log1p: max " << l.ulps << " ulp (at x = " << l.at << "); expm1: max " << e.ulps
            << " ulp (at x = " << e.at << ")\n";
}

// sin and cos (Note [sin and cos by one polynomial]): every 997th float of either sign (every
// binade, so both the polynomial within kSinCosReducedLimit and libm beyond), a dense grid over
// the polynomial's range and inputs next to multiples of pi/2 (where the reduction cancels).
TEST(PointwiseAccuracy, SinCosFloat32) {
  std::vector<float> xs = sweep(kiln::math::kSinCosReducedLimit);
  for (uint32_t b = 1; b <= 0x7f800000u; b += 997) {
    xs.push_back(std::bit_cast<float>(b));
    xs.push_back(-std::bit_cast<float>(b));
  }
  for (int k = -5215; k <= 5215; k += 7) {
    float near = static_cast<float>(k * 1.57079632679489661923);
    for (float v : {near, std::nextafter(near, -1e9f), std::nextafter(near, 1e9f)})
      xs.push_back(v);
  }
  Worst sn = measure([](const Tensor& t) { return kiln::sin(t); },
                     [](double x) { return std::sin(x); }, xs, 0, 0);
  Worst cs = measure([](const Tensor& t) { return kiln::cos(t); },
                     [](double x) { return std::cos(x); }, xs, 0, 0);
  EXPECT_LE(sn.ulps, 2) << "sin worst at x = " << sn.at;
  EXPECT_LE(cs.ulps, 2) << "cos worst at x = " << cs.at;
  std::cout << "sin: max " << sn.ulps << " ulp (at x = " << sn.at << "); cos: max " << cs.ulps
            << " ulp (at x = " << cs.at << ")\n";
}

// The contiguous float32 loop picks the polynomial or libm per block of inputs (Note
// [Reduced-range float loops]); each element must still get the scalar function's value wherever
// the large inputs sit (the strided loop calls it element by element), also with the loop called
// in place.
TEST(PointwiseAccuracy, SinCosBlocksWithLargeInputsMatchTheScalarFunction) {
  // Five blocks of 1024 (and a partial one): the large inputs, inf and NaN sit in blocks 1 and
  // 3 only, so blocks 0, 2 and 4 (with +-0, denormals and +-limit) run the polynomial.
  const int64_t n = 5000;
  std::vector<float> xs(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    xs[static_cast<size_t>(i)] = static_cast<float>(i % 97) * 0.37f - 17.0f;
  const float limit = kiln::math::kSinCosReducedLimit;
  const float inf = std::numeric_limits<float>::infinity();
  const std::pair<int64_t, float> placed[] = {{3, 0.0f},
                                              {4, -0.0f},
                                              {5, 1e-40f},
                                              {6, -1e-40f},
                                              {7, limit},
                                              {8, -limit},
                                              {2050, limit},
                                              {4100, -0.0f},
                                              {1030, 1e6f},
                                              {1500, -3e7f},
                                              {1501, std::nextafter(limit, inf)},
                                              {1502, -inf},
                                              {3100, std::nanf("")},
                                              {3101, 1e30f}};
  for (auto [i, v] : placed)
    xs[static_cast<size_t>(i)] = v;
  Tensor x = kiln::from_vector(xs, {n});
  // The same values at every other element of a buffer twice as long: a strided view.
  std::vector<float> spread(static_cast<size_t>(2 * n), 0.0f);
  for (int64_t i = 0; i < n; ++i)
    spread[static_cast<size_t>(2 * i)] = xs[static_cast<size_t>(i)];
  Tensor strided = kiln::from_vector(spread, {n, 2}).select(1, 0);
  ASSERT_FALSE(strided.is_contiguous());
  for (bool is_sin : {true, false}) {
    auto op = [&](const Tensor& t) { return is_sin ? kiln::sin(t) : kiln::cos(t); };
    std::vector<float> got = op(x).to_vector<float>();
    std::vector<float> got_strided = op(strided).to_vector<float>();
    // The loop itself, called in place (out == in) as a fused or planned buffer may be, against
    // the same loop out of place (both compiled with this file's flags, which may contract
    // differently from the library's).
    auto reduced = [is_sin](float v) {
      return is_sin ? kiln::math::sin_reduced(v) : kiln::math::cos_reduced(v);
    };
    auto full = [is_sin](float v) { return is_sin ? kiln::math::sin(v) : kiln::math::cos(v); };
    std::vector<float> got_in_place = xs, got_out_of_place(xs.size());
    kiln::unary_contiguous_f32_reduced(got_in_place.data(), got_in_place.data(), n, limit, reduced,
                                       full);
    kiln::unary_contiguous_f32_reduced(got_out_of_place.data(), xs.data(), n, limit, reduced, full);
    for (int64_t i = 0; i < n; ++i) {
      auto k = static_cast<size_t>(i);
      float v = xs[k];
      auto ref = static_cast<float>(is_sin ? std::sin(static_cast<double>(v))
                                           : std::cos(static_cast<double>(v)));
      EXPECT_LE(ulp_distance(got[k], ref), 2) << v;
      // Beyond the limit (inf and NaN included), float libm's value bit for bit.
      if (!(std::fabs(v) <= limit)) {
        float libm = is_sin ? std::sin(v) : std::cos(v);
        EXPECT_TRUE(kiln_test::same_bits_or_both_nan(got[k], libm)) << v;
      }
      if (v == 0.0f) {  // sin keeps the zero's sign, cos(+-0) is 1 (same_bits compares signs)
        EXPECT_TRUE(kiln_test::same_bits_or_both_nan(got[k], is_sin ? v : 1.0f)) << v;
      }
      EXPECT_TRUE(kiln_test::same_bits_or_both_nan(got_strided[k], got[k]))
          << (is_sin ? "sin(" : "cos(") << v << "): strided " << got_strided[k] << ", contiguous "
          << got[k];
      EXPECT_TRUE(kiln_test::same_bits_or_both_nan(got_in_place[k], got_out_of_place[k])) << v;
      EXPECT_LE(ulp_distance(got_in_place[k], ref), 2) << v;
    }
  }
}

// sin keeps the sign of zero (sin(-0) = -0, cos(+-0) = 1); infinities and NaN give NaN.
TEST(PointwiseAccuracy, SinCosSpecialValuesAreLibms) {
  std::vector<float> xs = kiln_test::signed_special_inputs();
  Tensor x = kiln::from_vector(xs, {static_cast<int64_t>(xs.size())});
  std::vector<float> sn = kiln::sin(x).to_vector<float>();
  std::vector<float> cs = kiln::cos(x).to_vector<float>();
  for (size_t i = 0; i < xs.size(); ++i) {
    auto xd = static_cast<double>(xs[i]);
    EXPECT_TRUE(kiln_test::same_bits_or_both_nan(sn[i], std::sin(xd)))
        << "sin(" << xs[i] << ") = " << sn[i];
    EXPECT_TRUE(kiln_test::same_bits_or_both_nan(cs[i], std::cos(xd)))
        << "cos(" << xs[i] << ") = " << cs[i];
  }
}

// log1p and expm1 keep the sign of zero; log1p(-1) is -inf and log1p(-inf) NaN, expm1(-inf) is -1.
TEST(PointwiseAccuracy, Log1pExpm1SpecialValuesAreLibms) {
  std::vector<float> xs = kiln_test::signed_special_inputs();
  xs.push_back(-1.0f);
  xs.push_back(-2.0f);
  Tensor x = kiln::from_vector(xs, {static_cast<int64_t>(xs.size())});
  std::vector<float> l = kiln::log1p(x).to_vector<float>();
  std::vector<float> e = kiln::expm1(x).to_vector<float>();
  for (size_t i = 0; i < xs.size(); ++i) {
    auto xd = static_cast<double>(xs[i]);
    EXPECT_TRUE(kiln_test::same_bits_or_both_nan(l[i], std::log1p(xd)))
        << "log1p(" << xs[i] << ") = " << l[i];
    EXPECT_TRUE(kiln_test::same_bits_or_both_nan(e[i], std::expm1(xd)))
        << "expm1(" << xs[i] << ") = " << e[i];
  }
}

// erf and tanh clamp by bits and take x's sign with copysign (Note [Clamps and signs by bits]):
// -0 keeps its sign (libm's erf(-0) and tanh(-0) are -0), infinities give +-1, and NaN of either
// sign stays NaN. gelu (Note [gelu as one branch]) keeps the zero's sign, is inf at inf and -0 at
// -inf (its limit).
TEST(PointwiseAccuracy, ErfTanhGeluKeepSignedZerosInfinitiesAndNaN) {
  std::vector<float> xs = kiln_test::signed_special_inputs();
  Tensor x = kiln::from_vector(xs, {static_cast<int64_t>(xs.size())});
  std::vector<float> erf = kiln::erf(x).to_vector<float>();
  std::vector<float> tanh = kiln::tanh(x).to_vector<float>();
  std::vector<float> gelu = kiln::gelu(x).to_vector<float>();
  for (size_t i = 0; i < xs.size(); ++i) {
    auto xd = static_cast<double>(xs[i]);
    EXPECT_TRUE(kiln_test::same_bits_or_both_nan(erf[i], std::erf(xd)))
        << "erf(" << xs[i] << ") = " << erf[i];
    EXPECT_TRUE(kiln_test::same_bits_or_both_nan(tanh[i], std::tanh(xd)))
        << "tanh(" << xs[i] << ") = " << tanh[i];
    EXPECT_TRUE(kiln_test::same_bits_or_both_nan(gelu[i], kiln_test::gelu_special(xs[i])))
        << "gelu(" << xs[i] << ") = " << gelu[i];
  }
}

TEST(PointwiseAccuracy, SigmoidSiluGeluFloat32) {
  Worst s = measure([](const Tensor& t) { return kiln::sigmoid(t); },
                    [](double x) { return 1 / (1 + std::exp(-x)); }, sweep(100.0f), 1e-30, 1e-37);
  EXPECT_LE(s.ulps, 4) << "sigmoid worst at x = " << s.at;
  // gelu(tanh) against 0.5 x (1 + tanh(u)) written as x / (1 + exp(-2u)), the same function
  // without the cancellation of 1 + tanh(u) for x < -3 (which in double loses everything below
  // x = -7). Kiln evaluates that form too, so the bound is relative down to results of 1e-36
  // (below, exp(-2u) overflows float before the quotient reaches the denormals, and the result
  // is 0; an absolute bound applies there): a few ulp, plus the float rounding of -2u itself (an
  // absolute error of about 3 ulp of |2u|, which exp turns into a relative one), the error any
  // float32 evaluation of u has.
  std::vector<float> gx = sweep(20.0f);
  std::vector<float> gy =
      kiln::gelu(kiln::from_vector(gx, {static_cast<int64_t>(gx.size())}), "tanh")
          .to_vector<float>();
  double g_worst = 0;
  float g_at = 0;
  for (size_t i = 0; i < gx.size(); ++i) {
    double x = gx[i];
    double minus_2u = -2 * std::sqrt(2 / 3.14159265358979323846) * (x + 0.044715 * x * x * x);
    double r = x / (1 + std::exp(minus_2u));
    if (!std::isfinite(r)) {  // +-inf and NaN inputs
      EXPECT_TRUE(std::isnan(r) ? std::isnan(gy[i]) : gy[i] == r) << "x = " << x << ": " << gy[i];
      continue;
    }
    if (std::fabs(r) < 1e-36) {
      EXPECT_LE(std::fabs(gy[i] - r), 1e-36) << "x = " << x;
      continue;
    }
    double rel_ulps = std::fabs(gy[i] - r) / std::fabs(r) * 0x1p23;
    double bound = 4 + 3 * std::fabs(minus_2u);
    ASSERT_LE(rel_ulps, bound) << "gelu(tanh) at x = " << x << ": " << gy[i] << " vs " << r;
    if (rel_ulps > g_worst) g_worst = rel_ulps, g_at = gx[i];
  }
  Worst e = measure([](const Tensor& t) { return kiln::gelu(t); },
                    [](double x) { return kiln_test::gelu_sweep_reference(static_cast<float>(x)); },
                    sweep(20.0f), static_cast<double>(std::numeric_limits<float>::min()), 3e-45);
  EXPECT_LE(e.ulps, 44) << "gelu(erf) worst at x = " << e.at;  // as the tail test below
  std::cout << "sigmoid: max " << s.ulps << " ulp; gelu(tanh): max " << g_worst
            << " ulp (relative, at x = " << g_at << "); gelu(none): max " << e.ulps << " ulp\n";
}

// gelu(erf) on every float of [-4 sqrt 2, -1] and every 64th of [-1, 0] (Note [gelu as one
// branch]): Phi(-|x|) is computed directly, not as 1 + erf(x / sqrt 2) with erf near -1, so the
// error stays relative instead of growing with the cancellation (106 ulp near x = -3 in that
// form, and all of it further down). Below -4 sqrt 2 gelu is -0, within 4.4e-8 of the exact value.
TEST(PointwiseAccuracy, GeluErfNegativeTailKeepsItsRelativeAccuracy) {
  const float cap = kiln::math::kGeluTailCap;
  const uint32_t one = std::bit_cast<uint32_t>(1.0f);
  std::vector<float> xs;
  for (uint32_t b = 0; b <= std::bit_cast<uint32_t>(cap); b += b < one ? 64 : 1)
    xs.push_back(-std::bit_cast<float>(b));
  for (float x : {std::nextafter(-cap, -10.0f), -6.0f, -10.0f, -1e30f})
    xs.push_back(x);
  std::vector<float> y =
      kiln::gelu(kiln::from_vector(xs, {static_cast<int64_t>(xs.size())})).to_vector<float>();
  int64_t worst_near = 0, worst_tail = 0;  // x >= -3 and x < -3
  float near_at = 0, tail_at = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    double x = xs[i];
    double want = 0.5 * x * std::erfc(-x / std::sqrt(2.0));
    if (xs[i] < -cap) {
      EXPECT_EQ(std::bit_cast<uint32_t>(y[i]), std::bit_cast<uint32_t>(-0.0f)) << "x = " << x;
      EXPECT_LT(std::fabs(want), 4.4e-8) << "x = " << x;
      continue;
    }
    int64_t d = ulp_distance(y[i], static_cast<float>(want));
    if (x >= -3 && d > worst_near) worst_near = d, near_at = xs[i];
    if (x < -3 && d > worst_tail) worst_tail = d, tail_at = xs[i];
  }
  // 10 here; 11 at x = -0.1404 when every float of [-1, 0] is run.
  EXPECT_LE(worst_near, 12) << "worst at x = " << near_at;
  // 34 at x = -5.4765 with the library's multiply-add contraction, 43 without (a build with no
  // FMA in its baseline).
  EXPECT_LE(worst_tail, 44) << "worst at x = " << tail_at;
  std::cout << "gelu(none) on [-3, 0]: max " << worst_near << " ulp (at x = " << near_at
            << "); on [-4 sqrt 2, -3]: max " << worst_tail << " ulp (at x = " << tail_at << ")\n";
}

// pow with a tensor exponent (Note [pow in double-float]) over pow_accuracy_inputs, and the
// pow_scalar kernel with exponents other than those of Note [pow by a constant exponent], over the
// sweep (negative x, zeros, infinities and NaN included), against double pow rounded to float.
TEST(PointwiseAccuracy, PowFloat32) {
  kiln_test::PowInputs in = kiln_test::pow_accuracy_inputs();
  auto n = static_cast<int64_t>(in.x.size());
  std::vector<float> got =
      kiln::pow(kiln::from_vector(in.x, {n}), kiln::from_vector(in.y, {n})).to_vector<float>();
  int64_t worst = 0;
  size_t worst_at = 0;
  for (size_t i = 0; i < in.x.size(); ++i) {
    auto want =
        static_cast<float>(std::pow(static_cast<double>(in.x[i]), static_cast<double>(in.y[i])));
    int64_t d = ulp_distance(got[i], want);
    if (d > worst) {
      worst = d;
      worst_at = i;
    }
  }
  EXPECT_LE(worst, 2) << "worst at x = " << std::hexfloat << in.x[worst_at]
                      << ", y = " << in.y[worst_at];
  std::cout << "pow: max " << worst << " ulp over " << n << " (x, y) pairs\n";

  std::vector<float> xs = sweep(1000.0f);
  Tensor x = kiln::from_vector(xs, {static_cast<int64_t>(xs.size())});
  for (double e : {2.5, -1.5, 0.3, 7.0, -3.0, 1e-3}) {
    std::vector<float> p = kiln::pow(x, e).to_vector<float>();
    // The exponent is a float32 scalar then (torch's too): 0.3 is 0.300000012.
    auto ef = static_cast<double>(static_cast<float>(e));
    int64_t w = 0;
    float at = 0;
    for (size_t i = 0; i < xs.size(); ++i) {
      auto want = static_cast<float>(std::pow(static_cast<double>(xs[i]), ef));
      int64_t d = ulp_distance(p[i], want);
      if (d > w) {
        w = d;
        at = xs[i];
      }
    }
    EXPECT_LE(w, 2) << "x ** " << e << ": worst at x = " << at;
  }
}

// C99's special cases of pow (zeros, infinities, NaN, +-1, negative bases with integer and
// non-integer exponents, odd integers past 2^23) over every pair of pow_special_values: the
// sign and class of libm's powf, exactly where it is 0, inf or NaN, and within 2 ulp elsewhere.
TEST(PointwiseAccuracy, PowSpecialValuesAreLibms) {
  std::vector<float> v = kiln_test::pow_special_values();
  auto k = static_cast<int64_t>(v.size());
  // Every pair by broadcasting [k, 1] against [1, k], on both kernels' paths: a tensor
  // exponent, and each column's exponent as a scalar (but for the exponents computed without pow,
  // whose special values are torch's, not C99's: Note [pow by a constant exponent]).
  Tensor x = kiln::from_vector(v, {k, 1});
  std::vector<float> got = kiln::pow(x, kiln::from_vector(v, {1, k})).to_vector<float>();
  auto check = [](float g, float xi, float y) {
    float want = std::pow(xi, y);
    if (want == 0 || std::isinf(want) || std::isnan(want)) {
      EXPECT_TRUE(kiln_test::same_bits_or_both_nan(g, want))
          << "pow(" << xi << ", " << y << ") = " << g << ", libm " << want;
    } else {
      EXPECT_TRUE(ulp_distance(g, want) <= 2 && std::signbit(g) == std::signbit(want))
          << "pow(" << xi << ", " << y << ") = " << g << ", libm " << want;
    }
  };
  // And every pair as two contiguous tensors: the loop with the AVX-512 clone.
  std::vector<float> xs, ys;
  for (float a : v) {
    for (float b : v) {
      xs.push_back(a);
      ys.push_back(b);
    }
  }
  std::vector<float> flat =
      kiln::pow(kiln::from_vector(xs, {k * k}), kiln::from_vector(ys, {k * k})).to_vector<float>();
  for (size_t i = 0; i < xs.size(); ++i)
    check(flat[i], xs[i], ys[i]);
  for (int64_t j = 0; j < k; ++j) {
    auto y = v[static_cast<size_t>(j)];
    for (int64_t i = 0; i < k; ++i)
      check(got[static_cast<size_t>(i * k + j)], v[static_cast<size_t>(i)], y);
    if (kiln::math::pow_by_constant(static_cast<double>(y)) != kiln::math::PowByConstant::None)
      continue;
    std::vector<float> column = kiln::pow(x, static_cast<double>(y)).to_vector<float>();
    for (int64_t i = 0; i < k; ++i)
      check(column[static_cast<size_t>(i)], v[static_cast<size_t>(i)], y);
  }
}

// The float32 exp2 that gelu(tanh) is written with: within 2 ulp of libm over every binade of
// its result, denormals by absolute error; 0, inf and NaN at the ends.
TEST(PointwiseAccuracy, Exp2Float32) {
  int64_t worst = 0;
  float at = 0;
  for (float y : sweep(160.0f)) {
    float got = kiln::math::exp2(y);
    double want = std::exp2(static_cast<double>(y));
    if (std::isnan(y)) {
      EXPECT_TRUE(std::isnan(got));
      continue;
    }
    if (want < static_cast<double>(std::numeric_limits<float>::min())) {
      EXPECT_LE(std::fabs(got - want), 2e-45) << "y = " << y;
      continue;
    }
    int64_t d = ulp_distance(got, static_cast<float>(want));
    if (d > worst) worst = d, at = y;
  }
  EXPECT_EQ(kiln::math::exp2(3.0f), 8.0f);
  EXPECT_EQ(kiln::math::exp2(-126.0f), std::numeric_limits<float>::min());
  EXPECT_LE(worst, 2) << "worst at y = " << at;
  std::cout << "exp2: max " << worst << " ulp (at y = " << at << ")\n";
}

// Float64 keeps libm: exact agreement with std::exp / std::tanh.
TEST(PointwiseAccuracy, Float64UsesLibm) {
  std::vector<double> xs = {-700, -3.5, -1e-300, 0, 1e-8, 0.3, 2.5, 700};
  Tensor x = kiln::from_vector(xs, {8});
  std::vector<double> e = kiln::exp(x).to_vector<double>();
  std::vector<double> t = kiln::tanh(x).to_vector<double>();
  for (size_t i = 0; i < xs.size(); ++i) {
    EXPECT_EQ(e[i], std::exp(xs[i]));
    EXPECT_EQ(t[i], std::tanh(xs[i]));
  }
}

}  // namespace
