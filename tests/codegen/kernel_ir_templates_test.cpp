// Every op template of base/pointwise_math.h instantiated with V = kir::Val: at compile time
// (instantiate_all), and at run time, where the kernel built from a template runs in the
// interpreter and is compared with the same template instantiated with float, double or int64_t
// in this file. f64 results must match exactly (the primitives are the same libm calls, and
// neither side fuses multiply-adds); f32 results of templates built on the polynomial math (exp,
// log, log1p, expm1, tanh, erf, gelu, pow) may differ by the fused multiply-adds the library's
// -ffp-contract=fast allows inside those polynomials.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "kiln/base/pointwise_math.h"
#include "kir_test_util.h"

namespace {

namespace m = kiln::math;
using namespace kir_test;
using kir::Val;

// Each template's kernel on each executor, against the template evaluated in C++.
class KernelIRTemplates : public testing::TestWithParam<Executor> {};

// Compile-time check: each template the eager kernels instantiate compiles with Val.
[[maybe_unused]] void instantiate_all(Val x, Val y, Val z, Val c) {
  (void)m::add(x, y, z), (void)m::sub(x, y, z), (void)m::mul(x, y), (void)m::div(x, y);
  (void)m::neg(x), (void)m::exp_(x), (void)m::log_(x), (void)m::tanh_(x);
  (void)m::sigmoid(x), (void)m::relu(x), (void)m::pow_(x, y), (void)m::log1p_(x);
  (void)m::expm1_(x), (void)m::sqrt_(x), (void)m::rsqrt(x), (void)m::abs_(x), (void)m::sign(x);
  (void)m::sin_(x), (void)m::cos_(x), (void)m::erf_(x), (void)m::gelu_erf(x);
  (void)m::gelu_tanh(x), (void)m::silu(x), (void)m::clamp_min(x, y), (void)m::clamp_max(x, y);
  (void)m::clamp(x, y, z), (void)m::where(c, x, y), (void)m::maximum(x, y);
  (void)m::minimum(x, y), (void)m::eq(x, y), (void)m::ne(x, y), (void)m::lt(x, y);
  (void)m::le(x, y), (void)m::gt(x, y), (void)m::ge(x, y), (void)m::logical_and(c, c);
  (void)m::logical_or(c, c), (void)m::logical_not(c), (void)m::masked_fill(x, c, y);
}

// Inputs over [-6, 6] plus the special values.
std::vector<double> sample_inputs(int n, double shift = 0) {
  std::vector<double> v;
  for (int i = 0; i < n; ++i)
    v.push_back(-6.0 + 12.0 * i / (n - 1) + shift);
  for (double s :
       {0.0, -0.0, 1.0, -1.0, std::numeric_limits<double>::infinity(),
        -std::numeric_limits<double>::infinity(), std::numeric_limits<double>::quiet_NaN()}) {
    v.push_back(s);
  }
  return v;
}

template <class T>
std::vector<T> as(const std::vector<double>& v) {
  return std::vector<T>(v.begin(), v.end());
}

template <class T>
kiln::Tensor tensor(const std::vector<T>& v) {
  return kiln::from_vector(v, {static_cast<int64_t>(v.size())});
}

struct Case {
  std::string name;
  int arity;
  bool poly_f32;  // built on the polynomial math: f32 compared with a tolerance
  std::function<Val(Val, Val, Val)> val;
  std::function<float(float, float, float)> f32;
  std::function<double(double, double, double)> f64;
};

#define KIR_CASE(arity, poly, expr)                                                           \
  Case {                                                                                      \
#expr, arity, poly,                                                                       \
        [](Val x, [[maybe_unused]] Val y,                                                     \
           [[maybe_unused]] Val                                                               \
               z) { return expr; }, [](float x, [[maybe_unused]] float y,                     \
                                       [[maybe_unused]] float                                 \
                                           z) { return expr; }, [](double x,                  \
                                                                   [[maybe_unused]] double y, \
                                                                   [[maybe_unused]] double    \
                                                                       z) { return expr; }    \
  }

std::vector<Case> cases() {
  return {
      KIR_CASE(3, false, m::add(x, y, z)),
      KIR_CASE(3, false, m::sub(x, y, z)),
      KIR_CASE(2, false, m::mul(x, y)),
      KIR_CASE(2, false, m::div(x, y)),
      KIR_CASE(1, false, m::neg(x)),
      KIR_CASE(1, true, m::exp_(x)),
      KIR_CASE(1, true, m::log_(x)),
      KIR_CASE(1, true, m::tanh_(x)),
      KIR_CASE(1, true, m::sigmoid(x)),
      KIR_CASE(1, false, m::relu(x)),
      KIR_CASE(2, true, m::pow_(x, y)),
      KIR_CASE(1, true, m::log1p_(x)),
      KIR_CASE(1, true, m::expm1_(x)),
      KIR_CASE(1, false, m::sqrt_(x)),
      KIR_CASE(1, false, m::rsqrt(x)),
      KIR_CASE(1, false, m::abs_(x)),
      KIR_CASE(1, false, m::sign(x)),
      KIR_CASE(1, true, m::sin_(x)),
      KIR_CASE(1, true, m::cos_(x)),
      KIR_CASE(1, true, m::erf_(x)),
      KIR_CASE(1, true, m::gelu_erf(x)),
      KIR_CASE(1, true, m::gelu_tanh(x)),
      KIR_CASE(1, true, m::silu(x)),
      KIR_CASE(2, false, m::clamp_min(x, y)),
      KIR_CASE(2, false, m::clamp_max(x, y)),
      KIR_CASE(3, false, m::clamp(x, y, z)),
      KIR_CASE(2, false, m::maximum(x, y)),
      KIR_CASE(2, false, m::minimum(x, y)),
      KIR_CASE(3, false, m::where(x < y, z, x)),
      KIR_CASE(3, false, m::masked_fill(x, y <= z, z)),
  };
}

// Runs one case's kernel on (x, y, z) of dtype T and returns its output.
template <class T>
std::vector<T> run_case(Executor e, const Case& c, const std::vector<T>& x, const std::vector<T>& y,
                        const std::vector<T>& z) {
  kiln::DType t = kiln::dtype_of<T>;
  auto n = static_cast<int64_t>(x.size());
  std::vector<kiln::DType> ins(static_cast<size_t>(c.arity), t);
  kir::Kernel k = pointwise_kernel(c.name, ins, t, t, n, [&](std::span<const Val> a) {
    return c.val(a[0], c.arity > 1 ? a[1] : a[0], c.arity > 2 ? a[2] : a[0]);
  });
  std::vector<kiln::Tensor> tensors = {tensor(x), tensor(y), tensor(z)};
  tensors.resize(static_cast<size_t>(c.arity));
  return run_pointwise(k, tensors, t, e).to_vector<T>();
}

TEST_P(KernelIRTemplates, Float64MatchesTheTemplateExactly) {
  std::vector<double> x = sample_inputs(301), y = sample_inputs(301, 0.37),
                      z = sample_inputs(301, -1.3);
  std::reverse(y.begin(), y.begin() + 301);
  for (const Case& c : cases()) {
    std::vector<double> got = run_case(GetParam(), c, x, y, z);
    for (size_t i = 0; i < x.size(); ++i) {
      double want = c.f64(x[i], c.arity > 1 ? y[i] : x[i], c.arity > 2 ? z[i] : x[i]);
      bool same = (std::isnan(want) && std::isnan(got[i])) || want == got[i];
      ASSERT_TRUE(same) << c.name << " at x=" << x[i] << " y=" << y[i] << " z=" << z[i]
                        << ": interpreter " << got[i] << ", template " << want;
    }
  }
}

TEST_P(KernelIRTemplates, Float32MatchesTheTemplate) {
  std::vector<float> x = as<float>(sample_inputs(301)), y = as<float>(sample_inputs(301, 0.37)),
                     z = as<float>(sample_inputs(301, -1.3));
  std::reverse(y.begin(), y.begin() + 301);
  for (const Case& c : cases()) {
    std::vector<float> got = run_case(GetParam(), c, x, y, z);
    for (size_t i = 0; i < x.size(); ++i) {
      float want = c.f32(x[i], c.arity > 1 ? y[i] : x[i], c.arity > 2 ? z[i] : x[i]);
      if (c.poly_f32) {
        // A few ulp of the polynomial, and of 1 where gelu cancels it against tanh's -1.
        bool near = ulp_distance(got[i], want) <= 4 || std::abs(got[i] - want) <= 4e-7f;
        ASSERT_TRUE(near) << c.name << " at x=" << x[i] << ": interpreter " << got[i]
                          << ", template " << want;
      } else {
        ASSERT_EQ(ulp_distance(got[i], want), 0)
            << c.name << " at x=" << x[i] << " y=" << y[i] << " z=" << z[i] << ": interpreter "
            << got[i] << ", template " << want;
      }
    }
  }
}

TEST_P(KernelIRTemplates, IntegerTemplatesWrapAsTheEagerKernels) {
  std::vector<int64_t> x = {-7, -1, 0, 1, 2, 3, 62, INT64_MAX, INT64_MIN, 5};
  std::vector<int64_t> y = {3, 2, 0, -1, 63, 5, 2, 2, -1, -3};
  auto n = static_cast<int64_t>(x.size());
  struct IntCase {
    const char* name;
    std::function<Val(Val, Val)> val;
    std::function<int64_t(int64_t, int64_t)> ref;
  };
  // The references wrap through unsigned arithmetic where the template's int64_t would overflow.
  std::vector<IntCase> int_cases = {
      {"add", [](Val a, Val b) { return m::add(a, b, Val(3)); },
       [](int64_t a, int64_t b) {
         return static_cast<int64_t>(static_cast<uint64_t>(a) + 3 * static_cast<uint64_t>(b));
       }},
      {"mul", [](Val a, Val b) { return m::mul(a, b); },
       [](int64_t a, int64_t b) {
         return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
       }},
      {"pow", [](Val a, Val b) { return m::pow_(a, b); },
       [](int64_t a, int64_t b) { return m::pow(a, b); }},
      {"relu", [](Val a, Val) { return m::relu(a); },
       [](int64_t a, int64_t) { return m::relu(a); }},
      {"sign", [](Val a, Val) { return m::sign(a); },
       [](int64_t a, int64_t) { return m::sign(a); }},
      {"maximum", [](Val a, Val b) { return m::maximum(a, b); },
       [](int64_t a, int64_t b) { return m::maximum(a, b); }},
      {"clamp", [](Val a, Val b) { return m::clamp(a, b, Val(4)); },
       [](int64_t a, int64_t b) { return m::clamp<int64_t>(a, b, 4); }},
  };
  for (const IntCase& c : int_cases) {
    kir::Kernel k =
        pointwise_kernel(c.name, {kiln::kInt64, kiln::kInt64}, kiln::kInt64, kiln::kInt64, n,
                         [&](std::span<const Val> a) { return c.val(a[0], a[1]); });
    std::vector<int64_t> got =
        run_pointwise(k, {tensor(x), tensor(y)}, kiln::kInt64, GetParam()).to_vector<int64_t>();
    for (size_t i = 0; i < x.size(); ++i) {
      EXPECT_EQ(got[i], c.ref(x[i], y[i])) << c.name << "(" << x[i] << ", " << y[i] << ")";
    }
  }
}

TEST_P(KernelIRTemplates, ComparisonsAndLogicalOpsGiveBool) {
  std::vector<float> x = {1, 2, 3, std::nanf(""), -0.0f};
  std::vector<float> y = {2, 2, 1, 1, 0.0f};
  auto n = static_cast<int64_t>(x.size());
  using BoolFn = std::function<Val(Val, Val)>;
  std::vector<std::pair<BoolFn, std::function<bool(float, float)>>> ops = {
      {[](Val a, Val b) { return m::eq(a, b); }, [](float a, float b) { return a == b; }},
      {[](Val a, Val b) { return m::ne(a, b); }, [](float a, float b) { return a != b; }},
      {[](Val a, Val b) { return m::lt(a, b); }, [](float a, float b) { return a < b; }},
      {[](Val a, Val b) { return m::le(a, b); }, [](float a, float b) { return a <= b; }},
      {[](Val a, Val b) { return m::gt(a, b); }, [](float a, float b) { return a > b; }},
      {[](Val a, Val b) { return m::ge(a, b); }, [](float a, float b) { return a >= b; }},
      {[](Val a, Val b) { return m::logical_and(a < b, a == a); },
       [](float a, float b) { return a < b && a == a; }},
      {[](Val a, Val b) { return m::logical_or(a < b, a != a); },
       [](float a, float b) { return a < b || a != a; }},
      {[](Val a, Val b) { return m::logical_not(a <= b); },
       [](float a, float b) { return !(a <= b); }},
  };
  for (size_t o = 0; o < ops.size(); ++o) {
    kir::Kernel k = pointwise_kernel("cmp", {kiln::kFloat32, kiln::kFloat32}, kiln::kFloat32,
                                     kiln::kBool, n, [&](std::span<const Val> a) {
                                       Val r = ops[o].first(a[0], a[1]);
                                       EXPECT_EQ(r.dtype(), kiln::kBool);
                                       return r;
                                     });
    std::vector<bool> got =
        run_pointwise(k, {tensor(x), tensor(y)}, kiln::kBool, GetParam()).to_vector<bool>();
    for (size_t i = 0; i < x.size(); ++i)
      EXPECT_EQ(got[i], ops[o].second(x[i], y[i])) << "op " << o << " at " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Executors, KernelIRTemplates, testing::ValuesIn(executors()),
                         executor_name);

}  // namespace
