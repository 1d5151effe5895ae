// Pointwise kernels: every unary and binary op, tensor-tensor and tensor-scalar forms, for each
// dtype it supports, on small inputs and on inputs above the parallel grain (32768) so that the
// thread pool splits the loop. References are std:: functions evaluated in double; float16 and
// bfloat16 references are that double result rounded through kiln::Half / kiln::BFloat16.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "float_accuracy.h"
#include "kiln/kiln.h"
#include "test_util.h"

namespace {

using kiln::BFloat16;
using kiln::DType;
using kiln::Half;
using kiln::Tensor;
using kiln_test::random_vector;

constexpr int64_t kLarge = 100003;  // above the 32768 grain, and not a multiple of anything

// Tolerances per dtype: float32 per the contract; the 16-bit types allow one unit in the last
// place, because computing in float then rounding may land on the other side of a tie than
// rounding the exact double result.
struct Tol {
  double rtol, atol;
};
Tol tol_for(DType t) {
  switch (t) {
    case kiln::kFloat32:
      return {1e-5, 1e-6};
    case kiln::kFloat64:
      return {1e-12, 1e-14};
    case kiln::kFloat16:
      return {1.0 / 1024, 1e-7};
    case kiln::kBFloat16:
      return {1.0 / 128, 1e-30};
    default:
      return {0, 0};
  }
}

// The expected element for dtype T: the double result, rounded to T's precision.
template <class T>
double round_to(double v) {
  if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
    return static_cast<float>(T(static_cast<float>(v)));
  } else {
    return static_cast<double>(static_cast<T>(v));
  }
}

const char* short_name(DType t) {
  switch (t) {
    case kiln::kFloat32:
      return "F32";
    case kiln::kFloat64:
      return "F64";
    case kiln::kFloat16:
      return "F16";
    case kiln::kBFloat16:
      return "BF16";
    case kiln::kInt32:
      return "I32";
    case kiln::kInt64:
      return "I64";
    default:
      return "Bool";
  }
}

// Calls f.template operator()<T>() for the C++ type of `t`.
template <class F>
void with_type(DType t, F&& f) {
  switch (t) {
    case kiln::kFloat32:
      return f.template operator()<float>();
    case kiln::kFloat64:
      return f.template operator()<double>();
    case kiln::kFloat16:
      return f.template operator()<Half>();
    case kiln::kBFloat16:
      return f.template operator()<BFloat16>();
    case kiln::kInt32:
      return f.template operator()<int32_t>();
    case kiln::kInt64:
      return f.template operator()<int64_t>();
    default:
      FAIL() << "unexpected dtype";
  }
}

// ---- unary ----

struct UnaryOp {
  const char* name;
  Tensor (*fn)(const Tensor&);
  double (*ref)(double);
  double lo, hi;
};

const UnaryOp kUnaryOps[] = {
    {"neg", [](const Tensor& x) { return kiln::neg(x); }, [](double x) { return -x; }, -5, 5},
    {"exp", [](const Tensor& x) { return kiln::exp(x); }, [](double x) { return std::exp(x); }, -10,
     10},
    {"log", [](const Tensor& x) { return kiln::log(x); }, [](double x) { return std::log(x); },
     0.01, 100},
    {"tanh", [](const Tensor& x) { return kiln::tanh(x); }, [](double x) { return std::tanh(x); },
     -5, 5},
    {"sigmoid", [](const Tensor& x) { return kiln::sigmoid(x); },
     [](double x) { return 1.0 / (1.0 + std::exp(-x)); }, -20, 20},
    {"relu", [](const Tensor& x) { return kiln::relu(x); },
     [](double x) { return x > 0 ? x : 0.0; }, -5, 5},
};

using UnaryParam = std::tuple<int, DType, int64_t>;  // op index, dtype, numel

class UnaryOps : public ::testing::TestWithParam<UnaryParam> {};

