// Tensor methods and operators beyond the core: comparison operators give bool tensors, compound
// assignment writes in place, and each method gives the values a reference loop computes.
#include <gtest/gtest.h>

#include <cmath>

#include "kiln/kiln.h"
#include "test_util.h"

namespace {

using kiln::Tensor;
using kiln_test::bool_values;

const std::vector<float> kA = {-2.0f, -0.5f, 0.0f, 0.5f, 3.0f, 4.0f};
const std::vector<float> kB = {-2.0f, 1.0f, 0.0f, -0.5f, 2.0f, 5.0f};

Tensor a_tensor() {
  return kiln::from_vector(kA, {2, 3});
}
Tensor b_tensor() {
  return kiln::from_vector(kB, {2, 3});
}

template <class Cmp>
std::vector<int> ref_compare(const std::vector<float>& a, const std::vector<float>& b, Cmp cmp) {
  std::vector<int> out;
  for (size_t i = 0; i < a.size(); ++i)
    out.push_back(cmp(a[i], b[i]) ? 1 : 0);
  return out;
}

TEST(TensorOperators, ComparisonsReturnBoolTensors) {
  Tensor a = a_tensor(), b = b_tensor();
  EXPECT_EQ((a == b).dtype(), kiln::kBool);
  EXPECT_EQ(bool_values(a == b), ref_compare(kA, kB, [](float x, float y) { return x == y; }));
  EXPECT_EQ(bool_values(a != b), ref_compare(kA, kB, [](float x, float y) { return x != y; }));
  EXPECT_EQ(bool_values(a < b), ref_compare(kA, kB, [](float x, float y) { return x < y; }));
  EXPECT_EQ(bool_values(a <= b), ref_compare(kA, kB, [](float x, float y) { return x <= y; }));
  EXPECT_EQ(bool_values(a > b), ref_compare(kA, kB, [](float x, float y) { return x > y; }));
  EXPECT_EQ(bool_values(a >= b), ref_compare(kA, kB, [](float x, float y) { return x >= y; }));
  std::vector<float> zeros(kA.size(), 0.0f);
  EXPECT_EQ(bool_values(a > 0.0), ref_compare(kA, zeros, [](float x, float y) { return x > y; }));
  EXPECT_EQ(bool_values(a == 0.0), ref_compare(kA, zeros, [](float x, float y) { return x == y; }));
}

TEST(TensorOperators, CompoundAssignmentWritesInPlace) {
  Tensor a = a_tensor();
  const void* data = a.raw_data();
  uint32_t v0 = a.version();
  a += b_tensor();
  a *= 2.0;
  a -= 1.0;
  a /= b_tensor().abs() + 1.0;
  EXPECT_EQ(a.raw_data(), data);  // same storage
  EXPECT_EQ(a.version(), v0 + 4);
  std::vector<float> expected;
  for (size_t i = 0; i < kA.size(); ++i) {
    expected.push_back(((kA[i] + kB[i]) * 2.0f - 1.0f) / (std::abs(kB[i]) + 1.0f));
  }
  EXPECT_ALL_CLOSE(a.to_vector<float>(), expected, 1e-6, 1e-6);
}

TEST(TensorMethods, UnaryMethodsMatchReferenceLoops) {
  Tensor a = a_tensor();
  auto check = [&](const Tensor& got, double (*ref)(double)) {
    std::vector<double> expected;
    for (float x : kA)
      expected.push_back(ref(x));
    EXPECT_ALL_CLOSE(got.to_vector<float>(), expected, 1e-5, 1e-6);
  };
  check(a.abs(), [](double x) { return std::abs(x); });
  check(a.sin(), [](double x) { return std::sin(x); });
  check(a.cos(), [](double x) { return std::cos(x); });
  check(a.erf(), [](double x) { return std::erf(x); });
  check(a.silu(), [](double x) { return x / (1 + std::exp(-x)); });
  check(a.sign(), [](double x) { return double((x > 0) - (x < 0)); });
  check(a.clamp(-1.0, 1.0), [](double x) { return std::min(1.0, std::max(-1.0, x)); });
  check(a.abs().sqrt(), [](double x) { return std::sqrt(std::abs(x)); });
  check(a.pow(2.0), [](double x) { return x * x; });
}

TEST(TensorMethods, ReductionAndIndexMethods) {
  Tensor a = a_tensor();  // [[-2, -0.5, 0], [0.5, 3, 4]]
  EXPECT_EQ(a.amax({1}).to_vector<float>(), std::vector<float>({0.0f, 4.0f}));
  EXPECT_EQ(a.amin({0}).to_vector<float>(), std::vector<float>({-2.0f, -0.5f, 0.0f}));
  EXPECT_EQ(a.argmax().item<int64_t>(), 5);
  auto [values, indices] = a.max(1);
  EXPECT_EQ(values.to_vector<float>(), std::vector<float>({0.0f, 4.0f}));
  EXPECT_EQ(indices.to_vector<int64_t>(), std::vector<int64_t>({2, 2}));
  EXPECT_FLOAT_EQ(a.max().item<float>(), 4.0f);
  EXPECT_FLOAT_EQ(a.min().item<float>(), -2.0f);
  // softmax of a row sums to one and keeps the order of its inputs.
  std::vector<float> s = a.softmax(1).to_vector<float>();
  double row0 = std::exp(-2.0) + std::exp(-0.5) + std::exp(0.0);
  EXPECT_NEAR(s[0], std::exp(-2.0) / row0, 1e-6);
  Tensor index = kiln::from_vector<int64_t>({2, 0});
  EXPECT_EQ(a.index_select(1, index).to_vector<float>(),
            std::vector<float>({0.0f, -2.0f, 4.0f, 0.5f}));
  Tensor filled = a.masked_fill(a < 0.0, 9.0);
  EXPECT_EQ(filled.to_vector<float>(), std::vector<float>({9, 9, 0, 0.5f, 3, 4}));
}

}  // namespace
