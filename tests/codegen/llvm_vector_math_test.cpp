// The float32 vector math of compiled kernels (Note [Vector math], llvm_jit.cpp) against libm:
// exp, log, tanh, erf, log1p, expm1, sin, cos and sigmoid within 2 ulp over a sweep of the whole
// float range. The
// reference is double libm rounded once to float, the correctly rounded value in all but rare
// cases (float libm is itself up to an ulp off, which would count against the bound).
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <iostream>
#include <limits>

#include "codegen/kir_test_util.h"
#include "float_accuracy.h"
#include "kiln/base/pointwise_math.h"
#include "kiln/config.h"

namespace {

using namespace kir_test;
using kiln::Tensor;
using kir::Val;
namespace m = kiln::math;

struct MathCase {
  const char* name;
  std::function<Val(Val)> val;
  double (*libm)(double);  // the reference: double libm, rounded to float
};

// Every 509th bit pattern: both signs, subnormals, every binade, inf and NaN.
std::vector<float> all_floats() {
  std::vector<float> v;
  for (uint64_t b = 0; b <= 0xffffffffu; b += 509)
    v.push_back(std::bit_cast<float>(static_cast<uint32_t>(b)));
  for (float x : {0.0f, -0.0f, std::numeric_limits<float>::infinity(),
                  -std::numeric_limits<float>::infinity()})
    v.push_back(x);
  return v;
}

TEST(LlvmVectorMath, Float32WithinTwoUlpOfLibm) {
  if (!KILN_WITH_LLVM) GTEST_SKIP() << "built without LLVM (KILN_WITH_LLVM=OFF)";
  std::vector<MathCase> cases = {
      {"exp", [](Val x) { return m::exp_(x); }, [](double x) { return std::exp(x); }},
      {"log", [](Val x) { return m::log_(x); }, [](double x) { return std::log(x); }},
      {"tanh", [](Val x) { return m::tanh_(x); }, [](double x) { return std::tanh(x); }},
      {"erf", [](Val x) { return m::erf_(x); }, [](double x) { return std::erf(x); }},
      {"log1p", [](Val x) { return m::log1p_(x); }, [](double x) { return std::log1p(x); }},
      {"expm1", [](Val x) { return m::expm1_(x); }, [](double x) { return std::expm1(x); }},
      {"sin", [](Val x) { return m::sin_(x); }, [](double x) { return std::sin(x); }},
      {"cos", [](Val x) { return m::cos_(x); }, [](double x) { return std::cos(x); }},
      // No libm sigmoid: its formula in double with libm's exp.
      {"sigmoid", [](Val x) { return m::sigmoid(x); },
       [](double x) { return 1 / (1 + std::exp(-x)); }},
  };
  std::vector<float> xs = all_floats();
  auto n = static_cast<int64_t>(xs.size());
  Tensor x = kiln::from_vector(xs, {n});
  const float tiny = std::numeric_limits<float>::min();
  for (const MathCase& c : cases) {
    kir::Kernel k = pointwise_kernel(c.name, {kiln::kFloat32}, kiln::kFloat32, kiln::kFloat32, n,
                                     [&](std::span<const Val> a) { return c.val(a[0]); });
    std::vector<float> got =
        run_pointwise(k, {x}, kiln::kFloat32, Executor::Llvm).to_vector<float>();
    int64_t worst = 0;
    float worst_at = 0;
    for (size_t i = 0; i < xs.size(); ++i) {
      auto want = static_cast<float>(c.libm(static_cast<double>(xs[i])));
      // Results below the normal range count by absolute error: the float formulas flush them
      // (sigmoid's exp(-x) overflows to inf below x = -88.7, giving 0 for a 1e-39 result).
      if (std::fabs(want) < tiny && std::fabs(got[i]) < tiny) continue;
      int64_t d = ulp_distance(got[i], want);
      if (d > worst) {
        worst = d;
        worst_at = xs[i];
      }
    }
    EXPECT_LE(worst, 2) << c.name << ": worst at x = " << worst_at << " (" << std::hexfloat
                        << worst_at << std::defaultfloat << ")";
    std::cout << c.name << ": max " << worst << " ulp over " << n << " inputs\n";
  }
}

// gelu (approximate "none") is not held to 2 ulp of libm (Note [gelu as one branch]), sin and cos
// switch from the polynomial to libm at a limit (Note [sin and cos by one polynomial]), and log
// and log1p split x by integer arithmetic; compiled, each must give the interpreter's (the eager
// math's) bits over the same sweep of every binade.
TEST(LlvmVectorMath, MatchesTheInterpreterBitForBit) {
  if (!KILN_WITH_LLVM) GTEST_SKIP() << "built without LLVM (KILN_WITH_LLVM=OFF)";
  std::vector<float> xs = all_floats();
  auto n = static_cast<int64_t>(xs.size());
  Tensor x = kiln::from_vector(xs, {n});
  std::vector<std::pair<const char*, Val (*)(Val)>> cases = {
      {"gelu", [](Val v) { return m::gelu_erf(v); }},
      {"sin", [](Val v) { return m::sin_(v); }},
      {"cos", [](Val v) { return m::cos_(v); }},
      {"log", [](Val v) { return m::log_(v); }},
      {"log1p", [](Val v) { return m::log1p_(v); }}};
  for (const auto& [name, f] : cases) {
    kir::Kernel k = pointwise_kernel(name, {kiln::kFloat32}, kiln::kFloat32, kiln::kFloat32, n,
                                     [f = f](std::span<const Val> a) { return f(a[0]); });
    std::vector<float> got =
        run_pointwise(k, {x}, kiln::kFloat32, Executor::Llvm).to_vector<float>();
    std::vector<float> eager =
        run_pointwise(k, {x}, kiln::kFloat32, Executor::Interpreter).to_vector<float>();
    int64_t differ = 0;
    for (size_t i = 0; i < xs.size(); ++i) {
      if (std::bit_cast<uint32_t>(got[i]) == std::bit_cast<uint32_t>(eager[i])) continue;
      if (differ++ < 5)
        ADD_FAILURE() << name << "(" << std::hexfloat << xs[i] << ") = " << got[i] << ", eager "
                      << eager[i];
    }
    EXPECT_EQ(differ, 0) << name << ": of " << n << " inputs";
  }
}

// pow (Note [pow in double-float]) compiled: the interpreter's bits over pow_accuracy_inputs and
// every pair of pow_special_values (its double-float steps must round as the eager build's do),
// and within 2 ulp of double pow.
TEST(LlvmVectorMath, PowMatchesTheInterpreterBitForBit) {
  if (!KILN_WITH_LLVM) GTEST_SKIP() << "built without LLVM (KILN_WITH_LLVM=OFF)";
  kiln_test::PowInputs in = kiln_test::pow_accuracy_inputs();
  std::vector<float> special = kiln_test::pow_special_values();
  for (float a : special) {
    for (float b : special) {
      in.x.push_back(a);
      in.y.push_back(b);
    }
  }
  auto n = static_cast<int64_t>(in.x.size());
  kir::Kernel k =
      pointwise_kernel("pow", {kiln::kFloat32, kiln::kFloat32}, kiln::kFloat32, kiln::kFloat32, n,
                       [](std::span<const Val> a) { return m::pow_(a[0], a[1]); });
  std::vector<Tensor> args = {kiln::from_vector(in.x, {n}), kiln::from_vector(in.y, {n})};
  std::vector<float> got =
      run_pointwise(k, args, kiln::kFloat32, Executor::Llvm).to_vector<float>();
  std::vector<float> eager =
      run_pointwise(k, args, kiln::kFloat32, Executor::Interpreter).to_vector<float>();
  int64_t differ = 0, worst = 0;
  for (size_t i = 0; i < in.x.size(); ++i) {
    auto want =
        static_cast<float>(std::pow(static_cast<double>(in.x[i]), static_cast<double>(in.y[i])));
    worst = std::max(worst, kiln_test::ulp_distance(got[i], want));
    if (std::bit_cast<uint32_t>(got[i]) == std::bit_cast<uint32_t>(eager[i])) continue;
    if (differ++ < 5)
      ADD_FAILURE() << "pow(" << std::hexfloat << in.x[i] << ", " << in.y[i] << ") = " << got[i]
                    << ", eager " << eager[i];
  }
  EXPECT_EQ(differ, 0) << "of " << n << " inputs";
  EXPECT_LE(worst, 2);
  std::cout << "pow: max " << worst << " ulp over " << n << " (x, y) pairs\n";
}

// Note [Clamps and signs by bits] as LLVM IR: signed zeros, infinities and NaN of both signs
// give libm's results bit for bit (gelu: its limit -0 at -inf; log1p and expm1 too), and the
// branch and clamp boundaries below and their neighbours give the interpreter's (the eager math)
// bit for bit.
TEST(LlvmVectorMath, MathKeepsSignedZerosInfinitiesAndNaN) {
  if (!KILN_WITH_LLVM) GTEST_SKIP() << "built without LLVM (KILN_WITH_LLVM=OFF)";
  std::vector<float> xs = kiln_test::signed_special_inputs();
  const size_t specials = xs.size();
  // erf, tanh and gelu's branch and clamp boundaries, expm1's clamps and overflow and log1p's
  // edges (where 1 + x rounds to 1, and to inexact sums).
  for (float b : {0.625f, 1.0f, 4.0f, 10.0f, kiln::math::kGeluTailCap, 25.0f, 89.0f, 88.7228394f,
                  17.3286796f, 0x1p-24f, 0x1p-25f, 0x1p25f, kiln::math::kSinCosReducedLimit}) {
    for (float v : {b, std::nextafter(b, 0.0f), std::nextafter(b, 100.0f)}) {
      xs.push_back(v);
      xs.push_back(-v);
    }
  }
  auto n = static_cast<int64_t>(xs.size());
  Tensor x = kiln::from_vector(xs, {n});
  for (const MathCase& c : std::vector<MathCase>{
           {"erf", [](Val v) { return m::erf_(v); }, [](double v) { return std::erf(v); }},
           {"tanh", [](Val v) { return m::tanh_(v); }, [](double v) { return std::tanh(v); }},
           {"gelu", [](Val v) { return m::gelu_erf(v); },
            [](double v) { return kiln_test::gelu_special(static_cast<float>(v)); }},
           {"log1p", [](Val v) { return m::log1p_(v); }, [](double v) { return std::log1p(v); }},
           {"expm1", [](Val v) { return m::expm1_(v); }, [](double v) { return std::expm1(v); }},
           {"sin", [](Val v) { return m::sin_(v); }, [](double v) { return std::sin(v); }},
           {"cos", [](Val v) { return m::cos_(v); }, [](double v) { return std::cos(v); }}}) {
    kir::Kernel k = pointwise_kernel(c.name, {kiln::kFloat32}, kiln::kFloat32, kiln::kFloat32, n,
                                     [&](std::span<const Val> a) { return c.val(a[0]); });
    std::vector<float> got =
        run_pointwise(k, {x}, kiln::kFloat32, Executor::Llvm).to_vector<float>();
    std::vector<float> eager =
        run_pointwise(k, {x}, kiln::kFloat32, Executor::Interpreter).to_vector<float>();
    for (size_t i = 0; i < xs.size(); ++i) {
      if (i < specials)
        EXPECT_TRUE(kiln_test::same_bits_or_both_nan(got[i], c.libm(static_cast<double>(xs[i]))))
            << c.name << "(" << xs[i] << ") = " << got[i];
      else
        EXPECT_EQ(std::bit_cast<uint32_t>(got[i]), std::bit_cast<uint32_t>(eager[i]))
            << c.name << "(" << std::hexfloat << xs[i] << ") = " << got[i] << ", eager "
            << eager[i];
    }
  }
}

}  // namespace
