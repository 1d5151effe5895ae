// Arithmetic operators and Tensor methods: + - * / and unary -, with a tensor or a scalar on
// either side, the alpha argument, and the result dtypes PyTorch gives for the same expressions.
#include <gtest/gtest.h>

#include <cmath>
#include <iomanip>

#include "kiln/kiln.h"
#include "test_util.h"

namespace {

using kiln::Tensor;

const std::vector<float> kA = {1.5f, -2.0f, 0.25f, 8.0f};
const std::vector<float> kB = {0.5f, 4.0f, -1.0f, 2.0f};

template <class F>
std::vector<double> zip(const std::vector<float>& a, const std::vector<float>& b, F f) {
  std::vector<double> out;
  for (size_t i = 0; i < a.size(); ++i)
    out.push_back(f(a[i], b[i]));
  return out;
}
template <class F>
std::vector<double> map(const std::vector<float>& a, F f) {
  std::vector<double> out;
  for (float x : a)
    out.push_back(f(x));
  return out;
}

TEST(Operators, TensorTensor) {
  Tensor a = kiln::from_vector(kA), b = kiln::from_vector(kB);
  EXPECT_ALL_CLOSE((a + b).to_vector<float>(),
                   zip(kA, kB, [](double x, double y) { return x + y; }), 1e-6, 0);
  EXPECT_ALL_CLOSE((a - b).to_vector<float>(),
                   zip(kA, kB, [](double x, double y) { return x - y; }), 1e-6, 0);
  EXPECT_ALL_CLOSE((a * b).to_vector<float>(),
                   zip(kA, kB, [](double x, double y) { return x * y; }), 1e-6, 0);
  EXPECT_ALL_CLOSE((a / b).to_vector<float>(),
                   zip(kA, kB, [](double x, double y) { return x / y; }), 1e-6, 0);
  EXPECT_ALL_CLOSE((-a).to_vector<float>(), map(kA, [](double x) { return -x; }), 0, 0);
}

TEST(Operators, TensorScalar) {
  Tensor a = kiln::from_vector(kA);
  EXPECT_ALL_CLOSE((a + 2.5).to_vector<float>(), map(kA, [](double x) { return x + 2.5; }), 1e-6,
                   0);
  EXPECT_ALL_CLOSE((a - 2.5).to_vector<float>(), map(kA, [](double x) { return x - 2.5; }), 1e-6,
                   0);
  EXPECT_ALL_CLOSE((a * 3).to_vector<float>(), map(kA, [](double x) { return x * 3; }), 1e-6, 0);
  EXPECT_ALL_CLOSE((a / 4).to_vector<float>(), map(kA, [](double x) { return x / 4; }), 1e-6, 0);
}

TEST(Operators, ScalarOnTheLeft) {
  Tensor a = kiln::from_vector(kA);
  EXPECT_ALL_CLOSE((2.5 + a).to_vector<float>(), map(kA, [](double x) { return 2.5 + x; }), 1e-6,
                   0);
  EXPECT_ALL_CLOSE((2.0 - a).to_vector<float>(), map(kA, [](double x) { return 2.0 - x; }), 1e-6,
                   0);
  EXPECT_ALL_CLOSE((3 * a).to_vector<float>(), map(kA, [](double x) { return 3 * x; }), 1e-6, 0);
  EXPECT_ALL_CLOSE((2.0 / a).to_vector<float>(), map(kA, [](double x) { return 2.0 / x; }), 1e-6,
                   0);
  for (Tensor r : {2.5 + a, 2.0 - a, 3 * a, 2.0 / a}) {
    EXPECT_EQ(r.dtype(), kiln::kFloat32);
    EXPECT_EQ(r.sizes(), (kiln::Shape{4}));
  }
}

TEST(Operators, ScalarOnTheLeftOfIntegerTensors) {
  Tensor i = kiln::from_vector<int32_t>({1, 2, 4, -5});
  Tensor sub = 10 - i;
  EXPECT_EQ(sub.dtype(), kiln::kInt32);
  EXPECT_EQ(sub.to_vector<int32_t>(), (std::vector<int32_t>{9, 8, 6, 15}));
  Tensor fsub = 0.5 - i;
  EXPECT_EQ(fsub.dtype(), kiln::kFloat32);
  EXPECT_EQ(fsub.to_vector<float>(), (std::vector<float>{-0.5f, -1.5f, -3.5f, 5.5f}));
  Tensor div = 10 / i;  // true division
  EXPECT_EQ(div.dtype(), kiln::kFloat32);
  EXPECT_EQ(div.to_vector<float>(), (std::vector<float>{10.0f, 5.0f, 2.5f, -2.0f}));
  Tensor fdiv = 1.0 / i;
  EXPECT_EQ(fdiv.dtype(), kiln::kFloat32);
  EXPECT_EQ(fdiv.to_vector<float>(), (std::vector<float>{1.0f, 0.5f, 0.25f, -0.2f}));
  EXPECT_EQ((2 * i).dtype(), kiln::kInt32);
  EXPECT_EQ((2.0 * i).dtype(), kiln::kFloat32);
  EXPECT_EQ((7 + i).to_vector<int32_t>(), (std::vector<int32_t>{8, 9, 11, 2}));
}

TEST(Operators, ScalarOnTheLeftKeepsFloat64Precision) {
  // torch: 0.1 / t for a float64 t divides the double 0.1, not a float32 rounding of it.
  Tensor d = kiln::from_vector<double>({1.0, 3.0, 7.0});
  Tensor q = 0.1 / d;
  EXPECT_EQ(q.dtype(), kiln::kFloat64);
  EXPECT_EQ(q.to_vector<double>()[0], 0.1)
      << std::setprecision(17) << "got " << q.to_vector<double>()[0];
  EXPECT_EQ(q.to_vector<double>(), (std::vector<double>{0.1 / 1.0, 0.1 / 3.0, 0.1 / 7.0}));
  Tensor s = 0.1 - d;
  EXPECT_EQ(s.to_vector<double>(), (std::vector<double>{0.1 - 1.0, 0.1 - 3.0, 0.1 - 7.0}));
  Tensor p = 0.1 * d;
  EXPECT_EQ(p.to_vector<double>(), (std::vector<double>{0.1 * 1.0, 0.1 * 3.0, 0.1 * 7.0}));
  Tensor a = 0.1 + d;
  EXPECT_EQ(a.to_vector<double>(), (std::vector<double>{0.1 + 1.0, 0.1 + 3.0, 0.1 + 7.0}));
}

TEST(Operators, ScalarOnTheLeftOfHalfTensorsStaysHalf) {
  Tensor h = kiln::from_vector<float>({2.0f, 4.0f}).to(kiln::kFloat16);
  Tensor q = 1.0 / h;
  EXPECT_EQ(q.dtype(), kiln::kFloat16);
  EXPECT_EQ(kiln_test::to_floats(q.to_vector<kiln::Half>()), (std::vector<float>{0.5f, 0.25f}));
  EXPECT_EQ((3.0 - h).dtype(), kiln::kFloat16);
}

TEST(Operators, ScalarOnTheLeftOfMultiDimAndStridedTensors) {
  Tensor m = kiln::from_vector<float>({1, 2, 4, 8, 16, 32}, {2, 3}).t();
  Tensor q = 64.0 / m;
  EXPECT_EQ(q.sizes(), (kiln::Shape{3, 2}));
  EXPECT_EQ(q.to_vector<float>(), (std::vector<float>{64, 8, 32, 4, 16, 2}));
  Tensor s = 1.0 - m;
  EXPECT_EQ(s.to_vector<float>(), (std::vector<float>{0, -7, -1, -15, -3, -31}));
}

TEST(Operators, AlphaOfAddAndSub) {
  Tensor a = kiln::from_vector(kA), b = kiln::from_vector(kB);
  EXPECT_ALL_CLOSE(kiln::add(a, b, 2.5).to_vector<float>(),
                   zip(kA, kB, [](double x, double y) { return x + 2.5 * y; }), 1e-6, 0);
  EXPECT_ALL_CLOSE(a.add(b, -1).to_vector<float>(),
                   zip(kA, kB, [](double x, double y) { return x - y; }), 1e-6, 0);
  EXPECT_ALL_CLOSE(kiln::sub(a, b, 0.5).to_vector<float>(),
                   zip(kA, kB, [](double x, double y) { return x - 0.5 * y; }), 1e-6, 0);
  EXPECT_ALL_CLOSE(a.sub(3.0, 2).to_vector<float>(), map(kA, [](double x) { return x - 6.0; }),
                   1e-6, 0);
  EXPECT_ALL_CLOSE(a.add(1.0, 0.5).to_vector<float>(), map(kA, [](double x) { return x + 0.5; }),
                   1e-6, 0);
  EXPECT_ALL_CLOSE(kiln::add(a, b, 0).to_vector<float>(), map(kA, [](double x) { return x; }), 0,
                   0);
  Tensor i = kiln::from_vector<int64_t>({10, 20}), j = kiln::from_vector<int64_t>({1, 2});
  EXPECT_EQ(kiln::sub(i, j, 3).to_vector<int64_t>(), (std::vector<int64_t>{7, 14}));
  EXPECT_EQ(kiln::add(i, 5, 4).to_vector<int64_t>(), (std::vector<int64_t>{30, 40}));
}

TEST(Operators, MethodsMatchFreeFunctions) {
  Tensor a = kiln::from_vector(kA), b = kiln::from_vector(kB);
  EXPECT_EQ(a.add(b).to_vector<float>(), kiln::add(a, b).to_vector<float>());
  EXPECT_ALL_CLOSE(a.mul(b).to_vector<float>(),
                   zip(kA, kB, [](double x, double y) { return x * y; }), 1e-6, 0);
  EXPECT_ALL_CLOSE(a.div(2.0).to_vector<float>(), map(kA, [](double x) { return x / 2; }), 1e-6, 0);
  EXPECT_ALL_CLOSE(a.mul(-1.0).to_vector<float>(), map(kA, [](double x) { return -x; }), 0, 0);
  EXPECT_ALL_CLOSE(a.neg().to_vector<float>(), map(kA, [](double x) { return -x; }), 0, 0);
  EXPECT_ALL_CLOSE(a.relu().to_vector<float>(), map(kA, [](double x) { return x > 0 ? x : 0; }), 0,
                   0);
  EXPECT_ALL_CLOSE(a.exp().to_vector<float>(), map(kA, [](double x) { return std::exp(x); }), 1e-5,
                   1e-6);
  EXPECT_ALL_CLOSE(a.tanh().to_vector<float>(), map(kA, [](double x) { return std::tanh(x); }),
                   1e-5, 1e-6);
  EXPECT_ALL_CLOSE(a.sigmoid().to_vector<float>(),
                   map(kA, [](double x) { return 1 / (1 + std::exp(-x)); }), 1e-5, 1e-6);
  EXPECT_ALL_CLOSE(b.relu().log().to_vector<float>(),
                   map(kB, [](double x) { return x > 0 ? std::log(x) : -INFINITY; }), 1e-5, 1e-6);
}

TEST(Operators, ChainedExpressionWithBroadcast) {
  const std::vector<float> xv = {1, 2, 3, 4, 5, 6}, bv = {10, 20, 30};
  Tensor x = kiln::from_vector(xv, {2, 3});
  Tensor bias = kiln::from_vector(bv);
  Tensor y = (x * 2.0 + bias) / 2.0 - 1;
  std::vector<double> want;
  for (size_t r = 0; r < 2; ++r) {
    for (size_t c = 0; c < 3; ++c)
      want.push_back((xv[r * 3 + c] * 2.0 + bv[c]) / 2.0 - 1);
  }
  EXPECT_EQ(y.sizes(), (kiln::Shape{2, 3}));
  EXPECT_ALL_CLOSE(y.to_vector<float>(), want, 1e-6, 0);
}

TEST(Operators, OperandsAreNotModified) {
  Tensor a = kiln::from_vector(kA), b = kiln::from_vector(kB);
  (void)(a + b);
  (void)(2.0 - a);
  (void)(2.0 / b);
  (void)(-a);
  EXPECT_EQ(a.to_vector<float>(), kA);
  EXPECT_EQ(b.to_vector<float>(), kB);
  EXPECT_EQ(a.version(), 0u);
}

}  // namespace