TEST_P(UnaryOps, MatchDoubleReference) {
  const auto& [op_index, dtype, n] = GetParam();
  const UnaryOp& op = kUnaryOps[op_index];
  kiln_test::NumThreadsGuard threads(3);
  with_type(dtype, [&]<class T>() {
    auto x = random_vector<T>(static_cast<size_t>(n), op.lo, op.hi,
                              100 + static_cast<uint32_t>(op_index));
    Tensor y = op.fn(kiln::from_vector(x, {n}));
    ASSERT_EQ(y.dtype(), dtype);
    ASSERT_EQ(y.sizes(), (kiln::Shape{n}));
    std::vector<double> want;
    for (const T& v : x)
      want.push_back(round_to<T>(op.ref(kiln_test::to_d(v))));
    Tol tol = tol_for(dtype);
    EXPECT_ALL_CLOSE(y.template to_vector<T>(), want, tol.rtol, tol.atol);
  });
}

INSTANTIATE_TEST_SUITE_P(AllFloatTypes, UnaryOps,
                         ::testing::Combine(::testing::Range(0, 6),
                                            ::testing::Values(kiln::kFloat32, kiln::kFloat64,
                                                              kiln::kFloat16, kiln::kBFloat16),
                                            ::testing::Values(int64_t{17}, kLarge)),
                         [](const ::testing::TestParamInfo<UnaryParam>& p) {
                           return std::string(kUnaryOps[std::get<0>(p.param)].name) + "_" +
                                  short_name(std::get<1>(p.param)) + "_" +
                                  std::to_string(std::get<2>(p.param));
                         });

TEST(UnaryOpsInt, NegAndReluKeepIntegerTypes) {
  for (DType t : {kiln::kInt32, kiln::kInt64}) {
    with_type(t, [&]<class T>() {
      auto x = random_vector<T>(kLarge, -1000, 1000, 7);
      Tensor xt = kiln::from_vector(x);
      std::vector<T> neg, relu;
      for (T v : x) {
        neg.push_back(static_cast<T>(-v));
        relu.push_back(v > 0 ? v : T(0));
      }
      EXPECT_EQ(kiln::neg(xt).template to_vector<T>(), neg);
      EXPECT_EQ(kiln::relu(xt).template to_vector<T>(), relu);
    });
  }
}

TEST(UnaryOpsSpecialValues, Float32) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Tensor x = kiln::from_vector<float>({nan, inf, -inf, 0.0f, -1.0f});
  auto relu = kiln::relu(x).to_vector<float>();
  EXPECT_TRUE(std::isnan(relu[0]));  // relu(NaN) is NaN, as torch
  EXPECT_EQ(relu[1], inf);
  EXPECT_EQ(relu[2], 0.0f);
  auto e = kiln::exp(x).to_vector<float>();
  EXPECT_TRUE(std::isnan(e[0]));
  EXPECT_EQ(e[1], inf);
  EXPECT_EQ(e[2], 0.0f);
  EXPECT_EQ(e[3], 1.0f);
  auto l = kiln::log(x).to_vector<float>();
  EXPECT_EQ(l[1], inf);
  EXPECT_EQ(l[3], -inf);
  EXPECT_TRUE(std::isnan(l[4]));
  auto t = kiln::tanh(x).to_vector<float>();
  EXPECT_EQ(t[1], 1.0f);
  EXPECT_EQ(t[2], -1.0f);
  auto s = kiln::sigmoid(x).to_vector<float>();
  EXPECT_TRUE(std::isnan(s[0]));
  EXPECT_EQ(s[1], 1.0f);
  EXPECT_EQ(s[2], 0.0f);
  EXPECT_EQ(s[3], 0.5f);
}

