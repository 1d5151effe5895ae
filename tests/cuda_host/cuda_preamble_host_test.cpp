// The math of the CUDA preamble (Note [CUDA preamble]), compiled for the host. Its float32
// exp/log/tanh/erf are written out by instantiating base/pointwise_math.h's templates with
// CudaVal; here they must be as accurate as the eager kernels' against double libm, and agree
// with the eager kernels themselves, over the sweep tests/runtime/pointwise_accuracy_test.cpp
// uses. The helpers (NaN-propagating max/min, integer pow and division, float -> int, bfloat16)
// are checked against closed-form values. This is what can be checked of the generated device
// code on a machine without a GPU.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "float_accuracy.h"
#include "kiln/base/half.h"
#include "kiln/base/pointwise_math.h"

// The CUDA intrinsics the preamble's math part uses, for the host.
#define KILN_CUDA_HOST_TEST 1
#define KILN_DEVICE static inline
namespace host_cuda {
inline unsigned float_as_uint(float f) {
  return std::bit_cast<unsigned>(f);
}
inline float uint_as_float(unsigned u) {
  return std::bit_cast<float>(u);
}
inline float int_as_float(unsigned u) {
  return std::bit_cast<float>(u);
}
inline double longlong_as_double(long long v) {
  return std::bit_cast<double>(v);
}
}  // namespace host_cuda
#define __float_as_uint host_cuda::float_as_uint
#define __uint_as_float host_cuda::uint_as_float
#define __int_as_float host_cuda::int_as_float
#define __longlong_as_double host_cuda::longlong_as_double

#include "cuda_preamble.inc"

