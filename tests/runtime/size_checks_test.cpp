// Sizes and values that do not fit (issue 34): element and byte counts that overflow int64, a
// slice step near INT64_MAX, fill values outside an integer dtype, and the messages of the
// errors, which name the op the user called and the shapes involved.
#include <cstdint>
#include <limits>
#include <string>

#include "test_util.h"

namespace kiln_test {
namespace {

using kiln::Tensor;

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

constexpr int64_t k40 = int64_t{1} << 40;

TEST(SizeChecks, ElementCountOverflowThrows) {
  std::string m = error_message([] { kiln::empty({k40, k40}); });
  EXPECT_TRUE(contains(m, "[1099511627776, 1099511627776]")) << m;
  EXPECT_TRUE(contains(m, "overflow")) << m;
  EXPECT_THROW(kiln::zeros({k40, k40, 2}), kiln::Error);
  // A zero anywhere makes the count zero, however large the rest.
  EXPECT_EQ(kiln::empty({k40, k40, 0}).numel(), 0);
  // Unless its strides (computed as if 0 were 1) overflow.
  EXPECT_THROW(kiln::empty({k40, k40, k40, 0}), kiln::Error);
}

TEST(SizeChecks, ByteCountOverflowThrowsNamingTheOp) {
  std::string m = error_message([] { kiln::zeros({int64_t{1} << 62}); });
  EXPECT_TRUE(contains(m, "full:")) << m;  // zeros is full(0)
  EXPECT_TRUE(contains(m, "bytes")) << m;
  m = error_message([] { kiln::arange(0, int64_t{1} << 62, 1); });
  EXPECT_TRUE(contains(m, "arange:")) << m;
  EXPECT_FALSE(contains(m, "empty")) << m;
}

TEST(SizeChecks, ExpandPastInt64Throws) {
  Tensor one = kiln::ones({1, 1});
  int64_t big = int64_t{1} << 32;
  std::string m = error_message([&] { one.expand({big, big}); });
  EXPECT_TRUE(contains(m, "expand:")) << m;
  EXPECT_THROW(one.expand({big, big}).contiguous(), kiln::Error);
  // Expanding to a large but countable size still works, and sums right.
  Tensor e = one.expand({int64_t{1} << 20, 4});
  EXPECT_EQ(e.numel(), int64_t{1} << 22);
  EXPECT_EQ(e.sum().item<float>(), static_cast<float>(int64_t{1} << 22));
}

TEST(SizeChecks, ExpandToANegativeSizeNamesExpand) {
  std::string m = error_message([] { kiln::ones({1, 3}).expand({-2, 3}); });
  EXPECT_TRUE(contains(m, "expand:")) << m;
  EXPECT_FALSE(contains(m, "empty")) << m;
}

TEST(SizeChecks, OutOfMemoryNamesTheOpAndShape) {
  // 2^45 floats: 128 TiB, more than any machine here has, but countable.
  std::string m = error_message([] { kiln::zeros({int64_t{1} << 45}); });
  EXPECT_TRUE(contains(m, "full:")) << m;
  EXPECT_TRUE(contains(m, "[35184372088832]")) << m;
  EXPECT_TRUE(contains(m, "out of memory")) << m;
}

TEST(SizeChecks, SliceWithAHugeStepTakesTheFirstElement) {
  Tensor a = kiln::arange(5);
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  for (int64_t step : {kMax, kMax - 1, kMax / 2, int64_t{5}}) {
    Tensor s = a.slice(0, 0, 5, step);
    EXPECT_EQ(s.to_vector<int64_t>(), (std::vector<int64_t>{0})) << "step " << step;
  }
  EXPECT_EQ(a.slice(0, 1, 5, kMax).to_vector<int64_t>(), (std::vector<int64_t>{1}));
  EXPECT_EQ(a.slice(0, 0, 5, 3).to_vector<int64_t>(), (std::vector<int64_t>{0, 3}));
  EXPECT_EQ(a.slice(0, 3, 3, kMax).numel(), 0);
  // A step past the end along a dimension of a 2-D tensor.
  Tensor m = kiln::arange(6).view({2, 3});
  EXPECT_EQ(m.slice(1, 1, 3, kMax).contiguous().to_vector<int64_t>(), (std::vector<int64_t>{1, 4}));
}

TEST(SizeChecks, FullWithAValueTheDtypeCannotHoldThrows) {
  std::string m =
      error_message([] { kiln::full({2}, 1e30, kiln::TensorOptions().dtype(kiln::kInt32)); });
  EXPECT_TRUE(contains(m, "full:")) << m;
  EXPECT_TRUE(contains(m, "int32")) << m;
  EXPECT_TRUE(contains(m, "overflow")) << m;
  auto i32 = kiln::TensorOptions().dtype(kiln::kInt32);
  EXPECT_THROW(kiln::full({2}, int64_t{1} << 31, i32), kiln::Error);
  EXPECT_THROW(kiln::full({2}, std::nan(""), i32), kiln::Error);
  EXPECT_THROW(kiln::full({2}, 1e300, kiln::TensorOptions().dtype(kiln::kFloat32)), kiln::Error);
  EXPECT_THROW(kiln::full({2}, 70000.0, kiln::TensorOptions().dtype(kiln::kFloat16)), kiln::Error);
  EXPECT_THROW(kiln::ones({2}, i32).fill_(1e10), kiln::Error);
  // What does fit: the range ends, fractions (truncated), inf and NaN in floating dtypes.
  EXPECT_EQ(kiln::full({1}, INT32_MIN, i32).item<int32_t>(), INT32_MIN);
  EXPECT_EQ(kiln::full({1}, -2147483648.5, i32).item<int32_t>(), INT32_MIN);
  EXPECT_EQ(kiln::full({1}, 2.75, i32).item<int32_t>(), 2);
  EXPECT_EQ(kiln::full({1}, INT64_MIN, kiln::TensorOptions().dtype(kiln::kInt64)).item<int64_t>(),
            INT64_MIN);
  EXPECT_TRUE(std::isinf(kiln::full({1}, INFINITY).item<float>()));
  EXPECT_TRUE(std::isnan(kiln::full({1}, NAN, kiln::TensorOptions().dtype(kiln::kFloat16))
                             .to(kiln::kFloat32)
                             .item<float>()));
  EXPECT_EQ(kiln::full({1}, 65504.0, kiln::TensorOptions().dtype(kiln::kFloat16))
                .to(kiln::kFloat32)
                .item<float>(),
            65504.0f);
}

TEST(ErrorMessages, LinearWithABadBiasNamesLinear) {
  Tensor x = kiln::ones({2, 3}), w = kiln::ones({4, 3});
  std::string m = error_message([&] { kiln::linear(x, w, kiln::ones({5})); });
  EXPECT_TRUE(contains(m, "linear:")) << m;
  EXPECT_TRUE(contains(m, "[5]")) << m;
  EXPECT_TRUE(contains(m, "[4, 3]")) << m;
  EXPECT_EQ(kiln::linear(x, w, kiln::ones({4})).sum().item<float>(), 2 * 4 * 4.0f);
}

TEST(ErrorMessages, CrossEntropyNamesItselfAndTheShapes) {
  Tensor logits = kiln::zeros({4, 3});
  std::string m =
      error_message([&] { kiln::cross_entropy(logits, kiln::zeros({5}, kiln::kInt64)); });
  EXPECT_TRUE(contains(m, "cross_entropy")) << m;
  EXPECT_TRUE(contains(m, "[4, 3]") && contains(m, "[5]")) << m;
  Tensor bad = kiln::from_vector(std::vector<int64_t>{0, 1, 2, 7}, {4});
  m = error_message([&] { kiln::cross_entropy(logits, bad); });
  EXPECT_TRUE(contains(m, "cross_entropy")) << m;
  EXPECT_TRUE(contains(m, "[4, 3]")) << m;
  EXPECT_TRUE(contains(m, "out of bounds")) << m;
}

TEST(ErrorMessages, ItemOnAMetaTensorNamesItem) {
  Tensor t = kiln::ones({1}, kiln::TensorOptions().device(kiln::kMeta));
  std::string m = error_message([&] { t.item<float>(); });
  EXPECT_TRUE(contains(m, "item")) << m;
  EXPECT_FALSE(contains(m, "to_vector")) << m;
}

}  // namespace
}  // namespace kiln_test