// Note [pow by a constant exponent]: x ** e for e in {2, 3, -2, 0.5, -0.5, -1} is within 2 ulp of
// pow in double (x * x, sqrt and 1 / x round once, the others twice), and 0.5 and -0.5 follow sqrt
// at -0 and -inf (sqrt(-0) = -0, sqrt(-inf) = NaN), as torch does, where pow gives +0 and +inf.
TEST(UnaryOpsSpecialValues, PowByConstantExponents) {
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> xs = {-3.5f, -1.0f, -0.0f, 0.0f, 1e-15f, 0.7f, 1.0f, 2.0f, 3e11f, inf, -inf};
  for (int i = 0; i < 40; ++i)  // the vectorized body as well as the tail
    xs.push_back(0.37f * static_cast<float>(i) - 7.0f);
  Tensor x = kiln::from_vector(xs, {static_cast<int64_t>(xs.size())});
  for (double e : {2.0, 3.0, -2.0, 0.5, -0.5, -1.0}) {
    std::vector<float> y = kiln::pow(x, e).to_vector<float>();
    for (size_t i = 0; i < xs.size(); ++i) {
      double xd = xs[i];
      bool by_sqrt = (e == 0.5 || e == -0.5) && std::signbit(xs[i]) && (xd == 0 || std::isinf(xd));
      double want = by_sqrt ? (e == 0.5 ? std::sqrt(xd) : 1 / std::sqrt(xd)) : std::pow(xd, e);
      auto wantf = static_cast<float>(want);
      bool ok = std::isnan(wantf) ? std::isnan(y[i])
                                  : kiln_test::ulp_distance(y[i], wantf) <= 2 &&
                                        std::signbit(y[i]) == std::signbit(wantf);
      EXPECT_TRUE(ok) << "pow(" << xs[i] << ", " << e << ") = " << y[i] << ", want " << wantf;
    }
  }
}

TEST(UnaryOpsSpecialValues, ReluOfNaNInHalfTypes) {
  Tensor h = kiln::from_vector<float>({std::nanf(""), -2.0f, 3.0f}).to(kiln::kFloat16);
  auto rh = kiln_test::to_floats(kiln::relu(h).to_vector<Half>());
  EXPECT_TRUE(std::isnan(rh[0]));
  EXPECT_EQ(rh[1], 0.0f);
  EXPECT_EQ(rh[2], 3.0f);
  Tensor b = kiln::from_vector<float>({std::nanf(""), -2.0f}).to(kiln::kBFloat16);
  auto rb = kiln_test::to_floats(kiln::relu(b).to_vector<BFloat16>());
  EXPECT_TRUE(std::isnan(rb[0]));
  EXPECT_EQ(rb[1], 0.0f);
}

TEST(UnaryOpsLayout, NonContiguousInputGivesContiguousResult) {
  kiln_test::NumThreadsGuard threads(2);
  auto base = random_vector<float>(300 * 400, -3, 3, 8);
  Tensor x = kiln::from_vector(base, {300, 400}).t();  // [400, 300] strides [1, 400]
  Tensor y = kiln::exp(x);
  EXPECT_TRUE(y.is_contiguous());
  auto logical = kiln_test::ref_strided(base, {400, 300}, {1, 400}, 0);
  std::vector<double> want;
  for (float v : logical)
    want.push_back(std::exp(static_cast<double>(v)));
  EXPECT_ALL_CLOSE(y.to_vector<float>(), want, 1e-5, 1e-6);
}

TEST(UnaryOpsLayout, ZeroDimAndEmptyTensors) {
  Tensor s = kiln::full({}, 2.0);
  EXPECT_EQ(kiln::tanh(s).dim(), 0);
  EXPECT_NEAR(kiln::tanh(s).item<float>(), std::tanh(2.0), 1e-6);
  Tensor e = kiln::zeros({3, 0});
  EXPECT_EQ(kiln::exp(e).sizes(), (kiln::Shape{3, 0}));
  EXPECT_EQ(kiln::sigmoid(e).numel(), 0);
}

// ---- binary, tensor-tensor ----

struct BinaryOp {
  const char* name;
  Tensor (*fn)(const Tensor&, const Tensor&);
  double (*ref)(double, double);
  bool integer_ok;
};