namespace {

using kiln_test::ulp_distance;

std::vector<float> sweep(float limit) {
  return kiln_test::accuracy_sweep(limit, 200000);
}

struct Check {
  int64_t vs_libm = 0;   // worst ulps against double libm rounded to float
  int64_t vs_eager = 0;  // worst ulps against the eager kernels' kiln::math
};

template <class Cuda, class Eager>
Check check(Cuda cuda, Eager eager, double (*ref)(double), const std::vector<float>& xs,
            double min_result, double abs_tol = 2e-45) {
  Check c;
  for (float x : xs) {
    float y = cuda(x);
    double r = ref(static_cast<double>(x));
    if (std::isnan(r) || std::fabs(r) >= min_result)
      c.vs_libm = std::max(c.vs_libm, ulp_distance(y, static_cast<float>(r)));
    else
      EXPECT_LE(std::fabs(y - r), abs_tol) << "x = " << x;
    c.vs_eager = std::max(c.vs_eager, ulp_distance(y, eager(x)));
  }
  return c;
}

TEST(CudaPreambleOnHost, FloatMathIsTheEagerPolynomials) {
  Check e = check(
      kiln_exp_f32, [](float x) { return kiln::math::exp(x); },
      [](double x) { return std::exp(x); }, sweep(110.0f),
      static_cast<double>(std::numeric_limits<float>::min()));
  EXPECT_LE(e.vs_libm, 2);
  std::vector<float> positive;
  for (uint64_t b = 1; b <= 0x7f800000u; b += 4999)
    positive.push_back(std::bit_cast<float>(static_cast<uint32_t>(b)));
  for (float x : {0.0f, -0.0f, -1.0f, -std::numeric_limits<float>::infinity(), std::nanf("")})
    positive.push_back(x);
  Check l = check(
      kiln_log_f32, [](float x) { return kiln::math::log(x); },
      [](double x) { return std::log(x); }, positive, 0);
  EXPECT_LE(l.vs_libm, 2);
  Check t = check(
      kiln_tanh_f32, [](float x) { return kiln::math::tanh(x); },
      [](double x) { return std::tanh(x); }, sweep(50.0f), 0);
  EXPECT_LE(t.vs_libm, 3);
  Check f = check(
      kiln_erf_f32, [](float x) { return kiln::math::erf(x); },
      [](double x) { return std::erf(x); }, sweep(10.0f), 0);
  EXPECT_LE(f.vs_libm, 4);
  Check e2 = check(
      kiln_exp2_f32, [](float x) { return kiln::math::exp2(x); },
      [](double x) { return std::exp2(x); }, sweep(160.0f),
      static_cast<double>(std::numeric_limits<float>::min()));
  EXPECT_LE(e2.vs_libm, 2);
  // gelu (approximate "none"): 11 ulp down to x = -3 and 34 below with multiply-adds contracted,
  // 43 without (this file is compiled without), down to x = -4 sqrt 2, where it becomes -0
  // (kiln_test::gelu_sweep_reference).
  Check g = check(
      kiln_gelu_exact_f32, [](float x) { return kiln::math::gelu_exact(x); },
      [](double x) { return kiln_test::gelu_sweep_reference(static_cast<float>(x)); }, sweep(10.0f),
      static_cast<double>(std::numeric_limits<float>::min()), 3e-45);
  EXPECT_LE(g.vs_libm, 44);
  Check lp = check(
      kiln_log1p_f32, [](float x) { return kiln::math::log1p(x); },
      [](double x) { return std::log1p(x); }, sweep(100.0f), 0);
  EXPECT_LE(lp.vs_libm, 2);
  Check em = check(
      kiln_expm1_f32, [](float x) { return kiln::math::expm1(x); },
      [](double x) { return std::expm1(x); }, sweep(100.0f), 0);
  EXPECT_LE(em.vs_libm, 2);
  // sin and cos over their polynomial's range and beyond it (libm there, as eager).
  std::vector<float> angles = sweep(kiln::math::kSinCosReducedLimit);
  for (float x : {1e5f, -3e7f, 1e30f, std::nextafter(kiln::math::kSinCosReducedLimit, 1e9f)})
    angles.push_back(x);
  Check sn = check(
      kiln_sin_f32, [](float x) { return kiln::math::sin(x); },
      [](double x) { return std::sin(x); }, angles, 0);
  EXPECT_LE(sn.vs_libm, 2);
  Check cs = check(
      kiln_cos_f32, [](float x) { return kiln::math::cos(x); },
      [](double x) { return std::cos(x); }, angles, 0);
  EXPECT_LE(cs.vs_libm, 2);
  // The same template: only the compilers' multiply-add contraction may differ.
  for (const Check* c : {&e, &l, &t, &f, &e2, &g, &lp, &em, &sn, &cs})
    EXPECT_LE(c->vs_eager, 2);
  std::cout << "ulps vs libm / vs eager: exp " << e.vs_libm << "/" << e.vs_eager << ", log "
            << l.vs_libm << "/" << l.vs_eager << ", tanh " << t.vs_libm << "/" << t.vs_eager
            << ", erf " << f.vs_libm << "/" << f.vs_eager << ", exp2 " << e2.vs_libm << "/"
            << e2.vs_eager << ", gelu " << g.vs_libm << "/" << g.vs_eager << ", log1p "
            << lp.vs_libm << "/" << lp.vs_eager << ", expm1 " << em.vs_libm << "/" << em.vs_eager
            << ", sin " << sn.vs_libm << "/" << sn.vs_eager << ", cos " << cs.vs_libm << "/"
            << cs.vs_eager << "\n";
}

// kiln_pow_f32, the pow_poly template written as CUDA C (Note [pow in double-float]): within
// 2 ulp of double pow and of the eager pow over pow_accuracy_inputs, and libm's special values.
TEST(CudaPreambleOnHost, PowIsTheEagerTemplate) {
  kiln_test::PowInputs in = kiln_test::pow_accuracy_inputs();
  int64_t vs_libm = 0, vs_eager = 0;
  for (size_t i = 0; i < in.x.size(); ++i) {
    float x = in.x[i], y = in.y[i];
    float got = kiln_pow_f32(x, y);
    auto want = static_cast<float>(std::pow(static_cast<double>(x), static_cast<double>(y)));
    vs_libm = std::max(vs_libm, ulp_distance(got, want));
    vs_eager = std::max(vs_eager, ulp_distance(got, kiln::math::pow(x, y)));
  }
  EXPECT_LE(vs_libm, 2);
  EXPECT_LE(vs_eager, 2);
  std::vector<float> special = kiln_test::pow_special_values();
  for (float x : special) {
    for (float y : special) {
      float got = kiln_pow_f32(x, y), want = std::pow(x, y);
      if (want == 0 || std::isinf(want) || std::isnan(want)) {
        EXPECT_TRUE(kiln_test::same_bits_or_both_nan(got, want))
            << "pow(" << x << ", " << y << ") = " << got << ", libm " << want;
      } else {
        EXPECT_LE(ulp_distance(got, want), 2) << "pow(" << x << ", " << y << ")";
      }
    }
  }
  std::cout << "pow: " << vs_libm << " ulp vs libm, " << vs_eager << " vs eager over "
            << in.x.size() << " (x, y) pairs\n";
}

TEST(CudaPreambleOnHost, MaxMinPropagateNaNFromEitherSide) {
  float nan = std::nanf("");
  EXPECT_EQ(kiln_max_f32(1.0f, 2.0f), 2.0f);
  EXPECT_EQ(kiln_min_f32(1.0f, 2.0f), 1.0f);
  EXPECT_TRUE(std::isnan(kiln_max_f32(nan, 2.0f)));
  EXPECT_TRUE(std::isnan(kiln_max_f32(2.0f, nan)));
  EXPECT_TRUE(std::isnan(kiln_min_f64(3.0, std::nan(""))));
  EXPECT_TRUE(std::isnan(kiln_min_f64(std::nan(""), 3.0)));
  EXPECT_EQ(kiln_max_f64(-1.0, -2.0), -1.0);
}

TEST(CudaPreambleOnHost, IntegerPowDivisionAndFloatToIntAsTheInterpreter) {
  EXPECT_EQ(kiln_ipow(3, 4), 81);
  EXPECT_EQ(kiln_ipow(-2, 3), -8);
  EXPECT_EQ(kiln_ipow(2, -1), 0);
  EXPECT_EQ(kiln_ipow(-1, -3), -1);
  EXPECT_EQ(kiln_ipow(1, -3), 1);
  EXPECT_EQ(kiln_ipow(2, 64), 0);  // wraps
  const long long min64 = std::numeric_limits<long long>::min();
  EXPECT_EQ(kiln_idiv(7, 2), 3);
  EXPECT_EQ(kiln_idiv(-7, 2), -3);  // truncates
  EXPECT_EQ(kiln_irem(-7, 2), -1);
  EXPECT_EQ(kiln_idiv(min64, -1), min64);
  EXPECT_EQ(kiln_irem(min64, -1), 0);
  EXPECT_EQ(kiln_f2i64(-3.9), -3);
  EXPECT_EQ(kiln_f2i64(std::nan("")), min64);
  EXPECT_EQ(kiln_f2i64(1e300), min64);
  EXPECT_EQ(kiln_f2i32(3e9), std::numeric_limits<int>::min());
  EXPECT_EQ(kiln_f2i32(-2147483648.0), std::numeric_limits<int>::min());
  EXPECT_EQ(kiln_f2i32(2147483647.0), 2147483647);
}

// Note [Clamps and signs by bits] as CUDA C: signed zeros, infinities and NaN.
TEST(CudaPreambleOnHost, ErfTanhGeluKeepSignedZerosInfinitiesAndNaN) {
  for (float x : kiln_test::signed_special_inputs()) {
    auto xd = static_cast<double>(x);
    EXPECT_TRUE(kiln_test::same_bits_or_both_nan(kiln_erf_f32(x), std::erf(xd))) << x;
    EXPECT_TRUE(kiln_test::same_bits_or_both_nan(kiln_tanh_f32(x), std::tanh(xd))) << x;
    EXPECT_TRUE(
        kiln_test::same_bits_or_both_nan(kiln_gelu_exact_f32(x), kiln_test::gelu_special(x)))
        << x;
  }
}

TEST(CudaPreambleOnHost, BFloat16RoundsAsRuntimeHalf) {
  for (float x : {1.0f, 1.00390625f, 1.01171875f, -3.14159f, 65504.0f, 1e-40f, 3.4e38f,
                  std::numeric_limits<float>::infinity(), std::nanf("")}) {
    EXPECT_EQ(kiln_f32_to_bf16(x), kiln::detail::float_to_bfloat16_bits(x)) << x;
    EXPECT_EQ(std::bit_cast<uint32_t>(kiln_bf16_to_f32(kiln_f32_to_bf16(x))),
              std::bit_cast<uint32_t>(
                  kiln::detail::bfloat16_bits_to_float(kiln::detail::float_to_bfloat16_bits(x))))
        << x;
  }
}

}  // namespace