const BinaryOp kBinaryOps[] = {
    {"add", [](const Tensor& a, const Tensor& b) { return kiln::add(a, b); },
     [](double a, double b) { return a + b; }, true},
    {"add_alpha", [](const Tensor& a, const Tensor& b) { return kiln::add(a, b, 3); },
     [](double a, double b) { return a + 3 * b; }, true},
    {"add_float_alpha", [](const Tensor& a, const Tensor& b) { return kiln::add(a, b, 2.5); },
     [](double a, double b) { return a + 2.5 * b; }, false},
    {"sub", [](const Tensor& a, const Tensor& b) { return kiln::sub(a, b); },
     [](double a, double b) { return a - b; }, true},
    {"sub_alpha", [](const Tensor& a, const Tensor& b) { return kiln::sub(a, b, 2); },
     [](double a, double b) { return a - 2 * b; }, true},
    {"sub_float_alpha", [](const Tensor& a, const Tensor& b) { return kiln::sub(a, b, 0.5); },
     [](double a, double b) { return a - 0.5 * b; }, false},
    {"mul", [](const Tensor& a, const Tensor& b) { return kiln::mul(a, b); },
     [](double a, double b) { return a * b; }, true},
    {"div", [](const Tensor& a, const Tensor& b) { return kiln::div(a, b); },
     [](double a, double b) { return a / b; }, false},
};

using BinaryParam = std::tuple<int, DType, int64_t>;

class BinaryOps : public ::testing::TestWithParam<BinaryParam> {};

TEST_P(BinaryOps, MatchDoubleReference) {
  const auto& [op_index, dtype, n] = GetParam();
  const BinaryOp& op = kBinaryOps[op_index];
  bool integral = dtype == kiln::kInt32 || dtype == kiln::kInt64;
  if (integral && !op.integer_ok) return;  // covered by the float dtypes only
  kiln_test::NumThreadsGuard threads(4);
  with_type(dtype, [&]<class T>() {
    double lo = integral ? -1000 : -8, hi = integral ? 1000 : 8;
    auto a =
        random_vector<T>(static_cast<size_t>(n), lo, hi, 200 + static_cast<uint32_t>(op_index));
    auto b =
        random_vector<T>(static_cast<size_t>(n), 0.25, hi, 300 + static_cast<uint32_t>(op_index));
    Tensor r = op.fn(kiln::from_vector(a, {n}), kiln::from_vector(b, {n}));
    ASSERT_EQ(r.dtype(), dtype);
    std::vector<double> want;
    for (size_t i = 0; i < a.size(); ++i) {
      want.push_back(round_to<T>(op.ref(kiln_test::to_d(a[i]), kiln_test::to_d(b[i]))));
    }
    Tol tol = tol_for(dtype);
    EXPECT_ALL_CLOSE(r.template to_vector<T>(), want, tol.rtol, tol.atol);
  });
}

INSTANTIATE_TEST_SUITE_P(AllNumericTypes, BinaryOps,
                         ::testing::Combine(::testing::Range(0, 8),
                                            ::testing::Values(kiln::kFloat32, kiln::kFloat64,
                                                              kiln::kFloat16, kiln::kBFloat16,
                                                              kiln::kInt32, kiln::kInt64),
                                            ::testing::Values(int64_t{19}, kLarge)),
                         [](const ::testing::TestParamInfo<BinaryParam>& p) {
                           return std::string(kBinaryOps[std::get<0>(p.param)].name) + "_" +
                                  short_name(std::get<1>(p.param)) + "_" +
                                  std::to_string(std::get<2>(p.param));
                         });

// ---- binary, tensor-scalar ----

struct ScalarCase {
  const char* name;
  Tensor (*fn)(const Tensor&);
  double (*ref)(double);
};

const ScalarCase kScalarOps[] = {
    {"add_2_5", [](const Tensor& t) { return kiln::add(t, 2.5); },
     [](double x) { return x + 2.5; }},
    {"add_2_5_alpha_2", [](const Tensor& t) { return kiln::add(t, 2.5, 2); },
     [](double x) { return x + 5.0; }},
    {"sub_1_5_alpha_3", [](const Tensor& t) { return kiln::sub(t, 1.5, 3); },
     [](double x) { return x - 4.5; }},
    {"mul_neg_0_75", [](const Tensor& t) { return kiln::mul(t, -0.75); },
     [](double x) { return x * -0.75; }},
    {"div_4", [](const Tensor& t) { return kiln::div(t, 4.0); }, [](double x) { return x / 4; }},
    {"div_3", [](const Tensor& t) { return kiln::div(t, 3.0); }, [](double x) { return x / 3; }},
};

using ScalarParam = std::tuple<int, DType, int64_t>;
class ScalarOps : public ::testing::TestWithParam<ScalarParam> {};

TEST_P(ScalarOps, MatchDoubleReference) {
  const auto& [op_index, dtype, n] = GetParam();
  const ScalarCase& op = kScalarOps[op_index];
  kiln_test::NumThreadsGuard threads(3);
  with_type(dtype, [&]<class T>() {
    auto x =
        random_vector<T>(static_cast<size_t>(n), -50, 50, 400 + static_cast<uint32_t>(op_index));
    Tensor r = op.fn(kiln::from_vector(x, {n}));
    ASSERT_EQ(r.dtype(), dtype);  // a float scalar never widens a float tensor
    std::vector<double> want;
    for (const T& v : x)
      want.push_back(round_to<T>(op.ref(kiln_test::to_d(v))));
    Tol tol = tol_for(dtype);
    EXPECT_ALL_CLOSE(r.template to_vector<T>(), want, tol.rtol, tol.atol);
  });
}

INSTANTIATE_TEST_SUITE_P(FloatTypes, ScalarOps,
                         ::testing::Combine(::testing::Range(0, 6),
                                            ::testing::Values(kiln::kFloat32, kiln::kFloat64,
                                                              kiln::kFloat16, kiln::kBFloat16),
                                            ::testing::Values(int64_t{23}, kLarge)),
                         [](const ::testing::TestParamInfo<ScalarParam>& p) {
                           return std::string(kScalarOps[std::get<0>(p.param)].name) + "_" +
                                  short_name(std::get<1>(p.param)) + "_" +
                                  std::to_string(std::get<2>(p.param));
                         });

TEST(ScalarOpsInt, IntegerScalarsKeepIntegerTensorsExact) {
  auto x = random_vector<int32_t>(kLarge, -1000, 1000, 9);
  Tensor t = kiln::from_vector(x);
  std::vector<int32_t> add, sub, mul;
  for (int32_t v : x) {
    add.push_back(v + 7 * 3);
    sub.push_back(v - 5 * 2);
    mul.push_back(v * -4);
  }
  Tensor a = kiln::add(t, 7, 3), s = kiln::sub(t, 5, 2), m = kiln::mul(t, -4);
  EXPECT_EQ(a.dtype(), kiln::kInt32);
  EXPECT_EQ(a.to_vector<int32_t>(), add);
  EXPECT_EQ(s.to_vector<int32_t>(), sub);
  EXPECT_EQ(m.to_vector<int32_t>(), mul);
}

TEST(ScalarOpsInt, Int64ArithmeticDoesNotOverflowThroughNarrowTypes) {
  const int64_t big = int64_t{1} << 40;
  Tensor t = kiln::from_vector<int64_t>({big, -big, 3});
  EXPECT_EQ(kiln::add(t, big).to_vector<int64_t>(), (std::vector<int64_t>{2 * big, 0, big + 3}));
  EXPECT_EQ(kiln::mul(t, 4).to_vector<int64_t>(), (std::vector<int64_t>{4 * big, -4 * big, 12}));
  Tensor u = kiln::from_vector<int64_t>({big + 1, 1});
  EXPECT_EQ(kiln::add(t.slice(0, 0, 2), u, 2).to_vector<int64_t>(),
            (std::vector<int64_t>{3 * big + 2, 2 - big}));
}

}  // namespace
